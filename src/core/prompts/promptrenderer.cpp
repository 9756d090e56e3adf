#include "core/prompts/promptrenderer.h"

#include "core/prompts/referenceview.h"
#include "core/tasks/kernelbound.h"

#include "core/model/secrets.h"
#include "core/protocol/workerresponses.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonValue>

#include <kainjow/mustache.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kwb {

namespace {

namespace mu = kainjow::mustache;

// The renderer (kainjow's and our walk) recurses once per section and per partial: both are
// bounded, whatever the template text, so no template can exhaust the stack.
constexpr int kMaxPartialDepth = 8;
constexpr int kMaxSectionDepth = 64;

// ---- the check: our own walk of the tags -----------------------------------------------------
// The renderer is kainjow's; this walk mirrors its rules (scopes, truthiness of the converted
// data, default delimiters) to find what it would leave silently empty.

struct Problem
{
    QString file;
    int line = 0;
    QString variable;
    QString what;
};

struct Node
{
    enum Kind { Text, Var, Section, Inverted, End, Partial, Comment };
    Kind kind = Text;
    std::string name;
    int line = 0;
    std::vector<Node> children;
};

struct Parsed
{
    std::vector<Node> nodes;
    std::optional<Problem> problem;
};

std::string trimmed(const std::string& s)
{
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

Parsed parseTags(const std::string& s, const QString& file)
{
    Parsed out;
    struct Open
    {
        Node node;
        std::vector<Node>* parent;
    };
    std::vector<Node> root;
    std::vector<Open> stack;
    auto current = [&]() -> std::vector<Node>& { return stack.empty() ? root : stack.back().node.children; };
    auto fail = [&](int line, const std::string& name, const QString& what) {
        out.problem = Problem{file, line, q(name), what};
        return out;
    };

    size_t pos = 0;
    int line = 1;
    size_t counted = 0; // line counts newlines in s[0, counted)
    auto lineAt = [&](size_t p) {
        for (; counted < p; ++counted)
            if (s[counted] == '\n')
                ++line;
        return line;
    };
    while (true) {
        const size_t open = s.find("{{", pos);
        if (open == std::string::npos)
            break;
        const int tagLine = lineAt(open);
        const bool triple = s.compare(open, 3, "{{{") == 0;
        const size_t contentStart = open + (triple ? 3 : 2);
        const size_t close = s.find(triple ? "}}}" : "}}", contentStart);
        if (close == std::string::npos)
            return fail(tagLine, {}, QStringLiteral("a tag opened here is never closed"));
        std::string contents = trimmed(s.substr(contentStart, close - contentStart));
        pos = close + (triple ? 3 : 2);

        Node node;
        node.line = tagLine;
        if (triple) {
            node.kind = Node::Var;
            node.name = contents;
        } else if (contents.empty()) {
            return fail(tagLine, {}, QStringLiteral("an empty tag {{}}"));
        } else {
            const char c = contents.front();
            std::string rest = trimmed(contents.substr(1));
            switch (c) {
            case '#':
                node.kind = Node::Section;
                node.name = rest;
                break;
            case '^':
                node.kind = Node::Inverted;
                node.name = rest;
                break;
            case '/':
                node.kind = Node::End;
                node.name = rest;
                break;
            case '>':
                node.kind = Node::Partial;
                node.name = rest;
                break;
            case '&':
                node.kind = Node::Var;
                node.name = rest;
                break;
            case '!': node.kind = Node::Comment; break;
            case '=': return fail(tagLine, {}, QStringLiteral("set-delimiter tags ({{=...=}}) are not supported"));
            default:
                node.kind = Node::Var;
                node.name = contents;
                break;
            }
        }
        if (node.kind != Node::Comment && node.name.empty())
            return fail(tagLine, {}, QStringLiteral("a tag without a name"));

        if (node.kind == Node::Section || node.kind == Node::Inverted) {
            if (int(stack.size()) >= kMaxSectionDepth)
                return fail(tagLine, node.name,
                            QStringLiteral("sections nest more than %1 deep").arg(kMaxSectionDepth));
            stack.push_back({std::move(node), nullptr});
        } else if (node.kind == Node::End) {
            if (stack.empty())
                return fail(tagLine, node.name,
                            QStringLiteral("{{/%1}} closes a section that was never opened").arg(q(node.name)));
            if (stack.back().node.name != node.name)
                return fail(tagLine, node.name,
                            QStringLiteral("{{/%1}} closes section '%2' opened on line %3")
                                .arg(q(node.name), q(stack.back().node.name))
                                .arg(stack.back().node.line));
            Node done = std::move(stack.back().node);
            stack.pop_back();
            current().push_back(std::move(done));
        } else {
            current().push_back(std::move(node));
        }
    }
    if (!stack.empty()) {
        const Node& n = stack.back().node;
        return fail(n.line, n.name, QStringLiteral("section '%1' is never closed").arg(q(n.name)));
    }
    out.nodes = std::move(root);
    return out;
}

// kainjow's truthiness of the data toData() makes: null and "" become false.
bool truthy(const QJsonValue& v)
{
    switch (v.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined: return false;
    case QJsonValue::Bool: return v.toBool();
    case QJsonValue::String: return !v.toString().isEmpty();
    case QJsonValue::Array: return !v.toArray().isEmpty();
    default: return true;
    }
}

// kainjow's context::get: "." is the innermost scope; a dotted name must resolve fully in one scope.
std::optional<QJsonValue> resolve(const std::string& name, const std::vector<QJsonValue>& scopes)
{
    if (name == ".")
        return scopes.back();
    const QStringList parts = q(name).split(QLatin1Char('.'));
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
        QJsonValue cur = *it;
        bool found = true;
        for (const QString& part : parts) {
            if (!cur.isObject() || !cur.toObject().contains(part)) {
                found = false;
                break;
            }
            cur = cur.toObject().value(part);
        }
        if (found)
            return cur;
    }
    return std::nullopt;
}

class Checker
{
public:
    Checker(QString dir, bool strict)
        : m_dir(std::move(dir))
        , m_strict(strict)
    {}

