// The analyser's compute ops (conv, pool, matmul, linear, einsum, norms, softmax, reductions,
// scans): see analyze.h for the conventions, analyzeinternal.h for the interpreter they plug into.
#include "worker/analyze/analyzeinternal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace kwb::analyzer {

void Analyzer::conv(const Node* n, bool transposed)
{
    const std::string qual = n->kind().toQualString();
    const AVal& x = tensorArg(n, "input");
    const AVal& w = tensorArg(n, "weight");
    const AVal* b = optTensorArg(n, "bias");
    if (w.shape.size() < 3)
        fail(qual + ": weight " + shapeStr(w.shape) + " has no spatial dimensions");
    const size_t k = w.shape.size() - 2;
    const bool batched = x.shape.size() == k + 2;
    if (!batched && x.shape.size() != k + 1)
        fail(qual + ": input " + shapeStr(x.shape) + " does not fit weight " + shapeStr(w.shape));
    const Shape stride = listArg(n, "stride", k, 1);
    const Shape dilation = listArg(n, "dilation", k, 1);
    const int64_t groups = intArg(n, "groups", 1);
    if (groups < 1)
        fail(qual + ": groups must be positive");
    std::string padMode;
    Shape padding;
    const AVal* pa = arg(n, "padding");
    if (pa && pa->isConst() && pa->iv.isString()) {
        padMode = pa->iv.toStringRef();
        if (padMode != "same" && padMode != "valid")
            fail(qual + ": unknown padding '" + padMode + "'");
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
        if (cout % groups != 0)
            fail(qual + ": output channels not divisible by groups");
    } else {
        if (cin != w.shape[0])
            fail(qual + ": input " + shapeStr(x.shape) + " has " + std::to_string(cin) +
                 " channels but the transposed weight " + shapeStr(w.shape) + " expects " + std::to_string(w.shape[0]));
        if (cin % groups != 0)
            fail(qual + ": input channels not divisible by groups");
        cout = w.shape[1] * groups;
    }
    if (b && numel(b->shape) != cout)
        fail(qual + ": bias " + shapeStr(b->shape) + " does not match " + std::to_string(cout) + " output channels");
    Shape out;
    if (batched)
        out.push_back(x.shape[0]);
    out.push_back(cout);
    int64_t kprod = 1;
    for (size_t i = 0; i < k; ++i) {
        const int64_t in = x.shape[c + 1 + i];
        const int64_t kk = w.shape[2 + i];
        kprod *= kk;
        if (stride[i] < 1 || dilation[i] < 1)
            fail(qual + ": stride and dilation must be positive");
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
        if (o < 1)
            fail(qual + ": output size " + std::to_string(o) + " is not positive");
        out.push_back(o);
    }
    const int64_t outElems = numel(out);
    const int64_t mac = transposed ? numel(x.shape) * (cout / groups) * kprod : outElems * (cin / groups) * kprod;
    // The floor's share (roofline::boundFlops): Winograd and FFT multiply fewer times than the
    // direct `mac`, but each still contracts the channels at every output point (a transform
    // domain of at least as many points as outputs, a Cout × Cin/groups product at each), as a
    // 1×1 convolution does; a transposed one where strides skip outputs does even less.
    const int64_t channelMac = std::min(mac, outElems * (cin / groups));
    set(n->output(), AVal::tensor(out, x.elemBytes));
    record(n, "conv", 2 * mac + (b ? outElems : 0), ioBytes(n), 2 * channelMac);
}

