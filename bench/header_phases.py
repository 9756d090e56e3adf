#!/usr/bin/env python3
# Issue 35 item 1: where g++'s time goes in a KernelBench-format answer's C++ compile once torch's
# extension header is precompiled (src/worker/python/extension_cache.py), from g++'s own
# -ftime-report, and how much of it the answer causes.
#
#   pch      the answer's main.cpp as load_inline writes it, compiled with the precompiled header
#            and load_inline's flags (read from the build.ninja of a build through the cache), -c and
#            -fsyntax-only; beside it a translation unit that is torch's header alone, with the same
#            header and flags: what every answer pays whatever it says.
#   headers  torch's header and its parts, each alone without a precompiled header: how much of
#            the instantiation at the end of the unit (g++'s "phase lang. deferred", which a
#            precompiled header does not save) each part brings.
#   first    the same answer with a compile error (an undeclared name, as models write it): the
#            full syntax pass with the header, with -Wfatal-errors, which stops at the first error,
#            before the end-of-unit instantiation, and with the broker's parse stop (every error
#            of the answer's lines, then a stop; extension_cache.PARSE_STOP_NAME): how soon g++
#            knows; and the answer without the error through the parse stop: what a success pays.
#   slim     a prototype, not what kwb builds: <torch/extension.h> answered by a header of
#            <torch/types.h> and <torch/python.h> alone (the C++ frontend's nn, optim, data,
#            serialize, jit, ... left out), precompiled, the same main.cpp compiled with it.
#
# Usage: bench/header_phases.py [--reps N] [--parts pch,first,headers,slim]
# Prints Markdown for bench/results/. Run it alone (flock /tmp/kwb-build.lock on the shared
# machine): every other compile changes these numbers. Each row gives the 1-min load average.
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "src", "worker", "python"))

# A C++-only answer as models write it (tests/fixtures/candidates/kernelbench/cpp_only/L1_05_scale.md).
ANSWER = {"name": "kwb_phases_scale",
          "cpp_sources": "\n#include <torch/extension.h>\ntorch::Tensor scale(torch::Tensor a, double s) { return a * s; }\n",
          "functions": ["scale"]}
PHASES = [("phase parsing", "parsing"), ("phase lang. deferred", "end-of-unit instantiation"),
          ("phase opt and generate", "code generation"), ("PCH main state restore", "header restore")]


