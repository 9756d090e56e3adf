#pragma once
// An evaluation in words, for people: the Monitor's Evaluation tab, the run tree's columns, the
// Diff page and the Results page read these instead of the worker's JSON. Numbers come with
// what they are measured against (the tolerance, the roofline floor), and no number is shown
// where it would mislead: an output with NaN or Inf has no meaningful max |diff| (the worker
// measures the difference over the finite elements only, so an all-NaN output would read 0).

#include "core/protocol/evaluationresult.h"

#include <QString>
#include <QStringList>

namespace kwb {

/// Output elements that are NaN or Inf where the reference is finite (`correctness.failure.detail
/// .non_finite`); 0 when none were reported.
qint64 nonFiniteOutputs(const EvaluationResult& evaluation);

/// "1.2e-06", "NaN/Inf" (an output with NaN or Inf where the reference is finite), or empty when the evaluation has no
/// correctness.
QString maxAbsDiffText(const EvaluationResult& evaluation);

/// Why an evaluation is not counted as correct or fast although its status says correct:
/// notCountedReason() (kernelbound.h) as one line, "not counted: measured 0.133 ms is below the
/// roofline floor 2.1 ms (…)". Empty when it counts, or is not correct at all.
QStringList notCountedReasons(const EvaluationResult& evaluation);

/// Each flag of the evaluation with what it means ("speedup_over_10x: KernelBench's warning …").
QStringList explainedFlags(const EvaluationResult& evaluation);

/// The readable summary, a line per fact: status (and whether it counts), speed-up with both
/// times and their spread, correctness against the stated tolerance (atol + rtol·|ref|, with why
/// a large relative difference can pass), NaN/Inf outputs, the failure, flags, degenerate
/// references, the profile, each compiled kernel in a line (kernelReading), each launch as the GPU
/// ran it (launchReading).
QString evaluationSummary(const EvaluationResult& evaluation);

} // namespace kwb
