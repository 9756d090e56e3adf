// The best-of-n chart: its log2 axis, one line per regime, error bars, the level filter.
#include "app/charts/bestofnchart.h"

#include "core/study/runstats.h"

#include <QCategoryAxis>
#include <QChart>
#include <QComboBox>
#include <QLineSeries>
#include <QSignalSpy>
#include <QTest>
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
        QCOMPARE(y->min(), 0.0);
        QCOMPARE(y->max(), 100.0);

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
};

QTEST_MAIN(TestBestOfNChart)
#include "tst_bestofnchart.moc"
