#include "core/study/report.h"

#include "core/study/taskbest.h"

#include "core/tasks/kernelbound.h"

#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/run/runname.h"
#include "core/run/selection.h"
#include "core/store/runstore.h"

#include <QJsonArray>
#include <QRegularExpression>
#include <QSet>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kwb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

} // namespace

// ---------------------------------------------------------------------------------------------

int taskLevel(const QString& task)
{
    static const QRegularExpression pattern(QStringLiteral("^L(\\d+)/"));
    const QRegularExpressionMatch match = pattern.match(task);
    return match.hasMatch() ? match.captured(1).toInt() : 0;
}

TaskOutcome outcomeOf(const EvaluationRecord& evaluation, bool compileOnly)
{
    TaskOutcome outcome;
    outcome.task = evaluation.task;
    outcome.level = taskLevel(evaluation.task);
    outcome.status = evaluation.status;
    const EvaluationResult decoded = evaluation.evaluation();
    // Below the roofline floor: neither correct nor timed, for every count and for selection.
    outcome.belowRooflineFloor = decoded.belowRooflineFloor();
    outcome.speedup = outcome.belowRooflineFloor ? kNaN : evaluation.speedup.value_or(kNaN);
    if (const auto interval = decoded.trustedSpeedupInterval(); interval && std::isfinite(outcome.speedup)) {
        outcome.speedupLow = interval->low;
        outcome.speedupHigh = interval->high;
    }
    // A machine fault is not evaluated: neither compiled nor a verdict.
    outcome.compiled = !isMachineFault(evaluation.status, compileOnly) && decoded.compiled();
    outcome.torchOnly = decoded.torchOnly;
    outcome.boundFraction = rooflineBoundFraction(decoded).value_or(kNaN);
    return outcome;
}

QList<FastP> fastPOf(const QList<TaskOutcome>& outcomes)
{
    int timed = 0, withInterval = 0;
    for (const TaskOutcome& o : outcomes)
        if (o.correct() && std::isfinite(o.speedup) && o.speedup > 0) {
            ++timed;
            withInterval += std::isfinite(o.speedupLow) && std::isfinite(o.speedupHigh);
        }
    QList<FastP> out;
    for (double p : kFastPThresholds) {
        FastP f;
        f.p = p;
        f.tasks = int(outcomes.size());
        f.noIntervals = timed > 0 && withInterval == 0;
        for (const TaskOutcome& o : outcomes) {
            f.fast += o.fastP(p);
            f.clear += o.clearlyFastP(p);
            f.undecided +=
                o.fastP(p) && !o.clearlyFastP(p) && !(std::isfinite(o.speedupLow) && std::isfinite(o.speedupHigh));
        }
        out.append(f);
    }
    return out;
}

bool isCompileOnlyRun(const RunInfo& run)
{
    return run.config.compileOnly;
}

std::optional<TaskOutcome> selectOutcome(const QList<EvaluationRecord>& evaluations, int* chosenIndex,
                                         bool lastTurnWins, bool compileOnly)
{
    // The run controller's own rule (selection.h), so the report keeps the candidate the run kept.
    QList<CandidateOutcome> candidates;
    for (const EvaluationRecord& e : evaluations) {
        // The stored status and speed-up columns are the response's own; they fill a response
        // that lacks them (a record built by hand).
        QJsonObject result = e.result;
        if (!result.contains(QLatin1String("status")))
            result.insert(QStringLiteral("status"), e.status);
        if (!result.contains(QLatin1String("speedup")) && e.speedup)
            result.insert(QStringLiteral("speedup"), *e.speedup);
        candidates.append(CandidateOutcome::fromEvaluation(result, e.turn, e.sample));
    }
    const std::optional<int> chosen =
        selectJudgedIndex(candidates, lastTurnWins ? SelectionMode::Last : SelectionMode::Monotone, compileOnly);
    if (!chosen)
        return std::nullopt;
    if (chosenIndex)
        *chosenIndex = *chosen;
    return outcomeOf(evaluations.at(*chosen), compileOnly);
}

