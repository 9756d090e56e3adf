#include "worker/tasks/task.h"

#include "core/protocol/protocolnames.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

namespace kwb {

namespace fs = std::filesystem;

// ---- small helpers ------------------------------------------------------------------------------

Scale parseScale(const std::string& s)
{
    if (s == "full")
        return Scale::Full;
    if (s == "smoke")
        return Scale::Smoke;
    throw std::invalid_argument("unknown scale '" + s + "' (expected full or smoke)");
}

std::string scaleName(Scale s)
{
    return s == Scale::Full ? "full" : "smoke";
}

bool isKnownDtype(const std::string& dtype)
{
    return dtype == "float32" || dtype == "float16" || dtype == "bfloat16" || dtype == "float64" || dtype == "int32" ||
           dtype == "int64";
}

int dtypeSize(const std::string& dtype)
{
    if (dtype == "float32" || dtype == "int32")
        return 4;
    if (dtype == "float16" || dtype == "bfloat16")
        return 2;
    if (dtype == "float64" || dtype == "int64")
        return 8;
    throw std::invalid_argument("unknown dtype '" + dtype + "'");
}

int64_t numel(const std::vector<int64_t>& shape)
{
    int64_t n = 1;
    for (int64_t d : shape)
        if (__builtin_mul_overflow(n, d, &n))
            throw std::overflow_error("shape has more than 2^63 elements");
    return n;
}

std::string TaskLoadError::toString() const
{
    return field.empty() ? path + ": " + message : path + ": " + field + ": " + message;
}

namespace {

// A shape entry is either a dimension name or a positive integer literal (kept as its decimal
// text so shapes stay plain string lists).
bool isIntegerLiteral(const std::string& s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool isIdentifier(const std::string& s)
{
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
        return false;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

/// The names a Python module assigns at its top level (`batch_size = 16`, `depth, height, width =
/// 16, 64, 64`, `n: int = 3`): lines that start in column 0 with an assignment. A plain scan, not
/// a parser: wider than Python's answer where a string spans lines, never narrower.
std::set<std::string> topLevelAssignments(const std::string& source)
{
    std::set<std::string> names;
    std::istringstream in(source);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || std::isspace(static_cast<unsigned char>(line[0])))
            continue;
        size_t eq = line.find('=');
        while (eq != std::string::npos &&
               ((eq + 1 < line.size() && line[eq + 1] == '=') || (eq > 0 && std::strchr("=<>!", line[eq - 1]))))
            eq = line.find('=', eq + 2);
        if (eq == std::string::npos)
            continue;
        std::string lhs = line.substr(0, eq);
        lhs = lhs.substr(0, lhs.find(':')); // an annotation
        std::istringstream parts(lhs);
        for (std::string part; std::getline(parts, part, ',');) {
            const auto b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
            if (b != std::string::npos && isIdentifier(part.substr(b, e - b + 1)))
                names.insert(part.substr(b, e - b + 1));
        }
    }
    return names;
}

std::string typeName(const toml::node& n)
{
    switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
    }
}

// Reads one file and throws TaskLoadError at the first problem, naming the field.
class Reader
{
public:
    explicit Reader(std::string path)
        : path_(std::move(path))
    {}

