// Static analysis of a reference forward: see analyze.hpp for the conventions.
//
// Only stable TorchScript IR APIs are used (Graph, Node, Value, Block, node->kind(),
// node->maybeSchema(), node->getOperation(), toIValue, Inline, ConstantPropagationImmutableTypes,
// EliminateDeadCode, Symbol::toQualString, SourceRange), so the file builds against libtorch 1.13
// and PyTorch 2.x alike. ConstantPropagationImmutableTypes rather than ConstantPropagation: the
// latter would run tensor ops whose inputs are constants (torch.zeros([...]) at full scale is
// gigabytes), while this analysis must never allocate a tensor. Everything the immutable pass
// leaves (lists, tensor-shaped values) is folded by the interpreter below.
#include "analyze.hpp"
#include "script_host.hpp"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <unordered_map>

namespace kwb {
namespace {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
using Shape = std::vector<int64_t>;

constexpr int64_t kMaxLoopIterations = 100000;

// The abstract value of one graph Value: a tensor shape, a known constant, a list or tuple of
// abstract values, the parameter dictionary, or unknown (a number computed from tensor data).
struct AVal {
    enum Kind { Unknown, Tensor, Const, List, Tuple, Dict } kind = Unknown;
    // Tensor
    Shape shape;
    int elemBytes = 4;
    bool contiguous = true;
    bool hostScalar = false;  // a 0-d tensor made from a Python number (prim::NumToTensor): 0 bytes
    // Const (also the known value of a hostScalar tensor)
    c10::IValue iv;
    // List / Tuple
    std::vector<AVal> items;
    // Dict: index of the ParamDict argument
    int dictArg = -1;

    static AVal tensor(Shape s, int elemBytes, bool contiguous = true) {
        AVal a;
        a.kind = Tensor;
        a.shape = std::move(s);
        a.elemBytes = elemBytes;
        a.contiguous = contiguous;
        return a;
    }
    static AVal constant(c10::IValue v) {
        AVal a;
        a.kind = Const;
        a.iv = std::move(v);
        return a;
    }
    bool isTensor() const { return kind == Tensor; }
    bool isConst() const { return kind == Const; }
    bool isNone() const { return kind == Const && iv.isNone(); }
};

int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

int64_t tensorBytes(const AVal& a) {
    if (!a.isTensor() || a.hostScalar) return 0;
    return numel(a.shape) * a.elemBytes;
}

std::string shapeStr(const Shape& s) {
    std::ostringstream o;
    o << '(';
    for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
    if (s.size() == 1) o << ',';
    o << ')';
    return o.str();
}

bool typeHasTensor(const c10::TypePtr& t) {
    if (t->kind() == c10::TypeKind::TensorType) return true;
    for (const auto& c : t->containedTypes())
        if (typeHasTensor(c)) return true;
    return false;
}

int scalarTypeBytes(int64_t st) { return static_cast<int>(c10::elementSize(static_cast<c10::ScalarType>(st))); }

int64_t scalarTypeFor(int elemBytes) {
    switch (elemBytes) {
    case 1: return static_cast<int64_t>(c10::ScalarType::Bool);
    case 2: return static_cast<int64_t>(c10::ScalarType::Half);
    case 8: return static_cast<int64_t>(c10::ScalarType::Double);
    default: return static_cast<int64_t>(c10::ScalarType::Float);
    }
}

// Source location of a node: " at line N: `code`" (line 1-based within the compiled source).
int lineOf(const Node* n) {
    const auto sr = n->sourceRange();
    const auto& src = sr.source();
    if (!src) return -1;
    return static_cast<int>(src->lineno_for_offset(sr.start())) + 1;
}

std::string where(const Node* n) {
    if (!n) return "";
    const auto sr = n->sourceRange();
    const auto& src = sr.source();
    if (!src) return " (no source location)";
    const size_t line = src->lineno_for_offset(sr.start());
    std::string text = src->get_line(line).str();
    const auto b = text.find_first_not_of(" \t");
    const auto e = text.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
    return " at line " + std::to_string(line + 1) + ": `" + text + "`";
}

// Per-element FLOPs of element-wise ops (out-of-place names; in-place "relu_" maps to "relu").
const std::unordered_map<std::string, int>& elementwiseFlops() {
    static const std::unordered_map<std::string, int> table = {
        // unary
        {"relu", 1}, {"relu6", 1}, {"tanh", 1}, {"hardtanh", 1}, {"leaky_relu", 1}, {"clamp", 1},
        {"clamp_min", 1}, {"clamp_max", 1}, {"clip", 1}, {"threshold", 1}, {"exp", 1}, {"exp2", 1},
        {"expm1", 1}, {"log", 1}, {"log2", 1}, {"log10", 1}, {"log1p", 1}, {"sqrt", 1}, {"rsqrt", 1},
        {"abs", 1}, {"neg", 1}, {"sin", 1}, {"cos", 1}, {"tan", 1}, {"asin", 1}, {"acos", 1},
        {"atan", 1}, {"sinh", 1}, {"cosh", 1}, {"erf", 1}, {"erfc", 1}, {"erfinv", 1},
        {"reciprocal", 1}, {"square", 1}, {"sign", 1}, {"sgn", 1}, {"floor", 1}, {"ceil", 1},
        {"round", 1}, {"trunc", 1}, {"frac", 1}, {"logical_not", 1}, {"bitwise_not", 1},
        {"nan_to_num", 1}, {"hardshrink", 1}, {"softshrink", 1}, {"positive", 0},
        {"sigmoid", 3}, {"softplus", 3}, {"elu", 3}, {"selu", 3}, {"celu", 3}, {"hardswish", 3},
        {"hardsigmoid", 2}, {"softsign", 2}, {"tanhshrink", 2}, {"gelu", 4}, {"mish", 4},
        {"silu", 4}, {"logsigmoid", 4},
        // binary / ternary
        {"add", 1}, {"sub", 1}, {"rsub", 1}, {"mul", 1}, {"div", 1}, {"true_divide", 1},
        {"floor_divide", 1}, {"remainder", 1}, {"fmod", 1}, {"pow", 1}, {"float_power", 1},
        {"maximum", 1}, {"minimum", 1}, {"fmax", 1}, {"fmin", 1}, {"atan2", 1}, {"hypot", 1},
        {"copysign", 1}, {"xlogy", 1}, {"eq", 1}, {"ne", 1}, {"lt", 1}, {"le", 1}, {"gt", 1},
        {"ge", 1}, {"logical_and", 1}, {"logical_or", 1}, {"logical_xor", 1}, {"bitwise_and", 1},
        {"bitwise_or", 1}, {"bitwise_xor", 1}, {"where", 1}, {"masked_fill", 1}, {"prelu", 1},
        {"addcmul", 2}, {"addcdiv", 2}, {"lerp", 2},
    };
    return table;
}

bool isComparison(const std::string& s) {
    static const std::set<std::string> c = {"eq", "ne", "lt", "le", "gt", "ge", "logical_not",
                                            "logical_and", "logical_or", "logical_xor"};
    return c.count(s) > 0;
}

class Analyzer {
public:
    Analyzer(const std::vector<ArgInfo>& args, double ridge) : args_(args), ridge_(ridge) {}

    nlohmann::json run(const std::shared_ptr<Graph>& source) {
        std::shared_ptr<Graph> g = source->copy();
        inlineAllCalls(*g);
        torch::jit::ConstantPropagationImmutableTypes(g);
        torch::jit::EliminateDeadCode(g);

        bindInputs(*g);
        runBlock(g->block());
        cur_ = nullptr;

        // Output.
        nlohmann::json outShapes = nlohmann::json::array();
        int64_t outputBytes = 0;
        for (const Value* v : g->outputs()) {
            const AVal& a = val(v);
            std::vector<const AVal*> ts;
            collectTensors(a, ts);
            if (ts.empty()) throw AnalyzeError("the forward does not return a tensor");
            for (const AVal* t : ts) {
                outShapes.push_back(t->shape);
                outputBytes += tensorBytes(*t);
            }
        }
        int64_t paramBytes = 0;
        nlohmann::json used = nlohmann::json::array();
        for (const auto& kv : paramsUsed_) {
            paramBytes += kv.second;
            used.push_back(kv.first);
        }
        const int64_t fused = inputBytes_ + paramBytes + outputBytes;

        int64_t memoryBound = 0;
        for (const auto& op : ops_) {
            const int64_t b = op["bytes"].get<int64_t>();
            if (b > 0 && static_cast<double>(op["flops"].get<int64_t>()) / static_cast<double>(b) < ridge_)
                ++memoryBound;
        }
        nlohmann::json r;
        r["ops"] = ops_;
        r["output_shape"] = outShapes.size() == 1 ? outShapes[0] : outShapes;
        if (outShapes.size() > 1) r["output_shapes"] = outShapes;
        r["flops"] = totalFlops_;
        r["bytes_unfused"] = totalBytes_;
        r["bytes_fused"] = fused;
        r["intensity_unfused"] = totalBytes_ > 0 ? double(totalFlops_) / double(totalBytes_) : 0.0;
        r["intensity_fused"] = fused > 0 ? double(totalFlops_) / double(fused) : 0.0;
        r["op_count"] = static_cast<int64_t>(ops_.size());
        r["memory_bound_ops"] = memoryBound;
        r["memory_bound_ridge"] = ridge_;
        r["input_bytes"] = inputBytes_;
        r["param_bytes"] = paramBytes;
        r["output_bytes"] = outputBytes;
        r["params_used"] = used;
        return r;
    }

private:
    const std::vector<ArgInfo>& args_;
    double ridge_;
    std::unordered_map<const Value*, AVal> env_;
    const Node* cur_ = nullptr;
    nlohmann::json ops_ = nlohmann::json::array();
    int64_t totalFlops_ = 0;
    int64_t totalBytes_ = 0;
    int64_t inputBytes_ = 0;
    std::map<std::string, int64_t> paramsUsed_;

