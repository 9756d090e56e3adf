# A KernelBench-format answer's CUDA source split into the part nvcc must compile and the part g++
# can (issue 35; docs/sandbox.md, "The split build"), loaded into the worker's embedded Python as the
# module `_kwb_cuda_split` before extension_cache.py; standard library only.
#
# Why: load_inline hands nvcc the whole `.cu`, torch/extension.h included, and nvcc parses torch's
# headers three times one after another (cudafe++, cicc, the host g++ on cudafe++'s output): 45-55 s
# of a 50 s build on the GPU machine, and no precompiled header can serve nvcc's passes
# (docs/decisions.md, 2026-12-04). The kernels themselves rarely need torch. So the `.cu` becomes
#   - a device unit: the answer's text with what only the host uses blanked out (torch's includes,
#     host functions), and after each kernel a launcher, a host function that launches it with the
#     kernel's own parameters: nvcc compiles it without torch's headers in a second or two;
#   - a host unit: the answer's text with the kernels and device-only code blanked out, each
#     `k<<<g, b, s, st>>>(args)` turned into `kwb_split_launch_k(g, b, s, st, args)` (a launch's
#     omitted shared memory and stream are nvcc's defaults, 0 and 0), and a prototype of each
#     launcher where its kernel stood: g++ compiles it with torch's precompiled header.
# Both keep every line where the answer had it (`#line` to the `.cu`'s own path), so a message, an
# `__FILE__` or a `__LINE__` reads as it would from the `.cu`. The kernels are compiled by nvcc with
# load_inline's own flags and the same launch configuration reaches them, so the GPU runs the same
# code; only the host code's compiler differs (g++ itself rather than g++ after cudafe++, at the same
# optimisation level, with the macros nvcc's flags define for the host side).
#
# The split is only ever an attempt: extension_cache builds the whole `.cu` as load_inline does when
# this says no (`NotSplit`, with why) and when a split build fails, so every failure an answer gets
# is load_inline's own build's. A template kernel gets a template launcher, made in the device unit
# for each template argument list the host's launches name (`scalar_t` inside an AT_DISPATCH macro
# whose types need no torch header as each of them). What it declines (each a rule any answer is
# read by, not a guess): a template kernel launched without its arguments or under another dispatch
# (which instantiations the host needs is known only after the host compiles), or with an argument
# that names what the device unit does not declare before the kernel (a constexpr local to the host
# function, a host template's parameter: the instantiation is made at the device unit's file scope), a
# kernel named other than by a launch in host code (cudaFuncSetAttribute, a function pointer), a
# launch in device code or in a macro, device-only names used by host code (cudaMemcpyToSymbol of a
# __constant__), torch's names in code the device unit needs, an anonymous namespace or `static`
# around a kernel (its launcher would be another unit's), a preprocessor directive inside a
# declaration, a test of a macro only nvcc defines for the host (`#ifdef __CUDACC__`), cub's,
# thrust's or CUTLASS's headers where host code names them, and anything the reading below does not
# parse.
import os
import re


class NotSplit(Exception):
    """Why this source is built whole, as load_inline builds it."""


LAUNCHER_PREFIX = "kwb_split_launch_"
# The file name the device unit's launchers are compiled under (`#line`): nvcc's messages about them
# are the split's own, never the answer's.
LAUNCHER_FILE = "kwb-split-launcher"
# What the builder names the two units (and their objects) of `<stem>.cu`: `<stem>.kwb-host.cpp`
# and `<stem>.kwb-device.cu` beside it; and the host unit joined with load_inline's main.cpp
# (join_declined), `main.kwb-joined.cpp`.
HOST_UNIT, DEVICE_UNIT, JOINED_UNIT = ".kwb-host", ".kwb-device", ".kwb-joined"


def is_split_unit(path):
    """Whether a source or object is one of a split build's units (not load_inline's own file)."""
    name = path.rsplit("/", 1)[-1]
    return any(unit + "." in name for unit in (HOST_UNIT, DEVICE_UNIT, JOINED_UNIT))


# Real answers' sources are a few KB; the reading is linear in practice, and this bounds what a
# crafted one can cost the broker, which reads the source outside any sandbox.
MAX_SOURCE_CHARS = 256 * 1024

# Names that mean torch (its namespaces and macro families, AT_DISPATCH's scalar_t): code that
# names them cannot go into a unit without torch's headers.
TORCH_NAMES = {"torch", "at", "c10", "caffe2", "pybind11", "py", "scalar_t", "THCudaCheck"}
TORCH_PREFIXES = ("AT_", "TORCH_", "C10_", "PYBIND11_", "CUDA_KERNEL_ASSERT")
TORCH_INCLUDE = re.compile(r'#\s*include\s*[<"]\s*(torch|ATen|c10|caffe2|pybind11|THC|Python\.h)')
# Macros nvcc defines for a `.cu`'s host side that g++ does not (nvcc -E -dM against g++ -E -dM after
# the same CUDA headers, CUDA 13): code that tests them reads differently in the host unit than in
# load_inline's build, so a source that names one is built whole.
NVCC_HOST_MACROS = re.compile(r"\b(__CUDACC\w*|__NVCC\w*|__CUDA_ARCH_LIST__|__CUDA_MINIMUM_ARCH__|__CUDA_API_VER_\w*)")
# Headers only nvcc compiles for the host (their host code launches kernels; g++ 12 with CUDA 13's
# CCCL stops in them). The device unit includes them as the answer does; the host unit leaves them
# out where nothing it holds names them (NVCC_ONLY_NAMES), as in answers that include cub and use
# it in kernels only, or not at all: a host unit that still needed one of their declarations does
# not compile, and the whole `.cu` is built.
NVCC_ONLY_LIBRARIES = ("cub", "thrust", "cutlass", "cute")
NVCC_ONLY_INCLUDE = re.compile(r'#\s*include\s*[<"]\s*(' + "|".join(NVCC_ONLY_LIBRARIES) + ")/")
# What names those libraries: their namespaces (and libcu++'s `cuda::`, which they bring), their
# macros and CCCL's, including in a directive's test (`#if CUB_VERSION`), where a missing macro
# would read as 0 rather than fail.
NVCC_ONLY_NAMES = re.compile(r"\b(?:" + "|".join(NVCC_ONLY_LIBRARIES) + r")\b|\bcuda\s*::|\b_*(?:"
                             + "|".join(n.upper() for n in NVCC_ONLY_LIBRARIES) + r"|CCCL|LIBCUDACXX)_|\b_*Cub[A-Z]\w*")
# Headers torch/extension.h brings into a `.cu` before the answer's own code (under nvcc): the
# device unit includes them first so the kernels see the same declarations (math overloads,
# fixed-width integers, half types) as in load_inline's build.
DEVICE_PRELUDE = ("cstddef", "cstdint", "cmath", "cfloat", "climits", "cassert", "algorithm", "limits",
                  "type_traits", "utility", "cuda_fp16.h", "cuda_bf16.h")
