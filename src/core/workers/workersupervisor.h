#pragma once
// The one owner of kwb-worker processes (docs/protocol.md). Pages and the CLI never touch
// QProcess: they send requests here and listen to the signals, in the shape of hotspot's
// PerfParser. Everything runs on the thread that owns the supervisor, through signals and slots;
// there are no threads or locks inside.
//
// One supervisor runs one worker at a time, so one supervisor per GPU (give each its own
// CUDA_VISIBLE_DEVICES through setProcessEnvironment()); timings need the GPU to themselves.
// In FreshPerRequest mode it also keeps spares (kDefaultSpareCount, setSpareCount()): while an
// evaluation runs, the next workers start (at once where the host has the cores, else one after
// another: spareStartsAtOnce()) and answer hello, so the next request
// skips the process start. Once the supervisor has been idle for warmIdleMs(), they are sent
// `warm` one at a time (its CUDA context and the libraries' first calls, made under the GPU's
// quiet lock, LOCK_SH: never while any process times, profiles traffic or measures ceilings on
// that GPU; gpulease.h), so a request after a pause also skips the first-use costs. With
// setWarmWhileBusy() (EvaluationQueue's setting) they are warmed as soon as they answer hello,
// while a candidate runs: the worker takes the lock part by part, so a timing that starts
// meanwhile waits for one part at most (docs/decisions.md, "Warm in parts").
// Local workers (both modes) get `--gpu-quiet-lock` for their GPU; remote ones neither lock nor warm.

#include "core/protocol/defaults.h"
#include "core/protocol/evaluationstatus.h"
#include "core/protocol/protocolcodec.h"
#include "core/protocol/workerresponse.h"
#include "core/workers/hostlimits.h"
#include "core/workers/workertarget.h"

#include <QByteArray>
#include <QElapsedTimer>
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


// A request that ends without a response fails with an EvaluationStatus's wire name
// (core/protocol/evaluationstatus.h): timeout, crashed, worker_lost, protocol_error,
// start_failed, bad_request, cancelled or resource_limit (the worker went over its host-memory or
// host-thread limit, WorkerLimits, and was killed: the message names the limit and the peak; during
// an `evaluate` it is the candidate's doing, like `crashed`; before hello it is `start_failed`). `worker_lost`: the worker, busy with the request, was
// ended by a signal that the supervisor did not send and that a candidate's code cannot raise
// through the sandbox: SIGKILL (the OOM killer, `kill -9`), SIGTERM, SIGINT, SIGHUP, SIGQUIT. A
// worker that dies by any other signal or exits (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, an exit code)
// during a request is `crashed`: the candidate's code was running in it. The supervisor's own
// ends (time-out, cancel, protocol error) keep their status. A worker that dies between requests
// fails no request: the next one starts a fresh worker.

