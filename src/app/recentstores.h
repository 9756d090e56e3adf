#pragma once
// File > Open Recent: the run stores opened last, newest first, each once and at most kMaxCount,
// kept in the settings ("recentDatabases") so the next start lists them too.

#include <QObject>
#include <QStringList>

class QMenu;

namespace kwb::app {

class RecentStores : public QObject
{
    Q_OBJECT
public:
    static constexpr int kMaxCount = 8;

    /// Lists the remembered stores in `menu` now and after each add().
    explicit RecentStores(QMenu* menu, QObject* parent = nullptr);

    /// The remembered stores, newest first.
    static QStringList paths();
    /// Remembers `path` (as given: the window passes absolute paths) as the newest, moved to the
    /// front where it was listed already; the oldest beyond kMaxCount are forgotten.
    void add(const QString& path);

Q_SIGNALS:
    /// One of the menu's stores was chosen.
    void openRequested(const QString& path);

private:
    void updateMenu();

    QMenu* m_menu;
};

} // namespace kwb::app
