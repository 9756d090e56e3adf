"""The interpreter behind scripts/kernelbench_convert.py: a KernelBench problem file's Model.__init__
run symbolically (layers, parameters in creation order) and its forward partially evaluated into
straight-line TorchScript (every nn.Module call as its functional aten call, parameters read from
`p`). Whatever it does not know raises Unsupported with the construct and the reason, which makes the
task KernelBench only (scripts/kernelbench_convert.py says how it is used)."""
import ast
import math
import re

# einops (Mamba2, L3/48-49) is not translated to torch ops: the task stays KernelBench only, and
# KernelBench's Model, which imports it, runs only where the worker's Python has it.
NEEDS_EINOPS = "needs einops: %s is not translated here, and KernelBench's Model runs only where the worker's " \
    "Python has the einops package (Debian 12 does not package it)"

# Python passes an int where a float is declared; TorchScript does not convert. Arguments (by
# position after the input, and by name) of functional calls declared float.
FLOAT_ARGS = {
    "torch.nn.functional.hardtanh": ("min_val", "max_val"),
    "torch.nn.functional.leaky_relu": ("negative_slope",),
    "torch.nn.functional.elu": ("alpha",),
    "torch.nn.functional.softplus": ("beta", "threshold"),
}


class Unsupported(Exception):
    """A construct the converter does not translate: the task becomes KernelBench-only."""

    def __init__(self, node, what):
        line = getattr(node, "lineno", 0) if node is not None else 0
        super().__init__(("line %d: " % line if line else "") + what)


# ---- values -----------------------------------------------------------------------------------

class SymInt(int):
    """An int read from a module-level name (batch_size = 128): the task's dimension of that name."""

    def __new__(cls, value, dim):
        o = int.__new__(cls, value)
        o.dim = dim
        return o


class Code:
    """A TorchScript expression (a tensor, or an int or float computed from one)."""

    def __init__(self, expr, simple=False):
        self.expr, self.simple = expr, simple  # simple: a name or a call (no parentheses needed)


class TensorInit:
    """torch.randn(shape) and friends in __init__, before nn.Parameter or register_buffer takes it."""

    def __init__(self, init, shape, value=None):
        self.init, self.shape, self.value = init, shape, value


class Draw:
    """torch.rand(shape) / torch.randn(shape) in get_inputs(): one tensor input."""

    def __init__(self, generator, shape):
        self.generator, self.shape = generator, shape


class Param:
    def __init__(self, shape, init, order, fan_in=None, value=None, buffer=False):
        self.shape, self.init, self.order = shape, init, order
        self.fan_in, self.value, self.buffer = fan_in, value, buffer
        self.name = None


class Module:
    """An nn.Module instance: a library layer (kind = 'Conv2d', ...) or a class of the file."""

    def __init__(self, kind, cfg=None, cls=None):
        self.kind, self.cfg, self.cls = kind, cfg or {}, cls
        self.params = {}      # local name -> Param (weight, bias, running_mean, ...)
        self.children = {}    # attribute name -> Module
        self.attrs = {}       # other attributes (constants, lists of modules)
        self.items = []       # Sequential / ModuleList members

    def all_params(self, prefix=""):
        for n, p in self.params.items():
            yield prefix + n, p
        for n, c in self.children.items():
            yield from c.all_params(prefix + n + ".")
        for i, c in enumerate(self.items):
            yield from c.all_params(prefix + str(i) + ".")


class Ctx:
    def __init__(self):
        self.order = 0
        self.tainted = set()  # dims used in arithmetic or read by the model: never shrunk

    def next(self):
        self.order += 1
        return self.order


def dims_of(v, out):
    if isinstance(v, SymInt):
        out.add(v.dim)
    elif isinstance(v, (list, tuple)):
        for e in v:
            dims_of(e, out)
    return out


# ---- the interpreter -----------------------------------------------------------------------------

class Return(Exception):
    def __init__(self, value):
        self.value = value


