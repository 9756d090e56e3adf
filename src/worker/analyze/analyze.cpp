// Static analysis of a reference forward, the interpreter (the op families are in analyzecompute.cpp,
// analyzelayout.cpp and analyzenn.cpp): see analyze.h for the conventions.
//
// Only stable TorchScript IR APIs are used (Graph, Node, Value, Block, node->kind(),
// node->maybeSchema(), node->getOperation(), toIValue, Inline, ConstantPropagationImmutableTypes,
// EliminateDeadCode, Symbol::toQualString, SourceRange), so the file builds against libtorch 1.13
// and PyTorch 2.x alike. ConstantPropagationImmutableTypes rather than ConstantPropagation: the
// latter would run tensor ops whose inputs are constants (torch.zeros([...]) at full scale is
// gigabytes), while this analysis must never allocate a tensor. Everything the immutable pass
// leaves (lists, tensor-shaped values) is folded by the interpreter below.
#include "worker/analyze/analyzeinternal.h"
#include "worker/analyze/roofline.h"

#include "core/protocol/protocolnames.h"
#include "worker/python/scripthost.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace kwb::analyzer {

std::string shapeStr(const Shape& s)
{
    std::ostringstream o;
    o << '(';
    for (size_t i = 0; i < s.size(); ++i)
        o << (i ? ", " : "") << s[i];
    if (s.size() == 1)
        o << ',';
    o << ')';
    return o.str();
}

bool typeHasTensor(const c10::TypePtr& t)
{
    if (t->kind() == c10::TypeKind::TensorType)
        return true;
    for (const auto& c : t->containedTypes())
        if (typeHasTensor(c))
            return true;
    return false;
}

int scalarTypeBytes(int64_t st)
{
    return static_cast<int>(c10::elementSize(static_cast<c10::ScalarType>(st)));
}

int64_t scalarTypeFor(int elemBytes)
{
    switch (elemBytes) {
    case 1: return static_cast<int64_t>(c10::ScalarType::Bool);
    case 2: return static_cast<int64_t>(c10::ScalarType::Half);
    case 8: return static_cast<int64_t>(c10::ScalarType::Double);
    default: return static_cast<int64_t>(c10::ScalarType::Float);
    }
}

// Source location of a node: " at line N: `code`" (line 1-based within the compiled source).
int lineOf(const Node* n)
{
    const auto sr = n->sourceRange();
    const auto& src = sr.source();
    if (!src)
        return -1;
    return static_cast<int>(src->lineno_for_offset(sr.start())) + 1;
}

std::string where(const Node* n)
{
    if (!n)
        return "";
    const auto sr = n->sourceRange();
    const auto& src = sr.source();
    if (!src)
        return " (no source location)";
    const size_t line = src->lineno_for_offset(sr.start());
    std::string text = src->get_line(line).str();
    const auto b = text.find_first_not_of(" \t");
    const auto e = text.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
    return " at line " + std::to_string(line + 1) + ": `" + text + "`";
}

