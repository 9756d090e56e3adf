#pragma once
// A queue of `evaluate` jobs over WorkerSupervisors, evaluationsPerGpu() per local GPU (its
// slots), with compile-ahead: while the GPUs evaluate, CPU-only workers compile queued jobs'
// answers (`compile` with the whole `answer` and `return_cubin`: the worker's parser finds the
// cuda block, the queue parses nothing), and the job's evaluate request carries the module with
// the `source_hash` that compile returned (`cubin_b64`, `cubin_arch`, `cubin_source_hash`), so the
// GPU stage only loads it (docs/protocol.md). A KernelBench-format job's compile is the build of
// its load_inline extensions (nvcc and ninja, a minute or more each) into the worker's extension
// cache, where its evaluation finds them: the queue builds every such job ahead, as many at once as
// it has compile workers, over all queued jobs; the GPU never takes one whose build is waiting or
// running (it would build it a second time while holding the GPU), and meanwhile evaluates the jobs
// that are ready. Jobs with the same answer, format and arch are built once. Everything runs on the
// owning thread through signals and slots, like WorkerSupervisor; the parallelism is in the worker
// processes.
//
// Jobs start in submission order (but for the builds passed over), and end in the order their
// evaluations end: with two slots per GPU, or two GPUs, not in submission order.
//
// Every submitted job ends in exactly one jobFinished() or jobFailed(), emitted from the event
// loop, never from inside submit() or cancel().
//
// More than one evaluation at once per GPU (setEvaluationsPerGpu(); one by default, see
// kDefaultEvaluationsPerGpu for why): each slot is a supervisor of its own,
// with its own workers and spares, so one candidate's correctness trials run while another's CPU
// parts (its start, parse, compile, inputs) do. The measurements stay exclusive because the workers
// keep them so: a timing, a traffic profile or a ceilings measurement holds the GPU's quiet lock
// exclusively and all other GPU work of a worker holds it shared (docs/protocol.md, "The GPU's
// quiet lock"), so no timing overlaps anything on that GPU. What an overlap can still do is take
// the memory or the time a candidate needed: a job that ran beside another job of its GPU at any
// moment and ends with an out-of-memory runtime_error or a `timeout` is not reported but evaluated
// again alone, at its place in the queue (once no other slot of that GPU runs a job, and none takes
// one while it runs); only that second outcome counts. A remote target has one slot: its workers
// take no quiet lock.
//
// One owner per GPU: a job is sent to a slot only once the queue holds that GPU's lease
// (core/workers/gpulease.h; one per physical GPU, shared by its slots), and the lease is given back
// when no slot of that GPU runs a job any more, so no other queue, process or measurement runs on
// that GPU meanwhile. While another holder in this process waits for it, no slot takes a job beside
// a running one, so the lease goes back at that job's end. Jobs with "device" "none" or "cpu" take
// no lease.

#include "core/protocol/workerrequests.h"
#include "core/workers/gpumemoryelsewhere.h"
#include "core/workers/workersupervisor.h"

#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <functional>
#include <optional>

namespace kwb {

class EvaluationQueue : public QObject
{
    Q_OBJECT
    friend struct SupervisorTuning; // the benchmark's switches (supervisortuning.h)
public:
    static constexpr int kDefaultCompileTimeoutMs = 60 * 1000;
    /// How long an idle GPU waits for a compile that is already running before it evaluates
    /// the job uncompiled (the worker then compiles it itself).
    static constexpr int kDefaultCompileWaitMs = 10 * 1000;
    /// The limit of a KernelBench-format job's build ahead: one takes 60-100 s alone on the H200
    /// (issue 14) and longer while others build beside it; KernelBench sets none. This stops only
    /// a build that hangs (the job is then evaluated as it is, and its worker builds it).
    static constexpr int kDefaultExtensionBuildTimeoutMs = 10 * 60 * 1000;
    /// How many queued jobs with a cubin to hold, counted from the head, are compiled ahead (cubins
    /// are held in memory); KernelBench-format jobs hold nothing and are not counted.
    static constexpr int kCompileLookahead = 32;

    /// How many evaluations a local GPU runs at once by default (its slots; the class comment).
    /// One: on an H200 two gained nothing over L1+L2's 20 references (fresh workers 100.1 and 97.7
    /// candidates/min against 98.6 and 97.2; reuse 141.3 against 144.3, one process): what the
    /// second slot can overlap is the CPU work outside the GPU-using stages, which the spares
    /// already hide, while two correctness stages at once slow each other and a timing waits for
    /// the other's (docs/decisions.md, session 11). Two may pay where CPU parts dominate.
    static constexpr int kDefaultEvaluationsPerGpu = 1;
    static constexpr int kMaxEvaluationsPerGpu = 4;

