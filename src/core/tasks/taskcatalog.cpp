#include "core/tasks/taskcatalog.h"

#include "core/protocol/protocolcodec.h"
#include "core/store/runstore.h"
#include "core/workers/jobtracker.h"
#include "core/workers/workersupervisor.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QMetaObject>
#include <QSet>

#include <memory>
#include <utility>

namespace kwb {

namespace {

QList<qint64> shapeFromJson(const QJsonValue& value)
{
    QList<qint64> shape;
    const QJsonArray array = value.toArray();
    shape.reserve(array.size());
    for (const QJsonValue& v : array)
        shape.append(qint64(v.toDouble()));
    return shape;
}

QStringList symbolicShapeFromJson(const QJsonValue& value)
{
    QStringList shape;
    for (const QJsonValue& v : value.toArray())
        shape.append(v.isString() ? v.toString() : QString::number(qint64(v.toDouble())));
    return shape;
}

TaskTensor tensorFromJson(const QJsonObject& json)
{
    TaskTensor t;
    t.name = json.value(QLatin1String("name")).toString();
    t.kind = json.value(QLatin1String("kind")).toString(QStringLiteral("tensor"));
    t.dtype = json.value(QLatin1String("dtype")).toString();
    t.generator = json.value(QLatin1String("generator")).toString();
    t.init = json.value(QLatin1String("init")).toString();
    t.shape = symbolicShapeFromJson(json.value(QLatin1String("shape")));
    t.full = shapeFromJson(json.value(QLatin1String("full")));
    t.smoke = shapeFromJson(json.value(QLatin1String("smoke")));
    t.value = json.value(QLatin1String("value"));
    t.buffer = json.value(QLatin1String("buffer")).toBool();
    return t;
}

std::optional<double> optionalNumber(const QJsonValue& value)
{
    if (value.isDouble())
        return value.toDouble();
    return std::nullopt;
}

const QString kAnalyze = QStringLiteral("analyze");

} // namespace

QString TaskOp::shortName() const
{
    const qsizetype colons = op.lastIndexOf(QLatin1String("::"));
    return colons < 0 ? op : op.mid(colons + 2);
}

TaskAnalysis TaskAnalysis::fromJson(const QJsonObject& response)
{
    TaskAnalysis a;
    a.scale = response.value(QLatin1String("scale")).toString();
    for (const QJsonValue& v : response.value(QLatin1String("ops")).toArray()) {
        const QJsonObject json = v.toObject();
        TaskOp op;
        op.index = json.value(QLatin1String("index")).toInt(int(a.ops.size()));
        op.op = json.value(QLatin1String("op")).toString();
        op.category = json.value(QLatin1String("category")).toString();
        for (const QJsonValue& input : json.value(QLatin1String("inputs")).toArray())
            op.inputs.append(shapeFromJson(input));
        op.output = shapeFromJson(json.value(QLatin1String("output")));
        op.flops = json.value(QLatin1String("flops")).toDouble();
        op.bytes = json.value(QLatin1String("bytes")).toDouble();
        op.line = json.value(QLatin1String("line")).toInt();
        a.ops.append(op);
    }
    a.outputShape = shapeFromJson(response.value(QLatin1String("output_shape")));
    a.flops = response.value(QLatin1String("flops")).toDouble();
    a.bytesUnfused = response.value(QLatin1String("bytes_unfused")).toDouble();
    a.bytesFused = response.value(QLatin1String("bytes_fused")).toDouble();
    const QJsonValue unfused = response.value(QLatin1String("intensity_unfused"));
    const QJsonValue fused = response.value(QLatin1String("intensity_fused"));
    a.intensityUnfused = unfused.isDouble() ? unfused.toDouble() : (a.bytesUnfused > 0 ? a.flops / a.bytesUnfused : 0);
    a.intensityFused = fused.isDouble() ? fused.toDouble() : (a.bytesFused > 0 ? a.flops / a.bytesFused : 0);
    a.opCount = response.value(QLatin1String("op_count")).toInt(int(a.ops.size()));
    return a;
}

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
    t.json = json;
    t.id = json.value(QLatin1String("id")).toString();
    t.level = json.value(QLatin1String("level")).toInt();
    t.number = json.value(QLatin1String("number")).toInt();
    t.title = json.value(QLatin1String("title")).toString();
    t.description = json.value(QLatin1String("description")).toString();
    t.source = json.value(QLatin1String("source")).toString();
    t.forward = json.value(QLatin1String("forward")).toString();
    t.path = json.value(QLatin1String("path")).toString();
    for (const QJsonValue& v : json.value(QLatin1String("dims")).toArray()) {
        const QJsonObject d = v.toObject();
        t.dims.append(TaskDim{d.value(QLatin1String("name")).toString(), qint64(d.value(QLatin1String("full")).toDouble()),
                              qint64(d.value(QLatin1String("smoke")).toDouble())});
    }
    for (const QJsonValue& v : json.value(QLatin1String("inputs")).toArray())
        t.inputs.append(tensorFromJson(v.toObject()));
    for (const QJsonValue& v : json.value(QLatin1String("params")).toArray())
        t.params.append(tensorFromJson(v.toObject()));
    const QJsonObject tolerance = json.value(QLatin1String("tolerance")).toObject();
    t.atol = optionalNumber(tolerance.value(QLatin1String("atol")));
    t.rtol = optionalNumber(tolerance.value(QLatin1String("rtol")));
    return t;
}

