// Prompt templates (prompts/, docs/prompts.md): every shipped template renders for a context that
// buildContext makes from worker-shaped JSON, pins the candidate format, and a template error names
// its file, line and variable.

#include "core/config/regime.h"
#include "core/model/secrets.h"
#include "core/prompts/promptrenderer.h"
#include "core/prompts/templateset.h"
#include "core/store/runstore.h"
#include "promptrendererdata.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

namespace {

QJsonObject parse(const char* json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(json), &err);
    if (err.error != QJsonParseError::NoError)
        qFatal("fixture JSON: %s", qPrintable(err.errorString()));
    return doc.object();
}

QString promptsDir()
{
    return QStringLiteral(KWB_PROMPTS_DIR);
}

QString readText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

void writeText(const QString& path, const QString& text)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text.toUtf8());
}

/// The templates the built-in regimes name (core/run/regime.cpp, the one definition of the
/// regimes), sorted, and whether the role answers in the candidate format (generator and retry do;
/// the others write notes for the next role).
QList<QPair<QString, bool>> regimeTemplates()
{
    QMap<QString, bool> files;
    for (const QString& name : Regime::builtinNames()) {
        const Regime r = *Regime::builtin(name);
        for (auto it = r.roles.cbegin(); it != r.roles.cend(); ++it)
            files.insert(it.value(), it.key() == RegimeRole::Generator || it.key() == RegimeRole::Retry);
    }
    QList<QPair<QString, bool>> out;
    for (auto it = files.cbegin(); it != files.cend(); ++it)
        out.append({it.key(), it.value()});
    return out;
}

} // namespace

class TestPromptRenderer : public QObject
{
    Q_OBJECT

