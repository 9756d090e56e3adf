#pragma once
// The worker protocol's names, written once for both sides (docs/protocol.md): its version, the
// request types, the fields a request may carry, the keys of its responses and the defaults both
// sides assume where a field is absent. Plain C++, no Qt, as protocollimits.h beside it: the
// worker (src/worker) reads requests and writes responses by these names, core builds requests
// and decodes responses (src/core/protocol) by them. The golden files (tests/protocol) pin the
// bytes on both sides; a name changed here changes them.
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

/// Fields of requests. A response key spelt as a request field is that field's name (Key below
/// has no second spelling of it): id, type, task, scale, device, profile, trials, tf32, arch, …
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
/// the compile request's kernel_facts and kernel_facts_note, handed on with its cubin
inline constexpr const char* kCubinKernelFacts = "cubin_kernel_facts";
// profile
inline constexpr const char* kTf32 = "tf32";
// device
inline constexpr const char* kCeilings = "ceilings";
} // namespace Field

/// Keys of responses, by the object they first appear in (docs/protocol.md §Requests); each
/// spelling once, so a key shared by several objects ("name", "message", "kernels") is listed
/// where it first appears. Keys of open maps (stage_ms's stages, warm_ms's parts) are not names.
namespace Key {
// every response
inline constexpr const char* kOk = "ok";
inline constexpr const char* kError = "error";
inline constexpr const char* kCode = "code";
inline constexpr const char* kMessage = "message";
inline constexpr const char* kWorkerHealthy = "worker_healthy";
/// A response whose strings were cut to fit kMaxLineBytes.
inline constexpr const char* kTruncated = "truncated";
// hello
inline constexpr const char* kProtocol = "protocol";
inline constexpr const char* kWorker = "worker";
inline constexpr const char* kTorch = "torch";
inline constexpr const char* kCudaRuntime = "cuda_runtime";
inline constexpr const char* kNvrtc = "nvrtc";
inline constexpr const char* kCudaDeviceCount = "cuda_device_count";
inline constexpr const char* kCudaError = "cuda_error";
inline constexpr const char* kDriver = "driver";
inline constexpr const char* kProfiles = "profiles";
inline constexpr const char* kDefaultProfile = "default_profile";
inline constexpr const char* kGpuQuietLock = "gpu_quiet_lock";
inline constexpr const char* kGpuQuietLockError = "gpu_quiet_lock_error";
inline constexpr const char* kGpuQuietLockWritersFirst = "gpu_quiet_lock_writers_first";
inline constexpr const char* kGpuQuietLockTurns = "gpu_quiet_lock_turns";
// a protocol profile's settings (hello's profiles, evaluate's profile; with Field's
// correctness_trials, timing_trials, warmup, tf32)
inline constexpr const char* kName = "name";
inline constexpr const char* kAtol = "atol";
inline constexpr const char* kRtol = "rtol";
inline constexpr const char* kL2Flush = "l2_flush";
inline constexpr const char* kGraphOptimize = "graph_optimize";
inline constexpr const char* kInputGenerator = "input_generator";
inline constexpr const char* kTimingStat = "timing_stat";
// warm
inline constexpr const char* kAlreadyWarm = "already_warm";
inline constexpr const char* kWhy = "why";
inline constexpr const char* kWarmMs = "warm_ms";
// tasks: the list, its load errors and each task
inline constexpr const char* kTasks = "tasks";
inline constexpr const char* kErrors = "errors";
inline constexpr const char* kPath = "path";
inline constexpr const char* kField = "field";
inline constexpr const char* kLevel = "level";
inline constexpr const char* kNumber = "number";
inline constexpr const char* kTitle = "title";
inline constexpr const char* kDescription = "description";
inline constexpr const char* kSource = "source";
inline constexpr const char* kForward = "forward";
inline constexpr const char* kDims = "dims";
inline constexpr const char* kFull = "full";
inline constexpr const char* kSmoke = "smoke";
inline constexpr const char* kInputs = "inputs";
inline constexpr const char* kParams = "params";
inline constexpr const char* kTolerance = "tolerance";
inline constexpr const char* kKernelBenchOnly = "kernelbench_only";
/// KernelBench's problem file, where the task list carries it (a KernelBench-only task's reference).
inline constexpr const char* kReferencePython = "reference_python";
/// KernelBench's constructor arguments; an entry {"dim": name} is that dimension.
inline constexpr const char* kInitInputs = "init_inputs";
inline constexpr const char* kDim = "dim";
inline constexpr const char* kParameterCount = "parameter_count";
inline constexpr const char* kBufferCount = "buffer_count";
inline constexpr const char* kShapeSets = "shape_sets"; // also the correctness record's, per set checked
inline constexpr const char* kHeldOut = "held_out";
// a task's tensor (inputs, params)
inline constexpr const char* kKind = "kind";
inline constexpr const char* kDtype = "dtype";
inline constexpr const char* kGenerator = "generator";
inline constexpr const char* kInit = "init";
inline constexpr const char* kShape = "shape";
inline constexpr const char* kValue = "value";
inline constexpr const char* kBuffer = "buffer";
/// A parameter's fan_in as its factors, and its value at each scale.
inline constexpr const char* kFanIn = "fan_in";
inline constexpr const char* kFanInFull = "fan_in_full";
inline constexpr const char* kFanInSmoke = "fan_in_smoke";
// device (and its ceilings, Field::kCeilings)
inline constexpr const char* kAvailable = "available";
inline constexpr const char* kReason = "reason";
inline constexpr const char* kCc = "cc";
inline constexpr const char* kSmCount = "sm_count";
inline constexpr const char* kL2Bytes = "l2_bytes";
inline constexpr const char* kMemoryBytes = "memory_bytes";
inline constexpr const char* kSmClockKhz = "sm_clock_khz";
inline constexpr const char* kMemoryClockKhz = "memory_clock_khz";
inline constexpr const char* kDriverVersion = "driver_version";
inline constexpr const char* kRuntimeVersion = "runtime_version";
inline constexpr const char* kHbmTheoreticalGbps = "hbm_theoretical_gbps";
/// The name workers before the fix sent alone (every study database has only it); still sent.
inline constexpr const char* kHbmTheoreticalGbs = "hbm_theoretical_gbs";
inline constexpr const char* kHbmCopy = "hbm_copy";
inline constexpr const char* kFp32Fma = "fp32_fma";
inline constexpr const char* kTensorTf32 = "tensor_tf32";
inline constexpr const char* kTensorBf16 = "tensor_bf16";
/// Each ceiling's flat summary: its best value.
inline constexpr const char* kHbmCopyGbps = "hbm_copy_gbps";
inline constexpr const char* kFp32FmaGflops = "fp32_fma_gflops";
inline constexpr const char* kTensorTf32Gflops = "tensor_tf32_gflops";
inline constexpr const char* kTensorBf16Gflops = "tensor_bf16_gflops";
/// A ceiling's best value in its object form (`ceilings.<name>`), with its method.
inline constexpr const char* kGbsBest = "gbs_best";
inline constexpr const char* kGflopsBest = "gflops_best";
inline constexpr const char* kMethod = "method";
// analyze
inline constexpr const char* kOps = "ops";
inline constexpr const char* kIndex = "index";
inline constexpr const char* kOp = "op";
inline constexpr const char* kCategory = "category";
inline constexpr const char* kOutput = "output";
inline constexpr const char* kOutputCount = "output_count";
inline constexpr const char* kFlops = "flops";
inline constexpr const char* kMinFlops = "min_flops";     // an op's FLOPs no implementation avoids (roofline.h)
inline constexpr const char* kBoundFlops = "bound_flops"; // their sum with the matmuls', the floor's FLOPs
inline constexpr const char* kBytes = "bytes";
inline constexpr const char* kLine = "line";
inline constexpr const char* kOutputShape = "output_shape";
inline constexpr const char* kBytesUnfused = "bytes_unfused";
inline constexpr const char* kBytesFused = "bytes_fused";
inline constexpr const char* kInputBytes = "input_bytes";
inline constexpr const char* kParamBytes = "param_bytes";
inline constexpr const char* kOutputBytes = "output_bytes";
inline constexpr const char* kIntensityUnfused = "intensity_unfused";
inline constexpr const char* kIntensityFused = "intensity_fused";
inline constexpr const char* kOpCount = "op_count";
inline constexpr const char* kUncounted = "uncounted";
inline constexpr const char* kShapeKnown = "shape_known";
// profile (its ops and kernels)
inline constexpr const char* kTotalNs = "total_ns";
inline constexpr const char* kTimeNs = "time_ns";
inline constexpr const char* kShare = "share";
inline constexpr const char* kKernels = "kernels";
inline constexpr const char* kOpIndex = "op_index";
inline constexpr const char* kCalls = "calls";
// compile (and evaluate's compile object)
inline constexpr const char* kOkCompile = "ok_compile";
inline constexpr const char* kLog = "log";
inline constexpr const char* kMs = "ms";
inline constexpr const char* kCached = "cached";
inline constexpr const char* kSourceHash = "source_hash";
inline constexpr const char* kCubinBytes = "cubin_bytes";
inline constexpr const char* kRefused = "refused";
inline constexpr const char* kFormatError = "format_error";
inline constexpr const char* kCandidate = "candidate";
// the candidate echoed (with Field's cuda, python, answer_format, code_block)
inline constexpr const char* kCudaLine = "cuda_line";
inline constexpr const char* kPythonLine = "python_line";
// run_reference
inline constexpr const char* kMin = "min";
inline constexpr const char* kMax = "max";
inline constexpr const char* kMean = "mean";
inline constexpr const char* kFinite = "finite";
// evaluate
inline constexpr const char* kStatus = "status";
inline constexpr const char* kStage = "stage";
inline constexpr const char* kCompile = "compile";
inline constexpr const char* kCorrectness = "correctness";
inline constexpr const char* kTiming = "timing";
inline constexpr const char* kSpeedup = "speedup";
inline constexpr const char* kCustom = "custom";
inline constexpr const char* kCustomLaunches = "custom_launches";
inline constexpr const char* kTorchOnly = "torch_only";
inline constexpr const char* kDegenerate = "degenerate";
inline constexpr const char* kNotes = "notes";
inline constexpr const char* kZeroFraction = "zero_fraction";
inline constexpr const char* kStageMs = "stage_ms";
inline constexpr const char* kStageDetailMs = "stage_detail_ms";
inline constexpr const char* kGpuMemory = "gpu_memory";
inline constexpr const char* kFreeBytes = "free_bytes";
inline constexpr const char* kTotalBytes = "total_bytes";
inline constexpr const char* kReleasedBytes = "released_bytes";
inline constexpr const char* kHeldBytes = "held_bytes";
inline constexpr const char* kReleaseError = "release_error";
inline constexpr const char* kOutOfMemory = "out_of_memory";
inline constexpr const char* kRequestedBytes = "requested_bytes";
inline constexpr const char* kCount = "count";
inline constexpr const char* kPciBusId = "pci_bus_id";
inline constexpr const char* kReferenceOutputsOn = "reference_outputs_on";
inline constexpr const char* kFlags = "flags";
// evaluate's correctness
inline constexpr const char* kPassed = "passed";
inline constexpr const char* kMaxAbsDiff = "max_abs_diff";
inline constexpr const char* kMaxRelDiff = "max_rel_diff";
inline constexpr const char* kDeterministic = "deterministic";
inline constexpr const char* kFailure = "failure";
inline constexpr const char* kTrial = "trial";
inline constexpr const char* kDetail = "detail";
inline constexpr const char* kRangeTrial = "range_trial";
// evaluate's timing (candidate and reference stats, the adaptive method's record, the interval)
inline constexpr const char* kReference = "reference";
inline constexpr const char* kMeanMs = "mean_ms";
inline constexpr const char* kMedianMs = "median_ms";
inline constexpr const char* kStdMs = "std_ms";
inline constexpr const char* kMinMs = "min_ms";
inline constexpr const char* kMaxMs = "max_ms";
inline constexpr const char* kStopReason = "stop_reason";
inline constexpr const char* kSamples = "samples";
inline constexpr const char* kThrottled = "throttled";
inline constexpr const char* kReferenceReused = "reference_reused";
inline constexpr const char* kSpeedupInterval = "speedup_interval";
inline constexpr const char* kLow = "low";
inline constexpr const char* kHigh = "high";
inline constexpr const char* kRelativeHalfWidth = "relative_half_width";
// evaluate's traffic (asked for by Field::kProfileTraffic)
inline constexpr const char* kTraffic = "traffic";
inline constexpr const char* kProfiled = "profiled";
inline constexpr const char* kDramBytes = "dram_bytes";
inline constexpr const char* kDramReadBytes = "dram_read_bytes";
inline constexpr const char* kDramWriteBytes = "dram_write_bytes";
inline constexpr const char* kPasses = "passes";
inline constexpr const char* kL2 = "l2";
/// `traffic.per_kernel`: each kernel's bytes, from CUPTI's auto ranges (one per launch).
inline constexpr const char* kPerKernel = "per_kernel";
inline constexpr const char* kReplay = "replay";
/// On the kernel that launched last: the call's writes that reached HBM after its last kernel.
inline constexpr const char* kWrittenBackAfterBytes = "written_back_after_bytes";
} // namespace Key

