// KernelBench's answer format on the run side (issue 14): a run's answer format is planned,
// named, stored, read back on resume and sent with every evaluate request; the prompts-kernelbench
// set is the default for it and renders for every task and regime (the KernelBench view of the
// reference, with the constructor's arguments where the task has init_inputs).

#include "core/config/regime.h"
#include "core/prompts/promptrenderer.h"
#include "core/run/runcontroller.h"
#include "core/run/runlaunch.h"
#include "core/store/runstore.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace kwb;

namespace {

QList<RunTaskInput> recordedTasks()
{
    QFile f(QStringLiteral(KWB_PROTOCOL_RECORDED_DIR "/tasks.cpu.response.json"));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read the recorded tasks response");
    QList<RunTaskInput> inputs;
    for (const QJsonValue& t : QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("tasks")).toArray()) {
        RunTaskInput input;
        input.task = t.toObject();
        inputs << input;
    }
    return inputs;
}

RunRequest request(const QString& format)
{
    RunRequest r;
    r.taskIds = {QStringLiteral("L1/1"), QStringLiteral("L2/1")};
    r.regime = QStringLiteral("zero-shot");
    r.answerFormat = format;
    r.promptsDir = QStringLiteral(KWB_KERNELBENCH_PROMPTS_DIR);
    return r;
}

} // namespace

