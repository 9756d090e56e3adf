#include "worker/evaluate/outputcompare.h"

#include "worker/compile/nvrtccompiler.h"
#include "worker/device/cudadriver.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
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
// A warp's sum and maximum, left in lane 0: each kernel below reduces its threads' partial
// results with these, then lane 0 adds them to the result words with one atomic each.
__device__ __forceinline__ unsigned long long kwb_warp_sum(unsigned long long v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}
__device__ __forceinline__ unsigned long long kwb_warp_max(unsigned long long v)
{
    for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long o = __shfl_down_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    return v;
}
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
    bad = kwb_warp_sum(bad);
    maxAbs = kwb_warp_max(maxAbs);
    maxRel = kwb_warp_max(maxRel);
    if ((threadIdx.x & 31) == 0) {
        if (bad) atomicAdd(&out[0], bad);
        atomicMax(&out[1], maxAbs);
        atomicMax(&out[2], maxRel);
    }
}

// Order-preserving key of a non-NaN float: larger floats, larger keys (-0 just below +0).
__device__ __forceinline__ unsigned long long kwb_key(float x)
{
    const unsigned u = __float_as_uint(x);
    return (u & 0x80000000u) ? (unsigned long long)(~u) : (unsigned long long)(u | 0x80000000u);
}

// out: [0] elements == 0, [1] not finite, [2] NaN, [3] max of ~key (the minimum's), [4] max key;
// the keys over the elements that are not NaN.
extern "C" __global__ void kwb_stats_f32(const float* __restrict__ x, unsigned long long n,
                                         unsigned long long* __restrict__ out)
{
    unsigned long long zeros = 0, nonFinite = 0, nans = 0, minInv = 0, maxKey = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        zeros += v == 0.0f ? 1ull : 0ull;
        nonFinite += isfinite(v) ? 0ull : 1ull;
        if (isnan(v)) {
            ++nans;
            continue;
        }
        const unsigned long long k = kwb_key(v), inv = 0xffffffffull ^ k;
        maxKey = k > maxKey ? k : maxKey;
        minInv = inv > minInv ? inv : minInv;
    }
    zeros = kwb_warp_sum(zeros);
    nonFinite = kwb_warp_sum(nonFinite);
    nans = kwb_warp_sum(nans);
    minInv = kwb_warp_max(minInv);
    maxKey = kwb_warp_max(maxKey);
    if ((threadIdx.x & 31) == 0) {
        if (zeros) atomicAdd(&out[0], zeros);
        if (nonFinite) atomicAdd(&out[1], nonFinite);
        if (nans) atomicAdd(&out[2], nans);
        atomicMax(&out[3], minInv);
        atomicMax(&out[4], maxKey);
    }
}

// out[0] += the elements where !(a == b) as floats (NaN never equal, -0 == +0), as torch.equal.
extern "C" __global__ void kwb_unequal_f32(const float* __restrict__ a, const float* __restrict__ b,
                                           unsigned long long n, unsigned long long* __restrict__ out)
{
    unsigned long long bad = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        bad += (a[i] == b[i]) ? 0ull : 1ull;
    bad = kwb_warp_sum(bad);
    if ((threadIdx.x & 31) == 0 && bad)
        atomicAdd(&out[0], bad);
}

// out[0] += the 8-byte words and then the tail bytes (< 8) where a and b differ; both 8-aligned.
extern "C" __global__ void kwb_unequal_bytes(const unsigned long long* __restrict__ a,
                                             const unsigned long long* __restrict__ b, unsigned long long words,
                                             const unsigned char* __restrict__ ta, const unsigned char* __restrict__ tb,
                                             unsigned tail, unsigned long long* __restrict__ out)
{
    unsigned long long bad = 0;
    const unsigned long long start = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = start; i < words; i += stride)
        bad += a[i] == b[i] ? 0ull : 1ull;
    if (start == 0)
        for (unsigned t = 0; t < tail; ++t)
            bad += ta[t] == tb[t] ? 0ull : 1ull;
    bad = kwb_warp_sum(bad);
    if ((threadIdx.x & 31) == 0 && bad)
        atomicAdd(&out[0], bad);
}

