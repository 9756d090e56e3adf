// The store scans behind the window's charts (src/app/workbenchdata.h), on windowfixture.h's
// database, numbers by hand.

#include "app/workbenchdata.h"
#include "windowfixture.h"

#include "app/analysispages.h"
#include "app/runs/reporttables.h"
#include "app/runs/runtreemodel.h"
#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/run/runname.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;
using namespace kwb::app;

namespace {

QJsonObject recorded(const QString& file, const QString& task)
{
    QFile f(QStringLiteral(KWB_TASKS_TEST_DATA "/") + file);
    f.open(QIODevice::ReadOnly);
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
    const QJsonArray list = doc.isArray() ? doc.array() : doc.object().value(QStringLiteral("tasks")).toArray();
    for (const QJsonValue& v : list) {
        const QJsonObject o = v.toObject();
        if (o.value(QStringLiteral("task")).toString() == task || o.value(QStringLiteral("id")).toString() == task)
            return o;
    }
    return {};
}

TaskInfo analysedTask(const QString& id)
{
    TaskInfo t = TaskInfo::fromJson(recorded(QStringLiteral("tasks.json"), id));
    t.analysisJson = recorded(QStringLiteral("analyze.json"), id);
    t.analysis = decodeAnalyze(t.analysisJson);
    t.analysisState = TaskInfo::Analysis::Done;
    return t;
}

} // namespace

