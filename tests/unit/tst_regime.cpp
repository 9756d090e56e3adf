// Regimes as data (src/core/config/regime.h, regimefile.h): the built-ins (regimes/study.toml, compiled
// in) are the C++ table they replaced, every template they name exists, every error of a regime
// file names its file, line, regime and key, a user's folder adds regimes, ablations change what
// they should, JSON round-trips, routing.

#include "core/config/regime.h"
#include "core/run/regimefile.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;

// The model seed of the built-in regimes (regimes/study.toml): the study ran one seed.
constexpr qint64 kRegimeModelSeed = 42;

namespace {

// A valid user regime, one key per line, so an error's line is known: `[[regime]]` is line 1.
const QStringList kBaseLines{QStringLiteral("[[regime]]"),
                             QStringLiteral("name = \"mine\""),
                             QStringLiteral("description = \"Mine\""),
                             QStringLiteral("roles = { generator = \"zero-shot/generator.mustache\" }"),
                             QStringLiteral("n = 1"),
                             QStringLiteral("turns = 1"),
                             QStringLiteral("feedback = \"none\""),
                             QStringLiteral("selection = \"monotone\"")};

/// The base regime with `key = value` in place of its line (appended when it has none; removed for
/// an empty value), and the line it is on.
QByteArray withKey(const QString& key, const QString& value, int* line = nullptr)
{
    QStringList lines = kBaseLines;
    int at = -1;
    for (int i = 0; i < lines.size(); ++i)
        if (lines[i].startsWith(key + QStringLiteral(" = ")))
            at = i;
    if (value.isEmpty()) {
        lines.removeAt(at);
    } else if (at >= 0) {
        lines[at] = key + QStringLiteral(" = ") + value;
    } else {
        lines << key + QStringLiteral(" = ") + value;
        at = int(lines.size()) - 1;
    }
    if (line)
        *line = at + 1;
    return lines.join(QLatin1Char('\n')).toUtf8() + '\n';
}

bool writeFile(const QString& path, const QByteArray& text)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
}

} // namespace

class TestRegime : public QObject
{
    Q_OBJECT

    static Regime builtin(const char* name) { return *Regime::builtin(QString::fromLatin1(name)); }

private Q_SLOTS:
    // Every field of the five built-ins as the C++ table defined them (regime.cpp before the
    // regimes became regimes/study.toml, issue 34): the file must give exactly these, key for key,
    // and a field Regime gains must be added here.
    void builtinsAreTheCppTableFieldForField_data()
    {
        QTest::addColumn<QJsonObject>("expected");
        const auto regime = [](const char* name, const char* description, const QJsonObject& roles, int n, int turns,
                               double temperature, const char* feedback, const char* selection, bool useProfile,
                               bool stopWhenCorrect) {
            QTest::newRow(name) << QJsonObject{{QStringLiteral("name"), QString::fromLatin1(name)},
                                               {QStringLiteral("description"), QString::fromLatin1(description)},
                                               {QStringLiteral("roles"), roles},
                                               {QStringLiteral("n"), n},
                                               {QStringLiteral("turns"), turns},
                                               {QStringLiteral("temperature"), temperature},
                                               {QStringLiteral("seed"), 42},
                                               {QStringLiteral("feedback"), QString::fromLatin1(feedback)},
                                               {QStringLiteral("selection"), QString::fromLatin1(selection)},
                                               {QStringLiteral("feedback_source"), QStringLiteral("last")},
                                               {QStringLiteral("use_profile"), useProfile},
                                               {QStringLiteral("stop_when_correct"), stopWhenCorrect},
                                               {QStringLiteral("ablated"), QJsonArray{}}};
        };
        const auto roles = [](const char* regimeName, std::initializer_list<const char*> names) {
            QJsonObject o;
            for (const char* role : names)
                o.insert(
                    QString::fromLatin1(role),
                    QStringLiteral("%1/%2.mustache").arg(QString::fromLatin1(regimeName), QString::fromLatin1(role)));
            return o;
        };
        regime("zero-shot", "KernelBench-style zero-shot: the task and the answer format",
               roles("zero-shot", {"generator"}), 1, 1, 0.0, "none", "monotone", false, true);
        regime("profiling-guided", "Zero-shot plus the top operators by CUDA time and the roofline rule",
               roles("profiling-guided", {"generator"}), 1, 1, 0.0, "none", "monotone", true, true);
        regime("iterative", "Zero-shot first turn, then retries on the evaluator's raw report (3 turns)",
               roles("iterative", {"generator", "retry"}), 1, 3, 0.0, "raw_log", "monotone", false, true);
        regime("agent",
               "The repaired agent: competence-matched prompts, best-of-4 at T=0.7, 3 turns, monotone selection",
               roles("agent", {"analyzer", "researcher", "generator", "triager"}), 4, 3, 0.7, "rewrite", "monotone",
               true, false);
        regime("pilot-v1",
               "The pilot agent: custom tiled CUDA everywhere, a critic asking for more, the last turn wins",
               roles("pilot-v1", {"analyzer", "researcher", "generator", "critic"}), 1, 3, 0.0, "rewrite", "last",
               false, false);
    }

