#pragma once
// RunController drives one run of a regime (regime.h) over tasks: per task and turn it renders the
// role prompts (PromptRenderer), asks the model (LlmClient) for the regime's n answers, submits
// each to the evaluator (EvaluationQueue), feeds the result back as the regime says and selects
// the task's candidate (selection.h). Every prompt, response, candidate and evaluation goes into
// the RunStore as it finishes.
//
// Generation and evaluation overlap: up to maxTasksInFlight() tasks generate, build or evaluate at
// once, so the model writes for one task while the GPU evaluates another's candidates, and as many
// more may wait, built ahead, for a GPU slot. Within a task the turns are sequential (a turn needs
// the previous turn's evaluation).
//
// Resume: start() on an existing run skips every unit RunStore::completedUnits() reports (its
// stored evaluation is used instead) and reuses stored model answers (answeredUnits()) instead of
// asking again, so turn decisions come out as they did before the run was killed. A unit whose
// evaluation ended in a machine failure (wireName(EvaluationStatus::isMachineFailure)) is not complete: its
// stored answer is evaluated again.
//
// Turn logic. Turn 1: analyzer, then researcher (where the regime has them, one answer each),
// then the answer role (generator) with n samples. Turns 2…turns (only with feedback): the
// triager or critic first when feedback is Rewrite, then the answer role (`retry` where the regime
// has one) with `feedback` = the evaluation of the candidate shown plus its answer: the best of the
// previous turn (the last attempt; a turn's n samples share one prompt, so one candidate is shown),
// or with FeedbackSource::Best the best so far. What is shown never decides what the task keeps:
// that is the regime's selection over all turns. A task stops early when stopWhenCorrect and a
// candidate is correct.
//
// Seeds: every request of turn t for sample k is asked with modelSeedFor(base, t, k), so no two
// turns of a task replay one another's draws and sample k of a turn has the same seed at every n.
//
// Everything runs on the owner's thread, driven by the client's and the queue's signals; the
// controller reacts only to requests and jobs it started itself.

#include "core/config/regime.h"
#include "core/prompts/promptrenderer.h"
#include "core/prompts/tokenbudget.h"
#include "core/protocol/workerrequests.h"
#include "core/run/selection.h"
#include "core/store/runstore.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QObject>
#include <QSet>
#include <QString>
#include <QVector>

#include <map>
#include <memory>

namespace kwb {

class EvaluationQueue;
class LlmClient;
struct Completion;

/// How far apart the model seeds of consecutive turns are: the first prime above 1000, so turns
/// never share a seed for n up to 1009, and a server that picks an answer by seed mod its count
/// (kwb-fixture-llm --stateless) does not come back to the previous turn's answer where the count
/// divides 1000.
constexpr qint64 kModelSeedTurnStride = 1009;

/// The seed sample `sample` (from 0) of turn `turn` (from 1) is asked with: base + stride·(turn−1)
/// + sample. Turn 1 keeps base + sample. Runs stored before per-turn seeds resume with stride 0
/// (every turn base + sample, as they were made).
constexpr qint64 modelSeedFor(qint64 base, int turn, int sample, qint64 turnStride = kModelSeedTurnStride)
{
    return base + turnStride * (turn - 1) + sample;
}

/// One task of a run, with the worker's facts about it (any but `task` may be empty).
struct RunTaskInput
{
    QJsonObject task;    ///< a `tasks` entry: id, level, title, forward, inputs, params, …
    QJsonObject analyze; ///< the `analyze` response
    QJsonObject profile; ///< the `profile` response (used only when the regime's useProfile)
    QJsonObject device;  ///< the `device` response
    /// The run's protocol profile's settings as the worker's hello lists them (name, atol, rtol,
    /// …): the tolerance the prompts state. Empty: not known (the prompts then state none).
    QJsonObject protocolProfile;

    QString id() const;
    int level() const;
};

/// What a role's prompt sees besides the task's facts: the turn, the evaluation fed back and the
/// notes of the roles before it (an empty note is not there: its template section stays closed).
struct TurnNotes
{
    int turn = 1;
    QJsonObject feedback; ///< turns 2…: the shown candidate's evaluation plus its `answer`
    QString analysis;     ///< the analyzer's notes
    QString research;     ///< the researcher's notes
    QString rewrite;      ///< this turn's triager (`diagnosis`) or critic (`critique`) notes
};

/// A prompt a run will send, rendered before the run with placeholder notes (checkTemplates,
/// `kwb prompt`).
struct PlannedPrompt
{
    QString task;
    int turn = 1;
    QString role;
    QString templatePath;
    QString text;  ///< empty when the template failed
    QString error; ///< "FILE:LINE: what"
    /// How many texts of the model's it holds (earlier notes, the previous answer), each shown
    /// as a placeholder here but up to max output tokens long in the run.
    int modelTexts = 0;

