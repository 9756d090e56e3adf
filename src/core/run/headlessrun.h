#pragma once
// One run of the workbench, assembled in one place for `kwb run`, `kwb sweep` and the window's
// Launch and Monitor pages: the worker's task facts are asked for without blocking
// (RunFactsLoader), every template is checked against them, the run is created (or resumed) in
// the store with the configuration runConfigFor() writes, and an EvaluationQueue and a
// RunController are set up from the plan (core/run/runlaunch.h) and driven to the end.
//
// Which model request serves which unit: RunController says so itself (modelRequestStarted, sent
// as it asks the model), so streamed text, retries and failures are given to their units here
// without anybody predicting the controller's turn logic.
//
// A run needs an evaluator: once the facts are loaded, a run that is not compile-only fails with
// NoEvaluator when the worker's hello says no GPU can evaluate (noEvaluatorReason), before any
// model request. While the plan's pauseGenerationWhileTiming is on, the controller sends no new
// model request while a job of this process holds the lease of one of the run's GPUs (an
// evaluation, or the window's ceilings or traffic measurement: core/workers/gpulease.h); requests
// already in flight go on (their stream is read as it comes). Leases of other processes do not
// pause it.
//
// Pause: the controller sends no new model request (RunController::holdModelRequests), the run
// waits until the requests in flight when Pause was pressed have been answered (their answers are
// stored), then cancels the controller; what was committed stays, and resume() starts the
// controller again on the same run with `kwb run --resume` semantics (finished units are skipped,
// stored answers are reused, so the evaluations cancelled by the pause are redone without asking
// the model again).

#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/workertarget.h"

#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

class EvaluationQueue;
class LlmClient;
class RunController;
class WorkerSupervisor;

/// Where and how a run executes (what is not part of the run's stored configuration).
struct RunEnvironment
{
    QString databasePath;
    QString workerProgram;
    QStringList workerArguments;
    QString tasksDir;   ///< the worker's --tasks-dir; empty: its default
    QString apiKey;     ///< never stored
    bool stream = true; ///< stream answers, so text arrives (textStreamed) as the model writes it
    /// Tasks the controller keeps in flight; 0: defaultTasksInFlight (core/run/runlaunch.h) for the
    /// compile workers, GPUs and the regime's n.
    int maxTasksInFlight = 0;
    QList<int> gpuOrdinals = {0};
    /// CPU compile-ahead workers (0: off); kAutomatic: defaultCompileWorkers for the plan's answer
    /// format (core/run/runlaunch.h). A new run stores the number used (`extra.compile_workers`).
    int compileWorkers = kAutomatic;
    static constexpr int kAutomatic = -1;
    /// Evaluations at once per local GPU (EvaluationQueue::setEvaluationsPerGpu; a remote worker
    /// has one); kAutomatic: defaultEvaluationsPerGpu for the plan's answer format
    /// (core/run/runlaunch.h). A new run stores a number other than one (`extra.evaluations_per_gpu`).
    int evaluationsPerGpu = kAutomatic;
    /// A model call's idle limit. Without streaming nothing arrives before the whole answer, so
    /// there it should be the deadline (llmSettingsFor's timeoutMs), as `kwb run` sets it.
    int requestTimeoutMs = 300 * 1000;
    int maxRetries = 3;
    int llmConcurrency = 4;
    bool serverSupportsN = false;
    int factsTimeoutMs = 120 * 1000; ///< tasks, device, analyze and profile requests
    int killGraceMs = 2000;
    /// Where the run evaluates (`--workers`, Launch's "Workers"; workertarget.h): empty for the
    /// local gpuOrdinals. The facts (device, profile) come from the first one's GPU.
    QList<WorkerTarget> workers;
};

class HeadlessRun : public QObject
{
    Q_OBJECT
public:
    enum class State { Idle, Preparing, Running, Pausing, Paused, Finished, Cancelled, Failed };
    Q_ENUM(State)
    /// Why a run ended in Failed (the command line maps these to its exit codes).
    enum class Failure {
        None,
        Database,      ///< the store would not open
        UnknownRun,    ///< resume of a run the store does not have
        NoWorker,      ///< no worker program given
        Worker,        ///< the worker failed the `tasks` request
        UnknownTask,   ///< the plan names a task the worker does not know
        Templates,     ///< a template does not render for a task (nothing was asked, no run row made)
        Configuration, ///< the run's configuration could not be made (a template unreadable)
        CreateRun,     ///< the store refused the run row
        Regime,        ///< the controller refused a regime
        Profile,       ///< the worker does not announce the plan's protocol profile
        NoEvaluator,   ///< no GPU can evaluate and the run is not compile-only (no model request was sent)
    };
    Q_ENUM(Failure)

    HeadlessRun(const RunPlan& plan, const RunEnvironment& environment, QObject* parent = nullptr);
    ~HeadlessRun() override;

    /// Idle -> Preparing (facts) -> Running. Failures end in Failed (failure(), errorString()),
    /// always from the event loop.
    void start();
    /// Running -> Pausing -> Paused (see the header comment).
    void pause();
    /// Paused -> Running.
    void resume();
    /// Ends the run as cancelled from any state before an end; it can be resumed later.
    void cancel();

