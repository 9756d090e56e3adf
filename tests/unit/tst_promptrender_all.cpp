// Every shipped template (prompts/), for every task the worker lists (tasks/, through the recorded
// `tasks` response), turn 1 and turn 2 with feedback, renders with the H200's stored device facts
// without saying "unknown" where the facts exist. The bug it guards: the study run's prompts said
// "memory bandwidth unknown, … ridge point unknown" because the renderer read hbm_theoretical_gbps
// while the stored facts (older workers) carry hbm_theoretical_gbs.
//
// Device facts: tests/fixtures/device/*.json (facts as a run stores them) and the recorded
// `device` responses under tests/protocol/recorded/ (both spellings, with and without ceilings).

#include "core/config/regime.h"
#include "core/prompts/promptrenderer.h"
#include "core/prompts/referenceview.h"
#include "core/prompts/tokenbudget.h"
#include "core/protocol/defaults.h"
#include "core/run/runcontroller.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>
#include <QTest>

using namespace kwb;

namespace {

const QString kRecorded = QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR "/recorded");

QByteArray readBytes(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return f.readAll();
}

QJsonObject readObject(const QString& path)
{
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(readBytes(path), &error);
    if (!document.isObject())
        qFatal("%s: not a JSON object: %s", qPrintable(path), qPrintable(error.errorString()));
    return document.object();
}

/// The recorded response of each file matching the pattern, keyed by its "task" (empty when none).
QHash<QString, QJsonObject> recordedByTask(const QString& pattern)
{
    QHash<QString, QJsonObject> out;
    for (const QString& name : QDir(kRecorded).entryList({pattern}, QDir::Files))
        out.insert(readObject(QDir(kRecorded).filePath(name)).value(QLatin1String("task")).toString(),
                   readObject(QDir(kRecorded).filePath(name)));
    return out;
}

// What partials/device.mustache prints when a number is missing: "memory bandwidth {{hbm_gbps}}",
// "FP32 peak {{fp32_tflops}}", "ridge point {{ridge_point}}" with the value "unknown".
const QStringList kUnknownPhrases{QStringLiteral("memory bandwidth unknown"), QStringLiteral("FP32 peak unknown"),
                                  QStringLiteral("ridge point unknown")};

/// The folded forward written out again: each `for i in range(a, b[, s]):` block repeated for
/// every i, its `" + str(i + d) + "` and `{i + d}` pieces replaced by the numbers.
QString unfold(const QString& folded)
{
    static const QRegularExpression header(QStringLiteral(R"(^(\s*)for i in range\((-?\d+), (-?\d+)(?:, (\d+))?\):$)"));
    static const QRegularExpression piece(
        QStringLiteral(R"((?:" \+ str\(i(?: ([+-]) (\d+))?\) \+ "|\{i(?: ([+-]) (\d+))?\}))"));
    const QStringList lines = folded.split(QLatin1Char('\n'));
    QStringList out;
    for (qsizetype k = 0; k < lines.size(); ++k) {
        const QRegularExpressionMatch m = header.match(lines[k]);
        if (!m.hasMatch()) {
            out << lines[k];
            continue;
        }
        const QString body = m.captured(1) + QStringLiteral("    ");
        QStringList block;
        while (k + 1 < lines.size() && lines[k + 1].startsWith(body))
            block << lines[++k].mid(4);
        const qint64 step = m.captured(4).isEmpty() ? 1 : m.captured(4).toLongLong();
        for (qint64 i = m.captured(2).toLongLong(); i < m.captured(3).toLongLong(); i += step)
            for (QString line : std::as_const(block)) {
                QRegularExpressionMatch p;
                while ((p = piece.match(line)).hasMatch()) {
                    const bool code = p.captured(0).startsWith(QLatin1Char('"'));
                    const QString sign = p.captured(code ? 1 : 3);
                    const qint64 d = p.captured(code ? 2 : 4).toLongLong();
                    line.replace(p.capturedStart(), p.capturedLength(),
                                 QString::number(sign == QLatin1String("-") ? i - d : i + d));
                }
                out << line;
            }
    }
    return out.join(QLatin1Char('\n'));
}

/// The study's 30 tasks: the first 10 of each KernelBench level.
bool isStudyTask(const QString& id)
{
    static const QRegularExpression pattern(QStringLiteral("^L[123]/([1-9]|10)$"));
    return pattern.match(id).hasMatch();
}

} // namespace

