# An answer's builds asked for before its module runs (issue 35; docs/sandbox.md, "The build is asked
# for as the worker reads the answer"), loaded into the worker's embedded Python as the module
# `_kwb_early` after extension_cache.py (`_kwb_extensions`), without torch.
#
# A worker imports torch (2 s on 2 cores; on the GPU machine the CUDA context first) before it runs
# an answer's module, whose load_inline then asks the broker for its build. So as the worker reads
# the answer, before torch, it sends the broker the load_inline calls whose arguments the source
# states plainly (request_early), and load_inline takes the reply of that request instead of asking
# again (extension_cache.entry_for, through its early_reply): the same request, sent seconds
# sooner, so the compile error or the library is there that much sooner. Nothing else moves: the
# module still runs, checked and in its order, and decides every verdict; a call read wrongly is a
# request of another key, which load_inline never takes, cancelled (its connection closed) when the
# module has run (drop_early).

import json
import os
import sys

# The cache module: `_kwb_extensions` in the worker (pythonhost.cpp loads it first), extension_cache
# where a test or a benchmark imports this folder's files.
ec = sys.modules.get("_kwb_extensions")
if ec is None:
    import extension_cache as ec

_early = {}  # build key -> the connection of its request sent before the module ran
_signature = []  # load_inline's parameters in this torch, read once: [(positional, keyword-only, required)]


def _load_inline_parameters():
    """load_inline's parameter names in order and those without a default, read from this torch's
    cpp_extension.py without importing torch (which is what the early request runs ahead of);
    None where it cannot be read."""
    if not _signature:
        import ast
        import importlib.util
        found = None
        try:
            spec = importlib.util.find_spec("torch")
            path = os.path.join(list(spec.submodule_search_locations)[0], "utils", "cpp_extension.py")
            with open(path) as f:
                tree = ast.parse(f.read())
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == "load_inline":
                    a = node.args
                    positional = [x.arg for x in a.posonlyargs + a.args]
                    required = set(positional[:len(positional) - len(a.defaults)])
                    required |= {x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is None}
                    if a.vararg is None and a.kwarg is None:
                        found = (positional, [x.arg for x in a.kwonlyargs], required)
        except (AttributeError, TypeError, ValueError, OSError, SyntaxError, ImportError):
            found = None
        _signature.append(found)
    return _signature[0]


class _NotPlain(Exception):
    """An argument whose value the source does not state plainly."""


class _PlainValues:
    """The values of literal expressions: constants, lists, tuples (as lists: JSON's), dicts, `+`
    of strings or lists, and names bound once in the module to one of those. Each name is read
    once, and no value may outgrow the source (only a name used twice could make it so): an
    answer's chain of self-concatenations must not hang the worker before its module runs."""

    def __init__(self, bound, source_size):
        self.bound, self.known, self.limit = bound, {}, 2 * source_size + 4096

    def size(self, value):
        if isinstance(value, (str, list)):
            size = len(value) + (sum(self.size(v) for v in value) if isinstance(value, list) else 0)
        elif isinstance(value, dict):
            size = sum(len(k) + self.size(v) for k, v in value.items())
        else:
            size = 1
        if size > self.limit:
            raise _NotPlain()
        return size

    def of(self, node, depth=0):
        import ast
        if depth > 50:
            raise _NotPlain()
        if isinstance(node, ast.Name) and node.id in self.bound:
            if node.id not in self.known:
                self.known[node.id] = _NotPlain  # a name read while it is being read: not plain
                self.known[node.id] = self.of(self.bound[node.id], depth + 1)
            if self.known[node.id] is _NotPlain:
                raise _NotPlain()
            return self.known[node.id]
        if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (str, int, float, bool)):
            value = node.value
        elif isinstance(node, (ast.List, ast.Tuple)):
            value = [self.of(e, depth + 1) for e in node.elts]
        elif isinstance(node, ast.Dict) and None not in node.keys:
            keys = [self.of(k, depth + 1) for k in node.keys]
            if not all(isinstance(k, str) for k in keys):
                raise _NotPlain()
            value = dict(zip(keys, [self.of(v, depth + 1) for v in node.values]))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.of(node.left, depth + 1), self.of(node.right, depth + 1)
            if type(left) is not type(right) or type(left) not in (str, list):
                raise _NotPlain()
            value = left + right
        else:
            raise _NotPlain()
        self.size(value)
        return value


