#include "worker/compile/nvrtccompiler.h"

#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#ifndef KWB_CUDA_INCLUDE_DIR
#define KWB_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace kwb {
namespace {

bool isDirectory(const std::string& p)
{
    struct stat st
    {};
    return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> splitList(const std::string& s, const char* seps)
{
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (std::strchr(seps, c)) {
            if (!cur.empty())
                out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty())
        out.push_back(cur);
    return out;
}

// "sm_90" -> 90, "sm_90a" -> 90; -1 when not of that form.
int archNumber(const std::string& arch)
{
    if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
        return -1;
    size_t i = 3;
    int n = 0;
    while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
        n = n * 10 + (arch[i++] - '0');
    if (i == 3 || i - 3 > 3)
        return -1;
    if (i < arch.size() && !((arch[i] == 'a' || arch[i] == 'f') && i + 1 == arch.size()))
        return -1;
    return n;
}

std::string joined(const std::vector<std::string>& v)
{
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "" : " ") + s;
    return out;
}

constexpr const char* kProgramName = "candidate.cu"; // how NVRTC names the answer's source in its log

// "path(123): rest" at the left margin: true with the path, the line number and the rest.
// "At end of source: rest" has an empty path. A path that holds "(N): " itself is cut short
// there, which only makes it name no file (withheld) or the wrong one in the toolkit.
bool diagnosticHeader(const std::string& line, std::string& path, std::string& number, std::string& rest)
{
    if (line.empty() || std::isspace(static_cast<unsigned char>(line[0])))
        return false;
    static const std::string endOfSource = "At end of source: ";
    if (line.compare(0, endOfSource.size(), endOfSource) == 0) {
        path.clear();
        number.clear();
        rest = line.substr(endOfSource.size());
        return true;
    }
    for (size_t p = line.find('('); p != std::string::npos; p = line.find('(', p + 1)) {
        size_t q = p + 1;
        while (q < line.size() && std::isdigit(static_cast<unsigned char>(line[q])))
            ++q;
        if (q > p + 1 && line.compare(q, 3, "): ") == 0) {
            path = line.substr(0, p);
            number = line.substr(p + 1, q - p - 1);
            rest = line.substr(q + 3);
            return true;
        }
    }
    return false;
}

// "error", "warning #14-D", "catastrophic error" ...: the kind NVRTC writes before the message,
// or "diagnostic" when the text there has another shape.
std::string diagnosticKind(const std::string& rest)
{
    const size_t colon = rest.find(':');
    const std::string kind = rest.substr(0, colon == std::string::npos ? 0 : colon);
    for (const char* k : {"error", "warning", "remark", "note", "catastrophic error", "internal error"}) {
        const size_t n = std::strlen(k);
        if (kind.compare(0, n, k) != 0)
            continue;
        bool ok = kind.size() == n || (kind.size() > n + 1 && kind[n] == ' ' && kind[n + 1] == '#');
        for (size_t i = n + 2; ok && i < kind.size(); ++i)
            ok = std::isdigit(static_cast<unsigned char>(kind[i])) || kind[i] == '-' || kind[i] == 'D';
        if (ok && kind.size() <= 40)
            return kind;
    }
    return "diagnostic";
}

bool isCaretLine(const std::string& line)
{
    bool caret = false;
    for (char c : line) {
        if (c == '^')
            caret = true;
        else if (c != ' ' && c != '\t' && c != '\r')
            return false;
    }
    return caret;
}

bool isBlank(const std::string& line)
{
    return line.find_first_not_of(" \t\r") == std::string::npos;
}

std::string realPathOf(const std::string& p)
{
    char buf[PATH_MAX];
    return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

// A line cut to kMaxCompileLogLine bytes, not inside a UTF-8 sequence.
std::string capLine(const std::string& line)
{
    if (line.size() <= kMaxCompileLogLine)
        return line;
    size_t cut = kMaxCompileLogLine;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80)
        --cut;
    return line.substr(0, cut) + " [...]";
}

// ptxas -v's report ("ptxas info    : Used 10 registers…" and its "ptxas         .     0 bytes
// stack frame…" continuation lines) moved from `log` into *info: facts about the kernels, not
// messages for the model. ptxas's warnings and errors stay in the log.
std::string takePtxasInfo(const std::string& log, std::string* info)
{
    std::string rest;
    size_t b = 0;
    while (b < log.size()) {
        size_t e = log.find('\n', b);
        e = e == std::string::npos ? log.size() : e + 1;
        const std::string line = log.substr(b, e - b);
        const bool report = line.compare(0, 14, "ptxas info    ") == 0 || line.compare(0, 14, "ptxas         ") == 0;
        (report ? *info : rest) += line;
        b = e;
    }
    return rest;
}

} // namespace

