#pragma once
// Workers on their way out, and the GPU's quiet lock their exit is held under (gpulease.h). A
// fresh worker that answered its evaluation is handed off here as it exits (its CUDA context's
// teardown), so the supervisor's next request may start on a spare meanwhile; the GPU's quiet lock
// is held shared for it until it has ended, so no timing on that GPU overlaps its exit (where a
// measurement holds the lock now, its EOF waits for the lock, polled every kExitLockPollMs).
// docs/decisions.md, "The next fresh worker starts while the last one exits".

#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QProcess>
#include <QString>

namespace kwb {

struct EvaluationResult;

/// LOCK_SH on the GPU's quiet lock without waiting, for a worker on its way out, through the
/// writers-first gate as the worker's own holds go: the descriptor, or -1 (no lock file, or a
/// measurement holds it or waits for it now). O_CLOEXEC: no worker started later inherits it.
int takeQuietLockShared(const QString& path);

class LeavingWorkers : public QObject
{
    Q_OBJECT
public:
    /// How often a worker to be ended tries for the GPU's quiet lock while a measurement holds it:
    /// a timing holds it ~0.05-1 s.
    static constexpr int kExitLockPollMs = 2;

    explicit LeavingWorkers(QObject* parent = nullptr);
    /// Ends the workers still leaving: EOF (where it still waited for the lock), a moment to end,
    /// then SIGKILL.
    ~LeavingWorkers() override;

    /// Whether a worker that answered with `answer` may be handed off: where the answer says the
    /// device has room for the next worker beside it (gpu_memory) and it holds a quiet lock.
    bool mayTake(const QProcess* process, const EvaluationResult& answer) const;
    /// Takes the process (disconnected from its supervisor, which no longer owns it) and ends it
    /// under the lock; workerFinished() when it has ended. Its kill grace as the supervisor's.
    void take(QProcess* process, qint64 pid, int killGraceMs);
    bool isEmpty() const { return m_leaving.isEmpty(); }
    /// Ends every worker still leaving, waiting for each (as the destructor does).
    void endAll();

    // The benchmark's switches and counts (supervisortuning.h), not the product's.
    void setEnabled(bool enabled) { m_enabled = enabled; }
    bool enabled() const { return m_enabled; }
    void setExitUnderLock(bool enabled) { m_exitUnderLock = enabled; }
    bool exitUnderLock() const { return m_exitUnderLock; }
    int handedOff() const { return m_handedOff; }
    const QList<double>& exitMs() const { return m_exitMs; }

Q_SIGNALS:
    /// A handed-off worker ended; description says how (exitDescription()).
    void workerFinished(qint64 pid, const QString& description);

private:
    struct Leaving
    {
        QProcess* process = nullptr;
        qint64 pid = 0;
        int lockFd = -1;        ///< -1 until the lock is held; the EOF is sent then
        QElapsedTimer sinceEof; ///< started when the EOF was sent
        int killGraceMs = 0;
    };

    /// The leaving worker's EOF, once its quiet lock is held; false while the lock is not free.
    bool endUnderLock(QProcess* process);
    void onFinished(QProcess* process, int exitCode, QProcess::ExitStatus exitStatus);

    QList<Leaving> m_leaving;
    bool m_enabled = true;
    bool m_exitUnderLock = true;
    int m_handedOff = 0;
    QList<double> m_exitMs;
};

} // namespace kwb