QString sameAnswersNote(const Report& report)
{
    const Report::AnswersJudged& judged = report.answersJudged;
    if (report.runs.isEmpty() || judged.distinctOfTask.isEmpty() || judged.withoutHash > 0)
        return QString();
    for (const int n : judged.distinctOfTask)
        if (n != 1)
            return QString();
    const int tasks = int(judged.distinctOfTask.size());
    if (report.runs.size() > 1)
        return QStringLiteral("All %1 runs got one and the same answer for each of the %2 tasks they evaluated: "
                              "their numbers cannot differ by what the model wrote, only by measurement.")
            .arg(report.runs.size())
            .arg(tasks);
    // One run: only where its samples or turns repeat a task.
    for (const int n : judged.evaluationsOfTask)
        if (n > 1)
            return QStringLiteral("Every sample and turn of each of the %1 tasks it evaluated got the same answer: "
                                  "they cannot differ by what the model wrote, only by measurement.")
                .arg(tasks);
    return QString();
}

std::optional<FirstTurnPassAtN> firstTurnPassAtNFor(const QList<EvaluationRecord>& evaluations,
                                                    const QStringList& tasks, const BootstrapOptions& options)
{
    // Per task: its first turn, and per sample of that turn whether it was correct.
    QMap<QString, int> firstTurn;
    for (const EvaluationRecord& e : evaluations) {
        const auto it = firstTurn.constFind(e.task);
        if (it == firstTurn.cend() || e.turn < *it)
            firstTurn.insert(e.task, e.turn);
    }
    QMap<QString, QMap<int, bool>> samples;
    for (const QString& task : tasks) // a task without a sample still counts, as a failure
        samples.insert(task, {});
    FirstTurnPassAtN report;
    for (const EvaluationRecord& e : evaluations) {
        if (e.turn != firstTurn.value(e.task))
            continue;
        bool& correct = samples[e.task][e.sample];
        const EvaluationResult decoded = e.evaluation();
        const bool statusCorrect = evaluationStatusFromWire(e.status) == EvaluationStatus::Correct;
        correct = correct || (statusCorrect && !decoded.belowRooflineFloor());
        if (statusCorrect && decoded.belowRooflineFloor()) {
            ++report.notCounted;
            report.notCountedWhy
                << QStringLiteral("%1 sample %2: %3").arg(e.task).arg(e.sample).arg(notCountedReason(decoded));
        }
    }
    QList<SampleOutcomes> all;
    QMap<int, QList<SampleOutcomes>> byLevel;
    for (auto it = samples.cbegin(); it != samples.cend(); ++it) {
        SampleOutcomes s;
        s.task = it.key();
        s.level = taskLevel(it.key());
        s.correct = it.value().values();
        report.samples = std::max(report.samples, int(s.correct.size()));
        all.append(s);
        byLevel[s.level].append(s);
    }
    if (report.samples < 2)
        return std::nullopt;
    QList<int> ns;
    for (int n = 1; n <= report.samples; n *= 2)
        ns.append(n);
    report.overall = bestOfNCurve(all, ns, options);
    for (auto it = byLevel.cbegin(); it != byLevel.cend(); ++it)
        report.perLevel.insert(it.key(), bestOfNCurve(it.value(), ns, options));
    return report;
}

namespace {

QString machineFailureReason(const EvaluationRecord& evaluation)
{
    const QString message = evaluation.evaluation().message;
    return QStringLiteral("not evaluated: machine failure (%1%2)")
        .arg(evaluation.status, message.isEmpty() ? QString() : QStringLiteral(": ") + message);
}

QString modelFailureReason(const QString& error)
{
    return QStringLiteral("model request failed: ") + error;
}

} // namespace

