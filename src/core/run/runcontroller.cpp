#include "core/run/runcontroller.h"

#include "core/model/llmclient.h"
#include "core/protocol/modeltext.h"
#include "core/protocol/workerresponses.h"
#include "core/workers/evaluationqueue.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QSet>
#include <QTimer>

#include <algorithm>

namespace kwb {

namespace {

// What the model answered, its reasoning section left out (core/protocol/modeltext.h): what a
// later prompt is shown of an answer or a notes role's text.
QString withoutReasoning(const QString& response)
{
    return QString::fromStdString(answerAfterReasoning(response.toStdString()));
}

QJsonValue textOrFalse(const QString& text)
{
    return text.isEmpty() ? QJsonValue(false) : QJsonValue(text);
}

} // namespace

QString RunTaskInput::id() const
{
    const QString id = decodeTaskSpec(task).id;
    return id.isEmpty() ? decodeAnalyze(analyze).task : id;
}

int RunTaskInput::level() const
{
    const int level = decodeTaskSpec(task).level;
    if (level > 0)
        return level;
    // "L2/1"
    const QString tid = id();
    if (tid.startsWith(QLatin1Char('L')))
        return tid.mid(1, tid.indexOf(QLatin1Char('/')) - 1).toInt();
    return 0;
}

RunController::RunController(LlmClient* llm, EvaluationQueue* queue, RunStore* store, const QString& promptsDir,
                             QObject* parent)
    : QObject(parent)
    , m_llm(llm)
    , m_queue(queue)
    , m_store(store)
    , m_renderer(promptsDir)
{
    connect(m_llm, &LlmClient::completionFinished, this, &RunController::onCompletionFinished);
    connect(m_llm, &LlmClient::completionFailed, this, &RunController::onCompletionFailed);
    connect(m_queue, &EvaluationQueue::jobFinished, this,
            [this](qint64 jobId, const EvaluationResult& evaluation) { onJobFinished(jobId, evaluation.raw); });
    connect(m_queue, &EvaluationQueue::jobFailed, this, &RunController::onJobFailed);
    connect(m_queue, &EvaluationQueue::jobBuiltAhead, this, [this](qint64 jobId) {
        if (!m_jobTask.contains(jobId))
            return;
        m_builtAhead.insert(jobId);
        pump();
    });
    connect(m_queue, &EvaluationQueue::jobStarted, this, [this](qint64 jobId) { m_builtAhead.remove(jobId); });
}

RunController::~RunController() = default;

namespace {

/// The key of an answer for evaluate-identical-once: its task and its exact text.
QString identityKey(const QString& task, const QString& answer)
{
    return task + QChar(0) + answer;
}

/// Where a stored evaluation keeps the digest of the task definition it was judged against.
constexpr const char* kTaskDigestKey = "task_digest";

/// SHA-256 of a task's `tasks` entry (its forward, inputs, parameters, shapes, tolerance, reference):
/// a task id alone does not say that a user's task file was not edited between two runs.
QString taskDigest(const QJsonObject& task)
{
    return QString::fromLatin1(
        QCryptographicHash::hash(QJsonDocument(task).toJson(QJsonDocument::Compact), QCryptographicHash::Sha256)
            .toHex());
}

} // namespace

bool RunController::start(qint64 runId, const QList<RunTaskInput>& tasks)
{
    if (m_running || !m_regime.isValid())
        return false;
    for (const Regime& r : std::as_const(m_levelRegimes))
        if (!r.isValid())
            return false;
    m_runId = runId;
    m_tasks = tasks;
    m_next = 0;
    m_done = 0;
    m_running = true;
    m_cancelled = false;
    m_holdRequests = false;
    m_selected.clear();
    m_storedEvaluations.clear();
    // A machine fault (no_device outside a compile-only run, start_failed, worker_lost,
    // protocol_error) says nothing about the candidate: its unit is evaluated again, from the
    // stored answer.
    for (const EvaluationRecord& e : m_store->evaluations(runId))
        if (!isMachineFault(e.status, isCompileOnly()))
            m_storedEvaluations.insert(UnitKey{e.task, e.turn, e.sample, e.role}, e);
    m_storedAnswers = m_store->answeredUnits(runId);
    m_identical.clear();
    m_identicalJob.clear();
    m_evaluationsReused = 0;
    m_taskDigests.clear();
    for (const RunTaskInput& input : std::as_const(m_tasks))
        m_taskDigests.insert(input.id(), taskDigest(input.task));
    if (m_evaluateIdenticalOnce) {
        // A resumed run reuses what it evaluated before; with identical_across_runs, then what the
        // store's runs of the same evaluation settings did (this run's own verdicts win).
        seedIdentical(runId);
        const std::optional<RunInfo> self = m_identicalAcrossRuns ? m_store->run(runId) : std::nullopt;
        if (self) {
            for (const RunInfo& other : m_store->runs())
                if (other.id != runId && RunConfig::sameEvaluationSettings(self->config, other.config))
                    seedIdentical(other.id);
        }
    }
    QTimer::singleShot(0, this, [this] {
        Q_EMIT progress(0, int(m_tasks.size()));
        pump();
    });
    return true;
}

QList<PlannedPrompt> RunController::plannedPrompts(const QString& promptsDir, const Regime& regime,
                                                   const RunTaskInput& input)
{
    const PromptRenderer renderer(promptsDir);
    QList<PlannedPrompt> out;
    TaskState state;
    state.input = input;
    state.regime = regime;
    // Every section a later turn may open: the notes of earlier roles and a failed candidate.
    // A model's text is kPlaceholderModelText (it may be up to max_tokens long: budgetTokens()
    // adds that), the evaluator's is kPlaceholderEvaluatorText.
    const auto render = [&](const QString& role, const QString& path, int modelTexts) {
        PlannedPrompt p;
        p.task = input.id();
        p.turn = state.turn;
        p.role = role;
        p.templatePath = path;
        p.modelTexts = modelTexts;
        const auto r = renderer.render(path, context(&state));
        if (r.ok)
            p.text = r.text;
        else
            p.error = r.error;
        out.append(p);
        return r.ok;
    };
    state.turn = 1;
    int notes = 0;
    for (const QString& role : {RegimeRole::Analyzer, RegimeRole::Researcher}) {
        if (!regime.roles.contains(role))
            continue;
        if (!render(role, regime.roles.value(role), notes))
            return out;
        (role == RegimeRole::Analyzer ? state.analysis : state.research) = kPlaceholderModelText;
        ++notes;
    }
    if (!render(regime.answerRole(1), regime.answerTemplate(1), notes))
        return out;
    if (regime.feedback == FeedbackMode::None)
        return out;
    const QString rewrite = regime.feedback == FeedbackMode::Rewrite ? regime.rewriteRole() : QString();
    for (int turn = 2; turn <= regime.turns; ++turn) {
        state.turn = turn;
        state.rewrite.clear();
        state.feedback = QJsonObject{
            {QStringLiteral("status"), wireName(EvaluationStatus::Incorrect)},
            {QStringLiteral("stage"), QStringLiteral("correctness")},
            {QStringLiteral("message"), kPlaceholderEvaluatorText},
            {QStringLiteral("log"), kPlaceholderEvaluatorText},
            {QStringLiteral("compile"), QJsonObject{{QStringLiteral("log"), kPlaceholderEvaluatorText}}},
            {QStringLiteral("correctness"), QJsonObject{{QStringLiteral("passed"), 0}, {QStringLiteral("trials"), 1}}},
            {QStringLiteral("speedup"), 1.0},
            {kFeedbackAnswerKey, kPlaceholderModelText},
        };
        const int before = notes + 1; // the notes of turn 1 and the previous answer
        if (!rewrite.isEmpty()) {
            if (!render(rewrite, regime.roles.value(rewrite), before))
                return out;
            state.rewrite = kPlaceholderModelText;
        }
        if (!render(regime.answerRole(turn), regime.answerTemplate(turn), before + (rewrite.isEmpty() ? 0 : 1)))
            return out;
    }
    return out;
}

int PlannedPrompt::budgetTokens(int promptTokens, const ContextBudget& budget) const
{
    // The placeholders' own tokens stay counted: a small over-estimate, on the safe side.
    return promptTokens + modelTexts * budget.maxOutputTokens;
}

QString RunController::checkTemplates(const QString& promptsDir, const Regime& fallback,
                                      const QMap<int, Regime>& levelRegimes, const QList<RunTaskInput>& tasks,
                                      const ContextBudget& budget)
{
    for (const RunTaskInput& input : tasks) {
        const Regime& regime = levelRegimes.value(input.level(), fallback);
        for (const PlannedPrompt& p : plannedPrompts(promptsDir, regime, input)) {
            if (!p.error.isEmpty())
                return input.id() + QStringLiteral(": ") + p.error;
            const int tokens = p.budgetTokens(estimateTokens(p.text), budget);
            if (!budget.fits(tokens))
                return budget.overBudget(p.task, p.turn, p.role, p.templatePath, tokens, false) +
                       (p.modelTexts ? QStringLiteral(", with the %1 earlier model texts it holds at max output "
                                                      "tokens each")
                                           .arg(p.modelTexts)
                                     : QString());
        }
    }
    return {};
}

void RunController::cancel()
{
    if (!m_running || m_cancelled)
        return;
    m_cancelled = true;
    const auto requests = m_requestTask.keys();
    const auto jobs = m_jobTask.keys();
    m_requestTask.clear();
    m_jobTask.clear();
    for (qint64 id : requests)
        cancelRequest(id);
    for (qint64 id : jobs)
        if (id > 0) // not a follower of an identical answer (evaluate identical once)
            m_queue->cancel(id);
    m_active.clear();
    m_builtAhead.clear();
    m_store->setRunStatus(m_runId, RunStatus::Cancelled);
    QTimer::singleShot(0, this, [this] {
        m_running = false;
        Q_EMIT runFinished(true);
    });
}

RunController::TaskState* RunController::stateFor(int index)
{
    const auto it = m_active.find(index);
    return it == m_active.end() ? nullptr : it->second.get();
}

void RunController::pump()
{
    if (m_cancelled)
        return;
    // A task whose candidates are built and wait for the GPU is not counted against the window,
    // so the compile workers go on building the next tasks' answers (a KernelBench-format build
    // takes tens of seconds, its evaluation a few); the started tasks stay bounded.
    const auto busy = [this] {
        return std::count_if(m_active.cbegin(), m_active.cend(),
                             [this](const auto& entry) { return !waitsOnlyForGpu(*entry.second); });
    };
    while (m_next < m_tasks.size() && int(m_active.size()) < maxTasksStarted() && busy() < m_maxInFlight)
        startTask(m_next++);
    maybeFinishRun();
}

bool RunController::waitsOnlyForGpu(const TaskState& state) const
{
    if (state.llmRequest != 0 || state.deferred || state.jobs.isEmpty())
        return false;
    for (auto it = state.jobs.cbegin(); it != state.jobs.cend(); ++it)
        if (it.key() > 0 && !m_builtAhead.contains(it.key())) // > 0: the queue's (else a follower's)
            return false;
    return true;
}

void RunController::maybeFinishRun()
{
    if (!m_running || m_cancelled || !m_active.empty() || m_next < m_tasks.size())
        return;
    m_running = false;
    m_store->setRunStatus(m_runId, RunStatus::Finished);
    Q_EMIT runFinished(false);
}

void RunController::startTask(int index)
{
    auto state = std::make_unique<TaskState>();
    state->index = index;
    state->input = m_tasks[index];
    state->regime = regimeFor(state->input);
    for (const QString& role : {RegimeRole::Analyzer, RegimeRole::Researcher})
        if (state->regime.roles.contains(role))
            state->notesQueue << role;
    TaskState* s = state.get();
    m_active[index] = std::move(state);
    Q_EMIT taskStarted(s->input.id());
    advance(s);
}

QJsonObject RunController::context(const TaskState* state)
{
    return context(state->input, state->regime,
                   TurnNotes{state->turn, state->feedback, state->analysis, state->research, state->rewrite});
}

QJsonObject RunController::context(const RunTaskInput& in, const Regime& regime, const TurnNotes& notes)
{
    QJsonObject c = PromptRenderer::buildContext(in.task, in.analyze, regime.useProfile ? in.profile : QJsonObject(),
                                                 in.device, notes.feedback, in.protocolProfile);
    c.insert(QStringLiteral("analysis"), textOrFalse(notes.analysis));
    c.insert(QStringLiteral("research"), textOrFalse(notes.research));
    const bool critic = regime.rewriteRole() == RegimeRole::Critic;
    const bool rewrite = regime.feedback == FeedbackMode::Rewrite;
    c.insert(QStringLiteral("diagnosis"), textOrFalse(rewrite && !critic ? notes.rewrite : QString()));
    c.insert(QStringLiteral("critique"), textOrFalse(rewrite && critic ? notes.rewrite : QString()));
    c.insert(QStringLiteral("turn"), QString::number(notes.turn));
    c.insert(QStringLiteral("max_turns"), QString::number(regime.turns));
    c.insert(QStringLiteral("competence"), regime.competenceGuidance());
    return c;
}

QString RunController::templateHash(const QString& templatePath)
{
    const auto it = m_templateHashes.constFind(templatePath);
    if (it != m_templateHashes.cend())
        return *it;
    QFile f(QDir(m_renderer.promptsDir()).filePath(templatePath));
    const QString hash = f.open(QIODevice::ReadOnly) ? sha256Hex(QString::fromUtf8(f.readAll())) : QString();
    m_templateHashes.insert(templatePath, hash);
    return hash;
}

bool RunController::renderFor(TaskState* state, const QString& role, QString* text)
{
    const QString path = role == state->regime.answerRole(state->turn) ? state->regime.answerTemplate(state->turn)
                                                                       : state->regime.roles.value(role);
    const auto r = m_renderer.render(path, context(state));
    if (!r.ok) {
        finishTask(state, r.error);
        return false;
    }
    // Measured before it is sent: over the budget, the task fails here, nothing is cut.
    if (const int tokens = estimateTokens(r.text); !m_budget.fits(tokens)) {
        finishTask(state, m_budget.overBudget(state->input.id(), state->turn, role, path, tokens, false));
        return false;
    }
    state->llmTemplate = path;
    *text = r.text;
    return true;
}

void RunController::requestModel(TaskState* state, const QString& role, const QString& prompt,
                                 const QList<int>& samples)
{
    if (m_holdRequests) {
        state->llmRequest = -1; // waiting: the task's turn is not done, nothing is sent
        return;
    }
    state->llmRole = role;
    state->llmPrompt = prompt;
    state->llmSamples = samples;
    if (m_generationPaused) {
        state->llmRequest = -1; // sent by setGenerationPaused(false)
        state->deferred = true;
        return;
    }
    state->deferred = false;
    LlmSettings settings = m_llm->settings();
    settings.n = int(samples.size());
    // Sample k of turn t is always asked with modelSeedFor(base, t, k), whatever else the request
    // holds (a resume's missing samples, another n of a sweep): runs of a sweep draw the same
    // samples, and a retry does not replay the turn before.
    settings.sampleSeeds.clear();
    for (int sample : samples)
        if (const auto seed = sampleSeed(state, sample))
            settings.sampleSeeds.append(*seed);
    if (state->regime.temperature)
        settings.temperature = state->regime.temperature;
    state->llmRequest = m_llm->complete({ChatMessage{QStringLiteral("user"), prompt}}, settings);
    m_requestTask.insert(state->llmRequest, state->index);
    ++m_modelRequests;
    QList<UnitKey> units;
    for (int sample : samples)
        units.append(UnitKey{state->input.id(), state->turn, sample, role});
    Q_EMIT modelRequestStarted(state->llmRequest, units);
}

std::optional<qint64> RunController::sampleSeed(const TaskState* state, int sample) const
{
    // The base is the run's model seed (runlaunch: asked for, else the regime's), else this
    // task's regime's.
    const std::optional<qint64> base = m_llm->settings().seed ? m_llm->settings().seed : state->regime.seed;
    if (!base)
        return std::nullopt;
    return modelSeedFor(*base, state->turn, sample, m_seedTurnStride);
}

void RunController::setGenerationPaused(bool paused)
{
    m_generationPaused = paused;
    if (paused || !m_running)
        return;
    QList<TaskState*> waiting;
    for (auto& [index, state] : m_active)
        if (state->deferred)
            waiting.append(state.get());
    for (TaskState* state : std::as_const(waiting))
        requestModel(state, state->llmRole, state->llmPrompt, state->llmSamples);
}

void RunController::cancelRequest(qint64 requestId)
{
    m_llm->cancel(requestId);
    requestEnded(requestId);
}

void RunController::requestEnded(qint64 requestId)
{
    Q_EMIT modelRequestEnded(requestId);
}

void RunController::advance(TaskState* state)
{
    const QString tid = state->input.id();
    while (!state->notesQueue.isEmpty()) {
        const QString role = state->notesQueue.takeFirst();
        const auto stored = m_storedAnswers.constFind(UnitKey{tid, state->turn, 0, role});
        QString text;
        if (stored != m_storedAnswers.cend()) {
            text = stored->text;
        } else {
            QString prompt;
            if (!renderFor(state, role, &prompt))
                return;
            requestModel(state, role, prompt, {0});
            return; // continues in onCompletionFinished
        }
        storeNotes(state, role, text);
    }
    generate(state);
}

void RunController::storeNotes(TaskState* state, const QString& role, const QString& response)
{
    // A notes role's text feeds the next prompt: the analyzer's and researcher's within the turn,
    // the triager's or critic's as the rewrite of the feedback; its reasoning section is not passed on.
    const QString text = withoutReasoning(response);
    if (role == RegimeRole::Analyzer)
        state->analysis = text;
    else if (role == RegimeRole::Researcher)
        state->research = text;
    else
        state->rewrite = text;
}

void RunController::generate(TaskState* state)
{
    const QString tid = state->input.id();
    const QString role = state->regime.answerRole(state->turn);
    QList<int> missing;
    for (int sample = 0; sample < state->regime.n; ++sample) {
        const UnitKey key{tid, state->turn, sample, role};
        const auto evaluated = m_storedEvaluations.constFind(key);
        if (evaluated != m_storedEvaluations.cend()) {
            CandidateOutcome c = CandidateOutcome::fromEvaluation(evaluated->result, state->turn, sample);
            c.candidateId = evaluated->candidateId;
            c.answer = m_storedAnswers.value(key).text;
            while (state->turns.size() < state->turn)
                state->turns.append(QList<CandidateOutcome>());
            state->turns[state->turn - 1].append(c);
            continue;
        }
        const auto answered = m_storedAnswers.constFind(key);
        if (answered != m_storedAnswers.cend()) {
            submitCandidate(state, sample, answered->id, answered->text, sampleSeed(state, sample));
            continue;
        }
        missing << sample;
    }
    if (!missing.isEmpty()) {
        QString prompt;
        if (!renderFor(state, role, &prompt))
            return;
        requestModel(state, role, prompt, missing);
        return;
    }
    maybeTurnDone(state);
}

void RunController::submitCandidate(TaskState* state, int sample, qint64 responseId, const QString& answer,
                                    std::optional<qint64> seed)
{
    CandidateRecord cand;
    cand.responseId = responseId;
    cand.task = state->input.id();
    cand.turn = state->turn;
    cand.sample = sample;
    // No blocks yet: the store fills them from the worker's echo when the evaluation arrives
    // (the worker is the only parser of the candidate format).
    const auto candidateId = m_store->addCandidate(cand);
    if (!candidateId) {
        Q_EMIT taskError(cand.task, m_store->errorString());
        return;
    }
    submitJob(state, PendingEval{sample, *candidateId, answer, seed});
}

void RunController::submitJob(TaskState* state, const PendingEval& pending)
{
    const QString key = m_evaluateIdenticalOnce ? identityKey(state->input.id(), pending.answer) : QString();
    if (m_evaluateIdenticalOnce) {
        const auto same = m_identical.find(key);
        if (same != m_identical.end()) {
            const qint64 own = m_nextOwnJob--;
            m_jobTask.insert(own, state->index);
            state->jobs.insert(own, pending);
            if (same->result) // from the event loop: the samples after this one are not sent yet
                QMetaObject::invokeMethod(
                    this, [this, own, key] { deliverReused(own, key); }, Qt::QueuedConnection);
            else
                same->followers.append(own);
            return;
        }
    }
    WorkerRequests::Evaluate request = m_evalOptions;
    request.task = state->input.id();
    request.answer = pending.answer;
    const qint64 job = m_queue->submit(request);
    m_jobTask.insert(job, state->index);
    state->jobs.insert(job, pending);
    ++m_evaluationsSubmitted;
    if (m_evaluateIdenticalOnce) {
        m_identical.insert(key, IdenticalAnswer{pending.candidateId, {}, std::nullopt});
        m_identicalJob.insert(job, key);
    }
}

void RunController::seedIdentical(qint64 runId)
{
    // The first stored verdict of each answer, traced back to the candidate evaluated itself and
    // its run. An answer already known from an earlier call (this run's own first) keeps that.
    const bool own = runId == m_runId;
    const QHash<UnitKey, ResponseRecord> answers = own ? m_storedAnswers : m_store->answeredUnits(runId);
    QSet<QString> seeded;
    for (const EvaluationRecord& e : m_store->evaluations(runId)) {
        const auto answer = answers.constFind(UnitKey{e.task, e.turn, e.sample, e.role});
        if (answer == answers.cend() || !isReusableVerdict(e.result))
            continue;
        // Another run's verdict only where it was judged against this run's definition of the task.
        if (!own && e.result.value(QLatin1String(kTaskDigestKey)).toString() != m_taskDigests.value(e.task))
            continue;
        const QString key = identityKey(e.task, answer->text);
        const qint64 from = e.result.value(QLatin1String(kReusedFromCandidateKey)).toInteger(e.candidateId);
        qint64 origin = e.result.value(QLatin1String(kReusedFromRunKey)).toInteger(own ? 0 : runId);
        if (origin == m_runId)
            origin = 0;
        const auto known = m_identical.constFind(key);
        if (known == m_identical.cend() || (seeded.contains(key) && from < known->candidateId)) {
            m_identical.insert(key, IdenticalAnswer{from, {}, e.result, origin});
            seeded.insert(key);
        }
    }
}

bool RunController::isReusableVerdict(const QJsonObject& result) const
{
    // Only a verdict about the candidate: a machine fault, a request that never reached an
    // evaluation or an out-of-memory on a shared GPU says nothing about it.
    const EvaluationResult decoded = decodeEvaluation(result);
    return statusCategory(decoded.status) != StatusCategory::NotEvaluated &&
           !isMachineFault(decoded.status, isCompileOnly()) && !decoded.outOfDeviceMemory();
}

void RunController::settleIdentical(qint64 jobId, const QJsonObject& result)
{
    const QString key = m_identicalJob.take(jobId);
    const auto same = m_identical.find(key);
    if (key.isEmpty() || same == m_identical.end())
        return;
    const QList<qint64> followers = same->followers;
    same->followers.clear();
    if (isReusableVerdict(result)) {
        same->result = result;
        for (qint64 own : followers)
            QMetaObject::invokeMethod(
                this, [this, own, key] { deliverReused(own, key); }, Qt::QueuedConnection);
        return;
    }
    m_identical.erase(same);
    for (qint64 own : followers) {
        // A follower is of the same task id, normally the same task state; looked up all the same.
        const auto task = m_jobTask.constFind(own);
        TaskState* of = task == m_jobTask.cend() ? nullptr : stateFor(*task);
        m_jobTask.remove(own);
        if (!of)
            continue;
        const PendingEval pending = of->jobs.take(own);
        submitJob(of, pending); // the first becomes the one evaluated, the others wait for it
    }
}

void RunController::deliverReused(qint64 jobId, const QString& key)
{
    const auto same = m_identical.constFind(key);
    if (!m_jobTask.contains(jobId) || same == m_identical.cend() || !same->result)
        return; // cancelled meanwhile
    QJsonObject reused = *same->result;
    reused.insert(QLatin1String(kReusedFromCandidateKey), double(same->candidateId));
    reused.remove(QLatin1String(kReusedFromRunKey)); // the stored result's own, if it was reused itself
    if (same->fromRun != 0)
        reused.insert(QLatin1String(kReusedFromRunKey), double(same->fromRun));
    ++m_evaluationsReused;
    onJobFinished(jobId, reused);
}

void RunController::onCompletionFinished(qint64 requestId, const QVector<Completion>& completions)
{
    const auto it = m_requestTask.find(requestId);
    if (it == m_requestTask.end())
        return;
    TaskState* state = stateFor(*it);
    m_requestTask.erase(it);
    if (!state)
        return requestEnded(requestId);
    state->llmRequest = 0;
    const QString tid = state->input.id();
    const QString role = state->llmRole;
    const bool answerRole = role == state->regime.answerRole(state->turn);
    QList<QPair<int, qint64>> toSubmit; // sample -> response id
    QStringList texts;
    QList<std::optional<qint64>> seeds; // what each was asked with
    for (int i = 0; i < state->llmSamples.size(); ++i) {
        const int sample = state->llmSamples[i];
        const QString text = i < completions.size() ? completions[i].text : QString();
        PromptRecord p;
        p.runId = m_runId;
        p.task = tid;
        p.turn = state->turn;
        p.sample = sample;
        p.role = role;
        p.text = state->llmPrompt;
        p.templateHash = templateHash(state->llmTemplate);
        const auto promptId = m_store->addPrompt(p);
        if (!promptId) {
            requestEnded(requestId);
            return finishTask(state, m_store->errorString());
        }
        ResponseRecord r;
        r.promptId = *promptId;
        r.text = text;
        if (i < completions.size()) {
            const Completion& c = completions[i];
            // With the server's n, one call's usage covers every choice: kept on the first only,
            // so sums over responses stay right.
            const bool countTokens = !c.usageShared || i == 0;
            if (countTokens && c.promptTokens >= 0)
                r.tokensIn = c.promptTokens;
            if (countTokens && c.completionTokens >= 0)
                r.tokensOut = c.completionTokens;
            if (c.totalMs >= 0)
                r.latencyMs = c.totalMs;
        } else {
            r.error = QStringLiteral("the server returned fewer choices than asked");
        }
        const auto responseId = m_store->addResponse(r);
        if (!responseId) {
            requestEnded(requestId);
            return finishTask(state, m_store->errorString());
        }
        if (r.error.isEmpty())
            toSubmit.append({sample, *responseId});
        texts << text;
        seeds << (i < completions.size() && completions[i].seed ? completions[i].seed : sampleSeed(state, sample));
    }
    requestEnded(requestId);
    Q_EMIT roleAnswered(tid, state->turn, role, int(state->llmSamples.size()));
    if (!answerRole) {
        const QString text = texts.value(0);
        storeNotes(state, role, text);
        advance(state);
        return;
    }
    for (const auto& [sample, responseId] : toSubmit) {
        const int i = int(state->llmSamples.indexOf(sample));
        submitCandidate(state, sample, responseId, texts.value(i), seeds.value(i));
    }
    maybeTurnDone(state);
}

void RunController::onCompletionFailed(qint64 requestId, const QString& kind, const QString& message)
{
    const auto it = m_requestTask.find(requestId);
    if (it == m_requestTask.end())
        return;
    TaskState* state = stateFor(*it);
    m_requestTask.erase(it);
    if (!state)
        return requestEnded(requestId);
    state->llmRequest = 0;
    const QString error = kind + QStringLiteral(": ") + message;
    // The failed request is kept (prompt and error) for the record; its units stay open, so a
    // resume asks again.
    for (int sample : std::as_const(state->llmSamples)) {
        PromptRecord p;
        p.runId = m_runId;
        p.task = state->input.id();
        p.turn = state->turn;
        p.sample = sample;
        p.role = state->llmRole;
        p.text = state->llmPrompt;
        p.templateHash = templateHash(state->llmTemplate);
        if (const auto promptId = m_store->addPrompt(p)) {
            ResponseRecord r;
            r.promptId = *promptId;
            r.error = error;
            m_store->addResponse(r);
        }
    }
    requestEnded(requestId);
    finishTask(state, QStringLiteral("model request failed (%1)").arg(error));
}

void RunController::onJobFinished(qint64 jobId, const QJsonObject& result)
{
    const auto it = m_jobTask.find(jobId);
    if (it == m_jobTask.end())
        return;
    TaskState* state = stateFor(*it);
    m_jobTask.erase(it);
    m_builtAhead.remove(jobId);
    if (!state)
        return;
    const PendingEval pending = state->jobs.take(jobId);
    if (m_evaluateIdenticalOnce)
        settleIdentical(jobId, result);
    QJsonObject stored = result;
    stored.insert(QStringLiteral("generation_paused"), m_pauseGenerationWhileTiming);
    stored.insert(QLatin1String(kTaskDigestKey), m_taskDigests.value(state->input.id()));
    // The seed its answer was asked with, kept beside the verdict (the prompt rows have no column
    // for it): a reader checks that no two turns of a task drew with one seed.
    if (pending.seed)
        stored.insert(QStringLiteral("model_seed"), double(*pending.seed));
    m_store->addEvaluation(pending.candidateId, stored);
    CandidateOutcome c = CandidateOutcome::fromEvaluation(result, state->turn, pending.sample);
    c.candidateId = pending.candidateId;
    c.answer = pending.answer;
    recordOutcome(state, c);
}

void RunController::onJobFailed(qint64 jobId, const QString& status, const QString& message)
{
    onJobFinished(jobId, failureResult(status, message));
}

void RunController::recordOutcome(TaskState* state, const CandidateOutcome& outcome)
{
    while (state->turns.size() < state->turn)
        state->turns.append(QList<CandidateOutcome>());
    state->turns[state->turn - 1].append(outcome);
    Q_EMIT candidateEvaluated(state->input.id(), outcome.turn, outcome.sample, wireName(outcome.status));
    maybeTurnDone(state);
}

void RunController::maybeTurnDone(TaskState* state)
{
    if (state->llmRequest != 0 || !state->jobs.isEmpty())
        return;
    turnDone(state);
}

void RunController::turnDone(TaskState* state)
{
    while (state->turns.size() < state->turn)
        state->turns.append(QList<CandidateOutcome>());
    auto& outcomes = state->turns[state->turn - 1];
    std::sort(outcomes.begin(), outcomes.end(),
              [](const CandidateOutcome& a, const CandidateOutcome& b) { return a.sample < b.sample; });
    // A machine fault (no_device, start_failed, worker_lost, protocol_error: the status table's
    // category) says nothing about the candidate: it is never fed back to the model as its error.
    // A turn with nothing but machine faults ends the task, so that a resume evaluates the answers
    // again instead of the model being asked to fix `no_device`.
    const bool compileOnly = isCompileOnly();
    if (!outcomes.isEmpty() &&
        std::all_of(outcomes.cbegin(), outcomes.cend(),
                    [compileOnly](const CandidateOutcome& c) { return isMachineFault(c.status, compileOnly); }))
        return finishTask(state, QStringLiteral("turn %1 was not evaluated: machine failure (%2); resume the run to "
                                                "evaluate it again")
                                     .arg(state->turn)
                                     .arg(wireName(outcomes.first().status)));
    const auto chosen = selectJudged(state);
    bool anyCorrect = false;
    for (const auto& turn : std::as_const(state->turns))
        for (const auto& c : turn)
            anyCorrect = anyCorrect || c.correct();
    // Compile-only: a candidate that compiled and passed the sandbox check has nothing to fix.
    const bool passedCompileOnly = compileOnly && chosen && chosen->status == EvaluationStatus::NoDevice;
    const bool last = state->turn >= state->regime.turns || state->regime.feedback == FeedbackMode::None ||
                      (state->regime.stopWhenCorrect && anyCorrect) || !chosen || outcomes.isEmpty() ||
                      passedCompileOnly;
    if (last)
        return finishTask(state);
    // What the next turn is shown is not what the task keeps: the last attempt (the study's
    // retries on the error log) unless the regime asks for the best so far.
    const auto shown = feedbackCandidate(state);
    if (!shown)
        return finishTask(state);
    QJsonObject feedback = shown->result;
    // The answer without its reasoning (core/protocol/modeltext.h): the thinking is not shown again.
    feedback.insert(kFeedbackAnswerKey, withoutReasoning(shown->answer));
    state->feedback = feedback;
    state->rewrite.clear();
    ++state->turn;
    if (state->regime.feedback == FeedbackMode::Rewrite && !state->regime.rewriteRole().isEmpty())
        state->notesQueue << state->regime.rewriteRole();
    advance(state);
}

bool RunController::isCompileOnly() const
{
    return m_evalOptions.device == QLatin1String("none");
}

std::optional<CandidateOutcome> RunController::selectJudged(const TaskState* state) const
{
    // The rule the report applies too (selection.h): machine faults compete only where there is
    // nothing else, ties go to the lower sample and the earlier turn.
    QList<CandidateOutcome> all;
    for (const auto& turn : state->turns)
        all += turn;
    const std::optional<int> chosen = selectJudgedIndex(all, state->regime.selection, isCompileOnly());
    return chosen ? std::optional<CandidateOutcome>(all.at(*chosen)) : std::nullopt;
}

std::optional<CandidateOutcome> RunController::feedbackCandidate(const TaskState* state) const
{
    if (state->regime.feedbackSource == FeedbackSource::Best) {
        QList<CandidateOutcome> all;
        for (const auto& turn : state->turns)
            all += turn;
        const auto best = selectJudgedIndex(all, SelectionMode::Monotone, isCompileOnly());
        return best ? std::optional<CandidateOutcome>(all.at(*best)) : std::nullopt;
    }
    // One turn's candidates: the best of them by the same rule (ties: the lower sample).
    const QList<CandidateOutcome> turn = state->turns.value(state->turn - 1);
    const auto best = selectJudgedIndex(turn, SelectionMode::Last, isCompileOnly());
    return best ? std::optional<CandidateOutcome>(turn.at(*best)) : std::nullopt;
}

void RunController::finishTask(TaskState* state, const QString& error)
{
    const QString tid = state->input.id();
    const int index = state->index;
    // Cancel what the task still has in flight (only after an error).
    for (auto it = m_requestTask.begin(); it != m_requestTask.end();) {
        if (*it == index) {
            const qint64 id = it.key();
            it = m_requestTask.erase(it);
            cancelRequest(id);
        } else {
            ++it;
        }
    }
    for (auto it = m_jobTask.begin(); it != m_jobTask.end();) {
        if (*it == index) {
            m_queue->cancel(it.key());
            m_builtAhead.remove(it.key());
            it = m_jobTask.erase(it);
        } else {
            ++it;
        }
    }
    if (!error.isEmpty())
        Q_EMIT taskError(tid, error);
    const auto chosen = selectJudged(state);
    if (chosen)
        m_selected.insert(tid, *chosen);
    m_active.erase(index); // state is gone from here on
    ++m_done;
    Q_EMIT taskFinished(tid, chosen ? wireName(chosen->status) : QStringLiteral("no_candidate"));
    Q_EMIT progress(m_done, int(m_tasks.size()));
    // Start the next task from the event loop: finishTask can run deep inside advance().
    QTimer::singleShot(0, this, [this] { pump(); });
}

} // namespace kwb
