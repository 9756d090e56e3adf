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
out, mode, pch, arch, cpu = sys.argv[3], sys.argv[4], sys.argv[5] or None, sys.argv[6], json.loads(sys.argv[7])
calls = []
def load_inline(**arguments):
    if cpu:  # a torch without CUDA (see CPU_STD): the C++17 both compilers need, and stand-in CUDA libraries
        for field in ("extra_cflags", "extra_cuda_cflags"):
            flags = list(arguments.get(field) or [])
            if not any(f.strip().startswith("-std=") for f in flags):
                arguments[field] = flags + [cpu["std"]]
        arguments["extra_ldflags"] = list(arguments.get("extra_ldflags") or []) + cpu["ldflags"]
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
module_error = None
try:
    exec(compile(open(sys.argv[2]).read(), "answer.py", "exec"), {"__name__": "answer"})
except BaseException as e:  # the module's own failure: after a failed build (it got no library), or its own
    import traceback
    module_error = "".join(traceback.format_exception_only(type(e), e)).strip()[-2000:]
print("\n" + json.dumps({"calls": calls, "module_error": module_error}))
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


# A torch without CUDA (the CPU machine's 1.13) cannot build a `.cu` as it stands under CUDA 13:
# torch gives nvcc -std=c++14, which CUDA 13's CCCL refuses, and links libc10_cuda and libtorch_cuda,
# which it does not have. There every build (and the header) gets -std=c++17 for both compilers
# where the answer names no standard, and links against empty stand-ins for those two libraries, as
# tests/worker/test_extension_pch.py does: a check of the builds only, whose libraries cannot run.
CPU_STD = "-std=c++17"


def stand_in_cuda_libraries(folder):
    os.makedirs(folder, exist_ok=True)
    for lib in ("c10_cuda", "torch_cuda"):
        subprocess.run([os.environ.get("CXX", "c++"), "-shared", "-o", os.path.join(folder, f"lib{lib}.so"),
                        "-x", "c++", "/dev/null"], check=True)
    return ["-L" + folder]


def reference_file(kb_root, level, problem):
    found = glob.glob(os.path.join(kb_root, "KernelBench", f"level{level}", f"{problem}_*.py"))
    return found[0] if len(found) == 1 else None


def build(answer, folder, mode, pch, arch, cpu=None):
    t0 = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", BUILD, WORKER_PY, answer, folder, mode, pch or "", arch,
                               json.dumps(cpu)], capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired as e:
        return [{"ok": False, "message": f"the build process ran past {e.timeout} s", "split": "",
                 "seconds": round(time.monotonic() - t0, 2)}]
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [{"ok": False, "message": f"the build process (exit {done.returncode}): {done.stderr[-1500:]}",
                 "split": "", "seconds": round(time.monotonic() - t0, 2)}]
    calls, module_error = result["calls"], result["module_error"]
    if not calls:  # the module failed (or ended) before it asked for any build
        why = module_error or f"it built nothing; its stderr: {done.stderr[-800:]}"
        return [{"ok": False, "message": f"the module, before any build: {why}", "split": "",
                 "seconds": round(time.monotonic() - t0, 2)}]
    return calls