class TestAnswerFormatRun : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void nativeIsTheDefaultAndKeepsItsName()
    {
        RunRequest r = request(QStringLiteral("native"));
        r.answerFormat = RunRequest().answerFormat;
        const std::optional<RunPlan> plan = planRun(r, nullptr);
        QVERIFY(plan);
        QCOMPARE(plan->answerFormat, QStringLiteral("native"));
        QCOMPARE(plan->runName(), QStringLiteral("zero-shot L1:1,L2:1"));
        QCOMPARE(evaluationOptionsFor(*plan).answerFormat, QStringLiteral("native"));
    }

    void kernelbenchIsPlannedNamedAndSent()
    {
        const std::optional<RunPlan> plan = planRun(request(QStringLiteral("kernelbench")), nullptr);
        QVERIFY(plan);
        QCOMPARE(plan->runName(), QStringLiteral("zero-shot [kernelbench] L1:1,L2:1"));
        QCOMPARE(evaluationOptionsFor(*plan).answerFormat, QStringLiteral("kernelbench"));
    }

    void anUnknownFormatIsRefused()
    {
        QString error;
        QVERIFY(!planRun(request(QStringLiteral("triton")), &error));
        QVERIFY2(error.contains(QLatin1String("triton")), qPrintable(error));
    }

    void theFormatIsStoredAndResumed()
    {
        const std::optional<RunPlan> plan = planRun(request(QStringLiteral("kernelbench")), nullptr);
        QVERIFY(plan);
        QString error;
        const std::optional<RunConfig> config = runConfigFor(*plan, {}, {}, &error);
        QVERIFY2(config, qPrintable(error));
        QCOMPARE(config->answerFormat, QStringLiteral("kernelbench"));
        QCOMPARE(config->toJson().value(QLatin1String("answer_format")).toString(), QStringLiteral("kernelbench"));
        RunInfo info;
        info.id = 7;
        info.setConfig(config->toJson());
        const std::optional<RunPlan> resumed = planResume(info, &error);
        QVERIFY2(resumed, qPrintable(error));
        QCOMPARE(resumed->answerFormat, QStringLiteral("kernelbench"));
        QCOMPARE(evaluationOptionsFor(*resumed).answerFormat, QStringLiteral("kernelbench"));

        // A run stored before the answer format existed was native.
        QJsonObject old = config->toJson();
        old.remove(QStringLiteral("answer_format"));
        info.setConfig(old);
        const std::optional<RunPlan> oldPlan = planResume(info, &error);
        QVERIFY(oldPlan);
        QCOMPARE(oldPlan->answerFormat, QStringLiteral("native"));

        // An imported run (kwb import) is not resumed: there is no model to ask for what it lacks.
        RunConfig imported = *config;
        imported.import = QJsonObject{{QStringLiteral("format"), QStringLiteral("kernelbench")}};
        info.setConfig(imported.toJson());
        QVERIFY(!planResume(info, &error));
        QVERIFY2(error.contains(QLatin1String("imported")), qPrintable(error));
    }

    void theDefaultSetFollowsTheFormat()
    {
        QCOMPARE(defaultPromptsDirFor(QStringLiteral("native")), defaultPromptsDir());
        const QString kb = defaultPromptsDirFor(QStringLiteral("kernelbench"));
        QCOMPARE(QFileInfo(kb).fileName(), QStringLiteral("prompts-kernelbench"));
        QCOMPARE(QFileInfo(kb).absoluteDir(), QFileInfo(defaultPromptsDir()).absoluteDir());
        QVERIFY2(QFileInfo(kb).isDir(), qPrintable(kb));
    }

    void everyRegimeRendersForEveryTask()
    {
        const QList<RunTaskInput> inputs = recordedTasks();
        QVERIFY(inputs.size() >= 30);
        for (const QString& name : Regime::builtinNames()) {
            const std::optional<Regime> regime = Regime::builtin(name);
            QVERIFY(regime);
            const QString error =
                RunController::checkTemplates(QStringLiteral(KWB_KERNELBENCH_PROMPTS_DIR), *regime, {}, inputs);
            QVERIFY2(error.isEmpty(), qPrintable(name + QStringLiteral(": ") + error));
        }
    }

    // The study preset's zero-shot prompt (issue 36 item 2): KernelBench's structure, the task's
    // KernelBench problem file where the task list carries it, else the module described by its
    // constructor, forward and parameters; the explicit load_inline pin is the repaired agent's only.
    void thePromptShowsTheModuleAndItsConstructor()
    {
        const PromptRenderer renderer(QStringLiteral(KWB_KERNELBENCH_PROMPTS_DIR));
        for (const RunTaskInput& input : recordedTasks()) {
            if (input.id() != QLatin1String("L2/1") && input.id() != QLatin1String("L1/1"))
                continue;
            // A task list without KernelBench's problem file: the module described.
            QJsonObject described = input.task;
            described.remove(QStringLiteral("reference_python"));
            const QJsonObject context = PromptRenderer::buildContext(described, {}, {}, {}, {});
            const PromptRenderer::RenderResult r =
                renderer.render(QStringLiteral("zero-shot/generator.mustache"), context);
            QVERIFY2(r.ok, qPrintable(r.error));
            QVERIFY(r.text.contains(QLatin1String("Name your optimized architecture ModelNew")));
            QVERIFY(r.text.contains(QLatin1String("class ModelNew(nn.Module)"))); // the one-shot example
            QVERIFY(!r.text.contains(QLatin1String("with these keywords only")));
            if (input.id() == QLatin1String("L2/1")) {
                // init_inputs = ["C_in", "C_out", "K", ["C_out", 1, 1]] at full scale
                QVERIFY2(r.text.contains(QLatin1String("`Model(64, 128, 3, (128, 1, 1))`")), qPrintable(r.text));
                QVERIFY2(r.text.contains(QString::fromUtf8("- `conv.weight`: 128\u00d764\u00d73\u00d73")),
                         qPrintable(r.text));
            } else {
                QVERIFY2(r.text.contains(QLatin1String("`Model()`")), qPrintable(r.text));
            }
            // KernelBench's problem file, when the task list carries it, is the reference as it is.
            QJsonObject task = input.task;
            const QString file =
                QStringLiteral("import torch\nclass Model(nn.Module):\n    pass # %1\n").arg(input.id());
            task.insert(QStringLiteral("reference_python"), file);
            const PromptRenderer::RenderResult k = renderer.render(QStringLiteral("zero-shot/generator.mustache"),
                                                                   PromptRenderer::buildContext(task, {}, {}, {}, {}));
            QVERIFY2(k.ok, qPrintable(k.error));
            QVERIFY2(k.text.contains(QStringLiteral("You are given the following architecture:\n\n```python\n") + file +
                                     QStringLiteral("```")),
                     qPrintable(k.text));
            QVERIFY(!k.text.contains(QLatin1String("`Model(")));
        }
    }
};

QTEST_GUILESS_MAIN(TestAnswerFormatRun)
#include "tst_answerformat_run.moc"
