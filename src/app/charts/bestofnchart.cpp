#include "app/charts/bestofnchart.h"

#include "app/charts/chartformat.h"

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCursor>
#include <QGraphicsPathItem>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainterPath>
#include <QScatterSeries>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <set>

namespace kwb::app {

namespace {

constexpr qreal kErrorBarZ = 5.5;
constexpr double kAxisPad = 0.35; // log2 units either side of the first and last n

} // namespace

bool BestOfNChart::drawable(const BestOfNPoint& p)
{
    return p.n >= 1 && p.tasks > 0 && std::isfinite(p.passPct.value);
}

BestOfNChart::BestOfNChart(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("best-of-n"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 0);
    auto* label = new QLabel(QStringLiteral("&Level:"), this);
    m_levelCombo = new QComboBox(this);
    m_levelCombo->setObjectName(QStringLiteral("levelFilter"));
    m_levelCombo->addItem(QStringLiteral("All levels (pooled)"), 0);
    for (int level = 1; level <= 3; ++level)
        m_levelCombo->addItem(QStringLiteral("Level %1").arg(level), level);
    label->setBuddy(m_levelCombo);
    bar->addWidget(label);
    bar->addWidget(m_levelCombo);
    bar->addStretch(1);
    layout->addLayout(bar);

    auto* chart = new QChart;
    chart->setTheme(QChart::ChartThemeLight);
    chart->setAnimationOptions(QChart::NoAnimation);
    // What is drawn is first-turn pass@n (the page's text says so), not the study's best-of-n.
    chart->setTitle(QStringLiteral("<b>First-turn pass@n</b>: tasks solved by one of n first-turn samples (95 % "
                                   "bootstrap interval over tasks and samples)"));
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(6, 6, 6, 6));
    m_view = new QChartView(chart, this);
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->setMinimumSize(420, 300);
    m_view->viewport()->installEventFilter(this);
    layout->addWidget(m_view, 1);

    m_axisY = new QValueAxis(this);
    // A little room beyond 0 and 100 %, so a marker at either end is not cut by the plot's edge.
    m_axisY->setRange(-4.0, 104.0);
    m_axisY->setTickType(QValueAxis::TicksDynamic);
    m_axisY->setTickAnchor(0.0);
    m_axisY->setTickInterval(20.0);
    m_axisY->setMinorTickCount(1);
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));
    m_axisY->setTitleText(QStringLiteral("correct %"));
    chart->addAxis(m_axisY, Qt::AlignLeft);

    m_emptyItem = new QGraphicsSimpleTextItem(chart);
    m_emptyItem->setBrush(QColor(0x55, 0x55, 0x55));
    m_emptyItem->setZValue(kErrorBarZ + 1);

    connect(m_levelCombo, qOverload<int>(&QComboBox::currentIndexChanged), this,
            [this](int index) { setLevelFilter(m_levelCombo->itemData(index).toInt()); });
    connect(chart, &QChart::plotAreaChanged, this, [this] { relayoutOverlay(); });
    addExportActions(this, {m_view});
    rebuild();
}

BestOfNChart::~BestOfNChart() = default;

QChart* BestOfNChart::chart() const
{
    return m_view->chart();
}

void BestOfNChart::setCurves(const QList<BestOfNSeries>& curves)
{
    m_curves = curves;
    rebuild();
}

void BestOfNChart::setLevelFilter(int level)
{
    level = std::clamp(level, 0, 3);
    const int index = m_levelCombo->findData(level);
    if (m_levelCombo->currentIndex() != index) {
        const QSignalBlocker block(m_levelCombo);
        m_levelCombo->setCurrentIndex(index);
    }
    if (level == m_level)
        return;
    m_level = level;
    rebuild();
    Q_EMIT levelFilterChanged(level);
}

QList<BestOfNSeries> BestOfNChart::visibleCurves() const
{
    QList<BestOfNSeries> out;
    for (const BestOfNSeries& s : m_curves) {
        if (s.level == m_level)
            out.append(s);
    }
    return out;
}