/// `compile.kernel_facts` of an evaluate response (docs/protocol.md §evaluate, "kernel_facts"):
/// one object per kernel of the compiled candidate, and the note on what could not be read. Its
/// "name" is Key::kName, its "arch" Field::kArch, its "param_bytes" Key::kParamBytes (the word
/// analyze uses for a task's parameters; here the bytes of the kernel's parameter space).
namespace KernelFact {
inline constexpr const char* kKernelFacts = "kernel_facts";
inline constexpr const char* kKernelFactsNote = "kernel_facts_note";
inline constexpr const char* kDemangled = "demangled";
inline constexpr const char* kModule = "module";
inline constexpr const char* kRegisters = "registers";
inline constexpr const char* kLocalBytes = "local_bytes";
inline constexpr const char* kSpillStoreBytes = "spill_store_bytes";
inline constexpr const char* kSpillLoadBytes = "spill_load_bytes";
inline constexpr const char* kStaticSharedBytes = "static_shared_bytes";
inline constexpr const char* kConstantBytes = "constant_bytes";
inline constexpr const char* kModuleConstantBytes = "module_constant_bytes";
inline constexpr const char* kBarriers = "barriers";
inline constexpr const char* kMaxThreadsPerBlock = "max_threads_per_block";
inline constexpr const char* kMaxThreadsLimit = "max_threads_limit";
inline constexpr const char* kPtx = "ptx";
inline constexpr const char* kPtxNote = "ptx_note";
inline constexpr const char* kSass = "sass";
inline constexpr const char* kSassNote = "sass_note";
} // namespace KernelFact

