// Candidate-format parser: every error code, line numbers, the documented example.
#include "answershapes.h"
#include "worker/answers/answerformat.h"
#include "worker/answers/candidateparser.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace kwb;

namespace {

const std::vector<SigParam> kSig = {{"x", "Tensor"}, {"p", "Dict[str, Tensor]"}};

const char* kCuda = "```cuda\n"
                    "extern \"C\" __global__ void bias_relu(float* y, const float* b, long long n, int c, int hw) {\n"
                    "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                    "    if (i < n) { float v = y[i] + b[(i / hw) % c]; y[i] = v > 0.f ? v : 0.f; }\n"
                    "}\n"
                    "```\n";

const char* kPython =
    "```python\n"
    "def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n"
    "    y = torch.conv2d(x, p[\"conv.weight\"], p[\"conv.bias\"])\n"
    "    n = y.numel()\n"
    "    kb.launch(\"bias_relu\", [(n + 255) // 256], [256], y, p[\"bias\"], n, y.size(1), y.size(2) * y.size(3))\n"
    "    return y\n"
    "```\n";

std::string good()
{
    return std::string("Here is the kernel.\n\n") + kCuda + "\nAnd the host code:\n\n" + kPython;
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to)
{
    for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
        s.replace(pos, from.size(), to);
    return s;
}

struct Case
{
    const char* what;
    std::string answer;
    const char* code; // "" = parses OK
    int line;         // expected error line (answer, 1-based); -1 = do not check
    std::vector<const char*> mustMention;
};

} // namespace

TEST_CASE("the answer in docs/candidate-format.md parses OK")
{
    // the example is the ````markdown block of the document: taken from the file when it is there
    std::string answer = good();
#ifdef KWB_SOURCE_DIR
    std::ifstream doc(KWB_SOURCE_DIR "/docs/candidate-format.md");
    if (doc) {
        std::stringstream ss;
        ss << doc.rdbuf();
        std::string text = ss.str();
        size_t b = text.find("````markdown\n");
        size_t e = text.find("\n````", b + 1);
        REQUIRE(b != std::string::npos);
        REQUIRE(e != std::string::npos);
        answer = text.substr(b + 13, e - b - 13 + 1);
    }
#endif
    ParseResult r = parseAnswer(answer, kSig);
    INFO((r.error ? r.error->message : std::string()));
    REQUIRE(r.ok);
    CHECK(r.candidate.hasCuda);
    CHECK(r.candidate.cudaLine == 2);
    CHECK(r.candidate.pythonLine == 9);
    REQUIRE(r.candidate.kernels.size() == 1);
    const KernelDecl& k = r.candidate.kernels[0];
    CHECK(k.name == "bias_relu");
    CHECK(k.externC);
    CHECK(k.line == 1);
    REQUIRE(k.params.size() == 5);
    CHECK(k.params[0].kind == KernelParam::Pointer);
    CHECK(k.params[1].type == "const float*");
    CHECK(k.params[2].kind == KernelParam::Int);
    CHECK(k.params[2].bytes == 8);
    CHECK(k.params[3].bytes == 4);
    CHECK(k.params[4].name == "hw");
    REQUIRE(r.candidate.launches.size() == 1);
    CHECK(r.candidate.launches[0].kernel == "bias_relu");
    CHECK_FALSE(r.candidate.launches[0].smem);
    CHECK(r.candidate.launches[0].line == 4);
    REQUIRE(r.candidate.forwardSignature.size() == 2);
    CHECK(r.candidate.forwardSignature[1].type == "Dict[str, Tensor]");
    CHECK(r.candidate.python.rfind("def forward", 0) == 0);
    CHECK(r.candidate.cuda.rfind("extern \"C\"", 0) == 0);
}

