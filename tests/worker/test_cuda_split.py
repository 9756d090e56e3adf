#!/usr/bin/env python3
# The split build of a KernelBench-format answer's `.cu` (src/worker/python/cuda_split.py, docs/sandbox.md
# "The split build"): what goes to the device unit and the host unit, what is declined and why, the
# flags that must agree, and, where nvcc is on PATH, the units compiled (the device unit by nvcc with
# torch's CUDA flags and no torch headers; the host unit by g++ with a stand-in for torch's header).
# Pure Python apart from the compiles; the sources are written for this test in the shapes real
# small-model answers take (a guarded launch, a dispatch-free float kernel, a namespaced kernel, a
# kernel behind #ifdef, a multi-line launch with a stream).
#   Usage: test_cuda_split.py SRC/worker/python [--only=CASE]
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(sys.argv[1]))
import cuda_split as cs  # noqa: E402

PATH = "/build/cuda.cu"
LOAD_INLINE_HEAD = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"

ELEMENTWISE = LOAD_INLINE_HEAD + r'''#include <torch/extension.h>

#define BLOCK 256
#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")

__device__ __forceinline__ float gelu(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

__global__ void __launch_bounds__(BLOCK) gelu_scale_kernel(const float* __restrict__ in, float* out,
                                                             float scale, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = gelu(in[i]) * scale;  // a comment with <<< in it
    }
}

torch::Tensor gelu_scale(torch::Tensor x, double scale) {
    CHECK_CUDA(x);
    auto out = torch::empty_like(x);
    int64_t n = x.numel();
    int blocks = (n + BLOCK - 1) / BLOCK;
    gelu_scale_kernel<<<blocks, BLOCK>>>(x.data_ptr<float>(), out.data_ptr<float>(), (float)scale, n);
    return out;
}
'''

NAMESPACED = LOAD_INLINE_HEAD + r'''
namespace kern {
struct Shape { int rows; int cols; };
constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }

#ifndef TILE
#define TILE 16
#endif

#ifdef TILE
__global__ void row_sum(const float* x, float* y, Shape s) {
    __shared__ float part[TILE];
    int r = blockIdx.x;
    float acc = 0.f;
    for (int c = threadIdx.x; c < s.cols; c += blockDim.x) acc += x[r * s.cols + c];
    part[threadIdx.x % TILE] = acc;
    __syncthreads();
    if (threadIdx.x == 0) { float t = 0; for (int k = 0; k < TILE; ++k) t += part[k]; y[r] = t; }
}
#endif
}  // namespace kern

torch::Tensor row_sums(torch::Tensor x) {
    auto y = torch::zeros({x.size(0)}, x.options());
    kern::Shape s{(int)x.size(0), (int)x.size(1)};
    auto stream = at::cuda::getCurrentCUDAStream();
    kern::row_sum<<<
        s.rows,
        kern::cdiv(TILE, 1), 0,
        stream>>>(
        x.data_ptr<float>(),
        y.data_ptr<float>(), s);
    return y;
}
'''


# cub in a kernel, CUDA's min in host code: what only nvcc declares or compiles for the host side
CUB_AND_MIN = LOAD_INLINE_HEAD + r'''#include <torch/extension.h>
#include <cub/cub.cuh>

__global__ void row_sum_kernel(const float* __restrict__ x, float* out, int cols) {
    using Reduce = cub::BlockReduce<float, 256>;
    __shared__ typename Reduce::TempStorage storage;
    float acc = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[blockIdx.x * cols + c];
    float total = Reduce(storage).Sum(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}

torch::Tensor row_sum(torch::Tensor x) {
    auto out = torch::zeros({x.size(0)}, x.options());
    int rows = max((int)x.size(0), 0);
    row_sum_kernel<<<min(rows, 65535), 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), (int)x.size(1));
    return out;
}
'''

TEMPLATED = LOAD_INLINE_HEAD + r'''#include <torch/extension.h>

template <typename scalar_t>
__device__ __forceinline__ scalar_t sigmoid_of(scalar_t v) { return scalar_t(1) / (scalar_t(1) + exp(-v)); }

template <typename scalar_t, int UNROLL = 2>
__global__ void swish_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * UNROLL;
    #pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        if (i + u < n) y[i + u] = x[i + u] * sigmoid_of(x[i + u]);
}

torch::Tensor swish(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    int blocks = (n + 511) / 512;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "swish", ([&] {
        swish_kernel<scalar_t><<<blocks, 256>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    }));
    swish_kernel<float, 4><<<blocks, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
'''

def split(text, macros=()):
    return cs.split_cuda_source(text, PATH, macros)


def declined(text, why):
    try:
        split(text)
    except cs.NotSplit as e:
        assert why in str(e), f"declined for {e!r}, not {why!r}"
        return
    raise AssertionError(f"split, where it should be declined ({why})")


def body_lines(unit, prelude):
    """The unit's lines after its prelude and #line (which keep the answer's line numbers), each
    launcher the device unit sets off under a #line of its own joined back onto its kernel's line."""
    lines = unit.split("\n")
    assert lines[len(prelude)] == f'#line 1 "{PATH}"', lines[:len(prelude) + 1]
    lines = lines[len(prelude) + 1:]
    joined = []
    k = 0
    while k < len(lines):
        if lines[k] == f'#line 1 "{cs.LAUNCHER_FILE}"':
            # the launcher, then the answer's numbering resumed on the kernel's last line
            assert re.fullmatch(rf'#line {len(joined)} "{re.escape(PATH)}"', lines[k + 2]), lines[k:k + 3]
            joined[-1] += " " + lines[k + 1] + lines[k + 3]
            k += 4
            continue
        joined.append(lines[k])
        k += 1
    return joined


