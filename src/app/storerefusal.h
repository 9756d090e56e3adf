#pragma once
// The dialog that says why a file did not open as a run database, in RunStore's words
// (StoreFile::summary(): another program's SQLite file, a damaged store, not SQLite), and offers
// what can be done instead (issue 38): make an empty file a run store, or make a new run store in
// another file. The window decides what those two do; this file only asks.

#include <QString>

#include <functional>

class QMessageBox;
class QWidget;

namespace kwb {
struct StoreFile;
} // namespace kwb

namespace kwb::app {

/// Shows the refusal of `path` (what RunStore::inspect() found in `file`; `error`: why a run store,
/// or a path where nothing is, did not open) with open() and returns it (deleted on close).
/// makeRunStore() runs for "Make It a Run Store" (an empty file that may be written), and
/// newRunStoreIn(folder) for "New Run Store Elsewhere…", each once the box has closed.
QMessageBox* showStoreRefusal(QWidget* parent, const QString& path, const StoreFile& file, const QString& error,
                              const std::function<void()>& makeRunStore,
                              const std::function<void(const QString& folder)>& newRunStoreIn);

} // namespace kwb::app
