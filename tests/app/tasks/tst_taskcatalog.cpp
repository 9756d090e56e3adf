// TaskCatalog: the task list and the analyses through a WorkerSupervisor, without blocking, and
// every way that can go wrong (no worker, a worker that dies at start, one that crashes or hangs
// on one task, one that refuses a task); eager times from a run store.

#include "taskfixtures.h"

#include "core/store/runstore.h"
#include "core/tasks/taskcatalog.h"
#include "core/workers/workersupervisor.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;
using namespace kwb::test;

namespace {

constexpr int kWaitMs = 20000; // CI machines are slow and shared

bool waitForState(TaskCatalog& catalog, QList<TaskCatalog::State> states, int timeoutMs = kWaitMs)
{
    return QTest::qWaitFor([&] { return states.contains(catalog.state()); }, timeoutMs);
}

struct Fixture
{
    WorkerSupervisor supervisor;
    TaskCatalog catalog;

    explicit Fixture(const QString& program, const QStringList& arguments = {}, int timeoutMs = 10000)
    {
        supervisor.setProgram(program, arguments);
        supervisor.setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        supervisor.setKillGracePeriod(200);
        catalog.setSupervisor(&supervisor);
        catalog.setTimeouts(timeoutMs, timeoutMs);
    }
};

QList<qint64> shape(std::initializer_list<qint64> dims)
{
    return QList<qint64>(dims);
}

} // namespace

class TestTaskCatalog : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void loadsTasksThenAnalysesWithoutBlocking();
    void keepsLoaderErrors();
    void readsTaskFields();
    void goldenAnalyzeResponseWithoutIntensities();
    void refusedTaskAnalysisIsAFailedTask();
    void kernelBenchOnlyTasksAreListedNotAnalysed();
    void workerMissingFails();
    void workerDyingAtStartFails();
    void noSupervisorFailsLater();
    void crashOnOneTaskAnalysesTheRest();
    void hangOnOneTaskTimesOutAndGoesOn();
    void reloadCancelsTheLoadInFlight();
    void supervisorGoneMidLoad();
    void eagerTimesFromStore();
    void loadEagerTimesOnAThread();
    void realWorker();
};

void TestTaskCatalog::loadsTasksThenAnalysesWithoutBlocking()
{
    // A slow start (like libtorch loading) must not hold the caller.
    Fixture f(QStringLiteral(KWB_REPLAYWORKER),
              replayArguments({QStringLiteral("--hello-delay"), QStringLiteral("1000")}));
    QSignalSpy reset(&f.catalog, &TaskCatalog::tasksReset);
    QSignalSpy updated(&f.catalog, &TaskCatalog::taskUpdated);
    QSignalSpy progress(&f.catalog, &TaskCatalog::progressChanged);
    QSignalSpy states(&f.catalog, &TaskCatalog::stateChanged);

    QElapsedTimer clock;
    clock.start();
    f.catalog.load();
    QVERIFY2(clock.elapsed() < 500, "load() waited for the worker"); // which takes 1 s to say hello
    QCOMPARE(f.catalog.state(), TaskCatalog::State::LoadingTasks);
    QCOMPARE(f.catalog.taskCount(), 0);

    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}));
    QCOMPARE(f.catalog.state(), TaskCatalog::State::Ready);
    QVERIFY2(f.catalog.errorMessage().isEmpty(), qPrintable(f.catalog.errorMessage()));
    QCOMPARE(reset.count(), 1);
    QCOMPARE(f.catalog.taskCount(), 9);
    QCOMPARE(f.catalog.analyzedCount(), 9);

    // One taskUpdated per task, in the worker's order; progress climbs to the total.
    QStringList updatedIds;
    for (const QList<QVariant>& args : std::as_const(updated))
        updatedIds << args.at(0).toString();
    QCOMPARE(updatedIds, (QStringList{QStringLiteral("L1/1"), QStringLiteral("L1/4"), QStringLiteral("L1/5"),
                                      QStringLiteral("L2/1"), QStringLiteral("L2/2"), QStringLiteral("L2/6"),
                                      QStringLiteral("L2/9"), QStringLiteral("L3/1"), QStringLiteral("L3/4")}));
    QCOMPARE(progress.first(), (QList<QVariant>{0, 9}));
    QCOMPARE(progress.last(), (QList<QVariant>{9, 9}));
    QList<TaskCatalog::State> seen;
    for (const QList<QVariant>& args : std::as_const(states))
        seen << args.at(0).value<TaskCatalog::State>();
    QCOMPARE(seen, (QList<TaskCatalog::State>{TaskCatalog::State::LoadingTasks, TaskCatalog::State::Analyzing,
                                              TaskCatalog::State::Ready}));

    const TaskInfo* l21 = f.catalog.task(QStringLiteral("L2/1"));
    QVERIFY(l21);
    QVERIFY(l21->hasAnalysis());
    QCOMPARE(l21->analysis.flops, 300429803520.0);
    QCOMPARE(l21->analysis.bytesUnfused, 5739414528.0);
    QCOMPARE(l21->analysis.bytesFused, 1577616384.0);
    QCOMPARE(l21->analysis.ops.size(), 3);
    QCOMPARE(l21->analysis.ops.at(0).op, QStringLiteral("aten::conv2d"));
    QCOMPARE(l21->analysis.ops.at(0).shortName(), QStringLiteral("conv2d"));
    QCOMPARE(l21->analysis.ops.at(0).inputs.at(0), shape({128, 64, 128, 128}));
    QCOMPARE(l21->analysis.ops.at(0).output, shape({128, 128, 126, 126}));
    QCOMPARE(l21->analysis.ops.at(0).line, 2);
    QCOMPARE(l21->categories(), (QStringList{QStringLiteral("conv"), QStringLiteral("elementwise")}));
    QVERIFY(qAbs(l21->analysis.intensityFused - 300429803520.0 / 1577616384.0) < 1e-9);
}

