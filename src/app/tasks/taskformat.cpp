#include "app/tasks/taskformat.h"

#include <QStringList>

#include <cmath>

namespace kwb::app::taskformat {

namespace {

// Three significant digits at least, four from 100 up ("4.80 T", "52.35 G", "137.4 G").
QString mantissa(double v)
{
    return QString::number(v, 'f', std::abs(v) >= 100 ? 1 : 2);
}

QString groupDigits(const QString& digits)
{
    QString out;
    const qsizetype n = digits.size();
    for (qsizetype i = 0; i < n; ++i) {
        if (i > 0 && (n - i) % 3 == 0)
            out += QChar(0x2009); // thin space: unambiguous in every locale
        out += digits.at(i);
    }
    return out;
}

} // namespace

QString si(double value, const QString& unit)
{
    static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
    if (!std::isfinite(value))
        return QStringLiteral("–");
    double v = value;
    int k = 0;
    while (std::abs(v) >= 999.95 && k < 6) {
        v /= 1000.0;
        ++k;
    }
    if (k == 0 && v == std::floor(v))
        return QString::number(qint64(v)) + QLatin1Char(' ') + unit;
    return mantissa(v) + QLatin1Char(' ') + QLatin1String(prefixes[k]) + unit;
}

QString exact(double value, const QString& unit)
{
    if (!std::isfinite(value))
        return QStringLiteral("–");
    const QString digits = QString::number(std::llround(std::abs(value)));
    return (value < 0 ? QStringLiteral("-") : QString()) + groupDigits(digits) + QLatin1Char(' ') + unit;
}

QString intensity(double flopPerByte)
{
    if (!std::isfinite(flopPerByte))
        return QStringLiteral("–");
    const double a = std::abs(flopPerByte);
    if (a == 0)
        return QStringLiteral("0");
    if (a < 1)
        return QString::number(flopPerByte, 'g', 3);
    if (a < 10)
        return QString::number(flopPerByte, 'f', 2);
    return QString::number(flopPerByte, 'f', 1);
}

QString milliseconds(double ms)
{
    if (!std::isfinite(ms))
        return QStringLiteral("–");
    const double a = std::abs(ms);
    int decimals = 3;
    if (a >= 100)
        decimals = 0;
    else if (a >= 10)
        decimals = 1;
    else if (a >= 1)
        decimals = 2;
    QString text = QString::number(ms, 'f', decimals);
    if (decimals == 0)
        text = groupDigits(text);
    return text + QStringLiteral(" ms");
}

QString shape(const QList<qint64>& dims)
{
    if (dims.isEmpty())
        return QStringLiteral("scalar");
    QStringList parts;
    parts.reserve(dims.size());
    for (qint64 d : dims)
        parts << QString::number(d);
    return parts.join(QChar(0x00D7));
}

QString opChain(const QStringList& shortNames, int maxOps)
{
    const QString arrow = QStringLiteral(" \u2192 ");
    if (shortNames.size() <= maxOps)
        return shortNames.join(arrow);
    return shortNames.mid(0, maxOps).join(arrow) + QStringLiteral(" \u2026 (+%1)").arg(shortNames.size() - maxOps);
}

} // namespace kwb::app::taskformat
