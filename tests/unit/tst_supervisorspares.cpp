// WorkerSupervisor's spares against the fake worker: a spare takes over, the next worker starts
// while the last exits, spares start and warm as the host allows (one after another, at once,
// while busy or idle), the embedded Python warms when asked, and the GPU's quiet lock is passed
// to local workers only. The shared fixture is supervisortesting.h.

#include "supervisortesting.h"

class TestSupervisorSpares : public SupervisorTestBase
{
    Q_OBJECT

private Q_SLOTS:
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
        // Free read after the worker gave its cache back: the evaluation's own size still counts.
        QTest::newRow("room after the release, not for what it gave back")
            << QJsonValue(gpuMemory(100, 141, 60)) << false;
        QTest::newRow("room for both after the release") << QJsonValue(gpuMemory(120, 141, 10)) << true;
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
        // Two, not the default three: with one started after another, a count of two that the
        // default passes on its way to three lasts only until the next spare is ready.
        SupervisorTuning::setSpareCount(*supervisor, 2);
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
        SupervisorTuning::setSpareCount(*supervisor, 2); // as above: a count that stays
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

    void spareWarmedBeforeTheFirstKernelBenchJobStartsItsPython()
    {
        // A run's spares start before its first KernelBench-format job turns the Python on
        // (EvaluationQueue): each is warmed again then, for the Python alone, before it takes a job.
        QProcessEnvironment extra;
        extra.insert(QStringLiteral("FAKEWORKER_WARM_DELAY_MS"), QStringLiteral("60")); // the first warm's context
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {}, WorkerSupervisor::Isolation::FreshPerRequest, extra);
        SupervisorTuning::setSpareCount(*supervisor, 1); // the one spare takes the next request
        QSignalSpy available(supervisor.get(), &WorkerSupervisor::workerAvailable);
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        const qint64 sparePid = supervisor->spareWorkerPid();
        const QStringList warmedOnce{QStringLiteral("hello"), QStringLiteral("warm")};
        QCOMPARE(typesReadBy(log, sparePid), warmedOnce);
        const auto pythonAsked = [&] {
            QList<bool> asked;
            for (const QJsonObject& entry : loggedRequests(log))
                if (entry.value(QLatin1String("pid")).toInteger() == sparePid &&
                    entry.value(QLatin1String("type")).toString() == QLatin1String("warm"))
                    asked.append(entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("python")));
            return asked;
        };
        QCOMPARE(pythonAsked(), QList<bool>{false});

        supervisor->setWarmPython(true);
        QTRY_COMPARE_WITH_TIMEOUT(pythonAsked(), (QList<bool>{false, true}), kWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        // Once only: turned on again, nothing more is sent.
        supervisor->setWarmPython(true);
        const Ending second = waitForEnd(*supervisor, supervisor->sendRequest(evaluate()));
        QVERIFY2(second.hasResponse, qPrintable(second.message));
        QCOMPARE(pidOf(second), sparePid);
        QCOMPARE(typesReadBy(log, sparePid), (QStringList{QStringLiteral("hello"), QStringLiteral("warm"),
                                                          QStringLiteral("warm"), QStringLiteral("evaluate")}));
        // It takes over with the first warm's timings and the Python's beside them.
        const HelloInfo hello = helloOf(available, sparePid);
        QVERIFY(hello.warmMs);
        QVERIFY2(hello.warmMs->value(QStringLiteral("context")) >= 60,
                 qPrintable(QString::number(hello.warmMs->value(QStringLiteral("context")))));
        QCOMPARE(hello.warmMs->value(QStringLiteral("python")), 7.0);
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

    void reuseModeKeepsOneSpareOnceAWorkerRetires()
    {
        // A KernelBench-format answer's library retires the reused worker it ran in (worker_healthy:
        // false): from then on one spare waits, so the next request skips the process start and
        // the 500 ms hello. One, not the default three.
        auto supervisor = makeSupervisor({QStringLiteral("--hello-delay"), QStringLiteral("500")},
                                         WorkerSupervisor::Isolation::ReuseWhileHealthy);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTest::qWait(200);
        QCOMPARE(supervisor->liveSpareCount(), 0); // a healthy reused worker: no spare, as before
        const Ending retired = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("unhealthy"))));
        QVERIFY2(retired.hasResponse, qPrintable(retired.message));
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
        QCOMPARE(supervisor->liveSpareCount(), 1);
        for (int i = 0; i < 3; ++i) {
            QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerReady(), kWaitMs);
            const qint64 sparePid = supervisor->spareWorkerPid();
            const Ending next = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("unhealthy"))));
            QVERIFY2(next.hasResponse, qPrintable(next.message));
            QCOMPARE(pidOf(next), sparePid);
            QVERIFY2(next.elapsedMs < 400, qPrintable(QString::number(next.elapsedMs)));
            QVERIFY(supervisor->liveSpareCount() <= 1);
        }
        // The same isolation set again (a queue passes every setting again when one changes) keeps
        // the spare; a change starts over: back in reuse mode, no spare until a worker retires.
        supervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        QCOMPARE(supervisor->liveSpareCount(), 1);
        supervisor->setIsolation(WorkerSupervisor::Isolation::FreshPerRequest);
        supervisor->setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        QCOMPARE(supervisor->liveSpareCount(), 0);
        QTest::qWait(300); // the spare ended is reaped before the supervisor goes
    }

    void reuseModeStartsSparesWhereRetiringWorkersAreExpected()
    {
        // EvaluationQueue's word at a run's first KernelBench-format job: in reuse mode the spare
        // starts then, before any request, warms with the Python, and the first request runs in it
        // (session 48: each cold run's first evaluations waited 4-7 s for torch's import).
        QString log;
        auto supervisor = makeLoggedSupervisor(&log, {}, WorkerSupervisor::Isolation::ReuseWhileHealthy);
        supervisor->setWarmWhileBusy(true); // as the queue's GPU slots
        QTest::qWait(300);
        QCOMPARE(supervisor->liveSpareCount(), 0); // reuse mode: no spare until a worker retires
        supervisor->setWarmPython(true);
        supervisor->expectRetiringWorkers();
        QVERIFY(supervisor->retiringWorkersExpected());
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->spareWorkerWarmed(), kWaitMs);
        QCOMPARE(supervisor->liveSpareCount(), 1);
        const qint64 sparePid = supervisor->spareWorkerPid();
        QList<bool> pythonAsked;
        for (const QJsonObject& entry : loggedRequests(log))
            if (entry.value(QLatin1String("pid")).toInteger() == sparePid &&
                entry.value(QLatin1String("type")).toString() == QLatin1String("warm"))
                pythonAsked.append(entry.value(QLatin1String("keys")).toArray().contains(QStringLiteral("python")));
        QCOMPARE(pythonAsked, QList<bool>{true});
        const Ending first = waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("unhealthy"))));
        QVERIFY2(first.hasResponse, qPrintable(first.message));
        QCOMPARE(pidOf(first), sparePid);
        QCOMPARE(typesReadBy(log, sparePid),
                 (QStringList{QStringLiteral("hello"), QStringLiteral("warm"), QStringLiteral("evaluate")}));
        // Said again: nothing more. Fresh workers per request keep their spares anyway: the word
        // changes nothing there.
        supervisor->expectRetiringWorkers();
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == 1, kWaitMs);
        auto fresh = makeSupervisor({}, WorkerSupervisor::Isolation::FreshPerRequest);
        fresh->expectRetiringWorkers();
        QVERIFY(!fresh->retiringWorkersExpected());
        QTest::qWait(300); // the spares are reaped before the supervisors go
    }

    void aGpuSlotKeepsSeveralSparesOnceWorkersRetire()
    {
        // A GPU slot (EvaluationQueue::configureSlot) keeps SparePool::kDefaultCount spares once its
        // reused workers retire: every KernelBench-format candidate retires one, and with a
        // single spare every other candidate waited for a start. Two requests in a row both find
        // a ready worker.
        auto supervisor = makeSupervisor({QStringLiteral("--hello-delay"), QStringLiteral("500")},
                                         WorkerSupervisor::Isolation::ReuseWhileHealthy);
        supervisor->setSparesForRetiringWorkers(SparePool::kDefaultCount);
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate())).hasResponse);
        QTest::qWait(200);
        QCOMPARE(supervisor->liveSpareCount(), 0); // a healthy reused worker: no spare
        QVERIFY(waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("unhealthy")))).hasResponse);
        QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == SparePool::kDefaultCount, kWaitMs);
        for (int round = 0; round < 2; ++round) {
            // every spare ready (each has answered hello), then two candidates back to back
            QTRY_VERIFY_WITH_TIMEOUT(supervisor->liveSpareCount() == SparePool::kDefaultCount &&
                                         !supervisor->spareWorkerPids().contains(0),
                                     kWaitMs);
            QTest::qWait(1500); // their 500 ms hellos answered
            const QList<qint64> ready = supervisor->spareWorkerPids();
            for (int i = 0; i < 2; ++i) {
                const Ending next =
                    waitForEnd(*supervisor, supervisor->sendRequest(evaluate(QStringLiteral("unhealthy"))));
                QVERIFY2(next.hasResponse, qPrintable(next.message));
                QVERIFY(ready.contains(pidOf(next)));
                QVERIFY2(next.elapsedMs < 400, qPrintable(QString::number(next.elapsedMs)));
                QVERIFY(supervisor->liveSpareCount() <= SparePool::kDefaultCount);
            }
        }
        QTest::qWait(300); // the spares ended are reaped before the supervisor goes
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
};

QTEST_GUILESS_MAIN(TestSupervisorSpares)
#include "tst_supervisorspares.moc"
