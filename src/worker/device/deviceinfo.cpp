#include "worker/device/deviceinfo.h"

#include "core/protocol/protocolnames.h"

#include "worker/compile/nvrtccompiler.h"
#include "worker/device/cudadriver.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace kwb {
namespace {

using json = nlohmann::json;

struct CudaFailure : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

void check(cudaError_t e, const char* what)
{
    if (e == cudaSuccess)
        return;
    cudaGetLastError(); // clear it unless sticky
    throw CudaFailure(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

struct DeviceBuffer
{
    void* p = nullptr;
    explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&p, bytes), "cudaMalloc"); }
    ~DeviceBuffer()
    {
        if (p)
            cudaFree(p);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Event
{
    cudaEvent_t e = nullptr;
    Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
    ~Event()
    {
        if (e)
            cudaEventDestroy(e);
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
};

struct Stream
{
    cudaStream_t s = nullptr;
    Stream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
    ~Stream()
    {
        if (s)
            cudaStreamDestroy(s);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
};

// Milliseconds of the work `enqueue` puts on `stream`, by CUDA events.
double timeMs(cudaStream_t stream, const std::function<void()>& enqueue)
{
    Event start, stop;
    check(cudaEventRecord(start.e, stream), "cudaEventRecord");
    enqueue();
    check(cudaEventRecord(stop.e, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop.e), "cudaEventSynchronize (the timed work failed)");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
    return ms;
}

// Best (highest) and median of throughputs.
void summarize(std::vector<double> v, json& out, const char* bestKey, const char* medianKey)
{
    std::sort(v.begin(), v.end());
    out[bestKey] = v.back();
    const size_t n = v.size();
    out[medianKey] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

int attribute(cudaDeviceAttr a, int ordinal)
{
    int v = 0;
    check(cudaDeviceGetAttribute(&v, a, ordinal), "cudaDeviceGetAttribute");
    return v;
}

template <class T>
std::vector<char> argBytes(T v)
{
    std::vector<char> b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    return b;
}

// ---------------------------------------------------------------------------------------------

const char* kFmaSource = R"(
extern "C" __global__ void fma_peak(float* out, int iters, float a, float b) {
    // 8 independent dependency chains per thread hide the FMA latency; a and b are run-time
    // values so the compiler cannot fold the loop.
    float x0 = threadIdx.x * 1e-6f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
    float x4 = x0 + 0.4f, x5 = x0 + 0.5f, x6 = x0 + 0.6f, x7 = x0 + 0.7f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
    }
    float s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // never true; keeps the work alive
}
)";

const char* kWmmaBf16Source = R"(
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;
extern "C" __global__ void wmma_bf16_peak(float* out, int iters) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[8];
    wmma::fill_fragment(a, __float2bfloat16(0.001f * (threadIdx.x & 1)));
    wmma::fill_fragment(b, __float2bfloat16(0.001f));
#pragma unroll
    for (int k = 0; k < 8; ++k) wmma::fill_fragment(c[k], 0.0f);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k) wmma::mma_sync(c[k], a, b, c[k]);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        for (int t = 0; t < c[k].num_elements; ++t) s += c[k].x[t];
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";

const char* kWmmaTf32Source = R"(
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_tf32_peak(float* out, int iters) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c[8];
    wmma::fill_fragment(a, wmma::__float_to_tf32(0.001f * (threadIdx.x & 1)));
    wmma::fill_fragment(b, wmma::__float_to_tf32(0.001f));
#pragma unroll
    for (int k = 0; k < 8; ++k) wmma::fill_fragment(c[k], 0.0f);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k) wmma::mma_sync(c[k], a, b, c[k]);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
        for (int t = 0; t < c[k].num_elements; ++t) s += c[k].x[t];
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";

constexpr int kWarmups = 2;
constexpr int kReps = 10;
constexpr double kTargetMs = 25.0;

json measureCopy(const json& facts, cudaStream_t stream)
{
    const size_t MiB = size_t(1) << 20;
    size_t freeBytes = 0, totalBytes = 0;
    check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
    size_t bytes = 2048 * MiB;
    const size_t reserve = 512 * MiB;
    if (freeBytes < 2 * bytes + reserve)
        bytes = freeBytes > reserve ? (freeBytes - reserve) / 2 / MiB * MiB : 0;
    if (bytes < 256 * MiB)
        throw CudaFailure("only " + std::to_string(freeBytes / MiB) + " MiB free on the device; the copy needs 1 GiB");

    DeviceBuffer src(bytes), dst(bytes);
    check(cudaMemsetAsync(src.p, 1, bytes, stream), "cudaMemsetAsync");
    check(cudaMemsetAsync(dst.p, 0, bytes, stream), "cudaMemsetAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    auto copy = [&] {
        check(cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    };
    const int warmups = 3, reps = 20;
    for (int i = 0; i < warmups; ++i)
        timeMs(stream, copy);
    std::vector<double> gbs;
    for (int i = 0; i < reps; ++i)
        gbs.push_back(2.0 * static_cast<double>(bytes) / (timeMs(stream, copy) * 1e-3) / 1e9);

    json r;
    summarize(gbs, r, "gbs_best", "gbs_median");
    r[ProtocolNames::Key::kBytes] = bytes;
    r["reps"] = reps;
    const double theoretical = facts.value(ProtocolNames::Key::kHbmTheoreticalGbs, 0.0);
    if (theoretical > 0)
        r["fraction_of_theoretical"] = r[ProtocolNames::Key::kGbsBest].get<double>() / theoretical;
    r[ProtocolNames::Key::kMethod] =
        "cudaMemcpyAsync device-to-device of " + std::to_string(bytes / MiB) +
        " MiB between two buffers (far larger than the L2), timed with CUDA events; GB/s = (bytes read + "
        "bytes written) / time = 2 x size / time; " +
        std::to_string(warmups) + " warm-up copies, " + std::to_string(reps) + " timed, best and median";
    return r;
}

struct PeakKernel
{
    const char* source;
    const char* name;
    int block;           // threads per block
    double flopsPerIter; // per block, one loop iteration
    bool takesAB;        // fma_peak(out, iters, a, b) rather than (out, iters)
    std::string description;
};

json measurePeak(const PeakKernel& k, const json& facts, int ordinal, cudaStream_t stream)
{
    const std::string arch = facts.at(ProtocolNames::Field::kArch).get<std::string>();
    CompileResult c = compileCuda(k.source, arch);
    if (!c.ok)
        throw CudaFailure("NVRTC could not compile " + std::string(k.name) + " for " + arch + ": " + c.log);
    std::string err;
    std::unique_ptr<LoadedModule> mod = LoadedModule::load(c.cubin, &err, ordinal);
    if (!mod)
        throw CudaFailure("loading " + std::string(k.name) + ": " + err);
    CUfunction fn = mod->function(k.name, &err);
    if (!fn)
        throw CudaFailure(err);
    const CudaDriver* d = CudaDriver::get();
    int perSm = 0;
    CUresult cr = d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, fn, k.block, 0);
    if (cr != CUDA_SUCCESS)
        throw CudaFailure("cuOccupancyMaxActiveBlocksPerMultiprocessor: " + d->errorString(cr));
    if (perSm < 1)
        throw CudaFailure(std::string(k.name) + " cannot run a block of " + std::to_string(k.block) + " threads");
    const int smCount = facts.at(ProtocolNames::Key::kSmCount).get<int>();
    const unsigned grid = static_cast<unsigned>(smCount * perSm); // exactly one full wave: no tail

    const int outElems = static_cast<int>(grid) * k.block;
    DeviceBuffer out(sizeof(float) * static_cast<size_t>(outElems));
    CUstream cs = stream;
    void* outPtr = out.p;
    auto launch = [&](int iters) {
        std::vector<std::vector<char>> args = {argBytes(outPtr), argBytes(iters)};
        if (k.takesAB) {
            args.push_back(argBytes(0.9999f));
            args.push_back(argBytes(0.0001f));
        }
        std::string e = mod->launch(k.name, {grid, 1, 1}, {static_cast<unsigned>(k.block), 1, 1}, 0, cs, args);
        if (!e.empty())
            throw CudaFailure(e);
    };

    // Calibrate the loop count so that one launch lasts about kTargetMs.
    int iters = 256;
    timeMs(stream, [&] { launch(iters); });
    const double probe = timeMs(stream, [&] { launch(iters); });
    const double scale = probe > 0 ? kTargetMs / probe : 64.0;
    iters = static_cast<int>(std::min(double(1 << 24), std::max(double(iters), iters * scale)));

    for (int i = 0; i < kWarmups; ++i)
        timeMs(stream, [&] { launch(iters); });
    std::vector<double> gflops;
    const double flops = k.flopsPerIter * grid * static_cast<double>(iters);
    for (int i = 0; i < kReps; ++i)
        gflops.push_back(flops / (timeMs(stream, [&] { launch(iters); }) * 1e-3) / 1e9);

    json r;
    summarize(gflops, r, "gflops_best", "gflops_median");
    r["iters"] = iters;
    r["grid"] = grid;
    r["block"] = k.block;
    r["blocks_per_sm"] = perSm;
    r["reps"] = kReps;
    r[ProtocolNames::Key::kMethod] =
        k.description + " Grid: one full wave (" + std::to_string(perSm) + " blocks of " + std::to_string(k.block) +
        " threads per SM at the occupancy the driver reports, " + std::to_string(smCount) +
        " SMs); loop count calibrated to ~" + fmt("%.0f", kTargetMs) + " ms per launch; timed with CUDA events; " +
        std::to_string(kWarmups) + " warm-ups, " + std::to_string(kReps) + " timed launches, best and median.";
    return r;
}

json errorField(const std::string& what)
{
    return json{{ProtocolNames::Key::kError, what}};
}

} // namespace

