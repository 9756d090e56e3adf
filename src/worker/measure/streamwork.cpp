#include "worker/measure/streamwork.h"

#include <algorithm>

namespace kwb {

std::optional<KernelRecord> takeEndMarker(std::vector<KernelRecord>& records, uint32_t timedStream)
{
    auto last = records.end();
    for (auto it = records.begin(); it != records.end(); ++it)
        if (it->streamId == timedStream && (last == records.end() || it->startNs > last->startNs))
            last = it;
    if (last == records.end() || last->name.find("FillFunctor") == std::string::npos)
        return std::nullopt;
    KernelRecord marker = *last;
    records.erase(last);
    return marker;
}

UnseenWork unseenWork(const std::vector<KernelRecord>& records, uint32_t timedStream, const KernelRecord& endMarker)
{
    UnseenWork u;
    uint64_t firstStart = 0;
    for (const KernelRecord& r : records) {
        if (r.streamId == timedStream || r.endNs <= endMarker.startNs)
            continue;
        ++u.kernels;
        u.ns += r.endNs - std::max(r.startNs, endMarker.startNs);
        if (u.kernels == 1 || r.startNs < firstStart) {
            firstStart = r.startNs;
            u.first = r.name;
        }
    }
    return u;
}

} // namespace kwb
