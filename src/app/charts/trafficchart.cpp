#include "app/charts/trafficchart.h"

#include "app/charts/chartformat.h"
#include "core/protocol/workerresponses.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

namespace kwb::app {

namespace {

qint64 rounded(double v)
{
    return static_cast<qint64>(std::llround(v));
}

double elements(const QList<qint64>& shape)
{
    double n = 1.0;
    for (qint64 d : shape)
        n *= static_cast<double>(d);
    return n;
}

/// A round axis step at least v: 1, 2, 2.5 or 5 times a power of ten.
double niceStep(double v)
{
    if (!(v > 0))
        return 1.0;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 2.5, 5.0}) {
        if (m * p >= v * 0.9999)
            return m * p;
    }
    return 10.0 * p;
}

/// An axis label: humanBytes without trailing zeros ("50 MB", "1.5 GB").
QString tickBytes(double bytes)
{
    QString s = humanBytes(bytes);
    const int space = s.indexOf(QLatin1Char(' '));
    if (space > 0 && s.left(space).contains(QLatin1Char('.'))) {
        QString number = s.left(space);
        while (number.endsWith(QLatin1Char('0')))
            number.chop(1);
        if (number.endsWith(QLatin1Char('.')))
            number.chop(1);
        s = number + s.mid(space);
    }
    return s;
}

} // namespace

// ---- data -------------------------------------------------------------------------------------

QString TrafficOp::shortName() const
{
    const int colons = op.lastIndexOf(QLatin1String("::"));
    return colons >= 0 ? op.mid(colons + 2) : op;
}

double TrafficBreakdown::ratio() const
{
    return fusedBytes > 0 ? static_cast<double>(unfusedBytes) / static_cast<double>(fusedBytes) : 0.0;
}

TrafficBreakdown trafficBreakdown(const QJsonObject& analyze)
{
    const AnalyzeResult a = decodeAnalyze(analyze);
    TrafficBreakdown b;
    b.task = a.task;
    b.scale = a.scale;
    if (a.failed) {
        b.error = QStringLiteral("the analysis failed: %1").arg(a.errorMessage);
        return b;
    }
    if (!a.hasOps) {
        b.error = QStringLiteral("the analysis has no op list");
        return b;
    }
    qint64 sum = 0;
    for (const TaskOp& o : a.ops) {
        TrafficOp op;
        op.index = o.index;
        op.op = o.op;
        op.category = o.category;
        op.flops = o.flops;
        op.bytes = rounded(o.bytes);
        op.inputs = o.inputs;
        op.output = o.output;
        sum += op.bytes;
        if (op.bytes <= 0) {
            ++b.zeroByteOps;
            continue;
        }
        // analyze counts every tensor input once and the output once at the tensors' element
        // size; split its bytes in that proportion.
        double readElements = 0.0;
        for (const QList<qint64>& in : std::as_const(op.inputs))
            readElements += elements(in);
        double writeElements = op.output.isEmpty() ? 0.0 : elements(op.output);
        writeElements *= o.outputCount;
        const double total = readElements + writeElements;
        op.writeBytes = total > 0 ? std::llround(static_cast<double>(op.bytes) * writeElements / total) : op.bytes;
        op.readBytes = op.bytes - op.writeBytes;
        b.flops += op.flops;
        b.ops.append(op);
    }
    b.unfusedBytes = a.hasBytesUnfused ? rounded(a.bytesUnfused) : sum;
    b.fusedBytes = rounded(a.bytesFused);
    if (a.hasTotals)
        b.flops = a.flops;
    if (a.outputBytes) {
        b.fusedWriteBytes = rounded(*a.outputBytes);
        b.fusedReadBytes = a.inputBytes ? rounded(*a.inputBytes) + rounded(a.paramBytes.value_or(0))
                                        : b.fusedBytes - b.fusedWriteBytes;
    } else if (!b.ops.isEmpty()) {
        // An older response without the split: the last op's output is the task's output.
        b.fusedWriteBytes = std::min(b.fusedBytes, b.ops.last().writeBytes);
        b.fusedReadBytes = b.fusedBytes - b.fusedWriteBytes;
    }
    if (b.ops.isEmpty())
        b.error = b.zeroByteOps > 0 ? QStringLiteral("no op of this task moves bytes")
                                    : QStringLiteral("the analysis lists no ops");
    else if (b.fusedBytes <= 0)
        b.error = QStringLiteral("the analysis has no bytes_fused");
    else if (sum != b.unfusedBytes)
        b.error = QStringLiteral("the ops' bytes add up to %1, but bytes_unfused is %2")
                      .arg(QString::number(sum), QString::number(b.unfusedBytes));
    return b;
}

