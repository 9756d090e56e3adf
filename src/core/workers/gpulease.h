#pragma once
// One owner per GPU (issue 11, item 7): every job that runs on a GPU (an evaluation, the device
// ceilings, a `profile` for the HBM-traffic page) takes that GPU's lease first and gives it back
// when its request has ended, so timings, traffic measurements and ceilings never overlap on one
// GPU.
//
// A lease is keyed by the physical GPU, not by the ordinal a process sees it under (two processes
// with CUDA_VISIBLE_DEVICES=0,1 and =1,0 see one GPU under two ordinals): identifyGpu() names it
// by its UUID where that can be known without CUDA (a UUID in CUDA_VISIBLE_DEVICES, or the
// driver's /proc/driver/nvidia/gpus), else by its index among all of the machine's GPUs ("gpu3"),
// with the reason. A GPU of another host (an ssh or Slurm worker) has the key remoteGpuKey().
//
// Within a process: GpuLeases::instance() grants each GPU to one holder at a time, in the
// order asked (FIFO). Across processes (two `kwb run`s, `kwb` next to the window): the holder of a
// GPU also holds flock(LOCK_EX) on the file <key>.lock in lockDirectory(); a process that finds it
// locked tries again every kRetryMs until it gets it (never blocking the event loop). The lock goes
// with the process, so a killed holder never leaves a GPU locked.
//
// lockDirectory(): $KWB_GPU_LOCK_DIR, else $XDG_RUNTIME_DIR/kwb-gpu, else /tmp/kwb-gpu-<uid>.
// Processes share a GPU only when they see the same directory: one user's processes do by default.
// An int `gpu` below is a CUDA ordinal as this process sees it (its own CUDA_VISIBLE_DEVICES).
//
// Log (for the check "no timing was taken while another job used the same GPU"): one JSON line per
// event, {"ms": epoch ms, "event": "wait"|"grant"|"release", "gpu": N (-1: a key without ordinal),
// "key": "GPU-…"|"gpu3"|"ssh:host:1", "holder": "…", "pid": P}, appended to logPath():
// $KWB_GPU_LEASE_LOG, else lockDirectory()/leases.log. Lines are appended with one write each, so
// those of several processes interleave whole.
//
// The GPU's quiet lock (docs/decisions.md, 2026-12-01 "The spare warms under the GPU's quiet
// lock"): the file <key>.quiet beside the lease files. A worker holds flock(LOCK_EX) on it while
// it times, profiles traffic or measures ceilings, and LOCK_SH while it warms (a spare creating its
// CUDA context ahead), so a warming worker never overlaps a measurement of any process on that
// GPU; the file <key>.quiet.intent beside it makes the lock writers-first (quietIntentPath). The
// supervisor creates both files (a sandboxed worker cannot: / is read-only there) and passes the
// lock as --gpu-quiet-lock; the worker opens them read-only.

#include <QHash>
#include <QList>
#include <QObject>
#include <QProcessEnvironment>
#include <QString>
#include <QTimer>

#include <functional>
#include <memory>

namespace kwb {

/// The NVIDIA driver's folder of per-GPU information files (one folder per PCI bus id).
inline const QString kNvidiaGpusDir = QStringLiteral("/proc/driver/nvidia/gpus");

/// The entry of CUDA_VISIBLE_DEVICES that CUDA ordinal `ordinal` of a process with `environment`
/// stands for ("GPU-…", "MIG-…" or a machine index); the ordinal itself when the variable is unset
/// or has no such entry. A worker given this value as its CUDA_VISIBLE_DEVICES sees that GPU.
QString cudaVisibleDeviceEntry(int ordinal, const QProcessEnvironment& environment);

/// Which physical GPU a CUDA ordinal names.
struct GpuIdentity
{
    QString key;    ///< "GPU-<uuid>" (or "MIG-…"), else "gpu<index among the machine's GPUs>"
    QString reason; ///< empty with a UUID; else why the index stands in for it
};
/// The GPU behind CUDA ordinal `ordinal` of a process with `environment`: its UUID from
/// CUDA_VISIBLE_DEVICES, else from `driverDir` (the machine index's GPU in PCI bus order, which
/// is CUDA's order when CUDA_DEVICE_ORDER=PCI_BUS_ID or every GPU is the same model: CUDA's
/// default order, fastest first, breaks ties by bus id), else the machine index.
GpuIdentity identifyGpu(int ordinal, const QProcessEnvironment& environment, const QString& driverDir = kNvidiaGpusDir);
/// The lease key of GPU `gpu` (a CUDA ordinal there) on another host: "HOST:GPU" with the worker
/// kind, "ssh:gpu-box:1", "slurm:a100:0".
QString remoteGpuKey(const QString& kind, const QString& host, int gpu);
/// The lease key of the GPU that a local worker started with `environment` uses (its CUDA ordinal
/// 0, as the supervisor's workers do: one GPU each through CUDA_VISIBLE_DEVICES); empty when its
/// CUDA_VISIBLE_DEVICES is set and names no device (the compile pool's CPU-only workers).
QString workerGpuKey(const QProcessEnvironment& environment, const QString& driverDir = kNvidiaGpusDir);

class GpuLeases : public QObject
{
    Q_OBJECT
public:
    static constexpr int kRetryMs = 25;