    Task read()
    {
        std::error_code ec;
        if (!fs::is_regular_file(path_, ec))
            fail("", "cannot open file (not a regular file or missing)");
        toml::table root;
        try {
            root = toml::parse_file(path_);
        } catch (const toml::parse_error& e) {
            std::ostringstream m;
            m << "TOML syntax error at line " << e.source().begin.line << ", column " << e.source().begin.column << ": "
              << e.description();
            fail("", m.str());
        }
        t_.path = path_;
        if (!root.contains("forward"))
            findMisplacedForward(root);
        checkKeys(root, "",
                  {"id", "level", "number", "title", "source", "description", "forward", "dims", "smoke", "inputs",
                   "params", "tolerance", "init_inputs", "kernelbench_only", "reference_python", "shape_sets"});

        t_.id = requiredString(root, "id");
        t_.level = static_cast<int>(requiredInt(root, "level", 1, 9));
        t_.number = static_cast<int>(requiredInt(root, "number", 1, std::numeric_limits<int>::max()));
        const std::string expectedId = "L" + std::to_string(t_.level) + "/" + std::to_string(t_.number);
        if (t_.id != expectedId)
            fail("id", "'" + t_.id + "' does not match level and number (expected '" + expectedId + "')");
        t_.title = requiredString(root, "title");
        if (t_.title.empty())
            fail("title", "must not be empty");
        t_.source = optionalString(root, "source");
        t_.description = optionalString(root, "description");
        // A KernelBench-only task (docs/task-format.md) says why, and carries KernelBench's own
        // problem file in place of a forward, inputs and parameters.
        t_.kernelbenchOnly = optionalString(root, "kernelbench_only");
        if (root.contains("kernelbench_only") && t_.kernelbenchOnly.empty())
            fail("kernelbench_only", "must give the reason (not empty)");
        if (t_.isKernelBenchOnly()) {
            t_.referencePython = requiredString(root, "reference_python");
            if (t_.referencePython.find("class Model") == std::string::npos)
                fail("reference_python", "no 'class Model' found");
            for (const char* k : {"forward", "dims", "smoke", "inputs", "params", "init_inputs", "tolerance"})
                if (root.contains(k))
                    fail(k, "a KernelBench-only task has none (its reference is reference_python)");
            readShapeSets(root);
            return std::move(t_);
        }
        if (root.contains("reference_python"))
            fail("reference_python", "only a KernelBench-only task has one (kernelbench_only = \"<reason>\")");
        t_.forward = requiredString(root, "forward");

        readDims(root);
        readSmoke(root);
        readInputs(root);
        readParams(root);
        readTolerance(root);
        readInitInputs(root);
        readShapeSets(root);
        checkForwardSignature();
        return std::move(t_);
    }

private:
    [[noreturn]] void fail(const std::string& field, const std::string& message) const
    {
        throw TaskLoadError(path_, field, message);
    }

    static std::string join(const std::string& prefix, const std::string& key)
    {
        return prefix.empty() ? key : prefix + "." + key;
    }
    static std::string index(const std::string& prefix, size_t i) { return prefix + "[" + std::to_string(i) + "]"; }

    // init_inputs: KernelBench's constructor arguments (ModelNew(*init_inputs)); each entry an
    // integer, a float, a boolean, a dimension name or an array (a tuple) of these.
    nlohmann::json initValue(const toml::node& n, const std::string& field)
    {
        if (auto v = n.value<int64_t>(); v && n.is_integer())
            return *v;
        if (auto v = n.value<double>(); v && n.is_floating_point())
            return *v;
        if (auto v = n.value<bool>(); v && n.is_boolean())
            return *v;
        if (auto v = n.value<std::string>(); v && n.is_string()) {
            if (std::none_of(t_.dims.begin(), t_.dims.end(), [&](const auto& d) { return d.first == *v; }))
                fail(field, "unknown dimension '" + *v + "'");
            return {{"dim", *v}};
        }
        if (const toml::array* a = n.as_array()) {
            nlohmann::json out = nlohmann::json::array();
            for (size_t i = 0; i < a->size(); ++i)
                out.push_back(initValue(*a->get(i), index(field, i)));
            return out;
        }
        fail(field,
             "must be an integer, a float, a boolean, a dimension name or an array of these, not " + typeName(n));
    }
    void readInitInputs(const toml::table& root)
    {
        const toml::node* n = root.get("init_inputs");
        if (!n)
            return;
        const toml::array* a = n->as_array();
        if (!a)
            fail("init_inputs", "must be an array, not " + typeName(*n));
        t_.initInputs = initValue(*n, "init_inputs");
    }

