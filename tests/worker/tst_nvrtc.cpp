// NVRTC compilation: runs on a CPU machine (no GPU, no driver needed).
#include "worker/compile/nvrtccompiler.h"
#include "worker/device/deviceinfo.h"
#include "worker/evaluate/outputcompare.h"
#include "worker/measure/clockprobe.h"

#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace kwb;

namespace {

const char* kBiasRelu = R"(
extern "C" __global__ void bias_relu(float* y, const float* b, long long n, int c, int hw) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { float v = y[i] + b[(i / hw) % c]; y[i] = v > 0.f ? v : 0.f; }
}
)";

bool isElf(const std::vector<char>& b)
{
    return b.size() > 4 && std::memcmp(b.data(),
                                       "\x7f"
                                       "ELF",
                                       4) == 0;
}

} // namespace

TEST_CASE("version and architectures")
{
    CHECK(nvrtcVersionString().find('.') != std::string::npos);
    auto archs = nvrtcSupportedArchs();
    REQUIRE_FALSE(archs.empty());
    CHECK(std::find(archs.begin(), archs.end(), "sm_90") != archs.end());
    CHECK(std::find(archs.begin(), archs.end(), "sm_80") != archs.end());
    CHECK_FALSE(nvrtcIncludeDirs().empty());
}

TEST_CASE("a kernel compiles to a cubin for sm_90 and sm_80")
{
    for (const char* arch : {"sm_90", "sm_80", "sm_90a"}) {
        CAPTURE(arch);
        CompileResult r = compileCuda(kBiasRelu, arch);
        INFO(r.log);
        REQUIRE(r.ok);
        CHECK(isElf(r.cubin));
        CHECK(r.arch == arch);
        CHECK(r.ms > 0);
        CHECK(r.options.at(0) == std::string("--gpu-architecture=") + arch);
        CHECK(std::find(r.options.begin(), r.options.end(), "--std=c++17") != r.options.end());
        CHECK(std::find(r.options.begin(), r.options.end(), "-default-device") != r.options.end());
    }
}

TEST_CASE("a compile error returns the error line in the log")
{
    const std::string src = "extern \"C\" __global__ void k(float* y) {\n"
                            "    y[0] = 1.0f\n" // missing ';'
                            "}\n";
    CompileResult r = compileCuda(src, "sm_90");
    CHECK_FALSE(r.ok);
    CHECK(r.cubin.empty());
    INFO(r.log);
    CHECK(r.log.find("candidate.cu(") != std::string::npos);
    CHECK(r.log.find("error") != std::string::npos);
    CHECK((r.log.find("candidate.cu(2)") != std::string::npos || r.log.find("candidate.cu(3)") != std::string::npos));

    CompileResult u = compileCuda("extern \"C\" __global__ void k(float* y) { y[0] = undefined_name; }\n", "sm_90");
    CHECK_FALSE(u.ok);
    CHECK(u.log.find("undefined_name") != std::string::npos);
}

TEST_CASE("an invalid architecture is refused with a clear log")
{
    for (const char* arch : {"sm_1", "compute_90", "gfx90a", "", "sm_9x", "sm_999"}) {
        CAPTURE(arch);
        CompileResult r = compileCuda(kBiasRelu, arch);
        CHECK_FALSE(r.ok);
        CHECK(r.log.find("invalid GPU architecture") != std::string::npos);
        CHECK(r.log.find("sm_90") != std::string::npos); // the supported list is shown
    }
}

TEST_CASE("an invalid extra option is reported by name")
{
    CompileResult r = compileCuda(kBiasRelu, "sm_90", {"--no-such-option"});
    CHECK_FALSE(r.ok);
    INFO(r.log);
    CHECK(r.log.find("--no-such-option") != std::string::npos);
}

TEST_CASE("toolkit headers resolve: cuda_fp16.h, cuda_bf16.h")
{
    const char* src = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_add(__half* y, const __half* a, const __nv_bfloat16* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(a[i], __float2half(__bfloat162float(b[i])));
}
)";
    CompileResult r = compileCuda(src, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
    CHECK(isElf(r.cubin));
}

TEST_CASE("dynamic shared memory (extern __shared__)")
{
    const char* src = R"(
extern "C" __global__ void row_sum(const float* x, float* y, int cols) {
    extern __shared__ float buf[];
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[blockIdx.x * cols + c];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = buf[0];
}
)";
    CompileResult r = compileCuda(src, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
    CHECK(isElf(r.cubin));
}

