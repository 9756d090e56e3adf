#include "app/charts/rooflinechart.h"

#include "app/charts/chartexport.h"
#include "app/charts/chartformat.h"

#include <QApplication>
#include <QChart>
#include <QCursor>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QHelpEvent>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMouseEvent>
#include <QPainterPath>
#include <QRubberBand>
#include <QScatterSeries>
#include <QToolTip>
#include <QWheelEvent>
#include <QtMath>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace kwb::app {

namespace {

// Above the series (ChartPresenter draws series at z 4–5) and below the legend.
constexpr qreal kArrowZ = 5.5;
constexpr qreal kLabelZ = 6.0;
constexpr qreal kSelectionZ = 6.5;
constexpr qreal kMarkerSize = 11.0;
constexpr qreal kDenseMarkerSize = 7.0;
const QColor kSelectionColor(0xe6, 0x7e, 0x22);

double decadeFloor(double v)
{
    return std::pow(10.0, std::floor(std::log10(v)));
}

double decadeCeil(double v)
{
    return std::pow(10.0, std::ceil(std::log10(v)));
}

bool positiveFinite(double v)
{
    return std::isfinite(v) && v > 0;
}

QScatterSeries::MarkerShape shapeForLevel(int level)
{
    switch (level) {
    case 1: return QScatterSeries::MarkerShapeCircle;
    case 2: return QScatterSeries::MarkerShapeRectangle;
    case 3: return QScatterSeries::MarkerShapeTriangle;
    default: return QScatterSeries::MarkerShapeRotatedRectangle;
    }
}

QString levelName(int level)
{
    return level >= 1 ? QStringLiteral("L%1").arg(level) : QStringLiteral("other");
}

QColor roofColor(const Roof& roof)
{
    switch (roof.kind) {
    case Roof::Kind::Memory: return QColor(0x2c, 0x3e, 0x50);
    case Roof::Kind::Fp32: return QColor(0xc0, 0x39, 0x2b);
    case Roof::Kind::Tf32Tensor: return QColor(0x8e, 0x44, 0xad);
    case Roof::Kind::Bf16Tensor:
    case Roof::Kind::Fp16Tensor: return QColor(0x27, 0x60, 0x9e);
    }
    return Qt::black;
}

QString compactRoofText(const Roof& roof)
{
    return roof.kind == Roof::Kind::Memory ? QStringLiteral("%1 %2").arg(roof.label, humanBandwidth(roof.value))
                                           : QStringLiteral("%1 %2").arg(roof.label, humanGflops(roof.value));
}

} // namespace

RooflineChart::RooflineChart(QWidget* parent)
    : QChartView(new QChart, parent)
{
    setObjectName(QStringLiteral("roofline"));
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(480, 360);
    QChart* c = chart();
    c->setTheme(QChart::ChartThemeLight);
    c->setAnimationOptions(QChart::NoAnimation);
    c->legend()->setAlignment(Qt::AlignBottom);
    c->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
    c->setMargins(QMargins(6, 6, 6, 6));

    m_axisX = new QLogValueAxis(this);
    m_axisX->setBase(10.0);
    m_axisX->setLabelFormat(QStringLiteral("%g"));
    m_axisX->setTitleText(QStringLiteral("arithmetic intensity (FLOP per HBM byte)"));
    m_axisX->setMinorTickCount(8);
    m_axisY = new QLogValueAxis(this);
    m_axisY->setBase(10.0);
    m_axisY->setTitleText(QStringLiteral("GFLOP/s"));
    m_axisY->setMinorTickCount(8);
    for (QLogValueAxis* axis : {m_axisX, m_axisY}) {
        QPen minor = axis->minorGridLinePen();
        minor.setColor(QColor(0, 0, 0, 18));
        axis->setMinorGridLinePen(minor);
    }
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisY, Qt::AlignLeft);

    m_emptyItem = new QGraphicsSimpleTextItem(c);
    m_emptyItem->setZValue(kLabelZ);
    m_emptyItem->setBrush(QColor(0x55, 0x55, 0x55));
    m_noteItem = new QGraphicsSimpleTextItem(c);
    m_noteItem->setZValue(kLabelZ);
    m_noteItem->setBrush(QColor(0x55, 0x55, 0x55));
    QFont small = m_noteItem->font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    m_noteItem->setFont(small);
    m_selectionBox = new QGraphicsRectItem(c);
    m_selectionBox->setZValue(kSelectionZ);
    m_selectionBox->setBrush(QColor(255, 255, 255, 235));
    m_selectionBox->setPen(QPen(kSelectionColor, 1.2));
    m_selectionBox->setVisible(false);
    m_selectionLabel = new QGraphicsSimpleTextItem(c);
    m_selectionLabel->setZValue(kSelectionZ + 0.1);
    m_selectionLabel->setBrush(QColor(0x22, 0x22, 0x22));
    m_selectionLabel->setVisible(false);

    connect(c, &QChart::plotAreaChanged, this, [this] { relayoutOverlay(); });
    // Zoom (issue 38): drag a rectangle, or the wheel about the cursor; a right click zooms out,
    // resetZoom() shows everything. The arrows and labels follow the axes.
    setRubberBand(QChartView::RectangleRubberBand);
    connect(m_axisX, &QLogValueAxis::rangeChanged, this, [this] { relayoutOverlay(); });
    connect(m_axisY, &QLogValueAxis::rangeChanged, this, [this] { relayoutOverlay(); });
    addExportActions(this);
    rebuild();
}

RooflineChart::~RooflineChart() = default;

void RooflineChart::setRoofs(const GpuRoofs& roofs)
{
    m_roofs = roofs;
    rebuild();
}

void RooflineChart::setPoints(const QList<RooflinePoint>& points)
{
    m_points.clear();
    m_skipped = 0;
    for (const RooflinePoint& p : points) {
        // A point off the log axes (no intensity, not timed) cannot be placed; a candidate that
        // cannot be placed is dropped while its reference stays.
        if (!positiveFinite(p.intensity) || !positiveFinite(p.referenceGflops)) {
            ++m_skipped;
            continue;
        }
        RooflinePoint q = p;
        if (q.candidateGflops && !positiveFinite(*q.candidateGflops))
            q.candidateGflops.reset();
        if (q.candidateIntensity && !positiveFinite(*q.candidateIntensity))
            q.candidateIntensity.reset();
        m_points.append(q);
    }
    // The selection outlives new data where its task is still placed.
    const bool lost =
        !m_selected.isEmpty() && std::none_of(m_points.cbegin(), m_points.cend(),
                                              [this](const RooflinePoint& p) { return p.task == m_selected; });
    if (lost)
        m_selected.clear();
    rebuild();
    if (lost)
        Q_EMIT taskSelected(QString());
}

