// The analyser's network layers: recurrent layers and cells (aten::lstm, gru, rnn_tanh, rnn_relu
// and their *_cell forms), scaled_dot_product_attention, and the losses. See analyze.h for the
// conventions, analyzeinternal.h for the interpreter they plug into.
#include "worker/analyze/analyzeinternal.h"

#include <algorithm>
#include <map>
#include <set>

namespace kwb::analyzer {

namespace {

// Gates per hidden unit and element-wise FLOPs per hidden unit and step (analyze.h): LSTM adds
// its two projections (4), three sigmoids (9), a tanh (1), c = f·c + i·g (3), tanh(c) (1) and
// o·tanh(c) (1); GRU adds the r and z projections (2), two sigmoids (6), n = tanh(x_n + r·h_n) (3)
// and h = (1 − z)·n + z·h (3); a plain RNN adds its projections and applies tanh or relu (2).
struct CellKind
{
    int gates;
    int elementwise;
};

CellKind cellKind(const std::string& s)
{
    if (s.rfind("lstm", 0) == 0)
        return {4, 19};
    if (s.rfind("gru", 0) == 0)
        return {3, 14};
    return {1, 2};
}

} // namespace

bool Analyzer::nnOp(const Node* n, const std::string& s)
{
    if (s == "lstm" || s == "gru" || s == "rnn_tanh" || s == "rnn_relu")
        return rnn(n, s), true;
    if (s == "lstm_cell" || s == "gru_cell" || s == "rnn_tanh_cell" || s == "rnn_relu_cell")
        return rnnCell(n, s), true;
    if (s == "scaled_dot_product_attention")
        return attention(n), true;
    if (s == "cosine_similarity" || s == "pairwise_distance")
        return cosineSimilarity(n, s), true;
    static const std::set<std::string> losses = {"mse_loss",
                                                 "l1_loss",
                                                 "smooth_l1_loss",
                                                 "huber_loss",
                                                 "kl_div",
                                                 "cross_entropy_loss",
                                                 "nll_loss",
                                                 "nll_loss_nd",
                                                 "nll_loss2d",
                                                 "binary_cross_entropy",
                                                 "binary_cross_entropy_with_logits",
                                                 "hinge_embedding_loss",
                                                 "soft_margin_loss",
                                                 "margin_ranking_loss",
                                                 "triplet_margin_loss",
                                                 "cosine_embedding_loss"};
    if (losses.count(s))
        return loss(n, s), true;
    return false;
}

// A whole recurrent layer stack: aten::lstm(input, hx[h, c], params, has_biases, num_layers,
// dropout, train, bidirectional, batch_first) and gru / rnn_tanh / rnn_relu (hx one tensor).
// params holds, per layer and direction, w_ih, w_hh, then b_ih, b_hh with biases, then LSTM's w_hr
// with a projection. Per step, layer and direction: 2·G·H·(in + P) for the two products (P = H, or
// the projection size), 2·G·H for the biases, the cell's element-wise FLOPs per hidden unit and,
// with a projection, 2·P·H.
void Analyzer::rnn(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const CellKind kind = cellKind(s);
    const AVal& x = tensorArg(n, "input");
    const AVal& params = tensorArgOrList(n, "params");
    if (params.kind != AVal::List && params.kind != AVal::Tuple)
        fail(qual + ": the parameter list is not known statically");
    const bool biases = boolArg(n, "has_biases", true);
    const int64_t layers = intArg(n, "num_layers", 1);
    const bool bidirectional = boolArg(n, "bidirectional", false);
    const bool batchFirst = boolArg(n, "batch_first", false);
    const int64_t dirs = bidirectional ? 2 : 1;
    if (layers < 1)
        fail(qual + ": num_layers must be positive");
    const size_t groups = static_cast<size_t>(layers * dirs);
    if (params.items.empty() || params.items.size() % groups != 0)
        fail(qual + ": " + std::to_string(params.items.size()) + " parameters for " + std::to_string(groups) +
             " layer directions");
    const size_t per = params.items.size() / groups;
    const bool proj = per == (biases ? 5u : 3u);
    if (per != (biases ? 4u : 2u) && !(proj && s == "lstm"))
        fail(qual + ": " + std::to_string(per) + " parameters per layer direction, expected " +
             std::to_string(biases ? 4 : 2));
    for (const AVal& p : params.items)
        if (!p.isTensor())
            fail(qual + ": a parameter is not a tensor");
    const bool batched = x.shape.size() == 3;
    if (!batched && x.shape.size() != 2)
        fail(qual + ": input " + shapeStr(x.shape) + " is neither 2-D nor 3-D");
    const int64_t T = batched && batchFirst ? x.shape[1] : x.shape[0];
    const int64_t B = batched ? (batchFirst ? x.shape[0] : x.shape[1]) : 1;
    int64_t in = x.shape.back();
    int64_t flops = 0, H = 0, P = 0;
    for (int64_t l = 0; l < layers; ++l) {
        int64_t outWidth = 0;
        for (int64_t d = 0; d < dirs; ++d) {
            const size_t at = static_cast<size_t>(l * dirs + d) * per;
            const Shape& wih = params.items[at].shape;
            const Shape& whh = params.items[at + 1].shape;
            if (wih.size() != 2 || whh.size() != 2 || wih[0] % kind.gates != 0 || whh[0] != wih[0])
                fail(qual + ": weights " + shapeStr(wih) + " and " + shapeStr(whh) + " of layer " + std::to_string(l) +
                     " do not fit " + std::to_string(kind.gates) + " gates");
            if (wih[1] != in)
                fail(qual + ": layer " + std::to_string(l) + " has " + std::to_string(in) + " inputs but w_ih " +
                     shapeStr(wih) + " expects " + std::to_string(wih[1]));
            H = wih[0] / kind.gates;
            P = whh[1];
            if (!proj && P != H)
                fail(qual + ": w_hh " + shapeStr(whh) + " is not square in the hidden size");
            const int64_t G = kind.gates * H;
            int64_t step = 2 * G * (in + P) + kind.elementwise * H;
            if (biases)
                step += 2 * G;
            if (proj)
                step += 2 * P * H;
            flops += T * B * step;
            outWidth += P;
        }
        in = outWidth;
    }
    Shape out = batched ? (batchFirst ? Shape{B, T, dirs * P} : Shape{T, B, dirs * P}) : Shape{T, dirs * P};
    Shape hShape = batched ? Shape{layers * dirs, B, P} : Shape{layers * dirs, P};
    Shape cShape = batched ? Shape{layers * dirs, B, H} : Shape{layers * dirs, H};
    set(n->outputs()[0], AVal::tensor(out, x.elemBytes));
    set(n->outputs()[1], AVal::tensor(hShape, x.elemBytes));
    if (n->outputs().size() > 2)
        set(n->outputs()[2], AVal::tensor(cShape, x.elemBytes));
    record(n, "matmul", flops, ioBytes(n));
}

// One step: aten::lstm_cell(input, hx[h, c], w_ih, w_hh, b_ih?, b_hh?) -> (h, c); gru_cell,
// rnn_tanh_cell, rnn_relu_cell(input, hx, w_ih, w_hh, b_ih?, b_hh?) -> h. FLOPs as one step of rnn().
void Analyzer::rnnCell(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const CellKind kind = cellKind(s);
    const AVal& x = tensorArg(n, "input");
    const AVal& wih = tensorArg(n, "w_ih");
    const AVal& whh = tensorArg(n, "w_hh");
    const AVal* bih = optTensorArg(n, "b_ih");
    const AVal* bhh = optTensorArg(n, "b_hh");
    if (x.shape.empty() || x.shape.size() > 2)
        fail(qual + ": input " + shapeStr(x.shape) + " is neither 1-D nor 2-D");
    if (wih.shape.size() != 2 || whh.shape.size() != 2 || wih.shape[0] % kind.gates != 0 ||
        whh.shape[0] != wih.shape[0] || wih.shape[1] != x.shape.back())
        fail(qual + ": weights " + shapeStr(wih.shape) + " and " + shapeStr(whh.shape) + " do not fit input " +
             shapeStr(x.shape) + " and " + std::to_string(kind.gates) + " gates");
    const int64_t H = wih.shape[0] / kind.gates;
    if (whh.shape[1] != H)
        fail(qual + ": w_hh " + shapeStr(whh.shape) + " is not square in the hidden size");
    const int64_t B = x.shape.size() == 2 ? x.shape[0] : 1;
    const int64_t G = kind.gates * H;
    const int64_t flops = B * (2 * G * (x.shape.back() + H) + kind.elementwise * H + (bih ? G : 0) + (bhh ? G : 0));
    Shape out = x.shape.size() == 2 ? Shape{B, H} : Shape{H};
    for (const Value* o : n->outputs())
        set(o, AVal::tensor(out, x.elemBytes));
    record(n, "matmul", flops, ioBytes(n));
}

// aten::scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0., is_causal=False,
// scale=None, enable_gqa=False) (PyTorch 2: libtorch 1.13 has no such op). Q (…, L, E),
// K (…, S, E), V (…, S, Ev) -> (…, L, Ev). Per query-key pair that is computed: 2·E for Q·Kᵀ,
// 2·Ev for P·V, 5 for the softmax, 1 for the scale, 1 for an additive mask, 1 for dropout. A causal
// mask computes only the pairs it keeps (key j ≤ query i, the top-left alignment torch uses):
// that is what a kernel that skips masked blocks does, and the bound no kernel can beat.
void Analyzer::attention(const Node* n)
{
    const std::string qual = n->kind().toQualString();
    const AVal& q = tensorArg(n, "query");
    const AVal& k = tensorArg(n, "key");
    const AVal& v = tensorArg(n, "value");
    const AVal* mask = optTensorArg(n, "attn_mask");
    const double p = doubleArg(n, "dropout_p", 0.0);
    const bool causal = boolArg(n, "is_causal", false);
    if (q.shape.size() < 2 || k.shape.size() < 2 || v.shape.size() < 2)
        fail(qual + ": query, key and value need at least 2 dimensions");
    const int64_t L = q.shape[q.shape.size() - 2], E = q.shape.back();
    const int64_t S = k.shape[k.shape.size() - 2], Ev = v.shape.back();
    if (k.shape.back() != E)
        fail(qual + ": query " + shapeStr(q.shape) + " and key " + shapeStr(k.shape) + " differ in the embedding size");
    if (v.shape[v.shape.size() - 2] != S)
        fail(qual + ": key " + shapeStr(k.shape) + " and value " + shapeStr(v.shape) +
             " differ in the sequence length");
    // The batch of the result is the query's; key and value broadcast to it, or (grouped-query
    // attention) have a head count that divides the query's.
    const Shape qb(q.shape.begin(), q.shape.end() - 2);
    for (const AVal* t : {&k, &v}) {
        const Shape tb(t->shape.begin(), t->shape.end() - 2);
        bool ok = tb.size() <= qb.size();
        for (size_t i = 0; ok && i < tb.size(); ++i) {
            const int64_t a = qb[qb.size() - 1 - i], b = tb[tb.size() - 1 - i];
            ok = a == b || b == 1 || (i == 0 && b > 0 && a % b == 0); // i == 0: the heads
        }
        if (!ok)
            fail(qual + ": " + shapeStr(t->shape) + " does not fit the query " + shapeStr(q.shape));
    }
    int64_t pairs = L * S;
    if (causal) {
        pairs = 0;
        for (int64_t i = 0; i < L; ++i)
            pairs += std::min(i + 1, S);
    }
    const int64_t batch = numel(qb);
    const int64_t perPair = 2 * E + 2 * Ev + 5 + 1 + (mask ? 1 : 0) + (p > 0 ? 1 : 0);
    Shape out = qb;
    out.push_back(L);
    out.push_back(Ev);
    set(n->output(), AVal::tensor(out, q.elemBytes));
    record(n, "matmul", batch * pairs * perPair, ioBytes(n));
}

// cosine_similarity(x1, x2, dim, eps) and pairwise_distance(x1, x2, p, eps, keepdim): over the
// broadcast shape, per element 6 FLOPs (x·y, x·x, y·y, each a multiply-add) for the similarity, 4
// for the distance (difference, eps, power, add); per result 4 (two roots, product, division) or
// 1 (the root).
void Analyzer::cosineSimilarity(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const AVal& a = tensorArg(n, "x1");
    const AVal& b = tensorArg(n, "x2");
    const Shape bs = broadcast(a.shape, b.shape, qual);
    if (bs.empty())
        fail(qual + ": inputs are 0-d");
    const bool cosine = s == "cosine_similarity";
    const size_t d = static_cast<size_t>(cosine ? normDim(intArg(n, "dim", 1), bs.size(), qual) : bs.size() - 1);
    Shape out = bs;
    if (!cosine && boolArg(n, "keepdim", false))
        out[d] = 1;
    else
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(d));
    set(n->output(), AVal::tensor(out, std::max(a.elemBytes, b.elemBytes)));
    record(n, "reduction", (cosine ? 6 : 4) * numel(bs) + (cosine ? 4 : 1) * numel(out), ioBytes(n));
}

