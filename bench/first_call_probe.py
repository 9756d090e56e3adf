#!/usr/bin/env python3
"""Benchmark: what a fresh process pays on its first cuDNN conv and first cuBLAS matmul, and what
a worker's exit costs (issue 13: L2/1's first conv was 338 ms of its end to end).

Each variant runs in its own fresh Python process (PyTorch as the worker links it), 3 times:
  cold     context, then the task's conv (L2/1: 128x64x128x128, 3x3 to 128) timed to completion
  dlopen   cuDNN's libraries dlopen'ed first (no GPU touched), then as cold
  tiny     context, a 1x1x4x4 conv first, then as cold
  mm_cold  context, then a 4096^2 matmul (L1/1)
  mm_tiny  context, an 8x8 matmul first, then as mm_cold
Then a kwb-worker: hello, one evaluate of reference/L2_01.md, stdin closed, time to its exit.
  python3 bench/first_call_probe.py WORKER
"""
import glob, json, os, subprocess, sys, time

VARIANT = r'''
import ctypes, glob, os, sys, time
v = sys.argv[1]
t0 = time.perf_counter()
import torch
t_import = time.perf_counter() - t0
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
pre = 0.0
if v == "dlopen":
    d = os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cudnn", "lib")
    s = time.perf_counter()
    for f in sorted(glob.glob(os.path.join(d, "libcudnn*.so*"))):
        ctypes.CDLL(f, mode=ctypes.RTLD_GLOBAL)
    pre = time.perf_counter() - s
s = time.perf_counter(); torch.zeros(1, device="cuda"); torch.cuda.synchronize(); ctx = time.perf_counter() - s
warm = 0.0
if v == "tiny":
    s = time.perf_counter(); torch.conv2d(torch.rand(1, 1, 4, 4, device="cuda"), torch.rand(1, 1, 3, 3, device="cuda")); torch.cuda.synchronize(); warm = time.perf_counter() - s
if v == "mm_tiny":
    s = time.perf_counter(); torch.rand(8, 8, device="cuda") @ torch.rand(8, 8, device="cuda"); torch.cuda.synchronize(); warm = time.perf_counter() - s
if v.startswith("mm"):
    a = torch.rand(4096, 4096, device="cuda"); b = torch.rand(4096, 4096, device="cuda"); torch.cuda.synchronize()
    f = lambda: a @ b
else:
    x = torch.rand(128, 64, 128, 128, device="cuda"); w = torch.rand(128, 64, 3, 3, device="cuda"); torch.cuda.synchronize()
    f = lambda: torch.conv2d(x, w)
s = time.perf_counter(); f(); torch.cuda.synchronize(); first = time.perf_counter() - s
s = time.perf_counter(); f(); torch.cuda.synchronize(); second = time.perf_counter() - s
print("%-8s import %6.1f  pre %6.1f  ctx %6.1f  warm-up %6.1f  first %6.1f  second %6.1f ms" % (v, t_import * 1e3, pre * 1e3, ctx * 1e3, warm * 1e3, first * 1e3, second * 1e3), flush=True)
'''

for rep in range(0 if os.environ.get("PROBE_WORKER_ONLY") else 3):  # PROBE_WORKER_ONLY=1: the worker part alone
    for v in ("cold", "dlopen", "tiny", "mm_cold", "mm_tiny"):
        subprocess.run([sys.executable, "-c", VARIANT, v])

worker = sys.argv[1] if len(sys.argv) > 1 else None
if worker:
    answer = open("tests/fixtures/candidates/reference/L2_01.md").read()
    for rep in range(3):
        p = subprocess.Popen([worker], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        s = time.perf_counter()
        p.stdin.write(json.dumps({"id": 1, "type": "hello"}) + "\n"); p.stdin.flush(); p.stdout.readline()
        hello = time.perf_counter() - s
        p.stdin.write(json.dumps({"id": 2, "type": "evaluate", "task": "L2/1", "answer": answer}) + "\n"); p.stdin.flush()
        r = json.loads(p.stdout.readline())
        evaluated = time.perf_counter() - s
        s2 = time.perf_counter(); p.stdin.close(); p.wait(); exit_ms = (time.perf_counter() - s2) * 1e3
        print("worker: hello %.0f ms, hello+evaluate %.0f ms (%s), stdin closed to exit %.0f ms (code %d)" % (hello * 1e3, evaluated * 1e3, r.get("status"), exit_ms, p.returncode), flush=True)