void BestOfNChart::rebuild()
{
    QChart* c = chart();
    c->removeAllSeries();
    m_lines.clear();
    m_drawn.clear();
    qDeleteAll(m_errorItems);
    m_errorItems.clear();
    if (m_axisX) {
        c->removeAxis(m_axisX);
        delete m_axisX;
    }

    const QList<BestOfNSeries> visible = visibleCurves();
    // The x axis: log2(n), a tick labelled n at every n any visible curve has (1, 2, 4, 8 by
    // default, so an empty chart still shows the study's axis).
    std::set<int> ns;
    for (const BestOfNSeries& s : visible)
        for (const BestOfNPoint& p : s.points)
            if (drawable(p))
                ns.insert(p.n);
    if (ns.empty())
        ns = {1, 2, 4, 8};
    m_axisX = new QCategoryAxis(this);
    m_axisX->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    m_axisX->setTitleText(QStringLiteral("n, samples per task (log₂ scale)"));
    const double first = std::log2(*ns.begin()), last = std::log2(*ns.rbegin());
    m_axisX->setStartValue(first - kAxisPad);
    for (int n : ns)
        m_axisX->append(QString::number(n), std::log2(n));
    m_axisX->setRange(first - kAxisPad, last + kAxisPad);
    c->addAxis(m_axisX, Qt::AlignBottom);

    // Curves side by side at each n, so their error bars do not hide each other.
    const int k = static_cast<int>(visible.size());
    const double spread = std::min(0.3, 0.06 * std::max(0, k - 1));
    for (int i = 0; i < k; ++i) {
        const BestOfNSeries& s = visible.at(i);
        const double offset = k > 1 ? -spread / 2 + spread * i / (k - 1) : 0.0;
        auto* line = new QLineSeries;
        line->setName(
            s.notCounted > 0
                ? QStringLiteral("%1 (%2 not counted: below the roofline floor)").arg(s.label).arg(s.notCounted)
                : s.label);
        line->setObjectName(QStringLiteral("curve:%1").arg(i));
        const QColor color = curveColor(i);
        QPen pen(color, 2.2);
        if (s.kind == BestOfNKind::FirstTurnPassAtN)
            pen.setStyle(Qt::DashLine); // the second kind of curve, apart from the study's at a glance
        line->setPen(pen);
        line->setPointsVisible(true);
        line->setMarkerSize(8.0);
        Drawn d;
        d.curve = i;
        QList<int> order;
        for (int j = 0; j < s.points.size(); ++j)
            order.append(j);
        std::stable_sort(order.begin(), order.end(),
                         [&s](int a, int b) { return s.points.at(a).n < s.points.at(b).n; });
        for (int j : order) {
            const BestOfNPoint& p = s.points.at(j);
            if (!drawable(p))
                continue;
            const double x = std::log2(p.n) + offset;
            line->append(x, p.passPct.value);
            d.pointIndex.append(j);
            const bool interval = std::isfinite(p.passPct.low) && std::isfinite(p.passPct.high);
            d.low.append(QPointF(x, interval ? p.passPct.low : p.passPct.value));
            d.high.append(QPointF(x, interval ? p.passPct.high : p.passPct.value));
        }
        c->addSeries(line);
        line->attachAxis(m_axisX);
        line->attachAxis(m_axisY);
        m_lines.append(line);
        if (s.notCounted > 0) {
            // Ringed in red: this curve left out samples whose times are impossible.
            auto* rings = new QScatterSeries;
            rings->setObjectName(QStringLiteral("not-counted:%1").arg(i));
            rings->setMarkerShape(QScatterSeries::MarkerShapeCircle);
            rings->setMarkerSize(15.0);
            rings->setColor(Qt::transparent);
            rings->setBorderColor(QColor(0xc0, 0x39, 0x2b));
            rings->setPen(QPen(QColor(0xc0, 0x39, 0x2b), 1.6));
            rings->append(line->points());
            c->addSeries(rings);
            rings->attachAxis(m_axisX);
            rings->attachAxis(m_axisY);
            if (auto markers = c->legend()->markers(rings); !markers.isEmpty())
                markers.first()->setVisible(false);
        }
        m_drawn.append(d);
        auto* bars = new QGraphicsPathItem(c);
        bars->setPen(QPen(color.darker(110), 1.4));
        bars->setZValue(kErrorBarZ);
        m_errorItems.append(bars);
        connect(line, &QLineSeries::hovered, this, [this, i](const QPointF& value, bool state) {
            if (!state) {
                QToolTip::hideText();
                return;
            }
            const Drawn& dd = m_drawn.at(i);
            int nearest = -1;
            double best = 0.25; // log2 units: only near a point
            for (int j = 0; j < dd.low.size(); ++j) {
                const double dx = std::fabs(dd.low.at(j).x() - value.x());
                if (dx < best) {
                    best = dx;
                    nearest = j;
                }
            }
            if (nearest >= 0)
                QToolTip::showText(QCursor::pos(), toolTipText(i, dd.pointIndex.at(nearest)), m_view);
        });
    }
    m_emptyItem->setText(emptyText());
    m_emptyItem->setVisible(!emptyText().isEmpty());
    relayoutOverlay();
    // The new axis reaches the series' domain only when the chart lays out again, which need
    // not move the plot area (no plotAreaChanged): place the error bars again then, so none of
    // the previous level's stay painted.
    if (!m_relayoutQueued) {
        m_relayoutQueued = true;
        QTimer::singleShot(0, this, [this] {
            m_relayoutQueued = false;
            relayoutOverlay();
            m_view->viewport()->update();
        });
    }
}

