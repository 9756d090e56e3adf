#pragma once
// Renders a page as the lead's screenshot mode does (show, then QWidget::grab() at a fixed size),
// saves the PNG next to the test program and checks that it is not one flat colour.

#include <QCoreApplication>
#include <QDir>
#include <QImage>
#include <QPixmap>
#include <QSet>
#include <QTest>
#include <QWidget>

namespace kwb::test {

/// Distinct colours in the image, sampled on a grid (a blank or one-colour grab has one or two).
inline int distinctColours(const QImage& image)
{
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3)
            colours.insert(image.pixel(x, y));
    return int(colours.size());
}

/// Shows the widget at 1280×800, grabs it and writes `name`.png beside the test program.
/// Returns the image (null when saving failed).
inline QImage grabPage(QWidget* widget, const QString& name, QSize size = QSize(1280, 800))
{
    widget->resize(size);
    widget->show();
    QTest::qWait(100); // let layouts and the first paint settle
    const QImage image = widget->grab().toImage();
    const QString path = QDir(QCoreApplication::applicationDirPath()).filePath(name + QStringLiteral(".png"));
    return image.save(path) ? image : QImage();
}

} // namespace kwb::test
