#include "worker/python/scripthost.h"

#include "worker/answers/sourcecheck.h"
#include "worker/device/cudadriver.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/lexer.h>
#include <torch/csrc/jit/frontend/parser.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/runtime/custom_operator.h>

#include <pthread.h>

#include <cctype>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace kwb {
namespace jit = torch::jit;

namespace {

LaunchContext* g_launch = nullptr;

// torch.nn.functional wrappers whose Python signature differs from the aten builtin of the same
// name (argument order, or an `inplace` flag the builtin lacks). Everything else under F maps
// straight to the builtin, whose leading arguments match the Python function.
const char* kFunctionalPrelude = R"TS(
def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor], weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)
def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, False)
def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    return torch.group_norm(input, num_groups, weight, bias, eps, False)
def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    return torch.layer_norm(input, normalized_shape, weight, bias, eps, False)
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return torch.dropout(input, p, training)
def softmax(input: Tensor, dim: int, _stacklevel: int = 3, dtype: Optional[int] = None) -> Tensor:
    return torch.softmax(input, dim, dtype)
def log_softmax(input: Tensor, dim: int, _stacklevel: int = 3, dtype: Optional[int] = None) -> Tensor:
    return torch.log_softmax(input, dim, dtype)
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.relu(input)
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.hardtanh(input, 0.0, 6.0)
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return torch.gelu(input, approximate=approximate)
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return torch.leaky_relu(input, negative_slope)
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    return torch.hardtanh(input, min_val, max_val)
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return torch.elu(input, alpha)
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.selu(input)
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.silu(input)
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.mish(input)
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.hardswish(input)
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return torch.hardsigmoid(input)
def sigmoid(input: Tensor) -> Tensor:
    return torch.sigmoid(input)
def tanh(input: Tensor) -> Tensor:
    return torch.tanh(input)
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return torch.softplus(input, beta, threshold)
)TS";

jit::CompilationUnit& functionalPrelude()
{
    static std::shared_ptr<jit::CompilationUnit> cu = [] {
        auto unit = std::make_shared<jit::CompilationUnit>();
        unit->define(c10::nullopt, kFunctionalPrelude, jit::nativeResolver(), nullptr);
        return unit;
    }();
    return *cu;
}

struct FunctionalNamespace : jit::SugaredValue
{
    std::string kind() const override { return "torch.nn.functional"; }
    std::shared_ptr<jit::SugaredValue> attr(const jit::SourceRange& loc, jit::GraphFunction& m,
                                            const std::string& field) override
    {
        if (jit::Function* fn = functionalPrelude().find_function(c10::QualifiedName(field)))
            return std::make_shared<jit::FunctionValue>(fn);
        return std::make_shared<jit::BuiltinModule>("aten")->attr(loc, m, field);
    }
};

struct NnNamespace : jit::SugaredValue
{
    std::string kind() const override { return "torch.nn"; }
    std::shared_ptr<jit::SugaredValue> attr(const jit::SourceRange& loc, jit::GraphFunction&,
                                            const std::string& field) override
    {
        if (field == "functional")
            return std::make_shared<FunctionalNamespace>();
        throw jit::ErrorReport(loc) << "torch.nn." << field
                                    << " is not available in host code: write a function, not a module; "
                                       "use torch.* or torch.nn.functional.* ops";
    }
};

// torch.float32 and friends: TorchScript represents a dtype as its ScalarType number.
const std::unordered_map<std::string, c10::ScalarType>& dtypeNames()
{
    static const std::unordered_map<std::string, c10::ScalarType> names = {
        {"float32", at::kFloat},     {"float", at::kFloat},    {"float16", at::kHalf},  {"half", at::kHalf},
        {"bfloat16", at::kBFloat16}, {"float64", at::kDouble}, {"double", at::kDouble}, {"int32", at::kInt},
        {"int", at::kInt},           {"int64", at::kLong},     {"long", at::kLong},     {"int16", at::kShort},
        {"int8", at::kChar},         {"uint8", at::kByte},     {"bool", at::kBool}};
    return names;
}

