#!/usr/bin/env python3
# Issue 35 item 1 on real answers: every KernelBench-format answer of a generations folder built
# both ways, whole (nvcc on load_inline's cuda.cu, as load_inline builds it) and split
# (src/worker/python/cuda_split.py: the kernels by nvcc without torch, the host code by g++ with
# torch's precompiled header), each with this tree's build_into and the same header; then each
# library that both ways built run on the same inputs in processes of their own, and the outputs
# compared bit for bit (an answer whose whole library gives two different outputs on two runs is
# nondeterministic, and is compared within KernelBench's tolerance instead).
#
#   python3 bench/kb_split_check.py --gens DIR --kernelbench KB_ROOT [--jobs 14] [--limit N] [--out FILE.md]
#
# DIR: a folder made by bench/agreement/select_generations.py (manifest.json and the modules);
# KB_ROOT: a KernelBench checkout (its KernelBench/levelN/ problem files give the inputs). Needs the
# GPU machine (torch with CUDA); writes a Markdown section (for bench/results/) and a JSON file beside.
import argparse
import concurrent.futures
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER_PY = os.path.join(REPO, "src", "worker", "python")

# One answer's builds: the module run with load_inline replaced by this tree's build_into (its
# import step never runs the library); what each call gave, in order.
BUILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import extension_cache as ec
import torch.utils.cpp_extension as cpp
out, mode, pch, arch = sys.argv[3], sys.argv[4], sys.argv[5] or None, sys.argv[6]
calls = []
def load_inline(**arguments):
    folder = os.path.join(out, f"call{len(calls)}")
    os.makedirs(folder, exist_ok=True)
    t0 = time.monotonic()
    r = ec.build_into(arguments, arch, folder, pch, split=(mode == "split"))
    calls.append(dict(r, seconds=round(time.monotonic() - t0, 2), name=arguments.get("name"), folder=folder,
                      cuda=bool(arguments.get("cuda_sources"))))
    if not r["ok"]:
        raise RuntimeError("the build failed")  # as load_inline raises it
    return None
cpp._kwb_real_load_inline = cpp.load_inline  # build_into's own load_inline, not this one
cpp.load_inline = load_inline
try:
    exec(compile(open(sys.argv[2]).read(), "answer.py", "exec"), {"__name__": "answer"})
except BaseException as e:  # the module's own failure after its builds (it got no library)
    pass
print(json.dumps(calls))
"""

# One library run: the reference's inputs (seed 42), the answer's ModelNew from the built folders.
RUN = r"""
import json, sys, torch
import torch.utils.cpp_extension as cpp
answer, reference, folders = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ref = {"__name__": "reference"}
exec(compile(open(reference).read(), "reference.py", "exec"), ref)
real_import = cpp._import_module_from_library
calls = []
def load_inline(**arguments):
    folder = folders[len(calls)]
    calls.append(folder)
    return real_import(arguments["name"], folder, True)
cpp.load_inline = load_inline
ns = {"__name__": "answer"}
exec(compile(open(answer).read(), "answer.py", "exec"), ns)
torch.manual_seed(42)
init = ref["get_init_inputs"]()
torch.manual_seed(42)
model = ns["ModelNew"](*init).cuda()
torch.manual_seed(42)
inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref["get_inputs"]()]
with torch.no_grad():
    y = model(*inputs)