class TestWorkbenchData : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    RunStore m_store;
    kwb::test::WindowFixture m_fixture;

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_store.open(m_dir.filePath(QStringLiteral("runs.db"))));
        m_fixture = kwb::test::writeWindowFixture(m_store);
    }

    void taskTimes()
    {
        const QHash<QString, TaskTimes> times = taskTimesFromStore(m_store, QStringLiteral("NVIDIA H200"));
        QCOMPARE(times.size(), 2);
        const TaskTimes l11 = times.value(QStringLiteral("L1/1"));
        QCOMPARE(l11.eagerMs, 2.67); // the latest evaluation that timed the reference
        QVERIFY(l11.bestCandidateMs);
        QCOMPARE(*l11.bestCandidateMs, 2.65); // the fastest correct one, whatever its run
        QVERIFY(!l11.bestCandidateCustom);
        QCOMPARE(l11.bestLabel, QStringLiteral("#2 agent, turn 1, sample 3"));
        const TaskTimes l21 = times.value(QStringLiteral("L2/1"));
        QCOMPARE(l21.eagerMs, 9.10); // sample 2's: sample 3 is incorrect, so not timed
        QCOMPARE(*l21.bestCandidateMs, 8.51);
        QVERIFY(l21.bestCandidateCustom);
        QVERIFY(taskTimesFromStore(m_store, QStringLiteral("Tesla V100")).isEmpty());
        QCOMPARE(taskTimesFromStore(m_store).size(), 2);
    }

    void runDevice()
    {
        QCOMPARE(latestRunDevice(m_store).name, QStringLiteral("NVIDIA H200"));
        QTemporaryDir dir;
        RunStore empty;
        QVERIFY(empty.open(dir.filePath(QStringLiteral("e.db"))));
        QVERIFY(latestRunDevice(empty).raw.isEmpty());
    }

    void roofline()
    {
        const QList<TaskInfo> tasks = {analysedTask(QStringLiteral("L1/1")), analysedTask(QStringLiteral("L2/1")),
                                       analysedTask(QStringLiteral("L1/4"))}; // L1/4: no times, left out
        QVERIFY(tasks[1].hasAnalysis());
        const QList<RooflinePoint> points = rooflinePoints(tasks, taskTimesFromStore(m_store));
        QCOMPARE(points.size(), 2);
        const QJsonObject a = tasks[1].analysisJson;
        const RooflinePoint& p = points[1];
        QCOMPARE(p.task, QStringLiteral("L2/1"));
        QCOMPARE(p.level, 2);
        QCOMPARE(p.intensity, a.value(QStringLiteral("intensity_unfused")).toDouble());
        QVERIFY(qAbs(p.referenceGflops - a.value(QStringLiteral("flops")).toDouble() / 9.10e-3 / 1e9) < 1e-6);
        QVERIFY(p.candidateGflops);
        QVERIFY(qAbs(*p.candidateGflops - a.value(QStringLiteral("flops")).toDouble() / 8.51e-3 / 1e9) < 1e-6);
        // It launched kernels of its own: drawn at the fused intensity.
        QCOMPARE(*p.candidateIntensity, a.value(QStringLiteral("intensity_fused")).toDouble());
        QVERIFY(!points[0].candidateIntensity); // torch only: same intensity
        QVERIFY(p.detail.contains(QStringLiteral("best candidate 8.510 ms")));
        // Its own evaluation's speed-up, with the interval, as everywhere a speed-up is shown.
        QVERIFY2(p.detail.contains(QStringLiteral("speed-up 1.07\u00D7 [1.07\u20131.08] in its evaluation")),
                 qPrintable(p.detail));
    }

    // The roofline's inputs: the GPU the times come from, the traffic model a candidate's
    // kernels imply, and a faster candidate below the roofline floor kept apart with its reason
    // (never the best).
    void notCountedAndBasis()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("n.db"))));
        const QJsonObject config{
            {QStringLiteral("gpu"), kwb::test::h200Device()},
            {QStringLiteral("regime"), QJsonObject{{QStringLiteral("name"), QStringLiteral("agent")},
                                                   {QStringLiteral("n"), 2},
                                                   {QStringLiteral("ablated"), QJsonArray()}}}};
        const qint64 run = store.createRun(QStringLiteral("agent"), QStringLiteral("agent"), config).value_or(0);
        const QJsonArray kernels{QJsonObject{{QStringLiteral("name"), QStringLiteral("sm90_xmma_fprop")},
                                             {QStringLiteral("calls"), 1},
                                             {QStringLiteral("time_ns"), 8e6},
                                             {QStringLiteral("custom"), false}},
                                 QJsonObject{{QStringLiteral("name"), QStringLiteral("bias_relu")},
                                             {QStringLiteral("calls"), 1},
                                             {QStringLiteral("time_ns"), 5e5},
                                             {QStringLiteral("custom"), true}}};
        kwb::test::addCandidate(store, run, QStringLiteral("L2/1"), 1, 0, QStringLiteral("correct"), 9.11, 8.51, 1,
                                QStringLiteral("k"), QJsonObject{{QStringLiteral("kernels"), kernels}});
        kwb::test::addCandidate(
            store, run, QStringLiteral("L2/1"), 1, 1, QStringLiteral("correct"), 9.11, 0.40, 1, QStringLiteral("k"),
            QJsonObject{{QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor")}},
                        {QStringLiteral("roofline"), QJsonObject{{QStringLiteral("floor_ms"), 4.5},
                                                                 {QStringLiteral("candidate_ms"), 0.40},
                                                                 {QStringLiteral("margin"), 0.1}}}});
        const QHash<QString, TaskTimes> times = taskTimesFromStore(store);
        const TaskTimes& t = times.value(QStringLiteral("L2/1"));
        QCOMPARE(*t.bestCandidateMs, 8.51); // not the impossible 0.40 ms
        QCOMPARE(t.bestBasis, IntensityBasis::LibraryEpilogue);
        QCOMPARE(*t.notCountedMs, 0.40);
        QVERIFY2(t.notCountedWhy.contains(QLatin1String("measured 0.4 ms is below the roofline floor 4.5 ms")),
                 qPrintable(t.notCountedWhy));
        QCOMPARE(t.gpuName, decodeDeviceFacts(kwb::test::h200Device()).name);

        const QList<RooflinePoint> points = rooflinePoints({analysedTask(QStringLiteral("L2/1"))}, times);
        QCOMPARE(points.size(), 1);
        const RooflinePoint& p = points.first();
        QCOMPARE(p.measuredOn, t.gpuName);
        QCOMPARE(p.candidateBasis, IntensityBasis::LibraryEpilogue);
        const TrafficModel model = trafficModel(analysedTask(QStringLiteral("L2/1")).analysis);
        QCOMPARE(*p.candidateIntensity, model.intensity(IntensityBasis::LibraryEpilogue));
        QVERIFY(p.notCountedGflops && *p.notCountedGflops > *p.candidateGflops);
    }

    // Issue 15: the best candidate's traffic profile (stored with its evaluation) gives the
    // measured intensity FLOPs / measured bytes; a best candidate without one has none.
    void measuredTrafficOfTheBestCandidate()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("t.db"))));
        const QJsonObject config{
            {QStringLiteral("gpu"), kwb::test::h200Device()},
            {QStringLiteral("regime"), QJsonObject{{QStringLiteral("name"), QStringLiteral("agent")},
                                                   {QStringLiteral("n"), 2},
                                                   {QStringLiteral("ablated"), QJsonArray()}}}};
        const qint64 run = store.createRun(QStringLiteral("agent"), QStringLiteral("agent"), config).value_or(0);
        const QJsonArray own{QJsonObject{{QStringLiteral("name"), QStringLiteral("fused")},
                                         {QStringLiteral("calls"), 1},
                                         {QStringLiteral("time_ns"), 5e5},
                                         {QStringLiteral("custom"), true}}};
        const double bytes = 2.5e9;
        kwb::test::addCandidate(
            store, run, QStringLiteral("L2/1"), 1, 0, QStringLiteral("correct"), 9.11, 8.51, 1, QStringLiteral("k"),
            QJsonObject{{QStringLiteral("kernels"), own},
                        {QLatin1String(kTrafficKey), QJsonObject{{QStringLiteral("profiled"), true},
                                                                 {QStringLiteral("dram_bytes"), bytes},
                                                                 {QStringLiteral("kernels"), 1}}}});
        kwb::test::addCandidate(
            store, run, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"), 2.67, 2.60, 1, QStringLiteral("k"),
            QJsonObject{{QStringLiteral("kernels"), own},
                        {QLatin1String(kTrafficKey),
                         QJsonObject{{QStringLiteral("profiled"), false},
                                     {QStringLiteral("reason"), QStringLiteral("no permission")}}}});
        const QHash<QString, TaskTimes> times = taskTimesFromStore(store);
        QCOMPARE(times.value(QStringLiteral("L2/1")).bestDramBytes.value_or(0), bytes);
        QVERIFY(!times.value(QStringLiteral("L1/1")).bestDramBytes);

        const TaskInfo l21 = analysedTask(QStringLiteral("L2/1")), l11 = analysedTask(QStringLiteral("L1/1"));
        const QList<RooflinePoint> points = rooflinePoints({l11, l21}, times);
        QCOMPARE(points.size(), 2);
        const RooflinePoint& measured = points[1];
        const double flops = trafficModel(l21.analysis).flops;
        QCOMPARE(measured.candidateMeasuredBytes.value_or(0), bytes);
        QVERIFY(qAbs(measured.candidateMeasuredIntensity.value_or(0) - flops / bytes) < 1e-9 * flops / bytes);
        QCOMPARE(measured.candidatePlacement(true).basis, IntensityBasis::Measured);
        QCOMPARE(measured.candidatePlacement(false).basis, IntensityBasis::OneKernel); // analytic elsewhere
        const RooflinePoint& analytic = points[0];
        QVERIFY(!analytic.candidateMeasuredIntensity);
        QVERIFY(analytic.candidatePlacement(true).basis != IntensityBasis::Measured);
        // Issue 40: its one kernel did the whole task, placed by the measured bytes at its own
        // traced time; without a profile by the one-kernel model.
        QCOMPARE(measured.kernels.size(), 1);
        QCOMPARE(measured.kernels[0].label, QStringLiteral("fused"));
        QCOMPARE(measured.kernels[0].basis, IntensityBasis::Measured);
        QVERIFY(qAbs(measured.kernels[0].intensity - flops / bytes) < 1e-9 * flops / bytes);
        QVERIFY(qAbs(measured.kernels[0].gflops - flops / 5e5) < 1e-9 * flops / 5e5);
        QCOMPARE(analytic.kernels.size(), 1);
        QCOMPARE(analytic.kernels[0].basis, IntensityBasis::OneKernel);
    }

    void candidates()
    {
        const QList<CandidateEntry> entries = candidatesOfTask(m_store, QStringLiteral("L2/1"));
        QCOMPARE(entries.size(), 5);
        QCOMPARE(entries[0].runId, m_fixture.zeroShot);
        QCOMPARE(entries[0].label(), QStringLiteral("#1 zero-shot · turn 1 · sample 0 · compile_error"));
        QCOMPARE(entries[2].label(), QStringLiteral("#2 agent · turn 1 · sample 1 · correct 1.07× [1.07–1.08]"));
        QVERIFY(m_store.candidate(entries[2].candidate.candidateId)->cuda.contains(QStringLiteral("fmaxf")));
        QVERIFY(candidatesOfTask(m_store, QStringLiteral("L3/1")).isEmpty());

        // Correct by its status but faster than the roofline floor: the label shows no speed-up.
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("floor.db"))));
        const qint64 run =
            store.createRun(QStringLiteral("zero-shot"), QStringLiteral("zero-shot"), QJsonObject{}).value_or(0);
        kwb::test::addCandidate(
            store, run, QStringLiteral("L2/1"), 1, 0, QStringLiteral("correct"), 9.11, 0.44, 1, QStringLiteral("k"),
            QJsonObject{{QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor")}}});
        const QList<CandidateEntry> cheat = candidatesOfTask(store, QStringLiteral("L2/1"));
        QCOMPARE(cheat.size(), 1);
        QVERIFY2(cheat[0].label().endsWith(QStringLiteral("correct (not counted: below the roofline floor)")),
                 qPrintable(cheat[0].label()));
    }

    void bestOfN()
    {
        QString error;
        const std::optional<Report> report = buildReport(m_store, {}, ReportOptions{}, &error);
        QVERIFY2(report, qPrintable(error));
        const QList<BestOfNSeries> series = bestOfNSeries(*report);
        QCOMPARE(series.size(), 3); // the agent run: all levels, L1, L2; zero-shot has one sample
        QCOMPARE(series[0].label, QStringLiteral("#2 agent: first-turn pass@n"));
        QCOMPARE(series[0].kind, BestOfNKind::FirstTurnPassAtN);
        QCOMPARE(series[0].level, 0);
        QCOMPARE(series[0].points.size(), 3); // n = 1, 2, 4
        // L1/1: 2 of 4 correct, L2/1: 2 of 4: pass@1 = 50 %.
        QVERIFY(qAbs(series[0].points[0].passPct.value - 50.0) < 1e-9);
        QVERIFY(qAbs(series[0].points[2].passPct.value - 100.0) < 1e-9);
    }

    // Issue 36 item 6: the page plots the study's best-of-n from a sweep (each n's run of the whole
    // regime, its correct % as core's SweepCurve and kwb report give it), then first-turn pass@n
    // as a second, labelled curve: of a sweep, only its run with the largest n.
    void bestOfNPlotsTheSweepsCurve()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("sweep.db"))));
        const QStringList tasks{QStringLiteral("L1/1"), QStringLiteral("L2/1"), QStringLiteral("L2/2")};
        const auto sweepRun = [&](int n) {
            Regime regime = *Regime::builtin(QStringLiteral("agent"));
            regime.n = n;
            const QJsonObject config{{QStringLiteral("gpu"), kwb::test::h200Device()},
                                     {QStringLiteral("regime"), regime.toJson()},
                                     {QStringLiteral("tasks"), QJsonArray::fromStringList(tasks)},
                                     {QStringLiteral("sweep"), QJsonObject{{QStringLiteral("id"), QStringLiteral("s1")},
                                                                           {QStringLiteral("ns"), QJsonArray{1, 2, 4}},
                                                                           {QStringLiteral("n"), n}}}};
            return store.createRun(QStringLiteral("agent sweep n=%1").arg(n), QStringLiteral("agent"), config)
                .value_or(0);
        };
        const qint64 n1 = sweepRun(1), n2 = sweepRun(2), n4 = sweepRun(4);
        using kwb::test::addCandidate;
        const QString k = QStringLiteral("extern \"C\" __global__ void k() {}");
        // n = 1: L1/1 correct only at turn 3 (every turn counts); L2/1 and L2/2 incorrect: 1 of 3.
        addCandidate(store, n1, QStringLiteral("L1/1"), 1, 0, QStringLiteral("incorrect"), 2.0, 2.0, 1, k);
        addCandidate(store, n1, QStringLiteral("L1/1"), 3, 0, QStringLiteral("correct"), 2.0, 1.9, 1, k);
        addCandidate(store, n1, QStringLiteral("L2/1"), 1, 0, QStringLiteral("incorrect"), 2.0, 2.0, 1, k);
        addCandidate(store, n1, QStringLiteral("L2/2"), 1, 0, QStringLiteral("incorrect"), 2.0, 2.0, 1, k);
        // n = 2: L1/1 and L2/1 correct (L2/1 at turn 2), L2/2 incorrect: 2 of 3.
        addCandidate(store, n2, QStringLiteral("L1/1"), 1, 1, QStringLiteral("correct"), 2.0, 1.9, 1, k);
        addCandidate(store, n2, QStringLiteral("L2/1"), 1, 0, QStringLiteral("incorrect"), 2.0, 2.0, 1, k);
        addCandidate(store, n2, QStringLiteral("L2/1"), 2, 1, QStringLiteral("correct"), 2.0, 1.9, 1, k);
        addCandidate(store, n2, QStringLiteral("L2/2"), 1, 0, QStringLiteral("incorrect"), 2.0, 2.0, 1, k);
        addCandidate(store, n2, QStringLiteral("L2/2"), 1, 1, QStringLiteral("incorrect"), 2.0, 2.0, 1, k);
        // n = 4: all three correct at turn 1, each by one of its four first-turn samples.
        for (const QString& task : tasks)
            for (int sample = 0; sample < 4; ++sample)
                addCandidate(store, n4, task, 1, sample,
                             sample == 3 ? QStringLiteral("correct") : QStringLiteral("incorrect"), 2.0,
                             sample == 3 ? 1.9 : 2.0, 1, k);

        QString error;
        const std::optional<Report> report = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(report, qPrintable(error));
        QCOMPARE(report->sweeps.size(), 1);
        const QList<BestOfNSeries> series = bestOfNSeries(*report);
        QList<BestOfNSeries> study, firstTurn;
        for (const BestOfNSeries& s : series)
            (s.kind == BestOfNKind::Sweep ? study : firstTurn) << s;
        // The study's curve first: all levels, L1, L2.
        QCOMPARE(series.first().kind, BestOfNKind::Sweep);
        QCOMPARE(study.size(), 3);
        QCOMPARE(study[0].label, QStringLiteral("agent sweep, whole regime at each n (study's best-of-n)"));
        QCOMPARE(study[0].level, 0);
        QList<int> ns;
        QList<double> pct;
        for (const BestOfNPoint& p : study[0].points) {
            ns << p.n;
            pct << p.passPct.value;
            QCOMPARE(p.tasks, 3);
        }
        QCOMPARE(ns, (QList<int>{1, 2, 4}));
        // By hand: 1/3, 2/3, 3/3 correct.
        QVERIFY(qAbs(pct[0] - 100.0 / 3) < 1e-9 && qAbs(pct[1] - 200.0 / 3) < 1e-9 && qAbs(pct[2] - 100.0) < 1e-9);
        // The same numbers as kwb report's table (core's SweepCurve), intervals included.
        for (int i = 0; i < 3; ++i) {
            const Estimate& e = report->sweeps[0].points[i].overall.correctPct;
            QCOMPARE(study[0].points[i].passPct.value, e.value);
            QCOMPARE(study[0].points[i].passPct.low, e.low);
            QCOMPARE(study[0].points[i].passPct.high, e.high);
        }
        QCOMPARE(study[2].level, 2);
        QVERIFY(qAbs(study[2].points[1].passPct.value - 50.0) < 1e-9); // n = 2 on L2: L2/1 of L2/1, L2/2
        // First-turn pass@n: only the sweep's n = 4 run (n = 2 has a curve of its own, left out), labelled.
        QVERIFY(report->runs[1].firstTurnPassAtN.has_value());
        QCOMPARE(firstTurn.size(), 3);
        QVERIFY2(firstTurn[0].label.endsWith(QLatin1String(": first-turn pass@n")), qPrintable(firstTurn[0].label));
        QCOMPARE(firstTurn[0].colorKey, int(n4));
        QVERIFY(qAbs(firstTurn[0].points[0].passPct.value - 25.0) < 1e-9); // one of four first-turn samples
        QVERIFY(qAbs(firstTurn[0].points.last().passPct.value - 100.0) < 1e-9);
    }

    // One best on every page (issue 38 item 4): the pilot (last turn wins) has the fastest correct
    // candidate of L1/1 in its first turn but keeps its broken second turn; the agent keeps a
    // slower correct one. Results (the report and its per-task table), the Roofline, the Diff page
    // and the Monitor all name the agent's as the task's best, and each run's kept candidate alike.
    // Before: the Roofline drew the pilot's fastest time and Diff put it on the right.
    void pagesAgreeOnTheBest()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("best.db"))));
        const auto create = [&](const QString& regime) {
            RunConfig config;
            config.regime = StoredRegime::of(*Regime::builtin(regime));
            QJsonObject json = config.toJson();
            json.insert(QStringLiteral("gpu"), kwb::test::h200Device());
            return store.createRun(regime, regime, json).value_or(0);
        };
        const qint64 pilot = create(QStringLiteral("pilot-v1"));
        const qint64 agent = create(QStringLiteral("agent"));
        const QString code = QStringLiteral("extern \"C\" __global__ void k() {}");
        const qint64 pilotFast =
            kwb::test::addCandidate(store, pilot, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"), 2.68, 0.90,
                                    1, code + QStringLiteral("// fast"));
        const qint64 pilotKept =
            kwb::test::addCandidate(store, pilot, QStringLiteral("L1/1"), 2, 0, QStringLiteral("incorrect"), 2.68, 3.0,
                                    1, code + QStringLiteral("// broken"));
        const qint64 agentKept = kwb::test::addCandidate(store, agent, QStringLiteral("L1/1"), 1, 0,
                                                         QStringLiteral("correct"), 2.68, 2.0, 1, code);
        QVERIFY(pilotFast && pilotKept && agentKept);
        const QString agentName = kwb::runLabel(*store.run(agent));

        // Roofline.
        const TaskTimes times = taskTimesFromStore(store).value(QStringLiteral("L1/1"));
        QCOMPARE(times.bestEvaluation, agentKept);
        QCOMPARE(times.bestLabel, agentName + QStringLiteral(", turn 1, sample 0")); // the run's one name
        // Diff.
        const QList<CandidateEntry> entries = candidatesOfTask(store, QStringLiteral("L1/1"));
        QCOMPARE(entries.size(), 3);
        QCOMPARE(entries.at(DiffPage::defaultPair(entries).second).candidate.evaluationId, agentKept);
        // Results and kwb report.
        const std::optional<Report> report = buildReport(store, {}, ReportOptions{}, nullptr);
        QVERIFY(report);
        QCOMPARE(report->bestOfTask.value(QStringLiteral("L1/1")).evaluation, agentKept);
        QCOMPARE(report->runs.at(0).chosenEvaluation.value(QStringLiteral("L1/1")), pilotKept);
        QCOMPARE(report->runs.at(1).chosenEvaluation.value(QStringLiteral("L1/1")), agentKept);
        const TextTable perTask = taskTable(*report, 1);
        QCOMPARE(perTask.rows.size(), 1);
        QVERIFY2(perTask.rows[0].at(1).startsWith(agentName + QStringLiteral(" · turn 1 · sample 0 · correct")),
                 qPrintable(perTask.rows[0].at(1)));
        QCOMPARE(perTask.rows[0].at(2), QStringLiteral("incorrect")); // the pilot's kept one, not its fast one
        // Monitor: each run's task row shows the candidate the run keeps.
        RunTreeModel tree;
        tree.load(store, pilot);
        QCOMPARE(tree.index(0, RunTreeModel::StatusColumn).data().toString(), QStringLiteral("incorrect"));
        tree.load(store, agent);
        QCOMPARE(tree.index(0, RunTreeModel::StatusColumn).data().toString(), QStringLiteral("correct"));
    }

    // issue 39 item 6: the best candidate's fraction of the roofline bound (its evaluation's floor
    // over its time) on the Roofline (tooltip and selection label: the point's detail) and in
    // Results' Per task cell, Table II and Table I's speed-up tooltip; none without a floor.
    void boundFractionOnRooflineAndResults()
    {
        QTemporaryDir dir;
        RunStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("b.db"))));
        const QJsonObject config{
            {QStringLiteral("gpu"), kwb::test::h200Device()},
            {QStringLiteral("regime"), QJsonObject{{QStringLiteral("name"), QStringLiteral("agent")},
                                                   {QStringLiteral("n"), 1},
                                                   {QStringLiteral("ablated"), QJsonArray()}}}};
        const qint64 run = store.createRun(QStringLiteral("agent"), QStringLiteral("agent"), config).value_or(0);
        kwb::test::addCandidate(
            store, run, QStringLiteral("L2/1"), 1, 0, QStringLiteral("correct"), 10.0, 8.0, 1, QStringLiteral("k"),
            QJsonObject{{QStringLiteral("roofline"), QJsonObject{{QStringLiteral("floor_ms"), 2.0},
                                                                 {QStringLiteral("candidate_ms"), 8.0},
                                                                 {QStringLiteral("margin"), 0.1}}}});
        kwb::test::addCandidate(store, run, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"), 2.68, 2.68, 0,
                                QString()); // no floor stored
        const QHash<QString, TaskTimes> times = taskTimesFromStore(store);
        QCOMPARE(times.value(QStringLiteral("L2/1")).bestBoundFraction.value_or(-1), 0.25);
        QVERIFY(!times.value(QStringLiteral("L1/1")).bestBoundFraction);
        const QList<RooflinePoint> points =
            rooflinePoints({analysedTask(QStringLiteral("L1/1")), analysedTask(QStringLiteral("L2/1"))}, times);
        QCOMPARE(points.size(), 2);
        const QString gpu = decodeDeviceFacts(kwb::test::h200Device()).name;
        QVERIFY2(points[1].detail.contains(
                     QStringLiteral("; best candidate at 25 % of bound (time at the roofline floor / its time, on %1)")
                         .arg(gpu)),
                 qPrintable(points[1].detail));
        QVERIFY(!points[0].detail.contains(QStringLiteral("of bound")));

        QString error;
        const std::optional<Report> report = buildReport(store, {}, ReportOptions{}, &error);
        QVERIFY2(report, qPrintable(error));
        const TextTable l2 = taskTable(*report, 2);
        QCOMPARE(l2.rows.at(0).at(2), QStringLiteral("correct 1.25\u00D7, 25 % of bound"));
        QVERIFY2(l2.tooltips.at(0).at(2).contains(QStringLiteral("25 % of bound: the least time")),
                 qPrintable(l2.tooltips.at(0).at(2)));
        const TextTable l1 = taskTable(*report, 1);
        QCOMPARE(l1.rows.at(0).at(2), QStringLiteral("correct 1.00\u00D7"));
        QVERIFY(l1.tooltips.at(0).at(2).contains(QStringLiteral("stored no roofline floor")));
        const TextTable levels = levelTable(*report);
        QCOMPARE(levels.headers.last(), QStringLiteral("Roofline bound (geomean, n)"));
        QCOMPARE(levels.rows.at(1).last(), QStringLiteral("25 % of bound (n = 1)")); // L2
        const TextTable runs = runTable(*report);
        QVERIFY2(runs.tooltips.at(0).at(6).contains(QStringLiteral("geometric mean): 25 % of bound (n = 1)")),
                 qPrintable(runs.tooltips.at(0).at(6)));
    }
};

QTEST_GUILESS_MAIN(TestWorkbenchData)
#include "tst_workbenchdata.moc"
