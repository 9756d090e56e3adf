#include "worker/evaluate/evaluator.h"

#include "worker/analyze/analyze.h"
#include "worker/answers/answerformat.h"
#include "worker/python/candidatecallable.h"
#include "worker/answers/candidateparser.h"
#include "worker/measure/clockprobe.h"
#include "worker/device/cudadriver.h"
#include "worker/measure/cuptitracer.h"
#include "worker/device/deviceinfo.h"
#include "worker/measure/dramprofiler.h"
#include "worker/measure/measure.h"
#include "worker/compile/nvrtccompiler.h"
#include "worker/evaluate/outputcompare.h"
#include "worker/measure/profiles.h"
#include "worker/protocol/protocol.h"
#include "worker/python/pythonhost.h"
#include "worker/analyze/roofline.h"
#include "worker/python/scripthost.h"
#include "worker/evaluate/tensorfingerprint.h"
#include "worker/evaluate/torchglobals.h"

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <thread>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <unistd.h>
#include <dlfcn.h>
#include <filesystem>
#include <link.h>

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

/// Where the task's parameters are drawn: on `device`'s generator (what every evaluation whose
/// candidate takes the evaluator's weights uses), or on the CPU generator and then moved there,
/// which makes them, bit for bit, the weights KernelBench's Model(*init_inputs) makes under the
/// same seed (built on the CPU; the task files list the parameters in its creation order and
/// with its initialisers: docs/task-format.md). A KernelBench-format ModelNew that keeps its own
/// weights is compared with a reference holding those.
enum class DrawnOn { Device, CpuAsKernelBench };