TEST_CASE("the ceiling kernels of device_info compile")
{
    for (const char* arch : {"sm_90", "sm_80"}) {
        CAPTURE(arch);
        for (const char* src : {fmaPeakKernelSource(), wmmaBf16KernelSource(), wmmaTf32KernelSource()}) {
            CompileResult r = compileCuda(src, arch);
            INFO(r.log);
            CHECK(r.ok);
            CHECK(isElf(r.cubin));
        }
    }
}

TEST_CASE("the worker's own kernels compile once per process and arch, the same result for every caller")
{
    // The output comparison (outputcompare.cpp) and the clock probe, for Hopper and Ampere.
    for (const char* arch : {"sm_90", "sm_80"}) {
        CAPTURE(arch);
        for (const char* src : {fusedCompareSource(), ClockProbe::source()}) {
            const CompileResult& r = compileOwnKernel(src, arch);
            INFO(r.log);
            CHECK(r.ok);
            CHECK(isElf(r.cubin));
            CHECK(&compileOwnKernel(src, arch) == &r); // kept, not compiled again
        }
    }
    CHECK(&compileOwnKernel(fusedCompareSource(), "sm_90") != &compileOwnKernel(fusedCompareSource(), "sm_80"));
}

TEST_CASE("includes outside the toolkit are refused before NVRTC runs: nothing of the file reaches the log")
{
    // At 08b8dde NVRTC opened these and printed their lines (or the worker's environment) in the log.
    for (const char* inc :
         {"#include \"/etc/passwd\"", "#include </etc/passwd>", "#include \"/proc/self/environ\"",
          "#include \"../../../../../../../../etc/passwd\"", "#define F \"/etc/passwd\"\n#include F",
          "#inc\\\nlude \"/etc/passwd\"", "%:include \"/etc/passwd\"", "#if __has_include(\"/etc/passwd\")\n#endif"}) {
        CAPTURE(inc);
        CompileResult r = compileCuda(std::string(inc) + "\n" + kBiasRelu, "sm_90");
        INFO(r.log);
        CHECK_FALSE(r.ok);
        REQUIRE(r.refused);
        CHECK(r.refused->code == "include_refused");
        CHECK(r.log.find("refused before compiling") != std::string::npos);
        CHECK(r.log.find("root:") == std::string::npos);
        CHECK(r.log.find("PATH=") == std::string::npos);
        CHECK(r.options.empty()); // NVRTC was not called
        CHECK(checkCudaForNvrtc(std::string(inc) + "\n" + kBiasRelu));
    }
    // A quoted name that exists in the working directory, which NVRTC searches first for "name".
    const char* probe = "kwb_tst_nvrtc_cwd_probe.h";
    {
        std::FILE* f = std::fopen(probe, "w");
        REQUIRE(f);
        std::fputs("#error secret_in_cwd\n", f);
        std::fclose(f);
    }
    CompileResult cwd = compileCuda(std::string("#include \"") + probe + "\"\n" + kBiasRelu, "sm_90");
    std::remove(probe);
    INFO(cwd.log);
    CHECK_FALSE(cwd.ok);
    REQUIRE(cwd.refused);
    CHECK(cwd.log.find("secret_in_cwd") == std::string::npos);
}

TEST_CASE("toolkit headers that honest kernels include still compile, quoted or not")
{
    const char* src = R"(
#include <cuda_fp16.h>
#include "cuda_bf16.h"
#include <mma.h>
#include <cooperative_groups.h>
#include <cuda/std/cstdint>
namespace cg = cooperative_groups;
extern "C" __global__ void k(__half* y, const __nv_bfloat16* b, int n) {
    cg::thread_block tb = cg::this_thread_block();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half(__bfloat162float(b[i]) + float(tb.thread_rank()) * 0.f);
}
)";
    CHECK_FALSE(checkCudaForNvrtc(src));
    CompileResult r = compileCuda(src, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
    CHECK_FALSE(r.refused);
}

// ---- Issue 32 (5): routes that made NVRTC print a file into the log despite the include check ----