const char* fmaPeakKernelSource()
{
    return kFmaSource;
}
const char* wmmaBf16KernelSource()
{
    return kWmmaBf16Source;
}
const char* wmmaTf32KernelSource()
{
    return kWmmaTf32Source;
}

int cudaDeviceCount()
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

bool useCudaDevice(int ordinal, std::string* why)
{
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == ordinal)
        return true; // no context made here
    const cudaError_t e = cudaSetDevice(ordinal);
    if (e == cudaSuccess)
        return true;
    cudaGetLastError();
    if (why)
        *why = std::string("cudaSetDevice(") + std::to_string(ordinal) + "): " + cudaGetErrorString(e);
    return false;
}

namespace {
json readDeviceFacts(int ordinal)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return json{{ProtocolNames::Key::kAvailable, false}, {ProtocolNames::Key::kReason, cudaGetErrorString(e)}};
    }
    if (count == 0)
        return json{{ProtocolNames::Key::kAvailable, false}, {ProtocolNames::Key::kReason, "no CUDA device"}};
    if (ordinal < 0 || ordinal >= count)
        return json{{ProtocolNames::Key::kAvailable, false},
                    {ProtocolNames::Key::kReason, "device ordinal " + std::to_string(ordinal) +
                                                      " out of range: " + std::to_string(count) + " device(s)"}};
    try {
        cudaDeviceProp p{};
        check(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
        // CUDA 13 dropped clockRate and memoryClockRate from cudaDeviceProp: ask attributes.
        const int smClock = attribute(cudaDevAttrClockRate, ordinal);
        const int memClock = attribute(cudaDevAttrMemoryClockRate, ordinal);
        const int busBits = attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal);
        int driver = 0, runtime = 0;
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);
        auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
        json j;
        j[ProtocolNames::Key::kAvailable] = true;
        j["ordinal"] = ordinal;
        j[ProtocolNames::Key::kName] = std::string(p.name);
        j[ProtocolNames::Key::kCc] = std::to_string(p.major) + "." + std::to_string(p.minor);
        j[ProtocolNames::Field::kArch] = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
        j[ProtocolNames::Key::kSmCount] = p.multiProcessorCount;
        j[ProtocolNames::Key::kL2Bytes] = p.l2CacheSize;
        j[ProtocolNames::Key::kMemoryBytes] = static_cast<unsigned long long>(p.totalGlobalMem);
        j[ProtocolNames::Key::kSmClockKhz] = smClock;
        j[ProtocolNames::Key::kMemoryClockKhz] = memClock;
        j["memory_bus_bits"] = busBits;
        // DDR: two transfers per memory clock
        j[ProtocolNames::Key::kHbmTheoreticalGbs] = 2.0 * memClock * 1e3 * (busBits / 8.0) / 1e9;
        j[ProtocolNames::Key::kHbmTheoreticalGbps] =
            j[ProtocolNames::Key::kHbmTheoreticalGbs]; // the documented name (docs/protocol.md)
        j["max_threads_per_sm"] = p.maxThreadsPerMultiProcessor;
        j["smem_per_sm"] = static_cast<unsigned long long>(p.sharedMemPerMultiprocessor);
        j["smem_per_block_optin"] = static_cast<unsigned long long>(p.sharedMemPerBlockOptin);
        j["regs_per_sm"] = p.regsPerMultiprocessor;
        j["warp_size"] = p.warpSize;
        j["ecc"] = p.ECCEnabled != 0;
        char bus[32] = {0};
        if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) == cudaSuccess)
            j[ProtocolNames::Key::kPciBusId] = std::string(bus);
        cudaGetLastError();
        j[ProtocolNames::Key::kDriverVersion] = version(driver);
        j[ProtocolNames::Key::kRuntimeVersion] = version(runtime);
        return j;
    } catch (const std::exception& ex) {
        return json{{ProtocolNames::Key::kAvailable, false}, {ProtocolNames::Key::kReason, ex.what()}};
    }
}
} // namespace