    void builtinsAreTheCppTableFieldForField()
    {
        QFETCH(QJsonObject, expected);
        const QString name = expected.value(QLatin1String("name")).toString();
        const std::optional<Regime> r = Regime::builtin(name);
        QVERIFY(r);
        const QJsonObject actual = r->toJson();
        QCOMPARE(actual.keys(), expected.keys());
        for (const QString& key : expected.keys())
            QVERIFY2(actual.value(key) == expected.value(key), qPrintable(key));
        QCOMPARE(Regime::builtinNames(),
                 (QStringList{QStringLiteral("zero-shot"), QStringLiteral("profiling-guided"),
                              QStringLiteral("iterative"), QStringLiteral("agent"), QStringLiteral("pilot-v1")}));
    }

    // The compiled-in file is the source tree's regimes/study.toml, the one that is installed.
    void builtinsAreTheShippedFile()
    {
        QFile resource(QStringLiteral(":/kernel-workbench/regimes/study.toml"));
        QFile source(QStringLiteral(KWB_SOURCE_DIR "/regimes/study.toml"));
        QVERIFY(resource.open(QIODevice::ReadOnly));
        QVERIFY(source.open(QIODevice::ReadOnly));
        QCOMPARE(resource.readAll(), source.readAll());
        const RegimeFileLoad load = loadRegimeFile(source.fileName());
        QVERIFY2(load.ok(), qPrintable(load.error));
        QCOMPARE(load.regimes.size(), Regime::builtinNames().size());
        for (const Regime& r : load.regimes)
            QVERIFY(r == *Regime::builtin(r.name));
    }

    void aValidFileLoads()
    {
        const RegimeFileLoad load =
            parseRegimeFile(withKey(QStringLiteral("temperature"), QStringLiteral("0")), QStringLiteral("mine.toml"));
        QVERIFY2(load.ok(), qPrintable(load.error));
        QCOMPARE(load.regimes.size(), 1);
        const Regime& r = load.regimes.first();
        QCOMPARE(r.name, QStringLiteral("mine"));
        QCOMPARE(*r.temperature, 0.0); // an integer is a temperature too
        // What the file leaves out: the server's temperature is not set here, no seed, and the
        // defaults of Regime for the rest.
        const Regime bare =
            parseRegimeFile(withKey(QStringLiteral("n"), QStringLiteral("2")), QStringLiteral("m")).regimes.value(0);
        QCOMPARE(bare.n, 2);
        QVERIFY(!bare.temperature);
        QVERIFY(!bare.seed);
        QVERIFY(bare.feedbackSource == FeedbackSource::Last);
        QVERIFY(!bare.useProfile);
        QVERIFY(bare.stopWhenCorrect);
        QVERIFY(bare.isValid());
    }

