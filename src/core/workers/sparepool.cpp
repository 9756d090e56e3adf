#include "core/workers/sparepool.h"

#include "core/protocol/workerrequests.h"

#include <QJsonValue>
#include <QThread>

#include <csignal>
#include <utility>

namespace kwb {

std::optional<HelloInfo> helloAfterWarm(const HelloInfo& hello, const QJsonObject& answer, const QString& warmId)
{
    const ResponseHeader header = decodeHeader(answer);
    if (header.id != QJsonValue(warmId))
        return std::nullopt;
    if (!header.ok)
        return header.errorCode == QLatin1String("unknown_type") ? std::optional<HelloInfo>(hello) : std::nullopt;
    if (responseType(answer) != ResponseType::Warm)
        return std::nullopt;
    HelloInfo warmed = hello;
    const WarmInfo warm = decodeWarm(answer);
    if (warm.alreadyWarm && hello.warmMs && warm.ms) {
        // A second warm (the Python's, asked for after the first): the first's timings stay, with
        // the Python's added.
        QMap<QString, double> merged = *hello.warmMs;
        if (const auto python = warm.ms->constFind(QStringLiteral("python")); python != warm.ms->cend())
            merged.insert(python.key(), python.value());
        warmed.warmMs = merged;
    } else if (warm.ms) {
        warmed.warmMs = warm.ms;
    }
    return warmed;
}

SparePool::SparePool(const WorkerLaunchSettings* launch, QObject* processParent, std::function<bool()> idle)
    : m_launch(launch)
    , m_processParent(processParent)
    , m_idle(std::move(idle))
{
    m_warmIdleTimer.setSingleShot(true);
    connect(&m_warmIdleTimer, &QTimer::timeout, this, &SparePool::warmIdleSpare);
}

SparePool::~SparePool()
{
    endAll(2000);
}

void SparePool::endAll(int waitMs)
{
    const QList<SpareWorker> spares = std::exchange(m_spares, {});
    for (const SpareWorker& spare : spares) {
        // It holds no request: no need to ask nicely.
        spare.process->disconnect(this);
        signalWorker(spare.process, SIGKILL);
    }
    for (const SpareWorker& spare : spares) {
        spare.process->waitForFinished(waitMs);
        delete spare.process;
    }
}

void SparePool::setEnabled(bool enabled)
{
    m_enabled = enabled;
    trim();
}

void SparePool::setFreshWorkers(bool fresh)
{
    m_freshWorkers = fresh;
    trim();
}

void SparePool::setRetiringWorkers(bool retiring)
{
    m_retiringWorkers = retiring;
    trim();
}

void SparePool::setRetiringCount(int count)
{
    m_retiringCount = std::max(0, count);
    trim();
}

bool SparePool::wanted() const
{
    // Reuse mode keeps its worker, so a spare would only sit there holding memory, until a worker
    // it kept retires (setRetiringWorkers).
    return m_enabled && m_count > 0 && (m_freshWorkers || m_retiringWorkers) && !m_launch->program.isEmpty();
}

void SparePool::setCount(int count)
{
    m_count = std::max(0, count);
    trim();
}

void SparePool::trim()
{
    if (!wanted())
        discardAll();
    // The youngest are the furthest behind (they started last).
    while (m_spares.size() > keptCount())
        discard(m_spares.last().process);
}

void SparePool::setWarmPython(bool enabled)
{
    const bool turnedOn = enabled && !m_warmPython;
    m_warmPython = enabled;
    // The spares started before the first KernelBench-format job (a run's first answers, while
    // its builds take 20-40 s) would otherwise each make an evaluation wait for torch's import:
    // 5-12 s apiece on a busy machine (session 47's cold runs, four at each run's start).
    if (!turnedOn || m_launch->target.isRemote())
        return;
    if (m_warmWhileBusy)
        warmIdleSpare();
    else
        armIdleWarm();
}

bool SparePool::warmDue(const SpareWorker& spare) const
{
    if (!spare.warmAnswered)
        return true;
    return m_warmPython && spare.knowsWarm && !spare.warmSentPython;
}

void SparePool::setWarm(bool enabled)
{
    if (enabled != m_warm)
        discardAll(); // warmed, or about to be, the other way
    m_warm = enabled;
}

bool SparePool::startsAtOnce() const
{
    // A spare's start is libtorch's load and static initialisers on one core; the evaluation
    // running meanwhile and the compile-ahead want theirs.
    return m_startsAtOnce.value_or(QThread::idealThreadCount() >= m_count + 2);
}

QString SparePool::nextId(const QString& prefix)
{
    return QStringLiteral("%1-%2").arg(prefix).arg(++m_idCount);
}

void SparePool::expect()
{
    // H200: in a back-to-back queue the second to fourth jobs waited 0.2-0.4 s each for a spare
    // that had started only when the first job was written to its worker.
    if (m_spares.isEmpty())
        topUp();
}

void SparePool::topUp()
{
    // One at a time: the next one starts at the next top-up (when an evaluation is written, when
    // a spare becomes ready); every missing one where startsAtOnce().
    const bool atOnce = startsAtOnce();
    do {
        if (!wanted() || m_spares.size() >= keptCount())
            return;
        startOne();
    } while (atOnce);
}

void SparePool::startOne()
{
    QProcess* process = createWorkerProcess(*m_launch, m_processParent);
    SpareWorker spare;
    spare.process = process;
    spare.state = WorkerState::Starting;
    m_spares.append(spare);
    connect(process, &QProcess::started, this, [this, process] { onStarted(process); });
    connect(process, &QProcess::readyReadStandardOutput, this, [this, process] { onOutput(process); });
    // Nobody owns a spare's stderr (a loader warning, libtorch's banner); it is read so that the
    // pipe never fills up, and dropped.
    connect(process, &QProcess::readyReadStandardError, this, [process] { process->readAllStandardError(); });
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart && spareOf(process))
            discard(process); // the next request tries a cold start and reports why it fails
    });
    connect(process, &QProcess::finished, this, [this, process] { onFinished(process); });
    process->start(QIODevice::ReadWrite);
}

