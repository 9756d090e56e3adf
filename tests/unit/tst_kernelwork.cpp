// Issue 40 items 2-4: `launches` decoded once (grid, block, registers, shared memory, occupancy)
// and put in words; each kernel of a candidate placed by the work it did (kernelwork.h), its
// achieved bandwidth and FLOP/s against the evaluation's own peaks, and the one-line reading a
// roofline point opens to.
#include "core/protocol/evaluationresult.h"
#include "core/protocol/kernellaunches.h"
#include "core/protocol/workerresponses.h"
#include "core/tasks/kernelwork.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <cmath>

using namespace kwb;

namespace {

AnalyzeResult load(const QString& name)
{
    QFile f(QStringLiteral(KWB_CHARTS_DATA "/") + name);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot open %s", qPrintable(f.fileName()));
    return decodeAnalyze(QJsonDocument::fromJson(f.readAll()).object());
}

QJsonObject launch(const QString& name, bool custom, double ns, int block, const QJsonObject& occupancy)
{
    return QJsonObject{{QStringLiteral("name"), name},
                       {QStringLiteral("custom"), custom},
                       {QStringLiteral("calls"), 1},
                       {QStringLiteral("time_ns"), ns},
                       {QStringLiteral("grid"), QJsonArray{63504, 1, 1}},
                       {QStringLiteral("block"), QJsonArray{block, 1, 1}},
                       {QStringLiteral("registers"), 16},
                       {QStringLiteral("static_shared_bytes"), 0},
                       {QStringLiteral("dynamic_shared_bytes"), 0},
                       {QStringLiteral("local_bytes"), 0},
                       {QStringLiteral("occupancy"), occupancy}};
}

QJsonObject fullOccupancy()
{
    return QJsonObject{
        {QStringLiteral("active_blocks_per_sm"), 8},
        {QStringLiteral("active_warps_per_sm"), 64},
        {QStringLiteral("max_warps_per_sm"), 64},
        {QStringLiteral("fraction"), 1.0},
        {QStringLiteral("limited_by"), QJsonArray{QStringLiteral("registers"), QStringLiteral("warps")}}};
}

// The L2/1 reference as an H200 evaluates it: cuDNN's conv (two kernels) and the candidate's
// relu_bias_add epilogue, with the evaluation's roofline peaks.
QJsonObject l21Evaluation(double epilogueNs, bool measured = false)
{
    QJsonObject r{{QStringLiteral("status"), QStringLiteral("correct")},
                  {QStringLiteral("custom_launches"), 1},
                  {QStringLiteral("kernels"),
                   QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("sm90_xmma_fprop_implicit_gemm")},
                                          {QStringLiteral("calls"), 1},
                                          {QStringLiteral("time_ns"), 3000000},
                                          {QStringLiteral("custom"), false}},
                              QJsonObject{{QStringLiteral("name"), QStringLiteral("cudnn_nchw_to_nhwc")},
                                          {QStringLiteral("calls"), 1},
                                          {QStringLiteral("time_ns"), 100000},
                                          {QStringLiteral("custom"), false}},
                              QJsonObject{{QStringLiteral("name"), QStringLiteral("relu_bias_add")},
                                          {QStringLiteral("calls"), 1},
                                          {QStringLiteral("time_ns"), epilogueNs},
                                          {QStringLiteral("custom"), true}}}},
                  {QStringLiteral("launches"),
                   QJsonArray{launch(QStringLiteral("relu_bias_add"), true, epilogueNs, 256, fullOccupancy())}},
                  {QStringLiteral("roofline"),
                   QJsonObject{{QStringLiteral("memory_gbps"), 4800.0},
                               {QStringLiteral("compute_gflops"), 178421.8},
                               {QStringLiteral("compute_kind"), QStringLiteral("fp32_3xtf32")},
                               {QStringLiteral("ceiling_source"),
                                QJsonObject{{QStringLiteral("compute"), QStringLiteral("theoretical")},
                                            {QStringLiteral("memory"), QStringLiteral("measured")}}}}}};
    if (measured)
        r.insert(QStringLiteral("traffic"),
                 QJsonObject{{QStringLiteral("profiled"), true},
                             {QStringLiteral("dram_bytes"), 5.76e9},
                             {QStringLiteral("method"), QStringLiteral("cupti_range_profiler")}});
    return r;
}

} // namespace

