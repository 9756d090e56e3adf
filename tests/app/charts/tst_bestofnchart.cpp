// The best-of-n chart: its log2 axis, one line per regime, error bars, the level filter.
#include "app/charts/bestofnchart.h"

#include "core/study/runstats.h"

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHelpEvent>
#include <QLineSeries>
#include <QSignalSpy>
#include <QTest>
#include <QToolTip>
#include <QValueAxis>

#include <cmath>
#include <limits>

using namespace kwb;
using namespace kwb::app;

namespace {

BestOfNPoint pt(int n, double pct, double low, double high, int tasks)
{
    BestOfNPoint p;
    p.n = n;
    p.tasks = tasks;
    p.passPct.value = pct;
    p.passPct.low = low;
    p.passPct.high = high;
    return p;
}

QList<BestOfNSeries> regimes()
{
    return {
        {QStringLiteral("agent"),
         0,
         {pt(1, 40.0, 23.3, 56.7, 30), pt(2, 53.3, 36.7, 70.0, 30), pt(4, 63.3, 46.7, 80.0, 30),
          pt(8, 70.0, 53.3, 86.7, 30)}},
        {QStringLiteral("zero-shot"),
         0,
         {pt(8, 50.0, 33.3, 66.7, 30), pt(1, 20.0, 6.7, 36.7, 30), pt(2, 30.0, 13.3, 46.7, 30),
          pt(4, 40.0, 23.3, 56.7, 30)}},
        {QStringLiteral("agent"),
         2,
         {pt(1, 50.0, 20.0, 80.0, 10), pt(2, 60.0, 30.0, 90.0, 10), pt(4, 70.0, 40.0, 100.0, 10)}},
    };
}

} // namespace

