// What ran and what it moved: op attribution (RecordFunction callbacks give each kernel the op
// that launched it, for `profile`), the trace stage (8, CUPTI's kernel records) and the traffic
// stage (9, CUPTI's DRAM counters).
#include "worker/evaluate/evaluation.h"
#include "worker/measure/kernellaunches.h"

namespace kwb::evaluation {

// ---- op attribution for profiling: RecordFunction callbacks push a CUPTI external correlation
// id for each top-level op, so every kernel maps to the op that launched it.
std::atomic<bool> g_attribute{false};

namespace {

thread_local int t_depth = 0;

} // namespace

std::vector<std::string> g_opNames; // index = external id - 1 within one forward

namespace {

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

} // namespace

void ensureOpCallback()
{
    static bool registered = [] {
        at::addGlobalCallback(at::RecordFunctionCallback(&onOpStart, &onOpEnd).scopes({at::RecordScope::FUNCTION}));
        return true;
    }();
    (void)registered;
}

namespace {

/// Whether a traced kernel is one the candidate's source declares: its name as declared (extern "C")
/// or demangled with its parameters ("scale_kernel(float const*, …)", a load_inline kernel).
bool isCustomKernel(const std::string& traced, const std::vector<std::string>& customNames)
{
    for (const auto& k : customNames)
        if (traced == k || (traced.size() > k.size() && traced.compare(0, k.size(), k) == 0 && traced[k.size()] == '('))
            return true;
    return false;
}

} // namespace

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
        out.push_back({{protocol::Key::kName, name},
                       {protocol::Key::kCalls, e.first},
                       {protocol::Key::kTimeNs, e.second},
                       {protocol::Key::kCustom, custom}});
    }
    std::sort(out.begin(), out.end(),
              [](const json& a, const json& b) { return a[protocol::Key::kTimeNs] > b[protocol::Key::kTimeNs]; });
    return out;
}

