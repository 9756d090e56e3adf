#include "core/protocol/devicefacts.h"

#include "core/protocol/protocoljson.h"

#include <QStringList>

namespace kwb {

using namespace protocoljson;

namespace {

/// A measured ceiling in either form: flat "<name><flatSuffix>" in `ceilings`, or an object
/// `ceilings.<name>` with "<bestKey>" and "method".
MeasuredCeiling ceiling(const QJsonObject& ceilings, const QString& name, const QString& flatSuffix, const QString& bestKey)
{
    MeasuredCeiling c;
    c.value = positive(ceilings.value(name + flatSuffix));
    if (c.value > 0)
        return c;
    const QJsonObject nested = ceilings.value(name).toObject();
    c.value = positive(nested.value(bestKey));
    if (c.value > 0)
        c.method = str(nested, "method");
    return c;
}

} // namespace

int fp32FmaLanesPerSm(const QString& computeCapability)
{
    const QStringList p = computeCapability.split(QLatin1Char('.'));
    if (p.size() != 2)
        return 0;
    bool okMajor = false, okMinor = false;
    const int major = p.at(0).toInt(&okMajor), minor = p.at(1).toInt(&okMinor);
    if (!okMajor || !okMinor)
        return 0;
    // Volta, Turing and GA100 have 64 FP32 lanes per SM; GA10x, Ada, Hopper and later 128.
    if (major == 7 || (major == 8 && minor == 0))
        return 64;
    if (major >= 8)
        return 128;
    return 0;
}

double DeviceFacts::theoreticalFp32Gflops() const
{
    const int lanes = fp32FmaLanesPerSm(cc);
    if (lanes <= 0 || smCount <= 0 || !(smClockKhz > 0))
        return 0;
    return smCount * lanes * 2.0 * smClockKhz * 1e-6; // one FMA = 2 FLOPs; kHz·1e-6 = GHz
}

DeviceFacts decodeDeviceFacts(const QJsonObject& d)
{
    DeviceFacts f;
    f.raw = d;
    f.available = flag(d, "available");
    f.reason = str(d, "reason");
    if (!f.available)
        return f;
    f.name = str(d, "name");
    f.cc = str(d, "cc");
    f.arch = str(d, "arch");
    f.smCount = integer(d, "sm_count");
    f.l2Bytes = qint64(positive(at(d, "l2_bytes")));
    f.memoryBytes = qint64(positive(at(d, "memory_bytes")));
    f.smClockKhz = positive(at(d, "sm_clock_khz"));
    f.memoryClockKhz = positive(at(d, "memory_clock_khz"));
    f.driverVersion = str(d, "driver_version");
    f.runtimeVersion = str(d, "runtime_version");
    // The documented name first; workers before the fix sent only `_gbs`, and every database of
    // the study has only that one (1552 of 1702 stored prompts lost their roofline facts to it).
    f.hbmTheoreticalGBps = positive(at(d, "hbm_theoretical_gbps"));
    if (f.hbmTheoreticalGBps <= 0)
        f.hbmTheoreticalGBps = positive(at(d, "hbm_theoretical_gbs"));

    const QJsonObject ceilings = obj(d, "ceilings");
    f.hasCeilings = !ceilings.isEmpty();
    const QString gbps = QStringLiteral("_gbps"), gflops = QStringLiteral("_gflops");
    const QString bestGbs = QStringLiteral("gbs_best"), bestGflops = QStringLiteral("gflops_best");
    f.hbmCopy = ceiling(ceilings, QStringLiteral("hbm_copy"), gbps, bestGbs);
    f.fp32Fma = ceiling(ceilings, QStringLiteral("fp32_fma"), gflops, bestGflops);
    f.tensorTf32 = ceiling(ceilings, QStringLiteral("tensor_tf32"), gflops, bestGflops);
    f.tensorBf16 = ceiling(ceilings, QStringLiteral("tensor_bf16"), gflops, bestGflops);
    return f;
}

} // namespace kwb
