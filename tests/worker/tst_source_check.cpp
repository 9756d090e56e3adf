// Source pre-checks (sourcecheck.cpp): the shape bounds of host code, import blanking, and the
// CUDA include check against a toolkit folder made for the test. No torch, no NVRTC.
#include "worker/answers/sourcecheck.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace kwb;

namespace {

const std::string kSig = "def forward(x: Tensor) -> Tensor:\n";

std::string repeat(const std::string& s, int n)
{
    std::string out;
    out.reserve(s.size() * std::size_t(n));
    for (int i = 0; i < n; ++i)
        out += s;
    return out;
}

std::string issueCode(const std::string& py)
{
    auto r = checkHostCodeShape(py);
    return r ? r->code + ": " + r->message : std::string();
}

// A fake toolkit: <dir>/toolkit_a.h, <dir>/sub/toolkit_b.h, and a symlink leading out of it;
// add() writes more headers (under existing folders) that the destructor removes too.
struct FakeToolkit
{
    std::string dir;
    std::vector<std::string> made;
    FakeToolkit()
    {
        char tmpl[] = "/tmp/kwb_tst_source_check_XXXXXX";
        dir = ::mkdtemp(tmpl);
        ::mkdir((dir + "/sub").c_str(), 0755);
        add("toolkit_a.h", "// a\n");
        add("sub/toolkit_b.h", "// b\n");
        (void)::symlink("/etc/passwd", (dir + "/leak.h").c_str());
    }
    void add(const std::string& rel, const std::string& text)
    {
        std::ofstream(dir + "/" + rel) << text;
        made.push_back(dir + "/" + rel);
    }
    ~FakeToolkit()
    {
        std::remove((dir + "/leak.h").c_str());
        for (const std::string& f : made)
            std::remove(f.c_str());
        ::rmdir((dir + "/sub").c_str());
        ::rmdir(dir.c_str());
    }
};

std::string cudaProblem(const std::string& src, const FakeToolkit& tk)
{
    auto r = checkCudaSource(src, {tk.dir});
    return r ? r->message : std::string();
}

const char* kKernel = "extern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n";

} // namespace

