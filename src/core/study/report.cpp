#include "core/study/report.h"

#include "core/run/regime.h"
#include "core/run/runname.h"
#include "core/store/runstore.h"
#include "core/workers/workersupervisor.h"

#include <QJsonArray>
#include <QRegularExpression>
#include <QSet>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kwb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString noiseCaveat()
{
    return QStringLiteral("Gaps of one or two tasks are within noise (the study's caveat): read the 95 % "
                          "intervals and the sign-test p before the point values.");
}

QString routingCaveat()
{
    return QStringLiteral("Routing takes each level from the run that solved most of its tasks, chosen after "
                          "seeing these results: an optimistic, in-sample estimate.");
}

// ---- number formatting ----------------------------------------------------------------------

QString fixed(double value, int decimals)
{
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("-");
}

/// "50.0 [16.7, 83.3]", "-" when there is no value.
QString withInterval(const Estimate& estimate, int decimals)
{
    if (!estimate.isValid())
        return QStringLiteral("-");
    return QStringLiteral("%1 [%2, %3]")
        .arg(fixed(estimate.value, decimals), fixed(estimate.low, decimals), fixed(estimate.high, decimals));
}

QString count(const std::optional<qint64>& value)
{
    return value ? QString::number(*value) : QStringLiteral("-");
}

QString seconds(const std::optional<qint64>& ms)
{
    return ms ? QStringLiteral("%1 s").arg(QString::number(double(*ms) / 1000.0, 'f', 1)) : QStringLiteral("-");
}

QJsonValue jsonNumber(double value)
{
    return std::isfinite(value) ? QJsonValue(value) : QJsonValue(QJsonValue::Null);
}

QJsonValue jsonCount(const std::optional<qint64>& value)
{
    return value ? QJsonValue(double(*value)) : QJsonValue(QJsonValue::Null);
}

QJsonObject estimateJson(const Estimate& estimate)
{
    return {{QStringLiteral("value"), jsonNumber(estimate.value)},
            {QStringLiteral("low"), jsonNumber(estimate.isValid() ? estimate.low : kNaN)},
            {QStringLiteral("high"), jsonNumber(estimate.isValid() ? estimate.high : kNaN)}};
}

QJsonObject metricsJson(const Metrics& metrics)
{
    return {{QStringLiteral("tasks"), metrics.tasks},
            {QStringLiteral("correct"), metrics.correct},
            {QStringLiteral("fast1"), metrics.fast1},
            {QStringLiteral("compiled"), metrics.compiled},
            {QStringLiteral("correct_pct"), estimateJson(metrics.correctPct)},
            {QStringLiteral("fast1_pct"), estimateJson(metrics.fast1Pct)},
            {QStringLiteral("compiled_pct"), estimateJson(metrics.compiledPct)},
            {QStringLiteral("geomean_speedup"), estimateJson(metrics.geomeanSpeedup)},
            {QStringLiteral("geomean_count"), metrics.geomeanCount}};
}

// ---- CSV --------------------------------------------------------------------------------------

QJsonObject bestOfNJson(const BestOfNReport& curve)
{
    const auto points = [](const QList<BestOfNPoint>& list) {
        QJsonArray out;
        for (const BestOfNPoint& p : list)
            out.append(QJsonObject{{QStringLiteral("n"), p.n},
                                   {QStringLiteral("tasks"), p.tasks},
                                   {QStringLiteral("correct_pct"), estimateJson(p.passPct)}});
        return out;
    };
    QJsonObject levels;
    for (auto it = curve.perLevel.cbegin(); it != curve.perLevel.cend(); ++it)
        levels.insert(QString::number(it.key()), points(it.value()));
    return {{QStringLiteral("samples"), curve.samples},
            {QStringLiteral("overall"), points(curve.overall)},
            {QStringLiteral("levels"), levels}};
}

