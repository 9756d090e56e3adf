#pragma once
// Exporting a chart to PNG (at twice its on-screen size) or SVG (vector), chosen by the file's
// suffix, and the "Export as PNG…/SVG…" actions every chart widget carries in its context menu.

#include <QList>
#include <QSize>
#include <QString>

class QAction;
class QPainter;
class QRectF;
class QWidget;

namespace kwb::app {

/// A chart widget whose exported picture is not simply its on-screen look: a chart inside a
/// scroll area exports its whole canvas; a chart with controls (a combo) exports the chart only.
class ExportableChart
{
public:
    virtual ~ExportableChart() = default;
    /// The picture's size in device-independent pixels.
    virtual QSize exportSize() const = 0;
    /// Paints the picture into `target` (exportSize() at the painter's scale).
    virtual void renderExport(QPainter* painter, const QRectF& target) = 0;
};

/// Writes `chartOrView` to `path`: ".png" (2× resolution, 1× past 8192 pixels, white background)
/// or ".svg". An
/// ExportableChart renders itself; a QGraphicsView (a QChartView) renders its scene as vectors;
/// any other widget renders as it paints. Returns false with a message in *error (when given)
/// for an unknown suffix, an empty widget or a file that cannot be written.
bool exportChart(QWidget* chartOrView, const QString& path, QString* error = nullptr);

/// Adds "Export as PNG…" and "Export as SVG…" to `chart` (objectNames "exportPng", "exportSvg")
/// and shows them in its context menu and in the context menus of `alsoOn` (the chart's inner
/// views, which would otherwise take the right-click). Each asks for a file name and calls
/// exportChart(chart, …), reporting a failure in a message box. Returns the two actions.
QList<QAction*> addExportActions(QWidget* chart, const QList<QWidget*>& alsoOn = {});

} // namespace kwb::app
