#pragma once
// The protocol profiles (docs/protocol.md "Protocol profiles"): the worker's one table of them.
// `evaluate` takes a profile by name; `hello` announces the table, so no client keeps its own.
#include "core/protocol/protocolnames.h" // plain C++: the default profile's name, shared with the client
#include "worker/measure/measurestats.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kwb {

/// A named set of evaluation settings, recorded with every result (ARCHITECTURE.md §6).
struct ProtocolProfile
{
    std::string name;
    double atol = 1e-4;
    double rtol = 1e-4;
    /// TF32 for cuBLAS matmuls and for cuDNN convolutions (at::globalContext().setAllowTF32CuBLAS /
    /// setAllowTF32CuDNN). `kernelbench` takes libtorch's own defaults (cuBLAS off, cuDNN on
    /// since PyTorch 1.12), read from libtorch at start-up (setTorchTf32Defaults).
    bool tf32CuBLAS = false;
    bool tf32CuDNN = false;
    bool tf32FromTorchDefaults = false;
    bool l2Flush = true;
    int correctnessTrials = 5;
    /// How `timing` measures: adaptive (nvbench's shape) or KernelBench's fixed 3 warm-ups and
    /// 100 trials; its warmup and trials are the request's `warmup` and `timing_trials`.
    measure::Method timing;
    std::string statistic = "mean";
    /// One extra correctness trial on N(0,1) inputs, at a looser tolerance: catches candidates
    /// that are right only on the profile's U[0,1) inputs, without failing correct kernels whose
    /// summation order differs (N(0,1) inputs cancel; U[0,1) inputs do not).
    bool rangeTrial = true;
    double rangeTolerance = 1e-2;
    /// Whether any TF32 is allowed: the roofline's compute ceiling is then the TF32 tensor peak.
    bool anyTf32() const { return tf32CuBLAS || tf32CuDNN; }
    /// Every setting, as `evaluate` records it and `hello` announces it.
    nlohmann::json toJson() const;
};

/// The profile `evaluate` uses when the request names none: the study's FP32.
inline constexpr const char* kDefaultProfile = ProtocolNames::kDefaultProfile; // core/protocol/protocolnames.h

/// libtorch's default TF32 flags (at::globalContext() before anything set them): the worker
/// calls this once at start-up, before evaluating. Until then the table assumes PyTorch ≥ 1.12's
/// documented defaults (cuBLAS false, cuDNN true).
void setTorchTf32Defaults(bool cublas, bool cudnn);

/// Every profile the worker knows, the default first.
const std::vector<ProtocolProfile>& protocolProfiles();

std::optional<ProtocolProfile> findProtocolProfile(const std::string& name);

/// "kernelbench-fp32, kernelbench, kernelbench-v0.1": for messages that list the choices.
std::string profileNames();

} // namespace kwb
