#pragma once
// One run of the workbench, as `kwb run` does it but without ever blocking the GUI thread: the
// worker's task facts are asked for asynchronously (RunFactsLoader), the run is created (or
// resumed) in the store with the same configuration `kwb run` writes (core/run/runlaunch.h), and a
// RunController drives it. The session reports what the monitor shows: rows as the store gets
// them, the model's streamed text per unit, problems, progress and time left.
//
// Pause: RunController has no pause of its own, so the session stops taking new work by waiting
// until the model requests in flight when Pause was pressed have been answered (their answers
// are stored), then cancelling the controller; what was committed stays, and resume() starts the
// controller again on the same run with `kwb run --resume` semantics (finished units are skipped,
// stored answers are reused, so the evaluations cancelled by the pause are redone without asking
// the model again).
//
// Which unit a streamed piece of text belongs to: LlmClient's textAvailable() names a request id,
// RunController does not say which request it started for which unit. RunController starts a
// request only right after it emitted taskStarted, roleAnswered or candidateEvaluated for that
// task, on the same call stack; the session counts LlmClient's pending requests at each of those
// signals and gives each new request id (they rise by one per complete()) the unit predicted from
// the regime and the units already answered. A prediction that turns out wrong (the stored
// response names another unit) only moves the live text: the stored rows are always the store's.

#include "core/run/runlaunch.h"
#include "core/store/runstore.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {
class EvaluationQueue;
class LlmClient;
class RunController;
class WorkerSupervisor;
} // namespace kwb

namespace kwb::app {

using kwb::defaultPromptsDir; // core/run/runlaunch.h

/// Evaluation statuses that say something went wrong around the candidate (timeout, crashed, resource_limit,
/// start_failed, protocol_error, bad_request), not in it: the monitor lists them as problems.
bool isInfrastructureStatus(const QString& status);

/// Where and how a run executes (what is not part of the run's stored configuration).
struct RunSessionEnvironment
{
    QString databasePath;
    QString workerProgram;
    QStringList workerArguments;
    QString tasksDir; ///< the worker's --tasks-dir; empty: its default
    QString apiKey;   ///< never stored
    bool stream = true; ///< stream answers, so the monitor shows text as it arrives
    int maxTasksInFlight = 2;
    QList<int> gpuOrdinals = {0};
    int compileWorkers = 1; ///< CPU compile-ahead workers (0: off)
    int requestTimeoutMs = 300 * 1000;
    int maxRetries = 3;
    int llmConcurrency = 4;
    bool serverSupportsN = false;
    int factsTimeoutMs = 120 * 1000; ///< tasks, device, analyze and profile requests
    int killGraceMs = 2000;
};

/// One line of the monitor's problem list.
struct RunProblem
{
    QDateTime time;
    bool error = true; ///< false: a warning (a retry, a missing analysis)
    QString task;      ///< empty: the run as a whole
    QString source;    ///< "model", "evaluation", "worker", "run"
    QString message;
};

class RunSession : public QObject
{
    Q_OBJECT
public:
    enum class State { Idle, Preparing, Running, Pausing, Paused, Finished, Cancelled, Failed };
    Q_ENUM(State)

    RunSession(const RunPlan& plan, const RunSessionEnvironment& environment, QObject* parent = nullptr);
    ~RunSession() override;

    /// Idle -> Preparing (facts) -> Running. Failures end in Failed with errorString().
    void start();
    /// Running -> Pausing -> Paused (see the header comment).
    void pause();
    /// Paused -> Running.
    void resume();
    /// Ends the run as cancelled from any state before an end; it can be resumed later.
    void cancel();

    State state() const { return m_state; }
    static QString stateText(State state);
    /// Preparing, Running or Pausing.
    bool isActive() const;
    /// Finished, Cancelled or Failed.
    bool isOver() const;
    QString errorString() const { return m_error; }
    const RunPlan& plan() const { return m_plan; }
    const RunSessionEnvironment& environment() const { return m_environment; }
    /// 0 until the run exists in the store.
    qint64 runId() const { return m_runId; }
    /// The session's own connection to the database (use from this thread only).
    const RunStore& store() const { return m_store; }
    /// "#3 agent L2:1-10", or the plan's name before the run exists.
    QString label() const;

