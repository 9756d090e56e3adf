#pragma once
// Number formats and small drawing helpers the charts share: bytes, rates and times as people
// read them (decimal units, three significant digits, as bandwidth is quoted in GB/s).

#include <QColor>
#include <QList>
#include <QString>

class QGraphicsSimpleTextItem;
class QRectF;

namespace kwb::app {

/// 201326592 -> "201 MB", 5739414528 -> "5.74 GB"; decimal units (1 GB = 1e9 bytes).
QString humanBytes(double bytes);
/// GFLOP/s -> "32.7 TFLOP/s" / "815 GFLOP/s".
QString humanGflops(double gflops);
/// GB/s -> "4.27 TB/s" / "900 GB/s".
QString humanBandwidth(double gbps);
/// FLOP/byte -> "52.3 FLOP/B" (three significant digits, no exponent for 0.001–99999).
QString intensityText(double flopPerByte);
/// nanoseconds -> "7.89 ms" / "489 µs" / "812 ns".
QString humanTime(double ns);
/// A count of FLOPs -> "300 GFLOP".
QString humanFlops(double flops);
/// A shape [128, 64, 3, 3] as "128×64×3×3"; a 0-d tensor as "scalar".
QString shapeText(const QList<qint64>& shape);

/// The colours the charts use, so a level or a role looks the same on every chart.
QColor seriesColor(int index);
QColor referenceColor();
QColor candidateColor();
QColor readsColor();
QColor writesColor();
QColor measuredColor();

/// Centres a chart's empty-state text in a rectangle (the plot area), wrapping nothing: the text
/// is short and carries its own line breaks.
void centreText(QGraphicsSimpleTextItem* item, const QRectF& area);

} // namespace kwb::app
