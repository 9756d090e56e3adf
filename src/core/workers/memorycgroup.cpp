#include "core/workers/memorycgroup.h"

#include <QByteArrayList>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace kwb {

namespace {

QByteArray readSmallFile(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool writeSmallFile(const QString& path, const QByteArray& text)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly | QIODevice::Unbuffered) && file.write(text) == text.size();
}

struct Mount
{
    QString root;  ///< the path inside the hierarchy that is mounted here
    QString point; ///< where
};

// The cgroup v2 mount, or the v1 mount of the memory controller, from /proc/self/mountinfo:
// "36 35 0:30 / /sys/fs/cgroup/memory rw,… shared:9 - cgroup cgroup rw,memory".
Mount findMount(const QByteArray& mountInfo, bool v2)
{
    for (const QByteArray& line : mountInfo.split('\n')) {
        const int dash = line.indexOf(" - ");
        if (dash < 0)
            continue;
        const QByteArrayList before = line.left(dash).split(' ');
        const QByteArrayList after = line.mid(dash + 3).split(' ');
        if (before.size() < 5 || after.size() < 3)
            continue;
        const bool match =
            v2 ? after.at(0) == "cgroup2" : after.at(0) == "cgroup" && after.at(2).split(',').contains("memory");
        if (match)
            return {QString::fromUtf8(before.at(3)), QString::fromUtf8(before.at(4))};
    }
    return {};
}

// kwb's cgroup in that hierarchy, from /proc/self/cgroup ("0::/user.slice/…", "4:memory:/x").
QString ownPath(const QByteArray& selfCgroup, bool v2)
{
    for (const QByteArray& line : selfCgroup.split('\n')) {
        const QByteArrayList parts = line.split(':');
        if (parts.size() < 3)
            continue;
        const bool match = v2 ? parts.at(0) == "0" && parts.at(1).isEmpty() : parts.at(1).split(',').contains("memory");
        if (match)
            return QString::fromUtf8(line.mid(parts.at(0).size() + parts.at(1).size() + 2));
    }
    return {};
}

QString folderOf(const Mount& mount, const QString& path)
{
    QString inside = path;
    if (mount.root != QLatin1String("/") && inside.startsWith(mount.root))
        inside = inside.mid(mount.root.size());
    return QDir::cleanPath(mount.point + QLatin1Char('/') + inside);
}

QString nextName()
{
    static std::atomic<int> sequence{0};
    return QStringLiteral("kwb-worker-%1-%2").arg(::getpid()).arg(++sequence);
}

// Whether a cgroup can be made in parent with the file that says the memory controller is on.
bool canMake(const QString& parent, const char* limitFile, QString* why)
{
    const QString probe = parent + QLatin1Char('/') + nextName();
    if (!QDir().mkdir(probe)) {
        *why = QStringLiteral("cannot make a cgroup in %1 (%2)").arg(parent, QString::fromLocal8Bit(strerror(errno)));
        return false;
    }
    const bool hasLimit = QFileInfo::exists(probe + QLatin1Char('/') + QLatin1String(limitFile));
    QDir().rmdir(probe);
    if (!hasLimit)
        *why = QStringLiteral("the memory controller is not enabled for cgroups made in %1").arg(parent);
    return hasLimit;
}

qint64 counter(const QByteArray& text, const QByteArray& name)
{
    for (const QByteArray& line : text.split('\n')) {
        const QByteArrayList parts = line.simplified().split(' ');
        if (parts.size() == 2 && parts.at(0) == name)
            return parts.at(1).toLongLong();
    }
    return 0;
}

} // namespace

