#pragma once
// Which front end an answer goes to (docs/candidate-format.md): the native format (a cuda block of
// NVRTC kernels and a TorchScript forward) or KernelBench's (a Python `class ModelNew(nn.Module)`
// that builds CUDA with torch.utils.cpp_extension.load_inline). Pure text: no torch, no Python.
#include "candidate_parser.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace kwb {

enum class AnswerFormat { Native, KernelBench };

std::string answerFormatName(AnswerFormat f);  // "native" | "kernelbench"

/// The request's `answer_format`: "native", "kernelbench", or absent/null (nullopt: detect from
/// the answer). Throws std::invalid_argument (a bad_request) for anything else.
std::optional<AnswerFormat> requestedAnswerFormat(const nlohmann::json& request);

/// KernelBench's format when some line of the answer starts a `class ModelNew` (the native format
/// has no classes), else native.
AnswerFormat detectAnswerFormat(const std::string& answer);

/// The Python module of a KernelBench-format answer: the first fenced block tagged python, py or
/// untagged that defines `class ModelNew`, or, in an answer without any fence (a KernelBench
/// generation file), the whole text.
struct KernelBenchSource {
    bool ok = false;
    std::string source;
    int line = 0;               // answer line of the module's first line
    std::optional<FormatError> error;  // too_large | unclosed_fence | no_model_new
};
KernelBenchSource extractKernelBenchSource(const std::string& answer);

}  // namespace kwb