TEST_CASE("error codes, lines and messages")
{
    const std::string g = good(); // cuda fence at line 3 (kernel at 4), python fence at 12, def at 13, launch at 16
    const std::vector<Case> cases = {
        {"no block at all", "I think you should use a fused kernel.\n", "no_code_block", 0, {"no fenced code block"}},
        {"inline triple backticks are not a fence", "Use ```cuda``` blocks.\n", "no_code_block", 0, {}},
        {"only a cuda block",
         kCuda,
         "no_python_block",
         0,
         {"no ```python block", "def forward(x: Tensor, p: Dict[str, Tensor])"}},
        {"only a bash block", "```bash\nls\n```\n", "no_python_block", 0, {"```bash at line 1"}},
        {"two cuda blocks",
         std::string(kCuda) + kCuda + kPython,
         "duplicate_block",
         7,
         {"2 ```cuda blocks", "lines 1 and 7"}},
        {"two python blocks",
         std::string(kCuda) + kPython + "\n" + kPython,
         "duplicate_block",
         15,
         {"```python blocks", "lines 7 and 15"}},
        {"cpp tag with __global__",
         replaceAll(g, "```cuda", "```cpp"),
         "wrong_language_tag",
         3,
         {"```cpp", "use ```cuda"}},
        {"cu tag", replaceAll(g, "```cuda", "```cu"), "wrong_language_tag", 3, {"```cu ", "```cuda"}},
        {"c++ tag", replaceAll(g, "```cuda", "```c++"), "wrong_language_tag", 3, {"```c++"}},
        {"c tag", replaceAll(g, "```cuda", "```C"), "wrong_language_tag", 3, {"```c "}},
        {"cuh tag", replaceAll(g, "```cuda", "```cuh"), "wrong_language_tag", 3, {"```cuh"}},
        {"py tag", replaceAll(g, "```python", "```py"), "wrong_language_tag", 12, {"```py", "use ```python"}},
        {"python3 tag", replaceAll(g, "```python", "```python3"), "wrong_language_tag", 12, {"```python3"}},
        {"torchscript tag", replaceAll(g, "```python", "```torchscript"), "wrong_language_tag", 12, {"```torchscript"}},
        {"untagged cuda", replaceAll(g, "```cuda", "```"), "untagged_block", 3, {"no language tag", "```cuda"}},
        {"untagged python", replaceAll(g, "```python", "```"), "untagged_block", 12, {"no language tag", "```python"}},
        {"unclosed python fence (cut off)",
         g.substr(0, g.rfind("```")),
         "unclosed_fence",
         12,
         {"line 12", "never closed"}},
        {"unknown kernel",
         replaceAll(g, "kb.launch(\"bias_relu\"", "kb.launch(\"bias_rel\""),
         "unknown_kernel",
         16,
         {"\"bias_rel\"", "Kernels it declares: bias_relu"}},
        {"launch without a cuda block", kPython, "unknown_kernel", 5, {"no ```cuda block"}},
        {"kernel without extern C",
         replaceAll(g, "extern \"C\" __global__", "__global__"),
         "not_extern_c",
         4,
         {"\"bias_relu\"", "extern \"C\"", "line 16"}},
        {"template kernel",
         replaceAll(g, "extern \"C\" __global__", "template <typename T> __global__"),
         "not_extern_c",
         4,
         {"template"}},
        {"forward missing",
         replaceAll(g, "def forward(", "def fwd("),
         "missing_forward",
         12,
         {"no top-level def forward", "def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:"}},
        {"forward inside a class",
         std::string(kCuda) +
             "```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n```\n",
         "missing_forward",
         9,
         {"indented", "class ModelNew at line 8", "line 9"}},
        {"load_inline",
         std::string("```python\nfrom torch.utils.cpp_extension import load_inline\nclass ModelNew:\n  pass\n```\n"),
         "missing_forward",
         1,
         {"load_inline"}},
        {"extra parameter",
         replaceAll(g, "def forward(x: Tensor, p:", "def forward(x: Tensor, w: Tensor, p:"),
         "signature_mismatch",
         13,
         {"expected: def forward(x: Tensor, p: Dict[str, Tensor])",
          "found:    def forward(x: Tensor, w: Tensor, p: Dict[str, Tensor])", "Parameter 2"}},
        {"wrong type",
         replaceAll(g, "p: Dict[str, Tensor]) ->", "p: Tensor) ->"),
         "signature_mismatch",
         13,
         {"expected `p: Dict[str, Tensor]`, found `p: Tensor`"}},
        {"missing parameter",
         replaceAll(g, "def forward(x: Tensor, p: Dict[str, Tensor])", "def forward(x: Tensor)"),
         "signature_mismatch",
         13,
         {"Add `p: Dict[str, Tensor]`"}},
        {"method with self",
         replaceAll(g, "def forward(x:", "def forward(self, x:"),
         "signature_mismatch",
         13,
         {"remove `self`"}},
        {"too large", good() + std::string(kMaxAnswerBytes, ' '), "too_large", 0, {"bytes"}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        ParseResult r = parseAnswer(c.answer, kSig);
        if (std::string(c.code).empty()) {
            CHECK(r.ok);
            continue;
        }
        CHECK_FALSE(r.ok);
        REQUIRE(r.error.has_value());
        CAPTURE(r.error->message);
        CHECK(r.error->code == c.code);
        if (c.line >= 0)
            CHECK(r.error->line == c.line);
        for (const char* m : c.mustMention) {
            CAPTURE(m);
            CHECK(r.error->message.find(m) != std::string::npos);
        }
    }
}

TEST_CASE("accepted variants")
{
    const std::string g = good();
    const std::vector<std::pair<const char*, std::string>> ok = {
        {"tildes and long fences", replaceAll(replaceAll(g, "```cuda", "~~~~cuda"), "}\n```", "}\n~~~~")},
        {"upper-case tags and info after the tag",
         replaceAll(replaceAll(g, "```cuda", "```CUDA title=k.cu"), "```python", "```Python")},
        {"CRLF line ends", replaceAll(g, "\n", "\r\n")},
        {"torch.Tensor and spacing in types", replaceAll(g, "def forward(x: Tensor, p: Dict[str, Tensor])",
                                                         "def forward(x : torch.Tensor, p: Dict[ str,Tensor ])")},
        {"multi-line def with comments",
         replaceAll(g, "def forward(x: Tensor, p: Dict[str, Tensor])",
                    "def forward(\n    x: Tensor,  # input (N, C, H, W)\n    p: Dict[str, Tensor],\n)")},
        {"blocks indented in a list", replaceAll(replaceAll(g, "\n```", "\n   ```"), "\n    ", "\n       ")},
        {"other language blocks are ignored", "```bash\npip install torch\n```\n" + g + "```text\nresult\n```\n"},
        {"a py block without forward is ignored", g + "```py\nprint(1)\n```\n"},
        {"kernel in a comment is not a launch",
         replaceAll(g, "    return y\n", "    # kb.launch(\"nothing\", [1], [1])\n    return y\n")},
        {"torch-only answer",
         "```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return torch.relu(x)\n```\n"},
        {"the whole answer wrapped in ````markdown", "````markdown\n" + g + "````\n"},
    };
    for (const auto& [what, answer] : ok) {
        CAPTURE(what);
        ParseResult r = parseAnswer(answer, kSig);
        CAPTURE(r.error ? r.error->code + ": " + r.error->message : std::string());
        CHECK(r.ok);
    }
    ParseResult torchOnly = parseAnswer(ok[9].second, kSig);
    CHECK_FALSE(torchOnly.candidate.hasCuda);
    CHECK(torchOnly.candidate.launches.empty());

    ParseResult wrapped = parseAnswer(ok.back().second, kSig);
    CHECK(wrapped.candidate.cudaLine == 5); // line numbers stay those of the answer

    ParseResult noCheck = parseAnswer(replaceAll(g, "p: Dict[str, Tensor]) ->", "w: Tensor) ->"), {});
    CHECK(noCheck.ok); // an empty expected signature is not checked
}

TEST_CASE("launch sites")
{
    const std::string py = "def helper(y: Tensor, n: int):\n"
                           "    kb.launch_smem('k2', [n], [128], 4096, y, n)\n"
                           "def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n"
                           "    s = \"kb.launch('not_a_launch')\"\n"
                           "    kb.launch(\n"
                           "        \"k1\", [1, 2], [32, 4], x)\n"
                           "    name = \"k1\"\n"
                           "    kb . launch(name, [1], [1], x)\n"
                           "    return x\n";
    const std::string cuda = "extern \"C\" {\n"
                             "__global__ void k1(float* x) {}\n"
                             "__global__ void k2(float* y, int n) { extern __shared__ float s[]; }\n"
                             "}\n";
    ParseResult r = parseAnswer("```cuda\n" + cuda + "```\n```python\n" + py + "```\n", kSig);
    INFO((r.error ? r.error->message : std::string()));
    REQUIRE(r.ok);
    const auto& l = r.candidate.launches;
    REQUIRE(l.size() == 3);
    CHECK(l[0].kernel == "k2");
    CHECK(l[0].smem);
    CHECK(l[0].line == 2);
    CHECK(l[1].kernel == "k1");
    CHECK(l[1].line == 5);
    CHECK(l[2].kernel.empty()); // not a literal
    REQUIRE(r.candidate.kernels.size() == 2);
    CHECK(r.candidate.kernels[0].externC);
    CHECK(r.candidate.kernels[1].externC);
}

TEST_CASE("findKernels")
{
    const std::string src = "#include <cuda_fp16.h>\n"
                            "#define BLOCK 256 \\\n"
                            "   /* __global__ void fake() */\n"
                            "// __global__ void commented(float* x)\n"
                            "/* extern \"C\" __global__ void alsoCommented() {} */\n"
                            "__device__ float sq(float v) { return v * v; }\n"
                            "template <typename T> __global__ void tmpl(T* x) {}\n"
                            "extern \"C\" __global__ void __launch_bounds__(256, 2) k_a(\n"
                            "    const float* __restrict__ x, float* __restrict__ y, unsigned int n, size_t m,\n"
                            "    double d, __half h, float arr[], MyStruct s, std::int64_t z) {\n"
                            "  if (threadIdx.x == 0) printf(\"__global__\\n\");\n"
                            "}\n"
                            "__global__ void k_b(void) {}\n"
                            "extern \"C\" __global__ void k_c(int);\n"
                            "extern \"C\" __global__ void k_c(int n) {}\n";
    std::vector<KernelDecl> k = findKernels(src);
    REQUIRE(k.size() == 3);
    CHECK(k[0].name == "k_a");
    CHECK(k[0].externC);
    CHECK(k[0].line == 8);
    REQUIRE(k[0].params.size() == 9);
    CHECK(k[0].params[0].type == "const float* __restrict__");
    CHECK(k[0].params[0].name == "x");
    CHECK(k[0].params[0].kind == KernelParam::Pointer);
    CHECK(k[0].params[0].bytes == 8);
    CHECK(k[0].params[2].kind == KernelParam::Int);
    CHECK(k[0].params[2].bytes == 4);
    CHECK(k[0].params[3].bytes == 8);
    CHECK(k[0].params[4].kind == KernelParam::Float);
    CHECK(k[0].params[4].bytes == 8);
    CHECK(k[0].params[5].kind == KernelParam::Other);
    CHECK(k[0].params[5].bytes == 2);
    CHECK(k[0].params[6].kind == KernelParam::Pointer);
    CHECK(k[0].params[6].name == "arr");
    CHECK(k[0].params[7].kind == KernelParam::Other);
    CHECK(k[0].params[7].bytes == 0);
    CHECK(k[0].params[8].kind == KernelParam::Int);
    CHECK(k[0].params[8].bytes == 8);
    CHECK(k[1].name == "k_b");
    CHECK_FALSE(k[1].externC);
    CHECK(k[1].params.empty());
    CHECK(k[2].name == "k_c"); // prototype and definition count once
    CHECK(k[2].line == 15);
    REQUIRE(k[2].params.size() == 1);
    CHECK(k[2].params[0].name == "n");
}

TEST_CASE("parseForwardSignature")
{
    std::string err;
    auto s = parseForwardSignature(
        "import torch\n\ndef forward(a: List[int], s: float = 1.0, t: Tuple[int,int]=(1, 2)):\n  pass\n", &err);
    CHECK(err.empty());
    REQUIRE(s.size() == 3);
    CHECK(s[0].name == "a");
    CHECK(s[0].type == "List[int]");
    CHECK(s[1].type == "float");
    CHECK(s[2].type == "Tuple[int, int]");

    s = parseForwardSignature("def forward():\n  return 1\n", &err);
    CHECK(err.empty());
    CHECK(s.empty());

    s = parseForwardSignature("def forward_helper(x):\n  pass\n", &err);
    CHECK(s.empty());
    CHECK(err.find("no top-level def forward") != std::string::npos);

    s = parseForwardSignature("def forward(x: Tensor,\n", &err);
    CHECK(err.find("never closed") != std::string::npos);

    s = parseForwardSignature("s = '''\ndef forward(y: int):\n'''\ndef forward(x: Tensor):\n  pass\n", &err);
    REQUIRE(s.size() == 1); // the one in a string does not count
    CHECK(s[0].name == "x");

    CHECK(formatSignature(kSig) == "def forward(x: Tensor, p: Dict[str, Tensor])");
}

// The parser's scans are linear and it keeps no recursion whose depth the answer sets: every shape
// at the size limit returns (the ctest TIMEOUT is what fails the quadratic scans of old: 1 MiB of
// "__global__ " took minutes) and gives the same results a short answer would.
TEST_CASE("answers of the largest size in adversarial shapes are parsed")
{
    for (const auto& [name, answer] : test::answerShapes()) {
        CAPTURE(name);
        REQUIRE(answer.size() <= kMaxAnswerBytes);
        const ParseResult r = parseAnswer(answer, kSig);
        CHECK((r.ok || r.error.has_value()));
        (void)findKernels(r.candidate.cuda);
    }
}

TEST_CASE("kernels and launches found in answers of the largest size")
{
    const auto shapes = test::answerShapes();
    auto answer = [&](const std::string& name) {
        for (const auto& s : shapes)
            if (s.first == name)
                return s.second;
        FAIL("no shape " << name);
        return std::string();
    };
    // every copy of the realistic answer is a distinct extern "C" kernel launched once, in order
    ParseResult r = parseAnswer(answer("realistic answer repeated"), kSig);
    REQUIRE(r.ok);
    REQUIRE(r.candidate.kernels.size() > 1000);
    CHECK(r.candidate.launches.size() == r.candidate.kernels.size());
    CHECK(r.candidate.kernels.back().name == "bias_relu_" + std::to_string(r.candidate.kernels.size() - 1));
    CHECK(r.candidate.kernels.back().line == 5 * static_cast<int>(r.candidate.kernels.size()) - 3);
    CHECK(r.candidate.kernels.back().params.size() == 5);
    CHECK(r.candidate.launches.back().line == static_cast<int>(r.candidate.launches.size()) + 1);

    // one launch a line: the line numbers count on
    r = parseAnswer(answer("kb.launch(\"k\") lines"), kSig);
    REQUIRE(r.ok);
    REQUIRE(r.candidate.launches.size() > 10000);
    for (size_t i = 0; i < r.candidate.launches.size(); i += 997)
        CHECK(r.candidate.launches[i].line == int(i) + 2);

    // packed on one line: each kb.launch( is a site, all on python line 2
    r = parseAnswer(answer("kb.launch( packed"), kSig);
    REQUIRE(r.ok);
    CHECK(r.candidate.launches.size() > 100000);
    CHECK(r.candidate.launches.back().line == 2);

    // "__global__ __global__ ..." holds no kernel; prototypes of one name count once
    r = parseAnswer(answer("__global__ repeated"), kSig);
    CHECK(r.candidate.kernels.empty());
    r = parseAnswer(answer("__global__ void k() repeated (prototypes, no body)"), kSig);
    REQUIRE(r.candidate.kernels.size() == 1);
    CHECK(r.candidate.kernels[0].name == "k");

    // an unclosed parameter list is no kernel; a deep but closed one is, with one parameter
    r = parseAnswer(answer("( in a kernel signature"), kSig);
    CHECK(r.candidate.kernels.empty());
    r = parseAnswer(answer("nested ( ) in a kernel signature"), kSig);
    CHECK(r.candidate.kernels.empty()); // a single ')' closes only the innermost '('
    r = parseAnswer(answer("[ in a kernel signature"), kSig);
    CHECK(r.candidate.kernels.empty());

    // unclosed brackets in def forward are reported, not followed
    r = parseAnswer(answer("( in def forward"), kSig);
    REQUIRE(r.error);
    CHECK(r.error->code == "missing_forward");
    CHECK(r.error->message.find("never closed") != std::string::npos);
}

TEST_CASE("deeply nested but balanced brackets in a kernel signature and in forward")
{
    const std::string deep = std::string(200000, '(') + std::string(200000, ')');
    std::string cuda = "extern \"C\" __global__ void k(float* a" + std::string(100000, '[') + std::string(100000, ']') +
                       ", int n = " + deep + ") {}\n";
    auto kernels = findKernels(cuda);
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0].name == "k");
    REQUIRE(kernels[0].params.size() == 2);
    CHECK(kernels[0].params[0].kind == KernelParam::Pointer);
    CHECK(kernels[0].params[1].name == "n");

    std::string err;
    auto sig = parseForwardSignature("def forward(x: Tensor, s: float = " + deep + "):\n  return x\n", &err);
    CHECK(err.empty());
    REQUIRE(sig.size() == 2);
    CHECK(sig[1].name == "s");
}

