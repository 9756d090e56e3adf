// RunController against the scripted OpenAI-compatible server (scriptedllmserver.h) and the fake
// worker (fakeworker.cpp, which takes an evaluation's status from a "status: NAME" marker in the
// answer): each regime's turn logic, the rows in the run store, selection across turns, tasks in
// flight at once, and resume.

#include "core/config/runconfig.h"
#include "core/model/llmclient.h"
#include "core/run/runcontroller.h"
#include "core/store/runstore.h"
#include "core/study/report.h"
#include "core/workers/evaluationqueue.h"
#include "scriptedllmserver.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <functional>

#include <algorithm>
#include <memory>

using namespace kwb;
using kwb::test::ScriptedLlmServer;

namespace {

QJsonObject parse(const char* json)
{
    return QJsonDocument::fromJson(QByteArray(json)).object();
}

// L2/1 as the worker reports it, trimmed (as in tst_promptrenderer).
const char* kTask = R"({"id":"L2/1","level":2,"number":1,"title":"Conv2d, ReLU, bias add",
 "source":"level2/1_Conv2D_ReLU_BiasAdd.py","description":"Conv2d, ReLU, then a per-channel bias.",
 "forward":"\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    x = torch.conv2d(x, p[\"conv.weight\"], p[\"conv.bias\"], [1, 1], [0, 0], [1, 1], 1)\n    x = torch.relu(x)\n    return x + p[\"bias\"]\n",
 "inputs":[{"name":"x","kind":"tensor","shape":["N","C_in","H","W"],"full":[128,64,128,128],"dtype":"float32"}],
 "params":[{"name":"conv.weight","shape":["C_out","C_in","K","K"],"full":[128,64,3,3]},
           {"name":"conv.bias","shape":["C_out"],"full":[128]},
           {"name":"bias","shape":["C_out",1,1],"full":[128,1,1]}]})";

const char* kAnalyze = R"({"task":"L2/1","scale":"full","output_shape":[128,128,126,126],
 "ops":[{"index":0,"op":"aten::conv2d","category":"conv","output":[128,128,126,126],"flops":239767683072,"bytes":654311424},
        {"index":1,"op":"aten::relu","category":"elementwise","output":[128,128,126,126],"flops":260112384,"bytes":2080899072}],
 "flops":240287907840,"bytes_unfused":4816110080,"bytes_fused":1575010816,"intensity_unfused":49.89,"intensity_fused":152.56})";

const char* kProfile = R"({"task":"L2/1","total_ns":9120000,
 "ops":[{"index":0,"op":"aten::conv2d","time_ns":7413000,"share":0.8128,"kernels":2}],"kernels":[]})";

const char* kDevice = R"({"available":true,"name":"NVIDIA H200","cc":"9.0","arch":"sm_90","sm_count":132,
 "sm_clock_khz":1980000,"hbm_theoretical_gbps":4800})";

RunTaskInput taskInput(const QString& id = QStringLiteral("L2/1"))
{
    RunTaskInput t{parse(kTask), parse(kAnalyze), parse(kProfile), parse(kDevice), {}};
    t.task.insert(QStringLiteral("id"), id);
    t.task.insert(QStringLiteral("level"), id.mid(1, 1).toInt());
    return t;
}

/// An answer in the candidate format whose evaluation the fake worker makes `status`.
QString answer(const QString& tag, const QString& status)
{
    return QStringLiteral("%1 status: %2\n\n```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n```\n\n"
                          "```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n```\n")
        .arg(tag, status);
}

ScriptedLlmServer::Reply reply(const QStringList& texts)
{
    ScriptedLlmServer::Reply r;
    r.texts = texts;
    return r;
}

QString userPrompt(const QJsonObject& request)
{
    return request.value(QLatin1String("messages"))
        .toArray()
        .last()
        .toObject()
        .value(QLatin1String("content"))
        .toString();
}

} // namespace

