#pragma once
// The report's renderings (`kwb report`, the Results page and its exports): the cells every table
// prints, Table II as text cells, and the whole report as Markdown, CSV or JSON. What the numbers
// are is report.h's; this file only writes them.

#include "core/study/report.h"

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace kwb {

/// A percentage over tasks as every table prints it, the window's and the Markdown export's:
/// "66.7 % [33–100]", the value with one decimal and its 95 % interval in whole percent (over
/// 10–30 tasks its ends fall on whole tasks; the CSV and JSON exports keep the exact ends); "–"
/// when there is no value (no task).
QString percentText(const Estimate& estimate);
/// Clear fast_1 as a cell: percentText of it, or "n/a" where it was not measured
/// (Metrics::clearFast1Measured: a fast task's speed-up without an interval, or none kept).
QString clearFast1Text(const Metrics& metrics);
/// The geometric-mean speed-up so: "1.23× [1.05–1.40] (n = 4)", "–" when no correct kernel was timed.
QString geomeanSpeedupText(const Metrics& metrics);

/// The correct kernels' fraction of the roofline bound as a cell: "41 % of bound (n = 7)" (the
/// geometric mean, Metrics::boundFractionGeomean), "n/a" where correct kernels have no floor
/// stored (a worker before it), "–" without a correct kernel.
QString boundFractionCellText(const Metrics& metrics);

/// A table of the report as text cells: what the Markdown export writes and the window shows, so
/// both read one definition of each column.
struct ReportTable
{
    QStringList headers;
    QList<QStringList> rows;
    int textColumns = 1; ///< left-aligned columns from the left; the others are numbers
};

/// Table II, per run and level (the levels each run has): tasks, correct %, fast_1 % and
/// compiled % with their 95 % intervals, the geometric-mean speedup with its count and the
/// correct kernels' fraction of the roofline bound (boundFractionCellText); a
/// compile-only run's correctness columns say "not measured".
ReportTable perLevelTable(const Report& report);

/// Markdown: a run table (Tables I–II columns), a per-level table, the paired comparisons, the
/// ablation table, the best-of-n curves, the routing estimate and the noise caveat.
QString reportMarkdown(const Report& report);

/// CSV, one long table: header `section,run,run_b,level,metric,value,low,high` (RFC 4180
/// quoting). section `run` (level `all` or a number; metrics tasks, correct, correct_pct, fast1,
/// fast1_pct, compiled, compiled_pct, geomean_speedup, geomean_count, and for level `all` also
/// evaluations, responses, tokens_in, tokens_out, model_time_ms), `provenance` (run: where its
/// answers came from, RunProvenance::toJson's keys, a template as `template:<name>`), `paired` (run vs run_b: tasks,
/// both, only_a, only_b, neither, correct_pct_a, correct_pct_b, difference_pct, sign_test_p) and
/// `routing` (run: the run chosen for the level; level `all` for the combined estimate) and
/// `unevaluated` (run, the task's level, metric: the task id, value: the reason; the run's section
/// also has the metric `unevaluated`, their count). low/high
/// are the 95 % interval where the metric has one; a missing number is an empty cell.
QString reportCsv(const Report& report);

/// JSON: {"database", "runs": [...] (each with its "provenance", RunProvenance::toJson), "comparisons":
/// [...], "routing": {...}|null, "notes"}.
/// See docs/cli.md.
QJsonObject reportJson(const Report& report);

} // namespace kwb
