#!/usr/bin/env python3
# Torch's precompiled extension header (src/worker/python/extension_cache.py, docs/sandbox.md "The
# precompiled header") with the real torch and g++, on the CPU: the C++-only answers of
# tests/fixtures/candidates/kernelbench/cpp_only built without and with the header.
#   same_results_both_ways   each answer built in a cache without a header and in one with it:
#                            the same library bytes, the same outputs (and torch's own results);
#                            extra_cflags=[""] takes the default flags' header
#   compile_error_with_pch   an answer with a compile error, through the worker's own route
#                            (kernelbench_host.build): compile_error with g++'s message, built with
#                            the header
#   failed_pch_is_not_published  a header's build that fails or leaves no .gch: raised, no entry
#   planned_build_is_load_inlines_own  each answer built by torch's own load_inline (its ninja run
#                            by torch) and as planned and run apart (prepare_into, run_plan: no
#                            header, no split): the same library bytes; a compile error: the same
#                            message
#   preparer_plans_what_runs_no_program  extension_cache.preparable: what would make torch run a
#                            program as it plans (use_pch, SYCL, a standalone build, an unknown
#                            argument, an answer's -ccbin in any spelling) is not planned apart
#   damaged_pch_is_not_used  a header whose .gch changed after its build: the answer builds without
#                            it and says why
#   broker_makes_pch_for_the_next_build   the broker builds the first answer without a header and
#                            makes one beside it; the next build takes it
#   builder_checks_the_early_pass   the builder says the broker's early syntax pass covers its
#                            build (EARLY_VALID) where load_inline wrote the main.cpp and would run
#                            the command the pass's record names, and not where the bytes differ
#   broker_early_syntax_pass  through a broker with a sandbox (bwrap) and no spare builder: the
#                            answers built by it (the early pass beside the builder) are the
#                            libraries built without it; a compile error is reported by the early
#                            pass, with g++'s message
#   broker_preparer_plans_the_builds  through a broker in bwrap with the cache under an empty tmpfs
#                            and no spare: each answer planned by the broker's preparer (torch
#                            imported there once) and built by a builder that imports no torch:
#                            the libraries built in-process; a compile error's message; an answer
#                            that names nvcc's host compiler built by a builder that imports
#                            torch; the preparer killed: started again, and the next build planned
#   broker_spare_builds_with_the_header  through a broker in bwrap with the cache under an empty
#                            tmpfs (kwb's builder sandbox): its ready spare builder, the header bound
#                            into it, builds an answer (torch's outputs) and reports a compile error
#                            with g++'s message (ninja's compile: no early pass here)
#   nvcc_build_stopped_at_a_cpp_error (--nvcc) an answer with CUDA sources whose C++ part does not
#                            compile: reported by the syntax pass while nvcc still runs, nvcc ended
#   nvcc_build_stopped_by_the_brokers_pass (--nvcc) the same through a broker in bwrap: its early
#                            pass reports the error and ends the builder and its nvcc
#   split_build_of_a_cuda_answer (--nvcc) a CUDA answer built split (cuda_split.py): the device unit
#                            by nvcc without torch, the host unit by g++ with the header in one
#                            unit with main.cpp, linked
#   split_build_of_what_only_nvcc_declares (--nvcc) host code calling CUDA's unqualified min and
#                            max, which only nvcc's host pass declares, in a .cu that includes cub
#                            for nothing: built split under torch's real header
#   a_kernels_own_error_from_the_device_unit (--nvcc) a kernel naming what nothing declares, and
#                            threadIdx.w: the device unit's messages are the answer's compile error,
#                            without a whole build
#   split_build_falls_back_to_the_whole (--nvcc) kernel errors the device unit cannot decide (a
#                            syntax error; a name torch's headers declare at file scope): the whole
#                            .cu is built as load_inline builds it; that build's message
#   split_build_joins_main_cpp_or_builds_apart (--nvcc) main.cpp and the host unit as one unit only
#                            where cuda_split allows it; main.cpp's error there built apart; the
#                            host code's own error goes on to the whole build
#   split_build_reports_a_main_cpp_error (--nvcc) an error in load_inline's main.cpp during a split
#                            build is the build's failure, without a whole build
# Usage: test_extension_pch.py SRC/worker [--nvcc] [--only=CASE]   (exit 77: skipped, saying why)
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

WORKER_SRC = os.path.abspath(sys.argv[1])
NVCC = "--nvcc" in sys.argv[2:]
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "candidates", "kernelbench",
                        "cpp_only")
ROOT = None  # the test's folder (made by the run, not by the runner's import of this file)
sys.path.insert(0, WORKER_SRC)
import extension_cache as ec  # noqa: E402
import cuda_split as cs  # noqa: E402

try:
    import torch
    import torch.utils.cpp_extension as cpp
except ImportError as e:
    print(f"skipped: this Python ({sys.executable}) has no torch: {e}")
    sys.exit(77)


def answer_module(path):
    text = open(path).read()
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


# The answers and their inputs (small, fixed) with torch's own result to compare with.
def inputs_for(name):
    g = torch.Generator().manual_seed(7)
    if name == "L1_05_scale.md":
        a = torch.randn(64, 48, generator=g)
        return (a, 3.5), a * 3.5
    if name == "L1_19_relu.md":
        x = torch.randn(4, 1000, generator=g)
        return (x,), torch.relu(x)
    if name == "L1_01_matmul.md":
        a, b = torch.randn(33, 17, generator=g), torch.randn(17, 29, generator=g)
        return (a, b), a @ b
    if name == "L1_23_softmax.md":
        x = torch.randn(8, 300, generator=g)
        return (x,), torch.softmax(x, dim=1)
    raise KeyError(name)


GOOD = ["L1_05_scale.md", "L1_19_relu.md", "L1_01_matmul.md", "L1_23_softmax.md"]


def load_arguments(module_source):
    """The load_inline arguments of an answer's module (its first call), without building."""
    seen = []
    real = cpp.load_inline
    cpp.load_inline = lambda *a, **k: seen.append(k) or None
    try:
        exec(compile(module_source, "<answer>", "exec"), {"__name__": "answer"})
    finally:
        cpp.load_inline = real
    return seen[0]


