#pragma once
// `kwb eval`'s lines on the kernels as they ran (issue 40 items 2 and 4): each launch
// configuration with its occupancy, and each kernel placed by the work it did with its achieved
// bandwidth or FLOP/s against the evaluation's peaks, in the words the window uses.

#include "textformat.h"

#include "core/tasks/kernelwork.h"

#include <QJsonArray>

namespace kwb {
struct EvaluationResult;
}

namespace kwb::cli {

/// "launch" rows (at most 8, the longest first) and "kernel work" rows, or the placement's reason.
void addKernelRows(KeyValueList& table, const EvaluationResult& evaluation, const KernelPlacement& placement);

/// `kernel_work` of `kwb eval --json`: each placed kernel's numbers and its reading.
QJsonArray kernelWorkJson(const EvaluationResult& evaluation, const KernelPlacement& placement);

} // namespace kwb::cli