namespace {

/// `launches`: each traced kernel's configuration and theoretical occupancy (kernellaunches.h).
void launchesOf(Evaluation& ev, const std::vector<KernelRecord>& records)
{
    int ordinal = 0;
    std::string why;
    std::optional<SmLimits> sm;
    if (cudaGetDevice(&ordinal) == cudaSuccess)
        sm = smLimits(ordinal, &why);
    else
        why = "no current CUDA device";
    cudaGetLastError();
    std::size_t omitted = 0;
    ev.res[ProtocolNames::KernelLaunch::kLaunches] = kernelLaunches(
        records, [&ev](const std::string& name) { return isCustomKernel(name, ev.kernelNames); }, sm ? &*sm : nullptr,
        why, &omitted);
    if (omitted > 0)
        ev.res[ProtocolNames::KernelLaunch::kLaunchesOmitted] = omitted;
}

/// CUPTI's id of the stream the timer records its events on (the legacy default stream, where
/// torch's ops and kb.launch run): a fill kernel's, traced alone (where the shared trace lost its record). nullopt
/// where it cannot be traced.
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

/// The candidate once, then the end marker on the timed stream (a one-element fill, queued where
/// the timer records its stop event: streamwork.h), then the synchronisation that lets every
/// stream finish; runCandidate's result.
bool runCandidateMarked(Evaluation& ev, std::vector<c10::IValue> args, c10::IValue* out, std::string* err)
{
    try {
        *out = ev.callable->bind(std::move(args))();
        (void)torch::zeros({1}, at::TensorOptions().device(ev.dev));
    } catch (const std::exception& e) {
        *err = e.what();
    }
    CudaFault f = ev.checkCuda();
    if (f.any)
        *err = (err->empty() ? "" : *err + "\n") + "CUDA error after the candidate ran: " + f.message;
    return err->empty();
}

} // namespace

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
    struct Detach
    {
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
        auto args =
            cloneArgs(ev.timingInputs, ev.params, ev.task, true); // before tracing: clones are not the candidate's
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
            runCandidateMarked(ev, std::move(args), &outV, &runErr);
            tracer.stop();
            auto records = tracer.take();
            std::optional<uint32_t> timed;
            const auto marker =
                std::min_element(records.begin(), records.end(),
                                 [](const KernelRecord& x, const KernelRecord& y) { return x.startNs < y.startNs; });
            if (marker != records.end() && marker->name.find("FillFunctor") != std::string::npos) {
                timed = marker->streamId;
                records.erase(marker);
            } else {
                const auto t1 = Clock::now();
                timed = timedStreamId(ev.dev); // the fill's record is not there: traced alone
                ev.addDetail("trace", "stream_probe_alone", msSince(t1));
            }
            const std::optional<KernelRecord> endMarker = timed ? takeEndMarker(records, *timed) : std::nullopt;
            ev.res[protocol::Key::kKernels] = kernelSummary(records, ev.kernelNames);
            {
                std::vector<const KernelRecord*> byLaunch;
                for (const auto& r : records)
                    byLaunch.push_back(&r);
                std::sort(byLaunch.begin(), byLaunch.end(), [](const KernelRecord* x, const KernelRecord* y) {
                    return x->correlationId < y->correlationId;
                });
                ev.tracedLaunchOrder.clear();
                for (const KernelRecord* r : byLaunch)
                    ev.tracedLaunchOrder.push_back(r->name);
            }
            launchesOf(ev, records);
            ev.res[protocol::Key::kCustomLaunches] = ev.launchCtx.launches - before;
            int elsewhere = 0;
            std::string example;
            // The candidate's own kernels only: what torch, cuBLAS and cuDNN launch is theirs.
            for (const auto& r : records)
                if (timed && r.streamId != *timed && isCustomKernel(r.name, ev.kernelNames) && elsewhere++ == 0)
                    example = r.name;
            if (elsewhere > 0) {
                ev.res[protocol::Key::kTorchOnly] = !ev.launchesKernels;
                ev.res.erase(protocol::Key::kSpeedup);
                return ev.stop("incorrect", "timing",
                               std::to_string(elsewhere) + " of " + std::to_string(records.size()) +
                                   " kernels (its own) ran on a stream other than the current one (first: " + example +
                                   "): the timer cannot see that work; launch on the current stream");
            }
            // Any kernel, a library's too, still running elsewhere when the call returned.
            const UnseenWork unseen = endMarker ? unseenWork(records, *timed, *endMarker) : UnseenWork{};
            if (!endMarker)
                ev.res["unseen_work_note"] =
                    "no end marker in the trace: work left on other streams was not looked for";
            if (unseen.kernels > 0) {
                ev.res[protocol::Key::kTorchOnly] = !ev.launchesKernels;
                ev.res.erase(protocol::Key::kSpeedup);
                ev.res["unseen_work"] = {{"kernels", unseen.kernels}, {"ns", unseen.ns}, {"first", unseen.first}};
                return ev.stop("incorrect", "timing",
                               std::to_string(unseen.kernels) +
                                   " kernels on a stream other than the current one (first: " + unseen.first + ", " +
                                   std::to_string(unseen.ns / 1000) +
                                   " us of work) were still running when the call returned: the timer cannot see that "
                                   "work; join such streams to the current one before forward returns");
            }
        } else {
            ev.res["kernels_error"] = err;
        }
    }
    ev.res[protocol::Key::kTorchOnly] = !ev.launchesKernels;
    detach.on = ev.cuda && !ev.profileTraffic && !ev.retimeAttached;
    ev.endStage();
    return true;
}