void RooflineChart::rebuild()
{
    QChart* c = chart();
    m_seriesPoints.clear();
    m_seriesMarkers.clear();
    m_roofSeries.clear();
    c->removeAllSeries();
    clearOverlay();
    buildMarkers();
    updateRanges();
    rebuildRoofs();
    rebuildPoints();
    m_axisX->setRange(m_xMin, m_xMax);
    m_axisY->setRange(m_yMin, m_yMax);
    m_axisY->setLabelFormat(m_yMin < 1.0 ? QStringLiteral("%g") : QStringLiteral("%.0f"));

    if (m_roofs.isValid()) {
        const Roof* mem = m_roofs.primaryMemory();
        c->setTitle(QStringLiteral("<b>%1</b>: %2, FP32 %3, FP32 ridge %4")
                        .arg(m_roofs.name.toHtmlEscaped(), mem->label + QLatin1Char(' ') + humanBandwidth(mem->value),
                             humanGflops(m_roofs.fp32Gflops()), intensityText(m_roofs.fp32RidgeIntensity())) +
                    (placementNote().isEmpty()
                         ? QString()
                         : QStringLiteral("<br><small>%1</small>").arg(placementNote().toHtmlEscaped())));
    } else {
        c->setTitle(m_roofs.name.isEmpty() ? QStringLiteral("Roofline") : m_roofs.name.toHtmlEscaped());
    }
    m_emptyItem->setText(emptyText());
    m_emptyItem->setVisible(!emptyText().isEmpty());
    relayoutOverlay();
}

void RooflineChart::updateRanges()
{
    double xLo = 0.01, xHi = 100.0, yLo = std::numeric_limits<double>::infinity(), yHi = 0.0;
    const double bw = m_roofs.bandwidthGBps();
    for (const Roof& r : std::as_const(m_roofs.roofs)) {
        if (!r.isCompute() || !positiveFinite(r.value))
            continue;
        yHi = std::max(yHi, r.value * 1.6);
        if (positiveFinite(bw))
            xHi = std::max(xHi, r.value / bw * 3.0);
    }
    QList<QPointF> at;
    for (const RooflineMarker& mk : std::as_const(m_markers))
        at.append(mk.at);
    // A task's kernels appear when it is selected: the axes hold them from the start, so a
    // selection never moves the chart.
    for (const RooflinePoint& p : std::as_const(m_points))
        if (drawsMeasured(p.measuredOn))
            for (const RooflineKernel& k : p.kernels)
                at.append(QPointF(k.intensity, k.gflops));
    for (const QPointF& pt : std::as_const(at)) {
        if (!positiveFinite(pt.x()) || !positiveFinite(pt.y()))
            continue;
        const QPointF mkAt = pt;
        xLo = std::min(xLo, mkAt.x() / 1.5);
        xHi = std::max(xHi, mkAt.x() * 1.5);
        yLo = std::min(yLo, mkAt.y() / 1.5);
        yHi = std::max(yHi, mkAt.y() * 1.5);
    }
    m_xMin = decadeFloor(xLo);
    m_xMax = decadeCeil(xHi);
    if (positiveFinite(bw))
        yLo = std::min(yLo, bw * m_xMin);
    if (!positiveFinite(yLo))
        yLo = 1.0;
    if (!positiveFinite(yHi))
        yHi = 1e6;
    m_yMin = decadeFloor(yLo);
    m_yMax = decadeCeil(std::max(yHi, m_yMin * 10.0));
}

void RooflineChart::rebuildRoofs()
{
    if (!m_roofs.isValid())
        return;
    QChart* c = chart();
    const Roof memory = *m_roofs.primaryMemory();
    const Roof fp32 = *m_roofs.primaryFp32();
    const double bw = memory.value;

    auto addLine = [&](const Roof& roof, const QList<QPointF>& pts, Qt::PenStyle style, qreal width,
                       const QString& name) {
        auto* s = new QLineSeries;
        s->setName(name);
        s->setObjectName(name);
        s->append(pts);
        QPen pen(roofColor(roof), width, style);
        pen.setCapStyle(Qt::FlatCap);
        s->setPen(pen);
        c->addSeries(s);
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
        if (auto markers = c->legend()->markers(s); !markers.isEmpty())
            markers.first()->setVisible(false);
        m_roofSeries.insert(s, roof);
        connect(s, &QLineSeries::hovered, this, [this, s](const QPointF&, bool state) {
            if (state)
                QToolTip::showText(QCursor::pos(), roofToolTip(m_roofSeries.value(s)), this);
            else
                QToolTip::hideText();
        });
        return s;
    };
    auto addLabel = [&](const QString& text, const QColor& color, QPointF anchor, bool alongDiagonal, bool alignRight) {
        RoofLabel l;
        l.item = new QGraphicsSimpleTextItem(text, c);
        l.item->setBrush(color.darker(115));
        l.item->setZValue(kLabelZ);
        l.anchor = anchor;
        l.alongDiagonal = alongDiagonal;
        l.alignRight = alignRight;
        m_roofLabels.append(l);
    };

    // The memory roof: the diagonal up to the FP32 ridge, then dashed on to the highest tensor
    // ridge, where only tensor-core kernels can follow it.
    const double ridgeFp32 = fp32.value / bw;
    double topPeak = fp32.value;
    for (const Roof& r : std::as_const(m_roofs.roofs))
        if (r.isTensor())
            topPeak = std::max(topPeak, r.value);
    addLine(memory, {QPointF(m_xMin, bw * m_xMin), QPointF(ridgeFp32, fp32.value)}, Qt::SolidLine, 2.2,
            QStringLiteral("roof:memory"));
    if (topPeak > fp32.value)
        addLine(memory, {QPointF(ridgeFp32, fp32.value), QPointF(topPeak / bw, topPeak)}, Qt::DashLine, 1.4,
                QStringLiteral("roof:memory:tensor"));
    // Its label sits above the highest memory roof (a theoretical one runs just above the measured
    // one), where no kernel can be.
    double topBandwidth = bw;
    for (const Roof& r : std::as_const(m_roofs.roofs))
        if (r.kind == Roof::Kind::Memory)
            topBandwidth = std::max(topBandwidth, r.value);
    const double labelX = m_xMin * std::pow(ridgeFp32 / m_xMin, 0.12);
    addLabel(compactRoofText(memory) + QStringLiteral(" (%1)").arg(memory.originText()), roofColor(memory),
             QPointF(labelX, topBandwidth * labelX), true, false);

    // The FP32 roof bounds the study's fp32 kernels.
    addLine(fp32, {QPointF(ridgeFp32, fp32.value), QPointF(m_xMax, fp32.value)}, Qt::SolidLine, 2.2,
            QStringLiteral("roof:fp32"));
    addLabel(
        QStringLiteral("%1 (%2), ridge %3").arg(compactRoofText(fp32), fp32.originText(), intensityText(ridgeFp32)),
        roofColor(fp32), QPointF(m_xMax, fp32.value), false, true);

    // Tensor-core roofs: dashed, and only where they apply.
    int tensorIndex = 0;
    for (const Roof& r : std::as_const(m_roofs.roofs)) {
        if (!r.isTensor() || !positiveFinite(r.value))
            continue;
        const double ridge = r.value / bw;
        addLine(r, {QPointF(ridge, r.value), QPointF(m_xMax, r.value)}, Qt::DashLine, 1.6,
                QStringLiteral("roof:tensor:%1").arg(tensorIndex++));
        addLabel(QStringLiteral("%1 (%2), ridge %3: only kernels on tensor cores")
                     .arg(compactRoofText(r), r.originText(), intensityText(ridge)),
                 roofColor(r), QPointF(m_xMax, r.value), false, true);
    }

    // Secondary (theoretical) roofs: dotted, named in a note rather than on the line, since they
    // sit within a few per cent of the measured ones.
    QStringList dotted;
    int secondary = 0;
    for (Roof::Kind kind : {Roof::Kind::Memory, Roof::Kind::Fp32}) {
        const QList<Roof> all = m_roofs.roofsOf(kind);
        for (int i = 1; i < all.size(); ++i) {
            const Roof& r = all.at(i);
            QList<QPointF> pts;
            if (kind == Roof::Kind::Memory)
                pts = {QPointF(m_xMin, r.value * m_xMin), QPointF(fp32.value / r.value, fp32.value)};
            else
                pts = {QPointF(r.value / bw, r.value), QPointF(m_xMax, r.value)};
            addLine(r, pts, Qt::DotLine, 1.4, QStringLiteral("roof:secondary:%1").arg(secondary++));
            dotted << QStringLiteral("%1 (%2)").arg(compactRoofText(r), r.originText());
        }
    }
    m_noteItem->setText(dotted.isEmpty() ? QString() : QStringLiteral("dotted: ") + dotted.join(QStringLiteral(", ")));

    // Ridge points: where each compute roof meets the memory roof.
    auto* ridges = new QScatterSeries;
    ridges->setName(QStringLiteral("ridge points"));
    ridges->setObjectName(QStringLiteral("ridges"));
    ridges->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
    ridges->setMarkerSize(8.0);
    ridges->setColor(Qt::white);
    ridges->setBorderColor(QColor(0x2c, 0x3e, 0x50));
    ridges->append(ridgeFp32, fp32.value);
    for (const Roof& r : std::as_const(m_roofs.roofs)) {
        if (r.isTensor() && positiveFinite(r.value))
            ridges->append(r.value / bw, r.value);
    }
    c->addSeries(ridges);
    ridges->attachAxis(m_axisX);
    ridges->attachAxis(m_axisY);
    if (auto markers = c->legend()->markers(ridges); !markers.isEmpty())
        markers.first()->setVisible(false);
}

