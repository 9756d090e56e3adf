// Issue 11, the torch-free parts: the roofline floor (numbers worked out by hand below), the
// flags it sets, the ceilings chosen for a profile's precision, the timing-set rule, and the
// profile table (three names, their TF32 settings).
//
// Hand arithmetic:
//  * L1/1 (N = 4096): 2·N³ = 137,438,953,472 FLOPs. At 65 TFLOP/s: 137.439e9 / 65e12 = 2.1144 ms.
//  * An H200 as deviceFacts reports it: cc 9.0, 132 SMs, 1,980,000 kHz. FP32: 132 · 128 lanes · 2
//    · 1.98e9 = 66,908.16 GFLOP/s. TF32: 132 · 2048 · 1.98e9 = 535,265.28 GFLOP/s; the 3xTF32
//    split reaches FP32 accuracy at a third of it, 178,421.76 GFLOP/s, the FP32 profile's ceiling.
//    L1/1's floor there: 137.439e9 / 178.42176e12 = 0.77030 ms; the memoising candidate's
//    0.133 ms is below 0.9 · 0.77030 = 0.69327 ms; cuBLAS's 2.73 ms is not.
//  * L1/5 (A: 65536 × 16384 fp32 = 4,294,967,296 bytes, read once; the output as large, written
//    once, less the L2 of 52,428,800 bytes): 4,294,967,296 + 4,242,538,496 = 8,537,505,792 bytes;
//    at 4,800 GB/s: 8.5375e9 / 4.8e12 = 1.77865 ms.
#include "worker/analyze/roofline.h"
#include "worker/measure/measure.h"
#include "worker/measure/profiles.h"
#include "worker/measure/streamwork.h"

#include <doctest/doctest.h>

using namespace kwb;
using json = nlohmann::json;

namespace {
json h200()
{
    return {{"available", true},       {"cc", "9.0"},          {"sm_count", 132},
            {"sm_clock_khz", 1980000}, {"l2_bytes", 52428800}, {"hbm_theoretical_gbs", 4800.0}};
}
} // namespace

TEST_CASE("roofline floor: L1/1 at 65 TFLOP/s, L1/5 at 4.8 TB/s")
{
    roofline::Ceilings c;
    c.computeGflops = 65000;
    c.memoryGbps = 4800;
    c.l2Bytes = 52428800;
    const double l11Flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
    CHECK(l11Flops == 137438953472.0);
    const roofline::Floor f = roofline::floorOf(l11Flops, 0, c);
    CHECK(f.computeMs == doctest::Approx(2.1144).epsilon(1e-4));
    CHECK(f.floorMs() == f.computeMs);

    // L1/5, as analyze reports it: no matmul, input and output 4.29 GB each.
    const json l15 = {
        {"ops", json::array({{{"op", "aten::mul"}, {"category", "elementwise"}, {"flops", 1073741824.0}}})},
        {"input_bytes", 4294967296.0},
        {"param_bytes", 0.0},
        {"output_bytes", 4294967296.0}};
    CHECK(roofline::boundFlops(l15) == 0); // element-wise counts are conventions, not minima
    const double bytes = roofline::boundBytes(l15, c, true);
    CHECK(bytes == 8537505792.0);
    const roofline::Floor m = roofline::floorOf(roofline::boundFlops(l15), bytes, c);
    CHECK(m.computeMs == 0);
    CHECK(m.memoryMs == doctest::Approx(1.77865).epsilon(1e-5));
    // Without an L2 flush the reads may be resident: the L2's size comes off them too.
    CHECK(roofline::boundBytes(l15, c, false) == 8537505792.0 - 52428800.0);
}

