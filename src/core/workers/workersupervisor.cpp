#include "workersupervisor.h"

#include "core/protocol/protocolnames.h"
#include "core/protocol/workerrequests.h"
#include "core/protocol/workerresponses.h"
#include "core/workers/hostlimitdefaults.h"
#include "core/workers/workerlauncher.h"

#include <QEventLoop>
#include <QJsonDocument>
#include <QJsonValue>
#include <QScopeGuard>

#include <csignal>
#include <sys/types.h>
#include <unistd.h>
#include <utility>

namespace kwb {

namespace {

QString seconds(int ms)
{
    return QString::number(ms / 1000.0, 'g', 4) + QStringLiteral(" s");
}

// The request types the supervisor treats apart, by their one spelling (protocolnames.h).
const QString kHelloType = QLatin1String(ProtocolNames::Request::kHello);
const QString kWarmType = QLatin1String(ProtocolNames::Request::kWarm);
const QString kEvaluateType = QLatin1String(ProtocolNames::Request::kEvaluate);
const QString kShutdownType = QLatin1String(ProtocolNames::Request::kShutdown);
const QLatin1String kIdField(ProtocolNames::Field::kId);

} // namespace

WorkerSupervisor::WorkerSupervisor(QObject* parent)
    : QObject(parent)
    , m_spares(&m_launch, this, [this] { return idle(); })
{
    m_requestTimer.setSingleShot(true);
    m_requestTimer.setTimerType(Qt::PreciseTimer); // a limit must not fire early (coarse timers may by 5 %)
    m_stopTimer.setSingleShot(true);
    m_stopTimer.setTimerType(Qt::PreciseTimer); // the grace period is a promise too
    m_limitTimer.setInterval(kLimitPollMs);
    connect(&m_requestTimer, &QTimer::timeout, this, &WorkerSupervisor::onRequestTimeout);
    connect(&m_stopTimer, &QTimer::timeout, this, &WorkerSupervisor::onStopTimer);
    connect(&m_limitTimer, &QTimer::timeout, this, &WorkerSupervisor::onLimitTimer);
    m_exitLockTimer.setSingleShot(true);
    connect(&m_exitLockTimer, &QTimer::timeout, this, &WorkerSupervisor::sendRetireEof);
    connect(&m_leaving, &LeavingWorkers::workerFinished, this, [this](qint64 pid, const QString& description) {
        Q_EMIT workerFinished(pid, description);
        scheduleDispatch();
    });
}

WorkerSupervisor::~WorkerSupervisor()
{
    // Workers on their way out: EOF (where it still waited for the lock), a moment to end, then
    // SIGKILL; the spares at once (they hold no request).
    m_leaving.endAll();
    m_spares.endAll(m_killGraceMs);
    // The retiring worker's lock (retireWorker) goes once it has ended, whichever way it ends here.
    const auto releaseExitLock = qScopeGuard([this] {
        if (m_exitLockFd >= 0)
            ::close(m_exitLockFd);
        m_exitLockFd = -1;
    });
    if (!m_process)
        return;
    QProcess* process = m_process;
    m_process = nullptr;
    process->disconnect(this);
    if (process->state() != QProcess::NotRunning) {
        // EOF first: a worker between requests ends cleanly and releases its CUDA context.
        process->closeWriteChannel();
        if (!process->waitForFinished(m_state == WorkerState::Idle ? 1000 : 0)) {
            signalWorker(process, SIGKILL);
            process->waitForFinished(m_killGraceMs);
        }
    }
    delete process;
}

void WorkerSupervisor::setProgram(const QString& program, const QStringList& arguments)
{
    m_launch.program = program;
    m_launch.arguments = arguments;
    m_spares.discardAll(); // started as another program
}

void WorkerSupervisor::setProcessEnvironment(const QProcessEnvironment& environment)
{
    m_launch.environment = environment;
    m_spares.discardAll(); // it may see another GPU
}

void WorkerSupervisor::setLimits(const WorkerLimits& limits)
{
    const bool sandboxChanged = limits.osSandbox != m_launch.limits.osSandbox;
    m_launch.limits = limits;
    if (sandboxChanged)
        m_spares.discardAll(); // started in the other way
}

void WorkerSupervisor::setBubblewrapProgram(const QString& program)
{
    m_launch.bubblewrap = program;
    m_spares.discardAll();
}

void WorkerSupervisor::setTarget(const WorkerTarget& target)
{
    m_launch.target = target;
    m_spares.discardAll(); // it runs elsewhere
}

void WorkerSupervisor::setIsolation(Isolation isolation)
{
    // A queue passes all its settings again whenever one changes: the same isolation keeps what
    // this supervisor has learnt of its workers.
    if (isolation != m_isolation)
        m_spares.setRetiringWorkers(false);
    m_isolation = isolation;
    m_spares.setFreshWorkers(isolation == Isolation::FreshPerRequest);
}

qint64 WorkerSupervisor::spareWorkerPid() const
{
    const SpareWorker* next = m_spares.next();
    return next ? next->pid : 0;
}

bool WorkerSupervisor::spareWorkerReady() const
{
    const SpareWorker* next = m_spares.next();
    return next && next->state == WorkerState::Idle;
}

bool WorkerSupervisor::spareWorkerWarmed() const
{
    const SpareWorker* next = m_spares.next();
    return next && next->warmed();
}

qint64 WorkerSupervisor::sendRequest(const QJsonObject& request, int timeoutMs)
{
    const qint64 id = ++m_nextId;
    Pending pending;
    pending.id = id;
    pending.type = WorkerRequests::typeOf(request);
    pending.timeoutMs = timeoutMs < 0 ? m_defaultTimeoutMs : timeoutMs;
    if (pending.type.isEmpty()) {
        failLater(id, wireName(EvaluationStatus::BadRequest), QStringLiteral("the request has no \"type\""));
        return id;
    }
    QJsonObject withId = request;
    withId.insert(kIdField, id);
    QString error;
    pending.line = ProtocolCodec::encodeRequest(withId, &error);
    if (pending.line.isEmpty()) {
        failLater(id, wireName(EvaluationStatus::BadRequest), error);
        return id;
    }
    m_queue.append(pending);
    m_spares.stopIdleWarm(); // not idle any more: a warm now would only delay this request's timing
    // An evaluation queued with no spare alive (the first, or after every spare failed): the first
    // spare starts now, beside the worker that will take this one, not once that worker has
    // answered hello and been sent it (~0.5 s later).
    if (pending.type == kEvaluateType)
        m_spares.expect();
    scheduleDispatch();
    return id;
}

bool WorkerSupervisor::cancelRequest(qint64 id)
{
    if (m_active && m_active->request.id == id && !m_active->answered) {
        abortWorker(wireName(EvaluationStatus::Cancelled), QStringLiteral("cancelled while running"));
        return true;
    }
    for (qsizetype i = 0; i < m_queue.size(); ++i) {
        if (m_queue.at(i).id == id) {
            m_queue.removeAt(i);
            failLater(id, wireName(EvaluationStatus::Cancelled), QStringLiteral("cancelled before it started"));
            return true;
        }
    }
    return false;
}

void WorkerSupervisor::cancelAll()
{
    const QList<Pending> queued = m_queue;
    m_queue.clear();
    for (const Pending& pending : queued)
        failLater(pending.id, wireName(EvaluationStatus::Cancelled), QStringLiteral("cancelled before it started"));
    if (m_active && !m_active->answered)
        abortWorker(wireName(EvaluationStatus::Cancelled), QStringLiteral("cancelled while running"));
}

void WorkerSupervisor::stopWorker()
{
    m_spares.discardAll();
    if (m_process && m_state == WorkerState::Idle)
        retireWorker();
}

void WorkerSupervisor::failLater(qint64 id, const QString& status, const QString& message)
{
    // Queued, so that a caller connecting after sendRequest() still sees the failure, and a slot
    // that sends or cancels does not re-enter the supervisor.
    QMetaObject::invokeMethod(
        this, [this, id, status, message] { Q_EMIT requestFailed(id, status, message); }, Qt::QueuedConnection);
}

void WorkerSupervisor::scheduleDispatch()
{
    if (m_dispatchScheduled)
        return;
    m_dispatchScheduled = true;
    QMetaObject::invokeMethod(this, &WorkerSupervisor::dispatch, Qt::QueuedConnection);
}

void WorkerSupervisor::dispatch()
{
    m_dispatchScheduled = false;
    if (idle() && !m_spares.idleWarmArmed())
        m_spares.armIdleWarm(); // every way to idle (an answer, a failure, a worker's end) passes here
    // A worker on its way out still holds the GPU: the next request waits until it has ended
    // (retireWorker), unless it was handed off (handOffLeavingWorker); a request run again after
    // an out-of-memory beside one waits for every leaving worker to be gone.
    if (m_active || m_queue.isEmpty() || m_state == WorkerState::Stopping)
        return;
    if (m_queue.first().alone && !m_leaving.isEmpty())
        return;
    m_spares.stopIdleWarm();
    m_active = Active();
    m_active->request = m_queue.takeFirst();
    m_stderr.clear();
    m_stderrDropped = 0;
    m_requestTimer.start(m_active->request.timeoutMs);
    // Not for a remote worker: the started process is ssh or srun, whose /proc says nothing of it.
    if (!m_launch.target.isRemote() && m_limitPolling)
        m_limitTimer.start();
    Q_EMIT requestStarted(m_active->request.id);
    if (!m_active)
        return; // cancelled from a slot
    if (m_state == WorkerState::None && !m_spares.isEmpty())
        promoteSpare();
    else if (m_state == WorkerState::None)
        startWorker();
    else if (m_state == WorkerState::Idle)
        writeActiveRequest();
}

void WorkerSupervisor::startWorker()
{
    if (m_launch.program.isEmpty()) {
        const qint64 id = m_active->request.id;
        m_requestTimer.stop();
        m_active.reset();
        emitStderr(id);
        failLater(id, wireName(EvaluationStatus::StartFailed), QStringLiteral("no worker program was set"));
        scheduleDispatch();
        return;
    }
    QProcess* process = createWorkerProcess(m_launch, this);
    m_process = process;
    m_connectionLost = false;
    m_state = WorkerState::Starting;
    m_stopStage = StopStage::None;
    m_pid = 0;
    m_hello = HelloInfo();
    m_decoder.reset();
    connectWorker(process);
    process->start(QIODevice::ReadWrite);
}

void WorkerSupervisor::connectWorker(QProcess* process)
{
    // Each connection names its process, so a late signal of a replaced worker is recognised.
    connect(process, &QProcess::started, this, [this, process] { onStarted(process); });
    connect(process, &QProcess::readyReadStandardOutput, this, [this, process] { onStandardOutput(process); });
    connect(process, &QProcess::readyReadStandardError, this, [this, process] { onStandardError(process); });
    connect(process, &QProcess::errorOccurred, this,
            [this, process](QProcess::ProcessError error) { onErrorOccurred(process, error); });
    connect(process, &QProcess::finished, this, [this, process](int exitCode, QProcess::ExitStatus exitStatus) {
        onFinished(process, exitCode, exitStatus);
    });
}

void WorkerSupervisor::replaceWarmingWorker()
{
    // As a spare with that answer is dropped before it takes over. It held at most the quiet
    // lock's shared side, which goes with the process; the cold worker's timing waits for that.
    QProcess* process = m_process;
    m_process = nullptr;
    releaseProcess();
    dropWorker(process, this);
    if (m_active)
        startWorker();
    else
        scheduleDispatch();
}

void WorkerSupervisor::promoteSpare()
{
    const SpareWorker spare = m_spares.takeNext();
    QProcess* process = spare.process;
    process->readAllStandardError(); // from before this request: nobody's
    m_process = process;
    m_pid = spare.pid;
    m_stopStage = StopStage::None;
    m_decoder = spare.decoder;
    m_handshakeId = spare.handshakeId;
    m_warmId = spare.warmId;
    m_hello = spare.hello;
    connectWorker(process);
    m_state = spare.state;
    // Still starting or warming: the request waits for its hello or warm answer.
    if (m_state == WorkerState::Idle)
        workerReady();
}

void WorkerSupervisor::workerReady()
{
    const QProcess* process = m_process;
    Q_EMIT workerAvailable(m_pid, m_hello);
    if (m_active && m_process == process && m_state == WorkerState::Idle)
        writeActiveRequest();
}

void WorkerSupervisor::onStarted(QProcess* process)
{
    if (process != m_process || m_state != WorkerState::Starting)
        return;
    m_pid = process->processId();
    m_state = WorkerState::Handshaking;
    m_handshakeId = m_spares.nextId(QStringLiteral("kwb-hello"));
    QJsonObject hello = WorkerRequests::hello();
    hello.insert(kIdField, m_handshakeId);
    process->write(ProtocolCodec::encodeRequest(hello));
}

void WorkerSupervisor::writeActiveRequest()
{
    Q_ASSERT(m_active && m_process && m_state == WorkerState::Idle);
    m_state = WorkerState::Busy;
    m_active->sent = true;
    m_process->write(m_active->request.line);
    m_active->besideLeaving = !m_leaving.isEmpty();
    if (!m_active->besideLeaving)
        m_active->request.line.clear(); // up to 16 MiB: QProcess has its own copy now
    // This worker is retired after the evaluation (fresh workers; retiring ones after any
    // request, a compile among them): its successor loads meanwhile.
    if (m_active->request.type == kEvaluateType || m_spares.retiringWorkers())
        m_spares.topUp();
}

void WorkerSupervisor::onStandardOutput(QProcess* process)
{
    if (process != m_process)
        return;
    feedDecoder(process->readAllStandardOutput());
}

void WorkerSupervisor::feedDecoder(const QByteArray& bytes)
{
    if (bytes.isEmpty() || m_state == WorkerState::Stopping || m_decoder.hasFailed())
        return;
    m_decoder.feed(bytes);
    const QProcess* feeding = m_process;
    // Lines decoded before a broken one are still good answers.
    for (const QJsonObject& response : m_decoder.takeResponses()) {
        handleResponse(response);
        if (m_state == WorkerState::Stopping || m_process != feeding)
            return;
    }
    if (!m_decoder.hasFailed())
        return;
    if (m_state == WorkerState::Warming)
        replaceWarmingWorker(); // a warm answer that is not one
    else
        abortWorker(wireName(EvaluationStatus::ProtocolError), m_decoder.errorString());
}

void WorkerSupervisor::handleResponse(const QJsonObject& response)
{
    const ResponseHeader header = decodeHeader(response);
    const QJsonValue id = header.id;
    if (m_state == WorkerState::Handshaking) {
        if (id != QJsonValue(m_handshakeId)) {
            abortWorker(wireName(EvaluationStatus::ProtocolError),
                        QStringLiteral("the worker answered something else before hello"));
            return;
        }
        const QString refusal = ProtocolCodec::checkHello(response);
        if (!refusal.isEmpty()) {
            abortWorker(wireName(EvaluationStatus::ProtocolError), refusal);
            return;
        }
        m_hello = decodeHello(response);
        m_state = WorkerState::Idle;
        m_pid = workerProcessId(m_process); // it runs now: in the sandbox, bwrap's child
        workerReady();
        return;
    }
    if (m_state == WorkerState::Warming) {
        // A spare taken over while warming: its warm answer, then the request.
        const std::optional<HelloInfo> hello = helloAfterWarm(m_hello, response, m_warmId);
        if (!hello) {
            replaceWarmingWorker();
            return;
        }
        m_hello = *hello;
        m_state = WorkerState::Idle;
        workerReady();
        return;
    }
    if (m_state == WorkerState::Busy && m_active && m_active->sent && !m_active->answered) {
        if (id == QJsonValue(m_active->request.id)) {
            acceptResponse(response);
            return;
        }
        if (id.isNull()) {
            // The worker could not read our line; it goes on reading, so only this request fails.
            const qint64 activeId = m_active->request.id;
            m_requestTimer.stop();
            m_active.reset();
            m_state = WorkerState::Idle;
            emitStderr(activeId);
            Q_EMIT requestFailed(activeId, wireName(EvaluationStatus::ProtocolError),
                                 QStringLiteral("the worker could not read the request: %1 (%2)")
                                     .arg(header.errorMessage, header.errorCode));
            scheduleDispatch();
            return;
        }
    }
    // An answer nobody asked for means the stream is out of step with the requests.
    abortWorker(wireName(EvaluationStatus::ProtocolError),
                QStringLiteral("the worker sent a response with unexpected id %1")
                    .arg(QString::fromUtf8(QJsonDocument(QJsonObject{{kIdField, id}}).toJson(QJsonDocument::Compact))));
}

void WorkerSupervisor::acceptResponse(const QJsonObject& response)
{
    m_requestTimer.stop();
    m_active->answered = true;
    m_active->response = decodeWorkerResponse(response); // the one decode of an answer
    // Delivered one event-loop turn later: what the worker wrote to stderr just before its answer
    // is usually readable already, and its pipe is read in this turn, after the response's.
    const qint64 id = m_active->request.id;
    QMetaObject::invokeMethod(
        this,
        [this, id] {
            if (m_active && m_active->request.id == id && m_active->answered)
                completeActive();
        },
        Qt::QueuedConnection);
}

void WorkerSupervisor::completeActive()
{
    const qint64 id = m_active->request.id;
    const WorkerResponse response = m_active->response;
    const bool evaluate = m_active->request.type == kEvaluateType;
    const EvaluationResult result = response.evaluation.value_or(EvaluationResult());
    if (m_process)
        onStandardError(m_process); // what Qt has buffered belongs to this request too
    if (evaluate && m_active->besideLeaving && result.outOfDeviceMemory()) {
        // Its allocation may have failed for the leaving worker's memory, which is the machine's
        // doing: the same request again on a fresh worker, once no worker is leaving.
        Pending again = m_active->request;
        again.alone = true;
        m_active.reset();
        m_queue.prepend(again);
        if (m_state == WorkerState::Busy)
            m_state = WorkerState::Idle;
        m_stderr.clear();
        m_stderrDropped = 0;
        retireWorker();
        scheduleDispatch();
        return;
    }
    m_active.reset();
    if (m_state == WorkerState::Busy)
        m_state = WorkerState::Idle;
    emitStderr(id);

    // The worker says it cannot take another request and exits after answering.
    const bool unhealthy = !response.header.workerHealthy;
    m_answeringPid = m_pid;
    noteRetiringWorker(response);
    if (m_state == WorkerState::Idle && (unhealthy || (evaluate && m_isolation == Isolation::FreshPerRequest)))
        if (!handOffLeavingWorker(result))
            retireWorker();
    scheduleDispatch();
    Q_EMIT responseAvailable(id, response);
}

void WorkerSupervisor::onStandardError(QProcess* process)
{
    if (process != m_process || !process)
        return;
    const QByteArray bytes = process->readAllStandardError();
    if (m_active)
        appendStderr(bytes);
    // Between requests nobody owns the output; reading it still matters, so that a chatty worker
    // never blocks on a full pipe.
}

void WorkerSupervisor::appendStderr(const QByteArray& bytes)
{
    if (bytes.size() >= m_stderrLimit) {
        m_stderrDropped += m_stderr.size() + (bytes.size() - m_stderrLimit);
        m_stderr = bytes.right(m_stderrLimit);
        return;
    }
    m_stderr.append(bytes);
    if (m_stderr.size() > m_stderrLimit) {
        const qsizetype excess = m_stderr.size() - m_stderrLimit;
        m_stderrDropped += excess;
        m_stderr.remove(0, excess);
    }
}

void WorkerSupervisor::emitStderr(qint64 id)
{
    const QByteArray tail = m_stderr;
    const qint64 dropped = m_stderrDropped;
    m_stderr.clear();
    m_stderrDropped = 0;
    Q_EMIT stderrAvailable(id, tail, dropped);
}

void WorkerSupervisor::onRequestTimeout()
{
    if (!m_active)
        return;
    const QString limit = seconds(m_active->request.timeoutMs);
    // `timeout` is a verdict on the request (a candidate that runs too long); a worker that never
    // got as far as answering hello has not started, whatever the request was.
    if (beforeReady(m_state))
        abortWorker(wireName(EvaluationStatus::StartFailed),
                    QStringLiteral("the worker did not answer %1 within the wall-clock limit of %2")
                        .arg(m_state == WorkerState::Warming ? kWarmType : kHelloType, limit));
    else
        abortWorker(wireName(EvaluationStatus::Timeout),
                    QStringLiteral("no response within the wall-clock limit of %1").arg(limit));
}

void WorkerSupervisor::onLimitTimer()
{
    if (!m_active) {
        m_limitTimer.stop();
        return;
    }
    if (!m_process || m_active->answered || m_state == WorkerState::Starting || m_state == WorkerState::Stopping)
        return;
    // The started process and everything under it: bwrap and the worker, and anything the worker
    // started.
    // Children started by other threads than a process's main one are looked for every 10th time.
    const ProcessTreeUsage usage = processTreeUsage(m_process->processId(), ++m_limitPolls % 10 == 1);
    if (!usage.found)
        return;
    const qint64 memoryLimit = m_launch.limits.effectiveHostMemory();
    const int threadLimit = m_launch.limits.effectiveHostThreads();
    QString over;
    if (usage.peakBytes > memoryLimit)
        over = QStringLiteral("host memory %1 over the limit of %2")
                   .arg(formatBytes(usage.peakBytes), formatBytes(memoryLimit));
    else if (usage.threads > threadLimit)
        over = QStringLiteral("host threads %1 over the limit of %2").arg(usage.threads).arg(threadLimit);
    if (over.isEmpty())
        return;
    // Before hello (or warm) the worker itself is too big for the limit: nothing of a candidate ran yet.
    if (beforeReady(m_state))
        killWorker(wireName(EvaluationStatus::StartFailed),
                   QStringLiteral("the worker went over its limits before answering %1: %2")
                       .arg(m_state == WorkerState::Warming ? kWarmType : kHelloType, over),
                   usage.pids);
    else
        killWorker(wireName(EvaluationStatus::ResourceLimit), over, usage.pids);
}

void WorkerSupervisor::killWorker(const QString& status, const QString& message, const QList<qint64>& tree)
{
    m_requestTimer.stop();
    m_limitTimer.stop();
    if (m_active && !m_active->answered && m_active->failStatus.isEmpty()) {
        m_active->failStatus = status;
        m_active->failMessage = message;
    }
    if (!m_process)
        return;
    m_state = WorkerState::Stopping;
    m_stopStage = StopStage::KillAtOnce;
    m_stopTimer.stop();
    // The worker first (in the sandbox it is bwrap's child), then what the started process holds.
    for (qsizetype i = tree.size() - 1; i >= 1; --i)
        ::kill(pid_t(tree.at(i)), SIGKILL);
    m_process->kill();
}

void WorkerSupervisor::abortWorker(const QString& status, const QString& message)
{
    m_requestTimer.stop();
    // An answered request keeps its answer even if the worker misbehaves right after it.
    if (m_active && !m_active->answered && m_active->failStatus.isEmpty()) {
        m_active->failStatus = status;
        m_active->failMessage = message;
    }
    if (!m_process) {
        // Nothing to end (the worker had not been started): fail right away.
        if (m_active && !m_active->answered) {
            const Active active = *m_active;
            m_active.reset();
            emitStderr(active.request.id);
            failLater(active.request.id, active.failStatus, active.failMessage);
            scheduleDispatch();
        }
        return;
    }
    if (m_state == WorkerState::Stopping && m_stopStage >= StopStage::Terminate)
        return;
    m_state = WorkerState::Stopping;
    m_stopStage = StopStage::Terminate;
    signalWorker(m_process, SIGTERM);
    m_stopTimer.start(m_killGraceMs);
}

void WorkerSupervisor::noteRetiringWorker(const WorkerResponse& response)
{
    // An answer's library was loaded in the worker, or a sticky CUDA error: in reuse mode its
    // successors start ahead from now on (one spare, sparepool.h), since KernelBench-format answers
    // retire every worker they run in.
    if (!response.header.workerHealthy)
        expectRetiringWorkers();
}

void WorkerSupervisor::expectRetiringWorkers()
{
    if (m_isolation != Isolation::ReuseWhileHealthy || m_spares.retiringWorkers())
        return;
    m_spares.setRetiringWorkers(true);
    m_spares.topUp(); // the first successor starts now (beside a leaving worker, where one leaves)
}

bool WorkerSupervisor::handOffLeavingWorker(const EvaluationResult& answer)
{
    if (m_launch.target.isRemote() || !m_leaving.mayTake(m_process, answer))
        return false;
    const qint64 pid = m_pid;
    m_leaving.take(detachProcess(), pid, m_killGraceMs);
    return true;
}

void WorkerSupervisor::retireWorker()
{
    if (!m_process || m_state == WorkerState::Stopping)
        return;
    m_state = WorkerState::Stopping;
    m_stopStage = StopStage::EndOfInput;
    sendRetireEof();
}

void WorkerSupervisor::sendRetireEof()
{
    if (!m_process || m_state != WorkerState::Stopping || m_stopStage != StopStage::EndOfInput ||
        m_stopTimer.isActive())
        return;
    const QString lock = m_launch.target.isRemote() ? QString() : quietLockOf(m_process);
    if (!lock.isEmpty() && m_exitLockFd < 0) {
        m_exitLockFd = takeQuietLockShared(lock);
        if (m_exitLockFd < 0) {
            m_exitLockTimer.start(LeavingWorkers::kExitLockPollMs);
            return;
        }
    }
    m_process->closeWriteChannel(); // EOF: the protocol's way to end a worker with exit code 0
    m_stopTimer.start(m_killGraceMs);
}

void WorkerSupervisor::onStopTimer()
{
    if (!m_process)
        return;
    if (m_stopStage == StopStage::EndOfInput) {
        m_stopStage = StopStage::Terminate;
        signalWorker(m_process, SIGTERM);
        m_stopTimer.start(m_killGraceMs);
    } else if (m_stopStage == StopStage::Terminate) {
        // A kernel stuck on the GPU or a worker ignoring SIGTERM: nothing is left to ask nicely.
        m_stopStage = StopStage::Kill;
        signalWorker(m_process, SIGKILL);
    }
}

void WorkerSupervisor::onErrorOccurred(QProcess* process, QProcess::ProcessError error)
{
    if (process != m_process || error != QProcess::FailedToStart)
        return; // other errors are followed by finished(), which handles them
    const QString message =
        QStringLiteral("could not start the worker %1: %2").arg(m_launch.program, process->errorString());
    const qint64 pid = m_pid;
    releaseProcess();
    m_requestTimer.stop();
    if (m_active) {
        const qint64 id = m_active->request.id;
        const QString status =
            m_active->failStatus.isEmpty() ? wireName(EvaluationStatus::StartFailed) : m_active->failStatus;
        m_active.reset();
        emitStderr(id);
        Q_EMIT requestFailed(id, status, message);
    }
    Q_EMIT workerFinished(pid, message);
    scheduleDispatch();
}

void WorkerSupervisor::onFinished(QProcess* process, int exitCode, QProcess::ExitStatus exitStatus)
{
    if (process != m_process)
        return;
    // ssh says 255 when the connection failed or broke (the remote script's own codes stay below).
    const bool connectionLost = m_launch.target.kind == WorkerTarget::Kind::Ssh && exitStatus == QProcess::NormalExit &&
                                exitCode == kSshConnectionLost;
    m_connectionLost = connectionLost;
    unwrapSignal(process, &exitCode, &exitStatus);
    // Whatever is still buffered was written before the worker ended: a worker that answers and
    // then exits (worker_healthy: false) must not be taken for a crash.
    feedDecoder(process->readAllStandardOutput());
    onStandardError(process);

    const MemoryCgroupEnding cgroupEnding = memoryCgroupEndingOf(process);
    const WorkerState stateAtEnd = m_state;
    const StopStage stopStage = m_stopStage;
    const qint64 pid = m_pid;
    QString description = exitDescription(exitCode, exitStatus);
    if (exitStatus == QProcess::CrashExit && stopStage == StopStage::Kill)
        description += QStringLiteral(" after ignoring SIGTERM for %1").arg(seconds(m_killGraceMs));
    else if (exitStatus == QProcess::CrashExit && stopStage == StopStage::Terminate && exitCode == SIGTERM)
        description = QStringLiteral("terminated (SIGTERM)");
    releaseProcess();

    if (m_active) {
        const Active active = *m_active;
        m_active.reset();
        m_requestTimer.stop();
        const qint64 id = active.request.id;
        const QByteArray stderrTail = m_stderr;
        emitStderr(id);
        // A remote worker enforces its host limits itself (hostlimitdefaults.h); a local one's
        // SIGKILL is the kernel's at its limit where its memory cgroup proves it (memorycgroup.h):
        // the cgroup reached the worker's limit and the OOM killer ended a process of it.
        QString overHostLimit;
        if (m_launch.target.isRemote() && exitStatus == QProcess::NormalExit && exitCode == kWorkerExitHostLimit)
            overHostLimit = hostLimitMessage(stderrTail);
        else if (exitStatus == QProcess::CrashExit && stopStage == StopStage::None && exitCode == SIGKILL &&
                 cgroupEnding.killedAtLimit())
            overHostLimit =
                QStringLiteral("host memory over the limit of %1%2: the kernel's OOM killer ended the worker in its "
                               "memory cgroup (%3)")
                    .arg(formatBytes(m_launch.limits.effectiveHostMemory()),
                         cgroupEnding.peakBytes > 0
                             ? QStringLiteral(" (peak %1)").arg(formatBytes(cgroupEnding.peakBytes))
                             : QString(),
                         cgroupEnding.evidence);
        if (active.answered) {
            noteRetiringWorker(active.response); // it exited before its answer was delivered
            Q_EMIT responseAvailable(id, active.response);
        } else if (!active.failStatus.isEmpty()) {
            Q_EMIT requestFailed(id, active.failStatus, active.failMessage + QStringLiteral("; worker ") + description);
        } else if (!overHostLimit.isEmpty()) {
            // As locally: before hello the worker itself is too big, nothing of a candidate ran.
            if (beforeReady(stateAtEnd))
                Q_EMIT requestFailed(
                    id, wireName(EvaluationStatus::StartFailed),
                    QStringLiteral("the worker went over its limits before answering hello: %1 (on %2)")
                        .arg(overHostLimit, m_launch.target.location()));
            else
                Q_EMIT requestFailed(id, wireName(EvaluationStatus::ResourceLimit),
                                     QStringLiteral("%1 (on %2)").arg(overHostLimit, m_launch.target.location()));
        } else if (beforeReady(stateAtEnd)) {
            QString message = QStringLiteral("the worker %1 before answering %2")
                                  .arg(description, stateAtEnd == WorkerState::Warming ? kWarmType : kHelloType);
            const QString why = lastLine(stderrTail);
            if (!why.isEmpty())
                message += QStringLiteral(": ") + why;
            Q_EMIT requestFailed(id, wireName(EvaluationStatus::StartFailed), message);
        } else if (active.request.type == kShutdownType && exitStatus == QProcess::NormalExit && exitCode == 0) {
            // The worker's way to answer `shutdown` is to exit with code 0.
            Q_EMIT responseAvailable(
                id, decodeWorkerResponse(QJsonObject{{kIdField, id},
                                                     {QLatin1String(ProtocolNames::Field::kType), kShutdownType},
                                                     {QLatin1String(ProtocolNames::Key::kOk), true}}));
        } else if (connectionLost) {
            QString message = QStringLiteral("lost the connection to %1 during the request (ssh exited with code %2)")
                                  .arg(m_launch.target.host)
                                  .arg(kSshConnectionLost);
            if (const QString why = lastLine(stderrTail); !why.isEmpty())
                message += QStringLiteral(": ") + why;
            Q_EMIT requestFailed(id, wireName(EvaluationStatus::WorkerLost), message);
        } else if (exitStatus == QProcess::CrashExit && stopStage == StopStage::None && endedFromOutside(exitCode)) {
            // The supervisor sent nothing (failStatus is empty and it was not stopping the worker),
            // and where the worker had a memory cgroup it shows no kill at its own limit.
            const QString who =
                !cgroupEnding.read ? QStringLiteral("the OOM killer or another process")
                : cgroupEnding.oomKills > 0
                    ? QStringLiteral("the machine's OOM killer, below the worker's own memory limit: %1")
                          .arg(cgroupEnding.evidence)
                    : QStringLiteral("another process: its memory cgroup shows no OOM kill, %1")
                          .arg(cgroupEnding.evidence);
            Q_EMIT requestFailed(
                id, wireName(EvaluationStatus::WorkerLost),
                QStringLiteral("the worker was %1 during the request, not by kwb (%2): a failure of the machine, "
                               "not of the candidate")
                    .arg(description, who));
        } else {
            Q_EMIT requestFailed(id, wireName(EvaluationStatus::Crashed),
                                 QStringLiteral("the worker %1 during the request").arg(description));
        }
    }
    Q_EMIT workerFinished(pid, description);
    scheduleDispatch();
}

QProcess* WorkerSupervisor::detachProcess()
{
    m_stopTimer.stop();
    m_exitLockTimer.stop();
    if (m_exitLockFd >= 0) { // the retired worker has ended (or is no longer ours): a timing may start
        ::close(m_exitLockFd);
        m_exitLockFd = -1;
    }
    QProcess* process = m_process;
    if (process)
        process->disconnect(this);
    m_process = nullptr;
    m_pid = 0;
    m_state = WorkerState::None;
    m_stopStage = StopStage::None;
    m_hello = HelloInfo();
    m_warmId.clear();
    return process;
}

void WorkerSupervisor::releaseProcess()
{
    // Never delete a QProcess inside one of its own signals: we are in one right now.
    if (QProcess* process = detachProcess())
        process->deleteLater();
}

WorkerSupervisor::Outcome WorkerSupervisor::run(const QJsonObject& request, int timeoutMs)
{
    Outcome outcome;
    bool done = false;
    QEventLoop loop;
    const qint64 id = sendRequest(request, timeoutMs);
    const auto finish = [&] {
        done = true;
        loop.quit();
    };
    const QMetaObject::Connection onResponse =
        connect(this, &WorkerSupervisor::responseAvailable, &loop, [&](qint64 doneId, const WorkerResponse& response) {
            if (doneId != id)
                return;
            outcome.response = response;
            finish();
        });
    const QMetaObject::Connection onFailure =
        connect(this, &WorkerSupervisor::requestFailed, &loop,
                [&](qint64 doneId, const QString& status, const QString& message) {
                    if (doneId != id)
                        return;
                    outcome.status = status;
                    outcome.message = message;
                    finish();
                });
    const QMetaObject::Connection onStderr = connect(this, &WorkerSupervisor::stderrAvailable, &loop,
                                                     [&](qint64 doneId, const QByteArray& tail, qint64 dropped) {
                                                         if (doneId != id)
                                                             return;
                                                         outcome.stderrTail = tail;
                                                         outcome.stderrDroppedBytes = dropped;
                                                     });
    if (!done)
        loop.exec();
    disconnect(onResponse);
    disconnect(onFailure);
    disconnect(onStderr);
    return outcome;
}

} // namespace kwb
