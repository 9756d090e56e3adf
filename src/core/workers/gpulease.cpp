#include "core/workers/gpulease.h"

#include <QDateTime>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QtGlobal>

#include <algorithm>
#include <memory>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kwb {

namespace {

const QString kVisibleDevices = QStringLiteral("CUDA_VISIBLE_DEVICES");

struct DriverGpu
{
    QString busId;
    QString uuid;
    QString model;
};

// /proc/driver/nvidia/gpus/<bus id>/information: "Model: …", "GPU UUID: GPU-…", one per line.
QList<DriverGpu> driverGpus(const QString& driverDir)
{
    QList<DriverGpu> gpus;
    const QDir dir(driverDir);
    for (const QString& busId : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        QFile file(dir.filePath(busId + QStringLiteral("/information")));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        DriverGpu gpu;
        gpu.busId = busId.toLower();
        for (const QByteArray& raw : file.readAll().split('\n')) {
            const QString line = QString::fromUtf8(raw);
            const qsizetype colon = line.indexOf(QLatin1Char(':'));
            if (colon < 0)
                continue;
            const QString name = line.left(colon).trimmed();
            const QString value = line.mid(colon + 1).trimmed();
            if (name == QLatin1String("GPU UUID"))
                gpu.uuid = value;
            else if (name == QLatin1String("Model"))
                gpu.model = value;
        }
        if (gpu.uuid.startsWith(QLatin1String("GPU-")))
            gpus.append(gpu);
    }
    std::sort(gpus.begin(), gpus.end(), [](const DriverGpu& a, const DriverGpu& b) { return a.busId < b.busId; });
    return gpus;
}

// <lockDirectory()>/<key><suffix>: "ssh:host:1" and the like made one file name.
QString lockFilePath(const QString& key, const QString& suffix)
{
    QString name = key;
    name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]")), QStringLiteral("_"));
    return QDir(GpuLeases::lockDirectory()).filePath(name + suffix);
}

} // namespace

QString cudaVisibleDeviceEntry(int ordinal, const QProcessEnvironment& environment)
{
    if (environment.contains(kVisibleDevices)) {
        const QStringList entries = environment.value(kVisibleDevices).split(QLatin1Char(','), Qt::SkipEmptyParts);
        if (ordinal >= 0 && ordinal < entries.size())
            return entries.at(ordinal).trimmed();
    }
    return QString::number(ordinal);
}

GpuIdentity identifyGpu(int ordinal, const QProcessEnvironment& environment, const QString& driverDir)
{
    const QString entry = cudaVisibleDeviceEntry(ordinal, environment);
    if (entry.startsWith(QLatin1String("GPU-")) || entry.startsWith(QLatin1String("MIG-")))
        return {entry, QString()};
    bool isIndex = false;
    const int index = entry.toInt(&isIndex);
    if (!isIndex || index < 0)
        return {QStringLiteral("gpu%1").arg(ordinal),
                QStringLiteral("CUDA_VISIBLE_DEVICES entry '%1' is neither an index nor a UUID").arg(entry)};
    const QString byIndex = QStringLiteral("gpu%1").arg(index);
    const QList<DriverGpu> gpus = driverGpus(driverDir);
    if (gpus.isEmpty())
        return {byIndex, QStringLiteral("no GPU information in %1 (no NVIDIA driver here)").arg(driverDir)};
    if (index >= gpus.size())
        return {byIndex, QStringLiteral("%1 lists %2 GPU(s), not GPU %3").arg(driverDir).arg(gpus.size()).arg(index)};
    bool oneModel = true;
    for (const DriverGpu& gpu : gpus)
        oneModel = oneModel && gpu.model == gpus.first().model;
    if (!oneModel && environment.value(QStringLiteral("CUDA_DEVICE_ORDER")) != QLatin1String("PCI_BUS_ID"))
        return {byIndex, QStringLiteral("the GPUs differ in model and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's "
                                        "order is not known without CUDA")};
    return {gpus.at(index).uuid, QString()};
}

QString remoteGpuKey(const QString& kind, const QString& host, int gpu)
{
    return QStringLiteral("%1:%2:%3").arg(kind, host).arg(gpu);
}

QString workerGpuKey(const QProcessEnvironment& environment, const QString& driverDir)
{
    if (environment.contains(kVisibleDevices) &&
        environment.value(kVisibleDevices).split(QLatin1Char(','), Qt::SkipEmptyParts).isEmpty())
        return {}; // set and empty: CUDA sees no device at all
    return identifyGpu(0, environment, driverDir).key;
}

