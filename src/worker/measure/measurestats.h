#pragma once
// The arithmetic of a measurement, without torch or CUDA (docs/decisions.md "Measuring like
// nvbench"): the speed-up's 95 % interval, the stopping rule on noise, the throttle filter and
// the key under which a worker reuses a reference's timing. measure.cpp runs the GPU side.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kwb::measure {

/// How `timing` measures (a profile setting, announced by `hello`).
struct Method
{
    /// "adaptive": cold samples of the reference and the candidate interleaved (ABBA), until the
    /// speed-up's interval is within `target`; "fixed": KernelBench's protocol, `warmup` untimed
    /// calls then `trials` timed calls of the reference, then the same of the candidate.
    std::string kind = "adaptive";
    int warmup = 3; ///< untimed calls (adaptive: pairs) before the timed ones, at least
    /// adaptive: warm-up pairs go on until they took this much wall time too, so that a short,
    /// launch-bound call warms up over many calls (its launch rate settles) while a long one needs
    /// only `warmup` pairs after the correctness trials have run it already
    double minWarmupMs = 0;
    int trials = 100;        ///< fixed: the timed calls of each; adaptive: the most pairs (maxSamples)
    int minSamples = 10;     ///< adaptive: pairs before the rule may stop (nvbench: 10)
    double minGpuMs = 20;    ///< adaptive: summed GPU time of the pairs kept before it may stop
    double maxWallMs = 1500; ///< adaptive: wall time of the timing loop after which it stops
    double target = 0.01;    ///< adaptive: the interval's relative half-width to reach (±1 %)
    double throttleThreshold =
        0.75; ///< a sample whose SM clock is below this share of the default is throttled (nvbench: 75 %)
    bool adaptive() const { return kind == "adaptive"; }
    nlohmann::json toJson() const;
};

/// Student's t quantile t_{0.975, df}: exact table to df 30, the Cornish–Fisher expansion above
/// (error < 1e-4 there); df < 1 gives +inf (no interval from one pair).
double tQuantile975(int df);

/// A speed-up with its 95 % interval: value = mean(reference) / mean(candidate) (the statistic
/// KernelBench compares), interval from the delta method on log(value):
///   var(log R) ≈ s_r²/(n·m_r²) + s_c²/(n·m_c²) − 2·cov(r,c)/(n·m_r·m_c)     (paired)
/// without the covariance term for unpaired series (each its own n), and value·exp(±t·se) as the
/// interval. Pairing subtracts the drift the two sides share (the covariance of ABBA pairs).
struct SpeedupInterval
{
    double value = 0, low = 0, high = 0;
    int samples = 0; ///< pairs (paired) or the smaller series' length
    /// Set by pairedInterval: the relative half-widths of its two parts and the batches' count.
    int batches = 0;
    double iidHalfWidth = 0, batchHalfWidth = 0;
    /// The larger of high/value − 1 and 1 − low/value: what the stopping rule compares.
    double relativeHalfWidth() const;
    nlohmann::json toJson() const; ///< {value, low, high, level: 0.95, relative_half_width}
};
/// Nullopt where a side is empty, its mean is not positive, or (paired) the lengths differ.
std::optional<SpeedupInterval> speedupInterval(const std::vector<double>& referenceMs,
                                               const std::vector<double>& candidateMs, bool paired);

/// The batch-means interval of paired series: the pairs cut, in order, into batches of `m` pairs
/// (m even, so each holds whole ABBA blocks: m = 2·max(1, ⌊n / (2·kMaxBatches)⌋), i.e. 5 to 19
/// batches from 10 pairs on), each batch's two means taken as one pair of speedupInterval (paired,
/// df = batches − 1), its variance scaled by (batches·m)/n for the n ≥ batches·m pairs of the point
/// value, which stays mean(r)/mean(c) over all pairs. Noise that lasts longer than a pair (a drifting
/// CPU clock under launch-bound work) is averaged within a batch and shows between batches, where
/// the per-pair formula treats it as independent and comes out too narrow. Nullopt for fewer than
/// 3 batches or unequal lengths.
inline constexpr int kMaxBatches = 10;
std::optional<SpeedupInterval> batchMeansInterval(const std::vector<double>& referenceMs,
                                                  const std::vector<double>& candidateMs);

