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
# Usage: bench/kb_build_speed.py [--reps N] [--base COMMIT] [--parts stages,builds] [--python PY]
#                                [--cuda]   (--cuda: the answer of the nvcc case instead, on a machine
#                                            with nvcc: its build with and without the header)
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


def main():
    global ARGS, WORK, SRC
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--base", default="HEAD", help="the commit whose extension_cache.py is 'before'")
    parser.add_argument("--parts", default="stages,builds")
    parser.add_argument("--python", default=sys.executable, help="a Python with torch (the worker's)")
    parser.add_argument("--cuda", action="store_true")
    ARGS = parser.parse_args()
    SRC = os.path.join(REPO, "src", "worker", "python")
    WORK = tempfile.mkdtemp(prefix="kwb-bench-kb-build-")
    sys.path.insert(0, SRC)
    import extension_cache as ec
    before_dir = None
    shown = subprocess.run(["git", "-C", REPO, "show", f"{ARGS.base}:src/worker/python/extension_cache.py"],
                           capture_output=True, text=True) if ARGS.base else None
    if shown is not None and shown.returncode == 0:
        before_dir = os.path.join(WORK, "before")
        os.makedirs(before_dir)
        with open(os.path.join(before_dir, "extension_cache.py"), "w") as f:
            f.write(shown.stdout)
    else:  # a tree without its history (the GPU machine's copy): "cold" is load_inline's plain build
        print(f"(no 'before' column: no extension_cache.py of {ARGS.base or 'a base commit'} here)\n")
    try:
        if ARGS.cuda:
            bad = dict(CUDA_ANSWER, name="kwb_bench_cuda_bad",
                       cpp_sources=CUDA_ANSWER["cpp_sources"].rstrip(";"))  # main.cpp does not compile
            extra = ["-std=c++17"] if os.environ.get("KWB_BENCH_CUDA_STD17") else []
            answers = [("CUDA answer (.cu + bindings)", dict(CUDA_ANSWER, extra_cuda_cflags=extra)),
                       ("CUDA answer, C++ error in its bindings", dict(bad, extra_cuda_cflags=extra))]
            builds(ec, before_dir, answers, os.environ.get("KWB_BENCH_ARCH", "sm_90"))
            return
        good = load_arguments(os.path.join(FIXTURES, GOOD))
        bad = load_arguments(os.path.join(FIXTURES, BAD))
        if "stages" in ARGS.parts:
            stages(ec, good)
        if "builds" in ARGS.parts:
            builds(ec, before_dir, [(f"{GOOD} (C++-only)", good), (f"{BAD} (compile error)", bad)], "")
    finally:
        for root, dirs, _ in os.walk(WORK):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
