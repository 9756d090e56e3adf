#include "core/tasks/gputable.h"

#include <QJsonValue>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kwb {

namespace {

Roof roof(Roof::Kind kind, Roof::Origin origin, double value, const QString& label, const QString& note = QString())
{
    Roof r;
    r.kind = kind;
    r.origin = origin;
    r.value = value;
    r.label = label;
    r.note = note;
    return r;
}

Roof datasheet(Roof::Kind kind, double value, const QString& note = QString())
{
    QString label;
    switch (kind) {
    case Roof::Kind::Memory: label = QStringLiteral("HBM"); break;
    case Roof::Kind::Fp32: label = QStringLiteral("FP32"); break;
    case Roof::Kind::Tf32Tensor: label = QStringLiteral("TF32 tensor"); break;
    case Roof::Kind::Bf16Tensor: label = QStringLiteral("BF16/FP16 tensor"); break;
    case Roof::Kind::Fp16Tensor: label = QStringLiteral("FP16 tensor"); break;
    }
    return roof(kind, Roof::Origin::Datasheet, value, label, note);
}

constexpr qint64 MiB = 1024 * 1024;

const QString kSparsityNote = QStringLiteral("dense; the datasheet's larger figure is with 2:4 sparsity");

// Vendor datasheet peaks (the numbers NVIDIA prints for each product, boost clock). Tensor-core
// peaks are the dense figures: where a datasheet prints only the "with sparsity" number, dense is
// half of it. SM counts and L2 sizes come from the architecture whitepapers (Volta, A100, Hopper,
// Ada Lovelace); the H200's L2 is what cudaDeviceProp::l2CacheSize reports on the H200 this project
// measured (bench/results/2026-11-29-eval-stages-h200.json).
QList<GpuRoofs> buildTable()
{
    QList<GpuRoofs> table;
    using K = Roof::Kind;

    {
        // NVIDIA V100 Tensor Core GPU datasheet (SXM2): 900 GB/s HBM2, 15.7 TFLOPS single
        // precision, 125 TFLOPS tensor (FP16 inputs, FP32 accumulate). No TF32 or BF16 on Volta.
        // Volta whitepaper: 80 SMs, 6144 KB L2.
        GpuRoofs g;
        g.key = QStringLiteral("v100-sxm2-32gb");
        g.name = QStringLiteral("NVIDIA V100 SXM2 32GB");
        g.citation = QStringLiteral("NVIDIA V100 datasheet (SXM2); Volta whitepaper");
        g.smCount = 80;
        g.l2Bytes = 6 * MiB;
        g.roofs = {datasheet(K::Memory, 900.0), datasheet(K::Fp32, 15700.0), datasheet(K::Fp16Tensor, 125000.0)};
        table.append(g);
    }
    {
        // NVIDIA A100 datasheet (80GB SXM): 2,039 GB/s HBM2e, FP32 19.5 TFLOPS, TF32 tensor 156
        // (312 with sparsity), BF16/FP16 tensor 312 (624 with sparsity). A100 whitepaper: 108 SMs,
        // 40 MB L2.
        GpuRoofs g;
        g.key = QStringLiteral("a100-sxm-80gb");
        g.name = QStringLiteral("NVIDIA A100 SXM 80GB");
        g.citation = QStringLiteral("NVIDIA A100 datasheet (80GB SXM); A100 whitepaper");
        g.smCount = 108;
        g.l2Bytes = 40 * MiB;
        g.roofs = {datasheet(K::Memory, 2039.0), datasheet(K::Fp32, 19500.0),
                   datasheet(K::Tf32Tensor, 156000.0, kSparsityNote),
                   datasheet(K::Bf16Tensor, 312000.0, kSparsityNote)};
        table.append(g);
    }
    {
        // NVIDIA H100 datasheet (SXM): 3.35 TB/s HBM3, FP32 67 TFLOPS, TF32 tensor 989 and
        // BF16/FP16 tensor 1,979 TFLOPS, both "with sparsity": dense 494.7 and 989.4 (the Hopper
        // whitepaper's dense table). Hopper whitepaper: 132 SMs, 50 MB L2.
        GpuRoofs g;
        g.key = QStringLiteral("h100-sxm-80gb");
        g.name = QStringLiteral("NVIDIA H100 SXM 80GB");
        g.citation = QStringLiteral("NVIDIA H100 datasheet (SXM); Hopper whitepaper");
        g.smCount = 132;
        g.l2Bytes = 50 * MiB;
        g.roofs = {datasheet(K::Memory, 3350.0), datasheet(K::Fp32, 67000.0),
                   datasheet(K::Tf32Tensor, 494700.0, kSparsityNote),
                   datasheet(K::Bf16Tensor, 989400.0, kSparsityNote)};
        table.append(g);
    }
    {
        // NVIDIA H200 datasheet (SXM): 4.8 TB/s HBM3e, FP32 67 TFLOPS, TF32 tensor 989 and
        // BF16/FP16 tensor 1,979 TFLOPS "with sparsity": dense 494.7 and 989.4 (the H100's SMs at
        // the same clock). 132 SMs.
        GpuRoofs g;
        g.key = QStringLiteral("h200-sxm-141gb");
        g.name = QStringLiteral("NVIDIA H200 SXM 141GB");
        g.citation = QStringLiteral("NVIDIA H200 datasheet (SXM); L2 as the device reports it");
        g.smCount = 132;
        g.l2Bytes = 60 * MiB;
        g.roofs = {datasheet(K::Memory, 4800.0), datasheet(K::Fp32, 67000.0),
                   datasheet(K::Tf32Tensor, 494700.0, kSparsityNote),
                   datasheet(K::Bf16Tensor, 989400.0, kSparsityNote)};
        table.append(g);
    }
    {
        // NVIDIA L40S datasheet: 864 GB/s GDDR6, FP32 91.6 TFLOPS, TF32 tensor 183 (366 with
        // sparsity), BF16/FP16 tensor 362.05 (733 with sparsity). 142 SMs, 96 MB L2 (AD102).
        GpuRoofs g;
        g.key = QStringLiteral("l40s");
        g.name = QStringLiteral("NVIDIA L40S");
        g.citation = QStringLiteral("NVIDIA L40S datasheet; Ada Lovelace whitepaper");
        g.smCount = 142;
        g.l2Bytes = 96 * MiB;
        g.roofs = {roof(K::Memory, Roof::Origin::Datasheet, 864.0, QStringLiteral("GDDR6")),
                   datasheet(K::Fp32, 91600.0), datasheet(K::Tf32Tensor, 183000.0, kSparsityNote),
                   datasheet(K::Bf16Tensor, 362050.0, kSparsityNote)};
        table.append(g);
    }
    {
        // GeForce RTX 4090 (Ada Lovelace whitepaper, appendix table): 1,008 GB/s GDDR6X, FP32
        // 82.6 TFLOPS, TF32 tensor 82.6 (165.2 with sparsity), BF16/FP16 tensor with FP32
        // accumulate 165.2 (330.4 with sparsity; GeForce runs FP32 accumulate at half the FP16
        // accumulate rate). 128 SMs, 72 MB L2.
        GpuRoofs g;
        g.key = QStringLiteral("rtx-4090");
        g.name = QStringLiteral("NVIDIA GeForce RTX 4090");
        g.citation = QStringLiteral("Ada Lovelace whitepaper (RTX 4090)");
        g.smCount = 128;
        g.l2Bytes = 72 * MiB;
        g.roofs = {roof(K::Memory, Roof::Origin::Datasheet, 1008.0, QStringLiteral("GDDR6X")),
                   datasheet(K::Fp32, 82600.0), datasheet(K::Tf32Tensor, 82600.0, kSparsityNote),
                   datasheet(K::Bf16Tensor, 165200.0, QStringLiteral("dense, FP32 accumulate; 330.4 with sparsity"))};
        table.append(g);
    }
    return table;
}

QString rateText(double value, const QString& unitPerSecond)
{
    // value is in giga-units per second: show T above 1000 G, with three significant digits.
    if (value >= 1000.0)
        return QStringLiteral("%1 T%2").arg(QString::number(value / 1000.0, 'g', 3), unitPerSecond);
    return QStringLiteral("%1 G%2").arg(QString::number(value, 'g', 3), unitPerSecond);
}

} // namespace

