#include "core/protocol/evaluationresult.h"

#include "core/protocol/protocoljson.h"

#include <cmath>

namespace kwb {

using namespace protocoljson;

namespace {

TimingStats timingStats(const QJsonObject& t)
{
    TimingStats s;
    s.meanMs = number(t, "mean_ms");
    s.medianMs = number(t, "median_ms");
    s.stdMs = number(t, "std_ms");
    s.minMs = number(t, "min_ms");
    s.maxMs = number(t, "max_ms");
    s.trials = integer(t, "trials");
    return s;
}

TimingInfo timingInfo(const QJsonObject& t)
{
    TimingInfo info;
    if (at(t, "candidate").isObject())
        info.candidate = timingStats(obj(t, "candidate"));
    if (at(t, "reference").isObject())
        info.reference = timingStats(obj(t, "reference"));
    info.method = str(t, "method");
    info.stopReason = str(t, "stop_reason");
    info.samples = optInt(t, "samples");
    info.throttled = optInt(t, "throttled");
    info.referenceReused = integer(t, "reference_reused");
    const QJsonValue iv = at(t, "speedup_interval");
    if (iv.isObject()) {
        const QJsonObject i = iv.toObject();
        const std::optional<double> low = optNumber(i, "low"), high = optNumber(i, "high");
        // An unbounded interval (one sample) has no finite high: not an interval to print.
        if (low && high)
            info.interval = SpeedupInterval{*low, *high, optNumber(i, "relative_half_width"), integer(i, "samples")};
    }
    return info;
}

CorrectnessInfo correctness(const QJsonObject& c)
{
    CorrectnessInfo info;
    info.trials = integer(c, "trials");
    info.passed = integer(c, "passed");
    info.maxAbsDiff = optNumber(c, "max_abs_diff");
    info.maxRelDiff = optNumber(c, "max_rel_diff");
    info.atol = optNumber(c, "atol");
    info.rtol = optNumber(c, "rtol");
    info.deterministic = optFlag(c, "deterministic");
    const QJsonValue failure = at(c, "failure");
    if (failure.isObject()) {
        const QJsonObject f = failure.toObject();
        info.hasFailure = true;
        const QJsonValue trial = at(f, "trial");
        info.failureTrial = trial.isString() ? trial.toString() : QString::number(trial.toInt());
        info.failureReason = str(f, "reason");
        info.failureDetail = at(f, "detail");
    }
    const QJsonValue range = at(c, "range_trial");
    if (range.isObject()) {
        const QJsonObject r = range.toObject();
        RangeTrialInfo rt;
        rt.generator = str(r, "generator");
        rt.atol = optNumber(r, "atol");
        rt.rtol = optNumber(r, "rtol");
        rt.maxAbsDiff = optNumber(r, "max_abs_diff");
        rt.passed = optFlag(r, "passed");
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
    const QJsonValue ok = at(c, "ok_compile").isBool() ? at(c, "ok_compile") : at(c, "ok");
    info.okKnown = ok.isBool();
    info.ok = ok.toBool();
    info.log = str(c, "log");
    info.ms = optNumber(c, "ms");
    info.arch = str(c, "arch");
    info.kernels = strings(c, "kernels");
    info.cached = flag(c, "cached");
    info.sourceHash = str(c, "source_hash");
    info.cubinB64 = str(c, "cubin_b64");
    const QJsonObject refused = obj(c, "refused");
    info.refusedCode = str(refused, "code");
    info.refusedMessage = str(refused, "message");
    return info;
}

ProfileSettings decodeProfileSettings(const QJsonObject& p)
{
    ProfileSettings s;
    s.raw = p;
    s.name = str(p, "name");
    s.atol = optNumber(p, "atol");
    s.rtol = optNumber(p, "rtol");
    s.tf32 = optFlag(p, "tf32");
    s.l2Flush = optFlag(p, "l2_flush");
    s.graphOptimize = optFlag(p, "graph_optimize");
    s.inputGenerator = str(p, "input_generator");
    s.timingStat = str(p, "timing_stat");
    s.timingTrials = optInt(p, "timing_trials");
    s.warmup = optInt(p, "warmup");
    s.correctnessTrials = optInt(p, "correctness_trials");
    return s;
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
    static const QStringList kKeys{QStringLiteral("profiled"),         QStringLiteral("dram_bytes"),
                                   QStringLiteral("dram_read_bytes"),  QStringLiteral("dram_write_bytes"),
                                   QStringLiteral("kernels"),          QStringLiteral("passes"),
                                   QStringLiteral("method"),           QStringLiteral("l2"),
                                   QStringLiteral("reason")};
    for (auto it = o.begin(); it != o.end(); ++it)
        if (!kKeys.contains(it.key())) {
            t.reason = QStringLiteral("malformed traffic record (unknown key \"%1\")").arg(it.key());
            return t;
        }
    t.reason = str(o, "reason");
    t.method = str(o, "method");
    t.readBytes = optNumber(o, "dram_read_bytes");
    t.writeBytes = optNumber(o, "dram_write_bytes");
    t.kernels = optInt(o, "kernels");
    t.passes = optInt(o, "passes");
    if (!flag(o, "profiled"))
        return t;
    const double bytes = positive(at(o, "dram_bytes"));
    if (!(bytes > 0)) {
        t.reason = QStringLiteral("malformed traffic record (profiled without positive dram_bytes)");
        return t;
    }
    t.profiled = true;
    t.dramBytes = bytes;
    return t;
}

QString formatTraffic(const std::optional<TrafficProfile>& traffic)
{
    if (!traffic)
        return {};
    if (!traffic->profiled)
        return QStringLiteral("not profiled: %1").arg(traffic->reason.isEmpty() ? QStringLiteral("no reason given") : traffic->reason);
    QString text = QStringLiteral("measured %1 GB of HBM traffic").arg(traffic->dramBytes / 1e9, 0, 'g', 3);
    if (traffic->kernels)
        text += *traffic->kernels == 1 ? QStringLiteral(" (1 kernel)") : QStringLiteral(" (%1 kernels)").arg(*traffic->kernels);
    return text;
}

int speedupDecimals(const SpeedupInterval& interval, int decimals)
{
    // The fewest decimals, from `decimals` to 4, at which the two ends differ: a tight interval
    // printed at two ("1.07–1.07") would read as having no width, the fault of "0–0" at 100 %.
    int d = std::max(0, decimals);
    const auto text = [](double v, int n) { return QString::number(v, 'f', n); };
    while (d < 4 && std::isfinite(interval.low) && std::isfinite(interval.high) && text(interval.low, d) == text(interval.high, d))
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
    QString text = t.method + QStringLiteral(": ") + t.stopReason + QStringLiteral(" after %1 pairs").arg(t.samples.value_or(0));
    if (t.throttled.value_or(0))
        text += QStringLiteral(" (%1 throttled, dropped)").arg(*t.throttled);
    if (t.referenceReused)
        text += QStringLiteral(", %1 cached reference samples").arg(t.referenceReused);
    return text;
}

QJsonObject failureResult(const QString& status, const QString& message)
{
    return QJsonObject{{QStringLiteral("status"), status}, {QStringLiteral("message"), message}};
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
    e.ok = flag(r, "ok", true);
    const QJsonObject error = obj(r, "error");
    e.errorCode = str(error, "code");
    e.errorMessage = str(error, "message");

    e.statusName = str(r, "status");
    e.status = evaluationStatusFromWire(e.statusName);
    e.stage = str(r, "stage");
    e.message = str(r, "message");
    e.log = str(r, "log");

    const QJsonValue format = at(r, "format_error");
    if (format.isObject()) {
        const QJsonObject f = format.toObject();
        e.formatError = FormatErrorInfo{str(f, "code"), str(f, "message"), integer(f, "line")};
    }
    if (at(r, "compile").isObject())
        e.compile = decodeCompile(obj(r, "compile"));
    if (at(r, "correctness").isObject())
        e.correctness = correctness(obj(r, "correctness"));
    e.timing = timingInfo(obj(r, "timing"));
    e.speedup = optNumber(r, "speedup");
    for (const QJsonValue& v : arr(r, "kernels")) {
        const QJsonObject k = v.toObject();
        e.kernels.append(KernelLaunch{str(k, "name"), integer(k, "calls"), number(k, "time_ns"), flag(k, "custom")});
    }
    e.customLaunches = optInt(r, "custom_launches");
    e.torchOnly = flag(r, "torch_only");
    const QJsonValue degenerate = at(r, "degenerate");
    if (degenerate.isObject()) {
        const QJsonObject d = degenerate.toObject();
        e.degenerate = DegenerateInfo{str(d, "kind"), optNumber(d, "zero_fraction"), str(d, "message")};
    }
    if (at(r, "profile").isObject())
        e.profile = decodeProfileSettings(obj(r, "profile"));
    const QJsonObject stages = obj(r, "stage_ms");
    for (auto it = stages.begin(); it != stages.end(); ++it)
        if (const std::optional<double> ms = optNumber(it.value()))
            e.stageMs.insert(it.key(), *ms);
    e.workerHealthy = at(r, "worker_healthy") != QJsonValue(false);
    if (at(r, "gpu_memory").isObject()) {
        const QJsonObject m = obj(r, "gpu_memory");
        e.gpuFreeBytes = optNumber(m, "free_bytes");
        e.gpuTotalBytes = optNumber(m, "total_bytes");
    }
    e.referenceOutputsOn = str(r, "reference_outputs_on");
    if (at(r, "candidate").isObject()) {
        const QJsonObject c = obj(r, "candidate");
        e.candidate = CandidateEcho{str(c, "cuda"), str(c, "python"), strings(c, "kernels"), str(c, "source_hash"),
                                    integer(c, "cuda_line"), integer(c, "python_line")};
    }
    if (r.contains(QLatin1String(kTrafficKey)))
        e.traffic = decodeTraffic(at(r, kTrafficKey));
    e.flags = strings(r, "flags");
    return e;
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