void RooflineChart::buildMarkers()
{
    m_markers.clear();
    for (int i = 0; i < m_points.size(); ++i) {
        const RooflinePoint& p = m_points.at(i);
        const bool measured = drawsMeasured(p.measuredOn);
        // On another GPU's roofs a measured time means nothing: place the task at what these
        // roofs allow at its intensity.
        auto y = [&](double x, double time) { return measured ? time : m_roofs.attainableGflops(x); };
        if (!measured && !m_roofs.isValid())
            continue;
        m_markers.append(RooflineMarker{i, RooflineMarker::Role::Reference, IntensityBasis::EagerUnfused, measured,
                                        QPointF(p.intensity, y(p.intensity, p.referenceGflops))});
        if (p.candidateGflops) {
            const RooflinePoint::Placement at = p.candidatePlacement(measured);
            m_markers.append(RooflineMarker{i, RooflineMarker::Role::Candidate, at.basis, measured,
                                            QPointF(at.intensity, y(at.intensity, *p.candidateGflops))});
        }
        // A time below the floor is drawn only where it was measured; at the one-kernel
        // intensity, the most generous placement, so a star above the roof is impossible by any
        // traffic model.
        if (measured && p.notCountedGflops && positiveFinite(*p.notCountedGflops)) {
            const bool oneKernel = positiveFinite(p.oneKernelIntensity);
            m_markers.append(
                RooflineMarker{i, RooflineMarker::Role::NotCounted,
                               oneKernel ? IntensityBasis::OneKernel : IntensityBasis::EagerUnfused, true,
                               QPointF(oneKernel ? p.oneKernelIntensity : p.intensity, *p.notCountedGflops)});
        }
    }
}

