// Static analysis of reference forwards (src/worker/analyze.{hpp,cpp}): shapes, FLOPs and bytes
// against hand-computed values, errors, and every task file under tasks/ at full scale against
// the facts sheet (shared/design/kernelbench-tasks.md §3.3, §4.1, §5.1, §6).
#include "worker/analyze/analyze.h"
#include "worker/analyze/roofline.h"
#include "worker/python/scripthost.h"
#include "worker/tasks/task.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/jit.h>
#include <torch/library.h>
#include <torch/version.h>

#include "doctestaftertorch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#ifndef KWB_SOURCE_DIR
#define KWB_SOURCE_DIR "."
#endif

using kwb::AnalyzeError;
using kwb::ArgInfo;
using Shape = std::vector<int64_t>;
using Json = nlohmann::json;

#if TORCH_VERSION_MAJOR < 2
// PyTorch 2's schema of F.scaled_dot_product_attention, so that libtorch 1.13 compiles the same
// TorchScript call the task files make for PyTorch 2 (the analyser only reads the graph; nothing
// runs it).
TORCH_LIBRARY_FRAGMENT(aten, m)
{
    m.def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
          "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor");
}
#endif

namespace {

// The graph calls helper functions of its CompilationUnit until it is inlined, so the unit must
// outlive the analysis: keep it with the graph.
struct Compiled
{
    std::shared_ptr<torch::jit::CompilationUnit> cu;
    std::shared_ptr<torch::jit::Graph> graph;
};

Compiled graphOf(const std::string& source)
{
    auto cu = torch::jit::compile(source);
    auto graph = torch::jit::toGraphFunction(cu->get_function("forward")).graph();
    return {cu, graph};
}

ArgInfo tensor(Shape s, int elemBytes = 4)
{
    ArgInfo a;
    a.kind = ArgInfo::Tensor;
    a.shape = std::move(s);
    a.elemBytes = elemBytes;
    return a;
}

ArgInfo number(double v)
{
    ArgInfo a;
    a.kind = ArgInfo::Float;
    a.value = v;
    return a;
}

ArgInfo params(std::map<std::string, Shape> d = {})
{
    ArgInfo a;
    a.kind = ArgInfo::ParamDict;
    a.dict = std::move(d);
    return a;
}

Json analyze(const std::string& src, const std::vector<ArgInfo>& args)
{
    const Compiled c = graphOf(src);
    return kwb::analyzeGraph(c.graph, args);
}

int64_t I(const Json& j)
{
    return j.get<int64_t>();
}
Shape S(const Json& j)
{
    return j.get<Shape>();
}

std::string errorOf(const std::string& src, const std::vector<ArgInfo>& args)
{
    try {
        analyze(src, args);
    } catch (const AnalyzeError& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST_CASE("L1/1: square GEMM 4096^3")
{
    const auto r = analyze(R"(
def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.matmul(A, B)
)",
                           {tensor({4096, 4096}), tensor({4096, 4096}), params()});
    // 2·4096³ = 137,438,953,472 FLOPs; bytes 4·3·4096² = 201,326,592 (fused = unfused: one op).
    CHECK(I(r["flops"]) == 137438953472LL);
    CHECK(I(r["bytes_fused"]) == 201326592LL);
    CHECK(I(r["bytes_unfused"]) == 201326592LL);
    CHECK(S(r["output_shape"]) == Shape{4096, 4096});
    CHECK(I(r["op_count"]) == 1);
    CHECK(r["ops"][0]["op"] == "aten::matmul");
    CHECK(r["ops"][0]["category"] == "matmul");
    CHECK(S(r["ops"][0]["inputs"][1]) == Shape{4096, 4096});
    CHECK(r["intensity_fused"].get<double>() == doctest::Approx(682.67).epsilon(1e-4)); // 2N³/(12N²) = N/6
    CHECK(I(r["memory_bound_ops"]) == 0);
}

TEST_CASE("L1/4: GEMV (2048 x 1048576)·(1048576 x 1)")
{
    const auto r = analyze(R"(
def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.matmul(A, B)
)",
                           {tensor({2048, 1048576}), tensor({1048576, 1}), params()});
    // 2·M·K·N = 2·2048·1048576·1 = 4,294,967,296
    CHECK(I(r["flops"]) == 4294967296LL);
    // 4·(2048·1048576 + 1048576 + 2048) = 4·2,148,534,272 = 8,594,137,088
    CHECK(I(r["bytes_fused"]) == 8594137088LL);
    CHECK(I(r["bytes_unfused"]) == 8594137088LL);
    CHECK(S(r["output_shape"]) == Shape{2048, 1});
    CHECK(I(r["memory_bound_ops"]) == 1); // 0.5 FLOP/B
    // The same with a 1-D vector: (M, K)·(K,) -> (M,)
    const auto v = analyze(R"(
def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.matmul(A, B)
)",
                           {tensor({2048, 1048576}), tensor({1048576}), params()});
    CHECK(S(v["output_shape"]) == Shape{2048});
    CHECK(I(v["flops"]) == 4294967296LL);
}

TEST_CASE("L1/5: matrix times a Python float")
{
    const auto r = analyze(R"(
def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    return A * s
)",
                           {tensor({65536, 16384}), number(3.14), params()});
    // 65536·16384 = 1,073,741,824 multiplies; read + write 2·4·1,073,741,824 = 8,589,934,592 B;
    // s is a Python number: 0 bytes.
    CHECK(I(r["flops"]) == 1073741824LL);
    CHECK(I(r["bytes_unfused"]) == 8589934592LL);
    CHECK(I(r["bytes_fused"]) == 8589934592LL);
    CHECK(r["ops"][0]["op"] == "aten::mul");
    CHECK(r["ops"][0]["category"] == "elementwise");
    CHECK(r["ops"][0]["inputs"].size() == 1);
    CHECK(r["intensity_fused"].get<double>() == doctest::Approx(0.125));
}

TEST_CASE("L2/1: conv2d 64->128 k3, relu, bias add")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = torch.conv2d(x, p["conv.weight"], p["conv.bias"])
    y = torch.relu(y)
    return y + p["bias"]
)",
                           {tensor({128, 64, 128, 128}),
                            params({{"conv.weight", {128, 64, 3, 3}}, {"conv.bias", {128}}, {"bias", {128, 1, 1}}})});
    // conv out (128, 128, 126, 126) = 260,112,384 elements
    // MAC = 260,112,384 · 64 · 9 = 149,824,733,184 (sheet: 1.498e11)
    // conv FLOPs = 2·MAC + bias 260,112,384 = 299,909,578,752
    // relu 260,112,384; add 260,112,384 -> total 300,429,803,520 (sheet 300.2 G without the conv bias)
    CHECK(S(r["output_shape"]) == Shape{128, 128, 126, 126});
    REQUIRE(r["ops"].size() == 3);
    CHECK(r["ops"][0]["op"] == "aten::conv2d");
    CHECK(r["ops"][0]["category"] == "conv");
    CHECK(I(r["ops"][0]["flops"]) == 299909578752LL);
    CHECK((I(r["ops"][0]["flops"]) - 260112384LL) / 2 == 149824733184LL);
    // The floor's share: the channel contraction at every output point, 2 · 260,112,384 · 64
    // (Winograd and FFT save the 9 taps, not that); the relu and add have none.
    CHECK(I(r["ops"][0]["min_flops"]) == 33294385152LL);
    CHECK(!r["ops"][1].contains("min_flops"));
    CHECK(kwb::roofline::boundFlops(r) == 33294385152.0);
    CHECK(r["bound_flops"].get<double>() == 33294385152.0); // the response says what the floor counts
    CHECK(I(r["flops"]) == 300429803520LL);
    // bytes: x 134,217,728·4 = 536,870,912; weight 73,728·4 = 294,912; conv.bias 512; bias 512;
    // out 260,112,384·4 = 1,040,449,536.
    // conv 536,870,912 + 294,912 + 512 + 1,040,449,536 = 1,577,615,872
    // relu 2·1,040,449,536 = 2,080,899,072; add 2·1,040,449,536 + 512 = 2,080,899,584
    CHECK(I(r["ops"][0]["bytes"]) == 1577615872LL);
    CHECK(I(r["ops"][1]["bytes"]) == 2080899072LL);
    CHECK(I(r["ops"][2]["bytes"]) == 2080899584LL);
    CHECK(I(r["bytes_unfused"]) == 5739414528LL);
    // fused: 536,870,912 + params 73,984·4 = 295,936 + 1,040,449,536 = 1,577,616,384
    CHECK(I(r["bytes_fused"]) == 1577616384LL);
    CHECK(I(r["param_bytes"]) == 295936);
    CHECK(r["params_used"].size() == 3);
    CHECK(I(r["memory_bound_ops"]) == 2); // relu and add: 1 FLOP per 8 B
    CHECK(I(r["ops"][1]["line"]) == 4);
}