    /// A GPU per ordinal; each worker sees only its GPU (CUDA_VISIBLE_DEVICES).
    explicit EvaluationQueue(const QList<int>& gpuOrdinals = {0}, QObject* parent = nullptr);
    /// A GPU per target (workertarget.h): local GPUs, GPUs of ssh hosts, Slurm slots.
    /// A remote target whose host is lost (ssh lost the connection, or no worker starts there)
    /// takes no more jobs: its running job goes back to the queue, where it was, for the others
    /// (it was not evaluated, so nothing is counted twice). When every target is lost, the jobs
    /// left fail with `worker_lost`. Compile-ahead stays on this machine.
    explicit EvaluationQueue(const QList<WorkerTarget>& targets, QObject* parent);
    ~EvaluationQueue() override;

    // Settings: call them before submit().
    void setProgram(const QString& program, const QStringList& arguments = {});
    /// The base environment of every worker (default: workerEnvironment()); CUDA_VISIBLE_DEVICES is
    /// set per worker on top of it.
    void setProcessEnvironment(const QProcessEnvironment& environment);
    void setIsolation(WorkerSupervisor::Isolation isolation);
    /// Host limits and the OS sandbox of every worker, GPU and compile ones.
    void setWorkerLimits(const WorkerLimits& limits);
    /// The wall-clock limit of an evaluation whose options name no "timeout_ms".
    void setTimeout(int ms);
    void setKillGracePeriod(int ms);
    void setStderrLimit(qsizetype bytes);
    /// CPU compile workers; 0 turns compile-ahead off. Default max(1, idealThreadCount - 1).
    void setCompileWorkerCount(int count);
    int compileWorkerCount() const { return m_compileWorkerCount; }
    void setCompileTimeout(int ms) { m_compileTimeoutMs = ms; }
    void setExtensionBuildTimeout(int ms) { m_extensionBuildTimeoutMs = ms; }
    void setCompileWaitLimit(int ms) { m_compileWaitMs = ms; }
    /// The slots of each local GPU, clamped to [1, kMaxEvaluationsPerGpu] (default
    /// kDefaultEvaluationsPerGpu); 1: one job at a time per GPU. A remote target always has one.
    void setEvaluationsPerGpu(int n);
    int evaluationsPerGpu() const { return m_evaluationsPerGpu; }
    /// Who held a local GPU's memory when a job's allocation failed there (gpumemoryelsewhere.h):
    /// the bus id the worker named and the answering worker's pid. probeMemoryElsewhere by
    /// default; tests put their own.
    using MemoryElsewhereProbe = std::function<MemoryElsewhere(const QString& pciBusId, qint64 workerPid)>;
    void setMemoryElsewhereProbe(MemoryElsewhereProbe probe) { m_memoryElsewhereProbe = std::move(probe); }
    /// The GPUs' architecture ("sm_90") for compile-ahead. Without it the queue asks the first
    /// GPU's worker once (`device`); a job's options may name its own "arch".
    void setArch(const QString& arch) { m_arch = arch; }
    QString arch() const { return m_arch; }
    QList<int> gpuOrdinals() const { return m_gpuOrdinals; }
    /// The supervisor of the GPU at `index` in gpuOrdinals(), its first slot's (for status displays
    /// and tests), and those of all its slots.
    WorkerSupervisor* gpuSupervisor(int index) const { return m_gpus.value(index).gpuSlots.value(0).supervisor; }
    QList<WorkerSupervisor*> gpuSupervisors(int index) const;

