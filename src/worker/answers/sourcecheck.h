#pragma once
// Checks on a candidate's source text that run before any compiler sees it (docs/sandbox.md,
// "Before compiling"). Linear scans, no recursion, no torch, no NVRTC: the compilers' own front
// ends are recursive (deep nesting overflows the stack) and resolve #include on their own.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kwb {

struct SourceIssue
{
    std::string code;    // host_code_limit | include_refused
    std::string message; // written for the model: it goes back into the next prompt
    int line = 0;        // 1-based line within the checked source
};

// Bounds on the shape of host code, far above honest code (the 30 task references and the
// fixture candidates reach bracket depth 4, 19 operators in a statement as counted here,
// 213-character statements and 2 indentation levels) and far below what overflows the 8 MiB stack in TorchScript's
// recursive parser and emitter (measured: ~2,800 nested brackets, ~5,200 unary minus, ~8,700 `+` terms, ~1,400
// indentation levels, ~3,200 elif branches; docs/sandbox.md).
struct HostCodeLimits
{
    static constexpr int kMaxBracketDepth = 100;  // ( [ { open at once
    static constexpr int kMaxOperators = 1000;    // operators in one statement (logical line)
    static constexpr int kMaxLogicalLine = 20000; // characters in one statement
    static constexpr int kMaxBlockDepth = 50;     // nested blocks, each elif counting as one
    // Functions (nested ones too): compiling a call to a function defined later compiles that
    // one inside the call, so the frontend's recursion adds up along a call chain (compileScript
    // runs on a large stack for that; this bounds the sum). Honest answers have up to 8.
    static constexpr int kMaxFunctions = 100;
};

// The shape of TorchScript host code: bracket nesting, operators per statement (binary, unary,
// keyword operators, attribute access and calls/subscripts, so chains like `x.a.b.c` or
// `- - - x` count), statement length, block depth (indentation, plus elif chains) and the
// number of functions. Strings and comments are skipped.
std::optional<SourceIssue> checkHostCodeShape(const std::string& python);

// Blanks every `import ...` / `from ... import ...` line (the C++ frontend has none), keeping the
// line count so errors still point at the answer's lines. Linear.
std::string blankImportLines(const std::string& python);

// What the toolkit's own headers let an answer steer. Some toolkit headers build an #include's
// file name from macros (CUDA 13.0: 94 computed includes, all in cccl/thrust, e.g.
// `#include __THRUST_HOST_SYSTEM_TAG_HEADER`, `#include THRUST_MR_STD_MR_HEADER`). An answer that
// defines one of the macros such a name is made of, and then includes that header, makes NVRTC
// open any file and quote it in the compile log (`#define THRUST_HOST_SYSTEM 99` plus
// `#define __THRUST_HOST_SYSTEM_NAMESPACE ../../../../proc/self/environ>` did). Found by scanning
// every file under the include folders once per process (the headers present, any version):
// `steering` holds every identifier in the operand of a computed #include / #include_next /
// #import, and, transitively, every identifier in the replacement list of a toolkit #define of a
// name already in the set (function-like macros' parameters aside): any of them, defined by the
// answer, takes part in the file name.
struct ToolkitIncludeMacros
{
    std::vector<std::string> dirs;  // the include folders scanned
    std::size_t files = 0;          // files read
    std::vector<std::string> sites; // "cccl/thrust/mr/memory_resource.h:36: #include THRUST_MR_STD_MR_HEADER"
    std::map<std::string, std::string> steering; // name -> the computed include it takes part in (a site)
    // `##` in a macro of the set makes names that are written nowhere: a name beginning with a
    // prefix (the identifier left of ##) or ending with a suffix (right of it) is refused too, and
    // where a parameter is pasted, any name beginning with an identifier of the set (CUDA 13.0
    // has no such macro).
    std::set<std::string> pastePrefixes, pasteSuffixes;
    bool pasteAny = false;
    // Toolkit macros that expand to __has_include (13.0: _CCCL_HAS_INCLUDE): an answer may not
    // use them, since the check of `__has_include` operands only sees the answer's own spelling.
    std::set<std::string> fileTests;

    // Why the answer may not #define or #undef `name`; empty when it may.
    std::string whyRefused(const std::string& name) const;
};

// Scans `includeDirs` (recursively, symlinks followed once) the first time a folder list is
// asked for; later calls return the same object.
const ToolkitIncludeMacros& toolkitIncludeMacros(const std::vector<std::string>& includeDirs);

// Preprocessor-level check of a CUDA source. Allowed: `#include <name>` and `#include "name"`
// where name is relative, has no `..` component and is an existing file under one of
// `includeDirs` (quoted names must not also exist relative to the working directory, which
// NVRTC searches first for them). Refused: every other include form (computed includes,
// `#include_next`, `#import`, `#embed`), `__has_include` of anything else, `#line` and line
// markers, unknown directives, `_Pragma`/`#pragma` mentioning include, trigraphs, unterminated
// comments and raw strings, raw strings whose delimiter NVRTC would not take (then it reads
// their text as code), `#define`/`#undef` of a macro the toolkit's computed includes are built
// from and use of a toolkit macro that wraps __has_include (toolkitIncludeMacros). Comments,
// splices (backslash, any carriage returns, newline, as NVRTC splices them, raw strings
// included), string, character and raw string literals and the `%:` digraph are handled as the
// preprocessor does.
std::optional<SourceIssue> checkCudaSource(const std::string& cuda, const std::vector<std::string>& includeDirs);

} // namespace kwb
