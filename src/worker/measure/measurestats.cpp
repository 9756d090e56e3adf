#include "worker/measure/measurestats.h"

#include "core/protocol/protocolnames.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kwb::measure {
using json = nlohmann::json;

json Method::toJson() const
{
    json j = {{ProtocolNames::Key::kKind, kind},
              {ProtocolNames::Field::kWarmup, warmup},
              {ProtocolNames::Field::kTrials, trials}};
    if (adaptive()) {
        j["min_samples"] = minSamples;
        j["min_warmup_ms"] = minWarmupMs;
        j["min_gpu_ms"] = minGpuMs;
        j["max_wall_ms"] = maxWallMs;
        j["target"] = target;
        j["order"] = "interleaved_abba";
        j["interval"] = "delta_method_paired_and_batch_means";
    } else {
        j["order"] = "reference_then_candidate";
        j["interval"] = "delta_method_unpaired";
    }
    j["throttle_threshold"] = throttleThreshold;
    return j;
}

double tQuantile975(int df)
{
    static constexpr double kTable[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                        2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                        2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                        2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
    if (df < 1)
        return std::numeric_limits<double>::infinity();
    if (df <= 30)
        return kTable[df - 1];
    const double z = 1.959963985, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, n = df;
    return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

double SpeedupInterval::relativeHalfWidth() const
{
    if (value <= 0)
        return std::numeric_limits<double>::infinity();
    return std::max(high / value - 1, 1 - low / value);
}

json SpeedupInterval::toJson() const
{
    const double half = relativeHalfWidth();
    json j = {{ProtocolNames::Key::kValue, value},
              {ProtocolNames::Key::kLow, low},
              {ProtocolNames::Key::kHigh, high},
              {ProtocolNames::Key::kLevel, 0.95},
              {ProtocolNames::Key::kSamples, samples},
              {ProtocolNames::Key::kRelativeHalfWidth, std::isfinite(half) ? json(half) : json(nullptr)}};
    if (batches > 0) {
        const auto finite = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
        j["batches"] = batches;
        j["iid_relative_half_width"] = finite(iidHalfWidth);
        j["batch_relative_half_width"] = finite(batchHalfWidth);
    }
    return j;
}

namespace {
double mean(const std::vector<double>& x)
{
    return std::accumulate(x.begin(), x.end(), 0.0) / double(x.size());
}
/// Sample covariance (n − 1); 0 for fewer than two values.
double covariance(const std::vector<double>& x, double mx, const std::vector<double>& y, double my)
{
    if (x.size() < 2)
        return 0;
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i)
        s += (x[i] - mx) * (y[i] - my);
    return s / double(x.size() - 1);
}
} // namespace

std::optional<SpeedupInterval> speedupInterval(const std::vector<double>& r, const std::vector<double>& c, bool paired)
{
    if (r.empty() || c.empty() || (paired && r.size() != c.size()))
        return std::nullopt;
    const double mr = mean(r), mc = mean(c);
    if (!(mr > 0) || !(mc > 0))
        return std::nullopt;
    const double vr = covariance(r, mr, r, mr), vc = covariance(c, mc, c, mc);
    double varLog = 0;
    int df = 0;
    if (paired) {
        const double n = double(r.size());
        varLog = (vr / (mr * mr) + vc / (mc * mc) - 2 * covariance(r, mr, c, mc) / (mr * mc)) / n;
        df = int(r.size()) - 1;
    } else {
        varLog = vr / (double(r.size()) * mr * mr) + vc / (double(c.size()) * mc * mc);
        df = int(std::min(r.size(), c.size())) - 1; // conservative against Welch's
    }
    SpeedupInterval out;
    out.value = mr / mc;
    out.samples = int(paired ? r.size() : std::min(r.size(), c.size()));
    const double half = tQuantile975(df) * std::sqrt(std::max(0.0, varLog));
    if (!std::isfinite(half)) {
        out.low = 0;
        out.high = std::numeric_limits<double>::infinity();
    } else {
        out.low = out.value * std::exp(-half);
        out.high = out.value * std::exp(half);
    }
    return out;
}

std::optional<SpeedupInterval> batchMeansInterval(const std::vector<double>& r, const std::vector<double>& c)
{
    if (r.size() != c.size())
        return std::nullopt;
    const size_t n = r.size();
    const size_t m = 2 * std::max<size_t>(1, n / (2 * kMaxBatches));
    const size_t batches = n / m;
    if (batches < 3)
        return std::nullopt;
    std::vector<double> rb, cb;
    for (size_t b = 0; b < batches; ++b) {
        double sr = 0, sc = 0;
        for (size_t i = b * m; i < (b + 1) * m; ++i) {
            sr += r[i];
            sc += c[i];
        }
        rb.push_back(sr / double(m));
        cb.push_back(sc / double(m));
    }
    const auto ofBatches = speedupInterval(rb, cb, true);
    const double mr = mean(r), mc = mean(c);
    if (!ofBatches || !(mr > 0) || !(mc > 0))
        return std::nullopt;
    SpeedupInterval out;
    out.value = mr / mc;
    out.samples = int(n);
    const double h = std::log(ofBatches->high / ofBatches->value) * std::sqrt(double(batches * m) / double(n));
    if (!std::isfinite(h)) {
        out.low = 0;
        out.high = std::numeric_limits<double>::infinity();
    } else {
        out.low = out.value * std::exp(-h);
        out.high = out.value * std::exp(h);
    }
    out.batches = int(batches);
    return out;
}

std::optional<SpeedupInterval> pairedInterval(const std::vector<double>& r, const std::vector<double>& c)
{
    auto iid = speedupInterval(r, c, true);
    const auto batch = batchMeansInterval(r, c);
    if (!iid || !batch)
        return iid;
    SpeedupInterval out = *iid;
    out.low = std::min(iid->low, batch->low);
    out.high = std::max(iid->high, batch->high);
    out.batches = batch->batches;
    out.iidHalfWidth = iid->relativeHalfWidth();
    out.batchHalfWidth = batch->relativeHalfWidth();
    return out;
}

const char* stopReasonName(StopReason r)
{
    switch (r) {
    case StopReason::TargetReached: return "target_reached";
    case StopReason::MaxSamples: return "max_samples";
    case StopReason::MaxTime: return "max_time";
    case StopReason::FixedTrials: return "fixed_trials";
    case StopReason::None: break;
    }
    return "";
}

StopReason stopRule(const Method& m, int pairs, double gpuMs, double wallMs,
                    const std::optional<SpeedupInterval>& interval)
{
    const int enough = std::min(m.minSamples, m.trials); // a cap below the minimum wins
    if (pairs >= enough && gpuMs >= m.minGpuMs && interval && interval->relativeHalfWidth() <= m.target)
        return StopReason::TargetReached;
    if (pairs >= m.trials)
        return StopReason::MaxSamples;
    if (wallMs >= m.maxWallMs)
        return StopReason::MaxTime;
    return StopReason::None;
}

bool throttled(double smClockMhz, double defaultClockMhz, double threshold)
{
    return smClockMhz > 0 && defaultClockMhz > 0 && smClockMhz < threshold * defaultClockMhz;
}

std::vector<Pair> keepUnthrottled(const std::vector<Pair>& pairs, double defaultClockMhz, double threshold,
                                  int* dropped)
{
    std::vector<Pair> kept;
    int n = 0;
    for (const Pair& p : pairs) {
        if (throttled(p.referenceClockMhz, defaultClockMhz, threshold) ||
            throttled(p.candidateClockMhz, defaultClockMhz, threshold))
            ++n;
        else
            kept.push_back(p);
    }
    if (dropped)
        *dropped = n;
    return kept;
}

bool ReuseKey::operator==(const ReuseKey& o) const
{
    return task == o.task && scale == o.scale && seed == o.seed && profile == o.profile && device == o.device &&
           defaultClockMhz == o.defaultClockMhz && memoryClockMhz == o.memoryClockMhz && inputSets == o.inputSets;
}

bool referenceAgrees(const std::vector<double>& cachedMs, const std::vector<double>& freshMs, double tolerance)
{
    const auto ratio = speedupInterval(freshMs, cachedMs, false);
    return ratio && std::abs(ratio->value - 1) <= tolerance && ratio->low <= 1 && ratio->high >= 1;
}

} // namespace kwb::measure