namespace {

const char* kEnvironPath = "../../../../../../../../../../../../../../proc/self/environ>";
const char* kPasswdPath = "../../../../../../../../../../../../../../etc/passwd>";

bool toolkitHas(const std::string& rel)
{
    for (const std::string& d : nvrtcIncludeDirs()) {
        std::FILE* f = std::fopen((d + "/" + rel).c_str(), "r");
        if (f) {
            std::fclose(f);
            return true;
        }
    }
    return false;
}

// Nothing of /etc/passwd, the environment or the marker files below in a log.
void checkNoFileText(const std::string& log)
{
    for (const char* s : {"root:", "PATH=", "HOME=", "SHELL=", "SECRET_ENV_TOKEN", "abc123"}) {
        CAPTURE(s);
        CHECK(log.find(s) == std::string::npos);
    }
}

} // namespace

TEST_CASE("the toolkit's computed includes are found from the headers present")
{
    // The folder list once more at its end: a list not scanned yet in this process (the same
    // files: each is read once), so the time is a first scan's.
    std::vector<std::string> again = nvrtcIncludeDirs();
    again.push_back(again.front());
    const auto t0 = std::chrono::steady_clock::now();
    const ToolkitIncludeMacros& fresh = toolkitIncludeMacros(again);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ToolkitIncludeMacros& m = toolkitIncludeMacros(nvrtcIncludeDirs());
    CHECK(fresh.steering == m.steering);
    CHECK(fresh.files == m.files);
    MESSAGE("NVRTC " << nvrtcVersionString() << ": " << m.files << " files scanned in " << ms << " ms, "
                     << m.sites.size() << " computed includes, " << m.steering.size() << " macro names refused, "
                     << m.fileTests.size() << " __has_include wrappers");
    CHECK(m.files > 100);
    CHECK(&toolkitIncludeMacros(nvrtcIncludeDirs()) == &m);
    // Every identifier after a computed #include is in the set (whatever the toolkit version).
    for (const std::string& site : m.sites) {
        const size_t at = site.find(": #");
        REQUIRE(at != std::string::npos);
        std::string operand = site.substr(site.find(' ', at + 3) + 1);
        for (size_t i = 0; i < operand.size();) {
            if (!(std::isalpha(static_cast<unsigned char>(operand[i])) || operand[i] == '_')) {
                ++i;
                continue;
            }
            size_t j = i;
            while (j < operand.size() && (std::isalnum(static_cast<unsigned char>(operand[j])) || operand[j] == '_'))
                ++j;
            CAPTURE(site);
            CHECK(m.steering.count(operand.substr(i, j - i)) == 1);
            i = j;
        }
    }
    if (toolkitHas("cccl/thrust/iterator/detail/host_system_tag.h") ||
        toolkitHas("thrust/iterator/detail/host_system_tag.h")) {
        // CUDA 13.0: 94 computed includes, all in thrust
        for (const char* name :
             {"__THRUST_HOST_SYSTEM_TAG_HEADER", "__THRUST_HOST_SYSTEM_ROOT", "__THRUST_HOST_SYSTEM_NAMESPACE",
              "__THRUST_DEVICE_SYSTEM_NAMESPACE", "THRUST_MR_STD_MR_HEADER", "memory_resource", "detail"}) {
            CAPTURE(name);
            CHECK(m.steering.count(name) == 1);
        }
    }
    // names honest kernels define stay free
    for (const char* name : {"N", "BLOCK_SIZE", "TILE", "WARP_SIZE", "CEIL_DIV", "THREADS", "USE_FP16", "__half"}) {
        CAPTURE(name);
        CHECK(m.whyRefused(name).empty());
    }
}