    [[noreturn]] void fail(const std::string& msg) const { throw AnalyzeError(msg + where(cur_)); }

    // ---- graph inputs ------------------------------------------------------------------------
    void bindInputs(const Graph& g) {
        const auto inputs = g.inputs();
        if (inputs.size() != args_.size())
            throw AnalyzeError("the forward has " + std::to_string(inputs.size()) + " arguments but " +
                               std::to_string(args_.size()) + " were described");
        for (size_t i = 0; i < inputs.size(); ++i) {
            const Value* v = inputs[i];
            const ArgInfo& a = args_[i];
            const auto tk = v->type()->kind();
            const std::string name = v->debugNameBase();
            auto mismatch = [&](const char* what) {
                throw AnalyzeError("argument " + std::to_string(i) + " ('" + name + "') is " +
                                   v->type()->str() + " in the forward but described as " + what);
            };
            switch (a.kind) {
            case ArgInfo::Tensor:
                if (tk != c10::TypeKind::TensorType) mismatch("a tensor");
                for (int64_t d : a.shape)
                    if (d < 0) mismatch("a tensor with a negative dimension");
                env_[v] = AVal::tensor(a.shape, a.elemBytes);
                if (v->hasUses()) inputBytes_ += numel(a.shape) * a.elemBytes;
                break;
            case ArgInfo::Float:
            case ArgInfo::Int:
                if (tk == c10::TypeKind::FloatType || tk == c10::TypeKind::NumberType)
                    env_[v] = AVal::constant(c10::IValue(a.value));
                else if (tk == c10::TypeKind::IntType)
                    env_[v] = AVal::constant(c10::IValue(static_cast<int64_t>(std::llround(a.value))));
                else
                    mismatch("a number");
                break;
            case ArgInfo::ParamDict: {
                if (tk != c10::TypeKind::DictType) mismatch("the parameter dictionary");
                AVal d;
                d.kind = AVal::Dict;
                d.dictArg = static_cast<int>(i);
                env_[v] = d;
                break;
            }
            }
        }
    }

    // ---- values ------------------------------------------------------------------------------
    const AVal& val(const Value* v) const {
        auto it = env_.find(v);
        if (it == env_.end()) fail("internal error: value %" + v->debugName() + " has no abstract state");
        return it->second;
    }
    void set(const Value* v, AVal a) { env_[v] = std::move(a); }
    void setUnknown(const Node* n) {
        for (const Value* o : n->outputs()) set(o, AVal());
    }

    static void collectTensors(const AVal& a, std::vector<const AVal*>& out) {
        if (a.isTensor()) out.push_back(&a);
        else if (a.kind == AVal::List || a.kind == AVal::Tuple)
            for (const auto& it : a.items) collectTensors(it, out);
    }

    // Named argument access through the node's schema (argument positions follow the schema).
    int argIndex(const Node* n, const char* name) const {
        const c10::FunctionSchema* s = n->maybeSchema();
        if (!s) return -1;
        const auto& as = s->arguments();
        for (size_t i = 0; i < as.size() && i < n->inputs().size(); ++i)
            if (as[i].name() == name) return static_cast<int>(i);
        return -1;
    }
    const AVal* arg(const Node* n, const char* name) const {
        const int i = argIndex(n, name);
        return i < 0 ? nullptr : &val(n->inputs()[i]);
    }
    const AVal& tensorArg(const Node* n, const char* name) const {
        const AVal* a = arg(n, name);
        if (!a) fail(std::string(n->kind().toQualString()) + ": no argument '" + name + "'");
        if (!a->isTensor()) fail(std::string(n->kind().toQualString()) + ": argument '" + name + "' is not a tensor");
        return *a;
    }
    const AVal* optTensorArg(const Node* n, const char* name) const {
        const AVal* a = arg(n, name);
        if (!a || a->isNone()) return nullptr;
        if (!a->isTensor()) fail(std::string(n->kind().toQualString()) + ": argument '" + name + "' is not a tensor");
        return a;
    }