/// `launches` of an evaluate response (docs/protocol.md §evaluate, "launches"): each kernel the
/// trace saw, per launch configuration, as it ran. Its "name", "calls", "time_ns" and "custom" are
/// Key's; "registers", "static_shared_bytes" and "local_bytes" KernelFact's (the same facts, here
/// as the driver launched them); "error" Key::kError.
namespace KernelLaunch {
inline constexpr const char* kLaunches = "launches";
inline constexpr const char* kLaunchesOmitted = "launches_omitted";
inline constexpr const char* kGrid = "grid";
inline constexpr const char* kBlock = "block";
inline constexpr const char* kDynamicSharedBytes = "dynamic_shared_bytes";
inline constexpr const char* kSharedCarveoutBytes = "shared_carveout_bytes";
inline constexpr const char* kOccupancy = "occupancy";
inline constexpr const char* kActiveBlocksPerSm = "active_blocks_per_sm";
inline constexpr const char* kActiveWarpsPerSm = "active_warps_per_sm";
inline constexpr const char* kMaxWarpsPerSm = "max_warps_per_sm";
inline constexpr const char* kFraction = "fraction";
inline constexpr const char* kLimitedBy = "limited_by";
inline constexpr const char* kBlocksBy = "blocks_by";
// limited_by's words, and blocks_by's keys
inline constexpr const char* kByRegisters = "registers";
inline constexpr const char* kBySharedMemory = "shared_memory";
inline constexpr const char* kByWarps = "warps";
inline constexpr const char* kByBlocks = "blocks";
inline constexpr const char* kByBarriers = "barriers";
} // namespace KernelLaunch

} // namespace kwb::ProtocolNames