// Reasoning models' responses (core/protocol/modeltext.h): the answer follows the reasoning, and
// drafts written while thinking are not it, in either format; lines stay the response's.
TEST_CASE("a reasoning section before the answer")
{
    const std::string draftNative = "```cuda\nextern \"C\" __global__ void draft(float* y) {}\n```\n";
    const std::string thinking = "<think>\nThe epilogue is memory-bound. A first try:\n" + draftNative +
                                 "\nNo: fuse the bias too.\n</think>\n\n";
    const ParseResult opened = parseAnswer(thinking + good(), kSig);
    REQUIRE(opened.ok);
    CHECK(opened.candidate.kernels.size() == 1);
    CHECK(opened.candidate.kernels.at(0).name == "bias_relu");
    const int before = int(std::count(thinking.begin(), thinking.end(), '\n'));
    CHECK(opened.candidate.cudaLine == before + 4); // "Here is the kernel.", a blank line, the fence

    // The chat template opened the section (DeepSeek-R1's distills): only the closing tag comes.
    const std::string closedOnly = "The epilogue is memory-bound.\n" + draftNative + "  </think>\n" + good();
    const ParseResult templ = parseAnswer(closedOnly, kSig);
    REQUIRE(templ.ok);
    CHECK(templ.candidate.kernels.at(0).name == "bias_relu");
    CHECK(templ.candidate.cudaLine == 9);

    // Cut off while thinking: reasoning only, an honest format error of its own.
    const ParseResult cut = parseAnswer("<think>\nLet me plan the kernel.\n" + draftNative, kSig);
    REQUIRE(cut.error);
    CHECK(cut.error->code == "reasoning_unfinished");
    CHECK(cut.error->line == 1);
    // An empty section (thinking switched off) is nothing; other text around tags is the answer's.
    CHECK(parseAnswer("<think>\n\n</think>\n\n" + good(), kSig).ok);
    CHECK(parseAnswer("<THINKING>plan</THINKING>" + good(), kSig).ok);
    const ParseResult mention = parseAnswer(good() + "\nI used no </think> tags.\n", kSig);
    CHECK(mention.ok);
    CHECK(mention.candidate.cudaLine == 4);
    // An opening tag later in the text is not a section: the draft stays part of the answer.
    CHECK(parseAnswer("Hi <think>\n" + draftNative + "</think>\n" + good(), kSig).error->code == "duplicate_block");

    // KernelBench's format: the module after the thinking, not the draft inside it.
    const std::string draftModule = "```python\nclass ModelNew(nn.Module):\n    pass  # draft\n```\n";
    const std::string module = "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass  # final\n```\n";
    const std::string response = "<think>\n" + draftModule + "</think>\n" + module;
    CHECK(detectAnswerFormat(response) == AnswerFormat::KernelBench);
    const KernelBenchSource kb = extractKernelBenchSource(response);
    REQUIRE(kb.ok);
    CHECK(kb.source.find("final") != std::string::npos);
    CHECK(kb.modelNewBlocks == 1);
    CHECK(kb.line == 8);
    // A ModelNew only drafted while thinking does not make the answer KernelBench's.
    CHECK(detectAnswerFormat("<think>\n" + draftModule + "</think>\n" + good()) == AnswerFormat::Native);
    const KernelBenchSource kbCut = extractKernelBenchSource("<think>\n" + draftModule);
    REQUIRE(kbCut.error);
    CHECK(kbCut.error->code == "reasoning_unfinished");
    // A generation file without fences: the module is what follows the section.
    const KernelBenchSource bare =
        extractKernelBenchSource("<think>plan</think>\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n");
    REQUIRE(bare.ok);
    CHECK(bare.source.find("plan") == std::string::npos);
    CHECK(bare.source.find("class ModelNew") != std::string::npos);
}

