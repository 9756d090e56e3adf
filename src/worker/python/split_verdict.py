# Whether a split build's failed device unit already shows the answer's own compile error (issue 35:
# a kernel's error reported in seconds), loaded into the worker's embedded Python as the module
# `_kwb_split_verdict` after cuda_split.py; standard library only.
#
# Why: the device unit (cuda_split.py) is the answer's kernels without torch's headers, and nvcc
# knows its errors in about a second, where load_inline's whole build needs ten or more (cudafe++
# parses torch's headers first). Such an error is the answer's only if the whole `.cu` fails too,
# which holds where torch's headers could not have made the code valid. The rules below decide that
# from facts, never from a guess; anything else is left to the whole build, as before:
#   - every error nvcc printed is on the answer's own lines (never a launcher's: cuda_split sets them
#     off under their own file name), and is one of
#       `identifier "X" is undefined`, where no header of the answer's torch includes declares X where
#       the kernel could see it (at file scope, through a using-directive there, by argument-dependent
#       lookup in a namespace the device unit's types may belong to, or as a macro), and the answer's
#       own text declares X nowhere the device unit left out; or
#       `class "uint3"|"dim3" has no member "M"`, said of threadIdx, blockIdx, blockDim or gridDim
#       (CUDA's built-in variables, whose types no header can change);
#   - no name of the device unit's text is a macro that torch's headers define and the device unit's
#     own headers do not define the same way (else the answer's code reads differently in the two
#     builds), and the source pastes no tokens (`##` could make a declaration no reading sees).
# What torch's headers declare is read from their preprocessed text, as the build's own compiler
# preprocesses the answer's includes (every view nvcc parses: the host side's and each arch's), by a
# scan of namespace scope: it keeps every name it cannot rule out, so it can only make the rule
# decline more often, never claim a name torch declares is missing.
import os
import pickle
import re
import threading
import warnings

# The kinds of message the rules can decide (EDG's text, with or without its error number).
_MESSAGE = re.compile(r'^(?P<file>.*?)\((?P<line>\d+)\): (?P<severity>error|warning|remark|catastrophic error)'
                      r'(?: #[\w-]+)?: (?P<text>.*)$')
_UNDEFINED = re.compile(r'identifier "(?P<name>[A-Za-z_]\w*)" is undefined$')
_NO_MEMBER = re.compile(r'class "(?P<type>uint3|dim3)" has no member "(?P<member>[A-Za-z_]\w*)"$')
_BUILTIN_TYPES = {"threadIdx": "uint3", "blockIdx": "uint3", "blockDim": "dim3", "gridDim": "dim3"}
# torch's own namespaces: no type of a unit without torch's headers belongs to them, so argument-
# dependent lookup from the device unit's code never looks there.
TORCH_NAMESPACES = {"torch", "at", "c10", "caffe2", "pybind11"}


class Message:
    __slots__ = ("file", "line", "severity", "text", "code")

    def __init__(self, file, line, severity, text, code):
        self.file, self.line, self.severity, self.text, self.code = file, line, severity, text, code


def messages(output):
    """nvcc's (EDG's) messages in a compile's output: file, line, severity, text, and the source
    line EDG quotes under it ("" where none)."""
    out = []
    lines = output.splitlines()
    for k, line in enumerate(lines):
        m = _MESSAGE.match(line)
        if m:
            code = lines[k + 1] if k + 1 < len(lines) and not _MESSAGE.match(lines[k + 1]) else ""
            out.append(Message(m.group("file"), int(m.group("line")), m.group("severity"), m.group("text").strip(), code))
    return out


def directives_only(text):
    """The source with everything but its preprocessor directives blanked, line for line: what its
    includes bring in, preprocessed with the build's flags, is what the answer's code sees."""
    out = []
    continued = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if continued or line.lstrip().startswith("#"):
            out.append(line)
            continued = line.endswith("\\")
        else:
            out.append("")
    return "\n".join(out) + "\n"


# The scan of preprocessed text. At namespace scope every token matters; inside a class, a function
# or an initializer only the braces do, and what could hide one: a literal, a directive line (gcc -E
# starts each at a line's first column). Single-character searches keep a 15 MB text near half a
# second.
_OUTER = re.compile(r'(?:\w+|[ \t*&,=.+\-~!%|/?:\[\]]|\n(?!#))+|<<|>>|[{};()<>^"\']|\n#')
_NAMES = re.compile(r'\b[A-Za-z_]\w*')
_INNER = re.compile(r'[{}"\']|\n#')
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_CHAR = re.compile(r"'(?:[^'\\\n]|\\.)*'")
_RAW_OPEN = re.compile(r'"([^()\\\s]{0,16})\(')
_DEFINE = re.compile(r'#\s*define\s+([A-Za-z_]\w*)(.*)', re.S)
_UNDEF = re.compile(r'#\s*undef\s+([A-Za-z_]\w*)')


