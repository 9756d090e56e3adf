#!/usr/bin/env python3
# Benchmark: a fresh worker's time outside its stages (issue 35). Each of --runs fresh kwb-worker
# processes answers hello, then waits --gap s (a spare's warm takes about that long before its job
# comes), then evaluates two reference candidates; per evaluate, the request's wall time less the
# worker's own stage_ms.total is what the queue sees as overhead beyond the stages.
#
#   python3 bench/worker_first_request.py --worker build/release/bin/kwb-worker [--device cpu] [--gap 0.2] [--runs 5]
#
# Prints a Markdown table (median and range of the outside time, first and second evaluate).
import argparse
import json
import os
import statistics
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDIDATES = os.path.join(REPO, "tests", "fixtures", "candidates", "reference")


def one_worker(worker, tasks, device, gap, scale):
    p = subprocess.Popen([worker, "--tasks-dir", tasks], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)

    def request(r):
        t = time.monotonic()
        p.stdin.write(json.dumps(r) + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        return (time.monotonic() - t) * 1000.0, json.loads(line)

    try:
        request({"id": 1, "type": "hello"})
        time.sleep(gap)
        outside = []
        for i, (task, name) in enumerate((("L1/1", "L1_01.md"), ("L1/2", "L1_02.md"))):
            with open(os.path.join(CANDIDATES, name)) as f:
                answer = f.read()
            ms, reply = request({"id": 10 + i, "type": "evaluate", "task": task, "device": device, "scale": scale,
                                 "answer": answer})
            if reply.get("status") != "correct":
                raise SystemExit(f"{task}: {reply.get('status')}: {reply.get('message', reply)}")
            outside.append(ms - reply["stage_ms"]["total"])
        return outside
    finally:
        p.stdin.close()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--tasks", default=os.path.join(REPO, "tasks"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--scale", default="smoke")
    ap.add_argument("--gap", type=float, default=0.2, help="seconds between hello and the first evaluate")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    rows = [one_worker(a.worker, a.tasks, a.device, a.gap, a.scale) for _ in range(a.runs)]
    print(f"| worker | gap s | first evaluate: outside ms, median [min-max] | second evaluate |")
    print("|---|--:|---|---|")
    cell = lambda xs: f"{statistics.median(xs):.1f} [{min(xs):.1f}-{max(xs):.1f}]"
    print(f"| {a.worker} | {a.gap} | {cell([r[0] for r in rows])} | {cell([r[1] for r in rows])} |")


if __name__ == "__main__":
    main()
