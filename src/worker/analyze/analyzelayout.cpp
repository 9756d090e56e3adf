// The analyser's layout ops (views that copy nothing, ops that only move data, gathers): see
// analyze.h for the conventions, analyzeinternal.h for the interpreter they plug into.
#include "worker/analyze/analyzeinternal.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kwb::analyzer {

// View and shape ops: 0 FLOPs, 0 bytes (unless they must copy a non-contiguous tensor).
bool Analyzer::viewOp(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    static const std::set<std::string> names = {"view",
                                                "reshape",
                                                "view_as",
                                                "reshape_as",
                                                "flatten",
                                                "unflatten",
                                                "squeeze",
                                                "unsqueeze",
                                                "permute",
                                                "transpose",
                                                "swapaxes",
                                                "swapdims",
                                                "t",
                                                "contiguous",
                                                "expand",
                                                "expand_as",
                                                "select",
                                                "slice",
                                                "narrow",
                                                "chunk",
                                                "split",
                                                "split_with_sizes",
                                                "unbind",
                                                "detach",
                                                "alias",
                                                "movedim",
                                                "lift_fresh",
                                                "numpy_T",
                                                "mT",
                                                "mH",
                                                "adjoint",
                                                "unfold",
                                                "broadcast_tensors",
                                                "meshgrid"};
    if (!names.count(s))
        return false;
    if (s == "broadcast_tensors" || s == "meshgrid") {
        // Lists of expanded views: broadcast_tensors to their common shape; meshgrid's 0-d/1-D
        // inputs to the grid (n1, n2, ...), or (n2, n1, ...) with indexing "xy".
        const AVal& l = val(n->inputs()[0]);
        if (l.kind != AVal::List && l.kind != AVal::Tuple)
            fail(qual + ": the tensor list is not known statically");
        Shape common;
        for (const AVal& t : l.items) {
            if (!t.isTensor())
                fail(qual + ": a list element is not a tensor");
            if (s == "broadcast_tensors") {
                common = broadcast(common, t.shape, qual);
            } else {
                if (t.shape.size() > 1)
                    fail(qual + ": expects 0-D or 1-D tensors, got " + shapeStr(t.shape));
                common.push_back(t.shape.empty() ? 1 : t.shape[0]);
            }
        }
        if (s == "meshgrid") {
            const AVal* ix = arg(n, "indexing");
            if (ix && ix->isConst() && ix->iv.isString() && ix->iv.toStringRef() == "xy" && common.size() >= 2)
                std::swap(common[0], common[1]);
        }
        AVal list;
        list.kind = AVal::List;
        for (const AVal& t : l.items)
            list.items.push_back(AVal::tensor(common, t.elemBytes, t.shape == common && t.contiguous));
        set(n->output(), list);
        record(n, "view", 0, 0);
        return true;
    }
    const AVal& x = val(n->inputs()[0]);
    if (!x.isTensor())
        fail(qual + ": first operand is not a tensor");
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
                if (infer >= 0)
                    fail(qual + ": only one dimension can be -1");
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
        if (!sz)
            fail("unsupported op " + qual + " (view as another dtype)");
        const Shape sh = inferShape(toIntList(*sz, "the shape of " + qual));
        reshapeLike(sh, s == "reshape");
        return true;
    }
    if (s == "view_as" || s == "reshape_as" || s == "expand_as") {
        const AVal& o = tensorArg(n, "other");
        if (s == "expand_as") {
            const Shape b = broadcast(x.shape, o.shape, qual);
            if (b != o.shape)
                fail(qual + ": " + shapeStr(x.shape) + " cannot expand to " + shapeStr(o.shape));
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
        if (a > b)
            fail(qual + ": start_dim is after end_dim");
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
            if (sizes[i] == -1)
                infer = static_cast<int64_t>(i);
            else
                known *= sizes[i];
        }
        if (infer >= 0 && known > 0)
            sizes[static_cast<size_t>(infer)] = x.shape[static_cast<size_t>(d)] / known;
        if (numel(sizes) != x.shape[static_cast<size_t>(d)])
            fail(qual + ": sizes " + shapeStr(sizes) + " do not multiply to " +
                 std::to_string(x.shape[static_cast<size_t>(d)]));
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
            for (size_t i = 0; i < r; ++i)
                drop[i] = x.shape[i] == 1;
        } else {
            for (int64_t di : toIntList(*d, "dim of " + qual)) {
                if (r == 0)
                    break;
                const size_t nd = static_cast<size_t>(normDim(di, r, qual));
                drop[nd] = x.shape[nd] == 1;
            }
        }
        Shape sh;
        for (size_t i = 0; i < r; ++i)
            if (!drop[i])
                sh.push_back(x.shape[i]);
        out(sh, x.contiguous);
        record(n, "view", 0, 0);
        return true;
    }
    if (s == "unsqueeze") {
        const int64_t d = intArg(n, "dim", 0);
        const int64_t rr = static_cast<int64_t>(r) + 1;
        if (d < -rr || d >= rr)
            fail(qual + ": dimension out of range");
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
            if (perm.size() != r)
                fail(qual + ": " + std::to_string(perm.size()) + " dims for a tensor of rank " + std::to_string(r));
            for (auto& p : perm)
                p = normDim(p, r, qual);
        } else {
            const int64_t src = normDim(intArg(n, "source", 0), r, qual);
            const int64_t dst = normDim(intArg(n, "destination", 0), r, qual);
            for (int64_t i = 0; i < static_cast<int64_t>(r); ++i)
                if (i != src)
                    perm.push_back(i);
            perm.insert(perm.begin() + dst, src);
        }
        std::vector<bool> seen(r, false);
        Shape sh;
        bool identity = true;
        Shape moved; // dims of size > 1 in the new order
        for (size_t i = 0; i < perm.size(); ++i) {
            const size_t p = static_cast<size_t>(perm[i]);
            if (seen[p])
                fail(qual + ": repeated dim");
            seen[p] = true;
            sh.push_back(x.shape[p]);
            if (x.shape[p] > 1)
                moved.push_back(perm[i]);
        }
        identity = std::is_sorted(moved.begin(), moved.end());
        out(sh, x.contiguous && identity);
        record(n, "view", 0, 0);
        return true;
    }
    if (s == "transpose" || s == "swapaxes" || s == "swapdims" || s == "t") {
        if (s == "t" && r > 2)
            fail(qual + ": expects a tensor of at most 2 dimensions, got " + shapeStr(x.shape));
        int64_t a = 0, b = r >= 2 ? 1 : 0;
        if (s != "t") {
            const auto ins = n->inputs();
            a = normDim(toInt(val(ins[1]), "dim0 of " + qual), r, qual);
            b = normDim(toInt(val(ins[2]), "dim1 of " + qual), r, qual);
        }
        Shape sh = x.shape;
        if (r > 0)
            std::swap(sh[static_cast<size_t>(a)], sh[static_cast<size_t>(b)]);
        const bool trivial =
            a == b || r == 0 || x.shape[static_cast<size_t>(a)] == 1 || x.shape[static_cast<size_t>(b)] == 1;
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
        if (sz.size() < r)
            fail(qual + ": " + shapeStr(sz) + " has fewer dimensions than " + shapeStr(x.shape));
        Shape sh(sz.size());
        bool grew = false;
        for (size_t i = 0; i < sz.size(); ++i) {
            const size_t off = sz.size() - r;
            const int64_t have = i >= off ? x.shape[i - off] : 1;
            if (sz[i] == -1) {
                if (i < off)
                    fail(qual + ": -1 is not allowed for a new leading dimension");
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
        if (r == 0)
            fail(qual + ": cannot index a 0-d tensor");
        const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), r, qual));
        const int64_t len = x.shape[d];
        bool leadingOnly = true; // only dims of size 1 before d: the result stays contiguous
        for (size_t i = 0; i < d; ++i)
            leadingOnly = leadingOnly && x.shape[i] == 1;
        Shape sh = x.shape;
        if (s == "select") {
            int64_t idx = intArg(n, "index", 0);
            if (idx < -len || idx >= len)
                fail(qual + ": index " + std::to_string(idx) + " out of range for size " + std::to_string(len));
            sh.erase(sh.begin() + static_cast<std::ptrdiff_t>(d));
            out(sh, x.contiguous && leadingOnly);
        } else if (s == "narrow") {
            int64_t start = intArg(n, "start", 0);
            const int64_t length = intArg(n, "length", 0);
            if (start < 0)
                start += len;
            if (start < 0 || length < 0 || start + length > len)
                fail(qual + ": range out of bounds");
            sh[d] = length;
            out(sh, x.contiguous && (leadingOnly || length == len));
        } else {
            int64_t start = intArg(n, "start", 0);
            int64_t end = intArg(n, "end", len);
            const int64_t step = intArg(n, "step", 1);
            if (step < 1)
                fail(qual + ": slice step must be positive");
            if (start < 0)
                start += len;
            if (end < 0)
                end += len;
            start = std::min(std::max<int64_t>(start, 0), len);
            end = std::min(std::max<int64_t>(end, start), len);
            sh[d] = (end - start + step - 1) / step;
            out(sh, x.contiguous && step == 1 && (leadingOnly || sh[d] == len));
        }
        record(n, "view", 0, 0);
        return true;
    }
    if (s == "chunk" || s == "split" || s == "split_with_sizes" || s == "unbind") {
        if (r == 0)
            fail(qual + ": cannot split a 0-d tensor");
        const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), r, qual));
        const int64_t len = x.shape[d];
        Shape pieces;
        if (s == "unbind") {
            pieces.assign(static_cast<size_t>(len), 1);
        } else if (s == "chunk") {
            const int64_t chunks = intArg(n, "chunks", 1);
            if (chunks < 1)
                fail(qual + ": chunks must be positive");
            const int64_t size = (len + chunks - 1) / chunks;
            for (int64_t at = 0; at < len; at += size)
                pieces.push_back(std::min(size, len - at));
            if (len == 0)
                pieces.push_back(0);
        } else {
            const AVal* sz = arg(n, "split_size");
            if (!sz)
                sz = arg(n, "split_sizes");
            if (!sz)
                fail("unsupported op " + qual);
            if (sz->isConst() && sz->iv.isInt()) {
                const int64_t size = sz->iv.toInt();
                if (size < 1)
                    fail(qual + ": split size must be positive");
                for (int64_t at = 0; at < len; at += size)
                    pieces.push_back(std::min(size, len - at));
            } else {
                pieces = toIntList(*sz, "split sizes of " + qual);
                int64_t total = 0;
                for (int64_t p : pieces)
                    total += p;
                if (total != len)
                    fail(qual + ": split sizes " + shapeStr(pieces) + " do not add up to " + std::to_string(len));
            }
        }
        bool leadingOnly = true;
        for (size_t i = 0; i < d; ++i)
            leadingOnly = leadingOnly && x.shape[i] == 1;
        AVal list;
        list.kind = AVal::List;
        for (int64_t p : pieces) {
            Shape sh = x.shape;
            if (s == "unbind")
                sh.erase(sh.begin() + static_cast<std::ptrdiff_t>(d));
            else
                sh[d] = p;
            list.items.push_back(AVal::tensor(sh, x.elemBytes, x.contiguous && (leadingOnly || pieces.size() == 1)));
        }
        set(n->output(), list);
        record(n, "view", 0, 0);
        return true;
    }
    if (s == "numpy_T" || s == "mT" || s == "mH" || s == "adjoint") {
        // numpy_T reverses every dimension; the others swap the last two.
        if (s != "numpy_T" && r < 2)
            fail(qual + ": expects a tensor of at least 2 dimensions, got " + shapeStr(x.shape));
        Shape sh = x.shape;
        if (s == "numpy_T")
            std::reverse(sh.begin(), sh.end());
        else
            std::swap(sh[r - 1], sh[r - 2]);
        int moved = 0; // dims of size > 1: with at most one the order in memory is unchanged
        for (int64_t d : x.shape)
            moved += d > 1 ? 1 : 0;
        out(sh, x.contiguous && moved <= 1);
        record(n, "view", 0, 0);
        return true;
    }
    if (s == "unfold") {
        // Tensor.unfold(dimension, size, step): windows along one dimension, a strided view.
        const size_t d = static_cast<size_t>(normDim(intArg(n, "dimension", 0), r, qual));
        const int64_t size = intArg(n, "size", 1), step = intArg(n, "step", 1);
        const int64_t len = r == 0 ? 1 : x.shape[d];
        if (size < 0 || size > len || step < 1)
            fail(qual + ": size " + std::to_string(size) + " and step " + std::to_string(step) + " do not fit " +
                 std::to_string(len));
        Shape sh = x.shape;
        if (r > 0)
            sh[d] = (len - size) / step + 1;
        sh.push_back(size);
        out(sh, false);
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
bool Analyzer::dataOp(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const auto ins = n->inputs();
    auto dtypeBytes = [&](int dflt) {
        const AVal* dt = arg(n, "dtype");
        if (dt && dt->isConst() && dt->iv.isInt())
            return scalarTypeBytes(dt->iv.toInt());
        return dflt;
    };
    if (s == "cat" || s == "concat" || s == "concatenate" || s == "stack") {
        const AVal& l = val(ins[0]);
        if (l.kind != AVal::List && l.kind != AVal::Tuple)
            fail(qual + ": the tensor list is not known statically");
        std::vector<const AVal*> ts;
        for (const AVal& it : l.items) {
            if (!it.isTensor())
                fail(qual + ": a list element is not a tensor");
            ts.push_back(&it);
        }
        if (ts.empty())
            fail(qual + ": empty tensor list");
        Shape outShape;
        if (s == "stack") {
            for (const AVal* t : ts)
                if (t->shape != ts[0]->shape)
                    fail(qual + ": shapes " + shapeStr(ts[0]->shape) + " and " + shapeStr(t->shape) + " differ");
            const int64_t rr = static_cast<int64_t>(ts[0]->shape.size()) + 1;
            int64_t d = intArg(n, "dim", 0);
            if (d < -rr || d >= rr)
                fail(qual + ": dimension out of range");
            if (d < 0)
                d += rr;
            outShape = ts[0]->shape;
            outShape.insert(outShape.begin() + d, static_cast<int64_t>(ts.size()));
        } else {
            // Legacy rule: 1-D empty tensors are skipped.
            std::vector<const AVal*> real;
            for (const AVal* t : ts)
                if (!(t->shape.size() == 1 && t->shape[0] == 0))
                    real.push_back(t);
            if (real.empty())
                real.push_back(ts[0]);
            const size_t r = real[0]->shape.size();
            if (r == 0)
                fail(qual + ": zero-dimensional tensors cannot be concatenated");
            const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), r, qual));
            outShape = real[0]->shape;
            outShape[d] = 0;
            for (const AVal* t : real) {
                bool ok = t->shape.size() == r;
                for (size_t i = 0; ok && i < r; ++i)
                    ok = i == d || t->shape[i] == real[0]->shape[i];
                if (!ok)
                    fail(qual + ": shapes " + shapeStr(real[0]->shape) + " and " + shapeStr(t->shape) +
                         " do not fit along dim " + std::to_string(d));
                outShape[d] += t->shape[d];
            }
        }
        set(n->output(), AVal::tensor(outShape, ts[0]->elemBytes));
        record(n, "data", 0, ioBytes(n));
        return true;
    }
    if (s == "flip" || s == "roll") {
        // A copy in another order: read once, write once.
        const AVal& x = tensorArg(n, "self");
        set(n->output(), AVal::tensor(x.shape, x.elemBytes));
        record(n, "data", 0, ioBytes(n));
        return true;
    }
    if (s == "repeat_interleave" || s == "tile") {
        const AVal* self = arg(n, "self");
        if (!self || !self->isTensor())
            return false; // repeat_interleave(repeats): data-dependent
        const AVal& x = *self;
        Shape sh = x.shape;
        if (s == "tile") {
            Shape reps = toIntList(tensorArgOrList(n, "dims"), "dims of " + qual);
            while (reps.size() < sh.size())
                reps.insert(reps.begin(), 1);
            while (sh.size() < reps.size())
                sh.insert(sh.begin(), 1);
            for (size_t i = 0; i < sh.size(); ++i)
                sh[i] *= reps[i];
        } else {
            const AVal& rep = tensorArgOrList(n, "repeats");
            if (!(rep.isConst() && rep.iv.isInt()))
                fail(qual + " with a tensor of repeats has a data-dependent shape");
            const int64_t k = rep.iv.toInt();
            const AVal* d = arg(n, "dim");
            if (!d || d->isNone()) {
                sh = {numel(x.shape) * k};
            } else {
                const size_t dd = static_cast<size_t>(normDim(toInt(*d, "dim of " + qual), sh.size(), qual));
                if (!sh.empty())
                    sh[dd] *= k;
            }
        }
        set(n->output(), AVal::tensor(sh, x.elemBytes));
        record(n, "data", 0, ioBytes(n));
        return true;
    }
    if (s == "arange" || s == "linspace" || s == "logspace") {
        // Factories of computed values: the output written once.
        int64_t len = 0;
        bool ints = true;
        if (s == "arange") {
            const AVal* st = arg(n, "start");
            const AVal* en = arg(n, "end");
            const AVal* sp = arg(n, "step");
            for (const AVal* a : {st, en, sp})
                if (a && !a->isNone() && !(a->isConst() && a->iv.isInt()))
                    ints = false;
            const double start = st && !st->isNone() ? toDouble(*st, "start of " + qual) : 0.0;
            const double end = toDouble(tensorArgOrList(n, "end"), "end of " + qual);
            const double step = sp && !sp->isNone() ? toDouble(*sp, "step of " + qual) : 1.0;
            if (step == 0)
                fail(qual + ": step must not be zero");
            len = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
        } else {
            len = toInt(tensorArgOrList(n, "steps"), "steps of " + qual);
            ints = false;
        }
        int eb = ints ? 8 : 4;
        const AVal* dt = arg(n, "dtype");
        if (dt && dt->isConst() && dt->iv.isInt())
            eb = scalarTypeBytes(dt->iv.toInt());
        set(n->output(), AVal::tensor({len}, eb));
        record(n, "data", 0, tensorBytes(val(n->output())));
        return true;
    }
    if (s == "new_zeros" || s == "new_ones" || s == "new_empty" || s == "new_full") {
        const AVal& x = tensorArg(n, "self");
        const Shape sh = toIntList(tensorArgOrList(n, "size"), "size of " + qual);
        int eb = x.elemBytes;
        const AVal* dt = arg(n, "dtype");
        if (dt && dt->isConst() && dt->iv.isInt())
            eb = scalarTypeBytes(dt->iv.toInt());
        set(n->output(), AVal::tensor(sh, eb));
        record(n, "data", 0, s == "new_empty" ? 0 : tensorBytes(val(n->output())));
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
        if (!x.isTensor())
            fail(qual + ": first operand is not a tensor");
        int eb = x.elemBytes;
        bool copy = false;
        if (s == "type_as") {
            eb = tensorArg(n, "other").elemBytes;
        } else {
            const AVal* other = arg(n, "other");
            if (other && other->isTensor())
                eb = other->elemBytes;
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
        if (pad.size() % 2 != 0 || pad.size() / 2 > x.shape.size())
            fail(qual + ": invalid padding " + shapeStr(pad));
        Shape sh = x.shape;
        for (size_t i = 0; i < pad.size() / 2; ++i) {
            int64_t& dim = sh[sh.size() - 1 - i];
            dim += pad[2 * i] + pad[2 * i + 1];
            if (dim < 0)
                fail(qual + ": padding makes a dimension negative");
        }
        set(n->output(), AVal::tensor(sh, x.elemBytes));
        record(n, "data", 0, ioBytes(n));
        return true;
    }
    if (s == "repeat") {
        const AVal& x = tensorArg(n, "self");
        const Shape rep = toIntList(tensorArgOrList(n, "repeats"), "repeats of " + qual);
        if (rep.size() < x.shape.size())
            fail(qual + ": fewer repeats than dimensions");
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
        if (x.shape.size() < 3 || f < 1)
            fail(qual + ": invalid input " + shapeStr(x.shape));
        Shape sh = x.shape;
        const size_t c = sh.size() - 3;
        if (s == "pixel_shuffle") {
            if (sh[c] % (f * f) != 0)
                fail(qual + ": channels not divisible by the factor squared");
            sh[c] /= f * f;
            sh[c + 1] *= f;
            sh[c + 2] *= f;
        } else {
            if (sh[c + 1] % f != 0 || sh[c + 2] % f != 0)
                fail(qual + ": spatial size not divisible by the factor");
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
            if (!data.isConst())
                fail(qual + ": data is not known statically");
            c10::IValue v = data.iv;
            while (v.isList()) {
                const auto l = v.toList();
                sh.push_back(static_cast<int64_t>(l.size()));
                if (l.size() == 0)
                    break;
                v = l.get(0);
            }
        }
        set(n->output(), AVal::tensor(sh, dtypeBytes(4)));
        record(n, "data", 0, tensorBytes(val(n->output())));
        return true;
    }
    if (s == "copy" || s == "fill" || s == "zero") {
        const AVal& x = val(ins[0]);
        if (!x.isTensor())
            fail(qual + ": first operand is not a tensor");
        int64_t bytes = tensorBytes(x);
        if (s == "copy") {
            const AVal& src = tensorArg(n, "src");
            const Shape b = broadcast(src.shape, x.shape, qual);
            if (b != x.shape)
                fail(qual + ": " + shapeStr(src.shape) + " cannot be copied into " + shapeStr(x.shape));
            bytes += tensorBytes(src);
        }
        set(n->output(), AVal::tensor(x.shape, x.elemBytes));
        record(n, "data", 0, bytes);
        return true;
    }
    return false;
}

