#pragma once
// The window's --screenshots mode: puts each page in a state worth a picture (a task with data, a
// template, a run, a pair of candidates) and writes DIR/<n>-<page>.png for the welcome page, the
// nine pages and the views the README shows besides. It drives the window through its public
// functions only, from the event loop: it waits for the catalog, the device probe and the results
// report (at most waitMs each), then shows and grabs one picture after another. Missing data is
// reported on stderr, not an error; each written file is printed on stdout.

#include <QObject>
#include <QSize>
#include <QString>

#include <functional>
#include <memory>

namespace kwb::app {

class MainWindow;

class ScreenshotTour : public QObject
{
    Q_OBJECT
public:
    ScreenshotTour(MainWindow* window, const QString& dir, int waitMs);

    /// Returns at once; ends in finished(), from the event loop.
    void start();

Q_SIGNALS:
    /// Every picture written (ok), or the one that could not be in error.
    void finished(bool ok, const QString& error);

private:
    struct Shot
    {
        QString file;
        std::function<void()> show;
        QSize windowSize; ///< the window's size for this picture; invalid: as it is
    };
    using Shots = std::shared_ptr<const QList<Shot>>;

    /// Calls then(true) once ready() holds, or then(false) after m_waitMs.
    void whenReady(std::function<bool()> ready, std::function<void(bool)> then);
    void stage();
    /// Shows shots[index], waits for its layout and paints, grabs it, then the next.
    void grab(Shots shots, int index);

    MainWindow* m_window;
    QString m_dir;
    int m_waitMs;
};

} // namespace kwb::app
