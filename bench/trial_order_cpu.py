#!/usr/bin/env python3
"""Issue 11: what running the reference after the candidate (and the timing-set checks) costs.

Evaluates torch-only reference candidates on the CPU at smoke scale with two kwb-worker builds
(before and after the change) and prints the correctness stage's time per trial (5 trials + the
determinism run + the range trial = 7 candidate runs) and the timing stage's time, median of
--repeat evaluations in one worker each. No GPU: the numbers say what the new order costs in work,
not what it costs on a device.

Usage: bench/trial_order_cpu.py --before OLD/kwb-worker --after NEW/kwb-worker [--repeat 5]
"""
import argparse, json, statistics, subprocess

TASKS = [("L1/1", "tests/fixtures/candidates/reference/L1_01.md"),
         ("L1/3", "tests/fixtures/candidates/reference/L1_03.md"),
         ("L2/1", None)]

L21 = ("```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n"
       "    y = torch.conv2d(x, p[\"conv.weight\"], p[\"conv.bias\"])\n"
       "    return F.relu(y) + p[\"bias\"]\n```\n")


def run(worker, tasks_dir, requests):
    p = subprocess.Popen([worker, "--tasks-dir", tasks_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = []
    for r in requests:
        p.stdin.write(json.dumps(r) + "\n")
        p.stdin.flush()
        out.append(json.loads(p.stdout.readline()))
    p.stdin.close()
    p.wait()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tasks-dir", default="tasks")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    rows = []
    for task, path in TASKS:
        answer = open(path).read() if path else L21
        reqs = [{"id": i, "type": "evaluate", "task": task, "answer": answer, "device": "cpu", "scale": "smoke",
                 "timing_trials": 20, "warmup": 2} for i in range(a.repeat + 1)]
        row = {"task": task}
        for name, worker in (("before", a.before), ("after", a.after)):
            res = run(worker, a.tasks_dir, reqs)[1:]  # the first one warms the process up
            assert all(r.get("status") == "correct" for r in res), [r.get("message") for r in res]
            row[name] = {"correctness_ms_per_run": statistics.median(r["stage_ms"]["correctness"] / 7 for r in res),
                         "reference_stage_ms": statistics.median(r["stage_ms"]["reference"] for r in res),
                         "timing_ms": statistics.median(r["stage_ms"]["timing"] for r in res),
                         "total_ms": statistics.median(r["stage_ms"]["total"] for r in res)}
        rows.append(row)
        print(json.dumps(row))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