struct TorchNamespace : jit::SugaredValue
{
    std::string kind() const override { return "torch"; }
    std::shared_ptr<jit::SugaredValue> attr(const jit::SourceRange& loc, jit::GraphFunction& m,
                                            const std::string& field) override
    {
        if (field == "nn")
            return std::make_shared<NnNamespace>();
        if (auto it = dtypeNames().find(field); it != dtypeNames().end())
            return std::make_shared<jit::SimpleValue>(m.graph()->insertConstant(static_cast<int64_t>(it->second), loc));
        return std::make_shared<jit::BuiltinModule>("aten")->attr(loc, m, field);
    }
};

struct KbResolver : jit::Resolver
{
    std::shared_ptr<jit::SugaredValue> resolveValue(const std::string& name, jit::GraphFunction& m,
                                                    const jit::SourceRange& loc) override
    {
        if (name == "kb")
            return std::make_shared<jit::BuiltinModule>("kb");
        if (name == "torch")
            return std::make_shared<TorchNamespace>();
        if (name == "F")
            return std::make_shared<FunctionalNamespace>();
        if (name == "math")
            return std::make_shared<jit::BuiltinModule>("aten");
        return jit::nativeResolver()->resolveValue(name, m, loc);
    }
    c10::TypePtr resolveType(const std::string& name, const jit::SourceRange& loc) override
    {
        return jit::nativeResolver()->resolveType(name, loc);
    }
};

// ---- kb.launch --------------------------------------------------------------------------------

void packArgument(const c10::IValue& v, std::size_t size, std::size_t index, const std::string& kernel,
                  std::vector<char>& out)
{
    out.assign(size, 0);
    auto fail = [&](const std::string& what) {
        TORCH_CHECK(false, "kb.launch(\"", kernel, "\"): argument ", index, " ", what);
    };
    if (v.isTensor()) {
        const at::Tensor& t = v.toTensor();
        if (!t.is_cuda())
            fail("is a CPU tensor; kernels need CUDA tensors (create them on x.device)");
        if (!t.is_contiguous())
            fail("is a non-contiguous tensor; call .contiguous() first");
        if (size != sizeof(void*))
            fail("is a Tensor but the kernel's parameter is " + std::to_string(size) + " bytes, not a pointer");
        void* p = t.data_ptr();
        std::memcpy(out.data(), &p, sizeof p);
    } else if (v.isInt() || v.isBool()) {
        int64_t x = v.isInt() ? v.toInt() : (v.toBool() ? 1 : 0);
        if (size == 8) {
            std::memcpy(out.data(), &x, 8);
        } else if (size == 4) {
            if (x > INT32_MAX || x < INT32_MIN) {
                if (x <= UINT32_MAX && x >= 0) {
                    uint32_t u = static_cast<uint32_t>(x);
                    std::memcpy(out.data(), &u, 4);
                    return;
                }
                fail("= " + std::to_string(x) + " does not fit the kernel's 4-byte parameter; declare it long long");
            }
            int32_t w = static_cast<int32_t>(x);
            std::memcpy(out.data(), &w, 4);
        } else if (size == 2 || size == 1) {
            std::memcpy(out.data(), &x, size); // little-endian low bytes
        } else {
            fail("is an int but the kernel's parameter is " + std::to_string(size) + " bytes");
        }
    } else if (v.isDouble()) {
        double x = v.toDouble();
        if (size == 8) {
            std::memcpy(out.data(), &x, 8);
        } else if (size == 4) {
            float f = static_cast<float>(x);
            std::memcpy(out.data(), &f, 4);
        } else {
            fail("is a float but the kernel's parameter is " + std::to_string(size) + " bytes");
        }
    } else {
        fail("has type " + v.tagKind() + "; pass Tensors, ints or floats");
    }
}

std::vector<int64_t> dims3(const c10::IValue& v, const char* what, const std::string& kernel)
{
    std::vector<int64_t> d = v.toIntVector();
    TORCH_CHECK(!d.empty() && d.size() <= 3, "kb.launch(\"", kernel, "\"): ", what, " needs 1 to 3 entries, got ",
                d.size());
    while (d.size() < 3)
        d.push_back(1);
    for (int64_t x : d)
        TORCH_CHECK(x >= 1, "kb.launch(\"", kernel, "\"): ", what, " entries must be >= 1, got ", x);
    return d;
}