class Interp:
    def __init__(self, tree, ctx):
        self.ctx = ctx
        self.globals = {}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.aliases = {}  # import aliases: 'nn' -> 'torch.nn', 'F' -> 'torch.nn.functional'
        self.lines = []    # the forward's TorchScript body
        self.counter = 0
        self.temps = set()  # names bind_temp made: assigned once
        # TorchScript name -> the tensor value it holds (an id): `identity = x` shares x's. An
        # in-place op in Python changes every name holding the value; the functional form written
        # here changes one, so an in-place op on a shared value stops the conversion.
        self.value_of = {}
        self.values = 0
        for n in tree.body:
            if isinstance(n, ast.Import):
                for a in n.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(n, ast.ImportFrom):
                for a in n.names:
                    self.aliases[a.asname or a.name] = "%s.%s" % (n.module, a.name)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                value = n.value
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                v = self.const(value, {})
                for t in targets:
                    self.bind_global(t, v, value)

    def bind_global(self, target, v, node):
        if isinstance(target, ast.Name):
            if type(v) is int and not isinstance(v, bool) and v > 0:
                v = SymInt(v, target.id)
            elif isinstance(v, tuple):
                # depth, height, width = 16, 32, 32 reads as three names; a tuple shape keeps its
                # elements' names where they have one
                pass
            self.globals[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(v, (tuple, list)) or len(v) != len(target.elts):
                raise Unsupported(node, "module-level unpacking of a non-tuple")
            for t, e in zip(target.elts, v):
                self.bind_global(t, e, node)
        else:
            raise Unsupported(node, "module-level assignment to %s" % ast.unparse(target))

    # constants at module level (no tensors)
    def const(self, node, env):
        v = self.expr(node, env, mode="const")
        if isinstance(v, (Code, TensorInit, Module)):
            raise Unsupported(node, "a module-level value that is not a constant: %s" % ast.unparse(node))
        return v

    # -- names ------------------------------------------------------------------------------------
    def dotted(self, node):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id)
        if head is None:
            return None
        return ".".join([head] + parts[::-1])

    def lookup(self, node, env):
        name = node.id
        if name in env:
            return env[name]
        if name in self.globals:
            v = self.globals[name]
            if env.get("__mode__") in ("forward", "init"):
                self.ctx.tainted |= dims_of(v, set())
            return v
        builtins_ = {"True": True, "False": False, "None": None}
        if name in builtins_:
            return builtins_[name]
        if name in ("range", "len", "int", "float", "min", "max", "list", "tuple", "enumerate", "zip", "sum",
                    "abs", "isinstance", "round", "bool", "reversed", "print", "hasattr"):
            return ("builtin", name)
        if name in self.classes:
            return ("class", name)
        if name in self.functions:
            return ("function", name)
        if name in self.aliases:
            return ("module", self.aliases[name])
        raise Unsupported(node, "unknown name '%s'" % name)

    # -- statements -------------------------------------------------------------------------------
    def run(self, body, env):
        for st in body:
            self.stmt(st, env)

    def stmt(self, st, env):
        mode = env["__mode__"]
        if isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant):
                return  # a docstring
            if mode == "forward" and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
                    and st.value.func.attr.endswith("_") and not st.value.func.attr.startswith("_"):
                # x.relu_(): in place on a local is the out-of-place op assigned back
                target = st.value.func.value
                if not isinstance(target, ast.Name):
                    raise Unsupported(st, "an in-place method on %s" % ast.unparse(target))
                self.check_in_place(self.expr(target, env), "%s.%s()" % (target.id, st.value.func.attr), st)
                call = ast.Call(func=ast.Attribute(value=target, attr=st.value.func.attr[:-1], ctx=ast.Load()),
                                args=st.value.args, keywords=st.value.keywords)
                ast.copy_location(call, st.value)
                self.assign(ast.Name(id=target.id, ctx=ast.Store()), self.expr(call, env), env, st)
                return
            v = self.expr(st.value, env)
            if isinstance(v, Code):  # a call for its effect (features.append(y)): written out
                self.emit(v.expr)
            return
        if isinstance(st, ast.Assign):
            v = self.expr(st.value, env)
            for t in st.targets:
                self.assign(t, v, env, st)
            return
        if isinstance(st, ast.AnnAssign):
            self.assign(st.target, self.expr(st.value, env), env, st)
            return
        if isinstance(st, ast.AugAssign):
            if mode == "forward" and isinstance(st.target, ast.Name):
                self.check_in_place(self.expr(st.target, env), "%s %s=" % (st.target.id, BINOPS.get(type(st.op), "?")), st)
            load = ast.copy_location(ast.BinOp(left=self.as_load(st.target), op=st.op, right=st.value), st)
            self.assign(st.target, self.expr(load, env), env, st)
            return
        if isinstance(st, ast.Return):
            raise Return(self.expr(st.value, env) if st.value is not None else None)
        if isinstance(st, ast.If):
            c = self.expr(st.test, env)
            if isinstance(c, Code):
                raise Unsupported(st, "an if on a tensor value")
            self.run(st.body if c else st.orelse, env)
            return
        if isinstance(st, ast.For):
            it = self.expr(st.iter, env)
            if isinstance(it, Code):
                raise Unsupported(st, "a for loop over a tensor value")
            if isinstance(it, Module):
                it = it.items
            for v in list(it):
                self.assign(st.target, v, env, st)
                self.run(st.body, env)
            if st.orelse:
                self.run(st.orelse, env)
            return
        if isinstance(st, ast.Pass):
            return
        if isinstance(st, ast.FunctionDef):
            env[st.name] = ("closure", st, env)
            return
        if isinstance(st, ast.Assert):
            return  # KernelBench's shape asserts: the shapes are fixed per scale
        raise Unsupported(st, "the statement %s" % type(st).__name__)

    @staticmethod
    def as_load(t):
        return ast.parse(ast.unparse(t), mode="eval").body

    def fresh(self, env, hint="t"):
        self.counter += 1
        return "%s%s_%d" % (env.get("__prefix__", ""), hint, self.counter)

    def local(self, env, name):
        prefix = env.get("__prefix__", "")
        name = prefix + name
        return name + "_" if name in ("p", "torch", "F", "math") else name

    def assign(self, target, v, env, st):
        if env["__mode__"] == "forward" and isinstance(v, (list, tuple)):
            v = type(v)(self.stable(e, env) for e in v)
        if isinstance(target, ast.Name):
            if env["__mode__"] == "forward" and isinstance(v, Code):
                name = self.local(env, target.id)
                self.emit("%s = %s" % (name, v.expr))
                self.bind_value(name, v)
                env[target.id] = Code(name, simple=True)
            else:
                env[target.id] = v
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(v, Code):
                tmp = v
                if not v.simple or "(" in v.expr:
                    name = self.fresh(env)
                    self.emit("%s = %s" % (name, v.expr))
                    tmp = Code(name, simple=True)
                for i, t in enumerate(target.elts):
                    if isinstance(t, ast.Starred):
                        raise Unsupported(st, "starred unpacking of a tensor value")
                    self.assign(t, Code("%s[%d]" % (tmp.expr, i), simple=True), env, st)
                return
            v = list(v.items if isinstance(v, Module) else v)
            if len(v) != len(target.elts):
                raise Unsupported(st, "unpacking %d values into %d names" % (len(v), len(target.elts)))
            for t, e in zip(target.elts, v):
                self.assign(t, e, env, st)
            return
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            obj = env["self"]
            if env["__mode__"] != "init":
                raise Unsupported(st, "forward writes self.%s" % target.attr)
            self.set_attr(obj, target.attr, v, st)
            return
        if isinstance(target, ast.Subscript) and env["__mode__"] == "init":
            container = self.expr(target.value, env)
            key = self.expr(target.slice, env)
            if isinstance(container, dict):
                container[key] = v
                return
        raise Unsupported(st, "assignment to %s" % ast.unparse(target))

    def set_attr(self, obj, name, v, node):
        for d in (obj.params, obj.children, obj.attrs):
            d.pop(name, None)
        if isinstance(v, Module):
            obj.children[name] = v
        elif isinstance(v, Param):
            obj.params[name] = v
        elif isinstance(v, TensorInit):
            raise Unsupported(node, "a tensor attribute that is neither a parameter nor a buffer (self.%s)" % name)
        elif isinstance(v, Code):
            raise Unsupported(node, "forward state in self.%s" % name)
        else:
            obj.attrs[name] = v

    def emit(self, line):
        self.lines.append("    " + line)

    # -- expressions ------------------------------------------------------------------------------
    def expr(self, node, env, mode=None):
        if mode is not None:
            env = dict(env, __mode__=mode)
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            raise Unsupported(node, "the expression %s" % type(node).__name__)
        return m(node, env)

    def e_Constant(self, node, env):
        return node.value

    def e_Name(self, node, env):
        return self.lookup(node, env)

    def e_Tuple(self, node, env):
        out = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                out.extend(self.expr(e.value, env))
            else:
                out.append(self.expr(e, env))
        # A list of tensors stays a Python list here (rendered as a list literal where it is used),
        # so `features.append(y); torch.cat(features, 1)` becomes straight-line code.
        return tuple(out)

    def e_List(self, node, env):
        return list(self.e_Tuple(node, env))

    def e_Dict(self, node, env):
        return {self.expr(k, env): self.expr(v, env) for k, v in zip(node.keys, node.values)}

    def e_ListComp(self, node, env):
        if len(node.generators) != 1 or node.generators[0].ifs:
            raise Unsupported(node, "a list comprehension with several loops or a condition")
        g = node.generators[0]
        it = self.expr(g.iter, env)
        if isinstance(it, Code):
            raise Unsupported(node, "a list comprehension over a tensor value")
        out = []
        for v in list(it.items if isinstance(it, Module) else it):
            self.assign(g.target, v, env, node)
            out.append(self.expr(node.elt, env))
        return out

    def e_JoinedStr(self, node, env):
        raise Unsupported(node, "an f-string")

    def e_IfExp(self, node, env):
        c = self.expr(node.test, env)
        if isinstance(c, Code):
            raise Unsupported(node, "a conditional expression on a tensor value")
        return self.expr(node.body if c else node.orelse, env)

    def taint(self, *vs):
        for v in vs:
            self.ctx.tainted |= dims_of(v, set())

    def e_BinOp(self, node, env):
        a, b = self.expr(node.left, env), self.expr(node.right, env)
        sym = BINOPS.get(type(node.op))
        if sym is None:
            raise Unsupported(node, "the operator %s" % type(node.op).__name__)
        if isinstance(a, Code) or isinstance(b, Code):
            if env["__mode__"] != "forward":
                raise Unsupported(node, "tensor arithmetic in __init__")
            return Code("%s %s %s" % (operand(a), sym, operand(b)))
        if isinstance(a, Draw) or isinstance(b, Draw):
            raise Unsupported(node, "an input computed from a draw (%s): the task format draws inputs only with "
                                    "torch.rand or torch.randn" % ast.unparse(node))
        if isinstance(a, TensorInit) or isinstance(b, TensorInit):
            raise Unsupported(node, "a parameter initialised by %s (an initialiser the task format lacks)" % ast.unparse(node))
        self.taint(a, b)
        try:
            return PYOPS[type(node.op)](strip(a), strip(b))
        except Exception as e:  # noqa: BLE001 - a constant that does not evaluate
            raise Unsupported(node, "constant arithmetic failed: %s" % e)

    def e_UnaryOp(self, node, env):
        a = self.expr(node.operand, env)
        if isinstance(a, Code):
            sym = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not ", ast.Invert: "~"}[type(node.op)]
            return Code("%s%s" % (sym, operand(a)))
        self.taint(a)
        a = strip(a)
        return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x,
                ast.Invert: lambda x: ~x}[type(node.op)](a)

    def e_BoolOp(self, node, env):
        vs = [self.expr(v, env) for v in node.values]
        if any(isinstance(v, Code) for v in vs):
            raise Unsupported(node, "and/or on a tensor value")
        r = vs[0]
        for v in vs[1:]:
            r = (r and v) if isinstance(node.op, ast.And) else (r or v)
        return r

    def e_Compare(self, node, env):
        vs = [self.expr(node.left, env)] + [self.expr(c, env) for c in node.comparators]
        if any(isinstance(v, Code) for v in vs):
            if len(node.ops) != 1:
                raise Unsupported(node, "a chained comparison of tensor values")
            return Code("%s %s %s" % (operand(vs[0]), CMPOPS[type(node.ops[0])], operand(vs[1])))
        for op, a, b in zip(node.ops, vs, vs[1:]):
            if isinstance(op, ast.Is):
                ok = a is b
            elif isinstance(op, ast.IsNot):
                ok = a is not b
            elif isinstance(op, ast.In):
                ok = a in b
            elif isinstance(op, ast.NotIn):
                ok = a not in b
            else:
                ok = PYCMP[type(op)](strip(a), strip(b))
            if not ok:
                return False
        return True

    def e_Subscript(self, node, env):
        v = self.expr(node.value, env)
        if isinstance(v, Code):
            return Code("%s[%s]" % (operand(v), self.index(node.slice, env)), simple=True)
        k = self.expr(node.slice, env)
        if isinstance(k, Code):
            raise Unsupported(node, "indexing a constant with a tensor value")
        if isinstance(v, Module):
            v = v.items
        if isinstance(k, slice):
            return v[k]
        return v[strip(k)] if not isinstance(v, dict) else v[k]

    def e_Slice(self, node, env):
        parts = [self.expr(x, env) if x is not None else None for x in (node.lower, node.upper, node.step)]
        if any(isinstance(x, Code) for x in parts):
            return Code(":".join("" if x is None else render(x) for x in parts[:2]) +
                        ("" if parts[2] is None else ":" + render(parts[2])))
        return slice(*[strip(x) if x is not None else None for x in parts])

    def index(self, node, env):
        if isinstance(node, ast.Tuple):
            return ", ".join(self.index(e, env) for e in node.elts)
        if isinstance(node, ast.Slice):
            parts = [self.expr(x, env) if x is not None else None for x in (node.lower, node.upper, node.step)]
            s = ":".join("" if x is None else render(x) for x in parts[:2])
            return s + ("" if parts[2] is None else ":" + render(parts[2]))
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            return "..."
        v = self.expr(node, env)
        if v is None:
            return "None"
        return render(v)

    def e_Attribute(self, node, env):
        path = self.dotted(node)
        if path is not None:
            if path in ("torch.float32", "torch.float", "torch.float16", "torch.half", "torch.bfloat16",
                        "torch.float64", "torch.double", "torch.int64", "torch.long", "torch.int32", "torch.bool"):
                return Code(path, simple=True)
            if path == "math.pi":
                return math.pi
            if path == "math.e":
                return math.e
            if path == "math.inf":
                return math.inf
            return ("path", path)
        v = self.expr(node.value, env)
        if isinstance(v, Draw):
            raise Unsupported(node, "an input computed from a draw (%s): the task format draws inputs only with "
                                    "torch.rand or torch.randn" % ast.unparse(node))
        if isinstance(v, Module) and node.attr in ("modules", "named_modules", "parameters", "named_parameters",
                                                   "apply"):
            raise Unsupported(node, "self.%s() (a weight initialisation of its own, which the task format's "
                                    "initialisers cannot express)" % node.attr)
        if isinstance(v, Module) and v.kind in ("Sequential", "ModuleList") and node.attr in ("append", "extend"):
            return ("pymethod", v.items, node.attr)
        if isinstance(v, Module):
            return self.module_attr(v, node)
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "class":
            for st in self.classes[v[1]].body:
                if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.attr for t in st.targets):
                    return self.expr(st.value, {"__mode__": "const"})
        if isinstance(v, Code):
            if node.attr in ("shape", "T", "mT", "dtype", "device"):
                if node.attr == "T":
                    return Code("%s.t()" % operand(v), simple=True)
                if node.attr in ("dtype", "device"):
                    return Code("%s.%s" % (operand(v), node.attr), simple=True)
                return Code("%s.size()" % operand(v), simple=True)
            if node.attr == "values":  # torch.max(x, dim).values: TorchScript's result is a plain tuple
                return Code("%s[0]" % operand(v), simple=True)
            if node.attr == "indices":
                return Code("%s[1]" % operand(v), simple=True)
            return ("method", v, node.attr)
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "module":
            return ("path", v[1] + "." + node.attr)
        if isinstance(v, (list, dict, str)) and node.attr in ("append", "extend", "items", "keys", "values",
                                                               "split", "join"):
            return ("pymethod", v, node.attr)
        raise Unsupported(node, "the attribute %s" % ast.unparse(node))

    def module_attr(self, mod, node):
        name = node.attr
        if name in mod.params:
            p = mod.params[name]
            return Code('p["%s"]' % p.name, simple=True) if p.name else p
        if name in mod.children:
            return mod.children[name]
        if name in mod.attrs:
            return mod.attrs[name]
        if name in mod.cfg:
            return mod.cfg[name]
        if mod.cls is not None:
            for st in mod.cls.body:
                if isinstance(st, ast.FunctionDef) and st.name == name:
                    return ("bound", mod, st)
                if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in st.targets):
                    return self.expr(st.value, {"__mode__": "const"})
        raise Unsupported(node, "the attribute %s of %s" % (name, mod.kind))

    def e_Starred(self, node, env):
        raise Unsupported(node, "a starred expression here")

    def e_Lambda(self, node, env):
        raise Unsupported(node, "a lambda")

    # -- calls ------------------------------------------------------------------------------------
    def e_Call(self, node, env):
        f = node.func
        # super().__init__() / super(Model, self).__init__()
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Name) \
                and f.value.func.id == "super":
            return None
        callee = self.expr(f, env)
        args, kwargs = [], {}
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value, env)
                if isinstance(v, Code):
                    raise Unsupported(node, "*args of a tensor value")
                args.extend(v.items if isinstance(v, Module) else v)
            else:
                args.append(self.expr(a, env))
        for k in node.keywords:
            if k.arg is None:
                raise Unsupported(node, "**kwargs")
            kwargs[k.arg] = self.expr(k.value, env)
        mode = env["__mode__"]
        if isinstance(callee, Module):
            if mode != "forward":
                raise Unsupported(node, "calling a module outside forward")
            return self.call_module(callee, args, kwargs, node, env)
        if isinstance(callee, tuple):
            kind = callee[0]
            if kind == "builtin":
                return self.builtin(callee[1], args, kwargs, node)
            if kind == "class":
                return self.instantiate(callee[1], args, kwargs, node)
            if kind == "function":
                return self.call_def(self.functions[callee[1]], None, args, kwargs, node, env, {})
            if kind == "bound":
                return self.call_def(callee[2], callee[1], args, kwargs, node, env, {})
            if kind == "closure":
                return self.call_def(callee[1], None, args, kwargs, node, env, callee[2])
            if kind == "path":
                return self.call_path(callee[1], args, kwargs, node, env)
            if kind == "method":
                return self.call_method(callee[1], callee[2], args, kwargs, node)
            if kind == "pymethod":
                obj, name = callee[1], callee[2]
                if name == "append":
                    obj.append(self.stable(args[0], env) if mode == "forward" else args[0])
                    return None
                if name == "extend":
                    items = args[0].items if isinstance(args[0], Module) else args[0]
                    obj.extend(self.stable(e, env) if mode == "forward" else e for e in items)
                    return None
                return getattr(obj, name)(*args)
        if isinstance(callee, tuple) and callee[0] == "module" and callee[1].startswith("einops."):
            raise Unsupported(node, NEEDS_EINOPS % callee[1])
        raise Unsupported(node, "calling %s" % ast.unparse(f))

    def builtin(self, name, args, kwargs, node):
        if any(isinstance(a, Code) for a in args):
            if name in ("int", "float", "min", "max", "len", "abs"):
                return Code("%s(%s)" % (name, ", ".join(render(a) for a in args)), simple=True)
            raise Unsupported(node, "%s() of a tensor value" % name)
        if name == "print":
            return None
        if name == "isinstance":
            raise Unsupported(node, "isinstance")
        if name == "hasattr":
            obj = args[0]
            if not isinstance(obj, Module):
                raise Unsupported(node, "hasattr of a non-module")
            return any(args[1] in d for d in (obj.params, obj.children, obj.attrs, obj.cfg))
        self.taint(*args)
        fn = {"range": range, "len": len, "int": int, "float": float, "min": min, "max": max, "list": list,
              "tuple": tuple, "enumerate": enumerate, "zip": zip, "sum": sum, "abs": abs, "round": round,
              "bool": bool, "reversed": reversed}[name]
        args = [a.items if isinstance(a, Module) else strip(a) for a in args]
        r = fn(*args, **kwargs)
        return list(r) if name in ("enumerate", "zip", "reversed") else r

    def call_def(self, fn, self_mod, args, kwargs, node, env, outer):
        """A function or method of the file, run in the caller's mode (inlined in forward)."""
        self.counter += 1
        inner = dict(outer)
        inner.update({"__mode__": env["__mode__"], "__prefix__": "%s%s%d_" % (env.get("__prefix__", ""),
                                                                           fn.name.strip("_")[:6], self.counter)})
        if self_mod is not None:
            inner["self"] = self_mod
        if env["__mode__"] == "forward":
            args = [self.bind_temp(a, env) if isinstance(a, Code) and not a.simple else a for a in args]
        self.bind_args(fn, args, kwargs, inner, node, skip_self=self_mod is not None)
        try:
            self.run(fn.body, inner)
        except Return as r:
            return r.value
        return None

    def instantiate(self, name, args, kwargs, node):
        cls = self.classes[name]
        bases = [ast.unparse(b) for b in cls.bases]
        if not any(b.endswith("Module") for b in bases):
            raise Unsupported(node, "the class %s is not an nn.Module" % name)
        mod = Module(name, cls=cls)
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is not None:
            env = {"__mode__": "init", "self": mod}
            self.bind_args(init, args, kwargs, env, node, skip_self=True)
            try:
                self.run(init.body, env)
            except Return:
                pass
        return mod

    def bind_args(self, fn, args, kwargs, env, node, skip_self):
        params = fn.args.args[1:] if skip_self else fn.args.args
        defaults = fn.args.defaults
        if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
            raise Unsupported(fn, "*args, **kwargs or keyword-only arguments in %s" % fn.name)
        if len(args) > len(params):
            raise Unsupported(node, "%d arguments for %s" % (len(args), fn.name))
        first_default = len(params) - len(defaults)
        for i, a in enumerate(params):
            if i < len(args):
                env[a.arg] = args[i]
            elif a.arg in kwargs:
                env[a.arg] = kwargs[a.arg]
            elif i >= first_default:
                env[a.arg] = self.expr(defaults[i - first_default], {"__mode__": "const"})
            else:
                raise Unsupported(node, "missing argument %s of %s" % (a.arg, fn.name))

    def call_method(self, obj, name, args, kwargs, node):
        if name.endswith("_") and not name.startswith("_"):
            raise Unsupported(node, "the in-place method %s inside an expression" % name)
        parts = [render(a) for a in args] + ["%s=%s" % (k, render(v)) for k, v in kwargs.items()]
        return Code("%s.%s(%s)" % (operand(obj), name, ", ".join(parts)), simple=True)

    def call_path(self, path, args, kwargs, node, env):
        mode = env["__mode__"]
        if path.startswith("torch.nn.") and not path.startswith("torch.nn.functional.") and \
                not path.startswith("torch.nn.init."):
            layer = path[len("torch.nn."):]
            if mode != "init":
                raise Unsupported(node, "constructing nn.%s outside __init__" % layer)
            return self.make_layer(layer, args, kwargs, node)
        if path.startswith("math."):
            if any(isinstance(a, Code) for a in args):
                return Code("%s(%s)" % (path, ", ".join(render(a) for a in args)), simple=True)
            self.taint(*args)
            return getattr(math, path[5:])(*[strip(a) for a in args])
        if mode == "init":
            return self.init_tensor(path, args, kwargs, node)
        if not path.startswith("torch."):
            raise Unsupported(node, "the call %s" % path)
        if path.startswith("torch.nn.functional."):
            pass
        elif path.count(".") != 1:
            raise Unsupported(node, "the call %s" % path)
        if kwargs.get("inplace") is True and args:
            self.check_in_place(args[0], "%s(inplace=True)" % path, node)
        floats = FLOAT_ARGS.get(path, ())
        args = [float(a) if 0 < i <= len(floats) and type(strip(a)) is int else a for i, a in enumerate(args)]
        kwargs = {k: float(v) if k in floats and type(strip(v)) is int else v for k, v in kwargs.items()}
        parts = [render(a) for a in args] + ["%s=%s" % (k, render(v)) for k, v in kwargs.items()]
        return Code("%s(%s)" % (path, ", ".join(parts)), simple=True)

    def init_tensor(self, path, args, kwargs, node):
        if path in ("torch.randn", "torch.ones", "torch.zeros"):
            if kwargs:
                raise Unsupported(node, "%s with keywords" % path)
            shape = list(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else list(args)
            return TensorInit(path[6:], shape)
        if path == "torch.tensor" and len(args) == 1 and isinstance(args[0], (int, float)) and not kwargs:
            return TensorInit("constant", [], float(args[0]))
        if path == "torch.nn.Parameter" or path == "torch.nn.parameter.Parameter":
            pass
        raise Unsupported(node, "%s in __init__ (no task initialiser makes it)" % path)

    # -- layers -----------------------------------------------------------------------------------
    def make_layer(self, layer, args, kwargs, node):
        if layer == "Parameter":
            t = args[0] if args else kwargs.get("data")
            if not isinstance(t, TensorInit):
                raise Unsupported(node, "nn.Parameter of %s" % ast.unparse(node.args[0]))
            return self.param_of(t)
        if layer in ("Sequential", "ModuleList"):
            items = list(args) if layer == "Sequential" else (list(args[0].items if isinstance(args[0], Module)
                                                                    else args[0]) if args else [])
            if kwargs or not all(isinstance(m, Module) for m in items):
                raise Unsupported(node, "nn.%s of something other than modules" % layer)
            mod = Module(layer)
            mod.items = items
            return mod
        spec = LAYERS.get(layer)
        if spec is None:
            raise Unsupported(node, "nn.%s (no functional translation here)" % layer)
        if len(args) > len(spec):
            raise Unsupported(node, "nn.%s with %d positional arguments" % (layer, len(args)))
        cfg = {n: d for n, d in spec}
        for (n, _), a in zip(spec, args):
            cfg[n] = a
        for k, v in kwargs.items():
            if k not in cfg:
                raise Unsupported(node, "nn.%s(%s=...)" % (layer, k))
            cfg[k] = v
        for n, v in cfg.items():
            if v is REQUIRED:
                raise Unsupported(node, "nn.%s without %s" % (layer, n))
        mod = Module(layer, cfg)
        self.layer_params(mod, node)
        return mod

    def param_of(self, t):
        return Param(t.shape, {"randn": "randn", "ones": "ones", "zeros": "zeros", "constant": "constant"}[t.init],
                     self.ctx.next(), value=t.value)

    def layer_params(self, mod, node):
        c, k = mod.cfg, mod.kind
        if c.get("device") is not None or c.get("dtype") is not None:
            raise Unsupported(node, "nn.%s with a device or dtype" % k)
        m = re.match(r"^(Conv|ConvTranspose)([123])d$", k)
        if m:
            n = int(m.group(2))
            ks = tup(c["kernel_size"], n)
            g = strip(c["groups"])
            if c.get("padding_mode", "zeros") != "zeros":
                raise Unsupported(node, "nn.%s with padding_mode %s" % (k, c["padding_mode"]))
            if isinstance(c.get("padding"), str):
                raise Unsupported(node, "nn.%s with padding='%s'" % (k, c["padding"]))
            cin, cout = c["in_channels"], c["out_channels"]
            if g != 1:  # both channel counts must stay multiples of groups: kept at every scale
                strip(cin), strip(cout)
            if m.group(1) == "Conv":
                shape = [cout, cin if g == 1 else strip(cin) // g] + ks
                fan = [shape[1]] + ks
            else:
                shape = [cin, cout if g == 1 else strip(cout) // g] + ks
                fan = [shape[1]] + ks
            mod.params["weight"] = Param(shape, "uniform_fan_in", self.ctx.next(), fan_in=fan)
            if c["bias"]:
                mod.params["bias"] = Param([cout], "uniform_fan_in", self.ctx.next(), fan_in=fan)
            return
        if k == "Linear":
            mod.params["weight"] = Param([c["out_features"], c["in_features"]], "uniform_fan_in", self.ctx.next(),
                                         fan_in=[c["in_features"]])
            if c["bias"]:
                mod.params["bias"] = Param([c["out_features"]], "uniform_fan_in", self.ctx.next(),
                                           fan_in=[c["in_features"]])
            return
        if k in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
            n = c["num_features"]
            if c["affine"]:
                mod.params["weight"] = Param([n], "ones", self.ctx.next())
                mod.params["bias"] = Param([n], "zeros", self.ctx.next())
            if c["track_running_stats"]:
                # BatchNorm's running statistics are buffers; InstanceNorm's have no functional form here.
                if k.startswith("InstanceNorm"):
                    raise Unsupported(node, "nn.%s with track_running_stats" % k)
                mod.params["running_mean"] = Param([n], "zeros", self.ctx.next(), buffer=True)
                mod.params["running_var"] = Param([n], "ones", self.ctx.next(), buffer=True)
            return
        if k == "GroupNorm":
            strip(c["num_channels"])  # a multiple of num_groups: kept at every scale
            if c["affine"]:
                mod.params["weight"] = Param([c["num_channels"]], "ones", self.ctx.next())
                mod.params["bias"] = Param([c["num_channels"]], "zeros", self.ctx.next())
            return
        if k == "LayerNorm":
            shape = c["normalized_shape"]
            shape = list(shape) if isinstance(shape, (tuple, list)) else [shape]
            c["normalized_shape"] = shape
            if c["elementwise_affine"]:
                mod.params["weight"] = Param(list(shape), "ones", self.ctx.next())
                if c["bias"]:
                    mod.params["bias"] = Param(list(shape), "zeros", self.ctx.next())
            return

    def call_module(self, mod, args, kwargs, node, env):
        if mod.cls is not None:
            return self.inline_forward(mod, args, kwargs, node, env)
        k, c = mod.kind, mod.cfg
        if kwargs or len(args) != 1:
            raise Unsupported(node, "calling nn.%s with %d arguments" % (k, len(args) + len(kwargs)))
        x = args[0]
        if not isinstance(x, Code):
            raise Unsupported(node, "calling nn.%s on a constant" % k)
        if c.get("inplace"):
            self.check_in_place(x, "nn.%s(inplace=True)" % k, node)
        if k == "Sequential":
            for m in mod.items:
                x = self.call_module(m, [x], {}, node, env)
                if mod.items and m is not mod.items[-1]:
                    x = self.bind_temp(x, env)
            return x
        def w(n):
            return Code('p["%s"]' % mod.params[n].name, simple=True) if n in mod.params else None

        xs = x
        m = re.match(r"^(Conv|ConvTranspose)([123])d$", k)
        if m:
            n = int(m.group(2))
            stride, pad, dil = tup(c["stride"], n), tup(c["padding"], n), tup(c["dilation"], n)
            if m.group(1) == "Conv":
                return call("torch.conv%dd" % n, xs, w("weight"), w("bias"), stride, pad, dil, c["groups"])
            return call("torch.conv_transpose%dd" % n, xs, w("weight"), w("bias"), stride, pad,
                        tup(c["output_padding"], n), c["groups"], dil)
        if k == "Linear":
            return call("torch.linear", xs, w("weight"), w("bias"))
        if k.startswith("BatchNorm"):
            return call("torch.batch_norm", xs, w("weight"), w("bias"), w("running_mean"), w("running_var"), True,
                        c["momentum"], c["eps"], True)
        if k.startswith("InstanceNorm"):
            return call("torch.instance_norm", xs, w("weight"), w("bias"), None, None, True, c["momentum"],
                        c["eps"], False)
        if k == "GroupNorm":
            return call("torch.group_norm", xs, c["num_groups"], w("weight"), w("bias"), c["eps"], True)
        if k == "LayerNorm":
            return call("torch.layer_norm", xs, list(c["normalized_shape"]), w("weight"), w("bias"), c["eps"], True)
        m = re.match(r"^(Max|Avg)Pool([123])d$", k)
        if m:
            n = int(m.group(2))
            ks = tup(c["kernel_size"], n)
            stride = tup(c["stride"] if c["stride"] is not None else c["kernel_size"], n)
            pad = tup(c["padding"], n)
            if m.group(1) == "Max":
                if c["return_indices"]:
                    raise Unsupported(node, "nn.%s with return_indices" % k)
                return call("torch.max_pool%dd" % n, xs, ks, stride, pad, tup(c["dilation"], n), c["ceil_mode"])
            if n == 1:
                return call("torch.avg_pool1d", xs, ks, stride, pad, c["ceil_mode"], c["count_include_pad"])
            return call("torch.avg_pool%dd" % n, xs, ks, stride, pad, c["ceil_mode"], c["count_include_pad"],
                        c["divisor_override"])
        m = re.match(r"^Adaptive(Avg|Max)Pool([123])d$", k)
        if m:
            n = int(m.group(2))
            size = tup(c["output_size"], n)
            if m.group(1) == "Avg":
                return call("torch.adaptive_avg_pool%dd" % n, xs, size)
            if c["return_indices"]:
                raise Unsupported(node, "nn.%s with return_indices" % k)
            return Code(call("torch.adaptive_max_pool%dd" % n, xs, size).expr + "[0]", simple=True)
        if k == "Dropout" or k.startswith("Dropout"):
            if strip(c["p"]) != 0:
                raise Unsupported(node, "nn.%s(p=%s): random in training mode, which KernelBench never leaves" %
                                  (k, c["p"]))
            return x
        if k == "Identity":
            return x
        if k == "Flatten":
            return call("torch.flatten", xs, c["start_dim"], c["end_dim"])
        if k == "ReLU":
            return call("torch.relu", xs)
        if k == "ReLU6":
            return call("torch.hardtanh", xs, 0.0, 6.0)
        if k == "LeakyReLU":
            return call("torch.leaky_relu", xs, float(c["negative_slope"]))
        if k == "Hardtanh":
            return call("torch.hardtanh", xs, float(c["min_val"]), float(c["max_val"]))
        if k == "GELU":
            return Code('torch.gelu(%s, approximate="%s")' % (xs.expr, c["approximate"]), simple=True)
        if k == "Softmax":
            return call("torch.softmax", xs, c["dim"])
        if k == "LogSoftmax":
            return call("torch.log_softmax", xs, c["dim"])
        if k == "ELU":
            return call("torch.elu", xs, float(c["alpha"]))
        if k == "Softplus":
            return call("torch.softplus", xs, float(c["beta"]), float(c["threshold"]))
        simple = {"Tanh": "torch.tanh", "Sigmoid": "torch.sigmoid", "Mish": "torch.mish", "Hardswish":
                  "torch.hardswish", "Hardsigmoid": "torch.hardsigmoid", "SiLU": "torch.silu", "SELU": "torch.selu",
                  "Softsign": "torch.nn.functional.softsign", "Tanhshrink": "torch.nn.functional.tanhshrink"}
        if k in simple:
            return call(simple[k], xs)
        raise Unsupported(node, "calling nn.%s" % k)

    def bind_temp(self, x, env):
        name = self.fresh(env, "x")
        self.emit("%s = %s" % (name, x.expr))
        self.temps.add(name)
        self.bind_value(name, x)
        return Code(name, simple=True)

    def bind_value(self, name, v):
        if re.match(r"^[A-Za-z_][A-Za-z_0-9]*$", v.expr) and v.expr in self.value_of:
            self.value_of[name] = self.value_of[v.expr]  # an alias: the same tensor
        else:
            self.values += 1
            self.value_of[name] = self.values

    def check_in_place(self, v, what, node):
        """Stops the conversion when `what` changes in place a tensor another name also holds."""
        if not isinstance(v, Code) or v.expr not in self.value_of:
            return
        others = sorted(n for n, i in self.value_of.items() if i == self.value_of[v.expr] and n != v.expr)
        if others:
            raise Unsupported(node, "%s changes %s in place, which %s also holds (Python changes both; the functional "
                                    "form would change one)" % (what, v.expr, ", ".join(others)))

    def stable(self, v, env):
        """A tensor kept in a Python list: a name nothing rebinds later (the source's `x` may be
        assigned again after `features = [x]`), computed once whoever reads the list."""
        if not isinstance(v, Code) or v.expr in self.temps or re.match(r'^p\["[^"]*"\]$', v.expr):
            return v
        return self.bind_temp(v, env)

    def inline_forward(self, mod, args, kwargs, node, env):
        fwd = next((n for n in mod.cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
        if fwd is None:
            raise Unsupported(node, "the class %s has no forward" % mod.kind)
        self.counter += 1
        inner = {"__mode__": "forward", "self": mod, "__prefix__": "%s%s%d_" % (env.get("__prefix__", ""),
                                                                               mod.kind.lower()[:6], self.counter)}
        self.bind_args(fwd, [self.bind_temp(a, env) if isinstance(a, Code) and not a.simple else a for a in args],
                       kwargs, inner, node, skip_self=True)
        try:
            self.run(fwd.body, inner)
        except Return as r:
            if isinstance(r.value, (tuple, list)):
                raise Unsupported(node, "%s.forward returns several values" % mod.kind)
            return r.value
        raise Unsupported(node, "%s.forward returns nothing" % mod.kind)


IDENT = re.compile(r'^(?:[A-Za-z_][A-Za-z_0-9]*|p\["[^"]*"\])$')
BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
          ast.Pow: "**", ast.MatMult: "@"}
PYOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
         ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
         ast.Pow: lambda a, b: a ** b}
CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
PYCMP = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
         ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}

# nn layers: their arguments in positional order with PyTorch 2.x's defaults (REQUIRED: none).
REQUIRED = object()
_CONV = [("in_channels", REQUIRED), ("out_channels", REQUIRED), ("kernel_size", REQUIRED), ("stride", 1),
         ("padding", 0), ("dilation", 1), ("groups", 1), ("bias", True), ("padding_mode", "zeros"),
         ("device", None), ("dtype", None)]
_CONVT = [("in_channels", REQUIRED), ("out_channels", REQUIRED), ("kernel_size", REQUIRED), ("stride", 1),
          ("padding", 0), ("output_padding", 0), ("groups", 1), ("bias", True), ("dilation", 1),
          ("padding_mode", "zeros"), ("device", None), ("dtype", None)]
_BN = [("num_features", REQUIRED), ("eps", 1e-5), ("momentum", 0.1), ("affine", True), ("track_running_stats", True),
       ("device", None), ("dtype", None)]
_IN = [("num_features", REQUIRED), ("eps", 1e-5), ("momentum", 0.1), ("affine", False),
       ("track_running_stats", False), ("device", None), ("dtype", None)]
_MAXP = [("kernel_size", REQUIRED), ("stride", None), ("padding", 0), ("dilation", 1), ("return_indices", False),
         ("ceil_mode", False)]
_AVGP = [("kernel_size", REQUIRED), ("stride", None), ("padding", 0), ("ceil_mode", False),
         ("count_include_pad", True), ("divisor_override", None)]
_DROP = [("p", 0.5), ("inplace", False)]
_INPLACE = [("inplace", False)]
LAYERS = {
    "Linear": [("in_features", REQUIRED), ("out_features", REQUIRED), ("bias", True), ("device", None),
               ("dtype", None)],
    "Conv1d": _CONV, "Conv2d": _CONV, "Conv3d": _CONV,
    "ConvTranspose1d": _CONVT, "ConvTranspose2d": _CONVT, "ConvTranspose3d": _CONVT,
    "BatchNorm1d": _BN, "BatchNorm2d": _BN, "BatchNorm3d": _BN,
    "InstanceNorm1d": _IN, "InstanceNorm2d": _IN, "InstanceNorm3d": _IN,
    "GroupNorm": [("num_groups", REQUIRED), ("num_channels", REQUIRED), ("eps", 1e-5), ("affine", True),
                  ("device", None), ("dtype", None)],
    "LayerNorm": [("normalized_shape", REQUIRED), ("eps", 1e-5), ("elementwise_affine", True), ("bias", True),
                  ("device", None), ("dtype", None)],
    "MaxPool1d": _MAXP, "MaxPool2d": _MAXP, "MaxPool3d": _MAXP,
    "AvgPool1d": _AVGP[:5], "AvgPool2d": _AVGP, "AvgPool3d": _AVGP,
    "AdaptiveAvgPool1d": [("output_size", REQUIRED)], "AdaptiveAvgPool2d": [("output_size", REQUIRED)],
    "AdaptiveAvgPool3d": [("output_size", REQUIRED)],
    "AdaptiveMaxPool1d": [("output_size", REQUIRED), ("return_indices", False)],
    "AdaptiveMaxPool2d": [("output_size", REQUIRED), ("return_indices", False)],
    "AdaptiveMaxPool3d": [("output_size", REQUIRED), ("return_indices", False)],
    "Dropout": _DROP, "Dropout1d": _DROP, "Dropout2d": _DROP, "Dropout3d": _DROP,
    "Identity": [], "Flatten": [("start_dim", 1), ("end_dim", -1)],
    "ReLU": _INPLACE, "ReLU6": _INPLACE, "Mish": _INPLACE, "Hardswish": _INPLACE, "Hardsigmoid": _INPLACE,
    "SiLU": _INPLACE, "SELU": _INPLACE,
    "LeakyReLU": [("negative_slope", 0.01), ("inplace", False)],
    "Hardtanh": [("min_val", -1.0), ("max_val", 1.0), ("inplace", False)],
    "GELU": [("approximate", "none")], "Softmax": [("dim", None)], "LogSoftmax": [("dim", None)],
    "ELU": [("alpha", 1.0), ("inplace", False)], "Softplus": [("beta", 1.0), ("threshold", 20.0)],
    "Tanh": [], "Sigmoid": [], "Softsign": [], "Tanhshrink": [],
}


# Dimensions whose value the conversion used as a number (a stride, a literal in forward, a
# comparison): they keep their full value at smoke scale. Reset per task by convert().
VALUE_DIMS = set()


def strip(v):
    if isinstance(v, SymInt):
        VALUE_DIMS.add(v.dim)
        return int(v)
    return v


def tup(v, n):
    v = strip(v) if not isinstance(v, (tuple, list)) else [strip(e) for e in v]
    return list(v) if isinstance(v, (tuple, list)) else [v] * n


def render(v):
    """A constant or Code as TorchScript source."""
    if isinstance(v, Code):
        return v.expr
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    if isinstance(v, int):
        return str(strip(v))
    if isinstance(v, float):
        if math.isinf(v):
            return "float('inf')" if v > 0 else "float('-inf')"
        return repr(v)
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, (tuple, list)):
        return "[%s]" % ", ".join(render(e) for e in v)
    if isinstance(v, Param):
        return 'p["%s"]' % v.name
    raise Unsupported(None, "the value %r in forward" % (v,))


def operand(v):
    s = render(v)
    if isinstance(v, Code) and not v.simple:
        return "(%s)" % s
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
        return "(%s)" % s
    return s


def call(fn, *args):
    return Code("%s(%s)" % (fn, ", ".join(render(a) for a in args)), simple=True)