def _past_literal(text, pos):
    """Where the literal or directive line starting at text[pos] ends (a quote, an apostrophe, or the
    newline before a '#'), or -1 where it does not end."""
    c = text[pos]
    if c == "\n":
        end = text.find("\n", pos + 1)
        return len(text) if end < 0 else end
    if c == "'":
        if pos and (text[pos - 1].isalnum() or text[pos - 1] == "_"):
            return pos + 1  # a digit separator (1'000) or a prefix's end
        m = _CHAR.match(text, pos)
        return m.end() if m else -1
    if pos and text[pos - 1] == "R" and (pos < 2 or not (text[pos - 2].isalnum() or text[pos - 2] == "_")
                                         or text[pos - 3:pos - 1] in ("u8",) or text[pos - 2] in "uUL"):
        m = _RAW_OPEN.match(text, pos)
        if m:
            close = text.find(")" + m.group(1) + '"', m.end())
            return -1 if close < 0 else close + len(m.group(1)) + 2
    m = _STRING.match(text, pos)
    return m.end() if m else -1


class Declarations:
    """What a preprocessed text declares at namespace scope: the names per namespace (a tuple path;
    () is the file scope, an inline or unnamed namespace's names are its parent's), the using-
    directives (where, which), and the macros defined at its end (name: definition)."""

    def __init__(self):
        self.names, self.directives, self.macros = {}, [], {}
        self.skipped = set()  # top-level namespaces whose bodies were not read
        self._visible, self._outside, self._from = False, {}, {}  # what the methods below found (per name)

    def visible_at_file_scope(self):
        """Names unqualified lookup at file scope may find: the file scope's and those of every
        namespace a using-directive there nominates (following theirs in turn); None where one
        nominates a namespace whose body the scan did not read."""
        if self._visible is False:
            self._visible = self._following_directives([()])
        return self._visible

    def visible_from(self, namespaces):
        """Names unqualified lookup may find in the given namespaces (by name, at any depth: more
        than lookup from one of them finds) and in those their using-directives nominate, followed
        in turn (torch's `namespace torch { using namespace at; }`); None where one nominates a
        namespace whose body the scan did not read."""
        key = frozenset(namespaces)
        if key not in self._from:
            self._from[key] = self._following_directives([p for p in self.names if key & set(p)])
        return self._from[key]

    def _following_directives(self, todo):
        """The names of the namespaces in todo and of those their using-directives nominate, in
        turn; None where one nominates a namespace whose body the scan did not read."""
        seen, out = set(), set()
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            out |= self.names.get(path, set())
            for where, which in self.directives:
                if where == path:
                    if which and which[0] in self.skipped:
                        return None
                    # `using namespace a::b` names a::b from here, or from an enclosing namespace
                    todo += [p for p in self.names if p[-len(which):] == which]
        return out

    def outside(self, namespaces):
        """Names declared at namespace scope anywhere but in the given top-level namespaces."""
        key = frozenset(namespaces)
        if key not in self._outside:
            out = set()
            for path, names in self.names.items():
                if not path or path[0] not in namespaces:
                    out |= names
            self._outside[key] = out
        return self._outside[key]