void RooflineChart::rebuildPoints()
{
    QChart* c = chart();
    // Series by (level, role, measured, traffic measured), levels in order: a candidate placed by
    // its measured traffic has a series (and a legend entry) of its own.
    std::map<std::tuple<int, int, bool, bool>, QList<int>> groups;
    for (int m = 0; m < m_markers.size(); ++m) {
        const RooflineMarker& mk = m_markers.at(m);
        const int level = m_points.at(mk.point).level;
        groups[{mk.role == RooflineMarker::Role::NotCounted ? 9 : (level >= 1 && level <= 3 ? level : 0),
                static_cast<int>(mk.role), !mk.measured, mk.basis == IntensityBasis::Measured}]
            .append(m);
    }
    for (const auto& [key, indices] : groups) {
        const auto [level, roleInt, analytic, trafficMeasured] = key;
        const auto role = static_cast<RooflineMarker::Role>(roleInt);
        const bool candidate = role == RooflineMarker::Role::Candidate;
        auto* s = new QScatterSeries;
        if (role == RooflineMarker::Role::NotCounted) {
            s->setName(QStringLiteral("not counted: below the roofline floor"));
            s->setObjectName(QStringLiteral("points:not-counted"));
            s->setMarkerShape(QScatterSeries::MarkerShapeStar);
            s->setMarkerSize(kMarkerSize + 5);
            s->setColor(QColor(0xc0, 0x39, 0x2b));
            s->setPen(QPen(QColor(0x7b, 0x24, 0x1c), 1.0));
        } else {
            // A candidate's legend entry says which intensity places it: measured HBM traffic
            // (a profile exists) or the analytic model of what it launched.
            const QString roleName = !candidate        ? QStringLiteral("eager reference")
                                     : trafficMeasured ? QStringLiteral("best candidate, measured traffic")
                                                       : QStringLiteral("best candidate, analytic traffic");
            s->setName(analytic
                           ? QStringLiteral("%1 %2 (analytic: attainable on this GPU)").arg(levelName(level), roleName)
                           : QStringLiteral("%1 %2").arg(levelName(level), roleName));
            s->setObjectName(QStringLiteral("%1:%2:%3%4")
                                 .arg(analytic ? QStringLiteral("analytic") : QStringLiteral("points"),
                                      levelName(level),
                                      candidate ? QStringLiteral("candidate") : QStringLiteral("reference"),
                                      trafficMeasured ? QStringLiteral(":measured-traffic") : QString()));
            s->setMarkerShape(shapeForLevel(level));
            s->setMarkerSize(markerSize());
            const QColor color = candidate ? candidateColor() : referenceColor();
            // Measured candidates are filled; analytic markers are hollow and dashed; a candidate
            // placed by measured traffic has a dark ring.
            QColor fill = candidate && !analytic ? color : QColor(Qt::white);
            QPen pen = trafficMeasured
                           ? QPen(QColor(0x1b, 0x26, 0x31), 2.4)
                           : QPen(candidate ? color.darker(130) : color, 1.6, analytic ? Qt::DotLine : Qt::SolidLine);
            if (isDense()) {
                // Hundreds of tasks: half-transparent small markers, so a cluster shows as a
                // darker patch rather than one opaque blob hiding the points under it.
                fill.setAlpha(fill == QColor(Qt::white) ? 0 : 130);
                QColor penColor = pen.color();
                penColor.setAlpha(170);
                pen.setColor(penColor);
                pen.setWidthF(std::min<qreal>(pen.widthF(), 1.6) * 0.75);
            }
            s->setColor(fill);
            s->setPen(pen);
        }
        QList<PointRef> refs;
        for (int m : indices) {
            s->append(m_markers.at(m).at);
            refs.append(PointRef{m_markers.at(m).point, candidate, m});
        }
        c->addSeries(s);
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
        m_seriesPoints.insert(s, refs);
        m_seriesMarkers.insert(s, indices);
        connect(s, &QScatterSeries::hovered, this,
                [this, s](const QPointF& value, bool state) { onPointHovered(s, value, state); });
    }

    // Arrows from each reference to its candidate.
    QHash<int, QPointF> referenceAt;
    for (const RooflineMarker& mk : std::as_const(m_markers))
        if (mk.role == RooflineMarker::Role::Reference)
            referenceAt.insert(mk.point, mk.at);
    for (const RooflineMarker& mk : std::as_const(m_markers)) {
        if (mk.role != RooflineMarker::Role::Candidate || !referenceAt.contains(mk.point))
            continue;
        const RooflinePoint& p = m_points.at(mk.point);
        const QPointF from = referenceAt.value(mk.point);
        auto* arrow = new QGraphicsPathItem(c);
        const bool faster = mk.at.y() >= from.y();
        QColor color = faster ? candidateColor() : QColor(0xc0, 0x39, 0x2b);
        color.setAlpha(isDense() ? (mk.measured ? 110 : 70) : (mk.measured ? 190 : 110));
        arrow->setPen(QPen(color, isDense() ? 1.0 : 1.4, mk.measured ? Qt::SolidLine : Qt::DashLine, Qt::RoundCap,
                           Qt::RoundJoin));
        arrow->setBrush(color);
        arrow->setZValue(kArrowZ);
        arrow->setToolTip(mk.measured
                              ? QStringLiteral("%1: %2× the reference's GFLOP/s, moved from %3 to %4")
                                    .arg(p.task, QString::number(mk.at.y() / from.y(), 'f', 2),
                                         intensityBasisText(IntensityBasis::EagerUnfused), intensityBasisText(mk.basis))
                              : QStringLiteral("%1: from %2 to %3, attainable on %4 (analytic)")
                                    .arg(p.task, intensityBasisText(IntensityBasis::EagerUnfused),
                                         intensityBasisText(mk.basis), m_roofs.name));
        m_arrowItems.append(arrow);
        m_arrowPoints.append(mk.point);
        m_arrowEnds.append({from, mk.at});
    }

    // The selected task's kernels (issue 40): one series, filled on selection (rebuildKernelMarkers),
    // where any task has kernels to draw on these roofs.
    m_baseMarkers = int(m_markers.size());
    m_kernelSeries = nullptr;
    const bool anyKernels = std::any_of(m_points.cbegin(), m_points.cend(), [this](const RooflinePoint& p) {
        return !p.kernels.isEmpty() && drawsMeasured(p.measuredOn);
    });
    if (anyKernels) {
        m_kernelSeries = new QScatterSeries;
        m_kernelSeries->setName(QStringLiteral("kernels of the selected candidate (click one)"));
        m_kernelSeries->setObjectName(QStringLiteral("points:kernels"));
        m_kernelSeries->setMarkerShape(QScatterSeries::MarkerShapePentagon);
        m_kernelSeries->setMarkerSize(kMarkerSize - 1);
        m_kernelSeries->setColor(QColor(0x8e, 0x44, 0xad));
        m_kernelSeries->setPen(QPen(QColor(0x5b, 0x2c, 0x6f), 1.2));
        c->addSeries(m_kernelSeries);
        m_kernelSeries->attachAxis(m_axisX);
        m_kernelSeries->attachAxis(m_axisY);
        connect(m_kernelSeries, &QScatterSeries::hovered, this,
                [this](const QPointF& value, bool state) { onPointHovered(m_kernelSeries, value, state); });
    }

    // Task labels, shown on demand (relayoutOverlay places them), and the selection's rings.
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.8);
    for (const RooflinePoint& p : std::as_const(m_points)) {
        auto* label = new QGraphicsSimpleTextItem(p.task, c);
        label->setFont(small);
        label->setBrush(QColor(0x33, 0x33, 0x33));
        label->setZValue(kLabelZ);
        label->setVisible(false);
        m_pointLabels.append(label);
    }
    rebuildSelection();
}

void RooflineChart::rebuildKernelMarkers()
{
    m_markers.resize(m_baseMarkers);
    if (!m_kernelSeries)
        return; // no task has kernels on these roofs
    QList<QPointF> at;
    QList<int> indices;
    QList<PointRef> refs;
    for (int i = 0; i < m_points.size() && !m_selected.isEmpty(); ++i) {
        const RooflinePoint& p = m_points.at(i);
        // Measured times only, on the roofs of the GPU that measured them.
        if (p.task != m_selected || !p.candidateGflops || !drawsMeasured(p.measuredOn))
            continue;
        for (int k = 0; k < p.kernels.size(); ++k) {
            const RooflineKernel& kernel = p.kernels.at(k);
            if (!positiveFinite(kernel.intensity) || !positiveFinite(kernel.gflops))
                continue;
            RooflineMarker mk{i, RooflineMarker::Role::Kernel, kernel.basis, true,
                              QPointF(kernel.intensity, kernel.gflops)};
            mk.kernel = k;
            indices.append(int(m_markers.size()));
            refs.append(PointRef{i, true, int(m_markers.size())});
            at.append(mk.at);
            m_markers.append(mk);
        }
    }
    m_kernelSeries->replace(at);
    m_seriesMarkers.insert(m_kernelSeries, indices);
    m_seriesPoints.insert(m_kernelSeries, refs);
}