# What nvcc includes into every `.cu` for the host side too; the half types as torch brings them.
HOST_PRELUDE = ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h")
# CUDA's integer and floating-point min and max, which nvcc's host pass declares at file scope in
# every `.cu` (crt/math_functions.hpp, only under __CUDACC__) and g++ with cuda_runtime.h does not.
# Host code that calls an unqualified `min` compiles under nvcc only; the host unit gets the same
# overload set, spelled as that header spells it (the helpers `inline`, the overloads `static
# inline`, `long` as wide as `int` or `long long`), where the source names one of them, so each call
# resolves to the same function, type and value as in load_inline's build (test_cuda_split's
# host_min_max_as_nvcc compares both compilers' resolution over pairs of argument types).
MIN_MAX_NAMES = {"min", "max", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax"}


def _min_max_prelude():
    lines = []
    for op, cmp in (("min", "<"), ("max", ">")):
        for t, name in (("int", op), ("unsigned int", "u" + op), ("long long int", "ll" + op),
                        ("unsigned long long int", "ull" + op)):
            lines.append(f"inline {t} {name}(const {t} a, const {t} b) {{ if (a {cmp} b) return a; return b; }}")
    # C's fmin and fmax as compiler builtins: the same IEEE results, without <math.h>'s declarations,
    # which cuda_runtime.h gives g++ no more than nvcc's host pass.
    for op, f in (("min", "__builtin_fmin"), ("max", "__builtin_fmax")):
        u, ll, ull = "u" + op, "ll" + op, "ull" + op
        ui, uli, ulli = "unsigned int", "unsigned long int", "unsigned long long int"
        lines += [
            f"static inline {ui} {op}(const {ui} a, const {ui} b) {{ return {u}(a, b); }}",
            f"static inline {ui} {op}(const int a, const {ui} b) {{ return {u}(static_cast<{ui}>(a), b); }}",
            f"static inline {ui} {op}(const {ui} a, const int b) {{ return {u}(a, static_cast<{ui}>(b)); }}",
            f"static inline long int {op}(const long int a, const long int b) {{ if (sizeof(long int) == sizeof(int))"
            f" return static_cast<long int>(::{op}(static_cast<int>(a), static_cast<int>(b)));"
            f" return static_cast<long int>({ll}(static_cast<long long int>(a), static_cast<long long int>(b))); }}"]
        for a, b in ((uli, uli), ("long int", uli), (uli, "long int")):
            lines.append(f"static inline {uli} {op}(const {a} a, const {b} b) {{ if (sizeof({uli}) == sizeof({ui}))"
                         f" return static_cast<{uli}>({u}(static_cast<{ui}>(a), static_cast<{ui}>(b)));"
                         f" return static_cast<{uli}>({ull}(static_cast<{ulli}>(a), static_cast<{ulli}>(b))); }}")
        lines += [
            f"static inline long long int {op}(const long long int a, const long long int b) {{ return {ll}(a, b); }}",
            f"static inline {ulli} {op}(const {ulli} a, const {ulli} b) {{ return {ull}(a, b); }}",
            f"static inline {ulli} {op}(const long long int a, const {ulli} b) {{ return {ull}(static_cast<{ulli}>(a), b); }}",
            f"static inline {ulli} {op}(const {ulli} a, const long long int b) {{ return {ull}(a, static_cast<{ulli}>(b)); }}",
            f"static inline float {op}(const float a, const float b) {{ return {f}f(a, b); }}",
            f"static inline double {op}(const double a, const double b) {{ return {f}(a, b); }}",
            f"static inline double {op}(const float a, const double b) {{ return {f}(static_cast<double>(a), b); }}",
            f"static inline double {op}(const double a, const float b) {{ return {f}(a, static_cast<double>(b)); }}"]
    return "\n".join(lines) + "\n"


HOST_MIN_MAX = _min_max_prelude()

_SPECIFIERS = {"__global__", "__device__", "__host__", "__forceinline__", "__noinline__", "inline", "static",
               "constexpr", "extern", "template", "__inline__", "virtual", "explicit", "friend"}
_ATTRIBUTE_CALLS = {"__launch_bounds__", "__attribute__", "__declspec", "alignas", "decltype", "__align__",
                    "__maxnreg__", "__cluster_dims__"}
_DEVICE_ONLY = {"__device__", "__constant__", "__managed__", "__shared__"}
_TYPE_WORDS = {"int", "float", "double", "char", "bool", "void", "long", "short", "unsigned", "signed", "const",
               "volatile", "__restrict__", "__restrict", "restrict", "struct", "class", "enum", "auto",
               "__grid_constant__", "size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
               "uint16_t", "uint32_t", "uint64_t", "half", "__half", "__nv_bfloat16", "float2", "float4", "int2",
               "int4", "dim3"}
# What a parameter's type may end with and still be incomplete without another word
_FUNDAMENTAL = {"int", "float", "double", "char", "bool", "void", "long", "short", "unsigned", "signed", "auto"}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class", "enum", "union",
               "typename", "__grid_constant__"}
_CLASS_KEYS = {"struct", "class", "union", "enum", "typedef", "using"}
# Words a kernel's template argument may hold that no declaration of the source gives.
_ARGUMENT_WORDS = _TYPE_WORDS | _SPECIFIERS | {
    "sizeof", "alignof", "true", "false", "nullptr", "std", "typename", "static_cast", "const_cast",
    "reinterpret_cast", "decltype", "noexcept"}
