#include "textformat.h"

#include <QJsonArray>

#include <cmath>

namespace kwb::cli {

QString siValue(double value, const QString& unit, int digits)
{
    if (std::isnan(value))
        return QStringLiteral("-");
    static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
    int index = 0;
    double scaled = value;
    while (std::fabs(scaled) >= 1000.0 && index < 6) {
        scaled /= 1000.0;
        ++index;
    }
    if (index == 0 && scaled == std::floor(scaled))
        return QString::number(qint64(scaled)) + QLatin1Char(' ') + unit;
    // Fixed decimals rather than %g, so 1.2e+02 never shows up in a table.
    const int integerDigits = std::fabs(scaled) < 1.0 ? 1 : int(std::floor(std::log10(std::fabs(scaled)))) + 1;
    const int decimals = std::max(0, digits - integerDigits);
    return QString::number(scaled, 'f', decimals) + QLatin1Char(' ') + QLatin1String(prefixes[index]) + unit;
}

QString milliseconds(double ms)
{
    if (std::isnan(ms))
        return QStringLiteral("-");
    if (ms < 0.1)
        return QString::number(ms * 1000.0, 'f', 2) + QStringLiteral(" µs");
    if (ms >= 10000.0)
        return QString::number(ms / 1000.0, 'f', 2) + QStringLiteral(" s");
    return QString::number(ms, 'f', ms < 10.0 ? 3 : 1) + QStringLiteral(" ms");
}

QString shape(const QJsonValue& value)
{
    if (!value.isArray())
        return value.isDouble() ? QString::number(value.toDouble()) : QStringLiteral("-");
    QStringList dims;
    for (const QJsonValue& dim : value.toArray())
        dims << (dim.isArray() ? QLatin1Char('(') + shape(dim) + QLatin1Char(')') : QString::number(dim.toDouble()));
    return dims.isEmpty() ? QStringLiteral("scalar") : dims.join(QStringLiteral("×"));
}

QString numberOrDash(const QJsonValue& value, int digits)
{
    if (!value.isDouble())
        return QStringLiteral("-");
    return QString::number(value.toDouble(), 'g', digits);
}

TextTable::TextTable(QStringList header)
    : m_header(std::move(header))
{}

void TextTable::setRightAligned(int column, bool right)
{
    while (m_right.size() <= column)
        m_right.append(false);
    m_right[column] = right;
}

void TextTable::addRow(QStringList cells)
{
    m_rows.append(std::move(cells));
}

QString TextTable::render(int indent) const
{
    QList<QStringList> lines;
    if (!m_header.isEmpty())
        lines.append(m_header);
    lines += m_rows;
    QList<qsizetype> widths;
    for (const QStringList& line : lines) {
        for (qsizetype column = 0; column < line.size(); ++column) {
            if (widths.size() <= column)
                widths.append(0);
            widths[column] = std::max(widths[column], line.at(column).size());
        }
    }
    QString text;
    for (const QStringList& line : lines) {
        QString row(indent, QLatin1Char(' '));
        for (qsizetype column = 0; column < line.size(); ++column) {
            const bool right = column < m_right.size() && m_right.at(column);
            const bool last = column == line.size() - 1;
            if (column > 0)
                row += QStringLiteral("  ");
            if (right)
                row += line.at(column).rightJustified(widths.at(column));
            else
                row += last ? line.at(column) : line.at(column).leftJustified(widths.at(column));
        }
        text += row + QLatin1Char('\n');
    }
    return text;
}

void KeyValueList::add(const QString& key, const QString& value)
{
    m_items.append({key, value});
}

QString KeyValueList::render() const
{
    qsizetype width = 0;
    for (const auto& item : m_items)
        width = std::max(width, item.first.size());
    QString text;
    for (const auto& item : m_items)
        text += item.first.leftJustified(width + 2) + item.second + QLatin1Char('\n');
    return text;
}

} // namespace kwb::cli
