#!/usr/bin/env bash
# One call on the GPU machine (../shared/device/README.md), the shape every session's calls take:
# the committed tree (build-carry/src.tar.gz, `git archive --format=tar.gz -o build-carry/src.tar.gz
# HEAD` here) unpacked once into a work tree in /tmp, which stays with its build while the machine
# stays warm; the worker built there once; then scripts/device-session.sh's steps in order, each
# started only while at least STEP_MIN_S seconds of the call's LIMIT are left and cut at the
# limit; everything the steps wrote packed into $OUT/all.tgz after each step (only a few files
# come back from a call, and a call cut by its limit still returns what finished).
#
#   run: KWB_COMMIT=$(git rev-parse --short HEAD) LIMIT=560 STUDY_RUNS=zero-shot bash scripts/device-call.sh study-recorded
#   carry: [".deps", "build-carry"] (.deps from ../shared/device/unpack-header-deps.sh libtomlplusplus-dev doctest-dev)
#
# Each step's own settings are device-session.sh's environment variables, set on the command line.
# Writes $OUT/r/times.txt (seconds since the call began, per step) and $OUT/r/<step>.txt.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
work=${KWB_WORK:-/tmp/kwb-device-work}
: "${OUT:?the run tool sets OUT}"
results=$OUT/r
mkdir -p "$results"
start=$(date +%s)
limit=${LIMIT:-560}
left() { echo $((limit - ($(date +%s) - start))); }
pack() { tar -C "$results" -czf "$OUT/all.tgz" .; }
mark() { echo "$1 $(($(date +%s) - start)) s" >> "$results/times.txt"; }

if [[ ! -d $work ]]; then
  [[ -f build-carry/src.tar.gz ]] || { echo "device-call: build-carry/src.tar.gz is missing (git archive of the commit)"; exit 2; }
  mkdir -p "$work" && tar xzf build-carry/src.tar.gz -C "$work" && ln -s "$repo/.deps" "$work/.deps" &&
    ln -s "$repo/build-carry" "$work/build-carry"
fi
cd "$work"
if [[ ! -x build-gpu/bin/kwb-worker ]]; then
  OUT=$results scripts/device-session.sh build > "$results/build.txt" 2>&1
fi
mark build
pack
[[ -x build-gpu/bin/kwb-worker ]] || { echo "device-call: the build failed (r/build.txt, r/build.log)"; tail -20 "$results/build.log"; exit 1; }

for step in "$@"; do
  remaining=$(left)
  if ((remaining < ${STEP_MIN_S:-30})); then
    mark "skipped:$step"
    continue
  fi
  OUT=$results timeout "$remaining" scripts/device-session.sh "$step" > "$results/$step.txt" 2>&1
  echo "rc=$?" >> "$results/$step.txt"
  mark "$step"
  pack
  tail -3 "$results/$step.txt"
done
cat "$results/times.txt"