    /// The most tokens it can take in the run: promptTokens (of `text`) plus every model text at
    /// the budget's max output tokens.
    int budgetTokens(int promptTokens, const ContextBudget& budget) const;
};

/// What a planned prompt shows where a model's text or the evaluator's will be.
inline const QString kPlaceholderModelText = QStringLiteral("(placeholder: an earlier model answer goes here)");
inline const QString kPlaceholderEvaluatorText = QStringLiteral("(placeholder: the evaluator's report goes here)");

class RunController : public QObject
{
    Q_OBJECT
public:
    RunController(LlmClient* llm, EvaluationQueue* queue, RunStore* store, const QString& promptsDir,
                  QObject* parent = nullptr);
    ~RunController() override;

    /// The regime of every task whose level has no regime of its own.
    void setRegime(const Regime& regime) { m_regime = regime; }
    const Regime& regime() const { return m_regime; }
    /// Routing: tasks of this level run under this regime instead.
    void setRegimeForLevel(int level, const Regime& regime) { m_levelRegimes.insert(level, regime); }
    Regime regimeFor(const RunTaskInput& task) const { return m_levelRegimes.value(task.level(), m_regime); }

    /// How many tasks are kept generating, building or evaluating at once; as many more may wait,
    /// their candidates built ahead, for a GPU slot (pump). A built task waiting for the GPU holds
    /// no compile worker, so counting it would leave the workers idle while the GPUs are behind.
    void setMaxTasksInFlight(int count) { m_maxInFlight = qMax(1, count); }
    int maxTasksInFlight() const { return m_maxInFlight; }
    /// The most tasks started and not finished at once: maxTasksInFlight() busy ones plus as many
    /// waiting, built, for a GPU.
    int maxTasksStarted() const { return 2 * m_maxInFlight; }
    /// The seed distance between turns (modelSeedFor); a run's stored `seeds.turn_stride`.
    void setModelSeedTurnStride(qint64 stride) { m_seedTurnStride = stride; }
    qint64 modelSeedTurnStride() const { return m_seedTurnStride; }
    /// The evaluate request every candidate is sent with (profile, scale, seed, timing_trials, …);
    /// each candidate sets its task and answer.
    void setEvaluationOptions(const WorkerRequests::Evaluate& options) { m_evalOptions = options; }
    /// Answers of one task byte for byte identical to one already sent this run are evaluated
    /// once: each later one is stored with the first one's evaluation plus `reused_from_candidate`
    /// (its candidate row), and waits for it while it runs. A verdict the machine failed (a
    /// machine fault, out of device memory) is never reused: the next identical answer is
    /// evaluated instead. Off by default; a run stores it as `evaluate_identical_once`.
    void setEvaluateIdenticalOnce(bool on) { m_evaluateIdenticalOnce = on; }
    /// With setEvaluateIdenticalOnce: also reuse the verdicts of the store's other runs whose
    /// evaluation settings are this run's (RunConfig::sameEvaluationSettings: profile, scale,
    /// trials, limits, seeds, worker, GPU), each stored with `reused_from_candidate` and
    /// `reused_from_run`. Off by default; a run stores it as `identical_across_runs`.
    void setIdenticalAcrossRuns(bool on) { m_identicalAcrossRuns = on; }

