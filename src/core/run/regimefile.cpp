#include "core/run/regimefile.h"

#include <QDebug>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

#include <toml++/toml.h>

#include <cmath>
#include <initializer_list>
#include <string_view>

namespace kwb {

namespace {

// The compiled-in regimes (src/core/CMakeLists.txt adds regimes/*.toml under this prefix).
const QString kBuiltinDir = QStringLiteral(":/kernel-workbench/regimes");

// A seed is stored in JSON as a double (Regime::toJson): larger integers would not read back.
constexpr qint64 kMaxSeed = qint64(1) << 53;

QString fromToml(std::string_view text)
{
    return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

QString kindOf(const toml::node& node)
{
    switch (node.type()) {
    case toml::node_type::string: return QStringLiteral("a string");
    case toml::node_type::integer: return QStringLiteral("an integer");
    case toml::node_type::floating_point: return QStringLiteral("a number with a fraction");
    case toml::node_type::boolean: return QStringLiteral("true/false");
    case toml::node_type::array: return QStringLiteral("an array");
    case toml::node_type::table: return QStringLiteral("a table");
    default: break;
    }
    return QStringLiteral("a date or time");
}

QStringList names(std::initializer_list<const char*> list)
{
    QStringList out;
    for (const char* name : list)
        out << QString::fromLatin1(name);
    return out;
}

/// Reads one file; the first error stops it, naming the file, the line, the regime and the key.
class RegimeParser
{
public:
    explicit RegimeParser(const QString& origin)
        : m_origin(origin)
    {}

    RegimeFileLoad parse(const QByteArray& text)
    {
        RegimeFileLoad out;
        out.path = m_origin;
        toml::table root;
        try {
            root = toml::parse(std::string_view(text.constData(), std::size_t(text.size())),
                               std::string_view(m_origin.toStdString()));
        } catch (const toml::parse_error& e) {
            out.error = QStringLiteral("%1:%2:%3: %4")
                            .arg(m_origin)
                            .arg(e.source().begin.line)
                            .arg(e.source().begin.column)
                            .arg(fromToml(e.description()));
            return out;
        }
        if (!parseRoot(root, &out.regimes)) {
            out.regimes.clear();
            out.error = m_error;
        }
        return out;
    }

private:
    QString m_origin;
    QString m_error;
    QString m_where; ///< "regime[2] (agent)"

    bool fail(const toml::node* node, const QString& key, const QString& what)
    {
        const QString at = node && node->source().begin.line > 0
                               ? QStringLiteral("%1:%2").arg(m_origin).arg(node->source().begin.line)
                               : m_origin;
        QString where = m_where;
        if (!key.isEmpty())
            where = where.isEmpty() ? key : where + QLatin1Char('.') + key;
        m_error = where.isEmpty() ? QStringLiteral("%1: %2").arg(at, what)
                                  : QStringLiteral("%1: %2: %3").arg(at, where, what);
        return false;
    }

    bool onlyKeys(const toml::table& table, const QString& prefix, const QStringList& known)
    {
        for (auto&& [key, node] : table) {
            const QString name = fromToml(key.str());
            if (!known.contains(name))
                return fail(&node, prefix + name,
                            QStringLiteral("unknown key (known: %1)").arg(known.join(QStringLiteral(", "))));
        }
        return true;
    }

    bool parseRoot(const toml::table& root, QList<Regime>* out)
    {
        if (!onlyKeys(root, QString(), {QStringLiteral("regime")}))
            return false;
        const toml::node* list = root.get("regime");
        if (!list)
            return fail(nullptr, QString(), QStringLiteral("no [[regime]] table"));
        const toml::array* array = list->as_array();
        if (!array || !array->is_array_of_tables() || array->empty())
            return fail(list, QStringLiteral("regime"),
                        QStringLiteral("must be [[regime]] tables, not %1").arg(kindOf(*list)));
        QStringList seen;
        for (std::size_t i = 0; i < array->size(); ++i) {
            m_where = QStringLiteral("regime[%1]").arg(i);
            Regime r;
            if (!parseRegime(*array->get(i)->as_table(), &r))
                return false;
            if (seen.contains(r.name))
                return fail(array->get(i), QStringLiteral("name"),
                            QStringLiteral("\"%1\" is already a regime of this file").arg(r.name));
            seen << r.name;
            out->append(r);
        }
        return true;
    }

    /// A string key; a missing optional one leaves *out as it is.
    bool string(const toml::table& t, const char* key, bool required, QString* out)
    {
        const toml::node* node = t.get(key);
        if (!node)
            return required ? fail(&t, QString::fromLatin1(key), QStringLiteral("missing")) : true;
        if (!node->is_string())
            return fail(node, QString::fromLatin1(key), QStringLiteral("must be a string, not %1").arg(kindOf(*node)));
        *out = fromToml(node->as_string()->get());
        if (out->trimmed().isEmpty())
            return fail(node, QString::fromLatin1(key), QStringLiteral("must not be empty"));
        return true;
    }

    bool integer(const toml::table& t, const char* key, bool required, qint64 low, qint64 high,
                 std::optional<qint64>* out)
    {
        const toml::node* node = t.get(key);
        if (!node)
            return required ? fail(&t, QString::fromLatin1(key), QStringLiteral("missing")) : true;
        const qint64 value = node->is_integer() ? node->as_integer()->get() : 0;
        if (!node->is_integer() || value < low || value > high)
            return fail(node, QString::fromLatin1(key),
                        QStringLiteral("must be an integer from %1 to %2, not %3")
                            .arg(low)
                            .arg(high)
                            .arg(node->is_integer() ? QString::number(value) : kindOf(*node)));
        *out = value;
        return true;
    }

    bool boolean(const toml::table& t, const char* key, bool* out)
    {
        const toml::node* node = t.get(key);
        if (!node)
            return true;
        if (!node->is_boolean())
            return fail(node, QString::fromLatin1(key),
                        QStringLiteral("must be true or false, not %1").arg(kindOf(*node)));
        *out = node->as_boolean()->get();
        return true;
    }

    /// One of `choices` (as toString() writes them), by name.
    template <typename Mode>
    bool mode(const toml::table& t, const char* key, bool required, std::initializer_list<Mode> choices, Mode* out)
    {
        QString text;
        if (!string(t, key, required, &text))
            return false;
        if (text.isEmpty())
            return true;
        QStringList known;
        for (const Mode m : choices) {
            known << toString(m);
            if (toString(m) == text) {
                *out = m;
                return true;
            }
        }
        return fail(t.get(key), QString::fromLatin1(key),
                    QStringLiteral("\"%1\" is none of %2").arg(text, known.join(QStringLiteral(", "))));
    }

    bool parseRoles(const toml::table& t, Regime* r)
    {
        const toml::node* node = t.get("roles");
        if (!node)
            return fail(&t, QStringLiteral("roles"), QStringLiteral("missing"));
        const toml::table* roles = node->as_table();
        if (!roles)
            return fail(node, QStringLiteral("roles"), QStringLiteral("must be a table, not %1").arg(kindOf(*node)));
        const QStringList known{RegimeRole::Analyzer, RegimeRole::Researcher, RegimeRole::Generator,
                                RegimeRole::Retry,    RegimeRole::Triager,    RegimeRole::Critic};
        if (!onlyKeys(*roles, QStringLiteral("roles."), known))
            return false;
        for (auto&& [key, value] : *roles) {
            const QString role = fromToml(key.str());
            const QString where = QStringLiteral("roles.") + role;
            if (!value.is_string())
                return fail(&value, where, QStringLiteral("must be a template path, not %1").arg(kindOf(value)));
            const QString path = fromToml(value.as_string()->get());
            // Relative to the run's template set, never outside it.
            if (!path.endsWith(QLatin1String(".mustache")) || QDir::isAbsolutePath(path) ||
                path.split(QLatin1Char('/')).contains(QStringLiteral("..")))
                return fail(&value, where,
                            QStringLiteral("\"%1\" is not a template path inside a template set "
                                           "(relative, no \"..\", ending in .mustache)")
                                .arg(path));
            r->roles.insert(role, path);
        }
        if (!r->roles.contains(RegimeRole::Generator))
            return fail(node, QStringLiteral("roles"), QStringLiteral("needs a generator"));
        if (r->roles.contains(RegimeRole::Triager) && r->roles.contains(RegimeRole::Critic))
            return fail(node, QStringLiteral("roles"),
                        QStringLiteral("has a triager and a critic: the feedback is rewritten by one of them"));
        return true;
    }

    bool parseRegime(const toml::table& t, Regime* r)
    {
        // The name first, so every later error says which regime it is in.
        if (!string(t, "name", true, &r->name))
            return false;
        static const QRegularExpression kName(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9._-]*$"));
        if (!kName.match(r->name).hasMatch())
            return fail(t.get("name"), QStringLiteral("name"),
                        QStringLiteral("\"%1\" is not a regime name (letters, digits, '.', '_', '-'; "
                                       "a letter or digit first)")
                            .arg(r->name));
        m_where += QStringLiteral(" (%1)").arg(r->name);
        if (!onlyKeys(t, QString(),
                      names({"name", "description", "roles", "n", "turns", "temperature", "seed", "feedback",
                             "feedback_source", "selection", "use_profile", "stop_when_correct"})))
            return false;
        std::optional<qint64> n, turns, seed;
        if (!string(t, "description", true, &r->description) || !parseRoles(t, r) ||
            !integer(t, "n", true, 1, kRegimeMaxN, &n) || !integer(t, "turns", true, 1, kRegimeMaxTurns, &turns) ||
            !integer(t, "seed", false, 0, kMaxSeed, &seed) ||
            !mode(t, "feedback", true, {FeedbackMode::None, FeedbackMode::RawLog, FeedbackMode::Rewrite},
                  &r->feedback) ||
            !mode(t, "feedback_source", false, {FeedbackSource::Last, FeedbackSource::Best}, &r->feedbackSource) ||
            !mode(t, "selection", true, {SelectionMode::Monotone, SelectionMode::Last}, &r->selection) ||
            !boolean(t, "use_profile", &r->useProfile) || !boolean(t, "stop_when_correct", &r->stopWhenCorrect))
            return false;
        r->n = int(*n);
        r->turns = int(*turns);
        r->seed = seed;
        if (const toml::node* node = t.get("temperature")) {
            const std::optional<double> value = node->value<double>(); // an integer such as 0 too
            if (!value || !std::isfinite(*value) || *value < 0 || *value > kRegimeMaxTemperature)
                return fail(node, QStringLiteral("temperature"),
                            QStringLiteral("must be a number from 0 to %1, not %2")
                                .arg(kRegimeMaxTemperature)
                                .arg(value ? QString::number(*value) : kindOf(*node)));
            r->temperature = *value;
        }
        // What the runner would silently ignore is an error here.
        if (r->feedback == FeedbackMode::Rewrite && r->rewriteRole().isEmpty())
            return fail(t.get("feedback"), QStringLiteral("feedback"),
                        QStringLiteral("\"rewrite\" needs a triager or a critic role to rewrite it"));
        if (r->feedback != FeedbackMode::Rewrite && !r->rewriteRole().isEmpty())
            return fail(t.get("feedback"), QStringLiteral("feedback"),
                        QStringLiteral("the %1 role is used only with feedback = \"rewrite\"").arg(r->rewriteRole()));
        if (r->feedback == FeedbackMode::None && r->turns > 1)
            return fail(
                t.get("turns"), QStringLiteral("turns"),
                QStringLiteral("%1 turns with feedback = \"none\": turns after the first never run").arg(r->turns));
        if (r->roles.contains(RegimeRole::Retry) && r->feedback == FeedbackMode::None)
            return fail(t.get("roles"), QStringLiteral("roles.retry"),
                        QStringLiteral("a retry needs feedback (raw_log or rewrite) and turns above 1"));
        return true;
    }
};

QList<RegimeEntry> loadDir(const QString& dir, bool builtin, QStringList* errors, QStringList* taken)
{
    QList<RegimeEntry> out;
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*.toml")}, QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& file : files) {
        const RegimeFileLoad load = loadRegimeFile(file.filePath());
        QString error = load.error;
        for (const Regime& r : load.regimes)
            if (error.isEmpty() && taken->contains(r.name))
                error = QStringLiteral("%1: regime \"%2\" is already defined (built in or by a file before it)")
                            .arg(file.filePath(), r.name);
        if (!error.isEmpty()) {
            *errors << error;
            continue;
        }
        for (const Regime& r : load.regimes) {
            out.append({r, file.filePath(), builtin});
            *taken << r.name;
        }
    }
    return out;
}

const QList<RegimeEntry>& builtins()
{
    static const QList<RegimeEntry> entries = [] {
        QStringList errors, taken;
        const QList<RegimeEntry> loaded = loadDir(kBuiltinDir, true, &errors, &taken);
        // Only a broken build gets here (tst_regime loads every built-in).
        for (const QString& error : errors)
            qCritical().noquote() << QStringLiteral("built-in regimes: %1").arg(error);
        return loaded;
    }();
    return entries;
}

} // namespace

RegimeFileLoad parseRegimeFile(const QByteArray& toml, const QString& origin)
{
    return RegimeParser(origin).parse(toml);
}

RegimeFileLoad loadRegimeFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        RegimeFileLoad out;
        out.path = path;
        out.error = QStringLiteral("%1: cannot read the regime file: %2").arg(path, file.errorString());
        return out;
    }
    return parseRegimeFile(file.readAll(), path);
}