    QString display(const QString& path) const
    {
        const QString rel = QDir(m_dir).relativeFilePath(path);
        return rel.startsWith(QLatin1String("..")) ? path : rel;
    }

    /// Reads and parses a file; partials are kept for the renderer.
    std::optional<Problem> load(const QString& path, std::string* text, Parsed* parsed)
    {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly))
            return Problem{display(path), 0, {}, QStringLiteral("cannot read the template: %1").arg(f.errorString())};
        *text = f.readAll().toStdString();
        *parsed = parseTags(*text, display(path));
        return parsed->problem;
    }

    /// Structure over every branch: each partial exists and parses, partials include no cycle
    /// ("partial cycle: a > b > a") and nest at most kMaxPartialDepth deep. `chain` is the
    /// partials being included, outermost first; *height receives how deep the partials under
    /// these nodes nest (0: none).
    std::optional<Problem> loadPartials(const std::vector<Node>& nodes, const QString& file,
                                        std::vector<std::string>& chain, int* height = nullptr)
    {
        int deepest = 0;
        for (const Node& n : nodes) {
            int below = 0;
            if (n.kind == Node::Partial) {
                if (auto p = includePartial(n, file, chain, &below))
                    return p;
            } else if (auto p = loadPartials(n.children, file, chain, &below)) {
                return p;
            }
            deepest = std::max(deepest, below);
        }
        if (height)
            *height = deepest;
        return std::nullopt;
    }

    std::optional<Problem> includePartial(const Node& n, const QString& file, std::vector<std::string>& chain,
                                          int* height)
    {
        const auto seen = std::find(chain.begin(), chain.end(), n.name);
        if (seen != chain.end()) {
            QStringList names;
            for (auto it = seen; it != chain.end(); ++it)
                names << q(*it);
            names << q(n.name);
            return Problem{file, n.line, q(n.name),
                           QStringLiteral("partial cycle: %1").arg(names.join(QStringLiteral(" > ")))};
        }
        const auto known = m_height.find(n.name);
        if (known != m_height.end()) { // checked whole before: no cycle below it, its height known
            *height = known->second;
        } else {
            if (m_partials.count(n.name) == 0) {
                const QString path = QDir(m_dir).filePath(QStringLiteral("partials/%1.mustache").arg(q(n.name)));
                if (!QFileInfo::exists(path))
                    return Problem{
                        file, n.line, q(n.name),
                        QStringLiteral("partial '%1' not found (looked for %2)").arg(q(n.name), display(path))};
                Loaded& l = m_partials[n.name];
                l.file = display(path);
                if (auto p = load(path, &l.text, &l.parsed))
                    return p;
            }
            if (int(chain.size()) >= kMaxPartialDepth)
                return Problem{file, n.line, q(n.name),
                               QStringLiteral("partials nest more than %1 deep").arg(kMaxPartialDepth)};
            const Loaded& l = m_partials.at(n.name);
            int below = 0;
            chain.push_back(n.name);
            auto p = loadPartials(l.parsed.nodes, l.file, chain, &below);
            chain.pop_back();
            if (p)
                return p;
            *height = below + 1;
            m_height[n.name] = *height; // each partial is walked once, however often it is included
        }
        if (int(chain.size()) + *height > kMaxPartialDepth)
            return Problem{file, n.line, q(n.name),
                           QStringLiteral("partials nest more than %1 deep").arg(kMaxPartialDepth)};
        return std::nullopt;
    }

    /// Names along the path the renderer takes with this context.
    std::optional<Problem> walk(const std::vector<Node>& nodes, std::vector<QJsonValue>& scopes, const QString& file)
    {
        for (const Node& n : nodes) {
            switch (n.kind) {
            case Node::Var:
                if (m_strict && !resolve(n.name, scopes))
                    return Problem{file, n.line, q(n.name),
                                   QStringLiteral("unknown variable '%1' (not in the context)").arg(q(n.name))};
                break;
            case Node::Section:
            case Node::Inverted: {
                const auto v = resolve(n.name, scopes);
                if (!v) {
                    if (m_strict)
                        return Problem{file, n.line, q(n.name),
                                       QStringLiteral("unknown section '%1' (not in the context)").arg(q(n.name))};
                    if (n.kind == Node::Inverted)
                        if (auto p = walk(n.children, scopes, file))
                            return p;
                    break;
                }
                if (n.kind == Node::Inverted) {
                    if (!truthy(*v))
                        if (auto p = walk(n.children, scopes, file))
                            return p;
                    break;
                }
                if (!truthy(*v))
                    break;
                const QJsonArray items = v->isArray() ? v->toArray() : QJsonArray{*v};
                for (const QJsonValue& item : items) {
                    scopes.push_back(item);
                    auto p = walk(n.children, scopes, file);
                    scopes.pop_back();
                    if (p)
                        return p;
                }
                break;
            }
            case Node::Partial: {
                const Loaded& l = m_partials.at(n.name);
                if (auto p = walk(l.parsed.nodes, scopes, l.file))
                    return p;
                break;
            }
            default: break;
            }
        }
        return std::nullopt;
    }

    struct Loaded
    {
        QString file;
        std::string text;
        Parsed parsed;
    };
    std::map<std::string, Loaded> m_partials;

