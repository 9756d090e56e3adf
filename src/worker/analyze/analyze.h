// Static analysis of a task's reference forward: the op list with shapes, FLOPs and bytes, for
// the roofline (ARCHITECTURE.md §10) and the profiling-guided prompt.
//
// The analysis never runs the model and never allocates a tensor: it walks the TorchScript graph
// as a small abstract interpreter in which every value is either a tensor *shape* or a known
// constant (ints, floats, lists, strings from x.size(i) and arithmetic on them). Shapes come from
// our own per-op rules, because libtorch 1.13 cannot run conv on meta tensors and its symbolic
// shape analysis is incomplete.
//
// Conventions (kernelbench-tasks.md §2, plus the choices written here):
//  * FLOPs: conv / conv_transpose / matmul / linear = 2·MAC; conv MAC = out_elems·(C_in/groups)·∏k,
//    conv_transpose MAC = in_elems·(C_out/groups)·∏k. A bias of conv, conv_transpose or linear adds
//    1 FLOP per output element (the sheet counts it for linear in L2/9 but not for conv in L2/1:
//    a difference well under 1 %). addmm / baddbmm add 1 FLOP per output element for the addend.
//  * element-wise: per output element, 1 for most ops (add, sub, mul, div, relu, clamp, hardtanh,
//    leaky_relu, tanh, exp, comparisons, …); sigmoid 3, softplus 3, elu/selu/celu 3, hardswish 3,
//    hardsigmoid 2, softsign 2, gelu 4 (erf and tanh forms), mish 4, silu 4, log_sigmoid 4,
//    addcmul/addcdiv/lerp 2. A transcendental (exp, log, tanh, sqrt, erf, …) counts 1: one
//    special-function instruction; a comparison or a select (where, masked_fill, tril/triu) 1.
//  * softmax / log_softmax 5 per element; layer_norm, group_norm, instance_norm 7 per element;
//    batch_norm 7 per element in training mode, 4 in inference mode; rms_norm 4.
//  * pools (max, avg, adaptive): 1 per input element. Reductions (sum, mean, amax, max, prod, …):
//    1 per input element; var / std / logsumexp / norm / frobenius_norm / linalg_vector_norm 3 per
//    input element. Scans: cumsum, cumprod 1 per element, logcumsumexp 3.
//  * einsum: operands contracted pairwise from the left; per pair one multiply per point of the
//    joint index space, 2 where an index is summed there (analyzecompute.cpp).
//  * scaled_dot_product_attention, lstm / gru / rnn_tanh / rnn_relu and their cells, the losses and
//    cosine_similarity: per-pair, per-step and per-element counts in analyzenn.cpp (docs/roofline.md).
//  * gathers (x[idx], index_select, gather, embedding): 0 FLOPs; bytes = indices + 2 × output.
//  * view and shape ops (view, reshape of a contiguous tensor, flatten, squeeze, unsqueeze,
//    permute, transpose, t, expand, slice, select, chunk, split, contiguous of a contiguous
//    tensor, dropout with p = 0 or in eval mode): 0 FLOPs, 0 bytes. contiguous / reshape / flatten
//    of a tensor made non-contiguous by permute/transpose/expand/slice copy it (category "data").
//  * cat, stack, clone, pad, repeat, dtype conversion: 0 FLOPs, bytes in + out (category "data").
//  * unfused bytes: every listed op reads each tensor input once and writes each tensor output
//    once (in-place ops like relu_ / add_ count like their out-of-place form). Python numbers are
//    0-byte operands. BatchNorm's running-stat update is not counted.
//  * fused bytes: (elements of every tensor input the forward uses + every parameter it looks up,
//    each counted once + the output) × element size: the minimum traffic (the sheet's "min bytes").
//  * memory_bound_ops: ops that move bytes and whose FLOPs/bytes is below `ridge` (default 10
//    FLOP/B, under the fp32 ridge point of V100, A100, H100 and H200 alike).
//
// Control flow: helper functions are inlined; an `if` whose condition is known statically (also
// conditions on shapes, like `if x.size(1) > 3`) takes its branch; a loop whose trip count and
// condition are known statically is executed iteration by iteration. A data-dependent `if` or
// loop, a shape argument that is not known statically and a shape mismatch raise AnalyzeError
// naming the construct and the source line. An op without a rule is not a silent zero either: it
// is listed in "uncounted" (its line and why) with category "uncounted" and 0 FLOPs; its output
// shapes come from libtorch's meta kernels where there is one (and then its bytes count), else
// they are unknown and every op reading them is uncounted too. The totals then cover the counted
// ops only, and the client must not draw them as the task's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace torch {
namespace jit {
struct Graph;
} // namespace jit
} // namespace torch

namespace kwb {

/// One argument of the forward, in graph-input order.
struct ArgInfo
{
    enum Kind { Tensor, Float, Int, ParamDict } kind = Tensor;
    std::vector<int64_t> shape;                       ///< Tensor: its shape
    int elemBytes = 4;                                ///< Tensor: element size; ParamDict: element size of every entry
    double value = 0;                                 ///< Float / Int: the value
    std::map<std::string, std::vector<int64_t>> dict; ///< ParamDict: name -> shape
};

struct AnalyzeError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

/// Default ridge point (FLOP/B) below which an op counts as memory bound.
constexpr double kDefaultRidge = 10.0;

/// Analyses the forward's graph (it is copied and inlined; the caller's graph is not changed). The
/// CompilationUnit that holds the graph's helper functions must still be alive. `args` has one
/// entry per graph input. Returns
/// {"ops":[{"index","op","inputs":[[shape]...],"output":[shape],"flops","bytes","category",
///          "line"?}], "output_shape", "flops", "bytes_unfused", "bytes_fused",
///  "intensity_unfused", "intensity_fused", "op_count", "memory_bound_ops", "memory_bound_ridge",
///  "input_bytes", "param_bytes", "output_bytes", "params_used":[names],
///  "uncounted":[{"index","op","line"?,"reason","shape_known"}]} (output_shape null when the
///  forward returns a tensor of unknown shape).
/// Categories: conv | matmul | elementwise | reduction | norm | pool | view | data | uncounted.
/// Throws AnalyzeError (see above).
nlohmann::json analyzeGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<ArgInfo>& args,
                            double ridge = kDefaultRidge);

} // namespace kwb
