// KernelBench's answer format (ModelNew + load_inline) on the CPU: detection and extraction, the
// static check's refusals, an answer with a C++-only extension evaluated at smoke scale, the
// extension cache, which of several ModelNew blocks is the module (code_block), and a ModelNew
// whose parameters differ from the reference's (judged by its outputs). Torch-free
// includes: the evaluator's interface is. Python parts skip, saying so, in a worker built
// without Python.
#include "worker/answers/answerformat.h"
#include "worker/evaluate/evaluator.h"
#include "worker/python/candidatecallable.h"
#include "worker/python/pythonhost.h"
#include "worker/tasks/task.h"

#include <ATen/Context.h> // at::hasCUDA: whether this torch was built with CUDA
#include <Python.h>       // the interpreter state dict, where pybind11 3 keeps its modules
#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <unistd.h>

using namespace kwb;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool pythonOrSkip()
{
    std::string why;
    if (python::available(&why))
        return true;
    MESSAGE("skipped: " << why);
    return false;
}

// A source the static check refuses, and words its first refusal's reason must contain.
struct Refused
{
    const char* source;
    const char* reason;
};

void checkRefused(const Refused& r)
{
    CAPTURE(std::string(r.source));
    const json refusals = python::checkSource(r.source);
    REQUIRE(!refusals.empty());
    CHECK(refusals[0]["reason"].get<std::string>().find(r.reason) != std::string::npos);
}

Task task(const char* relative)
{
    return loadTaskFile(std::string(KWB_SOURCE_DIR) + "/tasks/" + relative);
}

// A fresh extension cache for this process (before the interpreter first builds anything).
const std::string& cacheDir()
{
    static const std::string dir = [] {
        fs::path d = fs::temp_directory_path() / ("kwb-tst-kernelbench-" + std::to_string(::getpid()));
        fs::remove_all(d);
        fs::create_directories(d);
        ::setenv("KWB_EXTENSION_CACHE", d.c_str(), 1);
        return d.string();
    }();
    return dir;
}

std::string fenced(const std::string& module)
{
    return "Here is my answer.\n\n```python\n" + module + "```\n";
}

