#include "core/protocol/evaluationresult.h"

#include "core/protocol/defaults.h"
#include "core/protocol/protocoljson.h"

#include <cmath>

namespace kwb {

using namespace protocoljson;

namespace {

TimingStats timingStats(const QJsonObject& t)
{
    TimingStats s;
    s.meanMs = number(t, Key::kMeanMs);
    s.medianMs = number(t, Key::kMedianMs);
    s.stdMs = number(t, Key::kStdMs);
    s.minMs = number(t, Key::kMinMs);
    s.maxMs = number(t, Key::kMaxMs);
    s.trials = integer(t, Field::kTrials);
    return s;
}

TimingInfo timingInfo(const QJsonObject& t)
{
    TimingInfo info;
    if (at(t, Key::kCandidate).isObject())
        info.candidate = timingStats(obj(t, Key::kCandidate));
    if (at(t, Key::kReference).isObject())
        info.reference = timingStats(obj(t, Key::kReference));
    info.method = str(t, Key::kMethod);
    info.stopReason = str(t, Key::kStopReason);
    info.samples = optInt(t, Key::kSamples);
    info.throttled = optInt(t, Key::kThrottled);
    info.referenceReused = integer(t, Key::kReferenceReused);
    const QJsonValue iv = at(t, Key::kSpeedupInterval);
    if (iv.isObject()) {
        const QJsonObject i = iv.toObject();
        const std::optional<double> low = optNumber(i, Key::kLow), high = optNumber(i, Key::kHigh);
        // An unbounded interval (one sample) has no finite high: not an interval to print.
        if (low && high)
            info.interval =
                SpeedupInterval{*low, *high, optNumber(i, Key::kRelativeHalfWidth), integer(i, Key::kSamples)};
    }
    return info;
}

CorrectnessInfo correctness(const QJsonObject& c)
{
    CorrectnessInfo info;
    info.trials = integer(c, Field::kTrials);
    info.passed = integer(c, Key::kPassed);
    info.maxAbsDiff = optNumber(c, Key::kMaxAbsDiff);
    info.maxRelDiff = optNumber(c, Key::kMaxRelDiff);
    info.atol = optNumber(c, Key::kAtol);
    info.rtol = optNumber(c, Key::kRtol);
    info.deterministic = optFlag(c, Key::kDeterministic);
    const QJsonValue failure = at(c, Key::kFailure);
    if (failure.isObject()) {
        const QJsonObject f = failure.toObject();
        info.hasFailure = true;
        const QJsonValue trial = at(f, Key::kTrial);
        info.failureTrial = trial.isString() ? trial.toString() : QString::number(trial.toInt());
        info.failureReason = str(f, Key::kReason);
        info.failureDetail = at(f, Key::kDetail);
    }
    const QJsonValue range = at(c, Key::kRangeTrial);
    if (range.isObject()) {
        const QJsonObject r = range.toObject();
        RangeTrialInfo rt;
        rt.generator = str(r, Key::kGenerator);
        rt.atol = optNumber(r, Key::kAtol);
        rt.rtol = optNumber(r, Key::kRtol);
        rt.maxAbsDiff = optNumber(r, Key::kMaxAbsDiff);
        rt.passed = optFlag(r, Key::kPassed);
        info.rangeTrial = rt;
    }
    return info;
}

} // namespace

CompileInfo decodeCompile(const QJsonObject& c)
{
    CompileInfo info;
    // An evaluate response says `ok`; a compile response says `ok_compile` (its `ok` is the
    // request's).
    const QJsonValue ok = at(c, Key::kOkCompile).isBool() ? at(c, Key::kOkCompile) : at(c, Key::kOk);
    info.okKnown = ok.isBool();
    info.ok = ok.toBool();
    info.log = str(c, Key::kLog);
    info.ms = optNumber(c, Key::kMs);
    info.arch = str(c, Field::kArch);
    info.kernels = strings(c, Key::kKernels);
    info.cached = flag(c, Key::kCached);
    info.sourceHash = str(c, Key::kSourceHash);
    info.cubinB64 = str(c, Field::kCubinB64);
    const QJsonObject refused = obj(c, Key::kRefused);
    info.refusedCode = str(refused, Key::kCode);
    info.refusedMessage = str(refused, Key::kMessage);
    info.kernelFacts = decodeKernelFacts(c, &info.kernelFactsNote);
    return info;
}

ProfileSettings decodeProfileSettings(const QJsonObject& p)
{
    ProfileSettings s;
    s.raw = p;
    s.name = str(p, Key::kName);
    s.atol = optNumber(p, Key::kAtol);
    s.rtol = optNumber(p, Key::kRtol);
    s.tf32 = optFlag(p, Field::kTf32);
    s.l2Flush = optFlag(p, Key::kL2Flush);
    s.graphOptimize = optFlag(p, Key::kGraphOptimize);
    s.inputGenerator = str(p, Key::kInputGenerator);
    s.timingStat = str(p, Key::kTimingStat);
    s.timingTrials = optInt(p, Field::kTimingTrials);
    s.warmup = optInt(p, Field::kWarmup);
    s.correctnessTrials = optInt(p, Field::kCorrectnessTrials);
    return s;
}

/// `traffic.per_kernel` into `t`; a malformed record leaves no kernels and says why, without
/// touching the whole call's profile.
void decodePerKernelTraffic(const QJsonObject& o, TrafficProfile& t)
{
    const auto malformed = [&t](const QString& why) {
        t.perKernel.clear();
        t.perKernelReason = QStringLiteral("malformed per-kernel traffic record (%1)").arg(why);
    };
    static const QStringList kKeys{QLatin1String(Key::kProfiled), QLatin1String(Key::kReason),
                                   QLatin1String(Key::kMethod),   QLatin1String(Key::kReplay),
                                   QLatin1String(Key::kPasses),   QLatin1String(Key::kKernels)};
    for (auto it = o.begin(); it != o.end(); ++it)
        if (!kKeys.contains(it.key()))
            return malformed(QStringLiteral("unknown key \"%1\"").arg(it.key()));
    if (!flag(o, Key::kProfiled)) {
        t.perKernelReason = str(o, Key::kReason);
        if (t.perKernelReason.isEmpty())
            t.perKernelReason = QStringLiteral("no reason given");
        return;
    }
    t.perKernelReplay = str(o, Key::kReplay);
    const QJsonValue kernels = o.value(QLatin1String(Key::kKernels));
    if (!kernels.isArray() || kernels.toArray().isEmpty())
        return malformed(QStringLiteral("profiled without kernels"));
    static const QStringList kKernelKeys{QLatin1String(Key::kName), QLatin1String(Key::kCalls),
                                         QLatin1String(Key::kDramReadBytes), QLatin1String(Key::kDramWriteBytes),
                                         QLatin1String(Key::kWrittenBackAfterBytes)};
    for (const QJsonValue& v : kernels.toArray()) {
        const QJsonObject k = v.toObject();
        for (auto it = k.begin(); it != k.end(); ++it)
            if (!kKernelKeys.contains(it.key()))
                return malformed(QStringLiteral("unknown kernel key \"%1\"").arg(it.key()));
        KernelTraffic kt;
        kt.name = str(k, Key::kName);
        kt.calls = optInt(k, Key::kCalls).value_or(0);
        const std::optional<double> read = optNumber(k, Key::kDramReadBytes);
        const std::optional<double> write = optNumber(k, Key::kDramWriteBytes);
        const std::optional<double> after = optNumber(k, Key::kWrittenBackAfterBytes);
        const auto bytes = [](const std::optional<double>& b) { return b && std::isfinite(*b) && *b >= 0; };
        if (kt.name.isEmpty() || kt.calls <= 0 || !bytes(read) || !bytes(write) ||
            (k.contains(QLatin1String(Key::kWrittenBackAfterBytes)) && !bytes(after)))
            return malformed(QStringLiteral("a kernel without a name, calls or byte counts"));
        if (t.kernel(kt.name))
            return malformed(QStringLiteral("kernel \"%1\" twice").arg(kt.name));
        kt.readBytes = *read;
        kt.writeBytes = *write;
        kt.writtenBackAfterBytes = after.value_or(0);
        t.perKernel << kt;
    }
}

TrafficProfile decodeTraffic(const QJsonValue& value)
{
    TrafficProfile t;
    if (!value.isObject()) {
        t.reason = QStringLiteral("malformed traffic record (not an object)");
        return t;
    }
    const QJsonObject o = value.toObject();
    // The record's whole vocabulary: a misspelt key would otherwise read as a missing number.
    static const QStringList kKeys{QLatin1String(Key::kProfiled),      QLatin1String(Key::kDramBytes),
                                   QLatin1String(Key::kDramReadBytes), QLatin1String(Key::kDramWriteBytes),
                                   QLatin1String(Key::kKernels),       QLatin1String(Key::kPasses),
                                   QLatin1String(Key::kMethod),        QLatin1String(Key::kL2),
                                   QLatin1String(Key::kReason),        QLatin1String(Key::kPerKernel)};
    for (auto it = o.begin(); it != o.end(); ++it)
        if (!kKeys.contains(it.key())) {
            t.reason = QStringLiteral("malformed traffic record (unknown key \"%1\")").arg(it.key());
            return t;
        }
    t.reason = str(o, Key::kReason);
    t.method = str(o, Key::kMethod);
    t.readBytes = optNumber(o, Key::kDramReadBytes);
    t.writeBytes = optNumber(o, Key::kDramWriteBytes);
    t.kernels = optInt(o, Key::kKernels);
    t.passes = optInt(o, Key::kPasses);
    if (!flag(o, Key::kProfiled))
        return t;
    const double bytes = positive(at(o, Key::kDramBytes));
    if (!(bytes > 0)) {
        t.reason = QStringLiteral("malformed traffic record (profiled without positive dram_bytes)");
        return t;
    }
    t.profiled = true;
    t.dramBytes = bytes;
    const QJsonValue perKernel = o.value(QLatin1String(Key::kPerKernel));
    if (perKernel.isObject())
        decodePerKernelTraffic(perKernel.toObject(), t);
    else if (!perKernel.isUndefined())
        t.perKernelReason = QStringLiteral("malformed per-kernel traffic record (not an object)");
    return t;
}

QString formatTraffic(const std::optional<TrafficProfile>& traffic)
{
    if (!traffic)
        return {};
    if (!traffic->profiled)
        return QStringLiteral("not profiled: %1")
            .arg(traffic->reason.isEmpty() ? QStringLiteral("no reason given") : traffic->reason);
    QString text = QStringLiteral("measured %1 GB of HBM traffic").arg(traffic->dramBytes / 1e9, 0, 'g', 3);
    if (traffic->kernels)
        text += *traffic->kernels == 1 ? QStringLiteral(" (1 kernel)")
                                       : QStringLiteral(" (%1 kernels)").arg(*traffic->kernels);
    return text;
}

int speedupDecimals(const SpeedupInterval& interval, int decimals)
{
    // The fewest decimals, from `decimals` to 4, at which the two ends differ: a tight interval
    // printed at two ("1.07–1.07") would read as having no width, the fault of "0–0" at 100 %.
    int d = std::max(0, decimals);
    const auto text = [](double v, int n) { return QString::number(v, 'f', n); };
    while (d < 4 && std::isfinite(interval.low) && std::isfinite(interval.high) &&
           text(interval.low, d) == text(interval.high, d))
        ++d;
    return d;
}

QString formatSpeedupInterval(const SpeedupInterval& interval, int decimals)
{
    const int d = speedupDecimals(interval, decimals);
    const auto end = [d](double v) {
        if (std::isfinite(v))
            return QString::number(v, 'f', d);
        return v > 0 ? QStringLiteral("\u221E") : QStringLiteral("\u2212\u221E");
    };
    return end(interval.low) + QChar(0x2013) + end(interval.high);
}

QString formatSpeedup(double speedup, const std::optional<SpeedupInterval>& interval, int decimals)
{
    if (std::isnan(speedup))
        return {};
    const int d = interval ? speedupDecimals(*interval, decimals) : decimals;
    QString text = QString::number(speedup, 'f', d) + QChar(0x00D7);
    if (interval)
        text += QStringLiteral(" [") + formatSpeedupInterval(*interval, decimals) + QLatin1Char(']');
    return text;
}

QString formatSpeedup(const EvaluationResult& evaluation, int decimals)
{
    return evaluation.speedup ? formatSpeedup(*evaluation.speedup, evaluation.timing.interval, decimals) : QString();
}

QString formatTimingMethod(const TimingInfo& t)
{
    if (t.method.isEmpty())
        return {};
    if (t.method == QLatin1String("fixed"))
        return QStringLiteral("fixed: %1 trials each").arg(t.candidate ? t.candidate->trials : 0) +
               (t.throttled.value_or(0) ? QStringLiteral(" (%1 throttled, kept)").arg(*t.throttled) : QString());
    QString text =
        t.method + QStringLiteral(": ") + t.stopReason + QStringLiteral(" after %1 pairs").arg(t.samples.value_or(0));
    if (t.throttled.value_or(0))
        text += QStringLiteral(" (%1 throttled, dropped)").arg(*t.throttled);
    if (t.referenceReused)
        text += QStringLiteral(", %1 cached reference samples").arg(t.referenceReused);
    return text;
}

QJsonObject failureResult(const QString& status, const QString& message)
{
    return QJsonObject{{QLatin1String(Key::kStatus), status}, {QLatin1String(Key::kMessage), message}};
}

EvaluationResult failureEvaluation(const QString& status, const QString& message)
{
    return decodeEvaluation(failureResult(status, message));
}

EvaluationResult decodeEvaluation(const QJsonObject& r)
{
    EvaluationResult e;
    e.raw = r;
    // A stored supervisor failure has no `ok`; an evaluate response always has one.
    e.ok = flag(r, Key::kOk, true);
    const QJsonObject error = obj(r, Key::kError);
    e.errorCode = str(error, Key::kCode);
    e.errorMessage = str(error, Key::kMessage);

    e.statusName = str(r, Key::kStatus);
    e.status = evaluationStatusFromWire(e.statusName);
    e.stage = str(r, Key::kStage);
    e.message = str(r, Key::kMessage);
    e.log = str(r, Key::kLog);

    const QJsonValue format = at(r, Key::kFormatError);
    if (format.isObject()) {
        const QJsonObject f = format.toObject();
        e.formatError = FormatErrorInfo{str(f, Key::kCode), str(f, Key::kMessage), integer(f, Key::kLine)};
    }
    if (at(r, Key::kCompile).isObject())
        e.compile = decodeCompile(obj(r, Key::kCompile));
    if (at(r, Key::kCorrectness).isObject())
        e.correctness = correctness(obj(r, Key::kCorrectness));
    e.timing = timingInfo(obj(r, Key::kTiming));
    e.speedup = optNumber(r, Key::kSpeedup);
    for (const QJsonValue& v : arr(r, Key::kKernels)) {
        const QJsonObject k = v.toObject();
        e.kernels.append(
            KernelLaunch{str(k, Key::kName), integer(k, Key::kCalls), number(k, Key::kTimeNs), flag(k, Key::kCustom)});
    }
    e.launches = decodeKernelLaunches(r, &e.launchesOmitted);
    e.customLaunches = optInt(r, Key::kCustomLaunches);
    e.torchOnly = flag(r, Key::kTorchOnly);
    e.answerFormat = str(r, Field::kAnswerFormat);
    const QJsonValue degenerate = at(r, Key::kDegenerate);
    if (degenerate.isObject()) {
        const QJsonObject d = degenerate.toObject();
        e.degenerate = DegenerateInfo{str(d, Key::kKind), optNumber(d, Key::kZeroFraction), str(d, Key::kMessage)};
    }
    for (const QJsonValue& v : arr(r, Key::kNotes)) {
        const QJsonObject n = v.toObject();
        if (!str(n, Key::kCode).isEmpty() || !str(n, Key::kMessage).isEmpty())
            e.notes.append(EvaluationNote{str(n, Key::kCode), str(n, Key::kMessage), integer(n, Key::kLine)});
    }
    if (at(r, Field::kProfile).isObject())
        e.profile = decodeProfileSettings(obj(r, Field::kProfile));
    const QJsonObject stages = obj(r, Key::kStageMs);
    for (auto it = stages.begin(); it != stages.end(); ++it)
        if (const std::optional<double> ms = optNumber(it.value()))
            e.stageMs.insert(it.key(), *ms);
    e.workerHealthy = at(r, Key::kWorkerHealthy) != QJsonValue(false);
    if (at(r, Key::kGpuMemory).isObject()) {
        const QJsonObject m = obj(r, Key::kGpuMemory);
        e.gpuFreeBytes = optNumber(m, Key::kFreeBytes);
        e.gpuTotalBytes = optNumber(m, Key::kTotalBytes);
        e.gpuReleasedBytes = optNumber(m, Key::kReleasedBytes);
        if (at(m, Key::kOutOfMemory).isObject()) {
            const QJsonObject o = obj(m, Key::kOutOfMemory);
            e.gpuOutOfMemory = AllocatorOutOfMemoryReport{integer(o, Key::kCount), number(o, Key::kRequestedBytes),
                                                          number(o, Key::kFreeBytes), number(o, Key::kTotalBytes),
                                                          str(o, Key::kPciBusId)};
        }
    }
    e.referenceOutputsOn = str(r, Key::kReferenceOutputsOn);
    if (at(r, Key::kCandidate).isObject()) {
        const QJsonObject c = obj(r, Key::kCandidate);
        e.candidate = CandidateEcho{str(c, Field::kCuda),     str(c, Field::kPython),     strings(c, Key::kKernels),
                                    str(c, Key::kSourceHash), integer(c, Key::kCudaLine), integer(c, Key::kPythonLine)};
    }
    if (r.contains(QLatin1String(kTrafficKey)))
        e.traffic = decodeTraffic(at(r, kTrafficKey));
    e.flags = strings(r, Key::kFlags);
    return e;
}

bool EvaluationResult::isKernelBenchFormat() const
{
    return answerFormat == QLatin1String(defaults::kAnswerFormatKernelBench);
}

bool EvaluationResult::compiled() const
{
    // A status past the compile stage says so; otherwise (timeout, crashed) `compile.ok` does.
    return statusCompiled(status) || (compile && compile->ok);
}

std::optional<double> EvaluationResult::positiveSpeedup() const
{
    return speedup && *speedup > 0 ? speedup : std::nullopt;
}

std::optional<SpeedupInterval> EvaluationResult::trustedSpeedupInterval() const
{
    return trustedSpeedup() ? timing.interval : std::nullopt;
}

std::optional<double> EvaluationResult::trustedSpeedup() const
{
    return belowRooflineFloor() ? std::nullopt : positiveSpeedup();
}

} // namespace kwb
