#pragma once
// Parser for a model's whole Markdown answer in the candidate format (docs/candidate-format.md).
// Pure text processing: no CUDA, no torch, so it runs and is tested on any machine.

#include "core/protocol/protocollimits.h" // plain C++: the answer limit both sides check

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kwb {

// One parameter of an extern "C" __global__ kernel as written in the cuda block.
struct KernelParam
{
    std::string type; // as written, whitespace normalised, qualifiers kept ("const float*")
    std::string name; // empty for an unnamed parameter
    enum Kind { Pointer, Int, Float, Other } kind = Other;
    int bytes = 0; // size of the argument slot; 0 where the parser cannot know (structs, typedefs)
};

struct KernelDecl
{
    std::string name;
    bool externC = false;
    int line = 0; // 1-based line within the cuda block
    std::vector<KernelParam> params;
};

// A kb.launch / kb.launch_smem call found in the python block.
struct LaunchSite
{
    std::string kernel; // the literal name; empty when the first argument is not a string literal
    bool smem = false;  // kb.launch_smem
    int line = 0;       // 1-based line within the python block
};

struct SigParam
{
    std::string name, type; // e.g. {"x","Tensor"}, {"s","float"}, {"p","Dict[str, Tensor]"}
};

struct FormatError
{
    // too_large | no_code_block | no_python_block | duplicate_block | wrong_language_tag |
    // untagged_block | unclosed_fence | unknown_kernel | not_extern_c | missing_forward |
    // signature_mismatch
    std::string code;
    std::string message; // written for the model: it goes back into the next prompt
    int line = 0;        // 1-based line in the answer; 0 when no single line applies
};

struct ParsedCandidate
{
    bool hasCuda = false;
    std::string cuda;
    int cudaLine = 0; // answer line of the cuda block's first content line (fence line + 1)
    std::string python;
    int pythonLine = 0;              // answer line of the python block's first content line
    std::vector<KernelDecl> kernels; // every non-template __global__ kernel, extern "C" or not
    std::vector<LaunchSite> launches;
    std::vector<SigParam> forwardSignature;
};

struct ParseResult
{
    bool ok = false;
    ParsedCandidate candidate; // filled as far as parsing got, also on error
    std::optional<FormatError> error;
};

// Answers larger than this are refused (code too_large): core/protocol/protocollimits.h's, which
// the model client checks too.
constexpr std::size_t kMaxAnswerBytes = std::size_t(ProtocolLimits::kMaxAnswerBytes);

// Parameters of the top-level "def forward(...)" in TorchScript source. Handles multi-line
// definitions, comments, defaults ("s: float = 1.0": the default is dropped) and normalises type
// whitespace ("Dict[str,Tensor]" -> "Dict[str, Tensor]"). On failure returns {} and sets *error
// (when given); a forward without parameters returns {} and leaves *error empty.
std::vector<SigParam> parseForwardSignature(const std::string& python, std::string* error);

// "def forward(x: Tensor, p: Dict[str, Tensor])"
std::string formatSignature(const std::vector<SigParam>& params);

// Parses the whole answer and reports the first problem. `expected` is the reference's forward
// signature; empty means the signature is not checked (forward must still exist).
ParseResult parseAnswer(const std::string& markdown, const std::vector<SigParam>& expected);

// Non-template __global__ kernels of a CUDA source (comments and preprocessor lines skipped);
// __device__ helpers and templates are not kernels the host can launch by name.
std::vector<KernelDecl> findKernels(const std::string& cuda);

} // namespace kwb
