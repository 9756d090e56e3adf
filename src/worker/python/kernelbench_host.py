# The embedded interpreter's side of KernelBench-format answers (docs/candidate-format.md,
# "KernelBench format"): the static check of the answer's source, the cached extension build
# behind load_inline, the run-time audit hook, and the model's construction, parameters and calls.
# pythonhost.cpp loads this file once as the module `_kwb_host`; nothing in it comes from an
# answer. Tensors cross to and from C++ as DLPack capsules (no copies: one libtorch serves both).
import ast
import builtins
import dis
import importlib.machinery
import json
import os
import sys
import time
import _thread
import threading
import re
import string
import types
import weakref
import _string

import torch
import torch.nn
import torch.nn.functional
import torch.utils.cpp_extension as _cpp
import torch.utils.dlpack as _dlpack

try:
    # Loaded by the host, before any answer: an answer's `import numpy` then only reads it (numpy's
    # own first import loads ctypes, which the armed sandbox refuses). Absent, that import is the
    # answer's ModuleNotFoundError.
    import numpy as _numpy
except Exception:  # noqa: B902 (missing, or one that fails to import beside this torch: no numpy either way)
    _numpy = None


# ---- the static check ---------------------------------------------------------------------------

# torch.autograd: a custom autograd Function is an honest answer (a real QwQ-32B answer, correct under
# KernelBench, was refused for `from torch.autograd import Function`); it is reachable as torch.autograd
# anyway, and its hooks and profiler stay refused by name (DENIED_ATTRIBUTES below).
# Other torch modules the answer can read as attributes (torch.fft, torch.nn.init) may be imported
# too: torch_module_import.
# itertools and collections(.abc): KernelBench's own Swin references (L3/29, L3/30) import them for
# their _ntuple helper, and honest answers copy it (Gemini 2.5 Pro's L3/29, correct under KernelBench,
# was `rejected`); pure data structures and iterators, their abc registries refused by name below.
# numpy: the same references divide by np.log2(8), which every answer to them seen copies (one of
# the KernelBench leaderboard's, correct there, was `rejected`); of numpy only its ufuncs and float
# constants may be read (numpy_reason).
ALLOWED_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.autograd", "torch.utils.cpp_extension", "math",
                   "typing", "itertools", "collections", "collections.abc", "numpy"}
# `from torch.utils.cpp_extension import X`: only the builder of inline extensions.
ALLOWED_FROM = {"torch.utils.cpp_extension": {"load_inline"}}

DENIED_NAMES = {
    "open": "opens files", "exec": "runs code built at run time", "eval": "runs code built at run time",
    "compile": "builds code at run time", "__import__": "imports past the allowlist",
    "globals": "reaches the module's namespace", "locals": "reaches a frame's namespace",
    "vars": "reaches an object's namespace", "setattr": "writes attributes by name",
    "delattr": "deletes attributes by name",
    "breakpoint": "starts a debugger", "memoryview": "reaches raw memory",
    "exit": "ends the worker", "quit": "ends the worker", "__builtins__": "reaches the builtins",
    "os": "the os module", "sys": "the sys module", "subprocess": "starts processes", "socket": "opens sockets",
    "threading": "starts threads", "_thread": "starts threads", "ctypes": "calls native code",
    "importlib": "imports past the allowlist", "multiprocessing": "starts processes",
}

