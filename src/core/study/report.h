#pragma once
// `kwb report`: the study's Tables I–II for runs of a RunStore, with the statistics that say how
// far to trust them (runstats.h); reportformat.h renders them as Markdown, CSV or JSON.
//
// Per run: each task's selected outcome (selectOutcome: the candidate the run's own selection
// keeps, by the rule the run controller applies, selection.h), then correct %, fast_1 % and
// compiled % with 95 % exact binomial intervals, solved per level, the geometric-mean
// speedup of correct kernels, and token and model-time totals. Between each pair of runs: the
// paired comparison on the tasks both have. Per sweep (`kwb sweep`: one run of the whole regime
// per n): the best-of-n curve, correct % and compiled % per n. Per ablated run: the comparison
// with its baseline (ablationBaselineKey). With main regime runs of two or more regimes: the
// routing estimate (the study's rule, RoutingReport).
//
// A run's tasks are every task it was asked to do: the tasks its configuration names (`kwb run`
// stores them), those with a stored prompt and those with an evaluation. Every one counts in every
// denominator: a task without an evaluation that says something about a candidate (its model
// request failed, its evaluations were all machine failures, or it was never reached) counts as a
// failure, neither correct nor compiled, and is listed with the reason (RunReport::unevaluated).

#include "core/store/runstore.h"
#include "core/study/runstats.h"

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QString>

#include <optional>

namespace kwb {

/// The level of a task id ("L2/1" -> 2); 0 when the id has no level.
int taskLevel(const QString& task);

/// One evaluation as a TaskOutcome: compiled from the status, or from the response's
/// compile.ok where the status says nothing (timeout, crashed); a missing speedup is NaN.
/// A machine fault (isMachineFault: no_device outside a compile-only run, start_failed,
/// worker_lost, protocol_error) never counts as compiled.
TaskOutcome outcomeOf(const EvaluationRecord& evaluation, bool compileOnly = false);
/// Whether the run was made compile-only (`compile_only` in its configuration): evaluated with
/// "device" "none", so correctness was not measured.
bool isCompileOnlyRun(const RunInfo& run);

/// The outcome that counts for a task in a run: the candidate selectJudgedIndex (selection.h)
/// keeps, the rule the run controller applied: machine faults only where nothing else was judged,
/// then the monotone key (correct, then compiled, then speedup), best per turn (ties: the lower
/// sample), and across turns a later turn only when strictly better (ties: the earlier turn), so
/// a broken later attempt never hides a working earlier one.
/// With lastTurnWins (a regime whose selection is "last", like pilot v1), the best of the last
/// turn, as that regime itself would have chosen.
/// Empty list: nullopt. `chosenIndex` (if given) receives the index of the chosen evaluation.
std::optional<TaskOutcome> selectOutcome(const QList<EvaluationRecord>& evaluations, int* chosenIndex = nullptr,
                                         bool lastTurnWins = false, bool compileOnly = false);

/// Why a task or a unit has no evaluation (UnevaluatedTask::kind, UnfinishedUnit::kind).
namespace UnevaluatedKind {
inline const QString ModelRequestFailed = QStringLiteral("model_request_failed"); ///< the model request failed
inline const QString MachineFailure = QStringLiteral("machine_failure"); ///< evaluated only into machine failures
inline const QString NotEvaluated =
    QStringLiteral("not_evaluated");                             ///< answered, the run stopped before the evaluation
inline const QString NotStarted = QStringLiteral("not_started"); ///< named by the run, never asked for
} // namespace UnevaluatedKind

/// A task of a run that has no evaluation of a candidate; it counts as a failure.
struct UnevaluatedTask
{
    QString task;
    int level = 0;
    QString kind; ///< an UnevaluatedKind
    QString
        reason; ///< "model request failed: http_error: HTTP 500 …", "not evaluated: machine failure (worker_lost: …)"
};

/// A unit of a run without a usable result: its latest model request failed, or every
/// evaluation of its answer ended in a machine failure (wireName(EvaluationStatus::isMachineFailure)).
/// `kwb run --resume` asks or evaluates such units again.
struct UnfinishedUnit
{
    UnitKey unit;
    QString kind; ///< UnevaluatedKind::ModelRequestFailed or MachineFailure
    QString reason;
};

/// The unfinished units of a run, in the order of their first response.
QList<UnfinishedUnit> unfinishedUnits(const QList<UnitResponse>& responses, const QList<EvaluationRecord>& evaluations);
QList<UnfinishedUnit> unfinishedUnits(const RunStore& store, qint64 runId);

/// Every task of a run with the outcome that counts for it (selectOutcome, or a failure for a
/// task without an evaluation), sorted by task id: what buildReport and the window's run list count.
struct RunOutcomes
{
    QList<TaskOutcome> outcomes;
    QMap<QString, qint64> chosenEvaluation; ///< task -> id of the evaluation selected for it
    QList<UnevaluatedTask> unevaluated;
};
RunOutcomes runOutcomes(const RunStore& store, const RunInfo& run);
/// The same with the run's evaluations already read.
RunOutcomes runOutcomes(const RunStore& store, const RunInfo& run, const QList<EvaluationRecord>& evaluations);

struct ReportOptions
{
    BootstrapOptions bootstrap;
};

/// "First-turn pass@n (unbiased estimator)" of one run: from the first turn's samples of each
/// task, the chance that at least one of n of them is correct (runstats.h passAtN), averaged over
/// every task of the run (a task with fewer than n samples counts its missing ones as failures;
/// BestOfNPoint::shortTasks). It is not the study's best-of-n (SweepCurve): it ignores later
/// turns and selection.
struct FirstTurnPassAtN
{
    int samples = 0; ///< the most first-turn samples any task has
    QList<BestOfNPoint> overall;
    QMap<int, QList<BestOfNPoint>> perLevel; ///< level -> curve over that level's tasks
    /// First-turn samples with status correct that do not count (below the roofline floor), and
    /// why, one line each ("L1/1 sample 3: measured … below the roofline floor …").
    int notCounted = 0;
    QStringList notCountedWhy;
};

/// KernelBench's fast_p thresholds.
inline const QList<double> kFastPThresholds = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0};

