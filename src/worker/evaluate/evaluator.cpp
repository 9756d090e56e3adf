#include "worker/evaluate/evaluator.h"
#include "worker/evaluate/evaluation.h"

#include <dlfcn.h>
#include <filesystem>
#include <link.h>
#include <mutex>
#if KWB_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#define KWB_ALLOCATOR_OOM_OBSERVER 1 // attachOutOfMemoryObserver came with torch 2.0
#endif
#endif

namespace kwb {
using namespace evaluation;

namespace {
/// The native format's candidate: its TorchScript forward, called on the arguments as given.
class NativeCallable final : public CandidateCallable
{
public:
    explicit NativeCallable(jit::Function& fn)
        : m_fn(&fn)
    {}
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
    out[protocol::Field::kTask] = task.id;
    out[protocol::Field::kScale] = scale == Scale::Full ? "full" : "smoke";
    return out;
}

json Evaluator::runReference(const Task& task, Scale scale, const std::string& device, uint64_t seed) const
{
    const at::Device dev = device == "cuda" ? at::Device(at::kCUDA) : at::Device(at::kCPU);
    json extra = json::object();
    at::Tensor out;
    double ms = 0;
    if (task.isKernelBenchOnly()) {
        // KernelBench's Model in the embedded Python, made, seeded and fed as `evaluate` makes, seeds
        // and feeds it (kernelBenchLoadStage, trial 0's get_inputs()). It has KernelBench's sizes
        // alone: a smoke request runs them and says so, as evaluate does.
        KernelBenchReference ref = loadKernelBenchReference(task.referencePython, seed, device);
        if (!ref.callable)
            throw std::runtime_error("the reference itself failed: KernelBench's " + task.source + ": " + ref.error);
        ref.callable->keepOwnWeights();
        ref.callable->seedEachCall(seed);
        auto call = ref.callable->bind(makeInputs(task, Scale::Full, dev, trialSeed(seed, 0)));
        auto t0 = Clock::now();
        out = call().toTensor();
        ms = msSince(t0);
        extra["reference"] = {{"kind", "kernelbench_python"}, {"source", task.source}};
        if (scale == Scale::Smoke)
            extra["notes"] = json::array({{{"code", "kernelbench_only_scale"},
                                           {"message", task.id + " is KernelBench only: it has KernelBench's sizes "
                                                                 "alone (get_inputs), so it ran at full scale"}}});
    } else {
        auto cu = compileScript(task.forward);
        jit::Function& fn = forwardFunction(*cu);
        auto params = makeParams(task, scale, dev, seed);
        auto inputs = makeInputs(task, scale, dev, trialSeed(seed, 0));
        auto t0 = Clock::now();
        out = fn(cloneArgs(inputs, params, task, true)).toTensor();
        ms = msSince(t0);
    }
    // The statistics where the output lies, the mean summed in float64 without a float64 copy: the
    // copy to the host in float64 of L1/19-24's 4096 x 393,216 outputs (6.4 GB each) took seconds
    // per task (400 M floats on this CPU: 25.1 s with the copy, 6.8 s without, the same values).
    const bool any = out.numel() > 0;
    const at::Tensor o = at::isFloatingType(out.scalar_type()) ? out : out.to(at::kDouble);
    json body = {{protocol::Field::kTask, task.id},
                 {protocol::Key::kOutputShape, out.sizes().vec()},
                 {protocol::Key::kDtype, c10::toString(out.scalar_type())},
                 {protocol::Key::kMin, any ? o.min().item<double>() : 0.0},
                 {protocol::Key::kMax, any ? o.max().item<double>() : 0.0},
                 {protocol::Key::kMean, any ? o.mean(at::kDouble).item<double>() : 0.0},
                 {protocol::Key::kFinite, torch::isfinite(o).all().item<bool>()},
                 {protocol::Key::kMs, ms}};
    body.update(extra);
    return body;
}

namespace {

/// The request's settings, the device and the response's fixed fields. Throws
/// std::invalid_argument (a bad_request) for an unknown profile or counts out of range.
void setUp(Evaluation& ev, const Evaluator& evaluator)
{
    const json& req = ev.req;
    const std::string profileName = req.value(protocol::Field::kProfile, std::string(kDefaultProfile));
    auto profile = findProtocolProfile(profileName);
    if (!profile)
        throw std::invalid_argument("unknown protocol profile '" + profileName + "' (" + profileNames() + ")");
    ProtocolProfile& prof = ev.prof;
    prof = *profile;
    if (ev.task.atol)
        prof.atol = *ev.task.atol;
    if (ev.task.rtol)
        prof.rtol = *ev.task.rtol;
    prof.correctnessTrials = req.value(protocol::Field::kCorrectnessTrials, prof.correctnessTrials);
    for (const char* key : {protocol::Field::kTimingTarget, protocol::Field::kTimingMaxMs})
        if (req.contains(key) && !req.at(key).is_number())
            throw std::invalid_argument(std::string(key) + " must be a number");
    if (req.contains(protocol::Field::kTimingMethod) && !req.at(protocol::Field::kTimingMethod).is_string())
        throw std::invalid_argument("timing_method must be \"adaptive\" or \"fixed\"");
    for (const char* key : {protocol::Field::kReuseReference, "timing_intent"})
        if (req.contains(key) && !req.at(key).is_boolean())
            throw std::invalid_argument(std::string(key) + " must be true or false");
    if (req.contains(protocol::Field::kRetimeAfterTrace) && !req.at(protocol::Field::kRetimeAfterTrace).is_boolean() &&
        req.at(protocol::Field::kRetimeAfterTrace) != json("attached"))
        throw std::invalid_argument("retime_after_trace must be true, false or \"attached\"");
    if (req.contains(protocol::kProfileTrafficField) && !req.at(protocol::kProfileTrafficField).is_boolean())
        throw std::invalid_argument(std::string(protocol::kProfileTrafficField) + " must be true or false");
    measure::Method& timing = prof.timing;
    timing.trials = req.value(protocol::Field::kTimingTrials, timing.trials);
    timing.warmup = req.value(protocol::Field::kWarmup, timing.warmup);
    timing.kind = req.value(protocol::Field::kTimingMethod, timing.kind);
    timing.target = req.value(protocol::Field::kTimingTarget, timing.target);
    timing.maxWallMs = req.value(protocol::Field::kTimingMaxMs, timing.maxWallMs);
    if (prof.correctnessTrials < 1 || timing.trials < 1 || timing.warmup < 0)
        throw std::invalid_argument("correctness_trials and timing_trials must be >= 1, warmup >= 0");
    if (timing.kind != "adaptive" && timing.kind != "fixed")
        throw std::invalid_argument("timing_method must be \"adaptive\" or \"fixed\", not \"" + timing.kind + "\"");
    if (!(timing.target > 0 && timing.target < 1) || !(timing.maxWallMs > 0 && timing.maxWallMs <= 600000))
        throw std::invalid_argument("timing_target must lie in (0, 1) and timing_max_ms in (0, 600000]");
    ev.scale = parseScale(req.value(protocol::Field::kScale, std::string("full")));
    ev.seed = req.value(protocol::Field::kSeed, uint64_t(42));
    ev.doTime = req.value(protocol::Field::kTime, true);
    ev.reuseReference = req.value(protocol::Field::kReuseReference, true);
    ev.timingIntentEarly = req.value("timing_intent", true);
    ev.warmupShared = req.value("timing_warmup_shared", true);
    ev.traceExclusive = req.value("trace_exclusive", true);
    ev.profileTraffic = req.value(protocol::kProfileTrafficField, false);
    if (req.contains(protocol::Field::kRetimeAfterTrace)) {
        ev.retimeAttached = req.at(protocol::Field::kRetimeAfterTrace) == json("attached");
        ev.retimeAfterTrace = ev.retimeAttached || req.at(protocol::Field::kRetimeAfterTrace) == json(true);
    }
    const bool haveCuda = evaluator.cudaAvailable(&ev.noCudaWhy);
    const protocol::Device requested = protocol::parseDevice(
        req, protocol::kDeviceCuda | protocol::kDeviceCpu | protocol::kDeviceNone, cudaDeviceCount());
    ev.device = requested.kind == protocol::Device::Cpu    ? "cpu"
                : requested.kind == protocol::Device::None ? "none"
                                                           : "cuda";
    if (ev.device == "cuda" && !(haveCuda && useCudaDevice(requested.ordinal, &ev.noCudaWhy)))
        ev.device = "none";
    ev.cuda = ev.device == "cuda";
    ev.ordinal = ev.cuda ? requested.ordinal : 0;
    ev.dev = ev.cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);