// Gathers: the output's elements are read from wherever the indices point (once each: no reuse
// is assumed) and written once, and the indices are read: bytes = index + 2 × output, no FLOPs.
// aten::index (advanced indexing, x[idx]) follows NumPy's rule: the broadcast shape of the index
// tensors replaces the dimensions they index where those are adjacent, or leads otherwise.
bool Analyzer::gatherOp(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    Shape out;
    int eb = 4;
    if (s == "index") {
        const AVal& x = tensorArg(n, "self");
        const AVal& l = tensorArgOrList(n, "indices");
        if (l.kind != AVal::List && l.kind != AVal::Tuple)
            fail(qual + ": the index list is not known statically");
        if (l.items.size() > x.shape.size())
            fail(qual + ": too many indices for " + shapeStr(x.shape));
        Shape idx;
        std::vector<size_t> at;
        for (size_t i = 0; i < l.items.size(); ++i) {
            const AVal& t = l.items[i];
            if (t.isNone())
                continue;
            if (!t.isTensor())
                fail(qual + ": an index is not a tensor");
            if (t.elemBytes == 1)
                fail(qual + " with a boolean mask has a data-dependent shape");
            idx = at.empty() ? t.shape : broadcast(idx, t.shape, qual);
            at.push_back(i);
        }
        if (at.empty())
            fail(qual + ": no index tensor");
        const bool adjacent = at.back() - at.front() + 1 == at.size();
        for (size_t i = 0; i < x.shape.size(); ++i) {
            if (i == at.front() && adjacent)
                out.insert(out.end(), idx.begin(), idx.end());
            if (std::find(at.begin(), at.end(), i) == at.end())
                out.push_back(x.shape[i]);
        }
        if (!adjacent)
            out.insert(out.begin(), idx.begin(), idx.end());
        eb = x.elemBytes;
    } else if (s == "index_select" || s == "gather") {
        const AVal& x = tensorArg(n, "self");
        const AVal& i = tensorArg(n, "index");
        const size_t d = static_cast<size_t>(normDim(intArg(n, "dim", 0), x.shape.size(), qual));
        if (s == "gather") {
            if (i.shape.size() != x.shape.size())
                fail(qual + ": index " + shapeStr(i.shape) + " and input " + shapeStr(x.shape) + " differ in rank");
            out = i.shape;
        } else {
            if (i.shape.size() > 1)
                fail(qual + ": index " + shapeStr(i.shape) + " is not 1-D");
            out = x.shape;
            if (!out.empty())
                out[d] = numel(i.shape);
        }
        eb = x.elemBytes;
    } else if (s == "embedding") {
        const AVal& w = tensorArg(n, "weight");
        const AVal& i = tensorArg(n, "indices");
        if (w.shape.size() != 2)
            fail(qual + ": weight " + shapeStr(w.shape) + " is not 2-D");
        out = i.shape;
        out.push_back(w.shape[1]);
        eb = w.elemBytes;
    } else {
        return false;
    }
    set(n->output(), AVal::tensor(out, eb));
    // Every operand after the first (the data gathered from: self, or embedding's weight) is an index.
    int64_t indexBytes = 0;
    std::vector<const AVal*> ts;
    for (size_t i = 1; i < n->inputs().size(); ++i)
        collectTensors(val(n->inputs()[i]), ts);
    for (const AVal* t : ts)
        indexBytes += tensorBytes(*t);
    record(n, "data", 0, indexBytes + 2 * tensorBytes(val(n->output())));
    return true;
}

} // namespace kwb::analyzer
