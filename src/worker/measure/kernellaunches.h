#pragma once
// The trace's kernels as they were launched (issue 40 item 2): per kernel and launch
// configuration, its grid and block, dynamic and static shared memory, registers and local memory
// per thread as the driver ran it, its calls and time, and its theoretical occupancy on the GPU
// it ran on (occupancy.h). The evaluate response's `launches` (docs/protocol.md §evaluate).

#include "worker/device/occupancy.h"
#include "worker/measure/cuptitracer.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kwb {

/// At most this many configurations are listed, the longest-running first; the rest are counted
/// in `launches_omitted` (a level-3 network launches hundreds of distinct kernels).
inline constexpr std::size_t kMaxLaunchRows = 64;

/// `launches`: records grouped by name and configuration, the longest total time first. `isCustom`
/// says which kernels are the candidate's own; `sm` is the GPU's limits (nullptr: no occupancy,
/// `occupancy: {"error": smError}`). `omitted` gets the configurations left out.
nlohmann::json kernelLaunches(const std::vector<KernelRecord>& records,
                              const std::function<bool(const std::string&)>& isCustom, const SmLimits* sm,
                              const std::string& smError, std::size_t* omitted);

} // namespace kwb