private:
    std::map<std::string, int> m_height; ///< partials checked whole: how deep they nest
    QString m_dir;
    bool m_strict;
};

// ---- conversion to kainjow's data --------------------------------------------------------------

QString numberText(double d)
{
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15)
        return QString::number(static_cast<qint64>(d));
    return QString::number(d, 'g', 6);
}

mu::data toData(const QJsonValue& v)
{
    switch (v.type()) {
    case QJsonValue::Bool: return mu::data(v.toBool());
    case QJsonValue::Double: return mu::data(numberText(v.toDouble()).toStdString());
    case QJsonValue::String: {
        const QString s = v.toString();
        return s.isEmpty() ? mu::data(false) : mu::data(s.toStdString());
    }
    case QJsonValue::Array: {
        mu::data list{mu::data::type::list};
        for (const QJsonValue& item : v.toArray())
            list.push_back(toData(item));
        return list;
    }
    case QJsonValue::Object: {
        mu::data obj{mu::data::type::object};
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            obj.set(it.key().toStdString(), toData(it.value()));
        return obj;
    }
    default: return mu::data(false);
    }
}

/// kainjow's context, with partials from files instead of from the data.
class FileContext : public mu::basic_context<std::string>
{
public:
    FileContext(const mu::data* root, const std::unordered_map<std::string, mu::data>* partials)
        : m_inner(root)
        , m_partials(partials)
    {}
    void push(const mu::data* data) override { m_inner.push(data); }
    void pop() override { m_inner.pop(); }
    const mu::data* get(const std::string& name) const override { return m_inner.get(name); }
    const mu::data* get_partial(const std::string& name) const override
    {
        const auto it = m_partials->find(name);
        return it == m_partials->end() ? nullptr : &it->second;
    }

private:
    mu::context<std::string> m_inner;
    const std::unordered_map<std::string, mu::data>* m_partials;
};