// ---- canvas -----------------------------------------------------------------------------------

class TrafficCanvas : public QWidget
{
public:
    explicit TrafficCanvas(TrafficChart* chart)
        : QWidget(chart)
        , m_chart(chart)
    {
        setMouseTracking(true);
        setAttribute(Qt::WA_OpaquePaintEvent);
    }

    struct Group
    {
        int opPosition = -1; ///< index into breakdown().ops; -1 for the fused kernel
        QRectF column;       ///< bars and box, for hit testing
        QRectF reads;        ///< the bar's lower part
        QRectF writes;       ///< stacked on the reads
        QRectF implied;      ///< measured time × bandwidth, beside it; null without a measurement
        QRectF box;
        bool impliedClipped = false;
    };
    struct Layout
    {
        bool compact = false;
        bool measured = false;
        qreal headerHeight = 0;
        QRectF plot; ///< y = 0 at the bottom, yMax at the top
        double yMax = 1.0;
        double yStep = 1.0;
        QList<Group> groups; ///< ops, then the fused kernel
        qreal separatorX = 0;
        qreal bracketY = 0;
        QSizeF minimum;
    };

    Layout layout(const QSizeF& size) const
    {
        const TrafficBreakdown& b = m_chart->m_breakdown;
        const QFontMetricsF fm(font());
        Layout l;
        const int n = static_cast<int>(b.ops.size());
        // Past a couple of dozen ops (level 3 networks) the chain is drawn dense: thin bars, names
        // turned upright, numbers in the tooltips.
        l.compact = n > 24;
        l.measured = m_chart->hasMeasured();
        const int bars = l.measured ? 2 : 1;
        const qreal left = fm.horizontalAdvance(QStringLiteral("999 MB")) + 18, right = 16;
        qreal barW = l.compact ? 10 : 34, barGap = l.compact ? 2 : 6, pad = l.compact ? 4 : 16;
        qreal gap = l.compact ? 6 : 30, sepGap = l.compact ? 36 : 56;
        auto groupWidth = [&] { return bars * barW + (bars - 1) * barGap + 2 * pad; };
        const qreal minWidth = left + n * groupWidth() + std::max(0, n - 1) * gap + sepGap + groupWidth() + right;
        // Wider than needed: widen bars and gaps up to 1.6×, so a short chain does not look lost.
        const qreal s = std::clamp(size.width() / std::max<qreal>(minWidth, 1.0), 1.0, 1.6);
        barW *= s;
        barGap *= s;
        pad *= s;
        gap *= s;
        sepGap *= s;

        l.headerHeight = fm.height() * 1.25 + fm.height() * 2 + 22;
        const qreal labelSpace = l.compact ? 14 : fm.horizontalAdvance(QStringLiteral("99.9 MB")) + 10;
        const qreal boxHeight =
            l.compact ? fm.horizontalAdvance(QStringLiteral("max_pool2d")) + 12 : fm.height() * 2 + 10;
        const qreal measuredHeight = l.measured && !l.compact ? fm.height() + 4 : 0;
        const qreal bracketHeight = fm.height() + 18;
        const qreal bottom = 8 + boxHeight + measuredHeight + bracketHeight + 4;
        const qreal minPlot = 140;
        l.minimum = QSizeF(minWidth, l.headerHeight + labelSpace + minPlot + bottom);
        const qreal plotTop = l.headerHeight + labelSpace;
        const qreal plotHeight = std::max(minPlot, size.height() - plotTop - bottom);
        l.plot = QRectF(left, plotTop, minWidth * s - left - right, plotHeight);

        // The axis fits the analytic bars; a measured bar that goes beyond is cut with a break.
        double maxBar = static_cast<double>(b.fusedReadBytes + b.fusedWriteBytes);
        for (const TrafficOp& op : b.ops)
            maxBar = std::max(maxBar, static_cast<double>(op.bytes));
        l.yStep = niceStep(maxBar / 5.0);
        l.yMax = std::max(1.0, std::ceil(maxBar / l.yStep - 1e-9)) * l.yStep;

        auto height = [&](double value) { return static_cast<qreal>(value / l.yMax) * l.plot.height(); };
        const qreal boxTop = l.plot.bottom() + 8;
        auto makeGroup = [&](qreal x, int position, qint64 reads, qint64 writes, std::optional<double> implied) {
            Group g;
            g.opPosition = position;
            const qreal inner = x + pad;
            const qreal hr = height(static_cast<double>(reads)), hw = height(static_cast<double>(writes));
            g.reads = QRectF(inner, l.plot.bottom() - hr, barW, hr);
            g.writes = QRectF(inner, l.plot.bottom() - hr - hw, barW, hw);
            if (implied) {
                const qreal hi = height(*implied);
                g.implied = QRectF(inner + barW + barGap, l.plot.bottom() - hi, barW, hi);
                const qreal ceiling = l.plot.top() - labelSpace * 0.3;
                if (g.implied.top() < ceiling) {
                    g.implied.setTop(ceiling);
                    g.impliedClipped = true;
                }
            }
            const qreal w = groupWidth();
            g.box = QRectF(x + 2, boxTop, w - 4, boxHeight);
            const qreal top = l.plot.top() - labelSpace;
            g.column = QRectF(x, top, w, boxTop + boxHeight + measuredHeight - top);
            return g;
        };
        qreal x = left;
        for (int i = 0; i < n; ++i) {
            const TrafficOp& op = b.ops.at(i);
            l.groups.append(makeGroup(x, i, op.readBytes, op.writeBytes, m_chart->impliedBytes(i)));
            x += groupWidth() + gap;
        }
        x += sepGap - gap;
        l.separatorX = x - sepGap / 2;
        l.groups.append(makeGroup(x, -1, b.fusedReadBytes, b.fusedWriteBytes, std::nullopt));
        l.bracketY = boxTop + boxHeight + measuredHeight + 8;
        return l;
    }