    /// The process's one broker (created on first use, on the thread that first uses it).
    static GpuLeases* instance();

    /// The lease key of this process's CUDA ordinal (identifyGpu() with its environment).
    static QString keyFor(int gpu);

    /// Asks for the GPU. granted(ticket, gpu) follows from the event loop once it is held (never
    /// from inside request()). `holder` names the job in the log ("eval job 3 L1/1").
    qint64 request(int gpu, const QString& holder) { return requestKey(keyFor(gpu), gpu, holder); }
    /// request() by key (a remote GPU: ordinal -1 in the signals).
    qint64 requestKey(const QString& key, int gpu, const QString& holder);
    /// The lease at once when the GPU is free here and in other processes and nobody waits for
    /// it: a held ticket (no granted() signal), else 0 (then request() queues for it).
    qint64 tryAcquire(int gpu, const QString& holder) { return tryAcquireKey(keyFor(gpu), gpu, holder); }
    qint64 tryAcquireKey(const QString& key, int gpu, const QString& holder);
    /// Waits (a local event loop) until the lease is held and returns its ticket: for the command
    /// line's one-request commands (`kwb eval`, `kwb device --ceilings`).
    qint64 acquire(int gpu, const QString& holder) { return acquireKey(keyFor(gpu), gpu, holder); }
    qint64 acquireKey(const QString& key, int gpu, const QString& holder);
    /// Calls work(ticket) once the lease is held (at once when free); work's job gives the ticket
    /// back when it ends. When context goes first, the request is withdrawn (or the lease given back).
    void whenHeld(int gpu, const QString& holder, QObject* context, std::function<void(qint64 ticket)> work)
    {
        whenHeldKey(keyFor(gpu), gpu, holder, context, std::move(work));
    }
    void whenHeldKey(const QString& key, int gpu, const QString& holder, QObject* context,
                     std::function<void(qint64 ticket)> work);
    /// A handle that gives the ticket back when its last copy goes: captured by a callback that
    /// may be dropped without being called (a superseded JobTracker job), the lease still returns.
    static std::shared_ptr<const void> guard(qint64 ticket);
    /// Gives a held lease back, or withdraws a request not granted yet. Unknown tickets are ignored.
    void release(qint64 ticket);
    /// Whether this process holds the GPU's lease now.
    bool isHeld(int gpu) const { return isHeldKey(keyFor(gpu)); }
    bool isHeldKey(const QString& key) const;
    bool isGranted(qint64 ticket) const;
    /// Whether another holder in this process waits for the GPU that the held `ticket` holds: a
    /// holder that could start more work under it lets it go first instead (EvaluationQueue's
    /// slots). Other processes' waits cannot be seen (they retry the lock file).
    bool isWanted(qint64 ticket) const;

    static QString lockDirectory();
    static QString logPath();
    /// lockDirectory()/<key>.quiet (the key made one file name, as the lease files' are).
    static QString quietLockPath(const QString& key);
    /// The quiet lock's writers-first gate beside it, `<lock>.intent` (the worker's
    /// GpuQuietLock::intentPath): every hold takes it first, so a waiting timing keeps new warm
    /// parts out.
    static QString quietIntentPath(const QString& quietLock);
    /// The evaluations' turn beside it, `<lock>.turn` (the worker's GpuQuietLock::turnPath): an
    /// evaluation holds it from its first GPU use until its measurements have ended, so that two
    /// on one GPU (EvaluationQueue's slots) overlap only past their timings.
    static QString quietTurnPath(const QString& quietLock);
    /// quietLockPath(key), its intent file and its turn file, created empty with mode 0600 where missing (the
    /// directory too); empty when the lock cannot be created (then the worker gets no quiet lock).
    static QString ensureQuietLock(const QString& key);

Q_SIGNALS:
    void granted(qint64 ticket, int gpu);
    /// A GPU's lease was taken (held true) or given back (held false) in this process.
    void heldChanged(int gpu, bool held);

private:
    explicit GpuLeases(QObject* parent = nullptr);
    ~GpuLeases() override;

    struct Ticket
    {
        qint64 id = 0;
        QString key;
        int gpu = 0; ///< the ordinal asked for, -1 for a key without one
        QString holder;
    };
    struct Gpu
    {
        qint64 holder = 0;     ///< the ticket holding it, 0: none
        int lockFd = -1;       ///< open while this process holds the GPU's lock file
        QList<Ticket> waiting; ///< in the order asked
    };

    void schedule();
    void grantWaiting();
    bool takeLock(const QString& key, Gpu& state);
    void dropLock(Gpu& state);
    void log(const char* event, const Ticket& ticket);

    QHash<QString, Gpu> m_gpus;
    QHash<qint64, Ticket> m_held;
    qint64 m_next = 0;
    QTimer m_retry;
    bool m_scheduled = false;
};

} // namespace kwb
