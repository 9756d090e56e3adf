# The extension cache behind load_inline (docs/sandbox.md, "The extension cache"), loaded into the
# worker's embedded Python as the module `_kwb_extensions`; standard library only at import (torch
# is imported by build_into alone), so the build broker starts in milliseconds.
#
# An entry is published whole and never changes: <cache>/<name>-<key[:20]>/ holding the built
# library, its sources and kwb-entry.json {"format", "key", "name", "ok", "message", "files":
# {relative path: sha256}, "build_ms"}. Whoever builds never loads: build_into runs torch's
# load_inline with its import step replaced, so no answer code runs while an entry can still be
# written. In the OS sandbox the workers see the cache read-only; they ask the broker
# (serve_broker, started by kwb outside their sandboxes) for an entry, and the broker runs each
# build in a sandbox of its own whose one writable folder is that build's staging folder, then
# hashes what was built, writes the manifest and renames the folder into place. A worker checks
# every file's hash against the manifest before it loads an entry. Without the sandbox (kwb's
# --no-os-sandbox, or a worker run by hand) the worker does the same in-process.
#
# Torch's extension header precompiled (docs/sandbox.md, "The precompiled header"): parsing
# torch/extension.h is most of a C++ build (18 of 20 s on 2 cores, bench/results/2026-12-03-kb-
# build-2core.md), so the broker keeps it as an entry of its own (a one-line header including it,
# that header's .gch, and the exact flags it was made with), built once per compiler, torch, flags and
# defines by the sandboxed builder like any entry. A build whose flags are the PCH's (the
# extension's name aside, which no torch header reads) gets `-include` of its one-line header:
# g++ takes the .gch for it, or, where it does not fit, says why (-Winvalid-pch) and reads the
# header itself; main.cpp's own #include <torch/extension.h> is then skipped (pragma once), so the
# objects are the same bytes either way (test_extension_pch.py). A g++ -fsyntax-only pass over
# main.cpp stops a build at a compile error: the broker starts it with the builder
# (_EarlySyntaxPass: the builder needs 2 s for libtorch and torch before ninja compiles), from
# main.cpp as load_inline will write it and the header's recorded flags, and it counts only where
# the builder finds torch wrote those bytes and would run that command. Where ninja also runs nvcc
# it always runs (ninja reports a main.cpp error only after nvcc; without the broker the builder
# runs it beside ninja). Its copy of main.cpp ends with the parse stop (PARSE_STOP_NAME), so g++
# reports the answer's errors and stops before the end-of-unit instantiation that is most of a
# pass: about a second of a core, so it runs for C++-only builds too (_early_pass_pays).
#
# The spare builder (docs/sandbox.md, "The spare builder"): the broker keeps the next builder
# process started, sandboxed as any builder and torch imported, waiting for its build's request
# (_Spare); a build takes it, one build per process as before, and its ninja starts within 0.05 s
# of the request.
import fcntl
import hashlib
import json
import os
import re
import resource
import secrets
import select
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

def _sibling(embedded, name):
    """A module the worker loads before this one (pythonhost.cpp) as `embedded`, else the file
    beside this one (a test or a benchmark that loads this folder's files, by path or from sys.path)."""
    module = sys.modules.get(embedded)
    if module is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                         name + ".py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


# The answer's `.cu` split for nvcc and g++, and whether a failed device unit's error is the answer's own.
cuda_split = _sibling("_kwb_cuda_split", "cuda_split")
split_verdict = _sibling("_kwb_split_verdict", "split_verdict")

# Bumped when the build rule or the entry's layout changes, so older entries are not taken.
# 3: the precompiled header on the compile line and the syntax pass beside nvcc (their failures'
# messages), the manifest's "pch", and the precompiled header's own entries.
CACHE_FORMAT = 3
MANIFEST = "kwb-entry.json"
REQUEST = "kwb-request.json"
RESULT = "kwb-build-result.json"
# The broker's early syntax pass (_EarlySyntaxPass): its command and main.cpp's hash, for the
# builder; and the builder's word that load_inline's main.cpp and command are those.
EARLY_RECORD = "kwb-early-syntax.json"
EARLY_VALID = "kwb-early-syntax-valid.json"
# The builder's output (the end of it is the message of a build that left no result).
BUILDER_LOG = ".kwb-builder.log"
# A spare builder's folder in the cache (renamed to its build's staging folder once its build is
# done), and its word that torch is imported and it waits for the request's path on stdin.
SPARE_PREFIX = ".spare-"
SPARE_READY = "kwb-spare-ready"
# A build's message (the compiler's output, as load_inline raises it) is kept up to this size;
# each line up to LINE_CAP characters.
MESSAGE_CAP = 64 * 1024
LINE_CAP = 2000
# Files a finished build does not need (the loader reads the library only).
INTERMEDIATE_SUFFIXES = (".o", ".ninja_deps", ".ninja_log", ".cuda.o")
# The libraries a build links (its link step's output in ninja's FAILED: line).
LIB_SUFFIXES = (".so", ".pyd", ".dylib")
BUILD_TIMEOUT_S = 1800

# The prepared build (docs/sandbox.md "The preparer"): torch's load_inline writes a build's sources
# and ninja files in the broker's preparer, a sandboxed process that imported torch once; the
# builder then runs the plan without importing torch (about 5 CPU s of each builder on the GPU
# machine, bench/results/2026-12-07-kb-cold-cpu-h100-session43.md). The ninja files of the split's
# fallbacks, written with build.ninja by torch's writer: the `.cu` whole, and main.cpp apart from
# the host unit.
PLAN_FORMAT = 1
WHOLE_NINJA = "kwb-whole.ninja"
APART_NINJA = "kwb-apart.ninja"
# The load_inline arguments a preparer takes. The preparer is one process for many builds, so no
# argument may make torch run a program there: torch's own JIT header (use_pch), SYCL's compiler,
# a standalone executable and arguments this list does not know go to a builder of their own that
# imports torch, as every build did before; so does a `-ccbin` of the answer's (split_sources runs
# the compiler it names for its --version).
PREPARE_KEYS = {"name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                "extra_ldflags", "extra_include_paths", "with_cuda", "is_python_module",
                "with_pytorch_error_handling", "keep_intermediates", "no_implicit_headers", "use_pch", "kwb_pch"}
# `kwb-worker --build-extension PREPARE_ROLE <cache>`: the broker's preparer (serve_preparer).
PREPARE_ROLE = "--prepare"
PREPARE_TIMEOUT_S = 60
# The preparer's tmpfs at the cache's path, where it writes each build's files before sending them.
PREPARER_TMPFS_BYTES = 64 * 1024 * 1024
# In a spare builder's environment: import torch while waiting (its broker has no preparer).
SPARE_TORCH = "KWB_SPARE_IMPORTS_TORCH"

# The precompiled header's entry: a one-line header that includes torch/extension.h, its .gch
# (g++ takes it for `-include` of the header), and the flags and compiler it was made with. Not a
# .gch of torch/extension.h found first on the include path: g++ 12 then fails an answer's own
# second `#include <torch/extension.h>` ("No such file", the pragma once of a header replaced by
# a PCH), and nearly every answer has one after load_inline's.
PCH_NAME = "kwb_torch_pch"
PCH_INCLUDE = "#include <torch/extension.h>\n"
PCH_WRAPPER = os.path.join("include", "kwb-torch-extension.h")
PCH_FILE = PCH_WRAPPER + ".gch"
PCH_INFO = "kwb-pch.json"
# The extra_cflags a build may have and still get a precompiled header: those that change what
# the header means (optimisation and language level set predefined macros) key their own entry;
# anything else (an -include, a -D of the answer's, a plugin) builds as load_inline alone would.
PCH_FLAG = re.compile(r"-O[0-3sgz]?|-std=(c|gnu)\+\+\d\d|-ffast-math|-funroll-loops|-g0?|-w|-W[a-z-]+|-DNDEBUG")


class BuildError(RuntimeError):
    """The answer's extension did not build (compile_error), or its entry is damaged."""


class MachineError(RuntimeError):
    """This machine could not build it at all: not the answer's fault (no_device)."""


def cap_message(text):
    lines = [line if len(line) <= LINE_CAP else line[:LINE_CAP] + " […]" for line in str(text).splitlines()]
    out = "\n".join(lines)
    if len(out) > MESSAGE_CAP:
        out = out[:MESSAGE_CAP] + f"\n[… {len(out) - MESSAGE_CAP} more characters]"
    return out


def torch_versions():
    """(torch version, its CUDA version) from torch/version.py, read without importing torch, so
    the broker (no torch) and a worker (torch imported) key a build alike."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        scope = {}
        try:
            with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py")) as f:
                exec(compile(f.read(), "torch/version.py", "exec"), scope)
            return str(scope.get("__version__", "unknown")), str(scope.get("cuda", None))
        except (OSError, SyntaxError):
            pass
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "__version__"):
        return str(torch.__version__), str(getattr(getattr(torch, "version", None), "cuda", None))
    return "unknown", "None"


def build_key(arguments, arch):
    """The cache key of one load_inline call: its sources and build flags, torch, arch, Python."""
    relevant = {k: v for k, v in arguments.items() if k not in ("build_directory", "verbose")}
    version, cuda = torch_versions()
    blob = json.dumps({"format": CACHE_FORMAT, "args": relevant, "torch": version, "cuda": cuda, "arch": arch,
                       "python": list(sys.version_info[:2])}, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def safe_name(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))[:64] or "ext"


def entry_dir(cache_dir, name, key):
    return os.path.join(cache_dir, f"{safe_name(name)}-{key[:20]}")


def _hash_file(path):
    h = hashlib.sha256()
    # Never through a link: a build's folder is written by the answer's build (docs/sandbox.md).
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_builder_file(directory, name, limit):
    """The bytes of a file a sandboxed builder wrote in its folder, read by the broker outside every
    sandbox: only a regular file at that very name (no link followed, no FIFO or device opened), at
    most `limit` bytes (a larger one reads as None). The answer's own build may have written
    anything there: a link to the user's files, /dev/zero, a FIFO no one writes."""
    try:
        fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def log_tail(log, limit=8192):
    """The end of a builder's output, read through the broker's own handle of the file it opened
    (the builder may have replaced the name by a link), at most `limit` bytes."""
    log.flush()
    size = os.fstat(log.fileno()).st_size
    log.seek(max(0, size - limit))
    return log.read(limit).decode(errors="replace")


# A compiler (or nvcc's front end) ended by a signal: the OOM killer, the machine, or another
# process's doing, not a verdict on the sources. Such a failure is reported and not cached.
_KILLED_COMPILER = ("Killed signal terminated program", "died due to signal", "terminated by signal",
                    "internal compiler error: Killed")
# Of those, SIGKILL (g++'s and nvcc's words for it): what the OOM killer and kill -9 send, never a
# compiler's own crash (SIGSEGV, SIGABRT: a compiler bug the sources trigger, the same each time).
# Each process of a build has a data limit far below the machine's memory (buildDataLimitForTotal), so a
# compiler the sources make grow fails at that limit with its own message; a SIGKILL is then the
# machine's doing (too many builds for its memory, a user's kill): no_device, not compile_error.
_SIGKILLED_COMPILER = re.compile(r"Killed signal terminated program|internal compiler error: Killed|"
                                 r"died due to signal 9\b")


def compiler_killed(output):
    """Whether a build's messages say its compiler was ended by a signal (_KILLED_COMPILER)."""
    return any(m in output for m in _KILLED_COMPILER)


def compiler_killed_by_machine(output):
    """Whether a build's messages say its compiler was ended by SIGKILL (_SIGKILLED_COMPILER). An
    answer's build can print these words itself (a -wrapper of its extra_cflags); it gains nothing
    by it: a machine's fault is never compiled or correct, and it is evaluated again."""
    return _SIGKILLED_COMPILER.search(output) is not None


# The data memory (RLIMIT_DATA: heap and private mappings) each process of a build may take: the
# builder, ninja, g++'s cc1plus, nvcc's cudafe++/cicc/ptxas, the early syntax pass. The broker's
# binary sets it on itself before this module runs (kwb-worker --build-broker: limitBuildMemory,
# buildDataLimitForTotal in hostlimitdefaults.h, which says why and how much), so every build
# inherits it. A compiler over it stops with its own "out of memory" message, a compile error of
# the answer, cached as any.
_GiB = 1 << 30
# Words of a compiler that hit the data limit (g++, nvcc's phases, a C++ program's bad_alloc).
_OUT_OF_MEMORY = re.compile(r"out of memory|virtual memory exhausted|Memory allocation failure|std::bad_alloc",
                            re.IGNORECASE)
_build_limits = {"data": 0}  # the limit this broker's builds inherit (limit_build_memory), for messages


def limit_build_memory(limit=None):
    """Records the RLIMIT_DATA every build of this broker inherits; with `limit` (a test's broker
    run without the binary), sets it first, soft and hard (a sandboxed build, without
    capabilities, cannot raise it), never above a hard limit already lower. Before any thread or
    child: preexec_fn is not safe in a threaded process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if limit is not None:
        soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, soft))
    _build_limits["data"] = 0 if soft == resource.RLIM_INFINITY else soft


def note_memory_limit(message):
    """A failed build's message, with the data limit named where a compiler ran out of memory."""
    limit = _build_limits["data"]
    if not limit or not _OUT_OF_MEMORY.search(message):
        return message
    return (f"{message}\n[kwb: each process of a build may take at most {limit / _GiB:.1f} GiB of data memory "
            f"here (RLIMIT_DATA); a compiler out of memory has hit that limit]")


def transient_failure(result):
    """Whether a failed build says nothing lasting about its sources (not cached): no result from
    the builder, the time limit, or a compiler killed by a signal."""
    return bool(result.get("transient")) or compiler_killed(str(result.get("message", "")))