void TestTaskCatalog::keepsLoaderErrors()
{
    Fixture f(QStringLiteral(KWB_REPLAYWORKER), {QStringLiteral("--tasks"), dataPath("tasks_bad.json"),
                                                 QStringLiteral("--analyses"), dataPath("analyze.json")});
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}));
    QCOMPARE(f.catalog.state(), TaskCatalog::State::Ready);
    // tasks_bad holds one good file (its L1/1 is in the recorded analyses) and 20 bad ones.
    QCOMPARE(f.catalog.taskCount(), 1);
    const QList<TaskLoadError> errors = f.catalog.loadErrors();
    QCOMPARE(errors.size(), 20);
    const TaskLoadError& dtype = *std::find_if(errors.cbegin(), errors.cend(), [](const TaskLoadError& e) {
        return e.path.endsWith(QLatin1String("unknown_dtype.toml"));
    });
    QCOMPARE(dtype.field, QStringLiteral("inputs[0].dtype"));
    QVERIFY(dtype.message.contains(QLatin1String("float31")));
    QVERIFY(dtype.toString().contains(QLatin1String("unknown_dtype.toml: inputs[0].dtype: unknown dtype")));
}

void TestTaskCatalog::readsTaskFields()
{
    TaskCatalog catalog;
    feedRecorded(catalog, false);
    const TaskInfo* t = catalog.task(QStringLiteral("L2/1"));
    QVERIFY(t);
    QCOMPARE(t->level, 2);
    QCOMPARE(t->number, 1);
    QCOMPARE(t->title, QStringLiteral("Conv2d, ReLU, bias add"));
    QCOMPARE(t->source, QStringLiteral("level2/1_Conv2D_ReLU_BiasAdd.py"));
    QVERIFY(t->description.startsWith(QLatin1String("Conv2d (64 -> 128")));
    QVERIFY(t->forward.startsWith(QLatin1String("def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:")));
    QCOMPARE(t->dims.size(), 6);
    QCOMPARE(t->dims.at(0).name, QStringLiteral("N"));
    QCOMPARE(t->dims.at(0).full, 128);
    QCOMPARE(t->dims.at(0).smoke, 2);
    QCOMPARE(t->inputs.size(), 1);
    QCOMPARE(t->inputs.at(0).shape,
             (QStringList{QStringLiteral("N"), QStringLiteral("C_in"), QStringLiteral("H"), QStringLiteral("W")}));
    QCOMPARE(t->inputs.at(0).full, shape({128, 64, 128, 128}));
    QCOMPARE(t->inputs.at(0).smoke, shape({2, 64, 12, 12}));
    QCOMPARE(t->inputs.at(0).generator, QStringLiteral("rand"));
    QCOMPARE(t->params.size(), 3);
    QCOMPARE(t->params.at(2).name, QStringLiteral("bias"));
    QCOMPARE(t->params.at(2).init, QStringLiteral("randn"));
    QVERIFY(!t->atol && !t->rtol); // null in the file: the profile's tolerance applies
    QCOMPARE(t->analysisState, TaskInfo::Analysis::Pending);
}