    State state() const { return m_state; }
    /// Preparing, Running or Pausing.
    bool isActive() const;
    /// Finished, Cancelled or Failed.
    bool isOver() const;
    Failure failure() const { return m_failure; }
    QString errorString() const { return m_error; }
    const RunPlan& plan() const { return m_plan; }
    const RunEnvironment& environment() const { return m_environment; }
    /// The compile workers the run uses (the environment's, or the default for its answer format).
    int compileWorkers() const;
    /// The tasks the run keeps in flight (the environment's, or defaultTasksInFlight).
    int tasksInFlight() const;
    /// The evaluations at once on each local GPU (the environment's), or one where the run has
    /// only remote workers: a remote target always has one slot (EvaluationQueue).
    int evaluationsPerGpu() const;
    /// 0 until the run exists in the store.
    qint64 runId() const { return m_runId; }
    /// The run's own connection to the database (use from this thread only).
    const RunStore& store() const { return m_store; }
    /// "#3 agent n=8" (runname.h's runLabel) once the run exists, the plan's name before.
    QString label() const;

    int tasksDone() const { return m_tasksDone; }
    int tasksTotal() const { return m_tasksTotal; }
    int candidatesEvaluated() const { return m_evaluated; }
    int candidatesCorrect() const { return m_correct; }
    int requestsInFlight() const { return int(m_live.size()); }
    /// The units a model request in flight answers, by choice index (empty when it is not in flight).
    QList<UnitKey> unitsOf(qint64 requestId) const { return m_live.value(requestId); }
    /// The selected candidate per task so far (RunController::selected).
    QMap<QString, CandidateOutcome> selected() const;
    /// Time spent preparing and running (a pause does not count).
    qint64 activeMs() const;
    /// From the rate of tasks finished so far; nullopt before the first one.
    std::optional<qint64> estimatedRemainingMs() const;

    LlmClient* llmClient() const { return m_llm; }
    EvaluationQueue* evaluationQueue() const { return m_queue; }
    RunController* controller() const { return m_controller; }

Q_SIGNALS:
    void stateChanged(kwb::HeadlessRun::State state);
    /// Facts requests answered so far and needed.
    void preparing(int done, int total);
    /// A facts request failed and the prompts go without it (device, analyze, profile).
    void warning(const QString& message);
    /// Emitted just before the state becomes Failed.
    void failed(kwb::HeadlessRun::Failure failure, const QString& message);
    /// The run exists in the store (new or resumed); the controller starts right after.
    void runReady(qint64 runId);

    // The controller's signals, passed on.
    void taskStarted(const QString& task);
    void roleAnswered(const QString& task, int turn, const QString& role, int samples);
    void candidateEvaluated(const QString& task, int turn, int sample, const QString& status);
    void taskFinished(const QString& task, const QString& status);
    void taskError(const QString& task, const QString& message);
    void progressChanged(int tasksDone, int tasksTotal);
    /// candidatesEvaluated() or candidatesCorrect() changed.
    void countsChanged();

    /// A model request for these units (by choice index) was sent / has ended (answered and
    /// stored, failed and stored, or cancelled).
    void modelRequestStarted(qint64 requestId, const QList<kwb::UnitKey>& units);
    void modelRequestEnded(qint64 requestId, const QList<kwb::UnitKey>& units);
    void textStreamed(const kwb::UnitKey& unit, const QString& chunk);
    void modelRetryScheduled(qint64 requestId, const QList<kwb::UnitKey>& units, int attempt, int delayMs,
                             const QString& reason);
    /// A request failed for another reason than being cancelled (before its rows are stored).
    void modelRequestFailed(qint64 requestId, const QList<kwb::UnitKey>& units, const QString& kind,
                            const QString& message);

    /// The run ended (Finished, Cancelled or Failed), after stateChanged().
    void finished(kwb::HeadlessRun::State state);

private:
    void setState(State state);
    void fail(Failure failure, const QString& message);
    void failLater(Failure failure, const QString& message);
    void onFactsLoaded(const QList<RunTaskInput>& inputs, const DeviceFacts& device, const HelloInfo& hello);
    /// Every planned prompt counted by the server's tokenizer (where it has one) against the budget.
    void countPrompts(const DeviceFacts& device, const HelloInfo& hello);
    /// The run row (or the resumed one), the queue and the controller; then the run starts.
    void createAndStart(const DeviceFacts& device, const HelloInfo& hello);
    void startController();
    void updateGenerationPause();
    void onRequestEnded(qint64 id);
    void onRunFinished(bool cancelled);

    RunPlan m_plan;
    RunEnvironment m_environment;
    State m_state = State::Idle;
    Failure m_failure = Failure::None;
    QString m_error;
    RunStore m_store;
    qint64 m_runId = 0;

    LlmClient* m_llm = nullptr;
    WorkerSupervisor* m_factsSupervisor = nullptr;
    RunFactsLoader* m_facts = nullptr;
    EvaluationQueue* m_queue = nullptr;
    RunController* m_controller = nullptr;
    QList<RunTaskInput> m_inputs;

    int m_tasksDone = 0;
    int m_tasksTotal = 0;
    int m_evaluated = 0;
    int m_correct = 0;
    qint64 m_activeMsBefore = 0; ///< active time of earlier stretches (before a pause)
    QElapsedTimer m_activeClock; ///< the current stretch

    QHash<qint64, QList<UnitKey>> m_live; ///< model requests in flight -> their units
    QSet<qint64> m_pauseWaits;            ///< requests in flight when Pause was pressed
    bool m_cancelRequested = false;
};

} // namespace kwb