def keeps_every_line_where_it_was():
    for text in (ELEMENTWISE, NAMESPACED, TEMPLATED):
        s = split(text)
        original = text.split("\n")
        for unit, prelude in ((s.device, cs.DEVICE_PRELUDE), (s.host, cs.HOST_PRELUDE)):
            lines = body_lines(unit, prelude)
            assert len(lines) == len(original), (len(lines), len(original))
            for a, b in zip(lines, original):
                # a line is the answer's own, blank, or (host) a launcher's prototype or call, or the
                # line of a launch's <<< or >>>
                assert a == b or a == "" or cs.LAUNCHER_PREFIX in a or "<<<" in b or ">>>" in b, (a, b)


def device_unit_has_kernels_and_launchers():
    s = split(ELEMENTWISE)
    dev = body_lines(s.device, cs.DEVICE_PRELUDE)
    text = "\n".join(dev)
    assert "torch" not in text.replace("TORCH_CHECK", ""), "torch reached the device unit"
    assert "#include <torch/extension.h>" not in text and "#include <cuda_runtime.h>" in text
    assert "__device__ __forceinline__ float gelu" in text
    # the launcher right after the kernel (body_lines joins it onto the kernel's last line): the
    # kernel's own parameters, passed on
    last = next(l for l in dev if l.startswith("}") and cs.LAUNCHER_PREFIX in l)
    assert ('__attribute__((visibility("hidden"))) void kwb_split_launch_gelu_scale_kernel(dim3 kwb_split_grid, '
            "dim3 kwb_split_block, size_t "
            "kwb_split_smem, cudaStream_t kwb_split_stream, const float* __restrict__ in, float* out,") in last, last
    assert ("gelu_scale_kernel<<<kwb_split_grid, kwb_split_block, kwb_split_smem, kwb_split_stream>>>"
            "(in, out, scale, n); }") in last, last
    assert "torch::Tensor gelu_scale" not in text, "a host function in the device unit"
    assert [k.name for k in s.kernels] == ["gelu_scale_kernel"]


def host_unit_launches_through_the_launcher():
    s = split(ELEMENTWISE, ["#define __CUDA_NO_HALF_OPERATORS__ 1"])
    assert s.host.startswith("#define __CUDA_NO_HALF_OPERATORS__ 1\n#include <cuda_runtime.h>\n"), s.host[:120]
    host = "\n".join(body_lines(s.host.split("\n", 1)[1], cs.HOST_PRELUDE))
    assert "__global__" not in host and "threadIdx" not in host and "__device__" not in host
    assert "void kwb_split_launch_gelu_scale_kernel(dim3 kwb_split_grid" in host
    # omitted shared memory and stream are nvcc's defaults: 0 and the legacy default stream
    assert ("kwb_split_launch_gelu_scale_kernel(blocks, BLOCK, 0, 0,x.data_ptr<float>(), out.data_ptr<float>(), "
            "(float)scale, n);") in host, host
    assert "<<<" not in re.sub(r"//.*", "", host)


def multiline_launch_in_a_namespace():
    s = split(NAMESPACED)
    host = body_lines(s.host, cs.HOST_PRELUDE)
    original = NAMESPACED.split("\n")
    i = next(n for n, l in enumerate(original) if "kern::row_sum<<<" in l)
    call = "\n".join(host[i:i + 7])
    assert call.startswith("    kern::kwb_split_launch_row_sum(\n        s.rows,\n        kern::cdiv(TILE, 1), 0,\n"
                           "        stream,\n        x.data_ptr<float>(),\n        y.data_ptr<float>(), s)"), call
    dev = "\n".join(body_lines(s.device, cs.DEVICE_PRELUDE))
    # struct and constexpr helper in both units; the launcher inside the namespace and the #ifdef
    assert "struct Shape" in dev and "constexpr int cdiv" in dev
    assert re.search(r"#ifdef TILE\n__global__ void row_sum.*kwb_split_launch_row_sum.*\n#endif", dev, re.S)
    hosttext = "\n".join(host)
    assert "struct Shape" in hosttext and "constexpr int cdiv" in hosttext
    assert re.search(r"#ifdef TILE\n__attribute__\(\(visibility\(\"hidden\"\)\)\) void kwb_split_launch_row_sum\(.*Shape s\);"
                     r"\n(\n)*#endif", hosttext), hosttext