    // [[shape_sets]]: each may change only dimensions that size inputs and nothing else (not a
    // parameter's shape or fan_in, not a constructor argument), which is what lets the evaluator
    // make the parameters and a KernelBench-format ModelNew once, at KernelBench's shape. A
    // KernelBench-only task's sets name module-level constants of reference_python instead, at
    // full scale only (whether each is an int the Python side checks when it draws).
    void readShapeSets(const toml::table& root)
    {
        const bool moduleValues = t_.isKernelBenchOnly();
        const std::set<std::string> assigned =
            moduleValues ? topLevelAssignments(t_.referencePython) : std::set<std::string>{};
        const toml::array* arr = requiredArrayOfTables(root, "shape_sets", false);
        if (!arr)
            return;
        std::set<std::string> tied, names{"kernelbench"};
        for (const ParamSpec& p : t_.params) {
            tied.insert(p.shape.begin(), p.shape.end());
            tied.insert(p.fanIn.begin(), p.fanIn.end());
        }
        const std::function<void(const nlohmann::json&)> initDims = [&](const nlohmann::json& v) {
            if (v.is_array())
                for (const auto& e : v)
                    initDims(e);
            else if (v.is_object())
                tied.insert(v.at("dim").get<std::string>());
        };
        initDims(t_.initInputs);
        for (size_t i = 0; i < arr->size(); ++i) {
            const toml::table& tbl = *arr->get(i)->as_table();
            const std::string pre = index("shape_sets", i);
            checkKeys(tbl, pre, {"name", "held_out", "dims", "smoke"});
            ShapeSet set;
            set.name = requiredString(tbl, "name", pre);
            if (!isIdentifier(set.name))
                fail(pre + ".name", "'" + set.name + "' is not a name (letters, digits, _)");
            if (!names.insert(set.name).second)
                fail(pre + ".name", "duplicate shape set name '" + set.name + "'");
            if (const toml::node* h = tbl.get("held_out")) {
                if (!h->is_boolean())
                    fail(pre + ".held_out", "expected a boolean, got " + typeName(*h));
                set.heldOut = h->as_boolean()->get();
            }
            for (const char* scale : {"dims", "smoke"}) {
                const toml::node* n = tbl.get(scale);
                if (n && moduleValues && std::string(scale) == "smoke")
                    fail(join(pre, scale), "a KernelBench-only task has KernelBench's sizes at every scale: its "
                                           "sets are full scale only (dims)");
                if (!n) {
                    if (std::string(scale) == "dims")
                        fail(pre + ".dims", "missing (required)");
                    continue;
                }
                const toml::table* values = n->as_table();
                if (!values)
                    fail(join(pre, scale), "expected a table, got " + typeName(*n));
                for (const auto& [key, node] : *values) {
                    const std::string k(key.str());
                    const std::string field = join(pre, scale) + "." + k;
                    if (moduleValues && !assigned.count(k))
                        fail(field, "'" + k +
                                        "' is not assigned at the top level of reference_python (a shape set "
                                        "of a KernelBench-only task names its module-level int constants)");
                    if (!moduleValues && !hasDim(k))
                        fail(field, "undefined dimension '" + k + "'");
                    if (tied.count(k))
                        fail(field, "'" + k +
                                        "' sizes a parameter or is a constructor argument: a shape set "
                                        "may change only dimensions that size the inputs alone");
                    if (!node.is_integer())
                        fail(field, "expected a positive integer, got " + typeName(node));
                    const int64_t v = node.as_integer()->get();
                    if (v <= 0)
                        fail(field, "must be positive, got " + std::to_string(v));
                    (std::string(scale) == "dims" ? set.full : set.smoke)[k] = v;
                }
            }
            t_.shapeSets.push_back(std::move(set));
            for (size_t j = 0; j < t_.inputs.size(); ++j)
                if (t_.inputs[j].isTensor()) {
                    const Task at = t_.atShapeSet(t_.shapeSets.size() - 1);
                    for (Scale s : {Scale::Full, Scale::Smoke}) {
                        try {
                            numel(at.inputShape(j, s));
                        } catch (const std::exception& e) {
                            fail(pre, std::string(e.what()) + " at " + scaleName(s) + " scale");
                        }
                    }
                }
        }
    }

