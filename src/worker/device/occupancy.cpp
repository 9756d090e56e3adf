#include "worker/device/occupancy.h"

#include "core/protocol/protocolnames.h"

#include <cuda_occupancy.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>

namespace kwb {

namespace L = ProtocolNames::KernelLaunch;

std::optional<SmLimits> smLimits(int ordinal, std::string* why)
{
    static std::mutex mutex;
    static std::map<int, SmLimits> known;
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(ordinal); it != known.end())
        return it->second;
    cudaDeviceProp p{};
    if (const cudaError_t e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) {
        cudaGetLastError();
        if (why)
            *why = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e);
        return std::nullopt;
    }
    SmLimits sm;
    sm.ccMajor = p.major;
    sm.ccMinor = p.minor;
    sm.maxThreadsPerBlock = p.maxThreadsPerBlock;
    sm.maxThreadsPerSm = p.maxThreadsPerMultiProcessor;
    sm.regsPerBlock = p.regsPerBlock;
    sm.regsPerSm = p.regsPerMultiprocessor;
    sm.warpSize = p.warpSize;
    sm.sharedPerBlock = p.sharedMemPerBlock;
    sm.sharedPerSm = p.sharedMemPerMultiprocessor;
    sm.sharedPerBlockOptin = p.sharedMemPerBlockOptin;
    sm.reservedSharedPerBlock = p.reservedSharedMemPerBlock;
    known[ordinal] = sm;
    return sm;
}

Occupancy theoreticalOccupancy(const SmLimits& sm, const LaunchShape& launch)
{
    Occupancy out;
    if (sm.warpSize <= 0 || sm.maxThreadsPerSm <= 0) {
        out.error = "the device's limits are unknown";
        return out;
    }
    out.maxWarpsPerSm = sm.maxThreadsPerSm / sm.warpSize;
    cudaOccDeviceProp prop;
    prop.computeMajor = sm.ccMajor;
    prop.computeMinor = sm.ccMinor;
    prop.maxThreadsPerBlock = sm.maxThreadsPerBlock;
    prop.maxThreadsPerMultiprocessor = sm.maxThreadsPerSm;
    prop.regsPerBlock = sm.regsPerBlock;
    prop.regsPerMultiprocessor = sm.regsPerSm;
    prop.warpSize = sm.warpSize;
    prop.sharedMemPerBlock = sm.sharedPerBlock;
    prop.sharedMemPerMultiprocessor = sm.sharedPerSm;
    prop.sharedMemPerBlockOptin = sm.sharedPerBlockOptin;
    prop.reservedSharedMemPerBlock = sm.reservedSharedPerBlock;
    prop.numSms = 1; // per SM: the count does not enter
    // The launch ran, so its kernel could take the block and the dynamic shared memory it asked
    // for: a launch above 48 KiB had opted in (cudaFuncAttributeMaxDynamicSharedMemorySize).
    cudaOccFuncAttributes attr;
    attr.maxThreadsPerBlock = sm.maxThreadsPerBlock;
    attr.numRegs = launch.registersPerThread;
    attr.sharedSizeBytes = launch.staticSharedBytes;
    attr.partitionedGCConfig = PARTITIONED_GC_OFF;
    attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    attr.maxDynamicSharedSizeBytes = launch.dynamicSharedBytes;
    attr.numBlockBarriers = 1; // what the runtime assumes for every kernel (cudaFuncAttributes' conversion)
    const cudaOccDeviceState state;
    cudaOccResult r{};
    const cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, launch.threadsPerBlock,
                                                                   launch.dynamicSharedBytes);
    if (e != CUDA_OCC_SUCCESS) {
        out.error = e == CUDA_OCC_ERROR_UNKNOWN_DEVICE
                        ? "the calculator does not know sm_" + std::to_string(sm.ccMajor) + std::to_string(sm.ccMinor)
                        : "the launch does not fit the device's limits";
        return out;
    }
    if (r.activeBlocksPerMultiprocessor <= 0) {
        // A launch that ran held at least one block: its numbers or the device's limits are off.
        out.error = "not one block fits an SM by these limits (registers allow " + std::to_string(r.blockLimitRegs) +
                    ", shared memory " + std::to_string(r.blockLimitSharedMem) + ", warps " +
                    std::to_string(r.blockLimitWarps) + ")";
        return out;
    }
    const int warpsPerBlock = (launch.threadsPerBlock + sm.warpSize - 1) / sm.warpSize;
    out.activeBlocksPerSm = r.activeBlocksPerMultiprocessor;
    out.activeWarpsPerSm = r.activeBlocksPerMultiprocessor * warpsPerBlock;
    out.blocksByRegisters = r.blockLimitRegs;
    out.blocksBySharedMemory = r.blockLimitSharedMem;
    out.blocksByWarps = r.blockLimitWarps;
    out.blocksBySmLimit = r.blockLimitBlocks;
    // Most binding first: what a kernel author can change (registers, shared memory) before
    // what follows from the block size.
    const std::pair<unsigned, const char*> factors[] = {{OCC_LIMIT_REGISTERS, L::kByRegisters},
                                                        {OCC_LIMIT_SHARED_MEMORY, L::kBySharedMemory},
                                                        {OCC_LIMIT_WARPS, L::kByWarps},
                                                        {OCC_LIMIT_BLOCKS, L::kByBlocks},
                                                        {OCC_LIMIT_BARRIERS, L::kByBarriers}};
    for (const auto& [bit, name] : factors)
        if (r.limitingFactors & bit)
            out.limitedBy.emplace_back(name);
    return out;
}

nlohmann::json occupancyJson(const Occupancy& o)
{
    if (!o.ok())
        return {{ProtocolNames::Key::kError, o.error}};
    return {{L::kActiveBlocksPerSm, o.activeBlocksPerSm},
            {L::kActiveWarpsPerSm, o.activeWarpsPerSm},
            {L::kMaxWarpsPerSm, o.maxWarpsPerSm},
            {L::kFraction, o.fraction()},
            {L::kLimitedBy, o.limitedBy},
            {L::kBlocksBy,
             {{L::kByRegisters, o.blocksByRegisters},
              {L::kBySharedMemory, o.blocksBySharedMemory},
              {L::kByWarps, o.blocksByWarps},
              {L::kByBlocks, o.blocksBySmLimit}}}};
}

} // namespace kwb
