#pragma once
// What `kwb run` and the workbench's launch page share: from a request (tasks, regime or routing,
// ablations, overrides, model server, evaluation settings) to a RunPlan, from a plan to the
// configuration a new run stores, the model client's settings, the evaluation options and the
// RunController and EvaluationQueue set-up; and RunFactsLoader, which asks the worker for the
// task facts a run's prompts need (tasks, device, analyze, profile) without blocking, so the GUI
// thread's event loop keeps turning while a worker loads libtorch.
//
// A resumed run takes its plan from the stored configuration (planResume), so it runs with the
// regimes, tasks, profile, scale and time-out it was started with.

#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/protocol/defaults.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponse.h"
#include "core/run/runcontroller.h"
#include "core/store/runstore.h"
#include "core/workers/hostlimits.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

class EvaluationQueue;
class WorkerSupervisor;
struct LlmSettings;

/// The seed of every evaluation (the worker's input and weight draws), as the study used.
constexpr int kRunEvaluationSeed = 42;
/// CUPTI trials of a task's `profile` request for the prompts of regimes that use it.
constexpr int kRunProfileTrials = ProtocolNames::kDefaultProfileTrials; // the worker's default too

/// A named task set (issue 37): `study` (the study's 30, the default), `level1`, `level2`,
/// `level3` and `all`, each with the spec it stands for.
struct TaskSetInfo
{
    QString name;
    QString spec; ///< "L1:1-100"
    QString description;
};
/// The task sets, in the order lists show them.
QList<TaskSetInfo> taskSets();
/// The set runs and the Launch page take unless told: "study".
QString defaultTaskSet();
/// Whether a spec names a task set (then a run keeps the spec as written).
bool namesTaskSet(const QString& spec);

/// A task spec as task ids in order, without repeats: a comma list of task sets ("level2"),
/// ranges ("L1:1-10"), single tasks ("L1:3" or "L2/1"), mixed ("study,L3:11-20"); an empty list and
/// *error (naming the option as `--tasks`) for a malformed spec. Ids need not exist: the worker's
/// task list decides (KernelBench-only tasks included).
QStringList parseTaskSpec(const QString& spec, QString* error);
/// parseTaskSpec without set names: ranges and single tasks only.
QStringList parseTaskIds(const QString& spec, QString* error);

/// The shipped prompt templates: $KWB_PROMPTS_DIR, the installed share/kernel-workbench/prompts
/// next to the program, else the source tree's prompts/ (kwb and the window look alike).
QString defaultPromptsDir();
/// The shipped template sets by name: "study" (the default, defaultPromptsDir()),
/// "workbench-v1" (the earlier workbench wording, prompts-workbench-v1/ beside it) and
/// "kernelbench" (the study's regimes asking for KernelBench's format, prompts-kernelbench/).
QStringList shippedPromptSetNames();
/// A shipped set's directory (it need not exist); empty for an unknown name.
QString shippedPromptSetDir(const QString& name);

/// The workbench's folder in the user's data dir: GenericDataLocation/kernel-workbench
/// (~/.local/share/kernel-workbench on Linux, the name once, not the organisation's and the
/// program's). Not created.
QString userDataDir();
/// Where Launch writes runs unless the user picks another file: userDataDir()/launched-runs.db.
/// Never the open study database, so trying a run does not add it to the study.
QString defaultLaunchDatabase();
/// The template set a run in this answer format uses when none is named (the one place that
/// decides): defaultPromptsDir() for native answers, the prompts-kernelbench/ set beside it for
/// KernelBench's format (docs/prompts.md).
QString defaultPromptsDirFor(const QString& answerFormat);

