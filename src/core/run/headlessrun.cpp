#include "core/run/headlessrun.h"

#include <QMap>

#include "core/model/tokencounter.h"

#include "core/model/llmclient.h"
#include "core/protocol/evaluationstatus.h"
#include "core/protocol/workerresponses.h"
#include "core/run/runcontroller.h"
#include "core/run/runname.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/gpulease.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workersupervisor.h"

#include <QTimer>

#include <algorithm>

namespace kwb {

HeadlessRun::HeadlessRun(const RunPlan& plan, const RunEnvironment& environment, QObject* parent)
    : QObject(parent)
    , m_plan(plan)
    , m_environment(environment)
{
    m_llm = new LlmClient(this);
    LlmSettings settings = llmSettingsFor(m_plan, m_environment.apiKey);
    settings.stream = m_environment.stream;
    settings.timeoutMs = m_environment.requestTimeoutMs;
    settings.maxRetries = m_environment.maxRetries;
    settings.concurrency = m_environment.llmConcurrency;
    settings.serverSupportsN = m_environment.serverSupportsN;
    m_llm->setSettings(settings);
    // Connected before the RunController exists, so these slots run before the controller's: a
    // failed request's units are still known here when it is reported.
    connect(m_llm, &LlmClient::textAvailable, this, [this](qint64 id, int choice, const QString& chunk) {
        const auto it = m_live.constFind(id);
        if (it != m_live.cend() && choice >= 0 && choice < it->size())
            Q_EMIT textStreamed(it->at(choice), chunk);
    });
    connect(m_llm, &LlmClient::retryScheduled, this,
            [this](qint64 id, int attempt, int delayMs, const QString& reason) {
                Q_EMIT modelRetryScheduled(id, m_live.value(id), attempt, delayMs, reason);
            });
    connect(m_llm, &LlmClient::completionFailed, this, [this](qint64 id, const QString& kind, const QString& message) {
        if (kind != LlmFailure::Cancelled && m_live.contains(id))
            Q_EMIT modelRequestFailed(id, m_live.value(id), kind, message);
    });
}

HeadlessRun::~HeadlessRun()
{
    if (m_controller && m_controller->isRunning())
        m_controller->cancel();
    if (m_queue)
        m_queue->cancelAll();
    if (m_facts)
        m_facts->abort();
}

int HeadlessRun::compileWorkers() const
{
    return m_environment.compileWorkers == RunEnvironment::kAutomatic ? defaultCompileWorkers(m_plan.answerFormat)
                                                                      : std::max(0, m_environment.compileWorkers);
}

int HeadlessRun::evaluationsPerGpu() const
{
    const bool local =
        m_environment.workers.isEmpty() || std::any_of(m_environment.workers.begin(), m_environment.workers.end(),
                                                       [](const WorkerTarget& w) { return !w.isRemote(); });
    if (!local)
        return EvaluationQueue::kDefaultEvaluationsPerGpu;
    const int asked = m_environment.evaluationsPerGpu == RunEnvironment::kAutomatic
                          ? defaultEvaluationsPerGpu(m_plan.answerFormat)
                          : m_environment.evaluationsPerGpu;
    return std::clamp(asked, 1, EvaluationQueue::kMaxEvaluationsPerGpu);
}

int HeadlessRun::tasksInFlight() const
{
    if (m_environment.maxTasksInFlight > 0)
        return m_environment.maxTasksInFlight;
    // The fewest candidates a turn gives, over the regimes the run's tasks use.
    int samples = m_plan.regime.n;
    for (const Regime& regime : m_plan.levelRegimes)
        samples = std::min(samples, regime.n);
    // Each evaluation slot keeps a task busy as a GPU does (a remote target has one).
    int gpus = int(m_environment.gpuOrdinals.size()) * evaluationsPerGpu();
    if (!m_environment.workers.isEmpty()) {
        gpus = 0;
        for (const WorkerTarget& w : m_environment.workers)
            gpus += w.isRemote() ? 1 : evaluationsPerGpu();
    }
    return defaultTasksInFlight(compileWorkers(), gpus, samples);
}

bool HeadlessRun::isActive() const
{
    return m_state == State::Preparing || m_state == State::Running || m_state == State::Pausing;
}

bool HeadlessRun::isOver() const
{
    return m_state == State::Finished || m_state == State::Cancelled || m_state == State::Failed;
}

QString HeadlessRun::label() const
{
    if (m_runId > 0) {
        // The name every page gives the run (runname.h), from what the store holds of it.
        if (const std::optional<RunInfo> info = m_store.run(m_runId))
            return runLabel(*info);
        return QStringLiteral("#%1 %2").arg(m_runId).arg(m_plan.runName());
    }
    return m_plan.runName();
}

QMap<QString, CandidateOutcome> HeadlessRun::selected() const
{
    return m_controller ? m_controller->selected() : QMap<QString, CandidateOutcome>();
}

qint64 HeadlessRun::activeMs() const
{
    return m_activeMsBefore + (m_activeClock.isValid() ? m_activeClock.elapsed() : 0);
}

std::optional<qint64> HeadlessRun::estimatedRemainingMs() const
{
    if (m_tasksDone <= 0 || m_tasksTotal <= 0)
        return std::nullopt;
    if (m_tasksDone >= m_tasksTotal)
        return 0;
    return activeMs() * (m_tasksTotal - m_tasksDone) / m_tasksDone;
}

void HeadlessRun::setState(State state)
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

void HeadlessRun::fail(Failure failure, const QString& message)
{
    m_failure = failure;
    m_error = message;
    if (m_queue)
        m_queue->cancelAll();
    if (m_factsSupervisor)
        m_factsSupervisor->stopWorker();
    Q_EMIT failed(failure, message);
    setState(State::Failed);
}

void HeadlessRun::failLater(Failure failure, const QString& message)
{
    // From the event loop, so a caller that connects after start() still sees it.
    QTimer::singleShot(0, this, [this, failure, message] { fail(failure, message); });
}

void HeadlessRun::start()
{
    if (m_state != State::Idle)
        return;
    setState(State::Preparing);
    if (!m_store.open(m_environment.databasePath, OpenOptions{OpenOptions::Access::Write, false}))
        return failLater(Failure::Database, m_store.errorString());
    if (m_plan.resumeRunId > 0 && !m_store.run(m_plan.resumeRunId))
        return failLater(Failure::UnknownRun,
                         QStringLiteral("no run %1 in %2").arg(m_plan.resumeRunId).arg(m_environment.databasePath));
    if (m_environment.workerProgram.isEmpty())
        return failLater(Failure::NoWorker,
                         QStringLiteral("no kwb-worker to evaluate with (set KWB_WORKER or --worker)"));
    QStringList arguments = m_environment.workerArguments;
    if (!m_environment.tasksDir.isEmpty())
        arguments << QStringLiteral("--tasks-dir") << m_environment.tasksDir;
    m_factsSupervisor = new WorkerSupervisor(this);
    m_factsSupervisor->setProgram(m_environment.workerProgram, arguments);
    m_factsSupervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
    m_factsSupervisor->setDefaultTimeout(m_environment.factsTimeoutMs);
    m_factsSupervisor->setKillGracePeriod(m_environment.killGraceMs);
    m_factsSupervisor->setLimits(m_plan.workerLimits);
    if (!m_environment.workers.isEmpty())
        m_factsSupervisor->setTarget(m_environment.workers.first());
    if (const QString text = sandboxWarning(m_factsSupervisor->sandboxStatus()); !text.isEmpty()) {
        // From the event loop, so a caller that connects after start() still sees it.
        QTimer::singleShot(0, this, [this, text] { Q_EMIT warning(text); });
    }
    m_facts = new RunFactsLoader(m_factsSupervisor, this);
    connect(m_facts, &RunFactsLoader::progress, this, &HeadlessRun::preparing);
    connect(m_facts, &RunFactsLoader::warning, this, &HeadlessRun::warning);
    connect(m_facts, &RunFactsLoader::failed, this, [this](const QString& message) {
        fail(m_facts->lastFailure() == RunFactsLoader::Failure::UnknownTask ? Failure::UnknownTask : Failure::Worker,
             message);
    });
    connect(m_facts, &RunFactsLoader::loaded, this, &HeadlessRun::onFactsLoaded);
    m_facts->load(m_plan, m_environment.tasksDir);
}

void HeadlessRun::onFactsLoaded(const QList<RunTaskInput>& inputs, const DeviceFacts& device, const HelloInfo& hello)
{
    // An idle worker would hold memory (and, after `profile`, a CUDA context) for nothing.
    m_factsSupervisor->stopWorker();
    if (m_cancelRequested) {
        setState(State::Cancelled);
        return;
    }
    m_inputs = inputs;
    // The facts loader leaves KernelBench-only tasks out (runlaunch.cpp): the run records the
    // tasks it runs.
    m_plan.taskIds.clear();
    for (const RunTaskInput& input : inputs)
        m_plan.taskIds << input.id();

    // The profile is checked against the worker's own table (hello), before anything is spent.
    if (const QString problem = hello.unknownProfileError(m_plan.profile); !problem.isEmpty())
        return fail(Failure::Profile, problem);
    // A run needs an evaluator: without a GPU only a compile-only run goes on.
    if (!m_plan.compileOnly)
        if (const QString why = noEvaluatorReason(hello, device); !why.isEmpty())
            return fail(Failure::NoEvaluator,
                        QStringLiteral("no GPU can evaluate: %1; nothing was asked of the model. Use a machine "
                                       "with a GPU, or run compile-only (--compile-only) to check that answers "
                                       "compile and pass the sandbox, without measuring correctness")
                            .arg(why));

    // Every template renders for every task before a model request (or a run row) is spent.
    if (const QString problem =
            RunController::checkTemplates(m_plan.promptsDir, m_plan.regime, m_plan.levelRegimes, inputs);
        !problem.isEmpty())
        return fail(Failure::Templates, QStringLiteral("template: %1").arg(problem));
    countPrompts(device, hello);
}

void HeadlessRun::countPrompts(const DeviceFacts& device, const HelloInfo& hello)
{
    // Where the server has a tokenizer, its count decides (docs/prompts.md §Context budget); a
    // server without one leaves it to the estimate (checkRunTemplates).
    const ContextBudget budget = contextBudgetFor(m_plan);
    if (!budget.enabled())
        return createAndStart(device, hello);
    auto planned = std::make_shared<QHash<qint64, PlannedPrompt>>();
    auto* counter = new TokenCounter(this);
    counter->setServer(QUrl(m_plan.endpoint), m_plan.model, m_environment.apiKey);
    for (const RunTaskInput& input : std::as_const(m_inputs))
        for (const PlannedPrompt& p :
             RunController::plannedPrompts(m_plan.promptsDir, m_plan.regimeForLevel(input.level()), input))
            planned->insert(counter->count(p.text), p);
    auto done = std::make_shared<bool>(false);
    const auto finish = [this, counter, done, device, hello](const QString& problem) {
        if (*done)
            return;
        *done = true;
        counter->deleteLater();
        if (!problem.isEmpty())
            return fail(Failure::Templates, QStringLiteral("template: %1").arg(problem));
        if (m_cancelRequested) {
            setState(State::Cancelled);
            return;
        }
        createAndStart(device, hello);
    };
    // Replies may come in any order: once all are in, the first prompt over budget in the plan's
    // order (the counter's ids grow with it) is the one named, whatever the server answered first.
    auto over = std::make_shared<QMap<qint64, QString>>();
    connect(counter, &TokenCounter::counted, this, [planned, over, budget, finish](qint64 id, int tokens) {
        const PlannedPrompt p = planned->take(id);
        const int worst = p.budgetTokens(tokens, budget);
        if (!budget.fits(worst))
            over->insert(id, budget.overBudget(p.task, p.turn, p.role, p.templatePath, worst, true));
        if (planned->isEmpty())
            finish(over->isEmpty() ? QString() : over->first());
    });
    // No warning: a server without /tokenize is common (Ollama), and every over-budget message
    // says whether its count was the server's or the estimate.
    connect(counter, &TokenCounter::failed, this,
            [this, finish](qint64, const QString&) { finish(checkRunTemplates(m_plan, m_inputs)); });
    if (planned->isEmpty())
        finish(QString());
}

void HeadlessRun::createAndStart(const DeviceFacts& device, const HelloInfo& hello)
{
    if (m_plan.resumeRunId > 0) {
        m_runId = m_plan.resumeRunId;
        m_store.setRunStatus(m_runId, RunStatus::Running);
    } else {
        // A new run keeps its whole configuration.
        QString error;
        std::optional<RunConfig> config = runConfigFor(m_plan, device, hello, &error);
        if (!config)
            return fail(Failure::Configuration, error);
        // How it was run, beside what it is: a run's pace depends on it (issue 14).
        config->compileWorkers = compileWorkers();
        if (evaluationsPerGpu() != EvaluationQueue::kDefaultEvaluationsPerGpu)
            config->evaluationsPerGpu = evaluationsPerGpu();
        const std::optional<qint64> id = m_store.createRun(m_plan.runName(), m_plan.regimeLabel(), config->toJson());
        if (!id)
            return fail(Failure::CreateRun, QStringLiteral("cannot create the run: %1").arg(m_store.errorString()));
        m_runId = *id;
    }

    m_queue = m_environment.workers.isEmpty() ? new EvaluationQueue(m_environment.gpuOrdinals, this)
                                              : new EvaluationQueue(m_environment.workers, this);
    connect(m_queue, &EvaluationQueue::workerLost, this, [this](const QString& location, const QString& reason) {
        Q_EMIT warning(QStringLiteral("worker %1 is lost, its work goes to the others: %2").arg(location, reason));
    });
    QStringList arguments = m_environment.workerArguments;
    if (!m_environment.tasksDir.isEmpty())
        arguments << QStringLiteral("--tasks-dir") << m_environment.tasksDir;
    configureQueue(*m_queue, m_environment.workerProgram, arguments, m_plan, device);
    m_queue->setCompileWorkerCount(compileWorkers());
    m_queue->setEvaluationsPerGpu(evaluationsPerGpu());
    m_queue->setKillGracePeriod(m_environment.killGraceMs);

    m_controller = new RunController(m_llm, m_queue, &m_store, m_plan.promptsDir, this);
    configureController(*m_controller, m_plan);
    m_controller->setMaxTasksInFlight(tasksInFlight());
    m_controller->setPauseGenerationWhileTiming(m_plan.pauseGenerationWhileTiming);
    if (m_plan.pauseGenerationWhileTiming)
        connect(GpuLeases::instance(), &GpuLeases::heldChanged, m_controller,
                [this](int, bool) { updateGenerationPause(); });
    connect(m_controller, &RunController::modelRequestStarted, this, [this](qint64 id, const QList<UnitKey>& units) {
        m_live.insert(id, units);
        Q_EMIT modelRequestStarted(id, units);
    });
    connect(m_controller, &RunController::modelRequestEnded, this, &HeadlessRun::onRequestEnded);
    connect(m_controller, &RunController::taskStarted, this, &HeadlessRun::taskStarted);
    connect(m_controller, &RunController::roleAnswered, this, &HeadlessRun::roleAnswered);
    connect(m_controller, &RunController::candidateEvaluated, this,
            [this](const QString& task, int turn, int sample, const QString& status) {
                ++m_evaluated;
                if (evaluationStatusFromWire(status) == EvaluationStatus::Correct)
                    ++m_correct;
                Q_EMIT candidateEvaluated(task, turn, sample, status);
                Q_EMIT countsChanged();
            });
    connect(m_controller, &RunController::taskFinished, this, &HeadlessRun::taskFinished);
    connect(m_controller, &RunController::taskError, this, &HeadlessRun::taskError);
    connect(m_controller, &RunController::progress, this, [this](int done, int total) {
        m_tasksDone = done;
        m_tasksTotal = total;
        Q_EMIT progressChanged(done, total);
    });
    connect(m_controller, &RunController::runFinished, this, &HeadlessRun::onRunFinished);

    Q_EMIT runReady(m_runId);
    startController();
}

void HeadlessRun::updateGenerationPause()
{
    // Paused while anything in this process holds one of the run's GPUs: its own evaluations, and
    // the window's ceilings or traffic measurements.
    bool held = false;
    for (const int gpu : std::as_const(m_environment.gpuOrdinals))
        held = held || GpuLeases::instance()->isHeld(gpu);
    if (m_controller)
        m_controller->setGenerationPaused(m_plan.pauseGenerationWhileTiming && held);
}

void HeadlessRun::startController()
{
    m_tasksTotal = int(m_inputs.size());
    m_tasksDone = 0;
    if (!m_controller->start(m_runId, m_inputs))
        return fail(Failure::Regime, QStringLiteral("the regime is not valid"));
    updateGenerationPause();
    setState(State::Running);
}

void HeadlessRun::pause()
{
    if (m_state != State::Running)
        return;
    setState(State::Pausing);
    m_controller->holdModelRequests();
    m_pauseWaits = QSet<qint64>(m_live.keyBegin(), m_live.keyEnd());
    if (m_pauseWaits.isEmpty())
        m_controller->cancel();
}

void HeadlessRun::resume()
{
    if (m_state != State::Paused)
        return;
    m_store.setRunStatus(m_runId, RunStatus::Running);
    startController();
}

void HeadlessRun::cancel()
{
    switch (m_state) {
    case State::Idle: setState(State::Cancelled); break;
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
    case State::Paused: setState(State::Cancelled); break;
    default: break;
    }
}

void HeadlessRun::onRequestEnded(qint64 id)
{
    const QList<UnitKey> units = m_live.take(id);
    Q_EMIT modelRequestEnded(id, units);
    if (m_state == State::Pausing && m_pauseWaits.remove(id) && m_pauseWaits.isEmpty()) {
        // From the event loop: the controller is still inside its completion handler.
        QTimer::singleShot(0, this, [this] {
            if (m_state == State::Pausing && m_controller->isRunning())
                m_controller->cancel();
        });
    }
}

void HeadlessRun::onRunFinished(bool cancelled)
{
    m_queue->cancelAll();
    m_live.clear(); // the controller said each cancelled request ended
    m_pauseWaits.clear();
    if (!cancelled) {
        setState(State::Finished);
    } else if (m_state == State::Pausing && !m_cancelRequested) {
        setState(State::Paused);
    } else {
        setState(State::Cancelled);
    }
}

} // namespace kwb