// Per-element FLOPs of element-wise ops (out-of-place names; in-place "relu_" maps to "relu").
const std::unordered_map<std::string, int>& elementwiseFlops()
{
    static const std::unordered_map<std::string, int> table = {
        // unary
        {"relu", 1},
        {"relu6", 1},
        {"tanh", 1},
        {"hardtanh", 1},
        {"leaky_relu", 1},
        {"clamp", 1},
        {"clamp_min", 1},
        {"clamp_max", 1},
        {"clip", 1},
        {"threshold", 1},
        {"exp", 1},
        {"exp2", 1},
        {"expm1", 1},
        {"log", 1},
        {"log2", 1},
        {"log10", 1},
        {"log1p", 1},
        {"sqrt", 1},
        {"rsqrt", 1},
        {"abs", 1},
        {"neg", 1},
        {"sin", 1},
        {"cos", 1},
        {"tan", 1},
        {"asin", 1},
        {"acos", 1},
        {"atan", 1},
        {"sinh", 1},
        {"cosh", 1},
        {"erf", 1},
        {"erfc", 1},
        {"erfinv", 1},
        {"reciprocal", 1},
        {"square", 1},
        {"sign", 1},
        {"sgn", 1},
        {"floor", 1},
        {"ceil", 1},
        {"round", 1},
        {"trunc", 1},
        {"frac", 1},
        {"logical_not", 1},
        {"bitwise_not", 1},
        {"nan_to_num", 1},
        {"hardshrink", 1},
        {"softshrink", 1},
        {"positive", 0},
        {"sigmoid", 3},
        {"softplus", 3},
        {"elu", 3},
        {"selu", 3},
        {"celu", 3},
        {"hardswish", 3},
        {"hardsigmoid", 2},
        {"softsign", 2},
        {"tanhshrink", 2},
        {"gelu", 4},
        {"mish", 4},
        {"silu", 4},
        {"log_sigmoid", 4},
        // masks by position: one comparison per element
        {"tril", 1},
        {"triu", 1},
        // binary / ternary
        {"add", 1},
        {"sub", 1},
        {"rsub", 1},
        {"mul", 1},
        {"div", 1},
        {"true_divide", 1},
        {"floor_divide", 1},
        {"remainder", 1},
        {"fmod", 1},
        {"pow", 1},
        {"float_power", 1},
        {"maximum", 1},
        {"minimum", 1},
        {"fmax", 1},
        {"fmin", 1},
        {"atan2", 1},
        {"hypot", 1},
        {"copysign", 1},
        {"xlogy", 1},
        {"eq", 1},
        {"ne", 1},
        {"lt", 1},
        {"le", 1},
        {"gt", 1},
        {"ge", 1},
        {"logical_and", 1},
        {"logical_or", 1},
        {"logical_xor", 1},
        {"bitwise_and", 1},
        {"bitwise_or", 1},
        {"bitwise_xor", 1},
        {"where", 1},
        {"masked_fill", 1},
        {"prelu", 1},
        {"addcmul", 2},
        {"addcdiv", 2},
        {"lerp", 2},
    };
    return table;
}

bool isComparison(const std::string& s)
{
    static const std::set<std::string> c = {"eq", "ne",          "lt",          "le",         "gt",
                                            "ge", "logical_not", "logical_and", "logical_or", "logical_xor"};
    return c.count(s) > 0;
}

nlohmann::json Analyzer::run(const std::shared_ptr<Graph>& source)
{
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
    bool outputUnknown = false;
    for (const Value* v : g->outputs()) {
        const AVal& a = val(v);
        if (a.hasOpaque()) {
            // Its shape is unknown (uncounted says why): no output shape, no output bytes.
            outputUnknown = true;
            continue;
        }
        std::vector<const AVal*> ts;
        collectTensors(a, ts);
        if (ts.empty())
            throw AnalyzeError("the forward does not return a tensor");
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
        const int64_t b = op[ProtocolNames::Key::kBytes].get<int64_t>();
        if (b > 0 &&
            static_cast<double>(op[ProtocolNames::Key::kFlops].get<int64_t>()) / static_cast<double>(b) < ridge_)
            ++memoryBound;
    }
    nlohmann::json r;
    r[ProtocolNames::Key::kOps] = ops_;
    r[ProtocolNames::Key::kOutputShape] = outputUnknown           ? nlohmann::json()
                                          : outShapes.size() == 1 ? outShapes[0]
                                                                  : outShapes;
    if (outShapes.size() > 1 && !outputUnknown)
        r["output_shapes"] = outShapes;
    r[ProtocolNames::Key::kFlops] = totalFlops_;
    r[ProtocolNames::Key::kBytesUnfused] = totalBytes_;
    r[ProtocolNames::Key::kBytesFused] = fused;
    r[ProtocolNames::Key::kIntensityUnfused] = totalBytes_ > 0 ? double(totalFlops_) / double(totalBytes_) : 0.0;
    r[ProtocolNames::Key::kIntensityFused] = fused > 0 ? double(totalFlops_) / double(fused) : 0.0;
    r[ProtocolNames::Key::kOpCount] = static_cast<int64_t>(ops_.size());
    r["memory_bound_ops"] = memoryBound;
    r["memory_bound_ridge"] = ridge_;
    r[ProtocolNames::Key::kInputBytes] = inputBytes_;
    r[ProtocolNames::Key::kParamBytes] = paramBytes;
    r[ProtocolNames::Key::kOutputBytes] = outputBytes;
    r["params_used"] = used;
    r[ProtocolNames::Key::kUncounted] = uncounted_;
    r[ProtocolNames::Key::kBoundFlops] = roofline::boundFlops(r); // what an evaluation's floor counts
    return r;
}

