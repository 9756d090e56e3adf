#include "worker/measure/clockprobe.h"

#include "worker/compile/nvrtccompiler.h"
#include "worker/device/cudadriver.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kwb {

namespace {
constexpr int kMaxSms = 256;
/// One block per SM; each writes (clock64, globaltimer) into its SM's slot. Blocks that share an
/// SM write the same slot: any of them will do.
constexpr const char* kSource = R"(
extern "C" __global__ void kwb_clock_probe(unsigned long long* out) {
    unsigned int sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    unsigned long long ns; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    unsigned long long c = clock64();
    if (threadIdx.x == 0 && sm < 256) { out[2 * sm] = c; out[2 * sm + 1] = ns; }
}
)";
/// Below this the global timer's granularity (up to 1 µs on some GPUs) makes the clock unreliable.
constexpr unsigned long long kMinSpanNs = 20000;
} // namespace

const char* ClockProbe::source()
{
    return kSource;
}

void ClockProbe::precompile(int ordinal)
{
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess) {
        cudaGetLastError();
        return; // create() says why
    }
    compileOwnKernel(kSource, "sm_" + std::to_string(major * 10 + minor));
}

struct ClockProbe::Impl
{
    std::unique_ptr<LoadedModule> module;
    unsigned long long* host = nullptr; ///< mapped pinned memory: [slot][sm][clock, ns]
    unsigned long long* device = nullptr;
    unsigned sms = 0;
};

std::unique_ptr<ClockProbe> ClockProbe::create(int ordinal, std::string* why)
{
    int major = 0, minor = 0, sms = 0, clockKhz = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal) != cudaSuccess ||
        cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, ordinal) != cudaSuccess) {
        cudaGetLastError();
        *why = "no CUDA device attributes";
        return nullptr;
    }
    const CompileResult& cr = compileOwnKernel(kSource, "sm_" + std::to_string(major * 10 + minor));
    if (!cr.ok) {
        *why = "NVRTC: " + cr.log;
        return nullptr;
    }
    std::unique_ptr<ClockProbe> p(new ClockProbe);
    p->m = std::make_unique<Impl>();
    p->m->module = LoadedModule::load(cr.cubin, why, ordinal);
    if (!p->m->module)
        return nullptr;
    const size_t bytes = 2 * kMaxSms * 2 * sizeof(unsigned long long);
    if (cudaHostAlloc(reinterpret_cast<void**>(&p->m->host), bytes, cudaHostAllocMapped) != cudaSuccess ||
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&p->m->device), p->m->host, 0) != cudaSuccess) {
        cudaGetLastError();
        *why = "no mapped host memory for the clock probe";
        return nullptr;
    }
    std::memset(p->m->host, 0, bytes);
    p->m->sms = unsigned(std::min(sms, kMaxSms));
    p->m_defaultMhz = clockKhz / 1000.0;
    return p;
}

ClockProbe::~ClockProbe()
{
    if (m && m->host)
        cudaFreeHost(m->host);
}

void ClockProbe::record(int slot)
{
    unsigned long long* out = m->device + size_t(slot) * kMaxSms * 2;
    if (slot == 0)
        std::memset(m->host, 0, 2 * kMaxSms * 2 * sizeof(unsigned long long)); // the GPU is idle here
    std::vector<char> arg(sizeof(out));
    std::memcpy(arg.data(), &out, sizeof(out));
    m->module->launch("kwb_clock_probe", {m->sms, 1, 1}, {32, 1, 1}, 0, nullptr, {arg});
}

double ClockProbe::clockMhz() const
{
    const unsigned long long* a = m->host;
    const unsigned long long* b = m->host + kMaxSms * 2;
    double sum = 0;
    int n = 0;
    for (int sm = 0; sm < kMaxSms; ++sm) {
        const unsigned long long c0 = a[2 * sm], t0 = a[2 * sm + 1], c1 = b[2 * sm], t1 = b[2 * sm + 1];
        if (t0 == 0 || t1 <= t0 + kMinSpanNs || c1 <= c0)
            continue;
        sum += double(c1 - c0) / double(t1 - t0) * 1000.0; // cycles per ns = GHz
        ++n;
    }
    return n ? sum / n : 0.0;
}

} // namespace kwb