MemoryCgroupSupport probeMemoryCgroups(const QByteArray& selfCgroup, const QByteArray& mountInfo)
{
    MemoryCgroupSupport support;
    QStringList whyNot;
    // v2: a sibling of kwb's own cgroup (a cgroup with processes cannot enable controllers for
    // children of its own, the root aside), where kwb's cgroup shows the controller is on.
    if (const Mount mount = findMount(mountInfo, true); !mount.point.isEmpty()) {
        const QString path = ownPath(selfCgroup, true);
        if (path.isEmpty()) {
            whyNot << QStringLiteral("cgroup v2 is mounted at %1 but kwb is in no cgroup of it").arg(mount.point);
        } else {
            const QString own = folderOf(mount, path);
            const bool root = path == QLatin1String("/");
            const QString parent = root ? own : QFileInfo(own).path();
            QString why;
            if (!root && !QFileInfo::exists(own + QLatin1String("/memory.max")))
                whyNot << QStringLiteral("cgroup v2: no memory controller for %1").arg(own);
            else if (canMake(parent, "memory.max", &why))
                return {MemoryCgroupSupport::Kind::V2, parent, QStringLiteral("cgroup v2, in %1").arg(parent)};
            else
                whyNot << QStringLiteral("cgroup v2: ") + why;
        }
    }
    // v1: a child of kwb's cgroup in the memory hierarchy (v1 lets a cgroup hold both).
    if (const Mount mount = findMount(mountInfo, false); !mount.point.isEmpty()) {
        const QString path = ownPath(selfCgroup, false);
        const QString own = folderOf(mount, path.isEmpty() ? QStringLiteral("/") : path);
        QString why;
        if (canMake(own, "memory.limit_in_bytes", &why))
            return {MemoryCgroupSupport::Kind::V1, own, QStringLiteral("cgroup v1 memory, in %1").arg(own)};
        whyNot << QStringLiteral("cgroup v1: ") + why;
    }
    support.why =
        whyNot.isEmpty() ? QStringLiteral("no memory cgroup hierarchy is mounted") : whyNot.join(QLatin1String("; "));
    return support;
}

const MemoryCgroupSupport& memoryCgroupSupport()
{
    static const MemoryCgroupSupport support = probeMemoryCgroups(
        readSmallFile(QStringLiteral("/proc/self/cgroup")), readSmallFile(QStringLiteral("/proc/self/mountinfo")));
    return support;
}

QString memoryCgroupStatus()
{
    const MemoryCgroupSupport& support = memoryCgroupSupport();
    return support.available() ? support.why : QStringLiteral("none: ") + support.why;
}

void readMemoryEventCounts(const QByteArray& text, MemoryCgroupEnding* ending)
{
    ending->oomKills = counter(text, "oom_kill");
    ending->hitLimit = ending->hitLimit || counter(text, "oom") > 0;
}

WorkerMemoryCgroup::WorkerMemoryCgroup(MemoryCgroupSupport::Kind kind, QString path, qint64 limit)
    : m_kind(kind)
    , m_path(std::move(path))
    , m_procsFile(QFile::encodeName(m_path + QLatin1String("/cgroup.procs")))
    , m_limit(limit)
{}

std::unique_ptr<WorkerMemoryCgroup> WorkerMemoryCgroup::create(const MemoryCgroupSupport& support, qint64 limitBytes,
                                                               QString* error)
{
    auto fail = [error](const QString& why) {
        if (error)
            *error = why;
        return std::unique_ptr<WorkerMemoryCgroup>();
    };
    if (!support.available() || limitBytes <= 0)
        return fail(support.why);
    const QString path = support.parent + QLatin1Char('/') + nextName();
    if (!QDir().mkdir(path))
        return fail(QStringLiteral("cannot make %1 (%2)").arg(path, QString::fromLocal8Bit(strerror(errno))));
    std::unique_ptr<WorkerMemoryCgroup> cgroup(new WorkerMemoryCgroup(support.kind, path, limitBytes));
    const QByteArray limit = QByteArray::number(limitBytes);
    bool ok;
    if (support.kind == MemoryCgroupSupport::Kind::V2) {
        ok = writeSmallFile(path + QLatin1String("/memory.max"), limit);
        // Past the limit is an OOM kill, not swapping (which the /proc poll would not see), and
        // the kill takes every process of the worker at once.
        if (QFileInfo::exists(path + QLatin1String("/memory.swap.max")))
            writeSmallFile(path + QLatin1String("/memory.swap.max"), "0");
        writeSmallFile(path + QLatin1String("/memory.oom.group"), "1");
    } else {
        ok = writeSmallFile(path + QLatin1String("/memory.limit_in_bytes"), limit);
        if (QFileInfo::exists(path + QLatin1String("/memory.memsw.limit_in_bytes")))
            writeSmallFile(path + QLatin1String("/memory.memsw.limit_in_bytes"), limit);
    }
    if (!ok)
        return fail(QStringLiteral("cannot set the memory limit of %1").arg(path));
    return cgroup;
}

