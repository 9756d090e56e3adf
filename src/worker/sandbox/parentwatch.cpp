#include "worker/sandbox/parentwatch.h"

#include "core/workers/hostlimitdefaults.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kwb {

namespace {

// SIGKILL to itself; as PID 1 of the sandbox's namespace the kernel ignores that, so it exits.
[[noreturn]] void endNow()
{
    ::raise(SIGKILL);
    ::_exit(kWorkerExitHostLimit + 1);
}

} // namespace

void watchParent()
{
    const pid_t parent = ::getppid();
    // Fires when the thread that forked us exits (kwb starts workers from its main thread); the
    // poll below also covers a parent whose forking thread lives on elsewhere, and the window
    // before this call (then getppid() already differs). A parent that died even before the
    // first getppid() left our stdin at EOF: the worker ends when it next reads.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
        endNow();
    std::thread([parent] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (::getppid() != parent)
                endNow(); // the whole process, whichever thread is busy
        }
    }).detach();
}

void watchInputHangup(int fd)
{
    ::signal(SIGHUP, SIG_DFL);
    std::thread([fd] {
        for (;;) {
            // No POLLIN: unread requests are the main thread's and must not wake this loop.
            // POLLHUP, POLLERR and POLLNVAL are reported whatever is asked.
            pollfd entry{fd, POLLRDHUP, 0};
            const int ready = ::poll(&entry, 1, -1);
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready < 0 || (entry.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)))
                endNow(); // the connection is gone: nobody can read an answer
        }
    }).detach();
}

// A /proc or /sys file, whole (they report no size); "" when unreadable.
std::string readSmallFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {};
    std::string text;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || text.size() > 64 * 1024)
            break;
        text.append(buffer, std::size_t(n));
    }
    ::close(fd);
    return text;
}

// The children of `pid` (all its threads', or its main thread's) from /proc/PID/task/TID/children.
std::vector<long> childrenOf(long pid, bool allThreads)
{
    std::vector<long> children;
    std::vector<std::string> threads;
    const std::string taskDir = "/proc/" + std::to_string(pid) + "/task";
    if (allThreads) {
        if (DIR* dir = ::opendir(taskDir.c_str())) {
            while (const dirent* entry = ::readdir(dir))
                if (entry->d_name[0] != '.')
                    threads.emplace_back(entry->d_name);
            ::closedir(dir);
        }
    } else {
        threads.push_back(std::to_string(pid));
    }
    for (const std::string& tid : threads) {
        const std::string text = readSmallFile(taskDir + "/" + tid + "/children");
        const char* p = text.c_str();
        for (;;) {
            char* end = nullptr;
            const long child = std::strtol(p, &end, 10);
            if (end == p)
                break;
            if (child > 0 && std::find(children.begin(), children.end(), child) == children.end())
                children.push_back(child);
            p = end;
        }
    }
    return children;
}

std::int64_t statusField(const std::string& status, const std::string& name)
{
    std::size_t at = 0;
    if (status.rfind(name + ':', 0) != 0) {
        at = status.find('\n' + name + ':');
        if (at == std::string::npos)
            return -1;
        ++at;
    }
    const char* start = status.c_str() + at + name.size() + 1;
    char* end = nullptr;
    const long long value = std::strtoll(start, &end, 10);
    if (end == start)
        return -1;
    while (*end == ' ' || *end == '\t')
        ++end;
    return end[0] == 'k' && end[1] == 'B' ? value * 1024 : value;
}