void Analyzer::pool(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const bool isMax = s.rfind("max_pool", 0) == 0;
    const char digit = s.size() > 8 ? s[8] : '0';
    if (digit < '1' || digit > '3')
        fail("unsupported op " + qual);
    const size_t k = static_cast<size_t>(digit - '0');
    const AVal& x = tensorArg(n, "self");
    if (x.shape.size() != k + 1 && x.shape.size() != k + 2)
        fail(qual + ": input " + shapeStr(x.shape) + " has the wrong rank");
    const Shape kernel = listArg(n, "kernel_size", k, 1);
    Shape stride = listArg(n, "stride", k, 0);
    for (size_t i = 0; i < k; ++i)
        if (stride[i] == 0)
            stride[i] = kernel[i];
    const Shape padding = listArg(n, "padding", k, 0);
    const Shape dilation = isMax ? listArg(n, "dilation", k, 1) : Shape(k, 1);
    const bool ceilMode = boolArg(n, "ceil_mode", false);
    Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(k));
    for (size_t i = 0; i < k; ++i) {
        const int64_t in = x.shape[x.shape.size() - k + i];
        const int64_t eff = dilation[i] * (kernel[i] - 1) + 1;
        if (kernel[i] < 1 || stride[i] < 1)
            fail(qual + ": kernel and stride must be positive");
        if (padding[i] < 0 || padding[i] > (isMax ? eff : kernel[i]) / 2)
            fail(qual + ": padding should be at most half of the kernel size");
        const int64_t num = in + 2 * padding[i] - eff + (ceilMode ? stride[i] - 1 : 0);
        int64_t o = (num >= 0 ? num / stride[i] : -((-num + stride[i] - 1) / stride[i])) + 1;
        if (ceilMode && (o - 1) * stride[i] >= in + padding[i])
            --o;
        if (o < 1)
            fail(qual + ": output size " + std::to_string(o) + " is not positive for input " + shapeStr(x.shape));
        out.push_back(o);
    }
    set(n->outputs()[0], AVal::tensor(out, x.elemBytes));
    for (size_t i = 1; i < n->outputs().size(); ++i)
        set(n->outputs()[i], AVal::tensor(out, 8));
    record(n, "pool", numel(x.shape), ioBytes(n));
}

void Analyzer::adaptivePool(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const char digit = s.empty() ? '0' : s[s.size() - 2];
    if (s.back() != 'd' || digit < '1' || digit > '3')
        fail("unsupported op " + qual);
    const size_t k = static_cast<size_t>(digit - '0');
    const AVal& x = tensorArg(n, "self");
    if (x.shape.size() != k + 1 && x.shape.size() != k + 2)
        fail(qual + ": input " + shapeStr(x.shape) + " has the wrong rank");
    const Shape os = listArg(n, "output_size", k, 1);
    Shape out(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(k));
    for (int64_t o : os) {
        if (o < 1)
            fail(qual + ": output size must be positive");
        out.push_back(o);
    }
    set(n->outputs()[0], AVal::tensor(out, x.elemBytes));
    for (size_t i = 1; i < n->outputs().size(); ++i)
        set(n->outputs()[i], AVal::tensor(out, 8));
    record(n, "pool", numel(x.shape), ioBytes(n));
}

void Analyzer::matmul(const Node* n, const std::string& s)
{
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
        if (!ok)
            fail(qual + ": " + what + " " + shapeStr(A) + " and " + shapeStr(B));
    };
    if (s == "mm" || s == "addmm")
        need(A.size() == 2 && B.size() == 2, "expects 2-D matrices, got");
    if (s == "bmm" || s == "baddbmm")
        need(A.size() == 3 && B.size() == 3 && A[0] == B[0], "expects 3-D batches of equal size, got");
    if (s == "mv" || s == "addmv")
        need(A.size() == 2 && B.size() == 1, "expects a matrix and a vector, got");
    if (s == "dot" || s == "vdot")
        need(A.size() == 1 && B.size() == 1, "expects two vectors, got");
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
    if (A.size() >= 2)
        out.push_back(M);
    if (B.size() >= 2)
        out.push_back(N);
    int64_t flops = 2 * batch * M * K * N;
    if (addend) {
        const Shape ab = broadcast(addend->shape, out, qual);
        if (ab != out)
            fail(qual + ": the addend " + shapeStr(addend->shape) + " does not broadcast to " + shapeStr(out));
        flops += numel(out);
    }
    set(n->output(), AVal::tensor(out, std::max(a->elemBytes, b->elemBytes)));
    record(n, "matmul", flops, ioBytes(n));
}

