// The analyser's internals, shared by its files (analyze.cpp: the interpreter; analyze_*.cpp:
// the op families). Not part of the worker's interface: analyze.h is.
#pragma once

#include "worker/analyze/analyze.h"

#include <torch/csrc/jit/ir/ir.h>

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kwb::analyzer {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
using Shape = std::vector<int64_t>;

constexpr int64_t kMaxLoopIterations = 100000;

// The abstract value of one graph Value: a tensor shape, a known constant, a list or tuple of
// abstract values, the parameter dictionary, or unknown (a number computed from tensor data).
struct AVal
{
    enum Kind { Unknown, Tensor, Const, List, Tuple, Dict } kind = Unknown;
    // Tensor
    Shape shape;
    int elemBytes = 4;
    bool contiguous = true;
    bool hostScalar = false; // a 0-d tensor made from a Python number (prim::NumToTensor): 0 bytes
    // Const (also the known value of a hostScalar tensor)
    c10::IValue iv;
    // List / Tuple
    std::vector<AVal> items;
    // Dict: index of the ParamDict argument
    int dictArg = -1;

    static AVal tensor(Shape s, int elemBytes, bool contiguous = true)
    {
        AVal a;
        a.kind = Tensor;
        a.shape = std::move(s);
        a.elemBytes = elemBytes;
        a.contiguous = contiguous;
        return a;
    }
    static AVal constant(c10::IValue v)
    {
        AVal a;
        a.kind = Const;
        a.iv = std::move(v);
        return a;
    }
    bool isTensor() const { return kind == Tensor; }
    bool isConst() const { return kind == Const; }
    bool isNone() const { return kind == Const && iv.isNone(); }
    // A tensor whose shape is unknown: the output of an op the analyser cannot count and whose
    // shape libtorch's meta kernels could not give either. Every op that reads one is uncounted too.
    bool opaque = false;
    static AVal opaqueTensor()
    {
        AVal a;
        a.opaque = true;
        return a;
    }
    bool hasOpaque() const
    {
        if (opaque)
            return true;
        for (const AVal& i : items)
            if (i.hasOpaque())
                return true;
        return false;
    }
};

inline int64_t numel(const Shape& s)
{
    int64_t n = 1;
    for (int64_t d : s)
        n *= d;
    return n;
}

inline int64_t tensorBytes(const AVal& a)
{
    if (!a.isTensor() || a.hostScalar)
        return 0;
    return numel(a.shape) * a.elemBytes;
}

std::string shapeStr(const Shape& s);
bool typeHasTensor(const c10::TypePtr& t);
int scalarTypeBytes(int64_t st);
int64_t scalarTypeFor(int elemBytes);
/// Source location of a node: its 1-based line, or -1.
int lineOf(const Node* n);
/// " at line N: `code`" for error messages.
std::string where(const Node* n);
/// Per-element FLOPs of element-wise ops (out-of-place names; in-place "relu_" maps to "relu").
const std::unordered_map<std::string, int>& elementwiseFlops();
bool isComparison(const std::string& s);

class Analyzer
{
public:
    Analyzer(const std::vector<ArgInfo>& args, double ridge)
        : args_(args)
        , ridge_(ridge)
    {}
    nlohmann::json run(const std::shared_ptr<Graph>& source);

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
    // Ops the analyser cannot count: {"index", "op", "line"?, "reason"} (analyze.h).
    nlohmann::json uncounted_ = nlohmann::json::array();
    bool opaqueSeen_ = false; // an uncounted op left a tensor of unknown shape

    [[noreturn]] void fail(const std::string& msg) const { throw AnalyzeError(msg + where(cur_)); }

    // ---- values ------------------------------------------------------------------------------
    const AVal& val(const Value* v) const
    {
        auto it = env_.find(v);
        if (it == env_.end())
            fail("internal error: value %" + v->debugName() + " has no abstract state");
        return it->second;
    }
    void set(const Value* v, AVal a) { env_[v] = std::move(a); }
    void setUnknown(const Node* n)
    {
        for (const Value* o : n->outputs())
            set(o, AVal());
    }

    static void collectTensors(const AVal& a, std::vector<const AVal*>& out)
    {
        if (a.isTensor())
            out.push_back(&a);
        else if (a.kind == AVal::List || a.kind == AVal::Tuple)
            for (const auto& it : a.items)
                collectTensors(it, out);
    }

    // Named argument access through the node's schema (argument positions follow the schema).
    int argIndex(const Node* n, const char* name) const
    {
        const c10::FunctionSchema* s = n->maybeSchema();
        if (!s)
            return -1;
        const auto& as = s->arguments();
        for (size_t i = 0; i < as.size() && i < n->inputs().size(); ++i)
            if (as[i].name() == name)
                return static_cast<int>(i);
        return -1;
    }
    const AVal* arg(const Node* n, const char* name) const
    {
        const int i = argIndex(n, name);
        return i < 0 ? nullptr : &val(n->inputs()[i]);
    }
    const AVal& tensorArg(const Node* n, const char* name) const
    {
        const AVal* a = arg(n, name);
        if (!a)
            fail(std::string(n->kind().toQualString()) + ": no argument '" + name + "'");
        if (!a->isTensor())
            fail(std::string(n->kind().toQualString()) + ": argument '" + name + "' is not a tensor");
        return *a;
    }
    const AVal* optTensorArg(const Node* n, const char* name) const
    {
        const AVal* a = arg(n, name);
        if (!a || a->isNone())
            return nullptr;
        if (!a->isTensor())
            fail(std::string(n->kind().toQualString()) + ": argument '" + name + "' is not a tensor");
        return a;
    }

    int64_t toInt(const AVal& a, const std::string& what) const
    {
        if (a.isConst() && a.iv.isInt())
            return a.iv.toInt();
        if (a.isConst() && a.iv.isBool())
            return a.iv.toBool() ? 1 : 0;
        if (a.isTensor() && a.hostScalar && a.iv.isInt())
            return a.iv.toInt();
        fail(what + " is not known statically");
    }
    double toDouble(const AVal& a, const std::string& what) const
    {
        if (a.isConst() && a.iv.isDouble())
            return a.iv.toDouble();
        if (a.isConst() && a.iv.isInt())
            return static_cast<double>(a.iv.toInt());
        if (a.isConst() && a.iv.isBool())
            return a.iv.toBool() ? 1.0 : 0.0;
        fail(what + " is not known statically");
    }
    bool toBool(const AVal& a, const std::string& what) const
    {
        if (a.isConst() && a.iv.isBool())
            return a.iv.toBool();
        if (a.isConst() && a.iv.isInt())
            return a.iv.toInt() != 0;
        fail(what + " is not known statically");
    }
    Shape toIntList(const AVal& a, const std::string& what) const
    {
        Shape r;
        if (a.isConst()) {
            if (a.iv.isInt())
                return {a.iv.toInt()};
            if (a.iv.isIntList())
                return a.iv.toIntVector();
            if (a.iv.isList()) {
                for (const c10::IValue& e : a.iv.toListRef()) {
                    if (!e.isInt())
                        fail(what + " is not a list of ints");
                    r.push_back(e.toInt());
                }
                return r;
            }
            if (a.iv.isTuple()) {
                for (const c10::IValue& e : a.iv.toTupleRef().elements()) {
                    if (!e.isInt())
                        fail(what + " is not a list of ints");
                    r.push_back(e.toInt());
                }
                return r;
            }
            fail(what + " is not a list of ints");
        }
        if (a.kind == AVal::List || a.kind == AVal::Tuple) {
            for (const AVal& e : a.items)
                r.push_back(toInt(e, what + " (an element)"));
            return r;
        }
        fail(what + " is not known statically");
    }
    // Named int argument with a default when absent or None.
    int64_t intArg(const Node* n, const char* name, int64_t dflt) const
    {
        const AVal* a = arg(n, name);
        if (!a || a->isNone())
            return dflt;
        return toInt(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
    }
    bool boolArg(const Node* n, const char* name, bool dflt) const
    {
        const AVal* a = arg(n, name);
        if (!a || a->isNone())
            return dflt;
        return toBool(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
    }
    double doubleArg(const Node* n, const char* name, double dflt) const
    {
        const AVal* a = arg(n, name);
        if (!a || a->isNone())
            return dflt;
        return toDouble(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
    }
    // Int-list argument expanded to `k` entries (a single value is repeated); `dflt` when absent,
    // None or empty.
    Shape listArg(const Node* n, const char* name, size_t k, int64_t dflt) const
    {
        const AVal* a = arg(n, name);
        Shape v;
        if (a && !a->isNone())
            v = toIntList(*a, std::string("argument '") + name + "' of " + n->kind().toQualString());
        if (v.empty())
            return Shape(k, dflt);
        if (v.size() == 1 && k > 1)
            return Shape(k, v[0]);
        if (v.size() != k)
            fail(std::string(n->kind().toQualString()) + ": argument '" + name + "' has " + std::to_string(v.size()) +
                 " entries, expected " + std::to_string(k));
        return v;
    }

    int64_t normDim(int64_t d, size_t rank, const std::string& op) const
    {
        const int64_t r = rank == 0 ? 1 : static_cast<int64_t>(rank);
        if (d < -r || d >= r)
            fail(op + ": dimension " + std::to_string(d) + " out of range for a tensor of rank " +
                 std::to_string(rank));
        return d < 0 ? d + r : d;
    }

    Shape broadcast(const Shape& a, const Shape& b, const std::string& op) const
    {
        const size_t r = std::max(a.size(), b.size());
        Shape out(r);
        for (size_t i = 0; i < r; ++i) {
            const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
            const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
            if (da == db || db == 1)
                out[r - 1 - i] = da;
            else if (da == 1)
                out[r - 1 - i] = db;
            else
                fail(op + ": shapes " + shapeStr(a) + " and " + shapeStr(b) + " do not broadcast");
        }
        return out;
    }

    // ---- recording ---------------------------------------------------------------------------
    int64_t ioBytes(const Node* n) const
    {
        int64_t b = 0;
        std::vector<const AVal*> ts;
        for (const Value* v : n->inputs())
            collectTensors(val(v), ts);
        for (const Value* v : n->outputs())
            collectTensors(val(v), ts);
        for (const AVal* t : ts)
            b += tensorBytes(*t);
        return b;
    }

    const AVal& tensorArgOrList(const Node* n, const char* name) const
    {
        const AVal* a = arg(n, name);
        if (!a)
            fail(std::string(n->kind().toQualString()) + ": no argument '" + name + "'");
        return *a;
    }

    // analyze.cpp: the interpreter
    // ---- graph inputs ------------------------------------------------------------------------
    void bindInputs(const Graph& g);
    /// One op of `ops`; `minFlops` >= 0: also its `min_flops`, the FLOPs that bound every
    /// implementation of it (roofline::boundFlops), where they are not simply `flops`.
    void record(const Node* n, const char* category, int64_t flops, int64_t bytes, int64_t minFlops = -1);
    // ---- interpreter -------------------------------------------------------------------------
    void runBlock(const Block* b);
    void runNode(const Node* n);
    void constantNode(const Node* n);
    void ifNode(const Node* n);
    void loopNode(const Node* n);
    // prim:: nodes that carry tensors or need special handling; false = not handled here.
    bool primNode(const Node* n);
    // aten:: nodes on tensors (or dicts/lists of tensors) that give non-tensor results or look
    // up parameters; false = not handled here.
    bool queryNode(const Node* n);
    // ---- tensor ops --------------------------------------------------------------------------
    void tensorOp(const Node* n);
    bool handle(const Node* n, const std::string& s, const std::string& qual);
    void elementwise(const Node* n, const std::string& s, int perElem);
    void dropout(const Node* n);

    // analyzecompute.cpp: conv, pool, matmul, norm, softmax, reductions
    void conv(const Node* n, bool transposed);
    void pool(const Node* n, const std::string& s);
    void adaptivePool(const Node* n, const std::string& s);
    void matmul(const Node* n, const std::string& s);
    void linear(const Node* n);
    void norm(const Node* n, const std::string& s);
    void softmax(const Node* n, const std::string& s);
    void reduction(const Node* n, const std::string& s, const std::string& qual);

    // An op without a rule (or whose rule cannot apply): listed in `uncounted`, its outputs shaped
    // by libtorch's meta kernels where they have one, opaque otherwise.
    void uncounted(const Node* n, const std::string& reason);
    bool metaShapes(const Node* n);

    // analyzecompute.cpp, too
    void einsum(const Node* n);
    void scan(const Node* n, const std::string& s);

    // analyzenn.cpp: recurrent layers and cells, attention, losses
    bool nnOp(const Node* n, const std::string& s);
    void rnn(const Node* n, const std::string& s);
    void rnnCell(const Node* n, const std::string& s);
    void attention(const Node* n);
    void loss(const Node* n, const std::string& s);
    void cosineSimilarity(const Node* n, const std::string& s);

    // analyzelayout.cpp: views and data movement
    // View and shape ops: 0 FLOPs, 0 bytes (unless they must copy a non-contiguous tensor).
    bool viewOp(const Node* n, const std::string& s);
    // Ops that move data but compute nothing: cat, stack, clone, dtype conversion, pad, repeat,
    // pixel_shuffle, factories, copy_/fill_/zero_.
    bool dataOp(const Node* n, const std::string& s);
    bool gatherOp(const Node* n, const std::string& s);
};

} // namespace kwb::analyzer