QList<UnfinishedUnit> unfinishedUnits(const QList<UnitResponse>& responses, const QList<EvaluationRecord>& evaluations)
{
    // The latest response of each unit (responses come in id order), and its evaluations.
    QList<UnitKey> order;
    QHash<UnitKey, ResponseRecord> latest;
    for (const UnitResponse& r : responses) {
        if (!latest.contains(r.unit))
            order.append(r.unit);
        latest.insert(r.unit, r.response);
    }
    QHash<UnitKey, QList<EvaluationRecord>> evaluated;
    for (const EvaluationRecord& e : evaluations)
        evaluated[UnitKey{e.task, e.turn, e.sample, e.role}].append(e);
    QList<UnfinishedUnit> units;
    for (const UnitKey& unit : std::as_const(order)) {
        const ResponseRecord& response = latest.value(unit);
        const QList<EvaluationRecord> list = evaluated.value(unit);
        if (!response.error.isEmpty() && list.isEmpty()) {
            units.append({unit, UnevaluatedKind::ModelRequestFailed, modelFailureReason(response.error)});
            continue;
        }
        const bool allMachine =
            !list.isEmpty() && std::all_of(list.cbegin(), list.cend(),
                                           [](const EvaluationRecord& e) { return isMachineFailure(e.status); });
        if (allMachine)
            units.append({unit, UnevaluatedKind::MachineFailure, machineFailureReason(list.last())});
    }
    return units;
}

QList<UnfinishedUnit> unfinishedUnits(const RunStore& store, qint64 runId)
{
    return unfinishedUnits(store.responses(runId, 0, false), store.evaluations(runId));
}

RunOutcomes runOutcomes(const RunStore& store, const RunInfo& info, const QList<EvaluationRecord>& evaluations)
{
    RunOutcomes result;
    const QList<UnitResponse> responses = store.responses(info.id, 0, false);
    // Every task the run was asked to do: named by its configuration, prompted or evaluated.
    QMap<QString, QList<EvaluationRecord>> byTask; // sorted by task id
    const RunConfig& config = info.config;
    for (const QString& task : config.tasks)
        byTask.insert(task, {});
    for (const UnitResponse& response : responses)
        if (!byTask.contains(response.unit.task))
            byTask.insert(response.unit.task, {});
    for (const EvaluationRecord& evaluation : evaluations)
        byTask[evaluation.task].append(evaluation);
    // Why a task without an evaluation has none: its first failed request, else whether it
    // got an answer at all.
    QHash<QString, QString> requestFailure;
    QSet<QString> answered;
    for (const UnfinishedUnit& unit : unfinishedUnits(responses, evaluations))
        if (unit.kind == UnevaluatedKind::ModelRequestFailed && !requestFailure.contains(unit.unit.task))
            requestFailure.insert(unit.unit.task, unit.reason);
    for (const UnitResponse& response : responses)
        if (response.response.error.isEmpty())
            answered.insert(response.unit.task);
    const bool compileOnly = config.compileOnly;
    for (auto it = byTask.cbegin(); it != byTask.cend(); ++it) {
        // The run's own selection rule for the task (taskbest.h: the one rule every page reads).
        const TaskSelection selection = taskSelection(config, it.key());
        int chosen = -1;
        const std::optional<TaskOutcome> selected =
            selectOutcome(it.value(), &chosen, selection.mode == SelectionMode::Last, compileOnly);
        TaskOutcome outcome;
        UnevaluatedTask missing{it.key(), taskLevel(it.key()), QString(), QString()};
        if (selected) {
            outcome = *selected;
            result.chosenEvaluation.insert(it.key(), it.value().at(chosen).id);
            if (isMachineFault(outcome.status, compileOnly)) {
                missing.kind = UnevaluatedKind::MachineFailure;
                missing.reason = machineFailureReason(it.value().at(chosen));
            }
        } else {
            // No evaluation at all: a failure (neither correct nor compiled), with its reason.
            if (requestFailure.contains(it.key())) {
                missing.kind = UnevaluatedKind::ModelRequestFailed;
                missing.reason = requestFailure.value(it.key());
            } else if (answered.contains(it.key())) {
                missing.kind = UnevaluatedKind::NotEvaluated;
                missing.reason = QStringLiteral("not evaluated: the run stopped before the evaluation");
            } else {
                missing.kind = UnevaluatedKind::NotStarted;
                missing.reason = QStringLiteral("not started: the run stopped before the task");
            }
            outcome.task = it.key();
            outcome.level = missing.level;
            outcome.status = missing.kind;
            outcome.speedup = kNaN;
            outcome.compiled = false;
        }
        if (!missing.kind.isEmpty())
            result.unevaluated.append(missing);
        result.outcomes.append(outcome);
    }
    return result;
}

