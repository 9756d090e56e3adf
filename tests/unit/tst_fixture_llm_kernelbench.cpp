// kwb-fixture-llm --answer-format kernelbench (tests/tools/fixturellmserver.cpp): for each of
// the 30 tasks, answers in KernelBench's format under the "improves with more tries" policy: the
// first need(task) answers are the study's load_inline mistakes (a keyword load_inline lacks, a
// function called by another name than `functions` binds, a ModelNew signature the task does not
// call), then the task's twin (kernelbench/) or an honest torch-only ModelNew whose parameters are
// the reference's by name, shape and kind (checked against the recorded `tasks` response).

#include <QEventLoop>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

namespace {

QString readText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

QString stem(const QString& task) // "L2/1" -> "L2_01"
{
    const QStringList parts = task.mid(1).split(QLatin1Char('/'));
    return QStringLiteral("L%1_%2").arg(parts[0]).arg(parts[1].toInt(), 2, 10, QLatin1Char('0'));
}

} // namespace

class TestFixtureLlmKernelBench : public QObject
{
    Q_OBJECT

    QNetworkAccessManager m_net;

    QString ask(const QUrl& base, const QString& task)
    {
        QNetworkRequest request(QUrl(base.toString() + QStringLiteral("/chat/completions")));
        request.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
        const QJsonObject body{{QStringLiteral("model"), QStringLiteral("fixture-model")},
                               {QStringLiteral("messages"),
                                QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                       {QStringLiteral("content"),
                                                        QStringLiteral("Write your answer for task %1.").arg(task)}}}}};
        QNetworkReply* reply = m_net.post(request, QJsonDocument(body).toJson());
        QEventLoop loop;
        connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
        loop.exec();
        const QJsonObject answer = QJsonDocument::fromJson(reply->readAll()).object();
        reply->deleteLater();
        return answer.value(QLatin1String("choices"))
            .toArray()
            .at(0)
            .toObject()
            .value(QLatin1String("message"))
            .toObject()
            .value(QLatin1String("content"))
            .toString();
    }

