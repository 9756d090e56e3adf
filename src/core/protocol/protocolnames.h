#pragma once
// The worker protocol's names, written once for both sides (docs/protocol.md): its version, the
// request types, the fields a request may carry and the defaults both sides assume where a field
// is absent. Plain C++, no Qt, as protocollimits.h beside it: the worker (src/worker) reads
// requests by these names and core spells its version and defaults with them. The golden files
// (tests/protocol) pin the bytes on both sides; a name changed here changes them.
//
// Not here: the fields only the benchmark's A/B runs send (timing_intent, timing_warmup_shared,
// trace_exclusive): they are no part of the product's protocol.

namespace kwb::ProtocolNames {

/// The protocol's version: `hello`'s "protocol", and what the client expects there.
inline constexpr int kVersion = 1;

/// The protocol profile a request without "profile" is evaluated with (docs/protocol.md
/// §Protocol profiles): the study's FP32.
inline constexpr const char* kDefaultProfile = "kernelbench-fp32";
/// `profile`'s CUPTI trials where a request has no "trials".
inline constexpr int kDefaultProfileTrials = 5;

/// Request types ("type").
namespace Request {
inline constexpr const char* kHello = "hello";
inline constexpr const char* kTasks = "tasks";
inline constexpr const char* kDevice = "device";
inline constexpr const char* kAnalyze = "analyze";
inline constexpr const char* kProfile = "profile";
inline constexpr const char* kEvaluate = "evaluate";
inline constexpr const char* kWarm = "warm";
inline constexpr const char* kCompile = "compile";
inline constexpr const char* kRunReference = "run_reference";
inline constexpr const char* kShutdown = "shutdown";
} // namespace Request

/// Fields of requests.
namespace Field {
inline constexpr const char* kId = "id";
inline constexpr const char* kType = "type";
inline constexpr const char* kTask = "task";
inline constexpr const char* kDevice = "device";
inline constexpr const char* kScale = "scale";
inline constexpr const char* kSeed = "seed";
/// The candidate: a whole answer, or its blocks given apart.
inline constexpr const char* kAnswer = "answer";
inline constexpr const char* kCuda = "cuda";
inline constexpr const char* kPython = "python";
// evaluate
inline constexpr const char* kProfile = "profile";
inline constexpr const char* kCorrectnessTrials = "correctness_trials";
inline constexpr const char* kTimingTrials = "timing_trials";
inline constexpr const char* kWarmup = "warmup";
inline constexpr const char* kTimingMethod = "timing_method";
inline constexpr const char* kTimingTarget = "timing_target";
inline constexpr const char* kTimingMaxMs = "timing_max_ms";
inline constexpr const char* kTime = "time";
inline constexpr const char* kReuseReference = "reuse_reference";
inline constexpr const char* kRetimeAfterTrace = "retime_after_trace";
inline constexpr const char* kProfileTraffic = "profile_traffic";
// profile (and evaluate's trial bounds: protocollimits.h)
inline constexpr const char* kTrials = "trials";
// tasks
inline constexpr const char* kTasksDir = "tasks_dir";
inline constexpr const char* kValidate = "validate";
// the answer's front end (docs/candidate-format.md)
inline constexpr const char* kAnswerFormat = "answer_format";
inline constexpr const char* kCodeBlock = "code_block";
// compile, and evaluate's cubin compiled ahead
inline constexpr const char* kArch = "arch";
inline constexpr const char* kReturnCubin = "return_cubin";
inline constexpr const char* kCubinSourceHash = "cubin_source_hash";
inline constexpr const char* kCubinB64 = "cubin_b64";
inline constexpr const char* kCubinArch = "cubin_arch";
inline constexpr const char* kCompileLog = "compile_log";
// profile
inline constexpr const char* kTf32 = "tf32";
// device
inline constexpr const char* kCeilings = "ceilings";
} // namespace Field

} // namespace kwb::ProtocolNames
