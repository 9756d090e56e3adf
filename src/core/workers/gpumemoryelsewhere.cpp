#include "core/workers/gpumemoryelsewhere.h"

#include "core/workers/hostlimits.h"

#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>

#include <algorithm>

namespace kwb {

namespace {

/// nvidia-smi's -i takes NVML's form of a bus id, an eight-digit domain ("00000000:19:00.0");
/// CUDA's cudaDeviceGetPCIBusId writes four ("0000:19:00.0").
QString nvmlBusId(const QString& cudaBusId)
{
    static const QRegularExpression form(
        QStringLiteral("^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\\.([0-7])$"));
    const QRegularExpressionMatch m = form.match(cudaBusId.trimmed());
    if (!m.hasMatch())
        return {};
    return QStringLiteral("%1:%2:%3.%4")
        .arg(m.captured(1).rightJustified(8, QLatin1Char('0')), m.captured(2), m.captured(3), m.captured(4))
        .toUpper();
}

} // namespace

QString formatGiB(double bytes)
{
    return QStringLiteral("%1 GiB").arg(bytes / double(1LL << 30), 0, 'f', 2);
}

QString summarizeMemoryElsewhere(const MemoryElsewhere& elsewhere)
{
    if (!elsewhere.known)
        return QStringLiteral("unknown: ") + elsewhere.why;
    if (elsewhere.holders.isEmpty())
        return QStringLiteral("none");
    if (elsewhere.holders.size() == 1)
        return elsewhere.holders.first();
    return formatGiB(elsewhere.bytes) + QStringLiteral(" (") + elsewhere.holders.mid(0, 3).join(QStringLiteral(", ")) +
           (elsewhere.holders.size() > 3 ? QStringLiteral(", …") : QString()) + QLatin1Char(')');
}

QList<GpuProcessUse> parseComputeApps(const QByteArray& text)
{
    QList<GpuProcessUse> out;
    for (const QByteArray& raw : text.split('\n')) {
        const QString line = QString::fromUtf8(raw).trimmed();
        const qsizetype a = line.indexOf(QLatin1Char(','));
        const qsizetype b = a < 0 ? -1 : line.indexOf(QLatin1Char(','), a + 1);
        if (b < 0)
            continue;
        bool pidOk = false, mibOk = false;
        const qint64 pid = line.left(a).trimmed().toLongLong(&pidOk);
        const double mib = line.mid(a + 1, b - a - 1).trimmed().toDouble(&mibOk);
        if (!pidOk || !mibOk || pid <= 0 || mib < 0)
            continue;
        out.append(GpuProcessUse{pid, mib * 1024.0 * 1024.0, line.mid(b + 1).trimmed()});
    }
    return out;
}

MemoryElsewhere memoryElsewhere(const QList<GpuProcessUse>& processes, const std::function<bool(qint64)>& isCandidates,
                                const std::function<bool(qint64)>& exists)
{
    MemoryElsewhere m;
    QList<GpuProcessUse> others;
    int seen = 0;
    for (const GpuProcessUse& p : processes) {
        if (!exists(p.pid))
            continue;
        ++seen;
        if (!isCandidates(p.pid))
            others.append(p);
    }
    if (!processes.isEmpty() && seen == 0) {
        m.why = QStringLiteral("none of the %1 processes the driver lists on this GPU is visible here (another PID "
                               "namespace, as in a container)")
                    .arg(processes.size());
        return m;
    }
    m.known = true;
    std::sort(others.begin(), others.end(),
              [](const GpuProcessUse& x, const GpuProcessUse& y) { return x.usedBytes > y.usedBytes; });
    for (const GpuProcessUse& p : std::as_const(others)) {
        m.bytes += p.usedBytes;
        m.holders << QStringLiteral("%1 (pid %2): %3")
                         .arg(p.name.isEmpty() ? QStringLiteral("?") : QFileInfo(p.name).fileName())
                         .arg(p.pid)
                         .arg(formatGiB(p.usedBytes));
    }
    return m;
}

MemoryElsewhere probeMemoryElsewhere(const QString& pciBusId, qint64 workerPid, int timeoutMs)
{
    MemoryElsewhere unknown;
    const QString bus = nvmlBusId(pciBusId);
    if (bus.isEmpty() || workerPid <= 0) {
        unknown.why = bus.isEmpty() ? QStringLiteral("the worker named no PCI bus id for its GPU")
                                    : QStringLiteral("the answering worker's process is not known");
        return unknown;
    }
    QProcess smi;
    smi.start(QStringLiteral("nvidia-smi"),
              {QStringLiteral("--query-compute-apps=pid,used_memory,process_name"),
               QStringLiteral("--format=csv,noheader,nounits"), QStringLiteral("-i"), bus});
    if (!smi.waitForFinished(timeoutMs) || smi.exitStatus() != QProcess::NormalExit || smi.exitCode() != 0) {
        smi.kill();
        smi.waitForFinished(1000);
        unknown.why = QStringLiteral("nvidia-smi could not list the GPU's processes: %1")
                          .arg(smi.error() == QProcess::FailedToStart
                                   ? QStringLiteral("not found")
                                   : QString::fromUtf8(smi.readAllStandardError().left(300)).trimmed());
        return unknown;
    }
    // The candidate's processes: the answering worker and what it started (sandboxed: bwrap, the
    // worker under it, the candidate's children), read now; one that already ended is in no list.
    const QList<qint64> tree = processTreeUsage(workerPid, true).pids;
    const QSet<qint64> candidates(tree.cbegin(), tree.cend());
    return memoryElsewhere(
        parseComputeApps(smi.readAllStandardOutput()), [&](qint64 pid) { return candidates.contains(pid); },
        [](qint64 pid) { return QFileInfo::exists(QStringLiteral("/proc/%1/stat").arg(pid)); });
}

OutOfMemoryFault judgeOutOfMemory(const EvaluationResult& result, const MemoryElsewhere& elsewhere)
{
    if (result.status != EvaluationStatus::RuntimeError || !result.gpuOutOfMemory || result.gpuOutOfMemory->count <= 0)
        return OutOfMemoryFault::None;
    if (!elsewhere.known)
        return OutOfMemoryFault::Unknown;
    const AllocatorOutOfMemoryReport& oom = *result.gpuOutOfMemory;
    const double shortfall = oom.requestedBytes - oom.freeBytes;
    // Had the others held nothing, the request would have found free + elsewhere bytes.
    return shortfall > 0 && elsewhere.bytes >= shortfall ? OutOfMemoryFault::Machines : OutOfMemoryFault::Candidates;
}

QString describeOutOfMemoryElsewhere(const EvaluationResult& result, const MemoryElsewhere& elsewhere)
{
    QString text = QStringLiteral("%1 of this GPU's memory held by %2 other process%3")
                       .arg(formatGiB(elsewhere.bytes))
                       .arg(elsewhere.holders.size())
                       .arg(elsewhere.holders.size() == 1 ? QString() : QStringLiteral("es"));
    if (!elsewhere.holders.isEmpty())
        text += QStringLiteral(" (%1)").arg(elsewhere.holders.mid(0, 3).join(QStringLiteral(", ")) +
                                            (elsewhere.holders.size() > 3 ? QStringLiteral(", …") : QString()));
    if (result.gpuOutOfMemory)
        text += QStringLiteral("; the evaluation asked torch for %1 with %2 free of %3")
                    .arg(formatGiB(result.gpuOutOfMemory->requestedBytes), formatGiB(result.gpuOutOfMemory->freeBytes),
                         formatGiB(result.gpuOutOfMemory->totalBytes));
    return text + QStringLiteral(". ") + result.messageOrError().left(500);
}

} // namespace kwb