void RooflineChart::rebuildSelection()
{
    rebuildKernelMarkers();
    qDeleteAll(m_selectionRings);
    m_selectionRings.clear();
    m_selectionMarkers.clear();
    for (int m = 0; m < m_markers.size(); ++m) {
        if (m_selected.isEmpty() || m_points.at(m_markers.at(m).point).task != m_selected)
            continue;
        // A kernel has a ring only while it is the one selected.
        if (m_markers.at(m).role == RooflineMarker::Role::Kernel && m_markers.at(m).kernel != m_selectedKernel)
            continue;
        auto* ring = new QGraphicsPathItem(chart());
        ring->setPen(QPen(kSelectionColor, 2.4));
        ring->setZValue(kSelectionZ);
        m_selectionRings.append(ring);
        m_selectionMarkers.append(m);
    }
    m_selectionLabel->setText(selectionLines().join(QLatin1Char('\n')));
}

void RooflineChart::clearOverlay()
{
    for (const RoofLabel& l : std::as_const(m_roofLabels))
        delete l.item;
    m_roofLabels.clear();
    qDeleteAll(m_arrowItems);
    m_arrowItems.clear();
    m_arrowPoints.clear();
    m_arrowEnds.clear();
    m_noteItem->setText(QString());
    qDeleteAll(m_pointLabels);
    m_pointLabels.clear();
    qDeleteAll(m_selectionRings);
    m_selectionRings.clear();
    m_selectionMarkers.clear();
    m_selectionLabel->setText(QString());
    m_selectionLabel->setVisible(false);
    m_selectionBox->setVisible(false);
}

void RooflineChart::relayoutOverlay()
{
    QChart* c = chart();
    const QRectF plot = c->plotArea();
    if (plot.isEmpty())
        return;
    QXYSeries* anySeries = nullptr;
    for (QAbstractSeries* s : c->series()) {
        anySeries = qobject_cast<QXYSeries*>(s);
        if (anySeries)
            break;
    }
    auto toPixel = [&](const QPointF& v) { return anySeries ? c->mapToPosition(v, anySeries) : QPointF(); };

    for (const RoofLabel& l : std::as_const(m_roofLabels)) {
        if (!anySeries)
            break;
        const QRectF box = l.item->boundingRect();
        const QPointF at = toPixel(l.anchor);
        l.item->setRotation(0);
        if (l.alongDiagonal) {
            // Along the memory roof, just above it, at its on-screen slope.
            const QPointF further = toPixel(QPointF(l.anchor.x() * 10.0, l.anchor.y() * 10.0));
            const qreal angle = qRadiansToDegrees(std::atan2(further.y() - at.y(), further.x() - at.x()));
            l.item->setTransformOriginPoint(0, box.height());
            l.item->setPos(at - QPointF(0, box.height() + 2));
            l.item->setRotation(angle);
        } else {
            qreal x = l.alignRight ? at.x() - box.width() - 4 : at.x() + 4;
            x = std::clamp(x, plot.left() + 2, std::max(plot.left() + 2, plot.right() - box.width() - 2));
            l.item->setPos(x, at.y() - box.height() - 1);
        }
        l.item->setVisible(plot.contains(at) || l.alignRight);
    }

    for (int a = 0; a < m_arrowItems.size(); ++a) {
        const QPointF from = toPixel(m_arrowEnds.at(a).first);
        const QPointF to = toPixel(m_arrowEnds.at(a).second);
        const QLineF line(from, to);
        // Between the markers' edges; too short to see between two markers: no arrow.
        const qreal gap = markerSize() / 2.0 + 1.5;
        if (!anySeries || line.length() < 2 * gap + 6) {
            m_arrowItems.at(a)->setPath(QPainterPath());
            continue;
        }
        const QPointF unit = (to - from) / line.length();
        const QPointF start = from + unit * gap, tip = to - unit * gap;
        const QPointF normal(-unit.y(), unit.x());
        const qreal head = isDense() ? 5.0 : 7.0;
        QPainterPath path(start);
        path.lineTo(tip - unit * head * 0.8);
        QPolygonF arrowHead;
        arrowHead << tip << tip - unit * head + normal * head * 0.45 << tip - unit * head - normal * head * 0.45 << tip;
        path.addPolygon(arrowHead);
        m_arrowItems.at(a)->setPath(path);
    }

    m_noteItem->setPos(plot.left() + 6, plot.bottom() - m_noteItem->boundingRect().height() - 4);
    // The flat roofs' labels and the note stay readable: no task label over them (the diagonal's
    // label is turned, its box would block the whole slope). Then the selection's label.
    QList<QRectF> taken;
    for (const RoofLabel& l : std::as_const(m_roofLabels))
        if (!l.alongDiagonal && l.item->isVisible())
            taken.append(l.item->mapRectToParent(l.item->boundingRect()));
    if (!m_noteItem->text().isEmpty())
        taken.append(m_noteItem->mapRectToParent(m_noteItem->boundingRect()));
    const qreal ring = markerSize() / 2.0 + 5.0;
    QPointF selectedAt;
    bool selectedInView = false;
    for (int r = 0; r < m_selectionRings.size(); ++r) {
        const RooflineMarker& mk = m_markers.at(m_selectionMarkers.at(r));
        const QPointF at = anySeries ? toPixel(mk.at) : QPointF();
        QPainterPath path;
        path.addEllipse(at, ring, ring);
        m_selectionRings.at(r)->setPath(path);
        const bool inView = anySeries && plot.contains(at);
        m_selectionRings.at(r)->setVisible(inView);
        if (inView && (!selectedInView || mk.role == RooflineMarker::Role::Reference)) {
            selectedAt = at;
            selectedInView = true;
        }
    }
    const bool showSelection = selectedInView && !m_selectionLabel->text().isEmpty();
    m_selectionLabel->setVisible(showSelection);
    m_selectionBox->setVisible(showSelection);
    if (showSelection) {
        const QRectF text = m_selectionLabel->boundingRect();
        // Right of and above the marker where it fits, else mirrored; never outside the plot.
        qreal x = selectedAt.x() + ring + 6;
        if (x + text.width() + 4 > plot.right())
            x = selectedAt.x() - ring - 6 - text.width();
        qreal y = selectedAt.y() - ring - text.height();
        if (y < plot.top() + 4)
            y = selectedAt.y() + ring + 2;
        x = std::clamp(x, plot.left() + 4, std::max(plot.left() + 4, plot.right() - text.width() - 4));
        y = std::clamp(y, plot.top() + 4, std::max(plot.top() + 4, plot.bottom() - text.height() - 4));
        m_selectionLabel->setPos(x, y);
        const QRectF box = QRectF(QPointF(x, y), text.size()).adjusted(-4, -2, 4, 2);
        m_selectionBox->setRect(box);
        taken.append(box);
    }

    // Task labels: right of each reference marker, in task order; one that would overlap a label
    // already placed or leave the plot waits for a zoom.
    QHash<int, QPointF> referenceAt;
    for (const RooflineMarker& mk : std::as_const(m_markers))
        if (mk.role == RooflineMarker::Role::Reference && anySeries)
            referenceAt.insert(mk.point, toPixel(mk.at));
    for (int i = 0; i < m_pointLabels.size(); ++i) {
        QGraphicsSimpleTextItem* label = m_pointLabels.at(i);
        const auto at = referenceAt.constFind(i);
        if (!m_labelsShown || at == referenceAt.cend() || (showSelection && m_points.at(i).task == m_selected)) {
            label->setVisible(false);
            continue;
        }
        const QSizeF size = label->boundingRect().size();
        const QRectF rect(at->x() + markerSize() / 2.0 + 2, at->y() - size.height() / 2, size.width(), size.height());
        const bool free = plot.contains(rect) && std::none_of(taken.cbegin(), taken.cend(),
                                                              [&rect](const QRectF& t) { return t.intersects(rect); });
        label->setVisible(free);
        if (free) {
            label->setPos(rect.topLeft());
            taken.append(rect.adjusted(-2, -1, 2, 1)); // a pixel apart, also once rounded to the screen
        }
    }

    if (m_emptyItem->isVisible())
        centreText(m_emptyItem, plot);
}

