#!/usr/bin/env python3
"""KernelBench's own evaluator over a folder of generations (issue 33's agreement study).

Runs `kernelbench.eval.eval_kernel_against_ref` from a fetched KernelBench checkout (not committed;
pass its root) on every generation that bench/agreement/select_generations.py picked, the way
KernelBench's `scripts/eval_from_generations.py` does: the extensions built first on the CPU by
`build_compile_cache` in parallel processes, then each generation evaluated in a process of its own
with the script's defaults (seed 42, 5 correctness trials, 100 timing trials, CUDA events, fp32).

One change of schedule, not of judgement: the verdicts (compiled, correct) come from a pass that
evaluates GPU_PROCS generations at once without timing (correctness does not depend on a quiet GPU),
then the generations found correct are evaluated again, one at a time, with timing (KernelBench's
`measure_performance=True`: the answer's and the reference's mean time, and its effective speed-up).
A generation whose correctness differs between the two passes is marked `flaky`.

`_response.txt` files (a whole model response: its authors' extraction found no module) are turned
into a module by KernelBench's `extract_first_code(text, ["python", "cpp"])`, as its
`scripts/generate_samples.py` does; none found is recorded as not compiled (`no_code`).

Writes one JSON line per generation: {"path", "level", "problem", "sample", "run", "compiled",
"correct", "flaky", "runtime_ms", "ref_runtime_ms", "speedup", "error", "error_name", "phase_s"}.

  python3 kb_eval.py --kernelbench KB_ROOT --gens DIR --out kb.jsonl [--compile-workers 14] [--gpu-procs 4]
"""
import argparse
import concurrent.futures
import glob
import importlib.util
import json
import multiprocessing as mp
import os
import sys
import threading
import time
import types


class _PlainModel:
    """Stands in for pydantic.BaseModel where the GPU machine's Python lacks pydantic: eval.py uses
    it only for KernelExecResult, a record of typed fields with defaults (no validation needed)."""

    def __init__(self, **fields):
        for name in getattr(type(self), "__annotations__", {}):
            default = getattr(type(self), name, None)
            setattr(self, name, dict(default) if isinstance(default, dict) else default)
        for name, value in fields.items():
            setattr(self, name, value)


def stub_inference_imports():
    # kernelbench/utils.py imports its LLM clients at the top; evaluation never calls them, and the
    # GPU machine has no network to install them. Only missing modules are stubbed.
    for name, attrs in {"openai": {"OpenAI": None}, "litellm": {"completion": None},
                        "dotenv": {"load_dotenv": lambda *a, **k: None},
                        "pydantic": {"BaseModel": _PlainModel}}.items():
        if importlib.util.find_spec(name) is None:
            sys.modules[name] = types.SimpleNamespace(**attrs)


def reference_source(kb_root, level, problem):
    paths = glob.glob(os.path.join(kb_root, "KernelBench", f"level{level}", f"{problem}_*.py"))
    if len(paths) != 1:
        raise SystemExit(f"no single reference for level {level} problem {problem}: {paths}")
    return open(paths[0]).read()


def _child(conn, fn, args):
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as e:  # the answer's own failure, reported, never the harness's
        conn.send(("raised", f"{type(e).__name__}: {e}"[:4000]))
    conn.close()


def isolated(ctx, fn, args, timeout):
    """fn(*args) in a process of its own (forked from a server that imported torch already);
    ("timeout", None) when it overran and was killed, ("died", exitcode) when it crashed."""
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child, fn, args))
    p.start()
    child.close()
    if parent.poll(timeout):
        try:
            kind, value = parent.recv()
        except EOFError:
            kind, value = "died", None
    else:
        kind, value = "timeout", None
    p.join(5)
    if p.is_alive():
        p.kill()
        p.join()
    if kind == "died":
        value = p.exitcode
    return kind, value


