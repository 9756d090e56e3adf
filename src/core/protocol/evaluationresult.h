#pragma once
// An `evaluate` response (docs/protocol.md §evaluate) as a value: decodeEvaluation() is the one
// place that reads its keys. The supervisor's failures (a request that ended without a response,
// stored as {"status": "timeout", "message": …}) decode to the same type, so the store, the run,
// the reports and the pages read one thing. `raw` keeps the object as it came, for the store and
// for exports: the run store keeps the worker's JSON, never a re-encoding of this struct.

#include "core/protocol/evaluationstatus.h"
#include "core/protocol/kernelfacts.h"
#include "core/protocol/kernellaunches.h"
#include "core/protocol/protocolnames.h"

#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

/// `evaluate`'s request flag (a boolean, default false) that asks for the candidate's measured HBM
/// traffic, and the response key that carries it (docs/protocol.md §evaluate, "traffic"):
/// protocolnames.h's, which the worker writes and reads too.
inline constexpr const char* kProfileTrafficKey = ProtocolNames::Field::kProfileTraffic;
inline constexpr const char* kTrafficKey = ProtocolNames::Key::kTraffic;
/// Added to a stored evaluation by the run controller, not the worker: the candidate row whose
/// evaluation this one copies (an identical answer, evaluate identical once).
inline constexpr const char* kReusedFromCandidateKey = "reused_from_candidate";
/// Beside it where that candidate is another run's (identical_across_runs): that run's id.
inline constexpr const char* kReusedFromRunKey = "reused_from_run";

/// `traffic`: the HBM bytes one call of a correct candidate moved (CUPTI's DRAM counters), or why
/// it was not profiled. A record that breaks the format (an unknown key, a profiled record without
/// positive dram_bytes) decodes as not profiled, with the reason naming the fault.
/// One kernel's share of `traffic`, summed over its launches in the call (`traffic.per_kernel`).
struct KernelTraffic
{
    QString name; ///< as traced (the trace's `kernels[].name`)
    int calls = 0;
    double readBytes = 0;
    double writeBytes = 0; ///< written back to HBM while it ran
    /// Only on the kernel that launched last: the call's writes that reached HBM after its last
    /// kernel (lines left dirty in the L2, most often the output's), counted as this kernel's.
    double writtenBackAfterBytes = 0;
    double bytes() const { return readBytes + writeBytes + writtenBackAfterBytes; }
};

struct TrafficProfile
{
    bool profiled = false;
    double dramBytes = 0; ///< read + write; > 0 where profiled
    std::optional<double> readBytes, writeBytes;
    std::optional<int> kernels, passes;
    QString method; ///< "cupti_range_profiler"
    QString reason; ///< why not profiled
    /// Each kernel's bytes (CUPTI's auto ranges); empty with `perKernelReason` where not counted.
    QList<KernelTraffic> perKernel;
    QString perKernelReason;
    QString perKernelReplay; ///< "user" (the call as it runs) or "kernel" (CUPTI replayed each kernel alone)
    const KernelTraffic* kernel(const QString& name) const
    {
        for (const KernelTraffic& k : perKernel)
            if (k.name == name)
                return &k;
        return nullptr;
    }
};

/// `format_error`: the answer breaks docs/candidate-format.md.
struct FormatErrorInfo
{
    QString code; ///< "no_code_block", …
    QString message;
    int line = 0; ///< 0: unknown
};

/// `compile` of an evaluate response, and the body of a `compile` response.
struct CompileInfo
{
    bool ok = false;
    bool okKnown = false; ///< the response said ok (or ok_compile) at all
    QString log;
    std::optional<double> ms;
    QString arch;
    QStringList kernels;
    bool cached = false; ///< loaded from a cubin compiled ahead
    QString sourceHash;  ///< compile responses
    QString cubinB64;    ///< compile responses with return_cubin
    QString refusedCode; ///< the CUDA pre-check refused the source (`refused.code`)
    QString refusedMessage;
    /// `kernel_facts`: each compiled kernel's resources, PTX and SASS (issue 40), and what of
    /// them could not be read.
    QList<KernelFactsInfo> kernelFacts;
    QString kernelFactsNote;
};

/// `correctness.range_trial`: the N(0,1) trial (null when skipped).
struct RangeTrialInfo
{
    QString generator;
    std::optional<double> atol, rtol, maxAbsDiff;
    std::optional<bool> passed;
};

struct CorrectnessInfo
{
    int trials = 0;
    int passed = 0;
    std::optional<double> maxAbsDiff, maxRelDiff, atol, rtol;
    std::optional<bool> deterministic; ///< null: not checked
    bool hasFailure = false;
    QString failureTrial; ///< "3", "range", …
    QString failureReason;
    QJsonValue failureDetail; ///< `failure.detail` as sent (where the outputs differ), for display
    std::optional<RangeTrialInfo> rangeTrial;
};

/// One side of `timing`.
struct TimingStats
{
    double meanMs = 0, medianMs = 0, stdMs = 0, minMs = 0, maxMs = 0;
    int trials = 0;
};