    // Every check of a regime file: the error names the file, the line, the regime and the key.
    void badFilesSayWhatIsWrong_data()
    {
        QTest::addColumn<QByteArray>("toml");
        QTest::addColumn<QString>("error");
        const auto key = [](const char* tag, const char* name, const char* value, const char* what) {
            int line = 0;
            const QByteArray text = withKey(QString::fromLatin1(name), QString::fromUtf8(value), &line);
            // A missing key is reported at its [[regime]] table, line 1.
            QTest::newRow(tag) << text
                               << QStringLiteral("bad.toml:%1: regime[0] (mine).%2: %3")
                                      .arg(*value ? line : 1)
                                      .arg(QString::fromLatin1(name), QString::fromUtf8(what));
        };
        QTest::newRow("not TOML") << QByteArray("[[regime]\n") << QStringLiteral("bad.toml:1:");
        QTest::newRow("unknown top-level key")
            << QByteArray("format = 1\n") + withKey(QStringLiteral("n"), QStringLiteral("1"))
            << QStringLiteral("bad.toml:1: format: unknown key (known: regime)");
        QTest::newRow("no regime") << QByteArray("# nothing\n") << QStringLiteral("bad.toml: no [[regime]] table");
        QTest::newRow("regime not tables")
            << QByteArray("regime = 3\n")
            << QStringLiteral("bad.toml:1: regime: must be [[regime]] tables, not an integer");
        QTest::newRow("no name") << withKey(QStringLiteral("name"), QString())
                                 << QStringLiteral("bad.toml:1: regime[0].name: missing");
        QTest::newRow("name with a space")
            << withKey(QStringLiteral("name"), QStringLiteral("\"my regime\""))
            << QStringLiteral("bad.toml:2: regime[0].name: \"my regime\" is not a regime name");
        QTest::newRow("the same name twice")
            << withKey(QStringLiteral("n"), QStringLiteral("1")) + withKey(QStringLiteral("n"), QStringLiteral("1"))
            << QStringLiteral("regime[1] (mine).name: \"mine\" is already a regime of this file");
        key("unknown key", "ablated", "[\"monotone\"]",
            "unknown key (known: name, description, roles, n, turns, "
            "temperature, seed, feedback, feedback_source, selection, "
            "use_profile, stop_when_correct)");
        key("no description", "description", "", "missing");
        key("empty description", "description", "\" \"", "must not be empty");
        key("description not a string", "description", "3", "must be a string, not an integer");
        key("no roles", "roles", "", "missing");
        key("roles not a table", "roles", "\"agent\"", "must be a table, not a string");
        key("no generator", "roles", "{ retry = \"iterative/retry.mustache\" }", "needs a generator");
        key("a triager and a critic", "roles",
            "{ generator = \"a/g.mustache\", triager = \"a/t.mustache\", critic = \"a/c.mustache\" }",
            "has a triager and a critic: the feedback is rewritten by one of them");
        QTest::newRow("unknown role")
            << withKey(QStringLiteral("roles"),
                       QStringLiteral("{ generator = \"a/g.mustache\", writer = \"a/w.mustache\" }"))
            << QStringLiteral("bad.toml:4: regime[0] (mine).roles.writer: unknown key (known: analyzer, researcher, "
                              "generator, retry, triager, critic)");
        QTest::newRow("role not a path") << withKey(QStringLiteral("roles"), QStringLiteral("{ generator = 1 }"))
                                         << QStringLiteral("bad.toml:4: regime[0] (mine).roles.generator: must be a "
                                                           "template path, not an integer");
        for (const char* path : {"/etc/passwd.mustache", "../outside/g.mustache", "agent/generator.txt"})
            QTest::newRow(path) << withKey(QStringLiteral("roles"),
                                           QStringLiteral("{ generator = \"%1\" }").arg(QString::fromLatin1(path)))
                                << QStringLiteral("bad.toml:4: regime[0] (mine).roles.generator: \"%1\" is not a "
                                                  "template path inside a template set")
                                       .arg(QString::fromLatin1(path));
        key("no n", "n", "", "missing");
        key("n zero", "n", "0", "must be an integer from 1 to 64, not 0");
        key("n too many", "n", "65", "must be an integer from 1 to 64, not 65");
        key("n a string", "n", "\"4\"", "must be an integer from 1 to 64, not a string");
        key("n a fraction", "n", "1.5", "must be an integer from 1 to 64, not a number with a fraction");
        key("no turns", "turns", "", "missing");
        key("turns too many", "turns", "33", "must be an integer from 1 to 32, not 33");
        key("negative seed", "seed", "-1", "must be an integer from 0 to 9007199254740992, not -1");
        key("temperature too high", "temperature", "2.5", "must be a number from 0 to 2, not 2.5");
        key("temperature a string", "temperature", "\"hot\"", "must be a number from 0 to 2, not a string");
        key("no feedback", "feedback", "", "missing");
        key("unknown feedback", "feedback", "\"psychic\"", "\"psychic\" is none of none, raw_log, rewrite");
        key("no selection", "selection", "", "missing");
        key("unknown selection", "selection", "\"best\"", "\"best\" is none of monotone, last");
        key("unknown feedback source", "feedback_source", "\"first\"", "\"first\" is none of last, best");
        key("use_profile not a boolean", "use_profile", "\"yes\"", "must be true or false, not a string");
        key("stop_when_correct not a boolean", "stop_when_correct", "1", "must be true or false, not an integer");
        key("turns without feedback", "turns", "3",
            "3 turns with feedback = \"none\": turns after the first never run");
        key("rewrite without a rewriter", "feedback", "\"rewrite\"",
            "\"rewrite\" needs a triager or a critic role to rewrite it");
        QTest::newRow("a triager without rewrite")
            << withKey(QStringLiteral("roles"),
                       QStringLiteral("{ generator = \"a/g.mustache\", triager = \"a/t.mustache\" }"))
            << QStringLiteral("bad.toml:7: regime[0] (mine).feedback: the triager role is used only with feedback = "
                              "\"rewrite\"");
        QTest::newRow("a retry without feedback")
            << withKey(QStringLiteral("roles"),
                       QStringLiteral("{ generator = \"a/g.mustache\", retry = \"a/r.mustache\" }"))
            << QStringLiteral("bad.toml:4: regime[0] (mine).roles.retry: a retry needs feedback (raw_log or rewrite) "
                              "and turns above 1");
    }

