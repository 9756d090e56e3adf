#include "workerlauncher.h"
#include "gpulease.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMutex>
#include <QMutexLocker>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <optional>

namespace kwb {

namespace {

QString bubblewrapProgram(const QString& configured)
{
    if (!configured.isEmpty())
        return configured;
    return QStandardPaths::findExecutable(QStringLiteral("bwrap"));
}

// The sandbox (docs/sandbox.md, "The OS sandbox"). Not a new pid namespace: the worker keeps a
// real pid, which the supervisor reads in /proc for the host limits, and the host's /proc is then
// its own view; a fresh proc mount is refused in many containers. /proc is bound again writable:
// under the read-only bind of / the CUDA driver's cuInit fails with CUDA_ERROR_OPERATING_SYSTEM
// (seen on the H200, 2026-12-01: no device inside the sandbox until /proc was writable). Writing
// /proc/sys and the like still needs capabilities, which bwrap drops.
QStringList bubblewrapArguments(const QString& scratchDir)
{
    QStringList arguments{
        QStringLiteral("--die-with-parent"), // kwb gone: bwrap and the worker go (and the worker's own parent watch)
        QStringLiteral("--unshare-net"),     // only a loopback of its own: no host, no network
        QStringLiteral("--unshare-ipc"),     // no System V IPC with the host's processes
        QStringLiteral("--new-session"),     // no controlling terminal to push input into (TIOCSTI)
        QStringLiteral("--ro-bind"), QStringLiteral("/"), QStringLiteral("/"), // everything readable, nothing writable
        QStringLiteral("--dev-bind"), QStringLiteral("/dev"), QStringLiteral("/dev"), // the GPU's /dev/nvidia* nodes
        QStringLiteral("--bind"), QStringLiteral("/proc"), QStringLiteral("/proc"), // cuInit needs it writable (above)
        QStringLiteral("--tmpfs"), QStringLiteral("/dev/shm"), // POSIX shared memory works, privately
    };
    arguments << QStringLiteral("--bind") << scratchDir << scratchDir;
    return arguments;
}

// Written inside the sandbox, where everything else is read-only.
void pointAtScratch(QProcessEnvironment& environment, const QString& scratchDir)
{
    environment.insert(QStringLiteral("TMPDIR"), scratchDir);
    // CUDA's JIT cache (~/.nv/ComputeCache by default) is read-only in the sandbox; a cache per
    // worker also keeps one candidate's entries away from the next.
    environment.insert(QStringLiteral("CUDA_CACHE_PATH"), QDir(scratchDir).filePath(QStringLiteral("cuda-cache")));
}

// KernelBench-format answers build their load_inline extensions here (docs/sandbox.md): one
// folder for every worker of this user, so an extension built by the compile pool's worker is
// found by the GPU's, and by later runs. KWB_EXTENSION_CACHE in kwb's environment names another.
QString extensionCacheDir(const QProcessEnvironment& environment)
{
    QString dir = environment.value(QStringLiteral("KWB_EXTENSION_CACHE"));
    if (dir.isEmpty())
        dir = QDir(QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation))
                  .filePath(QStringLiteral("kernel-workbench/extensions"));
    QDir().mkpath(dir);
    return dir;
}

// The worker's hello (first stdout line answering id "probe"), started as program + arguments.
std::optional<int> helloDeviceCount(const QString& program, const QStringList& arguments,
                                    const QProcessEnvironment& environment, QString* why)
{
    QProcess process;
    process.setProgram(program);
    process.setArguments(arguments);
    process.setProcessEnvironment(environment);
    process.start();
    if (!process.waitForStarted(5000)) {
        *why = process.errorString();
        return std::nullopt;
    }
    process.write(R"({"id":"probe","type":"hello"})" "\n");
    process.closeWriteChannel(); // the worker ends at EOF once it has answered
    if (!process.waitForFinished(60000)) { // a real worker loads libtorch first
        process.kill();
        process.waitForFinished(2000);
        *why = QStringLiteral("no answer to hello within 60 s");
        return std::nullopt;
    }
    for (const QByteArray& line : process.readAllStandardOutput().split('\n')) {
        const QJsonObject hello = QJsonDocument::fromJson(line).object();
        if (hello.value(QLatin1String("id")).toString() == QLatin1String("probe") && hello.contains(QLatin1String("cuda_device_count")))
            return hello.value(QLatin1String("cuda_device_count")).toInt();
    }
    const QList<QByteArray> lines = process.readAllStandardError().trimmed().split('\n');
    *why = QStringLiteral("no hello (exit code %1)%2")
               .arg(process.exitCode())
               .arg(lines.isEmpty() || lines.last().isEmpty() ? QString()
                                                                : QStringLiteral(": ") + QString::fromUtf8(lines.last()).left(300));
    return std::nullopt;
}

SandboxProbe runProbe(const QString& configured, const QString& worker, const QProcessEnvironment& environment,
                      bool checkDevices)
{
    SandboxProbe probe;
    const QString bwrap = bubblewrapProgram(configured);
    if (bwrap.isEmpty()) {
        probe.reason = QStringLiteral("bubblewrap is not installed (no bwrap in PATH)");
        return probe;
    }
    if (!QFileInfo(bwrap).isExecutable()) {
        probe.reason = QStringLiteral("bubblewrap is not installed (%1 is not an executable)").arg(bwrap);
        return probe;
    }
    QTemporaryDir scratch(QDir(QDir::tempPath()).filePath(QStringLiteral("kwb-probe-XXXXXX")));
    if (!scratch.isValid()) {
        probe.reason = QStringLiteral("no scratch folder for the probe: %1").arg(scratch.errorString());
        return probe;
    }
    QString truePath = QStandardPaths::findExecutable(QStringLiteral("true"));
    if (truePath.isEmpty())
        truePath = QStringLiteral("/bin/true");
    QProcess process;
    process.setProgram(bwrap);
    process.setArguments(bubblewrapArguments(scratch.path()) << QStringLiteral("--") << truePath);
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start();
    if (!process.waitForStarted(5000)) {
        probe.reason = QStringLiteral("%1 does not start: %2").arg(bwrap, process.errorString());
        return probe;
    }
    if (!process.waitForFinished(10000)) {
        process.kill();
        process.waitForFinished(2000);
        probe.reason = QStringLiteral("%1 did not finish a test run within 10 s").arg(bwrap);
        return probe;
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        const QList<QByteArray> lines = process.readAll().trimmed().split('\n');
        const QString why = QString::fromUtf8(lines.isEmpty() ? QByteArray() : lines.last().trimmed()).left(300);
        probe.reason = QStringLiteral("bwrap fails here (exit code %1)%2")
                           .arg(process.exitCode())
                           .arg(why.isEmpty() ? QString() : QStringLiteral(": ") + why);
        return probe;
    }
    probe.works = true;
    if (!checkDevices || worker.isEmpty())
        return probe;
    // bwrap runs, but does the GPU? (On the H200, cuInit failed in the sandbox until /proc was
    // writable.) The worker's hello counts the devices CUDA sees: inside as many as outside.
    QString outsideWhy;
    const std::optional<int> outside = helloDeviceCount(worker, {}, environment, &outsideWhy);
    if (!outside || *outside == 0)
        return probe; // nothing to lose in the sandbox (a worker that fails outside fails on its own)
    QProcessEnvironment inside = environment;
    pointAtScratch(inside, scratch.path());
    QString insideWhy;
    const std::optional<int> sandboxed =
        helloDeviceCount(bwrap, bubblewrapArguments(scratch.path()) << QStringLiteral("--") << worker, inside, &insideWhy);
    if (!sandboxed) {
        probe.works = false;
        probe.reason = QStringLiteral("the worker does not answer in bwrap: %1").arg(insideWhy);
    } else if (*sandboxed < *outside) {
        probe.works = false;
        probe.reason = QStringLiteral("the worker sees %1 GPU(s) in bwrap and %2 outside").arg(*sandboxed).arg(*outside);
    }
    return probe;
}

WorkerLaunchOptions withWorker(WorkerLaunchOptions options, const QString& program, const QProcessEnvironment& environment)
{
    if (options.worker.isEmpty()) {
        options.worker = program.contains(QLatin1Char('/')) ? program : QStandardPaths::findExecutable(program);
        options.workerEnvironment = environment;
    }
    return options;
}

} // namespace

