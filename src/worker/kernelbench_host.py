# The embedded interpreter's side of KernelBench-format answers (docs/candidate-format.md,
# "KernelBench format"): the static check of the answer's source, the cached extension build
# behind load_inline, the run-time audit hook, and the model's construction, parameters and calls.
# python_host.cpp loads this file once as the module `_kwb_host`; nothing in it comes from an
# answer. Tensors cross to and from C++ as DLPack capsules (no copies: one libtorch serves both).
import ast
import builtins
import json
import os
import sys
import time
import _thread
import threading

import torch
import torch.nn
import torch.nn.functional
import torch.utils.cpp_extension as _cpp
import torch.utils.dlpack as _dlpack


# ---- the static check ---------------------------------------------------------------------------

ALLOWED_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.utils.cpp_extension", "math", "typing"}
# `from torch.utils.cpp_extension import X`: only the builder of inline extensions.
ALLOWED_FROM = {"torch.utils.cpp_extension": {"load_inline"}}

DENIED_NAMES = {
    "open": "opens files", "exec": "runs code built at run time", "eval": "runs code built at run time",
    "compile": "builds code at run time", "__import__": "imports past the allowlist",
    "globals": "reaches the module's namespace", "locals": "reaches a frame's namespace",
    "vars": "reaches an object's namespace", "setattr": "writes attributes by name",
    "delattr": "deletes attributes by name", "getattr": "reads attributes by name (past the attribute checks)",
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
    "torch.load": "reads files", "torch.save": "writes files", "torch.hub": "downloads",
    "torch.ops.load_library": "loads native libraries", "torch.classes": "loads native classes",
    "torch.library": "registers operators", "torch._C": "torch's internals", "torch.multiprocessing": "starts processes",
    "torch.distributed": "opens connections", "torch.backends": "changes the process's numeric settings",
    "torch.set_default_tensor_type": "changes the process's defaults", "torch.set_default_dtype": "changes the process's defaults",
    "torch.Tensor._make_subclass": "makes tensor subclasses", "torch._tensor": "torch's internals",
    "torch.overrides": "tensor subclass machinery", "torch.utils.dlpack": "tensor exchange is the evaluator's",
    "torch.compile": "compiles Python at run time", "torch.jit": "compiles Python at run time",
    # torch's C++ bindings open files with no audit event (torch.serialization.save writes through
    # PyTorchFileWriter): every file reader and writer is refused by name.
    "torch.serialization": "reads and writes files", "torch.package": "reads and writes files",
    "torch.onnx": "writes files", "torch.profiler": "writes traces", "torch.autograd.profiler": "writes traces",
    "torch.from_file": "maps files",
}
# Attribute names refused on any object (a storage's from_file, …).
DENIED_ATTRIBUTE_NAMES = {"from_file": "maps files", "_make_subclass": "makes tensor subclasses"}
ALLOWED_CPP_EXTENSION = {"load_inline"}
ALLOWED_DUNDERS = {"__init__"}
DENIED_DEFS = {"__torch_function__": "a tensor subclass's dispatch hook", "__torch_dispatch__": "a tensor subclass's dispatch hook",
               "__del__": "runs code when objects die", "__getattr__": "computes attributes", "__getattribute__": "computes attributes"}
# Base classes a class of the answer may have (or a class of the answer itself).
ALLOWED_BASES = {"torch.nn.Module", "torch.autograd.Function", "object"}