    // Unknown keys are errors: a typo ("fanin") would otherwise be ignored silently.
    void checkKeys(const toml::table& tbl, const std::string& prefix, std::initializer_list<const char*> allowed)
    {
        for (const auto& [key, node] : tbl) {
            const std::string k(key.str());
            bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; });
            if (!ok)
                fail(join(prefix, k), "unknown field");
        }
    }

    // The classic TOML trap: `forward = '''...'''` written after [dims] or [[params]] lands in that
    // table. Name it precisely instead of reporting a missing forward plus an odd field.
    void findMisplacedForward(const toml::table& root)
    {
        for (const auto& [key, node] : root) {
            const std::string k(key.str());
            if (const toml::table* t = node.as_table(); t && t->contains("forward"))
                fail(k + ".forward", "'forward' must be a top-level key, written before the first [table]");
            if (const toml::array* a = node.as_array(); a && a->is_array_of_tables() && !a->empty()) {
                const toml::table* last = a->back().as_table();
                if (last->contains("forward"))
                    fail(index(k, a->size() - 1) + ".forward",
                         "'forward' must be a top-level key, written before the first [table]");
            }
        }
    }

    std::string requiredString(const toml::table& tbl, const char* key, const std::string& prefix = "")
    {
        const toml::node* n = tbl.get(key);
        if (!n)
            fail(join(prefix, key), "missing (required)");
        if (!n->is_string())
            fail(join(prefix, key), "expected a string, got " + typeName(*n));
        return n->as_string()->get();
    }

    std::string optionalString(const toml::table& tbl, const char* key, const std::string& prefix = "",
                               const std::string& fallback = "")
    {
        const toml::node* n = tbl.get(key);
        if (!n)
            return fallback;
        if (!n->is_string())
            fail(join(prefix, key), "expected a string, got " + typeName(*n));
        return n->as_string()->get();
    }

    int64_t requiredInt(const toml::table& tbl, const char* key, int64_t lo, int64_t hi)
    {
        const toml::node* n = tbl.get(key);
        if (!n)
            fail(key, "missing (required)");
        if (!n->is_integer())
            fail(key, "expected an integer, got " + typeName(*n));
        int64_t v = n->as_integer()->get();
        if (v < lo || v > hi)
            fail(key, "out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + "): " + std::to_string(v));
        return v;
    }

    // Integers are accepted where a float is expected (atol = 0).
    std::optional<double> optionalNumber(const toml::table& tbl, const char* key, const std::string& prefix)
    {
        const toml::node* n = tbl.get(key);
        if (!n)
            return std::nullopt;
        if (n->is_floating_point())
            return n->as_floating_point()->get();
        if (n->is_integer())
            return static_cast<double>(n->as_integer()->get());
        fail(join(prefix, key), "expected a number, got " + typeName(*n));
    }

    const toml::array* requiredArrayOfTables(const toml::table& root, const char* key, bool required)
    {
        const toml::node* n = root.get(key);
        if (!n) {
            if (required)
                fail(key, "missing (required; write [[" + std::string(key) + "]] entries)");
            return nullptr;
        }
        const toml::array* a = n->as_array();
        if (a && a->empty())
            return a; // `params = []`: toml++ calls an empty array no array of tables
        if (!a || !a->is_array_of_tables())
            fail(key, "expected an array of tables ([[" + std::string(key) + "]]), got " + typeName(*n));
        return a;
    }

    void readDims(const toml::table& root)
    {
        const toml::node* n = root.get("dims");
        if (!n)
            return;
        const toml::table* tbl = n->as_table();
        if (!tbl)
            fail("dims", "expected a table, got " + typeName(*n));
        // toml++ keeps keys sorted; the file order (which users read) comes from the source positions.
        struct Entry
        {
            std::string name;
            int64_t value;
            toml::source_position pos;
        };
        std::vector<Entry> entries;
        for (const auto& [key, node] : *tbl) {
            const std::string k(key.str());
            const std::string field = "dims." + k;
            if (!isIdentifier(k))
                fail(field, "a dimension name must be an identifier (letters, digits, _)");
            if (!node.is_integer())
                fail(field, "expected a positive integer, got " + typeName(node));
            int64_t v = node.as_integer()->get();
            if (v <= 0)
                fail(field, "must be positive, got " + std::to_string(v));
            entries.push_back({k, v, key.source().begin});
        }
        std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
            return a.pos.line != b.pos.line ? a.pos.line < b.pos.line : a.pos.column < b.pos.column;
        });
        for (auto& e : entries)
            t_.dims.emplace_back(e.name, e.value);
    }

    bool hasDim(const std::string& name) const
    {
        return std::any_of(t_.dims.begin(), t_.dims.end(), [&](const auto& d) { return d.first == name; });
    }

    void readSmoke(const toml::table& root)
    {
        const toml::node* n = root.get("smoke");
        if (!n)
            return;
        const toml::table* tbl = n->as_table();
        if (!tbl)
            fail("smoke", "expected a table, got " + typeName(*n));
        for (const auto& [key, node] : *tbl) {
            const std::string k(key.str());
            const std::string field = "smoke." + k;
            if (!hasDim(k))
                fail(field, "undefined dimension '" + k + "' (smoke may only override [dims])");
            if (!node.is_integer())
                fail(field, "expected a positive integer, got " + typeName(node));
            int64_t v = node.as_integer()->get();
            if (v <= 0)
                fail(field, "must be positive, got " + std::to_string(v));
            t_.smoke[k] = v;
        }
    }

    // A list of dimension names / positive integers (shape, fan_in).
    std::vector<std::string> readDimList(const toml::node& n, const std::string& field)
    {
        const toml::array* a = n.as_array();
        if (!a)
            fail(field, "expected an array of dimension names and positive integers, got " + typeName(n));
        std::vector<std::string> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const toml::node& e = *a->get(i);
            const std::string f = index(field, i);
            if (e.is_integer()) {
                int64_t v = e.as_integer()->get();
                if (v <= 0)
                    fail(f, "must be positive, got " + std::to_string(v));
                out.push_back(std::to_string(v));
            } else if (e.is_string()) {
                const std::string s = e.as_string()->get();
                if (isIntegerLiteral(s)) {
                    if (s.find_first_not_of('0') == std::string::npos)
                        fail(f, "must be positive, got 0");
                    out.push_back(s);
                } else if (!hasDim(s)) {
                    fail(f, "undefined dimension '" + s + "'");
                } else {
                    out.push_back(s);
                }
            } else {
                fail(f, "expected a dimension name or a positive integer, got " + typeName(e));
            }
        }
        return out;
    }

    // The element count must fit in int64 at both scales (a typo like 10485760000000 would not).
    void checkSize(const std::vector<std::string>& shape, const std::string& field)
    {
        for (Scale s : {Scale::Full, Scale::Smoke}) {
            try {
                numel(t_.resolveShape(shape, s));
            } catch (const std::exception& e) {
                fail(field, std::string(e.what()) + " at " + scaleName(s) + " scale");
            }
        }
    }

    void readInputs(const toml::table& root)
    {
        const toml::array* arr = requiredArrayOfTables(root, "inputs", true);
        if (arr->empty())
            fail("inputs", "at least one input is required");
        std::set<std::string> names;
        for (size_t i = 0; i < arr->size(); ++i) {
            const toml::table& tbl = *arr->get(i)->as_table();
            const std::string pre = index("inputs", i);
            checkKeys(tbl, pre, {"name", "kind", "shape", "dtype", "generator", "value"});
            InputSpec in;
            in.name = requiredString(tbl, "name", pre);
            if (!isIdentifier(in.name))
                fail(pre + ".name", "'" + in.name + "' is not a valid argument name");
            if (in.name == "p")
                fail(pre + ".name", "'p' is reserved for the parameter dictionary");
            if (!names.insert(in.name).second)
                fail(pre + ".name", "duplicate input name '" + in.name + "'");
            in.kind = optionalString(tbl, "kind", pre, "tensor");
            if (in.kind == "tensor") {
                const toml::node* shape = tbl.get("shape");
                if (!shape)
                    fail(pre + ".shape", "missing (required for a tensor input)");
                in.shape = readDimList(*shape, pre + ".shape");
                checkSize(in.shape, pre + ".shape");
                in.dtype = optionalString(tbl, "dtype", pre, "float32");
                if (!isKnownDtype(in.dtype))
                    fail(pre + ".dtype",
                         "unknown dtype '" + in.dtype + "' (float32, float16, bfloat16, float64, int32, int64)");
                in.generator = optionalString(tbl, "generator", pre, "rand");
                if (in.generator != "rand" && in.generator != "randn")
                    fail(pre + ".generator", "unknown generator '" + in.generator + "' (rand, randn)");
                if (tbl.contains("value"))
                    fail(pre + ".value", "only a float or int input has a value");
            } else if (in.kind == "float" || in.kind == "int") {
                for (const char* k : {"shape", "dtype", "generator"})
                    if (tbl.contains(k))
                        fail(join(pre, k), "not allowed for a " + in.kind + " input");
                const toml::node* v = tbl.get("value");
                if (!v)
                    fail(pre + ".value", "missing (required for a " + in.kind + " input)");
                if (in.kind == "int" && !v->is_integer())
                    fail(pre + ".value", "expected an integer, got " + typeName(*v));
                in.value = *optionalNumber(tbl, "value", pre);
                in.shape.clear();
                in.dtype = in.kind == "int" ? "int64" : "float64"; // what the Python scalar is
                in.generator.clear();
            } else {
                fail(pre + ".kind", "unknown kind '" + in.kind + "' (tensor, float, int)");
            }
            t_.inputs.push_back(std::move(in));
        }
    }

    void readParams(const toml::table& root)
    {
        const toml::array* arr = requiredArrayOfTables(root, "params", false);
        if (!arr)
            return;
        std::set<std::string> names;
        for (size_t i = 0; i < arr->size(); ++i) {
            const toml::table& tbl = *arr->get(i)->as_table();
            const std::string pre = index("params", i);
            checkKeys(tbl, pre, {"name", "shape", "init", "fan_in", "value", "buffer"});
            ParamSpec p;
            p.name = requiredString(tbl, "name", pre);
            if (p.name.empty())
                fail(pre + ".name", "must not be empty");
            if (!names.insert(p.name).second)
                fail(pre + ".name", "duplicate parameter name '" + p.name + "'");
            const toml::node* shape = tbl.get("shape");
            if (!shape)
                fail(pre + ".shape", "missing (required; [] for a 0-d tensor)");
            p.shape = readDimList(*shape, pre + ".shape");
            checkSize(p.shape, pre + ".shape");
            p.init = requiredString(tbl, "init", pre);
            static const char* inits[] = {"uniform_fan_in", "randn", "ones", "zeros", "constant"};
            if (std::none_of(std::begin(inits), std::end(inits), [&](const char* s) { return p.init == s; }))
                fail(pre + ".init", "unknown init '" + p.init + "' (uniform_fan_in, randn, ones, zeros, constant)");
            if (const toml::node* f = tbl.get("fan_in")) {
                if (p.init != "uniform_fan_in")
                    fail(pre + ".fan_in", "only init = \"uniform_fan_in\" takes fan_in");
                p.fanIn = readDimList(*f, pre + ".fan_in");
                if (p.fanIn.empty())
                    fail(pre + ".fan_in", "must list at least one factor");
            } else if (p.init == "uniform_fan_in") {
                fail(pre + ".fan_in", "missing (required for init = \"uniform_fan_in\")");
            }
            if (tbl.contains("value")) {
                if (p.init != "constant")
                    fail(pre + ".value", "only init = \"constant\" takes a value");
                p.value = *optionalNumber(tbl, "value", pre);
            } else if (p.init == "constant") {
                fail(pre + ".value", "missing (required for init = \"constant\")");
            }
            if (const toml::node* b = tbl.get("buffer")) {
                if (!b->is_boolean())
                    fail(pre + ".buffer", "expected a boolean, got " + typeName(*b));
                p.buffer = b->as_boolean()->get();
            }
            t_.params.push_back(std::move(p));
        }
    }

    void readTolerance(const toml::table& root)
    {
        const toml::node* n = root.get("tolerance");
        if (!n)
            return;
        const toml::table* tbl = n->as_table();
        if (!tbl)
            fail("tolerance", "expected a table, got " + typeName(*n));
        checkKeys(*tbl, "tolerance", {"atol", "rtol"});
        t_.atol = optionalNumber(*tbl, "atol", "tolerance");
        t_.rtol = optionalNumber(*tbl, "rtol", "tolerance");
        if (t_.atol && !(*t_.atol >= 0))
            fail("tolerance.atol", "must be >= 0");
        if (t_.rtol && !(*t_.rtol >= 0))
            fail("tolerance.rtol", "must be >= 0");
    }

    // Compiling the TorchScript is the torch side's job; here only the argument list is checked
    // against the inputs, because a mismatch there would be a silent mix-up of tensors.
    void checkForwardSignature()
    {
        const std::string& src = t_.forward;
        const std::string head = "def forward(";
        size_t pos = src.find(head);
        if (pos == std::string::npos)
            fail("forward", "no 'def forward(' found");
        pos += head.size();
        std::vector<std::string> args;
        std::string cur;
        int depth = 0;
        bool closed = false;
        for (; pos < src.size(); ++pos) {
            char c = src[pos];
            if (c == '(' || c == '[')
                ++depth;
            if (c == ']' || (c == ')' && depth > 0)) {
                --depth;
                cur += c;
                continue;
            }
            if (c == ')' && depth == 0) {
                closed = true;
                break;
            }
            if (c == ',' && depth == 0) {
                args.push_back(cur);
                cur.clear();
                continue;
            }
            cur += c;
        }
        if (!closed)
            fail("forward", "the argument list of forward is not closed");
        args.push_back(cur);
        std::vector<std::string> got;
        for (const std::string& a : args) {
            std::string name = a.substr(0, a.find_first_of(":="));
            name.erase(0, name.find_first_not_of(" \t\r\n"));
            name.erase(name.find_last_not_of(" \t\r\n") + 1);
            if (!name.empty())
                got.push_back(name);
        }
        std::vector<std::string> want;
        for (const auto& in : t_.inputs)
            want.push_back(in.name);
        want.push_back("p");
        if (got != want) {
            auto list = [](const std::vector<std::string>& v) {
                std::string s;
                for (size_t i = 0; i < v.size(); ++i)
                    s += (i ? ", " : "") + v[i];
                return s;
            };
            fail("forward", "arguments (" + list(got) + ") must be the inputs in order, then p: (" + list(want) + ")");
        }
    }

    std::string path_;
    Task t_;
};

} // namespace