def read_manifest(directory):
    try:
        with open(os.path.join(directory, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == CACHE_FORMAT else None


# Entries whose hashes matched in this process: directory -> (its manifest, every file's stat
# identity then). The broker checks a precompiled header before each build that takes it; its
# 616 MiB cost 0.5 s of hashing every time on 2 cores. A file written, replaced or chmod-ed since
# has another identity (its ctime at least, which no one sets back) and is hashed again.
_verified = {}
_verify_locks = {}


def _identities(directory, names):
    found = []
    for rel in sorted(names):
        st = os.stat(os.path.join(directory, rel))
        found.append((rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(found)


def verify(directory, manifest, key):
    """Every file the manifest names has its hash, and nothing was added: else BuildError."""
    if manifest.get("key") != key:
        raise BuildError(f"the extension cache entry {directory} belongs to another build (key mismatch)")
    files = manifest.get("files") or {}
    present = set()
    for root, _, names in os.walk(directory):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), directory)
            if rel != MANIFEST:
                present.add(rel)
    if present != set(files):
        raise BuildError(f"the extension cache entry {directory} was changed after its build "
                         f"(files {sorted(present ^ set(files))[:5]}); remove it to build again")
    with _verify_locks.setdefault(directory, threading.Lock()):  # one hashing of an entry at a time
        try:
            seen = (json.dumps(manifest, sort_keys=True), _identities(directory, list(files) + [MANIFEST]))
        except OSError:
            seen = None
        if seen is not None and _verified.get(directory) == seen:
            return
        for rel, digest in files.items():
            if _hash_file(os.path.join(directory, rel)) != digest:
                raise BuildError(f"the extension cache entry {directory} was changed after its build ({rel}: hash "
                                 "mismatch); remove it to build again")
        if seen is not None:
            _verified[directory] = seen


def _write_json(path, record):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)


def _seal(directory):
    """Read-only files and folders: a finished entry is not written again. Links are not followed
    (publish has removed them; a chmod through one would change the user's own files)."""
    for root, dirs, names in os.walk(directory, topdown=False):
        for n in names + dirs:
            path = os.path.join(root, n)
            if not os.path.islink(path):
                os.chmod(path, 0o555 if n in dirs else 0o444)
    os.chmod(directory, 0o555)


def _discard(path):
    """A name in a build's folder gone, whatever the builder made it (a file, a link, a folder)."""
    if os.path.isdir(path) and not os.path.islink(path):
        _remove(path)
    elif os.path.lexists(path):
        os.remove(path)


def _remove(directory):
    def writable(func, path, _):
        try:
            os.chmod(os.path.dirname(path), 0o755)
            if not os.path.islink(path):  # a link is removed, never followed
                os.chmod(path, 0o755)
            func(path)
        except OSError:
            pass
    shutil.rmtree(directory, onerror=writable)


def publish(arguments, arch, cache_dir, run_build, block=True):
    """The entry of these load_inline arguments: found, or built by run_build(arguments, arch,
    staging) -> {"ok", "message", "pch"} (None: cancelled) and published. One build of a key at a
    time over every process sharing the cache (flock: the kernel drops it when its holder dies).
    Returns (directory, manifest, cached, waited_ms, build_ms); None where block is False and
    another process holds the key."""
    name = str(arguments.get("name", "ext"))
    # What a good build leaves: the library, or a precompiled header's .gch and its flags.
    products = [PCH_WRAPPER, PCH_FILE, PCH_INFO] if _is_pch_request(arguments) else [f"{name}.so"]
    key = build_key(arguments, arch)
    directory = entry_dir(cache_dir, name, key)
    manifest = read_manifest(directory)
    if manifest is not None:
        return directory, manifest, True, 0.0, 0.0
    os.makedirs(cache_dir, exist_ok=True)
    lock_fd = os.open(os.path.join(cache_dir, f".{os.path.basename(directory)}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        t_wait = time.monotonic()
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BlockingIOError:
            return None
        waited_ms = (time.monotonic() - t_wait) * 1000.0
        manifest = read_manifest(directory)
        if manifest is not None:
            return directory, manifest, True, waited_ms, 0.0
        if os.path.exists(directory):  # a folder without a manifest: an older format or a crash
            _remove(directory)
        # Staging folders of this key left by a build that was killed (we hold the key's lock).
        stale = f".staging-{os.path.basename(directory)}-"
        for n in os.listdir(cache_dir):
            if n.startswith(stale):
                _remove(os.path.join(cache_dir, n))
        staging = tempfile.mkdtemp(prefix=f".staging-{os.path.basename(directory)}-", dir=cache_dir)
        try:
            t0 = time.monotonic()
            result = run_build(arguments, arch, staging)
            build_ms = (time.monotonic() - t0) * 1000.0
            if result is None:
                raise MachineError("the build was cancelled (its worker ended)")
            ok = bool(result.get("ok"))

            def record(ok, files):
                return {"format": CACHE_FORMAT, "key": key, "name": name, "ok": ok,
                        "message": "" if ok else cap_message(result.get("message", "the build failed")),
                        "files": files, "build_ms": build_ms, "pch": str(result.get("pch", "")),
                        "split": str(result.get("split", "")), "joined": str(result.get("joined", "")),
                        "syntax": str(result.get("syntax", "")),
                        "builder": str(result.get("builder", "")), "planned": str(result.get("planned", ""))}

            if not ok:
                result = dict(result, message=note_memory_limit(str(result.get("message", "the build failed"))))
            if not ok and transient_failure(result):
                # Reported to this request, never cached: the next request of the key builds again.
                # A compiler killed by SIGKILL is the machine's failure (the worker's no_device).
                machine = compiler_killed_by_machine(str(result.get("message", "")))
                return directory, dict(record(False, {}), cached=False, machine_fault=machine), False, waited_ms, \
                    build_ms
            for n in (REQUEST, RESULT, EARLY_RECORD, EARLY_VALID, SPARE_READY, BUILDER_LOG):
                _discard(os.path.join(staging, n))
            files = {}
            if ok:
                for product in products:
                    path = os.path.join(staging, product)
                    if not os.path.isfile(path) or os.path.islink(path):
                        ok, result = False, {"ok": False, "message": f"the build made no {product}"}
                        break
            for root, dirs, names in os.walk(staging):
                for d in list(dirs):  # a link to a folder is listed with the folders: never kept
                    if os.path.islink(os.path.join(root, d)):
                        os.remove(os.path.join(root, d))
                        dirs.remove(d)
                for n in names:
                    path = os.path.join(root, n)
                    rel = os.path.relpath(path, staging)
                    # Only regular files stay (a link could point anywhere); intermediates go.
                    if not ok or os.path.islink(path) or not stat.S_ISREG(os.lstat(path).st_mode) or \
                            n.endswith(INTERMEDIATE_SUFFIXES) or n == "lock":
                        os.remove(path)
                        continue
                    files[rel] = _hash_file(path)
            manifest = record(ok, files)
            _write_json(os.path.join(staging, MANIFEST), manifest)
            _seal(staging)
            os.chmod(staging, 0o755)
            os.rename(staging, directory)
            os.chmod(directory, 0o555)
            staging = None
            return directory, manifest, False, waited_ms, build_ms
        finally:
            if staging is not None and os.path.exists(staging):
                _remove(staging)
    finally:
        os.close(lock_fd)


def _cuda_arch_list(arch):
    # "sm_90" -> "9.0", "sm_100a" -> "10.0a": torch's spelling, so only the device's arch is built.
    if not arch.startswith("sm_"):
        return None
    digits = arch[3:]
    suffix = digits[-1] if digits and digits[-1].isalpha() else ""
    digits = digits.rstrip("abcdefghijklmnopqrstuvwxyz")
    return f"{digits[:-1]}.{digits[-1]}{suffix}" if len(digits) >= 2 else None


def _is_pch_request(arguments):
    return isinstance(arguments.get("kwb_pch"), dict)


_compiler_ids = {}


def compiler_identity(cxx=None):
    """The host compiler load_inline runs (CXX, else c++, as torch picks it): its resolved path and
    the first line of its --version, so another compiler keys another precompiled header."""
    cxx = cxx or os.environ.get("CXX", "c++")
    if cxx not in _compiler_ids:
        found = shutil.which(cxx)
        real = os.path.realpath(found) if found else cxx
        try:
            out = subprocess.run([real, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _compiler_ids[cxx] = f"{real}: {(out.splitlines() or ['?'])[0]}"
    return _compiler_ids[cxx]


def pch_arguments(arguments):
    """The load_inline arguments that make the precompiled header a build with these arguments
    can use: (arguments, "") or (None, why there is none). They hold what the header's flags
    depend on (the answer's allowed extra_cflags, whether CUDA's include folder is on the path, the
    compiler); build_key adds torch and Python."""
    extra = arguments.get("extra_cflags") or []
    if not isinstance(extra, list) or not all(isinstance(f, str) for f in extra):
        return None, "its extra_cflags are not among those a precompiled header is made for"
    # An empty flag is no flag: torch joins the flags with spaces into build.ninja, so
    # KernelBench's own example's extra_cflags=[""] compiles exactly as none does.
    extra = [f.strip() for f in extra if f.strip()]
    if not all(PCH_FLAG.fullmatch(f) for f in extra):
        return None, "its extra_cflags are not among those a precompiled header is made for"
    if arguments.get("extra_include_paths"):
        return None, "it has extra_include_paths"
    with_cuda = arguments.get("with_cuda")
    if with_cuda is None:
        with_cuda = bool(arguments.get("cuda_sources"))
    return {"name": PCH_NAME, "cpp_sources": "", "extra_cflags": extra,
            "with_cuda": bool(with_cuda), "kwb_pch": {"compiler": compiler_identity()}}, ""


NO_PCH_YET = "none is made yet for these flags"
# The niceness of a build that runs while the broker makes the header it will not have: the
# header's one compiler keeps its core, so the builds after it take the header sooner. On 2 cores,
# beside two builds, the header took 61 s against 48 s alone, and 48 s beside the same two at this
# niceness (session 46). On the GPU machine it was ready 9 s sooner, but a cold run of the study's
# 30 answers was not shorter: the same first wave had started without it
# (bench/results/2026-12-07-kb-cold-session47.md).
BEFORE_HEADER_NICE = 10


def _niceness(value):
    """value where it is a niceness a build may be given or report (an int, 0 to 19), else 0: it
    crosses the builder's sandbox both ways."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 19 else 0


def before_header_nice():
    """The niceness of a build without the header while the broker makes it: BEFORE_HEADER_NICE,
    or KWB_BEFORE_HEADER_NICE where it is 0 to 19 (0: at the broker's own, as before; for runs side
    by side, device-session.sh's mode `nonice:M`)."""
    value = os.environ.get("KWB_BEFORE_HEADER_NICE", "")
    return int(value) if value.isdigit() and int(value) <= 19 else BEFORE_HEADER_NICE


def pch_wanted(arguments):
    """What the header a build with these arguments can take is keyed by, in words (build_key's
    ingredients): where a cache's headers were made in another environment (another compiler on
    PATH, another torch or Python), the build's note says which one it looked for."""
    request, why = pch_arguments(arguments)
    if request is None:
        return why
    version, cuda = torch_versions()
    return (f"one for {request['kwb_pch']['compiler']}, torch {version} (CUDA {cuda}), Python "
            f"{sys.version_info[0]}.{sys.version_info[1]}, {'with' if request['with_cuda'] else 'without'} CUDA, "
            f"extra_cflags {' '.join(request['extra_cflags']) or 'none'}")


def _not_used(why, arguments):
    """A build's "pch" note where it had no header."""
    return f"not used: {why}" + (f" ({pch_wanted(arguments)})" if why == NO_PCH_YET else "")


def pch_entry(arguments, cache_dir):
    """The verified precompiled header's entry a build with these load_inline arguments can use:
    (directory, "") or (None, why not). It only looks; ensure_pch makes one."""
    request, why = pch_arguments(arguments)
    if request is None:
        return None, why
    key = build_key(request, "")
    directory = entry_dir(cache_dir, PCH_NAME, key)
    manifest = read_manifest(directory)
    if manifest is None or not manifest.get("ok"):  # ensure_pch publishes no failure
        return None, NO_PCH_YET
    try:
        verify(directory, manifest, key)
    except BuildError as e:
        return None, str(e)
    return directory, ""


def ensure_pch(arguments, cache_dir, run_build, block=True):
    """Publishes the precompiled header for builds with these load_inline arguments (run_build as
    publish's): publish's answer, or None where there is none for them or (block False) another
    process is making it. A failed header is raised (BuildError), not published: builds go on
    without one, and a later broker tries again (a header is no answer's result to keep)."""
    request, _ = pch_arguments(arguments)
    if request is None:
        return None

    def build(a, arch, staging):
        result = run_build(a, arch, staging)
        if result is not None and result.get("ok"):
            missing = [p for p in (PCH_WRAPPER, PCH_FILE, PCH_INFO) if not os.path.isfile(os.path.join(staging, p))]
            if missing:
                result = {"ok": False, "message": f"the build made no {missing[0]}"}
        if result is not None and not result.get("ok"):
            raise BuildError(cap_message(result.get("message") or "the precompiled header's build failed"))
        return result

    return publish(request, "", cache_dir, build, block=block)


def _ninja_command(cxx, cflags, middle, post_cflags):
    # As ninja runs torch's compile rule ($cxx ... $cflags ... $post_cflags through /bin/sh -c):
    # torch writes the flags into build.ninja joined by spaces, unquoted.
    return " ".join([cxx] + list(cflags) + list(middle) + list(post_cflags))


def syntax_command(cxx, cflags, post_cflags, source):
    """g++ -fsyntax-only of one source with a build's flags, as a shell command (ninja's form)."""
    return _ninja_command(cxx, cflags, ["-fsyntax-only", shlex.quote(source)], post_cflags)


def syntax_failure(error_prefix, command, source, output):
    """The message of a build stopped by a syntax pass (raised as torch raises a failed build)."""
    return f"{error_prefix}: [syntax check] {command}\nFAILED: {source}\n{output}"


# The early pass's end-of-parse stop (issue 35; docs/decisions.md, 2026-12-06): with torch's
# header precompiled, 95 % of a syntax pass is g++ instantiating, at the end of the unit, the
# function templates the header used, the same for every answer; an error in the answer's own code
# is known when parsing ends. A template whose instantiation recurses past g++'s depth limit,
# appended after the answer, is a fatal error at parse time (g++ 12: "template instantiation
# depth exceeds maximum", then "compilation terminated."): g++ prints every diagnostic of the
# answer's lines and stops before that instantiation. The name is random per pass, so an answer
# cannot name it (a macro of the answer's that touched it shows as a diagnostic on its lines, and
# the pass is not used). What is left out: errors that only the end-of-unit instantiation finds
# (those of the answer's own function templates); the builder's compile reports those.
PARSE_STOP_NAME = "kwb_parsed_"


def parse_stop_text(name):
    """The lines appended after the answer: their instantiation stops g++ once parsing is done."""
    return (f"template <int N> struct {name} {{ static const int v = {name}<N + 1>::v; }};\n"
            f"static const int {name}_v = {name}<0>::v;\n")


def parse_stop_usable(flags):
    """Whether the stop can be appended: not where the build sets its own template depth (the
    stop would recurse that deep) or makes every error fatal (its first error stops g++ anyway)."""
    return not any(f.startswith(("-ftemplate-depth", "-Wfatal-errors", "-fmax-errors")) for f in flags)


_DIAGNOSTIC = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(\d+:)? ")


def split_at_parse_stop(output, source, answer_lines, name):
    """g++'s output of a pass over SOURCE (ANSWER_LINES lines of the answer, then the stop named
    NAME) cut where the stop's own diagnostics begin: (the answer's part, "stopped") where the stop
    ended the pass; (output, "fatal") where a fatal error on the answer's lines ended it first (a
    missing #include: the build stops there too); (None, why) where the pass cannot stand for the
    build's compile (a diagnostic on the stop's lines that is not the stop's, an answer that left
    a brace open), so the builder decides."""
    lines = output.splitlines()

    def line_of(text):
        m = _DIAGNOSTIC.match(text)
        return int(m.group("line")) if m and m.group("file") == source else None

    cut = next((i for i, l in enumerate(lines) if name in l or (line_of(l) or 0) > answer_lines), None)
    if cut is None:
        ends_fatal = lines and lines[-1].strip() == "compilation terminated." and any(
            "fatal error:" in l and 0 < (line_of(l) or 0) <= answer_lines for l in lines)
        return (output, "fatal") if ends_fatal else (None, "the pass did not reach the stop")
    tail = lines[cut:]
    # The stop's diagnostics alone: its instantiation context and one fatal error, on its lines.
    located = [n for n in map(line_of, tail) if n is not None]
    errors = [l for l in tail if " error:" in l]
    if not (tail[-1].strip() == "compilation terminated." and len(errors) == 1 and "fatal error:" in errors[0]
            and name in "\n".join(tail) and all(n > answer_lines for n in located)):
        return None, "a diagnostic on the stop's lines that is not the stop's"
    return "\n".join(lines[:cut]) + ("\n" if cut else ""), "stopped"


def _pch_not_taken(output):
    """g++'s -Winvalid-pch warning where it read torch's header itself (slower, never wrong)."""
    line = next((l for l in output.splitlines() if "-Winvalid-pch" in l), None)
    return None if line is None else "not taken by g++: " + line[:500]


def load_inline_main_cpp(arguments):
    """main.cpp as torch's load_inline writes it for these arguments (its #include, the sources,
    the pybind11 module of `functions`), or None where the arguments are not plain. Only a guess
    made without torch: the builder compares it with the file torch writes, and the early syntax
    pass counts only where they are the same bytes."""
    sources = arguments.get("cpp_sources")
    sources = [sources] if isinstance(sources, str) else sources
    if not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
        return None
    sources = ([] if arguments.get("no_implicit_headers") else ["#include <torch/extension.h>"]) + sources
    functions = arguments.get("functions")
    if functions is not None:
        functions = [functions] if isinstance(functions, str) else functions
        if isinstance(functions, list):
            functions = {f: f for f in functions}
        if not isinstance(functions, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in functions.items()):
            return None
        wrapped = arguments.get("with_pytorch_error_handling", True)
        sources = sources + ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"] + [
            f'm.def("{f}", torch::wrap_pybind_function({f}), "{doc}");' if wrapped else f'm.def("{f}", {f}, "{doc}");'
            for f, doc in functions.items()] + ["}"]
    return "\n".join(sources)


def _run_sh(command, cwd):
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    return done.returncode, done.stdout.decode(errors="replace")


class _BuildHooks:
    """torch's cpp_extension with the precompiled header's parts around its ninja file, and its
    build not run but planned (_PlannedBuild runs it, without torch). The flags are read where
    torch writes build.ninja, so they are load_inline's own; a build whose flags are the PCH's
    gets `-include` of its header; a `.cu` is split where cuda_split allows it, and the ninja
    files of the split's fallbacks are written beside build.ninja by torch's own writer."""

    def __init__(self, cpp, pch, making_pch, split=True, pch_info=None):
        self.cpp, self.pch, self.making_pch = cpp, pch, making_pch
        # The header's PCH_INFO as the broker read it from the verified entry (a preparer does
        # not see the entry), else read from the entry here.
        self.pch_info = pch_info
        # What torch asked of its ninja build (the build's folder, its error's prefix): the plan's.
        self.run_call = None
        self.note = ""  # what became of the precompiled header: the entry's "pch"
        self.record = None  # {"cxx", "compiler", "cflags" (without the name), "post_cflags"}
        self.cflags, self.post, self.sources, self.use_pch = [], [], [], False
        # The split build of the CUDA sources (cuda_split.py): wanted, the ninja file's arguments
        # without it (written again where the split build fails), what became of it (the entry's
        # "split").
        self.split_wanted, self.unsplit, self.split_note = split, None, ""
        # each device unit's object and what its reading gave: {device unit: (object, the .cu,
        # cuda_split's Split.left_out)}, for run_ending_at_the_device_units_failure and kernel_error
        self.split_reads = {}
        self.split_files = []
        # main.cpp and the host unit compiled as one unit (cuda_split.join_declined): what became of
        # it (the entry's "joined"), the ninja file's arguments with the two apart (written again
        # where the joined unit fails), and {"unit", "object", "main", "cu"} while it is built joined.
        self.join_note, self.apart, self.joined = "", None, None

    def __enter__(self):
        self.real_write = getattr(self.cpp, "_write_ninja_file", None)
        self.real_run = getattr(self.cpp, "_run_ninja_build", None)
        if self.real_write is None or self.real_run is None:
            if self.pch or self.making_pch:
                self.note = "not used: this torch's cpp_extension has no _write_ninja_file or _run_ninja_build"
            return self
        import inspect
        self.signature = inspect.signature(self.real_write)
        self.cpp._write_ninja_file, self.cpp._run_ninja_build = self.write, self.run
        return self

    def __exit__(self, *exc):
        if self.real_write is not None and self.real_run is not None:
            self.cpp._write_ninja_file, self.cpp._run_ninja_build = self.real_write, self.real_run
        return False

    def write(self, *args, **kwargs):
        bound = self.signature.bind(*args, **kwargs)
        a = bound.arguments
        # Empty flags dropped (pch_arguments: the same command), so a build with extra_cflags=[""]
        # matches the header made for none.
        cflags = [f.strip() for f in (a.get("cflags") or []) if f.strip()]
        post = [f.strip() for f in (a.get("post_cflags") or []) if f.strip()]
        cxx = os.environ.get("CXX", "c++")
        self.record = {"cxx": cxx, "compiler": compiler_identity(cxx),
                       "cflags": [f for f in cflags if not f.startswith("-DTORCH_EXTENSION_NAME=")], "post_cflags": post}
        if self.pch and not self.making_pch:
            why = self.mismatch()
            if why:
                self.note = f"not used: {why}"
            else:
                self.use_pch = True
                self.note = f"used: {self.pch}"
                cflags = ["-include", shlex.quote(os.path.join(self.pch, PCH_WRAPPER)), "-Winvalid-pch"] + cflags
                a["cflags"] = cflags
        self.cflags, self.post = cflags, post
        self.sources = [os.path.abspath(f) for f in (a.get("sources") or [])]
        if self.split_wanted and not self.making_pch and a.get("with_cuda"):
            self.split_sources(a)
        return self.real_write(*bound.args, **bound.kwargs)

    def split_sources(self, a):
        """Each CUDA source as its device unit (nvcc) and its host unit (g++, with the precompiled
        header where this build has it) in the ninja file, where cuda_split reads it and the flags
        allow; else as it was, and split_note says why."""
        is_cuda = getattr(self.cpp, "_is_cuda_file", lambda p: os.path.splitext(p)[1] in (".cu", ".cuh"))
        sources, objects = list(a.get("sources") or []), list(a.get("objects") or [])
        if len(sources) != len(objects) or not any(is_cuda(s) for s in sources):
            return
        try:
            cxx_args = shlex.split(" ".join(self.cflags + self.post))
            nvcc_args = shlex.split(" ".join([f.strip() for f in (a.get("cuda_cflags") or []) + (a.get("cuda_post_cflags") or [])]))
            ccbin, nvcc_args = cuda_split.nvcc_host_compiler(nvcc_args)
            macros = cuda_split.host_macros(cxx_args, nvcc_args)
            # The same compiler and version, whatever its name (gcc and g++ of one toolchain, or a
            # wrapper): its --version line without the program's name.
            host_compiler = compiler_identity(ccbin).partition(": ")[2].partition(" ")[2]
            if host_compiler != self.record["compiler"].partition(": ")[2].partition(" ")[2]:
                raise cuda_split.NotSplit(f"nvcc's host compiler ({ccbin}) is not load_inline's C++ compiler")
            new_sources, new_objects, written, reads = [], [], [], {}
            for source, obj in zip(sources, objects):
                if not is_cuda(source):
                    new_sources.append(source)
                    new_objects.append(obj)
                    continue
                path = os.path.abspath(source)
                with open(path) as f:
                    text = f.read()
                split = cuda_split.split_cuda_source(text, path, macros)
                stem = os.path.splitext(path)[0]
                host, device = stem + cuda_split.HOST_UNIT + ".cpp", stem + cuda_split.DEVICE_UNIT + ".cu"
                for unit, content in ((host, split.host), (device, split.device)):
                    with open(unit, "w") as f:
                        f.write(content)
                    written.append(unit)
                base = os.path.splitext(os.path.basename(obj))[0].removesuffix(".cuda")
                folder = os.path.dirname(obj)
                new_sources += [host, device]
                new_objects += [os.path.join(folder, base + cuda_split.HOST_UNIT + ".o"),
                                os.path.join(folder, base + cuda_split.DEVICE_UNIT + ".cuda.o")]
                reads[device] = (new_objects[-1], path, split.left_out)
        except cuda_split.NotSplit as e:
            self.split_note = f"not used: {e}"
            return
        except (OSError, UnicodeDecodeError) as e:
            self.split_note = f"not used: the source does not read ({e})"
            return
        self.unsplit = dict(a)
        a["sources"], a["objects"] = new_sources, new_objects
        self.split_reads = reads
        self.split_files = written
        self.sources = [os.path.abspath(f) for f in new_sources]
        self.split_note = "used"
        self.join_sources(a, is_cuda)

    def join_sources(self, a, is_cuda):
        """load_inline's main.cpp and the split's host unit as one unit in the ninja file, where
        cuda_split.join_declined allows it (torch's header's instantiation paid once, not twice);
        else as they were, and join_note says why."""
        if split_setting() == "apart":
            self.join_note = "not used: KWB_CUDA_SPLIT=apart"
            return
        sources, objects = list(a["sources"]), list(a["objects"])
        mains = [k for k, f in enumerate(sources) if not is_cuda(f) and not cuda_split.is_split_unit(f)]
        hosts = [k for k, f in enumerate(sources) if cuda_split.HOST_UNIT + "." in os.path.basename(f)]
        if len(mains) != 1 or len(hosts) != 1 or os.path.basename(sources[mains[0]]) != "main.cpp":
            self.join_note = "not used: not one main.cpp and one host unit"
            return
        main, host = os.path.abspath(sources[mains[0]]), os.path.abspath(sources[hosts[0]])
        try:
            with open(main) as f:
                main_text = f.read()
            with open(host) as f:
                host_text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            self.join_note = f"not used: a source does not read ({e})"
            return
        why = cuda_split.join_declined(main_text, host_text)
        if why:
            self.join_note = f"not used: {why}"
            return
        unit = os.path.join(os.path.dirname(main), "main" + cuda_split.JOINED_UNIT + ".cpp")
        # Without the precompiled header (a cold run's first builds, before it is made) torch's
        # header is included first all the same, as the header's -include would: the one unit is
        # then the same text either way, and main.cpp's own include of it adds nothing.
        with open(unit, "w") as f:
            f.write(cuda_split.joined_unit(main, main_text, host_text, lead="" if self.use_pch else PCH_INCLUDE))
        obj = os.path.join(os.path.dirname(objects[mains[0]]), "main" + cuda_split.JOINED_UNIT + ".o")
        self.apart = dict(a)
        self.apart["sources"], self.apart["objects"] = sources, objects
        keep = [k for k in range(len(sources)) if k != hosts[0]]
        a["sources"] = [unit if k == mains[0] else sources[k] for k in keep]
        a["objects"] = [obj if k == mains[0] else objects[k] for k in keep]
        cu = next(iter(self.split_reads.values()))[1]  # the `.cu` (one: one host unit)
        self.joined = {"unit": unit, "object": obj, "main": main, "cu": cu}
        self.split_files.append(unit)
        self.sources = [os.path.abspath(f) for f in a["sources"]]
        self.join_note = "used"

    def mismatch(self):
        """Why the precompiled header's flags are not this build's, or ""."""
        info = self.pch_info
        if info is None:
            try:
                with open(os.path.join(self.pch, PCH_INFO)) as f:
                    info = json.load(f)
            except (OSError, ValueError) as e:
                return f"its {PCH_INFO} does not read ({e})"
        if not isinstance(info, dict):
            return f"its {PCH_INFO} is not an object"
        for field, what in (("compiler", "compiler"), ("cflags", "flags"), ("post_cflags", "flags after the source")):
            if info.get(field) != self.record[field]:
                return f"its {what} are not this build's ({info.get(field)!r} against {self.record[field]!r})"
        return ""

    def run(self, *args, **kwargs):
        """torch's ninja build, not run: what torch asked of it, for the plan."""
        self.run_call = {"build_directory": kwargs.get("build_directory", args[0] if args else None),
                         "error_prefix": kwargs.get("error_prefix", args[2] if len(args) > 2 else "Error building extension")}

    def plan(self):
        """The build as _PlannedBuild runs it: the hooks' state, the ninja command torch would run,
        and the ninja files of the split's fallbacks, written now by torch's own writer (the `.cu`
        whole, as load_inline writes it; main.cpp and the host unit apart). None where torch asked
        for no build."""
        if self.run_call is None:
            return None
        folder = self.run_call["build_directory"]
        path_name = next(iter(self.signature.parameters))  # (torch's `path`)

        def write_beside(arguments, name):
            self.real_write(**dict(arguments, **{path_name: os.path.join(folder, name)}))
            return name

        is_cuda = getattr(self.cpp, "_is_cuda_file", lambda p: os.path.splitext(p)[1] in (".cu", ".cuh"))
        every = set(self.sources)
        unsplit = apart = None
        if self.unsplit is not None:
            unsplit = {"sources": [os.path.abspath(f) for f in (self.unsplit.get("sources") or [])],
                       "library_target": str(self.unsplit.get("library_target") or ""),
                       "ninja": write_beside(self.unsplit, WHOLE_NINJA)}
            every.update(unsplit["sources"])
        if self.apart is not None:
            apart = {"sources": [os.path.abspath(f) for f in (self.apart.get("sources") or [])],
                     "ninja": write_beside(self.apart, APART_NINJA)}
            every.update(apart["sources"])
        workers = getattr(self.cpp, "_get_num_workers", lambda verbose: None)(False)
        return {"format": PLAN_FORMAT, "build_directory": folder, "error_prefix": self.run_call["error_prefix"],
                "ninja": ["ninja", "-v"] + (["-j", str(workers)] if workers is not None else []),
                "making_pch": self.making_pch, "pch": self.pch, "note": self.note, "record": self.record,
                "cflags": self.cflags, "post": self.post, "sources": self.sources,
                "use_pch": self.use_pch, "cuda_files": sorted(f for f in every if is_cuda(f)),
                "split_note": self.split_note, "join_note": self.join_note, "unsplit": unsplit, "apart": apart,
                "joined": self.joined, "split_files": self.split_files,
                "split_reads": {d: [o, p, sorted(left)] for d, (o, p, left) in self.split_reads.items()}}


class _PlannedBuild:
    """A build as _BuildHooks planned it, run without torch (the builder of a prepared build
    imports none): ninja as torch's _run_ninja_build runs it, with the precompiled header's syntax
    pass beside it, the split's device unit's failure read as the answer's own error where it is,
    and the split's fallbacks from the ninja files torch wrote for them."""

    def __init__(self, plan):
        self.build_directory, self.error_prefix = plan["build_directory"], plan["error_prefix"]
        self.ninja = [str(a) for a in plan["ninja"]]
        self.making_pch, self.pch, self.note = bool(plan["making_pch"]), plan["pch"], plan["note"]
        self.record, self.cflags, self.post = plan["record"], list(plan["cflags"]), list(plan["post"])
        self.sources, self.use_pch = list(plan["sources"]), bool(plan["use_pch"])
        self.cuda_files = set(plan["cuda_files"])
        self.split_note, self.join_note = plan["split_note"], plan["join_note"]
        self.unsplit, self.apart, self.joined = plan["unsplit"], plan["apart"], plan["joined"]
        self.split_files = list(plan["split_files"])
        # each device unit's object and what its reading gave: {device unit: (object, the .cu,
        # cuda_split's Split.left_out)}, for run_ending_at_the_device_units_failure and kernel_error
        self.split_reads = {d: (o, p, set(left)) for d, (o, p, left) in plan["split_reads"].items()}
        self.torch_views = None  # the device unit's _TorchViews, read with ninja for kernel_error

    def ninja_build(self):
        """ninja as torch's _run_ninja_build runs it (the command torch would run, in the plan),
        its failure raised as torch raises it: the error's prefix, then ninja's output."""
        try:
            subprocess.run(self.ninja, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           cwd=self.build_directory, check=True, env=os.environ.copy())
        except subprocess.CalledProcessError as e:
            message = self.error_prefix
            if e.output:
                message += f": {e.output.decode()}"  # (strict, as torch decodes it on Linux)
            raise RuntimeError(message) from e

    def use_ninja(self, name):
        """The fallback's ninja file (written by torch when the build was planned) as build.ninja."""
        os.replace(os.path.join(self.build_directory, name), os.path.join(self.build_directory, "build.ninja"))

    def build_apart_after(self, message):
        """Where the joined unit failed with more than the host code's own errors: the ninja file
        written again with main.cpp and the host unit apart (True), as before joining, so that
        build decides. The host code's own errors (every error on the `.cu`'s lines, main.cpp named
        nowhere) are what the host unit alone would give: False, and the split's rules go on."""
        if self.joined is None:
            return False
        obj = self.joined["object"]
        targets = _failed_targets(message)
        failed = [f for f in targets if os.path.basename(f) == os.path.basename(obj)]
        if not failed or any(cuda_split.DEVICE_UNIT + "." in f for f in targets):
            return False  # the device unit's failure (the joined unit's compile ended with it) decides
        block = _failed_block(message, failed[0])
        errors = re.findall(r"^(.*?):\d+:(?:\d+:)? (?:fatal )?error: (.*)$", block, re.M)
        if errors and all(f == self.joined["cu"] for f, _ in errors) and self.joined["main"] not in block:
            self.join_note = "used: the host code's own error"
            return False
        said = next((f"{os.path.basename(f)}: {e}" for f, e in errors), "no error line")
        self.join_note = f"failed, built apart: {said[:300]}"
        self.use_ninja(self.apart["ninja"])
        _discard(self.joined["unit"])
        self.split_files.remove(self.joined["unit"])
        self.sources = list(self.apart["sources"])
        self.joined = None
        return True

    def run(self):
        build_directory, error_prefix = self.build_directory, self.error_prefix
        if self.making_pch:
            return self.make_pch(build_directory, error_prefix)
        if self.unsplit is not None:
            # The split build decides a success only: where it fails, the whole `.cu` is built as
            # load_inline builds it (main.cpp's object is ninja's to keep), and that build's
            # failure is the answer's. The broker's early pass over main.cpp may end it, as it may
            # end a whole build: main.cpp is load_inline's own either way.
            if self.early_pass_covers(build_directory):
                _write_json(os.path.join(build_directory, EARLY_VALID), {"error_prefix": error_prefix})
            try:
                self.torch_views = self.torch_views_ahead(build_directory)
                try:
                    self.run_ending_at_the_device_units_failure(build_directory)
                except Exception as e:  # noqa: B902 (as below)
                    if not self.build_apart_after(str(e)):
                        raise
                    self.run_ending_at_the_device_units_failure(build_directory)
                # A shared library may leave symbols to load time, so a launcher the host unit
                # calls and the device unit lacks would link, and fail only as the answer loads.
                missing = self.missing_launchers(build_directory)
                if not missing:
                    return None
                self.split_note = f"failed, built whole: the host unit calls launchers the device unit lacks ({missing})"
            except Exception as e:  # noqa: B902 (torch raises RuntimeError; anything else alike)
                failed = _failed_targets(str(e))
                if failed and not any(cuda_split.is_split_unit(f) or f.endswith(LIB_SUFFIXES) for f in failed):
                    # A compile of load_inline's own C++ source (main.cpp), with its own flags and
                    # header, failed: that is the whole build's failure too.
                    self.split_note = "used: load_inline's C++ source did not compile"
                    raise
                lines = str(e).splitlines()
                said = next((l for l in lines if re.search(r"error( [0-9A-Z-]+)?:|undefined reference", l)),
                            next((l for l in lines if l.startswith("FAILED:")), lines[0] if lines else ""))
                reason, block, why_not = self.kernel_error(build_directory, str(e))
                if reason:
                    # the answer's own error, which the whole build would report after parsing
                    # torch's headers: reported now, in the device unit's own messages
                    self.split_note = f"failed: {reason}"
                    for unit in self.split_files:
                        _discard(unit)
                    raise RuntimeError(f"{error_prefix}: {block}") from None
                self.split_note = f"failed, built whole: {said.strip()[:300]}" + (
                    f" (not the answer's alone: {why_not[:400]})" if why_not else "")
            finally:
                if self.torch_views is not None:
                    self.torch_views.stop()
            self.use_ninja(self.unsplit["ninja"])
            for unit in self.split_files:
                _discard(unit)
            self.sources = list(self.unsplit["sources"])
            self.unsplit = None
        if self.early_pass_covers(build_directory):
            # The broker's pass compiles this main.cpp with this command: it stops this build at
            # a compile error there, so none runs here.
            _write_json(os.path.join(build_directory, EARLY_VALID), {"error_prefix": error_prefix})
            return self.ninja_build()
        if self.use_pch and len(self.cxx_sources()) < len(self.sources):
            return self.run_beside_syntax_pass(build_directory, error_prefix)
        return self.ninja_build()

    def run_ending_at_the_device_units_failure(self, build_directory):
        """torch's ninja build of the split units. ninja waits for its running compiles after one
        fails, so where the device unit's compile (a second or two) ends without its object, the
        others (g++'s, several seconds) are ended: the build has failed, and kernel_error or the
        whole build decides what the answer gets."""
        if len(self.split_reads) != 1:
            return self.ninja_build()
        (device, (obj, _, _)), = self.split_reads.items()
        obj = os.path.join(build_directory, obj)  # (an absolute object's path stays as it is)
        thread, outcome = self.ninja_in_a_thread()
        seen = False
        while thread.is_alive():
            thread.join(0.05)
            if _descendant_naming(device):
                seen = True
            elif seen and thread.is_alive() and not os.path.exists(obj):
                thread.join(0.1)  # ninja prints the failed command's output as it ends
                while thread.is_alive():  # ninja kills its running commands' process groups on SIGTERM
                    _terminate_children("ninja")
                    thread.join(0.05)
            elif seen and self.torch_views is not None and os.path.exists(obj):
                self.torch_views.stop()  # the device unit built: no kernel error to read them for
        thread.join()
        if "error" in outcome:
            raise outcome["error"]

    def kernel_error(self, build_directory, message):
        """Where the split's device unit failed: (the answer's error's reason, the device unit's
        compile as ninja printed it, "") when split_verdict finds its errors the answer's own, else
        ("", "", why not). Reads torch's headers as the device unit's own compile command
        preprocesses them (nvcc --dryrun's preprocessor commands: the host side's and each arch's)."""
        device_units = [f for f in _failed_targets(message) if cuda_split.DEVICE_UNIT + "." in f]
        if len(device_units) != 1 or len(self.split_reads) != 1:
            return "", "", ""
        block = _failed_block(message, device_units[0])
        if not block:
            return "", "", "ninja's output has no block for the device unit"
        (device, (_, original, left_out)), = self.split_reads.items()
        try:
            with open(original) as f:
                cu_text = f.read()
            with open(device) as f:
                device_text = f.read()
            if self.torch_views is None or self.torch_views.stopped_unread():
                self.torch_views = _TorchViews(build_directory, original, device, ahead=False)
            views = self.torch_views.views()
        except (OSError, UnicodeDecodeError, KeyError, subprocess.SubprocessError, ValueError) as e:
            return "", "", f"torch's headers were not read ({e})"
        if not views:
            return "", "", "nvcc named no preprocessing to read torch's headers with"
        reason, why_not = split_verdict.answer_error(block, original, cu_text, device_text, views, cuda_split.LAUNCHER_FILE,
                                                     left_out)
        return reason, block, why_not

    def torch_views_ahead(self, build_directory):
        """The split's device unit's _TorchViews, started with ninja at the lowest priority; None
        where there is no one device unit, or its reading cannot start (kernel_error then starts
        it itself, and says why where it fails again)."""
        if len(self.split_reads) != 1:
            return None
        (device, (_, original, _)), = self.split_reads.items()
        try:
            return _TorchViews(build_directory, original, device, ahead=True)
        except (OSError, UnicodeDecodeError, KeyError, ValueError):
            return None

    def missing_launchers(self, build_directory):
        """The split library's undefined launcher symbols (nm -D), "" where there are none."""
        library = os.path.join(build_directory, self.unsplit["library_target"])
        nm = shutil.which("nm")
        if nm is None or not os.path.isfile(library):
            return "no nm or no library to check"
        done = subprocess.run([nm, "-D", "--undefined-only", library], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0:
            return f"nm failed: {done.stderr.strip()[:200]}"
        return " ".join(l.split()[-1] for l in done.stdout.splitlines() if cuda_split.LAUNCHER_PREFIX in l)[:500]

    def early_pass_covers(self, build_directory):
        """Whether the broker's early syntax pass (its record in the build folder) ran the syntax
        command this build's own pass would run, over the bytes torch wrote into main.cpp."""
        try:
            with open(os.path.join(build_directory, EARLY_RECORD)) as f:
                record = json.load(f)
            source = record["source"]
            # load_inline's own C++ sources (a split build's host unit is not one: the pass does
            # not cover it, and its failure is never the answer's alone)
            mine = [f for f in self.cxx_sources() if not cuda_split.is_split_unit(f)]
            if self.joined is not None:  # main.cpp in the joined unit: compiled, not apart
                mine = [self.joined["main"]]
            if not self.use_pch or mine != [source]:
                return False
            if syntax_command(self.record["cxx"], self.cflags, self.post, source) != record["command"]:
                return False
            return _hash_file(source) == record["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def cxx_sources(self):
        return [s for s in self.sources if s not in self.cuda_files]

    def ninja_in_a_thread(self):
        """torch's ninja build started in a thread: (the thread, {"error": what it raised})."""
        outcome = {}

        def ninja():
            try:
                self.ninja_build()
            except BaseException as e:  # noqa: B902 (re-raised in the caller's thread)
                outcome["error"] = e

        thread = threading.Thread(target=ninja, daemon=True)
        thread.start()
        return thread, outcome

    def run_beside_syntax_pass(self, build_directory, error_prefix):
        """torch's ninja build with g++ -fsyntax-only of the C++ sources beside it: a compile error
        there ends ninja (and its nvcc) and is raised as torch raises a failed build, with the
        compiler's messages; else ninja's own result."""
        thread, outcome = self.ninja_in_a_thread()
        failure = None
        for source in self.cxx_sources():
            command = syntax_command(self.record["cxx"], self.cflags, self.post, source)
            code, output = _run_sh(command, build_directory)
            self.note = _pch_not_taken(output) or self.note
            if code != 0:
                failure = syntax_failure(error_prefix, command, source, output)
                break
        if failure is not None:
            while thread.is_alive():  # ninja kills its running commands' process groups on SIGTERM
                _terminate_children("ninja")
                thread.join(0.05)
            raise RuntimeError(failure)
        thread.join()
        if "error" in outcome:
            raise outcome["error"]

    def make_pch(self, build_directory, error_prefix):
        """torch/extension.h compiled with the build's flags (the extension's name aside), checked
        to be taken by g++ for load_inline's main.cpp with an extension's name defined."""
        if self.record is None:
            raise RuntimeError(f"{error_prefix}: torch wrote no build file")
        wrapper = os.path.join(build_directory, PCH_WRAPPER)
        os.makedirs(os.path.dirname(wrapper), exist_ok=True)
        with open(wrapper, "w") as f:
            f.write(PCH_INCLUDE)
        gch = os.path.join(build_directory, PCH_FILE)
        command = _ninja_command(self.record["cxx"], self.record["cflags"],
                                 ["-x", "c++-header", shlex.quote(wrapper), "-o", shlex.quote(gch)], self.record["post_cflags"])
        code, output = _run_sh(command, build_directory)
        if code != 0:
            raise RuntimeError(f"{error_prefix}: {command}\n{output}")
        for source in self.cxx_sources():
            check = _ninja_command(self.record["cxx"], ["-include", shlex.quote(wrapper), "-Winvalid-pch", "-H"] + self.cflags,
                                   ["-fsyntax-only", shlex.quote(source)], self.post)
            code, output = _run_sh(check, build_directory)
            if code != 0 or f"! {gch}" not in output.splitlines():
                shown = "\n".join(l for l in output.splitlines() if not l.startswith("."))[-2000:]
                raise RuntimeError(f"{error_prefix}: g++ does not take the precompiled header for load_inline's "
                                   f"main.cpp: {check}\n{shown}")
        _write_json(os.path.join(build_directory, PCH_INFO), self.record)


def _failed_targets(message):
    """The targets of ninja's `FAILED:` lines: `FAILED: obj`, or `FAILED: [code=2] obj` from ninja
    1.12 on (the GPU machine's; read as a target named "[code=2]", every split kernel error passed
    for load_inline's own main.cpp's until session 37)."""
    return re.findall(r"^FAILED: (?:\[code=-?\d+\] )?(\S+)", message, re.M)


def _failed_block(message, target):
    """ninja's lines for a failed target: `FAILED: target`, its command, and what it printed."""
    lines = message.splitlines()
    start = next((k for k, l in enumerate(lines) if l.startswith("FAILED:") and target in l.split()[1:]), None)
    if start is None:
        return ""
    end = start + 1
    while end < len(lines) and not re.match(r"FAILED:|ninja: |\[\d+/\d+\] ", lines[end]):
        end += 1
    return "\n".join(lines[start:end])


def _ninja_variables(path):
    """The top-level variables of torch's build.ninja (name: value)."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"([A-Za-z_]\w*) = (.*)$", line.rstrip("\n"))
            if m:
                out[m.group(1)] = m.group(2)
    return out


class _TorchViews:
    """torch's headers as the answer's directives include them, for split_verdict, in each view nvcc
    parses (its host side, each arch): the probe (the `.cu`'s directives alone, every other line
    blank, written beside it so its quoted includes resolve as the `.cu`'s) preprocessed with -dD,
    and the device unit's own macros (-dM), by the preprocessor commands nvcc --dryrun names for the
    build's own flags. Read ahead (with ninja), they run under `nice -n 19`: where cores are idle
    they are done before a device unit fails (its compile takes a second or two), and where the
    build's own compiles fill the machine they take next to nothing from them. Where they are
    needed unfinished, each unfinished preprocessing starts again at normal priority and the first
    of the two to end is read; where they are done before that, their scans are read ahead too
    (split_verdict.read_at_once). Their outputs go to a private folder; stop() ends every process
    and removes that folder and the probe, however the reading ended."""

    NICE = shutil.which("nice")
    PROBE = "kwb-torch-probe.cu"

    def __init__(self, build_directory, original, device, ahead):
        with open(original) as f:
            text = f.read()
        directives = split_verdict.directives_only(text)
        self._keep = split_verdict.opened_namespaces(text)  # (the namespaces the verdict's scans read)
        ninja = _ninja_variables(os.path.join(build_directory, "build.ninja"))
        self._lock = threading.Lock()
        self._needed, self._finished = threading.Event(), threading.Event()
        self._stopped, self._processes = False, []
        self._views, self._error = None, ""
        self._probe = os.path.join(build_directory, self.PROBE)
        with open(self._probe, "w") as f:
            f.write(directives)
        self._dir = tempfile.mkdtemp(prefix="kwb-torch-views-")
        ahead = ahead and self.NICE is not None
        if not ahead:
            self._needed.set()
        threading.Thread(target=self._read, args=(ninja, device, build_directory, ahead), daemon=True).start()

    def views(self, timeout=120):
        """A split_verdict.View for each view; ValueError where they were not read."""
        self._needed.set()
        if not self._finished.wait(timeout):
            self.stop()
            raise ValueError(f"reading torch's headers took over {timeout} s")
        if self._views is None:
            raise ValueError(self._error or "stopped")
        return self._views

    def stopped_unread(self):
        """Whether stop() ended the reading before its views were read."""
        with self._lock:
            return self._stopped and self._views is None

    def stop(self):
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            processes = list(self._processes)
        for process in processes:
            if process.poll() is None:  # (a reaped one's number may be another's by now)
                _kill_group(process)
            process.wait()
        shutil.rmtree(self._dir, ignore_errors=True)
        _discard(self._probe)

    def _read(self, ninja, device, cwd, ahead):
        try:
            views = self._preprocess(ninja, device, cwd, ahead)
            with self._lock:
                if not self._stopped:
                    self._views = views
        except Exception as e:  # noqa: B902 (said by views(): the whole build decides)
            self._error = str(e) if isinstance(e, (OSError, ValueError)) else f"{type(e).__name__}: {e}"
        finally:
            self._finished.set()
        # Read ahead and done while the device unit still compiles (cores were idle): what the
        # verdict reads of them (the macros, the scan of namespace scope) read now too. Once they
        # are needed or stopped, no more: the verdict reads what it needs itself, a view this
        # thread is reading taken as it ends.
        for view in self._views or ():
            if self._needed.is_set() or self._stopped:
                return
            view.macros()
        if self._views and not self._needed.is_set() and not self._stopped:
            split_verdict.read_at_once(self._views, self._keep)

    def _preprocess(self, ninja, device, cwd, ahead):
        nvcc, flags, post = ninja["nvcc"], ninja.get("cuda_cflags", ""), ninja.get("cuda_post_cflags", "")
        output = re.compile(r' -o "?[^" ]+"?\s*$')

        def commands(source):
            code, out = _run_sh(f"{nvcc} --dryrun {flags} -c {shlex.quote(source)} -o /dev/null {post}", cwd)
            if code != 0:
                raise ValueError(f"nvcc --dryrun: {out.strip()[-300:]}")
            return [line[3:] for line in out.splitlines() if line.startswith("#$ ") and " -E " in line
                    and output.search(line)]

        wanted = {}  # (kind, k): the command, its output's path left as {out}
        for kind, source, extra in (("probe", self._probe, "-dD"), ("own", device, "-dM")):
            for k, line in enumerate(commands(source)):
                wanted[(kind, k)] = output.sub(" -o {out}", line.replace("{", "{{").replace("}", "}}")).replace(
                    " -E ", f" -E {extra} ", 1)
        running = {key: [] for key in wanted}

        def start(key, nice):
            with self._lock:
                if self._stopped:
                    raise ValueError("stopped")
                out = os.path.join(self._dir, f"{key[0]}-{key[1]}-{len(running[key])}.ii")
                argv = ["/bin/sh", "-c", wanted[key].format(out=shlex.quote(out))]
                with open(out + ".log", "wb") as log:
                    # its own process group: the shell's compiler and the compiler's cc1plus end with it
                    process = subprocess.Popen([self.NICE, "-n", "19"] + argv if nice else argv, cwd=cwd,
                                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True)
                self._processes.append(process)
                running[key].append((out, process))

        for key in wanted:
            start(key, ahead)
        texts, again = {}, not ahead  # again: the unfinished ones started again at normal priority
        while len(texts) < len(wanted):
            if not again and self._needed.is_set():
                again = True
                for key in wanted:
                    if key not in texts:
                        start(key, False)
            for key in wanted:
                for out, process in running[key] if key not in texts else ():
                    code = process.poll()
                    if self._stopped:
                        raise ValueError("stopped")
                    if code == 0:
                        with open(out, errors="replace") as f:
                            texts[key] = f.read()
                        for _, other in running[key]:
                            if other.poll() is None:
                                _kill_group(other)
                        break
                    if code is not None:
                        with open(out + ".log", errors="replace") as f:
                            said = " ".join(f.read().split())[-300:]
                        raise ValueError(f"a preprocessing of the {key[0]} view {key[1]} failed (exit {code}: {said})")
            if len(texts) < len(wanted) and not again:
                self._needed.wait(0.02)
            elif len(texts) < len(wanted):
                time.sleep(0.01)
        views = []
        for kind, k in sorted(wanted):
            if kind == "probe":
                if ("own", k) not in texts:
                    raise ValueError("the device unit's views are not the probe's")
                views.append(split_verdict.View(texts[("probe", k)], split_verdict.macros_only(texts[("own", k)])))
        return views


def _kill_group(process):
    """SIGKILL to a process started in a group of its own and to what is left of that group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:  # the group is gone
        pass


def _children(pid):
    """A process's children (/proc's children lists of its threads)."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        pass
    return out


def _descendant_naming(path):
    """Whether a process below this one's ninja (ninja's compile of a source, and what it runs) has
    `path` on its command line; read through /proc's children lists, so only that tree (not the
    builder's own preprocessings of torch's headers, which name the device unit too)."""
    todo, seen = [], set()
    for child in _children(os.getpid()):
        try:
            with open(f"/proc/{child}/comm") as f:
                if f.read().startswith("ninja"):
                    todo += _children(child)
        except OSError:
            continue
    needle = path.encode()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle in f.read():
                    return True
        except OSError:
            continue
        todo += _children(pid)
    return False


def _terminate_children(name):
    """SIGTERM to this process's children called `name` (torch's ninja, started inside
    _run_ninja_build where its handle is not reachable)."""
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat_line = f.read()
        except OSError:
            continue
        comm = stat_line[stat_line.find("(") + 1:stat_line.rfind(")")]
        fields = stat_line[stat_line.rfind(")") + 2:].split()
        if comm == name and len(fields) > 1 and fields[1] == me:
            try:
                os.kill(int(pid), signal.SIGTERM)
            except OSError:
                pass


def split_setting():
    """KWB_CUDA_SPLIT (docs/sandbox.md): "0" builds every `.cu` whole, as load_inline does; "apart"
    splits it but keeps main.cpp and the host unit apart; anything else (the default) splits and
    joins where cuda_split allows."""
    return os.environ.get("KWB_CUDA_SPLIT", "1")


def build_into(arguments, arch, out_dir, pch=None, split=None):
    """Builds with torch's load_inline into out_dir without loading the result (its import step
    replaced): {"ok": True, "pch": note} or {"ok": False, "message": load_inline's error, "pch":
    note}. pch: a verified precompiled header's entry (pch_entry) to build with where its flags
    are this build's; a request from pch_arguments makes that header instead of a library. The
    build planned and then run in this process (prepare_into, run_plan), as a preparer and a
    builder do it apart."""
    kind, value = prepare_into(arguments, arch, out_dir, pch, split, build_unplanned=True)
    if kind != "plan":
        return value
    with _build_into_lock:
        return run_plan(value)


_build_into_lock = threading.Lock()


def preparable(arguments):
    """Why a preparer may not plan a build of these load_inline arguments ("" where it may): see
    PREPARE_KEYS."""
    if not isinstance(arguments, dict):
        return "the arguments are not an object"
    unknown = sorted(str(k) for k in arguments if k not in PREPARE_KEYS)
    if unknown:
        return f"load_inline's {', '.join(unknown)[:200]} is not planned apart"
    if arguments.get("use_pch"):
        return "use_pch: torch compiles its own header as it plans"
    flags = arguments.get("extra_cuda_cflags") or []
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        return "extra_cuda_cflags is not a list of strings"
    try:
        words = shlex.split(" ".join(f.strip() for f in flags))
    except ValueError as e:
        return f"extra_cuda_cflags do not read as shell words ({e})"
    if any(w.partition("=")[0] in ("-ccbin", "--compiler-bindir") for w in words):
        return "the answer names nvcc's host compiler (-ccbin), which the split asks for its --version"
    return ""


def prepare_into(arguments, arch, out_dir, pch=None, split=None, pch_info=None, build_unplanned=False):
    """torch's load_inline into out_dir up to its ninja build, which is planned, not run: ("plan",
    the plan for run_plan), ("result", the build's result) where load_inline failed before its
    build (or asked for none), or ("declined", why) where this torch's cpp_extension cannot be
    hooked. build_unplanned: such a torch's load_inline builds here instead, as it would alone
    (a result). pch_info: the header's PCH_INFO as read from its verified entry (a preparer does
    not see the entry)."""
    import torch.utils.cpp_extension as cpp
    # A copy all the way down: load_inline inserts its #include into a list of cpp_sources in place,
    # which changed the caller's arguments, and with them the key its entry is checked against.
    arguments = json.loads(json.dumps(arguments))
    making_pch = _is_pch_request(arguments)
    arguments.pop("kwb_pch", None)
    arguments["build_directory"] = out_dir
    arguments["verbose"] = False
    archs = _cuda_arch_list(arch)
    if making_pch and not archs:
        # torch works out nvcc's flags too, asking the GPU for its arch where none is named (there
        # is none in the builder's sandbox); the header's build uses only g++'s.
        archs = "8.0"
    # Process-wide state below (torch's module functions, the environment): one build at a time in
    # a process. Threads that build at once (a benchmark making headers beside builds) otherwise
    # take each other's hooks and flags, and the last to finish can leave the import replaced.
    if split is None:  # KWB_CUDA_SPLIT=0: every `.cu` built whole, as load_inline builds it
        split = split_setting() != "0"
    with _build_into_lock:
        return _prepare_locked(cpp, arguments, pch, making_pch, archs, split, pch_info, build_unplanned)


def _prepare_locked(cpp, arguments, pch, making_pch, archs, split, pch_info, build_unplanned):
    hookable = hasattr(cpp, "_write_ninja_file") and hasattr(cpp, "_run_ninja_build")
    if not hookable and making_pch:
        return "result", {"ok": False, "message": "this torch's cpp_extension has no _write_ninja_file or "
                                                  "_run_ninja_build, where the flags of a precompiled header are read"}
    if not hookable and not build_unplanned:
        return "declined", "this torch's cpp_extension has no _write_ninja_file or _run_ninja_build"
    # The name's version is per process in torch (name_v1 after a second source): always 0 here.
    cpp.JIT_EXTENSION_VERSIONER.entries.pop(str(arguments.get("name", "ext")), None)
    old = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if archs:
        os.environ["TORCH_CUDA_ARCH_LIST"] = archs
    real_import = cpp._import_module_from_library
    cpp._import_module_from_library = lambda *a, **k: None
    load_inline = getattr(cpp, "_kwb_real_load_inline", cpp.load_inline)
    hooks = _BuildHooks(cpp, pch, making_pch, split, pch_info)
    try:
        with hooks:
            load_inline(**arguments)
            plan = hooks.plan() if hookable else None
        if plan is None:  # built by torch itself (build_unplanned), or no build asked for
            return "result", {"ok": True, "pch": hooks.note, "split": hooks.split_note, "joined": hooks.join_note}
        return "plan", plan
    except Exception as e:  # the compiler's messages, as load_inline raises them
        return "result", {"ok": False, "message": cap_message(f"{type(e).__name__}: {e}"), "pch": hooks.note,
                          "split": hooks.split_note, "joined": hooks.join_note}
    finally:
        cpp._import_module_from_library = real_import
        if archs:
            if old is None:
                os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
            else:
                os.environ["TORCH_CUDA_ARCH_LIST"] = old


def run_plan(plan):
    """The planned build (prepare_into) run, without torch: the result build_into gives."""
    build = _PlannedBuild(plan)
    try:
        build.run()
        return {"ok": True, "pch": build.note, "split": build.split_note, "joined": build.join_note}
    except Exception as e:  # noqa: B902 (ninja's failure, raised as torch raises it; anything else alike)
        return {"ok": False, "message": cap_message(f"{type(e).__name__}: {e}"), "pch": build.note,
                "split": build.split_note, "joined": build.join_note}
    finally:
        for name in (WHOLE_NINJA, APART_NINJA):
            _discard(os.path.join(build.build_directory, name))


def build_extension(request_path, out_dir):
    """`kwb-worker --build-extension REQUEST OUT`: the builder in its own sandbox. The broker binds
    the precompiled header's entry it names (verified) read-only. A request with a plan (the
    preparer's) is run without torch (run_plan); one without is built by load_inline here. REQUEST
    "-": a spare builder (_Spare), which says it has started (OUT/SPARE_READY; torch imported first
    where SPARE_TORCH is set: the broker has no preparer) and then reads its request's path from
    stdin; at end of file (the broker let it go or ended) it builds nothing. REQUEST PREPARE_ROLE:
    the broker's preparer (serve_preparer)."""
    if request_path == PREPARE_ROLE:
        return serve_preparer(out_dir)
    split_verdict.FORK_SCANS = True  # a process for this one build: it may fork to scan at once
    if request_path == "-":
        if os.environ.get(SPARE_TORCH) == "1":
            import torch.utils.cpp_extension  # noqa: F401 (the start an unplanned build would wait for)
        compiler_identity()  # its `c++ --version` too (kept for the process)
        with open(os.path.join(out_dir, SPARE_READY), "w"):
            pass
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(0, 4096)
            if not chunk:
                return 0
            line += chunk
        request_path = line.decode().strip()
    with open(request_path) as f:
        request = json.load(f)
    nice = _niceness(request.get("nice", 0))
    if nice:
        os.nice(nice)  # before any compiler starts: every process of the build inherits it
    if isinstance(request.get("plan"), dict):
        result = run_plan(request["plan"])
    else:
        result = build_into(request["arguments"], request.get("arch", ""), out_dir, request.get("pch"))
    result["torch_imported"] = "torch" in sys.modules  # (the entry's "builder" says so)
    if os.nice(0) > 0:
        result["nice"] = os.nice(0)  # what the build ran at, as the process itself reads it
    _write_json(os.path.join(out_dir, RESULT), result)
    return 0


# ---- the preparer: torch's load_inline planning builds for the broker, in a builder's sandbox --

# What a preparer may write into a build's folder: plain names (load_inline's sources, the split's
# units, the ninja files), nothing the broker or the builder reads back as theirs.
_PLANNED_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
_NOT_PLANNED = {REQUEST, RESULT, EARLY_RECORD, EARLY_VALID, BUILDER_LOG, SPARE_READY, MANIFEST}


def serve_preparer(cache_dir):
    """`kwb-worker --build-extension --prepare CACHE`: the broker's preparer (_Preparer), in the
    builder's sandbox (its view, its environment, so torch plans what a builder's load_inline
    would), torch imported once. Reads one request per line on stdin ({"arguments", "arch",
    "build_directory", "pch", "pch_info", "split"}), plans it in that folder (made here, under the
    sandbox's tmpfs at the cache's path; the broker writes the files into the real one) and
    answers one line on its own copy of stdout: {"plan", "files": {name: text}}, {"result"} where
    load_inline failed before its build, or {"declined": why}. Anything else the process prints
    goes to stderr."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import torch.utils.cpp_extension  # noqa: F401
    compiler_identity()
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            reply = _prepare_request(request)
        except Exception as e:  # noqa: B902 (this request is built unplanned; the next is served)
            reply = {"declined": f"the preparer failed: {type(e).__name__}: {e}"[:LINE_CAP]}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


def _prepare_request(request):
    arguments, folder = request["arguments"], str(request["build_directory"])
    why = preparable(arguments)
    if why:
        return {"declined": why}
    if not os.path.isabs(folder) or os.path.normpath(folder) != folder:
        return {"declined": "the build's folder is not an absolute path"}
    os.makedirs(folder)
    try:
        kind, value = prepare_into(arguments, str(request.get("arch", "")), folder, request.get("pch"),
                                   bool(request.get("split", True)), request.get("pch_info"))
        if kind != "plan":
            return {kind: value}
        files = {}
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name in ("lock", "build.ninja.lock"):
                continue  # torch's FileBaton's, gone once it built
            if not _PLANNED_FILE.fullmatch(name) or name in _NOT_PLANNED or not os.path.isfile(path) \
                    or os.path.islink(path):
                return {"declined": f"the plan left {name!r} in the build's folder"[:LINE_CAP]}
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                files[name] = f.read()  # (the bytes torch wrote, carried through JSON as text)
        return {"plan": value, "files": files}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Preparer:
    """The broker's preparer (serve_preparer): started as the broker starts, by its own thread
    (bwrap's --die-with-parent ends a process when the thread that started it ends), and again
    when it dies, at most MAX_STARTS times. plan_into asks it for one build at a time; a build it
    cannot plan (not preparable, the preparer not started or failing, no sandbox) is built by a
    builder that imports torch, as before."""

    MAX_STARTS = 5

    def __init__(self):
        self.cond = threading.Condition()
        self.lock = threading.Lock()  # one request at a time
        self.process, self.ready, self.config, self.why = None, False, None, "no preparer was started"
        self.starts = 0

    def start(self, config):
        if config.get("preparer", True) is False or os.environ.get("KWB_BUILD_PREPARER") == "0":
            self.why = "the preparer is off (KWB_BUILD_PREPARER=0)"
            return
        if not config.get("builder_prefix"):
            self.why = "no build sandbox: builds import torch themselves"
            return
        self.config = config
        threading.Thread(target=self._keep, daemon=True).start()

    def usable(self):
        """Whether a preparer runs, or is started again."""
        with self.cond:  # (reentrant: plan_into's wait asks it holding the condition)
            return self.config is not None and (self.process is not None or self.starts < self.MAX_STARTS)

    def _keep(self):
        config = self.config
        while True:
            with self.cond:
                if self.starts >= self.MAX_STARTS:
                    self.why = f"the preparer ended {self.starts} times"
                    self.process, self.ready = None, False
                    self.cond.notify_all()
                    return
                self.starts += 1
            # Its view of the cache: a tmpfs of its own, where it makes each build's folder.
            command = list(config["builder_prefix"]) + ["--size", str(PREPARER_TMPFS_BYTES), "--tmpfs",
                                                        config["cache_dir"], "--", config["worker"],
                                                        "--build-extension", PREPARE_ROLE, config["cache_dir"]]
            try:
                process = subprocess.Popen(command, env=config.get("environment"), stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError as e:
                with self.cond:
                    self.why = f"the preparer did not start: {e}"
                    self.starts = self.MAX_STARTS
                    self.cond.notify_all()
                return
            with self.cond:
                self.process, self.ready = process, False
            line = _read_pipe_line(process.stdout, PREPARE_TIMEOUT_S * 4)
            with self.cond:
                self.ready = line is not None and json.loads(line or "{}").get("ready") is True
                if not self.ready:
                    self.why = "the preparer did not start (no word of torch's import)"
                self.cond.notify_all()
            if self.ready:
                process.wait()
            else:
                _kill_group(process)
                process.wait()
            with self.cond:
                self.process, self.ready = None, False
                self.cond.notify_all()

    def plan_into(self, arguments, arch, folder, pch):
        """Plans the build in folder (the preparer's files written there by this broker): (the plan,
        "planned in S s") or (None, why not)."""
        why = preparable(arguments)
        if why:
            return None, why
        t0 = time.monotonic()
        pch_info = None
        if pch:
            try:
                with open(os.path.join(pch, PCH_INFO)) as f:
                    pch_info = json.load(f)
            except (OSError, ValueError):
                pch_info = None  # the preparer says the header is not used, as a builder would
        request = {"arguments": arguments, "arch": arch, "build_directory": folder, "pch": pch,
                   "pch_info": pch_info, "split": split_setting() != "0"}
        line, last = None, None
        for _ in range(2):
            with self.cond:
                # A build that comes while torch is still imported there waits for it (a builder of
                # its own would import torch too), and for the next one where the last one died.
                self.cond.wait_for(lambda: (self.ready and self.process is not last) or not self.usable(),
                                   timeout=PREPARE_TIMEOUT_S)
                process = self.process if self.ready and self.process is not last else None
                if process is None:
                    return None, self.why if not self.usable() else "the preparer was not ready in time"
            with self.lock:
                asked = time.monotonic()
                try:
                    process.stdin.write((json.dumps(request) + "\n").encode())
                    process.stdin.flush()
                    line = _read_pipe_line(process.stdout, PREPARE_TIMEOUT_S)
                except OSError:
                    line = None
                if line is not None:
                    break
                _kill_group(process)  # dead or stuck: ended, and started again by its thread
                if time.monotonic() - asked > 1.0:
                    return None, "the preparer did not answer"
                last = process  # it had died: once more with the next one
        if line is None:
            return None, "the preparer did not answer"
        try:
            reply = json.loads(line)
        except ValueError:
            return None, "the preparer's answer did not read"
        if "plan" not in reply:
            return None, str(reply.get("declined") or "the preparer planned no build (load_inline failed first)")[:LINE_CAP]
        files = reply.get("files")
        if not isinstance(files, dict) or not isinstance(reply["plan"], dict):
            return None, "the preparer's answer is not a plan"
        for name, text in files.items():
            if not isinstance(name, str) or not _PLANNED_FILE.fullmatch(name) or name in _NOT_PLANNED or \
                    not isinstance(text, str):
                return None, f"the preparer named a file {str(name)[:100]!r}"
        try:
            for name, text in files.items():
                # The folder is this broker's until the builder starts (a spare's waits for its request).
                fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
                    f.write(text)
        except OSError as e:  # (load_inline writes its files again where it builds unplanned)
            return None, f"the plan's files were not written: {e}"
        return reply["plan"], f"by the preparer in {time.monotonic() - t0:.2f} s"



def _read_pipe_line(pipe, timeout):
    """One line from a pipe within timeout s (None: end of file, or no line in time)."""
    fd, data, deadline = pipe.fileno(), b"", time.monotonic() + timeout
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or len(data) > LINE_LIMIT:
            return None
        readable, _, _ = select.select([fd], [], [], left)
        if not readable:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        data += chunk
    return data.decode(errors="replace")


_preparer = _Preparer()


# ---- the broker: one per kwb process and cache, outside the workers' sandboxes ------------------

def _peer_gone(conn):
    if conn is None:  # a build of the broker's own (a precompiled header): nobody to leave
        return False
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _EarlySyntaxPass:
    """The broker's g++ -fsyntax-only of main.cpp, started with the build: the builder needs
    about 2 s (libtorch's loading, torch's import) before ninja starts the compile, and with
    torch's precompiled header the compile fails no sooner than this pass does (6.8 s both on
    2 cores: g++ generates no code after an error). main.cpp as load_inline will write it
    (load_inline_main_cpp) and the command from the header's recorded flags; in a sandbox of the
    builder's kind where the build's folder shows a copy of that main.cpp alone, read-only (torch
    rewrites main.cpp in the build's folder while this pass may read it), ended by the parse stop
    where the flags allow it. A compile error here is the build's only where the builder said
    (EARLY_VALID) that torch wrote those bytes and would run that command, and, with the stop,
    where split_at_parse_stop finds the answer's errors before it; else the builder's own build
    decides."""

    def __init__(self, config, arguments, staging, pch):
        self.process, self.output, self.copy, self.pch = None, None, None, pch
        self.stop, self.answer_lines, self.stopped = None, 0, None
        prefix = list(config.get("builder_prefix") or [])
        name = str(arguments.get("name", ""))
        text = load_inline_main_cpp(arguments)
        # No sandbox to show the copy at the build's path, or a name that is not a C identifier
        # (torch writes it into -DTORCH_EXTENSION_NAME unquoted): no early pass.
        if not prefix or text is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            return
        try:
            with open(os.path.join(pch, PCH_INFO)) as f:
                info = json.load(f)
            data = text.encode("utf-8")
            self.source = os.path.join(staging, "main.cpp")
            cflags = ["-include", shlex.quote(os.path.join(pch, PCH_WRAPPER)), "-Winvalid-pch",
                      f"-DTORCH_EXTENSION_NAME={name}"] + list(info["cflags"])
            self.command = syntax_command(info["cxx"], cflags, list(info["post_cflags"]), self.source)
        except (OSError, ValueError, KeyError, TypeError):
            return
        self.pch, self.staging = pch, staging
        self.copy = tempfile.mkdtemp(prefix="kwb-early-syntax-")
        # The copy g++ reads ends with the parse stop (PARSE_STOP_NAME); the record names the bytes
        # torch writes, which the builder compares.
        copied = data
        if parse_stop_usable(cflags + list(info["post_cflags"])):
            self.stop = PARSE_STOP_NAME + secrets.token_hex(8)
            self.answer_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            copied = data + (b"" if text.endswith("\n") else b"\n") + parse_stop_text(self.stop).encode()
        with open(os.path.join(self.copy, "main.cpp"), "wb") as f:
            f.write(copied)
        _write_json(os.path.join(staging, EARLY_RECORD), {"command": self.command, "source": self.source,
                                                          "sha256": hashlib.sha256(data).hexdigest()})
        self.log = tempfile.TemporaryFile()
        command = prefix + ["--ro-bind", pch, pch, "--ro-bind", self.copy, staging, "--",
                            "/bin/sh", "-c", f"cd {shlex.quote(staging)} && exec {self.command}"]
        self.process = subprocess.Popen(command, env=config.get("environment"), stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def done(self):
        if self.process is None:
            return True
        if self.output is None and self.process.poll() is not None:
            self.log.seek(0)
            self.output = self.log.read()[-MESSAGE_CAP:].decode(errors="replace")
        return self.output is not None

    def failure(self, wait_s=0.0):
        """The build's result where this pass found a compile error in what the builder builds,
        else None. wait_s: how long to wait for the pass to end."""
        if self.process is None:
            return None
        if not self.done() and wait_s > 0:
            try:
                self.process.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                pass
        # g++'s own exit for an error in the source; a compiler killed or crashed (a machine's
        # failure, perhaps not the build's) is left to the builder.
        if not self.done() or self.process.returncode != 1 or "error:" not in self.output or \
                compiler_killed(self.output) or "internal compiler error" in self.output:
            return None
        output = self.answer_output()
        if output is None or "error:" not in output:
            return None  # the answer parsed (the builder's compile decides), or the pass cannot tell
        try:
            prefix = json.loads(read_builder_file(self.staging, EARLY_VALID, 64 * 1024))["error_prefix"]
        except (ValueError, KeyError, TypeError):  # None (no such regular file) is a TypeError
            return None
        message = "RuntimeError: " + syntax_failure(prefix, self.command, self.source, output)
        failure = {"ok": False, "message": cap_message(message), "pch": self.pch_note()}
        if self.stopped == "stopped":
            failure["syntax"] = ("parsed only: g++ stopped after the answer's last line (kwb's early pass); an error "
                                 "that only the end-of-unit template instantiation finds is not in this log")
        return failure

    def answer_output(self):
        """The pass's output on the answer's lines (the parse stop's own diagnostics cut off), or
        None where the pass cannot stand for the build's compile."""
        if self.stop is None:
            return self.output
        output, self.stopped = split_at_parse_stop(self.output, self.source, self.answer_lines, self.stop)
        return output

    def pch_note(self):
        return (self.output is not None and _pch_not_taken(self.output)) or f"used: {self.pch}"

    def close(self):
        if self.process is not None:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            self.log.close()
        if self.copy is not None:
            shutil.rmtree(self.copy, ignore_errors=True)


_in_flight = [0]  # the builds this broker runs now
_in_flight_lock = threading.Lock()


def _early_pass_pays(config, arguments, alone):
    """Whether a build gets the early syntax pass. Where ninja also runs nvcc, always: it replaces
    the builder's own pass beside nvcc, started 2 s sooner. A C++-only build: always where the
    parse stop applies (the pass is then g++'s parse alone); else the pass is a second compile of
    main.cpp beside ninja's (6.5 s of a core on 2 cores) that reports an error 2 s sooner (the
    builder's start), and early_pass_for_cxx says when. config's "early_syntax_cxx": "always" or
    "never" (the tests') overrides that."""
    if arguments.get("cuda_sources") and arguments.get("with_cuda") is not False and not _split_likely(arguments):
        return True
    rule = config.get("early_syntax_cxx", "idle")
    if rule in ("always", "never"):
        return rule == "always"
    # With the parse stop the pass is g++'s parse alone (about 1 s of a core against a compile's
    # 10-18): worth it on any machine, since most small models' answers fail to build.
    flags = arguments.get("extra_cflags") or []
    if isinstance(flags, list) and all(isinstance(f, str) for f in flags) and parse_stop_usable(flags):
        return True
    try:
        load = os.getloadavg()[0]
    except OSError:
        return False
    return early_pass_for_cxx(alone, load, os.cpu_count() or 1)


def _split_likely(arguments):
    """Whether the builder will likely build the CUDA sources split (cuda_split.py): then nvcc is
    done as soon as g++ is, and the build is timed as a C++-only one for the early pass. Read from
    the sources alone (the flags are torch's to make); a wrong guess costs time, never a verdict."""
    if split_setting() == "0":
        return False
    sources = arguments.get("cuda_sources")
    sources = [sources] if isinstance(sources, str) else sources
    if not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
        return False
    try:
        cuda_split.split_cuda_source("\n".join(sources), "cuda.cu")
        return True
    except (cuda_split.NotSplit, RecursionError):
        return False


def early_pass_for_cxx(alone, load, cores):
    """A C++-only build's early pass: while it is the broker's one build (in a queue of builds the
    second compile would cost every success) on a machine that is not saturated (1-min load
    average below its cores). Most small models' answers fail to build, and on a 2-core machine
    at load 1.5-1.9 the pass reported a failure in 5.9 s against 7.9 s and cost a success nothing
    (10.0 s both; bench/results/2026-12-04-kb-build-early-request-2core.md); at load 2-5.6 it cost
    a success 2.6 s and saved a failure 1.3 s (2026-12-04-kb-build-early-pass-2core.md)."""
    return alone and load < cores


class _Spare:
    """A builder started before its build: sandboxed as _run_builder_beside starts one, its one
    writable folder a .spare-* folder in the cache, the header it expects (pch) read-only, torch
    imported, waiting for its request's path on stdin. The build runs in that folder, which
    becomes the build's staging folder once the builder has ended (hand_over: renamed while no
    process works in it, so the builder's paths hold in any sandbox). Started by _SpareKeeper's
    thread alone: bwrap's --die-with-parent (and kwb-worker's parent watch) end a process when the
    thread that started it ends, and a request's thread ends with its request."""

    def __init__(self, config, pch):
        self.pch, self.lost, self.process, self.log = pch, False, None, None
        self.view = tempfile.mkdtemp(prefix=SPARE_PREFIX, dir=config["cache_dir"])
        # Held while this broker owns the folder: a broker starting on this cache removes the spare
        # folders no live broker holds (one killed with its kwb cannot remove its own).
        self.fd = os.open(self.view, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        command = list(config.get("builder_prefix") or [])
        if command:
            command += (["--ro-bind", pch, pch] if pch else []) + ["--bind", self.view, self.view, "--"]
        command += [config["worker"], "--build-extension", "-", self.view]
        environment = config.get("environment")
        if not _preparer.usable():  # its build will import torch: done while it waits
            environment = dict(os.environ if environment is None else environment, **{SPARE_TORCH: "1"})
        try:
            # The broker's own handle: the build's messages are read through it, not by name.
            self.log = open(os.path.join(self.view, BUILDER_LOG), "w+b")
            self.process = subprocess.Popen(command, env=environment, stdin=subprocess.PIPE,
                                            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError:
            self.discard()
            raise

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def ready(self):
        return os.path.exists(os.path.join(self.view, SPARE_READY))

    def hand_over(self, staging):
        """Its folder, the build done, becomes the build's staging folder (publish's empty one
        replaced), for publish to hash and rename into place."""
        try:
            os.rename(self.view, staging)
        except OSError as e:
            raise MachineError(f"the spare builder's folder did not become the staging folder: {e}") from None
        finally:
            os.close(self.fd)  # the key's lock covers a staging folder
            self.fd = None
            if self.log is not None:
                self.log.close()
                self.log = None

    def go(self, request_path):
        """Sends the request's path: its process, or None where it died before reading it (the
        build then starts a builder of its own in this folder)."""
        try:
            self.process.stdin.write((request_path + "\n").encode())
            self.process.stdin.close()
            return self.process
        except OSError:
            self.lost = True
            self.end()
            return None

    def end(self):
        if self.process is not None:
            if self.process.poll() is None:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.process.stdin.close()
            except OSError:
                pass
            self.process.wait()
        if self.log is not None:
            self.log.close()
            self.log = None

    def discard(self):
        """Ends its process (at end of file on stdin it would end by itself, once torch is
        imported) and removes its folder, which no build took."""
        self.end()
        if self.fd is not None:
            _remove(self.view)
            os.close(self.fd)
            self.fd = None


class _SpareKeeper:
    """The broker's one spare builder: started as the broker starts and again when a build ends
    (not while it runs: on 2 cores the spare's start, a core for a second, would slow that build's
    compile), for the header the last build used, or a newly made one. A build takes it only where
    it expects that build's header (each builder sees at most its one header), else starts its own
    builder as before."""

    def __init__(self):
        self.cond = threading.Condition()
        self.spare, self.wanted, self.pending, self.config = None, None, False, None

    def start(self, config):
        if config.get("spare_builder", True) is False:
            return
        self.config = config
        self.wanted = _newest_pch(config["cache_dir"])
        self.pending = True
        threading.Thread(target=self._keep, daemon=True).start()

    def want(self, pch=None):
        """A spare for builds with this header (None: the one wanted before) unless one waits."""
        if self.config is None:
            return
        with self.cond:
            if pch is not None:
                self.wanted = pch
            self.pending = True
            self.cond.notify()

    def take(self, pch):
        """The spare for a build with this header (None: none), now its build's alone."""
        with self.cond:
            spare = self.spare
            if spare is None or spare.pch != pch:
                return None
            self.spare = None
        if not spare.alive():  # died waiting: this build starts its own; a new one after it
            spare.discard()
            return None
        return spare

    def _keep(self):
        _remove_stale_spares(self.config["cache_dir"])
        while True:
            with self.cond:
                while not self.pending:
                    self.cond.wait()
                self.pending = False
                if self.spare is not None and self.spare.alive() and self.spare.pch == self.wanted:
                    continue
                old, self.spare, pch = self.spare, None, self.wanted
            if old is not None:
                old.discard()
            try:
                spare = _Spare(self.config, pch)
            except OSError:
                continue  # no spare: builds start their own builders, as before
            with self.cond:
                self.spare = spare


_spares = _SpareKeeper()


def _newest_pch(cache_dir):
    """The cache's most recently made precompiled header, for the first spare to expect."""
    found = []
    try:
        for n in os.listdir(cache_dir):
            directory = os.path.join(cache_dir, n)
            manifest = read_manifest(directory) if n.startswith(PCH_NAME + "-") else None
            if manifest is not None and manifest.get("ok"):
                found.append((os.stat(os.path.join(directory, MANIFEST)).st_mtime, directory))
    except OSError:
        pass
    return max(found)[1] if found else None


def _remove_stale_spares(cache_dir):
    """Spare folders left by brokers that ended (their lock is free)."""
    try:
        names = [n for n in os.listdir(cache_dir) if n.startswith(SPARE_PREFIX)]
    except OSError:
        return
    for n in names:
        path = os.path.join(cache_dir, n)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _remove(path)
        except OSError:
            pass  # a live broker's
        finally:
            os.close(fd)


def _run_builder(config, conn, arguments, arch, staging, pch=None, nice=0):
    # The spare where it expects this build's header; not for the broker's own header builds,
    # which no request waits for. Its folder is the build's until the builder has ended.
    spare = None if _is_pch_request(arguments) else _spares.take(pch)
    how = "fresh" if spare is None else "spare" if spare.ready() else "spare (starting)"
    if spare is not None:
        staging, published = spare.view, staging
    request = {"arguments": arguments, "arch": arch, "pch": pch}
    if nice:
        request["nice"] = nice
    # Planned by the preparer (torch imported there once), the builder runs it without torch.
    plan, planned = _preparer.plan_into(arguments, arch, staging, pch)
    if plan is not None:
        request["plan"] = plan
    with open(os.path.join(staging, REQUEST), "w") as f:
        json.dump(request, f)
    with _in_flight_lock:
        _in_flight[0] += 1
        alone = _in_flight[0] == 1
    early = None
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    try:
        # The same rule with a spare: its ninja's compile starts within 0.05 s of the request, as
        # the pass does, and whether -fsyntax-only ends sooner than that -c was within the noise
        # on 2 cores (bench/results/2026-12-04-kb-build-warm-builder-2core.md).
        if pch and _early_pass_pays(config, arguments, alone):
            early = _EarlySyntaxPass(config, arguments, staging, pch)
        result = _run_builder_beside(config, conn, arguments, staging, pch, early, spare)
        if early is not None and result is not None:
            if not result["ok"] and os.path.exists(os.path.join(staging, EARLY_VALID)):
                # The builder's failure (nvcc's before the pass ended, say): the pass's message
                # where it fails too, as the builder's own pass beside nvcc would have made it.
                while not early.done():
                    if _peer_gone(conn):
                        return None
                    if time.monotonic() > deadline:
                        break
                    early.failure(wait_s=0.2)
                result = early.failure() or result
            elif result["ok"] and early.process is not None and early.done() and \
                    result.get("pch", "").startswith("used: "):  # what g++ said of the header in the pass
                result["pch"] = early.pch_note()
        if result is not None:
            result["builder"] = "fresh" if spare is not None and spare.lost else how
            result["planned"] = planned if plan is not None else f"not: {planned}"
            if plan is not None and result.get("torch_imported"):
                result["planned"] += " (the builder imported torch all the same)"
        return result
    finally:
        with _in_flight_lock:
            _in_flight[0] -= 1
        if early is not None:
            early.close()
        if spare is not None:
            spare.hand_over(published)
        if not _is_pch_request(arguments):
            _spares.want(pch)


def _run_builder_beside(config, conn, arguments, staging, pch, early, spare=None):
    """The sandboxed builder's result (the spare's where one took the build: staging is its
    folder); a compile error of the early pass ends it."""
    process = spare.go(os.path.join(staging, REQUEST)) if spare is not None else None
    log = spare.log if process is not None else None
    if process is None:
        command = list(config.get("builder_prefix") or [])
        if command:
            # The precompiled header's entry, read-only, where the builder's view of the cache (an
            # empty tmpfs) holds nothing else but the staging folder.
            command += (["--ro-bind", pch, pch] if pch else []) + ["--bind", staging, staging, "--"]
        command += [config["worker"], "--build-extension", os.path.join(staging, REQUEST), staging]
        _discard(os.path.join(staging, BUILDER_LOG))  # a spare that died first may have left one
        log = open(os.path.join(staging, BUILDER_LOG), "w+b")  # read through this handle, not by name
        process = subprocess.Popen(command, env=config.get("environment"), stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    try:
        while True:
            try:
                code = process.wait(timeout=0.05 if early is not None else 0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            failed = early.failure() if early is not None else None
            if failed is not None:
                return failed
            if _peer_gone(conn) or time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                if time.monotonic() > deadline:
                    return {"ok": False, "message": f"the build took over {BUILD_TIMEOUT_S} s", "transient": True}
                return None
        log_text = log_tail(log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if spare is None or log is not spare.log:
            log.close()
    try:
        result = json.loads(read_builder_file(staging, RESULT, 4 * MESSAGE_CAP))
        if isinstance(result, dict) and "ok" in result:
            return {"ok": bool(result["ok"]), "message": cap_message(str(result.get("message", ""))),
                    "pch": str(result.get("pch", ""))[:LINE_CAP], "split": str(result.get("split", ""))[:LINE_CAP],
                    "joined": str(result.get("joined", ""))[:LINE_CAP], "nice": _niceness(result.get("nice", 0)),
                    "torch_imported": bool(result.get("torch_imported", True))}
    except (ValueError, TypeError):  # TypeError: no such regular file (None)
        pass
    # No result: the builder did not run to its end. bwrap's own failures are the machine's; any
    # other end is reported to this request and not cached (the answer's build can kill itself,
    # and so can the machine).
    if log_text.lstrip().startswith("bwrap:") or code in (126, 127):
        raise MachineError(f"the build sandbox did not start (exit code {code}): {log_text.strip()[-500:]}")
    return {"ok": False, "transient": True,
            "message": cap_message(f"the build ended without a result (exit code {code}): {log_text.strip()}")}


# A request holds one answer's sources (at most 1 MiB, up to six bytes each in JSON); a reply one
# manifest. Anything longer is refused before it is all read.
LINE_LIMIT = 16 * 1024 * 1024


def _read_line(conn, limit=LINE_LIMIT):
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise ValueError("request too long")
    return bytes(data)


_pch_making = {}  # the precompiled headers this broker is making: their request's key -> when begun (monotonic s)
_pch_failed = {}  # those it will not make: key -> why (a failed build's last line, or the cap)
_pch_making_lock = threading.Lock()
# Each set of allowed extra_cflags keys a header of its own (a few hundred MB, half a minute of a
# core), and an answer can name any set (`-W` flags alone are unbounded): a cache holds at most this
# many, real answers need three or four (none or [""], -O3, -O2, -std=c++14).
MAX_PCH_HEADERS = 8


def pch_headers_in(cache_dir):
    """How many precompiled headers a cache holds (published ones: a staging folder is hidden)."""
    try:
        return sum(1 for n in os.listdir(cache_dir) if n.startswith(PCH_NAME + "-"))
    except OSError:
        return 0


def _pch_key(arguments):
    """The key of the header builds with these arguments would take, or None where none can serve them."""
    request, _ = pch_arguments(arguments)
    return None if request is None else build_key(request, "")


def pch_making_for(arguments):
    """How long (s) this broker has been making the header that builds like this one would take, or
    None where it is not making it: a build that starts without the header says so, and the record
    shows whether waiting for it would have paid (session 35: 29 of 36 cold builds went without)."""
    key = _pch_key(arguments)
    with _pch_making_lock:
        begun = _pch_making.get(key)
    return None if begun is None else time.monotonic() - begun


def _make_pch_in_background(config, arguments):
    """Starts making the precompiled header for builds like this one, once per broker and header
    (and skipped where another process holds its key): the build that asked goes on without it,
    so no build waits the header's half minute; the next ones take it. Returns why it is not made
    (its build failed in this broker, or the cache holds the most headers it makes), else None."""
    key = _pch_key(arguments)
    if key is None:
        return None
    with _pch_making_lock:
        if key in _pch_making or key in _pch_failed:
            return _pch_failed.get(key)
        held = pch_headers_in(config["cache_dir"])
        if held + len(_pch_making) >= MAX_PCH_HEADERS:
            _pch_failed[key] = f"the cache holds {held} precompiled headers, the most it makes ({MAX_PCH_HEADERS})"
            return _pch_failed[key]
        _pch_making[key] = time.monotonic()

    def make():
        try:
            made = ensure_pch(arguments, config["cache_dir"],
                              lambda a, r, staging: _run_builder(config, None, a, r, staging), block=False)
            if made is not None:
                _spares.want(made[0])  # the next builds take it: a spare that expects it
        except Exception as e:  # noqa: BLE001 (a header that is not made leaves builds as they were)
            with _pch_making_lock:
                _pch_failed[key] = "its build failed in this broker: " + (str(e).strip().splitlines() or ["?"])[-1][:300]
        finally:
            with _pch_making_lock:
                _pch_making.pop(key, None)

    threading.Thread(target=make, daemon=True).start()
    return None


def _build_with_pch(config, conn, arguments, arch, staging):
    """One build through the sandboxed builder, with the precompiled header where there is one
    (else it is started for the next builds); the entry's "pch" says which."""
    pch, why = pch_entry(arguments, config["cache_dir"])
    making_for = None
    if pch is None and why == NO_PCH_YET:
        making_for = pch_making_for(arguments)  # None: this build is the one that starts it
        why = _make_pch_in_background(config, arguments) or why
    # Without the header while it is being made: niced, so that the header's compile keeps its core.
    nice = before_header_nice() if pch is None and why == NO_PCH_YET else 0
    result = _run_builder(config, conn, arguments, arch, staging, pch, nice)
    if result is not None and pch is None:
        result["pch"] = _not_used(why, arguments)
        if making_for is not None and why == NO_PCH_YET:
            result["pch"] += f"; this broker had been making it for {making_for:.1f} s"
        if result.get("nice"):
            result["pch"] += f"; built at nice {result['nice']} meanwhile"
    return result


# One worker's (one sandbox's) share of the broker, outside every sandbox and every worker's memory
# limit: the connections it may hold open and the builds it may run at once. An answer's native code
# can reach the broker's socket, and an answer's source can state many load_inline calls; without a
# share, one answer could start any number of compilers on the host. An honest worker has one
# request open per load_inline call being made (and early_requests.MAX_EARLY_CALLS asked ahead).
MAX_PEER_CONNECTIONS = 8
MAX_PEER_BUILDS = 2
_peers = {}  # peer key -> {"connections": n, "builds": semaphore}
_peers_lock = threading.Lock()


def _peer_key(conn):
    """The sandbox a connection comes from: its process's PID namespace (each sandboxed worker has
    its own), from the kernel's record of the connecting process (SO_PEERCRED)."""
    try:
        pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]
        return os.readlink(f"/proc/{pid}/ns/pid")
    except (OSError, struct.error):
        return "unknown"


def _admit(conn):
    """The connection's peer record, its connection counted; None where that peer has
    MAX_PEER_CONNECTIONS open already (the connection is then refused)."""
    key = _peer_key(conn)
    with _peers_lock:
        peer = _peers.setdefault(key, {"key": key, "connections": 0,
                                       "builds": threading.BoundedSemaphore(MAX_PEER_BUILDS)})
        if peer["connections"] >= MAX_PEER_CONNECTIONS:
            return None
        peer["connections"] += 1
        return peer


def _serve_peer(config, conn, peer):
    try:
        _serve_one(config, conn, peer["builds"])
    finally:
        with _peers_lock:
            peer["connections"] -= 1
            if peer["connections"] == 0:  # no build of its runs: a worker that ended leaves nothing
                _peers.pop(peer["key"], None)


def _refuse(conn):
    with conn:
        try:
            conn.settimeout(1.0)
            conn.sendall((json.dumps({"machine_error": f"the build broker refused a connection: this worker has "
                                                        f"{MAX_PEER_CONNECTIONS} open already"}) + "\n").encode())
        except OSError:
            pass


def _serve_one(config, conn, builds=None):
    builds = builds or threading.BoundedSemaphore(MAX_PEER_BUILDS)

    def build(a, r, staging):
        with builds:  # this worker's builds, at most MAX_PEER_BUILDS at once
            return _build_with_pch(config, conn, a, r, staging)

    with conn:
        try:
            request = json.loads(_read_line(conn))
            arguments, arch = request["arguments"], str(request.get("arch", ""))
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be an object")
            if _is_pch_request(arguments):
                raise ValueError("a precompiled header is made by the broker alone")
            directory, manifest, cached, waited_ms, build_ms = publish(arguments, arch, config["cache_dir"], build)
            reply = {"entry": directory, "manifest": manifest, "cached": cached, "waited_ms": waited_ms,
                     "build_ms": build_ms}
        except MachineError as e:
            reply = {"machine_error": str(e)}
        except Exception as e:  # a malformed request or a broken cache: the machine's
            reply = {"machine_error": f"the build broker failed: {type(e).__name__}: {e}"}
        try:
            conn.sendall((json.dumps(reply) + "\n").encode())
        except OSError:
            pass


def _verify_headers(cache_dir):
    """The precompiled headers in the cache hash-checked once as the broker starts (verify
    remembers them), so the first build that takes one does not wait for the hashing."""
    try:
        names = sorted(os.listdir(cache_dir))
    except OSError:
        return
    for n in names:
        directory = os.path.join(cache_dir, n)
        manifest = read_manifest(directory) if n.startswith(PCH_NAME + "-") else None
        if manifest is not None and manifest.get("ok"):
            try:
                verify(directory, manifest, manifest.get("key"))
            except (BuildError, OSError):
                pass  # pch_entry says why where a build would take it


def serve_broker(config_path):
    """`kwb-worker --build-broker CONFIG`: serves build requests on the config's Unix socket until
    the process ends (with kwb: the worker binary's parent watch)."""
    try:
        with open(config_path) as f:
            config = json.load(f)
        os.remove(config_path)  # read once; kwb wrote it for this broker alone
    except OSError:
        return 0  # kwb ended before this broker started: nothing to serve
    # Before the spare and any thread: the limit every build inherits (the binary set it; a test's
    # config sets its own).
    override = config.get("build_data_limit_bytes")
    limit_build_memory(int(override) if override else None)
    _preparer.start(config)  # first: the spare asks whether there is one
    _spares.start(config)  # first: a request can come as soon as the socket is there
    path = config["socket"]
    if os.path.exists(path):
        os.remove(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(path + ".new")
    except OSError:
        return 0  # its folder went with kwb
    os.chmod(path + ".new", 0o666)
    server.listen(128)
    os.rename(path + ".new", path)  # appears when it accepts
    threading.Thread(target=_verify_headers, args=(config["cache_dir"],), daemon=True).start()
    while True:
        conn, _ = server.accept()
        peer = _admit(conn)
        if peer is None:
            threading.Thread(target=_refuse, args=(conn,), daemon=True).start()
            continue
        threading.Thread(target=_serve_peer, args=(config, conn, peer), daemon=True).start()


def _send_request(path, arguments, arch, connect_timeout_s):
    """A build request sent to the broker at path: the connection its reply comes on."""
    deadline = time.monotonic() + connect_timeout_s
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            break
        except OSError as e:
            conn.close()
            if time.monotonic() > deadline:
                raise MachineError(f"the extension build service at {path} does not answer: {e}") from None
            time.sleep(0.05)
    try:
        conn.sendall((json.dumps({"arguments": arguments, "arch": arch}, default=repr) + "\n").encode())
    except OSError:
        conn.close()
        raise
    return conn


def _reply(conn):
    """The broker's reply on a request's connection: (directory, manifest, cached, waited_ms,
    build_ms) or MachineError."""
    with conn:
        reply = _read_line(conn)
    if not reply:
        raise MachineError("the extension build service closed the connection without an answer")
    reply = json.loads(reply)
    if "machine_error" in reply:
        raise MachineError(reply["machine_error"])
    return reply["entry"], reply["manifest"], reply["cached"], reply["waited_ms"], reply["build_ms"]


def ask_broker(path, arguments, arch, connect_timeout_s=60.0):
    """A worker's request: (directory, manifest, cached, waited_ms, build_ms) or MachineError."""
    return _reply(_send_request(path, arguments, arch, connect_timeout_s))


def build_in_process(arguments, arch, staging, cache_dir=None):
    """A build in this process (no broker): with the precompiled header where one is in the cache.
    It makes none (that is the broker's, for a service that builds many answers; ensure_pch makes
    one by hand)."""
    pch, why = pch_entry(arguments, cache_dir) if cache_dir and not _is_pch_request(arguments) else (None, "")
    result = build_into(arguments, arch, staging, pch)
    if pch is None and why and not result.get("pch"):
        result["pch"] = _not_used(why, arguments)
    return result


# early_requests.py's reply to a build asked for before the answer's module ran (set where it is
# loaded; None: load_inline asks the broker itself).
early_reply = None


def forget_module_of_other_library(name, path):
    """Replaced by the worker's C function of that name (pythonhost.cpp: pybind11 3 hands back the
    module of an earlier library with the same name). Python has no access to that cache, so where
    these files run without the worker (tests, the broker) there is nothing to forget."""
    return False


def entry_for(arguments, arch, cache_dir):
    """The verified entry of a load_inline call: (directory, manifest, cached, waited_ms, build_ms).
    Through the broker where kwb started one (KWB_BUILD_BROKER), else built in this process."""
    broker = os.environ.get("KWB_BUILD_BROKER")
    arguments = json.loads(json.dumps(arguments, default=repr))  # what the broker would see
    if broker:
        found = (early_reply(arguments, arch) if early_reply else None) or ask_broker(broker, arguments, arch)
    else:
        if not cache_dir:
            raise BuildError("the worker has no extension cache folder (KWB_EXTENSION_CACHE)")
        if _is_pch_request(arguments):
            raise BuildError("a precompiled header is not an answer's build")
        found = publish(arguments, arch, cache_dir, lambda a, r, staging: build_in_process(a, r, staging, cache_dir))
    directory, manifest = found[0], found[1]
    if manifest.get("ok"):
        verify(directory, manifest, build_key(arguments, arch))
    return found
