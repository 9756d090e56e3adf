#include "app/charts/chartformat.h"

#include <QGraphicsSimpleTextItem>
#include <QList>
#include <QRectF>
#include <QStringList>

#include <cmath>

namespace kwb::app {

namespace {

/// value scaled into [1, 1000) with its SI prefix, for value >= 0.
QString siText(double value, const QString& unit)
{
    if (!std::isfinite(value))
        return QStringLiteral("–");
    static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
    int i = 0;
    double v = std::fabs(value);
    while (v >= 999.5 && i < 6) {
        v /= 1000.0;
        ++i;
    }
    const QString sign = value < 0 ? QStringLiteral("−") : QString();
    // three significant digits, without trailing exponent: 5.74, 57.4, 574
    const int decimals = v >= 99.95 ? 0 : (v >= 9.995 ? 1 : 2);
    QString number = QString::number(v, 'f', decimals);
    if (i == 0 && v == std::floor(v))
        number = QString::number(static_cast<qint64>(v));
    return QStringLiteral("%1%2 %3%4").arg(sign, number, QLatin1String(prefixes[i]), unit);
}

} // namespace

QString humanBytes(double bytes)
{
    return siText(bytes, QStringLiteral("B"));
}

QString humanGflops(double gflops)
{
    return siText(gflops * 1e9, QStringLiteral("FLOP/s"));
}

QString humanBandwidth(double gbps)
{
    return siText(gbps * 1e9, QStringLiteral("B/s"));
}

QString humanFlops(double flops)
{
    return siText(flops, QStringLiteral("FLOP"));
}

QString intensityText(double flopPerByte)
{
    if (!std::isfinite(flopPerByte))
        return QStringLiteral("–");
    const double a = std::fabs(flopPerByte);
    QString n;
    if (a >= 100.0 || a == 0.0)
        n = QString::number(flopPerByte, 'f', 0);
    else if (a >= 10.0)
        n = QString::number(flopPerByte, 'f', 1);
    else if (a >= 1.0)
        n = QString::number(flopPerByte, 'f', 2);
    else
        n = QString::number(flopPerByte, 'g', 3);
    return n + QStringLiteral(" FLOP/B");
}

QString humanTime(double ns)
{
    if (!std::isfinite(ns))
        return QStringLiteral("–");
    const double a = std::fabs(ns);
    auto three = [](double v, const char* unit) {
        const int decimals = v >= 99.95 ? 0 : (v >= 9.995 ? 1 : 2);
        return QString::number(v, 'f', decimals) + QLatin1Char(' ') + QString::fromUtf8(unit);
    };
    if (a >= 1e9)
        return three(ns / 1e9, "s");
    if (a >= 1e6)
        return three(ns / 1e6, "ms");
    if (a >= 1e3)
        return three(ns / 1e3, "µs");
    return QString::number(ns, 'f', 0) + QStringLiteral(" ns");
}

QString shapeText(const QList<qint64>& shape)
{
    if (shape.isEmpty())
        return QStringLiteral("scalar");
    QStringList parts;
    for (qint64 d : shape)
        parts << QString::number(d);
    return parts.join(QChar(0x00D7));
}

QColor seriesColor(int index)
{
    // Tableau 10: distinct in print and for the common colour-vision deficiencies.
    static const QColor palette[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                     QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48),
                                     QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f),
                                     QColor(0xba, 0xb0, 0xac)};
    const int n = static_cast<int>(sizeof palette / sizeof palette[0]);
    return palette[((index % n) + n) % n];
}

QColor referenceColor()
{
    return QColor(0x6b, 0x72, 0x80);
}

QColor candidateColor()
{
    return QColor(0x1f, 0x9d, 0x55);
}

QColor readsColor()
{
    return QColor(0x4e, 0x79, 0xa7);
}

QColor writesColor()
{
    return QColor(0xf2, 0x8e, 0x2b);
}

QColor measuredColor()
{
    return QColor(0x8e, 0x44, 0xad);
}

void centreText(QGraphicsSimpleTextItem* item, const QRectF& area)
{
    const QRectF r = item->boundingRect();
    item->setPos(area.center() - QPointF(r.width() / 2.0, r.height() / 2.0));
}

} // namespace kwb::app