    /// Queues the evaluation `request` asks for (its task, its answer and its evaluate fields:
    /// profile, scale, seed, timing_trials, device, arch, …; the module is the queue's, from its
    /// compile ahead) and returns its job id (rising). `timeoutMs` is the job's wall-clock limit
    /// (-1: setTimeout()'s).
    qint64 submit(const WorkerRequests::Evaluate& request, int timeoutMs = -1);
    /// Cancels a queued or running job; it then fails with status `cancelled`. Returns false when
    /// the id is not pending.
    bool cancel(qint64 id);
    void cancelAll();
    /// Jobs queued or running.
    int pendingCount() const { return int(m_jobs.size()); }

Q_SIGNALS:
    /// The job was handed to a slot's supervisor; again for a job evaluated again alone.
    void jobStarted(qint64 id);
    /// The job's compile ahead ended (built, failed, or an identical answer's taken): until
    /// jobStarted it waits only for a GPU slot, and holds no compile worker. A run keeps more
    /// tasks going meanwhile (RunController::pump). Never for a job that was not compiled ahead.
    void jobBuiltAhead(qint64 id);
    /// Jobs ended and jobs submitted since the queue was last empty; coalesced to one signal per
    /// event-loop turn.
    void jobProgress(int done, int total);
    /// The worker's evaluate response, decoded once by the supervisor (its status says correct,
    /// incorrect, compile_error, …). Its `raw` is the response as the worker sent it, with "gpu":
    /// the ordinal it ran on, "worker": where (WorkerTarget::location(), "local:0", "gpu-box:1"),
    /// and "slot": which of that GPU's slots (0-based): what the run store keeps, byte for byte.
    void jobFinished(qint64 id, const kwb::EvaluationResult& evaluation);
    /// The job ended without a response: status is an EvaluationStatus wire name (timeout, crashed,
    /// start_failed, cancelled, …) or the error code of a worker that refused the request.
    void jobFailed(qint64 id, const QString& status, const QString& message);
    /// A remote target was lost (location, why); its running job was moved.
    void workerLost(const QString& location, const QString& reason);
    /// The GPU worker's stderr while the job ran (its last run), just before its final signal.
    void jobStderrAvailable(qint64 id, const QByteArray& tail, qint64 droppedBytes);

private:
    enum class CompileState { None, Waiting, Running, Done };

    struct Job
    {
        qint64 id = 0;
        WorkerRequests::Evaluate request; ///< its answer is let go once the supervisor holds it
        int timeoutMs = -1;
        CompileState compile = CompileState::None; ///< None: compile-ahead is off
        qint64 compileRequest = 0;
        QString cubin;
        QString cubinArch;
        QString cubinSourceHash; ///< the worker's hash of the compiled source: it loads the cubin only for that source
        QString compileLog;
        QJsonObject cubinKernelFacts; ///< the compile's kernel facts, handed on with the cubin
        QByteArray compileKey;        ///< the answer and its format: jobs with the same key compile once
        qint64 waitSinceMs = -1;      // when an idle GPU first waited for its running compile
        int gpu = -1;                 // index into m_gpus once dispatched
        int slot = -1;                // index into its Gpu's gpuSlots
        qint64 gpuRequest = 0;
        bool besideAnother = false;           ///< another slot of its GPU ran a job while this one ran
        bool alone = false;                   ///< evaluated again: only while its GPU runs nothing else
        bool ranOutElsewhere = false;         ///< an allocation failed for memory held elsewhere once already
        std::optional<QByteArray> stderrTail; ///< its worker's, kept for the final signal
        qint64 stderrDropped = 0;
    };
    struct Slot
    {
        WorkerSupervisor* supervisor = nullptr;
        qint64 runningJob = 0;
    };
    struct Gpu
    {
        int ordinal = 0;
        WorkerTarget target;
        bool lost = false; ///< a remote host that is gone: no more jobs
        QString lostReason;
        QList<Slot> gpuSlots;
        qint64 lease = 0; ///< the GpuLeases ticket asked for or held, 0: none
        bool leaseHeld = false;
    };
    struct Compiler
    {
        WorkerSupervisor* supervisor = nullptr;
        qint64 job = 0;
    };

