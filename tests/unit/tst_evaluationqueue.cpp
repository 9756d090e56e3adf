// EvaluationQueue against the fake worker (fakeworker.cpp): order, two jobs at once per GPU (or
// one), each GPU's worker on its own CUDA_VISIBLE_DEVICES, compile-ahead in CPU-only workers,
// time-outs and cancellation. Every fake worker appends the requests it reads to a log file, so
// the tests also see requests whose answers the queue keeps to itself (compiles, the spare's hello).

#include "core/workers/evaluationqueue.h"
#include "core/workers/gpulease.h"
#include "core/workers/supervisortuning.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <memory>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using namespace kwb;

namespace {

constexpr int kWaitMs = 15000;

/// What a probe of the GPU's processes finds: one process (pid 4242, visible, not the
/// candidate's) holding `gib` GiB.
MemoryElsewhere heldElsewhere(double gib, const QString& name)
{
    return memoryElsewhere(
        {{4242, gib * (1LL << 30), name}}, [](qint64) { return false; }, [](qint64) { return true; });
}

struct Recorder
{
    QList<qint64> started;
    QMap<qint64, qint64> startedAtMs;
    QList<qint64> ended; // in the order they ended
    QMap<qint64, QJsonObject> results;
    QMap<qint64, QString> failures; // id -> status
    QMap<qint64, QString> messages;
    QMap<qint64, qint64> endedAtMs;
    QList<QPair<int, int>> progress;
    QMap<qint64, QList<QByteArray>> stderrTails; // per job, in the order they came
    bool stderrAfterEnd = false;                 // a tail came after its job's final signal

    explicit Recorder(EvaluationQueue& queue)
    {
        QObject::connect(&queue, &EvaluationQueue::jobStarted, &context, [this](qint64 id) {
            started.append(id);
            startedAtMs.insert(id, QDateTime::currentMSecsSinceEpoch());
        });
        QObject::connect(&queue, &EvaluationQueue::jobFinished, &context,
                         [this](qint64 id, const EvaluationResult& evaluation) {
                             ended.append(id);
                             results.insert(id, evaluation.raw);
                             endedAtMs.insert(id, QDateTime::currentMSecsSinceEpoch());
                         });
        QObject::connect(&queue, &EvaluationQueue::jobFailed, &context,
                         [this](qint64 id, const QString& status, const QString& message) {
                             ended.append(id);
                             failures.insert(id, status);
                             messages.insert(id, message);
                             endedAtMs.insert(id, QDateTime::currentMSecsSinceEpoch());
                         });
        QObject::connect(&queue, &EvaluationQueue::jobProgress, &context, [this](int done, int total) {
            progress.append({done, total});
        });
        QObject::connect(&queue, &EvaluationQueue::jobStderrAvailable, &context,
                         [this](qint64 id, const QByteArray& tail, qint64) {
                             stderrTails[id].append(tail);
                             stderrAfterEnd = stderrAfterEnd || ended.contains(id);
                         });
    }
    bool waitForEnded(int count)
    {
        return QTest::qWaitFor([&] { return ended.size() >= count; }, kWaitMs);
    }
    QJsonObject echo(qint64 id) const { return results.value(id).value(QLatin1String("echo")).toObject(); }
    /// When the fake worker read the job's request and when it answered (epoch ms).
    QPair<qint64, qint64> span(qint64 id) const
    {
        const QJsonObject result = results.value(id);
        return {qint64(result.value(QLatin1String("received_ms")).toDouble()),
                qint64(result.value(QLatin1String("answered_ms")).toDouble())};
    }

