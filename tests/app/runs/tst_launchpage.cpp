// LaunchPage: the widgets build the plan `kwb run` would build from the same options, "Test
// connection" lists the scripted server's models and reports a dead port, a run started from the
// page stores the same configuration as `kwb run` (both against the scripted server and the fake
// worker), runs queue behind the running one, and the page renders to a non-uniform PNG.

#include "app/runs/launchpage.h"
#include "app/runs/runmanager.h"
#include "core/config/buildinfo.h"
#include "core/model/llmclient.h"
#include "core/protocol/workerresponses.h"
#include "core/run/regimefile.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"
#include "core/workers/evaluationqueue.h"
#include "core/workers/memorycgroup.h"
#include "grabcheck.h"
#include "scriptedllmserver.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include <memory>

using namespace kwb;
using namespace kwb::app;
using kwb::test::ScriptedLlmServer;

namespace {

QString answer(const QString& status)
{
    return QStringLiteral("status: %1\n\n```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n```\n\n"
                          "```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n```\n")
        .arg(status);
}

RunSessionEnvironment testEnvironment()
{
    RunSessionEnvironment env;
    env.workerProgram = QStringLiteral(KWB_FAKEWORKER);
    env.compileWorkers = 0;
    env.killGraceMs = 300;
    env.maxRetries = 0;
    env.requestTimeoutMs = 20000;
    return env;
}

/// A port nothing listens on.
quint16 deadPort()
{
    QTcpServer server;
    server.listen(QHostAddress::LocalHost);
    const quint16 port = server.serverPort();
    server.close();
    return port;
}

} // namespace

