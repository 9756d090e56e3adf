#pragma once
// Kernel timings from CUPTI activity records (CONCURRENT_KERNEL), each mapped to the operation
// that launched it through external correlation ids.

#include <cstdint>
#include <string>
#include <vector>

namespace kwb {

struct KernelRecord
{
    std::string name; // demangled
    uint64_t startNs = 0, endNs = 0;
    uint32_t correlationId = 0;
    uint64_t externalId = 0; // the innermost pushExternalId at launch time; 0 if none
    uint32_t streamId = 0;   // CUPTI's id of the stream it ran on
    uint32_t gridX = 0, gridY = 0, gridZ = 0, blockX = 0, blockY = 0, blockZ = 0;
    // The launch's resources as the driver ran it (kernellaunches.h).
    uint32_t registersPerThread = 0;
    uint32_t staticSharedBytes = 0, dynamicSharedBytes = 0;
    uint32_t localBytesPerThread = 0;
    uint32_t sharedCarveoutBytes = 0; // the SM's shared memory as configured for it (0: not reported)
};

// CUPTI's activity callbacks are per process, so one tracer runs at a time; start() on a second
// one fails. Synchronize the device before stop() or take(), or kernels still running are lost.
class KernelTracer
{
public:
    KernelTracer() = default;
    ~KernelTracer(); // stops if running
    KernelTracer(const KernelTracer&) = delete;
    KernelTracer& operator=(const KernelTracer&) = delete;

    // Enables kernel, external-correlation and (because CUPTI emits correlation records only next
    // to API records) driver and runtime API activity. False with a reason: no GPU, CUPTI error,
    // another tracer running.
    bool start(std::string* err);
    void stop(); // disables tracing and flushes what was recorded
    bool running() const { return m_running; }

    // Kernels recorded so far (flushing first when still running), in completion order;
    // the tracer's store is emptied.
    std::vector<KernelRecord> take();

    // Records dropped by CUPTI for lack of buffer space since start().
    uint64_t droppedRecords() const;

    // Brackets the launches of one operation: kernels launched in between carry `id`.
    // False when CUPTI refuses (e.g. no GPU) or, for pop, when nothing was pushed.
    static bool pushExternalId(uint64_t id);
    static bool popExternalId();

private:
    bool m_running = false;
};

// Detaches CUPTI from the process (cuptiFinalize); false while a tracer runs or where CUPTI
// refuses. A worker's tracing ends with it: CUPTI left attached after a trace made every later
// launch dearer (measured on the H200 in one worker, timing before and after a trace: L3/7's
// reference 3.25 -> 3.37 ms, up to 3.81 ms, its speed-up 0.973x of the untraced one, L3/9_b's
// 1.133x; detached, 0.9995x and 0.985x; bench/results/2026-12-01-cupti-state-h200.md). After it
// the activity API attaches again on the next start(), but CUPTI's range profiler does not
// (cuptiProfilerInitialize: CUPTI_ERROR_NOT_INITIALIZED), hence cuptiWasDetached().
bool detachCupti();
bool cuptiWasDetached();

// "void foo<float>(float*, int)" from "_Z3fooIfEvPfi"; the name itself when it is not mangled.
std::string demangleKernelName(const char* name);

} // namespace kwb
