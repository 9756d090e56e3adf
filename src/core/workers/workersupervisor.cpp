#include "workersupervisor.h"

#include "core/protocol/workerresponses.h"

#include "core/workers/gpulease.h"
#include "core/workers/hostlimitdefaults.h"
#include "core/workers/workerlauncher.h"

#include <QStandardPaths>

#include <QDir>
#include <QFile>
#include <QEventLoop>
#include <QJsonDocument>
#include <QJsonValue>
#include <QPointer>
#include <QScopeGuard>
#include <QThread>
#include <QTemporaryDir>

#include <algorithm>
#include <csignal>
#include <utility>
#include <sys/file.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

namespace kwb {

namespace {

QString signalName(int signal)
{
    switch (signal) {
    case SIGHUP: return QStringLiteral("SIGHUP");
    case SIGINT: return QStringLiteral("SIGINT");
    case SIGQUIT: return QStringLiteral("SIGQUIT");
    case SIGILL: return QStringLiteral("SIGILL");
    case SIGTRAP: return QStringLiteral("SIGTRAP");
    case SIGABRT: return QStringLiteral("SIGABRT");
    case SIGBUS: return QStringLiteral("SIGBUS");
    case SIGFPE: return QStringLiteral("SIGFPE");
    case SIGKILL: return QStringLiteral("SIGKILL");
    case SIGSEGV: return QStringLiteral("SIGSEGV");
    case SIGPIPE: return QStringLiteral("SIGPIPE");
    case SIGALRM: return QStringLiteral("SIGALRM");
    case SIGTERM: return QStringLiteral("SIGTERM");
    case SIGXCPU: return QStringLiteral("SIGXCPU");
    case SIGXFSZ: return QStringLiteral("SIGXFSZ");
    default: return QStringLiteral("signal %1").arg(signal);
    }
}

// The signals that end a process from outside. The sandbox gives a candidate's code no way to
// send them (no kill, no process control), unlike SIGSEGV or SIGABRT, which its kernel can cause.
bool endedFromOutside(int signal)
{
    return signal == SIGKILL || signal == SIGTERM || signal == SIGINT || signal == SIGHUP || signal == SIGQUIT;
}

QString seconds(int ms)
{
    return QString::number(ms / 1000.0, 'g', 4) + QStringLiteral(" s");
}

// The last non-empty line of a log: where a loader or an assertion says why a program died.
QString lastLine(const QByteArray& log)
{
    const QList<QByteArray> lines = log.trimmed().split('\n');
    return lines.isEmpty() ? QString() : QString::fromUtf8(lines.last().trimmed()).left(500);
}

// What a remote worker that ended itself over its host limits (exit kWorkerExitHostLimit) said
// on stderr ("kwb-worker: host limit: memory PEAK LIMIT"), worded as the supervisor words its
// own verdict here; "" when the tail holds no such line.
QString hostLimitMessage(const QByteArray& log)
{
    const QList<QByteArray> lines = log.split('\n');
    for (qsizetype i = lines.size() - 1; i >= 0; --i) {
        const QByteArray line = lines.at(i).trimmed();
        static const QByteArray marker = "kwb-worker: host limit: ";
        if (!line.startsWith(marker))
            continue;
        const QList<QByteArray> words = line.mid(marker.size()).split(' ');
        bool peakOk = false;
        bool limitOk = false;
        const qint64 peak = words.value(1).toLongLong(&peakOk);
        const qint64 limit = words.value(2).toLongLong(&limitOk);
        if (words.size() != 3 || !peakOk || !limitOk)
            return {};
        if (words.at(0) == "memory")
            return QStringLiteral("host memory %1 over the limit of %2").arg(formatBytes(peak), formatBytes(limit));
        if (words.at(0) == "threads")
            return QStringLiteral("host threads %1 over the limit of %2").arg(peak).arg(limit);
        return {};
    }
    return {};
}

// A worker's scratch folder, the one place it may write in the OS sandbox: a child of its
// QProcess, so it is removed with it.
class ScratchFolder : public QObject
{
public:
    explicit ScratchFolder(QObject* parent)
        : QObject(parent)
        , dir(QDir(QDir::tempPath()).filePath(QStringLiteral("kwb-worker-XXXXXX")))
    {
    }
    QTemporaryDir dir;
};

const char* const kSandboxedProperty = "kwbSandboxed";
const char* const kSignalInExitCodeProperty = "kwbSignalInExitCode";
const char* const kQuietLockProperty = "kwbQuietLock";

// bwrap passes on the worker's exit code, and 128 + the signal when the worker died by one; so
// does the remote script, whose code ssh and srun pass on.
void unwrapSignal(const QProcess* process, int* exitCode, QProcess::ExitStatus* exitStatus)
{
    if (process->property(kSignalInExitCodeProperty).toBool() && *exitStatus == QProcess::NormalExit) {
        if (const int signal = signalFromWrappedExitCode(*exitCode)) {
            *exitStatus = QProcess::CrashExit;
            *exitCode = signal;
        }
    }
}

// "exited with code 0", "killed by signal 11 (SIGSEGV)": Qt reports the signal number as the exit
// code of a CrashExit on Unix.
QString exitDescription(int exitCode, QProcess::ExitStatus exitStatus)
{
    return exitStatus == QProcess::CrashExit ? QStringLiteral("killed by signal %1 (%2)").arg(exitCode).arg(signalName(exitCode))
                                             : QStringLiteral("exited with code %1").arg(exitCode);
}

// LOCK_SH on the GPU's quiet lock without waiting, for a worker on its way out: the descriptor,
// or -1 (no lock file, or a measurement holds it now). O_CLOEXEC: no worker started later
// inherits it.
int takeQuietLockShared(const QString& path)
{
    if (path.isEmpty())
        return -1;
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    // Through the writers-first gate as the worker's holds go (GpuQuietLock): where a timing
    // waits at it, no hold of ours gets ahead of that timing.
    const int intent = ::open(QFile::encodeName(GpuLeases::quietIntentPath(path)).constData(), O_RDONLY | O_CLOEXEC);
    const bool gated = intent < 0 || ::flock(intent, LOCK_SH | LOCK_NB) == 0;
    const bool held = gated && ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    if (intent >= 0)
        ::close(intent); // lets the gate go
    if (!held) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Room on the device, as the answer left, for the next worker beside this one while it exits: at
// least as much free as is used (so an evaluation as large as the one that ended fits) and 1 GiB
// more (a CUDA context and the libraries' workspaces).
bool roomBesideLeavingWorker(const EvaluationResult& e)
{
    constexpr double kContextBytes = 1024.0 * 1024.0 * 1024.0;
    if (!e.gpuFreeBytes || !e.gpuTotalBytes || !(*e.gpuTotalBytes > 0))
        return false;
    const double used = *e.gpuTotalBytes - *e.gpuFreeBytes;
    return *e.gpuFreeBytes >= used + kContextBytes;
}


// The worker's own pid: in the sandbox the started process is bwrap, and the worker its child.
qint64 workerProcessId(QProcess* process)
{
    const qint64 started = process->processId();
    if (started <= 0 || !process->property(kSandboxedProperty).toBool())
        return started;
    const QList<qint64> children = childProcesses(started);
    return children.isEmpty() ? started : children.first();
}

// bwrap passes no signal on to the worker: SIGTERM goes to the worker itself (so it has its
// grace period as without the sandbox), SIGKILL to both (the worker would also die with bwrap,
// through --die-with-parent, but a moment later).
void signalWorker(QProcess* process, int signal)
{
    // In the sandbox the worker is PID 1 of its namespace, which SIGTERM does not reach
    // (src/worker/sandbox_init.hpp): it is stopped with SIGKILL at once.
    if (process->property(kSandboxedProperty).toBool())
        signal = SIGKILL;
    const qint64 worker = workerProcessId(process);
    if (worker > 0 && worker != process->processId()) {
        ::kill(pid_t(worker), signal);
        if (signal != SIGKILL)
            return;
    }
    if (signal == SIGKILL)
        process->kill();
    else
        process->terminate();
}

const QString kHelloType = QStringLiteral("hello");
const QString kWarmType = QStringLiteral("warm");
const QString kEvaluateType = QStringLiteral("evaluate");
const QString kShutdownType = QStringLiteral("shutdown");

// The hello a spare takes over with after its warm answer: with the answer's warm_ms when it
// warmed; unchanged from an older worker that does not know `warm` (unknown_type); none when the
// answer is anything else (the spare is not trusted then).
std::optional<QJsonObject> helloAfterWarm(const QJsonObject& hello, const QJsonObject& answer, const QString& warmId)
{
    const ResponseHeader header = decodeHeader(answer);
    if (header.id != QJsonValue(warmId))
        return std::nullopt;
    if (!header.ok)
        return header.errorCode == QLatin1String("unknown_type") ? std::optional<QJsonObject>(hello) : std::nullopt;
    if (header.type != kWarmType)
        return std::nullopt;
    QJsonObject warmed = hello;
    if (const QJsonValue ms = answer.value(QLatin1String("warm_ms")); ms.isObject())
        warmed.insert(QLatin1String(WorkerSupervisor::kWarmMsField), ms);
    return warmed;
}

bool looksSecret(const QString& name)
{
    const QString upper = name.toUpper();
    for (const QString& word : secretNameWords()) {
        if (upper.contains(word))
            return true;
    }
    return false;
}

bool workerNeeds(const QString& name)
{
    if (workerEnvironmentNames().contains(name))
        return true;
    for (const QString& prefix : workerEnvironmentPrefixes()) {
        if (name.startsWith(prefix))
            return true;
    }
    return false;
}

} // namespace

QProcessEnvironment workerEnvironment(const QProcessEnvironment& from)
{
    QStringList listed;
    for (const QString& name : from.value(QStringLiteral("KWB_WORKER_ENV")).split(QLatin1Char(','), Qt::SkipEmptyParts))
        listed.append(name.trimmed());
    QProcessEnvironment environment;
    for (const QString& name : from.keys()) {
        if ((workerNeeds(name) || listed.contains(name)) && !looksSecret(name))
            environment.insert(name, from.value(name));
    }
    return environment;
}

WorkerSupervisor::WorkerSupervisor(QObject* parent)
    : QObject(parent)
    , m_environment(workerEnvironment())
{
    m_requestTimer.setSingleShot(true);
    m_requestTimer.setTimerType(Qt::PreciseTimer); // a limit must not fire early (coarse timers may by 5 %)
    m_stopTimer.setSingleShot(true);
    m_stopTimer.setTimerType(Qt::PreciseTimer); // the grace period is a promise too
    m_limitTimer.setInterval(kLimitPollMs);
    connect(&m_requestTimer, &QTimer::timeout, this, &WorkerSupervisor::onRequestTimeout);
    connect(&m_stopTimer, &QTimer::timeout, this, &WorkerSupervisor::onStopTimer);
    connect(&m_limitTimer, &QTimer::timeout, this, &WorkerSupervisor::onLimitTimer);
    m_warmIdleTimer.setSingleShot(true);
    connect(&m_warmIdleTimer, &QTimer::timeout, this, &WorkerSupervisor::warmIdleSpare);
    m_exitLockTimer.setSingleShot(true);
    connect(&m_exitLockTimer, &QTimer::timeout, this, &WorkerSupervisor::sendRetireEof);
}

WorkerSupervisor::~WorkerSupervisor()
{
    // Workers on their way out: EOF (where it still waited for the lock), a moment to end, then SIGKILL.
    for (const Leaving& leaving : std::as_const(m_leaving)) {
        leaving.process->disconnect(this);
        leaving.process->closeWriteChannel();
        if (!leaving.process->waitForFinished(1000)) {
            signalWorker(leaving.process, SIGKILL);
            leaving.process->waitForFinished(m_killGraceMs);
        }
        if (leaving.lockFd >= 0)
            ::close(leaving.lockFd);
        delete leaving.process;
    }
    m_leaving.clear();
    const QList<Spare> spares = m_spares;
    m_spares.clear();
    for (const Spare& spare : spares) {
        // It holds no request: no need to ask nicely.
        spare.process->disconnect(this);
        signalWorker(spare.process, SIGKILL);
    }
    for (const Spare& spare : spares) {
        spare.process->waitForFinished(m_killGraceMs);
        delete spare.process;
    }
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
    m_program = program;
    m_arguments = arguments;
    discardSpares(); // started as another program
}

void WorkerSupervisor::setProcessEnvironment(const QProcessEnvironment& environment)
{
    m_environment = environment;
    discardSpares(); // it may see another GPU
}

void WorkerSupervisor::setLimits(const WorkerLimits& limits)
{
    const bool sandboxChanged = limits.osSandbox != m_limits.osSandbox;
    m_limits = limits;
    if (sandboxChanged)
        discardSpares(); // started in the other way
}

void WorkerSupervisor::setBubblewrapProgram(const QString& program)
{
    m_bubblewrap = program;
    discardSpares();
}

void WorkerSupervisor::setTarget(const WorkerTarget& target)
{
    m_target = target;
    discardSpares(); // it runs elsewhere
}

QString WorkerSupervisor::sandboxStatus() const
{
    WorkerLaunchOptions options;
    options.osSandbox = m_limits.osSandbox;
    options.bubblewrap = m_bubblewrap;
    options.worker = m_program.contains(QLatin1Char('/')) ? m_program : QStandardPaths::findExecutable(m_program);
    options.workerEnvironment = m_environment;
    options.target = m_target;
    return kwb::sandboxStatus(options);
}

void WorkerSupervisor::setIsolation(Isolation isolation)
{
    m_isolation = isolation;
    if (!spareWanted())
        discardSpares();
}

void WorkerSupervisor::setSpareWorker(bool enabled)
{
    m_spareEnabled = enabled;
    if (!spareWanted())
        discardSpares();
}

void WorkerSupervisor::setSpareCount(int count)
{
    m_spareCount = std::max(0, count);
    // The youngest are the furthest behind (they started last).
    while (m_spares.size() > m_spareCount)
        discardSpare(m_spares.last().process);
}

qint64 WorkerSupervisor::spareWorkerPid() const
{
    const int next = nextSpare();
    return next < 0 ? 0 : m_spares.at(next).pid;
}

bool WorkerSupervisor::spareWorkerReady() const
{
    const int next = nextSpare();
    return next >= 0 && m_spares.at(next).state == WorkerState::Idle;
}

bool WorkerSupervisor::spareWorkerWarmed() const
{
    const int next = nextSpare();
    return next >= 0 && m_spares.at(next).warmed();
}

bool WorkerSupervisor::Spare::warmed() const
{
    return state == WorkerState::Idle && hello.contains(QLatin1String(kWarmMsField));
}

QList<qint64> WorkerSupervisor::spareWorkerPids() const
{
    QList<qint64> pids;
    for (const Spare& spare : m_spares)
        pids.append(spare.pid);
    return pids;
}

void WorkerSupervisor::setWarmSpare(bool enabled)
{
    if (enabled != m_warmSpare)
        discardSpares(); // warmed, or about to be, the other way
    m_warmSpare = enabled;
}

qint64 WorkerSupervisor::sendRequest(const QJsonObject& request, int timeoutMs)
{
    const qint64 id = ++m_nextId;
    Pending pending;
    pending.id = id;
    pending.type = request.value(QLatin1String("type")).toString();
    pending.timeoutMs = timeoutMs < 0 ? m_defaultTimeoutMs : timeoutMs;
    if (pending.type.isEmpty()) {
        failLater(id, wireName(EvaluationStatus::BadRequest), QStringLiteral("the request has no \"type\""));
        return id;
    }
    QJsonObject withId = request;
    withId.insert(QLatin1String("id"), id);
    QString error;
    pending.line = ProtocolCodec::encodeRequest(withId, &error);
    if (pending.line.isEmpty()) {
        failLater(id, wireName(EvaluationStatus::BadRequest), error);
        return id;
    }
    m_queue.append(pending);
    m_warmIdleTimer.stop(); // not idle any more: a warm now would only delay this request's timing
    // An evaluation queued with no spare alive (the first, or after every spare failed): the first
    // spare starts now, beside the worker that will take this one, not once that worker has
    // answered hello and been sent it (~0.5 s later).
    if (pending.type == kEvaluateType)
        expectEvaluations();
    scheduleDispatch();
    return id;
}

void WorkerSupervisor::expectEvaluations()
{
    // H200: in a back-to-back queue the second to fourth jobs waited 0.2-0.4 s each for a spare
    // that had started only when the first job was written to its worker.
    if (m_spares.isEmpty())
        topUpSpares();
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
    discardSpares();
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
    if (idle() && !m_warmIdleTimer.isActive())
        armIdleWarm(); // every way to idle (an answer, a failure, a worker's end) passes here
    // A worker on its way out still holds the GPU: the next request waits until it has ended
    // (retireWorker), unless it was handed off (handOffLeavingWorker); a request run again after
    // an out-of-memory beside one waits for every leaving worker to be gone.
    if (m_active || m_queue.isEmpty() || m_state == WorkerState::Stopping)
        return;
    if (m_queue.first().alone && !m_leaving.isEmpty())
        return;
    m_warmIdleTimer.stop();
    m_active = Active();
    m_active->request = m_queue.takeFirst();
    m_stderr.clear();
    m_stderrDropped = 0;
    m_requestTimer.start(m_active->request.timeoutMs);
    if (!m_target.isRemote()) // the started process is ssh or srun there: its /proc says nothing of the worker
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

QProcess* WorkerSupervisor::createProcess()
{
    auto* process = new QProcess(this);
    auto* scratch = new ScratchFolder(process);
    WorkerLaunchOptions options;
    options.osSandbox = m_limits.osSandbox;
    options.bubblewrap = m_bubblewrap;
    options.scratchDir = scratch->dir.isValid() ? scratch->dir.path() : QString();
    options.target = m_target;
    options.hostMemoryBytes = m_limits.hostMemoryBytes;
    options.hostThreads = m_limits.hostThreads;
    // Created before every start (a sandboxed worker cannot create it), for the GPU this worker sees.
    if (!m_target.isRemote())
        if (const QString key = workerGpuKey(m_environment); !key.isEmpty())
            options.gpuQuietLock = GpuLeases::ensureQuietLock(key);
    const WorkerLaunch launch = launchWorker(m_program, m_arguments, m_environment, options);
    process->setProgram(launch.program);
    process->setArguments(launch.arguments);
    process->setProcessEnvironment(launch.environment);
    process->setProcessChannelMode(QProcess::SeparateChannels);
    process->setProperty(kSandboxedProperty, launch.sandboxed);
    process->setProperty(kSignalInExitCodeProperty, launch.exitCodeCarriesSignal);
    process->setProperty(kQuietLockProperty, options.gpuQuietLock);
    return process;
}

void WorkerSupervisor::startWorker()
{
    if (m_program.isEmpty()) {
        const qint64 id = m_active->request.id;
        m_requestTimer.stop();
        m_active.reset();
        emitStderr(id);
        failLater(id, wireName(EvaluationStatus::StartFailed), QStringLiteral("no worker program was set"));
        scheduleDispatch();
        return;
    }
    QProcess* process = createProcess();
    m_process = process;
    m_connectionLost = false;
    m_state = WorkerState::Starting;
    m_stopStage = StopStage::None;
    m_pid = 0;
    m_hello = QJsonObject();
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

bool WorkerSupervisor::spareWanted() const
{
    // Reuse mode keeps its worker, so a spare would only sit there holding memory.
    return m_spareEnabled && m_spareCount > 0 && m_isolation == Isolation::FreshPerRequest && !m_program.isEmpty();
}

WorkerSupervisor::Spare* WorkerSupervisor::spareOf(const QProcess* process)
{
    for (Spare& spare : m_spares)
        if (spare.process == process)
            return &spare;
    return nullptr;
}

int WorkerSupervisor::nextSpare() const
{
    // Warmed first, then ready unwarmed: it starts at once and pays its own cuda_init, about what
    // a warming spare's remaining warm costs, and that one stays warming for the next request.
    // Else the one that will be ready soonest, whose wait the request then shares.
    const auto rank = [](const Spare& spare) {
        if (spare.warmed())
            return 5;
        switch (spare.state) {
        case WorkerState::Idle: return 4;
        case WorkerState::Warming: return 3;
        case WorkerState::Handshaking: return 2;
        case WorkerState::Starting: return 1;
        default: return 0;
        }
    };
    int best = -1;
    for (int i = 0; i < int(m_spares.size()); ++i)
        if (best < 0 || rank(m_spares.at(i)) > rank(m_spares.at(best)))
            best = i; // strictly greater: the oldest of a rank wins
    return best;
}

void WorkerSupervisor::armIdleWarm()
{
    if (idle() && m_warmSpare && spareWanted() && !m_target.isRemote())
        m_warmIdleTimer.start(m_warmIdleMs);
}

void WorkerSupervisor::warmIdleSpare()
{
    if ((!idle() && !m_warmWhileBusy) || !m_warmSpare)
        return;
    // Idle: one at a time (setWarmSpare()), the next one when this one answers. Warming while
    // busy: every ready spare at once (setWarmWhileBusy()), since each must be warm by the time
    // the running candidate ends; their parts share the lock with one another.
    if (!m_warmWhileBusy)
        for (const Spare& spare : std::as_const(m_spares))
            if (spare.state == WorkerState::Warming)
                return;
    for (Spare& spare : m_spares) {
        if (spare.state == WorkerState::Idle && !spare.warmAnswered && warmWanted(spare.hello)) {
            spare.state = WorkerState::Warming;
            spare.warmId = sendWarm(spare.process);
            if (!m_warmWhileBusy)
                return;
        }
    }
}

bool WorkerSupervisor::spareStartsAtOnce() const
{
    // A spare's start is libtorch's load and static initialisers on one core; the evaluation
    // running meanwhile and the compile-ahead want theirs.
    return m_spareStartsAtOnce.value_or(QThread::idealThreadCount() >= m_spareCount + 2);
}

void WorkerSupervisor::topUpSpares()
{
    // One at a time (setSpareCount()): the next one starts at the next top-up; every missing one
    // where spareStartsAtOnce().
    const bool atOnce = spareStartsAtOnce();
    do {
        if (!spareWanted() || m_spares.size() >= m_spareCount)
            return;
        startSpare();
    } while (atOnce);
}

void WorkerSupervisor::startSpare()
{
    QProcess* process = createProcess();
    Spare spare;
    spare.process = process;
    spare.state = WorkerState::Starting;
    m_spares.append(spare);
    connect(process, &QProcess::started, this, [this, process] { onSpareStarted(process); });
    connect(process, &QProcess::readyReadStandardOutput, this, [this, process] { onSpareOutput(process); });
    // Nobody owns a spare's stderr (a loader warning, libtorch's banner); it is read so that the
    // pipe never fills up, and dropped.
    connect(process, &QProcess::readyReadStandardError, this, [process] { process->readAllStandardError(); });
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart && spareOf(process))
            discardSpare(process); // the next request tries a cold start and reports why it fails
    });
    connect(process, &QProcess::finished, this, [this, process] { onSpareFinished(process); });
    process->start(QIODevice::ReadWrite);
}

void WorkerSupervisor::onSpareStarted(QProcess* process)
{
    Spare* spare = spareOf(process);
    if (!spare || spare->state != WorkerState::Starting)
        return;
    spare->pid = process->processId();
    spare->state = WorkerState::Handshaking;
    spare->handshakeId = QStringLiteral("kwb-hello-%1").arg(++m_handshakeCount);
    // hello creates no CUDA context; a warm, sent once the supervisor idles (warmIdleSpare), does,
    // under the GPU's quiet lock, so never while anything on that GPU is timed.
    const QJsonObject hello{{QLatin1String("id"), spare->handshakeId}, {QLatin1String("type"), kHelloType}};
    process->write(ProtocolCodec::encodeRequest(hello));
}

void WorkerSupervisor::onSpareOutput(QProcess* process)
{
    Spare* spare = spareOf(process);
    if (!spare)
        return;
    spare->decoder.feed(process->readAllStandardOutput());
    const WorkerState before = spare->state;
    // Its hello answer, then its warm answer, are all a spare may say; anything else and it is not
    // trusted to take over.
    for (const QJsonObject& response : spare->decoder.takeResponses()) {
        if (!takeSpareAnswer(*spare, response)) {
            discardSpare(process);
            return;
        }
    }
    if (spare->decoder.hasFailed()) {
        discardSpare(process);
        return;
    }
    const bool helloAnswered = before == WorkerState::Handshaking && spare->state == WorkerState::Idle;
    const bool warmAnswered = before == WorkerState::Warming && spare->state == WorkerState::Idle;
    // Ready: the next spare may start now, one behind this one (setSpareCount()). Each evaluate
    // takes one spare and starts one, so without this the spares would never grow past one.
    if (spare->state == WorkerState::Idle)
        topUpSpares(); // may append to m_spares: `spare` is not used after this
    if (helloAnswered && m_warmWhileBusy && !m_target.isRemote())
        warmIdleSpare(); // at once, busy or not (setWarmWhileBusy())
    else if (helloAnswered)
        armIdleWarm(); // idle: warmed once the supervisor has stayed idle for the settle time
    else if (warmAnswered)
        warmIdleSpare(); // still idle: the next one (the settle time has passed already)
}

bool WorkerSupervisor::takeSpareAnswer(Spare& spare, const QJsonObject& response)
{
    if (spare.state == WorkerState::Handshaking) {
        if (decodeHeader(response).id != QJsonValue(spare.handshakeId) || !ProtocolCodec::checkHello(response).isEmpty())
            return false;
        spare.hello = response;
        spare.pid = workerProcessId(spare.process); // it runs now: in the sandbox, bwrap's child
        spare.state = WorkerState::Idle; // ready; warmed only when the supervisor idles (warmIdleSpare)
        return true;
    }
    if (spare.state == WorkerState::Warming) {
        const std::optional<QJsonObject> hello = helloAfterWarm(spare.hello, response, spare.warmId);
        if (!hello)
            return false;
        spare.hello = *hello;
        spare.state = WorkerState::Idle;
        spare.warmAnswered = true;
        return true;
    }
    return false;
}

bool WorkerSupervisor::warmWanted(const QJsonObject& hello) const
{
    // Without the lock its warm-up would not wait for another process's timing. An older worker
    // says nothing of the lock and answers warm with unknown_type.
    const HelloInfo info = decodeHello(hello);
    const bool saysNoLock = info.quietLockAnnounced && info.quietLock.isEmpty();
    return m_warmSpare && !m_target.isRemote() && !saysNoLock;
}

QString WorkerSupervisor::sendWarm(QProcess* process)
{
    const QString id = QStringLiteral("kwb-warm-%1").arg(++m_handshakeCount);
    QJsonObject request{{QLatin1String("id"), id}, {QLatin1String("type"), kWarmType}};
    if (m_warmPython)
        request.insert(QLatin1String("python"), true);
    process->write(ProtocolCodec::encodeRequest(request));
    return id;
}

void WorkerSupervisor::onSpareFinished(QProcess* process)
{
    if (!spareOf(process))
        return;
    // Replaced lazily: at the next top-up.
    process->disconnect(this);
    process->deleteLater(); // never inside its own signal
    m_spares.removeIf([process](const Spare& spare) { return spare.process == process; });
}

namespace {

// Ends a worker that holds no request (SIGKILL is fine) and forgets it: no signal of it reaches
// the supervisor again.
void dropWorker(QProcess* process, QObject* supervisor)
{
    process->disconnect(supervisor);
    if (process->state() == QProcess::NotRunning) {
        process->deleteLater();
        return;
    }
    signalWorker(process, SIGKILL);
    // Reaped when it has gone; deleting a running QProcess would block until it has.
    QObject::connect(process, &QProcess::finished, process, &QObject::deleteLater);
}

} // namespace

void WorkerSupervisor::discardSpare(QProcess* process)
{
    if (m_spares.removeIf([process](const Spare& spare) { return spare.process == process; }) > 0)
        dropWorker(process, this);
}

void WorkerSupervisor::discardSpares()
{
    const QList<Spare> spares = m_spares;
    m_spares.clear();
    for (const Spare& spare : spares)
        dropWorker(spare.process, this);
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
    // The others stay, for the requests after this one.
    const Spare spare = m_spares.takeAt(nextSpare());
    QProcess* process = spare.process;
    process->disconnect(this);
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
    m_handshakeId = QStringLiteral("kwb-hello-%1").arg(++m_handshakeCount);
    QJsonObject hello{{QLatin1String("id"), m_handshakeId}, {QLatin1String("type"), kHelloType}};
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
    // This worker is retired after the evaluation: its successor loads meanwhile.
    if (m_active->request.type == kEvaluateType)
        topUpSpares();
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
        m_hello = response;
        m_state = WorkerState::Idle;
        m_pid = workerProcessId(m_process); // it runs now: in the sandbox, bwrap's child
        workerReady();
        return;
    }
    if (m_state == WorkerState::Warming) {
        // A spare taken over while warming: its warm answer, then the request.
        const std::optional<QJsonObject> hello = helloAfterWarm(m_hello, response, m_warmId);
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
                    .arg(QString::fromUtf8(
                        QJsonDocument(QJsonObject{{QLatin1String("id"), id}}).toJson(QJsonDocument::Compact))));
}

