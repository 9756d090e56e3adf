#pragma once
// One spelling of each default that the CLI, the app and core share. Change a default here and
// every command, page and stored-configuration reader follows.

#include "core/protocol/protocolnames.h"

#include <QString>

namespace kwb::defaults {

/// An evaluation's wall-clock limit, from dispatch (worker start and hello included) to its
/// response: as in the study.
inline constexpr int kEvaluationTimeoutS = 240;
inline constexpr int kEvaluationTimeoutMs = kEvaluationTimeoutS * 1000;

/// The model server a run talks to when none is named: a local OpenAI-compatible server.
inline constexpr const char kEndpoint[] = "http://127.0.0.1:8080/v1";
inline QString endpoint()
{
    return QString::fromLatin1(kEndpoint);
}

/// The protocol profile used when none is named (docs/protocol.md §Protocol profiles): the
/// study's FP32 (TF32 off for cuBLAS and cuDNN; docs/decisions.md says why).
inline constexpr const char* kProfile = ProtocolNames::kDefaultProfile; // the worker's default too
inline QString profile()
{
    return QString::fromLatin1(kProfile);
}

/// The profiles this client offers before a worker has announced its own in `hello`.
inline constexpr const char* kKnownProfiles[] = {"kernelbench-fp32", "kernelbench", "kernelbench-v0.1"};

/// The model's context length a run budgets its prompts against unless told otherwise
/// (`--context-tokens`): Qwen2.5-Coder-7B-Instruct's, the study's model.
inline constexpr int kContextTokens = 32768;
/// The most tokens a model answer may take (`max_tokens`, `--max-tokens`): every prompt plus this
/// must fit the context.
inline constexpr int kMaxOutputTokens = 4096;

/// The problem scale used when none is named.
inline constexpr const char kScale[] = "full";
inline QString scale()
{
    return QString::fromLatin1(kScale);
}

/// The answer formats a run can ask for (docs/protocol.md, `answer_format`): the workbench's own
/// (a cuda and a python block) and KernelBench's (`class ModelNew` with `load_inline`). A run's
/// prompts and every compile and evaluate request name it; native is the default.
inline constexpr const char kAnswerFormatNative[] = "native";
inline constexpr const char kAnswerFormatKernelBench[] = "kernelbench";
inline QString answerFormat()
{
    return QString::fromLatin1(kAnswerFormatNative);
}
inline bool isAnswerFormat(const QString& name)
{
    return name == QLatin1String(kAnswerFormatNative) || name == QLatin1String(kAnswerFormatKernelBench);
}

/// Which fenced block defining `class ModelNew` is a KernelBench-format answer's module when there
/// are several (docs/protocol.md, `code_block`; docs/candidate-format.md): KernelBench's own
/// scripts take the first (`extract_first_code`), harnesses built on `extract_last_code` the last.
/// An import names the convention its source used (`kwb import kernelbench --code-block`); first is
/// the default, and what a run of this workbench uses.
inline constexpr const char kCodeBlockFirst[] = "first";
inline constexpr const char kCodeBlockLast[] = "last";
inline QString codeBlock()
{
    return QString::fromLatin1(kCodeBlockFirst);
}

} // namespace kwb::defaults