QString RooflineChart::emptyText() const
{
    if (!m_roofs.isValid()) {
        return m_roofs.citation.isEmpty() ? QStringLiteral("No GPU chosen: pick one to draw its roofs.")
                                          : QStringLiteral("No roofs to draw: %1.").arg(m_roofs.citation);
    }
    if (m_points.isEmpty()) {
        QString text = QStringLiteral("No tasks placed yet: open a run with timed candidates\n"
                                      "(File > Open run database…).");
        if (m_skipped > 0)
            text += QStringLiteral("\n%1 task(s) had no intensity or time to place.").arg(m_skipped);
        return text;
    }
    return QString();
}

RooflineChart::PointRef RooflineChart::pointAt(QXYSeries* series, const QPointF& value) const
{
    const QList<PointRef> refs = m_seriesPoints.value(series);
    const QList<QPointF> pts = series->points();
    PointRef best;
    double bestDistance = std::numeric_limits<double>::infinity();
    for (int i = 0; i < pts.size() && i < refs.size(); ++i) {
        // Distance in decades: the axes are logarithmic.
        const double dx = std::log10(pts.at(i).x()) - std::log10(value.x());
        const double dy = std::log10(pts.at(i).y()) - std::log10(value.y());
        const double d = dx * dx + dy * dy;
        if (d < bestDistance) {
            bestDistance = d;
            best = refs.at(i);
        }
    }
    return best;
}

void RooflineChart::onPointHovered(QXYSeries* series, const QPointF& value, bool state)
{
    if (!state) {
        QToolTip::hideText();
        return;
    }
    const PointRef ref = pointAt(series, value);
    if (ref.marker >= 0)
        QToolTip::showText(QCursor::pos(), markerToolTip(ref.marker), this);
}

int RooflineChart::markerAt(const QPoint& viewportPos) const
{
    int best = -1;
    double bestDistance = markerSize() / 2.0 + 3.0;
    for (auto it = m_seriesMarkers.cbegin(); it != m_seriesMarkers.cend(); ++it) {
        for (int m : it.value()) {
            const QPointF inChart = chart()->mapToPosition(m_markers.at(m).at, it.key());
            const QPointF at = mapFromScene(chart()->mapToScene(inChart));
            const double d = QLineF(at, QPointF(viewportPos)).length();
            if (d <= bestDistance) {
                bestDistance = d;
                best = m;
            }
        }
    }
    return best;
}

bool RooflineChart::viewportEvent(QEvent* event)
{
    // QGraphicsView answers a tooltip event from the items' own tool tips, and hides the text
    // where an item has none: the markers' text is shown here instead, so it stays.
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int m = markerAt(help->pos());
        if (m >= 0) {
            QToolTip::showText(help->globalPos(), markerToolTip(m), viewport());
            return true;
        }
    }
    return QChartView::viewportEvent(event);
}

void RooflineChart::zoomAt(const QPointF& viewportPos, double factor)
{
    const QRectF area = chart()->plotArea();
    if (!(factor > 0) || area.isEmpty())
        return;
    const QPointF p = chart()->mapFromScene(mapToScene(viewportPos.toPoint()));
    if (!area.contains(p))
        return;
    // The point under the cursor stays where it is.
    const QRectF rect(p.x() - (p.x() - area.left()) / factor, p.y() - (p.y() - area.top()) / factor,
                      area.width() / factor, area.height() / factor);
    chart()->zoomIn(rect);
}

void RooflineChart::resetZoom()
{
    chart()->zoomReset();
}

bool RooflineChart::isZoomed() const
{
    return chart()->isZoomed();
}

void RooflineChart::wheelEvent(QWheelEvent* event)
{
    const int steps = event->angleDelta().y() / 120;
    if (steps == 0) {
        QChartView::wheelEvent(event);
        return;
    }
    zoomAt(event->position(), std::pow(1.25, steps));
    event->accept();
}

void RooflineChart::mousePressEvent(QMouseEvent* event)
{
    QToolTip::hideText();
    m_pressPos = event->position().toPoint();
    // The rubber band takes the left button from the scene: the markers get the press too, so a
    // click on a point still selects its task.
    if (event->button() == Qt::LeftButton)
        QGraphicsView::mousePressEvent(event);
    QChartView::mousePressEvent(event);
}

void RooflineChart::mouseReleaseEvent(QMouseEvent* event)
{
    // A click, not a drag: no zoom, and the release selects the task under it (a double-click opens it).
    if (event->button() == Qt::LeftButton &&
        (event->position().toPoint() - m_pressPos).manhattanLength() < QApplication::startDragDistance()) {
        if (auto* band = findChild<QRubberBand*>())
            band->hide();
        const int m = markerAt(event->position().toPoint());
        selectTask(m >= 0 ? m_points.at(m_markers.at(m).point).task : QString());
        // One click from a kernel's marker to its reading (issue 40 item 4).
        selectKernel(m >= 0 && m_markers.at(m).role == RooflineMarker::Role::Kernel ? m_markers.at(m).kernel : -1);
    }
    QChartView::mouseReleaseEvent(event);
}

