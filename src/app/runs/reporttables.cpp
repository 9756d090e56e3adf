#include "app/runs/reporttables.h"

#include "core/study/provenance.h"
#include "core/study/reportformat.h"
#include "core/tasks/kernelbound.h"

#include <QCoreApplication>
#include <QSet>

#include <algorithm>
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
    return e.exactBinomial
               ? tr("95 % exact binomial (Clopper–Pearson) interval, the method of every share-of-tasks column")
               : tr("95 % bootstrap interval over tasks");
}

TextTable runTable(const Report& report)
{
    TextTable table;
    // Clear fast_1 is the headline; plain fast_1 is in its tooltip and beside it in the fast_p table
    // (a column of its own would push the speed-up out of a 1280-pixel window).
    table.headers = {
        tr("Run"),        tr("Status"),          tr("Tasks"),           tr("Correct %"),  tr("Clear fast_1 %"),
        tr("Compiled %"), tr("Geomean speedup"), tr("Tokens in / out"), tr("Model time"), tr("Answered by"),
        tr("Endpoint"),   tr("Answer format"),   tr("Prompt set")};
    table.textColumns = 2;
    table.trailingTextColumns = 4;
    for (const RunReport& run : report.runs) {
        const Metrics& m = run.summary.overall;
        const RunProvenance provenance = runProvenance(run.run);
        table.rows.append(
            {run.label(), run.run.status, QString::number(m.tasks), percentText(m.correctPct), clearFast1Text(m),
             percentText(m.compiledPct), geomeanSpeedupText(m),
             QStringLiteral("%1 / %2").arg(compactCountCell(run.usage.tokensIn), compactCountCell(run.usage.tokensOut)),
             durationCell(run.usage.latencyMs), provenance.sourceText(), provenance.endpoint, provenance.answerFormat,
             provenance.promptSet});
        QStringList tips = emptyTips(int(table.headers.size()));
        tips[0] = tr("%1, created %2, %3 evaluations\n%4")
                      .arg(run.run.name, run.run.created.toLocalTime().toString(Qt::ISODate))
                      .arg(run.evaluations)
                      .arg(provenance.details);
        for (int c = 9; c < 13; ++c)
            tips[c] = provenance.details;
        tips[3] = tr("%1 of %2 tasks correct; %3").arg(m.correct).arg(m.tasks).arg(intervalNote(m.correctPct));
        tips[4] = (m.timedCorrect > 0 && m.timedWithInterval == 0
                       ? tr("Not measured: none of the %1 timed correct tasks has a speed-up interval (results from "
                            "before intervals were kept), so whether any is clearly fast cannot be told.")
                             .arg(m.timedCorrect)
                   : m.clearFast1Undecided > 0
                       ? tr("Not measured: %1 of the fast tasks have a speed-up without an interval (results from "
                            "before intervals were kept), so whether they are clearly fast cannot be told.")
                             .arg(m.clearFast1Undecided)
                       : tr("%1 of %2 tasks correct with the speed-up's 95 % interval wholly above 1 (a tie within "
                            "noise does not count); %3.")
                             .arg(m.clearFast1)
                             .arg(m.tasks)
                             .arg(intervalNote(m.clearFast1Pct))) +
                  tr(" KernelBench's plain fast_1 (any speed-up above 1): %1 of %2, %3")
                      .arg(m.fast1)
                      .arg(m.tasks)
                      .arg(percentText(m.fast1Pct));
        tips[5] = tr("%1 of %2 tasks compiled; %3").arg(m.compiled).arg(m.tasks).arg(intervalNote(m.compiledPct));
        tips[6] =
            tr("Geometric mean over the %1 correct kernel(s) with a timed speedup; arithmetic mean %2, best %3; "
               "%4 of the %5 correct answers launch no kernel of their own")
                .arg(m.geomeanCount)
                .arg(std::isfinite(m.meanSpeedup) ? QString::number(m.meanSpeedup, 'f', 2) + QStringLiteral("\u00D7")
                                                  : tr("n/a"),
                     std::isfinite(m.bestSpeedup) ? QString::number(m.bestSpeedup, 'f', 2) + QStringLiteral("\u00D7")
                                                  : tr("n/a"))
                .arg(m.torchOnlyCorrect)
                .arg(m.correct) +
            tr("; fraction of the roofline bound (time at the floor / measured time, geometric mean): %1")
                .arg(boundFractionCellText(m));
        tips[7] = tr("%1 tokens in, %2 out").arg(countCell(run.usage.tokensIn), countCell(run.usage.tokensOut));
        tips[8] = tr("The model requests' latencies added up (%1 responses)").arg(run.usage.responses);
        table.tooltips.append(tips);
    }
    return table;
}