PromptRenderer::RenderResult failure(const Problem& p)
{
    PromptRenderer::RenderResult r;
    r.ok = false;
    r.file = p.file;
    r.line = p.line;
    r.variable = p.variable;
    r.error = p.line > 0 ? QStringLiteral("%1:%2: %3").arg(p.file).arg(p.line).arg(p.what)
                         : QStringLiteral("%1: %2").arg(p.file, p.what);
    return r;
}

// ---- formatting for buildContext ---------------------------------------------------------------

QString shapeText(const QList<qint64>& shape)
{
    if (shape.isEmpty())
        return QStringLiteral("scalar");
    QStringList parts;
    for (const qint64 d : shape)
        parts << numberText(double(d));
    return parts.join(QChar(0x00D7)); // ×
}

QString scaled(double v, const QStringList& units, const QString& sep)
{
    int i = 0;
    while (std::fabs(v) >= 1000.0 && i + 1 < units.size()) {
        v /= 1000.0;
        ++i;
    }
    return QString::number(v, 'f', (i == 0 || v >= 100) ? 0 : (v >= 10 ? 1 : 2)) + sep + units.at(i);
}

QString flopsText(double f)
{
    return scaled(f,
                  {QStringLiteral("FLOP"), QStringLiteral("kFLOP"), QStringLiteral("MFLOP"), QStringLiteral("GFLOP"),
                   QStringLiteral("TFLOP"), QStringLiteral("PFLOP")},
                  QStringLiteral(" "));
}

QString bytesText(double b)
{
    return scaled(
        b,
        {QStringLiteral("B"), QStringLiteral("kB"), QStringLiteral("MB"), QStringLiteral("GB"), QStringLiteral("TB")},
        QStringLiteral(" "));
}

QString timeText(double ns)
{
    if (ns < 1e3)
        return QString::number(ns, 'f', 0) + QStringLiteral(" ns");
    if (ns < 1e6)
        return QString::number(ns / 1e3, 'f', 1) + QStringLiteral(" µs");
    if (ns < 1e9)
        return QString::number(ns / 1e6, 'f', 3) + QStringLiteral(" ms");
    return QString::number(ns / 1e9, 'f', 3) + QStringLiteral(" s");
}

QString intensityText(double i)
{
    return QString::number(i, 'f', i < 10 ? 2 : 1) + QStringLiteral(" FLOP/byte");
}

QJsonValue orFalse(const QString& s)
{
    return s.isEmpty() ? QJsonValue(false) : QJsonValue(s);
}

/// "def forward(...) -> Tensor:" from the reference, joined onto one line.
QString forwardSignature(const QString& forward)
{
    const qsizetype start = forward.indexOf(QLatin1String("def forward"));
    if (start < 0)
        return {};
    int depth = 0;
    bool seenParams = false;
    for (qsizetype i = start; i < forward.size(); ++i) {
        const QChar c = forward.at(i);
        if (c == QLatin1Char('(') || c == QLatin1Char('[')) {
            ++depth;
        } else if (c == QLatin1Char(')') || c == QLatin1Char(']')) {
            --depth;
            if (depth == 0 && c == QLatin1Char(')'))
                seenParams = true;
        } else if (c == QLatin1Char(':') && depth == 0 && seenParams) {
            return forward.mid(start, i - start + 1).simplified().replace(QLatin1String("( "), QLatin1String("("));
        }
    }
    return {};
}

/// Skipped sections and included partials leave runs of blank lines: outside fenced code blocks
/// (whose lines a compiler log may count) they shrink to one; no blank lines lead, one newline ends.
QString tidy(const QString& text)
{
    QStringList out;
    QString fence; // the open fence's marker ("```", "````", "~~~"), empty outside code blocks
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        const QString t = line.trimmed();
        const bool blank = t.isEmpty();
        if (fence.isEmpty()) {
            if (blank && (out.isEmpty() || out.constLast().trimmed().isEmpty()))
                continue;
            if (t.startsWith(QLatin1String("```")) || t.startsWith(QLatin1String("~~~"))) {
                qsizetype n = 0;
                while (n < t.size() && t.at(n) == t.at(0))
                    ++n;
                fence = t.left(n);
            }
        } else if (t.size() >= fence.size() && t == QString(t.size(), fence.at(0))) {
            fence.clear();
        }
        out << line;
    }
    while (!out.isEmpty() && out.constLast().trimmed().isEmpty())
        out.removeLast();
    return out.isEmpty() ? QString() : out.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

} // namespace

// ---- PromptRenderer ----------------------------------------------------------------------------

PromptRenderer::PromptRenderer(QString promptsDir)
    : m_dir(std::move(promptsDir))
{}