    /// Runs the tasks into run `runId` of the store (created by the caller; for a resume, the same
    /// run again). False when already running or when a regime is not valid. Ends in runFinished(),
    /// emitted from the event loop.
    bool start(qint64 runId, const QList<RunTaskInput>& tasks);
    /// Renders every template the tasks' regimes use (templates from promptsDir; a task's level
    /// picks its regime from levelRegimes, else `regime`), with each task's own context: turn 1,
    /// and for a regime with later turns turn 2 with feedback (and the notes of earlier roles
    /// filled in), so a template error is found before any model request is spent. Empty when
    /// every one renders, else "TASK: FILE:LINE: what" for the first that does not.
    /// With a budget, also every prompt's estimated tokens (PlannedPrompt::budgetTokens) plus the
    /// max output must fit the context: else ContextBudget::overBudget() for the first that does not.
    static QString checkTemplates(const QString& promptsDir, const Regime& regime,
                                  const QMap<int, Regime>& levelRegimes, const QList<RunTaskInput>& tasks,
                                  const ContextBudget& budget = {});
    /// Every prompt the regime renders for the task, in the run's order: the turn-1 roles, then for
    /// each later turn (with feedback) the rewrite role and the answer role, with placeholder
    /// notes and feedback; stops after the first that fails.
    static QList<PlannedPrompt> plannedPrompts(const QString& promptsDir, const Regime& regime,
                                               const RunTaskInput& input);
    /// Every prompt is measured before it is sent; over the budget, its task fails (0: no check).
    void setContextBudget(const ContextBudget& budget) { m_budget = budget; }
    /// The context a role's template renders with in a run: PromptRenderer::buildContext over the
    /// task's facts (the profile only where the regime uses it) and the feedback, plus analysis,
    /// research, diagnosis, critique, turn and max_turns. The prompt editor's preview asks this too.
    static QJsonObject context(const RunTaskInput& input, const Regime& regime, const TurnNotes& notes);
    /// Cancels the model requests and evaluations in flight, marks the run cancelled and ends in
    /// runFinished(true) from the event loop. What was committed stays: the run can resume.
    void cancel();
    /// Sends no further model request until the next start(): a task about to ask the model waits
    /// (its units stay open). For a pause: the requests in flight are answered and stored, then
    /// the owner cancels, and a resume asks for the waiting units once.
    void holdModelRequests() { m_holdRequests = true; }
    /// While paused, a task about to ask the model waits (requests already sent go on); unpausing
    /// sends what waited. HeadlessRun pauses while an evaluation holds a GPU's lease.
    void setGenerationPaused(bool paused);
    bool isGenerationPaused() const { return m_generationPaused; }
    /// Recorded with every evaluation as `generation_paused` (whether the run pauses generation
    /// while timing).
    void setPauseGenerationWhileTiming(bool on) { m_pauseGenerationWhileTiming = on; }
    bool isRunning() const { return m_running; }

    /// The selected candidate per task of the run so far (tasks without any candidate are absent).
    QMap<QString, CandidateOutcome> selected() const { return m_selected; }
    /// Model requests and evaluations this controller started (resumed units are not counted).
    int modelRequests() const { return m_modelRequests; }
    int evaluationsSubmitted() const { return m_evaluationsSubmitted; }
    /// Candidates stored with another identical answer's evaluation (setEvaluateIdenticalOnce).
    int evaluationsReused() const { return m_evaluationsReused; }

Q_SIGNALS:
    void taskStarted(const QString& task);
    /// The controller asked the model (LlmClient request `requestId`) for these units, one per
    /// choice in order; emitted as the request is sent, before any of its text can arrive.
    void modelRequestStarted(qint64 requestId, const QList<kwb::UnitKey>& units);
    /// The request ended: answered (its rows are stored), failed (its prompts and errors are
    /// stored) or cancelled by the controller.
    void modelRequestEnded(qint64 requestId);
    /// A model answer for a role arrived (notes or a candidate).
    void roleAnswered(const QString& task, int turn, const QString& role, int samples);
    void candidateEvaluated(const QString& task, int turn, int sample, const QString& status);
    /// The task ended; status is the selected candidate's status, or "no_candidate".
    void taskFinished(const QString& task, const QString& status);
    /// A prompt would not render, the model failed for a notes role or the store refused a row.
    void taskError(const QString& task, const QString& message);
    void progress(int tasksDone, int tasksTotal);
    void runFinished(bool cancelled);

private:
    struct PendingEval
    {
        int sample = 0;
        qint64 candidateId = 0;
        QString answer;
        std::optional<qint64> seed; ///< the model seed the answer was asked with
    };
    struct TaskState
    {
        int index = 0;
        RunTaskInput input;
        Regime regime;
        int turn = 1;
        QStringList notesQueue; ///< notes roles still to answer this turn
        QString analysis;
        QString research;
        QString rewrite; ///< this turn's triager/critic output
        QJsonObject feedback;
        QList<QList<CandidateOutcome>> turns;
        // the model request in flight
        qint64 llmRequest = 0;
        QString llmRole;
        QString llmPrompt;
        QString llmTemplate;
        QList<int> llmSamples; ///< for the answer role: the samples the completions stand for
        QHash<qint64, PendingEval> jobs;
        bool failed = false;
        bool deferred = false; ///< a model request waits for generation to be unpaused
    };

