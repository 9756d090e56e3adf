#include "app/runs/runsession.h"

#include "core/workers/evaluationqueue.h"
#include "core/model/llmclient.h"
#include "core/study/report.h"
#include "core/run/runcontroller.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workersupervisor.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

namespace kwb::app {

/// Evaluation statuses that say something went wrong around the candidate, not in it.
bool isInfrastructureStatus(const QString& status)
{
    return status == QLatin1String("timeout") || status == QLatin1String("crashed")
           || status == QLatin1String("resource_limit") || status == QLatin1String("start_failed") || status == QLatin1String("protocol_error")
           || status == QLatin1String("bad_request");
}

namespace {

} // namespace

RunSession::RunSession(const RunPlan& plan, const RunSessionEnvironment& environment, QObject* parent)
    : QObject(parent)
    , m_plan(plan)
    , m_environment(environment)
{
    qRegisterMetaType<RunProblem>();
    m_llm = new LlmClient(this);
    LlmSettings settings = llmSettingsFor(m_plan, m_environment.apiKey);
    settings.stream = m_environment.stream;
    settings.timeoutMs = m_environment.requestTimeoutMs;
    settings.maxRetries = m_environment.maxRetries;
    settings.concurrency = m_environment.llmConcurrency;
    settings.serverSupportsN = m_environment.serverSupportsN;
    m_llm->setSettings(settings);
    // Connected before the RunController exists, so these slots run before the controller's:
    // a request's end is known here before the controller starts the next one.
    connect(m_llm, &LlmClient::textAvailable, this, [this](qint64 id, int choice, const QString& chunk) {
        settle();
        const auto it = m_live.constFind(id);
        if (it != m_live.cend() && choice >= 0 && choice < it->units.size())
            Q_EMIT textStreamed(it->units.at(choice), chunk);
    });
    connect(m_llm, &LlmClient::retryScheduled, this,
            [this](qint64 id, int attempt, int delayMs, const QString& reason) {
                settle();
                const auto it = m_live.constFind(id);
                const QString task = it != m_live.cend() && !it->units.isEmpty() ? it->units.first().task : QString();
                addProblem(false, task, QStringLiteral("model"),
                           tr("%1: attempt %2 failed (%3); trying again in %4 s")
                               .arg(describe(id))
                               .arg(attempt)
                               .arg(reason)
                               .arg(delayMs / 1000.0, 0, 'f', 1));
            });
    connect(m_llm, &LlmClient::completionFinished, this, [this](qint64 id) {
        m_knownPending = qMax(0, m_knownPending - 1);
        settle();
        // After the controller has stored the answers (its slot runs next).
        QTimer::singleShot(0, this, [this, id] { endRequest(id); });
    });
    connect(m_llm, &LlmClient::completionFailed, this, [this](qint64 id, const QString& kind, const QString& message) {
        if (m_endedUnseen > 0)
            --m_endedUnseen; // already gone from pendingCount() when it was cancelled
        else
            m_knownPending = qMax(0, m_knownPending - 1);
        settle();
        if (kind != LlmFailure::Cancelled) {
            const auto it = m_live.constFind(id);
            const QString task = it != m_live.cend() && !it->units.isEmpty() ? it->units.first().task : QString();
            addProblem(true, task, QStringLiteral("model"),
                       tr("%1 failed: %2: %3").arg(describe(id), kind, message));
        }
        QTimer::singleShot(0, this, [this, id] { endRequest(id); });
    });
}

RunSession::~RunSession()
{
    if (m_controller && m_controller->isRunning())
        m_controller->cancel();
    if (m_queue)
        m_queue->cancelAll();
    if (m_facts)
        m_facts->abort();
}

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

bool RunSession::isActive() const
{
    return m_state == State::Preparing || m_state == State::Running || m_state == State::Pausing;
}

bool RunSession::isOver() const
{
    return m_state == State::Finished || m_state == State::Cancelled || m_state == State::Failed;
}

QString RunSession::label() const
{
    if (m_runId > 0)
        return QStringLiteral("#%1 %2").arg(m_runId).arg(m_plan.runName());
    return m_plan.runName();
}

qint64 RunSession::activeMs() const
{
    return m_activeMsBefore + (m_activeClock.isValid() ? m_activeClock.elapsed() : 0);
}

std::optional<qint64> RunSession::estimatedRemainingMs() const
{
    if (m_tasksDone <= 0 || m_tasksTotal <= 0)
        return std::nullopt;
    if (m_tasksDone >= m_tasksTotal)
        return 0;
    return activeMs() * (m_tasksTotal - m_tasksDone) / m_tasksDone;
}

void RunSession::setState(State state)
{
    if (m_state == state)
        return;
    const bool wasActive = isActive();
    m_state = state;
    if (wasActive && !isActive() && m_activeClock.isValid()) {
        m_activeMsBefore += m_activeClock.elapsed();
        m_activeClock.invalidate();
    } else if (!wasActive && isActive()) {
        m_activeClock.start();
    }
    Q_EMIT stateChanged(state);
    if (isOver())
        Q_EMIT finished(state);
}

void RunSession::fail(const QString& message)
{
    m_error = message;
    addProblem(true, QString(), QStringLiteral("run"), message);
    if (m_queue)
        m_queue->cancelAll();
    if (m_factsSupervisor)
        m_factsSupervisor->stopWorker();
    setState(State::Failed);
}

void RunSession::addProblem(bool error, const QString& task, const QString& source, const QString& message)
{
    Q_EMIT problem(RunProblem{QDateTime::currentDateTime(), error, task, source, message});
}

void RunSession::start()
{
    if (m_state != State::Idle)
        return;
    setState(State::Preparing);
    if (!m_store.open(m_environment.databasePath)) {
        // From the event loop, so a caller that connects after start() still sees it.
        QTimer::singleShot(0, this, [this] { fail(m_store.errorString()); });
        return;
    }
    if (m_plan.resumeRunId > 0) {
        const std::optional<RunInfo> info = m_store.run(m_plan.resumeRunId);
        if (!info) {
            QTimer::singleShot(0, this, [this] {
                fail(tr("no run %1 in %2").arg(m_plan.resumeRunId).arg(m_environment.databasePath));
            });
            return;
        }
    }
    if (m_environment.workerProgram.isEmpty()) {
        QTimer::singleShot(0, this, [this] { fail(tr("no kwb-worker to evaluate with (set KWB_WORKER or --worker)")); });
        return;
    }
    QStringList arguments = m_environment.workerArguments;
    if (!m_environment.tasksDir.isEmpty())
        arguments << QStringLiteral("--tasks-dir") << m_environment.tasksDir;
    m_factsSupervisor = new WorkerSupervisor(this);
    m_factsSupervisor->setProgram(m_environment.workerProgram, arguments);
    m_factsSupervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
    m_factsSupervisor->setDefaultTimeout(m_environment.factsTimeoutMs);
    m_factsSupervisor->setKillGracePeriod(m_environment.killGraceMs);
    m_factsSupervisor->setLimits(m_plan.workerLimits);
    if (const QString sandbox = m_factsSupervisor->sandboxStatus(); sandbox != kSandboxBubblewrap)
        addProblem(false, QString(), QStringLiteral("worker"), tr("the worker runs without the OS sandbox: %1").arg(sandbox));
    m_facts = new RunFactsLoader(m_factsSupervisor, this);
    connect(m_facts, &RunFactsLoader::progress, this, &RunSession::preparing);
    connect(m_facts, &RunFactsLoader::warning, this,
            [this](const QString& message) { addProblem(false, QString(), QStringLiteral("worker"), message); });
    connect(m_facts, &RunFactsLoader::failed, this, [this](const QString& message) { fail(message); });
    connect(m_facts, &RunFactsLoader::loaded, this, &RunSession::onFactsLoaded);
    m_facts->load(m_plan, m_environment.tasksDir);
}

void RunSession::onFactsLoaded(const QList<RunTaskInput>& inputs, const QJsonObject& device, const QJsonObject& hello)
{
    // An idle worker would hold memory (and, after `profile`, a CUDA context) for nothing.
    m_factsSupervisor->stopWorker();
    if (m_cancelRequested) {
        setState(State::Cancelled);
        return;
    }
    m_inputs = inputs;
    for (const RunTaskInput& input : inputs)
        m_levelOf.insert(input.id(), input.level());

    // Every template renders for every task before a model request (or a run row) is spent.
    if (const QString problem = checkRunTemplates(m_plan, inputs); !problem.isEmpty())
        return fail(tr("template: %1").arg(problem));

    if (m_plan.resumeRunId > 0) {
        m_runId = m_plan.resumeRunId;
        m_store.setRunStatus(m_runId, RunStatus::Running);
    } else {
        QString error;
        const std::optional<RunConfig> config = runConfigFor(m_plan, device, hello, &error);
        if (!config)
            return fail(error);
        const std::optional<qint64> id = m_store.createRun(m_plan.runName(), m_plan.regimeLabel(), *config);
        if (!id)
            return fail(tr("cannot create the run: %1").arg(m_store.errorString()));
        m_runId = *id;
    }

    m_queue = new EvaluationQueue(m_environment.gpuOrdinals, this);
    QStringList arguments = m_environment.workerArguments;
    if (!m_environment.tasksDir.isEmpty())
        arguments << QStringLiteral("--tasks-dir") << m_environment.tasksDir;
    configureQueue(*m_queue, m_environment.workerProgram, arguments, m_plan, device);
    m_queue->setCompileWorkerCount(m_environment.compileWorkers);
    m_queue->setKillGracePeriod(m_environment.killGraceMs);

    m_controller = new RunController(m_llm, m_queue, &m_store, m_plan.promptsDir, this);
    configureController(*m_controller, m_plan);
    m_controller->setMaxTasksInFlight(m_environment.maxTasksInFlight);
    connect(m_controller, &RunController::taskStarted, this, &RunSession::onTaskStarted);
    connect(m_controller, &RunController::roleAnswered, this, &RunSession::onRoleAnswered);
    connect(m_controller, &RunController::candidateEvaluated, this, &RunSession::onCandidateEvaluated);
    connect(m_controller, &RunController::taskFinished, this, &RunSession::onTaskFinished);
    connect(m_controller, &RunController::taskError, this, &RunSession::onTaskError);
    connect(m_controller, &RunController::progress, this, &RunSession::onProgress);
    connect(m_controller, &RunController::runFinished, this, &RunSession::onRunFinished);

    // Rows before this point are read by whoever opens the run; signals carry the ones after.
    for (const UnitResponse& r : m_store.responses(m_runId)) {
        m_lastResponseId = r.response.id;
        if (r.response.error.isEmpty())
            m_answered.insert(r.unit);
    }
    const QList<EvaluationRecord> evaluations = m_store.evaluations(m_runId);
    if (!evaluations.isEmpty())
        m_lastEvaluationId = evaluations.constLast().id;
    Q_EMIT runReady(m_runId);
    startController();
}

void RunSession::startController()
{
    m_tasksTotal = int(m_inputs.size());
    m_tasksDone = 0;
    m_next.reset();
    m_knownPending = m_llm->pendingCount();
    if (!m_controller->start(m_runId, m_inputs))
        return fail(tr("the regime is not valid"));
    setState(State::Running);
}

void RunSession::pause()
{
    if (m_state != State::Running)
        return;
    settle();
    setState(State::Pausing);
    m_pauseWaits = QSet<qint64>(m_live.keyBegin(), m_live.keyEnd());
    if (m_pauseWaits.isEmpty())
        m_controller->cancel();
}

void RunSession::resume()
{
    if (m_state != State::Paused)
        return;
    m_store.setRunStatus(m_runId, RunStatus::Running);
    startController();
}

void RunSession::cancel()
{
    switch (m_state) {
    case State::Idle:
        setState(State::Cancelled);
        break;
    case State::Preparing:
        m_cancelRequested = true;
        if (m_facts && m_facts->isLoading()) {
            m_facts->abort();
            m_factsSupervisor->stopWorker();
            setState(State::Cancelled);
        }
        break;
    case State::Running:
    case State::Pausing:
        m_cancelRequested = true;
        m_controller->cancel(); // ends in onRunFinished(true)
        break;
    case State::Paused:
        setState(State::Cancelled);
        break;
    default: break;
    }
}

// ---- request attribution ----------------------------------------------------------------------

void RunSession::settle()
{
    const int now = m_llm->pendingCount();
    while (m_knownPending < now) {
        ++m_knownPending;
        const qint64 id = ++m_lastRequestId;
        LiveRequest request;
        if (m_next) {
            for (int sample : std::as_const(m_next->samples))
                request.units.append(UnitKey{m_next->task, m_next->turn, sample, m_next->role});
            m_next.reset(); // one request per prediction
        }
        m_live.insert(id, request);
        for (const UnitKey& unit : std::as_const(request.units))
            Q_EMIT generationStarted(unit);
    }
    if (m_knownPending > now) {
        // A request ended without its signal yet (a cancel is reported from the event loop).
        m_endedUnseen += m_knownPending - now;
        m_knownPending = now;
    }
}

void RunSession::scheduleSettle()
{
    if (m_settleScheduled)
        return;
    m_settleScheduled = true;
    QTimer::singleShot(0, this, [this] {
        m_settleScheduled = false;
        settle();
    });
}

QList<int> RunSession::missingSamples(const QString& task, int turn, const QString& role, int n) const
{
    QList<int> samples;
    for (int sample = 0; sample < n; ++sample)
        if (!m_answered.contains(UnitKey{task, turn, sample, role}))
            samples << sample;
    return samples;
}

void RunSession::predictNext(const QString& task, int turn, const QString& afterRole)
{
    // Mirrors RunController's turn logic: notes roles (skipped when already answered), then the
    // answer role's samples that have no answer yet; a new turn starts with the rewrite role.
    const Regime regime = m_plan.regimeForLevel(m_levelOf.value(task, taskLevel(task)));
    QStringList order;
    if (turn == 1) {
        for (const QString& role : {RegimeRole::Analyzer, RegimeRole::Researcher})
            if (regime.roles.contains(role))
                order << role;
    } else if (regime.feedback == FeedbackMode::Rewrite && !regime.rewriteRole().isEmpty()) {
        order << regime.rewriteRole();
    }
    int from = afterRole.isEmpty() ? 0 : int(order.indexOf(afterRole)) + 1;
    if (!afterRole.isEmpty() && !order.contains(afterRole))
        from = int(order.size()); // after the answer role: nothing more in this turn
    for (int i = from; i < order.size(); ++i) {
        if (!m_answered.contains(UnitKey{task, turn, 0, order.at(i)})) {
            m_next = Prediction{task, turn, order.at(i), {0}};
            return;
        }
    }
    const QString answerRole = regime.answerRole(turn);
    if (afterRole == answerRole) {
        m_next.reset();
        return;
    }
    m_next = Prediction{task, turn, answerRole, missingSamples(task, turn, answerRole, regime.n)};
}

void RunSession::endRequest(qint64 id)
{
    const auto it = m_live.find(id);
    if (it == m_live.end())
        return;
    const QList<UnitKey> units = it->units;
    m_live.erase(it);
    for (const UnitKey& unit : units)
        Q_EMIT generationEnded(unit);
    if (m_state == State::Pausing && m_pauseWaits.remove(id) && m_pauseWaits.isEmpty() && m_controller->isRunning())
        m_controller->cancel();
}

QString RunSession::describe(qint64 requestId) const
{
    const auto it = m_live.constFind(requestId);
    if (it == m_live.cend() || it->units.isEmpty())
        return tr("model request %1").arg(requestId);
    const UnitKey& unit = it->units.first();
    return tr("%1 turn %2 %3").arg(unit.task).arg(unit.turn).arg(unit.role);
}

void RunSession::syncStore()
{
    if (m_runId <= 0)
        return;
    for (const UnitResponse& r : m_store.responses(m_runId, m_lastResponseId)) {
        m_lastResponseId = r.response.id;
        if (r.response.error.isEmpty())
            m_answered.insert(r.unit);
        Q_EMIT responseStored(r);
    }
    for (const EvaluationRecord& e : m_store.evaluationsAfter(m_runId, m_lastEvaluationId)) {
        m_lastEvaluationId = e.id;
        Q_EMIT evaluationStored(e);
        if (isInfrastructureStatus(e.status)) {
            addProblem(true, e.task, QStringLiteral("evaluation"),
                       tr("turn %1 sample %2: %3: %4")
                           .arg(e.turn)
                           .arg(e.sample)
                           .arg(e.status, e.result.value(QLatin1String("message")).toString()));
        }
    }
}

// ---- the controller's signals -----------------------------------------------------------------

void RunSession::onTaskStarted(const QString& task)
{
    settle();
    predictNext(task, 1, QString());
    scheduleSettle();
}

void RunSession::onRoleAnswered(const QString& task, int turn, const QString& role, int)
{
    settle();
    syncStore();
    predictNext(task, turn, role);
    scheduleSettle();
}

void RunSession::onCandidateEvaluated(const QString& task, int turn, int, const QString& status)
{
    settle();
    ++m_evaluated;
    if (status == QLatin1String("correct"))
        ++m_correct;
    syncStore();
    Q_EMIT countsChanged();
    predictNext(task, turn + 1, QString());
    scheduleSettle();
}

void RunSession::onTaskFinished(const QString&, const QString&)
{
    settle();
    m_next.reset();
}

void RunSession::onTaskError(const QString& task, const QString& message)
{
    settle();
    syncStore();
    addProblem(true, task, QStringLiteral("run"), message);
    m_next.reset();
}

void RunSession::onProgress(int done, int total)
{
    settle();
    m_tasksDone = done;
    m_tasksTotal = total;
    Q_EMIT progressChanged(done, total);
}

void RunSession::onRunFinished(bool cancelled)
{
    settle();
    syncStore();
    m_queue->cancelAll();
    // Requests cancelled with the controller end without their units being answered.
    const QList<qint64> live = m_live.keys();
    for (qint64 id : live)
        endRequest(id);
    m_next.reset();
    m_knownPending = m_llm->pendingCount();
    m_endedUnseen = 0;
    if (!cancelled) {
        setState(State::Finished);
    } else if (m_state == State::Pausing && !m_cancelRequested) {
        setState(State::Paused);
    } else {
        setState(State::Cancelled);
    }
}

} // namespace kwb::app
