#!/usr/bin/env python3
"""Benchmark: does tracing a candidate (CUPTI) change the timing of what runs after it?

Each candidate is evaluated in a fresh worker with `retime_after_trace`: timed, traced (CUPTI
attaches, records the kernels, detaches), timed again. Prints, per process, the speed-up and the
reference's and candidate's mean times before and after the trace, then per candidate the mean and
coefficient of variation across processes and the after/before ratio (1.000 when the trace leaves
no trace). Writes the rows as JSON to $OUT/cupti-state.json.

  python3 bench/cupti_state.py WORKER CANDIDATE.md[,CANDIDATE.md...] PROCESSES [PROFILE] [attached]

`attached` keeps CUPTI attached for the second timing, as every evaluation had it before
2026-12-01 (the trace ran just before timing): the second figure is then what the old pipeline
measured, the first what it measures now.

Run from the project root (the worker reads tasks/); the task of reference/L3_07.md is L3/7.
"""
import json, os, statistics as st, subprocess, sys, time

worker, files, reps = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
profile = sys.argv[4] if len(sys.argv) > 4 else "kernelbench-fp32"
attached = len(sys.argv) > 5 and sys.argv[5] == "attached"


def task_of(path):
    b = os.path.basename(path)
    return f"L{b[1]}/{int(b[3:5])}"


def part(timing, speedup):
    t = timing or {}
    return {"speedup": speedup, "reference_ms": (t.get("reference") or {}).get("mean_ms"),
            "candidate_ms": (t.get("candidate") or {}).get("mean_ms"),
            "half_width": (t.get("speedup_interval") or {}).get("relative_half_width"),
            "stop": t.get("stop_reason"), "pairs": t.get("samples")}


rows = []
for rep in range(reps):
    for f in files:  # interleaved: process k of every candidate before process k+1 of any
        t0 = time.time()
        p = subprocess.Popen([worker, "--tasks-dir", "tasks"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def ask(request):
            p.stdin.write(json.dumps(request) + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())

        ask({"type": "hello", "id": 1})
        r = ask({"type": "evaluate", "id": 2, "task": task_of(f), "answer": open(f).read(), "profile": profile,
                 "retime_after_trace": "attached" if attached else True})
        p.stdin.close()
        p.wait(30)
        before = r.get("timing_before_trace") or {}
        row = {"file": os.path.basename(f), "process": rep, "status": r.get("status"), "kernels": len(r.get("kernels") or []),
               "before": part(before.get("timing"), before.get("speedup")), "after": part(r.get("timing"), r.get("speedup")),
               "wall_s": round(time.time() - t0, 3)}
        rows.append(row)
        fmt = lambda a: (f"speed-up {a['speedup'] or 0:.4f} ±{100 * (a['half_width'] or 0):.2f} % ref {a['reference_ms'] or 0:.4f} ms "
                         f"cand {a['candidate_ms'] or 0:.4f} ms ({a['stop']}, {a['pairs']} pairs)")
        print(f"{row['file']} process {rep}: {row['status']}, {row['kernels']} kernels traced | before: {fmt(row['before'])} | "
              f"after: {fmt(row['after'])}", flush=True)
json.dump({"profile": profile, "cupti_after_trace": "attached" if attached else "detached", "rows": rows},
          open(os.path.join(os.environ.get("OUT", "."), "cupti-state" + ("-attached" if attached else "") + ".json"), "w"), indent=1)
print(f"\nCUPTI for the second timing: {'attached (as before 2026-12-01)' if attached else 'detached (as now)'}")
print()
print("| candidate | processes | speed-up before (mean, CV) | speed-up after (mean, CV) | after/before (mean ± sd) | reference ms before → after |")
print("|---|--:|---|---|---|---|")
for f in files:
    ok = [x for x in rows if x["file"] == os.path.basename(f) and x["before"]["speedup"] and x["after"]["speedup"]]
    if len(ok) < 2:
        continue
    cv = lambda v: 100 * st.stdev(v) / st.mean(v)
    b = [x["before"]["speedup"] for x in ok]
    a = [x["after"]["speedup"] for x in ok]
    ratio = [x["after"]["speedup"] / x["before"]["speedup"] for x in ok]
    rb = [x["before"]["reference_ms"] for x in ok]
    ra = [x["after"]["reference_ms"] for x in ok]
    print(f"| {os.path.basename(f)} | {len(ok)} | {st.mean(b):.4f}, {cv(b):.2f} % | {st.mean(a):.4f}, {cv(a):.2f} % | "
          f"{st.mean(ratio):.4f} ± {st.stdev(ratio):.4f} | {st.mean(rb):.4f} → {st.mean(ra):.4f} |")