def scan(text, skip_torch=False, keep=frozenset()):
    """The Declarations of a preprocessed text (gcc -E -dD's output), or None where its brackets do
    not balance or a literal does not end (then nothing may be concluded from it). skip_torch: the
    bodies of torch's namespaces at file scope not read, but those in keep (namespaces the answer
    opens or nominates, whose names its kernels see); Declarations.skipped names the skipped ones."""
    d = Declarations()
    names = d.names
    text = "\n" + text  # every directive line after a newline
    path = ()
    current = names.setdefault(path, set())
    stack = []  # the enclosing path of each namespace-like scope open
    head = []  # the tokens of the declaration being read at namespace scope
    paren = []  # open parentheses at namespace scope: whether names inside one count
    angle = angle_paren = 0  # depth inside a template's parameter list, and in parentheses there
    pending = []  # names inside that list: its parameters', unless it proves not to be one
    pos = 0
    outer_search, inner_search = _OUTER.search, _INNER.search
    while True:
        m = outer_search(text, pos)
        if m is None:
            break
        t = m.group()
        first = t[0]
        if t == "\n#" or first in "\"'":
            pos = _past_literal_or_directive(d, text, m.start())
            if pos < 0:
                return None
            continue
        pos = m.end()
        if first not in "<>{};()^":
            # a run of names, spaces and operators that open nothing
            found = _NAMES.findall(t)
            if angle:
                pending += found
            elif not paren or paren[-1]:
                current.update(found)
            head += found
            continue
        if angle:
            # a template's parameter list: its brackets count outside parentheses only (a default
            # argument's `a < b` or `x << 1` is inside them or not a bracket)
            if t == "(":
                angle_paren += 1
            elif t == ")":
                angle_paren -= 1
            elif angle_paren:
                pass
            elif t == "<":
                angle += 1
            elif t == ">":
                angle -= 1
            elif t == ">>":
                angle = max(0, angle - 2)
            if t not in ("{", "}", ";"):
                if not angle:
                    pending = []  # the parameters' names: not declared at namespace scope
                continue
            # not read as a parameter list (`a < b` inside one): its names count after all
            current.update(pending)
            angle, pending = 0, []
        if t == "<":
            if head and head[-1] == "template":
                angle, angle_paren, pending = 1, 0, []
            continue
        if t == "(":
            # Names inside parentheses are a function's parameters, an attribute's or an
            # initializer's, except in a parenthesised declarator: `(*f)`, `(&r)`, `(x)`.
            k = _skip_space(text, pos)
            nxt = text[k] if k < len(text) else ""
            counts = nxt in "*&^" or ((nxt.isalpha() or nxt == "_") and _closes_after_name(text, k))
            # (a member pointer `(A::*p)` too)
            paren.append(counts and (not paren or paren[-1]))
            head.append(t)
            continue
        if t == ")":
            if paren:
                paren.pop()
            head.append(t)
            continue
        if paren:
            continue
        if t == ";":
            if len(head) >= 3 and head[0] == "using" and head[1] == "namespace":
                d.directives.append((path, tuple(x for x in head[2:] if x not in ("::", "(", ")"))))
            head = []
            continue
        if t == "{":
            scope = _scope_of(head)
            head = []
            # torch's own namespaces at file scope are read for their braces only (most of the text,
            # and no kernel at file scope sees into them), unless a using-directive nominates one
            # (visible_at_file_scope then asks for a full scan)
            if scope and not path and skip_torch and scope[0] in TORCH_NAMESPACES and scope[0] not in keep:
                d.skipped.add(scope[0])
                scope = None
            if scope is None:
                depth = 1
                while depth:
                    m = inner_search(text, pos)
                    if m is None:
                        return None
                    c = m.group()
                    if c == "{":
                        depth += 1
                        pos = m.end()
                    elif c == "}":
                        depth -= 1
                        pos = m.end()
                    else:
                        pos = _past_literal_or_directive(d, text, m.start())
                        if pos < 0:
                            return None
                continue
            stack.append(path)
            path = path + scope
            current = names.setdefault(path, set())
            continue
        if t == "}":
            if not stack:
                return None
            path = stack.pop()
            current = names.setdefault(path, set())
            head = []
            continue
        head.append(t)
    if stack or paren or angle:
        return None
    return d


def _past_literal_or_directive(d, text, pos):
    """_past_literal, a directive line's macro recorded in d on the way."""
    end = _past_literal(text, pos)
    if end >= 0 and text[pos] == "\n":
        _directive(d, text[pos + 1:end])
    return end


def _skip_space(text, pos):
    n = len(text)
    while pos < n and text[pos] in " \t\n":
        pos += 1
    return pos


def _closes_after_name(text, pos):
    """Whether the name at text[pos] is all its parentheses hold, `(x)`, or a class's before `::`."""
    while pos < len(text) and (text[pos].isalnum() or text[pos] == "_"):
        pos += 1
    pos = _skip_space(text, pos)
    return text.startswith(")", pos) or text.startswith("::", pos)


