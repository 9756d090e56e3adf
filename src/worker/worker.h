#pragma once
// Request dispatch for kwb-worker (docs/protocol.md).
#include "worker/evaluate/evaluator.h"
#include "worker/measure/gpuquietlock.h"
#include "worker/tasks/task.h"

#include <nlohmann/json.hpp>

#include <future>
#include <memory>
#include <string>

namespace kwb {

class Worker
{
public:
    /// quietLock: the GPU's quiet lock (--gpu-quiet-lock), null without one.
    Worker(int protocolFd, std::string tasksDir, std::unique_ptr<GpuQuietLock> quietLock = nullptr);
    /// Serves requests from stdin until EOF, `shutdown`, or an unrecoverable CUDA fault.
    /// Returns the process exit code.
    int run();
    /// One request to one response (also used by tests).
    nlohmann::json handle(const nlohmann::json& request);
    bool healthy() const { return m_evaluator.healthy(); }

private:
    const TaskSet& tasks();
    /// The request's task; a KernelBench-only one only where kernelBenchOnlyToo (evaluate, run_reference), else
    /// the error kernelbench_only.
    const Task& task(const nlohmann::json& request, bool kernelBenchOnlyToo = false);
    nlohmann::json hello();
    nlohmann::json listTasks(const nlohmann::json& request);
    nlohmann::json compileOnly(const nlohmann::json& request);

    int m_fd;
    std::string m_tasksDir;
    std::unique_ptr<TaskSet> m_tasks;
    /// The task folder read on a thread of its own from run()'s start, beside hello and warm.
    std::future<std::unique_ptr<TaskSet>> m_tasksAhead;
    std::unique_ptr<GpuQuietLock> m_quietLock;
    Evaluator m_evaluator;
    bool m_shutdown = false;
};

/// Where the shipped tasks are: $KWB_TASKS_DIR, then next to an installed binary, then the
/// source tree this binary was built from.
std::string defaultTasksDir(const std::string& argv0);

} // namespace kwb