// *out = the sum (mod 2^64) of the words and of the tail bytes (< 8, each as its value): the
// byte fingerprint of tensorfingerprint.h. The words 8-aligned.
extern "C" __global__ void kwb_word_sum(const unsigned long long* __restrict__ w, unsigned long long words,
                                        const unsigned char* __restrict__ tail, unsigned tailBytes,
                                        unsigned long long* __restrict__ out)
{
    unsigned long long s = 0;
    const unsigned long long start = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = start; i < words; i += stride)
        s += w[i];
    if (start == 0)
        for (unsigned t = 0; t < tailBytes; ++t)
            s += tail[t];
    s = kwb_warp_sum(s);
    if ((threadIdx.x & 31) == 0 && s)
        atomicAdd(out, s);
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

/// Result words on the device: the first kFixed for one kernel's result, then one per fingerprint
/// of a batch (kFingerprintBatch at most per copy back).
constexpr size_t kFixed = 8;
constexpr size_t kSlots = kFixed + kFingerprintBatch;

/// The loaded kernels and their result buffer, for the first device used in this process.
struct Loaded
{
    int ordinal = -1;
    std::unique_ptr<LoadedModule> module;
    unsigned long long* result = nullptr; ///< device: kSlots words
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
        if (cudaMalloc(reinterpret_cast<void**>(&x.result), kSlots * sizeof(unsigned long long)) != cudaSuccess) {
            cudaGetLastError();
            x.why = "no device memory for the kernels' results";
            return x;
        }
        x.module = LoadedModule::load(cr.cubin, &x.why, ordinal);
        x.blocks = unsigned(sms) * 8; // 8 blocks of 256 per SM: full occupancy for a streaming read
        return x;
    }();
    return l;
}

/// The loaded kernels for `ordinal`, or null with *why.
Loaded* usable(int ordinal, std::string* why)
{
    Loaded& l = loaded(ordinal);
    if (l.ordinal != ordinal) {
        *why = "the evaluator's kernels are loaded for device " + std::to_string(l.ordinal);
        return nullptr;
    }
    if (!l.module) {
        *why = l.why;
        return nullptr;
    }
    return &l;
}

template <typename T>
std::vector<char> arg(const T& v)
{
    std::vector<char> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    return b;
}