    void paintContent(QPainter& p, const QSizeF& size) const
    {
        p.setRenderHint(QPainter::Antialiasing);
        p.setRenderHint(QPainter::TextAntialiasing);
        p.setFont(font());
        p.fillRect(QRectF(QPointF(0, 0), size), Qt::white);
        const TrafficBreakdown& b = m_chart->m_breakdown;
        const QFontMetricsF fm(font());
        const QColor text(0x22, 0x22, 0x22), muted(0x66, 0x66, 0x66);

        const QString empty = m_chart->emptyText();
        if (!empty.isEmpty()) {
            p.setPen(muted);
            p.drawText(QRectF(QPointF(0, 0), size).adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap,
                       empty);
            return;
        }
        const Layout l = layout(size);

        // Header: title, summary, legend.
        QFont bold = font();
        bold.setBold(true);
        bold.setPointSizeF(bold.pointSizeF() * 1.15);
        p.setFont(bold);
        p.setPen(text);
        const QString title =
            QStringLiteral("%1 · HBM traffic: each op as its own kernel, against one fused kernel%2")
                .arg(b.task, b.scale.isEmpty() ? QString() : QStringLiteral(" (%1 scale)").arg(b.scale));
        qreal y = 6 + QFontMetricsF(bold).ascent();
        p.drawText(QPointF(8, y), title);
        p.setFont(font());
        y += fm.height() + 4;
        p.drawText(QPointF(8, y), m_chart->summaryText());
        y += fm.height() + 4;
        qreal lx = 8;
        auto legend = [&](const QColor& color, Qt::BrushStyle style, const QString& label) {
            const QRectF swatch(lx, y - fm.ascent() + 1, 12, fm.ascent() - 2);
            p.fillRect(swatch, Qt::white);
            p.fillRect(swatch, QBrush(color, style));
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(color.darker(120), 1));
            p.drawRect(swatch);
            p.setPen(text);
            p.drawText(QPointF(lx + 16, y), label);
            lx += 16 + fm.horizontalAdvance(label) + 18;
        };
        legend(readsColor(), Qt::SolidPattern, QStringLiteral("reads (analytic)"));
        legend(writesColor(), Qt::SolidPattern, QStringLiteral("writes (analytic)"));
        if (l.measured)
            legend(measuredColor(), Qt::BDiagPattern,
                   QStringLiteral("measured time × %1 (%2)")
                       .arg(humanBandwidth(m_chart->m_bandwidthGBps), m_chart->m_bandwidthOrigin));

