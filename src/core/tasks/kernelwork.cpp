#include "core/tasks/kernelwork.h"

#include "core/protocol/evaluationresult.h"
#include "core/protocol/kernelfacts.h"
#include "core/protocol/kernellaunches.h"

#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kwb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// "conv2d" / "add, relu, mul"; at most four names, then "…".
QString opNames(const AnalyzeResult& a, bool library)
{
    QStringList names;
    for (const TaskOp& op : a.ops) {
        if (!(op.bytes > 0) || isLibraryOp(op) != library)
            continue;
        if (names.size() == 4) {
            names << QStringLiteral("\u2026");
            break;
        }
        names << op.shortName();
    }
    return names.join(QStringLiteral(", "));
}

QString percent(double fraction)
{
    const double p = 100.0 * fraction;
    return p < 10 ? QString::number(p, 'f', 1) + QStringLiteral(" %")
                  : QString::number(qRound(p)) + QStringLiteral(" %");
}

/// Three significant digits with an SI prefix: "4.00 TB/s", "96.7 TFLOP/s", "178 TFLOP/s".
QString rate(double perSecond, const QString& unit)
{
    const char* prefix = "M";
    double v = perSecond / 1e6;
    if (perSecond >= 1e12) {
        prefix = "T";
        v = perSecond / 1e12;
    } else if (perSecond >= 1e9) {
        prefix = "G";
        v = perSecond / 1e9;
    }
    return QString::number(v, 'f', v >= 100 ? 0 : v >= 10 ? 1 : 2) + QLatin1Char(' ') + QLatin1String(prefix) + unit;
}

} // namespace

double KernelWork::intensity() const
{
    return bytes > 0 && flops >= 0 ? flops / bytes : kNaN;
}

double KernelWork::achievedGBps() const
{
    return timeNs > 0 && bytes > 0 ? bytes / timeNs : kNaN; // bytes per ns = GB/s
}

double KernelWork::achievedGflops() const
{
    return timeNs > 0 && flops >= 0 ? flops / timeNs : kNaN;
}