QPoint BestOfNChart::viewportPosition(int curve, int drawn) const
{
    if (curve < 0 || curve >= m_lines.size() || drawn < 0 || drawn >= m_lines.at(curve)->count())
        return QPoint(-1, -1);
    const QPointF inChart = chart()->mapToPosition(m_lines.at(curve)->at(drawn), m_lines.at(curve));
    return m_view->mapFromScene(chart()->mapToScene(inChart));
}

QPair<int, int> BestOfNChart::pointAt(const QPoint& viewportPos) const
{
    QPair<int, int> best(-1, -1);
    double bestDistance = 8.0; // pixels: on the marker
    for (int i = 0; i < m_lines.size(); ++i) {
        for (int j = 0; j < m_lines.at(i)->count(); ++j) {
            const double d = QLineF(QPointF(viewportPosition(i, j)), QPointF(viewportPos)).length();
            if (d <= bestDistance) {
                bestDistance = d;
                best = {i, m_drawn.at(i).pointIndex.at(j)};
            }
        }
    }
    return best;
}

bool BestOfNChart::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_view->viewport()) {
        if (event->type() == QEvent::ToolTip) {
            auto* help = static_cast<QHelpEvent*>(event);
            const auto [curve, point] = pointAt(help->pos());
            if (curve >= 0) {
                QToolTip::showText(help->globalPos(), toolTipText(curve, point), m_view->viewport());
                return true;
            }
        } else if (event->type() == QEvent::MouseButtonPress) {
            QToolTip::hideText();
        }
    }
    return QWidget::eventFilter(watched, event);
}

QColor BestOfNChart::curveColor(int curve) const
{
    const QList<BestOfNSeries> visible = visibleCurves();
    if (curve < 0 || curve >= visible.size())
        return QColor();
    const int key = visible.at(curve).colorKey;
    return seriesColor(key >= 0 ? key : curve);
}

QList<QPainterPath> BestOfNChart::errorBarPaths() const
{
    QList<QPainterPath> out;
    for (const QGraphicsPathItem* item : m_errorItems)
        out.append(item->path());
    return out;
}

void BestOfNChart::relayoutOverlay()
{
    QChart* c = chart();
    const QRectF plot = c->plotArea();
    for (int i = 0; i < m_errorItems.size() && i < m_lines.size(); ++i) {
        const Drawn& d = m_drawn.at(i);
        QPainterPath path;
        const qreal cap = 4.0;
        for (int j = 0; j < d.low.size(); ++j) {
            const QPointF lo = c->mapToPosition(d.low.at(j), m_lines.at(i));
            const QPointF hi = c->mapToPosition(d.high.at(j), m_lines.at(i));
            path.moveTo(lo);
            path.lineTo(hi);
            path.moveTo(lo - QPointF(cap, 0));
            path.lineTo(lo + QPointF(cap, 0));
            path.moveTo(hi - QPointF(cap, 0));
            path.lineTo(hi + QPointF(cap, 0));
        }
        m_errorItems.at(i)->setPath(path);
    }
    if (m_emptyItem->isVisible() && !plot.isEmpty())
        centreText(m_emptyItem, plot);
}