RunOutcomes runOutcomes(const RunStore& store, const RunInfo& info)
{
    return runOutcomes(store, info, store.evaluations(info.id));
}

QString RunReport::label() const
{
    return runLabel(run);
}

QMap<QString, int> RunReport::unevaluatedByKind() const
{
    QMap<QString, int> counts;
    for (const UnevaluatedTask& task : unevaluated)
        ++counts[task.kind];
    return counts;
}

namespace {

// A run of a routing (not one with regimes per level only: those are counted as their regime's).
bool isRoutedRun(const RunConfig& config)
{
    return config.routing.has_value();
}

} // namespace

QString notMainRegimeReason(const RunInfo& run)
{
    const RunConfig& config = run.config;
    if (config.isSweep())
        return QStringLiteral("part of a sweep (n = %1): a sweep's runs are its best-of-n curve")
            .arg(config.regime.fields.n);
    if (isRoutedRun(config))
        return QStringLiteral("a routed run: it is itself a routing");
    const Regime& stored = config.regime.fields;
    static const QStringList tableRegimes = {QStringLiteral("zero-shot"), QStringLiteral("profiling-guided"),
                                             QStringLiteral("iterative"), QStringLiteral("agent")};
    if (!tableRegimes.contains(stored.name))
        return QStringLiteral(
                   "regime %1 is not one of the study's four (zero-shot, profiling-guided, iterative, agent)")
            .arg(stored.name.isEmpty() ? QStringLiteral("(none stored)") : stored.name);
    if (!stored.ablated.isEmpty())
        return QStringLiteral("an ablation (%1 off)").arg(stored.ablated.join(QStringLiteral(", ")));
    const std::optional<Regime> builtin = Regime::builtin(stored.name);
    if (!builtin)
        return QStringLiteral("regime %1 is not built in").arg(stored.name);
    // Every setting that differs from the built-in regime, each with both values.
    const auto temperature = [](const std::optional<double>& t) {
        return t ? QString::number(*t) : QStringLiteral("unset");
    };
    QStringList differs;
    if (stored.n != builtin->n)
        differs << QStringLiteral("n = %1 (built in: %2)").arg(stored.n).arg(builtin->n);
    if (stored.turns != builtin->turns)
        differs << QStringLiteral("%1 turn(s) (built in: %2)").arg(stored.turns).arg(builtin->turns);
    if (stored.temperature != builtin->temperature)
        differs << QStringLiteral("temperature %1 (built in: %2)")
                       .arg(temperature(stored.temperature), temperature(builtin->temperature));
    if (stored.feedback != builtin->feedback)
        differs
            << QStringLiteral("feedback %1 (built in: %2)").arg(toString(stored.feedback), toString(builtin->feedback));
    if (stored.selection != builtin->selection)
        differs << QStringLiteral("selection %1 (built in: %2)")
                       .arg(toString(stored.selection), toString(builtin->selection));
    if (stored.stopWhenCorrect != builtin->stopWhenCorrect)
        differs << QStringLiteral("stop when correct %1 (built in: %2)")
                       .arg(stored.stopWhenCorrect ? QStringLiteral("on") : QStringLiteral("off"),
                            builtin->stopWhenCorrect ? QStringLiteral("on") : QStringLiteral("off"));
    if (!differs.isEmpty())
        return QStringLiteral("not %1 as built in: %2").arg(stored.name, differs.join(QStringLiteral(", ")));
    return QString();
}

bool isMainRegimeRun(const RunInfo& run)
{
    return notMainRegimeReason(run).isEmpty();
}