TEST_CASE("L2/2: conv_transpose2d stride 2 + five element-wise ops")
{
    const auto r = analyze(
        R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], 2, 1, 1)
    x = x + p["bias"]
    x = torch.clamp(x, min=0.0, max=1.0)
    x = x * 2.0
    x = torch.clamp(x, min=0.0, max=1.0)
    x = x / 2.0
    return x
)",
        {tensor({128, 64, 128, 128}),
         params({{"conv_transpose.weight", {64, 64, 3, 3}}, {"conv_transpose.bias", {64}}, {"bias", {64, 1, 1}}})});
    // H_out = (128-1)·2 - 2·1 + (3-1) + 1 + 1 = 256 -> (128, 64, 256, 256) = 536,870,912 elements
    CHECK(S(r["output_shape"]) == Shape{128, 64, 256, 256});
    REQUIRE(r["ops"].size() == 6);
    // MAC (scatter form) = in_elems·(C_out/groups)·9 = 134,217,728·64·9 = 77,309,411,328 (sheet 7.73e10)
    // conv FLOPs = 2·MAC + bias = 154,618,822,656 + 536,870,912 = 155,155,693,568
    CHECK(I(r["ops"][0]["flops"]) == 155155693568LL);
    // + 5 element-wise ops · 536,870,912 = 2,684,354,560 -> 157,840,048,128 (sheet 157.3 G w/o bias)
    CHECK(I(r["flops"]) == 157840048128LL);
    // unfused: conv 536,870,912 + 147,456 + 256 + 2,147,483,648 = 2,684,502,272
    //          add 2·2,147,483,648 + 256 = 4,294,967,552; clamp, mul, clamp, div 4·4,294,967,296
    //          = 17,179,869,184 -> 24,159,339,008
    CHECK(I(r["ops"][0]["bytes"]) == 2684502272LL);
    CHECK(I(r["bytes_unfused"]) == 24159339008LL);
    // fused: 536,870,912 + 36,992·4 = 147,968 + 2,147,483,648 = 2,684,502,528
    CHECK(I(r["bytes_fused"]) == 2684502528LL);
    // unfused / fused = 24,159,339,008 / 2,684,502,528 = 8.9995...: the chain costs 9x the traffic
    const double ratio = double(I(r["bytes_unfused"])) / double(I(r["bytes_fused"]));
    CHECK(ratio == doctest::Approx(8.99957).epsilon(1e-5));
    CHECK(I(r["memory_bound_ops"]) == 5);
    for (int i = 1; i < 6; ++i)
        CHECK(r["ops"][i]["category"] == "elementwise");
}

TEST_CASE("L2/8: conv3d, div, max_pool3d, adaptive_avg_pool3d, add, sum over channels")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv3d(x, p["conv.weight"], p["conv.bias"])
    x = x / 2.0
    x = torch.max_pool3d(x, [2, 2, 2], [2, 2, 2])
    x = torch.adaptive_avg_pool3d(x, [1, 1, 1])
    x = x + p["bias"]
    return torch.sum(x, dim=[1])
)",
                           {tensor({128, 8, 16, 64, 64}),
                            params({{"conv.weight", {16, 8, 3, 3, 3}}, {"conv.bias", {16}}, {"bias", {16, 1, 1, 1}}})});
    CHECK(S(r["output_shape"]) == Shape{128, 1, 1, 1});
    REQUIRE(r["ops"].size() == 6);
    // conv out (128, 16, 14, 62, 62) = 110,215,168; MAC = 110,215,168·8·27 = 23,806,476,288 (sheet 2.38e10)
    CHECK(S(r["ops"][0]["output"]) == Shape{128, 16, 14, 62, 62});
    CHECK(I(r["ops"][0]["flops"]) == 2 * 23806476288LL + 110215168LL);
    CHECK(S(r["ops"][2]["output"]) == Shape{128, 16, 7, 31, 31}); // 13,776,896 elements
    CHECK(S(r["ops"][3]["output"]) == Shape{128, 16, 1, 1, 1});
    CHECK(r["ops"][2]["category"] == "pool");
    CHECK(r["ops"][5]["category"] == "reduction");
    // FLOPs: conv 47,723,167,744; div 110,215,168; max pool (1 per input) 110,215,168;
    // adaptive pool 13,776,896; add 2,048; sum 2,048 -> 47,957,379,072 (sheet 47.85 G w/o conv bias)
    CHECK(I(r["flops"]) == 47957379072LL);
    // bytes: conv 268,435,456 + 13,824 + 64 + 440,860,672 = 709,310,016; div 881,721,344;
    // pool 440,860,672 + 55,107,584 = 495,968,256; adaptive 55,107,584 + 8,192 = 55,115,776;
    // add 8,192 + 64 + 8,192 = 16,448; sum 8,192 + 512 = 8,704 -> 2,142,140,544
    CHECK(I(r["bytes_unfused"]) == 2142140544LL);
    // fused: 268,435,456 + (3,456 + 16 + 16)·4 + 512 = 268,449,920
    CHECK(I(r["bytes_fused"]) == 268449920LL);
}

TEST_CASE("L3/4: LeNet-5 with view(-1, 400)")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.relu(torch.conv2d(x, p["conv1.weight"], p["conv1.bias"]))
    x = torch.max_pool2d(x, kernel_size=[2, 2], stride=[2, 2])
    x = torch.relu(torch.conv2d(x, p["conv2.weight"], p["conv2.bias"]))
    x = torch.max_pool2d(x, kernel_size=[2, 2], stride=[2, 2])
    x = x.view(-1, 400)
    x = torch.relu(torch.linear(x, p["fc1.weight"], p["fc1.bias"]))
    x = torch.relu(torch.linear(x, p["fc2.weight"], p["fc2.bias"]))
    return torch.linear(x, p["fc3.weight"], p["fc3.bias"])
)",
                           {tensor({4096, 1, 32, 32}), params({{"conv1.weight", {6, 1, 5, 5}},
                                                               {"conv1.bias", {6}},
                                                               {"conv2.weight", {16, 6, 5, 5}},
                                                               {"conv2.bias", {16}},
                                                               {"fc1.weight", {120, 400}},
                                                               {"fc1.bias", {120}},
                                                               {"fc2.weight", {84, 120}},
                                                               {"fc2.bias", {84}},
                                                               {"fc3.weight", {20, 84}},
                                                               {"fc3.bias", {20}}})});
    CHECK(S(r["output_shape"]) == Shape{4096, 20});
    // conv, relu, pool, conv, relu, pool, view, linear, relu, linear, relu, linear
    REQUIRE(I(r["op_count"]) == 12);
    CHECK(r["ops"][6]["op"] == "aten::view");
    CHECK(r["ops"][6]["category"] == "view");
    CHECK(S(r["ops"][6]["output"]) == Shape{4096, 400});
    CHECK(I(r["ops"][6]["bytes"]) == 0);
    CHECK(I(r["ops"][6]["flops"]) == 0);
    // Per sample: MACs 117,600 + 240,000 + 48,000 + 10,080 + 1,680 = 417,360 (sheet) -> 834,720 FLOPs;
    // conv1 bias/relu/pool 3·4,704; conv2 3·1,600; fc1 bias+relu 2·120; fc2 2·84; fc3 bias 20
    // = 19,340 -> 854,060 per sample · 4096 = 3,498,229,760 (sheet 3.419 G counts only the MACs)
    CHECK(I(r["flops"]) == 3498229760LL);
    // fused: input 4096·1024·4 = 16,777,216 + params 62,556·4 = 250,224 + output 4096·20·4 = 327,680
    CHECK(I(r["bytes_fused"]) == 17355120LL);
}

