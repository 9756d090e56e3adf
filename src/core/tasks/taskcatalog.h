#pragma once
// The tasks a worker knows, each with its static analysis (docs/protocol.md §tasks, §analyze),
// and, per task, the eager reference time measured on the current GPU. The catalog asks through a
// WorkerSupervisor and never waits: `tasks` first, then one `analyze` (scale full) per task, one
// after the other so that other clients of a shared supervisor are not starved. Each answer
// arrives as a signal; a worker that cannot start, hangs or crashes ends in a state with a
// message, never in a hang.

#include "core/protocol/workerresponse.h"
#include "core/protocol/workerresponses.h"
#include "core/workers/workersupervisor.h"

#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

class JobTracker;
class RunStore;

// TaskDim, TaskTensor, TaskOp, TaskSpec and TaskLoadError come from the protocol's decoder.
using TaskAnalysis = AnalyzeResult;

/// A task with its catalog state: the worker's description (TaskSpec) and its analysis.
struct TaskInfo : TaskSpec
{
    enum class Analysis { Pending, Done, Failed };

    Analysis analysisState = Analysis::Pending;
    TaskAnalysis analysis;
    /// The `analyze` response as received: the traffic chart and the prompt editor's preview
    /// render it (their inputs are the worker's JSON, as a run's prompts are).
    QJsonObject analysisJson;
    QString analysisError; ///< why analysis failed
    // kernelBenchOnly (TaskSpec): such a task is listed, never analysed, and left out of runs.

    bool hasAnalysis() const { return analysisState == Analysis::Done; }
    /// Op categories of the analysis, each once, in op order.
    QStringList categories() const;

    /// Reads one entry of a `tasks` response (decodeTaskSpec()).
    static TaskInfo fromJson(const QJsonObject& task);
};

/// The eager reference time of a task on one GPU, from the most recent evaluation that timed it.
struct EagerTime
{
    double meanMs = 0;
    qint64 runId = 0;
    QDateTime measured; ///< UTC; invalid when given without a source
};

class TaskCatalog : public QObject
{
    Q_OBJECT
public:
    enum class State {
        Idle,         ///< nothing asked yet
        LoadingTasks, ///< the `tasks` request runs
        Analyzing,    ///< tasks are known; `analyze` requests run
        Ready,        ///< every task was analysed (some analyses may have failed: see the tasks)
        Failed,       ///< the worker could not be asked (errorMessage() says why)
    };
    Q_ENUM(State)

    static constexpr int kDefaultTasksTimeoutMs = 120 * 1000; // includes loading libtorch
    static constexpr int kDefaultAnalyzeTimeoutMs = 60 * 1000;

    explicit TaskCatalog(QObject* parent = nullptr);
    ~TaskCatalog() override;

    /// The supervisor to ask (not owned; it may be shared with other clients, whose responses
    /// the catalog ignores). Use ReuseWhileHealthy isolation: FreshPerRequest would start a worker
    /// per task.
    void setSupervisor(WorkerSupervisor* supervisor);
    WorkerSupervisor* supervisor() const { return m_supervisor; }
    /// An override of the worker's tasks directory (empty: the worker's own).
    void setTasksDir(const QString& dir) { m_tasksDir = dir; }
    void setTimeouts(int tasksMs, int analyzeMs);

    /// Asks the worker for the tasks, then analyses each. Cancels a load in progress. Without a
    /// supervisor the catalog fails at once (later, from the event loop) with `reason`, or with
    /// a generic message.
    void load();
    /// The catalog cannot be loaded because there is no worker (e.g. not found): state Failed
    /// with that message, emitted from the event loop.
    void setUnavailable(const QString& reason);
    /// Stops asking; what is known stays.
    void cancel();

    State state() const { return m_state; }
    /// Why the state is Failed, or why the analysis stopped early.
    QString errorMessage() const { return m_error; }
    /// Task files the worker could not load.
    QList<TaskLoadError> loadErrors() const { return m_loadErrors; }
    /// Analyses done (or failed) and to do.
    int analyzedCount() const { return m_analyzed; }
    int taskCount() const { return int(m_tasks.size()); }