# Attribute chains (with import aliases resolved) that are refused, by prefix.
DENIED_ATTRIBUTES = {
    "torch.cuda.Event": "torch's CUDA events (the timer's own kind)",
    "torch.cuda.synchronize": "synchronisation is the evaluator's",
    "torch.cuda.Stream": "work on another stream escapes the timer",
    "torch.cuda.stream": "work on another stream escapes the timer",
    "torch.cuda.ExternalStream": "work on another stream escapes the timer",
    "torch.cuda.set_stream": "work on another stream escapes the timer",
    "torch.cuda.StreamContext": "work on another stream escapes the timer",
    "torch.cuda.graph": "CUDA graphs replay recorded work", "torch.cuda.graphs": "CUDA graphs replay recorded work",
    "torch.cuda.CUDAGraph": "CUDA graphs replay recorded work",
    "torch.cuda._sleep": "spins the GPU", "torch.cuda.set_sync_debug_mode": "changes the process's CUDA settings",
    "torch.cuda.memory": "the allocator's state", "torch.cuda.empty_cache": "the allocator's state",
    "torch.cuda.profiler": "profiles the process",
    "torch.load": "reads files", "torch.save": "writes files", "torch.hub": "downloads",
    "torch.ops.load_library": "loads native libraries", "torch.classes": "loads native classes",
    "torch.ops.import_module": "imports modules by name",
    "torch.library": "registers operators", "torch._C": "torch's internals", "torch.multiprocessing": "starts processes",
    "torch.distributed": "opens connections",
    "torch.backends": "holds the process's numeric settings (cudnn.benchmark, TF32), which are the evaluator's",
    "torch.set_default_tensor_type": "changes the process's defaults", "torch.set_default_dtype": "changes the process's defaults",
    "torch.Tensor._make_subclass": "makes tensor subclasses", "torch._tensor": "torch's internals",
    "torch.overrides": "tensor subclass machinery", "torch.utils.dlpack": "tensor exchange is the evaluator's",
    "torch.compile": "compiles Python at run time", "torch.jit": "compiles Python at run time",
    "torch.export": "compiles Python at run time", "torch.compiler": "compiles Python at run time",
    # Process-wide settings that outlive the answer (the evaluator's own and later answers' runs).
    "torch.set_num_threads": "changes the process's settings", "torch.set_num_interop_threads": "changes the process's settings",
    "torch.set_flush_denormal": "changes the process's numeric settings",
    "torch.use_deterministic_algorithms": "changes the process's numeric settings",
    "torch.set_float32_matmul_precision": "changes the process's numeric settings",
    "torch.set_default_device": "changes the process's defaults",
    # Generated Python code run with exec (fx's GraphModule, the quantisation passes built on it),
    # process-wide hooks and handlers, torch's test internals.
    "torch.fx": "generates and runs Python code", "torch.ao": "generates and runs Python code (torch.fx)",
    "torch.quantization": "generates and runs Python code (torch.fx)", "torch.testing": "torch's test internals",
    "torch.monitor": "registers process-wide handlers", "torch.autograd.graph": "registers process-wide autograd hooks",
    # Annotations written as strings are evaluated by these, with the interpreter's own builtins.
    "typing.get_type_hints": "evaluates strings as code", "typing.ForwardRef": "evaluates strings as code",
    # torch's C++ bindings open files with no audit event (torch.serialization.save writes through
    # PyTorchFileWriter): every file reader and writer is refused by name.
    "torch.serialization": "reads and writes files", "torch.package": "reads and writes files",
    "torch.onnx": "writes files", "torch.profiler": "writes traces", "torch.autograd.profiler": "writes traces",
    "torch.from_file": "maps files",
}
# Attribute names refused on any object (a storage's from_file, …), whatever holds them: these
# reach files, modules, frames or attributes named by strings from objects the chains above do
# not see (a tensor, torch.ops, a generator, the model itself).
DENIED_ATTRIBUTE_NAMES = {
    "from_file": "maps files", "_make_subclass": "makes tensor subclasses",
    "import_module": "imports modules by name", "load_library": "loads native libraries",
    "attrgetter": "reads attributes by name", "methodcaller": "calls methods by name",
    "get_submodule": "reads attributes by name (the evaluator's own use)",
    "get_parameter": "reads attributes by name (the evaluator's own use)",
    "get_buffer": "reads attributes by name (the evaluator's own use)",
    "get_type_hints": "evaluates strings as code", "ForwardRef": "evaluates strings as code",
    # collections.abc.Iterable.register(torch.Tensor): a process-wide registry torch's own code asks
    # (isinstance(x, Sequence)), which would outlive the answer in a reused worker.
    "register": "registers classes process-wide (an abc's registry)",
}
# Interpreter frames and code objects: a frame's globals are the harness's (its modules, the
# sandbox's own state).
for _n in ("gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await",
           "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "co_code"):
    DENIED_ATTRIBUTE_NAMES[_n] = "reaches the interpreter's frames and code"
# Modules held as attributes (numpy's array.ctypes._ctypes, a module's own imports).
for _n in ("os", "sys", "subprocess", "ctypes", "_ctypes", "builtins", "importlib", "socket", "threading", "_thread",
           "multiprocessing", "inspect", "posix", "pickle", "marshal", "shutil", "mmap", "gc"):
    DENIED_ATTRIBUTE_NAMES[_n] = f"reaches the {_n} module"
ALLOWED_CPP_EXTENSION = {"load_inline"}


def attribute_name_reason(attr, dunder_ok=False):
    """Why reading `.attr` is refused on any object, by its name alone: the static check's rule for
    `x.attr`, and getattr's at run time for a name computed there (_guarded_getattr). None where
    the name may be read (a chain rooted at a module is checked besides, by its path)."""
    if attr in DENIED_ATTRIBUTE_NAMES:
        return f"attribute '{attr}' is not allowed: {DENIED_ATTRIBUTE_NAMES[attr]}"
    if attr in TORCH_PRIVATE_MEMBERS:
        return (f"attribute '{attr}' is not allowed: torch's private internals (a module's hook tables and parameter "
                "dictionaries, a tensor's or storage's internals)")
    if attr.startswith("register_") and "hook" in attr:
        return (f"'{attr}' is not allowed: a hook runs the answer's code inside the evaluator's own calls (and a "
                "process-wide one inside later answers')")
    if attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS and not dunder_ok:
        return f"attribute '{attr}': special attributes reach past the answer's own objects"
    return None
# Private torch helpers that honest answers copy from nn.Linear/nn.Conv's reset_parameters: pure
# arithmetic on a tensor's shape, nothing of the process reached. Refusing them made a real
# QwQ-32B answer `rejected` (issue 33's agreement study).
# nn.Conv's argument normalisers (_triple(3) == (3, 3, 3)) likewise: Gemini 2.5 Pro's L1/60 imported
# _triple from torch.nn.modules.utils, as nn.Conv3d does.
PURE_PRIVATE_HELPERS = {"torch.nn.init._calculate_fan_in_and_fan_out", "torch.nn.init._calculate_correct_fan",
                        "torch.nn.modules.utils._single", "torch.nn.modules.utils._pair",
                        "torch.nn.modules.utils._triple", "torch.nn.modules.utils._quadruple",
                        "torch.nn.modules.utils._ntuple"}
ALLOWED_DUNDERS = {"__init__"}
DENIED_DEFS = {"__torch_function__": "a tensor subclass's dispatch hook", "__torch_dispatch__": "a tensor subclass's dispatch hook",
               "__del__": "runs code when objects die", "__getattr__": "computes attributes", "__getattribute__": "computes attributes"}
# Base classes a class of the answer may have (or a class of the answer itself, or a layer class of
# torch.nn: torch_layer_class).
ALLOWED_BASES = {"torch.nn.Module", "torch.autograd.Function", "object"}
BASES_RULE = "classes may derive from torch.nn.Module, a layer class of torch.nn, torch.autograd.Function or the " \
             "answer's own classes"
# Members a class may define although a torch base has them: forward is the answer's, and extra_repr
# only feeds repr(), which the evaluator never calls (Gemini 2.5 Pro wrote one on 6 of 250 tasks,
# L1/33 correct under KernelBench, all `rejected` before). train and eval switch the model's mode,
# which neither the evaluator nor KernelBench's harness ever does (the model is run as constructed)
# and torch calls from nothing else: only the answer's own code reaches them (gemma-4-26B's no-op
# `train` in L3/16, correct under KernelBench; CUDA-L1's `train` that refreshes fused weights).
OVERRIDABLE = {"forward", "extra_repr", "train", "eval"}
# Special methods a class of the answer may define: the others run when Python or the evaluator
# handles the answer's objects (printing, comparing, hashing, destroying them), outside forward.
ALLOWED_CLASS_DUNDERS = {"__init__"}


def _torch_members():
    """nn.Module's own members (class and instance), and the private members of torch's tensors,
    storages and autograd functions. Empty where torch is a stand-in (test_extension_cache.py)."""
    module_members, private = set(), set()
    try:
        module_members = {n for n in dir(torch.nn.Module) if not n.startswith("__")} | set(vars(torch.nn.Module()))
    except Exception:
        pass
    for cls in (torch.nn.Module, getattr(torch, "Tensor", None), getattr(torch.nn, "Parameter", None),
                getattr(torch, "UntypedStorage", None), getattr(torch, "TypedStorage", None),
                getattr(torch, "_UntypedStorage", None), getattr(getattr(torch, "autograd", None), "Function", None)):
        if isinstance(cls, type):
            private |= {n for n in dir(cls) if n.startswith("_") and not n.startswith("__")}
    return module_members, private | {n for n in module_members if n.startswith("_")}


# nn.Module's members: the evaluator calls them (named_parameters, get_submodule, to, _apply, the
# hook tables, …), so a class of the answer does not define them (forward aside) and no code
# replaces them. Torch's private members (a module's hook tables, a storage's shared-memory
# files) are refused by name anywhere.
NN_MODULE_MEMBERS, TORCH_PRIVATE_MEMBERS = _torch_members()
# Read by generic module code (walking module._modules); writing them (or defining them) stays refused.
TORCH_PRIVATE_MEMBERS -= {"_modules", "_parameters", "_buffers"}
CLASS_PROTECTED = NN_MODULE_MEMBERS - OVERRIDABLE
WRITE_PROTECTED = NN_MODULE_MEMBERS - {"training"}

# Modules whose objects an answer may not reach through an allowed module's attributes (a
# function or class they define, or the builtin they are): files, processes, imports, frames,
# attribute access by name, pickling.
DENIED_ORIGINS = {
    "sys", "os", "posix", "posixpath", "io", "_io", "importlib", "_imp", "_frozen_importlib",
    "_frozen_importlib_external", "zipimport", "pkgutil", "subprocess", "_posixsubprocess", "ctypes", "_ctypes",
    "socket", "_socket", "ssl", "select", "selectors", "threading", "_thread", "multiprocessing", "concurrent",
    "asyncio", "signal", "_signal", "mmap", "pty", "tty", "fcntl", "resource", "shutil", "pathlib", "tempfile", "glob",
    "pickle", "_pickle", "copyreg", "marshal", "shelve", "dbm", "sqlite3", "runpy", "code", "codeop", "inspect", "types",
    "gc", "operator", "_operator", "functools", "_functools", "weakref", "_weakref", "pdb", "bdb", "pydoc",
    "traceback", "linecache", "site", "sysconfig", "platform", "logging", "tarfile", "zipfile", "urllib", "http",
    "ftplib", "smtplib", "webbrowser", "atexit", "faulthandler", "tracemalloc", "numpy", "_posixshmem",
}
_DENIED_BUILTIN_NAMES = ("open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "setattr",
                         "delattr", "getattr", "breakpoint", "input", "exit", "quit", "help")


def torch_layer_class(value):
    """A public layer class of torch.nn (nn.Linear, nn.BatchNorm2d, nn.Sequential): an nn.Module
    subclass defined under torch.nn.modules and exported as torch.nn.<its name>. An answer's class
    may derive from one (Gemini 2.5 Pro's `class FusedBatchNormReLU(nn.BatchNorm2d)`), and then
    overrides none of its members but forward (torch_members_of)."""
    try:
        return isinstance(value, type) and issubclass(value, torch.nn.Module) \
            and str(getattr(value, "__module__", "")).startswith("torch.nn.modules.") \
            and getattr(torch.nn, value.__name__, None) is value
    except Exception:
        return False


def torch_members_of(cls):
    """The members (not special) that torch's classes among cls's bases define: what torch's own code
    calls (nn.LSTM's _apply, run by the evaluator's .to(), calls flatten_parameters) stays torch's."""
    members = set()
    for klass in getattr(cls, "__mro__", ()):
        # nn.Module's classes only: an autograd.Function's backward and setup_context are the answer's.
        if isinstance(klass, type) and issubclass(klass, torch.nn.Module) \
                and str(getattr(klass, "__module__", "")).split(".")[0] == "torch":
            members |= {n for n in vars(klass) if not (n.startswith("__") and n.endswith("__"))}
    return members - OVERRIDABLE


def protected_member_reason(cls, name):
    """Why a class of the answer may not define `name`, one of its torch bases' members (the static
    check's and the class statement's words)."""
    owner = "torch.nn.Module" if name in CLASS_PROTECTED else "its torch base class"
    return (f"class {cls} defines '{name}', which {owner} has: the evaluator and torch call the model's own torch "
            "methods; give helpers other names (only __init__, forward, extra_repr, train and eval are overridden)")


def attribute_reason(path):
    parts = path.split(".")
    if path in PURE_PRIVATE_HELPERS:
        return None
    if any(p.startswith("_") and p != "__init__" for p in parts[1:]):
        what = "torch's private internals" if parts[0] == "torch" else "private internals"
        return f"'{path}' is not allowed: {what}"
    for prefix, why in DENIED_ATTRIBUTES.items():
        if path == prefix or path.startswith(prefix + "."):
            return f"'{path}' is not allowed: {why}"
    if path.startswith("torch.utils.") and not path.startswith("torch.utils.cpp_extension"):
        return f"'{path}' is not allowed: of torch.utils only cpp_extension.load_inline may be used"
    if path.startswith("torch.utils.cpp_extension."):
        if path.split(".")[3] not in ALLOWED_CPP_EXTENSION:
            return f"'{path}' is not allowed: of torch.utils.cpp_extension only load_inline may be used"
    return None


def _origin(value):
    """The denied module a value comes from ("" if none): a builtin refused by name, or a
    function or class defined in a module of DENIED_ORIGINS."""
    for name in _DENIED_BUILTIN_NAMES:
        if value is getattr(builtins, name, None):
            return f"the builtin '{name}'"
    try:
        module = getattr(value, "__module__", None)
    except Exception:
        return ""
    if isinstance(module, str) and module.split(".")[0] in DENIED_ORIGINS:
        return f"from the module '{module}'"
    return ""


def numpy_reason(parent, name, value):
    """numpy gives an answer its ufuncs (elementwise math: np.log2, np.sqrt, np.exp) and its float
    constants (np.pi, np.inf), read from numpy itself, and nothing else: its file readers and
    writers, its ctypes bridge, its submodules and process-wide settings stay out of reach."""
    if parent == "numpy" and not name.startswith("_") and _numpy is not None \
            and (isinstance(value, _numpy.ufunc) or type(value) is float):
        return None
    return (f"'{parent}.{name}' is not allowed: of numpy only its ufuncs (elementwise math such as np.log2, "
            "np.sqrt) and constants (np.pi) may be used; torch and math have the rest")


def member_reason(parent, name, value):
    """Why an answer may not use `parent.name` (parent: the real dotted name of a module or of
    a member reached from one; value: what it resolves to), or None. The same rule serves the
    static check (chains resolved against the modules imported here) and the answer's view of
    its modules at run time."""
    if parent == "numpy" or parent.startswith("numpy."):
        return numpy_reason(parent, name, value)
    if name.startswith("_") and name != "__init__":
        return attribute_reason(f"{parent}.{name}")
    path = f"{parent}.{name}"
    reason = attribute_reason(path)
    if reason:
        return reason
    if isinstance(value, types.ModuleType):
        real = getattr(value, "__name__", path)
        if not isinstance(real, str):
            real = path
        if real != path:
            reason = attribute_reason(real)
            if reason:
                return f"'{path}' is the module '{real}': {reason}"
        if real in ALLOWED_MODULES or real.startswith("torch."):
            return None
        return (f"'{path}' is the module '{real}': an answer may use only {', '.join(sorted(ALLOWED_MODULES))} "
                "and torch's own modules")
    origin = _origin(value)
    if origin:
        return f"'{path}' is not allowed: it is {origin}"
    # A torch member re-exported elsewhere (torch.cuda.caching_allocator_alloc is
    # torch.cuda.memory's): the rule of the module that defines it.
    try:
        module, own = getattr(value, "__module__", None), getattr(value, "__name__", None)
    except Exception:
        return None
    if isinstance(module, str) and isinstance(own, str) and module.startswith("torch.") \
            and not any(p.startswith("_") for p in module.split(".")):
        reason = attribute_reason(f"{module}.{own}")
        if reason:
            return f"'{path}' is {module}.{own}: {reason}"
    return None


def _canonical(parent, name, value):
    if isinstance(value, types.ModuleType) and isinstance(getattr(value, "__name__", None), str):
        return value.__name__
    return f"{parent}.{name}"


def resolve_reason(path):
    """Walks a dotted chain rooted at an imported module against the real modules: the first
    member an answer may not use, or None (also where the chain does not resolve: that is the
    answer's own AttributeError when it runs)."""
    parts = path.split(".")
    obj = sys.modules.get(parts[0])
    if obj is None:
        return None
    parent = parts[0]
    for name in parts[1:]:
        if name.startswith("__") and name.endswith("__"):
            return None  # special attributes are refused by name
        if name.startswith("_"):
            return member_reason(parent, name, None)
        reason = attribute_reason(f"{parent}.{name}")
        if reason:
            return reason  # before reading it (torch imports some modules on first read)
        try:
            value = getattr(obj, name)
        except Exception:
            return None
        reason = member_reason(parent, name, value)
        if reason:
            return reason
        parent, obj = _canonical(parent, name, value), value
    return None


def resolve_value(path):
    """The object a dotted chain rooted at an imported module names (after resolve_reason has
    passed it), or None."""
    parts = path.split(".")
    obj = sys.modules.get(parts[0])
    for name in parts[1:]:
        if obj is None:
            return None
        try:
            obj = getattr(obj, name)
        except Exception:
            return None
    return obj


def _format_attribute_fields(text, depth=0):
    """The replacement fields of a str.format template that read an attribute ('{0.__class__}')."""
    found = []
    try:
        for _literal, field, spec, _conversion in string.Formatter().parse(text):
            if field is not None:
                _first, rest = _string.formatter_field_name_split(field)
                for is_attribute, _key in rest:
                    if is_attribute:
                        found.append(field)
                        break
            if spec and depth < 2:
                found += _format_attribute_fields(spec, depth + 1)
    except ValueError:
        pass  # a malformed template fails when it runs, as the answer's error
    return found


_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _comment_only(text):
    """A C++/CUDA source that holds comments and nothing else (a placeholder for a kernel)."""
    return bool(text.strip()) and not _COMMENTS.sub("", text).strip()


def _placeholder_body(body):
    """Whether a function body does nothing: `pass`, `...`, `return None` or `raise NotImplementedError`,
    after an optional docstring."""
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) > 1:
        return False
    if not body or isinstance(body[0], ast.Pass):
        return True
    stmt = body[0]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return True
    if isinstance(stmt, ast.Return) and (stmt.value is None or isinstance(stmt.value, ast.Constant) and stmt.value.value is None):
        return True
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


