#pragma once
// What each page of the window shows and how to read it: the text F1 opens for the page in view.
// One place, so the Help menu and F1 say the same; the charts' own "How to read it" lines stay
// on their pages, next to what they describe.

#include <QString>

namespace kwb::app {

/// The help of a page by its name ("welcome", "tasks", … as MainWindow::pageNames()), rich text;
/// empty for a name that is no page.
QString pageHelpText(const QString& page);

} // namespace kwb::app
