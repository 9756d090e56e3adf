#pragma once
// Run-time compilation of a candidate's ```cuda block with NVRTC. Needs no GPU and no driver.

#include "worker/answers/sourcecheck.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kwb {

struct CompileResult
{
    bool ok = false;
    std::string
        log; // NVRTC's log (warnings too) through compilerMessagesOnly; our own explanation when NVRTC did not run
    std::string arch; // "sm_90"
    std::vector<char> cubin;
    std::string ptx;                  // NVRTC's PTX of the module (kernelfacts.h splits it per kernel)
    std::string ptxasInfo;            // ptxas -v's "ptxas info" lines, taken out of `log` (kernelfacts.h reads them)
    double ms = 0;                    // wall time of create + compile + cubin extraction
    std::vector<std::string> options; // as passed to nvrtcCompileProgram
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
// Options: --gpu-architecture=<arch> --std=c++17 -default-device --ptxas-options=-v (its resource
// lines go to ptxasInfo, not into the log the model reads), the CUDA include directories
// (so cuda_fp16.h, cuda_bf16.h and mma.h resolve), then `extraOptions`.
// The include directories are the build's KWB_CUDA_INCLUDE_DIR; the environment variable
// KWB_CUDA_INCLUDE_DIR replaces them at run time. Both are lists separated by ':' or ';'; each
// directory's cccl/ subdirectory (CUDA 13) is added when it exists.
CompileResult compileCuda(const std::string& source, const std::string& arch,
                          const std::vector<std::string>& extraOptions = {});

// The worker's own kernels (the clock probe, the output comparison): compiled once per process and
// architecture, the result kept. Thread-safe: a second caller of the same source and arch waits for
// the first one's compile, so an evaluation can compile them ahead on another thread while the
// CUDA context is being made (evaluate/loadstages.cpp) and use them later without compiling again.
const CompileResult& compileOwnKernel(const char* source, const std::string& arch);

std::string nvrtcVersionString();               // "13.0"
std::vector<std::string> nvrtcSupportedArchs(); // {"sm_75", ..., "sm_120"}

// The include directories compileCuda passes (existing ones only).
std::vector<std::string> nvrtcIncludeDirs();

// NVRTC's program log as it may go back to the model: compiler messages, never the text of a
// file other than the answer's own source. The rule (compileCuda applies it to every log):
// - a diagnostic located in `programName` (the answer, "candidate.cu"): kept whole, with the
//   source line NVRTC quotes and its caret;
// - one located in a file under `includeDirs` (symlinks resolved): its message lines and
//   "detected during …" context kept, the quoted source line and its caret dropped;
// - one located anywhere else: reduced to "<file outside the answer and the CUDA toolkit>(N):
//   error: [message withheld]" (its message can quote the file: identifier "PATH" is undefined),
//   the rest of it dropped; after 8 such, one line counts the others;
// - lines that start at the left margin and are no diagnostic ("2 errors detected in the
//   compilation of …", "Compilation terminated.") are kept; indented lines outside a diagnostic
//   are dropped (NVRTC indents every quoted source line);
// - each line is cut to kMaxCompileLogLine bytes, the whole log to kMaxCompileLog.
inline constexpr std::size_t kMaxCompileLog = 64 * 1024;
inline constexpr std::size_t kMaxCompileLogLine = 400;
std::string compilerMessagesOnly(const std::string& log, const std::string& programName,
                                 const std::vector<std::string>& includeDirs);

} // namespace kwb