        // Grid and y axis.
        for (int i = 0; i * l.yStep <= l.yMax * 1.0001; ++i) {
            const double v = i * l.yStep;
            const qreal gy = l.plot.bottom() - static_cast<qreal>(v / l.yMax) * l.plot.height();
            p.setPen(QPen(QColor(0, 0, 0, i == 0 ? 120 : 28), 1));
            p.drawLine(QPointF(l.plot.left() - 4, gy), QPointF(l.plot.right(), gy));
            p.setPen(muted);
            const QString label = tickBytes(v);
            p.drawText(QPointF(l.plot.left() - 8 - fm.horizontalAdvance(label), gy + fm.ascent() / 2 - 1), label);
        }

        // Bars, boxes and the chain's arrows.
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * 0.85);
        const QFontMetricsF sfm(small);
        // A value turned upright: above a bar, or inside it (white) where it fits.
        auto upright = [&](const QRectF& bar, const QString& label, bool inside) {
            p.save();
            p.setFont(small);
            p.setPen(inside ? QColor(Qt::white) : muted);
            const qreal x = bar.center().x() + sfm.ascent() / 2 - 1;
            if (inside) {
                p.translate(x, bar.bottom() - (bar.height() - sfm.horizontalAdvance(label)) / 2);
            } else {
                p.translate(x, bar.top() - 4);
            }
            p.rotate(-90);
            p.drawText(QPointF(0, 0), label);
            p.restore();
        };
        auto segmentLabel = [&](const QRectF& segment, double bytes) {
            const QString label = humanBytes(bytes);
            if (!l.compact && segment.height() >= sfm.horizontalAdvance(label) + 8 && segment.width() >= sfm.height())
                upright(segment, label, true);
        };
        for (int gi = 0; gi < l.groups.size(); ++gi) {
            const Group& g = l.groups.at(gi);
            const bool fused = g.opPosition < 0;
            const qint64 reads = fused ? b.fusedReadBytes : b.ops.at(g.opPosition).readBytes;
            const qint64 writes = fused ? b.fusedWriteBytes : b.ops.at(g.opPosition).writeBytes;
            p.fillRect(g.reads, readsColor());
            p.fillRect(g.writes, writesColor());
            segmentLabel(g.reads, static_cast<double>(reads));
            segmentLabel(g.writes, static_cast<double>(writes));
            if (!l.compact)
                upright(g.reads.united(g.writes), humanBytes(static_cast<double>(reads + writes)), false);
            if (!g.implied.isNull() && g.implied.height() > 0) {
                p.fillRect(g.implied, Qt::white);
                p.fillRect(g.implied, QBrush(measuredColor(), Qt::BDiagPattern));
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(measuredColor(), 1));
                p.drawRect(g.implied);
                if (g.impliedClipped) {
                    // An axis break: the bar goes on far beyond the chart.
                    const qreal by = g.implied.top() + 8;
                    p.setPen(QPen(Qt::white, 4));
                    p.drawLine(QPointF(g.implied.left() - 2, by + 3), QPointF(g.implied.right() + 2, by - 3));
                    p.setPen(QPen(measuredColor(), 1));
                    p.drawLine(QPointF(g.implied.left() - 2, by + 6), QPointF(g.implied.right() + 2, by));
                    p.drawLine(QPointF(g.implied.left() - 2, by), QPointF(g.implied.right() + 2, by - 6));
                }
                if (!l.compact)
                    upright(g.implied, humanBytes(*m_chart->impliedBytes(g.opPosition)), false);
            }

            // The op's box.
            p.setPen(QPen(fused ? candidateColor().darker(120) : QColor(0x88, 0x88, 0x88), 1));
            p.setBrush(fused ? QColor(0xe8, 0xf6, 0xee) : QColor(0xf4, 0xf4, 0xf4));
            p.drawRoundedRect(g.box, 4, 4);
            p.setBrush(Qt::NoBrush);
            p.setPen(text);
            if (l.compact) {
                p.save();
                p.setFont(small);
                p.translate(g.box.center().x() + sfm.ascent() / 2 - 1, g.box.bottom() - 4);
                p.rotate(-90);
                const QString name = fused ? QStringLiteral("fused") : b.ops.at(g.opPosition).shortName();
                p.drawText(QPointF(0, 0), sfm.elidedText(name, Qt::ElideRight, g.box.height() - 8));
                p.restore();
                continue;
            }
            const QString name = fused ? QStringLiteral("fused kernel") : b.ops.at(g.opPosition).shortName();
            const QString second =
                fused ? QStringLiteral("all %1 ops").arg(b.ops.size() + b.zeroByteOps)
                      : QStringLiteral("#%1 %2").arg(b.ops.at(g.opPosition).index).arg(b.ops.at(g.opPosition).category);
            const qreal w = g.box.width() - 6;
            p.drawText(QPointF(g.box.left() + 3, g.box.top() + 4 + fm.ascent()),
                       fm.elidedText(name, Qt::ElideRight, w));
            p.setFont(small);
            p.setPen(muted);
            p.drawText(QPointF(g.box.left() + 3, g.box.top() + 6 + fm.height() + sfm.ascent()),
                       sfm.elidedText(second, Qt::ElideRight, w));
            p.setFont(font());
            if (l.measured && !fused) {
                const TrafficOp& op = b.ops.at(g.opPosition);
                p.setPen(measuredColor());
                const QString t = op.measuredNs ? humanTime(*op.measuredNs) : QStringLiteral("not measured");
                p.drawText(QPointF(g.box.left() + 3, g.box.bottom() + 2 + fm.ascent()),
                           fm.elidedText(t, Qt::ElideRight, g.box.width()));
            }
            // The chain: an arrow to the next op.
            if (!fused && gi + 1 < l.groups.size() && l.groups.at(gi + 1).opPosition >= 0) {
                const QRectF next = l.groups.at(gi + 1).box;
                const qreal ay = g.box.center().y();
                const QPointF a(g.box.right() + 3, ay), tip(next.left() - 3, ay);
                p.setPen(QPen(muted, 1.2));
                p.drawLine(a, tip - QPointF(4, 0));
                p.setBrush(muted);
                p.setPen(Qt::NoPen);
                p.drawPolygon(QPolygonF({tip, tip - QPointF(6, 3.5), tip - QPointF(6, -3.5)}));
                p.setBrush(Qt::NoBrush);
            }
        }

        // Between the chain and the fused kernel.
        p.setPen(QPen(QColor(0x99, 0x99, 0x99), 1, Qt::DashLine));
        p.drawLine(QPointF(l.separatorX, l.plot.top() - 10), QPointF(l.separatorX, l.bracketY + fm.height()));

        // Brackets with the totals.
        auto bracket = [&](qreal x0, qreal x1, const QString& label, const QColor& color) {
            const qreal by = l.bracketY;
            p.setPen(QPen(color, 1.2));
            p.drawLine(QPointF(x0, by), QPointF(x1, by));
            p.drawLine(QPointF(x0, by - 5), QPointF(x0, by));
            p.drawLine(QPointF(x1, by - 5), QPointF(x1, by));
            p.setPen(text);
            const QString shown = fm.elidedText(label, Qt::ElideRight, std::max<qreal>(x1 - x0, 200));
            const qreal tx = std::max<qreal>(4, (x0 + x1) / 2 - fm.horizontalAdvance(shown) / 2);
            p.drawText(QPointF(tx, by + 4 + fm.ascent()), shown);
        };
        const Group& first = l.groups.first();
        const Group& lastOp = l.groups.at(l.groups.size() - 2);
        const Group& fusedGroup = l.groups.last();
        bracket(first.box.left(), lastOp.box.right(),
                QStringLiteral("unfused: %1 op%2, each its own kernel, move %3")
                    .arg(b.ops.size())
                    .arg(b.ops.size() == 1 ? QString() : QStringLiteral("s"))
                    .arg(humanBytes(static_cast<double>(b.unfusedBytes))),
                referenceColor());
        bracket(fusedGroup.box.left(), fusedGroup.box.right(),
                QStringLiteral("fused: %1").arg(humanBytes(static_cast<double>(b.fusedBytes))), candidateColor());
    }

    int positionAt(const QPoint& pos) const
    {
        const Layout l = layout(size());
        for (const Group& g : l.groups) {
            if (g.column.contains(pos))
                return g.opPosition;
        }
        return -2;
    }

    void updateMinimumSize()
    {
        const Layout l = layout(QSizeF(0, 0));
        setMinimumSize(l.minimum.toSize() + QSize(1, 1));
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        paintContent(p, size());
    }

    bool event(QEvent* e) override
    {
        if (e->type() == QEvent::ToolTip) {
            auto* help = static_cast<QHelpEvent*>(e);
            const int position = m_chart->m_breakdown.isValid() ? positionAt(help->pos()) : -2;
            if (position >= -1)
                QToolTip::showText(help->globalPos(), m_chart->opToolTip(position), this);
            else
                QToolTip::hideText();
            return true;
        }
        return QWidget::event(e);
    }