    json& res = ev.res;
    res[protocol::Field::kTask] = ev.task.id;
    res[protocol::Field::kProfile] = prof.toJson();
    res[protocol::Field::kProfile][protocol::Field::kScale] = ev.scale == Scale::Full ? "full" : "smoke";
    res[protocol::Field::kProfile][protocol::Field::kSeed] = ev.seed;
    res[protocol::Field::kDevice] = ev.device;
    res[protocol::Key::kTorchOnly] = false;
    res[protocol::Key::kCustomLaunches] = 0;
    res[protocol::Key::kDegenerate] = nullptr;
    res[protocol::Key::kSpeedup] = nullptr;
    res[protocol::Key::kFlags] = json::array();
}

/// Sets the launch context kb.launch uses for as long as the candidate may run.
struct LaunchScope
{
    explicit LaunchScope(LaunchContext* c) { setLaunchContext(c); }
    ~LaunchScope() { setLaunchContext(nullptr); }
    LaunchScope(const LaunchScope&) = delete;
    LaunchScope& operator=(const LaunchScope&) = delete;
};

} // namespace

namespace {

/// Torch's caching allocator keeps what an evaluation freed for the next one, so a reused worker
/// held its largest working set between jobs (tens of GiB), and a second evaluation on the GPU
/// (the queue's slots, or another program) ran out of memory beside it: a runtime_error that was
/// the machine's, not the candidate's (bench/results/2026-12-06-gpu-slots-h100-session40.md).
/// Given back after every evaluation that used the GPU, under a share of the quiet lock (cudaFree
/// is not run beside another evaluation's timing). gpu_memory then says what was given back
/// (released_bytes), what torch still holds (held_bytes: tensors the evaluator keeps) and the
/// device's free memory after it. Torch without CUDA has no such cache: nothing to do.
void releaseCachedGpuMemory(json& r, int ordinal, const GpuQuietLock* quietLock)
{
#if KWB_TORCH_CUDA
    namespace allocator = c10::cuda::CUDACachingAllocator;
    // reserved_bytes[0]: StatType::AGGREGATE, the first in every torch version
    const auto reserved = [ordinal] {
        return allocator::getDeviceStats(static_cast<c10::DeviceIndex>(ordinal)).reserved_bytes[0].current;
    };
    const int64_t before = reserved();
    const GpuQuietLock::Hold share(quietLock, GpuQuietLock::Mode::Shared);
    const auto t0 = Clock::now();
    allocator::emptyCache();
    const int64_t after = reserved();
    json& detail = r[protocol::Key::kStageDetailMs]["release"];
    detail["quiet_wait"] = share.waitMs();
    detail["empty_cache"] = msSince(t0);
    json& memory = r[protocol::Key::kGpuMemory];
    if (!memory.is_object())
        memory = json::object();
    memory[protocol::Key::kReleasedBytes] = before - after;
    memory[protocol::Key::kHeldBytes] = after;
    readDeviceMemory(memory);
#else
    (void)r, (void)ordinal, (void)quietLock;
#endif
}

std::mutex g_outOfMemoryMutex;
AllocatorOutOfMemory g_outOfMemory; // guarded by g_outOfMemoryMutex

} // namespace

bool evaluation::watchAllocatorOutOfMemory()
{
#if KWB_ALLOCATOR_OOM_OBSERVER
    static std::once_flag once;
    std::call_once(once, [] {
        // Called by the allocator on the allocating thread, before it throws; the parameters'
        // integer types differ between torch versions, hence auto.
        c10::cuda::CUDACachingAllocator::attachOutOfMemoryObserver(
            [](int64_t /*device*/, auto requested, auto total, auto freeBytes) {
                const std::lock_guard<std::mutex> lock(g_outOfMemoryMutex);
                ++g_outOfMemory.count;
                g_outOfMemory.requestedBytes = int64_t(requested);
                g_outOfMemory.totalBytes = int64_t(total);
                g_outOfMemory.freeBytes = int64_t(freeBytes);
            });
    });
    return true;
#else
    return false;
#endif
}

AllocatorOutOfMemory evaluation::allocatorOutOfMemory()
{
    const std::lock_guard<std::mutex> lock(g_outOfMemoryMutex);
    return g_outOfMemory;
}

json Evaluator::evaluate(const Task& task, const json& req)
{
    int ordinal = -1; // the device the evaluation used, where it made or found a CUDA context
    const int64_t outOfMemoryBefore = allocatorOutOfMemory().count;
    json r = evaluateOnce(task, req, &ordinal);
    // Where the allocator ran out during this evaluation: its own numbers, for kwb to tell the
    // candidate's demand from memory other processes held (docs/protocol.md, gpu_memory).
    if (const AllocatorOutOfMemory oom = allocatorOutOfMemory(); oom.count > outOfMemoryBefore) {
        json& memory = r[protocol::Key::kGpuMemory];
        if (!memory.is_object())
            memory = json::object();
        memory[protocol::Key::kOutOfMemory] = {{protocol::Key::kCount, oom.count - outOfMemoryBefore},
                                               {protocol::Key::kRequestedBytes, oom.requestedBytes},
                                               {protocol::Key::kFreeBytes, oom.freeBytes},
                                               {protocol::Key::kTotalBytes, oom.totalBytes}};
        char bus[32] = {0};
        if (ordinal >= 0 && cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) == cudaSuccess)
            memory[protocol::Key::kOutOfMemory][protocol::Key::kPciBusId] = std::string(bus);
        cudaGetLastError();
    }
    // The evaluation's tensors are gone with it: what torch caches of them goes back now. The
    // verdict stands whatever the release does: a failure of it is a note of the machine's.
    if (ordinal >= 0 && g_cudaContextReady && m_healthy) {
        try {
            releaseCachedGpuMemory(r, ordinal, m_quietLock);
        } catch (const std::exception& e) {
            r[protocol::Key::kGpuMemory][protocol::Key::kReleaseError] = std::string(e.what()).substr(0, 500);
        }
    }
    return r;
}