/// `timing.speedup_interval`: the 95 % interval of the speed-up (reference mean / candidate
/// mean, delta method; docs/protocol.md §evaluate).
struct SpeedupInterval
{
    double low = 0, high = 0;
    std::optional<double> relativeHalfWidth = std::nullopt; ///< null when the interval is unbounded
    int samples = 0;
};

struct TimingInfo
{
    std::optional<TimingStats> candidate, reference;
    QString method;               ///< "adaptive" or "fixed"; empty from workers before issue 13
    QString stopReason;           ///< "target_reached", "max_samples", "max_time", "fixed_trials"
    std::optional<int> samples;   ///< the candidate samples (pairs) kept
    std::optional<int> throttled; ///< samples that ran throttled (dropped in the adaptive method)
    std::optional<SpeedupInterval> interval;
    int referenceReused = 0; ///< cached reference samples pooled in
};

/// One row of `kernels`: a kernel the candidate launched, as CUPTI saw it.
struct KernelLaunch
{
    QString name;
    int calls = 0;
    double timeNs = 0;
    bool custom = false; ///< one of the candidate's own kernels
};

struct DegenerateInfo
{
    QString kind; ///< mostly_zero, constant, input_independent
    std::optional<double> zeroFraction;
    QString message;
};

/// Something the evaluation noticed that is not its verdict (`notes`, docs/protocol.md): a
/// KernelBench-only task run at full scale, parameters named unlike the reference's, an import the
/// answer never uses and was not made.
struct EvaluationNote
{
    QString code; ///< kernelbench_only_scale, parameters_differ, unused_import
    QString message;
    int line = 0; ///< the answer's line, where the note is about one (0: none)
};

/// A protocol profile's settings, as `evaluate` reports them and `hello` announces them.
struct ProfileSettings
{
    QString name;
    std::optional<double> atol, rtol;
    std::optional<bool> tf32, l2Flush, graphOptimize;
    QString inputGenerator, timingStat;
    std::optional<int> timingTrials, warmup, correctnessTrials;
    QJsonObject raw;
};

/// `candidate`: what the worker's parser found in the answer (the worker is the only parser).
struct CandidateEcho
{
    QString cuda, python;
    QStringList kernels;
    QString sourceHash;
    int cudaLine = 0, pythonLine = 0; ///< where each block starts in the answer (0: unknown)
};

/// `gpu_memory.out_of_memory`: torch's caching allocator's own report that it ran out of device
/// memory during the evaluation (the last time of `count`): what it asked for, and the device's
/// free and total bytes at that moment; the device's PCI bus id, for kwb to ask the driver who
/// held the rest (core/workers/gpumemoryelsewhere.h).
struct AllocatorOutOfMemoryReport
{
    int count = 0;
    double requestedBytes = 0, freeBytes = 0, totalBytes = 0;
    QString pciBusId;
};

struct EvaluationResult
{
    /// false for an `ok: false` response (a refused request): then errorCode/errorMessage say why.
    bool ok = true;
    QString errorCode, errorMessage;

    EvaluationStatus status = EvaluationStatus::Unknown;
    QString statusName; ///< the wire name as received (kept for statuses this build does not know)
    QString stage;
    QString message;
    QString log; ///< a supervisor failure's log (the worker's stderr), when one is stored

    std::optional<FormatErrorInfo> formatError;
    std::optional<CompileInfo> compile;
    std::optional<CorrectnessInfo> correctness;
    TimingInfo timing;
    std::optional<double> speedup; ///< finite numbers only
    QList<KernelLaunch> kernels;
    /// `launches`: each traced kernel's configuration and theoretical occupancy (issue 40), the
    /// longest first; launchesOmitted the configurations left out of the list.
    QList<KernelLaunchConfig> launches;
    int launchesOmitted = 0;
    std::optional<int> customLaunches;
    bool torchOnly = false;
    /// `answer_format` as the worker echoes it ("native", "kernelbench"); empty in results from
    /// before it was echoed, which were all native.
    QString answerFormat;
    /// KernelBench's format: the answer's CUDA is inside its Python module (load_inline, nvcc), not
    /// a block of its own, and the module is Python, not TorchScript.
    bool isKernelBenchFormat() const;
    std::optional<DegenerateInfo> degenerate;
    QList<EvaluationNote> notes;
    std::optional<ProfileSettings> profile;
    QMap<QString, double> stageMs;
    bool workerHealthy = true;
    /// `gpu_memory`: the device's free and total bytes as the answer left (cudaMemGetInfo, every
    /// process's use counted); absent on a CPU evaluation or from an older worker.
    std::optional<double> gpuFreeBytes, gpuTotalBytes;
    /// What the worker gave back of torch's cache after the evaluation (free_bytes is read after).
    std::optional<double> gpuReleasedBytes;
    /// `gpu_memory.out_of_memory`: torch's allocator ran out during the evaluation (its own report).
    std::optional<AllocatorOutOfMemoryReport> gpuOutOfMemory;
    QString referenceOutputsOn; ///< "device", "host" or empty
    std::optional<CandidateEcho> candidate;
    /// `traffic`: present only where the request asked for it (profile_traffic).
    std::optional<TrafficProfile> traffic;
    /// `flags`: warnings that leave the status as it is ("below_roofline_floor",
    /// "speedup_over_10x", …; docs/protocol.md §evaluate).
    QStringList flags;