private:
    TrafficChart* m_chart;
};

// ---- chart ------------------------------------------------------------------------------------

TrafficChart::TrafficChart(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("traffic"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_scroll = new QScrollArea(this);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_canvas = new TrafficCanvas(this);
    m_canvas->setObjectName(QStringLiteral("trafficCanvas"));
    m_scroll->setWidget(m_canvas);
    layout->addWidget(m_scroll);
    setMinimumSize(360, 300);
    addExportActions(this, {m_canvas});
    m_canvas->updateMinimumSize();
}

TrafficChart::~TrafficChart() = default;

void TrafficChart::setAnalysis(const QJsonObject& analyze)
{
    m_breakdown = trafficBreakdown(analyze);
    clearMeasured();
    setObjectName(m_breakdown.task.isEmpty()
                      ? QStringLiteral("traffic")
                      : QStringLiteral("traffic-") +
                            QString(m_breakdown.task).replace(QLatin1Char('/'), QLatin1Char('_')));
    m_canvas->updateMinimumSize();
}

void TrafficChart::clearMeasured()
{
    m_bandwidthGBps = 0.0;
    m_bandwidthOrigin.clear();
    m_unmatchedNs = 0.0;
    for (TrafficOp& op : m_breakdown.ops) {
        op.measuredNs.reset();
        op.kernels = 0;
    }
    m_canvas->updateMinimumSize();
}

void TrafficChart::setMeasured(const QJsonObject& profile, double bandwidthGBps, const QString& bandwidthOrigin)
{
    clearMeasured();
    const QList<ProfileOp> ops = decodeProfile(profile).ops;
    if (ops.isEmpty() || !(bandwidthGBps > 0) || !std::isfinite(bandwidthGBps))
        return;
    m_bandwidthGBps = bandwidthGBps;
    m_bandwidthOrigin = bandwidthOrigin;

    // By index where the names agree (the worker numbers top-level ops in call order, as analyze
    // does); the rest by order among ops of the same name.
    QList<ProfileOp> rest;
    for (const ProfileOp& o : ops) {
        bool matched = false;
        for (TrafficOp& op : m_breakdown.ops) {
            if (op.index == o.index && op.op == o.op && !op.measuredNs) {
                op.measuredNs = o.timeNs;
                op.kernels = o.kernels;
                matched = true;
                break;
            }
        }
        if (!matched)
            rest.append(o);
    }
    std::stable_sort(rest.begin(), rest.end(), [](const ProfileOp& a, const ProfileOp& b) { return a.index < b.index; });
    for (const ProfileOp& o : std::as_const(rest)) {
        bool matched = false;
        if (o.index >= 0) {
            for (TrafficOp& op : m_breakdown.ops) {
                if (op.op == o.op && !op.measuredNs) {
                    op.measuredNs = o.timeNs;
                    op.kernels = o.kernels;
                    matched = true;
                    break;
                }
            }
        }
        if (!matched)
            m_unmatchedNs += o.timeNs;
    }
    m_canvas->updateMinimumSize();
}

std::optional<double> TrafficChart::impliedBytes(int opPosition) const
{
    if (opPosition < 0 || opPosition >= m_breakdown.ops.size() || !hasMeasured())
        return std::nullopt;
    const TrafficOp& op = m_breakdown.ops.at(opPosition);
    if (!op.measuredNs)
        return std::nullopt;
    // ns × GB/s = 1e-9 s × 1e9 B/s = bytes
    return *op.measuredNs * m_bandwidthGBps;
}

QString TrafficChart::summaryText() const
{
    const TrafficBreakdown& b = m_breakdown;
    if (!b.isValid())
        return QString();
    QString s = QStringLiteral("unfused %1, fused %2: unfused/fused = %3×, analytic from shapes")
                    .arg(humanBytes(static_cast<double>(b.unfusedBytes)), humanBytes(static_cast<double>(b.fusedBytes)),
                         QString::number(b.ratio(), 'f', 2));
    if (hasMeasured()) {
        double total = m_unmatchedNs;
        for (const TrafficOp& op : b.ops)
            total += op.measuredNs.value_or(0.0);
        s += QStringLiteral("; eager reference measured: %1").arg(humanTime(total));
    }
    if (b.zeroByteOps > 0)
        s += b.zeroByteOps == 1 ? QStringLiteral("; 1 view op moves no bytes and is not drawn")
                                : QStringLiteral("; %1 view ops move no bytes and are not drawn").arg(b.zeroByteOps);
    return s;
}

QString TrafficChart::emptyText() const
{
    if (m_breakdown.task.isEmpty() && m_breakdown.error.isEmpty() && m_breakdown.ops.isEmpty())
        return QStringLiteral("No task analysed: choose a task to see its HBM traffic, unfused against fused.");
    if (!m_breakdown.isValid())
        return QStringLiteral("%1: cannot draw the traffic: %2.")
            .arg(m_breakdown.task.isEmpty() ? QStringLiteral("analysis") : m_breakdown.task, m_breakdown.error);
    return QString();
}

QString TrafficChart::opToolTip(int opPosition) const
{
    const TrafficBreakdown& b = m_breakdown;
    QStringList lines;
    if (opPosition < 0) {
        lines << QStringLiteral("<b>One fused kernel</b> (analytic)");
        lines << QStringLiteral("reads %1: the task's inputs and parameters, once")
                     .arg(humanBytes(static_cast<double>(b.fusedReadBytes)));
        lines << QStringLiteral("writes %1: the output, once").arg(humanBytes(static_cast<double>(b.fusedWriteBytes)));
        lines << QStringLiteral("%1 in all, the least traffic the task can have; %2× less than unfused")
                     .arg(humanBytes(static_cast<double>(b.fusedBytes)), QString::number(b.ratio(), 'f', 2));
        if (b.fusedBytes > 0)
            lines << QStringLiteral("intensity %1").arg(intensityText(b.flops / static_cast<double>(b.fusedBytes)));
        return lines.join(QStringLiteral("<br>"));
    }
    if (opPosition >= b.ops.size())
        return QString();
    const TrafficOp& op = b.ops.at(opPosition);
    lines << QStringLiteral("<b>%1</b> (#%2, %3), analytic").arg(op.op.toHtmlEscaped()).arg(op.index).arg(op.category);
    QStringList shapes;
    for (const QList<qint64>& in : op.inputs)
        shapes << shapeText(in);
    lines << QStringLiteral("reads %1 (%2)")
                 .arg(humanBytes(static_cast<double>(op.readBytes)), shapes.join(QStringLiteral(", ")));
    lines << QStringLiteral("writes %1 (%2)").arg(humanBytes(static_cast<double>(op.writeBytes)), shapeText(op.output));
    lines << QStringLiteral("%1, intensity %2")
                 .arg(humanFlops(op.flops), intensityText(op.flops / static_cast<double>(op.bytes)));
    if (hasMeasured()) {
        if (op.measuredNs) {
            const double implied = *impliedBytes(opPosition);
            const double factor = implied / static_cast<double>(op.bytes);
            lines << QStringLiteral("measured %1 (%2 kernel%3): at %4 (%5) that time moves %6, %7× its analytic bytes")
                         .arg(humanTime(*op.measuredNs))
                         .arg(op.kernels)
                         .arg(op.kernels == 1 ? QString() : QStringLiteral("s"))
                         .arg(humanBandwidth(m_bandwidthGBps), m_bandwidthOrigin, humanBytes(implied),
                              QString::number(factor, 'f', 2));
            lines << (factor < 1.5 ? QStringLiteral("near the memory roof: this op's time is its HBM traffic")
                                   : QStringLiteral("its time is not explained by HBM traffic alone (compute, launch "
                                                    "or a slow kernel)"));
        } else {
            lines << QStringLiteral("not in the profile");
        }
    }
    return lines.join(QStringLiteral("<br>"));
}

QSize TrafficChart::exportSize() const
{
    const QSize viewport = m_scroll->viewport()->size();
    return QSize(std::max(m_canvas->minimumWidth(), viewport.width()),
                 std::max(m_canvas->minimumHeight(), viewport.height()));
}

void TrafficChart::renderExport(QPainter* painter, const QRectF& target)
{
    painter->save();
    painter->translate(target.topLeft());
    m_canvas->paintContent(*painter, target.size());
    painter->restore();
}

} // namespace kwb::app
