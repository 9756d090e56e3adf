#include "core/study/reportformat.h"

#include "core/config/runconfig.h"

#include "core/study/provenance.h"

#include "core/tasks/kernelbound.h"

#include <QJsonArray>

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
    return QStringLiteral("Routing takes each level from the main regime run (zero-shot, profiling-guided, iterative "
                          "or agent as built in; no ablation, sweep, pilot or routed run) that solved most of its "
                          "tasks, chosen after seeing these results: an optimistic, in-sample estimate, as the "
                          "study's 53 %.");
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
    if (!estimate.hasInterval())
        return fixed(estimate.value, decimals);
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

/// {"value","low","high","interval"}: "interval" says how low and high were made ("exact_binomial"
/// for a share of tasks, "bootstrap" for the geometric mean: runstats.h's Estimate), null where
/// there is none.
QJsonObject estimateJson(const Estimate& estimate)
{
    const bool has = estimate.hasInterval();
    return {{QStringLiteral("value"), jsonNumber(estimate.value)},
            {QStringLiteral("low"), jsonNumber(has ? estimate.low : kNaN)},
            {QStringLiteral("high"), jsonNumber(has ? estimate.high : kNaN)},
            {QStringLiteral("interval"), !has ? QJsonValue(QJsonValue::Null)
                                              : QJsonValue(estimate.exactBinomial ? QStringLiteral("exact_binomial")
                                                                                  : QStringLiteral("bootstrap"))}};
}

QJsonObject metricsJson(const Metrics& metrics)
{
    return {{QStringLiteral("tasks"), metrics.tasks},
            {QStringLiteral("correct"), metrics.correct},
            {QStringLiteral("fast1"), metrics.fast1},
            {QStringLiteral("compiled"), metrics.compiled},
            {QStringLiteral("correct_pct"), estimateJson(metrics.correctPct)},
            {QStringLiteral("fast1_pct"), estimateJson(metrics.fast1Pct)},
            {QStringLiteral("clear_fast1"), metrics.clearFast1},
            {QStringLiteral("clear_fast1_undecided"), metrics.clearFast1Undecided},
            {QStringLiteral("clear_fast1_pct"), estimateJson(metrics.clearFast1Pct)},
            {QStringLiteral("compiled_pct"), estimateJson(metrics.compiledPct)},
            {QStringLiteral("geomean_speedup"), estimateJson(metrics.geomeanSpeedup)},
            {QStringLiteral("geomean_count"), metrics.geomeanCount},
            {QStringLiteral("mean_speedup"),
             std::isfinite(metrics.meanSpeedup) ? QJsonValue(metrics.meanSpeedup) : QJsonValue()},
            {QStringLiteral("best_speedup"),
             std::isfinite(metrics.bestSpeedup) ? QJsonValue(metrics.bestSpeedup) : QJsonValue()},
            {QStringLiteral("torch_only_correct"), metrics.torchOnlyCorrect},
            {QStringLiteral("bound_fraction_geomean"), jsonNumber(metrics.boundFractionGeomean)},
            {QStringLiteral("bound_fraction_count"), metrics.boundFractionCount}};
}

// ---- CSV --------------------------------------------------------------------------------------

