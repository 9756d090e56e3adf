// Theoretical occupancy (issue 40 item 2) on the limits of an H100/H200 (sm_90) and an A100
// (sm_80), against values worked out by hand from the CUDA Occupancy Calculator's rules: 64 warps,
// 32 blocks and 65,536 registers per SM, registers allocated per warp in units of 256 within four
// partitions of 16,384, shared memory per block plus the driver's 1 KiB. And the trace's records
// grouped into `launches`. No GPU.
#include "worker/device/occupancy.h"
#include "worker/measure/kernellaunches.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kwb;

namespace {

// cudaGetDeviceProperties' values on those GPUs.
SmLimits sm90()
{
    SmLimits sm;
    sm.ccMajor = 9;
    sm.ccMinor = 0;
    sm.maxThreadsPerBlock = 1024;
    sm.maxThreadsPerSm = 2048;
    sm.regsPerBlock = 65536;
    sm.regsPerSm = 65536;
    sm.warpSize = 32;
    sm.sharedPerBlock = 48 * 1024;
    sm.sharedPerSm = 228 * 1024;
    sm.sharedPerBlockOptin = 227 * 1024;
    sm.reservedSharedPerBlock = 1024;
    return sm;
}

SmLimits sm80()
{
    SmLimits sm = sm90();
    sm.ccMajor = 8;
    sm.sharedPerSm = 164 * 1024;
    sm.sharedPerBlockOptin = 163 * 1024;
    return sm;
}

Occupancy occ(const SmLimits& sm, int threads, int regs, std::size_t staticShared = 0, std::size_t dynamicShared = 0)
{
    return theoreticalOccupancy(sm, LaunchShape{threads, regs, staticShared, dynamicShared});
}

bool limited(const Occupancy& o, const std::string& by)
{
    for (const auto& b : o.limitedBy)
        if (b == by)
            return true;
    return false;
}

KernelRecord record(const std::string& name, uint64_t ns, uint32_t block, uint32_t regs, uint32_t dynamicShared = 0)
{
    KernelRecord r;
    r.name = name;
    r.startNs = 1000;
    r.endNs = 1000 + ns;
    r.gridX = 4096;
    r.gridY = r.gridZ = 1;
    r.blockX = block;
    r.blockY = r.blockZ = 1;
    r.registersPerThread = regs;
    r.dynamicSharedBytes = dynamicShared;
    return r;
}

} // namespace

TEST_CASE("full occupancy: 256 threads of 32 registers fill an SM with 8 blocks")
{
    for (const SmLimits& sm : {sm90(), sm80()}) {
        const Occupancy o = occ(sm, 256, 32);
        REQUIRE(o.ok());
        CHECK(o.activeBlocksPerSm == 8);
        CHECK(o.activeWarpsPerSm == 64);
        CHECK(o.maxWarpsPerSm == 64);
        CHECK(o.fraction() == doctest::Approx(1.0));
        CHECK(limited(o, "warps"));
    }
}

TEST_CASE("registers bind: 64 per thread halve it, 40 leave three quarters, 255 an eighth")
{
    const SmLimits sm = sm90();
    // 64 × 32 = 2,048 registers a warp: 32 warps, 4 blocks of 8.
    Occupancy o = occ(sm, 256, 64);
    CHECK(o.activeBlocksPerSm == 4);
    CHECK(o.fraction() == doctest::Approx(0.5));
    CHECK(o.limitedBy.front() == "registers");
    CHECK(o.blocksByRegisters == 4);
    CHECK(o.blocksByWarps == 8);
    // 40 × 32 = 1,280 a warp: 12 warps in each 16,384-register partition, 48 warps, 6 blocks.
    o = occ(sm, 256, 40);
    CHECK(o.activeBlocksPerSm == 6);
    CHECK(o.activeWarpsPerSm == 48);
    CHECK(o.fraction() == doctest::Approx(0.75));
    // 255 rounds to 256 × 32 = 8,192 a warp: 8 warps, 2 blocks of 4.
    o = occ(sm, 128, 255);
    CHECK(o.activeBlocksPerSm == 2);
    CHECK(o.fraction() == doctest::Approx(0.125));
    // 72 × 32 = 2,304 a warp (a multiple of 256): 7 warps per partition, 28 warps, 7 blocks of 4.
    o = occ(sm80(), 128, 72);
    CHECK(o.activeBlocksPerSm == 7);
    CHECK(o.fraction() == doctest::Approx(28.0 / 64));
    // 512 threads of 128: 4,096 a warp, 16 warps: one block.
    o = occ(sm, 512, 128);
    CHECK(o.activeBlocksPerSm == 1);
    CHECK(o.fraction() == doctest::Approx(0.25));
}

TEST_CASE("warps and blocks bind: big blocks, odd blocks, tiny blocks")
{
    const SmLimits sm = sm90();
    Occupancy o = occ(sm, 1024, 16); // 32 warps a block: 2 blocks
    CHECK(o.activeBlocksPerSm == 2);
    CHECK(o.fraction() == doctest::Approx(1.0));
    CHECK(o.limitedBy == std::vector<std::string>{"warps"});
    o = occ(sm, 96, 32); // 3 warps a block: 21 blocks, 63 of 64 warps
    CHECK(o.activeBlocksPerSm == 21);
    CHECK(o.activeWarpsPerSm == 63);
    o = occ(sm, 32, 16); // one warp a block: the SM's 32 blocks
    CHECK(o.activeBlocksPerSm == 32);
    CHECK(o.fraction() == doctest::Approx(0.5));
    CHECK(limited(o, "blocks"));
}