def _scope_of(head):
    """What a `{` opens at namespace scope, from the tokens before it: a namespace's path to add
    (named), () for a scope whose names are its enclosing one's (an inline or unnamed namespace,
    extern "C", an unscoped enum, an unnamed union or struct), None for any other (a class, a
    function's body, an initializer: nothing in it is visible at namespace scope)."""
    words = [w for w in head if w not in ("(", ")")]
    if "namespace" in words and words[0] in ("namespace", "inline"):
        k = words.index("namespace")
        parts = []
        for w in words[k + 1:]:
            if w == "::" or w == "inline":
                continue
            if w in ("__attribute__", "[", "]", "__visibility__", "visibility", "default", "hidden"):
                break
            parts.append(w)
        if words[0] == "inline" or not parts:
            return ()
        return tuple(parts)
    if words == ["extern"]:
        return ()  # extern "C" { (the literal is not kept)
    if "enum" in words and ("(" not in head or head.index("(") > head.index("enum")):
        k = words.index("enum")
        if k + 1 < len(words) and words[k + 1] in ("class", "struct"):
            return None
        return ()
    if "(" in head:
        return None  # a function's body
    if words and words[-1] in ("union", "struct", "class"):
        return ()  # an unnamed one: its members may be visible where it is (an anonymous union)
    return None


def _directive(d, line):
    m = _DEFINE.match(line.strip())
    if m:
        d.macros[m.group(1)] = m.group(2).strip()
        return
    m = _UNDEF.match(line.strip())
    if m:
        d.macros.pop(m.group(1), None)


def macros_only(text):
    """The macros a `gcc -E -dM` output defines (name: definition)."""
    return {m.group(1): m.group(2).strip() for m in _DEFINE_LINE.finditer("\n" + text)}


_IDENT = re.compile(r"\b[A-Za-z_]\w*")
_CONDITIONAL = re.compile(r"#\s*(if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)", re.S)


def _strip_literals(text):
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'', " ", text, flags=re.S)


def answer_part(device_text, launcher_file):
    """The device unit's text that is the answer's: after its prelude (up to the first #line), its
    launchers (each set off under `#line 1 "<launcher_file>"` up to the next #line) left out."""
    lines = device_text.split("\n")
    k = next((i for i, l in enumerate(lines) if l.startswith("#line ")), len(lines))
    out, inside = [], False
    for line in lines[k + 1:]:
        if line.startswith("#line "):
            inside = line == f'#line 1 "{launcher_file}"'
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


def _logical_lines(text):
    """The text's lines without comments and literals, each directive's continued lines joined."""
    lines = _strip_literals(text).split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        while line.endswith("\\") and k + 1 < len(lines):
            k += 1
            line = line[:-1] + " " + lines[k]
        k += 1
        yield line


def used_names(text):
    """The names a text's code and conditionals use, and through its own macros' bodies those
    macros use (a macro the code never expands reads the same either way)."""
    code, defined, conditions = [], {}, []
    for line in _logical_lines(text):
        stripped = line.strip()
        if not stripped.startswith("#"):
            code.append(line)
            continue
        m = _DEFINE.match(stripped)
        if m:
            defined[m.group(1)] = set(_IDENT.findall(m.group(2)))
            continue
        m = _CONDITIONAL.match(stripped)
        if m:
            conditions += [w for w in _IDENT.findall(m.group(2)) if w != "defined"]
    used = set(_IDENT.findall("\n".join(code))) | set(conditions)
    todo = [w for w in used if w in defined]
    while todo:
        for w in defined.pop(todo.pop(), ()):
            if w not in used:
                used.add(w)
                if w in defined:
                    todo.append(w)
    return used


# (a literal start, which the search finds fast in 15 MB; View's text starts with a newline)
_DEFINE_LINE = re.compile(r"\n#define ([A-Za-z_]\w*)([^\n]*)")
_UNDEF_LINE = re.compile(r"\n#undef ([A-Za-z_]\w*)")


