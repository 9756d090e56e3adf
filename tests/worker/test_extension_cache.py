#!/usr/bin/env python3
# The extension cache behind load_inline (src/worker/python/kernelbench_host.py), on any machine: torch is
# replaced by a stand-in package whose load_inline keeps torch's own rule for a shared build folder
# (a FileBaton: the file `lock` made with O_EXCL, the others wait while it exists, then load) and
# logs every build it runs. Each case runs workers as separate processes sharing one cache, as the
# compile pool's and the GPU's workers do.
#   one_build_per_key       two workers loading the same sources at once: one build, both load it
#   killed_build_is_retried a worker killed while building (its baton left behind): the next one
#                           builds, instead of waiting for the baton forever (torch's FileBaton)
#   failure_is_cached       a build that fails is the same compile error again, without a second build
#   broker_builds_once_for_two_workers   the same through the build broker (extension_cache.py), which
#                           alone writes the cache: one build, a sealed entry, no staging folder left
#   changed_entry_is_refused  a changed or added file in an entry fails its hash check before loading
#   broker_cancels_when_the_worker_goes  the worker killed mid-build: the builder is killed, nothing published
#   verify_remembers_until_a_file_changes  an entry's hashes are checked once per process while its
#                           files keep their identity (the broker's header before each build); a
#                           chmod-ed file is hashed again, a changed one refused
#   builds_in_one_process_take_turns  build_into from several threads of one process (it replaces
#                           torch's module functions and sets TORCH_CUDA_ARCH_LIST while it builds):
#                           one at a time, and torch's functions and the environment are as they
#                           were once all are done
#   request_is_served_by_the_spare  the broker's spare builder (started before any request) builds
#                           the first request: no builder process is started for it
#   spare_is_never_reused   two requests, two spares: each process builds once and ends; the
#                           next spare is started when the build ends
#   broker_end_leaves_no_spare  the broker killed (as kwb's end kills it): its spare ends, and the
#                           next broker on the cache removes the folder it left
#   dead_spare_is_replaced  a spare killed before its request: the request is built all the same
#                           (by a builder of its own), and a new spare builds the next one
#   hostile_build_reads_and_changes_nothing_outside  a build that links its log, its result and
#                           a folder to the user's files (and ends without a result, or succeeds):
#                           nothing of them is read, chmod-ed or kept; the failure is not cached
#   killed_compiler_is_not_cached  a compiler killed by SIGKILL: the machine's failure (MachineError,
#                           the worker's no_device), not cached, built again next time
#   runaway_compiler_stops_at_the_data_limit  a real g++ made to grow without end (`#include
#                           "/dev/zero"`) under the broker: it stops at the broker's RLIMIT_DATA with
#                           its own "out of memory", the answer's compile error, cached and named
#   broker_limits_one_workers_share  one worker's builds run two at a time, its connections eight
#   builds_before_the_header_run_niced  the broker's builder is asked for nice 10 where the header
#                           is being made (KWB_BEFORE_HEADER_NICE 0-19 instead), for none with it
#   spare_sees_only_its_folder  (bwrap) a spare in a sandbox like kwb's (an empty tmpfs over the
#                           cache): its view of the cache is its own folder, not the other build's
#                           staging folder or entry
#   precompiled_headers_are_capped  a cache that holds MAX_PCH_HEADERS torch headers makes no more
#                           (each flag set keys its own; an answer can name any set), saying why
#   parse_stop_cuts_at_the_answers_end  the early pass's parse stop with the real g++: every error
#                           of the answer's lines is kept (the full pass's messages for them), the
#                           stop's own are cut; an answer that reaches the stop with no error, a
#                           missing #include (fatal before it), and answers the stop cannot stand for
#                           (a brace left open, an unterminated #if, a macro that rewrites it)
# Usage: test_extension_cache.py PATH/TO/kernelbench_host.py
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

HOST = os.path.abspath(sys.argv[1])
EXT = os.path.join(os.path.dirname(HOST), "extension_cache.py")
ROOT = tempfile.mkdtemp(prefix="kwb-extcache-")
STUB = os.path.join(ROOT, "stub")
BUILD_LOG = os.path.join(ROOT, "builds.log")

