#include "worker/device/cudadriver.h"

#include <dlfcn.h>

#include <numeric>

namespace kwb {

#define KWB_STR2(x) #x
#define KWB_XSTR(x) KWB_STR2(x) // the exported name cuda.h maps to, e.g. cuDevicePrimaryCtxRelease_v2

struct CudaDriverLoader
{
    struct Entry
    {
        const char* base;     // name for cuGetProcAddress
        const char* exported; // name for dlsym (drivers without cuGetProcAddress_v2)
        int version;
        void** slot;
        bool optional;
    };

    static CudaDriver* load(std::string* why)
    {
        // RTLD_LOCAL: nothing else in the process should bind to our copy's symbols by accident
        void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* e = dlerror();
            *why = std::string("libcuda.so.1 not found: no NVIDIA driver (") + (e ? e : "dlopen failed") + ")";
            return nullptr;
        }
        // Never dlclose: the driver keeps threads and state for the life of the process.
        std::unique_ptr<CudaDriver> d(new CudaDriver);

        std::vector<Entry> entries;
#define KWB_ENTRY(name, ver) entries.push_back({#name, KWB_XSTR(name), ver, reinterpret_cast<void**>(&d->name), false});
#define KWB_OPTIONAL_ENTRY(name, ver)                                                                                  \
    entries.push_back({#name, KWB_XSTR(name), ver, reinterpret_cast<void**>(&d->name), true});
        KWB_CUDA_DRIVER_FUNCTIONS(KWB_ENTRY)
        KWB_CUDA_DRIVER_OPTIONAL_FUNCTIONS(KWB_OPTIONAL_ENTRY)
#undef KWB_ENTRY
#undef KWB_OPTIONAL_ENTRY

        auto getVersion = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(dlsym(lib, "cuDriverGetVersion"));
        if (!getVersion || getVersion(&d->driverVersion) != CUDA_SUCCESS) {
            *why = "libcuda.so.1 was found but does not answer cuDriverGetVersion: the NVIDIA driver is broken";
            return nullptr;
        }
        const std::string versionText =
            std::to_string(d->driverVersion / 1000) + "." + std::to_string((d->driverVersion % 1000) / 10);

        auto getProc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
        d->viaGetProcAddress = getProc != nullptr;
        for (const Entry& e : entries) {
            *e.slot = nullptr;
            if (getProc) {
                if (e.version > d->driverVersion)
                    continue; // the driver would answer INVALID_VALUE
                CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
                void* fn = nullptr;
                if (getProc(e.base, &fn, e.version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) == CUDA_SUCCESS &&
                    status == CU_GET_PROC_ADDRESS_SUCCESS)
                    *e.slot = fn;
            } else {
                *e.slot = dlsym(lib, e.exported);
            }
            if (!*e.slot && !e.optional) {
                *why = std::string("the NVIDIA driver (CUDA ") + versionText + ") lacks " + e.exported +
                       ": install a newer driver";
                return nullptr;
            }
        }

        CUresult r = d->cuInit(0);
        if (r != CUDA_SUCCESS) {
            *why = "cuInit failed: " + d->errorString(r) + " (driver CUDA " + versionText + ")";
            return nullptr;
        }
        return d.release();
    }
};

const CudaDriver* CudaDriver::get(std::string* whyNot)
{
    static std::string why;
    static const CudaDriver* driver = CudaDriverLoader::load(&why); // thread-safe, once
    if (whyNot)
        *whyNot = driver ? std::string() : why;
    return driver;
}

std::string CudaDriver::errorString(CUresult r) const
{
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName)
        cuGetErrorName(r, &name);
    if (cuGetErrorString)
        cuGetErrorString(r, &text);
    std::string s = name ? name : "CUresult " + std::to_string(static_cast<int>(r));
    if (text)
        s += std::string(": ") + text;
    return s;
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<LoadedModule> LoadedModule::load(const std::vector<char>& cubin, std::string* error, int ordinal)
{
    std::string why;
    const CudaDriver* d = CudaDriver::get(&why);
    if (!d) {
        *error = why;
        return nullptr;
    }
    if (cubin.empty()) {
        *error = "empty cubin";
        return nullptr;
    }
    std::unique_ptr<LoadedModule> m(new LoadedModule);
    m->m_driver = d;
    CUresult r = d->cuCtxGetCurrent(&m->m_context);
    if (r != CUDA_SUCCESS) {
        *error = "cuCtxGetCurrent: " + d->errorString(r);
        return nullptr;
    }
    if (!m->m_context) {
        if ((r = d->cuDeviceGet(&m->m_device, ordinal)) != CUDA_SUCCESS) {
            *error = "cuDeviceGet(" + std::to_string(ordinal) + "): " + d->errorString(r);
            return nullptr;
        }
        if ((r = d->cuDevicePrimaryCtxRetain(&m->m_context, m->m_device)) != CUDA_SUCCESS) {
            *error = "cuDevicePrimaryCtxRetain: " + d->errorString(r);
            return nullptr;
        }
        m->m_retainedPrimary = true; // from here on the destructor releases it
        if ((r = d->cuCtxSetCurrent(m->m_context)) != CUDA_SUCCESS) {
            *error = "cuCtxSetCurrent: " + d->errorString(r);
            return nullptr;
        }
    } else if ((r = d->cuCtxGetDevice(&m->m_device)) != CUDA_SUCCESS) {
        *error = "cuCtxGetDevice: " + d->errorString(r);
        return nullptr;
    }
    if ((r = d->cuModuleLoadData(&m->m_module, cubin.data())) != CUDA_SUCCESS) {
        m->m_module = nullptr;
        *error = "cuModuleLoadData: " + d->errorString(r);
        return nullptr;
    }
    return m;
}

LoadedModule::~LoadedModule()
{
    if (!m_driver)
        return;
    CUcontext previous = nullptr;
    m_driver->cuCtxGetCurrent(&previous);
    const bool switchCtx = previous != m_context;
    if (switchCtx)
        m_driver->cuCtxSetCurrent(m_context);
    if (m_module)
        m_driver->cuModuleUnload(m_module);
    if (switchCtx)
        m_driver->cuCtxSetCurrent(previous);
    if (m_retainedPrimary)
        m_driver->cuDevicePrimaryCtxRelease(m_device);
}

LoadedModule::Function* LoadedModule::lookup(const std::string& name, std::string* error)
{
    auto it = m_functions.find(name);
    if (it != m_functions.end())
        return &it->second;
    const CudaDriver* d = m_driver;
    Function f;
    CUresult r = d->cuModuleGetFunction(&f.handle, m_module, name.c_str());
    if (r != CUDA_SUCCESS) {
        if (error)
            *error = r == CUDA_ERROR_NOT_FOUND ? "the compiled module has no kernel named \"" + name +
                                                     "\" (is it declared extern \"C\" __global__?)"
                                               : "cuModuleGetFunction(\"" + name + "\"): " + d->errorString(r);
        return nullptr;
    }
    if ((r = d->cuFuncGetAttribute(&f.maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f.handle)) !=
            CUDA_SUCCESS ||
        (r = d->cuFuncGetAttribute(&f.dynamicSharedLimit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f.handle)) !=
            CUDA_SUCCESS) {
        if (error)
            *error = "cuFuncGetAttribute(\"" + name + "\"): " + d->errorString(r);
        return nullptr;
    }
    if (d->cuFuncGetParamInfo) {
        // The driver answers CUDA_ERROR_INVALID_VALUE past the last parameter. 4 KiB of
        // parameters allows at most 1024 (32 KiB from CUDA 12.1 on Hopper: 8192).
        for (size_t i = 0; i < 8192; ++i) {
            Param p;
            r = d->cuFuncGetParamInfo(f.handle, i, &p.offset, &p.size);
            if (r == CUDA_ERROR_INVALID_VALUE)
                break;
            if (r != CUDA_SUCCESS) {
                if (error)
                    *error = "cuFuncGetParamInfo(\"" + name + "\", " + std::to_string(i) + "): " + d->errorString(r);
                return nullptr;
            }
            f.params.push_back(p);
        }
        f.paramsKnown = true;
    }
    return &m_functions.emplace(name, std::move(f)).first->second;
}

CUfunction LoadedModule::function(const std::string& name, std::string* error)
{
    Function* f = lookup(name, error);
    return f ? f->handle : nullptr;
}

bool LoadedModule::paramInfo(const std::string& name, std::vector<Param>* params, std::string* error)
{
    Function* f = lookup(name, error);
    if (!f)
        return false;
    if (!f->paramsKnown) {
        if (error)
            *error = "the NVIDIA driver (CUDA " + std::to_string(m_driver->driverVersion) +
                     ") has no cuFuncGetParamInfo (needs 12.4 or newer)";
        return false;
    }
    *params = f->params;
    return true;
}

std::string LoadedModule::launch(const std::string& name, const std::array<unsigned, 3>& grid,
                                 const std::array<unsigned, 3>& block, unsigned sharedBytes, CUstream stream,
                                 const std::vector<std::vector<char>>& argBuffers)
{
    std::string error;
    Function* f = lookup(name, &error);
    if (!f)
        return error;
    const CudaDriver* d = m_driver;
    auto dims = [](const std::array<unsigned, 3>& a) {
        return "[" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " + std::to_string(a[2]) + "]";
    };
    const std::string what = "launch of \"" + name + "\" with grid " + dims(grid) + ", block " + dims(block);