TEST_CASE("broadcasting and its errors")
{
    const char* src = R"(
def forward(x: Tensor, y: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return x + y
)";
    // (8, 1, 5) + (4, 1) -> (8, 4, 5): 160 adds; bytes 4·(40 + 4 + 160) = 816
    const auto r = analyze(src, {tensor({8, 1, 5}), tensor({4, 1}), params()});
    CHECK(S(r["output_shape"]) == Shape{8, 4, 5});
    CHECK(I(r["flops"]) == 160);
    CHECK(I(r["bytes_unfused"]) == 816);
    const std::string e = errorOf(src, {tensor({3, 4}), tensor({5}), params()});
    CHECK(e.find("do not broadcast") != std::string::npos);
    CHECK(e.find("(3, 4)") != std::string::npos);
    CHECK(e.find("line 3") != std::string::npos);
    // A 0-d parameter (L2/3's sum_weight) and a per-channel bias
    const auto z = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return (x + p["s"]) * p["b"]
)",
                           {tensor({2, 3, 4, 5}), params({{"s", {}}, {"b", {3, 1, 1}}})});
    CHECK(S(z["output_shape"]) == Shape{2, 3, 4, 5});
    CHECK(I(z["ops"][0]["bytes"]) == 4 * (120 + 1 + 120));
}

TEST_CASE("an op without a rule is listed as uncounted, with its line; the totals say they are incomplete")
{
    // topk has no rule, but libtorch's meta kernel gives its shapes: the relu after it is counted.
    const auto r = analyze(R"(
def forward(a: Tensor, p: Dict[str, Tensor]) -> Tensor:
    c = torch.relu(a)
    v, i = torch.topk(c, 2)
    return torch.sigmoid(v)
)",
                           {tensor({4, 5}), params()});
    REQUIRE(r["uncounted"].size() == 1);
    const Json& u = r["uncounted"][0];
    CHECK(u["op"] == "aten::topk");
    CHECK(I(u["line"]) == 4);
    CHECK(u["shape_known"] == true);
    CHECK(I(u["index"]) == 1);
    CHECK(r["ops"][1]["category"] == "uncounted");
    CHECK(I(r["ops"][1]["flops"]) == 0);
    // its traffic is known from the shapes: 20 floats in, 8 floats and 8 int64 indices out
    CHECK(I(r["ops"][1]["bytes"]) == 4 * 20 + 4 * 8 + 8 * 8);
    CHECK(S(r["output_shape"]) == Shape{4, 2});
    CHECK(I(r["flops"]) == 20 + 3 * 8); // relu and sigmoid only
    // A counted forward says so with an empty list.
    const auto ok = analyze(R"(
def forward(a: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.relu(a)
)",
                            {tensor({4, 5}), params()});
    CHECK(ok["uncounted"].is_array());
    CHECK(ok["uncounted"].empty());
}

TEST_CASE("an uncounted op without a meta kernel leaves its result opaque: every op that reads it is uncounted")
{
    const auto r = analyze(R"(
def forward(a: Tensor, p: Dict[str, Tensor]) -> Tensor:
    v, i = torch.kthvalue(torch.relu(a), 2, 1)
    w = v.view(v.size(0), 1)
    return torch.sigmoid(w) + 1.0
)",
                           {tensor({4, 5}), params()});
    std::vector<std::string> ops;
    for (const auto& u : r["uncounted"])
        ops.push_back(u["op"].get<std::string>());
    CHECK(ops == std::vector<std::string>{"aten::kthvalue", "aten::view", "aten::sigmoid", "aten::add"});
    CHECK(r["uncounted"][0]["shape_known"] == false);
    CHECK(r["uncounted"][1]["reason"].get<std::string>().find("unknown") != std::string::npos);
    CHECK(r["output_shape"].is_null());
    CHECK(I(r["flops"]) == 20); // the relu: the rest cannot be counted
    CHECK(I(r["output_bytes"]) == 0);
}

TEST_CASE("control flow: data-dependent loop and if are errors, static ones are followed")
{
    const std::string loop = errorOf(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    while bool(torch.sum(x) > 0.0):
        x = x - 1.0
    return x
)",
                                     {tensor({4, 4}), params()});
    CHECK(loop.find("prim::Loop") != std::string::npos);
    CHECK(loop.find("line 3") != std::string::npos);
    const std::string branch = errorOf(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    if bool(torch.sum(x) > 0.0):
        x = torch.relu(x)
    return x
)",
                                       {tensor({4, 4}), params()});
    CHECK(branch.find("prim::If") != std::string::npos);
    // A loop with a static trip count runs its body three times; an `if` on a shape is known.
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    for i in range(3):
        x = torch.relu(x)
    if x.size(1) > 3:
        x = torch.sigmoid(x)
    else:
        x = torch.tanh(x)
    return x
)",
                           {tensor({4, 8}), params()});
    REQUIRE(I(r["op_count"]) == 4);
    CHECK(r["ops"][2]["op"] == "aten::relu");
    CHECK(r["ops"][3]["op"] == "aten::sigmoid");
    CHECK(I(r["flops"]) == 3 * 32 + 3 * 32); // relu 1/elem ×3, sigmoid 3/elem
}

TEST_CASE("helpers are inlined and sizes are tracked through arithmetic")
{
    const auto r = analyze(R"(
def block(x: Tensor, p: Dict[str, Tensor], name: str) -> Tensor:
    return torch.relu(torch.conv2d(x, p[name + ".weight"], p[name + ".bias"], 2, 1, 2))

def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = block(x, p, "c")
    n = x.size(0)
    h = y.size(2) * y.size(3)
    y = y.reshape(n // 2, 2, -1, h)
    y = y.flatten(1, 2)
    return torch.transpose(y, 1, 2).contiguous()
)",
                           {tensor({4, 3, 32, 32}), params({{"c.weight", {8, 3, 3, 3}}, {"c.bias", {8}}})});
    // conv stride 2, padding 1, dilation 2: floor((32 + 2 - 2·2 - 1)/2) + 1 = 15 -> (4, 8, 15, 15)
    CHECK(S(r["ops"][0]["output"]) == Shape{4, 8, 15, 15});
    // reshape(2, 2, -1, 225) -> (2, 2, 8, 225); flatten(1, 2) -> (2, 16, 225); transpose -> (2, 225, 16)
    CHECK(S(r["output_shape"]) == Shape{2, 225, 16});
    // transpose made it non-contiguous, so contiguous() copies: 2·7,200·4 bytes, category data
    const Json& last = r["ops"].back();
    CHECK(last["op"] == "aten::contiguous");
    CHECK(last["category"] == "data");
    CHECK(I(last["bytes"]) == 2 * 7200 * 4);
    CHECK(I(r["ops"][2]["bytes"]) == 0); // reshape of a contiguous tensor is a view
}