void RooflineChart::mouseDoubleClickEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) {
        QChartView::mouseDoubleClickEvent(event);
        return;
    }
    // As a click: select what is under the cursor (or nothing); a marker's task opens too.
    const int m = markerAt(event->position().toPoint());
    selectTask(m >= 0 ? m_points.at(m_markers.at(m).point).task : QString());
    if (m < 0) {
        QChartView::mouseDoubleClickEvent(event);
        return;
    }
    // The task opens on another page: no tooltip of this one may stay over it.
    QToolTip::hideText();
    Q_EMIT taskActivated(m_points.at(m_markers.at(m).point).task);
    event->accept();
}

qreal RooflineChart::markerSize() const
{
    return isDense() ? kDenseMarkerSize : kMarkerSize;
}

void RooflineChart::setLabelsShown(bool shown)
{
    if (shown == m_labelsShown)
        return;
    m_labelsShown = shown;
    relayoutOverlay();
}

QList<QPair<QString, QRect>> RooflineChart::shownLabels() const
{
    QList<QPair<QString, QRect>> out;
    for (const QGraphicsSimpleTextItem* label : m_pointLabels)
        if (label->isVisible())
            out.append({label->text(), mapFromScene(label->sceneBoundingRect()).boundingRect()});
    return out;
}

void RooflineChart::selectTask(const QString& task)
{
    const bool placed =
        std::any_of(m_points.cbegin(), m_points.cend(), [&task](const RooflinePoint& p) { return p.task == task; });
    const QString selected = placed ? task : QString();
    if (selected == m_selected)
        return;
    m_selected = selected;
    m_selectedKernel = -1;
    rebuildSelection();
    relayoutOverlay();
    Q_EMIT taskSelected(m_selected);
}

void RooflineChart::selectKernel(int kernel)
{
    const RooflinePoint* p = nullptr;
    for (const RooflinePoint& q : std::as_const(m_points))
        if (!m_selected.isEmpty() && q.task == m_selected)
            p = &q;
    const int selected = p && kernel >= 0 && kernel < p->kernels.size() ? kernel : -1;
    if (selected == m_selectedKernel)
        return;
    m_selectedKernel = selected;
    rebuildSelection();
    relayoutOverlay();
    Q_EMIT kernelSelected(m_selected, m_selectedKernel);
}

QString RooflineChart::kernelReadingText() const
{
    for (const RooflinePoint& p : m_points) {
        if (m_selected.isEmpty() || p.task != m_selected || m_selectedKernel < 0 ||
            m_selectedKernel >= p.kernels.size())
            continue;
        const RooflineKernel& k = p.kernels.at(m_selectedKernel);
        return QStringLiteral("%1 (%2): %3")
            .arg(k.label, k.ops, k.reading.isEmpty() ? QStringLiteral("no reading") : k.reading);
    }
    return QString();
}

QStringList RooflineChart::selectionLines() const
{
    QStringList lines;
    int index = -1;
    for (int i = 0; i < m_points.size(); ++i)
        if (m_points.at(i).task == m_selected && !m_selected.isEmpty())
            index = i;
    if (index < 0)
        return lines;
    const RooflinePoint& p = m_points.at(index);
    lines << p.task;
    if (!p.detail.isEmpty())
        lines << p.detail.split(QStringLiteral("; "));
    std::optional<double> reference;
    for (const RooflineMarker& mk : std::as_const(m_markers)) {
        if (mk.point != index)
            continue;
        if (mk.role == RooflineMarker::Role::Kernel)
            continue; // below, by name
        const QString role = mk.role == RooflineMarker::Role::Reference   ? QStringLiteral("eager reference")
                             : mk.role == RooflineMarker::Role::Candidate ? QStringLiteral("best candidate")
                                                                          : QStringLiteral("not counted");
        QString line = QStringLiteral("%1: %2 at %3, %4")
                           .arg(role, humanGflops(mk.at.y()), intensityText(mk.at.x()), intensityBasisText(mk.basis));
        if (!mk.measured)
            line += QStringLiteral(", attainable on the %1").arg(m_roofs.name);
        if (mk.role == RooflineMarker::Role::Reference)
            reference = mk.at.y();
        else if (mk.role == RooflineMarker::Role::Candidate && mk.measured && reference)
            line += QStringLiteral(", %1× the reference").arg(QString::number(mk.at.y() / *reference, 'f', 2));
        lines << line;
    }
    if (const QString reading = kernelReadingText(); !reading.isEmpty())
        lines << QStringLiteral("kernel ") + reading;
    else if (!p.kernels.isEmpty() && drawsMeasured(p.measuredOn))
        lines << QStringLiteral("its kernels: %1 (purple pentagons; click one for its reading)").arg(p.kernels.size());
    else if (!p.kernelsWhy.isEmpty())
        lines << QStringLiteral("its kernels are not placed one by one: ") + p.kernelsWhy;
    return lines;
}

QString RooflineChart::selectionText() const
{
    return selectionLines().join(QStringLiteral("; "));
}

QList<QRect> RooflineChart::selectionRings() const
{
    QList<QRect> out;
    for (const QGraphicsPathItem* ring : m_selectionRings)
        if (ring->isVisible())
            out.append(mapFromScene(ring->sceneBoundingRect()).boundingRect());
    return out;
}

QRect RooflineChart::selectionLabelRect() const
{
    return m_selectionBox->isVisible() ? mapFromScene(m_selectionBox->sceneBoundingRect()).boundingRect() : QRect();
}

QString RooflineChart::placementNote() const
{
    QStringList elsewhere;
    bool any = false;
    for (const RooflinePoint& p : m_points) {
        any = true;
        if (!drawsMeasured(p.measuredOn)) {
            const QString on = p.measuredOn.isEmpty() ? QStringLiteral("an unknown GPU") : p.measuredOn;
            if (!elsewhere.contains(on))
                elsewhere << on;
        }
    }
    if (!any || !m_roofs.isValid())
        return QString();
    // The dark ring is named only where a candidate was placed by its measured traffic.
    const bool profiled = std::any_of(m_points.cbegin(), m_points.cend(),
                                      [](const RooflinePoint& p) { return p.candidateMeasuredIntensity.has_value(); });
    if (elsewhere.isEmpty())
        return profiled
                   ? QStringLiteral("Measured on this GPU; reference at the eager (op by op) intensity, candidates "
                                    "at their measured HBM traffic where profiled (dark ring), else at the "
                                    "intensity of what they launched (analytic traffic model, see each tooltip)")
                   : QStringLiteral("Measured on this GPU; reference at the eager (op by op) intensity, candidates "
                                    "at the intensity of what they launched (analytic traffic model, see each "
                                    "tooltip; none has a traffic profile)");
    return QStringLiteral("Times measured on %1 are not drawn against these roofs: each task is placed where the %2 "
                          "roofs put it at its analytic intensity (hollow markers on the roof; no time rescaled)")
        .arg(elsewhere.join(QStringLiteral(", ")), m_roofs.name);
}

