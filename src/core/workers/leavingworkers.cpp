#include "core/workers/leavingworkers.h"

#include "core/protocol/evaluationresult.h"
#include "core/workers/gpulease.h"
#include "core/workers/workerprocess.h"

#include <QFile>
#include <QTimer>

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kwb {

namespace {

// Room on the device, as the answer left, for the next worker beside this one while it exits: at
// least as much free as is used (so an evaluation as large as the one that ended fits) and 1 GiB
// more (a CUDA context and the libraries' workspaces). What the worker gave back of torch's cache
// before answering counts as used: the next evaluation may need as much.
bool roomBesideLeavingWorker(const EvaluationResult& e)
{
    constexpr double kContextBytes = 1024.0 * 1024.0 * 1024.0;
    if (!e.gpuFreeBytes || !e.gpuTotalBytes || !(*e.gpuTotalBytes > 0))
        return false;
    const double used = *e.gpuTotalBytes - *e.gpuFreeBytes + std::max(0.0, e.gpuReleasedBytes.value_or(0.0));
    return *e.gpuFreeBytes >= used + kContextBytes;
}

} // namespace

int takeQuietLockShared(const QString& path)
{
    if (path.isEmpty())
        return -1;
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    // Through the writers-first gate as the worker's holds go (GpuQuietLock): where a timing
    // waits at it, no hold of ours gets ahead of that timing.
    const int intent = ::open(QFile::encodeName(GpuLeases::quietIntentPath(path)).constData(), O_RDONLY | O_CLOEXEC);
    const bool gated = intent < 0 || ::flock(intent, LOCK_SH | LOCK_NB) == 0;
    const bool held = gated && ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    if (intent >= 0)
        ::close(intent); // lets the gate go
    if (!held) {
        ::close(fd);
        return -1;
    }
    return fd;
}

LeavingWorkers::LeavingWorkers(QObject* parent)
    : QObject(parent)
{}

LeavingWorkers::~LeavingWorkers()
{
    endAll();
}

void LeavingWorkers::endAll()
{
    const QList<Leaving> leaving = std::exchange(m_leaving, {});
    for (const Leaving& l : leaving) {
        l.process->disconnect(this);
        l.process->closeWriteChannel();
        if (!l.process->waitForFinished(1000)) {
            signalWorker(l.process, SIGKILL);
            l.process->waitForFinished(l.killGraceMs);
        }
        if (l.lockFd >= 0)
            ::close(l.lockFd);
        delete l.process;
    }
}

bool LeavingWorkers::mayTake(const QProcess* process, const EvaluationResult& answer) const
{
    return m_enabled && process && roomBesideLeavingWorker(answer) && !quietLockOf(process).isEmpty();
}

void LeavingWorkers::take(QProcess* process, qint64 pid, int killGraceMs)
{
    m_leaving.append(Leaving{process, pid, -1, {}, killGraceMs});
    ++m_handedOff;
    // Nobody's output any more; read so that a chatty exit never blocks on a full pipe.
    connect(process, &QProcess::readyReadStandardOutput, this, [process] { process->readAllStandardOutput(); });
    connect(process, &QProcess::readyReadStandardError, this, [process] { process->readAllStandardError(); });
    connect(process, &QProcess::finished, this, [this, process](int exitCode, QProcess::ExitStatus exitStatus) {
        onFinished(process, exitCode, exitStatus);
    });
    if (!endUnderLock(process)) {
        // A measurement holds the GPU now (another slot's timing): the worker waits, idle, until
        // it is done. The timer goes with the process.
        auto* poll = new QTimer(process);
        poll->setInterval(kExitLockPollMs);
        connect(poll, &QTimer::timeout, this, [this, process, poll] {
            if (endUnderLock(process))
                poll->stop();
        });
        poll->start();
    }
}

bool LeavingWorkers::endUnderLock(QProcess* process)
{
    const auto it =
        std::find_if(m_leaving.begin(), m_leaving.end(), [process](const Leaving& l) { return l.process == process; });
    if (it == m_leaving.end())
        return true;
    if (m_exitUnderLock) {
        it->lockFd = takeQuietLockShared(quietLockOf(process));
        if (it->lockFd < 0)
            return false;
    }
    it->sinceEof.start();
    process->closeWriteChannel(); // EOF: the worker exits (with code 0)
    // As a retired worker: SIGTERM after the grace period, SIGKILL after another (the timers go
    // with the process).
    const int grace = it->killGraceMs;
    QTimer::singleShot(grace, process, [process, grace] {
        signalWorker(process, SIGTERM);
        QTimer::singleShot(grace, process, [process] { signalWorker(process, SIGKILL); });
    });
    return true;
}

void LeavingWorkers::onFinished(QProcess* process, int exitCode, QProcess::ExitStatus exitStatus)
{
    const auto it =
        std::find_if(m_leaving.begin(), m_leaving.end(), [process](const Leaving& l) { return l.process == process; });
    if (it == m_leaving.end())
        return;
    const Leaving leaving = *it;
    m_leaving.erase(it);
    if (leaving.sinceEof.isValid())
        m_exitMs.append(double(leaving.sinceEof.nsecsElapsed()) / 1e6);
    // Its CUDA context is gone with it: a timing on this GPU may start now.
    if (leaving.lockFd >= 0)
        ::close(leaving.lockFd);
    process->disconnect(this);
    process->deleteLater(); // never inside its own signal
    unwrapSignal(process, &exitCode, &exitStatus);
    Q_EMIT workerFinished(leaving.pid, exitDescription(exitCode, exitStatus));
}

} // namespace kwb
