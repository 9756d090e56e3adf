// Help in the window (issue 38 item 6): the welcome page can be reached again (Help > Welcome), F1
// opens the help of the page in view, and About lists the versions a result depends on, from the
// worker's hello (the H200's recorded hello for every row, the replay worker's in the window).

#include "app/aboutdialog.h"
#include "app/analysispages.h"
#include "app/mainwindow.h"
#include "app/pagehelp.h"
#include "core/config/buildinfo.h"
#include "core/protocol/protocolcodec.h"
#include "core/tasks/taskcatalog.h"

#include <QAction>
#include <QFile>
#include <QJsonDocument>
#include <QMessageBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

using namespace kwb;
using namespace kwb::app;

class TestWindowHelp : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        qputenv("KWB_REPLAY_TASKS", KWB_TASKS_TEST_DATA "/tasks.json");
        qputenv("KWB_REPLAY_ANALYSES", KWB_TASKS_TEST_DATA "/analyze.json");
        qputenv("KWB_WORKER_ENV", "KWB_REPLAY_TASKS,KWB_REPLAY_ANALYSES");
        qputenv("KWB_SANDBOX_READ_ONLY", KWB_TASKS_TEST_DATA);
    }

    void versionsFromTheHello()
    {
        QFile f(QStringLiteral(KWB_PROTOCOL_RECORDED "/hello.h200.response.json"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const HelloInfo hello = decodeHello(QJsonDocument::fromJson(f.readAll()).object());
        QVERIFY(!hello.torch.isEmpty() && !hello.cudaRuntime.isEmpty() && !hello.driver.isEmpty());
        QFile d(QStringLiteral(KWB_CHARTS_TEST_DATA "/device_h200.json"));
        QVERIFY(d.open(QIODevice::ReadOnly));
        const DeviceFacts gpu = decodeDeviceFacts(QJsonDocument::fromJson(d.readAll()).object());
        QCOMPARE(gpu.driverVersion, QStringLiteral("13.0"));
        AboutDialog about(hello, gpu, QStringLiteral("/opt/kwb/bin/kwb-worker"));
        const QString text = about.versionsText();
        QVERIFY2(text.contains(QStringLiteral("Kernel Workbench: " KWB_VERSION)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Built from commit: ") + kwbCommit()), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Worker: ") + hello.worker), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Worker protocol: %1").arg(*hello.protocol)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("PyTorch: ") + hello.torch), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("CUDA runtime: ") + hello.cudaRuntime), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("NVRTC: ") + hello.nvrtc), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("CUDA driver: 13.0")),
                 qPrintable(text)); // the device's, not the hello's "ok"
        QVERIFY2(text.contains(QStringLiteral("GPU: NVIDIA H200")), qPrintable(text));
        // Without a hello, no version is guessed.
        const QString none = AboutDialog(std::nullopt, std::nullopt, QString()).versionsText();
        QVERIFY2(none.contains(QStringLiteral("PyTorch: unknown: no worker found")), qPrintable(none));
    }

    void trafficOpensOnAFusionTask()
    {
        // Issue 38 item 5: L1/1 (a matmul alone) drew three equal bars; L2/1 (conv, ReLU, bias) shows fusion.
        MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
        window.show();
        QTRY_VERIFY_WITH_TIMEOUT(window.catalog()->state() == TaskCatalog::State::Ready, 60000);
        QTest::qWait(100);
        auto* traffic = qobject_cast<TrafficPage*>(window.page(QStringLiteral("traffic")));
        QVERIFY(traffic);
        QCOMPARE(traffic->currentTask(), QStringLiteral("L2/1"));
    }

    // F1 keeps up with the pages: every tab a page has is named in its help (a tab whose title
    // carries a count, "Prompts sent: 3 changes", by the words before the colon).
    void helpNamesEveryTab()
    {
        MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
        window.show();
        QTRY_VERIFY_WITH_TIMEOUT(window.catalog()->state() == TaskCatalog::State::Ready, 60000);
        int tabs = 0;
        for (const QString& name : window.pageNames()) {
            const QString help = pageHelpText(name);
            for (const QTabWidget* widget : window.page(name)->findChildren<QTabWidget*>()) {
                for (int i = 0; i < widget->count(); ++i) {
                    const QString tab = widget->tabText(i).remove(QLatin1Char('&')).section(QLatin1Char(':'), 0, 0);
                    QVERIFY2(help.contains(tab, Qt::CaseInsensitive),
                             qPrintable(QStringLiteral("%1: tab \"%2\" not in its help").arg(name, tab)));
                    ++tabs;
                }
            }
        }
        QVERIFY2(tabs >= 15, qPrintable(QString::number(tabs))); // Tasks 3, Monitor 4, Results 6, Diff 2
        // What last round added, by name.
        QVERIFY(pageHelpText(QStringLiteral("results")).contains(QStringLiteral("Per task")));
        QVERIFY(pageHelpText(QStringLiteral("results")).contains(QStringLiteral("answered by")));
        QVERIFY(pageHelpText(QStringLiteral("tasks")).contains(QStringLiteral("bound")));
        QVERIFY(pageHelpText(QStringLiteral("monitor")).contains(QStringLiteral("Prompts sent")));
        QVERIFY(pageHelpText(QStringLiteral("diff")).contains(QStringLiteral("Prompts sent")));
        QVERIFY(pageHelpText(QStringLiteral("roofline")).contains(QStringLiteral("roofline bound")));
    }

    void helpMenuF1AndAbout()
    {
        MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
        window.resize(1280, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&window));

        // Help > Welcome, from any page.
        window.showPage(QStringLiteral("results"));
        QVERIFY(!window.isWelcomeShown());
        auto* welcome = window.findChild<QAction*>(QStringLiteral("welcomeAction"));
        QVERIFY(welcome);
        welcome->trigger();
        QVERIFY(window.isWelcomeShown());

        // F1: the help of the page in view, for every page.
        auto* help = window.findChild<QAction*>(QStringLiteral("pageHelpAction"));
        QVERIFY(help);
        QCOMPARE(help->shortcut(), QKeySequence(Qt::Key_F1));
        for (const QString& page : QStringList{QStringLiteral("welcome")} + window.pageNames()) {
            window.showPage(page);
            QVERIFY2(!pageHelpText(page).isEmpty(), qPrintable(page));
            help->trigger(); // what F1 does (the offscreen platform delivers no shortcuts)
            QMessageBox* box = nullptr;
            QTRY_VERIFY((box = window.findChild<QMessageBox*>(QStringLiteral("pageHelp"))) && box->isVisible());
            QCOMPARE(box->text(), pageHelpText(page));
            box->close();
            QTRY_VERIFY(!window.findChild<QMessageBox*>(QStringLiteral("pageHelp")));
        }
        QVERIFY(pageHelpText(QStringLiteral("no such page")).isEmpty());

        // About, once the worker has said hello: its version and protocol.
        QTRY_VERIFY_WITH_TIMEOUT(window.workerStatus().contains(QStringLiteral("replay-0.1")), 30000);
        QDialog* about = window.showAbout();
        QVERIFY(about && about->isVisible());
        const QString text = qobject_cast<AboutDialog*>(about)->versionsText();
        QVERIFY2(text.contains(QStringLiteral("Worker: replay-0.1")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Worker protocol: 1")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("PyTorch: not reported by the worker")), qPrintable(text));
        about->close();
    }
};

QTEST_MAIN(TestWindowHelp)
#include "tst_windowhelp.moc"