class _Checker(ast.NodeVisitor):
    def __init__(self, tree):
        self.refusals = []
        self.notes = []  # honest mistakes seen in the source: [{"code", "line", "message"}]
        # Every name the source mentions outside import statements, in any role (read, written,
        # deleted, a parameter, a def, global): an import binding none of them is unused.
        self.mentioned = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                self.mentioned.add(node.id)
            elif isinstance(node, ast.arg):
                self.mentioned.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.mentioned.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.mentioned.update(node.names)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                self.mentioned.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self.mentioned.add(node.rest)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.mentioned.add(node.name)
        self.aliases = {}  # local name -> dotted module path, or "torch.nn.Module" for `from torch.nn import Module`
        self.classes = {}  # the answer's class name -> members its torch bases protect
        self.format_reads = set()  # ids of `x.__dict__` nodes unpacked into a literal template's format()
        # Names bound only to string literals (a kernel's source, a format template): name -> [text]
        self.literals = {}
        literal_targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                literal_targets.add(id(node.targets[0]))
                self.literals.setdefault(node.targets[0].id, []).append(node.value.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in literal_targets:
                self.literals[node.id] = None
            elif isinstance(node, ast.arg):
                self.literals[node.arg] = None
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.literals[node.name] = None
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    self.literals[(a.asname or a.name).split(".")[0]] = None
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    self.literals[name] = None

    def refuse(self, node, reason, missing_module=None):
        refusal = {"line": getattr(node, "lineno", 0), "reason": reason}
        if missing_module:
            refusal["missing_module"] = missing_module
        self.refusals.append(refusal)

    def dotted(self, node):
        """The attribute chain of a node as a dotted path with its root's alias resolved, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id)
        if root is None:
            return None
        return ".".join([root] + list(reversed(parts)))

    def texts(self, node):
        """The string literals an expression stands for (a literal, a list of them, a name bound
        only to literals), or None where it is computed."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for e in node.elts:
                t = self.texts(e)
                if t is None:
                    return None
                out += t
            return out
        if isinstance(node, ast.Name):
            return self.literals.get(node.id)
        return None

    def unused_import(self, node, module, bound):
        """A refused import whose names the answer never mentions (real models' habit: an `import
        os` left over; 20 of CUDA-L1's answers): noted, never imported, not refused. A module that
        exists nowhere keeps Python's own error (missing_module)."""
        if any(b in self.mentioned for b in bound) or missing_module(module, getattr(node, "level", 0)):
            return False
        # run_module hands the noted modules to _guarded_import, which binds an empty stand-in.
        self.notes.append({"code": "unused_import", "line": node.lineno, "module": module,
                           "message": f"the answer never uses what it imports from '{module}', so it was not "
                                      "imported (its names are bound to an empty module)"})
        return True

    def visit_Import(self, node):
        for a in node.names:
            if a.name not in ALLOWED_MODULES and not torch_module_import(a.name):
                if self.unused_import(node, a.name, [a.asname or a.name.split(".")[0]]):
                    continue
                why = torch_import_reason(a.name)
                self.refuse(node, why or f"import of '{a.name}': only {', '.join(sorted(ALLOWED_MODULES))} may be imported",
                            None if why else missing_module(a.name, 0))
                continue
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level or mod not in ALLOWED_MODULES and mod != "torch.utils" and not torch_module_import(mod):
            if not node.level and all(a.name != "*" for a in node.names) \
                    and self.unused_import(node, mod, [a.asname or a.name for a in node.names]):
                return
            why = None if node.level else torch_import_reason(mod)
            self.refuse(node, why or f"import from '{'.' * node.level}{mod}': only {', '.join(sorted(ALLOWED_MODULES))} may be imported",
                        None if why else missing_module(mod, node.level))
            return
        for a in node.names:
            full = f"{mod}.{a.name}"
            if a.name == "*":
                self.refuse(node, f"'from {mod} import *': name what you import")
            elif mod in ALLOWED_FROM and a.name not in ALLOWED_FROM[mod]:
                self.refuse(node, f"'{full}': only {', '.join(sorted(ALLOWED_FROM[mod]))} may be imported from {mod}")
            elif mod == "torch.utils" and a.name != "cpp_extension":
                self.refuse(node, f"'{full}': only cpp_extension may be imported from torch.utils")
            else:
                reason = attribute_reason(full) or resolve_reason(full)
                if reason:
                    self.refuse(node, reason)
                self.aliases[a.asname or a.name] = full

    # Kept for callers of the method (the rule is the module-level function).
    def attribute_reason(self, path):
        return attribute_reason(path)

    def visit_Attribute(self, node):
        reason = attribute_name_reason(node.attr, dunder_ok=id(node) in self.format_reads)
        if reason:
            self.refuse(node, reason)
        if node.attr in ("format", "format_map"):
            self.check_format(node)
        path = self.dotted(node)
        if path:
            reason = attribute_reason(path) or resolve_reason(path)
            if reason:
                self.refuse(node, reason)
                return  # one refusal per chain
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.aliases:
                self.refuse(node, f"writes to '{path or root.id}': a module's attributes (torch's timing and "
                                  "synchronisation among them) must not be patched")
            elif node.attr in WRITE_PROTECTED:
                self.refuse(node, f"writes to '{ast.unparse(node)}': '{node.attr}' is torch.nn.Module's own, which "
                                  "the evaluator calls on the model; keep the answer's values under other names")
        self.generic_visit(node)

    def check_format(self, node):
        """str.format reads the attributes its fields name ('{0.__class__}'): only literal
        templates, without attribute fields."""
        templates = self.texts(node.value)
        if templates is None:
            self.refuse(node, f"'.{node.attr}' on a template that is not a string literal: format fields read "
                              "attributes by name ('{0.attr}'); use an f-string")
            return
        for t in templates:
            fields = _format_attribute_fields(t)
            if fields:
                self.refuse(node, f"'.{node.attr}' with the field '{{{fields[0]}}}': format fields read attributes "
                                  "by name; use an f-string")
                return

    def visit_Name(self, node):
        if node.id in DENIED_NAMES and node.id not in self.aliases:
            self.refuse(node, f"'{node.id}' is not allowed: {DENIED_NAMES[node.id]}")

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "type" and (len(node.args) != 1 or node.keywords):
            self.refuse(node, "type(name, bases, namespace) makes a class past the checks on class statements")
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and "getattr" not in self.aliases \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            # getattr(x, 'name') is x.name: the same rules, here; a computed name meets them at run time.
            name = node.args[1].value
            path = self.dotted(node.args[0])
            reason = getattr_name_reason(name) or (path and (attribute_reason(f"{path}.{name}") or
                                                            resolve_reason(f"{path}.{name}")))
            if reason:
                self.refuse(node, reason)
        # '{num_features}, eps={eps}'.format(**self.__dict__), nn.BatchNorm's own extra_repr, which
        # answers copy (Gemini 2.5 Pro's L1/33, correct under KernelBench): the dict is only unpacked
        # into a literal template whose fields (checked below) name no attribute, so nothing is
        # written through it and only the fields named are read.
        if isinstance(node.func, ast.Attribute) and node.func.attr == "format" and self.texts(node.func.value):
            for kw in node.keywords:
                if kw.arg is None and isinstance(kw.value, ast.Attribute) and kw.value.attr == "__dict__":
                    self.format_reads.add(id(kw.value))
        if self.is_load_inline(node.func):
            self.check_load_inline(node)
        self.generic_visit(node)

    def is_load_inline(self, func):
        if isinstance(func, ast.Name):
            return self.aliases.get(func.id) == "torch.utils.cpp_extension.load_inline"
        return self.dotted(func) == "torch.utils.cpp_extension.load_inline"

    def check_load_inline(self, node):
        """Notes a source that is only a comment (a placeholder where the kernel should be)."""
        sources = {}
        for i, key in ((1, "cpp_sources"), (2, "cuda_sources")):
            if len(node.args) > i:
                sources[key] = node.args[i]
        for kw in node.keywords:
            if kw.arg in ("cpp_sources", "cuda_sources"):
                sources[kw.arg] = kw.value
        for key, value in sources.items():
            texts = self.texts(value)
            if texts and any(_comment_only(t) for t in texts):
                self.notes.append({"code": "placeholder", "line": node.lineno,
                                   "message": f"placeholder: load_inline's {key} (line {node.lineno}) is only a comment, "
                                              "no code: write the kernel and the functions the extension binds"})
                return

    def visit_ClassDef(self, node):
        protected = set(CLASS_PROTECTED)
        for base in node.bases:
            path = self.dotted(base)
            if isinstance(base, ast.Name) and (base.id in self.classes or base.id == "object"):
                protected |= self.classes.get(base.id, set())
                continue
            if path in ALLOWED_BASES:
                continue
            if path and not attribute_reason(path) and not resolve_reason(path):
                layer = resolve_value(path)
                if torch_layer_class(layer):
                    protected |= torch_members_of(layer)
                    continue
            root = base
            while isinstance(root, ast.Attribute):
                root = root.value
            if path is None and isinstance(root, ast.Name):
                # Not an imported module's member: a name of the answer's own (checked when the
                # class is made, docs/sandbox.md) or an undefined one (the answer's NameError).
                continue
            shown = path or ast.unparse(base)
            why = "a tensor subclass can compute lazily or fake its results" if "Tensor" in shown else BASES_RULE
            self.refuse(node, f"class {node.name} derives from {shown}: {why}")
        for kw in node.keywords:
            self.refuse(node, f"class {node.name}: keyword '{kw.arg}' in its bases (metaclasses) is not allowed")
        if node.decorator_list:
            self.refuse(node, f"class {node.name}: class decorators are not allowed")
        for stmt in node.body:
            for name, where in self.member_names(stmt):
                self.check_member(node.name, name, where, protected)
        if node.name == "ModelNew":
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "forward" \
                        and _placeholder_body(stmt.body):
                    self.notes.append({"code": "placeholder", "line": stmt.lineno,
                                       "message": f"placeholder: ModelNew.forward (line {stmt.lineno}) does nothing (its "
                                                  "body is only pass, ..., return None or raise NotImplementedError): "
                                                  "write the forward pass that runs the kernels"})
        self.classes[node.name] = protected
        self.generic_visit(node)

    @staticmethod
    def member_names(stmt):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [(stmt.name, stmt)]
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
            if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
        out = []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.append((n.id, stmt))
        return out

    def check_member(self, cls, name, where, protected=CLASS_PROTECTED):
        if name in DENIED_DEFS and isinstance(where, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return  # visit_FunctionDef names it, with its own reason
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_CLASS_DUNDERS:
            self.refuse(where, f"class {cls} defines '{name}': special methods run when Python or the evaluator handles "
                               "the answer's objects (printing, comparing, hashing, destroying them); only __init__ may be defined")
        elif name in protected:
            self.refuse(where, protected_member_reason(cls, name))

    def visit_FunctionDef(self, node):
        if node.name in DENIED_DEFS:
            self.refuse(node, f"def {node.name}: {DENIED_DEFS[node.name]} is not allowed")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Global(self, node):
        for name in node.names:
            if name in self.aliases:
                self.refuse(node, f"'global {name}': rebinding an imported module is not allowed")

    def visit_Await(self, node):
        self.refuse(node, "async code is not allowed")


def torch_module_import(name):
    """Whether an import of `name` beyond the allowlist is of a torch module the answer can read
    as attributes of `torch` already (`import torch.nn.init as init`, `from torch.nn.parameter
    import Parameter`, common in honest answers): loaded (nothing new runs), every step of the
    chain allowed by the attribute rules, and the chain reaching that very module. What it then
    names goes through the same rules as an attribute read."""
    if not name.startswith("torch.") or name not in sys.modules:
        return False
    if attribute_reason(name) or resolve_reason(name):
        return False
    obj = sys.modules["torch"]
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return obj is sys.modules[name]


def torch_import_reason(name):
    """Why a torch module may not be imported, where the attribute rules say (torch.jit: "compiles
    Python at run time"), else None."""
    return (attribute_reason(name) or resolve_reason(name)) if name.startswith("torch.") else None


def missing_module(name, level):
    """Where an import the allowlist refuses names a module that exists nowhere, the error Python
    would raise running it ("ModuleNotFoundError: No module named 'custom_cuda_ops'": a module the model made up, or its own
    extension's name): an honest mistake, the study's "mismatched module names", not an attempt on
    the sandbox. None where the module exists (refused on purpose) or cannot be told apart.
    Looked up without importing anything: the top-level name in sys.modules, the built-in and
    frozen modules, and sys.path's finders."""
    if level:
        return "ImportError: attempted relative import with no known parent package"
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for i in range(len(parts)):
        prefix = ".".join(parts[:i + 1])
        if prefix in sys.modules or (i == 0 and prefix in sys.builtin_module_names):
            continue
        # A submodule is looked for in its loaded parent's package path only; the first name in
        # the built-in, frozen and sys.path finders.
        path = getattr(sys.modules[".".join(parts[:i])], "__path__", None) if i else None
        if i and path is None:
            return f"ModuleNotFoundError: No module named '{prefix}'"  # the parent is a module, not a package
        try:
            if (not i and importlib.machinery.FrozenImporter.find_spec(prefix)) or \
                    importlib.machinery.PathFinder.find_spec(prefix, path):
                return None
        except (ImportError, ValueError, OSError):
            return None
        return f"ModuleNotFoundError: No module named '{prefix}'"
    return None


def analyse_source(source):
    """The static check: (refusals [{"line", "reason"}] (empty: it may run), notes on honest
    mistakes [{"code", "line", "message"}] used to name a failure when it comes)."""
    try:
        tree = ast.parse(source, filename="<answer>")
    except SyntaxError as e:
        return [{"line": e.lineno or 0, "reason": f"syntax error: {e.msg}", "syntax": True}], []
    checker = _Checker(tree)
    checker.visit(tree)
    return checker.refusals, checker.notes


def check_source(source):
    """The refusals of an answer's source as [{"line", "reason"}] (empty: it may run)."""
    return analyse_source(source)[0]


# ---- the sandbox at run time --------------------------------------------------------------------

_state = {"armed": False, "building": 0, "allowed_dirs": [], "unused_imports": frozenset(),
          "library_dirs": sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)} |
                                 {os.path.realpath(os.path.dirname(os.__file__))})}
