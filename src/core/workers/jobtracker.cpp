#include "core/workers/jobtracker.h"

#include "core/workers/workersupervisor.h"

namespace kwb {

JobTracker::JobTracker(QObject* parent)
    : QObject(parent)
{}

JobTracker::~JobTracker()
{
    // Results still queued to this object die with it (QObject drops its posted events); the
    // functions still running only read, and get no say in when the window closes.
    cancelAll();
    m_pool.waitForDone();
}

qint64 JobTracker::begin(const QString& slot)
{
    Slot& s = m_slots[slot];
    s.busy = true;
    return ++s.latest;
}

bool JobTracker::finish(const QString& slot, qint64 id)
{
    const auto it = m_slots.find(slot);
    if (it == m_slots.end() || it->latest != id || !it->busy)
        return false;
    it->busy = false;
    return true;
}

bool JobTracker::isCurrent(const QString& slot, qint64 id) const
{
    const auto it = m_slots.constFind(slot);
    return it != m_slots.cend() && it->latest == id && it->busy;
}

bool JobTracker::isBusy(const QString& slot) const
{
    return m_slots.value(slot).busy;
}

bool JobTracker::isBusy() const
{
    for (const Slot& s : m_slots)
        if (s.busy)
            return true;
    return false;
}

qint64 JobTracker::latestId(const QString& slot) const
{
    return m_slots.value(slot).latest;
}

void JobTracker::cancel(const QString& slot)
{
    const auto it = m_slots.find(slot);
    if (it != m_slots.end())
        it->busy = false;
}

void JobTracker::cancelAll()
{
    for (Slot& s : m_slots)
        s.busy = false;
}

int JobTracker::runningFunctions() const
{
    return m_running.load();
}

bool JobTracker::waitForFunctions(int msecs)
{
    return m_pool.waitForDone(msecs);
}

void JobTracker::startOnPool(std::function<void()> function)
{
    ++m_running;
    m_pool.start([this, function = std::move(function)] {
        function(); // queues its delivery before it counts as done
        --m_running;
    });
}

qint64 JobTracker::request(const QString& slot, WorkerSupervisor* supervisor, const QJsonObject& request, int timeoutMs,
                           std::function<void(const WorkerReply&)> done)
{
    const qint64 job = begin(slot);
    watch(supervisor);
    const qint64 requestId = supervisor->sendRequest(request, timeoutMs);
    // The supervisor answers from the event loop, never inside sendRequest: recorded in time.
    m_requests[supervisor].insert(requestId, PendingRequest{slot, job, std::move(done)});
    return job;
}

void JobTracker::watch(WorkerSupervisor* supervisor)
{
    if (m_requests.contains(supervisor))
        return;
    m_requests.insert(supervisor, {});
    connect(supervisor, &WorkerSupervisor::responseAvailable, this,
            [this, supervisor](qint64 id, const WorkerResponse& response) {
                endRequest(supervisor, id, WorkerReply{response, QString(), QString()});
            });
    connect(supervisor, &WorkerSupervisor::requestFailed, this,
            [this, supervisor](qint64 id, const QString& status, const QString& message) {
                endRequest(supervisor, id, WorkerReply{WorkerResponse(), status, message});
            });
    connect(supervisor, &QObject::destroyed, this, [this, supervisor] {
        // Its pending requests end without a signal: so do their jobs, without a result.
        for (const PendingRequest& pending : m_requests.take(supervisor))
            if (isCurrent(pending.slot, pending.job))
                m_slots[pending.slot].busy = false;
    });
}

void JobTracker::endRequest(WorkerSupervisor* supervisor, qint64 requestId, const WorkerReply& reply)
{
    const auto it = m_requests.find(supervisor);
    if (it == m_requests.end() || !it->contains(requestId))
        return; // someone else's request
    const PendingRequest pending = it->take(requestId);
    if (!finish(pending.slot, pending.job))
        return;
    if (pending.done)
        pending.done(reply);
    Q_EMIT jobFinished(pending.slot, pending.job);
}

} // namespace kwb
