#pragma once
// Timing of the reference and the candidate: the L2 flush, the warm-ups, the timed trials and
// their statistics, in one unit the evaluator calls (its `timing` stage) and that a better
// measurement (nvbench's: noise-based stopping, throttle detection) can replace. The interface is
// torch-free: what is timed comes in as calls.
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

struct Settings {
    bool cuda = false;  ///< CUDA events on the legacy default stream; else the steady clock
    int warmup = 3;     ///< untimed calls first (cuDNN/cuBLAS handles, algorithm choice, caches)
    int trials = 100;
    bool l2Flush = true;             ///< CUDA only: a buffer of twice the L2 size zeroed before each call
    std::string statistic = "mean";  ///< "mean" or "median": what the speedup compares
};

/// The times of one series of calls, in milliseconds.
struct Samples {
    std::vector<double> ms;
    /// mean_ms, median_ms, std_ms (sample), min_ms, max_ms, trials; {} without samples.
    nlohmann::json toJson() const;
    /// The named statistic ("median", else the mean); 0 without samples.
    double statistic(const std::string& which) const;
};

/// The reference and the candidate, timed the same way one after the other.
struct Comparison {
    Samples reference, candidate;
    std::string clock;  ///< "cuda_events" or "steady_clock"
    /// {"reference","candidate","clock"}: the response's `timing`.
    nlohmann::json toJson() const;
    /// reference / candidate under `statistic`; none where the candidate's time is 0.
    std::optional<double> speedup(const std::string& statistic) const;
};

/// Times `reference`, then `candidate`. A CUDA fault during the calls is left pending for the
/// caller to check (the calls are torch's and may throw; so may this).
Comparison compare(const PrepareCall& reference, const PrepareCall& candidate, const Settings& settings);

} // namespace kwb::measure