/// How many CPU compile workers a run builds ahead with unless told (`--compile-workers`,
/// Launch's "Compile workers"), from the machine's cores and the answer format; the one place
/// that decides. A native answer's NVRTC compile takes about a second against seconds of
/// evaluation, so one worker keeps ahead of the GPU. A KernelBench-format answer's build (nvcc and
/// ninja over torch's headers: 60-100 s on the H200, one compiler process per source file, two or
/// three files) takes far longer than its evaluation, so the pool sets the pace: three quarters of
/// the cores (12 of the H200 machine's 16, 1 of 2), the rest left to kwb, the GPU's worker and a
/// model server; and at most one per kKernelBenchCompileWorkerBytes of three quarters of the
/// memory (`memoryBytes`; 0: unknown, cores alone), since a build's compilers side by side take
/// about 4.2 GB (bench/results/2026-12-05-build-memory-2core.md): 12 compile workers of a 16-core,
/// 32 GiB workstation would ask for 50 GB at once, and the kernel's OOM killer would pick among them
/// and everything else on the machine.
int defaultCompileWorkers(const QString& answerFormat, int cores, qint64 memoryBytes);
/// defaultCompileWorkers on this machine (QThread::idealThreadCount(), machineMemoryBytes()).
int defaultCompileWorkers(const QString& answerFormat);
/// How many evaluations each local GPU runs at once unless told (`--evaluations-per-gpu`), by
/// answer format; the one place that decides (EvaluationQueue::kDefaultEvaluationsPerGpu is the
/// queue's own, and what a run's record means where it names none). Native answers: 1, since their
/// CPU parts are milliseconds the spares already hide, and two slots measured no faster (H200,
/// session 11; H100, session 42). KernelBench's format: 2, since loading such an answer is seconds
/// of CPU work (its module run, ModelNew and the task's model built on the CPU as KernelBench
/// builds them) that a second slot runs beside the other answer's GPU stages (docs/decisions.md,
/// session 44). GPU work still takes turns under the quiet lock, so no timing overlaps anything;
/// a job that ran out of GPU memory or time beside another is evaluated again alone
/// (evaluationqueue.h), and a worker the machine's OOM killer ends is the machine's failure.
int defaultEvaluationsPerGpu(const QString& answerFormat);
/// Where `workers` compile workers of this answer format may take more memory at once than
/// defaultCompileWorkers allows for (`memoryBytes`: the machine's), a warning saying so, for a
/// chosen `--compile-workers`; else empty.
QString compileWorkersMemoryWarning(const QString& answerFormat, int workers, qint64 memoryBytes);
/// compileWorkersMemoryWarning on this machine (machineMemoryBytes()).
QString compileWorkersMemoryWarning(const QString& answerFormat, int workers);
/// The memory one KernelBench-format compile worker is given room for: its build's compilers side
/// by side (4.2 GB measured on torch 1.13's headers; torch 2.11's are larger), the worker and its
/// spare with torch imported (0.24 GB each).
inline constexpr qint64 kKernelBenchCompileWorkerBytes = qint64(6) << 30;
/// How many tasks a run keeps in flight unless told: enough that each compile worker and GPU has a
/// candidate to work on (a task's turn gives `samplesPerTurn` of them), and at least 2, so the model
/// writes for one task while another's candidates are evaluated.
int defaultTasksInFlight(int compileWorkers, int gpus, int samplesPerTurn);

/// Elapsed time as a clock: "4:07", or "1:02:03" past an hour.
QString elapsedClock(qint64 ms);
/// The shortest spec naming exactly these ids, in their order ("L1:1-3,L2:5"); ranges are made of
/// consecutive numbers of one level.
QString taskSpecFor(const QStringList& taskIds);
/// The command line's ablation names (best-of-n, feedback-analyzer, monotone, competence; `_`
/// for `-` also works) as Ablations; *unknown receives a name that is none of them.
Ablations ablationsFromList(const QString& list, QString* unknown = nullptr);

/// kDefaultModelDeadlineMs (core/model/llmclient.h) in seconds: a run's model time-out unless set.
double defaultModelTimeoutS();

