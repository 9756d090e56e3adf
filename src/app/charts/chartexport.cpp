#include "app/charts/chartexport.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsView>
#include <QImage>
#include <QLayout>
#include <QMessageBox>
#include <QPainter>
#include <QResizeEvent>
#include <QStandardPaths>
#include <QSvgGenerator>
#include <QWidget>

#include <algorithm>

namespace kwb::app {

namespace {

/// A widget that was never shown (a page behind another tab) has pending resize events and
/// unactivated layouts: deliver them, so it renders at its size as if shown.
void layOutHidden(QWidget* w)
{
    if (QLayout* layout = w->layout())
        layout->activate();
    if (w->testAttribute(Qt::WA_PendingResizeEvent)) {
        QResizeEvent resize(w->size(), QSize());
        QCoreApplication::sendEvent(w, &resize);
        w->setAttribute(Qt::WA_PendingResizeEvent, false);
    }
    const QList<QWidget*> children = w->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly);
    for (QWidget* child : children) {
        if (!child->isWindow())
            layOutHidden(child);
    }
}

QSize pictureSize(QWidget* w)
{
    if (auto* e = dynamic_cast<ExportableChart*>(w))
        return e->exportSize();
    if (auto* view = qobject_cast<QGraphicsView*>(w))
        return view->viewport()->size();
    return w->size();
}

void renderInto(QWidget* w, QPainter* painter, const QSize& size)
{
    const QRectF target(QPointF(0, 0), QSizeF(size));
    if (auto* e = dynamic_cast<ExportableChart*>(w)) {
        e->renderExport(painter, target);
    } else if (auto* view = qobject_cast<QGraphicsView*>(w)) {
        // The scene as vectors (an SVG keeps lines and text), as the view shows it.
        view->render(painter, target, view->viewport()->rect());
    } else {
        w->render(painter, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
    }
}

QString suggestedName(QWidget* chart, const QString& suffix)
{
    QString base = chart->objectName();
    if (base.isEmpty())
        base = QStringLiteral("chart");
    base.replace(QLatin1Char('/'), QLatin1Char('_'));
    return base + QLatin1Char('.') + suffix;
}

QString& lastExportDir()
{
    static QString dir = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    return dir;
}

} // namespace

bool exportChart(QWidget* chartOrView, const QString& path, QString* error)
{
    auto fail = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    if (!chartOrView)
        return fail(QStringLiteral("nothing to export"));
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("svg"))
        return fail(QStringLiteral("cannot export to \"%1\": the file name must end in .png or .svg").arg(path));

    chartOrView->ensurePolished();
    if (!chartOrView->isVisible()) {
        layOutHidden(chartOrView);
        // Graphics layouts (a chart's plot area) are laid out on a posted request.
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    }
    const QSize size = pictureSize(chartOrView);
    if (size.isEmpty())
        return fail(QStringLiteral("the chart has no size yet (it has never been shown)"));

    if (suffix == QLatin1String("png")) {
        // Twice the on-screen size, unless that makes a picture too large to hold (a level-3 op
        // chain is thousands of pixels wide).
        const qreal scale = std::max(size.width(), size.height()) * 2 > 16384 ? 1.0 : 2.0;
        QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(scale);
        image.fill(Qt::white);
        {
            QPainter painter(&image);
            painter.setRenderHint(QPainter::Antialiasing);
            painter.setRenderHint(QPainter::TextAntialiasing);
            renderInto(chartOrView, &painter, size);
        }
        if (!image.save(path, "PNG"))
            return fail(QStringLiteral("could not write %1").arg(QDir::toNativeSeparators(path)));
        return true;
    }

    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return fail(QStringLiteral("could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString()));
    QSvgGenerator generator;
    generator.setOutputDevice(&file);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(chartOrView->objectName());
    generator.setDescription(QStringLiteral("Exported by Kernel Workbench"));
    {
        QPainter painter;
        if (!painter.begin(&generator))
            return fail(QStringLiteral("could not start the SVG writer for %1").arg(QDir::toNativeSeparators(path)));
        painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
        renderInto(chartOrView, &painter, size);
    }
    file.close();
    if (file.error() != QFileDevice::NoError)
        return fail(QStringLiteral("could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString()));
    return true;
}

QList<QAction*> addExportActions(QWidget* chart, const QList<QWidget*>& alsoOn)
{
    auto makeAction = [chart](const QString& text, const QString& suffix, const QString& filter) {
        auto* action = new QAction(text, chart);
        action->setObjectName(QStringLiteral("export") + suffix.at(0).toUpper() + suffix.mid(1));
        QObject::connect(action, &QAction::triggered, chart, [chart, suffix, filter] {
            const QString start = QDir(lastExportDir()).filePath(suggestedName(chart, suffix));
            QString path = QFileDialog::getSaveFileName(chart, QStringLiteral("Export chart"), start, filter);
            if (path.isEmpty())
                return;
            if (QFileInfo(path).suffix().isEmpty())
                path += QLatin1Char('.') + suffix;
            lastExportDir() = QFileInfo(path).absolutePath();
            QString error;
            if (!exportChart(chart, path, &error))
                QMessageBox::warning(chart, QStringLiteral("Export chart"), error);
        });
        return action;
    };
    const QList<QAction*> actions{
        makeAction(QStringLiteral("Export as PNG…"), QStringLiteral("png"), QStringLiteral("PNG image (*.png)")),
        makeAction(QStringLiteral("Export as SVG…"), QStringLiteral("svg"), QStringLiteral("SVG drawing (*.svg)"))};
    chart->addActions(actions);
    chart->setContextMenuPolicy(Qt::ActionsContextMenu);
    for (QWidget* w : alsoOn) {
        if (!w)
            continue;
        w->addActions(actions);
        w->setContextMenuPolicy(Qt::ActionsContextMenu);
    }
    return actions;
}

} // namespace kwb::app
