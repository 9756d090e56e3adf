#include "evaluator.hpp"

#include "analyze.hpp"
#include "candidate_parser.hpp"
#include "cuda_driver.hpp"
#include "cupti_tracer.hpp"
#include "device_info.hpp"
#include "nvrtc_compiler.hpp"
#include "protocol.hpp"
#include "script_host.hpp"

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

namespace kwb {
namespace jit = torch::jit;
using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

at::ScalarType scalarType(const std::string& dtype)
{
    if (dtype == "float32")
        return at::kFloat;
    if (dtype == "float16")
        return at::kHalf;
    if (dtype == "bfloat16")
        return at::kBFloat16;
    if (dtype == "float64")
        return at::kDouble;
    if (dtype == "int32")
        return at::kInt;
    if (dtype == "int64")
        return at::kLong;
    throw std::invalid_argument("unknown dtype " + dtype);
}

std::string shapeString(at::IntArrayRef s)
{
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i)
        out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

using ParamDict = c10::Dict<std::string, at::Tensor>;

ParamDict makeParams(const Task& task, Scale scale, at::Device device, uint64_t seed)
{
    torch::manual_seed(seed);
    ParamDict dict;
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
    for (size_t i = 0; i < task.params.size(); ++i) {
        const ParamSpec& p = task.params[i];
        const auto shape = task.paramShape(i, scale);
        at::Tensor t;
        if (p.init == "uniform_fan_in") {
            const double bound = 1.0 / std::sqrt(task.fanIn(i, scale));
            t = torch::empty(shape, opts).uniform_(-bound, bound);
        } else if (p.init == "randn") {
            t = torch::randn(shape, opts);
        } else if (p.init == "ones") {
            t = torch::ones(shape, opts);
        } else if (p.init == "zeros") {
            t = torch::zeros(shape, opts);
        } else if (p.init == "constant") {
            t = torch::full(shape, p.value, opts);
        } else {
            throw std::invalid_argument(task.id + ": unknown init " + p.init);
        }
        dict.insert(p.name, t);
    }
    return dict;
}

std::vector<c10::IValue> makeInputs(const Task& task, Scale scale, at::Device device, uint64_t seed,
                                   const std::string& generatorOverride = {})
{
    torch::manual_seed(seed);
    std::vector<c10::IValue> inputs;
    for (size_t i = 0; i < task.inputs.size(); ++i) {
        const InputSpec& in = task.inputs[i];
        if (in.kind == "float") {
            inputs.emplace_back(in.value);
        } else if (in.kind == "int") {
            inputs.emplace_back(static_cast<int64_t>(in.value));
        } else {
            const auto opts = at::TensorOptions().dtype(scalarType(in.dtype)).device(device);
            const auto shape = task.inputShape(i, scale);
            const std::string& gen = generatorOverride.empty() ? in.generator : generatorOverride;
            const bool floating = at::isFloatingType(scalarType(in.dtype));
            inputs.emplace_back(gen == "randn" && floating ? torch::randn(shape, opts) : torch::rand(shape, opts));
        }
    }
    return inputs;
}

/// Fresh copies of everything a forward may write to, so one run cannot influence another.
/// With weightsToo = false, parameters that are not buffers are passed as they are (timing).
std::vector<c10::IValue> cloneArgs(const std::vector<c10::IValue>& inputs, const ParamDict& params,
                                   const Task& task, bool weightsToo)
{
    std::vector<c10::IValue> stack;
    stack.reserve(inputs.size() + 1);
    for (const auto& v : inputs)
        stack.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
    ParamDict copy;
    for (const ParamSpec& p : task.params) {
        at::Tensor t = params.at(p.name);
        copy.insert(p.name, (weightsToo || p.buffer) ? t.clone() : t);
    }
    stack.emplace_back(copy);
    return stack;
}

/// The name of the argument (input or parameter) whose storage the output shares, or "".
std::string aliasedArgument(const at::Tensor& out, const std::vector<c10::IValue>& args, const Task& task)
{
    for (size_t i = 0; i < args.size() && i < task.inputs.size(); ++i)
        if (args[i].isTensor() && out.is_alias_of(args[i].toTensor()))
            return task.inputs[i].name;
    if (!args.empty() && args.back().isGenericDict()) {
        for (const auto& entry : args.back().toGenericDict())
            if (entry.value().isTensor() && out.is_alias_of(entry.value().toTensor()))
                return entry.key().toStringRef();
    }
    return {};
}

/// The name of the first input, or parameter that is not a buffer, that a run changed: `args`
/// are the clones the candidate got, `inputs` and `params` the originals they were cloned from.
/// Buffers (BatchNorm's running statistics) are meant to be updated and are left out.
std::string modifiedArgument(const std::vector<c10::IValue>& args, const std::vector<c10::IValue>& inputs,
                             const ParamDict& params, const Task& task)
{
    for (size_t i = 0; i < args.size() && i < inputs.size() && i < task.inputs.size(); ++i)
        if (args[i].isTensor() && inputs[i].isTensor() && !torch::equal(args[i].toTensor(), inputs[i].toTensor()))
            return task.inputs[i].name;
    if (!args.empty() && args.back().isGenericDict()) {
        const auto dict = args.back().toGenericDict();
        for (const ParamSpec& p : task.params) {
            if (p.buffer || !dict.contains(p.name))
                continue;
            const c10::IValue v = dict.at(p.name);
            if (v.isTensor() && !torch::equal(v.toTensor(), params.at(p.name)))
                return p.name;
        }
    }
    return {};
}

/// A cheap fingerprint of a tensor's bytes (their sum), taken where it lives: a reference output
/// kept on the GPU is fingerprinted when made and checked before each comparison, so a candidate
/// that writes outside its own buffers into it is named as such instead of just failing.
int64_t byteFingerprint(const at::Tensor& t)
{
    if (t.numel() == 0)
        return 0;
    at::Tensor bytes = t.contiguous().view({-1}).view(at::kByte);
    return at::sum(bytes, at::kLong).item<int64_t>();
}

struct CudaFault {
    bool any = false;
    bool sticky = false;
    std::string message;
};

/// Synchronises and reports any pending CUDA error. Errors that poison the context (illegal
/// address, launch failure, ...) are sticky: every later call fails the same way.
CudaFault syncCuda()
{
    CudaFault f;
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        f.any = true;
        f.message = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        // A second call tells a sticky error (it repeats) from a cleared one.
        f.sticky = cudaDeviceSynchronize() != cudaSuccess;
        cudaGetLastError();
    }
    return f;
}

