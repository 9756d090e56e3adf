// The study template set (prompts/, the default) as runs send it: HeadlessRun against the
// scripted model server and the fake worker (L1/1 and L2/1), every answer incorrect so every
// turn runs. Each regime's prompts hold what the study's regime had and nothing of another's,
// phrase by phrase (docs/prompts.md says which sentence of the study each phrase stands for);
// the agent with the `competence` ablation sends the agent's prompts without the guidance; temperature and
// seed are explicit in every request; and a prompt over the context budget is refused before
// any model request, counted by the server's tokenizer.

#include "core/config/regime.h"
#include "core/run/headlessrun.h"
#include "core/store/runstore.h"
#include "fakeworkerenvironment.h"
#include "scriptedllmserver.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace kwb;

// The model seed of the built-in regimes (regimes/study.toml): the study ran one seed.
constexpr qint64 kRegimeModelSeed = 42;
using kwb::test::ScriptedLlmServer;

namespace {

// One phrase per part of a regime (prompts/ and docs/prompts.md).
const QString kContract = QStringLiteral("## Answer format");
const QString kLaunchCall = QStringLiteral("kb.launch(\"name\", [gx, gy, gz], [bx, by, bz], arg0, arg1, ...)");
const QString kTolerance = QStringLiteral("atol = rtol = 0.0001, profile kernelbench-fp32");
const QString kTopOps = QStringLiteral("Where the reference spends its GPU time");
const QString kRoofline = QStringLiteral("Roofline rule: do not reimplement matmul or conv; fuse the epilogue.");
const QString kCompetence = QStringLiteral("How to work: correct first, fast second.");
const QString kTorchOnlyLegal = QStringLiteral("A torch-only answer (no ```cuda block) is legal.");
const QString kPilot = QStringLiteral("Write custom tiled CUDA kernels for every operator");
const QString kCritic = QStringLiteral("Ask for more optimisation, whether or not the answer works");
const QString kPrevious = QStringLiteral("## Your previous answer");
const QString kReport = QStringLiteral("## What the evaluator reported");
// The earlier workbench set's repair and hints, in every one of its regimes: none in the study set.
const QStringList kWorkbenchOnly{QStringLiteral("Example of a complete answer"), QStringLiteral("1e-4 in FP32"),
                                 QStringLiteral("bias_relu"), QStringLiteral("Operator chain of the reference"),
                                 QStringLiteral("GPU: NVIDIA")};

QString answer(const QString& status)
{
    return QStringLiteral("status: %1\n\n```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n"
                          "```\n\n```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n"
                          "```\n")
        .arg(status);
}

/// A sent prompt, known by its opening sentence and sections.
struct Sent
{
    QString task;
    QString role;
    bool laterTurn = false;
    QString text;
    QJsonObject body;
};

QString roleOf(const QString& text)
{
    if (text.startsWith(QLatin1String("You are the analyzer")))
        return RegimeRole::Analyzer;
    if (text.startsWith(QLatin1String("You are the researcher")))
        return RegimeRole::Researcher;
    if (text.startsWith(QLatin1String("You are the feedback triager")))
        return RegimeRole::Triager;
    if (text.startsWith(QLatin1String("You are the critic")))
        return RegimeRole::Critic;
    return RegimeRole::Generator; // the kernel writer, or the single-prompt regimes' prompt
}

QList<Sent> sentPrompts(const ScriptedLlmServer& server)
{
    QList<Sent> out;
    for (const QJsonObject& body : server.requests()) {
        Sent s;
        s.body = body;
        s.text = body.value(QLatin1String("messages"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QLatin1String("content"))
                     .toString();
        s.task = s.text.contains(QLatin1String("## Task L1/1:")) ? QStringLiteral("L1/1") : QStringLiteral("L2/1");
        s.role = roleOf(s.text);
        s.laterTurn = s.text.contains(kPrevious);
        out.append(s);
    }
    return out;
}

QString taskDescription(const QString& id)
{
    QFile f(QStringLiteral(KWB_PROTOCOL_RECORDED_DIR "/tasks.cpu.response.json"));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("no recorded tasks");
    for (const QJsonValue& t : QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String("tasks")).toArray())
        if (t.toObject().value(QLatin1String("id")).toString() == id)
            return t.toObject().value(QLatin1String("description")).toString();
    return {};
}

} // namespace