TEST_CASE("a toolkit header's computed #include steered by the answer's macros is refused before NVRTC runs")
{
    // Each of these put the file into NVRTC's log (measured on 13.0 without the check): the
    // toolkit's own `#include __THRUST_HOST_SYSTEM_TAG_HEADER` expands to
    // <thrust/system/__THRUST_HOST_SYSTEM_NAMESPACE/detail/execution_policy.h>.
    const std::string attacks[] = {
        std::string("#define THRUST_HOST_SYSTEM 99\n#define __THRUST_HOST_SYSTEM_NAMESPACE ") + kEnvironPath +
            "\n#include <thrust/iterator/detail/host_system_tag.h>\n",
        std::string("#define THRUST_HOST_SYSTEM 99\n#define __THRUST_HOST_SYSTEM_NAMESPACE ") + kPasswdPath +
            "\n#include <thrust/iterator/detail/host_system_tag.h>\n",
        // a word of a toolkit macro's replacement list (<__THRUST_DEVICE_SYSTEM_ROOT/detail/...>)
        std::string("#include <thrust/iterator/detail/host_system_tag.h>\n#define detail ") + kPasswdPath +
            "\n#include <thrust/iterator/detail/device_system_tag.h>\n",
        "#define THRUST_MR_STD_MR_HEADER \"/etc/passwd\"\n#include <thrust/mr/memory_resource.h>\n",
        "#include <thrust/iterator/detail/host_system_tag.h>\n#undef __THRUST_HOST_SYSTEM_ROOT\n",
    };
    for (const std::string& a : attacks) {
        CAPTURE(a);
        CompileResult r = compileCuda(a + kBiasRelu, "sm_90");
        INFO(r.log);
        CHECK_FALSE(r.ok);
        REQUIRE(r.refused);
        CHECK(r.refused->code == "include_refused");
        CHECK(r.options.empty()); // NVRTC was not called
        checkNoFileText(r.log);
        if (toolkitHas("cccl/thrust/iterator/detail/host_system_tag.h"))
            CHECK(r.refused->message.find("the CUDA toolkit builds #include file names from") != std::string::npos);
    }
    // Extra options are the workbench's own, but hold to the same rule.
    if (toolkitIncludeMacros(nvrtcIncludeDirs()).steering.count("__THRUST_HOST_SYSTEM_NAMESPACE")) {
        for (const std::vector<std::string>& opts :
             {std::vector<std::string>{std::string("-D__THRUST_HOST_SYSTEM_NAMESPACE=") + kEnvironPath},
              std::vector<std::string>{"--define-macro=__THRUST_HOST_SYSTEM_NAMESPACE=x"},
              std::vector<std::string>{"-D", "__THRUST_HOST_SYSTEM_NAMESPACE=x"},
              std::vector<std::string>{"-U__THRUST_HOST_SYSTEM_NAMESPACE"}}) {
            CAPTURE(opts.front());
            CompileResult r = compileCuda(kBiasRelu, "sm_90", opts);
            CHECK_FALSE(r.ok);
            REQUIRE(r.refused);
            CHECK(r.log.find("is refused") != std::string::npos);
        }
    }
    CompileResult plainDefine = compileCuda(kBiasRelu, "sm_90", {"-DN=4", "--define-macro=BLOCK=256"});
    INFO(plainDefine.log);
    CHECK(plainDefine.ok);
}

TEST_CASE("includes hidden where the check read a raw string and NVRTC reads code are refused")
{
    const std::string inc = "\n#include \"/etc/passwd\"\n#include \"/proc/self/environ\"\n";
    const std::string d17 = "abcdefghijklmnopq";
    const std::string attacks[] = {
        // NVRTC: "raw string delimiter not found within 16 characters -- raw string indicator ignored"
        "const char* s = R\"" + d17 + "(" + inc + ")" + d17 + "\";\n",
        "const char* s = u8R\"" + d17 + "(" + inc + ")" + d17 + "\";\n",
        "const char* s = R\"" + std::string(64, 'd') + "(" + inc + ")" + std::string(64, 'd') + "\";\n",
        // backslash, two carriage returns, newline: NVRTC splices it, so R"x( is inside a string
        "const char* s = \"abc\\\r\r\nR\"x(\";" + inc + ")x\";\n",
        // `)x\` newline `"` ends the raw string for NVRTC
        "const char* s = R\"x(\n)x\\\n\";" + inc + ")x\";\n",
    };
    for (const std::string& a : attacks) {
        CAPTURE(a);
        CompileResult r = compileCuda(a + kBiasRelu, "sm_90");
        INFO(r.log);
        CHECK_FALSE(r.ok);
        REQUIRE(r.refused);
        CHECK(r.options.empty());
        checkNoFileText(r.log);
    }
    // Raw strings with delimiters NVRTC takes still compile, includes inside them are text.
    const std::string honest = "const char* a = R\"(" + inc + ")\";\nconst char* b = R\"abcdefghijklmnop(" + inc +
                               ")abcdefghijklmnop\";\nconst char* c = u8R\"[]{}<>#%!=-+*/.,(x)[]{}<>#%!=-+*/.,\";\n"
                               "__device__ const char* use() { return a[0] ? b : c; }\n";
    CHECK_FALSE(checkCudaForNvrtc(honest + kBiasRelu));
    CompileResult r = compileCuda(honest + kBiasRelu, "sm_90");
    INFO(r.log);
    CHECK(r.ok);
}

