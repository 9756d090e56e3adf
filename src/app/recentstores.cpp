#include "recentstores.h"

#include <QAction>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace kwb::app {

namespace {
const QString kSettingsKey = QStringLiteral("recentDatabases");
} // namespace

RecentStores::RecentStores(QMenu* menu, QObject* parent)
    : QObject(parent)
    , m_menu(menu)
{
    updateMenu();
}

QStringList RecentStores::paths()
{
    return QSettings().value(kSettingsKey).toStringList();
}

void RecentStores::add(const QString& path)
{
    QStringList recent = paths();
    recent.removeAll(path);
    recent.prepend(path);
    QSettings().setValue(kSettingsKey, QStringList(recent.mid(0, kMaxCount)));
    updateMenu();
}

void RecentStores::updateMenu()
{
    m_menu->clear();
    const QStringList recent = paths();
    for (const QString& path : recent) {
        QAction* a = m_menu->addAction(QFileInfo(path).fileName());
        a->setToolTip(path);
        // A store whose file is gone stays listed, disabled: a moved disk or an unmounted share
        // comes back, and the menu still says which file it was.
        a->setEnabled(QFileInfo::exists(path));
        connect(a, &QAction::triggered, this, [this, path] { Q_EMIT openRequested(path); });
    }
    m_menu->setEnabled(!recent.isEmpty());
}

} // namespace kwb::app