class TestPromptRenderAll : public QObject
{
    Q_OBJECT

    QJsonArray m_tasks;
    QList<QPair<QString, QJsonObject>> m_devices;   // name, facts
    QList<QPair<QString, QJsonObject>> m_feedbacks; // name, evaluate response with "answer"
    QHash<QString, QJsonObject> m_analyze, m_profile;

private Q_SLOTS:
    void initTestCase()
    {
        // The tasks as the app gets them: the worker's `tasks` response.
        const QJsonObject tasks = readObject(kRecorded + QStringLiteral("/tasks.cpu.response.json"));
        m_tasks = tasks.value(QLatin1String("tasks")).toArray();
        int taskFiles = 0;
        for (QDirIterator it(QStringLiteral(KWB_TASKS_DIR), {QStringLiteral("*.toml")}, QDir::Files,
                             QDirIterator::Subdirectories);
             it.hasNext(); it.next())
            ++taskFiles;
        // tst_worker_protocol checks the recording against the worker; this, that it lists every file.
        QCOMPARE(m_tasks.size(), taskFiles);

        const QDir fixtures(QStringLiteral(KWB_DEVICE_FIXTURES_DIR));
        for (const QString& name : fixtures.entryList({QStringLiteral("*.json")}, QDir::Files))
            m_devices.append({name, readObject(fixtures.filePath(name))});
        for (const QString& name : QDir(kRecorded).entryList({QStringLiteral("device*.h200.response.json")}))
            m_devices.append({name, readObject(QDir(kRecorded).filePath(name))});
        QVERIFY(m_devices.size() >= 3);
        for (const auto& device : m_devices)
            QVERIFY2(device.second.value(QLatin1String("available")).toBool(), qPrintable(device.first));

        // Turn 2: each recorded evaluate response as the previous answer's feedback.
        for (const QString& name : QDir(kRecorded).entryList({QStringLiteral("evaluate_*.response.json")})) {
            QJsonObject feedback = readObject(QDir(kRecorded).filePath(name));
            QString request = name;
            request.replace(QStringLiteral(".response.json"), QStringLiteral(".request"));
            feedback.insert(QStringLiteral("answer"),
                            readObject(QDir(kRecorded).filePath(request)).value(QLatin1String("answer")));
            m_feedbacks.append({name, feedback});
        }
        QVERIFY(m_feedbacks.size() >= 2);
        m_analyze = recordedByTask(QStringLiteral("analyze_*.response.json"));
        m_profile = recordedByTask(QStringLiteral("profile_*.response.json"));
    }

    void everyTemplateEveryTaskKnowsTheDevice_data()
    {
        QTest::addColumn<QString>("file");
        const QStringList templates = PromptRenderer(QStringLiteral(KWB_PROMPTS_DIR)).templates();
        QVERIFY(templates.size() >= 12);
        for (const QString& file : templates)
            QTest::newRow(qPrintable(file)) << file;
    }

