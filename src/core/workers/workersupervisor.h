#pragma once
// The one owner of kwb-worker processes (docs/protocol.md). Pages and the CLI never touch
// QProcess: they send requests here and listen to the signals, in the shape of hotspot's
// PerfParser. Everything runs on the thread that owns the supervisor, through signals and slots;
// there are no threads or locks inside. Responses are decoded once, here (WorkerResponse): the
// signals carry typed values.
//
// One supervisor runs one worker at a time, so one supervisor per GPU (give each its own
// CUDA_VISIBLE_DEVICES through setProcessEnvironment()); timings need the GPU to themselves.
// The supervisor keeps the request queue and the running worker's life (start, handshake,
// time-out, host limits, cancel, retire); beside it, in rooms of their own:
// - workerprocess.h: how one worker process is started, signalled and described;
// - sparepool.h: in FreshPerRequest mode (and in reuse mode once a worker retired after a
//   request: a KernelBench-format answer's library retires every worker it ran in), the spares:
//   the next workers, started while an evaluation runs (at once where the host has the cores,
//   else one after another) and warmed (`warm`: its CUDA context and the libraries' first calls,
//   under the GPU's quiet lock), so the next request skips the process start and the first-use
//   costs;
// - leavingworkers.h: a worker that answered its evaluation, let go as it exits while the next
//   request starts on a spare, its exit held under the GPU's quiet lock (gpulease.h).
// Local workers (both modes) get `--gpu-quiet-lock` for their GPU; remote ones neither lock nor warm.
// The switches that exist for the benchmark's A/B runs (spare count, starts at once, warming,
// hand-off) are not this API: supervisortuning.h, which the product does not link.

#include "core/protocol/defaults.h"
#include "core/protocol/evaluationstatus.h"
#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerresponse.h"
#include "core/workers/hostlimits.h"
#include "core/workers/leavingworkers.h"
#include "core/workers/sparepool.h"
#include "core/workers/workerprocess.h"
#include "core/workers/workertarget.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <algorithm>
#include <optional>

namespace kwb {

struct EvaluationResult;
struct SupervisorTuning;

// A request that ends without a response fails with an EvaluationStatus's wire name
// (core/protocol/evaluationstatus.h): timeout, crashed, worker_lost, protocol_error,
// start_failed, bad_request, cancelled or resource_limit (the worker went over its host-memory or
// host-thread limit, WorkerLimits, and was killed: the message names the limit and the peak; during
// an `evaluate` it is the candidate's doing, like `crashed`; before hello it is `start_failed`). `worker_lost`: the
// worker, busy with the request, was ended by a signal that the supervisor did not send and that a candidate's code
// cannot raise through the sandbox: SIGKILL (the OOM killer, `kill -9`), SIGTERM, SIGINT, SIGHUP, SIGQUIT. A worker
// that dies by any other signal or exits (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, an exit code) during a request is
// `crashed`: the candidate's code was running in it. The supervisor's own ends (time-out, cancel, protocol error) keep
// their status. A worker that dies between requests fails no request: the next one starts a fresh worker.

class WorkerSupervisor : public QObject
{
    Q_OBJECT
public:
    /// When a worker is replaced by a fresh one. Whatever the mode, a worker is replaced after a
    /// crash, a timeout, a protocol error and a response with "worker_healthy": false.
    enum class Isolation {
        FreshPerRequest,   ///< every `evaluate` gets a worker that has evaluated nothing before
        ReuseWhileHealthy, ///< keep one worker while it stays healthy (faster, less isolated)
    };
    Q_ENUM(Isolation)

    /// How one request ended, for run().
    struct Outcome
    {
        /// The worker's response, decoded once here (it may say ok: false); empty on failure.
        WorkerResponse response;
        QString status; ///< empty when there is a response, else an EvaluationStatus wire name
        QString message;
        QByteArray stderrTail; ///< the worker's stderr during the request, last stderrLimit() bytes
        qint64 stderrDroppedBytes = 0;
        bool hasResponse() const { return status.isEmpty(); }
    };

    static constexpr int kDefaultTimeoutMs = defaults::kEvaluationTimeoutMs;
    static constexpr int kDefaultKillGraceMs = 2000;
    static constexpr qsizetype kDefaultStderrLimit = qsizetype(1) << 20;
    /// How often the worker's host memory and threads are read while a request runs.
    static constexpr int kLimitPollMs = 50;

    explicit WorkerSupervisor(QObject* parent = nullptr);
    /// Ends a running worker (EOF, then kill) and drops pending requests without signals.
    ~WorkerSupervisor() override;

