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
import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

# Bumped when the build rule or the entry's layout changes, so older entries are not taken.
CACHE_FORMAT = 2
MANIFEST = "kwb-entry.json"
REQUEST = "kwb-request.json"
RESULT = "kwb-build-result.json"
# A build's message (the compiler's output, as load_inline raises it) is kept up to this size;
# each line up to LINE_CAP characters.
MESSAGE_CAP = 64 * 1024
LINE_CAP = 2000
# Files a finished build does not need (the loader reads the library only).
INTERMEDIATE_SUFFIXES = (".o", ".ninja_deps", ".ninja_log", ".cuda.o")
BUILD_TIMEOUT_S = 1800


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
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(directory):
    try:
        with open(os.path.join(directory, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == CACHE_FORMAT else None


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
    for rel, digest in files.items():
        if _hash_file(os.path.join(directory, rel)) != digest:
            raise BuildError(f"the extension cache entry {directory} was changed after its build ({rel}: hash "
                             "mismatch); remove it to build again")


def _write_json(path, record):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)


def _seal(directory):
    """Read-only files and folders: a finished entry is not written again."""
    for root, dirs, names in os.walk(directory, topdown=False):
        for n in names:
            os.chmod(os.path.join(root, n), 0o444)
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o555)
    os.chmod(directory, 0o555)


def _remove(directory):
    def writable(func, path, _):
        try:
            os.chmod(os.path.dirname(path), 0o755)
            os.chmod(path, 0o755)
            func(path)
        except OSError:
            pass
    shutil.rmtree(directory, onerror=writable)


