// The roofline chart and page: what the roof series hold, where points land, the tooltips, the
// click that selects a task and the double-click that activates it, 250 tasks drawn dense with
// labels on demand, the GPU chooser, the help that names only what is drawn.
#include "chartstestdata.h"

#include "app/charts/rooflinechart.h"
#include "app/charts/rooflinepage.h"

#include <QAbstractItemView>
#include <QApplication>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QHelpEvent>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTest>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

using namespace kwb;
using namespace kwb::app;

namespace {

QXYSeries* seriesNamed(QChart* chart, const QString& objectName)
{
    for (QAbstractSeries* s : chart->series())
        if (s->objectName() == objectName)
            return qobject_cast<QXYSeries*>(s);
    return nullptr;
}

bool near(double a, double b, double relative = 1e-9)
{
    return std::fabs(a - b) <= relative * std::max(std::fabs(a), std::fabs(b));
}

RooflinePoint point(const QString& task, int level, double intensity, double gflops)
{
    RooflinePoint p;
    p.task = task;
    p.level = level;
    p.intensity = intensity;
    p.referenceGflops = gflops;
    p.measuredOn = QStringLiteral("NVIDIA V100 SXM2 32GB"); // the roofs most tests draw
    return p;
}

/// Two tasks: an elementwise level-1 task without a candidate, a fused level-2 task with one.
QList<RooflinePoint> studyPoints()
{
    RooflinePoint l1 = point(QStringLiteral("L1/19"), 1, 0.25, 100.0);
    RooflinePoint l2 = point(QStringLiteral("L2/1"), 2, 0.5, 150.0);
    l2.candidateGflops = 600.0;
    l2.candidateIntensity = 2.0; // fused: fewer bytes, same FLOPs
    l2.candidateBasis = IntensityBasis::OneKernel;
    l2.detail = QStringLiteral("agent, sample 3");
    return {l1, l2};
}

/// KernelBench's 250 tasks (100, 100 and 50 per level) spread over the V100's roofline, every
/// other one with a faster candidate: where the window places all of them.
QList<RooflinePoint> manyPoints(const GpuRoofs& roofs)
{
    QList<RooflinePoint> out;
    int n = 0;
    for (const auto& [level, count] : {std::pair{1, 100}, std::pair{2, 100}, std::pair{3, 50}}) {
        for (int i = 1; i <= count; ++i, ++n) {
            // Intensities from 0.05 to 500 FLOP/B, at 5 % to 90 % of the roof there.
            const double x = 0.05 * std::pow(10.0, 4.0 * ((n * 37) % 250) / 250.0);
            const double share = 0.05 + 0.85 * ((n * 53) % 100) / 100.0;
            RooflinePoint p =
                point(QStringLiteral("L%1/%2").arg(level).arg(i), level, x, roofs.attainableGflops(x) * share);
            p.measuredOn = roofs.name;
            if (n % 2 == 0)
                p.candidateGflops = std::min(p.referenceGflops * 1.5, roofs.attainableGflops(x));
            out.append(p);
        }
    }
    return out;
}

} // namespace

