#pragma once
// What a worker may take of the host: memory and threads (docs/protocol.md, "Host limits"), and
// whether it runs in the OS sandbox (workerlauncher.h). The supervisor enforces the limits by
// reading /proc while a request runs, since RLIMIT_AS cannot be used: the CUDA driver reserves
// virtual ranges far larger than any machine's memory.

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QtGlobal>

#include <optional>

namespace kwb {

/// The default host-memory limit of a worker: half of the machine's memory, at most all but
/// 4 GiB, and never under a quarter. The machine's memory is MemTotal, or the memory.max of
/// kwb's cgroup when that is lower (a container). 16 GiB: 8 GiB; 24 GiB: 12; 8 GiB: 4; 6 GiB: 2;
/// 4 GiB: 1 GiB; 128 GiB: 64.
qint64 defaultHostMemoryLimit();
/// defaultHostMemoryLimit() for a machine of totalBytes.
qint64 defaultHostMemoryLimitFor(qint64 totalBytes);
/// The memory kwb may use: MemTotal, or the cgroup's memory.max when lower; 0 when unknown.
qint64 machineMemoryBytes();
/// The default cap on a worker's host threads: 512, or 4 per CPU where that is more. A libtorch
/// worker starts an OpenMP pool of one thread per CPU, an inter-op pool of as many, and a few
/// dozen more (CUDA, CUPTI, the parent watch).
int defaultHostThreadLimit();

/// "8G", "512M", "1.5GiB", "2048" (bytes), case-insensitive, K/M/G/T binary (KiB…), an optional
/// "B" or "iB". nullopt with *error for anything else, zero or negative included.
std::optional<qint64> parseByteSize(const QString& text, QString* error = nullptr);
/// "16.1 GiB", "512 MiB", "900 KiB": binary units, three significant digits.
QString formatBytes(qint64 bytes);

/// The limits a worker runs under. Zero means the default (resolved on the machine that runs the
/// worker, so a resumed run on another machine gets that machine's default).
struct WorkerLimits
{
    qint64 hostMemoryBytes = 0; ///< 0: defaultHostMemoryLimit()
    int hostThreads = 0;        ///< 0: defaultHostThreadLimit()
    bool osSandbox = true;      ///< wrap the worker in bubblewrap where it works (workerlauncher.h)

    qint64 effectiveHostMemory() const { return hostMemoryBytes > 0 ? hostMemoryBytes : defaultHostMemoryLimit(); }
    int effectiveHostThreads() const { return hostThreads > 0 ? hostThreads : defaultHostThreadLimit(); }

    /// As a run's configuration stores it (`worker_limits`): host_memory_bytes (the effective
    /// limit), host_memory_default (true when it was the default), host_threads, os_sandbox.
    QJsonObject toJson() const;
    /// Back from toJson(): a stored default stays a default; missing fields are defaults.
    static WorkerLimits fromJson(const QJsonObject& object);
};

/// What one poll of a process tree found (/proc/PID/status of the process and its descendants).
struct ProcessTreeUsage
{
    bool found = false;   ///< the root process was readable
    qint64 rssBytes = 0;  ///< VmRSS, summed
    qint64 peakBytes = 0; ///< max(VmHWM, VmRSS) of each process, summed: peaks between polls count
    int threads = 0;      ///< Threads, summed
    QList<qint64> pids;   ///< the root first, then descendants (breadth-first)
};

/// Reads the process `pid` and its descendants: a few small file reads per process. With
/// allThreads false only the children that each process's main thread started are followed
/// (one file each; a libtorch worker has a hundred threads and more on a large machine).
ProcessTreeUsage processTreeUsage(qint64 pid, bool allThreads = true);
/// The children of `pid` (all its threads', or its main thread's), empty when none or
/// unreadable. From /proc/PID/task/TID/children, else (a kernel without them)
/// childProcessesByScan().
QList<qint64> childProcesses(qint64 pid, bool allThreads = true);
/// The children of `pid` by the parent field of every /proc/N/stat.
QList<qint64> childProcessesByScan(qint64 pid);

} // namespace kwb
