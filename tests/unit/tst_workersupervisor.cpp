// WorkerSupervisor against the fake worker (fakeworker.cpp): every way a worker can misbehave
// must end the request with the right status, and the next request must run on a good worker.
// Limits are short (hundreds of milliseconds) so the whole suite stays fast.

#include "core/workers/hostlimitdefaults.h"
#include "supervisortesting.h"

class TestWorkerSupervisor : public SupervisorTestBase
{
    Q_OBJECT

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
        // A build's processes (the broker's RLIMIT_DATA): half the machine within 3 and 8 GiB.
        QCOMPARE(buildDataLimitForTotal(128 * GiB), 8 * GiB);
        QCOMPARE(buildDataLimitForTotal(12 * GiB), 6 * GiB);
        QCOMPARE(buildDataLimitForTotal(4 * GiB), 3 * GiB);
        QCOMPARE(buildDataLimitForTotal(0), 8 * GiB); // unknown
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
