#pragma once
// The correctness check's element-wise comparison of two float32 outputs on the GPU in one pass
// (compareOutputs, evaluate/tensors.cpp): the mismatch count under |a − b| <= atol + rtol·|b| and the
// largest absolute and relative differences, rounded exactly as ATen's sequence of float32 ops
// rounds them (sub, abs, mul, add, le; div by |b| + 1e-12), so the verdict and the numbers are the
// same. ATen's sequence makes ~10 full-size temporaries and ~16 passes over them (a 1 GB output:
// ~34 GB of traffic, ~10 ms on an H200), this kernel reads the two outputs once. Compiled once per
// process with NVRTC (compileOwnKernel) and loaded through the driver API; torch-free.
//
// The same module holds the evaluator's other checks on device data (the degenerate-output
// statistics, equality, the byte fingerprints): in a fresh worker each distinct ATen kernel costs
// its module's first load (lazy loading: ~34 ms for the degenerate check's four on an H200, 0.3 ms
// once loaded), this module is loaded once, beside the context. Each returns nullopt with *why
// where it cannot run, and the caller then uses ATen, which gives the same answer.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kwb {

struct FusedComparison
{
    int64_t mismatches = 0; ///< elements where !(|a − b| <= atol + rtol·|b|), NaN included
    double maxAbs = 0;      ///< max over elements of |a − b| where finite, else 0
    double maxRel = 0;      ///< max of that over (|b| + 1e-12); NaN where any quotient is NaN
};

/// The kernel's CUDA source (`kwb_allclose_f32`), for tests that compile it without a GPU.
const char* fusedCompareSource();

/// Compiles the kernel for device `ordinal` (NVRTC only, no context needed; any thread).
void precompileFusedCompare(int ordinal);

/// Compares `n` contiguous float32 values at device pointers `a` (the candidate's) and `b` (the
/// reference's) on the legacy default stream, after the work queued before it, and waits for the
/// result. nullopt with *why where the kernel cannot run (no NVRTC, no driver, another device than
/// the first one used): the caller then compares with ATen. Call from one thread.
std::optional<FusedComparison> fusedCompare(const float* a, const float* b, int64_t n, double atol, double rtol,
                                            int ordinal, std::string* why);

struct FusedStats
{
    int64_t zeros = 0;     ///< elements == 0 (either sign)
    int64_t nonFinite = 0; ///< NaN or ±Inf
    int64_t nans = 0;
    float min = 0, max = 0; ///< over the elements that are not NaN; 0 where all are NaN (or none)
};
/// What the degenerate-output check and the range trial's finiteness check ask of `n` contiguous
/// float32 values at device pointer `x`, in one pass.
std::optional<FusedStats> fusedStats(const float* x, int64_t n, int ordinal, std::string* why);

/// How many of `n` float32 pairs differ as floats (!(a == b): NaN never equal, -0 == +0), torch.equal's rule.
std::optional<int64_t> fusedUnequalFloats(const float* a, const float* b, int64_t n, int ordinal, std::string* why);

/// How many 8-byte words (and tail bytes) of two `bytes`-long device spans differ; both 8-byte
/// aligned, else nullopt. Bytes equal is values equal for integer and boolean data.
std::optional<int64_t> fusedUnequalBytes(const void* a, const void* b, int64_t bytes, int ordinal, std::string* why);

/// A span of device memory.
struct DeviceBytes
{
    const void* data = nullptr;
    int64_t bytes = 0;
};
/// Fingerprints copied back per synchronisation at most (a longer list takes several).
inline constexpr size_t kFingerprintBatch = 64;
/// tensorfingerprint.h's fingerprint of each span: the sum (mod 2^64) of its 64-bit words
/// and of its trailing bytes (< 8). Each span 8-byte aligned, else nullopt.
std::optional<std::vector<uint64_t>> fusedWordSums(const std::vector<DeviceBytes>& spans, int ordinal,
                                                   std::string* why);

} // namespace kwb