QString Roof::originText() const
{
    switch (origin) {
    case Origin::Datasheet: return QStringLiteral("datasheet");
    case Origin::Theoretical: return QStringLiteral("theoretical");
    case Origin::Measured: return QStringLiteral("measured");
    }
    return QString();
}

QString Roof::displayText() const
{
    const QString rate =
        kind == Kind::Memory ? rateText(value, QStringLiteral("B/s")) : rateText(value, QStringLiteral("FLOP/s"));
    return QStringLiteral("%1 %2 (%3)").arg(label, rate, originText());
}

bool GpuRoofs::isValid() const
{
    return primaryMemory() != nullptr && primaryFp32() != nullptr;
}

namespace {
const Roof* primaryOf(const QList<Roof>& roofs, Roof::Kind kind)
{
    const Roof* first = nullptr;
    for (const Roof& r : roofs) {
        if (r.kind != kind || !(r.value > 0))
            continue;
        if (r.origin == Roof::Origin::Measured)
            return &r;
        if (!first)
            first = &r;
    }
    return first;
}
} // namespace

const Roof* GpuRoofs::primaryMemory() const
{
    return primaryOf(roofs, Roof::Kind::Memory);
}

const Roof* GpuRoofs::primaryFp32() const
{
    return primaryOf(roofs, Roof::Kind::Fp32);
}

