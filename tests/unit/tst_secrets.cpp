// The API key leaves the environment and the command line at start (issue 32, core/model/secrets.h):
// kwb, kernel-workbench and this test's own child (this program started with --child, which calls
// the functions as main() does) hold it in memory only, so /proc/<pid>/environ and
// /proc/<pid>/cmdline of the running process show no key. Only processes this test started are read.

#include "core/model/secrets.h"
#include "scriptedllmserver.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

using namespace kwb;
using kwb::test::ScriptedLlmServer;

namespace {

QString randomKey(const char* prefix)
{
    return QString::fromLatin1(prefix) + QString::number(QRandomGenerator::global()->generate64(), 36) +
           QString::number(QRandomGenerator::global()->generate64(), 36);
}

QByteArray procFile(qint64 pid, const char* name)
{
    QFile file(QStringLiteral("/proc/%1/%2").arg(pid).arg(QLatin1String(name)));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

QByteArrayList entries(const QByteArray& block)
{
    return block.split('\0');
}

// The child: takes the secrets as kwb's main() does, says what it holds (on stdout, which only
// this test reads) and waits for a line on stdin, so the test can read its /proc meanwhile.
int childMain(int argc, char** argv)
{
    secrets::takeSecretsFromArguments(argc, argv);
    const QStringList taken = secrets::takeSecretsFromEnvironment();
    QJsonArray arguments;
    for (int i = 0; i < argc; ++i)
        arguments.append(QString::fromLocal8Bit(argv[i]));
    QJsonObject said{{QStringLiteral("api_key"), secrets::environmentApiKey()},
                     {QStringLiteral("taken"), QJsonArray::fromStringList(taken)},
                     {QStringLiteral("argv"), arguments},
                     {QStringLiteral("getenv"), std::getenv("KWB_API_KEY") != nullptr},
                     {QStringLiteral("known"), QJsonArray::fromStringList(secrets::known())}};
    std::cout << QJsonDocument(said).toJson(QJsonDocument::Compact).constData() << std::endl;
    std::string line;
    std::getline(std::cin, line);
    return 0;
}

} // namespace

class TestSecrets : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // In this process: the value is held, the variable gone, other names left alone.
    void environmentIsTakenIntoMemory()
    {
        const QString key = randomKey("sk-kwb-");
        const QString openai = randomKey("sk-openai-");
        qputenv("KWB_API_KEY", key.toUtf8());
        qputenv("OPENAI_API_KEY", openai.toUtf8());
        qputenv("KWB_SECRETS_TEST_TOKEN", "stays");
        const QStringList taken = secrets::takeSecretsFromEnvironment();
        QVERIFY2(taken.contains(QStringLiteral("KWB_API_KEY")) && taken.contains(QStringLiteral("OPENAI_API_KEY")) &&
                     !taken.contains(QStringLiteral("KWB_SECRETS_TEST_TOKEN")),
                 qPrintable(taken.join(QLatin1Char(' '))));
        QCOMPARE(secrets::environmentApiKey(), key);
        QVERIFY(!qEnvironmentVariableIsSet("KWB_API_KEY"));
        QVERIFY(!qEnvironmentVariableIsSet("OPENAI_API_KEY"));
        QCOMPARE(qgetenv("KWB_SECRETS_TEST_TOKEN"), QByteArray("stays"));
        // Both are scrubbed from then on, though neither is in the environment any more.
        QCOMPARE(secrets::scrub(QStringLiteral("a %1 b %2").arg(key, openai)),
                 QStringLiteral("a [redacted] b [redacted]"));
        // A second call finds nothing and keeps the value.
        QCOMPARE(secrets::takeSecretsFromEnvironment(), QStringList());
        QCOMPARE(secrets::environmentApiKey(), key);
        qunsetenv("KWB_SECRETS_TEST_TOKEN");
    }

    // argv of a caller's own array (not the block /proc shows): the value is remembered, the
    // strings left as they are (they may be literals).
    void argumentsOfAnOwnArrayAreLeftAlone()
    {
        const QString key = randomKey("sk-arg-");
        QByteArray a0("kwb"), a1("run"), a2("--api-key"), a3 = key.toUtf8(), a4 = "--api-key=" + key.toUtf8() + "x";
        char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
        QCOMPARE(secrets::takeSecretsFromArguments(5, argv), 2);
        QCOMPARE(QByteArray(argv[3]), key.toUtf8());
        QVERIFY(secrets::known().contains(key));
        QVERIFY(secrets::known().contains(key + QLatin1Char('x')));
    }