class TestRunController : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<ScriptedLlmServer> m_server;
    std::unique_ptr<LlmClient> m_llm;
    std::unique_ptr<EvaluationQueue> m_queue;
    std::unique_ptr<RunStore> m_store;
    int m_dbCount = 0;

    /// A controller over fresh server, client, queue and store.
    std::unique_ptr<RunController> setUp(const Regime& regime, bool freshStore = true)
    {
        m_server = std::make_unique<ScriptedLlmServer>();
        if (!m_server->start())
            qFatal("scripted server did not start");
        m_server->setDefaultReply(reply({answer(QStringLiteral("default"), QStringLiteral("correct"))}));
        m_llm = std::make_unique<LlmClient>();
        LlmSettings s;
        s.baseUrl = m_server->baseUrl();
        s.serverSupportsN = true;
        s.maxRetries = 0;
        s.timeoutMs = 20000;
        m_llm->setSettings(s);
        m_queue = std::make_unique<EvaluationQueue>(QList<int>{0});
        m_queue->setProgram(QStringLiteral(KWB_FAKEWORKER));
        m_queue->setCompileWorkerCount(0);
        m_queue->setKillGracePeriod(300);
        if (freshStore) {
            m_store = std::make_unique<RunStore>();
            if (!m_store->open(m_dir.filePath(QStringLiteral("run%1.sqlite").arg(++m_dbCount))))
                qFatal("store: %s", qPrintable(m_store->errorString()));
        }
        auto controller =
            std::make_unique<RunController>(m_llm.get(), m_queue.get(), m_store.get(), QStringLiteral(KWB_PROMPTS_DIR));
        controller->setRegime(regime);
        return controller;
    }

    qint64 newRun(const Regime& regime)
    {
        const auto id = m_store->createRun(QStringLiteral("test"), regime.name,
                                           QJsonObject{{QStringLiteral("regime"), regime.toJson()}});
        if (!id)
            qFatal("createRun: %s", qPrintable(m_store->errorString()));
        return *id;
    }

    static bool runToEnd(RunController& controller, qint64 runId, const QList<RunTaskInput>& tasks)
    {
        QSignalSpy finished(&controller, &RunController::runFinished);
        QSignalSpy errors(&controller, &RunController::taskError);
        if (!controller.start(runId, tasks))
            return false;
        if (!finished.wait(60000))
            return false;
        for (const auto& e : errors)
            qWarning("task error: %s: %s", qPrintable(e.at(0).toString()), qPrintable(e.at(1).toString()));
        return errors.isEmpty() && !finished.first().first().toBool();
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

    void zeroShotIsOneCall()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        auto c = setUp(regime);
        m_server->enqueue(reply({answer(QStringLiteral("only"), QStringLiteral("incorrect"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(m_server->requests().size(), 1);
        QCOMPARE(m_server->requests().first().value(QLatin1String("n")).toInt(1), 1);
        QVERIFY(userPrompt(m_server->requests().first()).contains(QStringLiteral("L2/1")));
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 1);
        QCOMPARE(evals.first().status, QStringLiteral("incorrect"));
        QCOMPARE(evals.first().role, RegimeRole::Generator);
        QCOMPARE(wireName(c->selected().value(QStringLiteral("L2/1")).status), QStringLiteral("incorrect"));
        QCOMPARE(m_store->run(run)->status, RunStatus::Finished);
        QCOMPARE(m_store->completedUnits(run).size(), 1);
    }

    void storedBlocksAreTheWorkersEcho()
    {
        // The prose names ```python``` inline: no fence for the worker's parser, but the regex
        // this client used to run (```python…```) took the blank line after it as the python
        // block. The store keeps what the worker echoed, nothing the client read itself.
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        auto c = setUp(regime);
        const QString text = QStringLiteral("No ```python``` loop launches it. status: correct\n\n```cuda\n"
                                            "extern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n```\n\n"
                                            "```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n"
                                            "    return x\n```\n");
        m_server->enqueue(reply({text}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 1);
        const std::optional<CandidateEcho> echo = evals.first().evaluation().candidate;
        QVERIFY(echo);
        const std::optional<CandidateRecord> stored = m_store->candidate(evals.first().candidateId);
        QVERIFY(stored);
        QCOMPARE(stored->blocksFrom, CandidateBlocksFrom::Worker);
        QCOMPARE(stored->cuda, echo->cuda);
        QCOMPARE(stored->python, echo->python);
        QCOMPARE(stored->kernels, echo->kernels);
        QCOMPARE(stored->sourceHash, echo->sourceHash);
        QCOMPARE(stored->pythonLine, echo->pythonLine);
        QVERIFY(stored->parsedOk);
        QVERIFY(stored->python.startsWith(QLatin1String("def forward(x: Tensor")));
        QCOMPARE(stored->answer, text);
    }

    void iterativeStopsWhenCorrect()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        auto c = setUp(regime);
        m_server->enqueue(reply({answer(QStringLiteral("first-try"), QStringLiteral("compile_error"))}));
        m_server->enqueue(reply({answer(QStringLiteral("second-try"), QStringLiteral("correct"))}));
        m_server->enqueue(reply({answer(QStringLiteral("third-try"), QStringLiteral("incorrect"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(m_server->requests().size(), 2);
        const QString retry = userPrompt(m_server->requests().at(1));
        // the raw log of the recorded compile_error (tests/protocol/recorded/)
        QVERIFY2(retry.contains(QStringLiteral("error: no operator \"*\" matches these operands")), qPrintable(retry));
        QVERIFY(retry.contains(QStringLiteral("first-try"))); // the previous answer
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 2);
        QCOMPARE(evals.at(1).turn, 2);
        QCOMPARE(evals.at(1).role, RegimeRole::Retry);
        QCOMPARE(c->selected().value(QStringLiteral("L2/1")).turn, 2);
    }

    void iterativeUsesThreeTurnsOnErrors()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        auto c = setUp(regime);
        m_server->setDefaultReply(reply({answer(QStringLiteral("broken"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(m_server->requests().size(), 3);
        QCOMPARE(m_store->evaluations(run).size(), 3);
        QCOMPARE(wireName(c->selected().value(QStringLiteral("L2/1")).status), QStringLiteral("compile_error"));
    }

    void agentSendsFourCandidates()
    {
        // --stop-when-correct (stored with the regime): a correct candidate at turn 1 ends the task.
        Regime regime = *Regime::builtin(QStringLiteral("agent"));
        regime.stopWhenCorrect = true;
        auto c = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("ANALYSIS: conv then relu")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH: torch.conv2d")}));
        m_server->enqueue(reply({answer(QStringLiteral("s0"), QStringLiteral("compile_error")),
                                 answer(QStringLiteral("s1"), QStringLiteral("incorrect")),
                                 answer(QStringLiteral("s2"), QStringLiteral("correct")),
                                 answer(QStringLiteral("s3"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QCOMPARE(requests.size(), 3); // analyzer, researcher, generator; correct at turn 1: done (stop when correct)
        QVERIFY(userPrompt(requests.at(1)).contains(QStringLiteral("ANALYSIS: conv then relu")));
        const QString gen = userPrompt(requests.at(2));
        QVERIFY(gen.contains(QStringLiteral("ANALYSIS: conv then relu")));
        QVERIFY(gen.contains(QStringLiteral("RESEARCH: torch.conv2d")));
        QCOMPARE(requests.at(2).value(QLatin1String("n")).toInt(), 4);
        QCOMPARE(requests.at(2).value(QLatin1String("temperature")).toDouble(), 0.7);
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 4);
        const auto chosen = c->selected().value(QStringLiteral("L2/1"));
        QCOMPARE(chosen.sample, 2);
        QCOMPARE(wireName(chosen.status), QStringLiteral("correct"));
        // analyzer and researcher answers are stored too
        QVERIFY(m_store->answeredUnits(run).contains(UnitKey{QStringLiteral("L2/1"), 1, 0, RegimeRole::Analyzer}));
    }

    void agentTriagesThenRetries()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("agent"));
        auto c = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({answer(QStringLiteral("t1"), QStringLiteral("incorrect"))})); // x4
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS: smallest fix")}));
        m_server->enqueue(reply({answer(QStringLiteral("t2"), QStringLiteral("compile_error"))}));
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS 2")}));
        m_server->enqueue(reply({answer(QStringLiteral("t3"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QCOMPARE(requests.size(), 7);
        QVERIFY(userPrompt(requests.at(3)).contains(QStringLiteral("t1"))); // the triager sees the answer
        QVERIFY(userPrompt(requests.at(4)).contains(QStringLiteral("DIAGNOSIS: smallest fix")));
        QCOMPARE(m_store->evaluations(run).size(), 12);
        // monotone: the broken later turns do not displace the compiled first one
        const auto chosen = c->selected().value(QStringLiteral("L2/1"));
        QCOMPARE(chosen.turn, 1);
        QCOMPARE(wireName(chosen.status), QStringLiteral("incorrect"));
    }

    // A reasoning model's thinking (core/protocol/modeltext.h) stays in the stored response, and is
    // passed on neither as a notes role's text nor as the previous answer.
    void reasoningIsNotPassedOn()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("agent"));
        auto c = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("<think>\nPLAN-A-THOUGHT\n</think>\n\nANALYSIS-TEXT")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH-TEXT")}));
        m_server->enqueue(reply({QStringLiteral("DRAFT-THOUGHT\n</think>\n") +
                                 answer(QStringLiteral("t1"), QStringLiteral("incorrect"))})); // x4
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS")}));
        m_server->enqueue(reply({answer(QStringLiteral("t2"), QStringLiteral("correct"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QVERIFY(requests.size() >= 4);
        QString later;
        for (int i = 1; i < requests.size(); ++i)
            later += userPrompt(requests.at(i));
        QVERIFY2(later.contains(QStringLiteral("ANALYSIS-TEXT")), qPrintable(later));
        QVERIFY2(later.contains(QStringLiteral("t1 status")), qPrintable(later));
        QVERIFY2(!later.contains(QStringLiteral("PLAN-A-THOUGHT")), qPrintable(later));
        QVERIFY2(!later.contains(QStringLiteral("DRAFT-THOUGHT")), qPrintable(later));
        bool kept = false;
        for (const auto& r : m_store->responses(run, 0, true))
            kept = kept || r.response.text.contains(QStringLiteral("PLAN-A-THOUGHT"));
        QVERIFY(kept);
    }

    void pilotLastTurnWins()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("pilot-v1"));
        auto c = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({answer(QStringLiteral("p1"), QStringLiteral("correct"))}));
        m_server->enqueue(reply({QStringLiteral("CRITIQUE: tile the conv")}));
        m_server->enqueue(reply({answer(QStringLiteral("p2"), QStringLiteral("incorrect"))}));
        m_server->enqueue(reply({QStringLiteral("CRITIQUE 2")}));
        m_server->enqueue(reply({answer(QStringLiteral("p3"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QCOMPARE(requests.size(), 7); // a correct turn 1 does not stop the pilot
        QVERIFY(userPrompt(requests.at(4)).contains(QStringLiteral("CRITIQUE: tile the conv")));
        const auto chosen = c->selected().value(QStringLiteral("L2/1"));
        QCOMPARE(chosen.turn, 3);
        QCOMPARE(wireName(chosen.status), QStringLiteral("compile_error"));
    }

    void feedbackAnalyzerOffSendsRawError()
    {
        Ablations a;
        a.feedbackAnalyzer = false;
        a.bestOfN = false;
        const Regime regime = Regime::builtin(QStringLiteral("agent"))->withAblations(a);
        auto c = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({answer(QStringLiteral("r1"), QStringLiteral("compile_error"))}));
        m_server->enqueue(reply({answer(QStringLiteral("r2"), QStringLiteral("correct"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        // No triager; r2 is correct at turn 2 and the agent goes on for speed: turn 3 (the default reply).
        QCOMPARE(requests.size(), 5);
        QCOMPARE(requests.at(2).value(QLatin1String("n")).toInt(1), 1);
        QVERIFY(userPrompt(requests.at(3)).contains(QStringLiteral("error: no operator \"*\" matches these operands")));
    }

    void agentGoesOnAfterCorrectAndMonotoneKeepsIt_data()
    {
        QTest::addColumn<QString>("turn3");
        QTest::addColumn<int>("chosenTurn");
        QTest::addColumn<double>("chosenSpeedup");
        // Turn 1 correct at 1.2x, turn 2 broken; turn 3 decides: slower (0.8x) or broken keeps
        // turn 1, faster (2.0x) replaces it.
        QTest::newRow("slower") << QStringLiteral("status: correct speedup: 0.8") << 1 << 1.2;
        QTest::newRow("broken") << QStringLiteral("status: compile_error") << 1 << 1.2;
        QTest::newRow("faster") << QStringLiteral("status: correct speedup: 2.0") << 3 << 2.0;
    }

    void agentGoesOnAfterCorrectAndMonotoneKeepsIt()
    {
        QFETCH(QString, turn3);
        QFETCH(int, chosenTurn);
        QFETCH(double, chosenSpeedup);
        Regime regime = *Regime::builtin(QStringLiteral("agent"));
        QVERIFY(!regime.stopWhenCorrect); // the agent's default: correct first, fast second
        regime.n = 1;
        auto c = setUp(regime);
        const auto text = [](const QString& tag, const QString& markers) {
            return answer(tag, QStringLiteral("x")).replace(QStringLiteral("status: x"), markers);
        };
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({text(QStringLiteral("t1"), QStringLiteral("status: correct speedup: 1.2"))}));
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS: correct, now fuse the epilogue")}));
        m_server->enqueue(reply({text(QStringLiteral("t2"), QStringLiteral("status: compile_error"))}));
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS 2")}));
        m_server->enqueue(reply({text(QStringLiteral("t3"), turn3)}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QCOMPARE(requests.size(), 7); // all three turns, though turn 1 was correct
        // The triager of turn 2 is shown the correct turn-1 kernel (the last attempt).
        QVERIFY(userPrompt(requests.at(3)).contains(QStringLiteral("t1 status: correct")));
        // Turn 3's triager is shown the last attempt, the broken turn 2, though the task keeps turn 1:
        // what is shown is not what is selected.
        QVERIFY(userPrompt(requests.at(5)).contains(QStringLiteral("t2 status: compile_error")));
        QVERIFY(!userPrompt(requests.at(5)).contains(QStringLiteral("t1 status: correct")));
        QCOMPARE(m_store->evaluations(run).size(), 3);
        const auto chosen = c->selected().value(QStringLiteral("L2/1"));
        QCOMPARE(chosen.turn, chosenTurn);
        QVERIFY(chosen.correct());
        QCOMPARE(*chosen.speedup, chosenSpeedup);
        // The report keeps the same candidate (one rule, selection.h).
        const RunInfo info = *m_store->run(run);
        const RunOutcomes outcomes = runOutcomes(*m_store, info);
        QCOMPARE(outcomes.outcomes.size(), 1);
        QVERIFY(outcomes.outcomes.first().correct());
        QCOMPARE(outcomes.outcomes.first().speedup, chosenSpeedup);
    }

    void retryIsShownTheLastAttempt_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("shown");
        QTest::addColumn<QString>("hidden");
        // Turn 1 compiles (incorrect), turn 2 is worse (compile_error): turn 3 is shown turn 2 by
        // default, turn 1 (the best so far) with feedback "best".
        QTest::newRow("last") << QStringLiteral("last") << QStringLiteral("t2 status") << QStringLiteral("t1 status");
        QTest::newRow("best") << QStringLiteral("best") << QStringLiteral("t1 status") << QStringLiteral("t2 status");
    }

    void retryIsShownTheLastAttempt()
    {
        QFETCH(QString, source);
        QFETCH(QString, shown);
        QFETCH(QString, hidden);
        Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        QVERIFY(regime.feedbackSource == FeedbackSource::Last); // the default
        regime.feedbackSource = *feedbackSourceFromString(source);
        auto c = setUp(regime);
        m_server->enqueue(reply({answer(QStringLiteral("t1"), QStringLiteral("incorrect"))}));
        m_server->enqueue(reply({answer(QStringLiteral("t2"), QStringLiteral("compile_error"))}));
        m_server->enqueue(reply({answer(QStringLiteral("t3"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QCOMPARE(requests.size(), 3);
        QVERIFY(userPrompt(requests.at(1)).contains(QStringLiteral("t1 status")));
        const QString third = userPrompt(requests.at(2));
        QVERIFY2(third.contains(shown), qPrintable(third));
        QVERIFY2(!third.contains(hidden), qPrintable(third));
        // Selection is the regime's either way: monotone keeps the compiled turn 1.
        QCOMPARE(c->selected().value(QStringLiteral("L2/1")).turn, 1);
        // The stored regime says what was shown (a resume reads it back).
        const Regime stored = m_store->run(run)->config.regime.fields;
        QCOMPARE(toString(stored.feedbackSource), source);
    }

    void lastAttemptIsTheBestOfTheTurnsSamples()
    {
        // A turn's n samples share one prompt: the next turn is shown the best of them, from that
        // turn only (here turn 2's compiled sample 1, not turn 1's better one).
        Regime regime = *Regime::builtin(QStringLiteral("agent"));
        regime.n = 2;
        auto c = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({answer(QStringLiteral("a0"), QStringLiteral("compile_error")),
                                 answer(QStringLiteral("a1"), QStringLiteral("correct"))}));
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS 1")}));
        m_server->enqueue(reply({answer(QStringLiteral("b0"), QStringLiteral("compile_error")),
                                 answer(QStringLiteral("b1"), QStringLiteral("incorrect"))}));
        m_server->enqueue(reply({QStringLiteral("DIAGNOSIS 2")}));
        m_server->enqueue(reply({answer(QStringLiteral("c0"), QStringLiteral("compile_error")),
                                 answer(QStringLiteral("c1"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        const auto requests = m_server->requests();
        QCOMPARE(requests.size(), 7);
        QVERIFY(userPrompt(requests.at(3)).contains(QStringLiteral("a1 status: correct")));
        const QString triage2 = userPrompt(requests.at(5));
        QVERIFY2(triage2.contains(QStringLiteral("b1 status: incorrect")), qPrintable(triage2));
        QVERIFY(!triage2.contains(QStringLiteral("a1 status")));
        QVERIFY(!triage2.contains(QStringLiteral("b0 status")));
        const auto chosen = c->selected().value(QStringLiteral("L2/1"));
        QCOMPARE(chosen.turn, 1);
        QCOMPARE(chosen.sample, 1);
    }

    void eachTurnHasItsOwnSeeds()
    {
        // Sample k of turn t is asked with base + 1009·(t−1) + k: no turn replays another's draws,
        // and every evaluation records the seed its answer was asked with.
        Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        regime.n = 2;
        auto c = setUp(regime);
        LlmSettings s = m_llm->settings();
        s.serverSupportsN = false; // one call per sample: each carries its own seed
        s.seed = 100;
        m_llm->setSettings(s);
        m_server->setDefaultReply(reply({answer(QStringLiteral("broken"), QStringLiteral("compile_error"))}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QList<qint64> asked;
        for (const QJsonObject& r : m_server->requests())
            asked << r.value(QLatin1String("seed")).toInteger();
        std::sort(asked.begin(), asked.end());
        const QList<qint64> expected{100, 101, 1109, 1110, 2118, 2119};
        QCOMPARE(asked, expected);
        QCOMPARE(modelSeedFor(100, 3, 1), qint64(2119));
        QList<qint64> stored;
        for (const EvaluationRecord& e : m_store->evaluations(run)) {
            QVERIFY(e.result.value(QLatin1String("model_seed")).isDouble());
            const qint64 seed = e.result.value(QLatin1String("model_seed")).toInteger();
            QCOMPARE(seed, modelSeedFor(100, e.turn, e.sample));
            stored << seed;
        }
        std::sort(stored.begin(), stored.end());
        QCOMPARE(stored, expected);

        // A run stored before per-turn seeds (turn stride 0) resumes asking as it was made.
        auto old = setUp(regime);
        s = m_llm->settings(); // the new server's address
        s.serverSupportsN = false;
        s.seed = 100;
        m_llm->setSettings(s);
        m_server->setDefaultReply(reply({answer(QStringLiteral("broken"), QStringLiteral("compile_error"))}));
        old->setModelSeedTurnStride(0);
        const qint64 oldRun = newRun(regime);
        QVERIFY(runToEnd(*old, oldRun, {taskInput()}));
        asked.clear();
        for (const QJsonObject& r : m_server->requests())
            asked << r.value(QLatin1String("seed")).toInteger();
        std::sort(asked.begin(), asked.end());
        QCOMPARE(asked, (QList<qint64>{100, 100, 100, 101, 101, 101}));
    }

    void sampleSeedsFollowTheSample()
    {
        // With a base seed, sample k is asked with base + k, also when only some samples are asked for.
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        auto c = setUp(regime);
        LlmSettings s = m_llm->settings();
        s.serverSupportsN = false; // one call per sample: each carries its own seed
        s.seed = 100;
        m_llm->setSettings(s);
        Regime four = regime;
        four.n = 4;
        c->setRegime(four);
        const qint64 run = newRun(four);
        // A resumed run: samples 0 and 1 were answered before it stopped; only 2 and 3 are asked.
        for (int sample : {0, 1}) {
            PromptRecord prompt{
                0, run, QStringLiteral("L2/1"), 1, sample, RegimeRole::Generator, QStringLiteral("p"), QString()};
            ResponseRecord response;
            response.promptId = m_store->addPrompt(prompt).value_or(0);
            response.text = answer(QStringLiteral("stored"), QStringLiteral("incorrect"));
            QVERIFY(m_store->addResponse(response));
        }
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QList<qint64> seeds;
        for (const QJsonObject& r : m_server->requests())
            seeds << r.value(QLatin1String("seed")).toInteger();
        std::sort(seeds.begin(), seeds.end());
        QCOMPARE(seeds, (QList<qint64>{102, 103})); // not 100, 101: those belong to samples 0 and 1
        QCOMPARE(m_store->evaluations(run).size(), 4);
    }

    void tasksOverlapAndResumeSkipsDoneUnits()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        auto c = setUp(regime);
        c->setMaxTasksInFlight(2);
        QList<QString> events;
        connect(c.get(), &RunController::taskStarted, this,
                [&events](const QString& t) { events << QStringLiteral("start ") + t; });
        connect(c.get(), &RunController::taskFinished, this,
                [&events](const QString& t, const QString&) { events << QStringLiteral("end ") + t; });
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput(QStringLiteral("L1/1")), taskInput(QStringLiteral("L2/1"))}));
        QCOMPARE(events.size(), 4);
        QVERIFY(events.at(0).startsWith(QLatin1String("start")));
        QVERIFY(events.at(1).startsWith(QLatin1String("start"))); // both in flight before either ended
        QCOMPARE(m_server->requests().size(), 2);
        QCOMPARE(m_store->evaluations(run).size(), 2);

        // Resume with a third task: only that one is asked for and evaluated.
        c.reset();
        auto again = setUp(regime, false);
        QVERIFY(runToEnd(
            *again, run,
            {taskInput(QStringLiteral("L1/1")), taskInput(QStringLiteral("L2/1")), taskInput(QStringLiteral("L3/1"))}));
        QCOMPARE(m_server->requests().size(), 1);
        QCOMPARE(again->modelRequests(), 1);
        QCOMPARE(again->evaluationsSubmitted(), 1);
        QCOMPARE(m_store->evaluations(run).size(), 3);
        QCOMPARE(again->selected().size(), 3);
        QCOMPARE(wireName(again->selected().value(QStringLiteral("L1/1")).status), QStringLiteral("correct"));
    }

    void aTaskBuiltAheadWaitingForTheGpuLetsTheNextOneStart()
    {
        // Two tasks in flight, evaluations of 1.5 s on one GPU. While the first task's candidate
        // is evaluated, the second's is compiled ahead and then waits only for the GPU: it no
        // longer holds the window, so a third task is asked for and built meanwhile; at most
        // twice the window is started. Without compile-ahead the GPU's worker compiles, so each
        // task holds its place until it ends, as before.
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        for (const int compileWorkers : {1, 0}) {
            auto c = setUp(regime);
            m_queue->setCompileWorkerCount(compileWorkers);
            c->setMaxTasksInFlight(2);
            m_server->setDefaultReply(reply({QStringLiteral("fake: slow\ndelay_ms: 1500\n") +
                                             answer(QStringLiteral("s"), QStringLiteral("correct"))}));
            int started = 0;
            int most = 0;
            QStringList events;
            connect(c.get(), &RunController::taskStarted, this, [&](const QString& t) {
                most = std::max(most, ++started);
                events << QStringLiteral("start ") + t;
            });
            connect(c.get(), &RunController::taskFinished, this, [&](const QString& t, const QString&) {
                --started;
                events << QStringLiteral("end ") + t;
            });
            const qint64 run = newRun(regime);
            QVERIFY(runToEnd(*c, run,
                             {taskInput(QStringLiteral("L1/1")), taskInput(QStringLiteral("L2/1")),
                              taskInput(QStringLiteral("L3/1"))}));
            const auto evals = m_store->evaluations(run);
            QCOMPARE(evals.size(), 3);
            for (const auto& e : evals)
                QCOMPARE(e.status, QStringLiteral("correct"));
            QCOMPARE(events.size(), 6);
            const QString trace = events.join(QStringLiteral(", "));
            if (compileWorkers > 0) {
                QVERIFY2(events.indexOf(QStringLiteral("start L3/1")) < events.indexOf(QStringLiteral("end L1/1")),
                         qPrintable(trace));
                QVERIFY2(most >= 3 && most <= c->maxTasksStarted(), qPrintable(trace));
            } else {
                QVERIFY2(most == 2, qPrintable(trace));
            }
        }
    }

    void resumeContinuesAtTheNextTurn()
    {
        // Turn 1 of an iterative run was answered and evaluated before the process was killed.
        const Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        auto c = setUp(regime);
        const qint64 run = newRun(regime);
        const QString stored = answer(QStringLiteral("stored-turn-one"), QStringLiteral("compile_error"));
        PromptRecord p;
        p.runId = run;
        p.task = QStringLiteral("L2/1");
        p.turn = 1;
        p.role = RegimeRole::Generator;
        p.text = QStringLiteral("prompt");
        ResponseRecord r;
        r.promptId = *m_store->addPrompt(p);
        r.text = stored;
        CandidateRecord cand;
        cand.responseId = *m_store->addResponse(r);
        cand.task = p.task;
        cand.turn = 1;
        const qint64 candidateId = *m_store->addCandidate(cand);
        QVERIFY(m_store->addEvaluation(
            candidateId, QJsonObject{{QStringLiteral("status"), QStringLiteral("compile_error")},
                                     {QStringLiteral("compile"),
                                      QJsonObject{{QStringLiteral("ok"), false},
                                                  {QStringLiteral("log"), QStringLiteral("STORED-LOG")}}}}));
        m_server->enqueue(reply({answer(QStringLiteral("turn-two"), QStringLiteral("correct"))}));
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(m_server->requests().size(), 1); // turn 1 is not asked again
        const QString retry = userPrompt(m_server->requests().first());
        QVERIFY(retry.contains(QStringLiteral("stored-turn-one")));
        QVERIFY(retry.contains(QStringLiteral("STORED-LOG")));
        QCOMPARE(c->evaluationsSubmitted(), 1);
        QCOMPARE(c->selected().value(QStringLiteral("L2/1")).turn, 2);
    }

    void resumeEvaluatesMachineFailuresAgain()
    {
        // The stored answer's evaluation ended in a machine failure (the worker was killed from
        // outside): the unit is not complete, and the resume evaluates the same answer again
        // without asking the model.
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        auto c = setUp(regime);
        const qint64 run = newRun(regime);
        PromptRecord p;
        p.runId = run;
        p.task = QStringLiteral("L2/1");
        p.turn = 1;
        p.role = RegimeRole::Generator;
        p.text = QStringLiteral("prompt");
        ResponseRecord r;
        r.promptId = *m_store->addPrompt(p);
        r.text = answer(QStringLiteral("stored"), QStringLiteral("correct"));
        CandidateRecord cand;
        cand.responseId = *m_store->addResponse(r);
        cand.task = p.task;
        cand.turn = 1;
        QVERIFY(m_store->addEvaluation(*m_store->addCandidate(cand),
                                       QJsonObject{{QStringLiteral("status"), wireName(EvaluationStatus::WorkerLost)},
                                                   {QStringLiteral("message"), QStringLiteral("killed by signal 9")}}));
        QVERIFY(m_store->completedUnits(run).isEmpty());
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(m_server->requests().size(), 0);
        QCOMPARE(c->evaluationsSubmitted(), 1);
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 2);
        QCOMPARE(evals.last().status, QStringLiteral("correct"));
        QCOMPARE(wireName(c->selected().value(QStringLiteral("L2/1")).status), QStringLiteral("correct"));
        QCOMPARE(m_store->completedUnits(run).size(), 1);

        // Evaluated now: a second resume has nothing left to do.
        c.reset();
        auto again = setUp(regime, false);
        QVERIFY(runToEnd(*again, run, {taskInput()}));
        QCOMPARE(again->evaluationsSubmitted(), 0);
    }

    void machineFailureStopsTheTask()
    {
        // The worker is SIGKILLed during every evaluation (fake: sigkill): turn 1 says nothing about
        // the candidate, so no turn 2 is asked with `worker_lost` as its feedback.
        const Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        auto c = setUp(regime);
        m_server->setDefaultReply(
            reply({QStringLiteral("fake: sigkill\n") + answer(QStringLiteral("killed"), QStringLiteral("correct"))}));
        const qint64 run = newRun(regime);
        QSignalSpy finished(c.get(), &RunController::runFinished);
        QSignalSpy errors(c.get(), &RunController::taskError);
        QVERIFY(c->start(run, {taskInput()}));
        QVERIFY(finished.wait(60000));
        QCOMPARE(m_server->requests().size(), 1);
        QCOMPARE(errors.size(), 1);
        QVERIFY2(errors.first().at(1).toString().contains(QLatin1String("machine failure (worker_lost)")),
                 qPrintable(errors.first().at(1).toString()));
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 1);
        QCOMPARE(evals.first().status, wireName(EvaluationStatus::WorkerLost));
    }

    void identicalAnswersAreEvaluatedOnce()
    {
        // Best-of-4 where three samples are the same text: with evaluate-identical-once the queue
        // gets two evaluations; the copies are stored with the first one's verdict and say whose.
        Regime regime = *Regime::builtin(QStringLiteral("agent"));
        regime.n = 4;
        regime.stopWhenCorrect = true;
        auto c = setUp(regime);
        c->setEvaluateIdenticalOnce(true);
        const QString same = answer(QStringLiteral("same"), QStringLiteral("correct"));
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({same, answer(QStringLiteral("other"), QStringLiteral("incorrect")), same, same}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(c->evaluationsSubmitted(), 2);
        QCOMPARE(c->evaluationsReused(), 2);
        auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 4);
        std::sort(evals.begin(), evals.end(), [](const auto& a, const auto& b) { return a.sample < b.sample; });
        QCOMPARE(evals.at(0).status, QStringLiteral("correct"));
        QVERIFY(!evals.at(0).result.contains(QLatin1String("reused_from_candidate")));
        QCOMPARE(evals.at(1).status, QStringLiteral("incorrect"));
        for (int s : {2, 3}) {
            QCOMPARE(evals.at(s).status, QStringLiteral("correct"));
            QCOMPARE(evals.at(s).result.value(QLatin1String("reused_from_candidate")).toInteger(),
                     evals.at(0).candidateId);
            QVERIFY(evals.at(s).candidateId != evals.at(0).candidateId);
        }
        QCOMPARE(c->selected().value(QStringLiteral("L2/1")).sample, 0); // ties keep the lower sample

        // Off (the default): every sample is evaluated.
        auto d = setUp(regime);
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({same, same, same, same}));
        const qint64 run2 = newRun(regime);
        QVERIFY(runToEnd(*d, run2, {taskInput()}));
        QCOMPARE(d->evaluationsSubmitted(), 4);
        QCOMPARE(d->evaluationsReused(), 0);
    }

    void resumeReusesAStoredVerdictOfAnIdenticalAnswer()
    {
        // A run stopped after evaluating sample 0; sample 1, the same text, was answered but not
        // evaluated: resumed with evaluate-identical-once it takes sample 0's stored verdict.
        Regime two = *Regime::builtin(QStringLiteral("zero-shot"));
        two.n = 2;
        auto c = setUp(two);
        c->setEvaluateIdenticalOnce(true);
        const qint64 run = newRun(two);
        const QString text = answer(QStringLiteral("stored"), QStringLiteral("incorrect"));
        qint64 first = 0;
        for (int sample : {0, 1}) {
            PromptRecord prompt{
                0, run, QStringLiteral("L2/1"), 1, sample, RegimeRole::Generator, QStringLiteral("p"), QString()};
            ResponseRecord response;
            response.promptId = m_store->addPrompt(prompt).value_or(0);
            response.text = text;
            const auto responseId = m_store->addResponse(response);
            QVERIFY(responseId);
            if (sample == 0) {
                CandidateRecord cand;
                cand.responseId = *responseId;
                cand.task = QStringLiteral("L2/1");
                cand.turn = 1;
                cand.sample = 0;
                first = m_store->addCandidate(cand).value_or(0);
                QVERIFY(m_store->addEvaluation(first,
                                               QJsonObject{{QStringLiteral("status"), QStringLiteral("incorrect")},
                                                           {QStringLiteral("message"), QStringLiteral("off by one")}}));
            }
        }
        QVERIFY(runToEnd(*c, run, {taskInput()}));
        QCOMPARE(m_server->requests().size(), 0);
        QCOMPARE(c->evaluationsSubmitted(), 0);
        QCOMPARE(c->evaluationsReused(), 1);
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 2);
        for (const auto& e : evals) {
            QCOMPARE(e.status, QStringLiteral("incorrect"));
            if (e.sample == 1)
                QCOMPARE(e.result.value(QLatin1String("reused_from_candidate")).toInteger(), first);
        }
    }

    void identicalAnswersAcrossTurnsAndTasks()
    {
        // Iterative: turn 2 repeats turn 1's incorrect answer word for word, which takes turn 1's
        // verdict; turn 3 differs and is evaluated. A second task with the same text is its own.
        const Regime regime = *Regime::builtin(QStringLiteral("iterative"));
        auto c = setUp(regime);
        c->setEvaluateIdenticalOnce(true);
        c->setMaxTasksInFlight(1);
        const QString wrong = answer(QStringLiteral("w"), QStringLiteral("incorrect"));
        m_server->enqueue(reply({wrong}));
        m_server->enqueue(reply({wrong}));
        m_server->enqueue(reply({answer(QStringLiteral("fixed"), QStringLiteral("correct"))}));
        m_server->enqueue(reply({wrong}));
        m_server->enqueue(reply({wrong}));
        m_server->enqueue(reply({wrong}));
        const qint64 run = newRun(regime);
        QVERIFY(runToEnd(*c, run, {taskInput(), taskInput(QStringLiteral("L2/2"))}));
        QCOMPARE(m_server->requests().size(), 6);
        // L2/1: turns 1 and 3; L2/2: turn 1 only (its turns 2 and 3 reuse it, not L2/1's)
        QCOMPARE(c->evaluationsSubmitted(), 3);
        QCOMPARE(c->evaluationsReused(), 3);
        QCOMPARE(m_store->evaluations(run).size(), 6);
    }

    void identicalAnswersAfterAMachineFailureAreEvaluated()
    {
        // The first of three identical answers is the machine's failure (the fake worker is
        // SIGKILLed: worker_lost): nothing is reused, each one is evaluated.
        Regime regime = *Regime::builtin(QStringLiteral("agent"));
        regime.n = 3;
        regime.turns = 1;
        auto c = setUp(regime);
        c->setEvaluateIdenticalOnce(true);
        const QString killed =
            QStringLiteral("fake: sigkill\n") + answer(QStringLiteral("k"), QStringLiteral("correct"));
        m_server->enqueue(reply({QStringLiteral("ANALYSIS")}));
        m_server->enqueue(reply({QStringLiteral("RESEARCH")}));
        m_server->enqueue(reply({killed, killed, killed}));
        const qint64 run = newRun(regime);
        QSignalSpy finished(c.get(), &RunController::runFinished);
        QVERIFY(c->start(run, {taskInput()}));
        QVERIFY(finished.wait(60000));
        QCOMPARE(c->evaluationsSubmitted(), 3);
        QCOMPARE(c->evaluationsReused(), 0);
        const auto evals = m_store->evaluations(run);
        QCOMPARE(evals.size(), 3);
        for (const auto& e : evals)
            QCOMPARE(e.status, wireName(EvaluationStatus::WorkerLost));
    }

    void identicalAnswersAcrossRunsOfTheSameSettings()
    {
        // Run A evaluates an answer; run B of the same evaluation settings (another regime, the
        // same kwb build, GPU, profile) gets the same text and, with identical_across_runs, stores
        // A's verdict with reused_from_run; run C of another kwb build evaluates it again.
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        const auto runWith = [&](const QString& commit) {
            RunConfig config;
            config.regime = StoredRegime::of(regime);
            config.versions.kwbCommit = commit;
            config.protocolProfile = QStringLiteral("kernelbench-fp32");
            const auto id = m_store->createRun(QStringLiteral("test"), regime.name, config.toJson());
            if (!id)
                qFatal("createRun: %s", qPrintable(m_store->errorString()));
            return *id;
        };
        const QString text = answer(QStringLiteral("shared"), QStringLiteral("incorrect"));
        auto a = setUp(regime);
        a->setEvaluateIdenticalOnce(true);
        m_server->enqueue(reply({text}));
        const qint64 runA = runWith(QStringLiteral("abc123"));
        QVERIFY(runToEnd(*a, runA, {taskInput()}));
        QCOMPARE(a->evaluationsSubmitted(), 1);
        QCOMPARE(m_store->evaluations(runA).size(), 1);
        const qint64 evaluatedInA = m_store->evaluations(runA).first().candidateId;

        auto b = setUp(regime, false); // the same store
        b->setEvaluateIdenticalOnce(true);
        b->setIdenticalAcrossRuns(true);
        m_server->enqueue(reply({text}));
        const qint64 runB = runWith(QStringLiteral("abc123"));
        QVERIFY(runToEnd(*b, runB, {taskInput()}));
        QCOMPARE(b->evaluationsSubmitted(), 0);
        QCOMPARE(b->evaluationsReused(), 1);
        const auto inB = m_store->evaluations(runB);
        QCOMPARE(inB.size(), 1);
        QCOMPARE(inB.first().status, QStringLiteral("incorrect"));
        QCOMPARE(inB.first().result.value(QLatin1String("reused_from_candidate")).toInteger(), evaluatedInA);
        QCOMPARE(inB.first().result.value(QLatin1String("reused_from_run")).toInteger(), runA);

        auto c = setUp(regime, false);
        c->setEvaluateIdenticalOnce(true);
        c->setIdenticalAcrossRuns(true);
        m_server->enqueue(reply({text}));
        const qint64 runC = runWith(QStringLiteral("def456"));
        QVERIFY(runToEnd(*c, runC, {taskInput()}));
        QCOMPARE(c->evaluationsSubmitted(), 1); // another build's verdicts are not this one's
        QVERIFY(!m_store->evaluations(runC).first().result.contains(QLatin1String("reused_from_run")));

        // The same build and settings, but the task file was edited between the runs (another
        // forward): A's verdict was judged against another task and is not taken.
        auto d = setUp(regime, false);
        d->setEvaluateIdenticalOnce(true);
        d->setIdenticalAcrossRuns(true);
        m_server->enqueue(reply({text}));
        RunTaskInput edited = taskInput();
        edited.task.insert(QStringLiteral("forward"), QStringLiteral("def forward(x, p):\n    return x * 2\n"));
        const qint64 runD = runWith(QStringLiteral("abc123"));
        QVERIFY(runToEnd(*d, runD, {edited}));
        QCOMPARE(d->evaluationsSubmitted(), 1);
        QCOMPARE(d->evaluationsReused(), 0);

        // What makes two runs' verdicts the same, and what does not.
        RunConfig x;
        x.versions.kwbCommit = QStringLiteral("abc123");
        RunConfig y = x;
        y.model = QStringLiteral("another model");
        y.promptsDir = QStringLiteral("/elsewhere");
        QVERIFY(RunConfig::sameEvaluationSettings(x, y));
        for (const auto& change : QList<std::function<void(RunConfig&)>>{
                 [](RunConfig& r) { r.timingTrials = 10; }, [](RunConfig& r) { r.scale = QStringLiteral("smoke"); },
                 [](RunConfig& r) { r.gpu.name = QStringLiteral("NVIDIA H100"); },
                 [](RunConfig& r) { r.workerLimits.hostMemoryBytes = 1 << 30; },
                 [](RunConfig& r) { r.seeds.evaluation = 7; }, [](RunConfig& r) { r.timeoutS = 10; },
                 [](RunConfig& r) { r.versions.kwbCommit.clear(); }}) {
            RunConfig z = x;
            change(z);
            QVERIFY(!RunConfig::sameEvaluationSettings(x, z) || !RunConfig::sameEvaluationSettings(z, x));
        }
    }

    void routingPerLevel()
    {
        auto c = setUp(*Regime::builtin(QStringLiteral("zero-shot")));
        c->setRegimeForLevel(2, *Regime::builtin(QStringLiteral("iterative")));
        QCOMPARE(c->regimeFor(taskInput(QStringLiteral("L1/1"))).name, QStringLiteral("zero-shot"));
        QCOMPARE(c->regimeFor(taskInput(QStringLiteral("L2/1"))).name, QStringLiteral("iterative"));
    }

    void cancelStopsAndMarksRun()
    {
        const Regime regime = *Regime::builtin(QStringLiteral("zero-shot"));
        auto c = setUp(regime);
        ScriptedLlmServer::Reply slow = reply({answer(QStringLiteral("slow"), QStringLiteral("correct"))});
        slow.delayMs = 3000;
        m_server->setDefaultReply(slow);
        const qint64 run = newRun(regime);
        QSignalSpy finished(c.get(), &RunController::runFinished);
        QVERIFY(c->start(run, {taskInput()}));
        QTest::qWait(200);
        c->cancel();
        QVERIFY(finished.wait(10000));
        QVERIFY(finished.first().first().toBool());
        QCOMPARE(m_store->run(run)->status, RunStatus::Cancelled);
        QCOMPARE(m_store->evaluations(run).size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestRunController)
#include "tst_runcontroller.moc"