TEST_CASE("roofline ceilings follow the precision the evaluation allows")
{
    const json facts = h200();
    CHECK(roofline::theoreticalFp32Gflops(facts) == doctest::Approx(66908.16));
    CHECK(roofline::theoreticalTf32Gflops(facts) == doctest::Approx(535265.28));
    CHECK(roofline::theoreticalBf16Gflops(facts) == doctest::Approx(1070530.56));
    roofline::Precision fp32; // kernelbench-fp32: TF32 off, 1e-4
    roofline::Ceilings c = roofline::chooseCeilings(facts, json::object(), fp32);
    CHECK(c.computeKind == "fp32_3xtf32");
    CHECK(c.computeGflops == doctest::Approx(178421.76));
    CHECK(c.computeSource == "theoretical");
    CHECK(c.memoryGbps == 4800.0);
    CHECK(c.memorySource == "theoretical");
    roofline::Precision tf32 = fp32;
    tf32.tf32 = true; // kernelbench: cuDNN TF32 on
    CHECK(roofline::chooseCeilings(facts, json::object(), tf32).computeKind == "tensor_tf32");
    roofline::Precision loose = fp32;
    loose.tolerance = 1e-2; // kernelbench-v0.1: bf16 products pass 1e-2
    CHECK(roofline::chooseCeilings(facts, json::object(), loose).computeKind == "tensor_bf16");
    // Measured in this process: the copy bandwidth and the FMA peak are used as measured; a wmma
    // tensor peak below the theoretical one is not a ceiling (sm_90's wgmma is faster).
    const json measured = {{"hbm_copy_gbps", 4300.0}, {"fp32_fma_gflops", 66000.0}, {"tensor_tf32_gflops", 300000.0}};
    c = roofline::chooseCeilings(facts, measured, fp32);
    CHECK(c.memoryGbps == 4300.0);
    CHECK(c.memorySource == "measured");
    CHECK(c.computeGflops == doctest::Approx(178421.76));
    // A V100 (no TF32): the FP32 FMA peak, 80 · 64 · 2 · 1.53e9 = 15,667.2 GFLOP/s.
    const json v100 = {{"cc", "7.0"}, {"sm_count", 80}, {"sm_clock_khz", 1530000}, {"hbm_theoretical_gbs", 900.0}};
    c = roofline::chooseCeilings(v100, json::object(), fp32);
    CHECK(c.computeKind == "fp32");
    CHECK(c.computeGflops == doctest::Approx(15667.2));
}

TEST_CASE("roofline assessment: flags below the floor beyond the margin, and speed-ups over 10x")
{
    const json facts = h200();
    const roofline::Ceilings c = roofline::chooseCeilings(facts, json::object(), roofline::Precision{});
    const roofline::Floor f = roofline::floorOf(137438953472.0, 3.0 * 4096 * 4096 * 4, c);
    CHECK(f.computeMs == doctest::Approx(0.77030).epsilon(1e-4));
    // The memoising candidate of issue 11: 0.133 ms against cuBLAS's 2.73 ms (20.5x).
    json a = roofline::assess(f, c, 0.133, 2.73, 2.73 / 0.133);
    CHECK(a["flags"] == json::array({"below_roofline_floor", "speedup_over_10x"}));
    CHECK(a["roofline"]["floor_ms"].get<double>() == doctest::Approx(0.77030).epsilon(1e-4));
    CHECK(a["roofline"]["margin"] == 0.10);
    CHECK(a["roofline"]["ceiling_source"]["compute"] == "theoretical");
    // Within the margin: 0.70 ms > 0.9 · 0.7703 = 0.6933 ms is possible.
    a = roofline::assess(f, c, 0.70, 2.73, 3.9);
    CHECK(a["flags"].empty());
    CHECK(a["roofline"]["below_floor"] == false);
    // When the reference itself is below the floor, the floor is no bound here: no flag.
    a = roofline::assess(f, c, 0.133, 0.5, 3.76);
    CHECK(a["flags"].empty());
    CHECK(a["roofline"]["reference_below_floor"] == true);
    // No ceilings known (no device facts): no floor, no flag.
    a = roofline::assess(roofline::Floor{}, roofline::Ceilings{}, 0.001, 1.0, 1000.0);
    CHECK(a["flags"] == json::array({"speedup_over_10x"}));
}

TEST_CASE("timing input sets: up to 4, what fits a quarter of free memory, at least 2")
{
    const double GB = 1e9;
    CHECK(measure::timingSetCount(8.6 * GB, 140 * GB) == 4); // L1/4 on an H200: 4 · 8.6 < 35
    CHECK(measure::timingSetCount(12 * GB, 140 * GB) == 2);  // 35 / 12 = 2.9 -> 2
    CHECK(measure::timingSetCount(10 * GB, 130 * GB) == 3);  // 32.5 / 10 = 3.25 -> 3
    CHECK(measure::timingSetCount(30 * GB, 80 * GB) == 2);   // at least 2 where two fit at all
    CHECK(measure::timingSetCount(50 * GB, 80 * GB) == 1);   // two do not fit
    CHECK(measure::timingSetCount(0, 0) == 4);
    // checked calls: the first and last call on each set, round robin over 100 calls, 4 sets
    CHECK(measure::checkedCalls(0, 4, 100) == std::vector<int>{0, 96});
    CHECK(measure::checkedCalls(3, 4, 100) == std::vector<int>{3, 99});
    CHECK(measure::checkedCalls(1, 3, 2) == std::vector<int>{1});
    CHECK(measure::checkedCalls(2, 3, 2).empty());
}

