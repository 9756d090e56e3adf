#include "worker/measure/profiles.h"

namespace kwb {

namespace {

std::vector<ProtocolProfile>& table()
{
    static std::vector<ProtocolProfile> profiles = [] {
        // The study's FP32: TF32 off for cuBLAS and cuDNN (docs/decisions.md).
        ProtocolProfile fp32;
        fp32.name = kDefaultProfile;
        fp32.timing.kind = "adaptive";
        fp32.timing.trials = 1000; // adaptive: the most pairs; the target or max_wall_ms usually stops it first
        fp32.timing.maxWallMs = 1000;
        // One warm-up pair and 10 ms of them: the correctness trials have run both sides already
        // (handles, plans, lazy kernel loading); a long call needs no more, a short launch-bound
        // one gets many (L3/9). KernelBench's profiles below keep its 3 warm-ups.
        fp32.timing.warmup = 1;
        fp32.timing.minWarmupMs = 10;
        // KernelBench as its harness runs on the device: PyTorch's default flags, as this libtorch
        // reports them (setTorchTf32Defaults); until then PyTorch >= 1.12's: cuBLAS off, cuDNN on.
        ProtocolProfile kernelbench = fp32;
        kernelbench.name = "kernelbench";
        kernelbench.tf32CuBLAS = false;
        kernelbench.tf32CuDNN = true;
        kernelbench.tf32FromTorchDefaults = true;
        // KernelBench's own timing, for exact fidelity: 3 warm-ups, 100 trials each, the mean.
        kernelbench.timing = measure::Method{};
        kernelbench.timing.kind = "fixed";
        ProtocolProfile v01 = fp32;
        v01.name = "kernelbench-v0.1";
        v01.atol = v01.rtol = 1e-2;
        v01.l2Flush = false;
        v01.timing = kernelbench.timing;
        return std::vector<ProtocolProfile>{fp32, kernelbench, v01};
    }();
    return profiles;
}

} // namespace

void setTorchTf32Defaults(bool cublas, bool cudnn)
{
    for (ProtocolProfile& p : table()) {
        if (p.tf32FromTorchDefaults) {
            p.tf32CuBLAS = cublas;
            p.tf32CuDNN = cudnn;
        }
    }
}

nlohmann::json ProtocolProfile::toJson() const
{
    using json = nlohmann::json;
    return {{ProtocolNames::Key::kName, name},
            {ProtocolNames::Key::kAtol, atol},
            {ProtocolNames::Key::kRtol, rtol},
            // "tf32": any TF32 at all (what older clients read); the two flags say which.
            {ProtocolNames::Field::kTf32, anyTf32()},
            {"tf32_cublas", tf32CuBLAS},
            {"tf32_cudnn", tf32CuDNN},
            {"tf32_source", tf32FromTorchDefaults ? "libtorch defaults" : "profile"},
            {ProtocolNames::Key::kL2Flush, l2Flush},
            {ProtocolNames::Field::kCorrectnessTrials, correctnessTrials},
            {ProtocolNames::Field::kTimingTrials, timing.trials},
            {ProtocolNames::Field::kWarmup, timing.warmup},
            {ProtocolNames::Field::kTimingMethod, timing.toJson()},
            {ProtocolNames::Key::kTimingStat, statistic},
            {ProtocolNames::Key::kInputGenerator, "rand"},
            {ProtocolNames::Key::kRangeTrial, rangeTrial ? json{{ProtocolNames::Key::kGenerator, "randn"},
                                                                {ProtocolNames::Key::kAtol, rangeTolerance},
                                                                {ProtocolNames::Key::kRtol, rangeTolerance}}
                                                         : json(nullptr)},
            {ProtocolNames::Key::kGraphOptimize, false}};
}

const std::vector<ProtocolProfile>& protocolProfiles()
{
    return table();
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
