#include "core/protocol/devicefacts.h"

#include "core/protocol/protocoljson.h"

#include <QStringList>

namespace kwb {

using namespace protocoljson;

namespace {

/// A measured ceiling in either form: flat `flatKey` in `ceilings`, or an object
/// `ceilings.<name>` with `bestKey` and "method".
MeasuredCeiling ceiling(const QJsonObject& ceilings, const char* name, const char* flatKey, const char* bestKey)
{
    MeasuredCeiling c;
    c.value = positive(at(ceilings, flatKey));
    if (c.value > 0)
        return c;
    const QJsonObject nested = obj(ceilings, name);
    c.value = positive(at(nested, bestKey));
    if (c.value > 0)
        c.method = str(nested, Key::kMethod);
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
    f.available = flag(d, Key::kAvailable);
    f.reason = str(d, Key::kReason);
    if (!f.available)
        return f;
    f.name = str(d, Key::kName);
    f.cc = str(d, Key::kCc);
    f.arch = str(d, Field::kArch);
    f.smCount = integer(d, Key::kSmCount);
    f.l2Bytes = qint64(positive(at(d, Key::kL2Bytes)));
    f.memoryBytes = qint64(positive(at(d, Key::kMemoryBytes)));
    f.smClockKhz = positive(at(d, Key::kSmClockKhz));
    f.memoryClockKhz = positive(at(d, Key::kMemoryClockKhz));
    f.driverVersion = str(d, Key::kDriverVersion);
    f.runtimeVersion = str(d, Key::kRuntimeVersion);
    // The documented name first; workers before the fix sent only `_gbs`, and every database of
    // the study has only that one (1552 of 1702 stored prompts lost their roofline facts to it).
    f.hbmTheoreticalGBps = positive(at(d, Key::kHbmTheoreticalGbps));
    if (f.hbmTheoreticalGBps <= 0)
        f.hbmTheoreticalGBps = positive(at(d, Key::kHbmTheoreticalGbs));

    const QJsonObject ceilings = obj(d, Field::kCeilings);
    f.hasCeilings = !ceilings.isEmpty();
    f.hbmCopy = ceiling(ceilings, Key::kHbmCopy, Key::kHbmCopyGbps, Key::kGbsBest);
    f.fp32Fma = ceiling(ceilings, Key::kFp32Fma, Key::kFp32FmaGflops, Key::kGflopsBest);
    f.tensorTf32 = ceiling(ceilings, Key::kTensorTf32, Key::kTensorTf32Gflops, Key::kGflopsBest);
    f.tensorBf16 = ceiling(ceilings, Key::kTensorBf16, Key::kTensorBf16Gflops, Key::kGflopsBest);
    return f;
}

} // namespace kwb
