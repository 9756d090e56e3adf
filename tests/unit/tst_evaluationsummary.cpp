// The evaluation in words (src/core/study/evaluationsummary.h): an all-NaN output never reads
// "max |diff| 0", a passing output's huge relative difference is explained by the tolerance
// rule with its numbers, an evaluation below the roofline floor says it is not counted and why.

#include "core/study/evaluationsummary.h"
#include "core/tasks/kernelbound.h"

#include <QJsonArray>
#include <QTest>

using namespace kwb;

namespace {

QJsonObject correctness(int passed, double maxAbs, double maxRel, QJsonValue failure = QJsonValue::Null)
{
    return QJsonObject{{QStringLiteral("trials"), 5},       {QStringLiteral("passed"), passed},
                       {QStringLiteral("max_abs_diff"), maxAbs}, {QStringLiteral("max_rel_diff"), maxRel},
                       {QStringLiteral("atol"), 1e-4},      {QStringLiteral("rtol"), 1e-4},
                       {QStringLiteral("deterministic"), true}, {QStringLiteral("failure"), failure}};
}

} // namespace

class TestEvaluationSummary : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void allNanOutputIsNotAZeroDiff()
    {
        // What the worker sends for an output that is NaN everywhere: the difference over the
        // finite elements (none) is 0, the failure names the non-finite count.
        const QJsonObject failure{{QStringLiteral("trial"), 0},
                                  {QStringLiteral("reason"), QStringLiteral("4096 output elements are NaN or Inf where the reference is finite (first at flat index 0)")},
                                  {QStringLiteral("detail"), QJsonObject{{QStringLiteral("non_finite"), 4096}, {QStringLiteral("first_index"), 0}}}};
        const EvaluationResult e = decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("incorrect")},
                                                                {QStringLiteral("stage"), QStringLiteral("correctness")},
                                                                {QStringLiteral("correctness"), correctness(0, 0.0, 0.0, failure)}});
        QCOMPARE(nonFiniteOutputs(e), qint64(4096));
        QCOMPARE(maxAbsDiffText(e), QStringLiteral("NaN/Inf"));
        const QString text = evaluationSummary(e);
        QVERIFY2(!text.contains(QStringLiteral("Max |diff| 0")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("Max |diff|: not a number: 4096 output elements are NaN or Inf")));
        QVERIFY(text.contains(QStringLiteral("Status: incorrect (at correctness)")));
    }

    void finiteDiffIsTheNumber()
    {
        const EvaluationResult e = decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                                                {QStringLiteral("correctness"), correctness(5, 1.2e-6, 3e-7)}});
        QCOMPARE(maxAbsDiffText(e), QStringLiteral("1.2e-06"));
        const QString text = evaluationSummary(e);
        QVERIFY(text.contains(QStringLiteral("Max |diff| 1.2e-06 (atol 0.0001), max rel diff 3e-07 (rtol 0.0001)")));
        QVERIFY(!text.contains(QStringLiteral("near 0"))); // nothing to explain
    }

    void hugeRelativeDiffOnAPassIsExplainedByTheTolerance()
    {
        const EvaluationResult e = decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                                                {QStringLiteral("speedup"), 1.07},
                                                                {QStringLiteral("correctness"), correctness(5, 8e-5, 2.98e4)}});
        const QString text = evaluationSummary(e);
        QVERIFY2(text.contains(QStringLiteral("max rel diff 2.98e+04 (rtol 0.0001)")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("|out − ref| ≤ atol + rtol·|ref| (atol 0.0001, rtol 0.0001)")));
        QVERIFY(text.contains(QStringLiteral("reference is near 0")));
        QVERIFY(text.contains(QStringLiteral("Speed-up: 1.07×")));
    }

    void belowTheRooflineFloorIsNotCounted()
    {
        const QJsonObject roof{{QStringLiteral("floor_ms"), 2.1},   {QStringLiteral("candidate_ms"), 0.133},
                               {QStringLiteral("margin"), 0.1},     {QStringLiteral("below_floor"), true}};
        const EvaluationResult e = decodeEvaluation(
            QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                        {QStringLiteral("speedup"), 20.6},
                        {QStringLiteral("correctness"), correctness(5, 0.0, 0.0)},
                        {QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor"), QStringLiteral("speedup_over_10x")}},
                        {QStringLiteral("roofline"), roof}});
        const QStringList reasons = notCountedReasons(e);
        QCOMPARE(reasons.size(), 1);
        // the one sentence of notCountedReason(), also the prompt's not_counted and the report's
        QCOMPARE(reasons.first(), QStringLiteral("not counted: ") + notCountedReason(e));
        QVERIFY2(reasons.first().contains(QStringLiteral("measured 0.133 ms is below the roofline floor 2.1 ms (less the 10 % margin")),
                 qPrintable(reasons.first()));
        const QString text = evaluationSummary(e);
        QVERIFY(text.startsWith(QStringLiteral("Status: correct, not counted")));
        QVERIFY(text.contains(QStringLiteral("speedup_over_10x: KernelBench's warning")));
        // An honest evaluation counts: no reason.
        QVERIFY(notCountedReasons(decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}})).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestEvaluationSummary)
#include "tst_evaluationsummary.moc"
