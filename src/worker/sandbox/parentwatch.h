#pragma once
// The worker ends when the process that started it dies, whatever its own threads are doing: a
// worker left busy in a long evaluation after `kill -9` of kwb must not run on (or hold the GPU)
// as an orphan. A remote worker (ssh, srun: docs/remote-workers.md) also ends when its stdin
// closes: its parent there is sshd's session or slurmstepd, which outlive the connection.

#include <cstdint>
#include <string>
#include <vector>

namespace kwb {

/// Arms PR_SET_PDEATHSIG (SIGKILL) and starts a detached watchdog thread that polls getppid()
/// every 200 ms and SIGKILLs this process once it changes (re-parenting to init or a
/// subreaper). Call first thing in main; always on.
void watchParent();

/// Starts a detached watchdog thread that SIGKILLs this process as soon as the other end of
/// descriptor `fd` (stdin) is closed: poll() reports POLLHUP for a pipe whose writers are gone
/// and POLLRDHUP for a socket shut down for writing, also while requests are still unread and
/// whatever the main thread is doing (a hung kernel). Also puts SIGHUP back to its default
/// (ending the process) in case it was inherited as ignored. For `--end-on-stdin-eof`: a
/// worker fed a file of requests on stdin must not use it.
void watchInputHangup(int fd = 0);

/// The host limits of a worker on a remote host (docs/remote-workers.md, "Hard limits over the
/// network"), where the supervisor cannot read /proc: starts a detached watchdog thread that
/// every 50 ms sums, over this process and its descendants, max(VmHWM, VmRSS) and Threads of
/// /proc/PID/status, as the supervisor does locally (hostlimits.h, processTreeUsage). Over a
/// limit it writes "kwb-worker: host limit: memory PEAK LIMIT" (or "threads COUNT LIMIT") on
/// stderr, SIGKILLs the descendants and exits with kWorkerExitHostLimit, whatever the main
/// thread is doing. 0 is this machine's default (hostlimitdefaults.h, of its MemTotal or cgroup
/// memory.max and its CPUs).
void watchHostLimits(std::int64_t memoryBytes, int threads);

/// A /proc or /sys file, whole (they report no size; at most ~64 KiB); "" when unreadable.
std::string readSmallFile(const std::string& path);
/// A field of /proc/PID/status or /proc/meminfo: "VmRSS:	  123456 kB" -> bytes (a plain number
/// as it is); -1 when missing.
std::int64_t statusField(const std::string& status, const std::string& name);
/// The children of `pid`, from every thread's /proc/PID/task/TID/children (`allThreads`) or the
/// main thread's; each once.
std::vector<long> childrenOf(long pid, bool allThreads);

/// Sets this process's RLIMIT_DATA, soft and hard, to buildDataLimitForTotal of this machine's
/// memory (MemTotal, or a lower cgroup memory.max), for the build broker before it starts
/// anything: every build inherits it. Never above a hard limit already lower. "" or why it failed.
std::string limitBuildMemory();

/// What watchHostLimits() enforces for these arguments here (0: the default resolved).
std::int64_t effectiveHostMemoryLimit(std::int64_t memoryBytes);
int effectiveHostThreadLimit(int threads);

} // namespace kwb
