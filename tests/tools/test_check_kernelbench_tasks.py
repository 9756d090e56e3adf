#!/usr/bin/env python3
"""scripts/check-kernelbench-tasks.py on the CPU (issue 37 item 2), with four tasks small enough
for any machine, in a tasks folder and a KernelBench folder of their own: a task whose forward is
KernelBench's (agree), one whose forward doubles it (values differ, also against KernelBench's
draws under other seeds), a KernelBench-only one, which kwb-worker's run_reference runs through
KernelBench's Model in its embedded Python (agree), and a Linear over rand inputs whose few
output columns move with the draw of the weights (the band says values differ; KernelBench's own
draws under other seeds differ as much: agree within seed noise). A second call finds all four in
its --state and runs none again; a third, with one task's worker side kept as a half, runs only its
other side.

    test_check_kernelbench_tasks.py PYTHON_WITH_TORCH KWB_WORKER
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-kernelbench-tasks.py")

RELU = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(64, 256)]

def get_init_inputs():
    return []
'''

HINGE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.clamp(1 - predictions * targets.unsqueeze(1), min=0)

def get_inputs():
    return [torch.rand(128, 64), torch.randint(0, 2, (128,)).float() * 2 - 1]

def get_init_inputs():
    return []
'''


LINEAR = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.fc = nn.Linear(d, k)

    def forward(self, x):
        return self.fc(x)

def get_inputs():
    return [torch.rand(64, 256)]

def get_init_inputs():
    return [256, 3]
'''

# The Linear's weights and bias, made as nn.Linear makes them.
LINEAR_PARAMS = '''
[[params]]
name = "fc.weight"
shape = ["k", "d"]
init = "uniform_fan_in"
fan_in = ["d"]

[[params]]
name = "fc.bias"
shape = ["k"]
init = "uniform_fan_in"
fan_in = ["d"]
'''


def native_task(number, source, body, init_inputs="[]", extra_dims="", params=""):
    return '''id = "L1/%d"
level = 1
number = %d
title = "Tiny %d"
source = "%s"
init_inputs = %s
forward = \'\'\'
def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return %s
\'\'\'

[dims]
n = 64
d = 256
%s
[smoke]
n = 2
d = 8
%s
[[inputs]]
name = "x"
shape = ["n", "d"]
dtype = "float32"
generator = "rand"
%s''' % (number, number, number, source, init_inputs, body, extra_dims, extra_dims, params)


def kernelbench_only_task(number, source, python):
    return '''id = "L1/%d"
level = 1
number = %d
title = "Tiny %d"
source = "%s"
kernelbench_only = "an input made by torch.randint"
reference_python = \'\'\'
%s\'\'\'
''' % (number, number, number, source, python)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    python, worker = sys.argv[1], sys.argv[2]
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="kwb-kbtasks-test-") as tmp:
        tasks, kb = os.path.join(tmp, "tasks"), os.path.join(tmp, "kb")
        write(os.path.join(kb, "level1/1_TinyReLU.py"), RELU)
        write(os.path.join(kb, "level1/2_TinyReLU.py"), RELU)
        write(os.path.join(kb, "level1/3_TinyHinge.py"), HINGE)
        write(os.path.join(tasks, "level1/01_tiny.toml"), native_task(1, "level1/1_TinyReLU.py", "torch.relu(x)"))
        write(os.path.join(tasks, "level1/02_tiny.toml"),
              native_task(2, "level1/2_TinyReLU.py", "torch.relu(x) * 2.0"))
        write(os.path.join(tasks, "level1/03_tiny.toml"), kernelbench_only_task(3, "level1/3_TinyHinge.py", HINGE))
        write(os.path.join(kb, "level1/4_TinyLinear.py"), LINEAR)
        write(os.path.join(tasks, "level1/04_tiny.toml"),
              native_task(4, "level1/4_TinyLinear.py", 'torch.linear(x, p["fc.weight"], p["fc.bias"])',
                          '["d", "k"]', "k = 3\n", LINEAR_PARAMS))
        out, state = os.path.join(tmp, "t.md"), os.path.join(tmp, "t.jsonl")
        args = [python, SCRIPT, "--worker", worker, "--tasks-dir", tasks, "--kernelbench", kb, "--out", out,
                "--device", "cpu", "--jobs", "2", "--task-timeout", "120", "--host-memory-gb", "1"]
        first = subprocess.run(args, capture_output=True, text=True, timeout=600)
        print(first.stderr)
        check(first.returncode == 0, "the first call exits 0")
        rows = {}
        if os.path.exists(state):
            with open(state) as f:
                rows = {r["task"]: r for r in map(json.loads, f)}  # the last row of a task counts
        check(sorted(rows) == ["L1/1", "L1/2", "L1/3", "L1/4"], "all four in --state: %s" % sorted(rows))
        verdicts = {t: r["verdict"] for t, r in rows.items()}
        check(verdicts == {"L1/1": "agree", "L1/2": "values differ", "L1/3": "agree",
                           "L1/4": "agree within seed noise"}, "verdicts %s" % verdicts)
        for t in ("L1/2", "L1/4"):  # the band failed: KernelBench drawn under seeds 43-46 too
            draws = rows.get(t, {}).get("kernelbench", {}).get("draws", {})
            check(sorted(draws) == ["43", "44", "45", "46"]
                  and all("eager_ms" not in d and "max" in d for d in draws.values()),
                  "%s has KernelBench's untimed draws under seeds 43-46: %s" % (t, draws))
        if "L1/4" in rows:  # what the noise pass is for: the band alone calls it a difference
            r = rows["L1/4"]
            band = r["kernelbench"]["max"] - r["kernelbench"]["min"]
            check(any(abs(r["worker"][s] - r["kernelbench"][s]) > 0.10 * band for s in ("min", "max")),
                  "L1/4's extremes are outside the band: %s / %s" % (r["worker"], r["kernelbench"]))
        for t, r in rows.items():
            k, w = r["kernelbench"], r["worker"]
            check(k.get("shape") == w.get("shape") and k.get("eager_ms", 0) > 0 and k.get("trials", 0) >= 3,
                  "%s: shapes %s / %s, KernelBench timed %s calls" % (t, w.get("shape"), k.get("shape"),
                                                                      k.get("trials")))
        if "L1/3" in rows:
            check(rows["L1/3"]["state"] == "KernelBench only" and rows["L1/3"]["worker"].get("shape") == [128, 64],
                  "L1/3 is KernelBench only and the worker ran its Model: %s" % rows["L1/3"]["worker"])
        table = open(out).read() if os.path.exists(out) else ""
        check(any(line.startswith("| L1/2 |") and "| values differ |" in line for line in table.splitlines()),
              "the table has L1/2's row")
        check("Verdicts: 2 agree, 1 agree within seed noise, 1 values differ" in table, "the table counts the verdicts")
        with open(state) as f:
            lines_before = len(f.readlines())
        again = subprocess.run(args, capture_output=True, text=True, timeout=600)
        check(again.returncode == 0 and "0 tasks to do (4 done before, 0 half done)" in again.stderr
              and "noise pass" not in again.stderr,
              "a second call runs nothing again: %s" % again.stderr.strip().splitlines()[:2])
        with open(state) as f:
            check(len(f.readlines()) == lines_before, "--state has no new rows")
        # A row whose noise pass an earlier call left short (two of the four draws) gets the rest in a
        # call with no task to run, with --jobs processes (session 21: one, and the deadline cut it).
        if "L1/2" in rows:
            short = dict(rows["L1/2"], verdict="values differ")
            two = {k: v for k, v in short["kernelbench"]["draws"].items() if k in ("43", "44")}
            short["kernelbench"] = dict(short["kernelbench"], draws=two)
            with open(state, "a") as f:
                f.write(json.dumps(short) + "\n")
            noisy = subprocess.run(args, capture_output=True, text=True, timeout=600)
            with open(state) as f:
                last = [r for r in map(json.loads, f) if r["task"] == "L1/2"][-1]
            check(noisy.returncode == 0 and "0 tasks to do" in noisy.stderr
                  and "noise pass: 1 rows, 2 more KernelBench draws, 2 KernelBench processes" in noisy.stderr
                  and sorted(last["kernelbench"]["draws"]) == ["43", "44", "45", "46"]
                  and last["verdict"] == "values differ",
                  "a short noise pass is finished with --jobs processes: %s" % [
                      line for line in noisy.stderr.splitlines() if "noise" in line])
        # A side finished before the deadline cut the other is kept ({"task", "half"}) and not run
        # again: L1/1's row dropped, its worker side kept with a mark (ms -1) the worker never gives.
        if "L1/1" in rows:
            with open(state, "w") as f:
                for t, r in rows.items():
                    if t != "L1/1":
                        f.write(json.dumps(r) + "\n")
                f.write(json.dumps({"task": "L1/1", "half": "worker", "worker": dict(rows["L1/1"]["worker"], ms=-1)})
                        + "\n")
            resumed = subprocess.run(args, capture_output=True, text=True, timeout=600)
            with open(state) as f:
                last = [r for r in map(json.loads, f) if r["task"] == "L1/1"][-1]
            check(resumed.returncode == 0 and "1 tasks to do (3 done before, 1 half done)" in resumed.stderr
                  and last.get("verdict") == "agree" and last["worker"].get("ms") == -1
                  and last["kernelbench"].get("eager_ms", 0) > 0,
                  "a kept half is not run again, the other half is: %s / %s" % (
                      resumed.stderr.strip().splitlines()[:1], last))
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