    void pump();
    /// Whether the task waits only for a GPU slot: no model request, and every job it sent was
    /// built ahead and not yet taken by a GPU (or waits for an identical answer's evaluation).
    bool waitsOnlyForGpu(const TaskState& state) const;
    void startTask(int index);
    void advance(TaskState* state);
    void generate(TaskState* state);
    void storeNotes(TaskState* state, const QString& role, const QString& response);
    void turnDone(TaskState* state);
    void finishTask(TaskState* state, const QString& error = QString());
    /// Evaluated with "device" "none" (a compile-only run).
    bool isCompileOnly() const;
    /// selectAcrossTurns over the candidates that are not machine faults (all of them when every
    /// one is): what is fed back and what the task keeps.
    std::optional<CandidateOutcome> selectJudged(const TaskState* state) const;
    /// The candidate turn state->turn + 1 is shown (Regime::feedbackSource): the best of this
    /// turn, or the best so far; machine faults only where there is nothing else.
    std::optional<CandidateOutcome> feedbackCandidate(const TaskState* state) const;
    /// The model seed of a sample of the task's current turn; nullopt: no seed is set.
    std::optional<qint64> sampleSeed(const TaskState* state, int sample) const;
    void maybeFinishRun();
    static QJsonObject context(const TaskState* state);
    /// Cancels a request this controller started and says so (modelRequestEnded).
    void cancelRequest(qint64 requestId);
    void requestEnded(qint64 requestId);
    bool renderFor(TaskState* state, const QString& role, QString* text);
    void requestModel(TaskState* state, const QString& role, const QString& prompt, const QList<int>& samples);
    void submitCandidate(TaskState* state, int sample, qint64 responseId, const QString& answer,
                         std::optional<qint64> seed);
    /// Sends the candidate's evaluation to the queue, or (evaluate identical once) waits for or
    /// takes that of an identical answer: a job id of the controller's own (negative) then.
    void submitJob(TaskState* state, const PendingEval& pending);
    /// After an evaluated answer's result: its identical followers get it, or are evaluated
    /// themselves where it is the machine's failure.
    void settleIdentical(qint64 jobId, const QJsonObject& result);
    /// Delivers the reused evaluation to the follower `jobId` (from the event loop).
    void deliverReused(qint64 jobId, const QString& key);
    /// A result that says something about the candidate (evaluate identical once reuses only those).
    bool isReusableVerdict(const QJsonObject& result) const;
    void recordOutcome(TaskState* state, const CandidateOutcome& outcome);
    void maybeTurnDone(TaskState* state);
    QString templateHash(const QString& templatePath);
    TaskState* stateFor(int index);

    void onCompletionFinished(qint64 requestId, const QVector<kwb::Completion>& completions);
    void onCompletionFailed(qint64 requestId, const QString& kind, const QString& message);
    void onJobFinished(qint64 jobId, const QJsonObject& result);
    void onJobFailed(qint64 jobId, const QString& status, const QString& message);

    LlmClient* m_llm = nullptr;
    EvaluationQueue* m_queue = nullptr;
    RunStore* m_store = nullptr;
    PromptRenderer m_renderer;
    Regime m_regime;
    QMap<int, Regime> m_levelRegimes;
    int m_maxInFlight = 2;
    QSet<qint64> m_builtAhead;              ///< queue jobs built ahead that no GPU has taken yet (jobBuiltAhead)
    WorkerRequests::Evaluate m_evalOptions; ///< without its task and answer, which each candidate sets
    ContextBudget m_budget;
    qint64 m_seedTurnStride = kModelSeedTurnStride;
    bool m_evaluateIdenticalOnce = false;
    bool m_identicalAcrossRuns = false;
    QHash<QString, QString> m_taskDigests; ///< task id -> taskDigest of its `tasks` entry, stored with each verdict
    /// Evaluate identical once: an answer (keyed by task and text) sent to the queue, the
    /// followers waiting for it while it runs, and its result once it is a reusable verdict.
    struct IdenticalAnswer
    {
        qint64 candidateId = 0;
        QList<qint64> followers;
        std::optional<QJsonObject> result;
        qint64 fromRun = 0; ///< the run whose candidate `candidateId` is, where not this one (0)
    };
    /// Seeds m_identical with the reusable verdicts stored for `runId` (this run's on a resume,
    /// another's with setIdenticalAcrossRuns), each traced to the candidate and run evaluated.
    void seedIdentical(qint64 runId);
    QHash<QString, IdenticalAnswer> m_identical;
    QHash<qint64, QString> m_identicalJob; ///< a queue job evaluating an answer others may reuse -> its key
    qint64 m_nextOwnJob = -1;              ///< the controller's own job ids (followers), negative
    int m_evaluationsReused = 0;

    qint64 m_runId = 0;
    QList<RunTaskInput> m_tasks;
    int m_next = 0;
    int m_done = 0;
    bool m_running = false;
    bool m_cancelled = false;
    bool m_holdRequests = false;
    bool m_generationPaused = false;
    bool m_pauseGenerationWhileTiming = false;
    std::map<int, std::unique_ptr<TaskState>> m_active;
    QHash<qint64, int> m_requestTask; ///< model request -> task index
    QHash<qint64, int> m_jobTask;     ///< evaluation job -> task index
    QHash<UnitKey, EvaluationRecord> m_storedEvaluations;
    QHash<UnitKey, ResponseRecord> m_storedAnswers;
    QHash<QString, QString> m_templateHashes;
    QMap<QString, CandidateOutcome> m_selected;
    int m_modelRequests = 0;
    int m_evaluationsSubmitted = 0;
};

} // namespace kwb
