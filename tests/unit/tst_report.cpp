// kwb report on a fixture run store whose numbers are worked out by hand below: the selected
// outcome per task (monotone key), Tables I–II columns, paired comparison, routing estimate,
// usage totals, and the three renderings (Markdown cells, CSV rows, JSON fields); then the same
// through the kwb binary (`kwb report`), with its exit codes.
//
// Run #1 "A", regime zero_shot (finished), one evaluation per task, each response 100 tokens in,
// 50 out, 1000 ms:
//   L1/1 correct 2.0 | L1/2 correct 0.5 | L2/1 compile_error | L2/2 incorrect | L3/1 correct 1.0 |
//   L3/2 format_error
//   correct 3/6 = 50.0 %, fast_1 1/6 = 16.7 % (only 2.0 > 1), compiled 4/6 = 66.7 % (3 correct +
//   incorrect), solved L1 2/2, L2 0/2, L3 1/2, geomean (2 · 0.5 · 1)^(1/3) = 1.00 over 3;
//   tokens 600 / 300, model time 6000 ms.
// Run #2 "B", regime agent (running), ten evaluations; responses 10 tokens in, 20 out, 500 ms,
// except the last (a failed request: no tokens, no latency):
//   L1/1 t0 correct 1.0, t1 compile_error        -> correct 1.0 (a broken later turn never wins)
//   L1/2 t0 incorrect, t1 correct 2.0, t2 correct 4.0 -> correct 4.0 (speedup breaks the tie)
//   L2/1 t0 compile_error, t1 incorrect          -> incorrect (compiled beats not compiled)
//   L2/2 t0 correct 2.0                          -> correct 2.0
//   L3/1 t0 runtime_error                        -> runtime_error (compiled)
//   L3/2 t0 timeout                              -> timeout (not compiled)
//   correct 3/6 = 50.0 %, fast_1 2/6 = 33.3 % (4.0 and 2.0), compiled 5/6 = 83.3 %, solved L1 2/2,
//   L2 1/2, L3 0/2, geomean (1 · 4 · 2)^(1/3) = 2.00 over 3; 10 responses, tokens 90 / 180,
//   model time 4500 ms.
// Paired #1 vs #2 on 6 tasks: both L1/1, L1/2 = 2; only A L3/1 = 1; only B L2/2 = 1; neither
//   L2/1, L3/2 = 2; difference 0.0 points; sign test on 1 vs 1: 2 · P(X <= 1 | n = 2) = 1.5 -> 1.
// Routing: L1 tie 2 vs 2 -> #1 (first); L2 #2 (1 vs 0); L3 #1 (1 vs 0); combined 4/6 = 66.7 %.

#include "../support/storefiles.h"
#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/run/selection.h"
#include "core/store/runstore.h"
#include "core/study/provenance.h"
#include "core/study/report.h"
#include "core/study/reportformat.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <functional>

using namespace kwb;

namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

struct Fixture
{
    qint64 runA = 0;
    qint64 runB = 0;
    qint64 evalBL12Fast = 0; ///< the evaluation that L1/2 of run B selects
};

qint64 addEvaluation(RunStore& store, qint64 runId, const QString& task, int turn, const QString& status,
                     double speedup, bool usage, qint64 tokensIn, qint64 tokensOut, qint64 latencyMs)
{
    PromptRecord prompt;
    prompt.runId = runId;
    prompt.task = task;
    prompt.turn = turn;
    prompt.role = QStringLiteral("generator");
    prompt.text = QStringLiteral("write a kernel");
    const auto promptId = store.addPrompt(prompt);
    ResponseRecord response;
    response.promptId = promptId.value_or(0);
    response.text = QStringLiteral("answer");
    if (usage) {
        response.tokensIn = tokensIn;
        response.tokensOut = tokensOut;
        response.latencyMs = latencyMs;
    } else {
        response.error = QStringLiteral("connection refused");
    }
    const auto responseId = store.addResponse(response);
    CandidateRecord candidate;
    candidate.responseId = responseId.value_or(0);
    candidate.task = task;
    candidate.turn = turn;
    candidate.parsedOk = status != QLatin1String("format_error");
    const auto candidateId = store.addCandidate(candidate);
    QJsonObject result{{QStringLiteral("status"), status}};
    if (!std::isnan(speedup))
        result.insert(QStringLiteral("speedup"), speedup);
    const auto evaluationId = store.addEvaluation(candidateId.value_or(0), result);
    if (!promptId || !responseId || !candidateId || !evaluationId)
        qFatal("fixture: %s", qPrintable(store.errorString()));
    return *evaluationId;
}

/// An evaluation of `task` at (turn, sample) in `run` with this result (prompt, response,
/// candidate and evaluation).
void addSampleResult(RunStore& store, qint64 run, const QString& task, int turn, int sample, const QJsonObject& result)
{
    PromptRecord prompt{0, run, task, turn, sample, QStringLiteral("generator"), QStringLiteral("p"), QString()};
    ResponseRecord response;
    response.promptId = store.addPrompt(prompt).value_or(0);
    response.text = QStringLiteral("answer");
    CandidateRecord candidate;
    candidate.responseId = store.addResponse(response).value_or(0);
    candidate.task = task;
    candidate.turn = turn;
    candidate.sample = sample;
    candidate.parsedOk = true;
    if (!store.addEvaluation(store.addCandidate(candidate).value_or(0), result))
        qFatal("addSampleResult: %s", qPrintable(store.errorString()));
}

/// An evaluation of `task` at (turn, sample) in `run` with this status (and speed-up, where it has one).
void addSample(RunStore& store, qint64 run, const QString& task, int turn, int sample, const QString& status,
               double speedup = 1.0)
{
    QJsonObject result{{QStringLiteral("status"), status}};
    if (status == QLatin1String("correct") || status == QLatin1String("incorrect"))
        result.insert(QStringLiteral("speedup"), speedup);
    addSampleResult(store, run, task, turn, sample, result);
}

/// A run's configuration as `kwb run` stores it: the regime (built in, with the switches off and
/// the changes given), the tasks, the profile, and a sweep id and n values where given.
QJsonObject runConfig(const QString& regimeName, const QStringList& tasks, const QStringList& off = {},
                      const std::function<void(Regime&)>& change = {}, const QString& sweepId = QString(),
                      const QString& profile = QStringLiteral("kernelbench-fp32"))
{
    Regime regime = Regime::builtin(regimeName)->withAblations(Ablations::fromOffNames(off));
    if (change)
        change(regime);
    QJsonObject config{{QStringLiteral("regime"), regime.toJson()},
                       {QStringLiteral("tasks"), QJsonArray::fromStringList(tasks)},
                       {QStringLiteral("protocol_profile"), profile},
                       {QStringLiteral("scale"), QStringLiteral("full")}};
    if (!sweepId.isEmpty())
        config.insert(QStringLiteral("sweep"), QJsonObject{{QStringLiteral("id"), sweepId},
                                                           {QStringLiteral("ns"), QJsonArray{1, 2, 4}},
                                                           {QStringLiteral("n"), regime.n}});
    return config;
}

Fixture buildFixture(RunStore& store)
{
    Fixture f;
    // Main regime runs (the built-in zero-shot and agent), so the routing estimate uses them.
    const auto builtin = [](const char* name) {
        return QJsonObject{{QStringLiteral("regime"), Regime::builtin(QString::fromLatin1(name))->toJson()}};
    };
    f.runA = store.createRun(QStringLiteral("A"), QStringLiteral("zero_shot"), builtin("zero-shot")).value_or(0);
    f.runB = store.createRun(QStringLiteral("B"), QStringLiteral("agent"), builtin("agent")).value_or(0);
    store.setRunStatus(f.runA, RunStatus::Finished);
    const auto a = [&](const char* task, const char* status, double speedup) {
        addEvaluation(store, f.runA, QString::fromLatin1(task), 0, QString::fromLatin1(status), speedup, true, 100, 50,
                      1000);
    };
    a("L1/1", "correct", 2.0);
    a("L1/2", "correct", 0.5);
    a("L2/1", "compile_error", kNone);
    a("L2/2", "incorrect", 0.0);
    a("L3/1", "correct", 1.0);
    a("L3/2", "format_error", kNone);
    const auto b = [&](const char* task, int turn, const char* status, double speedup, bool usage = true) {
        return addEvaluation(store, f.runB, QString::fromLatin1(task), turn, QString::fromLatin1(status), speedup,
                             usage, 10, 20, 500);
    };
    b("L1/1", 0, "correct", 1.0);
    b("L1/1", 1, "compile_error", kNone);
    b("L1/2", 0, "incorrect", 0.0);
    b("L1/2", 1, "correct", 2.0);
    f.evalBL12Fast = b("L1/2", 2, "correct", 4.0);
    b("L2/1", 0, "compile_error", kNone);
    b("L2/1", 1, "incorrect", 0.0);
    b("L2/2", 0, "correct", 2.0);
    b("L3/1", 0, "runtime_error", kNone);
    b("L3/2", 0, "timeout", kNone, false);
    return f;
}

QString interval(const Estimate& e, int decimals)
{
    return QStringLiteral("%1 [%2, %3]")
        .arg(QString::number(e.value, 'f', decimals), QString::number(e.low, 'f', decimals),
             QString::number(e.high, 'f', decimals));
}

// A percentage over tasks and the geometric mean as the tables print them (report.h's
// percentText, geomeanSpeedupText), written out here again so that the test does not read them
// from the code under test.
QString pct(const Estimate& e)
{
    return QStringLiteral("%1 % [%2\u2013%3]")
        .arg(QString::number(e.value, 'f', 1))
        .arg(qRound(e.low))
        .arg(qRound(e.high));
}

QString geo(const Estimate& e, int n)
{
    return QStringLiteral("%1\u00D7 [%2\u2013%3] (n = %4)")
        .arg(QString::number(e.value, 'f', 2), QString::number(e.low, 'f', 2), QString::number(e.high, 'f', 2))
        .arg(n);
}

} // namespace