ParamDict makeParams(const Task& task, Scale scale, at::Device device, uint64_t seed, DrawnOn drawnOn = DrawnOn::Device)
{
    torch::manual_seed(seed);
    ParamDict dict;
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(drawnOn == DrawnOn::Device ? device : at::Device(at::kCPU));
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
        dict.insert(p.name, t.device() == device ? t : t.to(device));
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

/// Whether two tensors' storages share bytes: the same storage, or (a tensor that came back
/// through DLPack has a storage object of its own) overlapping memory.
bool sharesMemory(const at::Tensor& a, const at::Tensor& b)
{
    if (a.is_alias_of(b))
        return true;
    if (!a.has_storage() || !b.has_storage() || a.device() != b.device())
        return false;
    const auto* pa = static_cast<const char*>(a.storage().data_ptr().get());
    const auto* pb = static_cast<const char*>(b.storage().data_ptr().get());
    const size_t na = a.storage().nbytes(), nb = b.storage().nbytes();
    return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}

/// The name of the argument (input or parameter) whose storage the output shares, or "".
std::string aliasedArgument(const at::Tensor& out, const std::vector<c10::IValue>& args, const Task& task)
{
    for (size_t i = 0; i < args.size() && i < task.inputs.size(); ++i)
        if (args[i].isTensor() && sharesMemory(out, args[i].toTensor()))
            return task.inputs[i].name;
    if (!args.empty() && args.back().isGenericDict()) {
        for (const auto& entry : args.back().toGenericDict())
            if (entry.value().isTensor() && sharesMemory(out, entry.value().toTensor()))
                return entry.key().toStringRef();
    }
    return {};
}

/// torch.equal(a, b): same sizes and every element equal (floats: NaN never, -0 == +0). On one
/// GPU, for contiguous float32 or integer/boolean data of one dtype, one pass of the evaluator's
/// own kernel (outputcompare.h: no first load of ATen's eq and all in a fresh worker); else ATen.
bool equalValues(const at::Tensor& a, const at::Tensor& b)
{
    if (a.sizes() != b.sizes())
        return false;
    if (a.is_cuda() && b.is_cuda() && a.device() == b.device() && a.scalar_type() == b.scalar_type() &&
        a.is_contiguous() && b.is_contiguous() && a.numel() > 0) {
        std::string why;
        std::optional<int64_t> bad;
        if (a.scalar_type() == at::kFloat)
            bad = fusedUnequalFloats(a.data_ptr<float>(), b.data_ptr<float>(), a.numel(), a.device().index(), &why);
        else if (at::isIntegralType(a.scalar_type(), /*includeBool=*/true))
            bad = fusedUnequalBytes(a.data_ptr(), b.data_ptr(), int64_t(a.nbytes()), a.device().index(), &why);
        if (bad)
            return *bad == 0;
    }
    return torch::equal(a, b);
}

/// The name of the first input, or parameter that is not a buffer, that a run changed: `args`
/// are the clones the candidate got, `inputs` and `params` the originals they were cloned from.
/// Buffers (BatchNorm's running statistics) are meant to be updated and are left out.
std::string modifiedArgument(const std::vector<c10::IValue>& args, const std::vector<c10::IValue>& inputs,
                             const ParamDict& params, const Task& task)
{
    for (size_t i = 0; i < args.size() && i < inputs.size() && i < task.inputs.size(); ++i)
        if (args[i].isTensor() && inputs[i].isTensor() && !equalValues(args[i].toTensor(), inputs[i].toTensor()))
            return task.inputs[i].name;
    if (!args.empty() && args.back().isGenericDict()) {
        const auto dict = args.back().toGenericDict();
        for (const ParamSpec& p : task.params) {
            if (p.buffer || !dict.contains(p.name))
                continue;
            const c10::IValue v = dict.at(p.name);
            if (v.isTensor() && !equalValues(v.toTensor(), params.at(p.name)))
                return p.name;
        }
    }
    return {};
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

/// Whether every element is finite (integers are): the evaluator's own kernel for float32 on one
/// GPU, else ATen's isfinite.
bool allFinite(const at::Tensor& t)
{
    if (t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous()) {
        std::string why;
        if (const auto stats = fusedStats(t.data_ptr<float>(), t.numel(), t.device().index(), &why))
            return stats->nonFinite == 0;
    }
    return torch::isfinite(t).all().item<bool>();
}

/// Flags references whose output cannot tell a right candidate from a wrong one.
json degenerateCheck(const std::vector<at::Tensor>& refs)
{
    if (refs.empty() || refs[0].numel() == 0)
        return nullptr;
    const at::Tensor& r = refs[0];
    // One pass of the evaluator's own kernel where it can (float32 on one GPU), else ATen's.
    std::optional<FusedStats> stats;
    if (r.is_cuda() && r.scalar_type() == at::kFloat && r.is_contiguous()) {
        std::string why;
        stats = fusedStats(r.data_ptr<float>(), r.numel(), r.device().index(), &why);
    }
    const double zeroFraction = (stats ? double(stats->zeros) : (r == 0).sum().item<double>()) / double(r.numel());
    json d;
    if (zeroFraction >= 0.999) {
        d = {{"kind", zeroFraction == 1.0 ? "all_zero" : "mostly_zero"}, {"zero_fraction", zeroFraction}};
        d["message"] = zeroFraction == 1.0 ? "every output element of the reference is 0: a candidate returning zeros passes"
                                           : "almost every output element of the reference is 0: a candidate returning zeros "
                                             "nearly passes, and correctness says little";
        return d;
    }
    // max == min as ATen has it: a NaN anywhere makes both NaN, never equal.
    if (stats ? stats->nans == 0 && stats->min == stats->max : (r.max() == r.min()).item<bool>())
        return {{"kind", "constant"}, {"zero_fraction", zeroFraction},
                {"message", "the reference output is one constant value"}};
    if (refs.size() > 1 && equalValues(refs[0], refs[1]))
        return {{"kind", "input_independent"}, {"zero_fraction", zeroFraction},
                {"message", "two different inputs gave the same reference output"}};
    return nullptr;
}

struct Comparison {
    bool ok = true;
    std::string reason;
    double maxAbs = 0, maxRel = 0;
    int64_t mismatches = 0;
    json detail = nullptr;
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
    // float32 on one GPU: one fused pass that rounds as the ATen ops below do (outputcompare.h);
    // those ops run only where it finds a mismatch (for the report), or where it cannot run.
    if (cand.is_cuda() && ref.device() == cand.device() && cand.scalar_type() == at::kFloat && cand.is_contiguous() &&
        ref.is_contiguous()) {
        std::string why;
        const auto f = fusedCompare(cand.data_ptr<float>(), ref.data_ptr<float>(), cand.numel(), atol, rtol,
                                    cand.device().index(), &why);
        if (f && f->mismatches == 0) {
            c.maxAbs = f->maxAbs;
            c.maxRel = f->maxRel;
            return c;
        }
    }
    // Compared in the output's own dtype, as torch.allclose does.
    const at::Tensor& a = cand;
    at::Tensor b = ref.to(cand.device());
    at::Tensor badFinite = torch::isfinite(b) & ~torch::isfinite(a);
    at::Tensor diff = (a - b).abs();
    at::Tensor within = diff <= (atol + rtol * b.abs());
    // NaN in diff compares false, so NaN counts as a mismatch, as allclose does (equal_nan=False).
    at::Tensor bad = ~within;
    // The four numbers the check needs, brought to the host in one copy (one synchronisation).
    int64_t nonFinite = 0;
    if (diff.numel()) {
        at::Tensor finiteDiff = torch::where(torch::isfinite(diff), diff, torch::zeros_like(diff));
        const at::Tensor summary = at::stack({badFinite.sum().to(at::kDouble), bad.sum().to(at::kDouble),
                                              finiteDiff.max().to(at::kDouble),
                                              (finiteDiff / (b.abs() + 1e-12)).max().to(at::kDouble)})
                                       .to(at::kCPU);
        const double* v = summary.data_ptr<double>();
        nonFinite = int64_t(v[0]);
        c.mismatches = int64_t(v[1]);
        c.maxAbs = v[2];
        c.maxRel = v[3];
    }
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

/// Whether a traced kernel is one the candidate's source declares: its name as declared (extern "C")
/// or demangled with its parameters ("scale_kernel(float const*, …)", a load_inline kernel).
bool isCustomKernel(const std::string& traced, const std::vector<std::string>& customNames)
{
    for (const auto& k : customNames)
        if (traced == k || (traced.size() > k.size() && traced.compare(0, k.size(), k) == 0 && traced[k.size()] == '('))
            return true;
    return false;
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
        const bool custom = isCustomKernel(name, customNames);
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

/// `analyze` of a task's reference: also the roofline floor's FLOPs and bytes (timing stage).
json analyzeTask(const Task& task, Scale scale);

namespace {
/// The native format's candidate: its TorchScript forward, called on the arguments as given.
class NativeCallable final : public CandidateCallable {
public:
    explicit NativeCallable(jit::Function& fn) : m_fn(&fn) {}
    std::function<c10::IValue()> bind(std::vector<c10::IValue> args) override
    {
        return [fn = m_fn, args = std::move(args)]() mutable { return (*fn)(std::move(args)); };
    }

private:
    jit::Function* m_fn;
};
} // namespace

std::unique_ptr<CandidateCallable> nativeCallable(jit::Function& forward)
{
    return std::make_unique<NativeCallable>(forward);
}

// ---- seeds, versions ------------------------------------------------------------------------

uint64_t trialSeed(uint64_t baseSeed, int trial)
{
    // splitmix64 of (base, trial): distinct, well-spread seeds, reproducible across runs.
    uint64_t z = baseSeed + 0x9E3779B97F4A7C15ull * uint64_t(trial + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFull; // torch seeds are int64: keep it positive
}

/// torch's settings as the worker found them at its start, before any candidate ran.
const TorchGlobals& workerStartGlobals()
{
    static const TorchGlobals start = TorchGlobals::capture();
    return start;
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
    // libtorch's own TF32 defaults, read once before any evaluation sets them: the `kernelbench`
    // profile pins exactly these (profiles.h).
    static const bool captured = [] {
        setTorchTf32Defaults(at::globalContext().allowTF32CuBLAS(), at::globalContext().allowTF32CuDNN());
        (void)workerStartGlobals(); // before any candidate can change them
        return true;
    }();
    (void)captured;
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
    return analyzeTask(task, scale);
}

json analyzeTask(const Task& task, Scale scale)
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

// ---- evaluate, as stages --------------------------------------------------------------------
//
// parse → compile → sandbox → (device) → load → reference → correctness → trace → timing. Each
// stage is a function over one Evaluation and returns false when the evaluation ends there; every
// end goes through Evaluation::stop, every CUDA fault check through Evaluation::checkCuda.

namespace {

/// One `evaluate` request on its way through the stages: its settings, the response being built,
/// and what each stage leaves for the next.
/// Whether this process made its CUDA context and torch's CUDA state yet (deviceStage, or an
/// earlier `warm`: Evaluator::warm).
std::atomic<bool> g_cudaContextReady{false};

struct Evaluation {
    Evaluation(const Task& t, const json& r, bool& h) : task(t), req(r), healthy(h) {}

    /// torch's global settings as the evaluator sets them for this evaluation (deviceStage).
    TorchGlobals globals;
    bool globalsReset = false; ///< the candidate's import changed some; set back (flag global_state_reset)
    json globalsChangedInRun;  ///< the first change found after a candidate call (restoreGlobals)

    const Task& task;
    const json& req;
    bool& healthy; ///< the Evaluator's: false after a sticky CUDA error
    /// The GPU's quiet lock (Evaluator::setQuietLock): held exclusively while timing and profiling
    /// traffic on the GPU; null: none.
    const GpuQuietLock* quietLock = nullptr;
    /// The timing's intent on the quiet lock, announced from the last correctness trial on
    /// (announceTiming): the spares' warm parts running then end before the timing asks for it.
    std::unique_ptr<GpuQuietLock::Intent> timingIntent;
    bool timingIntentEarly = true; ///< the request's `timing_intent` (false: the benchmark's comparison)
    /// The request's `timing_warmup_shared` (false: the benchmark's comparison): the timing's setup
    /// and warm-up run before its exclusive hold, while the GPU's other work drains.
    bool warmupShared = true;
    /// The request's `trace_exclusive` (false: the benchmark's comparison): the timing's exclusive
    /// hold kept through the trace right after it (traceHold), so that the traced kernels' times
    /// are taken with nothing else on the GPU, as the timings are (beside spares' warm parts
    /// CUPTI's attach also took twice as long: docs/decisions.md, session 13).
    bool traceExclusive = true;
    std::unique_ptr<GpuQuietLock::Hold> traceHold;
    void announceTiming()
    {
        if (timingIntent || !timingIntentEarly || !cuda || !doTime || !quietLock)
            return;
        // Never waits while the GPU is shared (gpuShare): the gate's holder, another evaluation's
        // timing, may be waiting for this very shared hold to end. Taken, or left to the timing.
        timingIntent = std::make_unique<GpuQuietLock::Intent>(quietLock, !gpuShare);
        addDetail("correctness", "quiet_intent_wait", timingIntent->waitMs());
        if (!timingIntent->held())
            timingIntent.reset();
    }
    /// The quiet lock held shared for the evaluation's GPU work outside its measurements (the
    /// context, the module's load, the reference, correctness, the trace): another evaluation on
    /// this GPU may run beside it, but its timing or traffic profile never does (they hold the
    /// lock exclusively, and let the share go first: measureGpu).
    std::unique_ptr<GpuQuietLock::Hold> gpuShare;
    /// The evaluations' turn on this GPU (GpuQuietLock::Turn): taken before the first share, never
    /// while holding one, and let go once the last exclusive measurement has ended (endTurn).
    std::unique_ptr<GpuQuietLock::Turn> turn;
    bool turnTaken = false;
    void endTurn()
    {
        if (turn)
            turn->release();
    }
    /// Whether the timing is the evaluation's last exclusive measurement: no second timing after
    /// the trace, no traffic profile (each takes its own exclusive hold later).
    bool timingIsLastMeasurement() const { return !retimeAfterTrace && !profileTraffic; }
    void shareGpu()
    {
        if (gpuShare || !cuda || !quietLock)
            return;
        if (!turnTaken) {
            turnTaken = true;
            turn = std::make_unique<GpuQuietLock::Turn>(quietLock);
            addDetail("share", "turn_wait", turn->waitMs());
        }
        gpuShare = std::make_unique<GpuQuietLock::Hold>(quietLock, GpuQuietLock::Mode::Shared);
        addDetail("share", "quiet_wait", gpuShare->waitMs());
        if (!gpuShare->error().empty())
            res["gpu_quiet_lock_error"] = gpuShare->error();
    }
    /// Lets the share go before an exclusive hold: flock would convert this process's shared lock
    /// (one open file) in place, and a hold never waits while it holds another.
    void measureGpu() { gpuShare.reset(); }

    // settings
    ProtocolProfile prof;
    Scale scale = Scale::Full;
    uint64_t seed = 42;
    bool doTime = true;
    std::string device; ///< "cuda", "cpu" or "none"
    int ordinal = 0;    ///< the CUDA device's, where device is "cuda"
    std::string noCudaWhy;
    bool cuda = false;
    at::Device dev{at::kCPU};

    // the response, and the clocks of stage_ms and stage_detail_ms
    json res;
    json stageMs = json::object();
    /// Where the time of a stage goes (the response's stage_detail_ms): {stage: {part: ms}}, summed
    /// over a stage's trials. Each part ends at a synchronisation, so its host time holds the GPU
    /// work it queued.
    json stageDetail = json::object();
    void addDetail(const char* stage, const char* part, double ms)
    {
        json& s = stageDetail[stage];
        if (!s.is_object())
            s = json::object();
        s[part] = s.value(part, 0.0) + ms;
    }
    const Clock::time_point tTotal = Clock::now();
    Clock::time_point tStage;
    std::string timedStage; ///< the stage_ms entry whose clock runs ("" between timed stages)

    // parse
    AnswerFormat format = AnswerFormat::Native;
    KernelBenchSource kb; ///< the module of a KernelBench-format answer
    /// ModelNew's parameters are not the reference's: it keeps the weights it made, and the
    /// reference's are drawn as KernelBench makes them (parametersMatch, DrawnOn).
    bool ownWeights = false;
    ParseResult parsed;
    std::vector<std::string> kernelNames;
    // compile
    json compile;
    CompileResult cr;
    std::shared_ptr<jit::CompilationUnit> candUnit;
    jit::Function* candFn = nullptr;
    // sandbox
    bool launchesKernels = false;
    // the candidate as called, either front end (candidatecallable.h)
    std::unique_ptr<CandidateCallable> callable;
    // load
    std::unique_ptr<LoadedModule> module;
    LaunchContext launchCtx;
    // reference
    std::shared_ptr<jit::CompilationUnit> refUnit;
    jit::Function* refFn = nullptr;
    ParamDict params;
    std::vector<int64_t> paramPrints; ///< byte fingerprints of the parameters as made
    uint64_t rangeSeed = 0;
    std::vector<at::Tensor> degenerateRefs; ///< trials 0 and 1's reference outputs, for degenerateCheck
    double outputBytes = 0;                 ///< the reference output's size (timing-set rule)
    /// What the reference and timing stages need that is CPU work only: made on a thread of its
    /// own while a fresh worker creates its CUDA context (deviceStage), else when first asked.
    struct Prepared {
        std::shared_ptr<jit::CompilationUnit> refUnit;
        std::exception_ptr refError;
        json analysis;         ///< analyzeTask, for the roofline (timing stage)
        std::string analysisError;
        double ms = 0;         ///< the preparation's own time
    };
    std::shared_future<std::shared_ptr<Prepared>> prepared;
    const Prepared& prep()
    {
        if (!prepared.valid())
            prepared = std::async(std::launch::deferred, [this] { return prepare(); }).share();
        return *prepared.get();
    }
    std::shared_ptr<Prepared> prepare() const
    {
        const auto t0 = Clock::now();
        auto p = std::make_shared<Prepared>();
        try {
            p->refUnit = compileScript(task.forward);
            forwardFunction(*p->refUnit);
        } catch (...) {
            p->refError = std::current_exception();
        }
        if (cuda && doTime) {
            try {
                p->analysis = analyzeTask(task, scale);
            } catch (const std::exception& e) {
                p->analysisError = e.what();
            }
        }
        if (cuda) {
            precompileFusedCompare(ordinal);
            if (doTime)
                ClockProbe::precompile(ordinal);
        }
        p->ms = msSince(t0);
        return p;
    }
    // trace, timing
    std::vector<c10::IValue> timingInputs;
    /// The worker's cached reference samples (Evaluator::m_referenceCache), and whether the
    /// request lets timing use them (`reuse_reference`, default true).
    std::vector<measure::CachedReference>* referenceCaches = nullptr;
    bool reuseReference = true;
    /// The request's `profile_traffic`: count the candidate's HBM bytes after timing (trafficStage).
    bool profileTraffic = false;
    /// The request's `retime_after_trace`: time again after the trace, keeping the first timing
    /// as `timing_before_trace` (the check that tracing leaves the timing as it was); "attached"
    /// keeps CUPTI attached for that second timing, as every evaluation had it before 2026-12-01
    /// (the benchmark of what the tracer cost), detaching it after the evaluation.
    bool retimeAfterTrace = false;
    bool retimeAttached = false;

    /// The cache entry of `key`, made (empty) where there is none; at most kCachedReferences
    /// entries, the oldest dropped first.
    measure::CachedReference& referenceCache(const measure::ReuseKey& key)
    {
        constexpr size_t kCachedReferences = 64;
        auto& caches = *referenceCaches;
        for (auto& c : caches)
            if (c.key == key)
                return c;
        if (caches.size() >= kCachedReferences)
            caches.erase(caches.begin());
        caches.push_back({key, {}});
        return caches.back();
    }

    const ParsedCandidate& cand() const { return parsed.candidate; }

    void startStage(const char* name)
    {
        timedStage = name;
        tStage = Clock::now();
    }
    void endStage()
    {
        if (!timedStage.empty())
            stageMs[timedStage] = msSince(tStage);
        timedStage.clear();
    }

    /// Every end of an evaluation, failed or not: status, stage, message, and the time of the
    /// stage it ended in. Returns false, for stages to `return stop(…)`.
    bool stop(const std::string& status, const std::string& stage, const std::string& message)
    {
        endStage();
        res["status"] = status;
        res["stage"] = stage;
        res["message"] = message;
        return false;
    }

    /// Synchronises and reports a pending CUDA error. After a sticky one (the context is unusable)
    /// the worker is marked unhealthy and the response says so: it exits after answering.
    CudaFault checkCuda()
    {
        CudaFault f = syncCuda();
        if (f.sticky) {
            healthy = false;
            res["worker_healthy"] = false;
        }
        return f;
    }

    json response()
    {
        // The device's memory as this answer leaves (docs/protocol.md §evaluate, gpu_memory): the
        // supervisor lets the next worker start beside this one's exit only where it fits.
        if (cuda && g_cudaContextReady) {
            size_t freeBytes = 0, totalBytes = 0;
            if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess)
                res["gpu_memory"] = {{"free_bytes", uint64_t(freeBytes)}, {"total_bytes", uint64_t(totalBytes)}};
            else
                cudaGetLastError();
        }
        if (globalsReset && res.contains("flags") && res["flags"].is_array())
            res["flags"].push_back("global_state_reset");
        stageMs["total"] = msSince(tTotal);
        res["stage_ms"] = stageMs;
        res["stage_detail_ms"] = stageDetail;
        return res;
    }
};

/// The request's settings, the device and the response's fixed fields. Throws
/// std::invalid_argument (a bad_request) for an unknown profile or counts out of range.
void setUp(Evaluation& ev, const Evaluator& evaluator)
{
    const json& req = ev.req;
    const std::string profileName = req.value("profile", std::string(kDefaultProfile));
    auto profile = findProtocolProfile(profileName);
    if (!profile)
        throw std::invalid_argument("unknown protocol profile '" + profileName + "' (" + profileNames() + ")");
    ProtocolProfile& prof = ev.prof;
    prof = *profile;
    if (ev.task.atol)
        prof.atol = *ev.task.atol;
    if (ev.task.rtol)
        prof.rtol = *ev.task.rtol;
    prof.correctnessTrials = req.value("correctness_trials", prof.correctnessTrials);
    for (const char* key : {"timing_target", "timing_max_ms"})
        if (req.contains(key) && !req.at(key).is_number())
            throw std::invalid_argument(std::string(key) + " must be a number");
    if (req.contains("timing_method") && !req.at("timing_method").is_string())
        throw std::invalid_argument("timing_method must be \"adaptive\" or \"fixed\"");
    for (const char* key : {"reuse_reference", "timing_intent"})
        if (req.contains(key) && !req.at(key).is_boolean())
            throw std::invalid_argument(std::string(key) + " must be true or false");
    if (req.contains("retime_after_trace") && !req.at("retime_after_trace").is_boolean() &&
        req.at("retime_after_trace") != json("attached"))
        throw std::invalid_argument("retime_after_trace must be true, false or \"attached\"");
    if (req.contains(protocol::kProfileTrafficField) && !req.at(protocol::kProfileTrafficField).is_boolean())
        throw std::invalid_argument(std::string(protocol::kProfileTrafficField) + " must be true or false");
    measure::Method& timing = prof.timing;
    timing.trials = req.value("timing_trials", timing.trials);
    timing.warmup = req.value("warmup", timing.warmup);
    timing.kind = req.value("timing_method", timing.kind);
    timing.target = req.value("timing_target", timing.target);
    timing.maxWallMs = req.value("timing_max_ms", timing.maxWallMs);
    if (prof.correctnessTrials < 1 || timing.trials < 1 || timing.warmup < 0)
        throw std::invalid_argument("correctness_trials and timing_trials must be >= 1, warmup >= 0");
    if (timing.kind != "adaptive" && timing.kind != "fixed")
        throw std::invalid_argument("timing_method must be \"adaptive\" or \"fixed\", not \"" + timing.kind + "\"");
    if (!(timing.target > 0 && timing.target < 1) || !(timing.maxWallMs > 0 && timing.maxWallMs <= 600000))
        throw std::invalid_argument("timing_target must lie in (0, 1) and timing_max_ms in (0, 600000]");
    ev.scale = parseScale(req.value("scale", std::string("full")));
    ev.seed = req.value("seed", uint64_t(42));
    ev.doTime = req.value("time", true);
    ev.reuseReference = req.value("reuse_reference", true);
    ev.timingIntentEarly = req.value("timing_intent", true);
    ev.warmupShared = req.value("timing_warmup_shared", true);
    ev.traceExclusive = req.value("trace_exclusive", true);
    ev.profileTraffic = req.value(protocol::kProfileTrafficField, false);
    if (req.contains("retime_after_trace")) {
        ev.retimeAttached = req.at("retime_after_trace") == json("attached");
        ev.retimeAfterTrace = ev.retimeAttached || req.at("retime_after_trace") == json(true);
    }
    const bool haveCuda = evaluator.cudaAvailable(&ev.noCudaWhy);
    const protocol::Device requested = protocol::parseDevice(
        req, protocol::kDeviceCuda | protocol::kDeviceCpu | protocol::kDeviceNone, cudaDeviceCount());
    ev.device = requested.kind == protocol::Device::Cpu ? "cpu" : requested.kind == protocol::Device::None ? "none" : "cuda";
    if (ev.device == "cuda" && !(haveCuda && useCudaDevice(requested.ordinal, &ev.noCudaWhy)))
        ev.device = "none";
    ev.cuda = ev.device == "cuda";
    ev.ordinal = ev.cuda ? requested.ordinal : 0;
    ev.dev = ev.cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);

    json& res = ev.res;
    res["task"] = ev.task.id;
    res["profile"] = prof.toJson();
    res["profile"]["scale"] = ev.scale == Scale::Full ? "full" : "smoke";
    res["profile"]["seed"] = ev.seed;
    res["device"] = ev.device;
    res["torch_only"] = false;
    res["custom_launches"] = 0;
    res["degenerate"] = nullptr;
    res["speedup"] = nullptr;
    res["flags"] = json::array();
}

/// 1. parse: the answer (or the blocks given as `cuda` and `python`) by the candidate format;
/// the blocks found are echoed as `candidate`, also when the format is broken.
bool kernelBenchParse(Evaluation& ev, const std::string& answer, CodeBlock codeBlock);

bool parseStage(Evaluation& ev)
{
    ev.startStage("parse");
    // Checked whatever the format (a bad value is the request's error); only KernelBench's
    // format has a choice to make: the native format allows one python block.
    const CodeBlock codeBlock = requestedCodeBlock(ev.req);
    if (ev.req.contains("answer")) {
        const std::string& text = ev.req.at("answer").get_ref<const std::string&>();
        ev.format = requestedAnswerFormat(ev.req).value_or(detectAnswerFormat(text));
    } else if (requestedAnswerFormat(ev.req) == AnswerFormat::KernelBench) {
        throw std::invalid_argument("answer_format \"kernelbench\" needs the whole answer in 'answer'");
    }
    ev.res["answer_format"] = answerFormatName(ev.format);
    if (ev.format == AnswerFormat::KernelBench)
        return kernelBenchParse(ev, ev.req.at("answer").get<std::string>(), codeBlock);
    std::string answer;
    if (ev.req.contains("answer")) {
        answer = ev.req.at("answer").get<std::string>();
    } else {
        if (ev.req.contains("cuda") && !ev.req.at("cuda").get<std::string>().empty())
            answer += "```cuda\n" + ev.req.at("cuda").get<std::string>() + "\n```\n";
        answer += "```python\n" + ev.req.value("python", std::string()) + "\n```\n";
    }
    std::string sigError;
    const auto expected = parseForwardSignature(ev.task.forward, &sigError);
    ev.parsed = parseAnswer(answer, expected);
    ev.res["candidate"] = protocol::candidateEcho(ev.parsed.candidate);
    ev.endStage();
    if (!ev.parsed.ok) {
        const FormatError& e = *ev.parsed.error;
        ev.res["format_error"] = {{"code", e.code}, {"message", e.message}, {"line", e.line}};
        return ev.stop("format_error", "parse", e.message);
    }
    ev.res["format_error"] = nullptr;
    for (const auto& k : ev.cand().kernels)
        ev.kernelNames.push_back(k.name);
    return true;
}

/// The echo of a KernelBench-format answer: its module as the python block, no cuda block, the
/// kernels its CUDA sources declare, the module's hash, and which block it is of how many.
json kernelBenchEcho(const KernelBenchSource& kb, CodeBlock codeBlock)
{
    json kernels = json::array();
    for (const auto& k : findKernels(kb.source))
        kernels.push_back(k.name);
    return {{"cuda", nullptr}, {"python", kb.ok ? json(kb.source) : json(nullptr)}, {"kernels", kernels},
            {"source_hash", kb.ok ? json(protocol::sourceHash(kb.source)) : json(nullptr)}, {"cuda_line", nullptr},
            {"python_line", kb.ok ? json(kb.line) : json(nullptr)}, {"answer_format", "kernelbench"},
            {"code_block", codeBlockName(codeBlock)}, {"model_new_blocks", kb.modelNewBlocks}};
}

/// 1 (KernelBench format). The module's source; a worker built without Python refuses it here.
bool kernelBenchParse(Evaluation& ev, const std::string& answer, CodeBlock codeBlock)
{
    ev.kb = extractKernelBenchSource(answer, codeBlock);
    ev.res["candidate"] = kernelBenchEcho(ev.kb, codeBlock);
    ev.endStage();
    std::string why;
    if (ev.kb.ok && !python::available(&why))
        ev.kb.error = FormatError{"kernelbench_unavailable", why, 0};
    if (ev.kb.error) {
        const FormatError& e = *ev.kb.error;
        ev.res["format_error"] = {{"code", e.code}, {"message", e.message}, {"line", e.line}};
        return ev.stop("format_error", "parse", e.message);
    }
    ev.res["format_error"] = nullptr;
    for (const auto& k : findKernels(ev.kb.source))
        ev.kernelNames.push_back(k.name);
    if (const std::string refusal = python::nativeCodeRefusal(); !refusal.empty())
        return ev.stop("rejected", "sandbox", refusal);
    return true;
}

/// A module line of a KernelBench-format answer as an answer line.
int answerLine(const Evaluation& ev, int moduleLine)
{
    return moduleLine > 0 ? ev.kb.line + moduleLine - 1 : 0;
}

/// The end of a KernelBench-format load that failed: the status kernelbench_host.py gave it.
bool kernelBenchFailure(Evaluation& ev, const json& err)
{
    const std::string status = err.value("status", std::string("runtime_error"));
    const std::string stage = err.value("stage", std::string("compile"));
    std::string message = err.value("message", std::string());
    const int line = answerLine(ev, err.value("line", 0));
    // An honest mistake's kind, for a researcher to tally (undefined_name, load_inline_keyword,
    // extension_name_mismatch, placeholder: kernelbench_host.py); a format error has its own.
    if (err.contains("code") && err["code"].is_string() && status != "format_error")
        ev.res["error_code"] = err["code"];
    if (status == "rejected") {
        json v = json::array();
        const json detail = err.contains("detail") && err["detail"].is_array() ? err["detail"] : json::array({{{"line", err.value("line", 0)}, {"reason", message}}});
        for (const auto& r : detail)
            v.push_back({{"op", "python"}, {"reason", r.value("reason", std::string())},
                         {"where", r.value("line", 0) > 0 ? "answer line " + std::to_string(answerLine(ev, r.value("line", 0))) : ""}});
        ev.res["sandbox"] = v;
        if (line > 0)
            message += " (answer line " + std::to_string(line) + ")";
        ev.res["compile"] = ev.compile;
        return ev.stop("rejected", "sandbox", message);
    }
    if (status == "no_device") { // the machine cannot build it (kernelbench_host.py, MachineError)
        ev.res["compile"] = ev.compile;
        return ev.stop("no_device", "load", message);
    }
    if (status == "format_error") {
        ev.res["format_error"] = {{"code", err.value("code", std::string("missing_model_new"))}, {"message", message}, {"line", line}};
        return ev.stop("format_error", "parse", message);
    }
    if (status == "compile_error") {
        ev.compile["ok"] = false;
        ev.compile["log"] = message;
    }
    ev.res["compile"] = ev.compile;
    return ev.stop(status, stage, message);
}

/// Whether ModelNew holds the reference's parameters (names and shapes): every task parameter and
/// buffer must be there with its shape, and ModelNew may have no learned parameter the task lacks.
/// Buffers of its own (constants it registered) are allowed: they are not weights. When they
/// differ (`conv_weight` for `conv.weight`, say), the evaluator's weights cannot be put in, and
/// the answer is judged as KernelBench judges it: by its outputs, with the weights it made under
/// the run's seed, against a reference holding the weights KernelBench's Model would make
/// (docs/candidate-format.md, "Parameters"). The result says so (`parameters.weights`: "own",
/// and a note `parameters_differ`), for a researcher to tally.
bool parametersMatch(Evaluation& ev, const json& modelParams)
{
    std::map<std::string, std::pair<std::vector<int64_t>, bool>> model;
    for (const auto& p : modelParams)
        model[p[0].get<std::string>()] = {p[1].get<std::vector<int64_t>>(), p[2].get<bool>()};
    std::vector<std::string> problems;
    json reference = json::array(), theirs = json::array();
    for (size_t i = 0; i < ev.task.params.size(); ++i) {
        const ParamSpec& p = ev.task.params[i];
        const auto shape = ev.task.paramShape(i, ev.scale);
        reference.push_back({{"name", p.name}, {"shape", shape}, {"buffer", p.buffer}});
        auto it = model.find(p.name);
        if (it == model.end())
            problems.push_back("missing " + p.name + " " + shapeString(shape));
        else if (it->second.first != shape)
            problems.push_back(p.name + " is " + shapeString(it->second.first) + ", expected " + shapeString(shape));
    }
    for (const auto& [name, v] : model) {
        theirs.push_back({{"name", name}, {"shape", v.first}, {"buffer", v.second}});
        const bool known = std::any_of(ev.task.params.begin(), ev.task.params.end(), [&](const ParamSpec& p) { return p.name == name; });
        if (!known && !v.second)
            problems.push_back("unexpected parameter " + name + " " + shapeString(v.first));
    }
    if (problems.empty())
        return true;
    std::string message = "ModelNew's parameters differ from the reference's: ";
    for (size_t i = 0; i < problems.size(); ++i)
        message += (i ? "; " : "") + problems[i];
    message += ". The reference has";
    for (size_t i = 0; i < reference.size(); ++i)
        message += std::string(i ? ", " : " ") + reference[i]["name"].get<std::string>() + " " +
                   shapeString(reference[i]["shape"].get<std::vector<int64_t>>());
    if (reference.empty())
        message += " none";
    message += "; ModelNew has";
    for (size_t i = 0; i < theirs.size(); ++i)
        message += std::string(i ? ", " : " ") + theirs[i]["name"].get<std::string>() + " " +
                   shapeString(theirs[i]["shape"].get<std::vector<int64_t>>());
    if (theirs.empty())
        message += " none";
    message += ". The evaluator's weights were not copied: ModelNew keeps those it made under the run's seed, the "
               "reference's are made as KernelBench's Model(*init_inputs) makes them, and the outputs decide";
    ev.res["parameters"] = {{"reference", reference}, {"model", theirs}, {"weights", "own"}};
    ev.res["notes"] = json::array({{{"code", "parameters_differ"}, {"message", message}}});
    return false;
}

/// 2-4 (KernelBench format). The module run (its load_inline extensions built, or taken from the
/// cache), ModelNew(*init_inputs) built after seeding and its parameters checked; without a device
/// only the build (no_device after it).
bool kernelBenchLoadStage(Evaluation& ev)
{
    ev.startStage("compile");
    const std::string arch = ev.cuda ? currentArch() : ev.req.value("arch", std::string("sm_90"));
    ev.compile = {{"ok", true}, {"log", ""}, {"arch", arch}, {"kernels", ev.kernelNames}, {"ms", 0.0}};
    const auto t0 = Clock::now();
    json builds;
    if (ev.device == "none") {
        json b = python::build(ev.kb.source, arch);
        ev.compile["ms"] = msSince(t0);
        ev.compile["extensions"] = b["builds"];
        if (!b.value("ok", false)) {
            json err = b;
            if (b.value("status", "") == "rejected")
                err["detail"] = b["refusals"];
            return kernelBenchFailure(ev, err);
        }
        ev.res["compile"] = ev.compile;
        return ev.stop("no_device", "load", "built and passed the sandbox check; no CUDA device to run it (" + ev.noCudaWhy + ")");
    }
    KernelBenchModel m = loadKernelBenchModel(ev.kb.source, ev.task.initInputValues(ev.scale), ev.seed, ev.cuda ? "cuda" : "cpu", arch);
    ev.compile["ms"] = msSince(t0);
    ev.compile["extensions"] = m.builds;
    std::string log;
    for (const auto& b : m.builds)
        log += "load_inline '" + b.value("name", std::string()) + "': " +
               (b.value("cached", false) ? "taken from the cache " : "built in ") + b.value("build_dir", std::string()) + "\n";
    ev.compile["log"] = log;
    if (!m.callable)
        return kernelBenchFailure(ev, m.error);
    ev.res["compile"] = ev.compile;
    for (const auto& b : m.builds)
        ev.launchesKernels = ev.launchesKernels || b.value("with_cuda", false);
    ev.res["torch_only"] = m.builds.empty();
    if (!parametersMatch(ev, m.parameters)) {
        ev.ownWeights = true;
        m.callable->keepOwnWeights();
    }
    ev.callable = std::move(m.callable);
    ev.endStage();
    return true;
}

/// 2a. compile the cuda block with NVRTC, or take the cubin compiled ahead for it.
bool compileCudaBlock(Evaluation& ev, const std::string& arch)
{
    const ParsedCandidate& cand = ev.cand();
    const json& req = ev.req;
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
        ev.cr.ok = true;
        ev.cr.arch = arch;
        ev.cr.cubin = std::move(shippedCubin);
        ev.compile["cached"] = true;
        ev.compile["log"] = req.value("compile_log", std::string());
        return true;
    }
    if (!cand.hasCuda)
        return true;
    ev.cr = refusedCuda ? CompileResult{} : compileCuda(cand.cuda, arch);
    if (refusedCuda)
        ev.cr.refused = refusedCuda;
    ev.compile["ok"] = ev.cr.ok;
    ev.compile["log"] = ev.cr.log;
    ev.compile["ms"] = ev.cr.ms;
    ev.compile["options"] = ev.cr.options;
    if (ev.cr.refused) {
        ev.compile["log"] = "";
        ev.res["compile"] = ev.compile;
        const std::string where = "cuda block line " + std::to_string(ev.cr.refused->line);
        ev.res["sandbox"] = json::array({{{"op", "#include"}, {"reason", ev.cr.refused->message}, {"where", where}}});
        return ev.stop("rejected", "sandbox", ev.cr.refused->message + " (" + where + ")");
    }
    if (!ev.cr.ok) {
        ev.res["compile"] = ev.compile;
        return ev.stop("compile_error", "compile", "NVRTC could not compile the cuda block");
    }
    return true;
}

/// 2b. compile the python block with the TorchScript frontend (after its pre-checks).
bool compileHostCode(Evaluation& ev)
{
    const ParsedCandidate& cand = ev.cand();
    try {
        ev.candUnit = compileScript(cand.python);
        ev.candFn = &forwardFunction(*ev.candUnit);
    } catch (const ScriptFormatError& e) {
        // The shape bounds (nesting, statement size): the answer's form, not its TorchScript.
        const int line = e.line > 0 ? cand.pythonLine + e.line - 1 : 0;
        ev.res["format_error"] = {{"code", e.code}, {"message", e.what()}, {"line", line}};
        return ev.stop("format_error", "parse", e.what());
    } catch (const ScriptRejected& e) {
        // Refused by the sandbox before compiling: as the graph check's refusals (sandboxStage).
        ev.res["compile"] = ev.compile;
        const std::string where = e.line > 0 ? "line " + std::to_string(e.line) : "";
        ev.res["sandbox"] = json::array({{{"op", e.op}, {"reason", e.reason}, {"where", where}}});
        return ev.stop("rejected", "sandbox", e.what());
    } catch (const std::exception& e) {
        ev.compile["ok"] = false;
        ev.compile["log"] = ev.compile["log"].get<std::string>() + "TorchScript (line numbers count from the python block, "
                            "which opens on answer line " + std::to_string(cand.pythonLine) + "):\n" + e.what();
        ev.res["compile"] = ev.compile;
        return ev.stop("compile_error", "compile", "the python block is not valid TorchScript");
    }
    ev.res["compile"] = ev.compile;
    return true;
}

/// 2. compile: NVRTC for the cuda block, the TorchScript frontend for the python block.
bool compileStage(Evaluation& ev)
{
    ev.startStage("compile");
    const std::string arch = ev.cuda ? currentArch() : ev.req.value("arch", std::string("sm_90"));
    ev.compile = {{"ok", true}, {"log", ""}, {"arch", arch}, {"kernels", ev.kernelNames}, {"ms", 0.0}};
    if (!compileCudaBlock(ev, arch) || !compileHostCode(ev))
        return false;
    ev.endStage();
    return true;
}

/// 3. sandbox: the compiled host code's graph, and the kernels it launches by name.
bool sandboxStage(Evaluation& ev)
{
    auto graph = inlinedGraph(*ev.candFn);
    auto violations = checkSandbox(*graph);
    if (!violations.empty()) {
        json v = json::array();
        std::string msg;
        for (const auto& x : violations) {
            v.push_back({{"op", x.op}, {"reason", x.reason}, {"where", x.where}});
            if (msg.empty())
                msg = x.op + " is not allowed in host code: " + x.reason + (x.where.empty() ? "" : " (" + x.where + ")");
        }
        ev.res["sandbox"] = v;
        return ev.stop("rejected", "sandbox", msg);
    }
    const auto launched = launchedKernelNames(*graph);
    for (const auto& name : launched) {
        if (std::find(ev.kernelNames.begin(), ev.kernelNames.end(), name) == ev.kernelNames.end())
            return ev.stop("format_error", "parse", "kb.launch names kernel '" + name + "', which the cuda block does not declare");
    }
    ev.launchesKernels = !launched.empty();
    ev.res["torch_only"] = !ev.launchesKernels;
    return true;
}

/// The context being made on a thread of its own beside the compile stage (startContextBeside),
/// until deviceStage or warm waits for it; invalid when none is on the way.
std::shared_future<double> g_contextOnTheWay;

/// The first CUDA use of this process: the context, torch's CUDA init and its caching allocator.
void createCudaContext(at::Device dev)
{
    torch::zeros({1}, at::TensorOptions().device(dev)).add_(1);
    cudaDeviceSynchronize();
    g_cudaContextReady = true;
}

/// The context as createCudaContext makes it, waiting for one on the way (an exception of its
/// making comes out here); the calling thread's device set too.
void ensureCudaContext(at::Device dev)
{
    if (g_contextOnTheWay.valid()) {
        const std::shared_future<double> onTheWay = g_contextOnTheWay;
        g_contextOnTheWay = {};
        onTheWay.get();
    }
    if (!g_cudaContextReady)
        createCudaContext(dev);
}

/// A fresh worker's first native evaluation: the context (~0.13-0.2 s on an H200, mostly the
/// driver's host work) and the evaluator's own kernels (NVRTC, CPU only) are made on threads of
/// their own while this thread compiles the candidate, instead of after it; deviceStage waits for
/// them. The candidate's code does not run before deviceStage either way.
void startContextBeside(Evaluation& ev)
{
    if (!ev.cuda || g_cudaContextReady || g_contextOnTheWay.valid())
        return;
    const at::Device dev = ev.dev;
    const int ordinal = ev.ordinal;
    const bool timer = ev.doTime;
    g_contextOnTheWay = std::async(std::launch::async, [dev, ordinal, timer] {
                            const auto t0 = Clock::now();
                            cudaSetDevice(ordinal); // this thread's device, for the synchronisation
                            auto ownKernels = std::async(std::launch::async, [ordinal, timer] {
                                precompileFusedCompare(ordinal);
                                if (timer)
                                    ClockProbe::precompile(ordinal);
                            });
                            createCudaContext(dev);
                            ownKernels.get();
                            return msSince(t0);
                        }).share();
}

/// After a KernelBench-format answer's module was imported: what its import changed of torch's
/// settings is recorded and set back, so that the reference and the candidate run under the
/// evaluator's (an honest `cudnn.benchmark = True` at import is no attack: a flag, not a verdict).
void resetGlobalsAfterImport(Evaluation& ev)
{
    json changes = ev.globals.changesTo(TorchGlobals::capture());
    if (changes.empty())
        return;
    ev.globals.apply();
    ev.globalsReset = true;
    ev.res["global_state"] = {{"changed_at", "import"}, {"changes", std::move(changes)}, {"action", "reset"}};
}

/// Before each reference call: the reference runs under the evaluator's settings, whatever the
/// candidate's last call left; what it left is kept for globalsUnchanged.
void restoreGlobals(Evaluation& ev)
{
    json changes = ev.globals.changesTo(TorchGlobals::capture());
    if (changes.empty())
        return;
    if (ev.globalsChangedInRun.is_null())
        ev.globalsChangedInRun = std::move(changes);
    ev.globals.apply();
}

/// After the candidate ran (correctness, timing, trace): a candidate that changes torch's settings
/// while it runs is `rejected`, naming each setting. The reference never ran under them
/// (restoreGlobals), but the numbers of a candidate that changes how the process computes are
/// not comparable, and its next call could change them where no reset reaches (another thread).
bool globalsUnchanged(Evaluation& ev, const char* stage)
{
    restoreGlobals(ev);
    if (ev.globalsChangedInRun.is_null())
        return true;
    json changes = std::move(ev.globalsChangedInRun);
    const std::string what = describeChanges(changes);
    ev.res["global_state"] = {{"changed_at", stage}, {"changes", std::move(changes)}, {"action", "rejected"}};
    return ev.stop(
        "rejected", stage,
        "the candidate changes torch's global settings while it runs (" + what +
            "): they decide how the reference runs too, so the evaluator owns them (docs/protocol.md, global_state)");
}

/// The device for the stages that run: none stops here (no_device); the first CUDA use in this
/// process creates the context, a cost of a fresh worker kept apart from the candidate's stages.
bool deviceStage(Evaluation& ev)
{
    if (ev.device == "none")
        return ev.stop("no_device", "load", "compiled and passed the sandbox check; no CUDA device to run it (" + ev.noCudaWhy + ")");
    if (ev.cuda) {
        ev.shareGpu(); // from here on the evaluation uses the GPU

        if (!g_cudaContextReady || g_contextOnTheWay.valid()) {
            // The CPU-only preparation (the reference's TorchScript, the roofline's analysis, the
            // worker's own kernels through NVRTC) runs beside the context's creation, or beside
            // the wait for the one started beside the compile stage.
            ev.prepared = std::async(std::launch::async, [&ev] { return ev.prepare(); }).share();
            ev.startStage("cuda_init");
            if (g_contextOnTheWay.valid())
                ev.addDetail("cuda_init", "beside_compile_own", g_contextOnTheWay.get());
            ensureCudaContext(ev.dev);
            ev.endStage();
            // A KernelBench answer's module runs next, in the embedded Python (its `import torch`
            // among it): the preparation's TorchScript is done before that, not beside it.
            if (ev.format == AnswerFormat::KernelBench)
                ev.prep();
        }
    }
    // Every global setting the evaluator's, for the reference and the candidate alike: the
    // worker's own at its start, with the profile's TF32 flags (torchglobals.h).
    ev.globals = workerStartGlobals();
    ev.globals.tf32CuBLAS = ev.prof.tf32CuBLAS;
    ev.globals.tf32CuDNN = ev.prof.tf32CuDNN;
    ev.globals.apply();
    // What libtorch says it now does, not what the profile asked for.
    ev.res["precision"] = {{"allow_tf32_cublas", at::globalContext().allowTF32CuBLAS()},
                           {"allow_tf32_cudnn", at::globalContext().allowTF32CuDNN()}};
    return true;
}

/// 4. load the compiled module, and what kb.launch needs to launch its kernels.
bool loadStage(Evaluation& ev)
{
    ev.startStage("load");
    if (ev.cand().hasCuda && ev.cuda) {
        std::string err;
        ev.module = LoadedModule::load(ev.cr.cubin, &err);
        if (!ev.module) {
            ev.checkCuda();
            return ev.stop("runtime_error", "load", "could not load the compiled module: " + err);
        }
    }
    ev.endStage();
    ev.launchCtx.module = ev.module.get();
    for (const auto& k : ev.cand().kernels) {
        std::vector<std::size_t> sizes;
        for (const auto& p : k.params)
            sizes.push_back(std::size_t(p.bytes));
        ev.launchCtx.declaredSizes[k.name] = sizes;
    }
    return true;
}

/// Runs the candidate once; an exception or a CUDA fault after it is reported through *err.
bool runCandidate(Evaluation& ev, std::vector<c10::IValue> args, c10::IValue* out, std::string* err)
{
    try {
        *out = ev.callable->bind(std::move(args))();
    } catch (const std::exception& e) {
        *err = e.what();
    }
    if (ev.cuda) {
        CudaFault f = ev.checkCuda();
        if (f.any)
            *err = (err->empty() ? "" : *err + "\n") + "CUDA error after the candidate ran: " + f.message;
    }
    return err->empty();
}

} // namespace

/// A cheap fingerprint of each tensor's bytes, taken where it lives, so a candidate that writes
/// outside its own buffers into the evaluator's copies is named as such instead of just failing;
/// an undefined tensor counts as 0. It is the sum (mod 2^64) of the bytes read as 64-bit words,
/// plus the trailing bytes (< 8): a change of any one word changes it. The words are summed in
/// place: summing the bytes with dtype kLong made ATen convert the tensor to int64 first, an 8×
/// copy (an 8 GiB input: 64 GiB more on the GPU, and the time to write it). All sums come to the
/// host in one copy: a task with dozens of parameters would otherwise synchronise once per
/// parameter per check.
std::vector<int64_t> byteFingerprints(const std::vector<at::Tensor>& tensors)
{
    // On one GPU: the evaluator's own kernel (outputcompare.h), a launch per tensor and one
    // copy back, without a first load of ATen's reductions in a fresh worker. Same sums.
    {
        std::vector<at::Tensor> held; // the contiguous, aligned bytes, alive until the sums are back
        std::vector<DeviceBytes> spans;
        std::vector<size_t> where;
        int device = -1;
        bool oneGpu = true;
        for (size_t i = 0; i < tensors.size() && oneGpu; ++i) {
            if (!tensors[i].defined() || tensors[i].numel() == 0)
                continue;
            if (!tensors[i].is_cuda() || (device >= 0 && tensors[i].device().index() != device)) {
                oneGpu = false;
                break;
            }
            device = tensors[i].device().index();
            at::Tensor bytes = tensors[i].contiguous();
            if (reinterpret_cast<std::uintptr_t>(bytes.data_ptr()) % 8 != 0)
                bytes = bytes.clone(); // a view at an odd offset: words need an 8-byte-aligned start
            spans.push_back({bytes.data_ptr(), int64_t(bytes.nbytes())});
            held.push_back(std::move(bytes));
            where.push_back(i);
        }
        std::string why;
        if (oneGpu && !spans.empty()) {
            if (const auto sums = fusedWordSums(spans, device, &why)) {
                std::vector<int64_t> out(tensors.size(), 0);
                for (size_t k = 0; k < where.size(); ++k)
                    out[where[k]] = static_cast<int64_t>((*sums)[k]);
                return out;
            }
        }
    }
    std::vector<at::Tensor> sums;
    std::vector<size_t> where;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i].defined() || tensors[i].numel() == 0)
            continue;
        at::Tensor bytes = tensors[i].contiguous().view({-1}).view(at::kByte);
        const int64_t n = bytes.numel(), whole = n / 8 * 8;
        if (whole > 0 && bytes.storage_offset() % 8 != 0)
            bytes = bytes.clone(); // a view at an odd offset: words need an 8-byte-aligned start
        at::Tensor sum = bytes.narrow(0, whole, n - whole).sum(at::kLong); // the tail: under 8 bytes
        if (whole > 0)
            sum = sum + bytes.narrow(0, 0, whole).view(at::kLong).sum();
        sums.push_back(sum);
        where.push_back(i);
    }
    std::vector<int64_t> out(tensors.size(), 0);
    if (sums.empty())
        return out;
    const at::Tensor host = at::stack(sums).to(at::kCPU);
    const int64_t* v = host.data_ptr<int64_t>();
    for (size_t k = 0; k < where.size(); ++k)
        out[where[k]] = v[k];
    return out;
}