QString csvCell(const QString& cell)
{
    if (!cell.contains(QLatin1Char(',')) && !cell.contains(QLatin1Char('"')) && !cell.contains(QLatin1Char('\n'))
        && !cell.contains(QLatin1Char('\r')))
        return cell;
    QString quoted = cell;
    quoted.replace(QStringLiteral("\""), QStringLiteral("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString csvNumber(double value)
{
    return std::isfinite(value) ? QString::number(value, 'g', 12) : QString();
}

class CsvWriter
{
public:
    CsvWriter() { row({QStringLiteral("section"), QStringLiteral("run"), QStringLiteral("run_b"),
                       QStringLiteral("level"), QStringLiteral("metric"), QStringLiteral("value"),
                       QStringLiteral("low"), QStringLiteral("high")}); }

    void row(const QStringList& cells)
    {
        QStringList quoted;
        for (const QString& cell : cells)
            quoted.append(csvCell(cell));
        m_text += quoted.join(QLatin1Char(',')) + QStringLiteral("\r\n");
    }
    void value(const QString& section, const QString& run, const QString& runB, const QString& level,
               const QString& metric, const QString& value)
    {
        row({section, run, runB, level, metric, value, QString(), QString()});
    }
    void estimate(const QString& section, const QString& run, const QString& runB, const QString& level,
                  const QString& metric, const Estimate& estimate)
    {
        const bool valid = estimate.isValid();
        row({section, run, runB, level, metric, csvNumber(estimate.value), valid ? csvNumber(estimate.low) : QString(),
             valid ? csvNumber(estimate.high) : QString()});
    }
    void metrics(const QString& section, const QString& run, const QString& level, const Metrics& metrics)
    {
        value(section, run, QString(), level, QStringLiteral("tasks"), QString::number(metrics.tasks));
        value(section, run, QString(), level, QStringLiteral("correct"), QString::number(metrics.correct));
        estimate(section, run, QString(), level, QStringLiteral("correct_pct"), metrics.correctPct);
        value(section, run, QString(), level, QStringLiteral("fast1"), QString::number(metrics.fast1));
        estimate(section, run, QString(), level, QStringLiteral("fast1_pct"), metrics.fast1Pct);
        value(section, run, QString(), level, QStringLiteral("compiled"), QString::number(metrics.compiled));
        estimate(section, run, QString(), level, QStringLiteral("compiled_pct"), metrics.compiledPct);
        estimate(section, run, QString(), level, QStringLiteral("geomean_speedup"), metrics.geomeanSpeedup);
        value(section, run, QString(), level, QStringLiteral("geomean_count"), QString::number(metrics.geomeanCount));
    }
    QString text() const { return m_text; }

private:
    QString m_text;
};

QString optionalText(const std::optional<qint64>& value)
{
    return value ? QString::number(*value) : QString();
}

// ---- Markdown ---------------------------------------------------------------------------------

QString mdCell(QString cell)
{
    cell.replace(QLatin1Char('|'), QStringLiteral("\\|"));
    cell.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return cell;
}

QString mdRow(const QStringList& cells)
{
    QStringList escaped;
    for (const QString& cell : cells)
        escaped.append(mdCell(cell));
    return QStringLiteral("| ") + escaped.join(QStringLiteral(" | ")) + QStringLiteral(" |\n");
}

/// The header and its rule: the first `textColumns` left-aligned, the numbers after them right.
QString mdHeader(const QStringList& cells, int textColumns)
{
    QString text = mdRow(cells);
    QStringList rule;
    for (int i = 0; i < cells.size(); ++i)
        rule.append(i < textColumns ? QStringLiteral("---") : QStringLiteral("--:"));
    return text + QStringLiteral("|") + rule.join(QLatin1Char('|')) + QStringLiteral("|\n");
}

QString geomeanCell(const Metrics& metrics)
{
    if (!metrics.geomeanSpeedup.isValid())
        return QStringLiteral("-");
    return QStringLiteral("%1 (%2)").arg(withInterval(metrics.geomeanSpeedup, 2)).arg(metrics.geomeanCount);
}

const RunReport* findRun(const Report& report, qint64 id)
{
    for (const RunReport& run : report.runs) {
        if (run.run.id == id)
            return &run;
    }
    return nullptr;
}

/// The selection key's order: is `a` strictly better than `b`?
bool better(const TaskOutcome& a, const TaskOutcome& b)
{
    if (a.correct() != b.correct())
        return a.correct();
    if (a.compiled != b.compiled)
        return a.compiled;
    // Any verdict on the candidate says more than a machine fault, which says nothing (a machine
    // fault never counts as compiled: outcomeOf).
    const bool machineA = isMachineFault(a.status);
    if (machineA != isMachineFault(b.status))
        return !machineA;
    const double sa = std::isfinite(a.speedup) ? a.speedup : -std::numeric_limits<double>::infinity();
    const double sb = std::isfinite(b.speedup) ? b.speedup : -std::numeric_limits<double>::infinity();
    return sa > sb;
}

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
    // A machine fault is not evaluated: neither compiled nor a verdict.
    outcome.compiled = !isMachineFault(evaluation.status, compileOnly) && decoded.compiled();
    return outcome;
}

bool isCompileOnlyRun(const RunInfo& run)
{
    return run.config.value(QLatin1String("compile_only")).toBool(false);
}

std::optional<TaskOutcome> selectOutcome(const QList<EvaluationRecord>& evaluations, int* chosenIndex, bool lastTurnWins,
                                         bool compileOnly)
{
    int lastTurn = 0;
    for (const EvaluationRecord& e : evaluations)
        lastTurn = std::max(lastTurn, e.turn);
    // Monotone selection over everything the run tried for the task: a correct kernel beats any
    // incorrect one, a compiled one beats one that never compiled, and among equals the faster
    // wins (a missing speedup counts as slowest). Only a strictly better evaluation replaces the
    // current choice, so ties keep the earliest one.
    std::optional<TaskOutcome> best;
    for (int i = 0; i < evaluations.size(); ++i) {
        if (lastTurnWins && evaluations.at(i).turn != lastTurn)
            continue;
        const TaskOutcome outcome = outcomeOf(evaluations.at(i), compileOnly);
        if (!best || better(outcome, *best)) {
            best = outcome;
            if (chosenIndex)
                *chosenIndex = i;
        }
    }
    return best;
}

std::optional<BestOfNReport> bestOfNFor(const QList<EvaluationRecord>& evaluations, const BootstrapOptions& options)
{
    // Per task: its first turn, and per sample of that turn whether it was correct.
    QMap<QString, int> firstTurn;
    for (const EvaluationRecord& e : evaluations) {
        const auto it = firstTurn.constFind(e.task);
        if (it == firstTurn.cend() || e.turn < *it)
            firstTurn.insert(e.task, e.turn);
    }
    QMap<QString, QMap<int, bool>> samples;
    for (const EvaluationRecord& e : evaluations) {
        if (e.turn != firstTurn.value(e.task))
            continue;
        bool& correct = samples[e.task][e.sample];
        correct = correct || (evaluationStatusFromWire(e.status) == EvaluationStatus::Correct &&
                              !e.evaluation().belowRooflineFloor());
    }
    BestOfNReport report;
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
        const bool allMachine = !list.isEmpty() && std::all_of(list.cbegin(), list.cend(), [](const EvaluationRecord& e) {
            return isMachineFailure(e.status);
        });
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
    const RunConfig config = RunConfig::fromJson(info.config);
    for (const QString& task : config.taskIds())
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
    // The run's own selection rule, as `kwb run` stored it with the regime.
    const bool lastTurnWins = Regime::fieldsOf(config.regimeJson()).selection == SelectionMode::Last;
    const bool compileOnly = isCompileOnlyRun(info);
    for (auto it = byTask.cbegin(); it != byTask.cend(); ++it) {
        int chosen = -1;
        const std::optional<TaskOutcome> selected = selectOutcome(it.value(), &chosen, lastTurnWins, compileOnly);
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
    QSet<int> levels;
    for (const RunInfo& info : infos) {
        RunReport run;
        run.run = info;
        const QList<EvaluationRecord> evaluations = store.evaluations(info.id);
        RunOutcomes outcomes = runOutcomes(store, info, evaluations);
        run.compileOnly = isCompileOnlyRun(info);
        run.evaluations = int(evaluations.size());
        run.outcomes = outcomes.outcomes;
        run.chosenEvaluation = outcomes.chosenEvaluation;
        run.unevaluated = outcomes.unevaluated;
        for (const TaskOutcome& outcome : std::as_const(run.outcomes))
            levels.insert(outcome.level);
        run.summary = summarize(run.outcomes, options.bootstrap);
        run.usage = store.usage(info.id);
        run.ablated.append(Regime::fieldsOf(RunConfig::fromJson(info.config).regimeJson()).ablated);
        run.bestOfN = bestOfNFor(evaluations, options.bootstrap);
        report.runs.append(run);
    }
    report.levels = QList<int>(levels.cbegin(), levels.cend());
    std::sort(report.levels.begin(), report.levels.end());

    for (int i = 0; i < report.runs.size(); ++i) {
        for (int j = i + 1; j < report.runs.size(); ++j) {
            PairReport pair;
            pair.runA = report.runs.at(i).run.id;
            pair.runB = report.runs.at(j).run.id;
            pair.comparison = comparePaired(report.runs.at(i).outcomes, report.runs.at(j).outcomes, options.bootstrap);
            report.pairs.append(pair);
        }
    }

    // Ablations: each run with switches off against the first full run of the same regime.
    for (const RunReport& run : std::as_const(report.runs)) {
        if (run.ablated.isEmpty())
            continue;
        AblationRow row;
        row.run = run.run.id;
        row.regime = run.run.regime;
        row.switchedOff = run.ablated;
        for (const RunReport& other : std::as_const(report.runs)) {
            if (other.ablated.isEmpty() && other.run.regime == run.run.regime) {
                row.baseline = other.run.id;
                row.comparison = comparePaired(run.outcomes, other.outcomes, options.bootstrap);
                break;
            }
        }
        report.ablations.append(row);
    }

    // Routing: each level from the run that solved most of its tasks (the first such run on a tie).
    if (report.runs.size() >= 2 && !report.levels.isEmpty()) {
        RoutingReport routing;
        QMap<QString, QList<TaskOutcome>> byLabel;
        QMap<int, QString> labelForLevel;
        for (const int level : std::as_const(report.levels)) {
            const RunReport* bestRun = nullptr;
            int bestCorrect = -1;
            for (const RunReport& run : std::as_const(report.runs)) {
                const auto metrics = run.summary.perLevel.constFind(level);
                if (metrics == run.summary.perLevel.cend() || metrics->tasks == 0)
                    continue;
                if (metrics->correct > bestCorrect) {
                    bestCorrect = metrics->correct;
                    bestRun = &run;
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
    return report;
}

ReportTable perLevelTable(const Report& report)
{
    ReportTable table;
    table.headers = {QStringLiteral("run"),        QStringLiteral("level"),      QStringLiteral("tasks"),
                     QStringLiteral("correct %"),  QStringLiteral("fast_1 %"),   QStringLiteral("compiled %"),
                     QStringLiteral("geomean speedup (n)")};
    table.textColumns = 2;
    const QString notMeasured = QStringLiteral("not measured");
    for (const RunReport& run : report.runs) {
        for (auto it = run.summary.perLevel.cbegin(); it != run.summary.perLevel.cend(); ++it) {
            const Metrics& m = it.value();
            table.rows.append({run.label(), QStringLiteral("L%1").arg(it.key()), QString::number(m.tasks),
                               run.compileOnly ? notMeasured : withInterval(m.correctPct, 1),
                               run.compileOnly ? notMeasured : withInterval(m.fast1Pct, 1),
                               withInterval(m.compiledPct, 1), run.compileOnly ? notMeasured : geomeanCell(m)});
        }
    }
    return table;
}

QString reportMarkdown(const Report& report)
{
    QString md = QStringLiteral("# Kernel Workbench report\n\n");
    md += QStringLiteral("Database: `%1`. Each task counts once, by its best evaluation (correct, then compiled, "
                         "then speedup). Percentages over tasks with 95 % bootstrap intervals in brackets.\n\n")
              .arg(report.database);
    if (report.runs.isEmpty())
        return md + QStringLiteral("No runs.\n");

    md += QStringLiteral("## Runs\n\n");
    QStringList header = {QStringLiteral("run"),        QStringLiteral("regime"),
                          QStringLiteral("name"),       QStringLiteral("status"),
                          QStringLiteral("tasks"),      QStringLiteral("correct %"),
                          QStringLiteral("fast_1 %"),   QStringLiteral("compiled %")};
    for (const int level : report.levels)
        header.append(QStringLiteral("solved L%1").arg(level));
    header << QStringLiteral("geomean speedup (n)") << QStringLiteral("tokens in / out")
           << QStringLiteral("model time");
    md += mdHeader(header, 4);
    for (const RunReport& run : report.runs) {
        const Metrics& m = run.summary.overall;
        const QString notMeasured = QStringLiteral("not measured");
        QStringList cells = {QStringLiteral("#%1").arg(run.run.id), run.run.regime, run.run.name, run.run.status,
                             QString::number(m.tasks), run.compileOnly ? notMeasured : withInterval(m.correctPct, 1),
                             run.compileOnly ? notMeasured : withInterval(m.fast1Pct, 1),
                             withInterval(m.compiledPct, 1)};
        for (const int level : report.levels) {
            const auto it = run.summary.perLevel.constFind(level);
            cells.append(it == run.summary.perLevel.cend() ? QStringLiteral("-")
                         : run.compileOnly                 ? notMeasured
                                                           : QStringLiteral("%1/%2").arg(it->correct).arg(it->tasks));
        }
        cells << (run.compileOnly ? notMeasured : geomeanCell(m))
              << QStringLiteral("%1 / %2").arg(count(run.usage.tokensIn), count(run.usage.tokensOut))
              << seconds(run.usage.latencyMs);
        md += mdRow(cells);
    }

    md += QStringLiteral("\n## Per level\n\n");
    const ReportTable levels = perLevelTable(report);
    md += mdHeader(levels.headers, levels.textColumns);
    for (const QStringList& row : levels.rows)
        md += mdRow(row);
    for (const RunReport& run : report.runs)
        if (run.compileOnly)
            md += QStringLiteral("\n%1 is compile-only: correctness not measured (evaluated with `\"device\": "
                                 "\"none\"`: compiled and sandbox-checked only, nothing ran on a GPU).\n")
                      .arg(run.label());

    bool anyUnevaluated = false;
    for (const RunReport& run : report.runs)
        anyUnevaluated = anyUnevaluated || !run.unevaluated.isEmpty();
    if (anyUnevaluated) {
        md += QStringLiteral("\n## Tasks without an evaluation (counted as failures)\n\n"
                             "Not evaluated: nothing is known about these candidates (the model request failed, the "
                             "machine failed the evaluation: no_device, start_failed, worker_lost, protocol_error, or "
                             "the run stopped first). They are neither correct nor compiled; each counts as a failure "
                             "in the percentages above.\n\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("task"), QStringLiteral("reason")}, 3);
        for (const RunReport& run : report.runs)
            for (const UnevaluatedTask& task : run.unevaluated)
                md += mdRow({run.label(), task.task, task.reason});
    }

    if (!report.pairs.isEmpty()) {
        md += QStringLiteral("\n## Paired comparisons (tasks in both runs)\n\n");
        md += mdHeader({QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("tasks"),
                        QStringLiteral("A correct %"), QStringLiteral("B correct %"),
                        QStringLiteral("A − B, points"), QStringLiteral("only A"), QStringLiteral("only B"),
                        QStringLiteral("both"), QStringLiteral("neither"), QStringLiteral("sign-test p")},
                       2);
        QStringList missing;
        for (const PairReport& pair : report.pairs) {
            const RunReport* a = findRun(report, pair.runA);
            const RunReport* b = findRun(report, pair.runB);
            const PairedComparison& c = pair.comparison;
            md += mdRow({a->label(), b->label(), QString::number(c.tasks), fixed(c.correctPctA.value, 1),
                         fixed(c.correctPctB.value, 1), withInterval(c.differencePct, 1), QString::number(c.onlyA),
                         QString::number(c.onlyB), QString::number(c.both), QString::number(c.neither),
                         fixed(c.signTestP, 3)});
            if (!c.missingInA.isEmpty() || !c.missingInB.isEmpty())
                missing.append(QStringLiteral("%1 vs %2: %3 task(s) only in %2, %4 only in %1")
                                   .arg(a->label(), b->label())
                                   .arg(c.missingInA.size())
                                   .arg(c.missingInB.size()));
        }
        if (!missing.isEmpty())
            md += QStringLiteral("\nLeft out of the comparison: ") + missing.join(QStringLiteral("; "))
                  + QStringLiteral(".\n");
    }

    if (!report.ablations.isEmpty()) {
        md += QStringLiteral("\n## Ablations (each against the full regime, paired on shared tasks)\n\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("switched off"), QStringLiteral("against"),
                        QStringLiteral("tasks"), QStringLiteral("correct %"), QStringLiteral("fast_1 %"),
                        QStringLiteral("full correct %"), QStringLiteral("change, points"), QStringLiteral("sign-test p")},
                       3);
        for (const AblationRow& row : report.ablations) {
            const RunReport* run = findRun(report, row.run);
            const RunReport* base = row.baseline ? findRun(report, row.baseline) : nullptr;
            const Metrics& m = run->summary.overall;
            if (!row.comparison || !base) {
                md += mdRow({run->label(), row.switchedOff.join(QStringLiteral(", ")), QStringLiteral("no full run"),
                             QString::number(m.tasks), withInterval(m.correctPct, 1), withInterval(m.fast1Pct, 1),
                             QStringLiteral("-"), QStringLiteral("-"), QStringLiteral("-")});
                continue;
            }
            const PairedComparison& c = *row.comparison;
            md += mdRow({run->label(), row.switchedOff.join(QStringLiteral(", ")), base->label(), QString::number(c.tasks),
                         withInterval(m.correctPct, 1), withInterval(m.fast1Pct, 1), fixed(c.correctPctB.value, 1),
                         withInterval(c.differencePct, 1), fixed(c.signTestP, 3)});
        }
    }

    bool anyCurve = false;
    for (const RunReport& run : report.runs)
        anyCurve = anyCurve || run.bestOfN.has_value();
    if (anyCurve) {
        md += QStringLiteral("\n## Best-of-n (first turn; unbiased pass@n over each task's samples)\n\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("level"), QStringLiteral("n"), QStringLiteral("tasks"),
                        QStringLiteral("correct %")},
                       2);
        for (const RunReport& run : report.runs) {
            if (!run.bestOfN)
                continue;
            const auto rows = [&](const QString& level, const QList<BestOfNPoint>& curve) {
                for (const BestOfNPoint& p : curve)
                    md += mdRow({run.label(), level, QString::number(p.n), QString::number(p.tasks),
                                 withInterval(p.passPct, 1)});
            };
            rows(QStringLiteral("all"), run.bestOfN->overall);
            for (auto it = run.bestOfN->perLevel.cbegin(); it != run.bestOfN->perLevel.cend(); ++it)
                rows(QStringLiteral("L%1").arg(it.key()), it.value());
        }
    }

    if (report.routing) {
        const RoutingReport& routing = *report.routing;
        md += QStringLiteral("\n## Routing estimate\n\n") + routingCaveat() + QStringLiteral("\n\n");
        md += mdHeader({QStringLiteral("level"), QStringLiteral("run"), QStringLiteral("tasks"),
                        QStringLiteral("solved"), QStringLiteral("correct %")},
                       2);
        for (auto it = routing.runForLevel.cbegin(); it != routing.runForLevel.cend(); ++it) {
            const auto metrics = routing.estimate.perLevel.constFind(it.key());
            if (metrics == routing.estimate.perLevel.cend())
                continue;
            md += mdRow({QStringLiteral("L%1").arg(it.key()), findRun(report, it.value())->label(),
                         QString::number(metrics->tasks), QString::number(metrics->correct),
                         withInterval(metrics->correctPct, 1)});
        }
        const Metrics& combined = routing.estimate.combined;
        md += mdRow({QStringLiteral("all"), QStringLiteral("routed"), QString::number(combined.tasks),
                     QString::number(combined.correct), withInterval(combined.correctPct, 1)});
        if (!routing.estimate.problems.isEmpty()) {
            md += QStringLiteral("\n");
            for (const QString& problem : routing.estimate.problems)
                md += QStringLiteral("- ") + problem + QStringLiteral("\n");
        }
    }

    md += QStringLiteral("\n") + noiseCaveat() + QStringLiteral("\n");
    return md;
}

QString reportCsv(const Report& report)
{
    CsvWriter csv;
    const QString run = QStringLiteral("run");
    for (const RunReport& r : report.runs) {
        const QString id = QString::number(r.run.id);
        csv.metrics(run, id, QStringLiteral("all"), r.summary.overall);
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("evaluations"),
                  QString::number(r.evaluations));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("responses"),
                  QString::number(r.usage.responses));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("tokens_in"), optionalText(r.usage.tokensIn));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("tokens_out"),
                  optionalText(r.usage.tokensOut));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("model_time_ms"),
                  optionalText(r.usage.latencyMs));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("unevaluated"),
                  QString::number(r.unevaluated.size()));
        for (auto it = r.summary.perLevel.cbegin(); it != r.summary.perLevel.cend(); ++it)
            csv.metrics(run, id, QString::number(it.key()), it.value());
    }
    for (const RunReport& r : report.runs)
        for (const UnevaluatedTask& task : r.unevaluated)
            csv.value(QStringLiteral("unevaluated"), QString::number(r.run.id), QString(), QString::number(task.level),
                      task.task, task.reason);
    const QString paired = QStringLiteral("paired");
    for (const PairReport& pair : report.pairs) {
        const QString a = QString::number(pair.runA), b = QString::number(pair.runB), all = QStringLiteral("all");
        const PairedComparison& c = pair.comparison;
        csv.value(paired, a, b, all, QStringLiteral("tasks"), QString::number(c.tasks));
        csv.value(paired, a, b, all, QStringLiteral("both"), QString::number(c.both));
        csv.value(paired, a, b, all, QStringLiteral("only_a"), QString::number(c.onlyA));
        csv.value(paired, a, b, all, QStringLiteral("only_b"), QString::number(c.onlyB));
        csv.value(paired, a, b, all, QStringLiteral("neither"), QString::number(c.neither));
        csv.estimate(paired, a, b, all, QStringLiteral("correct_pct_a"), c.correctPctA);
        csv.estimate(paired, a, b, all, QStringLiteral("correct_pct_b"), c.correctPctB);
        csv.estimate(paired, a, b, all, QStringLiteral("difference_pct"), c.differencePct);
        csv.value(paired, a, b, all, QStringLiteral("sign_test_p"), csvNumber(c.signTestP));
    }
    const QString ablation = QStringLiteral("ablation");
    for (const AblationRow& row : report.ablations) {
        const QString a = QString::number(row.run), b = row.baseline ? QString::number(row.baseline) : QString();
        const QString all = QStringLiteral("all");
        csv.value(ablation, a, b, all, QStringLiteral("switched_off"), row.switchedOff.join(QLatin1Char('+')));
        if (!row.comparison)
            continue;
        csv.value(ablation, a, b, all, QStringLiteral("tasks"), QString::number(row.comparison->tasks));
        csv.estimate(ablation, a, b, all, QStringLiteral("correct_pct"), row.comparison->correctPctA);
        csv.estimate(ablation, a, b, all, QStringLiteral("baseline_correct_pct"), row.comparison->correctPctB);
        csv.estimate(ablation, a, b, all, QStringLiteral("difference_pct"), row.comparison->differencePct);
        csv.value(ablation, a, b, all, QStringLiteral("sign_test_p"), csvNumber(row.comparison->signTestP));
    }
    const QString bestOfN = QStringLiteral("best_of_n");
    for (const RunReport& r : report.runs) {
        if (!r.bestOfN)
            continue;
        const QString id = QString::number(r.run.id);
        const auto points = [&](const QString& level, const QList<BestOfNPoint>& curve) {
            for (const BestOfNPoint& p : curve) {
                csv.value(bestOfN, id, QString(), level, QStringLiteral("tasks_n%1").arg(p.n), QString::number(p.tasks));
                csv.estimate(bestOfN, id, QString(), level, QStringLiteral("correct_pct_n%1").arg(p.n), p.passPct);
            }
        };
        points(QStringLiteral("all"), r.bestOfN->overall);
        for (auto it = r.bestOfN->perLevel.cbegin(); it != r.bestOfN->perLevel.cend(); ++it)
            points(QString::number(it.key()), it.value());
    }
    if (report.routing) {
        const QString routing = QStringLiteral("routing");
        for (auto it = report.routing->runForLevel.cbegin(); it != report.routing->runForLevel.cend(); ++it) {
            const auto metrics = report.routing->estimate.perLevel.constFind(it.key());
            if (metrics == report.routing->estimate.perLevel.cend())
                continue;
            const QString id = QString::number(it.value()), level = QString::number(it.key());
            csv.value(routing, id, QString(), level, QStringLiteral("tasks"), QString::number(metrics->tasks));
            csv.value(routing, id, QString(), level, QStringLiteral("correct"), QString::number(metrics->correct));
            csv.estimate(routing, id, QString(), level, QStringLiteral("correct_pct"), metrics->correctPct);
        }
        const Metrics& combined = report.routing->estimate.combined;
        csv.value(routing, QString(), QString(), QStringLiteral("all"), QStringLiteral("tasks"),
                  QString::number(combined.tasks));
        csv.value(routing, QString(), QString(), QStringLiteral("all"), QStringLiteral("correct"),
                  QString::number(combined.correct));
        csv.estimate(routing, QString(), QString(), QStringLiteral("all"), QStringLiteral("correct_pct"),
                     combined.correctPct);
    }
    return csv.text();
}

