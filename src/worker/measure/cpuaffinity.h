#pragma once
// Where the timing loop's thread runs (measure.cpp): one CPU of the GPU's own NUMA node, the same
// one in every worker process for that GPU, at a raised priority where the system allows it.
// Launch-bound work (many small kernels, L3/9 at batch 2) is timed as the CPU issues it, so the
// CPU it runs on is part of the measurement: a process that lands on the other socket (launches
// cross the interconnect) or on a core with another turbo bin measures a different speed-up, and
// the interval of one process cannot see that. Linux only; elsewhere, and wherever sysfs or the
// affinity calls say no, the thread is left as it is and the reason is reported. Torch- and
// CUDA-free: the device comes in as its PCI bus id.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kwb::affinity {

/// "0-3,8,10-11" → {0, 1, 2, 3, 8, 10, 11} (sorted, unique); {} for an empty or malformed list.
std::vector<int> parseCpuList(const std::string& text);

/// "0000:1B:00.0" or "00000000:1B:00.0" (CUDA's and nvidia-smi's forms) → "0000:1b:00.0" (sysfs's).
std::string sysfsBusId(const std::string& busId);

/// The CPUs of the device's NUMA node: <sysfs>/bus/pci/devices/<id>/local_cpulist; {} where unknown.
std::vector<int> localCpus(const std::string& busId, const std::string& sysfs = "/sys");

/// This GPU's rank and the number of NVIDIA GPUs (vendor 0x10de, display class 0x03) whose
/// local_cpulist is the same as its own, ordered by bus id: GPUs sharing a node get distinct CPUs.
struct NodeRank
{
    int rank = 0, count = 1;
};
NodeRank gpuRankOnNode(const std::string& busId, const std::string& sysfs = "/sys");

/// The CPU for the timing thread: among the CPUs the process may use (`allowed`) that are local to
/// the GPU (all allowed ones where none is known to be local), the (rank + 1)-th of `count` evenly
/// spaced picks counted from the highest CPU down (CPU 0, where the OS's own work tends to run,
/// comes last). -1 where `allowed` is empty.
int timingCpu(const std::vector<int>& allowed, const std::vector<int>& local, NodeRank rank);

/// The PCI bus ids (sysfs's form) of every NVIDIA GPU sysfs lists (vendor 0x10de, display class
/// 0x03), sorted.
std::vector<std::string> nvidiaGpus(const std::string& sysfs = "/sys");

/// Where this host's timing threads run: timingCpu() of every GPU of nvidiaGpus(), for a process
/// that may use `allowed` (sorted, unique; {} without a GPU).
std::vector<int> hostTimingCpus(const std::vector<int>& allowed, const std::string& sysfs = "/sys");

/// The CPUs everything but the timing thread may use: `allowed` less `timing`, where at least two
/// CPUs are left (a compiler, a compile worker's torch import or a worker's own other threads on a
/// timing CPU delay the timing thread's wake-up after a synchronize by up to a scheduler period,
/// and that delay lands inside the timed interval); `allowed` as it is on a machine too small to
/// spare them (the rest would lose half their CPUs).
std::vector<int> offTimingCpus(const std::vector<int>& allowed, const std::vector<int>& timing);

/// The CPUs this process could use when it started, before keepOffTimingCpus() narrowed them:
/// the set the timing thread's CPU is chosen from, so every worker for a GPU picks the same one.
std::vector<int> processCpus();

/// The calling process kept to offTimingCpus(processCpus(), its host's timing CPUs), called by its
/// first thread before any other starts, so every thread and process it starts inherits the set;
/// the timing thread leaves it for its own CPU for each measurement (ThreadPin). Why that failed,
/// or "" (done, or nothing to do).
std::string keepOffTimingCpus(const std::string& sysfs = "/sys");

/// The calling thread pinned to one CPU (and its nice value lowered by `niceDelta` where allowed)
/// for the scope's life; the thread's earlier CPU set and nice value come back at its end.
class ThreadPin
{
public:
    /// cpu < 0: nothing is changed (`why` says why, toJson reports it).
    ThreadPin(int cpu, int niceDelta, std::string why);
    ~ThreadPin();
    ThreadPin(const ThreadPin&) = delete;
    ThreadPin& operator=(const ThreadPin&) = delete;
    /// {"cpu": n or null, "numa_local": bool, "nice": value or null, "reason": why not, …}
    nlohmann::json toJson() const;
    bool pinned() const { return m_pinned; }
    bool numaLocal = false; ///< set by the caller: whether `cpu` is on the GPU's node

private:
    int m_cpu = -1;
    bool m_pinned = false;
    bool m_niceChanged = false;
    int m_oldNice = 0, m_newNice = 0;
    std::vector<int> m_oldCpus;
    std::string m_why, m_niceWhy;
};

/// The CPUs the calling thread may run on (sched_getaffinity); {} where unknown.
std::vector<int> allowedCpus();

} // namespace kwb::affinity