class TestRooflineChart : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void roofsOfV100()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        QChart* c = chart.chart();

        // The memory roof: y = 900 GB/s × x, up to the FP32 ridge.
        QXYSeries* memory = seriesNamed(c, QStringLiteral("roof:memory"));
        QVERIFY(memory);
        QCOMPARE(memory->count(), 2);
        for (const QPointF& p : memory->points())
            QVERIFY2(near(p.y(), 900.0 * p.x()), qPrintable(QStringLiteral("%1,%2").arg(p.x()).arg(p.y())));
        const double ridge = 15700.0 / 900.0;
        QVERIFY(near(memory->at(1).x(), ridge));

        // The FP32 roof: flat at 15.7 TFLOP/s from the ridge to the right edge.
        QXYSeries* fp32 = seriesNamed(c, QStringLiteral("roof:fp32"));
        QVERIFY(fp32);
        QVERIFY(near(fp32->at(0).x(), ridge));
        for (const QPointF& p : fp32->points())
            QCOMPARE(p.y(), 15700.0);

        // The FP16 tensor roof: dashed, from its own ridge; the memory roof goes on dashed to it.
        QXYSeries* tensor = seriesNamed(c, QStringLiteral("roof:tensor:0"));
        QVERIFY(tensor);
        QCOMPARE(tensor->pen().style(), Qt::DashLine);
        QCOMPARE(fp32->pen().style(), Qt::SolidLine);
        QVERIFY(near(tensor->at(0).x(), 125000.0 / 900.0));
        QCOMPARE(tensor->at(0).y(), 125000.0);
        QVERIFY(!seriesNamed(c, QStringLiteral("roof:tensor:1")));
        QXYSeries* memoryOn = seriesNamed(c, QStringLiteral("roof:memory:tensor"));
        QVERIFY(memoryOn);
        QCOMPARE(memoryOn->pen().style(), Qt::DashLine);
        QVERIFY(near(memoryOn->at(1).y(), 900.0 * memoryOn->at(1).x()));

        // Ridge points: peak / bandwidth for FP32 and for the tensor roof.
        QXYSeries* ridges = seriesNamed(c, QStringLiteral("ridges"));
        QVERIFY(ridges);
        QCOMPARE(ridges->count(), 2);
        QVERIFY(near(ridges->at(0).x(), ridge));
        QCOMPARE(ridges->at(0).y(), 15700.0);
        QVERIFY(near(ridges->at(1).x(), 125000.0 / 900.0));

        // Log-log axes that hold every ridge.
        const auto xs = c->axes(Qt::Horizontal);
        QCOMPARE(xs.size(), 1);
        auto* x = qobject_cast<QLogValueAxis*>(xs.first());
        auto* y = qobject_cast<QLogValueAxis*>(c->axes(Qt::Vertical).first());
        QVERIFY(x && y);
        QVERIFY(x->min() <= 0.01 && x->max() >= 3 * 125000.0 / 900.0);
        QVERIFY(y->max() > 125000.0);
        QVERIFY(c->title().contains(QLatin1String("V100")));
        QVERIFY(chart.emptyText().contains(QLatin1String("No tasks placed")));
    }

    void zoomWheelAndReset()
    {
        // Issue 38 item 5: the roofline zooms (the wheel about the cursor, a rectangle) and resets.
        RooflineChart chart;
        chart.resize(900, 600);
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(studyPoints());
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        auto* x = qobject_cast<QLogValueAxis*>(chart.chart()->axes(Qt::Horizontal).value(0));
        QVERIFY(x);
        const double min = x->min(), max = x->max();
        QVERIFY(!chart.isZoomed());
        const QPointF centre = chart.mapFromScene(chart.chart()->mapToScene(chart.chart()->plotArea().center()));
        QWheelEvent wheel(centre, chart.mapToGlobal(centre.toPoint()), QPoint(), QPoint(0, 240), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(chart.viewport(), &wheel);
        QVERIFY(chart.isZoomed());
        QVERIFY2(x->max() / x->min() < 0.9 * (max / min),
                 qPrintable(QStringLiteral("%1..%2").arg(x->min()).arg(x->max())));
        QVERIFY(x->min() > min && x->max() < max);
        chart.resetZoom();
        QVERIFY(!chart.isZoomed());
        QCOMPARE(x->min(), min);
        QCOMPARE(x->max(), max);
        QCOMPARE(chart.rubberBand(), QChartView::RectangleRubberBand);
    }

    void setRoofsRedraws()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(studyPoints());
        chart.setRoofs(*findGpu(QStringLiteral("h200-sxm-141gb")));
        QChart* c = chart.chart();
        for (const QPointF& p : seriesNamed(c, QStringLiteral("roof:memory"))->points())
            QVERIFY(near(p.y(), 4800.0 * p.x()));
        QCOMPARE(seriesNamed(c, QStringLiteral("roof:fp32"))->at(0).y(), 67000.0);
        QVERIFY(seriesNamed(c, QStringLiteral("roof:tensor:0")));
        QVERIFY(seriesNamed(c, QStringLiteral("roof:tensor:1")));
        QCOMPARE(seriesNamed(c, QStringLiteral("ridges"))->count(), 3);
        // Points survive a change of GPU, placed analytically (measured on the V100).
        QVERIFY(!seriesNamed(c, QStringLiteral("points:L2:candidate")));
        QCOMPARE(seriesNamed(c, QStringLiteral("analytic:L2:candidate"))->count(), 1);
        QVERIFY(c->title().contains(QLatin1String("H200")));
    }

    void measuredRoofsWithTheoreticalOnesDotted()
    {
        RooflineChart chart;
        chart.setRoofs(fromDeviceResponse(loadChartData(QStringLiteral("device_h200.json"))));
        QChart* c = chart.chart();
        QXYSeries* memory = seriesNamed(c, QStringLiteral("roof:memory"));
        QVERIFY(near(memory->at(0).y() / memory->at(0).x(), 4265.890857861522, 1e-6));
        int dotted = 0;
        for (QAbstractSeries* s : c->series())
            if (s->objectName().startsWith(QLatin1String("roof:secondary:"))) {
                QCOMPARE(qobject_cast<QXYSeries*>(s)->pen().style(), Qt::DotLine);
                ++dotted;
            }
        QCOMPARE(dotted, 2); // theoretical HBM and theoretical FP32
        QVERIFY(c->title().contains(QLatin1String("HBM copy")));
    }

    void pointsAndArrows()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        QList<RooflinePoint> points = studyPoints();
        points.append(point(QStringLiteral("L3/1"), 3, 0.0, 10.0)); // no intensity: cannot be placed
        chart.setPoints(points);
        QCOMPARE(chart.points().size(), 2);
        QCOMPARE(chart.skippedPoints(), 1);
        QChart* c = chart.chart();

        auto* l1 = qobject_cast<QScatterSeries*>(seriesNamed(c, QStringLiteral("points:L1:reference")));
        QVERIFY(l1);
        QCOMPARE(l1->points(), QList<QPointF>{QPointF(0.25, 100.0)});
        QCOMPARE(l1->markerShape(), QScatterSeries::MarkerShapeCircle);
        QVERIFY(!seriesNamed(c, QStringLiteral("points:L1:candidate"))); // L1/19 has no candidate
        auto* l2 = qobject_cast<QScatterSeries*>(seriesNamed(c, QStringLiteral("points:L2:reference")));
        QCOMPARE(l2->markerShape(), QScatterSeries::MarkerShapeRectangle);
        QCOMPARE(l2->points(), QList<QPointF>{QPointF(0.5, 150.0)});
        // The candidate sits at its own (fused) intensity.
        QCOMPARE(seriesNamed(c, QStringLiteral("points:L2:candidate"))->points(), QList<QPointF>{QPointF(2.0, 600.0)});
        QVERIFY(!seriesNamed(c, QStringLiteral("points:L3:reference")));

        const auto arrows = chart.arrows();
        QCOMPARE(arrows.size(), 1);
        QCOMPARE(arrows.first().first, QPointF(0.5, 150.0));
        QCOMPARE(arrows.first().second, QPointF(2.0, 600.0));
        QVERIFY(chart.emptyText().isEmpty());

        // Where the points land on screen: intensity grows to the right, GFLOP/s upwards.
        chart.resize(800, 560);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        const QPoint a = chart.viewportPosition(0, false), b = chart.viewportPosition(1, false);
        const QPoint cand = chart.viewportPosition(1, true);
        QVERIFY(chart.viewport()->rect().contains(a));
        QVERIFY(a.x() < b.x() && b.x() < cand.x());
        QVERIFY(a.y() > b.y() && b.y() > cand.y());
        // One decade of intensity is as wide as the plot's width over its decades.
        const auto* x = qobject_cast<QLogValueAxis*>(c->axes(Qt::Horizontal).first());
        const double decades = std::log10(x->max()) - std::log10(x->min());
        const double expected = c->plotArea().width() * std::log10(2.0 / 0.5) / decades;
        QVERIFY(std::abs((cand.x() - b.x()) - expected) <= 2.0);
        QCOMPARE(chart.viewportPosition(0, true), QPoint(-1, -1));
    }

    void candidatePlacedByMeasuredTrafficWhereProfiled()
    {
        // Issue 15: a candidate with a traffic profile is placed at FLOPs / measured bytes and
        // marked "measured" (its own legend entry, its tooltip); one without stays at the analytic
        // model its kernels imply, marked "analytic"; on another GPU's roofs both are analytic.
        QList<RooflinePoint> points = studyPoints();
        RooflinePoint profiled = point(QStringLiteral("L2/2"), 2, 0.5, 150.0);
        profiled.candidateGflops = 450.0;
        profiled.candidateIntensity = 2.0;
        profiled.candidateBasis = IntensityBasis::OneKernel;
        profiled.candidateMeasuredBytes = 3.0e9;
        profiled.candidateMeasuredIntensity = 1.25; // more bytes than the one-kernel model
        points.append(profiled);

        // The choice itself.
        QCOMPARE(profiled.candidatePlacement(true).basis, IntensityBasis::Measured);
        QCOMPARE(profiled.candidatePlacement(true).intensity, 1.25);
        QCOMPARE(profiled.candidatePlacement(false).basis, IntensityBasis::OneKernel);
        QCOMPARE(profiled.candidatePlacement(false).intensity, 2.0);
        QCOMPARE(points[1].candidatePlacement(true).basis, IntensityBasis::OneKernel);
        QCOMPARE(points[0].candidatePlacement(true).basis, IntensityBasis::EagerUnfused);

        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(points);
        QChart* c = chart.chart();
        QXYSeries* measured = seriesNamed(c, QStringLiteral("points:L2:candidate:measured-traffic"));
        QVERIFY(measured);
        QCOMPARE(measured->points(), QList<QPointF>{QPointF(1.25, 450.0)});
        QVERIFY2(measured->name().contains(QLatin1String("measured traffic")), qPrintable(measured->name()));
        QXYSeries* analytic = seriesNamed(c, QStringLiteral("points:L2:candidate"));
        QCOMPARE(analytic->points(), QList<QPointF>{QPointF(2.0, 600.0)});
        QVERIFY2(analytic->name().contains(QLatin1String("analytic traffic")), qPrintable(analytic->name()));
        bool found = false;
        for (const RooflineMarker& mk : chart.markers())
            if (mk.point == 2 && mk.role == RooflineMarker::Role::Candidate) {
                found = true;
                QCOMPARE(mk.basis, IntensityBasis::Measured);
                QCOMPARE(mk.at, QPointF(1.25, 450.0));
            }
        QVERIFY(found);
        QCOMPARE(chart.arrows().at(1).second, QPointF(1.25, 450.0));

        const QString tipMeasured = chart.toolTipText(2, true);
        QVERIFY2(tipMeasured.contains(QLatin1String("intensity 1.25 FLOP/B: measured HBM traffic")),
                 qPrintable(tipMeasured));
        QVERIFY2(tipMeasured.contains(QLatin1String("measured: 3 GB of HBM traffic")), qPrintable(tipMeasured));
        QVERIFY2(tipMeasured.contains(QLatin1String("analytic 2.00 FLOP/B: one kernel (analytic)")),
                 qPrintable(tipMeasured));
        const QString tipAnalytic = chart.toolTipText(1, true);
        QVERIFY2(tipAnalytic.contains(QLatin1String("intensity 2.00 FLOP/B: one kernel (analytic)")),
                 qPrintable(tipAnalytic));
        QVERIFY2(tipAnalytic.contains(QLatin1String("no traffic profile")), qPrintable(tipAnalytic));
        QVERIFY(chart.placementNote().contains(QLatin1String("measured HBM traffic")));

        // Another GPU's roofs: analytic placement for every marker, the measured bytes named as
        // the measuring GPU's.
        chart.setRoofs(*findGpu(QStringLiteral("h200-sxm-141gb")));
        QVERIFY(!seriesNamed(c, QStringLiteral("analytic:L2:candidate:measured-traffic")));
        for (const RooflineMarker& mk : chart.markers())
            QVERIFY(mk.basis != IntensityBasis::Measured);
        const QString elsewhere = chart.toolTipText(2, true);
        QVERIFY2(elsewhere.contains(QLatin1String("its measured traffic (1.25 FLOP/B) belongs to NVIDIA V100")),
                 qPrintable(elsewhere));
    }

    void toolTips()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(studyPoints());

        // 100 GFLOP/s at 0.25 FLOP/B under a 900 GB/s roof: 225 GFLOP/s attainable, 44.4 %.
        const QString ref = chart.toolTipText(0, false);
        QVERIFY2(ref.contains(QLatin1String("L1/19")), qPrintable(ref));
        QVERIFY(ref.contains(QLatin1String("eager reference")));
        QVERIFY(ref.contains(QLatin1String("intensity 0.25 FLOP/B: eager, op by op (analytic)")));
        QVERIFY2(ref.contains(QLatin1String("100 GFLOP/s: 44.4 % of the roof here (225 GFLOP/s)")), qPrintable(ref));
        QVERIFY2(
            ref.contains(QLatin1String("here: memory-bound: 0.25 FLOP/B (eager, op by op) is below the ridge point")),
            qPrintable(ref));

        const QString cand = chart.toolTipText(1, true);
        QVERIFY2(cand.contains(QLatin1String("best candidate")), qPrintable(cand));
        QVERIFY(cand.contains(QLatin1String("intensity 2.00 FLOP/B")));
        QVERIFY2(cand.contains(QLatin1String("600 GFLOP/s: 33.3 % of the roof here (1.80 TFLOP/s)")), qPrintable(cand));
        QVERIFY(cand.contains(QStringLiteral("4.00× the reference's GFLOP/s")));
        QVERIFY(cand.contains(QLatin1String("agent, sample 3")));
        QVERIFY(chart.toolTipText(0, true).isEmpty()); // no candidate
        QVERIFY(chart.toolTipText(7, false).isEmpty());

        // Above the ridge: compute-bound, rated against the FP32 roof.
        chart.setPoints({point(QStringLiteral("L1/1"), 1, 682.7, 12560.0)});
        const QString gemm = chart.toolTipText(0, false);
        QVERIFY2(gemm.contains(QLatin1String("80.0 % of the roof here (15.7 TFLOP/s)")), qPrintable(gemm));
        QVERIFY(gemm.contains(QLatin1String("here: compute-bound")));
    }

    void clickSelectsDoubleClickActivates()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(studyPoints());
        chart.resize(800, 560);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QSignalSpy activated(&chart, &RooflineChart::taskActivated);
        QSignalSpy selected(&chart, &RooflineChart::taskSelected);

        // A click on L2/1's candidate selects the task: a ring on each of its two markers and a
        // label with its numbers beside them.
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, {}, chart.viewportPosition(1, true));
        QCOMPARE(activated.size(), 0);
        QCOMPARE(selected.size(), 1);
        QCOMPARE(chart.selectedTask(), QStringLiteral("L2/1"));
        const QList<QRect> rings = chart.selectionRings();
        QCOMPARE(rings.size(), 2);
        for (bool candidate : {false, true}) {
            const QPoint at = chart.viewportPosition(1, candidate);
            QVERIFY(std::any_of(rings.cbegin(), rings.cend(),
                                [&at](const QRect& r) { return (r.center() - at).manhattanLength() <= 2; }));
        }
        const QString text = chart.selectionText();
        QVERIFY2(text.startsWith(QLatin1String(
                     "L2/1; agent, sample 3; eager reference: 150 GFLOP/s at 0.5 FLOP/B, eager, op by op")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("best candidate: 600 GFLOP/s at 2.00 FLOP/B, one kernel (analytic), "
                                              "4.00× the reference")),
                 qPrintable(text));
        const QRect label = chart.selectionLabelRect();
        QVERIFY(!label.isEmpty());
        const QRect plot = chart.mapFromScene(chart.chart()->mapToScene(chart.chart()->plotArea())).boundingRect();
        QVERIFY2(
            plot.adjusted(-1, -1, 1, 1).contains(label),
            qPrintable(
                QStringLiteral("%1,%2 %3x%4").arg(label.x()).arg(label.y()).arg(label.width()).arg(label.height())));

        // A double-click opens the task.
        QTest::mouseDClick(chart.viewport(), Qt::LeftButton, {}, chart.viewportPosition(0, false));
        QCOMPARE(activated.size(), 1);
        QCOMPARE(activated.at(0).at(0).toString(), QStringLiteral("L1/19"));
        QCOMPARE(chart.selectedTask(), QStringLiteral("L1/19"));
        QCOMPARE(chart.selectionRings().size(), 1);
        // Empty plot area: nothing opens and the selection goes.
        const QRectF area = chart.chart()->plotArea();
        const QPoint empty = chart.mapFromScene(chart.chart()->mapToScene(area.topLeft() + QPointF(8, 8)));
        QTest::mouseDClick(chart.viewport(), Qt::LeftButton, {}, empty);
        QCOMPARE(activated.size(), 1);
        QVERIFY(chart.selectedTask().isEmpty());
        QVERIFY(chart.selectionRings().isEmpty());
        QVERIFY(chart.selectionLabelRect().isEmpty());

        // By name; a task not placed selects nothing; new points keep a selection still placed.
        chart.selectTask(QStringLiteral("L2/1"));
        QCOMPARE(chart.selectedTask(), QStringLiteral("L2/1"));
        chart.selectTask(QStringLiteral("L3/99"));
        QVERIFY(chart.selectedTask().isEmpty());
        chart.selectTask(QStringLiteral("L2/1"));
        chart.setPoints(studyPoints());
        QCOMPARE(chart.selectedTask(), QStringLiteral("L2/1"));
        QCOMPARE(chart.selectionRings().size(), 2);
        chart.setPoints({studyPoints().first()});
        QVERIFY(chart.selectedTask().isEmpty());
    }

    // Issue 40 items 3-4: the selected task's best candidate shows its kernels, each at its own work
    // and time; one click on a kernel gives its reading. Only on the GPU the times are from.
    void kernelsOfTheSelectedCandidateAndTheirReading()
    {
        QList<RooflinePoint> points = studyPoints();
        RooflinePoint& l2 = points[1];
        l2.kernels = {RooflineKernel{QStringLiteral("library kernels (2)"), QStringLiteral("conv2d"), 190.0, 9000.0,
                                     IntensityBasis::LibraryEpilogue, false, QStringLiteral("compute-bound: 64 %")},
                      RooflineKernel{QStringLiteral("relu_bias_add"), QStringLiteral("relu, add"), 0.25, 180.0,
                                     IntensityBasis::LibraryEpilogue, true,
                                     QStringLiteral("memory-bound: 80 % of HBM bandwidth (720 GB/s of 900 GB/s; "
                                                    "library op + fused epilogue, analytic); 4 B spilled per "
                                                    "thread; 100 % occupancy")}};
        points[0].kernelsWhy = QStringLiteral("2 kernels of its own: which ops each did is not known");
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(points);
        chart.resize(900, 600);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QXYSeries* kernels = seriesNamed(chart.chart(), QStringLiteral("points:kernels"));
        QVERIFY(kernels);
        QCOMPARE(kernels->count(), 0); // nothing selected: no kernels drawn
        // The axes hold the kernels from the start: 0.25 FLOP/B and 9 TFLOP/s are in range.
        auto* x = qobject_cast<QLogValueAxis*>(chart.chart()->axes(Qt::Horizontal).first());
        QVERIFY(x->min() <= 0.25 && x->max() >= 190.0);

        QSignalSpy kernelSpy(&chart, &RooflineChart::kernelSelected);
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, {}, chart.viewportPosition(1, true));
        QCOMPARE(chart.selectedTask(), QStringLiteral("L2/1"));
        QCOMPARE(kernels->count(), 2);
        QCOMPARE(kernels->at(1), QPointF(0.25, 180.0));
        QVERIFY2(chart.selectionText().contains(QStringLiteral("its kernels: 2 (purple pentagons")),
                 qPrintable(chart.selectionText()));
        int epilogue = -1;
        for (int m = 0; m < chart.markers().size(); ++m)
            if (chart.markers().at(m).role == RooflineMarker::Role::Kernel && chart.markers().at(m).kernel == 1)
                epilogue = m;
        QVERIFY(epilogue >= 0);
        QVERIFY(chart.markerToolTip(epilogue).contains(QStringLiteral("memory-bound: 80 % of HBM bandwidth")));
        QVERIFY(chart.markerToolTip(epilogue).contains(QStringLiteral("does relu, add")));
        const QPoint at =
            chart.mapFromScene(chart.chart()->mapToScene(chart.chart()->mapToPosition(QPointF(0.25, 180.0), kernels)));
        QCOMPARE(chart.markerAt(at), epilogue);

        // One click: the kernel's reading in the selection, a ring on it too.
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, {}, at);
        QCOMPARE(chart.selectedTask(), QStringLiteral("L2/1"));
        QCOMPARE(chart.selectedKernel(), 1);
        QCOMPARE(kernelSpy.size(), 1);
        QCOMPARE(kernelSpy.at(0).at(1).toInt(), 1);
        QCOMPARE(chart.kernelReadingText(),
                 QStringLiteral("relu_bias_add (relu, add): memory-bound: 80 % of HBM bandwidth (720 GB/s of 900 "
                                "GB/s; library op + fused epilogue, analytic); 4 B spilled per thread; 100 % "
                                "occupancy"));
        QVERIFY(chart.selectionText().contains(QStringLiteral("kernel relu_bias_add (relu, add): memory-bound")));
        QCOMPARE(chart.selectionRings().size(), 3); // reference, candidate, the kernel

        // Another task: its kernels go, and it says why it has none.
        chart.selectTask(QStringLiteral("L1/19"));
        QCOMPARE(kernels->count(), 0);
        QCOMPARE(chart.selectedKernel(), -1);
        QVERIFY(chart.selectionText().contains(QStringLiteral("not placed one by one: 2 kernels of its own")));

        // On another GPU's roofs the kernels' times mean nothing: not drawn, no legend entry.
        chart.setRoofs(*findGpu(QStringLiteral("a100-sxm-80gb")));
        chart.selectTask(QStringLiteral("L2/1"));
        QVERIFY(!seriesNamed(chart.chart(), QStringLiteral("points:kernels")));
        QVERIFY(std::none_of(chart.markers().cbegin(), chart.markers().cend(),
                             [](const RooflineMarker& m) { return m.role == RooflineMarker::Role::Kernel; }));
        QVERIFY(!chart.selectionText().contains(QStringLiteral("pentagons")));
    }

    // Issue 37 item 5: all 250 tasks on one chart. Small, half-transparent markers; labels on
    // demand never overlap and stay in the plot; a zoom makes room for more of them.
    void twoHundredFiftyTasksReadable()
    {
        RooflineChart chart;
        const GpuRoofs v100 = *findGpu(QStringLiteral("v100-sxm2-32gb"));
        chart.setRoofs(v100);
        const QList<RooflinePoint> points = manyPoints(v100);
        QCOMPARE(points.size(), 250);
        chart.setPoints(points);
        chart.resize(1200, 700);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QCOMPARE(chart.points().size(), 250);
        QVERIFY(chart.isDense());
        QCOMPARE(chart.markerSize(), 7.0);
        int references = 0;
        for (const RooflineMarker& m : chart.markers())
            references += m.role == RooflineMarker::Role::Reference ? 1 : 0;
        QCOMPARE(references, 250);
        for (QAbstractSeries* s : chart.chart()->series()) {
            auto* scatter = qobject_cast<QScatterSeries*>(s);
            if (!scatter || !scatter->objectName().startsWith(QLatin1String("points:")))
                continue;
            QCOMPARE(scatter->markerSize(), 7.0);
            QVERIFY2(scatter->color().alpha() < 255, qPrintable(scatter->objectName()));
        }

        QVERIFY(chart.shownLabels().isEmpty()); // on demand only
        chart.setLabelsShown(true);
        const auto labels = chart.shownLabels();
        QVERIFY2(labels.size() > 20 && labels.size() < 250, qPrintable(QString::number(labels.size())));
        const QRect plot = chart.mapFromScene(chart.chart()->mapToScene(chart.chart()->plotArea())).boundingRect();
        for (int i = 0; i < labels.size(); ++i) {
            QVERIFY(plot.adjusted(-1, -1, 1, 1).contains(labels.at(i).second));
            for (int j = i + 1; j < labels.size(); ++j)
                QVERIFY2(!labels.at(i).second.intersects(labels.at(j).second),
                         qPrintable(labels.at(i).first + QLatin1Char(' ') + labels.at(j).first));
        }
        // Zoomed into the middle, tasks hidden before get their labels.
        const QPointF centre = chart.mapFromScene(chart.chart()->mapToScene(chart.chart()->plotArea().center()));
        chart.zoomAt(centre, 4.0);
        QStringList before, after;
        for (const auto& l : labels)
            before << l.first;
        for (const auto& l : chart.shownLabels())
            after << l.first;
        QVERIFY(std::any_of(after.cbegin(), after.cend(), [&before](const QString& t) { return !before.contains(t); }));
        chart.setLabelsShown(false);
        QVERIFY(chart.shownLabels().isEmpty());
    }

    // Times measured on the H200 are never drawn against the V100's roofs: every marker there is
    // analytic and sits on (not above) the V100's roofline.
    void otherGpuIsAnalytic()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        QList<RooflinePoint> points = studyPoints();
        for (RooflinePoint& p : points) {
            p.measuredOn = QStringLiteral("NVIDIA H200");
            p.referenceGflops *= 100; // far above any V100 roof, as H200 times are
            if (p.candidateGflops)
                *p.candidateGflops *= 100;
            p.notCountedGflops = 1e6;
            p.notCountedWhy = QStringLiteral("below the floor");
        }
        chart.setPoints(points);
        const GpuRoofs& roofs = chart.roofs();
        QCOMPARE(chart.markers().size(), 3); // two references, one candidate; no star
        for (const RooflineMarker& m : chart.markers()) {
            QVERIFY(!m.measured);
            QVERIFY(m.role != RooflineMarker::Role::NotCounted);
            QVERIFY(near(m.at.y(), roofs.attainableGflops(m.at.x())));
        }
        QVERIFY(!seriesNamed(chart.chart(), QStringLiteral("points:L2:reference")));
        QVERIFY(chart.chart()->title().contains(QLatin1String("Times measured on NVIDIA H200 are not drawn")));
        QVERIFY(chart.toolTipText(1, true).contains(QLatin1String("analytic")));
        // Against roofs of the GPU they were measured on, the times are drawn as measured.
        GpuRoofs h200 = *findGpu(QStringLiteral("h200-sxm-141gb"));
        h200.name = QStringLiteral("NVIDIA H200");
        chart.setRoofs(h200);
        QCOMPARE(chart.markers().size(), 5);
        QCOMPARE(chart.markers().at(0).at, QPointF(0.25, 10000.0));
        QVERIFY(chart.markers().at(0).measured);
    }

    // A time below the roofline floor: a star at the one-kernel intensity, with the reason.
    void notCountedIsDrawnWithItsReason()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        QList<RooflinePoint> points = studyPoints();
        points[1].oneKernelIntensity = 3.0;
        points[1].notCountedGflops = 50000.0;
        points[1].notCountedWhy = QStringLiteral("measured 0.133 ms is below the roofline floor 2.1 ms");
        chart.setPoints(points);
        auto* stars = qobject_cast<QScatterSeries*>(seriesNamed(chart.chart(), QStringLiteral("points:not-counted")));
        QVERIFY(stars);
        QCOMPARE(stars->markerShape(), QScatterSeries::MarkerShapeStar);
        QCOMPARE(stars->points(), QList<QPointF>{QPointF(3.0, 50000.0)});
        const int star = chart.markers().size() - 1;
        QCOMPARE(chart.markers().at(star).role, RooflineMarker::Role::NotCounted);
        const QString tip = chart.markerToolTip(star);
        QVERIFY2(tip.contains(QLatin1String("Not counted")) &&
                     tip.contains(QLatin1String("below the roofline floor 2.1 ms")),
                 qPrintable(tip));
        QVERIFY(tip.contains(QLatin1String("task: compute-bound")) == false); // 3 FLOP/B < 17.4
        QVERIFY(tip.contains(QLatin1String("task: memory-bound: 3.00 FLOP/B (one kernel)")));
    }

    // The view's own tooltip event (the one Qt sends after the cursor rests) keeps the marker's
    // text: QGraphicsView alone hides it, since the markers are no items with a tool tip.
    void restingCursorKeepsTheTooltip()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(studyPoints());
        chart.resize(800, 560);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        for (bool candidate : {false, true}) {
            const int index = 1;
            const QPoint at = chart.viewportPosition(index, candidate);
            QHelpEvent help(QEvent::ToolTip, at, chart.viewport()->mapToGlobal(at));
            QApplication::sendEvent(chart.viewport(), &help);
            QTRY_VERIFY(QToolTip::isVisible());
            QCOMPARE(QToolTip::text(), chart.toolTipText(index, candidate));
        }
        // A click selects the task and takes the tooltip away.
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, {}, chart.viewportPosition(1, false));
        QTRY_VERIFY(!QToolTip::isVisible());
    }

    void hoverShowsTheTooltip()
    {
        RooflineChart chart;
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(studyPoints());
        chart.resize(800, 560);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        const QPoint at = chart.viewportPosition(1, true);
        QTest::mouseMove(chart.viewport(), at - QPoint(30, 30));
        QTest::mouseMove(chart.viewport(), at);
        QTRY_VERIFY(QToolTip::isVisible());
        QCOMPARE(QToolTip::text(), chart.toolTipText(1, true));
        QToolTip::hideText();
    }

    void emptyStates()
    {
        RooflineChart chart;
        QVERIFY(chart.emptyText().contains(QLatin1String("No GPU")));
        chart.setRoofs(fromDeviceResponse(QJsonObject{{QStringLiteral("available"), false},
                                                      {QStringLiteral("reason"), QStringLiteral("no CUDA device")}}));
        QVERIFY2(chart.emptyText().contains(QLatin1String("no CUDA device")), qPrintable(chart.emptyText()));
        QVERIFY(chart.chart()->series().isEmpty());
    }

    void pageChoosesTheGpu()
    {
        RooflinePage page;
        QComboBox* combo = page.gpuCombo();
        QCOMPARE(combo->count(), static_cast<int>(gpuTable().size()));
        QCOMPARE(page.selectedGpuKey(), QStringLiteral("v100-sxm2-32gb")); // the study's framing
        QCOMPARE(page.selectedRoofs().name, QStringLiteral("NVIDIA V100 SXM2 32GB"));
        QVERIFY2(page.helpText().contains(QLatin1String("memory-bound")), qPrintable(page.helpText()));
        QVERIFY(page.helpText().contains(QLatin1String("compute-bound")));
        QVERIFY2(page.helpText().contains(QLatin1String("17.4 FLOP/B")), qPrintable(page.helpText()));

        // The worker reports this machine's GPU: it is added first and shown.
        page.setCurrentDevice(kwb::decodeDeviceFacts(loadChartData(QStringLiteral("device_h200.json"))));
        QCOMPARE(combo->count(), static_cast<int>(gpuTable().size()) + 1);
        QCOMPARE(combo->itemData(0).toString(), QStringLiteral("current"));
        QVERIFY(combo->itemText(0).contains(QLatin1String("NVIDIA H200")));
        QCOMPARE(page.selectedGpuKey(), QStringLiteral("current"));
        QCOMPARE(page.chart()->roofs().name, QStringLiteral("NVIDIA H200"));
        QVERIFY(page.helpText().contains(QLatin1String("15.3 FLOP/B")));

        QVERIFY(page.selectGpu(QStringLiteral("h100-sxm-80gb")));
        QCOMPARE(page.chart()->roofs().bandwidthGBps(), 3350.0);
        QVERIFY(!page.selectGpu(QStringLiteral("no-such-gpu")));
        QCOMPARE(page.selectedGpuKey(), QStringLiteral("h100-sxm-80gb"));
    }

    void aUsersChoiceOutlivesALaterDeviceResponse()
    {
        RooflinePage page;
        page.resize(900, 650);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        // The user picks the next GPU with the keyboard.
        page.gpuCombo()->setFocus();
        QTest::keyClick(page.gpuCombo(), Qt::Key_Down);
        const QString chosen = page.selectedGpuKey();
        QVERIFY(chosen != QLatin1String("v100-sxm2-32gb"));
        page.setCurrentDevice(kwb::decodeDeviceFacts(loadChartData(QStringLiteral("device_h200.json"))));
        QCOMPARE(page.selectedGpuKey(), chosen);
        QVERIFY(page.selectGpu(QStringLiteral("current")));
        QCOMPARE(page.chart()->roofs().key, QStringLiteral("current"));
    }

    void pageWithoutAGpu()
    {
        RooflinePage page;
        page.setCurrentDevice(kwb::decodeDeviceFacts(QJsonObject{
            {QStringLiteral("available"), false}, {QStringLiteral("reason"), QStringLiteral("no CUDA device")}}));
        QComboBox* combo = page.gpuCombo();
        QCOMPARE(combo->itemData(0).toString(), QStringLiteral("current"));
        auto* model = qobject_cast<QStandardItemModel*>(combo->model());
        QVERIFY(!model->item(0)->isEnabled());
        QVERIFY(!page.selectGpu(QStringLiteral("current")));
        QCOMPARE(page.selectedGpuKey(), QStringLiteral("v100-sxm2-32gb"));
        // A GPU appears later (another worker): the entry becomes usable and is shown.
        page.setCurrentDevice(kwb::decodeDeviceFacts(loadChartData(QStringLiteral("device_h200.json"))));
        QVERIFY(model->item(0)->isEnabled());
        QCOMPARE(page.selectedGpuKey(), QStringLiteral("current"));
    }

    void pageForwardsTaskActivation()
    {
        RooflinePage page;
        page.setPoints(studyPoints());
        page.resize(900, 650);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QSignalSpy spy(&page, &RooflinePage::taskActivated);
        RooflineChart* chart = page.chart();
        QTest::mouseDClick(chart->viewport(), Qt::LeftButton, {}, chart->viewportPosition(1, false));
        QCOMPARE(spy.size(), 1);
        QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("L2/1"));
    }

    // The page's finder selects a task, the line under the chart gives its numbers, Open task
    // opens it, and Label tasks names them on the chart.
    void pageFindsLabelsAndOpensTasks()
    {
        RooflinePage page;
        page.setPoints(studyPoints());
        page.resize(1100, 700);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QComboBox* finder = page.taskFinder();
        QCOMPARE(finder->count(), 2);
        QVERIFY(page.selectionInfo().startsWith(QLatin1String("Click a point")));
        auto* open = page.findChild<QPushButton*>(QStringLiteral("openTask"));
        QVERIFY(open && !open->isEnabled());

        const int l2 = finder->findData(QStringLiteral("L2/1"));
        QVERIFY(l2 >= 0);
        finder->setCurrentIndex(l2);
        Q_EMIT finder->activated(l2);
        QCOMPARE(page.chart()->selectedTask(), QStringLiteral("L2/1"));
        QCOMPARE(page.selectionInfo(), page.chart()->selectionText());
        QVERIFY(page.selectionInfo().contains(QStringLiteral("4.00× the reference")));
        QSignalSpy spy(&page, &RooflinePage::taskActivated);
        QVERIFY(open->isEnabled());
        open->click();
        QCOMPARE(spy.size(), 1);
        QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("L2/1"));

        // A click on the chart moves the finder along.
        QTest::mouseClick(page.chart()->viewport(), Qt::LeftButton, {}, page.chart()->viewportPosition(0, false));
        QCOMPARE(finder->currentText(), QStringLiteral("L1/19"));

        QVERIFY(page.chart()->shownLabels().isEmpty());
        page.chart()->selectTask(QString());
        QVERIFY(page.selectionInfo().startsWith(QLatin1String("Click a point")));
        page.labelsToggle()->setChecked(true);
        QStringList named;
        for (const auto& l : page.chart()->shownLabels())
            named << l.first;
        QCOMPARE(named, (QStringList{QStringLiteral("L1/19"), QStringLiteral("L2/1")}));
    }

    // "How to read it" names what the chart draws, and nothing it does not draw.
    void helpMatchesWhatIsDrawn()
    {
        RooflinePage page;
        QVERIFY(page.selectGpu(QStringLiteral("v100-sxm2-32gb")));
        QString help = page.helpText();
        QVERIFY(help.contains(QLatin1String("solid diagonal is the memory roof (900 GB/s)")));
        QVERIFY2(help.contains(QLatin1String("dashed flat lines are tensor-core roofs")),
                 qPrintable(help));                       // V100: FP16 tensor
        QVERIFY(!help.contains(QLatin1String("Dotted"))); // table roofs only
        QVERIFY(!help.contains(QLatin1String("Shapes"))); // no points yet
        QVERIFY(!help.contains(QLatin1String("red star")));

        page.setPoints(studyPoints()); // measured on the V100, no star, no traffic profile
        help = page.helpText();
        QVERIFY(help.contains(QLatin1String("hollow grey marker")));
        QVERIFY(help.contains(QLatin1String("filled green")));
        QVERIFY(!help.contains(QLatin1String("red star")));
        QVERIFY(!help.contains(QLatin1String("dark ring")));
        QVERIFY(!page.chart()->chart()->title().contains(QLatin1String("dark ring")));
        QVERIFY(!help.contains(QLatin1String("placed analytically")));
        QVERIFY(!help.contains(QLatin1String("half transparent")));

        QList<RooflinePoint> points = studyPoints();
        points[1].notCountedGflops = 5000.0;
        points[1].notCountedWhy = QStringLiteral("below the floor");
        points[1].candidateMeasuredBytes = 1e9;
        points[1].candidateMeasuredIntensity = 3.0;
        page.setPoints(points);
        help = page.helpText();
        QVERIFY(help.contains(QLatin1String("red star")));
        QVERIFY(help.contains(QLatin1String("dark ring")));
        QVERIFY(page.chart()->chart()->title().contains(QLatin1String("dark ring")));

        QVERIFY(page.selectGpu(QStringLiteral("h100-sxm-80gb"))); // times from the V100: analytic here
        help = page.helpText();
        QVERIFY(help.contains(QLatin1String("placed analytically")));
        QVERIFY(!help.contains(QLatin1String("red star"))); // stars only where measured
        QVERIFY(!help.contains(QLatin1String("hollow grey marker")));

        page.setPoints(manyPoints(*findGpu(QStringLiteral("v100-sxm2-32gb"))));
        QVERIFY(page.helpText().contains(QLatin1String("With 250 tasks the markers are small and half transparent")));
    }
};

QTEST_MAIN(TestRooflineChart)
#include "tst_rooflinechart.moc"