QString RooflineChart::markerToolTip(int marker) const
{
    if (marker < 0 || marker >= m_markers.size())
        return QString();
    const RooflineMarker& mk = m_markers.at(marker);
    const RooflinePoint& p = m_points.at(mk.point);
    const double x = mk.at.x(), y = mk.at.y();
    if (mk.role == RooflineMarker::Role::Kernel && mk.kernel >= 0 && mk.kernel < p.kernels.size()) {
        const RooflineKernel& k = p.kernels.at(mk.kernel);
        return QStringList{
            QStringLiteral("<b>%1</b> · kernel %2").arg(p.task.toHtmlEscaped(), k.label.toHtmlEscaped()),
            QStringLiteral("does %1").arg(k.ops.toHtmlEscaped()),
            QStringLiteral("intensity %1: %2").arg(intensityText(x), intensityBasisText(mk.basis)),
            QStringLiteral("%1 in its own time, measured on %2").arg(humanGflops(y), p.measuredOn.toHtmlEscaped()),
            k.reading.toHtmlEscaped()}
            .join(QStringLiteral("<br>"));
    }
    const QString role = mk.role == RooflineMarker::Role::Reference   ? QStringLiteral("eager reference")
                         : mk.role == RooflineMarker::Role::Candidate ? QStringLiteral("best candidate")
                                                                      : QStringLiteral("not counted");
    QStringList lines;
    lines << QStringLiteral("<b>%1</b> · %2").arg(p.task.toHtmlEscaped(), role);
    lines << QStringLiteral("intensity %1: %2").arg(intensityText(x), intensityBasisText(mk.basis));
    const double ridge = m_roofs.fp32RidgeIntensity();
    if (m_roofs.isValid()) {
        const double roof = m_roofs.attainableGflops(x);
        if (mk.measured)
            lines << QStringLiteral("%1: %2 % of the roof here (%3), measured on %4")
                         .arg(humanGflops(y), QString::number(100.0 * y / roof, 'f', 1), humanGflops(roof),
                              p.measuredOn.toHtmlEscaped());
        else
            lines
                << QStringLiteral("analytic: %1 attainable on the %2 at this intensity; the times were measured on "
                                  "%3 and are not drawn here")
                       .arg(humanGflops(roof), m_roofs.name.toHtmlEscaped(),
                            (p.measuredOn.isEmpty() ? QStringLiteral("an unknown GPU") : p.measuredOn).toHtmlEscaped());
        lines << QStringLiteral("here: ") + boundSentence(x, mk.basis, ridge).toHtmlEscaped();
        if (positiveFinite(p.oneKernelIntensity))
            lines << QStringLiteral("task: ") +
                         boundSentence(p.oneKernelIntensity, IntensityBasis::OneKernel, ridge).toHtmlEscaped();
    } else {
        lines << humanGflops(y);
    }
    if (mk.role == RooflineMarker::Role::Candidate) {
        if (mk.measured)
            lines << QStringLiteral("%1× the reference's GFLOP/s").arg(QString::number(y / p.referenceGflops, 'f', 2));
        // Which intensity places it, and the other one where both exist.
        if (mk.basis == IntensityBasis::Measured) {
            lines << QStringLiteral("measured: %1 GB of HBM traffic (CUPTI DRAM counters, one call, cold L2)")
                         .arg(QString::number(p.candidateMeasuredBytes.value_or(0) / 1e9, 'g', 4));
            lines << QStringLiteral("analytic %1: %2")
                         .arg(intensityText(p.candidateX()),
                              intensityBasisText(p.candidateIntensity ? p.candidateBasis
                                                                      : IntensityBasis::EagerUnfused));
        } else if (p.candidateMeasuredIntensity) {
            lines << QStringLiteral("analytic here: its measured traffic (%1) belongs to %2")
                         .arg(intensityText(*p.candidateMeasuredIntensity), p.measuredOn.toHtmlEscaped());
        } else {
            lines << QStringLiteral("analytic: no traffic profile of this candidate (kwb eval --profile-traffic)");
        }
        if (p.candidateIntensity || mk.basis == IntensityBasis::Measured)
            lines << QStringLiteral("reference intensity %1").arg(intensityText(p.intensity));
    }
    if (mk.role == RooflineMarker::Role::NotCounted)
        lines << QStringLiteral("<span style='color:#c0392b'><b>Not counted</b>: %1</span>")
                     .arg(p.notCountedWhy.toHtmlEscaped());
    if (!p.detail.isEmpty())
        lines << p.detail.toHtmlEscaped();
    return lines.join(QStringLiteral("<br>"));
}

QString RooflineChart::toolTipText(int pointIndex, bool candidate) const
{
    for (int m = 0; m < m_markers.size(); ++m) {
        const RooflineMarker& mk = m_markers.at(m);
        if (mk.point == pointIndex &&
            mk.role == (candidate ? RooflineMarker::Role::Candidate : RooflineMarker::Role::Reference))
            return markerToolTip(m);
    }
    return QString();
}

QPoint RooflineChart::viewportPosition(int pointIndex, bool candidate) const
{
    for (auto it = m_seriesMarkers.cbegin(); it != m_seriesMarkers.cend(); ++it) {
        for (int m : it.value()) {
            const RooflineMarker& mk = m_markers.at(m);
            if (mk.point == pointIndex &&
                mk.role == (candidate ? RooflineMarker::Role::Candidate : RooflineMarker::Role::Reference)) {
                const QPointF inChart = chart()->mapToPosition(mk.at, it.key());
                return mapFromScene(chart()->mapToScene(inChart));
            }
        }
    }
    return QPoint(-1, -1);
}

QList<QPair<QPointF, QPointF>> RooflineChart::arrows() const
{
    return m_arrowEnds;
}

QString RooflineChart::roofToolTip(const Roof& roof) const
{
    QStringList lines{QStringLiteral("<b>%1</b>").arg(roof.displayText().toHtmlEscaped())};
    if (roof.isCompute() && m_roofs.bandwidthGBps() > 0)
        lines << QStringLiteral("ridge point %1").arg(intensityText(m_roofs.ridgeIntensity(roof.value)));
    if (roof.isTensor())
        lines << QStringLiteral("Bounds only kernels that run on tensor cores; the study's fp32 kernels (TF32 off) "
                                "are bound by the FP32 roof.");
    if (!roof.note.isEmpty())
        lines << roof.note.toHtmlEscaped();
    return QStringLiteral("<p style='white-space:pre-wrap; max-width:420px'>%1</p>")
        .arg(lines.join(QStringLiteral("<br>")));
}

} // namespace kwb::app
