// Issue 13, the torch-free parts of the measurement (measure_stats.hpp): the speed-up's interval
// (delta method, paired and not), Student's t, the stopping rule on synthetic sample streams, the
// throttle filter, the reuse key and the agreement check of a cached reference, and the timing
// method each profile announces.
//
// Hand arithmetic:
//  * ref {10, 12}, cand {5, 6}: means 11 and 5.5, R = 2. s_r² = 2, s_c² = 0.5, cov = 1. Paired:
//    var(log R) = (2/121 + 0.5/30.25 − 2·1/60.5)/2 = 0: the shared drift cancels, [2, 2]. Unpaired:
//    var = 2/(2·121) + 0.5/(2·30.25) = 0.0165289, se = 0.128565, t(1) = 12.7062, h = 1.63357:
//    [2·e^−h, 2·e^h] = [0.39046, 10.2443].
//  * ref alternating 1.02, 0.98, … and cand 0.5 constant, n = 4: mean 1, s_r² = 4·0.0004/3 =
//    5.3333e-4, var(log R) = 1.3333e-4, se = 0.0115470, t(3) = 3.1824, h = 0.0367473:
//    [1.927840, 2.074861]. The relative half-width e^h − 1 falls below 1 % first at n = 19
//    (t(18) = 2.1009; mean 1 + 0.02/19, s_r² = 4.2105e-4·19/18·…: 0.99286 %); n = 18 gives 1.02866 %.
//  * Throttle: 75 % of 1980 MHz is 1485 MHz.
#include "measure_stats.hpp"
#include "profiles.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace kwb;
using namespace kwb::measure;

TEST_CASE("Student's t quantile: the table and the expansion beyond it")
{
    CHECK(tQuantile975(1) == doctest::Approx(12.7062));
    CHECK(tQuantile975(9) == doctest::Approx(2.2622));
    CHECK(tQuantile975(30) == doctest::Approx(2.0423));
    CHECK(tQuantile975(40) == doctest::Approx(2.0211).epsilon(1e-4));  // tables: 2.0211
    CHECK(tQuantile975(120) == doctest::Approx(1.9799).epsilon(1e-4)); // tables: 1.9799
    CHECK(std::isinf(tQuantile975(0)));
}

TEST_CASE("speedup interval: pairing cancels the drift both sides share")
{
    const auto paired = speedupInterval({10, 12}, {5, 6}, true);
    REQUIRE(paired);
    CHECK(paired->value == doctest::Approx(2.0));
    CHECK(paired->low == doctest::Approx(2.0));
    CHECK(paired->high == doctest::Approx(2.0));
    CHECK(paired->relativeHalfWidth() == doctest::Approx(0.0));
    const auto unpaired = speedupInterval({10, 12}, {5, 6}, false);
    REQUIRE(unpaired);
    CHECK(unpaired->value == doctest::Approx(2.0));
    CHECK(unpaired->low == doctest::Approx(0.39046).epsilon(1e-4));
    CHECK(unpaired->high == doctest::Approx(10.2443).epsilon(1e-4));

    const auto four = speedupInterval({1.02, 0.98, 1.02, 0.98}, {0.5, 0.5, 0.5, 0.5}, true);
    REQUIRE(four);
    CHECK(four->low == doctest::Approx(1.927840).epsilon(1e-5));
    CHECK(four->high == doctest::Approx(2.074861).epsilon(1e-5));
    CHECK(four->samples == 4);

    CHECK_FALSE(speedupInterval({}, {1}, false));
    CHECK_FALSE(speedupInterval({1, 2}, {1}, true)); // paired needs pairs
    CHECK_FALSE(speedupInterval({1}, {0}, false));    // no positive candidate time
    const auto one = speedupInterval({2}, {1}, true); // one pair: a value, no interval
    REQUIRE(one);
    CHECK(one->value == 2.0);
    CHECK(std::isinf(one->relativeHalfWidth()));
}

TEST_CASE("stopping rule: minimum samples and GPU time, then the target; else the caps")
{
    Method m;
    m.minSamples = 10;
    m.minGpuMs = 20;
    m.trials = 100;
    m.maxWallMs = 1500;
    m.target = 0.01;
    SpeedupInterval tight{2.0, 1.99, 2.01, 10};   // ±0.5 %
    SpeedupInterval loose{2.0, 1.9, 2.1, 10};     // ±5 %
    CHECK(stopRule(m, 9, 100, 10, tight) == StopReason::None);   // too few pairs
    CHECK(stopRule(m, 10, 19, 10, tight) == StopReason::None);   // too little GPU time
    CHECK(stopRule(m, 10, 20, 10, tight) == StopReason::TargetReached);
    CHECK(stopRule(m, 10, 20, 10, loose) == StopReason::None);
    CHECK(stopRule(m, 10, 20, 10, std::nullopt) == StopReason::None);
    CHECK(stopRule(m, 100, 20, 10, loose) == StopReason::MaxSamples);
    CHECK(stopRule(m, 50, 20, 1500, loose) == StopReason::MaxTime);
    m.trials = 5; // a cap below the minimum: the cap is the minimum
    CHECK(stopRule(m, 5, 20, 10, tight) == StopReason::TargetReached);
    CHECK(stopRule(m, 5, 20, 10, loose) == StopReason::MaxSamples);
    CHECK(std::string(stopReasonName(StopReason::TargetReached)) == "target_reached");
    CHECK(std::string(stopReasonName(StopReason::MaxTime)) == "max_time");
}