_DENIED_EVENT_PREFIXES = ("subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
                          "os.forkpty", "os.kill", "os.killpg", "socket.", "ctypes.", "_thread.", "os.putenv",
                          "os.unsetenv", "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
                          "os.link", "os.symlink", "os.truncate", "os.utime", "shutil.", "urllib.", "http.",
                          "ftplib.", "smtplib.", "webbrowser.", "sys.settrace", "sys.setprofile", "sys.addaudithook",
                          "cpython.PyInterpreterState_", "mmap.",
                          # the interpreter's own objects: every object (the sandbox's state among them),
                          # other threads' frames, code objects made at run time
                          "gc.", "sys._current_frames", "sys._current_exceptions", "code.__new__")
# Frames and code objects, read by the answer's own code (through str.format, say): a frame's
# globals are the harness's. Library code (inspect, traceback) may read them.
_FRAME_ATTRIBUTES = {"gi_frame", "cr_frame", "ag_frame", "tb_frame", "gi_code", "cr_code", "ag_code", "f_code", "__code__"}
_ANSWER_FILE = "<answer>"  # the file name the answer's code is compiled under: its frames say so


class SandboxError(PermissionError):
    """An OSError, so library code that may fail to open a file (linecache, warnings) copes."""


def _under_allowed_dir(path, dirs):
    try:
        real = os.path.realpath(os.fsdecode(path))
    except Exception:
        return False
    return any(real == d or real.startswith(d + os.sep) for d in dirs)


