// Per-kernel facts (issue 40) on real cubins: NVRTC's here, and those of a shared object nvcc
// builds as torch builds an extension. The ELF's numbers are held to ptxas -v's own report of the
// same compile, for several architectures. No GPU.
#include "worker/compile/kernelfacts.h"
#include "worker/compile/nvrtccompiler.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

using namespace kwb;

namespace {

// extern "C" with static shared memory; a template with __launch_bounds__ and a local array (its
// stack frame); a mangled kernel reading __constant__ data; one with dynamic shared memory only.
const char* kKernels = R"(
extern "C" __global__ void add(const float* a, float* b, int n) {
    __shared__ float s[1000];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = a[i];
    __syncthreads();
    if (i < n) b[i] = s[999 - threadIdx.x] + 1.f;
}
template <int N> __global__ void __launch_bounds__(128) tk(float* x) {
    float l[N];
    for (int i = 0; i < N; i++) l[i] = x[i * threadIdx.x];
    float s = 0;
    for (int i = 0; i < N; i++) s += l[(i * 7 + threadIdx.x) % N];
    x[threadIdx.x] = s;
}
template __global__ void tk<64>(float*);
__constant__ float cc[100];
__global__ void usec(float* x) { x[threadIdx.x] = cc[threadIdx.x]; }
extern "C" __global__ void dyn(float* b) {
    extern __shared__ float s[];
    s[threadIdx.x] = b[threadIdx.x];
    __syncthreads();
    b[1] = s[24 - threadIdx.x];
}
)";

struct PtxasKernel
{
    int registers = -1;
    long long smem = 0, frame = -1;
};

// ptxas -v's report, read here on its own: "Compiling entry function 'X'", "N bytes stack frame",
// "Used N registers, … N bytes smem".
std::map<std::string, PtxasKernel> ptxasReport(const std::string& info)
{
    std::map<std::string, PtxasKernel> out;
    std::istringstream in(info);
    std::string line, current;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, std::regex("Compiling entry function '([^']+)'")))
            current = m[1];
        if (std::regex_search(line, m, std::regex("(\\d+) bytes stack frame")))
            out[current].frame = std::stoll(m[1]);
        if (std::regex_search(line, m, std::regex("Used (\\d+) registers")))
            out[current].registers = std::stoi(m[1]);
        if (std::regex_search(line, m, std::regex("(\\d+) bytes smem")))
            out[current].smem = std::stoll(m[1]);
    }
    return out;
}

const KernelFacts* byName(const std::vector<KernelFacts>& ks, const std::string& name)
{
    for (const KernelFacts& k : ks)
        if (k.name == name)
            return &k;
    return nullptr;
}

std::string nvccPath()
{
    for (const std::string& d : nvrtcIncludeDirs())
        for (const char* up : {"/../bin/nvcc", "/../../../bin/nvcc"})
            if (::access((d + up).c_str(), X_OK) == 0)
                return d + up;
    return {};
}

} // namespace

TEST_CASE("the ELF's facts agree with ptxas -v on sm_75, sm_80, sm_90 and sm_100")
{
    for (const char* arch : {"sm_75", "sm_80", "sm_90", "sm_100"}) {
        CAPTURE(arch);
        CompileResult r = compileCuda(kKernels, arch);
        INFO(r.log);
        REQUIRE(r.ok);
        // ptxas's lines are facts, not compiler messages: not in the log the model reads.
        CHECK(r.log.find("ptxas info") == std::string::npos);
        REQUIRE(r.ptxasInfo.find("Used") != std::string::npos);
        const auto report = ptxasReport(r.ptxasInfo);
        std::string error;
        const std::vector<KernelFacts> ks = cubinKernelFacts(r.cubin.data(), r.cubin.size(), arch, &error);
        CHECK(error.empty());
        REQUIRE(ks.size() == 4);
        REQUIRE(report.size() == 4);
        for (const auto& [name, p] : report) {
            CAPTURE(name);
            const KernelFacts* k = byName(ks, name);
            REQUIRE(k);
            CHECK(k->arch == arch);
            REQUIRE(k->registers);
            CHECK(*k->registers == p.registers);
            REQUIRE(k->localBytes);
            CHECK(*k->localBytes == p.frame);
            REQUIRE(k->staticSharedBytes);
            CHECK(*k->staticSharedBytes == p.smem);
        }
        CHECK(*byName(ks, "add")->staticSharedBytes == 4000);
        CHECK(*byName(ks, "dyn")->staticSharedBytes == 0); // dynamic shared memory is the launch's
        CHECK(*byName(ks, "_Z2tkILi64EEvPf")->localBytes == 256);
        CHECK(*byName(ks, "add")->paramBytes == 20); // two pointers and an int, padded to 8
        CHECK(*byName(ks, "add")->barriers == 1);
        // __constant__ float cc[100] is the module's, not one kernel's.
        CHECK(*byName(ks, "_Z4usecPf")->moduleConstantBytes >= 400);
        CHECK(*byName(ks, "_Z4usecPf")->constantBytes > 0);
    }
}

