#pragma once
// TorchScript host for task references and candidates: compilation with the `kb` / `F`
// resolver, the kb.launch operators, and the sandbox allowlist. Includes torch headers: only
// torch-side .cpp files include this.
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kwb {

class LoadedModule;

struct ScriptError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

/// The source was refused by the sandbox before compiling (status `rejected`): a denied op named
/// anywhere in it, or a default value that is not a literal.
struct ScriptRejected : ScriptError
{
    ScriptRejected(std::string op, std::string reason, int line);
    std::string op; // the denied op ("aten::save") or "default value"
    std::string reason;
    int line = 0; // 1-based line in the compiled source, 0 if unknown
};

/// The source's shape is out of bounds (checkHostCodeShape: status `format_error`).
struct ScriptFormatError : ScriptError
{
    ScriptFormatError(std::string code, const std::string& message, int line);
    std::string code; // "host_code_limit"
    int line = 0;     // 1-based line in the compiled source
};

/// Once per process: graph executor optimisation off (no fusion groups, see docs/decisions.md),
/// kb operators registered. Idempotent.
void configureScriptRuntime();

/// Compiles TorchScript host code. `import`/`from` lines are blanked (models write them; the C++
/// frontend has no imports) so line numbers in errors still match the answer's block.
/// Names resolved: torch (aten builtins, plus torch.nn.functional), F, math, kb.
/// Before the frontend compiles (and so runs default values and constant ops), the source is
/// checked: its shape (ScriptFormatError), then its parse tree (ScriptRejected: a denied op's name
/// anywhere, a default value that is not a literal). Throws ScriptError with the frontend's
/// message otherwise.
std::shared_ptr<torch::jit::CompilationUnit> compileScript(const std::string& source);

/// The `forward` function of a compiled unit; throws ScriptError if there is none.
torch::jit::Function& forwardFunction(torch::jit::CompilationUnit& cu);

/// Inlines every function call, nested ones too. (jit::Inline inlines one level when the graph
/// executor's optimisation is off: callees' graphs are then not pre-inlined.)
void inlineAllCalls(torch::jit::Graph& graph);

/// A copy of forward's graph with every call inlined.
std::shared_ptr<torch::jit::Graph> inlinedGraph(torch::jit::Function& fn);

struct SandboxViolation
{
    std::string op;     // qualified op name, e.g. "prim::Print"
    std::string reason; // why it is not allowed
    std::string where;  // source line of the node, if known
};

/// Every node (blocks included) must be on the allowlist (docs/sandbox.md).
std::vector<SandboxViolation> checkSandbox(const torch::jit::Graph& graph);

/// Whether an op name is on the allowlist, and the reason when it is not.
bool isAllowedOp(const std::string& qualifiedName, std::string* reason);

/// Names of the kernels that `kb.launch*` nodes in the graph name with a constant string.
std::vector<std::string> launchedKernelNames(const torch::jit::Graph& graph);

/// What kb.launch uses while a candidate runs. Set by the evaluator around candidate calls.
struct LaunchContext
{
    LoadedModule* module = nullptr;
    void* stream = nullptr; // CUstream
    int launches = 0;       // kb.launch calls made
    /// Parameter sizes from the kernels' declarations, for drivers without cuFuncGetParamInfo.
    std::map<std::string, std::vector<std::size_t>> declaredSizes;
};
void setLaunchContext(LaunchContext* ctx);

} // namespace kwb
