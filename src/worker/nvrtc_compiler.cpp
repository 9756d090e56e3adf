#include "nvrtc_compiler.hpp"

#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
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

bool isDirectory(const std::string& p) {
    struct stat st {};
    return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> splitList(const std::string& s, const char* seps) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (std::strchr(seps, c)) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// "sm_90" -> 90, "sm_90a" -> 90; -1 when not of that form.
int archNumber(const std::string& arch) {
    if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return -1;
    size_t i = 3;
    int n = 0;
    while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) n = n * 10 + (arch[i++] - '0');
    if (i == 3 || i - 3 > 3) return -1;
    if (i < arch.size() && !((arch[i] == 'a' || arch[i] == 'f') && i + 1 == arch.size())) return -1;
    return n;
}

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
    return out;
}

}  // namespace

std::string nvrtcVersionString() {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
    return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtcSupportedArchs() {
    int n = 0;
    std::vector<std::string> out;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return out;
    std::vector<int> archs(static_cast<size_t>(n));
    if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return out;
    for (int a : archs) out.push_back("sm_" + std::to_string(a));
    return out;
}

std::vector<std::string> nvrtcIncludeDirs() {
    const char* env = std::getenv("KWB_CUDA_INCLUDE_DIR");
    std::vector<std::string> dirs = splitList(env && *env ? env : KWB_CUDA_INCLUDE_DIR, ":;");
    std::vector<std::string> out;
    for (const std::string& d : dirs) {
        if (!isDirectory(d)) continue;
        if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
        // CUDA 13 moved <cuda/std/...>, cub and what cooperative_groups.h includes under
        // include/cccl; nvcc adds it by itself, NVRTC does not.
        const std::string cccl = d + "/cccl";
        if (isDirectory(cccl) && std::find(out.begin(), out.end(), cccl) == out.end()) out.push_back(cccl);
    }
    return out;
}

std::optional<SourceIssue> checkCudaForNvrtc(const std::string& source) {
    return checkCudaSource(source, nvrtcIncludeDirs());
}

CompileResult compileCuda(const std::string& source, const std::string& arch,
                          const std::vector<std::string>& extraOptions) {
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
        r.log = "refused before compiling (cuda block line " + std::to_string(r.refused->line) + "): " +
                r.refused->message + "\n";
        return finish();
    }

    // Not --no-source-include: it also stops toolkit headers from finding their own siblings
    // (crt/mma.h includes "mma.hpp", cooperative_groups/details/driver_abi.h "info.h"). The
    // candidate's own includes are checked above instead, quoted ones against the working
    // directory that NVRTC searches first for them.
    r.options = {"--gpu-architecture=" + arch, "--std=c++17", "-default-device"};
    for (const std::string& d : nvrtcIncludeDirs()) r.options.push_back("--include-path=" + d);
    r.options.insert(r.options.end(), extraOptions.begin(), extraOptions.end());

    nvrtcProgram prog = nullptr;
    nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), "candidate.cu", 0, nullptr, nullptr);
    if (rc != NVRTC_SUCCESS) {
        r.log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(rc) + "\n";
        return finish();
    }
    struct Guard {
        nvrtcProgram* p;
        ~Guard() { nvrtcDestroyProgram(p); }
    } guard{&prog};

    std::vector<const char*> opts;
    for (const std::string& o : r.options) opts.push_back(o.c_str());
    rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());

    size_t logSize = 0;
    if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
        std::string log(logSize, '\0');
        if (nvrtcGetProgramLog(prog, &log[0]) == NVRTC_SUCCESS) {
            log.resize(std::strlen(log.c_str()));
            r.log = log;
        }
    }
    if (rc != NVRTC_SUCCESS) {
        // A compile error's log says it all; other failures (a bad option) need their name.
        if (rc != NVRTC_ERROR_COMPILATION || r.log.empty())
            r.log = std::string("nvrtcCompileProgram failed: ") + nvrtcGetErrorString(rc) + " (options: " +
                    joined(r.options) + ")\n" + r.log;
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
    r.ok = true;
    return finish();
}

const CompileResult& compileOwnKernel(const char* source, const std::string& arch) {
    struct Entry {
        std::once_flag once;
        CompileResult result;
    };
    static std::mutex mapMutex;
    static std::map<std::pair<const char*, std::string>, std::unique_ptr<Entry>> entries;
    Entry* e = nullptr;
    {
        std::lock_guard<std::mutex> lock(mapMutex);
        auto& slot = entries[{source, arch}];
        if (!slot) slot = std::make_unique<Entry>();
        e = slot.get();
    }
    std::call_once(e->once, [&] { e->result = compileCuda(source, arch); });
    return e->result;
}

}  // namespace kwb
