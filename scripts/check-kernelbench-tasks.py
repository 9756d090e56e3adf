#!/usr/bin/env python3
"""Checks the task files against KernelBench's own references on a GPU (issue 37 item 2).

For every task the worker lists: the task's reference (kwb-worker's `run_reference`, the task's
TorchScript forward with the evaluator's weights and inputs under seed 42) and KernelBench's
(its problem file's Model(*get_init_inputs()) on the CPU under torch.manual_seed(42), moved to the
GPU, called on get_inputs() drawn under seed 42, in training mode and under no_grad, as
KernelBench's eval does), at full scale: output shape, mean, min, max, and KernelBench's eager
time (CUDA events, 3 warm-ups, 10 timed calls, the mean). The two draw their weights and inputs
from different generators (the worker on the GPU's, KernelBench on the CPU's), so values agree in
distribution, not bit for bit: the table's verdict `agree` means the shapes are equal and mean,
min and max lie within a band of KernelBench's output range (|d mean| <= 5 %, |d min|, |d max| <= 10 %
of max - min, plus 1e-6), a heuristic that flags a wrong op, scale or layout, not rounding.

Needs python3 with torch and a CUDA GPU (the machine the worker runs on), the built worker and a
KernelBench checkout (or tasks/kernelbench-src, which holds the same files):

    python3 scripts/check-kernelbench-tasks.py --worker build/release/bin/kwb-worker \\
        --kernelbench tasks/kernelbench-src --out bench/results/$(date +%F)-kernelbench-tasks-h200.md

Results are appended to a JSON-lines file (--state, default beside --out) as each task finishes, and a
task already there is not run again: a run cut short by a time limit resumes where it stopped.
--tasks L2/1,L3:11-20 or --level 2 picks tasks. KernelBench-only tasks have KernelBench's side only.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time


class Worker:
    """kwb-worker over its line protocol (docs/protocol.md)."""

    def __init__(self, program, tasks_dir):
        args = [program] + (["--tasks-dir", tasks_dir] if tasks_dir else [])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.next_id = 0

    def request(self, body):
        self.next_id += 1
        body = dict(body, id=self.next_id)
        self.proc.stdin.write(json.dumps(body) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the worker ended (exit %s)" % self.proc.poll())
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                return reply

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a worker that does not end is killed
            self.proc.kill()


def parse_ids(spec, ids):
    """L2/1, L3:11-20 (comma list) or a level's number, against the worker's ids."""
    out = []
    for part in spec.split(","):
        part = part.strip()
        if "/" in part:
            out.append(part)
        elif ":" in part:
            level, rng = part[1:].split(":")
            lo, _, hi = rng.partition("-")
            out += ["L%s/%d" % (level, n) for n in range(int(lo), int(hi or lo) + 1)]
    return [i for i in ids if i in set(out)]


def kernelbench_reference(path, device, trials):
    import torch  # only here: --help and the worker side need no torch

    namespace = {"__name__": "kernelbench_problem"}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), namespace)  # noqa: S102 - KernelBench's own reference file
    torch.manual_seed(42)
    init = namespace["get_init_inputs"]()
    torch.manual_seed(42)
    with torch.no_grad():
        model = namespace["Model"](*init)
    model = model.to(device=device, dtype=torch.float32)
    torch.manual_seed(42)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()]
    with torch.no_grad():
        out = model(*inputs)
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(trials):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    if isinstance(out, (tuple, list)):
        out = out[0]
    o = out.detach().double()
    row = {"shape": list(out.shape), "mean": o.mean().item(), "min": o.min().item(), "max": o.max().item(),
           "eager_ms": sum(times) / len(times)}
    del model, inputs, out, o
    torch.cuda.empty_cache()
    return row


def verdict(w, k):
    if "error" in w or "error" in k:
        return "error"
    if w["shape"] != k["shape"]:
        return "shape differs"
    band = max(k["max"] - k["min"], 0.0)
    ok = (abs(w["mean"] - k["mean"]) <= 0.05 * band + 1e-6 and abs(w["min"] - k["min"]) <= 0.10 * band + 1e-6
          and abs(w["max"] - k["max"]) <= 0.10 * band + 1e-6)
    return "agree" if ok else "values differ"


def fmt(x):
    return "n/a" if x is None else ("%.4g" % x if isinstance(x, float) else str(x))


def write_table(rows, out, meta):
    lines = ["# KernelBench tasks against KernelBench's references (issue 37 item 2)", "",
             "Made by `scripts/check-kernelbench-tasks.py` %s." % meta, "",
             "| task | state | verdict | shape (ours) | shape (KernelBench) | mean ours / KB | min ours / KB | max ours / KB "
             "| KB eager ms |", "|---|---|---|---|---|---|---|---|---|"]
    counts = {}
    for r in rows:
        w, k = r.get("worker", {}), r.get("kernelbench", {})
        v = r["verdict"]
        counts[v] = counts.get(v, 0) + 1
        pair = lambda key: "%s / %s" % (fmt(w.get(key)), fmt(k.get(key)))  # noqa: E731
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["task"], r["state"], v + ((": " + (w.get("error") or k.get("error") or ""))[:120] if v == "error" else ""),
            w.get("shape", "n/a"), k.get("shape", "n/a"), pair("mean"), pair("min"), pair("max"), fmt(k.get("eager_ms"))))
    lines += ["", "Verdicts: " + ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items())), ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", required=True, help="kwb-worker")
    ap.add_argument("--kernelbench", required=True,
                    help="KernelBench's problem files: a checkout's KernelBench/ folder or tasks/kernelbench-src")
    ap.add_argument("--tasks-dir", help="the worker's --tasks-dir (default: its own)")
    ap.add_argument("--out", required=True, help="the Markdown table to write")
    ap.add_argument("--state", help="JSON lines of finished tasks (default: --out with .jsonl)")
    ap.add_argument("--tasks", help="only these: L2/1,L3:11-20")
    ap.add_argument("--level", type=int, help="only this level")
    ap.add_argument("--trials", type=int, default=10, help="timed calls of KernelBench's reference")
    ap.add_argument("--fresh-worker-every", type=int, default=10,
                    help="restart the worker after this many tasks (its allocator keeps what it took)")
    a = ap.parse_args()
    state = a.state or os.path.splitext(a.out)[0] + ".jsonl"
    done = {}
    if os.path.exists(state):
        with open(state) as f:
            for line in f:
                r = json.loads(line)
                done[r["task"]] = r

    worker = Worker(a.worker, a.tasks_dir)
    listing = worker.request({"type": "tasks"})
    hello = worker.request({"type": "hello"})
    tasks = listing["tasks"]
    ids = [t["id"] for t in tasks]
    if a.tasks:
        keep = set(parse_ids(a.tasks, ids))
        tasks = [t for t in tasks if t["id"] in keep]
    if a.level:
        tasks = [t for t in tasks if t["level"] == a.level]
    since_fresh = 0
    with open(state, "a") as log:
        for t in tasks:
            if t["id"] in done:
                continue
            row = {"task": t["id"], "state": "KernelBench only" if t.get("kernelbench_only") else "converted"
                   if t["number"] > 10 else "hand-written"}
            if t.get("kernelbench_only"):
                row["worker"] = {"error": "KernelBench only: " + t["kernelbench_only"]}
            else:
                if since_fresh >= a.fresh_worker_every:
                    worker.close()
                    worker = Worker(a.worker, a.tasks_dir)
                    since_fresh = 0
                since_fresh += 1
                try:
                    r = worker.request({"type": "run_reference", "task": t["id"], "scale": "full", "device": "cuda",
                                        "seed": 42})
                    row["worker"] = ({"shape": r["output_shape"], "mean": r["mean"], "min": r["min"], "max": r["max"],
                                      "ms": r["ms"]} if r.get("ok") else {"error": r.get("error", {}).get("message", "")})
                except Exception as e:  # noqa: BLE001 - a lost worker is this task's error, the next starts fresh
                    row["worker"] = {"error": str(e)}
                    worker.close()
                    worker = Worker(a.worker, a.tasks_dir)
                    since_fresh = 0
            t0 = time.time()
            try:
                row["kernelbench"] = kernelbench_reference(os.path.join(a.kernelbench, t["source"]), "cuda", a.trials)
            except Exception as e:  # noqa: BLE001 - KernelBench's own failure is reported, not fatal
                row["kernelbench"] = {"error": "%s: %s" % (type(e).__name__, e)}
            row["kernelbench_s"] = time.time() - t0
            row["verdict"] = "KernelBench only" if t.get("kernelbench_only") and "error" not in row["kernelbench"] \
                else verdict(row["worker"], row["kernelbench"])
            log.write(json.dumps(row) + "\n")
            log.flush()
            done[t["id"]] = row
            print("%-7s %-16s %s" % (t["id"], row["verdict"], row.get("kernelbench", {}).get("eager_ms", "")),
                  file=sys.stderr)
    worker.close()
    rows = [done[i] for i in ids if i in done]
    meta = "with worker %s (torch %s) on %s, KernelBench files from %s" % (
        hello.get("worker"), hello.get("torch"), os.uname().nodename, a.kernelbench)
    write_table(rows, a.out, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