    QJsonObject m_full;    // every source, a retry turn with agent notes filled in
    QJsonObject m_minimal; // a task only: no analysis, profile, device or feedback

private Q_SLOTS:
    void initTestCase()
    {
        m_full = PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), parse(kProfile), parse(kDevice),
                                              parse(kFeedback));
        m_full[QStringLiteral("analysis")] = QStringLiteral("1. **Op chain**: conv2d, relu, add.");
        m_full[QStringLiteral("research")] = QStringLiteral("- torch.conv2d(input, weight, bias, stride, padding)");
        m_full[QStringLiteral("critique")] = QStringLiteral("1. Replace torch.conv2d with a tiled kernel.");
        m_full[QStringLiteral("turn")] = QStringLiteral("2");
        m_full[QStringLiteral("max_turns")] = QStringLiteral("3");
        m_minimal = PromptRenderer::buildContext(parse(kTask), {}, {}, {});
    }

    void regimesNameEveryTemplate()
    {
        QStringList listed;
        for (const auto& t : regimeTemplates())
            listed << t.first;
        listed.sort();
        QCOMPARE(listed.size(), 12);
        QCOMPARE(PromptRenderer(promptsDir()).templates(), listed);
    }

    void shippedTemplateRenders_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("answer");
        QTest::addColumn<bool>("full");
        for (const auto& t : regimeTemplates()) {
            QTest::newRow(qPrintable(t.first + QStringLiteral(" full"))) << t.first << t.second << true;
            QTest::newRow(qPrintable(t.first + QStringLiteral(" minimal"))) << t.first << t.second << false;
        }
    }

    void shippedTemplateRenders()
    {
        QFETCH(QString, file);
        QFETCH(bool, answer);
        QFETCH(bool, full);
        const PromptRenderer renderer(promptsDir());
        QVERIFY(renderer.strict());
        const auto r = renderer.render(file, full ? m_full : m_minimal);
        QVERIFY2(r.ok, qPrintable(r.error));
        QVERIFY(r.error.isEmpty());
        const QString& text = r.text;
        // KWB_PROMPT_DUMP_DIR=/tmp/prompts keeps each rendering, for reading the prompts as the model sees them.
        if (const QString dump = qEnvironmentVariable("KWB_PROMPT_DUMP_DIR"); !dump.isEmpty())
            writeText(QDir(dump).filePath(QString(file).replace(QLatin1Char('/'), QLatin1Char('_')) +
                                          (full ? QStringLiteral(".full.md") : QStringLiteral(".minimal.md"))),
                      text);
        QVERIFY(!text.contains(QStringLiteral("{{")));
        QVERIFY(!text.startsWith(QLatin1Char('\n')));
        QVERIFY2(text.contains(QStringLiteral("Task L2/1: Conv2d, ReLU, bias add")), qPrintable(text));
        // not HTML-escaped
        QVERIFY(text.contains(QStringLiteral("x = torch.conv2d(x, p[\"conv.weight\"], p[\"conv.bias\"]")));
        QVERIFY(!text.contains(QStringLiteral("&quot;")));
        QVERIFY(text.contains(QStringLiteral("- `x`: float32, shape 128×64×128×128")));
        if (answer) {
            QVERIFY(text.contains(QStringLiteral("```cuda\n")));
            QVERIFY(text.contains(QStringLiteral("```python\n")));
            QVERIFY(text.contains(QStringLiteral("kb.launch(\"")));
            QVERIFY(text.contains(QStringLiteral("extern \"C\" __global__")));
            QVERIFY(text.contains(QStringLiteral("`def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:`")));
        } else {
            QVERIFY(!text.contains(QStringLiteral("## Answer format")));
        }
    }

    // The partial carries docs/candidate-format.md's example word for word.
    void candidateFormatFaithful()
    {
        const QString doc = readText(QStringLiteral(KWB_PROMPTS_DIR "/../docs/candidate-format.md"));
        const qsizetype start = doc.indexOf(QStringLiteral("````markdown\n"));
        QVERIFY(start >= 0);
        const qsizetype body = start + QStringLiteral("````markdown\n").size();
        const qsizetype end = doc.indexOf(QStringLiteral("\n````"), body);
        QVERIFY(end > body);
        const QString example = doc.mid(body, end - body);
        QVERIFY(example.contains(QStringLiteral("kb.launch(\"bias_relu\"")));
        const auto r = PromptRenderer(promptsDir()).render(QStringLiteral("agent/generator.mustache"), m_full);
        QVERIFY2(r.ok, qPrintable(r.error));
        QVERIFY(r.text.contains(example));
        for (const char* line : {"kb.launch_smem(\"name\"", "cannot open source file", "__int_as_float(0x7f800000)",
                                 "p: Dict[str, Tensor]", "load_inline"})
            QVERIFY2(r.text.contains(QLatin1String(line)), line);
    }

    void buildContextFormats()
    {
        const QJsonObject& c = m_full;
        QCOMPARE(c.value(QStringLiteral("task_id")).toString(), QStringLiteral("L2/1"));
        QCOMPARE(c.value(QStringLiteral("task_level")).toString(), QStringLiteral("2"));
        QCOMPARE(c.value(QStringLiteral("signature")).toString(),
                 QStringLiteral("def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:"));
        QCOMPARE(c.value(QStringLiteral("output_shape")).toString(), QStringLiteral("128×128×126×126"));
        QCOMPARE(c.value(QStringLiteral("op_chain")).toString(),
                 QStringLiteral("aten::conv2d → aten::relu → aten::add"));
        QCOMPARE(c.value(QStringLiteral("flops")).toString(), QStringLiteral("240 GFLOP"));
        QCOMPARE(c.value(QStringLiteral("bytes_fused")).toString(), QStringLiteral("1.58 GB"));
        QCOMPARE(c.value(QStringLiteral("intensity_fused")).toString(), QStringLiteral("152.6 FLOP/byte"));
        const QJsonArray ops = c.value(QStringLiteral("ops")).toArray();
        QCOMPARE(ops.size(), 3);
        QCOMPARE(ops.at(0).toObject().value(QStringLiteral("shape")).toString(), QStringLiteral("128×128×126×126"));
        QCOMPARE(ops.at(0).toObject().value(QStringLiteral("category")).toString(), QStringLiteral("conv"));
        QCOMPARE(c.value(QStringLiteral("library_ops")).toArray().size(), 1);
        QCOMPARE(c.value(QStringLiteral("fusable_ops")).toArray().size(), 2);
        const QJsonObject top = c.value(QStringLiteral("top_ops")).toArray().at(0).toObject();
        QCOMPARE(top.value(QStringLiteral("op")).toString(), QStringLiteral("aten::conv2d"));
        QCOMPARE(top.value(QStringLiteral("share")).toString(), QStringLiteral("81.3 %"));
        QCOMPARE(top.value(QStringLiteral("time")).toString(), QStringLiteral("7.413 ms"));
        QVERIFY(c.value(QStringLiteral("roofline_rule"))
                    .toString()
                    .contains(QStringLiteral("Do not reimplement matmul or conv; fuse the epilogue.")));
        const QJsonObject dev = c.value(QStringLiteral("device")).toObject();
        QCOMPARE(dev.value(QStringLiteral("sm_count")).toString(), QStringLiteral("132"));
        QCOMPARE(dev.value(QStringLiteral("hbm_gbps")).toString(), QStringLiteral("4011 GB/s (measured copy)"));
        QCOMPARE(dev.value(QStringLiteral("fp32_tflops")).toString(), QStringLiteral("51.2 TFLOP/s (measured FMA)"));
        QCOMPARE(dev.value(QStringLiteral("ridge_point")).toString(), QStringLiteral("12.8 FLOP/byte"));
        QVERIFY(c.value(QStringLiteral("roofline_verdict")).toString().startsWith(QStringLiteral("compute-bound")));
        const QJsonObject fb = c.value(QStringLiteral("feedback")).toObject();
        QCOMPARE(fb.value(QStringLiteral("status")).toString(), QStringLiteral("compile_error"));
        QVERIFY(fb.value(QStringLiteral("compile_log")).toString().contains(QStringLiteral("INFINITY")));
        QCOMPARE(fb.value(QStringLiteral("speedup")), QJsonValue(false));
        QVERIFY(c.value(QStringLiteral("previous_answer")).toString().startsWith(QStringLiteral("```cuda")));

        // Without a device, analysis, profile or feedback: the names exist and are false.
        for (const char* key : {"device", "top_ops", "profile_total", "flops", "feedback", "previous_answer",
                                "analysis", "research", "diagnosis", "critique", "roofline_verdict"})
            QVERIFY2(m_minimal.contains(QLatin1String(key)) && !m_minimal.value(QLatin1String(key)).toBool(), key);
        // A device without measured ceilings: theoretical peaks.
        const QJsonObject bare = PromptRenderer::buildContext(
            parse(kTask), parse(kAnalyze), {},
            parse(R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
                      "sm_clock_khz":1980000,"hbm_theoretical_gbps":4800})"));
        QCOMPARE(bare.value(QStringLiteral("device")).toObject().value(QStringLiteral("fp32_tflops")).toString(),
                 QStringLiteral("66.9 TFLOP/s (theoretical)"));
    }

    // The profile names operators, not call sites (issue 36 item 4): torch.profiler's
    // key_averages() sums an operator's calls, so a network's five convolutions are one row and
    // an epilogue operator can reach the top five.
    void profileSumsEachOperatorOverItsCalls()
    {
        const QJsonObject profile = parse(R"json({"task":"L3/5","total_ns":10000000,
 "ops":[{"index":0,"op":"aten::conv2d","time_ns":4000000,"share":0.40,"kernels":2},
        {"index":3,"op":"aten::conv2d","time_ns":2000000,"share":0.20,"kernels":2},
        {"index":1,"op":"aten::relu","time_ns":600000,"share":0.06,"kernels":1},
        {"index":6,"op":"aten::conv2d","time_ns":900000,"share":0.09,"kernels":1},
        {"index":4,"op":"aten::relu","time_ns":500000,"share":0.05,"kernels":1},
        {"index":2,"op":"aten::max_pool2d","time_ns":800000,"share":0.08,"kernels":1},
        {"index":7,"op":"aten::linear","time_ns":700000,"share":0.07,"kernels":2},
        {"index":8,"op":"aten::dropout","time_ns":300000,"share":0.03,"kernels":1},
        {"index":-1,"op":"(no op)","time_ns":200000,"share":0.02,"kernels":1}],"kernels":[]})json");
        const QJsonObject c = PromptRenderer::buildContext(parse(kTask), {}, profile, {});
        const QJsonArray top = c.value(QStringLiteral("top_ops")).toArray();
        QCOMPARE(top.size(), 5);
        QStringList rows;
        for (const QJsonValue& v : top) {
            const QJsonObject o = v.toObject();
            rows << QStringLiteral("%1 %2 %3 %4× %5")
                        .arg(o.value(QStringLiteral("op")).toString(), o.value(QStringLiteral("share")).toString(),
                             o.value(QStringLiteral("time")).toString(), o.value(QStringLiteral("calls")).toString(),
                             o.value(QStringLiteral("kernels")).toString());
        }
        QCOMPARE(rows, QStringList({QStringLiteral("aten::conv2d 69.0 % 6.900 ms 3× 5"),
                                    QStringLiteral("aten::relu 11.0 % 1.100 ms 2× 2"),
                                    QStringLiteral("aten::max_pool2d 8.0 % 800.0 µs 1× 1"),
                                    QStringLiteral("aten::linear 7.0 % 700.0 µs 1× 2"),
                                    QStringLiteral("aten::dropout 3.0 % 300.0 µs 1× 1")}));
        // The study set's partial says what the rows are.
        const PromptRenderer study(QStringLiteral(KWB_PROMPTS_DIR "/../prompts"));
        const auto guided = study.render(QStringLiteral("profiling-guided/generator.mustache"), c);
        QVERIFY2(guided.ok, qPrintable(guided.error));
        QVERIFY2(
            guided.text.contains(QStringLiteral("- `aten::conv2d`: 69.0 % (6.900 ms; called 3×, 5 kernel launches)")),
            qPrintable(guided.text));
        QCOMPARE(guided.text.count(QStringLiteral("`aten::conv2d`")), 1);
    }

    void renderedFacts()
    {
        const PromptRenderer renderer(promptsDir());
        const auto guided = renderer.render(QStringLiteral("profiling-guided/generator.mustache"), m_full);
        QVERIFY2(guided.ok, qPrintable(guided.error));
        QVERIFY(guided.text.contains(QStringLiteral("- `aten::conv2d`: 81.3 % (7.413 ms, 2 kernel launches)")));
        QVERIFY(guided.text.contains(QStringLiteral("Rule: Do not reimplement matmul or conv; fuse the epilogue.")));
        QVERIFY(guided.text.contains(QStringLiteral("GPU: NVIDIA H200 (sm_90, 132 SMs)")));
        const auto retry = renderer.render(QStringLiteral("iterative/retry.mustache"), m_full);
        QVERIFY2(retry.ok, qPrintable(retry.error));
        QVERIFY(retry.text.contains(QStringLiteral("Status: compile_error (stopped at stage: compile)")));
        QVERIFY(retry.text.contains(QStringLiteral("identifier \"INFINITY\" is undefined")));
        QVERIFY(retry.text.contains(QStringLiteral("This is attempt 2 of 3.")));
        QVERIFY(retry.text.contains(QStringLiteral("y[0] = INFINITY;")));
        const auto analyzer = renderer.render(QStringLiteral("agent/analyzer.mustache"), m_full);
        QVERIFY(analyzer.text.contains(QStringLiteral("- 0. `aten::conv2d` (conv): output 128×128×126×126")));
    }

    // A KernelBench-format answer's failed build: load_inline's error once, as the message, and no
    // "Compiler log (NVRTC ...)" section (its compile log is that message again); a built one's
    // log is kwb's note of the cache, not for the model either.
    void kernelBenchFeedbackHasNoNvrtcLog()
    {
        const PromptRenderer renderer(promptsDir());
        const QString error = QStringLiteral("RuntimeError: Error building extension 'relu_ext': main.cpp:3:45: error: "
                                             "'zero' was not declared in this scope");
        QJsonObject failed{{QStringLiteral("status"), QStringLiteral("compile_error")},
                           {QStringLiteral("stage"), QStringLiteral("compile")},
                           {QStringLiteral("message"), error},
                           {QStringLiteral("answer_format"), QStringLiteral("kernelbench")},
                           {QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), false},
                                                                   {QStringLiteral("log"), error},
                                                                   {QStringLiteral("arch"), QStringLiteral("sm_90")}}},
                           {QStringLiteral("answer"), QStringLiteral("```python\nclass ModelNew: pass\n```")}};
        QJsonObject c = PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), {}, {}, failed);
        QCOMPARE(c.value(QStringLiteral("feedback")).toObject().value(QStringLiteral("compile_log")),
                 QJsonValue(false));
        auto retry = renderer.render(QStringLiteral("iterative/retry.mustache"), c);
        QVERIFY2(retry.ok, qPrintable(retry.error));
        QCOMPARE(retry.text.count(QStringLiteral("'zero' was not declared in this scope")), 1);
        QVERIFY2(!retry.text.contains(QStringLiteral("Compiler log (NVRTC")), qPrintable(retry.text));

        QJsonObject built = failed;
        built[QStringLiteral("status")] = QStringLiteral("incorrect");
        built[QStringLiteral("message")] = QStringLiteral("outputs differ");
        built[QStringLiteral("compile")] = QJsonObject{
            {QStringLiteral("ok"), true},
            {QStringLiteral("log"), QStringLiteral("load_inline 'relu_ext': built in /home/u/.cache/x (12.3 s)\n")}};
        c = PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), {}, {}, built);
        retry = renderer.render(QStringLiteral("iterative/retry.mustache"), c);
        QVERIFY2(!retry.text.contains(QStringLiteral(".cache/x")), qPrintable(retry.text));
        // A native answer's NVRTC log stays (renderedFacts).
    }

    // The study's two agent wordings differ: the repair puts correctness first and keeps torch for
    // the heavy compute; the pilot asks every role for custom tiled CUDA.
    void competenceMatchedVersusPilot()
    {
        const PromptRenderer renderer(promptsDir());
        const auto agent = renderer.render(QStringLiteral("agent/generator.mustache"), m_full);
        const auto pilot = renderer.render(QStringLiteral("pilot-v1/generator.mustache"), m_full);
        QVERIFY2(agent.ok, qPrintable(agent.error));
        QVERIFY2(pilot.ok, qPrintable(pilot.error));
        QVERIFY(agent.text.contains(QStringLiteral("Correct first"), Qt::CaseInsensitive));
        QVERIFY(agent.text.contains(QStringLiteral("Reuse torch for the heavy compute")));
        QVERIFY(agent.text.contains(QStringLiteral("Fuse only the memory-bound epilogue")));
        QVERIFY(agent.text.contains(QStringLiteral("Escalate only after that")));
        QVERIFY(!agent.text.contains(QStringLiteral("Do not call torch")));
        QVERIFY(pilot.text.contains(QStringLiteral("custom tiled CUDA kernels for every operator")));
        QVERIFY(pilot.text.contains(QStringLiteral("Do not call torch, cuBLAS or cuDNN")));
        QVERIFY(!pilot.text.contains(QStringLiteral("correct first"), Qt::CaseInsensitive));
        for (const char* role : {"analyzer", "researcher", "critic"}) {
            const auto r = renderer.render(QStringLiteral("pilot-v1/%1.mustache").arg(QLatin1String(role)), m_full);
            QVERIFY2(r.ok, qPrintable(r.error));
            QVERIFY2(r.text.contains(QStringLiteral("tiled")), role);
        }
        const auto critic = renderer.render(QStringLiteral("pilot-v1/critic.mustache"), m_full);
        QVERIFY(critic.text.contains(QStringLiteral("Always ask for more")));
    }

    // With the triager on, the generator gets its diagnosis instead of the raw report.
    // The speed line a retry reads: the speed-up with its 95 % interval, and none at all where
    // the time is below the roofline floor (a memoised or skipped result), with the reason instead.
    void speedLineCarriesIntervalAndTrust()
    {
        const PromptRenderer renderer(promptsDir());
        QJsonObject timed = parse(R"({"status":"correct","speedup":1.0712,
            "timing":{"method":"adaptive","stop_reason":"target_reached","samples":10,
                      "candidate":{"mean_ms":8.1,"trials":10},"reference":{"mean_ms":8.7,"trials":10},
                      "speedup_interval":{"low":1.0698,"high":1.0726,"relative_half_width":0.0013,"samples":10}}})");
        QJsonObject c = PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), {}, {}, timed);
        QJsonObject fb = c.value(QStringLiteral("feedback")).toObject();
        QCOMPARE(fb.value(QStringLiteral("speedup")).toString(), QStringLiteral("1.071\u00D7"));
        QCOMPARE(fb.value(QStringLiteral("speedup_interval")).toString(), QStringLiteral("1.070\u20131.073\u00D7"));
        QCOMPARE(fb.value(QStringLiteral("not_counted")), QJsonValue(false));
        QString text = renderer.render(QStringLiteral("iterative/retry.mustache"), c).text;
        QVERIFY2(text.contains(QStringLiteral(
                     "Speed: 1.071\u00D7 the PyTorch reference (95 % interval 1.070\u20131.073\u00D7).")),
                 qPrintable(text));

        // Without an interval (the fixed method): the bare speed-up, no empty brackets.
        QJsonObject fixed = timed;
        QJsonObject timing = fixed.value(QStringLiteral("timing")).toObject();
        timing.remove(QStringLiteral("speedup_interval"));
        timing[QStringLiteral("method")] = QStringLiteral("fixed");
        fixed[QStringLiteral("timing")] = timing;
        c = PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), {}, {}, fixed);
        text = renderer.render(QStringLiteral("iterative/retry.mustache"), c).text;
        QVERIFY2(text.contains(QStringLiteral("Speed: 1.07\u00D7 the PyTorch reference.")), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("95 % interval")));

        // Below the roofline floor: no speed to chase, the reason instead.
        QJsonObject cheat = timed;
        cheat[QStringLiteral("speedup")] = 20.6;
        cheat[QStringLiteral("flags")] = QJsonArray{QStringLiteral("below_roofline_floor")};
        cheat[QStringLiteral("roofline")] = QJsonObject{{QStringLiteral("floor_ms"), 0.39},
                                                        {QStringLiteral("candidate_ms"), 0.42 / 20.6 * 10},
                                                        {QStringLiteral("margin"), 0.1}};
        c = PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), {}, {}, cheat);
        fb = c.value(QStringLiteral("feedback")).toObject();
        QCOMPARE(fb.value(QStringLiteral("speedup")), QJsonValue(false));
        QCOMPARE(fb.value(QStringLiteral("speedup_interval")), QJsonValue(false));
        text = renderer.render(QStringLiteral("iterative/retry.mustache"), c).text;
        QVERIFY2(!text.contains(QStringLiteral("Speed:")) && !text.contains(QStringLiteral("20.6")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral(
                     "Not counted as correct or fast: measured 0.204 ms is below the roofline floor 0.39 ms")),
                 qPrintable(text));
    }

    void diagnosisReplacesRawReport()
    {
        QJsonObject c = m_full;
        const PromptRenderer renderer(promptsDir());
        auto raw = renderer.render(QStringLiteral("agent/generator.mustache"), c);
        QVERIFY(raw.text.contains(QStringLiteral("## What the evaluator reported")));
        QVERIFY(!raw.text.contains(QStringLiteral("## Diagnosis")));
        c[QStringLiteral("diagnosis")] = QStringLiteral("3. **Smallest fix**: use __int_as_float(0x7f800000).");
        const auto triaged = renderer.render(QStringLiteral("agent/generator.mustache"), c);
        QVERIFY(!triaged.text.contains(QStringLiteral("## What the evaluator reported")));
        QVERIFY(triaged.text.contains(QStringLiteral("## Diagnosis of your previous answer")));
        QVERIFY(triaged.text.contains(QStringLiteral("## Your previous answer")));
    }

    void errors_data()
    {
        QTest::addColumn<QString>("main");    // main.mustache
        QTest::addColumn<QString>("partial"); // partials/part.mustache, when not empty
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("line");
        QTest::addColumn<QString>("variable");
        QTest::addColumn<QString>("words");

        QTest::newRow("unknown variable") << QStringLiteral("Task {{task_id}}\n\nUse {{ nope }} here.\n") << QString()
                                          << "main.mustache" << 3 << "nope"
                                          << "unknown variable 'nope'";
        QTest::newRow("unknown variable, triple")
            << QStringLiteral("a\n{{{refrence}}}\n") << QString() << "main.mustache" << 2 << "refrence"
            << "unknown variable";
        QTest::newRow("unknown field inside a list")
            << QStringLiteral("{{#top_ops}}\n- {{op}} {{percent}}\n{{/top_ops}}\n") << QString() << "main.mustache" << 2
            << "percent"
            << "unknown variable";
        QTest::newRow("unknown dotted name")
            << QStringLiteral("{{device.name}}\n{{device.hbm}}\n") << QString() << "main.mustache" << 2 << "device.hbm"
            << "unknown variable";
        QTest::newRow("unknown section") << QStringLiteral("x\n{{#feedbak}}y{{/feedbak}}\n") << QString()
                                         << "main.mustache" << 2 << "feedbak"
                                         << "unknown section";
        QTest::newRow("unknown inverted section")
            << QStringLiteral("{{^devise}}no GPU{{/devise}}\n") << QString() << "main.mustache" << 1 << "devise"
            << "unknown section";
        QTest::newRow("unclosed section")
            << QStringLiteral("a\nb\n{{#ops}}\n{{op}}\n") << QString() << "main.mustache" << 3 << "ops"
            << "never closed";
        QTest::newRow("mismatched close")
            << QStringLiteral("{{#ops}}\n{{op}}\n{{/top_ops}}\n") << QString() << "main.mustache" << 3 << "top_ops"
            << "opened on line 1";
        QTest::newRow("close without open")
            << QStringLiteral("a\n{{/ops}}\n") << QString() << "main.mustache" << 2 << "ops"
            << "never opened";
        QTest::newRow("unclosed tag") << QStringLiteral("a\nb {{task_id\n") << QString() << "main.mustache" << 2 << ""
                                      << "never closed";
        QTest::newRow("missing partial") << QStringLiteral("a\n\n{{> candidate_fromat}}\n") << QString()
                                         << "main.mustache" << 3 << "candidate_fromat"
                                         << "not found";
        QTest::newRow("missing partial in a skipped branch")
            << QStringLiteral("{{#feedback}}\n{{> gone}}\n{{/feedback}}\n") << QString() << "main.mustache" << 2
            << "gone"
            << "not found";
        QTest::newRow("unknown variable in a partial")
            << QStringLiteral("a\n{{> part}}\n") << QStringLiteral("x\ny {{oops}}\n") << "partials/part.mustache" << 2
            << "oops"
            << "unknown variable";
        QTest::newRow("unbalanced partial")
            << QStringLiteral("{{> part}}\n") << QStringLiteral("{{#ops}}\n") << "partials/part.mustache" << 1 << "ops"
            << "never closed";
    }

    void errors()
    {
        QFETCH(QString, main);
        QFETCH(QString, partial);
        QFETCH(QString, file);
        QFETCH(int, line);
        QFETCH(QString, variable);
        QFETCH(QString, words);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeText(dir.filePath(QStringLiteral("main.mustache")), main);
        if (!partial.isEmpty())
            writeText(dir.filePath(QStringLiteral("partials/part.mustache")), partial);
        const auto r = PromptRenderer(dir.path()).render(QStringLiteral("main.mustache"), m_full);
        QVERIFY(!r.ok);
        QVERIFY(r.text.isEmpty());
        QCOMPARE(r.file, file);
        QCOMPARE(r.line, line);
        QCOMPARE(r.variable, variable);
        QVERIFY2(r.error.startsWith(QStringLiteral("%1:%2: ").arg(file).arg(line)), qPrintable(r.error));
        QVERIFY2(r.error.contains(words), qPrintable(r.error));
        if (!variable.isEmpty())
            QVERIFY2(r.error.contains(variable), qPrintable(r.error));
    }

    void missingTemplate()
    {
        const auto r = PromptRenderer(promptsDir()).render(QStringLiteral("nowhere/generator.mustache"), m_full);
        QVERIFY(!r.ok);
        QCOMPARE(r.file, QStringLiteral("nowhere/generator.mustache"));
        QVERIFY(r.error.contains(QStringLiteral("cannot read")));
    }

    // Outside strict mode a missing name renders empty, as Mustache does; structure errors remain.
    void lenientMode()
    {
        QTemporaryDir dir;
        writeText(dir.filePath(QStringLiteral("a.mustache")),
                  QStringLiteral("[{{nope}}]{{#gone}}x{{/gone}}{{^gone}}y{{/gone}}\n"));
        writeText(dir.filePath(QStringLiteral("b.mustache")), QStringLiteral("{{#ops}}\n"));
        PromptRenderer renderer(dir.path());
        renderer.setStrict(false);
        const auto a = renderer.render(QStringLiteral("a.mustache"), m_minimal);
        QVERIFY2(a.ok, qPrintable(a.error));
        QCOMPARE(a.text, QStringLiteral("[]y\n"));
        QVERIFY(!renderer.render(QStringLiteral("b.mustache"), m_minimal).ok);
    }

    // Sections over lists, values that are false, and no escaping.
    void mustacheSemantics()
    {
        QTemporaryDir dir;
        writeText(
            dir.filePath(QStringLiteral("t.mustache")),
            QStringLiteral("{{#items}}\n- {{name}} of {{title}}\n{{/items}}\n{{^empty}}none{{/empty}} <{{code}}>\n"));
        const QJsonObject c{
            {QStringLiteral("title"), QStringLiteral("T")},
            {QStringLiteral("items"), QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("a")}},
                                                 QJsonObject{{QStringLiteral("name"), 2}}}},
            {QStringLiteral("empty"), QJsonArray{}},
            {QStringLiteral("code"), QStringLiteral("a < b && \"c\"")}};
        const auto r = PromptRenderer(dir.path()).render(QStringLiteral("t.mustache"), c);
        QVERIFY2(r.ok, qPrintable(r.error));
        QCOMPARE(r.text, QStringLiteral("- a of T\n- 2 of T\nnone <a < b && \"c\">\n"));

        // Blank runs shrink outside code blocks only: a compile log counts the lines inside them.
        writeText(dir.filePath(QStringLiteral("b.mustache")), QStringLiteral("\n\na\n\n\n\nb\n{{code}}\n\n\n"));
        const QJsonObject code{{QStringLiteral("code"), QStringLiteral("````markdown\n```cuda\nx\n\n\ny\n```\n````")}};
        const auto b = PromptRenderer(dir.path()).render(QStringLiteral("b.mustache"), code);
        QVERIFY2(b.ok, qPrintable(b.error));
        QCOMPARE(b.text, QStringLiteral("a\n\nb\n````markdown\n```cuda\nx\n\n\ny\n```\n````\n"));
    }

    // A partial that includes itself, two or three that include each other, in a branch the
    // context skips or not: an error naming the cycle, found before anything renders (the
    // library itself would recurse until the stack overflows).
    void partialCycles_data()
    {
        QTest::addColumn<QStringList>("files"); // name=text pairs; main.mustache includes {{> a}}
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("words");
        QTest::newRow("self") << QStringList{QStringLiteral("a=x {{> a}}\n")} << "partials/a.mustache"
                              << "partial cycle: a > a";
        QTest::newRow("mutual") << QStringList{QStringLiteral("a=\n{{> b}}\n"), QStringLiteral("b=y\n{{> a}}\n")}
                                << "partials/b.mustache"
                                << "partial cycle: a > b > a";
        QTest::newRow("three") << QStringList{QStringLiteral("a={{> b}}"), QStringLiteral("b={{> c}}"),
                                              QStringLiteral("c={{> a}}")}
                               << "partials/c.mustache"
                               << "partial cycle: a > b > c > a";
        QTest::newRow("cycle below the top")
            << QStringList{QStringLiteral("a={{> b}}"), QStringLiteral("b={{> c}}"), QStringLiteral("c={{> b}}")}
            << "partials/c.mustache"
            << "partial cycle: b > c > b";
        QTest::newRow("in a skipped branch")
            << QStringList{QStringLiteral("a={{^task_id}}{{> a}}{{/task_id}}")} << "partials/a.mustache"
            << "partial cycle: a > a";
        QTest::newRow("inside a list section")
            << QStringList{QStringLiteral("a={{#ops}}{{> b}}{{/ops}}"), QStringLiteral("b={{#ops}}{{> a}}{{/ops}}")}
            << "partials/b.mustache"
            << "partial cycle: a > b > a";
        QStringList chain;
        for (int i = 0; i < 20; ++i)
            chain << QStringLiteral("%1={{> %2}}")
                         .arg(i == 0 ? QStringLiteral("a") : QStringLiteral("p%1").arg(i))
                         .arg(QStringLiteral("p%1").arg(i + 1));
        chain << QStringLiteral("p20=end");
        QTest::newRow("too deep") << chain << "partials/p7.mustache"
                                  << "partials nest more than 8 deep";
        const QString deep =
            QString(QStringLiteral("{{#ops}}")).repeated(10000) + QString(QStringLiteral("{{/ops}}")).repeated(10000);
        QTest::newRow("sections too deep") << QStringList{QStringLiteral("a=") + deep} << "partials/a.mustache"
                                           << "sections nest more than 64 deep";
    }

    void partialCycles()
    {
        QFETCH(QStringList, files);
        QFETCH(QString, file);
        QFETCH(QString, words);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeText(dir.filePath(QStringLiteral("agent/main.mustache")), QStringLiteral("Task {{task_id}}\n{{> a}}\n"));
        for (const QString& entry : std::as_const(files)) {
            const qsizetype eq = entry.indexOf(QLatin1Char('='));
            writeText(dir.filePath(QStringLiteral("partials/%1.mustache").arg(entry.left(eq))), entry.mid(eq + 1));
        }
        const PromptRenderer renderer(dir.path());
        const auto r = renderer.render(QStringLiteral("agent/main.mustache"), m_full);
        QVERIFY(!r.ok);
        QVERIFY(r.text.isEmpty());
        QCOMPARE(r.file, file);
        QVERIFY2(r.error.contains(words), qPrintable(r.error));
        // The structure check alone (no context) says the same, and so does the set when loaded.
        const auto c = renderer.check(QStringLiteral("agent/main.mustache"));
        QVERIFY(!c.ok);
        QVERIFY2(c.error.contains(words), qPrintable(c.error));
        const QStringList problems = TemplateSet(dir.path()).check();
        QVERIFY(!problems.isEmpty());
        QVERIFY2(problems.first().contains(words), qPrintable(problems.join(QLatin1Char('\n'))));
    }

    // A partial included many times over (a wide DAG, no cycle) is fine and is walked once per
    // include path only as deep as the bound: 10 includes per level over 7 levels render at once.
    void sharedPartialsAreNoCycle()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeText(dir.filePath(QStringLiteral("main.mustache")), QStringLiteral("{{> p0}}"));
        for (int level = 0; level < 7; ++level)
            writeText(dir.filePath(QStringLiteral("partials/p%1.mustache").arg(level)),
                      QString(QStringLiteral("{{> p%1}}").arg(level + 1)).repeated(level < 5 ? 10 : 1));
        writeText(dir.filePath(QStringLiteral("partials/p7.mustache")), QStringLiteral("x"));
        const PromptRenderer renderer(dir.path());
        const auto c = renderer.check(QStringLiteral("main.mustache"));
        QVERIFY2(c.ok, qPrintable(c.error));
        QVERIFY(TemplateSet(dir.path()).check().isEmpty());
        // The shipped set is sound too.
        QCOMPARE(TemplateSet::shipped(promptsDir()).check(), QStringList());
    }

    // What the model is shown never holds a credential the workbench knows, wherever it came
    // from (a compile log quoting /proc/self/environ here), and neither does the run store.
    void secretsAreScrubbed()
    {
        const QString envKey = QStringLiteral("sk-env-7f3a9c1e5b");
        const QString settingsKey = QStringLiteral("sk-settings-24d8b0");
        qputenv("KWB_API_KEY", envKey.toUtf8());
        secrets::takeSecretsFromEnvironment(); // as main() does: held in memory, gone from the environment
        QVERIFY(!qEnvironmentVariableIsSet("KWB_API_KEY"));
        secrets::remember(settingsKey);
        const QString log = QStringLiteral("PATH=/usr/bin KWB_API_KEY=%1 OTHER=%2\n").arg(envKey, settingsKey);
        QJsonObject feedback = parse(kFeedback);
        QJsonObject compile = feedback.value(QStringLiteral("compile")).toObject();
        compile.insert(QStringLiteral("log"), log);
        feedback.insert(QStringLiteral("compile"), compile);
        feedback.insert(QStringLiteral("message"), QStringLiteral("key %1").arg(envKey));
        const QJsonObject context =
            PromptRenderer::buildContext(parse(kTask), parse(kAnalyze), QJsonObject(), parse(kDevice), feedback);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeText(dir.filePath(QStringLiteral("t.mustache")),
                  QStringLiteral("{{#feedback}}{{message}}\n{{compile_log}}{{/feedback}}\n"));
        const auto r = PromptRenderer(dir.path()).render(QStringLiteral("t.mustache"), context);
        QVERIFY2(r.ok, qPrintable(r.error));
        QVERIFY2(!r.text.contains(envKey) && !r.text.contains(settingsKey), qPrintable(r.text));
        QVERIFY2(r.text.contains(QStringLiteral("KWB_API_KEY=[redacted]")), qPrintable(r.text));
        QVERIFY2(r.text.contains(QStringLiteral("OTHER=[redacted]")), qPrintable(r.text));
        // The shipped retry prompt, which shows the compile log, too.
        const auto retry = PromptRenderer(promptsDir()).render(QStringLiteral("iterative/retry.mustache"), context);
        QVERIFY2(retry.ok, qPrintable(retry.error));
        QVERIFY(retry.text.contains(QStringLiteral("[redacted]")));
        QVERIFY(!retry.text.contains(envKey) && !retry.text.contains(settingsKey));

        // The run store: the prompt, the response, the candidate and the evaluation's log.
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("runs.sqlite"))));
        const auto run = store.createRun(QStringLiteral("r"), QStringLiteral("iterative"), QJsonObject());
        QVERIFY(run);
        PromptRecord prompt;
        prompt.runId = *run;
        prompt.task = QStringLiteral("L2/1");
        prompt.turn = 2;
        prompt.role = QStringLiteral("retry");
        prompt.text = log;
        const auto promptId = store.addPrompt(prompt);
        QVERIFY(promptId);
        ResponseRecord response;
        response.promptId = *promptId;
        response.text = QStringLiteral("echo %1").arg(settingsKey);
        const auto responseId = store.addResponse(response);
        QVERIFY(responseId);
        CandidateRecord candidate;
        candidate.responseId = *responseId;
        candidate.task = prompt.task;
        candidate.turn = 2;
        candidate.cuda = QStringLiteral("// %1").arg(envKey);
        const auto candidateId = store.addCandidate(candidate);
        QVERIFY(candidateId);
        QVERIFY(store.addEvaluation(*candidateId, feedback));
        const QList<EvaluationRecord> evaluations = store.evaluations(*run);
        QCOMPARE(evaluations.size(), 1);
        const QString stored = QString::fromUtf8(QJsonDocument(evaluations.first().result).toJson());
        QVERIFY2(!stored.contains(envKey) && !stored.contains(settingsKey), qPrintable(stored));
        QVERIFY(stored.contains(QStringLiteral("[redacted]")));
        QCOMPARE(evaluations.first().result.value(QStringLiteral("status")).toString(),
                 QStringLiteral("compile_error"));
        const QList<UnitResponse> responses = store.responses(*run);
        QCOMPARE(responses.size(), 1);
        QVERIFY(!responses.first().response.text.contains(settingsKey));
        store.close();
        QFile db(dir.filePath(QStringLiteral("runs.sqlite")));
        QVERIFY(db.open(QIODevice::ReadOnly));
        const QByteArray bytes = db.readAll();
        QVERIFY(!bytes.contains(envKey.toUtf8()));
        QVERIFY(!bytes.contains(settingsKey.toUtf8()));
    }
};

QTEST_GUILESS_MAIN(TestPromptRenderer)
#include "tst_promptrenderer.moc"
