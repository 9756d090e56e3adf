// The job tracker: rising ids per slot, a superseded job's result dropped whether it ends before
// or after the newer one, results delivered on the tracker's (GUI) thread from the event loop,
// cancellation, destruction while a function runs, and worker requests through a supervisor.

#include "core/protocol/evaluationstatus.h"
#include "core/workers/jobtracker.h"
#include "core/workers/workersupervisor.h"

#include <QCoreApplication>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <atomic>
#include <memory>
#include <thread>

using namespace kwb;

namespace {

const QString kSlot = QStringLiteral("charts");

// The pool's results are queued once its functions return: waiting for them and then handling
// the queued calls delivers (or drops) every result, without a wait on the clock.
void settle(JobTracker& tracker)
{
    QVERIFY(tracker.waitForFunctions(30000));
    QCoreApplication::sendPostedEvents();
    QCoreApplication::sendPostedEvents(); // a delivery that queued another call
}

} // namespace

class TestJobTracker : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void risingIdsPerSlot()
    {
        JobTracker tracker;
        QCOMPARE(tracker.latestId(kSlot), 0);
        QCOMPARE(tracker.run(
                     kSlot, [] { return 1; }, [](int) {}),
                 1);
        QCOMPARE(tracker.run(
                     kSlot, [] { return 2; }, [](int) {}),
                 2);
        QCOMPARE(tracker.begin(kSlot), 3);
        // Another slot counts on its own and supersedes nothing here.
        QCOMPARE(tracker.begin(QStringLiteral("report")), 1);
        QCOMPARE(tracker.latestId(kSlot), 3);
        QVERIFY(tracker.isCurrent(kSlot, 3));
        QVERIFY(!tracker.isCurrent(kSlot, 2));
        QVERIFY(tracker.finish(kSlot, 3));
        QVERIFY(!tracker.finish(kSlot, 3)); // ended once
        QVERIFY(!tracker.finish(kSlot, 2));
        settle(tracker);
    }

    void staleDroppedWhenNewerFinishesFirst()
    {
        JobTracker tracker;
        QSemaphore gate;
        QList<int> delivered;
        tracker.run(
            kSlot,
            [&gate] {
                gate.acquire();
                return 1;
            },
            [&](int v) { delivered << v; });
        QSignalSpy finished(&tracker, &JobTracker::jobFinished);
        tracker.run(
            kSlot, [] { return 2; }, [&](int v) { delivered << v; });
        QVERIFY(finished.wait(30000));
        QCOMPARE(delivered, QList<int>{2});
        QVERIFY(!tracker.isBusy(kSlot));
        gate.release(); // the older job ends now, after the newer one was shown
        settle(tracker);
        QCOMPARE(delivered, QList<int>{2});
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.first().at(1).toLongLong(), 2);
    }

    void staleDroppedWhenNewerFinishesLater()
    {
        JobTracker tracker;
        QList<int> delivered;
        tracker.run(
            kSlot, [] { return 1; }, [&](int v) { delivered << v; });
        QVERIFY(tracker.waitForFunctions(30000)); // job 1 has ended; its result waits in the queue
        QSemaphore gate;
        tracker.run(
            kSlot,
            [&gate] {
                gate.acquire();
                return 2;
            },
            [&](int v) { delivered << v; });
        QCoreApplication::sendPostedEvents(); // job 1's result arrives while job 2 runs
        QVERIFY(delivered.isEmpty());
        QVERIFY(tracker.isBusy(kSlot));
        gate.release();
        settle(tracker);
        QCOMPARE(delivered, QList<int>{2});
    }

    void slotsDoNotSupersedeEachOther()
    {
        JobTracker tracker;
        QStringList delivered;
        tracker.run(
            kSlot, [] { return QStringLiteral("a"); }, [&](const QString& v) { delivered << v; });
        tracker.run(
            QStringLiteral("report"), [] { return QStringLiteral("b"); }, [&](const QString& v) { delivered << v; });
        settle(tracker);
        delivered.sort();
        QCOMPARE(delivered, (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        QVERIFY(!tracker.isBusy());
    }

    void deliveredOnTheTrackersThreadFromTheEventLoop()
    {
        JobTracker tracker;
        QThread* workThread = nullptr;
        QThread* doneThread = nullptr;
        bool delivered = false;
        tracker.run(
            kSlot,
            [&workThread] {
                workThread = QThread::currentThread();
                return 7;
            },
            [&](int v) {
                doneThread = QThread::currentThread();
                delivered = v == 7;
            });
        QVERIFY(tracker.waitForFunctions(30000));
        QVERIFY(!delivered); // not from the pool, not before the event loop runs
        QCoreApplication::sendPostedEvents();
        QVERIFY(delivered);
        QVERIFY(workThread && workThread != QCoreApplication::instance()->thread());
        QCOMPARE(doneThread, QCoreApplication::instance()->thread());
    }

    void cancelDropsTheRunningJob()
    {
        JobTracker tracker;
        QSemaphore gate;
        bool delivered = false;
        const qint64 id = tracker.run(
            kSlot,
            [&gate] {
                gate.acquire();
                return 1;
            },
            [&](int) { delivered = true; });
        QVERIFY(tracker.isBusy(kSlot));
        tracker.cancel(kSlot);
        QVERIFY(!tracker.isBusy(kSlot));
        QVERIFY(!tracker.isCurrent(kSlot, id));
        gate.release();
        settle(tracker);
        QVERIFY(!delivered);
        QCOMPARE(tracker.begin(kSlot), id + 1);

        tracker.run(
            QStringLiteral("a"), [] { return 1; }, [&](int) { delivered = true; });
        tracker.run(
            QStringLiteral("b"), [] { return 1; }, [&](int) { delivered = true; });
        tracker.cancelAll();
        settle(tracker);
        QVERIFY(!delivered);
    }

    void destroyedWhileAFunctionRuns()
    {
        auto* tracker = new JobTracker;
        QSemaphore started;
        QSemaphore gate;
        std::atomic<bool> workEnded{false};
        bool delivered = false;
        tracker->run(
            kSlot,
            [&] {
                started.release();
                gate.acquire();
                workEnded = true;
                return 1;
            },
            [&](int) { delivered = true; });
        started.acquire();
        // The function is blocked; the gate opens from another thread while the destructor waits.
        std::thread opener([&gate] {
            QThread::msleep(20);
            gate.release();
        });
        delete tracker; // waits for the function, drops its result
        opener.join();
        QVERIFY(workEnded);
        QCoreApplication::sendPostedEvents();
        QVERIFY(!delivered);
    }

    void workerRequestsSupersedeByslot()
    {
        WorkerSupervisor supervisor;
        supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER));
        JobTracker tracker;
        QList<qint64> delivered;
        QSignalSpy finished(&tracker, &JobTracker::jobFinished);
        const QJsonObject device{{QStringLiteral("type"), QStringLiteral("device")}};
        // The worker answers in order: the first answer comes while the second job is current.
        const qint64 first =
            tracker.request(kSlot, &supervisor, device, 30000, [&](const WorkerReply&) { delivered << 1; });
        const qint64 second = tracker.request(kSlot, &supervisor, device, 30000, [&](const WorkerReply& reply) {
            QVERIFY(reply.answered());
            QCOMPARE(reply.response.header.type, QStringLiteral("device"));
            QVERIFY(reply.response.type == ResponseType::Device);
            QVERIFY(reply.response.device.has_value()); // decoded once, by its type
            delivered << 2;
        });
        QCOMPARE(second, first + 1);
        QVERIFY(tracker.isBusy(kSlot));
        QVERIFY(finished.wait(30000));
        QCOMPARE(delivered, QList<qint64>{2});
        QVERIFY(!tracker.isBusy(kSlot));
        // A failure arrives the same way, with its status.
        QString status;
        tracker.request(QStringLiteral("other"), &supervisor,
                        QJsonObject{{QStringLiteral("type"), QStringLiteral("device")},
                                    {QStringLiteral("fake"), QStringLiteral("hang")}},
                        300, [&](const WorkerReply& reply) { status = reply.status; });
        QVERIFY(finished.wait(30000));
        QCOMPARE(evaluationStatusFromWire(status), EvaluationStatus::Timeout);
    }

    void supervisorDestroyedEndsItsJobs()
    {
        JobTracker tracker;
        bool delivered = false;
        {
            WorkerSupervisor supervisor;
            supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER));
            tracker.request(kSlot, &supervisor, QJsonObject{{QStringLiteral("type"), QStringLiteral("device")}}, 30000,
                            [&](const WorkerReply&) { delivered = true; });
            QVERIFY(tracker.isBusy(kSlot));
        }
        QVERIFY(!tracker.isBusy(kSlot));
        QCoreApplication::sendPostedEvents();
        QVERIFY(!delivered);
    }
};

QTEST_GUILESS_MAIN(TestJobTracker)
#include "tst_jobtracker.moc"
