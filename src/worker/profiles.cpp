#include "profiles.hpp"

namespace kwb {

nlohmann::json ProtocolProfile::toJson() const
{
    using json = nlohmann::json;
    return {{"name", name},
            {"atol", atol},
            {"rtol", rtol},
            {"tf32", tf32},
            {"l2_flush", l2Flush},
            {"correctness_trials", correctnessTrials},
            {"timing_trials", timingTrials},
            {"warmup", warmup},
            {"timing_stat", statistic},
            {"input_generator", "rand"},
            {"range_trial", rangeTrial ? json{{"generator", "randn"}, {"atol", rangeTolerance}, {"rtol", rangeTolerance}} : json(nullptr)},
            {"graph_optimize", false}};
}

const std::vector<ProtocolProfile>& protocolProfiles()
{
    static const std::vector<ProtocolProfile> table = [] {
        ProtocolProfile kernelbench;
        kernelbench.name = kDefaultProfile;
        ProtocolProfile v01;
        v01.name = "kernelbench-v0.1";
        v01.atol = v01.rtol = 1e-2;
        v01.l2Flush = false;
        return std::vector<ProtocolProfile>{kernelbench, v01};
    }();
    return table;
}

std::optional<ProtocolProfile> findProtocolProfile(const std::string& name)
{
    for (const ProtocolProfile& p : protocolProfiles())
        if (p.name == name)
            return p;
    return std::nullopt;
}

std::string profileNames()
{
    std::string out;
    for (const ProtocolProfile& p : protocolProfiles())
        out += (out.empty() ? "" : ", ") + p.name;
    return out;
}

} // namespace kwb