namespace {

/// Byte fingerprints of the tensors among `values`, in order (a scalar counts as 0).
std::vector<int64_t> fingerprints(const std::vector<c10::IValue>& values)
{
    std::vector<at::Tensor> tensors;
    for (const auto& v : values)
        tensors.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
    return byteFingerprints(tensors);
}

std::vector<int64_t> paramFingerprints(const Evaluation& ev)
{
    std::vector<at::Tensor> tensors;
    for (const ParamSpec& p : ev.task.params)
        tensors.push_back(ev.params.at(p.name));
    return byteFingerprints(tensors);
}

/// Whether the evaluator's own copies of a trial's inputs (`prints`: taken before the candidate
/// ran) and of the parameters are as they were: the reference runs on clones of them after the
/// candidate, so a candidate writing outside its arguments into them must be caught first.
std::string ownCopiesProblem(const Evaluation& ev, const std::vector<c10::IValue>& inputs, const std::vector<int64_t>& prints)
{
    if (fingerprints(inputs) != prints || paramFingerprints(ev) != ev.paramPrints)
        return "the evaluator's own copy of the inputs or parameters changed while the candidate ran: "
               "the candidate writes outside its own buffers";
    return {};
}

/// The reference on fresh clones of `inputs` (weights too): run after the candidate on the same
/// inputs, so its output is not there to be read while the candidate runs (issue 11).
at::Tensor referenceOutput(Evaluation& ev, const std::vector<c10::IValue>& inputs)
{
    restoreGlobals(ev);
    return (*ev.refFn)(cloneArgs(inputs, ev.params, ev.task, true)).toTensor();
}

/// Drops a reference output; on the GPU it is first made wrong at every element, so the caching
/// allocator does not hand a later candidate the block with right answers in it (torch.empty):
/// floating point filled with NaN (never within tolerance), integers bitwise negated and
/// booleans logically (an integer output, argmax's, differs from ~x everywhere; no one value would).
void releaseReference(Evaluation& ev, at::Tensor& t)
{
    if (t.defined() && ev.cuda && t.numel() > 0) {
        if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))
            t.fill_(std::numeric_limits<float>::quiet_NaN());
        else if (t.scalar_type() == at::kBool)
            t.logical_not_();
        else if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
            t.bitwise_not_();
    }
    t = at::Tensor();
}