def reason(call):
    """A failed build's reason in one line: the first compiler error, else the message's last line."""
    lines = [line.strip() for line in str(call.get("message") or "no message").splitlines() if line.strip()]
    chosen = next((line for line in lines if " error" in line or line.startswith("error")), None)
    line = chosen or (lines[-1] if lines else "no message")
    return line.replace("|", "\\|")[:160]


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
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds from the start after which no build starts (those answers are listed as not "
                         "built) and, a minute later, no run: a step cut by its limit still writes its table")
    a = ap.parse_args()
    started = time.monotonic()
    past = (lambda grace=0.0: a.deadline > 0 and time.monotonic() - started > a.deadline + grace)
    import torch
    if not a.arch and not torch.cuda.is_available():
        sys.exit("no GPU here: name the arch to build for (--arch sm_80 where torch is 1.13, as on the CPU machine)")
    arch = a.arch or "sm_%d%d" % torch.cuda.get_device_capability()
    sys.path.insert(0, WORKER_PY)
    import extension_cache as ec
    import torch.utils.cpp_extension as cpp
    old = os.environ.get("TORCH_CUDA_ARCH_LIST")
    os.environ["TORCH_CUDA_ARCH_LIST"] = ec._cuda_arch_list(arch) or ""
    try:
        getattr(cpp, "_get_cuda_arch_flags", lambda: None)()  # torch's own check, private: only its ValueError counts
    except ValueError as e:
        sys.exit(f"--arch {arch}: this torch ({torch.__version__}) does not build for it ({type(e).__name__}: {e}); "
                 f"name an arch it knows (e.g. sm_80 where torch is older than the device)")
    except Exception:  # noqa: BLE001 (anything else is the builds' to report)
        pass
    finally:
        if old is None:
            os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
        else:
            os.environ["TORCH_CUDA_ARCH_LIST"] = old

    manifest = json.load(open(os.path.join(a.gens, "manifest.json")))
    answers = [f for f in manifest["files"] if f["path"].endswith(".py")]
    answers = answers[:a.limit] if a.limit else answers
    root = tempfile.mkdtemp(prefix="kwb-split-check-")
    cpu = None
    if torch.version.cuda is None:
        cpu = {"std": CPU_STD, "ldflags": stand_in_cuda_libraries(os.path.join(root, "stand-in-libs"))}
        print(f"this torch ({torch.__version__}) has no CUDA: builds only, each with {CPU_STD} and stand-in "
              f"CUDA libraries; nothing is run", file=sys.stderr, flush=True)
    # The precompiled header both ways' main.cpp (and the split's host unit) get, made once.
    t0 = time.monotonic()
    header = ec.ensure_pch({"name": "x", "cpp_sources": "", "cuda_sources": "x",
                            "extra_cflags": [CPU_STD] if cpu else []}, os.path.join(root, "cache"),
                           lambda args, r, staging: ec.build_in_process(args, r, staging))
    pch = header[0] if header and header[1].get("ok") else None
    header_s = time.monotonic() - t0
    print(f"header: {pch} ({header_s:.0f} s)", file=sys.stderr, flush=True)

    rows = {f["path"]: {"path": f["path"], "level": f["level"], "problem": f["problem"]} for f in answers}

    def one(f, mode):
        if past():
            return f["path"], mode, None
        folder = os.path.join(root, mode, f["path"].replace("/", "_"))
        os.makedirs(folder, exist_ok=True)
        return f["path"], mode, build(os.path.join(a.gens, f["path"]), folder, mode, pch, arch, cpu)

    # Answer by answer, each one's split build beside its whole one (split builds are the short ones),
    # so that a deadline leaves pairs, not whole builds without their split.
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as whole_pool, \
            concurrent.futures.ThreadPoolExecutor(a.split_jobs) as split_pool:
        futures = [pool.submit(one, f, mode) for f in answers
                   for pool, mode in ((whole_pool, "whole"), (split_pool, "split"))]
        for future in futures:
            path, mode, calls = future.result()
            if calls is not None:
                rows[path][mode] = calls
    builds_s = time.monotonic() - t0
    skipped = [r["path"] for r in rows.values() if "whole" not in r or "split" not in r]
    whole_s = sum(c.get("seconds", 0) for r in rows.values() for c in r.get("whole") or [])
    split_s = sum(c.get("seconds", 0) for r in rows.values() for c in r.get("split") or [])
    print(f"builds: {builds_s:.0f} s (whole {a.jobs} at once, split {a.split_jobs} at once); "
          f"{len(skipped)} answers not built by the deadline", file=sys.stderr, flush=True)

    def outputs(row):
        reference = reference_file(a.kernelbench, row["level"], row["problem"])
        w, s = row.get("whole") or [], row.get("split") or []
        if cpu or past(60) or not reference or not w or not s or not all(c["ok"] for c in w + s):
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

    records = [r for r in rows.values() if r["path"] not in skipped]
    records_path = os.path.join(root, "split-check.json") if a.out == "-" else os.path.splitext(a.out)[0] + ".json"
    with open(records_path, "w") as f:
        json.dump(records, f, indent=1)
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    cuda = [r for r in records if any(c.get("cuda") for c in r.get("whole") or [])]
    used = [r for r in cuda if any(c.get("split") == "used" for c in r.get("split") or [])]
    print(f"## Whole and split builds of {len(records)} answers ({len(cuda)} with CUDA sources)\n", file=out)
    if cpu:
        print(f"- a torch without CUDA ({torch.__version__}), arch {arch}: builds only, each with {CPU_STD} and "
              f"stand-in CUDA libraries (no runs)", file=out)
    print(f"- header made in {header_s:.0f} s; builds {builds_s:.0f} s (whole ones {a.jobs} at once, {whole_s:.0f} "
          f"build-s; split ones {a.split_jobs} at once, {split_s:.0f} build-s); runs {run_s:.0f} s", file=out)
    if skipped:
        print(f"- not built by the deadline ({a.deadline:.0f} s), left out: {len(skipped)} of {len(rows)}", file=out)
    print(f"- split used for {len(used)} of {len(cuda)}; the rest: " + ", ".join(
        sorted({(c.get('split') or ('build failed: ' + reason(c) if not c.get('ok') else '?'))[:90]
                for r in cuda for c in r.get('split') or [] if c.get('split') != 'used'}) or ["none"])
        + "\n", file=out)
    print("| answer | whole s | split s | whole | split | split note | outputs | failure |", file=out)
    print("|---|--:|--:|---|---|---|---|---|", file=out)
    for r in records:
        w, s = r.get("whole") or [{}], r.get("split") or [{}]
        note = "; ".join((c.get("split") or "")[:80] for c in s)
        diff = r.get("max_abs_diff")
        shown = r.get("outputs", "–") + ("" if diff in (None, 0.0) else f" (max diff {diff:.3g})")
        failed = "; ".join(f"{how}: {reason(c)}" for how, calls in (("whole", w), ("split", s)) for c in calls
                           if not c.get("ok"))
        print(f"| `{r['path'].split('/')[-1]}` | {sum(c.get('seconds', 0) for c in w):.1f} | "
              f"{sum(c.get('seconds', 0) for c in s):.1f} | {'ok' if all(c.get('ok') for c in w) else 'failed'} | "
              f"{'ok' if all(c.get('ok') for c in s) else 'failed'} | {note} | {shown} | {failed or '–'} |", file=out)
    agree = sum(all(c.get("ok") for c in r.get("whole") or [{}]) == all(c.get("ok") for c in r.get("split") or [{}])
                for r in records)
    same = [r for r in records if "same" in r]
    used_s = [sum(c["seconds"] for c in r["split"]) for r in used if all(c.get("ok") for c in r["split"])]
    whole_used = [sum(c["seconds"] for c in r["whole"]) for r in used if all(c.get("ok") for c in r["split"])]
    print(f"\nBuilt or failed alike both ways: {agree} of {len(records)}. Outputs compared: {len(same)}, the same "
          f"(bit for bit, or within a nondeterministic answer's own spread): {sum(r['same'] for r in same)}.", file=out)
    decided = [r for r in records if any((c.get("split") or "").startswith("failed: the kernels' own error")
                                         for c in r.get("split") or [])]
    if decided:
        # split_verdict.py's rule (docs/sandbox.md): a kernel's error reported from the device unit alone
        whole_failed = sum(not all(c.get("ok") for c in r.get("whole") or [{}]) for r in decided)
        print(f"Kernel errors reported from the device unit, without a whole build: {len(decided)}; the whole "
              f"build failed too for {whole_failed} of them. Split s for those: median "
              f"{statistics.median(sum(c.get('seconds', 0) for c in r['split']) for r in decided):.1f}, whole s: median "
              f"{statistics.median(sum(c.get('seconds', 0) for c in r['whole']) for r in decided):.1f}.", file=out)
    if used_s:
        print(f"Split builds that succeeded: median {statistics.median(used_s):.1f} s (max {max(used_s):.1f}); the "
              f"same answers whole: median {statistics.median(whole_used):.1f} s.", file=out)
    print(f"(records: {records_path}; builds under {root})", file=sys.stderr)


if __name__ == "__main__":
    main()