def compile_one(kb_src, source, build_dir):
    sys.path.insert(0, kb_src)
    stub_inference_imports()
    from kernelbench.eval import build_compile_cache
    ok, stdout, err = build_compile_cache(source, verbose=False, build_dir=build_dir)
    return {"ok": bool(ok), "error": (err or "")[-2000:]}


def eval_one(kb_src, ref, source, build_dir, timed, correct_trials, perf_trials):
    sys.path.insert(0, kb_src)
    stub_inference_imports()
    from kernelbench.eval import eval_kernel_against_ref
    r = eval_kernel_against_ref(ref, source, seed_num=42, num_correct_trials=correct_trials,
                                num_perf_trials=perf_trials, measure_performance=timed,
                                timing_method="cuda_event", build_dir=build_dir, device=0)
    if r is None:  # KernelBench's "lock file error, please retry"
        return None
    md = {k: str(v)[:2000] for k, v in (r.metadata or {}).items()}
    return {"compiled": bool(r.compiled), "correct": bool(r.correctness), "runtime_ms": r.runtime,
            "ref_runtime_ms": getattr(r, "ref_runtime", None), "metadata": md}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernelbench", required=True, help="root of a KernelBench checkout (src/, KernelBench/)")
    ap.add_argument("--gens", required=True, help="a folder made by select_generations.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--build-root", default=None, help="default: GENS/../kb-build")
    ap.add_argument("--compile-workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--gpu-procs", type=int, default=4)
    ap.add_argument("--compile-timeout", type=float, default=600)
    ap.add_argument("--eval-timeout", type=float, default=300)
    ap.add_argument("--correct-trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    ap.add_argument("--no-timing", action="store_true",
                    help="verdicts only: leave the timed pass of the correct ones to a later call (on a quiet GPU)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds after which no new work starts; what is done is kept in OUT.partial and a later call with the same OUT goes on from there")
    ap.add_argument("--cut-at", type=float, default=0,
                    help="seconds after which builds and evaluations still running are cut; what they did not finish "
                         "stays unfinished (not a verdict) for a later call with the same OUT. Without it a build or an "
                         "evaluation begun before --deadline runs to its own limit (session 29 lost its timed pass so)")
    ap.add_argument("--only", default="", help="substring of paths to keep (for a quick try)")
    a = ap.parse_args()
    kb_src = os.path.join(os.path.abspath(a.kernelbench), "src")
    build_root = os.path.abspath(a.build_root or os.path.join(a.gens, "..", "kb-build"))
    manifest = json.load(open(os.path.join(a.gens, "manifest.json")))
    sys.path.insert(0, kb_src)
    stub_inference_imports()
    from kernelbench.utils import extract_first_code

    items = []
    for f in manifest["files"]:
        if a.only and a.only not in f["path"]:
            continue
        text = open(os.path.join(a.gens, f["path"])).read()
        source = extract_first_code(text, ["python", "cpp"]) if f["path"].endswith(".txt") else text
        item = dict(f, ref=reference_source(a.kernelbench, f["level"], f["problem"]), source=source,
                    build_dir=os.path.join(build_root, f["run"], str(f["problem"]), str(f["sample"])))
        items.append(item)

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch"])
    results = {it["path"]: {"path": it["path"], "run": it["run"], "level": it["level"], "problem": it["problem"],
                            "sample": it["sample"], "kind": it.get("kind", "module"), "compiled": False,
                            "correct": False, "flaky": False, "runtime_ms": None, "ref_runtime_ms": None,
                            "speedup": None, "error": "", "error_name": "", "phase_s": {}} for it in items}

    partial = a.out + ".partial"
    if os.path.exists(partial):  # a call cut by --deadline: go on where it stopped
        for path, r in json.load(open(partial)).items():
            if path in results:
                if r.get("compile_failed") and r.get("error_name") == "timeout":
                    # an earlier build that ran past its limit: build it again (see do_compile)
                    r.update(compile_failed=False, error="", error_name="")
                    r["phase_s"].pop("compile", None)
                results[path] = r
    stop_at = time.time() + a.deadline if a.deadline else float("inf")
    cut_at = time.time() + a.cut_at if a.cut_at else float("inf")

    def limited(limit):
        """The step's own limit, or what is left before --cut-at where that comes first (True then)."""
        left = cut_at - time.time()
        return (max(1.0, left), True) if left < limit else (limit, False)

    def save():
        with open(partial + ".tmp", "w") as f:
            json.dump(results, f)
        os.replace(partial + ".tmp", partial)

    def note(it, kind, value, phase):
        r = results[it["path"]]
        if kind == "timeout":
            r["error"], r["error_name"] = f"{phase} ran past its limit", "timeout"
        elif kind == "died":
            r["error"], r["error_name"] = f"{phase} process died (exit {value})", "died"
        elif kind == "raised":
            r["error"], r["error_name"] = value, "harness_exception"

    t0 = time.time()
    todo = [it for it in items if it["source"]]
    for it in items:
        if not it["source"]:
            results[it["path"]].update(error="no code block in the response (extract_first_code)", error_name="no_code")

    def do_compile(it):
        r = results[it["path"]]
        # Done before (a call cut by --deadline): unless its build folder is gone (another machine).
        if "compile" in r["phase_s"] and (r.get("compile_failed") or "verdict" in r["phase_s"] and not r["correct"]
                                           or os.path.isdir(it["build_dir"])
                                           or a.no_timing and "verdict" in r["phase_s"]):
            return
        if time.time() > stop_at or time.time() > cut_at:
            return
        start = time.time()
        limit, cut = limited(a.compile_timeout)
        kind, value = isolated(ctx, compile_one, (kb_src, it["source"], it["build_dir"]), limit)
        if kind == "timeout" and cut:
            return  # cut by --cut-at, not by its limit: unfinished, built again by a later call
        results[it["path"]]["phase_s"]["compile"] = round(time.time() - start, 2)
        if kind == "ok" and not value["ok"]:
            # A failed build is final: evaluating would build again and fail the same way (the
            # verdict is the one eval_kernel_against_ref gives: compiled false), at a minute each.
            results[it["path"]].update(compile_failed=True, error=value["error"], error_name="compilation_error")
        elif kind == "timeout":
            # A build past its limit on a loaded machine says nothing about the answer: not final,
            # a later call builds it again.
            note(it, kind, value, "compile")
            del results[it["path"]]["phase_s"]["compile"]
        elif kind != "ok":
            results[it["path"]]["compile_failed"] = True
            note(it, kind, value, "compile")

    def do_eval(it, timed):
        # The deadline stops new builds and timings; a verdict of a finished build is a few seconds.
        if ("timed" if timed else "verdict") in results[it["path"]]["phase_s"] or timed and time.time() > stop_at:
            return
        if time.time() > cut_at:
            return
        start = time.time()
        for attempt in range(2):  # KernelBench retries a lock-file error
            limit, cut = limited(a.eval_timeout)
            kind, value = isolated(ctx, eval_one, (kb_src, it["ref"], it["source"], it["build_dir"], timed,
                                                  a.correct_trials, a.perf_trials), limit)
            if kind == "timeout" and cut:
                return  # cut by --cut-at: no verdict, evaluated again by a later call
            if not (kind == "ok" and value is None):
                break
        r = results[it["path"]]
        r["phase_s"]["timed" if timed else "verdict"] = round(time.time() - start, 2)
        if kind != "ok" or value is None:
            # eval_from_generations records a harness-level failure as not compiled
            if not timed:
                note(it, kind, value, "evaluation")
                if kind == "ok":
                    r["error"], r["error_name"] = "lock file error twice", "lock"
            else:
                r["flaky"] = True
            return
        md = value["metadata"]
        if not timed:
            r["compiled"], r["correct"] = value["compiled"], value["correct"]
            for key in ("compilation_error", "runtime_error", "correctness_issue", "cuda_error", "other_error"):
                if key in md:
                    r["error"], r["error_name"] = md[key], md.get(key + "_name", key)
                    break
            r["metadata"] = md
        else:
            if value["correct"] != r["correct"]:
                r["flaky"] = True
            r["runtime_ms"], r["ref_runtime_ms"] = value["runtime_ms"], value["ref_runtime_ms"]
            if value["runtime_ms"] and value["runtime_ms"] > 0 and value["ref_runtime_ms"]:
                r["speedup"] = value["ref_runtime_ms"] / value["runtime_ms"]
            r["excessive_speedup"] = md.get("excessive_speedup") == "True"

    # Verdicts follow each build as soon as it is done (GPU_PROCS at once) rather than after all
    # builds, so a call cut by --deadline keeps every verdict it reached (the builds of a cut call
    # are lost with the machine). The schedule changes, the judgement does not.
    save_lock = threading.Lock()

    def saved(fn, *args):
        fn(*args)
        with save_lock:
            save()

    def build_then_verdict(it, gpu_pool):
        saved(do_compile, it)
        r = results[it["path"]]
        if "compile" in r["phase_s"] and not r.get("compile_failed"):
            return gpu_pool.submit(saved, do_eval, it, False)
        return None

    with concurrent.futures.ThreadPoolExecutor(a.gpu_procs) as gpu_pool:
        with concurrent.futures.ThreadPoolExecutor(a.compile_workers) as pool:
            verdicts = [f for f in pool.map(lambda it: build_then_verdict(it, gpu_pool), todo) if f]
        print(f"compiled {len(todo)} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        for f in verdicts:
            f.result()
    save()
    built = [it for it in todo if "compile" in results[it["path"]]["phase_s"] and not results[it["path"]].get("compile_failed")]
    print(f"verdicts for {len(built)} built, {time.time() - t0:.0f} s in all", file=sys.stderr, flush=True)
    if a.no_timing:
        print("no timing pass (--no-timing): call again without it to time the correct ones", file=sys.stderr)
    # A verdict pass that ran out of GPU memory beside the other GPU_PROCS evaluations is the
    # harness's failure, not the answer's (session 30: L1/5 needs 28.6 GiB a process; four at once
    # overran an 80 GB H100): evaluated again, one at a time.
    crowded = [it for it in built if results[it["path"]].get("error_name", "").endswith("OutOfMemoryError")]
    for it in crowded:
        results[it["path"]]["phase_s"].pop("verdict", None)
        results[it["path"]].update(error="", error_name="", correct=False, compiled=False)
        saved(do_eval, it, False)
    if crowded:
        print(f"evaluated again alone (out of GPU memory beside others): {len(crowded)}", file=sys.stderr, flush=True)
    t2 = time.time()
    correct = [it for it in built if results[it["path"]]["correct"]]
    for it in correct if not a.no_timing else []:
        saved(do_eval, it, True)  # each timing kept as it ends: a call cut in the timed pass keeps those
    save()
    unfinished = [p for p, r in results.items() if r["kind"] and (
        (p in {it["path"] for it in todo} and "compile" not in r["phase_s"]) or
        (p in {it["path"] for it in built} and "verdict" not in r["phase_s"]) or
        (r["correct"] and "timed" not in r["phase_s"] and not a.no_timing))]
    if unfinished:
        print(f"stopped at the deadline: {len(unfinished)} generations unfinished; call again with the same --out", file=sys.stderr)
        sys.exit(3)
    print(f"timed {len(correct)} correct in {time.time() - t2:.0f} s", file=sys.stderr, flush=True)

    with open(a.out, "w") as out:
        for it in items:
            out.write(json.dumps(results[it["path"]]) + "\n")
    n = len(items)
    print(f"{n} generations: {sum(r['compiled'] for r in results.values())} compiled, "
          f"{sum(r['correct'] for r in results.values())} correct; {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