void Analyzer::linear(const Node* n)
{
    const std::string qual = n->kind().toQualString();
    const AVal& x = tensorArg(n, "input");
    const AVal& w = tensorArg(n, "weight");
    const AVal* b = optTensorArg(n, "bias");
    if (x.shape.empty())
        fail(qual + ": input is 0-d");
    if (w.shape.size() != 2 && w.shape.size() != 1)
        fail(qual + ": weight " + shapeStr(w.shape) + " must be 1-D or 2-D");
    const int64_t in = x.shape.back();
    if (w.shape.back() != in)
        fail(qual + ": input " + shapeStr(x.shape) + " has " + std::to_string(in) + " features but weight " +
             shapeStr(w.shape) + " expects " + std::to_string(w.shape.back()));
    Shape out(x.shape.begin(), x.shape.end() - 1);
    const int64_t O = w.shape.size() == 2 ? w.shape[0] : 1;
    if (w.shape.size() == 2)
        out.push_back(O);
    if (b) {
        const Shape bb = broadcast(b->shape, out, qual);
        if (bb != out)
            fail(qual + ": bias " + shapeStr(b->shape) + " does not broadcast to " + shapeStr(out));
    }
    const int64_t rows = numel(Shape(x.shape.begin(), x.shape.end() - 1));
    set(n->output(), AVal::tensor(out, x.elemBytes));
    record(n, "matmul", 2 * rows * in * O + (b ? numel(out) : 0), ioBytes(n));
}

void Analyzer::norm(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const AVal& x = tensorArg(n, "input");
    auto checkVec = [&](const char* name, int64_t expect) {
        const AVal* t = optTensorArg(n, name);
        if (t && numel(t->shape) != expect)
            fail(qual + ": " + name + " " + shapeStr(t->shape) + " does not match " + std::to_string(expect) +
                 " features");
    };
    int perElem = 7;
    if (s == "layer_norm" || s == "rms_norm") {
        if (s == "rms_norm")
            perElem = 4;
        const Shape ns = toIntList(tensorArgOrList(n, "normalized_shape"), "normalized_shape of " + qual);
        if (ns.size() > x.shape.size() ||
            !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<std::ptrdiff_t>(ns.size())))
            fail(qual + ": normalized_shape " + shapeStr(ns) + " does not match the trailing dimensions of " +
                 shapeStr(x.shape));
        for (const char* p : {"weight", "bias"}) {
            const AVal* t = optTensorArg(n, p);
            if (t && t->shape != ns)
                fail(qual + ": " + p + " " + shapeStr(t->shape) + " is not " + shapeStr(ns));
        }
    } else {
        if (x.shape.size() < 2)
            fail(qual + ": input " + shapeStr(x.shape) + " needs a channel dimension");
        const int64_t C = x.shape[1];
        if (s == "group_norm") {
            const int64_t g = intArg(n, "num_groups", 1);
            if (g < 1 || C % g != 0)
                fail(qual + ": " + std::to_string(C) + " channels are not divisible into " + std::to_string(g) +
                     " groups");
            checkVec("weight", C);
            checkVec("bias", C);
        } else {
            for (const char* p : {"weight", "bias", "running_mean", "running_var"})
                checkVec(p, C);
            const bool batchStats =
                s == "batch_norm" ? boolArg(n, "training", true) : boolArg(n, "use_input_stats", true);
            if (!batchStats)
                perElem = 4;
        }
    }
    set(n->output(), AVal::tensor(x.shape, x.elemBytes));
    record(n, "norm", perElem * numel(x.shape), ioBytes(n));
}

void Analyzer::softmax(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const AVal& x = tensorArg(n, "self");
    normDim(intArg(n, "dim", 0), x.shape.size(), qual);
    int eb = x.elemBytes;
    const AVal* dt = arg(n, "dtype");
    if (dt && dt->isConst() && dt->iv.isInt())
        eb = scalarTypeBytes(dt->iv.toInt());
    (void)s;
    set(n->output(), AVal::tensor(x.shape, eb));
    record(n, "reduction", 5 * numel(x.shape), ioBytes(n));
}