    if (f->paramsKnown) {
        if (argBuffers.size() != f->params.size())
            return what + ": the kernel takes " + std::to_string(f->params.size()) + " parameters but " +
                   std::to_string(argBuffers.size()) + " arguments were given";
        for (size_t i = 0; i < argBuffers.size(); ++i)
            if (argBuffers[i].size() != f->params[i].size)
                return what + ": argument " + std::to_string(i) + " is " + std::to_string(argBuffers[i].size()) +
                       " bytes but parameter " + std::to_string(i) + " of the kernel is " +
                       std::to_string(f->params[i].size) + " bytes";
    }
    for (int i = 0; i < 3; ++i)
        if (grid[i] == 0 || block[i] == 0)
            return what + ": every grid and block dimension must be at least 1";
    const unsigned long long threads = 1ull * block[0] * block[1] * block[2];
    if (threads > static_cast<unsigned long long>(f->maxThreadsPerBlock))
        return what + ": " + std::to_string(threads) + " threads per block, more than this kernel's limit of " +
               std::to_string(f->maxThreadsPerBlock);
    if (static_cast<long long>(sharedBytes) > f->dynamicSharedLimit) {
        CUresult r = d->cuFuncSetAttribute(f->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           static_cast<int>(sharedBytes));
        if (r != CUDA_SUCCESS)
            return what + ": " + std::to_string(sharedBytes) +
                   " bytes of dynamic shared memory are more than the device allows for this kernel (" +
                   d->errorString(r) + ")";
        f->dynamicSharedLimit = static_cast<int>(sharedBytes);
    }
    std::vector<void*> params;
    params.reserve(argBuffers.size());
    for (const std::vector<char>& b : argBuffers)
        params.push_back(const_cast<char*>(b.data()));
    CUresult r = d->cuLaunchKernel(f->handle, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedBytes,
                                   stream, params.empty() ? nullptr : params.data(), nullptr);
    if (r != CUDA_SUCCESS)
        return what + ", " + std::to_string(sharedBytes) + " bytes shared: " + d->errorString(r);
    return {};
}

} // namespace kwb
