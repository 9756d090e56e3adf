#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in build/fuzz (clang, Release with -g, coverage +
# ASan + UBSan) and runs each for SECONDS_PER_TARGET (default 450: 30 minutes for the four), one
# after the other with one job each, then writes bench/results/<date>-fuzz-cpu.md.
#
#   bench/fuzz/run-fuzzers.sh [SECONDS_PER_TARGET]
#
# Environment: FUZZ_TARGETS (space-separated subset), JOBS (build parallelism, default nproc),
# FUZZ_BUILD (build folder, default build/fuzz), FUZZ_RESULT (summary path).
# Scratch corpora and crash artifacts go to $FUZZ_BUILD/run/<target>/ (not committed). Runs go
# on past crashes (-fork=1 with -ignore_crashes etc.), so a target fuzzes for its whole time even
# while the code still has a bug; each crash, timeout or OOM input is kept as an artifact. Copy
# the ones worth a test to tests/fuzz/crashes/<target>/ (docs/building.md, Fuzzing).
set -euo pipefail

seconds=${1:-450}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${FUZZ_BUILD:-$root/build/fuzz}
targets=${FUZZ_TARGETS:-fuzz_answer_parser fuzz_worker_request fuzz_torchscript fuzz_templates}
jobs=${JOBS:-$(nproc)}
date=$(date +%Y-%m-%d)
result=${FUZZ_RESULT:-$root/bench/results/$date-fuzz-cpu.md}

command -v clang++ >/dev/null || { echo "run-fuzzers.sh: clang++ not found (docs/building.md, Fuzzing)" >&2; exit 2; }
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g \
  -DKWB_BUILD_FUZZERS=ON -DKWB_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null

# Targets this machine can build (no CUDA toolkit or libtorch: the worker ones are absent).
available=$(ninja -C "$build" -t targets all | sed -n 's/^\(fuzz_[a-z_]*\): phony$/\1/p')
built=()
for t in $targets; do
  if grep -qx "$t" <<<"$available"; then built+=("$t"); else echo "run-fuzzers.sh: $t is not configured here, skipped" >&2; fi
done
[ ${#built[@]} -gt 0 ] || { echo "run-fuzzers.sh: nothing to run" >&2; exit 2; }
cmake --build "$build" --target "${built[@]}" -j "$jobs"

rows=()
for t in "${built[@]}"; do
  run=$build/run/$t
  mkdir -p "$run/corpus" "$run/artifacts"
  log=$run/fuzz.log
  echo "== $t: ${seconds}s" >&2
  dict=()
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
  start=$(date +%s)
  # Leaks are not crashes: libtorch and Qt keep caches for the process's life.
  (cd "$run" && "$build/tests/fuzz/$t" -max_len=1048576 -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 \
      -print_final_stats=1 -detect_leaks=0 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      "${dict[@]}" -artifact_prefix="$run/artifacts/" "$run/corpus" "$root/tests/fuzz/corpus/$t") >"$log" 2>&1 || true
  elapsed=$(( $(date +%s) - start ))
  # fork mode's status lines: "#EXECS: cov: C ft: F corp: N exec/s: R oom/timeout/crash: a/b/c time: Ts ..."
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)
  execs=$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<<"$last")
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(find "$run/corpus" -type f | wc -l)
  corpkb=$(( $(du -sk "$run/corpus" | cut -f1) ))
  rate=$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))
  # per kind (crash-, timeout-, oom-, leak-, slow-unit-), with the first three names
  kinds=$(cd "$run/artifacts" && ls -1 | sed 's/-[0-9a-f]*$//' | sort | uniq -c | awk '{s = s (NR > 1 ? ", " : "") $1 " " $2} END {print s}')
  first=$(cd "$run/artifacts" && ls -1 | head -3 | tr '\n' ' ')
  nart=$(ls -1 "$run/artifacts" | wc -l)
  more=$(( nart > 3 ? nart - 3 : 0 ))
  rows+=("| \`$t\` | $elapsed | ${execs:-?} | $rate | ${cov:-?} | ${ft:-?} | $corp ($corpkb KiB) | ${kinds:-0}${first:+: $first}$( ((more)) && echo "and $more more" || true) |")
  echo "   execs ${execs:-?}, cov ${cov:-?}, ft ${ft:-?}, corpus $corp, artifacts $nart (log: $log)" >&2
done

commit=$(git -C "$root" rev-parse --short HEAD)
git -C "$root" diff --quiet HEAD -- src tests || commit="$commit (with uncommitted changes)"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
mkdir -p "$(dirname "$result")"
{
  echo "# Fuzzing on the CPU, $date"
  echo
  echo "- machine: $(uname -n), $cpu, $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- commit: $commit"
  echo "- compiler: $(clang++ --version | head -1)"
  echo "- build: $build, Release -g, -fsanitize=fuzzer-no-link,$(sed -n 's/^KWB_FUZZ_SANITIZERS:STRING=//p' "$build/CMakeCache.txt")"
  echo "- flags: -max_len=1048576 -max_total_time=$seconds -rss_limit_mb=4096 -timeout=30 -detect_leaks=0 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1, -dict=tests/fuzz/<target>.dict"
  echo "- command: bench/fuzz/run-fuzzers.sh $seconds"
  echo
  echo "| target | seconds | execs | execs/s | cov | ft | corpus | crashes, timeouts, OOMs (artifacts) |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "cov: code edges reached; ft: libFuzzer's features (edges with hit counts, comparisons)."
  echo "Artifacts are in $build/run/<target>/artifacts/ on the machine that ran this."
} >"$result"
echo "summary: $result" >&2
