#pragma once
// What `kwb import kernelbench DIR` finds in a folder of KernelBench generations: which file is
// which sample of which task, which run folder it belongs to, what is skipped and why, and the
// verdicts a third party recorded for them (eval_results.json). No worker and no store here: the
// CLI (src/cli/importcommand.cpp) evaluates what this finds and stores it.
//
// The layouts, as the public code writes them (docs/cli.md, `kwb import kernelbench`):
//  - KernelBench (github.com/ScalingIntelligence/KernelBench, scripts/generate_samples.py):
//    runs/<run name>/level_{L}_problem_{P}_sample_{S}_kernel.py (the module extracted from the
//    response), beside level_{L}_problem_{P}_sample_{S}_prompt.txt; scripts/eval_from_generations.py
//    writes runs/<run name>/eval_results.json as {"<P>": [{"sample_id": S, "compiled", "correctness",
//    "metadata": {"hardware", "device", …}, "runtime", "runtime_stats"}]} (older versions: one
//    object per problem instead of a list); the level is the run's (generation_config.yaml `level`).
//  - Kernel-Coder (github.com/j1mk1m/Kernel-Coder, runs/ at 2b16b23):
//    runs/test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1/level_1_problem_13_solution_0_kernel.py
//    with level_1_problem_13_solution_0_response.txt (the whole model response) and, in some runs,
//    _prompt.txt; runs/evolrule_parallel_8_batch_level1/level_1_problem_1_epoch_0_sample_1_kernel.py;
//    eval_results.json is a list of {"evaluation_id": "level_1_problem_13_solution_0", "task_id",
//    "solution_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}.
//  - Per-problem folders (issue 33): level1/problem3/sample0.py, level_1/problem_3/sample_0_kernel.py.
//  - A fork that generates once per problem (github.com/technoabsurdist/KernelBench, its Claude Opus 4
//    runs): runs/opus4_level2_20250903_065424/problem_10_kernel.py, the level in the run folder's name
//    only, one sample per problem (sample 0); its verdicts in detailed_results.json as
//    {"run_info": {"level": 2}, "results": [{"problem_id": 10, "eval_result": {"compiled", …}}]}.
//
// A path is read from its file name first, then from its folders, innermost first: each part
// (level N, problem N, sample N or solution N, epoch N) comes from the innermost place that has
// it; a level none of them names comes from the run folder's name (a word `level` with its number),
// else from the run's config; a file that names its problem and no sample is sample 0. Folders made
// only of such parts (level1, problem_3, level_1_problem_3) belong to the file;
// the innermost folder with anything else in its name is the file's run folder (DIR itself when
// there is none), and each run folder becomes a run of its own.

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <functional>

