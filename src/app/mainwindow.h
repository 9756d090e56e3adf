#pragma once
// The workbench's main window: a sidebar of pages (tasks, prompts, launch, monitor, results,
// roofline, traffic, best-of-n, diff) over one stack, a worker for facts (device, tasks, analyze)
// and an open run database that every page reads. Nothing here waits on a worker, the network or
// a report: the pages and the catalog work through signals; store scans, reports and worker
// requests are JobTracker jobs, whose results are dropped once a newer job of their slot (another
// database, another measurement of a task) has started.

#include "core/protocol/devicefacts.h"
#include "core/protocol/workerresponses.h"

#include <QMainWindow>
#include <QStringList>

#include <optional>

class QDialog;
class QLabel;
class QListWidget;
class QMessageBox;
class QStackedWidget;

namespace kwb {
class JobTracker;
class TaskCatalog;
class WorkerSupervisor;
} // namespace kwb

namespace kwb::app {

enum class ExampleStudy; // workbenchdata.h

class BestOfNPage;
class ChartRefresher;
class DiffPage;
class LaunchPage;
class PromptEditorPage;
class RecentStores;
class ResultsPage;
class RooflinePage;
class RunManager;
class RunMonitorPage;
class TasksPage;
class TrafficPage;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    /// workerPath: from --worker; empty to use $KWB_WORKER or the worker next to the program.
    explicit MainWindow(const QString& workerPath = QString(), QWidget* parent = nullptr);
    ~MainWindow() override;

    /// The status bar's texts, for smoke tests and logs.
    QString workerStatus() const;
    QString deviceStatus() const;

    /// Opens a run database for every page; false with *error when it cannot be opened. A file
    /// that is not a run store is never written (RunStore decides what it is); a read-only file or
    /// folder opens read-only, which the status bar, the title and the Results page say.
    bool openDatabase(const QString& path, QString* error = nullptr);
    /// openDatabase(), and where the file is refused, a dialog (shown with open(), returned) that
    /// says what the file is and offers what can be done instead: make an empty file a run store,
    /// or a new run store elsewhere. nullptr when the file opened.
    QMessageBox* openDatabaseOrExplain(const QString& path);
    /// Makes a run store at `path` (where nothing is, or in an empty file: the user asked) and
    /// opens it; an existing run store is just opened, anything else refused as openDatabase does.
    bool createDatabase(const QString& path, QString* error = nullptr);
    QString database() const { return m_database; }
    /// The open database is read-only (its file or folder may not be written).
    bool isDatabaseReadOnly() const { return m_databaseReadOnly; }
    /// The banner over every page saying the open study's answers came from a fixture or recorded
    /// server (core/study/provenance.h's standInAnswersNote); empty when none did.
    QString provenanceBanner() const;
    /// The status bar's text for the open database ("Runs: study.db (read-only)") and its tooltip.
    QString databaseStatus() const;
    QString databaseStatusTip() const;
    /// A run launched into `database` exists (or ended): the Results page shows it: it opens that
    /// database when none is open, refreshes when it is the open one, else offers to open it.
    void showLaunchedRun(const QString& database, const QString& runLabel = QString());

    /// Unpacks a shipped example study into the user's data dir (once, in the background) and
    /// opens it. False with *error when there is no such example to open.
    bool openExampleStudy(ExampleStudy which, QString* error = nullptr);
    /// The welcome page: shown on the first start (no page and no database remembered).
    void showWelcome();
    bool isWelcomeShown() const;

    /// Help > About: the versions of kwb, the worker, torch, CUDA and the driver (AboutDialog).
    QDialog* showAbout();
    /// F1: what the page in view shows and how to read it (pagehelp.h), in a dialog.
    QMessageBox* showPageHelp();

    /// The pages' names ("tasks", "prompts", …), in sidebar order.
    QStringList pageNames() const;
    QWidget* page(const QString& name) const;
    void showPage(const QString& name);
    QString currentPage() const;

    /// Writes DIR/<n>-<page>.png for every page (ScreenshotTour). Returns at once: it waits, from
    /// the event loop, for the catalog, the device probe and the results report (at most `waitMs`
    /// each), then ends in screenshotsFinished(). Missing data is reported on stderr, not an error.
    void writeScreenshots(const QString& dir, int waitMs);
    /// The device probe has ended (deviceProbeFinished() was or is about to be emitted).
    bool isDeviceProbeDone() const { return m_deviceDone; }

    TaskCatalog* catalog() const { return m_catalog; }
    /// The window's background jobs (slots ChartRefresher::jobSlot(), "device", "profile/<task>").
    JobTracker* jobs() const { return m_jobs; }

Q_SIGNALS:
    /// The device probe has ended, with an answer or a failure.
    void deviceProbeFinished();
    /// The data the charts draw was recomputed (after the catalog or the database changed).
    void chartDataUpdated();
    /// writeScreenshots() has ended: ok, or the picture that could not be written in error.
    void screenshotsFinished(bool ok, const QString& error);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildPages();
    void addPage(const QString& name, const QString& title, const QString& icon, QWidget* page);
    void setupMenus();
    void startWorker(const QString& workerPath);
    void onDevice(const DeviceFacts& device);
    void measureTraffic(const QString& task);
    void onCatalogState();
    void chooseDatabase();
    /// A save dialog for a new run store, starting in `folder`, then createDatabase().
    void chooseNewDatabase(const QString& folder = QString());
    void exportCurrentChart();
    void setWorkerStatus(const QString& text, const QString& tooltip = QString());
    void setDeviceStatus(const QString& text, const QString& tooltip = QString());
    void restoreSettings();
    QWidget* buildWelcome();
    QWidget* currentChartWidget() const;

    JobTracker* m_jobs = nullptr;
    WorkerSupervisor* m_supervisor = nullptr;
    TaskCatalog* m_catalog = nullptr;
    RunManager* m_runs = nullptr;
    ChartRefresher* m_charts = nullptr; ///< this machine's GPU, the open database's and its times
    RecentStores* m_recent = nullptr;
    std::optional<HelloInfo> m_hello; ///< the worker's hello, once it has started
    bool m_deviceDone = false;
    QString m_database;
    bool m_databaseReadOnly = false;
    QString m_workerProgram;

    QListWidget* m_sidebar = nullptr;
    QStackedWidget* m_stack = nullptr;
    QStringList m_pageNames;
    QLabel* m_workerLabel = nullptr;
    QLabel* m_deviceLabel = nullptr;
    QLabel* m_databaseLabel = nullptr;
    QLabel* m_provenanceBanner = nullptr; ///< standInAnswersNote of the open study; hidden when empty
    QWidget* m_welcome = nullptr;
    QLabel* m_welcomeStatus = nullptr;

    TasksPage* m_tasksPage = nullptr;
    PromptEditorPage* m_promptsPage = nullptr;
    LaunchPage* m_launchPage = nullptr;
    RunMonitorPage* m_monitorPage = nullptr;
    ResultsPage* m_resultsPage = nullptr;
    RooflinePage* m_rooflinePage = nullptr;
    TrafficPage* m_trafficPage = nullptr;
    BestOfNPage* m_bestOfNPage = nullptr;
    DiffPage* m_diffPage = nullptr;
};

} // namespace kwb::app