/// fast_p of a run's outcomes at one threshold: plain (TaskOutcome::fastP) and clear
/// (TaskOutcome::clearlyFastP, the speed-up's interval above p), over all tasks.
struct FastP
{
    double p = 0;
    int tasks = 0;
    int fast = 0;
    int clear = 0;
    /// Fast tasks whose speed-up has no interval: "clearly" cannot be decided for them, so the
    /// clear share is not measured where this is not 0.
    int undecided = 0;
    /// The run kept no speed-up interval for any correct timed task: "clear" was not measured at
    /// any p, so it is "n/a" (not 0 %) even where nothing is fast.
    bool noIntervals = false;
    double fastPct() const { return tasks ? 100.0 * fast / tasks : 0.0; }
    double clearPct() const { return tasks ? 100.0 * clear / tasks : 0.0; }
    /// "12.5 % / 10.0 %" (plain / clear), the clear share "n/a" where undecided.
    QString plainAndClearText() const; // written in reportformat.cpp, with the other cells
};
/// One FastP per kFastPThresholds entry.
QList<FastP> fastPOf(const QList<TaskOutcome>& outcomes);

/// One n of a sweep: the run of the whole regime with n candidates per turn.
struct SweepPoint
{
    int n = 0;
    qint64 run = 0;
    Metrics overall; ///< correct %, compiled % … over every task of the run
    QMap<int, Metrics> perLevel;
};

/// The study's best-of-n curve: the runs of one `kwb sweep` (the same `extra.sweep.id`), ordered
/// by n, each counted as any run is (selection, every task in the denominator).
struct SweepCurve
{
    QString id;
    QString regime;
    QList<SweepPoint> points;
};

/// One sample of an imported run whose verdict a third party recorded (`kwb import kernelbench`:
/// KernelBench's eval_results.json), beside our evaluation of the same file.
struct RecordedComparison
{
    RecordedVerdictRecord recorded;
    std::optional<qint64> evaluationId; ///< ours; none when it was not evaluated
    QString status;                     ///< ours ("correct", "compile_error", …); empty: not evaluated
    bool compiled = false;              ///< ours, as the report counts it (outcomeOf)
    bool correct = false;               ///< ours: countsAsCorrect
    std::optional<double> speedup;      ///< ours, the trusted one
    /// Theirs, read from the verdict (null there: false / none).
    bool theirCompiled() const;
    bool theirCorrect() const;
};

struct RunReport
{
    RunInfo run;
    QList<TaskOutcome> outcomes;        ///< one per task of the run (unevaluated ones as failures), sorted by task id
    QList<UnevaluatedTask> unevaluated; ///< the tasks without an evaluation of a candidate, sorted by task id
    QMap<QString, qint64> chosenEvaluation; ///< task -> id of the evaluation selected for it
    int evaluations = 0;                    ///< evaluations stored for the run
    /// Of those, copies of an identical answer's evaluation (`reused_from_candidate`, a run made
    /// with evaluate identical once): not measured again.
    int reusedEvaluations = 0;
    int reusedFromOtherRuns = 0; ///< of those, another run's verdicts (identical_across_runs)
    RunSummary summary;
    RunUsage usage;
    QStringList ablated; ///< switches that were off (Ablations::offNames), from the stored regime
    std::optional<FirstTurnPassAtN> firstTurnPassAtN; ///< runs with at least two first-turn samples per task
    /// A compile-only run (isCompileOnlyRun): its correct, fast_1 and speedup numbers say nothing
    /// and are shown as "not measured", never as 0 %.
    bool compileOnly = false;
    QList<FastP> fastP; ///< fastPOf(outcomes)
    /// The verdicts a third party recorded for the run's samples, by task then sample (imported
    /// runs only; empty otherwise).
    QList<RecordedComparison> recorded;

