// WorkerSupervisor against the fake worker (fakeworker.cpp): every way a worker can misbehave
// must end the request with the right status, and the next request must run on a good worker.
// Limits are short (hundreds of milliseconds) so the whole suite stays fast.

#include "core/workers/gpulease.h"
#include "core/workers/memorycgroup.h"
#include "core/workers/supervisortuning.h"
#include "core/workers/workerlauncher.h"
#include "core/workers/workersupervisor.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QScopeGuard>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

using namespace kwb;

namespace {

constexpr int kWaitMs = 15000; // generous: CI machines are slow and shared

struct Ending
{
    bool ended = false;
    bool hasResponse = false;
    QJsonObject response;
    QString status;
    QString message;
    QByteArray stderrTail;
    qint64 stderrDropped = -1;
    qint64 elapsedMs = 0;
};

// Waits for request `id` to end, through the supervisor's signals.
Ending waitForEnd(WorkerSupervisor& supervisor, qint64 id, int timeoutMs = kWaitMs)
{
    Ending ending;
    QElapsedTimer clock;
    clock.start();
    QObject context;
    QObject::connect(&supervisor, &WorkerSupervisor::responseAvailable, &context,
                     [&](qint64 doneId, const WorkerResponse& response) {
                         if (doneId != id)
                             return;
                         ending.ended = ending.hasResponse = true;
                         ending.response = response.raw; // the fake worker's answers: read by key here
                     });
    QObject::connect(&supervisor, &WorkerSupervisor::requestFailed, &context,
                     [&](qint64 doneId, const QString& status, const QString& message) {
                         if (doneId != id)
                             return;
                         ending.ended = true;
                         ending.status = status;
                         ending.message = message;
                     });
    QObject::connect(&supervisor, &WorkerSupervisor::stderrAvailable, &context,
                     [&](qint64 doneId, const QByteArray& tail, qint64 dropped) {
                         if (doneId != id)
                             return;
                         ending.stderrTail = tail;
                         ending.stderrDropped = dropped;
                     });
    (void)QTest::qWaitFor([&] { return ending.ended; }, timeoutMs); // callers check ending.ended
    ending.elapsedMs = clock.elapsed();
    return ending;
}

QJsonObject request(const QString& type, const QString& fakeMode = QString())
{
    QJsonObject object{{QStringLiteral("type"), type}};
    if (!fakeMode.isEmpty())
        object.insert(QStringLiteral("fake"), fakeMode);
    return object;
}

QJsonObject evaluate(const QString& fakeMode = QString(), const QJsonObject& fields = {})
{
    QJsonObject object = request(QStringLiteral("evaluate"), fakeMode);
    object.insert(QStringLiteral("task"), QStringLiteral("L1/1"));
    object.insert(QStringLiteral("answer"), QStringLiteral("```cuda\n```\n```python\n```"));
    for (auto it = fields.begin(); it != fields.end(); ++it)
        object.insert(it.key(), it.value());
    return object;
}

constexpr qint64 kMiB = qint64(1) << 20;

// Whether another process could take the GPU's quiet lock exclusively now (as a timing does).
bool quietLockFree(const QString& path)
{
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
}

// gpu_memory as kwb-worker's evaluate answers it, in GiB.
QJsonObject gpuMemory(double freeGiB, double totalGiB)
{
    return QJsonObject{{QStringLiteral("free_bytes"), freeGiB * 1024 * kMiB},
                       {QStringLiteral("total_bytes"), totalGiB * 1024 * kMiB}};
}

// A TCP listener on 127.0.0.1 (the kernel completes connections to it without accept()).
struct Listener
{
    int fd = -1;
    int port = 0;
    Listener()
    {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
            ::listen(fd, 16) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
            port = ntohs(address.sin_port);
    }
    ~Listener()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

qint64 pidOf(const Ending& ending)
{
    return ending.response.value(QLatin1String("pid")).toInteger();
}

// Gone and reaped, or dead and waiting for init to reap it: in the OS sandbox the worker is
// bwrap's child, and init's once bwrap has gone.
bool processGone(qint64 pid)
{
    if (::kill(pid_t(pid), 0) == -1)
        return true;
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return true;
    const QByteArray text = stat.readAll();
    const qsizetype close = text.lastIndexOf(')');
    return close > 0 && text.mid(close + 2, 1) == "Z";
}

bool touch(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly);
}

// The requests each fake worker read, in order ($FAKEWORKER_LOG): {"pid","type",…} per line.
QList<QJsonObject> loggedRequests(const QString& path)
{
    QList<QJsonObject> entries;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return entries;
    for (const QByteArray& line : file.readAll().split('\n'))
        if (!line.trimmed().isEmpty())
            entries.append(QJsonDocument::fromJson(line).object());
    return entries;
}

// The request types worker `pid` read, in order.
QStringList typesReadBy(const QString& log, qint64 pid)
{
    QStringList types;
    for (const QJsonObject& entry : loggedRequests(log))
        if (entry.value(QLatin1String("pid")).toInteger() == pid)
            types.append(entry.value(QLatin1String("type")).toString());
    return types;
}

// The pids of the workers that read a request of this type.
QList<qint64> readersOf(const QString& log, const QString& type)
{
    QList<qint64> pids;
    for (const QJsonObject& entry : loggedRequests(log))
        if (entry.value(QLatin1String("type")).toString() == type)
            pids.append(entry.value(QLatin1String("pid")).toInteger());
    return pids;
}

// The hello announced with workerAvailable for worker `pid` (raw empty: never announced).
HelloInfo helloOf(const QSignalSpy& available, qint64 pid)
{
    for (const QList<QVariant>& signal : available)
        if (signal.at(0).toLongLong() == pid)
            return signal.at(1).value<HelloInfo>();
    return {};
}

} // namespace

class TestWorkerSupervisor : public QObject
{
    Q_OBJECT

    std::unique_ptr<WorkerSupervisor>
    makeSupervisor(const QStringList& arguments = {},
                   WorkerSupervisor::Isolation isolation = WorkerSupervisor::Isolation::ReuseWhileHealthy)
    {
        auto supervisor = std::make_unique<WorkerSupervisor>();
        supervisor->setProgram(QStringLiteral(KWB_FAKEWORKER), arguments);
        supervisor->setIsolation(isolation);
        supervisor->setKillGracePeriod(500);
        // The spare tests are written for spares started one after another; the host's rule
        // (SupervisorTuning::spareStartsAtOnce()) would start them at once on a machine with many cores.
        SupervisorTuning::setSpareStartsAtOnce(*supervisor, false);
        // Outside the OS sandbox: these tests compare the pids the fake worker reports with the
        // supervisor's, and in the sandbox the worker is PID 1 of its own namespace. The
        // sandbox's own tests use makeSandboxedSupervisor().
        WorkerLimits unsandboxed;
        unsandboxed.osSandbox = false;
        supervisor->setLimits(unsandboxed);
        return supervisor;
    }

    std::unique_ptr<WorkerSupervisor> makeSandboxedSupervisor()
    {
        auto supervisor = makeSupervisor();
        supervisor->setLimits(WorkerLimits());
        return supervisor;
    }

    QTemporaryDir m_logs;

    // A supervisor whose fake workers log every request they read to `*log` (a new file), with
    // `extra` in their environment, outside the OS sandbox (quietLockIsPassedAndExistsBeforeStart
    // covers the sandbox).
    std::unique_ptr<WorkerSupervisor>
    makeLoggedSupervisor(QString* log, const QStringList& arguments = {},
                         WorkerSupervisor::Isolation isolation = WorkerSupervisor::Isolation::FreshPerRequest,
                         const QProcessEnvironment& extra = {})
    {
        static int count = 0;
        *log = m_logs.filePath(QStringLiteral("requests-%1-%2.jsonl").arg(QTest::currentTestFunction()).arg(++count));
        auto supervisor = makeSupervisor(arguments, isolation);
        WorkerLimits unsandboxed; // the log lies outside the sandbox's one writable folder
        unsandboxed.osSandbox = false;
        supervisor->setLimits(unsandboxed);
        QProcessEnvironment environment = workerEnvironment();
        for (const QString& name : extra.keys())
            environment.insert(name, extra.value(name));
        environment.insert(QStringLiteral("FAKEWORKER_LOG"), *log);
        supervisor->setProcessEnvironment(environment);
        return supervisor;
    }

    // A logged fresh-mode supervisor whose spares each warm until the test opens that spare's own
    // gate (touch(gateOf(pid))), settling idle after 100 ms; `tag` keeps the gate files apart.
    std::unique_ptr<WorkerSupervisor> makeGatedSupervisor(const QString& tag, QString* log,
                                                          std::function<QString(qint64)>* gateOf)
    {
        const QString gates = m_logs.filePath(QStringLiteral("gate-%1-%2").arg(tag));
        *gateOf = [gates](qint64 pid) { return gates.arg(pid); };
        QProcessEnvironment extra;
        extra.insert(QStringLiteral("FAKEWORKER_WARM_GATE"), gates.arg(QStringLiteral("{pid}")));
        auto supervisor = makeLoggedSupervisor(log, {}, WorkerSupervisor::Isolation::FreshPerRequest, extra);
        SupervisorTuning::setWarmIdleMs(*supervisor, 100);
        SupervisorTuning::setSpareCount(*supervisor, 2); // the tests using it are written for two
        return supervisor;
    }

    // The request after a failure must succeed, on a worker other than `previousPid`.
    void verifyFreshWorkerAnswers(WorkerSupervisor& supervisor, qint64 previousPid)
    {
        const Ending next = waitForEnd(supervisor, supervisor.sendRequest(evaluate()));
        QVERIFY2(next.hasResponse, qPrintable(next.status + QLatin1String(": ") + next.message));
        QCOMPARE(next.response.value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QVERIFY(pidOf(next) > 0);
        QVERIFY(pidOf(next) != previousPid);
    }

    // What runBackToBack saw: the answers, and the workers that had read `warm` when the last
    // answer came (the queue's end: from there the supervisor idles and may warm; a warm sent
    // before would have been read long ago).
    struct BackToBack
    {
        QList<QJsonObject> answers;
        QList<qint64> warmReadersAtEnd;
    };

    // A queue as EvaluationQueue runs it: the next evaluation (300 ms each, time for the spares to
    // answer hello) is sent one event-loop turn after the last answer, `count` in all.
    BackToBack runBackToBack(WorkerSupervisor& supervisor, const QString& log, int count)
    {
        BackToBack run;
        QList<QJsonObject>* answers = &run.answers;
        QList<qint64>* warmReadersAtEnd = &run.warmReadersAtEnd;
        QJsonObject slow = evaluate(QStringLiteral("slow"));
        slow.insert(QStringLiteral("delay_ms"), 300);
        QObject context;
        connect(&supervisor, &WorkerSupervisor::responseAvailable, &context,
                [&](qint64, const WorkerResponse& response) {
                    answers->append(response.raw);
                    if (answers->size() < count)
                        QMetaObject::invokeMethod(
                            &context, [&] { supervisor.sendRequest(slow); }, Qt::QueuedConnection);
                    else
                        *warmReadersAtEnd = readersOf(log, QStringLiteral("warm"));
                });
        connect(&supervisor, &WorkerSupervisor::requestFailed, &context,
                [](qint64, const QString& status, const QString& message) {
                    QFAIL(qPrintable(status + QLatin1String(": ") + message));
                });
        supervisor.sendRequest(slow);
        [&] { QTRY_COMPARE_WITH_TIMEOUT(answers->size(), count, kWaitMs); }();
        return run;
    }

private Q_SLOTS:
    void defaults()
    {
        WorkerSupervisor supervisor;
        QCOMPARE(supervisor.defaultTimeout(), 240 * 1000);
        QCOMPARE(WorkerSupervisor::kDefaultKillGraceMs, 2000);
        QCOMPARE(supervisor.stderrLimit(), qsizetype(1) << 20);
        QCOMPARE(supervisor.isolation(), WorkerSupervisor::Isolation::FreshPerRequest);
        QCOMPARE(supervisor.workerPid(), qint64(0));
        QCOMPARE(SupervisorTuning::spareCount(supervisor), SupervisorTuning::kDefaultSpareCount);
        QCOMPARE(SupervisorTuning::kDefaultSpareCount, 3);
        QCOMPARE(supervisor.liveSpareCount(), 0);
    }

    void answersAfterHandshake()
    {
        auto supervisor = makeSupervisor();
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        QSignalSpy started(supervisor.get(), &WorkerSupervisor::requestStarted);
        const qint64 id = supervisor->sendRequest(request(QStringLiteral("tasks")));
        const Ending ending = waitForEnd(*supervisor, id);
        QVERIFY(ending.hasResponse);
        QCOMPARE(ending.response.value(QLatin1String("id")).toInteger(), id);
        QCOMPARE(ending.response.value(QLatin1String("type")).toString(), QStringLiteral("tasks"));
        QCOMPARE(ending.response.value(QLatin1String("tasks")).toArray().size(), 2);
        QCOMPARE(started.size(), 1);
        QCOMPARE(started.first().first().toLongLong(), id);
        QCOMPARE(available.size(), 1);
        QCOMPARE(available.first().at(0).toLongLong(), pidOf(ending));
        QCOMPARE(available.first().at(1).value<HelloInfo>().protocol, std::optional<int>(1));
        QCOMPARE(supervisor->workerPid(), pidOf(ending));
        QVERIFY(ending.stderrTail.contains("served tasks"));
        QCOMPARE(ending.stderrDropped, qint64(0));
    }

    void requestsRunInOrder()
    {
        auto supervisor = makeSupervisor();
        QSignalSpy responses(supervisor.get(), &WorkerSupervisor::responseAvailable);
        const qint64 first = supervisor->sendRequest(request(QStringLiteral("tasks")));
        const qint64 second = supervisor->sendRequest(request(QStringLiteral("device")));
        const qint64 third = supervisor->sendRequest(request(QStringLiteral("analyze"), QString()));
        QCOMPARE(supervisor->pendingCount(), 3);
        QVERIFY(first < second && second < third);
        QTRY_COMPARE_WITH_TIMEOUT(responses.size(), 3, kWaitMs);
        QCOMPARE(responses.at(0).at(0).toLongLong(), first);
        QCOMPARE(responses.at(1).at(0).toLongLong(), second);
        QCOMPARE(responses.at(2).at(0).toLongLong(), third);
        // The worker refusing a request is a response, not a failure.
        const WorkerResponse refused = responses.at(2).at(1).value<WorkerResponse>();
        QVERIFY(!refused.ok());
        QCOMPARE(refused.header.errorCode, QStringLiteral("unknown_task"));
        QCOMPARE(supervisor->pendingCount(), 0);
    }

    void signalsNeverComeFromInsideSendRequest()
    {
        auto supervisor = makeSupervisor();
        QSignalSpy failed(supervisor.get(), &WorkerSupervisor::requestFailed);
        const qint64 id = supervisor->sendRequest(QJsonObject{{QStringLiteral("no_type"), 1}});
        QCOMPARE(failed.size(), 0);
        QTRY_COMPARE(failed.size(), 1);
        QCOMPARE(failed.first().at(0).toLongLong(), id);
        QCOMPARE(failed.first().at(1).toString(), wireName(EvaluationStatus::BadRequest));
    }

    void oversizedRequestIsRefused()
    {
        auto supervisor = makeSupervisor();
        QJsonObject big = evaluate();
        big.insert(QStringLiteral("answer"), QString(kMaxLineBytes, QLatin1Char('x')));
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(big));
        QCOMPARE(ending.status, wireName(EvaluationStatus::BadRequest));
        QVERIFY2(ending.message.contains(QLatin1String("line limit")), qPrintable(ending.message));
        QCOMPARE(supervisor->workerPid(), qint64(0)); // never reached a worker
    }

