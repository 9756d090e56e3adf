// The GPU table (datasheet peaks) and the roofs of the current GPU from the worker's `device`
// response, in the worker's nested form and in the documented flat form.
#include "chartstestdata.h"

#include "core/tasks/gputable.h"

#include <QJsonArray>
#include <QSet>
#include <QTest>

#include <cmath>

using namespace kwb;

namespace {

const Roof* findRoof(const GpuRoofs& g, Roof::Kind kind, Roof::Origin origin)
{
    for (const Roof& r : g.roofs)
        if (r.kind == kind && r.origin == origin)
            return &r;
    return nullptr;
}

} // namespace

class TestGpuTable : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void tableHasTheStudysGpus()
    {
        QSet<QString> keys;
        for (const GpuRoofs& g : gpuTable()) {
            QVERIFY2(g.isValid(), qPrintable(g.key));
            QVERIFY2(!keys.contains(g.key), qPrintable(g.key));
            keys.insert(g.key);
            QVERIFY(!g.citation.isEmpty());
            QVERIFY(g.smCount > 0);
            QVERIFY(g.l2Bytes > 0);
            for (const Roof& r : g.roofs) {
                QCOMPARE(r.origin, Roof::Origin::Datasheet);
                // Dense tensor-core peaks are well above FP32 on every GPU listed.
                if (r.isTensor())
                    QVERIFY2(r.value >= g.fp32Gflops(), qPrintable(g.key + QLatin1Char(' ') + r.label));
            }
        }
        for (const char* key :
             {"v100-sxm2-32gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "l40s", "rtx-4090"})
            QVERIFY2(keys.contains(QLatin1String(key)), key);
    }

    void v100MatchesItsDatasheet()
    {
        const GpuRoofs* v100 = findGpu(QStringLiteral("v100-sxm2-32gb"));
        QVERIFY(v100);
        QCOMPARE(v100->bandwidthGBps(), 900.0);
        QCOMPARE(v100->fp32Gflops(), 15700.0);
        QCOMPARE(v100->smCount, 80);
        QCOMPARE(v100->l2Bytes, qint64(6) * 1024 * 1024);
        const Roof* fp16 = findRoof(*v100, Roof::Kind::Fp16Tensor, Roof::Origin::Datasheet);
        QVERIFY(fp16);
        QCOMPARE(fp16->value, 125000.0);
        // Volta has neither TF32 nor BF16.
        QVERIFY(v100->roofsOf(Roof::Kind::Tf32Tensor).isEmpty());
        QVERIFY(v100->roofsOf(Roof::Kind::Bf16Tensor).isEmpty());
        QVERIFY(qFuzzyCompare(v100->fp32RidgeIntensity(), 15700.0 / 900.0));
    }

    void hopperTensorPeaksAreDense()
    {
        for (const char* key : {"h100-sxm-80gb", "h200-sxm-141gb"}) {
            const GpuRoofs* g = findGpu(QLatin1String(key));
            QVERIFY(g);
            QCOMPARE(g->fp32Gflops(), 67000.0);
            QCOMPARE(g->smCount, 132);
            // The datasheet prints 989 (TF32) and 1,979 (BF16) TFLOP/s with sparsity.
            QCOMPARE(g->roofsOf(Roof::Kind::Tf32Tensor).value(0).value, 494700.0);
            QCOMPARE(g->roofsOf(Roof::Kind::Bf16Tensor).value(0).value, 989400.0);
        }
        QCOMPARE(findGpu(QStringLiteral("h200-sxm-141gb"))->bandwidthGBps(), 4800.0);
        QCOMPARE(findGpu(QStringLiteral("h100-sxm-80gb"))->bandwidthGBps(), 3350.0);
        QCOMPARE(findGpu(QStringLiteral("a100-sxm-80gb"))->bandwidthGBps(), 2039.0);
        QCOMPARE(findGpu(QStringLiteral("a100-sxm-80gb"))->roofsOf(Roof::Kind::Tf32Tensor).value(0).value, 156000.0);
        QVERIFY(findGpu(QStringLiteral("no-such-gpu")) == nullptr);
    }

    void attainableIsTheMinimumOfTheTwoRoofs()
    {
        const GpuRoofs* h200 = findGpu(QStringLiteral("h200-sxm-141gb"));
        QCOMPARE(h200->attainableGflops(1.0), 4800.0);
        QCOMPARE(h200->attainableGflops(0.25), 1200.0);
        QCOMPARE(h200->attainableGflops(100.0), 67000.0);
        QVERIFY(std::isnan(h200->attainableGflops(0.0)));
        QVERIFY(qFuzzyCompare(h200->ridgeIntensity(989400.0), 989400.0 / 4800.0));
    }

    void workerDeviceResponse()
    {
        // The worker's own response on an H200 (nested ceilings, hbm_theoretical_gbs).
        const GpuRoofs g = fromDeviceResponse(loadChartData(QStringLiteral("device_h200.json")));
        QVERIFY(g.isValid());
        QCOMPARE(g.key, QStringLiteral("current"));
        QCOMPARE(g.name, QStringLiteral("NVIDIA H200"));
        QCOMPARE(g.smCount, 132);
        QCOMPARE(g.l2Bytes, qint64(62914560));

        // Measured roofs are the primary ones, labelled measured, with their method.
        const Roof* mem = g.primaryMemory();
        QCOMPARE(mem->origin, Roof::Origin::Measured);
        QVERIFY(qFuzzyCompare(mem->value, 4265.890857861522));
        QVERIFY(mem->note.contains(QLatin1String("cudaMemcpyAsync")));
        QVERIFY(mem->displayText().endsWith(QLatin1String("(measured)")));
        const Roof* fp32 = g.primaryFp32();
        QCOMPARE(fp32->origin, Roof::Origin::Measured);
        QVERIFY(qFuzzyCompare(fp32->value, 65325.246282100816));
        const Roof* bf16 = findRoof(g, Roof::Kind::Bf16Tensor, Roof::Origin::Measured);
        QVERIFY(bf16);
        QVERIFY(qFuzzyCompare(bf16->value, 616281.7732611952));
        QVERIFY(bf16->note.contains(QLatin1String("mma.sync")));
        QVERIFY(g.roofsOf(Roof::Kind::Tf32Tensor).isEmpty()); // not in this record

        // Theoretical roofs are shown too.
        const Roof* hbm = findRoof(g, Roof::Kind::Memory, Roof::Origin::Theoretical);
        QVERIFY(hbm);
        QVERIFY(qFuzzyCompare(hbm->value, 4814.304));
        const Roof* fp32Theory = findRoof(g, Roof::Kind::Fp32, Roof::Origin::Theoretical);
        QVERIFY(fp32Theory);
        QVERIFY(qFuzzyCompare(fp32Theory->value, 132 * 128 * 2 * 1.98)); // SMs × lanes × 2 × GHz
        QCOMPARE(g.roofsOf(Roof::Kind::Memory).size(), 2);
        QCOMPARE(g.roofsOf(Roof::Kind::Memory).first().origin, Roof::Origin::Measured);
        QVERIFY(qFuzzyCompare(g.fp32RidgeIntensity(), 65325.246282100816 / 4265.890857861522));
    }

    void documentedFlatDeviceResponse()
    {
        // docs/protocol.md §device: flat ceilings and hbm_theoretical_gbps.
        const QJsonObject device{
            {QStringLiteral("available"), true},
            {QStringLiteral("name"), QStringLiteral("NVIDIA A100-SXM4-80GB")},
            {QStringLiteral("cc"), QStringLiteral("8.0")},
            {QStringLiteral("sm_count"), 108},
            {QStringLiteral("sm_clock_khz"), 1410000},
            {QStringLiteral("l2_bytes"), 41943040},
            {QStringLiteral("hbm_theoretical_gbps"), 2039.0},
            {QStringLiteral("ceilings"), QJsonObject{{QStringLiteral("hbm_copy_gbps"), 1720.5},
                                                     {QStringLiteral("fp32_fma_gflops"), 19100.0},
                                                     {QStringLiteral("tensor_tf32_gflops"), 140000.0},
                                                     {QStringLiteral("tensor_bf16_gflops"), 280000.0}}}};
        const GpuRoofs g = fromDeviceResponse(device);
        QVERIFY(g.isValid());
        QCOMPARE(g.bandwidthGBps(), 1720.5);
        QCOMPARE(g.fp32Gflops(), 19100.0);
        QCOMPARE(findRoof(g, Roof::Kind::Tf32Tensor, Roof::Origin::Measured)->value, 140000.0);
        QCOMPARE(findRoof(g, Roof::Kind::Bf16Tensor, Roof::Origin::Measured)->value, 280000.0);
        QCOMPARE(findRoof(g, Roof::Kind::Memory, Roof::Origin::Theoretical)->value, 2039.0);
        // GA100 has 64 FP32 lanes per SM.
        QVERIFY(qFuzzyCompare(findRoof(g, Roof::Kind::Fp32, Roof::Origin::Theoretical)->value, 108 * 64 * 2 * 1.41));
    }

    void withoutCeilingsTheTheoreticalRoofsArePrimary()
    {
        QJsonObject device = loadChartData(QStringLiteral("device_h200.json"));
        device.remove(QStringLiteral("ceilings"));
        const GpuRoofs g = fromDeviceResponse(device);
        QVERIFY(g.isValid());
        QCOMPARE(g.primaryMemory()->origin, Roof::Origin::Theoretical);
        QVERIFY(qFuzzyCompare(g.bandwidthGBps(), 4814.304));
        QCOMPARE(g.primaryFp32()->origin, Roof::Origin::Theoretical);
        QVERIFY(!g.citation.contains(QLatin1String("measured")));
    }

    void failedCeilingsAreLeftOut()
    {
        QJsonObject device = loadChartData(QStringLiteral("device_h200.json"));
        QJsonObject ceilings = device.value(QStringLiteral("ceilings")).toObject();
        ceilings.insert(QStringLiteral("fp32_fma"),
                        QJsonObject{{QStringLiteral("error"), QStringLiteral("no driver")}});
        ceilings.insert(QStringLiteral("tensor_tf32"), QJsonObject{{QStringLiteral("available"), false},
                                                                   {QStringLiteral("reason"), QStringLiteral("x")}});
        device.insert(QStringLiteral("ceilings"), ceilings);
        const GpuRoofs g = fromDeviceResponse(device);
        QCOMPARE(g.primaryFp32()->origin, Roof::Origin::Theoretical);
        QVERIFY(g.roofsOf(Roof::Kind::Tf32Tensor).isEmpty());
        QCOMPARE(g.primaryMemory()->origin, Roof::Origin::Measured);
    }

    void noGpu()
    {
        const GpuRoofs g = fromDeviceResponse(QJsonObject{
            {QStringLiteral("available"), false}, {QStringLiteral("reason"), QStringLiteral("no CUDA device")}});
        QVERIFY(!g.isValid());
        QVERIFY(g.roofs.isEmpty());
        QVERIFY(g.citation.contains(QLatin1String("no CUDA device")));
        QCOMPARE(g.bandwidthGBps(), 0.0);
        QVERIFY(std::isnan(g.attainableGflops(1.0)));
    }

    void lanesPerSm()
    {
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("7.0")), 64);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("8.0")), 64);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("8.6")), 128);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("8.9")), 128);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("9.0")), 128);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("6.1")), 0);
        QCOMPARE(fp32FmaLanesPerSm(QStringLiteral("sm_90")), 0);
        QCOMPARE(fp32FmaLanesPerSm(QString()), 0);
    }
};

QTEST_GUILESS_MAIN(TestGpuTable)
#include "tst_gputable.moc"