    /// "#6 agent n=8 1 turn sweep": the run's name in tables (core/run/runname.h's runLabel).
    QString label() const;
    /// How many tasks have no evaluation, per UnevaluatedKind.
    QMap<QString, int> unevaluatedByKind() const;
};

struct PairReport
{
    qint64 runA = 0;
    qint64 runB = 0;
    PairedComparison comparison;
};

/// Whether a run is a main regime run, one of the study's Tables I–II rows: a built-in regime
/// other than the pilot (zero-shot, profiling-guided, iterative, agent) as built in (n, turns,
/// temperature, feedback, selection), no ablation, no routing, not part of a sweep.
bool isMainRegimeRun(const RunInfo& run);
/// Why a run is not a main regime run, exactly (empty: it is one): "part of a sweep (n = 8)…",
/// "an ablation (best_of_n off)", "not agent as built in: n = 4 (built in: 8), …" with every
/// setting that differs from today's built-in regime, both values.
QString notMainRegimeReason(const RunInfo& run);

/// The study's routing estimate: per level, the main regime run (isMainRegimeRun) that solved most
/// of that level's tasks (ties: the first in the report), and their union. Only main regime runs
/// are candidates; sweeps, ablations, the pilot and routed runs never are.
struct RoutingReport
{
    QMap<int, qint64> runForLevel;    ///< level -> the run whose outcomes are taken for it
    QList<qint64> candidates;         ///< the main regime runs it chose from, in report order
    QList<qint64> leftOut;            ///< the report's other runs, not candidates
    QMap<qint64, QString> leftOutWhy; ///< run -> notMainRegimeReason, for each run left out
    RoutingEstimate estimate;         ///< keyed by run label
};

/// What an ablated run is compared with: a run with the same regime, tasks, n, turns,
/// temperature, protocol profile, scale and stop-when-correct setting that has no ablation, no
/// routing and is not part of a sweep. The fields a switch changes are compared at the value the
/// switch on would have given (best_of_n off: the built-in n; monotone off: the built-in
/// selection; feedback_analyzer off: the built-in feedback), so an `--n 1` run is never the
/// baseline of a best-of-n ablation. Two runs match when their keys are equal.
QJsonObject ablationBaselineKey(const RunInfo& run);

/// One row of the ablation table: a run with switches off against its baseline (the first run in
/// the report whose ablationBaselineKey matches), paired on their shared tasks.
struct AblationRow
{
    qint64 run = 0;
    qint64 baseline = 0; ///< 0 when the report has no matching run
    QString regime;
    QStringList switchedOff;
    std::optional<PairedComparison> comparison; ///< ablated (A) against baseline (B)
    QString note;                               ///< with no baseline: what run it would need
};

/// A task's one best across the report's runs (taskbest.h's bestCandidateOfTask): the run and the
/// evaluation, the same candidate the Roofline draws and the Diff page shows on the right.
struct TaskBest
{
    qint64 run = 0;
    qint64 evaluation = 0;
    int turn = 0;
    int sample = 0;
};

struct Report
{
    QString database;
    QList<RunReport> runs;
    QMap<QString, TaskBest> bestOfTask; ///< task -> its best across `runs` (tasks with an evaluation)
    QList<PairReport> pairs;            ///< every pair (i < j) in the order of `runs`
    std::optional<RoutingReport> routing;
    QList<AblationRow> ablations; ///< one per run with switches off
    QList<SweepCurve> sweeps;     ///< one per sweep with a run in the report, in order of first run
    QList<int> levels;            ///< the levels any run has, ascending
    /// What the evaluations of `runs` judged, by the worker's source hash of each evaluated
    /// candidate: per task the distinct answers and the evaluations, and how many evaluations had no
    /// hash (no echo: a timeout, a lost worker), whose answers are unknown.
    struct AnswersJudged
    {
        QMap<QString, int> distinctOfTask;
        QMap<QString, int> evaluationsOfTask;
        int withoutHash = 0;
    } answersJudged;
};

/// Where two or more runs got one and the same answer for every task they evaluated (a recorded
/// server's one text per task), one sentence saying that their numbers cannot differ by what the
/// model wrote; one run whose samples and turns all got one answer per task, that its samples
/// cannot differ; empty otherwise: where only some tasks got one answer (a fixture server's tasks
/// with a single fixture say nothing about the others), or any evaluation's answer is unknown.
/// For the report's Markdown and the Results page alike.
QString sameAnswersNote(const Report& report);

/// Builds the report of the given runs (in that order; empty: every run of the store). Returns
/// nullopt with `error` set for a run id the store does not have, or a store that is not open.
std::optional<Report> buildReport(const RunStore& store, const QList<qint64>& runIds, const ReportOptions& options,
                                  QString* error);

/// The first-turn pass@n of a run's evaluations over `tasks` (every task of the run; a task
/// without evaluations has no sample: pass 0); nullopt when no task has two samples.
std::optional<FirstTurnPassAtN> firstTurnPassAtNFor(const QList<EvaluationRecord>& evaluations,
                                                    const QStringList& tasks, const BootstrapOptions& options);

} // namespace kwb
