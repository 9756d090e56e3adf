"""Does another process's CUDA work perturb a timing in progress? The quiet lock's scope (issue 13).

A warming spare takes the GPU's quiet lock (shared) for each of its GPU parts, so that none runs
beside a timing (docs/decisions.md, "The spare warms under the GPU's quiet lock"). Its first and
longest part is the CUDA context. This probe measures whether a context's creation, alone, moves
another process's kernel times, against a positive control that launches tiny kernels.

A timer process times two workloads with CUDA events, alternating sample by sample, and records
each sample's host start and end: "long", one 4096x4096 float32 matmul (TF32 off, ~2.7 ms), and
"short", 20 small element-wise kernels on 1 Mi floats (launch-bound, as L2/6 or L3/9 are). Other
processes meanwhile run phases of PHASE_S seconds (or as long as their work takes) with quiet
gaps between them, each phase one kind of CUDA work and nothing else:
  create   contexts created back to back, each kept (cuCtxCreate; ctypes on libcuda)
  destroy  those contexts destroyed back to back (cuCtxDestroy)
  exit     processes that each made a context (and a 64 MiB allocation) beforehand exit, one
           after the other, as a finished worker does (os._exit; the driver tears the context down)
  kernels  (the positive control) torch: one tiny kernel launched and synchronised every 1 ms
Each sample is classed by the phase its host interval lies in (samples straddling a phase's edge
are dropped), and per workload and class the table gives the count, mean, median, p99 and max GPU
time and the mean's and p99's shift against the quiet samples.

  python3 bench/quiet_lock_probe.py [--phase-s 3] [--json OUT]
"""
import argparse, ctypes, json, os, statistics, subprocess, sys, tempfile, time

TIMER = r'''
import json, sys, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
out, stop_file = sys.argv[1], sys.argv[2]
a = torch.rand(4096, 4096, device="cuda"); b = torch.rand(4096, 4096, device="cuda")
x = torch.rand(1 << 20, device="cuda")
def long_():
    return a @ b
def short():
    y = x
    for _ in range(20):
        y = y * 1.0001 + 0.5
    return y
work = {"long": long_, "short": short}
for f in work.values():
    for _ in range(5): f()
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
samples = []
print("ready", flush=True)
import os
k = 0
while not os.path.exists(stop_file):
    name = "long" if k % 2 == 0 else "short"
    k += 1
    t0 = time.time()
    s.record(); work[name](); e.record(); e.synchronize()
    samples.append((name, t0, time.time(), s.elapsed_time(e)))
json.dump(samples, open(out, "w"))
'''

DISTURB_KERNELS = r'''
import sys, time, torch
phase_s = float(sys.argv[1])
x = torch.ones(8, device="cuda"); torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.readline()  # go
t0 = time.time()
n = 0
while time.time() - t0 < phase_s:
    x.add_(1); torch.cuda.synchronize(); n += 1
    time.sleep(0.001)
print("%r %r %d" % (t0, time.time(), n), flush=True)
'''


CTX_WORKER = r'''
import ctypes, json, sys, time
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
dev = ctypes.c_int()
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
def create():
    c = ctypes.c_void_p()
    if hasattr(cuda, "cuCtxCreate_v2"):
        r = cuda.cuCtxCreate_v2(ctypes.byref(c), 0, dev)
    else:
        r = cuda.cuCtxCreate_v4(ctypes.byref(c), None, 0, dev)
    assert r == 0, r
    assert cuda.cuCtxSynchronize() == 0
    assert cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())) == 0
    return c
made = []
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    t0, each = time.time(), []
    if cmd[0] == "create":
        while time.time() - t0 < float(cmd[1]):
            s = time.perf_counter(); made.append(create()); each.append((time.perf_counter() - s) * 1e3)
    elif cmd[0] == "destroy":
        while made:
            s = time.perf_counter(); assert cuda.cuCtxDestroy_v2(made.pop()) == 0; each.append((time.perf_counter() - s) * 1e3)
    each.sort()
    print(json.dumps({"start": t0, "end": time.time(), "iterations": len(each), "median_ms": each[len(each) // 2] if each else None}), flush=True)
'''

