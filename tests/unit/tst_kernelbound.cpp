// The one definition of intensity, bound and the library + epilogue traffic
// (core/tasks/kernelbound.h), checked by hand on three analysed tasks (the analyze responses in
// tests/app/charts/data; FLOPs and bytes as in docs/kernelbench-tasks.md).

#include "core/protocol/evaluationresult.h"
#include "core/tasks/gputable.h"
#include "core/tasks/kernelbound.h"

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

} // namespace

class TstKernelBound : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void boundAtTheRidge()
    {
        QCOMPARE(boundAt(9.99, 10.0), Bound::Memory);
        QCOMPARE(boundAt(10.0, 10.0), Bound::Compute); // at the ridge: compute
        QCOMPARE(boundAt(0.0, 10.0), Bound::Memory);   // a copy: no FLOPs at all
        QCOMPARE(boundAt(-1.0, 10.0), Bound::Unknown);
        QCOMPARE(boundAt(std::nan(""), 10.0), Bound::Unknown);
        QCOMPARE(boundAt(5.0, std::nan("")), Bound::Unknown);
        QVERIFY(std::isnan(ridgeIntensity(1000.0, 0.0)));
        // V100 SXM2: 15.7 TFLOP/s FP32 / 900 GB/s = 17.44 FLOP/B; the table's roofs agree.
        QCOMPARE(ridgeIntensity(15700.0, 900.0), 15700.0 / 900.0);
        const GpuRoofs* v100 = findGpu(QStringLiteral("v100-sxm2-32gb"));
        QVERIFY(v100);
        QCOMPARE(v100->fp32RidgeIntensity(), ridgeIntensity(v100->fp32Gflops(), v100->bandwidthGBps()));
    }

    // L2/2: conv_transpose2d (2 684 502 272 B) then add(bias [64,1,1]), clamp, mul, clamp, div on
    // [128,64,256,256] fp32 (2 147 483 648 B each).
    void l2_2ByHand()
    {
        const AnalyzeResult a = load(QStringLiteral("analyze_L2_2.json"));
        const TrafficModel m = trafficModel(a);
        QCOMPARE(m.unfusedBytes, 24159339008.0);
        QCOMPARE(m.oneKernelBytes, 2684502528.0);
        QVERIFY(m.libraryEpilogueBytes);
        // conv_transpose's own traffic + the epilogue reading its output and the 64 bias floats
        // once and writing the task's output once.
        const double out = 128.0 * 64 * 256 * 256 * 4;
        QCOMPARE(*m.libraryEpilogueBytes, 2684502272.0 + out + 64 * 4 + out);
        QCOMPARE(m.libraryOps, 1);
        QCOMPARE(m.fusedPasses, 1);
        // Intensities: 157 840 048 128 FLOP over each.
        QCOMPARE(m.intensity(IntensityBasis::EagerUnfused), 157840048128.0 / 24159339008.0); // 6.53
        QCOMPARE(m.intensity(IntensityBasis::OneKernel), 157840048128.0 / 2684502528.0);     // 58.8
        // On the V100 (ridge 17.4): the task is compute-bound (one kernel, 58.8), whichever page asks;
        // its eager reference runs at 6.53, below the ridge.
        const double ridge = findGpu(QStringLiteral("v100-sxm2-32gb"))->fp32RidgeIntensity();
        QCOMPARE(taskBound(a, ridge), Bound::Compute);
        QCOMPARE(boundAt(m.intensity(IntensityBasis::EagerUnfused), ridge), Bound::Memory);
        QVERIFY(taskBoundSentence(a, ridge).startsWith(QStringLiteral("compute-bound: 58.8 FLOP/B (one kernel)")));
    }

    // L2/1: conv2d (1 577 615 872 B) then relu and add(bias [128,1,1]) on [128,128,126,126].
    void l2_1ByHand()
    {
        const TrafficModel m = trafficModel(load(QStringLiteral("analyze_L2_1.json")));
        const double out = 128.0 * 128 * 126 * 126 * 4; // 1 040 449 536
        QCOMPARE(*m.libraryEpilogueBytes, 1577615872.0 + out + 128 * 4 + out);
        QVERIFY(*m.libraryEpilogueBytes < m.unfusedBytes);
        QVERIFY(*m.libraryEpilogueBytes > m.oneKernelBytes);
    }

    // An analysis with an uncounted op: its totals are a lower bound, so no model has an intensity
    // and the task no bound (the roofline draws no point for it).
    void uncountedOpsLeaveNoIntensity()
    {
        AnalyzeResult a = load(QStringLiteral("analyze_L2_1.json"));
        QVERIFY(a.complete());
        QCOMPARE(taskBound(a, 10.0), Bound::Compute);
        a.uncounted.append(UncountedOp{1, QStringLiteral("aten::kthvalue"), 3, QStringLiteral("no rule"), false});
        const TrafficModel m = trafficModel(a);
        QVERIFY(std::isnan(m.intensity(IntensityBasis::OneKernel)));
        QVERIFY(std::isnan(m.intensity(IntensityBasis::EagerUnfused)));
        QVERIFY(std::isnan(m.intensity(IntensityBasis::LibraryEpilogue)));
        QCOMPARE(taskBound(a, 10.0), Bound::Unknown);
    }

    // L3/10 (ResNet-101): 104 convs and one linear as library ops; every run of batch_norm, relu,
    // max_pool, add between them one pass. The model lies between one kernel and unfused.
    void l3_10Chain()
    {
        const AnalyzeResult a = load(QStringLiteral("analyze_L3_10.json"));
        const TrafficModel m = trafficModel(a);
        int library = 0;
        for (const TaskOp& op : a.ops)
            library += isLibraryOp(op) && op.bytes > 0 ? 1 : 0;
        QCOMPARE(m.libraryOps, library);
        QVERIFY(m.fusedPasses > 30);
        QVERIFY(*m.libraryEpilogueBytes < m.unfusedBytes);
        QVERIFY(*m.libraryEpilogueBytes > m.oneKernelBytes);
        // The first pass (batch_norm, relu, max_pool after conv1): reads conv1's output
        // [10,64,112,112] and the four [64] vectors, writes max_pool's [10,64,56,56]; checked
        // through a chain of just the first five ops.
        AnalyzeResult head = a;
        head.ops = a.ops.mid(0, 5);
        head.hasBytesUnfused = false;
        const TrafficModel h = trafficModel(head);
        const double conv1Out = 10.0 * 64 * 112 * 112 * 4;
        const double pooled = 10.0 * 64 * 56 * 56 * 4;
        QCOMPARE(*h.libraryEpilogueBytes, a.ops.at(0).bytes + conv1Out + 4 * 64 * 4 + pooled + a.ops.at(4).bytes);
        QCOMPARE(h.fusedPasses, 1);
        QCOMPARE(h.libraryOps, 2);
    }

    void noLibraryOp()
    {
        AnalyzeResult a;
        a.flops = 100;
        a.bytesFused = 8;
        TaskOp relu;
        relu.op = QStringLiteral("aten::relu");
        relu.category = QStringLiteral("elementwise");
        relu.inputs = {{2}};
        relu.output = {2};
        relu.bytes = 16;
        a.ops = {relu};
        const TrafficModel m = trafficModel(a);
        QVERIFY(!m.libraryEpilogueBytes);
        QCOMPARE(m.unfusedBytes, 16.0);
    }

    void candidateBasisFromKernels()
    {
        EvaluationResult torchOnly;
        torchOnly.customLaunches = 0;
        QCOMPARE(candidateBasis(torchOnly), IntensityBasis::EagerUnfused);
        EvaluationResult epilogue;
        epilogue.customLaunches = 1;
        epilogue.kernels = {KernelLaunch{QStringLiteral("sm90_xmma_fprop"), 1, 1000, false},
                            KernelLaunch{QStringLiteral("bias_relu"), 1, 100, true}};
        QCOMPARE(candidateBasis(epilogue), IntensityBasis::LibraryEpilogue);
        EvaluationResult whole;
        whole.customLaunches = 1;
        whole.kernels = {KernelLaunch{QStringLiteral("fused"), 1, 1000, true}};
        QCOMPARE(candidateBasis(whole), IntensityBasis::OneKernel);
    }

    // issue 39 item 6: time at the bound / measured time, from the evaluation's own floor; none
    // for what does not count as correct or has no floor.
    void boundFractionFromTheStoredFloor()
    {
        const auto evaluation = [](const QString& status, const QJsonObject& roofline, const QJsonArray& flags = {}) {
            QJsonObject response{{QStringLiteral("status"), status}, {QStringLiteral("flags"), flags}};
            if (!roofline.isEmpty())
                response.insert(QStringLiteral("roofline"), roofline);
            return decodeEvaluation(response);
        };
        const QJsonObject floor{{QStringLiteral("floor_ms"), 0.77}, {QStringLiteral("candidate_ms"), 2.2}};
        const auto f = rooflineBoundFraction(evaluation(QStringLiteral("correct"), floor));
        QVERIFY(f);
        QVERIFY(std::abs(*f - 0.35) < 1e-12);
        QCOMPARE(boundFractionText(*f), QStringLiteral("35 % of bound"));
        QCOMPARE(boundFractionText(0.0052), QStringLiteral("0.52 % of bound"));
        QCOMPARE(boundFractionText(0.0404), QStringLiteral("4.0 % of bound")); // not "4", beside a "4.1"
        QVERIFY(!rooflineBoundFraction(evaluation(QStringLiteral("incorrect"), floor)));
        QVERIFY(!rooflineBoundFraction(
            evaluation(QStringLiteral("correct"), floor, QJsonArray{QStringLiteral("below_roofline_floor")})));
        QVERIFY(!rooflineBoundFraction(evaluation(QStringLiteral("correct"), QJsonObject())));
        // On the CPU the worker sends {"floor_ms": null, "reason": …}.
        QVERIFY(!rooflineBoundFraction(
            evaluation(QStringLiteral("correct"), QJsonObject{{QStringLiteral("floor_ms"), QJsonValue()},
                                                              {QStringLiteral("reason"), QStringLiteral("no GPU")}})));
    }
};

QTEST_GUILESS_MAIN(TstKernelBound)
#include "tst_kernelbound.moc"