void Analyzer::reduction(const Node* n, const std::string& s, const std::string& qual)
{
    const AVal& x = val(n->inputs()[0]);
    if (!x.isTensor())
        fail(qual + ": first operand is not a tensor");
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
                if (r > 0)
                    reduced[static_cast<size_t>(nd)] = true;
            }
        }
    }
    const bool keepdim = boolArg(n, "keepdim", false);
    Shape out;
    for (size_t i = 0; i < r; ++i) {
        if (all || reduced[i]) {
            if (keepdim)
                out.push_back(1);
        } else {
            out.push_back(x.shape[i]);
        }
    }
    int eb = x.elemBytes;
    const AVal* dt = arg(n, "dtype");
    if (dt && dt->isConst() && dt->iv.isInt())
        eb = scalarTypeBytes(dt->iv.toInt());
    if (s == "argmax" || s == "argmin" || s == "count_nonzero")
        eb = 8;
    if (s == "all" || s == "any")
        eb = 1;
    set(n->outputs()[0], AVal::tensor(out, eb));
    for (size_t i = 1; i < n->outputs().size(); ++i)
        set(n->outputs()[i], AVal::tensor(out, 8)); // indices
    const int perElem = (s == "var" || s == "std" || s == "logsumexp" || s == "norm" || s == "frobenius_norm" ||
                         s == "linalg_vector_norm")
                            ? 3
                            : 1;
    record(n, "reduction", perElem * numel(x.shape), ioBytes(n));
}

// Scans along one dimension: the output has the input's shape (cummax/cummin add int64 indices).
void Analyzer::scan(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const AVal& x = tensorArg(n, "self");
    normDim(intArg(n, "dim", 0), x.shape.size(), qual);
    int eb = x.elemBytes;
    const AVal* dt = arg(n, "dtype");
    if (dt && dt->isConst() && dt->iv.isInt())
        eb = scalarTypeBytes(dt->iv.toInt());
    set(n->outputs()[0], AVal::tensor(x.shape, eb));
    for (size_t i = 1; i < n->outputs().size(); ++i)
        set(n->outputs()[i], AVal::tensor(x.shape, 8));
    record(n, "reduction", (s == "logcumsumexp" ? 3 : 1) * numel(x.shape), ioBytes(n));
}

