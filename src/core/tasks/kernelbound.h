#pragma once
// One definition of a kernel's arithmetic intensity and of "bound", for every page, filter, chart
// and prompt (docs/roofline.md §Intensity and bound).
//
// A task's FLOPs are fixed by its shapes; its intensity depends on how many HBM bytes the code
// that runs it moves. Three analytic traffic models come from the op chain (analyze):
//   - eager unfused: every op its own kernel, reading its inputs and writing its output (the
//     eager reference; analyze's bytes_unfused);
//   - library op + fused epilogue: each heavy library op (matmul, conv: cuBLAS/cuDNN) its own
//     kernel with its own traffic, and each run of other ops between or after them one fused
//     pass (trafficModel() below says exactly which bytes);
//   - one kernel: the task's inputs and parameters read once, its output written once
//     (bytes_fused, the least any code can move).
// A measured intensity (bytes counted by a profiler) replaces the model where there is one.
//
// "Bound" compares an intensity with a GPU's FP32 ridge point (FP32 peak / memory bandwidth):
// below it memory-bound, at or above it compute-bound. A *task* is called memory- or
// compute-bound by its one-kernel intensity: even the best possible code is then limited by
// that roof. A marker on a chart is placed at the intensity of what it measured, and says which.

#include "core/protocol/workerresponses.h"

#include <QString>

#include <optional>

namespace kwb {

struct EvaluationResult;

enum class IntensityBasis {
    EagerUnfused,    ///< every op its own kernel (analytic)
    LibraryEpilogue, ///< library ops + one fused pass per run of other ops (analytic)
    OneKernel,       ///< the whole chain as one kernel (analytic, the least traffic)
    Measured,        ///< HBM bytes counted by a profiler
};

/// "eager, op by op (analytic)", "library op + fused epilogue (analytic)", "one kernel (analytic)",
/// "measured HBM traffic".
QString intensityBasisText(IntensityBasis basis);

enum class Bound { Unknown, Memory, Compute };

/// The ridge point of a compute peak against a bandwidth, FLOP/byte; NaN unless both are > 0.
double ridgeIntensity(double computeGflops, double bandwidthGBps);
/// Memory below the ridge (0 FLOP/B included), Compute at or above it; Unknown when the intensity
/// is not a number ≥ 0 or the ridge not a positive number.
Bound boundAt(double intensity, double ridge);
/// The task's bound on a GPU with this ridge: its one-kernel intensity against the ridge.
Bound taskBound(const AnalyzeResult& analysis, double ridge);
/// "memory-bound", "compute-bound", "unknown".
QString boundText(Bound bound);
/// "memory-bound: 0.25 FLOP/B (one kernel) is below the ridge point, 15.6 FLOP/B" — the one
/// sentence the Tasks page, the chart and the prompts give.
QString boundSentence(double intensity, IntensityBasis basis, double ridge);
/// The task's sentence: boundSentence() at its one-kernel intensity.
QString taskBoundSentence(const AnalyzeResult& analysis, double ridge);
/// "12.3 FLOP/B" (two decimals under 10).
QString flopPerByteText(double intensity);

/// The analytic HBM traffic of a task under each model, in bytes.
struct TrafficModel
{
    double unfusedBytes = 0;   ///< bytes_unfused
    double oneKernelBytes = 0; ///< bytes_fused
    /// Library ops as their own kernels, each run of other ops one fused pass. Empty when the
    /// chain has no library op (then "library op + epilogue" does not apply).
    std::optional<double> libraryEpilogueBytes;
    int libraryOps = 0;  ///< matmul and conv ops with bytes
    int fusedPasses = 0; ///< runs of other ops, each one pass
    double flops = 0;

    double intensity(IntensityBasis basis) const;
    double bytes(IntensityBasis basis) const;
};

/// A library op: a matmul or a convolution (cuBLAS/cuDNN do it better than a hand kernel).
bool isLibraryOp(const TaskOp& op);

/// The three models from an analysis. Library op + epilogue, precisely: each library op's own
/// `bytes` (its inputs read, its output written), plus, for each maximal run of other ops that
/// move bytes (view ops move none and do not break a run), one pass: the first op's input bytes
/// (read), for every later op its input bytes less the one input of the same element count as
/// the previous op's output (that input comes from the pass itself, in registers), and the last
/// op's output bytes (written). Element sizes are taken per op as analyze counts them (bytes /
/// elements of inputs and outputs).
TrafficModel trafficModel(const AnalyzeResult& analysis);

/// Which model a candidate is placed by when its traffic was not measured, from the kernels it
/// launched (CUPTI): none of its own (torch only) → eager unfused; its own next to library
/// kernels → library op + epilogue; only its own → one kernel (the most it can have saved).
IntensityBasis candidateBasis(const EvaluationResult& evaluation);

/// A correct candidate's fraction of the roofline bound (issue 39 item 6): the time at the bound
/// over its measured time, both from the evaluation's `roofline` object (docs/protocol.md
/// §evaluate): floor_ms (the least time the task's work can take on that GPU) / candidate_ms
/// (the timing's mean where the object has none). 1 is at the bound; a counted candidate can
/// reach 1 / (1 − margin) within the margin for ceiling error. nullopt unless the evaluation
/// counts as correct (countsAsCorrect) and both times are positive: a worker before the floor, a
/// CPU evaluation or an analysis that failed has no bound. The one definition Results, the
/// Roofline and `kwb report` read.
std::optional<double> rooflineBoundFraction(const EvaluationResult& evaluation);
/// "41 % of bound"; one decimal under 10 % ("4.0 % of bound"), two digits under 1 % ("0.52 % of bound").
QString boundFractionText(double fraction);

/// Why an evaluation with status correct does not count (EvaluationResult::countsAsCorrect()),
/// in words with its numbers: "measured 0.133 ms is below the roofline floor 2.10 ms (less the
/// 10 % margin for ceiling error) on this GPU: physically impossible for code that does the
/// work". Empty when it counts, or is not correct at all.
QString notCountedReason(const EvaluationResult& evaluation);

} // namespace kwb