void TestTaskCatalog::goldenAnalyzeResponseWithoutIntensities()
{
    TaskCatalog catalog;
    feedRecorded(catalog, false);
    QSignalSpy updated(&catalog, &TaskCatalog::taskUpdated);
    QVERIFY(catalog.applyAnalyzeResponse(goldenResponse("06_analyze_l1_1.response.json")));
    QCOMPARE(updated.count(), 1);
    const TaskInfo* t = catalog.task(QStringLiteral("L1/1"));
    QVERIFY(t->hasAnalysis());
    QCOMPARE(t->analysis.flops, 137438953472.0);
    QCOMPARE(t->analysis.bytesUnfused, 201326592.0);
    QCOMPARE(t->analysis.bytesFused, 201326592.0);
    QCOMPARE(t->analysis.opCount, 1);
    QVERIFY(t->analysis.ops.isEmpty());
    QCOMPARE(t->analysis.outputShape, shape({4096, 4096}));
    // 2·4096³ FLOP over three 4096² fp32 matrices: 4096·2/12 FLOP/B.
    QVERIFY(qAbs(t->analysis.intensityFused - 4096.0 * 2 / 12) < 1e-9);
    QVERIFY(qAbs(t->analysis.intensityUnfused - 4096.0 * 2 / 12) < 1e-9);
}

void TestTaskCatalog::refusedTaskAnalysisIsAFailedTask()
{
    Fixture f(QStringLiteral(KWB_REPLAYWORKER), replayArguments({QStringLiteral("--forget"), QStringLiteral("L1/5")}));
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}));
    QCOMPARE(f.catalog.state(), TaskCatalog::State::Ready);
    const TaskInfo* t = f.catalog.task(QStringLiteral("L1/5"));
    QCOMPARE(t->analysisState, TaskInfo::Analysis::Failed);
    QCOMPARE(t->analysisError, QStringLiteral("unknown_task: no task L1/5"));
    QVERIFY(f.catalog.task(QStringLiteral("L2/1"))->hasAnalysis());

    // The golden unknown_task response names no task: applied directly it changes nothing.
    QVERIFY(!f.catalog.applyAnalyzeResponse(goldenResponse("05_unknown_task.response.json")));
}

// A task with no TorchScript reference (its file's kernelbench_only, issue 37) is listed with the
// reason as its failed analysis, and never sent to `analyze` (the worker would refuse it).
void TestTaskCatalog::kernelBenchOnlyTasksAreListedNotAnalysed()
{
    TaskCatalog catalog;
    QJsonObject response = recordedTasks();
    QJsonArray tasks = response.value(QLatin1String("tasks")).toArray();
    const int recorded = int(tasks.size());
    QJsonObject lstm{
        {QStringLiteral("id"), QStringLiteral("L3/35")},
        {QStringLiteral("level"), 3},
        {QStringLiteral("number"), 35},
        {QStringLiteral("title"), QStringLiteral("LSTM")},
        {QStringLiteral("kernelbench_only"), QStringLiteral("line 18: nn.LSTM (no functional translation here)")}};
    tasks.append(lstm);
    response.insert(QStringLiteral("tasks"), tasks);
    QVERIFY(catalog.applyTasksResponse(response));
    QCOMPARE(catalog.taskCount(), recorded + 1);
    const TaskInfo* t = catalog.task(QStringLiteral("L3/35"));
    QVERIFY(t);
    QVERIFY(t->isKernelBenchOnly());
    QCOMPARE(t->analysisState, TaskInfo::Analysis::Failed);
    QCOMPARE(t->analysisError, QStringLiteral("KernelBench only: line 18: nn.LSTM (no functional translation here)"));
    QCOMPARE(catalog.analyzedCount(), 1); // counted as done: nothing will be asked for it
    QVERIFY(!catalog.task(QStringLiteral("L1/1"))->isKernelBenchOnly());
    QCOMPARE(catalog.task(QStringLiteral("L1/1"))->analysisState, TaskInfo::Analysis::Pending);
    QVERIFY(TaskInfo::fromJson(lstm).isKernelBenchOnly());
}

