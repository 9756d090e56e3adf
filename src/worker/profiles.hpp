#pragma once
// The protocol profiles (docs/protocol.md "Protocol profiles"): the worker's one table of them.
// `evaluate` takes a profile by name; `hello` announces the table, so no client keeps its own.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kwb {

/// A named set of evaluation settings, recorded with every result (ARCHITECTURE.md §6).
struct ProtocolProfile {
    std::string name;
    double atol = 1e-4;
    double rtol = 1e-4;
    bool tf32 = false;
    bool l2Flush = true;
    int correctnessTrials = 5;
    int timingTrials = 100;
    int warmup = 3;
    std::string statistic = "mean";
    /// One extra correctness trial on N(0,1) inputs, at a looser tolerance: catches candidates
    /// that are right only on the profile's U[0,1) inputs, without failing correct kernels whose
    /// summation order differs (N(0,1) inputs cancel; U[0,1) inputs do not).
    bool rangeTrial = true;
    double rangeTolerance = 1e-2;
    /// Every setting, as `evaluate` records it and `hello` announces it.
    nlohmann::json toJson() const;
};

/// The profile `evaluate` uses when the request names none.
inline constexpr const char* kDefaultProfile = "kernelbench";

/// Every profile the worker knows, the default first.
const std::vector<ProtocolProfile>& protocolProfiles();

std::optional<ProtocolProfile> findProtocolProfile(const std::string& name);

/// "kernelbench, kernelbench-v0.1": for messages that list the choices.
std::string profileNames();

} // namespace kwb