_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)")

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\\\n|\n)
  | (?P<comment>//(?:[^\n\\]|\\.|\\\n)*|/\*.*?\*/)
  | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\((?s:.*?)\)(?P=delim)")
  | (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<op><<<|>>>|::|->|<<=|>>=|<<|>>|&&|\|\||\+\+|--|[-+*/%&|^!=<>]=|\.\.\.|.)
""", re.X | re.S)


class _Tok:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end

    def __repr__(self):
        return f"{self.kind}:{self.text!r}"


_DIRECTIVE_START = re.compile(r"[ \t]*#")
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')


def _directive_end(text, k):
    """The end (its newline) of the directive starting at text[k], its continued lines and block
    comments included."""
    n = len(text)
    while k < n:
        c = text[k]
        if c == "\n":
            return k
        if c == "\\" and text.startswith("\n", k + 1):
            k += 2
        elif text.startswith("/*", k):
            close = text.find("*/", k + 2)
            if close < 0:
                raise NotSplit("an unclosed comment")
            k = close + 2
        elif text.startswith("//", k):
            while k < n and text[k] != "\n":
                k += 2 if text[k] == "\\" and text.startswith("\n", k + 1) else 1
            return k
        elif c in "\"'" and _QUOTED.match(text, k):
            k = _QUOTED.match(text, k).end()
        else:
            k += 1
    return n


def _directive_code(text):
    """A directive's text with its comments and string literals blanked (what the preprocessor acts on)."""
    return re.sub(r'//.*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', " ", text, flags=re.S)


def _tokens(text):
    """Significant tokens (no whitespace or comments); each preprocessor directive one token of kind
    'pp' from its '#' to the end of its last continued line."""
    out = []
    pos, n = 0, len(text)
    line_start = True
    while pos < n:
        if line_start:
            m = _DIRECTIVE_START.match(text, pos)
            if m:
                end = _directive_end(text, m.end())
                out.append(_Tok("pp", text[m.end() - 1:end], m.end() - 1, end))
                pos = end
                line_start = False
                continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise NotSplit("text the reading does not know")
        kind = next(k for k in ("ws", "comment", "raw", "str", "chr", "id", "num", "op") if m.group(k) is not None)
        piece = m.group(0)
        if kind == "ws":
            line_start = line_start or "\n" in piece
        elif kind != "comment":
            out.append(_Tok("str" if kind == "raw" else kind, piece, pos, m.end()))
            line_start = False
        pos = m.end()
    return out


def _match(toks, i):
    """The index of the bracket closing toks[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    want = [pairs[toks[i].text]]
    j = i + 1
    while j < len(toks):
        t = toks[j].text if toks[j].kind == "op" else None
        if t in pairs:
            want.append(pairs[t])
        elif t in (")", "]", "}"):
            if t != want[-1]:
                raise NotSplit(f"unbalanced brackets at offset {toks[j].start}")
            want.pop()
            if not want:
                return j
        elif toks[j].kind == "pp" and len(want) == 1 and toks[i].text != "{":
            raise NotSplit("a preprocessor directive inside a declaration")
        j += 1
    raise NotSplit("an unclosed bracket")


class _Item:
    """One top-level declaration: kind 'pp', 'function', 'decl' (ends with ;), 'scope' (a
    namespace or linkage block, with its children)."""

    def __init__(self, kind, first, last):
        self.kind, self.first, self.last = kind, first, last  # token indices, inclusive
        self.children = []
        self.scope_name = None
        self.body = None  # a function's '{' index


def _is_op(tok, text):
    return tok.kind == "op" and tok.text == text


def _items(toks, i, end, depth=0):
    if depth > 32:
        raise NotSplit("namespaces nested deeper than the reading goes")
    items = []
    while i < end:
        t = toks[i]
        if t.kind == "pp":
            items.append(_Item("pp", i, i))
            i += 1
            continue
        if _is_op(t, ";"):
            i += 1
            continue
        j = i
        while True:
            if j >= end:
                raise NotSplit("a declaration without its end")
            tj = toks[j]
            if tj.kind == "pp":
                raise NotSplit("a preprocessor directive inside a declaration")
            if tj.kind == "op" and tj.text in ("(", "["):
                j = _match(toks, j) + 1
                continue
            if _is_op(tj, ";"):
                items.append(_Item("decl", i, j))
                i = j + 1
                break
            if _is_op(tj, "{"):
                head = toks[i:j]
                words = [h.text for h in head if h.kind == "id"]
                close = _match(toks, j)
                if words[:1] == ["namespace"] or words[:2] == ["inline", "namespace"] or (
                        words[:1] == ["extern"] and len(head) == 2 and head[1].kind == "str"):
                    item = _Item("scope", i, close)
                    item.scope_name = ("extern" if words[0] == "extern" else
                                       (words[-1] if words[-1] != "namespace" else ""))
                    if any(h.kind == "op" and h.text not in ("::",) for h in head):
                        raise NotSplit("a namespace declaration the reading does not know")
                    item.children = _items(toks, j + 1, close, depth + 1)
                    items.append(item)
                    i = close + 1
                    break
                if _looks_like_function(head):
                    item = _Item("function", i, close)
                    item.body = j
                    items.append(item)
                    i = close + 1
                    break
                j = close + 1  # a class body or a braced initialiser: the declaration goes on to its ;
                continue
            if _is_op(tj, "}"):
                raise NotSplit("an unbalanced '}'")
            j += 1
    return items


def _top_level_groups(head):
    """(index of '(', index of its ')') of head's top-level parenthesised groups."""
    groups, k = [], 0
    while k < len(head):
        if _is_op(head[k], "("):
            close = _match(head, k)
            groups.append((k, close))
            k = close + 1
        elif head[k].kind == "op" and head[k].text in ("[",):
            k = _match(head, k) + 1
        else:
            k += 1
    return groups


def _looks_like_function(head):
    if not head or head[0].kind != "id" and not _is_op(head[0], "::") and not _is_op(head[0], "["):
        return False
    if head[0].text in _CLASS_KEYS:
        return False
    while len(head) > 1 and head[0].text == "template" and _is_op(head[1], "<"):
        # template <typename T, int N = 2>: its defaults are not an initialiser
        head = head[_angle_end(head, 1, len(head) - 1) + 1:]
        if head and head[0].text in _CLASS_KEYS:
            return False
    depth = 0
    for h in head:
        if h.kind == "op" and h.text in ("(", "["):
            depth += 1
        elif h.kind == "op" and h.text in (")", "]"):
            depth -= 1
        elif depth == 0 and h.kind == "op" and h.text == "=":
            return False
    return _declarator(head) is not None


def _declarator(head):
    """(name index, '(' index, ')' index) of the function declarator in a head, or None."""
    for open_, close in _top_level_groups(head):
        if open_ > 0 and head[open_ - 1].kind == "id" and head[open_ - 1].text not in _ATTRIBUTE_CALLS | {
                "sizeof", "alignof", "return"}:
            return open_ - 1, open_, close
    return None


def _declaring_names(toks, item):
    """The names of an item the device unit leaves out that could declare at namespace scope: all of
    a declaration's, a function's outside its parameters and body."""
    if item.kind != "function":
        return _ids(toks, item.first, item.last)
    head = toks[item.first:item.body]
    found = _declarator(head)
    if found is None:
        return _ids(toks, item.first, item.body - 1)
    return [t.text for k, t in enumerate(head) if t.kind == "id" and not found[1] <= k <= found[2]]


def _ids(toks, first, last):
    return [t.text for t in toks[first:last + 1] if t.kind == "id"]


def _mentions_torch(names):
    return any(n in TORCH_NAMES or n.startswith(TORCH_PREFIXES) for n in names)


def _split_params(toks, open_, close):
    """A declarator's parameters as token lists (top-level commas)."""
    if close == open_ + 1:
        return []
    params = [toks[a:b + 1] for a, b in _top_level_commas(toks, open_ + 1, close - 1)]
    if len(params) == 1 and [t.text for t in params[0]] == ["void"]:
        return []
    return params


class _Kernel:
    def __init__(self, name, params_text, names, template=None):
        self.name, self.params_text, self.names = name, params_text, names
        # a template kernel's `template <...>` as written, and its parameters' names in order
        self.template = template  # (header text, [names]) or None
        self.instances = []  # a template kernel's template arguments the host's launches use
        self.defined = False
        self.definition_end = -1  # the last token of its definition (its instantiations follow it)


def _angle_end(toks, i, last):
    """The index of the '>' closing the '<' at toks[i] (nested angles and brackets inside)."""
    depth, k = 0, i
    while k <= last:
        t = toks[k]
        if t.kind == "op" and t.text in ("(", "[", "{"):
            k = _match(toks, k) + 1
            continue
        if _is_op(t, "<"):
            depth += 1
        elif _is_op(t, ">"):
            depth -= 1
        elif _is_op(t, ">>"):
            if depth == 1:
                raise NotSplit("template brackets the reading does not know")
            depth -= 2
        if depth == 0:
            return k
        k += 1
    raise NotSplit("an unclosed template bracket")


def _top_level_commas(toks, first, last):
    """[(first, last)] of the comma-separated pieces of toks[first..last] (brackets and angles nested)."""
    pieces, start, k = [], first, first
    while k <= last:
        t = toks[k]
        if t.kind == "op" and t.text in ("(", "[", "{"):
            k = _match(toks, k) + 1
            continue
        if _is_op(t, "<"):
            k = _angle_end(toks, k, last) + 1
            continue
        if _is_op(t, ","):
            pieces.append((start, k - 1))
            start = k + 1
        k += 1
    pieces.append((start, last))
    return pieces


def _template_of(text, toks, first, last):
    """A kernel's `template <...>` at toks[first] (ending before last): (header text, parameter
    names, index after the header)."""
    if not _is_op(toks[first + 1], "<"):
        raise NotSplit("a template kernel the reading does not know")
    close = _angle_end(toks, first + 1, last)
    if close == first + 2:
        raise NotSplit("an explicit specialisation of a kernel")
    names = []
    for a, b in _top_level_commas(toks, first + 2, close - 1):
        words = [t.text for t in toks[a:b + 1]]
        if a > b or "..." in words:
            raise NotSplit("a variadic or empty template parameter of a kernel")
        cut = words.index("=") if "=" in words else len(words)
        declared = [t for t in toks[a:a + cut] if t.kind == "id"]
        if len(declared) < 2:
            raise NotSplit("a template parameter without a name")
        names.append(declared[-1].text)
    return text[toks[first].start:toks[close].end], names, close + 1


def _names_itself(p):
    """Whether a parameter's last word (p: its tokens) is its name. It is unless it is still the
    type: a type word is a name too after a complete type (`int dim3`, a real answer's), never after
    qualifiers alone (`const float4`)."""
    last = p[-1]
    return (last.kind == "id" and len(p) >= 2 and not _is_op(p[-2], "::")
            and not (p[-2].kind == "op" and p[-2].text in ("<", ","))
            and (last.text not in _TYPE_WORDS or (
                last.text not in _FUNDAMENTAL | _QUALIFIERS
                and any((t.kind == "id" and t.text not in _QUALIFIERS) or _is_op(t, "*") for t in p[:-1]))))


def _kernel_of(text, toks, item, head_last):
    """The kernel an item declares or defines: its name, its parameters (named) for the launcher,
    its template header where it has one."""
    first = item.first
    template = None
    if toks[first].text == "template":
        header, tnames, first = _template_of(text, toks, first, head_last - 1)
        template = (header, tnames)
    head = toks[first:head_last]
    words = [h.text for h in head if h.kind == "id"]
    if "template" in words:
        raise NotSplit("a template kernel the reading does not know")
    if "static" in words:
        raise NotSplit("a static kernel (its launcher would be another unit's)")
    found = _declarator(head)
    if found is None:
        raise NotSplit("a kernel the reading does not know")
    name_i, open_i, close_i = (first + x for x in found)
    if name_i > first and _is_op(toks[name_i - 1], "::"):
        raise NotSplit("a kernel defined out of its namespace")
    params = _split_params(toks, open_i, close_i)
    pieces, names = [], []
    for n, p in enumerate(params):
        if not p:
            raise NotSplit("an empty kernel parameter")
        words = [t.text for t in p]
        if "=" in words or "..." in words or "__grid_constant__" in words or "&" in words or "&&" in words:
            raise NotSplit("a kernel parameter the launcher cannot pass on as written")
        piece = text[p[0].start:p[-1].end]
        last = p[-1]
        if _names_itself(p):
            names.append(last.text)
        else:
            names.append(f"kwb_split_p{n}")
            piece += f" kwb_split_p{n}"
        if _is_op(last, "]"):
            raise NotSplit("an array kernel parameter")
        pieces.append(piece)
    return _Kernel(toks[name_i].text, ", ".join(pieces), names, template)


# The types AT_DISPATCH_<X>(type, name, lambda) gives `scalar_t`, as c10's ScalarType names them in C++
# (ATen/Dispatch.h): only dispatches whose types need no torch header (c10::Half does).
_INTEGRAL = ("uint8_t", "int8_t", "int16_t", "int", "int64_t")
AT_DISPATCH_TYPES = {
    "AT_DISPATCH_FLOATING_TYPES": ("double", "float"),
    "AT_DISPATCH_INTEGRAL_TYPES": _INTEGRAL,
    "AT_DISPATCH_ALL_TYPES": _INTEGRAL + ("double", "float"),
}


def _launcher_params(kernel):
    return ", ".join(["dim3 kwb_split_grid", "dim3 kwb_split_block", "size_t kwb_split_smem",
                      "cudaStream_t kwb_split_stream"] + ([kernel.params_text] if kernel.params_text else []))


def _template_header(kernel):
    return kernel.template[0] + " " if kernel.template else ""


# The launchers are the library's own: hidden, so two answers' libraries in one process never share
# one, and a launcher the host unit calls but the device unit lacks fails the link rather than the
# answer's load.
_HIDDEN = '__attribute__((visibility("hidden"))) '


def launcher_prototype(kernel):
    return f"{_template_header(kernel)}{_HIDDEN}void {LAUNCHER_PREFIX}{kernel.name}({_launcher_params(kernel)});"


def launcher_definition(kernel):
    targs = f"<{', '.join(kernel.template[1])}>" if kernel.template else ""
    return (f"{_template_header(kernel)}{_HIDDEN}void {LAUNCHER_PREFIX}{kernel.name}({_launcher_params(kernel)}) {{ "
            f"{kernel.name}{targs}<<<kwb_split_grid, kwb_split_block, kwb_split_smem, kwb_split_stream>>>"
            f"({', '.join(kernel.names)}); }}")


def launcher_instances(kernel):
    """A template kernel's launchers for the template arguments the host's launches use, made in the
    device unit (the host unit only declares the template): each kept by a pointer to it."""
    return "".join(f" __attribute__((used)) static auto kwb_split_keep_{kernel.name}_{n} = "
                   f"&{LAUNCHER_PREFIX}{kernel.name}<{', '.join(args)}>;" for n, args in enumerate(kernel.instances))


def _own_template_names(text, toks, item):
    """The names an item's own `template <...>` declares (they are not torch's, scalar_t included)."""
    if toks[item.first].text != "template":
        return []
    try:
        return _template_of(text, toks, item.first, item.last)[1]
    except NotSplit:
        return []


def _blank(text):
    """Text of the same lines, nothing on them."""
    return "\n" * text.count("\n")


class Split:
    """The two units of a split `.cu`: device (for nvcc) and host (for g++), the kernels, and the
    names in what the device unit leaves out that could declare something at namespace scope (a
    host function's name and return type, a host variable, a macro's use there: not what a host
    function's parameters or body hold, which no kernel sees)."""

    def __init__(self, device, host, kernels, left_out=()):
        self.device, self.host, self.kernels = device, host, kernels
        self.left_out = set(left_out)


def _classify(toks, item):
    """'kernel', 'kernel-decl', 'device', 'both', 'host' for a function or declaration item."""
    if item.kind == "function":
        head_last = item.body
    else:
        head_last = item.last
    found = _declarator(toks[item.first:head_last])
    cut = item.first + found[1] if found else head_last
    words = set(_ids(toks, item.first, cut - 1))
    if "__global__" in words:
        return "kernel" if item.kind == "function" else "kernel-decl"
    if words & _DEVICE_ONLY and "__host__" not in words:
        return "device"
    if "__host__" in words and "__device__" in words:
        return "both"
    if item.kind == "function":
        return "both" if "constexpr" in words else "host"
    first = toks[item.first].text
    if first in _CLASS_KEYS or first in ("static_assert", "template") or "constexpr" in words or (
            "const" in words and found is None) or "static" in words:
        return "both"
    if found is not None and "=" not in [t.text for t in toks[item.first:found[1] + item.first]]:
        return "both"  # a function's prototype
    if first == "extern":
        return "both"
    return "host"  # a variable of the host's


def _declared_name(toks, item):
    head_last = item.body if item.kind == "function" else item.last
    found = _declarator(toks[item.first:head_last])
    if found is not None:
        return toks[item.first + found[0]].text
    name = None
    for t in toks[item.first:head_last]:
        if t.kind == "op" and t.text in ("=", "[", "{", "("):
            break
        if t.kind == "id":
            name = t.text
    return name


def split_cuda_source(text, path, host_macros=()):
    """The answer's `.cu` text as a Split, or NotSplit (why it is built whole). path: the `.cu`'s
    own path, which `#line` gives both units (so `__FILE__` and messages are the `.cu`'s).
    host_macros: lines (`#define`, `#undef`) that make the host unit's macros those nvcc's flags
    give the `.cu`'s host side, put before anything else."""
    if len(text) > MAX_SOURCE_CHARS:
        raise NotSplit(f"a source longer than {MAX_SOURCE_CHARS} characters")
    try:
        return _split(text, path, host_macros)
    except RecursionError:
        raise NotSplit("declarations nested deeper than the reading goes") from None


def _split(text, path, host_macros):
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    toks = _tokens(text)
    nvcc_only = None  # the first of NVCC_ONLY_INCLUDE's libraries the source includes
    for t in toks:
        if t.kind == "id" and NVCC_HOST_MACROS.fullmatch(t.text):
            raise NotSplit(f"the source tests {t.text}, which only nvcc defines for the host code")
        if t.kind == "pp":
            m = NVCC_HOST_MACROS.search(_directive_code(t.text))
            if m:
                raise NotSplit(f"the source tests {m.group(1)}, which only nvcc defines for the host code")
            m = NVCC_ONLY_INCLUDE.match(t.text)
            if m:
                nvcc_only = nvcc_only or m.group(1)
    items = _items(toks, 0, len(toks))

    dev, host = [], []  # each unit's rewrites: ((start offset, end offset), the text in its place)
    kernels = {}
    device_names = set()  # names only the device unit declares (device functions and variables)
    # Names the device unit declares at file or namespace scope (macros, types, constants, functions,
    # namespaces), each with the token where it is first declared: a template kernel's instantiations
    # are made there after the kernel, so their arguments may name only these (declared before it).
    visible = {}
    host_items = []  # items whose tokens go to the host unit (checked for launches and names)
    left_out = set()  # names of what the device unit leaves out that could declare at namespace scope

    def walk(items):
        for item in items:
            span = (toks[item.first].start, toks[item.last].end)
            source = text[span[0]:span[1]]
            if item.kind == "pp":
                if "<<<" in _directive_code(source):
                    raise NotSplit("a launch in a macro")
                if TORCH_INCLUDE.match(source):
                    dev.append((span, _blank(source)))
                if NVCC_ONLY_INCLUDE.match(source):
                    host.append((span, _blank(source)))
                defined = _DEFINE.match(source)
                if defined:
                    visible.setdefault(defined.group(1), item.first)
                continue
            if item.kind == "scope":
                if item.scope_name:
                    visible.setdefault(item.scope_name, item.first)
                if item.scope_name == "" and any(_classify(toks, c) in ("kernel", "kernel-decl")
                                                 for c in _flatten(item.children)):
                    raise NotSplit("a kernel in an anonymous namespace (its launcher would be another unit's)")
                if item.scope_name and item.scope_name in TORCH_NAMES:
                    raise NotSplit("code in torch's namespace")
                walk(item.children)
                continue
            kind = _classify(toks, item)
            own = set(_own_template_names(text, toks, item))
            names = [n for n in _ids(toks, item.first, item.last) if n not in own]
            if kind in ("kernel", "kernel-decl"):
                head_last = item.body if item.kind == "function" else item.last
                kernel = _kernel_of(text, toks, item, head_last)
                if _mentions_torch(names):
                    raise NotSplit(f"the kernel {kernel.name} names torch")
                if _launches(toks, item):
                    raise NotSplit("a launch in device code")
                known = kernels.get(kernel.name)
                if known is not None and bool(known.template) != bool(kernel.template):
                    raise NotSplit(f"a kernel {kernel.name} both a template and not")
                if item.kind == "function":
                    # the definition's parameter names are the launcher's (a declaration's may differ)
                    if known is not None and known.defined:
                        raise NotSplit(f"two kernels named {kernel.name}")
                    kernel.defined = True
                    kernel.definition_end = item.last
                    kernels[kernel.name] = kernel
                    kernel.dev_entry = len(dev)
                    dev.append((span, source))
                else:
                    kernels.setdefault(kernel.name, kernel)
                visible.setdefault(kernel.name, item.first)
                host.append((span, launcher_prototype(kernel) + _blank(source)))
            elif kind == "device":
                if _mentions_torch(names):
                    raise NotSplit("device code names torch")
                if _launches(toks, item):
                    raise NotSplit("a launch in device code")
                name = _declared_name(toks, item)
                if name:
                    device_names.add(name)
                    visible.setdefault(name, item.first)
                host.append((span, _blank(source)))
            elif kind == "both":
                if _mentions_torch(names):
                    if item.kind == "function" and ("__device__" in names):
                        raise NotSplit("device code names torch")
                    dev.append((span, _blank(source)))  # the host's alone (a type or alias of torch's)
                    left_out.update(_declaring_names(toks, item))
                    host_items.append(item)
                    continue
                if _launches(toks, item):
                    raise NotSplit("a launch in device code")
                name = _declared_name(toks, item)
                if name:
                    visible.setdefault(name, item.first)
                host_items.append(item)
            else:
                dev.append((span, _blank(source)))
                left_out.update(_declaring_names(toks, item))
                host_items.append(item)

    walk(items)

    # The host's code: every launch of a known kernel rewritten, no other use of a kernel or of a
    # device-only name.
    for item in host_items:
        k = item.first
        # the brackets open at k, and the AT_DISPATCH macros among them (innermost last)
        opened, dispatches = [], []
        while k <= item.last:
            t = toks[k]
            if t.kind == "op" and t.text in ("(", "[", "{"):
                macro = t.text == "(" and k > 0 and toks[k - 1].kind == "id" and toks[k - 1].text.startswith("AT_DISPATCH_")
                opened.append(macro)
                if macro:
                    dispatches.append(toks[k - 1].text)
            elif t.kind == "op" and t.text in (")", "]", "}") and opened:
                if opened.pop():
                    dispatches.pop()
            if t.kind == "id" and t.text in kernels:
                prev = toks[k - 1] if k > 0 else None
                kernel = kernels[t.text]
                if kernel.template and k + 1 <= item.last and _is_op(toks[k + 1], "<"):
                    close = _angle_end(toks, k + 1, item.last)
                    if close + 1 <= item.last and _is_op(toks[close + 1], "<<<") and close > k + 2:
                        targs = _instances(text, toks, k, close, kernel, dispatches[-1] if dispatches else None, visible)
                        k = _rewrite_launch(text, toks, k, close + 1, item.last, kernel, host, targs)
                        continue
                if k + 1 <= item.last and _is_op(toks[k + 1], "<<<"):
                    if kernel.template:
                        raise NotSplit(f"the template kernel {t.text} launched without its template arguments")
                    k = _rewrite_launch(text, toks, k, k + 1, item.last, kernel, host, "")
                    continue
                if prev is not None and prev.kind == "op" and prev.text in (".", "->"):
                    k += 1
                    continue
                raise NotSplit(f"the kernel {t.text} is used other than by a launch")
            if t.kind == "id" and t.text in device_names:
                prev = toks[k - 1] if k > 0 else None
                if not (prev is not None and prev.kind == "op" and prev.text in (".", "->", "::")):
                    raise NotSplit(f"host code uses the device's {t.text}")
            if _is_op(t, "<<<"):
                raise NotSplit("a launch of something not a kernel of this source")
            k += 1

    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    for kernel in kernels.values():
        if kernel.defined:
            span, content = dev[kernel.dev_entry]
            launcher = launcher_definition(kernel)
            if kernel.template and kernel.instances:
                launcher += launcher_instances(kernel)
            # on lines of their own under a file name of their own (the answer's numbering resumes
            # after them), so a message about a launcher never reads as one about the answer's line
            resume = text.count("\n", 0, span[1]) + 1
            dev[kernel.dev_entry] = (span, f'{content}\n#line 1 "{LAUNCHER_FILE}"\n{launcher}\n#line {resume} "{quoted}"\n')
    device = _apply(text, dev)
    host_text = _apply(text, host)
    if nvcc_only:
        named = _names_nvcc_only(_tokens(host_text))
        if named:
            raise NotSplit(f"{nvcc_only}'s headers, which only nvcc compiles for the host, named there ({named})")
    device = ("".join(f"#include <{h}>\n" for h in DEVICE_PRELUDE) + f'#line 1 "{quoted}"\n' + device)
    names_min_max = any(t.kind == "id" and t.text in MIN_MAX_NAMES for t in toks)
    host_text = ("".join(f"{m}\n" for m in host_macros) + "".join(f"#include <{h}>\n" for h in HOST_PRELUDE)
                 + (HOST_MIN_MAX if names_min_max else "") + f'#line 1 "{quoted}"\n' + host_text)
    return Split(device, host_text, list(kernels.values()), left_out)


def _names_nvcc_only(toks):
    """The first word of NVCC_ONLY_NAMES among the tokens the unit compiles (identifiers, and a
    directive's words outside its comments and strings), or None."""
    for k, t in enumerate(toks):
        if t.kind == "pp":
            m = NVCC_ONLY_NAMES.search(_directive_code(t.text))
            if m:
                return m.group(0)
        elif t.kind == "id":
            scoped = t.text + ("::" if k + 1 < len(toks) and _is_op(toks[k + 1], "::") else "")
            if NVCC_ONLY_NAMES.match(scoped):
                return scoped
    return None


def _launches(toks, item):
    return any(_is_op(t, "<<<") for t in toks[item.first:item.last + 1])


def _flatten(items):
    for item in items:
        if item.kind == "scope":
            yield from _flatten(item.children)
        else:
            yield item


def _instances(text, toks, k, close, kernel, dispatch, visible):
    """The template arguments of the launch `kernel<...><<<` at toks[k] (its '>' at close), as
    written (the launcher is called with them), and each instantiation the device unit must make
    added to kernel.instances: scalar_t in an AT_DISPATCH macro's lambda as each of its types.
    visible: the names the device unit declares at file scope, with where (see _split)."""
    for j in range(k + 2, close):
        t = toks[j]
        if t.kind != "id" or t.text in _ARGUMENT_WORDS or _mentions_torch([t.text]):
            continue  # torch's names (scalar_t among them) are read below
        if j > 0 and toks[j - 1].kind == "op" and toks[j - 1].text in ("::", ".", "->"):
            continue  # a member: its qualifier is checked
        if visible.get(t.text, len(toks)) > kernel.definition_end:
            # e.g. a constexpr local to the host function: the device unit cannot instantiate with it
            raise NotSplit(f"the template kernel {kernel.name}'s argument {t.text} is not declared at file scope "
                           "before the kernel")
    pieces = _top_level_commas(toks, k + 2, close - 1)
    written = text[toks[k + 2].start:toks[close - 1].end]
    variants = [[]]
    for a, b in pieces:
        ids = [t.text for t in toks[a:b + 1] if t.kind == "id"]
        if "scalar_t" in ids:
            types = AT_DISPATCH_TYPES.get(dispatch or "")
            if types is None:
                raise NotSplit(f"scalar_t of {dispatch or 'no AT_DISPATCH macro'} as a kernel's template argument")
            options = [" ".join(t if x.kind == "id" and x.text == "scalar_t" else x.text
                                for x in toks[a:b + 1]) for t in types]
        else:
            options = [text[toks[a].start:toks[b].end]]
        if _mentions_torch([n for n in ids if n != "scalar_t"]):
            raise NotSplit("torch's types as a kernel's template argument")
        variants = [v + [o] for v in variants for o in options]
    for v in variants:
        if v not in kernel.instances:
            kernel.instances.append(v)
    return written


def _rewrite_launch(text, toks, k, open_, last, kernel, host, targs):
    """k<<<cfg>>>(args) at toks[k] (its <<< at open_) as a launcher call (added to host's
    replacements); the index after it. targs: the launch's template arguments as written."""
    depth, m = 0, open_ + 1
    parts, part_start = [], m
    while m <= last:
        t = toks[m]
        if t.kind == "op" and t.text in ("(", "[", "{"):
            m = _match(toks, m) + 1
            continue
        if depth == 0 and _is_op(t, ">>>"):
            break
        if _is_op(t, ","):
            parts.append((part_start, m - 1))
            part_start = m + 1
        m += 1
    else:
        raise NotSplit("a launch without its >>>")
    parts.append((part_start, m - 1))
    close_cfg = m
    if not 2 <= len(parts) <= 4 or any(a > b for a, b in parts):
        raise NotSplit("a launch configuration the reading does not know")
    if close_cfg + 1 > last or not _is_op(toks[close_cfg + 1], "("):
        raise NotSplit("a launch without its arguments")
    args_open = close_cfg + 1
    args_close = _match(toks, args_open)
    # In place, every newline where it was: `k <<<cfg>>> (args)` -> `launcher(cfg, 0, 0, args)`.
    gap_before = text[toks[k].end:toks[open_].start]  # template arguments too: only their newlines stay
    gap_after = text[toks[close_cfg].end:toks[args_open].start]
    inner = text[toks[args_open].end:toks[args_close].start]
    call = (f"{LAUNCHER_PREFIX}{kernel.name}" + (f"<{targs}>" if targs else "") + "(" + "\n" * gap_before.count("\n")
            + text[toks[open_].end:toks[close_cfg].start] + ", 0" * (4 - len(parts)) + "\n" * gap_after.count("\n")
            + ("," + inner if inner.strip() else inner) + ")")
    host.append(((toks[k].start, toks[args_close].end), call))
    return args_close + 1


def _apply(text, replacements):
    out, pos = [], 0
    for (start, end), new in sorted(replacements, key=lambda r: r[0][0]):
        if start < pos:
            raise NotSplit("overlapping rewrites")
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


# ---- flags: the host unit compiled by g++ as nvcc's host side would be ----------------------------

# nvcc options that change only the device code (or nothing a program computes), with whether they
# take the next argument as their value when written without '='.
_DEVICE_ONLY_OPTIONS = {
    "-arch": True, "--gpu-architecture": True, "-code": True, "--gpu-code": True, "-gencode": True,
    "--generate-code": True, "-maxrregcount": True, "--maxrregcount": True, "-Xptxas": True,
    "--ptxas-options": True, "-Xcudafe": True, "-ftz": True, "--ftz": True, "-prec-div": True,
    "--prec-div": True, "-prec-sqrt": True, "--prec-sqrt": True, "-fmad": True, "--fmad": True,
    "-use_fast_math": False, "--use_fast_math": False, "--expt-relaxed-constexpr": False,
    "-expt-relaxed-constexpr": False, "--expt-extended-lambda": False, "-expt-extended-lambda": False,
    "--extended-lambda": False, "-extended-lambda": False, "-lineinfo": False, "--generate-line-info": False,
    "-G": False, "--device-debug": False, "-res-usage": False, "--resource-usage": False,
    "-Wno-deprecated-gpu-targets": False, "--threads": True, "-t": True, "--diag-suppress": True,
    "-diag-suppress": True, "-w": False, "-g": False, "--debug": False,
}
# g++ options of load_inline's C++ compile that say nothing about what the host code computes.
_CXX_NEUTRAL = re.compile(r"-fPIC|-Winvalid-pch|-w|-W[A-Za-z0-9=+-]*|-g[0-3]?|-fdiagnostics-[a-z=-]+")


def _macros(args, what):
    """-D/-I/-O/-std of an argument list, and the rest: (macros {name: value}, include dirs, -O, -std, rest)."""
    macros, includes, opt, std, rest = {}, [], None, None, []
    k = 0
    while k < len(args):
        a = args[k]
        value = None
        for flag in ("-D", "-U", "-I", "-isystem"):
            if a == flag:
                if k + 1 >= len(args):
                    raise NotSplit(f"{what}: {flag} without its value")
                value, k = args[k + 1], k + 1
                break
            if a.startswith(flag) and flag != "-isystem" and len(a) > len(flag):
                value = a[len(flag):]
                break
        else:
            flag = None
        if flag == "-D":
            name, _, val = value.partition("=")
            macros[name] = val if "=" in value else "1"
        elif flag == "-U":
            raise NotSplit(f"{what} undefine a macro ({a})")
        elif flag in ("-I", "-isystem"):
            includes.append((flag, value))
        elif re.fullmatch(r"-O[0-3sgz]?|--optimize(=\S+)?", a):
            opt = a
        elif a.startswith("-std="):
            std = a
        else:
            rest.append(a)
        k += 1
    return macros, includes, opt, std, rest


def _opt_level(flag):
    if flag is None:
        return "0"
    if flag.startswith("--optimize"):
        return flag.partition("=")[2] or "?"
    return flag[2:] or "1"


def nvcc_host_compiler(nvcc_args):
    """nvcc's host compiler as its arguments name it, and the arguments without that option:
    `-ccbin`/`--compiler-bindir` names a compiler or the folder of nvcc's default `gcc` (torch adds
    `-ccbin $CC` where CC is set); else `gcc` on PATH, nvcc's default. The caller compares it with
    load_inline's C++ compiler: the host unit is that compiler's."""
    compiler, rest, k = "gcc", [], 0
    while k < len(nvcc_args):
        a = nvcc_args[k]
        name, eq, value = a.partition("=")
        if name not in ("-ccbin", "--compiler-bindir"):
            rest.append(a)
            k += 1
            continue
        if not eq:
            value = nvcc_args[k + 1] if k + 1 < len(nvcc_args) else ""
        k += 1 if eq else 2
        value = value.strip("'\"")
        if not value:
            raise NotSplit(f"{name} names no host compiler")
        compiler = os.path.join(value, "gcc") if os.path.isdir(value) else value
    return compiler, rest


def host_macros(cxx_args, nvcc_args):
    """The lines that give the host unit, compiled by g++ with load_inline's C++ arguments
    (cxx_args, the shell words of its cflags and post_cflags), the macros that nvcc's arguments
    (nvcc_args) give the `.cu`'s host side; NotSplit where the two compiles would differ in more
    than macros: another optimisation level or language standard, an include folder only nvcc
    has, an option of nvcc's for its host compiler or one this reading does not know, or a g++
    option that changes what the code computes."""
    c_macros, c_includes, c_opt, c_std, c_rest = _macros(cxx_args, "the C++ flags")
    n_macros, n_includes, n_opt, n_std, n_rest = _macros(nvcc_args, "the CUDA flags")
    k = 0
    while k < len(n_rest):
        a = n_rest[k]
        name, eq, _ = a.partition("=")
        if a in ("--compiler-options", "-Xcompiler") or name in ("--compiler-options", "-Xcompiler"):
            value = a.partition("=")[2] if eq else (n_rest[k + 1] if k + 1 < len(n_rest) else "")
            k += 1 if eq else 2
            for option in value.strip("'\"").split(","):
                if option and option not in c_rest:
                    raise NotSplit(f"the CUDA flags give nvcc's host compiler {option}, which the C++ flags do not")
            continue
        if name in _DEVICE_ONLY_OPTIONS:
            k += 2 if (_DEVICE_ONLY_OPTIONS[name] and not eq) else 1
            continue
        raise NotSplit(f"a CUDA flag this reading does not know ({a})")
    for a in c_rest:
        if not _CXX_NEUTRAL.fullmatch(a) and a != "-include" and not a.endswith(".h"):
            raise NotSplit(f"a C++ flag nvcc's host side does not have ({a})")
    if _opt_level(c_opt) != _opt_level(n_opt):
        raise NotSplit(f"the host code's optimisation differs (g++ {c_opt or '-O0'}, nvcc {n_opt or 'none'})")
    if c_std != n_std:
        raise NotSplit(f"the host code's language standard differs ({c_std} against {n_std})")
    missing = [i for i in n_includes if i not in c_includes]
    if missing:
        raise NotSplit(f"an include folder only nvcc has ({missing[0][1]})")
    lines = []
    for name in sorted(set(c_macros) | set(n_macros)):
        if name in c_macros and name not in n_macros:
            lines.append(f"#undef {name}")
        elif c_macros.get(name) != n_macros[name]:
            lines += ([f"#undef {name}"] if name in c_macros else []) + [f"#define {name} {n_macros[name]}"]
    return lines


# load_inline's main.cpp compiled in one unit with the host unit (issue 35, session 45): with torch's
# header precompiled, three quarters of each C++ compile is g++ instantiating torch's templates at
# the unit's end, the same work for every unit (bench/results/2026-12-06-header-phases-2core.md), so
# main.cpp and the host unit compiled apart pay it twice. Compiled as one unit, main.cpp's text
# first, they pay it once. This is only ever an attempt too: where the joined unit fails, both are
# compiled apart as before, and that build decides. What join_declined checks is that neither part
# can read differently joined than alone, for any answer:
#   - main.cpp comes first, so its own lookups see what they see alone (torch's header comes
#     before both, precompiled or, where the header is not made yet, included first, so main.cpp's
#     `#include <torch/extension.h>` adds nothing), and the host unit's macros and includes come
#     after it, as alone where the header is precompiled;
#   - main.cpp may hold only that include, function prototypes each of which redeclares a function
#     the host unit declares with the same parameter types before it mentions the name anywhere else
#     (a redeclaration then adds nothing to what the host code's calls can find), definitions of
#     functions whose names the host unit never spells (it cannot call them, by any lookup), and
#     PYBIND11_MODULE (whose names, PyInit_* and pybind11_*, the host unit may not spell either);
#   - the host unit opens no namespace (a function in torch's, pybind11's or std's namespaces could
#     join the overloads main.cpp's templates find by argument-dependent lookup where they are
#     instantiated, at the unit's end), specialises no template explicitly (`template <>`) and
#     defines no macro main.cpp spells (main.cpp's words would read otherwise in the host's part).
_TORCH_EXTENSION_INCLUDE = re.compile(r"#\s*include\s*<\s*torch/extension\.h\s*>\s*$")
_JOIN_SPECIFIERS = {"template", "static", "inline", "extern", "friend", "typedef", "using", "operator", "virtual",
                    "constexpr", "consteval", "__attribute__", "decltype", "auto", "namespace", "struct", "class",
                    "union", "enum", "noexcept", "throw", "requires"}
_MODULE_NAMES = ("PyInit_", "pybind11_")


def _parameter_types(toks, open_, close):
    """A declarator's parameters as comparable type texts (names and top-level const dropped), or
    None where a parameter has a default or a form the comparison does not read."""
    types = []
    for p in _split_params(toks, open_, close):
        words = [t.text for t in p]
        if not words or "=" in words or "..." in words or any(t.kind not in ("id", "op", "num") for t in p):
            return None
        if any(w in ("(", "[") for w in words):
            return None  # a function pointer or an array: read no further
        if _names_itself(p):
            words = words[:-1]
        if not any(w in ("*", "&", "&&", "<") for w in words):
            words = [w for w in words if w not in ("const", "volatile")]  # a top-level qualifier
        types.append(" ".join(words))
    return types


def _prototype(toks, first, last):
    """(name, parameter types) of a declaration or definition head toks[first..last] that declares
    one plain function at namespace scope, else None."""
    head = toks[first:last + 1]
    if not head or any(t.kind == "id" and t.text in _JOIN_SPECIFIERS for t in head):
        return None
    if not _looks_like_function(head):
        return None
    name, open_, close = _declarator(head)
    if close != len(head) - 1 or (name > 0 and _is_op(head[name - 1], "::")):
        return None  # something after the parameters (a qualifier, a trailing type), or a qualified name
    types = _parameter_types(head, open_, close)
    return None if types is None else (head[name].text, types)


def join_declined(main_text, host_text):
    """Why load_inline's main.cpp (main_text) and a split's host unit (host_text) may not be compiled
    as one unit, main.cpp's text first, or "" where they may (the rules above)."""
    if len(main_text) + len(host_text) > 2 * MAX_SOURCE_CHARS:
        return "the sources are longer than the reading goes"
    try:
        main_toks, host_toks = _tokens(main_text), _tokens(host_text)
        main_items, host_items = _items(main_toks, 0, len(main_toks)), _items(host_toks, 0, len(host_toks))
    except NotSplit as e:
        return f"a source the reading does not know ({e})"
    except RecursionError:
        return "declarations nested deeper than the reading goes"
    for k, t in enumerate(host_toks):
        if t.kind == "id" and t.text == "namespace" and not (k > 0 and host_toks[k - 1].text == "using"):
            return "the host unit opens a namespace"
        if t.kind == "id" and t.text == "template" and k + 2 < len(host_toks) and _is_op(host_toks[k + 1], "<") \
                and _is_op(host_toks[k + 2], ">"):
            return "the host unit specialises a template explicitly"
    # A macro of the host unit's that main.cpp spells would read main.cpp's words (a prototype's
    # types) otherwise in the host unit's part than in main.cpp's.
    main_spells = {t.text for t in main_toks if t.kind == "id"}
    for t in host_toks:
        defined_macro = _DEFINE.match(t.text) if t.kind == "pp" else None
        if defined_macro and defined_macro.group(1) in main_spells:
            return f"the host unit defines a macro main.cpp spells ({defined_macro.group(1)})"
    # Every name the host unit spells anywhere (its directives, comments and strings too: more
    # than it can use, never fewer).
    host_spells = set(re.findall(r"[A-Za-z_]\w*", host_text))
    # Where the host unit first mentions each name: an identifier's token, or a directive naming it
    first_mention = {}
    for k, t in enumerate(host_toks):
        for word in ([t.text] if t.kind == "id" else re.findall(r"[A-Za-z_]\w*", t.text) if t.kind == "pp" else []):
            first_mention.setdefault(word, k)
    # What the host unit declares at file scope, by the token of the declared name: (name, types)
    declares = {}
    for item in host_items:
        if item.kind in ("function", "decl"):
            head_last = item.body - 1 if item.kind == "function" else item.last - 1
            found = _prototype(host_toks, item.first, head_last)
            if found is not None:
                name_at = _declarator(host_toks[item.first:head_last + 1])[0] + item.first
                declares[name_at] = found
    for item in main_items:
        if item.kind == "pp":
            if not _TORCH_EXTENSION_INCLUDE.match(main_toks[item.first].text):
                return f"main.cpp has a directive other than torch's header's include ({main_toks[item.first].text[:80]})"
            continue
        if item.kind == "function" and main_toks[item.first].text == "PYBIND11_MODULE":
            spelled = sorted(n for n in host_spells if n.startswith(_MODULE_NAMES))
            if spelled:
                return f"the host unit spells a name of the module's ({spelled[0]})"
            continue
        if item.kind == "decl":
            found = _prototype(main_toks, item.first, item.last - 1)
            if found is None:
                return "main.cpp declares something other than a function"
            # Joined, main.cpp's prototype is visible from the host unit's first line on, so the
            # host unit's first mention of the name (a macro's too) must be its own declaration of
            # that same function: before it, alone, the name is undeclared (or another overload's).
            first = first_mention.get(found[0])
            if first is None or declares.get(first) != found:
                return (f"main.cpp declares {found[0]}, which the host unit does not declare the same way "
                        "before any other mention of it")
            continue
        if item.kind == "function":
            found = _prototype(main_toks, item.first, item.body - 1)
            if found is None:
                return "main.cpp defines something other than a plain function"
            if found[0] in host_spells:
                return f"main.cpp defines {found[0]}, a name the host unit spells"
            continue
        return "main.cpp opens a namespace or a linkage block"
    return ""


def joined_unit(main_path, main_text, host_text, lead=""):
    """The one unit: lead (torch's header's include where it is not precompiled ahead of the unit),
    main.cpp's text under its own name (`#line`), then the host unit's."""
    quoted = main_path.replace("\\", "\\\\").replace('"', '\\"')
    return lead + f'#line 1 "{quoted}"\n' + main_text + ("" if main_text.endswith("\n") else "\n") + host_text