/// Records `degenerate` from the reference outputs kept so far (trials 0 and 1) and releases them.
void settleDegenerate(Evaluation& ev)
{
    if (ev.degenerateRefs.empty())
        return;
    ev.res["degenerate"] = degenerateCheck(ev.degenerateRefs);
    for (at::Tensor& t : ev.degenerateRefs)
        releaseReference(ev, t);
    ev.degenerateRefs.clear();
}

/// 5. reference: the task's forward compiled and its parameters made. Its outputs are computed
/// trial by trial after the candidate's (correctnessStage), never before.
bool referenceStage(Evaluation& ev)
{
    ev.startStage("reference");
    const Evaluation::Prepared& prep = ev.prep();
    ev.addDetail("reference", "preparation_wait", msSince(ev.tStage));
    ev.addDetail("reference", "preparation_own", prep.ms);
    if (prep.refError)
        std::rethrow_exception(prep.refError);
    ev.refUnit = prep.refUnit;
    ev.refFn = &forwardFunction(*ev.refUnit);
    ev.params = makeParams(ev.task, ev.scale, ev.dev, ev.seed, ev.ownWeights ? DrawnOn::CpuAsKernelBench : DrawnOn::Device);
    ev.paramPrints = paramFingerprints(ev);
    ev.rangeSeed = trialSeed(ev.seed, ev.prof.correctnessTrials);
    ev.res["reference_outputs_on"] = "after_candidate";
    ev.endStage();
    return true;
}

