#include "worker/analyze/roofline.h"

#include "core/protocol/protocolnames.h"

#include <algorithm>

namespace kwb::roofline {
using json = nlohmann::json;

namespace {

int ccTimes10(const json& facts)
{
    const std::string cc = facts.value(ProtocolNames::Key::kCc, std::string());
    const auto dot = cc.find('.');
    if (cc.empty() || dot == std::string::npos)
        return 0;
    try {
        return std::stoi(cc.substr(0, dot)) * 10 + std::stoi(cc.substr(dot + 1));
    } catch (const std::exception&) {
        return 0;
    }
}

/// GFLOP/s of `perSmPerClock` FLOPs per SM per clock cycle at the reported (boost) clock.
double peak(const json& facts, double perSmPerClock)
{
    const double sms = facts.value(ProtocolNames::Key::kSmCount, 0.0);
    const double khz = facts.value(ProtocolNames::Key::kSmClockKhz, 0.0);
    return sms * perSmPerClock * khz * 1e3 / 1e9;
}

double measuredValue(const json& measured, const char* key)
{
    if (measured.is_object() && measured.contains(key) && measured[key].is_number())
        return measured[key].get<double>();
    return 0;
}

} // namespace

double theoreticalFp32Gflops(const json& facts)
{
    const int cc = ccTimes10(facts);
    if (cc == 0)
        return 0;
    // FP32 lanes per SM: 64 on sm_60/70/75/80, 128 on sm_86/89/90 and newer; an FMA is 2 FLOPs.
    const int lanes = cc >= 86 ? 128 : 64;
    return peak(facts, 2.0 * lanes);
}

double theoreticalTf32Gflops(const json& facts)
{
    // Dense TF32 FLOPs per SM per clock: A100 (8.0) 1024, GA10x/AD10x (8.6, 8.7, 8.9) 256, H100/H200
    // (9.0) 2048, Blackwell (10.x, 12.x) at most 4096. Before sm_80 there is no TF32.
    const int cc = ccTimes10(facts);
    const double perClock = cc >= 100 ? 4096 : cc >= 90 ? 2048 : cc == 80 ? 1024 : cc >= 86 ? 256 : 0;
    return perClock > 0 ? peak(facts, perClock) : 0;
}

double theoreticalBf16Gflops(const json& facts)
{
    // Twice the TF32 rate from sm_80 on; sm_70/75 have FP16 tensor cores at 1024 per SM per clock.
    const int cc = ccTimes10(facts);
    if (cc >= 80)
        return 2 * theoreticalTf32Gflops(facts);
    return cc >= 70 ? peak(facts, 1024) : 0;
}

Ceilings chooseCeilings(const json& facts, const json& measured, const Precision& p)
{
    Ceilings c;
    c.l2Bytes = facts.value(ProtocolNames::Key::kL2Bytes, 0.0);
    // Compute: the fastest path the evaluation's precision lets a kernel take and still pass.
    // A tolerance of 1e-2 passes bf16/fp16 products, 1e-3 passes TF32; FP32 accuracy itself is
    // reachable on tensor cores by the 3xTF32 split (CUTLASS), at a third of the TF32 rate.
    // Tensor peaks: the larger of measured and theoretical. The measured kernels use wmma
    // (mma.sync), which on sm_90 stays below the wgmma path cuBLAS takes: not a ceiling there.
    const double tf32M = measuredValue(measured, "tensor_tf32_gflops"), tf32T = theoreticalTf32Gflops(facts);
    const double bf16M = measuredValue(measured, "tensor_bf16_gflops"), bf16T = theoreticalBf16Gflops(facts);
    const double tf32 = std::max(tf32M, tf32T), bf16 = std::max(bf16M, bf16T);
    auto take = [&c](double gflops, const char* kind, bool wasMeasured) {
        if (gflops > c.computeGflops) {
            c.computeGflops = gflops;
            c.computeKind = kind;
            c.computeSource = wasMeasured ? "measured" : "theoretical";
        }
    };
    // FP32 FMA: the measurement where this process has one (a register-only FMA chain is what any
    // FP32 kernel can reach), else lanes × 2 × clock.
    const double fmaMeasured = measuredValue(measured, "fp32_fma_gflops");
    take(fmaMeasured > 0 ? fmaMeasured : theoreticalFp32Gflops(facts), "fp32", fmaMeasured > 0);
    take(tf32 / 3, "fp32_3xtf32", tf32M > tf32T);
    if (p.tf32 || p.tolerance >= 1e-3)
        take(tf32, "tensor_tf32", tf32M > tf32T);
    if (p.lowPrecisionInputs || p.tolerance >= 1e-2)
        take(bf16, "tensor_bf16", bf16M > bf16T);
    // Memory: the measured copy bandwidth, else 2 × memory clock × bus width.
    const double copy = measuredValue(measured, "hbm_copy_gbps");
    const double theory = facts.value(ProtocolNames::Key::kHbmTheoreticalGbs, 0.0);
    c.memoryGbps = copy > 0 ? copy : theory;
    c.memorySource = copy > 0 ? "measured" : theory > 0 ? "theoretical" : "";
    return c;
}

Floor floorOf(double flops, double bytes, const Ceilings& c)
{
    Floor f;
    if (c.computeGflops > 0)
        f.computeMs = flops / (c.computeGflops * 1e6);
    if (c.memoryGbps > 0)
        f.memoryMs = bytes / (c.memoryGbps * 1e6);
    return f;
}

double boundFlops(const json& analysis)
{
    double flops = 0;
    if (analysis.contains(ProtocolNames::Key::kOps) && analysis[ProtocolNames::Key::kOps].is_array())
        for (const json& op : analysis[ProtocolNames::Key::kOps])
            flops += op.value(ProtocolNames::Key::kCategory, std::string()) == "matmul"
                         ? op.value(ProtocolNames::Key::kFlops, 0.0)
                         : op.value(ProtocolNames::Key::kMinFlops, 0.0);
    return flops;
}

double boundBytes(const json& analysis, const Ceilings& c, bool l2Flush)
{
    const double reads =
        analysis.value(ProtocolNames::Key::kInputBytes, 0.0) + analysis.value(ProtocolNames::Key::kParamBytes, 0.0);
    const double writes = analysis.value(ProtocolNames::Key::kOutputBytes, 0.0);
    return std::max(0.0, reads - (l2Flush ? 0.0 : c.l2Bytes)) + std::max(0.0, writes - c.l2Bytes);
}

json assess(const Floor& floor, const Ceilings& c, double candidateMs, double referenceMs,
            std::optional<double> speedup)
{
    json flags = json::array();
    const double limit = floor.floorMs() * (1 - kMargin);
    const bool referenceBelow = referenceMs > 0 && referenceMs < limit;
    const bool below = floor.floorMs() > 0 && candidateMs < limit && !referenceBelow;
    if (below)
        flags.push_back("below_roofline_floor");
    if (speedup && *speedup > kSpeedupWarning)
        flags.push_back("speedup_over_10x");
    json r = {{"floor_ms", floor.floorMs()},
              {"compute_ms", floor.computeMs},
              {"memory_ms", floor.memoryMs},
              {"candidate_ms", candidateMs},
              {"margin", kMargin},
              {"compute_gflops", c.computeGflops},
              {"compute_kind", c.computeKind},
              {"memory_gbps", c.memoryGbps},
              {"ceiling_source", {{"compute", c.computeSource}, {"memory", c.memorySource}}},
              {"below_floor", below}};
    if (referenceBelow)
        r["reference_below_floor"] = true;
    return {{ProtocolNames::Key::kFlags, flags}, {"roofline", r}};
}

namespace {
json& measuredStore()
{
    static json m = json::object();
    return m;
}
} // namespace

void rememberMeasuredCeilings(const json& ceilings)
{
    if (ceilings.is_object() && ceilings.value(ProtocolNames::Key::kAvailable, false))
        measuredStore() = ceilings;
}

const json& measuredCeilings()
{
    return measuredStore();
}

} // namespace kwb::roofline