    int tasksDone() const { return m_tasksDone; }
    int tasksTotal() const { return m_tasksTotal; }
    int candidatesEvaluated() const { return m_evaluated; }
    int candidatesCorrect() const { return m_correct; }
    int requestsInFlight() const { return int(m_live.size()); }
    /// Time spent preparing and running (a pause does not count).
    qint64 activeMs() const;
    /// From the rate of tasks finished so far; nullopt before the first one.
    std::optional<qint64> estimatedRemainingMs() const;

    LlmClient* llmClient() const { return m_llm; }
    EvaluationQueue* evaluationQueue() const { return m_queue; }
    RunController* controller() const { return m_controller; }

Q_SIGNALS:
    void stateChanged(kwb::app::RunSession::State state);
    /// Facts requests answered so far and needed.
    void preparing(int done, int total);
    /// The run exists in the store (new or resumed); rows from here on come as signals.
    void runReady(qint64 runId);
    void progressChanged(int tasksDone, int tasksTotal);
    void countsChanged();
    void responseStored(const kwb::UnitResponse& response);
    void evaluationStored(const kwb::EvaluationRecord& evaluation);
    /// A model request for the unit is in flight / has ended.
    void generationStarted(const kwb::UnitKey& unit);
    void generationEnded(const kwb::UnitKey& unit);
    void textStreamed(const kwb::UnitKey& unit, const QString& chunk);
    void problem(const kwb::app::RunProblem& problem);
    /// The session ended (Finished, Cancelled or Failed).
    void finished(kwb::app::RunSession::State state);

private:
    /// What the next model request of a task will be for.
    struct Prediction
    {
        QString task;
        int turn = 0;
        QString role;
        QList<int> samples;
    };
    struct LiveRequest
    {
        QList<UnitKey> units; ///< by choice index; empty when the request could not be placed
    };

    void setState(State state);
    void fail(const QString& message);
    void onFactsLoaded(const QList<RunTaskInput>& inputs, const QJsonObject& device, const QJsonObject& hello);
    void startController();
    void addProblem(bool error, const QString& task, const QString& source, const QString& message);

    // Request attribution (see the header comment).
    void settle();
    /// settle() once the current call stack has returned (the controller starts its request
    /// after the signal we are handling), so a live row appears without waiting for the next signal.
    void scheduleSettle();
    void predictNext(const QString& task, int turn, const QString& afterRole);
    QList<int> missingSamples(const QString& task, int turn, const QString& role, int n) const;
    void endRequest(qint64 id);
    QString describe(qint64 requestId) const;
    /// Reads the rows the store got since the last call and reports them.
    void syncStore();

    void onTaskStarted(const QString& task);
    void onRoleAnswered(const QString& task, int turn, const QString& role, int samples);
    void onCandidateEvaluated(const QString& task, int turn, int sample, const QString& status);
    void onTaskFinished(const QString& task, const QString& status);
    void onTaskError(const QString& task, const QString& message);
    void onProgress(int done, int total);
    void onRunFinished(bool cancelled);

    RunPlan m_plan;
    RunSessionEnvironment m_environment;
    State m_state = State::Idle;
    QString m_error;
    RunStore m_store;
    qint64 m_runId = 0;

    LlmClient* m_llm = nullptr;
    WorkerSupervisor* m_factsSupervisor = nullptr;
    RunFactsLoader* m_facts = nullptr;
    EvaluationQueue* m_queue = nullptr;
    RunController* m_controller = nullptr;
    QList<RunTaskInput> m_inputs;
    QHash<QString, int> m_levelOf;

    int m_tasksDone = 0;
    int m_tasksTotal = 0;
    int m_evaluated = 0;
    int m_correct = 0;
    qint64 m_activeMsBefore = 0; ///< active time of earlier stretches (before a pause)
    QElapsedTimer m_activeClock; ///< the current stretch
    qint64 m_lastResponseId = 0;
    qint64 m_lastEvaluationId = 0;
    QSet<UnitKey> m_answered; ///< units with a stored answer (no error)

    std::optional<Prediction> m_next;
    int m_knownPending = 0;
    int m_endedUnseen = 0;
    qint64 m_lastRequestId = 0;
    QHash<qint64, LiveRequest> m_live;
    QSet<qint64> m_pauseWaits; ///< requests in flight when Pause was pressed
    bool m_cancelRequested = false;
    bool m_settleScheduled = false;
};

} // namespace kwb::app

Q_DECLARE_METATYPE(kwb::app::RunProblem)