/// The end of the correctness stage on a failed check: `failure` ({trial, reason, …}) recorded
/// in `correctness`, then stop.
bool failCorrectness(Evaluation& ev, json& corr, json failure, const std::string& status, const std::string& message)
{
    settleDegenerate(ev);
    corr["failure"] = std::move(failure);
    ev.res["correctness"] = corr;
    return ev.stop(status, "correctness", message);
}

/// What makes a returned value wrong before its numbers are compared, or "".
std::string outputProblem(const Evaluation& ev, const c10::IValue& outV, const std::vector<c10::IValue>& argsSeen,
                          const std::vector<c10::IValue>& inputs)
{
    if (outV.isTensor()) {
        const std::string aliased = aliasedArgument(outV.toTensor(), argsSeen, ev.task);
        if (!aliased.empty())
            return "the output shares memory with the argument '" + aliased +
                   "' (returns an input or a view of one); forward must return a new tensor";
    }
    if (!outV.isTensor())
        return "forward returned " + outV.tagKind() + ", expected a Tensor";
    const at::Tensor out = outV.toTensor();
    if (out.device().type() != ev.dev.type())
        return "output is on " + out.device().str() + ", expected " + ev.dev.str();
    const std::string modified = modifiedArgument(argsSeen, inputs, ev.params, ev.task);
    if (!modified.empty())
        return "the candidate changed its argument '" + modified + "': forward must not write to its inputs";
    return {};
}

/// The reference after the candidate, with its own failure as the evaluation's end: false (and
/// the response's end set) when the reference itself failed.
bool runReferenceAfter(Evaluation& ev, const std::vector<c10::IValue>& inputs, at::Tensor* out)
{
    *out = referenceOutput(ev, inputs);
    if (ev.cuda) {
        CudaFault f = ev.checkCuda();
        if (f.any)
            return ev.stop("runtime_error", "reference", "the reference itself failed: " + f.message);
    }
    return true;
}