GpuLeases* GpuLeases::instance()
{
    // Never destroyed: queues may give leases back while the application tears down.
    static GpuLeases* leases = new GpuLeases();
    return leases;
}

GpuLeases::GpuLeases(QObject* parent)
    : QObject(parent)
{
    m_retry.setSingleShot(true);
    m_retry.setInterval(kRetryMs);
    connect(&m_retry, &QTimer::timeout, this, &GpuLeases::grantWaiting);
}

GpuLeases::~GpuLeases()
{
    for (Gpu& gpu : m_gpus)
        dropLock(gpu);
}

QString GpuLeases::lockDirectory()
{
    if (const QString dir = qEnvironmentVariable("KWB_GPU_LOCK_DIR"); !dir.isEmpty())
        return dir;
    if (const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR"); !runtime.isEmpty())
        return QDir(runtime).filePath(QStringLiteral("kwb-gpu"));
    return QStringLiteral("/tmp/kwb-gpu-%1").arg(::getuid());
}

QString GpuLeases::logPath()
{
    if (const QString path = qEnvironmentVariable("KWB_GPU_LEASE_LOG"); !path.isEmpty())
        return path;
    return QDir(lockDirectory()).filePath(QStringLiteral("leases.log"));
}

QString GpuLeases::quietLockPath(const QString& key)
{
    return lockFilePath(key, QStringLiteral(".quiet"));
}

QString GpuLeases::quietIntentPath(const QString& quietLock)
{
    return quietLock + QStringLiteral(".intent");
}

QString GpuLeases::quietTurnPath(const QString& quietLock)
{
    return quietLock + QStringLiteral(".turn");
}

QString GpuLeases::ensureQuietLock(const QString& key)
{
    const QString path = quietLockPath(key);
    QDir().mkpath(QFileInfo(path).absolutePath());
    // Never truncated or written: they only carry flocks, which other processes may hold now. The
    // intent file is the lock's writers-first gate, the turn file the evaluations' turn
    // (src/worker/measure/gpuquietlock.h); without them the lock still works, readers first, and two
    // evaluations on one GPU overlap anywhere outside their timings.
    for (const QString& file : {path, quietIntentPath(path), quietTurnPath(path)}) {
        const int fd = ::open(QFile::encodeName(file).constData(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            if (file == path)
                return {};
            continue;
        }
        ::close(fd);
    }
    return path;
}

QString GpuLeases::keyFor(int gpu)
{
    return identifyGpu(gpu, QProcessEnvironment::systemEnvironment()).key;
}

qint64 GpuLeases::requestKey(const QString& key, int gpu, const QString& holder)
{
    const Ticket t{++m_next, key, gpu, holder};
    m_gpus[key].waiting.append(t);
    log("wait", t);
    schedule();
    return t.id;
}

qint64 GpuLeases::tryAcquireKey(const QString& key, int gpu, const QString& holder)
{
    Gpu& state = m_gpus[key];
    if (state.holder != 0 || !state.waiting.isEmpty() || !takeLock(key, state))
        return 0;
    const Ticket t{++m_next, key, gpu, holder};
    state.holder = t.id;
    m_held.insert(t.id, t);
    log("grant", t);
    Q_EMIT heldChanged(gpu, true);
    return t.id;
}

qint64 GpuLeases::acquireKey(const QString& key, int gpu, const QString& holder)
{
    if (const qint64 ticket = tryAcquireKey(key, gpu, holder))
        return ticket;
    const qint64 ticket = requestKey(key, gpu, holder);
    QEventLoop loop;
    const QMetaObject::Connection connection = connect(this, &GpuLeases::granted, &loop, [&loop, ticket](qint64 t) {
        if (t == ticket)
            loop.quit();
    });
    loop.exec();
    disconnect(connection);
    return ticket;
}

void GpuLeases::whenHeldKey(const QString& key, int gpu, const QString& holder, QObject* context,
                            std::function<void(qint64)> work)
{
    if (const qint64 ticket = tryAcquireKey(key, gpu, holder))
        return work(ticket);
    const qint64 ticket = requestKey(key, gpu, holder);
    auto connection = std::make_shared<QMetaObject::Connection>();
    *connection = connect(this, &GpuLeases::granted, context, [connection, ticket, work](qint64 t) {
        if (t != ticket)
            return;
        QObject::disconnect(*connection);
        work(ticket);
    });
    // A context that goes before the grant withdraws its request; a held one is the job's to give back.
    connect(context, &QObject::destroyed, this, [this, ticket] {
        if (!isGranted(ticket))
            release(ticket);
    });
}

std::shared_ptr<const void> GpuLeases::guard(qint64 ticket)
{
    return std::shared_ptr<const void>(nullptr, [ticket](const void*) { instance()->release(ticket); });
}

void GpuLeases::release(qint64 ticket)
{
    const auto held = m_held.find(ticket);
    if (held != m_held.end()) {
        const Ticket t = *held;
        m_held.erase(held);
        Gpu& gpu = m_gpus[t.key];
        gpu.holder = 0;
        dropLock(gpu);
        log("release", t);
        Q_EMIT heldChanged(t.gpu, false);
        schedule();
        return;
    }
    for (Gpu& gpu : m_gpus)
        gpu.waiting.removeIf([ticket](const Ticket& t) { return t.id == ticket; });
}

bool GpuLeases::isHeldKey(const QString& key) const
{
    const auto it = m_gpus.constFind(key);
    return it != m_gpus.cend() && it->holder != 0;
}

bool GpuLeases::isGranted(qint64 ticket) const
{
    return m_held.contains(ticket);
}

bool GpuLeases::isWanted(qint64 ticket) const
{
    const auto held = m_held.constFind(ticket);
    if (held == m_held.cend())
        return false;
    const auto gpu = m_gpus.constFind(held->key);
    return gpu != m_gpus.cend() && !gpu->waiting.isEmpty();
}

void GpuLeases::schedule()
{
    // Grants come from the event loop, so a holder never sees its grant inside its own call.
    if (m_scheduled)
        return;
    m_scheduled = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            m_scheduled = false;
            grantWaiting();
        },
        Qt::QueuedConnection);
}

