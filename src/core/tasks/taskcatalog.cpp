#include "core/tasks/taskcatalog.h"

#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerrequests.h"
#include "core/store/runstore.h"
#include "core/workers/jobtracker.h"
#include "core/workers/workersupervisor.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QMetaObject>
#include <QSet>

#include <algorithm>
#include <memory>
#include <utility>

namespace kwb {

QStringList TaskInfo::categories() const
{
    QStringList list;
    for (const TaskOp& op : analysis.ops)
        if (!op.category.isEmpty() && !list.contains(op.category))
            list.append(op.category);
    return list;
}

TaskInfo TaskInfo::fromJson(const QJsonObject& json)
{
    TaskInfo t;
    static_cast<TaskSpec&>(t) = decodeTaskSpec(json);
    return t;
}

namespace {
const QString kEagerSlot = QStringLiteral("eager");
}

TaskCatalog::TaskCatalog(QObject* parent)
    : QObject(parent)
    , m_jobs(new JobTracker(this))
{}

// The tracker, a child, waits for a reader still running; it only reads a file, so that is short.
TaskCatalog::~TaskCatalog() = default;

void TaskCatalog::setSupervisor(WorkerSupervisor* supervisor)
{
    if (m_supervisor == supervisor)
        return;
    cancel();
    if (m_supervisor)
        disconnect(m_supervisor, nullptr, this, nullptr);
    m_supervisor = supervisor;
    if (supervisor) {
        m_unavailableReason.clear();
        connect(supervisor, &QObject::destroyed, this, [this] {
            // Its pending requests end without a signal: this load is over.
            m_tasksRequest = m_analyzeRequest = 0;
            ++m_generation;
            if (m_state == State::LoadingTasks || m_state == State::Analyzing)
                setState(State::Failed, tr("the worker supervisor was shut down"));
        });
        connect(supervisor, &WorkerSupervisor::responseAvailable, this, &TaskCatalog::onResponse);
        connect(supervisor, &WorkerSupervisor::requestFailed, this, &TaskCatalog::onFailure);
    }
}

void TaskCatalog::setTimeouts(int tasksMs, int analyzeMs)
{
    m_tasksTimeoutMs = tasksMs;
    m_analyzeTimeoutMs = analyzeMs;
}

void TaskCatalog::setState(State state, const QString& error)
{
    const bool changed = state != m_state || error != m_error;
    m_state = state;
    m_error = error;
    if (changed)
        Q_EMIT stateChanged(state);
}

void TaskCatalog::load()
{
    cancel();
    if (!m_supervisor) {
        const QString reason =
            m_unavailableReason.isEmpty() ? tr("no worker to ask for the tasks") : m_unavailableReason;
        // Later, like every other ending, so a caller that connects after load() sees it.
        const int generation = m_generation;
        QMetaObject::invokeMethod(
            this,
            [this, generation, reason] {
                if (generation == m_generation)
                    setState(State::Failed, reason);
            },
            Qt::QueuedConnection);
        return;
    }
    // A folder named at run time must be in the worker's sandbox, which binds what its
    // arguments name when it starts (docs/sandbox.md): as --tasks-dir, in a fresh worker.
    if (!m_tasksDir.isEmpty()) {
        QStringList arguments = m_supervisor->arguments();
        const qsizetype at = arguments.indexOf(QStringLiteral("--tasks-dir"));
        const QString dir = QFileInfo(m_tasksDir).absoluteFilePath();
        if (at < 0 || at + 1 >= arguments.size() || arguments.at(at + 1) != dir) {
            if (at >= 0 && at + 1 < arguments.size())
                arguments.remove(at, 2);
            arguments << QStringLiteral("--tasks-dir") << dir;
            m_supervisor->setProgram(m_supervisor->program(), arguments);
            m_supervisor->stopWorker();
        }
    }
    setState(State::LoadingTasks);
    sendTasksRequest();
}

void TaskCatalog::setUnavailable(const QString& reason)
{
    setSupervisor(nullptr);
    m_unavailableReason = reason;
    load();
}

void TaskCatalog::cancel()
{
    ++m_generation;
    const qint64 tasksRequest = std::exchange(m_tasksRequest, 0);
    const qint64 analyzeRequest = std::exchange(m_analyzeRequest, 0);
    if (m_supervisor) {
        if (tasksRequest)
            m_supervisor->cancelRequest(tasksRequest);
        if (analyzeRequest)
            m_supervisor->cancelRequest(analyzeRequest);
    }
    if (m_state == State::LoadingTasks || m_state == State::Analyzing)
        setState(m_tasks.isEmpty() ? State::Idle : State::Ready,
                 m_tasks.isEmpty() ? QString() : tr("analysis cancelled"));
}

void TaskCatalog::sendTasksRequest()
{
    m_tasksRequest = m_supervisor->sendRequest(WorkerRequests::tasks(m_tasksDir), m_tasksTimeoutMs);
}

void TaskCatalog::sendNextAnalyze()
{
    if (!m_supervisor)
        return;
    while (m_nextAnalyze < m_tasks.size() && m_tasks.at(m_nextAnalyze).analysisState != TaskInfo::Analysis::Pending)
        ++m_nextAnalyze;
    if (m_nextAnalyze >= m_tasks.size()) {
        finishAnalysis();
        return;
    }
    m_analyzeTask = m_tasks.at(m_nextAnalyze++).id;
    m_analyzeRequest =
        m_supervisor->sendRequest(WorkerRequests::analyze(m_analyzeTask, QStringLiteral("full")), m_analyzeTimeoutMs);
}

void TaskCatalog::finishAnalysis()
{
    m_analyzeRequest = 0;
    m_analyzeTask.clear();
    if (m_state == State::Analyzing)
        setState(State::Ready);
}

bool TaskCatalog::applyTasksResponse(const WorkerResponse& response)
{
    if (!response.ok() || !response.tasks)
        return false;
    TaskList list = *response.tasks;
    QList<TaskInfo> tasks;
    QHash<QString, int> index;
    for (TaskSpec& spec : list.tasks) {
        if (spec.id.isEmpty() || index.contains(spec.id))
            continue;
        TaskInfo task;
        static_cast<TaskSpec&>(task) = std::move(spec);
        // Nothing to analyse: no forward (the worker would refuse the request with this reason).
        if (task.isKernelBenchOnly()) {
            task.analysisState = TaskInfo::Analysis::Failed;
            task.analysisError = QStringLiteral("KernelBench only: %1").arg(task.kernelBenchOnly);
        }
        index.insert(task.id, int(tasks.size()));
        tasks.append(std::move(task));
    }
    QList<TaskLoadError> errors = std::move(list.errors);
    m_tasks = std::move(tasks);
    m_index = std::move(index);
    m_loadErrors = std::move(errors);
    m_analyzed =
        int(std::count_if(m_tasks.cbegin(), m_tasks.cend(), [](const TaskInfo& t) { return t.isKernelBenchOnly(); }));
    m_nextAnalyze = 0;
    Q_EMIT tasksReset();
    Q_EMIT progressChanged(m_analyzed, int(m_tasks.size()));
    return true;
}

bool TaskCatalog::applyAnalyzeResponse(const QJsonObject& json)
{
    WorkerResponse response = decodeWorkerResponse(json);
    if (!response.analyze)
        response.analyze = decodeAnalyze(json);
    return applyAnalyzeResponse(response);
}

bool TaskCatalog::applyAnalyzeResponse(const WorkerResponse& response, const QString& taskId)
{
    const ResponseHeader& header = response.header;
    TaskAnalysis analysis = response.analyze.value_or(TaskAnalysis());
    // The worker echoes the task, but a response without one still belongs to its request.
    if (analysis.task.isEmpty())
        analysis.task = taskId;
    const int i = indexOf(analysis.task);
    if (i < 0)
        return false;
    TaskInfo& task = m_tasks[i];
    const bool wasPending = task.analysisState == TaskInfo::Analysis::Pending;
    if (header.ok) {
        task.analysis = analysis;
        task.analysisJson = response.raw;
        task.analysisState = TaskInfo::Analysis::Done;
        task.analysisError.clear();
    } else {
        task.analysis = TaskAnalysis();
        task.analysisState = TaskInfo::Analysis::Failed;
        task.analysisError = header.errorCode + QStringLiteral(": ") + header.errorMessage;
    }
    if (wasPending)
        ++m_analyzed;
    Q_EMIT taskUpdated(task.id);
    Q_EMIT progressChanged(m_analyzed, int(m_tasks.size()));
    return true;
}

void TaskCatalog::onResponse(qint64 id, const WorkerResponse& response)
{
    if (id == 0)
        return;
    // Slots connected to the signals below may call load() or cancel(): then this load is over.
    const int generation = m_generation;
    if (id == m_tasksRequest) {
        m_tasksRequest = 0;
        if (!applyTasksResponse(response)) {
            setState(State::Failed, tr("the worker refused the tasks request: %1").arg(response.header.errorMessage));
            return;
        }
        if (generation != m_generation)
            return;
        setState(State::Analyzing);
        if (generation == m_generation)
            sendNextAnalyze();
    } else if (id == m_analyzeRequest) {
        m_analyzeRequest = 0;
        applyAnalyzeResponse(response, m_analyzeTask);
        if (generation == m_generation)
            sendNextAnalyze();
    }
}

void TaskCatalog::onFailure(qint64 id, const QString& status, const QString& message)
{
    if (id == 0)
        return;
    const QString text = message.isEmpty() ? status : status + QStringLiteral(": ") + message;
    if (id == m_tasksRequest) {
        m_tasksRequest = 0;
        if (evaluationStatusFromWire(status) != EvaluationStatus::Cancelled)
            setState(State::Failed, tr("could not get the tasks from the worker (%1)").arg(text));
        return;
    }
    if (id != m_analyzeRequest)
        return;
    m_analyzeRequest = 0;
    if (evaluationStatusFromWire(status) == EvaluationStatus::Cancelled)
        return;
    const int generation = m_generation;
    const int i = indexOf(m_analyzeTask);
    if (i >= 0) {
        TaskInfo& task = m_tasks[i];
        task.analysisState = TaskInfo::Analysis::Failed;
        task.analysisError = text;
        ++m_analyzed;
        Q_EMIT taskUpdated(task.id);
        Q_EMIT progressChanged(m_analyzed, int(m_tasks.size()));
    }
    if (generation != m_generation)
        return;
    if (evaluationStatusFromWire(status) == EvaluationStatus::StartFailed) {
        // No worker starts: asking for the other tasks would fail the same way, one by one.
        setState(State::Failed, tr("analysis stopped: the worker failed to start (%1)").arg(text));
        return;
    }
    // A crash or a time-out on one task's analysis: the supervisor starts a fresh worker.
    sendNextAnalyze();
}

const TaskInfo* TaskCatalog::task(const QString& id) const
{
    const int i = indexOf(id);
    return i < 0 ? nullptr : &m_tasks.at(i);
}

int TaskCatalog::indexOf(const QString& id) const
{
    return m_index.value(id, -1);
}

void TaskCatalog::setEagerTimes(const QHash<QString, double>& meanMs, const QString& gpuName)
{
    QHash<QString, EagerTime> times;
    for (auto it = meanMs.cbegin(); it != meanMs.cend(); ++it)
        times.insert(it.key(), EagerTime{it.value(), 0, QDateTime()});
    setEagerTimes(times, gpuName);
}

void TaskCatalog::setEagerTimes(const QHash<QString, EagerTime>& times, const QString& gpuName)
{
    m_jobs->cancel(kEagerSlot); // a reader still running must not overwrite times set by hand
    m_eager = times;
    m_eagerGpu = gpuName;
    m_eagerError.clear();
    Q_EMIT eagerTimesChanged();
}

std::optional<EagerTime> TaskCatalog::eagerTime(const QString& id) const
{
    const auto it = m_eager.constFind(id);
    if (it == m_eager.cend())
        return std::nullopt;
    return *it;
}

QHash<QString, EagerTime> TaskCatalog::eagerTimesFromStore(const RunStore& store, const QString& gpuName)
{
    QHash<QString, EagerTime> times;
    QHash<QString, qint64> evaluationOf; // the evaluation each time came from: ids break ties
    if (gpuName.isEmpty())
        return times;
    for (const RunInfo& run : store.runs()) {
        if (run.gpu.name != gpuName)
            continue;
        for (const EvaluationRecord& e : store.evaluations(run.id)) {
            const std::optional<TimingStats> reference = e.evaluation().timing.reference;
            if (!reference || !(reference->meanMs > 0))
                continue;
            const auto it = times.constFind(e.task);
            if (it != times.cend()) {
                const bool newer =
                    e.created > it->measured || (e.created == it->measured && e.id > evaluationOf.value(e.task));
                if (!newer)
                    continue;
            }
            times.insert(e.task, EagerTime{reference->meanMs, run.id, e.created});
            evaluationOf.insert(e.task, e.id);
        }
    }
    return times;
}

void TaskCatalog::loadEagerTimes(const QString& databasePath, const QString& gpuName)
{
    if (gpuName.isEmpty() || !QFileInfo(databasePath).isFile()) {
        m_jobs->cancel(kEagerSlot);
        m_eager.clear();
        m_eagerGpu = gpuName;
        m_eagerError =
            gpuName.isEmpty() ? tr("no GPU to look up eager times for") : tr("no run database at %1").arg(databasePath);
        Q_EMIT eagerTimesChanged();
        return;
    }
    struct Result
    {
        QHash<QString, EagerTime> times;
        QString error;
    };
    m_jobs->run(
        kEagerSlot,
        [databasePath, gpuName] {
            Result result;
            RunStore store; // a connection of its own, in the pool's thread
            if (!store.open(databasePath))
                result.error = store.errorString();
            else
                result.times = eagerTimesFromStore(store, gpuName);
            return result;
        },
        [this, gpuName](Result&& result) {
            m_eager = std::move(result.times);
            m_eagerGpu = gpuName;
            m_eagerError = result.error;
            Q_EMIT eagerTimesChanged();
        });
}

} // namespace kwb
