// core/run/generationimport.h: what `kwb import kernelbench` reads in a folder. Each naming
// KernelBench and its forks write (with the paths they write them at), the run folder of a file,
// the shapes of eval_results.json, and the scan's choices (which file is a sample, which is
// skipped and why). No worker: tst_cli_import runs the import end to end.

#include "core/run/generationimport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

namespace {

void writeAt(const QDir& dir, const QString& relative, const QByteArray& text)
{
    const QString path = dir.filePath(relative);
    QVERIFY(QDir().mkpath(QFileInfo(path).path()));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

bool studyTask(const QString& task)
{
    // The study's 30: levels 1-3, problems 1-10.
    const QStringList parts = task.mid(1).split(QLatin1Char('/'));
    return parts.value(0).toInt() >= 1 && parts.value(0).toInt() <= 3 && parts.value(1).toInt() >= 1 &&
           parts.value(1).toInt() <= 10;
}

} // namespace

class TestGenerationImport : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void paths_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("role");
        QTest::addColumn<int>("level");
        QTest::addColumn<int>("problem");
        QTest::addColumn<int>("sample");
        QTest::addColumn<int>("epoch");
        QTest::addColumn<QString>("runFolder");
        const int kernel = int(GenerationPath::Role::Kernel), response = int(GenerationPath::Role::Response),
                  prompt = int(GenerationPath::Role::Prompt), other = int(GenerationPath::Role::Other);
        // KernelBench scripts/generate_samples.py
        QTest::newRow("kernelbench") << "runs/test_hf_level_1/level_1_problem_3_sample_0_kernel.py" << kernel << 1 << 3
                                     << 0 << -1 << "runs/test_hf_level_1";
        QTest::newRow("kernelbench prompt") << "runs/test_hf_level_1/level_1_problem_3_sample_0_prompt.txt" << prompt
                                            << 1 << 3 << 0 << -1 << "runs/test_hf_level_1";
        // Kernel-Coder runs/ (2b16b23)
        QTest::newRow("kernel-coder kernel")
            << "test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1/level_1_problem_100_solution_7_kernel.py"
            << kernel << 1 << 100 << 7 << -1 << "test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1";
        QTest::newRow("kernel-coder response")
            << "test_time_scaling_base_Qwen2.5-Coder-7B-Instruct_level2/level_2_problem_10_solution_0_response.txt"
            << response << 2 << 10 << 0 << -1 << "test_time_scaling_base_Qwen2.5-Coder-7B-Instruct_level2";
        QTest::newRow("kernel-coder evolrule")
            << "evolrule_parallel_8_batch_level1/level_1_problem_1_epoch_0_sample_1_kernel.py" << kernel << 1 << 1 << 1
            << 0 << "evolrule_parallel_8_batch_level1";
        QTest::newRow("kernel-coder rules")
            << "evolrule_parallel_8_batch_level2/epoch_0_batch_0/level_2_problem_1_rules.txt" << other << -1 << -1 << -1
            << -1 << "evolrule_parallel_8_batch_level2/epoch_0_batch_0";
        // Per-problem folders
        QTest::newRow("level1/problem3/sample0.py")
            << "level1/problem3/sample0.py" << kernel << 1 << 3 << 0 << -1 << "";
        QTest::newRow("level_1/problem_3/sample_0_kernel.py")
            << "runs/x/level_1/problem_3/sample_0_kernel.py" << kernel << 1 << 3 << 0 << -1 << "runs/x";
        QTest::newRow("level_1_problem_3/solution_2.txt")
            << "level_1_problem_3/solution_2.txt" << response << 1 << 3 << 2 << -1 << "";
        QTest::newRow("sample folder") << "Level2/Problem7/Sample4/kernel.py" << kernel << 2 << 7 << 4 << -1 << "";
        // The file's name wins over its folders.
        QTest::newRow("name first") << "level2/level_1_problem_3_sample_0_kernel.py" << kernel << 1 << 3 << 0 << -1
                                    << "";
        QTest::newRow("plain txt") << "level_3_problem_2_sample_1.txt" << response << 3 << 2 << 1 << -1 << "";
        QTest::newRow("kernel txt") << "level_3_problem_2_sample_1_kernel.txt" << kernel << 3 << 2 << 1 << -1 << "";
        QTest::newRow("not a generation") << "runs/x/config.yaml" << other << -1 << -1 << -1 << -1 << "runs/x";
        QTest::newRow("another python file") << "runs/x/analysis.py" << other << -1 << -1 << -1 << -1 << "runs/x";
    }

    void paths()
    {
        QFETCH(QString, path);
        QFETCH(int, role);
        QFETCH(int, level);
        QFETCH(int, problem);
        QFETCH(int, sample);
        QFETCH(int, epoch);
        QFETCH(QString, runFolder);
        const GenerationPath parsed = parseGenerationPath(path);
        QCOMPARE(int(parsed.role), role);
        if (parsed.role != GenerationPath::Role::Other) {
            QCOMPARE(parsed.level, level);
            QCOMPARE(parsed.problem, problem);
            QCOMPARE(parsed.sample, sample);
            QCOMPARE(parsed.epoch, epoch);
        }
        QCOMPARE(parsed.runFolder, runFolder);
    }

    void runFolders()
    {
        QCOMPARE(runFolderOf(QStringLiteral("runs/test_hf_level_1")), QStringLiteral("runs/test_hf_level_1"));
        QCOMPARE(runFolderOf(QStringLiteral("runs/x/level1/problem3")), QStringLiteral("runs/x"));
        QCOMPARE(runFolderOf(QStringLiteral("level_1_problem_3")), QString());
        QCOMPARE(runFolderOf(QString()), QString());
    }

    // Kernel-Coder's eval_results.json: a list, each entry naming itself.
    void verdictsKernelCoderList()
    {
        const QByteArray text = R"J([
          {"evaluation_id": "level_1_problem_13_solution_0", "task_id": "level_1_problem_13",
           "solution_id": "level_1_problem_13_solution_0", "compiled": true, "correctness": true,
           "metadata": {"hardware": "NVIDIA RTX A6000", "device": "cuda:0", "correctness_trials": "(5 / 5)"},
           "runtime": 62.6, "runtime_stats": {"mean": 62.6, "hardware": "NVIDIA RTX A6000", "device": "cuda:0"}},
          {"evaluation_id": "level_1_problem_1_solution_0", "task_id": "level_1_problem_1",
           "solution_id": "level_1_problem_1_solution_0", "compiled": false, "correctness": false,
           "metadata": {"other_error": "timeout"}, "runtime": -1.0, "runtime_stats": {}},
          {"evaluation_id": "level_2_problem_4_epoch_0_sample_3", "task_id": "level_2_problem_4",
           "compiled": true, "correctness": false,
           "metadata": {"compilation_error": {"stage": "nvcc", "log": "error"}}, "runtime": -1.0}
        ])J";
        QList<RecordedVerdict> verdicts;
        int unplaced = -1;
        QString error;
        QVERIFY2(parseRecordedVerdicts(text, -1, QStringLiteral("r/eval_results.json"), &verdicts, &unplaced, &error),
                 qPrintable(error));
        QCOMPARE(unplaced, 0);
        QCOMPARE(verdicts.size(), 3);
        QCOMPARE(verdicts.at(0).task, QStringLiteral("L1/13"));
        QCOMPARE(verdicts.at(0).sample, 0);
        QCOMPARE(verdicts.at(0).hardware, QStringLiteral("NVIDIA RTX A6000"));
        const QJsonObject v = verdicts.at(0).verdict;
        QCOMPARE(v.value(QLatin1String("compiled")).toBool(), true);
        QCOMPARE(v.value(QLatin1String("correct")).toBool(), true);
        QCOMPARE(v.value(QLatin1String("runtime_ms")).toDouble(), 62.6);
        QVERIFY(v.value(QLatin1String("ref_runtime_ms")).isNull());
        QVERIFY(v.value(QLatin1String("speedup")).isNull());
        QCOMPARE(v.value(QLatin1String("device")).toString(), QStringLiteral("cuda:0"));
        QCOMPARE(v.value(QLatin1String("correctness_trials")).toString(), QStringLiteral("(5 / 5)"));
        QCOMPARE(v.value(QLatin1String("source")).toString(), QStringLiteral("r/eval_results.json"));
        QCOMPARE(v.value(QLatin1String("recorded")).toObject().value(QLatin1String("task_id")).toString(),
                 QStringLiteral("level_1_problem_13"));
        // A failure without hardware: none recorded; its error kept.
        QCOMPARE(verdicts.at(1).task, QStringLiteral("L1/1"));
        QVERIFY(verdicts.at(1).hardware.isEmpty());
        QVERIFY(verdicts.at(1).verdict.value(QLatin1String("runtime_ms")).isNull());
        QCOMPARE(verdicts.at(1).verdict.value(QLatin1String("error")).toString(), QStringLiteral("timeout"));
        // evolrule's ids; an error that is an object is kept as its JSON text.
        QCOMPARE(verdicts.at(2).task, QStringLiteral("L2/4"));
        QCOMPARE(verdicts.at(2).sample, 3);
        QVERIFY(verdicts.at(2).verdict.value(QLatin1String("error")).toString().contains(QLatin1String("nvcc")));
    }

    // KernelBench's: keyed by problem only (the level is the run's), a list of samples; its older
    // files one object per problem; a problem -> sample -> entry map; ref_runtime gives a speed-up.
    void verdictsKernelBenchShapes()
    {
        const QByteArray current = R"J({
          "1": [{"sample_id": 0, "compiled": true, "correctness": true,
                 "metadata": {"hardware": "NVIDIA H100 80GB HBM3", "device": "cuda:0"},
                 "runtime": 2.0, "runtime_stats": {"mean": 2.0}, "ref_runtime": 3.0},
                {"sample_id": 1, "compiled": false, "correctness": false,
                 "metadata": {"compilation_error": "nvcc failed"}, "runtime": -1.0, "runtime_stats": {}}],
          "12": [{"sample_id": 0, "compiled": true, "correctness": true, "metadata": {}, "runtime": 1.0,
                  "speedup": 1.7}]
        })J";
        QList<RecordedVerdict> verdicts;
        int unplaced = -1;
        QString error;
        QVERIFY2(parseRecordedVerdicts(current, 2, QStringLiteral("e.json"), &verdicts, &unplaced, &error),
                 qPrintable(error));
        QCOMPARE(verdicts.size(), 3);
        QCOMPARE(verdicts.at(0).task, QStringLiteral("L2/1"));
        QCOMPARE(verdicts.at(0).sample, 0);
        QCOMPARE(verdicts.at(0).verdict.value(QLatin1String("ref_runtime_ms")).toDouble(), 3.0);
        QCOMPARE(verdicts.at(0).verdict.value(QLatin1String("speedup")).toDouble(), 1.5);
        QCOMPARE(verdicts.at(1).sample, 1);
        QCOMPARE(verdicts.at(1).verdict.value(QLatin1String("compiled")).toBool(), false);
        QCOMPARE(verdicts.at(1).verdict.value(QLatin1String("error")).toString(), QStringLiteral("nvcc failed"));
        QCOMPARE(verdicts.at(2).task, QStringLiteral("L2/12"));
        QCOMPARE(verdicts.at(2).verdict.value(QLatin1String("speedup")).toDouble(), 1.7); // as recorded

        // Without a level, KernelBench's entries cannot be placed.
        verdicts.clear();
        QVERIFY(!parseRecordedVerdicts(current, -1, QStringLiteral("e.json"), &verdicts, &unplaced, &error));
        QCOMPARE(unplaced, 3);
        QVERIFY(error.contains(QLatin1String("level")));

        const QByteArray older = R"J({"3": {"sample_id": 0, "compiled": true, "correctness": false, "metadata": {},
                                           "runtime": -1.0, "runtime_stats": {}}})J";
        verdicts.clear();
        QVERIFY(parseRecordedVerdicts(older, 1, QStringLiteral("e.json"), &verdicts, &unplaced, &error));
        QCOMPARE(verdicts.size(), 1);
        QCOMPARE(verdicts.at(0).task, QStringLiteral("L1/3"));
        QCOMPARE(verdicts.at(0).sample, 0);

        const QByteArray nested = R"J({"5": {"0": {"compiled": true, "correctness": true},
                                            "2": {"compiled": true, "correctness": false}}})J";
        verdicts.clear();
        QVERIFY(parseRecordedVerdicts(nested, 3, QStringLiteral("e.json"), &verdicts, &unplaced, &error));
        QCOMPARE(verdicts.size(), 2);
        QCOMPARE(verdicts.at(1).task, QStringLiteral("L3/5"));
        QCOMPARE(verdicts.at(1).sample, 2);

        verdicts.clear();
        QVERIFY(!parseRecordedVerdicts("not json", 1, QStringLiteral("e.json"), &verdicts, &unplaced, &error));
        QVERIFY(!parseRecordedVerdicts("{}", 1, QStringLiteral("e.json"), &verdicts, &unplaced, &error));
    }

    void scanChoosesAndSkips()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.path());
        const QString run = QStringLiteral("runs/best_of_n_level1/");
        writeAt(dir, run + QStringLiteral("level_1_problem_2_solution_0_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_2_solution_0_response.txt"),
                "```python\nclass ModelNew: pass\n```\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_2_solution_1_response.txt"),
                "```python\nclass ModelNew: pass\n```\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_2_solution_1_prompt.txt"), "prompt\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_2_solution_2.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_2_solution_2_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_88_solution_0_kernel.py"), "class ModelNew: pass\n");
        // Kernel-Coder writes the module file even when nothing was extracted: its response goes.
        writeAt(dir, run + QStringLiteral("level_1_problem_3_solution_0_kernel.py"), "\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_3_solution_0_response.txt"),
                "Please note that the matrices\n");
        writeAt(dir, run + QStringLiteral("level_1_problem_3_solution_1_kernel.py"), ""); // alone: imported as it is
        writeAt(dir, run + QStringLiteral("level_4_problem_1_solution_0_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("solution_0_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("metrics.json"), "{}\n");
        writeAt(dir, run + QStringLiteral(".cache/level_1_problem_2_solution_5_kernel.py"), "hidden\n");
        // KernelBench's verdicts name problems only: the level is the run's (its files', else its
        // config.yaml's).
        writeAt(dir, run + QStringLiteral("eval_results.json"),
                R"J({"2": [{"sample_id": 0, "compiled": true, "correctness": true, "metadata": {"hardware": "A"}},
                          {"sample_id": 1, "compiled": false, "correctness": false, "metadata": {"hardware": "B"}},
                          {"sample_id": 9, "compiled": false, "correctness": false, "metadata": {"hardware": "A"}}]})J");
        writeAt(dir, QStringLiteral("runs/only_verdicts/config.yaml"), "hardware: H100\nlevel: 3\nmethod: base\n");
        writeAt(dir, QStringLiteral("runs/only_verdicts/eval_results.json"),
                R"J({"1": [{"sample_id": 0, "compiled": true, "correctness": true, "metadata": {}}]})J");
        writeAt(dir, QStringLiteral("runs/broken/eval_results.json"), "[1, 2");

        const GenerationScan scan = scanKernelBenchFolder(dir.path(), studyTask);
        QCOMPARE(scan.filesFound, 17); // the hidden one aside
        QStringList found;
        for (const FoundGeneration& g : scan.generations)
            found << QStringLiteral("%1 %2#%3%4")
                         .arg(g.file, g.task)
                         .arg(g.sample)
                         .arg(g.wholeResponse ? QStringLiteral(" response") : QString());
        QCOMPARE(found, (QStringList{run + QStringLiteral("level_1_problem_2_solution_0_kernel.py L1/2#0"),
                                     run + QStringLiteral("level_1_problem_2_solution_1_response.txt L1/2#1 response"),
                                     run + QStringLiteral("level_1_problem_2_solution_2.py L1/2#2"),
                                     run + QStringLiteral("level_1_problem_3_solution_0_response.txt L1/3#0 response"),
                                     run + QStringLiteral("level_1_problem_3_solution_1_kernel.py L1/3#1")}));
        QCOMPARE(scan.runFolders(), (QStringList{QStringLiteral("runs/best_of_n_level1")}));
        QHash<QString, SkippedFile> skipped;
        for (const SkippedFile& s : scan.skipped)
            skipped.insert(s.file.section(QLatin1Char('/'), -1), s);
        QCOMPARE(skipped.size(), 10);
        QCOMPARE(skipped.value(QStringLiteral("level_1_problem_3_solution_0_kernel.py")).kind, SkipKind::EmptyModule);
        QCOMPARE(skipped.value(QStringLiteral("level_1_problem_2_solution_0_response.txt")).kind,
                 SkipKind::ResponseOfKernel);
        QCOMPARE(skipped.value(QStringLiteral("level_1_problem_2_solution_1_prompt.txt")).kind, SkipKind::Prompt);
        QCOMPARE(skipped.value(QStringLiteral("level_1_problem_2_solution_2_kernel.py")).kind, SkipKind::Duplicate);
        QVERIFY(skipped.value(QStringLiteral("level_1_problem_2_solution_2_kernel.py"))
                    .reason.contains(QLatin1String("level_1_problem_2_solution_2.py) is already sample 2 of L1/2")));
        QCOMPARE(skipped.value(QStringLiteral("level_1_problem_88_solution_0_kernel.py")).reason,
                 QStringLiteral("the worker has no task L1/88"));
        QCOMPARE(skipped.value(QStringLiteral("level_1_problem_88_solution_0_kernel.py")).kind,
                 SkipKind::WorkerHasNoTask);
        QCOMPARE(skipped.value(QStringLiteral("level_4_problem_1_solution_0_kernel.py")).kind, SkipKind::Level);
        QCOMPARE(skipped.value(QStringLiteral("solution_0_kernel.py")).kind, SkipKind::Unnamed);
        // The level is the run folder's (best_of_n_level1); the problem is nowhere.
        QCOMPARE(skipped.value(QStringLiteral("solution_0_kernel.py")).reason,
                 QStringLiteral("no problem number in its name or folders"));
        QCOMPARE(skipped.value(QStringLiteral("metrics.json")).kind, SkipKind::NotAGeneration);
        QCOMPARE(skipped.value(QStringLiteral("config.yaml")).kind, SkipKind::NotAGeneration);
        QCOMPARE(skipped.value(QStringLiteral("eval_results.json")).kind, SkipKind::Verdicts); // the broken one
        QCOMPARE(scan.skippedByKind().value(SkipKind::NotAGeneration), 2);

        QCOMPARE(scan.verdictFiles.size(), 2);
        const VerdictFile& first = scan.verdictFiles.at(0);
        QCOMPARE(first.file, run + QStringLiteral("eval_results.json"));
        QCOMPARE(first.runFolder, QStringLiteral("runs/best_of_n_level1"));
        QCOMPARE(first.entries, 3);
        QCOMPARE(first.hardware, (QStringList{QStringLiteral("A"), QStringLiteral("B")})); // most frequent first
        QCOMPARE(scan.verdicts.size(), 4);
        QCOMPARE(scan.verdicts.at(0).task, QStringLiteral("L1/2"));
        QCOMPARE(scan.verdicts.at(0).runFolder, QStringLiteral("runs/best_of_n_level1"));
        QCOMPARE(scan.verdicts.at(3).task, QStringLiteral("L3/1")); // config.yaml's level
        QCOMPARE(scan.verdicts.at(3).runFolder, QStringLiteral("runs/only_verdicts"));
    }

    // A fork's layout (github.com/technoabsurdist/KernelBench's Claude Opus 4 runs, session 24):
    // runs/opus4_level2_20250903_065424/problem_10_kernel.py, one sample per problem, the level in
    // the run folder's name, the verdicts in detailed_results.json one level down.
    void forkLayoutLevelFromRunFolderOneSamplePerProblem()
    {
        QCOMPARE(parseGenerationPath(QStringLiteral("runs/opus4_level2_20250903_065424/problem_10_kernel.py")).level,
                 2);
        QCOMPARE(parseGenerationPath(QStringLiteral("runs/qwencoder_level1_run/x/problem_3.py")).level, 1);
        QCOMPARE(parseGenerationPath(QStringLiteral("runs/level1_vs_level2/problem_3.py")).level, -1); // two levels
        QCOMPARE(parseGenerationPath(QStringLiteral("runs/sublevel1/problem_3.py")).level, -1);        // not a word
        QCOMPARE(parseGenerationPath(QStringLiteral("runs/Opus-Level-3/problem_3.py")).level, 3);
        // The file's own level wins over its run folder's.
        QCOMPARE(parseGenerationPath(QStringLiteral("runs/x_level2/level_1_problem_3_sample_0_kernel.py")).level, 1);

        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.path());
        const QString run = QStringLiteral("runs/opus4_level2_20250903_065424/");
        writeAt(dir, run + QStringLiteral("problem_1_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("problem_4_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("problem_4_sample_1_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, run + QStringLiteral("checkpoint.json"), R"J({"results": []})J");
        writeAt(dir, run + QStringLiteral("detailed_results.json"),
                R"J({"run_info": {"level": 2, "model": "claude-opus-4-1-20250805"},
                     "results": [{"problem_id": 1, "success": true,
                                  "eval_result": {"compiled": true, "correctness": true, "runtime": 6.82,
                                                  "metadata": {"hardware": "NVIDIA A100-SXM4-40GB"}}},
                                 {"problem_id": 4, "eval_result": {"compiled": false, "correctness": false}},
                                 {"problem_id": 4, "eval_result": {"compiled": true, "correctness": false}}]})J");
        // No level in the names: the run's config says it.
        writeAt(dir, QStringLiteral("runs/gen/generation_config.yaml"), "level: 3\nmodel_name: m\n");
        writeAt(dir, QStringLiteral("runs/gen/problem_5_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, QStringLiteral("runs/nowhere/problem_6_kernel.py"), "class ModelNew: pass\n");

        const GenerationScan scan = scanKernelBenchFolder(dir.path(), studyTask);
        QStringList found;
        for (const FoundGeneration& g : scan.generations)
            found << QStringLiteral("%1 %2#%3").arg(g.file, g.task).arg(g.sample);
        QCOMPARE(found, (QStringList{QStringLiteral("runs/gen/problem_5_kernel.py L3/5#0"),
                                     run + QStringLiteral("problem_1_kernel.py L2/1#0"),
                                     run + QStringLiteral("problem_4_kernel.py L2/4#0"),
                                     run + QStringLiteral("problem_4_sample_1_kernel.py L2/4#1")}));
        QHash<QString, SkippedFile> skipped;
        for (const SkippedFile& s : scan.skipped)
            skipped.insert(s.file.section(QLatin1Char('/'), -1), s);
        QCOMPARE(skipped.value(QStringLiteral("problem_6_kernel.py")).kind, SkipKind::Unnamed);
        QCOMPARE(skipped.value(QStringLiteral("problem_6_kernel.py")).reason,
                 QStringLiteral("no level number in its name or folders"));
        QCOMPARE(skipped.value(QStringLiteral("checkpoint.json")).kind, SkipKind::NotAGeneration);
        // Problem 4's two entries name no sample: which is which cannot be told, so neither is placed.
        QCOMPARE(scan.verdictFiles.size(), 1);
        QCOMPARE(scan.verdictFiles.at(0).entries, 1);
        QCOMPARE(scan.verdictFiles.at(0).unplaced, 2);
        QCOMPARE(scan.verdictFiles.at(0).hardware, QStringList{QStringLiteral("NVIDIA A100-SXM4-40GB")});
        QCOMPARE(scan.verdicts.size(), 1);
        QCOMPARE(scan.verdicts.at(0).task, QStringLiteral("L2/1"));
        QCOMPARE(scan.verdicts.at(0).sample, 0);
        QCOMPARE(scan.verdicts.at(0).verdict.value(QLatin1String("correct")).toBool(), true);
        QCOMPARE(scan.verdicts.at(0).verdict.value(QLatin1String("runtime_ms")).toDouble(), 6.82);
        QCOMPARE(
            scan.verdicts.at(0).verdict.value(QLatin1String("recorded")).toObject().value(QLatin1String("success")),
            QJsonValue(true));
    }

    // Any task the worker lists is imported, problem 57 as problem 1 (issue 37 item 6); a task
    // with no reference the worker runs is skipped with its reason, never evaluated into errors.
    void anyTaskTheWorkerListsIsImported()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QDir dir(tmp.path());
        writeAt(dir, QStringLiteral("level_1_problem_57_sample_0_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, QStringLiteral("level_3_problem_50_sample_0_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, QStringLiteral("level_3_problem_35_sample_0_kernel.py"), "class ModelNew: pass\n");
        writeAt(dir, QStringLiteral("level_3_problem_51_sample_0_kernel.py"), "class ModelNew: pass\n");
        const auto kernelBench = [](const QString& task) {
            static const QRegularExpression id(QStringLiteral("^L([123])/([0-9]+)$"));
            const auto m = id.match(task);
            return m.hasMatch() && m.captured(2).toInt() >= 1 &&
                   m.captured(2).toInt() <= (m.captured(1) == QLatin1String("3") ? 50 : 100);
        };
        // L3/35 (KernelBench only) is imported as any task: its reference is KernelBench's Model.
        const GenerationScan scan = scanKernelBenchFolder(dir.path(), kernelBench);
        QStringList found;
        for (const FoundGeneration& g : scan.generations)
            found << g.task;
        found.sort();
        QCOMPARE(found, (QStringList{QStringLiteral("L1/57"), QStringLiteral("L3/35"), QStringLiteral("L3/50")}));
        QCOMPARE(scan.skipped.size(), 1);
        QCOMPARE(scan.skipped.first().file, QStringLiteral("level_3_problem_51_sample_0_kernel.py"));
        QCOMPARE(scan.skipped.first().kind, SkipKind::WorkerHasNoTask);
    }
};

QTEST_GUILESS_MAIN(TestGenerationImport)
#include "tst_generationimport.moc"
