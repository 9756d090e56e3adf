#include "worker/measure/cpuaffinity.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifdef __linux__
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kwb::affinity {
using json = nlohmann::json;

namespace {
std::string readLine(const std::string& path)
{
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
        line.pop_back();
    return line;
}

bool parseInt(const std::string& s, int* out)
{
    if (s.empty() || s.size() > 6 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
    *out = std::stoi(s);
    return true;
}

/// The calling thread's CPU set made `cpus`: "" or why not.
std::string setThreadCpus(const std::vector<int>& cpus)
{
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
        if (c >= 0 && c < CPU_SETSIZE)
            CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return std::string("sched_setaffinity: ") + std::strerror(errno);
    return "";
#else
    (void)cpus;
    return "not Linux";
#endif
}
} // namespace

std::vector<int> parseCpuList(const std::string& text)
{
    std::vector<int> out;
    std::stringstream list(text);
    std::string part;
    while (std::getline(list, part, ',')) {
        if (part.empty())
            return {};
        const size_t dash = part.find('-');
        int lo = 0, hi = 0;
        if (dash == std::string::npos) {
            if (!parseInt(part, &lo))
                return {};
            hi = lo;
        } else if (!parseInt(part.substr(0, dash), &lo) || !parseInt(part.substr(dash + 1), &hi) || hi < lo) {
            return {};
        }
        for (int c = lo; c <= hi; ++c)
            out.push_back(c);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string sysfsBusId(const std::string& busId)
{
    std::string id = busId;
    for (char& c : id)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    const size_t colon = id.find(':');
    if (colon != std::string::npos && colon > 4)
        id = id.substr(colon - 4); // an 8-digit domain: sysfs writes 4
    return id;
}

std::vector<int> localCpus(const std::string& busId, const std::string& sysfs)
{
    if (busId.empty())
        return {};
    return parseCpuList(readLine(sysfs + "/bus/pci/devices/" + sysfsBusId(busId) + "/local_cpulist"));
}

std::vector<std::string> nvidiaGpus(const std::string& sysfs)
{
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(sysfs + "/bus/pci/devices", ec)) {
        const std::string dir = entry.path().string();
        if (readLine(dir + "/vendor") == "0x10de" && readLine(dir + "/class").rfind("0x03", 0) == 0)
            out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

NodeRank gpuRankOnNode(const std::string& busId, const std::string& sysfs)
{
    const std::string mine = sysfsBusId(busId);
    const std::vector<int> myCpus = localCpus(mine, sysfs);
    std::vector<std::string> sharing;
    for (const std::string& gpu : nvidiaGpus(sysfs))
        if (localCpus(gpu, sysfs) == myCpus)
            sharing.push_back(gpu);
    const auto it = std::find(sharing.begin(), sharing.end(), mine);
    if (it == sharing.end())
        return {};
    return {int(it - sharing.begin()), int(sharing.size())};
}

int timingCpu(const std::vector<int>& allowed, const std::vector<int>& local, NodeRank rank)
{
    std::vector<int> pool;
    for (int c : allowed)
        if (std::binary_search(local.begin(), local.end(), c))
            pool.push_back(c);
    if (pool.empty())
        pool = allowed;
    if (pool.empty())
        return -1;
    std::sort(pool.begin(), pool.end());
    const int n = int(pool.size());
    const int count = std::max(1, rank.count);
    const int step = std::max(1, n / count);
    const int k = ((rank.rank % count) + count) % count;
    return pool[size_t(n - 1 - (k * step) % n)];
}

std::vector<int> hostTimingCpus(const std::vector<int>& allowed, const std::string& sysfs)
{
    std::vector<int> out;
    for (const std::string& gpu : nvidiaGpus(sysfs))
        if (const int cpu = timingCpu(allowed, localCpus(gpu, sysfs), gpuRankOnNode(gpu, sysfs)); cpu >= 0)
            out.push_back(cpu);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<int> offTimingCpus(const std::vector<int>& allowed, const std::vector<int>& timing)
{
    std::vector<int> rest;
    for (int c : allowed)
        if (std::find(timing.begin(), timing.end(), c) == timing.end())
            rest.push_back(c);
    return rest.size() >= 2 ? rest : allowed;
}

std::vector<int> processCpus()
{
    static const std::vector<int> atStart = allowedCpus(); // a process's cpuset does not change
    return atStart;
}

std::string keepOffTimingCpus(const std::string& sysfs)
{
    const std::vector<int> all = processCpus();
    const std::vector<int> rest = offTimingCpus(all, hostTimingCpus(all, sysfs));
    return rest == all ? "" : setThreadCpus(rest);
}

std::vector<int> allowedCpus()
{
    std::vector<int> out;
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set))
            out.push_back(c);
#endif
    return out;
}

ThreadPin::ThreadPin(int cpu, int niceDelta, std::string why)
    : m_cpu(cpu)
    , m_why(std::move(why))
{
#ifdef __linux__
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
        if (m_why.empty())
            m_why = "no CPU to pin to";
        return;
    }
    m_oldCpus = allowedCpus();
    m_why = setThreadCpus({cpu});
    m_pinned = m_why.empty();
    // The nice value is per thread on Linux (setpriority on the thread id).
    const id_t tid = id_t(syscall(SYS_gettid));
    errno = 0;
    m_oldNice = getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && niceDelta != 0) {
        m_newNice = m_oldNice - niceDelta;
        if (setpriority(PRIO_PROCESS, tid, m_newNice) == 0)
            m_niceChanged = true;
        else
            m_niceWhy = std::string("setpriority: ") + std::strerror(errno);
    }
#else
    (void)niceDelta;
    m_why = "CPU pinning is implemented for Linux only";
#endif
}

ThreadPin::~ThreadPin()
{
#ifdef __linux__
    if (m_pinned && !m_oldCpus.empty())
        setThreadCpus(m_oldCpus);
    if (m_niceChanged)
        setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), m_oldNice);
#endif
}

json ThreadPin::toJson() const
{
    json j = {{"cpu", m_pinned ? json(m_cpu) : json(nullptr)},
              {"numa_local", m_pinned && numaLocal},
              {"nice", m_niceChanged ? json(m_newNice) : json(nullptr)}};
    if (!m_why.empty())
        j["reason"] = m_why;
    if (!m_niceWhy.empty())
        j["nice_reason"] = m_niceWhy;
    return j;
}

} // namespace kwb::affinity