TEST_CASE("shared memory binds: 48 KiB of dynamic shared memory a block, the carveouts of sm_90 and sm_80")
{
    // (48 + 1) KiB a block: 228 KiB hold 4 on sm_90, 164 KiB hold 3 on sm_80.
    Occupancy o = occ(sm90(), 128, 32, 0, 48 * 1024);
    CHECK(o.activeBlocksPerSm == 4);
    CHECK(o.fraction() == doctest::Approx(0.25));
    CHECK(o.limitedBy == std::vector<std::string>{"shared_memory"});
    o = occ(sm80(), 128, 32, 0, 48 * 1024);
    CHECK(o.activeBlocksPerSm == 3);
    CHECK(o.fraction() == doctest::Approx(12.0 / 64));
    // Static shared memory counts the same: 100 KiB static leaves 2 blocks on sm_90, 1 on sm_80.
    CHECK(occ(sm90(), 128, 32, 100 * 1024).activeBlocksPerSm == 2);
    CHECK(occ(sm80(), 128, 32, 100 * 1024).activeBlocksPerSm == 1);
    // Above the 48 KiB default only with the opt-in a launch that ran must have had: still counted.
    CHECK(occ(sm90(), 256, 32, 0, 200 * 1024).activeBlocksPerSm == 1);
}

TEST_CASE("what cannot be computed says why")
{
    CHECK_FALSE(occ(SmLimits{}, 256, 32).ok());
    CHECK_FALSE(occ(sm90(), 0, 32).ok());
    CHECK_FALSE(occ(sm90(), 2048, 32).ok()); // more threads than a block may have
    const Occupancy o = occ(sm90(), 256, 32, 0, 300 * 1024);
    CHECK_FALSE(o.ok());
    CHECK(occupancyJson(o).contains("error"));
}

TEST_CASE("occupancyJson carries the numbers and the binding limits")
{
    const nlohmann::json j = occupancyJson(occ(sm90(), 256, 64));
    CHECK(j.at("active_blocks_per_sm") == 4);
    CHECK(j.at("active_warps_per_sm") == 32);
    CHECK(j.at("max_warps_per_sm") == 64);
    CHECK(j.at("fraction").get<double>() == doctest::Approx(0.5));
    CHECK(j.at("limited_by") == nlohmann::json::array({"registers"}));
    CHECK(j.at("blocks_by").at("warps") == 8);
}

TEST_CASE("launches: one row per kernel and configuration, the longest first, with its occupancy")
{
    const SmLimits sm = sm90();
    const std::vector<KernelRecord> records = {
        record("relu_bias_add", 100, 256, 26), record("cudnn_conv", 900, 128, 128, 48 * 1024),
        record("relu_bias_add", 150, 256, 26), record("relu_bias_add", 50, 1024, 26)};
    std::size_t omitted = 99;
    const nlohmann::json rows = kernelLaunches(
        records, [](const std::string& n) { return n == "relu_bias_add"; }, &sm, "", &omitted);
    CHECK(omitted == 0);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].at("name") == "cudnn_conv");
    CHECK(rows[0].at("custom") == false);
    CHECK(rows[0].at("dynamic_shared_bytes") == 48 * 1024);
    CHECK(rows[0].at("occupancy").at("limited_by").at(0) == "registers");
    CHECK(rows[1].at("name") == "relu_bias_add");
    CHECK(rows[1].at("custom") == true);
    CHECK(rows[1].at("calls") == 2);
    CHECK(rows[1].at("time_ns") == 250);
    CHECK(rows[1].at("grid") == nlohmann::json::array({4096, 1, 1}));
    CHECK(rows[1].at("block") == nlohmann::json::array({256, 1, 1}));
    CHECK(rows[1].at("registers") == 26);
    CHECK(rows[1].at("occupancy").at("active_blocks_per_sm") == 8);
    CHECK(rows[2].at("block") == nlohmann::json::array({1024, 1, 1}));
    CHECK(rows[2].at("occupancy").at("active_blocks_per_sm") == 2);
    CHECK_FALSE(rows[1].contains("shared_carveout_bytes")); // not reported: not invented

    const nlohmann::json noSm = kernelLaunches(
        records, [](const std::string&) { return false; }, nullptr, "no GPU", nullptr);
    CHECK(noSm[0].at("occupancy").at("error") == "no GPU");
}

TEST_CASE("launches: at most kMaxLaunchRows rows, the rest counted")
{
    std::vector<KernelRecord> records;
    for (uint32_t i = 0; i < kMaxLaunchRows + 5; ++i)
        records.push_back(record("k" + std::to_string(i), 10 + i, 128, 32));
    std::size_t omitted = 0;
    const nlohmann::json rows = kernelLaunches(
        records, [](const std::string&) { return false; }, nullptr, "", &omitted);
    CHECK(rows.size() == kMaxLaunchRows);
    CHECK(omitted == 5);
    CHECK(rows[0].at("name") == "k" + std::to_string(kMaxLaunchRows + 4)); // the longest
}
