#!/usr/bin/env python3
# Issue 35 item 1: how long a KernelBench-format answer's extension takes to build, and where the
# time goes, before and after torch's precompiled header (src/worker/python/extension_cache.py).
#
#   stages   one C++-only answer's compile split with load_inline's own flags (read from the
#            build.ninja torch writes): preprocessing (g++ -E), parsing and checking
#            (-fsyntax-only), the rest of the compile (code generation, -c minus -fsyntax-only),
#            the link; then the same with the precompiled header, and the header's own build.
#   builds   each build as the broker runs it: a fresh builder process (`extension_cache.py`'s
#            build_extension, torch imported in it, as `kwb-worker --build-extension` does) into an
#            empty folder, REPS times, alternating:
#              before  the extension cache of BASE (git show BASE:src/worker/python/extension_cache.py):
#                      load_inline's plain build
#              cold    this tree's, no precompiled header yet (what the first answers get while
#                      the broker makes it)
#              warm    this tree's with the header (its hash check included, as the broker does)
#            for a good answer and for one with a compile error (the fixtures below).
#
#   broker   each build as kwb gets it (issue 35 (a)): a request to the build broker (serve_broker,
#            its builds in bwrap where bwrap works, as kwb's), with the header made and the broker
#            started 2 s before (its start hash-checks the headers), REPS times, alternating the
#            broker of BASE and this tree's (kwb's rules: the spare builder, the early syntax
#            pass). The answer's entry is removed before each request, and each request waits
#            --gap s (default 3) after the one before, so this tree's next spare builder, started
#            when a build ends, is ready as it is for answers that come seconds apart (a single
#            `kwb eval` gets one still starting: time that through kwb eval).
#
# Usage: bench/kb_build_speed.py [--reps N] [--base COMMIT] [--parts stages,builds,broker] [--python PY]
#                                [--cuda]   (--cuda: the answer of the nvcc case instead, on a machine
#                                            with nvcc: its build with and without the header)
#                                [--device [--kwb 'KWB --worker W'] [--only WORDS]]
#                                           (the GPU machine's step, under 4 min: load_inline's own
#                                            builds (no header; ninja's per-stage times) and this
#                                            tree's broker (the header) side by side: a C++-only answer
#                                            and one with a compile error, a .cu answer, one with a C++
#                                            error in its bindings and one with an error in its kernel;
#                                            the failing ones through `kwb eval` too with --kwb; the
#                                            libraries built both ways run on the same inputs)
#                                [--parts broker --kernel-errors [--base-dir DIR]]
#                                           (the broker part on two .cu answers with an error in a
#                                            kernel and the .cu that builds, BASE's broker beside this
#                                            tree's; DIR: BASE's
#                                            src/worker/python where git has no history, as on the
#                                            GPU machine)
# Prints a Markdown section (for bench/results/). Run it alone on the machine (flock
# /tmp/kwb-build.lock on the shared 2-core one): other compiles change every number.
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "candidates", "kernelbench", "cpp_only")
GOOD, BAD = "L1_05_scale.md", "L1_19_relu_undeclared.md"

# The CUDA case: a .cu with torch's header and a kernel, its bindings declared in cpp_sources.
CUDA_ANSWER = {
    "name": "kwb_bench_cuda_scale",
    "cpp_sources": "torch::Tensor scale_forward(torch::Tensor A, double s);",
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
}