_hook_depth = [0]  # inside the audit hook's own work: the events it causes (sys._getframe) pass
_build_guards = set()  # code objects of the answer's load_inline (below it: the harness's build)


def _answer_active(frame):
    """Whether the answer's own code is running: one of its frames on the stack from `frame` out,
    before the load_inline guard (under which the harness builds). This covers what the armed
    windows cannot: the answer's functions called back by anything (finalizers at a garbage
    collection, hooks, a __str__ that an error message formats) and answer code inside a build."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename == _ANSWER_FILE:
            return True
        if code in _build_guards:
            return False
        frame = frame.f_back
    return False


def _audit(event, args):
    # Enforced while the answer's code runs: inside the armed windows (its module, ModelNew(...),
    # the harness's calls into the model, forward), and wherever a frame of the answer's own code is
    # on the stack. The build under the harness's load_inline guard (ninja, nvcc, the compiler,
    # its files, the build broker's socket) is let through.
    if _hook_depth[0]:
        return
    if not (event == "open" or event.startswith(_DENIED_EVENT_PREFIXES) or event == "sys._getframe"
            or event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRIBUTES):
        return
    _hook_depth[0] += 1
    try:
        caller = sys._getframe(1)  # the frame whose operation raised the event
        if not (_state["armed"] and not _state["building"]) and not _answer_active(caller):
            return
        if event == "open":
            path, mode = args[0], args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
            if isinstance(path, int) or _under_allowed_dir(path, _state["allowed_dirs"]):
                return
            # Python and torch read their own modules lazily (io.open_code): reading the installed
            # libraries is let through, writing anywhere but the cache is not.
            if not any(c in mode for c in "wax+") and _under_allowed_dir(path, _state["library_dirs"]):
                return
            raise SandboxError(f"kwb sandbox: opening '{os.fsdecode(path)}' is not allowed in a KernelBench-format answer")
        if event in ("sys._getframe", "object.__getattr__"):
            if caller is not None and caller.f_code.co_filename == _ANSWER_FILE:
                what = f"'{args[1]}'" if event == "object.__getattr__" else "sys._getframe"
                raise SandboxError(f"kwb sandbox: reading {what} (the interpreter's frames and code) is not allowed "
                                   "in a KernelBench-format answer")
            return
        raise SandboxError(f"kwb sandbox: '{event}' is not allowed in a KernelBench-format answer")
    finally:
        _hook_depth[0] -= 1


sys.addaudithook(_audit)


def _guard_thread_start(real):
    def start(*args, **kwargs):
        refuse = _state["armed"] and not _state["building"]
        if not refuse:
            _hook_depth[0] += 1
            try:
                refuse = _answer_active(sys._getframe(1))
            finally:
                _hook_depth[0] -= 1
        if refuse:
            raise SandboxError("kwb sandbox: starting a thread is not allowed in a KernelBench-format answer")
        return real(*args, **kwargs)
    return start


# CPython 3.11 raises no audit event for a new thread: the starters themselves refuse while armed.
_thread.start_new_thread = _guard_thread_start(_thread.start_new_thread)
if hasattr(threading, "_start_new_thread"):
    threading._start_new_thread = _guard_thread_start(threading._start_new_thread)
if hasattr(threading, "_start_joinable_thread"):
    threading._start_joinable_thread = _guard_thread_start(threading._start_joinable_thread)


class _Armed:
    """The sandbox armed for a block (nested blocks keep it armed until the outermost ends)."""

    def __enter__(self):
        self.previous = _state["armed"]
        _state["armed"] = True

    def __exit__(self, *exc):
        _state["armed"] = self.previous
        return False


# ---- the answer's view of its modules -------------------------------------------------------------
# An answer's `import torch` binds a view of the module, not the module: each attribute it reads
# passes member_reason (the static check's rule, on the real objects), modules come back as views
# too, and nothing can be written. So a module the static check cannot see being reached (held in
# a variable, passed to a function, read from a list) still gives no way to sys, os or builtins,
# and torch cannot be patched. A value read once is kept in the view's own __dict__: the next read
# costs what a module's attribute costs.

_views = {}  # id(real module) -> its view
_view_targets = {}  # id(view) -> the real module


class _ModuleView(types.ModuleType):
    """A module as the answer sees it. Its reads go through the `__getattr__` kept in its own
    __dict__ (a module's own __getattr__, PEP 562): a read that was resolved once is a plain
    module read, at C speed."""

    def __setattr__(self, name, value):
        raise SandboxError(f"kwb sandbox: writing '{self.__name__}.{name}' is not allowed: a module's attributes must "
                           "not be patched")

    def __delattr__(self, name):
        raise SandboxError(f"kwb sandbox: deleting '{self.__name__}.{name}' is not allowed")

    def __dir__(self):
        return [n for n in dir(_view_targets[id(self)]) if not n.startswith("_")]

    def __repr__(self):
        return f"<module '{self.__name__}'>"


def _view_getattr(space, real):
    parent = real.__name__

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module '{parent}' has no attribute '{name}' an answer may read")
        # A private name has a reason unless it is one of the pure helpers the static check lets
        # through (PURE_PRIVATE_HELPERS): refused here with "kwb sandbox: None", an honest answer
        # calling nn.init._calculate_fan_in_and_fan_out was `rejected` (Qwen3-Coder's L3/3, session 22).
        reason = attribute_reason(f"{parent}.{name}")
        if reason:
            raise SandboxError(f"kwb sandbox: {reason}")
        value = getattr(real, name)  # an AttributeError is the answer's own mistake
        reason = member_reason(parent, name, value)
        if reason:
            raise SandboxError(f"kwb sandbox: {reason}")
        if isinstance(value, types.ModuleType):
            value = _view_of(value)
        elif f"{parent}.{name}" == "torch.utils.cpp_extension.load_inline":
            value = _checked_load_inline
        space[name] = value
        return value

    return __getattr__


def _view_of(module):
    view = _views.get(id(module))
    if view is None:
        view = _ModuleView(module.__name__)
        space = types.ModuleType.__getattribute__(view, "__dict__")
        space["__getattr__"] = _view_getattr(space, module)
        _view_targets[id(view)] = module
        _views[id(module)] = view
    return view


def _torch_lazy_import(name):
    """Whether an import is torch's own, made lazily from its C++ while the answer's frame is the
    current one: PyImport_ImportModule("torch.storage") the first time a tensor is made from a
    Python number (nn.Parameter(torch.tensor(1.0)), a common honest __init__) takes __import__ from
    the calling frame's builtins, the answer's, and an ImportError there fails torch's internal
    assert. Let through where the answer's instruction is not an import (a call into C code) and the
    module is torch's and already loaded: nothing runs, and the C code reads it from sys.modules.
    An import statement of the answer's is held to the allowlist as always."""
    if not (name == "torch" or name.startswith("torch.")) or name not in sys.modules:
        return False
    _hook_depth[0] += 1  # the host reads the frame, not the answer
    try:
        frame = sys._getframe(2)  # the frame _guarded_import was called from
        code = frame.f_code.co_code
        return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] not in _IMPORT_OPCODES
    finally:
        _hook_depth[0] -= 1


_IMPORT_OPCODES = {dis.opmap[op] for op in ("IMPORT_NAME", "IMPORT_FROM") if op in dis.opmap}


def _unused_stand_in(name, fromlist):
    """What an import the static check found unused binds: empty modules along the dotted name (and
    the names taken from it), nothing of the real module's."""
    parts = name.split(".")
    top = leaf = types.ModuleType(parts[0], "kwb: an unused import, never imported")
    for part in parts[1:]:
        child = types.ModuleType(f"{leaf.__name__}.{part}", "kwb: an unused import, never imported")
        setattr(leaf, part, child)
        leaf = child
    for n in fromlist or ():
        setattr(leaf, n, types.ModuleType(f"{name}.{n}", "kwb: an unused import, never imported"))
    return leaf if fromlist else top


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name not in ALLOWED_MODULES and not (name == "torch.utils" and fromlist) \
            and not torch_module_import(name):
        if not level and name in _state["unused_imports"]:
            return _unused_stand_in(name, fromlist)
        if not level and _torch_lazy_import(name):
            return _view_of(sys.modules[name])
        missing = missing_module(name, level)
        if missing:
            # A module that exists nowhere: Python's own error, where Python raises it (an answer's
            # `try: import cupy` / `except ImportError:` falls back as it would anywhere).
            kind, _, text = missing.partition(": ")
            error = (ModuleNotFoundError if kind == "ModuleNotFoundError" else ImportError)(text)
            error.kwb_missing_module = True
            raise error
        raise ImportError(f"kwb sandbox: import of '{name}' is not allowed")
    return _view_of(builtins.__import__(name, globals, locals, fromlist, level))


