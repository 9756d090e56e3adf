// Run names (src/core/run/runname.h): the study's ten runs get ten different names, each naming
// what sets the run apart from its regime's built-in settings, and nothing for a plain run.

#include "core/config/regime.h"
#include "core/run/runname.h"
#include "core/store/runstore.h"

#include <QJsonArray>
#include <QSet>
#include <QTest>

using namespace kwb;

namespace {

/// A run as `kwb run` stores it (the keys RunConfig::toJson writes): the regime's JSON under
/// `regime`, the profile, a sweep (as the old single-run sweeps stored it: without an id), and
/// whatever else `extra` holds.
RunInfo storedRun(qint64 id, const Regime& regime, const QString& profile = QStringLiteral("kernelbench-fp32"),
                  bool sweep = false, QJsonObject extra = {})
{
    extra.insert(QStringLiteral("protocol_profile"), profile);
    extra.insert(QStringLiteral("regime"), regime.toJson());
    if (sweep)
        extra.insert(QStringLiteral("sweep"), QJsonObject{{QStringLiteral("ns"), QJsonArray{1, 2, 4, 8}}});
    RunInfo info;
    info.id = id;
    info.regime = regime.name;
    info.name = regime.name + QStringLiteral(" L1:1-10");
    info.setConfig(extra);
    return info;
}

Regime builtin(const char* name)
{
    return *Regime::builtin(QString::fromLatin1(name));
}

} // namespace

class TestRunName : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void plainRunsAreTheirRegime()
    {
        QCOMPARE(runLabel(storedRun(1, builtin("zero-shot"))), QStringLiteral("#1 zero-shot"));
        QCOMPARE(runLabel(storedRun(4, builtin("agent"))), QStringLiteral("#4 agent"));
        QVERIFY(runDistinctions(storedRun(5, builtin("pilot-v1"))).isEmpty());
    }

    void ablationsNameOnlyTheSwitchNotItsConsequences()
    {
        // -best_of_n sets n = 1: that is the switch, not a separate "n=1".
        Ablations off;
        off.bestOfN = false;
        const Regime ablated = builtin("agent").withAblations(off);
        QCOMPARE(runDistinctions(storedRun(7, ablated)), QStringList{QStringLiteral("−best_of_n")});
        off = Ablations{};
        off.competenceMatched = false; // swaps the answer template for the pilot's: still only the switch
        QCOMPARE(runDistinctions(storedRun(10, builtin("agent").withAblations(off))),
                 QStringList{QStringLiteral("−competence_matched")});
    }

    void changedSettingsAreNamed()
    {
        Regime sweep = builtin("agent");
        sweep.n = 8;
        sweep.turns = 1;
        QCOMPARE(runLabel(storedRun(6, sweep, QStringLiteral("kernelbench-fp32"), true)),
                 QStringLiteral("#6 agent n=8 1 turn sweep"));
        // A sweep's n = 4 run is the regime's own n, yet the one thing telling it from n = 2 or 8.
        QCOMPARE(runLabel(storedRun(8, builtin("agent"), QStringLiteral("kernelbench-fp32"), true)),
                 QStringLiteral("#8 agent n=4 sweep"));
        Regime format = builtin("zero-shot");
        format.roles.insert(RegimeRole::Generator, QStringLiteral("json-answer/generator.mustache"));
        QCOMPARE(runDescription(storedRun(2, format)), QStringLiteral("zero-shot answer json-answer/generator"));
        QCOMPARE(runDescription(storedRun(3, builtin("iterative"), QStringLiteral("kernelbench"))),
                 QStringLiteral("iterative profile kernelbench"));
        Regime cold = builtin("agent");
        cold.temperature = 0.2;
        QCOMPARE(runDistinctions(storedRun(8, cold)), QStringList{QStringLiteral("T=0.2")});
        // Later turns shown the best so far instead of the last attempt (issue 36).
        Regime best = builtin("iterative");
        best.feedbackSource = FeedbackSource::Best;
        QCOMPARE(runDistinctions(storedRun(11, best)), QStringList{QStringLiteral("feedback=best")});
        QCOMPARE(runDistinctions(storedRun(9, builtin("agent"), QStringLiteral("kernelbench-fp32"), false,
                                           QJsonObject{{QStringLiteral("compile_only"), true}})),
                 QStringList{QStringLiteral("compile-only")});
    }

    void theStudysRunsAreAllDistinct()
    {
        // The ten runs of the study database (bench/results/2026-11-30-study-fixture-llm-h200.db.xz).
        QList<RunInfo> runs;
        qint64 id = 0;
        for (const char* name : {"zero-shot", "profiling-guided", "iterative", "agent", "pilot-v1"})
            runs << storedRun(++id, builtin(name));
        Regime sweep = builtin("agent");
        sweep.n = 8;
        sweep.turns = 1;
        runs << storedRun(++id, sweep, QStringLiteral("kernelbench-fp32"), true);
        for (const char* off : {"best_of_n", "feedback_analyzer", "monotone", "competence_matched"})
            runs << storedRun(++id,
                              builtin("agent").withAblations(Ablations::fromOffNames({QString::fromLatin1(off)})));
        QCOMPARE(runs.size(), 10);
        QSet<QString> names;
        for (const RunInfo& run : runs)
            names.insert(runDescription(run));
        QCOMPARE(names.size(), 10);
    }

    void aRunWithoutAStoredRegimeIsItsRegimeName()
    {
        RunInfo old;
        old.id = 2;
        old.regime = QStringLiteral("agent");
        QCOMPARE(runLabel(old), QStringLiteral("#2 agent"));
    }

    void anImportIsNamedByItsRunFolder()
    {
        // One corpus's run folders differ by nothing else (github.com/technoabsurdist/KernelBench: 9).
        RunInfo imported;
        imported.id = 3;
        imported.regime = QStringLiteral("import");
        imported.setConfig(
            QJsonObject{{QStringLiteral("compile_only"), true},
                        {QStringLiteral("import"),
                         QJsonObject{{QStringLiteral("directory"), QStringLiteral("/c/runs/gemini_level1_run")},
                                     {QStringLiteral("run_folder"), QStringLiteral("runs/gemini_level1_run")}}}});
        QCOMPARE(runLabel(imported), QStringLiteral("#3 import gemini_level1_run compile-only"));
        // DIR itself is the run folder: its name.
        imported.setConfig(QJsonObject{
            {QStringLiteral("import"), QJsonObject{{QStringLiteral("directory"), QStringLiteral("/c/opus4_level2/")},
                                                   {QStringLiteral("run_folder"), QString()}}}});
        QCOMPARE(runLabel(imported), QStringLiteral("#3 import opus4_level2"));
    }

    void aRegimeOfTheUsersOwnShowsItsShape()
    {
        Regime mine = builtin("agent");
        mine.name = QStringLiteral("my-regime");
        mine.n = 2;
        QCOMPARE(runDescription(storedRun(11, mine)), QStringLiteral("my-regime n=2 3 turns"));
    }
};

QTEST_GUILESS_MAIN(TestRunName)
#include "tst_runname.moc"