TORCH_STUB = {
    "torch/__init__.py": """
        __version__ = "0.0-stub"
        class _Version: cuda = "0.0"
        version = _Version()
        class Tensor: pass
        from . import nn, utils, cuda
        """,
    "torch/cuda.py": "",
    "torch/version.py": "__version__ = '0.0-stub'\ncuda = '0.0'\n",
    "torch/nn/__init__.py": "class Module: pass\nfrom . import functional\n",
    "torch/nn/functional.py": "",
    "torch/utils/__init__.py": "from . import cpp_extension, dlpack\n",
    "torch/utils/dlpack.py": "def from_dlpack(x): return x\ndef to_dlpack(x): return x\n",
    "torch/utils/cpp_extension.py": """
        import json, os, time, types
        class _Versioner:
            def __init__(self): self.entries = {}
        JIT_EXTENSION_VERSIONER = _Versioner()

        def _import_module_from_library(name, path, is_python_module):
            return types.SimpleNamespace(name=name, path=path)

        def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                        extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                        build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                        with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False):
            # torch's rule for one build folder: a baton file; who cannot make it waits while it exists.
            baton = os.path.join(build_directory, "lock")
            try:
                fd = os.open(baton, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                deadline = time.monotonic() + 10  # torch waits forever; the stand-in gives up
                while os.path.exists(baton):
                    if time.monotonic() > deadline:
                        raise RuntimeError("stub: the build folder's baton was never released")
                    time.sleep(0.02)
                return _import_module_from_library(name, build_directory, True)
            os.close(fd)
            with open(os.environ["STUB_BUILD_LOG"], "a") as log:
                # What the builder sees of a folder (STUB_LIST: the cache), where asked.
                seen = json.dumps(sorted(os.listdir(os.environ["STUB_LIST"])), separators=(",", ":")) \\
                    if os.environ.get("STUB_LIST") else ""
                log.write(f"{os.getpid()} {name} {seen}\\n")
            gate = os.environ.get("STUB_BUILD_GATE")
            while gate and not os.path.exists(gate):
                time.sleep(0.02)
            if "killed-compiler" in (cuda_sources or ""):
                os.remove(baton)
                raise RuntimeError(f"Error building extension '{name}': c++: fatal error: Killed signal "
                                   "terminated program cc1plus")
            if "hostile" in (cuda_sources or ""):
                # What an answer's build can do to its folder (a -wrapper of its extra_cflags runs
                # any program there): links to the user's files where the broker reads and seals.
                for n in (".kwb-builder.log", "kwb-build-result.json"):
                    if os.path.lexists(os.path.join(build_directory, n)):
                        os.remove(os.path.join(build_directory, n))
                    os.symlink(os.environ["STUB_SECRET"], os.path.join(build_directory, n))
                os.symlink(os.environ["STUB_VICTIM"], os.path.join(build_directory, "evil"))
                os.symlink(os.environ["STUB_SECRET"], os.path.join(build_directory, "leak.so"))
                if "exit" in cuda_sources:
                    os.remove(baton)
                    os._exit(137)  # no result: the broker reads the log and the result itself
            if "dev-zero" in (cuda_sources or ""):
                # A real compiler the sources make grow without end, as torch raises its failure.
                import subprocess
                source = os.path.join(build_directory, "main.cpp")
                with open(source, "w") as f:
                    f.write('#include "/dev/zero"\\n')
                # A safety net of the test's own, above the broker's limit: where that limit is
                # missing, g++ stops here without the broker's note instead of taking the machine.
                import resource
                net = lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
                run = subprocess.run(["g++", "-fsyntax-only", source], capture_output=True, text=True, timeout=120,
                                     preexec_fn=net)
                os.remove(baton)
                raise RuntimeError(f"Error building extension '{name}': {run.stdout}{run.stderr}")
            if "error" in (cuda_sources or ""):
                os.remove(baton)
                raise RuntimeError(f"Error building extension '{name}': main.cu(1): error: stub")
            open(os.path.join(build_directory, f"{name}.so"), "w").close()
            os.remove(baton)
            return _import_module_from_library(name, build_directory, True)
        """,
}

LOADER = """
import importlib.util, json, os, sys
sys.path.insert(0, {stub!r})
spec = importlib.util.spec_from_file_location("_kwb_extensions", {ext!r})
ext = importlib.util.module_from_spec(spec)
sys.modules["_kwb_extensions"] = ext
spec.loader.exec_module(ext)
"""

# The builder a broker starts (kwb-worker --build-extension REQUEST OUT, here without a sandbox).
BUILDER = "#!" + sys.executable + "\n" + LOADER + """
import torch.utils.cpp_extension
assert sys.argv[1] == "--build-extension"
with open(os.environ["STUB_BUILD_LOG"] + ".starts", "a") as log:  # each builder process: pid, REQUEST, OUT
    log.write(f"{os.getpid()} {sys.argv[2]} {sys.argv[3]}\\n")
sys.exit(ext.build_extension(sys.argv[2], sys.argv[3]))
"""

BROKER = LOADER + """
ext.serve_broker(sys.argv[1])
"""

WORKER = LOADER + """
spec = importlib.util.spec_from_file_location("_kwb_host", {host!r})
host = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host)
host.configure(sys.argv[1], "sm_90")
try:
    host._cpp.load_inline(name="ext", cpp_sources="int f();", cuda_sources=sys.argv[2], functions=["f"])
    print(json.dumps({{"ok": True, "builds": host._builds}}))
except host.BuildError as e:
    print(json.dumps({{"ok": False, "message": str(e)}}))
except host.MachineError as e:
    print(json.dumps({{"ok": False, "machine": True, "message": str(e)}}))
"""