TEST_CASE("stopping rule on a synthetic stream: ±2 % reference noise stops at 19 pairs")
{
    Method m;
    m.minSamples = 10;
    m.minGpuMs = 0;
    m.trials = 1000;
    m.maxWallMs = 1e9;
    std::vector<double> ref, cand;
    StopReason why = StopReason::None;
    std::optional<SpeedupInterval> iv;
    while (why == StopReason::None) {
        ref.push_back(ref.size() % 2 ? 0.98 : 1.02);
        cand.push_back(0.5);
        iv = speedupInterval(ref, cand, true);
        why = stopRule(m, int(ref.size()), 0, 0, iv);
    }
    CHECK(why == StopReason::TargetReached);
    CHECK(ref.size() == 19);
    REQUIRE(iv);
    CHECK(iv->relativeHalfWidth() == doctest::Approx(0.0099286).epsilon(1e-4));
    CHECK(iv->low < 2.0);
    CHECK(iv->high > 2.0);
    // The same drift on both sides (a clock ramp, 1 % per pair) leaves the paired interval at 0.
    ref.clear();
    cand.clear();
    for (int i = 0; i < 10; ++i) {
        ref.push_back(1.0 * (1 + 0.01 * i));
        cand.push_back(0.5 * (1 + 0.01 * i));
    }
    const auto drift = speedupInterval(ref, cand, true);
    REQUIRE(drift);
    CHECK(drift->relativeHalfWidth() < 0.002);
    CHECK(speedupInterval(ref, cand, false)->relativeHalfWidth() > 0.02); // unpaired, the ramp shows
    CHECK(stopRule(m, 10, 0, 0, drift) == StopReason::TargetReached);
}

TEST_CASE("throttle filter: below 75 % of the default clock, the pair is dropped and counted")
{
    CHECK(throttled(1400, 1980, 0.75));
    CHECK_FALSE(throttled(1485, 1980, 0.75));
    CHECK_FALSE(throttled(1980, 1980, 0.75));
    CHECK_FALSE(throttled(0, 1980, 0.75));    // not measured
    CHECK_FALSE(throttled(1000, 0, 0.75));    // no default known
    const std::vector<Pair> pairs = {{1.0, 0.5, 1980, 1975}, {1.3, 0.6, 1200, 1980}, {1.0, 0.7, 1980, 1300}, {1.0, 0.5, 0, 0}};
    int dropped = -1;
    const auto kept = keepUnthrottled(pairs, 1980, 0.75, &dropped);
    CHECK(dropped == 2);
    REQUIRE(kept.size() == 2);
    CHECK(kept[0].candidateMs == 0.5);
    CHECK(kept[1].referenceClockMhz == 0);
}

TEST_CASE("ABBA order")
{
    CHECK(referenceFirst(0));
    CHECK_FALSE(referenceFirst(1));
    CHECK(referenceFirst(2));
}

TEST_CASE("reuse key: task, scale, inputs seed, profile, device and its clocks, input sets")
{
    const ReuseKey base{"L2/1", "full", 42, R"({"name":"kernelbench-fp32"})", 0, 1980, 3201, 4};
    CHECK(base == base);
    auto differs = [&](auto change) {
        ReuseKey k = base;
        change(k);
        return k != base;
    };
    CHECK(differs([](ReuseKey& k) { k.task = "L2/2"; }));
    CHECK(differs([](ReuseKey& k) { k.scale = "smoke"; }));
    CHECK(differs([](ReuseKey& k) { k.seed = 43; }));
    CHECK(differs([](ReuseKey& k) { k.profile = R"({"name":"kernelbench"})"; }));
    CHECK(differs([](ReuseKey& k) { k.device = 1; }));
    CHECK(differs([](ReuseKey& k) { k.defaultClockMhz = 1755; }));
    CHECK(differs([](ReuseKey& k) { k.memoryClockMhz = 2619; }));
    CHECK(differs([](ReuseKey& k) { k.inputSets = 2; }));
}

TEST_CASE("a cached reference is pooled only while fresh samples agree with it")
{
    std::vector<double> cached;
    for (int i = 0; i < 100; ++i)
        cached.push_back(i % 2 ? 0.995 : 1.005);
    CHECK(referenceAgrees(cached, {1.004, 0.996, 1.002, 0.998, 1.0}, 0.01));
    // 5 % slower now (clocks changed, another process on the GPU): rejected.
    CHECK_FALSE(referenceAgrees(cached, {1.054, 1.046, 1.052, 1.048, 1.05}, 0.01));
    // 0.6 % slower with little noise: the interval excludes 1, rejected although within 1 %.
    CHECK_FALSE(referenceAgrees(cached, {1.0061, 1.0059, 1.006, 1.006, 1.006}, 0.01));
    CHECK_FALSE(referenceAgrees({}, {1.0}, 0.01));
}

TEST_CASE("profiles: the study's FP32 measures adaptively, KernelBench's profiles keep its fixed method")
{
    const auto fp32 = findProtocolProfile("kernelbench-fp32");
    const auto kb = findProtocolProfile("kernelbench");
    const auto v01 = findProtocolProfile("kernelbench-v0.1");
    REQUIRE((fp32 && kb && v01));
    CHECK(fp32->timing.adaptive());
    CHECK(fp32->timing.target == 0.01);
    CHECK(fp32->timing.trials == 1000); // adaptive: the most pairs
    for (const auto& p : {*kb, *v01}) {
        CHECK_FALSE(p.timing.adaptive());
        CHECK(p.timing.warmup == 3);
        CHECK(p.timing.trials == 100);
        CHECK(p.statistic == "mean");
    }
    const auto j = fp32->toJson();
    CHECK(j["timing_method"]["kind"] == "adaptive");
    CHECK(j["timing_method"]["order"] == "interleaved_abba");
    CHECK(j["timing_method"]["target"] == 0.01);
    CHECK(kb->toJson()["timing_method"]["kind"] == "fixed");
    CHECK(j["timing_trials"] == 1000);
    CHECK(j["warmup"] == 3);
}
