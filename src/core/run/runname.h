#pragma once
// What a run is called wherever runs are listed side by side (Results tables, pairs, Diff
// pickers, the Monitor, the Markdown export): "#6 agent n=8 1 turn sweep", "#7 agent −best_of_n".
// The regime's name, then what sets the run apart from that regime's built-in settings: the
// switches that are off, then n, turns, temperature, feedback and selection where they differ
// from the built-in regime with those switches off, an answer template other than the regime's
// (another answer format), a protocol profile other than the default, a sweep, per-level routing
// and compile-only; an import's run folder first ("#3 import gemini_level1_run compile-only"). One definition, so a run
// has the same name on every page.

#include "core/store/runstore.h"

#include <QString>
#include <QStringList>

namespace kwb {

/// The parts that set the run apart, in display order ("−best_of_n", "n=8", "1 turn", "sweep").
/// Empty for a run with its regime's built-in settings.
QStringList runDistinctions(const RunInfo& run);
/// "agent n=8 1 turn sweep": the regime and its distinctions.
QString runDescription(const RunInfo& run);
/// "#6 agent n=8 1 turn sweep".
QString runLabel(const RunInfo& run);

} // namespace kwb