TEST_CASE("output-size rules: pools, adaptive pools, matmul broadcasting, reductions, cat")
{
    const auto r = analyze(R"(
def forward(x: Tensor, a: Tensor, b: Tensor, p: Dict[str, Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    y = torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], True)
    z = torch.avg_pool2d(x, [3, 3], [2, 2], [1, 1])
    w = torch.adaptive_avg_pool2d(x, [2, 3])
    m = torch.matmul(a, b)
    s = torch.softmax(m, -1)
    q = torch.mean(s, [1, 3], True)
    c = torch.cat([y, z], 1)
    st = torch.stack([w, w], 0)
    return torch.layer_norm(c, [3, 3], None, None, 1e-5, True), st, q
)",
                           {tensor({1, 2, 5, 5}), tensor({2, 1, 3, 4}), tensor({5, 4, 6}), params()});
    const Json& ops = r["ops"];
    CHECK(S(ops[0]["output"]) == Shape{1, 2, 3, 3}); // ceil_mode: ceil((5-2)/2)+1 = 3
    CHECK(S(ops[1]["output"]) == Shape{1, 2, 3, 3}); // floor((5+2-3)/2)+1 = 3
    CHECK(S(ops[2]["output"]) == Shape{1, 2, 2, 3});
    CHECK(S(ops[3]["output"]) == Shape{2, 5, 3, 6}); // batch (2,1) x (5,) -> (2,5)
    CHECK(I(ops[3]["flops"]) == 2 * 10 * 3 * 4 * 6);
    CHECK(I(ops[4]["flops"]) == 5 * 180);
    CHECK(S(ops[5]["output"]) == Shape{2, 1, 3, 1});
    CHECK(S(ops[6]["output"]) == Shape{1, 4, 3, 3});
    CHECK(I(ops[6]["flops"]) == 0);
    CHECK(I(ops[6]["bytes"]) == 4 * (18 + 18 + 36));
    CHECK(S(ops[7]["output"]) == Shape{2, 1, 2, 2, 3});
    CHECK(I(ops[8]["flops"]) == 7 * 36);
    REQUIRE(r["output_shapes"].size() == 3);
    CHECK(S(r["output_shapes"][0]) == Shape{1, 4, 3, 3});
    CHECK(S(r["output_shapes"][2]) == Shape{2, 1, 3, 1});
    // fused: inputs 4·(50 + 24 + 120) + outputs 4·(36 + 24 + 6)
    CHECK(I(r["bytes_fused"]) == 4 * (50 + 24 + 120) + 4 * (36 + 24 + 6));
    // Mismatches are errors, not guesses.
    CHECK(errorOf(R"(
def forward(a: Tensor, b: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.mm(a, b)
)",
                  {tensor({3, 4}), tensor({5, 6}), params()})
              .find("inner dimensions differ") != std::string::npos);
    CHECK(errorOf(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv2d(x, p["w"])
)",
                  {tensor({1, 3, 8, 8}), params({{"w", {4, 5, 3, 3}}})})
              .find("channels") != std::string::npos);
    CHECK(errorOf(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.relu(p["missing"] + x)
)",
                  {tensor({2}), params()})
              .find("'missing'") != std::string::npos);
}

TEST_CASE("batch_norm, linear without bias, in-place ops")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = torch.batch_norm(x, p["bn.weight"], p["bn.bias"], p["bn.running_mean"], p["bn.running_var"], True, 0.1, 1e-5, True)
    y = torch.relu_(y)
    y = y.flatten(1)
    return torch.linear(y, p["fc.weight"])
)",
                           {tensor({2, 4, 3, 3}), params({{"bn.weight", {4}},
                                                          {"bn.bias", {4}},
                                                          {"bn.running_mean", {4}},
                                                          {"bn.running_var", {4}},
                                                          {"fc.weight", {10, 36}}})});
    CHECK(S(r["output_shape"]) == Shape{2, 10});
    CHECK(I(r["ops"][0]["flops"]) == 7 * 72);
    CHECK(I(r["ops"][0]["bytes"]) == 4 * (72 + 16 + 72));
    CHECK(r["ops"][0]["category"] == "norm");
    CHECK(I(r["ops"][1]["bytes"]) == 4 * 2 * 72); // relu_ reads and writes like relu
    CHECK(I(r["ops"][3]["flops"]) == 2 * 2 * 36 * 10);
}

TEST_CASE("lists, tuples, chunk/split, slicing and factories")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    a, b = torch.chunk(x, 2, 1)
    parts = torch.split(x, [1, 3], 1)
    n = x.shape[0]
    z = torch.zeros([n, 2])
    return torch.cat([a * b, parts[1][:, :2], z.unsqueeze(0).squeeze(0)], 1)
)",
                           {tensor({4, 4}), params()});
    CHECK(S(r["output_shape"]) == Shape{4, 6});
    std::vector<std::string> names;
    for (const auto& op : r["ops"])
        names.push_back(op["op"].get<std::string>());
    CHECK(I(r["ops"][0]["output_count"]) == 2); // chunk: two views, 0 bytes
    CHECK(I(r["ops"][0]["bytes"]) == 0);
    CHECK(std::count(names.begin(), names.end(), "aten::cat") == 1);
    CHECK(std::count(names.begin(), names.end(), "aten::zeros") == 1);
    const Json& cat = r["ops"].back();
    CHECK(I(cat["bytes"]) == 4 * (8 + 8 + 8 + 24));
    CHECK(cat["inputs"].size() == 3);
}

// ---- op families (issue 37 item 3): each against a hand count on a small shape -----------------

TEST_CASE("conv transpose with groups, stride, padding and output_padding; grouped, depthwise, 1-D and 3-D convs")
{
    const auto r = analyze(R"(
def forward(x: Tensor, y: Tensor, z: Tensor, d: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    a = torch.conv_transpose2d(x, p["t.weight"], p["t.bias"], [2, 2], [1, 1], [1, 1], 2)
    b = torch.conv2d(y, p["g.weight"], None, 1, 0, 1, 2)
    c = torch.conv2d(d, p["dw.weight"], None, 1, 1, 1, 3)
    e = torch.conv1d(z, p["c1.weight"], None, [2], [1], [2])
    f = torch.conv_transpose3d(p["t3.input"], p["t3.weight"], None, [2, 1, 2], [0, 0, 0], [1, 0, 1])
    return [a, b, c, e, f]
)",
                           {tensor({1, 4, 5, 5}), tensor({2, 6, 8, 8}), tensor({2, 4, 20}), tensor({1, 3, 5, 5}),
                            params({{"t.weight", {4, 3, 3, 3}},
                                    {"t.bias", {6}},
                                    {"g.weight", {4, 3, 3, 3}},
                                    {"dw.weight", {3, 1, 3, 3}},
                                    {"c1.weight", {8, 4, 3}},
                                    {"t3.input", {1, 2, 3, 4, 5}},
                                    {"t3.weight", {2, 4, 2, 2, 2}}})});
    const Json& ops = r["ops"];
    // transposed, groups 2: C_out = 3·2 = 6; H = (5−1)·2 − 2·1 + (3−1) + 1 + 1 = 10 (torch agrees).
    // MAC = input elements · C_out/groups · k² = 100·3·9 = 2,700; 2·MAC + bias per output 600.
    CHECK(S(ops[0]["output"]) == Shape{1, 6, 10, 10});
    CHECK(I(ops[0]["flops"]) == 2 * 2700 + 600);
    CHECK(I(ops[0]["bytes"]) == 4 * (100 + 108 + 6 + 600));
    // grouped (6 channels in 2 groups of 3 -> 4): out (2, 4, 6, 6) = 288; MAC = 288·3·9 = 7,776
    CHECK(S(ops[1]["output"]) == Shape{2, 4, 6, 6});
    CHECK(I(ops[1]["flops"]) == 2 * 7776);
    CHECK(I(ops[1]["bytes"]) == 4 * (768 + 108 + 288));
    // depthwise, padding 1: out (1, 3, 5, 5) = 75; MAC = 75·1·9
    CHECK(S(ops[2]["output"]) == Shape{1, 3, 5, 5});
    CHECK(I(ops[2]["flops"]) == 2 * 75 * 9);
    // conv1d stride 2, padding 1, dilation 2: floor((20 + 2 − 4 − 1)/2) + 1 = 9; MAC = 144·4·3
    CHECK(S(ops[3]["output"]) == Shape{2, 8, 9});
    CHECK(I(ops[3]["flops"]) == 2 * 144 * 4 * 3);
    // conv_transpose3d, stride (2, 1, 2), output_padding (1, 0, 1): (1, 4, 7, 5, 11); MAC = 120·4·8
    CHECK(S(ops[4]["output"]) == Shape{1, 4, 7, 5, 11});
    CHECK(I(ops[4]["flops"]) == 2 * 120 * 4 * 8);
    // min_flops: 2 · outputs · C_in/groups, or the direct count where that is less (a transposed
    // conv whose strides leave outputs without taps): 600·2 < 2,700; 288·3; 75·1; 144·4; 3,080 < 3,840.
    CHECK(I(ops[0]["min_flops"]) == 2 * 600 * 2);
    CHECK(I(ops[1]["min_flops"]) == 2 * 288 * 3);
    CHECK(I(ops[2]["min_flops"]) == 2 * 75);
    CHECK(I(ops[3]["min_flops"]) == 2 * 144 * 4);
    CHECK(I(ops[4]["min_flops"]) == 2 * 1540 * 2);
    // A stride larger than the kernel: 4 of every 9 outputs get a tap, one each: the direct count.
    const auto sparse = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv_transpose2d(x, p["w"], None, [3, 3])
)",
                                {tensor({1, 2, 4, 4}), params({{"w", {2, 5, 2, 2}}})});
    CHECK(S(sparse["ops"][0]["output"]) == Shape{1, 5, 11, 11});
    CHECK(I(sparse["ops"][0]["min_flops"]) == I(sparse["ops"][0]["flops"]));
    // output_padding must be smaller than the stride or the dilation, as torch requires
    CHECK(errorOf(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv_transpose2d(x, p["w"], None, [1, 1], [0, 0], [1, 1])
)",
                  {tensor({1, 2, 4, 4}), params({{"w", {2, 2, 3, 3}}})})
              .find("output_padding") != std::string::npos);
}

