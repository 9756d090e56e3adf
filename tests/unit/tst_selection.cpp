// Selection (src/core/run/selection.h): the monotone key (correct, then compiled, then speedup), the
// best of a turn, and the choice across turns: monotone keeps a working earlier kernel against a
// broken later one, "last" does not.

#include "core/run/selection.h"

#include <QJsonArray>
#include <QTest>

using namespace kwb;

namespace {

CandidateOutcome outcome(const QString& status, int turn = 1, int sample = 0, double speedup = 0.0)
{
    QJsonObject r{{QStringLiteral("status"), status}};
    if (speedup > 0)
        r.insert(QStringLiteral("speedup"), speedup);
    return CandidateOutcome::fromEvaluation(r, turn, sample);
}

} // namespace

class TestSelection : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void compiledFromEvaluation()
    {
        QVERIFY(outcome(QStringLiteral("correct")).compiled);
        QVERIFY(outcome(QStringLiteral("incorrect")).compiled);
        QVERIFY(outcome(QStringLiteral("runtime_error")).compiled);
        QVERIFY(!outcome(QStringLiteral("compile_error")).compiled);
        QVERIFY(!outcome(QStringLiteral("format_error")).compiled);
        QVERIFY(!outcome(QStringLiteral("timeout")).compiled);
        // compile.ok wins where the response has it
        const QJsonObject timedOutAfterCompile{{QStringLiteral("status"), QStringLiteral("timeout")},
                                               {QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), true}}}};
        QVERIFY(CandidateOutcome::fromEvaluation(timedOutAfterCompile).compiled);
        QVERIFY(!outcome(QStringLiteral("incorrect"), 1, 0, -1.0).speedup.has_value());
        QCOMPARE(*outcome(QStringLiteral("correct"), 1, 0, 1.5).speedup, 1.5);
    }

    void orderingByCorrectCompiledSpeedup()
    {
        const auto correctSlow = outcome(QStringLiteral("correct"), 1, 0, 0.5);
        const auto correctFast = outcome(QStringLiteral("correct"), 1, 1, 1.2);
        const auto correctUntimed = outcome(QStringLiteral("correct"), 1, 2);
        const auto incorrectFast = outcome(QStringLiteral("incorrect"), 1, 3, 9.0);
        const auto compileError = outcome(QStringLiteral("compile_error"), 1, 4);
        QVERIFY(betterThan(correctSlow, incorrectFast));  // correct first, whatever the speed
        QVERIFY(betterThan(incorrectFast, compileError)); // then compiled
        QVERIFY(betterThan(correctFast, correctSlow));    // then speedup
        QVERIFY(betterThan(correctSlow, correctUntimed)); // timed above untimed
        QVERIFY(!betterThan(correctSlow, correctSlow));   // strict
        QCOMPARE(*bestIndex({compileError, incorrectFast, correctSlow, correctFast, correctUntimed}), 3);
        QVERIFY(!bestIndex({}).has_value());
        // ties: the first (the lower sample)
        QCOMPARE(*bestIndex(
                     {outcome(QStringLiteral("compile_error"), 1, 0), outcome(QStringLiteral("compile_error"), 1, 1)}),
                 0);
    }

    void monotoneKeepsWorkingEarlierTurn()
    {
        const QList<QList<CandidateOutcome>> turns = {
            {outcome(QStringLiteral("correct"), 1, 0, 1.0), outcome(QStringLiteral("compile_error"), 1, 1)},
            {outcome(QStringLiteral("compile_error"), 2, 0), outcome(QStringLiteral("format_error"), 2, 1)},
            {outcome(QStringLiteral("incorrect"), 3, 0, 3.0)},
        };
        const auto chosen = selectAcrossTurns(turns, SelectionMode::Monotone);
        QVERIFY(chosen);
        QCOMPARE(chosen->turn, 1);
        QCOMPARE(wireName(chosen->status), QStringLiteral("correct"));
        // a compiled-but-wrong kernel also stays against a later compile error
        const auto c2 = selectAcrossTurns(
            {{outcome(QStringLiteral("incorrect"), 1)}, {outcome(QStringLiteral("compile_error"), 2)}},
            SelectionMode::Monotone);
        QCOMPARE(c2->turn, 1);
    }

    void monotoneTakesStrictImprovements()
    {
        const QList<QList<CandidateOutcome>> turns = {
            {outcome(QStringLiteral("compile_error"), 1)},
            {outcome(QStringLiteral("correct"), 2, 0, 1.0)},
            {outcome(QStringLiteral("correct"), 3, 0, 1.1)},
            {outcome(QStringLiteral("correct"), 4, 0, 1.1)}, // a tie does not displace
        };
        QCOMPARE(selectAcrossTurns(turns, SelectionMode::Monotone)->turn, 3);
    }

    void lastModeLetsBrokenTurnDisplace()
    {
        const QList<QList<CandidateOutcome>> turns = {
            {outcome(QStringLiteral("correct"), 1, 0, 1.0)},
            {outcome(QStringLiteral("compile_error"), 2, 0), outcome(QStringLiteral("incorrect"), 2, 1)},
        };
        const auto chosen = selectAcrossTurns(turns, SelectionMode::Last);
        QCOMPARE(chosen->turn, 2);
        QCOMPARE(chosen->sample, 1); // the best of the last turn
        QCOMPARE(wireName(chosen->status), QStringLiteral("incorrect"));
        // an empty last turn (no answers) leaves the turn before it
        QCOMPARE(selectAcrossTurns({{outcome(QStringLiteral("incorrect"), 1)}, {}}, SelectionMode::Last)->turn, 1);
        QVERIFY(!selectAcrossTurns({{}, {}}, SelectionMode::Last).has_value());
    }

    void belowRooflineFloorIsNotCorrect()
    {
        // A correct status with a time below the roofline floor (issue 11): not correct, and its
        // speed-up (20.6x, impossible) does not rank it above an honest, slower kernel.
        QJsonObject impossible{{QStringLiteral("status"), QStringLiteral("correct")},
                               {QStringLiteral("speedup"), 20.6},
                               {QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor"),
                                                                    QStringLiteral("speedup_over_10x")}}};
        const EvaluationResult e = decodeEvaluation(impossible);
        QVERIFY(e.isCorrect());
        QVERIFY(e.belowRooflineFloor());
        QVERIFY(!e.countsAsCorrect());
        QCOMPARE(e.flags, (QStringList{QStringLiteral("below_roofline_floor"), QStringLiteral("speedup_over_10x")}));
        QVERIFY(!e.trustedSpeedup().has_value());
        QCOMPARE(*e.positiveSpeedup(), 20.6);
        // speedup_over_10x alone is KernelBench's warning, not a verdict
        QJsonObject fastHonest = impossible;
        fastHonest.insert(QStringLiteral("flags"), QJsonArray{QStringLiteral("speedup_over_10x")});
        QVERIFY(decodeEvaluation(fastHonest).countsAsCorrect());

        const CandidateOutcome cheat = CandidateOutcome::fromEvaluation(impossible, 1, 0);
        const CandidateOutcome honest = outcome(QStringLiteral("correct"), 2, 0, 0.9);
        QVERIFY(!cheat.correct());
        QVERIFY(cheat.compiled);
        QVERIFY(!cheat.speedup.has_value());
        QVERIFY(betterThan(honest, cheat));
        QVERIFY(!betterThan(cheat, honest));
        QCOMPARE(*bestIndex({cheat, honest}), 1);
        // monotone: the honest later turn replaces the earlier impossible one
        QCOMPARE(selectAcrossTurns({{cheat}, {honest}}, SelectionMode::Monotone)->turn, 2);
        // and an impossible later turn never displaces an honest earlier one
        const CandidateOutcome cheatLater = CandidateOutcome::fromEvaluation(impossible, 2, 0);
        QCOMPARE(
            selectAcrossTurns({{outcome(QStringLiteral("correct"), 1, 0, 0.9)}, {cheatLater}}, SelectionMode::Monotone)
                ->turn,
            1);
    }

    void flatListGroupsByTurn()
    {
        const QList<CandidateOutcome> all = {outcome(QStringLiteral("compile_error"), 2, 0),
                                             outcome(QStringLiteral("correct"), 1, 0),
                                             outcome(QStringLiteral("incorrect"), 2, 1)};
        QCOMPARE(selectForTask(all, SelectionMode::Monotone)->turn, 1);
        QCOMPARE(wireName(selectForTask(all, SelectionMode::Last)->status), QStringLiteral("incorrect"));
    }
};

QTEST_GUILESS_MAIN(TestSelection)
#include "tst_selection.moc"