def setup():
    for path, text in TORCH_STUB.items():
        full = os.path.join(STUB, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))
    for name, text in (("worker.py", WORKER), ("broker.py", BROKER), ("builder.py", BUILDER)):
        with open(os.path.join(ROOT, name), "w") as f:
            f.write(text.format(stub=STUB, host=HOST, ext=EXT) if name != "builder.py" else
                    text.replace("{stub!r}", repr(STUB)).replace("{ext!r}", repr(EXT)))
    os.chmod(os.path.join(ROOT, "builder.py"), 0o755)


def start(cache, cuda, gate=None, broker=None):
    env = dict(os.environ, STUB_BUILD_LOG=BUILD_LOG)
    env.pop("STUB_BUILD_GATE", None)
    env.pop("KWB_BUILD_BROKER", None)
    if broker:
        env["KWB_BUILD_BROKER"] = broker
    if gate:
        env["STUB_BUILD_GATE"] = gate
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "worker.py"), cache, cuda], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(process):
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def builds():
    if not os.path.exists(BUILD_LOG):
        return []
    with open(BUILD_LOG) as f:
        return [line.split() for line in f if line.strip()]


def wait_for(condition, what, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def blocked_on_flock(pid):
    # /proc/locks lists a process waiting for a lock with "->" before its entry.
    with open("/proc/locks") as f:
        return any("->" in line and "FLOCK" in line and f" {pid} " in line for line in f)


CASE = [""]  # the cache of the case that runs


def fresh(name):
    cache = CASE[0] = os.path.join(ROOT, name)
    os.makedirs(cache)
    for log in (BUILD_LOG, BUILD_LOG + ".starts"):
        if os.path.exists(log):
            os.remove(log)
    return cache


def one_build_per_key():
    cache = fresh("same-key")
    gate = os.path.join(ROOT, "gate-same-key")
    first = start(cache, "__global__ void k() {}", gate)
    wait_for(lambda: len(builds()) == 1, "the first build")
    second = start(cache, "__global__ void k() {}", gate)
    wait_for(lambda: blocked_on_flock(second.pid), "the second worker to wait for the first's build")
    open(gate, "w").close()
    a, b = result(first), result(second)
    assert a["ok"] and b["ok"], (a, b)
    assert len(builds()) == 1, builds()
    assert a["builds"][0]["cached"] is False and b["builds"][0]["cached"] is True, (a, b)


def killed_build_is_retried():
    cache = fresh("killed")
    gate = os.path.join(ROOT, "gate-never")  # never opened: the first build hangs until killed
    first = start(cache, "__global__ void k2() {}", gate)
    wait_for(lambda: len(builds()) == 1, "the first build")
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()
    second = start(cache, "__global__ void k2() {}")
    b = result(second)
    assert b.get("ok"), b
    assert len(builds()) == 2, builds()  # built again, by the second worker
    assert b["builds"][0]["cached"] is False


def failure_is_cached():
    cache = fresh("failed")
    a = result(start(cache, "error here"))
    assert not a["ok"] and "main.cu(1): error: stub" in a["message"], a
    b = result(start(cache, "error here"))
    assert not b["ok"] and b["message"] == a["message"], (a, b)
    assert len(builds()) == 1, builds()


def start_broker(cache, gate=None, prefix=(), config_extra=None, **env_extra):
    """A broker as kwb starts one (without the builder's sandbox here, unless prefix): its socket's path."""
    sock = os.path.join(ROOT, f"broker-{os.path.basename(cache)}.sock")
    env = dict(os.environ, STUB_BUILD_LOG=BUILD_LOG, STUB_SECRET=SECRET, STUB_VICTIM=VICTIM, **env_extra)
    env.pop("STUB_BUILD_GATE", None)
    if gate:
        env["STUB_BUILD_GATE"] = gate
    config = os.path.join(ROOT, f"broker-{os.path.basename(cache)}.json")
    with open(config, "w") as f:
        json.dump({"socket": sock, "cache_dir": cache, "worker": os.path.join(ROOT, "builder.py"),
                   "builder_prefix": list(prefix), "environment": env, **(config_extra or {})}, f)
    process = subprocess.Popen([sys.executable, os.path.join(ROOT, "broker.py"), config],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    BROKERS.append(process)
    wait_for(lambda: os.path.exists(sock), "the broker's socket")
    return sock


BROKERS = []
# A file and a folder of "the user's", which a hostile build links to from its folder.
SECRET = os.path.join(ROOT, "secret.json")
VICTIM = os.path.join(ROOT, "victim")


def make_secrets():
    with open(SECRET, "w") as f:
        json.dump({"ok": False, "message": "TOPSECRET the user's file"}, f)
    os.makedirs(VICTIM, exist_ok=True)
    os.chmod(VICTIM, 0o700)


def hostile_build_reads_and_changes_nothing_outside():
    """The broker works outside every sandbox on a folder the answer's build wrote: it reads the
    build's log and result only as regular files of that folder, through no link, and never chmods
    or keeps a link; a build that ended without a result is reported and not cached."""
    make_secrets()
    cache = fresh("broker-hostile")
    sock = start_broker(cache)
    a = result(start(cache, "__global__ void h1() {} // hostile exit", broker=sock))
    assert not a["ok"] and "ended without a result" in a["message"], a
    assert "TOPSECRET" not in a["message"], a
    assert os.stat(VICTIM).st_mode & 0o777 == 0o700, oct(os.stat(VICTIM).st_mode)
    b = result(start(cache, "__global__ void h1() {} // hostile exit", broker=sock))
    assert len(builds()) == 2, builds()  # not cached: built again
    assert "TOPSECRET" not in b["message"], b
    # A build that succeeds beside its links: the entry is the library alone, the links gone.
    c = result(start(cache, "__global__ void h2() {} // hostile", broker=sock))
    assert c["ok"], c
    entry = c["builds"][0]["build_dir"]
    assert sorted(os.listdir(entry)) == ["ext.so", "kwb-entry.json"], os.listdir(entry)
    assert os.stat(VICTIM).st_mode & 0o777 == 0o700, oct(os.stat(VICTIM).st_mode)
    with open(SECRET) as f:
        assert "TOPSECRET" in f.read()


def killed_compiler_is_not_cached():
    cache = fresh("broker-killed-compiler")
    sock = start_broker(cache)
    a = result(start(cache, "killed-compiler", broker=sock))
    assert not a["ok"] and "Killed signal terminated program" in a["message"], a
    assert a.get("machine") and "SIGKILL" in a["message"], a  # the machine's failure, not the answer's
    b = result(start(cache, "killed-compiler", broker=sock))
    assert not b["ok"] and b.get("machine"), b
    assert len(builds()) == 2, builds()  # a compiler killed by a signal says nothing of the sources
    assert not [n for n in os.listdir(cache) if not n.startswith(".")], os.listdir(cache)


def runaway_compiler_stops_at_the_data_limit():
    """The broker has its own RLIMIT_DATA (here 512 MiB from its config; kwb-worker's broker sets
    buildDataLimitForTotal of the machine, half of it within 3 and 8 GiB), which its builds
    inherit: a compiler the sources make grow stops there with its own
    message, a compile error of the answer (cached: the same sources do the same again), with the
    limit named. Without it, cc1plus doubles its buffer until the machine's memory is gone."""
    cache = fresh("broker-runaway")
    limit = 512 << 20
    sock = start_broker(cache, config_extra={"build_data_limit_bytes": limit})
    broker = BROKERS[-1]
    with open(f"/proc/{broker.pid}/limits") as f:
        row = [line for line in f if line.startswith("Max data size")][0].split()
    assert row[3:5] == [str(limit), str(limit)], row  # soft and hard: a build cannot raise it
    t0 = time.monotonic()
    a = result(start(cache, "__global__ void r1() {} // dev-zero", broker=sock))
    assert not a["ok"] and not a.get("machine"), a
    assert "out of memory" in a["message"] and "0.5 GiB of data memory" in a["message"], a
    assert time.monotonic() - t0 < 60, "the compiler ran on instead of stopping at the limit"
    b = result(start(cache, "__global__ void r1() {} // dev-zero", broker=sock))
    assert not b["ok"] and b["message"] == a["message"], (a, b)
    assert len(builds()) == 1, builds()  # cached: the answer's compile error


def broker_limits_one_workers_share():
    """One worker's (one sandbox's: here every process of the test's) builds run at most
    MAX_PEER_BUILDS at a time, and it holds at most MAX_PEER_CONNECTIONS connections."""
    import socket
    cache = fresh("broker-share")
    gate = os.path.join(ROOT, "gate-share")
    sock = start_broker(cache, gate)
    workers = [start(cache, f"__global__ void q{i}() {{}}", broker=sock) for i in range(3)]
    try:
        wait_for(lambda: len(builds()) == 2, "two builds")
        time.sleep(1.0)
        assert len(builds()) == 2, builds()  # the third waits for one of them
    finally:
        open(gate, "w").close()  # a failed case leaves no builder waiting for it
    assert all(result(w)["ok"] for w in workers)
    assert len(builds()) == 3, builds()
    held = []
    for _ in range(8):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(sock)
        held.append(c)
    time.sleep(0.3)
    extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    extra.connect(sock)
    extra.settimeout(10)
    reply = extra.recv(4096).decode()
    assert "refused a connection" in reply, reply
    for c in held + [extra]:
        c.close()
    time.sleep(0.3)
    assert result(start(cache, "__global__ void q9() {}", broker=sock))["ok"]  # its share is back


def broker_builds_once_for_two_workers():
    cache = fresh("broker-same-key")
    gate = os.path.join(ROOT, "gate-broker")
    sock = start_broker(cache, gate)
    first = start(cache, "__global__ void k3() {}", broker=sock)
    wait_for(lambda: len(builds()) == 1, "the broker's build")
    second = start(cache, "__global__ void k3() {}", broker=sock)
    time.sleep(0.3)
    open(gate, "w").close()
    a, b = result(first), result(second)
    assert a["ok"] and b["ok"], (a, b)
    assert len(builds()) == 1, builds()
    assert sorted([a["builds"][0]["cached"], b["builds"][0]["cached"]]) == [False, True], (a, b)
    entry = a["builds"][0]["build_dir"]
    with open(os.path.join(entry, "kwb-entry.json")) as f:
        manifest = json.load(f)
    assert manifest["ok"] and list(manifest["files"]) == ["ext.so"], manifest
    # Published whole and read-only: no staging folder left, the entry's files not writable.
    assert not [n for n in os.listdir(cache) if n.startswith(".staging")], os.listdir(cache)
    assert not os.stat(os.path.join(entry, "ext.so")).st_mode & 0o222


def changed_entry_is_refused():
    cache = fresh("tampered")
    a = result(start(cache, "__global__ void k4() {}"))
    assert a["ok"], a
    library = os.path.join(a["builds"][0]["build_dir"], "ext.so")
    os.chmod(os.path.dirname(library), 0o755)
    os.chmod(library, 0o644)
    with open(library, "w") as f:
        f.write("not what was built")
    b = result(start(cache, "__global__ void k4() {}"))
    assert not b["ok"] and "changed after its build" in b["message"], b
    planted = os.path.join(os.path.dirname(library), "planted.so")
    with open(library, "w"):
        pass
    open(planted, "w").close()
    c = result(start(cache, "__global__ void k4() {}"))
    assert not c["ok"] and "changed after its build" in c["message"] and "planted.so" in c["message"], c


def broker_cancels_when_the_worker_goes():
    cache = fresh("broker-cancel")
    gate = os.path.join(ROOT, "gate-broker-never")
    sock = start_broker(cache, gate)
    first = start(cache, "__global__ void k5() {}", broker=sock)
    wait_for(lambda: len(builds()) == 1, "the broker's build")
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()
    builder_pid = int(builds()[0][0])
    wait_for(lambda: not os.path.exists(f"/proc/{builder_pid}") or
             open(f"/proc/{builder_pid}/stat").read().split()[2] == "Z", "the builder to be killed")
    wait_for(lambda: not [n for n in os.listdir(cache) if n.startswith(".staging")], "the staging folder to go")
    assert not [n for n in os.listdir(cache) if not n.startswith(".")], os.listdir(cache)


def own_extension_cache(name, stub=False):
    """A copy of extension_cache.py of this process's own (its module state apart from any other
    case's), with the stand-in torch first on the path where `stub`."""
    import importlib.util
    if stub:
        sys.path.insert(0, STUB)
    spec = importlib.util.spec_from_file_location(name, EXT)
    ec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ec)
    return ec


def verify_remembers_until_a_file_changes():
    ec = own_extension_cache("extension_cache_here")
    cache = fresh("remembered")

    def build(arguments, arch, staging):
        with open(os.path.join(staging, "ext.so"), "wb") as f:
            f.write(b"library bytes")
        return {"ok": True}

    directory, manifest, _, _, _ = ec.publish({"name": "ext", "cpp_sources": "x"}, "", cache, build)
    hashed = []
    real = ec._hash_file
    ec._hash_file = lambda path: hashed.append(path) or real(path)
    ec.verify(directory, manifest, manifest["key"])
    assert len(hashed) == 1, hashed
    ec.verify(directory, manifest, manifest["key"])
    assert len(hashed) == 1, f"hashed again without a change: {hashed}"
    library = os.path.join(directory, "ext.so")
    os.chmod(library, 0o400)  # the same bytes, another ctime
    ec.verify(directory, manifest, manifest["key"])
    assert len(hashed) == 2, hashed
    os.chmod(directory, 0o755)
    os.chmod(library, 0o644)
    with open(library, "r+b") as f:
        f.write(b"LIBRARY")
    try:
        ec.verify(directory, manifest, manifest["key"])
        raise AssertionError("a changed file passed")
    except ec.BuildError as e:
        assert "hash mismatch" in str(e), e


def builds_in_one_process_take_turns():
    sys.path.insert(0, STUB)
    import torch.utils.cpp_extension as cpp
    ec = own_extension_cache("extension_cache_turns")
    real_import = cpp._import_module_from_library
    arch_before = os.environ.get("TORCH_CUDA_ARCH_LIST")
    inside, most, seen_arch = [0], [0], []
    count = threading.Lock()

    def load_inline(**arguments):  # what torch's would do to the process's state, slowly
        with count:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        seen_arch.append((arguments["name"], os.environ.get("TORCH_CUDA_ARCH_LIST")))
        time.sleep(0.2)
        with count:
            inside[0] -= 1

    cpp._kwb_real_load_inline = load_inline
    results = {}
    try:
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, ec.build_into(
            {"name": f"turn{i}", "cpp_sources": "int f();"}, "sm_90" if i % 2 else "", fresh(f"turns{i}"))))
            for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        del cpp._kwb_real_load_inline
    assert all(r.get("ok") for r in results.values()) and len(results) == 4, results
    assert most[0] == 1, f"{most[0]} builds ran at once in one process"
    assert cpp._import_module_from_library is real_import, "torch's module import is left replaced"
    assert os.environ.get("TORCH_CUDA_ARCH_LIST") == arch_before, os.environ.get("TORCH_CUDA_ARCH_LIST")
    for name, arch in seen_arch:  # each build saw its own arch list (sm_90 for the odd ones, none else)
        assert (arch == "9.0") == (int(name[-1]) % 2 == 1), seen_arch