TEST_CASE("pooling: ceil_mode, padding, adaptive max with indices")
{
    const auto r = analyze(R"(
def forward(x: Tensor, y: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    a = torch.max_pool2d(x, [3, 3], [2, 2], [0, 0], [1, 1], True)
    b = torch.max_pool2d(x, [3, 3], [2, 2], [0, 0], [1, 1], False)
    c = torch.avg_pool1d(y, [3], [2], [1], True)
    d = torch.avg_pool1d(y, [3], [2], [1], False)
    e, i = torch.adaptive_max_pool2d(x, [2, 2])
    return [a, b, c, d, e]
)",
                           {tensor({1, 1, 6, 6}), tensor({1, 2, 8}), params()});
    const Json& ops = r["ops"];
    // ceil((6 − 3)/2) + 1 = 3 (the last window starts at 4 < 6) against floor: 2
    CHECK(S(ops[0]["output"]) == Shape{1, 1, 3, 3});
    CHECK(S(ops[1]["output"]) == Shape{1, 1, 2, 2});
    CHECK(I(ops[0]["flops"]) == 36); // one per input element
    CHECK(I(ops[0]["bytes"]) == 4 * (36 + 9));
    // ceil((8 + 2 − 3)/2) + 1 = 5 (the last window starts at 8 < 8 + 1) against floor: 4
    CHECK(S(ops[2]["output"]) == Shape{1, 2, 5});
    CHECK(S(ops[3]["output"]) == Shape{1, 2, 4});
    // adaptive max: values (1, 1, 2, 2) and int64 indices
    CHECK(I(ops[4]["bytes"]) == 4 * 36 + 4 * 4 + 8 * 4);
}

TEST_CASE("norms: group, instance, RMS written out")
{
    const auto r = analyze(R"(
def forward(x: Tensor, y: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    a = torch.group_norm(x, 3, p["gn.weight"], p["gn.bias"], 1e-5, True)
    b = torch.instance_norm(y, p["in.weight"], p["in.bias"], None, None, True, 0.1, 1e-5, False)
    rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
    return [a, b, x / rms]
)",
                           {tensor({2, 6, 4}), tensor({2, 3, 4, 4}),
                            params({{"gn.weight", {6}}, {"gn.bias", {6}}, {"in.weight", {3}}, {"in.bias", {3}}})});
    const Json& ops = r["ops"];
    CHECK(I(ops[0]["flops"]) == 7 * 48);
    CHECK(I(ops[0]["bytes"]) == 4 * (48 + 6 + 6 + 48));
    CHECK(I(ops[1]["flops"]) == 7 * 96);
    // RMS: pow 48, mean 48 (out (2, 1, 4)), + eps 8, sqrt 8, division 48
    std::vector<std::string> names;
    int64_t flops = 0, bytes = 0;
    for (size_t i = 2; i < ops.size(); ++i) {
        names.push_back(ops[i]["op"].get<std::string>());
        flops += I(ops[i]["flops"]);
        bytes += I(ops[i]["bytes"]);
    }
    CHECK(names == std::vector<std::string>{"aten::pow", "aten::mean", "aten::add", "aten::sqrt", "aten::div"});
    CHECK(flops == 48 + 48 + 8 + 8 + 48);
    CHECK(bytes == 4 * ((48 + 48) + (48 + 8) + (8 + 8) + (8 + 8) + (48 + 8 + 48)));
}

