#pragma once
// A `device` response (docs/protocol.md §device) as a value: decodeDeviceFacts() is the one place
// that reads its keys, in every spelling the protocol has had, so stored facts of any age decode:
// - the theoretical HBM bandwidth as `hbm_theoretical_gbps` (the documented name) or
//   `hbm_theoretical_gbs` (what workers before the fix sent, alone: every database of the study);
// - measured ceilings flat (`ceilings.hbm_copy_gbps`, `ceilings.fp32_fma_gflops`, …) or nested
//   (`ceilings.hbm_copy.gbs_best`, `ceilings.fp32_fma.gflops_best`, with `method`).

#include <QJsonObject>
#include <QMetaType>
#include <QString>

namespace kwb {

/// One measured ceiling; value 0 when the response has none.
struct MeasuredCeiling
{
    double value = 0; ///< GB/s for memory, GFLOP/s for compute
    QString method;   ///< how it was measured (nested form only)
    bool present() const { return value > 0; }
};

struct DeviceFacts
{
    bool available = false;
    QString reason; ///< why there is no GPU
    QString name;
    QString cc;   ///< "9.0"
    QString arch; ///< "sm_90"
    int smCount = 0;
    qint64 l2Bytes = 0;
    qint64 memoryBytes = 0;
    double smClockKhz = 0;
    double memoryClockKhz = 0;
    double hbmTheoreticalGBps = 0;         ///< 0: unknown
    QString driverVersion, runtimeVersion; ///< the CUDA driver's and runtime's ("13.0"), for About

    bool hasCeilings = false; ///< the response carried a `ceilings` object
    MeasuredCeiling hbmCopy, fp32Fma, tensorTf32, tensorBf16;

    QJsonObject raw; ///< the object as received (runs store it in their configuration)

    /// The bandwidth a roofline uses: measured where there is a measurement, else theoretical
    /// (0 when neither is known).
    double bandwidthGBps() const { return hbmCopy.present() ? hbmCopy.value : hbmTheoreticalGBps; }
    /// FP32 peak from the clocks: SMs × FMA lanes × 2 FLOP × clock; 0 when a fact is missing.
    double theoreticalFp32Gflops() const;
    /// Measured FP32 FMA where there is a measurement, else theoretical.
    double fp32Gflops() const { return fp32Fma.present() ? fp32Fma.value : theoreticalFp32Gflops(); }
};

DeviceFacts decodeDeviceFacts(const QJsonObject& device);

/// FP32 FMA lanes per SM of a compute capability ("8.6"), 0 when unknown.
int fp32FmaLanesPerSm(const QString& computeCapability);

} // namespace kwb

Q_DECLARE_METATYPE(kwb::DeviceFacts)
