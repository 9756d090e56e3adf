#!/usr/bin/env python3
"""Picks real KernelBench generations out of a git copy of a public corpus into a folder that both
`kwb import kernelbench` and bench/agreement/kb_eval.py read (issue 33's agreement study).

The corpus is read from git (a bare mirror is enough) at a named commit, so the sample is the same
on any machine; nothing of it is committed here (github.com/j1mk1m/Kernel-Coder has no licence).
Each sample's `_kernel.py` is copied: the module the authors' harness extracted and evaluated,
so kwb and KernelBench's evaluator judge the same text. Where that file is empty (the authors'
extraction found no module) the whole `_response.txt` comes instead, and both sides take the module
out of it themselves (kwb's worker by its rules, kb_eval.py by KernelBench's `extract_first_code`, as
KernelBench's `generate_samples.py` does). The run's recorded verdicts
(`eval_results.json`) come along, filtered to the picked samples, as a third opinion.

  select_generations.py --git-dir MIRROR --commit 2b16b23 --out DIR \
      --run test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1 --run ... \
      --problems 1-10 --samples 0-3
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

# level_1_problem_3_solution_0_kernel.py, level_1_problem_3_epoch_0_sample_2_kernel.py, …_sample_0_kernel.py
NAME = re.compile(r"^level_(\d+)_problem_(\d+)_(?:epoch_(\d+)_)?(?:sample|solution)_(\d+)_kernel\.py$")


def numbers(spec):
    out = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--source", default="github.com/j1mk1m/Kernel-Coder", help="the corpus's public name, for the manifest")
    ap.add_argument("--runs-folder", default="runs")
    ap.add_argument("--run", action="append", required=True, help="a run folder under --runs-folder (repeatable)")
    ap.add_argument("--problems", default="1-10")
    ap.add_argument("--samples", default="0-3")
    ap.add_argument("--epoch", type=int, default=0, help="for runs whose names carry an epoch")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only-listed", default="",
                    help="a file of paths (runs/<run>/<name>, '#' lines aside): keep only these, e.g. "
                         "bench/agreement/speed-comparison-51.txt")
    a = ap.parse_args()
    listed = None
    if a.only_listed:
        listed = {l.strip() for l in open(a.only_listed) if l.strip() and not l.startswith("#")}
    commit = git(a.git_dir, "rev-parse", a.commit + "^{commit}").decode().strip()
    problems, samples = numbers(a.problems), numbers(a.samples)
    manifest = {"source": a.source, "commit": commit, "problems": a.problems, "samples": a.samples, "files": []}
    for run in a.run:
        folder = f"{a.runs_folder}/{run}"
        names = git(a.git_dir, "ls-tree", "--name-only", f"{commit}:{folder}").decode().split("\n")
        picked = set()
        for name in sorted(names):
            m = NAME.match(name)
            if not m:
                continue
            level, problem, epoch, sample = int(m[1]), int(m[2]), m[3], int(m[4])
            if problem not in problems or sample not in samples or (epoch is not None and int(epoch) != a.epoch):
                continue
            if listed is not None and f"{folder}/{name}" not in listed:
                continue
            text = git(a.git_dir, "show", f"{commit}:{folder}/{name}")
            if not text.strip():
                response = name[: -len("_kernel.py")] + "_response.txt"
                if response in names:
                    name, text = response, git(a.git_dir, "show", f"{commit}:{folder}/{response}")
            os.makedirs(os.path.join(a.out, folder), exist_ok=True)
            with open(os.path.join(a.out, folder, name), "wb") as f:
                f.write(text)
            picked.add(re.sub(r"_(kernel\.py|response\.txt)$", "", name))
            manifest["files"].append({"path": f"{folder}/{name}", "run": run, "level": level, "problem": problem,
                                      "sample": sample, "kind": "response" if name.endswith(".txt") else "module", "sha256": hashlib.sha256(text).hexdigest(), "bytes": len(text)})
        try:
            verdicts = json.loads(git(a.git_dir, "show", f"{commit}:{folder}/eval_results.json"))
        except subprocess.CalledProcessError:
            verdicts = None
        # A run the list keeps nothing of gets no folder (and no verdicts file to write into one).
        if isinstance(verdicts, list) and picked:  # Kernel-Coder's shape: entries named by evaluation_id
            kept = [v for v in verdicts if v.get("evaluation_id") in picked]
            with open(os.path.join(a.out, folder, "eval_results.json"), "w") as f:
                json.dump(kept, f, indent=1)
        print(f"{run}: {len(picked)} generations", file=sys.stderr)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(manifest['files'])} generations from {a.source} at {commit[:12]} in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