class TestLaunchPage : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    template <typename T>
    static T* child(QWidget& page, const char* name)
    {
        T* widget = page.findChild<T*>(QString::fromLatin1(name));
        if (!widget)
            qFatal("no widget %s", name);
        return widget;
    }

    static void checkTask(LaunchPage& page, const QString& id)
    {
        auto* tree = child<QTreeWidget>(page, "taskTree");
        const auto items = tree->findItems(id, Qt::MatchExactly | Qt::MatchRecursive, 0);
        QCOMPARE(items.size(), 1);
        items.first()->setCheckState(0, Qt::Checked);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QStandardPaths::setTestModeEnabled(true); // the chosen launch database is a setting
        QSettings().remove(QStringLiteral("launch/database"));
    }

    // A regime of the user's own (regimefile.h: a TOML file in the user's regimes folder, here the
    // test mode's) is in the regime list after the built-ins, and the page plans a run of it.
    void usersRegimeIsListedAndPlanned()
    {
        const QString dir = userRegimesDir();
        QVERIFY(QDir().mkpath(dir));
        const QString path = dir + QStringLiteral("/tst-launchpage.toml");
        const std::unique_ptr<const QString, void (*)(const QString*)> removeAtEnd(
            &path, [](const QString* p) { QFile::remove(*p); });
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("[[regime]]\nname = \"tst-launchpage\"\ndescription = \"The user's own\"\n"
                   "roles = { generator = \"zero-shot/generator.mustache\" }\nn = 3\nturns = 1\n"
                   "feedback = \"none\"\nselection = \"last\"\n");
        file.close();
        RunManager manager;
        LaunchPage page(&manager);
        auto* regime = child<QComboBox>(page, "regimeCombo");
        QCOMPARE(regime->count(), Regime::builtinNames().size() + 1);
        QCOMPARE(regime->itemText(regime->count() - 1), QStringLiteral("tst-launchpage"));
        QCOMPARE(regime->itemData(regime->count() - 1, Qt::ToolTipRole).toString(), QStringLiteral("The user's own"));
        QVERIFY(child<QComboBox>(page, "routingFallback")->findText(QStringLiteral("tst-launchpage")) >= 0);
        checkTask(page, QStringLiteral("L1/1"));
        regime->setCurrentIndex(regime->count() - 1);
        QCOMPARE(child<QLabel>(page, "regimeDescription")->text(), QStringLiteral("The user's own"));
        QString error;
        const std::optional<RunPlan> plan = planRun(page.request(), &error);
        QVERIFY2(plan, qPrintable(error));
        QCOMPARE(plan->regime.name, QStringLiteral("tst-launchpage"));
        QCOMPARE(plan->regime.n, 3);
        QVERIFY(plan->regime.selection == SelectionMode::Last);
    }

    // "Evaluate identical answers once" reaches the plan (off by default), which stores it with the run.
    void evaluateIdenticalOnceReachesThePlan()
    {
        RunManager manager;
        LaunchPage page(&manager);
        checkTask(page, QStringLiteral("L1/1"));
        auto* once = child<QCheckBox>(page, "evaluateIdenticalOnceCheck");
        QVERIFY(!once->isChecked());
        QString error;
        QVERIFY2(planRun(page.request(), &error), qPrintable(error));
        QCOMPARE(planRun(page.request(), &error)->evaluateIdenticalOnce, false);
        auto* across = child<QCheckBox>(page, "identicalAcrossRunsCheck");
        QVERIFY(!across->isEnabled()); // only with the first
        once->setChecked(true);
        QCOMPARE(planRun(page.request(), &error)->evaluateIdenticalOnce, true);
        QCOMPARE(planRun(page.request(), &error)->identicalAcrossRuns, false);
        QVERIFY(across->isEnabled());
        across->setChecked(true);
        QCOMPARE(planRun(page.request(), &error)->identicalAcrossRuns, true);
        once->setChecked(false);
        QCOMPARE(planRun(page.request(), &error)->identicalAcrossRuns, false);
    }

    // A compile-worker count over what this machine's memory holds for KernelBench-format builds is
    // said under the box (as kwb run warns); automatic, a count within it or native answers: nothing.
    void compileWorkersOverTheMemoryAreWarnedOf()
    {
        RunManager manager;
        LaunchPage page(&manager);
        auto* spin = child<QSpinBox>(page, "compileWorkersSpin");
        auto* format = child<QComboBox>(page, "answerFormatCombo");
        auto* warning = child<QLabel>(page, "compileWorkersWarning");
        const int kernelbench = format->findData(QStringLiteral("kernelbench"));
        QVERIFY(kernelbench >= 0);
        format->setCurrentIndex(kernelbench);
        QVERIFY(warning->isHidden());
        spin->setValue(256); // over any machine's memory here: 1.5 TiB of builds
        QVERIFY(!warning->isHidden());
        QVERIFY2(warning->text().startsWith(QStringLiteral("256 compile workers may build 256")),
                 qPrintable(warning->text()));
        QVERIFY(warning->wordWrap()); // a long line wraps, never widens the window
        format->setCurrentIndex(format->findData(QStringLiteral("native")));
        QVERIFY(warning->isHidden());
        format->setCurrentIndex(kernelbench);
        spin->setValue(1);
        QVERIFY(warning->isHidden());
    }

    // The overrides offer what a regime file may say (regimefile.h's bounds), no less: a regime of
    // 32 turns could be written but not launched when the box stopped at 10.
    void overridesReachTheRegimeFileBounds()
    {
        RunManager manager;
        LaunchPage page(&manager);
        QCOMPARE(child<QSpinBox>(page, "turnsSpin")->maximum(), kRegimeMaxTurns);
        QCOMPARE(child<QSpinBox>(page, "nSpin")->maximum(), kRegimeMaxN);
        QCOMPARE(child<QDoubleSpinBox>(page, "temperatureSpin")->maximum(), kRegimeMaxTemperature);
        QVERIFY(kRegimeMaxTurns > 10);
    }

    void launchDatabaseIsAFileOfItsOwnAndStaysChosen()
    {
        RunManager manager;
        {
            LaunchPage page(&manager);
            // Not a study database someone opened: the launch file in the user's data dir, whose
            // path names the program once (it was …/kernel-workbench/kernel-workbench/runs.db).
            QCOMPARE(page.databasePath(), defaultLaunchDatabase());
            QCOMPARE(page.databasePath().count(QStringLiteral("kernel-workbench")), 1);
            QVERIFY(page.databasePath().endsWith(QStringLiteral("/kernel-workbench/launched-runs.db")));
            page.setDatabasePath(m_dir.filePath(QStringLiteral("mine.db")));
        }
        // The next window (or page) keeps the choice.
        LaunchPage again(&manager);
        QCOMPARE(again.databasePath(), m_dir.filePath(QStringLiteral("mine.db")));
        QSettings().remove(QStringLiteral("launch/database"));
    }

    // Issue 37: the task sets check their tasks, the combo names the set the checks make, a run of
    // a set records its name, and a change by hand is a custom selection with its shortest spec.
    void taskSetsCheckTheirTasksAndNameTheRun()
    {
        RunManager manager;
        LaunchPage page(&manager);
        auto* sets = child<QComboBox>(page, "taskSet");
        QCOMPARE(sets->currentData().toString(), QString()); // nothing checked: "Custom"
        // Before the worker answers the page offers the default set's tasks: all checked is "study".
        child<QCheckBox>(page, "allTasks")->click();
        QCOMPARE(page.selectedTaskSet(), QStringLiteral("study"));
        QCOMPARE(sets->currentData().toString(), QStringLiteral("study"));

        QString error;
        QList<QPair<QString, QString>> catalog;
        for (const QString& id : parseTaskSpec(QStringLiteral("all"), &error))
            catalog.append({id, QString()});
        page.setTaskCatalog(catalog);
        QCOMPARE(page.selectedTasks().size(), 30); // the choice survives the catalog
        Q_EMIT sets->activated(sets->findData(QStringLiteral("level2")));
        QCOMPARE(page.selectedTasks().size(), 100);
        QCOMPARE(page.selectedTasks().first(), QStringLiteral("L2/1"));
        QCOMPARE(page.selectedTaskSet(), QStringLiteral("level2"));
        QCOMPARE(child<QLabel>(page, "taskSummary")->text(), QStringLiteral("100 tasks: level2"));
        QCOMPARE(page.request().taskSpec, QStringLiteral("level2"));
        Q_EMIT sets->activated(sets->findData(QStringLiteral("all")));
        QCOMPARE(page.selectedTasks().size(), 250);
        QCOMPARE(page.request().taskSpec, QStringLiteral("all"));

        Q_EMIT sets->activated(sets->findData(QStringLiteral("study")));
        checkTask(page, QStringLiteral("L3/11"));
        QCOMPARE(page.selectedTaskSet(), QString());
        QCOMPARE(sets->currentData().toString(), QString());
        QCOMPARE(page.request().taskSpec, QStringLiteral("L1:1-10,L2:1-10,L3:1-11"));
    }

    void widgetsBuildTheCommandLinesPlan()
    {
        RunManager manager;
        LaunchPage page(&manager);
        page.setPromptsDir(QStringLiteral(KWB_PROMPTS_DIR));
        checkTask(page, QStringLiteral("L1/1"));
        checkTask(page, QStringLiteral("L1/2"));
        checkTask(page, QStringLiteral("L2/3"));
        QCOMPARE(child<QLabel>(page, "taskSummary")->text(), QStringLiteral("3 tasks: L1:1-2,L2:3"));
        QCOMPARE(child<QCheckBox>(page, "allTasks")->checkState(), Qt::PartiallyChecked);

        auto* regime = child<QComboBox>(page, "regimeCombo");
        regime->setCurrentIndex(regime->findText(QStringLiteral("iterative")));
        QCOMPARE(child<QLabel>(page, "regimeDescription")->text(),
                 Regime::builtin(QStringLiteral("iterative"))->description);
        child<QCheckBox>(page, "ablateMonotone")->setChecked(true);
        child<QSpinBox>(page, "nSpin")->setValue(2);
        child<QDoubleSpinBox>(page, "temperatureSpin")->setValue(0.3);
        QVERIFY(Regime::builtin(QStringLiteral("iterative"))->stopWhenCorrect);
        auto* stop = child<QComboBox>(page, "stopWhenCorrectCombo");
        stop->setCurrentIndex(stop->findData(0)); // --no-stop-when-correct
        child<QLineEdit>(page, "endpointEdit")->setText(QStringLiteral("http://10.0.0.5:8000/v1"));
        child<QComboBox>(page, "modelCombo")->setCurrentText(QStringLiteral("qwen2.5-coder"));
        child<QComboBox>(page, "profileCombo")->setCurrentText(QStringLiteral("kernelbench-v0.1"));
        child<QComboBox>(page, "scaleCombo")->setCurrentText(QStringLiteral("smoke"));
        child<QDoubleSpinBox>(page, "timeoutSpin")->setValue(90);
        QCOMPARE(child<QDoubleSpinBox>(page, "modelTimeoutSpin")->value(), defaultModelTimeoutS());
        child<QDoubleSpinBox>(page, "modelTimeoutSpin")->setValue(45);
        child<QSpinBox>(page, "timingTrialsSpin")->setValue(20);
        auto* isolation = child<QComboBox>(page, "isolationCombo");
        isolation->setCurrentIndex(isolation->findData(QStringLiteral("reuse")));
        QCOMPARE(child<QDoubleSpinBox>(page, "maxHostMemorySpin")->value(), 0.0); // the default
        QVERIFY(child<QCheckBox>(page, "osSandboxCheck")->isChecked());
        child<QDoubleSpinBox>(page, "maxHostMemorySpin")->setValue(1.5);
        child<QCheckBox>(page, "osSandboxCheck")->setChecked(false);
        child<QLineEdit>(page, "databaseEdit")->setText(m_dir.filePath(QStringLiteral("a.db")));
        child<QLineEdit>(page, "apiKeyEdit")->setText(QStringLiteral("secret"));

        QString error;
        const auto plan = page.plan(&error);
        QVERIFY2(plan, qPrintable(error));

        // What `kwb run --regime iterative --tasks L1:1-2,L2:3 --ablate monotone --n 2 --temperature 0.3 …` plans.
        RunRequest cli;
        cli.taskIds = parseTaskSpec(QStringLiteral("L1:1-2,L2:3"), &error);
        cli.taskSpec = QStringLiteral("L1:1-2,L2:3");
        cli.regime = QStringLiteral("iterative");
        cli.ablations = ablationsFromList(QStringLiteral("monotone"));
        cli.n = 2;
        cli.temperature = 0.3;
        cli.stopWhenCorrect = false;
        cli.endpoint = QStringLiteral("http://10.0.0.5:8000/v1");
        cli.model = QStringLiteral("qwen2.5-coder");
        cli.profile = QStringLiteral("kernelbench-v0.1");
        cli.scale = QStringLiteral("smoke");
        cli.timeoutS = 90;
        cli.modelTimeoutS = 45; // --model-timeout 45
        cli.timingTrials = 20;
        cli.isolation = QStringLiteral("reuse");
        QVERIFY(parseByteSize(QStringLiteral("1.5G"))); // --max-host-memory 1.5G --no-os-sandbox
        cli.workerLimits.hostMemoryBytes = *parseByteSize(QStringLiteral("1.5G"));
        cli.workerLimits.osSandbox = false;
        cli.promptsDir = QStringLiteral(KWB_PROMPTS_DIR);
        const auto expected = planRun(cli, &error);
        QVERIFY(expected);
        QCOMPARE(plan->regime, expected->regime);
        QCOMPARE(plan->regime.n, 2);
        QCOMPARE(plan->regime.turns, 3);
        QVERIFY(plan->regime.selection == SelectionMode::Last);
        QCOMPARE(*plan->regime.temperature, 0.3);
        QVERIFY(!plan->regime.stopWhenCorrect);
        QVERIFY(plan->levelRegimes.isEmpty());
        QVERIFY(!plan->routing);
        QCOMPARE(plan->taskIds, expected->taskIds);
        QCOMPARE(plan->taskSpec, expected->taskSpec);
        QCOMPARE(plan->endpoint, expected->endpoint);
        QCOMPARE(plan->model, expected->model);
        QCOMPARE(plan->profile, expected->profile);
        QCOMPARE(plan->scale, expected->scale);
        QCOMPARE(plan->timeoutS, 90.0);
        QCOMPARE(plan->modelTimeoutS, expected->modelTimeoutS);
        QCOMPARE(llmSettingsFor(*plan, QString()).deadlineMs, 45000);
        QCOMPARE(plan->timingTrials, 20);
        QCOMPARE(plan->isolation, QStringLiteral("reuse"));
        QCOMPARE(plan->workerLimits.toJson(), expected->workerLimits.toJson());
        QCOMPARE(plan->workerLimits.hostMemoryBytes, qint64(3) << 29);
        QCOMPARE(plan->runName(), QStringLiteral("iterative -monotone L1:1-2,L2:3"));
        QCOMPARE(evaluationOptionsFor(*plan).timingTrials, 20);
        QCOMPARE(WorkerRequests::evaluate(evaluationOptionsFor(*plan)),
                 WorkerRequests::evaluate(evaluationOptionsFor(*expected)));
        QVERIFY(child<QLabel>(page, "effectiveRegime")->text().contains(QStringLiteral("selection: last")));

        const RunSessionEnvironment env = page.environment();
        QCOMPARE(env.databasePath, m_dir.filePath(QStringLiteral("a.db")));
        QCOMPARE(env.apiKey, QStringLiteral("secret"));
        QVERIFY(env.stream);
        // Compile workers: automatic keeps the manager's (the run's default); a number is `--compile-workers N`.
        QCOMPARE(child<QSpinBox>(page, "compileWorkersSpin")->value(), RunEnvironment::kAutomatic);
        QCOMPARE(env.compileWorkers, manager.defaultEnvironment().compileWorkers);
        child<QSpinBox>(page, "compileWorkersSpin")->setValue(6);
        QCOMPARE(page.environment().compileWorkers, 6);
        child<QSpinBox>(page, "compileWorkersSpin")->setValue(RunEnvironment::kAutomatic);
        // Evaluations per GPU: automatic (0) keeps the manager's, whose default is the format's
        // (defaultEvaluationsPerGpu); a number is `--evaluations-per-gpu N`.
        auto* perGpu = child<QSpinBox>(page, "evaluationsPerGpuSpin");
        QCOMPARE(perGpu->value(), 0);
        QCOMPARE(perGpu->text(), QStringLiteral("automatic"));
        QCOMPARE(page.environment().evaluationsPerGpu, RunEnvironment::kAutomatic);
        QCOMPARE(perGpu->maximum(), EvaluationQueue::kMaxEvaluationsPerGpu);
        perGpu->setValue(1);
        QCOMPARE(page.environment().evaluationsPerGpu, 1);
        perGpu->setValue(0);

        // The study's routing: a regime per level.
        QTest::mouseClick(child<QPushButton>(page, "studyRouting"), Qt::LeftButton);
        QVERIFY(child<QRadioButton>(page, "routedRegime")->isChecked());
        QVERIFY(!regime->isEnabled());
        const auto routed = page.plan(&error);
        QVERIFY(routed);
        QCOMPARE(routed->regimeLabel(), QStringLiteral("routing"));
        QCOMPARE(routed->routing->byLevel, Routing::studyEstimate().byLevel);
        cli.routing = Routing::studyEstimate();
        const auto expectedRouted = planRun(cli, &error);
        QCOMPARE(routed->levelRegimes, expectedRouted->levelRegimes);
        QCOMPARE(routed->levelRegimes.value(2).name, QStringLiteral("agent"));
        QCOMPARE(routed->levelRegimes.value(2).n, 2); // the override applies to every level's regime

        // "All tasks" checks the 30; a bad endpoint or no task is refused with a message.
        child<QCheckBox>(page, "allTasks")->click();
        QCOMPARE(page.selectedTasks().size(), 30);
        child<QCheckBox>(page, "allTasks")->click();
        QVERIFY(page.selectedTasks().isEmpty());
        QVERIFY(!page.plan(&error));
        QVERIFY(!page.start());
        QVERIFY(child<QLabel>(page, "launchMessage")->text().startsWith(QStringLiteral("Cannot start")));
        page.setSelectedTasks({QStringLiteral("L3/4")});
        page.setEndpoint(QStringLiteral("ftp://nowhere"));
        QVERIFY(!page.plan(&error));
        QVERIFY(error.contains(QStringLiteral("http(s)")));
        QVERIFY(manager.current() == nullptr);
    }

    void profilesAreTheWorkersOwn()
    {
        RunManager manager;
        LaunchPage page(&manager);
        auto* profile = child<QComboBox>(page, "profileCombo");
        QCOMPARE(profile->currentText(),
                 QStringLiteral("kernelbench-fp32")); // before any hello: the known names, the default
        // A worker announcing a profile this client has never heard of, and its own default.
        page.setWorkerProfiles(decodeHello(
            QJsonObject{{QStringLiteral("ok"), true},
                        {QStringLiteral("default_profile"), QStringLiteral("future-fp32")},
                        {QStringLiteral("profiles"),
                         QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("future-fp32")},
                                                {QStringLiteral("atol"), 1e-3},
                                                {QStringLiteral("tf32"), false}},
                                    QJsonObject{{QStringLiteral("name"), QStringLiteral("kernelbench-v0.1")}}}}}));
        QCOMPARE(profile->count(), 2);
        QCOMPARE(profile->itemText(0), QStringLiteral("future-fp32"));
        QVERIFY(profile->itemData(0, Qt::ToolTipRole).toString().contains(QLatin1String("atol 0.001")));
        // "kernelbench" (the selection) is not the worker's: its default is taken.
        QCOMPARE(profile->currentText(), QStringLiteral("future-fp32"));
        profile->setCurrentText(QStringLiteral("kernelbench-v0.1"));
        page.setWorkerProfiles(decodeHello(
            QJsonObject{{QStringLiteral("ok"), true},
                        {QStringLiteral("profiles"),
                         QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("future-fp32")}},
                                    QJsonObject{{QStringLiteral("name"), QStringLiteral("kernelbench-v0.1")}}}}}));
        QCOMPARE(profile->currentText(), QStringLiteral("kernelbench-v0.1")); // the user's choice kept
        page.setWorkerProfiles(decodeHello(QJsonObject{{QStringLiteral("ok"), true}}));
        QCOMPARE(profile->count(), 2); // a hello without profiles changes nothing
    }

    void testConnectionListsModels()
    {
        ScriptedLlmServer server;
        QVERIFY(server.start());
        server.setModels({QStringLiteral("qwen-7b"), QStringLiteral("qwen-14b")});
        RunManager manager;
        LaunchPage page(&manager);
        page.setEndpoint(server.baseUrl().toString());
        page.setApiKey(QStringLiteral("token-1"));
        QSignalSpy tested(&page, &LaunchPage::connectionTested);
        QTest::mouseClick(child<QPushButton>(page, "testConnection"), Qt::LeftButton);
        QVERIFY(!child<QPushButton>(page, "testConnection")->isEnabled()); // one probe at a time
        QVERIFY(tested.wait(15000));
        QCOMPARE(tested.first().first().toBool(), true);
        auto* models = child<QComboBox>(page, "modelCombo");
        QCOMPARE(models->count(), 2);
        QCOMPARE(models->itemText(0), QStringLiteral("qwen-7b"));
        QCOMPARE(models->itemText(1), QStringLiteral("qwen-14b"));
        QCOMPARE(models->currentText(), QStringLiteral("qwen-7b"));
        QCOMPARE(page.connectionStatus(), QStringLiteral("Connected: 2 models"));
        QCOMPARE(server.paths().last(), QStringLiteral("/v1/models"));
        QCOMPARE(server.headers().last().value("authorization"), QByteArray("Bearer token-1"));

        // An error status from the server, in the server's words.
        server.setModelsError(401);
        tested.clear();
        page.testConnection();
        QVERIFY(tested.wait(15000));
        QCOMPARE(tested.first().first().toBool(), false);
        QVERIFY(page.connectionStatus().startsWith(QStringLiteral("Failed:")));

        // Nothing listening.
        page.setEndpoint(QStringLiteral("http://127.0.0.1:%1/v1").arg(deadPort()));
        tested.clear();
        page.testConnection();
        QVERIFY(tested.wait(15000));
        QCOMPARE(tested.first().first().toBool(), false);
        QVERIFY2(page.connectionStatus().startsWith(QStringLiteral("Failed:")), qPrintable(page.connectionStatus()));
        QVERIFY(child<QPushButton>(page, "testConnection")->isEnabled());
        QCOMPARE(child<QComboBox>(page, "modelCombo")->count(), 2); // the last good list stays
    }

    void startStoresWhatKwbRunStores()
    {
        ScriptedLlmServer server;
        QVERIFY(server.start());
        ScriptedLlmServer::Reply reply;
        reply.texts = {answer(QStringLiteral("correct"))};
        server.setDefaultReply(reply);

        // kwb run …
        const QString cliDb = m_dir.filePath(QStringLiteral("cli.db"));
        QProcess kwb;
        QSignalSpy exited(&kwb, &QProcess::finished);
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("KWB_PROMPTS_DIR"), QStringLiteral(KWB_PROMPTS_DIR));
        kwb.setProcessEnvironment(environment);
        kwb.start(QStringLiteral(KWB_CLI), {QStringLiteral("--worker=" KWB_FAKEWORKER),
                                            QStringLiteral("run"),
                                            QStringLiteral("--regime"),
                                            QStringLiteral("iterative"),
                                            QStringLiteral("--tasks"),
                                            QStringLiteral("L1:1,L2:1"),
                                            QStringLiteral("--ablate"),
                                            QStringLiteral("monotone"),
                                            QStringLiteral("--n"),
                                            QStringLiteral("2"),
                                            QStringLiteral("--endpoint"),
                                            server.baseUrl().toString(),
                                            QStringLiteral("--model"),
                                            QStringLiteral("m"),
                                            QStringLiteral("--scale"),
                                            QStringLiteral("smoke"),
                                            QStringLiteral("--timing-trials"),
                                            QStringLiteral("7"),
                                            QStringLiteral("--db"),
                                            cliDb});
        QVERIFY(exited.wait(60000));
        QVERIFY2(kwb.exitCode() == 0, kwb.readAllStandardError().constData());

        // … and the same from the page.
        RunManager manager;
        manager.setDefaultEnvironment(testEnvironment());
        LaunchPage page(&manager);
        page.setPromptsDir(QStringLiteral(KWB_PROMPTS_DIR));
        page.setSelectedTasks({QStringLiteral("L1/1"), QStringLiteral("L2/1")});
        page.setRegime(QStringLiteral("iterative"));
        child<QCheckBox>(page, "ablateMonotone")->setChecked(true);
        child<QSpinBox>(page, "nSpin")->setValue(2);
        page.setEndpoint(server.baseUrl().toString());
        page.setModel(QStringLiteral("m"));
        child<QComboBox>(page, "scaleCombo")->setCurrentText(QStringLiteral("smoke"));
        child<QSpinBox>(page, "timingTrialsSpin")->setValue(7);
        const QString pageDb = m_dir.filePath(QStringLiteral("sub/page.db"));
        page.setDatabasePath(pageDb);
        QSignalSpy submitted(&page, &LaunchPage::runSubmitted);
        QTest::mouseClick(child<QPushButton>(page, "startButton"), Qt::LeftButton);
        QCOMPARE(submitted.size(), 1);
        QCOMPARE(submitted.first().first().toBool(), true);
        RunSession* session = manager.current();
        QVERIFY(session);
        QSignalSpy finished(session, &RunSession::finished);
        QVERIFY(finished.wait(60000));
        QCOMPARE(session->state(), RunSession::State::Finished);
        QVERIFY(child<QLabel>(page, "runState")->text().contains(QStringLiteral("finished")));

        RunStore cliStore, pageStore;
        QVERIFY(cliStore.open(cliDb));
        QVERIFY(pageStore.open(pageDb));
        const RunInfo cliRun = cliStore.runs().first();
        const RunInfo pageRun = pageStore.runs().first();
        QCOMPARE(pageRun.name, cliRun.name);
        QCOMPARE(pageRun.regime, cliRun.regime);
        QCOMPARE(pageRun.status, cliRun.status);
        const RunConfig a = cliRun.config, b = pageRun.config;
        QCOMPARE(b.model, a.model);
        QCOMPARE(b.endpoint, a.endpoint);
        QCOMPARE(b.templates, a.templates);
        QCOMPARE(b.seeds, a.seeds);
        QCOMPARE(b.protocolProfile, a.protocolProfile);
        // As stored: nothing `kwb run` keeps is missing, nothing is added.
        QCOMPARE(pageRun.configJson.keys(), cliRun.configJson.keys());
        for (const char* key :
             {"regime", "level_regimes", "routing", "tasks", "task_spec", "scale", "timeout_s", "timing_trials",
              "isolation", "worker_limits", "sandbox", "memory_cgroup", "sweep", "prompts_dir"})
            QVERIFY2(pageRun.configJson.value(QLatin1String(key)) == cliRun.configJson.value(QLatin1String(key)), key);
        // Whether local workers had a memory cgroup of their own (issue 32 item 4), and if not why.
        QCOMPARE(a.memoryCgroup, memoryCgroupStatus());
        QVERIFY(a.memoryCgroup.startsWith(QLatin1String("cgroup v")) ||
                a.memoryCgroup.startsWith(QLatin1String("none: ")));
        QCOMPARE(b.versions.worker, a.versions.worker);
        QCOMPARE(b.gpu.name, a.gpu.name);
        // The commit of the code that made the run (issue 38 item 1), stored by both alike.
        QCOMPARE(a.versions.kwbCommit, kwbCommit());
        QCOMPARE(b.versions.kwbCommit, a.versions.kwbCommit);
        QCOMPARE(
            cliRun.configJson.value(QLatin1String("versions")).toObject().value(QLatin1String("kwb_commit")).toString(),
            kwbCommit());

        // The evaluations went out with the same options (the fake worker echoes the request).
        const auto cliEvals = cliStore.evaluations(cliRun.id);
        const auto pageEvals = pageStore.evaluations(pageRun.id);
        QCOMPARE(pageEvals.size(), cliEvals.size());
        QCOMPARE(pageEvals.size(), 4); // two tasks × n = 2, correct on the first turn
        // Tasks run two at a time, so compare the requests of one task.
        const auto echoOf = [](const QList<EvaluationRecord>& evaluations) {
            for (const EvaluationRecord& e : evaluations)
                if (e.task == QLatin1String("L2/1"))
                    return e.result.value(QLatin1String("echo")).toObject();
            return QJsonObject();
        };
        const QJsonObject ea = echoOf(cliEvals), eb = echoOf(pageEvals);
        QCOMPARE(eb.value(QLatin1String("task")).toString(), QStringLiteral("L2/1"));
        QCOMPARE(eb.value(QLatin1String("timing_trials")).toInt(), 7);
        for (const char* key : {"profile", "scale", "seed", "task", "timing_trials"})
            QVERIFY2(ea.value(QLatin1String(key)) == eb.value(QLatin1String(key)), key);
    }

    void runsQueueBehindTheRunningOne()
    {
        ScriptedLlmServer server;
        QVERIFY(server.start());
        ScriptedLlmServer::Reply reply;
        reply.texts = {answer(QStringLiteral("correct"))};
        reply.delayMs = 300;
        server.setDefaultReply(reply);
        RunManager manager;
        manager.setDefaultEnvironment(testEnvironment());
        LaunchPage page(&manager);
        page.setPromptsDir(QStringLiteral(KWB_PROMPTS_DIR));
        page.setRegime(QStringLiteral("zero-shot"));
        page.setEndpoint(server.baseUrl().toString());
        page.setDatabasePath(m_dir.filePath(QStringLiteral("queue.db")));
        page.setSelectedTasks({QStringLiteral("L1/1")});
        QVERIFY(page.start());
        RunSession* first = manager.current();
        page.setSelectedTasks({QStringLiteral("L2/1")});
        QVERIFY(page.start()); // busy: queued
        QCOMPARE(manager.current(), first);
        QCOMPARE(manager.queued().size(), 1);
        auto* list = child<QListWidget>(page, "queueList");
        QCOMPARE(list->count(), 1);
        QCOMPARE(list->item(0)->text(), QStringLiteral("zero-shot L2:1 → queue.db"));
        QVERIFY(child<QPushButton>(page, "cancelButton")->isEnabled());
        QVERIFY(!child<QPushButton>(page, "startNextButton")->isEnabled());

        QSignalSpy started(&manager, &RunManager::sessionStarted);
        QVERIFY(started.wait(60000)); // the queued run starts when the first finishes
        RunSession* second = manager.current();
        QVERIFY(second != first);
        QCOMPARE(second->plan().taskIds, QStringList{QStringLiteral("L2/1")});
        QCOMPARE(list->count(), 0);
        QSignalSpy finished(second, &RunSession::finished);
        QVERIFY(finished.wait(60000));
        QCOMPARE(second->state(), RunSession::State::Finished);

        RunStore store;
        QVERIFY(store.open(m_dir.filePath(QStringLiteral("queue.db"))));
        QCOMPARE(store.runs().size(), 2);
        QCOMPARE(store.runs().at(0).status, RunStatus::Finished);
        QCOMPARE(store.runs().at(1).status, RunStatus::Finished);
    }

    void grabsToAPng()
    {
        RunManager manager;
        LaunchPage page(&manager);
        page.setSelectedTasks({QStringLiteral("L2/1"), QStringLiteral("L2/2")});
        page.setRouting(Routing::studyEstimate());
        const QImage image = kwb::test::grabPage(&page, QStringLiteral("launchpage"));
        QVERIFY(!image.isNull());
        QVERIFY(kwb::test::distinctColours(image) > 8);
    }
};

QTEST_MAIN(TestLaunchPage)
#include "tst_launchpage.moc"
