#pragma once
// What the window's charts draw, taken from a run store and the task catalog: plain functions, so
// they are tested without widgets and can run on a thread with a store of its own.

#include "app/charts/bestofnchart.h"
#include "app/charts/rooflinechart.h"
#include "core/store/runstore.h"
#include "core/study/report.h"
#include "core/tasks/kernelbound.h"
#include "core/tasks/taskcatalog.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>

#include <optional>

namespace kwb::app {

/// One task's measured times in a store: the eager reference and its best correct candidate.
struct TaskTimes
{
    double eagerMs = 0;                    ///< the reference's mean time, from the latest evaluation that timed it
    std::optional<double> bestCandidateMs; ///< the fastest correct candidate's mean time
    bool bestCandidateCustom = false;      ///< that candidate launched kernels of its own (it may fuse)
    qint64 bestEvaluation = 0;             ///< its evaluation id
    QString bestLabel;                     ///< "#4 agent, turn 1, sample 2"
    QString bestSpeedup;                   ///< its own evaluation's speed-up with its interval (formatSpeedup)
    IntensityBasis bestBasis = IntensityBasis::EagerUnfused; ///< its traffic model (candidateBasis())
    /// Its HBM bytes where a profile of it measured them (EvaluationResult::measuredDramBytes()).
    std::optional<double> bestDramBytes;
    /// Its fraction of the roofline bound (core rooflineBoundFraction()); none without a stored floor.
    std::optional<double> bestBoundFraction;
    /// The best candidate's evaluation, without its texts (PTX, SASS, logs, the raw response but
    /// its `roofline`): what places its kernels one by one (core kernelPlacement()).
    std::optional<EvaluationResult> best;
    QString gpuName; ///< the GPU the eager time was measured on
    /// The fastest candidate with status correct that does not count (below the roofline floor),
    /// kept only when faster than the best counted one.
    std::optional<double> notCountedMs;
    QString notCountedWhy; ///< notCountedReason(), with its label
};

/// Per task, from every run of the store whose GPU is `gpuName` (empty: any GPU).
QHash<QString, TaskTimes> taskTimesFromStore(const RunStore& store, const QString& gpuName = QString());

/// The GPU a run of the store was made with (the latest run that names one), decoded by the store
/// (RunInfo::gpu); empty (raw empty) when none does. Lets the window place tasks on the GPU a
/// database was measured on, also on a machine without one.
DeviceFacts latestRunDevice(const RunStore& store);

/// Roofline points: every analysed task with an eager time, at its eager (unfused) intensity; its
/// best counted candidate at the intensity of the traffic model its kernels imply
/// (core candidateBasis(): library op + fused epilogue, one kernel, or eager), marked with it, and
/// its measured intensity (FLOPs / measured HBM bytes) where a traffic profile of it exists, which
/// the chart places it by on the GPU it was measured on (RooflinePoint::candidatePlacement()); a
/// faster candidate that does not count (below the roofline floor) with the reason.
QList<RooflinePoint> rooflinePoints(const QList<TaskInfo>& tasks, const QHash<QString, TaskTimes>& times);

/// The Best-of-n page's curves, overall and per level (issue 36 item 6): first the study's
/// best-of-n of each sweep in the report (its SweepCurve, the numbers `kwb sweep` and `kwb report`
/// print: each n's run of the whole regime, its correct %), then first-turn pass@n, labelled as
/// such, of each run that has several first-turn samples per task (of a sweep, only its run with
/// the most, which holds the others' n).
QList<BestOfNSeries> bestOfNSeries(const Report& report);

/// One evaluated candidate of a task, for the diff view's pickers.
struct CandidateEntry
{
    qint64 runId = 0;
    QString runLabel;        ///< core/run/runname.h's runLabel: "#7 agent −best_of_n"
    TaskCandidate candidate; ///< the picker's columns, not the evaluation (RunStore::evaluation reads it)
    /// The task's one best across the store's runs (core/study/taskbest.h's bestCandidateOfTask),
    /// the candidate Results, the Roofline and the Monitor name too.
    bool best = false;
    QString label() const; ///< "#7 agent −best_of_n · turn 1 · sample 2 · correct 1.22×"
};

/// Every evaluated candidate of `task` in the store, by run, then turn, then sample
/// (RunStore::candidatesOfTask, labelled by run), the task's best marked.
QList<CandidateEntry> candidatesOfTask(const RunStore& store, const QString& task);

/// The shipped example studies the welcome page opens.
enum class ExampleStudy {
    /// Every regime and ablation over 30 tasks on an H200, answered by the fixture server (10 runs).
    FixtureServer,
    /// Five regimes over 30 tasks in KernelBench's format, answered with Qwen3-Coder-480B's recorded
    /// answers (real model text, packaging/examples/recorded-qwen3-coder-480b); H100 and H200.
    RecordedAnswers,
};

/// An example study, xz-packed: share/kernel-workbench/examples/<name>.db.xz next to the program,
/// else the source tree's copy. Empty when neither exists.
QString exampleStudyArchive(ExampleStudy which = ExampleStudy::FixtureServer);
/// Where an example study is unpacked on first open: userDataDir()/examples/<name>.db.
QString exampleStudyDatabase(ExampleStudy which = ExampleStudy::FixtureServer);

} // namespace kwb::app
