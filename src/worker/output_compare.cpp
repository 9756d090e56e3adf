#include "output_compare.hpp"

#include "cuda_driver.hpp"
#include "nvrtc_compiler.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <vector>

namespace kwb {

namespace {
// Each step rounds as ATen's float32 kernel for it does: sub (a + (−1)·b, one rounding), abs,
// mul by the float scalar rtol, add of the float scalar atol, le; the relative difference divides
// where(isfinite(d), d, 0) by fl(|b| + 1e-12f). The _rn intrinsics keep NVRTC from contracting
// the mul and add into one fma (which would round once). Non-negative floats order as their bit
// patterns, so the maxima are unsigned maxima of the bits (a NaN quotient, 0x7fc00000 and up,
// wins as ATen's max propagates NaN).
constexpr const char* kSource = R"(
extern "C" __global__ void kwb_allclose_f32(const float* __restrict__ a, const float* __restrict__ b,
                                            unsigned long long n, float atol, float rtol,
                                            unsigned long long* __restrict__ out)
{
    unsigned long long bad = 0, maxAbs = 0, maxRel = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float x = a[i], y = b[i];
        const float d = fabsf(__fsub_rn(x, y));
        const float tol = __fadd_rn(__fmul_rn(fabsf(y), rtol), atol);
        bad += (d <= tol) ? 0ull : 1ull;
        const float fd = isfinite(d) ? d : 0.0f;
        const float rel = __fdiv_rn(fd, __fadd_rn(fabsf(y), 1e-12f));
        const unsigned long long fa = __float_as_uint(fd), fr = __float_as_uint(rel);
        maxAbs = fa > maxAbs ? fa : maxAbs;
        maxRel = fr > maxRel ? fr : maxRel;
    }
    for (int off = 16; off > 0; off >>= 1) {
        bad += __shfl_down_sync(0xffffffffu, bad, off);
        const unsigned long long oa = __shfl_down_sync(0xffffffffu, maxAbs, off);
        const unsigned long long orl = __shfl_down_sync(0xffffffffu, maxRel, off);
        maxAbs = oa > maxAbs ? oa : maxAbs;
        maxRel = orl > maxRel ? orl : maxRel;
    }
    if ((threadIdx.x & 31) == 0) {
        if (bad) atomicAdd(&out[0], bad);
        atomicMax(&out[1], maxAbs);
        atomicMax(&out[2], maxRel);
    }
}
)";

std::string archOf(int ordinal)
{
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess) {
        cudaGetLastError();
        return {};
    }
    return "sm_" + std::to_string(major * 10 + minor);
}

/// The loaded kernel and its result buffer, for the first device used in this process.
struct Loaded {
    int ordinal = -1;
    std::unique_ptr<LoadedModule> module;
    unsigned long long* result = nullptr; ///< device: mismatches, max |a − b| bits, max rel bits
    unsigned blocks = 0;
    std::string why; ///< why not, where module is null
};

Loaded& loaded(int ordinal)
{
    static Loaded l = [ordinal] {
        Loaded x;
        x.ordinal = ordinal;
        const std::string arch = archOf(ordinal);
        if (arch.empty()) {
            x.why = "no CUDA device attributes";
            return x;
        }
        const CompileResult& cr = compileOwnKernel(kSource, arch);
        if (!cr.ok) {
            x.why = "NVRTC: " + cr.log;
            return x;
        }
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal) != cudaSuccess || sms <= 0) {
            cudaGetLastError();
            x.why = "no SM count";
            return x;
        }
        if (cudaMalloc(reinterpret_cast<void**>(&x.result), 3 * sizeof(unsigned long long)) != cudaSuccess) {
            cudaGetLastError();
            x.why = "no device memory for the comparison's result";
            return x;
        }
        x.module = LoadedModule::load(cr.cubin, &x.why, ordinal);
        x.blocks = unsigned(sms) * 8; // 8 blocks of 256 per SM: full occupancy for a streaming read
        return x;
    }();
    return l;
}

template <typename T>
std::vector<char> arg(const T& v)
{
    std::vector<char> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    return b;
}
} // namespace

const char* fusedCompareSource()
{
    return kSource;
}

void precompileFusedCompare(int ordinal)
{
    const std::string arch = archOf(ordinal);
    if (!arch.empty())
        compileOwnKernel(kSource, arch);
}

std::optional<FusedComparison> fusedCompare(const float* a, const float* b, int64_t n, double atol, double rtol,
                                            int ordinal, std::string* why)
{
    Loaded& l = loaded(ordinal);
    if (l.ordinal != ordinal) {
        *why = "the comparison kernel is loaded for device " + std::to_string(l.ordinal);
        return std::nullopt;
    }
    if (!l.module) {
        *why = l.why;
        return std::nullopt;
    }
    FusedComparison c;
    if (n <= 0)
        return c;
    if (cudaMemsetAsync(l.result, 0, 3 * sizeof(unsigned long long), nullptr) != cudaSuccess) {
        cudaGetLastError();
        *why = "cudaMemsetAsync failed";
        return std::nullopt;
    }
    const unsigned long long count = static_cast<unsigned long long>(n);
    const float atolF = static_cast<float>(atol), rtolF = static_cast<float>(rtol); // as ATen casts its scalars
    const unsigned long long* out = l.result;
    const std::string err = l.module->launch("kwb_allclose_f32", {l.blocks, 1, 1}, {256, 1, 1}, 0, nullptr,
                                             {arg(a), arg(b), arg(count), arg(atolF), arg(rtolF), arg(out)});
    if (!err.empty()) {
        *why = err;
        return std::nullopt;
    }
    unsigned long long host[3] = {0, 0, 0};
    if (cudaMemcpy(host, l.result, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        *why = "cudaMemcpy of the comparison's result failed";
        return std::nullopt;
    }
    float fa = 0, fr = 0;
    const unsigned ua = static_cast<unsigned>(host[1]), ur = static_cast<unsigned>(host[2]);
    std::memcpy(&fa, &ua, sizeof fa);
    std::memcpy(&fr, &ur, sizeof fr);
    c.mismatches = static_cast<int64_t>(host[0]);
    c.maxAbs = fa;
    c.maxRel = fr;
    return c;
}

} // namespace kwb