def _plain(value, depth=0):
    """Strings, numbers, booleans, None, and lists, tuples and dicts of them (exact types: no
    subclass whose methods are the answer's)."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if depth > 4:
        return False
    if type(value) in (list, tuple):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False


def _checked_load_inline(*args, **kwargs):
    """load_inline as the answer sees it. Its arguments must be plain values: the build turns
    them into strings, JSON and paths (str(), repr()) under the harness, where an object of the
    answer's would run its own methods. Past this frame the audit hook lets the build through."""
    for value in list(args) + list(kwargs.values()):
        if not _plain(value):
            raise SandboxError(f"kwb sandbox: load_inline's arguments must be strings, lists of strings, numbers, "
                               f"booleans or None, not {type(value).__name__}")
    try:
        return _cpp.load_inline(*args, **kwargs)
    except ImportError as e:  # the built library does not load (PyInit_<name> missing, an undefined symbol)
        raise BuildError(f"{type(e).__name__}: {e}") from None


_checked_load_inline.__name__ = "load_inline"
_checked_load_inline.__qualname__ = "load_inline"
_build_guards.add(_checked_load_inline.__code__)


# ---- the answer's classes --------------------------------------------------------------------------
# Every class statement of the answer goes through its builtins' __build_class__: the bases are
# checked on the real objects (whatever names the answer bound them to), and the members the
# class ends up with (its body, its metaclass's additions) against ALLOWED_CLASS_DUNDERS and
# nn.Module's own members, as the static check does on the source.

_answer_classes = weakref.WeakSet()
_CLASS_BOOKKEEPING = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__classcell__",
                      "__annotations__", "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__"}


def _base_allowed(base):
    if base is object or base is torch.nn.Module or base is getattr(getattr(torch, "autograd", None), "Function", None):
        return True
    if torch_layer_class(base):
        return True
    return isinstance(base, type) and base in _answer_classes


def _guarded_build_class(func, name, *bases, **keywords):
    if keywords:
        raise SandboxError(f"kwb sandbox: class {name}: keyword '{next(iter(keywords))}' in its bases (metaclasses) "
                           "is not allowed")
    for base in bases:
        if not _base_allowed(base):
            shown = f"{getattr(base, '__module__', '?')}.{getattr(base, '__qualname__', type(base).__name__)}" \
                if isinstance(base, type) else type(base).__name__
            raise SandboxError(f"kwb sandbox: class {name} derives from {shown}: {BASES_RULE}")
    cls = builtins.__build_class__(func, name, *bases)
    is_module = issubclass(cls, torch.nn.Module)
    protected = set().union(*(torch_members_of(b) for b in bases)) if bases else set()
    for member in vars(cls):
        if member.startswith("__") and member.endswith("__"):
            if member not in ALLOWED_CLASS_DUNDERS and member not in _CLASS_BOOKKEEPING:
                raise SandboxError(f"kwb sandbox: class {name} defines '{member}': only __init__ may be defined among "
                                   "the special methods")
        elif is_module and member in CLASS_PROTECTED or member in protected:
            raise SandboxError(f"kwb sandbox: {protected_member_reason(name, member)}")
    _answer_classes.add(cls)
    return cls


# Left out of the answer's builtins but not refused by name: `input` is a common argument name.
RUNTIME_ONLY_DENIED = {"input", "help", "copyright", "credits", "license"}


def getattr_name_reason(name):
    """Why getattr may not read `name` (attribute_name_reason's rule; and str.format's, whose fields
    read attributes by name and whose template getattr would hand over unchecked)."""
    if name in ("format", "format_map"):
        return f"getattr(…, '{name}'): format fields read attributes by name; use an f-string"
    return attribute_name_reason(name)


def _guarded_getattr(obj, name, *default):
    """getattr as the answer sees it: a name read by string passes the rule a `.name` in the source
    passes (attribute_name_reason), checked when the name is known, at run time (codex-gpt-5.5's
    `getattr(self.lstm, "weight_ih_l" + suffix)`, correct under KernelBench, was `rejected`). A
    module's attributes go through its view's checks besides, as `.name` does."""
    if type(name) is not str:
        raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")
    if len(default) > 1:
        raise TypeError(f"getattr expected at most 3 arguments, got {2 + len(default)}")
    reason = getattr_name_reason(name)
    if reason:
        raise SandboxError(f"kwb sandbox: {reason}")
    return getattr(obj, name, *default)


_guarded_getattr.__name__ = "getattr"
_guarded_getattr.__qualname__ = "getattr"


def _answer_builtins():
    safe = {k: v for k, v in vars(builtins).items() if k not in DENIED_NAMES and k not in RUNTIME_ONLY_DENIED}
    safe["getattr"] = _guarded_getattr
    safe["__import__"] = _guarded_import
    safe["__build_class__"] = _guarded_build_class
    return safe


# ---- the cached build behind load_inline ----------------------------------------------------------
# The cache itself (its entries, the broker, the builder) is extension_cache.py, `_kwb_extensions`.

import _kwb_extensions as _ext  # noqa: E402 (loaded by pythonhost.cpp before this module)

_real_load_inline = _cpp.load_inline
_cpp._kwb_real_load_inline = _real_load_inline  # what _ext.build_into builds with
_build_config = {"cache_dir": None, "arch": ""}
_builds = []  # the builds of the answer being loaded, failed ones too: [{name, ok, key, build_dir, cached, ms, ...}]
BuildError = _ext.BuildError
MachineError = _ext.MachineError
build_key = _ext.build_key


def _kwb_load_inline(*args, **kwargs):
    try:
        bound = _SIGNATURE.bind(*args, **kwargs)
    except TypeError:
        try:
            _real_load_inline(*args, **kwargs)  # raises load_inline's own TypeError, as KernelBench sees it
        except Exception as e:
            raise BuildError(f"{type(e).__name__}: {e}") from None
        raise
    arguments = {k: v for k, v in bound.arguments.items() if k not in ("build_directory", "verbose")}
    wants_cuda = bool(arguments.get("cuda_sources")) if arguments.get("with_cuda") is None else bool(arguments.get("with_cuda"))
    if wants_cuda and torch.version.cuda is None:
        raise MachineError(f"this worker's torch {torch.__version__} was built without CUDA, so it cannot build the "
                           "answer's CUDA extension; evaluate it where torch has CUDA")
    arch = _build_config["arch"]
    name = str(arguments.get("name", "ext"))
    _state["building"] += 1
    try:
        directory, manifest, cached, waited_ms, build_ms = _ext.entry_for(arguments, arch, _build_config["cache_dir"])
        if not manifest.get("ok"):
            # A failed build is a result too: which header and split it had and what it cost.
            _record_build(name, directory, manifest, cached, build_ms, waited_ms, wants_cuda)
            if manifest.get("machine_fault"):
                # Its compiler was killed (SIGKILL: the OOM killer, a user): not cached, built again when asked.
                raise MachineError("the build's compiler was killed by SIGKILL (the machine's doing, such as its "
                                   "OOM killer; not a verdict on the sources, which build again when asked): "
                                   + (manifest.get("message") or ""))
            # The same sources and flags failed before (or just now): the compiler's messages.
            raise BuildError(manifest.get("message") or "the extension failed to build")
        t0 = time.monotonic()
        # Another answer's module of this name, kept by pybind11 3 (pythonhost.cpp), is not this one.
        _ext.forget_module_of_other_library(name, os.path.join(directory, name + getattr(_cpp, "LIB_EXT", ".so")))
        module = _cpp._import_module_from_library(name, directory, bool(arguments.get("is_python_module", True)))
        load_ms = (time.monotonic() - t0) * 1000.0
    finally:
        _state["building"] -= 1
    _record_build(name, directory, manifest, cached, build_ms + load_ms, waited_ms, wants_cuda)
    return module


def _record_build(name, directory, manifest, cached, ms, waited_ms, wants_cuda):
    """One load_inline build of the answer being loaded, in the result's compile.extensions.
    "ok": whether it built; "pch": whether the build had torch's precompiled header, and where not,
    why (extension_cache.py); "split": whether its CUDA sources were built split (cuda_split.py), and
    where not, why; "joined": whether load_inline's main.cpp was compiled in one unit with the split's
    host unit (cuda_split.join_declined), and where not, why; "syntax": set where the message is the broker's early pass stopped after
    parsing (what that log may lack); "planned": whether the broker's preparer planned the build (its builder imported no
    torch), and where not, why; "built_ms": how long the build itself took, also where this request found it
    built (an early build ahead of the answer's turn, another sample's): what a cold answer costs."""
    _builds.append({"name": name, "ok": bool(manifest.get("ok")), "key": manifest.get("key"), "build_dir": directory,
                    "cached": cached, "ms": ms, "waited_ms": waited_ms, "with_cuda": wants_cuda,
                    "pch": manifest.get("pch", ""), "split": manifest.get("split", ""), "joined": manifest.get("joined", ""),
                    "syntax": manifest.get("syntax", ""), "planned": manifest.get("planned", ""),
                    "built_ms": manifest.get("build_ms")})


import inspect  # noqa: E402 (after the wrapper's definition reads better)