void TestTaskCatalog::workerMissingFails()
{
    Fixture f(QStringLiteral("/nonexistent/kwb-worker"));
    QElapsedTimer clock;
    clock.start();
    f.catalog.load();
    QVERIFY(clock.elapsed() < 500);
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Failed}, 10000));
    QVERIFY2(f.catalog.errorMessage().contains(wireName(EvaluationStatus::StartFailed)),
             qPrintable(f.catalog.errorMessage()));
    QVERIFY(f.catalog.errorMessage().contains(QLatin1String("could not get the tasks")));
    QCOMPARE(f.catalog.taskCount(), 0);
}

void TestTaskCatalog::workerDyingAtStartFails()
{
    // Like a worker whose libtorch is missing: a loader error on stderr, exit 127 before hello.
    Fixture f(QStringLiteral(KWB_FAKEWORKER), {QStringLiteral("--hello"), QStringLiteral("exit_127")});
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Failed}, 10000));
    QVERIFY2(f.catalog.errorMessage().contains(wireName(EvaluationStatus::StartFailed)),
             qPrintable(f.catalog.errorMessage()));
    QCOMPARE(f.catalog.taskCount(), 0);

    // The next load tries again (and fails the same way), it is not stuck.
    QSignalSpy states(&f.catalog, &TaskCatalog::stateChanged);
    f.catalog.load();
    QCOMPARE(f.catalog.state(), TaskCatalog::State::LoadingTasks);
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Failed}, 10000));
    QCOMPARE(states.count(), 2);
}

void TestTaskCatalog::noSupervisorFailsLater()
{
    TaskCatalog catalog;
    QSignalSpy states(&catalog, &TaskCatalog::stateChanged);
    catalog.setUnavailable(QStringLiteral("kwb-worker not found (looked next to the program)"));
    QCOMPARE(states.count(), 0); // from the event loop, so a caller may connect after
    QVERIFY(states.wait(2000));
    QCOMPARE(catalog.state(), TaskCatalog::State::Failed);
    QCOMPARE(catalog.errorMessage(), QStringLiteral("kwb-worker not found (looked next to the program)"));

    TaskCatalog bare;
    bare.load();
    QVERIFY(waitForState(bare, {TaskCatalog::State::Failed}, 2000));
    QVERIFY(!bare.errorMessage().isEmpty());
}

void TestTaskCatalog::crashOnOneTaskAnalysesTheRest()
{
    Fixture f(QStringLiteral(KWB_REPLAYWORKER),
              replayArguments({QStringLiteral("--crash-on-analyze"), QStringLiteral("L2/1")}));
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}));
    QCOMPARE(f.catalog.state(), TaskCatalog::State::Ready);
    const TaskInfo* crashed = f.catalog.task(QStringLiteral("L2/1"));
    QCOMPARE(crashed->analysisState, TaskInfo::Analysis::Failed);
    QVERIFY2(crashed->analysisError.startsWith(wireName(EvaluationStatus::Crashed)),
             qPrintable(crashed->analysisError));
    int done = 0;
    for (const TaskInfo& t : f.catalog.tasks())
        done += t.hasAnalysis() ? 1 : 0;
    QCOMPARE(done, 8);
    QCOMPARE(f.catalog.analyzedCount(), 9);
}