namespace {

/// More launches than this in one call are not counted one by one (a range each in the counter
/// data; thousands of launches would make the profile slower than the evaluation).
constexpr size_t kMaxPerKernelLaunches = 1024;

/// `traffic.per_kernel`: the call again under CUPTI's auto ranges, one per kernel launch, named
/// by the trace's launch order and summed per kernel name. What the last kernels leave dirty in
/// the L2 reaches HBM after the last range: the whole-call total's writes less the kernels' own
/// go to the kernel that launched last (`written_back_after_bytes`), most often the one that
/// wrote the output. Never fails the traffic profile: a failure here is its own reason.
json perKernelTraffic(Evaluation& ev, int ordinal, const DramTraffic& whole, const GpuStep& prepare,
                      const GpuStep& work)
{
    const auto notCounted = [](const std::string& reason) {
        return json{{protocol::Key::kProfiled, false}, {protocol::Key::kReason, reason}};
    };
    const std::vector<std::string>& order = ev.tracedLaunchOrder;
    if (order.empty())
        return notCounted("no kernel trace names the launches");
    if (order.size() > kMaxPerKernelLaunches)
        return notCounted(std::to_string(order.size()) +
                          " kernel launches in one call: counted one by one only up to " +
                          std::to_string(kMaxPerKernelLaunches));
    // A few ranges more than the trace saw, so that a call launching more this time is caught by
    // its count rather than by ranges dropped.
    const PerLaunchTraffic p = measureDramTrafficPerLaunch(ordinal, prepare, work, order.size() + 8);
    if (!p.profiled)
        return notCounted(p.reason);
    if (p.launches.size() != order.size())
        return notCounted("the call launched " + std::to_string(p.launches.size()) +
                          " kernels under the profiler and " + std::to_string(order.size()) +
                          " in the trace: which launch is which kernel is not known");
    json kernels = json::array();
    std::map<std::string, size_t> at;
    double written = 0;
    for (size_t i = 0; i < order.size(); ++i) {
        auto [it, fresh] = at.emplace(order[i], kernels.size());
        if (fresh)
            kernels.push_back({{protocol::Key::kName, order[i]},
                               {protocol::Key::kCalls, 0},
                               {protocol::Key::kDramReadBytes, 0.0},
                               {protocol::Key::kDramWriteBytes, 0.0}});
        json& k = kernels[it->second];
        k[protocol::Key::kCalls] = k[protocol::Key::kCalls].get<int>() + 1;
        k[protocol::Key::kDramReadBytes] = k[protocol::Key::kDramReadBytes].get<double>() + p.launches[i].readBytes;
        k[protocol::Key::kDramWriteBytes] = k[protocol::Key::kDramWriteBytes].get<double>() + p.launches[i].writeBytes;
        written += p.launches[i].writeBytes;
    }
    // Two replays of the same call: the kernels' writes may exceed the whole's by the counters'
    // noise, never by the output; nothing is left after them then.
    kernels[at.at(order.back())][protocol::Key::kWrittenBackAfterBytes] = std::max(0.0, whole.writeBytes - written);
    return {{protocol::Key::kProfiled, true},
            {protocol::Key::kMethod, "cupti_auto_range"},
            {protocol::Key::kReplay, p.replay},
            {protocol::Key::kPasses, p.passes},
            {protocol::Key::kKernels, kernels}};
}

} // namespace

/// 9. traffic (only with `profile_traffic`, only for a correct candidate, after timing, under the
/// GPU the evaluation already holds): the HBM bytes one call of the candidate on the timing inputs
/// moves, counted by CUPTI's range profiler (dramprofiler.h). Never changes the verdict: any
/// failure, the profiler's or the call's, is `traffic: {"profiled": false, "reason": …}`.
void trafficStage(Evaluation& ev)
{
    if (!ev.profileTraffic)
        return;
    ev.startStage("traffic");
    json t = {{protocol::Key::kProfiled, false}};
    DramTraffic d;
    json perKernel;
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
            ev.res[protocol::Key::kGpuQuietLockError] = quiet.error();
        try {
            // Twice the L2, read (not written) before and after the call: reading evicts every line
            // the L2 holds, writing back the dirty ones, and leaves only clean ones behind. Before
            // the call that gives a cold L2 (the inputs come from HBM, as in a cold timed call);
            // after it, the output lines still dirty in the L2 reach HBM inside the drain's range.
            const int64_t l2 = deviceFacts(ordinal).value(protocol::Key::kL2Bytes, int64_t(64) << 20);
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
                if (d.profiled)
                    perKernel = perKernelTraffic(ev, ordinal, d, prepare, work);
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
        ev.res[protocol::Key::kWorkerHealthy] = false;
        ev.res["worker_retired"] = "CUPTI's range profiler ran in this worker; a fresh worker times the next candidate";
    }
    if (d.profiled) {
        int kernels = 0; // the trace stage's count: the same call on the same inputs
        for (const json& k : ev.res.value(protocol::Key::kKernels, json::array()))
            kernels += k.value(protocol::Key::kCalls, 0);
        t = {{protocol::Key::kProfiled, true},
             {protocol::Key::kDramBytes, d.readBytes + d.writeBytes},
             {protocol::Key::kDramReadBytes, d.readBytes},
             {protocol::Key::kDramWriteBytes, d.writeBytes},
             {protocol::Key::kKernels, kernels},
             {protocol::Key::kPasses, d.passes},
             {protocol::Key::kMethod, "cupti_range_profiler"},
             {protocol::Key::kL2, "cold"}};
        if (!perKernel.is_null())
            t[protocol::Key::kPerKernel] = perKernel;
    } else {
        t[protocol::Key::kReason] = d.reason;
    }
    ev.res[protocol::kTrafficField] = t;
    ev.endStage();
}

} // namespace kwb::evaluation