def parse_stop_cuts_at_the_answers_end():
    import secrets
    ec = own_extension_cache("extension_cache_stop")
    if shutil.which("g++") is None:
        print("  not run: no g++")
        return
    folder = tempfile.mkdtemp(dir=ROOT)
    source = os.path.join(folder, "main.cpp")

    def compile_(text, stop=True):
        name = ec.PARSE_STOP_NAME + secrets.token_hex(8)
        with open(source, "w") as f:
            f.write(text + (ec.parse_stop_text(name) if stop else ""))
        p = subprocess.run(["g++", "-fsyntax-only", source], capture_output=True, text=True, cwd=folder)
        return p, name

    errors = textwrap.dedent("""\
        #include <vector>
        int f() { return undeclared_name; }
        struct S { int a; };
        int h() { S s; return s.b; }
        std::vector<int> v = 3.5;
        """)
    p, name = compile_(errors)
    out, how = ec.split_at_parse_stop(p.stderr, source, 5, name)
    full, _ = compile_(errors, stop=False)
    # Without the stop, g++ lists the same messages: here every error is found while parsing.
    assert how == "stopped" and out == full.stderr and out.count(" error: ") == 3, (how, out, full.stderr)
    assert name not in out and "compilation terminated" not in out, out
    p, name = compile_("#include <vector>\nint f(std::vector<int> v) { return v.size(); }\n")
    assert ec.split_at_parse_stop(p.stderr, source, 2, name) == ("", "stopped"), p.stderr
    # An error only the end-of-unit instantiation finds: not on the answer's lines by then.
    p, name = compile_("template <class T> T tw(T x) { return x.nope(); }\nint g() { return tw(1); }\n")
    assert ec.split_at_parse_stop(p.stderr, source, 2, name) == ("", "stopped"), p.stderr
    p, name = compile_("#include <kwb_no_such_header.h>\nint f() { return 0; }\n")
    out, how = ec.split_at_parse_stop(p.stderr, source, 2, name)
    assert how == "fatal" and "kwb_no_such_header.h" in out, (how, out)
    for text, lines in (("int f() { return 0;\n", 1), ("#if 0\nint f() { return 0; }\n", 2),
                        ("#define template nothing\nint f() { return 0; }\n", 2),
                        ("int f() { return 0; }\n#define v w\n", 2)):
        p, name = compile_(text)
        out, how = ec.split_at_parse_stop(p.stderr, source, lines, name)
        assert out is None, (text, how, out, p.stderr)
    assert ec.parse_stop_usable(["-O3", "-std=c++17"]) and not ec.parse_stop_usable(["-ftemplate-depth=5000"])
    assert not ec.parse_stop_usable(["-Wfatal-errors"]) and not ec.parse_stop_usable(["-fmax-errors=3"])