void TestTaskCatalog::hangOnOneTaskTimesOutAndGoesOn()
{
    Fixture f(QStringLiteral(KWB_REPLAYWORKER),
              replayArguments({QStringLiteral("--hang-on-analyze"), QStringLiteral("L1/4")}), 1500);
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}));
    QCOMPARE(f.catalog.state(), TaskCatalog::State::Ready);
    const TaskInfo* hung = f.catalog.task(QStringLiteral("L1/4"));
    QCOMPARE(hung->analysisState, TaskInfo::Analysis::Failed);
    QVERIFY2(hung->analysisError.startsWith(wireName(EvaluationStatus::Timeout)), qPrintable(hung->analysisError));
    QVERIFY(f.catalog.task(QStringLiteral("L3/4"))->hasAnalysis());
}

void TestTaskCatalog::reloadCancelsTheLoadInFlight()
{
    Fixture f(QStringLiteral(KWB_REPLAYWORKER),
              replayArguments({QStringLiteral("--hello-delay"), QStringLiteral("200")}));
    QSignalSpy reset(&f.catalog, &TaskCatalog::tasksReset);
    f.catalog.load();
    f.catalog.load(); // the first request is cancelled; only the second one's answer counts
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}));
    QCOMPARE(f.catalog.state(), TaskCatalog::State::Ready);
    QCOMPARE(reset.count(), 1);
    QCOMPARE(f.catalog.analyzedCount(), 9);

    // cancel() mid-analysis (here from a slot, as a window closing would) keeps what arrived
    // and stops asking.
    QObject context;
    connect(&f.catalog, &TaskCatalog::progressChanged, &context, [&f](int analyzed) {
        if (analyzed == 3)
            f.catalog.cancel();
    });
    f.catalog.load();
    QVERIFY(QTest::qWaitFor([&] { return f.catalog.state() == TaskCatalog::State::Ready; }, kWaitMs));
    QCOMPARE(f.catalog.errorMessage(), QStringLiteral("analysis cancelled"));
    QCOMPARE(f.catalog.analyzedCount(), 3);
    QTest::qWait(300);
    QCOMPARE(f.catalog.analyzedCount(), 3);
    QCOMPARE(f.supervisor.pendingCount(), 0);
    QCOMPARE(f.catalog.task(QStringLiteral("L2/1"))->analysisState, TaskInfo::Analysis::Pending);
}

void TestTaskCatalog::supervisorGoneMidLoad()
{
    auto* supervisor = new WorkerSupervisor;
    supervisor->setProgram(QStringLiteral(KWB_REPLAYWORKER),
                           replayArguments({QStringLiteral("--hello-delay"), QStringLiteral("300")}));
    TaskCatalog catalog;
    catalog.setSupervisor(supervisor);
    catalog.load();
    QCOMPARE(catalog.state(), TaskCatalog::State::LoadingTasks);
    delete supervisor; // e.g. the window closing first
    QCOMPARE(catalog.state(), TaskCatalog::State::Failed);
    QCOMPARE(catalog.errorMessage(), QStringLiteral("the worker supervisor was shut down"));
    QVERIFY(!catalog.supervisor());
    catalog.load(); // no supervisor now: fails from the event loop, does not crash
    QVERIFY(waitForState(catalog, {TaskCatalog::State::Failed}, 2000));
}

