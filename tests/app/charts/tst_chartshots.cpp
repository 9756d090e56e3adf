// Screenshot tests of the two charts issue 15 found broken, each checked for its defect on the
// chart's own model, then grabbed (PNG beside the test, and into $KWB_SCREENSHOTS_DIR when set;
// docs/screenshots is the window's own --screenshots on the study database):
// - the roofline with the V100 chosen while the times come from an H200 run database: no
//   measured H200 point may be drawn against the V100's roofs, and every marker is at or below
//   the V100's roofline;
// - the HBM traffic of L3/10 (ResNet-101, 345 ops): the unfused, library + epilogue and
//   one-kernel totals side by side with their ratios, the one kernel never taller than unfused,
//   drawn as a bound (hatched, dashed, "bound"), each total as time at the H200's bandwidth;
// - the HBM traffic of L2/1 with its times at the H200's bandwidth, its one kernel a solid bar;
// - all of KernelBench's analysed tasks on the V100's roofs (issue 37 item 5): every one placed,
//   small half-transparent markers, labels that do not overlap, one task selected;
// - L2/1's best candidate's kernels on the H200, one clicked, with its reading (issue 40).

#include "chartstestdata.h"

#include "app/charts/chartformat.h"
#include "app/charts/rooflinekernels.h"
#include "app/charts/rooflinepage.h"
#include "app/charts/trafficchart.h"
#include "core/protocol/evaluationresult.h"
#include "core/protocol/workerresponses.h"
#include "core/tasks/kernelbound.h"

#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QTest>
#include <QXYSeries>

using namespace kwb;
using namespace kwb::app;

namespace {

/// A task measured on the H200: eager and best-candidate times as a run database gives them
/// (fixture inputs), placed as workbenchdata's rooflinePoints() places them.
RooflinePoint measured(const QString& file, int level, double eagerMs, std::optional<double> candidateMs,
                       IntensityBasis basis)
{
    const AnalyzeResult a = decodeAnalyze(loadChartData(file));
    const TrafficModel m = trafficModel(a);
    RooflinePoint p;
    p.task = a.task;
    p.level = level;
    p.measuredOn = QStringLiteral("NVIDIA H200");
    p.intensity = m.intensity(IntensityBasis::EagerUnfused);
    p.oneKernelIntensity = m.intensity(IntensityBasis::OneKernel);
    p.referenceGflops = m.flops / (eagerMs * 1e-3) / 1e9;
    if (candidateMs) {
        p.candidateGflops = m.flops / (*candidateMs * 1e-3) / 1e9;
        p.candidateIntensity = m.intensity(basis);
        p.candidateBasis = basis;
    }
    return p;
}

QList<RooflinePoint> h200Points()
{
    RooflinePoint l21 = measured(QStringLiteral("analyze_L2_1.json"), 2, 9.11, 8.51, IntensityBasis::LibraryEpilogue);
    // A memoising candidate's impossible time on L2/1: not counted.
    l21.notCountedGflops = l21.referenceGflops * 20;
    l21.notCountedWhy = QStringLiteral("measured 0.456 ms is below the roofline floor 4.49 ms");
    return {l21, measured(QStringLiteral("analyze_L2_2.json"), 2, 6.2, 2.9, IntensityBasis::LibraryEpilogue),
            measured(QStringLiteral("analyze_L3_10.json"), 3, 14.0, std::nullopt, IntensityBasis::EagerUnfused)};
}

/// Every task of kernelbench_totals.json with an analysis, as a point measured on the H200 and
/// drawn on another GPU's roofs, where only its intensity places it (its H200 time is never drawn
/// there: RooflineChart places it on that GPU's roof).
QList<RooflinePoint> kernelBenchPoints(int* withoutAnalysis)
{
    QFile f(QStringLiteral(KWB_CHARTS_DATA "/kernelbench_totals.json"));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot open kernelbench_totals.json");
    const GpuRoofs h200 = *findGpu(QStringLiteral("h200-sxm-141gb"));
    QList<RooflinePoint> points;
    *withoutAnalysis = 0;
    for (const QJsonValue& v : QJsonDocument::fromJson(f.readAll()).array()) {
        const QJsonObject o = v.toObject();
        if (o.contains(QLatin1String("error")) || o.value(QLatin1String("uncounted")).toInt() > 0) {
            ++*withoutAnalysis;
            continue;
        }
        RooflinePoint p;
        p.task = o.value(QLatin1String("task")).toString();
        p.level = p.task.mid(1, 1).toInt();
        const double flops = o.value(QLatin1String("flops")).toDouble();
        p.intensity = flops / o.value(QLatin1String("bytes_unfused")).toDouble();
        p.oneKernelIntensity = flops / o.value(QLatin1String("bytes_fused")).toDouble();
        p.measuredOn = h200.name;
        // Half of what the H200's roofs allow: a stand-in for its time there, not drawn on the V100.
        p.referenceGflops = h200.attainableGflops(p.intensity) / 2;
        points.append(p);
    }
    return points;
}

QImage grabAndSave(QWidget* w, const QString& name, QSize size)
{
    w->resize(size);
    w->show();
    if (!QTest::qWaitForWindowExposed(w))
        return QImage();
    QTest::qWait(50);
    const QImage image = w->grab().toImage();
    image.save(QDir(QCoreApplication::applicationDirPath()).filePath(name));
    const QString dir = qEnvironmentVariable("KWB_SCREENSHOTS_DIR");
    if (!dir.isEmpty())
        image.save(QDir(dir).filePath(name));
    return image;
}

} // namespace