QString TaskLoadError::toString() const
{
    QString text = path;
    if (!field.isEmpty())
        text += (text.isEmpty() ? QString() : QStringLiteral(": ")) + field;
    return text + (text.isEmpty() ? QString() : QStringLiteral(": ")) + message;
}

namespace {
const QString kEagerSlot = QStringLiteral("eager");
}

TaskCatalog::TaskCatalog(QObject* parent)
    : QObject(parent)
    , m_jobs(new JobTracker(this))
{
}

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
        const QString reason = m_unavailableReason.isEmpty() ? tr("no worker to ask for the tasks") : m_unavailableReason;
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
        setState(m_tasks.isEmpty() ? State::Idle : State::Ready, m_tasks.isEmpty() ? QString() : tr("analysis cancelled"));
}

void TaskCatalog::sendTasksRequest()
{
    QJsonObject request{{QStringLiteral("type"), QStringLiteral("tasks")}};
    if (!m_tasksDir.isEmpty())
        request.insert(QStringLiteral("tasks_dir"), m_tasksDir);
    m_tasksRequest = m_supervisor->sendRequest(request, m_tasksTimeoutMs);
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
    QJsonObject request{{QStringLiteral("type"), kAnalyze},
                        {QStringLiteral("task"), m_analyzeTask},
                        {QStringLiteral("scale"), QStringLiteral("full")}};
    m_analyzeRequest = m_supervisor->sendRequest(request, m_analyzeTimeoutMs);
}

void TaskCatalog::finishAnalysis()
{
    m_analyzeRequest = 0;
    m_analyzeTask.clear();
    if (m_state == State::Analyzing)
        setState(State::Ready);
}

bool TaskCatalog::applyTasksResponse(const QJsonObject& response)
{
    if (!response.value(QLatin1String("ok")).toBool())
        return false;
    QList<TaskInfo> tasks;
    QHash<QString, int> index;
    for (const QJsonValue& v : response.value(QLatin1String("tasks")).toArray()) {
        TaskInfo task = TaskInfo::fromJson(v.toObject());
        if (task.id.isEmpty() || index.contains(task.id))
            continue;
        index.insert(task.id, int(tasks.size()));
        tasks.append(std::move(task));
    }
    QList<TaskLoadError> errors;
    for (const QJsonValue& v : response.value(QLatin1String("errors")).toArray()) {
        const QJsonObject e = v.toObject();
        errors.append(TaskLoadError{e.value(QLatin1String("path")).toString(), e.value(QLatin1String("field")).toString(),
                                    e.value(QLatin1String("message")).toString()});
    }
    m_tasks = std::move(tasks);
    m_index = std::move(index);
    m_loadErrors = std::move(errors);
    m_analyzed = 0;
    m_nextAnalyze = 0;
    Q_EMIT tasksReset();
    Q_EMIT progressChanged(m_analyzed, int(m_tasks.size()));
    return true;
}