    void everyTemplateEveryTaskKnowsTheDevice()
    {
        QFETCH(QString, file);
        const PromptRenderer renderer(QStringLiteral(KWB_PROMPTS_DIR));
        const bool showsDevice = QString::fromUtf8(readBytes(QStringLiteral(KWB_PROMPTS_DIR "/") + file))
                                     .contains(QLatin1String("{{> device}}"));
        int rendered = 0;
        for (const QJsonValue& taskValue : std::as_const(m_tasks)) {
            const QJsonObject task = taskValue.toObject();
            const QString id = task.value(QLatin1String("id")).toString();
            for (const auto& device : std::as_const(m_devices)) {
                QList<QPair<QString, QJsonObject>> turns{{QStringLiteral("turn 1"), QJsonObject()}};
                turns += m_feedbacks;
                for (int turn = 0; turn < turns.size(); ++turn) {
                    const QString where =
                        QStringLiteral("%1, %2, %3, %4").arg(file, id, device.first, turns[turn].first);
                    QJsonObject context = PromptRenderer::buildContext(task, m_analyze.value(id), m_profile.value(id),
                                                                       device.second, turns[turn].second);
                    // The notes other roles would have written (RunController::context adds them).
                    context.insert(QStringLiteral("analysis"), QStringLiteral("1. **Op chain**: the forward's ops."));
                    context.insert(QStringLiteral("research"), QStringLiteral("- the APIs it uses"));
                    context.insert(QStringLiteral("diagnosis"),
                                   turn ? QJsonValue(QStringLiteral("what failed")) : false);
                    context.insert(QStringLiteral("critique"),
                                   turn ? QJsonValue(QStringLiteral("what to change")) : false);
                    context.insert(QStringLiteral("turn"), QString::number(turn ? 2 : 1));
                    context.insert(QStringLiteral("max_turns"), QStringLiteral("3"));
                    const auto r = renderer.render(file, context);
                    QVERIFY2(r.ok, qPrintable(where + QStringLiteral(": ") + r.error));
                    QVERIFY2(!r.text.contains(QLatin1String("{{")), qPrintable(where));
                    for (const QString& phrase : kUnknownPhrases)
                        QVERIFY2(!r.text.contains(phrase),
                                 qPrintable(where + QStringLiteral(": says \"") + phrase + QStringLiteral("\"")));
                    if (showsDevice)
                        QVERIFY2(r.text.contains(QStringLiteral("GPU: NVIDIA H200 (sm_90, 132 SMs)")),
                                 qPrintable(where));
                    ++rendered;
                }
            }
        }
        QCOMPARE(rendered, int(m_tasks.size() * m_devices.size() * (1 + m_feedbacks.size())));
    }

    // The compact view computes what the reference computes: written out again it is the
    // forward, line for line, for every task; and it is what makes L3/10 fit.
    void referenceViewUnfoldsToTheForward()
    {
        int foldedTasks = 0;
        for (const QJsonValue& taskValue : std::as_const(m_tasks)) {
            const QJsonObject task = taskValue.toObject();
            const QString id = task.value(QLatin1String("id")).toString();
            const QString forward = task.value(QLatin1String("forward")).toString().trimmed();
            bool folded = false;
            const QString view = foldForward(forward, &folded);
            QVERIFY2(unfold(view) == forward, qPrintable(id));
            QVERIFY2(folded == (view != forward), qPrintable(id));
            foldedTasks += folded ? 1 : 0;
            if (id == QLatin1String("L3/10")) {
                QVERIFY2(folded, "L3/10's 23 bottlenecks of layer3 fold");
                QVERIFY2(view.size() * 2 < forward.size(), qPrintable(QString::number(view.size())));
            }
        }
        QVERIFY(foldedTasks >= 1);
    }

    void paramsViewNamesEveryParameter()
    {
        // Ranges and brace groups written out again give every name of the task, in order.
        for (const QJsonValue& taskValue : std::as_const(m_tasks)) {
            const QJsonObject task = taskValue.toObject();
            QList<ReferenceParam> params;
            QStringList names;
            for (const QJsonValue& p : task.value(QLatin1String("params")).toArray()) {
                params.append({p.toObject().value(QLatin1String("name")).toString(), QStringLiteral("[1]")});
                names << params.last().name;
            }
            const QString view = paramsView(params);
            QStringList listed;
            static const QRegularExpression line(QStringLiteral("^- `(.*)`: "));
            static const QRegularExpression range(QStringLiteral(R"(\{(\d+)\.\.(\d+)(?: step (\d+))?\})"));
            QStringList rows = view.isEmpty() ? QStringList() : view.split(QLatin1Char('\n'));
            // A folded run of rows: expand the ranges row by row, the block repeating in order.
            for (qsizetype r = 0; r < rows.size(); ++r) {
                const QString name = line.match(rows[r]).captured(1);
                QVERIFY2(!name.isEmpty(), qPrintable(rows[r]));
                const auto expandBraces = [](const QString& n) {
                    const qsizetype open = n.indexOf(QLatin1Char('{'));
                    if (open < 0 || n.at(open + 1).isDigit())
                        return QStringList{n};
                    QStringList out;
                    for (const QString& leaf :
                         n.mid(open + 1, n.indexOf(QLatin1Char('}')) - open - 1).split(QStringLiteral(", ")))
                        out << n.left(open) + leaf;
                    return out;
                };
                const QRegularExpressionMatch m = range.match(name);
                if (!m.hasMatch()) {
                    listed << expandBraces(name);
                    continue;
                }
                // The block: this row and the following rows with a range of the same count.
                QStringList block{rows[r]};
                const qint64 count = (m.captured(2).toLongLong() - m.captured(1).toLongLong()) /
                                         (m.captured(3).isEmpty() ? 1 : m.captured(3).toLongLong()) +
                                     1;
                while (r + 1 < rows.size()) {
                    const QRegularExpressionMatch next = range.match(line.match(rows[r + 1]).captured(1));
                    if (!next.hasMatch())
                        break;
                    const qint64 c = (next.captured(2).toLongLong() - next.captured(1).toLongLong()) /
                                         (next.captured(3).isEmpty() ? 1 : next.captured(3).toLongLong()) +
                                     1;
                    if (c != count)
                        break;
                    block << rows[++r];
                }
                for (qint64 k = 0; k < count; ++k)
                    for (const QString& row : std::as_const(block)) {
                        QString n = line.match(row).captured(1);
                        QRegularExpressionMatch x;
                        while ((x = range.match(n)).hasMatch()) {
                            const qint64 step = x.captured(3).isEmpty() ? 1 : x.captured(3).toLongLong();
                            n.replace(x.capturedStart(), x.capturedLength(),
                                      QString::number(x.captured(1).toLongLong() + k * step));
                        }
                        listed << expandBraces(n);
                    }
            }
            // The names, each once; not their order: two folds of the same count one after the
            // other (VGG16's features.{10..14 step 2}, features.{17..21 step 2}) read the same as one
            // fold of a two-row block, so the view does not say which order the model's p lists.
            listed.sort();
            names.sort();
            QCOMPARE(listed, names);
        }
    }

