#!/usr/bin/env bash
# Issue 16: the same verdicts locally and through ssh. Starts an sshd of its own on 127.0.0.1 (a
# free port, host and user keys made here, its own config; as the current user, no system sshd),
# then evaluates candidates with `kwb eval` twice, locally and with
# `--workers ssh:kwbcheck:GPU:worker=KWB_WORKER:env=...`, and compares the verdicts: status, stage,
# flags, and the speed-ups' 95 % intervals, which must overlap. Exit 0 when every verdict agrees,
# 1 otherwise, 2 when sshd cannot run here.
# With KWB_CHECK_RUN set it compares a whole run instead: the same `kwb run` twice, locally
# (compile-ahead local, the default workers) and with `--workers SPEC`, each against a fresh
# fixture server (kwb-fixture-llm) into a database of its own, then every (task, turn, sample)
# candidate's evaluation from the two stores: status, stage, flags, the speed-up's 95 % interval
# (timing.speedup_interval, must overlap), and where it ran (evaluations.worker: local:N for the
# local run, kwbcheck:GPU for the ssh one). Exit 1 on any difference, different candidate sets or
# different exit codes of the two runs.
#
#   scripts/remote-workers-check.sh [BUILD_DIR] [CANDIDATE.md ...]
#   KWB_CHECK_RUN="run --regime iterative --tasks L1:1-3" scripts/remote-workers-check.sh [BUILD_DIR]
#   (default: build/release and every tests/fixtures/candidates/reference/*.md; a candidate's task
#    is its entry's in tests/fixtures/candidates/*manifest.toml, else read from its name, L2_01 ->
#    L2/1; TASK=CANDIDATE.md names it, e.g. L1/1=tests/fixtures/candidates/limits/host_memory_hog.md)
# Settings (environment):
#   KWB_CHECK_GPU=N         the GPU (default 0)
#   KWB_CHECK_ARGS="..."    more `kwb eval` options for both runs, e.g. "--trials 20" (in run mode
#                           more `kwb run` options, e.g. "--compile-only" on a machine without GPU)
#   KWB_CHECK_RUN="run ..." run mode: the kwb command line after `kwb --worker W`, without
#                           --endpoint, --model, --db and --workers, which the check adds
#   KWB_CHECK_FIXTURE="..." the fixture server (default BUILD_DIR/tests/kwb-fixture-llm), e.g.
#                           "/tmp/kwb-bundle/run kwb-fixture-llm"
#   KWB_CHECK_KWB="..."     the kwb command (default BUILD_DIR/bin/kwb), e.g. "/tmp/kwb-bundle/run kwb"
#   KWB_CHECK_WORKER=PATH   the worker (default BUILD_DIR/bin/kwb-worker)
#   KWB_CHECK_REMOTE_ENV    newline-separated NAME=VALUE for the ssh worker (env= of the spec);
#                           default: PATH and LD_LIBRARY_PATH as kwb has them here, which the local
#                           worker gets too (ssh sends no environment)
#   KWB_CHECK_OUT=DIR       keep both `kwb eval --json` outputs of each candidate there (run mode:
#                           run-local.db, run-ssh.db, each run's --json and stderr, the servers' logs)
# ssh, sshd and ssh-keygen come from PATH (scripts/ssh-bundle.sh's bin/ first on a machine without).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build/release}" && pwd)  # absolute: the worker path is used on the ssh side too
shift || true
read -ra kwb <<< "${KWB_CHECK_KWB:-$build/bin/kwb}"
worker=$(realpath "${KWB_CHECK_WORKER:-$build/bin/kwb-worker}")
gpu=${KWB_CHECK_GPU:-0}
if (($# > 0)); then candidates=("$@"); else candidates=("$repo"/tests/fixtures/candidates/reference/*.md); fi
[[ -x ${kwb[0]} && -x $worker ]] || { echo "remote-workers-check: no ${kwb[0]} or $worker (build first)" >&2; exit 2; }

sshd=$(command -v sshd || echo /usr/sbin/sshd)
sshd=$(realpath "$sshd") # sshd re-executes itself by an absolute path
[[ -x $sshd ]] || { echo "remote-workers-check: no sshd (apt-get install openssh-server)" >&2; exit 2; }
if ((EUID == 0)) && [[ ! -d /run/sshd ]]; then mkdir -p -m 0755 /run/sshd; fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/kwb-remote-check-XXXXXX")
sshd_pid=
cleanup() { [[ -n $sshd_pid ]] && kill "$sshd_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
[[ -n ${KWB_CHECK_DEBUG:-} ]] && trap - EXIT

ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$dir/user_key"
cp "$dir/user_key.pub" "$dir/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
user=$(id -un)
{
  echo "Port $port"; echo "ListenAddress 127.0.0.1"; echo "HostKey $dir/host_key"
  echo "AuthorizedKeysFile $dir/authorized_keys"; echo "StrictModes no"; echo "PasswordAuthentication no"
  echo "KbdInteractiveAuthentication no"; echo "UsePAM no"; echo "PidFile $dir/sshd.pid"; echo "AllowUsers $user"
  if ((EUID == 0)); then echo "PermitRootLogin prohibit-password"; fi
} > "$dir/sshd_config"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$dir/host_key.pub")" > "$dir/known_hosts"
cat > "$dir/ssh_config" <<EOF
Host kwbcheck
  HostName 127.0.0.1
  Port $port
  User $user
  IdentityFile $dir/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  LogLevel ERROR
EOF
printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$dir/ssh_config" > "$dir/ssh"
chmod +x "$dir/ssh"
"$sshd" -D -e -f "$dir/sshd_config" 2> "$dir/sshd.log" &
sshd_pid=$!
for _ in $(seq 50); do grep -q "Server listening" "$dir/sshd.log" && break; sleep 0.1; done
if ! KWB_SSH=$dir/ssh "$dir/ssh" -T -o BatchMode=yes kwbcheck true; then
  echo "remote-workers-check: ssh to the check's own sshd fails:" >&2; cat "$dir/sshd.log" >&2; exit 2
fi
export KWB_SSH=$dir/ssh

# The ssh worker's environment: what the local worker gets from kwb (workerEnvironment()), as
# env= assignments, since ssh sends none; and the tasks the local worker gets as --tasks-dir: a
# worker of a build tree reads the source tree's, which its sandbox there shows only when named.
if [[ -n ${KWB_CHECK_REMOTE_ENV+set} ]]; then remote_env=$KWB_CHECK_REMOTE_ENV
else remote_env="PATH=$PATH${LD_LIBRARY_PATH:+$'\n'LD_LIBRARY_PATH=$LD_LIBRARY_PATH}"$'\n'"KWB_TASKS_DIR=$repo/tasks"; fi
spec="ssh:kwbcheck:$gpu:worker=$worker"
while IFS= read -r assignment; do if [[ -n $assignment ]]; then spec+=":env=$assignment"; fi; done <<< "$remote_env"
out=${KWB_CHECK_OUT:-$dir/out}
mkdir -p "$out"

# Run mode: the same whole `kwb run` locally and through ssh, each against a fresh fixture server
# (its per-task counters are its only state, so both runs get the same answers in the same order)
# into a database of its own; then every candidate's verdict, side by side.
if [[ -n ${KWB_CHECK_RUN:-} ]]; then
  (($# == 0)) || { echo "remote-workers-check: KWB_CHECK_RUN compares a run; it takes no candidates" >&2; exit 2; }
  read -ra run_args <<< "$KWB_CHECK_RUN"
  read -ra fixture <<< "${KWB_CHECK_FIXTURE:-$build/tests/kwb-fixture-llm}"
  [[ -x ${fixture[0]} ]] || { echo "remote-workers-check: no ${fixture[0]} (build kwb-fixture-llm)" >&2; exit 2; }
  fixture_pid=
  trap 'if [[ -n $fixture_pid ]]; then kill "$fixture_pid" 2>/dev/null; fi; cleanup' EXIT
  [[ -n ${KWB_CHECK_DEBUG:-} ]] && trap - EXIT
  declare -A run_rc
  run_once() { # WHICH [KWB RUN OPTIONS...]: one run into $out/run-WHICH.db against a fresh server
    local which=$1 url=
    shift
    rm -f "$out/run-$which.db" "$out/run-$which.db-wal" "$out/run-$which.db-shm"
    "${fixture[@]}" --candidates "$repo/tests/fixtures/candidates" --log "$out/llm-$which.log" \
      > "$dir/llm-$which.url" 2> "$out/llm-$which.err" &
    fixture_pid=$!
    for _ in $(seq 100); do url=$(head -1 "$dir/llm-$which.url"); [[ -n $url ]] && break; sleep 0.1; done
    [[ -n $url ]] || { echo "remote-workers-check: the fixture server printed no URL:" >&2; cat "$out/llm-$which.err" >&2; exit 2; }
    # shellcheck disable=SC2086
    "${kwb[@]}" --worker "$worker" "${run_args[@]}" --endpoint "$url" --model fixture-model --db "$out/run-$which.db" \
      --json ${KWB_CHECK_ARGS:-} "$@" > "$out/run-$which.json" 2> "$out/run-$which.err"
    run_rc[$which]=$?
    kill "$fixture_pid" 2>/dev/null; wait "$fixture_pid" 2>/dev/null
    fixture_pid=
  }
  # sshd's own count of logins: none during the local run, the ssh run's workers during it.
  logins() { grep -c "Accepted publickey" "$dir/sshd.log" || true; }
  set +e
  before=$(logins)
  CUDA_VISIBLE_DEVICES=$gpu run_once local
  after_local=$(logins)
  run_once ssh --workers "$spec"
  after_ssh=$(logins)
  set -e
  # One row per (task, turn, sample) candidate of the runs; exit 1 when any verdict, the candidate
  # sets, the exit codes or where an evaluation ran differ from what the spec says.
  python3 - "$out/run-local.db" "$out/run-ssh.db" "${run_rc[local]}" "${run_rc[ssh]}" "kwbcheck:$gpu" \
    "$((after_local - before))" "$((after_ssh - after_local))" \
    "$(uname -n), $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?); kwb $KWB_CHECK_RUN ${KWB_CHECK_ARGS:-}; ssh worker env: $(echo "$remote_env" | cut -d= -f1 | tr '\n' ' ')" <<'PY'
import collections, json, re, sqlite3, sys
local_db, ssh_db, local_rc, ssh_rc, ssh_location, local_logins, ssh_logins, about = sys.argv[1:]

def candidates(path):
    """(run, task, turn, sample, k) -> the candidate's last evaluation; k orders candidates that share the rest."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = db.execute(
            "SELECT p.run_id, c.task, c.turn, c.sample, c.id, e.status, e.speedup, e.result, e.worker,"
            " (SELECT COUNT(*) FROM evaluations x WHERE x.candidate_id = c.id)"
            " FROM candidates c JOIN responses r ON c.response_id = r.id JOIN prompts p ON r.prompt_id = p.id"
            " LEFT JOIN evaluations e ON e.id = (SELECT MAX(id) FROM evaluations y WHERE y.candidate_id = c.id)"
            " ORDER BY c.id").fetchall()
    except sqlite3.Error as x:
        print(f"{path}: {x}", file=sys.stderr)
        return {}
    out, seen = {}, collections.Counter()
    for run, task, turn, sample, _, status, speedup, result, worker, count in rows:
        key = (run, task, turn, sample)
        seen[key] += 1
        try: r = json.loads(result) if result else {}
        except ValueError: r = {}
        interval = (r.get("timing") or {}).get("speedup_interval") or {}
        low, high = interval.get("low"), interval.get("high")
        out[key + (seen[key],)] = {"status": status or "not evaluated", "stage": r.get("stage"),
            "flags": sorted(r.get("flags") or []), "speedup": speedup, "worker": worker or "-", "evaluations": count,
            "interval": None if low is None or high is None else (low, high)}
    return out

a, b = candidates(local_db), candidates(ssh_db)
missing = {"status": "missing", "stage": None, "flags": [], "speedup": None, "worker": "-", "evaluations": 0, "interval": None}
def order(key):
    m = re.match(r"L(\d+)/(\d+)$", key[1])
    return (key[0], (int(m.group(1)), int(m.group(2))) if m else (99, 0), key[1], key[2], key[3], key[4])
def speed(v):
    if v["speedup"] is None: return "-"
    return f'{v["speedup"]:.3f}' + (f' [{v["interval"][0]:.3f}, {v["interval"][1]:.3f}]' if v["interval"] else "")
runs = {k[0] for k in a} | {k[0] for k in b}
print(f"| {'run | ' if len(runs) > 1 else ''}task | turn | sample | local | {ssh_location} | local flags | ssh flags "
      f"| local speedup [95 %] | ssh speedup [95 %] | local ran on | ssh ran on | agree |")
print("|---" * (12 + (len(runs) > 1)) + "|")
keys = sorted(set(a) | set(b), key=order)
agree = 0
for key in keys:
    x, y = a.get(key, missing), b.get(key, missing)
    if key not in a or key not in b:
        why = ["only in the " + ("local" if key in a else "ssh") + " run"]
    else:
        why = [k for k in ("status", "stage", "flags") if x[k] != y[k]]
        if (x["speedup"] is None) != (y["speedup"] is None): why.append("speedup")
        elif x["interval"] and y["interval"] and (x["interval"][1] < y["interval"][0] or y["interval"][1] < x["interval"][0]):
            why.append("speedup intervals apart")
        if x["evaluations"] != y["evaluations"]: why.append(f'evaluations {x["evaluations"]} / {y["evaluations"]}')
    # Every evaluation of the local run on a local GPU, every one of the ssh run on the ssh host.
    if key in a and x["status"] != "not evaluated" and not x["worker"].startswith("local:"): why.append("local ran elsewhere")
    if key in b and y["status"] != "not evaluated" and y["worker"] != ssh_location: why.append("ssh ran elsewhere")
    agree += not why
    name = (f"{key[1]}" if key[4] == 1 else f"{key[1]} ({key[4]})")
    print(f'| {f"{key[0]} | " if len(runs) > 1 else ""}{name} | {key[2]} | {key[3]} | {x["status"]} | {y["status"]} '
          f'| {",".join(x["flags"]) or "-"} | {",".join(y["flags"]) or "-"} | {speed(x)} | {speed(y)} '
          f'| {x["worker"]} | {y["worker"]} | {"yes" if not why else "NO: " + ", ".join(why)} |')
print()
count = lambda d, f: ", ".join(f"{k} x{n}" for k, n in sorted(collections.Counter(f(v) for v in d.values()).items())) or "none"
same_rc = local_rc == ssh_rc
print(f"{agree} of {len(keys)} verdicts agree; local statuses: {count(a, lambda v: v['status'])}; "
      f"evaluations ran on: local run {count(a, lambda v: v['worker'])}, ssh run {count(b, lambda v: v['worker'])}; "
      f"sshd logins: during the local run {local_logins}, during the ssh run {ssh_logins}; "
      f"kwb run exit codes: local {local_rc}, ssh {ssh_rc}{'' if same_rc else ' (differ)'}; "
      f"candidates: local {len(a)}, ssh {len(b)} (machine {about})")
through_ssh = local_logins == "0" and int(ssh_logins) > 0
if not through_ssh:
    print("NO: the ssh run's workers did not log in through sshd, or the local run's did")
sys.exit(0 if keys and agree == len(keys) and same_rc and through_ssh else 1)
PY
  exit $?
fi

task_of() { python3 - "$repo" "$1" <<'PY'
import re, sys, pathlib, tomllib
repo, candidate = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
root = repo / "tests/fixtures/candidates"
for manifest in root.rglob("manifest.toml"):
    for entry in tomllib.loads(manifest.read_text()).get("candidate", []):
        if (root / entry["file"]).resolve() == candidate:
            print(entry["task"]); sys.exit()
m = re.match(r"L(\d)_0*(\d+)", candidate.name)
print(f"L{m.group(1)}/{m.group(2)}" if m else "?")
PY
}

# One table row from the two `kwb eval --json` outputs; exit 1 when the verdicts differ.
compare() { python3 - "$@" <<'PY'
import json, sys
name, task, local_file, ssh_file = sys.argv[1:5]
def verdict(path):
    try: r = json.load(open(path))
    except Exception: return {"status": "no-json", "stage": None, "flags": [], "interval": None, "speedup": None}
    response = r.get("response") or {}
    low, high = r.get("speedup_low"), r.get("speedup_high")
    return {"status": r.get("status") or (r.get("error") or {}).get("code") or "?", "stage": r.get("stage"),
            "flags": sorted(response.get("flags") or []), "speedup": r.get("speedup"),
            "interval": None if low is None or high is None else (low, high)}
a, b = verdict(local_file), verdict(ssh_file)
why = [k for k in ("status", "stage", "flags") if a[k] != b[k]]
if (a["speedup"] is None) != (b["speedup"] is None): why.append("speedup")
elif a["interval"] and b["interval"] and (a["interval"][1] < b["interval"][0] or b["interval"][1] < a["interval"][0]):
    why.append("speedup intervals apart")
def speed(v):
    if v["speedup"] is None: return "-"
    return f'{v["speedup"]:.3f}' + (f' [{v["interval"][0]:.3f}, {v["interval"][1]:.3f}]' if v["interval"] else "")
print(f'| {name} | {task} | {a["status"]} | {b["status"]} | {",".join(a["flags"]) or "-"} | {",".join(b["flags"]) or "-"} '
      f'| {speed(a)} | {speed(b)} | {"yes" if not why else "NO: " + ", ".join(why)} |')
sys.exit(1 if why else 0)
PY
}

echo "| candidate | task | local | ssh:127.0.0.1:$gpu | local flags | ssh flags | local speedup [95 %] | ssh speedup [95 %] | agree |"
echo "|---|---|---|---|---|---|---|---|---|"
mismatches=0
statuses=()
for candidate in "${candidates[@]}"; do
  if [[ $candidate =~ ^(L[0-9]+/[0-9]+)=(.+)$ ]]; then task=${BASH_REMATCH[1]}; candidate=${BASH_REMATCH[2]}
  else task=$(task_of "$candidate"); fi
  name=$(basename "$(dirname "$candidate")")/$(basename "$candidate" .md)
  base=$out/${name//\//_}
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$gpu "${kwb[@]}" --worker "$worker" eval "$task" "$candidate" --json ${KWB_CHECK_ARGS:-} \
    > "$base.local.json" 2> "$base.local.err" || true
  # shellcheck disable=SC2086
  "${kwb[@]}" --worker "$worker" eval "$task" "$candidate" --json --workers "$spec" ${KWB_CHECK_ARGS:-} \
    > "$base.ssh.json" 2> "$base.ssh.err" || true
  compare "$name" "$task" "$base.local.json" "$base.ssh.json" || mismatches=$((mismatches + 1))
  statuses+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status"))' "$base.local.json" 2>/dev/null || echo no-json)")
done
echo
# Agreeing machine failures (start_failed everywhere) prove little: the statuses seen say so.
echo "$((${#candidates[@]} - mismatches)) of ${#candidates[@]} verdicts agree; local statuses: $(printf '%s\n' "${statuses[@]}" | sort | uniq -c | awk '{s = s (NR > 1 ? ", " : "") $2 " x" $1} END {print s}') (machine $(uname -n), $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?); kwb eval ${KWB_CHECK_ARGS:-}; ssh worker env: $(echo "$remote_env" | cut -d= -f1 | tr '\n' ' '))"
((mismatches == 0))