QJsonObject bestOfNJson(const FirstTurnPassAtN& curve)
{
    const auto points = [](const QList<BestOfNPoint>& list) {
        QJsonArray out;
        for (const BestOfNPoint& p : list)
            out.append(QJsonObject{{QStringLiteral("n"), p.n},
                                   {QStringLiteral("tasks"), p.tasks},
                                   {QStringLiteral("short"), p.shortTasks},
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

QJsonArray fastPJson(const QList<FastP>& rows)
{
    QJsonArray out;
    for (const FastP& f : rows)
        out.append(QJsonObject{{QStringLiteral("p"), f.p},
                               {QStringLiteral("tasks"), f.tasks},
                               {QStringLiteral("fast"), f.fast},
                               {QStringLiteral("fast_pct"), f.fastPct()},
                               {QStringLiteral("clear"), f.clear},
                               {QStringLiteral("clear_pct"), f.clearPct()},
                               {QStringLiteral("clear_undecided"), f.undecided}});
    return out;
}

QString csvCell(const QString& cell)
{
    if (!cell.contains(QLatin1Char(',')) && !cell.contains(QLatin1Char('"')) && !cell.contains(QLatin1Char('\n')) &&
        !cell.contains(QLatin1Char('\r')))
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
    CsvWriter()
    {
        row({QStringLiteral("section"), QStringLiteral("run"), QStringLiteral("run_b"), QStringLiteral("level"),
             QStringLiteral("metric"), QStringLiteral("value"), QStringLiteral("low"), QStringLiteral("high")});
    }

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
        value(section, run, QString(), level, QStringLiteral("clear_fast1"), QString::number(metrics.clearFast1));
        value(section, run, QString(), level, QStringLiteral("clear_fast1_undecided"),
              QString::number(metrics.clearFast1Undecided));
        estimate(section, run, QString(), level, QStringLiteral("clear_fast1_pct"), metrics.clearFast1Pct);
        value(section, run, QString(), level, QStringLiteral("compiled"), QString::number(metrics.compiled));
        estimate(section, run, QString(), level, QStringLiteral("compiled_pct"), metrics.compiledPct);
        estimate(section, run, QString(), level, QStringLiteral("geomean_speedup"), metrics.geomeanSpeedup);
        value(section, run, QString(), level, QStringLiteral("geomean_count"), QString::number(metrics.geomeanCount));
        value(section, run, QString(), level, QStringLiteral("mean_speedup"), csvNumber(metrics.meanSpeedup));
        value(section, run, QString(), level, QStringLiteral("best_speedup"), csvNumber(metrics.bestSpeedup));
        value(section, run, QString(), level, QStringLiteral("torch_only_correct"),
              QString::number(metrics.torchOnlyCorrect));
        value(section, run, QString(), level, QStringLiteral("bound_fraction_geomean"),
              csvNumber(metrics.boundFractionGeomean));
        value(section, run, QString(), level, QStringLiteral("bound_fraction_count"),
              QString::number(metrics.boundFractionCount));
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

const RunReport* findRun(const Report& report, qint64 id)
{
    for (const RunReport& run : report.runs) {
        if (run.run.id == id)
            return &run;
    }
    return nullptr;
}

} // namespace

QString FastP::plainAndClearText() const
{
    return fixed(fastPct(), 1) + QStringLiteral(" % / ") +
           (undecided > 0 || noIntervals ? QStringLiteral("n/a") : fixed(clearPct(), 1) + QStringLiteral(" %"));
}

namespace {
/// The fast_p table: per run, plain / clear fast_p % at KernelBench's thresholds.
QString fastPMarkdown(const Report& report)
{
    QString md =
        QStringLiteral("\n## fast_p (plain / clear)\n\n"
                       "fast_p: correct with a speed-up above p, over all tasks; clear: its 95 % interval "
                       "lies wholly above p (n/a where a fast task's speed-up has no interval to decide it by).\n\n");
    QStringList header{QStringLiteral("run")};
    for (double p : kFastPThresholds)
        header << QStringLiteral("fast_%1 %").arg(p);
    md += mdHeader(header, 1);
    for (const RunReport& run : report.runs) {
        QStringList row{run.label()};
        for (const FastP& f : run.fastP)
            row << (run.compileOnly ? QStringLiteral("not measured") : f.plainAndClearText());
        md += mdRow(row);
    }
    return md;
}
} // namespace

QString percentText(const Estimate& estimate)
{
    if (!estimate.isValid())
        return QStringLiteral("\u2013");
    if (!estimate.hasInterval())
        return QStringLiteral("%1 %").arg(fixed(estimate.value, 1));
    return QStringLiteral("%1 % [%2\u2013%3]")
        .arg(fixed(estimate.value, 1))
        .arg(qRound(estimate.low))
        .arg(qRound(estimate.high));
}

QString geomeanSpeedupText(const Metrics& metrics)
{
    if (!metrics.geomeanSpeedup.isValid() || metrics.geomeanCount == 0)
        return QStringLiteral("\u2013");
    const Estimate& e = metrics.geomeanSpeedup;
    if (!e.hasInterval()) // one kernel: its own interval is in the Monitor and the Diff
        return QStringLiteral("%1\u00D7 (n = %2)").arg(fixed(e.value, 2)).arg(metrics.geomeanCount);
    // The one speed-up format (formatSpeedup), so a tight interval gets the decimals it needs.
    return formatSpeedup(e.value, SpeedupInterval{e.low, e.high}) +
           QStringLiteral(" (n = %1)").arg(metrics.geomeanCount);
}

// Clear fast_1, or "n/a" where a fast task's speed-up has no interval to decide it by.
QString clearFast1Text(const Metrics& metrics)
{
    return metrics.clearFast1Measured() ? percentText(metrics.clearFast1Pct) : QStringLiteral("n/a");
}

namespace {
// The study's arithmetic mean and best speed-up of the correct kernels (point values).
QString meanBestSpeedupText(const Metrics& metrics)
{
    if (metrics.geomeanCount == 0 || !std::isfinite(metrics.meanSpeedup))
        return QStringLiteral("n/a");
    return QStringLiteral("%1\u00D7 / %2\u00D7").arg(fixed(metrics.meanSpeedup, 2), fixed(metrics.bestSpeedup, 2));
}
} // namespace

QString boundFractionCellText(const Metrics& metrics)
{
    if (metrics.correct == 0)
        return QStringLiteral("\u2013");
    if (metrics.boundFractionCount == 0)
        return QStringLiteral("n/a");
    return QStringLiteral("%1 (n = %2)")
        .arg(boundFractionText(metrics.boundFractionGeomean))
        .arg(metrics.boundFractionCount);
}

namespace {
// Correct tasks whose answer launches no kernel of its own, of the correct ones.
QString torchOnlyText(const Metrics& metrics)
{
    return QStringLiteral("%1 of %2").arg(metrics.torchOnlyCorrect).arg(metrics.correct);
}
} // namespace

ReportTable perLevelTable(const Report& report)
{
    ReportTable table;
    table.headers = {QStringLiteral("run"),
                     QStringLiteral("level"),
                     QStringLiteral("tasks"),
                     QStringLiteral("correct %"),
                     QStringLiteral("clear fast_1 %"),
                     QStringLiteral("fast_1 %"),
                     QStringLiteral("compiled %"),
                     QStringLiteral("geomean speedup (n)"),
                     QStringLiteral("mean / best speedup"),
                     QStringLiteral("torch-only correct"),
                     QStringLiteral("roofline bound (geomean, n)")};
    table.textColumns = 2;
    const QString notMeasured = QStringLiteral("not measured");
    for (const RunReport& run : report.runs) {
        for (auto it = run.summary.perLevel.cbegin(); it != run.summary.perLevel.cend(); ++it) {
            const Metrics& m = it.value();
            table.rows.append({run.label(), QStringLiteral("L%1").arg(it.key()), QString::number(m.tasks),
                               run.compileOnly ? notMeasured : percentText(m.correctPct),
                               run.compileOnly ? notMeasured : clearFast1Text(m),
                               run.compileOnly ? notMeasured : percentText(m.fast1Pct), percentText(m.compiledPct),
                               run.compileOnly ? notMeasured : geomeanSpeedupText(m),
                               run.compileOnly ? notMeasured : meanBestSpeedupText(m),
                               run.compileOnly ? notMeasured : torchOnlyText(m),
                               run.compileOnly ? notMeasured : boundFractionCellText(m)});
        }
    }
    return table;
}

QString reportMarkdown(const Report& report)
{
    QString md = QStringLiteral("# Kernel Workbench report\n\n");
    md += QStringLiteral(
              "Database: `%1`. Each task counts once, by the candidate the run's selection keeps (correct, "
              "then compiled, then speedup; ties: the lower sample, the earlier turn). Every task asked "
              "counts; one without an evaluation is a failure. Percentages over tasks with their 95 % exact "
              "binomial (Clopper–Pearson) intervals in brackets; the geometric mean with a 95 % bootstrap "
              "interval over tasks. A geometric mean of one kernel has no interval. The study's "
              "arithmetic mean and best speed-up are point values over the same correct kernels; clear fast_1, the "
              "headline, counts a correct task only when its speed-up's 95 % interval lies wholly above 1 "
              "(plain fast_1 beside it counts any speed-up above 1; n/a where a fast task's speed-up "
              "has no interval, as in results from before intervals were kept); "
              "torch-only correct: correct answers that launch no kernel of their own (they tie the "
              "reference by calling torch); roofline bound: the geometric mean over correct kernels of the time at "
              "the task's roofline floor on the run's GPU over the measured time (100 % is at the bound; n/a where "
              "the evaluations stored no floor).\n\n")
              .arg(report.database);
    if (report.runs.isEmpty())
        return md + QStringLiteral("No runs.\n");

    md += QStringLiteral("## Runs\n\n");
    QStringList header = {QStringLiteral("run"),
                          QStringLiteral("regime"),
                          QStringLiteral("name"),
                          QStringLiteral("status"),
                          QStringLiteral("tasks"),
                          QStringLiteral("correct %"),
                          QStringLiteral("clear fast_1 %"),
                          QStringLiteral("fast_1 %"),
                          QStringLiteral("compiled %")};
    for (const int level : report.levels)
        header.append(QStringLiteral("solved L%1").arg(level));
    header << QStringLiteral("geomean speedup (n)") << QStringLiteral("mean / best speedup")
           << QStringLiteral("torch-only correct") << QStringLiteral("roofline bound (geomean, n)")
           << QStringLiteral("tokens in / out") << QStringLiteral("model time");
    md += mdHeader(header, 4);
    for (const RunReport& run : report.runs) {
        const Metrics& m = run.summary.overall;
        const QString notMeasured = QStringLiteral("not measured");
        QStringList cells = {QStringLiteral("#%1").arg(run.run.id),
                             run.run.regime,
                             run.run.name,
                             run.run.status,
                             QString::number(m.tasks),
                             run.compileOnly ? notMeasured : percentText(m.correctPct),
                             run.compileOnly ? notMeasured : clearFast1Text(m),
                             run.compileOnly ? notMeasured : percentText(m.fast1Pct),
                             percentText(m.compiledPct)};
        for (const int level : report.levels) {
            const auto it = run.summary.perLevel.constFind(level);
            cells.append(it == run.summary.perLevel.cend() ? QStringLiteral("-")
                         : run.compileOnly                 ? notMeasured
                                                           : QStringLiteral("%1/%2").arg(it->correct).arg(it->tasks));
        }
        cells << (run.compileOnly ? notMeasured : geomeanSpeedupText(m))
              << (run.compileOnly ? notMeasured : meanBestSpeedupText(m))
              << (run.compileOnly ? notMeasured : torchOnlyText(m))
              << (run.compileOnly ? notMeasured : boundFractionCellText(m))
              << QStringLiteral("%1 / %2").arg(count(run.usage.tokensIn), count(run.usage.tokensOut))
              << seconds(run.usage.latencyMs);
        md += mdRow(cells);
    }

    // Where each run's answers came from (provenance.h): a stand-in's numbers are about the
    // workbench, not a model, and the export says so as the window does.
    md += QStringLiteral("\n## Where the answers came from\n\n");
    QList<RunInfo> infos;
    for (const RunReport& run : report.runs)
        infos.append(run.run);
    const QString standIn = standInAnswersNote(infos);
    if (!standIn.isEmpty())
        md += QStringLiteral("**%1**\n\n").arg(standIn);
    if (const QString same = sameAnswersNote(report); !same.isEmpty())
        md += QStringLiteral("**%1**\n\n").arg(same);
    md += mdHeader({QStringLiteral("run"), QStringLiteral("answered by"), QStringLiteral("model"),
                    QStringLiteral("endpoint"), QStringLiteral("answer format"), QStringLiteral("prompt set"),
                    QStringLiteral("versions"), QStringLiteral("GPU")},
                   8);
    // Each prompt set once, with its templates' hashes: the fingerprint in the table says which
    // runs share wording, the hashes say which wording.
    QMap<QString, QMap<QString, QString>> templatesOfSet;
    for (const RunReport& run : report.runs) {
        const RunProvenance p = runProvenance(run.run);
        md += mdRow({run.label(), p.sourceText(), p.model, p.endpoint, p.answerFormat, p.promptSet, p.versions, p.gpu});
        if (!p.templateHashes.isEmpty())
            templatesOfSet.insert(p.promptSet, p.templateHashes);
    }
    for (auto set = templatesOfSet.cbegin(); set != templatesOfSet.cend(); ++set) {
        md += QStringLiteral("\nPrompt set %1, SHA-256 of each template's text:\n\n").arg(set.key());
        for (auto it = set->cbegin(); it != set->cend(); ++it)
            md += QStringLiteral("- `%1` %2\n").arg(it.key(), it.value());
    }
    for (const RunReport& run : report.runs)
        if (RunConfig::fromJson(run.run.configJson).evaluateIdenticalOnce)
            md += QStringLiteral("\n%1 evaluated identical answers once: %2 of its %3 evaluations are an earlier "
                                 "identical answer's, reused (`reused_from_candidate`), not measured again%4.\n")
                      .arg(run.label())
                      .arg(run.reusedEvaluations)
                      .arg(run.evaluations)
                      .arg(run.reusedFromOtherRuns > 0
                               ? QStringLiteral("; %1 of them another run's of the same evaluation settings "
                                                "(`reused_from_run`)")
                                     .arg(run.reusedFromOtherRuns)
                               : QString());

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
        md += mdHeader({QStringLiteral("run"), QStringLiteral("tasks"), QStringLiteral("not evaluated"),
                        QStringLiteral("no answer (model request failed)"), QStringLiteral("machine fault"),
                        QStringLiteral("answered, not evaluated"), QStringLiteral("not yet run")},
                       1);
        for (const RunReport& run : report.runs) {
            const QMap<QString, int> kinds = run.unevaluatedByKind();
            md += mdRow({run.label(), QString::number(run.outcomes.size()), QString::number(run.unevaluated.size()),
                         QString::number(kinds.value(UnevaluatedKind::ModelRequestFailed)),
                         QString::number(kinds.value(UnevaluatedKind::MachineFailure)),
                         QString::number(kinds.value(UnevaluatedKind::NotEvaluated)),
                         QString::number(kinds.value(UnevaluatedKind::NotStarted))});
        }
        md += QStringLiteral("\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("task"), QStringLiteral("reason")}, 3);
        for (const RunReport& run : report.runs)
            for (const UnevaluatedTask& task : run.unevaluated)
                md += mdRow({run.label(), task.task, task.reason});
    }

    bool anyRecorded = false;
    for (const RunReport& run : report.runs)
        anyRecorded = anyRecorded || !run.recorded.isEmpty();
    if (anyRecorded) {
        md += QStringLiteral("\n## Recorded verdicts (a third party's, beside ours)\n\n"
                             "Imported runs whose folder carried the verdicts its makers recorded (KernelBench's "
                             "eval_results.json), on their hardware; ours are this workbench's evaluations of the "
                             "same files. Per sample, not per task.\n\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("their hardware"), QStringLiteral("samples"),
                        QStringLiteral("compiled: theirs / ours"), QStringLiteral("correct: theirs / ours"),
                        QStringLiteral("both correct"), QStringLiteral("only theirs"), QStringLiteral("only ours")},
                       2);
        for (const RunReport& run : report.runs) {
            if (run.recorded.isEmpty())
                continue;
            QStringList hardware;
            int theirCompiled = 0, theirCorrect = 0, ourCompiled = 0, ourCorrect = 0, both = 0, onlyTheirs = 0,
                onlyOurs = 0;
            for (const RecordedComparison& c : run.recorded) {
                if (!c.recorded.hardware.isEmpty() && !hardware.contains(c.recorded.hardware))
                    hardware << c.recorded.hardware;
                theirCompiled += c.theirCompiled();
                theirCorrect += c.theirCorrect();
                ourCompiled += c.compiled;
                ourCorrect += c.correct;
                both += c.correct && c.theirCorrect();
                onlyTheirs += !c.correct && c.theirCorrect();
                onlyOurs += c.correct && !c.theirCorrect();
            }
            md += mdRow(
                {run.label(), hardware.isEmpty() ? QStringLiteral("not recorded") : hardware.join(QStringLiteral(", ")),
                 QString::number(run.recorded.size()), QStringLiteral("%1 / %2").arg(theirCompiled).arg(ourCompiled),
                 run.compileOnly ? QStringLiteral("%1 / not measured").arg(theirCorrect)
                                 : QStringLiteral("%1 / %2").arg(theirCorrect).arg(ourCorrect),
                 run.compileOnly ? QStringLiteral("-") : QString::number(both),
                 run.compileOnly ? QStringLiteral("-") : QString::number(onlyTheirs),
                 run.compileOnly ? QStringLiteral("-") : QString::number(onlyOurs)});
        }
    }

    if (!report.pairs.isEmpty()) {
        md += QStringLiteral("\n## Paired comparisons (tasks in both runs)\n\n");
        md += mdHeader({QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("tasks"),
                        QStringLiteral("A correct %"), QStringLiteral("B correct %"), QStringLiteral("A − B, points"),
                        QStringLiteral("only A"), QStringLiteral("only B"), QStringLiteral("both"),
                        QStringLiteral("neither"), QStringLiteral("sign-test p")},
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
            md += QStringLiteral("\nLeft out of the comparison: ") + missing.join(QStringLiteral("; ")) +
                  QStringLiteral(".\n");
    }

    if (!report.ablations.isEmpty()) {
        md += QStringLiteral("\n## Ablations (each against the run that differs only by the switches, paired on "
                             "shared tasks)\n\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("switched off"), QStringLiteral("against"),
                        QStringLiteral("tasks"), QStringLiteral("correct %"), QStringLiteral("fast_1 %"),
                        QStringLiteral("full correct %"), QStringLiteral("change, points"),
                        QStringLiteral("sign-test p")},
                       3);
        for (const AblationRow& row : report.ablations) {
            const RunReport* run = findRun(report, row.run);
            const RunReport* base = row.baseline ? findRun(report, row.baseline) : nullptr;
            const Metrics& m = run->summary.overall;
            if (!row.comparison || !base) {
                md += mdRow({run->label(), row.switchedOff.join(QStringLiteral(", ")), QStringLiteral("no baseline"),
                             QString::number(m.tasks), percentText(m.correctPct), percentText(m.fast1Pct),
                             QStringLiteral("-"), QStringLiteral("-"), QStringLiteral("-")});
                continue;
            }
            const PairedComparison& c = *row.comparison;
            md += mdRow({run->label(), row.switchedOff.join(QStringLiteral(", ")), base->label(),
                         QString::number(c.tasks), percentText(m.correctPct), percentText(m.fast1Pct),
                         fixed(c.correctPctB.value, 1), withInterval(c.differencePct, 1), fixed(c.signTestP, 3)});
        }
    }

    for (const AblationRow& row : report.ablations)
        if (!row.note.isEmpty())
            md += QStringLiteral("\n- %1: %2.").arg(findRun(report, row.run)->label(), row.note);
    for (const AblationRow& row : report.ablations)
        if (!row.note.isEmpty()) {
            md += QStringLiteral("\n");
            break;
        }

    if (!report.sweeps.isEmpty()) {
        md += QStringLiteral("\n## Best-of-n (the study's: the whole regime at each n, paired seeds)\n\n"
                             "Each n is a run of its own: every turn, n candidates per turn, the regime's selection; "
                             "every task counts (no evaluation: a failure).\n\n");
        md += mdHeader({QStringLiteral("sweep"), QStringLiteral("level"), QStringLiteral("n"), QStringLiteral("run"),
                        QStringLiteral("tasks"), QStringLiteral("correct"), QStringLiteral("correct %"),
                        QStringLiteral("compiled"), QStringLiteral("compiled %")},
                       2);
        for (const SweepCurve& curve : report.sweeps) {
            const QString name = curve.regime + QStringLiteral(" ") + curve.id.left(8);
            const auto row = [&](const QString& level, const SweepPoint& p, const Metrics& m) {
                md += mdRow({name, level, QString::number(p.n), QStringLiteral("#%1").arg(p.run),
                             QString::number(m.tasks), QString::number(m.correct), percentText(m.correctPct),
                             QString::number(m.compiled), percentText(m.compiledPct)});
            };
            for (const SweepPoint& p : curve.points)
                row(QStringLiteral("all"), p, p.overall);
            for (const int level : report.levels)
                for (const SweepPoint& p : curve.points)
                    if (p.perLevel.contains(level))
                        row(QStringLiteral("L%1").arg(level), p, p.perLevel.value(level));
        }
    }

    md += fastPMarkdown(report);

    bool anyCurve = false;
    for (const RunReport& run : report.runs)
        anyCurve = anyCurve || run.firstTurnPassAtN.has_value();
    if (anyCurve) {
        md += QStringLiteral(
            "\n## First-turn pass@n (unbiased estimator)\n\n"
            "Not the study's best-of-n: the chance that one of n of a task's first-turn samples is "
            "correct, averaged over every task of the run; a task with fewer than n samples counts "
            "its missing ones as failures (\"short\"). Its 95 % interval is a bootstrap over the tasks and each "
            "task's samples.\n\n");
        md += mdHeader({QStringLiteral("run"), QStringLiteral("level"), QStringLiteral("n"), QStringLiteral("tasks"),
                        QStringLiteral("short"), QStringLiteral("pass@n %")},
                       2);
        for (const RunReport& run : report.runs) {
            if (!run.firstTurnPassAtN)
                continue;
            const auto rows = [&](const QString& level, const QList<BestOfNPoint>& curve) {
                for (const BestOfNPoint& p : curve)
                    md += mdRow({run.label(), level, QString::number(p.n), QString::number(p.tasks),
                                 QString::number(p.shortTasks), percentText(p.passPct)});
            };
            rows(QStringLiteral("all"), run.firstTurnPassAtN->overall);
            for (auto it = run.firstTurnPassAtN->perLevel.cbegin(); it != run.firstTurnPassAtN->perLevel.cend(); ++it)
                rows(QStringLiteral("L%1").arg(it.key()), it.value());
        }
    }

    if (report.routing) {
        const RoutingReport& routing = *report.routing;
        const auto labels = [&](const QList<qint64>& ids) {
            QStringList names;
            for (const qint64 id : ids)
                names << findRun(report, id)->label();
            return names.isEmpty() ? QStringLiteral("none") : names.join(QStringLiteral(", "));
        };
        md += QStringLiteral("\n## Routing estimate\n\n") + routingCaveat() + QStringLiteral("\n\n");
        md +=
            QStringLiteral("Runs used: %1. Left out: %2.\n\n").arg(labels(routing.candidates), labels(routing.leftOut));
        md += mdHeader({QStringLiteral("level"), QStringLiteral("run"), QStringLiteral("tasks"),
                        QStringLiteral("solved"), QStringLiteral("correct %")},
                       2);
        for (auto it = routing.runForLevel.cbegin(); it != routing.runForLevel.cend(); ++it) {
            const auto metrics = routing.estimate.perLevel.constFind(it.key());
            if (metrics == routing.estimate.perLevel.cend())
                continue;
            md += mdRow({QStringLiteral("L%1").arg(it.key()), findRun(report, it.value())->label(),
                         QString::number(metrics->tasks), QString::number(metrics->correct),
                         percentText(metrics->correctPct)});
        }
        const Metrics& combined = routing.estimate.combined;
        md += mdRow({QStringLiteral("all"), QStringLiteral("routed"), QString::number(combined.tasks),
                     QString::number(combined.correct), percentText(combined.correctPct)});
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
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("tokens_in"),
                  optionalText(r.usage.tokensIn));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("tokens_out"),
                  optionalText(r.usage.tokensOut));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("model_time_ms"),
                  optionalText(r.usage.latencyMs));
        csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("unevaluated"),
                  QString::number(r.unevaluated.size()));
        const QMap<QString, int> kinds = r.unevaluatedByKind();
        for (const QString& kind : {UnevaluatedKind::ModelRequestFailed, UnevaluatedKind::MachineFailure,
                                    UnevaluatedKind::NotEvaluated, UnevaluatedKind::NotStarted})
            csv.value(run, id, QString(), QStringLiteral("all"), QStringLiteral("unevaluated_") + kind,
                      QString::number(kinds.value(kind)));
        for (auto it = r.summary.perLevel.cbegin(); it != r.summary.perLevel.cend(); ++it)
            csv.metrics(run, id, QString::number(it.key()), it.value());
    }
    // Where each run's answers came from (provenance.h): the JSON export's `provenance` keys, one
    // row each; a template's row is `template:<name>` with its SHA-256.
    const QString provenance = QStringLiteral("provenance");
    for (const RunReport& r : report.runs) {
        const QString id = QString::number(r.run.id), all = QStringLiteral("all");
        const RunProvenance p = runProvenance(r.run);
        csv.value(provenance, id, QString(), all, QStringLiteral("answered_by"), p.sourceText());
        csv.value(provenance, id, QString(), all, QStringLiteral("source"), p.sourceName());
        csv.value(provenance, id, QString(), all, QStringLiteral("model"), p.model);
        csv.value(provenance, id, QString(), all, QStringLiteral("endpoint"), p.endpoint);
        csv.value(provenance, id, QString(), all, QStringLiteral("answer_format"), p.answerFormat);
        csv.value(provenance, id, QString(), all, QStringLiteral("prompt_set"), p.promptSet);
        for (auto it = p.templateHashes.cbegin(); it != p.templateHashes.cend(); ++it)
            csv.value(provenance, id, QString(), all, QStringLiteral("template:") + it.key(), it.value());
        csv.value(provenance, id, QString(), all, QStringLiteral("versions"), p.versions);
        csv.value(provenance, id, QString(), all, QStringLiteral("gpu"), p.gpu);
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
    const QString fastP = QStringLiteral("fast_p");
    for (const RunReport& r : report.runs) {
        if (r.compileOnly)
            continue;
        const QString id = QString::number(r.run.id), all = QStringLiteral("all");
        for (const FastP& f : r.fastP) {
            const QString p = QString::number(f.p);
            csv.value(fastP, id, QString(), all, QStringLiteral("fast_%1").arg(p), QString::number(f.fast));
            csv.value(fastP, id, QString(), all, QStringLiteral("fast_%1_pct").arg(p), csvNumber(f.fastPct()));
            csv.value(fastP, id, QString(), all, QStringLiteral("clear_fast_%1").arg(p), QString::number(f.clear));
            csv.value(fastP, id, QString(), all, QStringLiteral("clear_fast_%1_pct").arg(p), csvNumber(f.clearPct()));
        }
    }
    const QString sweepSection = QStringLiteral("best_of_n");
    for (const SweepCurve& curve : report.sweeps) {
        const auto point = [&](const QString& level, const SweepPoint& p, const Metrics& m) {
            const QString id = QString::number(p.run);
            csv.value(sweepSection, id, QString(), level, QStringLiteral("n"), QString::number(p.n));
            csv.value(sweepSection, id, QString(), level, QStringLiteral("tasks"), QString::number(m.tasks));
            csv.value(sweepSection, id, QString(), level, QStringLiteral("correct"), QString::number(m.correct));
            csv.estimate(sweepSection, id, QString(), level, QStringLiteral("correct_pct"), m.correctPct);
            csv.value(sweepSection, id, QString(), level, QStringLiteral("compiled"), QString::number(m.compiled));
            csv.estimate(sweepSection, id, QString(), level, QStringLiteral("compiled_pct"), m.compiledPct);
        };
        for (const SweepPoint& p : curve.points) {
            point(QStringLiteral("all"), p, p.overall);
            for (auto it = p.perLevel.cbegin(); it != p.perLevel.cend(); ++it)
                point(QString::number(it.key()), p, it.value());
        }
    }
    const QString bestOfN = QStringLiteral("first_turn_pass_at_n");
    for (const RunReport& r : report.runs) {
        if (!r.firstTurnPassAtN)
            continue;
        const QString id = QString::number(r.run.id);
        const auto points = [&](const QString& level, const QList<BestOfNPoint>& curve) {
            for (const BestOfNPoint& p : curve) {
                csv.value(bestOfN, id, QString(), level, QStringLiteral("tasks_n%1").arg(p.n),
                          QString::number(p.tasks));
                csv.value(bestOfN, id, QString(), level, QStringLiteral("short_n%1").arg(p.n),
                          QString::number(p.shortTasks));
                csv.estimate(bestOfN, id, QString(), level, QStringLiteral("correct_pct_n%1").arg(p.n), p.passPct);
            }
        };
        points(QStringLiteral("all"), r.firstTurnPassAtN->overall);
        for (auto it = r.firstTurnPassAtN->perLevel.cbegin(); it != r.firstTurnPassAtN->perLevel.cend(); ++it)
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
        for (const qint64 id : report.routing->candidates)
            csv.value(routing, QString::number(id), QString(), QStringLiteral("all"), QStringLiteral("candidate"),
                      QStringLiteral("1"));
        for (const qint64 id : report.routing->leftOut)
            csv.value(routing, QString::number(id), QString(), QStringLiteral("all"), QStringLiteral("candidate"),
                      QStringLiteral("0"));
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

namespace {

// An imported run's third-party verdicts beside ours (docs/cli.md, `kwb report`).
QJsonObject recordedJson(const RunReport& run)
{
    QStringList hardware, sources;
    int theirCompiled = 0, theirCorrect = 0, ourCompiled = 0, ourCorrect = 0, both = 0, onlyTheirs = 0, onlyOurs = 0;
    QJsonArray samples;
    for (const RecordedComparison& c : run.recorded) {
        if (!c.recorded.hardware.isEmpty() && !hardware.contains(c.recorded.hardware))
            hardware << c.recorded.hardware;
        if (!sources.contains(c.recorded.source))
            sources << c.recorded.source;
        theirCompiled += c.theirCompiled();
        theirCorrect += c.theirCorrect();
        ourCompiled += c.compiled;
        ourCorrect += c.correct;
        both += c.correct && c.theirCorrect();
        onlyTheirs += !c.correct && c.theirCorrect();
        onlyOurs += c.correct && !c.theirCorrect();
        QJsonObject theirs = c.recorded.verdict;
        theirs.remove(QStringLiteral("recorded")); // the entry as the file had it stays in the store
        samples.append(QJsonObject{
            {QStringLiteral("task"), c.recorded.task},
            {QStringLiteral("sample"), c.recorded.sample},
            {QStringLiteral("candidate_id"), double(c.recorded.candidateId)},
            {QStringLiteral("ours"),
             QJsonObject{
                 {QStringLiteral("evaluation_id"), c.evaluationId ? QJsonValue(double(*c.evaluationId)) : QJsonValue()},
                 {QStringLiteral("status"), c.status.isEmpty() ? QJsonValue() : QJsonValue(c.status)},
                 {QStringLiteral("compiled"), c.compiled},
                 {QStringLiteral("correct"), run.compileOnly ? QJsonValue() : QJsonValue(c.correct)},
                 {QStringLiteral("speedup"), c.speedup ? QJsonValue(*c.speedup) : QJsonValue()}}},
            {QStringLiteral("theirs"), theirs},
        });
    }
    return QJsonObject{
        {QStringLiteral("by"), QStringLiteral("third party")},
        {QStringLiteral("hardware"), QJsonArray::fromStringList(hardware)},
        {QStringLiteral("sources"), QJsonArray::fromStringList(sources)},
        {QStringLiteral("samples"), int(run.recorded.size())},
        {QStringLiteral("theirs"),
         QJsonObject{{QStringLiteral("compiled"), theirCompiled}, {QStringLiteral("correct"), theirCorrect}}},
        {QStringLiteral("ours"),
         QJsonObject{{QStringLiteral("compiled"), ourCompiled},
                     {QStringLiteral("correct"), run.compileOnly ? QJsonValue() : QJsonValue(ourCorrect)}}},
        // A compile-only run measured no correctness: nothing to set beside theirs.
        {QStringLiteral("both_correct"), run.compileOnly ? QJsonValue() : QJsonValue(both)},
        {QStringLiteral("only_theirs_correct"), run.compileOnly ? QJsonValue() : QJsonValue(onlyTheirs)},
        {QStringLiteral("only_ours_correct"), run.compileOnly ? QJsonValue() : QJsonValue(onlyOurs)},
        {QStringLiteral("per_sample"), samples},
    };
}

} // namespace

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
            outcomes.append(
                QJsonObject{{QStringLiteral("task"), outcome.task},
                            {QStringLiteral("level"), outcome.level},
                            {QStringLiteral("status"), outcome.status},
                            {QStringLiteral("compiled"), outcome.compiled},
                            {QStringLiteral("speedup"), jsonNumber(outcome.speedup)},
                            {QStringLiteral("speedup_low"), jsonNumber(outcome.speedupLow)},
                            {QStringLiteral("speedup_high"), jsonNumber(outcome.speedupHigh)},
                            {QStringLiteral("bound_fraction"), jsonNumber(outcome.boundFraction)},
                            {QStringLiteral("evaluation_id"),
                             chosen == r.chosenEvaluation.cend() ? QJsonValue() : QJsonValue(double(*chosen))}});
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
            {QStringLiteral("provenance"), runProvenance(r.run).toJson()},
            {QStringLiteral("evaluations"), r.evaluations},
            {QStringLiteral("compile_only"), r.compileOnly},
            {QStringLiteral("note"),
             r.compileOnly ? QJsonValue(QStringLiteral("compile-only: correctness not measured")) : QJsonValue()},
            {QStringLiteral("overall"), metricsJson(r.summary.overall)},
            {QStringLiteral("levels"), levels},
            {QStringLiteral("usage"), QJsonObject{{QStringLiteral("responses"), r.usage.responses},
                                                  {QStringLiteral("tokens_in"), jsonCount(r.usage.tokensIn)},
                                                  {QStringLiteral("tokens_out"), jsonCount(r.usage.tokensOut)},
                                                  {QStringLiteral("model_time_ms"), jsonCount(r.usage.latencyMs)}}},
            {QStringLiteral("outcomes"), outcomes},
            {QStringLiteral("unevaluated"), unevaluated},
            {QStringLiteral("ablated"), QJsonArray::fromStringList(r.ablated)},
            {QStringLiteral("unevaluated_counts"),
             [&] {
                 QJsonObject counts;
                 const QMap<QString, int> kinds = r.unevaluatedByKind();
                 for (const QString& kind : {UnevaluatedKind::ModelRequestFailed, UnevaluatedKind::MachineFailure,
                                             UnevaluatedKind::NotEvaluated, UnevaluatedKind::NotStarted})
                     counts.insert(kind, kinds.value(kind));
                 return counts;
             }()},
            {QStringLiteral("first_turn_pass_at_n"),
             r.firstTurnPassAtN ? QJsonValue(bestOfNJson(*r.firstTurnPassAtN)) : QJsonValue()},
            {QStringLiteral("fast_p"), r.compileOnly ? QJsonValue() : QJsonValue(fastPJson(r.fastP))},
            {QStringLiteral("recorded_verdicts"), r.recorded.isEmpty() ? QJsonValue() : QJsonValue(recordedJson(r))},
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
        const auto ids = [](const QList<qint64>& list) {
            QJsonArray array;
            for (const qint64 id : list)
                array.append(double(id));
            return array;
        };
        routing =
            QJsonObject{{QStringLiteral("levels"), levels},
                        {QStringLiteral("runs_used"), ids(report.routing->candidates)},
                        {QStringLiteral("runs_left_out"), ids(report.routing->leftOut)},
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
        if (!row.note.isEmpty())
            a.insert(QStringLiteral("note"), row.note);
        ablations.append(a);
    }

    QJsonArray sweeps;
    for (const SweepCurve& curve : report.sweeps) {
        QJsonArray points;
        for (const SweepPoint& p : curve.points) {
            QJsonObject levels;
            for (auto it = p.perLevel.cbegin(); it != p.perLevel.cend(); ++it)
                levels.insert(QString::number(it.key()), metricsJson(it.value()));
            points.append(QJsonObject{{QStringLiteral("n"), p.n},
                                      {QStringLiteral("run"), double(p.run)},
                                      {QStringLiteral("overall"), metricsJson(p.overall)},
                                      {QStringLiteral("levels"), levels}});
        }
        sweeps.append(QJsonObject{{QStringLiteral("sweep"), curve.id},
                                  {QStringLiteral("regime"), curve.regime},
                                  {QStringLiteral("points"), points}});
    }

    return {{QStringLiteral("database"), report.database},
            {QStringLiteral("runs"), runs},
            {QStringLiteral("best_of_n"), sweeps},
            {QStringLiteral("ablations"), ablations},
            {QStringLiteral("comparisons"), comparisons},
            {QStringLiteral("routing"), routing},
            {QStringLiteral("notes"), QJsonArray{noiseCaveat()}}};
}

} // namespace kwb