def declines_what_it_cannot_split_faithfully():
    k = "__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"
    host = "void f(torch::Tensor t) { k<<<1, 32>>>(t.data_ptr<float>()); }\n"
    tk = "template <typename scalar_t>\n__global__ void k(scalar_t* x) { x[0] = 0; }\n"
    declined(tk + "void f(torch::Tensor t) { k<<<1, 1>>>(t.data_ptr<float>()); }\n", "without its template arguments")
    declined(tk + "void f(torch::Tensor t) { AT_DISPATCH_FLOATING_TYPES_AND_HALF(t.scalar_type(), \"f\", [&] {"
             " k<scalar_t><<<1, 1>>>(t.data_ptr<scalar_t>()); }); }\n", "scalar_t of AT_DISPATCH_FLOATING_TYPES_AND_HALF")
    declined(tk + "void f(torch::Tensor t) { k<at::Half><<<1, 1>>>(t.data_ptr<at::Half>()); }\n", "torch's types")
    declined("template <typename... T>\n__global__ void k(T... x) { }\nvoid f() { k<int><<<1, 1>>>(1); }\n", "variadic")
    declined(k + "void f(torch::Tensor t) { cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 16);"
             " k<<<1, 32>>>(t.data_ptr<float>()); }\n", "the kernel k is used other than by a launch")
    declined("__constant__ float w[4];\n" + k + "void f(torch::Tensor t, float* h) { cudaMemcpyToSymbol(w, h, 16);"
             " k<<<1, 32>>>(t.data_ptr<float>()); }\n", "host code uses the device's w")
    declined("#define LAUNCH(x) k<<<1, 32>>>(x)\n" + k + host, "a launch in a macro")
    declined("namespace {\n" + k + "}\n" + host, "anonymous namespace")
    declined("static " + k + host, "a static kernel")
    declined("__global__ void k(at::Half* x) { }\n" + host, "names torch")
    declined(k + "__global__ void p(float* x) { k<<<1, 1>>>(x); }\n" + host, "a launch in device code")
    declined("__global__ void k(float* x, int n = 4) { }\n" + host, "cannot pass on as written")
    declined(k + "void f(torch::Tensor t) { k<<<1>>>(t.data_ptr<float>()); }\n", "launch configuration")
    declined(k + "void f(torch::Tensor t) { g<<<1, 1>>>(t.data_ptr<float>()); }\n", "not a kernel of this source")
    declined(k + "void f(torch::Tensor t) {\n#ifdef X\n k<<<1, 1>>>(t.data_ptr<float>()); }\n#else\n }\n#endif\n",
             "unbalanced")
    declined(k + "void f() { int x = (1;\n}\n", "unbalanced")
    # the host unit is g++'s: what only nvcc defines or compiles for the host side stays whole
    declined("#ifdef __CUDACC__\n#define HD __host__ __device__\n#else\n#define HD\n#endif\n" + k + host, "tests __CUDACC__")
    declined("#if defined(X) && __CUDACC_VER_MAJOR__ >= 12 // new\n#endif\n" + k + host, "tests __CUDACC_VER_MAJOR__")
    declined(k + "void f(torch::Tensor t) { int v = __NVCC__; k<<<1, 32>>>(t.data_ptr<float>()); }\n", "tests __NVCC__")
    # cub's, thrust's or CUTLASS's headers, where the host unit would need them: named by host code,
    # by a macro both units get, by a directive's test, through libcu++'s `cuda::`
    cub_host = "void f(torch::Tensor t) { size_t b = 0; cub::DeviceReduce::Sum(nullptr, b, (float*)0, (float*)0, 1); }\n"
    declined("#include <cub/cub.cuh>\n" + k + cub_host, "cub's headers, which only nvcc compiles for the host, named there (cub::)")
    declined("#  include \"thrust/reduce.h\"\n" + k + "void g() { thrust::device_vector<float> v(4); }\n" + host,
             "thrust's headers")
    declined("#include <cub/cub.cuh>\nusing namespace cub;\n" + k + host, "named there (cub)")
    declined("#include <cub/cub.cuh>\n#define CHECK(x) CubDebugExit(x)\n" + k + host, "named there (CubDebugExit)")
    declined("#include <thrust/reduce.h>\n#if THRUST_VERSION >= 100000\n#define NEW 1\n#endif\n" + k + host, "(THRUST_)")
    declined("#include <cub/cub.cuh>\n" + k + "void g() { cuda::std::size_t n = 0; }\n" + host, "(cuda::)")
    declined("#include <cub/cub.cuh>\n" + k + "int g() { return CUB_PTX_ARCH; }\n" + host, "(CUB_PTX_ARCH)")
    declined("#include <thrust/sort.h>\n" + k + "int g() { return _CCCL_STD_VER; }\n" + host, "(_CCCL_STD_VER)")
    # a template argument the device unit cannot see where it instantiates (a real answer's: local
    # constexprs of the host function), or declared only after the kernel
    tk2 = "template <int TX>\n__global__ void k(float* x) { x[TX] = 0; }\n"
    declined(tk2 + "void f(torch::Tensor t) { constexpr int TX = 16; k<TX><<<1, 1>>>(t.data_ptr<float>()); }\n",
             "argument TX is not declared at file scope")
    declined(tk2 + "constexpr int LATE = 4;\nvoid f(torch::Tensor t) { k<LATE><<<1, 1>>>(t.data_ptr<float>()); }\n",
             "argument LATE is not declared at file scope before the kernel")
    declined(tk2 + "template <int B> void g(torch::Tensor t) { k<B><<<1, 1>>>(t.data_ptr<float>()); }\n", "argument B")
    # what the device unit declares before the kernel: a macro, a constant, a type's member, literals
    s = split("#define TILE 16\nconstexpr int W = 2;\nnamespace cfg { constexpr int R = 3; }\n"
              "struct Cfg { static constexpr int C = 4; };\n" + tk2 +
              "void f(torch::Tensor t) { k<TILE * W + cfg::R + Cfg::C + sizeof(float) + 1><<<1, 1>>>(t.data_ptr<float>()); }\n")
    assert "&kwb_split_launch_k<TILE * W + cfg::R + Cfg::C + sizeof(float) + 1>;" in s.device, s.device
    # included, and used by kernels only or not at all: the device unit includes it, the host unit not
    for kernel in (k, "__global__ void k(float* x) { using R = cub::BlockReduce<float, 32>; __shared__ R::TempStorage s;\n"
                      "  float v = R(s).Sum(x[threadIdx.x]); if (threadIdx.x == 0) x[0] = v; }\n"):
        s = split("#include <torch/extension.h>\n#include <cub/cub.cuh> // reductions\n" + kernel + host
                  + "// cub::DeviceReduce, \"cub::\" in a comment and a string\n")
        assert "#include <cub/cub.cuh>" in s.device and "cub/" not in s.host, s.host
    # names that only begin alike (cubic, cudaMalloc, a member cute_x) are not theirs
    s = split("#include <cub/cub.cuh>\n" + k + "int cubic(int v) { int cute_x = v; void* p; cudaMalloc(&p, 4); "
              "return cute_x * v; }\n" + host)
    assert "cub/" not in s.host
    # named in a comment or a string only: split as ever
    split("// needs __CUDACC__? no\n#define NAME \"__NVCC__\" /* __CUDACC__ */\n" + k + host)
    # torch in a host function, in a host struct, in a using: the host unit's alone, split
    s = split("using torch::Tensor;\nstruct Args { torch::Tensor t; };\n" + k + host)
    assert "Args" not in s.device and "using torch" not in s.device and "struct Args" in s.host