namespace {

// One evaluated candidate of `task` in run `runId`, with that reference mean (or no timing).
void addEvaluation(RunStore& store, qint64 runId, const QString& task, std::optional<double> referenceMs)
{
    PromptRecord prompt;
    prompt.runId = runId;
    prompt.task = task;
    prompt.role = QStringLiteral("zero_shot");
    prompt.text = QStringLiteral("write a kernel");
    const std::optional<qint64> promptId = store.addPrompt(prompt);
    QVERIFY2(promptId, qPrintable(store.errorString()));
    ResponseRecord response;
    response.promptId = *promptId;
    response.text = QStringLiteral("```cuda\n```");
    const std::optional<qint64> responseId = store.addResponse(response);
    QVERIFY(responseId);
    CandidateRecord candidate;
    candidate.responseId = *responseId;
    candidate.task = task;
    candidate.parsedOk = true;
    const std::optional<qint64> candidateId = store.addCandidate(candidate);
    QVERIFY(candidateId);
    QJsonObject result{
        {QStringLiteral("status"), referenceMs ? QStringLiteral("correct") : QStringLiteral("compile_error")}};
    if (referenceMs)
        result.insert(QStringLiteral("timing"),
                      QJsonObject{{QStringLiteral("reference"), QJsonObject{{QStringLiteral("mean_ms"), *referenceMs}}},
                                  {QStringLiteral("candidate"), QJsonObject{{QStringLiteral("mean_ms"), 1.0}}}});
    QVERIFY(store.addEvaluation(*candidateId, result));
}

qint64 createRun(RunStore& store, const QString& gpuName)
{
    // As a run stores its configuration (core/config/runconfig.h): the worker's device answer as `gpu`.
    const QJsonObject config{
        {QStringLiteral("model"), QStringLiteral("qwen")},
        {QStringLiteral("gpu"), QJsonObject{{QStringLiteral("available"), true}, {QStringLiteral("name"), gpuName}}}};
    const std::optional<qint64> id = store.createRun(QStringLiteral("run"), QStringLiteral("zero-shot"), config);
    if (!id)
        qFatal("createRun: %s", qPrintable(store.errorString()));
    return *id;
}

void fillStore(RunStore& store)
{
    const qint64 h200 = createRun(store, QStringLiteral("NVIDIA H200"));
    const qint64 a100 = createRun(store, QStringLiteral("NVIDIA A100-SXM4-80GB"));
    const qint64 laterH200 = createRun(store, QStringLiteral("NVIDIA H200"));
    addEvaluation(store, h200, QStringLiteral("L2/1"), 2.5);
    addEvaluation(store, h200, QStringLiteral("L1/1"), 0.9);
    addEvaluation(store, a100, QStringLiteral("L2/1"), 7.0);
    addEvaluation(store, a100, QStringLiteral("L1/5"), 3.0);
    addEvaluation(store, laterH200, QStringLiteral("L2/1"), 2.25);         // the most recent on the H200
    addEvaluation(store, laterH200, QStringLiteral("L1/1"), std::nullopt); // did not compile: no timing
}

} // namespace

void TestTaskCatalog::eagerTimesFromStore()
{
    QTemporaryDir dir;
    RunStore store;
    QVERIFY(store.open(dir.filePath(QStringLiteral("runs.db"))));
    fillStore(store);

    const QHash<QString, EagerTime> h200 = TaskCatalog::eagerTimesFromStore(store, QStringLiteral("NVIDIA H200"));
    QCOMPARE(h200.size(), 2);
    QCOMPARE(h200.value(QStringLiteral("L2/1")).meanMs, 2.25);
    QCOMPARE(h200.value(QStringLiteral("L2/1")).runId, 3);
    QCOMPARE(h200.value(QStringLiteral("L1/1")).meanMs, 0.9);
    QVERIFY(h200.value(QStringLiteral("L1/1")).measured.isValid());
    QVERIFY(!h200.contains(QStringLiteral("L1/5"))); // measured on another GPU only

    const QHash<QString, EagerTime> a100 =
        TaskCatalog::eagerTimesFromStore(store, QStringLiteral("NVIDIA A100-SXM4-80GB"));
    QCOMPARE(a100.value(QStringLiteral("L2/1")).meanMs, 7.0);
    QCOMPARE(a100.value(QStringLiteral("L1/5")).meanMs, 3.0);
    QVERIFY(TaskCatalog::eagerTimesFromStore(store, QStringLiteral("NVIDIA L40S")).isEmpty());

    TaskCatalog catalog;
    QSignalSpy changed(&catalog, &TaskCatalog::eagerTimesChanged);
    catalog.setEagerTimes(QHash<QString, double>{{QStringLiteral("L2/1"), 2.0}}, QStringLiteral("NVIDIA H200"));
    QCOMPARE(changed.count(), 1);
    QCOMPARE(catalog.eagerTime(QStringLiteral("L2/1"))->meanMs, 2.0);
    QVERIFY(!catalog.eagerTime(QStringLiteral("L1/1")));
    QCOMPARE(catalog.eagerGpuName(), QStringLiteral("NVIDIA H200"));
}