// ---- graph inputs ------------------------------------------------------------------------
void Analyzer::bindInputs(const Graph& g)
{
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
            throw AnalyzeError("argument " + std::to_string(i) + " ('" + name + "') is " + v->type()->str() +
                               " in the forward but described as " + what);
        };
        switch (a.kind) {
        case ArgInfo::Tensor:
            if (tk != c10::TypeKind::TensorType)
                mismatch("a tensor");
            for (int64_t d : a.shape)
                if (d < 0)
                    mismatch("a tensor with a negative dimension");
            env_[v] = AVal::tensor(a.shape, a.elemBytes);
            if (v->hasUses())
                inputBytes_ += numel(a.shape) * a.elemBytes;
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
            if (tk != c10::TypeKind::DictType)
                mismatch("the parameter dictionary");
            AVal d;
            d.kind = AVal::Dict;
            d.dictArg = static_cast<int>(i);
            env_[v] = d;
            break;
        }
        }
    }
}

void Analyzer::record(const Node* n, const char* category, int64_t flops, int64_t bytes, int64_t minFlops)
{
    nlohmann::json op;
    op[ProtocolNames::Key::kIndex] = static_cast<int64_t>(ops_.size());
    op[ProtocolNames::Key::kOp] = n->kind().toQualString();
    nlohmann::json ins = nlohmann::json::array();
    std::vector<const AVal*> ts;
    for (const Value* v : n->inputs())
        collectTensors(val(v), ts);
    for (const AVal* t : ts)
        ins.push_back(t->shape);
    op[ProtocolNames::Key::kInputs] = ins;
    std::vector<const AVal*> outs;
    for (const Value* v : n->outputs())
        collectTensors(val(v), outs);
    op[ProtocolNames::Key::kOutput] = outs.empty() ? nlohmann::json::array() : nlohmann::json(outs[0]->shape);
    if (outs.size() > 1)
        op[ProtocolNames::Key::kOutputCount] = static_cast<int64_t>(outs.size());
    op[ProtocolNames::Key::kFlops] = flops;
    if (minFlops >= 0)
        op[ProtocolNames::Key::kMinFlops] = minFlops;
    op[ProtocolNames::Key::kBytes] = bytes;
    op[ProtocolNames::Key::kCategory] = category;
    const int line = lineOf(n);
    if (line > 0)
        op[ProtocolNames::Key::kLine] = line;
    ops_.push_back(std::move(op));
    totalFlops_ += flops;
    totalBytes_ += bytes;
}

// ---- interpreter -------------------------------------------------------------------------
void Analyzer::runBlock(const Block* b)
{
    for (const Node* n : b->nodes()) {
        const Node* saved = cur_;
        cur_ = n;
        runNode(n);
        cur_ = saved;
    }
}

