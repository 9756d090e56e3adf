#!/usr/bin/env python3
# Issue 35 item 3: a cold KernelBench-format run's before/after table from kwb's own databases
# (the device step cold-zero-shot: the same recorded answers built whole and split, side by side).
#
#   python3 bench/kb_cold_table.py MODE=DB[=WALL_S] [MODE=DB[=WALL_S] ...] [--run ID]
#
# MODE: the column's name; DB: a kwb database (plain or .xz); WALL_S: the run's wall time as the
# caller measured it (else from the run's first prompt to its last evaluation, which misses kwb's
# start). One generated run per database (the last, or --run ID). Prints
# Markdown: candidates/min, every extension's build time (built_ms: the build's own wall time, kept
# with the entry), the build-seconds per wall-second, the header and the split as each build
# reports them, and the evaluations' stages (where the rest of the time went).
import argparse
import collections
import json
import lzma
import os
import sqlite3
import statistics
import sys
import tempfile
from datetime import datetime


def open_db(path):
    if path.endswith(".xz"):
        fd, plain = tempfile.mkstemp(suffix=".db")
        with os.fdopen(fd, "wb") as out, lzma.open(path) as data:
            out.write(data.read())
        path = plain
    return sqlite3.connect(path)


def when(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read(db_path, run_id=None):
    db = open_db(db_path)
    if run_id is None:
        row = db.execute("SELECT id FROM runs WHERE regime != 'import' ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            raise SystemExit(f"{db_path}: no generated run")
        run_id = row[0]
    rows = db.execute(
        "SELECT e.status, e.created, e.result, c.task FROM evaluations e JOIN candidates c ON e.candidate_id = c.id "
        "JOIN responses r ON c.response_id = r.id JOIN prompts p ON r.prompt_id = p.id WHERE p.run_id = ?",
        (run_id,)).fetchall()
    candidates = db.execute(
        "SELECT COUNT(*) FROM candidates c JOIN responses r ON c.response_id = r.id JOIN prompts p ON "
        "r.prompt_id = p.id WHERE p.run_id = ?", (run_id,)).fetchone()[0]
    started = db.execute("SELECT MIN(p.created) FROM prompts p WHERE p.run_id = ?", (run_id,)).fetchone()[0]
    status, config = db.execute("SELECT status, config FROM runs WHERE id = ?", (run_id,)).fetchone()
    try:  # `kwb run --evaluations-per-gpu N` stores N where it is not 1
        slots = int(json.loads(config).get("evaluations_per_gpu") or 1)
    except (ValueError, TypeError, AttributeError):
        slots = 1
    out = {"run": run_id, "status": status, "slots": slots, "candidates": candidates, "evaluations": len(rows),
           "statuses": collections.Counter(), "builds": {}, "pch": collections.Counter(),
           "split": collections.Counter(), "joined": collections.Counter(), "stages": collections.defaultdict(float),
           "last": None, "verdicts": [], "longest": [], "python_start": [], "turn_wait": 0.0, "params_cpu": 0.0}
    for status_, created, result, task in rows:
        out["statuses"][status_] += 1
        t = when(created)
        out["last"] = t if out["last"] is None else max(out["last"], t)
        try:
            d = json.loads(result)
        except ValueError:
            continue
        for stage, ms in (d.get("stage_ms") or {}).items():
            if stage != "total" and isinstance(ms, (int, float)):
                out["stages"][stage] += ms / 1000.0
        # Waits inside the evaluations (stage_detail_ms): torch's import in a worker that had not
        # started it, the turn behind the other slot's evaluation, the task's parameters drawn on the CPU.
        detail = d.get("stage_detail_ms") or {}
        python_start = (detail.get("between") or {}).get("python_start")
        if isinstance(python_start, (int, float)) and python_start >= 100:
            out["python_start"].append(python_start / 1000.0)
        turn_wait = (detail.get("share") or {}).get("turn_wait")
        out["turn_wait"] += turn_wait / 1000.0 if isinstance(turn_wait, (int, float)) else 0.0
        for part in ("task_parameters_cpu", "task_parameters_cpu_beside"):
            ms = (detail.get("compile") or {}).get(part)
            out["params_cpu"] += ms / 1000.0 if isinstance(ms, (int, float)) else 0.0
        total = (d.get("stage_ms") or {}).get("total")
        out["verdicts"].append((t, total / 1000.0 if isinstance(total, (int, float)) else 0.0))
        out["longest"].append((out["verdicts"][-1][1], task))
        for ext in (d.get("compile") or {}).get("extensions") or []:
            key = ext.get("key") or ext.get("build_dir")
            if key in out["builds"] or not isinstance(ext.get("built_ms"), (int, float)):
                continue  # one build per entry, however many evaluations loaded it
            out["builds"][key] = ext["built_ms"] / 1000.0
            out["pch"][_word(ext.get("pch"))] += 1
            out["split"][_word(ext.get("split")) if ext.get("with_cuda") else "(no .cu)"] += 1
            if ext.get("with_cuda"):  # main.cpp in one unit with the host unit (since session 45)
                out["joined"][str(ext.get("joined") or "(none)")[:70]] += 1
    out["started"] = when(started) if started else None
    # Between one verdict and the next, beyond the next evaluation's own time (its stages' total):
    # where the slot waited for a worker's start or for a build. Only with one slot per GPU, whose
    # evaluations run in turn; with more they overlap, and the row says so.
    out["verdicts"].sort()
    out["longest"].sort(reverse=True)
    out["between"] = [max(0.0, (b[0] - a[0]) - b[1]) for a, b in zip(out["verdicts"], out["verdicts"][1:])]
    if slots > 1:
        out["between"] = None
    return out


def _word(note):
    """A header's or split's note by its kind: used / not used: <why> / failed."""
    note = str(note or "(none)")
    if note.startswith("used"):
        return "used"
    head, _, why = note.partition(": ")
    why = why.split(" (one for ")[0]  # what the header was looked for under (extension_cache.pch_wanted): one kind
    return f"{head}: {why[:60]}" if why else head


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("columns", nargs="+", help="MODE=DB[=WALL_S]")
    parser.add_argument("--run", type=int)
    args = parser.parse_args()
    columns = []
    for spec in args.columns:
        parts = spec.split("=")
        if len(parts) < 2:
            parser.error(f"{spec}: not MODE=DB[=WALL_S]")
        r = read(parts[1], args.run)
        r["mode"] = parts[0]
        span = (r["last"] - r["started"]) if r["started"] and r["last"] else None
        r["wall"] = float(parts[2]) if len(parts) > 2 and parts[2] else span
        r["wall_from"] = "measured by the caller" if len(parts) > 2 and parts[2] else "first prompt to last evaluation"
        columns.append(r)

    def cell(r, f):
        try:
            return f(r)
        except (TypeError, ValueError, ZeroDivisionError, statistics.StatisticsError):
            return "–"
    rows = [
        ("run (status)", lambda r: f"#{r['run']} ({r['status']})"),
        ("wall s", lambda r: f"{r['wall']:.0f} ({r['wall_from']})"),
        ("candidates / evaluations", lambda r: f"{r['candidates']} / {r['evaluations']}"),
        ("candidates/min", lambda r: f"{60.0 * r['evaluations'] / r['wall']:.1f}"),
        ("verdicts", lambda r: ", ".join(f"{k} {v}" for k, v in r["statuses"].most_common())),
        # the evaluations' own time (their stages' totals, waits inside them included) and where most went
        ("evaluations' own s: all; the three longest",
         lambda r: f"{sum(v for _, v in r['verdicts']):.0f}; " + ", ".join(f"{t} {v:.1f}" for v, t in r["longest"][:3])),
        ("evaluations that waited for torch's import (≥ 0.1 s): count, s [min–max], sum",
         lambda r: "0" if not r["python_start"] else
         f"{len(r['python_start'])}, [{min(r['python_start']):.1f}–{max(r['python_start']):.1f}], {sum(r['python_start']):.1f}"),
        ("the turns' waits, s (two slots: behind the other's evaluation)", lambda r: f"{r['turn_wait']:.1f}"),
        ("the task's parameters drawn on the CPU, s", lambda r: f"{r['params_cpu']:.1f}"),
        ("first verdict s (after the first prompt)", lambda r: f"{r['verdicts'][0][0] - r['started']:.1f}"),
        ("between verdicts beyond the evaluation's own time, s: median [max], sum",
         lambda r: f"– ({r['slots']} evaluations at once)" if r["between"] is None else
         f"{statistics.median(r['between']):.1f} [{max(r['between']):.1f}], {sum(r['between']):.0f}"),
        ("extensions built", lambda r: str(len(r["builds"]))),
        ("build s, median [min–max]", lambda r: f"{statistics.median(r['builds'].values()):.1f} "
                                                f"[{min(r['builds'].values()):.1f}–{max(r['builds'].values()):.1f}]"),
        ("build s, all builds", lambda r: f"{sum(r['builds'].values()):.0f}"),
        # all builds' seconds over the run's wall time: the run's tail of evaluations counts too
        ("build-seconds per wall-second", lambda r: f"{sum(r['builds'].values()) / r['wall']:.1f}"),
        ("torch header", lambda r: "; ".join(f"{k} {v}" for k, v in r["pch"].most_common())),
        ("split", lambda r: "; ".join(f"{k} {v}" for k, v in r["split"].most_common())),
        ("main.cpp joined with the host unit", lambda r: "; ".join(f"{k} {v}" for k, v in r["joined"].most_common())),
    ]
    print("| | " + " | ".join(r["mode"] for r in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, f in rows:
        print(f"| {name} | " + " | ".join(cell(r, f) for r in columns) + " |")
    print()
    print("Where the evaluations' time went (their stages, summed over the run's evaluations, s; "
          "the builds above run in the compile pool before these):")
    print()
    stages = sorted({s for r in columns for s in r["stages"]}, key=lambda s: -max(r["stages"].get(s, 0) for r in columns))
    print("| stage | " + " | ".join(r["mode"] for r in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for s in stages:
        print(f"| {s} | " + " | ".join(f"{r['stages'].get(s, 0.0):.1f}" for r in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
