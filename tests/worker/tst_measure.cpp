// Issue 13, the torch-free parts of the measurement (measurestats.h): the speed-up's interval
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
#include "worker/measure/cpuaffinity.h"
#include "worker/measure/measurestats.h"
#include "worker/measure/profiles.h"

#include <doctest/doctest.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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
    CHECK_FALSE(speedupInterval({1, 2}, {1}, true));  // paired needs pairs
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
    SpeedupInterval tight{2.0, 1.99, 2.01, 10};                // ±0.5 %
    SpeedupInterval loose{2.0, 1.9, 2.1, 10};                  // ±5 %
    CHECK(stopRule(m, 9, 100, 10, tight) == StopReason::None); // too few pairs
    CHECK(stopRule(m, 10, 19, 10, tight) == StopReason::None); // too little GPU time
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
    CHECK_FALSE(throttled(0, 1980, 0.75)); // not measured
    CHECK_FALSE(throttled(1000, 0, 0.75)); // no default known
    const std::vector<Pair> pairs = {
        {1.0, 0.5, 1980, 1975}, {1.3, 0.6, 1200, 1980}, {1.0, 0.7, 1980, 1300}, {1.0, 0.5, 0, 0}};
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
    CHECK(j["warmup"] == 1); // adaptive: at least one warm-up pair and 10 ms of them
    CHECK(j["timing_method"]["min_warmup_ms"] == 10.0);
    CHECK(kb->toJson()["timing_method"].count("min_warmup_ms") == 0);
}

// Batch means (issue 13, L3/9's spread between processes): hand arithmetic.
//  * 12 pairs, cand 1 throughout, ref in twos 1.01, 1.01, 0.99, 0.99, …: m = 2, 6 batches of means
//    1.01, 0.99, …; s_b² = 6·1e-4/5 = 1.2e-4, var(log R) = 1.2e-4/6 = 2e-5, se = 0.0044721,
//    t(5) = 2.5706, h = 0.011496: [0.988570, 1.011562], ±1.1562 %. Per pair (iid): s² = 12·1e-4/11,
//    var = 9.0909e-6, se = 0.0030151, t(11) = 2.2010, h = 0.0066363: ±0.66584 %, too narrow for noise
//    that lasts two pairs.
//  * ref alternating 1.02, 0.98 pair by pair: every batch of two has mean 1, the batch variance is 0,
//    and the iid interval (s² = 12·4e-4/11, se = 0.0060302, h = 0.013272: ±1.3361 %) is the one reported.
TEST_CASE("batch means widen the interval where noise lasts longer than a pair, and only there")
{
    std::vector<double> ref, cand(12, 1.0);
    for (int i = 0; i < 12; ++i)
        ref.push_back((i / 2) % 2 ? 0.99 : 1.01);
    const auto batch = batchMeansInterval(ref, cand);
    REQUIRE(batch);
    CHECK(batch->batches == 6);
    CHECK(batch->value == doctest::Approx(1.0));
    CHECK(batch->low == doctest::Approx(0.988570).epsilon(1e-5));
    CHECK(batch->high == doctest::Approx(1.011562).epsilon(1e-5));
    const auto iid = speedupInterval(ref, cand, true);
    REQUIRE(iid);
    CHECK(iid->relativeHalfWidth() == doctest::Approx(0.0066584).epsilon(1e-4));
    const auto reported = pairedInterval(ref, cand);
    REQUIRE(reported);
    CHECK(reported->low == doctest::Approx(batch->low));
    CHECK(reported->high == doctest::Approx(batch->high));
    CHECK(reported->batches == 6);
    CHECK(reported->iidHalfWidth == doctest::Approx(0.0066584).epsilon(1e-4));
    CHECK(reported->batchHalfWidth == doctest::Approx(0.011562).epsilon(1e-4));
    CHECK(reported->toJson()["batches"] == 6);

    std::vector<double> alternating;
    for (int i = 0; i < 12; ++i)
        alternating.push_back(i % 2 ? 0.98 : 1.02);
    const auto white = pairedInterval(alternating, cand);
    REQUIRE(white);
    CHECK(white->batchHalfWidth == doctest::Approx(0.0));
    CHECK(white->relativeHalfWidth() == doctest::Approx(0.013361).epsilon(1e-4));
    CHECK(white->low == doctest::Approx(speedupInterval(alternating, cand, true)->low));
}