TEST_CASE("host code shape: the inputs that crashed the worker get a clean refusal, at the sizes seen")
{
    // 10,000 nested parentheses, 30,000 `+` terms, 1 MiB of `[`, and 30,000-character statements.
    const std::string parens = kSig + "    return " + repeat("(", 10000) + "x" + repeat(")", 10000) + "\n";
    CHECK(issueCode(parens).find("nests brackets deeper than 100") != std::string::npos);
    std::string sum = kSig + "    return x";
    for (int i = 1; i < 30000; ++i)
        sum += " + x";
    CHECK(issueCode(sum + "\n").find("more than 1000 operators") != std::string::npos);
    CHECK(issueCode(kSig + "    return x\n" + std::string(1 << 20, '[')).find("nests brackets") != std::string::npos);
    CHECK(issueCode("import " + std::string(30000, 'a') + "\n" + kSig + "    return x\n").find("longer than 20000") !=
          std::string::npos);
    // unary chains, keyword operators, attribute and call chains, ternaries, deep blocks
    CHECK(issueCode(kSig + "    return " + repeat("- ", 6000) + "x\n").find("operators") != std::string::npos);
    CHECK(issueCode(kSig + "    return " + std::string(6000, '-') + "x\n").find("operators") != std::string::npos);
    CHECK(issueCode(kSig + "    b = " + repeat("not ", 12000) + "True\n").find("operators") != std::string::npos);
    CHECK(issueCode(kSig + "    return x" + repeat(".relu()", 15000) + "\n").find("operators") != std::string::npos);
    CHECK(issueCode(kSig + "    return x" + repeat("[0]", 14000) + "\n").find("operators") != std::string::npos);
    CHECK(issueCode(kSig + "    return " + repeat("x if True else ", 21000) + "x\n").find("operators") !=
          std::string::npos);
    std::string blocks = kSig;
    for (int i = 0; i < 60; ++i)
        blocks += std::string(std::size_t(4 + i), ' ') + "if True:\n";
    blocks += std::string(64, ' ') + "x = x + 1\n    return x\n";
    auto deep = checkHostCodeShape(blocks);
    REQUIRE(deep);
    CHECK(deep->message.find("nests blocks deeper than 50 levels") != std::string::npos);
    CHECK(deep->line == 52); // the 51st nested block
    // an elif chain nests like blocks (3,250 branches crashed the worker)
    std::string chain = kSig + "    if x:\n        x = x + 1\n";
    for (int i = 0; i < 3250; ++i)
        chain += "    elif x:\n        x = x + 1\n";
    chain += "    else:\n        x = x + 2\n    return x\n";
    auto elifs = checkHostCodeShape(chain);
    REQUIRE(elifs);
    CHECK(elifs->message.find("each elif nests one more") != std::string::npos);
    CHECK(elifs->line == 3 + 2 * 49); // the body of the 49th elif: forward, 49 elifs, the body
    // chains that end do not add up
    std::string chains = kSig;
    for (int i = 0; i < 100; ++i)
        chains += "    if x:\n        x = x + 1\n    elif x:\n        x = x + 1\n    elif x:\n        x = x + 1\n    "
                  "else:\n        x = x\n    x = x + 1\n";
    CHECK(issueCode(chains + "    return x\n") == "");
    // functions, nested ones included
    CHECK(issueCode(repeat("def f(x: int) -> int:\n    def g(y: int) -> int:\n        return y\n    return x\n", 51))
              .find("defines more than 100 functions") != std::string::npos);
    CHECK(issueCode(repeat("def f(x: int) -> int:\n    return x\n", 100)) == "");
    // a statement continued over many lines inside brackets is still one statement
    CHECK(issueCode(kSig + "    y = [\n" + repeat("        x + 1,\n", 1200) + "    ]\n    return x\n")
              .find("operators") != std::string::npos);
}

TEST_CASE("host code shape: honest code passes, up to the limits; strings and comments do not count")
{
    CHECK(issueCode(kSig + "    return torch.relu(x) + 1.0\n") == "");
    // every limit reached at once, but none exceeded
    std::string atLimits = kSig;
    for (int i = 0; i < 49; ++i)
        atLimits += std::string(std::size_t(4 + i), ' ') + "if True:\n";
    std::string expr = repeat("(", 99) + "x" + repeat(")", 99); // 99 operators (the brackets)
    for (int i = 0; i < 400; ++i)
        expr += " + x"; // 400
    atLimits += std::string(53, ' ') + "x = " + expr + "\n    return x\n";
    CHECK(issueCode(atLimits) == "");
    // brackets, operators and keywords inside strings and comments are text
    CHECK(issueCode(kSig + "    s = \"" + std::string(5000, '(') + "\"  # " + std::string(5000, '[') + "\n    t = '''" +
                    repeat("- not ", 2000) + "'''\n    return x\n") == "");
    // separate statements each have their own count
    CHECK(issueCode(kSig + repeat("    x = x + x + x + x\n", 5000) + "    return x\n") == "");
}

TEST_CASE("import lines are blanked by a linear scan, keeping line numbers")
{
    const std::string src =
        "import torch\n  from torch import nn\nimportant = 1\nfrom_x = 2\nimport\n" + kSig + "    return x";
    CHECK(blankImportLines(src) == "\n\nimportant = 1\nfrom_x = 2\nimport\n" + kSig + "    return x");
    // The std::regex it replaces overflowed the stack on a 30,000-character import line.
    const std::string huge = "import " + std::string(1 << 20, 'a') + "\n" + kSig;
    CHECK(blankImportLines(huge) == "\n" + kSig);
}