def template_kernels_by_their_dispatch():
    s = split(TEMPLATED)
    dev = "\n".join(body_lines(s.device, cs.DEVICE_PRELUDE))
    # the launcher a template of the kernel's own header; made for each type AT_DISPATCH_FLOATING_TYPES
    # gives scalar_t, and for the launch's literal <float, 4>
    assert ('template <typename scalar_t, int UNROLL = 2> __attribute__((visibility("hidden"))) void '
            "kwb_split_launch_swish_kernel(dim3 kwb_split_grid" in dev), dev
    assert "swish_kernel<scalar_t, UNROLL><<<kwb_split_grid" in dev
    for n, args in enumerate(("double", "float", "float, 4")):
        assert (f"__attribute__((used)) static auto kwb_split_keep_swish_kernel_{n} = "
                f"&kwb_split_launch_swish_kernel<{args}>;") in dev, (args, dev)
    assert "template <typename scalar_t>\n__device__ __forceinline__ scalar_t sigmoid_of" in dev
    host = "\n".join(body_lines(s.host, cs.HOST_PRELUDE))
    assert "kwb_split_launch_swish_kernel<scalar_t>(blocks, 256, 0, 0,x.data_ptr<scalar_t>()" in host, host
    assert "kwb_split_launch_swish_kernel<float, 4>(blocks, 128, 0, 0,x.data_ptr<float>()" in host
    assert "sigmoid_of" not in host

def unnamed_and_typed_parameters():
    s = split("struct P { float a; };\n__global__ void k(float*, const int, P p, const unsigned long long m) { }\n"
              "void f(float* x) { k<<<1, 1>>>(x, 2, P{1.f}, 3ull); }\n")
    dev = s.device
    assert "float* kwb_split_p0, const int kwb_split_p1, P p, const unsigned long long m" in dev, dev
    assert "(kwb_split_p0, kwb_split_p1, p, m); }" in dev
    # a parameter named as a type (a real answer's `int dim3`) keeps its name; a type after qualifiers alone is one
    s = split("__global__ void k(float* x, int dim3, const float4, float* half) { }\n"
              "void f(float* x) { k<<<1, 1>>>(x, 2, make_float4(0, 0, 0, 0), x); }\n")
    assert "float* x, int dim3, const float4 kwb_split_p2, float* half)" in s.device, s.device
    assert "(x, dim3, kwb_split_p2, half); }" in s.device, s.device


def flags_that_must_agree():
    torch_cxx = ["-DTORCH_EXTENSION_NAME=ext", "-DTORCH_API_INCLUDE_EXTENSION_H", '-DPYBIND11_COMPILER_TYPE="_gcc"',
                 "-isystem", "/t/include", "-isystem", "/usr/local/cuda/include", "-D_GLIBCXX_USE_CXX11_ABI=1",
                 "-fPIC", "-std=c++17"]
    torch_nvcc = ["-DTORCH_EXTENSION_NAME=ext", "-DTORCH_API_INCLUDE_EXTENSION_H", '-DPYBIND11_COMPILER_TYPE="_gcc"',
                  "-isystem", "/t/include", "-isystem", "/usr/local/cuda/include", "-D_GLIBCXX_USE_CXX11_ABI=1",
                  "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                  "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr",
                  "-gencode=arch=compute_90,code=sm_90", "--compiler-options", "'-fPIC'"]
    lines = cs.host_macros(torch_cxx, torch_nvcc + ["-std=c++17"])
    assert lines == ["#define __CUDA_NO_BFLOAT16_CONVERSIONS__ 1", "#define __CUDA_NO_HALF2_OPERATORS__ 1",
                     "#define __CUDA_NO_HALF_CONVERSIONS__ 1", "#define __CUDA_NO_HALF_OPERATORS__ 1"], lines
    # device-only options of the answer's extra_cuda_cflags change nothing on the host side
    assert cs.host_macros(torch_cxx, torch_nvcc + ["--use_fast_math", "-lineinfo", "-Xptxas", "-v", "-maxrregcount=64",
                                                   "-std=c++17"]) == lines
    # an answer's -D of its own reaches the host unit as nvcc gives it; one of the C++ flags only is undone
    assert "#define BLOCK 128" in cs.host_macros(torch_cxx, torch_nvcc + ["-DBLOCK=128", "-std=c++17"])
    assert "#undef WITH_CUDA" in cs.host_macros(torch_cxx + ["-DWITH_CUDA"], torch_nvcc + ["-std=c++17"])
    for nvcc_extra, cxx_extra, why in (
            (["-O3"], [], "optimisation differs"),          # nvcc -O3 compiles host code at -O3; g++ at -O0
            ([], ["-O2"], "optimisation differs"),
            (["-std=c++14"], [], "language standard differs"),
            (["-Xcompiler", "-ffast-math"], [], "which the C++ flags do not"),
            (["-ccbin", "clang++"], [], "does not know"),
            (["-I/my/inc"], [], "include folder only nvcc has"),
            (["-UNDEBUG"], [], "undefine"),
            ([], ["-ffast-math"], "nvcc's host side does not have")):
        nvcc = torch_nvcc + nvcc_extra + ([] if any(f.startswith("-std") for f in nvcc_extra) else ["-std=c++17"])
        try:
            cs.host_macros(torch_cxx + cxx_extra, nvcc)
        except cs.NotSplit as e:
            assert why in str(e), (nvcc_extra, cxx_extra, str(e))
            continue
        raise AssertionError(f"{nvcc_extra} {cxx_extra}: not declined")
    assert cs.host_macros(torch_cxx + ["-O3"], torch_nvcc + ["-O3", "-std=c++17"]) == lines