class _Checker(ast.NodeVisitor):
    def __init__(self):
        self.refusals = []
        self.aliases = {}  # local name -> dotted module path, or "torch.nn.Module" for `from torch.nn import Module`
        self.classes = set()

    def refuse(self, node, reason):
        self.refusals.append({"line": getattr(node, "lineno", 0), "reason": reason})

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

    def visit_Import(self, node):
        for a in node.names:
            if a.name not in ALLOWED_MODULES:
                self.refuse(node, f"import of '{a.name}': only {', '.join(sorted(ALLOWED_MODULES))} may be imported")
                continue
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level or mod not in ALLOWED_MODULES and mod != "torch.utils":
            self.refuse(node, f"import from '{'.' * node.level}{mod}': only {', '.join(sorted(ALLOWED_MODULES))} may be imported")
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
                reason = self.attribute_reason(full)
                if reason:
                    self.refuse(node, reason)
                self.aliases[a.asname or a.name] = full

    def attribute_reason(self, path):
        parts = path.split(".")
        if parts[0] == "torch" and any(p.startswith("_") for p in parts[1:]):
            return f"'{path}' is not allowed: torch's private internals"
        for prefix, why in DENIED_ATTRIBUTES.items():
            if path == prefix or path.startswith(prefix + "."):
                return f"'{path}' is not allowed: {why}"
        if path.startswith("torch.utils.") and not path.startswith("torch.utils.cpp_extension"):
            return f"'{path}' is not allowed: of torch.utils only cpp_extension.load_inline may be used"
        if path.startswith("torch.utils.cpp_extension."):
            if path.split(".")[3] not in ALLOWED_CPP_EXTENSION:
                return f"'{path}' is not allowed: of torch.utils.cpp_extension only load_inline may be used"
        return None

    def visit_Attribute(self, node):
        if node.attr in DENIED_ATTRIBUTE_NAMES:
            self.refuse(node, f"attribute '{node.attr}' is not allowed: {DENIED_ATTRIBUTE_NAMES[node.attr]}")
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ALLOWED_DUNDERS:
            self.refuse(node, f"attribute '{node.attr}': special attributes reach past the answer's own objects")
        path = self.dotted(node)
        if path:
            reason = self.attribute_reason(path)
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
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in DENIED_NAMES and node.id not in self.aliases:
            self.refuse(node, f"'{node.id}' is not allowed: {DENIED_NAMES[node.id]}")

    def visit_ClassDef(self, node):
        for base in node.bases:
            path = self.dotted(base)
            if isinstance(base, ast.Name) and base.id in self.classes:
                continue
            if path not in ALLOWED_BASES and not (isinstance(base, ast.Name) and base.id == "object"):
                shown = path or ast.unparse(base)
                why = "a tensor subclass can compute lazily or fake its results" if "Tensor" in shown else \
                      "classes may derive from torch.nn.Module, torch.autograd.Function or the answer's own classes"
                self.refuse(node, f"class {node.name} derives from {shown}: {why}")
        for kw in node.keywords:
            self.refuse(node, f"class {node.name}: keyword '{kw.arg}' in its bases (metaclasses) is not allowed")
        if node.decorator_list:
            self.refuse(node, f"class {node.name}: class decorators are not allowed")
        self.classes.add(node.name)
        self.generic_visit(node)

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


def check_source(source):
    """The refusals of an answer's source as [{"line", "reason"}] (empty: it may run)."""
    try:
        tree = ast.parse(source, filename="<answer>")
    except SyntaxError as e:
        return [{"line": e.lineno or 0, "reason": f"syntax error: {e.msg}", "syntax": True}]
    checker = _Checker()
    checker.visit(tree)
    return checker.refusals


# ---- the sandbox at run time --------------------------------------------------------------------

_state = {"armed": False, "building": 0, "allowed_dirs": [],
          "library_dirs": sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)} |
                                 {os.path.realpath(os.path.dirname(os.__file__))})}
_DENIED_EVENT_PREFIXES = ("subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
                          "os.forkpty", "os.kill", "os.killpg", "socket.", "ctypes.", "_thread.", "os.putenv",
                          "os.unsetenv", "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
                          "os.link", "os.symlink", "os.truncate", "os.utime", "shutil.", "urllib.", "http.",
                          "ftplib.", "smtplib.", "webbrowser.", "sys.settrace", "sys.setprofile", "sys.addaudithook",
                          "cpython.PyInterpreterState_", "mmap.")


class SandboxError(PermissionError):
    """An OSError, so library code that may fail to open a file (linecache, warnings) copes."""


def _under_allowed_dir(path, dirs):
    try:
        real = os.path.realpath(os.fsdecode(path))
    except Exception:
        return False
    return any(real == d or real.startswith(d + os.sep) for d in dirs)


