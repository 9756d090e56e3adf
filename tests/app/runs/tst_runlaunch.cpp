// core/runlaunch: task specs, ablation names, plans (new and resumed), the stored configuration,
// and RunFactsLoader against the fake worker, which answers without ever blocking the caller.

#include "core/run/runlaunch.h"
#include "core/workers/workersupervisor.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace kwb;

// The model seed of the built-in regimes (regimes/study.toml): the study ran one seed.
constexpr qint64 kRegimeModelSeed = 42;

class TestRunLaunch : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void localEndpoints_data()
    {
        QTest::addColumn<QString>("url");
        QTest::addColumn<bool>("local");
        QTest::newRow("localhost") << QStringLiteral("http://localhost:8080/v1") << true;
        QTest::newRow("LOCALHOST") << QStringLiteral("http://LOCALHOST/v1") << true;
        QTest::newRow("127.0.0.1") << QStringLiteral("http://127.0.0.1:8080/v1") << true;
        QTest::newRow("127.8.9.10") << QStringLiteral("https://127.8.9.10/v1") << true;
        QTest::newRow("::1") << QStringLiteral("http://[::1]:8080/v1") << true;
        QTest::newRow("LAN") << QStringLiteral("http://192.168.1.5:8080/v1") << false;
        QTest::newRow("remote name") << QStringLiteral("https://api.example.com/v1") << false;
        QTest::newRow("128.0.0.1") << QStringLiteral("http://128.0.0.1/v1") << false;
        QTest::newRow("localhost lookalike") << QStringLiteral("http://localhost.example.com/v1") << false;
    }

    // The pause-generation default: on exactly for a server on this machine.
    void localEndpoints()
    {
        QFETCH(QString, url);
        QFETCH(bool, local);
        QCOMPARE(isLocalEndpoint(url), local);
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1")};
        request.regime = QStringLiteral("zero-shot");
        request.endpoint = url;
        QString error;
        QCOMPARE(planRun(request, &error)->pauseGenerationWhileTiming, local);
        request.pauseGenerationWhileTiming = !local;
        QCOMPARE(planRun(request, &error)->pauseGenerationWhileTiming, !local);
    }

    void noEvaluatorFromHello()
    {
        const QJsonObject gpu{{QStringLiteral("ok"), true},
                              {QStringLiteral("protocol"), 1},
                              {QStringLiteral("cuda_device_count"), 1},
                              {QStringLiteral("driver"), QStringLiteral("ok")}};
        QVERIFY(noEvaluatorReason(decodeHello(gpu), {}).isEmpty());
        QJsonObject none = gpu;
        none.insert(QStringLiteral("cuda_device_count"), 0);
        none.insert(QStringLiteral("driver"), QStringLiteral("libcuda.so.1 not found"));
        QVERIFY(noEvaluatorReason(decodeHello(none), {})
                    .contains(QStringLiteral("no CUDA device (driver: libcuda.so.1 not found)")));
        QJsonObject badDriver = gpu;
        badDriver.insert(QStringLiteral("driver"), QStringLiteral("driver too old"));
        QVERIFY(noEvaluatorReason(decodeHello(badDriver), {}).contains(QStringLiteral("driver too old")));
    }

    void taskSpecs()
    {
        QString error;
        const QStringList ids = parseTaskSpec(QStringLiteral("L1:1-3, L2:5,L1/2,L3:10"), &error);
        QCOMPARE(ids, (QStringList{QStringLiteral("L1/1"), QStringLiteral("L1/2"), QStringLiteral("L1/3"),
                                   QStringLiteral("L2/5"), QStringLiteral("L3/10")}));
        QVERIFY(parseTaskSpec(QStringLiteral("L1:3-1"), &error).isEmpty());
        QVERIFY(error.contains(QStringLiteral("range goes up")));
        QVERIFY(parseTaskSpec(QStringLiteral("level one"), &error).isEmpty());

        QCOMPARE(taskSpecFor(ids), QStringLiteral("L1:1-3,L2:5,L3:10"));
        QCOMPARE(taskSpecFor({QStringLiteral("L1/1"), QStringLiteral("L1/3"), QStringLiteral("L1/4")}),
                 QStringLiteral("L1:1,L1:3-4"));
        QCOMPARE(taskSpecFor({}), QString());
        // The spec a page writes reads back to the same tasks.
        const QStringList picked{QStringLiteral("L2/1"), QStringLiteral("L2/2"), QStringLiteral("L3/7")};
        QCOMPARE(parseTaskSpec(taskSpecFor(picked), &error), picked);
    }

    // Issue 37's task sets: study (the default: the study's 30), level1-3, all, and lists of sets
    // and ranges; the set names are KernelBench's numbering, not what a worker lists.
    void taskSets()
    {
        QString error;
        QCOMPARE(defaultTaskSet(), QStringLiteral("study"));
        const QStringList study = parseTaskSpec(QStringLiteral("study"), &error);
        QCOMPARE(study.size(), 30);
        QCOMPARE(study.first(), QStringLiteral("L1/1"));
        QCOMPARE(study.last(), QStringLiteral("L3/10"));
        QCOMPARE(taskSpecFor(study), QStringLiteral("L1:1-10,L2:1-10,L3:1-10"));
        QCOMPARE(parseTaskSpec(QStringLiteral("level1"), &error).size(), 100);
        QCOMPARE(parseTaskSpec(QStringLiteral("level2"), &error).last(), QStringLiteral("L2/100"));
        QCOMPARE(parseTaskSpec(QStringLiteral("level3"), &error).size(), 50);
        const QStringList all = parseTaskSpec(QStringLiteral("all"), &error);
        QCOMPARE(all.size(), 250);
        QCOMPARE(all.at(100), QStringLiteral("L2/1"));
        // Mixed, without repeats, in order.
        const QStringList mixed = parseTaskSpec(QStringLiteral(" study , L3:11-12,L1/3"), &error);
        QCOMPARE(mixed.size(), 32);
        QCOMPARE(mixed.mid(30), (QStringList{QStringLiteral("L3/11"), QStringLiteral("L3/12")}));
        QVERIFY(namesTaskSet(QStringLiteral("study,L3:11-12")));
        QVERIFY(!namesTaskSet(QStringLiteral("L1:1-10")));
        QVERIFY(parseTaskSpec(QStringLiteral("level4"), &error).isEmpty());
        QVERIFY2(error.contains(QStringLiteral("study, level1, level2, level3, all")), qPrintable(error));
        QCOMPARE(parseTaskIds(QStringLiteral("study"), &error), QStringList());
        // A run of a set records the set's name.
        RunRequest request;
        request.taskIds = all;
        request.taskSpec = QStringLiteral("all");
        request.regime = QStringLiteral("zero-shot");
        const auto plan = planRun(request, &error);
        QVERIFY(plan);
        QCOMPARE(plan->taskSpec, QStringLiteral("all"));
        QVERIFY(plan->runName().contains(QStringLiteral("all")));
    }

    void ablationNames()
    {
        QString unknown;
        const Ablations a = ablationsFromList(QStringLiteral("best-of-n, competence,monotone"), &unknown);
        QVERIFY(unknown.isEmpty());
        QVERIFY(!a.bestOfN && !a.competenceMatched && !a.monotone && a.feedbackAnalyzer);
        ablationsFromList(QStringLiteral("feedback_analyzer,warp-speed"), &unknown);
        QCOMPARE(unknown, QStringLiteral("warp_speed"));
    }

    void plansApplyOverridesAndAblations()
    {
        RunRequest request;
        request.taskIds = {QStringLiteral("L2/1"), QStringLiteral("L2/2")};
        request.regime = QStringLiteral("agent");
        request.ablations.feedbackAnalyzer = false;
        request.turns = 2;
        request.temperature = 0.2;
        QString error;
        const auto plan = planRun(request, &error);
        QVERIFY2(plan, qPrintable(error));
        Regime expected = Regime::builtin(QStringLiteral("agent"))->withAblations(request.ablations);
        expected.turns = 2;
        expected.temperature = 0.2;
        QCOMPARE(plan->regime, expected);
        QVERIFY(plan->regime.feedback == FeedbackMode::RawLog);
        QCOMPARE(plan->regime.n, 4);
        QCOMPARE(plan->taskSpec, QStringLiteral("L2:1-2"));
        QCOMPARE(plan->runName(), QStringLiteral("agent -feedback_analyzer L2:1-2"));
        QVERIFY(plan->wantsProfile());

        request.routing = Routing::studyEstimate();
        const auto routed = planRun(request, &error);
        QVERIFY(routed);
        QCOMPARE(routed->regimeLabel(), QStringLiteral("routing"));
        QCOMPARE(routed->levelRegimes.value(2).name, QStringLiteral("agent"));
        QCOMPARE(routed->levelRegimes.value(2).turns, 2);
        QCOMPARE(routed->regimeForLevel(1).name, QStringLiteral("profiling-guided"));
        QCOMPARE(routed->regimeForLevel(7).name, QStringLiteral("profiling-guided")); // the fallback

        request.routing.reset();
        request.regime = QStringLiteral("no-such-regime");
        QVERIFY(!planRun(request, &error));
        QVERIFY(error.contains(QStringLiteral("zero-shot")));
        request.regime = QStringLiteral("zero-shot");
        request.taskIds.clear();
        QVERIFY(!planRun(request, &error));
    }

    void sweepsSampleTheLargestNOnOneTurn()
    {
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1")};
        request.regime = QStringLiteral("agent");
        request.sweepNs = {4, 1, 2};
        request.promptsDir = QStringLiteral(KWB_PROMPTS_DIR);
        QString error;
        const auto plan = planRun(request, &error);
        QVERIFY(plan);
        // The whole regime at each n: one plan per n, every turn, one sweep id and model seed.
        QCOMPARE(plan->regime.turns, 3);
        QCOMPARE(plan->sweepNs, (QList<int>{1, 2, 4}));
        QCOMPARE(*plan->modelSeed, kRegimeModelSeed);
        const QList<RunPlan> plans = sweepRunPlans(*plan);
        QCOMPARE(plans.size(), 3);
        QCOMPARE(plans[0].regime.n, 1);
        QCOMPARE(plans[2].regime.n, 4);
        QCOMPARE(plans[2].regime.turns, 3);
        QVERIFY(!plans[0].sweepId.isEmpty());
        QCOMPARE(plans[1].sweepId, plans[0].sweepId);
        QCOMPARE(plans[2].runName(), QStringLiteral("agent sweep n=4 L1:1"));
        const auto config = runConfigFor(plans[2], {}, {}, &error);
        QVERIFY(config);
        QVERIFY(config->sweep);
        QCOMPARE(config->sweep->ns, (QList<int>{1, 2, 4}));
        // As stored: the sweep's n values, no timing trials of its own, a fresh worker per candidate.
        const QJsonObject stored = config->toJson();
        QCOMPARE(stored.value(QLatin1String("sweep")).toObject().value(QLatin1String("ns")).toArray(),
                 (QJsonArray{1, 2, 4}));
        QVERIFY(stored.value(QLatin1String("timing_trials")).isNull());
        QCOMPARE(stored.value(QLatin1String("isolation")).toString(), QStringLiteral("fresh"));

        request.sweepNs.clear();
        request.ablations.bestOfN = false;
        request.ablations.monotone = false;
        QCOMPARE(planRun(request, &error)->runName(), QStringLiteral("agent -best_of_n,-monotone L1:1"));
    }

    void storedConfigurationResumesToTheSamePlan()
    {
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1"), QStringLiteral("L2/1")};
        request.routing = Routing::studyEstimate();
        request.n = 2;
        request.endpoint = QStringLiteral("http://example.invalid:9/v1");
        request.model = QStringLiteral("qwen");
        request.profile = QStringLiteral("kernelbench-v0.1");
        request.scale = QStringLiteral("smoke");
        request.timeoutS = 30;
        request.timingTrials = 12;
        request.isolation = QStringLiteral("reuse");
        request.promptsDir = QStringLiteral(KWB_PROMPTS_DIR);
        QString error;
        const auto plan = planRun(request, &error);
        QVERIFY(plan);
        const DeviceFacts device = decodeDeviceFacts(
            QJsonObject{{QStringLiteral("available"), true}, {QStringLiteral("arch"), QStringLiteral("sm_90")}});
        const HelloInfo hello = decodeHello(
            QJsonObject{{QStringLiteral("worker"), QStringLiteral("kwb-worker 0.1")}, {QStringLiteral("protocol"), 1}});
        const auto config = runConfigFor(*plan, device, hello, &error);
        QVERIFY2(config, qPrintable(error));
        QVERIFY(config->templates.contains(QStringLiteral("agent/triager")));
        QVERIFY(config->templates.contains(QStringLiteral("profiling-guided/generator")));
        QVERIFY(config->templates.contains(QStringLiteral("partials/contract")));
        QCOMPARE(config->versions.worker, QStringLiteral("kwb-worker 0.1"));
        QCOMPARE(config->seeds.evaluation, qint64(kRunEvaluationSeed));
        QCOMPARE(config->taskSpec, QStringLiteral("L1:1,L2:1"));

        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("runs.db"))));
        const auto id = store.createRun(plan->runName(), plan->regimeLabel(), config->toJson());
        QVERIFY(id);
        const auto resumed = planResume(*store.run(*id), &error);
        QVERIFY2(resumed, qPrintable(error));
        QCOMPARE(resumed->resumeRunId, *id);
        QCOMPARE(resumed->regime, plan->regime);
        QCOMPARE(resumed->levelRegimes, plan->levelRegimes);
        QVERIFY(resumed->routing);
        QCOMPARE(resumed->routing->byLevel, plan->routing->byLevel);
        QCOMPARE(resumed->taskIds, plan->taskIds);
        QCOMPARE(resumed->endpoint, plan->endpoint);
        QCOMPARE(resumed->model, plan->model);
        QCOMPARE(resumed->profile, plan->profile);
        QCOMPARE(resumed->scale, plan->scale);
        QCOMPARE(resumed->timeoutS, 30.0);
        QCOMPARE(resumed->timingTrials, 12);
        QCOMPARE(resumed->isolation, QStringLiteral("reuse"));
        QVERIFY(resumed->sweepNs.isEmpty());
        QCOMPARE(evaluationOptionsFor(*resumed).timingTrials, 12);
        QCOMPARE(WorkerRequests::evaluate(evaluationOptionsFor(*resumed)),
                 WorkerRequests::evaluate(evaluationOptionsFor(*plan)));

        // What later turns are shown and the seeds' turn stride are stored and resumed.
        QCOMPARE(
            config->toJson().value(QLatin1String("seeds")).toObject().value(QLatin1String("turn_stride")).toInteger(),
            kModelSeedTurnStride);
        QCOMPARE(resumed->modelSeedTurnStride, kModelSeedTurnStride);
        QCOMPARE(config->toJson()
                     .value(QLatin1String("regime"))
                     .toObject()
                     .value(QLatin1String("feedback_source"))
                     .toString(),
                 QStringLiteral("last"));
        QVERIFY(resumed->regime.feedbackSource == FeedbackSource::Last);
        RunRequest best = request;
        best.routing.reset();
        best.regime = QStringLiteral("iterative");
        best.feedbackSource = FeedbackSource::Best;
        const auto bestPlan = planRun(best, &error);
        QVERIFY(bestPlan);
        QCOMPARE(bestPlan->runName(), QStringLiteral("iterative feedback=best L1:1,L2:1"));
        const auto bestConfig = runConfigFor(*bestPlan, device, hello, &error);
        QVERIFY(bestConfig);
        const auto bestId = store.createRun(bestPlan->runName(), bestPlan->regimeLabel(), bestConfig->toJson());
        QVERIFY(bestId);
        const auto bestResumed = planResume(*store.run(*bestId), &error);
        QVERIFY(bestResumed);
        QVERIFY(bestResumed->regime.feedbackSource == FeedbackSource::Best);
        // A run stored before either existed was shown the best so far and asked every turn with the
        // same seeds: it resumes so.
        QJsonObject older = config->toJson();
        QJsonObject regimeJson = older.value(QLatin1String("regime")).toObject();
        regimeJson.remove(QLatin1String("feedback_source"));
        older.insert(QStringLiteral("regime"), regimeJson);
        older.insert(QStringLiteral("level_regimes"), QJsonObject{});
        QJsonObject olderSeeds = older.value(QLatin1String("seeds")).toObject();
        olderSeeds.remove(QLatin1String("turn_stride"));
        older.insert(QStringLiteral("seeds"), olderSeeds);
        const auto olderId = store.createRun(QStringLiteral("older"), QStringLiteral("agent"), older);
        QVERIFY(olderId);
        const auto olderResumed = planResume(*store.run(*olderId), &error);
        QVERIFY2(olderResumed, qPrintable(error));
        QVERIFY(olderResumed->regime.feedbackSource == FeedbackSource::Best);
        QCOMPARE(olderResumed->modelSeedTurnStride, qint64(0));
        QJsonObject unknown = regimeJson;
        unknown.insert(QStringLiteral("feedback_source"), QStringLiteral("worst"));
        QVERIFY(!Regime::fromJson(unknown, &error));
        QVERIFY(error.contains(QStringLiteral("worst")));

        const auto broken = store.createRun(QStringLiteral("x"), QStringLiteral("x"), QJsonObject{});
        QVERIFY(!planResume(*store.run(*broken), &error));
        QVERIFY(error.contains(QStringLiteral("no usable regime")));

        RunPlan missing = *plan;
        missing.promptsDir = dir.filePath(QStringLiteral("nowhere"));
        QVERIFY(!runConfigFor(missing, device, hello, &error));
        QVERIFY(error.contains(QStringLiteral("cannot read template")));
    }

    void factsLoaderAsksTheWorker()
    {
        WorkerSupervisor supervisor;
        supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER));
        supervisor.setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
        RunFactsLoader loader(&supervisor);
        RunRequest request;
        request.taskIds = {QStringLiteral("L2/1"), QStringLiteral("L1/1")};
        request.regime = QStringLiteral("profiling-guided"); // wants `profile` (the fake worker has a "GPU")
        const auto plan = planRun(request, nullptr);
        QVERIFY(plan);
        QSignalSpy loaded(&loader, &RunFactsLoader::loaded);
        QSignalSpy warnings(&loader, &RunFactsLoader::warning);
        loader.load(*plan);
        QVERIFY(loader.isLoading());
        QVERIFY(loaded.wait(30000));
        const auto inputs = loaded.first().at(0).value<QList<RunTaskInput>>();
        QCOMPARE(inputs.size(), 2);
        QCOMPARE(inputs.at(0).id(), QStringLiteral("L2/1"));
        QCOMPARE(inputs.at(0).level(), 2);
        QCOMPARE(inputs.at(0).analyze.value(QLatin1String("task")).toString(), QStringLiteral("L2/1"));
        // The fake worker's answers are the recorded H200 ones (tests/protocol/recorded/).
        QCOMPARE(inputs.at(1).device.value(QLatin1String("name")).toString(), QStringLiteral("NVIDIA H200"));
        QCOMPARE(loaded.first().at(1).value<DeviceFacts>().name, QStringLiteral("NVIDIA H200"));
        QCOMPARE(loaded.first().at(2).value<HelloInfo>().worker, QStringLiteral("0.1.0"));
        // L2/1 has a recorded profile; L1/1 has none: a warning, and its prompts go without it.
        QVERIFY(inputs.at(0).profile.value(QLatin1String("total_ns")).toDouble() > 0);
        QCOMPARE(warnings.size(), 1);
        QVERIFY2(warnings.first().first().toString().startsWith(QStringLiteral("profile L1/1")),
                 qPrintable(warnings.first().first().toString()));
        QVERIFY(!loader.isLoading());
    }

    // Other processes holding a tenth of the GPU's memory or more (a model server beside the
    // evaluations): a warning before the run. A fake nvidia-smi, first on PATH, lists this test
    // process with 80 GiB on the recorded device's bus.
    void factsLoaderWarnsOfMemoryHeldElsewhere()
    {
        QTemporaryDir bin;
        QVERIFY(bin.isValid());
        QFile smi(bin.filePath(QStringLiteral("nvidia-smi")));
        QVERIFY(smi.open(QIODevice::WriteOnly));
        smi.write("#!/bin/sh\nprintf '" + QByteArray::number(QCoreApplication::applicationPid()) +
                  ", 81920, /usr/bin/model-server\\n'\n");
        smi.close();
        QVERIFY(smi.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        const QByteArray path = qgetenv("PATH");
        qputenv("PATH", bin.path().toUtf8() + ':' + path);
        const auto restore = qScopeGuard([&] { qputenv("PATH", path); });
        WorkerSupervisor supervisor;
        supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER));
        RunFactsLoader loader(&supervisor);
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1")};
        request.regime = QStringLiteral("zero-shot");
        QSignalSpy loaded(&loader, &RunFactsLoader::loaded);
        QSignalSpy warnings(&loader, &RunFactsLoader::warning);
        loader.load(*planRun(request, nullptr));
        QVERIFY(loaded.wait(30000));
        QStringList texts;
        for (const QList<QVariant>& w : std::as_const(warnings))
            texts << w.first().toString();
        QVERIFY2(texts.filter(QStringLiteral("other processes hold 80.00 GiB")).size() == 1 &&
                     texts.join(QLatin1Char('\n')).contains(QLatin1String("model-server (pid ")),
                 qPrintable(texts.join(QLatin1Char('\n'))));
    }

    void factsLoaderFailsOnUnknownTasks()
    {
        WorkerSupervisor supervisor;
        supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER));
        RunFactsLoader loader(&supervisor);
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1"), QStringLiteral("L3/9")};
        request.regime = QStringLiteral("zero-shot");
        QSignalSpy failed(&loader, &RunFactsLoader::failed);
        QSignalSpy loaded(&loader, &RunFactsLoader::loaded);
        loader.load(*planRun(request, nullptr));
        QVERIFY(failed.wait(30000));
        QCOMPARE(failed.first().first().toString(), QStringLiteral("unknown task: L3/9"));
        QVERIFY(loaded.isEmpty());
    }

    // A KernelBench-only task (no TorchScript reference) is left out of a native-format run with a
    // warning naming it and its reason; a run of nothing else fails. A KernelBench-format run takes
    // it (its reference is KernelBench's Model), without asking the worker to analyse it.
    void factsLoaderLeavesOutKernelBenchOnlyTasks()
    {
        qputenv("FAKEWORKER_LIST_ALL", "1");              // the fake then lists every recorded task
        qputenv("KWB_WORKER_ENV", "FAKEWORKER_LIST_ALL"); // passed to the worker (workerEnvironment)
        WorkerSupervisor supervisor;
        supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER));
        RunFactsLoader loader(&supervisor);
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1"), QStringLiteral("L3/35")};
        request.regime = QStringLiteral("zero-shot");
        QSignalSpy loaded(&loader, &RunFactsLoader::loaded);
        QSignalSpy warnings(&loader, &RunFactsLoader::warning);
        loader.load(*planRun(request, nullptr));
        QVERIFY(loaded.wait(30000));
        const auto inputs = loaded.first().at(0).value<QList<RunTaskInput>>();
        QCOMPARE(inputs.size(), 1);
        QCOMPARE(inputs.first().id(), QStringLiteral("L1/1"));
        QVERIFY(!warnings.isEmpty());
        QVERIFY2(warnings.first().first().toString().startsWith(
                     QStringLiteral("left out 1 KernelBench-only task (no TorchScript reference for a native-format "
                                    "answer; --answer-format kernelbench evaluates them): L3/35 (line 18: nn.LSTM")),
                 qPrintable(warnings.first().first().toString()));

        RunFactsLoader only(&supervisor);
        request.taskIds = {QStringLiteral("L3/35")};
        QSignalSpy failed(&only, &RunFactsLoader::failed);
        only.load(*planRun(request, nullptr));
        QVERIFY(failed.wait(30000));
        QVERIFY(failed.first().first().toString().startsWith(QStringLiteral("every task is KernelBench only")));

        RunFactsLoader kernelBench(&supervisor);
        request.taskIds = {QStringLiteral("L1/1"), QStringLiteral("L3/35")};
        request.answerFormat = QString::fromLatin1(defaults::kAnswerFormatKernelBench);
        QSignalSpy kbLoaded(&kernelBench, &RunFactsLoader::loaded);
        QSignalSpy kbWarnings(&kernelBench, &RunFactsLoader::warning);
        kernelBench.load(*planRun(request, nullptr));
        QVERIFY(kbLoaded.wait(30000));
        const auto kbInputs = kbLoaded.first().at(0).value<QList<RunTaskInput>>();
        QCOMPARE(kbInputs.size(), 2);
        QCOMPARE(kbInputs.at(1).id(), QStringLiteral("L3/35"));
        QVERIFY(kbInputs.at(1).analyze.isEmpty());
        QVERIFY(!kbInputs.at(0).analyze.isEmpty());
        QVERIFY2(kbWarnings.isEmpty(),
                 qPrintable(kbWarnings.isEmpty() ? QString() : kbWarnings.first().first().toString()));
        qunsetenv("FAKEWORKER_LIST_ALL");
        qunsetenv("KWB_WORKER_ENV");
    }

    void aHangingWorkerNeverBlocks()
    {
        // The worker hangs on every request: the loader fails on the supervisor's time-out while
        // the caller's event loop keeps turning.
        WorkerSupervisor supervisor;
        supervisor.setProgram(QStringLiteral(KWB_FAKEWORKER), {QStringLiteral("--mode"), QStringLiteral("hang")});
        supervisor.setDefaultTimeout(1500);
        supervisor.setKillGracePeriod(200);
        RunFactsLoader loader(&supervisor);
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1")};
        request.regime = QStringLiteral("zero-shot");
        int ticks = 0;
        QTimer ticker;
        connect(&ticker, &QTimer::timeout, this, [&ticks] { ++ticks; });
        ticker.start(20);
        QSignalSpy failed(&loader, &RunFactsLoader::failed);
        QElapsedTimer clock;
        clock.start();
        loader.load(*planRun(request, nullptr));
        QVERIFY(clock.elapsed() < 200); // load() only sends
        QVERIFY(failed.wait(30000));
        QVERIFY2(failed.first().first().toString().startsWith(QStringLiteral("tasks: timeout")),
                 qPrintable(failed.first().first().toString()));
        QVERIFY2(ticks >= 40, qPrintable(QString::number(ticks)));
    }
};

QTEST_MAIN(TestRunLaunch)
#include "tst_runlaunch.moc"