/// 6. correctness: the profile's trials, a second run on the first trial's inputs (races), and
/// the range trial on N(0,1) inputs. On each trial's inputs the candidate runs first; the
/// reference then runs on clones of the same inputs and the two are compared.
bool correctnessStage(Evaluation& ev)
{
    ev.startStage("correctness");
    const Task& task = ev.task;
    const ProtocolProfile& prof = ev.prof;
    json corr = {{"trials", prof.correctnessTrials}, {"passed", 0}, {"atol", prof.atol}, {"rtol", prof.rtol},
                 {"max_abs_diff", 0.0}, {"max_rel_diff", 0.0}, {"deterministic", nullptr}, {"failure", nullptr}};
    double maxAbs = 0, maxRel = 0;
    at::Tensor firstOutput;
    // Where the trials' time goes (stage_detail_ms.correctness); each part ends at a synchronisation.
    Clock::time_point lapStart = Clock::now();
    const auto lap = [&](const char* part) {
        const auto now = Clock::now();
        ev.addDetail("correctness", part, std::chrono::duration<double, std::milli>(now - lapStart).count());
        lapStart = now;
    };
    for (int k = 0; k < prof.correctnessTrials; ++k) {
        // From the last trial on (~50 ms before the timing on an H200: it, the second run and the
        // range trial), no new warm part of a spare starts, so the timing finds the lock (nearly)
        // free instead of waiting for parts that began just before it asked (docs/decisions.md,
        // 2026-12-02, session 10). Not before: the spares warm beside the trials until then.
        if (k > 0 && k == prof.correctnessTrials - 1)
            ev.announceTiming();
        const auto trialStart = Clock::now();
        auto inputs = makeInputs(task, ev.scale, ev.dev, trialSeed(ev.seed, k));
        const auto prints = fingerprints(inputs);
        lap("inputs");
        c10::IValue outV;
        std::string err;
        auto args = cloneArgs(inputs, ev.params, task, true);
        const auto argsSeen = args; // shares the tensors: for the aliasing check
        const bool ran = runCandidate(ev, std::move(args), &outV, &err);
        lap("candidate");
        if (!ran)
            return failCorrectness(ev, corr, {{"trial", k}, {"reason", err}}, "runtime_error", err);
        std::string problem = outputProblem(ev, outV, argsSeen, inputs);
        if (problem.empty())
            problem = ownCopiesProblem(ev, inputs, prints);
        lap("write_checks");
        if (!problem.empty())
            return failCorrectness(ev, corr, {{"trial", k}, {"reason", problem}}, "incorrect", problem);
        at::Tensor out = outV.toTensor();
        at::Tensor ref;
        const bool refRan = runReferenceAfter(ev, inputs, &ref);
        lap("reference");
        if (!refRan)
            return false;
        if (k == 0)
            ev.outputBytes = double(ref.nbytes());
        Comparison c = compareOutputs(out, ref, prof.atol, prof.rtol);
        lap("compare");
        if (k < 2)
            ev.degenerateRefs.push_back(ref);
        else
            releaseReference(ev, ref);
        if (k == 1 || k + 1 == prof.correctnessTrials)
            settleDegenerate(ev);
        lap("degenerate_and_release");
        if (k == 0)
            ev.addDetail("correctness", "first_trial_total", msSince(trialStart)); // its parts are counted above too
        maxAbs = std::max(maxAbs, c.maxAbs);
        maxRel = std::max(maxRel, c.maxRel);
        corr["max_abs_diff"] = maxAbs;
        corr["max_rel_diff"] = maxRel;
        if (!c.ok) {
            json failure = {{"trial", k}, {"reason", c.reason}};
            if (!c.detail.is_null())
                failure["detail"] = c.detail;
            return failCorrectness(ev, corr, failure, "incorrect", "trial " + std::to_string(k + 1) + ": " + c.reason);
        }
        corr["passed"] = k + 1;
        if (k == 0)
            firstOutput = out;
    }
    settleDegenerate(ev);
    lap("degenerate_and_release");
    ev.announceTiming(); // a single trial: from here
    // Run twice on the same inputs: a racy kernel shows as a difference. The reference of these
    // inputs is recomputed (after the candidate) only where the two runs differ.
    {
        auto inputs = makeInputs(task, ev.scale, ev.dev, trialSeed(ev.seed, 0));
        const auto prints = fingerprints(inputs);
        c10::IValue outV;
        std::string err;
        if (!runCandidate(ev, cloneArgs(inputs, ev.params, task, true), &outV, &err))
            return failCorrectness(ev, corr, {{"trial", 0}, {"reason", "second run: " + err}}, "runtime_error", err);
        if (!outV.isTensor())
            return failCorrectness(ev, corr, {{"trial", 0}, {"reason", "second run: forward returned " + outV.tagKind()}},
                                   "incorrect", "second run: forward returned " + outV.tagKind() + ", expected a Tensor");
        at::Tensor again = outV.toTensor();
        const bool identical = equalValues(again, firstOutput);
        corr["deterministic"] = identical;
        if (!identical) {
            const std::string own = ownCopiesProblem(ev, inputs, prints);
            if (!own.empty())
                return failCorrectness(ev, corr, {{"trial", 0}, {"reason", own}}, "incorrect", own);
            at::Tensor ref;
            if (!runReferenceAfter(ev, inputs, &ref))
                return false;
            Comparison c = compareOutputs(again, ref, prof.atol, prof.rtol);
            releaseReference(ev, ref);
            if (!c.ok) {
                const std::string reason = "nondeterministic: a second run on the same inputs gave a different, wrong result: " + c.reason;
                return failCorrectness(ev, corr, {{"trial", 0}, {"reason", reason}}, "incorrect", reason);
            }
        }
    }
    lap("determinism");
    if (prof.rangeTrial) {
        json range = {{"generator", "randn"}, {"atol", prof.rangeTolerance}, {"rtol", prof.rangeTolerance}};
        auto inputs = makeInputs(task, ev.scale, ev.dev, ev.rangeSeed, "randn");
        const auto prints = fingerprints(inputs);
        c10::IValue outV;
        std::string err;
        if (!runCandidate(ev, cloneArgs(inputs, ev.params, task, true), &outV, &err))
            return failCorrectness(ev, corr, {{"trial", "range"}, {"reason", err}}, "runtime_error",
                                   "range trial (N(0,1) inputs): " + err);
        const std::string own = ownCopiesProblem(ev, inputs, prints);
        if (!own.empty())
            return failCorrectness(ev, corr, {{"trial", "range"}, {"reason", own}}, "incorrect", own);
        at::Tensor ref;
        if (!runReferenceAfter(ev, inputs, &ref))
            return false;
        // Skipped where the reference itself is not finite on N(0,1) inputs (a task defined only
        // on [0,1) would be).
        if (!allFinite(ref)) {
            range["skipped"] = "the reference is not finite on N(0,1) inputs";
        } else {
            Comparison c;
            if (outV.isTensor()) {
                c = compareOutputs(outV.toTensor(), ref, prof.rangeTolerance, prof.rangeTolerance);
            } else {
                c.ok = false;
                c.reason = "forward returned " + outV.tagKind() + ", expected a Tensor";
            }
            range["passed"] = c.ok;
            range["max_abs_diff"] = c.maxAbs;
            if (!c.ok) {
                releaseReference(ev, ref);
                corr["range_trial"] = range;
                return failCorrectness(ev, corr, {{"trial", "range"}, {"reason", c.reason}}, "incorrect",
                                       "right on U[0,1) inputs but wrong on N(0,1) inputs: " + c.reason);
            }
        }
        releaseReference(ev, ref);
        corr["range_trial"] = range;
        lap("range_trial");
    }
    ev.res["correctness"] = corr;
    ev.endStage();
    return true;
}

/// CUPTI's id of the stream the timer records its events on (the legacy default stream, where
/// torch's ops and kb.launch run): a fill kernel's, traced alone (where the shared trace lost its record). nullopt where it cannot be traced.
std::optional<uint32_t> timedStreamId(at::Device dev)
{
    KernelTracer tracer;
    std::string err;
    syncCuda();
    if (!tracer.start(&err))
        return std::nullopt;
    at::Tensor marker = torch::zeros({1}, at::TensorOptions().device(dev));
    syncCuda();
    tracer.stop();
    const auto records = tracer.take();
    if (records.empty())
        return std::nullopt;
    return records.front().streamId;
}

/// 8. trace: which kernels ran (CUPTI), once on the timing inputs, after timing: CUPTI attached
/// makes launches dearer, so nothing is timed while it is (detached here, detachCupti). Fails
/// only where kernels ran on a stream other than the timed one: the timer's events cannot see
/// that work (KernelBench's "non-default stream" hack), so its times were the launch's, not the
/// work's; the speed-up is dropped then.
bool traceStage(Evaluation& ev)
{
    ev.startStage("trace");
    // CUPTI is detached on every way out, unless the evaluation goes on under it: the traffic
    // stage's profiler, which cannot start after a detach (detachCupti) and retires this worker
    // instead (trafficStage), or the attached retime (evaluate).
    // Its time is `stage_detail_ms.trace.detach`: after the stage's end, inside the request's total.
    struct Detach {
        Evaluation& ev;
        bool on;
        ~Detach()
        {
            if (!on)
                return;
            const auto t0 = Clock::now();
            detachCupti();
            try {
                ev.addDetail("trace", "detach", msSince(t0));
            } catch (...) { // a destructor: the time is only a report
            }
        }
    } detach{ev, ev.cuda};
    if (ev.cuda) {
        KernelTracer tracer;
        std::string err;
        auto args = cloneArgs(ev.timingInputs, ev.params, ev.task, true); // before tracing: clones are not the candidate's
        syncCuda();
        auto t0 = Clock::now();
        if (tracer.start(&err)) {
            // The stream the timer records its events on (the legacy default stream, where torch's
            // ops and kb.launch run): a one-element fill's, traced first in the same trace and
            // finished before the candidate starts, so its record is the earliest.
            (void)torch::zeros({1}, at::TensorOptions().device(ev.dev));
            syncCuda();
            ev.addDetail("trace", "stream_probe", msSince(t0)); // CUPTI's attach included
            const int before = ev.launchCtx.launches;
            c10::IValue outV;
            std::string runErr;
            runCandidate(ev, std::move(args), &outV, &runErr);
            tracer.stop();
            auto records = tracer.take();
            std::optional<uint32_t> timed;
            const auto marker = std::min_element(records.begin(), records.end(), [](const KernelRecord& x, const KernelRecord& y) {
                return x.startNs < y.startNs;
            });
            if (marker != records.end() && marker->name.find("FillFunctor") != std::string::npos) {
                timed = marker->streamId;
                records.erase(marker);
            } else {
                const auto t1 = Clock::now();
                timed = timedStreamId(ev.dev); // the fill's record is not there: traced alone
                ev.addDetail("trace", "stream_probe_alone", msSince(t1));
            }
            ev.res["kernels"] = kernelSummary(records, ev.kernelNames);
            ev.res["custom_launches"] = ev.launchCtx.launches - before;
            int elsewhere = 0;
            std::string example;
            // The candidate's own kernels only: what torch, cuBLAS and cuDNN launch is theirs.
            for (const auto& r : records)
                if (timed && r.streamId != *timed && isCustomKernel(r.name, ev.kernelNames) && elsewhere++ == 0)
                    example = r.name;
            if (elsewhere > 0) {
                ev.res["torch_only"] = !ev.launchesKernels;
                ev.res.erase("speedup");
                return ev.stop("incorrect", "timing",
                               std::to_string(elsewhere) + " of " + std::to_string(records.size()) +
                                   " kernels (its own) ran on a stream other than the current one (first: " + example +
                                   "): the timer cannot see that work; launch on the current stream");
            }
        } else {
            ev.res["kernels_error"] = err;
        }
    }
    ev.res["torch_only"] = !ev.launchesKernels;
    detach.on = ev.cuda && !ev.profileTraffic && !ev.retimeAttached;
    ev.endStage();
    return true;
}

/// Raised from a timing prepare when a checked timed call's output differs from its reference.
struct TimedOutputMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Free memory for the timing sets: the device's (blocks torch's caching allocator holds count as
/// used, so the rule errs towards fewer sets), or the host's available pages.
double freeMemoryBytes(const Evaluation& ev)
{
    if (ev.cuda) {
        size_t freeBytes = 0, totalBytes = 0;
        if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess)
            return double(freeBytes);
        cudaGetLastError();
        return 0;
    }
    const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? double(pages) * double(size) : 0;
}

double tensorBytes(const std::vector<c10::IValue>& values)
{
    double bytes = 0;
    for (const auto& v : values)
        if (v.isTensor())
            bytes += double(v.toTensor().nbytes());
    return bytes;
}

/// The roofline floor of this evaluation and the flags it sets (roofline.h); on the CPU, or
/// where the analysis or the device facts are missing, only the speed-up warning.
void rooflineCheck(Evaluation& ev, const measure::Comparison& timed)
{
    const double candMs = timed.candidate.statistic(ev.prof.statistic);
    const double refMs = timed.reference.statistic(ev.prof.statistic);
    const std::optional<double> speedup = timed.speedup(ev.prof.statistic);
    json facts;
    int ordinal = 0;
    if (ev.cuda && cudaGetDevice(&ordinal) == cudaSuccess)
        facts = deviceFacts(ordinal);
    json analysis;
    std::string why = ev.cuda ? "" : "no roofline on the CPU";
    if (why.empty() && !facts.value("available", false))
        why = "no device facts: " + facts.value("reason", std::string());
    if (why.empty()) {
        const Evaluation::Prepared& prep = ev.prep();
        if (prep.analysisError.empty())
            analysis = prep.analysis;
        else
            why = "the task's analysis failed: " + prep.analysisError;
    }
    if (!why.empty()) {
        json flags = json::array();
        if (speedup && *speedup > roofline::kSpeedupWarning)
            flags.push_back("speedup_over_10x");
        ev.res["flags"] = flags;
        ev.res["roofline"] = {{"floor_ms", nullptr}, {"reason", why}};
        return;
    }
    roofline::Precision precision;
    precision.tf32 = ev.prof.anyTf32();
    precision.tolerance = std::max(ev.prof.atol, ev.prof.rtol);
    precision.l2Flush = ev.prof.l2Flush;
    for (const InputSpec& in : ev.task.inputs)
        precision.lowPrecisionInputs = precision.lowPrecisionInputs || in.dtype == "float16" || in.dtype == "bfloat16";
    const json& measured = roofline::measuredCeilings();
    const json sameDevice = measured.value("ordinal", -1) == ordinal ? measured : json::object();
    const roofline::Ceilings c = roofline::chooseCeilings(facts, sameDevice, precision);
    const roofline::Floor floor =
        roofline::floorOf(roofline::boundFlops(analysis), roofline::boundBytes(analysis, c, precision.l2Flush), c);
    json a = roofline::assess(floor, c, candMs, refMs, speedup);
    ev.res["flags"] = a["flags"];
    ev.res["roofline"] = a["roofline"];
}

/// What a cached reference timing depends on (measure::ReuseKey): the task, scale, seed, the
/// profile's settings as this request has them, the device and its clocks, the input sets.
measure::ReuseKey reuseKey(const Evaluation& ev, int inputSets)
{
    measure::ReuseKey k;
    k.task = ev.task.id;
    k.scale = ev.scale == Scale::Full ? "full" : "smoke";
    k.seed = ev.seed;
    k.profile = ev.res.value("profile", json::object()).dump();
    int ordinal = 0;
    cudaGetDevice(&ordinal);
    k.device = ordinal;
    const json facts = deviceFacts(ordinal);
    k.defaultClockMhz = facts.value("sm_clock_khz", 0) / 1000;
    k.memoryClockMhz = facts.value("memory_clock_khz", 0) / 1000;
    k.inputSets = inputSets;
    return k;
}

