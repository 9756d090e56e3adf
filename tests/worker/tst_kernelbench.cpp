// KernelBench's answer format (ModelNew + load_inline) on the CPU: detection and extraction, the
// static check's refusals, an answer with a C++-only extension evaluated at smoke scale, the
// extension cache, and a ModelNew whose parameters differ from the reference's. Torch-free
// includes: the evaluator's interface is. Python parts skip, saying so, in a worker built
// without Python.
#include "answer_format.hpp"
#include "evaluator.hpp"
#include "python_host.hpp"
#include "task.hpp"

#include <ATen/Context.h> // at::hasCUDA: whether this torch was built with CUDA
#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
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

Task task(const char* relative) { return loadTaskFile(std::string(KWB_SOURCE_DIR) + "/tasks/" + relative); }

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

std::string fenced(const std::string& module) { return "Here is my answer.\n\n```python\n" + module + "```\n"; }

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
    return ev.evaluate(t, {{"type", "evaluate"}, {"answer", answer}, {"device", "cpu"}, {"scale", "smoke"},
                           {"correctness_trials", 2}, {"time", time}, {"timing_trials", 3}, {"warmup", 1}});
}

} // namespace

TEST_CASE("answer format: detected from class ModelNew, named by answer_format")
{
    CHECK(detectAnswerFormat(fenced(kScaleCpp)) == AnswerFormat::KernelBench);
    CHECK(detectAnswerFormat("```cuda\nextern \"C\" __global__ void k() {}\n```\n```python\ndef forward(x: Tensor) -> Tensor:\n    return x\n```\n") ==
          AnswerFormat::Native);
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
    KernelBenchSource second = extractKernelBenchSource("```python\nx = 1\n```\n\n```python\nclass ModelNew(nn.Module):\n    pass\n```\n");
    REQUIRE(second.ok);
    CHECK(second.line == 6);
    KernelBenchSource none = extractKernelBenchSource("```python\nclass Model:\n    pass\n```\n");
    REQUIRE(none.error);
    CHECK(none.error->code == "no_model_new");
    KernelBenchSource open = extractKernelBenchSource("```python\nclass ModelNew(nn.Module):\n    pass\n");
    REQUIRE(open.error);
    CHECK(open.error->code == "unclosed_fence");
}

TEST_CASE("static check: each refusal with its line and reason")
{
    if (!pythonOrSkip())
        return;
    CHECK(python::checkSource(kScaleCpp).empty());
    struct Case {
        const char* source;
        int line;
        const char* reason;
    };
    const Case cases[] = {
        {"import torch\nimport os\n", 2, "import of 'os'"},
        {"import subprocess\n", 1, "import of 'subprocess'"},
        {"from socket import socket\n", 1, "import from 'socket'"},
        {"import threading\n", 1, "import of 'threading'"},
        {"import ctypes\n", 1, "import of 'ctypes'"},
        {"import importlib\n", 1, "import of 'importlib'"},
        {"from torch.utils.cpp_extension import load\n", 1, "only load_inline may be imported"},
        {"x = 1\nf = open('/etc/passwd')\n", 2, "'open' is not allowed: opens files"},
        {"y = eval('1+1')\n", 1, "'eval' is not allowed"},
        {"exec('x=1')\n", 1, "'exec' is not allowed"},
        {"m = __import__('os')\n", 1, "'__import__' is not allowed"},
        {"import torch\ntorch.cuda.Event = object\n", 2, "'torch.cuda.Event' is not allowed"},
        {"import torch\n\ndef fast():\n    pass\ntorch.cuda.synchronize = fast\n", 5, "'torch.cuda.synchronize' is not allowed"},
        {"import torch\ntorch.matmul = None\n", 2, "must not be patched"},
        {"import torch\nclass Lazy(torch.Tensor):\n    pass\n", 2, "a tensor subclass can compute lazily"},
        {"import torch.nn as nn\nclass M(nn.Module):\n    def __torch_function__(self):\n        pass\n", 3, "a tensor subclass's dispatch hook"},
        {"import torch\ns = torch.cuda.Stream()\n", 2, "work on another stream escapes the timer"},
        {"import torch\nx = torch.zeros(1).__class__\n", 2, "special attributes"},
        {"import torch\nsetattr(torch, 'add', None)\n", 2, "'setattr' is not allowed"},
        {"import torch\ntorch.load('w.pt')\n", 2, "'torch.load' is not allowed: reads files"},
        {"import torch\ntorch.serialization.save(torch.zeros(1), 'w.pt')\n", 2, "'torch.serialization.save' is not allowed: reads and writes files"},
        {"import torch\ns = torch.UntypedStorage.from_file('w', False, 4)\n", 2, "attribute 'from_file' is not allowed"},
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

TEST_CASE("evaluate: a refused KernelBench answer is rejected at the sandbox stage, with its answer line")
{
    if (!pythonOrSkip())
        return;
    cacheDir();
    const json r = evaluateOnCpu(task("level1/05_matrix_scalar_multiplication.toml"),
                                 fenced("import torch\nimport os\nclass ModelNew(torch.nn.Module):\n    pass\n"));
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
    CHECK(ext["cached"] == false);
    const fs::path so = fs::path(ext["build_dir"].get<std::string>()) / "kwb_test_scale.so";
    REQUIRE(fs::exists(so));
    const auto built = fs::last_write_time(so);

    // The same sources again (another sample, a resumed run): taken from the cache, not rebuilt.
    const json again = evaluateOnCpu(t, kScaleCpp); // a generation file: no fences
    CHECK(again["status"] == "correct");
    CHECK(again["compile"]["extensions"][0]["cached"] == true);
    CHECK(again["compile"]["extensions"][0]["build_dir"] == ext["build_dir"]);
    CHECK(fs::last_write_time(so) == built);
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

TEST_CASE("evaluate: a ModelNew with the reference's parameters gets its weights; one without is a format_error")
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

    std::string renamed = right;
    renamed.replace(renamed.find("self.bias = "), 12, "self.shift = ");
    renamed.replace(renamed.find("+ self.bias"), 11, "+ self.shift");
    const json bad = evaluateOnCpu(t, fenced(renamed));
    CHECK(bad["status"] == "format_error");
    CHECK(bad["format_error"]["code"] == "parameter_mismatch");
    const std::string msg = bad["message"];
    CHECK(msg.find("missing bias [128, 1, 1]") != std::string::npos);
    CHECK(msg.find("unexpected parameter shift [128, 1, 1]") != std::string::npos);
    CHECK(bad["parameters"]["reference"].size() == 3);
    CHECK(bad["parameters"]["model"].size() == 3);

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
    CHECK(checked == 4);
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
    pybind11::module_::import("os").attr("system")(std::string("touch )" + target.string() + R"("));
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