/// What a new run is asked to be.
struct RunRequest
{
    QStringList taskIds;
    QString taskSpec; ///< as the user wrote it (kept in the run's configuration and name); empty: taskSpecFor(taskIds)
    QString regime;   ///< a built-in regime (regime.h); the routing's fallback is used when routing is set
    std::optional<Routing> routing;
    Ablations ablations;
    int n = 0;               ///< 0: the regime's
    int turns = 0;           ///< 0: the regime's
    double temperature = -1; ///< < 0: the regime's
    QString endpoint = defaults::endpoint();
    QString model;
    QString profile = defaults::profile(); ///< the protocol profile
    QString scale = defaults::scale();
    double timeoutS = defaults::kEvaluationTimeoutS; ///< an evaluation's wall-clock limit
    double modelTimeoutS = 0; ///< a model request's total limit, retries included; <= 0: kDefaultModelDeadlineMs
    int timingTrials = 0;     ///< 0: the profile's
    QString isolation = QStringLiteral("fresh"); ///< "fresh" (a worker per candidate) or "reuse"
    WorkerLimits workerLimits;                   ///< host memory and threads, the OS sandbox (defaults: the machine's)
    /// `kwb sweep`: the n of the best-of-n curve. Each n is a run of its own of the whole regime
    /// (all its turns) with n candidates per turn, the same model seeds (sweepRunPlans). Empty: a
    /// plain run.
    QList<int> sweepNs;
    /// The model's base seed (sample k of turn t is asked with modelSeedFor); nullopt: the
    /// regime's (every built-in sets 42, regimes/study.toml); a sweep of a regime without one pairs its
    /// runs' samples with kDefaultSweepModelSeed.
    std::optional<qint64> modelSeed;
    /// Overrides the regime's stopWhenCorrect (`--stop-when-correct`); nullopt: the regime's.
    std::optional<bool> stopWhenCorrect;
    /// Overrides what later turns are shown (`--feedback last|best`); nullopt: the regime's (last).
    std::optional<FeedbackSource> feedbackSource;
    QString promptsDir;
    /// defaults::kAnswerFormatNative or kAnswerFormatKernelBench: sent as `answer_format` in every
    /// compile and evaluate request of the run, stored as `answer_format`.
    QString answerFormat = defaults::answerFormat();
    /// Evaluate with "device" "none": compile and sandbox check only, for a machine without a GPU.
    bool compileOnly = false;
    /// Every evaluate request asks for the candidate's measured HBM traffic (`profile_traffic`).
    bool profileTraffic = false;
    /// Byte-identical answers of a task are evaluated once, the copies stored with that verdict
    /// (`evaluate_identical_once`, RunController::setEvaluateIdenticalOnce).
    bool evaluateIdenticalOnce = false;
    /// With it, the store's runs of the same evaluation settings lend their verdicts too
    /// (`identical_across_runs`, RunController::setIdenticalAcrossRuns).
    bool identicalAcrossRuns = false;
    /// No new model request while an evaluation holds a GPU's lease; nullopt: on exactly when the
    /// endpoint is on this machine (isLocalEndpoint), where the model server may share the GPU.
    std::optional<bool> pauseGenerationWhileTiming;
    /// The model's context length: every prompt plus maxOutputTokens must fit (0: no check).
    int contextTokens = defaults::kContextTokens;
    int maxOutputTokens = defaults::kMaxOutputTokens; ///< sent as max_tokens
};

/// Whether the URL's host is this machine: localhost, 127.0.0.0/8 or ::1.
bool isLocalEndpoint(const QString& url);
/// Why no GPU of the worker can evaluate, from its hello (cuda_device_count, driver) and, where
/// the hello says nothing, its `device` answer; empty when one can.
QString noEvaluatorReason(const HelloInfo& hello, const DeviceFacts& device);

