#!/usr/bin/env python3
"""Lays github.com/yenhao-huang/KernelBench (a KernelBench fork, MIT) runs/ out as run folders
`kwb import kernelbench` reads (at 62472a6):

  yenhao_runs.py --runs KernelBench-fork/runs --out DIR

ralph_<model>_cuda_all (the fork's scripts/ralph_*: one answer per problem, levels 1-4):
  generated_kernels/level_L/problem_P.py  -> OUT/ralph_<model>_level<L>/level_L_problem_P_sample_0_kernel.py
  raw_generation/level_L/problem_P.txt    -> ..._response.txt, only where no generated kernel exists
  per_problem/level_L/problem_P.json      -> OUT/.../eval_results.json (KernelBench's form), entries with
                                             status "evaluated" only (their eval_result); other statuses
                                             (static_failed, evaluation_error, ...) go to OUT.side_statuses.json (beside OUT)
  problem_name is checked against tasks/kernelbench-src (our KernelBench copy at 423217d).
openrouter_deepseek_v4_pro_leaderboard_l{1,2,3}: already KernelBench's layout; copied as they are.
Level 4 is left out (kwb's worker has levels 1-3)."""
import argparse
import glob
import json
import os
import shutil

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--runs", required=True, help="the fork's runs/ folder")
ap.add_argument("--out", required=True, help="where the run folders go (emptied first)")
args = ap.parse_args()
SRC, OUT = args.runs, args.out
TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tasks", "kernelbench-src")
names = {}
for L in (1, 2, 3):
    for f in glob.glob(f"{TASKS}/level{L}/*.py"):
        names[(L, int(os.path.basename(f).split("_")[0]))] = os.path.basename(f)
MODELS = {"ralph_codex_cuda_all": "codex-gpt-5.5", "ralph_gemma4_cuda_all": "gemma4-26b-a4b",
          "ralph_qwen36_cuda_all_gpu1_server_isolated": "qwen3.6-35b-a3b"}
side = {}
shutil.rmtree(OUT, ignore_errors=True)
bad = 0
for folder, model in MODELS.items():
    verdicts = {}
    for pj in sorted(glob.glob(f"{SRC}/{folder}/per_problem/level_*/problem_*.json")):
        d = json.load(open(pj))
        L, P = int(d["level"]), int(d["problem_id"])
        if L > 3:
            continue
        if names[(L, P)] != d["problem_name"]:
            print("NUMBERING MISMATCH", pj, d["problem_name"], names[(L, P)]); bad += 1
        run = f"{OUT}/ralph_{model}_level{L}"
        os.makedirs(run, exist_ok=True)
        k = f"{SRC}/{folder}/generated_kernels/level_{L}/problem_{P}.py"
        r = f"{SRC}/{folder}/raw_generation/level_{L}/problem_{P}.txt"
        if os.path.exists(k):
            shutil.copy(k, f"{run}/level_{L}_problem_{P}_sample_0_kernel.py")
        elif os.path.exists(r):
            shutil.copy(r, f"{run}/level_{L}_problem_{P}_sample_0_response.txt")
        else:
            side[f"{run}/L{L}/{P}"] = "no file: " + d.get("status", "")
            continue
        if d.get("status") == "evaluated" and d.get("eval_result"):
            e = dict(d["eval_result"]); e["sample_id"] = 0
            verdicts.setdefault(run, {})[str(P)] = [e]
        side[f"{run}/level_{L}_problem_{P}"] = {k2: d.get(k2) for k2 in ("status", "static_errors", "static_warnings", "error") if d.get(k2)}
    for run, v in verdicts.items():
        json.dump(v, open(f"{run}/eval_results.json", "w"), indent=1)
for L in (1, 2, 3):
    shutil.copytree(f"{SRC}/openrouter_deepseek_v4_pro_leaderboard_l{L}", f"{OUT}/openrouter_deepseek_v4_pro_leaderboard_l{L}")
json.dump(side, open(OUT.rstrip("/") + ".side_statuses.json", "w"), indent=1)  # beside OUT: not a generation
print("numbering mismatches:", bad)
