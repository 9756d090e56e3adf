// RunStats on small fixtures whose numbers are worked out by hand in the comments: the study's
// metrics overall and per level, bootstrap intervals (they hold the point estimate and a seed
// reproduces them), paired comparisons, pass@n and the best-of-n curve, and the routing estimate
// (the study's own Table I counts give its 53 %).

#include "core/study/report.h"
#include "core/study/reportformat.h"
#include "core/study/runstats.h"

#include <QTest>

#include <cmath>

using namespace kwb;

namespace {

TaskOutcome outcome(const QString& task, int level, const QString& status, double speedup, bool compiled)
{
    return TaskOutcome{task, level, status, speedup, compiled};
}

const QString kCorrect = QStringLiteral("correct");

// Six tasks over three levels:
//   L1/1 correct  2.0   compiled      L2/1 incorrect  -   compiled      L3/1 compile_error  -  not compiled
//   L1/2 correct  0.5   compiled      L2/2 correct   1.0  compiled      L3/2 correct       4.0 compiled
QList<TaskOutcome> sixTasks()
{
    return {
        outcome(QStringLiteral("L1/1"), 1, kCorrect, 2.0, true),
        outcome(QStringLiteral("L1/2"), 1, kCorrect, 0.5, true),
        outcome(QStringLiteral("L2/1"), 2, QStringLiteral("incorrect"), 0.0, true),
        outcome(QStringLiteral("L2/2"), 2, kCorrect, 1.0, true),
        outcome(QStringLiteral("L3/1"), 3, QStringLiteral("compile_error"), std::nan(""), false),
        outcome(QStringLiteral("L3/2"), 3, kCorrect, 4.0, true),
    };
}

// `count` correct tasks of ten at `level` (the others incorrect), named L<level>/<1..10>.
QList<TaskOutcome> levelOfTen(int level, int count)
{
    QList<TaskOutcome> list;
    for (int i = 1; i <= 10; ++i) {
        list.append(outcome(QStringLiteral("L%1/%2").arg(level).arg(i), level,
                            i <= count ? kCorrect : QStringLiteral("incorrect"), i <= count ? 1.0 : 0.0, true));
    }
    return list;
}

bool contains(const Estimate& e)
{
    return e.low <= e.value + 1e-12 && e.value <= e.high + 1e-12;
}

} // namespace

