#!/usr/bin/env python3
"""Builds the load_inline extensions of KernelBench-format answers in parallel, ahead of a GPU run.

Each answer is sent as a `compile` request (answer_format "kernelbench") to a kwb-worker of its
own, all at once: the worker runs the module's load_inline calls into the shared extension cache
(KWB_EXTENSION_CACHE), so the evaluations after this find every build made (docs/protocol.md).
Usage: scripts/kb-prebuild.py WORKER TASKS_DIR ANSWER.md... ; prints one line per answer.
"""
import json
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    worker, tasks, answers = sys.argv[1], sys.argv[2], sys.argv[3:]
    started = time.time()
    procs = []
    for path in answers:
        with open(path, encoding="utf-8") as f:
            request = {"id": 1, "type": "compile", "answer": f.read(), "answer_format": "kernelbench"}
        p = subprocess.Popen([worker, "--tasks-dir", tasks], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        p.stdin.write(json.dumps(request) + "\n")
        p.stdin.close()
        procs.append((path, p))
    failed = 0
    for path, p in procs:
        out = p.stdout.read()
        p.wait()
        reply = {}
        for line in out.splitlines():
            try:
                reply = json.loads(line)
            except ValueError:
                continue
        exts = reply.get("extensions") or []
        ok = reply.get("ok_compile")
        failed += 0 if ok or reply.get("refused") else 1
        print(f"{path}: ok_compile={ok} refused={bool(reply.get('refused'))} "
              f"extensions={[(e.get('name'), e.get('cached'), round(e.get('ms') or 0)) for e in exts]}")
    print(f"{len(answers)} answers in {time.time() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