def build(arguments, cache):
    directory, manifest, _, _, _ = ec.entry_for(arguments, "", cache)
    return directory, manifest


# Runs the answer's ModelNew from a cache in a process of its own (one library of a name per
# process): its outputs as a list.
RUNNER = r"""
import json, re, sys
sys.path.insert(0, sys.argv[1])
import extension_cache as ec
import torch, torch.utils.cpp_extension as cpp
sys.path.insert(0, sys.argv[4])
from test_extension_pch import inputs_for, answer_module
real_import = cpp._import_module_from_library
def load_inline(**arguments):
    directory, manifest, _, _, _ = ec.entry_for(arguments, "", sys.argv[2])
    assert manifest["ok"], manifest["message"]
    return real_import(arguments["name"], directory, True)
cpp.load_inline = load_inline
namespace = {"__name__": "answer"}
exec(compile(answer_module(sys.argv[3]), "<answer>", "exec"), namespace)
args, _ = inputs_for(sys.argv[3].rsplit("/", 1)[-1])
print(json.dumps(namespace["ModelNew"]()(*args).tolist()))
"""


def run_answer(path, cache):
    out = subprocess.run([sys.executable, "-c", RUNNER, WORKER_SRC, cache, path, os.path.dirname(os.path.abspath(__file__))],
                         capture_output=True, text=True, env=dict(os.environ, KWB_BUILD_BROKER=""))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def library_bytes(entry, name):
    """The entry's library without what differs between any two builds of the same sources in two
    folders: the build folder's path (in __FILE__ of TORCH_CHECK's messages: a staging folder's
    random name), blanked, and the linker's build ID, a hash of the bytes with that path in them."""
    source = re.search(r"^build main\.o: compile (\S+)$", open(os.path.join(entry, "build.ninja")).read(), re.M).group(1)
    stripped = os.path.join(ROOT, "stripped.so")
    subprocess.run(["objcopy", "--remove-section=.note.gnu.build-id", os.path.join(entry, f"{name}.so"), stripped],
                   check=True)
    data = open(stripped, "rb").read()
    folder = os.path.dirname(source).encode()
    return data.replace(folder, b"#" * len(folder))


def make_pch(arguments, cache):
    found = ec.ensure_pch(arguments, cache, lambda a, r, staging: ec.build_in_process(a, r, staging, cache))
    assert found is not None and found[1]["ok"], found
    assert {ec.PCH_WRAPPER, ec.PCH_FILE, ec.PCH_INFO} <= set(found[1]["files"]), found[1]["files"]
    return found[0]


def same_results_both_ways():
    # Folders of one length: the build folder's path is in the library (see library_bytes).
    plain, with_pch = os.path.join(ROOT, "c0"), os.path.join(ROOT, "c1")
    for name in GOOD:
        path = os.path.join(FIXTURES, name)
        arguments = load_arguments(answer_module(path))
        pch_dir = make_pch(arguments, with_pch)
        d0, m0 = build(arguments, plain)
        d1, m1 = build(arguments, with_pch)
        assert m0["ok"] and m1["ok"], (m0["message"], m1["message"])
        assert m0["pch"].startswith("not used: " + ec.NO_PCH_YET), m0["pch"]
        assert m1["pch"] == f"used: {pch_dir}", m1["pch"]
        # The header was on the compile line, so the same library is not the same command's.
        assert "-include" in open(os.path.join(d1, "build.ninja")).read()
        assert "-include" not in open(os.path.join(d0, "build.ninja")).read()
        assert library_bytes(d0, arguments["name"]) == library_bytes(d1, arguments["name"]), f"{name}: the libraries differ"
        out0, out1 = run_answer(path, plain), run_answer(path, with_pch)
        assert out0 == out1, f"{name}: the outputs differ"
        _, expected = inputs_for(name)
        assert torch.allclose(torch.tensor(out1), expected, atol=1e-5, rtol=1e-5), f"{name}: not torch's result"
    # -O3 (L1/19) keys a header of its own: two headers for the four answers.
    headers = [n for n in os.listdir(with_pch) if n.startswith(ec.PCH_NAME)]
    assert len(headers) == 2, headers
    # KernelBench's own example passes extra_cflags=[""] (and so do most real answers): an empty
    # flag is no flag, so such a build takes the default flags' header and makes the same library.
    path = os.path.join(FIXTURES, GOOD[0])
    arguments = dict(load_arguments(answer_module(path)), extra_cflags=[""])
    assert ec.pch_arguments(arguments) == ec.pch_arguments(dict(arguments, extra_cflags=[])), ec.pch_arguments(arguments)
    d0, m0 = build(arguments, plain)
    d1, m1 = build(arguments, with_pch)
    assert m0["ok"] and m1["ok"], (m0["message"], m1["message"])
    assert m1["pch"].startswith("used: "), m1["pch"]
    assert library_bytes(d0, arguments["name"]) == library_bytes(d1, arguments["name"]), "extra_cflags=['']: the libraries differ"
    assert len([n for n in os.listdir(with_pch) if n.startswith(ec.PCH_NAME)]) == 2


def _plain_load_inline(arguments, folder):
    """torch's own load_inline into folder, its ninja run by torch, nothing loaded: None or the
    message torch raised."""
    real_import = cpp._import_module_from_library
    cpp._import_module_from_library = lambda *a, **k: None
    cpp.JIT_EXTENSION_VERSIONER.entries.pop(arguments["name"], None)
    try:
        cpp.load_inline(**dict(json.loads(json.dumps(arguments)), build_directory=folder, verbose=False))
        return None
    except Exception as e:  # noqa: B902 (compared with the planned build's)
        return f"{type(e).__name__}: {e}"
    finally:
        cpp._import_module_from_library = real_import