TEST_CASE("names, block limits, PTX and spills of an NVRTC compile")
{
    CompileResult r = compileCuda(kKernels, "sm_90");
    REQUIRE(r.ok);
    std::vector<KernelFacts> ks = compiledKernelFacts(r, "");
    REQUIRE(ks.size() == 4);
    const KernelFacts* tk = byName(ks, "_Z2tkILi64EEvPf");
    REQUIRE(tk);
    CHECK(tk->demangled == "void tk<64>(float*)");
    CHECK(byName(ks, "add")->demangled == "add"); // extern "C": its name as written
    CHECK(byName(ks, "_Z4usecPf")->demangled == "usec(float*)");
    CHECK(tk->maxThreadsPerBlock == 128);
    CHECK(tk->maxThreadsLimit == "launch_bounds");
    CHECK(byName(ks, "add")->maxThreadsPerBlock == 1024);
    CHECK(byName(ks, "add")->maxThreadsLimit == "hardware");
    // the PTX of each kernel is its own entry, not the module's other kernels
    REQUIRE(byName(ks, "add")->ptx);
    CHECK(byName(ks, "add")->ptx->find(".entry add(") != std::string::npos);
    CHECK(byName(ks, "add")->ptx->find("_Z4usecPf") == std::string::npos);
    CHECK(byName(ks, "add")->ptx->find("ld.global") != std::string::npos);
    // no nvdisasm named: no SASS, and the note says why
    CHECK_FALSE(byName(ks, "add")->sass);
    CHECK(byName(ks, "add")->sassNote.find("nvdisasm") != std::string::npos);
    CHECK(byName(ks, "add")->spillStoreBytes == 0);

    // Registers capped below what the kernel needs: ptxas spills, and says how much.
    const char* heavy = R"(
extern "C" __global__ void heavy(const float* x, float* y) {
    float a[32];
    for (int i = 0; i < 32; i++) a[i] = x[threadIdx.x * 32 + i];
    float s = 0;
    for (int j = 0; j < 32; j++) for (int i = 0; i < 32; i++) s += a[i] * a[(i + j) & 31];
    for (int i = 0; i < 32; i++) y[threadIdx.x * 32 + i] = a[i] * s;
}
)";
    CompileResult h = compileCuda(heavy, "sm_90", {"--maxrregcount=24"});
    INFO(h.log);
    REQUIRE(h.ok);
    const std::vector<KernelFacts> hk = compiledKernelFacts(h, "");
    REQUIRE(hk.size() == 1);
    REQUIRE(hk[0].spillStoreBytes);
    CHECK(*hk[0].spillStoreBytes > 0);
    CHECK(*hk[0].spillLoadBytes > 0);
    CHECK(*hk[0].localBytes > 0);
    CHECK(*hk[0].registers <= 24); // sm_90's lower bound
    // 24 registers allow the hardware's 1024 threads per block
    CHECK(hk[0].maxThreadsPerBlock == 1024);
}

TEST_CASE("registers bound the block where no launch bounds do")
{
    // ptxas honours --maxrregcount=255 only where the kernel needs them; a block limit follows.
    const char* big = R"(
extern "C" __global__ void __launch_bounds__(256) big(const float* x, float* y) {
    float a[96];
    for (int i = 0; i < 96; i++) a[i] = x[threadIdx.x * 96 + i];
    float s = 0;
    for (int j = 0; j < 96; j++) for (int i = 0; i < 96; i++) s += a[i] * a[(i + j) % 96];
    for (int i = 0; i < 96; i++) y[threadIdx.x * 96 + i] = a[i] * s;
}
)";
    CompileResult r = compileCuda(big, "sm_90");
    REQUIRE(r.ok);
    const std::vector<KernelFacts> ks = compiledKernelFacts(r, "");
    REQUIRE(ks.size() == 1);
    REQUIRE(ks[0].registers);
    const int perWarp = ((*ks[0].registers * 32 + 255) / 256) * 256;
    const int byRegisters = std::min(1024, (65536 / perWarp) * 32);
    CHECK(ks[0].maxThreadsPerBlock == std::min(256, byRegisters));
}

TEST_CASE("texts are capped, each and together")
{
    std::vector<KernelFacts> ks(10);
    for (KernelFacts& k : ks) {
        k.sass = std::string(40 * 1024, 'x');
        k.ptx = std::string(100, 'p');
    }
    CHECK(capKernelTexts(ks) == 0);
    CHECK(ks[0].sass->size() <= kMaxKernelText);
    CHECK(ks[0].sassNote.find("cut at 32 KiB") != std::string::npos);
    std::size_t total = 0;
    for (const KernelFacts& k : ks)
        total += (k.sass ? k.sass->size() : 0) + (k.ptx ? k.ptx->size() : 0);
    CHECK(total <= kMaxCandidateKernelText);
    CHECK_FALSE(ks[9].sass);
    CHECK(ks[9].sassNote.find("left out") != std::string::npos);
    std::vector<KernelFacts> many(kMaxFactKernels + 5);
    CHECK(capKernelTexts(many) == 5);
    CHECK(many.size() == kMaxFactKernels);
}

