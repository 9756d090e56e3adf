#!/usr/bin/env bash
# Benchmark: where a fresh kwb-worker's start goes (issue 13: process start to `hello` is ~0.6 s of
# L2/1's end to end). Prints, 3 times each: exec to exit of `--version` (dynamic loading and static
# initialisers, no CUDA), the dynamic loader's own statistics, a `hello` round trip (adds cuInit),
# and in Python/ctypes the driver's dlopen, cuInit and primary-context costs alone.
#   bench/worker_start_probe.sh WORKER
set -uo pipefail
worker=${1:?worker}
ms() { python3 -c "import sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / 1e6, 1))" "$1" "$2"; }
for i in 1 2 3; do
  s=$(date +%s%N); "$worker" --version > /dev/null; e=$(date +%s%N); echo "version_ms $(ms $s $e)"
done
LD_DEBUG=statistics "$worker" --version 2>&1 >/dev/null | grep -E "total startup time|time needed for relocation|number of relocations:|objects loaded" | head -6
for i in 1 2 3; do
  s=$(date +%s%N); printf '{"type":"hello"}\n' | "$worker" > /dev/null 2>&1; e=$(date +%s%N); echo "hello_roundtrip_ms $(ms $s $e)"
done
for i in 1 2 3; do
python3 - <<'PY'
import ctypes, time
t0 = time.perf_counter(); c = ctypes.CDLL("libcuda.so.1"); t1 = time.perf_counter()
c.cuInit(0); t2 = time.perf_counter()
d = ctypes.c_int(); c.cuDeviceGet(ctypes.byref(d), 0); ctx = ctypes.c_void_p()
t3 = time.perf_counter(); c.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), d); c.cuCtxSetCurrent(ctx); t4 = time.perf_counter()
print("dlopen_libcuda_ms %.1f cuInit_ms %.1f primary_ctx_ms %.1f" % ((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t4 - t3) * 1e3))
PY
done
# Which shared objects the worker maps, by size (what dynamic loading has to map and relocate).
ldd "$worker" | awk '/=> \//{print $3}' | xargs -r ls -laL 2>/dev/null | sort -k5 -n -r | awk '{printf "%8.1f MB %s\n", $5/1e6, $9}' | head -12