QString userRegimesDir()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation))
        .filePath(QStringLiteral("kernel-workbench/regimes"));
}

QStringList RegimeCatalog::names() const
{
    QStringList out;
    for (const RegimeEntry& e : entries)
        out << e.regime.name;
    return out;
}

const RegimeEntry* RegimeCatalog::find(const QString& name) const
{
    for (const RegimeEntry& e : entries)
        if (e.regime.name == name)
            return &e;
    return nullptr;
}

RegimeCatalog regimeCatalog(const QString& userDir)
{
    RegimeCatalog catalog;
    catalog.entries = builtins();
    if (userDir.isEmpty())
        return catalog;
    QStringList taken = catalog.names();
    catalog.entries += loadDir(userDir, false, &catalog.errors, &taken);
    return catalog;
}

RegimeCatalog regimeCatalog()
{
    return regimeCatalog(userRegimesDir());
}

QStringList Regime::builtinNames()
{
    QStringList out;
    for (const RegimeEntry& e : builtins())
        out << e.regime.name;
    return out;
}

std::optional<Regime> Regime::builtin(const QString& name)
{
    for (const RegimeEntry& e : builtins())
        if (e.regime.name == name)
            return e.regime;
    return std::nullopt;
}

std::optional<Regime> Regime::find(const QString& name, QString* error)
{
    if (std::optional<Regime> r = builtin(name))
        return r;
    const RegimeCatalog catalog = regimeCatalog();
    if (const RegimeEntry* e = catalog.find(name))
        return e->regime;
    if (error) {
        *error = QStringLiteral("unknown regime \"%1\" (%2)").arg(name, catalog.names().join(QStringLiteral(", ")));
        // The file the user meant may be the one that did not load.
        if (!catalog.errors.isEmpty())
            *error += QStringLiteral("; not loaded: ") + catalog.errors.join(QStringLiteral("; "));
    }
    return std::nullopt;
}

} // namespace kwb