def precompiled_headers_are_capped():
    ec = own_extension_cache("extension_cache_cap", stub=True)
    cache = fresh("pch-cap")
    started = []
    ec.ensure_pch = lambda *a, **k: started.append(a)  # a header's build: counted, never run
    config = {"cache_dir": cache}
    # each allowed flag set keys a header of its own: an answer stream can name any number
    for n in range(ec.MAX_PCH_HEADERS):
        os.makedirs(os.path.join(cache, f"{ec.PCH_NAME}-{n:020d}"))
        os.makedirs(os.path.join(cache, f".staging-{ec.PCH_NAME}-{n:020d}-x"))  # hidden: not counted
    for flags in (["-Wabc"], ["-Wabd"]):
        refused = ec._make_pch_in_background(config, {"name": "a", "cpp_sources": "", "extra_cflags": flags})
        assert refused and "the most it makes" in refused, refused  # the build's "pch" says so
    wait_for(lambda: not ec._pch_making, "the refused headers' threads")
    assert not started, started
    why = ec._pch_failed.get(ec.build_key(ec.pch_arguments({"extra_cflags": ["-Wabc"]})[0], ""))
    assert why and f"the most it makes ({ec.MAX_PCH_HEADERS})" in why, ec._pch_failed
    # under the cap the header is made (in the background)
    shutil.rmtree(os.path.join(cache, f"{ec.PCH_NAME}-{0:020d}"))
    ec._pch_failed.clear()
    release = threading.Event()
    ec.ensure_pch = lambda *a, **k: (started.append(a), release.wait(30))  # held until released
    build = {"name": "a", "cpp_sources": "", "extra_cflags": ["-Wabc"]}
    assert ec.pch_making_for(build) is None
    assert ec._make_pch_in_background(config, build) is None
    wait_for(lambda: started, "the header's build")
    time.sleep(0.2)
    # while it is being made, a build with the same flags learns for how long; another flag set not
    making = ec.pch_making_for(dict(build, name="b"))
    assert making is not None and 0.2 <= making < 30, making
    assert ec.pch_making_for({"name": "c", "cpp_sources": "", "extra_cflags": ["-Wabd"]}) is None
    release.set()
    wait_for(lambda: not ec._pch_making, "the header's build")
    assert ec.pch_making_for(build) is None
    assert len(started) == 1 and started[0][0]["extra_cflags"] == ["-Wabc"], started