QList<Roof> GpuRoofs::roofsOf(Roof::Kind kind) const
{
    QList<Roof> out;
    const Roof* primary = primaryOf(roofs, kind);
    if (primary)
        out.append(*primary);
    for (const Roof& r : roofs) {
        if (r.kind == kind && &r != primary && r.value > 0)
            out.append(r);
    }
    return out;
}

double GpuRoofs::bandwidthGBps() const
{
    const Roof* r = primaryMemory();
    return r ? r->value : 0.0;
}

double GpuRoofs::fp32Gflops() const
{
    const Roof* r = primaryFp32();
    return r ? r->value : 0.0;
}

double GpuRoofs::ridgeIntensity(double computeGflops) const
{
    const double bw = bandwidthGBps();
    return bw > 0 ? computeGflops / bw : std::numeric_limits<double>::quiet_NaN();
}

double GpuRoofs::fp32RidgeIntensity() const
{
    return ridgeIntensity(fp32Gflops());
}

double GpuRoofs::attainableGflops(double intensity) const
{
    if (!isValid() || !(intensity > 0))
        return std::numeric_limits<double>::quiet_NaN();
    return std::min(bandwidthGBps() * intensity, fp32Gflops());
}

const QList<GpuRoofs>& gpuTable()
{
    static const QList<GpuRoofs> table = buildTable();
    return table;
}

const GpuRoofs* findGpu(const QString& key)
{
    for (const GpuRoofs& g : gpuTable()) {
        if (g.key == key)
            return &g;
    }
    return nullptr;
}

GpuRoofs fromDeviceResponse(const QJsonObject& response)
{
    return fromDeviceFacts(decodeDeviceFacts(response));
}

GpuRoofs fromDeviceFacts(const DeviceFacts& device)
{
    using K = Roof::Kind;
    using O = Roof::Origin;
    GpuRoofs g;
    g.key = QStringLiteral("current");
    if (!device.available) {
        g.name = QStringLiteral("no GPU");
        g.citation = device.reason.isEmpty() ? QStringLiteral("the worker reports no GPU")
                                             : QStringLiteral("the worker reports no GPU: %1").arg(device.reason);
        return g;
    }
    g.name = device.name.isEmpty() ? QStringLiteral("unnamed GPU") : device.name;
    g.smCount = device.smCount;
    g.l2Bytes = device.l2Bytes;

    // Measured first: they are the primary roofs where present.
    const auto measured = [&](K kind, const MeasuredCeiling& c, const QString& label) {
        if (c.present())
            g.roofs.append(roof(kind, O::Measured, c.value, label, c.method));
    };
    measured(K::Memory, device.hbmCopy, QStringLiteral("HBM copy"));
    measured(K::Fp32, device.fp32Fma, QStringLiteral("FP32 FMA"));
    measured(K::Tf32Tensor, device.tensorTf32, QStringLiteral("TF32 tensor"));
    measured(K::Bf16Tensor, device.tensorBf16, QStringLiteral("BF16 tensor"));

    // Theoretical, shown beside the measured ones.
    const double hbm = device.hbmTheoreticalGBps;
    if (hbm > 0)
        g.roofs.append(roof(K::Memory, O::Theoretical, hbm, QStringLiteral("HBM"),
                            QStringLiteral("2 transfers per memory clock × bus width")));
    const int lanes = fp32FmaLanesPerSm(device.cc);
    if (const double fp32 = device.theoreticalFp32Gflops(); fp32 > 0) {
        g.roofs.append(roof(K::Fp32, O::Theoretical, fp32, QStringLiteral("FP32"),
                            QStringLiteral("%1 SMs × %2 lanes × 2 FLOP × %3 GHz")
                                .arg(g.smCount)
                                .arg(lanes)
                                .arg(QString::number(device.smClockKhz * 1e-6, 'f', 3))));
    }

    QStringList from;
    if (device.hasCeilings)
        from << QStringLiteral("measured by the worker on this machine");
    if (hbm > 0 || lanes > 0)
        from << QStringLiteral("theoretical from the device's clocks");
    g.citation = from.isEmpty() ? QStringLiteral("the worker's device response") : from.join(QStringLiteral("; "));
    return g;
}

} // namespace kwb