/// The adaptive method's interval: the wider of the per-pair (iid) interval and the batch-means
/// one, both centred on mean(r)/mean(c); batches, iidHalfWidth and batchHalfWidth say which was
/// wider. Only the iid one where batch means are not computable yet (fewer than 6 pairs).
std::optional<SpeedupInterval> pairedInterval(const std::vector<double>& referenceMs,
                                              const std::vector<double>& candidateMs);

/// Why an adaptive measurement stopped (the response's `timing.stop_reason`).
enum class StopReason { None, TargetReached, MaxSamples, MaxTime, FixedTrials };
const char* stopReasonName(StopReason r); ///< "target_reached", "max_samples", "max_time", "fixed_trials", ""

/// The stopping rule after each kept pair: target reached once there are at least minSamples
/// pairs and minGpuMs of GPU time and the interval is within the target; otherwise max_samples at
/// `trials` pairs, max_time past maxWallMs; otherwise None (go on). `interval` is that of the
/// pairs kept so far (nullopt: not computable yet).
StopReason stopRule(const Method& m, int pairs, double gpuMs, double wallMs,
                    const std::optional<SpeedupInterval>& interval);

/// Whether a sample ran throttled: its SM clock (measured over the sample) below
/// threshold × the device's default SM clock. A missing measurement (≤ 0) is not throttled.
bool throttled(double smClockMhz, double defaultClockMhz, double threshold);

/// One interleaved pair: the two times and each sample's measured SM clock (0: not measured).
struct Pair
{
    double referenceMs = 0, candidateMs = 0;
    double referenceClockMhz = 0, candidateClockMhz = 0;
};
/// The pairs to keep: those where neither sample ran throttled; `dropped` receives the count of
/// the others. Dropping the whole pair keeps the kept pairs paired.
std::vector<Pair> keepUnthrottled(const std::vector<Pair>& pairs, double defaultClockMhz, double threshold,
                                  int* dropped);

/// Whether pair i runs the reference first: ABBA order (R C, C R, R C, …), so a linear drift
/// within two pairs lands on both sides equally.
inline bool referenceFirst(int pair)
{
    return pair % 2 == 0;
}

/// What a cached reference timing depends on: the same task, scale, timing inputs (seed), profile
/// settings (its JSON, which holds the method), the device and its clocks. A change of any
/// invalidates the cache (measure.cpp's ReferenceCache).
struct ReuseKey
{
    std::string task, scale;
    uint64_t seed = 0;
    std::string profile; ///< the profile's settings as JSON text (dump())
    int device = 0;
    int defaultClockMhz = 0; ///< the device's default SM clock
    int memoryClockMhz = 0;
    int inputSets = 0; ///< measure::timingSetCount's answer: the inputs the calls rotate over
    bool operator==(const ReuseKey& o) const;
    bool operator!=(const ReuseKey& o) const { return !(*this == o); }
};

/// The reference's kept samples under a key, for the next candidate of the same key: it then
/// times a few fresh reference samples interleaved with its own (ReuseCheck) and pools them with
/// these only when they agree.
struct CachedReference
{
    ReuseKey key;
    std::vector<double> ms;
};

/// Whether fresh reference samples agree with a cached series: the two means' ratio has a 95 %
/// interval (unpaired delta method) that contains 1 within `tolerance` (its half-width is ignored
/// beyond that: the cache is only trusted when the two are indistinguishable at that precision).
bool referenceAgrees(const std::vector<double>& cachedMs, const std::vector<double>& freshMs, double tolerance);

} // namespace kwb::measure