def _module_names(tree):
    """The names the module binds once, at its top level, to an expression (name -> expression),
    and those its imports alone bind, each to one dotted name (name -> that name). A name bound
    anywhere else too (a parameter, a loop, a nested assignment, global) may hold something else
    where load_inline reads it, so it is not read."""
    import ast
    count, imports = {}, {}

    def bind(name, target=None):
        count[name] = count.get(name, 0) + 1
        if target is not None:
            imports.setdefault(name, []).append(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bind(node.id)
        elif isinstance(node, ast.arg):
            bind(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                bind(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                bind(a.asname or a.name, f"{node.module}.{a.name}" if node.module and not node.level else "")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bind(name)
                bind(name)
        elif type(node).__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
            for name in (getattr(node, "name", None), getattr(node, "rest", None)):
                if name:
                    bind(name)
    values = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            values[stmt.target.id] = stmt.value
    imported = {name: targets[0] for name, targets in imports.items()
                if len(targets) == count[name] and len(set(targets)) == 1 and targets[0]}
    return {name: value for name, value in values.items() if count.get(name) == 1}, imported


# The most builds one answer asks for before its module runs (the broker runs at most
# ext.MAX_PEER_BUILDS of one worker's at a time either way).
MAX_EARLY_CALLS = 4


def load_inline_calls(source):
    """The arguments of each load_inline call in an answer's source that states all of them plainly,
    as load_inline would be asked (build_directory and verbose aside, as the worker's load_inline
    drops them): [arguments]. A call with *args or **kwargs, a keyword this torch's load_inline
    does not take, a required one missing, or any value computed at run time is left out (its
    build is asked for when the module runs, as always)."""
    import ast
    signature = _load_inline_parameters()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    if signature is None:
        return []
    positional, keyword_only, required = signature
    bound, imported = _module_names(tree)
    values = _PlainValues(bound, len(source))

    def dotted(node):
        if isinstance(node, ast.Attribute):
            head = dotted(node.value)
            return head and f"{head}.{node.attr}"
        return imported.get(node.id) if isinstance(node, ast.Name) else None

    calls = []
    # At most MAX_EARLY_CALLS, in the source's order: a call read here may never run (under `if
    # False:`, in a function no one calls), and without a bound an answer's source alone could start
    # any number of builds (docs/sandbox.md). The calls after them are asked for when they run.
    for node in ast.walk(tree):
        if len(calls) >= MAX_EARLY_CALLS:
            break
        if not isinstance(node, ast.Call) or dotted(node.func) != "torch.utils.cpp_extension.load_inline":
            continue
        if len(node.args) > len(positional) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        given = list(zip(positional, node.args)) + [(k.arg, k.value) for k in node.keywords]
        names = [name for name, _ in given]
        if None in names or len(set(names)) != len(names) or not set(names) <= set(positional) | set(keyword_only) \
                or not required <= set(names):
            continue
        try:
            calls.append({name: values.of(value) for name, value in given if name not in ("build_directory", "verbose")})
        except _NotPlain:
            continue
    return calls


def request_early(source, arch):
    """Sends the broker (KWB_BUILD_BROKER) the builds of the answer's plainly stated load_inline
    calls, before the module runs: the keys asked for. Without a broker, nothing: a worker that
    builds in-process needs torch to build. Never raises: load_inline asks as always where this
    did not."""
    broker = os.environ.get("KWB_BUILD_BROKER")
    if not broker:
        return []
    sent = []
    try:
        calls = load_inline_calls(source)
    except (RecursionError, MemoryError):
        return []
    for arguments in calls:
        arguments = json.loads(json.dumps(arguments))
        with_cuda = arguments.get("with_cuda")
        wants_cuda = bool(arguments.get("cuda_sources")) if with_cuda is None else bool(with_cuda)
        if wants_cuda and ec.torch_versions()[1] == "None":
            continue  # the worker's load_inline refuses it (torch without CUDA) before asking
        key = ec.build_key(arguments, arch)
        if key in _early:
            continue
        try:
            _early[key] = ec._send_request(broker, arguments, arch, connect_timeout_s=2.0)
        except (ec.MachineError, OSError):
            break  # no broker to ask now: load_inline waits for it as always
        sent.append(key)
    return sent


def _early_reply(arguments, arch):
    """The reply to the early request of these arguments, or None where there was none (or it did
    not come: then load_inline asks the broker itself, and that answer counts)."""
    conn = _early.pop(ec.build_key(arguments, arch), None)
    if conn is None:
        return None
    try:
        return ec._reply(conn)
    except (ec.MachineError, OSError, ValueError, KeyError):
        return None


def drop_early():
    """Closes the early requests no load_inline took (the module has run): the broker cancels
    their builds where they still run."""
    while _early:
        _early.popitem()[1].close()


# extension_cache.entry_for takes the reply of an early request through this.
ec.early_reply = _early_reply