TEST_CASE("cuda includes: only existing files under the toolkit folders, by plain relative names")
{
    FakeToolkit tk;
    CHECK(cudaProblem(std::string("#include <toolkit_a.h>\n#include \"sub/toolkit_b.h\"\n") + kKernel, tk) == "");
    CHECK(cudaProblem(std::string("#  include   <toolkit_a.h>   // fine\n") + kKernel, tk) == "");

    struct Case
    {
        const char* src;
        const char* why;
    };
    const Case refused[] = {
        {"#include \"/etc/passwd\"\n", "#include \"/etc/passwd\" is outside the CUDA toolkit's include folders"},
        {"#include \"/proc/self/environ\"\n", "\"/proc/self/environ\" is outside"},
        {"#include \"../../../etc/passwd\"\n", "\"../../../etc/passwd\" is outside"},
        {"#include <sub/../toolkit_a.h>\n", "is outside"},
        {"#include <no_such_header.h>\n", "<no_such_header.h> is outside"},
        {"#include <leak.h>\n", "<leak.h> is outside"}, // a symlink leading out of the folder
        {"#define P \"/etc/passwd\"\n#include P\n", "computed includes"},
        {"#define P <toolkit_a.h>\n#include P\n", "computed includes"},
        {"#include \"toolkit_a.h\" extra\n", "computed includes"},
        {"#inc\\\nlude \"/etc/passwd\"\n", "\"/etc/passwd\" is outside"},
        {"#include \\\n\"/etc/passwd\"\n", "\"/etc/passwd\" is outside"},
        {"#inc\\  \nlude \"/etc/passwd\"\n", "#inc is refused"}, // backslash, spaces, newline: read both ways
        {"// x \\  \n#include \"/etc/passwd\"\n", "is outside"},
        {"%:include \"/etc/passwd\"\n", "is outside"},
        {"%: include <../x>\n", "is outside"},
        {"#/* c */include /* c */ \"/etc/passwd\"\n", "is outside"},
        {"# /* a\n */ include \"/etc/passwd\"\n", "is outside"}, // the comment's newline does not end the directive
        {"#include_next <toolkit_a.h>\n", "#include_next is refused"},
        {"#import \"/etc/passwd\"\n", "#import is refused"},
        {"#embed \"/etc/passwd\"\n", "#embed is refused"},
        {"#line 1 \"/etc/passwd\"\n", "#line is refused"},
        {"# 1 \"/etc/passwd\"\n", "is refused"},
        {"#if __has_include(\"/etc/passwd\")\n#endif\n", "__has_include: \"/etc/passwd\" is outside"},
        {"#if __has_include(P)\n#endif\n", "__has_include must test a header"},
        {"#if __has_include_next(<toolkit_a.h>)\n#endif\n", "__has_include_next must test"},
        {"_Pragma(\"include_alias(\\\"a\\\", \\\"/etc/passwd\\\")\")\n", "_Pragma is refused"},
        {"#pragma include_alias(\"a.h\", \"/etc/passwd\")\n", "concerns includes"},
        {"?\?=include \"/etc/passwd\"\n", "trigraph"},
        {"/* never closed\n#include \"/etc/passwd\"\n", "unterminated /* comment"},
        {"const char* s = R\"x(never closed\n#include \"/etc/passwd\"\n", "unterminated raw string"},
    };
    for (const auto& c : refused) {
        const std::string src = std::string(c.src) + kKernel;
        CAPTURE(src);
        const std::string why = cudaProblem(src, tk);
        CAPTURE(why);
        CHECK(why.find(c.why) != std::string::npos);
    }
    // line numbers are the source's, splices and comments included
    auto r = checkCudaSource(
        std::string("// one\n/* two\n three */\n#define A \\\n  1\n#include \"/etc/passwd\"\n") + kKernel, {tk.dir});
    REQUIRE(r);
    CHECK(r->line == 6);
    CHECK(r->code == "include_refused");

    // Text that only looks like a directive: literals, raw strings, comments, digit separators.
    const char* fine[] = {
        "const char* s = \"#include \\\"/etc/passwd\\\"\";\n",
        "const char* s = R\"x(\n#include \"/etc/passwd\"\n)x\";\n",
        "// #include \"/etc/passwd\"\n",
        "/*\n#include \"/etc/passwd\"\n*/\n",
        "const long long n = 1'000'000; const char c = '\"';\n",
        "#pragma unroll\n#define SQ(x) ((x) * (x))\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n#elif "
        "1\n#else\n#endif\n#\n",
        "#if __has_include(<toolkit_a.h>)\n#endif\n",
        "#define UNROLL _Pragma(\"unroll\")\n",
    };
    for (const char* f : fine) {
        const std::string src = std::string(f) + kKernel;
        CAPTURE(src);
        CHECK(cudaProblem(src, tk) == "");
    }
}