QJsonObject reportJson(const Report& report)
{
    QJsonArray runs;
    for (const RunReport& r : report.runs) {
        QJsonObject levels;
        for (auto it = r.summary.perLevel.cbegin(); it != r.summary.perLevel.cend(); ++it)
            levels.insert(QString::number(it.key()), metricsJson(it.value()));
        QJsonArray outcomes;
        for (const TaskOutcome& outcome : r.outcomes) {
            const auto chosen = r.chosenEvaluation.constFind(outcome.task);
            outcomes.append(QJsonObject{{QStringLiteral("task"), outcome.task},
                                        {QStringLiteral("level"), outcome.level},
                                        {QStringLiteral("status"), outcome.status},
                                        {QStringLiteral("compiled"), outcome.compiled},
                                        {QStringLiteral("speedup"), jsonNumber(outcome.speedup)},
                                        {QStringLiteral("evaluation_id"), chosen == r.chosenEvaluation.cend()
                                                                              ? QJsonValue()
                                                                              : QJsonValue(double(*chosen))}});
        }
        QJsonArray unevaluated;
        for (const UnevaluatedTask& task : r.unevaluated)
            unevaluated.append(QJsonObject{{QStringLiteral("task"), task.task},
                                           {QStringLiteral("level"), task.level},
                                           {QStringLiteral("kind"), task.kind},
                                           {QStringLiteral("reason"), task.reason}});
        runs.append(QJsonObject{
            {QStringLiteral("id"), double(r.run.id)},
            {QStringLiteral("name"), r.run.name},
            {QStringLiteral("regime"), r.run.regime},
            {QStringLiteral("status"), r.run.status},
            {QStringLiteral("created"), r.run.created.toString(Qt::ISODateWithMs)},
            {QStringLiteral("evaluations"), r.evaluations},
            {QStringLiteral("compile_only"), r.compileOnly},
            {QStringLiteral("note"), r.compileOnly ? QJsonValue(QStringLiteral("compile-only: correctness not measured"))
                                                   : QJsonValue()},
            {QStringLiteral("overall"), metricsJson(r.summary.overall)},
            {QStringLiteral("levels"), levels},
            {QStringLiteral("usage"),
             QJsonObject{{QStringLiteral("responses"), r.usage.responses},
                         {QStringLiteral("tokens_in"), jsonCount(r.usage.tokensIn)},
                         {QStringLiteral("tokens_out"), jsonCount(r.usage.tokensOut)},
                         {QStringLiteral("model_time_ms"), jsonCount(r.usage.latencyMs)}}},
            {QStringLiteral("outcomes"), outcomes},
            {QStringLiteral("unevaluated"), unevaluated},
            {QStringLiteral("ablated"), QJsonArray::fromStringList(r.ablated)},
            {QStringLiteral("best_of_n"), r.bestOfN ? QJsonValue(bestOfNJson(*r.bestOfN)) : QJsonValue()},
        });
    }

    QJsonArray comparisons;
    for (const PairReport& pair : report.pairs) {
        const PairedComparison& c = pair.comparison;
        comparisons.append(QJsonObject{
            {QStringLiteral("run_a"), double(pair.runA)},
            {QStringLiteral("run_b"), double(pair.runB)},
            {QStringLiteral("tasks"), c.tasks},
            {QStringLiteral("both"), c.both},
            {QStringLiteral("only_a"), c.onlyA},
            {QStringLiteral("only_b"), c.onlyB},
            {QStringLiteral("neither"), c.neither},
            {QStringLiteral("correct_pct_a"), estimateJson(c.correctPctA)},
            {QStringLiteral("correct_pct_b"), estimateJson(c.correctPctB)},
            {QStringLiteral("difference_pct"), estimateJson(c.differencePct)},
            {QStringLiteral("sign_test_p"), jsonNumber(c.signTestP)},
            {QStringLiteral("missing_in_a"), QJsonArray::fromStringList(c.missingInA)},
            {QStringLiteral("missing_in_b"), QJsonArray::fromStringList(c.missingInB)},
        });
    }

    QJsonValue routing(QJsonValue::Null);
    if (report.routing) {
        QJsonObject levels;
        for (auto it = report.routing->runForLevel.cbegin(); it != report.routing->runForLevel.cend(); ++it) {
            QJsonObject level{{QStringLiteral("run"), double(it.value())}};
            const auto metrics = report.routing->estimate.perLevel.constFind(it.key());
            if (metrics != report.routing->estimate.perLevel.cend())
                level.insert(QStringLiteral("metrics"), metricsJson(*metrics));
            levels.insert(QString::number(it.key()), level);
        }
        routing = QJsonObject{{QStringLiteral("levels"), levels},
                              {QStringLiteral("combined"), metricsJson(report.routing->estimate.combined)},
                              {QStringLiteral("problems"), QJsonArray::fromStringList(report.routing->estimate.problems)},
                              {QStringLiteral("note"), routingCaveat()}};
    }

    QJsonArray ablations;
    for (const AblationRow& row : report.ablations) {
        QJsonObject a{{QStringLiteral("run"), double(row.run)},
                      {QStringLiteral("baseline"), row.baseline ? QJsonValue(double(row.baseline)) : QJsonValue()},
                      {QStringLiteral("regime"), row.regime},
                      {QStringLiteral("switched_off"), QJsonArray::fromStringList(row.switchedOff)}};
        if (row.comparison) {
            a.insert(QStringLiteral("tasks"), row.comparison->tasks);
            a.insert(QStringLiteral("correct_pct"), estimateJson(row.comparison->correctPctA));
            a.insert(QStringLiteral("baseline_correct_pct"), estimateJson(row.comparison->correctPctB));
            a.insert(QStringLiteral("difference_pct"), estimateJson(row.comparison->differencePct));
            a.insert(QStringLiteral("sign_test_p"), jsonNumber(row.comparison->signTestP));
        }
        ablations.append(a);
    }

    return {{QStringLiteral("database"), report.database},
            {QStringLiteral("runs"), runs},
            {QStringLiteral("ablations"), ablations},
            {QStringLiteral("comparisons"), comparisons},
            {QStringLiteral("routing"), routing},
            {QStringLiteral("notes"), QJsonArray{noiseCaveat()}}};
}

} // namespace kwb