TEST_CASE("profiles say what they pin")
{
    const auto& table = protocolProfiles();
    REQUIRE(table.size() == 3);
    CHECK(table[0].name == "kernelbench-fp32");
    CHECK(std::string(kDefaultProfile) == "kernelbench-fp32");
    const auto fp32 = findProtocolProfile("kernelbench-fp32");
    const auto kb = findProtocolProfile("kernelbench");
    const auto v01 = findProtocolProfile("kernelbench-v0.1");
    REQUIRE((fp32 && kb && v01));
    CHECK_FALSE(fp32->tf32CuBLAS);
    CHECK_FALSE(fp32->tf32CuDNN);
    // kernelbench: libtorch's defaults (PyTorch >= 1.12: cuBLAS off, cuDNN on) until the worker
    // reads its libtorch's own at start-up.
    CHECK_FALSE(kb->tf32CuBLAS);
    CHECK(kb->tf32CuDNN);
    CHECK(kb->toJson()["tf32_source"] == "libtorch defaults");
    CHECK(kb->toJson()["tf32"] == true);
    CHECK(fp32->atol == kb->atol);
    CHECK(fp32->l2Flush);
    CHECK_FALSE(v01->tf32CuDNN);
    CHECK(v01->atol == 1e-2);
    CHECK_FALSE(v01->l2Flush);
    const json j = fp32->toJson();
    CHECK(j["tf32_cublas"] == false);
    CHECK(j["tf32_cudnn"] == false);
    CHECK(j["tf32"] == false);
    CHECK(profileNames() == "kernelbench-fp32, kernelbench, kernelbench-v0.1");
    setTorchTf32Defaults(true, true); // a libtorch whose defaults differ: kernelbench follows it
    CHECK(findProtocolProfile("kernelbench")->tf32CuBLAS);
    CHECK_FALSE(findProtocolProfile("kernelbench-fp32")->tf32CuBLAS);
    setTorchTf32Defaults(false, true);
}

namespace {
KernelRecord kernel(const char* name, uint32_t stream, uint64_t start, uint64_t end)
{
    KernelRecord r;
    r.name = name;
    r.streamId = stream;
    r.startNs = start;
    r.endNs = end;
    return r;
}
} // namespace

TEST_CASE("unseen work: kernels on another stream still running when the call's end marker starts (issue 39 item 7)")
{
    constexpr uint32_t timed = 7, side = 13;
    const char* fill =
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
    // Library work (a cuDNN convolution) moved to a stream of the answer's own behind a short
    // kernel on the timed one: the marker runs right after the short kernel, the convolution goes on.
    std::vector<KernelRecord> hidden = {kernel("short_epilogue", timed, 1000, 1200),
                                        kernel("sm90_xmma_fprop_implicit_gemm", side, 1100, 90000),
                                        kernel(fill, timed, 1300, 1310)};
    const std::optional<KernelRecord> marker = takeEndMarker(hidden, timed);
    REQUIRE(marker);
    CHECK(marker->startNs == 1300);
    CHECK(hidden.size() == 2); // the marker is not the candidate's
    const UnseenWork u = unseenWork(hidden, timed, *marker);
    CHECK(u.kernels == 1);
    CHECK(u.ns == 90000 - 1300);
    CHECK(u.first == "sm90_xmma_fprop_implicit_gemm");

    // The same streams joined before the call returns (the timed stream waits for the side one):
    // the marker starts after the side kernel ended, and nothing is unseen.
    std::vector<KernelRecord> joined = {kernel("short_epilogue", timed, 1000, 1200),
                                        kernel("sm90_xmma_fprop_implicit_gemm", side, 1100, 90000),
                                        kernel(fill, timed, 90100, 90110)};
    const auto m2 = takeEndMarker(joined, timed);
    REQUIRE(m2);
    CHECK(unseenWork(joined, timed, *m2).kernels == 0);
    // Everything on the timed stream: nothing is unseen, however long.
    std::vector<KernelRecord> plain = {kernel("conv", timed, 0, 50000), kernel(fill, timed, 50010, 50020)};
    const auto m3 = takeEndMarker(plain, timed);
    REQUIRE(m3);
    CHECK(unseenWork(plain, timed, *m3).kernels == 0);
    // A kernel elsewhere that ends exactly as the marker starts was inside the bracket.
    CHECK(unseenWork({kernel("k", side, 0, 1300)}, timed, *marker).kernels == 0);

    // No fill last on the timed stream (its record lost): no marker, and the records stay.
    std::vector<KernelRecord> lost = {kernel("conv", timed, 0, 50000), kernel(fill, side, 10, 20)};
    CHECK_FALSE(takeEndMarker(lost, timed));
    CHECK(lost.size() == 2);
}