TEST_CASE("attention written with matmul, and scaled_dot_product_attention (causal and not)")
{
    const auto r =
        analyze(R"(
def forward(q: Tensor, k: Tensor, v: Tensor, p: Dict[str, Tensor]) -> Tensor:
    T = q.size(2)
    att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / float(k.size(-1)) ** 0.5)
    att = att.masked_fill(p["bias"][:, :, :T, :T] == 0, float("-inf"))
    att = torch.softmax(att, dim=-1)
    return torch.matmul(att, v)
)",
                {tensor({1, 2, 4, 8}), tensor({1, 2, 4, 8}), tensor({1, 2, 4, 8}), params({{"bias", {1, 1, 6, 6}}})});
    // Q·Kᵀ 2·2·4·8·4 = 512, scale 32, mask compare 16, masked_fill 32, softmax 5·32, P·V 512
    CHECK(I(r["flops"]) == 512 + 32 + 16 + 32 + 160 + 512);
    CHECK(S(r["output_shape"]) == Shape{1, 2, 4, 8});
    CHECK(r["uncounted"].empty());

    auto sdpa = [](bool causal) {
        return analyze(std::string(R"(
def forward(q: Tensor, k: Tensor, v: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.scaled_dot_product_attention(q, k, v, None, 0.0, )") +
                           (causal ? "True" : "False") + ")\n",
                       {tensor({2, 3, 4, 8}), tensor({2, 3, 6, 8}), tensor({2, 3, 6, 5}), params()});
    };
    const auto full = sdpa(false);
    // L 4, S 6, E 8, Ev 5, batch 6: per pair 2·8 + 2·5 + 5 (softmax) + 1 (scale) = 32
    CHECK(S(full["output_shape"]) == Shape{2, 3, 4, 5});
    CHECK(I(full["flops"]) == 6 * 24 * 32);
    CHECK(I(full["bytes_unfused"]) == 4 * (192 + 288 + 180 + 120));
    CHECK(full["ops"][0]["category"] == "matmul");
    // causal (top-left): query i sees keys 0..i, 1 + 2 + 3 + 4 = 10 pairs of 24
    CHECK(I(sdpa(true)["flops"]) == 6 * 10 * 32);
}

TEST_CASE("recurrent: an LSTM cell, a two-layer LSTM, a bidirectional batch-first GRU")
{
    const auto cell = analyze(R"(
def forward(x: Tensor, h: Tensor, c: Tensor, p: Dict[str, Tensor]) -> Tensor:
    h1, c1 = torch.lstm_cell(x, [h, c], p["w_ih"], p["w_hh"], p["b_ih"], p["b_hh"])
    return h1
)",
                              {tensor({2, 3}), tensor({2, 4}), tensor({2, 4}),
                               params({{"w_ih", {16, 3}}, {"w_hh", {16, 4}}, {"b_ih", {16}}, {"b_hh", {16}}})});
    // per sample: 2·16·(3 + 4) = 224 for the products, 16 + 16 for the biases, 19·4 element-wise
    CHECK(I(cell["flops"]) == 2 * (224 + 32 + 76));
    CHECK(I(cell["bytes_unfused"]) == 4 * (6 + 8 + 8 + 48 + 64 + 16 + 16 + 8 + 8));
    CHECK(S(cell["output_shape"]) == Shape{2, 4});

    const auto lstm = analyze(R"(
def forward(x: Tensor, h: Tensor, c: Tensor, p: Dict[str, Tensor]) -> Tensor:
    w = [p["w_ih0"], p["w_hh0"], p["b_ih0"], p["b_hh0"], p["w_ih1"], p["w_hh1"], p["b_ih1"], p["b_hh1"]]
    out, hn, cn = torch.lstm(x, [h, c], w, True, 2, 0.0, False, False, False)
    return out
)",
                              {tensor({5, 2, 3}), tensor({2, 2, 4}), tensor({2, 2, 4}),
                               params({{"w_ih0", {16, 3}},
                                       {"w_hh0", {16, 4}},
                                       {"b_ih0", {16}},
                                       {"b_hh0", {16}},
                                       {"w_ih1", {16, 4}},
                                       {"w_hh1", {16, 4}},
                                       {"b_ih1", {16}},
                                       {"b_hh1", {16}}})});
    // 10 steps (T 5 · B 2) per layer: layer 0 224 + 32 + 76 = 332, layer 1 2·16·8 + 32 + 76 = 364
    CHECK(I(lstm["flops"]) == 10 * 332 + 10 * 364);
    CHECK(S(lstm["output_shape"]) == Shape{5, 2, 4});
    CHECK(I(lstm["bytes_unfused"]) == 4 * (30 + 16 + 16 + 304 + 40 + 16 + 16));

    const auto gru = analyze(R"(
def forward(x: Tensor, h: Tensor, p: Dict[str, Tensor]) -> Tensor:
    w = [p["f.w_ih"], p["f.w_hh"], p["f.b_ih"], p["f.b_hh"], p["r.w_ih"], p["r.w_hh"], p["r.b_ih"], p["r.b_hh"]]
    out, hn = torch.gru(x, h, w, True, 1, 0.0, False, True, True)
    return hn
)",
                             {tensor({2, 5, 3}), tensor({2, 2, 4}),
                              params({{"f.w_ih", {12, 3}},
                                      {"f.w_hh", {12, 4}},
                                      {"f.b_ih", {12}},
                                      {"f.b_hh", {12}},
                                      {"r.w_ih", {12, 3}},
                                      {"r.w_hh", {12, 4}},
                                      {"r.b_ih", {12}},
                                      {"r.b_hh", {12}}})});
    // per step and direction: 2·12·7 = 168, biases 24, 14·4 = 56 element-wise; 10 steps, 2 directions
    CHECK(I(gru["flops"]) == 2 * 10 * (168 + 24 + 56));
    CHECK(S(gru["output_shape"]) == Shape{2, 2, 4});
    CHECK(S(gru["ops"][0]["output"]) == Shape{2, 5, 8});
}

TEST_CASE("reductions and scans: sum, mean, max, min, argmax, argmin, prod, cumsum, cumprod, norms")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    a = torch.sum(x, 1)
    b = torch.mean(x, [0], True)
    c, ci = torch.max(x, 1)
    d = torch.min(x, 0)[0]
    e = torch.argmax(x, 0)
    f = torch.argmin(x, 1)
    g = torch.prod(x, 1, True)
    h = torch.cumsum(x, 1)
    i = torch.cumprod(x, 0)
    j = torch.norm(x, 2, [1], True)
    k = torch.frobenius_norm(x, [0, 1])
    m = torch.linalg_vector_norm(x, 2.0, [1])
    return [a, b, c, d, e, f, g, h, i, j, k, m]
)",
                           {tensor({4, 6}), params()});
    const Json& ops = r["ops"];
    std::map<std::string, const Json*> by;
    for (const auto& op : ops)
        by[op["op"].get<std::string>()] = &op;
    CHECK(I((*by["aten::sum"])["flops"]) == 24);
    CHECK(I((*by["aten::sum"])["bytes"]) == 4 * (24 + 4));
    CHECK(S((*by["aten::mean"])["output"]) == Shape{1, 6});
    CHECK(I((*by["aten::max"])["bytes"]) == 4 * 24 + 4 * 4 + 8 * 4); // values and int64 indices
    CHECK(I((*by["aten::argmax"])["bytes"]) == 4 * 24 + 8 * 6);
    CHECK(S((*by["aten::argmin"])["output"]) == Shape{4});
    CHECK(S((*by["aten::prod"])["output"]) == Shape{4, 1});
    CHECK(I((*by["aten::cumsum"])["flops"]) == 24);
    CHECK(S((*by["aten::cumsum"])["output"]) == Shape{4, 6});
    CHECK(I((*by["aten::cumsum"])["bytes"]) == 4 * 48);
    CHECK(I((*by["aten::cumprod"])["flops"]) == 24);
    CHECK(I((*by["aten::norm"])["flops"]) == 3 * 24);
    CHECK(S((*by["aten::norm"])["output"]) == Shape{4, 1});
    REQUIRE(by.count("aten::frobenius_norm") == 1);
    CHECK(I((*by["aten::frobenius_norm"])["flops"]) == 3 * 24);
    CHECK(S((*by["aten::frobenius_norm"])["output"]) == Shape{});
    REQUIRE(by.count("aten::linalg_vector_norm") == 1); // what torch.norm becomes in PyTorch 2
    CHECK(I((*by["aten::linalg_vector_norm"])["flops"]) == 3 * 24);
    CHECK(S((*by["aten::linalg_vector_norm"])["output"]) == Shape{4});
    CHECK(r["uncounted"].empty());
}