class TestRunStats : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void overallMetrics()
    {
        const RunSummary summary = summarize(sixTasks());
        const Metrics& m = summary.overall;
        QCOMPARE(m.tasks, 6);
        // correct: L1/1, L1/2, L2/2, L3/2 = 4 of 6 = 66.67 %
        QCOMPARE(m.correct, 4);
        QVERIFY(qFuzzyCompare(m.correctPct.value, 400.0 / 6.0));
        // fast_1: correct and speedup > 1: L1/1 (2.0) and L3/2 (4.0); L2/2 (1.0) is not faster,
        // L1/2 (0.5) slower. 2 of ALL 6 tasks = 33.33 % (not 2 of the 4 correct).
        QCOMPARE(m.fast1, 2);
        QVERIFY(qFuzzyCompare(m.fast1Pct.value, 200.0 / 6.0));
        // compiled: all but L3/1 = 5 of 6 = 83.33 %
        QCOMPARE(m.compiled, 5);
        QVERIFY(qFuzzyCompare(m.compiledPct.value, 500.0 / 6.0));
        // geomean of the correct kernels: (2 · 0.5 · 1 · 4)^(1/4) = 4^(1/4) = √2
        QCOMPARE(m.geomeanCount, 4);
        QVERIFY(qFuzzyCompare(m.geomeanSpeedup.value, std::sqrt(2.0)));
    }

    // Issue 36 item 5: the study's arithmetic mean and best speed-up beside the geometric mean,
    // over the same correct kernels, and how many correct answers launch no kernel of their own.
    void meanBestAndTorchOnly()
    {
        QList<TaskOutcome> outcomes = sixTasks();
        // correct speed-ups 2, 0.5, 1, 4: mean 7.5 / 4, best 4; the incorrect L2/1 does not count
        outcomes[3].torchOnly = true; // L2/2, correct at 1.0: a torch-only tie
        outcomes[2].torchOnly = true; // L2/1, not correct: not counted
        // Clear fast_1: L1/1 (2.0) with its interval wholly above 1; L3/2 (4.0) with one reaching 0.9;
        // L2/2 (1.0) is not fast at all.
        outcomes[0].speedupLow = 1.5;
        outcomes[0].speedupHigh = 2.5;
        outcomes[5].speedupLow = 0.9;
        outcomes[5].speedupHigh = 6.0;
        const Metrics m = summarize(outcomes).overall;
        QCOMPARE(m.fast1, 2);
        QCOMPARE(m.clearFast1, 1);
        QVERIFY(qFuzzyCompare(m.clearFast1Pct.value, 100.0 / 6.0));
        QVERIFY(contains(m.clearFast1Pct));
        QCOMPARE(m.clearFast1Undecided, 0);
        // A fast task without an interval (a result from before intervals were kept) leaves clear
        // fast_1 undecided: not a 0.
        outcomes[0].speedupLow = outcomes[0].speedupHigh = std::nan("");
        const Metrics undecided = summarize(outcomes).overall;
        QCOMPARE(undecided.clearFast1, 0);
        QCOMPARE(undecided.clearFast1Undecided, 1);
        QCOMPARE(clearFast1Text(undecided), QStringLiteral("n/a"));
        QVERIFY(clearFast1Text(m).startsWith(QStringLiteral("16.7 % [")));
        QVERIFY(qFuzzyCompare(m.meanSpeedup, 7.5 / 4.0));
        QCOMPARE(m.bestSpeedup, 4.0);
        QCOMPARE(m.torchOnlyCorrect, 1);
        const Metrics none =
            summarize({outcome(QStringLiteral("L1/1"), 1, QStringLiteral("incorrect"), 0.0, true)}).overall;
        QVERIFY(std::isnan(none.meanSpeedup));
        QVERIFY(std::isnan(none.bestSpeedup));
        QCOMPARE(none.torchOnlyCorrect, 0);
    }

    void perLevelMetrics()
    {
        const RunSummary summary = summarize(sixTasks());
        QCOMPARE(summary.perLevel.keys(), (QList<int>{1, 2, 3}));
        // Solved per level (the study's column): 2 / 1 / 1.
        QCOMPARE(summary.perLevel[1].correct, 2);
        QCOMPARE(summary.perLevel[2].correct, 1);
        QCOMPARE(summary.perLevel[3].correct, 1);
        // L1: 100 % correct, fast_1 1 of 2 = 50 %, geomean √(2 · 0.5) = 1
        QCOMPARE(summary.perLevel[1].correctPct.value, 100.0);
        QCOMPARE(summary.perLevel[1].fast1Pct.value, 50.0);
        QVERIFY(qFuzzyCompare(summary.perLevel[1].geomeanSpeedup.value, 1.0));
        // Every resample of an all-correct level is all correct, so the bootstrap's interval would be
        // [100, 100]: the exact binomial one instead, [0.025^(1/2), 1] for 2 of 2.
        QVERIFY(summary.perLevel[1].correctPct.exactBinomial);
        QVERIFY(qFuzzyCompare(summary.perLevel[1].correctPct.low, 100.0 * std::sqrt(0.025)));
        QCOMPARE(summary.perLevel[1].correctPct.high, 100.0);
        // 1 of 2: exact too, one method per column (Clopper–Pearson: [1 − √0.975, √0.975]).
        QVERIFY(summary.perLevel[1].fast1Pct.exactBinomial);
        QVERIFY(std::abs(summary.perLevel[1].fast1Pct.low - 100.0 * (1.0 - std::sqrt(0.975))) < 1e-9);
        QVERIFY(std::abs(summary.perLevel[1].fast1Pct.high - 100.0 * std::sqrt(0.975)) < 1e-9);
        // L2: 50 % correct, 0 % fast_1 (1.0 is not > 1), 100 % compiled, geomean 1
        QCOMPARE(summary.perLevel[2].correctPct.value, 50.0);
        QCOMPARE(summary.perLevel[2].fast1Pct.value, 0.0);
        QCOMPARE(summary.perLevel[2].compiledPct.value, 100.0);
        QVERIFY(qFuzzyCompare(summary.perLevel[2].geomeanSpeedup.value, 1.0));
        // L3: 50 % correct, 50 % fast_1, 50 % compiled, geomean 4
        QCOMPARE(summary.perLevel[3].correctPct.value, 50.0);
        QCOMPARE(summary.perLevel[3].fast1Pct.value, 50.0);
        QCOMPARE(summary.perLevel[3].compiledPct.value, 50.0);
        QVERIFY(qFuzzyCompare(summary.perLevel[3].geomeanSpeedup.value, 4.0));
    }

    void emptyAndNoCorrect()
    {
        const Metrics empty = computeMetrics({});
        QCOMPARE(empty.tasks, 0);
        QVERIFY(!empty.correctPct.isValid());
        QVERIFY(!empty.geomeanSpeedup.isValid());
        const Metrics none =
            computeMetrics({outcome(QStringLiteral("L1/1"), 1, QStringLiteral("incorrect"), 3.0, true)});
        QCOMPARE(none.correctPct.value, 0.0);
        QCOMPARE(none.fast1, 0); // fast but wrong does not count
        QVERIFY(!none.geomeanSpeedup.isValid());
        QCOMPARE(none.geomeanCount, 0);
    }

    void bootstrapIntervals()
    {
        const BootstrapOptions options{2000, 7, 0.95};
        const Metrics m = computeMetrics(sixTasks(), options);
        for (const Estimate* e : {&m.correctPct, &m.fast1Pct, &m.compiledPct, &m.geomeanSpeedup}) {
            QVERIFY2(contains(*e),
                     qPrintable(QStringLiteral("%1 not in [%2, %3]").arg(e->value).arg(e->low).arg(e->high)));
            QVERIFY(e->low < e->high); // six tasks of mixed outcome: a wide interval
        }
        // Percentages of 6 resampled tasks are multiples of 100/6 between 0 and 100.
        QVERIFY(m.correctPct.low >= 0.0 && m.correctPct.high <= 100.0);

        // Same seed, same intervals; another seed moves at least one bound somewhere.
        const Metrics again = computeMetrics(sixTasks(), options);
        QCOMPARE(again.correctPct.low, m.correctPct.low);
        QCOMPARE(again.correctPct.high, m.correctPct.high);
        QCOMPARE(again.geomeanSpeedup.low, m.geomeanSpeedup.low);
        QCOMPARE(again.geomeanSpeedup.high, m.geomeanSpeedup.high);

        // Thirty tasks, 9 correct (zero-shot's 30 %): the interval is wide, several tasks either
        // way, which is why the study calls gaps of one or two tasks noise.
        QList<TaskOutcome> thirty = levelOfTen(1, 9) + levelOfTen(2, 0) + levelOfTen(3, 0);
        const Metrics z = computeMetrics(thirty, options);
        QVERIFY(qFuzzyCompare(z.correctPct.value, 30.0));
        QVERIFY(contains(z.correctPct));
        QVERIFY(z.correctPct.high - z.correctPct.low > 2 * 100.0 / 30.0);
    }

    void pairedComparison()
    {
        // A correct on t1..t4, B on t3..t5; t6 neither; B also has t7 (A does not).
        QList<TaskOutcome> a, b;
        for (int i = 1; i <= 6; ++i) {
            const QString task = QStringLiteral("t%1").arg(i);
            a.append(outcome(task, 1, i <= 4 ? kCorrect : QStringLiteral("incorrect"), 1.0, true));
            b.append(outcome(task, 1, (i >= 3 && i <= 5) ? kCorrect : QStringLiteral("incorrect"), 1.0, true));
        }
        b.append(outcome(QStringLiteral("t7"), 1, kCorrect, 1.0, true));

        const PairedComparison c = comparePaired(a, b, BootstrapOptions{2000, 11, 0.95});
        QCOMPARE(c.tasks, 6);
        QCOMPARE(c.onlyA, 2);   // t1, t2
        QCOMPARE(c.onlyB, 1);   // t5
        QCOMPARE(c.both, 2);    // t3, t4
        QCOMPARE(c.neither, 1); // t6
        QCOMPARE(c.missingInA, QStringList{QStringLiteral("t7")});
        QVERIFY(c.missingInB.isEmpty());
        // 4/6 − 3/6 = 16.67 points, computed on the shared tasks only (t7 left out)
        QVERIFY(qFuzzyCompare(c.correctPctA.value, 400.0 / 6.0));
        QVERIFY(qFuzzyCompare(c.correctPctB.value, 50.0));
        QVERIFY(qFuzzyCompare(c.differencePct.value, 100.0 / 6.0));
        QVERIFY(contains(c.differencePct));
        QVERIFY(c.differencePct.low < 0.0); // one task's gap: zero is inside the interval
        // Sign test, 3 discordant tasks split 2:1: p = 2 · (C(3,0) + C(3,1)) / 2³ = 1
        QCOMPARE(c.signTestP, 1.0);

        // Identical runs: every paired resample differs by exactly 0, an interval of no width; the
        // exact bound of the discordant share (0 of 6) instead: ±(1 − 0.025^(1/6)) = ±45.9 points.
        const PairedComparison same = comparePaired(a, a);
        QCOMPARE(same.differencePct.value, 0.0);
        QVERIFY(same.differencePct.exactBinomial);
        QVERIFY(std::abs(same.differencePct.high - 100.0 * (1.0 - std::pow(0.025, 1.0 / 6.0))) < 1e-9);
        QCOMPARE(same.differencePct.low, -same.differencePct.high);
        QVERIFY(!c.differencePct.exactBinomial); // mixed pairs: the bootstrap's

        // 6 discordant, all A's: p = 2 · C(6,0) / 2⁶ = 0.03125
        QList<TaskOutcome> strong, weak;
        for (int i = 1; i <= 6; ++i) {
            strong.append(outcome(QStringLiteral("t%1").arg(i), 1, kCorrect, 1.0, true));
            weak.append(outcome(QStringLiteral("t%1").arg(i), 1, QStringLiteral("incorrect"), 1.0, true));
        }
        const PairedComparison big = comparePaired(strong, weak);
        QCOMPARE(big.onlyA, 6);
        QVERIFY(qFuzzyCompare(big.signTestP, 0.03125));
        QCOMPARE(big.differencePct.value, 100.0);
        // Every task A's: not [100, 100] but at least 2 · 0.025^(1/6) − 1 = 8.2 points.
        QVERIFY(big.differencePct.exactBinomial);
        QVERIFY(std::abs(big.differencePct.low - 100.0 * (2.0 * std::pow(0.025, 1.0 / 6.0) - 1.0)) < 1e-9);
        QCOMPARE(big.differencePct.high, 100.0);
        const PairedComparison reversed = comparePaired(weak, strong);
        QCOMPARE(reversed.differencePct.low, -100.0);
        QCOMPARE(reversed.differencePct.high, -big.differencePct.low);
    }

    void passAtN_data()
    {
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("c");
        QTest::addColumn<int>("n");
        QTest::addColumn<double>("expected");
        // k = 4, c = 1: pass@1 = 1/4; pass@2 = 1 − C(3,2)/C(4,2) = 1 − 3/6 = 1/2; pass@4 = 1
        QTest::newRow("k4 c1 n1") << 4 << 1 << 1 << 0.25;
        QTest::newRow("k4 c1 n2") << 4 << 1 << 2 << 0.5;
        QTest::newRow("k4 c1 n4") << 4 << 1 << 4 << 1.0;
        // k = 8, c = 2: pass@1 = 2/8; pass@2 = 1 − C(6,2)/C(8,2) = 1 − 15/28 = 13/28;
        // pass@4 = 1 − C(6,4)/C(8,4) = 1 − 15/70 = 55/70; pass@8 = 1
        QTest::newRow("k8 c2 n1") << 8 << 2 << 1 << 0.25;
        QTest::newRow("k8 c2 n2") << 8 << 2 << 2 << 13.0 / 28.0;
        QTest::newRow("k8 c2 n4") << 8 << 2 << 4 << 55.0 / 70.0;
        QTest::newRow("k8 c2 n8") << 8 << 2 << 8 << 1.0;
        QTest::newRow("none correct") << 8 << 0 << 4 << 0.0;
        QTest::newRow("all correct") << 4 << 4 << 1 << 1.0;
    }

    void passAtN()
    {
        QFETCH(int, k);
        QFETCH(int, c);
        QFETCH(int, n);
        QFETCH(double, expected);
        QVERIFY2(std::abs(kwb::passAtN(k, c, n) - expected) < 1e-12,
                 qPrintable(QString::number(kwb::passAtN(k, c, n), 'g', 17)));
    }

    void passAtNUndefined()
    {
        QVERIFY(std::isnan(kwb::passAtN(4, 1, 8))); // fewer samples than n
        QVERIFY(std::isnan(kwb::passAtN(4, 1, 0)));
        QVERIFY(std::isnan(kwb::passAtN(4, 5, 1)));
    }

    void percentagesAtTheirEdges()
    {
        // 0 of 10 and 10 of 10: every resample is alike, the bootstrap's interval [0, 0] or
        // [100, 100] claims a certainty ten tasks cannot give. The exact binomial (Clopper–Pearson)
        // interval instead: [0, 1 − 0.025^(1/10)] = [0, 30.85] and [69.15, 100].
        const Metrics none = computeMetrics(levelOfTen(1, 0));
        QCOMPARE(none.correctPct.value, 0.0);
        QVERIFY(none.correctPct.exactBinomial);
        QCOMPARE(none.correctPct.low, 0.0);
        QVERIFY(std::abs(none.correctPct.high - 100.0 * (1.0 - std::pow(0.025, 0.1))) < 1e-9);
        QVERIFY(std::abs(none.correctPct.high - 30.85) < 0.01);
        const Metrics all = computeMetrics(levelOfTen(1, 10));
        QVERIFY(all.correctPct.exactBinomial);
        QVERIFY(std::abs(all.correctPct.low - 69.15) < 0.01);
        QCOMPARE(all.correctPct.high, 100.0);
        QCOMPARE(percentText(none.correctPct), QStringLiteral("0.0 % [0\u201331]"));
        QCOMPARE(percentText(all.correctPct), QStringLiteral("100.0 % [69\u2013100]"));
        // In between the same method (one per column): 5 of 10 is [18.71, 81.29], the
        // Clopper–Pearson interval's published value.
        const Metrics some = computeMetrics(levelOfTen(1, 5));
        QVERIFY(some.correctPct.exactBinomial);
        QVERIFY2(std::abs(some.correctPct.low - 18.709) < 0.001 && std::abs(some.correctPct.high - 81.291) < 0.001,
                 qPrintable(QStringLiteral("[%1, %2]").arg(some.correctPct.low).arg(some.correctPct.high)));
        QCOMPARE(percentText(some.correctPct), QStringLiteral("50.0 % [19\u201381]"));
        // One task: [2.5, 100] for a pass, [0, 97.5] for a failure; its one speed-up has no
        // interval of the geometric mean (one kernel: every resample that holds it is it).
        const Metrics one = computeMetrics({outcome(QStringLiteral("L1/1"), 1, QStringLiteral("correct"), 1.5, true)});
        QVERIFY(std::abs(one.correctPct.low - 2.5) < 1e-9);
        QVERIFY(one.geomeanSpeedup.isValid() && !one.geomeanSpeedup.hasInterval());
        QCOMPARE(geomeanSpeedupText(one), QStringLiteral("1.50\u00D7 (n = 1)"));
        const Metrics failed =
            computeMetrics({outcome(QStringLiteral("L1/1"), 1, QStringLiteral("incorrect"), 0.0, true)});
        QVERIFY(std::abs(failed.correctPct.high - 97.5) < 1e-9);
        // Two kernels: the bootstrap's interval of their geometric mean, as before.
        const Metrics two = computeMetrics({outcome(QStringLiteral("L1/1"), 1, QStringLiteral("correct"), 1.5, true),
                                            outcome(QStringLiteral("L1/2"), 1, QStringLiteral("correct"), 0.8, true)});
        QVERIFY(two.geomeanSpeedup.hasInterval());
        QVERIFY(two.geomeanSpeedup.low < two.geomeanSpeedup.high);
        // The best-of-n curve at its edges likewise.
        const QList<SampleOutcomes> failing{{QStringLiteral("A"), 1, {false, false}},
                                            {QStringLiteral("B"), 1, {false, false}}};
        const QList<BestOfNPoint> curve = kwb::bestOfNCurve(failing, {1, 2});
        QVERIFY(curve[0].passPct.exactBinomial);
        QVERIFY(std::abs(curve[0].passPct.high - 100.0 * (1.0 - std::sqrt(0.025))) < 1e-9);
    }

    void bestOfNCurve()
    {
        auto samples = [](int k, int c) {
            QList<bool> list;
            for (int i = 0; i < k; ++i)
                list.append(i < c);
            return list;
        };
        // A: k = 8, c = 2; B: k = 8, c = 0; C: k = 4, c = 1 (values from passAtN_data).
        const QList<SampleOutcomes> tasks{{QStringLiteral("A"), 1, samples(8, 2)},
                                          {QStringLiteral("B"), 2, samples(8, 0)},
                                          {QStringLiteral("C"), 3, samples(4, 1)}};
        const QList<BestOfNPoint> curve = kwb::bestOfNCurve(tasks);
        QCOMPARE(curve.size(), 4);
        // n = 1: (0.25 + 0 + 0.25) / 3 = 16.67 %
        QCOMPARE(curve[0].n, 1);
        QCOMPARE(curve[0].tasks, 3);
        QVERIFY(qFuzzyCompare(curve[0].passPct.value, 50.0 / 3.0));
        // n = 2: (13/28 + 0 + 1/2) / 3 = 27/84 = 32.14 %
        QVERIFY(qFuzzyCompare(curve[1].passPct.value, 100.0 * 27.0 / 84.0));
        // n = 4: (55/70 + 0 + 1) / 3 = 125/210 = 59.52 %
        QVERIFY(qFuzzyCompare(curve[2].passPct.value, 100.0 * 125.0 / 210.0));
        // n = 8: C has only 4 samples; it is not dropped: its 4 missing samples count as failures,
        // and one of its 4 is correct, so C passes: (1 + 0 + 1) / 3 = 66.67 %.
        QCOMPARE(curve[3].n, 8);
        QCOMPARE(curve[3].tasks, 3);
        QCOMPARE(curve[3].shortTasks, 1);
        QCOMPARE(curve[2].shortTasks, 0);
        QVERIFY(qFuzzyCompare(curve[3].passPct.value, 200.0 / 3.0));
        for (const BestOfNPoint& point : curve)
            QVERIFY(contains(point.passPct));
        // Two tasks alike, 2 of 4 samples each: over tasks alone every resample is 50 %, an interval
        // of no width; resampling each task's samples too shows what four samples leave open.
        const QList<SampleOutcomes> alike{{QStringLiteral("A"), 1, samples(4, 2)},
                                          {QStringLiteral("B"), 1, samples(4, 2)}};
        const QList<BestOfNPoint> twoStage = kwb::bestOfNCurve(alike, {1, 2});
        QVERIFY(qFuzzyCompare(twoStage[0].passPct.value, 50.0));
        QVERIFY(!twoStage[0].passPct.exactBinomial);
        QVERIFY2(twoStage[0].passPct.low < 40.0 && twoStage[0].passPct.high > 60.0,
                 qPrintable(QStringLiteral("[%1, %2]").arg(twoStage[0].passPct.low).arg(twoStage[0].passPct.high)));
        QVERIFY(contains(twoStage[1].passPct) && twoStage[1].passPct.low < twoStage[1].passPct.high);
        const QList<BestOfNPoint> again = kwb::bestOfNCurve(alike, {1, 2});
        QCOMPARE(again[0].passPct.low, twoStage[0].passPct.low); // the seed fixes it
        // Non-decreasing in n on the same tasks.
        QVERIFY(curve[0].passPct.value <= curve[1].passPct.value);
        QVERIFY(curve[1].passPct.value <= curve[2].passPct.value);
    }

    void routingEstimate()
    {
        // Table I's solved counts (of 10): guided 10 / 0 / 3, agent 5 / 3 / 1.
        QMap<QString, QList<TaskOutcome>> runs;
        runs.insert(QStringLiteral("guided"), levelOfTen(1, 10) + levelOfTen(2, 0) + levelOfTen(3, 3));
        runs.insert(QStringLiteral("agent"), levelOfTen(1, 5) + levelOfTen(2, 3) + levelOfTen(3, 1));
        QCOMPARE(computeMetrics(runs[QStringLiteral("guided")]).correctPct.value, 43.333333333333336);
        QCOMPARE(computeMetrics(runs[QStringLiteral("agent")]).correctPct.value, 30.0);

        // Levels 1 and 3 to guided, 2 to the agent: (10 + 3 + 3) / 30 = 53.33 %, the study's 53 %.
        const QMap<int, QString> routing{
            {1, QStringLiteral("guided")}, {2, QStringLiteral("agent")}, {3, QStringLiteral("guided")}};
        const RoutingEstimate estimate = estimateRouting(runs, routing);
        QVERIFY(estimate.problems.isEmpty());
        QCOMPARE(estimate.combined.tasks, 30);
        QCOMPARE(estimate.combined.correct, 16);
        QVERIFY(qFuzzyCompare(estimate.combined.correctPct.value, 1600.0 / 30.0));
        QVERIFY(contains(estimate.combined.correctPct));
        QCOMPARE(estimate.perLevel[2].correct, 3);

        // A level routed to a regime without a run is reported and left out.
        const RoutingEstimate broken =
            estimateRouting(runs, {{1, QStringLiteral("guided")}, {2, QStringLiteral("iterative")}});
        QCOMPARE(broken.problems.size(), 1);
        QCOMPARE(broken.combined.tasks, 10);
    }
};

QTEST_GUILESS_MAIN(TestRunStats)
#include "tst_runstats.moc"