    /// Tasks in the worker's order (by level, then number).
    const QList<TaskInfo>& tasks() const { return m_tasks; }
    const TaskInfo* task(const QString& id) const;
    int indexOf(const QString& id) const;

    /// Replaces the tasks with those of a `tasks` response (what load() does when it arrives).
    /// Returns false, leaving the catalog as it was, when the response is not `ok`.
    bool applyTasksResponse(const WorkerResponse& response);
    /// Sets the analysis of `task` (empty: the task the response names) from an `analyze`
    /// response, ok or not. Returns false when no known task is meant.
    bool applyAnalyzeResponse(const WorkerResponse& response, const QString& task = QString());
    /// The same from recorded answers (tests, fixtures): decoded, then applied; an analysis is
    /// read as one whatever its type and ok say (a refused one names its task).
    bool applyTasksResponse(const QJsonObject& response) { return applyTasksResponse(decodeWorkerResponse(response)); }
    bool applyAnalyzeResponse(const QJsonObject& response);

    /// Eager reference times on gpuName (task id -> mean ms).
    void setEagerTimes(const QHash<QString, double>& meanMs, const QString& gpuName = QString());
    void setEagerTimes(const QHash<QString, EagerTime>& times, const QString& gpuName);
    std::optional<EagerTime> eagerTime(const QString& id) const;
    QString eagerGpuName() const { return m_eagerGpu; }

    /// The eager reference times of gpuName in a run store: for each task, the reference mean
    /// (result.timing.reference.mean_ms) of the most recent evaluation whose run was made on a
    /// GPU of that name (runs.config.gpu.name). Reads every evaluation of those runs: call it
    /// off the GUI thread on a large store (loadEagerTimes() does).
    static QHash<QString, EagerTime> eagerTimesFromStore(const RunStore& store, const QString& gpuName);
    /// eagerTimesFromStore() on a thread of its own, with a connection of its own to the file at
    /// databasePath; the times replace the current ones when read (eagerTimesChanged()). A file
    /// that does not exist or cannot be opened clears them and sets eagerTimesError().
    void loadEagerTimes(const QString& databasePath, const QString& gpuName);
    QString eagerTimesError() const { return m_eagerError; }

Q_SIGNALS:
    void stateChanged(kwb::TaskCatalog::State state);
    /// The task list was replaced (tasks() holds the new one).
    void tasksReset();
    /// A task's analysis (or its failure) arrived.
    void taskUpdated(const QString& id);
    void progressChanged(int analyzed, int total);
    void eagerTimesChanged();

private:
    void setState(State state, const QString& error = QString());
    void sendTasksRequest();
    void sendNextAnalyze();
    void onResponse(qint64 id, const WorkerResponse& response);
    void onFailure(qint64 id, const QString& status, const QString& message);
    void finishAnalysis();

    QPointer<WorkerSupervisor> m_supervisor;
    QString m_tasksDir;
    int m_tasksTimeoutMs = kDefaultTasksTimeoutMs;
    int m_analyzeTimeoutMs = kDefaultAnalyzeTimeoutMs;

    State m_state = State::Idle;
    QString m_error;
    QString m_unavailableReason;
    QList<TaskInfo> m_tasks;
    QHash<QString, int> m_index;
    QList<TaskLoadError> m_loadErrors;

    qint64 m_tasksRequest = 0;
    qint64 m_analyzeRequest = 0;
    QString m_analyzeTask;
    int m_nextAnalyze = 0;
    int m_analyzed = 0;
    int m_generation = 0; ///< bumped by load(), cancel() and setUnavailable(): stale queued calls drop out

    QHash<QString, EagerTime> m_eager;
    QString m_eagerGpu;
    QString m_eagerError;
    JobTracker* m_jobs = nullptr; ///< the eager-time readers (slot "eager"; waited for on destruction)
};

} // namespace kwb
