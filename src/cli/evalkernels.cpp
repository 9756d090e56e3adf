#include "evalkernels.h"

#include "core/protocol/evaluationresult.h"

#include <QJsonObject>

#include <cmath>

namespace kwb::cli {

namespace {

/// A library's kernel names run to hundreds of characters of template arguments.
QString shortName(const QString& name)
{
    constexpr int kMax = 60;
    return name.size() <= kMax ? name : name.left(kMax - 1) + QChar(0x2026);
}

const KernelFactsInfo* factsOf(const EvaluationResult& e, const KernelWork& w)
{
    if (!w.custom || !e.compile)
        return nullptr;
    for (const KernelFactsInfo& k : e.compile->kernelFacts)
        if (w.kernels.contains(k.name) || w.kernels.contains(k.demangled))
            return &k;
    return nullptr;
}

const KernelLaunchConfig* launchOf(const EvaluationResult& e, const KernelWork& w)
{
    for (const KernelLaunchConfig& l : e.launches)
        if (w.kernels.contains(l.name))
            return &l; // the longest-running configuration: launches are sorted by time
    return nullptr;
}

} // namespace

void addKernelRows(KeyValueList& table, const EvaluationResult& e, const KernelPlacement& placement)
{
    constexpr int kShown = 8; // a terminal line per configuration, as for the kernel list
    for (qsizetype i = 0; i < e.launches.size() && i < kShown; ++i) {
        const KernelLaunchConfig& l = e.launches.at(i);
        table.add(QStringLiteral("launch"), shortName(l.name) + (l.custom ? QStringLiteral(" (its own)") : QString()) +
                                                QStringLiteral(": ") + launchReading(l));
    }
    if (const qsizetype more = e.launches.size() - kShown + e.launchesOmitted; more > 0)
        table.add(QStringLiteral("launch"), QStringLiteral("\u2026 and %1 more").arg(more));
    if (!e.launches.isEmpty()) {
        const RooflinePeaks peaks = rooflinePeaks(e);
        for (const KernelWork& w : placement.kernels) {
            const QString reading = kernelWorkReading(w, peaks, factsOf(e, w), launchOf(e, w));
            table.add(QStringLiteral("kernel work"),
                      shortName(w.label) + QStringLiteral(" (") + w.ops + QStringLiteral("): ") +
                          (reading.isEmpty() ? QStringLiteral("no peaks to hold it against") : reading));
        }
        if (placement.kernels.isEmpty() && !placement.reason.isEmpty())
            table.add(QStringLiteral("kernel work"), QStringLiteral("not placed per kernel: ") + placement.reason);
    }
    const QList<KernelTrafficReading> traffic = kernelTrafficReadings(e);
    for (qsizetype i = 0; i < traffic.size() && i < kShown; ++i) {
        const KernelTrafficReading& k = traffic.at(i);
        table.add(QStringLiteral("kernel traffic"), shortName(k.traffic.name) +
                                                        (k.custom ? QStringLiteral(" (its own)") : QString()) +
                                                        QStringLiteral(": ") + k.text);
    }
    if (traffic.size() > kShown)
        table.add(QStringLiteral("kernel traffic"), QStringLiteral("\u2026 and %1 more").arg(traffic.size() - kShown));
    if (traffic.isEmpty() && e.traffic && e.traffic->profiled && !e.traffic->perKernelReason.isEmpty())
        table.add(QStringLiteral("kernel traffic"),
                  QStringLiteral("not counted per kernel: ") + e.traffic->perKernelReason);
}

QJsonArray kernelWorkJson(const EvaluationResult& e, const KernelPlacement& placement)
{
    const RooflinePeaks peaks = rooflinePeaks(e);
    QJsonArray out;
    const auto numberOrNull = [](double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null); };
    for (const KernelWork& w : placement.kernels)
        out.append(
            QJsonObject{{QStringLiteral("label"), w.label},
                        {QStringLiteral("kernels"), QJsonArray::fromStringList(w.kernels)},
                        {QStringLiteral("custom"), w.custom},
                        {QStringLiteral("ops"), w.ops},
                        {QStringLiteral("time_ns"), w.timeNs},
                        {QStringLiteral("flops"), w.flops},
                        {QStringLiteral("bytes"), w.bytes},
                        {QStringLiteral("bytes_from"), intensityBasisText(w.basis)},
                        {QStringLiteral("achieved_gbps"), numberOrNull(w.achievedGBps())},
                        {QStringLiteral("achieved_gflops"), numberOrNull(w.achievedGflops())},
                        {QStringLiteral("reading"), kernelWorkReading(w, peaks, factsOf(e, w), launchOf(e, w))}});
    return out;
}

} // namespace kwb::cli