void launchFromStack(jit::Stack& stack, bool withShared)
{
    const int64_t n = stack.back().toInt();
    stack.pop_back();
    std::vector<c10::IValue> args(stack.end() - n, stack.end());
    stack.erase(stack.end() - n, stack.end());

    const std::string name = args.at(0).toStringRef();
    TORCH_CHECK(g_launch && g_launch->module, "kb.launch(\"", name,
                "\"): no compiled CUDA module is loaded (the answer has no cuda block, "
                "or this code runs without a GPU)");
    const auto grid = dims3(args.at(1), "grid", name);
    const auto block = dims3(args.at(2), "block", name);
    TORCH_CHECK(grid[0] < (int64_t(1) << 31) && grid[1] < 65536 && grid[2] < 65536, "kb.launch(\"", name, "\"): grid [",
                grid[0], ", ", grid[1], ", ", grid[2], "] exceeds [2^31-1, 65535, 65535]");
    TORCH_CHECK(block[0] * block[1] * block[2] <= 1024 && block[2] <= 64, "kb.launch(\"", name, "\"): block [",
                block[0], ", ", block[1], ", ", block[2], "] exceeds 1024 threads (z at most 64)");
    std::size_t first = 3;
    int64_t shared = 0;
    if (withShared) {
        shared = args.at(3).toInt();
        TORCH_CHECK(shared >= 0, "kb.launch_smem(\"", name, "\"): shared_bytes must be >= 0");
        first = 4;
    }

    std::string err;
    std::vector<std::size_t> sizes;
    std::vector<LoadedModule::Param> params;
    if (g_launch->module->paramInfo(name, &params, &err)) {
        for (const auto& p : params)
            sizes.push_back(p.size);
    } else if (auto it = g_launch->declaredSizes.find(name); it != g_launch->declaredSizes.end()) {
        sizes = it->second; // an old driver without cuFuncGetParamInfo: sizes from the declaration
    } else {
        TORCH_CHECK(false, "kb.launch(\"", name, "\"): ", err);
    }
    const std::size_t given = args.size() - first;
    TORCH_CHECK(given == sizes.size(), "kb.launch(\"", name, "\"): the kernel takes ", sizes.size(), " arguments, ",
                given, " given");
    std::vector<std::vector<char>> buffers(given);
    for (std::size_t i = 0; i < given; ++i)
        packArgument(args[first + i], sizes[i], i, name, buffers[i]);

    const std::array<unsigned, 3> g = {unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2])};
    const std::array<unsigned, 3> b = {unsigned(block[0]), unsigned(block[1]), unsigned(block[2])};
    err = g_launch->module->launch(name, g, b, static_cast<unsigned>(shared), static_cast<CUstream>(g_launch->stream),
                                   buffers);
    TORCH_CHECK(err.empty(), "kb.launch(\"", name, "\"): ", err);
    ++g_launch->launches;
}

// ---- sandbox ---------------------------------------------------------------------------------

// Ops that are refused with a specific reason (the rest of what is not allowed gets a generic one).
const std::unordered_map<std::string, std::string>& deniedOps()
{
    static const std::unordered_map<std::string, std::string> denied = {
        {"prim::Print", "writes to the console"},
        {"aten::warn", "writes to the console"},
        {"prim::fork", "starts a thread (fork/wait)"},
        {"aten::wait", "waits on a thread (fork/wait)"},
        {"prim::awaitable", "starts deferred work"},
        {"aten::from_file", "reads a file"},
        {"aten::save", "writes a file"},
        {"prim::PythonOp", "calls Python"},
        {"prim::CallMethod", "calls a module method"},
        {"prim::GetAttr", "reads module state"},
        {"prim::SetAttr", "writes module state"},
        {"prim::Enter", "enters a context manager"},
        {"prim::Exit", "leaves a context manager"},
        {"aten::manual_seed", "changes the RNG state"},
        {"aten::seed", "changes the RNG state"},
        {"aten::rand", "draws random numbers (nondeterministic result)"},
        {"aten::randn", "draws random numbers (nondeterministic result)"},
        {"aten::rand_like", "draws random numbers (nondeterministic result)"},
        {"aten::randn_like", "draws random numbers (nondeterministic result)"},
        {"aten::randint", "draws random numbers (nondeterministic result)"},
        {"aten::bernoulli", "draws random numbers (nondeterministic result)"},
        {"aten::uniform_", "draws random numbers (nondeterministic result)"},
        {"aten::normal_", "draws random numbers (nondeterministic result)"},
        {"aten::set_", "re-points a tensor's storage"},
        {"aten::record_stream", "changes allocator stream bookkeeping"},
        {"cuda::synchronize", "synchronises the device (distorts timing)"},
        {"aten::_cudnn_rnn", "not needed"},
    };
    return denied;
}