class TstKernelWork : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void launchesDecodeOnce()
    {
        QJsonObject r = l21Evaluation(520000);
        r.insert(QStringLiteral("launches_omitted"), 3);
        const EvaluationResult e = decodeEvaluation(r);
        QCOMPARE(e.launchesOmitted, 3);
        QCOMPARE(e.launches.size(), 1);
        const KernelLaunchConfig& k = e.launches.front();
        QCOMPARE(k.name, QStringLiteral("relu_bias_add"));
        QVERIFY(k.custom);
        QCOMPARE(k.blocks(), qint64(63504));
        QCOMPARE(k.threadsPerBlock(), qint64(256));
        QCOMPARE(k.registers.value_or(-1), 16);
        QVERIFY(k.occupancy && k.occupancy->error.isEmpty());
        QCOMPARE(k.occupancy->activeBlocksPerSm, 8);
        QCOMPARE(k.occupancy->limitedBy, (QStringList{QStringLiteral("registers"), QStringLiteral("warps")}));
        QCOMPARE(launchReading(k),
                 QStringLiteral("grid 63504\u00d71\u00d71 of 256 threads, 16 registers, no shared memory: 100 % "
                                "theoretical occupancy, 8 blocks per SM (limited by registers and warps); 1 call, "
                                "520.0 \u00b5s"));
        QCOMPARE(occupancyText(k.occupancy), QStringLiteral("100 % (8 blocks/SM, limited by registers and warps)"));
        QCOMPARE(occupancyText(std::nullopt), QStringLiteral("\u2014"));
        // An older worker, or a CPU evaluation: none.
        QVERIFY(
            decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}}).launches.isEmpty());
    }

    void occupancyTheWorkerCouldNotComputeSaysWhy()
    {
        QJsonObject r = l21Evaluation(520000);
        QJsonObject bad = launch(QStringLiteral("k"), true, 10, 128,
                                 QJsonObject{{QStringLiteral("error"), QStringLiteral("no current CUDA device")}});
        QJsonObject nonsense = launch(QStringLiteral("j"), true, 10, 128,
                                      QJsonObject{{QStringLiteral("active_blocks_per_sm"), 4},
                                                  {QStringLiteral("max_warps_per_sm"), 64},
                                                  {QStringLiteral("fraction"), 1.5}});
        bad.insert(QStringLiteral("dynamic_shared_bytes"), 49152);
        r.insert(QStringLiteral("launches"), QJsonArray{bad, nonsense});
        const EvaluationResult e = decodeEvaluation(r);
        QCOMPARE(e.launches.size(), 2);
        QCOMPARE(e.launches[0].occupancy->error, QStringLiteral("no current CUDA device"));
        QVERIFY(launchReading(e.launches[0])
                    .contains(QStringLiteral("48 KiB shared (dynamic): occupancy unknown (no "
                                             "current CUDA device)")));
        QCOMPARE(e.launches[1].occupancy->error, QStringLiteral("malformed occupancy record"));
    }

    void launchesOfACompiledKernel()
    {
        const EvaluationResult e = decodeEvaluation(l21Evaluation(520000));
        KernelFactsInfo facts;
        facts.name = QStringLiteral("relu_bias_add");
        QCOMPARE(launchesOf(e.launches, facts).size(), 1);
        facts.name = QStringLiteral("_Z2tkILi64EEvPf");
        QVERIFY(launchesOf(e.launches, facts).isEmpty());
        facts.demangled = QStringLiteral("relu_bias_add"); // traced by its demangled name
        QCOMPARE(launchesOf(e.launches, facts).size(), 1);
    }

    // L2/1: conv2d (1 577 615 872 B, 299 909 578 752 FLOP) then relu and add(bias) on
    // [128,128,126,126]: the library kernels did the conv, the epilogue read the conv's output and
    // the 128 biases and wrote the result (2 080 899 584 B, 520 224 768 FLOP).
    void l21EpilogueBesideTheLibrary()
    {
        const AnalyzeResult a = load(QStringLiteral("analyze_L2_1.json"));
        const EvaluationResult e = decodeEvaluation(l21Evaluation(520000));
        const KernelPlacement p = kernelPlacement(a, e);
        QVERIFY2(p.reason.isEmpty(), qPrintable(p.reason));
        QCOMPARE(p.kernels.size(), 2);
        const KernelWork& lib = p.kernels[0];
        QCOMPARE(lib.label, QStringLiteral("library kernels (2)"));
        QVERIFY(!lib.custom);
        QCOMPARE(lib.ops, QStringLiteral("conv2d"));
        QCOMPARE(lib.timeNs, 3100000.0);
        QCOMPARE(lib.bytes, 1577615872.0);
        QCOMPARE(lib.flops, 299909578752.0);
        const KernelWork& mine = p.kernels[1];
        QCOMPARE(mine.label, QStringLiteral("relu_bias_add"));
        QVERIFY(mine.custom);
        QCOMPARE(mine.ops, QStringLiteral("relu, add"));
        QCOMPARE(mine.basis, IntensityBasis::LibraryEpilogue);
        const double out = 128.0 * 128 * 126 * 126 * 4;
        QCOMPARE(mine.bytes, out + 128 * 4 + out);
        QCOMPARE(mine.flops, 300429803520.0 - 299909578752.0);
        QVERIFY(std::abs(mine.achievedGBps() - mine.bytes / 520000.0) < 1e-9);

        // 2 080 899 584 B in 520 µs: 4.0 TB/s, 83 % of 4.8 TB/s; the conv at 96.7 TFLOP/s is compute-bound.
        const RooflinePeaks peaks = rooflinePeaks(e);
        QCOMPARE(peaks.memoryGBps, 4800.0);
        QCOMPARE(achievedText(mine, peaks),
                 QStringLiteral("memory-bound: 83 % of HBM bandwidth (4.00 TB/s of 4.80 TB/s measured; library op + "
                                "fused epilogue, analytic)"));
        QVERIFY(achievedText(lib, peaks)
                    .startsWith(QStringLiteral("compute-bound: 54 % of the compute peak (96.7 "
                                               "TFLOP/s of 178 TFLOP/s theoretical, fp32_3xtf32")));
        // The one line a roofline point opens to: achieved, spills from the facts, occupancy as launched.
        KernelFactsInfo facts;
        facts.name = QStringLiteral("relu_bias_add");
        facts.spillStoreBytes = 4;
        QCOMPARE(kernelWorkReading(mine, peaks, &facts, &e.launches.front()),
                 achievedText(mine, peaks) + QStringLiteral("; 4 B spilled per thread; 100 % occupancy"));
        facts.spillStoreBytes = 0;
        QVERIFY(kernelWorkReading(mine, peaks, &facts, nullptr).endsWith(QStringLiteral("; no spills")));
        // Without the evaluation's peaks (a CPU evaluation) no achieved fraction is claimed.
        QVERIFY(achievedText(mine, RooflinePeaks{}).isEmpty());
    }

    void oneKernelDoesTheWholeTaskMeasuredWhereProfiled()
    {
        const AnalyzeResult a = load(QStringLiteral("analyze_L2_1.json"));
        QJsonObject r = l21Evaluation(2000000, true);
        r.insert(QStringLiteral("kernels"), QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("fused")},
                                                                   {QStringLiteral("calls"), 1},
                                                                   {QStringLiteral("time_ns"), 2000000},
                                                                   {QStringLiteral("custom"), true}}});
        KernelPlacement p = kernelPlacement(a, decodeEvaluation(r));
        QCOMPARE(p.kernels.size(), 1);
        QCOMPARE(p.kernels[0].basis, IntensityBasis::Measured);
        QCOMPARE(p.kernels[0].bytes, 5.76e9);
        QCOMPARE(p.kernels[0].flops, 300429803520.0);
        QCOMPARE(p.kernels[0].ops, QStringLiteral("conv2d, relu, add"));
        QVERIFY(achievedText(p.kernels[0], rooflinePeaks(decodeEvaluation(r))).endsWith(QStringLiteral("; measured)")));
        r.remove(QStringLiteral("traffic"));
        p = kernelPlacement(a, decodeEvaluation(r));
        QCOMPARE(p.kernels[0].basis, IntensityBasis::OneKernel);
        QCOMPARE(p.kernels[0].bytes, 1577616384.0); // bytes_fused: the least it can move
    }

    void eachKernelsCountedBytesPlaceTheLibraryAndTheEpilogue()
    {
        // `traffic.per_kernel` (CUPTI's auto ranges): what cuDNN's kernels and the epilogue each
        // moved. The FLOPs stay the model's split; the bytes become the counted ones, the writes
        // left in the L2 after the call going with the epilogue, which launched last.
        const AnalyzeResult a = load(QStringLiteral("analyze_L2_1.json"));
        QJsonObject r = l21Evaluation(520000, true);
        const auto kernel = [](const char* name, double read, double write) {
            return QJsonObject{{QStringLiteral("name"), QLatin1String(name)},
                               {QStringLiteral("calls"), 1},
                               {QStringLiteral("dram_read_bytes"), read},
                               {QStringLiteral("dram_write_bytes"), write}};
        };
        QJsonObject epilogue = kernel("relu_bias_add", 1.04e9, 0.45e9);
        epilogue.insert(QStringLiteral("written_back_after_bytes"), 0.06e9);
        QJsonObject traffic = r.value(QStringLiteral("traffic")).toObject();
        traffic.insert(QStringLiteral("per_kernel"),
                       QJsonObject{{QStringLiteral("profiled"), true},
                                   {QStringLiteral("method"), QStringLiteral("cupti_auto_range")},
                                   {QStringLiteral("replay"), QStringLiteral("user")},
                                   {QStringLiteral("passes"), 1},
                                   {QStringLiteral("kernels"),
                                    QJsonArray{kernel("cudnn_nchw_to_nhwc", 0.27e9, 0.27e9),
                                               kernel("sm90_xmma_fprop_implicit_gemm", 1.30e9, 1.04e9), epilogue}}});
        r.insert(QStringLiteral("traffic"), traffic);
        const EvaluationResult e = decodeEvaluation(r);
        QVERIFY(e.traffic && e.traffic->profiled);
        QVERIFY2(e.traffic->perKernelReason.isEmpty(), qPrintable(e.traffic->perKernelReason));
        QCOMPARE(e.traffic->perKernel.size(), 3);
        QCOMPARE(e.traffic->perKernelReplay, QStringLiteral("user"));
        KernelPlacement p = kernelPlacement(a, e);
        QCOMPARE(p.kernels.size(), 2);
        QCOMPARE(p.kernels[0].basis, IntensityBasis::Measured);
        QCOMPARE(p.kernels[0].bytes, 0.27e9 + 0.27e9 + 1.30e9 + 1.04e9);
        QCOMPARE(p.kernels[0].flops, 299909578752.0);
        QCOMPARE(p.kernels[1].basis, IntensityBasis::Measured);
        QCOMPARE(p.kernels[1].bytes, 1.04e9 + 0.45e9 + 0.06e9);
        QVERIFY(achievedText(p.kernels[1], rooflinePeaks(e)).endsWith(QStringLiteral("; measured)")));

        // Every kernel's own reading, longest-running first, with its bandwidth against the peak.
        const QList<KernelTrafficReading> readings = kernelTrafficReadings(e);
        QCOMPARE(readings.size(), 3);
        QCOMPARE(readings[0].traffic.name, QStringLiteral("sm90_xmma_fprop_implicit_gemm"));
        QVERIFY(!readings[0].custom);
        QCOMPARE(readings[2].traffic.name, QStringLiteral("cudnn_nchw_to_nhwc"));
        QCOMPARE(readings[1].traffic.name, QStringLiteral("relu_bias_add"));
        QVERIFY(readings[1].custom);
        // 1.55 GB in 520 us: 2.98 TB/s, 62 % of 4.8 TB/s.
        QCOMPARE(readings[1].text, QStringLiteral("1.04 GB read, 0.45 GB written + 0.06 GB written back after the "
                                                  "call in 520 us: 2.98 TB/s, 62 % of HBM bandwidth (measured)"));

        // A kernel the profile did not count on its own leaves both sides to the model.
        traffic.insert(QStringLiteral("per_kernel"),
                       QJsonObject{{QStringLiteral("profiled"), true},
                                   {QStringLiteral("kernels"),
                                    QJsonArray{kernel("sm90_xmma_fprop_implicit_gemm", 1.30e9, 1.04e9), epilogue}}});
        r.insert(QStringLiteral("traffic"), traffic);
        p = kernelPlacement(a, decodeEvaluation(r));
        QCOMPARE(p.kernels[0].basis, IntensityBasis::LibraryEpilogue);
        QCOMPARE(p.kernels[1].basis, IntensityBasis::LibraryEpilogue);
        QCOMPARE(p.kernels[1].bytes, 128.0 * 128 * 126 * 126 * 4 * 2 + 128 * 4);

        // Malformed per-kernel records say why and leave the whole call's profile standing.
        for (const QJsonObject& bad :
             {QJsonObject{{QStringLiteral("profiled"), true}, {QStringLiteral("kernel"), QJsonArray{}}},
              QJsonObject{{QStringLiteral("profiled"), true},
                          {QStringLiteral("kernels"), QJsonArray{kernel("k", -1, 0)}}},
              QJsonObject{{QStringLiteral("profiled"), true},
                          {QStringLiteral("kernels"), QJsonArray{kernel("k", 1, 0), kernel("k", 1, 0)}}},
              QJsonObject{{QStringLiteral("profiled"), true}, {QStringLiteral("kernels"), QJsonArray{}}}}) {
            traffic.insert(QStringLiteral("per_kernel"), bad);
            r.insert(QStringLiteral("traffic"), traffic);
            const EvaluationResult m = decodeEvaluation(r);
            QVERIFY(m.measuredDramBytes());
            QVERIFY(m.traffic->perKernel.isEmpty());
            QVERIFY2(m.traffic->perKernelReason.startsWith(QLatin1String("malformed per-kernel traffic record")),
                     qPrintable(m.traffic->perKernelReason));
            QVERIFY(kernelTrafficReadings(m).isEmpty());
        }
        traffic.insert(QStringLiteral("per_kernel"),
                       QJsonObject{{QStringLiteral("profiled"), false},
                                   {QStringLiteral("reason"), QStringLiteral("2000 kernel launches in one call")}});
        r.insert(QStringLiteral("traffic"), traffic);
        QCOMPARE(decodeEvaluation(r).traffic->perKernelReason, QStringLiteral("2000 kernel launches in one call"));
    }

    void noPlacementWithoutAnUnambiguousMapping()
    {
        const AnalyzeResult a = load(QStringLiteral("analyze_L2_1.json"));
        QJsonObject r = l21Evaluation(520000);
        QJsonArray kernels = r.value(QStringLiteral("kernels")).toArray();
        kernels.append(QJsonObject{{QStringLiteral("name"), QStringLiteral("second_own")},
                                   {QStringLiteral("calls"), 1},
                                   {QStringLiteral("time_ns"), 10},
                                   {QStringLiteral("custom"), true}});
        r.insert(QStringLiteral("kernels"), kernels);
        KernelPlacement p = kernelPlacement(a, decodeEvaluation(r));
        QVERIFY(p.kernels.isEmpty());
        QVERIFY(p.reason.contains(QStringLiteral("2 kernels of its own")));
        // torch only
        r.insert(QStringLiteral("kernels"), QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("x")},
                                                                   {QStringLiteral("calls"), 1},
                                                                   {QStringLiteral("time_ns"), 10},
                                                                   {QStringLiteral("custom"), false}}});
        QVERIFY(kernelPlacement(a, decodeEvaluation(r)).reason.contains(QStringLiteral("no kernel of its own")));
        // no trace
        QVERIFY(kernelPlacement(a, decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}}))
                    .reason.contains(QStringLiteral("no kernel trace")));
        // an analysis that does not count every op
        AnalyzeResult partial = a;
        partial.uncounted.append(UncountedOp{1, QStringLiteral("aten::kthvalue"), 3, QStringLiteral("no rule"), false});
        QVERIFY(!kernelPlacement(partial, decodeEvaluation(l21Evaluation(1))).reason.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TstKernelWork)
#include "tst_kernelwork.moc"