    void setProgram(const QString& program, const QStringList& arguments = {});
    QString program() const { return m_launch.program; }
    QStringList arguments() const { return m_launch.arguments; }
    /// The worker's environment, used as given (default: workerEnvironment()), e.g. with
    /// CUDA_VISIBLE_DEVICES set.
    void setProcessEnvironment(const QProcessEnvironment& environment);
    void setIsolation(Isolation isolation);
    Isolation isolation() const { return m_isolation; }
    /// Whether to start the next workers ahead, while an `evaluate` runs (FreshPerRequest mode;
    /// in reuse mode one, once a worker has retired after a request; on by default; sparepool.h). A spare is sent
    /// `hello` (and `warm`) and nothing else until it takes over; a spare that dies is replaced at the next top-up.
    void setSpareWorker(bool enabled) { m_spares.setEnabled(enabled); }
    bool spareWorker() const { return m_spares.enabled(); }
    /// How many spares reuse mode keeps once a worker has retired (one by default; sparepool.h).
    void setSparesForRetiringWorkers(int count) { m_spares.setRetiringCount(count); }
    int sparesForRetiringWorkers() const { return m_spares.retiringCount(); }
    /// Evaluations will come (a queue holds some that wait for their compile or for the GPU's
    /// `device` answer): with no spare alive, the first starts now, so that the evaluation after
    /// the first finds it warm. sendRequest() does the same for an `evaluate`. Nothing in reuse
    /// mode or with spares off.
    void expectEvaluations() { m_spares.expect(); }
    /// Whether spares are warmed while requests run too (off by default): a spare is then sent
    /// `warm` as soon as it has answered hello, busy or idle, instead of only once the supervisor
    /// idles, and several spares may warm at once (each must be warm by the time the running
    /// candidate ends). A warm-up takes the quiet lock shared part by part (the worker lets it go
    /// between parts), so a timing stage that starts meanwhile waits for the parts running then,
    /// at most one per warming spare.
    void setWarmWhileBusy(bool enabled) { m_spares.setWarmWhileBusy(enabled); }
    bool warmWhileBusy() const { return m_spares.warmWhileBusy(); }
    /// Whether a spare's `warm` also starts the worker's embedded Python (`"python": true`,
    /// docs/protocol.md): for KernelBench-format answers, whose evaluation in a fresh worker
    /// otherwise starts it first (its `import torch`, seconds). Off by default (a native run's
    /// spares would hold a Python for nothing); EvaluationQueue turns it on at the first
    /// KernelBench-format job. Spares warmed before keep their warm; a request still starts the
    /// Python itself where its spare has none.
    void setWarmPython(bool enabled) { m_spares.setWarmPython(enabled); }
    bool warmPython() const { return m_spares.warmPython(); }
    /// The queue's word that its requests will retire their workers (KernelBench-format answers,
    /// whose libraries load in the worker): in reuse mode the spares start now, as they do once a
    /// worker has retired, so that the first evaluations find workers whose Python is started (in
    /// session 48's cold runs, without this, each run's first four evaluations waited 4-7 s for
    /// torch's import: the first ones in workers started for them, the next in spares started as
    /// the first workers retired). Nothing in the other modes, whose spares start anyway.
    void expectRetiringWorkers();
    bool retiringWorkersExpected() const { return m_spares.retiringWorkers(); }
    /// The wall-clock limit of a request that names none, from dispatch (worker start and hello
    /// included) to its response.
    void setDefaultTimeout(int ms) { m_defaultTimeoutMs = ms; }
    int defaultTimeout() const { return m_defaultTimeoutMs; }
    /// How long a worker has to end after SIGTERM (or after EOF, when retired) before SIGKILL.
    void setKillGracePeriod(int ms) { m_killGraceMs = ms; }
    /// The host limits and the OS sandbox of the workers started from now on (default: the
    /// machine's defaults, sandbox on). The limits are checked every kLimitPollMs while a request
    /// runs, over the worker and every process under it; one over ends the request with
    /// `resource_limit` (SIGKILL, at once: the machine's memory is at stake).
    void setLimits(const WorkerLimits& limits);
    WorkerLimits limits() const { return m_launch.limits; }
    /// Where the workers started from now on run (default: here; workertarget.h). A remote
    /// worker keeps the time-out, cancel, kill and restart of a local one: ending the ssh or
    /// srun process closes the worker's stdin there, and the worker (--end-on-stdin-eof) ends
    /// itself at once. The host limits are not polled there (docs/remote-workers.md).
    void setTarget(const WorkerTarget& target);
    WorkerTarget target() const { return m_launch.target; }
    /// Whether the last worker ended because its ssh connection failed or broke (ssh's exit code
    /// 255): its request, if any, failed with `worker_lost` (or `start_failed` before hello).
    bool connectionLost() const { return m_connectionLost; }
    /// The bwrap program (default: `bwrap` in PATH); tests point it elsewhere.
    void setBubblewrapProgram(const QString& program);
    /// The sandbox the next worker gets: "bubblewrap" or "none: <reason>" (workerlauncher.h).
    QString sandboxStatus() const { return sandboxStatusOf(m_launch); }
    /// How much of the worker's stderr is kept per request (the tail).
    void setStderrLimit(qsizetype bytes) { m_stderrLimit = bytes; }
    qsizetype stderrLimit() const { return m_stderrLimit; }