TEST_CASE("losses: mse, cross_entropy, kl_div batchmean, smooth_l1, huber, triplet margin, cosine similarity, hinge")
{
    const auto r =
        analyze(R"(
def forward(a: Tensor, b: Tensor, c: Tensor, t: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    # reduction: 0 none, 1 mean, 2 sum (the aten calls torch.nn.functional makes)
    mse = torch.mse_loss(a, b, 1)
    ce = torch.cross_entropy_loss(p["logits"], t, None, 1, -100, 0.0)
    kl = torch.kl_div(torch.log(a), b, 2) / a.size(0)
    sl1 = torch.smooth_l1_loss(a, b, 1, 1.0)
    hub = torch.huber_loss(a, b, 0, 1.0)
    tri = torch.triplet_margin_loss(a, b, c, 1.0, 2.0, 1e-6, False, 1)
    cos = torch.cosine_similarity(a, b, 1, 1e-8)
    hinge = torch.mean(torch.clamp(1 - a * b, min=0))
    return [mse, ce, kl, sl1, hub, tri, cos, hinge]
)",
                {tensor({4, 5}), tensor({4, 5}), tensor({4, 5}), tensor({4}, 8), params({{"logits", {4, 10}}})});
    std::map<std::string, const Json*> by;
    for (const auto& op : r["ops"])
        by[op["op"].get<std::string>()] = &op;
    // mse: difference and square per element (2), the mean's add (1); a 0-d result
    CHECK(I((*by["aten::mse_loss"])["flops"]) == 3 * 20);
    CHECK(I((*by["aten::mse_loss"])["bytes"]) == 4 * (20 + 20 + 1));
    CHECK(S((*by["aten::mse_loss"])["output"]) == Shape{});
    // cross entropy: log_softmax 5 per logit, 2 per sample to pick and add, 1 per sample to reduce
    CHECK(I((*by["aten::cross_entropy_loss"])["flops"]) == 5 * 40 + 2 * 4 + 4);
    CHECK(I((*by["aten::cross_entropy_loss"])["bytes"]) == 4 * 40 + 8 * 4 + 4);
    // kl_div with batchmean: a sum (3 + 1 per element), then a division by the batch
    CHECK(I((*by["aten::kl_div"])["flops"]) == 4 * 20);
    CHECK(I((*by["aten::smooth_l1_loss"])["flops"]) == 5 * 20);
    CHECK(I((*by["aten::huber_loss"])["flops"]) == 4 * 20); // reduction none: no sum
    CHECK(S((*by["aten::huber_loss"])["output"]) == Shape{4, 5});
    // triplet: two distances of 4 per element, 5 per sample, 1 per sample for the mean
    CHECK(I((*by["aten::triplet_margin_loss"])["flops"]) == 2 * 4 * 20 + 5 * 4 + 4);
    CHECK(I((*by["aten::triplet_margin_loss"])["bytes"]) == 4 * (60 + 1));
    CHECK(I((*by["aten::cosine_similarity"])["flops"]) == 6 * 20 + 4 * 4);
    CHECK(S((*by["aten::cosine_similarity"])["output"]) == Shape{4});
    CHECK(r["uncounted"].empty());
}

TEST_CASE("activations: per-element FLOPs of each")
{
    const auto r = analyze(R"(
def forward(x: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    return [torch.gelu(x), torch.gelu(x, approximate="tanh"), torch.selu(x), torch.elu(x), torch.hardtanh(x, -2.0, 2.0),
            torch.softplus(x), x / (torch.abs(x) + 1), x * torch.sigmoid(x), torch.tanh(x), torch.sigmoid(x),
            torch.hardsigmoid(x), torch.leaky_relu(x, 0.1), torch.mish(x), torch.relu6(x), torch.log_sigmoid(x),
            torch.silu(x), torch.hardswish(x), torch.relu(x)]
)",
                           {tensor({2, 3}), params()});
    std::vector<std::pair<std::string, int64_t>> got;
    for (const auto& op : r["ops"])
        got.emplace_back(op["op"].get<std::string>(), I(op["flops"]) / 6);
    const std::vector<std::pair<std::string, int64_t>> want = {
        {"aten::gelu", 4},     {"aten::gelu", 4},        {"aten::selu", 3},       {"aten::elu", 3},
        {"aten::hardtanh", 1}, {"aten::softplus", 3},    {"aten::abs", 1},        {"aten::add", 1},
        {"aten::div", 1},      {"aten::sigmoid", 3},     {"aten::mul", 1},        {"aten::tanh", 1},
        {"aten::sigmoid", 3},  {"aten::hardsigmoid", 2}, {"aten::leaky_relu", 1}, {"aten::mish", 4},
        {"aten::relu6", 1},    {"aten::log_sigmoid", 4}, {"aten::silu", 4},       {"aten::hardswish", 3},
        {"aten::relu", 1}};
    CHECK(got == want);
    CHECK(r["uncounted"].empty());
}

TEST_CASE("matmul variants and einsum")
{
    const auto r = analyze(R"(
def forward(a: Tensor, b: Tensor, c: Tensor, v: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    x = torch.addmm(p["bias"], a, b)
    y = torch.einsum("bij,bjk->bik", c, p["w"])
    z = torch.einsum("...ij,...jk->...ik", c, p["w"])
    i = torch.einsum("ij,jk", a, b)
    o = torch.einsum("i,j->ij", v, v)
    t = torch.einsum("ij->ji", a)
    s = torch.einsum("ij,jk,kl->il", a, b, p["m"])
    return [x, y, z, i, o, t.contiguous(), s]
)",
                           {tensor({3, 4}), tensor({4, 5}), tensor({2, 3, 4}), tensor({3}),
                            params({{"bias", {5}}, {"w", {2, 4, 5}}, {"m", {5, 2}}})});
    const Json& ops = r["ops"];
    CHECK(I(ops[0]["flops"]) == 2 * 3 * 4 * 5 + 15); // addmm: products and the addend
    // b i j k = 2·3·4·5 points, j summed away: a multiply-add each
    CHECK(S(ops[1]["output"]) == Shape{2, 3, 5});
    CHECK(I(ops[1]["flops"]) == 2 * 120);
    CHECK(ops[1]["category"] == "matmul");
    CHECK(S(ops[2]["output"]) == Shape{2, 3, 5});
    CHECK(I(ops[2]["flops"]) == 2 * 120);
    // implicit output: the labels used once, alphabetically: ik
    CHECK(S(ops[3]["output"]) == Shape{3, 5});
    CHECK(I(ops[3]["flops"]) == 2 * 60);
    // an outer product sums nothing: one multiply per point
    CHECK(S(ops[4]["output"]) == Shape{3, 3});
    CHECK(I(ops[4]["flops"]) == 9);
    CHECK(ops[4]["category"] == "elementwise");
    // a transpose is a view, and a later contiguous() copies it
    CHECK(ops[5]["category"] == "view");
    CHECK(I(ops[5]["bytes"]) == 0);
    CHECK(ops[7]["category"] == "data");
    // three operands from the left: (ij,jk) over i j k = 60 → ik, then (ik,kl) over i k l = 30 → il
    CHECK(S(ops[6]["output"]) == Shape{3, 2});
    CHECK(I(ops[6]["flops"]) == 2 * 60 + 2 * 30);
}

TEST_CASE("clamp, where, masked ops, gathers and layout ops: bytes only where they copy")
{
    const auto r = analyze(R"(
def forward(x: Tensor, m: Tensor, idx: Tensor, p: Dict[str, Tensor]) -> List[Tensor]:
    a = torch.where(m, x, torch.clamp(x, min=0.0, max=1.0))
    b = x.masked_fill(m, 0.0)
    c = x[idx]
    d = torch.index_select(x, 1, idx)
    e = torch.flip(x, [0])
    f = x.T.contiguous()
    g = torch.dropout(x, 0.5, False)
    h = torch.tril(x)
    return [a, b, c, d, e, f, g, h]
)",
                           {tensor({5, 5}), tensor({5, 5}, 1), tensor({4}, 8), params()});
    std::vector<std::string> names;
    for (const auto& op : r["ops"])
        names.push_back(op["op"].get<std::string>());
    const Json& ops = r["ops"];
    CHECK(ops[0]["op"] == "aten::clamp");
    CHECK(I(ops[1]["flops"]) == 25);                            // where: one select per element
    CHECK(I(ops[1]["bytes"]) == 25 + 4 * 25 + 4 * 25 + 4 * 25); // a bool mask is one byte
    CHECK(I(ops[2]["bytes"]) == 25 + 4 * 25 + 4 * 25);
    // x[idx]: 4 rows of 5 gathered; the int64 indices read, the rows read and written once
    CHECK(S(ops[3]["output"]) == Shape{4, 5});
    CHECK(I(ops[3]["bytes"]) == 8 * 4 + 2 * 4 * 20);
    CHECK(S(ops[4]["output"]) == Shape{5, 4});
    CHECK(ops[5]["op"] == "aten::flip");
    CHECK(I(ops[5]["bytes"]) == 2 * 4 * 25);
    CHECK(ops[6]["op"] == "aten::numpy_T");
    CHECK(I(ops[6]["bytes"]) == 0);
    CHECK(ops[7]["category"] == "data"); // contiguous() of the transpose copies
    CHECK(ops[8]["op"] == "aten::dropout");
    CHECK(I(ops[8]["bytes"]) == 0); // identity in eval
    CHECK(ops[9]["op"] == "aten::tril");
    CHECK(I(ops[9]["flops"]) == 25);
    CHECK(r["uncounted"].empty());
}