json deviceFacts(int ordinal)
{
    // A device's properties do not change while the process lives; cudaGetDeviceProperties costs
    // milliseconds and an evaluation asks several times (arch, L2 size, reuse key, roofline).
    static std::mutex mutex;
    static std::map<int, json> known;
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(ordinal); it != known.end())
        return it->second;
    json facts = readDeviceFacts(ordinal);
    if (facts.value(ProtocolNames::Key::kAvailable, false))
        known[ordinal] = facts;
    return facts;
}

json measureCeilings(int ordinal)
{
    json facts = deviceFacts(ordinal);
    if (!facts.value(ProtocolNames::Key::kAvailable, false))
        return json{{ProtocolNames::Key::kAvailable, false},
                    {ProtocolNames::Key::kReason, facts.value(ProtocolNames::Key::kReason, "")}};

    json out;
    try {
        check(cudaSetDevice(ordinal), "cudaSetDevice");
        check(cudaFree(nullptr), "cudaFree(0) (context creation)");
    } catch (const std::exception& ex) {
        return json{{ProtocolNames::Key::kAvailable, false}, {ProtocolNames::Key::kReason, ex.what()}};
    }
    out[ProtocolNames::Key::kAvailable] = true;
    out["ordinal"] = ordinal;
    out[ProtocolNames::Field::kDevice] = facts[ProtocolNames::Key::kName];
    out[ProtocolNames::Field::kArch] = facts[ProtocolNames::Field::kArch];

    std::unique_ptr<Stream> stream;
    try {
        stream.reset(new Stream);
    } catch (const std::exception& ex) {
        return json{{ProtocolNames::Key::kAvailable, false}, {ProtocolNames::Key::kReason, ex.what()}};
    }

    auto guarded = [&](const char* key, const std::function<json()>& f) {
        try {
            out[key] = f();
        } catch (const std::exception& ex) {
            out[key] = errorField(ex.what());
        }
    };
    guarded("hbm_copy", [&] { return measureCopy(facts, stream->s); });

    std::string why;
    const bool haveDriver = CudaDriver::get(&why) != nullptr;
    const char* noDriver = "the CUDA driver API is unavailable: ";
    guarded("fp32_fma", [&] {
        if (!haveDriver)
            return errorField(noDriver + why);
        PeakKernel k{kFmaSource,
                     "fma_peak",
                     256,
                     2.0 * 8 * 16 * 256,
                     true,
                     "NVRTC kernel fma_peak: each thread runs 8 independent chains of fmaf, 16 per chain per loop "
                     "iteration, on registers only; GFLOP/s = 2 x FMAs / time."};
        return measurePeak(k, facts, ordinal, stream->s);
    });

    const int major = std::stoi(facts[ProtocolNames::Key::kCc].get<std::string>());
    const std::string hopperNote =
        major >= 9 ? " wmma compiles to mma.sync; on this GPU the wgmma instructions cuBLAS uses reach higher, so this "
                     "is the mma.sync peak, not the device's dense tensor peak."
                   : "";
    guarded("tensor_bf16", [&] {
        if (major < 8)
            return json{{ProtocolNames::Key::kAvailable, false},
                        {ProtocolNames::Key::kReason, "bf16 wmma needs sm_80 or newer"}};
        if (!haveDriver)
            return errorField(noDriver + why);
        // 8 warps per block, 8 accumulators per warp, one 16x16x16 mma = 2*16*16*16 flops
        PeakKernel k{kWmmaBf16Source,
                     "wmma_bf16_peak",
                     256,
                     8.0 * 8 * 2 * 16 * 16 * 16,
                     false,
                     "NVRTC kernel wmma_bf16_peak: nvcuda::wmma m16n16k16, bf16 inputs, fp32 accumulate, fragments "
                     "held in registers (8 independent accumulators per warp, no memory traffic in the loop); "
                     "GFLOP/s = 2*16*16*16 per mma_sync / time." +
                         hopperNote};
        return measurePeak(k, facts, ordinal, stream->s);
    });
    guarded("tensor_tf32", [&] {
        if (major < 8)
            return json{{ProtocolNames::Key::kAvailable, false},
                        {ProtocolNames::Key::kReason, "tf32 wmma needs sm_80 or newer"}};
        if (!haveDriver)
            return errorField(noDriver + why);
        PeakKernel k{kWmmaTf32Source,
                     "wmma_tf32_peak",
                     256,
                     8.0 * 8 * 2 * 16 * 16 * 8,
                     false,
                     "NVRTC kernel wmma_tf32_peak: nvcuda::wmma m16n16k8, tf32 inputs (wmma::precision::tf32), fp32 "
                     "accumulate, fragments held in registers (8 independent accumulators per warp); "
                     "GFLOP/s = 2*16*16*8 per mma_sync / time." +
                         hopperNote};
        return measurePeak(k, facts, ordinal, stream->s);
    });
    // The documented flat summary (docs/protocol.md: hbm_copy_gbps, fp32_fma_gflops, …): the best
    // of each measurement, absent where it failed. The objects above keep the detail.
    const auto best = [&](const char* key, const char* field, const char* flat) {
        if (out.contains(key) && out[key].is_object() && out[key].contains(field) && out[key][field].is_number())
            out[flat] = out[key][field];
    };
    best("hbm_copy", "gbs_best", "hbm_copy_gbps");
    best("fp32_fma", "gflops_best", "fp32_fma_gflops");
    best("tensor_bf16", "gflops_best", "tensor_bf16_gflops");
    best("tensor_tf32", "gflops_best", "tensor_tf32_gflops");
    return out;
}

} // namespace kwb
