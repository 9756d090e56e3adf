// NVRTC compilation: runs on a CPU machine (no GPU, no driver needed).
#include "clock_probe.hpp"
#include "device_info.hpp"
#include "nvrtc_compiler.hpp"
#include "output_compare.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

using namespace kwb;

namespace {

const char* kBiasRelu = R"(
extern "C" __global__ void bias_relu(float* y, const float* b, long long n, int c, int hw) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { float v = y[i] + b[(i / hw) % c]; y[i] = v > 0.f ? v : 0.f; }
}
)";

bool isElf(const std::vector<char>& b) { return b.size() > 4 && std::memcmp(b.data(), "\x7f" "ELF", 4) == 0; }

}  // namespace

TEST_CASE("version and architectures") {
    CHECK(nvrtcVersionString().find('.') != std::string::npos);
    auto archs = nvrtcSupportedArchs();
    REQUIRE_FALSE(archs.empty());
    CHECK(std::find(archs.begin(), archs.end(), "sm_90") != archs.end());
    CHECK(std::find(archs.begin(), archs.end(), "sm_80") != archs.end());
    CHECK_FALSE(nvrtcIncludeDirs().empty());
}

TEST_CASE("a kernel compiles to a cubin for sm_90 and sm_80") {
    for (const char* arch : {"sm_90", "sm_80", "sm_90a"}) {
        CAPTURE(arch);
        CompileResult r = compileCuda(kBiasRelu, arch);
        INFO(r.log);
        REQUIRE(r.ok);
        CHECK(isElf(r.cubin));
        CHECK(r.arch == arch);
        CHECK(r.ms > 0);
        CHECK(r.options.at(0) == std::string("--gpu-architecture=") + arch);
        CHECK(std::find(r.options.begin(), r.options.end(), "--std=c++17") != r.options.end());
        CHECK(std::find(r.options.begin(), r.options.end(), "-default-device") != r.options.end());
    }
}

TEST_CASE("a compile error returns the error line in the log") {
    const std::string src = "extern \"C\" __global__ void k(float* y) {\n"
                            "    y[0] = 1.0f\n"  // missing ';'
                            "}\n";
    CompileResult r = compileCuda(src, "sm_90");
    CHECK_FALSE(r.ok);
    CHECK(r.cubin.empty());
    INFO(r.log);
    CHECK(r.log.find("candidate.cu(") != std::string::npos);
    CHECK(r.log.find("error") != std::string::npos);
    CHECK((r.log.find("candidate.cu(2)") != std::string::npos || r.log.find("candidate.cu(3)") != std::string::npos));

    CompileResult u = compileCuda("extern \"C\" __global__ void k(float* y) { y[0] = undefined_name; }\n", "sm_90");
    CHECK_FALSE(u.ok);
    CHECK(u.log.find("undefined_name") != std::string::npos);
}

TEST_CASE("an invalid architecture is refused with a clear log") {
    for (const char* arch : {"sm_1", "compute_90", "gfx90a", "", "sm_9x", "sm_999"}) {
        CAPTURE(arch);
        CompileResult r = compileCuda(kBiasRelu, arch);
        CHECK_FALSE(r.ok);
        CHECK(r.log.find("invalid GPU architecture") != std::string::npos);
        CHECK(r.log.find("sm_90") != std::string::npos);  // the supported list is shown
    }
}

TEST_CASE("an invalid extra option is reported by name") {
    CompileResult r = compileCuda(kBiasRelu, "sm_90", {"--no-such-option"});
    CHECK_FALSE(r.ok);
    INFO(r.log);
    CHECK(r.log.find("--no-such-option") != std::string::npos);
}

TEST_CASE("toolkit headers resolve: cuda_fp16.h, cuda_bf16.h") {
    const char* src = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_add(__half* y, const __half* a, const __nv_bfloat16* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(a[i], __float2half(__bfloat162float(b[i])));
}
)";
    CompileResult r = compileCuda(src, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
    CHECK(isElf(r.cubin));
}