    void timeoutThenFreshWorker()
    {
        auto supervisor = makeSupervisor();
        const Ending warm = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY(warm.hasResponse);

        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("hang")), 500));
        QCOMPARE(ending.status, wireName(EvaluationStatus::Timeout));
        QVERIFY2(ending.message.contains(QLatin1String("wall-clock limit of 0.5 s")), qPrintable(ending.message));
        QVERIFY2(ending.message.contains(QLatin1String("terminated (SIGTERM)")), qPrintable(ending.message));
        QVERIFY2(ending.elapsedMs >= 500, qPrintable(QString::number(ending.elapsedMs)));
        QVERIFY2(ending.elapsedMs < 500 + 3000, qPrintable(QString::number(ending.elapsedMs)));
        verifyFreshWorkerAnswers(*supervisor, pidOf(warm));
    }

    void killAfterGraceWhenSigtermIgnored()
    {
        auto supervisor = makeSupervisor();
        supervisor->setKillGracePeriod(400);
        const Ending ending =
            waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("hang_ignore_term")), 300));
        QCOMPARE(ending.status, wireName(EvaluationStatus::Timeout));
        QVERIFY2(ending.message.contains(QLatin1String("SIGKILL")), qPrintable(ending.message));
        QVERIFY2(ending.message.contains(QLatin1String("after ignoring SIGTERM for 0.4 s")),
                 qPrintable(ending.message));
        QVERIFY2(ending.elapsedMs >= 700, qPrintable(QString::number(ending.elapsedMs)));
        verifyFreshWorkerAnswers(*supervisor, 0);
    }

    void crashIsReported_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("expected");
        QTest::newRow("abort") << QStringLiteral("abort")
                               << QStringLiteral("killed by signal %1 (SIGABRT)").arg(SIGABRT);
        QTest::newRow("segfault") << QStringLiteral("segv")
                                  << QStringLiteral("killed by signal %1 (SIGSEGV)").arg(SIGSEGV);
        QTest::newRow("exit mid-request") << QStringLiteral("exit") << QStringLiteral("exited with code 3");
    }

    void crashIsReported()
    {
        QFETCH(QString, mode);
        QFETCH(QString, expected);
        auto supervisor = makeSupervisor();
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        const Ending warm = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        QVERIFY(warm.hasResponse);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(mode)));
        QCOMPARE(ending.status, wireName(EvaluationStatus::Crashed));
        QVERIFY2(ending.message.contains(expected), qPrintable(ending.message));
        QVERIFY2(ending.message.contains(QLatin1String("during the request")), qPrintable(ending.message));
        QCOMPARE(finished.size(), 1);
        QCOMPARE(finished.first().at(0).toLongLong(), pidOf(warm));
        if (mode == QLatin1String("exit"))
            QVERIFY(ending.stderrTail.contains("leaving in the middle of a request"));
        verifyFreshWorkerAnswers(*supervisor, pidOf(warm));
    }

    void stderrFloodIsLimited()
    {
        auto supervisor = makeSupervisor();
        QJsonObject flood = evaluate(QStringLiteral("flood"));
        const qint64 floodBytes = qint64(6) << 20;
        flood.insert(QStringLiteral("flood_bytes"), floodBytes);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(flood, 10000));
        // The worker could write megabytes and still answer: the supervisor drains stderr as it comes.
        QVERIFY2(ending.hasResponse, qPrintable(ending.message));
        QVERIFY(ending.stderrTail.size() <= supervisor->stderrLimit());
        QVERIFY(ending.stderrTail.size() > supervisor->stderrLimit() / 2);
        QVERIFY(ending.stderrDropped >= floodBytes - supervisor->stderrLimit() - 65536);
        QVERIFY(ending.stderrTail.startsWith('e') || ending.stderrTail.startsWith('\n'));

        // A single read larger than the limit is cut too.
        supervisor->setStderrLimit(1000);
        flood.insert(QStringLiteral("flood_bytes"), 200000);
        const Ending small = waitForEnd(*supervisor, supervisor->sendRequest(flood, 10000));
        QVERIFY(small.hasResponse);
        QVERIFY(small.stderrTail.size() <= 1000);
        QVERIFY(small.stderrDropped > 0);
    }

    void brokenLineIsProtocolError_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("expected");
        QTest::newRow("not JSON") << QStringLiteral("broken") << QStringLiteral("broken response line");
        QTest::newRow("line over 16 MiB")
            << QStringLiteral("huge_line") << QStringLiteral("exceeds the limit of 16.0 MiB");
        QTest::newRow("unexpected id") << QStringLiteral("wrong_id") << QStringLiteral("unexpected id");
    }

    void brokenLineIsProtocolError()
    {
        QFETCH(QString, mode);
        QFETCH(QString, expected);
        auto supervisor = makeSupervisor();
        const Ending warm = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        QVERIFY(warm.hasResponse);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(mode)));
        QCOMPARE(ending.status, wireName(EvaluationStatus::ProtocolError));
        QVERIFY2(ending.message.contains(expected), qPrintable(ending.message));
        verifyFreshWorkerAnswers(*supervisor, pidOf(warm));
    }

    void unhealthyWorkerIsReplaced()
    {
        auto supervisor = makeSupervisor(); // reuse mode: only the health flag forces a new worker
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("unhealthy"))));
        QVERIFY2(ending.hasResponse, qPrintable(ending.message)); // answered, then exited: not a crash
        QCOMPARE(ending.response.value(QLatin1String("status")).toString(), QStringLiteral("runtime_error"));
        QCOMPARE(ending.response.value(QLatin1String("worker_healthy")).toBool(true), false);
        verifyFreshWorkerAnswers(*supervisor, pidOf(ending));
    }

    void isolationModes_data()
    {
        QTest::addColumn<WorkerSupervisor::Isolation>("isolation");
        QTest::addColumn<int>("distinctPids");
        QTest::newRow("reuse while healthy") << WorkerSupervisor::Isolation::ReuseWhileHealthy << 1;
        QTest::newRow("fresh per request") << WorkerSupervisor::Isolation::FreshPerRequest << 3;
    }

    void isolationModes()
    {
        QFETCH(WorkerSupervisor::Isolation, isolation);
        QFETCH(int, distinctPids);
        auto supervisor = makeSupervisor({}, isolation);
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        QSet<qint64> pids;
        for (int i = 0; i < 3; ++i) {
            const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
            QVERIFY2(ending.hasResponse, qPrintable(ending.message));
            pids.insert(pidOf(ending));
        }
        QCOMPARE(pids.size(), distinctPids);
        QCOMPARE(available.size(), distinctPids);
    }

    void freshModeReusesForCheapRequests()
    {
        // Only evaluate needs a clean process; hello, tasks, device and analyze share one.
        auto supervisor = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("device"))));
        const Ending evaluated = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        const Ending after = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        QVERIFY(first.hasResponse && second.hasResponse && evaluated.hasResponse && after.hasResponse);
        QCOMPARE(pidOf(second), pidOf(first));
        QCOMPARE(pidOf(evaluated), pidOf(first));
        QVERIFY(pidOf(after) != pidOf(evaluated));
    }

    void spareWorkerTakesOver()
    {
        // Every fake worker needs 500 ms for hello, like the real one loading libtorch.
        auto supervisor = makeSupervisor({QStringLiteral("--hello-delay"), QStringLiteral("500")},
                                         WorkerSupervisor::Isolation::FreshPerRequest);
        QVERIFY(supervisor->spareWorker());
        QJsonObject slow = evaluate(QStringLiteral("slow"));
        slow.insert(QStringLiteral("delay_ms"), 1000); // long enough for the spare to say hello
        const Ending cold = waitForEnd(*supervisor, supervisor->sendRequest(slow));
        QVERIFY2(cold.hasResponse, qPrintable(cold.message));
        QVERIFY2(cold.elapsedMs >= 500 + 1000, qPrintable(QString::number(cold.elapsedMs)));
        // Idle past the settle time: the spare warms.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        const qint64 sparePid = supervisor->spareWorkerPid();
        QVERIFY(sparePid > 0 && sparePid != pidOf(cold));

        const qint64 sentAtMs = QDateTime::currentMSecsSinceEpoch();
        const Ending warm = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(warm.hasResponse, qPrintable(warm.message));
        QCOMPARE(pidOf(warm), sparePid);
        QVERIFY(warm.response.value(QLatin1String("started_ms")).toInteger() < sentAtMs);
        // The spare was sent hello and warm, and nothing else, before the evaluation.
        QCOMPARE(warm.response.value(QLatin1String("requests_seen")).toInt(), 3);
        // No process start and no 500 ms hello: only the old worker's exit and one round trip.
        qInfo("cold start and 1000 ms evaluation: %lld ms; next request on the spare: %lld ms", cold.elapsedMs,
              warm.elapsedMs);
        QVERIFY2(warm.elapsedMs < 250, qPrintable(QString::number(warm.elapsedMs)));
    }

    // The next fresh worker starts its evaluation while the last one exits (its CUDA context's
    // teardown, ~0.15 s on an H200), where the device has room for both; the GPU's quiet lock is
    // held shared for the leaving worker, so no timing anywhere on that GPU overlaps its exit.
    void nextWorkerStartsWhileTheLastExits_data()
    {
        QTest::addColumn<QJsonValue>("memory");
        QTest::addColumn<bool>("handedOff");
        QTest::newRow("room for both") << QJsonValue(gpuMemory(100, 141)) << true;
        QTest::newRow("more used than free") << QJsonValue(gpuMemory(40, 141)) << false;
        QTest::newRow("free within a context of used") << QJsonValue(gpuMemory(70.8, 141)) << false;
        QTest::newRow("no gpu_memory (a CPU evaluation, an older worker)") << QJsonValue() << false;
    }

    void nextWorkerStartsWhileTheLastExits()
    {
        QFETCH(QJsonValue, memory);
        QFETCH(bool, handedOff);
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        supervisor->setKillGracePeriod(3000); // the exit's 1500 ms run to their end
        const QString lock = GpuLeases::quietLockPath(workerGpuKey(workerEnvironment()));
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        QJsonObject first = evaluate(QString(), QJsonObject{{QStringLiteral("fake_exit_delay_ms"), 1500}});
        if (!memory.isUndefined())
            first.insert(QStringLiteral("fake_gpu_memory"), memory);
        const Ending one = waitForEnd(*supervisor, supervisor->sendRequest(first));
        QVERIFY2(one.hasResponse, qPrintable(one.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        QElapsedTimer sinceAnswer;
        sinceAnswer.start();
        const bool lockFreeAtAnswer = quietLockFree(lock);
        const Ending two = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(two.hasResponse, qPrintable(two.message));
        QVERIFY(pidOf(two) != pidOf(one));
        const auto endedFirst = [&] {
            for (const QList<QVariant>& f : finished)
                if (f.at(0).toLongLong() == pidOf(one))
                    return true;
            return false;
        };
        qInfo("answer after the last one's: %lld ms (its exit takes 1500 ms)", sinceAnswer.elapsed());
        if (handedOff) {
            // Answered while the first still exits, which holds the lock shared meanwhile.
            QVERIFY2(sinceAnswer.elapsed() < 1000, qPrintable(QString::number(sinceAnswer.elapsed())));
            QVERIFY(!endedFirst());
            QVERIFY(!lockFreeAtAnswer);
            QVERIFY(!quietLockFree(lock));
            QTRY_VERIFY_WITH_TIMEOUT(endedFirst(), kWaitMs);
            QTRY_VERIFY_WITH_TIMEOUT(quietLockFree(lock), kWaitMs);
            QVERIFY(finished.first().at(1).toString() == QLatin1String("exited with code 0"));
        } else {
            // The second waited for the first to be gone, which held the lock shared as it exited too.
            QVERIFY2(sinceAnswer.elapsed() >= 1400, qPrintable(QString::number(sinceAnswer.elapsed())));
            QVERIFY(endedFirst());
            QVERIFY(!lockFreeAtAnswer);
        }
    }

    // A worker told to exit while a measurement holds the GPU's quiet lock (another slot's timing,
    // EvaluationQueue) waits, idle, for it: its EOF goes once the supervisor holds the lock shared,
    // held until it has ended, so its CUDA context's teardown never overlaps that timing. Handed off
    // (room on the device) the next request runs meanwhile; retired, it waits for the exit.
    void workerExitsOnlyOnceNoMeasurementHoldsTheGpu_data()
    {
        QTest::addColumn<QJsonValue>("memory");
        QTest::addColumn<bool>("handedOff");
        QTest::newRow("handed off") << QJsonValue(gpuMemory(100, 141)) << true;
        QTest::newRow("retired") << QJsonValue(gpuMemory(40, 141)) << false;
    }

    void workerExitsOnlyOnceNoMeasurementHoldsTheGpu()
    {
        QFETCH(QJsonValue, memory);
        QFETCH(bool, handedOff);
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        const QString lock = GpuLeases::quietLockPath(workerGpuKey(workerEnvironment()));
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        const auto ended = [&](qint64 pid) {
            for (const QList<QVariant>& f : finished)
                if (f.at(0).toLongLong() == pid)
                    return true;
            return false;
        };
        // Warm the supervisor up: the lock file exists once a worker has started.
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const int timing = ::open(QFile::encodeName(lock).constData(), O_RDONLY | O_CLOEXEC);
        QVERIFY(timing >= 0);
        const auto closeTiming = qScopeGuard([timing] { ::close(timing); });        // a failed check frees it too
        QTRY_VERIFY_WITH_TIMEOUT(::flock(timing, LOCK_EX | LOCK_NB) == 0, kWaitMs); // the first worker's exit ended
        const Ending one = waitForEnd(
            *supervisor,
            supervisor->sendRequest(evaluate(QString(), QJsonObject{{QStringLiteral("fake_gpu_memory"), memory}})));
        QVERIFY2(one.hasResponse, qPrintable(one.message));
        QCOMPARE(SupervisorTuning::handedOffWorkers(*supervisor), handedOff ? 1 : 0);
        QSignalSpy answered(supervisor.get(), &WorkerSupervisor::responseAvailable);
        const qint64 second = supervisor->sendRequest(evaluate());
        QTest::qWait(500);
        QVERIFY2(!ended(pidOf(one)), "the worker exited while the lock was held exclusively");
        if (handedOff)
            QTRY_COMPARE_WITH_TIMEOUT(answered.size(), 1, kWaitMs); // the next ran meanwhile
        else
            QCOMPARE(answered.size(), 0); // the next waits for the exit
        ::flock(timing, LOCK_UN);         // the timing ends
        QTRY_VERIFY_WITH_TIMEOUT(ended(pidOf(one)), kWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(answered.size(), 1, kWaitMs);
        QCOMPARE(answered.first().at(0).toLongLong(), second);
    }

    // The benchmark's comparison (setExitUnderLock(false)): a handed-off worker exits at once, the
    // lock held exclusively or not.
    void exitNotUnderLockEndsAHandedOffWorkerAtOnce()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        SupervisorTuning::setExitUnderLock(*supervisor, false);
        QVERIFY(!SupervisorTuning::exitUnderLock(*supervisor));
        const QString lock = GpuLeases::quietLockPath(workerGpuKey(workerEnvironment()));
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const int timing = ::open(QFile::encodeName(lock).constData(), O_RDONLY | O_CLOEXEC);
        QVERIFY(timing >= 0);
        const auto closeTiming = qScopeGuard([timing] { ::close(timing); });
        QTRY_VERIFY_WITH_TIMEOUT(::flock(timing, LOCK_EX | LOCK_NB) == 0, kWaitMs);
        const Ending one =
            waitForEnd(*supervisor,
                       supervisor->sendRequest(
                           evaluate(QString(), QJsonObject{{QStringLiteral("fake_gpu_memory"), gpuMemory(100, 141)}})));
        QVERIFY2(one.hasResponse, qPrintable(one.message));
        QCOMPARE(SupervisorTuning::handedOffWorkers(*supervisor), 1);
        const auto ended = [&] {
            for (const QList<QVariant>& f : finished)
                if (f.at(0).toLongLong() == pidOf(one))
                    return true;
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(ended(), kWaitMs); // while this test still holds the lock exclusively
        ::flock(timing, LOCK_UN);
    }

    // An evaluation beside a leaving worker that runs out of device memory may have failed for the
    // leaving worker's memory: the machine's doing. It runs again, alone, and only that answer counts.
    void outOfMemoryBesideALeavingWorkerRunsAgainAlone()
    {
        QString log;
        QProcessEnvironment extra;
        extra.insert(QStringLiteral("FAKEWORKER_ONCE"), m_logs.filePath(QStringLiteral("oom-once")));
        QFile::remove(m_logs.filePath(QStringLiteral("oom-once")));
        auto supervisor = makeLoggedSupervisor(&log, {}, WorkerSupervisor::Isolation::FreshPerRequest, extra);
        supervisor->setKillGracePeriod(3000);
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        const Ending one =
            waitForEnd(*supervisor,
                       supervisor->sendRequest(
                           evaluate(QString(), QJsonObject{{QStringLiteral("fake_exit_delay_ms"), 1000},
                                                           {QStringLiteral("fake_gpu_memory"), gpuMemory(100, 141)}})));
        QVERIFY2(one.hasResponse, qPrintable(one.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const Ending two = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("oom_once"))));
        QVERIFY2(two.hasResponse, qPrintable(two.message));
        QCOMPARE(two.response.value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        // Read by two workers (the first answer dropped), the second after the first worker had ended.
        const QList<qint64> readers = readersOf(log, QStringLiteral("evaluate"));
        QCOMPARE(readers.size(), 3);
        QCOMPARE(pidOf(two), readers.last());
        bool firstEnded = false;
        for (const QList<QVariant>& f : finished)
            firstEnded = firstEnded || f.at(0).toLongLong() == pidOf(one);
        QVERIFY(firstEnded);
        // Out of memory with no worker leaving is the candidate's answer.
        QFile::remove(m_logs.filePath(QStringLiteral("oom-once")));
        const Ending alone = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("oom_once"))));
        QVERIFY2(alone.hasResponse, qPrintable(alone.message));
        QCOMPARE(alone.response.value(QLatin1String("status")).toString(), QStringLiteral("runtime_error"));
    }

    void deadSpareIsReplacedLazily()
    {
        auto supervisor = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        SupervisorTuning::setSpareCount(*supervisor,
                                        1); // one spare, as before there were several: no other takes its place
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY(first.hasResponse);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const qint64 sparePid = supervisor->spareWorkerPid();
        QCOMPARE(::kill(pid_t(sparePid), SIGKILL), 0);
        QTRY_COMPARE_WITH_TIMEOUT(supervisor->spareWorkerPid(), qint64(0), kWaitMs);
        // The next request starts cold, and a new spare starts while it runs.
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.message));
        QVERIFY(pidOf(second) != sparePid && pidOf(second) != pidOf(first));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        for (const QList<QVariant>& ending : finished)
            QVERIFY(ending.first().toLongLong() != sparePid); // a spare that never served is not announced
    }

    void spareOnlyWhereWanted()
    {
        // Reuse mode keeps its worker; cheap requests never retire one; the option turns it off.
        auto reuse = makeSupervisor();
        QVERIFY(waitForEnd(*reuse, reuse->sendRequest(evaluate())).hasResponse);
        auto cheap = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        QVERIFY(waitForEnd(*cheap, cheap->sendRequest(request(QStringLiteral("tasks")))).hasResponse);
        auto off = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        off->setSpareWorker(false);
        QVERIFY(waitForEnd(*off, off->sendRequest(evaluate())).hasResponse);
        auto none = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        SupervisorTuning::setSpareCount(*none, 0);
        QVERIFY(waitForEnd(*none, none->sendRequest(evaluate())).hasResponse);
        QTest::qWait(200);
        for (WorkerSupervisor* supervisor : {reuse.get(), cheap.get(), off.get(), none.get()}) {
            QCOMPARE(supervisor->spareWorkerPid(), qint64(0));
            QCOMPARE(supervisor->liveSpareCount(), 0);
        }
    }

    // --- several spares, started one after another (docs/decisions.md, 2026-12-01) ---------------

    void twoSparesStartOneAfterTheOther()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        SupervisorTuning::setSpareCount(*supervisor, 2);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == 2 && !supervisor->spareWorkerPids().contains(0),
                                 kWaitMs);
        const QList<qint64> pids = supervisor->spareWorkerPids();
        QVERIFY(pids.at(0) != pidOf(first) && pids.at(1) != pidOf(first));
        // Idle: both are warmed, in time.
        for (const qint64 pid : pids)
            QTRY_COMPARE_WITH_TIMEOUT(typesReadBy(log, pid),
                                      (QStringList{QStringLiteral("hello"), QStringLiteral("warm")}), kWaitMs);
        // Staggered: the second started once the first had answered hello, so its hello comes after
        // the first's in the log.
        QList<qint64> order;
        for (const QJsonObject& entry : loggedRequests(log))
            order.append(entry.value(QLatin1String("pid")).toInteger());
        QVERIFY(order.indexOf(pids.at(0)) < order.indexOf(pids.at(1)));
        // The older one, warmed, is the next to take over; the other stays for the request after.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        QCOMPARE(supervisor->spareWorkerPid(), pids.at(0));
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.message));
        QCOMPARE(pidOf(second), pids.at(0));
        QVERIFY(supervisor->spareWorkerPids().contains(pids.at(1)));
        // Warmed before a third spare (started with that evaluation), which is not yet.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed() && supervisor->spareWorkerPid() == pids.at(1),
                                 kWaitMs);
        const Ending third = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(third.hasResponse, qPrintable(third.message));
        QCOMPARE(pidOf(third), pids.at(1));
        QCOMPARE(third.response.value(QLatin1String("requests_seen")).toInt(), 3); // hello, warm, evaluate
    }

    void sparesStartAtOnceWhereTheHostHasTheCores()
    {
        WorkerSupervisor supervisor;
        const int cores = QThread::idealThreadCount();
        for (const int count : {1, 3, cores, cores - 1, cores - 2}) {
            if (count < 0)
                continue;
            SupervisorTuning::setSpareCount(supervisor, count);
            // one core for each starting spare, and two more (the evaluation, the compile-ahead)
            QCOMPARE(SupervisorTuning::spareStartsAtOnce(supervisor), cores >= count + 2);
        }
        SupervisorTuning::setSpareCount(supervisor,
                                        cores); // the rule says one after another here; the setter overrides it
        SupervisorTuning::setSpareStartsAtOnce(supervisor, true);
        QVERIFY(SupervisorTuning::spareStartsAtOnce(supervisor));
        SupervisorTuning::setSpareCount(supervisor, 1);
        SupervisorTuning::setSpareStartsAtOnce(supervisor, false);
        QVERIFY(!SupervisorTuning::spareStartsAtOnce(supervisor));
    }

    void sparesStartAtOnceOnlyWhenAsked()
    {
        for (const bool atOnce : {false, true}) {
            QString log;
            auto supervisor = makeLoggedSupervisor(&log);
            SupervisorTuning::setSpareCount(*supervisor, 3);
            SupervisorTuning::setSpareStartsAtOnce(*supervisor, atOnce);
            const qint64 id = supervisor->sendRequest(evaluate());
            // The evaluation's arrival tops up: one spare (staggered), or all three at once.
            QCOMPARE(supervisor->liveSpareCount(), atOnce ? 3 : 1);
            QVERIFY(waitForEnd(*supervisor, id).hasResponse);
            QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == 3 && !supervisor->spareWorkerPids().contains(0),
                                     kWaitMs);
            const QList<qint64> pids = supervisor->spareWorkerPids();
            QCOMPARE(QSet<qint64>(pids.cbegin(), pids.cend()).size(), 3);
        }
    }

    void oneSpareIsOneSpare()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        SupervisorTuning::setSpareCount(*supervisor, 1);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        // A second one would start the moment the first is ready.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        QCOMPARE(supervisor->liveSpareCount(), 1);
        const qint64 sparePid = supervisor->spareWorkerPid();
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QCOMPARE(pidOf(second), sparePid);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        QCOMPARE(supervisor->liveSpareCount(), 1);
        QCOMPARE(readersOf(log, QStringLiteral("hello")).size(), 3); // cold, spare, its successor
    }

    void readySpareServesWhileAnotherWarms()
    {
        // Each spare warms until the test opens its own gate.
        QString log;
        std::function<QString(qint64)> gateOf;
        auto supervisor = makeGatedSupervisor(QStringLiteral("ready"), &log, &gateOf);
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        // Idle: the older spare A is warmed (and stays warming); the younger B answers hello and
        // is ready, not warmed: one warm at a time.
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")).size(), 1, kWaitMs);
        const qint64 a = readersOf(log, QStringLiteral("warm")).first();
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const qint64 b = supervisor->spareWorkerPid();
        QVERIFY(b != a && b > 0);
        QCOMPARE(supervisor->spareWorkerPids(), (QList<qint64>{a, b}));
        QVERIFY(!supervisor->spareWorkerWarmed());
        QTest::qWait(3 * SupervisorTuning::warmIdleMs(*supervisor)); // past its settle time, still idle
        QCOMPARE(readersOf(log, QStringLiteral("warm")), QList<qint64>{a});

        // A request now: the ready B serves at once, unwarmed, rather than waiting for A's warm.
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.status + QLatin1String(": ") + second.message));
        QCOMPARE(pidOf(second), b);
        QCOMPARE(typesReadBy(log, b), (QStringList{QStringLiteral("hello"), QStringLiteral("evaluate")}));
        QVERIFY(!helloOf(available, b).raw.isEmpty());
        QVERIFY(!helloOf(available, b).warmed());
        QVERIFY(supervisor->spareWorkerPids().contains(a));

        // A answers warm: the next ready spare C (started with B's evaluation) is warmed after it.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == 2 && !supervisor->spareWorkerPids().contains(0),
                                 kWaitMs);
        const qint64 c = supervisor->spareWorkerPids().at(1);
        QVERIFY(touch(gateOf(c))); // C's own warm answers at once
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady() && supervisor->spareWorkerPid() == c, kWaitMs);
        QTest::qWait(3 * SupervisorTuning::warmIdleMs(*supervisor));
        QCOMPARE(readersOf(log, QStringLiteral("warm")), QList<qint64>{a}); // not while A warms
        QVERIFY(touch(gateOf(a)));
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")), (QList<qint64>{a, c}), kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed() && supervisor->spareWorkerPid() == a, kWaitMs);
        const Ending third = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(third.hasResponse, qPrintable(third.message));
        QCOMPARE(pidOf(third), a);
        QVERIFY(helloOf(available, a).warmed());
    }

    // --- spares warm only when the supervisor idles (docs/decisions.md, 2026-12-01 addition) ------

    void backToBackQueueNeverWarms()
    {
        // A back-to-back queue (runBackToBack) with the supervisor's defaults: no spare warms.
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        QCOMPARE(SupervisorTuning::warmIdleMs(*supervisor), SupervisorTuning::kWarmIdleMs);
        SupervisorTuning::setSpareCount(*supervisor, 2); // the mechanics below are written for two
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        constexpr int kCount = 3;
        const auto [answers, warmReadersAtEnd] = runBackToBack(*supervisor, log, kCount);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(warmReadersAtEnd.isEmpty());
        // The second and the third were served by spares, which had answered hello only.
        QList<qint64> pids;
        for (const QJsonObject& answer : answers)
            pids.append(answer.value(QLatin1String("pid")).toInteger());
        QCOMPARE(QSet<qint64>(pids.cbegin(), pids.cend()).size(), kCount);
        for (int i = 1; i < kCount; ++i) {
            QCOMPARE(typesReadBy(log, pids.at(i)), (QStringList{QStringLiteral("hello"), QStringLiteral("evaluate")}));
            QCOMPARE(answers.at(i).value(QLatin1String("requests_seen")).toInt(), 2);
            QVERIFY(!helloOf(available, pids.at(i)).warmed());
        }
    }

    void warmWhileBusyWarmsDuringABackToBackQueue()
    {
        // setWarmWhileBusy(): the same back-to-back queue, but each spare is sent warm as soon as
        // it answers hello, while the evaluation runs; the next request then takes a warmed spare.
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        supervisor->setWarmWhileBusy(true);
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        constexpr int kCount = 3;
        const auto [answers, warmReadersAtEnd] = runBackToBack(*supervisor, log, kCount);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(!warmReadersAtEnd.isEmpty()); // warmed while the queue ran, not after it
        for (int i = 1; i < kCount; ++i) {
            const qint64 pid = answers.at(i).value(QLatin1String("pid")).toInteger();
            QCOMPARE(typesReadBy(log, pid),
                     (QStringList{QStringLiteral("hello"), QStringLiteral("warm"), QStringLiteral("evaluate")}));
            QVERIFY(helloOf(available, pid).warmed());
        }
    }

    void theFirstSpareStartsWhenTheFirstEvaluationIsQueued()
    {
        // Not once the worker taking it has answered hello and been sent it: beside that worker.
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        const qint64 deviceId = supervisor->sendRequest(request(QStringLiteral("device")));
        QCOMPARE(supervisor->liveSpareCount(), 0); // not for a device request
        const qint64 id = supervisor->sendRequest(evaluate());
        QCOMPARE(supervisor->liveSpareCount(), 1);
        QVERIFY(waitForEnd(*supervisor, deviceId).hasResponse);
        const Ending first = waitForEnd(*supervisor, id);
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QVERIFY(!supervisor->spareWorkerPids().contains(pidOf(first))); // the spare is not the one that ran it
        QTRY_COMPARE_WITH_TIMEOUT(supervisor->liveSpareCount(), SupervisorTuning::spareCount(*supervisor), kWaitMs);
    }

    void warmWhileBusyWarmsEverySpareAtOnce()
    {
        // Each spare's warm answers only when the test opens its gate: with setWarmWhileBusy()
        // both spares are sent warm while neither has answered (idle, one at a time: the test
        // above and readySpareServesWhileAnotherWarms).
        QString log;
        std::function<QString(qint64)> gateOf;
        auto supervisor = makeGatedSupervisor(QStringLiteral("busy"), &log, &gateOf);
        supervisor->setWarmWhileBusy(true);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")).size(), 2, kWaitMs);
        const QList<qint64> warming = readersOf(log, QStringLiteral("warm"));
        const QList<qint64> spares = supervisor->spareWorkerPids();
        QCOMPARE(QSet<qint64>(warming.cbegin(), warming.cend()), QSet<qint64>(spares.cbegin(), spares.cend()));
        QVERIFY(!supervisor->spareWorkerWarmed());
        for (const qint64 pid : warming)
            QVERIFY(touch(gateOf(pid)));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        const Ending next = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(next.hasResponse, qPrintable(next.message));
        QVERIFY(warming.contains(pidOf(next)));
    }

    void idleSparesWarmOneAfterAnother()
    {
        // After an idle gap longer than the settle time the ready spares are warmed, the second
        // only once the first has answered, and the next request gets a warmed one.
        QString log;
        std::function<QString(qint64)> gateOf;
        auto supervisor = makeGatedSupervisor(QStringLiteral("idle"), &log, &gateOf);
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == 2 && !supervisor->spareWorkerPids().contains(0),
                                 kWaitMs);
        const QList<qint64> spares = supervisor->spareWorkerPids();
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")), QList<qint64>{spares.at(0)}, kWaitMs);
        // The second is ready (it answered hello) but waits for the first's warm answer.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady() && supervisor->spareWorkerPid() == spares.at(1),
                                 kWaitMs);
        QTest::qWait(3 * SupervisorTuning::warmIdleMs(*supervisor));
        QCOMPARE(readersOf(log, QStringLiteral("warm")), QList<qint64>{spares.at(0)});
        QVERIFY(touch(gateOf(spares.at(0))));
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")), spares, kWaitMs);
        QVERIFY(touch(gateOf(spares.at(1))));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        QCOMPARE(supervisor->spareWorkerPid(), spares.at(0));

        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.message));
        QCOMPARE(pidOf(second), spares.at(0));
        QCOMPARE(second.response.value(QLatin1String("requests_seen")).toInt(), 3); // hello, warm, evaluate
        QVERIFY(helloOf(available, spares.at(0)).warmed());
    }

    void stopWorkerEndsEverySpare()
    {
        auto supervisor = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_COMPARE_WITH_TIMEOUT(supervisor->liveSpareCount(), 2, kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(!supervisor->spareWorkerPids().contains(0), kWaitMs);
        const QList<qint64> pids = supervisor->spareWorkerPids();
        // Fewer: the younger goes.
        SupervisorTuning::setSpareCount(*supervisor, 1);
        QCOMPARE(supervisor->spareWorkerPids(), QList<qint64>{pids.at(0)});
        QTRY_VERIFY_WITH_TIMEOUT(processGone(pids.at(1)), kWaitMs);
        SupervisorTuning::setSpareCount(*supervisor, 2);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_COMPARE_WITH_TIMEOUT(supervisor->liveSpareCount(), 2, kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(!supervisor->spareWorkerPids().contains(0), kWaitMs);
        const QList<qint64> again = supervisor->spareWorkerPids();
        supervisor->stopWorker();
        QCOMPARE(supervisor->liveSpareCount(), 0);
        for (const qint64 pid : again)
            QTRY_VERIFY_WITH_TIMEOUT(processGone(pid), kWaitMs);
    }

    void spareEndsWithSupervisor()
    {
        auto supervisor = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_COMPARE_WITH_TIMEOUT(supervisor->liveSpareCount(), 2, kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(!supervisor->spareWorkerPids().contains(0), kWaitMs);
        const QList<qint64> pids = supervisor->spareWorkerPids();
        supervisor.reset();
        for (const qint64 pid : pids)
            QTRY_VERIFY_WITH_TIMEOUT(processGone(pid), 2000);
    }

    // --- the spare's warm-up and the GPU's quiet lock (docs/decisions.md, 2026-12-01) -------------

    void spareWarmsBeforeTakingOver()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        QVERIFY(SupervisorTuning::warmSpare(*supervisor));
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        // Idle past the settle time: warmed.
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        const qint64 sparePid = supervisor->spareWorkerPid();
        // hello, then warm once the supervisor idled.
        QCOMPARE(typesReadBy(log, sparePid), (QStringList{QStringLiteral("hello"), QStringLiteral("warm")}));
        QVERIFY(helloOf(available, sparePid).raw.isEmpty()); // announced when it takes over

        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.message));
        QCOMPARE(pidOf(second), sparePid);
        QCOMPARE(typesReadBy(log, sparePid),
                 (QStringList{QStringLiteral("hello"), QStringLiteral("warm"), QStringLiteral("evaluate")}));
        // The warm answer's timings come with the hello it takes over with.
        const HelloInfo hello = helloOf(available, sparePid);
        QCOMPARE(hello.raw.value(QLatin1String("type")).toString(), QStringLiteral("hello"));
        QVERIFY(hello.warmMs);
        for (const char* part : {"quiet_wait", "context", "cublas", "cudnn", "evaluator", "total"})
            QVERIFY2(hello.warmMs->contains(QLatin1String(part)), part);
        // A cold worker is not warmed: its own evaluation pays that.
        QCOMPARE(typesReadBy(log, pidOf(first)), (QStringList{QStringLiteral("hello"), QStringLiteral("evaluate")}));
        QVERIFY(!helloOf(available, pidOf(first)).warmed());
        // The warm asked nothing of the embedded Python (setWarmPython is off by default).
        QVERIFY(!supervisor->warmPython());
        for (const QJsonObject& entry : loggedRequests(log))
            if (entry.value(QLatin1String("type")).toString() == QLatin1String("warm"))
                QVERIFY(!entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("python")));
    }

    void warmStartsThePythonWhenAsked()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        supervisor->setWarmPython(true); // EvaluationQueue's, at a KernelBench-format job
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        int warms = 0;
        for (const QJsonObject& entry : loggedRequests(log)) {
            if (entry.value(QLatin1String("type")).toString() != QLatin1String("warm"))
                continue;
            ++warms;
            QVERIFY(entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("python")));
        }
        QVERIFY(warms >= 1);
    }

    void requestWaitsForAWarmingSpare()
    {
        // The spare's warm-up lasts until the test opens its gate.
        const QString gate = m_logs.filePath(QStringLiteral("warm-gate-waits"));
        QProcessEnvironment extra;
        extra.insert(QStringLiteral("FAKEWORKER_WARM_GATE"), gate);
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {}, WorkerSupervisor::Isolation::FreshPerRequest, extra);
        SupervisorTuning::setSpareCount(*supervisor, 1); // no ready spare to take the request first
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        QSignalSpy finished(supervisor.get(), &WorkerSupervisor::workerFinished);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")).size(), 1, kWaitMs);
        const qint64 sparePid = readersOf(log, QStringLiteral("warm")).first();
        QVERIFY(sparePid != pidOf(first));
        QVERIFY(!supervisor->spareWorkerReady());

        // The old worker goes, the warming spare is taken over, and the request waits for warm.
        const qint64 id = supervisor->sendRequest(evaluate());
        QTRY_VERIFY_WITH_TIMEOUT(finished.size() >= 1, kWaitMs);
        QCOMPARE(finished.first().first().toLongLong(), pidOf(first));
        QTRY_COMPARE_WITH_TIMEOUT(supervisor->workerPid(), sparePid, kWaitMs);
        QTest::qWait(200); // time to write the request too early, had it been written
        QCOMPARE(typesReadBy(log, sparePid), (QStringList{QStringLiteral("hello"), QStringLiteral("warm")}));
        QVERIFY(helloOf(available, sparePid).raw.isEmpty());
        QVERIFY(touch(gate));
        const Ending second = waitForEnd(*supervisor, id);
        QVERIFY2(second.hasResponse, qPrintable(second.status + QLatin1String(": ") + second.message));
        QCOMPARE(second.response.value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QCOMPARE(pidOf(second), sparePid);
        QCOMPARE(second.response.value(QLatin1String("requests_seen")).toInt(), 3); // hello, warm, evaluate
        QVERIFY(helloOf(available, sparePid).warmed());
    }

    void olderWorkerWithoutWarmIsStillUsed()
    {
        // An older worker answers warm with unknown_type: not warm, still a good spare.
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {QStringLiteral("--warm"), QStringLiteral("unknown_type")});
        SupervisorTuning::setSpareCount(*supervisor, 1); // the one that was sent warm serves, answered or not
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")).size(), 1, kWaitMs); // idle: sent warm
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const qint64 sparePid = supervisor->spareWorkerPid();
        QCOMPARE(typesReadBy(log, sparePid), (QStringList{QStringLiteral("hello"), QStringLiteral("warm")}));
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.message));
        QCOMPARE(pidOf(second), sparePid);
        const HelloInfo hello = helloOf(available, sparePid);
        QVERIFY(!hello.raw.isEmpty());
        QVERIFY(!hello.warmed());
    }

    void badWarmAnswerDropsTheSpare_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<bool>("takenOver"); // the answer comes once the spare has taken over
        for (const char* mode : {"garbage", "fail"}) {
            QTest::addRow("%s before it takes over", mode) << QString::fromLatin1(mode) << false;
            QTest::addRow("%s after it took over", mode) << QString::fromLatin1(mode) << true;
        }
    }

    void badWarmAnswerDropsTheSpare()
    {
        QFETCH(QString, mode);
        QFETCH(bool, takenOver);
        const QString gate = m_logs.filePath(QStringLiteral("warm-gate-%1-%2").arg(mode).arg(takenOver));
        QProcessEnvironment extra;
        extra.insert(QStringLiteral("FAKEWORKER_WARM_GATE"), gate);
        if (!takenOver)
            QVERIFY(touch(gate)); // answered at once
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {QStringLiteral("--warm"), mode},
                                               WorkerSupervisor::Isolation::FreshPerRequest, extra);
        SupervisorTuning::setSpareCount(*supervisor, 1); // no other spare to serve instead of a cold worker
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QTRY_COMPARE_WITH_TIMEOUT(readersOf(log, QStringLiteral("warm")).size(), 1, kWaitMs);
        const qint64 sparePid = readersOf(log, QStringLiteral("warm")).first();
        qint64 id = 0;
        if (takenOver) {
            id = supervisor->sendRequest(evaluate());
            QTRY_COMPARE_WITH_TIMEOUT(supervisor->workerPid(), sparePid, kWaitMs);
            QVERIFY(touch(gate));
        } else {
            QTRY_COMPARE_WITH_TIMEOUT(supervisor->spareWorkerPid(), qint64(0), kWaitMs); // dropped
            id = supervisor->sendRequest(evaluate());
        }
        // The request gets a cold worker and is answered.
        const Ending second = waitForEnd(*supervisor, id);
        QVERIFY2(second.hasResponse, qPrintable(second.status + QLatin1String(": ") + second.message));
        QCOMPARE(second.response.value(QLatin1String("status")).toString(), QStringLiteral("correct"));
        QVERIFY(pidOf(second) != sparePid && pidOf(second) != pidOf(first));
        QCOMPARE(typesReadBy(log, pidOf(second)), (QStringList{QStringLiteral("hello"), QStringLiteral("evaluate")}));
        QVERIFY(helloOf(available, sparePid).raw.isEmpty()); // never announced
        QTRY_VERIFY_WITH_TIMEOUT(processGone(sparePid), kWaitMs);
    }

    void quietLockIsPassedAndExistsBeforeStart_data()
    {
        QTest::addColumn<bool>("sandbox");
        QTest::addColumn<bool>("fresh");
        QTest::addColumn<bool>("lockDirInDevShm"); // a folder the sandbox replaces with its own
        QTest::newRow("sandbox, fresh") << true << true << false;
        QTest::newRow("sandbox, reuse") << true << false << false;
        QTest::newRow("no sandbox, fresh") << false << true << false;
        QTest::newRow("no sandbox, reuse") << false << false << false;
        QTest::newRow("sandbox, lock directory in /dev/shm") << true << true << true;
    }

    void quietLockIsPassedAndExistsBeforeStart()
    {
        QFETCH(bool, sandbox);
        QFETCH(bool, fresh);
        QFETCH(bool, lockDirInDevShm);
        std::unique_ptr<QTemporaryDir> shm;
        const bool wasSet = qEnvironmentVariableIsSet("KWB_GPU_LOCK_DIR");
        const QByteArray savedDir = qgetenv("KWB_GPU_LOCK_DIR");
        const auto restore = qScopeGuard([wasSet, savedDir] {
            if (wasSet)
                qputenv("KWB_GPU_LOCK_DIR", savedDir);
            else
                qunsetenv("KWB_GPU_LOCK_DIR");
        });
        if (lockDirInDevShm) {
            shm = std::make_unique<QTemporaryDir>(QStringLiteral("/dev/shm/kwb-test-locks-XXXXXX"));
            if (!shm->isValid())
                QSKIP("no /dev/shm here");
            qputenv("KWB_GPU_LOCK_DIR", QFile::encodeName(shm->path()));
        }
        auto supervisor = makeSupervisor({}, fresh ? WorkerSupervisor::Isolation::FreshPerRequest
                                                   : WorkerSupervisor::Isolation::ReuseWhileHealthy);
        WorkerLimits limits;
        limits.osSandbox = sandbox;
        supervisor->setLimits(limits);
        if (sandbox && supervisor->sandboxStatus() != kSandboxBubblewrap)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + supervisor->sandboxStatus()));
        // The GPU this worker sees (the test's environment: its CUDA ordinal 0), its lock file not
        // there yet: the supervisor makes it before the start.
        const QString key = workerGpuKey(workerEnvironment());
        QVERIFY(!key.isEmpty());
        const QString path = GpuLeases::quietLockPath(key);
        QVERIFY2(path.startsWith(GpuLeases::lockDirectory() + QLatin1Char('/')), qPrintable(path));
        QVERIFY(path.endsWith(QLatin1String(".quiet")));
        QFile::remove(path);
        QFile::remove(GpuLeases::quietIntentPath(path));
        QFile::remove(GpuLeases::quietTurnPath(path));
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(ending.hasResponse, qPrintable(ending.status + QLatin1String(": ") + ending.message));
        // The worker opened it read-only at its start (in the sandbox: bound on its own, read-only).
        // In the sandbox the worker's own pid is 1 (its namespace's): the hello is the first one.
        QVERIFY(!available.isEmpty());
        const QJsonObject hello =
            sandbox ? available.first().at(1).value<HelloInfo>().raw : helloOf(available, pidOf(ending)).raw;
        QCOMPARE(hello.value(QLatin1String("gpu_quiet_lock")).toString(), path);
        QVERIFY(hello.value(QLatin1String("gpu_quiet_lock_writers_first")).toBool()); // its intent file reached it
        QVERIFY(hello.value(QLatin1String("gpu_quiet_lock_turns")).toBool());         // its turn file too
        QVERIFY2(!hello.contains(QLatin1String("gpu_quiet_lock_error")),
                 qPrintable(hello.value(QLatin1String("gpu_quiet_lock_error")).toString()));
        QFileInfo file(path);
        QVERIFY(file.exists());
        QCOMPARE(file.size(), qint64(0));
        // Its writers-first gate beside it (src/worker/measure/gpuquietlock.h), made with it.
        const QFileInfo intent(GpuLeases::quietIntentPath(path));
        QVERIFY(intent.exists());
        QCOMPARE(intent.permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther), QFileDevice::Permissions());
        // The evaluations' turn beside it, made with it.
        const QFileInfo turn(GpuLeases::quietTurnPath(path));
        QVERIFY(turn.exists());
        QCOMPARE(turn.permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther), QFileDevice::Permissions());
        QCOMPARE(file.permissions() & (QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                                       QFileDevice::WriteGroup | QFileDevice::ReadOther | QFileDevice::WriteOther),
                 QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        if (fresh) { // the spare has it too
            QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
            const qint64 sparePid = supervisor->spareWorkerPid();
            const Ending next = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
            QVERIFY(next.hasResponse);
            if (!sandbox) // in the sandbox every worker is its own namespace's PID 1
                QCOMPARE(pidOf(next), sparePid);
            QCOMPARE(helloOf(available, sparePid).raw.value(QLatin1String("gpu_quiet_lock")).toString(), path);
        }
    }

    void reuseModeHasTheLockButNoSpareAndNoWarm()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {}, WorkerSupervisor::Isolation::ReuseWhileHealthy);
        for (int i = 0; i < 3; ++i) {
            const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
            QVERIFY2(ending.hasResponse, qPrintable(ending.message));
        }
        QTest::qWait(200);
        QCOMPARE(supervisor->spareWorkerPid(), qint64(0));
        QCOMPARE(supervisor->liveSpareCount(), 0);
        QCOMPARE(readersOf(log, QStringLiteral("hello")).size(), 1);
        QVERIFY(readersOf(log, QStringLiteral("warm")).isEmpty());
        // Its timings too wait for another kwb's warming spare on this GPU.
        QCOMPARE(supervisor->workerHello().quietLock, GpuLeases::quietLockPath(workerGpuKey(workerEnvironment())));
    }

    void warmSpareOff()
    {
        QString log;
        auto supervisor = makeLoggedSupervisor(&log);
        SupervisorTuning::setWarmSpare(*supervisor, false);
        QVERIFY(!SupervisorTuning::warmSpare(*supervisor));
        SupervisorTuning::setWarmIdleMs(*supervisor, 50);
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == 2 && supervisor->spareWorkerReady(), kWaitMs);
        QTest::qWait(10 *
                     SupervisorTuning::warmIdleMs(*supervisor)); // idle, well past the settle time: still never warmed
        QVERIFY(readersOf(log, QStringLiteral("warm")).isEmpty());
        const qint64 sparePid = supervisor->spareWorkerPid();
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY(second.hasResponse);
        QCOMPARE(pidOf(second), sparePid);
        QCOMPARE(typesReadBy(log, sparePid), (QStringList{QStringLiteral("hello"), QStringLiteral("evaluate")}));
        QVERIFY(readersOf(log, QStringLiteral("warm")).isEmpty());
        QVERIFY(!helloOf(available, sparePid).warmed());
        // The quiet lock still goes with it: the worker's own timing takes it.
        QVERIFY(helloOf(available, sparePid).raw.value(QLatin1String("gpu_quiet_lock")).isString());
    }

    void workerWithoutTheLockIsNotWarmed()
    {
        // A worker that sees no GPU (CUDA_VISIBLE_DEVICES set and empty) gets no lock; a worker
        // that says it holds none is not warmed, since its warm-up would not wait for timings.
        QProcessEnvironment noGpu;
        noGpu.insert(QStringLiteral("CUDA_VISIBLE_DEVICES"), QString());
        QVERIFY(workerGpuKey(noGpu).isEmpty());
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {}, WorkerSupervisor::Isolation::FreshPerRequest, noGpu);
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QVERIFY(helloOf(available, pidOf(first)).raw.contains(QLatin1String("gpu_quiet_lock")));
        QVERIFY(helloOf(available, pidOf(first)).raw.value(QLatin1String("gpu_quiet_lock")).isNull());
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        const qint64 sparePid = supervisor->spareWorkerPid();
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY(second.hasResponse);
        QCOMPARE(pidOf(second), sparePid);
        QCOMPARE(typesReadBy(log, sparePid), (QStringList{QStringLiteral("hello"), QStringLiteral("evaluate")}));
    }

    void remoteWorkersGetNoQuietLock()
    {
        // ssh and srun: this machine's lock file means nothing there.
        for (const WorkerTarget::Kind kind : {WorkerTarget::Kind::Ssh, WorkerTarget::Kind::Slurm}) {
            WorkerLaunchOptions options;
            options.target.kind = kind;
            options.target.host = QStringLiteral("gpu-box");
            options.gpuQuietLock = QStringLiteral("/tmp/kwb-gpu-test/gpu0.quiet");
            const WorkerLaunch launch = launchWorker(QStringLiteral("kwb-worker"), {}, {}, options);
            QVERIFY(launch.remote);
            QVERIFY2(!launch.arguments.join(QLatin1Char(' ')).contains(QLatin1String("--gpu-quiet-lock")) &&
                         !launch.arguments.join(QLatin1Char(' ')).contains(options.gpuQuietLock),
                     qPrintable(launch.arguments.join(QLatin1Char(' '))));
        }
        // Here it is an argument (and, in the sandbox, a read-only bind).
        WorkerLaunchOptions local;
        local.osSandbox = false;
        local.gpuQuietLock = QStringLiteral("/tmp/kwb-gpu-test/gpu0.quiet");
        const WorkerLaunch launch = launchWorker(QStringLiteral(KWB_FAKEWORKER), {QStringLiteral("--x")}, {}, local);
        QCOMPARE(launch.arguments,
                 (QStringList{QStringLiteral("--x"), QStringLiteral("--gpu-quiet-lock"), local.gpuQuietLock}));
    }

    void newerProtocolIsRefused()
    {
        auto supervisor = makeSupervisor({QStringLiteral("--protocol"), QStringLiteral("2")});
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QCOMPARE(ending.status, wireName(EvaluationStatus::ProtocolError));
        QVERIFY2(ending.message.contains(QLatin1String("protocol 2, newer than this program's protocol 1")),
                 qPrintable(ending.message));
        QCOMPARE(available.size(), 0);
    }

    void startFailures_data()
    {
        QTest::addColumn<QString>("program");
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("status");
        QTest::addColumn<QString>("expected");
        const QString fake = QStringLiteral(KWB_FAKEWORKER);
        QTest::newRow("no such program") << QStringLiteral("/nonexistent/kwb-worker") << QStringList()
                                         << wireName(EvaluationStatus::StartFailed)
                                         << QStringLiteral("could not start the worker");
        QTest::newRow("loader error") << fake << QStringList{QStringLiteral("--hello"), QStringLiteral("exit_127")}
                                      << wireName(EvaluationStatus::StartFailed)
                                      << QStringLiteral("exited with code 127 before answering hello: "
                                                        "kwb-worker: error while loading shared libraries");
        QTest::newRow("crash in hello") << fake << QStringList{QStringLiteral("--hello"), QStringLiteral("segv")}
                                        << wireName(EvaluationStatus::StartFailed) << QStringLiteral("SIGSEGV");
        QTest::newRow("hang in hello") << fake << QStringList{QStringLiteral("--hello"), QStringLiteral("hang")}
                                       << wireName(EvaluationStatus::StartFailed)
                                       << QStringLiteral("did not answer hello within the wall-clock limit of 0.5 s");
    }

    void startFailures()
    {
        QFETCH(QString, program);
        QFETCH(QStringList, arguments);
        QFETCH(QString, status);
        QFETCH(QString, expected);
        auto supervisor = makeSupervisor();
        supervisor->setProgram(program, arguments);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(), 500));
        QCOMPARE(ending.status, status);
        QVERIFY2(ending.message.contains(expected), qPrintable(ending.message));
        // The supervisor stays usable: the next request tries again.
        supervisor->setProgram(QStringLiteral(KWB_FAKEWORKER));
        verifyFreshWorkerAnswers(*supervisor, 0);
    }

    void cancellation()
    {
        auto supervisor = makeSupervisor();
        QSignalSpy started(supervisor.get(), &WorkerSupervisor::requestStarted);
        const qint64 running = supervisor->sendRequest(evaluate(QStringLiteral("hang")), 60000);
        const qint64 queued = supervisor->sendRequest(evaluate(), 60000);
        QTRY_COMPARE(started.size(), 1);

        QVERIFY(supervisor->cancelRequest(queued));
        const Ending queuedEnd = waitForEnd(*supervisor, queued, 2000);
        QCOMPARE(queuedEnd.status, wireName(EvaluationStatus::Cancelled));
        QVERIFY(queuedEnd.message.contains(QLatin1String("before it started")));

        QTRY_VERIFY(supervisor->workerPid() != 0); // the hang has reached the worker
        QVERIFY(supervisor->cancelRequest(running));
        const Ending runningEnd = waitForEnd(*supervisor, running, 5000);
        QCOMPARE(runningEnd.status, wireName(EvaluationStatus::Cancelled));
        QVERIFY(runningEnd.elapsedMs < 3000);
        QVERIFY(!supervisor->cancelRequest(running));
        verifyFreshWorkerAnswers(*supervisor, 0);
    }

    void environmentReachesWorker()
    {
        auto supervisor = makeSupervisor();
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("CUDA_VISIBLE_DEVICES"), QStringLiteral("3"));
        supervisor->setProcessEnvironment(environment);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        QVERIFY(ending.hasResponse);
        QCOMPARE(supervisor->workerHello().raw.value(QLatin1String("cuda_visible_devices")).toString(),
                 QStringLiteral("3"));
    }

    void workerEnvironmentIsMinimal()
    {
        // Model code runs in the worker: kwb's secrets and the user's variables stay out of it.
        qputenv("KWB_API_KEY", "sk-kwb-secret");
        qputenv("OPENAI_API_KEY", "sk-openai-secret");
        qputenv("FOO", "user variable");
        qputenv("BAR", "listed");
        qputenv("GITHUB_TOKEN", "ghp-listed-but-secret");
        qputenv("CUDA_VISIBLE_DEVICES", "5");
        qputenv("KWB_WORKER_ENV", "BAR,GITHUB_TOKEN");
        const auto unset = qScopeGuard([] {
            for (const char* name : {"KWB_API_KEY", "OPENAI_API_KEY", "FOO", "BAR", "GITHUB_TOKEN",
                                     "CUDA_VISIBLE_DEVICES", "KWB_WORKER_ENV"})
                qunsetenv(name);
        });
        QVERIFY(qEnvironmentVariableIsSet("PATH"));
        auto supervisor = makeSupervisor(); // its default environment is taken now
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("env"))));
        QVERIFY2(ending.hasResponse, qPrintable(ending.status + QLatin1String(": ") + ending.message));
        const QJsonObject environment = ending.response.value(QLatin1String("environment")).toObject();
        QVERIFY(!environment.isEmpty());
        for (const char* name : {"KWB_API_KEY", "OPENAI_API_KEY", "FOO", "GITHUB_TOKEN", "KWB_WORKER_ENV"})
            QVERIFY2(!environment.contains(QLatin1String(name)), name);
        QCOMPARE(environment.value(QLatin1String("PATH")).toString(), qEnvironmentVariable("PATH"));
        QCOMPARE(environment.value(QLatin1String("CUDA_VISIBLE_DEVICES")).toString(), QStringLiteral("5"));
        QCOMPARE(environment.value(QLatin1String("BAR")).toString(), QStringLiteral("listed"));

        // The function itself, on a made-up environment.
        QProcessEnvironment from;
        from.insert(QStringLiteral("PATH"), QStringLiteral("/usr/bin"));
        from.insert(QStringLiteral("LC_ALL"), QStringLiteral("C.UTF-8"));
        from.insert(QStringLiteral("LD_LIBRARY_PATH"), QStringLiteral("/opt/torch/lib"));
        from.insert(QStringLiteral("KWB_TASKS_DIR"), QStringLiteral("/tasks"));
        from.insert(QStringLiteral("PYTORCH_CUDA_ALLOC_CONF"), QStringLiteral("expandable_segments:True"));
        from.insert(QStringLiteral("KWB_API_KEY"), QStringLiteral("sk"));
        from.insert(QStringLiteral("AWS_SECRET_ACCESS_KEY"), QStringLiteral("x"));
        from.insert(QStringLiteral("CUDA_AUTH_TOKEN"), QStringLiteral("x")); // an allowed prefix, a secret's name
        from.insert(QStringLiteral("SSH_AUTH_SOCK"), QStringLiteral("/tmp/agent"));
        QCOMPARE(workerEnvironment(from).keys(), (QStringList{QStringLiteral("KWB_TASKS_DIR"), QStringLiteral("LC_ALL"),
                                                              QStringLiteral("LD_LIBRARY_PATH"), QStringLiteral("PATH"),
                                                              QStringLiteral("PYTORCH_CUDA_ALLOC_CONF")}));
    }

    void deathFromOutsideIsTheMachines_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<int>("outsideSignal"); // 0: the worker dies by itself (mode)
        QTest::addColumn<QString>("status");
        QTest::newRow("SIGKILL mid-request")
            << QStringLiteral("sigkill") << 0 << wireName(EvaluationStatus::WorkerLost);
        QTest::newRow("kill -9 from outside")
            << QStringLiteral("hang") << int(SIGKILL) << wireName(EvaluationStatus::WorkerLost);
        QTest::newRow("SIGTERM from outside")
            << QStringLiteral("hang") << int(SIGTERM) << wireName(EvaluationStatus::WorkerLost);
        QTest::newRow("segfault mid-request") << QStringLiteral("segv") << 0 << wireName(EvaluationStatus::Crashed);
        QTest::newRow("SIGSEGV from outside")
            << QStringLiteral("hang") << int(SIGSEGV) << wireName(EvaluationStatus::Crashed);
    }

    void deathFromOutsideIsTheMachines()
    {
        QFETCH(QString, mode);
        QFETCH(int, outsideSignal);
        QFETCH(QString, status);
        auto supervisor = makeSupervisor();
        const Ending warm = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        QVERIFY(warm.hasResponse);
        QSignalSpy started(supervisor.get(), &WorkerSupervisor::requestStarted);
        const qint64 id = supervisor->sendRequest(evaluate(mode));
        if (outsideSignal != 0) {
            // The idle worker gets the request as soon as it is dispatched; then another process kills it.
            QVERIFY(started.wait(kWaitMs));
            QCOMPARE(supervisor->workerPid(), pidOf(warm));
            QTest::qWait(50); // let the worker read the line (a signal before it would end it just the same)
            QCOMPARE(::kill(pid_t(pidOf(warm)), outsideSignal), 0);
        }
        const Ending ending = waitForEnd(*supervisor, id);
        QVERIFY(ending.ended);
        QCOMPARE(ending.status, status);
        QCOMPARE(isMachineFailure(ending.status), status == wireName(EvaluationStatus::WorkerLost));
        verifyFreshWorkerAnswers(*supervisor, pidOf(warm));
    }

    void timeoutKillIsNotWorkerLost()
    {
        // The supervisor's own SIGKILL (a worker ignoring SIGTERM past the grace period) is a timeout.
        auto supervisor = makeSupervisor();
        supervisor->setKillGracePeriod(200);
        const Ending ending =
            waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("hang_ignore_term")), 300));
        QCOMPARE(ending.status, wireName(EvaluationStatus::Timeout));
        QVERIFY2(ending.message.contains(QLatin1String("SIGKILL")), qPrintable(ending.message));
    }

    void runBlocks()
    {
        auto supervisor = makeSupervisor();
        const WorkerSupervisor::Outcome device = supervisor->run(request(QStringLiteral("device")), 5000);
        QVERIFY2(device.hasResponse(), qPrintable(device.status + QLatin1String(": ") + device.message));
        QVERIFY(device.response.device);
        QCOMPARE(device.response.device->name, QStringLiteral("NVIDIA H200"));

        const WorkerSupervisor::Outcome none = supervisor->run(evaluate(QStringLiteral("hang")), 300);
        QVERIFY(!none.hasResponse());
        QVERIFY(none.response.raw.isEmpty());
        QCOMPARE(none.status, wireName(EvaluationStatus::Timeout));

        const WorkerSupervisor::Outcome outcome = supervisor->run(evaluate(QStringLiteral("exit")), 5000);
        QCOMPARE(outcome.status, wireName(EvaluationStatus::Crashed));
        QVERIFY(outcome.stderrTail.contains("leaving in the middle"));
    }

    // --- host limits (docs/protocol.md, "Host limits") -------------------------------------------

    void hostLimitArithmetic()
    {
        constexpr qint64 GiB = qint64(1) << 30;
        // min(half, all but 4 GiB), never under a quarter
        QCOMPARE(defaultHostMemoryLimitFor(16 * GiB), 8 * GiB);
        QCOMPARE(defaultHostMemoryLimitFor(24 * GiB), 12 * GiB);
        QCOMPARE(defaultHostMemoryLimitFor(8 * GiB), 4 * GiB);
        QCOMPARE(defaultHostMemoryLimitFor(6 * GiB), 2 * GiB);
        QCOMPARE(defaultHostMemoryLimitFor(4 * GiB), 1 * GiB);
        QCOMPARE(defaultHostMemoryLimitFor(128 * GiB), 64 * GiB);
        QVERIFY(machineMemoryBytes() > 0);
        QCOMPARE(defaultHostMemoryLimit(), defaultHostMemoryLimitFor(machineMemoryBytes()));
        QVERIFY(defaultHostThreadLimit() >= 512);
        QCOMPARE(WorkerLimits().effectiveHostMemory(), defaultHostMemoryLimit());
        QCOMPARE(WorkerLimits().effectiveHostThreads(), defaultHostThreadLimit());
        QVERIFY(WorkerLimits().osSandbox);

        QCOMPARE(parseByteSize(QStringLiteral("8G")).value_or(-1), 8 * GiB);
        QCOMPARE(parseByteSize(QStringLiteral("512M")).value_or(-1), 512 * kMiB);
        QCOMPARE(parseByteSize(QStringLiteral("1.5GiB")).value_or(-1), 3 * GiB / 2);
        QCOMPARE(parseByteSize(QStringLiteral("64k")).value_or(-1), qint64(64 * 1024));
        QCOMPARE(parseByteSize(QStringLiteral("4096")).value_or(-1), qint64(4096));
        QCOMPARE(parseByteSize(QStringLiteral(" 2 TB ")).value_or(-1), 2048 * GiB);
        for (const char* bad : {"0", "0G", "", "-1G", "eight", "8X", "8 G G", "1e3"}) {
            QString error;
            QVERIFY2(!parseByteSize(QString::fromLatin1(bad), &error), bad);
            QVERIFY2(!error.isEmpty(), bad);
        }
        QCOMPARE(formatBytes(qint64(16.1 * double(GiB))), QStringLiteral("16.1 GiB"));
        QCOMPARE(formatBytes(4 * GiB), QStringLiteral("4 GiB"));
        QCOMPARE(formatBytes(512 * kMiB), QStringLiteral("512 MiB"));
        QCOMPARE(formatBytes(1000 * kMiB), QStringLiteral("1000 MiB"));
        QCOMPARE(formatBytes(100), QStringLiteral("100 B"));

        // Stored with a run: an explicit limit stays explicit, a default stays the default.
        WorkerLimits set;
        set.hostMemoryBytes = 3 * GiB;
        set.osSandbox = false;
        const QJsonObject stored = set.toJson();
        QCOMPARE(stored.value(QLatin1String("host_memory_bytes")).toDouble(), double(3 * GiB));
        QCOMPARE(stored.value(QLatin1String("host_memory_default")).toBool(), false);
        const WorkerLimits back = WorkerLimits::fromJson(stored);
        QCOMPARE(back.hostMemoryBytes, 3 * GiB);
        QCOMPARE(back.hostThreads, 0);
        QCOMPARE(back.osSandbox, false);
        const WorkerLimits byDefault = WorkerLimits::fromJson(WorkerLimits().toJson());
        QCOMPARE(byDefault.hostMemoryBytes, qint64(0));
        QCOMPARE(byDefault.osSandbox, true);
        QCOMPARE(WorkerLimits::fromJson(QJsonObject()).hostMemoryBytes, qint64(0)); // runs stored before
    }

    void processTreeIsFound()
    {
        QProcess shell;
        shell.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("sleep 30 & sleep 30 & wait")});
        QVERIFY(shell.waitForStarted());
        const qint64 pid = shell.processId();
        QTRY_COMPARE(childProcesses(pid).size(), 2);
        QList<qint64> children = childProcesses(pid);
        QList<qint64> scanned = childProcessesByScan(pid);
        std::sort(children.begin(), children.end());
        std::sort(scanned.begin(), scanned.end());
        QCOMPARE(scanned, children);
        QList<qint64> mainThread = childProcesses(pid, false); // sh forks from its only thread
        std::sort(mainThread.begin(), mainThread.end());
        QCOMPARE(mainThread, children);
        const ProcessTreeUsage usage = processTreeUsage(pid);
        QVERIFY(usage.found);
        QCOMPARE(usage.pids.size(), 3);
        QCOMPARE(usage.pids.first(), pid);
        QCOMPARE(usage.threads, 3);
        QVERIFY(usage.rssBytes > 0 && usage.peakBytes >= usage.rssBytes);
        QVERIFY(!processTreeUsage(0).found);
        for (const qint64 child : children)
            ::kill(pid_t(child), SIGKILL);
        shell.kill();
        shell.waitForFinished();
    }

    void hostMemoryOverLimitEndsRequest_data()
    {
        QTest::addColumn<bool>("sandbox");
        QTest::newRow("sandbox off") << false;
        QTest::newRow("in the sandbox where it works") << true;
    }

    void hostMemoryOverLimitEndsRequest()
    {
        QFETCH(bool, sandbox);
        auto supervisor = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        WorkerLimits limits;
        limits.hostMemoryBytes = 128 * kMiB;
        limits.osSandbox = sandbox;
        supervisor->setLimits(limits);
        const Ending ending =
            waitForEnd(*supervisor,
                       supervisor->sendRequest(
                           evaluate(QStringLiteral("alloc"),
                                    {{QStringLiteral("mib"), 2048}, {QStringLiteral("then"), QStringLiteral("hang")}}),
                           60000));
        QVERIFY(ending.ended); // within kWaitMs, far inside the 60 s limit
        QCOMPARE(ending.status, wireName(EvaluationStatus::ResourceLimit));
        QVERIFY2(ending.message.startsWith(QLatin1String("host memory ")), qPrintable(ending.message));
        QVERIFY2(ending.message.contains(QLatin1String(" over the limit of 128 MiB")), qPrintable(ending.message));
        QVERIFY(!isMachineFailure(ending.status));
        qInfo("%s after %lld ms", qPrintable(ending.message), ending.elapsedMs);
        verifyFreshWorkerAnswers(*supervisor, 0);
    }

    // --- the worker's memory cgroup (core/workers/memorycgroup.h, issue 32 item 4) -------------------

    void memoryCgroupOomKillIsTheCandidates_data()
    {
        QTest::addColumn<bool>("sandbox");
        QTest::newRow("sandbox off") << false;
        QTest::newRow("in the sandbox where it works") << true;
    }

    void memoryCgroupOomKillIsTheCandidates()
    {
        // A worker that outgrows its limit faster than any poll: the kernel's OOM killer ends it
        // with SIGKILL, which alone reads as a kill from outside (worker_lost). Its cgroup's
        // counters prove it was its own limit: the candidate's resource_limit.
        const MemoryCgroupSupport& support = memoryCgroupSupport();
        if (!support.available())
            QSKIP(qPrintable(QStringLiteral("no memory cgroup can be made on this machine: ") + support.why));
        QFETCH(bool, sandbox);
        auto supervisor = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        SupervisorTuning::setLimitPolling(*supervisor, false); // the cgroup alone, no /proc poll
        WorkerLimits limits;
        limits.hostMemoryBytes = 128 * kMiB;
        limits.osSandbox = sandbox;
        supervisor->setLimits(limits);
        const Ending ending =
            waitForEnd(*supervisor,
                       supervisor->sendRequest(
                           evaluate(QStringLiteral("alloc"),
                                    {{QStringLiteral("mib"), 2048}, {QStringLiteral("then"), QStringLiteral("hang")}}),
                           60000));
        QVERIFY(ending.ended);
        QVERIFY2(ending.status == wireName(EvaluationStatus::ResourceLimit),
                 qPrintable(ending.status + QLatin1String(": ") + ending.message));
        QVERIFY2(ending.message.startsWith(QLatin1String("host memory over the limit of 128 MiB")),
                 qPrintable(ending.message));
        QVERIFY2(ending.message.contains(QLatin1String("OOM killer ended the worker in its memory cgroup")),
                 qPrintable(ending.message));
        QVERIFY(!isMachineFailure(ending.status));
        qInfo("%s", qPrintable(ending.message));
        verifyFreshWorkerAnswers(*supervisor, 0);
        supervisor.reset();
        // Every worker's cgroup is gone with it.
        const QString prefix = QStringLiteral("kwb-worker-%1-").arg(::getpid());
        QTRY_VERIFY_WITH_TIMEOUT(QDir(support.parent).entryList({prefix + QLatin1Char('*')}, QDir::Dirs).isEmpty(),
                                 5000);
    }

    void memoryCgroupWithoutAKillStaysTheMachines()
    {
        // kill -9 from outside a worker that stayed under its limit: its cgroup shows no OOM kill,
        // so the verdict stays worker_lost, and says why.
        const MemoryCgroupSupport& support = memoryCgroupSupport();
        if (!support.available())
            QSKIP(qPrintable(QStringLiteral("no memory cgroup can be made on this machine: ") + support.why));
        auto supervisor = makeSupervisor();
        const Ending warm = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("tasks"))));
        QVERIFY(warm.hasResponse);
        QSignalSpy started(supervisor.get(), &WorkerSupervisor::requestStarted);
        const qint64 id = supervisor->sendRequest(evaluate(QStringLiteral("hang")));
        QVERIFY(started.wait(kWaitMs));
        QCOMPARE(supervisor->workerPid(), pidOf(warm));
        QTest::qWait(50);
        QCOMPARE(::kill(pid_t(pidOf(warm)), SIGKILL), 0);
        const Ending ending = waitForEnd(*supervisor, id);
        QCOMPARE(ending.status, wireName(EvaluationStatus::WorkerLost));
        QVERIFY2(ending.message.contains(QLatin1String("its memory cgroup shows no OOM kill")),
                 qPrintable(ending.message));
    }

    void memoryCgroupProbeSaysWhyNot()
    {
        // A cgroup2 "mount" that is a plain folder: a cgroup can be made there, but no memory.max
        // appears in it, so there is no memory controller; the reason names the folder.
        QTemporaryDir root;
        QVERIFY(root.isValid());
        QVERIFY(QDir(root.path()).mkpath(QStringLiteral("user.slice/app.scope")));
        QFile limit(root.filePath(QStringLiteral("user.slice/app.scope/memory.max")));
        QVERIFY(limit.open(QIODevice::WriteOnly));
        limit.close();
        const QByteArray mountInfo =
            "30 25 0:26 / " + root.path().toUtf8() + " rw,nosuid shared:4 - cgroup2 cgroup2 rw\n";
        const MemoryCgroupSupport support = probeMemoryCgroups("0::/user.slice/app.scope\n", mountInfo);
        QVERIFY(!support.available());
        QVERIFY2(support.why.contains(
                     QStringLiteral("the memory controller is not enabled for cgroups made in %1/user.slice")
                         .arg(root.path())),
                 qPrintable(support.why));
        QVERIFY(QDir(root.filePath(QStringLiteral("user.slice")))
                    .entryList({QStringLiteral("kwb-worker-*")}, QDir::Dirs)
                    .isEmpty());
        // No hierarchy at all.
        QCOMPARE(probeMemoryCgroups("0::/\n", "").why, QStringLiteral("no memory cgroup hierarchy is mounted"));

        MemoryCgroupEnding v2;
        readMemoryEventCounts("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n", &v2);
        v2.read = true;
        QVERIFY(v2.killedAtLimit());
        MemoryCgroupEnding global;
        readMemoryEventCounts("low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n", &global);
        global.read = true;
        QVERIFY(!global.killedAtLimit()); // killed, but not at its own limit: the machine's
    }

    void hostThreadsOverCapEndRequest()
    {
        auto supervisor = makeSupervisor();
        WorkerLimits limits;
        limits.hostThreads = 32;
        supervisor->setLimits(limits);
        const Ending ending =
            waitForEnd(*supervisor,
                       supervisor->sendRequest(
                           evaluate(QStringLiteral("threads"),
                                    {{QStringLiteral("count"), 100}, {QStringLiteral("then"), QStringLiteral("hang")}}),
                           60000));
        QVERIFY(ending.ended);
        QCOMPARE(ending.status, wireName(EvaluationStatus::ResourceLimit));
        QVERIFY2(ending.message.startsWith(QLatin1String("host threads ")), qPrintable(ending.message));
        QVERIFY2(ending.message.contains(QLatin1String(" over the limit of 32")), qPrintable(ending.message));
        verifyFreshWorkerAnswers(*supervisor, 0);
    }

    void underTheLimitsIsFine()
    {
        auto supervisor = makeSupervisor();
        WorkerLimits limits;
        limits.hostMemoryBytes = 512 * kMiB;
        limits.hostThreads = 64;
        supervisor->setLimits(limits);
        const Ending memory = waitForEnd(
            *supervisor, supervisor->sendRequest(evaluate(QStringLiteral("alloc"), {{QStringLiteral("mib"), 64}})));
        QVERIFY2(memory.hasResponse, qPrintable(memory.status + QLatin1String(": ") + memory.message));
        const Ending threads = waitForEnd(
            *supervisor, supervisor->sendRequest(evaluate(QStringLiteral("threads"), {{QStringLiteral("count"), 8}})));
        QVERIFY2(threads.hasResponse, qPrintable(threads.status + QLatin1String(": ") + threads.message));
        // Held while the worker idles (reuse mode); the next request is still under the limits.
        QTest::qWait(3 * WorkerSupervisor::kLimitPollMs);
        const Ending after = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(after.hasResponse, qPrintable(after.status + QLatin1String(": ") + after.message));
        QCOMPARE(pidOf(after), pidOf(memory));
    }

    void workerOverLimitBeforeHelloIsStartFailed()
    {
        // The worker alone is bigger than the limit: no candidate ran, so it is the machine's.
        auto supervisor = makeSupervisor({QStringLiteral("--hello-delay"), QStringLiteral("2000")});
        WorkerLimits limits;
        limits.hostMemoryBytes = 64 * 1024;
        supervisor->setLimits(limits);
        const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(), 60000));
        QVERIFY(ending.ended);
        QCOMPARE(ending.status, wireName(EvaluationStatus::StartFailed));
        QVERIFY2(ending.message.contains(QLatin1String("before answering hello: host memory")),
                 qPrintable(ending.message));
    }

    // --- the OS sandbox (docs/sandbox.md, "The OS sandbox") -----------------------------------------

    void sandboxFallsBackWithAWarning()
    {
        auto supervisor = makeSandboxedSupervisor();
        supervisor->setBubblewrapProgram(QStringLiteral("/nonexistent/bwrap"));
        QCOMPARE(supervisor->sandboxStatus(),
                 QStringLiteral("none: bubblewrap is not installed (/nonexistent/bwrap is not an executable)"));
        QTemporaryDir outside;
        QVERIFY(outside.isValid());
        const QString path = outside.filePath(QStringLiteral("unsandboxed"));
        const Ending ending = waitForEnd(
            *supervisor, supervisor->sendRequest(evaluate(QStringLiteral("write"), {{QStringLiteral("path"), path}})));
        QVERIFY2(ending.hasResponse, qPrintable(ending.status + QLatin1String(": ") + ending.message));
        QCOMPARE(ending.response.value(QLatin1String("write_errno")).toInt(), 0); // it ran unwrapped
        QVERIFY(QFile::exists(path));

        // A bwrap that is there but fails (no user namespaces, a container): the same fallback.
        auto failing = makeSandboxedSupervisor();
        failing->setBubblewrapProgram(QStringLiteral("/bin/false"));
        QVERIFY2(failing->sandboxStatus().startsWith(QLatin1String("none: bwrap fails here (exit code 1)")),
                 qPrintable(failing->sandboxStatus()));
        QVERIFY(waitForEnd(*failing, failing->sendRequest(evaluate())).hasResponse);

        qputenv("KWB_OS_SANDBOX", "0");
        const auto unset = qScopeGuard([] { qunsetenv("KWB_OS_SANDBOX"); });
        QCOMPARE(makeSupervisor()->sandboxStatus(), QStringLiteral("none: turned off (KWB_OS_SANDBOX=0)"));
        WorkerLimits off;
        off.osSandbox = false;
        qunsetenv("KWB_OS_SANDBOX");
        auto offSupervisor = makeSupervisor();
        offSupervisor->setLimits(off);
        QCOMPARE(offSupervisor->sandboxStatus(), QStringLiteral("none: turned off (--no-os-sandbox)"));
    }

    // Issue 11, item 4: a bwrap that runs but hides the GPU from the worker does not count as a
    // sandbox. The stand-in bwrap runs its command with FAKEWORKER_NO_DEVICE set, so the fake
    // worker's hello says 0 devices inside and the recorded H200's 1 outside.
    void sandboxThatHidesTheGpuIsNotUsed()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const auto script = [&](const QString& name, const QByteArray& env) {
            const QString path = dir.filePath(name);
            QFile file(path);
            if (!file.open(QIODevice::WriteOnly))
                return QString();
            file.write("#!/bin/sh\nwhile [ \"$#\" -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\n" + env +
                       "exec \"$@\"\n");
            file.close();
            file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
            return path;
        };
        const QString hiding = script(QStringLiteral("bwrap-hiding"), "export FAKEWORKER_NO_DEVICE=1\n");
        const QString passing = script(QStringLiteral("bwrap-passing"), QByteArray());
        QVERIFY(!hiding.isEmpty() && !passing.isEmpty());
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.remove(QStringLiteral("FAKEWORKER_NO_DEVICE"));
        const SandboxProbe hidden = probeBubblewrapOnce(hiding, QStringLiteral(KWB_FAKEWORKER), environment, true);
        QVERIFY(!hidden.works);
        QCOMPARE(hidden.reason, QStringLiteral("the worker sees 0 GPU(s) in bwrap and 1 outside"));
        QVERIFY(probeBubblewrapOnce(passing, QStringLiteral(KWB_FAKEWORKER), environment, true).works);
        // Without a GPU on the host nothing is asked: bwrap running is all there is to check.
        QVERIFY(probeBubblewrapOnce(hiding, QStringLiteral(KWB_FAKEWORKER), environment, false).works);
        // A worker that does not answer inside: not a sandbox either.
        const QString broken =
            script(QStringLiteral("bwrap-broken"), "case \"$1\" in */true) exec \"$@\";; esac\nexit 7\n");
        const SandboxProbe silent = probeBubblewrapOnce(broken, QStringLiteral(KWB_FAKEWORKER), environment, true);
        QVERIFY(!silent.works);
        QCOMPARE(silent.reason, QStringLiteral("the worker does not answer in bwrap: no hello (exit code 7)"));
    }

    void sandboxKeepsTheFileSystemReadOnly()
    {
        const SandboxProbe probe = probeBubblewrap();
        if (!probe.works)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + probe.reason));
        auto supervisor = makeSandboxedSupervisor();
        QCOMPARE(supervisor->sandboxStatus(), kSandboxBubblewrap);
        QTemporaryDir outside;
        QVERIFY(outside.isValid());
        const QString path = outside.filePath(QStringLiteral("escaped"));
        const Ending refused = waitForEnd(
            *supervisor, supervisor->sendRequest(evaluate(QStringLiteral("write"), {{QStringLiteral("path"), path}})));
        QVERIFY2(refused.hasResponse, qPrintable(refused.status + QLatin1String(": ") + refused.message));
        // The host's /tmp is not there (a private one is): the folder does not exist inside.
        QVERIFY(refused.response.value(QLatin1String("write_errno")).toInt() != 0);
        QVERIFY(!QFile::exists(path));
        // Next to its install tree, which is read-only.
        const QString beside =
            QFileInfo(QStringLiteral(KWB_FAKEWORKER)).absoluteDir().filePath(QStringLiteral("escaped-beside"));
        const Ending readOnly =
            waitForEnd(*supervisor,
                       supervisor->sendRequest(evaluate(QStringLiteral("write"), {{QStringLiteral("path"), beside}})));
        QVERIFY2(readOnly.hasResponse, qPrintable(readOnly.status + QLatin1String(": ") + readOnly.message));
        QCOMPARE(readOnly.response.value(QLatin1String("write_errno")).toInt(), EROFS);
        QVERIFY(!QFile::exists(beside));
        // PID 1 of its own namespace; the supervisor knows its real pid, bwrap's child.
        QCOMPARE(pidOf(refused), qint64(1));
        QVERIFY(supervisor->workerPid() > 1);

        // Its scratch folder (TMPDIR) is writable, and goes with the worker.
        const Ending scratch = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("write"))));
        QVERIFY2(scratch.hasResponse, qPrintable(scratch.status + QLatin1String(": ") + scratch.message));
        QCOMPARE(scratch.response.value(QLatin1String("write_errno")).toInt(), 0);
        const QString written = scratch.response.value(QLatin1String("path")).toString();
        QVERIFY2(written.contains(QLatin1String("/kwb-worker-")), qPrintable(written));
        QVERIFY(QFile::exists(written));
        supervisor.reset();
        QVERIFY(!QFile::exists(written));
    }

    void sandboxHasNoNetwork()
    {
        const SandboxProbe probe = probeBubblewrap();
        if (!probe.works)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + probe.reason));
        Listener listener;
        QVERIFY(listener.port > 0);
        const QJsonObject connect = evaluate(QStringLiteral("connect"), {{QStringLiteral("port"), listener.port}});

        auto unsandboxed = makeSupervisor();
        WorkerLimits off;
        off.osSandbox = false;
        unsandboxed->setLimits(off);
        const Ending reached = waitForEnd(*unsandboxed, unsandboxed->sendRequest(connect));
        QVERIFY2(reached.hasResponse, qPrintable(reached.status + QLatin1String(": ") + reached.message));
        QCOMPARE(reached.response.value(QLatin1String("connect_errno")).toInt(), 0); // the listener is there

        auto sandboxed = makeSandboxedSupervisor();
        const Ending cut = waitForEnd(*sandboxed, sandboxed->sendRequest(connect));
        QVERIFY2(cut.hasResponse, qPrintable(cut.status + QLatin1String(": ") + cut.message));
        QVERIFY2(cut.response.value(QLatin1String("connect_errno")).toInt() != 0,
                 qPrintable(cut.response.value(QLatin1String("connect_error")).toString()));
    }

    void sandboxedTimeoutEndsTheRealWorker()
    {
        const SandboxProbe probe = probeBubblewrap();
        if (!probe.works)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + probe.reason));
        for (const QString& mode : {QStringLiteral("hang"), QStringLiteral("hang_ignore_term")}) {
            auto supervisor = makeSandboxedSupervisor();
            supervisor->setKillGracePeriod(300);
            qint64 worker = 0;
            QObject::connect(supervisor.get(), &WorkerSupervisor::workerAvailable, supervisor.get(),
                             [&worker](qint64 pid, const HelloInfo& hello) {
                                 worker = pid;
                                 QCOMPARE(hello.raw.value(QLatin1String("pid")).toInteger(),
                                          qint64(1)); // its namespace's
                             });
            const Ending ending = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(mode), 1000));
            QCOMPARE(ending.status, wireName(EvaluationStatus::Timeout));
            QVERIFY(worker > 1);
            QTRY_VERIFY_WITH_TIMEOUT(processGone(worker), 2000);
            // SIGTERM does not reach a PID 1: a sandboxed worker is stopped with SIGKILL at once.
            QVERIFY2(ending.message.contains(QLatin1String("SIGKILL")), qPrintable(ending.message));
        }
    }

    // Issue 32, item 4: a candidate cannot turn its own failure into the machine's. In the sandbox
    // the worker is PID 1 of its namespace: its SIGKILL to itself does not arrive, and an exit
    // code that reads as a signal through bwrap (137) is refused by the seccomp filter (it faults:
    // a crash, the candidate's). Outside the sandbox the same SIGKILL is indistinguishable from
    // the OOM killer's (worker_lost), which is why KernelBench-format answers need the sandbox.
    void sandboxedCandidateCannotFakeTheMachinesFailure()
    {
        const SandboxProbe probe = probeBubblewrap();
        if (!probe.works)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + probe.reason));
        auto supervisor = makeSandboxedSupervisor();
        const Ending survived = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("self_kill"))));
        QVERIFY2(survived.hasResponse, qPrintable(survived.status + QLatin1String(": ") + survived.message));
        const Ending faked = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("exit_137"))));
        QCOMPARE(faked.status, wireName(EvaluationStatus::Crashed));
        QVERIFY2(faked.message.contains(QLatin1String("SIGSEGV")), qPrintable(faked.message));

        auto unsandboxed = makeSupervisor();
        const Ending lost = waitForEnd(*unsandboxed, unsandboxed->sendRequest(evaluate(QStringLiteral("self_kill"))));
        QCOMPARE(lost.status, wireName(EvaluationStatus::WorkerLost));
    }

    // Issue 32, item 1: the worker sees no other process, no host user list and no home.
    void sandboxShowsOnlyWhatTheWorkerNeeds()
    {
        const SandboxProbe probe = probeBubblewrap();
        if (!probe.works)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + probe.reason));
        QTemporaryDir outside;
        QVERIFY(outside.isValid());
        const QStringList paths{QStringLiteral("/proc/%1/environ").arg(::getpid()),
                                QStringLiteral("/etc/shadow"),
                                QDir::homePath() + QStringLiteral("/.bashrc"),
                                QStringLiteral("/run"),
                                QStringLiteral("/var"),
                                outside.path()};
        auto supervisor = makeSandboxedSupervisor();
        const Ending env = waitForEnd(*supervisor, supervisor->sendRequest(request(QStringLiteral("env"))));
        QVERIFY2(env.hasResponse, qPrintable(env.status + QLatin1String(": ") + env.message));
        const QJsonObject environment = env.response.value(QLatin1String("environment")).toObject();
        const QString home = environment.value(QLatin1String("HOME")).toString();
        QVERIFY2(home.contains(QLatin1String("/kwb-worker-")), qPrintable(home)); // its scratch folder's
        QVERIFY(!environment.contains(QLatin1String("KWB_API_KEY")));
        for (const QString& path : paths) {
            const Ending seen =
                waitForEnd(*supervisor,
                           supervisor->sendRequest(evaluate(QStringLiteral("stat"), {{QStringLiteral("path"), path}})));
            QVERIFY2(seen.hasResponse, qPrintable(seen.status + QLatin1String(": ") + seen.message));
            QVERIFY2(!seen.response.value(QLatin1String("exists")).toBool(), qPrintable(path));
        }
        const Ending passwd = waitForEnd(
            *supervisor, supervisor->sendRequest(evaluate(QStringLiteral("read"),
                                                          {{QStringLiteral("path"), QStringLiteral("/etc/passwd")}})));
        QVERIFY2(passwd.hasResponse, qPrintable(passwd.status + QLatin1String(": ") + passwd.message));
        const QString text = passwd.response.value(QLatin1String("text")).toString();
        QVERIFY2(text.startsWith(QLatin1String("root:x:0:0:")) && text.count(QLatin1Char('\n')) <= 3, qPrintable(text));
    }

    // A worker from another build or install than kwb's is told the tasks folder the sandbox
    // shows it (left to choose, it picked its own build's folder, which the sandbox hid, and every
    // task was "unknown": the GPU machine, where kwb is built elsewhere than its worker).
    void sandboxedWorkerIsToldTheTasksItSees()
    {
        const SandboxProbe probe = probeBubblewrap();
        if (!probe.works)
            QSKIP(qPrintable(QStringLiteral("bubblewrap does not work here: ") + probe.reason));
        QTemporaryDir install;
        QTemporaryDir scratch;
        QVERIFY(install.isValid() && scratch.isValid());
        QVERIFY(QDir(install.path()).mkpath(QStringLiteral("bin")));
        const QString worker = install.filePath(QStringLiteral("bin/kwb-worker"));
        QVERIFY(QFile::copy(QStringLiteral(KWB_FAKEWORKER), worker));
        QFile::setPermissions(worker, QFile::ReadOwner | QFile::ExeOwner);
        WorkerLaunchOptions options;
        options.scratchDir = scratch.path();
        const auto tasksAfter = [](const QStringList& arguments) {
            const qsizetype end = arguments.indexOf(QStringLiteral("--"));
            const qsizetype at = arguments.indexOf(QStringLiteral("--tasks-dir"), end);
            return end > 0 && at > end && at + 1 < arguments.size() ? arguments.at(at + 1) : QString();
        };
        const auto bound = [](const QStringList& arguments, const QString& path) {
            for (qsizetype i = 0; i + 2 < arguments.size() && arguments.at(i) != QLatin1String("--"); ++i)
                if (arguments.at(i).startsWith(QLatin1String("--ro-bind")) && arguments.at(i + 1) == path &&
                    arguments.at(i + 2) == path)
                    return true;
            return false;
        };
        // A build tree elsewhere: this build's source tree's tasks, named and shown.
        WorkerLaunch launch = launchWorker(worker, {}, {}, options);
        QVERIFY2(launch.sandboxed, qPrintable(launch.sandbox));
        QString tasks = tasksAfter(launch.arguments);
        QCOMPARE(tasks, QStringLiteral(KWB_SOURCE_DIR "/tasks"));
        QVERIFY2(bound(launch.arguments, tasks), qPrintable(launch.arguments.join(QLatin1Char(' '))));
        // A build tree that names its tasks in the file beside its worker.
        QTemporaryDir named;
        QVERIFY(named.isValid());
        QFile marker(worker + QStringLiteral(".tasks"));
        QVERIFY(marker.open(QIODevice::WriteOnly) && marker.write(named.path().toLocal8Bit() + "\n") > 0);
        marker.close();
        launch = launchWorker(worker, {}, {}, options);
        QCOMPARE(tasksAfter(launch.arguments), named.path());
        QVERIFY2(bound(launch.arguments, named.path()), qPrintable(launch.arguments.join(QLatin1Char(' '))));
        // An install tree: its own share/kernel-workbench/tasks.
        QVERIFY(QDir(install.path()).mkpath(QStringLiteral("share/kernel-workbench/tasks")));
        launch = launchWorker(worker, {}, {}, options);
        tasks = tasksAfter(launch.arguments);
        QCOMPARE(tasks,
                 QFileInfo(install.filePath(QStringLiteral("share/kernel-workbench/tasks"))).canonicalFilePath());
        QVERIFY(bound(launch.arguments, tasks) || launch.arguments.contains(install.path()));
        // KWB_TASKS_DIR, and an explicit --tasks-dir, win.
        QProcessEnvironment environment;
        environment.insert(QStringLiteral("KWB_TASKS_DIR"), scratch.path());
        launch = launchWorker(worker, {}, environment, options);
        QCOMPARE(tasksAfter(launch.arguments), scratch.path());
        launch = launchWorker(worker, {QStringLiteral("--tasks-dir"), install.path()}, environment, options);
        QCOMPARE(tasksAfter(launch.arguments), install.path());
        QCOMPARE(launch.arguments.count(QStringLiteral("--tasks-dir")), 1);
    }

    void destructionEndsWorker()
    {
        auto supervisor = makeSupervisor();
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        supervisor->sendRequest(evaluate(QStringLiteral("hang_ignore_term")), 60000);
        QTRY_COMPARE_WITH_TIMEOUT(available.size(), 1, kWaitMs);
        const qint64 pid = supervisor->workerPid();
        QVERIFY(pid > 0);
        QElapsedTimer clock;
        clock.start();
        supervisor.reset();
        QVERIFY(clock.elapsed() < 3000);
        QTRY_VERIFY_WITH_TIMEOUT(processGone(pid), 2000);
    }
};

QTEST_GUILESS_MAIN(TestWorkerSupervisor)
#include "tst_workersupervisor.moc"