def planned_build_is_load_inlines_own():
    # Folders of one length: the build folder's path is in the library (see library_bytes).
    for k, name in enumerate(["L1_05_scale.md", "L1_01_matmul.md", "L1_19_relu_undeclared.md"]):
        arguments = load_arguments(answer_module(os.path.join(FIXTURES, name)))
        own, planned = os.path.join(ROOT, f"own{k}"), os.path.join(ROOT, f"pln{k}")
        os.makedirs(own)
        os.makedirs(planned)
        said = _plain_load_inline(arguments, own)
        kind, plan = ec.prepare_into(arguments, "", planned, split=False)
        assert kind == "plan", (kind, plan)
        assert os.path.exists(os.path.join(planned, "build.ninja")) and not os.path.exists(os.path.join(planned, "main.o"))
        result = ec.run_plan(plan)
        assert open(os.path.join(own, "build.ninja")).read().replace(own, planned) == \
            open(os.path.join(planned, "build.ninja")).read(), f"{name}: the ninja files differ"
        if said is None:
            assert result["ok"], result
            assert library_bytes(own, arguments["name"]) == library_bytes(planned, arguments["name"]), \
                f"{name}: the libraries differ"
        else:  # torch's message (as the cache keeps messages), its folder's name aside
            assert not result["ok"] and result["message"] == ec.cap_message(said.replace(own, planned)), (said[-1500:], result)
            assert "error:" in said, said[-1500:]


def preparer_plans_what_runs_no_program():
    plain = load_arguments(answer_module(os.path.join(FIXTURES, GOOD[0])))
    assert ec.preparable(plain) == "", ec.preparable(plain)
    assert ec.preparable(dict(plain, use_pch=False, extra_cuda_cflags=["-O3", "--use_fast_math"])) == ""
    for changed in ({"use_pch": True}, {"sycl_sources": "x"}, {"is_standalone": True}, {"other": 1},
                    {"extra_cuda_cflags": ["-ccbin", "/usr/bin/g++"]}, {"extra_cuda_cflags": ["-ccbin=/tmp/x"]},
                    {"extra_cuda_cflags": ["-O3 --compiler-bindir /tmp/x"]},
                    {"extra_cuda_cflags": ["--compiler-bindir=/tmp"]}, {"extra_cuda_cflags": ["'-ccbin' x"]},
                    {"extra_cuda_cflags": ["-ccbin\t/x"]}, {"extra_cuda_cflags": "-ccbin /x"},
                    {"extra_cuda_cflags": ["'unclosed"]}):
        assert ec.preparable(dict(plain, **changed)), changed


HOST_BUILD = r"""
import importlib.util, json, sys
sys.path.insert(0, sys.argv[1])
import extension_cache as ec
sys.modules["_kwb_extensions"] = ec
spec = importlib.util.spec_from_file_location("_kwb_host", sys.argv[1] + "/kernelbench_host.py")
host = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host)
host.configure(sys.argv[2], "")
print(json.dumps(host.build(open(sys.argv[3]).read())))
"""


def compile_error_with_pch():
    cache = os.path.join(ROOT, "c1")  # the default flags' header is there (same_results_both_ways)
    path = os.path.join(FIXTURES, "L1_19_relu_undeclared.md")
    module = os.path.join(ROOT, "undeclared.py")
    with open(module, "w") as f:
        f.write(answer_module(path))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", HOST_BUILD, WORKER_SRC, cache, module], capture_output=True, text=True,
                         env=dict(os.environ, KWB_BUILD_BROKER=""))
    seconds = time.monotonic() - t0
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["status"] == "compile_error" and r["stage"] == "compile", r
    assert "error: \u2018zero\u2019 was not declared in this scope" in r["message"], r["message"][-2000:]
    entry = [n for n in os.listdir(cache) if n.startswith("kwb_cpp_relu_undeclared-")]
    manifest = ec.read_manifest(os.path.join(cache, entry[0]))
    assert not manifest["ok"] and manifest["pch"].startswith("used: "), manifest["pch"]
    assert "-include" in r["message"]  # g++'s command, with the header
    print(f"  compile error reported in {seconds:.1f} s (torch's import included)")


def damaged_pch_is_not_used():
    cache = os.path.join(ROOT, "damaged")
    path = os.path.join(FIXTURES, "L1_05_scale.md")
    arguments = load_arguments(answer_module(path))
    pch_dir = make_pch(arguments, cache)
    gch = os.path.join(pch_dir, ec.PCH_FILE)
    os.chmod(pch_dir, 0o755)
    os.chmod(os.path.dirname(gch), 0o755)
    os.chmod(gch, 0o644)
    with open(gch, "r+b") as f:
        f.seek(4096)
        byte = f.read(1)
        f.seek(4096)
        f.write(bytes([byte[0] ^ 0xFF]))
    d, m = build(arguments, cache)
    assert m["ok"], m["message"]
    assert m["pch"].startswith("not used: ") and "changed after its build" in m["pch"], m["pch"]
    assert "-include" not in open(os.path.join(d, "build.ninja")).read()


def failed_pch_is_not_published():
    """A header's build that fails, or says it built and left no .gch, is raised and leaves no
    entry (a failure would otherwise stick to its key for good)."""
    cache = os.path.join(ROOT, "unmade")
    arguments = load_arguments(answer_module(os.path.join(FIXTURES, "L1_05_scale.md")))
    for result in ({"ok": True, "pch": ""}, {"ok": False, "message": "g++: out of memory"}):
        try:
            ec.ensure_pch(arguments, cache, lambda a, r, staging, result=result: result)
            raise AssertionError(f"no error for {result}")
        except ec.BuildError as e:
            assert "made no" in str(e) or "out of memory" in str(e), e
        assert not [n for n in os.listdir(cache) if not n.startswith(".")], os.listdir(cache)
        assert ec.pch_entry(arguments, cache) == (None, ec.NO_PCH_YET)


BUILDER = r"""
import sys
sys.path.insert(0, {src!r})
import extension_cache as ec
assert sys.argv[1] == "--build-extension"
sys.exit(ec.build_extension(sys.argv[2], sys.argv[3]))
"""

BROKER = r"""
import sys
sys.path.insert(0, {src!r})
import extension_cache as ec
ec.serve_broker(sys.argv[1])
"""


