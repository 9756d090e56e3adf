#!/usr/bin/env python3
"""Where a machine's CPU time went while a run ran, by kind of process (issue 35: what a cold
KernelBench-format run's builds spend their cores on).

  proc_cpu.py sample OUT.jsonl [PERIOD_S]   reads /proc every PERIOD_S (default 0.25) until SIGTERM or
                                           SIGINT; writes one line per process seen below the shell
                                           that started it: pid, kind, nice, first and last seen
                                           (epoch s), CPU s (user + system; cpu_base: what it had
                                           used before sampling began)
  proc_cpu.py table OUT.jsonl [FROM TO]...  Markdown: CPU s by kind and nice, for processes last seen
                                           in each [FROM, TO) window (epoch s), one column each

A process's CPU time is its last reading, so the period's tail of a process that ended between two
readings is lost (at most PERIOD_S of CPU each): the table undercounts short processes a little, and
says how many processes it saw. A process whose parent ended (handed to init) is no longer
followed; its last reading stays. Only the sampler's parent's descendants are counted (their
/proc/PID/stat, cmdline, and a kwb-worker's environ for its role); of other processes only the
parent's pid of /proc/PID/stat is used.
"""
import json
import os
import signal
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


POOL_WORKER, GPU_WORKER = "kwb-worker, compile pool", "kwb-worker, GPU slot"


def in_compile_pool(pid):
    """Whether the worker was started for the compile pool, which the queue starts with
    CUDA_VISIBLE_DEVICES empty (a GPU slot's worker has it unset or naming its GPU). Read from
    /proc/PID/environ of the sampler's own descendants only."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return b"\0CUDA_VISIBLE_DEVICES=\0" in b"\0" + f.read()
    except OSError:
        return False


def kind(pid, comm, cmdline):
    """A short name for what the process is: the program, and for kwb-worker its role."""
    args = cmdline.split("\0")
    if comm.startswith("kwb-worker"):
        if "--build-extension" in args:
            return "kwb-worker --build-extension (builder)"
        if "--build-broker" in args:
            return "kwb-worker --build-broker"
        return POOL_WORKER if in_compile_pool(pid) else GPU_WORKER
    if comm in ("sh", "bash") and len(args) > 2:
        return f"{comm} -c"
    return comm


def stat(pid):
    """comm, parent pid, CPU s, nice of /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): ppid 4, utime 14, stime 15, nice 19
    return comm, int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, int(fields[16])


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""


def sample(out, period):
    seen = {}  # pid -> record (a reused pid's earlier record kept under pid@first)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    me, root = os.getpid(), os.getppid()
    first_sweep = True
    while not stop:
        now = time.time()
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != me:
                try:
                    stats[int(name)] = stat(name)
                except (OSError, ValueError, IndexError):
                    pass
        below = {}  # pid -> whether root is among its ancestors

        def descends(pid, depth=0):
            if pid not in below:
                parent = stats[pid][1] if pid in stats else 0
                below[pid] = parent == root or (parent > 1 and depth < 64 and descends(parent, depth + 1))
            return below[pid]

        for pid, (comm, _, cpu, nice) in stats.items():
            if not descends(pid):
                continue
            r = seen.get(pid)
            if r is None or cpu < r["cpu_s"]:  # (a reused pid starts again from 0)
                if r is not None:
                    seen[f"{pid}@{r['first']}"] = r
                r = seen[pid] = {"pid": pid, "comm": "", "nice": nice, "first": now,
                                 "cpu_base": cpu if first_sweep else 0.0, "cpu_s": cpu}
            if r["comm"] != comm:  # (what it became after an exec: `nice` becomes the program it runs)
                r["comm"], r["kind"] = comm, kind(pid, comm, cmdline(pid))
            r["cpu_s"], r["last"], r["nice"] = cpu, now, max(r["nice"], nice)
        first_sweep = False
        time.sleep(period)
    with open(out, "w") as f:
        for r in seen.values():
            f.write(json.dumps(r) + "\n")


def table(path, windows):
    rows = [json.loads(line) for line in open(path)]
    if not windows:
        windows = [(0.0, float("inf"))]
    sums, counts = {}, [0] * len(windows)
    for r in rows:
        spent = r["cpu_s"] - r["cpu_base"]  # (processes alive when sampling began: what they used after)
        for i, (a, b) in enumerate(windows):
            if a <= r["last"] < b:
                key = (r["kind"], "niced" if r["nice"] > 0 else "")
                sums.setdefault(key, [0.0] * len(windows))[i] += spent
                counts[i] += 1
    total = [sum(v[i] for v in sums.values()) for i in range(len(windows))]
    print("| process | nice | " + " | ".join(f"CPU s ({a:.0f}–{b:.0f})" if b != float("inf") else "CPU s"
                                           for a, b in windows) + " |")
    print("|---|---|" + "--:|" * len(windows))
    for key, v in sorted(sums.items(), key=lambda kv: -sum(kv[1])):
        if max(v) >= 0.1:
            print(f"| {key[0]} | {key[1] or '0'} | " + " | ".join(f"{x:.1f} ({100 * x / t:.0f} %)" if t else "0"
                                                                  for x, t in zip(v, total)) + " |")
    print("| **all** | | " + " | ".join(f"{t:.1f}" for t in total) + " |")
    print(f"\nprocesses seen: {', '.join(str(c) for c in counts)}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "sample":
        sample(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.25)
    elif len(sys.argv) >= 3 and sys.argv[1] == "table":
        w = [float(x) for x in sys.argv[3:]]
        table(sys.argv[2], list(zip(w[0::2], w[1::2])))
    else:
        sys.exit(__doc__)