class View:
    """One view nvcc parses (its host side, an arch): the answer's directives preprocessed there with
    -dD (torch's headers as the answer includes them), and the device unit's own macros there. The
    scan of namespace scope is made only where a name asked about occurs in the text at all."""

    def __init__(self, text, own_macros):
        self.text, self.own_macros = "\n" + text, own_macros
        self._macros = None
        self._scans = {}  # the namespaces kept: the Declarations read (None: unreadable)
        # what macros() and the scans read, made once by whichever thread asks first (the builder
        # reads them ahead where it has the time: extension_cache._TorchViews)
        self._lock = threading.Lock()


    def macros(self):
        """The macros the text defines at its end (gcc -dD: its #define and #undef lines in order)."""
        with self._lock:
            return self._read_macros()

    def _read_macros(self):
        if self._macros is None:
            events = sorted([(m.start(), m.group(1), m.group(2).strip()) for m in _DEFINE_LINE.finditer(self.text)] +
                            [(m.start(), m.group(1), None) for m in _UNDEF_LINE.finditer(self.text)])
            self._macros = {}
            for _, name, body in events:
                if body is None:
                    self._macros.pop(name, None)
                else:
                    self._macros[name] = body
        return self._macros

    def mentions(self, name):
        """Whether the text has the word anywhere (str.find: a tenth of a regex's time on 15 MB)."""
        text, k = self.text, self.text.find(name)
        while k >= 0:
            end = k + len(name)
            if not _word_char(text[k - 1]) and (end == len(text) or not _word_char(text[end])):
                return True
            k = text.find(name, k + 1)
        return False

    def declarations(self, keep=frozenset()):
        """scan()'s Declarations of the text, torch's namespaces skipped but those in keep (the
        answer opens or nominates them) and those a using-directive nominates, or None where it
        cannot be read."""
        with self._lock:
            return self._read(frozenset(keep))

    def scanned(self, keep=frozenset()):
        return frozenset(keep) in self._scans

    def _read(self, keep):
        if keep not in self._scans:
            self._scans[keep] = self._scan(keep)
        return self._scans[keep]

    def _scan(self, keep):
        declared = scan(self.text, skip_torch=True, keep=keep)
        if declared is not None and (declared.visible_at_file_scope() is None or declared.visible_from(keep) is None):
            # a using-directive nominates a namespace whose body was skipped: read them all
            declared = scan(self.text)
        return declared


# Whether read_at_once may fork: only in a process made for one build (`kwb-worker
# --build-extension`: no CUDA context, no answer's code), which extension_cache.build_extension says.
# A worker that builds in its own process (no sandbox) holds a CUDA context and an answer's threads:
# it scans one view after another.
FORK_SCANS = False