    void badFilesSayWhatIsWrong()
    {
        QFETCH(QByteArray, toml);
        QFETCH(QString, error);
        const RegimeFileLoad load = parseRegimeFile(toml, QStringLiteral("bad.toml"));
        QVERIFY(!load.ok());
        QVERIFY(load.regimes.isEmpty()); // nothing of a bad file is used
        QVERIFY2(load.error.startsWith(error) ||
                     (!error.startsWith(QLatin1String("bad.toml")) && load.error.contains(error)),
                 qPrintable(QStringLiteral("%1\nexpected: %2").arg(load.error, error)));
    }

    // A user's folder: its regimes follow the built-ins; a bad file, or one that takes a name
    // already taken, is not used and says why; Regime::find sees them (XDG_CONFIG_HOME's folder).
    void usersFolderAddsRegimes()
    {
        QTemporaryDir config;
        QVERIFY(config.isValid());
        const QString dir = config.filePath(QStringLiteral("kernel-workbench/regimes"));
        QVERIFY(QDir().mkpath(dir));
        QVERIFY(writeFile(dir + QStringLiteral("/mine.toml"), withKey(QStringLiteral("n"), QStringLiteral("3"))));
        QByteArray agent = withKey(QStringLiteral("n"), QStringLiteral("1"));
        agent.replace("\"mine\"", "\"agent\"");
        QVERIFY(writeFile(dir + QStringLiteral("/again.toml"), agent));
        QVERIFY(writeFile(dir + QStringLiteral("/broken.toml"), withKey(QStringLiteral("n"), QStringLiteral("0"))));
        QVERIFY(writeFile(dir + QStringLiteral("/notes.txt"), "not a regime file"));

        const RegimeCatalog catalog = regimeCatalog(dir);
        QCOMPARE(catalog.names(), Regime::builtinNames() << QStringLiteral("mine"));
        const RegimeEntry* mine = catalog.find(QStringLiteral("mine"));
        QVERIFY(mine && !mine->builtin);
        QCOMPARE(mine->file, dir + QStringLiteral("/mine.toml"));
        QCOMPARE(mine->regime.n, 3);
        QVERIFY(catalog.find(QStringLiteral("agent"))->builtin);
        QCOMPARE(catalog.errors.size(), 2);
        QCOMPARE(catalog.errors.at(0), dir + QStringLiteral("/again.toml: regime \"agent\" is already defined "
                                                            "(built in or by a file before it)"));
        QCOMPARE(catalog.errors.at(1), dir + QStringLiteral("/broken.toml:5: regime[0] (mine).n: must be an "
                                                            "integer from 1 to 64, not 0"));

        // Through the user's config folder, as kwb and the window look.
        const QByteArray saved = qgetenv("XDG_CONFIG_HOME");
        qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
        QCOMPARE(userRegimesDir(), dir);
        QVERIFY(!Regime::builtin(QStringLiteral("mine"))); // the built-ins are the compiled-in file only
        const std::optional<Regime> found = Regime::find(QStringLiteral("mine"));
        QString error;
        const std::optional<Regime> missing = Regime::find(QStringLiteral("nope"), &error);
        if (saved.isNull())
            qunsetenv("XDG_CONFIG_HOME");
        else
            qputenv("XDG_CONFIG_HOME", saved);
        QVERIFY(found);
        QCOMPARE(found->n, 3);
        QVERIFY(!missing);
        QVERIFY2(error.startsWith(QStringLiteral("unknown regime \"nope\" (zero-shot, profiling-guided, iterative, "
                                                 "agent, pilot-v1, mine); not loaded: ")),
                 qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("broken.toml:5:")), qPrintable(error));
    }

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

    // The regimes are defined once, in regimes/*.toml (docs/decisions.md, issue 34): each shipped
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