EXIT_CHILD = r'''
import ctypes, os, sys
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
dev = ctypes.c_int(); assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
ctx = ctypes.c_void_p(); assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
p = ctypes.c_ulonglong(); assert cuda.cuMemAlloc_v2(ctypes.byref(p), 64 << 20) == 0
assert cuda.cuCtxSynchronize() == 0
print("ready", flush=True)
sys.stdin.readline()
os._exit(0)
'''


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--phase-s", type=float, default=3.0)
    ap.add_argument("--gap-s", type=float, default=1.5)
    ap.add_argument("--exits", type=int, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    out, stop = os.path.join(tmp, "samples.json"), os.path.join(tmp, "stop")
    # the exiting processes first: their contexts are made before the timer starts
    exiting = [subprocess.Popen([sys.executable, "-c", EXIT_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for _ in range(args.exits)]
    for e in exiting:
        assert e.stdout.readline().strip() == "ready"
    ctxw = subprocess.Popen([sys.executable, "-c", CTX_WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert ctxw.stdout.readline().strip() == "ready"
    timer = subprocess.Popen([sys.executable, "-c", TIMER, out, stop], stdout=subprocess.PIPE, text=True)
    kern = subprocess.Popen([sys.executable, "-c", DISTURB_KERNELS, str(args.phase_s)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert timer.stdout.readline().strip() == "ready"
    assert kern.stdout.readline().strip() == "ready"
    phases = []
    time.sleep(args.gap_s)
    for name in ("create", "destroy", "exit", "kernels", "create", "destroy"):
        if name in ("create", "destroy"):
            ctxw.stdin.write(("create %r" % args.phase_s if name == "create" else "destroy") + "\n"); ctxw.stdin.flush()
            p = json.loads(ctxw.stdout.readline())
        elif name == "exit":
            t0, each = time.time(), []
            for e in exiting:
                s = time.perf_counter(); e.stdin.write("x\n"); e.stdin.flush(); e.wait(); each.append((time.perf_counter() - s) * 1e3)
            each.sort()
            p = {"start": t0, "end": time.time(), "iterations": len(each), "median_ms": each[len(each) // 2] if each else None}
        else:
            kern.stdin.write("go\n"); kern.stdin.flush()
            t0, t1, n = kern.stdout.readline().split()
            p = {"start": float(t0), "end": float(t1), "iterations": int(n)}
        p["phase"] = name
        phases.append(p)
        time.sleep(args.gap_s)
    open(stop, "w").close()
    timer.wait()
    kern.kill()
    ctxw.kill()
    samples = json.load(open(out))
    classes = {}
    for name, t0, t1, ms in samples:
        cls = "quiet"
        for p in phases:
            if t1 >= p["start"] and t0 <= p["end"]:
                cls = p["phase"] if (t0 >= p["start"] and t1 <= p["end"]) else None
                break
        if cls is None:
            continue
        classes.setdefault((name, cls), []).append(ms)
    rows = []
    print("| workload | beside | samples | mean ms | median ms | p99 ms | max ms | mean vs quiet | p99 vs quiet |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for work in ("long", "short"):
        q = classes.get((work, "quiet"), [])
        qm, qp = (statistics.mean(q), pct(q, 0.99)) if q else (None, None)
        for cls in ("quiet", "create", "destroy", "exit", "kernels"):
            v = classes.get((work, cls), [])
            if not v:
                continue
            m, med, p99, mx = statistics.mean(v), statistics.median(v), pct(v, 0.99), max(v)
            rows.append({"workload": work, "beside": cls, "samples": len(v), "mean_ms": m, "median_ms": med, "p99_ms": p99,
                         "max_ms": mx, "mean_shift": m / qm - 1 if qm else None, "p99_shift": p99 / qp - 1 if qp else None})
            print("| %s | %s | %d | %.4f | %.4f | %.4f | %.4f | %+.2f %% | %+.2f %% |" % (
                work, cls, len(v), m, med, p99, mx, 100 * (m / qm - 1), 100 * (p99 / qp - 1)))
    print()
    for p in phases:
        print("phase %-8s %.2f s, %d iterations%s" % (p["phase"], p["end"] - p["start"], p["iterations"],
              ", median %.1f ms each" % p["median_ms"] if p.get("median_ms") else ""))
    if args.json:
        json.dump({"phases": phases, "rows": rows}, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