bool hostHasNvidiaGpu()
{
    return !QDir(QStringLiteral("/dev")).entryList({QStringLiteral("nvidia[0-9]*")}, QDir::System).isEmpty() ||
           !QDir(QStringLiteral("/proc/driver/nvidia/gpus")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty();
}

SandboxProbe probeBubblewrapOnce(const QString& bubblewrap, const QString& worker, const QProcessEnvironment& environment,
                                 bool checkDevices)
{
    return runProbe(bubblewrap, worker, environment, checkDevices);
}

SandboxProbe probeBubblewrap(const QString& bubblewrap, const QString& worker, const QProcessEnvironment& environment)
{
    static QMutex mutex;
    static QHash<QString, SandboxProbe> probes;
    QMutexLocker lock(&mutex);
    const bool checkDevices = !worker.isEmpty() && hostHasNvidiaGpu();
    const QString key = bubblewrap + QLatin1Char('\n') + (checkDevices ? worker : QString());
    const auto found = probes.constFind(key);
    if (found != probes.constEnd())
        return found.value();
    const SandboxProbe probe = runProbe(bubblewrap, worker, environment, checkDevices);
    probes.insert(key, probe);
    return probe;
}

bool osSandboxTurnedOffByEnvironment()
{
    const QString value = qEnvironmentVariable("KWB_OS_SANDBOX").trimmed().toLower();
    return value == QLatin1String("0") || value == QLatin1String("off") || value == QLatin1String("no") ||
           value == QLatin1String("false");
}

QString sandboxStatus(const WorkerLaunchOptions& options)
{
    if (options.target.isRemote())
        return launchWorker(QString(), {}, {}, options).sandbox;
    if (osSandboxTurnedOffByEnvironment())
        return QStringLiteral("none: turned off (KWB_OS_SANDBOX=%1)").arg(qEnvironmentVariable("KWB_OS_SANDBOX"));
    if (!options.osSandbox)
        return QStringLiteral("none: turned off (--no-os-sandbox)");
    const SandboxProbe probe = probeBubblewrap(options.bubblewrap, options.worker, options.workerEnvironment);
    return probe.works ? kSandboxBubblewrap : QStringLiteral("none: ") + probe.reason;
}

QString workerSandboxStatus(const WorkerLimits& limits)
{
    WorkerLaunchOptions options;
    options.osSandbox = limits.osSandbox;
    return sandboxStatus(options);
}

QString shellQuote(const QString& text)
{
    QString quoted = text;
    quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

QString remoteWorkerScript()
{
    // The same bwrap options as here, with the remote scratch folder "$d".
    const QString scratchMark = QStringLiteral("KWB_SCRATCH");
    QStringList bwrap;
    for (const QString& argument : bubblewrapArguments(scratchMark))
        bwrap << (argument == scratchMark ? QStringLiteral("\"$d\"") : shellQuote(argument));
    const QString options = bwrap.join(QLatin1Char(' '));
    return QStringLiteral(
               "sandbox=$1; gpu=$2; n=$3; shift 3\n"
               "while [ \"$n\" -gt 0 ]; do export \"$1\"; shift; n=$((n - 1)); done\n"
               "d=$(mktemp -d \"${TMPDIR:-/tmp}/kwb-worker-XXXXXX\") || { echo \"kwb-worker: no scratch folder on "
               "$(uname -n)\" >&2; exit 97; }\n"
               "trap 'rm -rf \"$d\"' EXIT\n"
               "if [ -n \"$gpu\" ]; then CUDA_VISIBLE_DEVICES=$gpu; export CUDA_VISIBLE_DEVICES; fi\n"
               "TMPDIR=$d; CUDA_CACHE_PATH=$d/cuda-cache; export TMPDIR CUDA_CACHE_PATH\n"
               // The shared extension cache (docs/sandbox.md): the worker's own default is in the
               // scratch folder, gone with each worker.
               "KWB_EXTENSION_CACHE=${KWB_EXTENSION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernel-workbench/extensions}\n"
               "if mkdir -p \"$KWB_EXTENSION_CACHE\" 2>/dev/null; then export KWB_EXTENSION_CACHE; set -- --bind "
               "\"$KWB_EXTENSION_CACHE\" \"$KWB_EXTENSION_CACHE\" -- \"$@\"\n"
               "else echo \"kwb-worker: no extension cache folder $KWB_EXTENSION_CACHE on $(uname -n)\" >&2; "
               "unset KWB_EXTENSION_CACHE; set -- -- \"$@\"; fi\n"
               "if [ \"$sandbox\" = 1 ] && command -v bwrap >/dev/null 2>&1 && bwrap %1 -- true >/dev/null 2>&1; then\n"
               "  bwrap %1 \"$@\"\n"
               "else\n"
               "  if [ \"$sandbox\" = 1 ]; then echo \"kwb-worker: warning: the worker runs without the OS sandbox on "
               "$(uname -n): bwrap is missing or fails there\" >&2; fi\n"
               "  while [ \"$1\" != -- ]; do shift; done; shift\n"
               "  \"$@\"\n"
               "fi\n")
        .arg(options);
}

namespace {

QString programFromEnvironment(const char* variable, const QString& fallback)
{
    const QString configured = qEnvironmentVariable(variable);
    return configured.isEmpty() ? fallback : configured;
}

WorkerLaunch launchRemote(const QStringList& arguments, const QProcessEnvironment& environment,
                          const WorkerLaunchOptions& options)
{
    const WorkerTarget& target = options.target;
    WorkerLaunch launch;
    launch.remote = true;
    launch.exitCodeCarriesSignal = true;
    const bool sandbox = options.osSandbox && !osSandboxTurnedOffByEnvironment();
    launch.sandbox = sandbox ? kSandboxRemote
                             : (osSandboxTurnedOffByEnvironment()
                                    ? QStringLiteral("none: turned off (KWB_OS_SANDBOX=%1)").arg(qEnvironmentVariable("KWB_OS_SANDBOX"))
                                    : QStringLiteral("none: turned off (--no-os-sandbox)"));
    // This machine's --tasks-dir means nothing there: the remote worker uses its own tasks.
    QStringList workerArguments;
    for (qsizetype i = 0; i < arguments.size(); ++i) {
        if (arguments.at(i) == QLatin1String("--tasks-dir") && i + 1 < arguments.size()) {
            ++i;
            continue;
        }
        workerArguments << arguments.at(i);
    }
    // The supervisor reads only /proc of this machine: the worker watches its own host limits.
    const auto limit = [](qint64 value) { return value > 0 ? QString::number(value) : QStringLiteral("default"); };
    workerArguments << QStringLiteral("--max-host-memory") << limit(options.hostMemoryBytes)
                    << QStringLiteral("--max-host-threads") << limit(options.hostThreads)
                    << QStringLiteral("--end-on-stdin-eof");
    const QStringList scriptArguments = QStringList{QStringLiteral("kwb-worker"), sandbox ? QStringLiteral("1") : QStringLiteral("0"),
                                                    target.kind == WorkerTarget::Kind::Slurm ? QString() : QString::number(target.gpu),
                                                    QString::number(target.environment.size())}
                                        + target.environment + QStringList{target.remoteWorker} + workerArguments;
    if (target.kind == WorkerTarget::Kind::Ssh) {
        // One string for the remote login shell; the script runs under sh whatever that shell is.
        QStringList command{QStringLiteral("sh"), QStringLiteral("-c"), shellQuote(remoteWorkerScript())};
        for (const QString& argument : scriptArguments)
            command << shellQuote(argument);
        launch.program = programFromEnvironment("KWB_SSH", QStringLiteral("ssh"));
        launch.arguments = QStringList{QStringLiteral("-T"),
                                       QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
                                       // A host that stops answering counts as lost after ~15 s.
                                       QStringLiteral("-o"), QStringLiteral("ServerAliveInterval=5"),
                                       QStringLiteral("-o"), QStringLiteral("ServerAliveCountMax=3"),
                                       target.host, command.join(QLatin1Char(' '))};
        // The user's ssh (agent, config) runs here; nothing of this environment is sent there.
        launch.environment = QProcessEnvironment::systemEnvironment();
        return launch;
    }
    launch.program = programFromEnvironment("KWB_SRUN", QStringLiteral("srun"));
    launch.arguments = QStringList{QStringLiteral("--partition=") + target.host, QStringLiteral("--ntasks=1"),
                                   QStringLiteral("--gpus=1"), QStringLiteral("--quiet"),
                                   QStringLiteral("--kill-on-bad-exit=1")};
    if (!target.timeLimit.isEmpty())
        launch.arguments << QStringLiteral("--time=") + target.timeLimit;
    launch.arguments << QStringLiteral("sh") << QStringLiteral("-c") << remoteWorkerScript() << scriptArguments;
    // srun hands its environment to the worker: the worker's own, plus what srun needs to find
    // its allocation (SLURM_*) and its user.
    launch.environment = environment;
    const QProcessEnvironment system = QProcessEnvironment::systemEnvironment();
    for (const QString& name : system.keys())
        if (name.startsWith(QLatin1String("SLURM_")) || name == QLatin1String("USER") || name == QLatin1String("LOGNAME"))
            launch.environment.insert(name, system.value(name));
    return launch;
}

} // namespace

WorkerLaunch launchWorker(const QString& program, const QStringList& arguments,
                          const QProcessEnvironment& environment, const WorkerLaunchOptions& options)
{
    if (options.target.isRemote())
        return launchRemote(arguments, environment, options);
    WorkerLaunch launch;
    launch.program = program;
    QStringList workerArguments = arguments;
    if (!options.gpuQuietLock.isEmpty())
        workerArguments << QStringLiteral("--gpu-quiet-lock") << options.gpuQuietLock;
    launch.arguments = workerArguments;
    launch.environment = environment;
    const QString extensions = extensionCacheDir(environment);
    launch.environment.insert(QStringLiteral("KWB_EXTENSION_CACHE"), extensions);
    launch.sandbox = options.scratchDir.isEmpty() && options.osSandbox && !osSandboxTurnedOffByEnvironment()
                         ? QStringLiteral("none: no scratch folder for the worker")
                         : sandboxStatus(withWorker(options, program, environment));
    if (launch.sandbox != kSandboxBubblewrap)
        return launch;
    // A program that cannot start is started as it is, so that the failure reads as QProcess's
    // "could not start", not as bwrap's exit code.
    const QString resolved = program.contains(QLatin1Char('/')) ? program : QStandardPaths::findExecutable(program);
    if (resolved.isEmpty() || !QFileInfo(resolved).isExecutable() || QFileInfo(resolved).isDir())
        return launch;
    launch.sandboxed = true;
    launch.exitCodeCarriesSignal = true;
    launch.program = bubblewrapProgram(options.bubblewrap);
    // The extension cache is the one folder besides the scratch that the worker may write.
    launch.arguments = bubblewrapArguments(options.scratchDir) << QStringLiteral("--bind") << extensions << extensions;
    // Visible under / already where the lock directory is an ordinary folder; bound on its own so
    // that one under a path the sandbox replaces (/dev/shm) is the same file inside. Read-only:
    // flock needs no more.
    if (!options.gpuQuietLock.isEmpty()) {
        launch.arguments << QStringLiteral("--ro-bind") << options.gpuQuietLock << options.gpuQuietLock;
        // Its writers-first gate and its evaluations' turn, where the supervisor made them (bwrap
        // refuses a missing source).
        for (const QString& beside : {GpuLeases::quietIntentPath(options.gpuQuietLock), GpuLeases::quietTurnPath(options.gpuQuietLock)})
            if (QFileInfo::exists(beside))
                launch.arguments << QStringLiteral("--ro-bind") << beside << beside;
    }
    launch.arguments << QStringLiteral("--") << program;
    launch.arguments += workerArguments;
    pointAtScratch(launch.environment, options.scratchDir);
    return launch;
}

int signalFromWrappedExitCode(int exitCode)
{
    return exitCode > 128 && exitCode < 128 + 65 ? exitCode - 128 : 0;
}

QString sandboxWarning(const QString& sandboxStatus)
{
    if (sandboxStatus == kSandboxBubblewrap || sandboxStatus == kSandboxRemote)
        return {}; // a remote host that cannot sandbox says so on the worker's stderr
    const QString reason = sandboxStatus.startsWith(QLatin1String("none: ")) ? sandboxStatus.mid(6) : sandboxStatus;
    return QStringLiteral("the worker runs without the OS sandbox (network and files open to it): ") + reason;
}

} // namespace kwb