    /// A new slot of the GPU at gpuIndex, its supervisor configured by configureSlot().
    void addSlot(int gpuIndex);
    /// Gives the slot's supervisor every setting the queue holds (the setters call it for all).
    void configureSlot(const Gpu& gpu, WorkerSupervisor* supervisor) const;
    void configureSlots();
    /// The slots a GPU takes jobs on: evaluationsPerGpu(), one for a remote target.
    int slotCount(const Gpu& gpu) const;
    int runningJobs(const Gpu& gpu) const;
    /// Whether a slot of the GPU runs a job that uses the GPU (and so holds its lease).
    bool runsGpuJob(const Gpu& gpu) const;
    /// The first slot of the GPU that runs no job and may take one, or -1 (a lost host: none).
    int firstFreeSlot(const Gpu& gpu) const;
    /// The free slot of the GPU that may take `job` now, or -1: none free, or the job or one
    /// running there must run alone, or (for a second job) another holder waits for the lease,
    /// or a running job's worker holds no quiet lock.
    int freeSlotFor(const Gpu& gpu, const Job& job) const;
    void scheduleWork();
    void work();
    /// The first job in submission order a GPU may take now, or -1 (see work()).
    qsizetype nextReadyJob();
    void dispatchToGpu(int gpuIndex, int slotIndex, qsizetype jobIndex);
    void startCompiles();
    /// Gives a finished compile's outcome to the jobs that wait for the same key and arch; their ids.
    QList<qint64> shareCompile(const Job& compiled);
    /// Whether the compile ahead is the build of load_inline extensions (a KernelBench-format
    /// answer), which the GPU must not do itself while the queue builds it.
    static bool buildsExtension(const Job& job);
    /// Whether a job that waits for its compile will get one here (compile workers, an arch).
    bool compileAheadCanTake(const Job& job) const;
    void ensureCompilers();
    QString archFor(const Job& job) const;
    void requestArch();
    qsizetype indexOfJob(qint64 id) const;
    /// The index of the job the slot runs if requestId is its request (else the answer is
    /// stale), or -1.
    qsizetype runningJobIndex(int gpuIndex, int slotIndex, qint64 requestId) const;
    /// Ends the slot's running job at jobIndex (runningJobIndex()): counted done, its stderr
    /// emitted (the final signal is the caller's); returns its id.
    qint64 retireRunningJob(int gpuIndex, int slotIndex, qsizetype jobIndex);
    /// Takes the slot's running job at jobIndex back into the queue, where it was, unevaluated.
    void requeueRunningJob(int gpuIndex, int slotIndex, qsizetype jobIndex);
    /// Gives the GPU's lease back once none of its slots runs a job that uses it.
    void releaseLeaseIfIdle(int gpuIndex);
    void onGpuResponse(int gpuIndex, int slotIndex, qint64 requestId, const WorkerResponse& response);
    void onGpuFailure(int gpuIndex, int slotIndex, qint64 requestId, const QString& status, const QString& message);
    /// Moves a lost host's running job back into the queue; false when it is not that, or when no
    /// host is left (the job then fails with what the last one said).
    bool requeueFromLostHost(int gpuIndex, int slotIndex, qsizetype jobIndex, const QString& status,
                             const QString& message);
    /// With every target lost, fails the jobs that wait for one.
    void failJobsWithoutWorkers();
    void onCompileResponse(int compilerIndex, qint64 requestId, const WorkerResponse& response);
    void onCompileFailure(int compilerIndex, qint64 requestId);
    void failLater(qint64 id, const QString& status, const QString& message);
    void noteProgress();
    void onLeaseGranted(qint64 ticket);
    void releaseLease(int gpuIndex);
    /// Whether the job runs on its GPU (not "device" "none" or "cpu"), and so needs the lease.
    static bool needsGpu(const Job& job);

    QList<int> m_gpuOrdinals;
    QList<Gpu> m_gpus;
    QList<Compiler> m_compilers;
    QString m_program;
    QStringList m_arguments;
    QProcessEnvironment m_environment;
    WorkerSupervisor::Isolation m_isolation = WorkerSupervisor::Isolation::FreshPerRequest;
    WorkerLimits m_workerLimits;
    int m_killGraceMs = WorkerSupervisor::kDefaultKillGraceMs;
    int m_timeoutMs = WorkerSupervisor::kDefaultTimeoutMs;
    qsizetype m_stderrLimit = WorkerSupervisor::kDefaultStderrLimit;
    bool m_warmPython = false; // a KernelBench-format job came: the GPU spares start their Python
    int m_evaluationsPerGpu = kDefaultEvaluationsPerGpu;
    int m_compileWorkerCount = 1;
    int m_compileTimeoutMs = kDefaultCompileTimeoutMs;
    int m_compileWaitMs = kDefaultCompileWaitMs;
    int m_extensionBuildTimeoutMs = kDefaultExtensionBuildTimeoutMs;
    /// Fields only the benchmark's A/B runs add to every evaluate request (SupervisorTuning): no
    /// part of the product's protocol (protocolnames.h).
    QJsonObject m_benchmarkFields;

    QString m_arch;
    qint64 m_deviceRequest = 0; // the `device` request asking for m_arch, while it runs
    bool m_archAsked = false;

    qint64 m_nextId = 0;
    QList<Job> m_jobs; // queued and running, in submission order
    bool m_workScheduled = false;
    MemoryElsewhereProbe m_memoryElsewhereProbe = [](const QString& bus, qint64 pid) {
        return probeMemoryElsewhere(bus, pid);
    };
    QTimer m_compileWaitTimer;

    int m_done = 0;
    int m_total = 0;
    bool m_progressScheduled = false;
};

} // namespace kwb
