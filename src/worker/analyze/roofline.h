#pragma once
// Physical plausibility of a timed evaluation (issue 11): the task's roofline floor on this GPU,
// max(FLOPs / compute ceiling, minimal HBM bytes / bandwidth ceiling), and the flags a candidate
// time below it (beyond kRooflineMargin) sets. Torch-free: the inputs are `analyze`'s JSON, the
// device facts and the ceilings measured in this process (if any). docs/protocol.md §Roofline.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace kwb::roofline {

/// A time below floor × (1 − margin) is flagged. 10 %: the ceilings are a measured best-of-N
/// (a tuned kernel can beat a copy or FMA micro-benchmark by a few percent) or a theoretical peak
/// from the reported boost clock (which the GPU may briefly exceed).
inline constexpr double kMargin = 0.10;
/// KernelBench's own warning: a speed-up above 10x is suspicious, though possible.
inline constexpr double kSpeedupWarning = 10.0;

/// What the evaluation's settings allow the candidate to compute in.
struct Precision
{
    bool tf32 = false;               ///< the profile allows TF32 (cuBLAS or cuDNN)
    bool lowPrecisionInputs = false; ///< a float16 / bfloat16 tensor input
    double tolerance = 1e-4;         ///< max(atol, rtol) of the evaluation
    bool l2Flush = true;             ///< the timed calls start with a flushed L2
};

struct Ceilings
{
    double computeGflops = 0;  ///< 0: unknown (no compute floor)
    double memoryGbps = 0;     ///< 0: unknown (no memory floor)
    std::string computeKind;   ///< "fp32", "tensor_tf32", "tensor_bf16"
    std::string computeSource; ///< "measured" or "theoretical"
    std::string memorySource;
    double l2Bytes = 0;
};

/// Theoretical peaks from device facts (sm_count, sm_clock_khz, cc): FP32 lanes × 2 × clock;
/// dense tensor rates per SM per clock by architecture. 0 where the architecture is unknown.
double theoreticalFp32Gflops(const nlohmann::json& facts);
double theoreticalTf32Gflops(const nlohmann::json& facts);
double theoreticalBf16Gflops(const nlohmann::json& facts);

/// The ceilings for `precision` on the device `facts` describes, measured ones (measureCeilings'
/// flat fields: hbm_copy_gbps, fp32_fma_gflops, tensor_*_gflops) where `measured` has them.
Ceilings chooseCeilings(const nlohmann::json& facts, const nlohmann::json& measured, const Precision& precision);

struct Floor
{
    double computeMs = 0, memoryMs = 0;
    double floorMs() const { return computeMs > memoryMs ? computeMs : memoryMs; }
};

/// The floor of `flops` and `bytes` under `c`: FLOP / (GFLOP/s · 1e6) ms, bytes / (GB/s · 1e6) ms.
Floor floorOf(double flops, double bytes, const Ceilings& c);

/// The FLOPs that bound every implementation: those of matmul ops (no GPU library computes a dense
/// product in fewer), and each conv's `min_flops`: its channel contraction at every output point,
/// 2 × outputs × Cin/groups, which Winograd and FFT still do (they save the kernel's taps, so its
/// direct count is no bound). Element-wise counts are left out (conventions, not minima). From
/// `analyze`'s `ops`.
double boundFlops(const nlohmann::json& analysis);
/// The HBM bytes every implementation moves: every input and parameter read once (less the L2's
/// size without an L2 flush: they may be resident), the output written once less the L2's size
/// (writes that fit may still sit in L2 when the timed call ends).
double boundBytes(const nlohmann::json& analysis, const Ceilings& c, bool l2Flush);

/// The response's additions for a timed evaluation: {"flags": [...], "roofline": {...}}. The
/// flag below_roofline_floor is set when candidateMs < floor × (1 − margin), unless the
/// reference's own time is below that too (then the floor is not a bound on this task here, and
/// roofline.reference_below_floor says so).
nlohmann::json assess(const Floor& floor, const Ceilings& c, double candidateMs, double referenceMs,
                      std::optional<double> speedup);

/// Ceilings measured in this process (the `device` request with ceilings), for later floors.
void rememberMeasuredCeilings(const nlohmann::json& ceilings);
const nlohmann::json& measuredCeilings();

} // namespace kwb::roofline