TEST_CASE("batch means: batch size, leftovers and too few pairs")
{
    // 13 pairs: 6 batches of 2 (the 13th pair is in the value, not in the batches); the variance of
    // the 12 pairs' mean scaled by 12/13 for the 13 pairs' mean.
    std::vector<double> ref, cand(13, 1.0);
    for (int i = 0; i < 13; ++i)
        ref.push_back((i / 2) % 2 ? 0.99 : 1.01);
    const auto b13 = batchMeansInterval(ref, cand);
    REQUIRE(b13);
    CHECK(b13->batches == 6);
    CHECK(b13->value == doctest::Approx((7 * 1.01 + 6 * 0.99) / 13.0));
    CHECK(std::log(b13->high / b13->value) == doctest::Approx(0.011496 * std::sqrt(12.0 / 13.0)).epsilon(1e-4));
    // 100 pairs: batches of 2·⌊100/20⌋ = 10 pairs, 10 batches; 45 pairs: batches of 4, 11 of them.
    CHECK(batchMeansInterval(std::vector<double>(100, 2.0), std::vector<double>(100, 1.0))->batches == 10);
    CHECK(batchMeansInterval(std::vector<double>(45, 2.0), std::vector<double>(45, 1.0))->batches == 11);
    // Fewer than 3 batches (under 6 pairs): none, and the reported interval is the per-pair one.
    CHECK_FALSE(batchMeansInterval({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}));
    const auto five = pairedInterval({1.01, 0.99, 1.01, 0.99, 1.0}, {1, 1, 1, 1, 1});
    REQUIRE(five);
    CHECK(five->batches == 0);
    CHECK(five->high == doctest::Approx(speedupInterval({1.01, 0.99, 1.01, 0.99, 1.0}, {1, 1, 1, 1, 1}, true)->high));
    CHECK_FALSE(batchMeansInterval({1, 2, 3, 4, 5, 6}, {1, 2, 3}));
}

