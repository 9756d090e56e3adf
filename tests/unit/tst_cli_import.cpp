// `kwb import kernelbench DIR --db FILE` with the fake worker (fakeworker.cpp: an evaluate answer's
// "status: NAME" marker picks the recorded response): KernelBench's file naming, the files skipped
// and why, one run whose rows are the generations as samples of turn 1, sent in KernelBench's
// answer format. And `kwb run --answer-format kernelbench` end to end against kwb-fixture-llm in
// its kernelbench mode: the run takes the prompts-kernelbench set, is named and stored with the
// format, and every compile and evaluate request it sends names it.

#include "core/store/runstore.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

namespace {

void write(const QString& path, const QString& text)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    f.write(text.toUtf8());
}

QString generation(const QString& status)
{
    return QStringLiteral("import torch\nimport torch.nn as nn\n\n# status: %1\nclass ModelNew(nn.Module):\n"
                          "    def forward(self, a, b):\n        return torch.matmul(a, b)\n")
        .arg(status);
}

} // namespace

class TestCliImport : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void importsAFolderOfGenerations()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        QVERIFY(QDir().mkpath(dir.path()));
        write(dir.filePath(QStringLiteral("level_1_problem_1_sample_0_kernel.py")), generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_1_problem_1_sample_1_kernel.py")), generation(QStringLiteral("incorrect")));
        write(dir.filePath(QStringLiteral("level_2_problem_1_sample_0_kernel.py")), generation(QStringLiteral("compile_error")));
        write(dir.filePath(QStringLiteral("level_1_problem_1_sample_2_kernel.txt")), generation(QStringLiteral("correct")));
        // Skipped: the same sample again, a problem outside the 30 tasks, a fourth level, another
        // name, a task the (fake) worker does not list.
        write(dir.filePath(QStringLiteral("level_3_problem_10_sample_0_kernel.py")), generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_2_problem_1_sample_0_kernel.txt")), generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_1_problem_42_sample_0_kernel.py")), generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_4_problem_1_sample_0_kernel.py")), generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("notes.md")), QStringLiteral("not a generation\n"));

        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        QProcess kwb;
        kwb.start(QStringLiteral(KWB_CLI),
                  {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("import"), QStringLiteral("kernelbench"),
                   dir.path(), QStringLiteral("--db"), db, QStringLiteral("--device"), QStringLiteral("cpu"),
                   QStringLiteral("--no-os-sandbox"), QStringLiteral("--json")});
        QVERIFY(kwb.waitForFinished(120000));
        const QByteArray stdoutText = kwb.readAllStandardOutput();
        QVERIFY2(kwb.exitCode() == 0, kwb.readAllStandardError().constData());
        const QJsonObject summary = QJsonDocument::fromJson(stdoutText).object();
        QCOMPARE(summary.value(QLatin1String("evaluated")).toInt(), 4);
        QCOMPARE(summary.value(QLatin1String("tasks")).toInt(), 2);
        const QJsonObject statuses = summary.value(QLatin1String("statuses")).toObject();
        QCOMPARE(statuses.value(QLatin1String("correct")).toInt(), 2);
        QCOMPARE(statuses.value(QLatin1String("incorrect")).toInt(), 1);
        QCOMPARE(statuses.value(QLatin1String("compile_error")).toInt(), 1);
        QHash<QString, QString> reasons;
        for (const QJsonValue& s : summary.value(QLatin1String("skipped")).toArray())
            reasons.insert(s.toObject().value(QLatin1String("file")).toString(),
                           s.toObject().value(QLatin1String("reason")).toString());
        QCOMPARE(reasons.size(), 5);
        QCOMPARE(reasons.value(QStringLiteral("level_3_problem_10_sample_0_kernel.py")),
                 QStringLiteral("the worker has no task L3/10"));
        QVERIFY(reasons.value(QStringLiteral("level_2_problem_1_sample_0_kernel.txt")).contains(QLatin1String("already sample 0 of L2/1")));
        QVERIFY(reasons.value(QStringLiteral("level_1_problem_42_sample_0_kernel.py")).contains(QLatin1String("not one of the 30 tasks")));
        QVERIFY(reasons.value(QStringLiteral("level_4_problem_1_sample_0_kernel.py")).contains(QLatin1String("not one of the 30 tasks")));
        QVERIFY(reasons.value(QStringLiteral("notes.md")).contains(QLatin1String("naming")));

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().regime, QStringLiteral("import"));
        QCOMPARE(runs.first().status, RunStatus::Finished);
        QVERIFY(runs.first().name.contains(QLatin1String("[kernelbench]")));
        const RunConfig config = RunConfig::fromJson(runs.first().config);
        QCOMPARE(config.extra.value(QLatin1String("answer_format")).toString(), QStringLiteral("kernelbench"));
        QCOMPARE(config.taskIds(), (QStringList{QStringLiteral("L1/1"), QStringLiteral("L2/1")}));
        QCOMPARE(config.extra.value(QLatin1String("import")).toObject().value(QLatin1String("skipped")).toArray().size(), 5);

        const QList<EvaluationRecord> rows = store.evaluations(runs.first().id);
        QCOMPARE(rows.size(), 4);
        QStringList seen;
        for (const EvaluationRecord& e : rows) {
            QCOMPARE(e.turn, 1);
            QCOMPARE(e.role, QStringLiteral("generator"));
            seen << QStringLiteral("%1#%2:%3").arg(e.task).arg(e.sample).arg(e.status);
            const std::optional<CandidateRecord> candidate = store.candidate(e.candidateId);
            QVERIFY(candidate);
            QCOMPARE(candidate->answer, generation(e.status)); // each file's marker is its status
            // Sent in KernelBench's format (the fake worker echoes the request).
            const QJsonObject echo = e.result.value(QLatin1String("echo")).toObject();
            if (!echo.isEmpty())
                QCOMPARE(echo.value(QLatin1String("answer_format")).toString(), QStringLiteral("kernelbench"));
        }
        // Stored as they end: a generation built ahead (here the same file as sample 0) may be
        // evaluated before an earlier one whose build is still to come.
        seen.sort();
        QCOMPARE(seen, (QStringList{QStringLiteral("L1/1#0:correct"), QStringLiteral("L1/1#1:incorrect"),
                                    QStringLiteral("L1/1#2:correct"), QStringLiteral("L2/1#0:compile_error")}));
    }

    void aRunInKernelBenchFormat()
    {
        QTemporaryDir tmp;
        QProcess server;
        server.start(QStringLiteral(KWB_FIXTURE_LLM), {QStringLiteral("--candidates"), QStringLiteral(KWB_CANDIDATES_DIR),
                                                       QStringLiteral("--answer-format"), QStringLiteral("kernelbench"),
                                                       QStringLiteral("--delay-ms"), QStringLiteral("0")});
        QVERIFY(server.waitForReadyRead(10000));
        const QString endpoint = QString::fromUtf8(server.readLine()).trimmed();
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const QString log = tmp.filePath(QStringLiteral("worker.jsonl"));
        QProcess kwb;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("FAKEWORKER_LOG"), log);
        environment.insert(QStringLiteral("KWB_WORKER_ENV"), QStringLiteral("FAKEWORKER_LOG")); // kwb passes it on
        environment.remove(QStringLiteral("KWB_PROMPTS_DIR"));
        kwb.setProcessEnvironment(environment);
        kwb.start(QStringLiteral(KWB_CLI),
                  {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("run"), QStringLiteral("--regime"),
                   QStringLiteral("iterative"), QStringLiteral("--answer-format"), QStringLiteral("kernelbench"),
                   QStringLiteral("--tasks"), QStringLiteral("L1:1,L2:1"), QStringLiteral("--endpoint"), endpoint,
                   QStringLiteral("--model"), QStringLiteral("fixture-model"), QStringLiteral("--db"), db,
                   QStringLiteral("--no-os-sandbox")});
        QVERIFY(kwb.waitForFinished(120000));
        server.kill();
        server.waitForFinished();
        QVERIFY2(kwb.exitCode() == 0, kwb.readAllStandardError().constData());

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().name, QStringLiteral("iterative [kernelbench] L1:1,L2:1"));
        const RunConfig config = RunConfig::fromJson(runs.first().config);
        QCOMPARE(config.extra.value(QLatin1String("answer_format")).toString(), QStringLiteral("kernelbench"));
        QVERIFY(config.extra.value(QLatin1String("prompts_dir")).toString().endsWith(QLatin1String("/prompts-kernelbench")));
        QVERIFY(config.templates.value(QStringLiteral("partials/contract")).contains(QLatin1String("class ModelNew(nn.Module)")));
        const QList<EvaluationRecord> rows = store.evaluations(runs.first().id);
        QVERIFY(!rows.isEmpty());
        for (const EvaluationRecord& e : rows)
            QVERIFY(store.candidate(e.candidateId)->answer.contains(QLatin1String("class ModelNew(nn.Module)")));

        QFile requests(log);
        QVERIFY(requests.open(QIODevice::ReadOnly));
        int evaluates = 0;
        for (const QByteArray& line : requests.readAll().split('\n')) {
            const QJsonObject entry = QJsonDocument::fromJson(line).object();
            const QString type = entry.value(QLatin1String("type")).toString();
            if (type != QLatin1String("evaluate") && type != QLatin1String("compile"))
                continue;
            evaluates += type == QLatin1String("evaluate");
            QVERIFY2(entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("answer_format")), line.constData());
        }
        QCOMPARE(evaluates, rows.size());
    }

    void evalSendsTheFormatOnlyWhenAsked()
    {
        QTemporaryDir tmp;
        const QString file = tmp.filePath(QStringLiteral("answer.py"));
        write(file, generation(QStringLiteral("correct")));
        QStringList sent;
        for (const bool named : {true, false}) {
            const QString log = tmp.filePath(named ? QStringLiteral("named.jsonl") : QStringLiteral("detected.jsonl"));
            QProcess kwb;
            QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
            environment.insert(QStringLiteral("FAKEWORKER_LOG"), log);
        environment.insert(QStringLiteral("KWB_WORKER_ENV"), QStringLiteral("FAKEWORKER_LOG")); // kwb passes it on
            kwb.setProcessEnvironment(environment);
            QStringList arguments{QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"), QStringLiteral("L1/1"),
                                  file, QStringLiteral("--device"), QStringLiteral("cpu"), QStringLiteral("--no-os-sandbox")};
            if (named)
                arguments << QStringLiteral("--answer-format") << QStringLiteral("kernelbench");
            kwb.start(QStringLiteral(KWB_CLI), arguments);
            QVERIFY(kwb.waitForFinished(60000));
            QCOMPARE(kwb.exitCode(), 0);
            QFile requests(log);
            QVERIFY(requests.open(QIODevice::ReadOnly));
            for (const QByteArray& line : requests.readAll().split('\n')) {
                const QJsonObject entry = QJsonDocument::fromJson(line).object();
                if (entry.value(QLatin1String("type")).toString() == QLatin1String("evaluate"))
                    sent << (entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("answer_format"))
                                 ? QStringLiteral("named")
                                 : QStringLiteral("detected"));
            }
        }
        QCOMPARE(sent, (QStringList{QStringLiteral("named"), QStringLiteral("detected")}));

        QProcess bad;
        bad.start(QStringLiteral(KWB_CLI), {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"), QStringLiteral("L1/1"),
                                            file, QStringLiteral("--answer-format"), QStringLiteral("triton")});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 2);
    }

    // Issue 14: the generations' builds run ahead on --compile-workers workers at once (the fake
    // worker's barrier holds each of three until all three have started), none on the GPU's
    // worker, and the run stores how many.
    void importBuildsAheadOnTheCompilePool()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        QVERIFY(QDir().mkpath(dir.path()));
        for (int i = 0; i < 3; ++i)
            write(dir.filePath(QStringLiteral("level_1_problem_1_sample_%1_kernel.py").arg(i)),
                  generation(QStringLiteral("correct")) + QStringLiteral("# sample %1 build_barrier: 3\n").arg(i));
        const QDir extensions(tmp.filePath(QStringLiteral("extensions")));
        QVERIFY(QDir().mkpath(extensions.path()));
        write(extensions.filePath(QStringLiteral("fakeworker-builds")), QString()); // the fake's builds go here
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("KWB_EXTENSION_CACHE"), extensions.path());
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        QProcess kwb;
        kwb.setProcessEnvironment(environment);
        kwb.start(QStringLiteral(KWB_CLI),
                  {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("import"), QStringLiteral("kernelbench"),
                   dir.path(), QStringLiteral("--db"), db, QStringLiteral("--device"), QStringLiteral("cpu"),
                   QStringLiteral("--compile-workers"), QStringLiteral("3"), QStringLiteral("--no-os-sandbox"),
                   QStringLiteral("--json")});
        QVERIFY(kwb.waitForFinished(120000));
        const QByteArray stdoutText = kwb.readAllStandardOutput();
        QVERIFY2(kwb.exitCode() == 0, kwb.readAllStandardError().constData());
        QCOMPARE(QJsonDocument::fromJson(stdoutText).object().value(QLatin1String("evaluated")).toInt(), 3);

        QFile log(extensions.filePath(QStringLiteral("builds.jsonl")));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = log.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 3);
        for (const QByteArray& line : lines) {
            const QJsonObject build = QJsonDocument::fromJson(line).object();
            QCOMPARE(build.value(QLatin1String("by")).toString(), QStringLiteral("compile"));
            QVERIFY2(build.value(QLatin1String("barrier_met")).toBool(), line.constData());
        }
        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(RunConfig::fromJson(runs.first().config).extra.value(QLatin1String("compile_workers")).toInt(), 3);
        QCOMPARE(store.evaluations(runs.first().id).size(), 3);
    }

    void aMissingFolderIsAUsageError()
    {
        QTemporaryDir tmp;
        QProcess kwb;
        kwb.start(QStringLiteral(KWB_CLI), {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("import"),
                                            QStringLiteral("kernelbench"), tmp.filePath(QStringLiteral("missing")),
                                            QStringLiteral("--db"), tmp.filePath(QStringLiteral("r.sqlite"))});
        QVERIFY(kwb.waitForFinished(60000));
        QCOMPARE(kwb.exitCode(), 2);
        QVERIFY(!QFile::exists(tmp.filePath(QStringLiteral("r.sqlite"))));

        // A folder without one importable generation makes no run either.
        QVERIFY(QDir().mkpath(tmp.filePath(QStringLiteral("empty"))));
        write(tmp.filePath(QStringLiteral("empty/level_9_problem_1_sample_0_kernel.py")), generation(QStringLiteral("correct")));
        kwb.start(QStringLiteral(KWB_CLI), {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("import"),
                                            QStringLiteral("kernelbench"), tmp.filePath(QStringLiteral("empty")),
                                            QStringLiteral("--db"), tmp.filePath(QStringLiteral("r.sqlite"))});
        QVERIFY(kwb.waitForFinished(60000));
        QCOMPARE(kwb.exitCode(), 2);
        QVERIFY(kwb.readAllStandardError().contains("level_9_problem_1_sample_0_kernel.py"));
        QVERIFY(!QFile::exists(tmp.filePath(QStringLiteral("r.sqlite"))));
    }
};

QTEST_GUILESS_MAIN(TestCliImport)
#include "tst_cli_import.moc"
