#include "hostlimits.h"

#include "core/workers/hostlimitdefaults.h"

#include <QDir>
#include <QFile>
#include <QJsonValue>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <unistd.h>

namespace kwb {

namespace {

QByteArray readSmallFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.read(64 * 1024); // /proc files report no size: read what there is
}

// "VmRSS:	  123456 kB" -> bytes; -1 when the field is missing.
qint64 statusField(const QByteArray& status, const QByteArray& name)
{
    const qsizetype at = status.indexOf("\n" + name + ':');
    const qsizetype start = at < 0 ? (status.startsWith(name + ':') ? 0 : -1) : at + 1;
    if (start < 0)
        return -1;
    const qsizetype end = status.indexOf('\n', start);
    QByteArray value = status.mid(start + name.size() + 1, end < 0 ? -1 : end - start - name.size() - 1).trimmed();
    const bool kiloBytes = value.endsWith(" kB");
    if (kiloBytes)
        value.chop(3);
    bool ok = false;
    const qint64 number = value.trimmed().toLongLong(&ok);
    if (!ok)
        return -1;
    return kiloBytes ? number * 1024 : number;
}

qint64 cgroupMemoryMax()
{
    // cgroup v2: "0::/some/path"; the limit that applies is the lowest on the way to the root.
    const QList<QByteArray> lines = readSmallFile(QStringLiteral("/proc/self/cgroup")).split('\n');
    for (const QByteArray& line : lines) {
        if (!line.startsWith("0::"))
            continue;
        QString path = QString::fromUtf8(line.mid(3)).trimmed();
        qint64 lowest = 0;
        for (;;) {
            const QByteArray value =
                readSmallFile(QStringLiteral("/sys/fs/cgroup") + path + QStringLiteral("/memory.max")).trimmed();
            bool ok = false;
            const qint64 bytes = value.toLongLong(&ok);
            if (ok && bytes > 0 && (lowest == 0 || bytes < lowest))
                lowest = bytes;
            if (path.isEmpty() || path == QLatin1String("/"))
                break;
            path = path.left(std::max<qsizetype>(0, path.lastIndexOf(QLatin1Char('/'))));
        }
        return lowest;
    }
    return 0;
}

} // namespace

qint64 machineMemoryBytes()
{
    const qint64 total = statusField(readSmallFile(QStringLiteral("/proc/meminfo")), "MemTotal");
    const qint64 cgroup = cgroupMemoryMax();
    if (total <= 0)
        return cgroup;
    return cgroup > 0 ? std::min(total, cgroup) : total;
}

qint64 defaultHostMemoryLimitFor(qint64 totalBytes)
{
    return defaultHostMemoryLimitForTotal(totalBytes);
}

qint64 defaultHostMemoryLimit()
{
    static const qint64 limit = defaultHostMemoryLimitFor(machineMemoryBytes());
    return limit;
}

int defaultHostThreadLimit()
{
    return defaultHostThreadLimitForCpus(int(std::thread::hardware_concurrency()));
}

std::optional<qint64> parseByteSize(const QString& text, QString* error)
{
    static const QRegularExpression re(QStringLiteral("^\\s*([0-9]+(?:\\.[0-9]+)?)\\s*([KMGT]?)(?:I?B)?\\s*$"),
                                       QRegularExpression::CaseInsensitiveOption);
    const QRegularExpressionMatch match = re.match(text);
    const auto fail = [&](const QString& why) -> std::optional<qint64> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    if (!match.hasMatch())
        return fail(QStringLiteral("\"%1\" is not a size (a number with K, M, G or T, e.g. 8G or 512M)").arg(text));
    const double number = match.captured(1).toDouble();
    const QString unit = match.captured(2).toUpper();
    const int shift = unit.isEmpty()               ? 0
                      : unit == QLatin1String("K") ? 10
                      : unit == QLatin1String("M") ? 20
                      : unit == QLatin1String("G") ? 30
                                                   : 40;
    const double bytes = std::ldexp(number, shift);
    if (!(bytes >= 1.0))
        return fail(QStringLiteral("\"%1\": the size must be more than zero").arg(text));
    if (bytes > double(std::numeric_limits<qint64>::max() / 2))
        return fail(QStringLiteral("\"%1\" is too large").arg(text));
    return qint64(std::llround(bytes));
}