void GpuLeases::grantWaiting()
{
    bool retry = false;
    QList<Ticket> grants;
    for (auto it = m_gpus.begin(); it != m_gpus.end(); ++it) {
        Gpu& gpu = it.value();
        if (gpu.holder != 0 || gpu.waiting.isEmpty())
            continue;
        if (!takeLock(it.key(), gpu)) {
            retry = true; // another process has it
            continue;
        }
        const Ticket t = gpu.waiting.takeFirst();
        gpu.holder = t.id;
        m_held.insert(t.id, t);
        log("grant", t);
        grants.append(t);
    }
    if (retry && !m_retry.isActive())
        m_retry.start();
    for (const Ticket& t : std::as_const(grants)) {
        Q_EMIT heldChanged(t.gpu, true);
        Q_EMIT granted(t.id, t.gpu);
    }
}

bool GpuLeases::takeLock(const QString& key, Gpu& state)
{
    if (state.lockFd >= 0)
        return true;
    QDir().mkpath(lockDirectory());
    const QByteArray path = QFile::encodeName(lockFilePath(key, QStringLiteral(".lock")));
    const int fd = ::open(path.constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return true; // no lock directory to share: the in-process lease still holds
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        return false;
    }
    state.lockFd = fd;
    return true;
}

void GpuLeases::dropLock(Gpu& state)
{
    if (state.lockFd < 0)
        return;
    ::flock(state.lockFd, LOCK_UN);
    ::close(state.lockFd);
    state.lockFd = -1;
}

void GpuLeases::log(const char* event, const Ticket& ticket)
{
    const QString path = logPath();
    QDir().mkpath(QFileInfo(path).absolutePath());
    const QByteArray line = QJsonDocument(QJsonObject{{QStringLiteral("ms"), QDateTime::currentMSecsSinceEpoch()},
                                                      {QStringLiteral("event"), QLatin1String(event)},
                                                      {QStringLiteral("gpu"), ticket.gpu},
                                                      {QStringLiteral("key"), ticket.key},
                                                      {QStringLiteral("holder"), ticket.holder},
                                                      {QStringLiteral("pid"), qint64(::getpid())}})
                                .toJson(QJsonDocument::Compact) +
                            '\n';
    const int fd = ::open(QFile::encodeName(path).constData(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    const ssize_t written = ::write(fd, line.constData(), size_t(line.size()));
    Q_UNUSED(written);
    ::close(fd);
}

} // namespace kwb