    QObject context;
};

// A candidate in the real format; `prose` lands outside the blocks (fake worker markers).
QString answer(const QString& prose = QString(), const QString& kernelComment = QString())
{
    return QStringLiteral("Here it is. %1\n\n```cuda\n__global__ void k(float* y) { y[0] = 1.0f; } // %2\n```\n\n"
                          "```python\ndef forward(x):\n    return kb.launch(\"k\", x)\n```\n")
        .arg(prose, kernelComment);
}

// A KernelBench-format answer (ModelNew with load_inline); `marker` lands in a comment (fake
// worker markers: build_gate, build_barrier, compile_error).
QString kernelBenchAnswer(const QString& marker)
{
    return QStringLiteral("```python\nimport torch\nfrom torch.utils.cpp_extension import load_inline\n# %1\n"
                          "ext = load_inline(name=\"ext\", cpp_sources=\"\", cuda_sources=\"\", functions=[\"f\"])\n"
                          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n```\n")
        .arg(marker);
}

// A job's evaluate request, as the run controller builds it.
WorkerRequests::Evaluate job(const QString& task, const QString& answer)
{
    WorkerRequests::Evaluate request;
    request.task = task;
    request.answer = answer;
    return request;
}

// The same in KernelBench's answer format.
WorkerRequests::Evaluate kernelBenchJob(const QString& task, const QString& answer)
{
    WorkerRequests::Evaluate request = job(task, answer);
    request.answerFormat = QStringLiteral("kernelbench");
    return request;
}

// An answer the fake worker answers after delayMs (its markers: mode and delay_ms).
QString slowAnswerAfter(int delayMs, const QString& kernelComment = QString())
{
    return answer(QStringLiteral("fake: slow delay_ms: %1").arg(delayMs), kernelComment);
}

// A job the fake worker answers after delayMs.
qint64 submitSlow(EvaluationQueue& queue, int delayMs)
{
    return queue.submit(job(QStringLiteral("L1/1"), slowAnswerAfter(delayMs)));
}

// Whether two jobs' spans (Recorder::span) overlap, and the message when they do not.
bool overlap(const QPair<qint64, qint64>& a, const QPair<qint64, qint64>& b)
{
    return std::max(a.first, b.first) < std::min(a.second, b.second);
}
QString spans(const QPair<qint64, qint64>& a, const QPair<qint64, qint64>& b)
{
    return QStringLiteral("%1-%2 and %3-%4").arg(a.first).arg(a.second).arg(b.first).arg(b.second);
}

} // namespace

class TestEvaluationQueue : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_log;
    QString m_extensions; // the fake workers' extension cache (KernelBench-format builds)

    QProcessEnvironment fakeEnvironment() const
    {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("FAKEWORKER_LOG"), m_log);
        environment.insert(QStringLiteral("KWB_EXTENSION_CACHE"), m_extensions);
        return environment;
    }

    // The fake workers' *_once modes misbehave the first time only (fakeworker.cpp).
    void setOnceFile(EvaluationQueue& queue, const QString& name) const
    {
        const QString once = m_dir.filePath(QStringLiteral("%1-%2").arg(name, QTest::currentTestFunction()));
        QFile::remove(once);
        QProcessEnvironment environment = fakeEnvironment();
        environment.insert(QStringLiteral("FAKEWORKER_ONCE"), once);
        queue.setProcessEnvironment(environment);
    }

    int loggedEvaluates() const
    {
        int evaluates = 0;
        for (const QJsonObject& entry : logged())
            evaluates += entry.value(QLatin1String("type")).toString() == QLatin1String("evaluate");
        return evaluates;
    }

    // The lease log's events (gpulease.h), in order.
    static QList<QJsonObject> leaseEvents(const QString& path)
    {
        QFile file(path);
        QList<QJsonObject> events;
        if (!file.open(QIODevice::ReadOnly))
            return events;
        for (const QByteArray& line : file.readAll().split('\n'))
            if (!line.isEmpty())
                events.append(QJsonDocument::fromJson(line).object());
        return events;
    }

    std::unique_ptr<EvaluationQueue> makeQueue(const QList<int>& ordinals = {0}, int compileWorkers = 2)
    {
        auto queue = std::make_unique<EvaluationQueue>(ordinals);
        queue->setProgram(QStringLiteral(KWB_FAKEWORKER));
        queue->setProcessEnvironment(fakeEnvironment());
        WorkerLimits limits;
        limits.osSandbox = false; // the fake workers write their log outside a scratch folder
        queue->setWorkerLimits(limits);
        queue->setKillGracePeriod(300);
        queue->setCompileWorkerCount(compileWorkers);
        // No test asks this machine's driver who holds its GPU: those that need an answer set one.
        queue->setMemoryElsewhereProbe([](const QString&, qint64) {
            MemoryElsewhere unknown;
            unknown.why = QStringLiteral("not asked in tests");
            return unknown;
        });
        return queue;
    }

    // What the fake workers read, in the order they read it.
    QList<QJsonObject> logged() const
    {
        QFile file(m_log);
        QList<QJsonObject> entries;
        if (!file.open(QIODevice::ReadOnly))
            return entries;
        for (const QByteArray& line : file.readAll().split('\n')) {
            if (!line.isEmpty())
                entries.append(QJsonDocument::fromJson(line).object());
        }
        return entries;
    }

private Q_SLOTS:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_log = m_dir.filePath(QStringLiteral("requests-%1.jsonl").arg(QTest::currentTestFunction()));
        QFile::remove(m_log);
        m_extensions = m_dir.filePath(QStringLiteral("extensions-%1").arg(QTest::currentTestFunction()));
        QDir(m_extensions).removeRecursively();
        QVERIFY(QDir().mkpath(m_extensions));
        QFile builds(QDir(m_extensions).filePath(QStringLiteral("fakeworker-builds"))); // the fake's builds go here
        QVERIFY(builds.open(QIODevice::WriteOnly));
    }

    // The fake workers' extension builds (fakeworker.cpp: builds.jsonl in the cache), in order.
    QList<QJsonObject> builds() const
    {
        QFile file(QDir(m_extensions).filePath(QStringLiteral("builds.jsonl")));
        QList<QJsonObject> entries;
        if (!file.open(QIODevice::ReadOnly))
            return entries;
        for (const QByteArray& line : file.readAll().split('\n'))
            if (!line.isEmpty())
                entries.append(QJsonDocument::fromJson(line).object());
        return entries;
    }
    void openGate(const QString& name) const
    {
        QFile gate(QDir(m_extensions).filePath(name));
        QVERIFY(gate.open(QIODevice::WriteOnly));
    }
    int loggedCompiles() const
    {
        int compiles = 0;
        for (const QJsonObject& entry : logged())
            compiles += entry.value(QLatin1String("type")).toString() == QLatin1String("compile");
        return compiles;
    }

    // Issue 11, item 7: two queues on the same GPU (two runs, or a run and the window) never have
    // a request on it at once: each fake worker says when it read and when it answered its request,
    // and no span of one queue overlaps one of the other (a queue's own two slots may overlap). The
    // lease log has a release between any two grants of GPU 0: one grant per queue, whose two jobs
    // went out together.
    void twoQueuesOnOneGpuNeverOverlap()
    {
        const QString leaseLog = m_dir.filePath(QStringLiteral("leases-overlap.log"));
        qputenv("KWB_GPU_LEASE_LOG", leaseLog.toUtf8());
        auto cleanupEnv = qScopeGuard([] { qunsetenv("KWB_GPU_LEASE_LOG"); });
        auto a = makeQueue({0}, 0);
        a->setEvaluationsPerGpu(2); // two slots (the default is one)
        auto b = makeQueue({0}, 0);
        b->setEvaluationsPerGpu(2); // two slots (the default is one)
        Recorder ra(*a), rb(*b);
        for (int i = 0; i < 2; ++i) {
            a->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(150)));
            b->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(150)));
        }
        QVERIFY(QTest::qWaitFor([&] { return ra.ended.size() == 2 && rb.ended.size() == 2; }, kWaitMs));
        for (const Recorder* r : {&ra, &rb}) {
            QVERIFY2(r->failures.isEmpty(), qPrintable(r->messages.values().join(QLatin1Char(';'))));
            QCOMPARE(r->results.size(), 2);
        }
        for (qint64 x : ra.results.keys()) {
            for (qint64 y : rb.results.keys()) {
                const QPair<qint64, qint64> ofA = ra.span(x);
                const QPair<qint64, qint64> ofB = rb.span(y);
                QVERIFY2(ofA.second <= ofB.first || ofB.second <= ofA.first,
                         qPrintable(QStringLiteral("queue a's request ran %1-%2, queue b's %3-%4")
                                        .arg(ofA.first)
                                        .arg(ofA.second)
                                        .arg(ofB.first)
                                        .arg(ofB.second)));
            }
        }

        int grants = 0, held = 0;
        for (const QJsonObject& o : leaseEvents(leaseLog)) {
            QCOMPARE(o.value(QLatin1String("gpu")).toInt(-1), 0);
            QVERIFY(o.value(QLatin1String("ms")).toDouble() > 0);
            const QString event = o.value(QLatin1String("event")).toString();
            if (event == QLatin1String("grant")) {
                QCOMPARE(held, 0);
                ++held;
                ++grants;
            } else if (event == QLatin1String("release")) {
                QCOMPARE(held, 1);
                --held;
            }
        }
        // Once per queue where its two jobs overlapped, else once per job: a queue starts no second
        // job beside its first while the other queue waits (aWaitingHolderGetsTheGpuBetweenJobs),
        // and its second may start only once the first's worker has answered hello.
        QVERIFY2(grants >= 2 && grants <= 4, qPrintable(QString::number(grants)));
        QCOMPARE(held, 0);
    }

    // The lease is one per physical GPU, shared by its slots: two jobs that overlap take it once,
    // before either was read, and give it back after both were answered.
    void overlappingJobsTakeTheLeaseOnce()
    {
        const QString leaseLog = m_dir.filePath(QStringLiteral("leases-once.log"));
        QFile::remove(leaseLog);
        qputenv("KWB_GPU_LEASE_LOG", leaseLog.toUtf8());
        auto cleanupEnv = qScopeGuard([] { qunsetenv("KWB_GPU_LEASE_LOG"); });
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        Recorder recorder(*queue);
        const qint64 first = submitSlow(*queue, 1000);
        const qint64 second = submitSlow(*queue, 1000);
        QVERIFY(recorder.waitForEnded(2));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        const QPair<qint64, qint64> a = recorder.span(first);
        const QPair<qint64, qint64> b = recorder.span(second);
        QVERIFY2(overlap(a, b), qPrintable(spans(a, b)));
        QStringList events;
        qint64 grantMs = 0, releaseMs = 0;
        for (const QJsonObject& o : leaseEvents(leaseLog)) {
            const QString event = o.value(QLatin1String("event")).toString();
            events << event;
            (event == QLatin1String("grant") ? grantMs : releaseMs) = qint64(o.value(QLatin1String("ms")).toDouble());
        }
        QCOMPARE(events, (QStringList{QStringLiteral("grant"), QStringLiteral("release")}));
        QVERIFY(grantMs <= std::min(a.first, b.first));
        QVERIFY(releaseMs >= std::max(a.second, b.second));
    }

    // While another holder in this process waits for the GPU, no second job starts beside the one
    // running: that one ends, the lease goes to the other holder, and the queue's next job waits
    // until it is given back.
    void aWaitingHolderGetsTheGpuBetweenJobs()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        Recorder recorder(*queue);
        const qint64 first = submitSlow(*queue, 800);
        QTRY_COMPARE_WITH_TIMEOUT(recorder.started, QList<qint64>{first}, kWaitMs);
        GpuLeases* leases = GpuLeases::instance();
        const qint64 ticket = leases->request(0, QStringLiteral("test: waits for the GPU"));
        auto releaseTicket = qScopeGuard([&] { leases->release(ticket); });
        const qint64 second = submitSlow(*queue, 100);
        QTRY_VERIFY_WITH_TIMEOUT(leases->isGranted(ticket), kWaitMs);
        QVERIFY(recorder.ended.contains(first));
        QVERIFY(!recorder.started.contains(second));
        QTest::qWait(200);
        QVERIFY(!recorder.started.contains(second));
        const qint64 releasedMs = QDateTime::currentMSecsSinceEpoch();
        leases->release(ticket);
        QVERIFY(recorder.waitForEnded(2));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        QVERIFY(recorder.span(second).first >= releasedMs);
    }

    // Issue 11, item 4: a lease names the physical GPU. A fake driver folder (the layout of
    // /proc/driver/nvidia/gpus: one folder per PCI bus id, listed here out of bus order).
    void gpusAreIdentifiedByUuid()
    {
        QTemporaryDir driver;
        QVERIFY(driver.isValid());
        const auto addGpu = [&](const QString& bus, const QString& model, const QString& uuid) {
            QVERIFY(QDir(driver.path()).mkpath(bus));
            QFile file(QDir(driver.path()).filePath(bus + QStringLiteral("/information")));
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(QStringLiteral("Model: \t\t %1\nIRQ:   \t 35\nGPU UUID: \t %2\nDevice Minor: \t 0\n")
                           .arg(model, uuid)
                           .toUtf8());
        };
        addGpu(QStringLiteral("0000:C1:00.0"), QStringLiteral("NVIDIA H200"), QStringLiteral("GPU-cccc"));
        addGpu(QStringLiteral("0000:18:00.0"), QStringLiteral("NVIDIA H200"), QStringLiteral("GPU-aaaa"));
        QProcessEnvironment none;
        QCOMPARE(identifyGpu(0, none, driver.path()).key, QStringLiteral("GPU-aaaa")); // bus order
        QCOMPARE(identifyGpu(1, none, driver.path()).key, QStringLiteral("GPU-cccc"));
        QVERIFY(identifyGpu(1, none, driver.path()).reason.isEmpty());
        QProcessEnvironment swapped;
        swapped.insert(QStringLiteral("CUDA_VISIBLE_DEVICES"), QStringLiteral("1,0"));
        QCOMPARE(identifyGpu(0, swapped, driver.path()).key, QStringLiteral("GPU-cccc"));
        QCOMPARE(cudaVisibleDeviceEntry(0, swapped), QStringLiteral("1"));
        QProcessEnvironment byUuid;
        byUuid.insert(QStringLiteral("CUDA_VISIBLE_DEVICES"), QStringLiteral("GPU-cccc,GPU-aaaa"));
        QCOMPARE(identifyGpu(1, byUuid, driver.path()).key, QStringLiteral("GPU-aaaa"));
        // A GPU the driver does not list, and no driver at all: the machine index, with the reason.
        const GpuIdentity third = identifyGpu(2, none, driver.path());
        QCOMPARE(third.key, QStringLiteral("gpu2"));
        QVERIFY2(third.reason.contains(QStringLiteral("2 GPU(s)")), qPrintable(third.reason));
        const GpuIdentity noDriver = identifyGpu(0, swapped, driver.filePath(QStringLiteral("absent")));
        QCOMPARE(noDriver.key, QStringLiteral("gpu1"));
        QVERIFY2(noDriver.reason.contains(QStringLiteral("no NVIDIA driver")), qPrintable(noDriver.reason));
        // Two models: CUDA's default order (fastest first) is unknown without CUDA, PCI order is known.
        addGpu(QStringLiteral("0000:20:00.0"), QStringLiteral("NVIDIA A100"), QStringLiteral("GPU-bbbb"));
        const GpuIdentity mixed = identifyGpu(0, none, driver.path());
        QCOMPARE(mixed.key, QStringLiteral("gpu0"));
        QVERIFY2(mixed.reason.contains(QStringLiteral("CUDA_DEVICE_ORDER")), qPrintable(mixed.reason));
        QProcessEnvironment pciOrder;
        pciOrder.insert(QStringLiteral("CUDA_DEVICE_ORDER"), QStringLiteral("PCI_BUS_ID"));
        QCOMPARE(identifyGpu(1, pciOrder, driver.path()).key, QStringLiteral("GPU-bbbb"));
    }

    // Two views of one GPU (CUDA_VISIBLE_DEVICES=GPU-a,GPU-b here, =GPU-b,GPU-a there): ordinal
    // 0 of one and ordinal 1 of the other are the same GPU and exclude each other; the lock file
    // that other processes see is named by the UUID.
    void oneGpuUnderTwoOrdinalsHasOneLease()
    {
        const QByteArray saved = qgetenv("CUDA_VISIBLE_DEVICES");
        const bool wasSet = qEnvironmentVariableIsSet("CUDA_VISIBLE_DEVICES");
        auto restore = qScopeGuard([&] {
            if (wasSet)
                qputenv("CUDA_VISIBLE_DEVICES", saved);
            else
                qunsetenv("CUDA_VISIBLE_DEVICES");
        });
        GpuLeases* leases = GpuLeases::instance();
        qputenv("CUDA_VISIBLE_DEVICES", "GPU-test-aaaa,GPU-test-bbbb");
        const qint64 first = leases->tryAcquire(0, QStringLiteral("test: view one"));
        QVERIFY(first != 0);
        auto releaseFirst = qScopeGuard([&] { leases->release(first); });
        QVERIFY(QFile::exists(QDir(GpuLeases::lockDirectory()).filePath(QStringLiteral("GPU-test-aaaa.lock"))));
        qputenv("CUDA_VISIBLE_DEVICES", "GPU-test-bbbb,GPU-test-aaaa");
        QVERIFY(leases->isHeld(1));
        QCOMPARE(leases->tryAcquire(1, QStringLiteral("test: view two, same GPU")), qint64(0));
        const qint64 other = leases->tryAcquire(0, QStringLiteral("test: view two, the other GPU"));
        QVERIFY(other != 0);
        leases->release(other);
    }

    // Across processes: while another process holds GPU 0's lock file, no job goes to GPU 0; once
    // it lets go, the job runs (and was read after the other process ended).
    void anotherProcessHoldingTheGpuBlocksIt()
    {
        const QString lock = QDir(GpuLeases::lockDirectory()).filePath(QStringLiteral("gpu0.lock"));
        QVERIFY(QDir().mkpath(GpuLeases::lockDirectory()));
        QProcess holder;
        holder.start(QStringLiteral("/bin/sh"),
                     {QStringLiteral("-c"), QStringLiteral("exec 9>\"$0\"; flock -x 9; exec sleep 60"), lock});
        QVERIFY(holder.waitForStarted(5000));
        // Wait until the other process has the lock.
        QVERIFY(QTest::qWaitFor(
            [&] {
                const int fd = ::open(QFile::encodeName(lock).constData(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
                const bool free = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
                if (fd >= 0)
                    ::close(fd); // also drops the lock if we got it
                return !free;
            },
            kWaitMs));
        auto queue = makeQueue({0}, 0);
        Recorder recorder(*queue);
        queue->submit(job(QStringLiteral("L1/1"), answer()));
        for (int i = 0; i < 30; ++i)
            QTest::qWait(10);
        QVERIFY(recorder.started.isEmpty());
        QVERIFY(!GpuLeases::instance()->isHeld(0));
        const qint64 releasedMs = QDateTime::currentMSecsSinceEpoch();
        holder.kill();
        QVERIFY(holder.waitForFinished(5000));
        QVERIFY(recorder.waitForEnded(1));
        QVERIFY(recorder.failures.isEmpty());
        QVERIFY(qint64(recorder.results.first().value(QLatin1String("received_ms")).toDouble()) >= releasedMs);
    }

    // A job that does not run on the GPU ("device": "none", compile-only) takes no lease.
    void compileOnlyJobsTakeNoLease()
    {
        const qint64 ticket = GpuLeases::instance()->request(0, QStringLiteral("test"));
        QTRY_VERIFY(GpuLeases::instance()->isGranted(ticket));
        auto releaseLater = qScopeGuard([ticket] { GpuLeases::instance()->release(ticket); });
        auto queue = makeQueue({0}, 0);
        Recorder recorder(*queue);
        WorkerRequests::Evaluate compileOnly = job(QStringLiteral("L1/1"), answer());
        compileOnly.device = QStringLiteral("none");
        queue->submit(compileOnly);
        QVERIFY(recorder.waitForEnded(1));
        QCOMPARE(recorder.results.first().value(QLatin1String("status")).toString(), QStringLiteral("no_device"));
    }

    void jobsFinishInSubmissionOrder()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1); // one at a time: they end in the order they started
        Recorder recorder(*queue);
        QList<qint64> ids;
        for (int i = 0; i < 4; ++i)
            ids.append(queue->submit(job(QStringLiteral("L1/1"), answer())));
        QVERIFY(ids[0] < ids[1] && ids[1] < ids[2] && ids[2] < ids[3]);
        QCOMPARE(queue->pendingCount(), 4);
        QVERIFY(recorder.started.isEmpty()); // nothing from inside submit()
        QVERIFY(recorder.waitForEnded(4));
        QCOMPARE(recorder.started, ids);
        QCOMPARE(recorder.ended, ids);
        for (qint64 id : ids) {
            const QJsonObject result = recorder.results.value(id);
            QCOMPARE(result.value(QLatin1String("status")).toString(), QStringLiteral("correct"));
            QCOMPARE(result.value(QLatin1String("gpu")).toInt(), 0);
            QCOMPARE(result.value(QLatin1String("cuda_visible_devices")).toString(), QStringLiteral("0"));
            QCOMPARE(recorder.echo(id).value(QLatin1String("task")).toString(), QStringLiteral("L1/1"));
        }
        // Fresh worker per job (the default): four processes.
        QSet<qint64> pids;
        for (qint64 id : ids)
            pids.insert(recorder.results.value(id).value(QLatin1String("pid")).toInteger());
        QCOMPARE(pids.size(), 4);
        QCOMPARE(queue->pendingCount(), 0);

        // Progress: never backwards, ends at 4 of 4.
        QTRY_VERIFY(!recorder.progress.isEmpty() && recorder.progress.last() == qMakePair(4, 4));
        for (qsizetype i = 1; i < recorder.progress.size(); ++i)
            QVERIFY(recorder.progress.at(i).first >= recorder.progress.at(i - 1).first);
        QVERIFY(recorder.progress.size() <= 1 + 4); // submissions coalesce

        // A new batch counts from zero.
        const qint64 next = queue->submit(job(QStringLiteral("L1/1"), answer()));
        QVERIFY(recorder.waitForEnded(5));
        QVERIFY(recorder.results.contains(next));
        QTRY_COMPARE(recorder.progress.last(), qMakePair(1, 1));
    }

    void twoGpusRunConcurrently()
    {
        auto queue = makeQueue({0, 1}, 0);
        Recorder recorder(*queue);
        const qint64 first = queue->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(600)));
        const qint64 second = queue->submit(job(QStringLiteral("L2/1"), slowAnswerAfter(600)));
        QVERIFY(recorder.waitForEnded(2));
        const QJsonObject a = recorder.results.value(first);
        const QJsonObject b = recorder.results.value(second);
        QVERIFY2(!a.isEmpty() && !b.isEmpty(),
                 qPrintable(recorder.messages.value(first) + recorder.messages.value(second)));
        // Each worker saw only its own GPU, and the result says which.
        QCOMPARE(a.value(QLatin1String("gpu")).toInt(), 0);
        QCOMPARE(b.value(QLatin1String("gpu")).toInt(), 1);
        QCOMPARE(a.value(QLatin1String("cuda_visible_devices")).toString(), QStringLiteral("0"));
        QCOMPARE(b.value(QLatin1String("cuda_visible_devices")).toString(), QStringLiteral("1"));
        // Both ran at the same time: each was read before the other was answered.
        const qint64 lastReceived = std::max(a.value(QLatin1String("received_ms")).toInteger(),
                                             b.value(QLatin1String("received_ms")).toInteger());
        const qint64 firstAnswered = std::min(a.value(QLatin1String("answered_ms")).toInteger(),
                                              b.value(QLatin1String("answered_ms")).toInteger());
        QVERIFY2(lastReceived < firstAnswered,
                 qPrintable(QStringLiteral("%1 %2").arg(lastReceived).arg(firstAnswered)));
        QCOMPARE(queue->gpuOrdinals(), (QList<int>{0, 1}));
    }

    // Two evaluations at once per GPU by default: the first two jobs overlap in time, each on its
    // own slot (its own supervisor and worker, both seeing GPU 0), and the third waits until one of
    // them has answered.
    void twoJobsShareAGpuAndAThirdWaits()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        QCOMPARE(queue->evaluationsPerGpu(), 2);
        QCOMPARE(queue->gpuSupervisors(0).size(), 2);
        QCOMPARE(queue->gpuSupervisor(0), queue->gpuSupervisors(0).first());
        Recorder recorder(*queue);
        QList<qint64> ids;
        for (int i = 0; i < 3; ++i)
            ids << submitSlow(*queue, 1200);
        QVERIFY(recorder.waitForEnded(3));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        QCOMPARE(recorder.started, ids);
        const QPair<qint64, qint64> a = recorder.span(ids[0]);
        const QPair<qint64, qint64> b = recorder.span(ids[1]);
        const QPair<qint64, qint64> c = recorder.span(ids[2]);
        QVERIFY2(overlap(a, b), qPrintable(spans(a, b)));
        QVERIFY2(c.first >= std::min(a.second, b.second),
                 qPrintable(QStringLiteral("the third was read at %1, before either answered (%2, %3)")
                                .arg(c.first)
                                .arg(a.second)
                                .arg(b.second)));
        QSet<int> slotsUsed;
        for (qint64 id : ids) {
            const QJsonObject result = recorder.results.value(id);
            QCOMPARE(result.value(QLatin1String("gpu")).toInt(), 0);
            QCOMPARE(result.value(QLatin1String("worker")).toString(), QStringLiteral("local:0"));
            QCOMPARE(result.value(QLatin1String("cuda_visible_devices")).toString(), QStringLiteral("0"));
            QVERIFY(result.value(QLatin1String("slot")).isDouble());
            slotsUsed.insert(result.value(QLatin1String("slot")).toInt(-1));
        }
        QCOMPARE(slotsUsed, (QSet<int>{0, 1}));
        QVERIFY(recorder.results.value(ids[0]).value(QLatin1String("slot")) !=
                recorder.results.value(ids[1]).value(QLatin1String("slot")));
        // Each job's stderr is its own worker's, before its result.
        QVERIFY(!recorder.stderrAfterEnd);
        for (qint64 id : ids) {
            QCOMPARE(recorder.stderrTails.value(id).size(), 1);
            const qint64 pid = recorder.results.value(id).value(QLatin1String("pid")).toInteger();
            const QByteArray own = QStringLiteral("fake worker %1:").arg(pid).toUtf8();
            QVERIFY(recorder.stderrTails.value(id).first().contains(own));
        }
    }

    // The overlap is safe only where the workers hold the GPU's quiet lock (their timings then
    // have the GPU alone): beside a worker whose hello names none (an older worker, here the
    // fake's `unknown_type` warm mode, which says nothing of the lock), no second job starts.
    void workersWithoutTheQuietLockRunOneAtATime()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        QProcessEnvironment environment = fakeEnvironment();
        environment.insert(QStringLiteral("FAKEWORKER_WARM"), QStringLiteral("unknown_type"));
        queue->setProcessEnvironment(environment);
        Recorder recorder(*queue);
        QList<qint64> ids;
        for (int i = 0; i < 3; ++i)
            ids << submitSlow(*queue, 400);
        QVERIFY(recorder.waitForEnded(3));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        for (int i = 1; i < ids.size(); ++i)
            QVERIFY2(!overlap(recorder.span(ids[i - 1]), recorder.span(ids[i])),
                     qPrintable(spans(recorder.span(ids[i - 1]), recorder.span(ids[i]))));
    }

    // One evaluation per GPU (setEvaluationsPerGpu(1)) is one job at a time, as before; the count
    // is clamped to [1, 4], and a remote target always has one slot.
    void oneEvaluationPerGpuRunsOneAtATime()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(1);
        QCOMPARE(queue->evaluationsPerGpu(), 1);
        QCOMPARE(queue->gpuSupervisors(0).size(), 1);
        Recorder recorder(*queue);
        QList<qint64> ids;
        for (int i = 0; i < 3; ++i)
            ids << submitSlow(*queue, 300);
        QVERIFY(recorder.waitForEnded(3));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        QCOMPARE(recorder.ended, ids);
        for (int i = 1; i < ids.size(); ++i)
            QVERIFY(recorder.span(ids[i]).first >= recorder.span(ids[i - 1]).second);
        for (qint64 id : ids)
            QCOMPARE(recorder.results.value(id).value(QLatin1String("slot")).toInt(-1), 0);

        EvaluationQueue clamped(QList<int>{0});
        clamped.setEvaluationsPerGpu(0);
        QCOMPARE(clamped.evaluationsPerGpu(), 1);
        clamped.setEvaluationsPerGpu(9);
        QCOMPARE(clamped.evaluationsPerGpu(), EvaluationQueue::kMaxEvaluationsPerGpu);
        QCOMPARE(clamped.gpuSupervisors(0).size(), 4);
        WorkerTarget remote;
        remote.kind = WorkerTarget::Kind::Ssh;
        remote.host = QStringLiteral("gpu-box");
        remote.gpu = 1;
        EvaluationQueue mixed(QList<WorkerTarget>{WorkerTarget::local(0), remote}, nullptr);
        mixed.setEvaluationsPerGpu(3);
        QCOMPARE(mixed.gpuSupervisors(0).size(), 3);
        QCOMPARE(mixed.gpuSupervisors(1).size(), 1);
        QCOMPARE(mixed.gpuSupervisors(1).first()->target(), remote);
    }

    // Every setting reaches every slot's supervisor, a slot added later too (one function
    // configures them all).
    void settingsReachEverySlot()
    {
        EvaluationQueue queue(QList<int>{1});
        queue.setProgram(QStringLiteral(KWB_FAKEWORKER), {QStringLiteral("--tasks-dir"), QStringLiteral("/nowhere")});
        queue.setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        queue.setStderrLimit(4321);
        WorkerLimits limits;
        limits.hostThreads = 77;
        limits.osSandbox = false;
        queue.setWorkerLimits(limits);
        queue.setProcessEnvironment(fakeEnvironment());
        queue.setEvaluationsPerGpu(3);
        const QList<WorkerSupervisor*> supervisors = queue.gpuSupervisors(0);
        QCOMPARE(supervisors.size(), 3);
        QSet<WorkerSupervisor*> distinct(supervisors.cbegin(), supervisors.cend());
        QCOMPARE(distinct.size(), 3);
        for (WorkerSupervisor* supervisor : supervisors) {
            QCOMPARE(supervisor->program(), QStringLiteral(KWB_FAKEWORKER));
            QCOMPARE(supervisor->isolation(), WorkerSupervisor::Isolation::ReuseWhileHealthy);
            QCOMPARE(supervisor->stderrLimit(), qsizetype(4321));
            QCOMPARE(supervisor->limits().hostThreads, 77);
            QVERIFY(supervisor->warmWhileBusy());
            QCOMPARE(supervisor->target(), WorkerTarget::local(1));
            const WorkerSupervisor::Outcome outcome =
                supervisor->run(QJsonObject{{QStringLiteral("type"), QStringLiteral("env")}}, 15000);
            QVERIFY2(outcome.hasResponse(), qPrintable(outcome.status + QLatin1String(": ") + outcome.message));
            // The fake worker's own answer: read by key here.
            const QJsonObject environment = outcome.response.raw.value(QLatin1String("environment")).toObject();
            QCOMPARE(environment.value(QLatin1String("CUDA_VISIBLE_DEVICES")).toString(), QStringLiteral("1"));
        }
        // Turned on by the first KernelBench-format job, on every slot: the Python in the spares,
        // and the spares themselves, which reuse mode starts only once a worker retires.
        for (WorkerSupervisor* supervisor : supervisors)
            QVERIFY(!supervisor->retiringWorkersExpected());
        queue.submit(kernelBenchJob(QStringLiteral("L1/1"), kernelBenchAnswer(QStringLiteral("fine"))));
        for (WorkerSupervisor* supervisor : supervisors) {
            QVERIFY(supervisor->warmPython());
            QVERIFY(supervisor->retiringWorkersExpected());
        }
        queue.cancelAll();
    }

    // Overlap may cost a candidate its memory: a job that answers out of memory while
    // another slot of its GPU runs a job is evaluated again alone (after the other has answered,
    // and the next job waits for it), and only that answer is reported: jobStarted twice, one
    // result and one stderr tail, the second run's.
    void outOfMemoryBesideAnotherRunsAgainAlone()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        setOnceFile(*queue, QStringLiteral("oom"));
        Recorder recorder(*queue);
        const qint64 slow = submitSlow(*queue, 1000);
        const qint64 oom = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: oom_once"))));
        const qint64 next = submitSlow(*queue, 200);
        QVERIFY(recorder.waitForEnded(3));
        QTest::qWait(200); // nothing more comes
        QCOMPARE(recorder.ended.size(), 3);
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        QCOMPARE(recorder.results.value(oom).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QCOMPARE(recorder.started.count(oom), 2);
        QCOMPARE(recorder.started.count(slow), 1);
        QCOMPARE(recorder.started.count(next), 1);
        QCOMPARE(loggedEvaluates(), 4);
        QCOMPARE(recorder.echo(oom).value(QLatin1String("answer")).toString(),
                 answer(QStringLiteral("fake: oom_once")));
        // Alone: read after the slow job answered; the next job read after it answered.
        QVERIFY(recorder.span(oom).first >= recorder.span(slow).second);
        QVERIFY(recorder.span(next).first >= recorder.span(oom).second);
        QCOMPARE(recorder.stderrTails.value(oom).size(), 1);
        const qint64 pid = recorder.results.value(oom).value(QLatin1String("pid")).toInteger();
        QVERIFY(recorder.stderrTails.value(oom).first().contains(QStringLiteral("fake worker %1:").arg(pid).toUtf8()));
        QTRY_COMPARE(recorder.progress.last(), qMakePair(3, 3));
    }

    // An out-of-memory answer of a job that ran alone is the candidate's: reported as it is.
    void outOfMemoryAloneIsReported()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        setOnceFile(*queue, QStringLiteral("oom"));
        Recorder recorder(*queue);
        const qint64 oom = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: oom_once"))));
        QVERIFY(recorder.waitForEnded(1));
        const QJsonObject result = recorder.results.value(oom);
        QCOMPARE(result.value(QLatin1String("status")).toString(), QStringLiteral("runtime_error"));
        QVERIFY(result.value(QLatin1String("message")).toString().contains(QLatin1String("out of memory")));
        QCOMPARE(recorder.started, QList<qint64>{oom});
        QCOMPARE(loggedEvaluates(), 1);
    }

    // nvidia-smi's compute-apps lines: MiB to bytes, a name with commas kept whole, "[N/A]" and
    // messages left out.
    void parseComputeAppsLines()
    {
        const QList<GpuProcessUse> apps = parseComputeApps("4242, 61440, /usr/bin/python3\n"
                                                           "17, [N/A], /opt/x\n"
                                                           "No running processes found\n"
                                                           " 99 , 512 , /srv/a,b server \n");
        QCOMPARE(apps.size(), 2);
        QCOMPARE(apps.at(0).pid, 4242);
        QCOMPARE(apps.at(0).usedBytes, 60.0 * (1LL << 30));
        QCOMPARE(apps.at(1).pid, 99);
        QCOMPARE(apps.at(1).usedBytes, 512.0 * (1LL << 20));
        QCOMPARE(apps.at(1).name, QStringLiteral("/srv/a,b server"));
        QVERIFY(parseComputeApps("").isEmpty());
    }

    // The candidate's processes are not "elsewhere"; one not visible here is left out; where none
    // is visible (another PID namespace) nothing is known. And the rule on the shortfall.
    void memoryElsewhereAndTheRule()
    {
        const QList<GpuProcessUse> apps{{10, 8.0 * (1LL << 30), QStringLiteral("/w/kwb-worker")},
                                        {20, 2.0 * (1LL << 30), QStringLiteral("/usr/bin/vllm")},
                                        {30, 5.0 * (1LL << 30), QStringLiteral("gone")}};
        const MemoryElsewhere m = memoryElsewhere(
            apps, [](qint64 pid) { return pid == 10; }, [](qint64 pid) { return pid != 30; });
        QVERIFY(m.known);
        QCOMPARE(m.bytes, 2.0 * (1LL << 30));
        QCOMPARE(m.holders, QStringList{QStringLiteral("vllm (pid 20): 2.00 GiB")});
        const MemoryElsewhere foreign = memoryElsewhere(
            apps, [](qint64) { return false; }, [](qint64) { return false; });
        QVERIFY(!foreign.known);
        QVERIFY(foreign.why.contains(QLatin1String("PID namespace")));
        const MemoryElsewhere none = memoryElsewhere(
            {}, [](qint64) { return false; }, [](qint64) { return false; });
        QVERIFY(none.known);
        QCOMPARE(none.bytes, 0.0);

        EvaluationResult r;
        r.status = EvaluationStatus::RuntimeError;
        QCOMPARE(judgeOutOfMemory(r, m), OutOfMemoryFault::None); // no allocator report
        r.gpuOutOfMemory = AllocatorOutOfMemoryReport{1, 3.0 * (1LL << 30), 1.0 * (1LL << 30), 80.0 * (1LL << 30), {}};
        QCOMPARE(judgeOutOfMemory(r, m), OutOfMemoryFault::Machines); // 2 GiB short, 2 GiB elsewhere
        QCOMPARE(judgeOutOfMemory(r, none), OutOfMemoryFault::Candidates);
        QCOMPARE(judgeOutOfMemory(r, foreign), OutOfMemoryFault::Unknown);
        r.gpuOutOfMemory->requestedBytes = 3.5 * (1LL << 30);
        QCOMPARE(judgeOutOfMemory(r, m), OutOfMemoryFault::Candidates); // 2.5 GiB short
        r.gpuOutOfMemory->requestedBytes = 0.5 * (1LL << 30);
        QCOMPARE(judgeOutOfMemory(r, m), OutOfMemoryFault::Candidates); // no shortfall: not for want of memory
        r.gpuOutOfMemory->requestedBytes = 3.0 * (1LL << 30);
        r.status = EvaluationStatus::Incorrect;
        QCOMPARE(judgeOutOfMemory(r, m), OutOfMemoryFault::None); // only a runtime_error
    }

    // The probe runs nvidia-smi (here a script the test writes, first on PATH) for the worker's
    // GPU in NVML's form of its bus id, and counts the worker's process tree (a process the test
    // starts) as the candidate's; this test process stands for another program on the GPU.
    void probeMemoryElsewhereAsksNvidiaSmi()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QProcess worker; // stands for the answering worker
        worker.start(QStringLiteral("sleep"), {QStringLiteral("30")});
        QVERIFY(worker.waitForStarted());
        const auto stop = qScopeGuard([&] {
            worker.kill();
            worker.waitForFinished();
        });
        const QString script = dir.filePath(QStringLiteral("nvidia-smi"));
        QFile f(script);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QStringLiteral("#!/bin/sh\necho \"$@\" > '%1'\necho '%2, 10240, /w/kwb-worker'\necho '%3, 30720, "
                               "/usr/bin/model-server'\necho '999999999, 1024, /gone'\n")
                    .arg(dir.filePath(QStringLiteral("args")))
                    .arg(worker.processId())
                    .arg(QCoreApplication::applicationPid())
                    .toUtf8());
        f.close();
        QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        const QByteArray path = qgetenv("PATH");
        qputenv("PATH", dir.path().toUtf8() + ':' + path);
        const auto restore = qScopeGuard([&] { qputenv("PATH", path); });
        const MemoryElsewhere m = probeMemoryElsewhere(QStringLiteral("0000:19:00.0"), worker.processId());
        QVERIFY2(m.known, qPrintable(m.why));
        QCOMPARE(m.bytes, 30.0 * (1LL << 30));
        QCOMPARE(m.holders.size(), 1);
        QVERIFY(m.holders.first().startsWith(
            QStringLiteral("model-server (pid %1)").arg(QCoreApplication::applicationPid())));
        QFile args(dir.filePath(QStringLiteral("args")));
        QVERIFY(args.open(QIODevice::ReadOnly));
        QVERIFY2(args.readAll().contains("-i 00000000:19:00.0"), "nvidia-smi asked for another GPU");
        // Without a bus id, or with nvidia-smi failing, nothing is known.
        QVERIFY(!probeMemoryElsewhere(QString(), worker.processId()).known);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n");
        f.close();
        const MemoryElsewhere failed = probeMemoryElsewhere(QStringLiteral("0000:19:00.0"), worker.processId());
        QVERIFY(!failed.known);
        QVERIFY2(failed.why.contains(QLatin1String("NVIDIA-SMI has failed")), qPrintable(failed.why));
    }

    // Memory held by processes outside the candidate's covers what its allocation lacked (torch's
    // allocator: 4 GiB asked for, 1 GiB free): evaluated again alone once, then the machine's,
    // out_of_memory_elsewhere, with who held it; the probe is asked about the bus the worker
    // named and the worker that answered.
    void outOfMemoryElsewhereIsTheMachines()
    {
        auto queue = makeQueue({0}, 0);
        QList<QPair<QString, qint64>> asked;
        queue->setMemoryElsewhereProbe([&asked](const QString& bus, qint64 pid) {
            asked.append({bus, pid});
            return heldElsewhere(60, QStringLiteral("/usr/bin/python3"));
        });
        Recorder recorder(*queue);
        const qint64 oom = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: oom"))));
        QVERIFY(recorder.waitForEnded(1));
        QTest::qWait(200); // nothing more comes
        QCOMPARE(recorder.started.count(oom), 2);
        QCOMPARE(loggedEvaluates(), 2);
        QVERIFY2(recorder.failures.value(oom) == QStringLiteral("out_of_memory_elsewhere"),
                 QJsonDocument(recorder.results.value(oom)).toJson(QJsonDocument::Compact).left(3000).constData());
        QVERIFY(isMachineFailure(recorder.failures.value(oom)));
        const QString message = recorder.messages.value(oom);
        QVERIFY2(message.contains(QLatin1String("60.00 GiB")) &&
                     message.contains(QLatin1String("python3 (pid 4242)")) &&
                     message.contains(QLatin1String("asked torch for 4.00 GiB with 1.00 GiB free")) &&
                     message.contains(QLatin1String("CUDA out of memory")),
                 qPrintable(message));
        QCOMPARE(asked.size(), 2);
        QCOMPARE(asked.first().first, QStringLiteral("0000:19:00.0"));
        QVERIFY(asked.first().second > 0 && asked.last().second > 0);
        QTRY_COMPARE(recorder.progress.last(), qMakePair(1, 1));
    }

    // Once alone, the allocation that failed for memory held elsewhere may succeed: that verdict.
    void outOfMemoryElsewhereOnceThenItsVerdict()
    {
        auto queue = makeQueue({0}, 0);
        setOnceFile(*queue, QStringLiteral("oom"));
        queue->setMemoryElsewhereProbe(
            [](const QString&, qint64) { return heldElsewhere(60, QStringLiteral("vllm")); });
        Recorder recorder(*queue);
        const qint64 oom = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: oom_once"))));
        QVERIFY(recorder.waitForEnded(1));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        QCOMPARE(recorder.results.value(oom).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QCOMPARE(recorder.started.count(oom), 2);
    }

    // Where what others held would not have covered the shortfall (1 GiB elsewhere, 3 GiB short),
    // or who held it cannot be told, or the allocator made no report (a RuntimeError with torch's
    // words that the candidate raised itself), the runtime_error is the candidate's, at once.
    void outOfMemoryNotCoveredIsTheCandidates()
    {
        const auto run = [this](const QString& mode, const std::optional<double>& elsewhereGiB) {
            auto queue = makeQueue({0}, 0);
            int asked = 0;
            queue->setMemoryElsewhereProbe([&asked, elsewhereGiB](const QString&, qint64) {
                ++asked;
                if (!elsewhereGiB)
                    return MemoryElsewhere{};
                return heldElsewhere(*elsewhereGiB, QStringLiteral("other"));
            });
            if (mode == QLatin1String("forged"))
                SupervisorTuning::setRequestFields(
                    *queue, QJsonObject{{QStringLiteral("fake_gpu_memory"),
                                         QJsonObject{{QStringLiteral("free_bytes"), 1.0 * (1LL << 30)}}}});
            Recorder recorder(*queue);
            const qint64 oom = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: oom"))));
            if (!recorder.waitForEnded(1))
                return QStringLiteral("no end");
            return QStringLiteral("%1 started %2 asked %3")
                .arg(recorder.results.value(oom).value(QLatin1String("status")).toString())
                .arg(recorder.started.count(oom))
                .arg(asked);
        };
        QCOMPARE(run(QStringLiteral("covered"), 1.0), QStringLiteral("runtime_error started 1 asked 1"));
        QCOMPARE(run(QStringLiteral("unknown"), std::nullopt), QStringLiteral("runtime_error started 1 asked 1"));
        QCOMPARE(run(QStringLiteral("forged"), 60.0), QStringLiteral("runtime_error started 1 asked 0"));
    }

    // A time-out beside another job is the machine's too: evaluated again alone (after the other
    // answered, whether before its time-out or after), its second answer reported.
    void timeoutBesideAnotherRunsAgainAlone()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        setOnceFile(*queue, QStringLiteral("hang"));
        Recorder recorder(*queue);
        const qint64 slow = submitSlow(*queue, 1000);
        const qint64 hang = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang_once"))), 2000);
        QVERIFY(recorder.waitForEnded(2));
        QVERIFY2(recorder.failures.isEmpty(), qPrintable(recorder.messages.values().join(QLatin1Char(';'))));
        QCOMPARE(recorder.results.value(hang).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QCOMPARE(recorder.started.count(hang), 2);
        QCOMPARE(recorder.ended, (QList<qint64>{slow, hang}));
        QVERIFY(recorder.span(hang).first >= recorder.span(slow).second);
    }

    // cancel() and cancelAll() reach the job on either slot; the slot freed takes the next job
    // while the other still runs.
    void cancelOnEitherSlot()
    {
        auto queue = makeQueue({0}, 0);
        queue->setEvaluationsPerGpu(2); // two slots (the default is one)
        Recorder recorder(*queue);
        const int longLimit = 60000;
        const qint64 first =
            queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang"))), longLimit);
        const qint64 second =
            queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang"))), longLimit);
        const qint64 third = queue->submit(job(QStringLiteral("L1/1"), answer()));
        const qint64 fourth =
            queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang"))), longLimit);
        QTRY_COMPARE_WITH_TIMEOUT(recorder.started, (QList<qint64>{first, second}), kWaitMs);
        QTest::qWait(200); // let the hangs reach their workers
        QVERIFY(queue->cancel(second));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.failures.value(second), wireName(EvaluationStatus::Cancelled));
        QCOMPARE(recorder.results.value(third).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QCOMPARE(recorder.results.value(third).value(QLatin1String("slot")).toInt(-1), 1);
        QTRY_VERIFY_WITH_TIMEOUT(recorder.started.contains(fourth), kWaitMs);
        QVERIFY(!recorder.ended.contains(first));
        QTest::qWait(200);
        queue->cancelAll();
        QVERIFY(recorder.waitForEnded(4));
        QCOMPARE(recorder.failures.value(first), wireName(EvaluationStatus::Cancelled));
        QCOMPARE(recorder.failures.value(fourth), wireName(EvaluationStatus::Cancelled));
        QCOMPARE(queue->pendingCount(), 0);
    }

    void compileAheadAttachesCubins()
    {
        auto queue = makeQueue({0}, 2);
        queue->setEvaluationsPerGpu(1); // the next jobs wait for the GPU, so their compiles run ahead
        Recorder recorder(*queue);
        QList<qint64> ids;
        for (int i = 0; i < 4; ++i)
            ids.append(queue->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(300, QString::number(i)))));
        QVERIFY(recorder.waitForEnded(4));
        QCOMPARE(recorder.ended, ids);
        QCOMPARE(queue->arch(), QStringLiteral("sm_90")); // asked the GPU worker once

        // The first job found the GPU idle and went uncompiled rather than wait.
        QCOMPARE(recorder.results.value(ids[0]).value(QLatin1String("cubin_received")).toBool(), false);
        for (int i = 1; i < 4; ++i) {
            const QJsonObject echo = recorder.echo(ids[i]);
            QVERIFY2(echo.contains(QLatin1String("cubin_b64")), qPrintable(QString::number(i)));
            QCOMPARE(echo.value(QLatin1String("cubin_arch")).toString(), QStringLiteral("sm_90"));
            QVERIFY(echo.contains(QLatin1String("compile_log")));
            // The kernels' facts the compile read travel with its cubin, so the GPU worker does not
            // read them again (nvdisasm: docs/protocol.md, compile ahead).
            const QJsonObject facts = echo.value(QLatin1String("cubin_kernel_facts")).toObject();
            QCOMPARE(facts.keys(), QStringList{QStringLiteral("kernel_facts")});
            QVERIFY(!facts.value(QLatin1String("kernel_facts")).toArray().isEmpty());
            // The compile's source hash (the worker's, of the block its parser found) travels with
            // the cubin, so the worker can refuse a mismatch: it is the hash evaluate reports for
            // the block it parsed from the same answer.
            const QJsonObject parsed = recorder.results.value(ids[i]).value(QLatin1String("candidate")).toObject();
            QVERIFY(!parsed.value(QLatin1String("source_hash")).toString().isEmpty());
            QCOMPARE(echo.value(QLatin1String("cubin_source_hash")).toString(),
                     parsed.value(QLatin1String("source_hash")).toString());
            // The module is the one compiled from the block the worker found in this job's answer.
            const QByteArray cubin =
                QByteArray::fromBase64(echo.value(QLatin1String("cubin_b64")).toString().toLatin1());
            QCOMPARE(QString::fromUtf8(cubin),
                     QStringLiteral("FAKECUBIN sm_90 ") + parsed.value(QLatin1String("cuda")).toString());
            QVERIFY(parsed.value(QLatin1String("cuda")).toString().contains(QStringLiteral("// %1").arg(i)));
            const QJsonObject compile = recorder.results.value(ids[i]).value(QLatin1String("compile")).toObject();
            QCOMPARE(compile.value(QLatin1String("cached")).toBool(), true);
        }

        // Compiles ran in workers that see no GPU; the GPU worker only answered hello, device and
        // evaluate; one `device` request in all.
        int compiles = 0;
        int devices = 0;
        for (const QJsonObject& entry : logged()) {
            const QString type = entry.value(QLatin1String("type")).toString();
            const QJsonValue visible = entry.value(QLatin1String("cuda_visible_devices"));
            if (type == QLatin1String("compile")) {
                ++compiles;
                QVERIFY(visible.isString());
                QCOMPARE(visible.toString(), QString());
                // The whole answer goes to the worker, which finds the cuda block itself.
                const QJsonArray keys = entry.value(QLatin1String("keys")).toArray();
                QVERIFY(keys.contains(QStringLiteral("answer")));
                QVERIFY(!keys.contains(QStringLiteral("cuda")));
                QVERIFY(keys.contains(QStringLiteral("return_cubin")));
            } else if (type == QLatin1String("evaluate") || type == QLatin1String("device")) {
                devices += type == QLatin1String("device");
                QCOMPARE(visible.toString(), QStringLiteral("0"));
            }
        }
        QCOMPARE(devices, 1);
        QCOMPARE(compiles, 3); // the first job's compile never started
    }

    // Issue 14: a job's answer format goes to its compile ahead too (a KernelBench answer's
    // load_inline builds there), and only where the job names one. Every KernelBench-format job is
    // built ahead, the first one too: the idle GPU takes the native job meanwhile.
    void compileAheadCarriesTheAnswerFormat()
    {
        auto queue = makeQueue({0}, 1);
        Recorder recorder(*queue);
        // Native jobs leave the spares' embedded Python alone; the first KernelBench one asks
        // the GPU's spares to start it while they warm.
        QVERIFY(!queue->gpuSupervisor(0)->warmPython());
        QList<qint64> ids;
        for (int i = 0; i < 3; ++i) {
            WorkerRequests::Evaluate request = job(QStringLiteral("L1/1"), slowAnswerAfter(300, QString::number(i)));
            if (i < 2) {
                request.answerFormat = QStringLiteral("kernelbench");
                request.codeBlock = QStringLiteral("last"); // issue 33: the build's module too
            }
            ids.append(queue->submit(request));
        }
        QVERIFY(queue->gpuSupervisor(0)->warmPython());
        QVERIFY(recorder.waitForEnded(3));
        QStringList compiled; // "answer_format" or "-" per compile request, in order
        for (const QJsonObject& entry : logged()) {
            if (entry.value(QLatin1String("type")).toString() != QLatin1String("compile"))
                continue;
            const QJsonArray keys = entry.value(QLatin1String("keys")).toArray();
            compiled << (keys.contains(QStringLiteral("answer_format"))
                             ? (keys.contains(QStringLiteral("code_block")) ? QStringLiteral("answer_format+code_block")
                                                                            : QStringLiteral("answer_format"))
                             : QStringLiteral("-"));
        }
        // The native job went to the idle GPU uncompiled; both kernelbench jobs were built ahead.
        QCOMPARE(compiled,
                 (QStringList{QStringLiteral("answer_format+code_block"), QStringLiteral("answer_format+code_block")}));
        QCOMPARE(recorder.started.first(), ids[2]);
        QCOMPARE(recorder.echo(ids[1]).value(QLatin1String("answer_format")).toString(), QStringLiteral("kernelbench"));
        for (const QJsonObject& build : builds())
            QCOMPARE(build.value(QLatin1String("by")).toString(), QStringLiteral("compile"));
        QCOMPARE(builds().size(), 2);
    }

    // Issue 14, item 2: KernelBench-format builds run on every compile worker at once, over all
    // queued jobs, and the GPU's evaluation never builds one itself: each found its extension in
    // the cache. The fake's barrier holds each of the first three builds until three have started.
    void kernelBenchBuildsRunOnAllCompileWorkersAtOnce()
    {
        auto queue = makeQueue({0}, 3);
        queue->setArch(QStringLiteral("sm_90"));
        Recorder recorder(*queue);
        QList<qint64> ids;
        for (int i = 0; i < 5; ++i)
            ids.append(queue->submit(kernelBenchJob(
                QStringLiteral("L1/1"),
                kernelBenchAnswer(
                    QStringLiteral("%1 %2").arg(i < 3 ? QStringLiteral("build_barrier: 3") : QString()).arg(i)))));
        QVERIFY(recorder.waitForEnded(5));
        QVERIFY(recorder.failures.isEmpty());
        const QList<QJsonObject> built = builds();
        QCOMPARE(built.size(), 5);
        QSet<qint64> barrierPids;
        for (const QJsonObject& build : built) {
            QCOMPARE(build.value(QLatin1String("by")).toString(), QStringLiteral("compile"));
            QVERIFY2(build.value(QLatin1String("barrier_met")).toBool(), "three builds did not run at once");
            barrierPids.insert(build.value(QLatin1String("pid")).toInteger());
        }
        QVERIFY(barrierPids.size() >= 3); // three compile workers
        for (qint64 id : ids) {
            const QJsonObject compile = recorder.results.value(id).value(QLatin1String("compile")).toObject();
            QCOMPARE(compile.value(QLatin1String("extension_cached")).toBool(), true);
            QCOMPARE(recorder.results.value(id).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        }
    }

    // Issue 14, item 2: while one job's build runs, the GPU evaluates the jobs that are ready, and
    // the waiting job is evaluated from its own build once that ends (no second build). Each
    // result is its own job's, whatever order the builds ended in.
    void gpuEvaluatesReadyJobsWhileABuildRuns()
    {
        auto queue = makeQueue({0}, 2);
        queue->setArch(QStringLiteral("sm_90"));
        Recorder recorder(*queue);
        const QString slowAnswer = kernelBenchAnswer(QStringLiteral("build_gate: open_a"));
        const QString quickAnswer = kernelBenchAnswer(QStringLiteral("quick"));
        const qint64 slow = queue->submit(kernelBenchJob(QStringLiteral("L1/1"), slowAnswer));
        const qint64 quick = queue->submit(kernelBenchJob(QStringLiteral("L2/1"), quickAnswer));
        auto gate = qScopeGuard([&] { openGate(QStringLiteral("open_a")); }); // never leave a build hanging
        QVERIFY(recorder.waitForEnded(1));
        QCOMPARE(recorder.ended, (QList<qint64>{quick}));
        QCOMPARE(queue->pendingCount(), 1);
        QCOMPARE(recorder.started, (QList<qint64>{quick})); // the building job was not sent to the GPU
        openGate(QStringLiteral("open_a"));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.ended, (QList<qint64>{quick, slow}));
        QCOMPARE(recorder.echo(slow).value(QLatin1String("answer")).toString(), slowAnswer);
        QCOMPARE(recorder.echo(quick).value(QLatin1String("answer")).toString(), quickAnswer);
        QCOMPARE(recorder.echo(quick).value(QLatin1String("task")).toString(), QStringLiteral("L2/1"));
        for (qint64 id : {slow, quick})
            QCOMPARE(recorder.results.value(id)
                         .value(QLatin1String("compile"))
                         .toObject()
                         .value(QLatin1String("extension_cached"))
                         .toBool(),
                     true);
        QCOMPARE(builds().size(), 2);
        for (const QJsonObject& build : builds())
            QCOMPARE(build.value(QLatin1String("by")).toString(), QStringLiteral("compile"));
    }

    // Issue 14, item 2: the same answer in several jobs (samples alike, a re-evaluation) is built
    // once: the others wait for that build, on no compile worker and not on the GPU.
    void identicalKernelBenchAnswersBuildOnce()
    {
        auto queue = makeQueue({0}, 3);
        queue->setArch(QStringLiteral("sm_90"));
        Recorder recorder(*queue);
        const QString same = kernelBenchAnswer(QStringLiteral("build_gate: open_same"));
        QList<qint64> ids;
        for (int i = 0; i < 3; ++i)
            ids.append(queue->submit(kernelBenchJob(QStringLiteral("L1/1"), same)));
        auto gate = qScopeGuard([&] { openGate(QStringLiteral("open_same")); });
        QTRY_VERIFY_WITH_TIMEOUT(loggedCompiles() >= 1, kWaitMs); // the build is running
        QVERIFY(recorder.started.isEmpty());
        openGate(QStringLiteral("open_same"));
        QVERIFY(recorder.waitForEnded(3));
        QCOMPARE(recorder.ended, ids);
        QCOMPARE(builds().size(), 1);
        QCOMPARE(builds().first().value(QLatin1String("by")).toString(), QStringLiteral("compile"));
        QCOMPARE(loggedCompiles(), 1);
        for (qint64 id : ids)
            QCOMPARE(recorder.results.value(id)
                         .value(QLatin1String("compile"))
                         .toObject()
                         .value(QLatin1String("extension_cached"))
                         .toBool(),
                     true);
    }

    // Issue 14, item 2: a build that fails ahead is that candidate's compile_error, with the
    // build's log, and the GPU's evaluation does not build it again.
    void kernelBenchBuildFailureIsTheCandidatesCompileError()
    {
        auto queue = makeQueue({0}, 2);
        queue->setArch(QStringLiteral("sm_90"));
        Recorder recorder(*queue);
        const qint64 good =
            queue->submit(kernelBenchJob(QStringLiteral("L1/1"), kernelBenchAnswer(QStringLiteral("fine"))));
        const qint64 broken =
            queue->submit(kernelBenchJob(QStringLiteral("L1/1"), kernelBenchAnswer(QStringLiteral("compile_error"))));
        QVERIFY(recorder.waitForEnded(2));
        QVERIFY(!recorder.failures.contains(broken)); // a verdict on the candidate, not a job failure
        QCOMPARE(recorder.results.value(good).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        const QJsonObject result = recorder.results.value(broken);
        QCOMPARE(result.value(QLatin1String("status")).toString(), QStringLiteral("compile_error"));
        QVERIFY(result.value(QLatin1String("message")).toString().contains(QStringLiteral("undefined_fn")));
        QCOMPARE(builds().size(), 2);
        for (const QJsonObject& build : builds())
            QCOMPARE(build.value(QLatin1String("by")).toString(), QStringLiteral("compile"));
    }

    void compileFailureStillEvaluates()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1);          // the second job waits for the GPU, so its compile runs ahead
        queue->setArch(QStringLiteral("sm_90")); // no device request needed
        Recorder recorder(*queue);
        const qint64 first = queue->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(400)));
        const qint64 broken = queue->submit(job(
            QStringLiteral("L1/1"), answer(QStringLiteral("status: compile_error"), QStringLiteral("compile_error"))));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.results.value(first).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        // Not a job failure: the GPU worker compiles again and says compile_error itself.
        QVERIFY(!recorder.failures.contains(broken));
        QCOMPARE(recorder.results.value(broken).value(QLatin1String("status")).toString(),
                 QStringLiteral("compile_error"));
        QCOMPARE(recorder.results.value(broken).value(QLatin1String("cubin_received")).toBool(), false);
        int compiles = 0;
        int devices = 0;
        for (const QJsonObject& entry : logged()) {
            compiles += entry.value(QLatin1String("type")).toString() == QLatin1String("compile");
            devices += entry.value(QLatin1String("type")).toString() == QLatin1String("device");
        }
        QCOMPARE(compiles, 1);
        QCOMPARE(devices, 0);
    }

    void torchOnlyAnswerGoesWithoutCubin()
    {
        // No cuda block: the compile ahead says so (ok_compile false, no hash), the job is
        // evaluated as it is, and nothing is attached.
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1); // the second job waits for the GPU, so its compile runs ahead
        queue->setArch(QStringLiteral("sm_90"));
        Recorder recorder(*queue);
        const qint64 first = queue->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(400)));
        const QString torchOnly = QStringLiteral("cuBLAS is the ceiling here.\n\n```python\n"
                                                 "def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:\n"
                                                 "    return torch.matmul(A, B)\n```\n");
        const qint64 torch = queue->submit(job(QStringLiteral("L1/1"), torchOnly));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.ended, (QList<qint64>{first, torch}));
        QVERIFY(!recorder.failures.contains(torch));
        const QJsonObject result = recorder.results.value(torch);
        QCOMPARE(result.value(QLatin1String("cubin_received")).toBool(), false);
        QVERIFY(!recorder.echo(torch).contains(QLatin1String("cubin_source_hash")));
        QVERIFY(result.value(QLatin1String("candidate")).toObject().value(QLatin1String("cuda")).isNull());
        int compiles = 0;
        for (const QJsonObject& entry : logged())
            compiles += entry.value(QLatin1String("type")).toString() == QLatin1String("compile");
        QCOMPARE(compiles, 1); // the torch-only answer's: the first job went uncompiled
    }

    void idleGpuWaitsForRunningCompileOnlySoLong()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1); // the second job waits for the GPU, so its compile runs ahead
        queue->setArch(QStringLiteral("sm_90"));
        queue->setCompileWaitLimit(400);
        queue->setCompileTimeout(10000);
        Recorder recorder(*queue);
        const qint64 first = queue->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(200)));
        // Its compile hangs (a source that takes minutes in NVRTC): once the GPU is free, the job
        // waits the limit, then goes uncompiled.
        const qint64 second =
            queue->submit(job(QStringLiteral("L1/1"), answer(QString(), QStringLiteral("nvrtc: hang"))));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.ended, (QList<qint64>{first, second}));
        QCOMPARE(recorder.results.value(second).value(QLatin1String("cubin_received")).toBool(), false);
        const qint64 waited = recorder.startedAtMs.value(second) - recorder.endedAtMs.value(first);
        QVERIFY2(waited >= 300 && waited < 3000, qPrintable(QString::number(waited)));
    }

    void hangingJobTimesOut()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1); // the next job waits for the hang to end
        Recorder recorder(*queue);
        const qint64 hang = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang"))), 500);
        const qint64 next = queue->submit(job(QStringLiteral("L1/1"), answer()));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.ended, (QList<qint64>{hang, next}));
        QCOMPARE(recorder.failures.value(hang), wireName(EvaluationStatus::Timeout));
        QVERIFY2(recorder.messages.value(hang).contains(QLatin1String("0.5 s")),
                 qPrintable(recorder.messages.value(hang)));
        QVERIFY(!recorder.echo(hang).contains(QLatin1String("timeout_ms")));
        QCOMPARE(recorder.results.value(next).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QTRY_COMPARE(recorder.progress.last(), qMakePair(2, 2));
    }

    void cancelQueuedAndRunning()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1); // the others queue behind the hang
        Recorder recorder(*queue);
        const qint64 running = queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang"))), 60000);
        const qint64 queued = queue->submit(job(QStringLiteral("L1/1"), answer()));
        const qint64 last = queue->submit(job(QStringLiteral("L1/1"), answer()));
        QTRY_COMPARE(recorder.started, QList<qint64>{running});

        QVERIFY(queue->cancel(queued));
        QVERIFY(!queue->cancel(queued));
        QVERIFY(!recorder.failures.contains(queued)); // from the event loop, not from cancel()
        QTRY_COMPARE(recorder.failures.value(queued), wireName(EvaluationStatus::Cancelled));
        QVERIFY(recorder.messages.value(queued).contains(QLatin1String("before it started")));

        QTest::qWait(200); // let the hang reach the worker
        QVERIFY(queue->cancel(running));
        QVERIFY(recorder.waitForEnded(3));
        QCOMPARE(recorder.failures.value(running), wireName(EvaluationStatus::Cancelled));
        QCOMPARE(recorder.results.value(last).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QVERIFY(!recorder.started.contains(queued));
        QVERIFY(!queue->cancel(12345));
        QTRY_COMPARE(recorder.progress.last(), qMakePair(3, 3));
    }

    void cancelAll()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1); // the others queue behind the hang
        Recorder recorder(*queue);
        QList<qint64> ids;
        ids.append(queue->submit(job(QStringLiteral("L1/1"), answer(QStringLiteral("fake: hang")))));
        ids.append(queue->submit(job(QStringLiteral("L1/1"), answer())));
        ids.append(queue->submit(job(QStringLiteral("L1/1"), answer())));
        QTRY_COMPARE(recorder.started.size(), 1);
        QTest::qWait(200);
        queue->cancelAll();
        QVERIFY(recorder.waitForEnded(3));
        for (qint64 id : ids)
            QCOMPARE(recorder.failures.value(id), wireName(EvaluationStatus::Cancelled));
        QCOMPARE(queue->pendingCount(), 0);
    }

    void kernelFactsPastTheLineLimitAreLeftOutBeforeTheCubin()
    {
        auto queue = makeQueue({0}, 1);
        queue->setEvaluationsPerGpu(1);
        Recorder recorder(*queue);
        // The first job holds the GPU while the second compiles ahead. The second's answer (1 MiB of
        // prose) and its compile's 15 MiB of facts pass the request's line limit together; the
        // compile's answer, which echoes only the blocks, does not.
        const qint64 first = queue->submit(job(QStringLiteral("L1/1"), slowAnswerAfter(300)));
        const QString prose = QString(1 << 20, QLatin1Char('p'));
        const qint64 big =
            queue->submit(job(QStringLiteral("L1/1"), answer(prose + QStringLiteral(" kernel_facts_mib: 15"))));
        QVERIFY(recorder.waitForEnded(2));
        QCOMPARE(recorder.results.value(first).value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        const QJsonObject echo = recorder.echo(big);
        QVERIFY(echo.contains(QLatin1String("cubin_b64")));
        QVERIFY(!echo.contains(QLatin1String("cubin_kernel_facts")));
    }

    void refusedRequestIsJobFailure()
    {
        auto queue = makeQueue({0}, 0);
        Recorder recorder(*queue);
        // A request the worker cannot serve (here: too large for a line) is no verdict on a candidate.
        const qint64 id = queue->submit(job(QStringLiteral("L1/1"), QString(kMaxLineBytes, QLatin1Char('x'))));
        QVERIFY(recorder.waitForEnded(1));
        QCOMPARE(recorder.failures.value(id), wireName(EvaluationStatus::BadRequest));
    }

    void workersGetTheMinimalEnvironment()
    {
        // The queue's own default, not a test's: kwb's API key never reaches a GPU worker.
        qputenv("KWB_API_KEY", "sk-queue-secret");
        qputenv("FOO", "user variable");
        // Issue 14: the extension cache kwb is told of is the workers' (compile pool's and GPU's).
        const QString extensions = m_dir.filePath(QStringLiteral("extensions-from-kwb"));
        qputenv("KWB_EXTENSION_CACHE", extensions.toUtf8());
        // The broker the workers start inherits their environment: its switches reach it this way.
        qputenv("KWB_BEFORE_HEADER_NICE", "0");
        qputenv("KWB_BUILD_PREPARER", "0");
        const auto unset = qScopeGuard([] {
            qunsetenv("KWB_API_KEY");
            qunsetenv("FOO");
            qunsetenv("KWB_EXTENSION_CACHE");
            qunsetenv("KWB_BEFORE_HEADER_NICE");
            qunsetenv("KWB_BUILD_PREPARER");
        });
        EvaluationQueue queue(QList<int>{2});
        queue.setProgram(QStringLiteral(KWB_FAKEWORKER));
        QCOMPARE(queue.gpuSupervisors(0).size(), EvaluationQueue::kDefaultEvaluationsPerGpu);
        for (WorkerSupervisor* supervisor : queue.gpuSupervisors(0)) {
            const WorkerSupervisor::Outcome outcome =
                supervisor->run(QJsonObject{{QStringLiteral("type"), QStringLiteral("env")}}, 15000);
            QVERIFY2(outcome.hasResponse(), qPrintable(outcome.status + QLatin1String(": ") + outcome.message));
            // The fake worker's own answer: read by key here.
            const QJsonObject environment = outcome.response.raw.value(QLatin1String("environment")).toObject();
            QVERIFY(!environment.contains(QLatin1String("KWB_API_KEY")));
            QVERIFY(!environment.contains(QLatin1String("FOO")));
            QCOMPARE(environment.value(QLatin1String("PATH")).toString(), qEnvironmentVariable("PATH"));
            QCOMPARE(environment.value(QLatin1String("CUDA_VISIBLE_DEVICES")).toString(), QStringLiteral("2"));
            QCOMPARE(environment.value(QLatin1String("KWB_EXTENSION_CACHE")).toString(), extensions);
            QCOMPARE(environment.value(QLatin1String("KWB_BEFORE_HEADER_NICE")).toString(), QStringLiteral("0"));
            QCOMPARE(environment.value(QLatin1String("KWB_BUILD_PREPARER")).toString(), QStringLiteral("0"));
        }
    }

    void workerKilledFromOutsideIsAMachineFailure()
    {
        auto queue = makeQueue({0}, 0);
        Recorder recorder(*queue);
        const qint64 id = queue->submit(job(QStringLiteral("L1/1"), QStringLiteral("fake: sigkill")));
        QVERIFY(recorder.waitForEnded(1));
        QCOMPARE(recorder.failures.value(id), wireName(EvaluationStatus::WorkerLost));
    }
};

QTEST_GUILESS_MAIN(TestEvaluationQueue)
#include "tst_evaluationqueue.moc"
