#pragma once
// What the WorkerSupervisor tests share (tst_workersupervisor.cpp: a worker's life, limits and the
// sandbox; tst_supervisorspares.cpp: spares, warming, the hand-off and the quiet lock): waiting for a
// request's end, the fake worker's requests and logs, and supervisors made for the fake worker.

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
inline Ending waitForEnd(WorkerSupervisor& supervisor, qint64 id, int timeoutMs = kWaitMs)
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

inline QJsonObject request(const QString& type, const QString& fakeMode = QString())
{
    QJsonObject object{{QStringLiteral("type"), type}};
    if (!fakeMode.isEmpty())
        object.insert(QStringLiteral("fake"), fakeMode);
    return object;
}

inline QJsonObject evaluate(const QString& fakeMode = QString(), const QJsonObject& fields = {})
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
inline bool quietLockFree(const QString& path)
{
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
}

// gpu_memory as kwb-worker's evaluate answers it, in GiB (released: torch's cache given back
// before the answer, where the worker's torch has CUDA; negative: no such field).
inline QJsonObject gpuMemory(double freeGiB, double totalGiB, double releasedGiB = -1)
{
    QJsonObject m{{QStringLiteral("free_bytes"), freeGiB * 1024 * kMiB},
                  {QStringLiteral("total_bytes"), totalGiB * 1024 * kMiB}};
    if (releasedGiB >= 0)
        m.insert(QStringLiteral("released_bytes"), releasedGiB * 1024 * kMiB);
    return m;
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

inline qint64 pidOf(const Ending& ending)
{
    return ending.response.value(QLatin1String("pid")).toInteger();
}

// Gone and reaped, or dead and waiting for init to reap it: in the OS sandbox the worker is
// bwrap's child, and init's once bwrap has gone.
inline bool processGone(qint64 pid)
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

inline bool touch(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly);
}

// The requests each fake worker read, in order ($FAKEWORKER_LOG): {"pid","type",…} per line.
inline QList<QJsonObject> loggedRequests(const QString& path)
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
inline QStringList typesReadBy(const QString& log, qint64 pid)
{
    QStringList types;
    for (const QJsonObject& entry : loggedRequests(log))
        if (entry.value(QLatin1String("pid")).toInteger() == pid)
            types.append(entry.value(QLatin1String("type")).toString());
    return types;
}

// The pids of the workers that read a request of this type.
inline QList<qint64> readersOf(const QString& log, const QString& type)
{
    QList<qint64> pids;
    for (const QJsonObject& entry : loggedRequests(log))
        if (entry.value(QLatin1String("type")).toString() == type)
            pids.append(entry.value(QLatin1String("pid")).toInteger());
    return pids;
}

// The hello announced with workerAvailable for worker `pid` (raw empty: never announced).
inline HelloInfo helloOf(const QSignalSpy& available, qint64 pid)
{
    for (const QList<QVariant>& signal : available)
        if (signal.at(0).toLongLong() == pid)
            return signal.at(1).value<HelloInfo>();
    return {};
}

} // namespace

// The fixture both test classes derive from: supervisors of the fake worker as the tests need them.
class SupervisorTestBase : public QObject
{
protected:
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
};