    /// Queues a request and returns its id, which replaces any "id" the object had. Requests run
    /// one at a time in order. Each ends in exactly one responseAvailable() or requestFailed(),
    /// always emitted later from the event loop, never from inside this call. timeoutMs < 0 means
    /// defaultTimeout().
    qint64 sendRequest(const QJsonObject& request, int timeoutMs = -1);
    /// Cancels a queued or running request (a running one ends its worker). It then fails with
    /// status `cancelled`. Returns false when the id is not pending.
    bool cancelRequest(qint64 id);
    void cancelAll();
    /// Retires an idle worker (EOF on its stdin) and ends the spares; a later request starts a
    /// fresh one.
    void stopWorker();

    /// The running worker's process id, 0 when none runs. In the sandbox it is bwrap's until the
    /// worker has answered hello, then the worker's own.
    qint64 workerPid() const { return m_pid; }
    /// The worker that answered the last request, kept after it is retired or handed off (it
    /// may still be exiting): whose processes an out-of-memory's check counts as the candidate's.
    qint64 answeringWorkerPid() const { return m_answeringPid; }
    /// The process id of the spare that would take over next (0 when there is none; see
    /// SparePool::next()), whether it may take over now (it has answered hello and is not
    /// warming), and whether it is also warm (it answered warm with its timings).
    qint64 spareWorkerPid() const;
    bool spareWorkerReady() const;
    bool spareWorkerWarmed() const;
    /// The spares alive now (started and not yet taken over or dropped), and their process ids
    /// (0 for one not started yet), oldest first.
    int liveSpareCount() const { return m_spares.size(); }
    QList<qint64> spareWorkerPids() const { return m_spares.pids(); }
    /// The hello answer of the running worker (empty, raw empty, before the handshake).
    HelloInfo workerHello() const { return m_hello; }
    /// Requests queued or running.
    int pendingCount() const { return int(m_queue.size()) + (m_active ? 1 : 0); }

    /// Blocking convenience for the CLI: runs one request to its end in a local event loop. Not
    /// for the GUI thread, whose event loop must stay the only one.
    Outcome run(const QJsonObject& request, int timeoutMs = -1);

Q_SIGNALS:
    /// A request was taken from the queue (its wall-clock limit starts now).
    void requestStarted(qint64 id);
    /// The worker answered request `id`, decoded (the response may still say ok: false).
    void responseAvailable(qint64 id, const kwb::WorkerResponse& response);
    /// Request `id` ended without a response; status is an EvaluationStatus wire name.
    void requestFailed(qint64 id, const QString& status, const QString& message);
    /// The worker's stderr while request `id` ran (the last stderrLimit() bytes, and how many
    /// bytes before them were dropped). Emitted just before the request's final signal, for every
    /// request that was taken from the queue.
    void stderrAvailable(qint64 id, const QByteArray& tail, qint64 droppedBytes);
    /// A fresh worker passed the hello handshake (a spare: when it takes over). `hello` is its hello
    /// answer; for a spare that warmed, with the warm answer's timings (HelloInfo::warmMs).
    void workerAvailable(qint64 pid, const kwb::HelloInfo& hello);
    /// A worker ended; description says how ("exited with code 0", "killed by signal 11 (SIGSEGV)").
    void workerFinished(qint64 pid, const QString& description);

private:
    friend struct SupervisorTuning; // the benchmark's switches (supervisortuning.h)

    enum class StopStage { None, EndOfInput, Terminate, Kill, KillAtOnce };

    struct Pending
    {
        qint64 id = 0;
        QString type;
        QByteArray line;
        int timeoutMs = 0;
        /// Run again after an out-of-memory beside a leaving worker: waits until none is leaving.
        bool alone = false;
    };
    struct Active
    {
        Pending request;
        bool sent = false;
        bool answered = false; // the response is in, its delivery waits one event-loop turn
        WorkerResponse response;
        QString failStatus; // set when the supervisor ends the worker on purpose
        QString failMessage;
        bool besideLeaving = false; // written while a handed-off worker was still exiting
    };