QJsonObject ablationBaselineKey(const RunInfo& run)
{
    const RunConfig& config = run.config;
    const Regime& stored = config.regime.fields;
    const std::optional<Regime> builtin = Regime::builtin(stored.name);
    const Ablations off = Ablations::fromOffNames(stored.ablated);
    // The value each field would have with the switch on.
    const int n = !off.bestOfN && builtin ? builtin->n : stored.n;
    const SelectionMode selection = !off.monotone && builtin ? builtin->selection : stored.selection;
    const FeedbackMode feedback = !off.feedbackAnalyzer && builtin ? builtin->feedback : stored.feedback;
    QStringList tasks = config.tasks;
    tasks.sort();
    return QJsonObject{{QStringLiteral("regime"), stored.name},
                       {QStringLiteral("tasks"), QJsonArray::fromStringList(tasks)},
                       {QStringLiteral("n"), n},
                       {QStringLiteral("turns"), stored.turns},
                       {QStringLiteral("temperature"),
                        stored.temperature ? QJsonValue(*stored.temperature) : QJsonValue(QJsonValue::Null)},
                       {QStringLiteral("profile"), config.protocolProfile},
                       // a run stored without its scale has none to compare (no key)
                       {QStringLiteral("scale"),
                        config.scale.isEmpty() ? QJsonValue(QJsonValue::Undefined) : QJsonValue(config.scale)},
                       {QStringLiteral("feedback"), toString(feedback)},
                       {QStringLiteral("selection"), toString(selection)},
                       {QStringLiteral("stop_when_correct"), stored.stopWhenCorrect},
                       {QStringLiteral("compile_only"), config.compileOnly},
                       // Same model and server, same answer format (issue 36: a mixed database paired a
                       // KernelBench-format ablation with a native baseline).
                       {QStringLiteral("model"), config.model},
                       {QStringLiteral("endpoint"), config.endpoint},
                       {QStringLiteral("answer_format"), config.answerFormat}};
}

// Whether two runs asked with the same wording: every template both stored is the same text. A
// template only one of them used says nothing against it (an ablation leaves a role out, or swaps
// the agent's wording for the pilot's under other names).
bool sameSharedTemplates(const RunInfo& a, const RunInfo& b)
{
    const RunConfig& ca = a.config;
    const RunConfig& cb = b.config;
    for (auto it = ca.templates.cbegin(); it != ca.templates.cend(); ++it) {
        const auto other = cb.templates.constFind(it.key());
        if (other != cb.templates.cend() && other.value() != it.value())
            return false;
    }
    return true;
}

bool RecordedComparison::theirCompiled() const
{
    return recorded.verdict.value(QLatin1String("compiled")).toBool(false);
}

bool RecordedComparison::theirCorrect() const
{
    return recorded.verdict.value(QLatin1String("correct")).toBool(false);
}

namespace {

// The third party's verdicts of an imported run, each beside our (last) evaluation of its candidate.
QList<RecordedComparison> recordedComparisons(const RunStore& store, const RunInfo& info,
                                              const QList<EvaluationRecord>& evaluations, bool compileOnly)
{
    QList<RecordedComparison> list;
    const QList<RecordedVerdictRecord> verdicts = store.recordedVerdicts(info.id);
    if (verdicts.isEmpty())
        return list;
    QHash<qint64, const EvaluationRecord*> ours;
    for (const EvaluationRecord& e : evaluations)
        ours.insert(e.candidateId, &e); // the last one of a candidate wins
    for (const RecordedVerdictRecord& v : verdicts) {
        RecordedComparison c;
        c.recorded = v;
        if (const EvaluationRecord* e = ours.value(v.candidateId)) {
            const TaskOutcome outcome = outcomeOf(*e, compileOnly);
            c.evaluationId = e->id;
            c.status = e->status;
            c.compiled = outcome.compiled;
            c.correct = !compileOnly && e->evaluation().countsAsCorrect();
            if (std::isfinite(outcome.speedup))
                c.speedup = outcome.speedup;
        }
        list.append(c);
    }
    std::stable_sort(list.begin(), list.end(), [](const RecordedComparison& a, const RecordedComparison& b) {
        const auto key = [](const RecordedComparison& c) {
            return std::make_tuple(taskLevel(c.recorded.task), c.recorded.task.section(QLatin1Char('/'), 1).toInt(),
                                   c.recorded.sample);
        };
        return key(a) < key(b);
    });
    return list;
}

} // namespace

