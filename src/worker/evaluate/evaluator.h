#pragma once
// Evaluation of tasks and candidates (docs/protocol.md). The interface is torch-free so that
// the request dispatcher and tests do not pay for torch headers.
#include "worker/measure/gpuquietlock.h"
#include "worker/measure/measurestats.h"
#include "worker/measure/profiles.h"
#include "worker/tasks/task.h"

#include <nlohmann/json.hpp>

#include <string>

namespace kwb {

/// Seed of correctness trial k (0-based) from the run's base seed. Trial inputs differ from the
/// timing inputs (drawn under the base seed itself).
uint64_t trialSeed(uint64_t baseSeed, int trial);

/// The libtorch version this worker was built against.
std::string torchVersion();

class Evaluator
{
public:
    Evaluator();

    /// "cuda" when a CUDA device can be used, else "cpu"; `why` says why not.
    bool cudaAvailable(std::string* why = nullptr) const;

    /// Compiles the task's forward as TorchScript; returns an error message or "".
    std::string validateTask(const Task& task) const;

    /// Per-op shapes, FLOPs and bytes from shapes only (nothing runs).
    nlohmann::json analyze(const Task& task, Scale scale) const;

    /// Runs the reference once (tests, smoke checks): output shape, dtype and summary stats.
    /// device: "cpu" or "cuda".
    nlohmann::json runReference(const Task& task, Scale scale, const std::string& device, uint64_t seed) const;

    /// The `evaluate` request (docs/protocol.md). Never throws for candidate faults: those are
    /// statuses. Sets healthy() to false after a sticky CUDA error.
    nlohmann::json evaluate(const Task& task, const nlohmann::json& request);

    /// The `profile` request: the reference's kernels by CUDA time, mapped to top-level ops.
    nlohmann::json profile(const Task& task, const nlohmann::json& request);

    /// The `warm` request (docs/protocol.md): on device `ordinal`, under the quiet lock held
    /// shared, the CUDA context and tiny calls of what every evaluation loads first (cuBLAS,
    /// cuDNN, the evaluator's own kernels and checks), so a spare worker pays for them before it
    /// takes over. {device: "cuda", warm_ms: {quiet_wait, context, cublas, cudnn, evaluator,
    /// total}}; {device: "none", why} without a usable device; a second call answers at once
    /// (already_warm: true, every part 0). python: also start the embedded Python for
    /// KernelBench-format answers, after the GPU's parts (its `import torch`, CPU only, no lock):
    /// warm_ms.python, and python_error where it cannot start; done with or without a device.
    nlohmann::json warm(int ordinal, bool python = false);

    /// The GPU's quiet lock the timing stage and the traffic profile hold exclusively, and warm()
    /// shared; null: none (every hold a no-op). Not owned.
    void setQuietLock(const GpuQuietLock* lock) { m_quietLock = lock; }
    const GpuQuietLock* quietLock() const { return m_quietLock; }

    /// False once the CUDA context is unusable (the worker must exit after answering).
    bool healthy() const { return m_healthy; }

private:
    /// evaluate() but the release of torch's cached GPU memory after it; *ordinal: the CUDA device
    /// it used (left as it was where none).
    nlohmann::json evaluateOnce(const Task& task, const nlohmann::json& request, int* ordinal);

    bool m_healthy = true;
    bool m_warm = false;
    const GpuQuietLock* m_quietLock = nullptr;
    /// The reference's timing samples per key, reused by later candidates (measure::Settings::cache).
    std::vector<measure::CachedReference> m_referenceCaches;
};

} // namespace kwb