class TestReport : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_db;
    RunStore m_store;
    Fixture m_fixture;

    Report report(const QList<qint64>& ids = {})
    {
        QString error;
        const std::optional<Report> built = buildReport(m_store, ids, ReportOptions{}, &error);
        if (!built)
            qFatal("buildReport: %s", qPrintable(error));
        return *built;
    }

    QProcess* runKwb(const QStringList& arguments)
    {
        auto* kwb = new QProcess(this);
        kwb->start(QStringLiteral(KWB_CLI), arguments);
        if (!kwb->waitForFinished(30000))
            qFatal("kwb did not finish");
        return kwb;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        if (qEnvironmentVariableIsSet("KWB_KEEP_FIXTURE")) { // to look at the fixture with kwb report
            m_dir.setAutoRemove(false);
            qInfo("fixture kept in %s", qPrintable(m_dir.path()));
        }
        m_db = m_dir.filePath(QStringLiteral("runs.sqlite"));
        QVERIFY2(m_store.open(m_db), qPrintable(m_store.errorString()));
        m_fixture = buildFixture(m_store);
        QCOMPARE(m_fixture.runA, 1);
        QCOMPARE(m_fixture.runB, 2);
    }

    void selection()
    {
        EvaluationRecord broken, working, faster, timedOutCompiled;
        broken.task = working.task = faster.task = timedOutCompiled.task = QStringLiteral("L2/3");
        broken.status = QStringLiteral("compile_error");
        working.status = faster.status = QStringLiteral("correct");
        working.speedup = 1.5;
        faster.speedup = 1.5; // a tie keeps the earlier one
        timedOutCompiled.status = QStringLiteral("timeout");
        timedOutCompiled.result = QJsonObject{{QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), true}}}};

        int chosen = -1;
        const auto outcome = selectOutcome({broken, working, faster}, &chosen);
        QVERIFY(outcome);
        QCOMPARE(chosen, 1);
        QCOMPARE(outcome->level, 2);
        QVERIFY(outcome->correct());
        QVERIFY(!selectOutcome({}));
        // timeout after a successful compile beats a compile error
        QVERIFY(selectOutcome({broken, timedOutCompiled}, &chosen)->compiled);
        QCOMPARE(chosen, 1);
        // "last" selection (pilot v1): only the last turn competes, so a broken last turn counts.
        EvaluationRecord lastBroken = broken;
        working.turn = 1;
        lastBroken.turn = 2;
        QVERIFY(selectOutcome({working, lastBroken}, &chosen)->correct());
        QVERIFY(!selectOutcome({working, lastBroken}, &chosen, true)->correct());
        QCOMPARE(chosen, 1);
        QCOMPARE(taskLevel(QStringLiteral("L3/10")), 3);
        QCOMPARE(taskLevel(QStringLiteral("custom")), 0);
    }

    void belowRooflineFloorCountsAsNotCorrect()
    {
        // issue 11: status correct at 20.6x, but below the roofline floor -> not correct, not
        // fast, not in the geomean; the honest 0.9x kernel of the same task wins selection.
        EvaluationRecord cheat, honest;
        cheat.task = honest.task = QStringLiteral("L1/1");
        cheat.status = honest.status = QStringLiteral("correct");
        cheat.speedup = 20.6;
        cheat.result = QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                   {QStringLiteral("speedup"), 20.6},
                                   {QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor")}}};
        honest.speedup = 0.9;
        honest.turn = 2;
        int chosen = -1;
        const auto alone = selectOutcome({cheat}, &chosen);
        QVERIFY(alone);
        QVERIFY(!alone->correct());
        QVERIFY(!alone->fast1());
        QVERIFY(std::isnan(alone->speedup));
        QVERIFY(alone->compiled);
        const auto both = selectOutcome({cheat, honest}, &chosen);
        QCOMPARE(chosen, 1);
        QVERIFY(both->correct());
        QCOMPARE(both->speedup, 0.9);
        // correct %, fast_1 and the geomean over {cheat alone, an honest 2.0x task}: 1/2, 1/2, 2.0
        TaskOutcome other;
        other.task = QStringLiteral("L1/2");
        other.level = 1;
        other.status = QStringLiteral("correct");
        other.speedup = 2.0;
        other.compiled = true;
        const Metrics m = computeMetrics({*alone, other});
        QCOMPARE(m.correct, 1);
        QCOMPARE(m.fast1, 1);
        QCOMPARE(m.compiled, 2);
        QCOMPARE(m.correctPct.value, 50.0);
        QCOMPARE(m.geomeanSpeedup.value, 2.0);
    }

    void fastPPlainAndClear()
    {
        // issue 13: four correct kernels and one wrong one. Plain fast_p counts a speed-up above
        // p; clear fast_p only one whose interval's lower bound is above p.
        //   1.02 [0.97, 1.07]  at parity: fast_1, not clearly
        //   1.30 [1.25, 1.35]  clearly fast_1; fast_1.5 neither
        //   2.50 [2.45, 2.55]  clearly fast at every threshold
        //   0.90 (no interval: a worker before issue 13) fast_0.8, never clear
        //   3.00 incorrect: nothing
        const auto record = [](const char* task, const char* status, double speedup, double low, double high) {
            EvaluationRecord e;
            e.task = QString::fromLatin1(task);
            e.status = QString::fromLatin1(status);
            e.speedup = speedup;
            QJsonObject timing;
            if (low > 0)
                timing.insert(QStringLiteral("speedup_interval"), QJsonObject{{QStringLiteral("low"), low},
                                                                              {QStringLiteral("high"), high},
                                                                              {QStringLiteral("samples"), 40}});
            e.result = QJsonObject{{QStringLiteral("status"), e.status},
                                   {QStringLiteral("speedup"), speedup},
                                   {QStringLiteral("timing"), timing}};
            return outcomeOf(e);
        };
        const QList<TaskOutcome> outcomes = {
            record("L1/1", "correct", 1.02, 0.97, 1.07), record("L1/2", "correct", 1.30, 1.25, 1.35),
            record("L1/3", "correct", 2.50, 2.45, 2.55), record("L1/4", "correct", 0.90, 0, 0),
            record("L1/5", "incorrect", 3.00, 2.9, 3.1)};
        QCOMPARE(outcomes.at(0).speedupLow, 0.97);
        QVERIFY(std::isnan(outcomes.at(3).speedupLow));
        const QList<FastP> f = fastPOf(outcomes);
        QCOMPARE(f.size(), 6);
        const QList<int> fast{4, 4, 4, 3, 1, 1}, clear{3, 3, 3, 2, 1, 1};
        for (int i = 0; i < f.size(); ++i) {
            QCOMPARE(f.at(i).p, kFastPThresholds.at(i));
            QCOMPARE(f.at(i).tasks, 5);
            QCOMPARE(f.at(i).fast, fast.at(i));
            QCOMPARE(f.at(i).clear, clear.at(i));
        }
        // L1/4 (0.90, no interval) is fast at p = 0 and 0.5 and 0.8, where "clearly" cannot be
        // decided for it: those cells read n/a; at p = 1 and above it is not fast, so they are decided.
        const QList<int> undecided{1, 1, 1, 0, 0, 0};
        for (int i = 0; i < f.size(); ++i)
            QCOMPARE(f.at(i).undecided, undecided.at(i));
        QCOMPARE(f.at(0).plainAndClearText(), QStringLiteral("80.0 % / n/a"));
        QCOMPARE(f.at(3).plainAndClearText(), QStringLiteral("60.0 % / 40.0 %"));
        QCOMPARE(f.at(3).fastPct(), 60.0);  // fast_1: 3 of 5
        QCOMPARE(f.at(3).clearPct(), 40.0); // clear fast_1: 2 of 5
    }

    void numbers()
    {
        const Report r = report();
        QCOMPARE(r.runs.size(), 2);
        QCOMPARE(r.levels, (QList<int>{1, 2, 3}));
        const RunReport& a = r.runs.at(0);
        const RunReport& b = r.runs.at(1);
        QCOMPARE(a.run.id, m_fixture.runA);
        QCOMPARE(a.summary.overall.tasks, 6);
        QCOMPARE(a.summary.overall.correct, 3);
        QCOMPARE(a.summary.overall.fast1, 1);
        QCOMPARE(a.summary.overall.compiled, 4);
        QCOMPARE(a.summary.overall.correctPct.value, 50.0);
        QVERIFY(std::abs(a.summary.overall.geomeanSpeedup.value - 1.0) < 1e-12);
        QCOMPARE(a.summary.perLevel.value(1).correct, 2);
        QCOMPARE(a.summary.perLevel.value(2).correct, 0);
        QCOMPARE(a.summary.perLevel.value(3).correct, 1);
        QCOMPARE(a.usage.responses, 6);
        QCOMPARE(a.usage.tokensIn.value_or(-1), 600);
        QCOMPARE(a.usage.tokensOut.value_or(-1), 300);
        QCOMPARE(a.usage.latencyMs.value_or(-1), 6000);

        QCOMPARE(b.evaluations, 10);
        QCOMPARE(b.summary.overall.correct, 3);
        QCOMPARE(b.summary.overall.fast1, 2);
        QCOMPARE(b.summary.overall.compiled, 5);
        QVERIFY(std::abs(b.summary.overall.geomeanSpeedup.value - 2.0) < 1e-12);
        QCOMPARE(b.summary.perLevel.value(2).correct, 1);
        QCOMPARE(b.summary.perLevel.value(3).correct, 0);
        QCOMPARE(b.chosenEvaluation.value(QStringLiteral("L1/2")), m_fixture.evalBL12Fast);
        QCOMPARE(b.outcomes.at(0).status, QStringLiteral("correct"));   // L1/1: turn 1 broke, turn 0 counts
        QCOMPARE(b.outcomes.at(2).status, QStringLiteral("incorrect")); // L2/1
        QCOMPARE(b.usage.responses, 10);
        QCOMPARE(b.usage.tokensIn.value_or(-1), 90);
        QCOMPARE(b.usage.latencyMs.value_or(-1), 4500);

        // The intervals are runstats' on the hand-listed outcomes (same seed): selection fed it
        // exactly these.
        const QList<TaskOutcome> expectedA = {
            {QStringLiteral("L1/1"), 1, QStringLiteral("correct"), 2.0, true},
            {QStringLiteral("L1/2"), 1, QStringLiteral("correct"), 0.5, true},
            {QStringLiteral("L2/1"), 2, QStringLiteral("compile_error"), kNone, false},
            {QStringLiteral("L2/2"), 2, QStringLiteral("incorrect"), 0.0, true},
            {QStringLiteral("L3/1"), 3, QStringLiteral("correct"), 1.0, true},
            {QStringLiteral("L3/2"), 3, QStringLiteral("format_error"), kNone, false},
        };
        const Metrics m = computeMetrics(expectedA);
        QCOMPARE(a.summary.overall.correctPct.low, m.correctPct.low);
        QCOMPARE(a.summary.overall.correctPct.high, m.correctPct.high);
        QCOMPARE(a.summary.overall.fast1Pct.high, m.fast1Pct.high);
        QVERIFY(m.correctPct.low < 50.0 && m.correctPct.high > 50.0);

        QCOMPARE(r.pairs.size(), 1);
        const PairedComparison& c = r.pairs.at(0).comparison;
        QCOMPARE(c.tasks, 6);
        QCOMPARE(c.both, 2);
        QCOMPARE(c.onlyA, 1);
        QCOMPARE(c.onlyB, 1);
        QCOMPARE(c.neither, 2);
        QCOMPARE(c.differencePct.value, 0.0);
        QCOMPARE(c.signTestP, 1.0);

        QVERIFY(r.routing);
        QCOMPARE(r.routing->runForLevel, (QMap<int, qint64>{{1, 1}, {2, 2}, {3, 1}}));
        QCOMPARE(r.routing->estimate.combined.tasks, 6);
        QCOMPARE(r.routing->estimate.combined.correct, 4);
        QVERIFY(r.routing->estimate.problems.isEmpty());
    }

    void onlyOneRun()
    {
        const Report r = report({m_fixture.runB});
        QCOMPARE(r.runs.size(), 1);
        QVERIFY(r.pairs.isEmpty());
        QVERIFY(!r.routing);
    }

    void unknownRun()
    {
        QString error;
        QVERIFY(!buildReport(m_store, {1, 99}, ReportOptions{}, &error));
        QVERIFY2(error.contains(QStringLiteral("unknown run 99")), qPrintable(error));
        RunStore closed;
        QVERIFY(!buildReport(closed, {}, ReportOptions{}, &error));
    }

    // The export says where the answers came from, as the window's banner and Table I do.
    void markdownSaysWhatAnswered()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("p.db"))));
        QJsonObject config = runConfig(QStringLiteral("zero-shot"), {QStringLiteral("L1/1")});
        config.insert(QStringLiteral("model"), QStringLiteral("fixture-model"));
        config.insert(QStringLiteral("endpoint"), QStringLiteral("http://127.0.0.1:9/v1"));
        const qint64 run = store.createRun(QStringLiteral("z"), QStringLiteral("zero-shot"), config).value_or(0);
        QVERIFY(run > 0);
        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        const QString md = reportMarkdown(*r);
        QVERIFY2(
            md.contains(QStringLiteral("## Where the answers came from\n\n**Not a live model: 1 of its 1 runs were "
                                       "answered by kwb-fixture-llm")),
            qPrintable(md));
        QVERIFY2(
            md.contains(QStringLiteral(
                "| #1 zero-shot | fixture server (fixture-model) | fixture-model | http://127.0.0.1:9/v1 | native |")),
            qPrintable(md));
    }

    // Runs that got one answer per task (a recorded server's) cannot differ by what the model
    // wrote: the report says so, by the worker's source hash of each evaluated candidate.
    void sameAnswersSaidWhereEveryRunGotThem()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("same.db"))));
        const QStringList tasks{QStringLiteral("L1/1"), QStringLiteral("L1/2")};
        const qint64 zero = store
                                .createRun(QStringLiteral("z"), QStringLiteral("zero-shot"),
                                           runConfig(QStringLiteral("zero-shot"), tasks))
                                .value_or(0);
        const qint64 agent =
            store.createRun(QStringLiteral("a"), QStringLiteral("agent"), runConfig(QStringLiteral("agent"), tasks))
                .value_or(0);
        QVERIFY(zero > 0 && agent > 0);
        const auto add = [&](qint64 run, const QString& task, int sample, const QString& hash) {
            const QJsonObject echo{{QStringLiteral("cuda"), QString()},
                                   {QStringLiteral("python"), QStringLiteral("class ModelNew: ...")},
                                   {QStringLiteral("source_hash"), hash}};
            addSampleResult(store, run, task, 1, sample,
                            QJsonObject{{QStringLiteral("status"), QStringLiteral("incorrect")},
                                        {QStringLiteral("candidate"), echo}});
        };
        for (const QString& task : tasks) {
            add(zero, task, 0, task + QStringLiteral("-text"));
            for (int sample = 0; sample < 3; ++sample)
                add(agent, task, sample, task + QStringLiteral("-text"));
        }
        QString error;
        std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        QCOMPARE(r->answersJudged.distinctOfTask.value(QStringLiteral("L1/1")), 1);
        const QString all =
            QStringLiteral("All 2 runs got one and the same answer for each of the 2 tasks they evaluated: their "
                           "numbers cannot differ by what the model wrote, only by measurement.");
        QCOMPARE(sameAnswersNote(*r), all);
        QVERIFY(reportMarkdown(*r).contains(QStringLiteral("**%1**").arg(all)));
        // One run: its samples got one answer per task; a run of one sample each says nothing.
        r = buildReport(store, {agent}, ReportOptions{}, &error);
        QVERIFY(r);
        QCOMPARE(sameAnswersNote(*r), QStringLiteral("Every sample and turn of each of the 2 tasks it evaluated got "
                                                     "the same answer: they cannot differ by what the model wrote, "
                                                     "only by measurement."));
        r = buildReport(store, {zero}, ReportOptions{}, &error);
        QVERIFY(r && sameAnswersNote(*r).isEmpty());

        // A timeout has no echo: its answer is unknown, so nothing is claimed for the runs.
        addSampleResult(store, zero, QStringLiteral("L1/1"), 1, 1,
                        QJsonObject{{QStringLiteral("status"), QStringLiteral("timeout")}});
        r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY(r);
        QCOMPARE(r->answersJudged.withoutHash, 1);
        QVERIFY(sameAnswersNote(*r).isEmpty());
        r = buildReport(store, {agent}, ReportOptions{}, &error);
        QVERIFY(r && !sameAnswersNote(*r).isEmpty());

        // Another answer for L1/2 in one sample: the run's samples can differ, and nothing is said.
        add(agent, QStringLiteral("L1/2"), 3, QStringLiteral("another text"));
        r = buildReport(store, {agent}, ReportOptions{}, &error);
        QVERIFY(r);
        QCOMPARE(r->answersJudged.distinctOfTask.value(QStringLiteral("L1/2")), 2);
        QVERIFY(sameAnswersNote(*r).isEmpty());
    }

    // The CSV and JSON exports carry what the Markdown says of where the answers came from, and
    // the three name the same model, endpoint, format, prompt set, template hashes, versions, GPU.
    void exportsSayWhatAnswered()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("p.db"))));
        QJsonObject config = runConfig(QStringLiteral("zero-shot"), {QStringLiteral("L1/1")});
        config.insert(QStringLiteral("model"), QStringLiteral("fixture-model"));
        config.insert(QStringLiteral("endpoint"), QStringLiteral("http://127.0.0.1:9/v1"));
        config.insert(QStringLiteral("answer_format"), QStringLiteral("kernelbench"));
        config.insert(QStringLiteral("versions"), QJsonObject{{QStringLiteral("kwb"), QStringLiteral("0.1.0")},
                                                              {QStringLiteral("torch"), QStringLiteral("2.11.0")}});
        config.insert(QStringLiteral("gpu"), QJsonObject{{QStringLiteral("available"), true},
                                                         {QStringLiteral("name"), QStringLiteral("NVIDIA H200")},
                                                         {QStringLiteral("arch"), QStringLiteral("sm_90")},
                                                         {QStringLiteral("driver_version"), QStringLiteral("13.0")}});
        RunConfig withTemplates = RunConfig::fromJson(config);
        withTemplates.templates.insert(QStringLiteral("zero-shot/generator"), QStringLiteral("Write a kernel."));
        config = withTemplates.toJson();
        const QString sha = QString::fromLatin1(
            QCryptographicHash::hash(QByteArrayLiteral("Write a kernel."), QCryptographicHash::Sha256).toHex());
        const qint64 run = store.createRun(QStringLiteral("z"), QStringLiteral("zero-shot"), config).value_or(0);
        QVERIFY(run > 0);
        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        const QString gpu = QStringLiteral("NVIDIA H200 (sm_90, CUDA driver 13.0)");
        const QString versions = QStringLiteral("kwb 0.1.0 · torch 2.11.0");
        const QString promptSet = runProvenance(r->runs.at(0).run).promptSet;
        QVERIFY(promptSet.startsWith(QStringLiteral("templates · ")));

        const QStringList rows = reportCsv(*r).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        for (const QString& expected :
             {QStringLiteral("provenance,1,,all,answered_by,fixture server (fixture-model),,"),
              QStringLiteral("provenance,1,,all,source,fixture_server,,"),
              QStringLiteral("provenance,1,,all,model,fixture-model,,"),
              QStringLiteral("provenance,1,,all,endpoint,http://127.0.0.1:9/v1,,"),
              QStringLiteral("provenance,1,,all,answer_format,kernelbench,,"),
              QStringLiteral("provenance,1,,all,prompt_set,%1,,").arg(promptSet),
              QStringLiteral("provenance,1,,all,template:zero-shot/generator,%1,,").arg(sha),
              QStringLiteral("provenance,1,,all,versions,%1,,").arg(versions),
              QStringLiteral("provenance,1,,all,gpu,\"%1\",,").arg(gpu)})
            QVERIFY2(rows.contains(expected),
                     qPrintable(expected + QStringLiteral("\nin:\n") + rows.join(QLatin1Char('\n'))));

        const QJsonObject p = reportJson(*r)
                                  .value(QStringLiteral("runs"))
                                  .toArray()
                                  .at(0)
                                  .toObject()
                                  .value(QStringLiteral("provenance"))
                                  .toObject();
        QCOMPARE(p.value(QStringLiteral("answered_by")).toString(), QStringLiteral("fixture server (fixture-model)"));
        QCOMPARE(p.value(QStringLiteral("source")).toString(), QStringLiteral("fixture_server"));
        QCOMPARE(p.value(QStringLiteral("model")).toString(), QStringLiteral("fixture-model"));
        QCOMPARE(p.value(QStringLiteral("endpoint")).toString(), QStringLiteral("http://127.0.0.1:9/v1"));
        QCOMPARE(p.value(QStringLiteral("answer_format")).toString(), QStringLiteral("kernelbench"));
        QCOMPARE(p.value(QStringLiteral("prompt_set")).toString(), promptSet);
        QCOMPARE(
            p.value(QStringLiteral("templates")).toObject().value(QStringLiteral("zero-shot/generator")).toString(),
            sha);
        QCOMPARE(p.value(QStringLiteral("versions")).toString(), versions);
        QCOMPARE(p.value(QStringLiteral("gpu")).toString(), gpu);

        const QString md = reportMarkdown(*r);
        QVERIFY2(md.contains(QStringLiteral("| #1 zero-shot | fixture server (fixture-model) | fixture-model | "
                                            "http://127.0.0.1:9/v1 | kernelbench | %1 | %2 | %3 |")
                                 .arg(promptSet, versions, gpu)),
                 qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("- `zero-shot/generator` %1\n").arg(sha)), qPrintable(md));
    }

    // issue 39 item 6: a correct candidate's fraction of the roofline bound, from the floor its
    // evaluation stored, in the outcome, the metrics and every export; none without a floor.
    void boundFractionInTheReport()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("b.db"))));
        const qint64 run =
            store
                .createRun(QStringLiteral("z"), QStringLiteral("zero-shot"),
                           runConfig(QStringLiteral("zero-shot"),
                                     {QStringLiteral("L1/1"), QStringLiteral("L1/2"), QStringLiteral("L1/3")}))
                .value_or(0);
        QVERIFY(run > 0);
        const auto add = [&](const QString& task, const QJsonObject& extra) {
            PromptRecord prompt{0, run, task, 1, 0, QStringLiteral("generator"), QStringLiteral("p"), QString()};
            ResponseRecord response;
            response.promptId = store.addPrompt(prompt).value_or(0);
            CandidateRecord candidate;
            candidate.responseId = store.addResponse(response).value_or(0);
            candidate.task = task;
            candidate.turn = 1;
            candidate.parsedOk = true;
            QJsonObject result{{QStringLiteral("status"), QStringLiteral("correct")}, {QStringLiteral("speedup"), 1.5}};
            for (auto it = extra.begin(); it != extra.end(); ++it)
                result.insert(it.key(), it.value());
            QVERIFY(store.addEvaluation(store.addCandidate(candidate).value_or(0), result));
        };
        const auto roofline = [](double floorMs, double candidateMs) {
            return QJsonObject{{QStringLiteral("roofline"), QJsonObject{{QStringLiteral("floor_ms"), floorMs},
                                                                        {QStringLiteral("candidate_ms"), candidateMs},
                                                                        {QStringLiteral("margin"), 0.1}}}};
        };
        add(QStringLiteral("L1/1"), roofline(0.25, 1.0)); // 25 % of the bound
        add(QStringLiteral("L1/2"), roofline(1.0, 1.0));  // at it
        add(QStringLiteral("L1/3"), QJsonObject());       // a worker before the floor: none
        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        const QList<TaskOutcome>& o = r->runs.at(0).outcomes;
        QCOMPARE(o.at(0).boundFraction, 0.25);
        QCOMPARE(o.at(1).boundFraction, 1.0);
        QVERIFY(std::isnan(o.at(2).boundFraction));
        const Metrics& m = r->runs.at(0).summary.overall;
        QCOMPARE(m.boundFractionCount, 2);
        QVERIFY(std::abs(m.boundFractionGeomean - 0.5) < 1e-12); // sqrt(0.25 × 1)
        QCOMPARE(boundFractionCellText(m), QStringLiteral("50 % of bound (n = 2)"));

        QVERIFY(reportCsv(*r).contains(QStringLiteral("run,1,,all,bound_fraction_geomean,0.5,,")));
        QVERIFY(reportCsv(*r).contains(QStringLiteral("run,1,,all,bound_fraction_count,2,,")));
        const QJsonObject json = reportJson(*r).value(QStringLiteral("runs")).toArray().at(0).toObject();
        QCOMPARE(json.value(QStringLiteral("outcomes"))
                     .toArray()
                     .at(0)
                     .toObject()
                     .value(QStringLiteral("bound_fraction"))
                     .toDouble(),
                 0.25);
        QVERIFY(json.value(QStringLiteral("outcomes"))
                    .toArray()
                    .at(2)
                    .toObject()
                    .value(QStringLiteral("bound_fraction"))
                    .isNull());
        QCOMPARE(json.value(QStringLiteral("overall")).toObject().value(QStringLiteral("bound_fraction_count")).toInt(),
                 2);
        const QString md = reportMarkdown(*r);
        QVERIFY2(md.contains(QStringLiteral("| 50 % of bound (n = 2) |")), qPrintable(md));
        const ReportTable levels = perLevelTable(*r);
        QCOMPARE(levels.headers.last(), QStringLiteral("roofline bound (geomean, n)"));
        QCOMPARE(levels.rows.at(0).last(), QStringLiteral("50 % of bound (n = 2)"));

        // No correct kernel with a floor: n/a, never 0 %.
        Metrics none;
        none.correct = 1;
        QCOMPARE(boundFractionCellText(none), QStringLiteral("n/a"));
        QCOMPARE(boundFractionCellText(Metrics()), QStringLiteral("\u2013"));
    }

    void markdown()
    {
        const Report r = report();
        const QString md = reportMarkdown(r);
        const Metrics& a = r.runs.at(0).summary.overall;
        const Metrics& b = r.runs.at(1).summary.overall;
        // The study's mean and best speed-up, and the torch-only count, beside the geometric mean.
        const auto meanBest = [](const Metrics& m) {
            return QStringLiteral("%1\u00D7 / %2\u00D7")
                .arg(QString::number(m.meanSpeedup, 'f', 2), QString::number(m.bestSpeedup, 'f', 2));
        };
        const auto torchOnly = [](const Metrics& m) {
            return QStringLiteral("%1 of %2").arg(m.torchOnlyCorrect).arg(m.correct);
        };
        const QString rowA =
            QStringLiteral("| #1 | zero_shot | A | finished | 6 | %1 | %7 | %2 | %3 | 2/2 | 0/2 | 1/2 | %4 | %5 | %6 "
                           "| n/a | 600 / 300 | 6.0 s |\n")
                .arg(pct(a.correctPct), pct(a.fast1Pct), pct(a.compiledPct), geo(a.geomeanSpeedup, 3), meanBest(a),
                     torchOnly(a), clearFast1Text(a));
        QVERIFY2(md.contains(rowA), qPrintable(md + QStringLiteral("\nwanted:\n") + rowA));
        QVERIFY(rowA.contains(QStringLiteral("| 50.0 % [")) && rowA.contains(QStringLiteral("| 16.7 % [")) &&
                rowA.contains(QStringLiteral("| 66.7 % [")) && rowA.contains(QStringLiteral("| 1.00\u00D7 [")));
        const QString rowB =
            QStringLiteral("| #2 | agent | B | running | 6 | %1 | %7 | %2 | %3 | 2/2 | 1/2 | 0/2 | %4 | %5 | %6 "
                           "| n/a | 90 / 180 | 4.5 s |\n")
                .arg(pct(b.correctPct), pct(b.fast1Pct), pct(b.compiledPct), geo(b.geomeanSpeedup, 3), meanBest(b),
                     torchOnly(b), clearFast1Text(b));
        QVERIFY(a.clearFast1 <= a.fast1 && b.clearFast1 <= b.fast1);
        QVERIFY2(std::isfinite(a.meanSpeedup) && a.bestSpeedup >= a.meanSpeedup, qPrintable(meanBest(a)));
        QVERIFY2(md.contains(rowB), qPrintable(md + QStringLiteral("\nwanted:\n") + rowB));
        QVERIFY(rowB.contains(QStringLiteral("| 33.3 % [")) && rowB.contains(QStringLiteral("| 83.3 % [")) &&
                rowB.contains(QStringLiteral("| 2.00\u00D7 [")));
        const PairedComparison& c = r.pairs.at(0).comparison;
        const QString pair =
            QStringLiteral("| #1 zero_shot | #2 agent | 6 | 50.0 | 50.0 | %1 | 1 | 1 | 2 | 2 | 1.000 |\n")
                .arg(interval(c.differencePct, 1));
        QVERIFY2(md.contains(pair), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("| L2 | #2 agent | 2 | 1 | ")), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("| all | routed | 6 | 4 | 66.7 % [")), qPrintable(md));
        QVERIFY(md.contains(QStringLiteral("within noise")));
        // 0 of 2: the exact binomial interval [0, 1 − 0.025^(1/2)], not the bootstrap's [0–0].
        QVERIFY(md.contains(QStringLiteral("| #2 agent | L3 | 2 | 0.0 % [0–84] |")));
    }

    void csv()
    {
        const QString text = reportCsv(report());
        const QStringList rows = text.split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
        QCOMPARE(rows.first(), QStringLiteral("section,run,run_b,level,metric,value,low,high"));
        for (const char* expected : {"run,1,,all,tasks,6,,",
                                     "run,1,,all,correct,3,,",
                                     "run,1,,all,fast1,1,,",
                                     "run,1,,all,compiled,4,,",
                                     "run,1,,all,geomean_count,3,,",
                                     "run,1,,all,tokens_in,600,,",
                                     "run,1,,all,model_time_ms,6000,,",
                                     "run,1,,3,correct,1,,",
                                     "run,2,,all,evaluations,10,,",
                                     "run,2,,all,responses,10,,",
                                     "run,2,,all,tokens_out,180,,",
                                     "run,2,,all,model_time_ms,4500,,",
                                     "run,2,,2,correct,1,,",
                                     "paired,1,2,all,tasks,6,,",
                                     "paired,1,2,all,only_a,1,,",
                                     "paired,1,2,all,only_b,1,,",
                                     "paired,1,2,all,both,2,,",
                                     "paired,1,2,all,neither,2,,",
                                     "paired,1,2,all,sign_test_p,1,,",
                                     "routing,1,,1,correct,2,,",
                                     "routing,2,,2,correct,1,,",
                                     "routing,1,,3,correct,1,,",
                                     "routing,,,all,correct,4,,"}) {
            QVERIFY2(rows.contains(QString::fromLatin1(expected)), expected);
        }
        const auto startsWith = [&rows](const char* prefix) {
            for (const QString& row : rows) {
                if (row.startsWith(QString::fromLatin1(prefix)))
                    return row;
            }
            return QString();
        };
        QVERIFY(!startsWith("run,1,,all,correct_pct,50,").isEmpty());
        QVERIFY(!startsWith("run,1,,all,fast1_pct,16.6666666667,").isEmpty());
        QVERIFY(!startsWith("run,2,,all,compiled_pct,83.3333333333,").isEmpty());
        QVERIFY(!startsWith("run,2,,all,geomean_speedup,2,").isEmpty());
        QVERIFY(!startsWith("paired,1,2,all,difference_pct,0,").isEmpty());
        const QStringList interval = startsWith("run,1,,all,correct_pct,").split(QLatin1Char(','));
        QCOMPARE(interval.size(), 8);
        QVERIFY(interval.at(6).toDouble() < 50.0 && interval.at(7).toDouble() > 50.0);
    }

    void json()
    {
        const QJsonObject json = reportJson(report());
        QCOMPARE(json.value(QStringLiteral("database")).toString(), m_db);
        const QJsonArray runs = json.value(QStringLiteral("runs")).toArray();
        QCOMPARE(runs.size(), 2);
        const QJsonObject a = runs.at(0).toObject();
        QCOMPARE(a.value(QStringLiteral("regime")).toString(), QStringLiteral("zero_shot"));
        const QJsonObject overallA = a.value(QStringLiteral("overall")).toObject();
        QCOMPARE(overallA.value(QStringLiteral("correct")).toInt(), 3);
        QCOMPARE(overallA.value(QStringLiteral("correct_pct")).toObject().value(QStringLiteral("value")).toDouble(),
                 50.0);
        QVERIFY(
            std::abs(
                overallA.value(QStringLiteral("geomean_speedup")).toObject().value(QStringLiteral("value")).toDouble() -
                1.0) < 1e-12);
        QCOMPARE(a.value(QStringLiteral("levels"))
                     .toObject()
                     .value(QStringLiteral("3"))
                     .toObject()
                     .value(QStringLiteral("correct"))
                     .toInt(),
                 1);
        QCOMPARE(a.value(QStringLiteral("usage")).toObject().value(QStringLiteral("tokens_in")).toInt(), 600);
        const QJsonObject b = runs.at(1).toObject();
        QCOMPARE(b.value(QStringLiteral("overall")).toObject().value(QStringLiteral("fast1")).toInt(), 2);
        QCOMPARE(b.value(QStringLiteral("overall")).toObject().value(QStringLiteral("compiled")).toInt(), 5);
        const QJsonObject l12 = b.value(QStringLiteral("outcomes")).toArray().at(1).toObject();
        QCOMPARE(l12.value(QStringLiteral("task")).toString(), QStringLiteral("L1/2"));
        QCOMPARE(l12.value(QStringLiteral("speedup")).toDouble(), 4.0);
        QCOMPARE(qint64(l12.value(QStringLiteral("evaluation_id")).toDouble()), m_fixture.evalBL12Fast);
        const QJsonObject l32 = b.value(QStringLiteral("outcomes")).toArray().at(5).toObject();
        QCOMPARE(l32.value(QStringLiteral("status")).toString(), QStringLiteral("timeout"));
        QVERIFY(l32.value(QStringLiteral("speedup")).isNull());

        const QJsonObject pair = json.value(QStringLiteral("comparisons")).toArray().at(0).toObject();
        QCOMPARE(pair.value(QStringLiteral("only_a")).toInt(), 1);
        QCOMPARE(pair.value(QStringLiteral("only_b")).toInt(), 1);
        QCOMPARE(pair.value(QStringLiteral("sign_test_p")).toDouble(), 1.0);
        QCOMPARE(pair.value(QStringLiteral("difference_pct")).toObject().value(QStringLiteral("value")).toDouble(),
                 0.0);

        const QJsonObject routing = json.value(QStringLiteral("routing")).toObject();
        QCOMPARE(routing.value(QStringLiteral("levels"))
                     .toObject()
                     .value(QStringLiteral("2"))
                     .toObject()
                     .value(QStringLiteral("run"))
                     .toInt(),
                 2);
        QCOMPARE(routing.value(QStringLiteral("combined")).toObject().value(QStringLiteral("correct")).toInt(), 4);
        QVERIFY(json.value(QStringLiteral("notes")).toArray().size() == 1);
    }

    void cliJson()
    {
        QProcess* kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), m_db, QStringLiteral("--format"),
                                QStringLiteral("json")});
        QCOMPARE(kwb->exitCode(), 0);
        const QJsonObject json = QJsonDocument::fromJson(kwb->readAllStandardOutput()).object();
        QCOMPARE(json.value(QStringLiteral("ok")).toBool(), true);
        QCOMPARE(json.value(QStringLiteral("runs")).toArray().size(), 2);
        QCOMPARE(
            json.value(QStringLiteral("comparisons")).toArray().at(0).toObject().value(QStringLiteral("both")).toInt(),
            2);

        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), m_db, QStringLiteral("--runs"),
                      QStringLiteral("2"), QStringLiteral("--format"), QStringLiteral("json")});
        QCOMPARE(kwb->exitCode(), 0);
        const QJsonObject one = QJsonDocument::fromJson(kwb->readAllStandardOutput()).object();
        QCOMPARE(one.value(QStringLiteral("runs")).toArray().size(), 1);
        QVERIFY(one.value(QStringLiteral("routing")).isNull());
    }

    void cliMarkdownAndCsv()
    {
        QProcess* kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), m_db});
        QCOMPARE(kwb->exitCode(), 0);
        const QString md = QString::fromUtf8(kwb->readAllStandardOutput());
        QVERIFY2(md.contains(QStringLiteral("| #1 | zero_shot | A | finished | 6 | 50.0 % [")), qPrintable(md));

        const QString csvPath = m_dir.filePath(QStringLiteral("report.csv"));
        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), m_db, QStringLiteral("--runs"),
                      QStringLiteral("1,2"), QStringLiteral("--format"), QStringLiteral("csv"), QStringLiteral("--out"),
                      csvPath});
        QCOMPARE(kwb->exitCode(), 0);
        QVERIFY(kwb->readAllStandardOutput().isEmpty());
        QFile file(csvPath);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray csv = file.readAll();
        QVERIFY(csv.startsWith("section,run,run_b,level,metric,value,low,high\r\n"));
        QVERIFY(csv.contains("\r\npaired,1,2,all,only_a,1,,\r\n"));
    }

    void cliErrors_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown run") << QStringList{QStringLiteral("--runs"), QStringLiteral("1,7"),
                                                    QStringLiteral("--format"), QStringLiteral("json")}
                                     << 4 << QStringLiteral("\"unknown_run\"");
        QTest::newRow("bad run list") << QStringList{QStringLiteral("--runs"), QStringLiteral("1,x")} << 2
                                      << QStringLiteral("--runs");
        QTest::newRow("bad format") << QStringList{QStringLiteral("--format"), QStringLiteral("html")} << 2
                                    << QStringLiteral("html");
    }

    void cliErrors()
    {
        QFETCH(QStringList, arguments);
        QFETCH(int, exitCode);
        QFETCH(QString, expected);
        QProcess* kwb = runKwb(QStringList{QStringLiteral("report"), QStringLiteral("--db"), m_db} + arguments);
        const QString output = QString::fromUtf8(kwb->readAllStandardOutput() + kwb->readAllStandardError());
        QCOMPARE(kwb->exitCode(), exitCode);
        QVERIFY2(output.contains(expected), qPrintable(output));
    }

    void cliMissingDatabase()
    {
        const QString missing = m_dir.filePath(QStringLiteral("missing.sqlite"));
        QProcess* kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), missing});
        QCOMPARE(kwb->exitCode(), 4);
        QVERIFY(!QFile::exists(missing)); // a report never creates a store

        const QString garbage = m_dir.filePath(QStringLiteral("garbage.sqlite"));
        QFile file(garbage);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray(4096, 'x'));
        file.close();
        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), garbage});
        QCOMPARE(kwb->exitCode(), 4);

        kwb = runKwb({QStringLiteral("report")}); // --db is required
        QCOMPARE(kwb->exitCode(), 2);
    }

    // Issue 38: what is not a run store is said plainly, exit 4, and left as it is; an older store
    // is migrated, which is said.
    void cliDatabaseKinds()
    {
        const QString foreign = m_dir.filePath(QStringLiteral("other-program.sqlite"));
        QVERIFY(kwb::test::writeForeignDatabase(foreign));
        auto before = kwb::test::FileSnapshot::of(foreign);
        QProcess* kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), foreign});
        QCOMPARE(kwb->exitCode(), 4);
        QString err = QString::fromUtf8(kwb->readAllStandardError());
        QVERIFY2(
            err.startsWith(QStringLiteral("kwb report: %1 is a SQLite database of another program (tables: foo), not a "
                                          "run store; it was left unchanged.")
                               .arg(foreign)),
            qPrintable(err));
        QVERIFY(kwb::test::FileSnapshot::of(foreign) == before);
        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), foreign, QStringLiteral("--format"),
                      QStringLiteral("json")});
        QCOMPARE(kwb->exitCode(), 4);
        const QJsonObject error =
            QJsonDocument::fromJson(kwb->readAllStandardOutput()).object().value(QLatin1String("error")).toObject();
        QCOMPARE(error.value(QLatin1String("code")).toString(), QStringLiteral("bad_database"));
        QVERIFY(error.value(QLatin1String("message")).toString().contains(QLatin1String("another program")));

        const QString empty = m_dir.filePath(QStringLiteral("empty.sqlite"));
        QVERIFY(kwb::test::writeEmptyFile(empty));
        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), empty});
        QCOMPARE(kwb->exitCode(), 4);
        QVERIFY(QString::fromUtf8(kwb->readAllStandardError()).contains(QLatin1String("empty file (0 bytes)")));
        QCOMPARE(QFileInfo(empty).size(), 0);

        const QString damaged = m_dir.filePath(QStringLiteral("damaged.sqlite"));
        QVERIFY(kwb::test::writeStore(damaged));
        QVERIFY(kwb::test::overwriteTwoPages(damaged));
        before = kwb::test::FileSnapshot::of(damaged);
        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), damaged});
        QCOMPARE(kwb->exitCode(), 4);
        err = QString::fromUtf8(kwb->readAllStandardError());
        QVERIFY2(err.contains(QLatin1String("damaged SQLite database")) &&
                     err.contains(QLatin1String("What cannot be read")),
                 qPrintable(err));
        QVERIFY(kwb::test::FileSnapshot::of(damaged) == before);

        const QString older = m_dir.filePath(QStringLiteral("older.sqlite"));
        {
            RunStore store;
            QVERIFY(store.open(older, {RunStore::migrations().first()}));
            QVERIFY(store.createRun(QStringLiteral("old"), QStringLiteral("zero_shot"), QJsonObject()));
        }
        kwb = runKwb({QStringLiteral("report"), QStringLiteral("--db"), older});
        QCOMPARE(kwb->exitCode(), 0);
        err = QString::fromUtf8(kwb->readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("was a run store of schema 1; it is now migrated to schema %1")
                                  .arg(RunStore::schemaVersion())),
                 qPrintable(err));
    }

    // The ablation table and the best-of-n curve, on a store of their own (numbers by hand).
    void tasksWithoutAnEvaluationCount()
    {
        // A 10-task run: 7 evaluated (4 correct, 3 incorrect: all compiled), L1/8 whose model request
        // failed, L1/9 whose only evaluation is a machine failure, L1/10 never reached. L1/6 had a
        // machine failure too, then a real evaluation on resume. Denominator 10, compiled 70 %.
        RunStore store;
        QVERIFY(store.open(m_dir.filePath(QStringLiteral("unevaluated.sqlite"))));
        QJsonArray tasks;
        for (int i = 1; i <= 10; ++i)
            tasks.append(QStringLiteral("L1/%1").arg(i));
        const qint64 run = store
                               .createRun(QStringLiteral("ten"), QStringLiteral("zero_shot"),
                                          QJsonObject{{QStringLiteral("tasks"), tasks}})
                               .value_or(0);
        QVERIFY(run > 0);
        const auto evaluate = [&](const QString& task, const QJsonObject& result) {
            PromptRecord prompt{0, run, task, 1, 0, QStringLiteral("generator"), QStringLiteral("write"), QString()};
            ResponseRecord response;
            response.promptId = store.addPrompt(prompt).value_or(0);
            response.text = QStringLiteral("answer");
            CandidateRecord candidate;
            candidate.responseId = store.addResponse(response).value_or(0);
            candidate.task = task;
            candidate.turn = 1;
            QVERIFY(store.addEvaluation(store.addCandidate(candidate).value_or(0), result));
        };
        const QJsonObject lost{
            {QStringLiteral("status"), QStringLiteral("worker_lost")},
            {QStringLiteral("message"), QStringLiteral("the worker was killed by signal 9 (SIGKILL)")}};
        for (int i = 1; i <= 7; ++i) {
            if (i == 6)
                evaluate(QStringLiteral("L1/6"), lost);
            evaluate(QStringLiteral("L1/%1").arg(i),
                     QJsonObject{
                         {QStringLiteral("status"), i <= 4 ? QStringLiteral("correct") : QStringLiteral("incorrect")},
                         {QStringLiteral("speedup"), 1.5}});
        }
        PromptRecord failedPrompt{
            0, run, QStringLiteral("L1/8"), 1, 0, QStringLiteral("generator"), QStringLiteral("write"), QString()};
        ResponseRecord failed;
        failed.promptId = store.addPrompt(failedPrompt).value_or(0);
        failed.error = QStringLiteral("http_error: HTTP 500 from the server");
        QVERIFY(store.addResponse(failed));
        evaluate(QStringLiteral("L1/9"), lost);

        QString error;
        const std::optional<Report> report = buildReport(store, {run}, ReportOptions{}, &error);
        QVERIFY2(report, qPrintable(error));
        const RunReport& r = report->runs.first();
        QCOMPARE(r.summary.overall.tasks, 10);
        QCOMPARE(r.summary.overall.correct, 4);
        QCOMPARE(r.summary.overall.compiled, 7);
        QCOMPARE(r.summary.overall.compiledPct.value, 70.0);
        QCOMPARE(r.summary.overall.correctPct.value, 40.0);
        QCOMPARE(r.unevaluated.size(), 3);
        QCOMPARE(r.unevaluated.at(0).task, QStringLiteral("L1/10"));
        QCOMPARE(r.unevaluated.at(0).kind, UnevaluatedKind::NotStarted);
        QCOMPARE(r.unevaluated.at(1).task, QStringLiteral("L1/8"));
        QCOMPARE(r.unevaluated.at(1).kind, UnevaluatedKind::ModelRequestFailed);
        QCOMPARE(r.unevaluated.at(1).reason,
                 QStringLiteral("model request failed: http_error: HTTP 500 from the server"));
        QCOMPARE(r.unevaluated.at(2).task, QStringLiteral("L1/9"));
        QCOMPARE(r.unevaluated.at(2).kind, UnevaluatedKind::MachineFailure);
        QVERIFY2(r.unevaluated.at(2).reason.startsWith(QLatin1String("not evaluated: machine failure (worker_lost: ")),
                 qPrintable(r.unevaluated.at(2).reason));

        // The units a resume would do again: L1/8's request and L1/9's evaluation, not L1/6's.
        const QList<UnfinishedUnit> units = unfinishedUnits(store, run);
        QCOMPARE(units.size(), 2);
        QCOMPARE(units.at(0).unit.task, QStringLiteral("L1/8"));
        QCOMPARE(units.at(1).unit.task, QStringLiteral("L1/9"));

        const QString md = reportMarkdown(*report);
        QVERIFY2(md.contains(QStringLiteral("| #%1 zero_shot | ten | finished | 10 |").arg(run)) ||
                     md.contains(QStringLiteral("| ten | running | 10 |")),
                 qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("## Tasks without an evaluation")), qPrintable(md));
        QVERIFY2(
            md.contains(
                QStringLiteral("| #%1 zero_shot | L1/8 | model request failed: http_error: HTTP 500 from the server |")
                    .arg(run)),
            qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("| L1/10 | not started")), qPrintable(md));
        const QString csv = reportCsv(*report);
        QVERIFY2(csv.contains(QStringLiteral("run,%1,,all,tasks,10,,\r\n").arg(run)), qPrintable(csv));
        QVERIFY2(csv.contains(QStringLiteral("run,%1,,all,unevaluated,3,,\r\n").arg(run)), qPrintable(csv));
        QVERIFY2(
            csv.contains(QStringLiteral(
                             "unevaluated,%1,,1,L1/8,model request failed: http_error: HTTP 500 from the server,,\r\n")
                             .arg(run)),
            qPrintable(csv));
        // How many and why: 1 without an answer, 1 machine fault, 1 not yet run.
        QVERIFY2(md.contains(QStringLiteral("| #%1 zero_shot | 10 | 3 | 1 | 1 | 0 | 1 |").arg(run)), qPrintable(md));
        QVERIFY(csv.contains(QStringLiteral("run,%1,,all,unevaluated_model_request_failed,1,,\r\n").arg(run)));
        QVERIFY(csv.contains(QStringLiteral("run,%1,,all,unevaluated_not_started,1,,\r\n").arg(run)));
        const QJsonObject json = reportJson(*report).value(QLatin1String("runs")).toArray().first().toObject();
        const QJsonObject counts = json.value(QLatin1String("unevaluated_counts")).toObject();
        QCOMPARE(counts.value(UnevaluatedKind::ModelRequestFailed).toInt(), 1);
        QCOMPARE(counts.value(UnevaluatedKind::MachineFailure).toInt(), 1);
        QCOMPARE(counts.value(UnevaluatedKind::NotEvaluated).toInt(), 0);
        QCOMPARE(counts.value(UnevaluatedKind::NotStarted).toInt(), 1);
        QCOMPARE(json.value(QLatin1String("overall")).toObject().value(QLatin1String("tasks")).toInt(), 10);
        const QJsonArray unevaluated = json.value(QLatin1String("unevaluated")).toArray();
        QCOMPARE(unevaluated.size(), 3);
        QCOMPARE(unevaluated.at(2).toObject().value(QLatin1String("kind")).toString(), UnevaluatedKind::MachineFailure);
        QCOMPARE(json.value(QLatin1String("outcomes")).toArray().size(), 10);
    }

    void tieBreakIsTheControllers()
    {
        // Evaluations are stored as they finish: sample 2 before sample 0. Two correct kernels at
        // the same speed: the lower sample wins, as in the run controller (selection.h), not the
        // first stored.
        EvaluationRecord s2, s0;
        s2.task = s0.task = QStringLiteral("L1/1");
        s2.turn = s0.turn = 1;
        s2.sample = 2;
        s0.sample = 0;
        s2.result = s0.result =
            QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}, {QStringLiteral("speedup"), 1.5}};
        s2.status = s0.status = QStringLiteral("correct");
        int chosen = -1;
        QVERIFY(selectOutcome({s2, s0}, &chosen));
        QCOMPARE(chosen, 1);
        QList<CandidateOutcome> candidates{CandidateOutcome::fromEvaluation(s2.result, 1, 2),
                                           CandidateOutcome::fromEvaluation(s0.result, 1, 0)};
        QCOMPARE(*selectJudgedIndex(candidates, SelectionMode::Monotone), 1);
        // Across turns a tie keeps the earlier turn, also when the later one was stored first.
        EvaluationRecord t2 = s0;
        t2.turn = 2;
        QVERIFY(selectOutcome({t2, s0}, &chosen));
        QCOMPARE(chosen, 1);
    }

    void sweepCurve()
    {
        // A sweep of the agent over 3 tasks at n = 1, 2, 4 (one run each, every turn), and a run of
        // another sweep. Each point counts like any run: the selected candidate per task, every
        // task in the denominator (L3/1 never got an answer at n = 1).
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("sweep.sqlite"))));
        const QStringList tasks{QStringLiteral("L1/1"), QStringLiteral("L2/1"), QStringLiteral("L3/1")};
        const auto sweepRun = [&](int n, const QString& id) {
            return store
                .createRun(QStringLiteral("agent sweep n=%1").arg(n), QStringLiteral("agent"),
                           runConfig(
                               QStringLiteral("agent"), tasks, {}, [n](Regime& r) { r.n = n; }, id))
                .value_or(0);
        };
        const qint64 n4 = sweepRun(4, QStringLiteral("s1")); // stored first: the curve orders by n
        const qint64 n1 = sweepRun(1, QStringLiteral("s1"));
        const qint64 n2 = sweepRun(2, QStringLiteral("s1"));
        const qint64 other = sweepRun(2, QStringLiteral("s2"));
        // n = 1: L1/1 a compile error at turns 1-3 (not compiled), L2/1 incorrect then correct at
        // turn 2 (compiled), L3/1 no answer: 1 of 3 correct, 1 of 3 compiled.
        for (int t = 1; t <= 3; ++t)
            addSample(store, n1, QStringLiteral("L1/1"), t, 0, QStringLiteral("compile_error"));
        addSample(store, n1, QStringLiteral("L2/1"), 1, 0, QStringLiteral("incorrect"));
        addSample(store, n1, QStringLiteral("L2/1"), 2, 0, QStringLiteral("correct"));
        // n = 2: L1/1 sample 1 correct at turn 1; L2/1 correct at turn 2; L3/1 incorrect (compiled).
        addSample(store, n2, QStringLiteral("L1/1"), 1, 0, QStringLiteral("compile_error"));
        addSample(store, n2, QStringLiteral("L1/1"), 1, 1, QStringLiteral("correct"));
        addSample(store, n2, QStringLiteral("L2/1"), 1, 0, QStringLiteral("incorrect"));
        addSample(store, n2, QStringLiteral("L2/1"), 2, 1, QStringLiteral("correct"));
        addSample(store, n2, QStringLiteral("L3/1"), 1, 0, QStringLiteral("incorrect"));
        // n = 4: all three correct.
        for (const QString& task : tasks)
            addSample(store, n4, task, 1, 3, QStringLiteral("correct"));
        addSample(store, other, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"));

        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        QCOMPARE(r->sweeps.size(), 2);
        const SweepCurve& curve = r->sweeps.first();
        QCOMPARE(curve.id, QStringLiteral("s1"));
        QCOMPARE(curve.regime, QStringLiteral("agent"));
        QCOMPARE(curve.points.size(), 3);
        QCOMPARE(curve.points[0].n, 1);
        QCOMPARE(curve.points[0].run, n1);
        QCOMPARE(curve.points[1].n, 2);
        QCOMPARE(curve.points[2].n, 4);
        QCOMPARE(curve.points[2].run, n4);
        // By hand: n = 1: 1/3 correct (33.3 %), 1/3 compiled; n = 2: 2/3 correct, 3/3 compiled;
        // n = 4: 3/3 and 3/3.
        QCOMPARE(curve.points[0].overall.tasks, 3);
        QCOMPARE(curve.points[0].overall.correct, 1);
        QCOMPARE(curve.points[0].overall.compiled, 1);
        QCOMPARE(curve.points[1].overall.correct, 2);
        QCOMPARE(curve.points[1].overall.compiled, 3);
        QCOMPARE(curve.points[2].overall.correct, 3);
        QCOMPARE(curve.points[0].perLevel.value(3).tasks, 1);
        QCOMPARE(curve.points[0].perLevel.value(3).correct, 0);
        QCOMPARE(curve.points[1].perLevel.value(1).correct, 1);
        QCOMPARE(r->sweeps[1].points.size(), 1);

        const QString md = reportMarkdown(*r);
        QVERIFY(md.contains(QStringLiteral("## Best-of-n (the study's: the whole regime at each n, paired seeds)")));
        QVERIFY2(md.contains(QStringLiteral("| agent s1 | all | 1 | #%1 | 3 | 1 | 33.3 % [").arg(n1)), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("| agent s1 | all | 2 | #%1 | 3 | 2 | 66.7 % [").arg(n2)), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("| agent s1 | L3 | 1 | #%1 | 1 | 0 | 0.0 % [").arg(n1)), qPrintable(md));
        const QString csv = reportCsv(*r);
        QVERIFY2(csv.contains(QStringLiteral("best_of_n,%1,,all,n,2,,\r\n").arg(n2)), qPrintable(csv));
        QVERIFY2(csv.contains(QStringLiteral("best_of_n,%1,,all,compiled_pct,100,").arg(n2)), qPrintable(csv));
        const QJsonArray sweeps = reportJson(*r).value(QLatin1String("best_of_n")).toArray();
        QCOMPARE(sweeps.size(), 2);
        const QJsonArray points = sweeps[0].toObject().value(QLatin1String("points")).toArray();
        QCOMPARE(points.size(), 3);
        QCOMPARE(points[1].toObject().value(QLatin1String("n")).toInt(), 2);
        QCOMPARE(
            points[1].toObject().value(QLatin1String("overall")).toObject().value(QLatin1String("correct")).toInt(), 2);
        // A sweep run is no main regime run: no routing from three sweep runs of one regime.
        QVERIFY(!isMainRegimeRun(*store.run(n4)));
        QVERIFY(!r->routing);
    }

    void ablationBaselineMatchesSettings()
    {
        // Decoys stored before the real baseline, each of which the old rule ("any unablated run of
        // the same regime") would have taken: an `--n 1` agent run, a sweep run at n = 4, an
        // agent run over other tasks, one at another temperature, one under another profile.
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("pairing.sqlite"))));
        const QStringList tasks{QStringLiteral("L1/1"), QStringLiteral("L2/1")};
        const auto make = [&](const char* name, const QJsonObject& config) {
            return store.createRun(QString::fromLatin1(name), QStringLiteral("agent"), config).value_or(0);
        };
        const qint64 nOne =
            make("agent --n 1", runConfig(QStringLiteral("agent"), tasks, {}, [](Regime& r) { r.n = 1; }));
        const qint64 sweep =
            make("agent sweep n=4", runConfig(QStringLiteral("agent"), tasks, {}, {}, QStringLiteral("s")));
        const qint64 otherTasks = make("agent L1:1", runConfig(QStringLiteral("agent"), {QStringLiteral("L1/1")}));
        const qint64 hot =
            make("agent T=1", runConfig(QStringLiteral("agent"), tasks, {}, [](Regime& r) { r.temperature = 1.0; }));
        const qint64 fp16 = make("agent other profile", runConfig(QStringLiteral("agent"), tasks, {}, {}, QString(),
                                                                  QStringLiteral("other-profile")));
        // Issue 36: another model, the KernelBench answer format, another wording of a template the
        // ablation also used; and (below) an ablation that leaves a template out still pairs.
        const auto with = [&](const QString& key, const QJsonValue& value) {
            QJsonObject c = runConfig(QStringLiteral("agent"), tasks);
            c.insert(key, value);
            return c;
        };
        const auto wording = [](const QString& text) {
            return QJsonObject{
                {QStringLiteral("agent/generator"), QJsonObject{{QStringLiteral("text"), text}}},
                {QStringLiteral("agent/triager"), QJsonObject{{QStringLiteral("text"), QStringLiteral("triage")}}}};
        };
        const qint64 otherModel = make("agent other model", with(QStringLiteral("model"), QStringLiteral("other-7b")));
        const qint64 kbFormat =
            make("agent kernelbench format", with(QStringLiteral("answer_format"), QStringLiteral("kernelbench")));
        const qint64 otherWording =
            make("agent other wording", with(QStringLiteral("templates"), wording(QStringLiteral("v2"))));
        QJsonObject fullConfig = runConfig(QStringLiteral("agent"), tasks);
        fullConfig.insert(QStringLiteral("templates"), wording(QStringLiteral("v1")));
        const qint64 full = make("agent", fullConfig);
        QJsonObject noBestOfNConfig = runConfig(QStringLiteral("agent"), tasks, {QStringLiteral("best_of_n")});
        noBestOfNConfig.insert(QStringLiteral("templates"),
                               QJsonObject{{QStringLiteral("agent/generator"),
                                            QJsonObject{{QStringLiteral("text"), QStringLiteral("v1")}}}});
        const qint64 noBestOfN = make("agent -best_of_n", noBestOfNConfig);
        QJsonObject noMonotoneConfig = runConfig(QStringLiteral("agent"), tasks, {QStringLiteral("monotone")});
        noMonotoneConfig.insert(QStringLiteral("templates"), wording(QStringLiteral("v1")));
        const qint64 noMonotone = make("agent -monotone", noMonotoneConfig);
        // No run matches this one: the agent at 3 turns over L3/1 only.
        const qint64 orphan = make("agent -monotone L3/1", runConfig(QStringLiteral("agent"), {QStringLiteral("L3/1")},
                                                                     {QStringLiteral("monotone")}));
        // full: L1/1 correct, L2/1 incorrect; -best_of_n: neither; -monotone: both.
        addSample(store, full, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"));
        addSample(store, full, QStringLiteral("L2/1"), 1, 0, QStringLiteral("incorrect"));
        addSample(store, noBestOfN, QStringLiteral("L1/1"), 1, 0, QStringLiteral("incorrect"));
        addSample(store, noMonotone, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"));
        addSample(store, noMonotone, QStringLiteral("L2/1"), 1, 0, QStringLiteral("correct"));
        for (qint64 decoy : {nOne, sweep, otherTasks, hot, fp16, otherModel, kbFormat, otherWording})
            addSample(store, decoy, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"));

        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        QCOMPARE(r->ablations.size(), 3);
        QCOMPARE(r->ablations[0].run, noBestOfN);
        QCOMPARE(r->ablations[0].baseline, full); // not the --n 1 run, though its n is 1 too
        QVERIFY(r->ablations[0].comparison);
        QCOMPARE(r->ablations[0].comparison->tasks, 2);
        QCOMPARE(r->ablations[0].comparison->onlyB, 1); // L1/1
        QCOMPARE(r->ablations[1].run, noMonotone);
        QCOMPARE(r->ablations[1].baseline, full);
        QCOMPARE(r->ablations[1].comparison->onlyA, 1); // L2/1
        QCOMPARE(r->ablations[2].run, orphan);
        QCOMPARE(r->ablations[2].baseline, 0);
        QVERIFY(!r->ablations[2].comparison);
        QVERIFY2(r->ablations[2].note.contains(QStringLiteral("no baseline: no run without ablation of agent with the "
                                                              "same tasks, n = 4, 3 turn(s), temperature 0.7")),
                 qPrintable(r->ablations[2].note));
        QCOMPARE(ablationBaselineKey(*store.run(noBestOfN)), ablationBaselineKey(*store.run(full)));
        QVERIFY(ablationBaselineKey(*store.run(otherModel)) != ablationBaselineKey(*store.run(full)));
        QVERIFY(ablationBaselineKey(*store.run(kbFormat)) != ablationBaselineKey(*store.run(full)));
        QCOMPARE(ablationBaselineKey(*store.run(otherWording)),
                 ablationBaselineKey(*store.run(full))); // the wording is compared pairwise
        QVERIFY(ablationBaselineKey(*store.run(nOne)) != ablationBaselineKey(*store.run(full)));
        const QJsonArray ablations = reportJson(*r).value(QLatin1String("ablations")).toArray();
        QCOMPARE(ablations[0].toObject().value(QLatin1String("baseline")).toInteger(), full);
        QVERIFY(ablations[2].toObject().value(QLatin1String("baseline")).isNull());
        QVERIFY(
            ablations[2].toObject().value(QLatin1String("note")).toString().startsWith(QLatin1String("no baseline")));
        const QString md = reportMarkdown(*r);
        QVERIFY2(md.contains(
                     QStringLiteral("| #%1 agent −best_of_n | best_of_n | #%2 agent | 2 |").arg(noBestOfN).arg(full)),
                 qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("| #%1 agent −monotone | monotone | no baseline |").arg(orphan)),
                 qPrintable(md));
    }

    void routingUsesMainRegimeRuns()
    {
        // The study's rule over main regime runs only. L1: guided 2/2 beats zero-shot 1/2; L2: the
        // agent 1/1. A sweep run, an ablated agent and the pilot solve L2 and more, and an agent
        // at n = 1 solves all of L1: none of them may be chosen. Estimate: (2 + 1) / 3 = 100 %.
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("routing.sqlite"))));
        const QStringList tasks{QStringLiteral("L1/1"), QStringLiteral("L1/2"), QStringLiteral("L2/1")};
        const auto make = [&](const char* regime, const QJsonObject& config) {
            return store.createRun(QString::fromLatin1(regime), QString::fromLatin1(regime), config).value_or(0);
        };
        const qint64 zero = make("zero-shot", runConfig(QStringLiteral("zero-shot"), tasks));
        const qint64 guided = make("profiling-guided", runConfig(QStringLiteral("profiling-guided"), tasks));
        const qint64 agent = make("agent", runConfig(QStringLiteral("agent"), tasks));
        const qint64 sweep = make("agent", runConfig(QStringLiteral("agent"), tasks, {}, {}, QStringLiteral("s")));
        const qint64 ablated = make("agent", runConfig(QStringLiteral("agent"), tasks, {QStringLiteral("monotone")}));
        const qint64 pilot = make("pilot-v1", runConfig(QStringLiteral("pilot-v1"), tasks));
        const qint64 nOne = make("agent", runConfig(QStringLiteral("agent"), tasks, {}, [](Regime& r) { r.n = 1; }));
        addSample(store, zero, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"));
        addSample(store, zero, QStringLiteral("L1/2"), 1, 0, QStringLiteral("incorrect"));
        addSample(store, guided, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"));
        addSample(store, guided, QStringLiteral("L1/2"), 1, 0, QStringLiteral("correct"));
        addSample(store, agent, QStringLiteral("L2/1"), 1, 0, QStringLiteral("correct"));
        for (qint64 run : {sweep, ablated, pilot, nOne})
            for (const QString& task : tasks)
                addSample(store, run, task, 1, 0, QStringLiteral("correct"));
        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        QVERIFY(r->routing);
        QCOMPARE(r->routing->candidates, (QList<qint64>{zero, guided, agent}));
        QCOMPARE(r->routing->leftOut, (QList<qint64>{sweep, ablated, pilot, nOne}));
        QCOMPARE(r->routing->runForLevel.value(1), guided);
        QCOMPARE(r->routing->runForLevel.value(2), agent);
        QCOMPARE(r->routing->estimate.combined.tasks, 3);
        QCOMPARE(r->routing->estimate.combined.correct, 3);
        const QString md = reportMarkdown(*r);
        QVERIFY2(
            md.contains(QStringLiteral("Runs used: #%1 zero-shot, #%2 profiling-guided, #%3 agent. Left out: #%4 agent")
                            .arg(zero)
                            .arg(guided)
                            .arg(agent)
                            .arg(sweep)),
            qPrintable(md));
        const QJsonObject routing = reportJson(*r).value(QLatin1String("routing")).toObject();
        QCOMPARE(routing.value(QLatin1String("runs_used")).toArray().size(), 3);
        QCOMPARE(routing.value(QLatin1String("runs_left_out")).toArray().size(), 4);
        QVERIFY(reportCsv(*r).contains(QStringLiteral("routing,%1,,all,candidate,0,,").arg(sweep)));
    }

    void ablationsAndBestOfN()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("ablation.sqlite"))));
        // The regimes as `kwb run` stores them: the built-in one with the switches applied.
        const auto regime = [](const char* name, const QStringList& off) {
            return QJsonObject{
                {QStringLiteral("regime"),
                 Regime::builtin(QString::fromLatin1(name))->withAblations(Ablations::fromOffNames(off)).toJson()}};
        };
        const qint64 full =
            store.createRun(QStringLiteral("full"), QStringLiteral("agent"), regime("agent", {})).value_or(0);
        const qint64 noBestOfN = store
                                     .createRun(QStringLiteral("-best_of_n"), QStringLiteral("agent"),
                                                regime("agent", {QStringLiteral("best_of_n")}))
                                     .value_or(0);
        const qint64 orphan = store
                                  .createRun(QStringLiteral("-monotone"), QStringLiteral("iterative"),
                                             regime("iterative", {QStringLiteral("monotone")}))
                                  .value_or(0);
        const auto add = [&](qint64 run, const QString& task, int sample, bool correct) {
            PromptRecord prompt{0, run, task, 1, sample, QStringLiteral("generator"), QStringLiteral("p"), QString()};
            const qint64 promptId = store.addPrompt(prompt).value_or(0);
            ResponseRecord response;
            response.promptId = promptId;
            response.text = QStringLiteral("answer");
            const qint64 responseId = store.addResponse(response).value_or(0);
            CandidateRecord candidate;
            candidate.responseId = responseId;
            candidate.task = task;
            candidate.turn = 1;
            candidate.sample = sample;
            candidate.parsedOk = true;
            const qint64 candidateId = store.addCandidate(candidate).value_or(0);
            QVERIFY(store.addEvaluation(candidateId,
                                        QJsonObject{{QStringLiteral("status"),
                                                     correct ? QStringLiteral("correct") : QStringLiteral("incorrect")},
                                                    {QStringLiteral("speedup"), 1.0}}));
        };
        // full: L1/1 1 of 4 correct, L1/2 0 of 4, L2/1 2 of 4.
        const QList<QPair<QString, QList<bool>>> samples = {{QStringLiteral("L1/1"), {true, false, false, false}},
                                                            {QStringLiteral("L1/2"), {false, false, false, false}},
                                                            {QStringLiteral("L2/1"), {true, true, false, false}}};
        for (const auto& [task, correct] : samples)
            for (int i = 0; i < correct.size(); ++i)
                add(full, task, i, correct[i]);
        // -best_of_n: one sample each; only L2/1 correct. The orphan has no full run of its regime.
        add(noBestOfN, QStringLiteral("L1/1"), 0, false);
        add(noBestOfN, QStringLiteral("L1/2"), 0, false);
        add(noBestOfN, QStringLiteral("L2/1"), 0, true);
        add(orphan, QStringLiteral("L1/1"), 0, true);

        QString error;
        const std::optional<Report> r = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(r, qPrintable(error));
        QCOMPARE(r->runs.size(), 3);

        // pass@n = 1 - C(k-c, n)/C(k, n): L1/1 (c=1): .25, .5, 1; L1/2: 0, 0, 0; L2/1 (c=2): .5, 5/6, 1.
        const std::optional<FirstTurnPassAtN>& curve = r->runs[0].firstTurnPassAtN;
        QVERIFY(curve);
        QCOMPARE(curve->samples, 4);
        QCOMPARE(curve->overall.size(), 3);
        QCOMPARE(curve->overall[0].n, 1);
        QCOMPARE(curve->overall[2].n, 4);
        QVERIFY(qAbs(curve->overall[0].passPct.value - 25.0) < 1e-9);
        QVERIFY(qAbs(curve->overall[1].passPct.value - 100.0 * (0.5 + 5.0 / 6.0) / 3.0) < 1e-9);
        QVERIFY(qAbs(curve->overall[2].passPct.value - 200.0 / 3.0) < 1e-9);
        QVERIFY(qAbs(curve->perLevel.value(1)[1].passPct.value - 25.0) < 1e-9);
        QVERIFY(qAbs(curve->perLevel.value(2)[0].passPct.value - 50.0) < 1e-9);
        QVERIFY(!r->runs[1].firstTurnPassAtN); // one sample per task: no curve

        QCOMPARE(r->runs[1].ablated, QStringList{QStringLiteral("best_of_n")});
        QCOMPARE(r->ablations.size(), 2);
        const AblationRow& row = r->ablations[0];
        QCOMPARE(row.run, noBestOfN);
        QCOMPARE(row.baseline, full);
        QVERIFY(row.comparison);
        QCOMPARE(row.comparison->tasks, 3);
        QCOMPARE(row.comparison->onlyB, 1); // L1/1: solved by the full run's samples only
        QCOMPARE(row.comparison->onlyA, 0);
        QVERIFY(qAbs(row.comparison->differencePct.value - (-100.0 / 3.0)) < 1e-9);
        QCOMPARE(r->ablations[1].run, orphan);
        QCOMPARE(r->ablations[1].baseline, 0);
        QVERIFY(!r->ablations[1].comparison);

        const QString md = reportMarkdown(*r);
        QVERIFY(md.contains(QStringLiteral("## Ablations")));
        QVERIFY(md.contains(QStringLiteral("| #2 agent −best_of_n | best_of_n | #1 agent | 3 |")));
        QVERIFY(md.contains(QStringLiteral("no baseline")));
        QVERIFY2(md.contains(QStringLiteral(
                     "#3 iterative −monotone: no baseline: no run without ablation of iterative with the "
                     "same tasks, n = 1, 3 turn(s), temperature 0, profile unset")),
                 qPrintable(md));
        // The first-turn estimate goes by its own name, and is no "Best-of-n" table (no sweep here).
        QVERIFY(md.contains(QStringLiteral("## First-turn pass@n (unbiased estimator)")));
        QVERIFY(!md.contains(QStringLiteral("## Best-of-n")));
        QVERIFY(md.contains(QStringLiteral("| #1 agent | all | 4 | 3 | 0 | 66.7 % [")));
        const QString csv = reportCsv(*r);
        QVERIFY(csv.contains(QStringLiteral("ablation,2,1,all,difference_pct,-33.3")));
        QVERIFY(csv.contains(QStringLiteral("first_turn_pass_at_n,1,,all,correct_pct_n1,25")));
        QVERIFY(!csv.contains(QStringLiteral("\nbest_of_n,")));
        const QJsonObject json = reportJson(*r);
        QCOMPARE(json.value(QStringLiteral("ablations")).toArray().size(), 2);
        QCOMPARE(json.value(QStringLiteral("runs"))
                     .toArray()[0]
                     .toObject()
                     .value(QStringLiteral("first_turn_pass_at_n"))
                     .toObject()
                     .value(QStringLiteral("samples"))
                     .toInt(),
                 4);
        QVERIFY(json.value(QStringLiteral("best_of_n")).toArray().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestReport)
#include "tst_report.moc"