// L1/5 (A * s) with a C++-only extension: no CUDA, so it builds and runs on the CPU.
const char* kScaleCpp = R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include <torch/extension.h>
torch::Tensor scale(torch::Tensor a, double s) { return a * s; }
"""

scale_ext = load_inline(name="kwb_test_scale", cpp_sources=cpp_source, functions=["scale"])

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = scale_ext

    def forward(self, A, s):
        return self.ext.scale(A, s)
)";

json evaluateOnCpu(const Task& t, const std::string& answer, bool time = false)
{
    Evaluator ev;
    return ev.evaluate(t, {{"type", "evaluate"},
                           {"answer", answer},
                           {"device", "cpu"},
                           {"scale", "smoke"},
                           {"correctness_trials", 2},
                           {"time", time},
                           {"timing_trials", 3},
                           {"warmup", 1}});
}

} // namespace

TEST_CASE("answer format: detected from class ModelNew, named by answer_format")
{
    CHECK(detectAnswerFormat(fenced(kScaleCpp)) == AnswerFormat::KernelBench);
    CHECK(detectAnswerFormat("```cuda\nextern \"C\" __global__ void k() {}\n```\n```python\ndef forward(x: Tensor) -> "
                             "Tensor:\n    return x\n```\n") == AnswerFormat::Native);
    CHECK(detectAnswerFormat("class Model(nn.Module):\n    pass\n") == AnswerFormat::Native);
    CHECK(!requestedAnswerFormat(json{{"type", "evaluate"}}).has_value());
    CHECK(requestedAnswerFormat(json{{"answer_format", "kernelbench"}}) == AnswerFormat::KernelBench);
    CHECK(requestedAnswerFormat(json{{"answer_format", "native"}}) == AnswerFormat::Native);
    CHECK_THROWS_AS(requestedAnswerFormat(json{{"answer_format", "triton"}}), std::invalid_argument);
}

TEST_CASE("answer format: the module of a KernelBench answer")
{
    KernelBenchSource fencedSource = extractKernelBenchSource(fenced(kScaleCpp));
    REQUIRE(fencedSource.ok);
    CHECK(fencedSource.line == 4);
    CHECK(fencedSource.source == kScaleCpp);
    // A generation file of a KernelBench run: no fences, the whole text is the module.
    KernelBenchSource raw = extractKernelBenchSource(kScaleCpp);
    REQUIRE(raw.ok);
    CHECK(raw.line == 1);
    // The first python block without ModelNew is skipped (a usage example, say).
    KernelBenchSource second =
        extractKernelBenchSource("```python\nx = 1\n```\n\n```python\nclass ModelNew(nn.Module):\n    pass\n```\n");
    REQUIRE(second.ok);
    CHECK(second.line == 6);
    KernelBenchSource none = extractKernelBenchSource("```python\nclass Model:\n    pass\n```\n");
    REQUIRE(none.error);
    CHECK(none.error->code == "no_model_new");
    KernelBenchSource open = extractKernelBenchSource("```python\nclass ModelNew(nn.Module):\n    pass\n");
    REQUIRE(open.error);
    CHECK(open.error->code == "unclosed_fence");
}

// Issue 33: a whole response with two ```python blocks that both define ModelNew, a stub first
// (a placeholder forward) and the real module last, as small models write them.
// kScaleCpp under an extension name of its own (the cache test below wants the first build of its).
std::string scaleCppLast()
{
    std::string m = kScaleCpp;
    return m.replace(m.find("kwb_test_scale"), 14, "kwb_test_scale_last");
}

std::string stubThenReal()
{
    return "First the skeleton:\n\n```python\nimport torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
           "    def __init__(self):\n        super().__init__()\n\n    def forward(self, A, s):\n"
           "        # the custom kernel goes here\n        pass\n```\n\nNow the whole module:\n\n" +
           fenced(scaleCppLast()) + "\nA usage example:\n\n```python\nm = ModelNew()\n```\n";
}

TEST_CASE("answer format: which of several ModelNew blocks is the module (code_block)")
{
    CHECK(requestedCodeBlock(json{{"type", "evaluate"}}) == CodeBlock::First);
    CHECK(requestedCodeBlock(json{{"code_block", nullptr}}) == CodeBlock::First);
    CHECK(requestedCodeBlock(json{{"code_block", "first"}}) == CodeBlock::First);
    CHECK(requestedCodeBlock(json{{"code_block", "last"}}) == CodeBlock::Last);
    CHECK_THROWS_AS(requestedCodeBlock(json{{"code_block", "last_complete"}}), std::invalid_argument);
    CHECK_THROWS_AS(requestedCodeBlock(json{{"code_block", 2}}), std::invalid_argument);

    const std::string answer = stubThenReal();
    const KernelBenchSource first = extractKernelBenchSource(answer, CodeBlock::First);
    REQUIRE(first.ok);
    CHECK(first.modelNewBlocks == 2);
    CHECK(first.line == 4);
    CHECK(first.source.find("pass") != std::string::npos);
    CHECK(first.source.find("load_inline") == std::string::npos);
    CHECK(extractKernelBenchSource(answer).source == first.source); // first is the default
    // The usage example after it defines no ModelNew: the last block that does is the module.
    const KernelBenchSource last = extractKernelBenchSource(answer, CodeBlock::Last);
    REQUIRE(last.ok);
    CHECK(last.modelNewBlocks == 2);
    CHECK(last.source == scaleCppLast());
    CHECK(last.line == 21);

    // Cut off in a third block: the blocks closed before it stand, under either rule.
    const std::string cut = answer + "\nAnd faster:\n\n```python\nclass ModelNew(nn.Module):\n    def forw";
    CHECK(extractKernelBenchSource(cut, CodeBlock::Last).source == scaleCppLast());
    CHECK(extractKernelBenchSource(cut, CodeBlock::First).source == first.source);
    // One block only: both rules take it; none closed: unclosed_fence either way.
    CHECK(extractKernelBenchSource(fenced(kScaleCpp), CodeBlock::Last).source == kScaleCpp);
    const KernelBenchSource open =
        extractKernelBenchSource("```python\nclass ModelNew(nn.Module):\n    pass\n", CodeBlock::Last);
    REQUIRE(open.error);
    CHECK(open.error->code == "unclosed_fence");
}

TEST_CASE("evaluate: a stub first and the real module last, under each code_block convention")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const auto evaluate = [&](const char* rule) {
        Evaluator ev;
        return ev.evaluate(t, {{"type", "evaluate"},
                               {"answer", stubThenReal()},
                               {"answer_format", "kernelbench"},
                               {"code_block", rule},
                               {"device", "cpu"},
                               {"scale", "smoke"},
                               {"correctness_trials", 2},
                               {"time", false}});
    };
    // KernelBench's extract_first_code: the stub, whose forward is a placeholder.
    const json first = evaluate("first");
    INFO(first.dump());
    CHECK(first["status"] == "runtime_error");
    CHECK(first["error_code"] == "placeholder");
    CHECK(first["candidate"]["code_block"] == "first");
    CHECK(first["candidate"]["model_new_blocks"] == 2);
    CHECK(first["candidate"]["python_line"] == 4);
    // extract_last_code (Kernel-Coder's harness): the real module.
    const json last = evaluate("last");
    INFO(last.dump());
    CHECK(last["status"] == "correct");
    CHECK(last["candidate"]["code_block"] == "last");
    CHECK(last["candidate"]["python_line"] == 21);
}

TEST_CASE("static check: each refusal with its line and reason")
{
    if (!pythonOrSkip())
        return;
    CHECK(python::checkSource(kScaleCpp).empty());
    struct Case
    {
        const char* source;
        int line;
        const char* reason;
    };
    const Case cases[] = {
        {"import torch\nimport os\nos.getcwd()\n", 2, "import of 'os'"},
        {"import subprocess\nsubprocess.run\n", 1, "import of 'subprocess'"},
        {"from socket import socket\nsocket()\n", 1, "import from 'socket'"},
        {"import threading\nthreading.Thread\n", 1, "import of 'threading'"},
        {"import ctypes\nctypes.CDLL\n", 1, "import of 'ctypes'"},
        {"import importlib\nimportlib.import_module\n", 1, "import of 'importlib'"},
        {"from torch.utils.cpp_extension import load\n", 1, "only load_inline may be imported"},
        {"x = 1\nf = open('/etc/passwd')\n", 2, "'open' is not allowed: opens files"},
        {"y = eval('1+1')\n", 1, "'eval' is not allowed"},
        {"exec('x=1')\n", 1, "'exec' is not allowed"},
        {"m = __import__('os')\n", 1, "'__import__' is not allowed"},
        {"import torch\ntorch.cuda.Event = object\n", 2, "'torch.cuda.Event' is not allowed"},
        {"import torch\n\ndef fast():\n    pass\ntorch.cuda.synchronize = fast\n", 5,
         "'torch.cuda.synchronize' is not allowed"},
        {"import torch\ntorch.matmul = None\n", 2, "must not be patched"},
        {"import torch\nclass Lazy(torch.Tensor):\n    pass\n", 2, "a tensor subclass can compute lazily"},
        {"import torch.nn as nn\nclass M(nn.Module):\n    def __torch_function__(self):\n        pass\n", 3,
         "a tensor subclass's dispatch hook"},
        {"import torch\ns = torch.cuda.Stream()\n", 2, "work on another stream escapes the timer"},
        {"import torch\nx = torch.zeros(1).__class__\n", 2, "special attributes"},
        {"import torch\nsetattr(torch, 'add', None)\n", 2, "'setattr' is not allowed"},
        {"import torch\ntorch.load('w.pt')\n", 2, "'torch.load' is not allowed: reads files"},
        {"import torch\ntorch.serialization.save(torch.zeros(1), 'w.pt')\n", 2,
         "'torch.serialization.save' is not allowed: reads and writes files"},
        {"import torch\ns = torch.UntypedStorage.from_file('w', False, 4)\n", 2,
         "attribute 'from_file' is not allowed"},
        {"import torch\nx = torch._utils\n", 2, "torch's private internals"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.source);
        const json refusals = python::checkSource(c.source);
        REQUIRE(!refusals.empty());
        CHECK(refusals[0]["line"] == c.line);
        CHECK(refusals[0]["reason"].get<std::string>().find(c.reason) != std::string::npos);
    }
}

TEST_CASE("static check: the pure private helpers of torch.nn.init that honest answers copy pass; others do not")
{
    if (!pythonOrSkip())
        return;
    // As nn.Linear.reset_parameters writes them (a real QwQ-32B answer was rejected for this).
    CHECK(python::checkSource("import math\nimport torch\nimport torch.nn as nn\nw = torch.empty(4, 3)\n"
                              "fan_in, _ = nn.init._calculate_fan_in_and_fan_out(w)\n"
                              "b = 1 / math.sqrt(fan_in)\nf = torch.nn.init._calculate_correct_fan(w, 'fan_in')\n")
              .empty());
    const json refusals =
        python::checkSource("import torch\nw = torch.empty(2)\ntorch.nn.init._no_grad_uniform_(w, 0, 1)\n");
    REQUIRE(!refusals.empty());
    CHECK(refusals[0]["line"] == 3);
    CHECK(refusals[0]["reason"].get<std::string>().find("torch's private internals") != std::string::npos);
}

TEST_CASE("evaluate: the pure private helpers of torch.nn.init the static check passes also run")
{
    // The module view refused every private name at run time, these too, with "kwb sandbox: None":
    // Qwen3-Coder's L3/3 (its reset_parameters as nn.Linear's) was `rejected` (session 22, H200).
    if (!pythonOrSkip())
        return;
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const std::string answer = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                               "    def __init__(self):\n        super().__init__()\n"
                               "        fan_in, _ = nn.init._calculate_fan_in_and_fan_out(torch.empty(4, 3))\n"
                               "        self.fan = fan_in + torch.nn.init._calculate_correct_fan(torch.empty(4, 3), "
                               "'fan_out') - 6\n\n"
                               "    def forward(self, A, s):\n        return A * s * self.fan\n";
    const json r = evaluateOnCpu(t, fenced(answer));
    INFO(r.dump());
    CHECK(r["status"] == "correct");
}

TEST_CASE("static check: a custom autograd Function is allowed; autograd's hooks and profiler are not")
{
    if (!pythonOrSkip())
        return;
    // As a real QwQ-32B answer wrote it (Kernel-Coder evolrule L1/1 sample 6, correct under KernelBench).
    CHECK(python::checkSource("import torch\nimport torch.nn as nn\nfrom torch.autograd import Function\n\n"
                              "class CustomMatmulFunction(Function):\n    @staticmethod\n    def forward(ctx, a, b):\n"
                              "        ctx.save_for_backward(a, b)\n        return torch.matmul(a, b)\n\n"
                              "class ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                              "        return CustomMatmulFunction.apply(a, b)\n")
              .empty());
    CHECK(python::checkSource("import torch.autograd\n").empty());
    // torch's math namespaces, as attributes or imported (a real 7B answer to L1/71 imported torch.fft).
    CHECK(python::checkSource("import torch.fft\nimport torch.linalg as la\nfrom torch.special import erf\n"
                              "y = torch.fft.rfft\nz = la.norm\n")
              .empty());
    for (const char* source : {"from torch.autograd import graph\n", "from torch.autograd import profiler\n",
                               "import torch.autograd\ng = torch.autograd.graph\n"}) {
        CAPTURE(source);
        CHECK(!python::checkSource(source).empty());
    }
}

TEST_CASE("evaluate: a refused KernelBench answer is rejected at the sandbox stage, with its answer line")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const json r =
        evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"),
                      fenced("import torch\nimport os\nclass ModelNew(torch.nn.Module):\n    root = os.sep\n"));
    CHECK(r["status"] == "rejected");
    CHECK(r["stage"] == "sandbox");
    CHECK(r["answer_format"] == "kernelbench");
    CHECK(r["sandbox"][0]["where"] == "answer line 5");
    CHECK(r["message"].get<std::string>().find("import of 'os'") != std::string::npos);
}

TEST_CASE("evaluate: load_inline's own errors are the candidate's compile_error")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(R"(import torch
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="bad", cpp_sources="", functions=["f"], extra_flags=["-O3"])
class ModelNew(torch.nn.Module):
    def forward(self, A, s):
        return A * s
)"));
    CHECK(r["status"] == "compile_error");
    CHECK(r["compile"]["ok"] == false);
    CHECK(r["message"].get<std::string>().find("unexpected keyword argument 'extra_flags'") != std::string::npos);
}

TEST_CASE("evaluate: a CUDA extension where torch has no CUDA is the machine's no_device, not a compile_error")
{
    if (!pythonOrSkip())
        return;
    if (at::hasCUDA()) {
        MESSAGE("skipped: this torch has CUDA, so it can build the extension");
        return;
    }
    cacheDir();
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(R"(import torch
from torch.utils.cpp_extension import load_inline
src = "__global__ void k(float* x) { x[0] = 1.0f; }\ntorch::Tensor f(torch::Tensor a) { return a; }"
ext = load_inline(name="needs_cuda", cpp_sources="torch::Tensor f(torch::Tensor a);", cuda_sources=src, functions=["f"])
class ModelNew(torch.nn.Module):
    def forward(self, A, s):
        return ext.f(A * s)
)"));
    CHECK(r["status"] == "no_device");
    CHECK(r["message"].get<std::string>().find("built without CUDA") != std::string::npos);
    // Nothing was compiled: a report does not count it as compiled (EvaluationResult::compiled).
    CHECK(r["compile"]["ok"] == false);
}

TEST_CASE("evaluate: a C++-only extension at smoke scale on the CPU, then from the cache")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const json first = evaluateOnCpu(t, fenced(kScaleCpp), true);
    INFO(first.dump());
    REQUIRE(first["status"] == "correct");
    CHECK(first["answer_format"] == "kernelbench");
    CHECK(first["correctness"]["passed"] == 2);
    CHECK(first["timing"]["candidate"]["trials"] == 3);
    REQUIRE(first["compile"]["extensions"].size() == 1);
    const json ext = first["compile"]["extensions"][0];
    CHECK(ext["ok"] == true);
    CHECK(ext["cached"] == false);
    // The facts read beside the evaluation are merged into its compile record (none: C++ only).
    CHECK(first["compile"]["kernel_facts"] == json::array());
    const fs::path so = fs::path(ext["build_dir"].get<std::string>()) / "kwb_test_scale.so";
    REQUIRE(fs::exists(so));
    const auto built = fs::last_write_time(so);

    // The same sources again (another sample, a resumed run): taken from the cache, not rebuilt.
    const json again = evaluateOnCpu(t, kScaleCpp); // a generation file: no fences
    CHECK(again["status"] == "correct");
    CHECK(again["compile"]["extensions"][0]["cached"] == true);
    CHECK(again["compile"]["extensions"][0]["build_dir"] == ext["build_dir"]);
    CHECK(fs::last_write_time(so) == built);
    // What the build cost is kept and said, also where it was found built: the build's own time.
    REQUIRE(ext["built_ms"].is_number());
    CHECK(ext["built_ms"].get<double>() > 100.0);
    CHECK(again["compile"]["extensions"][0]["built_ms"] == ext["built_ms"]);
    CHECK(first["compile"]["log"].get<std::string>().find(" s)\n") != std::string::npos);
    CHECK(again["compile"]["log"].get<std::string>().find("taken from the cache ") != std::string::npos);
    CHECK(again["compile"]["log"].get<std::string>().find("(its build took ") != std::string::npos);
    // The compile request's path (compile ahead) finds it too.
    const json b = python::build(kScaleCpp, "sm_90");
    CHECK(b["ok"] == true);
    CHECK(b["builds"][0]["cached"] == true);

    // The model calling a function its extension does not have: runtime_error with Python's message.
    std::string wrong = kScaleCpp;
    wrong.replace(wrong.find("self.ext.scale("), 15, "self.ext.scaled(");
    const json w = evaluateOnCpu(t, fenced(wrong));
    CHECK(w["status"] == "runtime_error");
    CHECK(w["message"].get<std::string>().find("scaled") != std::string::npos);
}

TEST_CASE("evaluate: two answers whose extensions share a name, in one process, each run their own code")
{
    // Real models name their extensions alike ("matmul" in 5 of Qwen3-Coder's 10 level-1 answers):
    // in one worker, the second answer's module must run its own functions, not the first's.
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const auto sub = [](std::string text, const std::string& from, const std::string& to) {
        REQUIRE(text.find(from) != std::string::npos);
        return text.replace(text.find(from), from.size(), to);
    };
    const std::string same = sub(kScaleCpp, "name=\"kwb_test_scale\"", "name=\"kwb_test_same\"");
    const std::string offByOne = sub(same, "return a * s;", "return a * s + 1.0;");
    // The second also has a helper the first lacks: its module is its own, attributes and all.
    std::string twice =
        sub(same, "return a * s; }", "return a * s; }\ntorch::Tensor id(torch::Tensor a) { return a; }");
    twice = sub(twice, "functions=[\"scale\"]", "functions=[\"scale\", \"id\"]");
    twice = sub(twice, "return self.ext.scale(A, s)", "return self.ext.id(self.ext.scale(A, s))");
    const json wrong = evaluateOnCpu(t, fenced(offByOne));
    INFO(wrong.dump());
    CHECK(wrong["status"] == "incorrect");
    const json right = evaluateOnCpu(t, fenced(twice));
    INFO(right.dump());
    CHECK(right["status"] == "correct");
    const json wrongAgain = evaluateOnCpu(t, fenced(offByOne));
    INFO(wrongAgain.dump());
    CHECK(wrongAgain["status"] == "incorrect");
}

TEST_CASE("evaluate: a module pybind11 kept from another library of the same name is forgotten; one of this "
          "library is kept")
{
    // pybind11 3 (torch 2.11's) hands back the module it made for a name whenever a library of that
    // name loads again (pythonhost.cpp). Debian's torch has pybind11 2, which keeps none: the cache
    // is made here as pybind11 3 makes it, in the interpreter's state dict.
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const std::string answer = kScaleCpp;
    const auto cacheWith = [](const std::string& file) {
        PyObject* state = PyInterpreterState_GetDict(PyInterpreterState_Get());
        REQUIRE(state);
        PyObject* cache = PyDict_New();
        PyObject* module = PyModule_New("kwb_test_scale");
        REQUIRE(PyModule_AddStringConstant(module, "__file__", file.c_str()) == 0);
        REQUIRE(PyDict_SetItemString(cache, "kwb_test_scale", module) == 0);
        REQUIRE(PyDict_SetItemString(state, "__pybind11_module_cache", cache) == 0);
        Py_DECREF(cache);
        return module; // the cache and the caller hold it
    };
    const auto cached = [] {
        PyObject* cache =
            PyDict_GetItemString(PyInterpreterState_GetDict(PyInterpreterState_Get()), "__pybind11_module_cache");
        return cache ? PyDict_GetItemString(cache, "kwb_test_scale") : nullptr;
    };
    PyObject* other = cacheWith("/elsewhere/kwb_test_scale.so");
    const json first = evaluateOnCpu(t, fenced(answer));
    INFO(first.dump());
    REQUIRE(first["status"] == "correct");
    CHECK(cached() != other); // forgotten before this answer's library loaded
    Py_DECREF(other);
    // The same library's module stays. Under pybind11 3 the cache now holds the real module its
    // load made, which a second load hands back; pybind11 2 keeps none, so a stand-in for this
    // library's file is put there (a stand-in under pybind11 3 would be handed back, without
    // `scale`: the H200 showed it, session 23).
    PyObject* mine = cached();
    if (mine) {
        Py_INCREF(mine);
    } else {
        const std::string built =
            (fs::path(first["compile"]["extensions"][0]["build_dir"].get<std::string>()) / "kwb_test_scale.so")
                .string();
        mine = cacheWith(built);
    }
    const json again = evaluateOnCpu(t, fenced(answer));
    CHECK(again["status"] == "correct");
    CHECK(cached() == mine); // the same library's module stays: its init must not run twice
    Py_DECREF(mine);
    PyDict_DelItemString(PyInterpreterState_GetDict(PyInterpreterState_Get()), "__pybind11_module_cache");
}

// Issue 39: work the timing does not see. A KernelBench-format ModelNew keeps state between calls,
// which a native forward cannot: these answers are right on every call the checks could predict.
namespace {

json timedOnCpu(const Task& t, const std::string& answer, int trials)
{
    Evaluator ev;
    // The fixed method (KernelBench's): exactly `trials` timed calls, the last ones on each set checked.
    return ev.evaluate(t, {{"type", "evaluate"},
                           {"answer", answer},
                           {"device", "cpu"},
                           {"scale", "smoke"},
                           {"correctness_trials", 2},
                           {"profile", "kernelbench"},
                           {"timing_trials", trials},
                           {"warmup", 1}});
}

} // namespace

TEST_CASE("timing: a result kept per input and replayed is this call's no more: each round rotates the sets")
{
    if (!pythonOrSkip())
        return;
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    // Computes once per input it has seen, keyed by what a rotation keeps (the sorted values), and
    // replays that result (a copy) afterwards: L2/1's 4.82x result cache on the H200 (issue 39).
    // When every round of the timing repeated the sets, each replay was right.
    const char* memo = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}
    def forward(self, A, s):
        key = (tuple(A.shape), tuple(A.flatten().sort().values[:8].tolist()), float(s))
        if key in self.memo:
            return self.memo[key].clone()
        out = A * s
        self.memo[key] = out.clone()
        return out
)";
    const json r = timedOnCpu(t, fenced(memo), 12);
    INFO(r.dump());
    CHECK(r["status"] == "incorrect");
    CHECK(r["stage"] == "timing");
    CHECK(r["message"].get<std::string>().find("output of a timed call differs from its reference") == 0);
}

TEST_CASE("timing: every timed output is poisoned once settled, and calls are checked at random besides")
{
    if (!pythonOrSkip())
        return;
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    // New outputs through correctness and the first timed calls, then the last one again, unchanged.
    const char* stale = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.out = None
    def forward(self, A, s):
        self.calls += 1
        if self.out is None or self.calls <= 20:
            self.out = A * s
        return self.out
)";
    json r = timedOnCpu(t, fenced(stale), 40);
    INFO(r.dump());
    CHECK(r["status"] == "incorrect");
    CHECK(r["stage"] == "timing");
    CHECK(r["message"].get<std::string>().find("output elements were never written: they still hold the canary") !=
          std::string::npos);

    // An honest answer: besides the first and last call on each set, calls drawn at random (1 in
    // 16 of 392 others: none drawn has probability 1e-11), every round on other inputs.
    r = timedOnCpu(t,
                   fenced("import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                          "    def forward(self, A, s):\n        return A * s\n"),
                   400);
    INFO(r.dump());
    CHECK(r["status"] == "correct");
    CHECK(r["timing"]["input_sets"] == 4);
    CHECK(r["timing"]["random_checks"].get<int>() > 0);
    CHECK(r["timing"]["checked_calls"].get<int>() >= 8 + r["timing"]["random_checks"].get<int>());
    CHECK(r["timing"]["inputs_vary_per_round"] == true);
}

// Issue 39 item 4: torch's global settings are the evaluator's. An extension's C++ runs natively
// at import and in forward, where no Python check sees it: what its import changes is set back
// (a flag), what it changes while it runs is rejected, and neither reaches the next evaluation.
TEST_CASE("evaluate: torch's global settings changed by an extension are set back at import and rejected in forward")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const bool benchmarkBefore = at::globalContext().benchmarkCuDNN();
    const bool deterministicBefore = at::globalContext().deterministicCuDNN();
    REQUIRE_FALSE(deterministicBefore); // torch's default, which the answer below changes
    std::string atImport = kScaleCpp;
    atImport.replace(atImport.find("torch::Tensor scale("), 0,
                     "static const int kwbFlip = [] { at::globalContext().setBenchmarkCuDNN(true); return 0; }();\n");
    atImport.replace(atImport.find("kwb_test_scale"), 14, "kwb_test_globals_import");
    const json imported = evaluateOnCpu(t, fenced(atImport), true);
    INFO(imported.dump());
    CHECK(imported["status"] == "correct");
    REQUIRE(imported.contains("global_state"));
    CHECK(imported["global_state"]["changed_at"] == "import");
    CHECK(imported["global_state"]["action"] == "reset");
    CHECK(imported["global_state"]["changes"][0]["setting"] == "torch.backends.cudnn.benchmark");
    CHECK(imported["global_state"]["changes"][0]["now"] == true);
    CHECK(std::find(imported["flags"].begin(), imported["flags"].end(), "global_state_reset") !=
          imported["flags"].end());
    CHECK(at::globalContext().benchmarkCuDNN() == benchmarkBefore);

    std::string inForward = kScaleCpp;
    inForward.replace(inForward.find("{ return a * s; }"), 17,
                      "{ at::globalContext().setDeterministicCuDNN(true); return a * s; }");
    inForward.replace(inForward.find("kwb_test_scale"), 14, "kwb_test_globals_forward");
    const json forward = evaluateOnCpu(t, fenced(inForward), true);
    INFO(forward.dump());
    CHECK(forward["status"] == "rejected");
    CHECK(forward["stage"] == "correctness");
    CHECK(forward["message"].get<std::string>().find("torch.backends.cudnn.deterministic") != std::string::npos);
    CHECK(forward["global_state"]["action"] == "rejected");
    CHECK(at::globalContext().deterministicCuDNN() == deterministicBefore);

    // The honest answer after them runs under the evaluator's settings, unflagged.
    const json honest = evaluateOnCpu(t, fenced(kScaleCpp));
    CHECK(honest["status"] == "correct");
    CHECK_FALSE(honest.contains("global_state"));
}

TEST_CASE("evaluate: a ModelNew with the reference's parameters gets its weights; one with others keeps its own")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level2/01_conv2d_relu_biasadd.toml");
    const char* right = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias
)";
    const json ok = evaluateOnCpu(t, fenced(right));
    INFO(ok.dump());
    CHECK(ok["status"] == "correct");
    CHECK(!ok.contains("notes"));
    CHECK(!ok.contains("parameters"));

    // Issue 33: other names, made in KernelBench's creation order under the seed (nn.Conv2d's draws,
    // then randn): the weights KernelBench's Model makes, so its outputs are right. Not a
    // format_error: compiled, judged by its outputs, and the result says the weights are its own.
    std::string renamed = right;
    renamed.replace(renamed.find("self.bias = "), 12, "self.shift = ");
    renamed.replace(renamed.find("+ self.bias"), 11, "+ self.shift");
    const json own = evaluateOnCpu(t, fenced(renamed));
    INFO(own.dump());
    CHECK(own["status"] == "correct");
    CHECK(own["format_error"].is_null());
    CHECK(own["parameters"]["weights"] == "own");
    // the task's parameters drawn as KernelBench draws them in the load, before the GPU's turn;
    // beside ModelNew's construction, since the word `bias` (a task parameter's name) is nowhere in
    // this answer, so its names could not be the task's
    CHECK(own["stage_detail_ms"]["compile"].contains("task_parameters_cpu"));
    CHECK(own["stage_detail_ms"]["compile"].contains("task_parameters_cpu_beside"));
    CHECK(!ok["stage_detail_ms"].value("compile", json::object()).contains("task_parameters_cpu"));
    CHECK(own["parameters"]["reference"].size() == 3);
    CHECK(own["parameters"]["model"].size() == 3);
    REQUIRE(own["notes"].size() == 1);
    CHECK(own["notes"][0]["code"] == "parameters_differ");
    const std::string note = own["notes"][0]["message"];
    CHECK(note.find("missing bias [128, 1, 1]") != std::string::npos);
    CHECK(note.find("unexpected parameter shift [128, 1, 1]") != std::string::npos);
    CHECK(note.find("not copied") != std::string::npos);

    // Flat names for the conv's own tensors (what the study's answers write): still nn.Conv2d's draws.
    const char* flat = R"(import torch
import torch.nn as nn
import torch.nn.functional as F
class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.conv_weight = conv.weight
        self.conv_bias = conv.bias
        self.bias = nn.Parameter(torch.randn(bias_shape))
    def forward(self, x):
        return torch.relu(F.conv2d(x, self.conv_weight, self.conv_bias)) + self.bias
)";
    const json flatResult = evaluateOnCpu(t, fenced(flat));
    INFO(flatResult.dump());
    CHECK(flatResult["status"] == "correct");
    CHECK(flatResult["parameters"]["weights"] == "own");
    // `conv` and `bias` are words of it, so the names could have matched: drawn after, not beside
    CHECK(flatResult["stage_detail_ms"]["compile"].contains("task_parameters_cpu"));
    CHECK(!flatResult["stage_detail_ms"]["compile"].contains("task_parameters_cpu_beside"));
    // torch's Python started (here by an earlier evaluation in this process): its time, in no stage
    CHECK(flatResult["stage_detail_ms"]["between"]["python_start"].get<double>() >= 0.0);

    // Names that cannot be the task's and a constructor that fails: the draw started beside it is
    // stopped, and the failure is the answer's runtime_error as before.
    const char* failing = R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.c = nn.Conv2d(in_channels, out_channels, kernel_size)
        raise ValueError("no shift made")
    def forward(self, x):
        return self.c(x)
)";
    const json failed = evaluateOnCpu(t, fenced(failing));
    INFO(failed.dump());
    CHECK(failed["status"] == "runtime_error");
    CHECK(failed["message"].get<std::string>().find("no shift made") != std::string::npos);

    // The same names made otherwise (the per-channel bias drawn before the conv's weights): other
    // weights than KernelBench's Model makes, so other outputs: compiled, and incorrect.
    std::string reordered = flat;
    const std::string biasLine = "        self.bias = nn.Parameter(torch.randn(bias_shape))\n";
    reordered.erase(reordered.find(biasLine), biasLine.size());
    reordered.insert(reordered.find("        conv = nn.Conv2d"), biasLine);
    REQUIRE(reordered.find("self.bias = nn.Parameter") < reordered.find("conv = nn.Conv2d"));
    const json wrong = evaluateOnCpu(t, fenced(reordered));
    INFO(wrong.dump());
    CHECK(wrong["status"] == "incorrect");
    CHECK(wrong["stage"] == "correctness");
    CHECK(wrong["parameters"]["weights"] == "own");
    CHECK(wrong["notes"][0]["code"] == "parameters_differ");

    // Writing into its input (KernelBench's "zeroing the inputs"): named as such.
    std::string zeroing = right;
    zeroing.replace(zeroing.find("        return torch.relu"), 8, "        x.zero_()\n        ");
    const json z = evaluateOnCpu(t, fenced(zeroing));
    CHECK(z["status"] == "incorrect");
    CHECK(z["message"].get<std::string>().find("changed its argument 'x'") != std::string::npos);
}

TEST_CASE("fixtures: the KernelBench-format ones decided before any build get their status on the CPU")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const std::string dir = std::string(KWB_SOURCE_DIR) + "/tests/fixtures/candidates/";
    auto manifest = toml::parse_file(dir + "kernelbench/manifest.toml");
    int checked = 0;
    for (auto& node : *manifest["candidate"].as_array()) {
        auto& c = *node.as_table();
        const std::string expect = c["expect"].value_or(std::string());
        if (expect != "rejected" && expect != "format_error")
            continue; // these build CUDA and run: tst_gpu_candidates on the GPU
        const std::string file = c["file"].value_or(std::string());
        CAPTURE(file);
        std::ifstream in(dir + file);
        const std::string answer((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const Task t = task("level1/05_matrix_scalar_multiplication.toml");
        Evaluator ev;
        const json r = ev.evaluate(t, {{"answer", answer}, {"device", "none"}, {"arch", "sm_90"}});
        CHECK(r["answer_format"] == "kernelbench");
        CHECK(r["status"] == expect);
        CHECK(!r["message"].get<std::string>().empty());
        ++checked;
    }
    CHECK(checked == 7);
}

TEST_CASE("run-time sandbox: Python reached from an extension's C++ is refused while forward runs")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    // Past the static check: the C++ imports os through pybind11 while forward runs. The import
    // resolves through the calling frame's builtins, the answer's guarded ones, and is refused
    // there (behind it the audit hook would refuse os.system; docs/sandbox.md).
    const fs::path target = fs::temp_directory_path() / ("kwb-tst-forbidden-" + std::to_string(::getpid()));
    fs::remove(target);
    const std::string module = R"(import torch
from torch.utils.cpp_extension import load_inline
cpp = """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor a, double s) {
    pybind11::module_::import("os").attr("system")(std::string("touch )" +
                               target.string() + R"("));
    return a * s;
}
"""
ext = load_inline(name="kwb_test_system", cpp_sources=cpp, functions=["run"])
class ModelNew(torch.nn.Module):
    def forward(self, A, s):
        return ext.run(A, s)
)";
    REQUIRE(python::checkSource(module).empty());
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(module));
    INFO(r.dump());
    CHECK(r["status"] == "runtime_error");
    CHECK(r["message"].get<std::string>().find("kwb sandbox: import of 'os' is not allowed") != std::string::npos);
    CHECK(!fs::exists(target));
}

// ---- issue 32 item 5: the Python checks' gaps, each attack refused ----------------------------------

namespace {

// A fresh temporary path for a file an attack would create (removed first).
fs::path attackTarget(const std::string& what)
{
    const fs::path p = fs::temp_directory_path() / ("kwb-tst-" + what + "-" + std::to_string(::getpid()));
    fs::remove(p);
    return p;
}

void checkRefusals(const std::vector<std::pair<std::string, std::string>>& cases)
{
    for (const auto& [source, reason] : cases) {
        CAPTURE(source);
        const json refusals = python::checkSource(source);
        REQUIRE(!refusals.empty());
        CHECK(refusals[0]["reason"].get<std::string>().find(reason) != std::string::npos);
    }
}

// The host's own answer to a load (its AnswerError's fields, with `code`), or null when it loaded.
json loadError(const std::string& module)
{
    cacheDir();
    KernelBenchModel m = loadKernelBenchModel(module, json::array(), 0, "cpu", "sm_90");
    return m.callable ? json() : m.error;
}

const char* kScaleModel = R"(
class ModelNew(nn.Module):
    def forward(self, A, s):
        return A * s
)";

} // namespace

TEST_CASE("static check: a module reached through an allowed module's attributes is refused, whatever the chain")
{
    if (!pythonOrSkip())
        return;
    const std::string h = "import torch\nimport torch.nn as nn\nimport math\nimport typing\n";
    checkRefusals({
        {h + "torch.sys.modules['os'].system('id')\n", "'torch.sys'"}, // torch's own import of sys
        {h + "p = torch.os.getcwd()\n", "'torch.os'"},                 // and of os
        {h + "l = math.__loader__\n", "special attributes"},           // a module's loader
        {h + "w = torch.nn.modules.module.warnings\n",
         "is the module 'warnings'"}, // any module not allowed, by its real name
        {h + "x = torch.functional.torch.load('w.pt')\n",
         "'torch.load' is not allowed: reads files"}, // torch reached again: its real name decides
        {h + "s = torch.nn.modules.module.torch.serialization\n", "'torch.serialization' is not allowed"},
        {h + "from torch.nn import modules\nm = modules.module.warnings\n", "is the module 'warnings'"},
        {h + "f = typing._eval_type\n", "private internals"}, // private members of any allowed module
        {h + "os_ = torch.ops.import_module('os')\n", "imports modules by name"}, // torch.ops imports by name
        {h + "ops = [torch.ops][0]\nm = ops.import_module('os')\n",
         "imports modules by name"}, // the same held in a variable
        {h + "a = torch.zeros(1).numpy().ctypes._ctypes\n", "reaches the _ctypes module"}, // numpy's array.ctypes
        {h + "g = torch.fx.Graph()\n", "generates and runs Python code"}, // torch.fx execs generated code
    });
    CHECK(python::checkSource(
              h +
              "y = torch.nn.functional.relu(torch.zeros(1)) + math.sqrt(2.0)\nz = torch.ops.aten.relu(y)\n"
              "w = torch.nn.init.zeros_(torch.empty(2))\nT = typing.Optional[torch.Tensor]\n" +
              kScaleModel)
              .empty());
}

TEST_CASE("evaluate: a module reached at run time through a module the static check cannot follow is rejected")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    // torch held in a list: the static check sees no chain, the answer's view of torch refuses
    // torch.serialization (its writer opens the file in C++, with no audit event to catch it).
    const fs::path target = attackTarget("serialization");
    const std::string viaList =
        "import torch\nimport torch.nn as nn\nm = [torch][0]\nm.serialization.save(torch.zeros(1), '" +
        target.string() + "')\n" + kScaleModel;
    REQUIRE(python::checkSource(viaList).empty());
    const json r = evaluateOnCpu(t, fenced(viaList));
    INFO(r.dump());
    CHECK(r["status"] == "rejected");
    CHECK(r["message"].get<std::string>().find("'torch.serialization' is not allowed") != std::string::npos);
    CHECK(!fs::exists(target));
    // A module passed to a function: the same view.
    const std::string viaArgument =
        "import torch\nimport torch.nn as nn\ndef reach(m):\n    return m.nn.modules.module.warnings\n"
        "w = reach(torch)\n" +
        std::string(kScaleModel);
    REQUIRE(python::checkSource(viaArgument).empty());
    const json a = evaluateOnCpu(t, fenced(viaArgument));
    CHECK(a["status"] == "rejected");
    CHECK(a["message"].get<std::string>().find("is the module 'warnings'") != std::string::npos);
    // Nor can the view be written: torch stays unpatched for the evaluator and later answers.
    const std::string patch =
        "import torch\nimport torch.nn as nn\nm = [torch.cuda][0]\nm.synchronize = None\n" + std::string(kScaleModel);
    const json p = evaluateOnCpu(t, fenced(patch));
    CHECK(p["status"] == "rejected");
    CHECK(p["message"].get<std::string>().find("writing 'torch.cuda.synchronize' is not allowed") != std::string::npos);
}

TEST_CASE("static check: attributes named by strings (format fields, getters by name, string annotations) are refused")
{
    if (!pythonOrSkip())
        return;
    const std::string h = "import torch\nimport torch.nn as nn\nimport typing\n";
    checkRefusals({
        {h + "def g():\n    yield 1\nx = '{0.gi_frame.f_back.f_globals}'.format(g())\n",
         "'{0.gi_frame.f_back.f_globals}'"},
        {h + "t = '{0.__init__.__globals__}'\nx = t.format(torch)\n",
         "'{0.__init__.__globals__}'"}, // a name bound to the template
        {h + "def f(template, x):\n    return template.format(x)\n",
         "not a string literal"}, // a template the check cannot read
        {h + "x = '{m.cuda}'.format_map({'m': torch})\n", "'.format_map' with the field '{m.cuda}'"},
        {h + "x = '{0:{1.real}}'.format(1, 2)\n", "'{1.real}'"}, // a field inside a format spec
        {h + "class M(nn.Module):\n    def f(self):\n        return self.get_submodule('a.b')\n",
         "'get_submodule' is not allowed"},
        {h + "class M(nn.Module):\n    def f(self):\n        return self.get_parameter('w')\n",
         "'get_parameter' is not allowed"},
        {h + "class M(nn.Module):\n    def f(self):\n        return self.get_buffer('b')\n",
         "'get_buffer' is not allowed"},
        {h + "def f(op):\n    return op.attrgetter('x')\n", "'attrgetter' is not allowed"},
        {h + "def f(op):\n    return op.methodcaller('x')\n", "'methodcaller' is not allowed"},
        {h + "def f(x: \"__import__('os').system('id')\"):\n    pass\nhints = typing.get_type_hints(f, {})\n",
         "evaluates strings as code"},
        {h + "r = typing.ForwardRef('__import__(\"os\")')\n", "evaluates strings as code"},
        {h + "def g():\n    yield 1\nf = g().gi_frame\n", "reaches the interpreter's frames"},
        {h + "E = type('E', (object,), {'__del__': print})\n", "type(name, bases, namespace)"},
    });
    // Literal templates without attribute fields stay legal (a kernel's source filled in).
    CHECK(python::checkSource(
              h + "src = '__global__ void k(float* x) {{ x[{i}] = {v}f; }}'\ncode = src.format(i=0, v=1.5)\n"
                  "msg = 'block {} of {}'.format(1, 2)\n")
              .empty());
}

TEST_CASE("evaluate: reading the harness's frame through a format field is rejected")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    // The frame's globals are the harness's: its os module, and the sandbox's own armed flag.
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(R"(import torch
import torch.nn as nn
def g():
    yield 1
leak = "{0.gi_frame.f_back.f_back.f_globals[_state]}".format(g())
class ModelNew(nn.Module):
    def forward(self, A, s):
        return A * s
)"));
    CHECK(r["status"] == "rejected");
    CHECK(r["sandbox"][0]["where"] == "answer line 8");
}

TEST_CASE("static check: a class overriding nn.Module's methods or defining special methods is refused")
{
    if (!pythonOrSkip())
        return;
    const std::string h = "import torch\nimport torch.nn as nn\n";
    checkRefusals({
        // Methods the evaluator calls on the model, outside forward.
        {h + "class ModelNew(nn.Module):\n    def named_parameters(self, *a, **k):\n        return iter([])\n",
         "class ModelNew defines 'named_parameters', which torch.nn.Module has"},
        {h + "class ModelNew(nn.Module):\n    def _apply(self, fn):\n        return self\n", "defines '_apply'"},
        {h + "class ModelNew(nn.Module):\n    to = lambda self, *a, **k: self\n", "defines 'to'"},
        {h + "class ModelNew(nn.Module):\n    _parameters = {}\n", "defines '_parameters'"},
        // Special methods run when Python handles the object (printing an error, hashing, dying).
        {h + "class ModelNew(nn.Module):\n    def __repr__(self):\n        return ''\n",
         "class ModelNew defines '__repr__'"},
        {h + "class Note:\n    def __str__(self):\n        return ''\n", "class Note defines '__str__'"},
        {h + "class Note:\n    __hash__ = None\n", "class Note defines '__hash__'"},
        {h + "class ModelNew(nn.Module):\n    def __setattr__(self, k, v):\n        pass\n", "defines '__setattr__'"},
        // Writes to the model's own members and hook tables; hooks.
        {h + "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        "
             "self.named_parameters = None\n",
         "writes to 'self.named_parameters'"},
        {h + "M = nn.Module\nM.to = None\n", "writes to 'M.to'"},
        {h + "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        "
             "self._forward_hooks[0] = print\n",
         "attribute '_forward_hooks' is not allowed"},
        {h + "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        "
             "self.register_forward_pre_hook(print)\n",
         "'register_forward_pre_hook' is not allowed"},
        {h + "torch.nn.modules.module.register_module_forward_hook(print)\n",
         "'register_module_forward_hook' is not allowed"},
        {h + "t = torch.zeros(1)\nt.register_hook(print)\n", "'register_hook' is not allowed"},
    });
    // Helpers under names of their own, a class attribute, nn.Module.__init__ called by name: legal.
    CHECK(python::checkSource(
              h +
              "class ModelNew(nn.Module):\n    scale = 2.0\n    def __init__(self):\n        nn.Module.__init__(self)\n"
              "        self.training = False\n    def helper(self, x):\n        return x * self.scale\n"
              "    def forward(self, A, s):\n        return self.helper(A) * s\n")
              .empty());
}

TEST_CASE("evaluate: ModelNew hiding a learned parameter from the evaluator's listing is rejected")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    // A learned `shift` the reference lacks, hidden by overriding named_parameters (which the
    // evaluator calls outside forward): refused before anything runs.
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(1))
    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return iter([])
    def forward(self, A, s):
        return A * s + self.shift
)"));
    CHECK(r["status"] == "rejected");
    CHECK(r["message"].get<std::string>().find("defines 'named_parameters'") != std::string::npos);
}

TEST_CASE("run-time sandbox: class statements are checked on the real bases, whatever name holds them")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    // torch.Tensor under a name of the answer's: the static check cannot tell, __build_class__ can.
    const std::string tensorAlias =
        "import torch\nimport torch.nn as nn\nT = torch.Tensor\nclass Lazy(T):\n    pass\n" + std::string(kScaleModel);
    REQUIRE(python::checkSource(tensorAlias).empty());
    const json r = evaluateOnCpu(t, fenced(tensorAlias));
    CHECK(r["status"] == "rejected");
    CHECK(r["message"].get<std::string>().find("class Lazy derives from torch.Tensor") != std::string::npos);
    // nn.Module under a name of the answer's is still nn.Module: correct.
    const json ok = evaluateOnCpu(
        t, fenced("import torch\nnn = torch.nn\nclass ModelNew(nn.Module):\n    def forward(self, A, s):\n"
                  "        return A * s\n"));
    INFO(ok.dump());
    CHECK(ok["status"] == "correct");
}

TEST_CASE("run-time sandbox: the answer's code outside the armed windows (a finalizer) still runs under the audit hook")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    // A class made by calling type's type (no class statement for the checks to see) with a
    // finalizer; its object hangs on forward's input and dies when the evaluator drops that, in
    // C++, outside any call of the harness. The finalizer reaches Python with real builtins
    // through the extension's C++ (PyRun_SimpleString): its os.system is refused because a frame
    // of the answer's is on the stack, armed window or not.
    const fs::path target = attackTarget("finalizer-target");
    const fs::path marker = attackTarget("finalizer-ran");
    const std::string module = R"py(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
cpp = """
#include <torch/extension.h>
#include <fstream>
void fire() {
    std::ofstream(")py" + marker.string() +
                               R"py(") << "ran";
    PyRun_SimpleString("import os\\nos.system('touch )py" +
                               target.string() + R"py(')");
}
"""
ext = load_inline(name="kwb_test_finalizer", cpp_sources=cpp, functions=["fire"])
def fire(self):
    ext.fire()
Late = type(nn.Module)("Late", (object,), {"__del__": fire})
class ModelNew(nn.Module):
    def forward(self, A, s):
        A.late = Late()
        return A * s
)py";
    REQUIRE(python::checkSource(module).empty());
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(module));
    INFO(r.dump());
    CHECK(fs::exists(marker));  // the finalizer ran
    CHECK(!fs::exists(target)); // and its os.system was refused
    fs::remove(marker);
}

TEST_CASE("run-time sandbox: load_inline takes plain arguments only (the build formats them with the hook off)")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    // An object whose methods would run while the harness turns load_inline's arguments into
    // strings and JSON. Here an object of a class made past the class checks.
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(R"(import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
Name = type(nn.Module)("Name", (object,), {"__str__": lambda self: "ext"})
ext = load_inline(name=Name(), cpp_sources="int f() { return 1; }", functions=["f"])
class ModelNew(nn.Module):
    def forward(self, A, s):
        return A * s
)"));
    CHECK(r["status"] == "rejected");
    CHECK(r["message"].get<std::string>().find("load_inline's arguments must be strings") != std::string::npos);
}

// ---- issue 33 item 4: honest mistakes are not attacks -------------------------------------------------

TEST_CASE("honest failures: an undefined name is the answer's NameError, not a refusal")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    // `nn` used without its import: the class base cannot be resolved statically, and that is
    // no reason to refuse; the module fails with the NameError it has.
    const std::string module =
        "import torch\nclass ModelNew(nn.Module):\n    def forward(self, A, s):\n        return A * s\n";
    CHECK(python::checkSource(module).empty());
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(module));
    INFO(r.dump());
    CHECK(r["status"] == "runtime_error");
    CHECK(r["message"].get<std::string>().find("NameError: name 'nn' is not defined") != std::string::npos);
    const json e = loadError(module);
    CHECK(e["code"] == "undefined_name");
    CHECK(e["line"] == 2);
}

TEST_CASE("honest failures: load_inline's keywords, module names and placeholders have codes of their own")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    struct Case
    {
        std::string module;
        const char* status;
        const char* code;
        const char* message;
    };
    const std::string h = "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n";
    const Case cases[] = {
        // load_inline's signature refuses the keyword (KernelBench's own TypeError).
        {h + "ext = load_inline(name='kwb_kw', cpp_sources='', functions=['f'], extra_flags=['-O3'])\n" + kScaleModel,
         "compile_error", "load_inline_keyword", "unexpected keyword argument 'extra_flags'"},
        {h + "ext = load_inline(cpp_sources='', functions=['f'])\n" + kScaleModel, "compile_error",
         "load_inline_keyword", "missing 1 required positional argument: 'name'"},
        // functions=[...] names a function the sources do not declare.
        {h +
             "cpp = '#include <torch/extension.h>\\ntorch::Tensor scale(torch::Tensor a, double s) { return a * s; }'\n"
             "ext = load_inline(name='kwb_mismatch_fn', cpp_sources=cpp, functions=['scaled'])\n" +
             kScaleModel,
         "compile_error", "extension_name_mismatch", "scaled"},
        // the module's own PYBIND11_MODULE under another name than name=.
        {h +
             "cpp = '#include <torch/extension.h>\\ntorch::Tensor scale(torch::Tensor a, double s) { return a * s; }\\n"
             "PYBIND11_MODULE(other_name, m) { m.def(\"scale\", &scale); }'\n"
             "ext = load_inline(name='kwb_mismatch_mod', cpp_sources=cpp)\n" +
             kScaleModel,
         "compile_error", "extension_name_mismatch", "PyInit_kwb_mismatch_mod"},
        // a kernel source that is only a comment.
        {h +
             "cpp = '''\n// TODO: the kernel goes here\n'''\next = load_inline(name='kwb_placeholder_src', "
             "cpp_sources=cpp, functions=['scale'])\n" +
             kScaleModel,
         "compile_error", "placeholder", ""},
        // load_inline called in __init__ (the build happens when the model is made): the same compile_error.
        {h + "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.ext = load_inline(name='kwb_lazy_kw', cuda_sources='', functions=['f'])\n"
             "    def forward(self, A, s):\n        return A * s\n",
         "compile_error", "load_inline_keyword", "missing 1 required positional argument: 'cpp_sources'"},
        // a forward that does nothing.
        {h + "class ModelNew(nn.Module):\n    def forward(self, A, s):\n        pass\n", "runtime_error", "placeholder",
         "ModelNew.forward (line 5) does nothing"},
        {h + "class ModelNew(nn.Module):\n    def forward(self, A, s):\n        \"\"\"Scale A.\"\"\"\n        ...\n",
         "runtime_error", "placeholder", "does nothing"},
    };
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    for (const Case& c : cases) {
        CAPTURE(c.module);
        CHECK(python::checkSource(c.module).empty());
        const json e = loadError(c.module);
        REQUIRE(e.is_object());
        CHECK(e["status"] == c.status);
        CHECK(e["code"] == c.code);
        CHECK(e["message"].get<std::string>().find(c.message) != std::string::npos);
        const json r = evaluateOnCpu(t, fenced(c.module));
        CHECK(r["status"] == c.status); // never `rejected`
    }
}

TEST_CASE("honest failures: an import of a module that exists nowhere is the ModuleNotFoundError it would be")
{
    // Real 7B answers import modules they made up (`from custom_cuda_ops import ...`, `from model
    // import ...`, their own extension's name) and relative ones: KernelBench's harness fails them
    // with Python's own error (not compiled). The allowlist refuses the import before anything runs,
    // as always; the status says what it is: no attempt on the sandbox. One that exists (os) is
    // refused on purpose, also beside a made-up one.
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const std::string h = "import torch\nimport torch.nn as nn\n";
    struct Case
    {
        std::string module;
        const char* status;
        const char* message;
        int line;
    };
    const Case cases[] = {
        {h + "from kwb_made_up_ops import scale\n" + kScaleModel, "runtime_error",
         "(line 3): ModuleNotFoundError: No module named 'kwb_made_up_ops'", 3},
        {h + "import kwb_made_up_ops.sub as ops\n" + kScaleModel, "runtime_error", "No module named 'kwb_made_up_ops'",
         3},
        {h + "from .kernels import scale\n" + kScaleModel, "runtime_error",
         "ImportError: attempted relative import with no known parent package", 3},
        {h + "import torch.made_up_ops\n" + kScaleModel, "runtime_error", "No module named 'torch.made_up_ops'", 3},
        {h + "import os\nhome = os.environ.get('HOME')\n" + kScaleModel, "rejected", "import of 'os'", 3},
        {h + "import kwb_made_up_ops\nimport os\ncwd = os.getcwd\n" + kScaleModel, "rejected", "may be imported", 3},
        // Where the import does not run, or its error is caught (CUDA-L1's `try: import cupy` /
        // `except ImportError:` with a torch fallback, and cupy imported in a method that only
        // runs where it loaded), the module runs as it would anywhere.
        {h +
             "try:\n    import kwb_made_up_cupy as cp\nexcept ImportError:\n    cp = None\n"
             "def with_cupy():\n    import kwb_made_up_cupy\n" +
             kScaleModel,
         "correct", "", 0},
    };
    for (const Case& c : cases) {
        CAPTURE(c.module);
        CHECK(!python::checkSource(c.module).empty()); // refused before it runs, either way
        const json r = evaluateOnCpu(t, fenced(c.module));
        INFO(r.dump());
        CHECK(r["status"] == c.status);
        CHECK(r.value("message", std::string()).find(c.message) != std::string::npos);
        if (std::string(c.status) == "runtime_error") {
            const json e = loadError(c.module);
            REQUIRE(e.is_object());
            CHECK(e["code"] == "missing_module");
            CHECK(e["line"] == c.line);
        }
    }
}

TEST_CASE("honest failures: an import the answer never uses is not made, and not refused; one it uses is")
{
    // 20 of CUDA-L1's answers are refused only for an `import os` left over (docs/agreement.md). An
    // import whose names the source never mentions again is noted and never made: the name is bound
    // to an empty stand-in, so nothing of the module can be reached, whatever the answer does.
    if (!pythonOrSkip())
        return;
    for (const char* unused :
         {"import os\nimport torch\n", "import os.path as osp, sys\nimport torch\n", "from os import path, environ\n",
          "import torch\ndef f():\n    import subprocess\n    return 1\n"})
        CHECK_MESSAGE(python::checkSource(unused).empty(), unused);
    for (const Refused& r :
         {Refused{"import os\nx = os.environ\n", "import of 'os'"},
          Refused{"import os\ndef f(os):\n    return os\n", "import of 'os'"}, // a mention
          Refused{"from os import *\n", "import from 'os'"},
          Refused{"import sys\nimport subprocess\nsubprocess.run(['true'])\n", "import of 'subprocess'"}})
        checkRefused(r);

    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const std::string h =
        "import torch\nimport torch.nn as nn\nimport os\nimport os.path as osp\nfrom sys import argv\n";
    // Unused at the top and in forward (a stand-in each time): the answer runs and is correct.
    const json r = evaluateOnCpu(t, fenced(h + "class ModelNew(nn.Module):\n    def forward(self, A, s):\n"
                                               "        import time\n        return A * s\n"));
    INFO(r.dump());
    CHECK(r["status"] == "correct");
    // Each import not made is a note of the result, with its line in the answer (the fence is line 3).
    std::map<std::string, std::string> notes;
    for (const auto& n : r.value("notes", json::array()))
        if (n.value("code", "") == "unused_import")
            notes[n.value("message", "")] = std::to_string(n.value("line", 0));
    CHECK(notes.size() == 4);
    bool os = false, time = false;
    for (const auto& [message, line] : notes) {
        os = os || (message.find("imports from 'os'") != std::string::npos && line == "6" &&
                    message.find("(answer line 6)") != std::string::npos);
        time = time || (message.find("imports from 'time'") != std::string::npos && line == "11");
    }
    CHECK(os);
    CHECK(time);
}

TEST_CASE("static check: a torch module readable as an attribute may be imported by name; what it names is "
          "checked as an attribute")
{
    // `import torch.nn.init as init` and `from torch.nn.parameter import Parameter` are common honest
    // lines; torch.nn.init.kaiming_uniform_ was readable as an attribute all along.
    if (!pythonOrSkip())
        return;
    for (const char* source :
         {"import torch.nn.init as init\n", "import torch.nn.init\n", "from torch.nn.init import kaiming_uniform_\n",
          "from torch.nn.parameter import Parameter\n", "from torch.cuda.amp import autocast\n"}) {
        CAPTURE(source);
        CHECK(python::checkSource(source).empty());
    }
    for (const Refused& r :
         {Refused{"import torch.jit\ntorch.jit.script\n", "compiles Python at run time"},
          Refused{"import torch.backends.cudnn as cudnn\ncudnn.benchmark = True\n", "numeric settings"},
          Refused{"from torch.utils.data import DataLoader\nDataLoader\n", "only cpp_extension"},
          Refused{"from torch.cuda import synchronize\n", "synchronisation is the evaluator's"},
          Refused{"import torch.cuda\ntorch.cuda.synchronize()\n", "synchronisation"},
          Refused{"import torch.nn.init as init\ninit._no_grad_fill_\n", "private internals"},
          Refused{"from torch.nn.modules.conv import _ConvNd\n", "private internals"}})
        checkRefused(r);
}

TEST_CASE(
    "evaluate: torch modules imported by name (math namespaces, nn.init, nn.parameter) run as their attributes do")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const std::string module = "import torch\nimport torch.nn as nn\nimport torch.fft\nimport torch.linalg as la\n"
                               "from torch.special import expm1\nimport torch.nn.init as init\n"
                               "from torch.nn.parameter import Parameter\n\nclass ModelNew(nn.Module):\n"
                               "    def __init__(self):\n        super().__init__()\n"
                               "        self.zero = Parameter(init.zeros_(torch.empty(1)))\n"
                               "    def forward(self, A, s):\n"
                               "        k = expm1(torch.zeros(1)).sum() + torch.fft.fft(torch.zeros(4)).real.sum()\n"
                               "        return A * s + k * la.norm(A) + self.zero.sum()\n";
    REQUIRE(python::checkSource(module).empty());
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(module));
    INFO(r.dump());
    CHECK(r["status"] == "correct");
}

TEST_CASE("static check: what strong models copy from torch and KernelBench's references passes; torch's own "
          "methods stay torch's")
{
    // Gemini 2.5 Pro's and Claude Opus 4's answers (github.com/technoabsurdist/KernelBench, session 24's
    // sweep): a layer class as base, nn.BatchNorm's own extra_repr, nn.Conv3d's _triple, the Swin
    // references' itertools and collections.abc. Several were correct under KernelBench and `rejected` here.
    if (!pythonOrSkip())
        return;
    for (const char* source :
         {"import torch.nn as nn\nclass BN(nn.BatchNorm2d):\n    def __init__(self, n):\n        super().__init__(n)\n"
          "    def forward(self, x):\n        return x\n    def extra_repr(self):\n"
          "        return '{num_features}, eps={eps}'.format(**self.__dict__)\n",
          "import torch\nclass Block(torch.nn.Sequential):\n    def __init__(self):\n"
          "        super().__init__(torch.nn.ReLU())\n",
          "from torch.nn import Linear\nclass L(Linear):\n    pass\nclass M(L):\n    def forward(self, x):\n"
          "        return x\n",
          "from itertools import repeat\nimport collections.abc\nimport collections\n"
          "def pair(x):\n    if isinstance(x, collections.abc.Iterable):\n        return tuple(x)\n"
          "    return tuple(repeat(x, 2))\nd = collections.OrderedDict()\n",
          "from torch.nn.modules.utils import _triple\nimport torch\nk = _triple(3)\np = "
          "torch.nn.modules.utils._pair(2)\n",
          // gemma-4-26B's L3/16 (correct under KernelBench): a mode switch no harness calls.
          "import torch.nn as nn\nclass F(nn.BatchNorm2d):\n    def train(self, mode=True):\n"
          "        super().train(mode)\n        return self\n"}) {
        CAPTURE(source);
        CHECK(python::checkSource(source).empty());
    }
    for (const Refused& r :
         {// Torch's code calls these (nn.LSTM's .to() calls flatten_parameters): they stay torch's.
          Refused{"import torch.nn as nn\nclass R(nn.LSTM):\n    def flatten_parameters(self):\n        pass\n",
                  "which its torch base class has"},
          Refused{"import torch.nn as nn\nclass A(nn.BatchNorm2d):\n    pass\nclass B(A):\n"
                  "    def reset_running_stats(self):\n        pass\n",
                  "which its torch base class has"},
          Refused{"import torch.nn as nn\nclass M(nn.Module):\n    def to(self, *a):\n        return self\n",
                  "which torch.nn.Module has"},
          Refused{"import torch\nclass P(torch.nn.DataParallel):\n    pass\n", "a layer class of torch.nn"},
          Refused{"import torch\nclass P(torch.nn.modules.conv._ConvNd):\n    pass\n", "derives from"},
          Refused{"from torch.nn.modules.utils import _reverse_repeat_tuple\n", "private internals"},
          Refused{"import collections.abc\nimport torch\ncollections.abc.Sequence.register(torch.Tensor)\n",
                  "registers classes process-wide"},
          // Only unpacked into a literal template: no other read of __dict__.
          Refused{"import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n"
                  "        d = self.__dict__\n        return x\n",
                  "special attributes"},
          Refused{"import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n"
                  "        return '{}'.format(self.__dict__)\n",
                  "special attributes"},
          Refused{"import scipy\nscipy.special\n", "may be imported"}})
        checkRefused(r);
}

TEST_CASE("static check and evaluate: of numpy only ufuncs and float constants, as KernelBench's Swin V2 "
          "reference uses them")
{
    // Every answer to L3/30 seen copies the reference's `/ np.log2(8)` (a KernelBench leaderboard answer,
    // correct there, was `rejected`). Where numpy is not installed its import is the answer's own
    // ModuleNotFoundError, and the refusals below cannot be resolved: skipped.
    if (!pythonOrSkip())
        return;
    if (python::checkSource("import numpy\nnumpy.zeros\n").empty()) {
        MESSAGE("numpy is not installed beside this torch: skipped");
        return;
    }
    CHECK(python::checkSource("import numpy as np\nx = np.log2(8) + np.sqrt(2.0) * np.pi\nfrom numpy import exp, inf\n")
              .empty());
    for (const char* source :
         {"import numpy as np\nnp.load('w.npy')\n", "import numpy as np\nnp.fromfile('x')\n",
          "import numpy as np\nnp.zeros(3)\n", "import numpy as np\nnp.ctypeslib\n", "from numpy import memmap\n",
          "import numpy as np\nnp.log2.at\n", "import numpy.linalg\nnumpy.linalg.inv\n",
          "import numpy as np\nnp.seterr(all='ignore')\n"})
        checkRefused({source, "numpy"});
    cacheDir();
    const std::string module = "import torch\nimport torch.nn as nn\nimport numpy as np\n\nclass ModelNew(nn.Module):\n"
                               "    def forward(self, A, s):\n        return A * s * (np.log2(8) / 3.0)\n";
    json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(module));
    INFO(r.dump());
    CHECK(r["status"] == "correct");
    // Read at run time through a name the static check cannot follow: the module view refuses it.
    const std::string hidden = "import torch\nimport torch.nn as nn\nimport numpy as np\n\nm = [np][0]\n"
                               "class ModelNew(nn.Module):\n    def forward(self, A, s):\n"
                               "        return A * s + float(m.zeros(1)[0])\n";
    REQUIRE(python::checkSource(hidden).empty());
    r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"), fenced(hidden));
    INFO(r.dump());
    CHECK(r["status"] == "rejected");
    CHECK(r.dump().find("of numpy only its ufuncs") != std::string::npos);
}

TEST_CASE("evaluate: a layer class as base, extra_repr, itertools and nn's _pair run; a torch method overridden "
          "past the static check is rejected when the class is made")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const std::string module =
        "import torch\nimport torch.nn as nn\nfrom itertools import repeat\nimport collections.abc\n"
        "from torch.nn.modules.utils import _pair\n\nclass Scale(nn.Identity):\n"
        "    def forward(self, x, s):\n        return x * s\n"
        "    def extra_repr(self):\n        return '{training}'.format(**self.__dict__)\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.body = Scale()\n        self.k = len(tuple(repeat(1, 2))) + _pair(1)[0] - 2\n\n"
        "    def forward(self, A, s):\n"
        "        assert isinstance(_pair(2), collections.abc.Iterable)\n"
        "        return self.body(A, s) * self.k\n";
    REQUIRE(python::checkSource(module).empty());
    json r = evaluateOnCpu(t, fenced(module));
    INFO(r.dump());
    CHECK(r["status"] == "correct");
    // The base is a name the static check cannot follow; the class statement's own check sees the
    // real base and its members.
    const std::string hidden = "import torch\nimport torch.nn as nn\n\nB = [nn.BatchNorm2d][0]\n\nclass Norm(B):\n"
                               "    def _check_input_dim(self, x):\n        pass\n\n"
                               "class ModelNew(nn.Module):\n    def forward(self, A, s):\n        return A * s\n";
    REQUIRE(python::checkSource(hidden).empty());
    r = evaluateOnCpu(t, fenced(hidden));
    INFO(r.dump());
    CHECK(r["status"] == "rejected");
    CHECK(r.dump().find("which its torch base class has") != std::string::npos);
    // A refusal met in forward (a trial's call, not the answer's load) is the sandbox's verdict too,
    // not the answer's runtime error.
    const std::string inForward = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                                  "    def forward(self, A, s):\n        m = [torch][0]\n"
                                  "        m.serialization.save(A, 'w.pt')\n        return A * s\n";
    REQUIRE(python::checkSource(inForward).empty());
    r = evaluateOnCpu(t, fenced(inForward));
    INFO(r.dump());
    CHECK(r["status"] == "rejected");
    CHECK(r["stage"] == "sandbox");
    CHECK(r["message"].get<std::string>().find("'torch.serialization' is not allowed") != std::string::npos);
}

namespace {

// L3/34 (a vanilla RNN over 256 steps, 8 × 1024 inputs: small enough for the CPU at KernelBench's
// own sizes) written with F.linear: nn.Linear's draws in Model's order, so KernelBench's weights.
const char* kRnnAnswer = R"(import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0):
        hidden = h0
        outputs = []
        for t in range(x.size(0)):
            hidden = torch.tanh(F.linear(torch.cat((x[t], hidden), dim=1), self.i2h.weight, self.i2h.bias))
            outputs.append(F.linear(hidden, self.h2o.weight, self.h2o.bias))
        return torch.stack(outputs, dim=0)
)";

// A KernelBench-only task of the test's own, in KernelBench's problem-file form: a forward that
// draws (Dropout in training mode, as KernelBench never calls eval()) and a bool input.
Task ownKernelBenchOnlyTask(const std::string& module)
{
    Task t;
    t.id = "L9/1";
    t.level = 9;
    t.number = 1;
    t.title = "masked dropout";
    t.source = "level9/1_masked_dropout.py";
    t.kernelbenchOnly = "the test's own: a Dropout in training mode and a bool input";
    t.referencePython = module;
    return t;
}

const char* kMaskedDropout = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x, mask):
        return self.drop(x) * mask

n = 64

def get_inputs():
    x = torch.rand(n, n)
    return [x, x > 0.5]

def get_init_inputs():
    return [0.5]
)";

} // namespace

TEST_CASE("KernelBench only: an answer to L3/34 is evaluated against KernelBench's Model run in the embedded Python")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = task("level3/34_vanillarnnhidden.toml");
    REQUIRE(t.isKernelBenchOnly());
    const json ok = evaluateOnCpu(t, fenced(kRnnAnswer));
    INFO(ok.dump());
    CHECK(ok["status"] == "correct");
    CHECK(ok["reference"]["kind"] == "kernelbench_python");
    CHECK(ok["reference"]["source"] == "level3/34_VanillaRNNHidden.py");
    CHECK(ok["correctness"]["passed"] == 2);
    CHECK(ok["correctness"]["range_trial"]["skipped"].is_string());
    // Asked for smoke: it has KernelBench's sizes alone, and says it ran them.
    CHECK(ok["profile"]["scale"] == "full");
    REQUIRE(ok["notes"].is_array());
    CHECK(ok["notes"][0]["code"] == "kernelbench_only_scale");
    // and at its shape sets: get_inputs() with other sequence lengths and batch sizes (256 x 8 is
    // KernelBench's), which this ModelNew, looping over x.size(0), handles
    const json& sets = ok["correctness"]["shape_sets"];
    REQUIRE(sets.size() == 3);
    CHECK(sets[0]["dims"] == json({{"batch_size", 7}, {"sequence_length", 255}}));
    CHECK(sets[0]["inputs"] == "input 0 [255, 7, 1024], input 1 [7, 256]");
    CHECK(sets[2]["held_out"] == true);
    CHECK(sets[2]["passed"] == true);

    std::string relu = kRnnAnswer;
    relu.replace(relu.find("torch.tanh("), 11, "torch.relu(");
    const json wrong = evaluateOnCpu(t, fenced(relu));
    INFO(wrong.dump());
    CHECK(wrong["status"] == "incorrect");
    CHECK(wrong["stage"] == "correctness");

    // A native-format answer has no TorchScript reference to be held to: told so, not run.
    const json native =
        evaluateOnCpu(t, "```python\ndef forward(x: Tensor, h0: Tensor) -> Tensor:\n    return x\n```\n");
    CHECK(native["status"] == "format_error");
    CHECK(native["format_error"]["code"] == "kernelbench_only");
}

TEST_CASE("KernelBench only: each call starts from the same generator state; bool inputs cross; the reference's "
          "failure is its own")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const Task t = ownKernelBenchOnlyTask(kMaskedDropout);
    const std::string same = R"(import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x, mask):
        return F.dropout(x, self.p, True) * mask
)";
    // Right only if its dropout draws what the reference's drew: both calls seeded alike.
    const json ok = evaluateOnCpu(t, fenced(same), /*time=*/true);
    INFO(ok.dump());
    CHECK(ok["status"] == "correct");
    CHECK(ok["timing"].is_object());

    std::string unmasked = same;
    unmasked.replace(unmasked.find(" * mask"), 7, "");
    const json wrong = evaluateOnCpu(t, fenced(unmasked));
    INFO(wrong.dump());
    CHECK(wrong["status"] == "incorrect");

    // A reference whose module cannot run here (L3/48's einops where it is not installed).
    const std::string missing = "import kwb_no_such_module\n" + std::string(kMaskedDropout);
    const json noRef = evaluateOnCpu(ownKernelBenchOnlyTask(missing), fenced(same));
    INFO(noRef.dump());
    CHECK(noRef["status"] == "runtime_error");
    CHECK(noRef["stage"] == "reference");
    CHECK(noRef["message"].get<std::string>().find("No module named 'kwb_no_such_module'") != std::string::npos);
}

namespace {

// A problem file whose inputs are sized by module constants, one of them through another module
// value (input_shape, as L1/95's), and whose get_inputs() fails at one batch size.
const char* kSizedByConstants = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, labels):
        return x.mean(dim=0) + labels.float().mean()

batch_size = 64
num_classes = 16
input_shape = (num_classes,)

def get_inputs():
    if batch_size == 13:
        raise ValueError("thirteen")
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []
)";

std::vector<std::vector<int64_t>> shapesOf(const std::vector<c10::IValue>& inputs)
{
    std::vector<std::vector<int64_t>> out;
    for (const auto& v : inputs)
        out.push_back(v.toTensor().sizes().vec());
    return out;
}

} // namespace

TEST_CASE("KernelBench only: a shape set's inputs are get_inputs() with its module values, put back after each "
          "call, a failed one too")
{
    if (!pythonOrSkip())
        return;
    using Shapes = std::vector<std::vector<int64_t>>;
    const std::string src = kSizedByConstants;
    CHECK(shapesOf(kernelBenchInputs(src, 7, "cpu")) == Shapes{{64, 16}, {64}});
    const auto odd = kernelBenchInputs(src, 7, "cpu", {{"batch_size", 63}, {"num_classes", 15}});
    CHECK(shapesOf(odd) == Shapes{{63, 15}, {63}}); // input_shape follows num_classes
    CHECK(odd[1].toTensor().max().item<int64_t>() < 15);
    // the seed rule holds at a set: the same seed draws the same values
    const auto again = kernelBenchInputs(src, 7, "cpu", {{"batch_size", 63}, {"num_classes", 15}});
    CHECK(odd[0].toTensor().equal(again[0].toTensor()));
    CHECK(shapesOf(kernelBenchInputs(src, 7, "cpu")) == Shapes{{64, 16}, {64}}); // the module's own again

    // get_inputs() failing at a set, and a name the module has no int constant of: the reference's
    // errors, and the module's values come back either way.
    CHECK_THROWS_WITH(kernelBenchInputs(src, 7, "cpu", {{"batch_size", 13}, {"num_classes", 5}}),
                      doctest::Contains("thirteen"));
    CHECK_THROWS_WITH(kernelBenchInputs(src, 7, "cpu", {{"num_classes", 5}, {"input_shape", 3}}),
                      doctest::Contains("'input_shape', which is not a module-level integer constant"));
    CHECK(shapesOf(kernelBenchInputs(src, 7, "cpu")) == Shapes{{64, 16}, {64}});
}

TEST_CASE("KernelBench only: an answer right only at KernelBench's sizes is incorrect at a shape set, which is named")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const std::string mean = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.mean(dim=0)

batch_size = 64
dim = 32

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
)";
    Task t = ownKernelBenchOnlyTask(mean);
    t.shapeSets = {{"odd", false, {{"batch_size", 63}, {"dim", 31}}, {}},
                   {"half", false, {{"batch_size", 33}}, {}},
                   {"again", false, {{"batch_size", 33}}, {}}, // the same inputs: checked once
                   {"held_out", true, {{"batch_size", 49}, {"dim", 25}}, {}}};
    const std::string answer = R"(import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=0) / DIVISOR
)";
    std::string right = answer, fixed = answer;
    right.replace(right.find("DIVISOR"), 7, "x.size(0)");
    fixed.replace(fixed.find("DIVISOR"), 7, "64"); // KernelBench's batch_size, written in
    const json ok = evaluateOnCpu(t, fenced(right));
    INFO(ok.dump());
    CHECK(ok["status"] == "correct");
    const json& sets = ok["correctness"]["shape_sets"];
    REQUIRE(sets.size() == 4);
    CHECK(sets[0]["dims"] == json({{"batch_size", 63}, {"dim", 31}}));
    CHECK(sets[0]["inputs"] == "input 0 [63, 31]");
    CHECK(sets[1]["inputs"] == "input 0 [33, 32]");
    CHECK(sets[2]["skipped"].is_string());
    CHECK(sets[3]["passed"] == true);

    const json wrong = evaluateOnCpu(t, fenced(fixed));
    INFO(wrong.dump());
    CHECK(wrong["status"] == "incorrect");
    CHECK(wrong["stage"] == "correctness");
    CHECK(wrong["correctness"]["passed"] == 2); // right on every trial at KernelBench's sizes
    CHECK(wrong["message"].get<std::string>().rfind("incorrect on shape set 'odd' (input 0 [63, 31])", 0) == 0);
}

TEST_CASE("getattr reads what an attribute may read: a literal name at the static check, a computed one when it "
          "runs")
{
    // codex-gpt-5.5's L3/38 (github.com/yenhao-huang/KernelBench, correct under KernelBench) reads
    // `getattr(self.lstm, "weight_ih_l" + suffix)`; CUDA-L1's `getattr(conv, 'bias', None)`.
    if (!pythonOrSkip())
        return;
    CHECK(python::checkSource("import torch.nn as nn\nlin = nn.Linear(2, 2)\nw = getattr(lin, 'bias', None)\n"
                              "n = 'wei' + 'ght'\nv = getattr(lin, n)\nf = getattr\n")
              .empty());
    for (const Refused& r :
         {Refused{"import torch\nx = getattr(torch.ones(1), '__class__')\n", "special attributes"},
          Refused{"import torch\nc = getattr(torch, '_C')\n", "private"},
          Refused{"import torch\ns = getattr(torch.cuda, 'synchronize')\n", "synchronisation"},
          Refused{"import torch\nm = torch.nn.Linear(1, 1)\nh = getattr(m, '_forward_hooks')\n", "private internals"},
          Refused{"t = getattr('{0.__class__}', 'format')\n", "format fields"}})
        checkRefused(r);

    cacheDir();
    const Task t = task("level1/05_matrix_scalar_multiplication.toml");
    const std::string h = "import torch\nimport torch.nn as nn\n";
    const std::string model = "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                              "        self.scale = nn.Parameter(torch.ones(1), requires_grad=False)\n"
                              "    def forward(self, A, s):\n";
    // A computed name that may be read: the answer runs.
    CHECK(evaluateOnCpu(
              t, fenced(h + model + "        k = 'sca' + 'le'\n        return A * s * getattr(self, k)\n"))["status"] ==
          "correct");
    // Computed names refused when they run: a special attribute, torch's private internals, a module's
    // attribute its view refuses, and getattr reached under another name.
    for (const char* body : {"        k = '__cla' + 'ss__'\n        getattr(A, k)\n        return A * s\n",
                             "        k = '_forward' + '_hooks'\n        getattr(self, k)\n        return A * s\n",
                             "        k = 'synchro' + 'nize'\n        getattr(torch.cuda, k)()\n        return A * s\n",
                             "        g = getattr\n        g(torch, '_' + 'C')\n        return A * s\n"}) {
        CAPTURE(body);
        const json r = evaluateOnCpu(t, fenced(h + model + body));
        INFO(r.dump());
        CHECK(r["status"] == "rejected");
        CHECK(r["message"].get<std::string>().find("kwb sandbox") != std::string::npos);
    }
}