/// 7. timing: the eager reference and the candidate, the same way, in this process (measure.cpp).
/// The calls rotate over input sets (measure::timingSetCount) so that consecutive calls never see
/// the same inputs; the candidate's outputs of the first and last timed call on each set are
/// checked against that set's reference output made after it (settle, below).
bool timingStage(Evaluation& ev)
{
    if (!ev.doTime)
        return true;
    ev.startStage("timing");
    auto lapStart = Clock::now();
    const auto lap = [&](const char* part) {
        const auto now = Clock::now();
        ev.addDetail("timing", part, std::chrono::duration<double, std::milli>(now - lapStart).count());
        lapStart = now;
    };
    double checksMs = 0, prepareMs = 0; // inside the measurement loop, outside its timed brackets
    std::vector<std::vector<c10::IValue>> sets{ev.timingInputs};
    const double setBytes = tensorBytes(ev.timingInputs) + ev.outputBytes;
    const int nSets = measure::timingSetCount(setBytes, freeMemoryBytes(ev));
    for (int k = 1; k < nSets; ++k)
        sets.push_back(makeInputs(ev.task, ev.scale, ev.dev, trialSeed(ev.seed, 1000 + k)));
    std::vector<std::vector<int64_t>> prints;
    for (const auto& set : sets)
        prints.push_back(fingerprints(set));
    if (ev.cuda)
        syncCuda(); // the sets' generation and fingerprints, in input_sets
    lap("input_sets");
    // The GPU to itself from the first timed call to the last: no other worker on this GPU warms
    // (shared), times or profiles (exclusive) meanwhile (docs/protocol.md, the quiet lock). The
    // adaptive method takes it after its warm-up (measure::Settings::quiet), which runs under the
    // evaluation's share while the parts that others began before the timing's intent end.
    std::unique_ptr<GpuQuietLock::Hold> quiet;
    const auto takeQuiet = [&ev, &quiet]() -> double {
        ev.measureGpu();
        quiet = std::make_unique<GpuQuietLock::Hold>(ev.cuda ? ev.quietLock : nullptr, GpuQuietLock::Mode::Exclusive);
        if (!quiet->error().empty())
            ev.res["gpu_quiet_lock_error"] = quiet->error();
        return quiet->waitMs();
    };
    const int trials = ev.prof.timing.trials;
    std::set<int> checked;
    for (int k = 0; k < nSets; ++k)
        for (int call : measure::checkedCalls(k, nSets, trials))
            checked.insert(call);

    // The reference's last timed (or warm-up) output: kept past its call and released filled with
    // NaN in the next prepare, outside the timed bracket and before the next call, as every other
    // reference output is (releaseReference). Freed as it was, with its values in it, the caching
    // allocator could hand its block to the candidate's torch.empty on the same inputs right after
    // (an R C pair), and a candidate that stops computing once it is timed would return the answer.
    at::Tensor refOut;
    struct ReleaseOnExit { // a mismatch or a fault leaves the stage early: the same release then
        Evaluation& ev;
        at::Tensor& t;
        ~ReleaseOnExit()
        {
            try {
                releaseReference(ev, t);
            } catch (...) {
                t = at::Tensor(); // a faulted context: the fill fails, and the worker ends after this evaluation
            }
        }
    } releaseRefOut{ev, refOut};
    // Weights are shared across calls, inputs and buffers copied (cloneArgs), outside the timed call.
    // Every call gets the next sequence number as it is prepared (the calls run in that order), so
    // that a check knows whether the reference output kept (refOut) was made after the candidate's
    // call on the same set: a candidate-first pair (C R) on one set.
    int seq = 0, refOutSet = -1, refOutSeq = -1;
    at::Tensor pendingOut;
    int pendingSet = -1, pendingCall = -1, pendingSeq = -1, checks = 0;
    // Checks the output kept from the last checked call (not timed: it runs in the next prepare,
    // before refOut is released). Every timed call's output is kept until the next prepare; it is
    // checked where the call is one of `checked`, or (force) where it is the last timed call, which
    // the adaptive method knows only once it stopped. The reference's output to compare with is
    // the timed one that followed it on the same inputs (a C R pair), else the reference run again
    // on clones of that set. Either way it was made after the candidate's call and is released
    // before the candidate's next one, and the evaluator's copies of the inputs and parameters
    // are checked first (the candidate writes outside its own buffers otherwise).
    auto settle = [&](bool force) {
        if (pendingSet < 0)
            return;
        const int set = pendingSet, call = pendingCall;
        const bool refOutFollows = refOut.defined() && refOutSet == set && refOutSeq > pendingSeq;
        pendingSet = -1;
        at::Tensor out = pendingOut;
        pendingOut = at::Tensor();
        if (!force && checked.count(call) == 0)
            return;
        const auto t0 = Clock::now();
        struct AddTime {
            double& to;
            Clock::time_point t0;
            ~AddTime() { to += msSince(t0); }
        } addTime{checksMs, t0};
        std::string reason = ownCopiesProblem(ev, sets[size_t(set)], prints[size_t(set)]);
        if (reason.empty()) {
            at::Tensor ranAgain = refOutFollows ? at::Tensor() : referenceOutput(ev, sets[size_t(set)]);
            const at::Tensor& ref = refOutFollows ? refOut : ranAgain;
            const Comparison c = out.defined() ? compareOutputs(out, ref, ev.prof.atol, ev.prof.rtol) : Comparison{false, "no tensor output"};
            releaseReference(ev, ranAgain);
            if (!c.ok)
                reason = c.reason;
        }
        ++checks;
        if (!reason.empty())
            throw TimedOutputMismatch("output of a timed call differs from its reference: the candidate may reuse an "
                                      "earlier result (timed call " + std::to_string(call + 1) + ", input set " +
                                      std::to_string(set + 1) + " of " + std::to_string(nSets) + ": " + reason + ")");
    };
    auto prepareRef = [&, warm = 0](int index) mutable -> measure::Call {
        const auto t0 = Clock::now();
        // A candidate call checked against the reference output about to be released (C R, then R).
        if (pendingSet >= 0 && refOut.defined() && refOutSet == pendingSet && refOutSeq > pendingSeq &&
            checked.count(pendingCall)) {
            prepareMs += msSince(t0);
            settle(false);
        }
        const auto t1 = Clock::now();
        releaseReference(ev, refOut);
        restoreGlobals(ev);
        const int set = index < 0 ? warm++ % nSets : index % nSets;
        auto args = cloneArgs(sets[size_t(set)], ev.params, ev.task, false);
        const int mySeq = ++seq, mySet = index < 0 ? -1 : set; // a warm-up's output checks nothing
        prepareMs += msSince(t1);
        return [fn = ev.refFn, args = std::move(args), &refOut, &refOutSet, &refOutSeq, mySeq, mySet]() mutable {
            const c10::IValue out = (*fn)(std::move(args));
            if (out.isTensor()) {
                refOut = out.toTensor();
                refOutSet = mySet;
                refOutSeq = mySeq;
            }
        };
    };
    auto prepareCand = [&, warm = 0](int index) mutable -> measure::Call {
        settle(false);
        releaseReference(ev, refOut);
        const auto t0 = Clock::now();
        const int set = index < 0 ? warm++ % nSets : index % nSets;
        auto call = ev.callable->bind(cloneArgs(sets[size_t(set)], ev.params, ev.task, false));
        const int mySeq = ++seq;
        prepareMs += msSince(t0);
        const bool keep = index >= 0;
        return [&, call = std::move(call), keep, set, index, mySeq]() mutable {
            c10::IValue out = call();
            if (keep) {
                pendingOut = out.isTensor() ? out.toTensor() : at::Tensor();
                pendingSet = set;
                pendingCall = index;
                pendingSeq = mySeq;
            }
        };
    };
    measure::Settings settings;
    settings.cuda = ev.cuda;
    settings.method = ev.prof.timing;
    // The reference's samples of an earlier candidate of the same key (measure::Settings::cache).
    if (ev.reuseReference && ev.cuda && ev.prof.timing.adaptive()) {
        settings.key = reuseKey(ev, nSets);
        settings.cache = &ev.referenceCache(settings.key);
    }
    settings.l2Flush = ev.prof.l2Flush;
    settings.statistic = ev.prof.statistic;
    if (ev.warmupShared)
        settings.quiet = takeQuiet;
    else
        takeQuiet(); // the old order (the request's `timing_warmup_shared`: false): the setup and warm-up under the hold
    measure::Comparison timed;
    const auto mismatch = [&](const TimedOutputMismatch& e) {
        ev.res["timing"] = {{"input_sets", nSets}, {"checked_calls", checks}};
        return ev.stop("incorrect", "timing", e.what());
    };
    try {
        timed = measure::compare(prepareRef, prepareCand, settings);
    } catch (const TimedOutputMismatch& e) {
        ev.addDetail("timing", "quiet_wait", quiet ? quiet->waitMs() : 0.0);
        return mismatch(e);
    }
    const double quietWaitMs = quiet ? quiet->waitMs() : 0.0;
    ev.addDetail("timing", "quiet_wait", quietWaitMs);
    lapStart += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(quietWaitMs));
    lap("measurement"); // less the wait, counted apart
    ev.addDetail("timing", "measurement_setup", timed.setupMs);
    ev.addDetail("timing", "measurement_warmup", timed.warmupMs);
    ev.addDetail("timing", "measurement_output_checks", checksMs);
    ev.addDetail("timing", "measurement_prepare", prepareMs);
    if (ev.cuda) {
        CudaFault f = ev.checkCuda(); // also: the last call's output is complete before its check
        if (f.any)
            return ev.stop("runtime_error", "timing", "CUDA error while timing: " + f.message);
    }
    try {
        settle(true); // against the last reference output where the reference was timed last
    } catch (const TimedOutputMismatch& e) {
        return mismatch(e);
    }
    releaseReference(ev, refOut);
    lap("last_output_check");
    ev.res["timing"] = timed.toJson();
    ev.res["timing"]["input_sets"] = nSets;
    ev.res["timing"]["checked_calls"] = checks;
    if (auto s = timed.speedup(ev.prof.statistic))
        ev.res["speedup"] = *s;
    rooflineCheck(ev, timed);
    lap("roofline");
    // Kept for the trace (evaluate), which then waits for nothing and runs beside nothing; never
    // where another exclusive measurement follows it (retime, traffic), which takes its own.
    if (ev.traceExclusive && ev.timingIsLastMeasurement() && quiet && quiet->held())
        ev.traceHold = std::move(quiet);
    ev.endStage();
    return true;
}