private Q_SLOTS:
    void everyTaskFailsAsTheStudyDidThenAnswersRight()
    {
        QTemporaryDir tmp;
        const QString log = tmp.filePath(QStringLiteral("llm.log"));
        QProcess server;
        server.start(QStringLiteral(KWB_FIXTURE_LLM),
                     {QStringLiteral("--candidates"), QStringLiteral(KWB_CANDIDATES_DIR),
                      QStringLiteral("--answer-format"), QStringLiteral("kernelbench"), QStringLiteral("--delay-ms"),
                      QStringLiteral("0"), QStringLiteral("--log"), log});
        QVERIFY(server.waitForReadyRead(10000));
        const QUrl base(QString::fromUtf8(server.readLine()).trimmed());
        QVERIFY(base.isValid());

        QFile tasksFile(QStringLiteral(KWB_PROTOCOL_RECORDED_DIR "/tasks.cpu.response.json"));
        QVERIFY(tasksFile.open(QIODevice::ReadOnly));
        // The fixture server answers the study's 30 (the first ten of each level), of all listed.
        QJsonArray tasks;
        static const QRegularExpression study(QStringLiteral("^L[123]/([1-9]|10)$"));
        for (const QJsonValue& t :
             QJsonDocument::fromJson(tasksFile.readAll()).object().value(QLatin1String("tasks")).toArray())
            if (study.match(t.toObject().value(QLatin1String("id")).toString()).hasMatch())
                tasks.append(t);
        QCOMPARE(tasks.size(), 30);
        constexpr int kTries = 7; // more than the largest need (--max-need 4, + 2 for the pilot's wording)
        QHash<QString, QStringList> answers;
        for (const QJsonValue& t : tasks) {
            const QString id = t.toObject().value(QLatin1String("id")).toString();
            for (int k = 0; k < kTries; ++k)
                answers[id] << ask(base, id);
        }
        server.kill();
        server.waitForFinished();

        // The log: "TASK need=N answers=KIND" per request, in order.
        QHash<QString, QStringList> kinds;
        static const QRegularExpression line(QStringLiteral("^(L\\d+/\\d+) need=(\\d+) answers=(\\S+)$"));
        QHash<QString, int> need;
        for (const QString& l : readText(log).split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            const QRegularExpressionMatch m = line.match(l);
            QVERIFY2(m.hasMatch(), qPrintable(l));
            kinds[m.captured(1)] << m.captured(3);
            need[m.captured(1)] = m.captured(2).toInt();
        }
        QSet<QString> failureKinds;
        int twins = 0, torchOnly = 0;
        QSet<QString> torchCalls, functionalCalls; // what the torch-only answers call, by namespace
        for (const QJsonValue& tv : tasks) {
            const QJsonObject t = tv.toObject();
            const QString id = t.value(QLatin1String("id")).toString();
            QCOMPARE(kinds[id].size(), kTries);
            const QString twin =
                readText(QStringLiteral(KWB_CANDIDATES_DIR "/kernelbench/") + stem(id) + QStringLiteral(".md"));
            for (int k = 0; k < kTries; ++k) {
                const QString& a = answers[id][k];
                const QString& kind = kinds[id][k];
                QVERIFY2(a.contains(QLatin1String("```python\n")) &&
                             a.contains(QLatin1String("class ModelNew(nn.Module)")),
                         qPrintable(id));
                if (k < need[id]) {
                    failureKinds.insert(kind);
                    if (kind == QLatin1String("kb-bad-keyword"))
                        QVERIFY(a.contains(QLatin1String("extra_cuda_flags=")));
                    else if (kind == QLatin1String("kb-function-name"))
                        QVERIFY(a.contains(QRegularExpression(QStringLiteral("\\.[a-z_]+_cuda\\("))));
                    else
                        QVERIFY2(kind == QLatin1String("kb-signature") &&
                                     (a.contains(QLatin1String("def __init__(self, hidden_size):")) ||
                                      a.contains(QLatin1String(", bias_term):"))),
                                 qPrintable(id + QLatin1Char(' ') + kind));
                    QVERIFY(a.contains(QLatin1String("load_inline(")));
                    continue;
                }
                if (!twin.isEmpty()) {
                    QCOMPARE(kind, QStringLiteral("kb-twin"));
                    QCOMPARE(a, twin);
                    ++twins;
                    continue;
                }
                QCOMPARE(kind, QStringLiteral("kb-torch-only"));
                QVERIFY(!a.contains(QLatin1String("load_inline")));
                ++torchOnly;
                static const QRegularExpression call(QStringLiteral("\\b(torch|F)\\.([A-Za-z_][A-Za-z_0-9]*)\\("));
                for (auto it = call.globalMatch(a); it.hasNext();) {
                    const QRegularExpressionMatch m = it.next();
                    (m.captured(1) == QLatin1String("F") ? functionalCalls : torchCalls).insert(m.captured(2));
                }
                // Its parameters are the reference's: names, full-scale shapes, parameter or buffer.
                QStringList expected, got;
                for (const QJsonValue& pv : t.value(QLatin1String("params")).toArray()) {
                    const QJsonObject p = pv.toObject();
                    QStringList dims;
                    for (const QJsonValue& d : p.value(QLatin1String("full")).toArray())
                        dims << QString::number(d.toInteger());
                    expected << QStringLiteral("%1 (%2) %3")
                                    .arg(p.value(QLatin1String("name")).toString(), dims.join(QStringLiteral(", ")),
                                         p.value(QLatin1String("buffer")).toBool() ? QStringLiteral("True")
                                                                                   : QStringLiteral("False"));
                }
                static const QRegularExpression entry(
                    QStringLiteral("\\n    \\(\"([^\"]+)\", \\(([0-9, ]*?),?\\), (True|False)\\),"));
                for (auto it = entry.globalMatch(a); it.hasNext();) {
                    const QRegularExpressionMatch m = it.next();
                    got << QStringLiteral("%1 (%2) %3").arg(m.captured(1), m.captured(2), m.captured(3));
                }
                QCOMPARE(got, expected);
                // forward takes the reference's inputs in order.
                QStringList inputs;
                for (const QJsonValue& in : t.value(QLatin1String("inputs")).toArray())
                    inputs << in.toObject().value(QLatin1String("name")).toString();
                QVERIFY2(
                    a.contains(QStringLiteral("    def forward(self, %1):\n").arg(inputs.join(QStringLiteral(", ")))),
                    qPrintable(id));
            }
        }
        QCOMPARE(failureKinds, (QSet<QString>{QStringLiteral("kb-bad-keyword"), QStringLiteral("kb-function-name"),
                                              QStringLiteral("kb-signature")}));
        QVERIFY(twins > 0);
        QVERIFY(torchOnly > 0);

        // The torch-only answers are Python: every function they call exists in Python's torch
        // (the reference's TorchScript names ATen ops that are only torch.nn.functional's there).
        const QString check = QStringLiteral("import sys, torch, torch.nn.functional as F\n"
                                             "t, f = (a.split(',') for a in sys.argv[1:3])\n"
                                             "print(' '.join([n for n in t if n and not hasattr(torch, n)] + ['F.' + n "
                                             "for n in f if n and not hasattr(F, n)]))\n");
        const QStringList torchNames(torchCalls.begin(), torchCalls.end()),
            fNames(functionalCalls.begin(), functionalCalls.end());
        QVERIFY(!torchNames.isEmpty());
        for (const QString& python : {QStringLiteral("/usr/bin/python3"), QStringLiteral("python3")}) {
            QProcess p;
            p.start(python,
                    {QStringLiteral("-c"), check, torchNames.join(QLatin1Char(',')), fNames.join(QLatin1Char(','))});
            if (!p.waitForFinished(60000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
                continue; // no such python, or no torch in it
            const QString missing = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
            QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("not in Python's torch: ") + missing));
            return;
        }
        QSKIP("no python3 with torch here (python3-torch, scripts/setup-debian.sh)");
    }
};

QTEST_GUILESS_MAIN(TestFixtureLlmKernelBench)
#include "tst_fixture_llm_kernelbench.moc"
