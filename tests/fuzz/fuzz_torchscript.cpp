// libFuzzer target: a candidate's python block (TorchScript host code) through what the
// evaluator does before anything runs: compileScript, forward, the inlined graph, the sandbox
// check and the kb.launch names (evaluate/loadstages.cpp, stages 2 and 3). Nothing is executed. The
// evaluator reports a std::exception from these as a compile error or an internal error; anything
// else (a signal, a sanitizer report, another exception type) would take the worker down.
#include "worker/python/scripthost.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    kwb::configureScriptRuntime();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string source(reinterpret_cast<const char*>(data), size);
    try {
        auto cu = kwb::compileScript(source);
        torch::jit::Function& fn = kwb::forwardFunction(*cu);
        auto graph = kwb::inlinedGraph(fn);
        (void)kwb::checkSandbox(*graph);
        (void)kwb::launchedKernelNames(*graph);
    } catch (const std::exception&) {
        // a compile error or a refused program: the expected outcome for most inputs
    }
    return 0;
}