TaskLoadError::TaskLoadError(std::string p, std::string f, std::string m)
    : path(std::move(p))
    , field(std::move(f))
    , message(std::move(m))
    , what_(toString())
{}

// ---- Task ---------------------------------------------------------------------------------------

int64_t Task::dim(const std::string& name, Scale s) const
{
    if (s == Scale::Smoke) {
        auto it = smoke.find(name);
        if (it != smoke.end())
            return it->second;
    }
    for (const auto& [n, v] : dims)
        if (n == name)
            return v;
    throw std::out_of_range("unknown dimension '" + name + "' in task " + id);
}

std::vector<int64_t> Task::resolveShape(const std::vector<std::string>& shape, Scale s) const
{
    std::vector<int64_t> out;
    out.reserve(shape.size());
    for (const std::string& e : shape)
        out.push_back(isIntegerLiteral(e) ? std::stoll(e) : dim(e, s));
    return out;
}

std::vector<int64_t> Task::inputShape(size_t i, Scale s) const
{
    return resolveShape(inputs.at(i).shape, s);
}

std::vector<int64_t> Task::paramShape(size_t i, Scale s) const
{
    return resolveShape(params.at(i).shape, s);
}

double Task::fanIn(size_t paramIndex, Scale s) const
{
    const ParamSpec& p = params.at(paramIndex);
    if (p.fanIn.empty())
        throw std::logic_error("parameter '" + p.name + "' has no fan_in");
    double f = 1;
    for (int64_t v : resolveShape(p.fanIn, s))
        f *= static_cast<double>(v);
    return f;
}

