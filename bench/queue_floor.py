#!/usr/bin/env python3
"""Issue 35's queue target: each queue mode's candidates/min against the protocol's GPU floor.

The floor is the GPU time of the forwards the protocol runs for each L1+L2 reference candidate
(kwb-bench-eval-stages' `gpu_floor_ms`, measured in the same call), summed over the tasks the queue
ran; the floor's candidates/min is their count over that sum. Each mode's share is its
candidates/min over the floor's.

With BUSY.csv (nvidia-smi --query-gpu=timestamp,utilization.gpu -lms 100, taken on the same
machine while the modes ran), each mode also gets the GPU's busy share over its span: the mean of
utilization.gpu (the share of the driver's last sample period in which any kernel ran) over the
samples between the mode's started_epoch_ms and ended_epoch_ms. It counts every kernel of the
evaluation, the protocol's checks (shape sets, float64 re-judgements, input variants, flushes)
included, which the floor leaves out: a mode near the floor has both high; a mode far from the
floor with the GPU busy is spending GPU time on the protocol's own work, not waiting on the host.

Usage: queue_floor.py STAGES.json SUPERVISOR.json [BUSY.csv]   (Markdown to stdout)
"""
import datetime
import json
import sys


def busy_samples(path):
    """(epoch seconds, utilization %) of nvidia-smi's csv; lines that do not parse are skipped."""
    out = []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            continue
        try:
            # nvidia-smi writes the machine's local time, which Python's naive timestamp() reads alike
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(parts[1])))
        except ValueError:
            continue
    return out


def busy_share(samples, mode):
    """Mean utilization over the mode's span, and the samples it rests on; None without either."""
    start, end = mode.get("started_epoch_ms"), mode.get("ended_epoch_ms")
    if not samples or start is None or end is None:
        return None
    inside = [u for t, u in samples if start / 1000.0 <= t <= end / 1000.0]
    return (sum(inside) / len(inside), len(inside)) if inside else None


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
    samples = busy_samples(sys.argv[3]) if len(sys.argv) > 3 else []
    print("| mode | correct | candidates/min | share of the floor | target | GPU busy (nvidia-smi, samples) |")
    print("|---|--:|--:|--:|--:|--:|")
    for m in modes:
        target = "85 %" if m["mode"].startswith("reuse") else "80 %"
        busy = busy_share(samples, m)
        busy_text = f"{busy[0]:.0f} % ({busy[1]})" if busy else "–"
        print(f"| {m['mode']} | {m.get('correct', '?')}/{m.get('candidates', '?')} | {m['candidates_per_minute']:.1f} | "
              f"{100 * m['candidates_per_minute'] / per_min:.0f} % | {target} | {busy_text} |")


if __name__ == "__main__":
    main()
