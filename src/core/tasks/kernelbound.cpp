#include "core/tasks/kernelbound.h"

#include "core/protocol/evaluationresult.h"

#include <QJsonObject>

#include <cmath>
#include <limits>

namespace kwb {

namespace {

bool positive(double v)
{
    return std::isfinite(v) && v > 0;
}

double elementsOf(const QList<qint64>& shape)
{
    double n = 1.0;
    for (qint64 d : shape)
        n *= static_cast<double>(d);
    return n;
}

/// An op's bytes split into its inputs (one entry each) and its outputs, at the element size
/// analyze used (its bytes over its elements).
struct OpTensors
{
    QList<double> inputElements;
    double outputElements = 0;
    double elementBytes = 0;
};

OpTensors tensorsOf(const TaskOp& op)
{
    OpTensors t;
    double total = 0;
    for (const QList<qint64>& in : op.inputs) {
        t.inputElements.append(elementsOf(in));
        total += t.inputElements.last();
    }
    t.outputElements = op.output.isEmpty() ? 0.0 : elementsOf(op.output) * std::max(1, op.outputCount);
    total += t.outputElements;
    t.elementBytes = total > 0 ? op.bytes / total : 0.0;
    return t;
}

} // namespace

QString intensityBasisText(IntensityBasis basis)
{
    switch (basis) {
    case IntensityBasis::EagerUnfused: return QStringLiteral("eager, op by op (analytic)");
    case IntensityBasis::LibraryEpilogue: return QStringLiteral("library op + fused epilogue (analytic)");
    case IntensityBasis::OneKernel: return QStringLiteral("one kernel (analytic)");
    case IntensityBasis::Measured: return QStringLiteral("measured HBM traffic");
    }
    return QString();
}

double ridgeIntensity(double computeGflops, double bandwidthGBps)
{
    return positive(computeGflops) && positive(bandwidthGBps) ? computeGflops / bandwidthGBps
                                                              : std::numeric_limits<double>::quiet_NaN();
}

Bound boundAt(double intensity, double ridge)
{
    // 0 FLOP/B (a copy, a pure data-movement task) is as memory-bound as it gets.
    if (!std::isfinite(intensity) || intensity < 0 || !positive(ridge))
        return Bound::Unknown;
    return intensity < ridge ? Bound::Memory : Bound::Compute;
}

Bound taskBound(const AnalyzeResult& analysis, double ridge)
{
    return boundAt(trafficModel(analysis).intensity(IntensityBasis::OneKernel), ridge);
}

QString boundText(Bound bound)
{
    switch (bound) {
    case Bound::Memory: return QStringLiteral("memory-bound");
    case Bound::Compute: return QStringLiteral("compute-bound");
    case Bound::Unknown: break;
    }
    return QStringLiteral("unknown");
}

QString flopPerByteText(double intensity)
{
    return QString::number(intensity, 'f', intensity < 10 ? 2 : 1) + QStringLiteral(" FLOP/B");
}

QString boundSentence(double intensity, IntensityBasis basis, double ridge)
{
    const Bound bound = boundAt(intensity, ridge);
    QString basisName = intensityBasisText(basis);
    basisName = basisName.left(basisName.indexOf(QLatin1String(" ("))); // "one kernel"
    if (bound == Bound::Unknown)
        return std::isfinite(intensity) && intensity >= 0
                   ? QStringLiteral("unknown: %1 (%2), no ridge point known").arg(flopPerByteText(intensity), basisName)
                   : QStringLiteral("unknown: no intensity");
    return QStringLiteral("%1: %2 (%3) is %4 the ridge point, %5")
        .arg(boundText(bound), flopPerByteText(intensity), basisName,
             bound == Bound::Memory ? QStringLiteral("below") : QStringLiteral("at or above"), flopPerByteText(ridge));
}

QString taskBoundSentence(const AnalyzeResult& analysis, double ridge)
{
    return boundSentence(trafficModel(analysis).intensity(IntensityBasis::OneKernel), IntensityBasis::OneKernel, ridge);
}

bool isLibraryOp(const TaskOp& op)
{
    return op.category == QLatin1String("matmul") || op.category == QLatin1String("conv");
}

double TrafficModel::bytes(IntensityBasis basis) const
{
    switch (basis) {
    case IntensityBasis::EagerUnfused: return unfusedBytes;
    case IntensityBasis::LibraryEpilogue: return libraryEpilogueBytes.value_or(0.0);
    case IntensityBasis::OneKernel: return oneKernelBytes;
    case IntensityBasis::Measured: break;
    }
    return 0.0;
}

double TrafficModel::intensity(IntensityBasis basis) const
{
    const double b = bytes(basis);
    return positive(b) && flops >= 0 ? flops / b : std::numeric_limits<double>::quiet_NaN();
}

TrafficModel trafficModel(const AnalyzeResult& a)
{
    TrafficModel m;
    m.flops = a.flops;
    m.oneKernelBytes = a.bytesFused;
    double sum = 0;
    for (const TaskOp& op : a.ops)
        sum += op.bytes;
    m.unfusedBytes = a.hasBytesUnfused ? a.bytesUnfused : sum;
    if (!(m.flops > 0)) {
        double f = 0;
        for (const TaskOp& op : a.ops)
            f += op.flops;
        m.flops = f;
    }
    // Totals that leave uncounted ops out are a lower bound, no intensity: every model's is NaN, so
    // the task has no bound and no roofline point (docs/roofline.md).
    if (!a.complete())
        m.flops = std::numeric_limits<double>::quiet_NaN();

    double total = 0;
    bool inPass = false;
    double passOutputElements = 0; // of the last op of the current pass
    double passOutputBytes = 0;
    auto closePass = [&] {
        if (inPass)
            total += passOutputBytes;
        inPass = false;
    };
    for (const TaskOp& op : a.ops) {
        if (!(op.bytes > 0))
            continue; // a view: no traffic, and no break in a pass
        if (isLibraryOp(op)) {
            closePass();
            total += op.bytes;
            ++m.libraryOps;
            continue;
        }
        const OpTensors t = tensorsOf(op);
        double reads = 0;
        bool chainedTaken = !inPass; // the first op of a pass reads every input from HBM
        for (double e : t.inputElements) {
            if (!chainedTaken && e == passOutputElements) {
                chainedTaken = true; // the previous op's output, still in registers
                continue;
            }
            reads += e * t.elementBytes;
        }
        if (!inPass)
            ++m.fusedPasses;
        inPass = true;
        total += reads;
        passOutputElements = t.outputElements;
        passOutputBytes = t.outputElements * t.elementBytes;
    }
    closePass();
    if (m.libraryOps > 0)
        m.libraryEpilogueBytes = total;
    return m;
}

IntensityBasis candidateBasis(const EvaluationResult& e)
{
    if (e.customLaunches.value_or(0) <= 0)
        return IntensityBasis::EagerUnfused;
    for (const KernelLaunch& k : e.kernels)
        if (!k.custom && k.calls > 0)
            return IntensityBasis::LibraryEpilogue;
    return IntensityBasis::OneKernel;
}

std::optional<double> rooflineBoundFraction(const EvaluationResult& e)
{
    if (!e.countsAsCorrect())
        return std::nullopt;
    const QJsonObject r = e.raw.value(QStringLiteral("roofline")).toObject();
    const double floorMs = r.value(QStringLiteral("floor_ms")).toDouble();
    double measuredMs = r.value(QStringLiteral("candidate_ms")).toDouble();
    if (!(measuredMs > 0) && e.timing.candidate)
        measuredMs = e.timing.candidate->meanMs;
    if (!(floorMs > 0) || !(measuredMs > 0) || !std::isfinite(floorMs) || !std::isfinite(measuredMs))
        return std::nullopt;
    return floorMs / measuredMs;
}

QString boundFractionText(double fraction)
{
    if (!std::isfinite(fraction))
        return QString();
    // One decimal under 10 % (4.0 and 4.1 print alike), two digits under 1 %.
    const double pct = 100.0 * fraction;
    return QStringLiteral("%1 % of bound")
        .arg(pct < 1    ? QString::number(pct, 'g', 2)
             : pct < 10 ? QString::number(pct, 'f', 1)
                        : QString::number(qRound(pct)));
}

QString notCountedReason(const EvaluationResult& e)
{
    if (!e.isCorrect() || e.countsAsCorrect())
        return QString();
    if (!e.belowRooflineFloor())
        return QStringLiteral("flagged %1").arg(e.flags.join(QStringLiteral(", ")));
    // The evaluation's `roofline` object (docs/protocol.md §evaluate) carries both numbers.
    const QJsonObject r = e.raw.value(QStringLiteral("roofline")).toObject();
    const double floorMs = r.value(QStringLiteral("floor_ms")).toDouble();
    double measuredMs = r.value(QStringLiteral("candidate_ms")).toDouble();
    if (!(measuredMs > 0) && e.timing.candidate)
        measuredMs = e.timing.candidate->meanMs;
    const double margin = r.value(QStringLiteral("margin")).toDouble();
    if (!(floorMs > 0))
        return QStringLiteral("its time is below the roofline floor on this GPU (below_roofline_floor): physically "
                              "impossible for code that does the work");
    return QStringLiteral("measured %1 ms is below the roofline floor %2 ms (less the %3 % margin for ceiling "
                          "error) on this GPU: physically impossible for code that does the work")
        .arg(QString::number(measuredMs, 'g', 3), QString::number(floorMs, 'g', 3),
             QString::number(100.0 * margin, 'g', 3));
}

} // namespace kwb