int64_t Task::parameterCount(Scale s) const
{
    int64_t n = 0;
    for (size_t i = 0; i < params.size(); ++i)
        if (!params[i].buffer)
            n += numel(paramShape(i, s));
    return n;
}

int64_t Task::bufferCount(Scale s) const
{
    int64_t n = 0;
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i].buffer)
            n += numel(paramShape(i, s));
    return n;
}

Task Task::atShapeSet(size_t k) const
{
    const ShapeSet& set = shapeSets.at(k);
    Task t = *this;
    t.shapeSets.clear();
    if (isKernelBenchOnly()) {
        t.moduleValues = set.full; // at every scale: such a task has KernelBench's sizes alone
        return t;
    }
    for (auto& [name, value] : t.dims) {
        auto it = set.full.find(name);
        if (it == set.full.end())
            continue;
        // At smoke scale: the set's smoke value, else the task's, else the set's full value (as
        // [dims] stands behind [smoke]).
        if (!smoke.count(name))
            t.smoke[name] = it->second;
        value = it->second;
    }
    for (const auto& [name, value] : set.smoke)
        t.smoke[name] = value;
    return t;
}

const Task* TaskSet::find(const std::string& id) const
{
    for (const Task& t : tasks)
        if (t.id == id)
            return &t;
    return nullptr;
}