const std::unordered_set<std::string>& allowedOps()
{
    static const std::unordered_set<std::string> allowed = [] {
        std::unordered_set<std::string> s;
        const char* prim[] = {"Constant",      "ListConstruct",
                              "ListUnpack",    "TupleConstruct",
                              "TupleUnpack",   "TupleIndex",
                              "DictConstruct", "If",
                              "Loop",          "RaiseException",
                              "Uninitialized", "unchecked_cast",
                              "NumToTensor",   "device",
                              "dtype",         "layout",
                              "is_cuda",       "min",
                              "max",           "abs",
                              "shape",         "data",
                              "isinstance",    "Return",
                              "Param",         "AutogradZero",
                              "grad",          "requires_grad",
                              "str",           "TupleSlice",
                              "StringIndex",   "type"};
        for (const char* n : prim)
            s.insert(std::string("prim::") + n);
        // aten: tensor math, shapes, creation without RNG, and the scalar/list/str/dict builtins that
        // TorchScript lowers Python expressions to. None of them touches files, processes, threads,
        // timers or the console.
        const char* aten[] = {
            // scalar, list, str, dict builtins
            "add", "sub", "mul", "div", "floordiv", "remainder", "neg", "pow", "eq", "ne", "lt", "le", "gt", "ge",
            "__and__", "__or__", "__xor__", "__not__", "__is__", "__isnot__", "__contains__", "__getitem__",
            "_set_item", "__range_length", "__derive_index", "__round_to_zero_floordiv", "Int", "Float", "Bool",
            "ScalarImplicit", "IntImplicit", "FloatImplicit", "len", "append", "extend", "insert", "pop", "list",
            "copy", "keys", "values", "items", "get", "dict", "setdefault", "format", "str", "join", "split", "slice",
            "sorted", "sort", "reverse", "index", "count", "clear", "mathremainder", "floor", "ceil", "sqrt", "exp",
            "log", "log10", "log1p", "fabs", "abs", "gcd", "factorial", "isnan", "isinf", "isfinite", "trunc", "round",
            "min", "max", "sum", "any", "all", "size", "dim", "numel", "stride", "element_size", "is_contiguous",
            "item", "tolist", "device", "dtype", "is_floating_point", "__interpolate", "modf", "frexp", "copysign",
            "hypot", "degrees", "radians", "atan2", "fmod", "lower", "upper", "startswith", "endswith", "strip",
            "replace", "find", "__upsample",
            // elementwise
            "abs_", "acos", "asin", "atan", "cos", "cosh", "sin", "sinh", "tan", "tanh", "tanh_", "erf", "erfc",
            "erfinv", "exp2", "expm1", "exp_", "log2", "log_", "frac", "reciprocal", "rsqrt", "sigmoid", "sigmoid_",
            "sign", "sgn", "square", "relu", "relu_", "relu6", "gelu", "silu", "mish", "softplus", "elu", "selu",
            "celu", "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "hardshrink",
            "softshrink", "log_sigmoid", "threshold", "threshold_", "clamp", "clamp_", "clamp_min", "clamp_max", "clip",
            "nan_to_num", "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
            "bitwise_xor", "bitwise_not", "add_", "sub_", "mul_", "div_", "pow_", "true_divide", "floor_divide", "rsub",
            "maximum", "minimum", "fmax", "fmin", "where", "lerp", "addcmul", "addcdiv", "masked_fill", "masked_fill_",
            "neg_", "sqrt_", "floor_", "ceil_", "round_", "erf_", "prelu", "glu", "logit", "xlogy", "heaviside", "eq_",
            "ne_",
            // reductions
            "mean", "prod", "amax", "amin", "argmax", "argmin", "logsumexp", "var", "std", "var_mean", "std_mean",
            "norm", "frobenius_norm", "cumsum", "cumprod", "softmax", "log_softmax", "_softmax", "topk", "argsort",
            "median", "nansum", "aminmax", "cummax", "cummin", "linalg_vector_norm", "count_nonzero",
            // linear algebra
            "matmul", "mm", "bmm", "addmm", "addmm_", "addbmm", "baddbmm", "linear", "t", "einsum", "dot", "mv",
            "addmv", "outer", "ger", "tensordot", "bilinear", "cosine_similarity",
            // nn
            "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
            "_convolution", "batch_norm", "layer_norm", "group_norm", "instance_norm", "native_batch_norm",
            "native_layer_norm", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
            "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
            "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
            "adaptive_max_pool2d", "adaptive_max_pool3d", "dropout", "feature_dropout", "embedding", "pad",
            "constant_pad_nd", "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
            "replication_pad3d", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
            "upsample_bilinear2d", "upsample_trilinear3d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
            "one_hot", "pairwise_distance", "cdist", "softmin", "hinge_embedding_loss", "mse_loss", "l1_loss",
            "scaled_dot_product_attention",
            // shapes and views
            "view", "reshape", "flatten", "unflatten", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "permute",
            "transpose", "transpose_", "contiguous", "expand", "expand_as", "repeat", "repeat_interleave", "narrow",
            "select", "index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add",
            "index_add_", "index_put", "index_put_", "index_copy", "index_fill", "masked_select", "masked_scatter",
            "take", "cat", "concat", "stack", "hstack", "vstack", "chunk", "unbind", "tensor_split", "split_with_sizes",
            "view_as", "reshape_as", "flip", "roll", "movedim", "moveaxis", "swapaxes", "diagonal", "diag", "tril",
            "triu", "unfold", "as_strided", "broadcast_to", "broadcast_tensors", "nonzero", "mT", "numpy_T",
            "_shape_as_tensor", "tile", "split_copy", "alias",
            // creation and conversion (no RNG)
            "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
            "arange", "linspace", "logspace", "eye", "tensor", "scalar_tensor", "new_empty", "new_zeros", "new_ones",
            "new_full", "new_empty_strided", "to", "type_as", "copy_", "fill_", "zero_", "clone", "detach", "detach_",
            "cpu", "cuda", "float", "double", "half", "bfloat16", "long", "int", "bool", "resize_", "as_tensor",
            "from_numpy_unavailable", "_cast_Float", "complex", "real", "imag", "is_nonzero", "equal", "allclose",
            "isclose"};
        for (const char* n : aten)
            s.insert(std::string("aten::") + n);
        s.insert("kb::launch");
        s.insert("kb::launch_smem");
        return s;
    }();
    return allowed;
}

