#pragma once
// The one way the window (and the catalog) runs work in the background. Each job belongs to a
// slot ("charts", "report", "profile/L2/1", …) and gets the slot's next id, rising from 1; a new
// job supersedes the slot's previous one, whose result is then dropped, whether it ends before or
// after the new one. A result is delivered on the tracker's thread (the GUI thread, for the
// window), from the event loop, never from inside the call that started the job.
//
// Two kinds of work: a function run on the tracker's own thread pool (a store scan, a report),
// with a connection of its own to whatever it reads, and a request to a WorkerSupervisor, which
// is already asynchronous. Destroying the tracker drops every pending result and waits for the
// functions still running (they read a file for a moment; killing a thread mid-query is worse).
//
// QtCore only (QThreadPool, queued calls), so core's TaskCatalog uses it as the window does.

#include "core/protocol/workerresponse.h"

#include <QHash>
#include <QJsonObject>
#include <QMetaObject>
#include <QObject>
#include <QString>
#include <QThreadPool>

#include <atomic>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace kwb {

class WorkerSupervisor;

/// How a worker request ended: with the worker's response, decoded once by the supervisor (it may
/// still say ok: false), or without one (status is an EvaluationStatus wire name: timeout,
/// cancelled, crashed, …).
struct WorkerReply
{
    WorkerResponse response;
    QString status;
    QString message;
    bool answered() const { return status.isEmpty(); }
};

class JobTracker : public QObject
{
    Q_OBJECT
public:
    explicit JobTracker(QObject* parent = nullptr);
    /// Drops every pending result and waits for the functions still running.
    ~JobTracker() override;

    /// Runs work() on the tracker's pool and later done(result) on the tracker's thread, unless
    /// the job was superseded or cancelled by then. work must not touch objects of the GUI
    /// thread: it gets copies. done must not delete the tracker (deleteLater its owner instead).
    /// Returns the job's id.
    template <typename Work, typename Done>
    qint64 run(const QString& slot, Work work, Done done)
    {
        using Result = std::decay_t<std::invoke_result_t<Work&>>;
        const qint64 id = begin(slot);
        auto deliver = std::function<void(Result &&)>(std::move(done));
        startOnPool([this, slot, id, work = std::move(work), deliver = std::move(deliver)]() mutable {
            auto result = std::make_shared<Result>(work());
            QMetaObject::invokeMethod(
                this,
                [this, slot, id, result, deliver] {
                    if (!finish(slot, id))
                        return;
                    deliver(std::move(*result));
                    Q_EMIT jobFinished(slot, id);
                },
                Qt::QueuedConnection);
        });
        return id;
    }

    /// Sends request to supervisor and later calls done with how it ended, unless the job was
    /// superseded or cancelled by then (the worker request itself runs on: the supervisor owns
    /// it). A supervisor destroyed meanwhile ends the job without a call. Returns the job's id.
    qint64 request(const QString& slot, WorkerSupervisor* supervisor, const QJsonObject& request, int timeoutMs,
                   std::function<void(const WorkerReply&)> done);

    /// A new id for slot, superseding its previous job: for work tracked by hand (begin, then
    /// finish when it ends).
    qint64 begin(const QString& slot);
    /// Ends job id of slot: true when it is the slot's current job (then the caller delivers its
    /// result), false when it was superseded or cancelled (drop it).
    bool finish(const QString& slot, qint64 id);
    /// Whether id is the slot's newest job and has not ended or been cancelled.
    bool isCurrent(const QString& slot, qint64 id) const;
    /// Whether the slot's newest job still runs.
    bool isBusy(const QString& slot) const;
    /// Whether any slot's newest job still runs.
    bool isBusy() const;
    /// The id of the slot's newest job (0 before the first).
    qint64 latestId(const QString& slot) const;
    /// Drops the result of the slot's running job (the next job still gets a higher id).
    void cancel(const QString& slot);
    void cancelAll();

    /// Functions still running on the pool, superseded ones included.
    int runningFunctions() const;
    /// Waits for the functions on the pool; their results are then queued, not yet delivered.
    bool waitForFunctions(int msecs = -1);

Q_SIGNALS:
    /// A job of run() or request() delivered its result (emitted right after its done ran);
    /// superseded and cancelled jobs end without it.
    void jobFinished(const QString& slot, qint64 id);

private:
    struct Slot
    {
        qint64 latest = 0;
        bool busy = false;
    };
    struct PendingRequest
    {
        QString slot;
        qint64 job = 0;
        std::function<void(const WorkerReply&)> done;
    };

    void startOnPool(std::function<void()> function);
    void watch(WorkerSupervisor* supervisor);
    void endRequest(WorkerSupervisor* supervisor, qint64 requestId, const WorkerReply& reply);

    QHash<QString, Slot> m_slots;
    QHash<WorkerSupervisor*, QHash<qint64, PendingRequest>> m_requests;
    std::atomic<int> m_running{0};
    QThreadPool m_pool;
};

} // namespace kwb
