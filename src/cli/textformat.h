#pragma once
// Terminal output for kwb: aligned tables and numbers with SI prefixes (GFLOP, MB, ms), so that a
// row of FLOPs or bytes reads at a glance.

#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>

namespace kwb::cli {

/// 12.35 GFLOP, 201.3 MB, 4.8 TB/s: the value scaled by powers of 1000 with `digits`
/// significant digits; the bare unit below 1000. "-" for a missing (NaN) value.
QString siValue(double value, const QString& unit, int digits = 4);

/// A time given in milliseconds, as ms (or µs below 0.1 ms, s from 10 s up).
QString milliseconds(double ms);

/// A JSON shape ([128, 3, 32, 32]) as "128×3×32×32".
QString shape(const QJsonValue& value);

/// A number for a table: "-" where it is missing.
QString numberOrDash(const QJsonValue& value, int digits = 4);

/// Columns padded to their widest cell; numeric columns can be right-aligned.
class TextTable
{
public:
    explicit TextTable(QStringList header = {});
    void setRightAligned(int column, bool right = true);
    void addRow(QStringList cells);
    /// The table with two spaces between columns, each line ending in '\n'; `indent` spaces first.
    QString render(int indent = 0) const;

private:
    QStringList m_header;
    QList<QStringList> m_rows;
    QList<bool> m_right;
};

/// Label/value lines ("status     correct"), the labels padded to the widest one.
class KeyValueList
{
public:
    void add(const QString& key, const QString& value);
    QString render() const;

private:
    QList<QPair<QString, QString>> m_items;
};

} // namespace kwb::cli