class TestBestOfNChart : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void axesTicksAtOneTwoFourEight()
    {
        BestOfNChart chart;
        chart.setCurves(regimes());
        auto* x = qobject_cast<QCategoryAxis*>(chart.chart()->axes(Qt::Horizontal).value(0));
        QVERIFY(x);
        QCOMPARE(x->categoriesLabels(),
                 (QStringList{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("4"), QStringLiteral("8")}));
        // log2-spaced: a tick exactly at log2(n).
        QCOMPARE(x->endValue(QStringLiteral("1")), 0.0);
        QCOMPARE(x->endValue(QStringLiteral("2")), 1.0);
        QCOMPARE(x->endValue(QStringLiteral("4")), 2.0);
        QCOMPARE(x->endValue(QStringLiteral("8")), 3.0);
        QCOMPARE(x->labelsPosition(), QCategoryAxis::AxisLabelsPositionOnValue);
        QVERIFY(x->min() < 0.0 && x->max() > 3.0);
        auto* y = qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0));
        QVERIFY(y);
        // 0 % and 100 % lie inside the plot, with room for a whole marker.
        QVERIFY(y->min() < 0.0 && y->min() > -10.0);
        QVERIFY(y->max() > 100.0 && y->max() < 110.0);

        // An empty chart still shows the study's axis.
        BestOfNChart empty;
        auto* ex = qobject_cast<QCategoryAxis*>(empty.chart()->axes(Qt::Horizontal).value(0));
        QCOMPARE(ex->categoriesLabels().size(), 4);
        QVERIFY2(empty.emptyText().contains(QLatin1String("Open run database")), qPrintable(empty.emptyText()));
    }

    void oneLinePerRegimeWithErrorBars()
    {
        BestOfNChart chart;
        chart.setCurves(regimes());
        QCOMPARE(chart.levelFilter(), 0);
        const QList<QLineSeries*> lines = chart.curveSeries();
        QCOMPARE(lines.size(), 2); // the pooled curves only
        QCOMPARE(lines.at(0)->name(), QStringLiteral("agent"));
        QCOMPARE(lines.at(1)->name(), QStringLiteral("zero-shot"));
        QVERIFY(lines.at(0)->pen().color() != lines.at(1)->pen().color());
        // Points ordered by n; y is the percentage; x is log2(n) moved a little sideways.
        QCOMPARE(lines.at(1)->count(), 4);
        for (int j = 0; j < 4; ++j) {
            QVERIFY(std::fabs(lines.at(1)->at(j).x() - j) < 0.2);
            QVERIFY(lines.at(0)->at(j).x() < lines.at(1)->at(j).x());
        }
        QCOMPARE(lines.at(1)->at(0).y(), 20.0);
        QCOMPARE(lines.at(1)->at(3).y(), 50.0);

        const auto bars = chart.errorBars();
        QCOMPARE(bars.size(), 2);
        QCOMPARE(bars.at(0).size(), 4);
        QCOMPARE(bars.at(0).at(2).first.y(), 46.7);
        QCOMPARE(bars.at(0).at(2).second.y(), 80.0);
        QCOMPARE(bars.at(0).at(2).first.x(), lines.at(0)->at(2).x());
        QVERIFY(chart.emptyText().isEmpty());
    }

    // Unchecking a run (its curve leaves the list) does not recolour the others.
    void coloursStablePerRun()
    {
        QList<BestOfNSeries> curves = regimes();
        curves[0].colorKey = 1;
        curves[1].colorKey = 2;
        BestOfNChart chart;
        chart.setCurves(curves);
        const QColor zeroShot = chart.curveSeries().at(1)->pen().color();
        curves.removeFirst();
        chart.setCurves(curves);
        QCOMPARE(chart.curveSeries().size(), 1);
        QCOMPARE(chart.curveSeries().at(0)->pen().color(), zeroShot);
    }

    // A marker at 100 % (the n = 8 point of a solved level) is wholly inside the plot area.
    void markerAtHundredIsNotClipped()
    {
        BestOfNChart chart;
        chart.setCurves({{QStringLiteral("agent"), 0, {pt(1, 80.0, 60.0, 95.0, 10), pt(8, 100.0, 100.0, 100.0, 10)}}});
        chart.resize(800, 500);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        const QPointF top = chart.chart()->mapToPosition(chart.curveSeries().at(0)->at(1), chart.curveSeries().at(0));
        const QRectF plot = chart.chart()->plotArea();
        const qreal half = chart.curveSeries().at(0)->markerSize() / 2;
        QVERIFY2(top.y() - half >= plot.top(), qPrintable(QStringLiteral("%1 vs %2").arg(top.y()).arg(plot.top())));
    }

    // After a level switch the error bars are painted where the new curves are, none left over.
    void errorBarsFollowTheLevel()
    {
        BestOfNChart chart;
        chart.setCurves(regimes());
        chart.resize(800, 500);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        chart.setLevelFilter(2);
        QCoreApplication::processEvents();
        QCOMPARE(chart.errorBarPaths().size(), 1);
        const QRectF painted = chart.errorBarPaths().at(0).boundingRect();
        QLineSeries* line = chart.curveSeries().at(0);
        for (const auto& bar : chart.errorBars().at(0)) {
            const QPointF lo = chart.chart()->mapToPosition(bar.first, line);
            const QPointF hi = chart.chart()->mapToPosition(bar.second, line);
            QVERIFY(painted.adjusted(-1, -1, 1, 1).contains(lo));
            QVERIFY(painted.adjusted(-1, -1, 1, 1).contains(hi));
        }
        // The painted extent is that of this level's intervals (20–100 %), not the pooled ones.
        const QPointF top = chart.chart()->mapToPosition(QPointF(0, 100.0), line);
        QVERIFY(std::abs(painted.top() - top.y()) <= 1.0);
    }

    // Hovering a point: the view's tooltip event keeps the point's numbers; a press hides them.
    void restingCursorShowsTheNumbers()
    {
        BestOfNChart chart;
        chart.setCurves(regimes());
        chart.resize(800, 500);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QWidget* viewport = chart.chartView()->viewport();
        const QPoint at = chart.viewportPosition(1, 2); // zero-shot, n = 4
        QHelpEvent help(QEvent::ToolTip, at, viewport->mapToGlobal(at));
        QCoreApplication::sendEvent(viewport, &help);
        QTRY_VERIFY(QToolTip::isVisible());
        QCOMPARE(QToolTip::text(), chart.toolTipText(1, 3)); // points()[3] is n = 4
        QVERIFY(QToolTip::text().contains(QLatin1String("n = 4: 40.0 % correct")));
        QTest::mouseClick(viewport, Qt::LeftButton, {}, at);
        QTRY_VERIFY(!QToolTip::isVisible());
    }

    void notCountedSamplesAreMarked()
    {
        QList<BestOfNSeries> curves = regimes();
        curves[0].notCounted = 1;
        curves[0].notCountedWhy = {
            QStringLiteral("L1/1 sample 3: measured 0.133 ms is below the roofline floor 2.1 ms")};
        BestOfNChart chart;
        chart.setCurves(curves);
        QVERIFY(chart.curveSeries().at(0)->name().contains(QLatin1String("1 not counted")));
        bool rings = false;
        for (QAbstractSeries* s : chart.chart()->series())
            rings = rings || s->objectName() == QLatin1String("not-counted:0");
        QVERIFY(rings);
        const QString tip = chart.toolTipText(0, 0);
        QVERIFY2(tip.contains(QLatin1String("1 sample not counted")) && tip.contains(QLatin1String("floor 2.1 ms")),
                 qPrintable(tip));
    }

    void levelFilter()
    {
        BestOfNChart chart;
        chart.setCurves(regimes());
        QSignalSpy spy(&chart, &BestOfNChart::levelFilterChanged);
        chart.setLevelFilter(2);
        QCOMPARE(spy.size(), 1);
        QCOMPARE(chart.levelCombo()->currentText(), QStringLiteral("Level 2"));
        QCOMPARE(chart.curveSeries().size(), 1);
        QCOMPARE(chart.curveSeries().first()->count(), 3);
        auto* x = qobject_cast<QCategoryAxis*>(chart.chart()->axes(Qt::Horizontal).value(0));
        QCOMPARE(x->categoriesLabels(), (QStringList{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("4")}));

        // The combo drives the filter too.
        chart.levelCombo()->setCurrentIndex(chart.levelCombo()->findData(3));
        QCOMPARE(chart.levelFilter(), 3);
        QCOMPARE(spy.size(), 2);
        QVERIFY(chart.curveSeries().isEmpty());
        QVERIFY2(chart.emptyText().contains(QLatin1String("level 3")), qPrintable(chart.emptyText()));
        chart.setLevelFilter(0);
        QCOMPARE(chart.curveSeries().size(), 2);
    }

    void undrawablePointsAreLeftOut()
    {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        BestOfNChart chart;
        chart.setCurves({{QStringLiteral("iterative"),
                          0,
                          {pt(1, 30.0, 10.0, 50.0, 10), pt(2, nan, nan, nan, 0), pt(4, 45.0, nan, nan, 3)}}});
        QCOMPARE(chart.curveSeries().first()->count(), 2);
        // Without an interval the bar collapses to the point.
        QCOMPARE(chart.errorBars().first().at(1).first, chart.errorBars().first().at(1).second);
        auto* x = qobject_cast<QCategoryAxis*>(chart.chart()->axes(Qt::Horizontal).value(0));
        QCOMPARE(x->categoriesLabels(), (QStringList{QStringLiteral("1"), QStringLiteral("4")}));
    }

    void toolTip()
    {
        BestOfNChart chart;
        chart.setCurves(regimes());
        const QString t = chart.toolTipText(0, 2);
        QVERIFY2(t.contains(QLatin1String("agent")), qPrintable(t));
        QVERIFY(t.contains(QLatin1String("all levels")));
        QVERIFY(t.contains(QLatin1String("n = 4: 63.3 % correct")));
        QVERIFY(t.contains(QStringLiteral("95 % interval 46.7–80.0 %")));
        QVERIFY(t.contains(QLatin1String("30 tasks with at least 4 samples")));
        QVERIFY(chart.toolTipText(5, 0).isEmpty());
    }

    // Issue 36 item 6: the study's best-of-n (a sweep) is drawn solid, first-turn pass@n dashed,
    // and each point's tooltip says which it is.
    void sweepSolidFirstTurnDashed()
    {
        BestOfNSeries sweep{QStringLiteral("agent sweep"), 0, {pt(1, 3.3, 0.1, 17.2, 30), pt(2, 26.7, 12.3, 45.9, 30)}};
        sweep.kind = BestOfNKind::Sweep;
        BestOfNSeries firstTurn{QStringLiteral("#9 agent: first-turn pass@n"), 0, {pt(1, 10.0, 2.1, 26.5, 30)}};
        BestOfNChart chart;
        chart.setCurves({sweep, firstTurn});
        QCOMPARE(chart.curveSeries().size(), 2);
        QCOMPARE(chart.curveSeries()[0]->pen().style(), Qt::SolidLine);
        QCOMPARE(chart.curveSeries()[1]->pen().style(), Qt::DashLine);
        QCOMPARE(chart.curveSeries()[0]->points().at(1).y(), 26.7);
        const QString s = chart.toolTipText(0, 1);
        QVERIFY2(s.contains(QLatin1String("n = 2: 26.7 % correct, the whole regime with 2 candidates per turn")),
                 qPrintable(s));
        QVERIFY2(s.contains(QLatin1String("30 tasks, every one counted")), qPrintable(s));
        const QString f = chart.toolTipText(1, 0);
        QVERIFY2(f.contains(QLatin1String("n = 1: 10.0 % correct (first-turn pass@1)")), qPrintable(f));
    }
};

QTEST_MAIN(TestBestOfNChart)
#include "tst_bestofnchart.moc"
