#!/usr/bin/env python3
"""Lays KernelBench's own leaderboard (github.com/anneouyang/KernelBenchLeaderboard, the KernelBench
authors' site: docs/assets/raw_data.json) out as generation folders `kwb import kernelbench` reads.

Every entry of the leaderboard is an answer KernelBench's harness found correct (it has a measured
`torch_speedup`), from seven models (o1-preview, Claude 3.5 Sonnet, GPT-4o, DeepSeek-Coder,
Llama 3.1 405B/70B, Gemini 1.5 Flash): the corpus on which no refusal of ours may fall. Read from git
(a bare mirror is enough) at a named commit; nothing of it is committed here (the repository has no
licence).

  leaderboard_runs.py --git-dir MIRROR --commit 170ca79 --out DIR

raw_data.json numbers problems from 0 (`problem_id` 39 is the page's "Level 1: 40_LayerNorm", as
data.json, which names each entry's problem, says for every entry it lists): P = problem_id + 1,
checked against data.json where it lists the entry.

DIR/<model>_level<L>/level_<L>_problem_<P>_sample_<S>_kernel.py (S counts a model's entries of one
problem) and DIR/<model>_level<L>/eval_results.json in KernelBench's form, the recorded verdict of
each: compiled, correct, runtime (the leaderboard's kernel_eval_time) and ref_runtime
(baseline_torch_time), both in ms.
"""
import argparse
import collections
import json
import os
import re
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-dir", required=True, help="a git copy of anneouyang/KernelBenchLeaderboard")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    raw = subprocess.run(["git", "--git-dir", args.git_dir, "show", f"{args.commit}:docs/assets/raw_data.json"],
                         check=True, capture_output=True).stdout
    entries = json.loads(raw)
    shown = json.loads(subprocess.run(["git", "--git-dir", args.git_dir, "show",
                                       f"{args.commit}:docs/assets/data.json"], check=True, capture_output=True).stdout)
    page_problem = {}  # an entry's file -> (level, problem) as the page names it ("Level 1: 40_LayerNorm")
    for key, listed in shown.items():
        m = re.match(r"Level (\d+): (\d+)_", key)
        for e in listed if m else ():
            page_problem[e["file"]] = (int(m.group(1)), int(m.group(2)))
    samples = collections.Counter()
    verdicts = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in entries:
        model = re.sub(r"[^A-Za-z0-9.-]+", "-", str(e.get("model") or e.get("display_name") or "unknown")).strip("-")
        level, problem = int(e["level"]), int(e["problem_id"]) + 1
        if page_problem.get(e.get("file"), (level, problem)) != (level, problem):
            raise SystemExit(f"{e.get('file')}: raw_data says level {level} problem {problem}, the page "
                             f"{page_problem[e['file']]}")
        run = f"{model}_level{level}"
        sample = samples[(run, problem)]
        samples[(run, problem)] += 1
        os.makedirs(os.path.join(args.out, run), exist_ok=True)
        with open(os.path.join(args.out, run, f"level_{level}_problem_{problem}_sample_{sample}_kernel.py"), "w") as f:
            f.write(e["code"])
        verdicts[run][str(problem)].append({
            "sample_id": sample, "compiled": True, "correctness": True,
            "runtime": e.get("kernel_eval_time"), "ref_runtime": e.get("baseline_torch_time"),
            "speedup": e.get("torch_speedup"),
            "metadata": {"source": "KernelBench leaderboard", "file": e.get("file")}})
    for run, by_problem in verdicts.items():
        with open(os.path.join(args.out, run, "eval_results.json"), "w") as f:
            json.dump(by_problem, f, indent=1)
    print(f"{sum(samples.values())} answers in {len(verdicts)} run folders under {args.out}")


if __name__ == "__main__":
    main()