TEST_CASE("the compile log keeps compiler messages: the answer's own lines, never another file's")
{
    // A file NVRTC reads that is neither the answer nor a toolkit header (here through the
    // workbench's own --pre-include, which no answer can pass): its diagnostics quote it, and
    // their messages too (identifier "abc123" is undefined).
    char tmpl[] = "/tmp/kwb_tst_nvrtc_XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string secret = std::string(tmpl) + "/secret.h";
    {
        std::FILE* f = std::fopen(secret.c_str(), "w");
        REQUIRE(f);
        std::fputs("SECRET_ENV_TOKEN=abc123 PATH=/usr/bin\n", f);
        std::fclose(f);
    }
    CompileResult r = compileCuda(kBiasRelu, "sm_90", {"--pre-include=" + secret});
    std::remove(secret.c_str());
    ::rmdir(tmpl);
    INFO(r.log);
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.refused);
    checkNoFileText(r.log);
    CHECK(r.log.find("<file outside the answer and the CUDA toolkit>(1): error: [message withheld") !=
          std::string::npos);
    CHECK(r.log.find("detected in the compilation of \"candidate.cu\"") != std::string::npos);

    // The answer's own error: message, quoted line and caret stay. A toolkit header's notes: the
    // message stays, the header's quoted line goes.
    const char* src =
        "#include <cuda_fp16.h>\n"
        "extern \"C\" __global__ void k(__half* y) { __half h = __float2half(1.0f); h = h + \"x\"; y[0] = h; }\n";
    CompileResult t = compileCuda(src, "sm_90");
    INFO(t.log);
    CHECK_FALSE(t.ok);
    CHECK(t.log.find("candidate.cu(2): error") != std::string::npos);
    CHECK(t.log.find("  extern \"C\" __global__ void k(__half* y)") != std::string::npos); // the quoted line
    CHECK(t.log.find("^") != std::string::npos);
    CHECK(t.log.find("operand types are") != std::string::npos);   // a message's second line
    CHECK(t.log.find("cuda_fp16.h(") != std::string::npos);        // the toolkit's notes
    CHECK(t.log.find("__CUDA_HOSTDEVICE__") == std::string::npos); // not its quoted lines
}