QStringList PromptRenderer::templates() const
{
    QStringList out;
    const QDir dir(m_dir);
    QDirIterator it(m_dir, {QStringLiteral("*.mustache")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString rel = dir.relativeFilePath(it.next());
        if (!rel.startsWith(QLatin1String("partials/")))
            out << rel;
    }
    out.sort();
    return out;
}

PromptRenderer::RenderResult PromptRenderer::check(const QString& templatePath) const
{
    const QString path = QFileInfo(templatePath).isAbsolute() ? templatePath : QDir(m_dir).filePath(templatePath);
    Checker checker(m_dir, m_strict);
    std::string text;
    Parsed parsed;
    if (auto p = checker.load(path, &text, &parsed))
        return failure(*p);
    std::vector<std::string> chain;
    if (auto p = checker.loadPartials(parsed.nodes, checker.display(path), chain))
        return failure(*p);
    RenderResult r;
    r.ok = true;
    return r;
}

PromptRenderer::RenderResult PromptRenderer::render(const QString& templatePath, const QJsonObject& context) const
{
    const QString path = QFileInfo(templatePath).isAbsolute() ? templatePath : QDir(m_dir).filePath(templatePath);
    Checker checker(m_dir, m_strict);
    std::string text;
    Parsed parsed;
    if (auto p = checker.load(path, &text, &parsed))
        return failure(*p);
    const QString file = checker.display(path);
    std::vector<std::string> chain;
    if (auto p = checker.loadPartials(parsed.nodes, file, chain))
        return failure(*p);
    std::vector<QJsonValue> scopes{QJsonValue(context)};
    if (auto p = checker.walk(parsed.nodes, scopes, file))
        return failure(*p);

    std::unordered_map<std::string, mu::data> partials;
    for (const auto& [name, loaded] : checker.m_partials)
        partials.emplace(name, mu::data(loaded.text));
    const mu::data root = toData(context);
    FileContext ctx(&root, &partials);
    mu::mustache tmpl(text);
    tmpl.set_custom_escape([](const std::string& s) { return s; }); // prompts are not HTML
    std::string out;
    if (tmpl.is_valid())
        out = tmpl.render(ctx);
    if (!tmpl.is_valid()) // our check should have caught it; keep the library's words
        return failure(Problem{file, 0, {}, QStringLiteral("Mustache: %1").arg(q(tmpl.error_message()))});

    RenderResult r;
    r.ok = true;
    r.text = secrets::scrub(tidy(QString::fromStdString(out))); // what the model is shown
    return r;
}

QString PromptRenderer::toleranceText(const QJsonObject& profile)
{
    const QJsonValue atol = profile.value(QLatin1String("atol"));
    const QJsonValue rtol = profile.value(QLatin1String("rtol"));
    if (!atol.isDouble() || !rtol.isDouble())
        return {};
    const QString name = profile.value(QLatin1String("name")).toString();
    const QString tol =
        atol.toDouble() == rtol.toDouble()
            ? QStringLiteral("atol = rtol = %1").arg(numberText(atol.toDouble()))
            : QStringLiteral("atol = %1, rtol = %2").arg(numberText(atol.toDouble()), numberText(rtol.toDouble()));
    return name.isEmpty() ? tol : QStringLiteral("%1, profile %2").arg(tol, name);
}

QString PromptRenderer::rooflineRule()
{
    return QStringLiteral(
        "Do not reimplement matmul or conv; fuse the epilogue. Matrix multiplies and convolutions are "
        "compute-bound and cuBLAS/cuDNN already run them near the GPU's limit: keep them as torch calls. "
        "The elementwise ops after them (bias, activation, scaling, clamp) are memory-bound: each one reads and "
        "writes the whole tensor, so one custom kernel that does them all in a single pass saves memory traffic "
        "and launches.");
}

namespace {

/// KernelBench's constructor arguments (the task's `init_inputs`, dimensions at full scale) as
/// Python writes them: "64, 128, 3, (128, 1, 1)"; empty for a task without any.
QString initValueText(const QJsonValue& value, const QHash<QString, qint64>& dims)
{
    if (value.isArray()) {
        QStringList parts;
        for (const QJsonValue& v : value.toArray())
            parts << initValueText(v, dims);
        return QStringLiteral("(%1%2)").arg(parts.join(QStringLiteral(", ")),
                                            parts.size() == 1 ? QStringLiteral(",") : QString());
    }
    if (value.isObject())
        return QString::number(dims.value(value.toObject().value(QLatin1String(ProtocolNames::Key::kDim)).toString()));
    if (value.isBool())
        return value.toBool() ? QStringLiteral("True") : QStringLiteral("False");
    const double d = value.toDouble();
    return d == double(qint64(d)) && !value.toVariant().toString().contains(QLatin1Char('.'))
               ? QString::number(qint64(d))
               : QString::number(d, 'g', 17);
}

QString initInputsText(const TaskSpec& task)
{
    QHash<QString, qint64> dims;
    for (const TaskDim& d : task.dims)
        dims.insert(d.name, d.full);
    QStringList parts;
    for (const QJsonValue& v : task.initInputs)
        parts << initValueText(v, dims);
    return parts.join(QStringLiteral(", "));
}

} // namespace

QList<PromptRenderer::OperatorTime> PromptRenderer::operatorTimes(const ProfileResult& profile)
{
    // The worker reports one row per call site (the Traffic page places each on the op chain);
    // torch.profiler's key_averages(), what "top operators by CUDA time" means, groups by name.
    QList<OperatorTime> out;
    QHash<QString, qsizetype> at;
    for (const ProfileOp& o : profile.ops) {
        auto it = at.constFind(o.op);
        if (it == at.cend()) {
            at.insert(o.op, out.size());
            out.append(OperatorTime{o.op, 0.0, 0.0, 0, 0});
            it = at.constFind(o.op);
        }
        OperatorTime& t = out[*it];
        t.timeNs += o.timeNs;
        t.share += o.share;
        t.kernels += o.kernels;
        t.calls += 1;
    }
    // Most time first; equal times by name, so the order never depends on the worker's.
    std::stable_sort(out.begin(), out.end(), [](const OperatorTime& a, const OperatorTime& b) {
        return a.timeNs != b.timeNs ? a.timeNs > b.timeNs : a.op < b.op;
    });
    return out;
}

QJsonObject PromptRenderer::buildContext(const QJsonObject& taskJson, const QJsonObject& analyzeJson,
                                         const QJsonObject& profileJson, const QJsonObject& deviceJson,
                                         const QJsonObject& feedbackJson, const QJsonObject& protocolProfileJson)
{
    QJsonObject c;
    const TaskSpec task = decodeTaskSpec(taskJson);
    const AnalyzeResult analyze = decodeAnalyze(analyzeJson);
    const ProfileResult profile = decodeProfile(profileJson);
    const DeviceFacts device = decodeDeviceFacts(deviceJson);

    // Task
    const QString reference = task.forward.trimmed();
    c[QStringLiteral("task_id")] = task.id.isEmpty() ? analyze.task : task.id;
    c[QStringLiteral("task_title")] = task.title;
    c[QStringLiteral("task_level")] = numberText(task.level);
    c[QStringLiteral("task_number")] = numberText(task.number);
    c[QStringLiteral("task_description")] = orFalse(task.description.trimmed());
    c[QStringLiteral("task_source")] = orFalse(task.source);
    c[QStringLiteral("reference")] = reference;
    c[QStringLiteral("signature")] = forwardSignature(reference);
    c[QStringLiteral("model_init")] = orFalse(initInputsText(task));
    // KernelBench's problem file, the reference as KernelBench's prompt shows it (the study
    // preset, prompts-kernelbench/), where the task list carries it.
    c[QStringLiteral("reference_python")] = orFalse(task.referencePython.trimmed());
    // The competence-matched guidance (and, in KernelBench's format, the load_inline pin) is on
    // unless the regime's competence ablation switches it off (RunController::context).
    c[QStringLiteral("competence")] = true;

    QJsonArray inputs;
    for (const TaskTensor& in : task.inputs) {
        const bool tensor = in.isTensor();
        inputs.append(QJsonObject{
            {QStringLiteral("name"), in.name},
            {QStringLiteral("shape"), tensor ? shapeText(in.full) : QStringLiteral("scalar")},
            {QStringLiteral("dtype"), tensor ? in.dtype : in.kind},
        });
    }
    c[QStringLiteral("inputs")] = inputs;
    QJsonArray params;
    for (const TaskTensor& p : task.params)
        params.append(QJsonObject{{QStringLiteral("name"), p.name}, {QStringLiteral("shape"), shapeText(p.full)}});
    c[QStringLiteral("params")] = params;
    // The compact view (referenceview.h) the study set shows.
    bool folded = false;
    c[QStringLiteral("reference_view")] = foldForward(reference, &folded);
    c[QStringLiteral("reference_folded")] = folded;
    QList<ReferenceParam> viewParams;
    for (const TaskTensor& p : task.params)
        viewParams.append(ReferenceParam{p.name, shapeText(p.full)});
    c[QStringLiteral("params_view")] = orFalse(paramsView(viewParams));
    // The run's tolerance, as the worker's hello states the profile's (clients keep no list).
    c[QStringLiteral("tolerance")] = orFalse(toleranceText(protocolProfileJson));

    // Op chain (analyze); views move no data and are left out.
    QJsonArray ops, libraryOps, fusableOps;
    QStringList chain;
    for (const TaskOp& o : analyze.ops) {
        if (o.category == QLatin1String("view"))
            continue;
        const QJsonObject entry{
            {QStringLiteral("index"), numberText(o.index)}, {QStringLiteral("op"), o.op},
            {QStringLiteral("category"), o.category},       {QStringLiteral("shape"), shapeText(o.output)},
            {QStringLiteral("flops"), flopsText(o.flops)},  {QStringLiteral("bytes"), bytesText(o.bytes)},
        };
        ops.append(entry);
        chain << o.op;
        if (o.category == QLatin1String("matmul") || o.category == QLatin1String("conv"))
            libraryOps.append(entry);
        else
            fusableOps.append(entry);
    }
    c[QStringLiteral("ops")] = ops;
    c[QStringLiteral("library_ops")] = libraryOps;
    c[QStringLiteral("fusable_ops")] = fusableOps;
    c[QStringLiteral("op_chain")] = orFalse(chain.join(QStringLiteral(" → ")));
    const bool analyzed = analyze.hasTotals;
    c[QStringLiteral("output_shape")] =
        analyze.hasOutputShape ? QJsonValue(shapeText(analyze.outputShape)) : QJsonValue(false);
    c[QStringLiteral("flops")] = analyzed ? QJsonValue(flopsText(analyze.flops)) : QJsonValue(false);
    c[QStringLiteral("bytes_unfused")] = analyzed ? QJsonValue(bytesText(analyze.bytesUnfused)) : QJsonValue(false);
    c[QStringLiteral("bytes_fused")] = analyzed ? QJsonValue(bytesText(analyze.bytesFused)) : QJsonValue(false);
    c[QStringLiteral("intensity_unfused")] =
        analyzed ? QJsonValue(intensityText(analyze.intensityUnfused)) : QJsonValue(false);
    c[QStringLiteral("intensity_fused")] =
        analyzed ? QJsonValue(intensityText(analyze.intensityFused)) : QJsonValue(false);

    // Profile: the top five operators by CUDA time, each summed over its call sites.
    QJsonArray topOps;
    for (const OperatorTime& o : operatorTimes(profile)) {
        if (topOps.size() == 5)
            break;
        topOps.append(QJsonObject{
            {QStringLiteral("op"), o.op},
            {QStringLiteral("share"), QString::number(100.0 * o.share, 'f', 1) + QStringLiteral(" %")},
            {QStringLiteral("time"), timeText(o.timeNs)},
            {QStringLiteral("calls"), numberText(o.calls)},
            {QStringLiteral("kernels"), numberText(o.kernels)},
        });
    }
    c[QStringLiteral("top_ops")] = topOps;
    c[QStringLiteral("profile_total")] = profile.totalNs ? QJsonValue(timeText(*profile.totalNs)) : QJsonValue(false);
    c[QStringLiteral("roofline_rule")] = rooflineRule();

    // Device: measured ceilings where the worker measured them, else the theoretical figures
    // (DeviceFacts reads both spellings of the theoretical bandwidth).
    QJsonValue deviceValue(false), verdict(false);
    if (device.available) {
        const double gbps = device.bandwidthGBps();
        const QString gbpsNote =
            device.hbmCopy.present() ? QStringLiteral("measured copy") : QStringLiteral("theoretical");
        const double gflops = device.fp32Gflops();
        const QString gflopsNote =
            device.fp32Fma.present() ? QStringLiteral("measured FMA") : QStringLiteral("theoretical");
        const bool ridgeKnown = gbps > 0 && gflops > 0;
        const double ridge = ridgeKnown ? kwb::ridgeIntensity(gflops, gbps) : 0.0;
        const QString unknown = QStringLiteral("unknown");
        deviceValue = QJsonObject{
            {QStringLiteral("name"), device.name},
            {QStringLiteral("arch"), device.arch},
            {QStringLiteral("cc"), device.cc},
            {QStringLiteral("sm_count"), numberText(device.smCount)},
            {QStringLiteral("hbm_gbps"),
             gbps > 0 ? QStringLiteral("%1 GB/s (%2)").arg(QString::number(gbps, 'f', 0), gbpsNote) : unknown},
            {QStringLiteral("fp32_tflops"),
             gflops > 0 ? QStringLiteral("%1 TFLOP/s (%2)").arg(QString::number(gflops / 1000.0, 'f', 1), gflopsNote)
                        : unknown},
            {QStringLiteral("ridge_point"), ridgeKnown ? intensityText(ridge) : unknown},
        };
        // The task's bound as every page states it (core/tasks/kernelbound.h).
        const Bound bound = analyzed ? taskBound(analyze, ridge) : Bound::Unknown;
        if (ridgeKnown && analyzed && bound != Bound::Unknown)
            verdict = bound == Bound::Compute
                          ? QStringLiteral("compute-bound: even fused, the task does %1, above the ridge point of %2")
                                .arg(intensityText(analyze.intensityFused), intensityText(ridge))
                          : QStringLiteral("memory-bound: even fused, the task does %1, below the ridge point of %2")
                                .arg(intensityText(analyze.intensityFused), intensityText(ridge));
    }
    c[QStringLiteral("device")] = deviceValue;
    c[QStringLiteral("roofline_verdict")] = verdict;

    // Previous answer and its evaluation
    QJsonValue feedbackValue(false);
    c[QStringLiteral("previous_answer")] = orFalse(feedbackJson.value(kFeedbackAnswerKey).toString().trimmed());
    if (!feedbackJson.isEmpty()) {
        const EvaluationResult feedback = decodeEvaluation(feedbackJson);
        QString correctnessText;
        if (const std::optional<CorrectnessInfo>& k = feedback.correctness)
            correctnessText =
                QStringLiteral("passed %1 of %2 trials; max abs diff %3 (atol %4), max rel diff %5 (rtol %6)")
                    .arg(numberText(k->passed), numberText(k->trials), numberText(k->maxAbsDiff.value_or(0)),
                         numberText(k->atol.value_or(0)), numberText(k->maxRelDiff.value_or(0)),
                         numberText(k->rtol.value_or(0)));
        const std::optional<double> trusted = feedback.trustedSpeedup();
        const std::optional<SpeedupInterval> interval = feedback.trustedSpeedupInterval();
        feedbackValue = QJsonObject{
            {QStringLiteral("status"), feedback.statusName},
            {QStringLiteral("stage"), orFalse(feedback.stage)},
            {QStringLiteral("message"), orFalse(feedback.messageOrError().trimmed())},
            // NVRTC's log for a native answer. A KernelBench-format result's compile log is its
            // message again (a failed build: load_inline's error) or kwb's note of where each
            // extension was built (cache paths, no compiler's word): neither is for the model.
            {QStringLiteral("compile_log"),
             orFalse(feedback.compile && !feedback.isKernelBenchFormat() ? feedback.compile->log.trimmed()
                                                                         : QString())},
            {QStringLiteral("correctness"), orFalse(correctnessText)},
            // The speed-up that counts (none below the roofline floor, where not_counted says why),
            // with its 95 % interval where the timing has one: the model reads what a user reads.
            {QStringLiteral("speedup"),
             trusted
                 ? QJsonValue(QString::number(*trusted, 'f', interval ? speedupDecimals(*interval) : 2) + QChar(0x00D7))
                 : QJsonValue(false)},
            {QStringLiteral("speedup_interval"),
             trusted && interval ? QJsonValue(formatSpeedupInterval(*interval) + QChar(0x00D7)) : QJsonValue(false)},
            {QStringLiteral("not_counted"), orFalse(notCountedReason(feedback))},
            {QStringLiteral("log"), orFalse(feedback.log.trimmed())},
        };
    }
    c[QStringLiteral("feedback")] = feedbackValue;

    // Filled by the regime (the outputs of earlier roles, the turn).
    c[QStringLiteral("analysis")] = false;
    c[QStringLiteral("research")] = false;
    c[QStringLiteral("diagnosis")] = false;
    c[QStringLiteral("critique")] = false;
    c[QStringLiteral("turn")] = QStringLiteral("1");
    c[QStringLiteral("max_turns")] = QStringLiteral("1");
    return c;
}

} // namespace kwb