json Evaluator::evaluateOnce(const Task& task, const json& req, int* ordinal)
{
    Evaluation ev(task, req, m_healthy);
    ev.referenceCaches = &m_referenceCaches;
    ev.quietLock = m_quietLock;
    setUp(ev, *this);
    if (ev.cuda)
        *ordinal = ev.ordinal;
    if (!parseStage(ev))
        return ev.response();
    if (ev.format == AnswerFormat::KernelBench) {
        // The build runs before the device is touched; a missing device stops after it. The
        // module and ModelNew(...) before the evaluations' turn (Evaluation::turnAfterLoad).
        ev.turnAfterLoad = true;
        if ((ev.device != "none" && !deviceStage(ev)) || !kernelBenchLoadStage(ev))
            return ev.response();
        ev.takeTurn();
        resetGlobalsAfterImport(ev);
    } else {
        if (!g_cudaContextReady)
            ev.shareGpu(); // the context made beside the compile is GPU work
        startContextBeside(ev);
        if (!compileStage(ev))
            return ev.response();
        // Steps outside the staged clocks, under "between" in stage_detail_ms: where a reused
        // worker's time goes that no stage's clock holds.
        const auto tSandbox = Clock::now();
        const bool passed = sandboxStage(ev);
        ev.addDetail("between", "sandbox", msSince(tSandbox));
        if (!passed || !deviceStage(ev) || !loadStage(ev))
            return ev.response();
        const auto tCallable = Clock::now();
        ev.callable = nativeCallable(*ev.candFn);
        ev.addDetail("between", "callable", msSince(tCallable));
    }
    LaunchScope launchScope(&ev.launchCtx);
    try {
        if (!referenceStage(ev) || !correctnessStage(ev) || !globalsUnchanged(ev, "correctness"))
            return ev.response();
        // The kernels' facts read beside end here: nothing measured from now on (timing, trace,
        // traffic) runs beside nvdisasm.
        ev.joinKernelFacts();
        // 7. timing, then 8. the trace (CUPTI), never the other way round (traceStage).
        const auto tInputs = Clock::now();
        ev.timingInputs = makeInputs(ev.task, ev.scale, ev.dev, ev.seed);
        ev.addDetail("between", "timing_inputs", msSince(tInputs));
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
            json before = {{protocol::Key::kSpeedup, ev.res.value(protocol::Key::kSpeedup, json())},
                           {protocol::Key::kTiming, ev.res.value(protocol::Key::kTiming, json())}};
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
        return withPython({{protocol::Field::kDevice, "none"}, {protocol::Key::kWhy, why}});
    if (m_warm)
        return withPython({{protocol::Field::kDevice, "cuda"},
                           {protocol::Key::kAlreadyWarm, true},
                           {protocol::Key::kWarmMs,
                            {{"cpu", 0.0},
                             {"quiet_wait", 0.0},
                             {"context", 0.0},
                             {"cublas", 0.0},
                             {"cudnn", 0.0},
                             {"evaluator", 0.0},
                             {"total", 0.0}}}});
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
        // The range and stress trials' own ops (every evaluation that passes its trials runs
        // them): the inputs' rescaling and Student-t draw, the output's RMS in float64.
        (void)rootMeanSquare(n);
        (void)stressInputs({c10::IValue(u)}, 64, false, 1);
        (void)stressInputs({c10::IValue(n)}, 1, true, 2);
        (void)equalValues(u, p);
        (void)forwardFunction (*script)({u});
        p.fill_(std::numeric_limits<float>::quiet_NaN());
        measure::warmCudaTimer();
    });
    ms["total"] = msSince(tTotal);
    m_warm = true;
    json out = {{protocol::Field::kDevice, "cuda"}, {"ordinal", ordinal}, {protocol::Key::kWarmMs, ms}};
    if (!lockError.empty())
        out[protocol::Key::kGpuQuietLockError] = lockError;
    return withPython(std::move(out));
}

