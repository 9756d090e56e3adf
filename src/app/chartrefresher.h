#pragma once
// What the Roofline, HBM traffic and Tasks pages draw against: a GPU and the open run store's
// times on it. This machine's GPU comes from the worker's device probe; the store's GPU and times
// from a scan of the store in the background, started again whenever the store, its runs or the
// catalog change. Where no GPU answered, the Tasks page's bounds come from a GPU of the table.

#include "core/protocol/devicefacts.h"

#include <QList>
#include <QObject>
#include <QString>

namespace kwb {
class JobTracker;
class TaskCatalog;
} // namespace kwb

namespace kwb::app {

class PromptEditorPage;
class RooflinePage;
class TasksPage;
class TrafficPage;
struct RooflinePoint;

class ChartRefresher : public QObject
{
    Q_OBJECT
public:
    /// Where the data goes; the window owns these and the refresher, and outlives both.
    struct Pages
    {
        TaskCatalog* catalog = nullptr;
        TasksPage* tasks = nullptr;
        PromptEditorPage* prompts = nullptr;
        RooflinePage* roofline = nullptr;
        TrafficPage* traffic = nullptr;
    };

    /// The JobTracker slot of the scans: a newer scan drops an older one's result.
    static QString jobSlot();

    ChartRefresher(JobTracker* jobs, const Pages& pages, QObject* parent = nullptr);

    /// The worker's answer about this machine's GPU (available, or its reason for none).
    void setLiveDevice(const DeviceFacts& facts);
    const DeviceFacts& liveDevice() const { return m_liveDevice; }
    /// No GPU here, or no answer: the Tasks page's bounds from a GPU of the table, unless a real
    /// GPU (this machine's or the store's) gave them.
    void useTableGpuForTasks();
    /// Scans `database` in the background, then updates the pages and emits updated(); nothing
    /// for an empty path.
    void refresh(const QString& database);
    /// A scan runs whose result has not reached the pages.
    bool isBusy() const;

Q_SIGNALS:
    /// A scan's result reached the pages.
    void updated();

private:
    void apply(const QString& database, const DeviceFacts& runDevice, const QList<RooflinePoint>& points);
    void setTasksRoofs(const DeviceFacts& facts);

    JobTracker* m_jobs;
    Pages m_pages;
    DeviceFacts m_liveDevice;
    bool m_tasksRoofsFromDevice = false; ///< the Tasks page's bounds come from a real GPU
};

} // namespace kwb::app