    QJsonObject raw; ///< the object as received

    bool isCorrect() const { return status == EvaluationStatus::Correct; }
    /// The candidate's time is below the task's roofline floor on this GPU (beyond the margin
    /// for ceiling error): physically impossible for a kernel that does the work.
    bool belowRooflineFloor() const { return flags.contains(QStringLiteral("below_roofline_floor")); }
    /// Correct in every count (reports, tables, curves, selection): status correct and a time
    /// that is physically possible. The one predicate for "correct" outside the wire status.
    bool countsAsCorrect() const { return isCorrect() && !belowRooflineFloor(); }
    /// The speed-up that counts (reports, selection): positiveSpeedup(), none when the time is
    /// below the roofline floor.
    std::optional<double> trustedSpeedup() const;
    /// Whether the candidate got past NVRTC, in the study's sense: its status implies it
    /// (statusCompiled(): correct, incorrect, runtime_error), or the response's `compile.ok` says
    /// so (rejected after compiling, no_device where the compile ran, a timeout or crash after
    /// compiling). The one rule that reports and selection share.
    bool compiled() const;
    /// A positive finite speed-up, or nullopt.
    std::optional<double> positiveSpeedup() const;
    /// The interval of the speed-up that counts (trustedSpeedup()): none without one.
    std::optional<SpeedupInterval> trustedSpeedupInterval() const;
    /// The HBM bytes a profile of the candidate measured (read + write), where one exists.
    std::optional<double> measuredDramBytes() const
    {
        return traffic && traffic->profiled ? std::optional<double>(traffic->dramBytes) : std::nullopt;
    }
    /// The reason in the message, else that of an `ok: false` response.
    QString messageOrError() const { return message.isEmpty() ? errorMessage : message; }
    /// A runtime error that says the device ran out of memory (torch's "CUDA out of memory", CUDA's
    /// "out of memory"): the machine's doing, not the candidate's, where another worker held
    /// memory on that GPU meanwhile (EvaluationQueue and WorkerSupervisor then run it again alone).
    bool outOfDeviceMemory() const
    {
        return status == EvaluationStatus::RuntimeError &&
               messageOrError().contains(QLatin1String("out of memory"), Qt::CaseInsensitive);
    }
};

/// A speed-up as every page, table, prompt and the command line print it: "1.25× [1.24–1.26]"
/// (the 95 % interval in brackets where there is one, "∞" for an unbounded end), "1.25×" without
/// (the fixed method, a worker before issue 13); empty for NaN. `decimals` is the least: more (to
/// 4) where the interval's ends would otherwise print alike, "1.071× [1.070–1.073]", and the
/// value then has as many (speedupDecimals).
QString formatSpeedup(double speedup, const std::optional<SpeedupInterval>& interval, int decimals = 2);
/// The interval's two ends as formatSpeedup writes them between its brackets: "1.24–1.26".
QString formatSpeedupInterval(const SpeedupInterval& interval, int decimals = 2);
/// The decimals formatSpeedup uses for this interval: the fewest from `decimals` to 4 at which
/// its two ends differ.
int speedupDecimals(const SpeedupInterval& interval, int decimals = 2);
/// The evaluation's speed-up (its `speedup`) so, with its timing's interval; empty without one.
QString formatSpeedup(const EvaluationResult& evaluation, int decimals = 2);

/// "adaptive: target_reached after 38 pairs (2 throttled, dropped)", "fixed: 100 trials each";
/// empty where the response says nothing of its method (a worker before issue 13).
QString formatTimingMethod(const TimingInfo& timing);

/// "measured 8.59 GB of HBM traffic (1 kernel, CUPTI)", "not profiled: <reason>"; empty where no
/// profile was asked for.
QString formatTraffic(const std::optional<TrafficProfile>& traffic);

/// What the store keeps for a request that ended without a response: {"status", "message"}.
QJsonObject failureResult(const QString& status, const QString& message);
/// failureResult() decoded: the evaluation of a request that ended without a response.
EvaluationResult failureEvaluation(const QString& status, const QString& message);

/// Decodes an `evaluate` response or a stored supervisor failure.
EvaluationResult decodeEvaluation(const QJsonObject& response);
/// The body of a `compile` response (`ok_compile`, `log`, `arch`, `ms`, `kernels`, …).
CompileInfo decodeCompile(const QJsonObject& response);
ProfileSettings decodeProfileSettings(const QJsonObject& profile);
/// The value of `traffic` (kTrafficKey), decoded; see TrafficProfile for malformed records.
TrafficProfile decodeTraffic(const QJsonValue& traffic);

} // namespace kwb