TEST_CASE("dynamic shared memory (extern __shared__)") {
    const char* src = R"(
extern "C" __global__ void row_sum(const float* x, float* y, int cols) {
    extern __shared__ float buf[];
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[blockIdx.x * cols + c];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = buf[0];
}
)";
    CompileResult r = compileCuda(src, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
    CHECK(isElf(r.cubin));
}

TEST_CASE("the ceiling kernels of device_info compile") {
    for (const char* arch : {"sm_90", "sm_80"}) {
        CAPTURE(arch);
        for (const char* src : {fmaPeakKernelSource(), wmmaBf16KernelSource(), wmmaTf32KernelSource()}) {
            CompileResult r = compileCuda(src, arch);
            INFO(r.log);
            CHECK(r.ok);
            CHECK(isElf(r.cubin));
        }
    }
}

TEST_CASE("the worker's own kernels compile once per process and arch, the same result for every caller") {
    // The output comparison (output_compare.cpp) and the clock probe, for Hopper and Ampere.
    for (const char* arch : {"sm_90", "sm_80"}) {
        CAPTURE(arch);
        for (const char* src : {fusedCompareSource(), ClockProbe::source()}) {
            const CompileResult& r = compileOwnKernel(src, arch);
            INFO(r.log);
            CHECK(r.ok);
            CHECK(isElf(r.cubin));
            CHECK(&compileOwnKernel(src, arch) == &r); // kept, not compiled again
        }
    }
    CHECK(&compileOwnKernel(fusedCompareSource(), "sm_90") != &compileOwnKernel(fusedCompareSource(), "sm_80"));
}

TEST_CASE("includes outside the toolkit are refused before NVRTC runs: nothing of the file reaches the log") {
    // At 08b8dde NVRTC opened these and printed their lines (or the worker's environment) in the log.
    for (const char* inc : {"#include \"/etc/passwd\"", "#include </etc/passwd>", "#include \"/proc/self/environ\"",
                            "#include \"../../../../../../../../etc/passwd\"", "#define F \"/etc/passwd\"\n#include F",
                            "#inc\\\nlude \"/etc/passwd\"", "%:include \"/etc/passwd\"",
                            "#if __has_include(\"/etc/passwd\")\n#endif"}) {
        CAPTURE(inc);
        CompileResult r = compileCuda(std::string(inc) + "\n" + kBiasRelu, "sm_90");
        INFO(r.log);
        CHECK_FALSE(r.ok);
        REQUIRE(r.refused);
        CHECK(r.refused->code == "include_refused");
        CHECK(r.log.find("refused before compiling") != std::string::npos);
        CHECK(r.log.find("root:") == std::string::npos);
        CHECK(r.log.find("PATH=") == std::string::npos);
        CHECK(r.options.empty());  // NVRTC was not called
        CHECK(checkCudaForNvrtc(std::string(inc) + "\n" + kBiasRelu));
    }
    // A quoted name that exists in the working directory, which NVRTC searches first for "name".
    const char* probe = "kwb_tst_nvrtc_cwd_probe.h";
    { std::FILE* f = std::fopen(probe, "w"); REQUIRE(f); std::fputs("#error secret_in_cwd\n", f); std::fclose(f); }
    CompileResult cwd = compileCuda(std::string("#include \"") + probe + "\"\n" + kBiasRelu, "sm_90");
    std::remove(probe);
    INFO(cwd.log);
    CHECK_FALSE(cwd.ok);
    REQUIRE(cwd.refused);
    CHECK(cwd.log.find("secret_in_cwd") == std::string::npos);
}

TEST_CASE("toolkit headers that honest kernels include still compile, quoted or not") {
    const char* src = R"(
#include <cuda_fp16.h>
#include "cuda_bf16.h"
#include <mma.h>
#include <cooperative_groups.h>
#include <cuda/std/cstdint>
namespace cg = cooperative_groups;
extern "C" __global__ void k(__half* y, const __nv_bfloat16* b, int n) {
    cg::thread_block tb = cg::this_thread_block();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(__bfloat162float(b[i]) + float(tb.thread_rank()) * 0.f);
}
)";
    CHECK_FALSE(checkCudaForNvrtc(src));
    CompileResult r = compileCuda(src, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
    CHECK_FALSE(r.refused);
}