namespace {
// What "% of bound" means, where a cell shows one (core's rooflineBoundFraction).
QString boundFractionTip(const TaskOutcome& o)
{
    if (!o.correct())
        return QString();
    if (!std::isfinite(o.boundFraction))
        return tr(". No fraction of the roofline bound: its evaluation stored no roofline floor (a worker before "
                  "it, or no GPU).");
    return tr(". %1: the least time the task's work can take on the run's GPU (its roofline floor) over the "
              "candidate's measured time; 100 % is at the bound.")
        .arg(boundFractionText(o.boundFraction));
}
} // namespace

TextTable taskTable(const Report& report, int level)
{
    TextTable table;
    // The best beside the task, in view however many runs are checked; the runs to its right.
    table.headers = {tr("Task"), tr("Best of these runs")};
    for (const RunReport& run : report.runs)
        table.headers << run.label();
    table.textColumns = int(table.headers.size());
    QMap<QString, QList<const TaskOutcome*>> byTask; // sorted by id: L1/10 after L1/9 below
    for (int r = 0; r < report.runs.size(); ++r)
        for (const TaskOutcome& o : report.runs.at(r).outcomes)
            if (o.level == level) {
                QList<const TaskOutcome*>& cells = byTask[o.task];
                cells.resize(report.runs.size(), nullptr);
                cells[r] = &o;
            }
    QStringList tasks = byTask.keys();
    // By number within the level: L1/2 before L1/10.
    std::sort(tasks.begin(), tasks.end(), [](const QString& a, const QString& b) {
        return a.section(QLatin1Char('/'), 1).toInt() < b.section(QLatin1Char('/'), 1).toInt();
    });
    const auto cell = [](const TaskOutcome& o) {
        QString text = o.status;
        if (o.correct() && std::isfinite(o.speedup)) {
            text += QStringLiteral(" %1\u00D7").arg(o.speedup, 0, 'f', 2);
            if (std::isfinite(o.boundFraction))
                text += QStringLiteral(", ") + boundFractionText(o.boundFraction);
        } else if (o.belowRooflineFloor)
            text += tr(" (not counted)");
        return text;
    };
    for (const QString& task : std::as_const(tasks)) {
        const QList<const TaskOutcome*>& cells = byTask.value(task);
        QStringList runCells;
        QStringList tips = emptyTips(int(table.headers.size()));
        for (int r = 0; r < report.runs.size(); ++r) {
            const TaskOutcome* o = cells.value(r);
            runCells << (o ? cell(*o) : kNone);
            const qint64 evaluation = report.runs.at(r).chosenEvaluation.value(task);
            tips[r + 2] = o && evaluation ? tr("The candidate %1 keeps for %2 (its own selection): evaluation %3%4")
                                                .arg(report.runs.at(r).label(), task)
                                                .arg(evaluation)
                                                .arg(boundFractionTip(*o))
                          : o ? tr("No evaluation: counted as a failure")
                              : tr("Not a task of this run");
        }
        const auto best = report.bestOfTask.constFind(task);
        const RunReport* bestRun = best == report.bestOfTask.cend() ? nullptr : findRun(report, best->run);
        QString bestText = kNone;
        if (bestRun) {
            const int r = int(bestRun - report.runs.constData());
            const TaskOutcome* o = cells.value(r);
            bestText = QStringLiteral("%1 · turn %2 · sample %3%4")
                           .arg(bestRun->label())
                           .arg(best->turn)
                           .arg(best->sample)
                           .arg(o ? QStringLiteral(" · ") + cell(*o) : QString());
            tips[1] = tr("Of the candidates these runs keep, the best (correct and counted, then compiled, then "
                         "speed-up; ties: the run listed first): evaluation %1. The Roofline and the Diff page "
                         "show the same one.")
                          .arg(best->evaluation);
        }
        table.rows.append(QStringList{task, bestText} + runCells);
        table.tooltips.append(tips);
    }
    return table;
}

