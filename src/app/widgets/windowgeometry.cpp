#include "windowgeometry.h"

#include <QGuiApplication>
#include <QScreen>
#include <QWidget>

namespace kwb::app {

QRect fitRect(const QRect& rect, const QRect& available)
{
    if (!available.isValid())
        return rect;
    QRect r(rect.topLeft(), rect.size().boundedTo(available.size()));
    if (r.right() > available.right())
        r.moveRight(available.right());
    if (r.bottom() > available.bottom())
        r.moveBottom(available.bottom());
    if (r.left() < available.left())
        r.moveLeft(available.left());
    if (r.top() < available.top())
        r.moveTop(available.top());
    return r;
}

bool keepOnScreen(QWidget* window)
{
    if (!window || window->isMaximized() || window->isFullScreen())
        return false;
    const QRect frame = window->frameGeometry();
    QScreen* screen = QGuiApplication::screenAt(frame.center());
    if (!screen)
        screen = window->screen() ? window->screen() : QGuiApplication::primaryScreen();
    if (!screen)
        return false;
    const QRect available = screen->availableGeometry();
    const QRect fitted = fitRect(frame, available);
    if (fitted == frame)
        return false;
    // The decorations stay as they are: the client area shrinks by what the frame must lose.
    const QSize decorations = frame.size() - window->geometry().size();
    window->resize(fitted.size() - decorations);
    window->move(fitted.topLeft());
    return true;
}

} // namespace kwb::app
