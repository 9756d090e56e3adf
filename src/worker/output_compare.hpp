#pragma once
// The correctness check's element-wise comparison of two float32 outputs on the GPU in one pass
// (evaluator.cpp's compareOutputs): the mismatch count under |a − b| <= atol + rtol·|b| and the
// largest absolute and relative differences, rounded exactly as ATen's sequence of float32 ops
// rounds them (sub, abs, mul, add, le; div by |b| + 1e-12), so the verdict and the numbers are the
// same. ATen's sequence makes ~10 full-size temporaries and ~16 passes over them (a 1 GB output:
// ~34 GB of traffic, ~10 ms on an H200), this kernel reads the two outputs once. Compiled once per
// process with NVRTC (compileOwnKernel) and loaded through the driver API; torch-free.
#include <cstdint>
#include <optional>
#include <string>

namespace kwb {

struct FusedComparison {
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

} // namespace kwb
