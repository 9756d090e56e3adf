#pragma once
// The default host limits of a worker, as formulas of the machine's memory and CPUs: plain C++,
// no Qt, so that the worker (src/worker/sandbox/parentwatch.cpp, which enforces the limits itself on a
// remote host) and the supervisor (hostlimits.h) resolve a default the same way on the machine
// that runs the worker.

#include <algorithm>
#include <cstdint>

namespace kwb {

/// Half of the memory, at most all but 4 GiB, never under a quarter; 8 GiB when unknown (<= 0).
constexpr std::int64_t defaultHostMemoryLimitForTotal(std::int64_t totalBytes)
{
    constexpr std::int64_t GiB = std::int64_t(1) << 30;
    if (totalBytes <= 0)
        return 8 * GiB; // /proc unreadable: a desktop's half
    return std::max(std::min(totalBytes / 2, totalBytes - 4 * GiB), totalBytes / 4);
}

/// The data memory (RLIMIT_DATA) each process of a KernelBench-format build may take, set by the
/// build broker on itself (kwb-worker --build-broker) so that every build inherits it: half of the
/// machine, within 3 and 8 GiB; 8 GiB when unknown. The broker runs outside every worker's memory
/// limit, and an answer's sources can make a compiler grow without end (`#include "/dev/zero"`);
/// honest builds' processes stay under 3 GiB (nvcc's largest phase 2.5 GB, cc1plus on torch's
/// header 1.4 GB: bench/results/2026-12-05-build-memory-2core.md). docs/sandbox.md.
constexpr std::int64_t buildDataLimitForTotal(std::int64_t totalBytes)
{
    constexpr std::int64_t GiB = std::int64_t(1) << 30;
    if (totalBytes <= 0)
        return 8 * GiB;
    return std::max(3 * GiB, std::min(8 * GiB, totalBytes / 2));
}

/// 512, or 4 per CPU where that is more.
constexpr int defaultHostThreadLimitForCpus(int cpus)
{
    return std::max(512, 4 * cpus);
}

/// The exit code of a worker that ended itself over its host limits (`--max-host-memory`,
/// `--max-host-threads`), after one stderr line "kwb-worker: host limit: memory PEAK LIMIT" or
/// "kwb-worker: host limit: threads COUNT LIMIT" (bytes, counts). Below 128 (not a signal), apart
/// from the worker's others (0, 1, 2) and the remote script's (97).
constexpr int kWorkerExitHostLimit = 96;

} // namespace kwb