// einsum: the operands are contracted pairwise from the left, as torch.einsum does without a
// path. Each pair costs one multiply per point of its joint index space, and one add more where an
// index is summed away there (a multiply-add, 2 FLOPs); a single operand costs one add per element
// it sums, nothing when it only permutes (a view).
void Analyzer::einsum(const Node* n)
{
    const std::string qual = n->kind().toQualString();
    const AVal& eqv = tensorArgOrList(n, "equation");
    if (!(eqv.isConst() && eqv.iv.isString()))
        fail(qual + ": the equation is not known statically");
    std::string eq;
    for (char c : eqv.iv.toStringRef())
        if (c != ' ')
            eq += c;
    const AVal& list = tensorArgOrList(n, "tensors");
    if (list.kind != AVal::List && list.kind != AVal::Tuple)
        fail(qual + ": the operand list is not known statically");
    std::vector<const AVal*> ops;
    for (const AVal& it : list.items) {
        if (!it.isTensor())
            fail(qual + ": an operand is not a tensor");
        ops.push_back(&it);
    }
    const auto arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t at = 0;;) {
        const auto comma = lhs.find(',', at);
        terms.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos)
            break;
        at = comma + 1;
    }
    if (terms.size() != ops.size())
        fail(qual + ": the equation has " + std::to_string(terms.size()) + " operands, " + std::to_string(ops.size()) +
             " were given");
    // Labels as ints: letters by their code, the dimensions under an ellipsis as -1, -2, ... from
    // the right, so that they broadcast between operands like ordinary dimensions.
    using Labels = std::vector<int>;
    std::map<int, int64_t> size;
    size_t ellRank = 0;
    auto parse = [&](const std::string& t, size_t rank, bool isOutput) {
        Labels ls;
        const auto e = t.find("...");
        const std::string before = e == std::string::npos ? t : t.substr(0, e);
        const std::string after = e == std::string::npos ? std::string() : t.substr(e + 3);
        for (char c : before)
            ls.push_back(c);
        if (e != std::string::npos) {
            const size_t named = before.size() + after.size();
            if (!isOutput && rank < named)
                fail(qual + ": operand '" + t + "' has fewer dimensions than labels");
            const size_t k = isOutput ? ellRank : rank - named;
            for (size_t i = k; i > 0; --i)
                ls.push_back(-static_cast<int>(i));
        }
        for (char c : after)
            ls.push_back(c);
        for (int l : ls)
            if (l > 0 && !std::isalpha(l))
                fail(qual + ": invalid label '" + std::string(1, char(l)) + "' in '" + eq + "'");
        if (!isOutput && ls.size() != rank)
            fail(qual + ": operand '" + t + "' has " + std::to_string(ls.size()) + " labels for " +
                 std::to_string(rank) + " dimensions");
        return ls;
    };
    std::vector<Labels> in;
    for (size_t i = 0; i < ops.size(); ++i) {
        in.push_back(parse(terms[i], ops[i]->shape.size(), false));
        size_t k = 0;
        for (int l : in.back())
            k += l < 0 ? 1 : 0;
        ellRank = std::max(ellRank, k);
        for (size_t d = 0; d < in.back().size(); ++d) {
            const int l = in.back()[d];
            const int64_t sz = ops[i]->shape[d];
            auto it = size.find(l);
            if (it == size.end() || it->second == 1)
                size[l] = sz;
            else if (sz != 1 && sz != it->second)
                fail(qual + ": label '" + (l > 0 ? std::string(1, char(l)) : std::string("...")) + "' has sizes " +
                     std::to_string(it->second) + " and " + std::to_string(sz));
        }
    }
    Labels out;
    if (arrow != std::string::npos) {
        out = parse(eq.substr(arrow + 2), 0, true);
        for (int l : out)
            if (!size.count(l))
                fail(qual + ": output label '" + std::string(1, char(l)) + "' is not in any operand");
    } else {
        // Implicit output: the ellipsis dimensions, then the labels used once, in alphabetical order.
        std::map<int, int> uses;
        for (const Labels& ls : in)
            for (int l : ls)
                ++uses[l];
        for (size_t i = ellRank; i > 0; --i)
            out.push_back(-static_cast<int>(i));
        for (const auto& kv : uses)
            if (kv.first > 0 && kv.second == 1)
                out.push_back(kv.first);
    }
    Shape outShape;
    for (int l : out)
        outShape.push_back(size.at(l));
    auto product = [&](const std::set<int>& ls) {
        int64_t p = 1;
        for (int l : ls)
            p *= size.at(l);
        return p;
    };
    int64_t flops = 0;
    bool contracts = false;
    std::set<int> cur(in[0].begin(), in[0].end());
    const std::set<int> outSet(out.begin(), out.end());
    if (in.size() == 1) {
        if (cur != outSet) {
            flops = product(cur);
            contracts = true;
        }
    }
    for (size_t i = 1; i < in.size(); ++i) {
        std::set<int> joint = cur;
        joint.insert(in[i].begin(), in[i].end());
        std::set<int> keep;
        for (int l : joint) {
            bool later = outSet.count(l) > 0;
            for (size_t j = i + 1; j < in.size() && !later; ++j)
                later = std::find(in[j].begin(), in[j].end(), l) != in[j].end();
            if (later)
                keep.insert(l);
        }
        const bool sums = keep.size() != joint.size();
        contracts = contracts || sums;
        flops += (sums ? 2 : 1) * product(joint);
        cur = keep;
    }
    int eb = 0;
    for (const AVal* t : ops)
        eb = std::max(eb, t->elemBytes);
    set(n->output(), AVal::tensor(outShape, eb, in.size() > 1 || in[0] == out));
    if (in.size() == 1 && !contracts) {
        record(n, "view", 0, 0); // a permutation or a diagonal: torch returns a view
        return;
    }
    record(n, in.size() == 1 ? "reduction" : contracts ? "matmul" : "elementwise", flops, ioBytes(n));
}

} // namespace kwb::analyzer