struct Stats {
    std::vector<double> samples;
    json toJson() const
    {
        json j;
        if (samples.empty())
            return j;
        std::vector<double> s = samples;
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
    double stat(const std::string& which) const
    {
        json j = toJson();
        return which == "median" ? j.value("median_ms", 0.0) : j.value("mean_ms", 0.0);
    }
};

/// Times fn on the legacy default stream, which is the stream torch and kb.launch use here: CUDA
/// events around each call, an L2 flush (a buffer of twice the L2 size set to zero) before each.
Stats timeCuda(jit::Function& fn, const std::function<std::vector<c10::IValue>()>& makeArgs, int warmup, int trials,
               at::Tensor* flushBuffer)
{
    for (int i = 0; i < warmup; ++i)
        fn(makeArgs());
    cudaEvent_t start = nullptr, stop = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    Stats st;
    for (int i = 0; i < trials; ++i) {
        auto args = makeArgs();
        if (flushBuffer)
            flushBuffer->zero_();
        cudaEventRecord(start, nullptr);
        fn(std::move(args));
        cudaEventRecord(stop, nullptr);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        st.samples.push_back(ms);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return st;
}

Stats timeCpu(jit::Function& fn, const std::function<std::vector<c10::IValue>()>& makeArgs, int warmup, int trials)
{
    for (int i = 0; i < warmup; ++i)
        fn(makeArgs());
    Stats st;
    for (int i = 0; i < trials; ++i) {
        auto args = makeArgs();
        auto t0 = Clock::now();
        fn(std::move(args));
        st.samples.push_back(msSince(t0));
    }
    return st;
}

/// Flags references whose output cannot tell a right candidate from a wrong one.
json degenerateCheck(const std::vector<at::Tensor>& refs)
{
    if (refs.empty() || refs[0].numel() == 0)
        return nullptr;
    const at::Tensor& r = refs[0];
    const double zeroFraction = (r == 0).sum().item<double>() / double(r.numel());
    json d;
    if (zeroFraction >= 0.999) {
        d = {{"kind", zeroFraction == 1.0 ? "all_zero" : "mostly_zero"}, {"zero_fraction", zeroFraction}};
        d["message"] = zeroFraction == 1.0 ? "every output element of the reference is 0: a candidate returning zeros passes"
                                           : "almost every output element of the reference is 0: a candidate returning zeros "
                                             "nearly passes, and correctness says little";
        return d;
    }
    if ((r.max() == r.min()).item<bool>())
        return {{"kind", "constant"}, {"zero_fraction", zeroFraction},
                {"message", "the reference output is one constant value"}};
    if (refs.size() > 1 && refs[0].sizes() == refs[1].sizes() && torch::equal(refs[0], refs[1]))
        return {{"kind", "input_independent"}, {"zero_fraction", zeroFraction},
                {"message", "two different inputs gave the same reference output"}};
    return nullptr;
}

struct Comparison {
    bool ok = true;
    std::string reason;
    double maxAbs = 0, maxRel = 0;
    int64_t mismatches = 0;
    json detail;
};

Comparison compareOutputs(const at::Tensor& cand, const at::Tensor& ref, double atol, double rtol)
{
    Comparison c;
    if (cand.sizes() != ref.sizes()) {
        c.ok = false;
        c.reason = "output shape " + shapeString(cand.sizes()) + ", expected " + shapeString(ref.sizes());
        return c;
    }
    if (cand.scalar_type() != ref.scalar_type()) {
        c.ok = false;
        c.reason = std::string("output dtype ") + c10::toString(cand.scalar_type()) + ", expected " +
                   c10::toString(ref.scalar_type());
        return c;
    }
    // Compared in the output's own dtype, as torch.allclose does.
    const at::Tensor& a = cand;
    at::Tensor b = ref.to(cand.device());
    at::Tensor badFinite = torch::isfinite(b) & ~torch::isfinite(a);
    const int64_t nonFinite = badFinite.sum().item<int64_t>();
    at::Tensor diff = (a - b).abs();
    at::Tensor within = diff <= (atol + rtol * b.abs());
    // NaN in diff compares false, so NaN counts as a mismatch, as allclose does (equal_nan=False).
    at::Tensor bad = ~within;
    c.mismatches = bad.sum().item<int64_t>();
    at::Tensor finiteDiff = torch::where(torch::isfinite(diff), diff, torch::zeros_like(diff));
    c.maxAbs = diff.numel() ? finiteDiff.max().item<double>() : 0.0;
    c.maxRel = diff.numel() ? (finiteDiff / (b.abs() + 1e-12)).max().item<double>() : 0.0;
    if (nonFinite > 0) {
        c.ok = false;
        const int64_t idx = badFinite.flatten().nonzero().index({0, 0}).item<int64_t>();
        c.reason = std::to_string(nonFinite) + " output elements are NaN or Inf where the reference is finite (first at flat index " +
                   std::to_string(idx) + ")";
        c.detail = {{"non_finite", nonFinite}, {"first_index", idx}};
        return c;
    }
    if (c.mismatches > 0) {
        c.ok = false;
        const int64_t idx = bad.flatten().nonzero().index({0, 0}).item<int64_t>();
        const double got = a.flatten()[idx].item<double>();
        const double want = b.flatten()[idx].item<double>();
        c.reason = std::to_string(c.mismatches) + " of " + std::to_string(a.numel()) +
                   " elements differ beyond atol/rtol; first at flat index " + std::to_string(idx) + ": got " +
                   std::to_string(got) + ", expected " + std::to_string(want);
        c.detail = {{"mismatches", c.mismatches}, {"first_index", idx}, {"got", got}, {"expected", want}};
    }
    return c;
}

// ---- op attribution for profiling: RecordFunction callbacks push a CUPTI external correlation
// id for each top-level op, so every kernel maps to the op that launched it.
std::atomic<bool> g_attribute{false};
thread_local int t_depth = 0;
std::vector<std::string> g_opNames; // index = external id - 1 within one forward

std::unique_ptr<at::ObserverContext> onOpStart(const at::RecordFunction& fn)
{
    if (!g_attribute.load(std::memory_order_relaxed))
        return nullptr;
    if (t_depth++ == 0) {
        g_opNames.emplace_back(fn.name());
        KernelTracer::pushExternalId(g_opNames.size());
    }
    return nullptr;
}

void onOpEnd(const at::RecordFunction&, at::ObserverContext*)
{
    if (!g_attribute.load(std::memory_order_relaxed))
        return;
    if (--t_depth == 0)
        KernelTracer::popExternalId();
}

void ensureOpCallback()
{
    static bool registered = [] {
        at::addGlobalCallback(at::RecordFunctionCallback(&onOpStart, &onOpEnd).scopes({at::RecordScope::FUNCTION}));
        return true;
    }();
    (void)registered;
}

json kernelSummary(const std::vector<KernelRecord>& records, const std::vector<std::string>& customNames)
{
    std::map<std::string, std::pair<int, uint64_t>> byName;
    for (const auto& r : records) {
        auto& e = byName[r.name];
        e.first++;
        e.second += r.endNs - r.startNs;
    }
    json out = json::array();
    for (const auto& [name, e] : byName) {
        const bool custom = std::find(customNames.begin(), customNames.end(), name) != customNames.end();
        out.push_back({{"name", name}, {"calls", e.first}, {"time_ns", e.second}, {"custom", custom}});
    }
    std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a["time_ns"] > b["time_ns"]; });
    return out;
}

