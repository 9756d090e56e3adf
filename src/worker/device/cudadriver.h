#pragma once
// The CUDA driver API, reached at run time through dlopen("libcuda.so.1"), so that kwb-worker
// starts on machines without an NVIDIA driver (CI) and answers "no device" there.
// <cuda.h> and <cudaTypedefs.h> are included for types only; nothing links libcuda.

#include <cuda.h>
#include <cudaTypedefs.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kwb {

// X(name, abi version): each pointer has the type of the function as cuda.h declares it, and is
// asked of cuGetProcAddress at that ABI version. Asking at the newest version instead would hand
// back e.g. cuCtxSynchronize_v2(CUcontext) for cuCtxSynchronize(void) on a CUDA 13 driver.
#define KWB_CUDA_DRIVER_FUNCTIONS(X)                                                                                   \
    X(cuInit, 2000)                                                                                                    \
    X(cuDriverGetVersion, 2020)                                                                                        \
    X(cuDeviceGet, 2000)                                                                                               \
    X(cuDeviceGetCount, 2000)                                                                                          \
    X(cuDeviceGetAttribute, 2000)                                                                                      \
    X(cuDeviceGetName, 2000)                                                                                           \
    X(cuDevicePrimaryCtxRetain, 7000)                                                                                  \
    X(cuDevicePrimaryCtxRelease, 11000)                                                                                \
    X(cuCtxSetCurrent, 4000)                                                                                           \
    X(cuCtxGetCurrent, 4000)                                                                                           \
    X(cuCtxGetDevice, 2000)                                                                                            \
    X(cuCtxSynchronize, 2000)                                                                                          \
    X(cuModuleLoadData, 2000)                                                                                          \
    X(cuModuleUnload, 2000)                                                                                            \
    X(cuModuleGetFunction, 2000)                                                                                       \
    X(cuFuncGetAttribute, 2020)                                                                                        \
    X(cuFuncSetAttribute, 9000)                                                                                        \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)                                                               \
    X(cuLaunchKernel, 4000)                                                                                            \
    X(cuGetErrorString, 6000)                                                                                          \
    X(cuGetErrorName, 6000)

// Present from driver 12.4 on; null on older drivers.
#define KWB_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X) X(cuFuncGetParamInfo, 12040)

class CudaDriver
{
public:
    // The process-wide driver, loaded and cuInit'ed on first use; null with the reason in *whyNot
    // (e.g. "libcuda.so.1 not found: no NVIDIA driver (...)") when there is none or it has no device.
    static const CudaDriver* get(std::string* whyNot = nullptr);

    // "CUDA_ERROR_INVALID_VALUE: invalid argument"
    std::string errorString(CUresult r) const;

    int driverVersion = 0; // e.g. 13000
    bool viaGetProcAddress = false;

#define KWB_DRIVER_MEMBER(name, ver) PFN_##name##_v##ver name = nullptr;
    KWB_CUDA_DRIVER_FUNCTIONS(KWB_DRIVER_MEMBER)
    KWB_CUDA_DRIVER_OPTIONAL_FUNCTIONS(KWB_DRIVER_MEMBER)
#undef KWB_DRIVER_MEMBER

private:
    CudaDriver() = default;
    friend struct CudaDriverLoader;
};

// A cubin loaded into a context. Not thread-safe: use it from one thread.
class LoadedModule
{
public:
    struct Param
    {
        size_t offset = 0, size = 0;
    };

    // Loads `cubin` into the calling thread's current context. When none is current, the primary
    // context of device `ordinal` is retained and made current (the one PyTorch and the runtime
    // use), and released again by the destructor.
    static std::unique_ptr<LoadedModule> load(const std::vector<char>& cubin, std::string* error, int ordinal = 0);
    ~LoadedModule();
    LoadedModule(const LoadedModule&) = delete;
    LoadedModule& operator=(const LoadedModule&) = delete;

    CUmodule handle() const { return m_module; }
    CUcontext context() const { return m_context; }

    // Null with *error set when the module has no function of that name.
    CUfunction function(const std::string& name, std::string* error);

    // (offset, size) of each parameter from cuFuncGetParamInfo; false with a reason when the
    // function is missing or the driver predates cuFuncGetParamInfo.
    bool paramInfo(const std::string& name, std::vector<Param>* params, std::string* error);

    // Launches `name` on `stream`; argBuffers[i] holds the bytes of parameter i. Where the driver
    // reports parameter sizes, the count and every size are checked before launching; dynamic
    // shared memory above the default 48 KiB is opted into. Returns "" or what went wrong.
    std::string launch(const std::string& name, const std::array<unsigned, 3>& grid,
                       const std::array<unsigned, 3>& block, unsigned sharedBytes, CUstream stream,
                       const std::vector<std::vector<char>>& argBuffers);

private:
    struct Function
    {
        CUfunction handle = nullptr;
        bool paramsKnown = false;
        std::vector<Param> params;
        int maxThreadsPerBlock = 0;
        int dynamicSharedLimit = 0; // current CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    };
    LoadedModule() = default;
    Function* lookup(const std::string& name, std::string* error);

    const CudaDriver* m_driver = nullptr;
    CUmodule m_module = nullptr;
    CUcontext m_context = nullptr;
    CUdevice m_device = 0;
    bool m_retainedPrimary = false;
    std::map<std::string, Function> m_functions;
};

} // namespace kwb
