// HeadlessRun, the one run assembly of `kwb run`, `kwb sweep` and the window, against the scripted
// OpenAI-compatible server (scriptedllmserver.h, streaming) and the fake worker (fakeworker.cpp,
// which takes an evaluation's status from a "status: NAME" marker in the answer): a run completes
// into the store; the controller's word on which request serves which unit matches the stored
// rows (and every streamed piece lands on the unit whose stored answer it is); pause, then resume,
// finishes without asking the model for any unit twice; cancel stops at once and keeps what was
// committed, so a resume finishes the rest.

#include "core/config/runconfig.h"
#include "core/run/headlessrun.h"
#include "core/run/runcontroller.h"
#include "core/store/runstore.h"
#include "core/workers/gpulease.h"
#include "fakeworkerenvironment.h"
#include "scriptedllmserver.h"

#include <QDir>
#include <QFile>
#include <QHash>
#include <QJsonDocument>
#include <QScopeGuard>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <memory>

using namespace kwb;
using kwb::test::ScriptedLlmServer;

namespace {

QString answer(const QString& tag, const QString& status)
{
    return QStringLiteral("%1 status: %2\n\n```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n"
                          "```\n\n```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n"
                          "```\n")
        .arg(tag, status);
}

ScriptedLlmServer::Reply streamed(const QString& text, int delayMs = 0)
{
    ScriptedLlmServer::Reply r;
    r.texts = {text};
    r.chunkChars = 12;
    r.chunkDelayMs = 2;
    r.delayMs = delayMs;
    return r;
}

QString describe(const UnitKey& u)
{
    return QStringLiteral("%1 turn %2 %3 sample %4").arg(u.task).arg(u.turn).arg(u.role).arg(u.sample);
}

/// What a run said about its model requests.
struct RequestLog
{
    QHash<qint64, QList<UnitKey>> started;
    QList<qint64> ended;
    QHash<UnitKey, QString> text;

    void watch(HeadlessRun& run)
    {
        QObject::connect(&run, &HeadlessRun::modelRequestStarted, &run, [this](qint64 id, const QList<UnitKey>& units) {
            QVERIFY2(!started.contains(id), "a request id started twice");
            started.insert(id, units);
        });
        QObject::connect(&run, &HeadlessRun::modelRequestEnded, &run,
                         [this](qint64 id, const QList<UnitKey>&) { ended << id; });
        QObject::connect(&run, &HeadlessRun::textStreamed, &run,
                         [this](const UnitKey& unit, const QString& chunk) { text[unit] += chunk; });
    }
    /// Every unit any request was started for, with how often.
    QHash<UnitKey, int> units() const
    {
        QHash<UnitKey, int> count;
        for (const QList<UnitKey>& list : started)
            for (const UnitKey& u : list)
                ++count[u];
        return count;
    }
};

} // namespace

