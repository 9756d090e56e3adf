#include "core/workers/workerprocess.h"

#include "core/workers/gpulease.h"
#include "core/workers/memorycgroup.h"
#include "core/workers/workerlauncher.h"

#include <QDir>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <csignal>
#include <sys/types.h>
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

// A worker's scratch folder, the one place it may write in the OS sandbox: a child of its
// QProcess, so it is removed with it.
class ScratchFolder : public QObject
{
public:
    explicit ScratchFolder(QObject* parent)
        : QObject(parent)
        , dir(QDir(QDir::tempPath()).filePath(QStringLiteral("kwb-worker-XXXXXX")))
    {}
    QTemporaryDir dir;
};

// A worker's memory cgroup (memorycgroup.h): a child of its QProcess, removed with it, after it.
class MemoryCgroupHolder : public QObject
{
public:
    MemoryCgroupHolder(QObject* parent, std::unique_ptr<WorkerMemoryCgroup> cgroup)
        : QObject(parent)
        , cgroup(std::move(cgroup))
    {
        setObjectName(QString::fromLatin1(kName));
    }
    static constexpr const char* kName = "kwbMemoryCgroup";
    std::unique_ptr<WorkerMemoryCgroup> cgroup;
};

const char* const kSandboxedProperty = "kwbSandboxed";
const char* const kSignalInExitCodeProperty = "kwbSignalInExitCode";
const char* const kQuietLockProperty = "kwbQuietLock";

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

QProcess* createWorkerProcess(const WorkerLaunchSettings& settings, QObject* parent)
{
    auto* process = new QProcess(parent);
    auto* scratch = new ScratchFolder(process);
    WorkerLaunchOptions options;
    options.osSandbox = settings.limits.osSandbox;
    options.bubblewrap = settings.bubblewrap;
    options.scratchDir = scratch->dir.isValid() ? scratch->dir.path() : QString();
    options.target = settings.target;
    options.hostMemoryBytes = settings.limits.hostMemoryBytes;
    options.hostThreads = settings.limits.hostThreads;
    // Created before every start (a sandboxed worker cannot create it), for the GPU this worker sees.
    if (!settings.target.isRemote())
        if (const QString key = workerGpuKey(settings.environment); !key.isEmpty())
            options.gpuQuietLock = GpuLeases::ensureQuietLock(key);
    const WorkerLaunch launch = launchWorker(settings.program, settings.arguments, settings.environment, options);
    // A local worker's memory limit also held by the kernel, in a cgroup the started process
    // joins before exec (so bwrap, the worker and all it starts are in it).
    if (!settings.target.isRemote() && settings.memoryCgroup) {
        if (auto cgroup = WorkerMemoryCgroup::create(memoryCgroupSupport(), settings.limits.effectiveHostMemory())) {
            process->setChildProcessModifier(cgroup->joinFromChild());
            new MemoryCgroupHolder(process, std::move(cgroup));
        }
    }
    process->setProgram(launch.program);
    process->setArguments(launch.arguments);
    process->setProcessEnvironment(launch.environment);
    process->setProcessChannelMode(QProcess::SeparateChannels);
    process->setProperty(kSandboxedProperty, launch.sandboxed);
    process->setProperty(kSignalInExitCodeProperty, launch.exitCodeCarriesSignal);
    process->setProperty(kQuietLockProperty, options.gpuQuietLock);
    return process;
}

QString sandboxStatusOf(const WorkerLaunchSettings& settings)
{
    WorkerLaunchOptions options;
    options.osSandbox = settings.limits.osSandbox;
    options.bubblewrap = settings.bubblewrap;
    options.worker = settings.program.contains(QLatin1Char('/')) ? settings.program
                                                                 : QStandardPaths::findExecutable(settings.program);
    options.workerEnvironment = settings.environment;
    options.target = settings.target;
    return sandboxStatus(options);
}

MemoryCgroupEnding memoryCgroupEndingOf(const QProcess* process)
{
    const auto* holder =
        process->findChild<QObject*>(QString::fromLatin1(MemoryCgroupHolder::kName), Qt::FindDirectChildrenOnly);
    return holder ? static_cast<const MemoryCgroupHolder*>(holder)->cgroup->ending() : MemoryCgroupEnding();
}

QString quietLockOf(const QProcess* process)
{
    return process->property(kQuietLockProperty).toString();
}

qint64 workerProcessId(QProcess* process)
{
    const qint64 started = process->processId();
    if (started <= 0 || !process->property(kSandboxedProperty).toBool())
        return started;
    const QList<qint64> children = childProcesses(started);
    return children.isEmpty() ? started : children.first();
}

void signalWorker(QProcess* process, int signal)
{
    // bwrap passes no signal on to the worker: SIGTERM goes to the worker itself (so it has its
    // grace period as without the sandbox), SIGKILL to both (the worker would also die with bwrap,
    // through --die-with-parent, but a moment later). In the sandbox the worker is PID 1 of its
    // namespace, which SIGTERM does not reach (src/worker/sandbox_init.hpp): it is stopped with
    // SIGKILL at once.
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

void dropWorker(QProcess* process, QObject* owner)
{
    process->disconnect(owner);
    if (process->state() == QProcess::NotRunning) {
        process->deleteLater();
        return;
    }
    signalWorker(process, SIGKILL);
    // Reaped when it has gone; deleting a running QProcess would block until it has.
    QObject::connect(process, &QProcess::finished, process, &QObject::deleteLater);
}

void unwrapSignal(const QProcess* process, int* exitCode, QProcess::ExitStatus* exitStatus)
{
    if (process->property(kSignalInExitCodeProperty).toBool() && *exitStatus == QProcess::NormalExit) {
        if (const int signal = signalFromWrappedExitCode(*exitCode)) {
            *exitStatus = QProcess::CrashExit;
            *exitCode = signal;
        }
    }
}

QString exitDescription(int exitCode, QProcess::ExitStatus exitStatus)
{
    // Qt reports the signal number as the exit code of a CrashExit on Unix.
    return exitStatus == QProcess::CrashExit
               ? QStringLiteral("killed by signal %1 (%2)").arg(exitCode).arg(signalName(exitCode))
               : QStringLiteral("exited with code %1").arg(exitCode);
}

bool endedFromOutside(int signal)
{
    return signal == SIGKILL || signal == SIGTERM || signal == SIGINT || signal == SIGHUP || signal == SIGQUIT;
}

QString lastLine(const QByteArray& log)
{
    const QList<QByteArray> lines = log.trimmed().split('\n');
    return lines.isEmpty() ? QString() : QString::fromUtf8(lines.last().trimmed()).left(500);
}

QString hostLimitMessage(const QByteArray& log)
{
    // "kwb-worker: host limit: memory PEAK LIMIT" (exit kWorkerExitHostLimit).
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

} // namespace kwb