void Analyzer::runNode(const Node* n)
{
    const c10::Symbol k = n->kind();
    const std::string kind = k.toQualString();

    if (k == c10::prim::Constant)
        return constantNode(n);
    if (k == c10::prim::If)
        return ifNode(n);
    if (k == c10::prim::Loop)
        return loopNode(n);
    if (!n->blocks().empty())
        fail("unsupported construct " + kind);
    if (k == c10::prim::RaiseException)
        fail("the forward raises an exception");
    if (kind == "aten::warn" || kind == "prim::Print")
        return setUnknown(n);
    if (k.is_prim() && primNode(n))
        return;
    if (k.is_aten() && queryNode(n))
        return;

    bool tensorOut = false;
    for (const Value* o : n->outputs())
        tensorOut = tensorOut || typeHasTensor(o->type());
    bool tensorIn = false;
    for (const Value* i : n->inputs())
        tensorIn = tensorIn || typeHasTensor(i->type());
    if (tensorOut) {
        if (!k.is_aten())
            return uncounted(n, "not an aten op");
        return tensorOp(n);
    }
    if (!k.is_aten() && !k.is_prim())
        fail("unsupported op " + kind);
    // Scalar / list / string op: run the real operator when every input is known.
    if (tensorIn || n->hasSideEffects() || !n->maybeOperator())
        return setUnknown(n);
    for (const Value* i : n->inputs())
        if (!val(i).isConst())
            return setUnknown(n);
    torch::jit::Stack stack;
    for (const Value* i : n->inputs())
        stack.push_back(val(i).iv);
    try {
        auto op = n->getOperation();
        op(stack);
    } catch (const std::exception&) {
        return setUnknown(n); // e.g. a division by zero: the value stays unknown
    }
    if (stack.size() != n->outputs().size())
        return setUnknown(n);
    for (size_t i = 0; i < stack.size(); ++i)
        set(n->outputs()[i], AVal::constant(stack[i]));
}

void Analyzer::constantNode(const Node* n)
{
    const Value* o = n->output();
    auto iv = torch::jit::toIValue(o);
    if (!iv)
        return set(o, AVal());
    if (iv->isTensor()) {
        const auto& t = iv->toTensor();
        AVal a = AVal::tensor(t.sizes().vec(), static_cast<int>(t.element_size()));
        return set(o, a);
    }
    set(o, AVal::constant(*iv));
}

void Analyzer::ifNode(const Node* n)
{
    const AVal& c = val(n->input(0));
    if (!(c.isConst() && c.iv.isBool()))
        fail("data-dependent `if` (prim::If): its condition is computed from tensor values, so the "
             "analysis cannot know which branch runs");
    const Block* b = n->blocks()[c.iv.toBool() ? 0 : 1];
    runBlock(b);
    for (size_t i = 0; i < n->outputs().size(); ++i)
        set(n->outputs()[i], val(b->outputs()[i]));
}

void Analyzer::loopNode(const Node* n)
{
    const AVal& trip = val(n->input(0));
    const AVal& cond0 = val(n->input(1));
    if (!(trip.isConst() && trip.iv.isInt()) || !(cond0.isConst() && cond0.iv.isBool()))
        fail("loop (prim::Loop) with a data-dependent trip count or condition");
    const int64_t maxTrip = trip.iv.toInt();
    bool cond = cond0.iv.toBool();
    const Block* body = n->blocks()[0];
    const size_t nCarried = n->inputs().size() - 2;
    std::vector<AVal> carried;
    for (size_t i = 0; i < nCarried; ++i)
        carried.push_back(val(n->inputs()[i + 2]));
    for (int64_t it = 0; it < maxTrip && cond; ++it) {
        if (it >= kMaxLoopIterations)
            fail("loop (prim::Loop) runs more than " + std::to_string(kMaxLoopIterations) + " iterations");
        set(body->inputs()[0], AVal::constant(c10::IValue(it)));
        for (size_t i = 0; i < nCarried; ++i)
            set(body->inputs()[i + 1], carried[i]);
        runBlock(body);
        const AVal& c = val(body->outputs()[0]);
        if (!(c.isConst() && c.iv.isBool()))
            fail("loop (prim::Loop) whose condition is computed from tensor values (a data-dependent while loop)");
        cond = c.iv.toBool();
        for (size_t i = 0; i < nCarried; ++i)
            carried[i] = val(body->outputs()[i + 1]);
    }
    for (size_t i = 0; i < nCarried; ++i)
        set(n->outputs()[i], carried[i]);
}