    // Issue 36 item 3: every prompt of every shipped set (prompts/, prompts-kernelbench/,
    // prompts-workbench-v1/) x the study's 30 tasks x every regime (and the agent with each
    // ablation) x every turn and role fits the default budget: the prompt by the estimate plus
    // each earlier model text it holds at the max output tokens, plus the chat template and the
    // answer. The KernelBench set gets each task's KernelBench problem file as the task list
    // carries it (reference_python); a task without a recorded profile gets five rows of long
    // operator names, the most the profile section shows.
    void everyShippedPromptFitsTheDefaultBudget_data()
    {
        QTest::addColumn<QString>("dir");
        QTest::addColumn<bool>("kernelBenchFile"); // the task list carries KernelBench's problem file
        QTest::newRow("study (prompts/)") << QStringLiteral(KWB_PROMPTS_DIR) << false;
        QTest::newRow("kernelbench (prompts-kernelbench/)")
            << QStringLiteral(KWB_PROMPTS_DIR "/../prompts-kernelbench") << true;
        QTest::newRow("kernelbench, the module described where no problem file is listed")
            << QStringLiteral(KWB_PROMPTS_DIR "/../prompts-kernelbench") << false;
        QTest::newRow("workbench-v1 (prompts-workbench-v1/)")
            << QStringLiteral(KWB_PROMPTS_DIR "/../prompts-workbench-v1") << false;
    }