// Losses: `reduction` 0 = none (one value per element or sample), 1 = mean, 2 = sum (a 0-d
// result). FLOPs per element of the compared shape: mse 2, l1 2, smooth_l1 and huber 4, kl_div 3,
// hinge_embedding 3, soft_margin 4, margin_ranking 4, binary_cross_entropy 5, with logits 6; plus 1
// per element when reduced (the sum). cross_entropy: log_softmax's 5 per logit, then per sample 2
// (pick the target's log-probability, add) or, for class probabilities, 2 per logit; nll_loss 2 per
// sample. triplet_margin: two distances of 4 per element (three with swap), then 5 per sample
// (roots, difference, margin, clamp); cosine_embedding: the similarity's 6 per element, 6 per sample.
void Analyzer::loss(const Node* n, const std::string& s)
{
    const std::string qual = n->kind().toQualString();
    const int64_t reduction = intArg(n, "reduction", 1);
    if (reduction < 0 || reduction > 2)
        fail(qual + ": unknown reduction " + std::to_string(reduction));
    const bool reduce = reduction != 0;
    auto finish = [&](const Shape& perSample, int elemBytes, int64_t flops) {
        set(n->output(), AVal::tensor(reduce ? Shape{} : perSample, elemBytes));
        record(n, "reduction", flops + (reduce ? numel(perSample) : 0), ioBytes(n));
    };
    if (s == "cross_entropy_loss" || s == "nll_loss" || s == "nll_loss_nd" || s == "nll_loss2d") {
        const AVal& x = tensorArg(n, "self");
        const AVal& t = tensorArg(n, "target");
        if (x.shape.empty())
            fail(qual + ": input is 0-d");
        const size_t c = x.shape.size() == 1 ? 0 : 1;
        Shape perSample = x.shape;
        perSample.erase(perSample.begin() + static_cast<std::ptrdiff_t>(c));
        const bool probabilities = s == "cross_entropy_loss" && t.shape == x.shape;
        if (!probabilities && t.shape != perSample)
            fail(qual + ": target " + shapeStr(t.shape) + " does not fit input " + shapeStr(x.shape));
        const AVal* w = optTensorArg(n, "weight");
        if (w && numel(w->shape) != x.shape[c])
            fail(qual + ": weight " + shapeStr(w->shape) + " does not match " + std::to_string(x.shape[c]) +
                 " classes");
        int64_t flops = 2 * (probabilities ? numel(x.shape) : numel(perSample));
        if (s == "cross_entropy_loss")
            flops += 5 * numel(x.shape);
        return finish(perSample, x.elemBytes, flops);
    }
    if (s == "triplet_margin_loss" || s == "cosine_embedding_loss") {
        const bool triplet = s == "triplet_margin_loss";
        const AVal& a = tensorArg(n, triplet ? "anchor" : "input1");
        const AVal& b = tensorArg(n, triplet ? "positive" : "input2");
        Shape bs = broadcast(a.shape, b.shape, qual);
        if (triplet)
            bs = broadcast(bs, tensorArg(n, "negative").shape, qual);
        if (bs.empty())
            fail(qual + ": inputs are 0-d");
        const Shape perSample(bs.begin(), bs.end() - 1);
        const int64_t distances = triplet ? (boolArg(n, "swap", false) ? 3 : 2) : 0;
        const int64_t flops =
            triplet ? distances * 4 * numel(bs) + 5 * numel(perSample) : 6 * numel(bs) + 6 * numel(perSample);
        return finish(perSample, std::max(a.elemBytes, b.elemBytes), flops);
    }
    // Element-wise losses over the broadcast shape of their inputs.
    static const std::map<std::string, std::pair<const char*, int>> perElement = {
        {"mse_loss", {"target", 2}},
        {"l1_loss", {"target", 2}},
        {"smooth_l1_loss", {"target", 4}},
        {"huber_loss", {"target", 4}},
        {"kl_div", {"target", 3}},
        {"hinge_embedding_loss", {"target", 3}},
        {"soft_margin_loss", {"target", 4}},
        {"margin_ranking_loss", {"input2", 4}},
        {"binary_cross_entropy", {"target", 5}},
        {"binary_cross_entropy_with_logits", {"target", 6}},
    };
    const auto& rule = perElement.at(s);
    const bool ranking = s == "margin_ranking_loss";
    const AVal& x = tensorArg(n, ranking ? "input1" : "self");
    Shape bs = broadcast(x.shape, tensorArg(n, rule.first).shape, qual);
    if (ranking)
        bs = broadcast(bs, tensorArg(n, "target").shape, qual);
    for (const char* extra : {"weight", "pos_weight"}) {
        const AVal* w = optTensorArg(n, extra);
        if (w && broadcast(w->shape, bs, qual) != bs)
            fail(qual + ": " + extra + " " + shapeStr(w->shape) + " does not broadcast to " + shapeStr(bs));
    }
    finish(bs, x.elemBytes, rule.second * numel(bs));
}

} // namespace kwb::analyzer
