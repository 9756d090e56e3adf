// `kwb import kernelbench DIR --db FILE` with the fake worker (fakeworker.cpp: an evaluate answer's
// "status: NAME" marker picks the recorded response): KernelBench's file naming, the files skipped
// and why, one run whose rows are the generations as samples of turn 1, sent in KernelBench's
// answer format. And `kwb run --answer-format kernelbench` end to end against kwb-fixture-llm in
// its kernelbench mode: the run takes the prompts-kernelbench set, is named and stored with the
// format, and every compile and evaluate request it sends names it.

#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/store/runstore.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
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

struct Kwb
{
    int exitCode = -1;
    QByteArray out, err;
    QJsonObject json() const { return QJsonDocument::fromJson(out).object(); }
};

Kwb runKwb(const QStringList& arguments)
{
    QProcess kwb;
    kwb.start(QStringLiteral(KWB_CLI), QStringList{QStringLiteral("--worker=" KWB_FAKEWORKER)} + arguments);
    Kwb result;
    if (!kwb.waitForFinished(120000))
        return result;
    result.exitCode = kwb.exitCode();
    result.out = kwb.readAllStandardOutput();
    result.err = kwb.readAllStandardError();
    return result;
}

Kwb importFolder(const QString& dir, const QString& db, const QStringList& more = {})
{
    return runKwb(QStringList{QStringLiteral("import"), QStringLiteral("kernelbench"), dir, QStringLiteral("--db"), db,
                              QStringLiteral("--device"), QStringLiteral("cpu"), QStringLiteral("--no-os-sandbox")} +
                  more);
}

// A generation that names its file, so each stored answer says where it came from.
QString namedGeneration(const QString& file, const QString& status = QStringLiteral("correct"))
{
    return generation(status) + QStringLiteral("# file: %1\n").arg(file);
}

