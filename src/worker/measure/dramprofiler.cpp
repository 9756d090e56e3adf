#include "worker/measure/dramprofiler.h"

#include "worker/device/cudadriver.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace kwb {
namespace {

std::string resultText(CUptiResult r)
{
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        return "CUptiResult " + std::to_string(static_cast<int>(r));
    return s;
}

/// "cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES …", with the fix where the
/// cause is the driver's restriction of the counters to administrators.
std::string callFailed(const char* call, CUptiResult r)
{
    std::string text = std::string(call) + ": " + resultText(r);
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        text += " (the driver lets only administrators read the GPU's counters: run as root, or load the "
                "nvidia module with NVreg_RestrictProfilingToAdminUsers=0)";
    return text;
}

#define KWB_CUPTI(call, params)                                                                                        \
    do {                                                                                                               \
        const CUptiResult r_ = call(&params);                                                                          \
        if (r_ != CUPTI_SUCCESS) {                                                                                     \
            out.reason = callFailed(#call, r_);                                                                        \
            return out;                                                                                                \
        }                                                                                                              \
    } while (0)

/// User ranges of one pass: the work, then the drain.
constexpr const char* kWorkRange = "work";
constexpr const char* kDrainRange = "drain";

/// A CUPTI parameter struct: zeroed, with its size set (CUPTI's versioning of the layout).
template <class Params>
Params params(size_t structSize)
{
    Params p{};
    p.structSize = structSize;
    return p;
}

const char* const kMetrics[] = {kDramReadMetric, kDramWriteMetric};
constexpr size_t kMetricCount = sizeof(kMetrics) / sizeof(kMetrics[0]);

struct RangeCount
{
    std::string name;
    double read = 0, write = 0;
};

/// What one profiling session counted, range by range in the counter data's order.
struct RangeCounts
{
    std::string reason; ///< why not, where empty ranges
    std::vector<RangeCount> ranges;
    int passes = 0;
    bool ok = false;
};

/// The profiler's side of one pass, between its start and stop: the work in its ranges.
using PassBody = std::function<bool(CUpti_RangeProfiler_Object*, std::string* err)>;

/// One range profiler session on the current context: DRAM bytes read and written per range of
/// `mode`, replayed by `replay` (user replay: `prepare` then `body` once per pass, until CUPTI has
/// every pass). Everything it enabled is disabled again on every way out.
RangeCounts countRanges(int ordinal, CUpti_ProfilerRange mode, CUpti_ProfilerReplayMode replay, size_t maxRanges,
                        const GpuStep& prepare, const PassBody& body)
{
    RangeCounts out;
    std::string whyNot;
    const CudaDriver* driver = CudaDriver::get(&whyNot);
    if (!driver) {
        out.reason = whyNot;
        return out;
    }
    CUcontext ctx = nullptr;
    if (driver->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
        out.reason = "no current CUDA context";
        return out;
    }

    // Once per process; a second initialisation is harmless (CUPTI counts them).
    auto init = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    KWB_CUPTI(cuptiProfilerInitialize, init);

    auto chip = params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    chip.deviceIndex = static_cast<size_t>(ordinal);
    KWB_CUPTI(cuptiDeviceGetChipName, chip);

    auto avail =
        params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    avail.ctx = ctx;
    KWB_CUPTI(cuptiProfilerGetCounterAvailability, avail);
    std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability.data();
    KWB_CUPTI(cuptiProfilerGetCounterAvailability, avail);

    // The host side: metric names to a configuration image, and counter values to numbers.
    auto host = params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip.pChipName;
    host.pCounterAvailabilityImage = availability.data();
    KWB_CUPTI(cuptiProfilerHostInitialize, host);
    struct HostGuard
    {
        CUpti_Profiler_Host_Object* object;
        ~HostGuard()
        {
            auto p =
                params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
            p.pHostObject = object;
            cuptiProfilerHostDeinitialize(&p);
        }
    } hostGuard{host.pHostObject};

    const char** metrics = const_cast<const char**>(kMetrics);
    auto add =
        params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host.pHostObject;
    add.ppMetricNames = metrics;
    add.numMetrics = kMetricCount;
    KWB_CUPTI(cuptiProfilerHostConfigAddMetrics, add);
    auto configSize = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    configSize.pHostObject = host.pHostObject;
    KWB_CUPTI(cuptiProfilerHostGetConfigImageSize, configSize);
    std::vector<uint8_t> config(configSize.configImageSize);
    auto configImage =
        params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    configImage.pHostObject = host.pHostObject;
    configImage.configImageSize = config.size();
    configImage.pConfigImage = config.data();
    KWB_CUPTI(cuptiProfilerHostGetConfigImage, configImage);

    // The target side: the context's range profiler, its counter data image, its configuration.
    auto enable = params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    enable.ctx = ctx;
    KWB_CUPTI(cuptiRangeProfilerEnable, enable);
    CUpti_RangeProfiler_Object* profiler = enable.pRangeProfilerObject;
    struct ProfilerGuard
    {
        CUpti_RangeProfiler_Object* object;
        ~ProfilerGuard()
        {
            auto p = params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
            p.pRangeProfilerObject = object;
            cuptiRangeProfilerDisable(&p);
        }
    } profilerGuard{profiler};

    auto dataSize = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    dataSize.pRangeProfilerObject = profiler;
    dataSize.pMetricNames = metrics;
    dataSize.numMetrics = kMetricCount;
    dataSize.maxNumOfRanges = maxRanges;
    dataSize.maxNumRangeTreeNodes = maxRanges;
    KWB_CUPTI(cuptiRangeProfilerGetCounterDataSize, dataSize);
    std::vector<uint8_t> counterData(dataSize.counterDataSize);
    auto dataInit = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    dataInit.pRangeProfilerObject = profiler;
    dataInit.counterDataSize = counterData.size();
    dataInit.pCounterData = counterData.data();
    KWB_CUPTI(cuptiRangeProfilerCounterDataImageInitialize, dataInit);

    auto set = params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    set.pRangeProfilerObject = profiler;
    set.configSize = config.size();
    set.pConfig = config.data();
    set.counterDataImageSize = counterData.size();
    set.pCounterDataImage = counterData.data();
    set.range = mode;
    set.replayMode = replay;
    set.maxRangesPerPass = maxRanges;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    // User ranges are counted at their one nesting level; auto ranges at 0, as CUPTI's own
    // auto-range samples set it.
    set.targetNestingLevel = mode == CUPTI_UserRange ? 1 : 0;
    KWB_CUPTI(cuptiRangeProfilerSetConfig, set);

    // A pass count no metric set of two counters needs: a profiler that never says "done" stops here.
    constexpr int kMaxPasses = 16;
    bool allSubmitted = false;
    while (!allSubmitted) {
        if (out.passes >= kMaxPasses) {
            out.reason = "the profiler wanted more than " + std::to_string(kMaxPasses) + " passes";
            return out;
        }
        std::string err;
        if (!prepare(&err)) {
            out.reason = "preparing pass " + std::to_string(out.passes + 1) + ": " + err;
            return out;
        }
        auto start = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
        start.pRangeProfilerObject = profiler;
        KWB_CUPTI(cuptiRangeProfilerStart, start);
        const bool ok = body(profiler, &err);
        auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
        stop.pRangeProfilerObject = profiler;
        if (!ok) {
            cuptiRangeProfilerStop(&stop);
            out.reason = err;
            return out;
        }
        KWB_CUPTI(cuptiRangeProfilerStop, stop);
        allSubmitted = stop.isAllPassSubmitted != 0;
        ++out.passes;
    }

    auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = profiler;
    KWB_CUPTI(cuptiRangeProfilerDecodeData, decode);
    if (decode.numOfRangeDropped > 0) {
        out.reason = std::to_string(decode.numOfRangeDropped) + " profiler ranges were dropped (at most " +
                     std::to_string(maxRanges) + " fit)";
        return out;
    }
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = counterData.data();
    info.counterDataImageSize = counterData.size();
    KWB_CUPTI(cuptiRangeProfilerGetCounterDataInfo, info);
    for (size_t i = 0; i < info.numTotalRanges; ++i) {
        auto range = params<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
        range.pCounterDataImage = counterData.data();
        range.counterDataImageSize = counterData.size();
        range.rangeIndex = i;
        range.rangeDelimiter = "/";
        KWB_CUPTI(cuptiRangeProfilerCounterDataGetRangeInfo, range);
        double values[kMetricCount] = {};
        auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
        eval.pHostObject = host.pHostObject;
        eval.pCounterDataImage = counterData.data();
        eval.counterDataImageSize = counterData.size();
        eval.rangeIndex = i;
        eval.ppMetricNames = metrics;
        eval.numMetrics = kMetricCount;
        eval.pMetricValues = values;
        KWB_CUPTI(cuptiProfilerHostEvaluateToGpuValues, eval);
        RangeCount c{range.rangeName ? range.rangeName : "", values[0], values[1]};
        if (!std::isfinite(c.read) || !std::isfinite(c.write) || c.read < 0 || c.write < 0) {
            out.reason = "range " + c.name + " has no finite byte counts";
            return out;
        }
        out.ranges.push_back(std::move(c));
    }
    out.ok = true;
    return out;
}

/// One user range around a step: false with the step's or the profiler's failure in *err.
bool inRange(CUpti_RangeProfiler_Object* profiler, const char* name, const GpuStep& step, std::string* err)
{
    auto push = params<CUpti_RangeProfiler_PushRange_Params>(CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
    push.pRangeProfilerObject = profiler;
    push.pRangeName = name;
    if (const CUptiResult r = cuptiRangeProfilerPushRange(&push); r != CUPTI_SUCCESS) {
        *err = callFailed("cuptiRangeProfilerPushRange", r);
        return false;
    }
    std::string stepErr;
    const bool ok = step(&stepErr);
    auto pop = params<CUpti_RangeProfiler_PopRange_Params>(CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
    pop.pRangeProfilerObject = profiler;
    if (const CUptiResult r = cuptiRangeProfilerPopRange(&pop); r != CUPTI_SUCCESS) {
        *err = callFailed("cuptiRangeProfilerPopRange", r);
        return false;
    }
    if (!ok)
        *err = std::string("the ") + name + " failed under the profiler: " + stepErr;
    return ok;
}

} // namespace

DramTraffic measureDramTraffic(int ordinal, const GpuStep& prepare, const GpuStep& work, const GpuStep& drain)
{
    DramTraffic out;
    // User ranges, replayed by us: a range spans all the work's kernels and the write-backs
    // between them, which per-kernel ranges would miss.
    const RangeCounts counted =
        countRanges(ordinal, CUPTI_UserRange, CUPTI_UserReplay, 2, prepare,
                    [&](CUpti_RangeProfiler_Object* profiler, std::string* err) {
                        return inRange(profiler, kWorkRange, work, err) && inRange(profiler, kDrainRange, drain, err);
                    });
    out.passes = counted.passes;
    if (!counted.ok) {
        out.reason = counted.reason;
        return out;
    }
    bool sawWork = false, sawDrain = false;
    for (const RangeCount& c : counted.ranges) {
        if (c.name == kWorkRange) {
            sawWork = true;
            out.readBytes = c.read;
            out.writeBytes += c.write;
        } else if (c.name == kDrainRange) {
            sawDrain = true;
            out.writeBytes += c.write; // the drain's reads are its own buffer's
        }
    }
    if (!sawWork || !sawDrain) {
        out.reason = "the profiler returned " + std::to_string(counted.ranges.size()) +
                     " ranges without the work's and the drain's";
        out.readBytes = out.writeBytes = 0;
        return out;
    }
    out.profiled = true;
    return out;
}

PerLaunchTraffic measureDramTrafficPerLaunch(int ordinal, const GpuStep& prepare, const GpuStep& work,
                                             size_t maxLaunches)
{
    PerLaunchTraffic out;
    const PassBody body = [&work](CUpti_RangeProfiler_Object*, std::string* err) {
        std::string stepErr;
        if (work(&stepErr))
            return true;
        *err = "the work failed under the profiler: " + stepErr;
        return false;
    };
    // Auto ranges under user replay keep the L2 as a real call leaves it between its kernels;
    // where the driver takes auto ranges only with its own kernel replay, that is the fallback
    // (each kernel then replayed alone, the L2 as CUPTI leaves it), and said.
    RangeCounts counted = countRanges(ordinal, CUPTI_AutoRange, CUPTI_UserReplay, maxLaunches, prepare, body);
    out.replay = "user";
    if (!counted.ok && counted.passes == 0 && counted.reason.rfind("cuptiRangeProfilerSetConfig", 0) == 0) {
        const std::string userReplayRefused = counted.reason;
        counted = countRanges(ordinal, CUPTI_AutoRange, CUPTI_KernelReplay, maxLaunches, prepare, body);
        out.replay = "kernel";
        if (!counted.ok)
            counted.reason += " (under user replay: " + userReplayRefused + ")";
    }
    out.passes = counted.passes;
    if (!counted.ok) {
        out.reason = counted.reason;
        return out;
    }
    // The counter data holds auto ranges in launch order, named by their index ("0", "1", …, as
    // CUPTI's samples print them): a numeric name elsewhere than its place is refused.
    for (size_t i = 0; i < counted.ranges.size(); ++i) {
        const std::string& name = counted.ranges[i].name;
        size_t index = 0;
        const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
        if (ec == std::errc() && end == name.data() + name.size() && index != i) {
            out.reason = "auto range " + std::to_string(i) + " is named \"" + name + "\": not in launch order";
            return out;
        }
        out.launches.push_back(LaunchTraffic{counted.ranges[i].read, counted.ranges[i].write});
    }
    out.profiled = true;
    return out;
}

} // namespace kwb
