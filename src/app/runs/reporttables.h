#pragma once
// The results page's tables as text cells, built from core's Report (report.h): one function per
// table, so each QTableView of the page is fed from one place and the tests check the same cells
// the user reads. Numbers are formatted for reading ("66.7 % [33–100]"); the exports keep core's
// own formats.

#include "core/study/report.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace kwb::app {

/// A table: column headers, then rows of cells (every row has headers.size() cells), and a
/// tooltip per cell where one helps (same shape as rows, may be empty).
struct TextTable
{
    QStringList headers;
    QList<QStringList> rows;
    QList<QStringList> tooltips;
    int textColumns = 1;         ///< left-aligned columns from the left; the others are numbers (right-aligned)
    int trailingTextColumns = 0; ///< left-aligned columns at the right end (Table I's provenance)
};

/// "1 task", "3 tasks": a count with its noun (English plurals; the page is not translated yet).
QString counted(qint64 n, const QString& one, const QString& many);

/// The number, "–" when absent.
QString countCell(const std::optional<qint64>& value);
/// "950", "12.3k", "1.24 M": a count short enough for a table cell; "–" when absent.
QString compactCountCell(const std::optional<qint64>& value);
/// "3.4 s", "12 min 5 s", "–" when absent.
QString durationCell(const std::optional<qint64>& ms);
/// "0.031", "< 0.001".
QString pValueCell(double p);

/// Table I: per run tasks, correct %, fast_1 %, compiled % (each with its interval), the
/// geometric-mean speedup, tokens and model time, then where the answers came from: the model (or
/// "fixture server (fixture-model)"), endpoint, answer format and prompt set (provenance.h); the
/// run's cell's tooltip says all of it.
TextTable runTable(const Report& report);
/// Per task of one level (rows: every task of that level any run has, up to 100), the task's one
/// best across the runs (Report::bestOfTask), named as every page names it, then the candidate
/// each run kept (status and speed-up).
TextTable taskTable(const Report& report, int level);
/// Why the routing estimate takes or leaves each run: the runs it chose from, and for every other
/// run the exact reason (notMainRegimeReason); with fewer than two regimes to choose from, that.
QString routingExplanationText(const Report& report);
/// Table II: core's perLevelTable (the Markdown export's per-level table): per run and level
/// tasks, correct %, fast_1 %, compiled % with intervals and the geomean speedup.
TextTable levelTable(const Report& report);
/// Every pair of runs on the tasks both have: correct % of each, the difference with its paired
/// interval, the discordant counts and the sign-test p.
TextTable pairTable(const Report& report);
/// The routing estimate: per level the run it takes, then the combined row. Empty rows for fewer
/// than two runs.
TextTable routingTable(const Report& report);

/// The ablation table: every run with parts switched off against the first run of the same regime
/// with every part on, on the tasks both have (core's Report::ablations, the one source of these
/// rows): correct % of each, the change in points with its paired interval, and the sign-test p.
TextTable ablationTable(const Report& report);

/// fast_p at KernelBench's thresholds (kFastPThresholds): per run "60.0 % / 40.0 %", plain then
/// clear (the speed-up's 95 % interval wholly above p).
TextTable fastPTable(const Report& report);
QString fastPNoteText();

/// The study's caveats, shown under the tables they qualify.
QString noiseCaveatText();
QString routingCaveatText();

} // namespace kwb::app