void collectViolations(const jit::Block* block, std::vector<SandboxViolation>& out)
{
    for (const jit::Node* node : block->nodes()) {
        const std::string name = node->kind().toQualString();
        std::string reason;
        if (!isAllowedOp(name, &reason)) {
            std::string where;
            const auto& range = node->sourceRange();
            if (range.source()) // lineno_for_offset is 0-based
                where = "line " + std::to_string(range.source()->lineno_for_offset(range.start()) + 1);
            out.push_back({name, reason, where});
        }
        for (const jit::Block* sub : node->blocks())
            collectViolations(sub, out);
    }
}

// ---- checks on the parsed source, before define ------------------------------------------
// CompilationUnit::define runs code while it compiles: each parameter's default value is
// evaluated (evaluateDefaults compiles and runs it), and constant propagation runs ops whose
// inputs are constants (a call with constant arguments, such as torch.save("x", "/path"), whose
// schema has no side effects). So the graph check after compilation is too late for anything
// that reaches files: the parsed source is checked first.

// A name as the sandbox compares it: lower case, leading underscores dropped, so `print` matches
// prim::Print and `torch.jit._fork` prim::fork.
std::string normalisedName(const std::string& name)
{
    std::size_t b = name.find_first_not_of('_');
    std::string out = b == std::string::npos ? std::string() : name.substr(b);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// deniedOps() by unqualified, normalised name: the names a source must not even mention.
const std::unordered_map<std::string, std::string>& deniedNames()
{
    static const std::unordered_map<std::string, std::string> names = [] {
        std::unordered_map<std::string, std::string> m;
        for (const auto& [op, reason] : deniedOps())
            m.emplace(normalisedName(op.substr(op.find("::") + 2)), op);
        return m;
    }();
    return names;
}

int lineOf(const jit::TreeRef& t)
{
    const auto& r = t->range();
    return r.source() ? int(r.source()->lineno_for_offset(r.start())) + 1 : 0;
}

// Literal defaults only: numbers, strings, True/False/None, a negated number, and tuples or lists
// of those (as deep as the source's bracket limit allows).
bool isLiteral(const jit::TreeRef& e)
{
    switch (e->kind()) {
    case jit::TK_CONST:
    case jit::TK_STRINGLITERAL:
    case jit::TK_TRUE:
    case jit::TK_FALSE:
    case jit::TK_NONE: return true;
    case jit::TK_UNARY_MINUS:
    case '-': return e->trees().size() == 1 && e->trees()[0]->kind() == jit::TK_CONST;
    case jit::TK_TUPLE_LITERAL:
    case jit::TK_LIST_LITERAL:
        for (const auto& list : e->trees())
            for (const auto& x : list->trees())
                if (!isLiteral(x))
                    return false;
        return true;
    default: return false;
    }
}

[[noreturn]] void refuse(const std::string& op, const std::string& reason, int line)
{
    throw ScriptRejected(op, reason, line);
}

void checkDenied(const std::string& name, int line)
{
    const auto& denied = deniedNames();
    if (auto it = denied.find(normalisedName(name)); it != denied.end())
        refuse(it->second, "'" + name + "' " + deniedOps().at(it->second) + " (refused before compiling)", line);
}

// Walks the whole tree without recursion (its depth is bounded by checkHostCodeShape anyway).
void checkParsedSource(const jit::TreeRef& root)
{
    std::vector<jit::TreeRef> todo{root};
    while (!todo.empty()) {
        jit::TreeRef t = todo.back();
        todo.pop_back();
        switch (t->kind()) {
        case jit::TK_PARAM: {
            const jit::Param param(t);
            if (param.defaultValue().present() && !isLiteral(param.defaultValue().get()))
                refuse("default value",
                       "the default of parameter '" + param.ident().name() +
                           "' is not a literal: defaults are evaluated while compiling, before the "
                           "sandbox check; use a number, string, True/False/None or a tuple of those",
                       lineOf(t));
            break;
        }
        case jit::TK_APPLY: {
            const jit::Apply apply(t);
            if (apply.callee().kind() == jit::TK_VAR)
                checkDenied(jit::Var(apply.callee()).name().name(), lineOf(t));
            break;
        }
        case '.': // Select: x.name
            checkDenied(jit::Select(t).selector().name(), lineOf(t));
            break;
        default: break;
        }
        // reversed, so the walk meets the source's nodes in order (the first refusal is the first in the text)
        for (auto it = t->trees().rbegin(); it != t->trees().rend(); ++it)
            todo.push_back(*it);
    }
}

// Runs `work` on a thread with a large stack and waits for it. TorchScript's frontend recurses
// per nesting level, and compiling a call to a function defined further down compiles that
// function inside the call: along a call chain the depths add up (ten functions near the shape
// limits, each calling the next, overflowed the 8 MiB main stack). The pages are only touched as
// the recursion reaches them.
void runOnLargeStack(const std::function<void()>& work)
{
    constexpr std::size_t kStackBytes = std::size_t(256) << 20;
    struct Job
    {
        const std::function<void()>* work;
        std::exception_ptr error;
    } job{&work, nullptr};
    auto body = [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
            (*j->work)();
        } catch (...) {
            j->error = std::current_exception();
        }
        return nullptr;
    };
    pthread_attr_t attr;
    pthread_t thread;
    bool started = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kStackBytes) == 0 &&
                   pthread_create(&thread, &attr, body, &job) == 0;
    pthread_attr_destroy(&attr);
    if (started)
        pthread_join(thread, nullptr);
    else
        body(&job); // no thread to be had: the shape limits still hold on this stack for one function
    if (job.error)
        std::rethrow_exception(job.error);
}

} // namespace

