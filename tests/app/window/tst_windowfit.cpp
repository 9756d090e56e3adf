// The window on a 1280×720 screen (the offscreen platform given one screen of that size,
// screen-1280x720.json), under a long HOME, with a run database at a 120-character path and a
// 500-character error on the Monitor (issue 38: a failed launch's error made the window 2,766 px
// wide and that width was saved; a bold 73-character path pushed Results' buttons off the window).
// On every page: the window, its minimum size and every visible widget stay on the screen. And a
// geometry saved or restored larger than the screen is brought back onto it.

#include "app/mainwindow.h"
#include "app/runs/resultspage.h"
#include "app/runs/runmonitorpage.h"
#include "app/runs/runsession.h"
#include "app/widgets/elidedlabel.h"
#include "app/widgets/windowgeometry.h"
#include "core/run/runlaunch.h"
#include "core/tasks/taskcatalog.h"
#include "windowfixture.h"

#include <QAbstractScrollArea>
#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QScreen>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;
using namespace kwb::app;

namespace {

/// A folder of `length` characters or more under `base`, made of readable words.
QString longFolder(const QString& base, int length)
{
    QString path = base;
    for (int i = 0; path.size() < length; ++i)
        path += QStringLiteral("/a-rather-long-folder-name-%1").arg(i);
    return path;
}

/// Widgets inside a scroll area's viewport may lie beyond it: the scroll area is what must fit.
bool insideScrolledViewport(const QWidget* w)
{
    for (const QWidget* p = w->parentWidget(); p; p = p->parentWidget())
        if (auto* area = qobject_cast<const QAbstractScrollArea*>(p); area && area->viewport()->isAncestorOf(w))
            return true;
    return false;
}

} // namespace

