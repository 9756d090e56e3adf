#include "core/protocol/kernelfacts.h"

#include "core/protocol/protocoljson.h"
#include "core/protocol/protocolnames.h"

#include <QJsonArray>
#include <QStringList>

namespace kwb {

using namespace protocoljson;
namespace K = ProtocolNames::KernelFact;

namespace {

std::optional<qint64> optBytes(const QJsonObject& o, const char* key)
{
    const std::optional<double> v = optNumber(o, key);
    return v && *v >= 0 ? std::optional<qint64>(qint64(*v)) : std::nullopt;
}

std::optional<QString> optText(const QJsonObject& o, const char* key)
{
    const QJsonValue v = at(o, key);
    return v.isString() ? std::optional<QString>(v.toString()) : std::nullopt;
}

QString bytes(const std::optional<qint64>& v)
{
    return v ? QStringLiteral("%1 B").arg(*v) : QStringLiteral("\u2014");
}

QString limitText(const QString& limit)
{
    if (limit == QLatin1String("launch_bounds"))
        return QStringLiteral("__launch_bounds__");
    if (limit == QLatin1String("reqntid"))
        return QStringLiteral("required block size");
    if (limit == QLatin1String("registers"))
        return QStringLiteral("registers");
    if (limit == QLatin1String("hardware"))
        return QStringLiteral("hardware limit");
    return limit;
}

} // namespace

QList<KernelFactsInfo> decodeKernelFacts(const QJsonObject& compile, QString* note)
{
    QList<KernelFactsInfo> out;
    if (note)
        *note = str(compile, K::kKernelFactsNote);
    for (const QJsonValue& v : arr(compile, K::kKernelFacts)) {
        const QJsonObject o = v.toObject();
        KernelFactsInfo k;
        k.name = str(o, ProtocolNames::Key::kName);
        if (k.name.isEmpty())
            continue;
        k.demangled = str(o, K::kDemangled);
        k.arch = str(o, ProtocolNames::Field::kArch);
        k.module = str(o, K::kModule);
        k.registers = optInt(o, K::kRegisters);
        k.barriers = optInt(o, K::kBarriers);
        k.localBytes = optBytes(o, K::kLocalBytes);
        k.spillStoreBytes = optBytes(o, K::kSpillStoreBytes);
        k.spillLoadBytes = optBytes(o, K::kSpillLoadBytes);
        k.staticSharedBytes = optBytes(o, K::kStaticSharedBytes);
        k.constantBytes = optBytes(o, K::kConstantBytes);
        k.moduleConstantBytes = optBytes(o, K::kModuleConstantBytes);
        k.paramBytes = optBytes(o, ProtocolNames::Key::kParamBytes);
        k.maxThreadsPerBlock = integer(o, K::kMaxThreadsPerBlock);
        k.maxThreadsLimit = str(o, K::kMaxThreadsLimit);
        k.ptx = optText(o, K::kPtx);
        k.sass = optText(o, K::kSass);
        k.ptxNote = str(o, K::kPtxNote);
        k.sassNote = str(o, K::kSassNote);
        out.append(k);
    }
    return out;
}

QStringList kernelFactLabels()
{
    return {QStringLiteral("Registers per thread"),
            QStringLiteral("Local memory per thread"),
            QStringLiteral("Spill stores"),
            QStringLiteral("Spill loads"),
            QStringLiteral("Static shared memory"),
            QStringLiteral("Constant memory (kernel)"),
            QStringLiteral("Constant memory (module)"),
            QStringLiteral("Parameters"),
            QStringLiteral("Barriers"),
            QStringLiteral("Max threads per block"),
            QStringLiteral("Architecture")};
}

QList<KernelFactRow> kernelFactRows(const KernelFactsInfo& k)
{
    const QStringList labels = kernelFactLabels();
    const QString dash = QStringLiteral("\u2014");
    const QStringList values{
        k.registers ? QString::number(*k.registers) : dash,
        bytes(k.localBytes),
        bytes(k.spillStoreBytes),
        bytes(k.spillLoadBytes),
        bytes(k.staticSharedBytes),
        bytes(k.constantBytes),
        bytes(k.moduleConstantBytes),
        bytes(k.paramBytes),
        k.barriers ? QString::number(*k.barriers) : dash,
        k.maxThreadsPerBlock > 0 ? QStringLiteral("%1 (%2)").arg(k.maxThreadsPerBlock).arg(limitText(k.maxThreadsLimit))
                                 : dash,
        k.arch.isEmpty() ? dash : k.arch,
    };
    QList<KernelFactRow> rows;
    for (int i = 0; i < labels.size(); ++i)
        rows.append(KernelFactRow{labels[i], values[i]});
    return rows;
}

QString kernelReading(const KernelFactsInfo& k)
{
    QStringList parts;
    if (k.registers)
        parts << QStringLiteral("%1 registers").arg(*k.registers);
    const qint64 spilled = k.spillStoreBytes.value_or(0);
    if (k.spillStoreBytes && spilled > 0)
        parts << QStringLiteral("%1 B spilled per thread (stores %1 B, loads %2 B)")
                     .arg(spilled)
                     .arg(k.spillLoadBytes.value_or(0));
    else if (k.spillStoreBytes)
        parts << QStringLiteral("no spills");
    // What is left of the stack frame is local arrays (or, without ptxas's report, spills too).
    if (const qint64 local = k.localBytes.value_or(0) - spilled; k.localBytes && local > 0)
        parts << (k.spillStoreBytes
                      ? QStringLiteral("%1 B of local arrays per thread").arg(local)
                      : QStringLiteral("%1 B of local memory per thread (spills or local arrays)").arg(local));
    if (k.staticSharedBytes && *k.staticSharedBytes > 0)
        parts << QStringLiteral("%1 B static shared").arg(*k.staticSharedBytes);
    QString line = parts.join(QStringLiteral(", "));
    if (k.maxThreadsPerBlock > 0)
        line += (line.isEmpty() ? QString() : QStringLiteral("; ")) +
                (k.maxThreadsLimit == QLatin1String("hardware")
                     ? QStringLiteral("blocks of up to %1 threads").arg(k.maxThreadsPerBlock)
                     : QStringLiteral("blocks of up to %1 threads (%2)")
                           .arg(k.maxThreadsPerBlock)
                           .arg(limitText(k.maxThreadsLimit)));
    return line;
}

const KernelFactsInfo* findKernel(const QList<KernelFactsInfo>& kernels, const QString& name)
{
    for (const KernelFactsInfo& k : kernels)
        if (k.name == name)
            return &k;
    return nullptr;
}

} // namespace kwb