TEST_CASE("cuda includes: a quoted name that exists in the working directory is refused")
{
    // NVRTC searches the working directory (the directory of "candidate.cu") first for "name".
    FakeToolkit tk;
    char cwd[4096];
    REQUIRE(::getcwd(cwd, sizeof cwd));
    const std::string probe = "kwb_tst_source_check_cwd_probe.h";
    std::ofstream(tk.dir + "/" + probe) << "// toolkit copy\n";
    std::ofstream(probe) << "secret\n";
    CHECK(cudaProblem("#include \"" + probe + "\"\n" + kKernel, tk).find("working directory") != std::string::npos);
    CHECK(cudaProblem("#include <" + probe + ">\n" + kKernel, tk) == ""); // <name> skips the working directory
    std::remove(probe.c_str());
    CHECK(cudaProblem("#include \"" + probe + "\"\n" + kKernel, tk) == "");
    std::remove((tk.dir + "/" + probe).c_str());
}

// Issue 32 (5): a toolkit header's own computed #include, steered by a macro the answer defines.
// On CUDA 13.0, `#define THRUST_HOST_SYSTEM 99`, `#define __THRUST_HOST_SYSTEM_NAMESPACE
// ../../../../proc/self/environ>` and `#include <thrust/iterator/detail/host_system_tag.h>` put
// the worker's environment into the compile log (tst_nvrtc has it on the real toolkit).
TEST_CASE("cuda includes: macros that a toolkit header's computed #include is built from may not be defined")
{
    FakeToolkit tk;
    tk.add("sub/computed.h", "#pragma once\n"
                             "#define FAKE_ROOT fake/FAKE_NS\n"
                             "#define FAKE_HDR <FAKE_ROOT/detail/x.h>\n"
                             "#  include /* the system's */ FAKE_HDR\n"
                             "#ifdef FAKE_OPT_HEADER\n"
                             "%:  include FAKE_OPT_\\\nHEADER\n" // a digraph and a splice
                             "#endif\n"
                             "#define FAKE_NS_FOR(s) s\n" // not used in an include: free
                             "#define _FAKE_HAS(x) __has_include(x)\n"
                             "#define _FAKE_HAS2(x) _FAKE_HAS(x)\n"
                             "// #include FAKE_COMMENTED\n"
                             "const char* s = R\"x(\n#include FAKE_IN_RAW_STRING\n)x\";\n");
    const ToolkitIncludeMacros& m = toolkitIncludeMacros({tk.dir});
    CHECK(m.files >= 3); // and /etc/passwd through leak.h: symlinks are followed
    REQUIRE(m.sites.size() == 2);
    CHECK(m.sites[0] == "sub/computed.h:4: #include FAKE_HDR");
    CHECK(m.sites[1] == "sub/computed.h:6: #include FAKE_OPT_HEADER");
    for (const char* name : {"FAKE_HDR", "FAKE_OPT_HEADER", "FAKE_ROOT", "FAKE_NS", "fake", "detail", "x", "h"}) {
        CAPTURE(name);
        CHECK(m.steering.count(name) == 1);
    }
    for (const char* name : {"FAKE_NS_FOR", "FAKE_COMMENTED", "FAKE_IN_RAW_STRING", "s", "_FAKE_HAS"}) {
        CAPTURE(name);
        CHECK(m.steering.count(name) == 0);
    }
    CHECK(m.steering.at("FAKE_NS") == "sub/computed.h:4: #include FAKE_HDR");
    CHECK(m.fileTests == std::set<std::string>{"_FAKE_HAS", "_FAKE_HAS2"});
    CHECK_FALSE(m.pasteAny);
    CHECK(&toolkitIncludeMacros({tk.dir}) == &m); // scanned once

    struct Case
    {
        const char* src;
        const char* why;
    };
    const Case refused[] = {
        {"#define FAKE_OPT_HEADER \"/etc/passwd\"\n#include <sub/computed.h>\n",
         "#define FAKE_OPT_HEADER is refused: the CUDA toolkit builds #include file names from FAKE_OPT_HEADER "
         "(sub/computed.h:6: #include FAKE_OPT_HEADER)"},
        {"#define FAKE_NS ../../../../../proc/self/environ>\n#include <sub/computed.h>\n",
         "#define FAKE_NS is refused"},
        {"#include <sub/computed.h>\n#undef FAKE_ROOT\n#define FAKE_ROOT /etc/passwd>\n",
         "#undef FAKE_ROOT is refused"},
        {"#define detail ../../../../etc/passwd>\n", "#define detail is refused"}, // a word of a macro's body
        {"#define h h/../../x\n", "#define h is refused"},
        {"#define fake(a) a\n", "#define fake is refused"}, // function-like too
        {"%:define FAKE_NS x\n", "#define FAKE_NS is refused"},
        {"#  define /* c */ FAKE_NS x\n", "#define FAKE_NS is refused"},
        {"#def\\\nine FAKE_NS x\n", "#define FAKE_NS is refused"},
        {"#define FAKE_\\\nNS x\n", "#define FAKE_NS is refused"},
        {"#if 0\n#define FAKE_NS x\n#endif\n", "#define FAKE_NS is refused"}, // conditions are not evaluated
        {"#if _FAKE_HAS(\"/etc/passwd\")\n#endif\n", "_FAKE_HAS is refused"},
        {"#define Q(p) _FAKE_HAS2(p)\n", "_FAKE_HAS2 is refused"},
    };
    for (const auto& c : refused) {
        const std::string src = std::string(c.src) + kKernel;
        CAPTURE(src);
        const std::string why = cudaProblem(src, tk);
        CAPTURE(why);
        CHECK(why.find(c.why) != std::string::npos);
    }
    auto r = checkCudaSource(std::string("// 1\n#define N 1024\n#define FAKE_NS x\n") + kKernel, {tk.dir});
    REQUIRE(r);
    CHECK(r->line == 3);
    CHECK(r->code == "include_refused");

    const char* fine[] = {
        "#define N 1024\n#define BLOCK 256\n#define FAKE_NS_2 1\n#define hh 1\n#define FAKE_NS_FOR(x) x\n",
        "#include <sub/computed.h>\n", // including the header is fine
        "// #define FAKE_NS x\nconst char* s = \"#define FAKE_NS x\";\n",
        "#define USE(x) x\nint FAKE_NS_use = USE(3);\n",
        "#ifdef FAKE_NS\n#endif\n#if defined(FAKE_ROOT)\n#endif\n", // testing them is fine
    };
    for (const char* f : fine) {
        const std::string src = std::string(f) + kKernel;
        CAPTURE(src);
        CHECK(cudaProblem(src, tk) == "");
    }
}

