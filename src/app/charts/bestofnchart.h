#pragma once
// Best-of-n: the share of tasks solved (correct %, y) against n candidates per turn (x, log2-spaced,
// 1, 2, 4, 8), with 95 % bootstrap intervals as error bars: the study's curve from a sweep (the
// whole regime at each n, solid) and first-turn pass@n of single runs (dashed), each labelled. A
// level filter shows the pooled curves (all levels) or one level's.

#include "app/charts/chartexport.h"
#include "core/study/runstats.h"

#include <QList>
#include <QPointF>
#include <QString>
#include <QWidget>

class QCategoryAxis;
class QChart;
class QChartView;
class QComboBox;
class QGraphicsPathItem;
class QGraphicsSimpleTextItem;
class QPainterPath;
class QLineSeries;
class QValueAxis;

namespace kwb::app {

/// What a curve measures (issue 36 item 6).
enum class BestOfNKind {
    /// The study's best-of-n: a `kwb sweep`, one run of the whole regime (every turn, its
    /// selection) per n, each point that run's correct % (core's SweepCurve). Drawn solid.
    Sweep,
    /// First-turn pass@n of one run (unbiased estimator over its first-turn samples): what n
    /// samples of one prompt give, without later turns or selection. Drawn dashed.
    FirstTurnPassAtN,
};

/// One curve: a regime (or any label) at one level. The points are core's best-of-n points
/// (core/study/runstats.h: bestOfNCurve()): n, the tasks that have at least n samples, and passPct
/// (value, low, high in percent). A point with no tasks or an invalid estimate is not drawn.
struct BestOfNSeries
{
    QString label; ///< "agent", "zero-shot", …
    int level = 0; ///< 0 = all levels pooled; 1, 2, 3 = that level only
    QList<BestOfNPoint> points;
    /// The colour's key (the run id): a curve keeps its colour when other runs come and go.
    /// -1: by position among the visible curves.
    int colorKey = -1;
    /// Samples of this run with status correct that are not counted (below the roofline floor),
    /// and why; the curve's markers are then ringed in red and the tooltip says so.
    int notCounted = 0;
    QStringList notCountedWhy = {};
    BestOfNKind kind = BestOfNKind::FirstTurnPassAtN;
};

class BestOfNChart
    : public QWidget
    , public ExportableChart
{
    Q_OBJECT
public:
    explicit BestOfNChart(QWidget* parent = nullptr);
    ~BestOfNChart() override;

    void setCurves(const QList<BestOfNSeries>& curves);
    const QList<BestOfNSeries>& curves() const { return m_curves; }
    /// 0: the pooled curves (level 0); 1–3: that level's curves. Also set by the combo.
    void setLevelFilter(int level);
    int levelFilter() const { return m_level; }
    /// The curves the filter shows, in the order given; the chart's line series follow it.
    QList<BestOfNSeries> visibleCurves() const;

    QChart* chart() const;
    QChartView* chartView() const { return m_view; }
    QComboBox* levelCombo() const { return m_levelCombo; }
    /// The line series drawn for visibleCurves(), in the same order.
    QList<QLineSeries*> curveSeries() const { return m_lines; }
    /// The error bars as drawn, per visible curve: (n, low %) → (n, high %) in data coordinates
    /// (n as on the axis, log2 with the curve's small sideways offset).
    QList<QList<QPair<QPointF, QPointF>>> errorBars() const;
    /// The tooltip of point `pointIndex` of visible curve `curve`.
    QString toolTipText(int curve, int pointIndex) const;
    /// The colour of visible curve `curve` (stable per colorKey).
    QColor curveColor(int curve) const;
    /// The error bars' paths as painted, per visible curve, in chart coordinates.
    QList<QPainterPath> errorBarPaths() const;
    /// Where drawn point `drawn` (in n order) of visible curve `curve` is, in viewport
    /// coordinates of chartView(); (-1, -1) if none.
    QPoint viewportPosition(int curve, int drawn) const;
    /// The (curve, index into its points) under a viewport position, or (-1, -1).
    QPair<int, int> pointAt(const QPoint& viewportPos) const;
    /// The text shown when no curve is drawn ("" when one is).
    QString emptyText() const;

    QSize exportSize() const override;
    void renderExport(QPainter* painter, const QRectF& target) override;

Q_SIGNALS:
    void levelFilterChanged(int level);

protected:
    /// The view's tooltip events: the point under the cursor keeps its text (QGraphicsView alone
    /// hides it, the points being no items with a tool tip); a press takes it away.
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct Drawn
    {
        int curve = -1;           ///< index into visibleCurves()
        QList<int> pointIndex;    ///< drawn point -> index into that curve's points
        QList<QPointF> low, high; ///< data coordinates of each drawn point's interval
    };

    void rebuild();
    void relayoutOverlay();
    static bool drawable(const BestOfNPoint& p);

    QList<BestOfNSeries> m_curves;
    int m_level = 0;
    QComboBox* m_levelCombo = nullptr;
    QChartView* m_view = nullptr;
    QCategoryAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    QList<QLineSeries*> m_lines;
    QList<Drawn> m_drawn;
    QList<QGraphicsPathItem*> m_errorItems;
    bool m_relayoutQueued = false;
    QGraphicsSimpleTextItem* m_emptyItem = nullptr;
};

} // namespace kwb::app
