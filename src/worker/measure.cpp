#include "measure.hpp"

#include "device_info.hpp"

// Only for the L2 flush buffer: allocated by torch's caching allocator and zeroed by its fill
// kernel, on the stream the timed calls use.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace kwb::measure {
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

/// CUDA events around each call on the legacy default stream, which is the stream torch and
/// kb.launch use here; the flush buffer (if any) is zeroed before each timed call.
Samples timeCuda(const PrepareCall& prepare, int warmup, int trials, at::Tensor* flushBuffer)
{
    for (int i = 0; i < warmup; ++i)
        prepare(-1)();
    cudaEvent_t start = nullptr, stop = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    Samples st;
    for (int i = 0; i < trials; ++i) {
        Call call = prepare(i);
        if (flushBuffer)
            flushBuffer->zero_();
        cudaEventRecord(start, nullptr);
        call();
        cudaEventRecord(stop, nullptr);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        st.ms.push_back(ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return st;
}

Samples timeCpu(const PrepareCall& prepare, int warmup, int trials)
{
    for (int i = 0; i < warmup; ++i)
        prepare(-1)();
    Samples st;
    for (int i = 0; i < trials; ++i) {
        Call call = prepare(i);
        const auto t0 = Clock::now();
        call();
        st.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return st;
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
    j["mean_ms"] = mean;
    j["median_ms"] = median;
    j["std_ms"] = s.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0;
    j["min_ms"] = s.front();
    j["max_ms"] = s.back();
    j["trials"] = s.size();
    return j;
}

double Samples::statistic(const std::string& which) const
{
    const json j = toJson();
    return which == "median" ? j.value("median_ms", 0.0) : j.value("mean_ms", 0.0);
}

json Comparison::toJson() const
{
    return {{"reference", reference.toJson()}, {"candidate", candidate.toJson()}, {"clock", clock}};
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
    if (settings.cuda) {
        out.clock = "cuda_events";
        at::Tensor flush;
        if (settings.l2Flush) {
            const int64_t l2 = deviceFacts(0).value("l2_bytes", int64_t(64) << 20);
            flush = at::empty({2 * l2}, at::TensorOptions().dtype(at::kByte).device(at::Device(at::kCUDA)));
        }
        out.reference = timeCuda(reference, settings.warmup, settings.trials, settings.l2Flush ? &flush : nullptr);
        out.candidate = timeCuda(candidate, settings.warmup, settings.trials, settings.l2Flush ? &flush : nullptr);
    } else {
        out.clock = "steady_clock";
        out.reference = timeCpu(reference, settings.warmup, settings.trials);
        out.candidate = timeCpu(candidate, settings.warmup, settings.trials);
    }
    return out;
}

} // namespace kwb::measure
