// Issue 13: does loading libtorch (its static initialisers, 0.43-0.60 s before a fresh worker's
// main) overlap with the CUDA context and an NVRTC compile when it runs in a thread of its own?
// Plain C++, dlopen only, so the measurement has no libtorch linked at start.
//   g++ -O2 -std=c++17 -pthread bench/lazy_torch_probe.cpp -ldl -o /tmp/lazy_torch_probe
//   /tmp/lazy_torch_probe seq|par|par-late|par-init|par-prime[-lazy] TORCH_LIB_DIR NVRTC_LIB NVRTC_BUILTINS_LIB
// seq: libtorch, then context, then compile (today's order). par: the CUDA and NVRTC libraries
// loaded first, then libtorch in a thread while the main thread makes the context and compiles.
// par-late: the same without loading libnvrtc-builtins first (it is dlopened at the first compile,
// so it meets the loader's lock that libtorch's initialisers hold). par-init: cuInit before libtorch's
// loading starts, the context and the compile beside it. par-prime: cuInit and a tiny NVRTC compile
// first. A "-lazy" suffix loads with RTLD_LAZY (as the loader binds DT_NEEDED libraries) instead of RTLD_NOW.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {
using Clock = std::chrono::steady_clock;
const Clock::time_point g_start = Clock::now();
double ms()
{
    return std::chrono::duration<double, std::milli>(Clock::now() - g_start).count();
}

int g_bind = RTLD_NOW;

void* must(const std::string& lib)
{
    void* h = dlopen(lib.c_str(), g_bind | RTLD_GLOBAL);
    if (!h) {
        std::fprintf(stderr, "dlopen %s: %s\n", lib.c_str(), dlerror());
        std::exit(2);
    }
    return h;
}

double g_torchDone = 0, g_initDone = 0, g_ctxDone = 0, g_compileDone = 0;
bool g_initialised = false;

void loadTorch(const std::string& dir)
{
    must(dir + "/libtorch_cuda.so");
    must(dir + "/libtorch.so");
    g_torchDone = ms();
}

void* g_cuda = nullptr;
void* g_nvrtc = nullptr;

void context()
{
    using Init = int (*)(unsigned);
    using Get = int (*)(int*, int);
    using Retain = int (*)(void**, int);
    using SetCurrent = int (*)(void*);
    auto init = reinterpret_cast<Init>(dlsym(g_cuda, "cuInit"));
    auto get = reinterpret_cast<Get>(dlsym(g_cuda, "cuDeviceGet"));
    auto retain = reinterpret_cast<Retain>(dlsym(g_cuda, "cuDevicePrimaryCtxRetain"));
    auto setCurrent = reinterpret_cast<SetCurrent>(dlsym(g_cuda, "cuCtxSetCurrent"));
    int dev = 0;
    void* ctx = nullptr;
    if (!g_initialised && init(0)) {
        std::fprintf(stderr, "cuInit failed\n");
        std::exit(3);
    }
    g_initialised = true;
    g_initDone = ms();
    if (get(&dev, 0) || retain(&ctx, dev) || setCurrent(ctx)) {
        std::fprintf(stderr, "context failed\n");
        std::exit(3);
    }
    g_ctxDone = ms();
}

const char* kTiny = "extern \"C\" __global__ void t() {}";
const char* kRelu = "extern \"C\" __global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
                    " if (i < n) x[i] = x[i] > 0.f ? x[i] : 0.f; }";

void compile(const char* src = kRelu)
{
    using Create = int (*)(void**, const char*, const char*, int, const char* const*, const char* const*);
    using Compile = int (*)(void*, int, const char* const*);
    auto create = reinterpret_cast<Create>(dlsym(g_nvrtc, "nvrtcCreateProgram"));
    auto comp = reinterpret_cast<Compile>(dlsym(g_nvrtc, "nvrtcCompileProgram"));
    void* prog = nullptr;
    const char* opts[] = {"--gpu-architecture=sm_90"};
    if (create(&prog, src, "k.cu", 0, nullptr, nullptr) || comp(prog, 1, opts)) {
        std::fprintf(stderr, "compile failed\n");
        std::exit(4);
    }
    g_compileDone = ms();
}
} // namespace

int main(int argc, char** argv)
{
    if (argc < 5) {
        std::fprintf(
            stderr, "usage: %s seq|par|par-late|par-init|par-prime[-lazy] TORCH_LIB_DIR NVRTC_LIB NVRTC_BUILTINS_LIB\n",
            argv[0]);
        return 1;
    }
    std::string mode = argv[1];
    const std::string dir = argv[2], nvrtc = argv[3];
    if (mode.size() > 5 && mode.compare(mode.size() - 5, 5, "-lazy") == 0) { // RTLD_LAZY, as DT_NEEDED loads bind
        g_bind = RTLD_LAZY;
        mode.resize(mode.size() - 5);
    }
    const double mainAt = ms();
    if (mode == "seq") {
        loadTorch(dir);
        g_cuda = must("libcuda.so.1");
        g_nvrtc = must(nvrtc);
        context();
        compile();
    } else {
        g_cuda = must("libcuda.so.1");
        g_nvrtc = must(nvrtc);
        if (mode != "par-late")
            must(argv[4]);
        if (mode == "par-init" || mode == "par-prime") { // cuInit before libtorch's loading starts
            reinterpret_cast<int (*)(unsigned)>(dlsym(g_cuda, "cuInit"))(0);
            g_initialised = true;
            g_initDone = ms();
        }
        if (mode == "par-prime") // NVRTC's first compile before it too: is a later one then free of the loader's lock?
            compile(kTiny);
        std::thread t(loadTorch, dir);
        context();
        compile();
        t.join();
    }
    std::printf("%-8s main %.1f  torch loaded %.1f  cuInit %.1f  context %.1f  compiled %.1f  all %.1f ms\n",
                mode.c_str(), mainAt, g_torchDone, g_initDone, g_ctxDone, g_compileDone, ms());
    return 0;
}
