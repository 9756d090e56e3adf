#!/usr/bin/env python3
"""Lays CUDA-L1's release (github.com/deepreinforce-ai/CUDA-L1 at 51e8356, optimized_cuda_code/<gpu>.json,
one JSON object a line: level_id, task_id, ref_code, custom_code, score_default, ...) out as run
folders `kwb import kernelbench` reads:

  OUT/cudal1_<gpu>_level<L>/level_<L>_problem_<P>_sample_0_kernel.py   (custom_code)
  OUT/cudal1_<gpu>_level<L>/eval_results.json                         (KernelBench's form)

  cudal1_runs.py --release CUDA-L1/optimized_cuda_code --out DIR

An entry whose custom_code is null or the string "None" is no answer (README: the RL failed to beat the
reference or copied it) and is left out. Every other entry has a measured score_default (ref time /
custom time) from CUDA-L1's own evaluator (eval/eval_cuda.py), so it is recorded as compiled and
correct there, with that speed-up; the release records no failures.
task_id is KernelBench's problem number (1-based) of the KernelBench version CUDA-L1 used
(at 51e8356, 25 entries' ref_code is an older KernelBench version of the same number: compare
ref_code with tasks/kernelbench-src before reading a verdict of those)."""
import argparse
import json
import os

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--release", required=True, help="CUDA-L1's optimized_cuda_code folder (its <gpu>.json files)")
ap.add_argument("--out", required=True, help="where the run folders go (DIR/cudal1_<gpu>_level<L>)")
args = ap.parse_args()
GPUS = {"a100": "NVIDIA A100 (CUDA-L1 a100.json)", "h100": "NVIDIA H100 (CUDA-L1 h100.json)",
        "3090": "NVIDIA RTX 3090 (CUDA-L1 3090.json)", "l40": "NVIDIA L40 (CUDA-L1 l40.json)",
        "h20": "NVIDIA H20 (CUDA-L1 h20.json)"}
n = 0
for gpu, hw in GPUS.items():
    verdicts = {}
    for line in open(os.path.join(args.release, f"{gpu}.json")):
        if not line.strip():
            continue
        e = json.loads(line)
        code = e.get("custom_code")
        if code is None or code.strip() == "None":
            continue
        L, P = int(e["level_id"]), int(e["task_id"])
        run = os.path.join(args.out, f"cudal1_{gpu}_level{L}")
        os.makedirs(run, exist_ok=True)
        with open(f"{run}/level_{L}_problem_{P}_sample_0_kernel.py", "w") as f:
            f.write(code)
        n += 1
        verdicts.setdefault(run, {})[str(P)] = [{
            "sample_id": 0, "compiled": True, "correctness": True,
            "speedup": float(e["score_default"]) if e.get("score_default") not in (None, "None") else None,
            "metadata": {"hardware": hw, "source": "CUDA-L1 release, score_default"}}]
    for run, v in verdicts.items():
        json.dump(v, open(f"{run}/eval_results.json", "w"), indent=1)
print(n, "answers")