TEST_CASE("compilerMessagesOnly: the filter, line by line, and its caps")
{
    const std::vector<std::string> dirs = nvrtcIncludeDirs();
    REQUIRE_FALSE(dirs.empty());
    const std::string tk = dirs.front() + "/cuda_fp16.h";
    const std::string log =
        tk +
        "(31): warning #14-D: extra text after expected end of preprocessing directive\n"
        "  #include __THRUST_HOST_SYSTEM_TAG_HEADER\n"
        "           ^\n"
        "\n"
        "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
        "\n" +
        dirs.front() +
        "/../../../../../../../../proc/self/environ(1): error: this declaration has no storage class\n"
        "  SHELL=/bin/bash HOME=/root PATH=/usr/bin\n"
        "  ^\n"
        "\n"
        "/etc/passwd(2): error: identifier \"root\" is undefined\n"
        "  root:x:0:0:root:/root:/bin/bash\n"
        "  ^\n"
        "          detected during instantiation of \"root\" at line 3 of candidate.cu\n"
        "\n"
        "candidate.cu(4): error: expected a \";\"\n"
        "    y[0] = 1.0f\n"
        "               ^\n"
        "\n"
        "At end of source: error: expected a \"}\"\n"
        "\n"
        "4 errors detected in the compilation of \"candidate.cu\".\n";
    const std::string out = compilerMessagesOnly(log, "candidate.cu", dirs);
    INFO(out);
    CHECK(out.find(tk + "(31): warning #14-D: extra text after expected end") != std::string::npos);
    CHECK(out.find("__THRUST_HOST_SYSTEM_TAG_HEADER") == std::string::npos); // a toolkit line, quoted
    CHECK(out.find("Remark: The warnings") != std::string::npos);
    checkNoFileText(out);
    CHECK(out.find("environ") == std::string::npos);
    CHECK(out.find("<file outside the answer and the CUDA toolkit>(1): error: [message withheld") != std::string::npos);
    CHECK(out.find("<file outside the answer and the CUDA toolkit>(2): error: [message withheld") != std::string::npos);
    CHECK(out.find("detected during") == std::string::npos); // part of a withheld diagnostic
    CHECK(out.find("candidate.cu(4): error: expected a \";\"\n    y[0] = 1.0f\n               ^\n") !=
          std::string::npos);
    CHECK(out.find("At end of source: error: expected a \"}\"") != std::string::npos);
    CHECK(out.find("4 errors detected in the compilation of \"candidate.cu\".") != std::string::npos);

    // a toolkit path that leads out of the folder through .. is not the toolkit's
    const std::string out2 = compilerMessagesOnly(
        dirs.front() + "/../../../../../../etc/passwd(1): error: x\n  root:x\n  ^\n", "candidate.cu", dirs);
    CHECK(out2.find("root") == std::string::npos);
    // a kind that is not one of NVRTC's is not echoed
    CHECK(compilerMessagesOnly("/etc/passwd(1): root:x:0: y\n", "candidate.cu", dirs)
              .find("(1): diagnostic: [message withheld") != std::string::npos);

    // After 8 withheld diagnostics one line counts the rest.
    std::string many;
    for (int i = 1; i <= 50; ++i)
        many += "/etc/passwd(" + std::to_string(i) + "): error: x\n  root:x\n  ^\n\n";
    const std::string out3 = compilerMessagesOnly(many, "candidate.cu", dirs);
    CHECK(out3.find("[42 more diagnostics in files outside the answer and the CUDA toolkit withheld]") !=
          std::string::npos);
    CHECK(out3.find("(9): error") == std::string::npos);

    // Lines are cut to 400 bytes (not inside a UTF-8 sequence), the log to 64 KiB.
    std::string longLine = "candidate.cu(1): error: " + std::string(1000, 'x');
    const std::string out4 = compilerMessagesOnly(
        longLine + "\n  " + std::string(300, 'y') + "\xc3\xa9" + std::string(300, 'y') + "\n", "candidate.cu", dirs);
    for (size_t b = 0; b < out4.size();) {
        size_t e = out4.find('\n', b);
        if (e == std::string::npos)
            e = out4.size();
        CHECK(e - b <= kMaxCompileLogLine + 8);
        b = e + 1;
    }
    std::string owns;
    for (int i = 0; i < 5000; ++i)
        owns += "candidate.cu(" + std::to_string(i) + "): error: " + std::string(100, 'e') + "\n";
    const std::string out5 = compilerMessagesOnly(owns, "candidate.cu", dirs);
    CHECK(out5.size() <= kMaxCompileLog);
    CHECK(out5.find("[compile log cut at 64 KiB]") != std::string::npos);
    const std::string cut = compilerMessagesOnly(
        "candidate.cu(1): error: " + std::string(398 - 24, 'a') + "\xc3\xa9\xc3\xa9\n", "candidate.cu", dirs);
    CHECK(cut.find("\xc3\xa9 [...]") != std::string::npos); // cut after a whole character, not inside one
}

TEST_CASE("every fixture candidate's cuda block passes the check, but the include attacks")
{
    // The honest kernels (reference/, failing/, the other adversarial ones) must not be caught by
    // the rules above. The fixtures sit next to this file's folder.
    std::string here = __FILE__;
    const std::string root = here.substr(0, here.rfind('/')) + "/../fixtures/candidates/";
    size_t checked = 0;
    for (const char* sub : {"reference", "failing", "adversarial", "limits"}) {
        const std::string dir = root + sub;
        DIR* d = ::opendir(dir.c_str());
        if (!d)
            continue;
        while (const dirent* ent = ::readdir(d)) {
            const std::string name = ent->d_name;
            if (name.size() < 4 || name.compare(name.size() - 3, 3, ".md") != 0)
                continue;
            std::FILE* f = std::fopen((dir + "/" + name).c_str(), "rb");
            if (!f)
                continue;
            std::string text;
            char buf[65536];
            for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
                text.append(buf, n);
            std::fclose(f);
            const size_t open = text.find("```cuda\n");
            if (open == std::string::npos)
                continue;
            const size_t close = text.find("\n```", open + 8);
            const std::string cuda =
                text.substr(open + 8, close == std::string::npos ? std::string::npos : close - open - 7);
            const auto issue = checkCudaForNvrtc(cuda);
            const bool attack = std::string(sub) == "adversarial" && name.compare(0, 8, "include_") == 0;
            CAPTURE(name);
            CAPTURE(issue ? issue->message : std::string());
            CHECK(bool(issue) == attack);
            ++checked;
        }
        ::closedir(d);
    }
    MESSAGE(checked << " fixture cuda blocks checked");
    CHECK(checked > 30);
}