TEST_CASE("kernels of a shared object nvcc built, compressed and not")
{
    const std::string nvcc = nvccPath();
    if (nvcc.empty()) {
        MESSAGE("skipped: no nvcc next to the CUDA include directories");
        return;
    }
    char dir[] = "/tmp/kwb-kernelfacts-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    const std::string cu = std::string(dir) + "/k.cu";
    std::ofstream(cu) << R"(
__global__ void scale_kernel(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }
template <typename T> __global__ void tmax(const T* a, T* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = max(a[i], T(0)); }
extern "C" __global__ void plain(float* x) { x[threadIdx.x] = 1; }
void launch(float* x, int n) { scale_kernel<<<1, 1>>>(x, 2, n); tmax<float><<<1, 1>>>(x, x, n); plain<<<1, 1>>>(x); }
)";
    for (const char* mode : {"none", "size"}) {
        CAPTURE(mode);
        const std::string so = std::string(dir) + "/k_" + mode + ".so";
        const std::string cmd = nvcc + " -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 " +
                                "-gencode arch=compute_90,code=compute_90 -compress-mode=" + mode + " " + cu + " -o " +
                                so;
        REQUIRE(std::system(cmd.c_str()) == 0);
        std::string note;
        const std::vector<KernelFacts> ks = extensionKernelFacts(so, "ext", 90, "", &note);
        if (std::string(mode) == "size") {
            // nvcc compressed its cubins (zstd): said, not guessed at
            CHECK(ks.empty());
            CHECK(note.find("zstd") != std::string::npos);
            continue;
        }
        INFO(note);
        CHECK(note.empty());
        REQUIRE(ks.size() == 3);
        const KernelFacts* scale = byName(ks, "_Z12scale_kernelPffi");
        REQUIRE(scale);
        CHECK(scale->demangled == "scale_kernel(float*, float, int)");
        CHECK(scale->module == "ext");
        CHECK(scale->arch == "sm_90");
        CHECK(scale->registers.value_or(0) > 0);
        CHECK(scale->paramBytes == 16);
        REQUIRE(byName(ks, "_Z4tmaxIfEvPKT_PS0_i"));
        CHECK(byName(ks, "_Z4tmaxIfEvPKT_PS0_i")->demangled == "void tmax<float>(float const*, float*, int)");
        REQUIRE(byName(ks, "plain"));
        // the fatbin holds PTX too (compute_90): each kernel gets its entry
        REQUIRE(byName(ks, "plain")->ptx);
        CHECK(byName(ks, "plain")->ptx->find(".entry plain(") != std::string::npos);
        // the facts match the JSON the worker sends
        const nlohmann::json j = kernelFactsJson(ks);
        REQUIRE(j.size() == 3);
        CHECK(j[0].contains("registers"));
        CHECK(j[0].at("module") == "ext");
        CHECK(j[0].at("sass").is_null());
        CHECK(j[0].contains("sass_note"));
    }
    std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST_CASE("what is not a cubin or has no device code says so")
{
    std::string error;
    const char junk[] = "not an elf at all, just text";
    CHECK(cubinKernelFacts(junk, sizeof junk, "sm_90", &error).empty());
    CHECK(error.find("ELF") != std::string::npos);
    std::vector<char> self;
    {
        std::ifstream in("/proc/self/exe", std::ios::binary);
        self.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    error.clear();
    CHECK(fatbinEntries(self, &error).empty());
    CHECK(error.find(".nv_fatbin") != std::string::npos);
}

TEST_CASE("an nvdisasm listing splits into each kernel's instructions")
{
    // The shape of `nvdisasm -c` (sections, directives, offsets, an encoding comment, labels).
    const std::string listing =
        "\t.headerflags\t@\"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n"
        "//--------------------- .text.add --------------------------\n"
        "\t.section\t.text.add,\"ax\",@progbits\n"
        "\t.sectioninfo\t@\"SHI_REGISTERS=10\"\n"
        "        .global         add\n"
        "add:\n"
        ".text.add:\n"
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
        "        /*0010*/                   LDG.E R2, desc[UR4][R2.64] ;    /* 0x000ea2000c1e1900 */\n"
        ".L_x_0:\n"
        "        /*0020*/                   EXIT ;\n"
        "\t.section\t.text._Z4usecPf,\"ax\",@progbits\n"
        "        /*0000*/                   STG.E desc[UR4][R2.64], R5 ;\n"
        "\t.section\t.nv.constant0.add,\"a\",@progbits\n"
        "        /*0000*/ \t.zero 4\n";
    const auto byKernel = sassByKernel(listing);
    REQUIRE(byKernel.size() == 2);
    CHECK(byKernel.at("add") == "LDC R1, c[0x0][0x28] ;\nLDG.E R2, desc[UR4][R2.64] ;\n.L_x_0:\nEXIT ;\n");
    CHECK(byKernel.at("_Z4usecPf") == "STG.E desc[UR4][R2.64], R5 ;\n");
}