ScriptRejected::ScriptRejected(std::string op_, std::string reason_, int line_)
    : ScriptError(op_ + " is not allowed in host code: " + reason_ +
                  (line_ > 0 ? " (line " + std::to_string(line_) + ")" : ""))
    , op(std::move(op_))
    , reason(std::move(reason_))
    , line(line_)
{}

ScriptFormatError::ScriptFormatError(std::string code_, const std::string& message, int line_)
    : ScriptError(message)
    , code(std::move(code_))
    , line(line_)
{}

namespace {} // namespace

void configureScriptRuntime()
{
    static std::once_flag once;
    std::call_once(once, [] {
        jit::setGraphExecutorOptimize(false);
        static jit::RegisterOperators ops({
            jit::Operator(
                "kb::launch(str name, int[] grid, int[] block, ...) -> ()",
                [](jit::Stack& stack) { launchFromStack(stack, false); }, c10::AliasAnalysisKind::CONSERVATIVE),
            jit::Operator(
                "kb::launch_smem(str name, int[] grid, int[] block, int shared_bytes, ...) -> ()",
                [](jit::Stack& stack) { launchFromStack(stack, true); }, c10::AliasAnalysisKind::CONSERVATIVE),
        });
        (void)functionalPrelude();
    });
}

std::shared_ptr<jit::CompilationUnit> compileScript(const std::string& source)
{
    configureScriptRuntime();
    // Linear bounds first: torch's parser and emitter recurse, and deep input overflows the stack.
    if (auto issue = checkHostCodeShape(source))
        throw ScriptFormatError(issue->code, issue->message, issue->line);
    // The frontend wants a final newline ("expected newline but found 'eof'"); answers often lack it.
    const std::string text = blankImportLines(source) + "\n";
    auto cu = std::make_shared<jit::CompilationUnit>();
    runOnLargeStack([&] {
        try {
            // Parsed as define parses it (top-level functions only; the C++ frontend has no classes,
            // decorators or module-level statements), then checked, before define runs anything.
            jit::Parser parser(std::make_shared<jit::Source>(text));
            while (parser.lexer().cur().kind != jit::TK_EOF)
                checkParsedSource(parser.parseFunction(/*is_method=*/false));
        } catch (const ScriptError&) {
            throw;
        } catch (const std::exception& e) {
            throw ScriptError(e.what());
        }
        try {
            cu->define(c10::nullopt, text, std::make_shared<KbResolver>(), nullptr);
        } catch (const std::exception& e) {
            throw ScriptError(e.what());
        }
    });
    return cu;
}

