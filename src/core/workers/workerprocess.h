#pragma once
// One worker process's life, for the supervisor and its spare pool (workersupervisor.h,
// sparepool.h): how it is created (workerlauncher.h: directly, in the OS sandbox or on another
// machine), its own pid, how it is signalled and dropped, and how its end is described. No
// request, queue or spare is known here.

#include "core/workers/hostlimits.h"
#include "core/workers/memorycgroup.h"
#include "core/workers/workertarget.h"

#include <QByteArray>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace kwb {

/// The environment a worker starts with: only what kwb-worker, libtorch, NVRTC and the CUDA driver
/// read (PATH, HOME, TMPDIR, TZ, LANG, LANGUAGE, LC_*, LD_LIBRARY_PATH, KWB_TASKS_DIR,
/// KWB_CUDA_INCLUDE_DIR, the sanitizers' *SAN_OPTIONS, and CUDA_*, NVIDIA_*, CUBLAS_*, CUDNN_*,
/// TORCH_*, PYTORCH_*, OMP_*), plus the names listed in $KWB_WORKER_ENV (comma-separated), taken
/// from `from`. Model code runs in the worker, so nothing else of kwb's environment reaches it:
/// no API key (KWB_API_KEY, OPENAI_API_KEY), no user variable, and no name that looks like a
/// secret (containing KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL), even when listed.
QProcessEnvironment workerEnvironment(const QProcessEnvironment& from = QProcessEnvironment::systemEnvironment());

/// Where a worker is in its life. Warming: hello answered, `warm` sent (spares only); a worker is
/// Idle (ready) after its hello answer and again after its warm answer.
enum class WorkerState { None, Starting, Handshaking, Warming, Idle, Busy, Stopping };
/// Started and not yet ready for a request: nothing of a candidate has run in it.
inline bool beforeReady(WorkerState state)
{
    return state == WorkerState::Starting || state == WorkerState::Handshaking || state == WorkerState::Warming;
}

/// How the supervisor's workers are started (its setters fill it).
struct WorkerLaunchSettings
{
    QString program;
    QStringList arguments;
    QProcessEnvironment environment = workerEnvironment();
    WorkerLimits limits;
    WorkerTarget target;
    QString bubblewrap; ///< empty: `bwrap` in PATH
    /// A memory cgroup of its own for a local worker where the machine allows one
    /// (memorycgroup.h); off only for the tests that pin the /proc poll alone.
    bool memoryCgroup = true;
};

/// A worker process as the settings say, not started, a child of parent, with its scratch folder
/// (removed with it) and, for a local worker, its GPU's quiet lock (created before the start: a
/// sandboxed worker cannot create it).
QProcess* createWorkerProcess(const WorkerLaunchSettings& settings, QObject* parent);
/// The sandbox the next worker gets: "bubblewrap" or "none: <reason>" (workerlauncher.h).
QString sandboxStatusOf(const WorkerLaunchSettings& settings);
/// The counters of the worker's memory cgroup (read: false where it has none).
MemoryCgroupEnding memoryCgroupEndingOf(const QProcess* process);
/// The GPU quiet lock the process was started with (`--gpu-quiet-lock`), empty: none.
QString quietLockOf(const QProcess* process);

/// The worker's own pid: in the sandbox the started process is bwrap, and the worker its child.
qint64 workerProcessId(QProcess* process);
/// Signals the worker: SIGTERM to the worker itself (in the sandbox, where it is PID 1 of its
/// namespace and SIGTERM does not reach it, SIGKILL), SIGKILL to the worker and the started process.
void signalWorker(QProcess* process, int signal);
/// Ends a worker that holds no request (SIGKILL is fine) and forgets it: no signal of it reaches
/// owner again; it is deleted once it has ended.
void dropWorker(QProcess* process, QObject* owner);

/// bwrap and the remote script pass on 128 + the signal of a worker that died by one: the exit as
/// Qt would have reported it without them.
void unwrapSignal(const QProcess* process, int* exitCode, QProcess::ExitStatus* exitStatus);
/// "exited with code 0", "killed by signal 11 (SIGSEGV)".
QString exitDescription(int exitCode, QProcess::ExitStatus exitStatus);
/// The signals that end a process from outside (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT): the
/// sandbox gives a candidate's code no way to send them.
bool endedFromOutside(int signal);
/// The last non-empty line of a log: where a loader or an assertion says why a program died.
QString lastLine(const QByteArray& log);
/// What a remote worker that ended itself over its host limits said on stderr, worded as the
/// supervisor words its own verdict ("host memory 9 GiB over the limit of 8 GiB"); "" when the
/// tail holds no such line.
QString hostLimitMessage(const QByteArray& log);

} // namespace kwb