    // A child started with the key in its environment and on its command line: while it runs,
    // /proc/<pid>/environ and /proc/<pid>/cmdline hold neither, and the child still has both.
    void childProcShowsNoKey()
    {
        const QString envKey = randomKey("sk-env-");
        const QString otherKey = randomKey("sk-other-");
        const QString argKey = randomKey("sk-arg-");
        const QString argKey2 = randomKey("sk-arg2-");
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("KWB_API_KEY"), envKey);
        environment.insert(QStringLiteral("SOME_SERVER_API_KEY"), otherKey);
        environment.insert(QStringLiteral("KWB_SECRETS_MARKER"), QStringLiteral("visible"));
        const QStringList arguments{QStringLiteral("--child"),
                                    QStringLiteral("run"),
                                    QStringLiteral("--api-key"),
                                    argKey,
                                    QStringLiteral("--model"),
                                    QStringLiteral("m"),
                                    QStringLiteral("--api-key=") + argKey2,
                                    QStringLiteral("tail")};
        QProcess child;
        child.setProcessEnvironment(environment);
        child.start(QCoreApplication::applicationFilePath(), arguments);
        QVERIFY(child.waitForStarted(10000));
        QVERIFY(child.waitForReadyRead(10000));
        QTRY_VERIFY_WITH_TIMEOUT(child.canReadLine(), 10000);
        const QJsonObject said = QJsonDocument::fromJson(child.readLine()).object();
        const qint64 pid = child.processId();
        const QByteArray environBlock = procFile(pid, "environ");
        const QByteArray cmdline = procFile(pid, "cmdline");
        QCOMPARE(child.state(), QProcess::Running); // what was read is the running child's
        child.write("done\n");
        child.closeWriteChannel();
        QVERIFY(child.waitForFinished(10000));
        QCOMPARE(child.exitCode(), 0);

        // In memory: the environment's key, both argument values, the other server's key; the
        // child's argv reads as it was given (CLI11 parses it after the take).
        QCOMPARE(said.value(QLatin1String("api_key")).toString(), envKey);
        QCOMPARE(said.value(QLatin1String("getenv")).toBool(), false);
        const QStringList known = said.value(QLatin1String("known")).toVariant().toStringList();
        for (const QString& key : {envKey, otherKey, argKey, argKey2})
            QVERIFY2(known.contains(key), qPrintable(key));
        QStringList seen = said.value(QLatin1String("argv")).toVariant().toStringList();
        seen.removeFirst();
        QCOMPARE(seen, arguments);