def starts(folders=False):
    """The builder processes started so far for answers' builds in this case's cache (not the
    headers' the broker makes beside them, nor a builder of an earlier case's broker): [(pid,
    REQUEST)], REQUEST "-" for a spare (with folders: [(pid, REQUEST, OUT)])."""
    if not os.path.exists(BUILD_LOG + ".starts"):
        return []
    with open(BUILD_LOG + ".starts") as f:
        rows = [line.split() for line in f if line.strip()]
    rows = [r for r in rows if r[2].startswith(CASE[0] + os.sep) and "kwb_torch_pch" not in r[2]]
    return [(int(r[0]), r[1], r[2]) if folders else (int(r[0]), r[1]) for r in rows]


def spares():
    return [pid for pid, request in starts() if request == "-"]


def spare_ready(count=1):
    """Waits for the broker's count-th spare to have torch imported (its SPARE_READY): its pid."""
    wait_for(lambda: len(spares()) >= count, f"spare {count} to start")
    pid, _, folder = [row for row in starts(folders=True) if row[1] == "-"][count - 1]
    wait_for(lambda: os.path.exists(os.path.join(folder, "kwb-spare-ready")), f"spare {count} to be ready")
    return pid


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def manifest_of(worker_result):
    with open(os.path.join(worker_result["builds"][0]["build_dir"], "kwb-entry.json")) as f:
        return json.load(f)