WorkerMemoryCgroup::~WorkerMemoryCgroup()
{
    // Empty once the worker's processes are gone (the PID namespace ends with the worker); a
    // process still there keeps the folder, so it is ended first where the kernel can.
    if (m_kind == MemoryCgroupSupport::Kind::V2)
        writeSmallFile(m_path + QLatin1String("/cgroup.kill"), "1");
    for (int attempt = 0; attempt < 20 && !QDir().rmdir(m_path) && QFileInfo::exists(m_path); ++attempt)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

std::function<void()> WorkerMemoryCgroup::joinFromChild() const
{
    const QByteArray file = m_procsFile;
    return [file] {
        // Between fork and exec: open, write, close only.
        const int fd = ::open(file.constData(), O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return;
        char digits[24];
        int n = 0;
        for (pid_t pid = ::getpid(); pid > 0 && n < int(sizeof digits); pid /= 10)
            digits[n++] = char('0' + pid % 10);
        char text[24];
        for (int i = 0; i < n; ++i)
            text[i] = digits[n - 1 - i];
        (void)!::write(fd, text, size_t(n));
        ::close(fd);
    };
}

MemoryCgroupEnding WorkerMemoryCgroup::ending() const
{
    MemoryCgroupEnding ending;
    if (m_kind == MemoryCgroupSupport::Kind::V2) {
        const QByteArray events = readSmallFile(m_path + QLatin1String("/memory.events"));
        ending.read = !events.isEmpty();
        readMemoryEventCounts(events, &ending);
        ending.peakBytes = readSmallFile(m_path + QLatin1String("/memory.peak")).trimmed().toLongLong();
        ending.hitLimit = ending.hitLimit || ending.peakBytes >= m_limit;
        ending.evidence =
            QStringLiteral("memory.events: oom %1, oom_kill %2").arg(counter(events, "oom")).arg(ending.oomKills);
    } else {
        const QByteArray control = readSmallFile(m_path + QLatin1String("/memory.oom_control"));
        // The limit reached counts in failcnt, or in memsw.failcnt where memory+swap is limited too
        // (then that limit is the one met first).
        const qint64 failures = readSmallFile(m_path + QLatin1String("/memory.failcnt")).trimmed().toLongLong() +
                                readSmallFile(m_path + QLatin1String("/memory.memsw.failcnt")).trimmed().toLongLong();
        ending.read = !control.isEmpty();
        readMemoryEventCounts(control, &ending);
        // v1 counts no memcg OOM apart: the limit was reached (a failed charge, or the peak usage
        // at the limit: some kernels count no failcnt where memory+swap is limited too) and a
        // process was killed.
        ending.peakBytes =
            std::max(readSmallFile(m_path + QLatin1String("/memory.max_usage_in_bytes")).trimmed().toLongLong(),
                     readSmallFile(m_path + QLatin1String("/memory.memsw.max_usage_in_bytes")).trimmed().toLongLong());
        ending.hitLimit = failures > 0 || ending.peakBytes >= m_limit;
        ending.evidence =
            QStringLiteral("memory(+memsw).failcnt %1, max_usage_in_bytes %2 of %3, memory.oom_control oom_kill %4")
                .arg(failures)
                .arg(ending.peakBytes)
                .arg(m_limit)
                .arg(ending.oomKills);
    }
    return ending;
}

} // namespace kwb