/// Zeroes `words` result words from `first`, launches `name` over the grid on the legacy default
/// stream (after the work queued before it) and copies the words back (the one synchronisation).
bool run(Loaded& l, const char* name, const std::vector<std::vector<char>>& args, size_t first, size_t words,
         unsigned long long* host, std::string* why)
{
    if (cudaMemsetAsync(l.result + first, 0, words * sizeof(unsigned long long), nullptr) != cudaSuccess) {
        cudaGetLastError();
        *why = "cudaMemsetAsync failed";
        return false;
    }
    const std::string err = l.module->launch(name, {l.blocks, 1, 1}, {256, 1, 1}, 0, nullptr, args);
    if (!err.empty()) {
        *why = err;
        return false;
    }
    if (cudaMemcpy(host, l.result + first, words * sizeof(unsigned long long), cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        *why = std::string("cudaMemcpy of ") + name + "'s result failed";
        return false;
    }
    return true;
}

/// One kernel of the module on `ordinal`'s device over its first W result words (the result
/// pointer is appended as the last argument): the words copied back, all zero without a launch
/// where the data is empty; nullopt with *why where the module is not usable or the launch fails.
template <size_t W>
std::optional<std::array<unsigned long long, W>> runOne(int ordinal, const char* name, bool empty,
                                                        std::vector<std::vector<char>> args, std::string* why)
{
    Loaded* l = usable(ordinal, why);
    if (!l)
        return std::nullopt;
    std::array<unsigned long long, W> host{};
    if (empty)
        return host;
    args.push_back(arg(static_cast<const unsigned long long*>(l->result)));
    if (!run(*l, name, args, 0, W, host.data(), why))
        return std::nullopt;
    return host;
}

float floatOfBits(unsigned long long bits)
{
    const unsigned u = static_cast<unsigned>(bits);
    float f = 0;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

/// The float whose order key (kwb_key in the source) is `key`.
float floatOfKey(unsigned long long key)
{
    const unsigned k = static_cast<unsigned>(key);
    return floatOfBits((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

bool aligned8(const void* p)
{
    return reinterpret_cast<std::uintptr_t>(p) % 8 == 0;
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
    const unsigned long long count = n > 0 ? static_cast<unsigned long long>(n) : 0;
    const float atolF = static_cast<float>(atol), rtolF = static_cast<float>(rtol); // as ATen casts its scalars
    const auto host =
        runOne<3>(ordinal, "kwb_allclose_f32", count == 0, {arg(a), arg(b), arg(count), arg(atolF), arg(rtolF)}, why);
    if (!host)
        return std::nullopt;
    FusedComparison c;
    c.mismatches = static_cast<int64_t>((*host)[0]);
    c.maxAbs = floatOfBits((*host)[1]);
    c.maxRel = floatOfBits((*host)[2]);
    return c;
}

std::optional<FusedStats> fusedStats(const float* x, int64_t n, int ordinal, std::string* why)
{
    const unsigned long long count = n > 0 ? static_cast<unsigned long long>(n) : 0;
    const auto host = runOne<5>(ordinal, "kwb_stats_f32", count == 0, {arg(x), arg(count)}, why);
    if (!host)
        return std::nullopt;
    FusedStats s;
    s.zeros = static_cast<int64_t>((*host)[0]);
    s.nonFinite = static_cast<int64_t>((*host)[1]);
    s.nans = static_cast<int64_t>((*host)[2]);
    if (s.nans < n) {
        s.min = floatOfKey(0xffffffffull ^ (*host)[3]);
        s.max = floatOfKey((*host)[4]);
    }
    return s;
}

std::optional<int64_t> fusedUnequalFloats(const float* a, const float* b, int64_t n, int ordinal, std::string* why)
{
    const unsigned long long count = n > 0 ? static_cast<unsigned long long>(n) : 0;
    const auto host = runOne<1>(ordinal, "kwb_unequal_f32", count == 0, {arg(a), arg(b), arg(count)}, why);
    return host ? std::optional<int64_t>(static_cast<int64_t>((*host)[0])) : std::nullopt;
}

std::optional<int64_t> fusedUnequalBytes(const void* a, const void* b, int64_t bytes, int ordinal, std::string* why)
{
    if (!aligned8(a) || !aligned8(b)) {
        *why = "not 8-byte aligned";
        return std::nullopt;
    }
    const uint64_t size = bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
    const unsigned long long words = size / 8;
    const unsigned tail = static_cast<unsigned>(size % 8);
    const auto* ta = static_cast<const unsigned char*>(a) + words * 8;
    const auto* tb = static_cast<const unsigned char*>(b) + words * 8;
    const auto host = runOne<1>(ordinal, "kwb_unequal_bytes", size == 0,
                                {arg(a), arg(b), arg(words), arg(ta), arg(tb), arg(tail)}, why);
    return host ? std::optional<int64_t>(static_cast<int64_t>((*host)[0])) : std::nullopt;
}

std::optional<std::vector<uint64_t>> fusedWordSums(const std::vector<DeviceBytes>& spans, int ordinal, std::string* why)
{
    for (const DeviceBytes& s : spans)
        if (s.bytes > 0 && !aligned8(s.data)) {
            *why = "not 8-byte aligned";
            return std::nullopt;
        }
    Loaded* l = usable(ordinal, why);
    if (!l)
        return std::nullopt;
    std::vector<uint64_t> sums(spans.size(), 0);
    for (size_t first = 0; first < spans.size(); first += kFingerprintBatch) {
        const size_t count = std::min(kFingerprintBatch, spans.size() - first);
        if (cudaMemsetAsync(l->result + kFixed, 0, count * sizeof(unsigned long long), nullptr) != cudaSuccess) {
            cudaGetLastError();
            *why = "cudaMemsetAsync failed";
            return std::nullopt;
        }
        for (size_t k = 0; k < count; ++k) {
            const DeviceBytes& s = spans[first + k];
            if (s.bytes <= 0)
                continue;
            const unsigned long long words = static_cast<unsigned long long>(s.bytes) / 8;
            const unsigned tail = static_cast<unsigned>(s.bytes % 8);
            const auto* t = static_cast<const unsigned char*>(s.data) + words * 8;
            const unsigned long long* slot = l->result + kFixed + k;
            const std::string err = l->module->launch("kwb_word_sum", {l->blocks, 1, 1}, {256, 1, 1}, 0, nullptr,
                                                      {arg(s.data), arg(words), arg(t), arg(tail), arg(slot)});
            if (!err.empty()) {
                *why = err;
                return std::nullopt;
            }
        }
        if (cudaMemcpy(sums.data() + first, l->result + kFixed, count * sizeof(unsigned long long),
                       cudaMemcpyDeviceToHost) != cudaSuccess) {
            cudaGetLastError();
            *why = "cudaMemcpy of the fingerprints failed";
            return std::nullopt;
        }
    }
    return sums;
}

} // namespace kwb