TEST_CASE("cuda includes: names made by ## in a toolkit computed include are refused by prefix and suffix")
{
    FakeToolkit tk;
    tk.add("sub/pasted.h", "#define P_HDR <P_PRE_ ## P_NAME.h>\n#include P_HDR\n");
    const ToolkitIncludeMacros& m = toolkitIncludeMacros({tk.dir});
    CHECK(m.pastePrefixes == std::set<std::string>{"P_PRE_"});
    CHECK(m.pasteSuffixes == std::set<std::string>{"P_NAME"});
    CHECK_FALSE(m.pasteAny);
    CHECK(cudaProblem(std::string("#define P_PRE_P_NAME x\n") + kKernel, tk).find("is refused") != std::string::npos);
    CHECK(cudaProblem(std::string("#define P_PRE_other x\n") + kKernel, tk).find("P_PRE_##") != std::string::npos);
    CHECK(cudaProblem(std::string("#define MY_P_NAME x\n") + kKernel, tk).find("##P_NAME") != std::string::npos);
    CHECK(cudaProblem(std::string("#define P_PR x\n#define NAME x\n") + kKernel, tk) == "");

    FakeToolkit tk2;
    tk2.add("sub/joined.h", "#define JOIN(a, b) a ## b\n#define Q_HDR <JOIN(q_, r).h>\n#include Q_HDR\n");
    const ToolkitIncludeMacros& m2 = toolkitIncludeMacros({tk2.dir});
    CHECK(m2.pasteAny); // parameters pasted: any name that begins with a word of the set
    CHECK(cudaProblem(std::string("#define q_r x\n") + kKernel, tk2).find("is refused") != std::string::npos);
    CHECK(cudaProblem(std::string("#define rest x\n") + kKernel, tk2).find("macro arguments") != std::string::npos);
    CHECK(cudaProblem(std::string("#define N 4\n") + kKernel, tk2) == "");
}

