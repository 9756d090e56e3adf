#include "app/charts/trafficchart.h"

#include "app/charts/chartformat.h"
#include "core/protocol/workerresponses.h"
#include "core/tasks/kernelbound.h"

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

TrafficBreakdown trafficBreakdown(const AnalyzeResult& a)
{
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
    const TrafficModel model = trafficModel(a);
    if (model.libraryEpilogueBytes)
        b.libraryEpilogueBytes = rounded(*model.libraryEpilogueBytes);
    b.libraryOps = model.libraryOps;
    b.fusedPasses = model.fusedPasses;
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
        int opPosition = -2; ///< index into breakdown().ops, or a TrafficChart::k… total
        QRectF column;       ///< bars and box, for hit testing
        QRectF reads;        ///< the bar's lower part
        QRectF writes;       ///< stacked on the reads
        QRectF implied;      ///< measured time × bandwidth, beside it; null without a measurement
        QRectF box;
        bool impliedClipped = false;
        bool pinned = false; ///< a total: stays in view while the chain scrolls
    };
    struct Axis
    {
        QRectF plot; ///< y = 0 at the bottom, yMax at the top
        double yMax = 1.0;
        double yStep = 1.0;
    };
    struct Layout
    {
        bool compact = false;
        bool measured = false;
        qreal headerHeight = 0;
        Axis totals, chain;
        qreal pin = 0;         ///< the visible left edge: pinned parts are drawn from here
        qreal pinnedWidth = 0; ///< header column, totals and the chain's axis
        QList<Group> groups;   ///< the totals, then the ops
        QSizeF minimum;
    };

    /// The totals in drawing order, with their bytes (reads, writes) and labels.
    struct Total
    {
        int position;
        qint64 reads, writes;
        QString name;
    };
    QList<Total> totals() const
    {
        const TrafficBreakdown& b = m_chart->m_breakdown;
        qint64 reads = 0, writes = 0;
        for (const TrafficOp& op : b.ops) {
            reads += op.readBytes;
            writes += op.writeBytes;
        }
        QList<Total> out{{TrafficChart::kUnfusedTotal, reads, writes, QStringLiteral("unfused")}};
        if (b.libraryEpilogueBytes)
            out.append(
                {TrafficChart::kLibraryEpilogue, *b.libraryEpilogueBytes, 0, QStringLiteral("library + epilogue")});
        out.append({TrafficChart::kOneKernel, b.fusedReadBytes, b.fusedWriteBytes,
                    b.oneKernelIsBound() ? QStringLiteral("one kernel: bound") : QStringLiteral("one kernel")});
        return out;
    }

    static double ratioText(double unfused, double bytes) { return bytes > 0 ? unfused / bytes : 0.0; }

    QString totalSecondLine(const Total& t) const
    {
        const TrafficBreakdown& b = m_chart->m_breakdown;
        const double bytes = static_cast<double>(t.reads + t.writes);
        return t.position == TrafficChart::kUnfusedTotal
                   ? QStringLiteral("%1 · 1×").arg(humanBytes(bytes))
                   : QStringLiteral("%1 · %2× less")
                         .arg(humanBytes(bytes),
                              QString::number(ratioText(static_cast<double>(b.unfusedBytes), bytes), 'f', 1));
    }

    /// The third line of a total's box: its time at the GPU's bandwidth; empty without a GPU.
    QString totalTimeLine(const Total& t) const
    {
        if (!(m_chart->m_gpuGBps > 0))
            return QString();
        return QStringLiteral("→ %1").arg(humanTime(static_cast<double>(t.reads + t.writes) / m_chart->m_gpuGBps));
    }

    static Axis axisFor(double maxBar, const QRectF& plot)
    {
        Axis a;
        a.plot = plot;
        a.yStep = niceStep(maxBar / 5.0);
        a.yMax = std::max(1.0, std::ceil(maxBar / a.yStep - 1e-9)) * a.yStep;
        return a;
    }

    Layout layout(const QSizeF& size, qreal pin = 0) const
    {
        const TrafficBreakdown& b = m_chart->m_breakdown;
        const QFontMetricsF fm(font());
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * 0.85);
        const QFontMetricsF sfm(small);
        Layout l;
        l.pin = pin;
        const int n = static_cast<int>(b.ops.size());
        // Past a couple of dozen ops (level 3 networks) the chain is drawn dense: thin bars, names
        // turned upright, numbers in the tooltips.
        l.compact = n > 24;
        l.measured = m_chart->hasMeasured();
        const int bars = l.measured ? 2 : 1;
        const qreal axisW = fm.horizontalAdvance(QStringLiteral("9.99 GB")) + 14, right = 16;
        qreal barW = l.compact ? 10 : 34, barGap = l.compact ? 2 : 6, pad = l.compact ? 4 : 16;
        qreal gap = l.compact ? 6 : 30;
        auto groupWidth = [&] { return bars * barW + (bars - 1) * barGap + 2 * pad; };

        // The totals: wide enough for their two lines of text, never cut.
        const QList<Total> ts = totals();
        qreal totalW = 2 * 34 + 6 + 16;
        for (const Total& t : ts)
            totalW =
                std::max({totalW, fm.horizontalAdvance(t.name) + 12, sfm.horizontalAdvance(totalSecondLine(t)) + 12,
                          sfm.horizontalAdvance(totalTimeLine(t)) + 12});
        const qreal totalGap = 10;
        const qreal totalsLeft = axisW;
        const qreal totalsRight = totalsLeft + ts.size() * totalW + (ts.size() - 1) * totalGap;
        const qreal chainAxisLeft = totalsRight + 28;
        const qreal chainLeft = chainAxisLeft + axisW;
        l.pinnedWidth = chainLeft;
        const qreal minWidth = chainLeft + n * groupWidth() + std::max(0, n - 1) * gap + right;
        // Wider than needed: widen bars and gaps up to 1.6×, so a short chain does not look lost.
        const qreal chainMin = std::max<qreal>(minWidth - chainLeft, 1.0);
        const qreal s = std::clamp((size.width() - chainLeft) / chainMin, 1.0, 1.6);
        barW *= s;
        barGap *= s;
        pad *= s;
        gap *= s;

        const bool timed = m_chart->m_gpuGBps > 0;
        l.headerHeight = fm.height() * 1.25 + fm.height() * (timed ? 3 : 2) + (timed ? 26 : 22);
        const qreal labelSpace = fm.height() + sfm.horizontalAdvance(QStringLiteral("99.9 MB")) + 10;
        const qreal boxHeight =
            l.compact ? fm.horizontalAdvance(QStringLiteral("max_pool2d")) + 12 : fm.height() * 2 + 10;
        const qreal measuredHeight = l.measured && !l.compact ? fm.height() + 4 : 0;
        // A total's box has a third line, its time at the GPU's bandwidth.
        const qreal totalBoxHeight = fm.height() * 2 + 10 + (timed ? sfm.height() + 2 : 0);
        const qreal bottom = 8 + std::max(boxHeight + measuredHeight, totalBoxHeight) + 8;
        const qreal minPlot = 140;
        l.minimum = QSizeF(minWidth, l.headerHeight + labelSpace + minPlot + bottom);
        const qreal plotTop = l.headerHeight + labelSpace;
        const qreal plotHeight = std::max(minPlot, size.height() - plotTop - bottom);

        // Two scales: the totals (up to unfused) and the ops (up to the largest op).
        double maxTotal = 0, maxOp = 0;
        for (const Total& t : ts)
            maxTotal = std::max(maxTotal, static_cast<double>(t.reads + t.writes));
        for (const TrafficOp& op : b.ops)
            maxOp = std::max(maxOp, static_cast<double>(op.bytes));
        l.totals = axisFor(maxTotal, QRectF(pin + totalsLeft, plotTop, totalsRight - totalsLeft, plotHeight));
        l.chain = axisFor(maxOp, QRectF(chainLeft, plotTop,
                                        std::max<qreal>(minWidth * 1.0, size.width()) - chainLeft - right, plotHeight));

        const qreal boxTop = plotTop + plotHeight + 8;
        auto makeGroup = [&](const Axis& axis, qreal x, qreal w, qreal bw, int position, qint64 reads, qint64 writes,
                             std::optional<double> implied) {
            Group g;
            g.opPosition = position;
            auto height = [&](double value) { return static_cast<qreal>(value / axis.yMax) * axis.plot.height(); };
            const qreal inner = x + (w - bw * (implied ? 2 : 1) - (implied ? barGap : 0)) / 2;
            const qreal hr = height(static_cast<double>(reads)), hw = height(static_cast<double>(writes));
            g.reads = QRectF(inner, axis.plot.bottom() - hr, bw, hr);
            g.writes = QRectF(inner, axis.plot.bottom() - hr - hw, bw, hw);
            if (implied) {
                const qreal hi = height(*implied);
                g.implied = QRectF(inner + bw + barGap, axis.plot.bottom() - hi, bw, hi);
                const qreal ceiling = axis.plot.top() - labelSpace * 0.3;
                if (g.implied.top() < ceiling) {
                    g.implied.setTop(ceiling);
                    g.impliedClipped = true;
                }
            }
            const bool total = position < 0;
            g.box = QRectF(x + 2, boxTop, w - 4, total ? totalBoxHeight : boxHeight);
            const qreal top = axis.plot.top() - labelSpace;
            g.column = QRectF(x, top, w, g.box.bottom() + (total ? 0 : measuredHeight) - top);
            return g;
        };
        std::optional<double> unfusedImplied;
        if (l.measured) {
            double sum = 0;
            for (int i = 0; i < n; ++i)
                sum += m_chart->impliedBytes(i).value_or(0.0);
            unfusedImplied = sum + m_chart->m_unmatchedNs * m_chart->m_bandwidthGBps;
        }
        qreal x = pin + totalsLeft;
        for (const Total& t : ts) {
            Group g = makeGroup(l.totals, x, totalW, 34, t.position, t.reads, t.writes,
                                t.position == TrafficChart::kUnfusedTotal ? unfusedImplied : std::nullopt);
            g.pinned = true;
            l.groups.append(g);
            x += totalW + totalGap;
        }
        x = chainLeft;
        for (int i = 0; i < n; ++i) {
            const TrafficOp& op = b.ops.at(i);
            l.groups.append(
                makeGroup(l.chain, x, groupWidth(), barW, i, op.readBytes, op.writeBytes, m_chart->impliedBytes(i)));
            x += groupWidth() + gap;
        }
        return l;
    }

    void paintContent(QPainter& p, const QSizeF& size, qreal pin = 0) const
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
            p.drawText(
                QRectF(QPointF(pin, 0),
                       QSizeF(std::min<qreal>(size.width(), width() > 0 ? width() : size.width()), size.height()))
                    .adjusted(12, 12, -12, -12),
                Qt::AlignCenter | Qt::TextWordWrap, empty);
            return;
        }
        const Layout l = layout(size, pin);
        QFont small = font();
        small.setPointSizeF(small.pointSizeF() * 0.85);
        const QFontMetricsF sfm(small);

        auto drawAxis = [&](const Axis& a, qreal labelsRight, qreal gridRight) {
            for (int i = 0; i * a.yStep <= a.yMax * 1.0001; ++i) {
                const double v = i * a.yStep;
                const qreal gy = a.plot.bottom() - static_cast<qreal>(v / a.yMax) * a.plot.height();
                p.setPen(QPen(QColor(0, 0, 0, i == 0 ? 120 : 28), 1));
                p.drawLine(QPointF(labelsRight + 4, gy), QPointF(gridRight, gy));
                p.setPen(muted);
                const QString label = tickBytes(v);
                p.drawText(QPointF(labelsRight - fm.horizontalAdvance(label), gy + fm.ascent() / 2 - 1), label);
            }
        };
        // A value turned upright: above a bar, or inside it (white) where it fits.
        auto upright = [&](const QRectF& bar, const QString& label, bool inside) {
            p.save();
            p.setFont(small);
            p.setPen(inside ? QColor(Qt::white) : muted);
            const qreal x = bar.center().x() + sfm.ascent() / 2 - 1;
            if (inside)
                p.translate(x, bar.bottom() - (bar.height() - sfm.horizontalAdvance(label)) / 2);
            else
                p.translate(x, bar.top() - 4);
            p.rotate(-90);
            p.drawText(QPointF(0, 0), label);
            p.restore();
        };
        auto drawGroup = [&](int gi) {
            const Group& g = l.groups.at(gi);
            const bool total = g.opPosition < 0;
            qint64 reads = 0, writes = 0;
            QString name, second, third;
            if (total) {
                for (const Total& t : totals())
                    if (t.position == g.opPosition) {
                        reads = t.reads;
                        writes = t.writes;
                        name = t.name;
                        second = totalSecondLine(t);
                        third = totalTimeLine(t);
                    }
            } else {
                const TrafficOp& op = b.ops.at(g.opPosition);
                reads = op.readBytes;
                writes = op.writeBytes;
                name = op.shortName();
                second = QStringLiteral("#%1 %2").arg(op.index).arg(op.category);
            }
            const bool oneKernel = g.opPosition == TrafficChart::kOneKernel;
            const bool library = g.opPosition == TrafficChart::kLibraryEpilogue;
            const bool bound = oneKernel && b.oneKernelIsBound();
            if (bound) {
                // A bound, not an option: hatched and outlined dashed, never a solid bar.
                const QRectF bar = g.reads.united(g.writes);
                p.fillRect(bar, Qt::white);
                p.fillRect(bar, QBrush(readsColor(), Qt::BDiagPattern));
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(readsColor().darker(130), 1.6, Qt::DashLine));
                p.drawRect(bar);
            } else {
                // The library + epilogue total has no read/write split: one colour of its own.
                p.fillRect(g.reads, library ? QColor(0x8e, 0x6c, 0xb5) : readsColor());
                p.fillRect(g.writes, writesColor());
            }
            const bool dense = l.compact && !total;
            if (!dense)
                upright(g.reads.united(g.writes), humanBytes(static_cast<double>(reads + writes)), false);
            if (!g.implied.isNull() && g.implied.height() > 0) {
                p.fillRect(g.implied, Qt::white);
                p.fillRect(g.implied, QBrush(measuredColor(), Qt::BDiagPattern));
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(measuredColor(), 1));
                p.drawRect(g.implied);
                if (g.impliedClipped) {
                    const qreal by = g.implied.top() + 8;
                    p.setPen(QPen(Qt::white, 4));
                    p.drawLine(QPointF(g.implied.left() - 2, by + 3), QPointF(g.implied.right() + 2, by - 3));
                    p.setPen(QPen(measuredColor(), 1));
                    p.drawLine(QPointF(g.implied.left() - 2, by + 6), QPointF(g.implied.right() + 2, by));
                    p.drawLine(QPointF(g.implied.left() - 2, by), QPointF(g.implied.right() + 2, by - 6));
                }
                if (!dense && total)
                    upright(
                        g.implied,
                        humanBytes(static_cast<double>(g.implied.height() / l.totals.plot.height()) * l.totals.yMax),
                        false);
                else if (!dense)
                    upright(g.implied, humanBytes(*m_chart->impliedBytes(g.opPosition)), false);
            }
            p.setPen(QPen(oneKernel ? candidateColor().darker(120) : QColor(0x88, 0x88, 0x88), 1,
                          bound ? Qt::DashLine : Qt::SolidLine));
            p.setBrush(oneKernel ? QColor(0xe8, 0xf6, 0xee)
                                 : (total ? QColor(0xee, 0xee, 0xf6) : QColor(0xf4, 0xf4, 0xf4)));
            p.drawRoundedRect(g.box, 4, 4);
            p.setBrush(Qt::NoBrush);
            p.setPen(text);
            if (dense) {
                p.save();
                p.setFont(small);
                p.translate(g.box.center().x() + sfm.ascent() / 2 - 1, g.box.bottom() - 4);
                p.rotate(-90);
                p.drawText(QPointF(0, 0), sfm.elidedText(name, Qt::ElideRight, g.box.height() - 8));
                p.restore();
                return;
            }
            const qreal w = g.box.width() - 6;
            p.drawText(QPointF(g.box.left() + 3, g.box.top() + 4 + fm.ascent()),
                       fm.elidedText(name, Qt::ElideRight, w));
            p.setFont(small);
            p.setPen(muted);
            p.drawText(QPointF(g.box.left() + 3, g.box.top() + 6 + fm.height() + sfm.ascent()),
                       sfm.elidedText(second, Qt::ElideRight, w));
            if (!third.isEmpty()) {
                p.setPen(text);
                p.drawText(QPointF(g.box.left() + 3, g.box.top() + 8 + fm.height() + sfm.height() + sfm.ascent()),
                           sfm.elidedText(third, Qt::ElideRight, w));
            }
            p.setFont(font());
            if (l.measured && !total) {
                const TrafficOp& op = b.ops.at(g.opPosition);
                p.setPen(measuredColor());
                const QString t = op.measuredNs ? humanTime(*op.measuredNs) : QStringLiteral("not measured");
                p.drawText(QPointF(g.box.left() + 3, g.box.bottom() + 2 + fm.ascent()),
                           fm.elidedText(t, Qt::ElideRight, g.box.width()));
            }
        };

        // The chain first, under the pinned column.
        const qreal pinnedRight = pin + l.pinnedWidth;
        p.save();
        p.setClipRect(QRectF(pinnedRight, 0, std::max<qreal>(0, size.width() - pinnedRight), size.height()));
        drawAxis(l.chain, -1e9, l.chain.plot.right()); // grid lines only; labels are pinned
        for (int gi = 0; gi < l.groups.size(); ++gi)
            if (!l.groups.at(gi).pinned)
                drawGroup(gi);
        p.restore();

        // The pinned column: header, both axes, the totals.
        const qreal visibleWidth = width() > 0 && parentWidget() ? parentWidget()->width() : size.width();
        p.fillRect(QRectF(pin, 0, l.pinnedWidth, size.height()), Qt::white);
        p.fillRect(QRectF(pin, 0, std::max<qreal>(visibleWidth, l.pinnedWidth), l.headerHeight), Qt::white);
        QFont bold = font();
        bold.setBold(true);
        bold.setPointSizeF(bold.pointSizeF() * 1.15);
        p.setFont(bold);
        p.setPen(text);
        const QString title =
            QStringLiteral("%1 · HBM traffic: unfused, library op + fused epilogue, one kernel%2")
                .arg(b.task, b.scale.isEmpty() ? QString() : QStringLiteral(" (%1 scale)").arg(b.scale));
        qreal y = 6 + QFontMetricsF(bold).ascent();
        p.drawText(QPointF(pin + 8, y), title);
        p.setFont(font());
        y += fm.height() + 4;
        p.drawText(QPointF(pin + 8, y), m_chart->summaryText());
        y += fm.height() + 4;
        if (!m_chart->timeSummaryText().isEmpty()) {
            p.drawText(QPointF(pin + 8, y), m_chart->timeSummaryText());
            y += fm.height() + 4;
        }
        qreal lx = pin + 8;
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
        if (b.libraryEpilogueBytes)
            legend(QColor(0x8e, 0x6c, 0xb5), Qt::SolidPattern,
                   QStringLiteral("library op + fused epilogue (analytic)"));
        if (b.oneKernelIsBound())
            legend(
                readsColor(), Qt::BDiagPattern,
                QStringLiteral("bound, not an option (%1 matmul/conv ops cannot share one kernel)").arg(b.libraryOps));
        if (l.measured)
            legend(measuredColor(), Qt::BDiagPattern,
                   QStringLiteral("measured time × %1 (%2)")
                       .arg(humanBandwidth(m_chart->m_bandwidthGBps), m_chart->m_bandwidthOrigin));
        drawAxis(l.totals, l.totals.plot.left() - 8, l.totals.plot.right());
        drawAxis(l.chain, pinnedRight - 8, pinnedRight);
        p.setPen(muted);
        p.setFont(small);
        p.drawText(
            QPointF(l.totals.plot.left(), l.totals.plot.top() - sfm.horizontalAdvance(QStringLiteral("99.9 MB")) - 14),
            QStringLiteral("totals (one scale)"));
        p.drawText(QPointF(pinnedRight + 4, l.chain.plot.top() - sfm.horizontalAdvance(QStringLiteral("99.9 MB")) - 14),
                   QStringLiteral("op by op, each its own kernel (own scale: up to %1)").arg(tickBytes(l.chain.yMax)));
        p.setFont(font());
        p.setPen(QPen(QColor(0x99, 0x99, 0x99), 1, Qt::DashLine));
        p.drawLine(
            QPointF(pinnedRight - fm.horizontalAdvance(QStringLiteral("9.99 GB")) - 20, l.chain.plot.top() - 10),
            QPointF(pinnedRight - fm.horizontalAdvance(QStringLiteral("9.99 GB")) - 20, l.chain.plot.bottom() + 40));
        for (int gi = 0; gi < l.groups.size(); ++gi)
            if (l.groups.at(gi).pinned)
                drawGroup(gi);
    }

    qreal pinOffset() const { return std::max<qreal>(0, -pos().x()); }

    int positionAt(const QPoint& pos) const
    {
        const Layout l = layout(size(), pinOffset());
        // The pinned totals lie over the chain: they answer first.
        for (bool pinned : {true, false})
            for (const Group& g : l.groups)
                if (g.pinned == pinned && g.column.contains(pos) && (pinned || pos.x() >= l.pin + l.pinnedWidth))
                    return g.opPosition;
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
        paintContent(p, size(), pinOffset());
    }

    bool event(QEvent* e) override
    {
        if (e->type() == QEvent::ToolTip) {
            auto* help = static_cast<QHelpEvent*>(e);
            const int position = m_chart->m_breakdown.isValid() ? positionAt(help->pos()) : -2;
            if (position != -2)
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
    // The pinned column is painted at the scroll offset: repaint all of it on every scroll.
    connect(m_scroll->horizontalScrollBar(), &QScrollBar::valueChanged, m_canvas, qOverload<>(&QWidget::update));
    layout->addWidget(m_scroll);
    setMinimumSize(360, 300);
    addExportActions(this, {m_canvas});
    m_canvas->updateMinimumSize();
}

TrafficChart::~TrafficChart() = default;

void TrafficChart::setAnalysis(const AnalyzeResult& analyze)
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

void TrafficChart::setMeasured(const ProfileResult& profile, double bandwidthGBps, const QString& bandwidthOrigin)
{
    clearMeasured();
    const QList<ProfileOp>& ops = profile.ops;
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
    std::stable_sort(rest.begin(), rest.end(),
                     [](const ProfileOp& a, const ProfileOp& b) { return a.index < b.index; });
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
    QString s = QStringLiteral("unfused %1").arg(humanBytes(static_cast<double>(b.unfusedBytes)));
    if (b.libraryEpilogueBytes)
        s += QStringLiteral(", library + epilogue %1 (%2× less)")
                 .arg(humanBytes(static_cast<double>(*b.libraryEpilogueBytes)),
                      QString::number(
                          static_cast<double>(b.unfusedBytes) / static_cast<double>(*b.libraryEpilogueBytes), 'f', 2));
    s += QStringLiteral(", one kernel %1 (%2× less)%3; analytic from shapes")
             .arg(humanBytes(static_cast<double>(b.fusedBytes)), QString::number(b.ratio(), 'f', 2),
                  b.oneKernelIsBound() ? QStringLiteral(" as a bound") : QString());
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

void TrafficChart::setGpu(const QString& name, double bandwidthGBps, const QString& origin)
{
    const bool valid = bandwidthGBps > 0 && std::isfinite(bandwidthGBps);
    m_gpuName = valid ? name : QString();
    m_gpuOrigin = valid ? origin : QString();
    m_gpuGBps = valid ? bandwidthGBps : 0.0;
    m_canvas->updateMinimumSize();
}

QString TrafficChart::bytesAsTime(double bytes) const
{
    // bytes / (GB/s) = ns: the least time moving them takes, at the memory roof.
    return m_gpuGBps > 0 ? QStringLiteral("%1 → %2").arg(humanBytes(bytes), humanTime(bytes / m_gpuGBps))
                         : humanBytes(bytes);
}

QString TrafficChart::timeSummaryText() const
{
    const TrafficBreakdown& b = m_breakdown;
    if (!(m_gpuGBps > 0) || !b.isValid())
        return QString();
    QString s =
        QStringLiteral("At %1 (%2, %3) moving the bytes takes at least: unfused %4")
            .arg(humanBandwidth(m_gpuGBps), m_gpuName, m_gpuOrigin, bytesAsTime(static_cast<double>(b.unfusedBytes)));
    if (b.libraryEpilogueBytes)
        s += QStringLiteral(", library + epilogue %1").arg(bytesAsTime(static_cast<double>(*b.libraryEpilogueBytes)));
    s += QStringLiteral(", one kernel %1%2")
             .arg(bytesAsTime(static_cast<double>(b.fusedBytes)),
                  b.oneKernelIsBound() ? QStringLiteral(" (a bound)") : QString());
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
    if (opPosition == kUnfusedTotal) {
        lines << QStringLiteral("<b>Unfused</b> (analytic): every op its own kernel");
        lines << QStringLiteral("%1 over %2 ops: each reads its inputs from HBM and writes its output back")
                     .arg(humanBytes(static_cast<double>(b.unfusedBytes)))
                     .arg(b.ops.size());
        if (b.unfusedBytes > 0)
            lines << QStringLiteral("intensity %1").arg(intensityText(b.flops / static_cast<double>(b.unfusedBytes)));
        lines << gpuTimeLine(static_cast<double>(b.unfusedBytes));
        if (hasMeasured()) {
            double total = m_unmatchedNs;
            for (const TrafficOp& op : b.ops)
                total += op.measuredNs.value_or(0.0);
            lines << QStringLiteral("measured: the eager reference took %1; at %2 (%3) that time moves %4")
                         .arg(humanTime(total), humanBandwidth(m_bandwidthGBps), m_bandwidthOrigin,
                              humanBytes(total * m_bandwidthGBps));
        }
        lines.removeAll(QString());
        return lines.join(QStringLiteral("<br>"));
    }
    if (opPosition == kLibraryEpilogue) {
        if (!b.libraryEpilogueBytes)
            return QString();
        const double bytes = static_cast<double>(*b.libraryEpilogueBytes);
        lines << QStringLiteral("<b>Library op + fused epilogue</b> (analytic)");
        lines << QStringLiteral("%1 library op%2 (matmul, conv) as their own kernels, each with its own traffic, and "
                                "%3 fused pass%4 for the ops between and after them: each pass reads its inputs once "
                                "and writes its last output once")
                     .arg(b.libraryOps)
                     .arg(b.libraryOps == 1 ? QString() : QStringLiteral("s"))
                     .arg(b.fusedPasses)
                     .arg(b.fusedPasses == 1 ? QString() : QStringLiteral("es"));
        lines << QStringLiteral("%1 in all: %2× less than unfused, %3× the one kernel")
                     .arg(humanBytes(bytes), QString::number(static_cast<double>(b.unfusedBytes) / bytes, 'f', 2),
                          QString::number(bytes / static_cast<double>(b.fusedBytes), 'f', 2));
        lines << QStringLiteral("intensity %1").arg(intensityText(b.flops / bytes));
        lines << gpuTimeLine(bytes);
        lines.removeAll(QString());
        return lines.join(QStringLiteral("<br>"));
    }
    if (opPosition < 0) {
        lines << QStringLiteral("<b>One kernel</b> (analytic)");
        lines << QStringLiteral("reads %1: the task's inputs and parameters, once")
                     .arg(humanBytes(static_cast<double>(b.fusedReadBytes)));
        lines << QStringLiteral("writes %1: the output, once").arg(humanBytes(static_cast<double>(b.fusedWriteBytes)));
        lines << QStringLiteral("%1 in all, the least traffic the task can have; %2× less than unfused")
                     .arg(humanBytes(static_cast<double>(b.fusedBytes)), QString::number(b.ratio(), 'f', 2));
        if (b.fusedBytes > 0)
            lines << QStringLiteral("intensity %1").arg(intensityText(b.flops / static_cast<double>(b.fusedBytes)));
        lines << gpuTimeLine(static_cast<double>(b.fusedBytes));
        if (b.oneKernelIsBound())
            lines << QStringLiteral("<b>A bound, not an option</b>: with %1 matmul/conv ops, one kernel would keep "
                                    "every intermediate between them on chip, which no kernel does for a chain like "
                                    "this; library op + fused epilogue is the traffic real code can reach")
                         .arg(b.libraryOps);
        lines.removeAll(QString());
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
    if (m_gpuGBps > 0)
        lines << gpuTimeLine(static_cast<double>(op.bytes));
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

QString TrafficChart::gpuTimeLine(double bytes) const
{
    if (!(m_gpuGBps > 0))
        return QString();
    return QStringLiteral("on the %1: %2 at %3 (%4), the least time these bytes take")
        .arg(m_gpuName.toHtmlEscaped(), bytesAsTime(bytes), humanBandwidth(m_gpuGBps), m_gpuOrigin);
}

QList<QPair<int, QRectF>> TrafficChart::drawnBars() const
{
    QList<QPair<int, QRectF>> out;
    if (!emptyText().isEmpty())
        return out;
    const auto l = m_canvas->layout(m_canvas->size(), m_canvas->pinOffset());
    for (const auto& g : l.groups)
        out.append({g.opPosition, g.reads.united(g.writes)});
    return out;
}

QRect TrafficChart::visibleCanvasRect() const
{
    return m_canvas->visibleRegion().boundingRect();
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