// ---- loading ------------------------------------------------------------------------------------

Task loadTaskFile(const std::string& path)
{
    return Reader(path).read();
}

TaskSet loadTaskDir(const std::string& dir)
{
    TaskSet set;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        set.errors.push_back({dir, "", "not a directory"});
        return set;
    }
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".toml")
            files.push_back(it->path().string());
    }
    if (ec)
        set.errors.push_back({dir, "", "cannot list directory: " + ec.message()});
    std::sort(files.begin(), files.end()); // deterministic: the same file wins a duplicate id every time

    std::map<std::string, std::string> seen; // id -> path
    for (const std::string& f : files) {
        try {
            Task t = loadTaskFile(f);
            // A converted task's KernelBench problem file, kept beside the level folders
            // (kernelbench-src/<source>): the reference as KernelBench's prompt shows it, which the
            // study preset's prompts show (docs/prompts.md). Listed, never run.
            if (t.isKernelBenchOnly()) {
                t.problemFile = t.referencePython;
            } else if (!t.source.empty()) {
                std::ifstream in(fs::path(dir) / "kernelbench-src" / t.source, std::ios::binary);
                if (in)
                    t.problemFile.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            }
            auto [it, fresh] = seen.emplace(t.id, f);
            if (!fresh) {
                set.errors.push_back({f, "id", "duplicate id '" + t.id + "' (also in " + it->second + ")"});
                continue;
            }
            set.tasks.push_back(std::move(t));
        } catch (const TaskLoadError& e) {
            set.errors.push_back(e);
        } catch (const std::exception& e) { // defensive: one file never stops the others
            set.errors.push_back({f, "", e.what()});
        }
    }
    std::stable_sort(set.tasks.begin(), set.tasks.end(), [](const Task& a, const Task& b) {
        return a.level != b.level ? a.level < b.level : a.number < b.number;
    });
    return set;
}

// ---- JSON ---------------------------------------------------------------------------------------

