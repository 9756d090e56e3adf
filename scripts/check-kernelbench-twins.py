#!/usr/bin/env python3
# Builds each KernelBench-format twin (tests/fixtures/candidates/kernelbench/*.md) with the real
# load_inline and compares its ModelNew with the task's reference forward on the GPU, outside the
# worker: a quick check of the twins' CUDA and host code on a machine with Python PyTorch and nvcc.
# The evaluation proper (sandbox, trials, timing, the native twin's speedup) is
# KWB_GPU_ONLY=kernelbench/ build-gpu/bin/tst_gpu_candidates.
# Usage, from the repository root: python3 scripts/check-kernelbench-twins.py [STEM...]
import glob
import os
import re
import sys
import time
import tomllib

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def resolve(value, dims):
    if isinstance(value, list):
        return tuple(resolve(v, dims) for v in value)
    return dims[value] if isinstance(value, str) else value


def check(path):
    stem = os.path.basename(path)[:-3]
    level, number = int(stem[1]), int(stem[3:5])
    task = tomllib.load(open(glob.glob(f"tasks/level{level}/{number:02d}_*.toml")[0], "rb"))
    dims = task.get("dims", {})
    code = re.search(r"```python\n(.*?)```", open(path).read(), re.S).group(1)
    start = time.time()
    namespace = {}
    exec(compile(code, path, "exec"), namespace)  # builds the extension
    built = time.time() - start
    torch.manual_seed(42)
    with torch.no_grad():
        model = namespace["ModelNew"](*[resolve(v, dims) for v in task.get("init_inputs", [])]).cuda()
    got = {n: list(p.shape) for n, p in list(model.named_parameters()) + list(model.named_buffers())}
    want = {p["name"]: [resolve(d, dims) for d in p["shape"]] for p in task.get("params", [])}
    if got != want:
        return f"{stem}: parameters differ: model {got}, task {want}"
    inputs = []
    for spec in task["inputs"]:
        if "shape" in spec:
            inputs.append(torch.rand(*[resolve(d, dims) for d in spec["shape"]], device="cuda"))
        else:
            inputs.append(spec["value"])
    ref_ns = {"torch": torch, "Tensor": torch.Tensor}
    exec("from typing import Dict, List, Optional, Tuple\n" + task["forward"], ref_ns)
    p = {n: t.detach() for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    with torch.no_grad():
        expected = ref_ns["forward"](*inputs, p)
        out = model(*inputs)
        torch.cuda.synchronize()
        diff = (out - expected).abs().max().item()
        ok = torch.allclose(out, expected, atol=1e-4, rtol=1e-4)
    return f"{stem}: {'correct' if ok else 'INCORRECT'} max_abs_diff {diff:.2e}, build {built:.1f} s"


if __name__ == "__main__":
    wanted = sys.argv[1:]
    failures = 0
    for path in sorted(glob.glob("tests/fixtures/candidates/kernelbench/*.md")):
        if wanted and os.path.basename(path)[:-3] not in wanted:
            continue
        try:
            line = check(path)
        except Exception as e:  # a build or run failure is this twin's result
            line = f"{os.path.basename(path)}: FAILED {type(e).__name__}: {str(e)[-3000:]}"
        failures += "correct " not in line
        print(line, flush=True)
    sys.exit(1 if failures else 0)