void writeAt(const QDir& dir, const QString& relative, const QString& text)
{
    const QString path = dir.filePath(relative);
    QVERIFY(QDir().mkpath(QFileInfo(path).path()));
    write(path, text);
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
        write(dir.filePath(QStringLiteral("level_1_problem_1_sample_0_kernel.py")),
              generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_1_problem_1_sample_1_kernel.py")),
              generation(QStringLiteral("incorrect")));
        write(dir.filePath(QStringLiteral("level_2_problem_1_sample_0_kernel.py")),
              generation(QStringLiteral("compile_error")));
        write(dir.filePath(QStringLiteral("level_1_problem_1_sample_2_kernel.txt")),
              generation(QStringLiteral("correct")));
        // Skipped: the same sample again, a problem outside the 30 tasks, a fourth level, another
        // name, a task the (fake) worker does not list.
        write(dir.filePath(QStringLiteral("level_3_problem_10_sample_0_kernel.py")),
              generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_2_problem_1_sample_0_kernel.txt")),
              generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_1_problem_42_sample_0_kernel.py")),
              generation(QStringLiteral("correct")));
        write(dir.filePath(QStringLiteral("level_4_problem_1_sample_0_kernel.py")),
              generation(QStringLiteral("correct")));
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
        QVERIFY(reasons.value(QStringLiteral("level_2_problem_1_sample_0_kernel.txt"))
                    .contains(QLatin1String("already sample 0 of L2/1")));
        QCOMPARE(reasons.value(QStringLiteral("level_1_problem_42_sample_0_kernel.py")),
                 QStringLiteral("the worker has no task L1/42"));
        QVERIFY(reasons.value(QStringLiteral("level_4_problem_1_sample_0_kernel.py"))
                    .contains(QLatin1String("levels 1-3")));
        QVERIFY(reasons.value(QStringLiteral("notes.md")).contains(QLatin1String("not a generation")));
        const QJsonObject tally = summary.value(QLatin1String("tally")).toObject();
        QCOMPARE(tally.value(QLatin1String("found")).toInt(), 9);
        QCOMPARE(tally.value(QLatin1String("imported")).toInt(), 4);
        QCOMPARE(tally.value(QLatin1String("skipped")).toInt(), 5);

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().regime, QStringLiteral("import"));
        QCOMPARE(runs.first().status, RunStatus::Finished);
        QVERIFY(runs.first().name.contains(QLatin1String("[kernelbench]")));
        const RunConfig& config = runs.first().config;
        QCOMPARE(config.answerFormat, QStringLiteral("kernelbench"));
        QCOMPARE(config.tasks, (QStringList{QStringLiteral("L1/1"), QStringLiteral("L2/1")}));
        QCOMPARE(config.import.value(QLatin1String("skipped")).toArray().size(), 5);
        QCOMPARE(config.compileOnly, false);                                      // --device cpu
        QVERIFY(runs.first().configJson.contains(QLatin1String("compile_only"))); // stored, not left to a default
        // An import keeps only what it has: no model settings, worker limits or sweep.
        for (const char* key : {"model_timeout_s", "worker_limits", "isolation", "sweep", "level_regimes", "routing"})
            QVERIFY2(!runs.first().configJson.contains(QLatin1String(key)), key);
        QCOMPARE(runs.first().configJson.value(QLatin1String("seeds")).toObject().keys(),
                 QStringList{QStringLiteral("evaluation")});

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

    // Issue 33: every naming KernelBench's scripts and its forks use, and per-problem folders:
    // each file is the task and sample its name (and folders) say; a whole response goes to the
    // worker as it is.
    void eachNamingImportsItsTaskAndSample()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        const QString wholeResponse = QStringLiteral("Here is the optimized architecture.\n\n```python\n") +
                                      namedGeneration(QStringLiteral("level_1_problem_1_solution_2_response.txt")) +
                                      QStringLiteral("```\n\nThe kernel fuses nothing; it calls cuBLAS.\n");
        // file -> "task#sample" it must be
        const QList<std::pair<QString, QString>> expected = {
            {QStringLiteral("level_1_problem_1_sample_0_kernel.py"), QStringLiteral("L1/1#0")},      // KernelBench
            {QStringLiteral("level_1_problem_1_solution_1_kernel.py"), QStringLiteral("L1/1#1")},    // Kernel-Coder
            {QStringLiteral("level_1_problem_1_solution_2_response.txt"), QStringLiteral("L1/1#2")}, // a whole response
            {QStringLiteral("level_1_problem_1_sample_3.txt"), QStringLiteral("L1/1#3")},            // plain .txt
            {QStringLiteral("level_1_problem_1_epoch_0_sample_4_kernel.py"), QStringLiteral("L1/1#4")}, // evolrule
            {QStringLiteral("level1/problem1/sample5.py"), QStringLiteral("L1/1#5")}, // per-problem folders
            {QStringLiteral("level_2/problem_1/sample_0_kernel.py"), QStringLiteral("L2/1#0")},
            {QStringLiteral("level_2_problem_1/solution_1.py"), QStringLiteral("L2/1#1")},
            {QStringLiteral("level_2_problem_1_sample_2_kernel.py"), QStringLiteral("L2/1#2")},
        };
        for (const auto& [file, unit] : expected)
            writeAt(dir, file, file.endsWith(QLatin1String("_response.txt")) ? wholeResponse : namedGeneration(file));
        // Skipped: the response beside an imported module, a prompt.
        writeAt(dir, QStringLiteral("level_2_problem_1_sample_2_response.txt"),
                QStringLiteral("```python\n") +
                    namedGeneration(QStringLiteral("level_2_problem_1_sample_2_response.txt")) +
                    QStringLiteral("```\n"));
        writeAt(dir, QStringLiteral("level_2_problem_1_sample_2_prompt.txt"),
                QStringLiteral("You write custom CUDA kernels\n"));

        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const Kwb kwb = importFolder(dir.path(), db, {QStringLiteral("--json")});
        QVERIFY2(kwb.exitCode == 0, kwb.err.constData());
        const QJsonObject summary = kwb.json();
        QCOMPARE(summary.value(QLatin1String("evaluated")).toInt(), int(expected.size()));
        QCOMPARE(summary.value(QLatin1String("runs")).toArray().size(), 1); // per-problem folders are not runs
        QHash<QString, QString> kinds;
        for (const QJsonValue& s : summary.value(QLatin1String("skipped")).toArray())
            kinds.insert(s.toObject().value(QLatin1String("file")).toString(),
                         s.toObject().value(QLatin1String("kind")).toString());
        QCOMPARE(kinds.size(), 2);
        QCOMPARE(kinds.value(QStringLiteral("level_2_problem_1_sample_2_response.txt")),
                 QStringLiteral("response_of_imported_kernel"));
        QCOMPARE(kinds.value(QStringLiteral("level_2_problem_1_sample_2_prompt.txt")), QStringLiteral("prompt"));
        const QJsonObject tally = summary.value(QLatin1String("tally")).toObject();
        QCOMPARE(tally.value(QLatin1String("found")).toInt(), int(expected.size()) + 2);
        QCOMPARE(tally.value(QLatin1String("imported")).toInt(), int(expected.size()));
        QCOMPARE(tally.value(QLatin1String("skipped_by_reason")).toObject().value(QLatin1String("prompt")).toInt(), 1);

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QHash<QString, QString> unitOf; // file -> "task#sample" as stored
        for (const EvaluationRecord& e : store.evaluations(runs.first().id)) {
            QCOMPARE(e.turn, 1);
            const QString answer = store.candidate(e.candidateId)->answer;
            const qsizetype at = answer.indexOf(QLatin1String("# file: "));
            QVERIFY(at >= 0);
            const QString file = answer.mid(at + 8).section(QLatin1Char('\n'), 0, 0);
            unitOf.insert(file, QStringLiteral("%1#%2").arg(e.task).arg(e.sample));
            if (file.endsWith(QLatin1String("_response.txt")))
                QCOMPARE(answer, wholeResponse); // as it is: the worker takes the module out
            else
                QCOMPARE(answer, namedGeneration(file));
        }
        QCOMPARE(unitOf.size(), int(expected.size()));
        for (const auto& [file, unit] : expected)
            QCOMPARE(unitOf.value(file), unit);
    }

    // runs/<run name>/… : each run folder is a run of its own (a model and a method each), named
    // after it; the same sample in two folders is no duplicate.
    void nestedRunFoldersAreRunsOfTheirOwn()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("runs")));
        writeAt(dir, QStringLiteral("base_Qwen2.5-Coder-7B-Instruct_level1/level_1_problem_1_solution_0_kernel.py"),
                namedGeneration(QStringLiteral("a"), QStringLiteral("incorrect")));
        writeAt(dir,
                QStringLiteral("best_of_n_Qwen2.5-Coder-7B-Instruct_level1/level_1_problem_1_solution_0_kernel.py"),
                namedGeneration(QStringLiteral("b")));
        writeAt(dir,
                QStringLiteral("best_of_n_Qwen2.5-Coder-7B-Instruct_level1/level_1_problem_1_solution_1_kernel.py"),
                namedGeneration(QStringLiteral("c")));
        writeAt(dir, QStringLiteral("deeper/test_hf_level_2/level2/problem1/sample0.py"),
                namedGeneration(QStringLiteral("d")));
        writeAt(dir, QStringLiteral("README.md"), QStringLiteral("notes\n"));

        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const Kwb kwb = importFolder(dir.path(), db, {QStringLiteral("--json")});
        QVERIFY2(kwb.exitCode == 0, kwb.err.constData());
        const QJsonObject summary = kwb.json();
        QCOMPARE(summary.value(QLatin1String("evaluated")).toInt(), 4);
        const QJsonArray runsOut = summary.value(QLatin1String("runs")).toArray();
        QCOMPARE(runsOut.size(), 3);
        QHash<QString, qint64> runOf;
        for (const QJsonValue& r : runsOut)
            runOf.insert(r.toObject().value(QLatin1String("folder")).toString(),
                         r.toObject().value(QLatin1String("run")).toInteger());
        QVERIFY(runOf.contains(QStringLiteral("base_Qwen2.5-Coder-7B-Instruct_level1")));
        QVERIFY(runOf.contains(QStringLiteral("best_of_n_Qwen2.5-Coder-7B-Instruct_level1")));
        QVERIFY(runOf.contains(QStringLiteral("deeper/test_hf_level_2")));
        QCOMPARE(summary.value(QLatin1String("skipped")).toArray().size(), 1); // README.md

        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.runs().size(), 3);
        const std::optional<RunInfo> bestOfN =
            store.run(runOf.value(QStringLiteral("best_of_n_Qwen2.5-Coder-7B-Instruct_level1")));
        QVERIFY(bestOfN);
        QVERIFY(bestOfN->name.contains(QLatin1String("best_of_n_Qwen2.5-Coder-7B-Instruct_level1")));
        const RunConfig config = bestOfN->config;
        QCOMPARE(config.import.value(QLatin1String("run_folder")).toString(),
                 QStringLiteral("best_of_n_Qwen2.5-Coder-7B-Instruct_level1"));
        QCOMPARE(config.regime.fields.n, 2);
        QStringList units;
        for (const EvaluationRecord& e : store.evaluations(bestOfN->id))
            units << QStringLiteral("%1#%2").arg(e.task).arg(e.sample);
        units.sort();
        QCOMPARE(units, (QStringList{QStringLiteral("L1/1#0"), QStringLiteral("L1/1#1")}));
        const QList<EvaluationRecord> base =
            store.evaluations(runOf.value(QStringLiteral("base_Qwen2.5-Coder-7B-Instruct_level1")));
        QCOMPARE(base.size(), 1);
        QCOMPARE(base.first().status, QStringLiteral("incorrect"));
        const QList<EvaluationRecord> level2 = store.evaluations(runOf.value(QStringLiteral("deeper/test_hf_level_2")));
        QCOMPARE(level2.size(), 1);
        QCOMPARE(level2.first().task, QStringLiteral("L2/1"));
    }

    // A problem of levels 1-3 the worker does not list is listed with its reason, on stderr, in the
    // JSON and in the tally; never dropped silently. (The fake worker lists L1/1 and L2/1; the real
    // one all 250 of KernelBench's tasks, so there any problem of levels 1-3 is imported.)
    void problemsTheWorkerLacksAreListedAsSkipped()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        writeAt(dir, QStringLiteral("level_1_problem_1_sample_0_kernel.py"), namedGeneration(QStringLiteral("a")));
        writeAt(dir, QStringLiteral("level_1_problem_57_sample_0_kernel.py"), namedGeneration(QStringLiteral("b")));
        writeAt(dir, QStringLiteral("level_3_problem_43_solution_2_response.txt"),
                namedGeneration(QStringLiteral("c")));
        writeAt(dir, QStringLiteral("level2/problem100/sample0.py"), namedGeneration(QStringLiteral("d")));
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));

        // Text: each skipped file on stderr with its reason, the tally on stdout.
        const Kwb text = importFolder(dir.path(), db);
        QVERIFY2(text.exitCode == 0, text.err.constData());
        QVERIFY2(text.err.contains("skipped level_1_problem_57_sample_0_kernel.py: the worker has no task L1/57"),
                 text.err.constData());
        QVERIFY(text.err.contains("skipped level_3_problem_43_solution_2_response.txt: the worker has no task L3/43"));
        QVERIFY(text.err.contains("skipped level2/problem100/sample0.py: the worker has no task L2/100"));
        QVERIFY2(text.out.contains("4 files found: 1 imported, 3 skipped (3 worker_has_no_task)"),
                 text.out.constData());

        const Kwb json = importFolder(dir.path(), db, {QStringLiteral("--json")});
        QVERIFY2(json.exitCode == 0, json.err.constData());
        const QJsonObject summary = json.json();
        QHash<QString, QString> reasons;
        for (const QJsonValue& s : summary.value(QLatin1String("skipped")).toArray()) {
            QCOMPARE(s.toObject().value(QLatin1String("kind")).toString(), QStringLiteral("worker_has_no_task"));
            reasons.insert(s.toObject().value(QLatin1String("file")).toString(),
                           s.toObject().value(QLatin1String("reason")).toString());
        }
        QCOMPARE(reasons.size(), 3);
        QCOMPARE(reasons.value(QStringLiteral("level_1_problem_57_sample_0_kernel.py")),
                 QStringLiteral("the worker has no task L1/57"));
        QCOMPARE(reasons.value(QStringLiteral("level_3_problem_43_solution_2_response.txt")),
                 QStringLiteral("the worker has no task L3/43"));
        const QJsonObject tally = summary.value(QLatin1String("tally")).toObject();
        QCOMPARE(tally.value(QLatin1String("found")).toInt(), 4);
        QCOMPARE(tally.value(QLatin1String("imported")).toInt(), 1);
        QCOMPARE(tally.value(QLatin1String("skipped_by_reason")).toObject(),
                 (QJsonObject{{QStringLiteral("worker_has_no_task"), 3}}));
        // The run keeps the list too.
        RunStore store;
        QVERIFY(store.open(db));
        const RunConfig config = store.run(summary.value(QLatin1String("run")).toInteger())->config;
        QCOMPARE(config.import.value(QLatin1String("skipped")).toArray().size(), 3);
    }

    // A generation for a KernelBench-only task is imported and evaluated as any other: the worker
    // runs KernelBench's Model as its reference (the fake lists every recorded task under
    // $FAKEWORKER_LIST_ALL, L3/35 among them).
    void kernelBenchOnlyTasksAreImported()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        writeAt(dir, QStringLiteral("level_1_problem_1_sample_0_kernel.py"), namedGeneration(QStringLiteral("a")));
        writeAt(dir, QStringLiteral("level_3_problem_35_sample_0_kernel.py"), namedGeneration(QStringLiteral("b")));
        qputenv("FAKEWORKER_LIST_ALL", "1");
        qputenv("KWB_WORKER_ENV", "FAKEWORKER_LIST_ALL"); // passed to the worker (workerEnvironment)
        const Kwb json =
            importFolder(dir.path(), tmp.filePath(QStringLiteral("runs.sqlite")), {QStringLiteral("--json")});
        qunsetenv("FAKEWORKER_LIST_ALL");
        qunsetenv("KWB_WORKER_ENV");
        QVERIFY2(json.exitCode == 0, json.err.constData());
        QCOMPARE(json.json().value(QLatin1String("skipped")).toArray().size(), 0);
        QCOMPARE(json.json().value(QLatin1String("tally")).toObject().value(QLatin1String("imported")).toInt(), 2);
    }

    // The folder's recorded verdicts (KernelBench's eval_results.json, Kernel-Coder's list) are
    // stored beside ours with their hardware, and `kwb report --json` shows both. The fixture is
    // tests/fixtures/real-generations (real layout, synthetic contents: its README).
    void recordedVerdictsAreStoredAndReported()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString fixture = QStringLiteral(KWB_CANDIDATES_DIR "/../real-generations");
        QVERIFY(QFileInfo::exists(fixture + QStringLiteral("/README.md")));
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const Kwb kwb = importFolder(fixture, db, {QStringLiteral("--json")});
        QVERIFY2(kwb.exitCode == 0, kwb.err.constData());
        const QJsonObject summary = kwb.json();
        QCOMPARE(summary.value(QLatin1String("evaluated")).toInt(), 3);
        const QJsonObject tally = summary.value(QLatin1String("tally")).toObject();
        QCOMPARE(tally.value(QLatin1String("found")).toInt(), 9); // README.md too
        QCOMPARE(tally.value(QLatin1String("imported")).toInt(), 3);
        QCOMPARE(tally.value(QLatin1String("verdict_files")).toInt(), 2);
        QCOMPARE(tally.value(QLatin1String("verdicts")).toInt(), 4);
        QCOMPARE(tally.value(QLatin1String("verdicts_matched")).toInt(), 3);
        QCOMPARE(tally.value(QLatin1String("skipped_by_reason")).toObject(),
                 (QJsonObject{{QStringLiteral("worker_has_no_task"), 1},
                              {QStringLiteral("not_a_generation"), 1},
                              {QStringLiteral("prompt"), 1},
                              {QStringLiteral("response_of_imported_kernel"), 1}}));
        QHash<QString, qint64> runOf;
        for (const QJsonValue& r : summary.value(QLatin1String("runs")).toArray())
            runOf.insert(r.toObject().value(QLatin1String("folder")).toString(),
                         r.toObject().value(QLatin1String("run")).toInteger());
        const qint64 level1 =
            runOf.value(QStringLiteral("runs/test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1"));
        const qint64 level2 = runOf.value(QStringLiteral("runs/test_hf_level_2"));
        QVERIFY(level1 > 0 && level2 > 0);

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RecordedVerdictRecord> stored = store.recordedVerdicts(level1);
        QCOMPARE(stored.size(), 2);
        for (const RecordedVerdictRecord& v : stored) {
            QCOMPARE(v.task, QStringLiteral("L1/1"));
            QCOMPARE(v.hardware, QStringLiteral("NVIDIA RTX A6000"));
            QCOMPARE(
                v.source,
                QStringLiteral("runs/test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1/eval_results.json"));
            QCOMPARE(v.verdict.value(QLatin1String("correct")).toBool(), v.sample == 0);
            QCOMPARE(
                v.verdict.value(QLatin1String("recorded")).toObject().value(QLatin1String("solution_id")).toString(),
                QStringLiteral("level_1_problem_1_solution_%1").arg(v.sample));
        }
        QCOMPARE(store.recordedVerdicts(level2).size(), 1);
        QCOMPARE(store.recordedVerdicts(level2).first().hardware, QStringLiteral("NVIDIA H100 80GB HBM3"));

        // kwb report --format json: theirs beside ours, per run and per sample.
        const Kwb report = runKwb(
            {QStringLiteral("report"), QStringLiteral("--db"), db, QStringLiteral("--format"), QStringLiteral("json")});
        QVERIFY2(report.exitCode == 0, report.err.constData());
        QJsonObject recorded1, recorded2;
        for (const QJsonValue& r : report.json().value(QLatin1String("runs")).toArray()) {
            const qint64 id = r.toObject().value(QLatin1String("id")).toInteger();
            (id == level1 ? recorded1 : recorded2) = r.toObject().value(QLatin1String("recorded_verdicts")).toObject();
        }
        QCOMPARE(recorded1.value(QLatin1String("by")).toString(), QStringLiteral("third party"));
        QCOMPARE(recorded1.value(QLatin1String("hardware")).toArray(),
                 (QJsonArray{QStringLiteral("NVIDIA RTX A6000")}));
        QCOMPARE(recorded1.value(QLatin1String("samples")).toInt(), 2);
        QCOMPARE(recorded1.value(QLatin1String("theirs")).toObject(),
                 (QJsonObject{{QStringLiteral("compiled"), 2}, {QStringLiteral("correct"), 1}}));
        // The fake worker finds both correct (no status marker in the fixture's files).
        QCOMPARE(recorded1.value(QLatin1String("ours")).toObject(),
                 (QJsonObject{{QStringLiteral("compiled"), 2}, {QStringLiteral("correct"), 2}}));
        QCOMPARE(recorded1.value(QLatin1String("both_correct")).toInt(), 1);
        QCOMPARE(recorded1.value(QLatin1String("only_ours_correct")).toInt(), 1);
        const QJsonArray perSample = recorded1.value(QLatin1String("per_sample")).toArray();
        QCOMPARE(perSample.size(), 2);
        const QJsonObject first = perSample.at(0).toObject();
        QCOMPARE(first.value(QLatin1String("task")).toString(), QStringLiteral("L1/1"));
        QCOMPARE(first.value(QLatin1String("sample")).toInt(), 0);
        QCOMPARE(first.value(QLatin1String("ours")).toObject().value(QLatin1String("status")).toString(),
                 QStringLiteral("correct"));
        const QJsonObject theirs = first.value(QLatin1String("theirs")).toObject();
        QCOMPARE(theirs.value(QLatin1String("correct")).toBool(), true);
        QCOMPARE(theirs.value(QLatin1String("runtime_ms")).toDouble(), 41.2);
        QCOMPARE(theirs.value(QLatin1String("hardware")).toString(), QStringLiteral("NVIDIA RTX A6000"));
        QCOMPARE(theirs.value(QLatin1String("device")).toString(), QStringLiteral("cuda:0"));
        QCOMPARE(perSample.at(1)
                     .toObject()
                     .value(QLatin1String("theirs"))
                     .toObject()
                     .value(QLatin1String("error"))
                     .toString(),
                 QStringLiteral("Output mismatch"));
        QCOMPARE(recorded2.value(QLatin1String("hardware")).toArray(),
                 (QJsonArray{QStringLiteral("NVIDIA H100 80GB HBM3")}));
        QCOMPARE(recorded2.value(QLatin1String("theirs")).toObject().value(QLatin1String("correct")).toInt(), 1);

        // The Markdown report has them side by side as well.
        const Kwb markdown = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
        QVERIFY(markdown.out.contains("## Recorded verdicts"));
        QVERIFY(markdown.out.contains("NVIDIA RTX A6000"));
    }

    void aRunInKernelBenchFormat()
    {
        QTemporaryDir tmp;
        QProcess server;
        server.start(QStringLiteral(KWB_FIXTURE_LLM),
                     {QStringLiteral("--candidates"), QStringLiteral(KWB_CANDIDATES_DIR),
                      QStringLiteral("--answer-format"), QStringLiteral("kernelbench"), QStringLiteral("--delay-ms"),
                      QStringLiteral("0")});
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
        const QByteArray errText = kwb.readAllStandardError();
        QVERIFY2(kwb.exitCode() == 0, errText.constData());
        // Two evaluations at once per GPU unless told, for this format (defaultEvaluationsPerGpu).
        QVERIFY2(errText.contains("2 evaluations at once per GPU"), errText.constData());

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().name, QStringLiteral("iterative [kernelbench] L1:1,L2:1"));
        const RunConfig& config = runs.first().config;
        QCOMPARE(config.answerFormat, QStringLiteral("kernelbench"));
        QVERIFY(config.promptsDir.endsWith(QLatin1String("/prompts-kernelbench")));
        QCOMPARE(config.evaluationsPerGpu, std::optional<int>(2));
        // The study preset's instruction and one-shot example (prompts-kernelbench/, docs/prompts.md).
        QVERIFY(config.templates.value(QStringLiteral("partials/contract"))
                    .contains(QLatin1String("Name your optimized architecture ModelNew")));
        QVERIFY(config.templates.value(QStringLiteral("partials/example"))
                    .contains(QLatin1String("class ModelNew(nn.Module)")));
        const QList<EvaluationRecord> rows = store.evaluations(runs.first().id);
        QVERIFY(!rows.isEmpty());
        for (const EvaluationRecord& e : rows)
            QVERIFY2(store.candidate(e.candidateId)->answer.contains(QLatin1String("class ModelNew(nn.Module)")),
                     qPrintable(store.candidate(e.candidateId)->answer.left(600)));

        QFile requests(log);
        QVERIFY(requests.open(QIODevice::ReadOnly));
        int evaluates = 0;
        for (const QByteArray& line : requests.readAll().split('\n')) {
            const QJsonObject entry = QJsonDocument::fromJson(line).object();
            const QString type = entry.value(QLatin1String("type")).toString();
            if (type != QLatin1String("evaluate") && type != QLatin1String("compile"))
                continue;
            evaluates += type == QLatin1String("evaluate");
            QVERIFY2(entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("answer_format")),
                     line.constData());
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
            QStringList arguments{QStringLiteral("--worker=" KWB_FAKEWORKER),
                                  QStringLiteral("eval"),
                                  QStringLiteral("L1/1"),
                                  file,
                                  QStringLiteral("--device"),
                                  QStringLiteral("cpu"),
                                  QStringLiteral("--no-os-sandbox")};
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
        bad.start(QStringLiteral(KWB_CLI),
                  {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"), QStringLiteral("L1/1"), file,
                   QStringLiteral("--answer-format"), QStringLiteral("triton")});
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
        QCOMPARE(runs.first().config.compileWorkers, std::optional<int>(3));
        QCOMPARE(runs.first().config.evaluationsPerGpu, std::optional<int>(2)); // KernelBench's default
        QCOMPARE(store.evaluations(runs.first().id).size(), 3);
    }

    // Issue 33: --code-block names the convention the folder's source extracted its modules by;
    // every request carries it, the run's configuration and name keep it; first is the default,
    // and another value is a usage error that makes no run.
    void theCodeBlockConventionIsSentAndStored()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        const QString response = QStringLiteral("A stub first:\n\n```python\n") +
                                 namedGeneration(QStringLiteral("stub")) +
                                 QStringLiteral("```\n\nThe module:\n\n```python\n") +
                                 namedGeneration(QStringLiteral("module")) + QStringLiteral("```\n");
        writeAt(dir, QStringLiteral("level_1_problem_1_solution_0_response.txt"), response);
        writeAt(dir, QStringLiteral("level_1_problem_1_solution_1_kernel.py"),
                namedGeneration(QStringLiteral("kernel")));

        for (const QString& rule : {QStringLiteral("last"), QStringLiteral("first"), QString()}) {
            const QString db =
                tmp.filePath(QStringLiteral("runs-%1.sqlite").arg(rule.isEmpty() ? QStringLiteral("default") : rule));
            const Kwb kwb = importFolder(
                dir.path(), db,
                rule.isEmpty() ? QStringList{QStringLiteral("--json")}
                               : QStringList{QStringLiteral("--code-block"), rule, QStringLiteral("--json")});
            QVERIFY2(kwb.exitCode == 0, kwb.err.constData());
            const QString expected = rule.isEmpty() ? QStringLiteral("first") : rule;
            RunStore store;
            QVERIFY(store.open(db));
            const QList<RunInfo> runs = store.runs();
            QCOMPARE(runs.size(), 1);
            const RunConfig& config = runs.first().config;
            QCOMPARE(config.import.value(QLatin1String("code_block")).toString(), expected);
            QCOMPARE(runs.first().name.contains(QLatin1String("last block")), expected == QLatin1String("last"));
            const QList<EvaluationRecord> rows = store.evaluations(runs.first().id);
            QCOMPARE(rows.size(), 2);
            for (const EvaluationRecord& e : rows) {
                const QJsonObject echo = e.result.value(QLatin1String("echo")).toObject();
                QVERIFY2(!echo.isEmpty(), qPrintable(QJsonDocument(e.result).toJson()));
                QCOMPARE(echo.value(QLatin1String("code_block")).toString(), expected);
                // The whole response goes as it is: the worker, not kwb, picks the block.
                if (e.sample == 0)
                    QCOMPARE(echo.value(QLatin1String("answer")).toString(), response);
            }
        }

        const QString db = tmp.filePath(QStringLiteral("bad.sqlite"));
        const Kwb bad = importFolder(dir.path(), db, {QStringLiteral("--code-block"), QStringLiteral("last_complete")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY(!QFile::exists(db));
    }

    // A call cut short (here: one verdict deleted) and a file added later: --resume judges exactly
    // those into the same run and keeps the rest; without --resume the folder is a new run.
    void resumeKeepsVerdictsAndJudgesTheRest()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.filePath(QStringLiteral("gens")));
        writeAt(dir, QStringLiteral("level_1_problem_1_sample_0_kernel.py"), namedGeneration(QStringLiteral("s0")));
        writeAt(dir, QStringLiteral("level_1_problem_1_sample_1_kernel.py"),
                namedGeneration(QStringLiteral("s1"), QStringLiteral("incorrect")));
        writeAt(dir, QStringLiteral("level_2_problem_1_sample_0_kernel.py"),
                namedGeneration(QStringLiteral("p2"), QStringLiteral("compile_error")));
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const Kwb first = importFolder(dir.path(), db, {QStringLiteral("--json")});
        QVERIFY2(first.exitCode == 0, first.err.constData());
        QCOMPARE(first.json().value(QLatin1String("evaluated")).toInt(), 3);
        const qint64 runId = first.json().value(QLatin1String("run")).toInteger();

        // The evaluation of sample 1 of L1/1 is lost, as when a call is killed before it is stored.
        {
            QSqlDatabase sql = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("cut"));
            sql.setDatabaseName(db);
            QVERIFY(sql.open());
            QSqlQuery query(sql);
            QVERIFY(
                query.exec(QStringLiteral("DELETE FROM evaluations WHERE candidate_id IN (SELECT c.id FROM candidates c"
                                          " WHERE c.task = 'L1/1' AND c.sample = 1)")));
            QCOMPARE(query.numRowsAffected(), 1);
            sql.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("cut"));
        writeAt(dir, QStringLiteral("level_2_problem_1_sample_1_kernel.py"), namedGeneration(QStringLiteral("p2s1")));

        const Kwb resumed = importFolder(dir.path(), db, {QStringLiteral("--resume"), QStringLiteral("--json")});
        QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
        const QJsonObject summary = resumed.json();
        QCOMPARE(summary.value(QLatin1String("run")).toInteger(), runId);
        QCOMPARE(summary.value(QLatin1String("evaluated")).toInt(), 2);
        QCOMPARE(summary.value(QLatin1String("kept")).toInt(), 2);
        QCOMPARE(summary.value(QLatin1String("statuses")).toObject().value(QLatin1String("incorrect")).toInt(), 1);
        QCOMPARE(summary.value(QLatin1String("statuses")).toObject().value(QLatin1String("correct")).toInt(), 1);
        QVERIFY(
            summary.value(QLatin1String("runs")).toArray().at(0).toObject().value(QLatin1String("resumed")).toBool());
        QVERIFY(resumed.err.contains("level_1_problem_1_sample_1_kernel.py"));
        QVERIFY(!resumed.err.contains("level_1_problem_1_sample_0_kernel.py -> "));

        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.runs().size(), 1);
        QCOMPARE(store.completedUnits(runId).size(), 4);
        // The cut generation's answer is stored once: its new candidate belongs to the stored answer.
        QCOMPARE(store.answeredUnits(runId).size(), 4);
        QCOMPARE(store.responses(runId).size(), 4);
        QCOMPARE(store.evaluations(runId).size(), 4);
        store.close();

        // Nothing left: a second resume judges nothing; a plain import is a new run.
        const Kwb again = importFolder(dir.path(), db, {QStringLiteral("--resume"), QStringLiteral("--json")});
        QCOMPARE(again.json().value(QLatin1String("evaluated")).toInt(), 0);
        QCOMPARE(again.json().value(QLatin1String("kept")).toInt(), 4);
        const Kwb fresh = importFolder(dir.path(), db, {QStringLiteral("--json")});
        QCOMPARE(fresh.json().value(QLatin1String("evaluated")).toInt(), 4);
        QVERIFY(fresh.json().value(QLatin1String("run")).toInteger() != runId);
        // Other settings are another import: --resume with another scale starts a run of its own.
        const Kwb smoke = importFolder(
            dir.path(), db,
            {QStringLiteral("--resume"), QStringLiteral("--scale"), QStringLiteral("smoke"), QStringLiteral("--json")});
        QCOMPARE(smoke.json().value(QLatin1String("evaluated")).toInt(), 4);
        QCOMPARE(smoke.json().value(QLatin1String("kept")).toInt(), 0);
        QVERIFY(!smoke.json()
                     .value(QLatin1String("runs"))
                     .toArray()
                     .at(0)
                     .toObject()
                     .value(QLatin1String("resumed"))
                     .toBool());
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
        write(tmp.filePath(QStringLiteral("empty/level_9_problem_1_sample_0_kernel.py")),
              generation(QStringLiteral("correct")));
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
