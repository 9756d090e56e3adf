#include "gpu_quiet_lock.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kwb {

GpuQuietLock::GpuQuietLock(std::string path) : m_path(std::move(path))
{
    m_fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0)
        m_error = "cannot open " + m_path + ": " + std::strerror(errno);
}

GpuQuietLock::~GpuQuietLock()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

GpuQuietLock::Hold::Hold(const GpuQuietLock* lock, Mode mode)
{
    if (!lock || lock->m_fd < 0)
        return;
    const auto t0 = std::chrono::steady_clock::now();
    int rc;
    do // a signal (the parent watch's, a profiler's) interrupts a blocking flock: take it again
        rc = ::flock(lock->m_fd, mode == Mode::Exclusive ? LOCK_EX : LOCK_SH);
    while (rc != 0 && errno == EINTR);
    m_waitMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc == 0)
        m_fd = lock->m_fd;
    else
        m_error = "flock " + lock->m_path + ": " + std::strerror(errno);
}

GpuQuietLock::Hold::~Hold()
{
    if (m_fd >= 0)
        ::flock(m_fd, LOCK_UN);
}

} // namespace kwb