// prim:: nodes that carry tensors or need special handling; false = not handled here.
bool Analyzer::primNode(const Node* n)
{
    const c10::Symbol k = n->kind();
    const auto ins = n->inputs();
    const auto outs = n->outputs();
    bool allConst = true;
    for (const Value* i : ins)
        allConst = allConst && val(i).isConst();
    bool tensorTyped = false;
    for (const Value* o : outs)
        tensorTyped = tensorTyped || typeHasTensor(o->type());

    if (k == c10::prim::ListConstruct || k == c10::prim::TupleConstruct) {
        if (allConst && !tensorTyped) { // a list/tuple of known numbers, strings, ...
            if (k == c10::prim::ListConstruct) {
                const auto& contained = n->output()->type()->containedTypes();
                if (contained.size() != 1)
                    return setUnknown(n), true;
                c10::impl::GenericList l(contained[0]);
                for (const Value* i : ins)
                    l.push_back(val(i).iv);
                set(n->output(), AVal::constant(c10::IValue(l)));
            } else {
                std::vector<c10::IValue> elems;
                for (const Value* i : ins)
                    elems.push_back(val(i).iv);
                set(n->output(), AVal::constant(c10::IValue(c10::ivalue::Tuple::create(std::move(elems)))));
            }
            return true;
        }
        AVal a;
        a.kind = k == c10::prim::ListConstruct ? AVal::List : AVal::Tuple;
        for (const Value* i : ins)
            a.items.push_back(val(i));
        set(n->output(), a);
        return true;
    }
    if (k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack) {
        const AVal& a = val(n->input(0));
        if (a.isConst()) {
            std::vector<c10::IValue> elems;
            if (a.iv.isList())
                for (const c10::IValue& e : a.iv.toListRef())
                    elems.push_back(e);
            else if (a.iv.isTuple())
                for (const c10::IValue& e : a.iv.toTupleRef().elements())
                    elems.push_back(e);
            else
                return setUnknown(n), true;
            if (elems.size() != outs.size())
                fail("unpacking " + std::to_string(elems.size()) + " values into " + std::to_string(outs.size()));
            for (size_t i = 0; i < outs.size(); ++i)
                set(outs[i], AVal::constant(elems[i]));
            return true;
        }
        if (a.kind != AVal::List && a.kind != AVal::Tuple)
            return setUnknown(n), true;
        if (a.items.size() != outs.size())
            fail("unpacking " + std::to_string(a.items.size()) + " values into " + std::to_string(outs.size()));
        const AVal src = a; // copy: set() may rehash
        for (size_t i = 0; i < outs.size(); ++i)
            set(outs[i], src.items[i]);
        return true;
    }
    if (k == c10::prim::TupleIndex) {
        const AVal& a = val(n->input(0));
        if (a.isConst() && a.iv.isTuple()) {
            const auto& elems = a.iv.toTupleRef().elements();
            int64_t i = toInt(val(n->input(1)), "tuple index");
            if (i < 0)
                i += static_cast<int64_t>(elems.size());
            if (i < 0 || i >= static_cast<int64_t>(elems.size()))
                fail("tuple index out of range");
            const c10::IValue e = elems[static_cast<size_t>(i)];
            set(n->output(), AVal::constant(e));
            return true;
        }
        if (a.kind != AVal::Tuple && a.kind != AVal::List)
            return setUnknown(n), true;
        int64_t i = toInt(val(n->input(1)), "tuple index");
        if (i < 0)
            i += static_cast<int64_t>(a.items.size());
        if (i < 0 || i >= static_cast<int64_t>(a.items.size()))
            fail("tuple index out of range");
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
        if (a.isConst())
            t.iv = a.iv;
        set(n->output(), t);
        return true;
    }
    if (k == c10::prim::Uninitialized)
        return setUnknown(n), true;
    if (k == c10::prim::dtype) {
        const AVal& a = val(n->input(0));
        if (!a.isTensor())
            return setUnknown(n), true;
        set(n->output(), AVal::constant(c10::IValue(scalarTypeFor(a.elemBytes))));
        return true;
    }
    if (k == c10::prim::device || k == c10::prim::requires_grad)
        return setUnknown(n), true;
    return false;
}