void WorkerSupervisor::acceptResponse(const QJsonObject& response)
{
    m_requestTimer.stop();
    m_active->answered = true;
    m_active->response = response;
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
    const QJsonObject response = m_active->response;
    const bool evaluate = m_active->request.type == kEvaluateType;
    const EvaluationResult result = decodeEvaluation(response);
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

    // The worker says its CUDA context is unusable (sticky error) and exits after answering.
    const bool unhealthy = !result.workerHealthy;
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
        abortWorker(wireName(EvaluationStatus::Timeout), QStringLiteral("no response within the wall-clock limit of %1").arg(limit));
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
    const qint64 memoryLimit = m_limits.effectiveHostMemory();
    const int threadLimit = m_limits.effectiveHostThreads();
    QString over;
    if (usage.peakBytes > memoryLimit)
        over = QStringLiteral("host memory %1 over the limit of %2").arg(formatBytes(usage.peakBytes), formatBytes(memoryLimit));
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

bool WorkerSupervisor::handOffLeavingWorker(const EvaluationResult& answer)
{
    if (!m_handOffLeaving || !m_process || m_target.isRemote() || !roomBesideLeavingWorker(answer) ||
        m_process->property(kQuietLockProperty).toString().isEmpty())
        return false;
    const qint64 pid = m_pid;
    QProcess* process = detachProcess();
    m_leaving.append(Leaving{process, pid, -1, {}});
    ++m_handedOff;
    // Nobody's output any more; read so that a chatty exit never blocks on a full pipe.
    connect(process, &QProcess::readyReadStandardOutput, this, [process] { process->readAllStandardOutput(); });
    connect(process, &QProcess::readyReadStandardError, this, [process] { process->readAllStandardError(); });
    connect(process, &QProcess::finished, this, [this, process](int exitCode, QProcess::ExitStatus exitStatus) {
        onLeavingFinished(process, exitCode, exitStatus);
    });
    if (!endLeavingUnderLock(process)) {
        // A measurement holds the GPU now (another slot's timing): the worker waits, idle, until
        // it is done. The timer goes with the process.
        auto* poll = new QTimer(process);
        poll->setInterval(kExitLockPollMs);
        connect(poll, &QTimer::timeout, this, [this, process, poll] {
            if (endLeavingUnderLock(process))
                poll->stop();
        });
        poll->start();
    }
    return true;
}

bool WorkerSupervisor::endLeavingUnderLock(QProcess* process)
{
    const auto it = std::find_if(m_leaving.begin(), m_leaving.end(), [process](const Leaving& l) { return l.process == process; });
    if (it == m_leaving.end())
        return true;
    if (m_exitUnderLock) {
        it->lockFd = takeQuietLockShared(process->property(kQuietLockProperty).toString());
        if (it->lockFd < 0)
            return false;
    }
    it->sinceEof.start();
    process->closeWriteChannel(); // EOF: the worker exits (with code 0)
    // As retireWorker: SIGTERM after the grace period, SIGKILL after another (the timers go with
    // the process).
    const int grace = m_killGraceMs;
    QTimer::singleShot(grace, process, [process, grace] {
        signalWorker(process, SIGTERM);
        QTimer::singleShot(grace, process, [process] { signalWorker(process, SIGKILL); });
    });
    return true;
}

void WorkerSupervisor::onLeavingFinished(QProcess* process, int exitCode, QProcess::ExitStatus exitStatus)
{
    const auto it = std::find_if(m_leaving.begin(), m_leaving.end(), [process](const Leaving& l) { return l.process == process; });
    if (it == m_leaving.end())
        return;
    const Leaving leaving = *it;
    m_leaving.erase(it);
    if (leaving.sinceEof.isValid())
        m_leavingExitMs.append(double(leaving.sinceEof.nsecsElapsed()) / 1e6);
    // Its CUDA context is gone with it: a timing on this GPU may start now.
    if (leaving.lockFd >= 0)
        ::close(leaving.lockFd);
    process->disconnect(this);
    process->deleteLater(); // never inside its own signal
    unwrapSignal(process, &exitCode, &exitStatus);
    Q_EMIT workerFinished(leaving.pid, exitDescription(exitCode, exitStatus));
    scheduleDispatch();
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
    if (!m_process || m_state != WorkerState::Stopping || m_stopStage != StopStage::EndOfInput || m_stopTimer.isActive())
        return;
    const QString lock = m_target.isRemote() ? QString() : m_process->property(kQuietLockProperty).toString();
    if (!lock.isEmpty() && m_exitLockFd < 0) {
        m_exitLockFd = takeQuietLockShared(lock);
        if (m_exitLockFd < 0) {
            m_exitLockTimer.start(kExitLockPollMs);
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
    const QString message = QStringLiteral("could not start the worker %1: %2").arg(m_program, process->errorString());
    const qint64 pid = m_pid;
    releaseProcess();
    m_requestTimer.stop();
    if (m_active) {
        const qint64 id = m_active->request.id;
        const QString status = m_active->failStatus.isEmpty() ? wireName(EvaluationStatus::StartFailed) : m_active->failStatus;
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
    const bool connectionLost =
        m_target.kind == WorkerTarget::Kind::Ssh && exitStatus == QProcess::NormalExit && exitCode == kSshConnectionLost;
    m_connectionLost = connectionLost;
    unwrapSignal(process, &exitCode, &exitStatus);
    // Whatever is still buffered was written before the worker ended: a worker that answers and
    // then exits (worker_healthy: false) must not be taken for a crash.
    feedDecoder(process->readAllStandardOutput());
    onStandardError(process);

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
        // A remote worker enforces its host limits itself (hostlimitdefaults.h).
        const QString overHostLimit = m_target.isRemote() && exitStatus == QProcess::NormalExit && exitCode == kWorkerExitHostLimit
                                          ? hostLimitMessage(stderrTail)
                                          : QString();
        if (active.answered) {
            Q_EMIT responseAvailable(id, active.response);
        } else if (!active.failStatus.isEmpty()) {
            Q_EMIT requestFailed(id, active.failStatus, active.failMessage + QStringLiteral("; worker ") + description);
        } else if (!overHostLimit.isEmpty()) {
            // As locally: before hello the worker itself is too big, nothing of a candidate ran.
            if (beforeReady(stateAtEnd))
                Q_EMIT requestFailed(id, wireName(EvaluationStatus::StartFailed),
                                     QStringLiteral("the worker went over its limits before answering hello: %1 (on %2)")
                                         .arg(overHostLimit, m_target.location()));
            else
                Q_EMIT requestFailed(id, wireName(EvaluationStatus::ResourceLimit),
                                     QStringLiteral("%1 (on %2)").arg(overHostLimit, m_target.location()));
        } else if (beforeReady(stateAtEnd)) {
            QString message = QStringLiteral("the worker %1 before answering %2")
                                  .arg(description, stateAtEnd == WorkerState::Warming ? kWarmType : kHelloType);
            const QString why = lastLine(stderrTail);
            if (!why.isEmpty())
                message += QStringLiteral(": ") + why;
            Q_EMIT requestFailed(id, wireName(EvaluationStatus::StartFailed), message);
        } else if (active.request.type == kShutdownType && exitStatus == QProcess::NormalExit && exitCode == 0) {
            Q_EMIT responseAvailable(id, QJsonObject{{QLatin1String("id"), id},
                                                     {QLatin1String("type"), kShutdownType},
                                                     {QLatin1String("ok"), true}});
        } else if (connectionLost) {
            QString message = QStringLiteral("lost the connection to %1 during the request (ssh exited with code %2)")
                                  .arg(m_target.host)
                                  .arg(kSshConnectionLost);
            if (const QString why = lastLine(stderrTail); !why.isEmpty())
                message += QStringLiteral(": ") + why;
            Q_EMIT requestFailed(id, wireName(EvaluationStatus::WorkerLost), message);
        } else if (exitStatus == QProcess::CrashExit && stopStage == StopStage::None && endedFromOutside(exitCode)) {
            // The supervisor sent nothing (failStatus is empty and it was not stopping the worker).
            Q_EMIT requestFailed(id, wireName(EvaluationStatus::WorkerLost),
                                 QStringLiteral("the worker was %1 during the request, not by kwb (the OOM killer or "
                                                "another process): a failure of the machine, not of the candidate")
                                     .arg(description));
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
    m_hello = QJsonObject();
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
        connect(this, &WorkerSupervisor::responseAvailable, &loop, [&](qint64 doneId, const QJsonObject& response) {
            if (doneId != id)
                return;
            outcome.response = decodeWorkerResponse(response);
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

QJsonObject WorkerSupervisor::runOne(const QJsonObject& request, int timeoutMs, QString* error)
{
    Outcome outcome = run(request, timeoutMs);
    if (!outcome.hasResponse()) {
        if (error)
            *error = outcome.status + QStringLiteral(": ") + outcome.message;
        return {};
    }
    if (error)
        error->clear();
    return outcome.response.raw;
}

} // namespace kwb
