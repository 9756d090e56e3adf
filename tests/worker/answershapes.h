#pragma once
// Answers of the largest size the parser takes (kMaxAnswerBytes) in shapes that made it
// super-linear or could make it recurse deeply. Shared by tst_candidate_parser (it must return on
// each) and bench/parser_bench.cpp (how long each takes).
#include "worker/answers/candidateparser.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kwb::test {

// `unit` repeated to `bytes` bytes (the last copy cut).
inline std::string repeatTo(const std::string& unit, std::size_t bytes)
{
    std::string s;
    s.reserve(bytes + unit.size());
    while (s.size() < bytes)
        s += unit;
    s.resize(bytes);
    return s;
}

inline const char* kShapeForward = "def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n";

// A cuda block holding `cuda` and a python block holding `python`, the filler (`unit` repeated)
// taking what the limit leaves: in the cuda block when inCuda, else in the python block after
// `pythonHead`.
inline std::string shapeAnswer(const std::string& cudaHead, const std::string& pythonHead, const std::string& unit,
                               bool inCuda, std::size_t bytes)
{
    const std::string a = "```cuda\n" + cudaHead, b = "\n```\n```python\n" + pythonHead, c = "\n    return x\n```\n";
    const std::size_t fill = bytes - a.size() - b.size() - c.size();
    return inCuda ? a + repeatTo(unit, fill) + b + c : a + b + repeatTo(unit, fill) + c;
}

inline std::string randomBytes(std::size_t n, uint64_t seed)
{
    std::string s(n, '\0');
    for (char& ch : s) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        ch = static_cast<char>(seed >> 56);
    }
    return s;
}

// A small correct kernel and its launch, numbered so every copy is a distinct kernel.
inline std::string realisticAnswer(std::size_t bytes)
{
    std::string cuda, python = kShapeForward;
    for (int i = 0; cuda.size() + python.size() + 400 < bytes; ++i) {
        const std::string k = "bias_relu_" + std::to_string(i);
        cuda += "// kernel " + std::to_string(i) + "\nextern \"C\" __global__ void " + k +
                "(float* __restrict__ y, const float* b, long long n, int c, int hw) {\n"
                "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                "    if (i < n) { float v = y[i] + b[(i / hw) % c]; y[i] = v > 0.f ? v : 0.f; }\n}\n";
        python += "    kb.launch(\"" + k + "\", [(n + 255) // 256], [256], x, p[\"bias\"], n, 3, 4)  # '" + k + "'\n";
    }
    return "Here is the kernel.\n\n```cuda\n" + cuda + "```\n\nAnd the host code:\n\n```python\n" + python +
           "    return x\n```\n";
}

// (name, answer) for every shape; each answer is at most `bytes` long (1 KiB at least).
inline std::vector<std::pair<std::string, std::string>> answerShapes(std::size_t bytes = kMaxAnswerBytes)
{
    const std::string fwd = kShapeForward;
    const auto shape = [bytes](const std::string& cudaHead, const std::string& pythonHead, const std::string& unit,
                               bool inCuda) { return shapeAnswer(cudaHead, pythonHead, unit, inCuda, bytes); };
    return {
        {"__global__ repeated", shape("", fwd, "__global__ ", true)},
        {"__global__ ( repeated", shape("", fwd, "__global__ (", true)},
        {"extern \"C\" __global__ void k( repeated", shape("", fwd, "extern \"C\" __global__ void k(", true)},
        {"__global__ void k() repeated (prototypes, no body)", shape("", fwd, "__global__ void k() ", true)},
        {"__global__ __launch_bounds__( repeated", shape("", fwd, "__global__ __launch_bounds__(", true)},
        {"template __global__ repeated", shape("", fwd, "template<int N> __global__ ", true)},
        {"( in a kernel signature", shape("extern \"C\" __global__ void k", fwd, "(", true)},
        {"[ in a kernel signature", shape("extern \"C\" __global__ void k(float* a", fwd, "[", true)},
        {"{ in the cuda block", shape("extern \"C\" ", fwd, "{", true)},
        {"nested ( ) in a kernel signature",
         shape("extern \"C\" __global__ void k(float* a", fwd, "(", true).replace(bytes / 2, 1, ")")},
        {"kb.launch( packed", shape("", fwd + "    ", "kb.launch(", false)},
        {"kb.launch(\"k\") lines", shape("extern \"C\" __global__ void k() {}", fwd, "    kb.launch(\"k\")\n", false)},
        {"( in kb.launch arguments", shape("", fwd + "    kb.launch(\"k\", ", "(", false)},
        {"[ in kb.launch arguments", shape("", fwd + "    kb.launch(\"k\", ", "[", false)},
        {"( in def forward", shape("", "def forward(", "(", false)},
        {"[ in def forward", shape("", "def forward(x: ", "[", false)},
        {"quotes in python", shape("", fwd, "r'''\"", false)},
        {"def forward lines", shape("", "", "def forward (\n", false)},
        {"realistic answer repeated", realisticAnswer(bytes)},
        {"random bytes", randomBytes(bytes, 1)},
        {"random bytes in both blocks", "```cuda\n" + randomBytes(bytes / 2 - 40, 2) + "\n```\n```python\n" + fwd +
                                            randomBytes(bytes / 2 - 100, 3) + "\n```\n"},
        {"``` fences repeated", repeatTo("```cuda\n__global__ void k(){}\n```\n", bytes)},
        {"````markdown fences nested", repeatTo("````markdown\n", bytes)},
        {"one line of backticks", repeatTo("`", bytes)},
    };
}

} // namespace kwb::test