class TestWindowFit : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_db;

    static QRect screenRect() { return QGuiApplication::primaryScreen()->availableGeometry(); }

    /// Every visible widget of `window` within the screen, and the window's sizes within it.
    static void checkFits(MainWindow& window, const QString& where)
    {
        const QRect screen = screenRect();
        QVERIFY2(window.width() <= screen.width() && window.height() <= screen.height(),
                 qPrintable(QStringLiteral("%1: window %2×%3").arg(where).arg(window.width()).arg(window.height())));
        const QSize minimum = window.minimumSizeHint().expandedTo(window.minimumSize());
        QVERIFY2(minimum.width() <= screen.width() && minimum.height() <= screen.height(),
                 qPrintable(QStringLiteral("%1: minimum %2×%3").arg(where).arg(minimum.width()).arg(minimum.height())));
        QVERIFY2(screen.contains(window.frameGeometry()), qPrintable(where));
        for (QWidget* w : window.findChildren<QWidget*>()) {
            if (!w->isVisibleTo(&window) || w->isWindow() || insideScrolledViewport(w))
                continue;
            const QRect global(w->mapToGlobal(QPoint(0, 0)), w->size());
            QVERIFY2(screen.contains(global),
                     qPrintable(QStringLiteral("%1: %2 \"%3\" at %4,%5 %6×%7 (minimum width %8)")
                                    .arg(where, QString::fromLatin1(w->metaObject()->className()), w->objectName())
                                    .arg(global.x())
                                    .arg(global.y())
                                    .arg(global.width())
                                    .arg(global.height())
                                    .arg(w->minimumSizeHint().width())));
        }
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCOMPARE(screenRect().size(), QSize(1280, 720));
        QVERIFY(QDir::homePath().size() >= 100); // main() set a long HOME
        qputenv("KWB_REPLAY_TASKS", KWB_TASKS_TEST_DATA "/tasks.json");
        qputenv("KWB_REPLAY_ANALYSES", KWB_TASKS_TEST_DATA "/analyze.json");
        qputenv("KWB_WORKER_ENV", "KWB_REPLAY_TASKS,KWB_REPLAY_ANALYSES");
        qputenv("KWB_SANDBOX_READ_ONLY", KWB_TASKS_TEST_DATA);
        QSettings().clear();
        // A database at a path of exactly 120 characters, most of it the file's name (the status
        // bar shows the name).
        const QString name = QStringLiteral("/the-study-runs-agent-against-zero-shot-on-the-h200-every-ablation.db");
        QString folder = m_dir.path() + QStringLiteral("/");
        folder += QString(120 - name.size() - folder.size(), QLatin1Char('d'));
        QVERIFY(QDir().mkpath(folder));
        m_db = folder + name;
        QCOMPARE(m_db.size(), 120);
        RunStore store;
        QVERIFY(store.open(m_db));
        kwb::test::writeWindowFixture(store);
    }

    void everyPageFitsTheScreen()
    {
        MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
        window.resize(1280, 720);
        window.move(0, 0);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QTRY_VERIFY_WITH_TIMEOUT(window.catalog()->state() == TaskCatalog::State::Ready, 60000);
        QString error;
        QVERIFY2(window.openDatabase(m_db, &error), qPrintable(error));
        auto* results = qobject_cast<ResultsPage*>(window.page(QStringLiteral("results")));
        QTRY_VERIFY_WITH_TIMEOUT(results->report().has_value() && !results->isBuilding(), 60000);

        // A launch that fails with a 500-character error, followed by the Monitor.
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1")};
        request.regime = QStringLiteral("zero-shot");
        request.model = QStringLiteral("m");
        request.promptsDir = defaultPromptsDir();
        const std::optional<RunPlan> plan = planRun(request, &error);
        QVERIFY2(plan, qPrintable(error));
        RunSessionEnvironment environment;
        environment.databasePath =
            longFolder(m_dir.filePath(QStringLiteral("missing")), 500) + QStringLiteral("/runs.db");
        environment.workerProgram = QStringLiteral(KWB_REPLAYWORKER);
        RunSession session(*plan, environment);
        auto* monitor = qobject_cast<RunMonitorPage*>(window.page(QStringLiteral("monitor")));
        monitor->setSession(&session);
        session.start();
        QTRY_COMPARE_WITH_TIMEOUT(session.state(), RunSession::State::Failed, 20000);
        QVERIFY2(session.errorString().size() >= 500, qPrintable(session.errorString()));
        auto* state = monitor->findChild<ElidedLabel*>(QStringLiteral("runStateLabel"));
        QVERIFY(state);
        QVERIFY(state->text().contains(session.errorString()));

        const QStringList pages = QStringList{QStringLiteral("welcome")} + window.pageNames();
        for (const QString& name : pages) {
            window.showPage(name);
            QTest::qWait(50);
            QCoreApplication::processEvents();
            checkFits(window, name);
            // Kept beside the test program, to look at (windowfit-<page>.png).
            window.grab().save(QStringLiteral(KWB_WINDOW_TEST_OUTPUT "/windowfit-%1.png").arg(name));
            if (QTest::currentTestFailed())
                return;
        }
        // What was cut is in the tooltips.
        QVERIFY(state->isElided());
        QVERIFY(state->effectiveToolTip().contains(session.errorString()));
        auto* database = results->findChild<ElidedLabel*>(QStringLiteral("databaseLabel"));
        QVERIFY(database);
        QVERIFY(database->text().contains(QDir::toNativeSeparators(m_db)));
        QVERIFY(database->effectiveToolTip().contains(QDir::toNativeSeparators(m_db)));
        monitor->setSession(nullptr);
    }

    void geometryStaysOnTheScreen()
    {
        const QRect screen = screenRect();
        QByteArray saved;
        {
            // A window made wider and taller than the screen is saved no larger than the screen.
            MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            window.setGeometry(QRect(-300, 100, 2766, 1100));
            QVERIFY(window.close());
            saved = QSettings().value(QStringLiteral("window/geometry")).toByteArray();
        }
        QVERIFY(!saved.isEmpty());
        QWidget probe;
        QVERIFY(probe.restoreGeometry(saved));
        QVERIFY2(probe.width() <= screen.width() && probe.height() <= screen.height(),
                 qPrintable(QStringLiteral("saved %1×%2").arg(probe.width()).arg(probe.height())));

        // A geometry saved elsewhere (a larger screen) is restored onto this one.
        QWidget big;
        big.setGeometry(QRect(200, 50, 2766, 1400));
        QSettings().setValue(QStringLiteral("window/geometry"), big.saveGeometry());
        MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
        QVERIFY2(screen.contains(window.frameGeometry()), qPrintable(QStringLiteral("restored at %1,%2 %3×%4")
                                                                         .arg(window.x())
                                                                         .arg(window.y())
                                                                         .arg(window.width())
                                                                         .arg(window.height())));
    }

    void fitRectKeepsInside_data()
    {
        QTest::addColumn<QRect>("rect");
        QTest::addColumn<QRect>("expected");
        const QRect available(0, 0, 1280, 720);
        QTest::newRow("inside") << QRect(10, 10, 800, 600) << QRect(10, 10, 800, 600);
        QTest::newRow("too wide") << QRect(0, 0, 2766, 600) << QRect(0, 0, 1280, 600);
        QTest::newRow("off the right") << QRect(1000, 100, 800, 600) << QRect(480, 100, 800, 600);
        QTest::newRow("off the top left") << QRect(-50, -20, 800, 600) << QRect(0, 0, 800, 600);
        QTest::newRow("too tall, below") << QRect(100, 500, 800, 1000) << QRect(100, 0, 800, 720);
    }

    void fitRectKeepsInside()
    {
        QFETCH(QRect, rect);
        QFETCH(QRect, expected);
        QCOMPARE(fitRect(rect, QRect(0, 0, 1280, 720)), expected);
    }
};

int main(int argc, char** argv)
{
    // One screen of 1280×720, and a long HOME (the settings, the launch database and the example
    // study live under it), before the application reads either.
    qputenv("QT_QPA_PLATFORM", "offscreen:configfile=" KWB_WINDOW_TEST_SOURCE "/screen-1280x720.json");
    QTemporaryDir home;
    const QString longHome = longFolder(home.path(), 110);
    QDir().mkpath(longHome);
    qputenv("HOME", QFile::encodeName(longHome));
    QApplication app(argc, argv);
    TestWindowFit test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_windowfit.moc"