def broker_makes_pch_for_the_next_build():
    cache = os.path.join(ROOT, "broker")
    os.makedirs(cache)
    sock, broker = _start_broker(cache, [])
    try:
        first = load_arguments(answer_module(os.path.join(FIXTURES, "L1_05_scale.md")))
        _, m0, _, _, _ = ec.ask_broker(sock, first, "")
        # Built while the broker made the header, niced, as the builder itself read its niceness.
        assert m0["ok"] and m0["pch"] == (f"not used: {ec.NO_PCH_YET} ({ec.pch_wanted(first)}); "
                                          f"built at nice {min(19, os.nice(0) + ec.BEFORE_HEADER_NICE)} meanwhile"), m0
        # The note names what the header it looked for is keyed by: a cache whose headers were made
        # under another compiler or torch says so in every build's note.
        assert ec.compiler_identity() in m0["pch"] and ec.torch_versions()[0] in m0["pch"], m0["pch"]
        deadline = time.monotonic() + 600
        while ec.pch_entry(first, cache)[0] is None:
            assert time.monotonic() < deadline, "the broker made no precompiled header"
            time.sleep(1)
        second = load_arguments(answer_module(os.path.join(FIXTURES, "L1_23_softmax.md")))
        _, m1, _, _, _ = ec.ask_broker(sock, second, "")
        assert m1["ok"] and m1["pch"] == f"used: {ec.pch_entry(first, cache)[0]}", m1
        # The spare builder started again for the header once it was made, and took the build.
        assert m1["builder"].startswith("spare"), m1
        assert not [n for n in os.listdir(cache) if n.startswith(".staging")], os.listdir(cache)
    finally:
        broker.kill()
        broker.wait()


def builder_checks_the_early_pass():
    cache = os.path.join(ROOT, "c1")  # the default flags' header is there (same_results_both_ways)
    plain = load_arguments(answer_module(os.path.join(FIXTURES, "L1_19_relu_undeclared.md")))
    # and with an empty flag more (KernelBench's example's extra_cflags=[""]): the same header and command
    for arguments, honest in ((plain, True), (plain, False),
                              (dict(plain, extra_cflags=list(plain.get("extra_cflags") or []) + [""]), True)):
        pch, why = ec.pch_entry(arguments, cache)
        assert pch, why
        info = json.load(open(os.path.join(pch, ec.PCH_INFO)))
        staging = tempfile.mkdtemp(dir=ROOT)
        source = os.path.join(staging, "main.cpp")
        text = ec.load_inline_main_cpp(arguments) + ("" if honest else "\n// another main.cpp")
        command = ec.syntax_command(info["cxx"], ["-include", shlex.quote(os.path.join(pch, ec.PCH_WRAPPER)),
                                                  "-Winvalid-pch", f"-DTORCH_EXTENSION_NAME={arguments['name']}"]
                                    + info["cflags"], info["post_cflags"], source)
        with open(os.path.join(staging, ec.EARLY_RECORD), "w") as f:
            json.dump({"command": command, "source": source, "sha256": hashlib.sha256(text.encode()).hexdigest()}, f)
        result = ec.build_into(arguments, "", staging, pch)
        assert not result["ok"] and "was not declared" in result["message"], result
        valid = os.path.join(staging, ec.EARLY_VALID)
        assert os.path.exists(valid) == honest, (honest, os.listdir(staging))
        if honest:
            assert json.load(open(valid))["error_prefix"] == f"Error building extension '{arguments['name']}'"


def _bwrap_works():
    return shutil.which("bwrap") is not None and subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "--", "true"], capture_output=True).returncode == 0


def _start_broker(cache, prefix, **extra):
    for name, text in (("builder.py", BUILDER), ("broker.py", BROKER)):
        with open(os.path.join(ROOT, name), "w") as f:
            f.write(f"#!{sys.executable}\n" + text.format(src=WORKER_SRC))
        os.chmod(os.path.join(ROOT, name), 0o755)
    sock = os.path.join(cache + ".sock")
    config = os.path.join(ROOT, "broker.json")
    with open(config, "w") as f:
        json.dump(dict({"socket": sock, "cache_dir": cache, "worker": os.path.join(ROOT, "builder.py"),
                        "builder_prefix": prefix, "environment": dict(os.environ)}, **extra), f)
    return sock, subprocess.Popen([sys.executable, os.path.join(ROOT, "broker.py"), config])


def _cache_with_c1_headers(name):
    """A new cache holding the headers of c1 (same_results_both_ways) and none of its answers; its
    folder's name of c1's length, so the libraries built in it compare (library_bytes)."""
    cache = os.path.join(ROOT, name)
    os.makedirs(cache)
    for n in os.listdir(os.path.join(ROOT, "c1")):
        if n.startswith(ec.PCH_NAME + "-"):
            shutil.copytree(os.path.join(ROOT, "c1", n), os.path.join(cache, n), copy_function=os.link)
    return cache


def broker_early_syntax_pass():
    if not _bwrap_works():
        print("  not run: no working bwrap here (the early pass needs the builder's sandbox)")
        return
    cache = _cache_with_c1_headers("c2")
    # Every C++-only build with the pass (kwb's rule gives one only where a core is idle), each by
    # a fresh builder: a spare's folder name has another length than c1's staging folders
    # (broker_spare_builds_with_the_header builds with one).
    sock, broker = _start_broker(cache, ["bwrap", "--dev-bind", "/", "/"], early_syntax_cxx="always",
                                 spare_builder=False)
    try:
        for name in GOOD:
            arguments = load_arguments(answer_module(os.path.join(FIXTURES, name)))
            d2, m2, _, _, _ = ec.ask_broker(sock, arguments, "")
            assert m2["ok"] and m2["pch"].startswith("used: "), m2
            d1 = ec.entry_for(arguments, "", os.path.join(ROOT, "c1"))[0]
            assert library_bytes(d1, arguments["name"]) == library_bytes(d2, arguments["name"]), f"{name}: the libraries differ"
            assert not {ec.EARLY_RECORD, ec.EARLY_VALID} & set(os.listdir(d2)), os.listdir(d2)
        arguments = load_arguments(answer_module(os.path.join(FIXTURES, "L1_19_relu_undeclared.md")))
        t0 = time.monotonic()
        _, m, _, _, _ = ec.ask_broker(sock, arguments, "")
        seconds = time.monotonic() - t0
        assert not m["ok"] and m["pch"].startswith("used: "), m
        # A C++-only build runs no syntax pass of its own: this one is the broker's.
        assert "[syntax check]" in m["message"], m["message"][-2000:]
        assert "error: \u2018zero\u2019 was not declared in this scope" in m["message"], m["message"][-2000:]
        assert m["message"].startswith("RuntimeError: Error building extension 'kwb_cpp_relu_undeclared': "), m["message"][:300]
        # Stopped after the answer's lines (the parse stop): its own diagnostics are not in the message.
        assert m["syntax"].startswith("parsed only: "), m
        assert ec.PARSE_STOP_NAME not in m["message"] and "compilation terminated" not in m["message"], m["message"][-2000:]
        assert not [n for n in os.listdir(cache) if n.startswith(".staging")], os.listdir(cache)
        print(f"  compile error reported by the broker in {seconds:.1f} s")
    finally:
        broker.kill()
        broker.wait()