// KernelBench takes whatever the module binds to ModelNew: a class statement or a top-level alias.
TEST_CASE("ModelNew bound by an assignment")
{
    const std::string alias =
        "```python\nimport torch\nclass Model(torch.nn.Module):\n    pass\n\nModelNew = Model\n```\n";
    CHECK(detectAnswerFormat(alias) == AnswerFormat::KernelBench);
    const KernelBenchSource kb = extractKernelBenchSource(alias);
    REQUIRE(kb.ok);
    CHECK(kb.source.find("ModelNew = Model") != std::string::npos);
    CHECK(extractKernelBenchSource("```python\nModelNew: type = Model\n```\n").ok);
    // A comparison or a use of the name is not a binding; nor is an indented (local) assignment.
    CHECK_FALSE(extractKernelBenchSource("```python\nModelNew == Model\n```\n").ok);
    CHECK_FALSE(extractKernelBenchSource("```python\nx = ModelNew\n```\n").ok);
    CHECK_FALSE(extractKernelBenchSource("```python\ndef f():\n    ModelNew = 1\n```\n").ok);
}

// QwQ-32B's habit in Kernel-Coder's runs: the code only inside the thinking, a summary after it.
TEST_CASE("code written only while reasoning is its own format error, in both formats")
{
    const std::string module = "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```\n";
    const std::string summary = "The provided solution fuses the epilogue.\n";
    const KernelBenchSource kb = extractKernelBenchSource("Plan.\n" + module + "</think>\n\n" + summary);
    REQUIRE(kb.error);
    CHECK(kb.error->code == "code_only_in_reasoning");
    CHECK(kb.error->message.find("</think>") != std::string::npos);
    const ParseResult native = parseAnswer("<think>\n" + good() + "</think>\n" + summary, kSig);
    REQUIRE(native.error);
    CHECK(native.error->code == "code_only_in_reasoning");
    // Nothing after the thinking and no code in it: the usual errors.
    CHECK(extractKernelBenchSource("<think>plan</think>\n" + summary).error->code == "no_model_new");
    CHECK(parseAnswer("<think>plan</think>\n" + summary, kSig).error->code == "no_code_block");
}