def time_report(command, cwd):
    """g++ with -ftime-report: ({phase: user+sys s}, wall s, cpu s, ok)."""
    t0 = time.monotonic()
    done = subprocess.run(command + " -ftime-report", shell=True, cwd=cwd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    phases = {}
    for line in done.stderr.splitlines():
        m = re.match(r"\s*(.+?)\s*:\s*([\d.]+)\s*\(\s*\d+%\)\s*([\d.]+)", line)
        if m:
            phases[m.group(1)] = float(m.group(2)) + float(m.group(3))
    cpu = sum(v for k, v in phases.items() if k.startswith("phase "))
    return phases, wall, cpu, done.returncode == 0


def row(label, runs):
    """A Markdown row: medians over runs of time_report's answers."""
    med = lambda xs: statistics.median(xs)  # noqa: E731
    cells = [f"{med([r[0].get(key, 0.0) for r in runs]):.2f}" for key, _ in PHASES]
    load = os.getloadavg()[0]
    ok = "yes" if all(r[3] for r in runs) else "NO"
    return (f"| {label} | {med([r[2] for r in runs]):.2f} | " + " | ".join(cells) +
            f" | {med([r[1] for r in runs]):.2f} | {ok} | {load:.2f} |")


def header():
    print("| unit | g++ CPU s (phases) | " + " | ".join(name for _, name in PHASES) + " | wall s | compiled | load |")
    print("|---|---:|" + "---:|" * len(PHASES) + "---:|---|---:|")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--parts", default="pch,first,headers,slim")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    import extension_cache as ec
    work = tempfile.mkdtemp(prefix="kwb-header-phases-")
    cache = os.path.join(work, "cache")
    compiler = subprocess.run([os.environ.get("CXX", "c++"), "--version"], capture_output=True, text=True).stdout
    print(f"- compiler: {compiler.splitlines()[0] if compiler else '?'}; torch {ec.torch_versions()[0]}; "
          f"{os.cpu_count()} cores; {args.reps} run(s) a row, medians; phases are g++'s user+sys seconds\n")
    run_build = lambda a, r, staging: ec.build_in_process(a, r, staging, cache)  # noqa: E731
    t0 = time.monotonic()
    pch = ec.ensure_pch(ANSWER, cache, run_build)[0]
    made_s = time.monotonic() - t0
    directory, manifest, _, _, _ = ec.publish(ANSWER, "", cache, run_build)
    assert manifest["ok"] and manifest["pch"].startswith("used"), manifest
    ninja = open(os.path.join(directory, "build.ninja")).read()
    cflags = re.search(r"^cflags = (.*)$", ninja, re.M).group(1)
    post = re.search(r"^post_cflags = (.*)$", ninja, re.M).group(1)
    cxx = re.search(r"^cxx = (.*)$", ninja, re.M).group(1)
    plain_cflags = re.sub(r"-include \S+ -Winvalid-pch ", "", cflags)
    main_cpp = os.path.join(work, "main.cpp")
    with open(main_cpp, "w") as f:
        f.write(open(os.path.join(directory, "main.cpp")).read())
    with open(os.path.join(work, "alone.cpp"), "w") as f:
        f.write("#include <torch/extension.h>\n")
    compile_ = lambda flags, source, mode="-c": f"{cxx} {flags} {mode} {source} -o /dev/null {post}"  # noqa: E731
    reps = lambda command: [time_report(command, work) for _ in range(args.reps)]  # noqa: E731

    if "pch" in parts:
        print(f"### With torch's header precompiled (made in {made_s:.0f} s)\n")
        header()
        print(row("the answer's main.cpp, -c", reps(compile_(cflags, "main.cpp"))))
        print(row("the answer's main.cpp, -fsyntax-only", reps(compile_(cflags, "main.cpp", "-fsyntax-only"))))
        print(row("torch/extension.h alone, -c", reps(compile_(cflags, "alone.cpp"))))
        print(row("torch/extension.h alone, -fsyntax-only", reps(compile_(cflags, "alone.cpp", "-fsyntax-only"))))
        print()
    if "first" in parts:
        with open(os.path.join(work, "failing.cpp"), "w") as f:
            f.write(open(main_cpp).read().replace("return a * s;", "return torch::clamp_min(a, zero) * s;"))
        print("### A compile error: when g++ knows (-fsyntax-only with the header)\n")
        print("| pass | wall s (median) | runs | failed | error lines | note lines |\n|---|---:|---:|---|---:|---:|")
        stop = ec.PARSE_STOP_NAME + "bench"
        for name, text in [("failing-stop.cpp", open(os.path.join(work, "failing.cpp")).read()),
                           ("answer-stop.cpp", open(main_cpp).read())]:
            with open(os.path.join(work, name), "w") as f:
                f.write(text + ("" if text.endswith("\n") else "\n") + ec.parse_stop_text(stop))
        answer_lines = len(open(main_cpp).read().splitlines())
        for label, extra, source in [("the full syntax pass", "", "failing.cpp"),
                                     ("-Wfatal-errors", "-Wfatal-errors ", "failing.cpp"),
                                     ("the parse stop (the broker's early pass)", "", "failing-stop.cpp"),
                                     ("the parse stop, the answer without the error", "", "answer-stop.cpp")]:
            runs = []
            for _ in range(args.reps):
                t0 = time.monotonic()
                done = subprocess.run(compile_(extra + cflags, source, "-fsyntax-only"), shell=True, cwd=work,
                                      capture_output=True, text=True)
                runs.append((time.monotonic() - t0, done))
            out = runs[-1][1].stderr
            failed = all(r[1].returncode == 1 for r in runs)
            if "stop" in source:  # what the broker keeps: the answer's lines, the stop's own cut off
                out, how = ec.split_at_parse_stop(out, source, answer_lines, stop)
                failed = out is not None and "error:" in out
                out = out or ""
            print(f"| {label} | {statistics.median(r[0] for r in runs):.2f} | "
                  f"{', '.join(f'{r[0]:.2f}' for r in runs)} | {'yes' if failed else 'no'} | "
                  f"{out.count(': error: ')} | {out.count(': note: ')} |")
        print()
    if "headers" in parts:
        print("### Each part of torch's header alone, without a precompiled header (-c, one run each)\n")
        header()
        for name in ["torch/extension.h", "torch/all.h", "torch/python.h", "torch/nn.h", "torch/types.h",
                     "ATen/ATen.h", "pybind11/pybind11.h"]:
            source = os.path.join(work, "part.cpp")
            with open(source, "w") as f:
                f.write(f"#include <{name}>\n")
            print(row(f"<{name}>", [time_report(compile_(plain_cflags, "part.cpp"), work)]))
        print()
    if "slim" in parts:
        slim = os.path.join(work, "slim")
        os.makedirs(os.path.join(slim, "torch"))
        with open(os.path.join(slim, "torch", "extension.h"), "w") as f:
            f.write("#pragma once\n#include <torch/types.h>\n#include <torch/python.h>\n")
        gch = os.path.join(slim, "torch", "extension.h.gch")
        flags = f"-I{shlex.quote(slim)} {plain_cflags}"
        t0 = time.monotonic()
        made = subprocess.run(f"{cxx} {flags} -x c++-header {slim}/torch/extension.h -o {gch} {post}", shell=True,
                              cwd=work, capture_output=True, text=True)
        slim_s = time.monotonic() - t0
        print(f"### A prototype: <torch/extension.h> as <torch/types.h> and <torch/python.h> alone, precompiled "
              f"(made in {slim_s:.0f} s{'' if made.returncode == 0 else ', FAILED'})\n")
        header()
        with_slim = f"-include {shlex.quote(os.path.join(slim, 'torch', 'extension.h'))} -Winvalid-pch {flags}"
        print(row("the answer's main.cpp, -c", reps(compile_(with_slim, "main.cpp"))))
        print(row("the answer's main.cpp, -fsyntax-only", reps(compile_(with_slim, "main.cpp", "-fsyntax-only"))))
        print()


if __name__ == "__main__":
    main()
