#include "worker/measure/gpuquietlock.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kwb {

GpuQuietLock::GpuQuietLock(std::string path)
    : m_path(std::move(path))
{
    m_fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0) {
        m_error = "cannot open " + m_path + ": " + std::strerror(errno);
        return;
    }
    m_intentFd = ::open(intentPath(m_path).c_str(), O_RDONLY | O_CLOEXEC); // -1: no writers-first gate
    m_turnFd = ::open(turnPath(m_path).c_str(), O_RDONLY | O_CLOEXEC);     // -1: no evaluations' turn
}

GpuQuietLock::~GpuQuietLock()
{
    if (m_turnFd >= 0)
        ::close(m_turnFd);
    if (m_intentFd >= 0)
        ::close(m_intentFd);
    if (m_fd >= 0)
        ::close(m_fd);
}

namespace {
/// flock, taken again where a signal (the parent watch's, a profiler's) interrupts it.
int flockRetrying(int fd, int operation)
{
    int rc;
    do
        rc = ::flock(fd, operation);
    while (rc != 0 && errno == EINTR);
    return rc;
}
} // namespace

GpuQuietLock::Hold::Hold(const GpuQuietLock* lock, Mode mode)
{
    if (!lock || lock->m_fd < 0)
        return;
    const auto t0 = std::chrono::steady_clock::now();
    const int operation = mode == Mode::Exclusive ? LOCK_EX : LOCK_SH;
    // The gate first, in the same mode: while a measurement holds it (waiting for the lock), no
    // new shared hold gets past; let go once the lock is held (or could not be taken).
    const bool gated = lock->m_intentFd >= 0 && flockRetrying(lock->m_intentFd, operation) == 0;
    const int rc = flockRetrying(lock->m_fd, operation);
    const int flockErrno = errno;
    if (gated)
        ::flock(lock->m_intentFd, LOCK_UN);
    errno = flockErrno;
    m_waitMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc == 0)
        m_fd = lock->m_fd;
    else
        m_error = "flock " + lock->m_path + ": " + std::strerror(errno);
}

GpuQuietLock::Intent::Intent(const GpuQuietLock* lock, bool wait)
{
    if (!lock || lock->m_fd < 0 || lock->m_intentFd < 0)
        return;
    const auto t0 = std::chrono::steady_clock::now();
    if (flockRetrying(lock->m_intentFd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) == 0)
        m_fd = lock->m_intentFd;
    m_waitMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

GpuQuietLock::Intent::~Intent()
{
    if (m_fd >= 0)
        ::flock(m_fd, LOCK_UN); // already let go where the Hold that followed has the lock
}

GpuQuietLock::Turn::Turn(const GpuQuietLock* lock)
{
    if (!lock || lock->m_fd < 0 || lock->m_turnFd < 0)
        return;
    const auto t0 = std::chrono::steady_clock::now();
    if (flockRetrying(lock->m_turnFd, LOCK_EX) == 0)
        m_fd = lock->m_turnFd;
    m_waitMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void GpuQuietLock::Turn::release()
{
    if (m_fd >= 0)
        ::flock(m_fd, LOCK_UN);
    m_fd = -1;
}

GpuQuietLock::Hold::~Hold()
{
    if (m_fd >= 0)
        ::flock(m_fd, LOCK_UN);
}

} // namespace kwb