def _preparers(broker):
    """The preparer processes below the broker this test started (its children's command lines)."""
    found, todo = [], [broker.pid]
    while todo:
        pid = todo.pop()
        for child in ec._children(pid):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    words = f.read().split(b"\0")
            except OSError:
                continue
            # (the process bwrap started, not bwrap's own, whose command line names it too)
            if _is_preparer(child) and os.path.basename(words[0]) != b"bwrap":
                found.append(child)
            todo.append(child)
    return found


def _is_preparer(pid):
    """Whether the process (one this test's broker started) is its preparer, or bwrap's around it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return False
    return ec.PREPARE_ROLE.encode() in words and b"--build-extension" in words


def broker_preparer_plans_the_builds():
    if not _bwrap_works():
        print("  not run: no working bwrap here (the preparer works in the builder's sandbox)")
        return
    cache = _cache_with_c1_headers("c4")
    sock, broker = _start_broker(cache, ["bwrap", "--dev-bind", "/", "/", "--tmpfs", cache], early_syntax_cxx="never",
                                 spare_builder=False)
    try:
        for name in GOOD:
            arguments = load_arguments(answer_module(os.path.join(FIXTURES, name)))
            d, m, _, _, _ = ec.ask_broker(sock, arguments, "")
            assert m["ok"] and m["pch"].startswith("used: "), m
            assert m["planned"].startswith("by the preparer in ") and "imported torch" not in m["planned"], m
            d1 = ec.entry_for(arguments, "", os.path.join(ROOT, "c1"))[0]
            assert library_bytes(d1, arguments["name"]) == library_bytes(d, arguments["name"]), f"{name}: the libraries differ"
            assert not {ec.WHOLE_NINJA, ec.APART_NINJA} & set(m["files"]), sorted(m["files"])
        assert len(_preparers(broker)) == 1, _preparers(broker)
        bad = load_arguments(answer_module(os.path.join(FIXTURES, "L1_19_relu_undeclared.md")))
        _, m, _, _, _ = ec.ask_broker(sock, bad, "")
        assert not m["ok"] and m["planned"].startswith("by the preparer in "), m
        assert "error: \u2018zero\u2019 was not declared in this scope" in m["message"], m["message"][-2000:]
        assert m["message"].startswith("RuntimeError: Error building extension 'kwb_cpp_relu_undeclared': "), m["message"][:300]
        # An answer that names nvcc's host compiler: a builder that imports torch builds it, as before.
        named = dict(load_arguments(answer_module(os.path.join(FIXTURES, GOOD[1]))), extra_cuda_cflags=["-ccbin", "g++"])
        _, m, _, _, _ = ec.ask_broker(sock, named, "")
        assert m["ok"] and m["planned"].startswith("not: the answer names nvcc's host compiler"), m
        # The preparer killed (by this test, which started it): started again, and the next build planned.
        for pid in _preparers(broker):
            os.kill(pid, signal.SIGKILL)
        again = dict(load_arguments(answer_module(os.path.join(FIXTURES, GOOD[0]))), name="kwb_after_kill")
        _, m, _, _, _ = ec.ask_broker(sock, again, "")
        assert m["ok"] and m["planned"].startswith("by the preparer in "), m
        assert len(_preparers(broker)) == 1, _preparers(broker)
        assert not [n for n in os.listdir(cache) if n.startswith(".staging")], os.listdir(cache)
    finally:
        broker.kill()
        broker.wait()


def broker_spare_builds_with_the_header():
    if not _bwrap_works():
        print("  not run: no working bwrap here (the spare builder's folder is renamed under its mount)")
        return
    cache = os.path.join(ROOT, "c3")
    os.makedirs(cache)
    good = os.path.join(FIXTURES, "L1_05_scale.md")
    arguments = load_arguments(answer_module(good))
    header = ec.pch_entry(arguments, os.path.join(ROOT, "c1"))[0]  # same_results_both_ways made it
    shutil.copytree(header, os.path.join(cache, os.path.basename(header)), copy_function=os.link)

    def spare_ready():
        deadline = time.monotonic() + 120
        while not any(os.path.exists(os.path.join(cache, n, ec.SPARE_READY))
                      for n in os.listdir(cache) if n.startswith(ec.SPARE_PREFIX)):
            assert time.monotonic() < deadline, "no spare builder became ready"
            time.sleep(0.1)

    sock, broker = _start_broker(cache, ["bwrap", "--dev-bind", "/", "/", "--tmpfs", cache], early_syntax_cxx="never")
    try:
        spare_ready()
        _, m, _, _, _ = ec.ask_broker(sock, arguments, "")
        assert m["ok"] and m["pch"] == "used: " + os.path.join(cache, os.path.basename(header)), m
        assert m["builder"] == "spare", m
        _, expected = inputs_for("L1_05_scale.md")
        assert torch.allclose(torch.tensor(run_answer(good, cache)), expected, atol=1e-5, rtol=1e-5), "not torch's result"
        spare_ready()  # the next one, started when that build ended
        bad = load_arguments(answer_module(os.path.join(FIXTURES, "L1_19_relu_undeclared.md")))
        t0 = time.monotonic()
        _, m, _, _, _ = ec.ask_broker(sock, bad, "")
        seconds = time.monotonic() - t0
        assert not m["ok"] and m["builder"] == "spare" and m["pch"].startswith("used: "), m
        assert "[syntax check]" not in m["message"], m["message"][-2000:]  # ninja's own compile, in the spare
        assert "error: \u2018zero\u2019 was not declared in this scope" in m["message"], m["message"][-2000:]
        assert not [n for n in os.listdir(cache) if n.startswith(".staging")], os.listdir(cache)
        print(f"  compile error reported by the broker's spare builder in {seconds:.1f} s")
    finally:
        broker.kill()
        broker.wait()


NVCC_ANSWER = {
    "name": "kwb_nvcc_cpp_error",
    # The declaration lacks its ';': main.cpp does not compile, the .cu would (for a minute or more).
    "cpp_sources": "torch::Tensor scale_forward(torch::Tensor A, double s)",
    "cuda_sources": r'''
#include <torch/extension.h>
__global__ void scale_k(const float* a, float* c, float s, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * s;
}
torch::Tensor scale_forward(torch::Tensor A, double s) {
    auto c = torch::empty_like(A);
    long n = A.numel();
    scale_k<<<(n + 255) / 256, 256>>>(A.data_ptr<float>(), c.data_ptr<float>(), (float)s, n);
    return c;
}
''',
    "functions": ["scale_forward"],
    "extra_cuda_cflags": ["-std=c++17"],  # CUDA 13's CUB refuses torch 1.13's -std=c++14
}


def nvcc_build_stopped_at_a_cpp_error():
    cache = os.path.join(ROOT, "nvcc")
    make_pch(NVCC_ANSWER, cache)
    t0 = time.monotonic()
    _, m = ec.entry_for(NVCC_ANSWER, "sm_80", cache)[:2]
    seconds = time.monotonic() - t0
    assert not m["ok"] and m["pch"].startswith("used: "), m
    assert "[syntax check]" in m["message"] and "error:" in m["message"], m["message"][-2000:]
    time.sleep(0.5)
    mine = [p for p in os.listdir("/proc") if p.isdigit() and _is_descendant(int(p))]
    assert not mine, f"processes of the stopped build are left: {mine}"
    print(f"  the C++ error reported in {seconds:.1f} s while nvcc was building")


def nvcc_build_stopped_by_the_brokers_pass():
    """The same answer through a broker with a sandbox: the broker's early pass (kwb's rule gives
    every build with CUDA sources one) reports the C++ error and ends the builder and its nvcc."""
    if not _bwrap_works():
        print("  not run: no working bwrap here (the early pass needs the builder's sandbox)")
        return
    cache = os.path.join(ROOT, "nvcc-broker")
    os.makedirs(cache)
    make_pch(NVCC_ANSWER, cache)
    sock, broker = _start_broker(cache, ["bwrap", "--dev-bind", "/", "/"])
    try:
        t0 = time.monotonic()
        _, m, _, _, _ = ec.ask_broker(sock, NVCC_ANSWER, "sm_80")
        seconds = time.monotonic() - t0
        assert not m["ok"] and m["pch"].startswith("used: "), m
        assert "[syntax check]" in m["message"] and "error:" in m["message"], m["message"][-2000:]
        time.sleep(0.5)
        # The broker's next spare builder aside (its folder is still a spare's), and its preparer.
        spares = [os.path.join(cache, n) for n in os.listdir(cache) if n.startswith(ec.SPARE_PREFIX)]
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_descendant(int(p), broker.pid)
                    and not _names_any(int(p), spares) and not _is_preparer(int(p))], "processes of the stopped build are left"
        print(f"  the C++ error reported by the broker in {seconds:.1f} s while nvcc was building")
    finally:
        broker.kill()
        broker.wait()


# The split build (cuda_split.py) with the real torch: a CUDA answer's .cu as a device unit (nvcc, no
# torch) and a host unit (g++ with the header). This machine's torch (1.13, no CUDA libraries)
# cannot build a .cu whole under CUDA 13, so the split's link gets stand-ins for torch's CUDA
# libraries (empty; a shared library may leave symbols to load time); whether the library computes
# what load_inline's computes is the GPU machine's to check (bench/kb_split_check.py).
SPLIT_ANSWER = dict(NVCC_ANSWER, name="kwb_split_ok", cpp_sources=NVCC_ANSWER["cpp_sources"] + ";",
                    extra_cflags=["-std=c++17"])


def _stand_in_cuda_libraries():
    folder = os.path.join(ROOT, "stand-in-libs")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        for lib in ("c10_cuda", "torch_cuda"):
            subprocess.run([os.environ.get("CXX", "c++"), "-shared", "-o", os.path.join(folder, f"lib{lib}.so"),
                            "-x", "c++", "/dev/null"], check=True)
    return ["-L" + folder]


def _reading_left_behind():
    """What a build's reading of torch's headers (extension_cache._TorchViews) left: its probe in
    the entry's files, its folder in this test's temporary folder, or a preprocessing still
    running below this process (its children lists: only processes this test started)."""
    left = [d for d in os.listdir(tempfile.gettempdir()) if d.startswith("kwb-torch-views-")]
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read()
            if pid != os.getpid() and (b"kwb-torch-probe" in command or b"kwb-torch-views-" in command):
                left.append(f"process {pid}")
        except (OSError, ValueError):
            continue
    return left


def split_build_of_a_cuda_answer():
    cache = os.path.join(ROOT, "split")
    answer = dict(SPLIT_ANSWER, extra_ldflags=_stand_in_cuda_libraries())
    make_pch(answer, cache)
    t0 = time.monotonic()
    directory, m = ec.entry_for(answer, "sm_80", cache)[:2]
    seconds = time.monotonic() - t0
    assert m["ok"], m["message"][-3000:]
    assert m["split"] == "used" and m["pch"].startswith("used: "), (m["split"], m["pch"])
    assert {"cuda.kwb-host.cpp", "cuda.kwb-device.cu"} <= set(m["files"]), sorted(m["files"])
    # main.cpp (prototypes and the module) and the host unit compiled as one unit
    assert m["joined"] == "used" and "main.kwb-joined.cpp" in m["files"], (m["joined"], sorted(m["files"]))
    # torch's headers, read ahead for a kernel error that did not come: nothing of it kept or running
    assert ec._TorchViews.PROBE not in m["files"] and not _reading_left_behind(), (sorted(m["files"]),
                                                                                 _reading_left_behind())
    library = os.path.join(directory, "kwb_split_ok.so")
    symbols = subprocess.run(["nm", "-C", "--defined-only", library], capture_output=True, text=True).stdout
    exported = subprocess.run(["nm", "-D", "-C", "--defined-only", library], capture_output=True, text=True).stdout
    # the launcher in the library, not exported from it; the answer's own host function is, as before
    assert "kwb_split_launch_scale_k(" in symbols and "kwb_split_launch" not in exported, exported[-2000:]
    assert "scale_forward(" in exported, exported[-2000:]
    cuobjdump = os.path.join(cpp.CUDA_HOME, "bin", "cuobjdump")
    if os.path.exists(cuobjdump):
        elf = subprocess.run([cuobjdump, "--list-elf", library], capture_output=True, text=True).stdout
        assert "sm_80" in elf, elf
    print(f"  built split in {seconds:.1f} s (a whole build of this .cu does not compile under this torch)")


def split_build_of_what_only_nvcc_declares():
    """Host code calling CUDA's unqualified min and max (which only nvcc's host pass declares), in a
    `.cu` that includes cub without using it (a real answer's shape): built split, the host unit with
    CUDA's overloads after torch's real header (cuda_split.HOST_MIN_MAX) and without cub's headers."""
    cache = os.path.join(ROOT, "split")  # the header made by split_build_of_a_cuda_answer, where it ran
    source = SPLIT_ANSWER["cuda_sources"].replace(
        "scale_k<<<(n + 255) / 256, 256>>>",
        "int blocks = min((int)((n + 255) / 256), 65535);\n    scale_k<<<max(blocks, 1), 256>>>")
    source = source.replace("#include <torch/extension.h>\n", "#include <torch/extension.h>\n#include <cub/cub.cuh>\n")
    assert "min((int)" in source and "cub/cub.cuh" in source
    answer = dict(SPLIT_ANSWER, name="kwb_split_nvcc_only", extra_ldflags=_stand_in_cuda_libraries(), cuda_sources=source)
    make_pch(answer, cache)
    directory, m = ec.entry_for(answer, "sm_80", cache)[:2]
    assert m["ok"], m["message"][-3000:]
    assert m["split"] == "used" and m["pch"].startswith("used: "), (m["split"], m["pch"])
    units = {f: open(os.path.join(directory, f)).read() for f in m["files"] if f.startswith("cuda.kwb-")}
    assert "cub/cub.cuh" in units["cuda.kwb-device.cu"], sorted(units)
    host = next(text for f, text in units.items() if f.endswith(".cpp"))
    assert "cub/" not in host and cs.HOST_MIN_MAX in host, host[:3000]


def a_kernels_own_error_from_the_device_unit():
    cache = os.path.join(ROOT, "split")  # the header made by the case before, where it ran
    for n, (wrong, said) in enumerate((("c[i] = a[i] * s + undeclared_scale;", 'identifier "undeclared_scale" is undefined'),
                                       ("c[i] = a[i] * s + threadIdx.w;", 'class "uint3" has no member "w"'))):
        answer = dict(SPLIT_ANSWER, name=f"kwb_split_kernel_error{n}", extra_ldflags=_stand_in_cuda_libraries(),
                      cuda_sources=SPLIT_ANSWER["cuda_sources"].replace("c[i] = a[i] * s;", wrong))
        make_pch(answer, cache)
        t0 = time.monotonic()
        _, m = ec.entry_for(answer, "sm_80", cache)[:2]
        seconds = time.monotonic() - t0
        assert not m["ok"] and m["split"].startswith("failed: the kernels' own error"), (m["ok"], m["split"])
        assert said in m["split"], m["split"]
        # nvcc's own message, on the answer's own line of its cuda.cu (the device unit's #line)
        assert said in m["message"] and "cuda.kwb-device.cuda.o" in m["message"], m["message"][-3000:]
        # (the line load_inline's cuda.cu has it on, which nvcc quotes under its message)
        assert re.search(rf"/cuda\.cu\(\d+\): error: [^\n]*\n *if \(i < n\) {re.escape(wrong)}\n", m["message"]), \
            m["message"][-3000:]
        assert "cuda.cuda.o" not in m["message"].replace("kwb-device.cuda.o", ""), m["message"][-3000:]
        assert not any(".kwb-" in f for f in m["files"]), sorted(m["files"])
        assert ec._TorchViews.PROBE not in m["files"] and not _reading_left_behind(), (sorted(m["files"]),
                                                                                     _reading_left_behind())
        print(f"  {said}: reported in {seconds:.1f} s, without a whole build")


def split_build_falls_back_to_the_whole():
    cache = os.path.join(ROOT, "split")
    for n, (wrong, why) in enumerate((("c[i] = a[i] * s +;", "an error the rules do not decide"),
                                      # PyObject: Python.h (through torch/extension.h) declares it at file scope
                                      ("PyObject* p = 0; c[i] = a[i] * s + (p == 0);",
                                       "torch's headers declare PyObject where the kernel could see it"))):
        answer = dict(SPLIT_ANSWER, name=f"kwb_split_kernel_whole{n}", extra_ldflags=_stand_in_cuda_libraries(),
                      cuda_sources=SPLIT_ANSWER["cuda_sources"].replace("c[i] = a[i] * s;", wrong))
        make_pch(answer, cache)
        _, m = ec.entry_for(answer, "sm_80", cache)[:2]
        assert not m["ok"] and m["split"].startswith("failed, built whole: "), (m["ok"], m["split"])
        assert why in m["split"], m["split"]
        # the message is the whole build's (nvcc of load_inline's cuda.cu), not the split's units
        assert "FAILED: cuda.cuda.o" in m["message"] and ".kwb-" not in m["message"], m["message"][-3000:]
        assert not any(".kwb-" in f for f in m["files"]), sorted(m["files"])


def split_build_joins_main_cpp_or_builds_apart():
    """main.cpp joined with the host unit where cuda_split allows it; a joined unit that fails on
    main.cpp's lines is built apart, and that build's verdict is the answer's; the host code's own
    error goes on as a host unit's failure (the whole build decides)."""
    cache = os.path.join(ROOT, "split")
    libs = _stand_in_cuda_libraries()
    declined = dict(SPLIT_ANSWER, name="kwb_join_declined", extra_ldflags=libs,
                    cpp_sources=SPLIT_ANSWER["cpp_sources"] + "\n#define UNUSED 1\n")
    make_pch(declined, cache)
    _, m = ec.entry_for(declined, "sm_80", cache)[:2]
    assert m["ok"] and m["split"] == "used", (m["split"], m["message"][-2000:])
    assert m["joined"].startswith("not used: main.cpp has a directive"), m["joined"]
    assert "main.kwb-joined.cpp" not in m["files"], sorted(m["files"])
    # without the header (a cold run's first builds): joined all the same, torch's header first
    cold = dict(SPLIT_ANSWER, name="kwb_join_no_header", extra_ldflags=libs)
    directory, m = ec.entry_for(cold, "sm_80", os.path.join(ROOT, "split-no-header"))[:2]
    assert m["ok"] and m["pch"].startswith("not used") and m["joined"] == "used", (m["pch"], m["joined"])
    with open(os.path.join(directory, "main.kwb-joined.cpp")) as f:
        assert f.read().startswith("#include <torch/extension.h>\n#line 1 "), "torch's header not first"
    # an error in a wrapper main.cpp defines: the joined unit fails on main.cpp's line, the build
    # apart reports main.cpp's own failure, as without the join
    wrapper = dict(SPLIT_ANSWER, name="kwb_join_main_error", extra_ldflags=libs, cpp_sources=SPLIT_ANSWER["cpp_sources"] +
                   "\ntorch::Tensor twice(torch::Tensor A) { return not_declared_anywhere(A); }\n")
    t0 = time.monotonic()
    _, m = ec.entry_for(wrapper, "sm_80", cache)[:2]
    seconds = time.monotonic() - t0
    assert not m["ok"] and m["joined"].startswith("failed, built apart: main.cpp: "), (m["joined"], m["split"])
    assert m["split"] == "used: load_inline's C++ source did not compile", m["split"]
    assert "FAILED: main.o" in m["message"] and "not_declared_anywhere" in m["message"], m["message"][-3000:]
    print(f"  main.cpp's error in a joined unit, built apart: {seconds:.1f} s")
    # the host code's own error: every error on the .cu's lines
    host_error = dict(SPLIT_ANSWER, name="kwb_join_host_error", extra_ldflags=libs,
                      cuda_sources=SPLIT_ANSWER["cuda_sources"].replace("auto c = torch::empty_like(A);",
                                                                        "auto c = torch::empty_like(A, no_such_option);"))
    _, m = ec.entry_for(host_error, "sm_80", cache)[:2]
    assert not m["ok"] and m["joined"] == "used: the host code's own error", (m["joined"], m["split"])
    assert m["split"].startswith("failed, built whole: "), m["split"]
    assert "FAILED: cuda.cuda.o" in m["message"] and ".kwb-" not in m["message"], m["message"][-3000:]


def split_build_reports_a_main_cpp_error():
    cache = os.path.join(ROOT, "split")
    answer = dict(SPLIT_ANSWER, name="kwb_split_main_error", extra_ldflags=_stand_in_cuda_libraries(),
                  cpp_sources=NVCC_ANSWER["cpp_sources"] + "; int broken = ;")
    make_pch(answer, cache)
    t0 = time.monotonic()
    _, m = ec.entry_for(answer, "sm_80", cache)[:2]
    seconds = time.monotonic() - t0
    assert not m["ok"] and m["split"] == "used: load_inline's C++ source did not compile", m["split"]
    assert "FAILED: main.o" in m["message"] and "expected primary-expression" in m["message"], m["message"][-3000:]
    print(f"  main.cpp's error reported in {seconds:.1f} s, without a whole build")


def _names_any(pid, folders):
    """Whether the process's command line names one of the folders (or is a descendant of one that
    does: a spare's bwrap and what runs in it)."""
    try:
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if set(f.read().decode(errors="replace").split("\0")) & set(folders):
                    return True
            with open(f"/proc/{pid}/stat") as f:
                stat_line = f.read()
            pid = int(stat_line[stat_line.rfind(")") + 2:].split()[1])
    except (OSError, ValueError):
        return False
    return False


def _is_descendant(pid, ancestor=None):
    try:
        while pid > 1:
            with open(f"/proc/{pid}/stat") as f:
                stat_line = f.read()
            parent = int(stat_line[stat_line.rfind(")") + 2:].split()[1])
            if parent == (ancestor or os.getpid()):
                return True
            pid = parent
    except (OSError, ValueError):
        return False
    return False


if __name__ == "__main__":
    if any(shutil.which(tool) is None for tool in (os.environ.get("CXX", "c++"), "ninja", "objcopy")):
        print("skipped: no c++, ninja or objcopy on PATH")
        sys.exit(77)
    if NVCC:
        if not os.path.exists(os.path.join(cpp.CUDA_HOME or "/nonexistent", "bin", "nvcc")):
            print(f"skipped: no nvcc under CUDA_HOME ({cpp.CUDA_HOME})")
            sys.exit(77)
        cases = [nvcc_build_stopped_at_a_cpp_error, nvcc_build_stopped_by_the_brokers_pass, split_build_of_a_cuda_answer,
                 split_build_of_what_only_nvcc_declares, a_kernels_own_error_from_the_device_unit, split_build_falls_back_to_the_whole,
                 split_build_joins_main_cpp_or_builds_apart, split_build_reports_a_main_cpp_error]
    else:
        cases = [failed_pch_is_not_published, preparer_plans_what_runs_no_program, planned_build_is_load_inlines_own,
                 same_results_both_ways, compile_error_with_pch, builder_checks_the_early_pass,
                 broker_early_syntax_pass, broker_preparer_plans_the_builds, broker_spare_builds_with_the_header,
                 damaged_pch_is_not_used, broker_makes_pch_for_the_next_build]
    only = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--only=")]
    cases = [c for c in cases if not only or c.__name__ in only]
    ROOT = tempfile.mkdtemp(prefix="kwb-pch-")
    # the builds' own temporary folders in this test's (checked by _reading_left_behind)
    os.makedirs(os.path.join(ROOT, "tmp"))
    tempfile.tempdir = os.path.join(ROOT, "tmp")
    failed = 0
    for case in cases:
        t0 = time.monotonic()
        try:
            case()
            print(f"PASS {case.__name__} ({time.monotonic() - t0:.0f} s)", flush=True)
        except AssertionError as e:
            failed += 1
            print(f"FAIL {case.__name__}: {e}", flush=True)
    for root, dirs, _ in os.walk(ROOT):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(ROOT, ignore_errors=True)
    sys.exit(1 if failed else 0)
