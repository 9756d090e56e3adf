#pragma once
// How the tasks page writes numbers: decimal SI prefixes (a GB is 10^9 bytes, as bandwidths are
// quoted), a precision that keeps three or four significant digits, and the exact value for
// tooltips.

#include <QList>
#include <QString>

namespace kwb::app::taskformat {

/// "137.4 GFLOP", "201.3 MB", "4.80 TB/s": value scaled by 10^(3k), unit appended.
QString si(double value, const QString& unit);
/// "1 577 616 384 bytes": every digit, grouped by thousands.
QString exact(double value, const QString& unit);
/// "682.7", "52.35", "0.125" (FLOP/B without the unit).
QString intensity(double flopPerByte);
/// "0.393 ms", "12.4 ms", "1 234 ms".
QString milliseconds(double ms);
/// "128×64×3×3"; "scalar" for an empty shape.
QString shape(const QList<qint64>& dims);
/// "conv2d → relu → add", at most maxOps names, then "… (+N)".
QString opChain(const QStringList& shortNames, int maxOps = 6);

} // namespace kwb::app::taskformat