/// The environment a worker starts with: only what kwb-worker, libtorch, NVRTC and the CUDA driver
/// read (PATH, HOME, TMPDIR, TZ, LANG, LANGUAGE, LC_*, LD_LIBRARY_PATH, KWB_TASKS_DIR,
/// KWB_CUDA_INCLUDE_DIR, the sanitizers' *SAN_OPTIONS, and CUDA_*, NVIDIA_*, CUBLAS_*, CUDNN_*,
/// TORCH_*, PYTORCH_*, OMP_*), plus the names listed in $KWB_WORKER_ENV (comma-separated), taken
/// from `from`. Model code runs in the worker, so nothing else of kwb's environment reaches it:
/// no API key (KWB_API_KEY, OPENAI_API_KEY), no user variable, and no name that looks like a
/// secret (containing KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL), even when listed.
QProcessEnvironment workerEnvironment(const QProcessEnvironment& from = QProcessEnvironment::systemEnvironment());

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
        QString status;       ///< empty when there is a response, else an EvaluationStatus wire name
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
    /// How often a worker to be ended tries for the GPU's quiet lock while a measurement holds it
    /// (retireWorker()): a timing holds it ~0.05-1 s.
    static constexpr int kExitLockPollMs = 2;
    /// The field of workerAvailable()'s hello that holds a warmed spare's warm_ms.
    static constexpr const char* kWarmMsField = "warm_ms";
    /// Spares kept by default: a spare needs about two candidates' time to start and warm (libtorch's
    /// static initialisation, then the context, its warm parts waiting for the timings), so three
    /// started one candidate apart keep up: on an H200, 98.9 candidates/min against 90.7 with two
    /// (the mean of three runs against one, the same process; docs/decisions.md, session 10).
    static constexpr int kDefaultSpareCount = 3;
    /// How long the supervisor must have been idle (no request running or queued) before its
    /// spares are warmed: longer than the one or two event-loop turns in which a queue sends its
    /// next job (EvaluationQueue) or an NVRTC compile-ahead still running finishes (26-45 ms), far
    /// shorter than a model's generation between evaluations.
    static constexpr int kWarmIdleMs = 250;

    explicit WorkerSupervisor(QObject* parent = nullptr);
    /// Ends a running worker (EOF, then kill) and drops pending requests without signals.
    ~WorkerSupervisor() override;

    void setProgram(const QString& program, const QStringList& arguments = {});
    QString program() const { return m_program; }
    QStringList arguments() const { return m_arguments; }
    /// The worker's environment, used as given (default: workerEnvironment()), e.g. with
    /// CUDA_VISIBLE_DEVICES set.
    void setProcessEnvironment(const QProcessEnvironment& environment);
    void setIsolation(Isolation isolation);
    Isolation isolation() const { return m_isolation; }
    /// Whether to start the next workers ahead, while an `evaluate` runs (FreshPerRequest mode
    /// only; on by default). A spare is sent `hello` (and `warm`) and nothing else until it takes
    /// over; a spare that dies is replaced at the next top-up (setSpareCount()).
    void setSpareWorker(bool enabled);
    bool spareWorker() const { return m_spareEnabled; }
    /// How many spares to keep (0: none; default kDefaultSpareCount), when setSpareWorker() is on.
    /// The supervisor tops up when an `evaluate` is written to the worker and when a spare becomes
    /// ready, starting every missing spare where the host has the cores for it, else one
    /// (spareStartsAtOnce()): then spares start one after another, never two libtorch start-ups
    /// at once competing for a small host's cores. Fewer than before: the spares furthest behind
    /// are ended.
    void setSpareCount(int count);
    int spareCount() const { return m_spareCount; }
    /// Whether a top-up starts every missing spare at once rather than one. By default at once
    /// where the host has a core for each spare's start and two more (the running evaluation, the
    /// compile-ahead): 110 against 99-104 candidates/min on the H200's 16 cores with three spares,
    /// where one after another left the queue waiting for spares (docs/decisions.md, session 13);
    /// else one after another, so starts never crowd a small host's cores. The setter overrides
    /// the host's rule (bench words `burst`, `staggered`).
    void setSpareStartsAtOnce(bool enabled) { m_spareStartsAtOnce = enabled; }
    bool spareStartsAtOnce() const;
    /// Evaluations will come (a queue holds some that wait for their compile or for the GPU's
    /// `device` answer): with no spare alive, the first starts now, so that the evaluation after
    /// the first finds it warm. sendRequest() does the same for an `evaluate`. Nothing in reuse
    /// mode or with spares off.
    void expectEvaluations();
    /// Whether local spares are warmed when the supervisor is idle (on by default): once no
    /// request has run or been queued for warmIdleMs() (a single-shot timer, restarted when the
    /// supervisor becomes idle and when a spare answers hello while it is idle, stopped when a
    /// request is queued), the oldest spare that has answered hello and not warm is sent `warm`;
    /// when it answers, the next one, while the supervisor stays idle. One at a time: two warm-ups
    /// at once would compete for the host's cores, and a timing that starts would wait for both.
    /// A spare that has answered hello is ready, warmed or not (an unwarmed one's request pays its
    /// own cuda_init); one warming may still be taken over (the request then waits for its warm
    /// answer), but any ready spare is taken first. The warm answer: ok (warm), or ok: false with
    /// unknown_type (an older worker: not warm, still usable); any other and the spare is dropped.
    /// Not sent to a worker whose hello says it holds no quiet lock ("gpu_quiet_lock": null): its
    /// warm-up could overlap another process's timing. Off: never warmed.
    void setWarmSpare(bool enabled);
    bool warmSpare() const { return m_warmSpare; }
    /// Whether spares are warmed while requests run too (off by default): a spare is then sent
    /// `warm` as soon as it has answered hello, busy or idle, instead of only after the settle
    /// time, and several spares may warm at once (each must be warm by the time the running
    /// candidate ends; one at a time, they were not). A warm-up takes the quiet lock shared part
    /// by part (the worker lets it go between parts), so a timing stage that starts meanwhile
    /// waits for the parts running then, at most one per warming spare.
    void setWarmWhileBusy(bool enabled) { m_warmWhileBusy = enabled; }
    bool warmWhileBusy() const { return m_warmWhileBusy; }
    /// Whether a spare's `warm` also starts the worker's embedded Python (`"python": true`,
    /// docs/protocol.md): for KernelBench-format answers, whose evaluation in a fresh worker
    /// otherwise starts it first (its `import torch`, seconds). Off by default (a native run's
    /// spares would hold a Python for nothing); EvaluationQueue turns it on at the first
    /// KernelBench-format job. Spares warmed before keep their warm; a request still starts the
    /// Python itself where its spare has none.
    void setWarmPython(bool enabled) { m_warmPython = enabled; }
    bool warmPython() const { return m_warmPython; }
    /// The settle time of setWarmSpare() (default kWarmIdleMs); tests shorten it.
    void setWarmIdleMs(int ms) { m_warmIdleMs = std::max(0, ms); }
    int warmIdleMs() const { return m_warmIdleMs; }
    /// Whether a fresh worker that answered its evaluation is let go as it exits, the next request
    /// starting on a spare meanwhile (on by default; handOffLeavingWorker() says when it applies);
    /// off: the next request waits until the last worker has ended. handedOffWorkers() counts them.
    void setHandOffLeaving(bool enabled) { m_handOffLeaving = enabled; }
    bool handOffLeaving() const { return m_handOffLeaving; }
    /// Whether a handed-off worker's exit (its CUDA context's teardown) runs under the GPU's quiet
    /// lock held shared (on by default: no timing on the GPU overlaps it). Off, a benchmark's
    /// comparison: the worker gets its EOF at once (bench word `exitfree`; docs/decisions.md,
    /// session 12).
    void setExitUnderLock(bool enabled) { m_exitUnderLock = enabled; }
    bool exitUnderLock() const { return m_exitUnderLock; }
    int handedOffWorkers() const { return m_handedOff; }
    /// Each handed-off worker's exit so far, oldest first: ms from its EOF to its end (its CUDA
    /// context's teardown; under the quiet lock where exitUnderLock()). For the benchmark.
    const QList<double>& leavingExitMs() const { return m_leavingExitMs; }
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
    WorkerLimits limits() const { return m_limits; }
    /// Where the workers started from now on run (default: here; workertarget.h). A remote
    /// worker keeps the time-out, cancel, kill and restart of a local one: ending the ssh or
    /// srun process closes the worker's stdin there, and the worker (--end-on-stdin-eof) ends
    /// itself at once. The host limits are not polled there (docs/remote-workers.md).
    void setTarget(const WorkerTarget& target);
    WorkerTarget target() const { return m_target; }
    /// Whether the last worker ended because its ssh connection failed or broke (ssh's exit code
    /// 255): its request, if any, failed with `worker_lost` (or `start_failed` before hello).
    bool connectionLost() const { return m_connectionLost; }
    /// The bwrap program (default: `bwrap` in PATH); tests point it elsewhere.
    void setBubblewrapProgram(const QString& program);
    /// The sandbox the next worker gets: "bubblewrap" or "none: <reason>" (workerlauncher.h).
    QString sandboxStatus() const;
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
    /// Retires an idle worker (EOF on its stdin) and ends the spare; a later request starts a
    /// fresh one.
    void stopWorker();

    /// The running worker's process id, 0 when none runs. In the sandbox it is bwrap's until the
    /// worker has answered hello, then the worker's own.
    qint64 workerPid() const { return m_pid; }
    /// The process id of the spare that would take over next (0 when there is none; see
    /// nextSpare()), whether it may take over now (it has answered hello and is not warming), and
    /// whether it is also warm (it answered warm with its timings).
    qint64 spareWorkerPid() const;
    bool spareWorkerReady() const;
    bool spareWorkerWarmed() const;
    /// The spares alive now (started and not yet taken over or dropped), and their process ids
    /// (0 for one not started yet), oldest first.
    int liveSpareCount() const { return int(m_spares.size()); }
    QList<qint64> spareWorkerPids() const;
    /// The hello response of the running worker (empty before the handshake).
    QJsonObject workerHello() const { return m_hello; }
    /// Requests queued or running.
    int pendingCount() const { return int(m_queue.size()) + (m_active ? 1 : 0); }

    /// Blocking convenience for the CLI: runs one request to its end in a local event loop. Not
    /// for the GUI thread, whose event loop must stay the only one.
    Outcome run(const QJsonObject& request, int timeoutMs = -1);
    /// run() reduced to a response; on failure returns an empty object and sets *error to
    /// "status: message". An `ok: false` response is returned as a response.
    QJsonObject runOne(const QJsonObject& request, int timeoutMs, QString* error);

