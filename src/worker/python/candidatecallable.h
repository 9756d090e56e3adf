#pragma once
// The candidate as the evaluator calls it, whatever its front end: the native format's
// TorchScript forward, or a KernelBench-format ModelNew in the embedded interpreter. Everything
// after this seam (fresh inputs, range trial, aliasing and write checks, roofline, timing) is
// shared. Includes ATen's IValue: only torch-side files include this.
#include <ATen/core/ivalue.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Function;
}

namespace kwb {

class CandidateCallable
{
public:
    virtual ~CandidateCallable() = default;
    /// Takes one call's arguments (the task's inputs, then the parameter dict) outside any timer,
    /// and returns the call itself, which runs forward (timed, for timing calls).
    virtual std::function<c10::IValue()> bind(std::vector<c10::IValue> args) = 0;
    /// KernelBench format: ModelNew keeps the weights it made itself, as KernelBench's evaluator
    /// leaves them (its parameters are not the reference's, so the evaluator's cannot be put in);
    /// bind then ignores the parameter dict. The native forward always takes the dict.
    virtual void keepOwnWeights() {}
    /// Each call starts from torch's generators seeded with `seed` (a KernelBench-only task's
    /// reference and ModelNew, whose forward may draw: Dropout in training mode, LSTM's h0), so
    /// both see the same numbers. The native forward draws nothing of its own and ignores it.
    virtual void seedEachCall(uint64_t /*seed*/) {}
};

std::unique_ptr<CandidateCallable> nativeCallable(torch::jit::Function& forward);

/// A KernelBench-format answer loaded: its module run (extensions built or taken from the cache),
/// ModelNew(*init_inputs) built after seeding, on `device` ("cpu" or "cuda").
struct KernelBenchModel
{
    std::unique_ptr<CandidateCallable> callable; // null when the load failed
    /// On failure: {"status","stage","message","code","line","detail"} (kernelbench_host.py's AnswerError).
    nlohmann::json error;
    nlohmann::json builds = nlohmann::json::array();     // [{name,key,build_dir,cached,ms,with_cuda}]
    nlohmann::json parameters = nlohmann::json::array(); // [[name, shape, is_buffer]] of the model
    nlohmann::json notes = nlohmann::json::array();      // [{code,message,line}]: kernelbench_host.py's result_notes
};
/// The reference of a KernelBench-only task (Task::referencePython: KernelBench's problem file),
/// run in the embedded interpreter: Model(*get_init_inputs()) made as KernelBench makes it, after
/// seeding, on `device`. Its callable takes the inputs and an empty parameter dict, as ModelNew's.
struct KernelBenchReference
{
    std::unique_ptr<CandidateCallable> callable;         // null when it failed
    nlohmann::json initInputs = nlohmann::json::array(); // get_init_inputs(): ModelNew gets the same
    std::string error;                                   // why it failed
};
KernelBenchReference loadKernelBenchReference(const std::string& source, uint64_t seed, const std::string& device);
/// get_inputs() of a KernelBench-only task's problem file after torch.manual_seed(seed), on `device`
/// (KernelBench's draw of a correctness trial's inputs), with `moduleValues` (a shape set's module
/// constants) in place of the module's for that call only. Throws std::runtime_error with the reason.
std::vector<c10::IValue> kernelBenchInputs(const std::string& source, uint64_t seed, const std::string& device,
                                           const std::map<std::string, int64_t>& moduleValues = {});

KernelBenchModel loadKernelBenchModel(const std::string& source, const nlohmann::json& initInputs, uint64_t seed,
                                      const std::string& device, const std::string& arch);

} // namespace kwb
