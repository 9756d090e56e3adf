#pragma once
// GPU facts (CUDA runtime) and measured ceilings (HBM copy bandwidth, FP32 FMA and tensor-core
// peaks) for the roofline. Without a device both answer {"available": false, "reason": ...}.

#include <nlohmann/json.hpp>

#include <string>

namespace kwb {

// name, cc "9.0", arch "sm_90", sm_count, l2_bytes, memory_bytes, sm_clock_khz, memory_clock_khz,
// memory_bus_bits, hbm_theoretical_gbs (2 x memory clock x bus width / 8), and a few more.
nlohmann::json deviceFacts(int ordinal);

// CUDA devices this process sees (0 where the runtime or the driver cannot tell).
int cudaDeviceCount();

// Makes `ordinal` the calling thread's current CUDA device, which libtorch's kCUDA and the
// runtime calls follow ("cuda:N" in a request). False, with *why, when it cannot.
bool useCudaDevice(int ordinal, std::string* why);

// Takes a few seconds and allocates about 4 GiB on the device. Every measurement reports best and
// median over repetitions after warm-ups, and a "method" string; a measurement that fails carries
// "error" instead, the others still run.
nlohmann::json measureCeilings(int ordinal);

// The NVRTC sources of the peak kernels (exposed so CPU tests can compile them).
const char* fmaPeakKernelSource();  // extern "C" fma_peak(float* out, int iters, float a, float b)
const char* wmmaBf16KernelSource(); // extern "C" wmma_bf16_peak(float* out, int iters)
const char* wmmaTf32KernelSource(); // extern "C" wmma_tf32_peak(float* out, int iters)

} // namespace kwb