QString formatBytes(qint64 bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = double(bytes);
    int unit = 0;
    while (std::abs(value) >= 1024.0 && unit < 5) {
        value /= 1024.0;
        ++unit;
    }
    if (unit == 0)
        return QStringLiteral("%1 B").arg(bytes);
    // Three significant digits: "16.1 GiB", "4 GiB", "512 MiB" (never "1e+03").
    return (value >= 100 ? QString::number(value, 'f', 0) : QString::number(value, 'g', 3)) + QLatin1Char(' ') +
           QLatin1String(units[unit]);
}

QJsonObject WorkerLimits::toJson() const
{
    return QJsonObject{{QStringLiteral("host_memory_bytes"), double(effectiveHostMemory())},
                       {QStringLiteral("host_memory_default"), hostMemoryBytes <= 0},
                       {QStringLiteral("host_threads"), effectiveHostThreads()},
                       {QStringLiteral("host_threads_default"), hostThreads <= 0},
                       {QStringLiteral("os_sandbox"), osSandbox}};
}

WorkerLimits WorkerLimits::fromJson(const QJsonObject& object)
{
    WorkerLimits limits;
    if (!object.value(QLatin1String("host_memory_default")).toBool(true))
        limits.hostMemoryBytes = qint64(object.value(QLatin1String("host_memory_bytes")).toDouble(0));
    if (!object.value(QLatin1String("host_threads_default")).toBool(true))
        limits.hostThreads = object.value(QLatin1String("host_threads")).toInt(0);
    limits.osSandbox = object.value(QLatin1String("os_sandbox")).toBool(true);
    return limits;
}

// Without /proc/PID/task/TID/children (a kernel built without CONFIG_PROC_CHILDREN): every
// process's parent, from /proc/N/stat.
QList<qint64> childProcessesByScan(qint64 pid)
{
    QList<qint64> children;
    for (const QString& name : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool ok = false;
        const qint64 candidate = name.toLongLong(&ok);
        if (!ok)
            continue;
        const QByteArray stat = readSmallFile(QStringLiteral("/proc/%1/stat").arg(candidate));
        const qsizetype close = stat.lastIndexOf(')'); // the command may hold spaces and parentheses
        if (close < 0)
            continue;
        const QList<QByteArray> fields = stat.mid(close + 2).split(' '); // state, ppid, …
        if (fields.size() > 1 && fields.at(1).toLongLong() == pid)
            children.append(candidate);
    }
    return children;
}

QList<qint64> childProcesses(qint64 pid, bool allThreads)
{
    QList<qint64> children;
    const QString taskDir = QStringLiteral("/proc/%1/task").arg(pid);
    static const bool haveChildrenFiles = QFile::exists(QStringLiteral("/proc/self/task/%1/children").arg(::getpid()));
    if (!haveChildrenFiles)
        return childProcessesByScan(pid);
    const QStringList threads =
        allThreads ? QDir(taskDir).entryList(QDir::Dirs | QDir::NoDotAndDotDot) : QStringList{QString::number(pid)};
    for (const QString& tid : threads) {
        const QList<QByteArray> words =
            readSmallFile(taskDir + QLatin1Char('/') + tid + QStringLiteral("/children")).simplified().split(' ');
        for (const QByteArray& word : words) {
            bool ok = false;
            const qint64 child = word.toLongLong(&ok);
            if (ok && child > 0 && !children.contains(child))
                children.append(child);
        }
    }
    return children;
}

ProcessTreeUsage processTreeUsage(qint64 pid, bool allThreads)
{
    ProcessTreeUsage usage;
    if (pid <= 0)
        return usage;
    QList<qint64> queue{pid};
    // A tree of a few processes; the bound only guards against a loop through reused pids.
    for (qsizetype i = 0; i < queue.size() && i < 4096; ++i) {
        const qint64 current = queue.at(i);
        const QByteArray status = readSmallFile(QStringLiteral("/proc/%1/status").arg(current));
        if (status.isEmpty())
            continue; // ended meanwhile
        if (i == 0)
            usage.found = true;
        usage.pids.append(current);
        const qint64 rss = std::max<qint64>(0, statusField(status, "VmRSS"));
        const qint64 hwm = std::max<qint64>(0, statusField(status, "VmHWM"));
        usage.rssBytes += rss;
        usage.peakBytes += std::max(rss, hwm);
        usage.threads += int(std::max<qint64>(0, statusField(status, "Threads")));
        for (const qint64 child : childProcesses(current, allThreads))
            if (!queue.contains(child))
                queue.append(child);
    }
    return usage;
}

} // namespace kwb