std::optional<Report> buildReport(const RunStore& store, const QList<qint64>& runIds, const ReportOptions& options,
                                  QString* error)
{
    const auto failWith = [error](const QString& message) -> std::optional<Report> {
        if (error)
            *error = message;
        return std::nullopt;
    };
    if (!store.isOpen())
        return failWith(QStringLiteral("the run store is not open"));

    QList<RunInfo> infos;
    if (runIds.isEmpty()) {
        infos = store.runs();
        if (!store.errorString().isEmpty() && infos.isEmpty())
            return failWith(store.errorString());
    } else {
        for (const qint64 id : runIds) {
            const std::optional<RunInfo> info = store.run(id);
            if (!info)
                return failWith(QStringLiteral("unknown run %1 in %2").arg(id).arg(store.path()));
            infos.append(*info);
        }
    }

    Report report;
    report.database = store.path();
    QMap<QString, QSet<QString>> answersOfTask; // task -> source hashes of its evaluated candidates
    QSet<int> levels;
    QMap<QString, QList<PickCandidate>> picks; // task -> every candidate of the runs, for its one best
    for (const RunInfo& info : infos) {
        RunReport run;
        run.run = info;
        const QList<EvaluationRecord> evaluations = store.evaluations(info.id);
        for (const EvaluationRecord& e : evaluations)
            picks[e.task].append(PickCandidate::of(info.id, e));
        RunOutcomes outcomes = runOutcomes(store, info, evaluations);
        run.compileOnly = isCompileOnlyRun(info);
        run.evaluations = int(evaluations.size());
        for (const EvaluationRecord& e : evaluations) {
            run.reusedEvaluations += e.result.contains(QLatin1String(kReusedFromCandidateKey)) ? 1 : 0;
            run.reusedFromOtherRuns += e.result.contains(QLatin1String(kReusedFromRunKey)) ? 1 : 0;
            if (e.decoded && e.decoded->candidate && !e.decoded->candidate->sourceHash.isEmpty()) {
                answersOfTask[e.task].insert(e.decoded->candidate->sourceHash);
                ++report.answersJudged.evaluationsOfTask[e.task];
            } else {
                ++report.answersJudged.withoutHash;
            }
        }
        run.outcomes = outcomes.outcomes;
        run.chosenEvaluation = outcomes.chosenEvaluation;
        run.unevaluated = outcomes.unevaluated;
        for (const TaskOutcome& outcome : std::as_const(run.outcomes))
            levels.insert(outcome.level);
        run.summary = summarize(run.outcomes, options.bootstrap);
        run.usage = store.usage(info.id);
        run.ablated.append(info.config.regime.fields.ablated);
        QStringList taskIds;
        for (const TaskOutcome& outcome : std::as_const(run.outcomes))
            taskIds << outcome.task;
        run.firstTurnPassAtN = firstTurnPassAtNFor(evaluations, taskIds, options.bootstrap);
        run.fastP = fastPOf(run.outcomes);
        run.recorded = recordedComparisons(store, info, evaluations, run.compileOnly);
        report.runs.append(run);
    }
    report.levels = QList<int>(levels.cbegin(), levels.cend());
    std::sort(report.levels.begin(), report.levels.end());
    for (auto it = picks.cbegin(); it != picks.cend(); ++it)
        if (const std::optional<int> best = bestCandidateOfTask(it.value(), infos, it.key())) {
            const PickCandidate& c = it.value().at(*best);
            report.bestOfTask.insert(it.key(), TaskBest{c.run, c.evaluation, c.turn, c.sample});
        }

    for (int i = 0; i < report.runs.size(); ++i) {
        for (int j = i + 1; j < report.runs.size(); ++j) {
            PairReport pair;
            pair.runA = report.runs.at(i).run.id;
            pair.runB = report.runs.at(j).run.id;
            pair.comparison = comparePaired(report.runs.at(i).outcomes, report.runs.at(j).outcomes, options.bootstrap);
            report.pairs.append(pair);
        }
    }

    // Ablations: each run with switches off against the first run that differs from it only by
    // those switches (ablationBaselineKey): never a sweep, a routed run or another n by accident.
    for (const RunReport& run : std::as_const(report.runs)) {
        if (run.ablated.isEmpty())
            continue;
        AblationRow row;
        row.run = run.run.id;
        row.regime = run.run.regime;
        row.switchedOff = run.ablated;
        const QJsonObject key = ablationBaselineKey(run.run);
        for (const RunReport& other : std::as_const(report.runs)) {
            const RunConfig& config = other.run.config;
            if (!other.ablated.isEmpty() || config.isSweep() || isRoutedRun(config) ||
                ablationBaselineKey(other.run) != key || !sameSharedTemplates(run.run, other.run))
                continue;
            row.baseline = other.run.id;
            row.comparison = comparePaired(run.outcomes, other.outcomes, options.bootstrap);
            break;
        }
        if (!row.baseline)
            row.note = QStringLiteral("no baseline: no run without ablation of %1 with the same tasks, n = %2, %3 "
                                      "turn(s), temperature %4, profile %5, model, endpoint, answer format and "
                                      "wording of the templates both use in this report")
                           .arg(key.value(QLatin1String("regime")).toString())
                           .arg(key.value(QLatin1String("n")).toInt())
                           .arg(key.value(QLatin1String("turns")).toInt())
                           .arg(key.value(QLatin1String("temperature")).isDouble()
                                    ? QString::number(key.value(QLatin1String("temperature")).toDouble())
                                    : QStringLiteral("unset"),
                                key.value(QLatin1String("profile")).toString().isEmpty()
                                    ? QStringLiteral("unset")
                                    : key.value(QLatin1String("profile")).toString());
        report.ablations.append(row);
    }

    // Sweeps: the runs of one `kwb sweep`, by n.
    for (const RunReport& run : std::as_const(report.runs)) {
        const RunConfig& config = run.run.config;
        const QString id = config.sweep ? config.sweep->id : QString();
        if (id.isEmpty())
            continue; // not a sweep, or one of the old single-run sweeps (first-turn pass@n only)
        auto curve =
            std::find_if(report.sweeps.begin(), report.sweeps.end(), [&](const SweepCurve& c) { return c.id == id; });
        if (curve == report.sweeps.end()) {
            report.sweeps.append(SweepCurve{id, run.run.regime, {}});
            curve = report.sweeps.end() - 1;
        }
        const int n = config.regime.fields.n;
        curve->points.append(SweepPoint{n, run.run.id, run.summary.overall, run.summary.perLevel});
    }
    for (SweepCurve& curve : report.sweeps)
        std::stable_sort(curve.points.begin(), curve.points.end(),
                         [](const SweepPoint& a, const SweepPoint& b) { return a.n < b.n; });

    // Routing, the study's rule: each level from the main regime run that solved most of its tasks
    // (the first such run on a tie), over main regime runs of at least two regimes.
    QList<const RunReport*> mainRuns;
    QSet<QString> mainRegimes;
    for (const RunReport& run : std::as_const(report.runs))
        if (isMainRegimeRun(run.run)) {
            mainRuns.append(&run);
            mainRegimes.insert(run.run.regime);
        }
    if (mainRegimes.size() >= 2 && !report.levels.isEmpty()) {
        RoutingReport routing;
        for (const RunReport& run : std::as_const(report.runs)) {
            if (mainRuns.contains(&run))
                routing.candidates.append(run.run.id);
            else {
                routing.leftOut.append(run.run.id);
                routing.leftOutWhy.insert(run.run.id, notMainRegimeReason(run.run));
            }
        }
        QMap<QString, QList<TaskOutcome>> byLabel;
        QMap<int, QString> labelForLevel;
        for (const int level : std::as_const(report.levels)) {
            const RunReport* bestRun = nullptr;
            int bestCorrect = -1;
            for (const RunReport* run : std::as_const(mainRuns)) {
                const auto metrics = run->summary.perLevel.constFind(level);
                if (metrics == run->summary.perLevel.cend() || metrics->tasks == 0)
                    continue;
                if (metrics->correct > bestCorrect) {
                    bestCorrect = metrics->correct;
                    bestRun = run;
                }
            }
            if (!bestRun)
                continue;
            routing.runForLevel.insert(level, bestRun->run.id);
            labelForLevel.insert(level, bestRun->label());
            byLabel.insert(bestRun->label(), bestRun->outcomes);
        }
        routing.estimate = estimateRouting(byLabel, labelForLevel, options.bootstrap);
        report.routing = routing;
    }
    for (auto it = answersOfTask.cbegin(); it != answersOfTask.cend(); ++it)
        report.answersJudged.distinctOfTask.insert(it.key(), int(it->size()));
    return report;
}

} // namespace kwb
