#include "app/runs/runsession.h"

#include "core/model/llmclient.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/evaluationstatus.h"
#include "core/run/runcontroller.h"
#include "core/study/report.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workersupervisor.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

namespace kwb::app {

bool isRunProblem(const EvaluationRecord& evaluation, bool compileOnly)
{
    const EvaluationStatus status = evaluationStatusFromWire(evaluation.status);
    if (isMachineFault(status, compileOnly))
        return true;
    switch (statusCategory(status)) {
    case StatusCategory::MachineFault: return false; // no_device in a compile-only run: its verdict
    case StatusCategory::NotEvaluated: return status != EvaluationStatus::Cancelled; // cancelling is the user's act
    case StatusCategory::Success: return false;
    case StatusCategory::ModelFault:
        // The worker's verdicts on a candidate are the model's business. A time-out or a crash
        // is the candidate's too by category, but the supervisor had to end the worker: a run of
        // them usually means a machine in trouble, so the monitor shows them.
        return status == EvaluationStatus::Timeout || status == EvaluationStatus::Crashed ||
               status == EvaluationStatus::ResourceLimit;
    }
    return false;
}

RunSession::RunSession(const RunPlan& plan, const RunSessionEnvironment& environment, QObject* parent)
    : QObject(parent)
    , m_run(new HeadlessRun(plan, environment, this))
{
    qRegisterMetaType<RunProblem>();
    HeadlessRun* run = m_run;
    connect(run, &HeadlessRun::preparing, this, &RunSession::preparing);
    connect(run, &HeadlessRun::warning, this,
            [this](const QString& message) { addProblem(false, QString(), QStringLiteral("worker"), message); });
    connect(run, &HeadlessRun::failed, this, [this](HeadlessRun::Failure, const QString& message) {
        addProblem(true, QString(), QStringLiteral("run"), message);
    });
    connect(run, &HeadlessRun::runReady, this, [this](qint64 runId) {
        // Rows before this point are read by whoever opens the run; signals carry the ones after.
        const QList<UnitResponse> responses = store().responses(runId, 0, false);
        if (!responses.isEmpty())
            m_lastResponseId = responses.constLast().response.id;
        const QList<EvaluationRecord> evaluations = store().evaluations(runId);
        if (!evaluations.isEmpty())
            m_lastEvaluationId = evaluations.constLast().id;
        Q_EMIT runReady(runId);
    });
    connect(run, &HeadlessRun::stateChanged, this, [this](State state) {
        if (m_run->runId() > 0 && state != State::Running)
            syncStore();
        Q_EMIT stateChanged(state);
    });
    connect(run, &HeadlessRun::finished, this, &RunSession::finished);
    connect(run, &HeadlessRun::progressChanged, this, &RunSession::progressChanged);
    connect(run, &HeadlessRun::roleAnswered, this, &RunSession::syncStore);
    connect(run, &HeadlessRun::candidateEvaluated, this, &RunSession::syncStore);
    connect(run, &HeadlessRun::countsChanged, this, &RunSession::countsChanged);
    connect(run, &HeadlessRun::taskError, this, [this](const QString& task, const QString& message) {
        syncStore();
        addProblem(true, task, QStringLiteral("run"), message);
    });

    // Which unit a request serves, the controller says as it sends it.
    connect(run, &HeadlessRun::modelRequestStarted, this, [this](qint64, const QList<UnitKey>& units) {
        for (const UnitKey& unit : units)
            Q_EMIT generationStarted(unit);
    });
    connect(run, &HeadlessRun::modelRequestEnded, this, [this](qint64, const QList<UnitKey>& units) {
        syncStore(); // the answers first, then the live rows go
        for (const UnitKey& unit : units)
            Q_EMIT generationEnded(unit);
    });
    connect(run, &HeadlessRun::textStreamed, this, &RunSession::textStreamed);
    connect(run, &HeadlessRun::modelRetryScheduled, this,
            [this](qint64 id, const QList<UnitKey>& units, int attempt, int delayMs, const QString& reason) {
                addProblem(false, units.isEmpty() ? QString() : units.first().task, QStringLiteral("model"),
                           tr("%1: attempt %2 failed (%3); trying again in %4 s")
                               .arg(describe(id, units))
                               .arg(attempt)
                               .arg(reason)
                               .arg(delayMs / 1000.0, 0, 'f', 1));
            });
    connect(run, &HeadlessRun::modelRequestFailed, this,
            [this](qint64 id, const QList<UnitKey>& units, const QString& kind, const QString& message) {
                addProblem(true, units.isEmpty() ? QString() : units.first().task, QStringLiteral("model"),
                           tr("%1 failed: %2: %3").arg(describe(id, units), kind, message));
            });
}

RunSession::~RunSession() = default;

QString RunSession::stateText(State state)
{
    switch (state) {
    case State::Idle: return tr("not started");
    case State::Preparing: return tr("preparing");
    case State::Running: return tr("running");
    case State::Pausing: return tr("pausing");
    case State::Paused: return tr("paused");
    case State::Finished: return tr("finished");
    case State::Cancelled: return tr("cancelled");
    case State::Failed: return tr("failed");
    }
    return {};
}

void RunSession::addProblem(bool error, const QString& task, const QString& source, const QString& message)
{
    Q_EMIT problem(RunProblem{QDateTime::currentDateTime(), error, task, source, message});
}

QString RunSession::describe(qint64 requestId, const QList<UnitKey>& units) const
{
    if (units.isEmpty())
        return tr("model request %1").arg(requestId);
    const UnitKey& unit = units.first();
    return tr("%1 turn %2 %3").arg(unit.task).arg(unit.turn).arg(unit.role);
}

void RunSession::syncStore()
{
    const qint64 runId = m_run->runId();
    if (runId <= 0)
        return;
    for (const UnitResponse& r : store().responses(runId, m_lastResponseId)) {
        m_lastResponseId = r.response.id;
        Q_EMIT responseStored(r);
    }
    for (const EvaluationRecord& e : store().evaluationsAfter(runId, m_lastEvaluationId)) {
        m_lastEvaluationId = e.id;
        Q_EMIT evaluationStored(e);
        if (isRunProblem(e, m_run->plan().compileOnly)) {
            addProblem(true, e.task, QStringLiteral("evaluation"),
                       tr("turn %1 sample %2: %3: %4").arg(e.turn).arg(e.sample).arg(e.status, e.evaluation().message));
        }
    }
}

} // namespace kwb::app
