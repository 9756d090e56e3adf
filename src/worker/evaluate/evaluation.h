#pragma once
// One `evaluate` request on its way through the stages (docs/protocol.md §evaluate), shared by the
// evaluator's files: evaluator.cpp (the Evaluator: the stages' order, warm, profile), tensors.cpp
// (inputs, parameters, clones, comparisons, fingerprints), loadstages.cpp (parse, compile, sandbox,
// device, load), correctnessstage.cpp (reference, correctness), timingstage.cpp (timing and the
// roofline check) and tracestages.cpp (the CUPTI trace, traffic, op attribution). Internal to
// src/worker/evaluate: it includes torch, the evaluator's interface (evaluator.h) does not.
#include "worker/evaluate/evaluator.h"

#include "worker/analyze/analyze.h"
#include "worker/analyze/roofline.h"
#include "worker/answers/answerformat.h"
#include "worker/answers/candidateparser.h"
#include "worker/compile/nvrtccompiler.h"
#include "worker/device/cudadriver.h"
#include "worker/device/deviceinfo.h"
#include "worker/evaluate/outputcompare.h"
#include "worker/evaluate/tensorfingerprint.h"
#include "worker/evaluate/torchglobals.h"
#include "worker/measure/clockprobe.h"
#include "worker/measure/cuptitracer.h"
#include "worker/measure/dramprofiler.h"
#include "worker/measure/measure.h"
#include "worker/measure/profiles.h"
#include "worker/measure/streamwork.h"
#include "worker/protocol/protocol.h"
#include "worker/python/candidatecallable.h"
#include "worker/python/pythonhost.h"
#include "worker/python/scripthost.h"

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
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace kwb {
namespace jit = torch::jit;
using json = nlohmann::json;

/// `analyze` of a task's reference: also the roofline floor's FLOPs and bytes (timing stage).
json analyzeTask(const Task& task, Scale scale);

/// torch's settings as the worker found them at its start, before any candidate ran.
const TorchGlobals& workerStartGlobals();

/// The evaluator's parts that its files share; the rest of each file is its own.
namespace evaluation {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0);
std::string shapeString(at::IntArrayRef s);

using ParamDict = c10::Dict<std::string, at::Tensor>;

/// Where the task's parameters are drawn: on `device`'s generator (what every evaluation whose
/// candidate takes the evaluator's weights uses), or on the CPU generator and then moved there,
/// which makes them, bit for bit, the weights KernelBench's Model(*init_inputs) makes under the
/// same seed (built on the CPU; the task files list the parameters in its creation order and
/// with its initialisers: docs/task-format.md). A KernelBench-format ModelNew that keeps its own
/// weights is compared with a reference holding those.
enum class DrawnOn { Device, CpuAsKernelBench };

/// A draw ended by its `stop` flag (makeParams, uniformInSlices).
struct DrawStopped : std::runtime_error
{
    DrawStopped()
        : std::runtime_error("the draw was stopped")
    {}
};

/// Elements per slice of a uniform draw on the CPU: ~0.1 s of torch's serial draw, the longest a
/// stop waits.
inline constexpr int64_t kDrawSliceElements = int64_t(1) << 24;

/// `stop`, where given, ends the draw (DrawStopped) between tensors and between slices of one.
ParamDict makeParams(const Task& task, Scale scale, at::Device device, uint64_t seed, DrawnOn drawnOn = DrawnOn::Device,
                     const std::atomic<bool>* stop = nullptr);
/// t (contiguous, on the CPU).uniform_(from, to, gen), `sliceElements` at a time in memory order:
/// the same values as one draw of the whole, stoppable between slices.
void uniformInSlices(at::Tensor& t, double from, double to, const at::Generator& gen, int64_t sliceElements,
                     const std::atomic<bool>* stop = nullptr);
std::vector<c10::IValue> makeInputs(const Task& task, Scale scale, at::Device device, uint64_t seed,
                                    const std::string& generatorOverride = {});
std::vector<c10::IValue> cloneArgs(const std::vector<c10::IValue>& inputs, const ParamDict& params, const Task& task,
                                   bool weightsToo, int64_t variant = 0);
/// A fresh copy of `t`; for `variant` > 0 its elements rotated in memory order by a shift the
/// variant sets (never 0 where `t` has two elements or more): the timing's calls get an input they
/// have not seen in each round over the sets, the same values in other places, so that a result
/// kept from an earlier call is not this call's (timingstage.cpp).
at::Tensor variantOf(const at::Tensor& t, int64_t variant);
std::string aliasedArgument(const at::Tensor& out, const std::vector<c10::IValue>& args, const Task& task);
bool equalValues(const at::Tensor& a, const at::Tensor& b);
std::string modifiedArgument(const std::vector<c10::IValue>& args, const std::vector<c10::IValue>& inputs,
                             const ParamDict& params, const Task& task);

struct CudaFault
{
    bool any = false;
    bool sticky = false;
    std::string message;
};
CudaFault syncCuda();
bool allFinite(const at::Tensor& t);
json degenerateCheck(const std::vector<at::Tensor>& refs);

struct Comparison
{
    bool ok = true;
    std::string reason;
    double maxAbs = 0, maxRel = 0;
    int64_t mismatches = 0;
    json detail = nullptr;
};
Comparison compareOutputs(const at::Tensor& cand, const at::Tensor& ref, double atol, double rtol);
std::vector<int64_t> fingerprints(const std::vector<c10::IValue>& values);

/// Output poisoning (docs/protocol.md): fills the whole storage of an output the evaluator is
/// done with (the candidate's and the reference's) with the canary, so that a buffer a candidate
/// keeps and returns again, or a block the allocator hands it for a new output, holds the canary
/// wherever it writes nothing: floating point a signalling NaN per dtype, integers bitwise negated,
/// booleans logically. Best effort: a tensor without one storage is left as it is.
void poison(at::Tensor& t);
/// How many elements of a floating-point output hold the canary bit for bit (never written since
/// poisoned); 0 for other dtypes.
int64_t canaryCount(const at::Tensor& t);
/// Numeric stress (docs/protocol.md): the floating-point tensors of `inputs` times `scale`, or,
/// heavyTailed, replaced by Student-t(2) draws under `seed` (non-negative where the draw was)
/// times `scale`; other inputs as they are.
std::vector<c10::IValue> stressInputs(const std::vector<c10::IValue>& inputs, double scale, bool heavyTailed,
                                      uint64_t seed);
/// sqrt(mean(t²)) in double; 0 for an empty or non-floating tensor.
double rootMeanSquare(const at::Tensor& t);

// The numeric stress trials' calibrated tolerance (referenceerror.cpp).
/// How many times the float32 reference's own largest error (against float64) a candidate may be
/// off: float32 rounding of a different order of work lands within a few of it; a result right
/// only at unit scale is off by the output's own size.
inline constexpr double kReferenceErrorFactor = 16;
struct CalibratedComparison
{
    bool ok = true;
    double referenceError = 0; ///< max over elements of |float32 reference − float64 reference|
    double atol = 0;           ///< tolerance × RMS(float64 reference) + kReferenceErrorFactor × referenceError
    double maxAbs = 0;         ///< max |candidate − float64 reference| where finite
    int64_t mismatches = 0;
    std::string reason;
};
struct Evaluation;
/// The reference on `inputs` and the parameters in float64 (floating tensors widened, the rest as
/// they are); undefined with *why where its forward does not compute in float64.
at::Tensor referenceInFloat64(Evaluation& ev, const std::vector<c10::IValue>& inputs, std::string* why);
/// `cand` against `ref64`, element by element: |cand − ref64| <= atol + tolerance × |ref64|.
CalibratedComparison compareWithReferenceError(const at::Tensor& cand, const at::Tensor& ref32, const at::Tensor& ref64,
                                               double tolerance);

// Op attribution for profiling (tracestages.cpp): while g_attribute is set, each top-level op's
// name is kept in g_opNames and its kernels carry its index + 1 as CUPTI's external id.
extern std::atomic<bool> g_attribute;
extern std::vector<std::string> g_opNames;
void ensureOpCallback();
json kernelSummary(const std::vector<KernelRecord>& records, const std::vector<std::string>& customNames);

/// Whether this process made its CUDA context and torch's CUDA state yet (deviceStage, or an
/// earlier `warm`: Evaluator::warm).
extern std::atomic<bool> g_cudaContextReady;

/// Torch's caching allocator's own reports of running out of device memory (its out-of-memory
/// observer, torch 2 with CUDA): how many this process has had, and the last one's request and
/// the device's free and total bytes at that moment. Made by the allocator, not read from a
/// message: a candidate that raises torch's words itself makes none.
struct AllocatorOutOfMemory
{
    int64_t count = 0;
    int64_t requestedBytes = 0, freeBytes = 0, totalBytes = 0;
};
/// Starts watching (once per process, after the allocator is up: createCudaContext); false where
/// this torch cannot (no CUDA, older than 2), and allocatorOutOfMemory() then stays at zero.
bool watchAllocatorOutOfMemory();
AllocatorOutOfMemory allocatorOutOfMemory();

/// gpu_memory's free_bytes and total_bytes (cudaMemGetInfo: every process's use counted) into
/// `memory`, an object after it; where the call fails, its error is cleared and nothing is set.
inline void readDeviceMemory(json& memory)
{
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    if (!memory.is_object())
        memory = json::object();
    memory[protocol::Key::kFreeBytes] = uint64_t(freeBytes);
    memory[protocol::Key::kTotalBytes] = uint64_t(totalBytes);
}

/// One `evaluate` request on its way through the stages: its settings, the response being built,
/// and what each stage leaves for the next.
struct Evaluation
{
    Evaluation(const Task& t, const json& r, bool& h)
        : task(t)
        , req(r)
        , healthy(h)
    {}

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
    /// A KernelBench-format answer's module and ModelNew(...) run before the turn is taken, under
    /// a share only (kernelBenchLoadStage: mostly CPU work, the answer's model built on the CPU as
    /// KernelBench builds it, tens of seconds for L3's largest), so the evaluation that holds the
    /// turn runs its GPU stages beside them; takeTurn() after the load.
    bool turnAfterLoad = false;
    void shareGpu()
    {
        if (gpuShare || !cuda || !quietLock)
            return;
        if (!turnTaken && !turnAfterLoad) {
            turnTaken = true;
            turn = std::make_unique<GpuQuietLock::Turn>(quietLock);
            addDetail("share", "turn_wait", turn->waitMs());
        }
        gpuShare = std::make_unique<GpuQuietLock::Hold>(quietLock, GpuQuietLock::Mode::Shared);
        addDetail("share", "quiet_wait", gpuShare->waitMs());
        if (!gpuShare->error().empty())
            res[protocol::Key::kGpuQuietLockError] = gpuShare->error();
    }
    /// Lets the share go before an exclusive hold: flock would convert this process's shared lock
    /// (one open file) in place, and a hold never waits while it holds another.
    void measureGpu() { gpuShare.reset(); }
    /// The turn deferred by turnAfterLoad, taken now: the share is let go while waiting for it (a
    /// turn is never waited for while holding a hold) and taken again after.
    void takeTurn()
    {
        turnAfterLoad = false;
        if (turnTaken || !gpuShare)
            return;
        gpuShare.reset();
        shareGpu();
    }

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
    /// The compile record's kernel_facts (kernelFactsRecord) while they are still being read:
    /// nvdisasm takes 0.4-0.7 s a cubin on the H100 machine (session 39), so the facts are read
    /// beside the reference and the correctness trials, and joinKernelFacts merges them in after
    /// those (Evaluator::evaluate), so that nothing measured runs beside nvdisasm.
    std::future<json> pendingKernelFacts;
    /// Merges facts read beside (pendingKernelFacts) into the compile record, the response's too
    /// where it holds one; the wait, where any, is stage_detail_ms.compile.kernel_facts_wait.
    void joinKernelFacts()
    {
        if (!pendingKernelFacts.valid())
            return;
        const auto t0 = Clock::now();
        const json record = pendingKernelFacts.get();
        addDetail("compile", "kernel_facts_wait", msSince(t0));
        compile.update(record);
        if (auto it = res.find("compile"); it != res.end() && it->is_object())
            it->update(record);
    }
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
    /// The reference as called: the task's TorchScript forward (refFn), or a KernelBench-only
    /// task's Model in the embedded Python (kernelBenchLoadStage).
    std::unique_ptr<CandidateCallable> reference;
    ParamDict params;
    /// The task's parameters drawn on the CPU as KernelBench draws them (ownWeights), before the
    /// evaluations' turn (kernelBenchLoadStage); referenceStage moves them to the device.
    std::optional<ParamDict> paramsOnCpu;
    std::vector<int64_t> paramPrints; ///< byte fingerprints of the parameters as made
    uint64_t rangeSeed = 0;
    std::vector<at::Tensor> degenerateRefs; ///< trials 0 and 1's reference outputs, for degenerateCheck
    double outputBytes = 0;                 ///< the reference output's size (timing-set rule)
    /// What the reference and timing stages need that is CPU work only: made on a thread of its
    /// own while a fresh worker creates its CUDA context (deviceStage), else when first asked.
    struct Prepared
    {
        std::shared_ptr<jit::CompilationUnit> refUnit;
        std::exception_ptr refError;
        json analysis; ///< analyzeTask, for the roofline (timing stage)
        std::string analysisError;
        double ms = 0; ///< the preparation's own time
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
            // A KernelBench-only task has no forward: its reference is loaded with the answer.
            if (!task.isKernelBenchOnly()) {
                p->refUnit = compileScript(task.forward);
                forwardFunction(*p->refUnit);
            }
        } catch (...) {
            p->refError = std::current_exception();
        }
        if (cuda && doTime && task.isKernelBenchOnly()) {
            p->analysisError = "the analyser counts a TorchScript forward, and " + task.id +
                               " has none (KernelBench only: " + task.kernelbenchOnly + ")";
        } else if (cuda && doTime) {
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
    /// The traced call's kernels by name in launch order (CUPTI's correlation ids), markers left
    /// out: what names the traffic stage's per-launch ranges, which CUPTI numbers only.
    std::vector<std::string> tracedLaunchOrder;
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
        // The sandbox refusing what the answer's forward tried (a trial's call, the timing's, the
        // trace's) is the sandbox's verdict in whatever stage it came, as at the answer's load; the
        // reference's own failures stay the reference's.
        if (status == "runtime_error" && stage != "reference" && python::isSandboxRefusal(message))
            return stop("rejected", "sandbox", message);
        endStage();
        res[protocol::Key::kStatus] = status;
        res[protocol::Key::kStage] = stage;
        res[protocol::Key::kMessage] = message;
        return false;
    }

    /// Synchronises and reports a pending CUDA error. After a sticky one (the context is unusable)
    /// the worker is marked unhealthy and the response says so: it exits after answering.
    CudaFault checkCuda()
    {
        CudaFault f = syncCuda();
        if (f.sticky) {
            healthy = false;
            res[protocol::Key::kWorkerHealthy] = false;
        }
        return f;
    }

    json response()
    {
        // The device's memory as this answer leaves (docs/protocol.md §evaluate, gpu_memory): the
        // supervisor lets the next worker start beside this one's exit only where it fits.
        if (cuda && g_cudaContextReady) {
            json memory;
            readDeviceMemory(memory);
            if (memory.is_object())
                res[protocol::Key::kGpuMemory] = std::move(memory);
        }
        joinKernelFacts();
        if (globalsReset && res.contains(protocol::Key::kFlags) && res[protocol::Key::kFlags].is_array())
            res[protocol::Key::kFlags].push_back("global_state_reset");
        stageMs["total"] = msSince(tTotal);
        res[protocol::Key::kStageMs] = stageMs;
        res[protocol::Key::kStageDetailMs] = stageDetail;
        return res;
    }
};

// ---- evaluate, as stages --------------------------------------------------------------------
//
// parse → compile → sandbox → (device) → load → reference → correctness → timing → trace → traffic.
// Each stage is a function over one Evaluation and returns false when the evaluation ends there;
// every end goes through Evaluation::stop, every CUDA fault check through Evaluation::checkCuda.

bool parseStage(Evaluation& ev);
bool kernelBenchLoadStage(Evaluation& ev);
bool compileStage(Evaluation& ev);
bool sandboxStage(Evaluation& ev);
void startContextBeside(Evaluation& ev);
void ensureCudaContext(at::Device dev);
bool deviceStage(Evaluation& ev);
bool loadStage(Evaluation& ev);
void resetGlobalsAfterImport(Evaluation& ev);
void restoreGlobals(Evaluation& ev);
bool globalsUnchanged(Evaluation& ev, const char* stage);
bool runCandidate(Evaluation& ev, std::vector<c10::IValue> args, c10::IValue* out, std::string* err);
bool referenceStage(Evaluation& ev);
bool correctnessStage(Evaluation& ev);
std::string ownCopiesProblem(const Evaluation& ev, const std::vector<c10::IValue>& inputs,
                             const std::vector<int64_t>& prints);
at::Tensor referenceOutput(Evaluation& ev, const std::vector<c10::IValue>& inputs);
void releaseReference(Evaluation& ev, at::Tensor& t);
bool timingStage(Evaluation& ev);
bool traceStage(Evaluation& ev);
void trafficStage(Evaluation& ev);

} // namespace evaluation
} // namespace kwb