class TestChartShots : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void v100RooflineWithH200Times()
    {
        RooflinePage page;
        page.setCurrentDevice(kwb::decodeDeviceFacts(loadChartData(QStringLiteral("device_h200.json"))),
                              QStringLiteral("Run database"));
        page.setPoints(h200Points());
        QVERIFY(page.selectGpu(QStringLiteral("v100-sxm2-32gb")));
        RooflineChart* chart = page.chart();
        const GpuRoofs& v100 = chart->roofs();
        QCOMPARE(v100.name, QStringLiteral("NVIDIA V100 SXM2 32GB"));

        // The defect: H200 times drawn above the V100's roofs. Now no marker is measured, none is
        // a not-counted star, and each sits on the V100's roofline at its own intensity.
        QCOMPARE(chart->markers().size(), 5); // three references, two candidates
        for (const RooflineMarker& m : chart->markers()) {
            QVERIFY(!m.measured);
            QVERIFY(m.role != RooflineMarker::Role::NotCounted);
            QVERIFY2(m.at.y() <= v100.attainableGflops(m.at.x()) * (1 + 1e-9),
                     qPrintable(QStringLiteral("%1 above the roof").arg(m.at.y())));
        }
        QVERIFY(chart->chart()->title().contains(QLatin1String("NVIDIA H200 are not drawn")));
        // The help text names what is drawn: the dashed tensor-core roofs of this GPU and the
        // analytic placement.
        QVERIFY2(page.helpText().contains(QLatin1String("tensor-core roofs")), qPrintable(page.helpText()));
        QVERIFY(page.helpText().contains(QLatin1String("analytic")));

        const QImage image = grabAndSave(&page, QStringLiteral("06-roofline-v100.png"), QSize(1280, 720));
        QVERIFY(!image.isNull());
        // On screen too: every marker's pixel lies on or under the FP32/memory roof's pixel.
        for (int m = 0; m < chart->markers().size(); ++m) {
            const RooflineMarker& mk = chart->markers().at(m);
            QVERIFY(chart->markerAt(chart->viewportPosition(mk.point, mk.role == RooflineMarker::Role::Candidate)) >=
                    0);
        }

        // Back on the GPU the times were measured on: measured markers, the star among them.
        QVERIFY(page.selectGpu(QStringLiteral("current")));
        int measuredMarkers = 0, stars = 0;
        for (const RooflineMarker& m : chart->markers()) {
            measuredMarkers += m.measured ? 1 : 0;
            stars += m.role == RooflineMarker::Role::NotCounted ? 1 : 0;
        }
        QCOMPARE(measuredMarkers, 6);
        QCOMPARE(stars, 1);
        for (const RooflineMarker& m : chart->markers())
            if (m.role != RooflineMarker::Role::NotCounted)
                QVERIFY(m.at.y() <= chart->roofs().attainableGflops(m.at.x()));
        QVERIFY(!grabAndSave(&page, QStringLiteral("06-roofline-h200.png"), QSize(1280, 720)).isNull());
    }

    // Issue 40 items 3-5: L2/1 on the H200 it was timed on, its best candidate's kernels placed
    // one by one from the recorded H200 evaluation of the reference (cuDNN's conv and torch's bias
    // add together as the library's kernels, the candidate's relu_bias_add epilogue by itself),
    // the epilogue clicked: memory-bound, left of the ridge and under the memory roof, with its
    // reading under the chart; the library's kernels right of the ridge.
    void h200KernelsOfL2_1()
    {
        QFile f(QStringLiteral(KWB_SOURCE_DIR "/tests/protocol/recorded/evaluate_correct.h200.response.json"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const EvaluationResult e = decodeEvaluation(QJsonDocument::fromJson(f.readAll()).object());
        QList<RooflinePoint> points = h200Points();
        QString why;
        points[0].kernels = rooflineKernels(decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))), e, &why);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QCOMPARE(points[0].kernels.size(), 2);
        RooflinePage page;
        page.setCurrentDevice(kwb::decodeDeviceFacts(loadChartData(QStringLiteral("device_h200.json"))),
                              QStringLiteral("Run database"));
        page.setPoints(points);
        QVERIFY(page.selectGpu(QStringLiteral("current")));
        page.resize(1280, 720); // laid out as grabbed, so a click lands where the marker is drawn
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        RooflineChart* chart = page.chart();
        QVERIFY(page.helpText().contains(QLatin1String("purple pentagons")));
        chart->selectTask(QStringLiteral("L2/1"));
        const double ridge = chart->roofs().fp32RidgeIntensity();
        int epilogue = -1, library = -1;
        for (int m = 0; m < chart->markers().size(); ++m) {
            const RooflineMarker& mk = chart->markers().at(m);
            if (mk.role != RooflineMarker::Role::Kernel)
                continue;
            QVERIFY(mk.measured);
            QVERIFY2(mk.at.y() <= chart->roofs().attainableGflops(mk.at.x()),
                     qPrintable(QStringLiteral("%1 above the roof").arg(mk.at.y())));
            (points[0].kernels.at(mk.kernel).custom ? epilogue : library) = m;
        }
        QVERIFY(epilogue >= 0 && library >= 0);
        QVERIFY(chart->markers().at(epilogue).at.x() < ridge); // memory-bound
        QVERIFY(chart->markers().at(library).at.x() > ridge);  // the conv: compute-bound
        auto* kernels = qobject_cast<QXYSeries*>([&] {
            for (QAbstractSeries* s : chart->chart()->series())
                if (s->objectName() == QLatin1String("points:kernels"))
                    return s;
            return static_cast<QAbstractSeries*>(nullptr);
        }());
        QVERIFY(kernels);
        const QPoint at = chart->mapFromScene(
            chart->chart()->mapToScene(chart->chart()->mapToPosition(chart->markers().at(epilogue).at, kernels)));
        QTest::mouseClick(chart->viewport(), Qt::LeftButton, {}, at);
        QCOMPARE(chart->selectedKernel(), points[0].kernels.at(0).custom ? 0 : 1);
        // 2 080 899 584 B in the traced 669 888 ns: 3.11 TB/s of the evaluation's 4.81 TB/s.
        QVERIFY2(page.selectionInfo().contains(
                     QStringLiteral("kernel relu_bias_add (relu, add): memory-bound: 65 % of HBM bandwidth (3.11 TB/s "
                                    "of 4.81 TB/s theoretical; library op + fused epilogue, analytic)")),
                 qPrintable(page.selectionInfo()));

        const QImage image = grabAndSave(&page, QStringLiteral("06-roofline-h200-kernels.png"), QSize(1280, 720));
        QVERIFY(!image.isNull());
        // The clicked kernel is painted where the chart places it now (its purple, not the white
        // plot; the reading's longer line under the chart may have moved it since the click).
        const QPoint now = chart->mapFromScene(
            chart->chart()->mapToScene(chart->chart()->mapToPosition(chart->markers().at(epilogue).at, kernels)));
        const QColor c = image.pixelColor(chart->viewport()->mapTo(&page, now));
        QVERIFY2(c.red() < 200 && c.blue() > c.green(), qPrintable(c.name()));

        // Counted per kernel (`traffic.per_kernel`, the H200's numbers for these three kernels,
        // bench/results/2026-12-05-gpu-traffic-per-kernel-h200-session29.md): each side placed by
        // the bytes it moved. The epilogue's 2.117 GB in 669 888 ns are 3.16 TB/s, 66 %; the
        // library's 3.644 GB (the conv and torch's unfused bias add) keep it right of the ridge.
        QJsonObject raw = e.raw;
        const QJsonArray traced = raw.value(QStringLiteral("kernels")).toArray();
        const QList<double> read{0.537e9, 1.040e9, 1.053e9}, written{1.029e9, 1.038e9, 1.047e9};
        QJsonArray perKernel;
        for (int i = 0; i < 3; ++i) {
            QJsonObject k{{QStringLiteral("name"), traced.at(i).toObject().value(QStringLiteral("name"))},
                          {QStringLiteral("calls"), 1},
                          {QStringLiteral("dram_read_bytes"), read.at(i)},
                          {QStringLiteral("dram_write_bytes"), written.at(i)}};
            if (i == 2)
                k.insert(QStringLiteral("written_back_after_bytes"), 1.7e7);
            perKernel.append(k);
        }
        QCOMPARE(traced.at(2).toObject().value(QStringLiteral("name")).toString(), QStringLiteral("relu_bias_add"));
        raw.insert(QStringLiteral("traffic"),
                   QJsonObject{{QStringLiteral("profiled"), true},
                               {QStringLiteral("dram_bytes"), 5.7615e9},
                               {QStringLiteral("per_kernel"), QJsonObject{{QStringLiteral("profiled"), true},
                                                                          {QStringLiteral("kernels"), perKernel}}}});
        points[0].kernels = rooflineKernels(decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))),
                                            decodeEvaluation(raw), &why);
        QCOMPARE(points[0].kernels.size(), 2);
        for (const RooflineKernel& k : points[0].kernels) {
            QCOMPARE(k.basis, IntensityBasis::Measured);
            QVERIFY2(k.custom ? k.intensity < ridge : k.intensity > ridge, qPrintable(k.label));
            if (k.custom)
                QVERIFY2(k.reading.startsWith(QStringLiteral("memory-bound: 66 % of HBM bandwidth (3.16 TB/s of 4.81 "
                                                             "TB/s theoretical; measured)")),
                         qPrintable(k.reading));
        }
    }

    void kernelBenchOnTheV100()
    {
        int withoutAnalysis = 0;
        const QList<RooflinePoint> points = kernelBenchPoints(&withoutAnalysis);
        QCOMPARE(points.size() + withoutAnalysis, 250);
        QCOMPARE(withoutAnalysis, 37); // KernelBench only: no analysis, no point
        RooflinePage page;
        QVERIFY(page.selectGpu(QStringLiteral("v100-sxm2-32gb")));
        page.setPoints(points);
        RooflineChart* chart = page.chart();
        QCOMPARE(chart->points().size(), 213);
        QCOMPARE(chart->skippedPoints(), 0);
        QCOMPARE(chart->markers().size(), 213);
        const GpuRoofs& v100 = chart->roofs();
        for (const RooflineMarker& m : chart->markers()) {
            QVERIFY(!m.measured);
            QVERIFY(m.at.y() <= v100.attainableGflops(m.at.x()) * (1 + 1e-9));
        }
        QVERIFY(chart->isDense());
        QVERIFY(page.helpText().contains(QLatin1String("With 213 tasks the markers are small")));
        page.labelsToggle()->setChecked(true);
        QCOMPARE(page.taskFinder()->count(), 213);
        chart->selectTask(QStringLiteral("L3/10"));
        QVERIFY2(page.selectionInfo().startsWith(QLatin1String("L3/10; eager reference:")),
                 qPrintable(page.selectionInfo()));
        QVERIFY(page.selectionInfo().contains(QLatin1String("attainable on the NVIDIA V100 SXM2 32GB")));

        const QImage image = grabAndSave(&page, QStringLiteral("06-roofline-kernelbench-v100.png"), QSize(1280, 720));
        QVERIFY(!image.isNull());
        const auto labels = chart->shownLabels();
        QVERIFY2(labels.size() >= 10, qPrintable(QString::number(labels.size())));
        for (int i = 0; i < labels.size(); ++i)
            for (int j = i + 1; j < labels.size(); ++j)
                QVERIFY(!labels.at(i).second.intersects(labels.at(j).second));
        QCOMPARE(chart->selectionRings().size(), 1);
        const QRect label = chart->selectionLabelRect();
        QVERIFY(!label.isEmpty());
        // The selection's label is painted (not white) where the chart says it is.
        const QPoint inPage = chart->viewport()->mapTo(&page, label.center());
        QVERIFY(image.pixelColor(chart->viewport()->mapTo(
                    &page, chart->selectionRings().first().topLeft() +
                               QPoint(chart->selectionRings().first().width() / 2, 1))) != QColor(Qt::white));
        QVERIFY(image.rect().contains(inPage));
    }

    void trafficOfL2_1AsTime()
    {
        TrafficChart chart;
        chart.setAnalysis(decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        const GpuRoofs h200 = *findGpu(QStringLiteral("h200-sxm-141gb"));
        chart.setGpu(h200.name, h200.bandwidthGBps(), h200.primaryMemory()->originText());
        QVERIFY2(chart.timeSummaryText().contains(QStringLiteral("unfused 5.74 GB → 1.20 ms")),
                 qPrintable(chart.timeSummaryText()));
        QVERIFY(!chart.breakdown().oneKernelIsBound());
        QVERIFY(!grabAndSave(&chart, QStringLiteral("07-traffic-L2_1-h200.png"), QSize(1280, 720)).isNull());
    }

    void trafficOfL3_10()
    {
        TrafficChart chart;
        chart.setAnalysis(decodeAnalyze(loadChartData(QStringLiteral("analyze_L3_10.json"))));
        const GpuRoofs h200 = *findGpu(QStringLiteral("h200-sxm-141gb"));
        chart.setGpu(h200.name, h200.bandwidthGBps(), h200.primaryMemory()->originText());
        const TrafficBreakdown& b = chart.breakdown();
        QVERIFY(b.libraryEpilogueBytes);
        const QString summary = chart.summaryText();
        QVERIFY2(summary.contains(QLatin1String("unfused 5.05 GB")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("one kernel 185 MB (27.36× less) as a bound")), qPrintable(summary));
        QVERIFY(summary.contains(QLatin1String("library + epilogue")));
        // 5.05 GB at 4.8 TB/s: 1.05 ms; 185 MB: 38.5 µs.
        QVERIFY2(chart.timeSummaryText().contains(QStringLiteral("unfused 5.05 GB → 1.05 ms")),
                 qPrintable(chart.timeSummaryText()));
        QVERIFY(chart.timeSummaryText().contains(QStringLiteral("one kernel 185 MB → 38.5 µs (a bound)")));
        QVERIFY(b.oneKernelIsBound());

        const QImage image = grabAndSave(&chart, QStringLiteral("07-traffic-L3_10.png"), QSize(1280, 720));
        QVERIFY(!image.isNull());
        const auto bars = chart.drawnBars();
        QCOMPARE(bars.at(0).first, int(TrafficChart::kUnfusedTotal));
        QCOMPARE(bars.at(1).first, int(TrafficChart::kLibraryEpilogue));
        QCOMPARE(bars.at(2).first, int(TrafficChart::kOneKernel));
        const QRectF unfused = bars.at(0).second, library = bars.at(1).second, one = bars.at(2).second;
        // The defect: the fused bar taller than every op bar, so fusing looked worse. On the
        // totals' one scale the one kernel is the shortest, unfused the tallest, side by side.
        QVERIFY(one.height() < library.height());
        QVERIFY(library.height() < unfused.height());
        QVERIFY(std::abs(unfused.bottom() - one.bottom()) < 1);
        QVERIFY(std::abs(unfused.height() / one.height() - b.ratio()) / b.ratio() < 0.05);
        // All three are painted where the model says (their centres in the bar colours, not
        // white), inside the visible part.
        const QWidget* canvas = chart.findChild<QWidget*>(QStringLiteral("trafficCanvas"));
        const QPoint origin = canvas->mapTo(&chart, QPoint(0, 0));
        for (const QRectF& r : {unfused, library}) {
            const QPoint c = r.center().toPoint() + origin;
            QVERIFY(chart.rect().contains(c));
            QVERIFY2(image.pixelColor(c) != QColor(Qt::white),
                     qPrintable(QStringLiteral("%1,%2").arg(c.x()).arg(c.y())));
        }
        // The bound is hatched: partly painted, mostly white, not a solid bar.
        int painted = 0, all = 0;
        const QRect inner = one.toRect().adjusted(3, 3, -3, -3).translated(origin);
        for (int y = inner.top(); y <= inner.bottom(); ++y)
            for (int x = inner.left(); x <= inner.right(); ++x, ++all)
                painted += image.pixelColor(x, y) != QColor(Qt::white) ? 1 : 0;
        QVERIFY2(all > 0 && painted > all / 10 && painted < all * 6 / 10,
                 qPrintable(QStringLiteral("%1 of %2").arg(painted).arg(all)));
        QVERIFY(chart.opToolTip(TrafficChart::kLibraryEpilogue).contains(QStringLiteral("× less than unfused")));
        QVERIFY(chart.opToolTip(TrafficChart::kOneKernel).contains(QStringLiteral("A bound, not an option")));
    }
};

QTEST_MAIN(TestChartShots)
#include "tst_chartshots.moc"