    void everyShippedPromptFitsTheDefaultBudget()
    {
        QFETCH(QString, dir);
        QFETCH(bool, kernelBenchFile);
        const ContextBudget budget{defaults::kContextTokens, defaults::kMaxOutputTokens};
        QList<Regime> regimes;
        for (const QString& name : Regime::builtinNames())
            regimes << *Regime::builtin(name);
        for (const char* off : {"best_of_n", "feedback_analyzer", "monotone", "competence_matched"})
            regimes << Regime::builtin(QStringLiteral("agent"))
                           ->withAblations(Ablations::fromOffNames({QString::fromLatin1(off)}));
        QJsonArray longOps;
        for (int i = 0; i < 5; ++i)
            longOps.append(
                QJsonObject{{QStringLiteral("index"), i},
                            {QStringLiteral("op"), QStringLiteral("aten::_convolution_double_backward_%1").arg(i)},
                            {QStringLiteral("time_ns"), 1.0e9},
                            {QStringLiteral("share"), 0.2},
                            {QStringLiteral("kernels"), 1000}});
        const QJsonObject worstProfile{{QStringLiteral("total_ns"), 5.0e9}, {QStringLiteral("ops"), longOps}};
        int checked = 0, worst = 0;
        QString worstWhere;
        QSet<QString> tasksSeen;
        for (const Regime& regime : std::as_const(regimes))
            for (const QJsonValue& taskValue : std::as_const(m_tasks)) {
                RunTaskInput input;
                input.task = taskValue.toObject();
                const QString id = input.id();
                if (!isStudyTask(id))
                    continue;
                tasksSeen << id;
                if (kernelBenchFile) {
                    // As the worker lists it (tst_tasks checks the listing against the files).
                    const QString source = input.task.value(QLatin1String("source")).toString();
                    QVERIFY2(!source.isEmpty(), qPrintable(id));
                    QCOMPARE(input.task.value(QLatin1String("reference_python")).toString(),
                             QString::fromUtf8(readBytes(QStringLiteral(KWB_TASKS_DIR "/kernelbench-src/") + source)));
                } else {
                    input.task.remove(QStringLiteral("reference_python")); // a task list without it
                }
                input.analyze = m_analyze.value(id);
                input.profile = m_profile.contains(id) ? m_profile.value(id) : worstProfile;
                input.device = m_devices.first().second;
                const QList<PlannedPrompt> prompts = RunController::plannedPrompts(dir, regime, input);
                const int notesRoles = regime.roles.contains(RegimeRole::Analyzer) ? 2 : 0;
                const bool rewrites = regime.feedback == FeedbackMode::Rewrite && !regime.rewriteRole().isEmpty();
                QCOMPARE(prompts.size(), notesRoles + regime.turns + (rewrites ? regime.turns - 1 : 0));
                for (const PlannedPrompt& p : prompts) {
                    QVERIFY2(p.error.isEmpty(), qPrintable(p.error));
                    if (const QString dump = qEnvironmentVariable("KWB_PROMPT_DUMP_DIR"); !dump.isEmpty()) {
                        // For reading by eye: <dump>/<set>/<regime>[-ablated]/<task>-turn<N>-<role>.txt
                        const QString where =
                            QDir(QDir(dump).filePath(QFileInfo(dir).fileName()))
                                .filePath(regime.name +
                                          (regime.ablated.isEmpty()
                                               ? QString()
                                               : QLatin1Char('-') + regime.ablated.join(QLatin1Char('-'))));
                        QDir().mkpath(where);
                        QFile f(QDir(where).filePath(QStringLiteral("%1-turn%2-%3.txt")
                                                         .arg(QString(id).replace(QLatin1Char('/'), QLatin1Char('_')))
                                                         .arg(p.turn)
                                                         .arg(p.role)));
                        if (f.open(QIODevice::WriteOnly))
                            f.write(p.text.toUtf8());
                    }
                    const int tokens = p.budgetTokens(estimateTokens(p.text), budget);
                    if (tokens > worst) {
                        worst = tokens;
                        worstWhere = QStringLiteral("%1 %2 turn %3 %4").arg(regime.name, id).arg(p.turn).arg(p.role);
                    }
                    QVERIFY2(budget.fits(tokens),
                             qPrintable(budget.overBudget(id, p.turn, p.role, p.templatePath, tokens, false)));
                    ++checked;
                }
            }
        QCOMPARE(tasksSeen.size(), 30);
        qInfo("%s: %d prompts; the largest: %s, %d tokens with its model texts at max output", qPrintable(dir), checked,
              qPrintable(worstWhere), worst);
    }

