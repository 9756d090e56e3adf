#!/usr/bin/env python3
"""Re-records the replay worker's data from a real kwb-worker (CPU only, no GPU needed):

    tests/app/tasks/data/record.py build/release/bin/kwb-worker

tasks.json     the `tasks` response for tasks/, cut down to the tasks in SUBSET
analyze.json   the `analyze` (scale full) response of each of them
tasks_bad.json the `tasks` response for tests/fixtures/tasks_bad (loader errors)

Absolute paths are made relative to the repository, so the files do not depend on a checkout.
"""
import json
import pathlib
import subprocess
import sys

SUBSET = ["L1/1", "L1/4", "L1/5", "L2/1", "L2/2", "L2/6", "L2/9", "L3/1", "L3/4"]

root = pathlib.Path(__file__).resolve().parents[4]
here = pathlib.Path(__file__).resolve().parent


def ask(worker, requests):
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    out = subprocess.run([worker], input=lines.encode(), capture_output=True, check=True, timeout=300).stdout
    return [json.loads(line) for line in out.decode().splitlines()]


def relative(text):
    return text.replace(str(root) + "/", "")


def write(name, value):
    text = relative(json.dumps(value, indent=1, sort_keys=True))
    (here / name).write_text(text + "\n")


def main():
    worker = sys.argv[1]
    tasks = ask(worker, [{"id": 1, "type": "tasks", "tasks_dir": str(root / "tasks")}])[0]
    tasks["tasks"] = [t for t in tasks["tasks"] if t["id"] in SUBSET]
    write("tasks.json", tasks)
    analyses = ask(worker, [{"id": 10 + i, "type": "analyze", "task": t, "scale": "full"} for i, t in enumerate(SUBSET)])
    write("analyze.json", analyses)
    bad = ask(worker, [{"id": 1, "type": "tasks", "tasks_dir": str(root / "tests/fixtures/tasks_bad")}])[0]
    write("tasks_bad.json", bad)


if __name__ == "__main__":
    main()
