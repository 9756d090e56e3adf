#include "worker/measure/dramprofiler.h"

#include "worker/device/cudadriver.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

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

/// Ranges of one pass: the work, then the drain.
constexpr size_t kRanges = 2;
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

} // namespace

DramTraffic measureDramTraffic(int ordinal, const GpuStep& prepare, const GpuStep& work, const GpuStep& drain)
{
    DramTraffic out;
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

    const char* metrics[] = {kDramReadMetric, kDramWriteMetric};
    constexpr size_t kMetrics = sizeof(metrics) / sizeof(metrics[0]);
    auto add =
        params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host.pHostObject;
    add.ppMetricNames = metrics;
    add.numMetrics = kMetrics;
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
    dataSize.numMetrics = kMetrics;
    dataSize.maxNumOfRanges = kRanges;
    dataSize.maxNumRangeTreeNodes = kRanges;
    KWB_CUPTI(cuptiRangeProfilerGetCounterDataSize, dataSize);
    std::vector<uint8_t> counterData(dataSize.counterDataSize);
    auto dataInit = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    dataInit.pRangeProfilerObject = profiler;
    dataInit.counterDataSize = counterData.size();
    dataInit.pCounterData = counterData.data();
    KWB_CUPTI(cuptiRangeProfilerCounterDataImageInitialize, dataInit);

    // User ranges, replayed by us: a range spans all the work's kernels and the write-backs
    // between them, which per-kernel ranges would miss.
    auto set = params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    set.pRangeProfilerObject = profiler;
    set.configSize = config.size();
    set.pConfig = config.data();
    set.counterDataImageSize = counterData.size();
    set.pCounterDataImage = counterData.data();
    set.range = CUPTI_UserRange;
    set.replayMode = CUPTI_UserReplay;
    set.maxRangesPerPass = kRanges;
    set.numNestingLevels = 1;
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
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
        for (const auto& [name, step] :
             {std::pair<const char*, const GpuStep*>{kWorkRange, &work}, {kDrainRange, &drain}}) {
            auto push = params<CUpti_RangeProfiler_PushRange_Params>(CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
            push.pRangeProfilerObject = profiler;
            push.pRangeName = name;
            KWB_CUPTI(cuptiRangeProfilerPushRange, push);
            const bool ok = (*step)(&err);
            auto pop = params<CUpti_RangeProfiler_PopRange_Params>(CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
            pop.pRangeProfilerObject = profiler;
            KWB_CUPTI(cuptiRangeProfilerPopRange, pop);
            if (!ok) {
                auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
                stop.pRangeProfilerObject = profiler;
                cuptiRangeProfilerStop(&stop);
                out.reason = std::string("the ") + name + " failed under the profiler: " + err;
                return out;
            }
        }
        auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
        stop.pRangeProfilerObject = profiler;
        KWB_CUPTI(cuptiRangeProfilerStop, stop);
        allSubmitted = stop.isAllPassSubmitted != 0;
        ++out.passes;
    }

    auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = profiler;
    KWB_CUPTI(cuptiRangeProfilerDecodeData, decode);
    if (decode.numOfRangeDropped > 0) {
        out.reason = std::to_string(decode.numOfRangeDropped) + " profiler ranges were dropped";
        return out;
    }
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = counterData.data();
    info.counterDataImageSize = counterData.size();
    KWB_CUPTI(cuptiRangeProfilerGetCounterDataInfo, info);
    bool sawWork = false, sawDrain = false;
    for (size_t i = 0; i < info.numTotalRanges; ++i) {
        auto range = params<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
        range.pCounterDataImage = counterData.data();
        range.counterDataImageSize = counterData.size();
        range.rangeIndex = i;
        range.rangeDelimiter = "/";
        KWB_CUPTI(cuptiRangeProfilerCounterDataGetRangeInfo, range);
        const std::string name = range.rangeName ? range.rangeName : "";
        double values[kMetrics] = {};
        auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
        eval.pHostObject = host.pHostObject;
        eval.pCounterDataImage = counterData.data();
        eval.counterDataImageSize = counterData.size();
        eval.rangeIndex = i;
        eval.ppMetricNames = metrics;
        eval.numMetrics = kMetrics;
        eval.pMetricValues = values;
        KWB_CUPTI(cuptiProfilerHostEvaluateToGpuValues, eval);
        if (!std::isfinite(values[0]) || !std::isfinite(values[1]) || values[0] < 0 || values[1] < 0) {
            out.reason = "range " + name + " has no finite byte counts";
            return out;
        }
        if (name == kWorkRange) {
            sawWork = true;
            out.readBytes = values[0];
            out.writeBytes += values[1];
        } else if (name == kDrainRange) {
            sawDrain = true;
            out.writeBytes += values[1]; // the drain's reads are its own buffer's
        }
    }
    if (!sawWork || !sawDrain) {
        out.reason = "the profiler returned " + std::to_string(info.numTotalRanges) +
                     " ranges without the work's and the drain's";
        out.readBytes = out.writeBytes = 0;
        return out;
    }
    out.profiled = true;
    return out;
}

} // namespace kwb