torch.cuda.synchronize()
torch.save(y.cpu() if isinstance(y, torch.Tensor) else [t.cpu() for t in y], sys.argv[4])
"""


def reference_file(kb_root, level, problem):
    found = glob.glob(os.path.join(kb_root, "KernelBench", f"level{level}", f"{problem}_*.py"))
    return found[0] if len(found) == 1 else None


def build(answer, folder, mode, pch, arch):
    done = subprocess.run([sys.executable, "-c", BUILD, WORKER_PY, answer, folder, mode, pch or "", arch],
                          capture_output=True, text=True, timeout=1200)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [{"ok": False, "message": f"the build process: {done.stderr[-500:]}", "seconds": 0, "split": ""}]


def run(answer, reference, folders, out):
    done = subprocess.run([sys.executable, "-c", RUN, answer, reference, json.dumps(folders), out],
                          capture_output=True, text=True, timeout=600)
    return done.returncode == 0, done.stderr[-400:]


def compare(a, b):
    import torch
    x, y = torch.load(a), torch.load(b)
    xs, ys = (x if isinstance(x, list) else [x]), (y if isinstance(y, list) else [y])
    if len(xs) != len(ys) or any(p.shape != q.shape or p.dtype != q.dtype for p, q in zip(xs, ys)):
        return "different shapes", None
    same = all(torch.equal(p, q) for p, q in zip(xs, ys))
    diff = max(((p.double() - q.double()).abs().max().item() if p.numel() else 0.0) for p, q in zip(xs, ys))
    return ("same bits" if same else "differ"), diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gens", required=True)
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--split-jobs", type=int, default=4, help="split builds at once (each is a few seconds)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--arch", default="")
    ap.add_argument("--out", default="-")
    a = ap.parse_args()
    import torch
    arch = a.arch or "sm_%d%d" % torch.cuda.get_device_capability()
    sys.path.insert(0, WORKER_PY)
    import extension_cache as ec

    manifest = json.load(open(os.path.join(a.gens, "manifest.json")))
    answers = [f for f in manifest["files"] if f["path"].endswith(".py")]
    answers = answers[:a.limit] if a.limit else answers
    root = tempfile.mkdtemp(prefix="kwb-split-check-")
    # The precompiled header both ways' main.cpp (and the split's host unit) get, made once.
    t0 = time.monotonic()
    header = ec.ensure_pch({"name": "x", "cpp_sources": "", "cuda_sources": "x"}, os.path.join(root, "cache"),
                           lambda args, r, staging: ec.build_in_process(args, r, staging))
    pch = header[0] if header and header[1].get("ok") else None
    header_s = time.monotonic() - t0
    print(f"header: {pch} ({header_s:.0f} s)", file=sys.stderr, flush=True)

    rows = {f["path"]: {"path": f["path"], "level": f["level"], "problem": f["problem"]} for f in answers}

    def one(f, mode):
        folder = os.path.join(root, mode, f["path"].replace("/", "_"))
        os.makedirs(folder, exist_ok=True)
        return f["path"], mode, build(os.path.join(a.gens, f["path"]), folder, mode, pch, arch)

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for path, mode, calls in pool.map(lambda f: one(f, "whole"), answers):
            rows[path]["whole"] = calls
    whole_s = time.monotonic() - t0
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.split_jobs) as pool:
        for path, mode, calls in pool.map(lambda f: one(f, "split"), answers):
            rows[path]["split"] = calls
    split_s = time.monotonic() - t0
    print(f"builds: whole {whole_s:.0f} s ({a.jobs} at once), split {split_s:.0f} s ({a.split_jobs} at once)",
          file=sys.stderr, flush=True)

    def outputs(row):
        reference = reference_file(a.kernelbench, row["level"], row["problem"])
        w, s = row.get("whole") or [], row.get("split") or []
        if not reference or not w or not s or not all(c["ok"] for c in w + s):
            return
        answer = os.path.join(a.gens, row["path"])
        base = os.path.join(root, "out", row["path"].replace("/", "_"))
        ok_w, err_w = run(answer, reference, [c["folder"] for c in w], base + ".whole.pt")
        ok_s, err_s = run(answer, reference, [c["folder"] for c in s], base + ".split.pt")
        if not (ok_w and ok_s):
            row["outputs"] = f"a run failed: whole {'ok' if ok_w else err_w!r}, split {'ok' if ok_s else err_s!r}"
            row["same"] = ok_w == ok_s
            return
        verdict, diff = compare(base + ".whole.pt", base + ".split.pt")
        row["outputs"], row["max_abs_diff"] = verdict, diff
        if verdict == "differ":
            run(answer, reference, [c["folder"] for c in w], base + ".whole2.pt")
            again, _ = compare(base + ".whole.pt", base + ".whole2.pt")
            row["whole_deterministic"] = again == "same bits"
        row["same"] = verdict == "same bits" or (verdict == "differ" and not row.get("whole_deterministic"))

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(outputs, rows.values()))
    run_s = time.monotonic() - t0

    records = list(rows.values())
    json.dump(records, open(os.path.join(root, "split-check.json") if a.out == "-" else
                            os.path.splitext(a.out)[0] + ".json", "w"), indent=1)
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    cuda = [r for r in records if any(c.get("cuda") for c in r.get("whole") or [])]
    used = [r for r in cuda if any(c.get("split") == "used" for c in r.get("split") or [])]
    print(f"## Whole and split builds of {len(records)} answers ({len(cuda)} with CUDA sources)\n", file=out)
    print(f"- header made in {header_s:.0f} s; whole builds {whole_s:.0f} s ({a.jobs} at once); split builds "
          f"{split_s:.0f} s ({a.split_jobs} at once); runs {run_s:.0f} s", file=out)
    print(f"- split used for {len(used)} of {len(cuda)}; the rest: " + ", ".join(
        sorted({(c.get('split') or '?')[:90] for r in cuda for c in r.get('split') or [] if c.get('split') != 'used'}))
        + "\n", file=out)
    print("| answer | whole s | split s | whole | split | split note | outputs |", file=out)
    print("|---|--:|--:|---|---|---|---|", file=out)
    for r in records:
        w, s = r.get("whole") or [{}], r.get("split") or [{}]
        note = "; ".join((c.get("split") or "")[:80] for c in s)
        diff = r.get("max_abs_diff")
        shown = r.get("outputs", "–") + ("" if diff in (None, 0.0) else f" (max diff {diff:.3g})")
        print(f"| `{r['path'].split('/')[-1]}` | {sum(c.get('seconds', 0) for c in w):.1f} | "
              f"{sum(c.get('seconds', 0) for c in s):.1f} | {'ok' if all(c.get('ok') for c in w) else 'failed'} | "
              f"{'ok' if all(c.get('ok') for c in s) else 'failed'} | {note} | {shown} |", file=out)
    agree = sum(all(c.get("ok") for c in r.get("whole") or [{}]) == all(c.get("ok") for c in r.get("split") or [{}])
                for r in records)
    same = [r for r in records if "same" in r]
    used_s = [sum(c["seconds"] for c in r["split"]) for r in used if all(c.get("ok") for c in r["split"])]
    whole_used = [sum(c["seconds"] for c in r["whole"]) for r in used if all(c.get("ok") for c in r["split"])]
    print(f"\nBuilt or failed alike both ways: {agree} of {len(records)}. Outputs compared: {len(same)}, the same "
          f"(bit for bit, or within a nondeterministic answer's own spread): {sum(r['same'] for r in same)}.", file=out)
    if used_s:
        print(f"Split builds that succeeded: median {statistics.median(used_s):.1f} s (max {max(used_s):.1f}); the "
              f"same answers whole: median {statistics.median(whole_used):.1f} s.", file=out)
    print(f"(records: {os.path.join(root, 'split-check.json')})", file=sys.stderr)


if __name__ == "__main__":
    main()
