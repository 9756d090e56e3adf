#pragma once
// Which front end an answer goes to (docs/candidate-format.md): the native format (a cuda block of
// NVRTC kernels and a TorchScript forward) or KernelBench's (a Python `class ModelNew(nn.Module)`
// that builds CUDA with torch.utils.cpp_extension.load_inline). Pure text: no torch, no Python.
#include "worker/answers/candidateparser.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace kwb {

enum class AnswerFormat { Native, KernelBench };

std::string answerFormatName(AnswerFormat f); // "native" | "kernelbench"

/// The request's `answer_format`: "native", "kernelbench", or absent/null (nullopt: detect from
/// the answer). Throws std::invalid_argument (a bad_request) for anything else.
std::optional<AnswerFormat> requestedAnswerFormat(const nlohmann::json& request);

/// KernelBench's format when some line of the answer starts a `class ModelNew` (the native format
/// has no classes), else native.
AnswerFormat detectAnswerFormat(const std::string& answer);

/// Which of several fenced blocks that define `class ModelNew` is a KernelBench-format answer's
/// module (docs/candidate-format.md, "Which block is the module"): the first, as KernelBench's own
/// scripts extract it (`extract_first_code`), or the last, as harnesses built on
/// `extract_last_code` do (Kernel-Coder's). The request's `code_block`.
enum class CodeBlock { First, Last };

std::string codeBlockName(CodeBlock c); // "first" | "last"

/// The request's `code_block`: "first", "last", or absent/null (first). Throws
/// std::invalid_argument (a bad_request) for anything else.
CodeBlock requestedCodeBlock(const nlohmann::json& request);

/// The Python module of a KernelBench-format answer: among the closed fenced blocks tagged
/// python, py or untagged that define `class ModelNew`, the first or the last (`which`), or, in an
/// answer without any fence (a KernelBench generation file), the whole text. A fence never closed
/// ends the search (what follows it is inside it); it is an error only when no block before it
/// defines ModelNew.
struct KernelBenchSource
{
    bool ok = false;
    std::string source;
    int line = 0;           // answer line of the module's first line
    int modelNewBlocks = 0; // closed blocks that define ModelNew (0: the whole text, or none)
    // too_large | reasoning_unfinished | unclosed_fence | code_only_in_reasoning | no_model_new
    std::optional<FormatError> error;
};
KernelBenchSource extractKernelBenchSource(const std::string& answer, CodeBlock which = CodeBlock::First);

} // namespace kwb
