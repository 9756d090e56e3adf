// One "best" per run and task and per task across runs (core/study/taskbest.h), and why a run is
// not a routing candidate (report.h's notMainRegimeReason): issue 38 item 4.

#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/study/report.h"
#include "core/study/taskbest.h"

#include <QTest>

using namespace kwb;

namespace {

PickCandidate candidate(qint64 run, qint64 evaluation, int turn, int sample, const QString& status, double speedup = 0)
{
    QJsonObject result{{QStringLiteral("status"), status}};
    if (speedup > 0)
        result.insert(QStringLiteral("speedup"), speedup);
    return PickCandidate{run, evaluation, turn, sample, decodeEvaluation(result)};
}

RunInfo run(qint64 id, const Regime& regime, const QMap<int, Regime>& levels = {})
{
    RunConfig config;
    config.regime = StoredRegime::of(regime);
    for (auto it = levels.cbegin(); it != levels.cend(); ++it)
        config.levelRegimes.insert(it.key(), StoredRegime::of(it.value()));
    RunInfo info;
    info.id = id;
    info.regime = regime.name;
    info.setConfig(config.toJson());
    return info;
}

} // namespace

class TestTaskBest : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // The run's own selection: the agent (monotone) keeps a working first turn over a broken
    // retry; the pilot (last turn wins) keeps its last turn, as it chose in the study.
    void keptFollowsTheRunsSelection()
    {
        const QList<PickCandidate> turns = {candidate(1, 10, 1, 0, QStringLiteral("correct"), 3.0),
                                            candidate(1, 11, 2, 0, QStringLiteral("incorrect"))};
        QCOMPARE(keptCandidate(turns, TaskSelection{SelectionMode::Monotone, false}), std::optional<int>(0));
        QCOMPARE(keptCandidate(turns, TaskSelection{SelectionMode::Last, false}), std::optional<int>(1));
        QCOMPARE(keptCandidate({}, TaskSelection{}), std::nullopt);
    }

    // Across runs: the best of what each run kept. The pilot's faster first turn is not the task's
    // best (the pilot did not keep it); the agent's kept 1.5x is, though a faster candidate exists.
    void bestIsTheBestOfTheKeptOnes()
    {
        const RunInfo pilot = run(1, *Regime::builtin(QStringLiteral("pilot-v1")));
        const RunInfo agent = run(2, *Regime::builtin(QStringLiteral("agent")));
        const QList<PickCandidate> all = {candidate(1, 10, 1, 0, QStringLiteral("correct"), 5.0),
                                          candidate(1, 11, 2, 0, QStringLiteral("incorrect")),
                                          candidate(2, 20, 1, 0, QStringLiteral("compile_error")),
                                          candidate(2, 21, 1, 1, QStringLiteral("correct"), 1.5)};
        const std::optional<int> best = bestCandidateOfTask(all, {pilot, agent}, QStringLiteral("L1/1"));
        QVERIFY(best);
        QCOMPARE(all.at(*best).evaluation, qint64(21));
        // Only the pilot listed: its kept (incorrect) one, never its unkept faster one.
        const std::optional<int> pilotOnly = bestCandidateOfTask(all, {pilot}, QStringLiteral("L1/1"));
        QVERIFY(pilotOnly);
        QCOMPARE(all.at(*pilotOnly).evaluation, qint64(11));
        // A run not listed has no say.
        QCOMPARE(bestCandidateOfTask(all, {}, QStringLiteral("L1/1")), std::nullopt);
    }

    void tiesGoToTheRunListedFirst()
    {
        const RunInfo a = run(1, *Regime::builtin(QStringLiteral("zero-shot")));
        const RunInfo b = run(2, *Regime::builtin(QStringLiteral("zero-shot")));
        const QList<PickCandidate> all = {candidate(1, 10, 1, 0, QStringLiteral("correct"), 2.0),
                                          candidate(2, 20, 1, 0, QStringLiteral("correct"), 2.0)};
        QCOMPARE(all.at(*bestCandidateOfTask(all, {a, b}, QStringLiteral("L1/1"))).evaluation, qint64(10));
        QCOMPARE(all.at(*bestCandidateOfTask(all, {b, a}, QStringLiteral("L1/1"))).evaluation, qint64(20));
    }

    // Regimes per level: a level-2 task is picked by its level's regime (the pilot's last turn),
    // a level-1 task by the run's own.
    void aLevelsRegimeSelectsItsTasks()
    {
        const RunInfo routed =
            run(1, *Regime::builtin(QStringLiteral("agent")), {{2, *Regime::builtin(QStringLiteral("pilot-v1"))}});
        const RunConfig& config = routed.config;
        QVERIFY(taskSelection(config, QStringLiteral("L2/3")).mode == SelectionMode::Last);
        QVERIFY(taskSelection(config, QStringLiteral("L1/3")).mode == SelectionMode::Monotone);
    }

    // Routing says exactly why a run is left out: every setting that differs, with both values.
    void notMainRegimeReasonSaysWhy()
    {
        QCOMPARE(notMainRegimeReason(run(1, *Regime::builtin(QStringLiteral("agent")))), QString());
        Regime changed = *Regime::builtin(QStringLiteral("agent"));
        changed.n = 8;
        changed.turns = 1;
        QCOMPARE(notMainRegimeReason(run(1, changed)),
                 QStringLiteral("not agent as built in: n = 8 (built in: 4), 1 turn(s) (built in: 3)"));
        QVERIFY(!isMainRegimeRun(run(1, changed)));
        QVERIFY(notMainRegimeReason(run(1, *Regime::builtin(QStringLiteral("pilot-v1"))))
                    .startsWith(QStringLiteral("regime pilot-v1 is not one of the study's four")));
        const Regime ablated = Regime::builtin(QStringLiteral("agent"))
                                   ->withAblations(Ablations::fromOffNames({QStringLiteral("best_of_n")}));
        QCOMPARE(notMainRegimeReason(run(1, ablated)), QStringLiteral("an ablation (best_of_n off)"));
    }
};

QTEST_GUILESS_MAIN(TestTaskBest)
#include "tst_taskbest.moc"