def nvcc_host_compiler_from_flags():
    # torch adds `-ccbin $CC` where CC is set; an answer's extra_cuda_cflags can name one too
    assert cs.nvcc_host_compiler(["-O3", "-std=c++17"]) == ("gcc", ["-O3", "-std=c++17"])
    assert cs.nvcc_host_compiler(["-ccbin", "/opt/gcc/bin/gcc", "-O3"]) == ("/opt/gcc/bin/gcc", ["-O3"])
    assert cs.nvcc_host_compiler(["-O3", "--compiler-bindir=clang++"]) == ("clang++", ["-O3"])
    assert cs.nvcc_host_compiler(["-ccbin='g++-12'"]) == ("g++-12", [])
    folder = tempfile.mkdtemp()
    try:
        assert cs.nvcc_host_compiler(["--compiler-bindir", folder]) == (os.path.join(folder, "gcc"), [])
    finally:
        os.rmdir(folder)
    for flags in (["-ccbin"], ["-ccbin="], ["--compiler-bindir", "''"]):
        try:
            cs.nvcc_host_compiler(flags)
        except cs.NotSplit as e:
            assert "names no host compiler" in str(e), (flags, str(e))
            continue
        raise AssertionError(f"{flags}: not declined")


def reads_any_text_without_crashing():
    # Every prefix of the fixtures: declined or split, never another exception (an answer cut off
    # mid-token by a length limit is an honest answer too).
    for text in (ELEMENTWISE, NAMESPACED, TEMPLATED):
        for end in range(0, len(text), 7):
            try:
                split(text[:end])
            except cs.NotSplit:
                pass
    # Crafted shapes the broker reads outside any sandbox: deep nesting, long launch lists under a
    # dispatch (once quadratic: 248 s for 480 KB), a source past the cap.
    tk = "template <typename scalar_t> __global__ void k(scalar_t* x) {}\n"
    for text in ("namespace a {" * 5000 + "}" * 5000, "void f() { " + "(" * 20000 + ")" * 20000 + "; }",
                 tk + "void f(){ AT_DISPATCH_FLOATING_TYPES(t, \"x\", [&]{" + "k<scalar_t><<<1,1>>>(0);" * 9000 + "}); }",
                 "int a;" * 50000):
        t0 = time.monotonic()
        try:
            split(text)
        except cs.NotSplit:
            pass
        print(f"  {len(text)} crafted characters read in {time.monotonic() - t0:.1f} s")


# load_inline's main.cpp as it writes it for ELEMENTWISE (functions=["gelu_scale"])
MAIN = ("#include <torch/extension.h>\ntorch::Tensor gelu_scale(torch::Tensor x, double scale);\n\n"
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        "m.def(\"gelu_scale\", torch::wrap_pybind_function(gelu_scale), \"gelu_scale\");\n}")


