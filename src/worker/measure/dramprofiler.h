#pragma once
// HBM (DRAM) bytes that a piece of GPU work moves, counted by the GPU's own counters through
// CUPTI's range profiler (dram__bytes_read.sum, dram__bytes_write.sum). No torch: the caller
// passes the work as functions (the evaluator's `traffic` stage, docs/protocol.md §evaluate).

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kwb {

/// The metrics counted, in this order.
inline constexpr const char* kDramReadMetric = "dram__bytes_read.sum";
inline constexpr const char* kDramWriteMetric = "dram__bytes_write.sum";

struct DramTraffic
{
    bool profiled = false;
    std::string reason;    ///< why not, where !profiled ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: …")
    double readBytes = 0;  ///< the work's range: every byte read from HBM
    double writeBytes = 0; ///< the work's range and the drain's: every byte the work wrote back to HBM
    int passes = 0;        ///< replay passes the metrics needed (the work ran this many times)
};

/// Each function returns false with a message in *err where it failed.
using GpuStep = std::function<bool(std::string* err)>;

/// Counts HBM traffic of `work` on the calling thread's current CUDA context (device `ordinal`).
/// Per replay pass: `prepare` (not counted: fresh inputs, a cold L2), then `work` in one profiler
/// range, then `drain` in a second range. `drain` must evict the L2 without writing (reading a
/// buffer larger than the L2): lines the work left dirty in the L2 reach HBM only then, so the
/// drain's writes are the work's, its reads its own. Each step synchronises the device before it
/// returns. A failure of the profiler (no permission for the GPU's counters, an unsupported chip,
/// another profiling session) or of a step is `profiled: false` with the reason; nothing throws.
DramTraffic measureDramTraffic(int ordinal, const GpuStep& prepare, const GpuStep& work, const GpuStep& drain);

/// HBM bytes of each kernel launch of `work`, in launch order (CUPTI's auto ranges: one range per
/// kernel, named by its index; the caller knows which kernel each index is).
struct LaunchTraffic
{
    double readBytes = 0;
    double writeBytes = 0; ///< written back to HBM while this kernel ran
};
struct PerLaunchTraffic
{
    bool profiled = false;
    std::string reason;
    std::vector<LaunchTraffic> launches;
    int passes = 0;
    /// "user": each pass is `prepare` then the whole `work` (the kernels share the L2 as in a
    /// real call, only the first starts cold); "kernel": CUPTI replayed each kernel itself, where
    /// this driver refuses auto ranges under user replay.
    std::string replay;
};

/// Per pass: `prepare` (not counted), then `work` with every kernel it launches in a range of its
/// own. No drain: what the last kernels leave dirty in the L2 reaches HBM after the last range,
/// so the caller sets it against measureDramTraffic's total. At most `maxLaunches` ranges; a
/// `work` that launches more is `profiled: false`.
PerLaunchTraffic measureDramTrafficPerLaunch(int ordinal, const GpuStep& prepare, const GpuStep& work,
                                             size_t maxLaunches);

} // namespace kwb