KernelPlacement kernelPlacement(const AnalyzeResult& a, const EvaluationResult& e)
{
    KernelPlacement out;
    if (e.kernels.isEmpty()) {
        out.reason = QStringLiteral("no kernel trace (evaluated without a GPU, or before the trace stage)");
        return out;
    }
    if (a.failed || !a.hasOps || !a.complete()) {
        out.reason = QStringLiteral("the task's analysis does not count all its ops");
        return out;
    }
    QStringList own, library;
    double ownNs = 0, libraryNs = 0;
    for (const KernelLaunch& k : e.kernels) {
        if (k.calls <= 0)
            continue;
        (k.custom ? own : library) << k.name;
        (k.custom ? ownNs : libraryNs) += k.timeNs;
    }
    if (own.isEmpty()) {
        out.reason = QStringLiteral("the candidate launched no kernel of its own");
        return out;
    }
    if (own.size() > 1) {
        out.reason = QStringLiteral("%1 kernels of its own: which ops each did is not known").arg(own.size());
        return out;
    }
    const TrafficModel model = trafficModel(a);
    KernelWork mine;
    mine.label = own.front();
    mine.kernels = own;
    mine.custom = true;
    mine.timeNs = ownNs;
    if (library.isEmpty()) {
        mine.ops = opNames(a, false);
        const QString lib = opNames(a, true);
        if (!lib.isEmpty())
            mine.ops = mine.ops.isEmpty() ? lib : lib + QStringLiteral(", ") + mine.ops;
        mine.flops = model.flops;
        if (const std::optional<double> measured = e.measuredDramBytes()) {
            mine.bytes = *measured;
            mine.basis = IntensityBasis::Measured;
        } else {
            mine.bytes = model.oneKernelBytes;
            mine.basis = IntensityBasis::OneKernel;
        }
        out.kernels << mine;
        return out;
    }
    if (model.libraryOps == 0 || !model.libraryEpilogueBytes) {
        out.reason = QStringLiteral("kernels beside its own, but the task has no library op for them");
        return out;
    }
    if (model.fusedPasses != 1) {
        out.reason = QStringLiteral("the ops around the library ops form %1 passes, its one kernel cannot be "
                                    "matched to them")
                         .arg(model.fusedPasses);
        return out;
    }
    KernelWork lib;
    lib.label = QStringLiteral("library kernels (%1)").arg(library.size());
    lib.kernels = library;
    lib.ops = opNames(a, true);
    lib.timeNs = libraryNs;
    lib.basis = IntensityBasis::LibraryEpilogue;
    for (const TaskOp& op : a.ops)
        if (isLibraryOp(op) && op.bytes > 0) {
            lib.bytes += op.bytes;
            lib.flops += op.flops;
        }
    mine.ops = opNames(a, false);
    mine.basis = IntensityBasis::LibraryEpilogue;
    mine.bytes = *model.libraryEpilogueBytes - lib.bytes;
    mine.flops = std::max(0.0, model.flops - lib.flops);
    if (!(mine.bytes > 0) || !std::isfinite(mine.flops)) {
        out.reason = QStringLiteral("the fused pass moves no bytes by the model");
        return out;
    }
    // Which FLOPs each side did stays the model's split; what each moved is counted, where the
    // profile counted every kernel of both sides on its own (`traffic.per_kernel`).
    const auto measuredBytes = [&e](const QStringList& names) -> std::optional<double> {
        double sum = 0;
        for (const QString& name : names) {
            const KernelTraffic* k = e.traffic && e.traffic->profiled ? e.traffic->kernel(name) : nullptr;
            if (!k)
                return std::nullopt;
            sum += k->bytes();
        }
        return sum > 0 ? std::optional<double>(sum) : std::nullopt;
    };
    const std::optional<double> libMeasured = measuredBytes(library), mineMeasured = measuredBytes(own);
    if (libMeasured && mineMeasured) {
        lib.bytes = *libMeasured;
        mine.bytes = *mineMeasured;
        lib.basis = mine.basis = IntensityBasis::Measured;
    }
    out.kernels << lib << mine;
    return out;
}

QString kernelTrafficText(const KernelTraffic& k)
{
    const auto gb = [](double bytes) { return QString::number(bytes / 1e9, 'g', 3) + QStringLiteral(" GB"); };
    QString text = gb(k.readBytes) + QStringLiteral(" read, ") + gb(k.writeBytes) + QStringLiteral(" written");
    if (k.writtenBackAfterBytes > 0)
        text += QStringLiteral(" + ") + gb(k.writtenBackAfterBytes) + QStringLiteral(" written back after the call");
    return text;
}

QList<KernelTrafficReading> kernelTrafficReadings(const EvaluationResult& e)
{
    QList<KernelTrafficReading> out;
    if (!e.traffic || !e.traffic->profiled)
        return out;
    const RooflinePeaks peaks = rooflinePeaks(e);
    for (const KernelTraffic& k : e.traffic->perKernel) {
        KernelTrafficReading r{k, false, 0, QString()};
        for (const KernelLaunch& l : e.kernels)
            if (l.name == k.name) {
                r.custom = l.custom;
                r.timeNs = l.timeNs;
            }
        QString text = kernelTrafficText(k);
        KernelWork moved; // its bandwidth by the one definition the placed kernels use
        moved.bytes = k.bytes();
        moved.timeNs = r.timeNs;
        if (const double gbps = moved.achievedGBps(); std::isfinite(gbps)) {
            const QString time = r.timeNs >= 1e6 ? QString::number(r.timeNs / 1e6, 'g', 3) + QStringLiteral(" ms")
                                                 : QString::number(r.timeNs / 1e3, 'g', 3) + QStringLiteral(" us");
            text += QStringLiteral(" in %1: %2").arg(time, rate(gbps * 1e9, QStringLiteral("B/s")));
            if (peaks.memoryGBps > 0)
                text += QStringLiteral(", %1 of HBM bandwidth").arg(percent(gbps / peaks.memoryGBps));
        }
        r.text = text + QStringLiteral(" (measured)");
        out << r;
    }
    std::sort(out.begin(), out.end(),
              [](const KernelTrafficReading& a, const KernelTrafficReading& b) { return a.timeNs > b.timeNs; });
    return out;
}