def joins_main_cpp_only_where_neither_part_can_read_differently():
    host = split(ELEMENTWISE).host
    assert cs.join_declined(MAIN, host) == "", cs.join_declined(MAIN, host)
    joinable = {
        "its parameters named otherwise": MAIN.replace("torch::Tensor x, double scale", "torch::Tensor input, double s"),
        "unnamed parameters": MAIN.replace("torch::Tensor x, double scale", "torch::Tensor, double"),
        "a top-level const": MAIN.replace("double scale", "const double scale"),
        "a wrapper whose name the host never spells": MAIN.replace(
            ";\n\nPYBIND11", ";\ntorch::Tensor twice(torch::Tensor x) { return gelu_scale(x, 2.0); }\n\nPYBIND11"),
        "comments": "// the bindings\n" + MAIN.replace(";\n", "; /* from the .cu */\n", 1),
    }
    for what, main in joinable.items():
        assert cs.join_declined(main, host) == "", (what, cs.join_declined(main, host))
    declined = {
        "a macro": (MAIN + "\n#define BLOCK 128\n", host, "a directive other than torch's header's include"),
        "another include": ("#include <vector>\n" + MAIN, host, "a directive other than torch's header's include"),
        "a using-directive": ("using namespace torch;\n" + MAIN, host, "something other than a function"),
        "a type": ("struct Opts { int n; };\n" + MAIN, host, "something other than a function"),
        "a variable": ("static int calls = 0;\n" + MAIN, host, "something other than a function"),
        "other parameter types": (MAIN.replace("double scale", "float scale"), host, "does not declare the same way"),
        "a reference where the host takes a value": (MAIN.replace("double scale", "const double& scale"), host,
                                                     "does not declare the same way"),
        "a default argument": (MAIN.replace("double scale", "double scale = 1.0"), host, "something other than a function"),
        "a prototype the host does not define": ("torch::Tensor other(torch::Tensor x);\n" + MAIN, host,
                                                 "does not declare the same way"),
        "a template": ("template <typename T> T twice(T x) { return x + x; }\n" + MAIN, host, "other than a plain function"),
        "a static wrapper": ("static int helper() { return 1; }\n" + MAIN, host, "other than a plain function"),
        "a wrapper named as something of the host's": ("int blocks(int x) { return x; }\n" + MAIN, host, "a name the host unit spells"),
        "a namespace in main.cpp": ("namespace ext { int f(); }\n" + MAIN, host, "opens a namespace"),
        "a namespace in the host unit": (MAIN, host + "\nnamespace at { void hook(); }\n", "the host unit opens a namespace"),
        "an explicit specialisation": (MAIN, host + "\ntemplate <> struct std::hash<int>;\n", "specialises a template"),
        "the module's names in the host": (MAIN, host + "\nextern \"C\" void* PyInit_other();\n", "a name of the module's"),
    }
    # the host unit names the function before its own declaration of it: alone an undeclared name
    # (or another overload), joined main.cpp's prototype would answer it
    early_call = LOAD_INLINE_HEAD + "torch::Tensor twice(torch::Tensor x) { return gelu_scale(x, 2.0); }\n" + \
        ELEMENTWISE[len(LOAD_INLINE_HEAD):]
    declined["a call before the host's declaration"] = (MAIN, split(early_call).host, "does not declare the same way")
    other_first = LOAD_INLINE_HEAD + "torch::Tensor gelu_scale(torch::Tensor x, float scale);\n" + \
        ELEMENTWISE[len(LOAD_INLINE_HEAD):]
    declined["another overload declared first"] = (MAIN, split(other_first).host, "does not declare the same way")
    macro_first = LOAD_INLINE_HEAD + "#define SCALED(x) gelu_scale(x, 2.0)\n" + ELEMENTWISE[len(LOAD_INLINE_HEAD):]
    declined["a macro naming it first"] = (MAIN, split(macro_first).host, "does not declare the same way")
    declined["a host macro main.cpp spells"] = (MAIN, "#define double float\n" + host, "defines a macro main.cpp spells")
    for what, (main, host_text, why) in declined.items():
        said = cs.join_declined(main, host_text)
        assert why in said, (what, said)
    # the same declaration first, then a call, then the definition: joinable
    declared_first = LOAD_INLINE_HEAD + "torch::Tensor gelu_scale(torch::Tensor input, double);\n" + \
        "torch::Tensor twice(torch::Tensor x) { return gelu_scale(x, 2.0); }\n" + ELEMENTWISE[len(LOAD_INLINE_HEAD):]
    assert cs.join_declined(MAIN, split(declared_first).host) == "", cs.join_declined(MAIN, split(declared_first).host)
    # a using-directive in the host unit is its own lookup's alone: joinable
    assert cs.join_declined(MAIN, host + "\nusing namespace std;\n") == ""
    # the one unit keeps main.cpp's lines under its own name, then the host unit as it was
    unit = cs.joined_unit("/build/main.cpp", MAIN, host)
    assert unit.startswith('#line 1 "/build/main.cpp"\n' + MAIN + "\n") and unit.endswith(host), unit[:200]
    # and any text reads without another exception than a reason
    for text in (MAIN, host):
        for end in range(0, len(text), 5):
            assert isinstance(cs.join_declined(text[:end], host), str)
            assert isinstance(cs.join_declined(MAIN, text[:end]), str)