namespace kwb {

/// What a file's path says.
struct GenerationPath
{
    enum class Role {
        Kernel,   ///< a module: `_kernel.py`, any other `.py`, `_kernel.txt`
        Response, ///< a whole model response: `_response.txt` (or .py), any other `.txt`
        Prompt,   ///< `_prompt.txt`: the prompt, not a generation
        Other,    ///< anything else (not .py/.txt, or another suffix such as `_rules.txt`)
    };
    Role role = Role::Other;
    int level = -1, problem = -1, sample = -1, epoch = -1; ///< -1: the path does not say
    QString runFolder;                                     ///< relative to DIR, "" for DIR itself
};

/// Reads a path relative to DIR ("runs/x/level_1_problem_3_sample_0_kernel.py").
GenerationPath parseGenerationPath(const QString& relativePath);

/// The run folder of a folder (relative to DIR): itself without its trailing level/problem/sample
/// folders.
QString runFolderOf(const QString& relativeFolder);

/// Why a file is not imported; the kind is what the tally counts.
namespace SkipKind {
inline const QString NotAGeneration = QStringLiteral("not_a_generation");    ///< another name or extension
inline const QString Prompt = QStringLiteral("prompt");                      ///< `_prompt.txt`
inline const QString Unnamed = QStringLiteral("no_level_problem_sample");    ///< a .py/.txt whose path lacks one
inline const QString Level = QStringLiteral("not_levels_1_3");               ///< level 0 or above 3, problem 0
inline const QString WorkerHasNoTask = QStringLiteral("worker_has_no_task"); ///< a task the worker does not list
inline const QString ResponseOfKernel = QStringLiteral("response_of_imported_kernel"); ///< its _kernel.py is imported
inline const QString EmptyModule = QStringLiteral("empty_module");   ///< an empty _kernel.py whose response is imported
inline const QString Duplicate = QStringLiteral("duplicate");        ///< another file is the same sample
inline const QString Unreadable = QStringLiteral("unreadable");      ///< could not be read
inline const QString Verdicts = QStringLiteral("verdicts_not_read"); ///< an eval_results.json not understood
} // namespace SkipKind

struct SkippedFile
{
    QString file;   ///< relative to DIR
    QString kind;   ///< a SkipKind
    QString reason; ///< for people: "no task L1/57 here (…)"
};

struct FoundGeneration
{
    QString file;      ///< relative to DIR
    QString runFolder; ///< relative to DIR, "" for DIR itself
    QString task;      ///< "L1/3"
    int level = 0, problem = 0, sample = 0;
    int epoch = -1;             ///< Kernel-Coder's evolrule runs name one; -1 otherwise
    bool wholeResponse = false; ///< a whole model response (the worker extracts the module)
};

/// A verdict a third party recorded for one sample (one entry of an eval_results.json), in one
/// shape whatever file it came from: {"source", "compiled", "correct", "runtime_ms",
/// "ref_runtime_ms", "speedup", "hardware", "device", "error", "correctness_trials", "recorded"}
/// ("recorded": the entry as the file has it; a field the entry lacks is null).
struct RecordedVerdict
{
    QString runFolder;
    QString task;
    int sample = 0;
    QString source;   ///< the file it came from, relative to DIR
    QString hardware; ///< the GPU it was measured on (metadata.hardware), empty: not recorded
    QJsonObject verdict;
};

/// A file of recorded verdicts that was read.
struct VerdictFile
{
    QString file; ///< relative to DIR
    QString runFolder;
    int entries = 0;      ///< verdicts in it
    int unplaced = 0;     ///< entries that name no level, problem or sample (left out)
    int matched = 0;      ///< of them, for an imported generation (filled by the caller)
    QStringList hardware; ///< the GPUs its entries name, most frequent first
};

struct GenerationScan
{
    int filesFound = 0;                 ///< every file under DIR (hidden ones aside)
    QList<FoundGeneration> generations; ///< by run folder, level, problem, sample
    QList<SkippedFile> skipped;         ///< in path order
    QList<VerdictFile> verdictFiles;
    QList<RecordedVerdict> verdicts;

    /// The run folders with a generation, in order.
    QStringList runFolders() const;
    /// Skipped files per kind.
    QMap<QString, int> skippedByKind() const;
};

/// Looks through DIR (recursively; hidden files and folders aside). `hasTask("L1/3")` says whether
/// this workbench has the task (the worker's list: all 250 of KernelBench's levels 1-3); a task it
/// lacks is skipped. A KernelBench-only task is imported as any other: its generations are in
/// KernelBench's format, which the worker evaluates against KernelBench's Model (docs/task-format.md).
GenerationScan scanKernelBenchFolder(const QString& directory, const std::function<bool(const QString&)>& hasTask);

/// The verdicts of an eval_results.json's text (any of the shapes above). `defaultLevel` is the
/// level of entries that do not say one (KernelBench's files key by problem only), -1 when not
/// known; entries without a level are then left out. False with `error` set for a text that is
/// none of the shapes.
bool parseRecordedVerdicts(const QByteArray& text, int defaultLevel, const QString& source,
                           QList<RecordedVerdict>* verdicts, int* unplaced, QString* error);

/// One entry of an eval_results.json in the shape RecordedVerdict::verdict has.
QJsonObject normalizeRecordedVerdict(const QJsonObject& entry, const QString& source);

} // namespace kwb