_SIGNATURE = inspect.signature(_real_load_inline)
_kwb_load_inline.__signature__ = _SIGNATURE
_kwb_load_inline.__name__ = "load_inline"
_cpp.load_inline = _kwb_load_inline


def configure(cache_dir, arch):
    cache_dir = os.path.realpath(cache_dir) if cache_dir else None
    _build_config["cache_dir"] = cache_dir
    _build_config["arch"] = arch or ""
    _state["allowed_dirs"] = [cache_dir] if cache_dir else []


# ---- loading an answer, its model, its calls ------------------------------------------------------
# Every call of the harness that touches the answer's objects (the module, ModelNew(...), .to(),
# the parameter listing, bind, forward, release) runs armed: the model's methods are the answer's
# code wherever the evaluator calls them. The error messages are made inside the window too
# (str() of an exception may format an object of the answer's).

_models = {}
_next_handle = [1]


class AnswerError(Exception):
    """A failure while loading an answer, with the status and stage the evaluator reports, and a
    code naming an honest mistake where one is recognised (undefined_name, load_inline_keyword,
    extension_name_mismatch, placeholder, missing_module) or the format_error's code."""

    def __init__(self, status, stage, message, code=None, line=0, detail=None):
        super().__init__(message)
        self.status, self.stage, self.message, self.code, self.line, self.detail = status, stage, message, code, line, detail


def _describe(e):
    return f"{type(e).__name__}: {e}"


def _traceback_line(e):
    tb = e.__traceback__
    line = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _ANSWER_FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class _Failure:
    """An exception of the answer's code, described while the sandbox is armed."""

    def __init__(self, e):
        self.exception, self.text, self.line = e, _describe(e), _traceback_line(e)
        self.message = str(e)


def _armed_call(fn, *args):
    """fn(*args) armed: (result, None), or (None, _Failure)."""
    with _Armed():
        try:
            return fn(*args), None
        except BaseException as e:  # noqa: B902 (the answer's code may raise anything)
            return None, _Failure(e)


_NOT_DECLARED = re.compile(r"error: [\u2018'`\"]?(\w+)[\u2019'\"]? (?:was not declared in this scope|undeclared identifier)"
                           r"|error: use of undeclared identifier [\u2018'`\"]?(\w+)")


def _build_code(message, notes):
    """The honest mistake behind a failed build, where it is one of the known kinds."""
    if any(n["code"] == "placeholder" and "load_inline" in n["message"] for n in notes):
        return "placeholder"
    if message.startswith("TypeError: load_inline()"):
        return "load_inline_keyword"  # load_inline's signature: an unknown keyword, a missing argument
    if "PyInit_" in message or "undefined symbol" in message:
        return "extension_name_mismatch"  # name= is not the PYBIND11_MODULE's, or a bound function is not defined
    for m in _NOT_DECLARED.finditer(message):
        function = m.group(1) or m.group(2)
        if f'm.def("{function}"' in message:
            return "extension_name_mismatch"  # functions=[...] names a function the sources do not declare
    return None


def _runtime_code(e):
    if isinstance(e, ImportError) and getattr(e, "kwb_missing_module", False):
        return "missing_module"
    return "undefined_name" if isinstance(e, NameError) else None


def run_module(source):
    """Runs an answer's module (its load_inline builds happen here). Returns (namespace, builds,
    notes: the static check's notes on honest mistakes)."""
    refusals, notes = analyse_source(source)
    _state["unused_imports"] = frozenset(n["module"] for n in notes if n["code"] == "unused_import")
    if refusals:
        if refusals[0].get("syntax"):
            raise AnswerError("compile_error", "compile", f"line {refusals[0]['line']}: {refusals[0]['reason']}", line=refusals[0]["line"])
        # Only imports of modules that exist nowhere: the module runs, and fails where Python would
        # (an import that runs, unguarded) with Python's error (_guarded_import), or falls back where
        # the answer catches it (`try: import cupy` / `except ImportError:`, CUDA-L1's answers).
        if not all(r.get("missing_module") for r in refusals):
            raise AnswerError("rejected", "sandbox", refusals[0]["reason"], line=refusals[0]["line"], detail=refusals)
    code = compile(source, _ANSWER_FILE, "exec")
    namespace = {"__name__": "kwb_answer", "__builtins__": _answer_builtins()}
    _builds.clear()
    _, failure = _armed_call(exec, code, namespace)
    if failure is None:
        return namespace, list(_builds), notes
    e, line = failure.exception, failure.line
    if isinstance(e, BuildError):
        raise AnswerError("compile_error", "compile", failure.message, code=_build_code(failure.message, notes), line=line,
                          detail=list(_builds))
    if isinstance(e, MachineError):
        raise AnswerError("no_device", "compile", failure.message, detail=list(_builds))
    if isinstance(e, SandboxError):
        raise AnswerError("rejected", "sandbox", failure.message, line=line)
    # the module's own top-level code failed
    raise AnswerError("runtime_error", "compile", f"the answer's module failed (line {line}): {failure.text}",
                      code=_runtime_code(e), line=line, detail=list(_builds))


def result_notes(notes):
    """The static check's notes a result shows, as the protocol's `notes` ({"code", "message",
    "line"}: a module line): an import never used and not made. A placeholder's note becomes the
    answer's status instead."""
    return [{"code": n["code"], "message": n["message"], "line": n["line"]} for n in notes if n["code"] == "unused_import"]


def build(source):
    """The compile step alone (the `compile` request): runs the module, so its extensions build
    into the cache. Returns {"ok", "status", "code", "message", "line", "builds", "refusals", "notes"}."""
    try:
        namespace, builds, notes = run_module(source)
    except AnswerError as e:
        return {"ok": False, "status": e.status, "stage": e.stage, "code": e.code, "message": e.message, "line": e.line,
                "builds": e.detail if e.status != "rejected" else [], "refusals": e.detail if e.status == "rejected" else []}
    if not isinstance(namespace.get("ModelNew"), type):
        return {"ok": False, "status": "format_error", "stage": "parse", "code": "missing_model_new",
                "message": "the answer defines no class ModelNew", "line": 0, "builds": builds, "refusals": []}
    return {"ok": True, "status": "", "stage": "", "code": None, "message": "", "line": 0, "builds": builds, "refusals": [],
            "notes": result_notes(notes)}


# torch 1.13's DLPack has no bool: a bool tensor crosses as its bytes (a uint8 view, no copy) with
# this tag, in both directions (pythonhost.cpp).
_BOOL_TAG = "bool"


def _from_capsule(x):
    if type(x) is tuple and len(x) == 2 and x[1] == _BOOL_TAG:
        return _dlpack.from_dlpack(x[0]).view(torch.bool)
    return _dlpack.from_dlpack(x) if type(x).__name__ == "PyCapsule" else x


def _to_capsule(t):
    if t.dtype == torch.bool:
        return (_dlpack.to_dlpack(t.view(torch.uint8)), _BOOL_TAG)
    return _dlpack.to_dlpack(t)


def _construct(cls, init_inputs, seed, device):
    torch.manual_seed(seed)
    with torch.no_grad():
        model = cls(*init_inputs)
        model = torch.nn.Module.to(model, device=torch.device(device), dtype=torch.float32)
    params = [[n, list(p.shape), False] for n, p in torch.nn.Module.named_parameters(model)]
    params += [[n, list(b.shape), True] for n, b in torch.nn.Module.named_buffers(model)]
    return model, params


def load_model(source, init_inputs, seed, device):
    """Runs the module, builds ModelNew as KernelBench does (seeded, on the CPU, without grad, then
    moved), and returns {"handle", "builds", "parameters": [[name, shape, is_buffer]...], "notes"}."""
    namespace, builds, notes = run_module(source)
    cls = namespace.get("ModelNew")
    if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise AnswerError("format_error", "parse", "the answer defines no class ModelNew (a torch.nn.Module)", code="missing_model_new")
    for note in notes:
        if note["code"] == "placeholder" and "forward" in note["message"]:
            raise AnswerError("runtime_error", "load", note["message"], code="placeholder", line=note["line"])
    _builds.clear()
    result, failure = _armed_call(_construct, cls, init_inputs, seed, device)
    if failure is not None:
        e = failure.exception
        if isinstance(e, SandboxError):
            raise AnswerError("rejected", "sandbox", failure.message, line=failure.line)
        # load_inline called in __init__ (built when the model is made, as many answers do): its
        # failure is the same compile_error as at the module's top level, and the machine's the same
        # no_device, not a runtime error of the model.
        if isinstance(e, BuildError):
            raise AnswerError("compile_error", "compile", failure.message, code=_build_code(failure.message, notes),
                              line=failure.line, detail=builds + list(_builds))
        if isinstance(e, MachineError):
            raise AnswerError("no_device", "compile", failure.message, detail=builds + list(_builds))
        raise AnswerError("runtime_error", "load", f"ModelNew(*init_inputs) failed (line {failure.line}): {failure.text}",
                          code=_runtime_code(failure.exception), line=failure.line)
    model, params = result
    handle = _next_handle[0]
    _next_handle[0] += 1
    _models[handle] = model
    return {"handle": handle, "builds": builds + list(_builds), "parameters": params, "notes": result_notes(notes)}


def _tuples(x):
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


def load_model_json(source, init_json, seed, device):
    """load_model for the C++ side: init inputs as JSON (lists become tuples, as KernelBench's
    get_init_inputs writes shapes); the result, or the AnswerError's fields, as JSON."""
    try:
        return dumps({"ok": True, **load_model(source, [_tuples(v) for v in json.loads(init_json)], seed, device)})
    except AnswerError as e:
        return dumps({"ok": False, **answer_error(e)})