def request_is_served_by_the_spare():
    cache = fresh("spare-serves")
    sock = start_broker(cache)
    spare = spare_ready()
    before = len(starts())
    a = result(start(cache, "__global__ void s1() {}", broker=sock))
    assert a["ok"], a
    assert [int(b[0]) for b in builds()] == [spare], (builds(), starts())
    # Started since the request: the next spare alone, no builder for this build.
    assert all(request == "-" for _, request in starts()[before:]), starts()
    assert manifest_of(a)["builder"] == "spare", manifest_of(a)
    assert not [n for n in os.listdir(cache) if n.startswith(".staging-ext")], os.listdir(cache)


def spare_is_never_reused():
    cache = fresh("spare-once")
    sock = start_broker(cache)
    first = spare_ready()
    a = result(start(cache, "__global__ void s2a() {}", broker=sock))
    second = spare_ready(2)
    b = result(start(cache, "__global__ void s2b() {}", broker=sock))
    assert a["ok"] and b["ok"], (a, b)
    assert first != second and [int(x[0]) for x in builds()] == [first, second], (builds(), starts())
    assert [request for _, request in starts()] == ["-"] * len(starts()), starts()  # no builder of its own
    wait_for(lambda: gone(first), "the first spare to end after its build")
    assert manifest_of(b)["builder"] == "spare", manifest_of(b)


def broker_end_leaves_no_spare():
    cache = fresh("spare-end")
    start_broker(cache)
    broker = BROKERS[-1]
    spare = spare_ready()
    left = [n for n in os.listdir(cache) if n.startswith(".spare-")]
    broker.kill()  # as the broker ends with kwb (its parent watch: SIGKILL)
    broker.wait()
    wait_for(lambda: gone(spare), "the spare to end with its broker")
    # Its folder is left (a killed broker removes nothing); the next broker on the cache removes it.
    assert [n for n in os.listdir(cache) if n.startswith(".spare-")] == left, os.listdir(cache)
    start_broker(cache)
    spare_ready(2)
    now = [n for n in os.listdir(cache) if n.startswith(".spare-")]
    assert len(now) == 1 and now != left, (left, now)