SpareWorker* SparePool::spareOf(const QProcess* process)
{
    for (SpareWorker& spare : m_spares)
        if (spare.process == process)
            return &spare;
    return nullptr;
}

int SparePool::nextIndex() const
{
    // Warmed first, then ready unwarmed: it starts at once and pays its own cuda_init, about what
    // a warming spare's remaining warm costs, and that one stays warming for the next request.
    // Else the one that will be ready soonest, whose wait the request then shares.
    const auto rank = [](const SpareWorker& spare) {
        if (spare.warmed())
            return 5;
        switch (spare.state) {
        case WorkerState::Idle: return 4;
        case WorkerState::Warming: return 3;
        case WorkerState::Handshaking: return 2;
        case WorkerState::Starting: return 1;
        default: return 0;
        }
    };
    int best = -1;
    for (int i = 0; i < int(m_spares.size()); ++i)
        if (best < 0 || rank(m_spares.at(i)) > rank(m_spares.at(best)))
            best = i; // strictly greater: the oldest of a rank wins
    return best;
}

const SpareWorker* SparePool::next() const
{
    const int index = nextIndex();
    return index < 0 ? nullptr : &m_spares.at(index);
}

SpareWorker SparePool::takeNext()
{
    // The others stay, for the requests after this one.
    SpareWorker spare = m_spares.takeAt(nextIndex());
    spare.process->disconnect(this);
    return spare;
}

QList<qint64> SparePool::pids() const
{
    QList<qint64> pids;
    for (const SpareWorker& spare : m_spares)
        pids.append(spare.pid);
    return pids;
}

void SparePool::discard(QProcess* process)
{
    if (m_spares.removeIf([process](const SpareWorker& spare) { return spare.process == process; }) > 0)
        dropWorker(process, this);
}

void SparePool::discardAll()
{
    const QList<SpareWorker> spares = std::exchange(m_spares, {});
    for (const SpareWorker& spare : spares)
        dropWorker(spare.process, this);
}

void SparePool::armIdleWarm()
{
    if (m_idle() && m_warm && wanted() && !m_launch->target.isRemote())
        m_warmIdleTimer.start(m_warmIdleMs);
}

void SparePool::warmIdleSpare()
{
    if ((!m_idle() && !m_warmWhileBusy) || !m_warm)
        return;
    // Idle: one at a time, the next one when this one answers. Warming while busy: every ready
    // spare at once, since each must be warm by the time the running candidate ends; their parts
    // share the lock with one another.
    if (!m_warmWhileBusy)
        for (const SpareWorker& spare : std::as_const(m_spares))
            if (spare.state == WorkerState::Warming)
                return;
    for (SpareWorker& spare : m_spares) {
        if (spare.state == WorkerState::Idle && warmDue(spare) && warmWanted(spare.hello)) {
            spare.state = WorkerState::Warming;
            spare.warmId = sendWarm(spare);
            if (!m_warmWhileBusy)
                return;
        }
    }
}