def build_json(source):
    return dumps(build(source))


def check_json(source):
    return dumps(check_source(source))


def release(handle):
    with _Armed():
        _models.pop(handle, None)


def _owner(model, dotted):
    prefix, _, leaf = dotted.rpartition(".")
    return (torch.nn.Module.get_submodule(model, prefix) if prefix else model), leaf


def _bind(model, args, params):
    for name, capsule in params.items():
        t = _from_capsule(capsule)
        owner, leaf = _owner(model, name)
        if leaf in owner._parameters and owner._parameters[leaf] is not None:
            owner._parameters[leaf].data = t
        else:
            owner._buffers[leaf] = t
    return (model, [_from_capsule(a) for a in args])


def _plain_exception(e):
    """The answer's exception with plain arguments: its text made now (armed), so formatting it
    later, in C++, runs nothing of the answer's."""
    if not all(type(a) in (str, int, float, bool, type(None)) for a in getattr(e, "args", ())):
        try:
            e.args = (str(e),)
        except BaseException:  # noqa: B902
            e.args = (f"{type(e).__name__} (its message could not be formatted)",)
    return e


def bind(handle, args, params, seed=None):
    """One call's arguments (capsules or scalars) and the task's parameters (name -> capsule) put
    into the model without copies: parameters take the evaluator's tensors' storage, buffers are
    replaced. Returns what `call` takes; with a seed, `call` seeds torch's generators with it first."""
    with _Armed():
        try:
            model, args = _bind(_models[handle], args, params)
            return model, args, seed
        except BaseException as e:  # noqa: B902
            raise _plain_exception(e)


def call(bound):
    """forward on bound arguments: a DLPack capsule of the output tensor."""
    model, args, seed = bound
    with _Armed():
        try:
            if seed is not None:
                torch.manual_seed(seed)
            with torch.no_grad():
                out = model(*args)
            if type(out) not in (torch.Tensor, torch.nn.Parameter):
                if isinstance(out, torch.Tensor):
                    raise TypeError(f"forward returned a torch.Tensor subclass ({type(out).__name__}); a subclass can "
                                    "compute lazily or fake its values: return a plain torch.Tensor")
                raise TypeError(f"forward returned {type(out).__name__}, expected a torch.Tensor")
            return _to_capsule(out.detach())
        except BaseException as e:  # noqa: B902
            raise _plain_exception(e)


# ---- the reference of a KernelBench-only task -------------------------------------------------------
# A task the converter could not write as TorchScript (docs/task-format.md, "KernelBench only") is
# evaluated against KernelBench's problem file itself (the task's reference_python): its Model,
# get_inputs and get_init_inputs, seeded as KernelBench's evaluator seeds them. The file is trusted
# (shipped with the tasks, copied from KernelBench at a named commit), so its module runs with the
# interpreter's own builtins and imports (Swin's itertools and numpy, Mamba2's einops), which an
# answer's never get; what runs after it (get_init_inputs, Model(...), get_inputs, forward) runs armed,
# as an answer's calls do. Nothing of it is handed to an answer: its model, draws and outputs cross
# to the evaluator as tensors only.

_REFERENCE_FILE = "<reference>"
_reference_modules = {}  # source -> the module's namespace: run once per worker


class ReferenceError(Exception):
    """The reference itself failed (not the answer): its module, Model(...), or a draw."""


def _reference_namespace(source):
    namespace = _reference_modules.get(source)
    if namespace is not None:
        return namespace
    namespace = {"__name__": "kwb_reference"}
    try:
        exec(compile(source, _REFERENCE_FILE, "exec"), namespace)
    except BaseException as e:  # noqa: B902 (any failure of the module is the reference's)
        raise ReferenceError(f"its module failed: {_describe(e)}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(namespace.get(name)):
            raise ReferenceError(f"it defines no {name}")
    _reference_modules[source] = namespace
    return namespace


def _reference_call(what, fn, *args):
    result, failure = _armed_call(fn, *args)
    if failure is not None:
        raise ReferenceError(f"{what} failed: {failure.text}")
    return result


def _make_reference(namespace, seed, device):
    # KernelBench's eval_kernel_against_ref: set_seed, get_init_inputs(), set_seed, Model(*init_inputs)
    # without grad, then moved to the device.
    torch.manual_seed(seed)
    init_inputs = list(namespace["get_init_inputs"]())
    torch.manual_seed(seed)
    with torch.no_grad():
        model = namespace["Model"](*init_inputs)
        model = model.to(device=torch.device(device))
    return model, init_inputs


def load_reference(source, seed, device):
    """KernelBench's Model(*get_init_inputs()) made as KernelBench makes it. Returns {"handle",
    "init_inputs"} (what ModelNew(*init_inputs) gets too: plain values only)."""
    namespace = _reference_namespace(source)
    model, init_inputs = _reference_call("Model(*get_init_inputs())", _make_reference, namespace, seed, device)
    if not _plain(init_inputs):
        raise ReferenceError("get_init_inputs() returned values other than numbers, booleans, strings and lists "
                             "of them, which the evaluator cannot pass on to ModelNew")
    handle = _next_handle[0]
    _next_handle[0] += 1
    _models[handle] = model
    return {"handle": handle, "init_inputs": init_inputs}


def load_reference_json(source, seed, device):
    try:
        return dumps({"ok": True, **load_reference(source, seed, device)})
    except ReferenceError as e:
        return dumps({"ok": False, "message": str(e)})


def _draw_inputs(namespace, seed, device):
    # KernelBench's run_and_check_correctness: set_seed(trial_seed), get_inputs(), moved to the device.
    torch.manual_seed(seed)
    inputs = list(namespace["get_inputs"]())
    return [_to_capsule(x.to(torch.device(device))) if isinstance(x, torch.Tensor) else x for x in inputs]


_module_assignments = {}  # source -> its top-level assignments: [(targets, names read, compiled value)]


def _assignments(source):
    out = _module_assignments.get(source)
    if out is None:
        out = []
        for stmt in ast.parse(source).body:
            if isinstance(stmt, ast.Assign):
                reads = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
                out.append((stmt.targets, reads, compile(ast.Expression(stmt.value), _REFERENCE_FILE, "eval")))
        _module_assignments[source] = out
    return out


def _override(namespace, source, overrides):
    """A shape set's values put into the module's namespace (docs/task-format.md, "KernelBench
    only"): each a module-level int constant; every top-level `name = expression` that reads one,
    directly or through another, evaluated again in file order (input_shape = (num_classes,)).
    Returns the names' previous values (absent: _ABSENT), which the caller puts back."""
    saved = {}
    try:
        for name, value in overrides.items():
            if type(namespace.get(name)) is not int or name.startswith("__"):
                raise ReferenceError(f"a shape set names '{name}', which is not a module-level integer constant of "
                                     "the problem file")
            if type(value) is not int or value <= 0:
                raise ReferenceError(f"a shape set gives '{name}' the value {value!r}: a positive integer is needed")
            saved[name] = namespace[name]
            namespace[name] = value
        changed = set(overrides)
        for targets, reads, code in _assignments(source):
            if not reads & changed:
                continue
            value = eval(code, namespace)  # the trusted problem file's own expression
            for target in targets:
                if isinstance(target, ast.Name):
                    pairs = [(target.id, value)]
                elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
                    pairs = list(zip([e.id for e in target.elts], value))
                else:
                    raise ReferenceError(f"a module value the shape set changes is assigned to {ast.unparse(target)}")
                for name, v in pairs:
                    if name in overrides:
                        continue
                    saved.setdefault(name, namespace.get(name, _ABSENT))
                    namespace[name] = v
                    changed.add(name)
    except BaseException as e:  # noqa: B902 (the namespace is put back whatever failed)
        _restore(namespace, saved)
        if isinstance(e, ReferenceError):
            raise
        raise ReferenceError(f"the shape set's module values failed: {_describe(e)}") from None
    return saved


_ABSENT = object()


def _restore(namespace, saved):
    for name, value in saved.items():
        if value is _ABSENT:
            namespace.pop(name, None)
        else:
            namespace[name] = value


def reference_inputs(source, seed, device, overrides=None):
    """get_inputs() of the problem file after torch.manual_seed(seed), on the device: a list of
    capsules (a bool tensor as (capsule, "bool")) and plain numbers. overrides ({constant: value},
    a shape set's): the module's values get_inputs() reads for this call only (_override), put
    back after it, whatever happens; the module's namespace is shared by every call."""
    namespace = _reference_namespace(source)
    saved = _override(namespace, source, overrides) if overrides else {}
    try:
        inputs = _reference_call("get_inputs()", _draw_inputs, namespace, seed, device)
    finally:
        _restore(namespace, saved)
    for x in inputs:
        if not (type(x) is tuple or type(x).__name__ == "PyCapsule" or type(x) in (int, float, bool)):
            raise ReferenceError(f"get_inputs() returned a {type(x).__name__}: the evaluator passes tensors and "
                                 "numbers only")
    return inputs


def answer_error(e):
    """The fields of an AnswerError for the C++ side (other exceptions: None)."""
    if isinstance(e, AnswerError):
        return {"status": e.status, "stage": e.stage, "message": e.message, "code": e.code, "line": e.line,
                "detail": e.detail}
    return None


def dumps(x):
    return json.dumps(x, default=repr)
