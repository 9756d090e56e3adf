// File > Open Recent (app/recentstores.h): newest first, each store once, at most eight, kept in
// the settings for the next start; a store whose file is gone stays listed but cannot be chosen.

#include "app/recentstores.h"

#include <QAction>
#include <QFile>
#include <QMenu>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using kwb::app::RecentStores;

class TestRecentStores : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    QString store(const QString& name) const
    {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.exists() && f.open(QIODevice::WriteOnly))
            f.close();
        return path;
    }

    static QStringList tooltips(const QMenu& menu)
    {
        QStringList paths;
        for (const QAction* a : menu.actions())
            paths << a->toolTip();
        return paths;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true); // settings out of the home
        QVERIFY(m_dir.isValid());
    }

    void init() { QSettings().clear(); }

    void emptyMenuIsDisabled()
    {
        QMenu menu;
        RecentStores recent(&menu);
        QVERIFY(RecentStores::paths().isEmpty());
        QVERIFY(menu.actions().isEmpty());
        QVERIFY(!menu.isEnabled());
        recent.add(store(QStringLiteral("a.db")));
        QVERIFY(menu.isEnabled());
    }

    void newestFirstEachOnce()
    {
        QMenu menu;
        RecentStores recent(&menu);
        const QString a = store(QStringLiteral("a.db")), b = store(QStringLiteral("b.db")),
                      c = store(QStringLiteral("c.db"));
        recent.add(a);
        recent.add(b);
        recent.add(c);
        QCOMPARE(RecentStores::paths(), (QStringList{c, b, a}));
        recent.add(a); // opened again: to the front, not listed twice
        QCOMPARE(RecentStores::paths(), (QStringList{a, c, b}));
        // The menu names each file, its path in the tooltip, in the same order.
        QCOMPARE(tooltips(menu), (QStringList{a, c, b}));
        QCOMPARE(menu.actions().first()->text(), QStringLiteral("a.db"));
    }

    void keepsTheNewestEight()
    {
        QMenu menu;
        RecentStores recent(&menu);
        QStringList added;
        for (int i = 0; i < 10; ++i) {
            added.prepend(store(QStringLiteral("s%1.db").arg(i)));
            recent.add(added.first());
        }
        QCOMPARE(RecentStores::kMaxCount, 8);
        QCOMPARE(RecentStores::paths(), added.mid(0, 8)); // s9 … s2: s1 and s0 forgotten
        QCOMPARE(menu.actions().size(), 8);
    }

    void missingFileStaysListedDisabled()
    {
        QMenu menu;
        RecentStores recent(&menu);
        const QString kept = store(QStringLiteral("kept.db")), gone = store(QStringLiteral("gone.db"));
        recent.add(kept);
        recent.add(gone);
        QVERIFY(QFile::remove(gone));
        RecentStores later(&menu); // lists again, as at the next start
        QCOMPARE(tooltips(menu), (QStringList{gone, kept}));
        QVERIFY(!menu.actions().at(0)->isEnabled());
        QVERIFY(menu.actions().at(1)->isEnabled());
        QCOMPARE(RecentStores::paths(), (QStringList{gone, kept}));
    }

    void choosingAStoreAsksToOpenIt()
    {
        const QString a = store(QStringLiteral("a.db")), b = store(QStringLiteral("b.db"));
        {
            QMenu menu;
            RecentStores recent(&menu);
            recent.add(a);
            recent.add(b);
        }
        // Another window, another start: the list comes from the settings.
        QMenu menu;
        RecentStores recent(&menu);
        QSignalSpy open(&recent, &RecentStores::openRequested);
        QCOMPARE(menu.actions().size(), 2);
        menu.actions().at(1)->trigger();
        QCOMPARE(open.count(), 1);
        QCOMPARE(open.first().at(0).toString(), a);
    }
};

QTEST_MAIN(TestRecentStores)
#include "tst_recentstores.moc"