class TestStudyPrompts : public QObject
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

    RunPlan plan(const QString& regime, const QString& ablate = QString(), const QString& promptsDir = QString())
    {
        RunRequest request;
        request.taskIds = {QStringLiteral("L1/1"), QStringLiteral("L2/1")};
        request.regime = regime;
        request.ablations = ablationsFromList(ablate);
        request.endpoint = m_server->baseUrl().toString();
        request.timeoutS = 60;
        request.promptsDir = promptsDir.isEmpty() ? QStringLiteral(KWB_PROMPTS_DIR) : promptsDir;
        QString error;
        const auto p = planRun(request, &error);
        if (!p)
            qFatal("plan: %s", qPrintable(error));
        return *p;
    }

    /// Runs the plan to its end; the prompts the server was sent.
    QList<Sent> run(const RunPlan& p, HeadlessRun::State expected = HeadlessRun::State::Finished,
                    QString* errorString = nullptr)
    {
        HeadlessRun r(p, environment());
        QSignalSpy finished(&r, &HeadlessRun::finished);
        r.start();
        if (!r.isOver())
            finished.wait(60000);
        if (errorString)
            *errorString = r.errorString();
        if (r.state() != expected)
            qWarning("run ended in state %d: %s", int(r.state()), qPrintable(r.errorString()));
        return r.state() == expected ? sentPrompts(*m_server) : QList<Sent>();
    }

    static void has(const Sent& s, const QString& phrase, bool expected)
    {
        QVERIFY2(s.text.contains(phrase) == expected,
                 qPrintable(QStringLiteral("%1 %2%3 %4 \"%5\"")
                                .arg(s.task, s.role, s.laterTurn ? QStringLiteral(" (later turn)") : QString(),
                                     expected ? QStringLiteral("lacks") : QStringLiteral("has"), phrase)));
    }

    /// What every study prompt has (the reference, the contract, the profile's tolerance) and lacks
    /// (task descriptions, the workbench set's repair).
    static void common(const Sent& s)
    {
        has(s, QStringLiteral("## Task ") + s.task, true);
        has(s, QStringLiteral("def forward("), true);
        for (const QString& phrase : kWorkbenchOnly)
            has(s, phrase, false);
        const QString description = taskDescription(s.task);
        QVERIFY(!description.isEmpty());
        has(s, description.left(60), false);
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void init()
    {
        m_server = std::make_unique<ScriptedLlmServer>();
        QVERIFY(m_server->start());
        ScriptedLlmServer::Reply reply;
        reply.texts = {answer(QStringLiteral("incorrect"))};
        m_server->setDefaultReply(reply);
    }

    void cleanup() { m_server.reset(); }

    void zeroShotIsTheReferenceAndTheContract()
    {
        const QList<Sent> sent = run(plan(QStringLiteral("zero-shot")));
        QCOMPARE(sent.size(), 2); // one prompt per task, one turn
        for (const Sent& s : sent) {
            common(s);
            for (const QString& phrase : {kContract, kLaunchCall, kTolerance})
                has(s, phrase, true);
            for (const QString& phrase :
                 {kTopOps, kRoofline, kCompetence, kTorchOnlyLegal, kPilot, kCritic, kPrevious, kReport})
                has(s, phrase, false);
            QCOMPARE(s.body.value(QLatin1String("temperature")).toDouble(-1), 0.0);
            QCOMPARE(s.body.value(QLatin1String("seed")).toInteger(), kRegimeModelSeed);
            QCOMPARE(s.body.value(QLatin1String("max_tokens")).toInt(), defaults::kMaxOutputTokens);
        }
    }

    void guidedAddsTheTopOperatorsAndTheRooflineRule()
    {
        const QList<Sent> sent = run(plan(QStringLiteral("profiling-guided")));
        QCOMPARE(sent.size(), 2);
        for (const Sent& s : sent) {
            common(s);
            for (const QString& phrase : {kContract, kRoofline})
                has(s, phrase, true);
            // The fake worker has a recorded profile for L2/1 only.
            has(s, kTopOps, s.task == QLatin1String("L2/1"));
            has(s, QStringLiteral("No profile is available for this task."), s.task == QLatin1String("L1/1"));
            for (const QString& phrase : {kCompetence, kTorchOnlyLegal, kPilot, kCritic, kPrevious, kReport})
                has(s, phrase, false);
            QCOMPARE(s.body.value(QLatin1String("temperature")).toDouble(-1), 0.0);
        }
    }

    void iterativeIsZeroShotThenTheRawReport()
    {
        const QList<Sent> zeroShot = run(plan(QStringLiteral("zero-shot")));
        m_server = std::make_unique<ScriptedLlmServer>();
        QVERIFY(m_server->start());
        ScriptedLlmServer::Reply reply;
        reply.texts = {answer(QStringLiteral("incorrect"))};
        m_server->setDefaultReply(reply);
        const QList<Sent> sent = run(plan(QStringLiteral("iterative")));
        QCOMPARE(sent.size(), 6); // 2 tasks x 3 turns
        int later = 0;
        for (const Sent& s : sent) {
            common(s);
            for (const QString& phrase : {kTopOps, kRoofline, kCompetence, kTorchOnlyLegal, kPilot, kCritic})
                has(s, phrase, false);
            has(s, kReport, s.laterTurn);
            if (s.laterTurn) {
                ++later;
                has(s, QStringLiteral("Status: incorrect"), true);
            } else { // turn 1 is the zero-shot prompt, word for word
                bool same = false;
                for (const Sent& z : zeroShot)
                    same = same || (z.task == s.task && z.text == s.text);
                QVERIFY2(same, qPrintable(s.task));
            }
            QCOMPARE(s.body.value(QLatin1String("temperature")).toDouble(-1), 0.0);
        }
        QCOMPARE(later, 4);
    }

    void agentHasTheCompetenceGuidanceInEveryRole()
    {
        const QList<Sent> sent = run(plan(QStringLiteral("agent")));
        QSet<QString> roles;
        for (const Sent& s : sent) {
            roles << s.role;
            common(s);
            for (const QString& phrase : {kCompetence, kTorchOnlyLegal})
                has(s, phrase, true);
            for (const QString& phrase : {kPilot, kCritic, kTopOps, kRoofline})
                has(s, phrase, false);
            QCOMPARE(s.body.value(QLatin1String("temperature")).toDouble(-1), 0.7);
            QVERIFY(s.body.value(QLatin1String("seed")).isDouble());
        }
        QCOMPARE(roles, (QSet<QString>{RegimeRole::Analyzer, RegimeRole::Researcher, RegimeRole::Generator,
                                       RegimeRole::Triager}));
    }

    void pilotAsksForCustomTiledCudaInEveryRole()
    {
        const QList<Sent> sent = run(plan(QStringLiteral("pilot-v1")));
        QSet<QString> roles;
        for (const Sent& s : sent) {
            roles << s.role;
            common(s);
            has(s, s.role == RegimeRole::Critic ? kCritic : kPilot, true);
            for (const QString& phrase : {kCompetence, kTorchOnlyLegal, kTopOps, kRoofline})
                has(s, phrase, false);
            QCOMPARE(s.body.value(QLatin1String("temperature")).toDouble(-1), 0.0);
        }
        QCOMPARE(roles, (QSet<QString>{RegimeRole::Analyzer, RegimeRole::Researcher, RegimeRole::Generator,
                                       RegimeRole::Critic}));
    }

    // The competence ablation removes the competence section and nothing else (issue 36 item 2):
    // every prompt of the ablated agent is the agent's own with the guidance cut out, the agent's
    // roles, n, temperature, turns and selection unchanged (not the pilot's wording).
    void competenceAblationRemovesExactlyTheGuidance()
    {
        const QList<Sent> agent = run(plan(QStringLiteral("agent")));
        m_server = std::make_unique<ScriptedLlmServer>();
        QVERIFY(m_server->start());
        ScriptedLlmServer::Reply reply;
        reply.texts = {answer(QStringLiteral("incorrect"))};
        m_server->setDefaultReply(reply);
        const QList<Sent> ablated = run(plan(QStringLiteral("agent"), QStringLiteral("competence")));
        QFile guidanceFile(QStringLiteral(KWB_PROMPTS_DIR "/partials/competence.mustache"));
        QVERIFY(guidanceFile.open(QIODevice::ReadOnly));
        const QString guidance = QString::fromUtf8(guidanceFile.readAll()) + QLatin1Char('\n');
        QVERIFY(!agent.isEmpty());
        QCOMPARE(ablated.size(), agent.size());
        QStringList expected, sent;
        for (const Sent& s : agent) {
            QVERIFY2(s.text.contains(guidance), qPrintable(s.role));
            expected << s.role + QLatin1Char('\n') + QString(s.text).remove(guidance);
        }
        for (const Sent& s : ablated) {
            for (const QString& phrase : {kCompetence, kTorchOnlyLegal, kPilot, kCritic})
                has(s, phrase, false);
            QCOMPARE(s.body.value(QLatin1String("temperature")).toDouble(-1), 0.7);
            sent << s.role + QLatin1Char('\n') + s.text;
        }
        expected.sort();
        sent.sort();
        QCOMPARE(sent, expected);
    }

    void aPromptOverTheBudgetIsRefusedBeforeAnyRequest_data()
    {
        QTest::addColumn<bool>("serverCounts");
        QTest::newRow("counted by the server") << true;
        QTest::newRow("estimated") << false;
    }

    void aPromptOverTheBudgetIsRefusedBeforeAnyRequest()
    {
        QFETCH(bool, serverCounts);
        // A copy of the study set whose iterative retry carries a long text: turn 1 fits the
        // default 32768-token budget, the retry of turn 2 does not. By the estimate (3.2
        // characters a token) 100,000 characters are over; 60,000 pass the estimate, and the
        // server, counting a token for every 1.5 characters, refuses them.
        const QString copy = m_dir.filePath(QStringLiteral("budget-set-%1").arg(serverCounts));
        for (QDirIterator it(QStringLiteral(KWB_PROMPTS_DIR), QDir::Files, QDirIterator::Subdirectories);
             it.hasNext();) {
            const QString from = it.next();
            const QString rel = QDir(QStringLiteral(KWB_PROMPTS_DIR)).relativeFilePath(from);
            QVERIFY(QDir().mkpath(QFileInfo(QDir(copy).filePath(rel)).path()));
            QVERIFY(QFile::copy(from, QDir(copy).filePath(rel)));
        }
        QFile retry(QDir(copy).filePath(QStringLiteral("iterative/retry.mustache")));
        QVERIFY(retry.open(QIODevice::Append));
        retry.write(QByteArray(serverCounts ? 60000 : 100000, 'x') + "\n");
        retry.close();
        if (serverCounts)
            m_server->setTokenizer([](const QString& prompt) { return int(prompt.size() / 1.5); });
        const RunPlan p = plan(QStringLiteral("iterative"), QString(), copy);
        QCOMPARE(p.contextTokens, defaults::kContextTokens);
        QString error;
        const QList<Sent> sent = run(p, HeadlessRun::State::Failed, &error);
        QCOMPARE(m_server->requests().size(), 0); // no chat request
        QVERIFY2(error.contains(QStringLiteral("over the context budget: task L")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral(", turn 2, role retry (iterative/retry.mustache)")), qPrintable(error));
        QVERIFY2(error.contains(serverCounts ? QStringLiteral("counted by the server") : QStringLiteral("estimated")),
                 qPrintable(error));
        QCOMPARE(m_server->tokenizeRequests().isEmpty(), !serverCounts);
        Q_UNUSED(sent);
    }
};

QTEST_GUILESS_MAIN(TestStudyPrompts)
#include "tst_studyprompts.moc"