std::string compilerMessagesOnly(const std::string& log, const std::string& programName,
                                 const std::vector<std::string>& includeDirs)
{
    enum class Mode { None, Own, MessageOnly, Withheld };
    std::vector<std::string> roots;
    for (const std::string& d : includeDirs)
        if (const std::string r = realPathOf(d); !r.empty())
            roots.push_back(r + "/");
    std::map<std::string, Mode> known;
    auto classify = [&](const std::string& path) {
        if (path == programName)
            return Mode::Own;
        if (path.empty())
            return Mode::MessageOnly; // "At end of source"
        auto it = known.find(path);
        if (it != known.end())
            return it->second;
        Mode m = Mode::Withheld;
        struct stat st
        {};
        const std::string real = realPathOf(path);
        if (!real.empty() && ::stat(real.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            for (const std::string& r : roots)
                if (real.compare(0, r.size(), r) == 0)
                    m = Mode::MessageOnly;
        if (known.size() < 4096)
            known[path] = m;
        return m;
    };

    std::vector<std::string> lines;
    for (size_t b = 0; b < log.size();) {
        size_t e = log.find('\n', b);
        if (e == std::string::npos)
            e = log.size();
        lines.push_back(log.substr(b, e - b));
        b = e + 1;
    }
    constexpr size_t kWithheldShown = 8;
    const size_t room = kMaxCompileLog - 128; // for the notes at the end
    std::string out;
    bool cut = false;
    auto emit = [&](const std::string& line) {
        if (cut)
            return;
        const std::string l = capLine(line);
        if (out.size() + l.size() + 1 > room) {
            cut = true;
            return;
        }
        out += l;
        out += '\n';
    };
    Mode mode = Mode::None;
    size_t withheld = 0;
    for (size_t k = 0; k < lines.size(); ++k) {
        const std::string& line = lines[k];
        std::string path, number, rest;
        if (diagnosticHeader(line, path, number, rest)) {
            mode = classify(path);
            if (mode != Mode::Withheld) {
                emit(line);
            } else if (++withheld <= kWithheldShown) {
                emit("<file outside the answer and the CUDA toolkit>(" + number + "): " + diagnosticKind(rest) +
                     ": [message withheld: it could quote that file]");
            }
            continue;
        }
        if (!line.empty() && !std::isspace(static_cast<unsigned char>(line[0]))) {
            mode = Mode::None; // "2 errors detected in the compilation of ...", "Compilation terminated."
            emit(line);
            continue;
        }
        if (isBlank(line)) {
            if (mode != Mode::Withheld && !out.empty() && out.compare(out.size() - 1, 1, "\n") == 0 &&
                !(out.size() >= 2 && out[out.size() - 2] == '\n'))
                emit("");
            continue;
        }
        if (mode == Mode::Own) {
            emit(line);
        } else if (mode == Mode::MessageOnly) {
            // the message's own continuation lines and "detected during ..." stay; the quoted
            // source line (the one above the caret) and the caret go
            if (isCaretLine(line) || (k + 1 < lines.size() && isCaretLine(lines[k + 1])))
                continue;
            emit(line);
        }
        // Mode::None, Mode::Withheld: an indented line outside a diagnostic we keep is dropped
    }
    if (withheld > kWithheldShown)
        out += "[" + std::to_string(withheld - kWithheldShown) +
               " more diagnostics in files outside the answer and the CUDA toolkit withheld]\n";
    if (cut)
        out += "[compile log cut at " + std::to_string(kMaxCompileLog / 1024) + " KiB]\n";
    return out;
}

std::string nvrtcVersionString()
{
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return "unknown";
    return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtcSupportedArchs()
{
    int n = 0;
    std::vector<std::string> out;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
        return out;
    std::vector<int> archs(static_cast<size_t>(n));
    if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
        return out;
    for (int a : archs)
        out.push_back("sm_" + std::to_string(a));
    return out;
}

std::vector<std::string> nvrtcIncludeDirs()
{
    const char* env = std::getenv("KWB_CUDA_INCLUDE_DIR");
    std::vector<std::string> dirs = splitList(env && *env ? env : KWB_CUDA_INCLUDE_DIR, ":;");
    std::vector<std::string> out;
    for (const std::string& d : dirs) {
        if (!isDirectory(d))
            continue;
        if (std::find(out.begin(), out.end(), d) == out.end())
            out.push_back(d);
        // CUDA 13 moved <cuda/std/...>, cub and what cooperative_groups.h includes under
        // include/cccl; nvcc adds it by itself, NVRTC does not.
        const std::string cccl = d + "/cccl";
        if (isDirectory(cccl) && std::find(out.begin(), out.end(), cccl) == out.end())
            out.push_back(cccl);
    }
    return out;
}

std::optional<SourceIssue> checkCudaForNvrtc(const std::string& source)
{
    return checkCudaSource(source, nvrtcIncludeDirs());
}

CompileResult compileCuda(const std::string& source, const std::string& arch,
                          const std::vector<std::string>& extraOptions)
{
    CompileResult r;
    r.arch = arch;
    const auto t0 = std::chrono::steady_clock::now();
    auto finish = [&]() -> CompileResult& {
        r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return r;
    };

    const std::vector<std::string> supported = nvrtcSupportedArchs();
    const int num = archNumber(arch);
    const bool known = std::find(supported.begin(), supported.end(), "sm_" + std::to_string(num)) != supported.end();
    if (num < 0 || !known) {
        r.log = "invalid GPU architecture '" + arch + "': expected sm_<major><minor> (e.g. sm_90) that NVRTC " +
                nvrtcVersionString() + " supports: " + joined(supported) + "\n";
        return finish();
    }

    if ((r.refused = checkCudaForNvrtc(source))) {
        r.log = "refused before compiling (cuda block line " + std::to_string(r.refused->line) +
                "): " + r.refused->message + "\n";
        return finish();
    }

    // Not --no-source-include: it also stops toolkit headers from finding their own siblings
    // (crt/mma.h includes "mma.hpp", cooperative_groups/details/driver_abi.h "info.h"). The
    // candidate's own includes are checked above instead, quoted ones against the working
    // directory that NVRTC searches first for them.
    // Extra options come from the workbench, never from an answer; still, none may define a macro
    // the toolkit's computed includes are built from (as `#define` in the source may not).
    const std::vector<std::string> includeDirs = nvrtcIncludeDirs();
    for (size_t i = 0; i < extraOptions.size(); ++i) {
        const std::string& o = extraOptions[i];
        std::string macro;
        for (const char* p : {"--define-macro=", "--undefine-macro=", "-D", "-U"}) {
            const size_t n = std::strlen(p);
            if (o.compare(0, n, p) != 0)
                continue;
            macro = o.size() > n ? o.substr(n) : (i + 1 < extraOptions.size() ? extraOptions[i + 1] : std::string());
            break;
        }
        macro = macro.substr(0, macro.find_first_of("=("));
        if (const std::string why = toolkitIncludeMacros(includeDirs).whyRefused(macro);
            !macro.empty() && !why.empty()) {
            r.refused = SourceIssue{"include_refused", "the option " + o + " is refused: " + why, 0};
            r.log = "refused before compiling: " + r.refused->message + "\n";
            return finish();
        }
    }

    r.options = {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", "--ptxas-options=-v"};
    for (const std::string& d : includeDirs)
        r.options.push_back("--include-path=" + d);
    r.options.insert(r.options.end(), extraOptions.begin(), extraOptions.end());

    nvrtcProgram prog = nullptr;
    nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), kProgramName, 0, nullptr, nullptr);
    if (rc != NVRTC_SUCCESS) {
        r.log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(rc) + "\n";
        return finish();
    }
    struct Guard
    {
        nvrtcProgram* p;
        ~Guard() { nvrtcDestroyProgram(p); }
    } guard{&prog};

    std::vector<const char*> opts;
    for (const std::string& o : r.options)
        opts.push_back(o.c_str());
    rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());

    size_t logSize = 0;
    if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
        std::string log(logSize, '\0');
        if (nvrtcGetProgramLog(prog, &log[0]) == NVRTC_SUCCESS) {
            log.resize(std::strlen(log.c_str()));
            log = takePtxasInfo(log, &r.ptxasInfo);
            // The log goes back to the model: compiler messages only (compilerMessagesOnly says
            // the rule), never the text of a file the answer got NVRTC to open.
            r.log = compilerMessagesOnly(log, kProgramName, includeDirs);
        }
    }
    if (rc != NVRTC_SUCCESS) {
        // A compile error's log says it all; other failures (a bad option) need their name.
        if (rc != NVRTC_ERROR_COMPILATION || r.log.empty())
            r.log = std::string("nvrtcCompileProgram failed: ") + nvrtcGetErrorString(rc) +
                    " (options: " + joined(r.options) + ")\n" + r.log;
        return finish();
    }

    size_t cubinSize = 0;
    rc = nvrtcGetCUBINSize(prog, &cubinSize);
    if (rc != NVRTC_SUCCESS || cubinSize == 0) {
        r.log += std::string("no cubin produced: ") + (rc != NVRTC_SUCCESS ? nvrtcGetErrorString(rc) : "size 0") + "\n";
        return finish();
    }
    r.cubin.resize(cubinSize);
    rc = nvrtcGetCUBIN(prog, r.cubin.data());
    if (rc != NVRTC_SUCCESS) {
        r.cubin.clear();
        r.log += std::string("nvrtcGetCUBIN failed: ") + nvrtcGetErrorString(rc) + "\n";
        return finish();
    }
    size_t ptxSize = 0;
    if (nvrtcGetPTXSize(prog, &ptxSize) == NVRTC_SUCCESS && ptxSize > 1) {
        r.ptx.resize(ptxSize);
        if (nvrtcGetPTX(prog, r.ptx.data()) == NVRTC_SUCCESS)
            r.ptx.resize(std::strlen(r.ptx.c_str()));
        else
            r.ptx.clear();
    }
    r.ok = true;
    return finish();
}

const CompileResult& compileOwnKernel(const char* source, const std::string& arch)
{
    struct Entry
    {
        std::once_flag once;
        CompileResult result;
    };
    static std::mutex mapMutex;
    static std::map<std::pair<const char*, std::string>, std::unique_ptr<Entry>> entries;
    Entry* e = nullptr;
    {
        std::lock_guard<std::mutex> lock(mapMutex);
        auto& slot = entries[{source, arch}];
        if (!slot)
            slot = std::make_unique<Entry>();
        e = slot.get();
    }
    std::call_once(e->once, [&] { e->result = compileCuda(source, arch); });
    return e->result;
}

} // namespace kwb