def dead_spare_is_replaced():
    cache = fresh("spare-dead")
    sock = start_broker(cache)
    spare = spare_ready()
    os.kill(spare, signal.SIGKILL)
    a = result(start(cache, "__global__ void s4a() {}", broker=sock))
    assert a["ok"], a
    builder = int(builds()[0][0])
    assert builder != spare and dict(starts())[builder] != "-", (builds(), starts())  # a builder of its own
    assert manifest_of(a)["builder"] == "fresh", manifest_of(a)
    replaced = spare_ready(2)
    b = result(start(cache, "__global__ void s4b() {}", broker=sock))
    assert b["ok"] and int(builds()[1][0]) == replaced, (b, builds(), starts())


def spare_sees_only_its_folder():
    if shutil.which("bwrap") is None or subprocess.run(["bwrap", "--dev-bind", "/", "/", "--", "true"],
                                                        capture_output=True).returncode != 0:
        print("  not run: no working bwrap here")
        return
    cache = fresh("spare-view")
    gate = os.path.join(ROOT, "gate-spare-view")
    # kwb's builder sandbox hides the cache under an empty tmpfs (docs/sandbox.md); the rest here is
    # the host's, for the stand-in torch and the logs.
    sock = start_broker(cache, gate, prefix=["bwrap", "--dev-bind", "/", "/", "--tmpfs", cache], STUB_LIST=cache)
    spare_ready()
    first = start(cache, "__global__ void s5a() {}", broker=sock)
    wait_for(lambda: len(builds()) == 1, "the first build")
    open(gate, "w").close()
    assert result(first)["ok"]
    spare_ready(2)
    on_host = sorted(n for n in os.listdir(cache) if not n.endswith(".lock"))
    b = result(start(cache, "__global__ void s5b() {}", broker=sock))
    assert b["ok"], b
    for pid, name, seen in builds():
        seen = json.loads(seen)
        # Its own folder alone, under the name it had as a spare; the first build's entry hidden.
        assert len(seen) == 1 and seen[0].startswith(".spare-"), (name, seen, on_host)
    assert any(not n.startswith(".") for n in on_host), on_host  # the first entry was there to see


def builds_before_the_header_run_niced():
    ec = own_extension_cache("extension_cache_nice", stub=True)
    cache = fresh("pch-nice")
    asked = []
    ec.ensure_pch = lambda *a, **k: None  # the header's build: never run here
    ec._run_builder = lambda config, conn, arguments, arch, staging, pch=None, nice=0: (
        asked.append((pch, nice)), {"ok": True, "pch": "", "nice": nice})[1]
    arguments = {"name": "a", "cpp_sources": "", "extra_cflags": [""]}
    for env, want in ((None, ec.BEFORE_HEADER_NICE), ("0", 0), ("5", 5), ("20", ec.BEFORE_HEADER_NICE),
                      ("-3", ec.BEFORE_HEADER_NICE), ("x", ec.BEFORE_HEADER_NICE)):
        if env is None:
            os.environ.pop("KWB_BEFORE_HEADER_NICE", None)
        else:
            os.environ["KWB_BEFORE_HEADER_NICE"] = env
        result = ec._build_with_pch({"cache_dir": cache}, None, arguments, "", cache)
        assert asked[-1] == (None, want), (env, asked[-1])
        assert result["pch"].startswith("not used: " + ec.NO_PCH_YET), result
        assert result["pch"].endswith(f"; built at nice {want} meanwhile") == (want > 0), (env, result["pch"])
    os.environ.pop("KWB_BEFORE_HEADER_NICE", None)
    # With the header made, a build runs at the broker's own niceness.
    ec.pch_entry = lambda arguments, cache_dir: ("/made/header", "")
    ec._build_with_pch({"cache_dir": cache}, None, arguments, "", cache)
    assert asked[-1] == ("/made/header", 0), asked[-1]


if __name__ == "__main__":
    setup()
    failed = 0
    for case in (one_build_per_key, killed_build_is_retried, failure_is_cached, broker_builds_once_for_two_workers,
                 hostile_build_reads_and_changes_nothing_outside, killed_compiler_is_not_cached,
                 runaway_compiler_stops_at_the_data_limit, broker_limits_one_workers_share,
                 changed_entry_is_refused, broker_cancels_when_the_worker_goes, verify_remembers_until_a_file_changes,
                 builds_in_one_process_take_turns, request_is_served_by_the_spare, spare_is_never_reused,
                 broker_end_leaves_no_spare, dead_spare_is_replaced, spare_sees_only_its_folder,
                 precompiled_headers_are_capped, parse_stop_cuts_at_the_answers_end, builds_before_the_header_run_niced):
        try:
            case()
            print(f"PASS {case.__name__}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}")
    for broker in BROKERS:
        broker.kill()
    sys.exit(1 if failed else 0)
