// kwb end to end against the fake worker: output and the exit codes documented in docs/cli.md.

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

class TestCli : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    QString candidate(const QString& name, const QString& markers)
    {
        const QString path = m_dir.filePath(name);
        QFile file(path);
        if (file.open(QIODevice::WriteOnly))
            file.write(
                QStringLiteral("Here is the kernel.\n<!-- %1 -->\n```cuda\nextern \"C\" __global__ void k() {}\n```\n"
                               "```python\ndef forward(x):\n    return x\n```\n")
                    .arg(markers)
                    .toUtf8());
        return path;
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void exitCodes_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QStringList>("environment"); // NAME=VALUE for the fake worker
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("expected"); // in stdout or stderr

        const QString worker = QStringLiteral("--worker=" KWB_FAKEWORKER);
        const QString correct = candidate(QStringLiteral("correct.md"), QStringLiteral("status: correct"));
        const QString compileError = candidate(QStringLiteral("compile.md"), QStringLiteral("status: compile_error"));
        const QString hang = candidate(QStringLiteral("hang.md"), QStringLiteral("fake: hang"));
        const QString segv = candidate(QStringLiteral("segv.md"), QStringLiteral("fake: segv"));

        QTest::newRow("version") << QStringList{QStringLiteral("--version")} << QStringList() << 0
                                 << QStringLiteral("kwb 0.");
        QTest::newRow("help") << QStringList{QStringLiteral("--help")} << QStringList() << 0
                              << QStringLiteral("Exit codes");
        QTest::newRow("no subcommand") << QStringList() << QStringList() << 2 << QString();
        QTest::newRow("unknown subcommand") << QStringList{QStringLiteral("bogus")} << QStringList() << 2 << QString();
        QTest::newRow("eval without candidate") << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L1/1")}
                                                << QStringList() << 2 << QStringLiteral("CANDIDATE");
        QTest::newRow("bad profile") << QStringList{worker,  QStringLiteral("eval"),      QStringLiteral("L1/1"),
                                                    correct, QStringLiteral("--profile"), QStringLiteral("fastest")}
                                     << QStringList() << 2 << QStringLiteral("the worker knows kernelbench");
        QTest::newRow("bad arch") << QStringList{worker,  QStringLiteral("eval"),   QStringLiteral("L1/1"),
                                                 correct, QStringLiteral("--arch"), QStringLiteral("90")}
                                  << QStringList() << 2 << QStringLiteral("sm_XY");
        QTest::newRow("unreadable candidate") << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L1/1"),
                                                             m_dir.filePath(QStringLiteral("missing.md"))}
                                              << QStringList() << 2 << QStringLiteral("cannot read candidate");
        QTest::newRow("worker not found")
            << QStringList{QStringLiteral("--worker=/nonexistent/kwb-worker"), QStringLiteral("tasks")} << QStringList()
            << 3 << QStringLiteral("does not exist");
        QTest::newRow("newer protocol") << QStringList{worker, QStringLiteral("tasks")}
                                        << QStringList{QStringLiteral("FAKEWORKER_PROTOCOL=2")} << 3
                                        << QStringLiteral("newer");
        QTest::newRow("worker dies at start")
            << QStringList{worker, QStringLiteral("device")} << QStringList{QStringLiteral("FAKEWORKER_MODE=exit")} << 3
            << QStringLiteral("crashed");
        QTest::newRow("tasks") << QStringList{worker, QStringLiteral("tasks")} << QStringList() << 0
                               << QStringLiteral("Conv2d, ReLU, bias add");
        // A KernelBench-only task shows how it is evaluated and why where its dimensions would be, and the count.
        QTest::newRow("tasks, KernelBench only")
            << QStringList{worker, QStringLiteral("tasks")} << QStringList{QStringLiteral("FAKEWORKER_LIST_ALL=1")} << 0
            << QStringLiteral(
                   "KernelBench format only (reference: KernelBench's Model): line 18: nn.LSTM (no functional "
                   "translation here)");
        QTest::newRow("tasks, KernelBench-only count")
            << QStringList{worker, QStringLiteral("tasks")} << QStringList{QStringLiteral("FAKEWORKER_LIST_ALL=1")} << 0
            << QStringLiteral("250 tasks (37 evaluated in KernelBench's answer format only)");
        QTest::newRow("analyze") << QStringList{worker, QStringLiteral("analyze"), QStringLiteral("L1/1")}
                                 << QStringList() << 0 << QStringLiteral("137.4 GFLOP");
        QTest::newRow("analyze unknown task") << QStringList{worker, QStringLiteral("analyze"), QStringLiteral("L9/9")}
                                              << QStringList() << 4 << QStringLiteral("unknown_task");
        QTest::newRow("eval correct") << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L1/1"), correct}
                                      << QStringList() << 0 << QStringLiteral("status       correct");
        // Each kernel's measured bytes (issue 40): a row per kernel, its bandwidth against the peak.
        QTest::newRow("eval traffic per kernel")
            << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L2/1"),
                           candidate(QStringLiteral("traffic.md"), QStringLiteral("traffic: per_kernel"))}
            << QStringList() << 0
            << QStringLiteral("relu_bias_add (its own): 1.05 GB read, 1.05 GB written + 0.017 GB "
                              "written back after the call in ");
        QTest::newRow("eval compile error")
            << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L1/1"), compileError} << QStringList() << 1
            << QStringLiteral("compile log:");
        QTest::newRow("eval timeout") << QStringList{worker, QStringLiteral("eval"),      QStringLiteral("L1/1"),
                                                     hang,   QStringLiteral("--timeout"), QStringLiteral("1")}
                                      << QStringList() << 1 << QStringLiteral("status   timeout");
        QTest::newRow("eval crash") << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L1/1"), segv}
                                    << QStringList() << 1 << QStringLiteral("SIGSEGV");
        const QString greedy =
            candidate(QStringLiteral("greedy.md"), QStringLiteral("fake: alloc mib: 2048 then: hang"));
        QTest::newRow("eval over host memory") << QStringList{worker,
                                                              QStringLiteral("eval"),
                                                              QStringLiteral("L1/1"),
                                                              greedy,
                                                              QStringLiteral("--max-host-memory"),
                                                              QStringLiteral("200M"),
                                                              QStringLiteral("--timeout"),
                                                              QStringLiteral("60")}
                                               << QStringList() << 1 << QStringLiteral("over the limit of 200 MiB");
        QTest::newRow("eval --max-host-memory 0")
            << QStringList{worker,
                           QStringLiteral("eval"),
                           QStringLiteral("L1/1"),
                           correct,
                           QStringLiteral("--max-host-memory"),
                           QStringLiteral("0")}
            << QStringList() << 2 << QStringLiteral("kwb: --max-host-memory: \"0\": the size must be more than zero");
        QTest::newRow("eval --max-host-memory garbage")
            << QStringList{worker,
                           QStringLiteral("eval"),
                           QStringLiteral("L1/1"),
                           correct,
                           QStringLiteral("--max-host-memory"),
                           QStringLiteral("lots")}
            << QStringList() << 2 << QStringLiteral("kwb: --max-host-memory: \"lots\" is not a size");
        QTest::newRow("eval --no-os-sandbox warns")
            << QStringList{worker, QStringLiteral("eval"), QStringLiteral("L1/1"), correct,
                           QStringLiteral("--no-os-sandbox")}
            << QStringList() << 0
            << QStringLiteral("kwb: warning: the worker runs without the OS sandbox (network and files open to it): "
                              "turned off (--no-os-sandbox)");
        QTest::newRow("device") << QStringList{worker, QStringLiteral("device")} << QStringList() << 0
                                << QStringLiteral("NVIDIA H200");
        QTest::newRow("no device") << QStringList{worker, QStringLiteral("device")}
                                   << QStringList{QStringLiteral("FAKEWORKER_NO_DEVICE=1")} << 0
                                   << QStringLiteral("no GPU");
        // How the host isolates workers is printed with the GPU and without one (issue 32).
        QTest::newRow("device shows the memory cgroup")
            << QStringList{worker, QStringLiteral("device")} << QStringList() << 0 << QStringLiteral("memory cgroup ");
        QTest::newRow("no device shows the sandbox")
            << QStringList{worker, QStringLiteral("device")} << QStringList{QStringLiteral("FAKEWORKER_NO_DEVICE=1")}
            << 0 << QStringLiteral("worker sandbox ");
        QTest::newRow("worker from environment")
            << QStringList{QStringLiteral("tasks")} << QStringList{QStringLiteral("KWB_WORKER=" KWB_FAKEWORKER)} << 0
            << QStringLiteral("L2/1");
    }

    void exitCodes()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QStringList, environment);
        QFETCH(int, exitCode);
        QFETCH(QString, expected);

        QProcess kwb;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("KWB_WORKER"));
        QStringList passed;
        for (const QString& entry : environment) {
            env.insert(entry.section(QLatin1Char('='), 0, 0), entry.section(QLatin1Char('='), 1));
            passed << entry.section(QLatin1Char('='), 0, 0);
        }
        // The worker gets only what it needs (workerEnvironment()): the fake worker's switches by name.
        env.insert(QStringLiteral("KWB_WORKER_ENV"), passed.join(QLatin1Char(',')));
        kwb.setProcessEnvironment(env);
        QElapsedTimer clock;
        clock.start();
        kwb.start(QStringLiteral(KWB_CLI), arguments);
        QVERIFY(kwb.waitForFinished(30000));
        const QString output = QString::fromUtf8(kwb.readAllStandardOutput() + kwb.readAllStandardError());
        QCOMPARE(kwb.exitStatus(), QProcess::NormalExit);
        QVERIFY2(kwb.exitCode() == exitCode,
                 qPrintable(QStringLiteral("exit %1, output:\n%2").arg(kwb.exitCode()).arg(output)));
        QVERIFY2(output.contains(expected), qPrintable(output));
        if (QByteArray(QTest::currentDataTag()) == "eval timeout")
            QVERIFY2(clock.elapsed() < 1000 + 2000 + 3000, qPrintable(QString::number(clock.elapsed())));
    }

    void evalJsonFields()
    {
        const QString path = candidate(QStringLiteral("json.md"), QStringLiteral("status: incorrect"));
        QProcess kwb;
        kwb.start(QStringLiteral(KWB_CLI),
                  {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"), QStringLiteral("L2/1"), path,
                   QStringLiteral("--json"), QStringLiteral("--trials"), QStringLiteral("7"),
                   QStringLiteral("--profile"), QStringLiteral("kernelbench-v0.1"), QStringLiteral("--arch"),
                   QStringLiteral("sm_80"), QStringLiteral("--scale"), QStringLiteral("smoke")});
        QVERIFY(kwb.waitForFinished(30000));
        QCOMPARE(kwb.exitCode(), 1);
        const QJsonObject result = QJsonDocument::fromJson(kwb.readAllStandardOutput()).object();
        QCOMPARE(result.value(QLatin1String("status")).toString(), QStringLiteral("incorrect"));
        for (const char* field : {"compile_log", "speedup", "max_abs_diff", "worker_stderr", "response"})
            QVERIFY2(result.contains(QLatin1String(field)), field);
        // Not timed: the recorded H200 response of an incorrect answer has speedup null.
        QVERIFY(result.value(QLatin1String("speedup")).isNull());
        // What the CLI asked the worker for (the fake echoes the request).
        const QJsonObject sent =
            result.value(QLatin1String("response")).toObject().value(QLatin1String("echo")).toObject();
        QCOMPARE(sent.value(QLatin1String("timing_trials")).toInt(), 7);
        QCOMPARE(sent.value(QLatin1String("profile")).toString(), QStringLiteral("kernelbench-v0.1"));
        QCOMPARE(sent.value(QLatin1String("arch")).toString(), QStringLiteral("sm_80"));
        QCOMPARE(sent.value(QLatin1String("scale")).toString(), QStringLiteral("smoke"));
        QVERIFY(sent.value(QLatin1String("answer")).toString().contains(QLatin1String("__global__")));
    }

    // `kwb eval` of an answer whose allocation failed (the fake worker: torch's allocator's report,
    // 4 GiB asked for with 1 GiB free) while another process held 60 GiB of that GPU (a fake
    // nvidia-smi first on kwb's PATH lists this test process): the machine's, exit 3,
    // out_of_memory_elsewhere with who held it. Where nobody else held enough (nvidia-smi lists
    // nothing), the candidate's runtime_error, exit 1.
    void evalOutOfMemoryElsewhereIsTheMachines()
    {
        const QString path = candidate(QStringLiteral("oom.md"), QStringLiteral("fake: oom"));
        const QString bin = m_dir.filePath(QStringLiteral("smi-bin"));
        QVERIFY(QDir().mkpath(bin));
        const auto run = [&](const QByteArray& listing) {
            QFile smi(bin + QStringLiteral("/nvidia-smi"));
            if (!smi.open(QIODevice::WriteOnly))
                return qMakePair(-1, QString());
            smi.write("#!/bin/sh\nprintf '" + listing + "'\n");
            smi.close();
            smi.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
            QProcess kwb;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("PATH"), bin + QLatin1Char(':') + env.value(QStringLiteral("PATH")));
            kwb.setProcessEnvironment(env);
            kwb.start(QStringLiteral(KWB_CLI), {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"),
                                                QStringLiteral("L1/1"), path});
            if (!kwb.waitForFinished(30000))
                return qMakePair(-2, QString());
            return qMakePair(kwb.exitCode(),
                             QString::fromUtf8(kwb.readAllStandardOutput() + kwb.readAllStandardError()));
        };
        const QByteArray self = QByteArray::number(QCoreApplication::applicationPid());
        const auto held = run(self + ", 61440, /usr/bin/model-server\\n");
        QVERIFY2(held.first == 3, qPrintable(held.second));
        QVERIFY2(held.second.contains(QLatin1String("out_of_memory_elsewhere")) &&
                     held.second.contains(QLatin1String("60.00 GiB")) &&
                     held.second.contains(QStringLiteral("model-server (pid %1)").arg(QString::fromLatin1(self))),
                 qPrintable(held.second));
        const auto alone = run(QByteArray());
        QVERIFY2(alone.first == 1, qPrintable(alone.second));
        QVERIFY2(alone.second.contains(QLatin1String("runtime_error")), qPrintable(alone.second));
    }

    // `kwb device` says what other processes hold of a local GPU (the fake nvidia-smi lists this
    // test process with 10 GiB on the recorded device's bus), in its table and under --json.
    void deviceShowsMemoryHeldElsewhere()
    {
        const QString bin = m_dir.filePath(QStringLiteral("smi-device-bin"));
        QVERIFY(QDir().mkpath(bin));
        QFile smi(bin + QStringLiteral("/nvidia-smi"));
        QVERIFY(smi.open(QIODevice::WriteOnly));
        smi.write("#!/bin/sh\ncase \"$*\" in *'-i 00000000:00:06.0'*) printf '" +
                  QByteArray::number(QCoreApplication::applicationPid()) +
                  ", 10240, /usr/bin/model-server\\n' ;; *) exit 6 ;; esac\n");
        smi.close();
        QVERIFY(smi.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("PATH"), bin + QLatin1Char(':') + env.value(QStringLiteral("PATH")));
        for (const bool json : {false, true}) {
            QProcess kwb;
            kwb.setProcessEnvironment(env);
            QStringList args{QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("device")};
            if (json)
                args << QStringLiteral("--json");
            kwb.start(QStringLiteral(KWB_CLI), args);
            QVERIFY(kwb.waitForFinished(30000));
            QCOMPARE(kwb.exitCode(), 0);
            const QByteArray out = kwb.readAllStandardOutput();
            if (!json) {
                QVERIFY2(out.contains("held by other processes") && out.contains("model-server (pid ") &&
                             out.contains("10.00 GiB"),
                         out.constData());
                continue;
            }
            const QJsonObject held = QJsonDocument::fromJson(out)
                                         .object()
                                         .value(QLatin1String("host"))
                                         .toObject()
                                         .value(QLatin1String("gpu_memory_elsewhere"))
                                         .toObject();
            QCOMPARE(held.value(QLatin1String("bytes")).toDouble(), 10.0 * (1LL << 30));
            QCOMPARE(held.value(QLatin1String("holders")).toArray().size(), 1);
        }
    }

    void analyzeJsonFields()
    {
        QProcess kwb;
        kwb.start(QStringLiteral(KWB_CLI), {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("analyze"),
                                            QStringLiteral("L1/1"), QStringLiteral("--json")});
        QVERIFY(kwb.waitForFinished(30000));
        QCOMPARE(kwb.exitCode(), 0);
        const QJsonObject result = QJsonDocument::fromJson(kwb.readAllStandardOutput()).object();
        for (const char* field :
             {"flops", "bytes_unfused", "bytes_fused", "intensity_unfused", "intensity_fused", "ops"})
            QVERIFY2(result.contains(QLatin1String(field)), field);
    }

    // `kwb regimes`: the built-ins, then a user's regime from $XDG_CONFIG_HOME/kernel-workbench/
    // regimes, and the user's file that did not load, with its line and key; no worker needed.
    void regimesListsTheBuiltInsAndTheUsers()
    {
        const QString dir = m_dir.filePath(QStringLiteral("config/kernel-workbench/regimes"));
        QVERIFY(QDir().mkpath(dir));
        const QByteArray mine = "[[regime]]\nname = \"mine\"\ndescription = \"Two answers, two turns\"\n"
                                "roles = { generator = \"iterative/generator.mustache\", retry = "
                                "\"iterative/retry.mustache\" }\nn = 2\nturns = 2\nfeedback = \"raw_log\"\n"
                                "selection = \"monotone\"\n";
        QFile file(dir + QStringLiteral("/mine.toml"));
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write(mine) == mine.size());
        file.close();
        QFile broken(dir + QStringLiteral("/broken.toml"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write(QByteArray(mine).replace("\"mine\"", "\"other\"").replace("n = 2", "n = 0"));
        broken.close();

        const auto kwb = [this](const QStringList& arguments, QString* output) {
            QProcess process;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
            env.insert(QStringLiteral("KWB_WORKER"), QStringLiteral("/nonexistent/kwb-worker")); // never started
            process.setProcessEnvironment(env);
            process.start(QStringLiteral(KWB_CLI), arguments);
            process.waitForFinished(30000);
            *output = QString::fromUtf8(process.readAllStandardOutput() + process.readAllStandardError());
            return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
        };
        QString text;
        QCOMPARE(kwb({QStringLiteral("regimes")}, &text), 0);
        QVERIFY2(text.contains(QStringLiteral("mine ")) && text.contains(dir + QStringLiteral("/mine.toml")) &&
                     text.contains(QStringLiteral("6 regimes; yours go in ") + dir) &&
                     text.contains(QStringLiteral(", 1 broken file")) &&
                     text.contains(dir + QStringLiteral("/broken.toml:5: regime[0] (other).n: must be an integer "
                                                        "from 1 to 64, not 0")),
                 qPrintable(text));

        QCOMPARE(kwb({QStringLiteral("regimes"), QStringLiteral("--json")}, &text), 0);
        const QJsonObject json = QJsonDocument::fromJson(text.toUtf8()).object();
        QStringList names;
        for (const QJsonValue& r : json.value(QLatin1String("regimes")).toArray())
            names << r.toObject().value(QLatin1String("name")).toString();
        QCOMPARE(names, (QStringList{QStringLiteral("zero-shot"), QStringLiteral("profiling-guided"),
                                     QStringLiteral("iterative"), QStringLiteral("agent"), QStringLiteral("pilot-v1"),
                                     QStringLiteral("mine")}));
        const QJsonObject user = json.value(QLatin1String("regimes")).toArray().last().toObject();
        QCOMPARE(user.value(QLatin1String("builtin")).toBool(true), false);
        QCOMPARE(user.value(QLatin1String("file")).toString(), dir + QStringLiteral("/mine.toml"));
        QCOMPARE(user.value(QLatin1String("n")).toInt(), 2);
        QCOMPARE(json.value(QLatin1String("errors")).toArray().size(), 1);
        QCOMPARE(json.value(QLatin1String("user_dir")).toString(), dir);
    }

    // `kwb gpus`: the shipped GPU table, a user's file that did not load with why, and a shipped
    // table that cannot be read refused with the file, line and column; no worker needed.
    void gpusListsTheTableAndTheBrokenFiles()
    {
        const QString dir = m_dir.filePath(QStringLiteral("gpuconfig/kernel-workbench/gpus"));
        QVERIFY(QDir().mkpath(dir));
        QFile broken(dir + QStringLiteral("/broken.json"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("{\"format\": 1,\n\"gpus\": [}\n");
        broken.close();
        const auto kwb = [this](const QStringList& arguments, const QString& table, QString* output, QString* errors) {
            QProcess process;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("gpuconfig")));
            env.insert(QStringLiteral("KWB_WORKER"), QStringLiteral("/nonexistent/kwb-worker")); // never started
            if (table.isEmpty())
                env.remove(QStringLiteral("KWB_GPU_TABLE"));
            else
                env.insert(QStringLiteral("KWB_GPU_TABLE"), table);
            process.setProcessEnvironment(env);
            process.start(QStringLiteral(KWB_CLI), arguments);
            process.waitForFinished(30000);
            *output = QString::fromUtf8(process.readAllStandardOutput());
            *errors = QString::fromUtf8(process.readAllStandardError());
            return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
        };
        QString text, errors;
        QCOMPARE(kwb({QStringLiteral("gpus")}, QString(), &text, &errors), 0);
        QVERIFY2(text.contains(QStringLiteral("h200-sxm-141gb ")) && text.contains(QStringLiteral("GPUs from ")) &&
                     text.contains(QStringLiteral("; yours go in ") + dir) &&
                     text.contains(QStringLiteral(", 1 file left out")) &&
                     text.contains(dir + QStringLiteral("/broken.json:2:")),
                 qPrintable(text));

        QCOMPARE(kwb({QStringLiteral("gpus"), QStringLiteral("--json")}, QString(), &text, &errors), 0);
        const QJsonObject json = QJsonDocument::fromJson(text.toUtf8()).object();
        QCOMPARE(json.value(QLatin1String("ok")).toBool(), true);
        QStringList keys;
        for (const QJsonValue& g : json.value(QLatin1String("gpus")).toArray())
            keys << g.toObject().value(QLatin1String("key")).toString();
        QVERIFY2(keys.contains(QStringLiteral("h200-sxm-141gb")), qPrintable(keys.join(QLatin1Char(' '))));
        QCOMPARE(json.value(QLatin1String("skipped")).toArray().size(), 1);
        QCOMPARE(json.value(QLatin1String("user_dir")).toString(), dir);

        // The shipped table itself broken: no table, and the error says where.
        const QString table = m_dir.filePath(QStringLiteral("datasheets.json"));
        QFile bad(table);
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("{\"format\": 1,\n\"gpus\": 7}\n");
        bad.close();
        QCOMPARE(kwb({QStringLiteral("gpus")}, table, &text, &errors), 2);
        QVERIFY2(errors.contains(QStringLiteral("kwb gpus: ") + table), qPrintable(errors));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
