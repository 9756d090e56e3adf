#include "chartrefresher.h"

#include "app/analysispages.h"
#include "app/charts/rooflinechart.h"
#include "app/charts/rooflinepage.h"
#include "app/editor/prompteditorpage.h"
#include "app/tasks/taskspage.h"
#include "app/workbenchdata.h"
#include "core/store/runstore.h"
#include "core/tasks/gputable.h"
#include "core/tasks/taskcatalog.h"
#include "core/workers/jobtracker.h"

#include <QHash>

namespace kwb::app {

QString ChartRefresher::jobSlot()
{
    return QStringLiteral("charts");
}

ChartRefresher::ChartRefresher(JobTracker* jobs, const Pages& pages, QObject* parent)
    : QObject(parent)
    , m_jobs(jobs)
    , m_pages(pages)
{}

void ChartRefresher::setLiveDevice(const DeviceFacts& facts)
{
    m_liveDevice = facts;
    if (!facts.available) {
        useTableGpuForTasks();
        return;
    }
    m_pages.roofline->setCurrentDevice(facts);
    m_pages.traffic->setCurrentDevice(facts);
    // The prompt preview renders the response as the worker wrote it (the renderer's context is JSON).
    m_pages.prompts->setDevice(facts);
    setTasksRoofs(facts);
}

void ChartRefresher::setTasksRoofs(const DeviceFacts& facts)
{
    const GpuRoofs roofs = fromDeviceFacts(facts);
    if (!roofs.isValid())
        return;
    m_pages.tasks->setRoofs(roofs.fp32Gflops(), roofs.bandwidthGBps(), roofs.name);
    m_tasksRoofsFromDevice = true;
}

void ChartRefresher::useTableGpuForTasks()
{
    if (m_tasksRoofsFromDevice)
        return;
    // The GPU chosen on the Roofline page when it is one of the table's, else the H200 of the
    // shipped study; named as such, so nobody takes it for this machine's.
    const GpuRoofs* gpu = findGpu(m_pages.roofline->selectedGpuKey());
    if (!gpu || !gpu->isValid())
        gpu = findGpu(QStringLiteral("h200-sxm-141gb"));
    if (gpu && gpu->isValid())
        m_pages.tasks->setRoofs(gpu->fp32Gflops(), gpu->bandwidthGBps(),
                                tr("%1 (GPU table; no GPU here)").arg(gpu->name));
}

void ChartRefresher::refresh(const QString& database)
{
    if (database.isEmpty())
        return;
    // The scan reads every evaluation of the file: off the GUI thread, with a connection of its
    // own. A newer scan (another database, a finished run, the catalog ready) drops this one's
    // result, so the charts never show a database that is no longer open.
    struct Scan
    {
        bool opened = false;
        DeviceFacts runDevice;
        QHash<QString, TaskTimes> times;
    };
    m_jobs->run(
        jobSlot(),
        [database] {
            Scan scan;
            RunStore store;
            if (!store.open(database))
                return scan;
            scan.opened = true;
            scan.runDevice = latestRunDevice(store);
            scan.times = taskTimesFromStore(store, scan.runDevice.name);
            return scan;
        },
        [this, database](Scan&& scan) {
            if (!scan.opened)
                return;
            apply(database, scan.runDevice, rooflinePoints(m_pages.catalog->tasks(), scan.times));
        });
}

bool ChartRefresher::isBusy() const
{
    return m_jobs->isBusy(jobSlot());
}

void ChartRefresher::apply(const QString& database, const DeviceFacts& runDevice, const QList<RooflinePoint>& points)
{
    const bool live = m_liveDevice.available;
    if (!runDevice.raw.isEmpty()) {
        // Times were measured on the database's GPU: place the tasks against its roofs.
        const QString origin = live && m_liveDevice.name == runDevice.name ? QString() : tr("Run database");
        m_pages.roofline->setCurrentDevice(runDevice, origin);
        m_pages.traffic->setCurrentDevice(runDevice, origin);
        m_pages.roofline->selectGpu(QStringLiteral("current"));
        m_pages.catalog->loadEagerTimes(database, runDevice.name);
        setTasksRoofs(runDevice);
        if (!live)
            m_pages.prompts->setDevice(runDevice);
    }
    m_pages.roofline->setPoints(points);
    Q_EMIT updated();
}

} // namespace kwb::app
