// Per-kernel facts (issue 40) on real cubins: NVRTC's here, and those of a shared object nvcc
// builds as torch builds an extension. The ELF's numbers are held to ptxas -v's own report of the
// same compile, for several architectures. No GPU.
#include "worker/compile/kernelfacts.h"
#include "worker/compile/nvrtccompiler.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
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

namespace {

// A torch extension's kind of source: a plain kernel, a template, an extern "C" one, host launches.
const char* kExtensionSource = R"(
__global__ void scale_kernel(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }
template <typename T> __global__ void tmax(const T* a, T* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = max(a[i], T(0)); }
extern "C" __global__ void plain(float* x) { x[threadIdx.x] = 1; }
void launch(float* x, int n) { scale_kernel<<<1, 1>>>(x, 2, n); tmax<float><<<1, 1>>>(x, x, n); plain<<<1, 1>>>(x); }
)";

// The source built as a shared object with SASS and PTX for sm_90 and nvcc's `flags` (how it
// compresses); written to `so` where given. Empty where nvcc failed.
std::vector<char> nvccExtension(const std::string& nvcc, const std::string& flags, const std::string& so = {})
{
    char dir[] = "/tmp/kwb-kernelfacts-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    const std::string cu = std::string(dir) + "/k.cu", out = so.empty() ? std::string(dir) + "/k.so" : so;
    std::ofstream(cu) << kExtensionSource;
    const std::string cmd = nvcc + " -shared -Xcompiler -fPIC -gencode arch=compute_90,code=sm_90 " +
                            "-gencode arch=compute_90,code=compute_90 " + flags + " " + cu + " -o " + out;
    std::vector<char> bytes;
    if (std::system(cmd.c_str()) == 0) {
        std::ifstream in(out, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::system(("rm -rf " + std::string(dir)).c_str());
    return bytes;
}

template <typename T>
T fieldAt(const std::vector<char>& b, std::size_t at)
{
    T v{};
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}

template <typename T>
void setField(std::vector<char>& b, std::size_t at, T v)
{
    std::memcpy(b.data() + at, &v, sizeof v);
}

// Where each fatbin entry's header is in the file, in order, found on their own here: every
// fatbinary starts {u32 0xBA55ED50, u16 version 1, u16 header size 16, u64 size}; entries
// {u16 kind, u16, u32 header size, u64 payload size, …}.
std::vector<std::size_t> entryHeaders(const std::vector<char>& so)
{
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i + 16 <= so.size(); i += 8) {
        if (fieldAt<uint32_t>(so, i) != 0xBA55ED50u || fieldAt<uint16_t>(so, i + 4) != 1 ||
            fieldAt<uint16_t>(so, i + 6) != 16)
            continue;
        const std::size_t end = i + 16 + fieldAt<uint64_t>(so, i + 8);
        for (std::size_t p = i + 16; p + 0x40 <= end && end <= so.size();
             p += fieldAt<uint32_t>(so, p + 4) + fieldAt<uint64_t>(so, p + 8))
            out.push_back(p);
    }
    return out;
}

} // namespace

