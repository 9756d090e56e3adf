#pragma once
// How a worker process is started: the one place that turns "run kwb-worker with these
// arguments" into the program and arguments a QProcess starts (WorkerSupervisor calls it for
// every worker): directly, or inside bubblewrap's OS sandbox (docs/sandbox.md, "The OS
// sandbox"): no network, only what it needs of the file system, read-only but for the worker's
// scratch folder; or on another machine (docs/remote-workers.md): `ssh -T HOST` or `srun`,
// running a small sh script there that makes a scratch folder, sets CUDA_VISIBLE_DEVICES, wraps
// the worker in bwrap with the same layout (decided on that host) where bwrap works there (else
// says so on stderr and has the worker refuse native model code) and starts it with
// --end-on-stdin-eof, so the worker ends itself when the connection goes (its stdin closes),
// busy or not.

#include "core/workers/hostlimits.h"
#include "core/workers/workertarget.h"

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace kwb {

/// The sizes of a local sandbox's private tmpfs mounts (docs/sandbox.md): their pages are host
/// memory that the host limits, which count resident memory, do not see. A build's /tmp holds
/// nvcc's intermediate files.
constexpr qint64 kSandboxTmpBytes = qint64(512) << 20;
constexpr qint64 kSandboxShmBytes = qint64(256) << 20;
constexpr qint64 kSandboxBuildTmpBytes = qint64(2) << 30;
/// The builder's empty mount at the extension cache's path: it holds only the staging folder's
/// mount point.
constexpr qint64 kSandboxStagingMountBytes = qint64(1) << 20;

/// The sandbox a run records when its workers run in bubblewrap; otherwise "none: <reason>".
inline const QString kSandboxBubblewrap = QStringLiteral("bubblewrap");

struct WorkerLaunchOptions
{
    bool osSandbox = true; ///< wrap in bubblewrap where it works (and KWB_OS_SANDBOX is not 0)
    QString bubblewrap;    ///< the bwrap program; empty: `bwrap` in PATH
    QString scratchDir;    ///< the one writable folder (TMPDIR and CUDA's JIT cache); required for the sandbox
    /// The worker the probe asks for hello in and out of the sandbox where this host has an
    /// NVIDIA GPU (empty: launchWorker()'s program); its environment.
    QString worker;
    QProcessEnvironment workerEnvironment;
    /// Where the worker runs (default: here).
    WorkerTarget target;
    /// A remote worker's host limits (WorkerLimits: 0 is the default of the host that runs it),
    /// passed as --max-host-memory and --max-host-threads for the worker to enforce there; a
    /// local worker's are the supervisor's to enforce.
    qint64 hostMemoryBytes = 0;
    int hostThreads = 0;
    /// A local worker's GPU quiet-lock file (GpuLeases::ensureQuietLock(), gpulease.h), passed as
    /// `--gpu-quiet-lock PATH` and bound read-only into the sandbox, so the worker can open it
    /// wherever the lock directory lies; empty: none. Not passed to a remote worker (this
    /// machine's file means nothing there).
    QString gpuQuietLock;
};

/// What to start.
struct WorkerLaunch
{
    QString program;
    QStringList arguments;
    QProcessEnvironment environment;
    bool sandboxed = false;
    /// kSandboxBubblewrap, or "none: <reason>" ("none: turned off (KWB_OS_SANDBOX=0)",
    /// "none: bubblewrap is not installed (no bwrap in PATH)", "none: bwrap fails here: …"), or
    /// for a remote worker kSandboxRemote (decided on that host, which says on stderr when not).
    QString sandbox;
    /// The exit code of the started program says 128 + N for a worker that died by signal N
    /// (bwrap; the remote script, whose exit code ssh and srun pass on).
    bool exitCodeCarriesSignal = false;
    /// The started program is ssh or srun: its own pid, memory and threads are not the worker's.
    bool remote = false;
};

/// The sandbox a run records for remote workers with the sandbox on.
inline const QString kSandboxRemote = QStringLiteral("remote: bubblewrap where it works on the host");

/// ssh's exit code when the connection failed or was lost (the remote command's own code otherwise).
constexpr int kSshConnectionLost = 255;

/// "'text'" for a POSIX shell, any text.
QString shellQuote(const QString& text);
/// The sh script a remote worker runs under (see the top of this file); its arguments: sandbox
/// ("1" or "0"), the CUDA_VISIBLE_DEVICES value ("" to keep the host's, as under Slurm), the
/// count N of environment assignments that follow, N "NAME=VALUE" (the target's `env=`), then
/// the worker program and its arguments. KWB_EXTENSION_CACHE, where no assignment sets it, is
/// that host's ${XDG_CACHE_HOME:-$HOME/.cache}/kernel-workbench/extensions, the default kwb uses
/// here; the script makes it. In the sandbox the layout is the local one (the same list in the
/// launcher, rendered as sh and decided there): the cache read-only, with a build broker
/// (`kwb-worker --build-broker`) started there outside the worker's sandbox, whose builds run in
/// a sandbox of the same layout.
QString remoteWorkerScript();

/// The environment a worker gets (docs/sandbox.md): these names, names with these prefixes, and
/// never a name holding one of the secret words (any case). workerEnvironment() applies it here;
/// the remote script applies the same lists there to the login environment it starts from.
const QStringList& workerEnvironmentNames();
const QStringList& workerEnvironmentPrefixes();
const QStringList& secretNameWords();

/// Whether bwrap starts a process in the sandbox's namespaces here (no bwrap, user namespaces
/// disabled, a container without the rights: it does not), and, where this host has an NVIDIA
/// GPU (hostHasNvidiaGpu()) and a worker is named, whether that worker sees in the sandbox as
/// many CUDA devices as outside (its hello's cuda_device_count, asked both ways). Probed once per
/// bwrap program, worker and process, by running `true` (and the worker) with the options a
/// worker gets. A sandbox that hides the GPU does not "work": the worker then runs without it,
/// and the run records why ("none: the worker sees 0 GPU(s) in bwrap and 1 outside").
struct SandboxProbe
{
    bool works = false;
    QString reason; ///< why not, for "none: <reason>"
};
SandboxProbe probeBubblewrap(const QString& bubblewrap = QString(), const QString& worker = QString(),
                             const QProcessEnvironment& environment = QProcessEnvironment());
/// The probe without the cache, the device check forced on or off (tests: no GPU needed).
SandboxProbe probeBubblewrapOnce(const QString& bubblewrap, const QString& worker,
                                 const QProcessEnvironment& environment, bool checkDevices);
/// /dev/nvidia<N> or /proc/driver/nvidia/gpus/* exists.
bool hostHasNvidiaGpu();

/// Whether a sandbox status says the user turned the sandbox off ("none: turned off (…)"), as
/// opposed to the sandbox being unavailable: only then may a worker run native model code
/// unsandboxed (launchWorker() passes --refuse-native-code otherwise).
bool sandboxTurnedOff(const QString& sandboxStatus);

/// Whether $KWB_OS_SANDBOX turns the sandbox off ("0", "off", "no", "false").
bool osSandboxTurnedOffByEnvironment();

/// What launchWorker() records as the sandbox for these options, without starting anything.
QString sandboxStatus(const WorkerLaunchOptions& options);

/// What a user is told about a worker started with `sandboxStatus`: "" under bubblewrap, else
/// "the worker runs without the OS sandbox (network and files open to it): <reason>".
QString sandboxWarning(const QString& sandboxStatus);

/// sandboxStatus() of a worker under these limits (bwrap from PATH): what a run records.
QString workerSandboxStatus(const WorkerLimits& limits);

/// The program, arguments and environment that start `program arguments` with `environment`
/// under the options. In the sandbox the environment also gets TMPDIR and CUDA_CACHE_PATH in
/// the scratch folder (the rest of the file system, ~/.nv included, is read-only there).
WorkerLaunch launchWorker(const QString& program, const QStringList& arguments, const QProcessEnvironment& environment,
                          const WorkerLaunchOptions& options);

/// bubblewrap's exit code for a child that died by a signal is 128 + the signal. Returns the
/// signal, or 0 for an ordinary exit code. A sandboxed worker and everything it starts cannot
/// exit with a code of 128 or more (its seccomp filter, src/worker/sandbox/sandboxinit.h), so there
/// such a code is the kernel's word, not a candidate's.
int signalFromWrappedExitCode(int exitCode);

} // namespace kwb
