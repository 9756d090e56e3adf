#pragma once
// A memory cgroup of its own for each local worker (issue 32 item 4): the kernel enforces the
// worker's host-memory limit there, and when a worker dies by SIGKILL the cgroup's own counters
// say whether its limit's OOM killer ended it (the candidate's `resource_limit`) or not (a kill
// from outside: the machine's `worker_lost`). The supervisor's /proc poll (hostlimits.h) stays:
// it names the peak and works where no cgroup can be made; the cgroup catches what grows faster
// than a poll and is the proof where the poll saw nothing.
//
// Where: cgroup v2 (the unified hierarchy, where `memory` is a controller of the parent of kwb's
// own cgroup, which is the case under systemd: a user's scope in its slice) as a sibling of kwb's
// cgroup; cgroup v1 (containers) as a child of kwb's cgroup in the memory hierarchy. Both need
// write access there (delegated to the user under systemd, root in a container); without it,
// none is made and the probe keeps the reason (MemoryCgroupSupport::why).

#include <QString>
#include <QtGlobal>

#include <functional>
#include <memory>

namespace kwb {

/// What the machine offers, probed once per process.
struct MemoryCgroupSupport
{
    enum class Kind { None, V2, V1 };
    Kind kind = Kind::None;
    QString parent; ///< the folder new worker cgroups are made in
    QString why;    ///< for None: why not; else the hierarchy used ("cgroup v2 at …")
    bool available() const { return kind != Kind::None; }
};

/// Probed on the first call (a mkdir and rmdir where one could work), then cached.
const MemoryCgroupSupport& memoryCgroupSupport();
/// What a run stores (`memory_cgroup`): "cgroup v2, in <folder>" / "cgroup v1 memory, in <folder>"
/// where local workers get one, else "none: <why>".
QString memoryCgroupStatus();
/// The probe itself, for the given /proc/self/cgroup and /proc/self/mountinfo texts (tests).
MemoryCgroupSupport probeMemoryCgroups(const QByteArray& selfCgroup, const QByteArray& mountInfo);

/// How the worker of a cgroup ended, read from its counters after it died.
struct MemoryCgroupEnding
{
    bool read = false;     ///< the counters were readable
    qint64 oomKills = 0;   ///< processes of the cgroup killed by an OOM killer (any)
    bool hitLimit = false; ///< the cgroup's own limit was reached (v2 `oom`, v1 failcnt)
    qint64 peakBytes = 0;  ///< the cgroup's peak usage where the kernel keeps it, else 0
    /// An OOM kill in the cgroup after it reached its own limit: the worker's memory, not the
    /// machine's.
    bool killedAtLimit() const { return read && oomKills > 0 && hitLimit; }
    /// "memory.events: oom 1, oom_kill 1": the counters as read, for the message.
    QString evidence;
};

/// One worker's cgroup: made with the limit, joined by the worker in its child process before
/// exec (joinFromChild), read when it has ended, removed when destroyed.
class WorkerMemoryCgroup
{
public:
    /// Makes the cgroup under support.parent with limitBytes (swap off where the kernel has the
    /// file); null with *error when it cannot be made.
    static std::unique_ptr<WorkerMemoryCgroup> create(const MemoryCgroupSupport& support, qint64 limitBytes,
                                                      QString* error = nullptr);
    ~WorkerMemoryCgroup();
    WorkerMemoryCgroup(const WorkerMemoryCgroup&) = delete;
    WorkerMemoryCgroup& operator=(const WorkerMemoryCgroup&) = delete;

    /// For QProcess::setChildProcessModifier: writes the child's pid into the cgroup with
    /// async-signal-safe calls only (between fork and exec); on failure the worker runs without
    /// it and ending() finds no kill of its own.
    std::function<void()> joinFromChild() const;
    /// The counters now (after the worker ended).
    MemoryCgroupEnding ending() const;
    QString path() const { return m_path; }
    qint64 limitBytes() const { return m_limit; }

private:
    WorkerMemoryCgroup(MemoryCgroupSupport::Kind kind, QString path, qint64 limit);
    MemoryCgroupSupport::Kind m_kind;
    QString m_path;
    QByteArray m_procsFile; ///< cgroup.procs, encoded once for the child
    qint64 m_limit;
};

/// Parses v2 memory.events ("oom 1\noom_kill 1\n…") or v1 memory.oom_control ("oom_kill 1") into
/// ending (tests use it on texts).
void readMemoryEventCounts(const QByteArray& text, MemoryCgroupEnding* ending);

} // namespace kwb
