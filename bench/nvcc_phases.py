#!/usr/bin/env python3
# Usage (on the GPU machine, nvcc on PATH, python3 with torch): bench/nvcc_phases.py [--alone]
# Where nvcc's time goes for a KernelBench-format CUDA answer's .cu (issue 35 item 1), and what
# would shorten it: load_inline's own nvcc command (from the build.ninja torch writes, with torch's
# ninja run replaced) timed with --time per phase, beside variants of it:
#   as load_inline runs it
#   --threads 0       whether nvcc runs one arch's host and device chains side by side
#   no python.h       torch/extension.h shadowed (-I, ahead of torch's -isystem) by one that
#                     includes torch/all.h alone: what pybind11 and Python.h cost each pass
#   torch/types.h     shadowed by torch/types.h (ATen, c10, the Tensor API): what torch's C++
#                     frontend costs on top
# All at once (each nvcc is one process per phase; the machine has 16 cores), or one after another
# with --alone. Each variant's object is compared with load_inline's (same bytes or not).
import csv
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import torch.utils.cpp_extension as ce

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kb_build_speed import CUDA_ANSWER  # noqa: E402 (the same CUDA answer as the build-speed bench's)

SHIMS = {"no python.h": "#pragma once\n#include <torch/all.h>\n",
         "torch/types.h": "#pragma once\n#include <torch/types.h>\n"}


class Stop(Exception):
    pass


def stop(*args, **kwargs):
    raise Stop()


def main():
    ce._run_ninja_build = stop  # torch writes build.ninja, then this stops it: the commands are read
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    d = tempfile.mkdtemp(prefix="kwb-nvcc-")
    try:
        ce.load_inline(**dict(CUDA_ANSWER, name="kwb_nvcc_phases"), build_directory=d)
    except Stop:
        pass
    ninja = open(os.path.join(d, "build.ninja")).read()

    def get(key):
        m = re.search(r"^%s = (.*)$" % key, ninja, re.M)
        return m.group(1) if m else ""

    cu = [f for f in os.listdir(d) if f.endswith(".cu")][0]
    nvcc, flags, post = get("nvcc"), get("cuda_cflags"), get("cuda_post_cflags")
    print("command: %s %s -c %s -o cuda.o %s\n" % (nvcc, flags, cu, post))
    variants = [("as load_inline runs it", ""), ("--threads 0", " --threads 0")]
    for name, text in SHIMS.items():
        shim = os.path.join(d, "shim-" + re.sub(r"\W", "_", name), "torch")
        os.makedirs(shim)
        with open(os.path.join(shim, "extension.h"), "w") as f:
            f.write(text)
        variants.append((name, " -I" + os.path.dirname(shim)))
    results = {}

    def run(k, name, extra):
        out = "v%d.o" % k
        t0 = time.monotonic()
        r = subprocess.run("%s %s%s -c %s -o %s %s --time t%d.csv" % (nvcc, flags, extra, cu, out, post, k),
                           shell=True, cwd=d, capture_output=True, text=True)
        phases = []
        if os.path.exists(os.path.join(d, "t%d.csv" % k)):
            phases = [(row[1].strip(), float(row[6])) for row in list(csv.reader(open(os.path.join(d, "t%d.csv" % k))))[1:]
                      if len(row) > 6]
        results[k] = (name, r.returncode, time.monotonic() - t0, phases, r.stderr[-400:])

    threads = [threading.Thread(target=run, args=(k, n, e)) for k, (n, e) in enumerate(variants)]
    for th in threads:
        th.start()
        if "--alone" in sys.argv:
            th.join()
    for th in threads:
        th.join()
    base = open(os.path.join(d, "v0.o"), "rb").read() if os.path.exists(os.path.join(d, "v0.o")) else b""
    names = ["gcc (preprocessing 4)", "cudafe++", "gcc (preprocessing 1)", "cicc", "ptxas", "gcc (compiling)"]
    print("| variant | rc | wall s | " + " | ".join(names) + " (ms) | object as load_inline's |")
    print("|---|--:|--:|" + "--:|" * len(names) + "---|")
    for k in sorted(results):
        name, rc, wall, phases, err = results[k]
        ms = {p: v for p, v in phases}
        obj = os.path.join(d, "v%d.o" % k)
        same = "-" if k == 0 else ("same bytes" if os.path.exists(obj) and open(obj, "rb").read() == base
                                   else "differs" if os.path.exists(obj) else "none")
        print("| %s | %d | %.1f | %s | %s |" % (name, rc, wall, " | ".join("%.0f" % ms.get(p, 0) for p in names), same))
        if rc:
            print("\n    " + err.replace("\n", "\n    "))
    print("\n(%s)" % ("one after another" if "--alone" in sys.argv else "all at once"))


if __name__ == "__main__":
    main()