json Evaluator::profile(const Task& task, const json& req)
{
    if (!cudaAvailable())
        throw std::runtime_error("no_device: profiling needs a CUDA device");
    const Scale scale = parseScale(req.value(protocol::Field::kScale, std::string("full")));
    const int trials = std::max(1, req.value(protocol::Field::kTrials, ProtocolNames::kDefaultProfileTrials));
    const uint64_t seed = req.value(protocol::Field::kSeed, uint64_t(42));
    const bool tf32 = req.value(protocol::Field::kTf32, false);
    at::globalContext().setAllowTF32CuBLAS(tf32);
    at::globalContext().setAllowTF32CuDNN(tf32);
    ensureOpCallback();
    // Traced trials below; CUPTI is detached after them, so a worker that profiled times as it
    // did before (detachCupti).
    struct Detach
    {
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
        opsOut.push_back({{protocol::Key::kIndex, index == 0 ? -1 : int64_t(index) - 1},
                          {protocol::Key::kOp, std::get<0>(o)},
                          {protocol::Key::kTimeNs, std::get<1>(o) / uint64_t(trials)},
                          {protocol::Key::kKernels, std::get<2>(o) / trials},
                          {protocol::Key::kShare, total ? double(std::get<1>(o)) / double(total) : 0.0}});
    for (const auto& [key, k] : kernels) {
        const size_t opIndex = key.first;
        kernelsOut.push_back({{protocol::Key::kName, key.second},
                              {protocol::Key::kOp, ops.count(opIndex) ? std::get<0>(ops[opIndex]) : "(no op)"},
                              {protocol::Key::kOpIndex, opIndex == 0 ? -1 : int64_t(opIndex) - 1},
                              {protocol::Key::kCalls, k.second / trials},
                              {protocol::Key::kTimeNs, k.first / uint64_t(trials)},
                              {protocol::Key::kShare, total ? double(k.first) / double(total) : 0.0}});
    }
    auto byTime = [](const json& a, const json& b) { return a[protocol::Key::kTimeNs] > b[protocol::Key::kTimeNs]; };
    std::sort(opsOut.begin(), opsOut.end(), byTime);
    std::sort(kernelsOut.begin(), kernelsOut.end(), byTime);
    return {{protocol::Field::kTask, task.id},
            {protocol::Field::kScale, scale == Scale::Full ? "full" : "smoke"},
            {protocol::Field::kTrials, trials},
            {protocol::Field::kTf32, tf32},
            {protocol::Key::kTotalNs, total / uint64_t(trials)},
            {protocol::Key::kOps, opsOut},
            {protocol::Key::kKernels, kernelsOut}};
}

} // namespace kwb