        // Nothing in /proc: the environment block keeps its names, with the values cleared.
        QVERIFY2(environBlock.contains("KWB_SECRETS_MARKER=visible"), environBlock.constData());
        for (const QString& key : {envKey, otherKey, argKey, argKey2}) {
            QVERIFY2(!environBlock.contains(key.toUtf8()), qPrintable(key));
            QVERIFY2(!cmdline.contains(key.toUtf8()), qPrintable(key));
        }
        QVERIFY(entries(environBlock).contains("KWB_API_KEY="));
        const QByteArrayList args = entries(cmdline);
        QCOMPARE(args.size(), arguments.size() + 2); // the program, the arguments, the end's empty one
        QCOMPARE(args.at(3), QByteArray("--api-key"));
        QCOMPARE(args.at(4), QByteArray(argKey.size(), '*'));
        QCOMPARE(args.at(7), "--api-key=" + QByteArray(argKey2.size(), '*'));
        QCOMPARE(args.at(8), QByteArray("tail"));
    }

    // kwb itself: `kwb run` with the key in its environment, then on its command line, waits on a
    // server that never answers; meanwhile its /proc shows no key, and the server got the key.
    void kwbRunShowsNoKey_data()
    {
        QTest::addColumn<int>("form");
        QTest::newRow("environment") << 0;
        QTest::newRow("--api-key VALUE") << 1;
        QTest::newRow("--api-key=VALUE") << 2;
    }

    void kwbRunShowsNoKey()
    {
        QFETCH(int, form);
        ScriptedLlmServer server;
        QVERIFY(server.start());
        ScriptedLlmServer::Reply silent;
        silent.action = ScriptedLlmServer::Action::Silent;
        server.setDefaultReply(silent);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());

        const QString envKey = randomKey("sk-env-");
        const QString argKey = randomKey("sk-arg-");
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("KWB_API_KEY"), envKey);
        environment.insert(QStringLiteral("KWB_SECRETS_MARKER"), QStringLiteral("visible"));
        QStringList arguments{QStringLiteral("--worker=" KWB_FAKEWORKER),
                              QStringLiteral("--tasks-dir"),
                              QStringLiteral(KWB_SOURCE_DIR "/tasks"),
                              QStringLiteral("run"),
                              QStringLiteral("--regime"),
                              QStringLiteral("zero-shot"),
                              QStringLiteral("--tasks"),
                              QStringLiteral("L1:1"),
                              QStringLiteral("--endpoint"),
                              server.baseUrl().toString(),
                              QStringLiteral("--model"),
                              QStringLiteral("m"),
                              QStringLiteral("--model-timeout"),
                              QStringLiteral("60"),
                              QStringLiteral("--db"),
                              dir.filePath(QStringLiteral("runs.sqlite")),
                              QStringLiteral("--no-os-sandbox")}; // the point is kwb's /proc, not the worker's
        if (form == 1)
            arguments << QStringLiteral("--api-key") << argKey;
        else if (form == 2)
            arguments << QStringLiteral("--api-key=") + argKey;
        const QString used = form == 0 ? envKey : argKey;

        QProcess kwb;
        kwb.setProcessEnvironment(environment);
        kwb.start(QStringLiteral(KWB_CLI), arguments);
        QVERIFY(kwb.waitForStarted(10000));
        QTRY_VERIFY_WITH_TIMEOUT(!server.requests().isEmpty() || kwb.state() != QProcess::Running, 30000);
        QVERIFY2(kwb.state() == QProcess::Running, kwb.readAllStandardError().constData());
        const QByteArray environBlock = procFile(kwb.processId(), "environ");
        const QByteArray cmdline = procFile(kwb.processId(), "cmdline");
        const bool running = kwb.state() == QProcess::Running;
        kwb.kill();
        kwb.waitForFinished(10000);
        QVERIFY(running);

        // The key reached the server from memory.
        bool sent = false;
        for (const auto& headers : server.headers())
            sent = sent || headers.value("authorization") == "Bearer " + used.toUtf8();
        QVERIFY2(sent, "the model request did not carry the key");
        QVERIFY2(environBlock.contains("KWB_SECRETS_MARKER=visible"), environBlock.constData());
        QVERIFY(!environBlock.contains(envKey.toUtf8()));
        QVERIFY(!cmdline.contains(argKey.toUtf8()));
        QVERIFY(cmdline.contains("--model"));
    }

    // The window: kernel-workbench with the key in its environment (a worker that never answers
    // keeps it up); once it has started, its /proc/<pid>/environ holds no key.
    void windowShowsNoKey()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString worker = dir.filePath(QStringLiteral("silent-worker"));
        {
            QFile script(worker);
            QVERIFY(script.open(QIODevice::WriteOnly));
            script.write("#!/bin/sh\nexec sleep 20\n");
        }
        QVERIFY(QFile::setPermissions(worker, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        const QString envKey = randomKey("sk-env-");
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("KWB_API_KEY"), envKey);
        environment.insert(QStringLiteral("KWB_SECRETS_MARKER"), QStringLiteral("visible"));
        environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        environment.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
        QProcess window;
        window.setProcessEnvironment(environment);
        window.start(QStringLiteral(KWB_APP),
                     {QStringLiteral("--quit-after"), QStringLiteral("15000"), QStringLiteral("--worker"), worker});
        QVERIFY(window.waitForStarted(10000));
        // Before main() runs the key is there; main() takes it first thing. Read until it is gone,
        // each read checked to be of the running program (the marker is there, the process is up).
        bool gone = false;
        QByteArray environBlock;
        const QDeadlineTimer deadline(20000);
        while (!gone && !deadline.hasExpired() && window.state() == QProcess::Running) {
            environBlock = procFile(window.processId(), "environ");
            gone = environBlock.contains("KWB_SECRETS_MARKER=visible") && !environBlock.contains(envKey.toUtf8()) &&
                   window.state() == QProcess::Running;
            if (!gone)
                QThread::msleep(10);
        }
        window.kill();
        window.waitForFinished(10000);
        QVERIFY2(gone, environBlock.constData());
    }
};

int main(int argc, char** argv)
{
    if (argc > 1 && std::strcmp(argv[1], "--child") == 0)
        return childMain(argc, argv);
    QCoreApplication application(argc, argv);
    TestSecrets test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_secrets.moc"