// Issue 32 (5): the checker must never read a raw string where NVRTC reads code. NVRTC 13.0
// (measured): a delimiter over 16 characters is "not found within 16 characters -- raw string
// indicator ignored" and the lines after are code (the 17-character one passed the checker and
// NVRTC printed the included file); a space, tab, control character, backslash or non-ASCII byte
// is "invalid character in raw string delimiter"; `"` it accepts. It splices a backslash, any
// carriage returns and a newline, in raw strings too; not a backslash, blanks and a newline.
TEST_CASE("cuda raw strings: malformed delimiters are refused, splices are read as NVRTC reads them")
{
    FakeToolkit tk;
    const std::string inc = "\n#include \"/etc/passwd\"\n";
    struct Case
    {
        std::string src;
        const char* why;
    };
    const std::string d16 = "abcdefghijklmnop", d17 = d16 + "q", d40 = std::string(40, 'z');
    const Case refused[] = {
        {"const char* s = R\"" + d17 + "(" + inc + ")" + d17 + "\";\n", "delimiter NVRTC does not accept"},
        {"const char* s = R\"" + d40 + "(" + inc + ")" + d40 + "\";\n", "delimiter NVRTC does not accept"},
        {"auto s = u8R\"" + d17 + "(" + inc + ")" + d17 + "\";\n", "(u8R\"abcdefghijklmnopq("},
        {"auto s = LR\"" + d17 + "(" + inc + ")" + d17 + "\";\n", "(LR\""},
        {"auto s = uR\"" + d17 + "(" + inc + ")" + d17 + "\";\n", "(uR\""},
        {"auto s = UR\"" + d17 + "(" + inc + ")" + d17 + "\";\n", "(UR\""},
        {"const char* s = R\"a b(" + inc + ")a b\";\n", "delimiter NVRTC does not accept"},
        {"const char* s = R\"a\tb(" + inc + ")a\tb\";\n", "delimiter NVRTC does not accept"},
        {"const char* s = R\"a\x01"
         "b(" +
             inc +
             ")a\x01"
             "b\";\n",
         "delimiter NVRTC does not accept"},
        {"const char* s = R\"a\\b(" + inc + ")a\\b\";\n", "delimiter NVRTC does not accept"},
        {"const char* s = R\"a\"b(" + inc + ")a\"b\";\n", "delimiter NVRTC does not accept"},
        {"const char* s = R\"a\xc3\xa9(" + inc + ")a\xc3\xa9\";\n", "delimiter NVRTC does not accept"},
        {"const char* s = R\"ab\\\nc(" + inc + ")abc\";\n",
         "delimiter NVRTC does not accept"},                              // no splice in a delimiter
        {"const char* s = R\"x\";\n", "delimiter NVRTC does not accept"}, // no parenthesis
        {"const char* s = R\"x)" + inc + ")x\";\n", "delimiter NVRTC does not accept"},
        // `)x\` newline `"` ends the raw string for NVRTC, so the include after it is code
        {"const char* s = R\"x(\n)x\\\n\";" + inc + ")x\";\n", "\"/etc/passwd\" is outside"},
        // a backslash, two carriage returns and a newline splice for NVRTC: the string "abc
        // continues into the next line and the R"x( there is no raw string, so the include is code
        {"const char* s = \"abc\\\r\r\nR\"x(\";" + inc + ")x\";\n", "\"/etc/passwd\" is outside"},
        {"const char* s = \"abc\\\r\r\n\";\n#include \"/etc/passwd\"\n", "\"/etc/passwd\" is outside"},
        // a word character before R makes it no prefix: an ordinary string, the include is code
        {"int a$R\"x(" + inc + ")x\";\n", "\"/etc/passwd\" is outside"},
        {"int \xc3\xa9R\"x(" + inc + ")x\";\n", "\"/etc/passwd\" is outside"},
        {"const char* s = xR\"x(" + inc + ")x\";\n", "\"/etc/passwd\" is outside"},
        {"auto n = 1R\"x(" + inc + ")x\";\n", "\"/etc/passwd\" is outside"},
        // backslash, a form feed, newline: NVRTC does not splice it, others might: read both ways
        {"// c \\\f\n#include \"/etc/passwd\"\n", "\"/etc/passwd\" is outside"},
        {"#inc\\\f\nlude \"/etc/passwd\"\n", "#inc is refused"},
    };
    for (const auto& c : refused) {
        const std::string src = c.src + kKernel;
        CAPTURE(src);
        const std::string why = cudaProblem(src, tk);
        CAPTURE(why);
        CHECK(why.find(c.why) != std::string::npos);
    }
    auto r = checkCudaSource("// 1\n\nconst char* s = R\"" + d17 + "(" + inc + ")" + d17 + "\";\n" + kKernel, {tk.dir});
    REQUIRE(r);
    CHECK(r->line == 3);

    const std::string fine[] = {
        "const char* s = R\"(" + inc + ")\";\n",
        "const char* s = R\"" + d16 + "(" + inc + ")" + d16 + "\";\n",
        "const char* s = u8R\"cuda(" + inc + ")cuda\";\n",
        "const wchar_t* s = LR\"--(" + inc + ")--\";\n",
        "auto a = uR\"x(" + inc + ")x\"; auto b = UR\"x()x\";\n",
        "const char* s = R\"x(a )x b )y\" c" + inc + ")x\";\n",        // )x not followed by a quote
        "const char* s = R\"x(a\\\nb)x\";\n",                          // a splice inside the text
        "const char* s = R\"[]{}<>#%!=-+*/.,(a)[]{}<>#%!=-+*/.,\";\n", // 16 characters
        "const char* s = \"R\\\"x(\";\nconst char c = 'R';\n",
        "#define STR R\"x(\n#include \"/etc/passwd\"\n)x\"\n", // a raw string in a directive spans lines
        "#if 0\nR\"x(\n#else\n#include \"/etc/passwd\"\n#endif\n)x\"\n#endif\n", // also in a skipped group
        "const char* s = \"a\\\r\nb\";\n",                                       // backslash CR LF: a splice
    };
    for (const auto& f : fine) {
        const std::string src = f + kKernel;
        CAPTURE(src);
        CHECK(cudaProblem(src, tk) == "");
    }
}