def read_at_once(views, keep=frozenset()):
    """Each view's declarations(keep) read, several at once where FORK_SCANS allows: each but the
    first in a forked copy of this process (the scan is Python, and threads would take turns), which
    sends back what it found, pickled, and ends. A view another thread is reading is left to it (it
    holds the view's lock); one whose child fails is scanned here."""
    keep = frozenset(keep)
    mine = []
    for view in views:
        if view._lock.acquire(blocking=False):
            if keep in view._scans:
                view._lock.release()
            else:
                mine.append(view)
    try:
        children = []
        for view in mine[1:] if FORK_SCANS else ():
            child = _scan_in_a_child(view, keep)
            if child is not None:
                children.append((view, child))
        if mine:
            mine[0]._read(keep)
        for view, (pid, reading) in children:
            chunks = []
            while True:
                chunk = os.read(reading, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
            os.close(reading)
            _, status = os.waitpid(pid, 0)
            try:
                if status != 0:
                    raise ValueError(f"the scan's child ended with status {status}")
                view._scans[keep] = _from_plain(pickle.loads(b"".join(chunks)))
            except (ValueError, pickle.UnpicklingError, EOFError, TypeError):
                pass
        for view in mine:
            view._read(keep)  # (none left unread however a child ended)
    finally:
        for view in mine:
            view._lock.release()


def _scan_in_a_child(view, keep):
    """(pid, the pipe's reading end) of a forked child that scans the view, or None where no child
    could be made. The child touches no lock (another thread's may be copied held) and leaves by
    os._exit, running no handler of this process's."""
    reading, writing = os.pipe()
    try:
        with warnings.catch_warnings():  # (3.12 warns of fork in a process with threads)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return None
    if pid == 0:
        code = 1
        try:
            os.close(reading)
            data = pickle.dumps(_to_plain(view._scan(keep)))
            while data:
                data = data[os.write(writing, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(writing)
    return pid, reading


def _to_plain(declared):
    return None if declared is None else (declared.names, declared.directives, declared.macros, declared.skipped)


def _from_plain(plain):
    if plain is None:
        return None
    declared = Declarations()
    declared.names, declared.directives, declared.macros, declared.skipped = plain
    return declared


def opened_namespaces(cu_text):
    """The namespaces an answer's source opens or nominates (`namespace X`, `using namespace X`):
    unqualified lookup in its kernels searches them too, so their bodies in torch's headers are read
    whatever else the scan skips."""
    return frozenset(re.findall(r"\bnamespace\s+([A-Za-z_]\w*)", _strip_literals(cu_text)))


def _word_char(c):
    return c.isalnum() or c == "_"


def _answer_macros(text):
    """The answer's own macros: name -> the names in its body."""
    out = {}
    for line in _logical_lines(text):
        m = _DEFINE.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def answer_error(output, cu_path, cu_text, device_text, views, launcher_file, left_out):
    """Whether the device unit's failed compile (its output) is the answer's own error: (reason, "")
    where it is, ("", why not) where the whole build must decide.
    cu_path: the file name the `.cu`'s own lines carry; cu_text: the answer's `.cu`; device_text: the
    device unit; views: a View for each view nvcc parses (its host side, each arch); left_out: the
    names of what the device unit leaves out that could declare at namespace scope (cuda_split's
    Split.left_out)."""
    found = [m for m in messages(output) if m.severity != "remark"]
    errors = [m for m in found if m.severity in ("error", "catastrophic error")]
    if not errors:
        return "", "no error message of nvcc's to read"
    # an error in another form (nvcc's own, the host compiler's) may come first, and what EDG says
    # after it may be its consequence
    other = next((line for line in output.splitlines()[2:] if re.search(r"\berror\b", line, re.I)
                  and not _MESSAGE.match(line) and not re.match(r"\d+ errors? detected in the compilation of ", line)), None)
    if other is not None:
        return "", f"an error message of another form ({other.strip()[:120]})"
    if "##" in cu_text:
        return "", "the source pastes tokens (##)"
    if not views:
        return "", "torch's headers could not be read"
    answer = answer_part(device_text, launcher_file)
    used = used_names(answer)
    in_cu = set(_IDENT.findall(_strip_literals(cu_text)))
    # What the device unit leaves out may declare a name at namespace scope, itself or through the
    # answer's macros it uses (`#define DECL int x;` then `DECL` at file scope). A macro whose braces
    # do not balance could reach out of a body, so then nothing is concluded.
    macros = _answer_macros(cu_text)
    if any(body.count("{") != body.count("}") for body in macros.values()):
        return "", "a macro of the answer's with unbalanced braces"
    declaring, todo = set(left_out), [w for w in left_out if w in macros]
    while todo:
        for w in _IDENT.findall(macros.pop(todo.pop(), "")):
            if w not in declaring:
                declaring.add(w)
                if w in macros:
                    todo.append(w)
    # namespaces the answer opens or nominates: unqualified lookup in its kernels searches them too
    own_namespaces = opened_namespaces(cu_text)
    for view in views:
        differing = {name for name, body in view.macros().items() if view.own_macros.get(name) != body}
        clash = sorted(differing & used)
        if clash:
            return "", f"the kernels' code uses {clash[0]}, a macro torch's headers define"
    said = []
    for e in errors:
        if e.file != cu_path:
            return "", f"an error outside the answer's lines ({e.file}: {e.text[:120]})"
        u = _UNDEFINED.match(e.text)
        if u:
            name = u.group("name")
            if name not in in_cu:
                return "", f"{name} is not the answer's"
            if name in declaring:
                return "", f"{name} is in the answer's host code, which the device unit leaves out, where it may be declared"
            call = not e.code or re.search(rf"\b{re.escape(name)}\s*[(<]", e.code) is not None
            having = [view for view in views if view.mentions(name)]  # (the others lack the word)
            read_at_once(having, own_namespaces)
            for view in having:
                declared = view.declarations(own_namespaces)
                if declared is None:
                    return "", "torch's headers could not be read"
                if name in view.macros() or name in declared.visible_at_file_scope():
                    return "", f"torch's headers declare {name} where the kernel could see it"
                through = declared.visible_from(own_namespaces)
                if through is None or name in through:
                    return "", f"torch's headers declare {name} in a namespace the answer opens or nominates"
                if call and name in declared.outside(TORCH_NAMESPACES):
                    return "", f"torch's headers declare a {name} that argument-dependent lookup could find"
            said.append(f'identifier "{name}" is undefined')
            continue
        nm = _NO_MEMBER.match(e.text)
        if nm:
            member, type_ = nm.group("member"), nm.group("type")
            owners = [v for v, t in _BUILTIN_TYPES.items() if t == type_]
            if not re.search(rf"\b({'|'.join(owners)})\s*\.\s*{re.escape(member)}\b", e.code):
                return "", f"{type_} without a built-in variable of that type on its line"
            said.append(f'class "{type_}" has no member "{member}"')
            continue
        return "", f"an error the rules do not decide ({e.text[:120]})"
    return "the kernels' own error, which torch's headers cannot mend: " + "; ".join(dict.fromkeys(said)), ""