/// A run ready to start: the regimes resolved, the tasks listed.
struct RunPlan
{
    Regime regime;                  ///< tasks whose level has no regime of its own (with routing: the fallback)
    QMap<int, Regime> levelRegimes; ///< routing: level -> its regime
    std::optional<Routing> routing;
    QStringList taskIds;
    QString taskSpec;
    QString endpoint;
    QString model;
    QString profile;
    QString scale;
    double timeoutS = defaults::kEvaluationTimeoutS;
    double modelTimeoutS = defaultModelTimeoutS(); ///< a model request's total limit, retries included
    int timingTrials = 0;
    QString isolation = QStringLiteral("fresh");
    WorkerLimits workerLimits;
    QList<int> sweepNs;              ///< a sweep's n values (each run of it stores them all)
    QString sweepId;                 ///< the id its runs share (`extra.sweep.id`); empty: not a sweep
    std::optional<qint64> modelSeed; ///< stored as `seeds.model`
    /// modelSeedFor's distance between turns, stored as `seeds.turn_stride`; a run stored without
    /// it asked every turn with the same seeds and resumes with 0.
    qint64 modelSeedTurnStride = kModelSeedTurnStride;
    QString promptsDir;
    QString answerFormat = defaults::answerFormat(); ///< stored as `answer_format`
    qint64 resumeRunId = 0;                          ///< 0: a new run
    bool compileOnly = false;                        ///< stored as `compile_only`
    bool profileTraffic = false;                     ///< stored as `profile_traffic`, sent with every evaluate
    bool evaluateIdenticalOnce = false;              ///< stored as `evaluate_identical_once`
    bool identicalAcrossRuns = false;                ///< stored as `identical_across_runs`
    bool pauseGenerationWhileTiming = false;         ///< stored as `pause_generation_while_timing`
    int contextTokens = 0;                           ///< stored as `context_tokens` (0: not checked)
    int maxOutputTokens = 0; ///< stored as `max_output_tokens`, sent as max_tokens (0: not sent)

    /// "routing" for a routed run, else the regime's name (the run's `regime` column).
    QString regimeLabel() const;
    /// The name a new run gets: "agent L2:1-10", "agent -best_of_n L2:1-10", "agent sweep n=8 L2:1-10";
    /// a run in KernelBench's answer format says so: "agent [kernelbench] L2:1-10".
    QString runName() const;
    Regime regimeForLevel(int level) const { return levelRegimes.value(level, regime); }
    /// Whether any task's regime puts the worker's profile into its prompts.
    bool wantsProfile() const;
};

/// The base model seed of a sweep that names none: the same for every n, so the first k samples
/// of each run are drawn alike.
constexpr qint64 kDefaultSweepModelSeed = 1234;

/// Resolves a request: built-in regimes with the ablations and the n/turns/temperature overrides
/// applied, per level for routing. nullopt with *error for no tasks or an unknown regime.
std::optional<RunPlan> planRun(const RunRequest& request, QString* error);
/// The plan a stored run was made with (its regimes, tasks, endpoint, model, profile, scale,
/// time-outs and seeds), for resuming it. A regime stored before `feedback_source` existed was fed
/// the best so far and resumes so. nullopt with *error when the configuration lacks a usable regime,
/// or the run was imported (`extra.import`: kwb import).
std::optional<RunPlan> planResume(const RunInfo& run, QString* error);
/// A sweep's runs: one plan per n of plan.sweepNs, each the plan's whole regime (every turn) with
/// n candidates per turn (every level's regime under routing), the same tasks, model seed and
/// sweep id (a new one when the plan has none).
QList<RunPlan> sweepRunPlans(const RunPlan& plan);

/// The configuration a new run keeps: the templates its regimes use (and every partial) read from
/// plan.promptsDir, seeds, profile, the worker's `device` answer and versions (from its hello),
/// and the plan itself in `extra` (regime, level_regimes, routing, tasks, task_spec, scale,
/// timeout_s, model_timeout_s, timing_trials, isolation, worker_limits, sweep, prompts_dir,
/// answer_format, compile_only, pause_generation_while_timing), and `sandbox`: "bubblewrap" or "none: <reason>"
/// (core/workers/workerlauncher.h). nullopt with *error for a template that cannot be read.
std::optional<RunConfig> runConfigFor(const RunPlan& plan, const DeviceFacts& device, const HelloInfo& hello,
                                      QString* error);