RooflinePeaks rooflinePeaks(const EvaluationResult& e)
{
    const QJsonObject r = e.raw.value(QStringLiteral("roofline")).toObject();
    RooflinePeaks p;
    p.memoryGBps = std::max(0.0, r.value(QStringLiteral("memory_gbps")).toDouble());
    p.computeGflops = std::max(0.0, r.value(QStringLiteral("compute_gflops")).toDouble());
    p.computeKind = r.value(QStringLiteral("compute_kind")).toString();
    const QJsonObject source = r.value(QStringLiteral("ceiling_source")).toObject();
    p.memorySource = source.value(QStringLiteral("memory")).toString();
    p.computeSource = source.value(QStringLiteral("compute")).toString();
    return p;
}

QString achievedText(const KernelWork& w, const RooflinePeaks& peaks)
{
    const double gbps = w.achievedGBps();
    const double gflops = w.achievedGflops();
    if (!(peaks.memoryGBps > 0) || !(peaks.computeGflops > 0) || !std::isfinite(gbps) || !std::isfinite(gflops))
        return QString();
    const Bound bound = boundAt(w.intensity(), ridgeIntensity(peaks.computeGflops, peaks.memoryGBps));
    QString basis = intensityBasisText(w.basis);
    const QString how = w.basis == IntensityBasis::Measured
                            ? QStringLiteral("measured")
                            : basis.left(basis.indexOf(QLatin1String(" ("))) + QStringLiteral(", analytic");
    // The peak says whether the worker had measured it: the chart's roof may be the other one.
    const auto peak = [](double perSecond, const QString& unit, const QString& source) {
        return rate(perSecond, unit) + (source.isEmpty() ? QString() : QLatin1Char(' ') + source);
    };
    if (bound == Bound::Compute)
        return QStringLiteral("compute-bound: %1 of the compute peak (%2 of %3, %4; %5)")
            .arg(percent(gflops / peaks.computeGflops), rate(gflops * 1e9, QStringLiteral("FLOP/s")),
                 peak(peaks.computeGflops * 1e9, QStringLiteral("FLOP/s"), peaks.computeSource),
                 peaks.computeKind.isEmpty() ? QStringLiteral("compute") : peaks.computeKind, how);
    return QStringLiteral("memory-bound: %1 of HBM bandwidth (%2 of %3; %4)")
        .arg(percent(gbps / peaks.memoryGBps), rate(gbps * 1e9, QStringLiteral("B/s")),
             peak(peaks.memoryGBps * 1e9, QStringLiteral("B/s"), peaks.memorySource), how);
}

QString kernelWorkReading(const KernelWork& w, const RooflinePeaks& peaks, const KernelFactsInfo* facts,
                          const KernelLaunchConfig* launch)
{
    QStringList parts;
    if (const QString achieved = achievedText(w, peaks); !achieved.isEmpty())
        parts << achieved;
    if (facts && facts->spillStoreBytes)
        parts << (*facts->spillStoreBytes > 0 ? QStringLiteral("%1 B spilled per thread").arg(*facts->spillStoreBytes)
                                              : QStringLiteral("no spills"));
    if (launch && launch->occupancy && launch->occupancy->error.isEmpty())
        parts << QStringLiteral("%1 occupancy").arg(percent(launch->occupancy->fraction));
    return parts.join(QStringLiteral("; "));
}

} // namespace kwb
