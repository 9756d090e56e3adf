#!/usr/bin/env bash
# Issue 16: the same verdicts locally and through ssh. Starts an sshd of its own on 127.0.0.1 (a
# free port, host and user keys made here, its own config; as the current user, no system sshd),
# then evaluates reference candidates with `kwb eval` twice, locally and with
# `--workers ssh:kwbcheck:GPU:worker=KWB_WORKER`, and compares the statuses (and prints both
# speedups). Exit 0 when every verdict agrees, 1 otherwise, 2 when sshd cannot run here.
#
#   scripts/remote-workers-check.sh [BUILD_DIR] [CANDIDATE.md ...]
#   (default: build/release and every tests/fixtures/candidates/reference/*.md; GPU 0; set
#    KWB_CHECK_GPU=N for another, KWB_CHECK_ARGS for more `kwb eval` options, e.g. "--trials 20")
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build/release}" && pwd)  # absolute: the worker path is used on the ssh side too
shift || true
kwb=$build/bin/kwb
worker=$(realpath "${KWB_CHECK_WORKER:-$build/bin/kwb-worker}")
gpu=${KWB_CHECK_GPU:-0}
if (($# > 0)); then candidates=("$@"); else candidates=("$repo"/tests/fixtures/candidates/reference/*.md); fi
[[ -x $kwb && -x $worker ]] || { echo "remote-workers-check: no $kwb or $worker (build first)" >&2; exit 2; }

sshd=$(command -v sshd || echo /usr/sbin/sshd)
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
  # The worker's libraries (CUDA, libtorch) as this shell finds them; a login there would get its own.
  [[ -n ${LD_LIBRARY_PATH:-} ]] && echo "SetEnv LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
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

# "STATUS SPEEDUP" of `kwb eval --json`; a failure without a verdict prints its error code.
status_of() { python3 -c 'import json,sys
try: r = json.load(sys.stdin)
except Exception: print("no-json", "-"); sys.exit()
status = r.get("status") or (r.get("error") or {}).get("code") or "?"
speedup = r.get("speedup")
print(status, "-" if speedup is None else speedup)'; }

echo "| candidate | task | local | ssh:127.0.0.1:$gpu | local speedup | ssh speedup |"
echo "|---|---|---|---|---|---|"
mismatches=0
for candidate in "${candidates[@]}"; do
  name=$(basename "$candidate" .md)
  task=$(echo "$name" | sed -E 's/^L([0-9])_0*([0-9]+).*/L\1\/\2/')
  # shellcheck disable=SC2086
  read -r local_status local_speedup < <(CUDA_VISIBLE_DEVICES=$gpu "$kwb" --worker "$worker" eval "$task" "$candidate" --json ${KWB_CHECK_ARGS:-} 2>/dev/null | status_of)
  # shellcheck disable=SC2086
  read -r ssh_status ssh_speedup < <("$kwb" --worker "$worker" eval "$task" "$candidate" --json --workers "ssh:kwbcheck:$gpu:worker=$worker" ${KWB_CHECK_ARGS:-} 2>"$dir/ssh-eval.err" | tee "$dir/ssh-eval.json" | status_of)
  [[ $local_status == "$ssh_status" ]] || mismatches=$((mismatches + 1))
  echo "| $name | $task | $local_status | $ssh_status | $local_speedup | $ssh_speedup |"
done
echo
echo "$((${#candidates[@]} - mismatches)) of ${#candidates[@]} verdicts agree (machine $(uname -n), $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo ?))"
((mismatches == 0))