/// The model client's settings for the plan's endpoint, model and model time-out (the request's
/// deadline). The API key is never stored.
LlmSettings llmSettingsFor(const RunPlan& plan, const QString& apiKey);
/// The fields every evaluate request of the run carries: profile, scale, seed, answer_format (and
/// timing_trials when set; "device": "none" for a compile-only run). The queue's compile-ahead
/// requests take answer_format from them too.
WorkerRequests::Evaluate evaluationOptionsFor(const RunPlan& plan);
/// Worker program, time-out, isolation, worker limits, one compile worker (HeadlessRun sets the
/// run's number after), and the device's arch for compile-ahead.
void configureQueue(EvaluationQueue& queue, const QString& workerProgram, const QStringList& workerArguments,
                    const RunPlan& plan, const DeviceFacts& device);
/// The plan's context budget (its context tokens and max output tokens).
ContextBudget contextBudgetFor(const RunPlan& plan);
/// Regimes per level, evaluation options and the context budget.
void configureController(RunController& controller, const RunPlan& plan);
/// Every template the plan's regimes use renders for every task (RunController::checkTemplates):
/// empty, or "TASK: FILE:LINE: what". Run before the run is made, so a template error costs no
/// model request.
QString checkRunTemplates(const RunPlan& plan, const QList<RunTaskInput>& inputs);

/// Asks the worker for a run's task facts without blocking: `tasks` (checking that every id of
/// the plan exists), `device`, then `analyze` for every task and `profile` where the task's regime
/// uses it and a GPU is there. `device` and `profile` run only while the loader holds GPU 0's lease
/// (core/workers/gpulease.h), like an evaluation's timing. Ends in exactly one loaded() or failed(), emitted from the
/// event loop. A failed device, analyze or profile request is a warning(): the prompt goes without it, as `kwb run`
/// does.
class RunFactsLoader : public QObject
{
    Q_OBJECT
public:
    explicit RunFactsLoader(WorkerSupervisor* supervisor, QObject* parent = nullptr);
    ~RunFactsLoader() override;

    /// tasksDir: the worker's --tasks-dir (empty: its default). Ignored while loading.
    void load(const RunPlan& plan, const QString& tasksDir = QString());
    /// Cancels the requests in flight; no further signal.
    void abort();
    bool isLoading() const { return m_loading; }
    /// What the last failed() was about: the worker failing `tasks`, or a task it does not know.
    enum class Failure { Worker, UnknownTask };
    Failure lastFailure() const { return m_failure; }

Q_SIGNALS:
    /// Requests answered so far and requests known to be needed.
    void progress(int done, int total);
    void warning(const QString& message);
    /// inputs in the plan's task order; device: the `device` answer without its envelope
    /// (responseBody(): what the run stores), empty where it failed; hello: the worker's handshake.
    void loaded(const QList<kwb::RunTaskInput>& inputs, const kwb::DeviceFacts& device, const kwb::HelloInfo& hello);
    void failed(const QString& message);

private:
    enum class Kind { Tasks, Device, Analyze, Profile };
    struct Pending
    {
        Kind kind = Kind::Tasks;
        int index = -1;   ///< into m_inputs
        qint64 lease = 0; ///< the GPU lease a device or profile request holds (gpulease.h)
    };

    void onResponse(qint64 id, const WorkerResponse& response);
    void onFailure(qint64 id, const QString& status, const QString& message);
    /// response: empty where error says why there is none.
    void handle(const Pending& pending, const WorkerResponse& response, const QString& error);
    void send(Kind kind, const QJsonObject& request, int index = -1);
    void finishLoading();
    void failLoading(const QString& message, Failure failure = Failure::Worker);

    WorkerSupervisor* m_supervisor = nullptr;
    RunPlan m_plan;
    bool m_loading = false;
    QHash<qint64, Pending> m_pending;
    int m_waitingForLease = 0; ///< device/profile requests not sent yet: their GPU is busy
    quint64 m_generation = 0;  ///< counts abort()s, so a late lease grant is given back
    QList<RunTaskInput> m_inputs;
    DeviceFacts m_device;
    HelloInfo m_hello;
    int m_done = 0;
    int m_total = 0;
    Failure m_failure = Failure::Worker;
};

} // namespace kwb