def publish(arguments, arch, cache_dir, run_build):
    """The entry of these load_inline arguments: found, or built by run_build(arguments, arch,
    staging) -> {"ok", "message"} (None: cancelled) and published. One build of a key at a time
    over every process sharing the cache (flock: the kernel drops it when its holder dies).
    Returns (directory, manifest, cached, waited_ms, build_ms)."""
    name = str(arguments.get("name", "ext"))
    key = build_key(arguments, arch)
    directory = entry_dir(cache_dir, name, key)
    manifest = read_manifest(directory)
    if manifest is not None:
        return directory, manifest, True, 0.0, 0.0
    os.makedirs(cache_dir, exist_ok=True)
    lock_fd = os.open(os.path.join(cache_dir, f".{os.path.basename(directory)}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        t_wait = time.monotonic()
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
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
            for n in (REQUEST, RESULT):
                if os.path.lexists(os.path.join(staging, n)):
                    os.remove(os.path.join(staging, n))
            files = {}
            ok = bool(result.get("ok"))
            if ok:
                library = os.path.join(staging, f"{name}.so")
                if not os.path.isfile(library) or os.path.islink(library):
                    ok, result = False, {"ok": False, "message": f"the build made no {name}.so"}
            for root, dirs, names in os.walk(staging):
                for n in names:
                    path = os.path.join(root, n)
                    rel = os.path.relpath(path, staging)
                    # Only regular files stay (a link could point anywhere); intermediates go.
                    if not ok or os.path.islink(path) or not stat.S_ISREG(os.lstat(path).st_mode) or \
                            n.endswith(INTERMEDIATE_SUFFIXES) or n == "lock":
                        os.remove(path)
                        continue
                    files[rel] = _hash_file(path)
            manifest = {"format": CACHE_FORMAT, "key": key, "name": name, "ok": ok,
                        "message": "" if ok else cap_message(result.get("message", "the build failed")),
                        "files": files, "build_ms": build_ms}
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


def build_into(arguments, arch, out_dir):
    """Builds with torch's load_inline into out_dir without loading the result (its import step
    replaced): {"ok": True} or {"ok": False, "message": load_inline's error}."""
    import torch.utils.cpp_extension as cpp
    arguments = dict(arguments)
    arguments["build_directory"] = out_dir
    arguments["verbose"] = False
    name = str(arguments.get("name", "ext"))
    # The name's version is per process in torch (name_v1 after a second source): always 0 here.
    cpp.JIT_EXTENSION_VERSIONER.entries.pop(name, None)
    archs = _cuda_arch_list(arch)
    old = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if archs:
        os.environ["TORCH_CUDA_ARCH_LIST"] = archs
    real_import = cpp._import_module_from_library
    cpp._import_module_from_library = lambda *a, **k: None
    load_inline = getattr(cpp, "_kwb_real_load_inline", cpp.load_inline)
    try:
        load_inline(**arguments)
        return {"ok": True}
    except Exception as e:  # the compiler's messages, as load_inline raises them
        return {"ok": False, "message": cap_message(f"{type(e).__name__}: {e}")}
    finally:
        cpp._import_module_from_library = real_import
        if archs:
            if old is None:
                os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
            else:
                os.environ["TORCH_CUDA_ARCH_LIST"] = old


def build_extension(request_path, out_dir):
    """`kwb-worker --build-extension REQUEST OUT`: the builder in its own sandbox."""
    with open(request_path) as f:
        request = json.load(f)
    result = build_into(request["arguments"], request.get("arch", ""), out_dir)
    _write_json(os.path.join(out_dir, RESULT), result)
    return 0


# ---- the broker: one per kwb process and cache, outside the workers' sandboxes ------------------

def _peer_gone(conn):
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _run_builder(config, conn, arguments, arch, staging):
    with open(os.path.join(staging, REQUEST), "w") as f:
        json.dump({"arguments": arguments, "arch": arch}, f)
    command = list(config.get("builder_prefix") or [])
    if command:
        command += ["--bind", staging, staging, "--"]
    command += [config["worker"], "--build-extension", os.path.join(staging, REQUEST), staging]
    log_path = os.path.join(staging, ".kwb-builder.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, env=config.get("environment"), stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    try:
        while True:
            try:
                code = process.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if _peer_gone(conn) or time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                if time.monotonic() > deadline:
                    return {"ok": False, "message": f"the build took over {BUILD_TIMEOUT_S} s"}
                return None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with open(log_path, "rb") as f:
        log_text = f.read()[-8192:].decode(errors="replace")
    os.remove(log_path)
    result_path = os.path.join(staging, RESULT)
    try:
        with open(result_path) as f:
            result = json.load(f)
        if isinstance(result, dict) and "ok" in result:
            return {"ok": bool(result["ok"]), "message": str(result.get("message", ""))}
    except (OSError, ValueError):
        pass
    # No result: the builder did not run to its end. bwrap's own failures are the machine's.
    if log_text.lstrip().startswith("bwrap:") or code in (126, 127):
        raise MachineError(f"the build sandbox did not start (exit code {code}): {log_text.strip()[-500:]}")
    return {"ok": False, "message": cap_message(f"the build ended without a result (exit code {code}): {log_text.strip()}")}


def _read_line(conn, limit=256 * 1024 * 1024):
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise ValueError("request too long")
    return bytes(data)


def _serve_one(config, conn):
    with conn:
        try:
            request = json.loads(_read_line(conn))
            arguments, arch = request["arguments"], str(request.get("arch", ""))
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be an object")
            directory, manifest, cached, waited_ms, build_ms = publish(
                arguments, arch, config["cache_dir"],
                lambda a, r, staging: _run_builder(config, conn, a, r, staging))
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


def serve_broker(config_path):
    """`kwb-worker --build-broker CONFIG`: serves build requests on the config's Unix socket until
    the process ends (with kwb: the worker binary's parent watch)."""
    try:
        with open(config_path) as f:
            config = json.load(f)
        os.remove(config_path)  # read once; kwb wrote it for this broker alone
    except OSError:
        return 0  # kwb ended before this broker started: nothing to serve
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
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve_one, args=(config, conn), daemon=True).start()


def ask_broker(path, arguments, arch, connect_timeout_s=60.0):
    """A worker's request: (directory, manifest, cached, waited_ms, build_ms) or MachineError."""
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
    with conn:
        conn.sendall((json.dumps({"arguments": arguments, "arch": arch}, default=repr) + "\n").encode())
        reply = _read_line(conn)
    if not reply:
        raise MachineError("the extension build service closed the connection without an answer")
    reply = json.loads(reply)
    if "machine_error" in reply:
        raise MachineError(reply["machine_error"])
    return reply["entry"], reply["manifest"], reply["cached"], reply["waited_ms"], reply["build_ms"]


def build_in_process(arguments, arch, staging):
    return build_into(arguments, arch, staging)


def entry_for(arguments, arch, cache_dir):
    """The verified entry of a load_inline call: (directory, manifest, cached, waited_ms, build_ms).
    Through the broker where kwb started one (KWB_BUILD_BROKER), else built in this process."""
    broker = os.environ.get("KWB_BUILD_BROKER")
    arguments = json.loads(json.dumps(arguments, default=repr))  # what the broker would see
    if broker:
        found = ask_broker(broker, arguments, arch)
    else:
        if not cache_dir:
            raise BuildError("the worker has no extension cache folder (KWB_EXTENSION_CACHE)")
        found = publish(arguments, arch, cache_dir, build_in_process)
    directory, manifest = found[0], found[1]
    if manifest.get("ok"):
        verify(directory, manifest, build_key(arguments, arch))
    return found
