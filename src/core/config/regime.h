#pragma once
// Regimes as data (ARCHITECTURE.md §8): which prompt template each role renders, candidates per
// turn, turns, temperature, what feedback goes back to the next turn and how the candidate of a
// task is selected across turns. The regimes are defined in TOML, and only there (regimefile.h):
// the study's five are built in (builtin(), regimes/study.toml compiled in), a user's are found by
// find(). A run stores its regime with toJson() and fromJson() reads it back, so a resumed run uses
// the same settings. Ablations (the study's "switch off one part at a time") are applied with
// withAblations(). A template set holds only the regimes' wording, one file per role.

#include <QJsonObject>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

/// Role names: the keys of Regime::roles (a built-in's template is `<regime>/<role>.mustache` of
/// every shipped set); generator and retry write the answer, the others notes for the next role.
namespace RegimeRole {
inline const QString Analyzer = QStringLiteral("analyzer");     ///< notes -> `analysis` (turn 1)
inline const QString Researcher = QStringLiteral("researcher"); ///< notes -> `research` (turn 1)
inline const QString Generator = QStringLiteral("generator"); ///< the answer (turn 1, and later turns without `retry`)
inline const QString Retry = QStringLiteral("retry");         ///< the answer on turns 2…
inline const QString Triager = QStringLiteral("triager");     ///< notes -> `diagnosis` (turns 2…)
inline const QString Critic = QStringLiteral("critic");       ///< notes -> `critique` (turns 2…)
} // namespace RegimeRole

/// What goes back to the model on turns 2….
enum class FeedbackMode {
    None,    ///< no later turns
    RawLog,  ///< the previous answer and the evaluator's report as they are
    Rewrite, ///< also the triager's (or the pilot critic's) rewrite of it
};

/// Which candidate turns 2… are shown (issue 36): the last attempt, as the study's retries on the
/// error log, or the best so far. What is shown never decides what the task keeps (`selection`).
enum class FeedbackSource {
    Last, ///< the best candidate of the previous turn (its n samples share one prompt), even when worse
    Best, ///< the best candidate of every turn so far (monotone; ties keep the earlier turn)
};

/// How the candidate of a task is chosen across turns (selection.h).
enum class SelectionMode {
    Monotone, ///< the best over all turns (correct, then compiled, then speedup); a later turn never displaces a better
              ///< earlier one
    Last,     ///< the best of the last turn that produced candidates (the pilot's behaviour)
};

QString toString(FeedbackMode mode);
QString toString(SelectionMode mode);
QString toString(FeedbackSource source); ///< "last", "best"
std::optional<FeedbackMode> feedbackModeFromString(const QString& text);
std::optional<FeedbackSource> feedbackSourceFromString(const QString& text);
std::optional<SelectionMode> selectionModeFromString(const QString& text);

/// The study's ablation switches: each `false` switches that part off.
struct Ablations
{
    bool bestOfN = true;           ///< off: n = 1
    bool feedbackAnalyzer = true;  ///< off: the raw error goes back, no triager/critic rewrite
    bool monotone = true;          ///< off: selection "last"
    bool competenceMatched = true; ///< off: no competence guidance and no load_inline pin (`competence` false)

    bool allOn() const { return bestOfN && feedbackAnalyzer && monotone && competenceMatched; }
    /// Names of the switches that are off: "best_of_n", "feedback_analyzer", "monotone", "competence_matched".
    QStringList offNames() const;
    /// From names as offNames() gives them; an unknown name sets *unknown (when given) and is ignored.
    static Ablations fromOffNames(const QStringList& names, QString* unknown = nullptr);
};

struct Regime
{
    QString name; ///< "zero-shot", "agent", … (unchanged by ablations: see `ablated`)
    QString description;
    /// Role -> template path relative to the prompts dir ("agent/generator.mustache").
    QMap<QString, QString> roles;
    int n = 1;     ///< candidates per turn
    int turns = 1; ///< at most
    /// Every built-in regime sets both (regimes/study.toml): 0.0 where the study gives none, as
    /// KernelBench generates, the agent's 0.7. Unset in runs stored before they were, and in a
    /// user's regime that leaves them out.
    std::optional<double> temperature; ///< unset: the model client's setting
    std::optional<qint64> seed;        ///< the model's base seed (sample k of turn t: modelSeedFor, runcontroller.h)
    FeedbackMode feedback = FeedbackMode::None;
    SelectionMode selection = SelectionMode::Monotone;
    /// `feedback_source` in JSON (missing: the default; planResume reads a run stored before the
    /// option as Best, which it was made with).
    FeedbackSource feedbackSource = FeedbackSource::Last;
    bool useProfile = false; ///< the worker's `profile` goes into the prompt context
    /// No further turn once a task has a correct candidate (zero-shot, guided, iterative: a retry
    /// fixes an error). The agent and the pilot go on for speed; `--stop-when-correct` sets it.
    bool stopWhenCorrect = true;
    QStringList ablated; ///< the switches that are off (Ablations::offNames)

    bool isValid() const { return !name.isEmpty() && roles.contains(RegimeRole::Generator) && n >= 1 && turns >= 1; }
    /// The template the answer role renders on `turn` (from 1): `retry` on turns 2… where there is one.
    QString answerTemplate(int turn) const;
    QString answerRole(int turn) const;
    /// The notes role that rewrites the feedback (triager or critic), empty when there is none.
    QString rewriteRole() const;
    /// Whether the prompts' competence section (the guidance, and in KernelBench's format the
    /// explicit load_inline pin) is shown: the template context's `competence`. Only the agent's
    /// templates have one; the competence ablation switches it off and changes nothing else.
    bool competenceGuidance() const;

    /// This regime with the switches that are off in `ablations` applied.
    Regime withAblations(const Ablations& ablations) const;

    QJsonObject toJson() const;
    /// False (with *error) for a missing name or generator role, n or turns below 1, an unknown mode.
    static std::optional<Regime> fromJson(const QJsonObject& json, QString* error = nullptr);
    /// The fields of a stored regime as they are, without fromJson's checks (defaults for what is
    /// missing or unknown): for readers of any stored run, such as reports, that only look.
    static Regime fieldsOf(const QJsonObject& json);

    /// The built-in regimes in the order of regimes/study.toml: zero-shot, profiling-guided,
    /// iterative, agent, pilot-v1 (compiled in: no file is read, so never a new failure).
    static QStringList builtinNames();
    static std::optional<Regime> builtin(const QString& name);
    /// A built-in regime, else one of the user's regimes folder (regimefile.h); nullopt with *error
    /// naming the regimes there are and any user file that did not load.
    static std::optional<Regime> find(const QString& name, QString* error = nullptr);

    friend bool operator==(const Regime& a, const Regime& b);
    friend bool operator!=(const Regime& a, const Regime& b) { return !(a == b); }
};

/// A regime per KernelBench level.
struct Routing
{
    QMap<int, QString> byLevel; ///< level -> regime name
    QString fallback;           ///< for a level the map does not name

    QString regimeFor(int level) const { return byLevel.value(level, fallback); }
    /// The study's estimate: levels 1 and 3 profiling-guided, level 2 the agent.
    static Routing studyEstimate();
    QJsonObject toJson() const;
    static Routing fromJson(const QJsonObject& json);
};

} // namespace kwb
