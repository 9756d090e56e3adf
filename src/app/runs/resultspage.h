#pragma once
// The results page: the runs of a run database, checkable, and for the checked ones the study's
// tables built with core's buildReport(): Table I (per run correct %, fast_1 %, compiled % with
// 95 % intervals, geometric-mean speedup, tokens, model time) beside Table II (solved and
// correct % per level); below them the paired comparisons with the sign-test p and the noise
// caveat, the routing estimate, and the ablation table. Export writes core's CSV, JSON or
// Markdown of the same report.
//
// The report (SQL and bootstrap resamples) is built by a JobTracker job with its own connection
// to the database, so a large database never stalls the window; a report superseded by newer
// check marks or another database is dropped.

#include "core/study/report.h"

#include <QList>
#include <QString>
#include <QWidget>

#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class QStandardItemModel;
class QTableView;
class QTabWidget;
namespace kwb {
class JobTracker;
class RunStore;
} // namespace kwb

namespace kwb::app {

class RunListModel;
struct TextTable;

class ResultsPage : public QWidget
{
    Q_OBJECT
public:
    enum class ExportFormat { Csv, Json, Markdown };

    explicit ResultsPage(QWidget* parent = nullptr);
    ~ResultsPage() override;

    /// Opens a run database (empty: none) and checks all its runs. False, with the reason on the
    /// page and in *error, when it cannot be opened.
    bool setDatabase(const QString& path, QString* error = nullptr);
    QString database() const { return m_databasePath; }
    /// Reads the runs again (check marks stay) and rebuilds the report: after a run has finished.
    void refresh();

    QList<qint64> checkedRuns() const;
    void setCheckedRuns(const QList<qint64>& runIds);
    /// Bootstrap settings for the intervals (default: core's, 2000 resamples).
    void setBootstrapOptions(const BootstrapOptions& options);

    /// The report of the checked runs, once built (nullopt before, or with no run checked).
    const std::optional<Report>& report() const { return m_report; }
    bool isBuilding() const;
    /// Writes the current report in the format; false with *error when there is none or the
    /// file cannot be written.
    bool exportTo(const QString& path, ExportFormat format, QString* error = nullptr) const;

    RunListModel* runListModel() const { return m_runs; }
    /// Brings the Per task tab forward with the table of a level of the report (false: no such
    /// level in it).
    bool showTaskLevel(int level);

    /// A run was launched into `path`, which is not the database shown: a bar above the tables
    /// says so and offers to open it (openRequested). Empty: the bar goes.
    void offerDatabase(const QString& path, const QString& runLabel = QString());
    QString offeredDatabase() const { return m_offered; }

Q_SIGNALS:
    /// A new report is on the page (also when the check marks leave none).
    void reportReady();
    /// The run list has been read (after setDatabase() or refresh(), in the background).
    void runsLoaded();
    void databaseChanged(const QString& path);
    /// A run was double-clicked: open it in the monitor.
    void runActivated(const QString& database, qint64 runId);
    /// A run of the list became the current one (a click or the keyboard).
    void runSelected(const QString& database, qint64 runId);
    /// "Open" on the bar of offerDatabase(), or a file picked with "Open database…": the window
    /// opens that database for every page (and says what a file that is not a run store is).
    void openRequested(const QString& path);

private:
    void buildUi();
    void scheduleReport();
    /// Reads the run list in a background job; checkAll: then check every run (a database just opened).
    void loadRuns(bool checkAll);
    void startReport();
    void showReport(const std::optional<Report>& report, const QString& error);
    void showEmptyState(const QString& text);
    void fill(QStandardItemModel* model, QTableView* view, const TextTable& table);
    void chooseDatabase();
    void exportWithDialog(ExportFormat format);
    void updateActions();
    void fillTaskTable();

    QString m_databasePath;
    std::unique_ptr<RunStore> m_store;
    RunListModel* m_runs = nullptr;
    BootstrapOptions m_bootstrap;
    std::optional<Report> m_report;
    JobTracker* m_jobs = nullptr; ///< builds the report (slot "report")
    bool m_reportScheduled = false;

    QString m_offered;
    QWidget* m_offerBar = nullptr;
    QLabel* m_offerText = nullptr;
    QLabel* m_databaseLabel = nullptr;
    QLabel* m_statusLabel = nullptr;
    QStackedWidget* m_runsStack = nullptr;
    QLabel* m_runsEmpty = nullptr;
    QTableView* m_runList = nullptr;
    QStackedWidget* m_tablesStack = nullptr;
    QLabel* m_tablesEmpty = nullptr;
    QStandardItemModel* m_runTableModel = nullptr;
    QStandardItemModel* m_levelTableModel = nullptr;
    QStandardItemModel* m_taskTableModel = nullptr;
    QTableView* m_taskTable = nullptr;
    QComboBox* m_taskLevel = nullptr;
    QLabel* m_taskCount = nullptr;
    QStandardItemModel* m_pairTableModel = nullptr;
    QStandardItemModel* m_routingTableModel = nullptr;
    QStandardItemModel* m_ablationTableModel = nullptr;
    QTableView* m_runTable = nullptr;
    QTableView* m_levelTable = nullptr;
    QTableView* m_pairTable = nullptr;
    QTableView* m_routingTable = nullptr;
    QTableView* m_ablationTable = nullptr;
    QStandardItemModel* m_fastPTableModel = nullptr;
    QTableView* m_fastPTable = nullptr;
    QLabel* m_routingNote = nullptr;
    QLabel* m_notCounted = nullptr;
    QLabel* m_ablationNote = nullptr;
    QTabWidget* m_detailTabs = nullptr;
    QPushButton* m_exportCsv = nullptr;
    QPushButton* m_exportJson = nullptr;
    QPushButton* m_exportMarkdown = nullptr;
};

} // namespace kwb::app
