#pragma once
// A candidate's kernels as the roofline draws them (issue 40 item 3): core's kernelPlacement()
// (each kernel by the work it did, at its own traced time) with each kernel's reading.

#include "app/charts/rooflinechart.h"

namespace kwb {
struct EvaluationResult;
}

namespace kwb::app {

/// The kernels of `evaluation` on the task of `analysis`; `why` gets the reason there are none
/// where the evaluation was traced (empty where it was not: nothing to explain).
QList<RooflineKernel> rooflineKernels(const AnalyzeResult& analysis, const EvaluationResult& evaluation, QString* why);

} // namespace kwb::app
