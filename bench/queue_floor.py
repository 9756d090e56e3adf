#!/usr/bin/env python3
"""Issue 35's queue target: each queue mode's candidates/min against the protocol's GPU floor.

The floor is the GPU time of the forwards the protocol runs for each L1+L2 reference candidate
(kwb-bench-eval-stages' `gpu_floor_ms`, measured in the same call), summed over the tasks the queue
ran; the floor's candidates/min is their count over that sum. Each mode's share is its
candidates/min over the floor's.

Usage: queue_floor.py STAGES.json SUPERVISOR.json   (Markdown to stdout)
"""
import json
import sys


def main():
    stages = json.load(open(sys.argv[1]))
    queue = json.load(open(sys.argv[2]))
    floor = {}
    for row in stages.get("rows", []):
        if row.get("status") == "correct" and row.get("gpu_floor_ms"):
            floor.setdefault(row["task"], row["gpu_floor_ms"])
    modes = queue.get("modes", [])
    if not modes:
        print("no queue modes in", sys.argv[2])
        return
    tasks = [j["task"] for j in modes[0]["jobs"]]
    missing = [t for t in tasks if t not in floor]
    if missing:
        print("no GPU floor for", ", ".join(missing), "(the stages part must run in the same call)")
        return
    total_ms = sum(floor[t] for t in tasks)
    per_min = 60000.0 * len(tasks) / total_ms
    print(f"GPU floor over these {len(tasks)} tasks: {total_ms / 1000:.2f} s, {per_min:.1f} candidates/min")
    print()
    print("| mode | candidates/min | share of the floor | target |")
    print("|---|--:|--:|--:|")
    for m in modes:
        target = "85 %" if m["mode"].startswith("reuse") else "80 %"
        print(f"| {m['mode']} | {m['candidates_per_minute']:.1f} | {100 * m['candidates_per_minute'] / per_min:.0f} % | {target} |")


if __name__ == "__main__":
    main()
