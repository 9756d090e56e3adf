#pragma once
// One run of the workbench as the window shows it: a thin layer over kwb::HeadlessRun
// (core/run/headlessrun.h), the run assembly `kwb run` uses too (facts, store, queue, controller,
// pause, resume, which request serves which unit). The session adds what the monitor shows: rows
// as the store gets them, the model's streamed text per unit, a problem list, progress and time
// left.

#include "core/run/headlessrun.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"

#include <QDateTime>
#include <QList>
#include <QObject>
#include <QString>

#include <optional>

namespace kwb {
class EvaluationQueue;
class LlmClient;
class RunController;
} // namespace kwb

namespace kwb::app {

using kwb::defaultPromptsDir; // core/run/runlaunch.h

/// Whether the monitor lists an evaluation as a problem, by the status table's category
/// (core/protocol/evaluationstatus.h): the machine's faults (isMachineFault: no_device outside a
/// compile-only run, start_failed, worker_lost, protocol_error), requests never evaluated
/// (bad_request, a status this build does not know), and the ones the supervisor reports when it
/// had to end the worker (timeout, crashed, resource_limit); not the worker's verdicts on a
/// candidate, not `cancelled`.
bool isRunProblem(const EvaluationRecord& evaluation, bool compileOnly = false);

/// Where and how a run executes (what is not part of the run's stored configuration).
using RunSessionEnvironment = kwb::RunEnvironment;

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
    using State = kwb::HeadlessRun::State;

    RunSession(const RunPlan& plan, const RunSessionEnvironment& environment, QObject* parent = nullptr);
    ~RunSession() override;

    /// Idle -> Preparing (facts) -> Running. Failures end in Failed with errorString().
    void start() { m_run->start(); }
    /// Running -> Pausing -> Paused (HeadlessRun::pause).
    void pause() { m_run->pause(); }
    /// Paused -> Running.
    void resume() { m_run->resume(); }
    /// Ends the run as cancelled from any state before an end; it can be resumed later.
    void cancel() { m_run->cancel(); }

    State state() const { return m_run->state(); }
    static QString stateText(State state);
    /// Preparing, Running or Pausing.
    bool isActive() const { return m_run->isActive(); }
    /// Finished, Cancelled or Failed.
    bool isOver() const { return m_run->isOver(); }
    QString errorString() const { return m_run->errorString(); }
    const RunPlan& plan() const { return m_run->plan(); }
    const RunSessionEnvironment& environment() const { return m_run->environment(); }
    /// 0 until the run exists in the store.
    qint64 runId() const { return m_run->runId(); }
    /// The session's own connection to the database (use from this thread only).
    const RunStore& store() const { return m_run->store(); }
    /// "#3 agent L2:1-10", or the plan's name before the run exists.
    QString label() const { return m_run->label(); }

    int tasksDone() const { return m_run->tasksDone(); }
    int tasksTotal() const { return m_run->tasksTotal(); }
    int candidatesEvaluated() const { return m_run->candidatesEvaluated(); }
    int candidatesCorrect() const { return m_run->candidatesCorrect(); }
    int requestsInFlight() const { return m_run->requestsInFlight(); }
    /// Time spent preparing and running (a pause does not count).
    qint64 activeMs() const { return m_run->activeMs(); }
    /// From the rate of tasks finished so far; nullopt before the first one.
    std::optional<qint64> estimatedRemainingMs() const { return m_run->estimatedRemainingMs(); }

    HeadlessRun* run() const { return m_run; }
    LlmClient* llmClient() const { return m_run->llmClient(); }
    EvaluationQueue* evaluationQueue() const { return m_run->evaluationQueue(); }
    RunController* controller() const { return m_run->controller(); }

Q_SIGNALS:
    void stateChanged(kwb::HeadlessRun::State state);
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
    void finished(kwb::HeadlessRun::State state);

private:
    void addProblem(bool error, const QString& task, const QString& source, const QString& message);
    /// "L1/1 turn 2 generator", or "model request 7" for a request of no known unit.
    QString describe(qint64 requestId, const QList<UnitKey>& units) const;
    /// Reads the rows the store got since the last call and reports them.
    void syncStore();

    HeadlessRun* m_run = nullptr;
    qint64 m_lastResponseId = 0;
    qint64 m_lastEvaluationId = 0;
};

} // namespace kwb::app

Q_DECLARE_METATYPE(kwb::app::RunProblem)
