#pragma once
// Work of a traced call that its timing cannot see (issue 39 item 7): the timer records its stop
// event on the timed stream right after the call returns, so a kernel on another stream (a
// non-blocking stream of the answer's own, library work moved there behind a short kernel on the
// timed one) that is still running then is left out of the time. The trace stage queues a marker
// kernel on the timed stream at that same moment; any kernel elsewhere that ends after the marker
// started was not timed. Honest use of other streams joins them to the timed stream before the
// call returns (an event wait), and then all their kernels end before the marker starts.
// Torch-free: CUPTI's kernel records in, a verdict out.
#include "worker/measure/cuptitracer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kwb {

/// Removes the call's end marker from `records` and returns it: the last kernel to start on
/// `timedStream`, where it is a fill (torch's FillFunctor, which the marker is); nullopt, and
/// `records` as they were, where the last kernel there is something else (the marker's record
/// was lost, or nothing ran there).
std::optional<KernelRecord> takeEndMarker(std::vector<KernelRecord>& records, uint32_t timedStream);

struct UnseenWork
{
    int kernels = 0;   ///< kernels on other streams that ended after the marker started
    uint64_t ns = 0;   ///< their time after the marker's start (the part no timing saw)
    std::string first; ///< the earliest of them to start, by name
};

/// The kernels among `records` on a stream other than `timedStream` that end after `endMarker`
/// starts.
UnseenWork unseenWork(const std::vector<KernelRecord>& records, uint32_t timedStream, const KernelRecord& endMarker);

} // namespace kwb