class TestHeadlessRun : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<ScriptedLlmServer> m_server;
    int m_dbCount = 0;

    RunEnvironment environment()
    {
        return kwb::test::fakeWorkerEnvironment<RunEnvironment>(
            m_dir.filePath(QStringLiteral("run%1.db").arg(++m_dbCount)));
    }

    RunPlan plan(const QString& regime, const QStringList& tasks, int n = 0, int turns = 0)
    {
        RunRequest request;
        request.taskIds = tasks;
        request.regime = regime;
        request.n = n;
        request.turns = turns;
        request.endpoint = m_server->baseUrl().toString();
        request.model = QStringLiteral("m");
        request.timeoutS = 60;
        request.promptsDir = QStringLiteral(KWB_PROMPTS_DIR);
        QString error;
        const auto p = planRun(request, &error);
        if (!p)
            qFatal("plan: %s", qPrintable(error));
        return *p;
    }

    static bool waitFinished(HeadlessRun& run, int ms = 60000)
    {
        if (run.isOver())
            return true;
        QSignalSpy finished(&run, &HeadlessRun::finished);
        return finished.wait(ms);
    }

    /// No unit has two answers, and the server was asked once per stored row (no request repeated).
    void checkEachUnitAskedOnce(const RunStore& store, qint64 runId)
    {
        const QList<UnitResponse> responses = store.responses(runId);
        QSet<UnitKey> seen;
        for (const UnitResponse& r : responses) {
            QVERIFY2(!seen.contains(r.unit), qPrintable(QStringLiteral("asked twice: ") + describe(r.unit)));
            seen.insert(r.unit);
        }
        QCOMPARE(int(m_server->requests().size()), int(responses.size()));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        // The run's logic with the fake worker outside the OS sandbox: the fake stands in for the
        // OOM killer by SIGKILLing itself (which a sandboxed PID 1 cannot, src/worker/sandbox/sandboxinit.h)
        // and marks its stand-in builds in the extension cache (read-only to sandboxed workers).
        // The sandbox has its own tests (tst_workersupervisor, tests/security).
        qputenv("KWB_OS_SANDBOX", "0");
    }

    void init()
    {
        m_server = std::make_unique<ScriptedLlmServer>();
        QVERIFY(m_server->start());
        m_server->setDefaultReply(streamed(answer(QStringLiteral("default"), QStringLiteral("correct"))));
    }

    void cleanup() { m_server.reset(); }

    void runCompletesAndSaysWhichRequestServesWhichUnit_data()
    {
        QTest::addColumn<QString>("regime");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("turns");
        QTest::addColumn<QString>("firstStatus");
        QTest::addColumn<int>("evaluations");
        QTest::newRow("zero-shot") << QStringLiteral("zero-shot") << 1 << 1 << QStringLiteral("correct") << 2;
        // turn 1 fails to compile everywhere: turn 2 asks `retry` with the feedback
        QTest::newRow("iterative: a retry on turn 2")
            << QStringLiteral("iterative") << 2 << 2 << QStringLiteral("compile_error") << 8;
        QTest::newRow("agent: notes roles, then samples")
            << QStringLiteral("agent") << 2 << 1 << QStringLiteral("correct") << 4;
    }

    void runCompletesAndSaysWhichRequestServesWhichUnit()
    {
        QFETCH(QString, regime);
        QFETCH(int, n);
        QFETCH(int, turns);
        QFETCH(QString, firstStatus);
        QFETCH(int, evaluations);
        // Every HTTP call gets a text of its own, so a piece given to the wrong unit shows.
        for (int i = 0; i < 40; ++i)
            m_server->enqueue(
                streamed(answer(QStringLiteral("reply-%1").arg(i), i < 4 ? firstStatus : QStringLiteral("correct"))));
        HeadlessRun run(plan(regime, {QStringLiteral("L1/1"), QStringLiteral("L2/1")}, n, turns), environment());
        RequestLog log;
        log.watch(run);
        QList<HeadlessRun::State> states;
        connect(&run, &HeadlessRun::stateChanged, this, [&](HeadlessRun::State s) { states << s; });
        QStringList errors;
        connect(&run, &HeadlessRun::taskError, this,
                [&](const QString& task, const QString& message) { errors << task + QStringLiteral(": ") + message; });
        QSignalSpy ready(&run, &HeadlessRun::runReady);
        run.start();
        QVERIFY(waitFinished(run));
        QVERIFY2(run.state() == HeadlessRun::State::Finished, qPrintable(run.errorString()));
        QVERIFY2(errors.isEmpty(), qPrintable(errors.join(QLatin1Char('\n'))));
        QCOMPARE(states, (QList<HeadlessRun::State>{HeadlessRun::State::Preparing, HeadlessRun::State::Running,
                                                    HeadlessRun::State::Finished}));
        QCOMPARE(ready.size(), 1);
        QCOMPARE(run.tasksDone(), 2);
        QCOMPARE(run.tasksTotal(), 2);
        QCOMPARE(run.candidatesEvaluated(), evaluations);
        QCOMPARE(run.selected().size(), 2);
        QCOMPARE(run.requestsInFlight(), 0);

        RunStore store;
        QVERIFY(store.open(run.environment().databasePath));
        QCOMPARE(store.run(run.runId())->status, RunStatus::Finished);
        QCOMPARE(int(store.evaluations(run.runId()).size()), evaluations);
        const QList<UnitResponse> responses = store.responses(run.runId());
        QVERIFY(responses.size() >= 2);

        // The units the controller named are exactly the stored rows' units, each once; each
        // request is for one task, turn and role; every request ended once.
        const QHash<UnitKey, int> named = log.units();
        QCOMPARE(named.size(), responses.size());
        for (const UnitResponse& r : responses)
            QVERIFY2(named.value(r.unit) == 1, qPrintable(describe(r.unit)));
        for (const QList<UnitKey>& units : std::as_const(log.started)) {
            QVERIFY(!units.isEmpty());
            for (const UnitKey& u : units) {
                QCOMPARE(u.task, units.first().task);
                QCOMPARE(u.turn, units.first().turn);
                QCOMPARE(u.role, units.first().role);
            }
        }
        QCOMPARE(QSet<qint64>(log.ended.cbegin(), log.ended.cend()),
                 QSet<qint64>(log.started.keyBegin(), log.started.keyEnd()));
        QCOMPARE(log.ended.size(), log.started.size());
        // Every streamed piece went to the unit whose stored answer it is.
        for (const UnitResponse& r : responses)
            QVERIFY2(log.text.value(r.unit) == r.response.text,
                     qPrintable(QStringLiteral("%1: streamed \"%2\", stored \"%3\"")
                                    .arg(describe(r.unit), log.text.value(r.unit).left(12), r.response.text.left(12))));
        checkEachUnitAskedOnce(store, run.runId());
    }

    // Issue 14: the compile pool's size is the environment's, else the default for the run's
    // answer format (core/run/runlaunch.h); the run stores the number used; enough tasks are in
    // flight that every compile worker has a candidate: four KernelBench builds at once (the fake
    // worker's barrier holds each until four have started), none on the GPU.
    void compilePoolIsSizedStoredAndFed()
    {
        constexpr qint64 GiB = qint64(1) << 30;
        QCOMPARE(defaultCompileWorkers(QStringLiteral("native"), 16, 128 * GiB), 1);
        QCOMPARE(defaultCompileWorkers(QStringLiteral("kernelbench"), 16, 128 * GiB), 12); // the H200 machine
        QCOMPARE(defaultCompileWorkers(QStringLiteral("kernelbench"), 2, 24 * GiB), 1);    // CI's
        QCOMPARE(defaultCompileWorkers(QStringLiteral("kernelbench"), 16, 0), 12);         // memory unknown
        // The memory bounds it: a 16-core workstation with 32 GiB builds 4 at once (24 GiB of builds),
        // one with 8 GiB still one.
        QCOMPARE(defaultCompileWorkers(QStringLiteral("kernelbench"), 16, 32 * GiB), 4);
        QCOMPARE(defaultCompileWorkers(QStringLiteral("kernelbench"), 16, 8 * GiB), 1);
        QCOMPARE(defaultCompileWorkers(QStringLiteral("native"), 16, 8 * GiB), 1);
        // A chosen number over what the memory holds is warned about; within it, or native, not.
        QVERIFY(compileWorkersMemoryWarning(QStringLiteral("kernelbench"), 4, 32 * GiB).isEmpty());
        QVERIFY(compileWorkersMemoryWarning(QStringLiteral("native"), 64, 8 * GiB).isEmpty());
        QVERIFY(compileWorkersMemoryWarning(QStringLiteral("kernelbench"), 12, 0).isEmpty()); // unknown
        const QString warning = compileWorkersMemoryWarning(QStringLiteral("kernelbench"), 12, 32 * GiB);
        QVERIFY2(warning.startsWith(QStringLiteral("12 compile workers may build 12 KernelBench-format extensions at "
                                                   "once, about 72 GiB (6 GiB each), where 3/4 of this "
                                                   "machine's 32 GiB hold 4:")),
                 qPrintable(warning));
        QCOMPARE(defaultTasksInFlight(12, 1, 1), 13);
        QCOMPARE(defaultTasksInFlight(1, 1, 1), 2);
        QCOMPARE(defaultTasksInFlight(12, 1, 4), 4);
        QCOMPARE(defaultTasksInFlight(0, 2, 8), 2);

        const QString extensions = m_dir.filePath(QStringLiteral("extensions-pool"));
        QVERIFY(QDir().mkpath(extensions));
        QFile marker(QDir(extensions).filePath(QStringLiteral("fakeworker-builds"))); // the fake's builds go here
        QVERIFY(marker.open(QIODevice::WriteOnly));
        qputenv("KWB_EXTENSION_CACHE", extensions.toUtf8());
        const auto unset = qScopeGuard([] { qunsetenv("KWB_EXTENSION_CACHE"); });
        for (int i = 0; i < 4; ++i)
            m_server->enqueue(
                streamed(QStringLiteral("```python\nimport torch\nfrom torch.utils.cpp_extension import "
                                        "load_inline\n# sample %1 build_barrier: 4\nclass ModelNew(torch.nn.Module):\n"
                                        "    pass\n```\n")
                             .arg(i)));
        RunPlan kernelbench = plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")}, 2);
        kernelbench.answerFormat = QStringLiteral("kernelbench");
        RunEnvironment env = environment();
        env.compileWorkers = RunEnvironment::kAutomatic;
        QCOMPARE(HeadlessRun(kernelbench, env).compileWorkers(), defaultCompileWorkers(QStringLiteral("kernelbench")));
        env.compileWorkers = 4;
        env.maxTasksInFlight = 0; // automatic
        HeadlessRun run(kernelbench, env);
        QCOMPARE(run.compileWorkers(), 4);
        QCOMPARE(run.tasksInFlight(), 3); // 4 compile workers and a GPU, 2 candidates a task
        run.start();
        QVERIFY(waitFinished(run));
        QVERIFY2(run.state() == HeadlessRun::State::Finished, qPrintable(run.errorString()));
        QCOMPARE(run.controller()->maxTasksInFlight(), 3);
        QCOMPARE(run.candidatesEvaluated(), 4);

        RunStore store;
        QVERIFY(store.open(run.environment().databasePath));
        const RunConfig config = store.run(run.runId())->config;
        QCOMPARE(config.compileWorkers, std::optional<int>(4));

        QFile log(QDir(extensions).filePath(QStringLiteral("builds.jsonl")));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = log.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 4);
        for (const QByteArray& line : lines) {
            const QJsonObject build = QJsonDocument::fromJson(line).object();
            QCOMPARE(build.value(QLatin1String("by")).toString(), QStringLiteral("compile"));
            QVERIFY2(build.value(QLatin1String("barrier_met")).toBool(), line.constData());
        }
    }

    // --evaluations-per-gpu: each local GPU's slots keep a task in flight as a GPU does; a remote
    // target has one slot, so a run of remote workers alone has (and stores) one.
    void evaluationSlotsCountOnLocalGpusOnly()
    {
        const RunPlan p = plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1")}, 1);
        RunEnvironment env = environment();
        env.compileWorkers = 1;
        env.maxTasksInFlight = 0; // automatic
        env.gpuOrdinals = {0, 1};
        env.evaluationsPerGpu = 2;
        const HeadlessRun local(p, env);
        QCOMPARE(local.evaluationsPerGpu(), 2);
        QCOMPARE(local.tasksInFlight(), 5); // 1 compile worker and 2 GPUs of 2 slots, 1 candidate a task
        WorkerTarget remote;
        remote.kind = WorkerTarget::Kind::Ssh;
        remote.host = QStringLiteral("gpu-box");
        env.workers = {remote, remote};
        const HeadlessRun remoteOnly(p, env);
        QCOMPARE(remoteOnly.evaluationsPerGpu(), 1);
        QCOMPARE(remoteOnly.tasksInFlight(), 3);
        env.workers = {remote, WorkerTarget::local(0)};
        const HeadlessRun mixed(p, env);
        QCOMPARE(mixed.evaluationsPerGpu(), 2);
        QCOMPARE(mixed.tasksInFlight(), 4);
        env.workers.clear();
        env.evaluationsPerGpu = 9; // beyond the queue's most: what the queue would make of it
        QCOMPARE(HeadlessRun(p, env).evaluationsPerGpu(), EvaluationQueue::kMaxEvaluationsPerGpu);
    }

    // Unless told, the answer format decides (defaultEvaluationsPerGpu): one slot for native
    // answers, two for KernelBench's, whose loads are CPU work a second slot overlaps; told, the
    // number given; a remote target still has one.
    void evaluationSlotsDefaultByAnswerFormat()
    {
        RunPlan native = plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1")}, 1);
        RunPlan kernelbench = native;
        kernelbench.answerFormat = QStringLiteral("kernelbench");
        RunEnvironment env = environment();
        QCOMPARE(env.evaluationsPerGpu, RunEnvironment::kAutomatic);
        env.compileWorkers = 1;
        env.maxTasksInFlight = 0; // automatic
        QCOMPARE(HeadlessRun(native, env).evaluationsPerGpu(), 1);
        QCOMPARE(HeadlessRun(native, env).tasksInFlight(), 2);
        QCOMPARE(HeadlessRun(kernelbench, env).evaluationsPerGpu(), 2);
        QCOMPARE(HeadlessRun(kernelbench, env).tasksInFlight(), 3); // 1 compile worker, 2 slots
        QCOMPARE(defaultEvaluationsPerGpu(QStringLiteral("kernelbench")), 2);
        QCOMPARE(defaultEvaluationsPerGpu(QStringLiteral("native")), EvaluationQueue::kDefaultEvaluationsPerGpu);
        env.evaluationsPerGpu = 1;
        QCOMPARE(HeadlessRun(kernelbench, env).evaluationsPerGpu(), 1);
        env.evaluationsPerGpu = 3;
        QCOMPARE(HeadlessRun(native, env).evaluationsPerGpu(), 3);
        env.evaluationsPerGpu = RunEnvironment::kAutomatic;
        WorkerTarget remote;
        remote.kind = WorkerTarget::Kind::Ssh;
        remote.host = QStringLiteral("gpu-box");
        env.workers = {remote};
        QCOMPARE(HeadlessRun(kernelbench, env).evaluationsPerGpu(), 1);
    }

    void pauseThenResumeAsksNothingTwice_data()
    {
        QTest::addColumn<QString>("regime");
        QTest::addColumn<int>("n");
        QTest::newRow("zero-shot: paused during the first answer") << QStringLiteral("zero-shot") << 1;
        QTest::newRow("agent: paused during the analyzer") << QStringLiteral("agent") << 2;
    }

    // Issue 11, item 7: with the model server on this machine (the scripted one, 127.0.0.1) the
    // run sends no model request while a job of this process holds the run's GPU (here the test
    // itself, standing in for a measurement, then the run's own evaluations); with the setting off
    // it does. Checked on every request start, so no time limit decides it.
    void noModelRequestStartsWhileTheGpuIsHeld()
    {
        QFETCH(bool, pause);
        GpuLeases* leases = GpuLeases::instance();
        RunPlan p = plan(QStringLiteral("iterative"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")}, 1, 2);
        QCOMPARE(p.pauseGenerationWhileTiming, true); // on by default for a local endpoint
        p.pauseGenerationWhileTiming = pause;
        m_server->setDefaultReply(streamed(answer(QStringLiteral("t"), QStringLiteral("compile_error"))));
        HeadlessRun run(p, environment());
        // The run's device facts and profiles take the lease themselves: the measurement takes it
        // the moment they are all in, before the run asks the model anything.
        qint64 ticket = 0;
        connect(&run, &HeadlessRun::preparing, this, [&](int done, int total) {
            if (done == total && ticket == 0)
                ticket = leases->tryAcquire(0, QStringLiteral("test: a measurement"));
        });
        int startedWhileHeld = 0;
        connect(&run, &HeadlessRun::modelRequestStarted, this, [&] { startedWhileHeld += leases->isHeld(0) ? 1 : 0; });
        run.start();
        QTRY_COMPARE_WITH_TIMEOUT(run.state(), HeadlessRun::State::Running, 30000);
        QVERIFY(ticket != 0);
        if (pause) {
            // The run is running and has asked nothing; its tasks wait for the GPU to be free.
            for (int i = 0; i < 20; ++i)
                QTest::qWait(10);
            QCOMPARE(int(m_server->requests().size()), 0);
            QVERIFY(run.controller()->isGenerationPaused());
        } else {
            QTRY_VERIFY_WITH_TIMEOUT(m_server->requests().size() > 0, 30000);
        }
        leases->release(ticket);
        QVERIFY(waitFinished(run));
        QCOMPARE(run.state(), HeadlessRun::State::Finished);
        QCOMPARE(int(m_server->requests().size()), 4); // two tasks, two turns
        if (pause)
            QCOMPARE(startedWhileHeld, 0);
        else
            QVERIFY(startedWhileHeld > 0);
        for (const EvaluationRecord& e : run.store().evaluations(run.runId()))
            QCOMPARE(e.result.value(QLatin1String("generation_paused")).toBool(!pause), pause);
    }

    void noModelRequestStartsWhileTheGpuIsHeld_data()
    {
        QTest::addColumn<bool>("pause");
        QTest::newRow("paused (default for a local endpoint)") << true;
        QTest::newRow("not paused") << false;
    }

    void pauseThenResumeAsksNothingTwice()
    {
        QFETCH(QString, regime);
        QFETCH(int, n);
        m_server->enqueue(streamed(answer(QStringLiteral("first"), QStringLiteral("correct")), 800));
        RunEnvironment env = environment();
        env.maxTasksInFlight = 1;
        HeadlessRun run(plan(regime, {QStringLiteral("L1/1"), QStringLiteral("L2/1")}, n), env);
        RequestLog log;
        log.watch(run);
        run.start();
        QTRY_COMPARE_WITH_TIMEOUT(run.requestsInFlight(), 1, 20000);
        const QList<UnitKey> waitedFor = log.started.values().first();
        run.pause();
        QCOMPARE(run.state(), HeadlessRun::State::Pausing);
        QTRY_COMPARE_WITH_TIMEOUT(run.state(), HeadlessRun::State::Paused, 20000);
        QCOMPARE(m_server->requests().size(), 1); // the answer in flight was waited for, nothing new asked
        QCOMPARE(run.requestsInFlight(), 0);

        RunStore store;
        QVERIFY(store.open(env.databasePath));
        QCOMPARE(store.run(run.runId())->status, RunStatus::Cancelled);
        const QList<UnitResponse> kept = store.responses(run.runId());
        QCOMPARE(kept.size(), 1); // the answer is kept
        QCOMPARE(kept.first().unit, waitedFor.first());

        run.resume();
        QCOMPARE(run.state(), HeadlessRun::State::Running);
        QVERIFY(waitFinished(run));
        QCOMPARE(run.state(), HeadlessRun::State::Finished);
        QCOMPARE(store.run(run.runId())->status, RunStatus::Finished);
        // Every answer is correct: a regime that stops when correct has one turn per task, the
        // agent goes on for speed through all of its turns.
        const Regime built = *Regime::builtin(regime);
        QCOMPARE(int(store.evaluations(run.runId()).size()), 2 * n * (built.stopWhenCorrect ? 1 : built.turns));
        // The paused unit was not asked for again, and no other unit twice.
        const QHash<UnitKey, int> asked = log.units();
        QCOMPARE(asked.value(waitedFor.first()), 1);
        for (auto it = asked.cbegin(); it != asked.cend(); ++it)
            QVERIFY2(it.value() == 1, qPrintable(describe(it.key())));
        checkEachUnitAskedOnce(store, run.runId());
    }

    void cancelStopsAndLosesNothing()
    {
        // L1/1's answer comes at once, L2/1's only after 20 s: cancel while L2/1 is asked.
        m_server->enqueue(streamed(answer(QStringLiteral("first"), QStringLiteral("correct"))));
        m_server->setDefaultReply(streamed(answer(QStringLiteral("late"), QStringLiteral("correct")), 20000));
        RunEnvironment env = environment();
        env.maxTasksInFlight = 1;
        const RunPlan runPlan = plan(QStringLiteral("zero-shot"), {QStringLiteral("L1/1"), QStringLiteral("L2/1")});
        qint64 runId = 0;
        {
            HeadlessRun run(runPlan, env);
            RequestLog log;
            log.watch(run);
            run.start();
            RunStore watcher;
            QVERIFY(watcher.open(env.databasePath));
            QTRY_VERIFY_WITH_TIMEOUT(run.runId() > 0 && watcher.evaluations(run.runId()).size() == 1, 20000);
            QTRY_COMPARE_WITH_TIMEOUT(run.requestsInFlight(), 1, 20000);
            const QList<qint64> ids = log.started.keys();
            const qint64 inFlight = *std::max_element(ids.cbegin(), ids.cend()); // request ids rise
            QCOMPARE(log.started.value(inFlight).first().task, QStringLiteral("L2/1"));
            run.cancel();
            QVERIFY(waitFinished(run, 15000)); // before the answer could come
            QCOMPARE(run.state(), HeadlessRun::State::Cancelled);
            QCOMPARE(run.requestsInFlight(), 0);
            QVERIFY(log.ended.contains(inFlight)); // the cancelled request ended, for its unit's row to go
            runId = run.runId();
        }
        RunStore store;
        QVERIFY(store.open(env.databasePath));
        QCOMPARE(store.run(runId)->status, RunStatus::Cancelled);
        // What was committed stays: L1/1's prompt, answer, candidate and evaluation.
        const QList<UnitResponse> responses = store.responses(runId);
        QCOMPARE(responses.size(), 1);
        QCOMPARE(responses.first().unit.task, QStringLiteral("L1/1"));
        QCOMPARE(store.evaluations(runId).size(), 1);
        QCOMPARE(store.completedUnits(runId).size(), 1);

        // A resume asks only for L2/1.
        m_server->setDefaultReply(streamed(answer(QStringLiteral("resumed"), QStringLiteral("correct"))));
        const int asked = int(m_server->requests().size());
        QString error;
        std::optional<RunPlan> resumed = planResume(*store.run(runId), &error);
        QVERIFY2(resumed, qPrintable(error));
        HeadlessRun again(*resumed, env);
        RequestLog log;
        log.watch(again);
        again.start();
        QVERIFY(waitFinished(again));
        QCOMPARE(again.state(), HeadlessRun::State::Finished);
        QCOMPARE(again.runId(), runId);
        QCOMPARE(int(m_server->requests().size()) - asked, 1);
        QCOMPARE(log.units().keys(),
                 (QList<UnitKey>{UnitKey{QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator")}}));
        QCOMPARE(store.evaluations(runId).size(), 2);
        QCOMPARE(store.run(runId)->status, RunStatus::Finished);
    }

    void failuresSayWhat_data()
    {
        QTest::addColumn<QStringList>("tasks");
        QTest::addColumn<QString>("worker");
        QTest::addColumn<int>("failure");
        QTest::addColumn<QString>("profile");
        QTest::newRow("unknown task") << QStringList{QStringLiteral("L1/1"), QStringLiteral("L3/9")}
                                      << QStringLiteral(KWB_FAKEWORKER) << int(HeadlessRun::Failure::UnknownTask)
                                      << QString();
        QTest::newRow("no worker") << QStringList{QStringLiteral("L1/1")} << QString()
                                   << int(HeadlessRun::Failure::NoWorker) << QString();
        // Checked against the profiles the worker announces in hello, before anything is spent.
        QTest::newRow("unknown profile") << QStringList{QStringLiteral("L1/1")} << QStringLiteral(KWB_FAKEWORKER)
                                         << int(HeadlessRun::Failure::Profile) << QStringLiteral("fastest");
    }

    void failuresSayWhat()
    {
        QFETCH(QStringList, tasks);
        QFETCH(QString, worker);
        QFETCH(int, failure);
        QFETCH(QString, profile);
        RunEnvironment env = environment();
        env.workerProgram = worker;
        RunPlan p = plan(QStringLiteral("zero-shot"), tasks);
        if (!profile.isEmpty())
            p.profile = profile;
        HeadlessRun run(p, env);
        QSignalSpy failed(&run, &HeadlessRun::failed);
        run.start();
        QVERIFY(waitFinished(run));
        QCOMPARE(run.state(), HeadlessRun::State::Failed);
        QCOMPARE(int(run.failure()), failure);
        QCOMPARE(failed.size(), 1);
        QVERIFY(!run.errorString().isEmpty());
        if (!profile.isEmpty())
            QVERIFY2(run.errorString().contains(QLatin1String("kernelbench")), qPrintable(run.errorString()));
        QCOMPARE(m_server->requests().size(), 0);
        RunStore store;
        QVERIFY(store.open(env.databasePath));
        QCOMPARE(store.runs().size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestHeadlessRun)
#include "tst_headlessrun.moc"