    int64_t toInt(const AVal& a, const std::string& what) const {
        if (a.isConst() && a.iv.isInt()) return a.iv.toInt();
        if (a.isConst() && a.iv.isBool()) return a.iv.toBool() ? 1 : 0;
        if (a.isTensor() && a.hostScalar && a.iv.isInt()) return a.iv.toInt();
        fail(what + " is not known statically");
    }
    double toDouble(const AVal& a, const std::string& what) const {
        if (a.isConst() && a.iv.isDouble()) return a.iv.toDouble();
        if (a.isConst() && a.iv.isInt()) return static_cast<double>(a.iv.toInt());
        if (a.isConst() && a.iv.isBool()) return a.iv.toBool() ? 1.0 : 0.0;
        fail(what + " is not known statically");
    }
    bool toBool(const AVal& a, const std::string& what) const {
        if (a.isConst() && a.iv.isBool()) return a.iv.toBool();
        if (a.isConst() && a.iv.isInt()) return a.iv.toInt() != 0;
        fail(what + " is not known statically");
    }
    Shape toIntList(const AVal& a, const std::string& what) const {
        Shape r;
        if (a.isConst()) {
            if (a.iv.isInt()) return {a.iv.toInt()};
            if (a.iv.isIntList()) return a.iv.toIntVector();
            if (a.iv.isList()) {
                for (const c10::IValue& e : a.iv.toListRef()) {
                    if (!e.isInt()) fail(what + " is not a list of ints");
                    r.push_back(e.toInt());
                }
                return r;
            }
            if (a.iv.isTuple()) {
                for (const c10::IValue& e : a.iv.toTupleRef().elements()) {
                    if (!e.isInt()) fail(what + " is not a list of ints");
                    r.push_back(e.toInt());
                }
                return r;
            }
            fail(what + " is not a list of ints");
        }
        if (a.kind == AVal::List || a.kind == AVal::Tuple) {
            for (const AVal& e : a.items) r.push_back(toInt(e, what + " (an element)"));
            return r;
        }
        fail(what + " is not known statically");
    }
    // Named int argument with a default when absent or None.
    int64_t intArg(const Node* n, const char* name, int64_t dflt) const {
        const AVal* a = arg(n, name);
        if (!a || a->isNone()) return dflt;
        return toInt(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
    }
    bool boolArg(const Node* n, const char* name, bool dflt) const {
        const AVal* a = arg(n, name);
        if (!a || a->isNone()) return dflt;
        return toBool(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
    }
    double doubleArg(const Node* n, const char* name, double dflt) const {
        const AVal* a = arg(n, name);
        if (!a || a->isNone()) return dflt;
        return toDouble(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
    }
    // Int-list argument expanded to `k` entries (a single value is repeated); `dflt` when absent,
    // None or empty.
    Shape listArg(const Node* n, const char* name, size_t k, int64_t dflt) const {
        const AVal* a = arg(n, name);
        Shape v;
        if (a && !a->isNone()) v = toIntList(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
        if (v.empty()) return Shape(k, dflt);
        if (v.size() == 1 && k > 1) return Shape(k, v[0]);
        if (v.size() != k)
            fail(std::string(n->kind().toQualString()) + ": argument '" + name + "' has " + std::to_string(v.size()) +
                 " entries, expected " + std::to_string(k));
        return v;
    }

    int64_t normDim(int64_t d, size_t rank, const std::string& op) const {
        const int64_t r = rank == 0 ? 1 : static_cast<int64_t>(rank);
        if (d < -r || d >= r)
            fail(op + ": dimension " + std::to_string(d) + " out of range for a tensor of rank " + std::to_string(rank));
        return d < 0 ? d + r : d;
    }

    Shape broadcast(const Shape& a, const Shape& b, const std::string& op) const {
        const size_t r = std::max(a.size(), b.size());
        Shape out(r);
        for (size_t i = 0; i < r; ++i) {
            const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
            const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
            if (da == db || db == 1) out[r - 1 - i] = da;
            else if (da == 1) out[r - 1 - i] = db;
            else fail(op + ": shapes " + shapeStr(a) + " and " + shapeStr(b) + " do not broadcast");
        }
        return out;
    }

    // ---- recording ---------------------------------------------------------------------------
    int64_t ioBytes(const Node* n) const {
        int64_t b = 0;
        std::vector<const AVal*> ts;
        for (const Value* v : n->inputs()) collectTensors(val(v), ts);
        for (const Value* v : n->outputs()) collectTensors(val(v), ts);
        for (const AVal* t : ts) b += tensorBytes(*t);
        return b;
    }
    void record(const Node* n, const char* category, int64_t flops, int64_t bytes) {
        nlohmann::json op;
        op["index"] = static_cast<int64_t>(ops_.size());
        op["op"] = n->kind().toQualString();
        nlohmann::json ins = nlohmann::json::array();
        std::vector<const AVal*> ts;
        for (const Value* v : n->inputs()) collectTensors(val(v), ts);
        for (const AVal* t : ts) ins.push_back(t->shape);
        op["inputs"] = ins;
        std::vector<const AVal*> outs;
        for (const Value* v : n->outputs()) collectTensors(val(v), outs);
        op["output"] = outs.empty() ? nlohmann::json::array() : nlohmann::json(outs[0]->shape);
        if (outs.size() > 1) op["output_count"] = static_cast<int64_t>(outs.size());
        op["flops"] = flops;
        op["bytes"] = bytes;
        op["category"] = category;
        const int line = lineOf(n);
        if (line > 0) op["line"] = line;
        ops_.push_back(std::move(op));
        totalFlops_ += flops;
        totalBytes_ += bytes;
    }

    // ---- interpreter -------------------------------------------------------------------------
    void runBlock(const Block* b) {
        for (const Node* n : b->nodes()) {
            const Node* saved = cur_;
            cur_ = n;
            runNode(n);
            cur_ = saved;
        }
    }

    void runNode(const Node* n) {
        const c10::Symbol k = n->kind();
        const std::string kind = k.toQualString();

        if (k == c10::prim::Constant) return constantNode(n);
        if (k == c10::prim::If) return ifNode(n);
        if (k == c10::prim::Loop) return loopNode(n);
        if (!n->blocks().empty()) fail("unsupported construct " + kind);
        if (k == c10::prim::RaiseException) fail("the forward raises an exception");
        if (kind == "aten::warn" || kind == "prim::Print") return setUnknown(n);
        if (k.is_prim() && primNode(n)) return;
        if (k.is_aten() && queryNode(n)) return;

        bool tensorOut = false;
        for (const Value* o : n->outputs()) tensorOut = tensorOut || typeHasTensor(o->type());
        bool tensorIn = false;
        for (const Value* i : n->inputs()) tensorIn = tensorIn || typeHasTensor(i->type());
        if (tensorOut) {
            if (!k.is_aten()) fail("unsupported op " + kind);
            return tensorOp(n);
        }
        if (!k.is_aten() && !k.is_prim()) fail("unsupported op " + kind);
        // Scalar / list / string op: run the real operator when every input is known.
        if (tensorIn || n->hasSideEffects() || !n->maybeOperator()) return setUnknown(n);
        for (const Value* i : n->inputs())
            if (!val(i).isConst()) return setUnknown(n);
        torch::jit::Stack stack;
        for (const Value* i : n->inputs()) stack.push_back(val(i).iv);
        try {
            auto op = n->getOperation();
            op(stack);
        } catch (const std::exception&) {
            return setUnknown(n);  // e.g. a division by zero: the value stays unknown
        }
        if (stack.size() != n->outputs().size()) return setUnknown(n);
        for (size_t i = 0; i < stack.size(); ++i) set(n->outputs()[i], AVal::constant(stack[i]));
    }

    void constantNode(const Node* n) {
        const Value* o = n->output();
        auto iv = torch::jit::toIValue(o);
        if (!iv) return set(o, AVal());
        if (iv->isTensor()) {
            const auto& t = iv->toTensor();
            AVal a = AVal::tensor(t.sizes().vec(), static_cast<int>(t.element_size()));
            return set(o, a);
        }
        set(o, AVal::constant(*iv));
    }

    void ifNode(const Node* n) {
        const AVal& c = val(n->input(0));
        if (!(c.isConst() && c.iv.isBool()))
            fail("data-dependent `if` (prim::If): its condition is computed from tensor values, so the "
                 "analysis cannot know which branch runs");
        const Block* b = n->blocks()[c.iv.toBool() ? 0 : 1];
        runBlock(b);
        for (size_t i = 0; i < n->outputs().size(); ++i) set(n->outputs()[i], val(b->outputs()[i]));
    }

    void loopNode(const Node* n) {
        const AVal& trip = val(n->input(0));
        const AVal& cond0 = val(n->input(1));
        if (!(trip.isConst() && trip.iv.isInt()) || !(cond0.isConst() && cond0.iv.isBool()))
            fail("loop (prim::Loop) with a data-dependent trip count or condition");
        const int64_t maxTrip = trip.iv.toInt();
        bool cond = cond0.iv.toBool();
        const Block* body = n->blocks()[0];
        const size_t nCarried = n->inputs().size() - 2;
        std::vector<AVal> carried;
        for (size_t i = 0; i < nCarried; ++i) carried.push_back(val(n->inputs()[i + 2]));
        for (int64_t it = 0; it < maxTrip && cond; ++it) {
            if (it >= kMaxLoopIterations)
                fail("loop (prim::Loop) runs more than " + std::to_string(kMaxLoopIterations) + " iterations");
            set(body->inputs()[0], AVal::constant(c10::IValue(it)));
            for (size_t i = 0; i < nCarried; ++i) set(body->inputs()[i + 1], carried[i]);
            runBlock(body);
            const AVal& c = val(body->outputs()[0]);
            if (!(c.isConst() && c.iv.isBool()))
                fail("loop (prim::Loop) whose condition is computed from tensor values (a data-dependent while loop)");
            cond = c.iv.toBool();
            for (size_t i = 0; i < nCarried; ++i) carried[i] = val(body->outputs()[i + 1]);
        }
        for (size_t i = 0; i < nCarried; ++i) set(n->outputs()[i], carried[i]);
    }

    // prim:: nodes that carry tensors or need special handling; false = not handled here.
    bool primNode(const Node* n) {
        const c10::Symbol k = n->kind();
        const auto ins = n->inputs();
        const auto outs = n->outputs();
        bool allConst = true;
        for (const Value* i : ins) allConst = allConst && val(i).isConst();
        bool tensorTyped = false;
        for (const Value* o : outs) tensorTyped = tensorTyped || typeHasTensor(o->type());

        if (k == c10::prim::ListConstruct || k == c10::prim::TupleConstruct) {
            if (allConst && !tensorTyped) {  // a list/tuple of known numbers, strings, ...
                if (k == c10::prim::ListConstruct) {
                    const auto& contained = n->output()->type()->containedTypes();
                    if (contained.size() != 1) return setUnknown(n), true;
                    c10::impl::GenericList l(contained[0]);
                    for (const Value* i : ins) l.push_back(val(i).iv);
                    set(n->output(), AVal::constant(c10::IValue(l)));
                } else {
                    std::vector<c10::IValue> elems;
                    for (const Value* i : ins) elems.push_back(val(i).iv);
                    set(n->output(), AVal::constant(c10::IValue(c10::ivalue::Tuple::create(std::move(elems)))));
                }
                return true;
            }
            AVal a;
            a.kind = k == c10::prim::ListConstruct ? AVal::List : AVal::Tuple;
            for (const Value* i : ins) a.items.push_back(val(i));
            set(n->output(), a);
            return true;
        }
        if (k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack) {
            const AVal& a = val(n->input(0));
            if (a.isConst()) {
                std::vector<c10::IValue> elems;
                if (a.iv.isList())
                    for (const c10::IValue& e : a.iv.toListRef()) elems.push_back(e);
                else if (a.iv.isTuple())
                    for (const c10::IValue& e : a.iv.toTupleRef().elements()) elems.push_back(e);
                else
                    return setUnknown(n), true;
                if (elems.size() != outs.size())
                    fail("unpacking " + std::to_string(elems.size()) + " values into " + std::to_string(outs.size()));
                for (size_t i = 0; i < outs.size(); ++i) set(outs[i], AVal::constant(elems[i]));
                return true;
            }
            if (a.kind != AVal::List && a.kind != AVal::Tuple) return setUnknown(n), true;
            if (a.items.size() != outs.size())
                fail("unpacking " + std::to_string(a.items.size()) + " values into " + std::to_string(outs.size()));
            const AVal src = a;  // copy: set() may rehash
            for (size_t i = 0; i < outs.size(); ++i) set(outs[i], src.items[i]);
            return true;
        }
        if (k == c10::prim::TupleIndex) {
            const AVal& a = val(n->input(0));
            if (a.isConst() && a.iv.isTuple()) {
                const auto& elems = a.iv.toTupleRef().elements();
                int64_t i = toInt(val(n->input(1)), "tuple index");
                if (i < 0) i += static_cast<int64_t>(elems.size());
                if (i < 0 || i >= static_cast<int64_t>(elems.size())) fail("tuple index out of range");
                const c10::IValue e = elems[static_cast<size_t>(i)];
                set(n->output(), AVal::constant(e));
                return true;
            }
            if (a.kind != AVal::Tuple && a.kind != AVal::List) return setUnknown(n), true;
            int64_t i = toInt(val(n->input(1)), "tuple index");
            if (i < 0) i += static_cast<int64_t>(a.items.size());
            if (i < 0 || i >= static_cast<int64_t>(a.items.size())) fail("tuple index out of range");
            const AVal item = a.items[static_cast<size_t>(i)];
            set(n->output(), item);
            return true;
        }
        if (k == c10::prim::unchecked_cast || k == c10::prim::unchecked_unwrap_optional) {
            set(n->output(), val(n->input(0)));
            return true;
        }
        if (k == c10::prim::NumToTensor) {
            const AVal& a = val(n->input(0));
            AVal t = AVal::tensor({}, 8);
            t.hostScalar = true;
            if (a.isConst()) t.iv = a.iv;
            set(n->output(), t);
            return true;
        }
        if (k == c10::prim::Uninitialized) return setUnknown(n), true;
        if (k == c10::prim::dtype) {
            const AVal& a = val(n->input(0));
            if (!a.isTensor()) return setUnknown(n), true;
            set(n->output(), AVal::constant(c10::IValue(scalarTypeFor(a.elemBytes))));
            return true;
        }
        if (k == c10::prim::device || k == c10::prim::requires_grad) return setUnknown(n), true;
        return false;
    }

    // aten:: nodes on tensors (or dicts/lists of tensors) that give non-tensor results or look
    // up parameters; false = not handled here.
    bool queryNode(const Node* n) {
        const std::string name = n->kind().toUnqualString();
        const auto ins = n->inputs();
        if (ins.empty()) return false;
        const AVal& a0 = val(ins[0]);

        if (name == "__getitem__") {
            if (a0.kind == AVal::Dict) {
                const AVal& key = val(ins[1]);
                if (!(key.isConst() && key.iv.isString())) fail("parameter name is not known statically");
                const std::string pname = key.iv.toStringRef();
                const ArgInfo& d = args_[static_cast<size_t>(a0.dictArg)];
                auto it = d.dict.find(pname);
                if (it == d.dict.end()) fail("parameter '" + pname + "' is not in the parameter dictionary");
                set(n->output(), AVal::tensor(it->second, d.elemBytes));
                paramsUsed_[pname] = numel(it->second) * d.elemBytes;
                return true;
            }
            if (a0.kind == AVal::List || a0.kind == AVal::Tuple) {
                int64_t i = toInt(val(ins[1]), "list index");
                if (i < 0) i += static_cast<int64_t>(a0.items.size());
                if (i < 0 || i >= static_cast<int64_t>(a0.items.size())) fail("list index out of range");
                const AVal item = a0.items[static_cast<size_t>(i)];
                set(n->output(), item);
                return true;
            }
            return false;
        }
        if (name == "__contains__" && a0.kind == AVal::Dict) {
            const AVal& key = val(ins[1]);
            if (!(key.isConst() && key.iv.isString())) return setUnknown(n), true;
            const ArgInfo& d = args_[static_cast<size_t>(a0.dictArg)];
            set(n->output(), AVal::constant(c10::IValue(d.dict.count(key.iv.toStringRef()) > 0)));
            return true;
        }
        if (name == "len") {
            if (a0.kind == AVal::List || a0.kind == AVal::Tuple) {
                set(n->output(), AVal::constant(c10::IValue(static_cast<int64_t>(a0.items.size()))));
                return true;
            }
            if (a0.isTensor()) {
                if (a0.shape.empty()) fail("len() of a 0-d tensor");
                set(n->output(), AVal::constant(c10::IValue(a0.shape[0])));
                return true;
            }
            if (a0.kind == AVal::Dict) {
                set(n->output(),
                    AVal::constant(c10::IValue(static_cast<int64_t>(args_[static_cast<size_t>(a0.dictArg)].dict.size()))));
                return true;
            }
            return false;
        }
        if ((name == "__is__" || name == "__isnot__") && ins.size() == 2) {
            const AVal& a1 = val(ins[1]);
            const bool n0 = a0.isNone(), n1 = a1.isNone();
            const bool known0 = a0.isConst() || a0.isTensor() || a0.kind == AVal::List || a0.kind == AVal::Dict;
            const bool known1 = a1.isConst() || a1.isTensor() || a1.kind == AVal::List || a1.kind == AVal::Dict;
            if ((n0 || n1) && known0 && known1) {
                const bool same = n0 && n1;
                set(n->output(), AVal::constant(c10::IValue(name == "__is__" ? same : !same)));
                return true;
            }
            return false;
        }
        if (!a0.isTensor()) return false;
        if (name == "size") {
            if (ins.size() == 1) {
                c10::List<int64_t> l;
                for (int64_t d : a0.shape) l.push_back(d);
                set(n->output(), AVal::constant(c10::IValue(l)));
            } else {
                const AVal& d = val(ins[1]);
                if (!(d.isConst() && d.iv.isInt())) return setUnknown(n), true;
                if (a0.shape.empty()) fail("size() of a 0-d tensor");
                const int64_t i = normDim(d.iv.toInt(), a0.shape.size(), "aten::size");
                set(n->output(), AVal::constant(c10::IValue(a0.shape[static_cast<size_t>(i)])));
            }
            return true;
        }
        if (name == "dim") {
            set(n->output(), AVal::constant(c10::IValue(static_cast<int64_t>(a0.shape.size()))));
            return true;
        }
        if (name == "numel") {
            set(n->output(), AVal::constant(c10::IValue(numel(a0.shape))));
            return true;
        }
        if (name == "Int" || name == "Float" || name == "Bool" || name == "item" || name == "ScalarImplicit") {
            if (a0.hostScalar && !a0.iv.isNone()) {
                c10::IValue v = a0.iv;
                if (name == "Int" && v.isDouble()) v = c10::IValue(static_cast<int64_t>(v.toDouble()));
                if (name == "Float" && v.isInt()) v = c10::IValue(static_cast<double>(v.toInt()));
                if (name == "Bool") v = c10::IValue(v.isInt() ? v.toInt() != 0 : v.toDouble() != 0);
                set(n->output(), AVal::constant(v));
            } else {
                setUnknown(n);
            }
            return true;
        }
        return false;
    }

    // ---- tensor ops --------------------------------------------------------------------------
    void tensorOp(const Node* n) {
        const std::string qual = n->kind().toQualString();
        const std::string base = n->kind().toUnqualString();
        const bool inplace = base.size() > 1 && base.back() == '_' && base.compare(base.size() - 2, 2, "__") != 0;
        const std::string stem = inplace ? base.substr(0, base.size() - 1) : base;
        if (!n->maybeSchema()) fail("unsupported op " + qual);

        if (handle(n, stem, qual)) {
            // An in-place op updates its first argument's abstract state (e.g. unsqueeze_).
            if (inplace && !n->inputs().empty() && val(n->inputs()[0]).isTensor() && !n->outputs().empty() &&
                val(n->outputs()[0]).isTensor())
                set(n->inputs()[0], val(n->outputs()[0]));
            return;
        }
        fail("unsupported op " + qual);
    }

    bool handle(const Node* n, const std::string& s, const std::string& qual) {
        if (s == "dropout" || s == "feature_dropout" || s == "alpha_dropout" || s == "feature_alpha_dropout")
            return dropout(n), true;
        if (s == "max" || s == "min") {
            int tensors = 0;
            for (const Value* v : n->inputs()) tensors += val(v).isTensor() ? 1 : 0;
            if (tensors >= 2) return elementwise(n, s, 1), true;
            return reduction(n, s, qual), true;
        }
        if (s == "where" && n->inputs().size() == 1) fail("aten::where(condition) has a data-dependent shape");
        {
            const auto& t = elementwiseFlops();
            auto it = t.find(s);
            if (it != t.end()) return elementwise(n, s, it->second), true;
        }
        if (s == "conv1d" || s == "conv2d" || s == "conv3d") return conv(n, false), true;
        if (s == "conv_transpose1d" || s == "conv_transpose2d" || s == "conv_transpose3d") return conv(n, true), true;
        if (s == "convolution" || s == "_convolution") return conv(n, boolArg(n, "transposed", false)), true;
        if (s.rfind("max_pool", 0) == 0 || s.rfind("avg_pool", 0) == 0) return pool(n, s), true;
        if (s.rfind("adaptive_avg_pool", 0) == 0 || s.rfind("adaptive_max_pool", 0) == 0) return adaptivePool(n, s), true;
        if (s == "matmul" || s == "mm" || s == "bmm" || s == "mv" || s == "dot" || s == "vdot" || s == "addmm" ||
            s == "baddbmm" || s == "addmv")
            return matmul(n, s), true;
        if (s == "linear") return linear(n), true;
        if (s == "layer_norm" || s == "batch_norm" || s == "group_norm" || s == "instance_norm") return norm(n, s), true;
        if (s == "softmax" || s == "log_softmax") return softmax(n, s), true;
        if (s == "sum" || s == "mean" || s == "amax" || s == "amin" || s == "prod" || s == "var" || s == "std" ||
            s == "logsumexp" || s == "argmax" || s == "argmin" || s == "all" || s == "any" || s == "nansum" ||
            s == "norm" || s == "count_nonzero")
            return reduction(n, s, qual), true;
        if (viewOp(n, s)) return true;
        if (dataOp(n, s)) return true;
        return false;
    }

    void elementwise(const Node* n, const std::string& s, int perElem) {
        const std::string qual = n->kind().toQualString();
        std::vector<const AVal*> ts;
        for (const Value* v : n->inputs())
            if (val(v).isTensor()) ts.push_back(&val(v));
        if (ts.empty()) fail(qual + " without a tensor operand");
        Shape out = ts[0]->shape;
        for (size_t i = 1; i < ts.size(); ++i) out = broadcast(out, ts[i]->shape, qual);
        const std::string base = n->kind().toUnqualString();
        if (base.back() == '_' && out != ts[0]->shape)
            fail(qual + ": the in-place result " + shapeStr(out) + " does not fit the tensor " + shapeStr(ts[0]->shape));
        int eb = isComparison(s) ? 1 : ts[0]->elemBytes;
        if (!isComparison(s))
            for (const AVal* t : ts)
                if (!t->hostScalar) eb = std::max(eb, t->elemBytes);
        set(n->output(), AVal::tensor(out, eb));
        record(n, "elementwise", perElem * numel(out), ioBytes(n));
    }

    void dropout(const Node* n) {
        const AVal& x = tensorArg(n, "input");
        const double p = doubleArg(n, "p", 0.5);
        const bool train = boolArg(n, "train", true);
        if (p == 0.0 || !train) {
            set(n->output(), x);
            record(n, "view", 0, 0);
        } else {
            set(n->output(), AVal::tensor(x.shape, x.elemBytes));
            record(n, "elementwise", numel(x.shape), ioBytes(n));
        }
    }

    void conv(const Node* n, bool transposed) {
        const std::string qual = n->kind().toQualString();
        const AVal& x = tensorArg(n, "input");
        const AVal& w = tensorArg(n, "weight");
        const AVal* b = optTensorArg(n, "bias");
        if (w.shape.size() < 3) fail(qual + ": weight " + shapeStr(w.shape) + " has no spatial dimensions");
        const size_t k = w.shape.size() - 2;
        const bool batched = x.shape.size() == k + 2;
        if (!batched && x.shape.size() != k + 1)
            fail(qual + ": input " + shapeStr(x.shape) + " does not fit weight " + shapeStr(w.shape));
        const Shape stride = listArg(n, "stride", k, 1);
        const Shape dilation = listArg(n, "dilation", k, 1);
        const int64_t groups = intArg(n, "groups", 1);
        if (groups < 1) fail(qual + ": groups must be positive");
        std::string padMode;
        Shape padding;
        const AVal* pa = arg(n, "padding");
        if (pa && pa->isConst() && pa->iv.isString()) {
            padMode = pa->iv.toStringRef();
            if (padMode != "same" && padMode != "valid") fail(qual + ": unknown padding '" + padMode + "'");
            padding = Shape(k, 0);
        } else {
            padding = listArg(n, "padding", k, 0);
        }
        const Shape outPad = transposed ? listArg(n, "output_padding", k, 0) : Shape(k, 0);
        const size_t c = batched ? 1 : 0;
        const int64_t cin = x.shape[c];
        int64_t cout = 0;
        if (!transposed) {
            if (cin != w.shape[1] * groups)
                fail(qual + ": input " + shapeStr(x.shape) + " has " + std::to_string(cin) + " channels but weight " +
                     shapeStr(w.shape) + " with groups=" + std::to_string(groups) + " expects " +
                     std::to_string(w.shape[1] * groups));
            cout = w.shape[0];
            if (cout % groups != 0) fail(qual + ": output channels not divisible by groups");
        } else {
            if (cin != w.shape[0])
                fail(qual + ": input " + shapeStr(x.shape) + " has " + std::to_string(cin) +
                     " channels but the transposed weight " + shapeStr(w.shape) + " expects " + std::to_string(w.shape[0]));
            if (cin % groups != 0) fail(qual + ": input channels not divisible by groups");
            cout = w.shape[1] * groups;
        }
        if (b && numel(b->shape) != cout)
            fail(qual + ": bias " + shapeStr(b->shape) + " does not match " + std::to_string(cout) + " output channels");
        Shape out;
        if (batched) out.push_back(x.shape[0]);
        out.push_back(cout);
        int64_t kprod = 1;
        for (size_t i = 0; i < k; ++i) {
            const int64_t in = x.shape[c + 1 + i];
            const int64_t kk = w.shape[2 + i];
            kprod *= kk;
            if (stride[i] < 1 || dilation[i] < 1) fail(qual + ": stride and dilation must be positive");
            int64_t o;
            if (transposed) {
                if (outPad[i] >= stride[i] && outPad[i] >= dilation[i])
                    fail(qual + ": output_padding must be smaller than stride or dilation");
                o = (in - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kk - 1) + outPad[i] + 1;
            } else if (padMode == "same") {
                o = in;
            } else {
                const int64_t num = in + 2 * padding[i] - dilation[i] * (kk - 1) - 1;
                if (num < 0)
                    fail(qual + ": kernel " + shapeStr(Shape(w.shape.begin() + 2, w.shape.end())) +
                         " is larger than the padded input " + shapeStr(x.shape));
                o = num / stride[i] + 1;
            }
            if (o < 1) fail(qual + ": output size " + std::to_string(o) + " is not positive");
            out.push_back(o);
        }
        const int64_t outElems = numel(out);
        const int64_t mac = transposed ? numel(x.shape) * (cout / groups) * kprod : outElems * (cin / groups) * kprod;
        set(n->output(), AVal::tensor(out, x.elemBytes));
        record(n, "conv", 2 * mac + (b ? outElems : 0), ioBytes(n));
    }

    void pool(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        const bool isMax = s.rfind("max_pool", 0) == 0;
        const char digit = s.size() > 8 ? s[8] : '0';
        if (digit < '1' || digit > '3') fail("unsupported op " + qual);
        const size_t k = static_cast<size_t>(digit - '0');
        const AVal& x = tensorArg(n, "self");
        if (x.shape.size() != k + 1 && x.shape.size() != k + 2)
            fail(qual + ": input " + shapeStr(x.shape) + " has the wrong rank");
        const Shape kernel = listArg(n, "kernel_size", k, 1);
        Shape stride = listArg(n, "stride", k, 0);
        for (size_t i = 0; i < k; ++i)
            if (stride[i] == 0) stride[i] = kernel[i];
        const Shape padding = listArg(n, "padding", k, 0);
        const Shape dilation = isMax ? listArg(n, "dilation", k, 1) : Shape(k, 1);
        const bool ceilMode = boolArg(n, "ceil_mode", false);
        Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(k));
        for (size_t i = 0; i < k; ++i) {
            const int64_t in = x.shape[x.shape.size() - k + i];
            const int64_t eff = dilation[i] * (kernel[i] - 1) + 1;
            if (kernel[i] < 1 || stride[i] < 1) fail(qual + ": kernel and stride must be positive");
            if (padding[i] < 0 || padding[i] > (isMax ? eff : kernel[i]) / 2)
                fail(qual + ": padding should be at most half of the kernel size");
            const int64_t num = in + 2 * padding[i] - eff + (ceilMode ? stride[i] - 1 : 0);
            int64_t o = (num >= 0 ? num / stride[i] : -((-num + stride[i] - 1) / stride[i])) + 1;
            if (ceilMode && (o - 1) * stride[i] >= in + padding[i]) --o;
            if (o < 1) fail(qual + ": output size " + std::to_string(o) + " is not positive for input " + shapeStr(x.shape));
            out.push_back(o);
        }
        set(n->outputs()[0], AVal::tensor(out, x.elemBytes));
        for (size_t i = 1; i < n->outputs().size(); ++i) set(n->outputs()[i], AVal::tensor(out, 8));
        record(n, "pool", numel(x.shape), ioBytes(n));
    }

    void adaptivePool(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        const char digit = s.empty() ? '0' : s[s.size() - 2];
        if (s.back() != 'd' || digit < '1' || digit > '3') fail("unsupported op " + qual);
        const size_t k = static_cast<size_t>(digit - '0');
        const AVal& x = tensorArg(n, "self");
        if (x.shape.size() != k + 1 && x.shape.size() != k + 2)
            fail(qual + ": input " + shapeStr(x.shape) + " has the wrong rank");
        const Shape os = listArg(n, "output_size", k, 1);
        Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(k));
        for (int64_t o : os) {
            if (o < 1) fail(qual + ": output size must be positive");
            out.push_back(o);
        }
        set(n->outputs()[0], AVal::tensor(out, x.elemBytes));
        for (size_t i = 1; i < n->outputs().size(); ++i) set(n->outputs()[i], AVal::tensor(out, 8));
        record(n, "pool", numel(x.shape), ioBytes(n));
    }

    void matmul(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        const auto ins = n->inputs();
        // The two factors and the optional addend, by position in the schema.
        const AVal* addend = nullptr;
        const AVal* a;
        const AVal* b;
        if (s == "addmm" || s == "baddbmm" || s == "addmv") {
            addend = &val(ins[0]);
            a = &val(ins[1]);
            b = &val(ins[2]);
        } else {
            a = &val(ins[0]);
            b = &val(ins[1]);
        }
        if (!a->isTensor() || !b->isTensor() || (addend && !addend->isTensor()))
            fail(qual + ": operands must be tensors");
        const Shape& A = a->shape;
        const Shape& B = b->shape;
        auto need = [&](bool ok, const char* what) {
            if (!ok) fail(qual + ": " + what + " " + shapeStr(A) + " and " + shapeStr(B));
        };
        if (s == "mm" || s == "addmm") need(A.size() == 2 && B.size() == 2, "expects 2-D matrices, got");
        if (s == "bmm" || s == "baddbmm") need(A.size() == 3 && B.size() == 3 && A[0] == B[0], "expects 3-D batches of equal size, got");
        if (s == "mv" || s == "addmv") need(A.size() == 2 && B.size() == 1, "expects a matrix and a vector, got");
        if (s == "dot" || s == "vdot") need(A.size() == 1 && B.size() == 1, "expects two vectors, got");
        need(!A.empty() && !B.empty(), "cannot multiply 0-d tensors");
        const int64_t K = A.back();
        const int64_t KB = B.size() == 1 ? B[0] : B[B.size() - 2];
        need(K == KB, "inner dimensions differ:");
        const int64_t M = A.size() >= 2 ? A[A.size() - 2] : 1;
        const int64_t N = B.size() >= 2 ? B.back() : 1;
        Shape batchA(A.begin(), A.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(A.size(), 2)));
        Shape batchB(B.begin(), B.end() - static_cast<std::ptrdiff_t>(std::min<size_t>(B.size(), 2)));
        Shape out = broadcast(batchA, batchB, qual);
        const int64_t batch = numel(out);
        if (A.size() >= 2) out.push_back(M);
        if (B.size() >= 2) out.push_back(N);
        int64_t flops = 2 * batch * M * K * N;
        if (addend) {
            const Shape ab = broadcast(addend->shape, out, qual);
            if (ab != out) fail(qual + ": the addend " + shapeStr(addend->shape) + " does not broadcast to " + shapeStr(out));
            flops += numel(out);
        }
        set(n->output(), AVal::tensor(out, std::max(a->elemBytes, b->elemBytes)));
        record(n, "matmul", flops, ioBytes(n));
    }

    void linear(const Node* n) {
        const std::string qual = n->kind().toQualString();
        const AVal& x = tensorArg(n, "input");
        const AVal& w = tensorArg(n, "weight");
        const AVal* b = optTensorArg(n, "bias");
        if (x.shape.empty()) fail(qual + ": input is 0-d");
        if (w.shape.size() != 2 && w.shape.size() != 1) fail(qual + ": weight " + shapeStr(w.shape) + " must be 1-D or 2-D");
        const int64_t in = x.shape.back();
        if (w.shape.back() != in)
            fail(qual + ": input " + shapeStr(x.shape) + " has " + std::to_string(in) + " features but weight " +
                 shapeStr(w.shape) + " expects " + std::to_string(w.shape.back()));
        Shape out(x.shape.begin(), x.shape.end() - 1);
        const int64_t O = w.shape.size() == 2 ? w.shape[0] : 1;
        if (w.shape.size() == 2) out.push_back(O);
        if (b) {
            const Shape bb = broadcast(b->shape, out, qual);
            if (bb != out) fail(qual + ": bias " + shapeStr(b->shape) + " does not broadcast to " + shapeStr(out));
        }
        const int64_t rows = numel(Shape(x.shape.begin(), x.shape.end() - 1));
        set(n->output(), AVal::tensor(out, x.elemBytes));
        record(n, "matmul", 2 * rows * in * O + (b ? numel(out) : 0), ioBytes(n));
    }

    void norm(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        const AVal& x = tensorArg(n, "input");
        auto checkVec = [&](const char* name, int64_t expect) {
            const AVal* t = optTensorArg(n, name);
            if (t && numel(t->shape) != expect)
                fail(qual + ": " + name + " " + shapeStr(t->shape) + " does not match " + std::to_string(expect) + " features");
        };
        int perElem = 7;
        if (s == "layer_norm") {
            const Shape ns = toIntList(tensorArgOrList(n, "normalized_shape"), "normalized_shape of " + qual);
            if (ns.size() > x.shape.size() || !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<std::ptrdiff_t>(ns.size())))
                fail(qual + ": normalized_shape " + shapeStr(ns) + " does not match the trailing dimensions of " + shapeStr(x.shape));
            for (const char* p : {"weight", "bias"}) {
                const AVal* t = optTensorArg(n, p);
                if (t && t->shape != ns) fail(qual + ": " + p + " " + shapeStr(t->shape) + " is not " + shapeStr(ns));
            }
        } else {
            if (x.shape.size() < 2) fail(qual + ": input " + shapeStr(x.shape) + " needs a channel dimension");
            const int64_t C = x.shape[1];
            if (s == "group_norm") {
                const int64_t g = intArg(n, "num_groups", 1);
                if (g < 1 || C % g != 0) fail(qual + ": " + std::to_string(C) + " channels are not divisible into " + std::to_string(g) + " groups");
                checkVec("weight", C);
                checkVec("bias", C);
            } else {
                for (const char* p : {"weight", "bias", "running_mean", "running_var"}) checkVec(p, C);
                const bool batchStats = s == "batch_norm" ? boolArg(n, "training", true) : boolArg(n, "use_input_stats", true);
                if (!batchStats) perElem = 4;
            }
        }
        set(n->output(), AVal::tensor(x.shape, x.elemBytes));
        record(n, "norm", perElem * numel(x.shape), ioBytes(n));
    }

