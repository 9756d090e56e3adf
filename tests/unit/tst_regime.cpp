// Regimes as data (src/core/run/regime.h): the built-ins carry the study's settings, every template
// they name exists, ablations change what they should, JSON round-trips, routing.

#include "core/run/regime.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonArray>
#include <QTest>

using namespace kwb;

class TestRegime : public QObject
{
    Q_OBJECT

    static Regime builtin(const char* name) { return *Regime::builtin(QString::fromLatin1(name)); }

private Q_SLOTS:
    void fieldsOfReadsWhatFromJsonRefuses()
    {
        // A stored regime fromJson would refuse (no generator role, unknown feedback): a report
        // still sees its selection and ablations.
        const QJsonObject stored{{QStringLiteral("name"), QStringLiteral("agent")},
                                 {QStringLiteral("feedback"), QStringLiteral("telepathy")},
                                 {QStringLiteral("selection"), QStringLiteral("last")},
                                 {QStringLiteral("ablated"), QJsonArray{QStringLiteral("monotone")}}};
        QVERIFY(!Regime::fromJson(stored));
        const Regime r = Regime::fieldsOf(stored);
        QVERIFY(r.selection == SelectionMode::Last);
        QCOMPARE(r.ablated, QStringList{QStringLiteral("monotone")});
        QVERIFY(Regime::fieldsOf(QJsonObject{}).selection == SelectionMode::Monotone);
        // fromJson reads the same fields.
        const Regime agent = *Regime::builtin(QStringLiteral("agent"));
        QCOMPARE(Regime::fromJson(agent.toJson())->toJson(), Regime::fieldsOf(agent.toJson()).toJson());
    }

    void builtinsMatchTheStudy()
    {
        QCOMPARE(Regime::builtinNames().size(), 5);
        const Regime zero = builtin("zero-shot");
        QCOMPARE(zero.n, 1);
        QCOMPARE(zero.turns, 1);
        QCOMPARE(toString(zero.feedback), toString(FeedbackMode::None));
        QVERIFY(!zero.useProfile);
        QCOMPARE(zero.roles.keys(), QStringList{RegimeRole::Generator});

        const Regime guided = builtin("profiling-guided");
        QCOMPARE(guided.n, 1);
        QCOMPARE(guided.turns, 1);
        QVERIFY(guided.useProfile);

        const Regime iterative = builtin("iterative");
        QCOMPARE(iterative.n, 1);
        QCOMPARE(iterative.turns, 3);
        QCOMPARE(toString(iterative.feedback), toString(FeedbackMode::RawLog));
        QVERIFY(iterative.stopWhenCorrect);
        QCOMPARE(iterative.answerTemplate(1), QStringLiteral("iterative/generator.mustache"));
        QCOMPARE(iterative.answerTemplate(2), QStringLiteral("iterative/retry.mustache"));

        const Regime agent = builtin("agent");
        QCOMPARE(agent.n, 4);
        QCOMPARE(*agent.temperature, 0.7);
        QCOMPARE(agent.turns, 3);
        QCOMPARE(toString(agent.selection), toString(SelectionMode::Monotone));
        QCOMPARE(toString(agent.feedback), toString(FeedbackMode::Rewrite));
        QCOMPARE(agent.rewriteRole(), RegimeRole::Triager);
        QStringList agentRoles{RegimeRole::Analyzer, RegimeRole::Researcher, RegimeRole::Generator,
                               RegimeRole::Triager};
        agentRoles.sort();
        QCOMPARE(agent.roles.keys(), agentRoles);
        QCOMPARE(agent.answerTemplate(2), QStringLiteral("agent/generator.mustache"));

        const Regime pilot = builtin("pilot-v1");
        QCOMPARE(pilot.n, 1);
        QCOMPARE(toString(pilot.selection), toString(SelectionMode::Last));
        QCOMPARE(pilot.rewriteRole(), RegimeRole::Critic);
        QVERIFY(!pilot.stopWhenCorrect);
        QVERIFY(!Regime::builtin(QStringLiteral("nope")).has_value());
    }

    // Temperature and seed are the regime's, never the server's default: 0.0 where the study
    // gives none (KernelBench generates greedily), the agent's 0.7; one seed; both stored.
    void temperatureAndSeedAreExplicit()
    {
        for (const QString& name : Regime::builtinNames()) {
            const Regime r = *Regime::builtin(name);
            QVERIFY2(r.temperature.has_value(), qPrintable(name));
            QVERIFY2(r.seed.has_value(), qPrintable(name));
            QCOMPARE(*r.seed, kRegimeModelSeed);
            QCOMPARE(*r.temperature, name == QLatin1String("agent") ? 0.7 : 0.0);
            const QJsonObject json = r.toJson();
            QCOMPARE(json.value(QLatin1String("temperature")).toDouble(-1), *r.temperature);
            QCOMPARE(json.value(QLatin1String("seed")).toInteger(), kRegimeModelSeed);
            QCOMPARE(Regime::fromJson(json)->seed, r.seed);
        }
        // A run stored before regimes had a seed reads back without one.
        QJsonObject old = builtin("zero-shot").toJson();
        old.remove(QStringLiteral("seed"));
        QVERIFY(!Regime::fieldsOf(old).seed.has_value());
    }

    void everyTemplateExists()
    {
        for (const QString& name : Regime::builtinNames()) {
            const Regime r = *Regime::builtin(name);
            QVERIFY(r.isValid());
            for (const QString& path : r.roles)
                QVERIFY2(QFileInfo::exists(QStringLiteral(KWB_PROMPTS_DIR "/") + path), qPrintable(path));
        }
        const Regime ablated =
            builtin("agent").withAblations(Ablations::fromOffNames({QStringLiteral("competence_matched")}));
        for (const QString& path : ablated.roles)
            QVERIFY2(QFileInfo::exists(QStringLiteral(KWB_PROMPTS_DIR "/") + path), qPrintable(path));
    }

