#include "app/runs/reporttables.h"

#include <QCoreApplication>

#include <cmath>

namespace kwb::app {

namespace {

const QString kNone = QStringLiteral("–");

QString tr(const char* text)
{
    return QCoreApplication::translate("kwb::app::ReportTables", text);
}

QString fixed(double value, int decimals)
{
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : kNone;
}

const RunReport* findRun(const Report& report, qint64 id)
{
    for (const RunReport& run : report.runs)
        if (run.run.id == id)
            return &run;
    return nullptr;
}

QString runLabel(const Report& report, qint64 id)
{
    const RunReport* run = findRun(report, id);
    return run ? run->label() : QStringLiteral("#%1").arg(id);
}

QString pointsCell(const Estimate& estimate)
{
    if (!estimate.isValid())
        return kNone;
    const auto sign = [](double v) { return v > 0 ? QStringLiteral("+") : QString(); };
    return QStringLiteral("%1%2 [%3%4 to %5%6]")
        .arg(sign(estimate.value), fixed(estimate.value, 1), sign(estimate.low), fixed(estimate.low, 0),
             sign(estimate.high), fixed(estimate.high, 0));
}

QString missingNote(const PairedComparison& c, const QString& a, const QString& b)
{
    if (c.missingInA.isEmpty() && c.missingInB.isEmpty())
        return QString();
    return tr("Left out: %1 only in %2, %3 only in %4")
        .arg(counted(c.missingInA.size(), tr("task"), tr("tasks")), b,
             counted(c.missingInB.size(), tr("task"), tr("tasks")), a);
}

QStringList emptyTips(int n)
{
    return QStringList(n, QString());
}

} // namespace

QString counted(qint64 n, const QString& one, const QString& many)
{
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

QString countCell(const std::optional<qint64>& value)
{
    return value ? QString::number(*value) : kNone;
}

QString compactCountCell(const std::optional<qint64>& value)
{
    if (!value)
        return kNone;
    const double v = double(*value);
    if (v < 10000)
        return QString::number(*value);
    if (v < 1e6)
        return QStringLiteral("%1k").arg(v / 1e3, 0, 'f', v < 1e5 ? 1 : 0);
    return QStringLiteral("%1 M").arg(v / 1e6, 0, 'f', v < 1e7 ? 2 : 1);
}

QString durationCell(const std::optional<qint64>& ms)
{
    if (!ms)
        return kNone;
    // Under a second in ms: "0.0 s" read as a missing value (the fixture server answers in ms).
    if (*ms < 1000)
        return QStringLiteral("%1 ms").arg(*ms);
    const double s = double(*ms) / 1000.0;
    if (s < 60)
        return QStringLiteral("%1 s").arg(s, 0, 'f', 1);
    const qint64 whole = qRound64(s);
    if (whole < 3600)
        return QStringLiteral("%1 min %2 s").arg(whole / 60).arg(whole % 60);
    return QStringLiteral("%1 h %2 min").arg(whole / 3600).arg(whole / 60 % 60);
}

QString pValueCell(double p)
{
    if (!std::isfinite(p))
        return kNone;
    return p < 0.001 ? QStringLiteral("< 0.001") : QString::number(p, 'f', 3);
}

/// Which 95 % interval a percentage cell has (runstats.h, Estimate), for its tooltip.
QString intervalNote(const Estimate& e)
{
    return e.exactBinomial ? tr("95 % exact binomial interval (every task alike: the bootstrap's would have no width)")
                           : tr("95 % bootstrap interval over tasks");
}

TextTable runTable(const Report& report)
{
    TextTable table;
    // Clear fast_1 is the headline; plain fast_1 is in its tooltip and beside it in the fast_p table
    // (a column of its own would push the speed-up out of a 1280-pixel window).
    table.headers = {tr("Run"),       tr("Status"),     tr("Tasks"),           tr("Correct %"),
                     tr("Clear fast_1 %"), tr("Compiled %"), tr("Geomean speedup"), tr("Tokens in / out"),
                     tr("Model time")};
    table.textColumns = 2;
    for (const RunReport& run : report.runs) {
        const Metrics& m = run.summary.overall;
        table.rows.append({run.label(), run.run.status, QString::number(m.tasks),
                           percentText(m.correctPct), clearFast1Text(m), percentText(m.compiledPct),
                           geomeanSpeedupText(m),
                           QStringLiteral("%1 / %2").arg(compactCountCell(run.usage.tokensIn), compactCountCell(run.usage.tokensOut)),
                           durationCell(run.usage.latencyMs)});
        QStringList tips = emptyTips(int(table.headers.size()));
        tips[0] = tr("%1, created %2, %3 evaluations")
                      .arg(run.run.name, run.run.created.toLocalTime().toString(Qt::ISODate))
                      .arg(run.evaluations);
        tips[3] = tr("%1 of %2 tasks correct; %3").arg(m.correct).arg(m.tasks).arg(intervalNote(m.correctPct));
        tips[4] = (m.clearFast1Undecided > 0
                       ? tr("Not measured: %1 of the fast tasks have a speed-up without an interval (results from "
                            "before intervals were kept), so whether they are clearly fast cannot be told.")
                             .arg(m.clearFast1Undecided)
                       : tr("%1 of %2 tasks correct with the speed-up's 95 % interval wholly above 1 (a tie within "
                            "noise does not count); %3.")
                             .arg(m.clearFast1)
                             .arg(m.tasks)
                             .arg(intervalNote(m.clearFast1Pct))) +
                  tr(" KernelBench's plain fast_1 (any speed-up above 1): %1 of %2, %3").arg(m.fast1).arg(m.tasks).arg(percentText(m.fast1Pct));
        tips[5] = tr("%1 of %2 tasks compiled; %3").arg(m.compiled).arg(m.tasks).arg(intervalNote(m.compiledPct));
        tips[6] = tr("Geometric mean over the %1 correct kernel(s) with a timed speedup; arithmetic mean %2, best %3; "
                     "%4 of the %5 correct answers launch no kernel of their own")
                      .arg(m.geomeanCount)
                      .arg(std::isfinite(m.meanSpeedup) ? QString::number(m.meanSpeedup, 'f', 2) + QStringLiteral("\u00D7") : tr("n/a"),
                           std::isfinite(m.bestSpeedup) ? QString::number(m.bestSpeedup, 'f', 2) + QStringLiteral("\u00D7") : tr("n/a"))
                      .arg(m.torchOnlyCorrect)
                      .arg(m.correct);
        tips[7] = tr("%1 tokens in, %2 out").arg(countCell(run.usage.tokensIn), countCell(run.usage.tokensOut));
        tips[8] = tr("The model requests' latencies added up (%1 responses)").arg(run.usage.responses);
        table.tooltips.append(tips);
    }
    return table;
}

TextTable fastPTable(const Report& report)
{
    TextTable table;
    table.headers = {tr("Run")};
    for (const double p : kFastPThresholds)
        table.headers << tr("fast_%1 (plain / clear)").arg(p);
    table.textColumns = 1;
    for (const RunReport& run : report.runs) {
        QStringList cells = {run.label()};
        QStringList tips = emptyTips(int(table.headers.size()));
        for (const FastP& f : run.fastP) {
            tips[cells.size()] = f.undecided > 0
                                     ? tr("%1 of %2 tasks correct with a speed-up above %3; clear not measured: %4 of them "
                                          "have a speed-up without an interval")
                                           .arg(f.fast).arg(f.tasks).arg(f.p).arg(f.undecided)
                                     : tr("%1 of %2 tasks correct with a speed-up above %3; %4 with its interval wholly above it")
                                           .arg(f.fast).arg(f.tasks).arg(f.p).arg(f.clear);
            cells << (run.compileOnly ? tr("not measured") : f.plainAndClearText());
        }
        table.rows.append(cells);
        table.tooltips.append(tips);
    }
    return table;
}

QString fastPNoteText()
{
    return tr("Clear fast_p counts a speed-up only when its 95 % interval lies wholly above p: a kernel at parity "
              "is above 1 about half the time by noise alone, never clearly.");
}

TextTable levelTable(const Report& report)
{
    // The export's own per-level table (core's perLevelTable): one definition of its columns.
    const ReportTable core = perLevelTable(report);
    TextTable table;
    // Headed as Table I above it is (the Markdown export keeps its own lowercase words): the first
    // letter up but in KernelBench's fast_1, the speed-up's "(n)" left to its cells, which say it.
    for (QString header : core.headers) {
        if (!header.startsWith(QStringLiteral("fast_")))
            header[0] = header[0].toUpper();
        header.remove(QStringLiteral(" (n)"));
        table.headers.append(header);
    }
    table.rows = core.rows;
    table.textColumns = core.textColumns;
    for (const QStringList& row : std::as_const(core.rows)) {
        QStringList tips = emptyTips(int(table.headers.size()));
        tips[0] = tr("95 % bootstrap intervals over this level's tasks (exact binomial at 0 % and 100 %); fast_1: "
                     "correct and faster than the reference");
        table.tooltips.append(tips);
        Q_UNUSED(row);
    }
    return table;
}

TextTable pairTable(const Report& report)
{
    TextTable table;
    table.headers = {tr("A"),      tr("B"),      tr("Tasks"), tr("A correct %"), tr("B correct %"),
                     tr("A − B, points [95 %]"), tr("Only A"), tr("Only B"), tr("Both"), tr("Neither"),
                     tr("Sign-test p")};
    table.textColumns = 2;
    for (const PairReport& pair : report.pairs) {
        const PairedComparison& c = pair.comparison;
        const QString a = runLabel(report, pair.runA), b = runLabel(report, pair.runB);
        table.rows.append({a, b, QString::number(c.tasks), fixed(c.correctPctA.value, 1),
                           fixed(c.correctPctB.value, 1), pointsCell(c.differencePct), QString::number(c.onlyA),
                           QString::number(c.onlyB), QString::number(c.both), QString::number(c.neither),
                           pValueCell(c.signTestP)});
        QStringList tips = emptyTips(int(table.headers.size()));
        tips[2] = missingNote(c, a, b);
        tips[5] = c.differencePct.exactBinomial
                      ? tr("Every paired resample gives the same difference: bounds from the exact binomial ones of "
                           "the shares of tasks each run wins")
                      : tr("95 % paired bootstrap interval (the same resampled tasks on both sides)");
        tips[10] = tr("Exact two-sided sign test on the %1 discordant task(s)").arg(c.onlyA + c.onlyB);
        table.tooltips.append(tips);
    }
    return table;
}

TextTable routingTable(const Report& report)
{
    TextTable table;
    table.headers = {tr("Level"), tr("Run"), tr("Tasks"), tr("Solved"), tr("Correct %")};
    table.textColumns = 2;
    if (!report.routing)
        return table;
    const RoutingReport& routing = *report.routing;
    for (auto it = routing.runForLevel.cbegin(); it != routing.runForLevel.cend(); ++it) {
        const auto metrics = routing.estimate.perLevel.constFind(it.key());
        if (metrics == routing.estimate.perLevel.cend())
            continue;
        table.rows.append({QStringLiteral("L%1").arg(it.key()), runLabel(report, it.value()),
                           QString::number(metrics->tasks), QString::number(metrics->correct),
                           percentText(metrics->correctPct)});
        table.tooltips.append(emptyTips(int(table.headers.size())));
    }
    const Metrics& combined = routing.estimate.combined;
    table.rows.append({tr("all"), tr("routed"), QString::number(combined.tasks), QString::number(combined.correct),
                       percentText(combined.correctPct)});
    QStringList tips = emptyTips(int(table.headers.size()));
    tips[1] = routing.estimate.problems.join(QLatin1Char('\n'));
    table.tooltips.append(tips);
    return table;
}

TextTable ablationTable(const Report& report)
{
    TextTable table;
    table.headers = {tr("Run"),           tr("Switched off"),   tr("Against"),
                     tr("Tasks"),         tr("Correct %"),      tr("Full correct %"),
                     tr("Change, points [95 %]"), tr("Sign-test p")};
    table.textColumns = 3;
    for (const kwb::AblationRow& row : report.ablations) {
        const RunReport* run = findRun(report, row.run);
        const QString label = runLabel(report, row.run);
        const QString off = row.switchedOff.join(QStringLiteral(", "));
        QStringList tips = emptyTips(int(table.headers.size()));
        if (!row.comparison || row.baseline == 0) {
            const Metrics m = run ? run->summary.overall : Metrics{};
            table.rows.append({label, off, tr("no full run selected"), QString::number(m.tasks),
                               fixed(m.correctPct.value, 1), kNone, kNone, kNone});
            tips[2] = tr("Check a run of %1 with every part on to compare against").arg(row.regime);
        } else {
            // Core pairs the ablated run (A) against the full one (B): a negative change is what the
            // switched-off part was worth.
            const PairedComparison& c = *row.comparison;
            const QString baseline = runLabel(report, row.baseline);
            table.rows.append({label, off, baseline, QString::number(c.tasks), fixed(c.correctPctA.value, 1),
                               fixed(c.correctPctB.value, 1), pointsCell(c.differencePct), pValueCell(c.signTestP)});
            tips[3] = missingNote(c, label, baseline);
            tips[7] = tr("Exact two-sided sign test on the %1 discordant task(s)").arg(c.onlyA + c.onlyB);
        }
        table.tooltips.append(tips);
    }
    return table;
}

QString noiseCaveatText()
{
    return tr("Gaps of one or two tasks are within noise (the study's caveat): read the 95 % intervals and the "
              "sign-test p before the point values.");
}

QString routingCaveatText()
{
    return tr("Routing takes each level from the run that solved most of its tasks, chosen after seeing these "
              "results: an optimistic, in-sample estimate.");
}

} // namespace kwb::app