// aten:: nodes on tensors (or dicts/lists of tensors) that give non-tensor results or look
// up parameters; false = not handled here.
bool Analyzer::queryNode(const Node* n)
{
    const std::string name = n->kind().toUnqualString();
    const auto ins = n->inputs();
    if (ins.empty())
        return false;
    const AVal& a0 = val(ins[0]);

    if (name == "__getitem__") {
        if (a0.kind == AVal::Dict) {
            const AVal& key = val(ins[1]);
            if (!(key.isConst() && key.iv.isString()))
                fail("parameter name is not known statically");
            const std::string pname = key.iv.toStringRef();
            const ArgInfo& d = args_[static_cast<size_t>(a0.dictArg)];
            auto it = d.dict.find(pname);
            if (it == d.dict.end())
                fail("parameter '" + pname + "' is not in the parameter dictionary");
            set(n->output(), AVal::tensor(it->second, d.elemBytes));
            paramsUsed_[pname] = numel(it->second) * d.elemBytes;
            return true;
        }
        if (a0.kind == AVal::List || a0.kind == AVal::Tuple) {
            int64_t i = toInt(val(ins[1]), "list index");
            if (i < 0)
                i += static_cast<int64_t>(a0.items.size());
            if (i < 0 || i >= static_cast<int64_t>(a0.items.size()))
                fail("list index out of range");
            const AVal item = a0.items[static_cast<size_t>(i)];
            set(n->output(), item);
            return true;
        }
        return false;
    }
    if (name == "__contains__" && a0.kind == AVal::Dict) {
        const AVal& key = val(ins[1]);
        if (!(key.isConst() && key.iv.isString()))
            return setUnknown(n), true;
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
            if (a0.shape.empty())
                fail("len() of a 0-d tensor");
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
    if (!a0.isTensor())
        return false;
    if (name == "size") {
        if (ins.size() == 1) {
            c10::List<int64_t> l;
            for (int64_t d : a0.shape)
                l.push_back(d);
            set(n->output(), AVal::constant(c10::IValue(l)));
        } else {
            const AVal& d = val(ins[1]);
            if (!(d.isConst() && d.iv.isInt()))
                return setUnknown(n), true;
            if (a0.shape.empty())
                fail("size() of a 0-d tensor");
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
            if (name == "Int" && v.isDouble())
                v = c10::IValue(static_cast<int64_t>(v.toDouble()));
            if (name == "Float" && v.isInt())
                v = c10::IValue(static_cast<double>(v.toInt()));
            if (name == "Bool")
                v = c10::IValue(v.isInt() ? v.toInt() != 0 : v.toDouble() != 0);
            set(n->output(), AVal::constant(v));
        } else {
            setUnknown(n);
        }
        return true;
    }
    return false;
}

// ---- tensor ops --------------------------------------------------------------------------
void Analyzer::tensorOp(const Node* n)
{
    const std::string qual = n->kind().toQualString();
    const std::string base = n->kind().toUnqualString();
    const bool inplace = base.size() > 1 && base.back() == '_' && base.compare(base.size() - 2, 2, "__") != 0;
    const std::string stem = inplace ? base.substr(0, base.size() - 1) : base;
    for (const Value* v : n->inputs())
        if (val(v).hasOpaque())
            return uncounted(n, "an input's shape is unknown: it comes from an op that could not be counted");
    if (!n->maybeSchema())
        return uncounted(n, "this libtorch has no schema for it");

    bool handled = false;
    try {
        handled = handle(n, stem, qual);
    } catch (const AnalyzeError& e) {
        // After an opaque value every shape argument computed from it is unknown: that is the
        // uncounted op's consequence, not a fault of the forward, so it is listed, not raised.
        if (!opaqueSeen_)
            throw;
        return uncounted(n, e.what());
    }
    if (!handled)
        return uncounted(n, "the analyser has no rule for this op");
    // An in-place op updates its first argument's abstract state (e.g. unsqueeze_).
    if (inplace && !n->inputs().empty() && val(n->inputs()[0]).isTensor() && !n->outputs().empty() &&
        val(n->outputs()[0]).isTensor())
        set(n->inputs()[0], val(n->outputs()[0]));
}

void Analyzer::uncounted(const Node* n, const std::string& reason)
{
    bool shaped = false;
    try {
        shaped = metaShapes(n);
    } catch (const std::exception&) {
        shaped = false; // no meta kernel (or the arguments do not fit one): the shapes stay unknown
    }
    if (!shaped) {
        for (const Value* o : n->outputs())
            set(o, typeHasTensor(o->type()) ? AVal::opaqueTensor() : AVal());
        opaqueSeen_ = opaqueSeen_ || n->outputs().size() > 0;
    }
    const std::string base = n->kind().toUnqualString();
    const bool inplace = base.size() > 1 && base.back() == '_' && base.compare(base.size() - 2, 2, "__") != 0;
    if (inplace && !n->inputs().empty() && !n->outputs().empty())
        set(n->inputs()[0], val(n->outputs()[0]));
    nlohmann::json u;
    u[ProtocolNames::Key::kIndex] = static_cast<int64_t>(ops_.size());
    u[ProtocolNames::Key::kOp] = n->kind().toQualString();
    const int line = lineOf(n);
    if (line > 0)
        u[ProtocolNames::Key::kLine] = line;
    u[ProtocolNames::Key::kReason] = reason;
    u[ProtocolNames::Key::kShapeKnown] = shaped;
    uncounted_.push_back(std::move(u));
    // Listed with the traffic its shapes imply (where known) and no FLOPs: the totals stay a lower
    // bound, and `uncounted` says they are one.
    record(n, "uncounted", 0, shaped ? ioBytes(n) : 0);
}

// Runs the op on meta tensors (shapes and dtypes, no storage: nothing is allocated or computed)
// to learn its output shapes. False where an argument cannot be rebuilt (an opaque or unknown
// value, a list of optional tensors, ...).
bool Analyzer::metaShapes(const Node* n)
{
    auto metaOf = [](const AVal& a) {
        return at::empty(a.shape, at::TensorOptions().device(at::kMeta).dtype(
                                      static_cast<c10::ScalarType>(scalarTypeFor(a.elemBytes))));
    };
    if (!n->maybeOperator())
        return false;
    torch::jit::Stack stack;
    for (const Value* v : n->inputs()) {
        const AVal& a = val(v);
        if (a.isTensor()) {
            stack.push_back(metaOf(a));
        } else if (a.isConst()) {
            stack.push_back(a.iv);
        } else if (a.kind == AVal::List && v->type()->isSubtypeOf(*c10::ListType::ofTensors())) {
            c10::List<at::Tensor> l;
            for (const AVal& it : a.items) {
                if (!it.isTensor())
                    return false;
                l.push_back(metaOf(it));
            }
            stack.push_back(c10::IValue(l));
        } else {
            return false;
        }
    }
    n->getOperation()(stack);
    if (stack.size() != n->outputs().size())
        return false;
    for (size_t i = 0; i < stack.size(); ++i) {
        const c10::IValue& r = stack[i];
        if (r.isTensor()) {
            const at::Tensor& t = r.toTensor();
            set(n->outputs()[i], AVal::tensor(t.sizes().vec(), static_cast<int>(t.element_size())));
        } else if (r.isTensorList()) {
            AVal l;
            l.kind = AVal::List;
            for (const at::Tensor& t : r.toTensorVector())
                l.items.push_back(AVal::tensor(t.sizes().vec(), static_cast<int>(t.element_size())));
            set(n->outputs()[i], l);
        } else if (typeHasTensor(n->outputs()[i]->type())) {
            return false;
        } else {
            set(n->outputs()[i], AVal::constant(r));
        }
    }
    return true;
}

bool Analyzer::handle(const Node* n, const std::string& s, const std::string& qual)
{
    if (s == "dropout" || s == "feature_dropout" || s == "alpha_dropout" || s == "feature_alpha_dropout")
        return dropout(n), true;
    if (s == "max" || s == "min") {
        int tensors = 0;
        for (const Value* v : n->inputs())
            tensors += val(v).isTensor() ? 1 : 0;
        if (tensors >= 2)
            return elementwise(n, s, 1), true;
        return reduction(n, s, qual), true;
    }
    if (s == "where" && n->inputs().size() == 1)
        fail("aten::where(condition) has a data-dependent shape");
    {
        const auto& t = elementwiseFlops();
        auto it = t.find(s);
        if (it != t.end())
            return elementwise(n, s, it->second), true;
    }
    if (s == "conv1d" || s == "conv2d" || s == "conv3d")
        return conv(n, false), true;
    if (s == "conv_transpose1d" || s == "conv_transpose2d" || s == "conv_transpose3d")
        return conv(n, true), true;
    if (s == "convolution" || s == "_convolution")
        return conv(n, boolArg(n, "transposed", false)), true;
    if (s.rfind("max_pool", 0) == 0 || s.rfind("avg_pool", 0) == 0)
        return pool(n, s), true;
    if (s.rfind("adaptive_avg_pool", 0) == 0 || s.rfind("adaptive_max_pool", 0) == 0)
        return adaptivePool(n, s), true;
    if (s == "matmul" || s == "mm" || s == "bmm" || s == "mv" || s == "dot" || s == "vdot" || s == "addmm" ||
        s == "baddbmm" || s == "addmv")
        return matmul(n, s), true;
    if (s == "linear")
        return linear(n), true;
    if (s == "layer_norm" || s == "batch_norm" || s == "group_norm" || s == "instance_norm" || s == "rms_norm")
        return norm(n, s), true;
    if (s == "softmax" || s == "log_softmax")
        return softmax(n, s), true;
    if (s == "sum" || s == "mean" || s == "amax" || s == "amin" || s == "prod" || s == "var" || s == "std" ||
        s == "logsumexp" || s == "argmax" || s == "argmin" || s == "all" || s == "any" || s == "nansum" ||
        s == "norm" || s == "count_nonzero" || s == "frobenius_norm" || s == "linalg_vector_norm")
        return reduction(n, s, qual), true;
    if (s == "cumsum" || s == "cumprod" || s == "logcumsumexp" || s == "cummax" || s == "cummin")
        return scan(n, s), true;
    if (s == "einsum")
        return einsum(n), true;
    if (nnOp(n, s))
        return true;
    if (gatherOp(n, s))
        return true;
    if (viewOp(n, s))
        return true;
    if (dataOp(n, s))
        return true;
    return false;
}

void Analyzer::elementwise(const Node* n, const std::string& s, int perElem)
{
    const std::string qual = n->kind().toQualString();
    std::vector<const AVal*> ts;
    for (const Value* v : n->inputs())
        if (val(v).isTensor())
            ts.push_back(&val(v));
    if (ts.empty())
        fail(qual + " without a tensor operand");
    Shape out = ts[0]->shape;
    for (size_t i = 1; i < ts.size(); ++i)
        out = broadcast(out, ts[i]->shape, qual);
    const std::string base = n->kind().toUnqualString();
    if (base.back() == '_' && out != ts[0]->shape)
        fail(qual + ": the in-place result " + shapeStr(out) + " does not fit the tensor " + shapeStr(ts[0]->shape));
    int eb = isComparison(s) ? 1 : ts[0]->elemBytes;
    if (!isComparison(s))
        for (const AVal* t : ts)
            if (!t->hostScalar)
                eb = std::max(eb, t->elemBytes);
    set(n->output(), AVal::tensor(out, eb));
    record(n, "elementwise", perElem * numel(out), ioBytes(n));
}

void Analyzer::dropout(const Node* n)
{
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

} // namespace kwb::analyzer

namespace kwb {

nlohmann::json analyzeGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<ArgInfo>& args,
                            double ridge)
{
    if (!graph)
        throw AnalyzeError("no graph");
    analyzer::Analyzer a(args, ridge);
    try {
        return a.run(graph);
    } catch (const AnalyzeError&) {
        throw;
    } catch (const std::exception& e) {
        throw AnalyzeError(std::string("analysis failed: ") + e.what());
    }
}

} // namespace kwb