namespace {

// MemTotal, or the lowest cgroup v2 memory.max on the way to the root where lower: as
// machineMemoryBytes() in hostlimits.cpp.
std::int64_t machineMemoryBytes()
{
    const std::int64_t total = statusField(readSmallFile("/proc/meminfo"), "MemTotal");
    std::int64_t lowest = 0;
    const std::string cgroups = readSmallFile("/proc/self/cgroup");
    const std::size_t line = cgroups.rfind("0::", 0) == 0 ? 0 : cgroups.find("\n0::");
    if (line != std::string::npos) {
        const std::size_t start = line + (line == 0 ? 3 : 4);
        std::string path = cgroups.substr(start, cgroups.find('\n', start) - start);
        for (;;) {
            const std::string value = readSmallFile("/sys/fs/cgroup" + path + "/memory.max");
            char* end = nullptr;
            const long long bytes = std::strtoll(value.c_str(), &end, 10);
            if (end != value.c_str() && bytes > 0 && (lowest == 0 || bytes < lowest))
                lowest = bytes;
            if (path.empty() || path == "/")
                break;
            path.resize(path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
        }
    }
    if (total <= 0)
        return lowest;
    return lowest > 0 ? std::min(total, lowest) : total;
}

void writeStderr(const std::string& line)
{
    (void)!::write(2, line.data(), line.size());
}

} // namespace

std::string limitBuildMemory()
{
    rlimit current{};
    if (::getrlimit(RLIMIT_DATA, &current) != 0)
        return std::string("getrlimit: ") + std::strerror(errno);
    rlim_t limit = rlim_t(buildDataLimitForTotal(machineMemoryBytes()));
    if (current.rlim_max != RLIM_INFINITY)
        limit = std::min(limit, current.rlim_max);
    const rlimit wanted{limit, limit};
    if (::setrlimit(RLIMIT_DATA, &wanted) != 0)
        return std::string("setrlimit: ") + std::strerror(errno);
    return {};
}

std::int64_t effectiveHostMemoryLimit(std::int64_t memoryBytes)
{
    return memoryBytes > 0 ? memoryBytes : defaultHostMemoryLimitForTotal(machineMemoryBytes());
}

int effectiveHostThreadLimit(int threads)
{
    return threads > 0 ? threads : defaultHostThreadLimitForCpus(int(std::thread::hardware_concurrency()));
}

void watchHostLimits(std::int64_t memoryBytes, int threads)
{
    const std::int64_t memoryLimit = effectiveHostMemoryLimit(memoryBytes);
    const int threadLimit = effectiveHostThreadLimit(threads);
    const long self = long(::getpid());
    std::thread([self, memoryLimit, threadLimit] {
        for (unsigned poll = 0;; ++poll) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            // Children started by other threads than a process's main one every 10th time, as
            // the supervisor polls (a libtorch worker has a hundred threads and more).
            const bool allThreads = poll % 10 == 0;
            std::vector<long> tree{self};
            std::int64_t peak = 0;
            std::int64_t count = 0;
            for (std::size_t i = 0; i < tree.size() && i < 4096; ++i) {
                const std::string status = readSmallFile("/proc/" + std::to_string(tree[i]) + "/status");
                if (status.empty())
                    continue; // ended meanwhile
                const std::int64_t rss = std::max<std::int64_t>(0, statusField(status, "VmRSS"));
                const std::int64_t hwm = std::max<std::int64_t>(0, statusField(status, "VmHWM"));
                peak += std::max(rss, hwm);
                count += std::max<std::int64_t>(0, statusField(status, "Threads"));
                for (const long child : childrenOf(tree[i], allThreads))
                    if (std::find(tree.begin(), tree.end(), child) == tree.end())
                        tree.push_back(child);
            }
            std::string over;
            if (peak > memoryLimit)
                over = "memory " + std::to_string(peak) + " " + std::to_string(memoryLimit);
            else if (count > threadLimit)
                over = "threads " + std::to_string(count) + " " + std::to_string(threadLimit);
            if (over.empty())
                continue;
            writeStderr("kwb-worker: host limit: " + over + "\n");
            for (std::size_t i = tree.size(); i-- > 1;)
                ::kill(pid_t(tree[i]), SIGKILL);
            ::_exit(kWorkerExitHostLimit); // every thread, whichever is busy
        }
    }).detach();
}

} // namespace kwb
