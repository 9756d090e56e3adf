#include "core/workers/gpulease.h"

#include <QDateTime>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtGlobal>

#include <memory>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kwb {

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

qint64 GpuLeases::request(int gpu, const QString& holder)
{
    const qint64 id = ++m_next;
    m_gpus[gpu].waiting.append(Ticket{id, gpu, holder});
    log("wait", gpu, holder);
    schedule();
    return id;
}

qint64 GpuLeases::tryAcquire(int gpu, const QString& holder)
{
    Gpu& state = m_gpus[gpu];
    if (state.holder != 0 || !state.waiting.isEmpty() || !takeLock(gpu, state))
        return 0;
    const Ticket t{++m_next, gpu, holder};
    state.holder = t.id;
    m_held.insert(t.id, t);
    log("grant", gpu, holder);
    Q_EMIT heldChanged(gpu, true);
    return t.id;
}

qint64 GpuLeases::acquire(int gpu, const QString& holder)
{
    if (const qint64 ticket = tryAcquire(gpu, holder))
        return ticket;
    const qint64 ticket = request(gpu, holder);
    QEventLoop loop;
    const QMetaObject::Connection connection = connect(this, &GpuLeases::granted, &loop, [&loop, ticket](qint64 t) {
        if (t == ticket)
            loop.quit();
    });
    loop.exec();
    disconnect(connection);
    return ticket;
}

void GpuLeases::whenHeld(int gpu, const QString& holder, QObject* context, std::function<void(qint64)> work)
{
    if (const qint64 ticket = tryAcquire(gpu, holder))
        return work(ticket);
    const qint64 ticket = request(gpu, holder);
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
        Gpu& gpu = m_gpus[t.gpu];
        gpu.holder = 0;
        dropLock(gpu);
        log("release", t.gpu, t.holder);
        Q_EMIT heldChanged(t.gpu, false);
        schedule();
        return;
    }
    for (Gpu& gpu : m_gpus)
        gpu.waiting.removeIf([ticket](const Ticket& t) { return t.id == ticket; });
}

bool GpuLeases::isHeld(int gpu) const
{
    const auto it = m_gpus.constFind(gpu);
    return it != m_gpus.cend() && it->holder != 0;
}

bool GpuLeases::isGranted(qint64 ticket) const
{
    return m_held.contains(ticket);
}

void GpuLeases::schedule()
{
    // Grants come from the event loop, so a holder never sees its grant inside its own call.
    if (m_scheduled)
        return;
    m_scheduled = true;
    QMetaObject::invokeMethod(this, [this] {
        m_scheduled = false;
        grantWaiting();
    }, Qt::QueuedConnection);
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
        log("grant", t.gpu, t.holder);
        grants.append(t);
    }
    if (retry && !m_retry.isActive())
        m_retry.start();
    for (const Ticket& t : std::as_const(grants)) {
        Q_EMIT heldChanged(t.gpu, true);
        Q_EMIT granted(t.id, t.gpu);
    }
}

bool GpuLeases::takeLock(int gpu, Gpu& state)
{
    if (state.lockFd >= 0)
        return true;
    const QString dir = lockDirectory();
    QDir().mkpath(dir);
    const QByteArray path = QFile::encodeName(QDir(dir).filePath(QStringLiteral("gpu%1.lock").arg(gpu)));
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

void GpuLeases::log(const char* event, int gpu, const QString& holder)
{
    const QString path = logPath();
    QDir().mkpath(QFileInfo(path).absolutePath());
    const QByteArray line = QJsonDocument(QJsonObject{{QStringLiteral("ms"), QDateTime::currentMSecsSinceEpoch()},
                                                      {QStringLiteral("event"), QLatin1String(event)},
                                                      {QStringLiteral("gpu"), gpu},
                                                      {QStringLiteral("holder"), holder},
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