// ---- every task file at full scale against the facts sheet -------------------------------------

namespace {

struct SheetRow
{
    Shape output;
    double gflop;    // sheet §3.3 / §4.1 / §5.1
    double minBytes; // sheet "min bytes" (decimal units)
};

const std::map<std::string, SheetRow>& sheet()
{
    static const std::map<std::string, SheetRow> rows = {
        {"L1/1", {{4096, 4096}, 137.4, 201.3e6}},
        {"L1/2", {{2048, 4096}, 137.4, 234.9e6}},
        {"L1/3", {{128, 512, 2048}, 274.9, 1.88e9}},
        {"L1/4", {{2048, 1}, 4.295, 8.59e9}},
        {"L1/5", {{65536, 16384}, 1.074, 8.59e9}},
        {"L1/6", {{256, 256}, 68.72, 1.07e9}},
        {"L1/7", {{32768, 32768}, 137.4, 4.31e9}},
        {"L1/8", {{8205, 5921}, 286.5, 361.0e6}},
        {"L1/9", {{32768, 32768}, 68.72, 4.30e9}},
        {"L1/10", {{16, 1024, 768}, 51.54, 190.8e6}},
        {"L2/1", {{128, 128, 126, 126}, 300.2, 1.58e9}},
        {"L2/2", {{128, 64, 256, 256}, 157.3, 2.68e9}},
        {"L2/3", {{32, 64, 16, 32, 32}, 60.53, 201.5e6}},
        {"L2/4", {{64, 128, 254, 254}, 613.1, 3.19e9}},
        {"L2/5", {{32, 64, 513, 513}, 276.0, 2.69e9}},
        {"L2/6", {{128, 16, 3, 7, 7}, 4.338, 26.4e6}},
        {"L2/7", {{64, 32, 30, 62, 62}, 104.4, 1.21e9}},
        {"L2/8", {{128, 1, 1, 1}, 47.85, 268.4e6}},
        {"L2/9", {{1024, 8192}, 137.5, 335.6e6}},
        {"L2/10", {{128, 64, 1, 1}, 619.3, 2.15e9}},
        {"L3/1", {{128, 8192}, 171.8, 2.70e9}},
        {"L3/2", {{128, 16384}, 549.8, 8.61e9}},
        {"L3/3", {{1024, 8192}, 66.57, 197.2e6}},
        {"L3/4", {{4096, 20}, 3.419, 17.4e6}},
        {"L3/5", {{1024, 1000}, 2325, 870.2e6}},
        {"L3/6", {{10, 512, 224, 224}, 376.9, 1.99e9}},
        {"L3/7", {{10, 1000}, 31.65, 34.1e6}},
        {"L3/8", {{10, 64, 224, 224}, 38.92, 134.6e6}},
        {"L3/9", {{2, 1000}, 7.256, 48.0e6}},
        {"L3/10", {{10, 1000}, 156.0, 184.3e6}},
    };
    return rows;
}

std::vector<ArgInfo> argsFor(const kwb::Task& t, kwb::Scale s)
{
    std::vector<ArgInfo> args;
    for (size_t i = 0; i < t.inputs.size(); ++i) {
        const auto& in = t.inputs[i];
        ArgInfo a;
        if (in.isTensor()) {
            a.kind = ArgInfo::Tensor;
            a.shape = t.inputShape(i, s);
            a.elemBytes = kwb::dtypeSize(in.dtype);
        } else {
            a.kind = in.kind == "int" ? ArgInfo::Int : ArgInfo::Float;
            a.value = in.value;
        }
        args.push_back(a);
    }
    ArgInfo p;
    p.kind = ArgInfo::ParamDict;
    for (size_t i = 0; i < t.params.size(); ++i)
        p.dict[t.params[i].name] = t.paramShape(i, s);
    args.push_back(p);
    return args;
}

} // namespace

TEST_CASE("every task file: every op counted at both scales; full-scale analysis matches the facts sheet")
{
    const kwb::TaskSet set = kwb::loadTaskDir(std::string(KWB_SOURCE_DIR) + "/tasks");
    for (const auto& e : set.errors)
        FAIL_CHECK("task file error: " << e.toString());
    REQUIRE(set.tasks.size() >= 30);
    std::printf("\n%-6s %12s %12s %7s   %12s %12s %7s   %s\n", "task", "GFLOP", "sheet", "diff", "fused MB", "sheet MB",
                "diff", "unfused/fused");
    int analysed = 0, convTasks = 0;
    for (const kwb::Task& t : set.tasks) {
        CAPTURE(t.id);
        if (t.isKernelBenchOnly())
            continue; // no forward of ours to analyse (task-format.md)
        Json r, smoke;
        try {
            // Compiled as the worker compiles it (its resolver knows torch.nn.functional, F, math).
            const auto cu = kwb::compileScript(t.forward);
            const auto graph = kwb::inlinedGraph(kwb::forwardFunction(*cu));
            r = kwb::analyzeGraph(graph, argsFor(t, kwb::Scale::Full));
            smoke = kwb::analyzeGraph(graph, argsFor(t, kwb::Scale::Smoke));
        } catch (const std::exception& e) {
            FAIL_CHECK(t.id << ": " << std::string(e.what()));
            continue;
        }
        ++analysed;
        for (const Json& u : r["uncounted"])
            FAIL_CHECK(t.id << ": cannot count " << u.dump());
        CHECK(smoke["uncounted"].empty());
        // The roofline floor counts every conv (issue 39 item 5): its channel contraction, never
        // more than its direct FLOPs, and the matmuls whole.
        double bound = 0;
        bool conv = false;
        for (const Json& op : r["ops"]) {
            if (op["category"] == "conv") {
                conv = true;
                CHECK(I(op["min_flops"]) > 0);
                CHECK(I(op["min_flops"]) <= I(op["flops"]));
                bound += double(I(op["min_flops"]));
            } else if (op["category"] == "matmul") {
                bound += double(I(op["flops"]));
            }
        }
        CHECK(kwb::roofline::boundFlops(r) == bound);
        CHECK(r["bound_flops"].get<double>() == bound);
        convTasks += conv ? 1 : 0;
        auto it = sheet().find(t.id);
        if (it == sheet().end()) {
            MESSAGE(t.id << ": not in the facts sheet; analysed without a reference");
            continue;
        }
        const SheetRow& row = it->second;
        CHECK(S(r["output_shape"]) == row.output);
        const double gflop = double(I(r["flops"])) / 1e9;
        const double dF = (gflop - row.gflop) / row.gflop;
        const double mb = double(I(r["bytes_fused"])) / 1e6;
        const double dB = (mb - row.minBytes / 1e6) / (row.minBytes / 1e6);
        std::printf("%-6s %12.4g %12.4g %+6.2f%%   %12.1f %12.1f %+6.2f%%   %.2f\n", t.id.c_str(), gflop, row.gflop,
                    100 * dF, mb, row.minBytes / 1e6, 100 * dB,
                    double(I(r["bytes_unfused"])) / double(I(r["bytes_fused"])));
        CHECK(std::fabs(dF) < 0.05);
        CHECK(std::fabs(dB) < 0.05);
    }
    MESSAGE(analysed << " task files analysed");
    MESSAGE(convTasks << " of them with convolutions in their roofline floor");
    CHECK(convTasks >= 100);
}