jit::Function& forwardFunction(jit::CompilationUnit& cu)
{
    jit::Function* fn = cu.find_function(c10::QualifiedName("forward"));
    if (!fn)
        throw ScriptError("no function named forward in the host code");
    return *fn;
}

namespace {
bool hasCalls(const jit::Block* block)
{
    for (const jit::Node* n : block->nodes()) {
        if (n->kind() == c10::prim::CallFunction || n->kind() == c10::prim::CallMethod)
            return true;
        for (const jit::Block* sub : n->blocks())
            if (hasCalls(sub))
                return true;
    }
    return false;
}
} // namespace

void inlineAllCalls(jit::Graph& graph)
{
    // Each pass inlines one level of calls; recursion is impossible in TorchScript, so the depth
    // is bounded by the source, and the cap only guards against a pass that makes no progress.
    for (int depth = 0; depth < 64 && hasCalls(graph.block()); ++depth)
        jit::Inline(graph);
}

std::shared_ptr<jit::Graph> inlinedGraph(jit::Function& fn)
{
    auto graph = jit::toGraphFunction(fn).graph()->copy();
    inlineAllCalls(*graph);
    return graph;
}

bool isAllowedOp(const std::string& name, std::string* reason)
{
    const auto& denied = deniedOps();
    if (auto it = denied.find(name); it != denied.end()) {
        if (reason)
            *reason = it->second;
        return false;
    }
    if (allowedOps().count(name))
        return true;
    if (reason)
        *reason = "not on the allowlist of host-code ops (docs/sandbox.md)";
    return false;
}

std::vector<SandboxViolation> checkSandbox(const jit::Graph& graph)
{
    std::vector<SandboxViolation> out;
    collectViolations(graph.block(), out);
    return out;
}

std::vector<std::string> launchedKernelNames(const jit::Graph& graph)
{
    std::vector<std::string> names;
    std::vector<const jit::Block*> todo{graph.block()};
    while (!todo.empty()) {
        const jit::Block* b = todo.back();
        todo.pop_back();
        for (const jit::Node* n : b->nodes()) {
            const std::string kind = n->kind().toQualString();
            if ((kind == "kb::launch" || kind == "kb::launch_smem") && !n->inputs().empty()) {
                if (auto v = jit::toIValue(n->input(0)); v && v->isString())
                    names.push_back(v->toStringRef());
            }
            for (const jit::Block* sub : n->blocks())
                todo.push_back(sub);
        }
    }
    return names;
}

void setLaunchContext(LaunchContext* ctx)
{
    g_launch = ctx;
}

} // namespace kwb