// The timing thread's CPU (cpuaffinity.h): sysfs lists, the GPU's rank on its node, the pick.
TEST_CASE("CPU lists and bus ids as sysfs writes them")
{
    using namespace kwb::affinity;
    CHECK(parseCpuList("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
    CHECK(parseCpuList("5,5,2") == std::vector<int>{2, 5});
    CHECK(parseCpuList("").empty());
    CHECK(parseCpuList("3-1").empty());
    CHECK(parseCpuList("0-3,x").empty());
    CHECK(parseCpuList("1,,2").empty());
    CHECK(sysfsBusId("00000000:1B:00.0") == "0000:1b:00.0");
    CHECK(sysfsBusId("0000:1B:00.0") == "0000:1b:00.0");
}

TEST_CASE("the timing CPU: on the GPU's node, distinct for GPUs sharing it, CPU 0 last")
{
    using namespace kwb::affinity;
    std::vector<int> all, node1;
    for (int c = 0; c < 32; ++c)
        all.push_back(c);
    for (int c = 16; c < 32; ++c)
        node1.push_back(c);
    CHECK(timingCpu(all, node1, {0, 1}) == 31);
    CHECK(timingCpu(all, node1, {0, 2}) == 31);
    CHECK(timingCpu(all, node1, {1, 2}) == 23);         // 16 CPUs, 2 GPUs: 8 apart
    CHECK(timingCpu({0, 1, 2, 3}, {}, {0, 1}) == 3);    // no node known: the allowed CPUs
    CHECK(timingCpu({0, 1, 2, 3}, node1, {0, 1}) == 3); // none of the node's CPUs allowed (a cpuset)
    CHECK(timingCpu({20, 21}, node1, {0, 1}) == 21);
    CHECK(timingCpu({20, 21}, node1, {5, 8}) == 20); // more GPUs than CPUs: they share, never out of range
    CHECK(timingCpu({}, node1, {0, 1}) == -1);
}

namespace {
void writeFile(const std::string& path, const std::string& text)
{
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text << "\n";
}
} // namespace

TEST_CASE("a GPU's rank among the NVIDIA GPUs of its node, from a sysfs tree")
{
    using namespace kwb::affinity;
    const std::string root =
        (std::filesystem::temp_directory_path() / ("kwb-sysfs-" + std::to_string(::getpid()))).string();
    const auto device = [&](const std::string& id, const char* vendor, const char* cls, const char* cpus) {
        const std::string d = root + "/bus/pci/devices/" + id;
        writeFile(d + "/vendor", vendor);
        writeFile(d + "/class", cls);
        writeFile(d + "/local_cpulist", cpus);
    };
    device("0000:43:00.0", "0x10de", "0x030200", "0-15");
    device("0000:1b:00.0", "0x10de", "0x030200", "0-15");
    device("0000:c1:00.0", "0x10de", "0x030000", "16-31");
    device("0000:00:1f.0", "0x8086", "0x030000", "0-15"); // another vendor's display controller
    device("0000:44:00.0", "0x10de", "0x068000", "0-15"); // an NVIDIA bridge, not a GPU
    CHECK(localCpus("00000000:43:00.0", root).size() == 16);
    const NodeRank a = gpuRankOnNode("0000:1B:00.0", root), b = gpuRankOnNode("0000:43:00.0", root),
                   c = gpuRankOnNode("0000:C1:00.0", root), none = gpuRankOnNode("0000:99:00.0", root);
    CHECK((a.rank == 0 && a.count == 2));
    CHECK((b.rank == 1 && b.count == 2));
    CHECK((c.rank == 0 && c.count == 1));
    CHECK((none.rank == 0 && none.count == 1));
    CHECK(localCpus("0000:99:00.0", root).empty());
    CHECK(nvidiaGpus(root) == std::vector<std::string>{"0000:1b:00.0", "0000:43:00.0", "0000:c1:00.0"});
    // Where the three GPUs' timing threads run, for a process that may use all 32 CPUs: the two
    // sharing node 0 eight apart from its top, the third at node 1's top.
    std::vector<int> all(32);
    std::iota(all.begin(), all.end(), 0);
    CHECK(hostTimingCpus(all, root) == std::vector<int>{7, 15, 31});
    // None of node 1 allowed (a cpuset): its GPU takes the set's top, as 1b's does.
    CHECK(hostTimingCpus({0, 1, 2, 3}, root) == std::vector<int>{1, 3});
    std::filesystem::remove_all(root);
    CHECK(nvidiaGpus(root).empty());
    CHECK(hostTimingCpus(all, root).empty());
}

TEST_CASE("a worker keeps off the timing CPUs where at least two CPUs are left; its timing thread still pins onto one")
{
    using namespace kwb::affinity;
    CHECK(offTimingCpus({0, 1, 2, 3}, {3}) == std::vector<int>{0, 1, 2});
    CHECK(offTimingCpus({0, 1, 2}, {2}) == std::vector<int>{0, 1});
    CHECK(offTimingCpus({0, 1}, {1}) == std::vector<int>{0, 1});          // two CPUs: the rest would lose half
    CHECK(offTimingCpus({0, 1, 2}, {1, 2}) == std::vector<int>{0, 1, 2}); // one left: all of them
    CHECK(offTimingCpus({0, 1, 2, 3}, {}) == std::vector<int>{0, 1, 2, 3});
    CHECK(offTimingCpus({4, 5, 6}, {0, 6}) == std::vector<int>{4, 5}); // a timing CPU outside the set
    // Applied (on a thread of its own: the set is per thread until a process starts), with one GPU
    // in a sysfs tree made here whose node is every CPU this process may use.
    const std::vector<int> mine = allowedCpus();
    REQUIRE_FALSE(mine.empty());
    const std::string root =
        (std::filesystem::temp_directory_path() / ("kwb-sysfs-builds-" + std::to_string(::getpid()))).string();
    writeFile(root + "/bus/pci/devices/0000:17:00.0/vendor", "0x10de");
    writeFile(root + "/bus/pci/devices/0000:17:00.0/class", "0x030200");
    writeFile(root + "/bus/pci/devices/0000:17:00.0/local_cpulist",
              std::to_string(mine.front()) + "-" + std::to_string(mine.back()));
    std::vector<int> applied, onTiming, after;
    std::string why = "not run";
    bool pinned = false;
    std::thread([&] {
        why = keepOffTimingCpus(root);
        applied = allowedCpus();
        // The timing thread's pin leaves the narrowed set for its CPU, and comes back to the set.
        {
            const ThreadPin pin(mine.back(), 0, "");
            pinned = pin.pinned();
            onTiming = allowedCpus();
        }
        after = allowedCpus();
    }).join();
    std::filesystem::remove_all(root);
    CHECK(why == "");
    CHECK(applied == offTimingCpus(mine, {mine.back()}));
    CHECK((mine.size() < 3 || std::find(applied.begin(), applied.end(), mine.back()) == applied.end()));
    CHECK(pinned);
    CHECK(onTiming == std::vector<int>{mine.back()});
    CHECK(after == applied);
    // The timing CPU is chosen from the set the process started with, not the narrowed one: every
    // worker for a GPU picks the same CPU.
    CHECK(processCpus() == mine);
    CHECK(allowedCpus() == mine);
    // This machine's own: never a timing CPU among the rest's where any was taken off.
    const std::vector<int> timing = hostTimingCpus(mine);
    const std::vector<int> rest = offTimingCpus(mine, timing);
    CHECK(!rest.empty());
    if (rest != mine)
        for (int c : timing)
            CHECK(std::find(rest.begin(), rest.end(), c) == rest.end());
}

TEST_CASE("a pinned thread runs on its CPU for the scope and gets its CPUs and nice value back")
{
    using namespace kwb::affinity;
    const std::vector<int> before = allowedCpus();
    REQUIRE_FALSE(before.empty());
    errno = 0;
    const int niceBefore = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
    {
        ThreadPin pin(before.back(), 5, "");
        CHECK(pin.pinned());
        CHECK(allowedCpus() == std::vector<int>{before.back()});
        CHECK(pin.toJson()["cpu"] == before.back());
    }
    CHECK(allowedCpus() == before);
    CHECK(getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid))) == niceBefore);
    ThreadPin none(-1, 5, "no CPU known");
    CHECK_FALSE(none.pinned());
    CHECK(none.toJson()["cpu"].is_null());
    CHECK(none.toJson()["reason"] == "no CPU known");
}