TEST_CASE("kernels of a shared object nvcc built, uncompressed")
{
    const std::string nvcc = nvccPath();
    if (nvcc.empty()) {
        MESSAGE("skipped: no nvcc next to the CUDA include directories");
        return;
    }
    char so[] = "/tmp/kwb-kernelfacts-so-XXXXXX";
    const int fd = ::mkstemp(so);
    REQUIRE(fd >= 0);
    ::close(fd);
    REQUIRE_FALSE(nvccExtension(nvcc, "--compress-mode=none", so).empty());
    std::string note;
    const std::vector<KernelFacts> ks = extensionKernelFacts(so, "ext", 90, "", &note);
    ::unlink(so);
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

TEST_CASE("a compressed extension gives the facts, PTX and SASS of the uncompressed build")
{
    const std::string nvcc = nvccPath();
    if (nvcc.empty()) {
        MESSAGE("skipped: no nvcc next to the CUDA include directories");
        return;
    }
    const std::string nvdisasm = findNvdisasm(nvrtcIncludeDirs());
    auto facts = [&](const std::string& flags, std::vector<FatbinEntry>* entries) {
        char so[] = "/tmp/kwb-kernelfacts-so-XXXXXX";
        const int fd = ::mkstemp(so);
        REQUIRE(fd >= 0);
        ::close(fd);
        const std::vector<char> bytes = nvccExtension(nvcc, flags, so);
        REQUIRE_FALSE(bytes.empty());
        std::string error, note;
        *entries = fatbinEntries(bytes, &error);
        const std::vector<KernelFacts> ks = extensionKernelFacts(so, "ext", 90, nvdisasm, &note);
        ::unlink(so);
        CHECK(note.empty());
        return kernelFactsJson(ks);
    };
    std::vector<FatbinEntry> plainEntries;
    const nlohmann::json plain = facts("--compress-mode=none", &plainEntries);
    for (const FatbinEntry& e : plainEntries)
        CHECK(e.compression.empty());
    REQUIRE(plain.size() == 3);
    for (const auto& k : plain) {
        CHECK(k.at("ptx").is_string());
        CHECK(k.at("sass").is_string() == !nvdisasm.empty());
    }
    // What nvcc compresses how: size → zstd, speed → LZ4, -compress-all → the cubins too; nvcc
    // 13's default compresses the PTX (zstd) and leaves cubins as they are.
    const std::map<std::string, std::pair<std::string, std::string>> modes{
        {"", {"", ""}}, // the default: not held to what it compresses, only to the same facts
        {"--compress-mode=size", {"zstd", "zstd"}},
        {"--compress-mode=speed", {"LZ4", ""}},
        {"--compress-mode=speed -Xfatbin -compress-all", {"LZ4", "LZ4"}},
        {"--compress-mode=default -Xfatbin -compress-all", {"zstd", "zstd"}}};
    for (const auto& [flags, expected] : modes) {
        CAPTURE(flags);
        std::vector<FatbinEntry> entries;
        const nlohmann::json j = facts(flags, &entries);
        REQUIRE(entries.size() == plainEntries.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
            CAPTURE(i);
            CHECK(entries[i].unreadable.empty());
            CHECK(entries[i].bytes == plainEntries[i].bytes);
            if (!flags.empty())
                CHECK(entries[i].compression == (entries[i].elf ? expected.second : expected.first));
        }
        CHECK(j == plain);
    }
}

TEST_CASE("a compressed entry with a lying header, a truncated payload or no library says why")
{
    const std::string nvcc = nvccPath();
    if (nvcc.empty()) {
        MESSAGE("skipped: no nvcc next to the CUDA include directories");
        return;
    }
    for (const std::string flags : {"--compress-mode=size", "--compress-mode=speed -Xfatbin -compress-all"}) {
        CAPTURE(flags);
        const std::vector<char> so = nvccExtension(nvcc, flags);
        REQUIRE_FALSE(so.empty());
        std::string error;
        const std::vector<FatbinEntry> good = fatbinEntries(so, &error);
        const std::vector<std::size_t> headers = entryHeaders(so);
        REQUIRE(headers.size() == good.size());
        // the last cubin: the kernels'
        std::size_t last = good.size();
        for (std::size_t i = 0; i < good.size(); ++i)
            if (good[i].elf)
                last = i;
        REQUIRE(last < good.size());
        REQUIRE_FALSE(good[last].compression.empty());
        REQUIRE(good[last].unreadable.empty());
        const std::size_t h = headers[last];
        const auto packed = fieldAt<uint32_t>(so, h + 0x10);
        const auto payload = fieldAt<uint64_t>(so, h + 8);
        const auto unpacked = fieldAt<uint64_t>(so, h + 0x38);
        REQUIRE(unpacked == good[last].bytes.size());
        auto reason = [&](const std::function<void(std::vector<char>&)>& spoil) {
            std::vector<char> bad = so;
            spoil(bad);
            std::string e;
            const std::vector<FatbinEntry> entries = fatbinEntries(bad, &e);
            REQUIRE(entries.size() == good.size());
            for (std::size_t i = 0; i < entries.size(); ++i)
                if (i != last)
                    CHECK(entries[i].bytes == good[i].bytes); // the others are still read
            CHECK(entries[last].bytes.empty());
            return entries[last].unreadable;
        };
        const bool zstd = good[last].compression == "zstd";
        // sizes past the caps, of an entry and of the extension: refused before memory is taken
        CHECK(reason([&](auto& b) { setField<uint64_t>(b, h + 0x38, 300ull << 20); }).find("past the 256 MiB") !=
              std::string::npos);
        CHECK(reason([&](auto& b) {
                  setField<uint64_t>(b, h + 0x38, 1ull << 30);
              }).find("past the 512 MiB decompressed per extension") != std::string::npos);
        // a size a little off
        const std::string more = reason([&](auto& b) { setField<uint64_t>(b, h + 0x38, unpacked + 8); });
        CHECK(more.find(std::to_string(unpacked + 8)) != std::string::npos);
        CHECK(more.find("header says") != std::string::npos);
        CHECK_FALSE(reason([&](auto& b) { setField<uint64_t>(b, h + 0x38, unpacked - 8); }).empty());
        CHECK(reason([&](auto& b) { setField<uint64_t>(b, h + 0x38, 0); }).find("no uncompressed size") !=
              std::string::npos);
        // a truncated payload
        const std::string cut = reason([&](auto& b) { setField<uint32_t>(b, h + 0x10, packed / 2); });
        CHECK(cut.find(zstd ? "zstd:" : "LZ4") != std::string::npos);
        // a compressed size outside the payload
        CHECK(reason([&](auto& b) { setField<uint32_t>(b, h + 0x10, uint32_t(payload + 1)); }).find("not within") !=
              std::string::npos);
        CHECK(reason([&](auto& b) { setField<uint32_t>(b, h + 0x10, 0); }).find("not within") != std::string::npos);
        if (zstd) {
            CHECK(reason([&](auto& b) {
                      setField<uint32_t>(b, h + fieldAt<uint32_t>(so, h + 4), 0);
                  }).find("not a zstd frame") != std::string::npos);
        } else {
            // more than any LZ4 block of its size could make
            CHECK(reason([&](auto& b) {
                      setField<uint64_t>(b, h + 0x38, uint64_t(packed) * 300);
                  }).find("bytes of LZ4 can hold") != std::string::npos);
        }
        // an entry header size past the fatbinary: the entries before it are read, nothing past it
        {
            std::vector<char> bad = so;
            setField<uint32_t>(bad, h + 4, 0xfffffff0u);
            std::string e;
            const std::vector<FatbinEntry> entries = fatbinEntries(bad, &e);
            REQUIRE(entries.size() == last);
            for (std::size_t i = 0; i < last; ++i)
                CHECK(entries[i].bytes == good[i].bytes);
        }
        // an extension whose PTX cannot be read: its kernels are described, the PTX note says why
        std::size_t ptxAt = good.size();
        for (std::size_t i = 0; i < good.size(); ++i)
            if (!good[i].elf)
                ptxAt = i;
        REQUIRE(ptxAt < good.size());
        {
            std::vector<char> bad = so;
            setField<uint32_t>(bad, headers[ptxAt] + 0x10, fieldAt<uint32_t>(so, headers[ptxAt] + 0x10) / 2);
            char path[] = "/tmp/kwb-kernelfacts-so-XXXXXX";
            const int fd = ::mkstemp(path);
            REQUIRE(fd >= 0);
            REQUIRE(::write(fd, bad.data(), bad.size()) == ssize_t(bad.size()));
            ::close(fd);
            std::string note;
            const std::vector<KernelFacts> ks = extensionKernelFacts(path, "ext", 90, "", &note);
            ::unlink(path);
            CHECK(note.empty());
            REQUIRE(ks.size() == 3);
            for (const KernelFacts& k : ks) {
                CHECK_FALSE(k.ptx);
                CHECK(k.ptxNote.find("the extension's PTX for compute_90 compressed with " + good[ptxAt].compression +
                                     " (nvcc's fatbin compression) could not be read: ") == 0);
            }
        }
        // without the library: each compressed entry names it
        const FatbinInflater none("libkwb-no-such-zstd.so.1", "libkwb-no-such-lz4.so.1");
        const std::vector<FatbinEntry> missing = fatbinEntries(so, &error, none);
        REQUIRE(missing.size() == good.size());
        for (const FatbinEntry& e : missing) {
            CHECK(e.bytes.empty());
            CHECK(e.unreadable.find(zstd ? "libkwb-no-such-zstd.so.1 not found"
                                         : "libkwb-no-such-lz4.so.1 not found") != std::string::npos);
        }
    }
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