bool TaskCatalog::applyAnalyzeResponse(const QJsonObject& response)
{
    const int i = indexOf(response.value(QLatin1String("task")).toString());
    if (i < 0)
        return false;
    TaskInfo& task = m_tasks[i];
    const bool wasPending = task.analysisState == TaskInfo::Analysis::Pending;
    if (response.value(QLatin1String("ok")).toBool()) {
        task.analysis = TaskAnalysis::fromJson(response);
        task.analysisJson = response;
        task.analysisState = TaskInfo::Analysis::Done;
        task.analysisError.clear();
    } else {
        task.analysis = TaskAnalysis();
        task.analysisState = TaskInfo::Analysis::Failed;
        task.analysisError = ProtocolCodec::errorCode(response) + QStringLiteral(": ") + ProtocolCodec::errorMessage(response);
    }
    if (wasPending)
        ++m_analyzed;
    Q_EMIT taskUpdated(task.id);
    Q_EMIT progressChanged(m_analyzed, int(m_tasks.size()));
    return true;
}

void TaskCatalog::onResponse(qint64 id, const QJsonObject& response)
{
    if (id == 0)
        return;
    // Slots connected to the signals below may call load() or cancel(): then this load is over.
    const int generation = m_generation;
    if (id == m_tasksRequest) {
        m_tasksRequest = 0;
        if (!applyTasksResponse(response)) {
            setState(State::Failed, tr("the worker refused the tasks request: %1")
                                        .arg(ProtocolCodec::errorMessage(response)));
            return;
        }
        if (generation != m_generation)
            return;
        setState(State::Analyzing);
        if (generation == m_generation)
            sendNextAnalyze();
    } else if (id == m_analyzeRequest) {
        m_analyzeRequest = 0;
        // The worker echoes the task, but a response without one still belongs to the request.
        QJsonObject named = response;
        if (!named.contains(QLatin1String("task")))
            named.insert(QStringLiteral("task"), m_analyzeTask);
        applyAnalyzeResponse(named);
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
        if (status != FailureStatus::Cancelled)
            setState(State::Failed, tr("could not get the tasks from the worker (%1)").arg(text));
        return;
    }
    if (id != m_analyzeRequest)
        return;
    m_analyzeRequest = 0;
    if (status == FailureStatus::Cancelled)
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
    if (status == FailureStatus::StartFailed) {
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
        const QJsonObject gpu = run.config.value(QLatin1String("gpu")).toObject();
        if (gpu.value(QLatin1String("name")).toString() != gpuName)
            continue;
        for (const EvaluationRecord& e : store.evaluations(run.id)) {
            const QJsonValue mean = e.result.value(QLatin1String("timing"))
                                        .toObject()
                                        .value(QLatin1String("reference"))
                                        .toObject()
                                        .value(QLatin1String("mean_ms"));
            if (!mean.isDouble() || !(mean.toDouble() > 0))
                continue;
            const auto it = times.constFind(e.task);
            if (it != times.cend()) {
                const bool newer = e.created > it->measured || (e.created == it->measured && e.id > evaluationOf.value(e.task));
                if (!newer)
                    continue;
            }
            times.insert(e.task, EagerTime{mean.toDouble(), run.id, e.created});
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
        m_eagerError = gpuName.isEmpty() ? tr("no GPU to look up eager times for")
                                         : tr("no run database at %1").arg(databasePath);
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
