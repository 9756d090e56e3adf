#include "worker/measure/measure.h"

#include "core/protocol/protocolnames.h"

#include "worker/device/deviceinfo.h"
#include "worker/measure/clockprobe.h"
#include "worker/measure/cpuaffinity.h"

// Only for the L2 flush buffer: allocated by torch's caching allocator and zeroed by its fill
// kernel, on the stream the timed calls use.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>

namespace kwb::measure {
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// The process's clock probe, made on first use; null (with the reason kept) where it cannot be.
ClockProbe* processProbe(std::string* why)
{
    static std::string reason;
    static std::unique_ptr<ClockProbe> probe = [] {
        int ordinal = 0;
        cudaGetDevice(&ordinal);
        return ClockProbe::create(ordinal, &reason);
    }();
    *why = probe ? "" : reason;
    return probe.get();
}

/// Times one call at a time: CUDA events on the legacy default stream (the stream torch and
/// kb.launch use here), the flush buffer zeroed before each call and the clock probe around it;
/// or the steady clock on the CPU.
struct Sampler
{
    bool cuda = false;
    at::Tensor* flush = nullptr;
    ClockProbe* probe = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;

    Sampler(bool c, at::Tensor* f, ClockProbe* p)
        : cuda(c)
        , flush(f)
        , probe(p)
    {
        if (cuda) {
            cudaEventCreate(&start);
            cudaEventCreate(&stop);
        }
    }
    ~Sampler()
    {
        if (cuda) {
            cudaEventDestroy(start);
            cudaEventDestroy(stop);
        }
    }
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    /// One sample of `prepare(index)`'s call: its time in ms, and the SM clock over it (0: none).
    double sample(const PrepareCall& prepare, int index, double* clockMhz)
    {
        Call call = prepare(index);
        *clockMhz = 0;
        if (!cuda) {
            const auto t0 = Clock::now();
            call();
            return msSince(t0);
        }
        if (flush)
            flush->zero_();
        if (probe)
            probe->record(0);
        cudaEventRecord(start, nullptr);
        call();
        cudaEventRecord(stop, nullptr);
        if (probe)
            probe->record(1);
        cudaStreamSynchronize(nullptr);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        if (probe)
            *clockMhz = probe->clockMhz();
        return ms;
    }
};

/// The timing thread on its CPU for the measurement (cpuaffinity.h): one CPU of the GPU's NUMA
/// node, the same for every process timing on that GPU, nice lowered by 5 where allowed.
std::unique_ptr<affinity::ThreadPin> pinTimingThread()
{
    int ordinal = 0;
    cudaGetDevice(&ordinal);
    struct Choice
    {
        int cpu = -1;
        bool local = false;
    };
    static std::map<int, Choice> chosen; // sysfs is read once per device and process
    if (!chosen.count(ordinal)) {
        const std::string bus = deviceFacts(ordinal).value(ProtocolNames::Key::kPciBusId, std::string());
        const std::vector<int> local = affinity::localCpus(bus);
        const int cpu = affinity::timingCpu(affinity::processCpus(), local, affinity::gpuRankOnNode(bus));
        chosen[ordinal] = {cpu, std::binary_search(local.begin(), local.end(), cpu)};
    }
    const Choice c = chosen[ordinal];
    auto pin =
        std::make_unique<affinity::ThreadPin>(c.cpu, 5, c.cpu < 0 ? "the CPUs this process may use are unknown" : "");
    pin->numaLocal = c.local;
    return pin;
}

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// KernelBench's protocol: warm-ups and trials of the reference, then of the candidate. Throttled
/// samples are counted, not dropped (the method's fidelity is its point).
void measureFixed(Comparison& out, Sampler& s, const PrepareCall& reference, const PrepareCall& candidate,
                  const Settings& settings, std::vector<double>* clocks)
{
    const Method& m = settings.method;
    const double defaultMhz = s.probe ? s.probe->defaultClockMhz() : 0;
    if (settings.quiet)
        out.quietWaitMs = settings.quiet();
    for (const auto* side : {&reference, &candidate}) {
        Samples& into = side == &reference ? out.reference : out.candidate;
        double clk = 0;
        const auto tWarm = Clock::now();
        for (int i = 0; i < m.warmup; ++i)
            s.sample(*side, -1, &clk);
        out.warmupMs += msSince(tWarm);
        for (int i = 0; i < m.trials; ++i) {
            into.ms.push_back(s.sample(*side, i, &clk));
            if (clk > 0)
                clocks->push_back(clk);
            out.throttled += throttled(clk, defaultMhz, m.throttleThreshold);
        }
    }
    out.stop = StopReason::FixedTrials;
    out.interval = speedupInterval(out.reference.ms, out.candidate.ms, false);
}

/// nvbench's shape: pairs of cold samples in ABBA order until stopRule says stop; a pair with a
/// throttled sample is dropped and counted. With a matching cache only every kReuseStride-th pair
/// times the reference (Settings::cache).
void measureAdaptive(Comparison& out, Sampler& s, const PrepareCall& reference, const PrepareCall& candidate,
                     const Settings& settings, std::vector<double>* clocks)
{
    const Method& m = settings.method;
    const double defaultMhz = s.probe ? s.probe->defaultClockMhz() : 0;
    const auto t0 = Clock::now();
    double clk = 0;
    for (int i = 0; i < m.warmup || msSince(t0) < m.minWarmupMs; ++i) {
        s.sample(reference, -1, &clk);
        s.sample(candidate, -1, &clk);
        ++out.warmupPairs;
    }
    out.warmupMs = msSince(t0);
    // The GPU to itself from here on; the warm-up above ran while the other work drained.
    double waited = 0;
    if (settings.quiet) {
        waited = out.quietWaitMs = settings.quiet();
        if (waited > kRewarmAfterWaitMs) {
            const auto tRewarm = Clock::now();
            s.sample(reference, -1, &clk);
            s.sample(candidate, -1, &clk);
            ++out.warmupPairs;
            ++out.rewarmPairs;
            out.warmupMs += msSince(tRewarm);
        }
    }
    const bool offered = settings.cache && settings.cache->key == settings.key && !settings.cache->ms.empty();
    bool reuse = offered;
    std::vector<double> ref, cand, pooled;
    double gpuMs = 0;
    int index = 0;    // the candidate's timed call, for input rotation and output checks
    int refIndex = 0; // the reference's own count: with reuse it runs every kReuseStride-th pair and must still rotate
    for (int pair = 0;; ++pair) {
        const int stride = reuse ? kReuseStride : 1;
        const bool timeRef = pair % stride == 0;
        const bool refFirst = referenceFirst(pair / stride);
        double r = 0, rc = 0, c = 0, cc = 0;
        if (timeRef && refFirst)
            r = s.sample(reference, refIndex++, &rc);
        c = s.sample(candidate, index, &cc);
        if (timeRef && !refFirst)
            r = s.sample(reference, refIndex++, &rc);
        ++index;
        if (throttled(rc, defaultMhz, m.throttleThreshold) || throttled(cc, defaultMhz, m.throttleThreshold)) {
            ++out.throttled;
        } else {
            cand.push_back(c);
            gpuMs += c;
            if (cc > 0)
                clocks->push_back(cc);
            if (timeRef) {
                ref.push_back(r);
                gpuMs += r;
                if (rc > 0)
                    clocks->push_back(rc);
            }
        }
        std::optional<SpeedupInterval> interval;
        if (!reuse) {
            interval = pairedInterval(ref, cand);
        } else if (ref.size() >= 5) {
            // Pooled only while the fresh reference samples agree with the cached ones; else the
            // cache is dropped and the measurement starts again, paired in every pair.
            if (!referenceAgrees(settings.cache->ms, ref, m.target)) {
                reuse = false;
                out.reuseRejected = true;
                ref.clear();
                cand.clear();
                gpuMs = 0;
                continue;
            }
            pooled = settings.cache->ms;
            pooled.insert(pooled.end(), ref.begin(), ref.end());
            interval = speedupInterval(pooled, cand, false);
        }
        out.stop = stopRule(m, int(cand.size()), gpuMs, msSince(t0) - waited, interval);
        if (out.stop != StopReason::None) {
            out.interval = interval;
            break;
        }
    }
    if (reuse) {
        out.referenceReused = pooled.empty() ? 0 : int(settings.cache->ms.size());
        out.reference.ms = pooled.empty() ? ref : pooled;
        if (pooled.empty()) // stopped before five fresh reference samples: no pooled interval
            out.interval = speedupInterval(ref, cand, false);
    } else {
        out.reference.ms = ref;
    }
    out.candidate.ms = cand;
    if (settings.cache) {
        // What the next candidate of this key reuses: at most the newest 4 × trials samples.
        settings.cache->key = settings.key;
        std::vector<double> keep = out.reference.ms;
        const size_t most = size_t(std::max(1, 4 * m.trials));
        if (keep.size() > most)
            keep.erase(keep.begin(), keep.end() - long(most));
        settings.cache->ms = keep;
    }
}

} // namespace