QList<QList<QPair<QPointF, QPointF>>> BestOfNChart::errorBars() const
{
    QList<QList<QPair<QPointF, QPointF>>> out;
    for (const Drawn& d : m_drawn) {
        QList<QPair<QPointF, QPointF>> bars;
        for (int j = 0; j < d.low.size(); ++j)
            bars.append({d.low.at(j), d.high.at(j)});
        out.append(bars);
    }
    return out;
}

QString BestOfNChart::toolTipText(int curve, int pointIndex) const
{
    const QList<BestOfNSeries> visible = visibleCurves();
    if (curve < 0 || curve >= visible.size())
        return QString();
    const BestOfNSeries& s = visible.at(curve);
    if (pointIndex < 0 || pointIndex >= s.points.size())
        return QString();
    const BestOfNPoint& p = s.points.at(pointIndex);
    QStringList lines;
    lines << QStringLiteral("<b>%1</b> · %2")
                 .arg(s.label.toHtmlEscaped(),
                      s.level == 0 ? QStringLiteral("all levels") : QStringLiteral("level %1").arg(s.level));
    const bool sweep = s.kind == BestOfNKind::Sweep;
    lines << (sweep ? QStringLiteral("n = %1: %2 % correct, the whole regime with %1 candidate%3 per turn")
                    : QStringLiteral("n = %1: %2 % correct (first-turn pass@%1)"))
                 .arg(p.n)
                 .arg(QString::number(p.passPct.value, 'f', 1))
                 .arg(p.n == 1 ? QString() : QStringLiteral("s"));
    if (std::isfinite(p.passPct.low) && std::isfinite(p.passPct.high))
        lines << QStringLiteral("95 % interval %1–%2 %")
                     .arg(QString::number(p.passPct.low, 'f', 1), QString::number(p.passPct.high, 'f', 1));
    if (s.notCounted > 0) {
        lines << QStringLiteral("<span style='color:#c0392b'><b>%1 sample%2 not counted</b> (status correct, time "
                                "below the roofline floor):</span>")
                     .arg(s.notCounted)
                     .arg(s.notCounted == 1 ? QString() : QStringLiteral("s"));
        for (int k = 0; k < s.notCountedWhy.size() && k < 3; ++k)
            lines << s.notCountedWhy.at(k).toHtmlEscaped();
        if (s.notCountedWhy.size() > 3)
            lines << QStringLiteral("… and %1 more").arg(s.notCountedWhy.size() - 3);
    }
    if (sweep)
        lines << QStringLiteral("%1 task%2, every one counted")
                     .arg(p.tasks)
                     .arg(p.tasks == 1 ? QString() : QStringLiteral("s"));
    else
        lines << QStringLiteral("%1 task%2 with at least %3 sample%4")
                     .arg(p.tasks)
                     .arg(p.tasks == 1 ? QString() : QStringLiteral("s"))
                     .arg(p.n)
                     .arg(p.n == 1 ? QString() : QStringLiteral("s"));
    return lines.join(QStringLiteral("<br>"));
}

QString BestOfNChart::emptyText() const
{
    if (m_curves.isEmpty())
        return QStringLiteral("No best-of-n curves yet: open a run with several samples per task\n"
                              "(File > Open run database…).");
    bool any = false;
    for (const BestOfNSeries& s : visibleCurves())
        for (const BestOfNPoint& p : s.points)
            any = any || drawable(p);
    if (!any)
        return m_level == 0 ? QStringLiteral("No pooled curve: the runs have best-of-n points per level only.")
                            : QStringLiteral("No curve for level %1 in the open runs.").arg(m_level);
    return QString();
}

QSize BestOfNChart::exportSize() const
{
    return m_view->viewport()->size();
}

void BestOfNChart::renderExport(QPainter* painter, const QRectF& target)
{
    m_view->render(painter, target, m_view->viewport()->rect());
}

} // namespace kwb::app