Q_SIGNALS:
    /// A request was taken from the queue (its wall-clock limit starts now).
    void requestStarted(qint64 id);
    /// The worker answered request `id` (the response may still say ok: false).
    void responseAvailable(qint64 id, const QJsonObject& response);
    /// Request `id` ended without a response; status is an EvaluationStatus wire name.
    void requestFailed(qint64 id, const QString& status, const QString& message);
    /// The worker's stderr while request `id` ran (the last stderrLimit() bytes, and how many
    /// bytes before them were dropped). Emitted just before the request's final signal, for every
    /// request that was taken from the queue.
    void stderrAvailable(qint64 id, const QByteArray& tail, qint64 droppedBytes);
    /// A fresh worker passed the hello handshake (a spare: when it takes over). `hello` is its hello
    /// answer; for a spare that warmed, with the warm answer's timings added as kWarmMsField
    /// ({"quiet_wait","context","cublas","cudnn","evaluator","total"}, ms).
    void workerAvailable(qint64 pid, const QJsonObject& hello);
    /// A worker ended; description says how ("exited with code 0", "killed by signal 11 (SIGSEGV)").
    void workerFinished(qint64 pid, const QString& description);

private:
    /// Warming: hello answered, `warm` sent (spares only, see setWarmSpare()); a spare is Idle
    /// (ready) after its hello answer and again after its warm answer.
    enum class WorkerState { None, Starting, Handshaking, Warming, Idle, Busy, Stopping };
    /// Started and not yet ready for a request: nothing of a candidate has run in it.
    static bool beforeReady(WorkerState state)
    {
        return state == WorkerState::Starting || state == WorkerState::Handshaking || state == WorkerState::Warming;
    }
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
        QJsonObject response;
        QString failStatus; // set when the supervisor ends the worker on purpose
        QString failMessage;
        bool besideLeaving = false; // written while a handed-off worker was still exiting
    };
    /// A worker handed off after its last answer (handOffLeavingWorker): exiting, the GPU's quiet
    /// lock held shared for it by this supervisor until it has ended.
    struct Leaving
    {
        QProcess* process = nullptr;
        qint64 pid = 0;
        int lockFd = -1; ///< -1 until the lock is held; the EOF is sent then
        QElapsedTimer sinceEof; ///< started when the EOF was sent
    };

    /// A worker started ahead (see setSpareWorker(), setSpareCount()). Its state uses Starting,
    /// Handshaking, Warming and Idle (ready to take over) only.
    struct Spare
    {
        QProcess* process = nullptr;
        qint64 pid = 0;
        WorkerState state = WorkerState::None;
        ResponseDecoder decoder;
        QString handshakeId;
        QString warmId;
        QJsonObject hello;
        bool warmAnswered = false; // warmed, or an older worker said unknown_type: not sent again
        /// Ready, and its hello carries the warm answer's timings.
        bool warmed() const;
    };

    void scheduleDispatch();
    void dispatch();
    QProcess* createProcess();
    void connectWorker(QProcess* process);
    void startWorker();
    bool spareWanted() const;
    /// Starts one spare when fewer than spareCount() live (see setSpareCount()).
    void topUpSpares();
    void startSpare(); ///< one spare, Starting; topUpSpares() decides how many
    /// The spare of this process, nullptr when it is none (any more).
    Spare* spareOf(const QProcess* process);
    /// The index in m_spares of the spare to take over next: the oldest warmed one, else the
    /// oldest ready one, else the one furthest along (warming, then handshaking, then starting; the
    /// oldest of those); -1: none.
    int nextSpare() const;
    /// No request running or queued.
    bool idle() const { return !m_active && m_queue.isEmpty(); }
    /// (Re)starts the settle timer of setWarmSpare() when idle and there is anything to warm.
    void armIdleWarm();
    /// Idle (or setWarmWhileBusy()), and no spare warming: sends `warm` to the oldest ready spare
    /// not yet sent one.
    void warmIdleSpare();
    void onSpareStarted(QProcess* process);
    void onSpareOutput(QProcess* process);
    void onSpareFinished(QProcess* process);
    /// Takes one answer of the spare; false when it is not the one it may give now.
    bool takeSpareAnswer(Spare& spare, const QJsonObject& response);
    /// Whether a worker with this hello answer is to be warmed (setWarmSpare()).
    bool warmWanted(const QJsonObject& hello) const;
    /// Writes `warm` to the process; returns its id.
    QString sendWarm(QProcess* process);
    /// The worker (a promoted spare) answered warm with something else: it is ended, and the
    /// active request gets a cold worker.
    void replaceWarmingWorker();
    /// The worker is ready: workerAvailable(), then the active request is written.
    void workerReady();
    /// Ends the spare of this process (it holds no request, so SIGKILL is fine) and forgets it.
    void discardSpare(QProcess* process);
    /// discardSpare() for every spare.
    void discardSpares();
    /// Makes the spare nextSpare() the worker; the active request is then written once it is ready.
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
    /// waits, idle, polled every kExitLockPollMs.
    void retireWorker();
    /// The retiring worker's EOF, once its quiet lock is held (retireWorker()).
    void sendRetireEof();
    /// retireWorker() without waiting for the end: a local worker that answered its last request
    /// is let go as it exits, the next request may start on another worker meanwhile, and the
    /// GPU's quiet lock is held shared for it until it has ended, so no timing on that GPU
    /// overlaps its exit (where a measurement holds the lock now, its EOF waits for the lock, as
    /// retireWorker()'s does). Only where the answer says the device has room for both
    /// (gpu_memory) and the worker has a quiet lock; false: nothing done (retire it instead).
    bool handOffLeavingWorker(const EvaluationResult& answer);
    /// The leaving worker's EOF, once its quiet lock is held; false while the lock is not free.
    bool endLeavingUnderLock(QProcess* process);
    void onLeavingFinished(QProcess* process, int exitCode, QProcess::ExitStatus exitStatus);
    void releaseProcess();
    /// The worker's process, no longer this supervisor's (disconnected, every field of it reset);
    /// releaseProcess() deletes it, handOffLeavingWorker() keeps it until it ends.
    QProcess* detachProcess();
    void appendStderr(const QByteArray& bytes);
    void failLater(qint64 id, const QString& status, const QString& message);
    void emitStderr(qint64 id);

    QString m_program;
    QStringList m_arguments;
    QProcessEnvironment m_environment;
    WorkerLimits m_limits;
    WorkerTarget m_target;
    bool m_connectionLost = false;
    QString m_bubblewrap;
    Isolation m_isolation = Isolation::FreshPerRequest;
    int m_defaultTimeoutMs = kDefaultTimeoutMs;
    int m_killGraceMs = kDefaultKillGraceMs;
    qsizetype m_stderrLimit = kDefaultStderrLimit;

    qint64 m_nextId = 0;
    QList<Pending> m_queue;
    std::optional<Active> m_active;
    bool m_dispatchScheduled = false;

    QProcess* m_process = nullptr;
    qint64 m_pid = 0;
    WorkerState m_state = WorkerState::None;
    StopStage m_stopStage = StopStage::None;
    ResponseDecoder m_decoder;
    QJsonObject m_hello;
    int m_handshakeCount = 0;
    QString m_handshakeId;
    QString m_warmId;

    bool m_spareEnabled = true;
    int m_spareCount = kDefaultSpareCount;
    bool m_warmSpare = true;
    bool m_warmWhileBusy = false;
    bool m_warmPython = false;
    int m_warmIdleMs = kWarmIdleMs;
    QTimer m_warmIdleTimer; // setWarmSpare()'s settle time
    QList<Spare> m_spares; // oldest first
    QList<Leaving> m_leaving;
    bool m_handOffLeaving = true;
    bool m_exitUnderLock = true;
    std::optional<bool> m_spareStartsAtOnce; // unset: the host's rule (spareStartsAtOnce())
    int m_handedOff = 0;
    QList<double> m_leavingExitMs;

    QByteArray m_stderr;
    qint64 m_stderrDropped = 0;

    QTimer m_requestTimer;
    QTimer m_stopTimer;
    QTimer m_exitLockTimer; // retireWorker(): polls for the quiet lock before the EOF
    int m_exitLockFd = -1;  // the quiet lock held shared for the retiring worker, until it ends
    QTimer m_limitTimer;
    quint64 m_limitPolls = 0;
};

} // namespace kwb