bool SparePool::warmWanted(const HelloInfo& hello) const
{
    // Without the lock its warm-up would not wait for another process's timing. An older worker
    // says nothing of the lock and answers warm with unknown_type.
    const bool saysNoLock = hello.quietLockAnnounced && hello.quietLock.isEmpty();
    return m_warm && !m_launch->target.isRemote() && !saysNoLock;
}

QString SparePool::sendWarm(SpareWorker& spare)
{
    const QString id = nextId(QStringLiteral("kwb-warm"));
    QJsonObject request = WorkerRequests::warm(m_warmPython);
    request.insert(QLatin1String("id"), id);
    spare.warmSentPython = m_warmPython;
    spare.process->write(ProtocolCodec::encodeRequest(request));
    return id;
}

void SparePool::onStarted(QProcess* process)
{
    SpareWorker* spare = spareOf(process);
    if (!spare || spare->state != WorkerState::Starting)
        return;
    spare->pid = process->processId();
    spare->state = WorkerState::Handshaking;
    spare->handshakeId = nextId(QStringLiteral("kwb-hello"));
    // hello creates no CUDA context; a warm, sent once the supervisor idles (warmIdleSpare), does,
    // under the GPU's quiet lock, so never while anything on that GPU is timed.
    QJsonObject hello = WorkerRequests::hello();
    hello.insert(QLatin1String("id"), spare->handshakeId);
    process->write(ProtocolCodec::encodeRequest(hello));
}

void SparePool::onOutput(QProcess* process)
{
    SpareWorker* spare = spareOf(process);
    if (!spare)
        return;
    spare->decoder.feed(process->readAllStandardOutput());
    const WorkerState before = spare->state;
    // Its hello answer, then its warm answer, are all a spare may say; anything else and it is not
    // trusted to take over.
    for (const QJsonObject& response : spare->decoder.takeResponses()) {
        if (!takeAnswer(*spare, response)) {
            discard(process);
            return;
        }
    }
    if (spare->decoder.hasFailed()) {
        discard(process);
        return;
    }
    const bool helloAnswered = before == WorkerState::Handshaking && spare->state == WorkerState::Idle;
    const bool warmAnswered = before == WorkerState::Warming && spare->state == WorkerState::Idle;
    // Ready: the next spare may start now, one behind this one (setCount()). Each evaluate takes
    // one spare and starts one, so without this the spares would never grow past one.
    if (spare->state == WorkerState::Idle)
        topUp(); // may append to m_spares: `spare` is not used after this
    if (helloAnswered && m_warmWhileBusy && !m_launch->target.isRemote())
        warmIdleSpare(); // at once, busy or not (setWarmWhileBusy())
    else if (helloAnswered)
        armIdleWarm(); // idle: warmed once the supervisor has stayed idle for the settle time
    else if (warmAnswered)
        warmIdleSpare(); // still idle: the next one (the settle time has passed already)
}

bool SparePool::takeAnswer(SpareWorker& spare, const QJsonObject& response)
{
    if (spare.state == WorkerState::Handshaking) {
        if (decodeHeader(response).id != QJsonValue(spare.handshakeId) ||
            !ProtocolCodec::checkHello(response).isEmpty())
            return false;
        spare.hello = decodeHello(response);
        spare.pid = workerProcessId(spare.process); // it runs now: in the sandbox, bwrap's child
        spare.state = WorkerState::Idle;            // ready; warmed only when the supervisor idles (warmIdleSpare)
        return true;
    }
    if (spare.state == WorkerState::Warming) {
        const std::optional<HelloInfo> hello = helloAfterWarm(spare.hello, response, spare.warmId);
        if (!hello)
            return false;
        spare.knowsWarm = decodeHeader(response).ok;
        spare.hello = *hello;
        spare.state = WorkerState::Idle;
        spare.warmAnswered = true;
        return true;
    }
    return false;
}

void SparePool::onFinished(QProcess* process)
{
    if (!spareOf(process))
        return;
    // Replaced lazily: at the next top-up.
    process->disconnect(this);
    process->deleteLater(); // never inside its own signal
    m_spares.removeIf([process](const SpareWorker& spare) { return spare.process == process; });
}

} // namespace kwb