std::string currentArch()
{
    json facts = deviceFacts(0);
    return facts.value("arch", std::string());
}

} // namespace

// ---- profiles ---------------------------------------------------------------------------------

json ProtocolProfile::toJson() const
{
    return {{"name", name},
            {"atol", atol},
            {"rtol", rtol},
            {"tf32", tf32},
            {"l2_flush", l2Flush},
            {"correctness_trials", correctnessTrials},
            {"timing_trials", timingTrials},
            {"warmup", warmup},
            {"timing_stat", statistic},
            {"input_generator", "rand"},
            {"range_trial", rangeTrial ? json{{"generator", "randn"}, {"atol", rangeTolerance}, {"rtol", rangeTolerance}} : json(nullptr)},
            {"graph_optimize", false}};
}

std::optional<ProtocolProfile> findProtocolProfile(const std::string& name)
{
    if (name == "kernelbench") {
        ProtocolProfile p;
        p.name = name;
        return p;
    }
    if (name == "kernelbench-v0.1") {
        ProtocolProfile p;
        p.name = name;
        p.atol = p.rtol = 1e-2;
        p.l2Flush = false;
        return p;
    }
    return std::nullopt;
}

uint64_t trialSeed(uint64_t baseSeed, int trial)
{
    // splitmix64 of (base, trial): distinct, well-spread seeds, reproducible across runs.
    uint64_t z = baseSeed + 0x9E3779B97F4A7C15ull * uint64_t(trial + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFull; // torch seeds are int64: keep it positive
}

std::string torchVersion()
{
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
           std::to_string(TORCH_VERSION_PATCH);
}

// ---- evaluator --------------------------------------------------------------------------------

Evaluator::Evaluator()
{
    configureScriptRuntime();
}

bool Evaluator::cudaAvailable(std::string* why) const
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why)
            *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
        cudaGetLastError();
        return false;
    }
    if (!torch::cuda::is_available()) {
        if (why)
            *why = "libtorch was built without CUDA";
        return false;
    }
    std::string driverWhy;
    if (!CudaDriver::get(&driverWhy)) {
        if (why)
            *why = driverWhy;
        return false;
    }
    return true;
}

