#pragma once
// The GPU's quiet lock (docs/protocol.md, "The GPU's quiet lock"): one file per physical GPU,
// made by the supervisor, taken with flock(2). A measurement that must have the GPU to itself
// (evaluate's timing, the traffic profile, the device ceilings) holds it exclusively; a spare
// worker's `warm` holds it shared, so spares warm beside one another but never while anything
// on that GPU is being measured. Without a lock (no --gpu-quiet-lock, or a path that could not
// be opened) every hold is a no-op. Torch- and CUDA-free.
//
// Writers first: flock lets shared holds in while an exclusive one waits, so spares warming part
// after part could keep a timing waiting for a chain of their parts (0.4-0.5 s seen on an H200 with
// three spares). Beside the lock lies `<path>.intent`: every hold takes it first (exclusive for an
// exclusive hold, shared for a shared one) and lets it go once it holds the lock itself, so a
// waiting measurement keeps new warm parts out and waits only for the parts already running. A
// supervisor that made no intent file (an older one) leaves the lock as it was.
//
// The evaluations' turn: `<path>.turn`, held exclusively by an evaluation from its first GPU use
// until its last exclusive measurement has ended (Turn). Two evaluations on one GPU (the queue's
// slots) then never run their GPU stages before their timings side by side, which slowed both
// and kept each timing waiting for the other's correctness; the next one's GPU stages overlap
// only this one's trace, answer and exit, its CPU stages anything. Taken before any hold, never
// while holding one (the holder of the turn may be waiting for the lock exclusively).
#include <string>

namespace kwb {

class GpuQuietLock
{
public:
    /// Opens `path` (O_RDONLY | O_CLOEXEC: flock needs no write access, and the sandbox may make
    /// the file's folder read-only); on failure error() says why and every hold is a no-op.
    explicit GpuQuietLock(std::string path);
    ~GpuQuietLock();
    GpuQuietLock(const GpuQuietLock&) = delete;
    GpuQuietLock& operator=(const GpuQuietLock&) = delete;

    const std::string& path() const { return m_path; }
    bool usable() const { return m_fd >= 0; }
    /// `<path>.intent`, the writers-first gate; usable only where that file could be opened.
    static std::string intentPath(const std::string& path) { return path + ".intent"; }
    bool writersFirst() const { return m_intentFd >= 0; }
    /// `<path>.turn`, the evaluations' turn; usable only where that file could be opened.
    static std::string turnPath(const std::string& path) { return path + ".turn"; }
    bool turns() const { return m_turnFd >= 0; }
    /// Why the file could not be opened ("" when it could).
    const std::string& error() const { return m_error; }

    enum class Mode { Shared, Exclusive };
    /// The lock held for a scope, released when it ends. Made with a null lock (or one that could
    /// not be opened) it holds nothing and waited 0 ms.
    class Hold
    {
    public:
        Hold(const GpuQuietLock* lock, Mode mode);
        ~Hold();
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;
        /// How long taking it waited, in ms (0 where nothing was taken).
        double waitMs() const { return m_waitMs; }
        /// Whether the lock is held (false without a lock, or where flock failed: error() says why).
        bool held() const { return m_fd >= 0; }
        const std::string& error() const { return m_error; }

    private:
        int m_fd = -1;
        double m_waitMs = 0;
        std::string m_error;
    };

    /// A measurement's intent, announced ahead of its exclusive Hold: `<path>.intent` held
    /// exclusively from construction, so that no new shared hold starts from then on while the
    /// ones running end; the Hold taken later in this process passes the gate at once (the same
    /// open file) and lets it go once it holds the lock. Released at the end of its scope at the
    /// latest. Without a gate (no intent file, no lock) it holds nothing. With `wait` false it
    /// takes the gate only where it is free now: a process that holds the lock shared must never
    /// wait for the gate, whose holder may be waiting for that very shared hold to end.
    class Intent
    {
    public:
        explicit Intent(const GpuQuietLock* lock, bool wait = true);
        ~Intent();
        Intent(const Intent&) = delete;
        Intent& operator=(const Intent&) = delete;
        double waitMs() const { return m_waitMs; }
        /// Whether the gate is held (false without one, or where `wait` was false and it was taken).
        bool held() const { return m_fd >= 0; }

    private:
        int m_fd = -1;
        double m_waitMs = 0;
    };

    /// An evaluation's turn on the GPU: `<path>.turn` held exclusively from construction (waiting
    /// for the evaluation before this one to pass its measurements) until release() or the end
    /// of its scope. Without a turn file (an older supervisor) or a lock it holds nothing.
    class Turn
    {
    public:
        explicit Turn(const GpuQuietLock* lock);
        ~Turn() { release(); }
        Turn(const Turn&) = delete;
        Turn& operator=(const Turn&) = delete;
        void release();
        double waitMs() const { return m_waitMs; }
        bool held() const { return m_fd >= 0; }

    private:
        int m_fd = -1;
        double m_waitMs = 0;
    };

private:
    std::string m_path;
    int m_fd = -1;
    int m_intentFd = -1;
    int m_turnFd = -1;
    std::string m_error;
};

} // namespace kwb