def load_arguments(path):
    """The load_inline arguments of a fixture answer, read with torch's load_inline replaced."""
    module = re.search(r"```python\n(.*?)```", open(path).read(), re.S).group(1)
    code = ("import json, sys, torch.utils.cpp_extension as c\n"
            "c.load_inline = lambda **k: print(json.dumps(k)) or sys.exit(0)\n" + module)
    out = subprocess.run([ARGS.python, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


BUILDER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import extension_cache as ec
sys.exit(ec.build_extension(sys.argv[2], sys.argv[3]))
"""


def builder_run(module_dir, arguments, arch, pch):
    """One build in a fresh process: (seconds, result)."""
    out = tempfile.mkdtemp(prefix="kwb-bench-build-", dir=WORK)
    request = os.path.join(WORK, "request.json")
    with open(request, "w") as f:
        json.dump({"arguments": arguments, "arch": arch, "pch": pch}, f)
    t0 = time.monotonic()
    subprocess.run([ARGS.python, "-c", BUILDER, module_dir, request, out], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - t0
    with open(os.path.join(out, "kwb-build-result.json")) as f:
        result = json.load(f)
    shutil.rmtree(out)
    return seconds, result


def timed(command, cwd):
    t0 = time.monotonic()
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, text=True)
    return time.monotonic() - t0, done


def stages(ec, arguments):
    """The compile split, with load_inline's flags as torch wrote them into build.ninja."""
    build = os.path.join(WORK, "stages")
    os.makedirs(build)
    result = ec.build_into(arguments, "", build)
    assert result["ok"], result
    ninja = open(os.path.join(build, "build.ninja")).read()
    cxx = re.search(r"^cxx = (.*)$", ninja, re.M).group(1)
    cflags = re.search(r"^cflags = (.*)$", ninja, re.M).group(1)
    ldflags = re.search(r"^ldflags = (.*)$", ninja, re.M).group(1)
    main = os.path.join(build, "main.cpp")
    rows = []
    t_e, _ = timed(f"{cxx} {cflags} -E {main} -o /dev/null", build)
    t_s, _ = timed(f"{cxx} {cflags} -fsyntax-only {main}", build)
    t_c, _ = timed(f"{cxx} {cflags} -c {main} -o main.o", build)
    t_l, _ = timed(f"{cxx} main.o {ldflags} -o x.so", build)
    rows += [("preprocess torch/extension.h and the answer (g++ -E)", t_e),
             ("parse and check (-fsyntax-only, includes -E)", t_s),
             ("code generation (-c minus -fsyntax-only)", t_c - t_s),
             ("compile main.cpp (-c)", t_c), ("link", t_l)]
    cache = os.path.join(WORK, "stages-cache")
    t0 = time.monotonic()
    found = ec.ensure_pch(arguments, cache, lambda a, r, staging: ec.build_in_process(a, r, staging, cache))
    t_pch = time.monotonic() - t0
    assert found and found[1]["ok"], found
    pch = os.path.join(found[0], ec.PCH_WRAPPER)
    with_pch = f"{cxx} -include {shlex.quote(pch)} -Winvalid-pch {cflags}"
    t_sp, done = timed(f"{with_pch} -fsyntax-only {main}", build)
    assert "Winvalid-pch" not in done.stderr, done.stderr
    t_cp, _ = timed(f"{with_pch} -c {main} -o main-pch.o", build)
    same = open(os.path.join(build, "main.o"), "rb").read() == open(os.path.join(build, "main-pch.o"), "rb").read()
    t0 = time.monotonic()
    ec.pch_entry(arguments, cache)
    t_hash = time.monotonic() - t0
    rows += [("with the header: parse and check", t_sp), ("with the header: compile main.cpp", t_cp),
             ("the header's hash check (before each use)", t_hash),
             ("making the header (once per compiler, torch and flags; includes g++'s check that it is taken)", t_pch)]
    print("### Where a cold C++-only build's time goes (one run each)\n")
    print(f"Answer: {GOOD} ({arguments['name']}), load_inline's flags: `{cflags}`\n")
    print("| stage | s |\n|---|---:|")
    for what, s in rows:
        print(f"| {what} | {s:.1f} |")
    print(f"\nmain.o with and without the header: {'the same bytes' if same else 'DIFFERENT'}; "
          f"the .gch: {os.path.getsize(os.path.join(found[0], ec.PCH_FILE)) / 2**20:.0f} MiB\n")
    return found[0]


def summary(values):
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def builds(ec, before_dir, answers, arch):
    cache = os.path.join(WORK, "stages-cache")  # the header of the stages, where they ran
    t0 = time.monotonic()
    found = ec.ensure_pch(answers[0][1], cache, lambda a, r, staging: ec.build_in_process(a, r, staging, cache))
    t_pch = time.monotonic() - t0
    assert found and found[1]["ok"], found
    times = {}
    notes = {}
    for rep in range(ARGS.reps):
        for label, arguments in answers:
            for how in ("before", "cold", "warm") if before_dir else ("cold", "warm"):
                if how == "warm":
                    t0 = time.monotonic()
                    pch, why = ec.pch_entry(arguments, cache)  # the broker's lookup and hash check
                    t_hash = time.monotonic() - t0
                    assert pch, why
                else:
                    pch, t_hash = None, 0.0
                seconds, result = builder_run(before_dir if how == "before" else SRC, arguments, arch, pch)
                times.setdefault((label, how), []).append(seconds + t_hash)
                notes[(label, how)] = (result["ok"], result.get("pch", ""))
    print(f"### Builds as the broker runs them ({ARGS.reps} repetitions; median (min–max) s)\n")
    print("A fresh builder process each (torch imported in it), into an empty folder; warm includes the "
          "header's hash check.\n")
    print(f"| answer | before ({ARGS.base}) | cold, no header yet | warm header |\n|---|---:|---:|---:|")
    for label, _ in answers:
        before = summary(times[(label, 'before')]) if before_dir else "–"
        print(f"| {label} | {before} | {summary(times[(label, 'cold')])} | {summary(times[(label, 'warm')])} |")
    print()
    for (label, how), (ok, note) in sorted(notes.items()):
        print(f"- {label}, {how}: {'built' if ok else 'compile_error'}; pch: {note or '(none)'}")
    print(f"\nMaking the header for these flags (once; 0 where the stages made it): {t_pch:.1f} s\n")


BROKER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import extension_cache as ec
ec.serve_broker(sys.argv[2])
"""


def bwrap_prefix():
    """kwb's builders run in bwrap; a prefix of the same kind (the whole file system, as the
    bench's own view) where bwrap works here, else none (then no early pass: it needs one)."""
    if shutil.which("bwrap") and subprocess.run(["bwrap", "--dev-bind", "/", "/", "--", "true"],
                                                capture_output=True).returncode == 0:
        return ["bwrap", "--dev-bind", "/", "/"]
    return []


def start_broker(module_dir, cache, label, **extra):
    """A broker of the extension cache in module_dir over cache: (socket, process)."""
    builder = os.path.join(WORK, f"builder-{label}.py")
    with open(builder, "w") as f:
        f.write(f"#!{ARGS.python}\n" + BUILDER.replace("sys.path.insert(0, sys.argv[1])",
                                                        f"sys.path.insert(0, {module_dir!r})"))
    os.chmod(builder, 0o755)
    sock = os.path.join(WORK, f"broker-{label}.sock")
    config = os.path.join(WORK, f"broker-{label}.json")
    with open(config, "w") as f:
        json.dump(dict({"socket": sock, "cache_dir": cache, "worker": builder, "builder_prefix": PREFIX,
                        "environment": dict(os.environ)}, **extra), f)
    process = subprocess.Popen([ARGS.python, "-c", BROKER, module_dir, config])
    deadline = time.monotonic() + 30
    while not os.path.exists(sock):
        assert time.monotonic() < deadline and process.poll() is None, "the broker did not start"
        time.sleep(0.05)
    return sock, process


def link_headers(from_cache, to_cache, ec):
    os.makedirs(to_cache, exist_ok=True)
    for n in os.listdir(from_cache):
        if n.startswith(ec.PCH_NAME + "-") and not os.path.exists(os.path.join(to_cache, n)):
            shutil.copytree(os.path.join(from_cache, n), os.path.join(to_cache, n), copy_function=os.link)


def remove_entry(cache, arguments, arch, ec):
    d = ec.entry_dir(cache, arguments["name"], ec.build_key(arguments, arch))
    if os.path.exists(d):
        for root, dirs, _ in os.walk(d):
            os.chmod(root, 0o755)
        shutil.rmtree(d)


def brokered(sock, arguments, arch, ec):
    t0 = time.monotonic()
    _, manifest, cached, _, _ = ec.ask_broker(sock, arguments, arch)
    assert not cached
    return time.monotonic() - t0, manifest


def broker_part(ec, before_dir, answers, arch):
    """Requests to a broker of BASE and one of this tree, alternating, the headers made."""
    headers = ARGS.headers or os.path.join(WORK, "stages-cache")
    for _, arguments in answers:
        ec.ensure_pch(arguments, headers, lambda a, r, staging: ec.build_in_process(a, r, staging, headers))
    versions = ([("before", before_dir, {})] if before_dir else []) + [("after", SRC, {})]
    brokers = {}
    for label, module_dir, extra in versions:
        cache = os.path.join(WORK, f"cache-{label}")
        link_headers(headers, cache, ec)
        brokers[label] = (cache,) + start_broker(module_dir, cache, label, **extra)
    time.sleep(2)
    times, notes, loads, builders = {}, {}, [], {}
    try:
        for rep in range(ARGS.reps):
            for label, arguments in answers:
                for how, (cache, sock, _) in brokers.items():
                    remove_entry(cache, arguments, arch, ec)
                    time.sleep(ARGS.gap)
                    loads.append(os.getloadavg()[0])
                    seconds, m = brokered(sock, arguments, arch, ec)
                    times.setdefault((label, how), []).append(seconds)
                    notes[(label, how)] = (m["ok"], m.get("pch", ""), "[syntax check]" in m.get("message", ""),
                                           m.get("split", ""))
                    builders.setdefault((label, how), []).append(m.get("builder") or "fresh")
    finally:
        for _, _, process in brokers.values():
            process.kill()
            process.wait()
    print(f"### Builds through the broker ({ARGS.reps} repetitions; median (min–max) s)\n")
    print(f"The broker's builds {'in bwrap (as kwb runs them)' if PREFIX else 'without a sandbox (no working bwrap here: no early pass)'}; "
          "the header made; a request from a client that has the answer's load_inline arguments to the "
          "broker's reply.\n")
    print(f"Each request {ARGS.gap:g} s after the one before. \"after\" is this tree's broker as kwb runs it.\n")
    print(f"| answer | before ({ARGS.base}) | after |\n|---|---:|---:|")
    for label, _ in answers:
        before = summary(times[(label, "before")]) if before_dir else "–"
        print(f"| {label} | {before} | {summary(times[(label, 'after')])} |")
    print(f"\n1-min load average before each request: {min(loads):.2f}–{max(loads):.2f} ({os.cpu_count()} cores)\n")
    for (label, how), (ok, note, syntax, split) in sorted(notes.items()):
        kinds = ", ".join(f"{k} {builders[(label, how)].count(k)}" for k in sorted(set(builders[(label, how)])))
        print(f"- {label}, {how}: {'built' if ok else 'compile_error'}{' (reported by a syntax pass)' if syntax else ''}; "
              f"builder: {kinds}; pch: {note or '(none)'}" + (f"; split: {split[:600]}" if split else ""))
    print()


PLAIN = r"""
import json, os, sys, time
t0 = time.monotonic()
import torch.utils.cpp_extension as cpp
t1 = time.monotonic()
arguments = json.load(open(sys.argv[1]))
try:
    cpp.load_inline(build_directory=sys.argv[2], verbose=False, **arguments)
    ok, message = True, ""
except Exception as e:
    ok, message = False, str(e)
print(json.dumps({"import_s": t1 - t0, "build_s": time.monotonic() - t1, "ok": ok, "message": message[-1000:]}))
"""


def plain_build(arguments, arch, ec):
    """torch's own load_inline in a fresh process, as KernelBench builds (the module loaded where
    it built): a Popen whose result plain_result reads."""
    out = tempfile.mkdtemp(prefix="kwb-bench-plain-", dir=WORK)
    request = os.path.join(out, "arguments.json")
    with open(request, "w") as f:
        json.dump(arguments, f)
    env = dict(os.environ)
    if ec._cuda_arch_list(arch):
        env["TORCH_CUDA_ARCH_LIST"] = ec._cuda_arch_list(arch)
    t0 = time.monotonic()
    return (subprocess.Popen([ARGS.python, "-c", PLAIN, request, out], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env), out, t0)


def plain_result(started):
    process, out, t0 = started
    stdout, _ = process.communicate()
    seconds = time.monotonic() - t0
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        result = {"ok": False, "message": "no result", "import_s": 0.0, "build_s": 0.0}
    stages = {}
    try:  # ninja's own log: each edge's start and end (ms from ninja's start)
        for line in open(os.path.join(out, ".ninja_log")):
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 5:
                stages[fields[3]] = (int(fields[1]) - int(fields[0])) / 1000.0
    except OSError:
        pass
    result["wall_s"], result["stages"], result["dir"] = seconds, stages, out
    try:
        with open(os.path.join(out, "main.cpp"), "rb") as f:
            result["main_cpp"] = f.read()
    except OSError:
        result["main_cpp"] = None
    return result


OUTPUTS = r"""
import hashlib, importlib.util, sys, torch
name, directory, function, device = sys.argv[1:5]
spec = importlib.util.spec_from_file_location(name, f"{directory}/{name}.so")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
a = torch.randn(2048, 1024, generator=torch.Generator().manual_seed(7)).to(device)
out = getattr(module, function)(a, 3.5)
torch.cuda.synchronize() if device == "cuda" else None
print(hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest(), bool(torch.equal(out, a * 3.5)))
"""


def library_outputs(name, directory, function, device):
    """The library's function on fixed inputs, in a process of its own (one library of a name per
    process): (sha256 of the output's bytes, whether it is torch's a * 3.5), or the error."""
    done = subprocess.run([ARGS.python, "-c", OUTPUTS, name, directory, function, device], capture_output=True,
                          text=True)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["?"])[-1][:200]
    digest, equal = done.stdout.split()[-2:]
    return digest, equal == "True"


def answer_markdown(arguments, function):
    """A KernelBench-format answer to L1/5 (A * s) whose load_inline gets these arguments, each a
    keyword with a literal (as models write them: the worker reads such calls before torch)."""
    call = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return ("```python\nimport torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
            f"ext = load_inline({call})\n\n\nclass ModelNew(torch.nn.Module):\n"
            f"    def forward(self, A, s):\n        return ext.{function or 'scale'}(A, s)\n```\n")


def kwb_evals(answers, headers, ec):
    """Each answer through `kwb eval` (ARGS.kwb: the command), its cache cold but the headers made:
    the time a user waits for a compile error, the worker's start and torch's import included."""
    print("### Through `kwb eval` (a fresh kwb, its broker and a sandboxed worker each; the header made; "
          "the time a user waits)\n")
    print("| answer | wall s | status | reported by | pch (the build's own note) |\n|---|---:|---|---|---|", flush=True)
    for n, (label, arguments, function) in enumerate(answers):
        path = os.path.join(WORK, f"answer-{n}.md")
        with open(path, "w") as f:
            f.write(answer_markdown(arguments, function))
        cache = os.path.join(WORK, f"kwb-cache-{n}")
        link_headers(headers, cache, ec)
        t0 = time.monotonic()
        done = subprocess.run(shlex.split(ARGS.kwb) + ["eval", "L1/5", path, "--json"], capture_output=True, text=True,
                              env=dict(os.environ, KWB_EXTENSION_CACHE=cache))
        seconds = time.monotonic() - t0
        try:
            result = json.loads(done.stdout)
            status, message = result.get("status", "?"), str(result.get("message", ""))
            # kwb eval --json: the worker's own result is its "response" (the builds are there).
            builds = ((result.get("response") or {}).get("compile") or {}).get("extensions") or []
        except ValueError:
            status, message, builds = f"no result (exit {done.returncode}): {done.stderr.strip()[-200:]}", "", []
        # Each build's own note (kernelbench_host.py lists failed builds too): whether it had the
        # header, and where not, why; g++'s line alone cannot say why.
        notes = "; ".join(str(b.get("pch") or "(none)") for b in builds) or "(no build listed)"
        by = "the syntax pass" if "[syntax check]" in message else "ninja's compile" if status == "compile_error" else "–"
        print(f"| {label} | {seconds:.1f} | {status} | {by} | {notes} |", flush=True)
    # Where kwb's broker did not take them, its note says what it looked for; this is what they are.
    for made_for in sorted({ec.pch_wanted(arguments) for _, arguments, _ in answers}):
        print(f"\n- a header linked in: {made_for} (made by this script's python3)")
    print()


def device_quick(ec, answers, arch):
    """The GPU machine's step: load_inline's own builds and the headers' builds all at once, then
    this tree's broker one request at a time, `kwb eval` where ARGS.kwb names it, and the libraries
    built both ways run on the same inputs. answers: (label, arguments, the function to call or
    None where the answer does not build)."""
    headers = ARGS.headers or os.path.join(WORK, "stages-cache")
    t0 = time.monotonic()
    plain = {label: plain_build(arguments, arch, ec) for label, arguments, _ in answers}
    # The headers in threads of this process beside them: their g++ runs are processes.
    import threading
    made = {}
    failures = {}  # a header's failed build: its whole message (the table keeps the last line)

    def make(label, arguments):
        t = time.monotonic()
        try:
            found = ec.ensure_pch(arguments, headers, lambda a, r, staging: ec.build_in_process(a, r, staging, headers))
            made[label] = (time.monotonic() - t, found is not None and found[1]["ok"])
        except Exception as e:  # noqa: BLE001 (reported in the table)
            made[label] = (time.monotonic() - t, f"failed: {str(e).splitlines()[-1][:200] if str(e) else e}")
            failures[label] = str(e)
    threads = [threading.Thread(target=make, args=(label, arguments)) for label, arguments, _ in answers]
    for t in threads:
        t.start()
    plain = {label: plain_result(started) for label, started in plain.items()}
    for t in threads:
        t.join()
    first_s = time.monotonic() - t0
    f = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
    print(f"### Without the header: load_inline's own builds (arch {arch}; one run each, all at once with the "
          f"headers' builds: {first_s:.0f} s in all)\n")
    print("| answer | wall s | torch import s | main.o s | cuda.cuda.o s | link s | result | header made s |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for label, _, _ in answers:
        p = plain[label]
        st = p["stages"]
        so = next((v for k, v in st.items() if k.endswith(".so")), None)
        print(f"| {label} | {p['wall_s']:.1f} | {p['import_s']:.1f} | {f(st.get('main.o'))} | {f(st.get('cuda.cuda.o'))} | "
              f"{f(so)} | {'built' if p['ok'] else 'compile_error'} | {made.get(label, (0.0, '?'))[0]:.0f} |")
    print(flush=True)
    for label, arguments, _ in answers:
        # The early pass counts only where the broker's guess of main.cpp is torch's file.
        guess = ec.load_inline_main_cpp(arguments)
        same = guess is not None and plain[label]["main_cpp"] == guess.encode()
        print(f"- {label}: header: {made.get(label, ('', '?'))[1]}; the broker's main.cpp "
              f"{'is' if same else 'is NOT'} the one load_inline wrote")
    for label, message in failures.items():
        # The compiler's own words: the table's last line ("compilation terminated.") says too little.
        tail = "\n".join(message.splitlines()[-25:])
        print(f"\n<details><summary>{label}: the header's build failed</summary>\n\n```\n{tail[-3000:]}\n```\n</details>")
    print()
    cache = os.path.join(WORK, "cache-after")
    link_headers(headers, cache, ec)
    sock, broker = start_broker(SRC, cache, "after")
    time.sleep(2)
    print(f"### With the header: the same answers through this tree's broker, one at a time "
          f"({'in bwrap' if PREFIX else 'without a sandbox (no working bwrap: no early pass)'})\n")
    print("| answer | broker s | result | pch |\n|---|---:|---|---|", flush=True)
    entries = {}

    def through_broker(label, arguments):
        remove_entry(cache, arguments, arch, ec)
        seconds, m = brokered(sock, arguments, arch, ec)
        entries[label] = ec.entry_dir(cache, arguments["name"], ec.build_key(arguments, arch))
        how = "built" if m["ok"] else ("compile_error, by the syntax pass" if "[syntax check]" in m["message"]
                                       else "compile_error")
        print(f"| {label} | {seconds:.1f} | {how} | {m.get('pch') or '(none)'} |", flush=True)

    def same_outputs():
        print(f"### The libraries built both ways, run on the same inputs (2048×1024, ×3.5; {time.monotonic() - t0:.0f} "
              "s into the step)\n")
        print("| answer | load_inline's own | through the broker | same output bytes |\n|---|---|---|---|")
        for label, arguments, function in answers:
            if function is None or label not in entries or not plain[label]["ok"]:
                continue
            device = "cuda" if arguments.get("cuda_sources") else "cpu"
            mine = library_outputs(arguments["name"], plain[label]["dir"], function, device)
            theirs = library_outputs(arguments["name"], entries[label], function, device)
            word = lambda o: o[1] if isinstance(o[1], str) else ("torch's a * 3.5" if o[1] else "NOT torch's a * 3.5")  # noqa: E731
            print(f"| {label} | {word(mine)} | {word(theirs)} | {'yes' if mine[0] and mine[0] == theirs[0] else 'NO'} |",
                  flush=True)
        print()

    # The quick ones first, then the .cu answer that builds and the outputs, the .cu error last: a
    # step cut by its time limit still has the rest.
    slow = [a for a in answers if a[1].get("cuda_sources") and "C++ error" not in a[0]]
    slow.sort(key=lambda a: a[2] is None)
    try:
        for label, arguments, _ in [a for a in answers if a not in slow]:
            through_broker(label, arguments)
        print()
        if ARGS.kwb:
            kwb_evals([a for a in answers if a not in slow and a[2] is None], headers, ec)
        for n, (label, arguments, function) in enumerate(slow):
            if n == 0:
                print(f"(the slower ones, {time.monotonic() - t0:.0f} s into the step)\n")
                print("| answer | broker s | result | pch |\n|---|---:|---|---|", flush=True)
            if function is None and not any(a[2] is None for a in slow[:n]):
                print()
                same_outputs()
                print("| answer | broker s | result | pch |\n|---|---:|---|---|", flush=True)
            through_broker(label, arguments)
        if all(a[2] is not None for a in slow):
            print()
            same_outputs()
    finally:
        broker.kill()
        broker.wait()
    print()


def main():
    global ARGS, WORK, SRC, PREFIX
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--gap", type=float, default=3.0, help="broker part: seconds between requests")
    parser.add_argument("--base", default="HEAD", help="the commit whose extension_cache.py is 'before'")
    parser.add_argument("--base-dir", help="a folder holding BASE's src/worker/python files (`git archive BASE "
                                           "src/worker/python`, unpacked), for a tree without its history")
    parser.add_argument("--kernel-errors", action="store_true",
                        help="broker part: two .cu answers with an error in a kernel (a name torch's headers have "
                             "somewhere, and one they lack) and the .cu that builds, on nvcc's arch KWB_BENCH_ARCH, "
                             "instead of the C++ ones")
    parser.add_argument("--parts", default="stages,builds")
    parser.add_argument("--python", default=sys.executable, help="a Python with torch (the worker's)")
    parser.add_argument("--cuda", action="store_true")
    parser.add_argument("--device", action="store_true")
    parser.add_argument("--headers", help="broker and device parts: a cache folder whose precompiled headers "
                                          "are taken (made there where missing)")
    parser.add_argument("--kwb", help="device part: the command that runs kwb (e.g. 'kwb --worker W'), to time "
                                      "`kwb eval` of the failing answers too")
    parser.add_argument("--only", help="device part: the answers whose labels hold one of these words (comma-"
                                       "separated), e.g. C++-only on a machine without nvcc")
    ARGS = parser.parse_args()
    SRC = os.path.join(REPO, "src", "worker", "python")
    WORK = tempfile.mkdtemp(prefix="kwb-bench-kb-build-")
    sys.path.insert(0, SRC)
    import extension_cache as ec
    before_dir = os.path.join(os.path.abspath(ARGS.base_dir), "src", "worker", "python") if ARGS.base_dir else None
    shown = subprocess.run(["git", "-C", REPO, "show", f"{ARGS.base}:src/worker/python/extension_cache.py"],
                           capture_output=True, text=True) if ARGS.base and not before_dir else None
    if before_dir:
        assert os.path.isfile(os.path.join(before_dir, "extension_cache.py")), f"no extension_cache.py in {before_dir}"
    elif shown is not None and shown.returncode == 0:
        before_dir = os.path.join(WORK, "before")
        os.makedirs(before_dir)
        with open(os.path.join(before_dir, "extension_cache.py"), "w") as f:
            f.write(shown.stdout)
        # The modules it loads from its own folder (cuda_split.py since the split build).
        for helper in ("cuda_split.py", "split_verdict.py"):
            text = subprocess.run(["git", "-C", REPO, "show", f"{ARGS.base}:src/worker/python/{helper}"],
                                  capture_output=True, text=True)
            if text.returncode == 0:
                with open(os.path.join(before_dir, helper), "w") as f:
                    f.write(text.stdout)
    else:  # a tree without its history (the GPU machine's copy): "cold" is load_inline's plain build
        print(f"(no 'before' column: no extension_cache.py of {ARGS.base or 'a base commit'} here)\n")
    PREFIX = bwrap_prefix()
    try:
        if ARGS.device:
            arch = os.environ.get("KWB_BENCH_ARCH", "sm_90")
            bad = dict(CUDA_ANSWER, name="kwb_bench_cuda_bad", cpp_sources=CUDA_ANSWER["cpp_sources"].rstrip(";"))
            # The commonest failure of small models' CUDA: a name the kernel does not declare.
            bad_cu = dict(CUDA_ANSWER, name="kwb_bench_cuda_bad_kernel",
                          cuda_sources=CUDA_ANSWER["cuda_sources"].replace("c[i] = a[i] * s;", "c[i] = a[j] * s;"))
            answers = [(f"{BAD} (C++-only, compile error)", load_arguments(os.path.join(FIXTURES, BAD)), None),
                       (f"{GOOD} (C++-only)", load_arguments(os.path.join(FIXTURES, GOOD)), "scale"),
                       ("CUDA answer, C++ error in its bindings", bad, None),
                       ("CUDA answer (.cu + bindings)", CUDA_ANSWER, "scale_forward"),
                       ("CUDA answer, error in its kernel (.cu)", bad_cu, None)]
            if ARGS.only:
                answers = [a for a in answers if any(word in a[0] for word in ARGS.only.split(","))]
            device_quick(ec, answers, arch)
            return
        if ARGS.cuda:
            bad = dict(CUDA_ANSWER, name="kwb_bench_cuda_bad",
                       cpp_sources=CUDA_ANSWER["cpp_sources"].rstrip(";"))  # main.cpp does not compile
            extra = ["-std=c++17"] if os.environ.get("KWB_BENCH_CUDA_STD17") else []
            answers = [("CUDA answer (.cu + bindings)", dict(CUDA_ANSWER, extra_cuda_cflags=extra)),
                       ("CUDA answer, C++ error in its bindings", dict(bad, extra_cuda_cflags=extra))]
            builds(ec, before_dir, answers, os.environ.get("KWB_BENCH_ARCH", "sm_90"))
            return
        if ARGS.kernel_errors:
            # The commonest failure of small models' CUDA: a name the kernel does not declare; `j`
            # occurs in torch's headers (their declarations are read), `undeclared_scale` does not.
            # And the same `.cu` without the error: what reading torch's headers ahead costs a success.
            answers = [(f"`.cu`, `{said}` in its kernel", dict(CUDA_ANSWER, name=f"kwb_bench_cuda_kernel_error{n}",
                                                               cuda_sources=CUDA_ANSWER["cuda_sources"].replace(
                                                                   "c[i] = a[i] * s;", wrong)))
                       for n, (said, wrong) in enumerate((("a[j]", "c[i] = a[j] * s;"),
                                                          ("undeclared_scale", "c[i] = a[i] * undeclared_scale;")))]
            answers.append(("`.cu` that builds (split)", CUDA_ANSWER))
            broker_part(ec, before_dir, answers, os.environ.get("KWB_BENCH_ARCH", "sm_90"))
            return
        good = load_arguments(os.path.join(FIXTURES, GOOD))
        bad = load_arguments(os.path.join(FIXTURES, BAD))
        if "stages" in ARGS.parts:
            stages(ec, good)
        if "builds" in ARGS.parts:
            builds(ec, before_dir, [(f"{GOOD} (C++-only)", good), (f"{BAD} (compile error)", bad)], "")
        if "broker" in ARGS.parts:
            broker_part(ec, before_dir, [(f"{GOOD} (C++-only)", good), (f"{BAD} (compile error)", bad)], "")
    finally:
        for root, dirs, _ in os.walk(WORK):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
