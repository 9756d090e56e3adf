// The timing stage (7): the eager reference and the candidate timed the same way (measure.h),
// their outputs checked on every input set, and the roofline check of the result.
#include "worker/evaluate/evaluation.h"

#include <random>

namespace kwb::evaluation {

namespace {

/// Raised from a timing prepare when a checked timed call's output differs from its reference.
struct TimedOutputMismatch : std::runtime_error
{
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
    if (why.empty() && !facts.value(protocol::Key::kAvailable, false))
        why = "no device facts: " + facts.value(protocol::Key::kReason, std::string());
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
        ev.res[protocol::Key::kFlags] = flags;
        ev.res["roofline"] = {{"floor_ms", nullptr}, {protocol::Key::kReason, why}};
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
    ev.res[protocol::Key::kFlags] = a[protocol::Key::kFlags];
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
    k.profile = ev.res.value(protocol::Field::kProfile, json::object()).dump();
    int ordinal = 0;
    cudaGetDevice(&ordinal);
    k.device = ordinal;
    const json facts = deviceFacts(ordinal);
    k.defaultClockMhz = facts.value(protocol::Key::kSmClockKhz, 0) / 1000;
    k.memoryClockMhz = facts.value(protocol::Key::kMemoryClockKhz, 0) / 1000;
    k.inputSets = inputSets;
    return k;
}

} // namespace

/// 7. timing: the eager reference and the candidate, the same way, in this process (measure.cpp).
/// The calls rotate over input sets (measure::timingSetCount) so that consecutive calls never see
/// the same inputs, and each round over the sets rotates the sets' elements anew (variantOf), so
/// that no call sees inputs an earlier call saw; the candidate's outputs of the first and last
/// timed call on each set, and of timed calls drawn at random, are checked against the reference
/// output of their inputs made after them (settle, below); every output is poisoned once settled.
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
            ev.res[protocol::Key::kGpuQuietLockError] = quiet->error();
        return quiet->waitMs();
    };
    const int trials = ev.prof.timing.trials;
    std::set<int> checked;
    for (int k = 0; k < nSets; ++k)
        for (int call : measure::checkedCalls(k, nSets, trials))
            checked.insert(call);
    // Call `index` runs on set index % nSets, rotated by its round (index / nSets; the first round
    // is the sets themselves). A KernelBench-only task's inputs are get_inputs()'s, whose structure
    // (a mask, a triangle) a rotation may break: its calls repeat the sets.
    const bool vary = !ev.task.isKernelBenchOnly();
    const auto variantOfCall = [&](int index) -> int64_t { return vary && index >= 0 ? index / nSets : 0; };
    const auto inputsOf = [&](int set, int64_t variant) {
        if (variant == 0)
            return sets[size_t(set)];
        std::vector<c10::IValue> v;
        for (const c10::IValue& x : sets[size_t(set)])
            v.push_back(x.isTensor() ? c10::IValue(variantOf(x.toTensor(), variant)) : x);
        return v;
    };
    // Besides those, each timed call is checked with probability kRandomCheck, drawn after it ran
    // from a generator the candidate cannot know: a candidate that computes only on the calls it
    // can predict to be checked (the first sight of a set, the fixed method's last calls) and
    // returns anything on the others is found.
    constexpr double kRandomCheck = 1.0 / 16;
    std::mt19937_64 rng(std::random_device{}());
    std::bernoulli_distribution drawCheck(kRandomCheck);
    int randomChecks = 0;

    // The reference's last timed (or warm-up) output: kept past its call and released filled with
    // NaN in the next prepare, outside the timed bracket and before the next call, as every other
    // reference output is (releaseReference). Freed as it was, with its values in it, the caching
    // allocator could hand its block to the candidate's torch.empty on the same inputs right after
    // (an R C pair), and a candidate that stops computing once it is timed would return the answer.
    at::Tensor refOut;
    struct ReleaseOnExit
    { // a mismatch or a fault leaves the stage early: the same release then
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
    int64_t refOutVariant = 0;
    at::Tensor pendingOut;
    int pendingSet = -1, pendingCall = -1, pendingSeq = -1, checks = 0;
    int64_t pendingVariant = 0;
    std::optional<bool> pendingDrawn; // the pending call's random draw, made once, after it ran
    const auto pendingChecked = [&]() {
        if (checked.count(pendingCall))
            return true;
        if (!pendingDrawn)
            pendingDrawn = pendingCall >= 0 && drawCheck(rng);
        return *pendingDrawn;
    };
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
        const int64_t variant = pendingVariant;
        const bool refOutFollows =
            refOut.defined() && refOutSet == set && refOutVariant == variant && refOutSeq > pendingSeq;
        const bool check = call >= 0 && (force || pendingChecked());
        const bool drawn = check && !force && checked.count(call) == 0;
        pendingSet = -1;
        pendingDrawn.reset();
        at::Tensor out = pendingOut;
        pendingOut = at::Tensor();
        // The output is poisoned on every way out (output poisoning, docs/protocol.md): a block the
        // candidate keeps and returns again, or one the allocator hands its next output, holds the
        // canary wherever that call writes nothing. Never the evaluator's weights, which timed calls
        // share: an output that is one of them fails here and is left as it is.
        if (out.defined()) {
            const std::string param = aliasedArgument(out, {c10::IValue(ev.params)}, ev.task);
            if (!param.empty())
                throw TimedOutputMismatch("the output of timed call " + std::to_string(call + 1) +
                                          " shares memory with the parameter '" + param +
                                          "'; forward must return a new tensor");
        }
        struct PoisonOnExit
        {
            at::Tensor& t;
            ~PoisonOnExit()
            {
                try {
                    poison(t);
                } catch (...) { // a faulted context: the fill fails, and the worker ends after this evaluation
                }
            }
        } poisonOut{out};
        if (!check)
            return;
        randomChecks += drawn ? 1 : 0;
        const auto t0 = Clock::now();
        struct AddTime
        {
            double& to;
            Clock::time_point t0;
            ~AddTime() { to += msSince(t0); }
        } addTime{checksMs, t0};
        std::string reason = ownCopiesProblem(ev, sets[size_t(set)], prints[size_t(set)]);
        if (reason.empty()) {
            at::Tensor ranAgain = refOutFollows ? at::Tensor() : referenceOutput(ev, inputsOf(set, variant));
            const at::Tensor& ref = refOutFollows ? refOut : ranAgain;
            const Comparison c = out.defined() ? compareOutputs(out, ref, ev.prof.atol, ev.prof.rtol)
                                               : Comparison{false, "no tensor output"};
            releaseReference(ev, ranAgain);
            if (!c.ok) {
                const int64_t untouched = out.defined() ? canaryCount(out) : 0;
                reason = untouched == 0 ? c.reason
                                        : std::to_string(untouched) + " of " + std::to_string(out.numel()) +
                                              " output elements were never written: they still hold the canary "
                                              "earlier outputs were filled with; " +
                                              c.reason;
            }
        }
        ++checks;
        if (!reason.empty())
            throw TimedOutputMismatch("output of a timed call differs from its reference: the candidate may reuse an "
                                      "earlier result (timed call " +
                                      std::to_string(call + 1) + (drawn ? ", drawn at random" : "") + ", input set " +
                                      std::to_string(set + 1) + " of " + std::to_string(nSets) + ": " + reason + ")");
    };
    auto prepareRef = [&, warm = 0](int index) mutable -> measure::Call {
        const auto t0 = Clock::now();
        // A candidate call checked against the reference output about to be released (C R, then R).
        if (pendingSet >= 0 && refOut.defined() && refOutSet == pendingSet && refOutVariant == pendingVariant &&
            refOutSeq > pendingSeq && pendingCall >= 0 && pendingChecked()) {
            prepareMs += msSince(t0);
            settle(false);
        }
        const auto t1 = Clock::now();
        releaseReference(ev, refOut);
        restoreGlobals(ev);
        const int set = index < 0 ? warm++ % nSets : index % nSets;
        const int64_t variant = variantOfCall(index);
        auto call = ev.reference->bind(cloneArgs(sets[size_t(set)], ev.params, ev.task, false, variant));
        const int mySeq = ++seq, mySet = index < 0 ? -1 : set; // a warm-up's output checks nothing
        prepareMs += msSince(t1);
        return
            [call = std::move(call), &refOut, &refOutSet, &refOutSeq, &refOutVariant, mySeq, mySet, variant]() mutable {
                const c10::IValue out = call();
                if (out.isTensor()) {
                    refOut = out.toTensor();
                    refOutSet = mySet;
                    refOutSeq = mySeq;
                    refOutVariant = variant;
                }
            };
    };
    auto prepareCand = [&, warm = 0](int index) mutable -> measure::Call {
        settle(false);
        releaseReference(ev, refOut);
        const auto t0 = Clock::now();
        const int set = index < 0 ? warm++ % nSets : index % nSets;
        const int64_t variant = variantOfCall(index);
        auto call = ev.callable->bind(cloneArgs(sets[size_t(set)], ev.params, ev.task, false, variant));
        const int mySeq = ++seq;
        prepareMs += msSince(t0);
        // Every output is kept until the next prepare (settle): a warm-up's (index -1) only to be poisoned.
        return [&, call = std::move(call), set, index, mySeq, variant]() mutable {
            c10::IValue out = call();
            pendingOut = out.isTensor() ? out.toTensor() : at::Tensor();
            pendingSet = set;
            pendingCall = index;
            pendingSeq = mySeq;
            pendingVariant = variant;
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
        takeQuiet(); // the old order (the request's `timing_warmup_shared`: false): the setup and warm-up under the
                     // hold
    measure::Comparison timed;
    const auto mismatch = [&](const TimedOutputMismatch& e) {
        ev.res[protocol::Key::kTiming] = {
            {"input_sets", nSets}, {"checked_calls", checks}, {"random_checks", randomChecks}};
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
    ev.res[protocol::Key::kTiming] = timed.toJson();
    ev.res[protocol::Key::kTiming]["input_sets"] = nSets;
    ev.res[protocol::Key::kTiming]["checked_calls"] = checks;
    ev.res[protocol::Key::kTiming]["random_checks"] = randomChecks;
    ev.res[protocol::Key::kTiming]["inputs_vary_per_round"] = vary;
    if (auto s = timed.speedup(ev.prof.statistic))
        ev.res[protocol::Key::kSpeedup] = *s;
    rooflineCheck(ev, timed);
    lap("roofline");
    // Kept for the trace (evaluate), which then waits for nothing and runs beside nothing; never
    // where another exclusive measurement follows it (retime, traffic), which takes its own.
    if (ev.traceExclusive && ev.timingIsLastMeasurement() && quiet && quiet->held())
        ev.traceHold = std::move(quiet);
    ev.endStage();
    return true;
}

} // namespace kwb::evaluation