    // The regimes are defined once, here in C++ (docs/decisions.md, 2026-12-03): each shipped
    // template set holds exactly the role templates the built-ins and the competence ablation name,
    // no more and no fewer, and no set carries a manifest of its own that could say otherwise.
    void everyShippedSetHasTheRegimesTemplates_data()
    {
        QTest::addColumn<QString>("dir");
        QTest::newRow("study") << QStringLiteral(KWB_PROMPTS_DIR);
        QTest::newRow("workbench-v1") << QStringLiteral(KWB_PROMPTS_DIR "/../prompts-workbench-v1");
        QTest::newRow("kernelbench") << QStringLiteral(KWB_PROMPTS_DIR "/../prompts-kernelbench");
    }

    void everyShippedSetHasTheRegimesTemplates()
    {
        QFETCH(QString, dir);
        QStringList named;
        for (const QString& name : Regime::builtinNames())
            named << Regime::builtin(name)->roles.values();
        named << builtin("agent")
                     .withAblations(Ablations::fromOffNames({QStringLiteral("competence_matched")}))
                     .roles.values();
        named.removeDuplicates();
        named.sort();
        QStringList present;
        QDirIterator it(dir, {QStringLiteral("*.mustache")}, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString rel = QDir(dir).relativeFilePath(it.next());
            if (!rel.startsWith(QLatin1String("partials/")))
                present << rel;
        }
        present.sort();
        QCOMPARE(present, named);
        QVERIFY(!QFileInfo::exists(QDir(dir).filePath(QStringLiteral("manifest.toml"))));
    }

    void ablations()
    {
        const Regime agent = builtin("agent");
        QVERIFY(agent.withAblations({}) == agent);

        Ablations a;
        a.bestOfN = false;
        const Regime n1 = agent.withAblations(a);
        QCOMPARE(n1.n, 1);
        QCOMPARE(n1.turns, 3);
        QCOMPARE(n1.ablated, QStringList{QStringLiteral("best_of_n")});

        a = {};
        a.feedbackAnalyzer = false;
        const Regime raw = agent.withAblations(a);
        QCOMPARE(toString(raw.feedback), toString(FeedbackMode::RawLog));
        QCOMPARE(raw.n, 4);

        a = {};
        a.monotone = false;
        QCOMPARE(toString(agent.withAblations(a).selection), toString(SelectionMode::Last));

        // The competence switch removes the competence section (guidance and, in KernelBench's
        // format, the load_inline pin) and nothing else (issue 36 item 2): the agent's own
        // templates, n, temperature, turns, feedback and selection stay.
        a = {};
        a.competenceMatched = false;
        QVERIFY(agent.competenceGuidance());
        const Regime noGuidance = agent.withAblations(a);
        QVERIFY(!noGuidance.competenceGuidance());
        QCOMPARE(noGuidance.roles, agent.roles);
        Regime rest = noGuidance;
        rest.ablated.clear();
        QVERIFY(rest == agent);
        QCOMPARE(noGuidance.ablated, QStringList{QStringLiteral("competence_matched")});
        // Stored and read back, the switch stays off.
        QVERIFY(!Regime::fromJson(noGuidance.toJson())->competenceGuidance());

        QString unknown;
        const Ablations parsed =
            Ablations::fromOffNames({QStringLiteral("monotone"), QStringLiteral("bogus")}, &unknown);
        QVERIFY(!parsed.monotone);
        QVERIFY(parsed.bestOfN);
        QCOMPARE(unknown, QStringLiteral("bogus"));
        QCOMPARE(parsed.offNames(), QStringList{QStringLiteral("monotone")});
    }

    void jsonRoundTrip()
    {
        for (const QString& name : Regime::builtinNames()) {
            const Regime r = *Regime::builtin(name);
            const auto back = Regime::fromJson(r.toJson());
            QVERIFY(back);
            QVERIFY(*back == r);
        }
        Ablations a;
        a.bestOfN = false;
        const Regime ablated = builtin("agent").withAblations(a);
        QVERIFY(*Regime::fromJson(ablated.toJson()) == ablated);

        QString error;
        QJsonObject bad = builtin("zero-shot").toJson();
        bad.insert(QStringLiteral("feedback"), QStringLiteral("psychic"));
        QVERIFY(!Regime::fromJson(bad, &error));
        QVERIFY(error.contains(QStringLiteral("psychic")));
        bad = builtin("zero-shot").toJson();
        bad.insert(QStringLiteral("roles"), QJsonObject{});
        QVERIFY(!Regime::fromJson(bad, &error));
        bad = builtin("zero-shot").toJson();
        bad.insert(QStringLiteral("n"), 0);
        QVERIFY(!Regime::fromJson(bad, &error));
    }

    void routing()
    {
        const Routing r = Routing::studyEstimate();
        QCOMPARE(r.regimeFor(1), QStringLiteral("profiling-guided"));
        QCOMPARE(r.regimeFor(2), QStringLiteral("agent"));
        QCOMPARE(r.regimeFor(3), QStringLiteral("profiling-guided"));
        const Routing back = Routing::fromJson(r.toJson());
        QCOMPARE(back.byLevel, r.byLevel);
        QCOMPARE(back.fallback, r.fallback);
        for (const QString& name : r.byLevel)
            QVERIFY(Regime::builtin(name).has_value());
    }
};

QTEST_GUILESS_MAIN(TestRegime)
#include "tst_regime.moc"
