// `kwb import kernelbench DIR --db FILE` with the fake worker (fakeworker.cpp: an evaluate answer's
// "status: NAME" marker picks the recorded response): KernelBench's file naming, the files skipped
// and why, one run whose rows are the generations as samples of turn 1, sent in KernelBench's
// answer format.

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
        QCOMPARE(seen, (QStringList{QStringLiteral("L1/1#0:correct"), QStringLiteral("L1/1#1:incorrect"),
                                    QStringLiteral("L1/1#2:correct"), QStringLiteral("L2/1#0:compile_error")}));
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