void TestTaskCatalog::loadEagerTimesOnAThread()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("runs.db"));
    {
        RunStore store;
        QVERIFY(store.open(path));
        fillStore(store);
    }
    TaskCatalog catalog;
    QSignalSpy changed(&catalog, &TaskCatalog::eagerTimesChanged);
    catalog.loadEagerTimes(path, QStringLiteral("NVIDIA H200"));
    QCOMPARE(changed.count(), 0); // read on another thread, delivered later
    QVERIFY(changed.wait(10000));
    QVERIFY2(catalog.eagerTimesError().isEmpty(), qPrintable(catalog.eagerTimesError()));
    QCOMPARE(catalog.eagerTime(QStringLiteral("L2/1"))->meanMs, 2.25);
    QCOMPARE(catalog.eagerGpuName(), QStringLiteral("NVIDIA H200"));

    // A second request overtakes a first one still running: only the last one lands.
    changed.clear();
    catalog.loadEagerTimes(path, QStringLiteral("NVIDIA H200"));
    catalog.loadEagerTimes(path, QStringLiteral("NVIDIA A100-SXM4-80GB"));
    QVERIFY(QTest::qWaitFor([&] { return catalog.eagerGpuName() == QLatin1String("NVIDIA A100-SXM4-80GB"); }, 10000));
    QTest::qWait(200);
    QCOMPARE(catalog.eagerGpuName(), QStringLiteral("NVIDIA A100-SXM4-80GB"));
    QCOMPARE(catalog.eagerTime(QStringLiteral("L2/1"))->meanMs, 7.0);

    // A file that is not there is not created, and says so.
    const QString missing = dir.filePath(QStringLiteral("none.db"));
    catalog.loadEagerTimes(missing, QStringLiteral("NVIDIA H200"));
    QVERIFY(!catalog.eagerTime(QStringLiteral("L2/1")));
    QVERIFY(catalog.eagerTimesError().contains(missing));
    QVERIFY(!QFile::exists(missing));

    // Destroying the catalog while a reader runs is safe.
    auto* transient = new TaskCatalog;
    transient->loadEagerTimes(path, QStringLiteral("NVIDIA H200"));
    delete transient;
}

void TestTaskCatalog::realWorker()
{
#ifndef KWB_REAL_WORKER
    QSKIP("kwb-worker is not built here (KWB_BUILD_WORKER=OFF)");
#else
    // `tasks` and `analyze` run on the CPU: no GPU needed. Loading libtorch takes seconds.
    Fixture f(QStringLiteral(KWB_REAL_WORKER), {}, 90000);
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}, 180000));
    QVERIFY2(f.catalog.state() == TaskCatalog::State::Ready, qPrintable(f.catalog.errorMessage()));
    QCOMPARE(f.catalog.taskCount(), 250);
    QVERIFY(f.catalog.loadErrors().isEmpty());
    int kernelBenchOnly = 0;
    for (const TaskInfo& t : f.catalog.tasks()) {
        if (t.isKernelBenchOnly()) { // listed with its reason, never analysed
            ++kernelBenchOnly;
            QVERIFY(t.analysisError.startsWith(QStringLiteral("KernelBench only: ")));
            continue;
        }
        QVERIFY2(t.hasAnalysis(), qPrintable(t.id + QStringLiteral(": ") + t.analysisError));
    }
    QVERIFY(kernelBenchOnly > 0 && kernelBenchOnly < 50);
    // The same numbers as the golden file and the recording the replay worker serves.
    QCOMPARE(f.catalog.task(QStringLiteral("L1/1"))->analysis.flops, 137438953472.0);
    QCOMPARE(f.catalog.task(QStringLiteral("L2/1"))->analysis.bytesFused, 1577616384.0);

    // Loader errors of a directory of broken task files are kept.
    f.catalog.setTasksDir(QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/tasks_bad"));
    f.catalog.load();
    QVERIFY(waitForState(f.catalog, {TaskCatalog::State::Ready, TaskCatalog::State::Failed}, 180000));
    QVERIFY(f.catalog.loadErrors().size() >= 20);
#endif
}

QTEST_GUILESS_MAIN(TestTaskCatalog)
#include "tst_taskcatalog.moc"
