#include "worker/measure/cuptitracer.h"

#include "worker/device/cudadriver.h"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace kwb {
namespace {

// CUPTI writes the newest record layout its version knows; use the struct of the same header.
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
using KernelActivity = CUpti_ActivityKernel10;
#else
using KernelActivity = CUpti_ActivityKernel9;
#endif

constexpr size_t kBufferBytes = 8u << 20;
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_DRIVER,
                                         CUPTI_ACTIVITY_KIND_RUNTIME};

struct State
{
    std::mutex mutex;
    std::vector<KernelRecord> kernels;
    std::unordered_map<uint32_t, uint64_t> externalIds; // correlationId -> externalId
    uint64_t dropped = 0;
    bool callbacksRegistered = false;
    bool detached = false; // detachCupti() succeeded once in this process
    const KernelTracer* owner = nullptr;
};

State& state()
{
    static State* s = new State; // never destroyed: CUPTI may call back during exit
    return *s;
}

std::string cuptiError(CUptiResult r)
{
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        return "CUptiResult " + std::to_string(static_cast<int>(r));
    return s;
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxNumRecords)
{
    // CUPTI needs 8-byte alignment
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *maxNumRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext ctx, uint32_t streamId, uint8_t* buffer, size_t /*size*/, size_t validSize)
{
    State& s = state();
    std::vector<KernelRecord> kernels;
    std::vector<std::pair<uint32_t, uint64_t>> external;
    CUpti_Activity* record = nullptr;
    while (validSize > 0 && cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const auto* k = reinterpret_cast<const KernelActivity*>(record);
            KernelRecord r;
            r.name = demangleKernelName(k->name);
            r.startNs = k->start;
            r.endNs = k->end;
            r.correlationId = k->correlationId;
            r.streamId = k->streamId;
            r.gridX = static_cast<uint32_t>(k->gridX);
            r.gridY = static_cast<uint32_t>(k->gridY);
            r.gridZ = static_cast<uint32_t>(k->gridZ);
            r.blockX = static_cast<uint32_t>(k->blockX);
            r.blockY = static_cast<uint32_t>(k->blockY);
            r.blockZ = static_cast<uint32_t>(k->blockZ);
            r.registersPerThread = k->registersPerThread;
            r.staticSharedBytes = static_cast<uint32_t>(std::max(k->staticSharedMemory, 0));
            r.dynamicSharedBytes = static_cast<uint32_t>(std::max(k->dynamicSharedMemory, 0));
            r.localBytesPerThread = k->localMemoryPerThread;
            r.sharedCarveoutBytes = k->sharedMemoryExecuted;
            kernels.push_back(std::move(r));
        } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
            if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
                external.emplace_back(e->correlationId, e->externalId);
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, streamId, &dropped) != CUPTI_SUCCESS)
        dropped = 0;
    std::free(buffer);

    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto& k : kernels)
        s.kernels.push_back(std::move(k));
    for (auto& e : external)
        s.externalIds[e.first] = e.second;
    s.dropped += dropped;
}

void disableAll()
{
    for (CUpti_ActivityKind k : kKinds)
        cuptiActivityDisable(k);
}

} // namespace

std::string demangleKernelName(const char* name)
{
    if (!name)
        return "?";
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status != 0 || !d) {
        std::free(d);
        return name;
    }
    std::string out(d);
    std::free(d);
    return out;
}

KernelTracer::~KernelTracer()
{
    if (m_running)
        stop();
}

bool KernelTracer::start(std::string* err)
{
    auto fail = [&](const std::string& m) {
        if (err)
            *err = m;
        return false;
    };
    if (m_running)
        return true;
    std::string why;
    if (!CudaDriver::get(&why))
        return fail("CUPTI kernel tracing needs an NVIDIA GPU: " + why);
    State& s = state();
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.owner)
            return fail("another KernelTracer is running (CUPTI traces once per process)");
        s.owner = this;
        s.kernels.clear();
        s.externalIds.clear();
        s.dropped = 0;
    }
    auto release = [&]() {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.owner = nullptr;
    };
    if (!s.callbacksRegistered) {
        CUptiResult r = cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
        if (r != CUPTI_SUCCESS) {
            release();
            return fail("cuptiActivityRegisterCallbacks: " + cuptiError(r));
        }
        s.callbacksRegistered = true;
    }
    for (CUpti_ActivityKind k : kKinds) {
        CUptiResult r = cuptiActivityEnable(k);
        if (r != CUPTI_SUCCESS) {
            disableAll();
            release();
            return fail("cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) + "): " + cuptiError(r));
        }
    }
    m_running = true;
    return true;
}

void KernelTracer::stop()
{
    if (!m_running)
        return;
    // Flush before and after disabling: records of work finished before stop() are all delivered.
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    disableAll();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    m_running = false;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.owner == this)
        s.owner = nullptr;
}

bool detachCupti()
{
    State& s = state();
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.owner)
            return false; // a tracer is running
    }
    // No tracer runs, so every record was flushed (stop()); the caller synchronised the device:
    // what the CUPTI documentation asks before cuptiFinalize outside a callback. Unlocked: a
    // buffer CUPTI still hands back on the way (bufferCompleted) takes the same mutex.
    if (cuptiFinalize() != CUPTI_SUCCESS)
        return false;
    std::lock_guard<std::mutex> lock(s.mutex);
    s.callbacksRegistered = false; // the next start() attaches afresh
    s.detached = true;
    return true;
}

bool cuptiWasDetached()
{
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.detached;
}

std::vector<KernelRecord> KernelTracer::take()
{
    if (m_running)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    std::vector<KernelRecord> out;
    out.swap(s.kernels);
    for (KernelRecord& k : out) {
        auto it = s.externalIds.find(k.correlationId);
        if (it != s.externalIds.end())
            k.externalId = it->second;
    }
    // a correlation record can arrive in an earlier buffer than its kernel: keep the map while running
    if (!m_running)
        s.externalIds.clear();
    return out;
}

uint64_t KernelTracer::droppedRecords() const
{
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.dropped;
}

bool KernelTracer::pushExternalId(uint64_t id)
{
    if (!CudaDriver::get())
        return false;
    return cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id) == CUPTI_SUCCESS;
}

bool KernelTracer::popExternalId()
{
    if (!CudaDriver::get())
        return false;
    uint64_t last = 0;
    return cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) == CUPTI_SUCCESS;
}

} // namespace kwb