    const AVal& tensorArgOrList(const Node* n, const char* name) const {
        const AVal* a = arg(n, name);
        if (!a) fail(std::string(n->kind().toQualString()) + ": no argument '" + name + "'");
        return *a;
    }

    void softmax(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        const AVal& x = tensorArg(n, "self");
        normDim(intArg(n, "dim", 0), x.shape.size(), qual);
        int eb = x.elemBytes;
        const AVal* dt = arg(n, "dtype");
        if (dt && dt->isConst() && dt->iv.isInt()) eb = scalarTypeBytes(dt->iv.toInt());
        (void)s;
        set(n->output(), AVal::tensor(x.shape, eb));
        record(n, "reduction", 5 * numel(x.shape), ioBytes(n));
    }

    void reduction(const Node* n, const std::string& s, const std::string& qual) {
        const AVal& x = val(n->inputs()[0]);
        if (!x.isTensor()) fail(qual + ": first operand is not a tensor");
        const size_t r = x.shape.size();
        std::vector<bool> reduced(r, false);
        bool all = true;
        const AVal* d = arg(n, "dim");
        if (d && !d->isNone()) {
            const Shape dims = toIntList(*d, "argument 'dim' of " + qual);
            if (!dims.empty()) {
                all = false;
                for (int64_t di : dims) {
                    const int64_t nd = normDim(di, r, qual);
                    if (r > 0) reduced[static_cast<size_t>(nd)] = true;
                }
            }
        }
        const bool keepdim = boolArg(n, "keepdim", false);
        Shape out;
        for (size_t i = 0; i < r; ++i) {
            if (all || reduced[i]) {
                if (keepdim) out.push_back(1);
            } else {
                out.push_back(x.shape[i]);
            }
        }
        int eb = x.elemBytes;
        const AVal* dt = arg(n, "dtype");
        if (dt && dt->isConst() && dt->iv.isInt()) eb = scalarTypeBytes(dt->iv.toInt());
        if (s == "argmax" || s == "argmin" || s == "count_nonzero") eb = 8;
        if (s == "all" || s == "any") eb = 1;
        set(n->outputs()[0], AVal::tensor(out, eb));
        for (size_t i = 1; i < n->outputs().size(); ++i) set(n->outputs()[i], AVal::tensor(out, 8));  // indices
        const int perElem = (s == "var" || s == "std" || s == "logsumexp" || s == "norm") ? 3 : 1;
        record(n, "reduction", perElem * numel(x.shape), ioBytes(n));
    }