std::string Evaluator::validateTask(const Task& task) const
{
    try {
        auto cu = compileScript(task.forward);
        forwardFunction(*cu);
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

json Evaluator::analyze(const Task& task, Scale scale) const
{
    auto cu = compileScript(task.forward);
    auto graph = inlinedGraph(forwardFunction(*cu));
    std::vector<ArgInfo> args;
    for (size_t i = 0; i < task.inputs.size(); ++i) {
        const InputSpec& in = task.inputs[i];
        ArgInfo a;
        if (in.kind == "float") {
            a.kind = ArgInfo::Float;
            a.value = in.value;
        } else if (in.kind == "int") {
            a.kind = ArgInfo::Int;
            a.value = in.value;
        } else {
            a.kind = ArgInfo::Tensor;
            a.shape = task.inputShape(i, scale);
            a.elemBytes = dtypeSize(in.dtype);
        }
        args.push_back(a);
    }
    ArgInfo dict;
    dict.kind = ArgInfo::ParamDict;
    for (size_t i = 0; i < task.params.size(); ++i)
        dict.dict[task.params[i].name] = task.paramShape(i, scale);
    args.push_back(dict);
    json out = analyzeGraph(graph, args);
    out["task"] = task.id;
    out["scale"] = scale == Scale::Full ? "full" : "smoke";
    return out;
}

json Evaluator::runReference(const Task& task, Scale scale, const std::string& device, uint64_t seed) const
{
    auto cu = compileScript(task.forward);
    jit::Function& fn = forwardFunction(*cu);
    const at::Device dev = device == "cuda" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
    auto params = makeParams(task, scale, dev, seed);
    auto inputs = makeInputs(task, scale, dev, trialSeed(seed, 0));
    auto t0 = Clock::now();
    at::Tensor out = fn(cloneArgs(inputs, params, task, true)).toTensor();
    const double ms = msSince(t0);
    at::Tensor o = out.to(at::kCPU, at::kDouble);
    return {{"task", task.id},
            {"output_shape", out.sizes().vec()},
            {"dtype", c10::toString(out.scalar_type())},
            {"min", o.numel() ? o.min().item<double>() : 0.0},
            {"max", o.numel() ? o.max().item<double>() : 0.0},
            {"mean", o.numel() ? o.mean().item<double>() : 0.0},
            {"finite", torch::isfinite(o).all().item<bool>()},
            {"ms", ms}};
}

json Evaluator::evaluate(const Task& task, const json& req)
{
    const auto tTotal = Clock::now();
    json res;
    json stageMs = json::object();
    auto finish = [&](const std::string& status, const std::string& stage, const std::string& message) {
        res["status"] = status;
        res["stage"] = stage;
        res["message"] = message;
        stageMs["total"] = msSince(tTotal);
        res["stage_ms"] = stageMs;
        return res;
    };

    const std::string profileName = req.value("profile", std::string("kernelbench"));
    auto profile = findProtocolProfile(profileName);
    if (!profile)
        throw std::invalid_argument("unknown protocol profile '" + profileName + "' (kernelbench, kernelbench-v0.1)");
    ProtocolProfile prof = *profile;
    if (task.atol)
        prof.atol = *task.atol;
    if (task.rtol)
        prof.rtol = *task.rtol;
    prof.correctnessTrials = req.value("correctness_trials", prof.correctnessTrials);
    prof.timingTrials = req.value("timing_trials", prof.timingTrials);
    prof.warmup = req.value("warmup", prof.warmup);
    if (prof.correctnessTrials < 1 || prof.timingTrials < 1 || prof.warmup < 0)
        throw std::invalid_argument("correctness_trials and timing_trials must be >= 1, warmup >= 0");
    const Scale scale = parseScale(req.value("scale", std::string("full")));
    const uint64_t seed = req.value("seed", uint64_t(42));
    const bool doTime = req.value("time", true);
    std::string noCudaWhy;
    const bool haveCuda = cudaAvailable(&noCudaWhy);
    const protocol::Device requested = protocol::parseDevice(
        req, protocol::kDeviceCuda | protocol::kDeviceCpu | protocol::kDeviceNone, cudaDeviceCount());
    std::string device = requested.kind == protocol::Device::Cpu ? "cpu" : requested.kind == protocol::Device::None ? "none" : "cuda";
    if (device == "cuda" && !(haveCuda && useCudaDevice(requested.ordinal, &noCudaWhy)))
        device = "none";
    res["task"] = task.id;
    res["profile"] = prof.toJson();
    res["profile"]["scale"] = scale == Scale::Full ? "full" : "smoke";
    res["profile"]["seed"] = seed;
    res["device"] = device;
    res["torch_only"] = false;
    res["custom_launches"] = 0;
    res["degenerate"] = nullptr;
    res["speedup"] = nullptr;

    // 1. parse
    auto t0 = Clock::now();
    std::string answer;
    if (req.contains("answer")) {
        answer = req.at("answer").get<std::string>();
    } else {
        if (req.contains("cuda") && !req.at("cuda").get<std::string>().empty())
            answer += "```cuda\n" + req.at("cuda").get<std::string>() + "\n```\n";
        answer += "```python\n" + req.value("python", std::string()) + "\n```\n";
    }
    std::string sigError;
    const auto expected = parseForwardSignature(task.forward, &sigError);
    ParseResult parsed = parseAnswer(answer, expected);
    stageMs["parse"] = msSince(t0);
    if (!parsed.ok) {
        res["format_error"] = {{"code", parsed.error->code}, {"message", parsed.error->message}, {"line", parsed.error->line}};
        return finish("format_error", "parse", parsed.error->message);
    }
    res["format_error"] = nullptr;
    const ParsedCandidate& cand = parsed.candidate;
    std::vector<std::string> kernelNames;
    for (const auto& k : cand.kernels)
        kernelNames.push_back(k.name);

    // 2. compile: NVRTC for the CUDA block, the TorchScript frontend for the python block
    t0 = Clock::now();
    const std::string arch = device == "cuda" ? currentArch() : req.value("arch", std::string("sm_90"));
    CompileResult cr;
    json compile = {{"ok", true}, {"log", ""}, {"arch", arch}, {"kernels", kernelNames}, {"ms", 0.0}};
    std::vector<char> shippedCubin;
    // Used only for this architecture and for exactly this source (the hash the compile request
    // returned), so a client whose block extraction drifts from the parser cannot swap kernels.
    const bool useShipped = cand.hasCuda && req.contains("cubin_b64") && req.value("cubin_arch", std::string()) == arch &&
                            req.value("cubin_source_hash", std::string()) == protocol::sourceHash(cand.cuda) &&
                            protocol::decodeBase64(req.at("cubin_b64").get<std::string>(), &shippedCubin) && !shippedCubin.empty();
    // NVRTC sees only sources that pass checkCudaForNvrtc; a cubin compiled ahead passed it there,
    // and is held to it here too (the same source).
    const auto refusedCuda = !cand.hasCuda ? std::nullopt : useShipped ? checkCudaForNvrtc(cand.cuda) : std::nullopt;
    if (useShipped && !refusedCuda) {
        // Compiled ahead by another worker (compile request): the GPU stage only loads it.
        cr.ok = true;
        cr.arch = arch;
        cr.cubin = std::move(shippedCubin);
        compile["cached"] = true;
        compile["log"] = req.value("compile_log", std::string());
    } else if (cand.hasCuda) {
        cr = refusedCuda ? CompileResult{} : compileCuda(cand.cuda, arch);
        if (refusedCuda)
            cr.refused = refusedCuda;
        compile["ok"] = cr.ok;
        compile["log"] = cr.log;
        compile["ms"] = cr.ms;
        compile["options"] = cr.options;
        if (cr.refused) {
            compile["log"] = "";
            res["compile"] = compile;
            stageMs["compile"] = msSince(t0);
            const std::string where = "cuda block line " + std::to_string(cr.refused->line);
            res["sandbox"] = json::array({{{"op", "#include"}, {"reason", cr.refused->message}, {"where", where}}});
            return finish("rejected", "sandbox", cr.refused->message + " (" + where + ")");
        }
        if (!cr.ok) {
            res["compile"] = compile;
            stageMs["compile"] = msSince(t0);
            return finish("compile_error", "compile", "NVRTC could not compile the cuda block");
        }
    }
    std::shared_ptr<jit::CompilationUnit> candUnit;
    jit::Function* candFn = nullptr;
    try {
        candUnit = compileScript(cand.python);
        candFn = &forwardFunction(*candUnit);
    } catch (const ScriptFormatError& e) {
        // The shape bounds (nesting, statement size): the answer's form, not its TorchScript.
        stageMs["compile"] = msSince(t0);
        const int line = e.line > 0 ? cand.pythonLine + e.line - 1 : 0;
        res["format_error"] = {{"code", e.code}, {"message", e.what()}, {"line", line}};
        return finish("format_error", "parse", e.what());
    } catch (const ScriptRejected& e) {
        // Refused by the sandbox before compiling: as the graph check's refusals below.
        res["compile"] = compile;
        stageMs["compile"] = msSince(t0);
        const std::string where = e.line > 0 ? "line " + std::to_string(e.line) : "";
        res["sandbox"] = json::array({{{"op", e.op}, {"reason", e.reason}, {"where", where}}});
        return finish("rejected", "sandbox", e.what());
    } catch (const std::exception& e) {
        compile["ok"] = false;
        compile["log"] = compile["log"].get<std::string>() + "TorchScript (line numbers count from the python block, "
                         "which opens on answer line " + std::to_string(cand.pythonLine) + "):\n" + e.what();
        res["compile"] = compile;
        stageMs["compile"] = msSince(t0);
        return finish("compile_error", "compile", "the python block is not valid TorchScript");
    }
    res["compile"] = compile;
    stageMs["compile"] = msSince(t0);

    // 3. sandbox
    auto graph = inlinedGraph(*candFn);
    auto violations = checkSandbox(*graph);
    if (!violations.empty()) {
        json v = json::array();
        std::string msg;
        for (const auto& x : violations) {
            v.push_back({{"op", x.op}, {"reason", x.reason}, {"where", x.where}});
            if (msg.empty())
                msg = x.op + " is not allowed in host code: " + x.reason + (x.where.empty() ? "" : " (" + x.where + ")");
        }
        res["sandbox"] = v;
        return finish("rejected", "sandbox", msg);
    }
    for (const auto& name : launchedKernelNames(*graph)) {
        if (std::find(kernelNames.begin(), kernelNames.end(), name) == kernelNames.end())
            return finish("format_error", "parse", "kb.launch names kernel '" + name + "', which the cuda block does not declare");
    }
    const bool launchesKernels = !launchedKernelNames(*graph).empty();
    res["torch_only"] = !launchesKernels;

    if (device == "none")
        return finish("no_device", "load", "compiled and passed the sandbox check; no CUDA device to run it (" + noCudaWhy + ")");

    const bool cuda = device == "cuda";
    const at::Device dev = cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
    if (cuda) {
        // The first CUDA use in this process creates the context: a cost of a fresh worker, kept
        // apart from the candidate's stages.
        static bool contextReady = false;
        if (!contextReady) {
            t0 = Clock::now();
            torch::zeros({1}, at::TensorOptions().device(dev)).add_(1);
            cudaDeviceSynchronize();
            stageMs["cuda_init"] = msSince(t0);
            contextReady = true;
        }
    }
    at::globalContext().setAllowTF32CuBLAS(prof.tf32);
    at::globalContext().setAllowTF32CuDNN(prof.tf32);

    // 4. load the module
    t0 = Clock::now();
    std::unique_ptr<LoadedModule> module;
    if (cand.hasCuda && cuda) {
        std::string err;
        module = LoadedModule::load(cr.cubin, &err);
        if (!module) {
            CudaFault f = syncCuda();
            if (f.sticky) {
                m_healthy = false;
                res["worker_healthy"] = false;
            }
            return finish("runtime_error", "load", "could not load the compiled module: " + err);
        }
    }
    stageMs["load"] = msSince(t0);
    LaunchContext launchCtx;
    launchCtx.module = module.get();
    for (const auto& k : cand.kernels) {
        std::vector<std::size_t> sizes;
        for (const auto& p : k.params)
            sizes.push_back(std::size_t(p.bytes));
        launchCtx.declaredSizes[k.name] = sizes;
    }
    struct LaunchScope {
        explicit LaunchScope(LaunchContext* c) { setLaunchContext(c); }
        ~LaunchScope() { setLaunchContext(nullptr); }
    } launchScope(&launchCtx);

    // Runs the candidate; any exception or CUDA fault becomes a runtime_error result.
    auto runCandidate = [&](std::vector<c10::IValue> args, c10::IValue* out, std::string* err) -> bool {
        try {
            *out = (*candFn)(std::move(args));
        } catch (const std::exception& e) {
            *err = e.what();
        }
        if (cuda) {
            CudaFault f = syncCuda();
            if (f.any) {
                *err = (err->empty() ? "" : *err + "\n") + "CUDA error after the candidate ran: " + f.message;
                if (f.sticky) {
                    m_healthy = false;
                    res["worker_healthy"] = false;
                }
            }
        }
        return err->empty();
    };

    try {
        // 5. reference outputs for every trial, taken off the device before candidate code runs
        t0 = Clock::now();
        auto refUnit = compileScript(task.forward);
        jit::Function& refFn = forwardFunction(*refUnit);
        ParamDict params = makeParams(task, scale, dev, seed);
        std::vector<at::Tensor> refOutputs;
        std::vector<int64_t> refFingerprints;
        // Reference outputs stay on the GPU, alive (so the allocator cannot hand their memory to
        // the candidate) and fingerprinted, when all of them fit easily (below); otherwise they go to host memory and their device copies are overwritten with
        // NaN. Copying 4.29 GB outputs to the host and back took 15 s of a 20 s evaluation.
        bool refsOnDevice = false;
        auto keepReference = [&](at::Tensor out) {
            if (refsOnDevice) {
                refFingerprints.push_back(byteFingerprint(out));
                return out;
            }
            at::Tensor host = out.to(at::kCPU);
            if (cuda) // a candidate must not pass by reading the reference's leftovers
                out.fill_(std::numeric_limits<float>::quiet_NaN());
            return host;
        };
        for (int k = 0; k < prof.correctnessTrials; ++k) {
            auto inputs = makeInputs(task, scale, dev, trialSeed(seed, k));
            at::Tensor out = refFn(cloneArgs(inputs, params, task, true)).toTensor();
            if (k == 0 && cuda) {
                size_t freeBytes = 0, totalBytes = 0;
                const double need = double(out.nbytes()) * double(prof.correctnessTrials + 1);
                // A reused worker's caching allocator holds freed blocks that cudaMemGetInfo counts
                // as used but that these outputs can take: a quarter of the device also qualifies.
                refsOnDevice = cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess &&
                               (need < double(freeBytes) / 3.0 || need < double(totalBytes) / 4.0);
                res["reference_outputs_on"] = refsOnDevice ? "device" : "host";
            }
            refOutputs.push_back(keepReference(out));
        }
        if (cuda) {
            CudaFault f = syncCuda();
            if (f.any)
                return finish("runtime_error", "reference", "the reference itself failed: " + f.message);
        }
        res["degenerate"] = degenerateCheck(refOutputs);
        // The range trial's reference: N(0,1) inputs. Skipped where the reference itself is not
        // finite on them (a task defined only on [0,1) would be).
        const uint64_t rangeSeed = trialSeed(seed, prof.correctnessTrials);
        at::Tensor rangeRef;
        std::string rangeSkipped;
        if (prof.rangeTrial) {
            auto inputs = makeInputs(task, scale, dev, rangeSeed, "randn");
            at::Tensor out = refFn(cloneArgs(inputs, params, task, true)).toTensor();
            rangeRef = keepReference(out);
            if (!torch::isfinite(rangeRef).all().item<bool>()) {
                rangeSkipped = "the reference is not finite on N(0,1) inputs";
                rangeRef = at::Tensor();
            }
        }
        stageMs["reference"] = msSince(t0);

        // 6. correctness
        t0 = Clock::now();
        json corr = {{"trials", prof.correctnessTrials}, {"passed", 0}, {"atol", prof.atol}, {"rtol", prof.rtol},
                     {"max_abs_diff", 0.0}, {"max_rel_diff", 0.0}, {"deterministic", nullptr}, {"failure", nullptr}};
        double maxAbs = 0, maxRel = 0;
        at::Tensor firstOutput;
        for (int k = 0; k < prof.correctnessTrials; ++k) {
            auto inputs = makeInputs(task, scale, dev, trialSeed(seed, k));
            c10::IValue outV;
            std::string err;
            auto args = cloneArgs(inputs, params, task, true);
            const auto argsSeen = args; // shares the tensors: for the aliasing check below
            if (!runCandidate(std::move(args), &outV, &err)) {
                corr["failure"] = {{"trial", k}, {"reason", err}};
                res["correctness"] = corr;
                stageMs["correctness"] = msSince(t0);
                return finish("runtime_error", "correctness", err);
            }
            if (outV.isTensor()) {
                const std::string aliased = aliasedArgument(outV.toTensor(), argsSeen, task);
                if (!aliased.empty()) {
                    corr["failure"] = {{"trial", k}, {"reason", "the output shares memory with the argument '" + aliased +
                                                                    "' (returns an input or a view of one); forward must return a new tensor"}};
                    res["correctness"] = corr;
                    return finish("incorrect", "correctness", corr["failure"]["reason"]);
                }
            }
            if (!outV.isTensor()) {
                corr["failure"] = {{"trial", k}, {"reason", "forward returned " + outV.tagKind() + ", expected a Tensor"}};
                res["correctness"] = corr;
                return finish("incorrect", "correctness", corr["failure"]["reason"]);
            }
            at::Tensor out = outV.toTensor();
            if (out.device().type() != dev.type()) {
                corr["failure"] = {{"trial", k}, {"reason", "output is on " + out.device().str() + ", expected " + dev.str()}};
                res["correctness"] = corr;
                return finish("incorrect", "correctness", corr["failure"]["reason"]);
            }
            const std::string modified = modifiedArgument(argsSeen, inputs, params, task);
            if (!modified.empty()) {
                corr["failure"] = {{"trial", k}, {"reason", "the candidate changed its argument '" + modified +
                                                               "': forward must not write to its inputs"}};
                res["correctness"] = corr;
                return finish("incorrect", "correctness", corr["failure"]["reason"]);
            }
            if (refsOnDevice && byteFingerprint(refOutputs[k]) != refFingerprints[size_t(k)]) {
                corr["failure"] = {{"trial", k}, {"reason", "the reference output, kept on the GPU, changed while the candidate ran: "
                                                            "the candidate writes outside its own buffers"}};
                res["correctness"] = corr;
                return finish("incorrect", "correctness", corr["failure"]["reason"]);
            }
            Comparison c = compareOutputs(out, refOutputs[k], prof.atol, prof.rtol);
            maxAbs = std::max(maxAbs, c.maxAbs);
            maxRel = std::max(maxRel, c.maxRel);
            corr["max_abs_diff"] = maxAbs;
            corr["max_rel_diff"] = maxRel;
            if (!c.ok) {
                json failure = {{"trial", k}, {"reason", c.reason}};
                if (!c.detail.is_null())
                    failure["detail"] = c.detail;
                corr["failure"] = failure;
                res["correctness"] = corr;
                stageMs["correctness"] = msSince(t0);
                return finish("incorrect", "correctness", "trial " + std::to_string(k + 1) + ": " + c.reason);
            }
            corr["passed"] = k + 1;
            if (k == 0)
                firstOutput = out;
        }
        // Run twice on the same inputs: a racy kernel shows as a difference.
        {
            auto inputs = makeInputs(task, scale, dev, trialSeed(seed, 0));
            c10::IValue outV;
            std::string err;
            if (!runCandidate(cloneArgs(inputs, params, task, true), &outV, &err)) {
                corr["failure"] = {{"trial", 0}, {"reason", "second run: " + err}};
                res["correctness"] = corr;
                return finish("runtime_error", "correctness", err);
            }
            at::Tensor again = outV.toTensor();
            const bool identical = again.sizes() == firstOutput.sizes() && torch::equal(again, firstOutput);
            corr["deterministic"] = identical;
            if (!identical) {
                Comparison c = compareOutputs(again, refOutputs[0].to(dev), prof.atol, prof.rtol);
                if (!c.ok) {
                    corr["failure"] = {{"trial", 0}, {"reason", "nondeterministic: a second run on the same inputs gave a different, wrong result: " + c.reason}};
                    res["correctness"] = corr;
                    return finish("incorrect", "correctness", corr["failure"]["reason"]);
                }
            }
        }
        if (prof.rangeTrial) {
            json range = {{"generator", "randn"}, {"atol", prof.rangeTolerance}, {"rtol", prof.rangeTolerance}};
            if (!rangeRef.defined()) {
                range["skipped"] = rangeSkipped;
            } else {
                auto inputs = makeInputs(task, scale, dev, rangeSeed, "randn");
                c10::IValue outV;
                std::string err;
                if (!runCandidate(cloneArgs(inputs, params, task, true), &outV, &err)) {
                    corr["failure"] = {{"trial", "range"}, {"reason", err}};
                    res["correctness"] = corr;
                    return finish("runtime_error", "correctness", "range trial (N(0,1) inputs): " + err);
                }
                Comparison c;
                if (outV.isTensor()) {
                    c = compareOutputs(outV.toTensor(), rangeRef, prof.rangeTolerance, prof.rangeTolerance);
                } else {
                    c.ok = false;
                    c.reason = "forward returned " + outV.tagKind() + ", expected a Tensor";
                }
                range["passed"] = c.ok;
                range["max_abs_diff"] = c.maxAbs;
                if (!c.ok) {
                    corr["range_trial"] = range;
                    corr["failure"] = {{"trial", "range"}, {"reason", c.reason}};
                    res["correctness"] = corr;
                    return finish("incorrect", "correctness",
                                  "right on U[0,1) inputs but wrong on N(0,1) inputs: " + c.reason);
                }
            }
            corr["range_trial"] = range;
        }
        res["correctness"] = corr;
        stageMs["correctness"] = msSince(t0);
        firstOutput = at::Tensor();
        refOutputs.clear();

        // 7. which kernels ran (CUPTI), on the timing inputs
        auto timingInputs = makeInputs(task, scale, dev, seed);
        if (cuda) {
            KernelTracer tracer;
            std::string err;
            auto args = cloneArgs(timingInputs, params, task, true); // before tracing: clones are not the candidate's
            syncCuda();
            if (tracer.start(&err)) {
                const int before = launchCtx.launches;
                c10::IValue outV;
                std::string runErr;
                runCandidate(std::move(args), &outV, &runErr);
                tracer.stop();
                res["kernels"] = kernelSummary(tracer.take(), kernelNames);
                res["custom_launches"] = launchCtx.launches - before;
            } else {
                res["kernels_error"] = err;
            }
        }
        res["torch_only"] = !launchesKernels;

        // 8. timing: the eager reference and the candidate, the same way, in this process
        if (doTime) {
            t0 = Clock::now();
            auto makeArgs = [&] { return cloneArgs(timingInputs, params, task, false); };
            Stats refStats, candStats;
            if (cuda) {
                at::Tensor flush;
                if (prof.l2Flush) {
                    const int64_t l2 = deviceFacts(0).value("l2_bytes", int64_t(64) << 20);
                    flush = torch::empty({2 * l2}, at::TensorOptions().dtype(at::kByte).device(dev));
                }
                refStats = timeCuda(refFn, makeArgs, prof.warmup, prof.timingTrials, prof.l2Flush ? &flush : nullptr);
                candStats = timeCuda(*candFn, makeArgs, prof.warmup, prof.timingTrials, prof.l2Flush ? &flush : nullptr);
                CudaFault f = syncCuda();
                if (f.any) {
                    if (f.sticky) {
                        m_healthy = false;
                        res["worker_healthy"] = false;
                    }
                    return finish("runtime_error", "timing", "CUDA error while timing: " + f.message);
                }
            } else {
                refStats = timeCpu(refFn, makeArgs, prof.warmup, prof.timingTrials);
                candStats = timeCpu(*candFn, makeArgs, prof.warmup, prof.timingTrials);
            }
            res["timing"] = {{"reference", refStats.toJson()}, {"candidate", candStats.toJson()},
                             {"clock", cuda ? "cuda_events" : "steady_clock"}};
            const double c = candStats.stat(prof.statistic);
            if (c > 0)
                res["speedup"] = refStats.stat(prof.statistic) / c;
            stageMs["timing"] = msSince(t0);
        }
    } catch (const std::exception& e) {
        std::string msg = e.what();
        if (cuda) {
            CudaFault f = syncCuda();
            if (f.any) {
                msg += "\nCUDA: " + f.message;
                if (f.sticky) {
                    m_healthy = false;
                    res["worker_healthy"] = false;
                }
            }
        }
        return finish("runtime_error", "correctness", msg);
    }
    return finish("correct", "done", "");
}

json Evaluator::profile(const Task& task, const json& req)
{
    if (!cudaAvailable())
        throw std::runtime_error("no_device: profiling needs a CUDA device");
    const Scale scale = parseScale(req.value("scale", std::string("full")));
    const int trials = std::max(1, req.value("trials", 5));
    const uint64_t seed = req.value("seed", uint64_t(42));
    const bool tf32 = req.value("tf32", false);
    at::globalContext().setAllowTF32CuBLAS(tf32);
    at::globalContext().setAllowTF32CuDNN(tf32);
    ensureOpCallback();

    auto cu = compileScript(task.forward);
    jit::Function& fn = forwardFunction(*cu);
    const at::Device dev(at::kCUDA);
    ParamDict params = makeParams(task, scale, dev, seed);
    auto inputs = makeInputs(task, scale, dev, seed);
    fn(cloneArgs(inputs, params, task, false)); // warm-up: cuDNN/cuBLAS handles, algorithm choice
    syncCuda();

    // Per op index within one forward: name, time, kernel count; per kernel name: time.
    std::map<size_t, std::tuple<std::string, uint64_t, int>> ops;
    // Per (op index, kernel name): time, calls. One kernel (an elementwise add, say) can serve
    // several ops; each op keeps its own row.
    std::map<std::pair<size_t, std::string>, std::pair<uint64_t, int>> kernels;
    uint64_t total = 0;
    for (int t = 0; t < trials; ++t) {
        auto args = cloneArgs(inputs, params, task, false);
        syncCuda();
        KernelTracer tracer;
        std::string err;
        if (!tracer.start(&err))
            throw std::runtime_error("CUPTI: " + err);
        g_opNames.clear();
        g_attribute = true;
        fn(std::move(args));
        g_attribute = false;
        syncCuda();
        tracer.stop();
        for (const auto& r : tracer.take()) {
            const uint64_t ns = r.endNs - r.startNs;
            const size_t opIndex = r.externalId; // 0 = launched outside any op
            const std::string opName = opIndex > 0 && opIndex <= g_opNames.size() ? g_opNames[opIndex - 1] : "(no op)";
            auto& o = ops[opIndex];
            std::get<0>(o) = opName;
            std::get<1>(o) += ns;
            std::get<2>(o) += 1;
            auto& k = kernels[{opIndex, r.name}];
            k.first += ns;
            k.second += 1;
            total += ns;
        }
    }
    json opsOut = json::array(), kernelsOut = json::array();
    for (const auto& [index, o] : ops)
        opsOut.push_back({{"index", index == 0 ? -1 : int64_t(index) - 1},
                          {"op", std::get<0>(o)},
                          {"time_ns", std::get<1>(o) / uint64_t(trials)},
                          {"kernels", std::get<2>(o) / trials},
                          {"share", total ? double(std::get<1>(o)) / double(total) : 0.0}});
    for (const auto& [key, k] : kernels) {
        const size_t opIndex = key.first;
        kernelsOut.push_back({{"name", key.second},
                              {"op", ops.count(opIndex) ? std::get<0>(ops[opIndex]) : "(no op)"},
                              {"op_index", opIndex == 0 ? -1 : int64_t(opIndex) - 1},
                              {"calls", k.second / trials},
                              {"time_ns", k.first / uint64_t(trials)},
                              {"share", total ? double(k.first) / double(total) : 0.0}});
    }
    auto byTime = [](const json& a, const json& b) { return a["time_ns"] > b["time_ns"]; };
    std::sort(opsOut.begin(), opsOut.end(), byTime);
    std::sort(kernelsOut.begin(), kernelsOut.end(), byTime);
    return {{"task", task.id}, {"scale", scale == Scale::Full ? "full" : "smoke"}, {"trials", trials},
            {"tf32", tf32}, {"total_ns", total / uint64_t(trials)}, {"ops", opsOut}, {"kernels", kernelsOut}};
}

} // namespace kwb
