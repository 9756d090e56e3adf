#pragma once
// Three pages of the window built around one widget each: the fused-vs-unfused traffic of a
// task, the best-of-n curves, and the diff of two candidates picked from a run store.

#include "app/charts/bestofnchart.h"
#include "app/workbenchdata.h"
#include "core/protocol/devicefacts.h"
#include "core/protocol/workerresponses.h"

#include <QHash>
#include <QJsonObject>
#include <QPair>
#include <QWidget>

#include <functional>
#include <memory>
#include <utility>

class QComboBox;
class QLabel;
class QPushButton;

namespace kwb {
class JobTracker;
class TaskCatalog;
} // namespace kwb

namespace kwb::app {

class CandidateDiffView;
class GpuChooser;
class TrafficChart;

/// A task picker over the catalog, a GPU (its bandwidth turns bytes into time) and the
/// TrafficChart of the chosen task.
class TrafficPage : public QWidget
{
    Q_OBJECT
public:
    explicit TrafficPage(TaskCatalog* catalog, QWidget* parent = nullptr);
    bool showTask(const QString& id);
    QString currentTask() const;
    TrafficChart* chart() const { return m_chart; }
    /// The GPU whose bandwidth the totals are timed at: the table's, and first the one a worker or
    /// run database reported (as on the Roofline page); the H200 of the shipped study until then.
    GpuChooser* gpuChooser() const { return m_gpu; }
    void setCurrentDevice(const DeviceFacts& device, const QString& origin = QString());

    /// Whether "Measure on this GPU" can run (a worker with a GPU), and why not otherwise.
    void setMeasureAvailable(bool available, const QString& why = QString());
    /// A `profile` response for `task` (kept per task), drawn against `bandwidthGBps`.
    void setProfile(const QString& task, const ProfileResult& profile, double bandwidthGBps, const QString& origin);
    /// The profile request for `task` failed.
    void setProfileFailed(const QString& task, const QString& message);

Q_SIGNALS:
    /// The user asked for the current task's kernels to be profiled on this machine's GPU.
    void measureRequested(const QString& task);

private:
    struct Measured
    {
        ProfileResult profile;
        double bandwidthGBps = 0;
        QString origin;
    };
    void fillTasks();
    void update();

    TaskCatalog* m_catalog;
    QComboBox* m_task;
    QPushButton* m_measure;
    GpuChooser* m_gpu;
    QLabel* m_note;
    TrafficChart* m_chart;
    QString m_wanted;
    QHash<QString, Measured> m_measured;
    bool m_measureAvailable = false;
    QString m_measureWhy;
    QString m_pending; ///< the task being profiled
};

/// The best-of-n chart with a line on how its points are made.
class BestOfNPage : public QWidget
{
    Q_OBJECT
public:
    explicit BestOfNPage(QWidget* parent = nullptr);
    void setCurves(const QList<BestOfNSeries>& curves);
    BestOfNChart* chart() const { return m_chart; }

private:
    BestOfNChart* m_chart;
    QLabel* m_note;
};

/// Two candidates of a task, from any runs of a store, side by side. A task's candidates and the
/// chosen pair are read in the background (JobTracker jobs, a connection of their own), so the
/// page never waits on a large database; a result for a task or pair no longer shown is dropped.
class DiffPage : public QWidget
{
    Q_OBJECT
public:
    /// Reads the evaluated candidates of a task from the database at a path: run on a pool thread.
    using CandidateReader = std::function<QList<CandidateEntry>(const QString& path, const QString& task)>;

    explicit DiffPage(QWidget* parent = nullptr);
    ~DiffPage() override;
    /// The database to read from (each read opens its own connection); false when it cannot be opened.
    bool setDatabase(const QString& path, QString* error = nullptr);
    /// The tasks to pick from, as id -> title (shown "L2/1  title").
    void setTasks(const QList<QPair<QString, QString>>& tasks);
    QString currentTask() const;
    /// Selects the task and starts reading its candidates (candidatesLoaded, then its default
    /// pair: defaultPair). False for a task not in the list.
    bool showTask(const QString& id);
    /// The pair shown when a task is picked, as (left, right) indexes: right the task's best
    /// (CandidateEntry::best; the first where none is marked), left one with other code, preferring the same run's
    /// previous turn, then the same run; never two copies of one code when another exists.
    static std::pair<int, int> defaultPair(const QList<CandidateEntry>& entries);
    bool selectPair(int left, int right);
    const QList<CandidateEntry>& candidates() const { return m_entries; }
    /// Whether the current task's candidates or the chosen pair are still being read.
    bool isLoading() const;
    CandidateDiffView* view() const { return m_view; }
    JobTracker* jobs() const { return m_jobs; }
    /// Replaces how a task's candidates are read (default: readCandidates), e.g. to watch it.
    void setCandidateReader(CandidateReader reader);
    /// The default reader: a RunStore of its own on path, candidatesOfTask.
    static QList<CandidateEntry> readCandidates(const QString& path, const QString& task);

Q_SIGNALS:
    /// The candidates of `task` (the current one) are in the pickers.
    void candidatesLoaded(const QString& task);
    /// The chosen pair is in the view.
    void pairShown();

protected:
    void showEvent(QShowEvent* event) override;

private:
    void loadTask();
    void loadTaskWhenShown();
    void showPair();

    QString m_path;
    JobTracker* m_jobs;
    CandidateReader m_reader;
    QComboBox* m_task;
    QComboBox* m_left;
    QComboBox* m_right;
    QLabel* m_note;
    CandidateDiffView* m_view;
    QList<CandidateEntry> m_entries;
    QString m_summary;    ///< what the note says once the candidates are in
    bool m_stale = false; ///< the task's candidates are to be read once the page is shown
};

} // namespace kwb::app
