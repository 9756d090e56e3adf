// NVRTC compilation: runs on a CPU machine (no GPU, no driver needed).
#include "device_info.hpp"
#include "nvrtc_compiler.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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