json Samples::toJson() const
{
    json j;
    if (ms.empty())
        return j;
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    const double n = double(s.size());
    const double mean = std::accumulate(s.begin(), s.end(), 0.0) / n;
    double var = 0;
    for (double x : s)
        var += (x - mean) * (x - mean);
    const double median = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
    j[ProtocolNames::Key::kMeanMs] = mean;
    j[ProtocolNames::Key::kMedianMs] = median;
    j[ProtocolNames::Key::kStdMs] = s.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0;
    j[ProtocolNames::Key::kMinMs] = s.front();
    j[ProtocolNames::Key::kMaxMs] = s.back();
    j[ProtocolNames::Field::kTrials] = s.size();
    return j;
}

double Samples::statistic(const std::string& which) const
{
    const json j = toJson();
    return which == "median" ? j.value(ProtocolNames::Key::kMedianMs, 0.0) : j.value(ProtocolNames::Key::kMeanMs, 0.0);
}

json Comparison::toJson() const
{
    json j = {{ProtocolNames::Key::kReference, reference.toJson()},
              {ProtocolNames::Key::kCandidate, candidate.toJson()},
              {"clock", clock},
              {ProtocolNames::Key::kMethod, method},
              {ProtocolNames::Key::kStopReason, stopReasonName(stop)},
              {ProtocolNames::Key::kSamples, candidate.ms.size()},
              {ProtocolNames::Key::kThrottled, throttled},
              {ProtocolNames::Key::kSpeedupInterval, interval ? interval->toJson() : json(nullptr)},
              {ProtocolNames::Key::kReferenceReused, referenceReused},
              {"reuse_rejected", reuseRejected},
              {"wall_ms", wallMs},
              {"setup_ms", setupMs},
              {"warmup_ms", warmupMs},
              {"warmup_pairs", warmupPairs},
              {"quiet_wait_ms", quietWaitMs},
              {"rewarm_pairs", rewarmPairs}};
    if (!cpu.is_null())
        j["cpu"] = cpu;
    if (clockProbe.empty())
        j["sm_clock_mhz"] = {{"default", defaultClockMhz}, {"median", medianClockMhz}};
    else
        j["sm_clock_mhz"] = {
            {"default", defaultClockMhz}, {"median", nullptr}, {ProtocolNames::Key::kReason, clockProbe}};
    return j;
}

