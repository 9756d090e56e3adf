#pragma once
// Theoretical occupancy of one launch: how many of its blocks an SM can hold at once, and what
// stops it holding more (registers, shared memory, warps, blocks per SM, barriers). Computed by
// the CUDA toolkit's own occupancy calculator (cuda_occupancy.h, the one behind
// cudaOccupancyMaxActiveBlocksPerMultiprocessor and Nsight Compute's "theoretical occupancy"),
// from the SM's limits and the launch as CUPTI recorded it, so any kernel that ran can be
// judged, cuDNN's and cuBLAS's as well as the candidate's (the runtime's API needs a function
// handle, which a library's kernels do not give). No GPU needed: the limits are plain numbers.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kwb {

/// What an SM of one device can hold (cudaDeviceProp's fields of the same meaning).
struct SmLimits
{
    int ccMajor = 0, ccMinor = 0;
    int maxThreadsPerBlock = 0;
    int maxThreadsPerSm = 0;
    int regsPerBlock = 0;
    int regsPerSm = 0;
    int warpSize = 32;
    std::size_t sharedPerBlock = 0;         ///< without opting in (48 KiB)
    std::size_t sharedPerSm = 0;            ///< the largest carveout
    std::size_t sharedPerBlockOptin = 0;    ///< with cudaFuncAttributeMaxDynamicSharedMemorySize
    std::size_t reservedSharedPerBlock = 0; ///< the driver's own share of each block (1 KiB on sm_80+)
};

/// Device `ordinal`'s limits (cached: they do not change while the process lives); nullopt with
/// *why where the runtime cannot tell.
std::optional<SmLimits> smLimits(int ordinal, std::string* why);

/// One launch, as run.
struct LaunchShape
{
    int threadsPerBlock = 0;
    int registersPerThread = 0;
    std::size_t staticSharedBytes = 0;
    std::size_t dynamicSharedBytes = 0;
};

struct Occupancy
{
    std::string error; ///< why it could not be computed; empty when it was
    int activeBlocksPerSm = 0;
    int activeWarpsPerSm = 0;
    int maxWarpsPerSm = 0;
    /// What holds the SM at activeBlocksPerSm, most binding first: "registers", "shared_memory",
    /// "warps", "blocks", "barriers" (several where they bind alike).
    std::vector<std::string> limitedBy;
    /// Blocks per SM each resource alone would allow.
    int blocksByRegisters = 0, blocksBySharedMemory = 0, blocksByWarps = 0, blocksBySmLimit = 0;

    bool ok() const { return error.empty(); }
    /// Active warps over the SM's maximum, 0..1.
    double fraction() const { return maxWarpsPerSm > 0 ? double(activeWarpsPerSm) / maxWarpsPerSm : 0.0; }
};

Occupancy theoreticalOccupancy(const SmLimits& sm, const LaunchShape& launch);

/// The protocol's `occupancy` object (docs/protocol.md §evaluate, "launches"):
/// {"active_blocks_per_sm", "active_warps_per_sm", "max_warps_per_sm", "fraction", "limited_by",
/// "blocks_by": {"registers", "shared_memory", "warps", "blocks"}}, or {"error": …}.
nlohmann::json occupancyJson(const Occupancy& occupancy);

} // namespace kwb
