#pragma once
// Checks on a candidate's source text that run before any compiler sees it (docs/sandbox.md,
// "Before compiling"). Linear scans, no recursion, no torch, no NVRTC: the compilers' own front
// ends are recursive (deep nesting overflows the stack) and resolve #include on their own.

#include <optional>
#include <string>
#include <vector>

namespace kwb {

struct SourceIssue {
    std::string code;     // host_code_limit | include_refused
    std::string message;  // written for the model: it goes back into the next prompt
    int line = 0;         // 1-based line within the checked source
};

// Bounds on the shape of host code, far above honest code (the 30 task references and the
// fixture candidates reach bracket depth 4, 19 operators in a statement as counted here,
// 213-character statements and 2 indentation levels) and far below what overflows the 8 MiB stack in TorchScript's recursive
// parser and emitter (measured: ~2,800 nested brackets, ~5,200 unary minus, ~8,700 `+` terms,
// ~1,400 indentation levels, ~3,200 elif branches; docs/sandbox.md).
struct HostCodeLimits {
    static constexpr int kMaxBracketDepth = 100;        // ( [ { open at once
    static constexpr int kMaxOperators = 1000;          // operators in one statement (logical line)
    static constexpr int kMaxLogicalLine = 20000;       // characters in one statement
    static constexpr int kMaxBlockDepth = 50;           // nested blocks, each elif counting as one
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

// Preprocessor-level check of a CUDA source. Allowed: `#include <name>` and `#include "name"`
// where name is relative, has no `..` component and is an existing file under one of
// `includeDirs` (quoted names must not also exist relative to the working directory, which
// NVRTC searches first for them). Refused: every other include form (computed includes,
// `#include_next`, `#import`, `#embed`), `__has_include` of anything else, `#line` and line
// markers, unknown directives, `_Pragma`/`#pragma` mentioning include, trigraphs, unterminated
// comments and raw strings. Comments, splices (backslash-newline), string, character and raw
// string literals and the `%:` digraph are handled as the preprocessor does.
std::optional<SourceIssue> checkCudaSource(const std::string& cuda, const std::vector<std::string>& includeDirs);

}  // namespace kwb
