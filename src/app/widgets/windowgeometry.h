#pragma once
// A top-level window kept on its screen: a restored or saved geometry never larger than the
// screen's available area, never off it. Why: the window once grew to 2,766 px on a 1,440 px
// screen, saved that, and reopened at it (issue 38).

#include <QRect>

class QWidget;

namespace kwb::app {

/// `rect` made no larger than `available` and moved, as little as possible, inside it.
QRect fitRect(const QRect& rect, const QRect& available);

/// Resizes and moves `window` (a top-level widget) so that its frame lies inside the available
/// area of the screen it is on (the primary screen where it is on none). Maximized and
/// full-screen windows are left to the window system. Returns whether anything changed.
bool keepOnScreen(QWidget* window);

} // namespace kwb::app
