#include "core/config/regime.h"

#include <QJsonArray>

namespace kwb {

namespace {

const QString kAblateBestOfN = QStringLiteral("best_of_n");
const QString kAblateFeedbackAnalyzer = QStringLiteral("feedback_analyzer");
const QString kAblateMonotone = QStringLiteral("monotone");
const QString kAblateCompetence = QStringLiteral("competence_matched");

} // namespace

QString toString(FeedbackMode mode)
{
    switch (mode) {
    case FeedbackMode::None: return QStringLiteral("none");
    case FeedbackMode::RawLog: return QStringLiteral("raw_log");
    case FeedbackMode::Rewrite: return QStringLiteral("rewrite");
    }
    return {};
}

QString toString(SelectionMode mode)
{
    return mode == SelectionMode::Monotone ? QStringLiteral("monotone") : QStringLiteral("last");
}

QString toString(FeedbackSource source)
{
    return source == FeedbackSource::Last ? QStringLiteral("last") : QStringLiteral("best");
}

std::optional<FeedbackSource> feedbackSourceFromString(const QString& text)
{
    for (const FeedbackSource s : {FeedbackSource::Last, FeedbackSource::Best})
        if (toString(s) == text)
            return s;
    return std::nullopt;
}

std::optional<FeedbackMode> feedbackModeFromString(const QString& text)
{
    for (const FeedbackMode m : {FeedbackMode::None, FeedbackMode::RawLog, FeedbackMode::Rewrite})
        if (toString(m) == text)
            return m;
    return std::nullopt;
}

std::optional<SelectionMode> selectionModeFromString(const QString& text)
{
    for (const SelectionMode m : {SelectionMode::Monotone, SelectionMode::Last})
        if (toString(m) == text)
            return m;
    return std::nullopt;
}

QStringList Ablations::offNames() const
{
    QStringList out;
    if (!bestOfN)
        out << kAblateBestOfN;
    if (!feedbackAnalyzer)
        out << kAblateFeedbackAnalyzer;
    if (!monotone)
        out << kAblateMonotone;
    if (!competenceMatched)
        out << kAblateCompetence;
    return out;
}

Ablations Ablations::fromOffNames(const QStringList& names, QString* unknown)
{
    Ablations a;
    for (const QString& name : names) {
        if (name == kAblateBestOfN)
            a.bestOfN = false;
        else if (name == kAblateFeedbackAnalyzer)
            a.feedbackAnalyzer = false;
        else if (name == kAblateMonotone)
            a.monotone = false;
        else if (name == kAblateCompetence)
            a.competenceMatched = false;
        else if (unknown)
            *unknown = name;
    }
    return a;
}

QString Regime::answerRole(int turn) const
{
    return turn > 1 && roles.contains(RegimeRole::Retry) ? RegimeRole::Retry : RegimeRole::Generator;
}

QString Regime::answerTemplate(int turn) const
{
    return roles.value(answerRole(turn));
}

QString Regime::rewriteRole() const
{
    if (roles.contains(RegimeRole::Triager))
        return RegimeRole::Triager;
    if (roles.contains(RegimeRole::Critic))
        return RegimeRole::Critic;
    return {};
}

Regime Regime::withAblations(const Ablations& ablations) const
{
    Regime r = *this;
    if (!ablations.bestOfN)
        r.n = 1;
    if (!ablations.feedbackAnalyzer && r.feedback == FeedbackMode::Rewrite)
        r.feedback = FeedbackMode::RawLog;
    if (!ablations.monotone)
        r.selection = SelectionMode::Last;
    // The competence switch changes no template and no setting: the agent's prompts lose their
    // competence section (competenceGuidance()), exactly the part the study counts as the repair's
    // prompts. Runs stored before issue 36 swapped in the pilot's roles; they keep their stored roles.
    for (const QString& name : ablations.offNames())
        if (!r.ablated.contains(name))
            r.ablated << name;
    return r;
}

bool Regime::competenceGuidance() const
{
    return !ablated.contains(kAblateCompetence);
}

QJsonObject Regime::toJson() const
{
    QJsonObject rolesJson;
    for (auto it = roles.cbegin(); it != roles.cend(); ++it)
        rolesJson.insert(it.key(), it.value());
    QJsonObject o{{QStringLiteral("name"), name},
                  {QStringLiteral("description"), description},
                  {QStringLiteral("roles"), rolesJson},
                  {QStringLiteral("n"), n},
                  {QStringLiteral("turns"), turns},
                  {QStringLiteral("feedback"), toString(feedback)},
                  {QStringLiteral("selection"), toString(selection)},
                  {QStringLiteral("feedback_source"), toString(feedbackSource)},
                  {QStringLiteral("use_profile"), useProfile},
                  {QStringLiteral("stop_when_correct"), stopWhenCorrect},
                  {QStringLiteral("ablated"), QJsonArray::fromStringList(ablated)}};
    if (temperature)
        o.insert(QStringLiteral("temperature"), *temperature);
    if (seed)
        o.insert(QStringLiteral("seed"), double(*seed));
    return o;
}

Regime Regime::fieldsOf(const QJsonObject& json)
{
    Regime r;
    r.name = json.value(QLatin1String("name")).toString();
    r.description = json.value(QLatin1String("description")).toString();
    const QJsonObject rolesJson = json.value(QLatin1String("roles")).toObject();
    for (auto it = rolesJson.begin(); it != rolesJson.end(); ++it)
        r.roles.insert(it.key(), it.value().toString());
    r.n = json.value(QLatin1String("n")).toInt(1);
    r.turns = json.value(QLatin1String("turns")).toInt(1);
    if (json.value(QLatin1String("temperature")).isDouble())
        r.temperature = json.value(QLatin1String("temperature")).toDouble();
    if (json.value(QLatin1String("seed")).isDouble())
        r.seed = qint64(json.value(QLatin1String("seed")).toDouble());
    r.feedback = feedbackModeFromString(json.value(QLatin1String("feedback")).toString(QStringLiteral("none")))
                     .value_or(r.feedback);
    r.selection = selectionModeFromString(json.value(QLatin1String("selection")).toString(QStringLiteral("monotone")))
                      .value_or(r.selection);
    r.feedbackSource =
        feedbackSourceFromString(json.value(QLatin1String("feedback_source")).toString(toString(r.feedbackSource)))
            .value_or(r.feedbackSource);
    r.useProfile = json.value(QLatin1String("use_profile")).toBool(false);
    r.stopWhenCorrect = json.value(QLatin1String("stop_when_correct")).toBool(true);
    for (const QJsonValue& v : json.value(QLatin1String("ablated")).toArray())
        r.ablated << v.toString();
    return r;
}

std::optional<Regime> Regime::fromJson(const QJsonObject& json, QString* error)
{
    auto fail = [error](const QString& message) -> std::optional<Regime> {
        if (error)
            *error = message;
        return std::nullopt;
    };
    const Regime r = fieldsOf(json);
    if (!feedbackModeFromString(json.value(QLatin1String("feedback")).toString(QStringLiteral("none"))))
        return fail(
            QStringLiteral("regime: unknown feedback mode '%1'").arg(json.value(QLatin1String("feedback")).toString()));
    if (!selectionModeFromString(json.value(QLatin1String("selection")).toString(QStringLiteral("monotone"))))
        return fail(
            QStringLiteral("regime: unknown selection '%1'").arg(json.value(QLatin1String("selection")).toString()));
    if (!feedbackSourceFromString(json.value(QLatin1String("feedback_source")).toString(toString(r.feedbackSource))))
        return fail(QStringLiteral("regime: unknown feedback source '%1' (last or best)")
                        .arg(json.value(QLatin1String("feedback_source")).toString()));
    if (r.name.isEmpty())
        return fail(QStringLiteral("regime: no name"));
    if (!r.roles.contains(RegimeRole::Generator))
        return fail(QStringLiteral("regime %1: no generator role").arg(r.name));
    if (r.n < 1 || r.turns < 1)
        return fail(QStringLiteral("regime %1: n and turns must be at least 1").arg(r.name));
    return r;
}

bool operator==(const Regime& a, const Regime& b)
{
    return a.toJson() == b.toJson();
}

Routing Routing::studyEstimate()
{
    Routing r;
    r.byLevel.insert(1, QStringLiteral("profiling-guided"));
    r.byLevel.insert(2, QStringLiteral("agent"));
    r.byLevel.insert(3, QStringLiteral("profiling-guided"));
    r.fallback = QStringLiteral("profiling-guided");
    return r;
}

QJsonObject Routing::toJson() const
{
    QJsonObject levels;
    for (auto it = byLevel.cbegin(); it != byLevel.cend(); ++it)
        levels.insert(QString::number(it.key()), it.value());
    return QJsonObject{{QStringLiteral("levels"), levels}, {QStringLiteral("fallback"), fallback}};
}

Routing Routing::fromJson(const QJsonObject& json)
{
    Routing r;
    const QJsonObject levels = json.value(QLatin1String("levels")).toObject();
    for (auto it = levels.begin(); it != levels.end(); ++it) {
        bool ok = false;
        const int level = it.key().toInt(&ok);
        if (ok)
            r.byLevel.insert(level, it.value().toString());
    }
    r.fallback = json.value(QLatin1String("fallback")).toString();
    return r;
}

} // namespace kwb