    // View and shape ops: 0 FLOPs, 0 bytes (unless they must copy a non-contiguous tensor).
    bool viewOp(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        static const std::set<std::string> names = {
            "view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
            "permute", "transpose", "swapaxes", "swapdims", "t", "contiguous", "expand", "expand_as",
            "select", "slice", "narrow", "chunk", "split", "split_with_sizes", "unbind", "detach",
            "alias", "movedim", "lift_fresh"};
        if (!names.count(s)) return false;
        const AVal& x = val(n->inputs()[0]);
        if (!x.isTensor()) fail(qual + ": first operand is not a tensor");
        const size_t r = x.shape.size();
        auto out = [&](Shape sh, bool contiguous) {
            AVal a = AVal::tensor(std::move(sh), x.elemBytes, contiguous);
            set(n->output(), a);
        };
        auto inferShape = [&](Shape sh) {
            int64_t known = 1;
            int infer = -1;
            for (size_t i = 0; i < sh.size(); ++i) {
                if (sh[i] == -1) {
                    if (infer >= 0) fail(qual + ": only one dimension can be -1");
                    infer = static_cast<int>(i);
                } else if (sh[i] < 0) {
                    fail(qual + ": invalid size " + std::to_string(sh[i]));
                } else {
                    known *= sh[i];
                }
            }
            const int64_t total = numel(x.shape);
            if (infer >= 0) {
                if (known == 0 || total % known != 0)
                    fail(qual + ": shape " + shapeStr(sh) + " is invalid for input of size " + std::to_string(total));
                sh[static_cast<size_t>(infer)] = total / known;
            } else if (known != total) {
                fail(qual + ": shape " + shapeStr(sh) + " is invalid for input of size " + std::to_string(total) +
                     " (input " + shapeStr(x.shape) + ")");
            }
            return sh;
        };
        // Reshape-like ops (reshape, flatten) copy a non-contiguous tensor.
        auto reshapeLike = [&](Shape sh, bool mayCopy) {
            const bool copy = mayCopy && !x.contiguous && sh != x.shape;
            out(std::move(sh), x.contiguous || copy);
            record(n, copy ? "data" : "view", 0, copy ? ioBytes(n) : 0);
        };

        if (s == "view" || s == "reshape") {
            const AVal* sz = arg(n, s == "view" ? "size" : "shape");
            if (!sz) fail("unsupported op " + qual + " (view as another dtype)");
            const Shape sh = inferShape(toIntList(*sz, "the shape of " + qual));
            reshapeLike(sh, s == "reshape");
            return true;
        }
        if (s == "view_as" || s == "reshape_as" || s == "expand_as") {
            const AVal& o = tensorArg(n, "other");
            if (s == "expand_as") {
                const Shape b = broadcast(x.shape, o.shape, qual);
                if (b != o.shape) fail(qual + ": " + shapeStr(x.shape) + " cannot expand to " + shapeStr(o.shape));
                out(o.shape, x.shape == o.shape && x.contiguous);
                record(n, "view", 0, 0);
                return true;
            }
            reshapeLike(inferShape(o.shape), s == "reshape_as");
            return true;
        }
        if (s == "flatten") {
            if (r == 0) {
                reshapeLike({1}, true);
                return true;
            }
            const int64_t a = normDim(intArg(n, "start_dim", 0), r, qual);
            const int64_t b = normDim(intArg(n, "end_dim", -1), r, qual);
            if (a > b) fail(qual + ": start_dim is after end_dim");
            Shape sh(x.shape.begin(), x.shape.begin() + a);
            sh.push_back(numel(Shape(x.shape.begin() + a, x.shape.begin() + b + 1)));
            sh.insert(sh.end(), x.shape.begin() + b + 1, x.shape.end());
            reshapeLike(sh, true);
            return true;
        }
        if (s == "unflatten") {
            const int64_t d = normDim(intArg(n, "dim", 0), r, qual);
            Shape sizes = toIntList(tensorArgOrList(n, "sizes"), "sizes of " + qual);
            int64_t known = 1, infer = -1;
            for (size_t i = 0; i < sizes.size(); ++i) {
                if (sizes[i] == -1) infer = static_cast<int64_t>(i);
                else known *= sizes[i];
            }
            if (infer >= 0 && known > 0) sizes[static_cast<size_t>(infer)] = x.shape[static_cast<size_t>(d)] / known;
            if (numel(sizes) != x.shape[static_cast<size_t>(d)])
                fail(qual + ": sizes " + shapeStr(sizes) + " do not multiply to " + std::to_string(x.shape[static_cast<size_t>(d)]));
            Shape sh(x.shape.begin(), x.shape.begin() + d);
            sh.insert(sh.end(), sizes.begin(), sizes.end());
            sh.insert(sh.end(), x.shape.begin() + d + 1, x.shape.end());
            out(sh, x.contiguous);
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "squeeze") {
            std::vector<bool> drop(r, false);
            const AVal* d = arg(n, "dim");
            if (!d || d->isNone()) {
                for (size_t i = 0; i < r; ++i) drop[i] = x.shape[i] == 1;
            } else {
                for (int64_t di : toIntList(*d, "dim of " + qual)) {
                    if (r == 0) break;
                    const size_t nd = static_cast<size_t>(normDim(di, r, qual));
                    drop[nd] = x.shape[nd] == 1;
                }
            }
            Shape sh;
            for (size_t i = 0; i < r; ++i)
                if (!drop[i]) sh.push_back(x.shape[i]);
            out(sh, x.contiguous);
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "unsqueeze") {
            const int64_t d = intArg(n, "dim", 0);
            const int64_t rr = static_cast<int64_t>(r) + 1;
            if (d < -rr || d >= rr) fail(qual + ": dimension out of range");
            const int64_t nd = d < 0 ? d + rr : d;
            Shape sh = x.shape;
            sh.insert(sh.begin() + nd, 1);
            out(sh, x.contiguous);
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "permute" || s == "movedim") {
            Shape perm;
            if (s == "permute") {
                perm = toIntList(tensorArgOrList(n, "dims"), "dims of " + qual);
                if (perm.size() != r) fail(qual + ": " + std::to_string(perm.size()) + " dims for a tensor of rank " + std::to_string(r));
                for (auto& p : perm) p = normDim(p, r, qual);
            } else {
                const int64_t src = normDim(intArg(n, "source", 0), r, qual);
                const int64_t dst = normDim(intArg(n, "destination", 0), r, qual);
                for (int64_t i = 0; i < static_cast<int64_t>(r); ++i)
                    if (i != src) perm.push_back(i);
                perm.insert(perm.begin() + dst, src);
            }
            std::vector<bool> seen(r, false);
            Shape sh;
            bool identity = true;
            Shape moved;  // dims of size > 1 in the new order
            for (size_t i = 0; i < perm.size(); ++i) {
                const size_t p = static_cast<size_t>(perm[i]);
                if (seen[p]) fail(qual + ": repeated dim");
                seen[p] = true;
                sh.push_back(x.shape[p]);
                if (x.shape[p] > 1) moved.push_back(perm[i]);
            }
            identity = std::is_sorted(moved.begin(), moved.end());
            out(sh, x.contiguous && identity);
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "transpose" || s == "swapaxes" || s == "swapdims" || s == "t") {
            if (s == "t" && r > 2) fail(qual + ": expects a tensor of at most 2 dimensions, got " + shapeStr(x.shape));
            int64_t a = 0, b = r >= 2 ? 1 : 0;
            if (s != "t") {
                const auto ins = n->inputs();
                a = normDim(toInt(val(ins[1]), "dim0 of " + qual), r, qual);
                b = normDim(toInt(val(ins[2]), "dim1 of " + qual), r, qual);
            }
            Shape sh = x.shape;
            if (r > 0) std::swap(sh[static_cast<size_t>(a)], sh[static_cast<size_t>(b)]);
            const bool trivial = a == b || r == 0 || x.shape[static_cast<size_t>(a)] == 1 || x.shape[static_cast<size_t>(b)] == 1;
            out(sh, x.contiguous && trivial);
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "contiguous") {
            if (x.contiguous) {
                out(x.shape, true);
                record(n, "view", 0, 0);
            } else {
                out(x.shape, true);
                record(n, "data", 0, ioBytes(n));
            }
            return true;
        }
        if (s == "expand") {
            const Shape sz = toIntList(tensorArgOrList(n, "size"), "size of " + qual);
            if (sz.size() < r) fail(qual + ": " + shapeStr(sz) + " has fewer dimensions than " + shapeStr(x.shape));
            Shape sh(sz.size());
            bool grew = false;
            for (size_t i = 0; i < sz.size(); ++i) {
                const size_t off = sz.size() - r;
                const int64_t have = i >= off ? x.shape[i - off] : 1;
                if (sz[i] == -1) {
                    if (i < off) fail(qual + ": -1 is not allowed for a new leading dimension");
                    sh[i] = have;
                } else if (have == sz[i] || have == 1) {
                    sh[i] = sz[i];
                    grew = grew || (have != sz[i]);
                } else {
                    fail(qual + ": " + shapeStr(x.shape) + " cannot expand to " + shapeStr(sz));
                }
            }
            out(sh, x.contiguous && !grew);
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "select" || s == "slice" || s == "narrow") {
            if (r == 0) fail(qual + ": cannot index a 0-d tensor");
            const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), r, qual));
            const int64_t len = x.shape[d];
            bool leadingOnly = true;  // only dims of size 1 before d: the result stays contiguous
            for (size_t i = 0; i < d; ++i) leadingOnly = leadingOnly && x.shape[i] == 1;
            Shape sh = x.shape;
            if (s == "select") {
                int64_t idx = intArg(n, "index", 0);
                if (idx < -len || idx >= len) fail(qual + ": index " + std::to_string(idx) + " out of range for size " + std::to_string(len));
                sh.erase(sh.begin() + static_cast<std::ptrdiff_t>(d));
                out(sh, x.contiguous && leadingOnly);
            } else if (s == "narrow") {
                int64_t start = intArg(n, "start", 0);
                const int64_t length = intArg(n, "length", 0);
                if (start < 0) start += len;
                if (start < 0 || length < 0 || start + length > len) fail(qual + ": range out of bounds");
                sh[d] = length;
                out(sh, x.contiguous && (leadingOnly || length == len));
            } else {
                int64_t start = intArg(n, "start", 0);
                int64_t end = intArg(n, "end", len);
                const int64_t step = intArg(n, "step", 1);
                if (step < 1) fail(qual + ": slice step must be positive");
                if (start < 0) start += len;
                if (end < 0) end += len;
                start = std::min(std::max<int64_t>(start, 0), len);
                end = std::min(std::max<int64_t>(end, start), len);
                sh[d] = (end - start + step - 1) / step;
                out(sh, x.contiguous && step == 1 && (leadingOnly || sh[d] == len));
            }
            record(n, "view", 0, 0);
            return true;
        }
        if (s == "chunk" || s == "split" || s == "split_with_sizes" || s == "unbind") {
            if (r == 0) fail(qual + ": cannot split a 0-d tensor");
            const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), r, qual));
            const int64_t len = x.shape[d];
            Shape pieces;
            if (s == "unbind") {
                pieces.assign(static_cast<size_t>(len), 1);
            } else if (s == "chunk") {
                const int64_t chunks = intArg(n, "chunks", 1);
                if (chunks < 1) fail(qual + ": chunks must be positive");
                const int64_t size = (len + chunks - 1) / chunks;
                for (int64_t at = 0; at < len; at += size) pieces.push_back(std::min(size, len - at));
                if (len == 0) pieces.push_back(0);
            } else {
                const AVal* sz = arg(n, "split_size");
                if (!sz) sz = arg(n, "split_sizes");
                if (!sz) fail("unsupported op " + qual);
                if (sz->isConst() && sz->iv.isInt()) {
                    const int64_t size = sz->iv.toInt();
                    if (size < 1) fail(qual + ": split size must be positive");
                    for (int64_t at = 0; at < len; at += size) pieces.push_back(std::min(size, len - at));
                } else {
                    pieces = toIntList(*sz, "split sizes of " + qual);
                    int64_t total = 0;
                    for (int64_t p : pieces) total += p;
                    if (total != len) fail(qual + ": split sizes " + shapeStr(pieces) + " do not add up to " + std::to_string(len));
                }
            }
            bool leadingOnly = true;
            for (size_t i = 0; i < d; ++i) leadingOnly = leadingOnly && x.shape[i] == 1;
            AVal list;
            list.kind = AVal::List;
            for (int64_t p : pieces) {
                Shape sh = x.shape;
                if (s == "unbind") sh.erase(sh.begin() + static_cast<std::ptrdiff_t>(d));
                else sh[d] = p;
                list.items.push_back(AVal::tensor(sh, x.elemBytes, x.contiguous && (leadingOnly || pieces.size() == 1)));
            }
            set(n->output(), list);
            record(n, "view", 0, 0);
            return true;
        }
        // detach, alias, lift_fresh: identity
        out(x.shape, x.contiguous);
        record(n, "view", 0, 0);
        return true;
    }

    // Ops that move data but compute nothing: cat, stack, clone, dtype conversion, pad, repeat,
    // pixel_shuffle, factories, copy_/fill_/zero_.
    bool dataOp(const Node* n, const std::string& s) {
        const std::string qual = n->kind().toQualString();
        const auto ins = n->inputs();
        auto dtypeBytes = [&](int dflt) {
            const AVal* dt = arg(n, "dtype");
            if (dt && dt->isConst() && dt->iv.isInt()) return scalarTypeBytes(dt->iv.toInt());
            return dflt;
        };
        if (s == "cat" || s == "concat" || s == "concatenate" || s == "stack") {
            const AVal& l = val(ins[0]);
            if (l.kind != AVal::List && l.kind != AVal::Tuple) fail(qual + ": the tensor list is not known statically");
            std::vector<const AVal*> ts;
            for (const AVal& it : l.items) {
                if (!it.isTensor()) fail(qual + ": a list element is not a tensor");
                ts.push_back(&it);
            }
            if (ts.empty()) fail(qual + ": empty tensor list");
            Shape outShape;
            if (s == "stack") {
                for (const AVal* t : ts)
                    if (t->shape != ts[0]->shape)
                        fail(qual + ": shapes " + shapeStr(ts[0]->shape) + " and " + shapeStr(t->shape) + " differ");
                const int64_t rr = static_cast<int64_t>(ts[0]->shape.size()) + 1;
                int64_t d = intArg(n, "dim", 0);
                if (d < -rr || d >= rr) fail(qual + ": dimension out of range");
                if (d < 0) d += rr;
                outShape = ts[0]->shape;
                outShape.insert(outShape.begin() + d, static_cast<int64_t>(ts.size()));
            } else {
                // Legacy rule: 1-D empty tensors are skipped.
                std::vector<const AVal*> real;
                for (const AVal* t : ts)
                    if (!(t->shape.size() == 1 && t->shape[0] == 0)) real.push_back(t);
                if (real.empty()) real.push_back(ts[0]);
                const size_t r = real[0]->shape.size();
                if (r == 0) fail(qual + ": zero-dimensional tensors cannot be concatenated");
                const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), r, qual));
                outShape = real[0]->shape;
                outShape[d] = 0;
                for (const AVal* t : real) {
                    bool ok = t->shape.size() == r;
                    for (size_t i = 0; ok && i < r; ++i) ok = i == d || t->shape[i] == real[0]->shape[i];
                    if (!ok) fail(qual + ": shapes " + shapeStr(real[0]->shape) + " and " + shapeStr(t->shape) + " do not fit along dim " + std::to_string(d));
                    outShape[d] += t->shape[d];
                }
            }
            set(n->output(), AVal::tensor(outShape, ts[0]->elemBytes));
            record(n, "data", 0, ioBytes(n));
            return true;
        }
        if (s == "clone") {
            const AVal& x = tensorArg(n, "self");
            set(n->output(), AVal::tensor(x.shape, x.elemBytes));
            record(n, "data", 0, ioBytes(n));
            return true;
        }
        if (s == "to" || s == "type_as") {
            const AVal& x = val(ins[0]);
            if (!x.isTensor()) fail(qual + ": first operand is not a tensor");
            int eb = x.elemBytes;
            bool copy = false;
            if (s == "type_as") {
                eb = tensorArg(n, "other").elemBytes;
            } else {
                const AVal* other = arg(n, "other");
                if (other && other->isTensor()) eb = other->elemBytes;
                eb = dtypeBytes(eb);
                copy = boolArg(n, "copy", false);
            }
            if (eb == x.elemBytes && !copy) {
                set(n->output(), x);
                record(n, "view", 0, 0);
            } else {
                set(n->output(), AVal::tensor(x.shape, eb));
                record(n, "data", 0, ioBytes(n));
            }
            return true;
        }
        if (s == "constant_pad_nd" || s == "pad") {
            const AVal& x = tensorArg(n, "self");
            const Shape pad = toIntList(tensorArgOrList(n, "pad"), "pad of " + qual);
            if (pad.size() % 2 != 0 || pad.size() / 2 > x.shape.size()) fail(qual + ": invalid padding " + shapeStr(pad));
            Shape sh = x.shape;
            for (size_t i = 0; i < pad.size() / 2; ++i) {
                int64_t& dim = sh[sh.size() - 1 - i];
                dim += pad[2 * i] + pad[2 * i + 1];
                if (dim < 0) fail(qual + ": padding makes a dimension negative");
            }
            set(n->output(), AVal::tensor(sh, x.elemBytes));
            record(n, "data", 0, ioBytes(n));
            return true;
        }
        if (s == "repeat") {
            const AVal& x = tensorArg(n, "self");
            const Shape rep = toIntList(tensorArgOrList(n, "repeats"), "repeats of " + qual);
            if (rep.size() < x.shape.size()) fail(qual + ": fewer repeats than dimensions");
            Shape sh(rep.size());
            for (size_t i = 0; i < rep.size(); ++i) {
                const size_t off = rep.size() - x.shape.size();
                sh[i] = rep[i] * (i >= off ? x.shape[i - off] : 1);
            }
            set(n->output(), AVal::tensor(sh, x.elemBytes));
            record(n, "data", 0, ioBytes(n));
            return true;
        }
        if (s == "pixel_shuffle" || s == "pixel_unshuffle") {
            const AVal& x = tensorArg(n, "self");
            const int64_t f = intArg(n, s == "pixel_shuffle" ? "upscale_factor" : "downscale_factor", 1);
            if (x.shape.size() < 3 || f < 1) fail(qual + ": invalid input " + shapeStr(x.shape));
            Shape sh = x.shape;
            const size_t c = sh.size() - 3;
            if (s == "pixel_shuffle") {
                if (sh[c] % (f * f) != 0) fail(qual + ": channels not divisible by the factor squared");
                sh[c] /= f * f;
                sh[c + 1] *= f;
                sh[c + 2] *= f;
            } else {
                if (sh[c + 1] % f != 0 || sh[c + 2] % f != 0) fail(qual + ": spatial size not divisible by the factor");
                sh[c] *= f * f;
                sh[c + 1] /= f;
                sh[c + 2] /= f;
            }
            set(n->output(), AVal::tensor(sh, x.elemBytes));
            record(n, "data", 0, ioBytes(n));
            return true;
        }
        if (s == "zeros" || s == "ones" || s == "empty" || s == "full" || s == "rand" || s == "randn") {
            const Shape sh = toIntList(tensorArgOrList(n, "size"), "size of " + qual);
            set(n->output(), AVal::tensor(sh, dtypeBytes(4)));
            record(n, "data", 0, s == "empty" ? 0 : tensorBytes(val(n->output())));
            return true;
        }
        if (s == "zeros_like" || s == "ones_like" || s == "empty_like" || s == "full_like" || s == "rand_like" ||
            s == "randn_like") {
            const AVal& x = tensorArg(n, "self");
            set(n->output(), AVal::tensor(x.shape, dtypeBytes(x.elemBytes)));
            record(n, "data", 0, s == "empty_like" ? 0 : tensorBytes(val(n->output())));
            return true;
        }
        if (s == "scalar_tensor" || s == "tensor") {
            Shape sh;
            if (s == "tensor") {
                const AVal& data = val(ins[0]);
                if (!data.isConst()) fail(qual + ": data is not known statically");
                c10::IValue v = data.iv;
                while (v.isList()) {
                    const auto l = v.toList();
                    sh.push_back(static_cast<int64_t>(l.size()));
                    if (l.size() == 0) break;
                    v = l.get(0);
                }
            }
            set(n->output(), AVal::tensor(sh, dtypeBytes(4)));
            record(n, "data", 0, tensorBytes(val(n->output())));
            return true;
        }
        if (s == "copy" || s == "fill" || s == "zero") {
            const AVal& x = val(ins[0]);
            if (!x.isTensor()) fail(qual + ": first operand is not a tensor");
            int64_t bytes = tensorBytes(x);
            if (s == "copy") {
                const AVal& src = tensorArg(n, "src");
                const Shape b = broadcast(src.shape, x.shape, qual);
                if (b != x.shape) fail(qual + ": " + shapeStr(src.shape) + " cannot be copied into " + shapeStr(x.shape));
                bytes += tensorBytes(src);
            }
            set(n->output(), AVal::tensor(x.shape, x.elemBytes));
            record(n, "data", 0, bytes);
            return true;
        }
        return false;
    }
};

}  // namespace

nlohmann::json analyzeGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<ArgInfo>& args,
                            double ridge) {
    if (!graph) throw AnalyzeError("no graph");
    Analyzer a(args, ridge);
    try {
        return a.run(graph);
    } catch (const AnalyzeError&) {
        throw;
    } catch (const std::exception& e) {
        throw AnalyzeError(std::string("analysis failed: ") + e.what());
    }
}

}  // namespace kwb