    void scheduleDispatch();
    void dispatch();
    void connectWorker(QProcess* process);
    void startWorker();
    /// No request running or queued.
    bool idle() const { return !m_active && m_queue.isEmpty(); }
    /// The worker (a promoted spare) answered warm with something else: it is ended, and the
    /// active request gets a cold worker.
    void replaceWarmingWorker();
    /// The worker is ready: workerAvailable(), then the active request is written.
    void workerReady();
    /// Makes the pool's next spare the worker; the active request is then written once it is ready.
    void promoteSpare();
    void writeActiveRequest();
    void onStarted(QProcess* process);
    void onStandardOutput(QProcess* process);
    void onStandardError(QProcess* process);
    void onErrorOccurred(QProcess* process, QProcess::ProcessError error);
    void onFinished(QProcess* process, int exitCode, QProcess::ExitStatus exitStatus);
    void onRequestTimeout();
    void onStopTimer();
    void onLimitTimer();
    /// Ends the worker and every process under it by SIGKILL at once; the active request fails
    /// with status and message.
    void killWorker(const QString& status, const QString& message, const QList<qint64>& tree);
    void feedDecoder(const QByteArray& bytes);
    void handleResponse(const QJsonObject& response);
    void acceptResponse(const QJsonObject& response);
    void completeActive();
    /// Ends the worker at once (SIGTERM, SIGKILL after the grace period); the active request,
    /// if any, then fails with status and message.
    void abortWorker(const QString& status, const QString& message);
    /// Ends the worker gently (EOF; SIGTERM and SIGKILL after grace periods). A local worker with
    /// a quiet lock is sent its EOF only once the supervisor holds that lock shared for it, and the
    /// lock stays held until the process has ended: its exit (the CUDA context's teardown) never
    /// overlaps a timing on that GPU, another slot's included (EvaluationQueue). Until then it
    /// waits, idle, polled every LeavingWorkers::kExitLockPollMs.
    void retireWorker();
    /// The retiring worker's EOF, once its quiet lock is held (retireWorker()).
    void sendRetireEof();
    /// retireWorker() without waiting for the end (leavingworkers.h): where the answer says the
    /// device has room for both (gpu_memory) and the worker has a quiet lock; false: nothing done
    /// (retire it instead).
    /// A reused worker that answered `worker_healthy: false`: from now on one spare is kept.
    void noteRetiringWorker(const WorkerResponse& response);
    bool handOffLeavingWorker(const EvaluationResult& answer);
    void releaseProcess();
    /// The worker's process, no longer this supervisor's (disconnected, every field of it reset);
    /// releaseProcess() deletes it, handOffLeavingWorker() hands it to m_leaving.
    QProcess* detachProcess();
    void appendStderr(const QByteArray& bytes);
    void failLater(qint64 id, const QString& status, const QString& message);
    void emitStderr(qint64 id);

    WorkerLaunchSettings m_launch;
    bool m_connectionLost = false;
    Isolation m_isolation = Isolation::FreshPerRequest;
    int m_defaultTimeoutMs = kDefaultTimeoutMs;
    int m_killGraceMs = kDefaultKillGraceMs;
    qsizetype m_stderrLimit = kDefaultStderrLimit;

    qint64 m_nextId = 0;
    QList<Pending> m_queue;
    std::optional<Active> m_active;
    bool m_dispatchScheduled = false;

    // The running worker.
    QProcess* m_process = nullptr;
    qint64 m_answeringPid = 0;
    qint64 m_pid = 0;
    WorkerState m_state = WorkerState::None;
    StopStage m_stopStage = StopStage::None;
    ResponseDecoder m_decoder;
    HelloInfo m_hello;
    QString m_handshakeId;
    QString m_warmId;
    QByteArray m_stderr;
    qint64 m_stderrDropped = 0;

    SparePool m_spares;
    LeavingWorkers m_leaving;

    QTimer m_requestTimer;
    QTimer m_stopTimer;
    QTimer m_exitLockTimer; // retireWorker(): polls for the quiet lock before the EOF
    int m_exitLockFd = -1;  // the quiet lock held shared for the retiring worker, until it ends
    QTimer m_limitTimer;
    quint64 m_limitPolls = 0;
    bool m_limitPolling = true; ///< off only in tests that pin the memory cgroup alone (SupervisorTuning)
};

} // namespace kwb
