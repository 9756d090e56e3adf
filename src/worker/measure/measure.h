#pragma once
// Timing of the reference and the candidate, in one unit the evaluator calls (its `timing`
// stage): cold samples (the L2 flush), and either nvbench's shape (reference and candidate
// interleaved ABBA, stopping once the speed-up's 95 % interval is within a target, throttled
// samples dropped) or KernelBench's fixed trials (measurestats.h has the arithmetic). The
// interface is torch-free: what is timed comes in as calls.
#include "worker/measure/measurestats.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kwb::measure {

/// One call to time. Building its arguments (fresh copies of the inputs) is not timed: a
/// `PrepareCall` does that and returns the call, which the timer then brackets.
using Call = std::function<void()>;
/// `index` counts the timed calls from 0; warm-up calls get -1. The evaluator rotates input sets
/// by it and checks chosen calls' outputs in the next prepare (outside the timed bracket).
using PrepareCall = std::function<Call(int index)>;

/// How many input sets the timed calls rotate over (issue 11: a candidate that remembers its last
/// input cannot replay it when consecutive calls differ): up to 4, as many as fit in a quarter of
/// the free device (or host) memory at `setBytes` each (its inputs and its reference output), at
/// least 2; 1 only where two sets do not fit in the free memory at all (the response says so).
inline int timingSetCount(double setBytes, double freeBytes)
{
    constexpr int kMost = 4;
    if (setBytes <= 0)
        return kMost;
    const double fit = freeBytes / 4 / setBytes;
    if (fit >= kMost)
        return kMost;
    if (fit >= 2)
        return int(fit);
    return 2 * setBytes <= freeBytes ? 2 : 1;
}

/// The timed calls (0-based) whose outputs are checked for set `set` of `sets` when calls rotate
/// round robin over `trials` calls: the first and the last call on that set.
inline std::vector<int> checkedCalls(int set, int sets, int trials)
{
    std::vector<int> out;
    if (set >= trials)
        return out;
    out.push_back(set);
    const int last = set + ((trials - 1 - set) / sets) * sets;
    if (last != set)
        out.push_back(last);
    return out;
}

struct Settings
{
    bool cuda = false; ///< CUDA events on the legacy default stream; else the steady clock
    /// fixed or adaptive; its warmup (untimed calls first: cuDNN/cuBLAS handles, algorithm
    /// choice, caches) and trials (fixed: the timed calls; adaptive: the most pairs)
    Method method;
    bool l2Flush = true;            ///< CUDA only: a buffer of twice the L2 size zeroed before each call
    std::string statistic = "mean"; ///< "mean" or "median": what the speedup compares
    /// Adaptive only: the reference samples of an earlier candidate under the same key, or null.
    /// When set and its key matches, only every kReuseStride-th pair times the reference; those
    /// fresh samples are pooled with the cached ones only while they agree (referenceAgrees),
    /// else the measurement falls back to timing the reference in every pair. The cache is
    /// rewritten with the reference samples this measurement ended with.
    CachedReference* cache = nullptr;
    ReuseKey key;
    /// Takes the GPU to itself (the evaluator's exclusive hold on the quiet lock) and returns how
    /// long that waited, in ms; null: nothing to take. Called once, before the first timed call:
    /// in the adaptive method after the setup and the warm-up, which run meanwhile beside the
    /// other work on the GPU whose end the wait is for (nothing they time is kept); in the fixed
    /// method before its first warm-up, as KernelBench has it. Where it waited longer than
    /// kRewarmAfterWaitMs, one more untimed pair runs before the first timed one.
    std::function<double()> quiet;
};

/// A wait for the GPU longer than this after the warm-up, and one more untimed pair runs first:
/// the GPU idled meanwhile (clocks, caches), and the first timed pair must not pay for it.
inline constexpr double kRewarmAfterWaitMs = 1.0;

/// With a reused reference: one pair in this many times the reference.
inline constexpr int kReuseStride = 4;

/// The times of one series of calls, in milliseconds.
struct Samples
{
    std::vector<double> ms;
    /// mean_ms, median_ms, std_ms (sample), min_ms, max_ms, trials; {} without samples.
    nlohmann::json toJson() const;
    /// The named statistic ("median", else the mean); 0 without samples.
    double statistic(const std::string& which) const;
};

/// The reference and the candidate, timed the same way (interleaved, or one after the other).
struct Comparison
{
    Samples reference, candidate; ///< the samples kept (throttled ones dropped in the adaptive method)
    std::string clock;            ///< "cuda_events" or "steady_clock"
    std::string method;           ///< "adaptive" or "fixed"
    StopReason stop = StopReason::None;
    std::optional<SpeedupInterval> interval; ///< of the mean ratio (delta method)
    int throttled = 0; ///< samples that ran below the throttle threshold (dropped in adaptive pairs)
    double defaultClockMhz = 0, medianClockMhz = 0; ///< 0: not measured
    std::string clockProbe;                         ///< why the SM clock was not measured, or ""
    int referenceReused = 0;                        ///< cached reference samples pooled in (0: none)
    bool reuseRejected = false;                     ///< a cache was offered but its samples disagreed with fresh ones
    double wallMs = 0;   ///< the timing loop's wall time (its warm-up included, quietWaitMs not)
    double setupMs = 0;  ///< before the loop: the flush buffer, the clock probe, the CPU pin
    double warmupMs = 0; ///< the warm-up calls
    int warmupPairs =
        0; ///< adaptive: the warm-up pairs run (at least warmup, and min_warmup_ms of them; rewarm included)
    double quietWaitMs = 0; ///< Settings::quiet's wait: neither in wallMs nor in the stopping rule's time
    int rewarmPairs = 0;    ///< adaptive: untimed pairs run after that wait (kRewarmAfterWaitMs)
    nlohmann::json cpu;     ///< where the loop's thread ran (cpuaffinity.h's ThreadPin), null on the CPU
    /// {"reference","candidate","clock","method","stop_reason","samples","throttled",
    ///  "speedup_interval",…}: the response's `timing`.
    nlohmann::json toJson() const;
    /// reference / candidate under `statistic`; none where the candidate's time is 0.
    std::optional<double> speedup(const std::string& statistic) const;
};

/// Fixed: times `reference`, then `candidate`. Adaptive: interleaves them pair by pair until the
/// stopping rule says stop. A CUDA fault during the calls is left pending for the caller to check
/// (the calls are torch's and may throw; so may this).
Comparison compare(const PrepareCall& reference, const PrepareCall& candidate, const Settings& settings);

/// What the first CUDA compare() of a process pays in its setup, paid ahead (the `warm` request):
/// the process's clock probe made (its module loaded) and a pair of CUDA events recorded once.
void warmCudaTimer();

} // namespace kwb::measure