    // The study preset (prompts-kernelbench/, issue 36 item 2): zero-shot, guided, iterative and the
    // pilot send KernelBench's prompt structure (problem statement, one-shot example, the task's
    // KernelBench problem file, the instruction) and no load_inline pin; the repaired agent's
    // prompts add the competence guidance and the pin, which the competence ablation removes.
    void studyPresetHasKernelBenchsStructure()
    {
        const QString dir = QStringLiteral(KWB_PROMPTS_DIR "/../prompts-kernelbench");
        const QString problem = QStringLiteral("You write custom CUDA kernels that replace PyTorch operators");
        const QString example = QStringLiteral("mul_relu_ext = load_inline(");
        const QString given = QStringLiteral("You are given the following architecture:");
        const QString instruction = QStringLiteral("Optimize the architecture named Model with custom CUDA operators.");
        const QString pin =
            QStringLiteral("How to call `load_inline` (from `torch.utils.cpp_extension`): with these keywords only");
        const QString guidance = QStringLiteral("How to work: correct first, fast second.");
        const QString source = QString::fromUtf8(
            readBytes(QStringLiteral(KWB_TASKS_DIR "/kernelbench-src/level2/1_Conv2D_ReLU_BiasAdd.py")));
        RunTaskInput input;
        for (const QJsonValue& v : std::as_const(m_tasks))
            if (v.toObject().value(QLatin1String("id")).toString() == QLatin1String("L2/1"))
                input.task = v.toObject();
        QVERIFY(!input.task.isEmpty());
        QCOMPARE(input.task.value(QLatin1String("reference_python")).toString(), source); // as the worker lists it
        input.profile = m_profile.value(QStringLiteral("L2/1"));
        const auto prompts = [&](const Regime& regime) {
            QHash<QString, QString> out; // "turn role" -> text
            for (const PlannedPrompt& p : RunController::plannedPrompts(dir, regime, input)) {
                if (!p.error.isEmpty())
                    qFatal("%s", qPrintable(p.error));
                out.insert(QStringLiteral("%1 %2").arg(p.turn).arg(p.role), p.text);
            }
            return out;
        };
        // KernelBench's problem file, whole, as the reference.
        const QString shown = QStringLiteral("```python\n") + source.trimmed() + QStringLiteral("\n```");
        for (const QString& name : {QStringLiteral("zero-shot"), QStringLiteral("profiling-guided"),
                                    QStringLiteral("iterative"), QStringLiteral("pilot-v1")}) {
            const auto sent = prompts(*Regime::builtin(name));
            for (auto it = sent.cbegin(); it != sent.cend(); ++it) {
                const QString where = name + QLatin1Char(' ') + it.key();
                QVERIFY2(it->contains(shown), qPrintable(where));
                QVERIFY2(!it->contains(pin) && !it->contains(guidance), qPrintable(where));
                if (!it.key().endsWith(QLatin1String("generator")) && !it.key().endsWith(QLatin1String("retry")))
                    continue;
                // The answer roles: KernelBench's order.
                const qsizetype a = it->indexOf(problem), b = it->indexOf(example), c = it->indexOf(given),
                                d = it->indexOf(instruction);
                QVERIFY2(a >= 0 && a < b && b < c && c < d, qPrintable(where + QStringLiteral("\n") + *it));
            }
        }
        // Zero-shot is KernelBench's prompt and nothing else; iterative's first turn is it word for word.
        const QString zeroShot =
            prompts(*Regime::builtin(QStringLiteral("zero-shot"))).value(QStringLiteral("1 generator"));
        QCOMPARE(prompts(*Regime::builtin(QStringLiteral("iterative"))).value(QStringLiteral("1 generator")), zeroShot);
        QVERIFY(!zeroShot.contains(QLatin1String("Roofline rule")));
        // The agent: every role has the guidance and the pin; the competence ablation takes out
        // exactly that section.
        const Regime agent = *Regime::builtin(QStringLiteral("agent"));
        const auto withGuidance = prompts(agent);
        const auto without =
            prompts(agent.withAblations(Ablations::fromOffNames({QStringLiteral("competence_matched")})));
        QCOMPARE(without.keys().size(), withGuidance.keys().size());
        QFile partial(dir + QStringLiteral("/partials/competence.mustache"));
        QVERIFY(partial.open(QIODevice::ReadOnly));
        QFile pinPartial(dir + QStringLiteral("/partials/load_inline.mustache"));
        QVERIFY(pinPartial.open(QIODevice::ReadOnly));
        const QString section =
            QString::fromUtf8(partial.readAll())
                .replace(QStringLiteral("{{> load_inline}}\n"), QString::fromUtf8(pinPartial.readAll())) +
            QLatin1Char('\n');
        for (auto it = withGuidance.cbegin(); it != withGuidance.cend(); ++it) {
            QVERIFY2(it->contains(pin) && it->contains(guidance), qPrintable(it.key()));
            QVERIFY2(it->contains(shown), qPrintable(it.key()));
            QVERIFY2(it->contains(section), qPrintable(it.key() + QStringLiteral("\n") + *it));
            QCOMPARE(without.value(it.key()), QString(*it).remove(section));
        }
    }
};

QTEST_GUILESS_MAIN(TestPromptRenderAll)
#include "tst_promptrender_all.moc"