nlohmann::json toJson(const Task& t)
{
    using nlohmann::json;
    // The `tasks` response's keys, as core decodes them (protocolnames.h).
    namespace Key = ProtocolNames::Key;
    json j;
    j[ProtocolNames::Field::kId] = t.id;
    j[Key::kLevel] = t.level;
    j[Key::kNumber] = t.number;
    j[Key::kTitle] = t.title;
    j[Key::kSource] = t.source;
    j[Key::kDescription] = t.description;
    j[Key::kForward] = t.forward;
    j[Key::kPath] = t.path;
    const auto dimsOf = [](const Task& at) {
        json dims = json::array();
        for (const auto& [name, full] : at.dims)
            dims.push_back({{Key::kName, name}, {Key::kFull, full}, {Key::kSmoke, at.dim(name, Scale::Smoke)}});
        return dims;
    };
    const json dims = dimsOf(t);
    j[Key::kDims] = dims;
    json inputs = json::array();
    for (size_t i = 0; i < t.inputs.size(); ++i) {
        const InputSpec& in = t.inputs[i];
        json o = {{Key::kName, in.name}, {Key::kKind, in.kind}};
        if (in.isTensor()) {
            o[Key::kShape] = in.shape;
            o[Key::kFull] = t.inputShape(i, Scale::Full);
            o[Key::kSmoke] = t.inputShape(i, Scale::Smoke);
            o[Key::kDtype] = in.dtype;
            o[Key::kGenerator] = in.generator;
        } else {
            o[Key::kValue] = in.value;
        }
        inputs.push_back(o);
    }
    j[Key::kInputs] = inputs;
    json params = json::array();
    for (size_t i = 0; i < t.params.size(); ++i) {
        const ParamSpec& p = t.params[i];
        json o = {{Key::kName, p.name},
                  {Key::kShape, p.shape},
                  {Key::kFull, t.paramShape(i, Scale::Full)},
                  {Key::kSmoke, t.paramShape(i, Scale::Smoke)},
                  {Key::kInit, p.init},
                  {Key::kBuffer, p.buffer}};
        if (!p.fanIn.empty()) {
            o[Key::kFanIn] = p.fanIn;
            o[Key::kFanInFull] = t.fanIn(i, Scale::Full);
            o[Key::kFanInSmoke] = t.fanIn(i, Scale::Smoke);
        }
        if (p.init == "constant")
            o[Key::kValue] = p.value;
        params.push_back(o);
    }
    j[Key::kParams] = params;
    // KernelBench's shape first, then the file's sets, each a full assignment of the dimensions. A
    // KernelBench-only task has no dimensions: its sets list the module constants they change
    // (full and smoke alike: it runs at KernelBench's scale), KernelBench's none.
    const auto moduleValuesOf = [](const ShapeSet& set) {
        json values = json::array();
        for (const auto& [name, value] : set.full)
            values.push_back({{Key::kName, name}, {Key::kFull, value}, {Key::kSmoke, value}});
        return values;
    };
    json sets = json::array();
    if (!t.isKernelBenchOnly() || !t.shapeSets.empty())
        sets.push_back({{Key::kName, "kernelbench"}, {Key::kHeldOut, false}, {Key::kDims, dims}});
    for (size_t k = 0; k < t.shapeSets.size(); ++k)
        sets.push_back(
            {{Key::kName, t.shapeSets[k].name},
             {Key::kHeldOut, t.shapeSets[k].heldOut},
             {Key::kDims, t.isKernelBenchOnly() ? moduleValuesOf(t.shapeSets[k]) : dimsOf(t.atShapeSet(k))}});
    j[Key::kShapeSets] = sets;
    j[Key::kInitInputs] = t.initInputs;
    j[Key::kKernelBenchOnly] = t.isKernelBenchOnly() ? json(t.kernelbenchOnly) : json(nullptr);
    j[Key::kReferencePython] = t.problemFile.empty() ? json(nullptr) : json(t.problemFile);
    j[Key::kTolerance] = {{Key::kAtol, t.atol ? json(*t.atol) : json(nullptr)},
                          {Key::kRtol, t.rtol ? json(*t.rtol) : json(nullptr)}};
    j[Key::kParameterCount] = {{Key::kFull, t.parameterCount(Scale::Full)},
                               {Key::kSmoke, t.parameterCount(Scale::Smoke)}};
    j[Key::kBufferCount] = {{Key::kFull, t.bufferCount(Scale::Full)}, {Key::kSmoke, t.bufferCount(Scale::Smoke)}};
    return j;
}

} // namespace kwb

namespace kwb {
namespace {
nlohmann::json resolveInit(const Task& t, const nlohmann::json& v, Scale s)
{
    if (v.is_array()) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& e : v)
            out.push_back(resolveInit(t, e, s));
        return out;
    }
    if (v.is_object())
        return t.dim(v.at("dim").get<std::string>(), s);
    return v;
}
} // namespace

nlohmann::json Task::initInputValues(Scale s) const
{
    return resolveInit(*this, initInputs, s);
}
} // namespace kwb