def find_nvcc():
    """nvcc on PATH, else CUDA's default place, else None."""
    return shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def nvcc_include_flags(nvcc):
    """The include directories nvcc itself hands its host compiler: CUDA's headers sit under
    targets/<arch>/include in NVIDIA's layout and elsewhere in a distribution's, so ask nvcc."""
    done = subprocess.run([nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
                          capture_output=True, text=True)
    flags = []
    for line in done.stderr.splitlines():
        m = re.match(r"#\$ (?:SYSTEM_)?INCLUDES=(.*)$", line)
        if m:
            flags += shlex.split(m.group(1))
    assert any(f.startswith("-I") or f == "-isystem" for f in flags), f"nvcc names no include directory:\n{done.stderr[-2000:]}"
    return flags


def compiles_with_nvcc_and_gxx():
    """The device units by nvcc with torch's CUDA flags and no torch; the host units by g++ with a
    stand-in torch header (the launcher calls and prototypes must agree; a real torch's host unit
    is built by extension_pch's split case)."""
    nvcc = find_nvcc()
    if nvcc is None:
        print("  (no nvcc: the units are not compiled)")
        return
    cuda_includes = nvcc_include_flags(nvcc)
    root = tempfile.mkdtemp(prefix="kwb-split-")
    try:
        stand_in = os.path.join(root, "torch")
        os.makedirs(stand_in)
        for header in ("types.h", "extension.h"):
            with open(os.path.join(stand_in, header), "w") as f:
                # just enough of torch for the fixtures' host code
                f.write("#pragma once\n#include <cstdint>\n#include <vector>\n#include <stdexcept>\n"
                        "namespace torch { struct TensorOptions {}; struct Tensor {\n"
                        "  float* p = nullptr; int64_t n = 0; bool is_cuda() const { return true; }\n"
                        "  template <typename T> T* data_ptr() const { return (T*)p; } int64_t numel() const { return n; }\n"
                        "  int64_t size(int) const { return n; } TensorOptions options() const { return {}; } };\n"
                        "inline Tensor empty_like(const Tensor& t) { return t; }\n"
                        "inline Tensor zeros(std::vector<int64_t>, TensorOptions) { return {}; } }\n"
                        "namespace at { namespace cuda { struct CUDAStream { operator cudaStream_t() const { return 0; } };\n"
                        "inline CUDAStream getCurrentCUDAStream() { return {}; } } }\n"
                        "#define TORCH_CHECK(c, ...) do { if (!(c)) throw std::runtime_error(\"check\"); } while (0)\n"
                        "#define AT_DISPATCH_FLOATING_TYPES(T, NAME, ...) [&] { { using scalar_t = double; (__VA_ARGS__)(); }"
                        " { using scalar_t = float; (__VA_ARGS__)(); } }()\n")
        for n, text in enumerate((ELEMENTWISE, NAMESPACED, TEMPLATED, CUB_AND_MIN)):
            s = split(text, ["#define __CUDA_NO_HALF_OPERATORS__ 1"])
            dev, host = os.path.join(root, f"{n}.device.cu"), os.path.join(root, f"{n}.host.cpp")
            open(dev, "w").write(s.device)
            # the stand-in comes in as torch's header does, ahead of the unit (-include)
            open(host, "w").write('#include <cuda_runtime.h>\n#include "torch/extension.h"\n' + s.host)
            t0 = time.monotonic()
            done = subprocess.run([nvcc, "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                                   "--expt-relaxed-constexpr", "-arch=sm_80", "--compiler-options", "-fPIC",
                                   "-std=c++17", "-c", dev, "-o", dev + ".o"], capture_output=True, text=True)
            assert done.returncode == 0, f"nvcc of the device unit {n}:\n{done.stderr[-3000:]}"
            device_s = time.monotonic() - t0
            done = subprocess.run([os.environ.get("CXX", "c++"), "-I", root, *cuda_includes, "-fPIC",
                                   "-std=c++17", "-c", host, "-o", host + ".o"], capture_output=True, text=True)
            assert done.returncode == 0, f"g++ of the host unit {n}:\n{done.stderr[-3000:]}"
            # the host object needs exactly the launchers the device object defines
            undefined = subprocess.run(["nm", "-C", "--undefined-only", host + ".o"], capture_output=True, text=True).stdout
            defined = subprocess.run(["nm", "-C", "--defined-only", dev + ".o"], capture_output=True, text=True).stdout
            wanted = {l.strip().split(" ", 1)[-1] for l in undefined.splitlines() if cs.LAUNCHER_PREFIX in l}
            made = {l.split(" ", 2)[-1] for l in defined.splitlines() if cs.LAUNCHER_PREFIX in l}
            assert wanted and wanted <= made, (wanted, made)
            for k in s.kernels:
                assert any(cs.LAUNCHER_PREFIX + k.name in w for w in wanted), (k.name, wanted)
            # and a message from the device unit names the answer's own file and line
            broken = text.replace("acc += x[r * s.cols + c]", "acc += x[r * s.cols + c] + undeclared_name")
            if broken != text:
                open(dev, "w").write(split(broken).device)
                done = subprocess.run([nvcc, "-arch=sm_80", "-std=c++17", "-c", dev, "-o", dev + ".o"],
                                      capture_output=True, text=True)
                line = next(i + 1 for i, l in enumerate(broken.split("\n")) if "undeclared_name" in l)
                assert f'{PATH}({line}): error: identifier "undeclared_name" is undefined' in done.stderr, done.stderr
            print(f"  unit {n}: nvcc of the device unit {device_s:.1f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Host code calling CUDA's unqualified min and max over pairs of argument types: whether each call
# compiles (SFINAE), and its result's type and value. nvcc's host pass declares CUDA's overloads; the
# host unit has them only from the split's prelude.
MIN_MAX_PROBE = r"""#include <cstdint>
#include <cstdio>
#include <cstddef>
#include <type_traits>
#include <utility>
template <class A, class B, class = void> struct can_min : std::false_type {};
template <class A, class B> struct can_min<A, B, decltype((void)min(std::declval<A>(), std::declval<B>()))> : std::true_type {};
template <class A, class B, class = void> struct can_max : std::false_type {};
template <class A, class B> struct can_max<A, B, decltype((void)max(std::declval<A>(), std::declval<B>()))> : std::true_type {};
template <class R> void show(const char* op, const char* a, const char* b, R r) {
  std::printf("%s(%s,%s) -> %zu %s %.3f\n", op, a, b, sizeof(R),
              std::is_floating_point<R>::value ? "float" : std::is_signed<R>::value ? "signed" : "unsigned", double(r));
}
template <class A, class B> void row(const char* a, const char* b) {
  if constexpr (can_min<A, B>::value) show("min", a, b, min(A(-1), B(5))); else std::printf("min(%s,%s) -> none\n", a, b);
  if constexpr (can_max<A, B>::value) show("max", a, b, max(A(-1), B(5))); else std::printf("max(%s,%s) -> none\n", a, b);
}
#define ROW(X) row<X, int>(#X, "int"); row<X, unsigned>(#X, "unsigned"); row<X, long>(#X, "long"); \
  row<X, unsigned long>(#X, "unsigned long"); row<X, long long>(#X, "long long"); \
  row<X, unsigned long long>(#X, "unsigned long long"); row<X, float>(#X, "float"); row<X, double>(#X, "double"); \
  row<X, short>(#X, "short"); row<X, char>(#X, "char"); row<X, bool>(#X, "bool"); row<X, size_t>(#X, "size_t"); \
  row<X, int64_t>(#X, "int64_t");
int main() {
  ROW(int) ROW(unsigned) ROW(long) ROW(unsigned long) ROW(long long) ROW(unsigned long long) ROW(float)
  ROW(double) ROW(short) ROW(char) ROW(bool) ROW(size_t) ROW(int64_t)
  std::printf("umin %u llmax %lld ullmin %llu\n", umin(3u, 9u), llmax(-4ll, 2ll), ullmin(7ull, 8ull));
  return 0;
}
"""


def host_min_max_as_nvcc():
    """An unqualified min in host code splits: the host unit declares CUDA's overloads (only where the
    source names one), and g++ resolves every pair of argument types as nvcc's host pass does."""
    assert cs.HOST_MIN_MAX not in split(ELEMENTWISE).host
    host = split(MIN_MAX_PROBE).host
    assert cs.HOST_MIN_MAX in host
    nvcc = find_nvcc()
    if nvcc is None:
        print("  (no nvcc: the resolution is not compared)")
        return
    root = tempfile.mkdtemp(prefix="kwb-split-minmax-")
    try:
        cu, cpp, bare = (os.path.join(root, n) for n in ("probe.cu", "probe.kwb-host.cpp", "bare.kwb-host.cpp"))
        open(cu, "w").write(MIN_MAX_PROBE)
        open(cpp, "w").write(host)
        open(bare, "w").write(host.replace(cs.HOST_MIN_MAX, ""))
        tables = []
        gxx = os.environ.get("CXX", "c++")
        for compiler, source in ((nvcc, cu), (gxx, cpp)):
            flags = nvcc_include_flags(nvcc) if source == cpp else []
            exe = source + ".exe"
            done = subprocess.run([compiler, "-std=c++17", *flags, source, "-o", exe], capture_output=True, text=True)
            assert done.returncode == 0, f"{compiler} {source}:\n{done.stderr[-3000:]}"
            tables.append(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)
        nvcc_table, gxx_table = tables
        lines = nvcc_table.splitlines()
        # the probe tells calls apart: some pairs are ambiguous under CUDA's set, others resolve to
        # another type than the arguments'
        assert "min(int,long) -> none" in lines and "min(int,unsigned) -> 4 unsigned 5.000" in lines, nvcc_table
        assert len(lines) == 2 * 13 * 13 + 1, len(lines)
        differ = [(a, b) for a, b in zip(lines, gxx_table.splitlines()) if a != b]
        assert nvcc_table == gxx_table, f"nvcc against the host unit: {differ[:5]}"
        # and without the prelude, g++ knows no min at all
        done = subprocess.run([gxx, "-std=c++17", *nvcc_include_flags(nvcc), "-fsyntax-only", bare],
                              capture_output=True, text=True)
        assert done.returncode != 0 and "min" in done.stderr, done.stderr[-1000:]
        # Host code defining a max of its own: nvcc refuses it (CUDA's is defined already), and so
        # does g++ with the prelude, so the split fails and the whole build's error is the answer's
        own = "inline float max(float a, float b) { return a > b ? a : b; }\nfloat f(float x) { return max(x, 2.f); }\n"
        open(cu, "w").write(own)
        open(cpp, "w").write(split(own).host)
        assert cs.HOST_MIN_MAX in split(own).host
        for compiler, source, flags in ((nvcc, cu, []), (gxx, cpp, nvcc_include_flags(nvcc))):
            done = subprocess.run([compiler, "-std=c++17", *flags, "-c", source, "-o", source + ".o"],
                                  capture_output=True, text=True)
            assert done.returncode != 0 and "max(float, float)" in done.stderr, (compiler, done.stderr[-1000:])
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    cases = [keeps_every_line_where_it_was, device_unit_has_kernels_and_launchers,
             host_unit_launches_through_the_launcher, multiline_launch_in_a_namespace, template_kernels_by_their_dispatch,
             declines_what_it_cannot_split_faithfully, unnamed_and_typed_parameters, flags_that_must_agree,
             nvcc_host_compiler_from_flags, joins_main_cpp_only_where_neither_part_can_read_differently,
             reads_any_text_without_crashing, compiles_with_nvcc_and_gxx, host_min_max_as_nvcc]
    only = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--only=")]
    failed = 0
    for case in [c for c in cases if not only or c.__name__ in only]:
        t0 = time.monotonic()
        try:
            case()
            print(f"PASS {case.__name__} ({time.monotonic() - t0:.1f} s)", flush=True)
        except AssertionError as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}", flush=True)
    sys.exit(1 if failed else 0)
