#!/usr/bin/env python3
# Usage (on the GPU machine, nvcc on PATH, python3 with torch): bench/nvcc_phases.py
# Where nvcc's time goes for a KernelBench-format CUDA answer's .cu (issue 35): load_inline's own
# nvcc command (from the build.ninja torch writes), run with --time, as it is and with --threads 0;
# and its phases listed.
import csv, io, os, re, subprocess, sys, tempfile, time
import torch.utils.cpp_extension as ce
CUDA = r'''
#include <torch/extension.h>
__global__ void scale_k(const float* a, float* c, float s, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * s;
}
torch::Tensor scale_forward(torch::Tensor A, double s) {
    auto c = torch::empty_like(A);
    long n = A.numel();
    scale_k<<<(n + 255) / 256, 256>>>(A.data_ptr<float>(), c.data_ptr<float>(), (float)s, n);
    return c;
}
'''
class Stop(Exception):
    pass
def stop(*a, **k):
    raise Stop()
ce._run_ninja_build = stop
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
d = tempfile.mkdtemp(prefix="kwb-nvcc-")
try:
    ce.load_inline(name="kwb_nvcc_phases", cpp_sources="torch::Tensor scale_forward(torch::Tensor A, double s);",
                   cuda_sources=CUDA, functions=["scale_forward"], build_directory=d)
except Stop:
    pass
ninja = open(os.path.join(d, "build.ninja")).read()
get = lambda k: (re.search(r"^%s = (.*)$" % k, ninja, re.M) or [None, ""])[1]
cu = [f for f in os.listdir(d) if f.endswith(".cu")][0]
base = f"{get('nvcc')} {get('cuda_cflags')} -c {cu} -o cuda.o {get('cuda_post_cflags')}"
print("command:", base[:2000])
# run 0 as load_inline runs it; run 1 with --threads 0 (nvcc may run independent steps side by
# side: whether that covers one arch's host and device chains is what it shows)
for k, extra in enumerate(("", " --threads 0")):
    t0 = time.monotonic()
    r = subprocess.run(base + extra + f" --time t{k}.csv", shell=True, cwd=d, capture_output=True, text=True)
    print(f"run {k}{extra}: rc {r.returncode}, {time.monotonic() - t0:.1f} s", r.stderr[-500:])
    rows = list(csv.reader(open(os.path.join(d, f"t{k}.csv"))))
    for row in rows[1:]:
        print("  %-40s %10s ms" % (row[1].strip(), row[6].strip()))
for what, extra in (("-E only", " -E -o /dev/null"),):
    t0 = time.monotonic()
    r = subprocess.run(f"{get('nvcc')} {get('cuda_cflags')} {get('cuda_post_cflags')} {cu}" + extra, shell=True, cwd=d,
                       capture_output=True, text=True)
    print(f"{what}: rc {r.returncode}, {time.monotonic() - t0:.1f} s")
r = subprocess.run(base + " --dryrun", shell=True, cwd=d, capture_output=True, text=True)
print("dryrun:\n" + "\n".join(l[:300] for l in r.stderr.splitlines() if l.startswith("#$") and "=" not in l.split()[1][:1]))