def _audit(event, args):
    # Armed while the answer's code runs (its module, ModelNew(...), forward); the build inside the
    # harness's load_inline wrapper (ninja, nvcc, the compiler, its files) is let through.
    if not _state["armed"] or _state["building"]:
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
    if event.startswith(_DENIED_EVENT_PREFIXES):
        raise SandboxError(f"kwb sandbox: '{event}' is not allowed in a KernelBench-format answer")


sys.addaudithook(_audit)


def _guard_thread_start(real):
    def start(*args, **kwargs):
        if _state["armed"] and not _state["building"]:
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
    def __enter__(self):
        _state["armed"] = True

    def __exit__(self, *exc):
        _state["armed"] = False
        return False


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name not in ALLOWED_MODULES and not (name == "torch.utils" and fromlist):
        raise ImportError(f"kwb sandbox: import of '{name}' is not allowed")
    return builtins.__import__(name, globals, locals, fromlist, level)


# Left out of the answer's builtins but not refused by name: `input` is a common argument name.
RUNTIME_ONLY_DENIED = {"input", "help", "copyright", "credits", "license"}


def _answer_builtins():
    safe = {k: v for k, v in vars(builtins).items() if k not in DENIED_NAMES and k not in RUNTIME_ONLY_DENIED}
    safe["__import__"] = _guarded_import
    return safe


# ---- the cached build behind load_inline ----------------------------------------------------------
# The cache itself (its entries, the broker, the builder) is extension_cache.py, `_kwb_extensions`.

import _kwb_extensions as _ext  # noqa: E402 (loaded by python_host.cpp before this module)

_real_load_inline = _cpp.load_inline
_cpp._kwb_real_load_inline = _real_load_inline  # what _ext.build_into builds with
_build_config = {"cache_dir": None, "arch": ""}
_builds = []  # the builds of the answer being loaded: [{name, key, build_dir, cached, ms, with_cuda}]
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
            # The same sources and flags failed before (or just now): the compiler's messages.
            raise BuildError(manifest.get("message") or "the extension failed to build")
        t0 = time.monotonic()
        module = _cpp._import_module_from_library(name, directory, bool(arguments.get("is_python_module", True)))
        load_ms = (time.monotonic() - t0) * 1000.0
    finally:
        _state["building"] -= 1
    _builds.append({"name": name, "key": manifest.get("key"), "build_dir": directory, "cached": cached,
                    "ms": build_ms + load_ms, "waited_ms": waited_ms, "with_cuda": wants_cuda})
    return module


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

_models = {}
_next_handle = [1]


class AnswerError(Exception):
    """A failure while loading an answer, with the status and stage the evaluator reports."""

    def __init__(self, status, stage, message, code=None, line=0, detail=None):
        super().__init__(message)
        self.status, self.stage, self.message, self.code, self.line, self.detail = status, stage, message, code, line, detail


def _describe(e):
    return f"{type(e).__name__}: {e}"


def _traceback_line(e):
    tb = e.__traceback__
    line = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<answer>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def run_module(source):
    """Runs an answer's module (its load_inline builds happen here). Returns (namespace, builds)."""
    refusals = check_source(source)
    if refusals:
        if refusals[0].get("syntax"):
            raise AnswerError("compile_error", "compile", f"line {refusals[0]['line']}: {refusals[0]['reason']}", line=refusals[0]["line"])
        raise AnswerError("rejected", "sandbox", refusals[0]["reason"], line=refusals[0]["line"], detail=refusals)
    code = compile(source, "<answer>", "exec")
    namespace = {"__name__": "kwb_answer", "__builtins__": _answer_builtins()}
    _builds.clear()
    try:
        with _Armed():
            exec(code, namespace)
    except BuildError as e:
        raise AnswerError("compile_error", "compile", str(e), line=_traceback_line(e), detail=list(_builds)) from None
    except MachineError as e:
        raise AnswerError("no_device", "compile", str(e), detail=list(_builds)) from None
    except SandboxError as e:
        raise AnswerError("rejected", "sandbox", str(e), line=_traceback_line(e)) from None
    except BaseException as e:  # the module's own top-level code failed
        raise AnswerError("runtime_error", "compile", f"the answer's module failed (line {_traceback_line(e)}): {_describe(e)}",
                          line=_traceback_line(e), detail=list(_builds)) from None
    return namespace, list(_builds)


