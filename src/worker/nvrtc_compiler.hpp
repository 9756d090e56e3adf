#pragma once
// Run-time compilation of a candidate's ```cuda block with NVRTC. Needs no GPU and no driver.

#include "source_check.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kwb {

struct CompileResult {
    bool ok = false;
    std::string log;    // NVRTC's log verbatim (warnings too); our own explanation when NVRTC did not run
    std::string arch;   // "sm_90"
    std::vector<char> cubin;
    double ms = 0;      // wall time of create + compile + cubin extraction
    std::vector<std::string> options;  // as passed to nvrtcCompileProgram
    /// Set when the source was refused before NVRTC ran (checkCudaForNvrtc); `log` says why too.
    std::optional<SourceIssue> refused;
};

// The pre-check every CUDA source passes before NVRTC sees it (checkCudaSource against
// nvrtcIncludeDirs()): NVRTC resolves #include by itself, so an unchecked `#include "/etc/passwd"`
// prints the file in the compile log. compileCuda applies it; callers that skip NVRTC (a cubin
// compiled ahead) call it themselves.
std::optional<SourceIssue> checkCudaForNvrtc(const std::string& source);

// Compiles `source` (program name "candidate.cu") to a cubin for `arch` ("sm_90", "sm_90a").
// Refused (r.refused set, NVRTC not run) when checkCudaForNvrtc finds a problem.
// Options: --gpu-architecture=<arch> --std=c++17 -default-device, the CUDA include directories
// (so cuda_fp16.h, cuda_bf16.h and mma.h resolve), then `extraOptions`.
// The include directories are the build's KWB_CUDA_INCLUDE_DIR; the environment variable
// KWB_CUDA_INCLUDE_DIR replaces them at run time. Both are lists separated by ':' or ';'; each
// directory's cccl/ subdirectory (CUDA 13) is added when it exists.
CompileResult compileCuda(const std::string& source, const std::string& arch,
                          const std::vector<std::string>& extraOptions = {});

// The worker's own kernels (the clock probe, the output comparison): compiled once per process and
// architecture, the result kept. Thread-safe: a second caller of the same source and arch waits for
// the first one's compile, so an evaluation can compile them ahead on another thread while the
// CUDA context is being made (evaluator.cpp) and use them later without compiling again.
const CompileResult& compileOwnKernel(const char* source, const std::string& arch);

std::string nvrtcVersionString();                // "13.0"
std::vector<std::string> nvrtcSupportedArchs();  // {"sm_75", ..., "sm_120"}

// The include directories compileCuda passes (existing ones only).
std::vector<std::string> nvrtcIncludeDirs();

}  // namespace kwb