/// 9. traffic (only with `profile_traffic`, only for a correct candidate, after timing, under the
/// GPU the evaluation already holds): the HBM bytes one call of the candidate on the timing inputs
/// moves, counted by CUPTI's range profiler (dramprofiler.h). Never changes the verdict: any
/// failure, the profiler's or the call's, is `traffic: {"profiled": false, "reason": …}`.
void trafficStage(Evaluation& ev)
{
    if (!ev.profileTraffic)
        return;
    ev.startStage("traffic");
    json t = {{"profiled", false}};
    DramTraffic d;
    int ordinal = 0;
    bool profiled = false; // the range profiler started: CUPTI stays attached to this process
    if (!ev.cuda) {
        d.reason = "needs a CUDA device" + (ev.noCudaWhy.empty() ? std::string() : " (" + ev.noCudaWhy + ")");
    } else if (cudaGetDevice(&ordinal) != cudaSuccess) {
        cudaGetLastError();
        d.reason = "no current CUDA device";
    } else {
        // The counters see every kernel on the GPU, another worker's warm-up too (the quiet lock).
        ev.measureGpu();
        const GpuQuietLock::Hold quiet(ev.quietLock, GpuQuietLock::Mode::Exclusive);
        ev.addDetail("traffic", "quiet_wait", quiet.waitMs());
        if (!quiet.error().empty())
            ev.res["gpu_quiet_lock_error"] = quiet.error();
        try {
            // Twice the L2, read (not written) before and after the call: reading evicts every line
            // the L2 holds, writing back the dirty ones, and leaves only clean ones behind. Before
            // the call that gives a cold L2 (the inputs come from HBM, as in a cold timed call);
            // after it, the output lines still dirty in the L2 reach HBM inside the drain's range.
            const int64_t l2 = deviceFacts(ordinal).value("l2_bytes", int64_t(64) << 20);
            // float32, summed as float32: a byte tensor's sum widens to int64 through a copy of the
            // whole buffer, 8 bytes written per byte read (1 GB of writes on the H200, counted as
            // the candidate's in the drain).
            at::Tensor evict = at::zeros({2 * l2 / 4}, at::TensorOptions().dtype(at::kFloat).device(ev.dev));
            const auto readAll = [&evict](std::string* err) {
                try {
                    (void)evict.sum(); // a few partial sums of its own: negligible
                } catch (const std::exception& e) {
                    *err = e.what();
                }
                const CudaFault f = syncCuda();
                if (f.any)
                    *err += f.message;
                return err->empty();
            };
            std::vector<c10::IValue> args;
            const GpuStep prepare = [&](std::string* err) {
                args = cloneArgs(ev.timingInputs, ev.params, ev.task, false); // copies outside the ranges
                return readAll(err);
            };
            const GpuStep work = [&](std::string* err) {
                c10::IValue out;
                return runCandidate(ev, std::move(args), &out, err); // synchronises
            };
            if (cuptiWasDetached()) {
                d.reason = "CUPTI was detached in this worker by an earlier evaluation, and its range profiler cannot "
                           "start after that: evaluate with profile_traffic in a fresh worker";
                syncCuda();
                detachCupti(); // the trace's attach (it left CUPTI for the profile, traceStage)
            } else {
                profiled = true;
                d = measureDramTraffic(ordinal, prepare, work, readAll);
            }
        } catch (const std::exception& e) {
            d.reason = e.what();
        }
    }
    if (profiled) {
        // CUPTI's range profiler stays attached in this process (it cannot be detached and started
        // again, detachCupti): what is timed here next would pay for it, so the worker retires
        // after this answer and the next candidate gets a fresh one.
        ev.healthy = false;
        ev.res["worker_healthy"] = false;
        ev.res["worker_retired"] = "CUPTI's range profiler ran in this worker; a fresh worker times the next candidate";
    }
    if (d.profiled) {
        int kernels = 0; // the trace stage's count: the same call on the same inputs
        for (const json& k : ev.res.value("kernels", json::array()))
            kernels += k.value("calls", 0);
        t = {{"profiled", true},
             {"dram_bytes", d.readBytes + d.writeBytes},
             {"dram_read_bytes", d.readBytes},
             {"dram_write_bytes", d.writeBytes},
             {"kernels", kernels},
             {"passes", d.passes},
             {"method", "cupti_range_profiler"},
             {"l2", "cold"}};
    } else {
        t["reason"] = d.reason;
    }
    ev.res[protocol::kTrafficField] = t;
    ev.endStage();
}

/// Sets the launch context kb.launch uses for as long as the candidate may run.
struct LaunchScope {
    explicit LaunchScope(LaunchContext* c) { setLaunchContext(c); }
    ~LaunchScope() { setLaunchContext(nullptr); }
    LaunchScope(const LaunchScope&) = delete;
    LaunchScope& operator=(const LaunchScope&) = delete;
};

} // namespace

json Evaluator::evaluate(const Task& task, const json& req)
{
    Evaluation ev(task, req, m_healthy);
    ev.referenceCaches = &m_referenceCaches;
    ev.quietLock = m_quietLock;
    setUp(ev, *this);
    if (!parseStage(ev))
        return ev.response();
    if (ev.format == AnswerFormat::KernelBench) {
        // The build runs before the device is touched; a missing device stops after it.
        if ((ev.device != "none" && !deviceStage(ev)) || !kernelBenchLoadStage(ev))
            return ev.response();
        resetGlobalsAfterImport(ev);
    } else {
        if (!g_cudaContextReady)
            ev.shareGpu(); // the context made beside the compile is GPU work
        startContextBeside(ev);
        if (!compileStage(ev) || !sandboxStage(ev) || !deviceStage(ev) || !loadStage(ev))
            return ev.response();
        ev.callable = nativeCallable(*ev.candFn);
    }
    LaunchScope launchScope(&ev.launchCtx);
    try {
        if (!referenceStage(ev) || !correctnessStage(ev) || !globalsUnchanged(ev, "correctness"))
            return ev.response();
        // 7. timing, then 8. the trace (CUPTI), never the other way round (traceStage).
        ev.timingInputs = makeInputs(ev.task, ev.scale, ev.dev, ev.seed);
        if (!timingStage(ev) || !globalsUnchanged(ev, "timing"))
            return ev.response();
        // Measured: the next evaluation on this GPU may start its GPU stages beside the trace.
        if (ev.timingIsLastMeasurement())
            ev.endTurn();
        if (!ev.traceHold)
            ev.shareGpu(); // the trace runs the candidate again, beside nothing measured
        if (!traceStage(ev) || !globalsUnchanged(ev, "trace"))
            return ev.response();
        ev.traceHold.reset(); // the trace (and CUPTI's detach) ran under the timing's exclusive hold
        if (ev.retimeAfterTrace && ev.doTime) {
            json before = {{"speedup", ev.res.value("speedup", json())}, {"timing", ev.res.value("timing", json())}};
            ev.reuseReference = false; // the second timing is measured, not taken from the first
            const bool timed = timingStage(ev);
            if (ev.retimeAttached && !ev.profileTraffic)
                detachCupti();
            if (!timed)
                return ev.response();
            ev.res["timing_before_trace"] = std::move(before);
            ev.res["timing_after_trace_cupti"] = ev.retimeAttached ? "attached" : "detached";
        }
        trafficStage(ev);
        ev.endTurn();
    } catch (const std::exception& e) {
        // torch's own errors (out of memory, a shape the reference rejects, …) anywhere past the load
        std::string msg = e.what();
        if (ev.cuda) {
            CudaFault f = ev.checkCuda();
            if (f.any)
                msg += "\nCUDA: " + f.message;
        }
        ev.stop("runtime_error", "correctness", msg);
        return ev.response();
    }
    ev.stop("correct", "done", "");
    return ev.response();
}

namespace {
/// cuDNN 9 loads its sub-libraries (graph, engines, heuristics, ops, cnn, adv) from the folder of
/// libcudnn.so at its first handle: opened here, in the warm's CPU part, the loading (tens of ms
/// of the first conv's 77-395 ms, bench/results/2026-12-01-worker-start-h200.md) is not under the
/// quiet lock. The same files cuDNN would open (its later dlopen by name finds them loaded); none
/// where libcudnn is not in this process.
void preloadCudnnLibraries()
{
    std::string dir;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            const std::string name = info->dlpi_name ? info->dlpi_name : "";
            const size_t at = name.rfind("/libcudnn.so");
            if (at == std::string::npos)
                return 0;
            *static_cast<std::string*>(data) = name.substr(0, at);
            return 1;
        },
        &dir);
    if (dir.empty())
        return;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        // libcudnn_<part>.so.<major>, the names cuDNN opens (not the versioned files they point to)
        const std::string file = entry.path().filename().string();
        const size_t so = file.find(".so.");
        if (file.rfind("libcudnn_", 0) == 0 && so != std::string::npos && file.find('.', so + 4) == std::string::npos)
            (void)dlopen(entry.path().c_str(), RTLD_LAZY | RTLD_GLOBAL); // kept for the process
    }
}
} // namespace

json Evaluator::warm(int ordinal, bool python)
{
    const auto tTotal = Clock::now();
    // The embedded Python, when asked, last: a KernelBench-format answer's evaluation starts it
    // (its `import torch`: 1-6 s), CPU only, holding no lock, nothing of a candidate's; once per
    // process (a second start returns at once: ~0 ms). After the GPU's parts, in the order a cold
    // evaluation has them (the context, then the answer's module in Python: deviceStage).
    const auto withPython = [&](json out) {
        if (!python)
            return out;
        std::string pythonWhy;
        const auto t0 = Clock::now();
        const bool ok = python::available(&pythonWhy);
        out["warm_ms"]["python"] = msSince(t0);
        out["warm_ms"]["total"] = msSince(tTotal);
        if (!ok)
            out["python_error"] = pythonWhy;
        return out;
    };
    std::string why;
    if (!cudaAvailable(&why) || !useCudaDevice(ordinal, &why))
        return withPython({{"device", "none"}, {"why", why}});
    if (m_warm)
        return withPython({{"device", "cuda"},
                           {"already_warm", true},
                           {"warm_ms", {{"cpu", 0.0}, {"quiet_wait", 0.0}, {"context", 0.0}, {"cublas", 0.0}, {"cudnn", 0.0}, {"evaluator", 0.0}, {"total", 0.0}}}});
    // The CPU-only part first, holding no lock: NVRTC for the evaluator's own kernels (a thread of
    // its own, as deviceStage does) and TorchScript's first compile.
    auto ownKernels = std::async(std::launch::async, [ordinal] {
        precompileFusedCompare(ordinal);
        ClockProbe::precompile(ordinal);
    });
    auto t = Clock::now();
    auto script = compileScript("def forward(x: Tensor) -> Tensor:\n    return torch.relu(x) + 1.0\n");
    preloadCudnnLibraries();
    json ms = {{"cpu", msSince(t)}, {"quiet_wait", 0.0}};
    // Then the GPU's parts, each under the quiet lock held shared on its own: spares warm beside
    // one another, never while a worker on this GPU times or profiles. A timing stage that asks
    // for the lock meanwhile waits for one part at most (the longest, the context: ~0.16 s on an
    // H200), not for the whole warm: between parts the lock is let go, and the next part yields
    // first so that a waiting exclusive request (woken by the release) takes it before this one.
    std::string lockError;
    bool firstPart = true;
    const auto part = [&](const char* name, const std::function<void()>& work) {
        if (!firstPart)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        firstPart = false;
        const GpuQuietLock::Hold shared(m_quietLock, GpuQuietLock::Mode::Shared);
        ms["quiet_wait"] = ms["quiet_wait"].get<double>() + shared.waitMs();
        if (lockError.empty())
            lockError = shared.error();
        const auto t0 = Clock::now();
        work();
        const CudaFault f = syncCuda();
        if (f.sticky)
            m_healthy = false;
        if (f.any)
            throw std::runtime_error(std::string("CUDA error while warming (") + name + "): " + f.message);
        ms[name] = msSince(t0);
    };
    // Only constants below, each freed (back to torch's caching allocator) before the answer: no
    // candidate data, and nothing a later candidate could read. No CUPTI (docs/decisions.md).
    const at::Device dev(at::kCUDA);
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(dev);
    part("context", [&] { ensureCudaContext(dev); });
    part("cublas", [&] {
        // cuBLAS's handle and workspace, and its FP32 GEMMs: plain, with a bias (linear layers), batched.
        const at::Tensor a = torch::ones({8, 8}, opts);
        (void)at::mm(a, a);
        (void)at::addmm(a, a, a);
        (void)at::bmm(a.unsqueeze(0), a.unsqueeze(0));
    });
    part("cudnn", [&] {
        // cuDNN's handle and a conv2d's algorithm choice: a 1x1x4x4 input, one 3x3 filter.
        const at::Tensor x = torch::ones({1, 1, 4, 4}, opts), w = torch::ones({1, 1, 3, 3}, opts);
        (void)at::conv2d(x, w);
    });
    ownKernels.get(); // CPU: before the lock is taken for the part that loads them
    part("evaluator", [&] {
        // What every evaluation's first trial runs before the candidate's own work: the generators
        // (makeParams, makeInputs), the fingerprints, the fused comparison, the degenerate check,
        // the range trial's isfinite, the NaN fill of a released output, TorchScript's first run,
        // the timer's setup.
        torch::manual_seed(0); // every evaluation seeds its own draws again (makeParams, makeInputs)
        at::Tensor u = torch::rand({64}, opts), n = torch::randn({64}, opts);
        at::Tensor p = torch::empty({64}, opts).uniform_(-1.0, 1.0);
        (void)byteFingerprints({u, n, p});
        // The fused comparison only: the ATen path that reports a mismatch (a dozen kernels'
        // first loads) is left to the candidates that fail, whose evaluation no timing follows.
        (void)compareOutputs(u, u.clone(), 1e-4, 1e-4);
        (void)degenerateCheck({u, n});
        (void)allFinite(n);
        (void)equalValues(u, p);
        (void)forwardFunction(*script)({u});
        p.fill_(std::numeric_limits<float>::quiet_NaN());
        measure::warmCudaTimer();
    });
    ms["total"] = msSince(tTotal);
    m_warm = true;
    json out = {{"device", "cuda"}, {"ordinal", ordinal}, {"warm_ms", ms}};
    if (!lockError.empty())
        out["gpu_quiet_lock_error"] = lockError;
    return withPython(std::move(out));
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
    // Traced trials below; CUPTI is detached after them, so a worker that profiled times as it
    // did before (detachCupti).
    struct Detach {
        ~Detach() { detachCupti(); }
    } detach;

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