def build(source):
    """The compile step alone (the `compile` request): runs the module, so its extensions build
    into the cache. Returns {"ok", "status", "message", "line", "builds", "refusals"}."""
    try:
        namespace, builds = run_module(source)
    except AnswerError as e:
        return {"ok": False, "status": e.status, "stage": e.stage, "message": e.message, "line": e.line,
                "builds": e.detail if e.status != "rejected" else [], "refusals": e.detail if e.status == "rejected" else []}
    if not isinstance(namespace.get("ModelNew"), type):
        return {"ok": False, "status": "format_error", "stage": "parse", "message": "the answer defines no class ModelNew",
                "line": 0, "builds": builds, "refusals": []}
    return {"ok": True, "status": "", "stage": "", "message": "", "line": 0, "builds": builds, "refusals": []}


def _from_capsule(x):
    return _dlpack.from_dlpack(x) if type(x).__name__ == "PyCapsule" else x


def load_model(source, init_inputs, seed, device):
    """Runs the module, builds ModelNew as KernelBench does (seeded, on the CPU, without grad, then
    moved), and returns {"handle", "builds", "parameters": [[name, shape, is_buffer]...]}."""
    namespace, builds = run_module(source)
    cls = namespace.get("ModelNew")
    if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise AnswerError("format_error", "parse", "the answer defines no class ModelNew (a torch.nn.Module)", code="missing_model_new")
    try:
        with _Armed():
            torch.manual_seed(seed)
            with torch.no_grad():
                model = cls(*init_inputs)
                model = model.to(device=torch.device(device), dtype=torch.float32)
    except SandboxError as e:
        raise AnswerError("rejected", "sandbox", str(e), line=_traceback_line(e)) from None
    except BaseException as e:
        raise AnswerError("runtime_error", "load", f"ModelNew(*init_inputs) failed (line {_traceback_line(e)}): {_describe(e)}",
                          line=_traceback_line(e)) from None
    params = [[n, list(p.shape), False] for n, p in model.named_parameters()]
    params += [[n, list(b.shape), True] for n, b in model.named_buffers()]
    handle = _next_handle[0]
    _next_handle[0] += 1
    _models[handle] = model
    return {"handle": handle, "builds": builds, "parameters": params}


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
    _models.pop(handle, None)


def _owner(model, dotted):
    prefix, _, leaf = dotted.rpartition(".")
    return (model.get_submodule(prefix) if prefix else model), leaf


def bind(handle, args, params):
    """One call's arguments (capsules or scalars) and the task's parameters (name -> capsule) put
    into the model without copies: parameters take the evaluator's tensors' storage, buffers are
    replaced. Returns what `call` takes."""
    model = _models[handle]
    for name, capsule in params.items():
        t = _dlpack.from_dlpack(capsule)
        owner, leaf = _owner(model, name)
        if leaf in owner._parameters and owner._parameters[leaf] is not None:
            owner._parameters[leaf].data = t
        else:
            owner._buffers[leaf] = t
    return (model, [_from_capsule(a) for a in args])


def call(bound):
    """forward on bound arguments: a DLPack capsule of the output tensor."""
    model, args = bound
    with _Armed():
        with torch.no_grad():
            out = model(*args)
    if type(out) not in (torch.Tensor, torch.nn.Parameter):
        if isinstance(out, torch.Tensor):
            raise TypeError(f"forward returned a torch.Tensor subclass ({type(out).__name__}); a subclass can "
                            "compute lazily or fake its values: return a plain torch.Tensor")
        raise TypeError(f"forward returned {type(out).__name__}, expected a torch.Tensor")
    return _dlpack.to_dlpack(out.detach())


def answer_error(e):
    """The fields of an AnswerError for the C++ side (other exceptions: None)."""
    if isinstance(e, AnswerError):
        return {"status": e.status, "stage": e.stage, "message": e.message, "code": e.code, "line": e.line,
                "detail": e.detail}
    return None


def dumps(x):
    return json.dumps(x, default=repr)