std::optional<double> Comparison::speedup(const std::string& stat) const
{
    const double c = candidate.statistic(stat);
    if (c > 0)
        return reference.statistic(stat) / c;
    return std::nullopt;
}

Comparison compare(const PrepareCall& reference, const PrepareCall& candidate, const Settings& settings)
{
    Comparison out;
    out.method = settings.method.adaptive() ? "adaptive" : "fixed";
    out.clock = settings.cuda ? "cuda_events" : "steady_clock";
    const auto tSetup = Clock::now();
    at::Tensor flush;
    ClockProbe* probe = nullptr;
    std::unique_ptr<affinity::ThreadPin> pin;
    if (settings.cuda) {
        pin = pinTimingThread();
        if (settings.l2Flush) {
            const int64_t l2 = deviceFacts(0).value(ProtocolNames::Key::kL2Bytes, int64_t(64) << 20);
            flush = at::empty({2 * l2}, at::TensorOptions().dtype(at::kByte).device(at::Device(at::kCUDA)));
        }
        probe = processProbe(&out.clockProbe);
        if (probe)
            out.defaultClockMhz = probe->defaultClockMhz();
    } else {
        out.clockProbe = "no SM clock on the CPU";
    }
    Sampler sampler(settings.cuda, settings.cuda && settings.l2Flush ? &flush : nullptr, probe);
    if (pin)
        out.cpu = pin->toJson();
    out.setupMs = msSince(tSetup);
    std::vector<double> clocks;
    const auto t0 = Clock::now();
    if (settings.method.adaptive())
        measureAdaptive(out, sampler, reference, candidate, settings, &clocks);
    else
        measureFixed(out, sampler, reference, candidate, settings, &clocks);
    out.wallMs = msSince(t0) - out.quietWaitMs;
    out.medianClockMhz = median(clocks);
    return out;
}

void warmCudaTimer()
{
    std::string why;
    (void)processProbe(&why); // null where it cannot be made: compare() says why then
    cudaEvent_t start = nullptr, stop = nullptr;
    if (cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess) {
        cudaEventRecord(start, nullptr);
        cudaEventRecord(stop, nullptr);
        cudaEventSynchronize(stop);
    }
    if (start)
        cudaEventDestroy(start);
    if (stop)
        cudaEventDestroy(stop);
    cudaGetLastError();
}

} // namespace kwb::measure
