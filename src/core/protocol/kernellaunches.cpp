#include "core/protocol/kernellaunches.h"

#include "core/protocol/protocoljson.h"
#include "core/protocol/protocolnames.h"

#include <QJsonArray>

#include <cmath>

namespace kwb {

using namespace protocoljson;
namespace K = ProtocolNames::Key;
namespace F = ProtocolNames::KernelFact;
namespace L = ProtocolNames::KernelLaunch;

namespace {

std::array<qint64, 3> dims(const QJsonObject& o, const char* key)
{
    const QJsonArray a = arr(o, key);
    std::array<qint64, 3> d{{0, 0, 0}};
    for (int i = 0; i < 3 && i < a.size(); ++i)
        d[size_t(i)] = qint64(std::max(0.0, a.at(i).toDouble()));
    return d;
}

std::optional<qint64> optBytes(const QJsonObject& o, const char* key)
{
    const std::optional<double> v = optNumber(o, key);
    return v && *v >= 0 ? std::optional<qint64>(qint64(*v)) : std::nullopt;
}

QString duration(double ns)
{
    if (ns >= 1e6)
        return QStringLiteral("%1 ms").arg(ns / 1e6, 0, 'f', ns >= 1e7 ? 1 : 3);
    return QStringLiteral("%1 \u00b5s").arg(ns / 1e3, 0, 'f', ns >= 1e4 ? 1 : 2);
}

QString bytesText(qint64 b)
{
    return b % 1024 == 0 && b > 0 ? QStringLiteral("%1 KiB").arg(b / 1024) : QStringLiteral("%1 B").arg(b);
}

QString percent(double fraction)
{
    const double p = 100.0 * fraction;
    return QStringLiteral("%1 %").arg(p, 0, 'f', p < 10 && p != std::floor(p) ? 1 : 0);
}

} // namespace

QList<KernelLaunchConfig> decodeKernelLaunches(const QJsonObject& evaluation, int* omitted)
{
    if (omitted)
        *omitted = integer(evaluation, L::kLaunchesOmitted);
    QList<KernelLaunchConfig> out;
    for (const QJsonValue& v : arr(evaluation, L::kLaunches)) {
        const QJsonObject o = v.toObject();
        KernelLaunchConfig k;
        k.name = str(o, K::kName);
        if (k.name.isEmpty())
            continue;
        k.custom = flag(o, K::kCustom);
        k.calls = integer(o, K::kCalls);
        k.timeNs = number(o, K::kTimeNs);
        k.grid = dims(o, L::kGrid);
        k.block = dims(o, L::kBlock);
        k.registers = optInt(o, F::kRegisters);
        k.staticSharedBytes = optBytes(o, F::kStaticSharedBytes);
        k.dynamicSharedBytes = optBytes(o, L::kDynamicSharedBytes);
        k.localBytes = optBytes(o, F::kLocalBytes);
        k.sharedCarveoutBytes = optBytes(o, L::kSharedCarveoutBytes);
        if (const QJsonObject occ = obj(o, L::kOccupancy); !occ.isEmpty()) {
            OccupancyInfo info;
            info.error = str(occ, K::kError);
            info.activeBlocksPerSm = integer(occ, L::kActiveBlocksPerSm);
            info.activeWarpsPerSm = integer(occ, L::kActiveWarpsPerSm);
            info.maxWarpsPerSm = integer(occ, L::kMaxWarpsPerSm);
            info.fraction = number(occ, L::kFraction);
            info.limitedBy = strings(occ, L::kLimitedBy);
            // A record that claims an occupancy outside 0..1 or no blocks is not one.
            if (info.error.isEmpty() &&
                (info.activeBlocksPerSm <= 0 || info.maxWarpsPerSm <= 0 || !(info.fraction > 0 && info.fraction <= 1)))
                info.error = QStringLiteral("malformed occupancy record");
            k.occupancy = info;
        }
        out.append(k);
    }
    return out;
}

QString limitedByText(const QStringList& limitedBy)
{
    QStringList words;
    for (const QString& l : limitedBy)
        words << QString(l).replace(QLatin1Char('_'), QLatin1Char(' '));
    return words.join(QStringLiteral(" and "));
}

QString occupancyText(const std::optional<OccupancyInfo>& o)
{
    if (!o)
        return QStringLiteral("\u2014");
    if (!o->error.isEmpty())
        return QStringLiteral("unknown: ") + o->error;
    QString text = QStringLiteral("%1 (%2 blocks/SM").arg(percent(o->fraction)).arg(o->activeBlocksPerSm);
    if (!o->limitedBy.isEmpty())
        text += QStringLiteral(", limited by ") + limitedByText(o->limitedBy);
    return text + QLatin1Char(')');
}

QString launchShapeText(const KernelLaunchConfig& k)
{
    const auto shape = [](const std::array<qint64, 3>& d) {
        return QStringLiteral("%1\u00d7%2\u00d7%3").arg(d[0]).arg(d[1]).arg(d[2]);
    };
    QString line = QStringLiteral("grid %1 of %2 threads").arg(shape(k.grid)).arg(k.threadsPerBlock());
    if (k.block[1] > 1 || k.block[2] > 1)
        line += QStringLiteral(" (%1)").arg(shape(k.block));
    return line;
}

QString launchReading(const KernelLaunchConfig& k)
{
    QString line = launchShapeText(k);
    if (k.registers)
        line += QStringLiteral(", %1 registers").arg(*k.registers);
    const qint64 shared = k.staticSharedBytes.value_or(0) + k.dynamicSharedBytes.value_or(0);
    if (shared > 0) {
        line += QStringLiteral(", %1 shared").arg(bytesText(shared));
        if (k.dynamicSharedBytes.value_or(0) > 0 && k.staticSharedBytes.value_or(0) > 0)
            line += QStringLiteral(" (%1 dynamic)").arg(bytesText(*k.dynamicSharedBytes));
        else if (k.dynamicSharedBytes.value_or(0) > 0)
            line += QStringLiteral(" (dynamic)");
    } else if (k.staticSharedBytes || k.dynamicSharedBytes) {
        line += QStringLiteral(", no shared memory");
    }
    if (k.localBytes.value_or(0) > 0)
        line += QStringLiteral(", %1 local per thread").arg(bytesText(*k.localBytes));
    if (k.occupancy) {
        if (k.occupancy->error.isEmpty())
            line += QStringLiteral(": %1 theoretical occupancy, %2 blocks per SM")
                        .arg(percent(k.occupancy->fraction))
                        .arg(k.occupancy->activeBlocksPerSm) +
                    (k.occupancy->limitedBy.isEmpty()
                         ? QString()
                         : QStringLiteral(" (limited by ") + limitedByText(k.occupancy->limitedBy) + QLatin1Char(')'));
        else
            line += QStringLiteral(": occupancy unknown (") + k.occupancy->error + QLatin1Char(')');
    }
    line +=
        QStringLiteral("; %1, %2")
            .arg(k.calls == 1 ? QStringLiteral("1 call") : QStringLiteral("%1 calls").arg(k.calls), duration(k.timeNs));
    return line;
}

QList<KernelLaunchConfig> launchesOf(const QList<KernelLaunchConfig>& launches, const KernelFactsInfo& kernel)
{
    QList<KernelLaunchConfig> out;
    for (const KernelLaunchConfig& l : launches)
        if (l.name == kernel.name || (!kernel.demangled.isEmpty() && l.name == kernel.demangled))
            out.append(l);
    return out;
}

} // namespace kwb