QString routingExplanationText(const Report& report)
{
    QStringList lines;
    QStringList candidates;
    QSet<QString> regimes;
    for (const RunReport& run : report.runs) {
        const QString why = notMainRegimeReason(run.run);
        if (why.isEmpty()) {
            candidates << run.label();
            regimes.insert(run.run.regime);
        } else {
            lines << tr("%1: not used, %2.").arg(run.label(), why);
        }
    }
    QString head;
    if (report.routing)
        head = tr("Chosen from %1 (main regime runs: a built-in regime as built in, no ablation, sweep or routing). ")
                   .arg(candidates.join(QStringLiteral(", "))) +
               routingCaveatText();
    else if (candidates.isEmpty())
        head = tr("No routing estimate: none of the checked runs is a main regime run (zero-shot, profiling-guided, "
                  "iterative or agent as built in today, no ablation, sweep or routing).");
    else
        head = tr("No routing estimate: it needs main regime runs of two or more regimes; the checked ones are all %1 "
                  "(%2).")
                   .arg(QStringList(regimes.cbegin(), regimes.cend()).join(QStringLiteral(", ")),
                        candidates.join(QStringLiteral(", ")));
    return lines.isEmpty() ? head : head + QLatin1Char('\n') + lines.join(QLatin1Char('\n'));
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
            tips[cells.size()] =
                f.noIntervals ? tr("%1 of %2 tasks correct with a speed-up above %3; clear not measured: the run "
                                   "kept no speed-up interval")
                                    .arg(f.fast)
                                    .arg(f.tasks)
                                    .arg(f.p)
                : f.undecided > 0
                    ? tr("%1 of %2 tasks correct with a speed-up above %3; clear not measured: %4 of them "
                         "have a speed-up without an interval")
                          .arg(f.fast)
                          .arg(f.tasks)
                          .arg(f.p)
                          .arg(f.undecided)
                    : tr("%1 of %2 tasks correct with a speed-up above %3; %4 with its interval wholly above it")
                          .arg(f.fast)
                          .arg(f.tasks)
                          .arg(f.p)
                          .arg(f.clear);
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
        tips[0] = tr("95 % intervals over this level's tasks: exact binomial (Clopper–Pearson) for the shares, "
                     "bootstrap for the geometric mean; fast_1: correct and faster than the reference");
        table.tooltips.append(tips);
        Q_UNUSED(row);
    }
    return table;
}

TextTable pairTable(const Report& report)
{
    TextTable table;
    table.headers = {
        tr("A"),      tr("B"),      tr("Tasks"), tr("A correct %"), tr("B correct %"), tr("A − B, points [95 %]"),
        tr("Only A"), tr("Only B"), tr("Both"),  tr("Neither"),     tr("Sign-test p")};
    table.textColumns = 2;
    for (const PairReport& pair : report.pairs) {
        const PairedComparison& c = pair.comparison;
        const QString a = runLabel(report, pair.runA), b = runLabel(report, pair.runB);
        table.rows.append({a, b, QString::number(c.tasks), fixed(c.correctPctA.value, 1), fixed(c.correctPctB.value, 1),
                           pointsCell(c.differencePct), QString::number(c.onlyA), QString::number(c.onlyB),
                           QString::number(c.both), QString::number(c.neither), pValueCell(c.signTestP)});
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
    table.headers = {tr("Run"),
                     tr("Switched off"),
                     tr("Against"),
                     tr("Tasks"),
                     tr("Correct %"),
                     tr("Full correct %"),
                     tr("Change, points [95 %]"),
                     tr("Sign-test p")};
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
