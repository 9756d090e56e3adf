#include "worker/measure/kernellaunches.h"

#include "core/protocol/protocolnames.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace kwb {

namespace K = ProtocolNames::Key;
namespace F = ProtocolNames::KernelFact;
namespace L = ProtocolNames::KernelLaunch;

nlohmann::json kernelLaunches(const std::vector<KernelRecord>& records,
                              const std::function<bool(const std::string&)>& isCustom, const SmLimits* sm,
                              const std::string& smError, std::size_t* omitted)
{
    // One row per configuration: the same kernel at another grid, block or shared size occupies
    // the GPU differently (a library picks per shape).
    using Key = std::tuple<std::string, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                           uint32_t, uint32_t>;
    struct Row
    {
        const KernelRecord* first = nullptr;
        int calls = 0;
        uint64_t ns = 0;
    };
    std::map<Key, Row> rows;
    for (const KernelRecord& r : records) {
        Row& row = rows[Key{r.name, r.gridX, r.gridY, r.gridZ, r.blockX, r.blockY, r.blockZ, r.registersPerThread,
                            r.staticSharedBytes, r.dynamicSharedBytes, r.localBytesPerThread}];
        if (!row.first)
            row.first = &r;
        row.calls++;
        row.ns += r.endNs - r.startNs;
    }
    std::vector<const Row*> order;
    for (const auto& [key, row] : rows)
        order.push_back(&row);
    std::stable_sort(order.begin(), order.end(), [](const Row* a, const Row* b) { return a->ns > b->ns; });
    if (omitted)
        *omitted = order.size() > kMaxLaunchRows ? order.size() - kMaxLaunchRows : 0;
    if (order.size() > kMaxLaunchRows)
        order.resize(kMaxLaunchRows);

    nlohmann::json out = nlohmann::json::array();
    for (const Row* row : order) {
        const KernelRecord& r = *row->first;
        nlohmann::json j = {{K::kName, r.name},
                            {K::kCustom, isCustom(r.name)},
                            {K::kCalls, row->calls},
                            {K::kTimeNs, row->ns},
                            {L::kGrid, {r.gridX, r.gridY, r.gridZ}},
                            {L::kBlock, {r.blockX, r.blockY, r.blockZ}},
                            {F::kRegisters, r.registersPerThread},
                            {F::kStaticSharedBytes, r.staticSharedBytes},
                            {L::kDynamicSharedBytes, r.dynamicSharedBytes},
                            {F::kLocalBytes, r.localBytesPerThread}};
        if (r.sharedCarveoutBytes > 0)
            j[L::kSharedCarveoutBytes] = r.sharedCarveoutBytes;
        if (sm) {
            const uint64_t threads = uint64_t(r.blockX) * r.blockY * r.blockZ;
            j[L::kOccupancy] = occupancyJson(theoreticalOccupancy(
                *sm, LaunchShape{int(std::min<uint64_t>(threads, 1u << 30)), int(r.registersPerThread),
                                 r.staticSharedBytes, r.dynamicSharedBytes}));
        } else {
            j[L::kOccupancy] = {{K::kError, smError}};
        }
        out.push_back(std::move(j));
    }
    return out;
}

} // namespace kwb
