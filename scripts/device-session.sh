#!/usr/bin/env bash
# What we run on the GPU machine (../shared/device/README.md), one step per argument, logs and
# results under $OUT (default ./out). Needs .deps (`../shared/device/unpack-header-deps.sh libtomlplusplus-dev
# doctest-dev`: with nlohmann-json alone the build stops at toml++) and, for the steps that
# run kwb, build-carry/qt-bundle.tar.xz (scripts/device-bundle.sh) carried along.
#   KWB_COMMIT=<commit> scripts/device-session.sh build gpu-tests gpu-traffic eval-timeout bench measure study study-kernelbench kb-bench record pack
# kb-only-crash (a diagnosis, session 20): run_reference of a KernelBench-only task in several request orders.
# split-check (issue 35): AGREEMENT_GENS's answers built whole and split, outputs compared (bench/kb_split_check.py).
# kb-kernel-errors (issue 35): a kernel's compile error through the broker, KB_BASE_DIR's beside this tree's.
# cold-zero-shot (issue 35): a cold zero-shot run on recorded real answers, built whole and split (bench/kb_cold_table.py).
# header-phases (issue 35): g++'s phases with torch's header precompiled, -Wfatal-errors (bench/header_phases.py).
# remote-workers also needs build-carry/ssh-bundle.tar.xz (scripts/ssh-bundle.sh).
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
root=$PWD
bundle=/tmp/kwb-bundle
worker=$root/build-gpu/bin/kwb-worker
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
# A results file's head: "# TITLE", the GPU, the commit, the date. KWB_COMMIT names the commit of
# the tree that travelled (this machine's git can be stale: it said 998d884 for later trees).
results_head() {
  echo "# $1"
  echo
  echo "- machine: $(uname -n), $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1), $(nproc) cores"
  if [[ -n ${KWB_COMMIT:-} ]]; then echo "- commit: $KWB_COMMIT"
  else echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?') (this machine's git; pass KWB_COMMIT, it can be stale)"; fi
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
}

# The machine's memory, load and our processes every 5 s ($OUT/machine-watch.txt), and a guard: under
# 5 % of the memory available (at least 4 GiB) every kwb process of ours is killed and the guard says
# so. Two calls of the study step (sessions 26 and 27) ended with the machine no longer answering
# and nothing returned; if our processes take the machine, this leaves the evidence and the machine.
machine_watch() {
  local total floor avail
  total=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  floor=$(( total / 20 > 4194304 ? total / 20 : 4194304 ))
  while sleep 5; do
    avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
    echo "$(date -u +%H:%M:%S) avail_MiB=$((avail / 1024)) load=$(cut -d' ' -f1 /proc/loadavg) procs=$(ls /proc | grep -c '^[0-9]') kwb=$(pgrep -c -f kwb-worker) cc1plus=$(pgrep -c cc1plus) cicc=$(pgrep -c cicc) python=$(pgrep -c python3)"
    if (( avail < floor )); then
      echo "$(date -u +%H:%M:%S) GUARD: MemAvailable $((avail / 1024)) MiB under $((floor / 1024)) MiB: killing kwb, kwb-worker"
      ps -eo pid,rss,comm --sort=-rss | head -15
      pkill -9 -f kwb-worker; pkill -9 -x kwb
    fi
  done >> "$OUT/machine-watch.txt" 2>&1
}
if [[ ${KWB_MACHINE_WATCH:-1} == 1 ]]; then
  machine_watch &
  watch_pid=$!
  trap 'kill $watch_pid 2>/dev/null' EXIT
fi

need_bundle() {
  [[ -x $bundle/run ]] || tar xf build-carry/qt-bundle.tar.xz -C /tmp
  # bubblewrap for the OS sandbox travels in the bundle where the machine lacks it: without it on
  # PATH every step's worker runs unsandboxed (kwb warns so).
  [[ :$PATH: == *":$bundle/bin:"* ]] || export PATH=$bundle/bin:$PATH
}

for step in "$@"; do
  case $step in
  build)
    log build
    TP=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWB_BUILD_GUI=OFF \
      -DCMAKE_PREFIX_PATH="$root/.deps/root/usr;$TP" > "$OUT/build.log" 2>&1 &&
      cmake --build build-gpu -j16 ${KWB_TARGETS:+--target $KWB_TARGETS} >> "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
    git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null || true
    ;;
  gpu-tests)
    # The KernelBench-format fixtures' extensions are built first, all at once (a minute, where the
    # test's own serial cold builds take one each); KWB_GPU_ONLY picks fixtures (paths' substrings).
    log gpu-tests
    export KWB_EXTENSION_CACHE=${KWB_EXTENSION_CACHE:-$root/build-gpu/gpu-tests-extensions}
    # Skipped where neither KWB_GPU_ONLY nor GPU_TESTS_PARTS names them (session 26 spent 78 s of a
    # budget-cut call prebuilding for an adversarial-only part).
    only=${GPU_TESTS_PARTS:-${KWB_GPU_ONLY:-}}
    if [[ -z $only || $only == *kernelbench* ]]; then
      timeout 300 python3 scripts/kb-prebuild.py "$worker" tasks tests/fixtures/candidates/kernelbench/*.md \
        > "$OUT/gpu-tests-prebuild.txt" 2>&1; tail -1 "$OUT/gpu-tests-prebuild.txt"
    fi
    if [[ -n ${GPU_TESTS_PARTS:-} ]]; then
      # GPU_TESTS_PARTS="adversarial/;reference/,failing/,kernelbench/": one test process per part
      # (a KWB_GPU_ONLY list each), side by side under one quiet lock: their compiles overlap, their
      # GPU stages take turns and every timing has the GPU to itself (as the product's queue).
      lock=/tmp/kwb-gpu-tests-lock; rm -f $lock $lock.intent $lock.turn
      i=0; pids=()
      IFS=';' read -ra parts <<< "$GPU_TESTS_PARTS"
      for part in "${parts[@]}"; do
        i=$((i + 1))
        KWB_GPU_ONLY=$part KWB_GPU_QUIET_LOCK=$lock KWB_GPU_TIMING_TRIALS=${KWB_GPU_TIMING_TRIALS:-5} \
          KWB_GPU_RESULTS=$OUT/gpu-candidates-$i.json timeout ${GPU_TESTS_TIMEOUT:-540} ./build-gpu/bin/tst_gpu_candidates \
          > "$OUT/gpu-tests-$i.txt" 2>&1 &
        pids+=($!)
      done
      i=0
      for p in "${pids[@]}"; do i=$((i + 1)); wait "$p"; echo "rc=$?" >> "$OUT/gpu-tests-$i.txt"; done
      for f in "$OUT"/gpu-tests-[0-9]*.txt; do echo "== $f"; cat "$f"; done > "$OUT/gpu-tests.txt"
      grep -E '^== |passed, .* failed|^rc=' "$OUT/gpu-tests.txt"
    else
      KWB_GPU_TIMING_TRIALS=${KWB_GPU_TIMING_TRIALS:-5} KWB_GPU_RESULTS=$OUT/gpu-candidates.json \
        timeout ${GPU_TESTS_TIMEOUT:-540} ./build-gpu/bin/tst_gpu_candidates > "$OUT/gpu-tests.txt" 2>&1
      echo "rc=$?" >> "$OUT/gpu-tests.txt"; tail -5 "$OUT/gpu-tests.txt"
    fi
    ;;
  gpu-traffic)
    # Issue 15: measured HBM traffic (CUPTI DRAM counters) of reference candidates against analyze.
    log gpu-traffic
    timeout 540 ./build-gpu/bin/tst_gpu_traffic > "$OUT/gpu-traffic.txt" 2>&1
    echo "rc=$?" >> "$OUT/gpu-traffic.txt"; cat "$OUT/gpu-traffic.txt"
    ;;
  eval-timeout)
    log eval-timeout
    need_bundle
    c=tests/fixtures/candidates
    { echo "# kwb eval of an endless kernel with --timeout 10, then a reference candidate"
      s=$(date +%s.%N); $bundle/run kwb --worker "$worker" eval L2/6 $c/adversarial/endless_kernel.md --timeout 10; echo "exit $?"
      e=$(date +%s.%N); echo "wall_s $(python3 -c "print(round($e - $s, 2))")"
      s=$(date +%s.%N); $bundle/run kwb --worker "$worker" eval L2/6 $c/reference/L2_06.md --trials 20; echo "exit $?"
      e=$(date +%s.%N); echo "wall_s $(python3 -c "print(round($e - $s, 2))")"
    } > "$OUT/eval-timeout.txt" 2>&1
    cat "$OUT/eval-timeout.txt" | grep -E "status|wall_s|exit"
    ;;
  bench)
    log bench
    need_bundle
    timeout 540 $bundle/run kwb-bench-supervisor --worker "$worker" --candidates tests/fixtures/candidates \
      --tasks L1,L2 --timing-trials 10 --json "$OUT/supervisor.json" > "$OUT/supervisor.md" 2> "$OUT/supervisor.log"
    cat "$OUT/supervisor.md"
    ;;
  study)
    # Every regime over the 30 tasks against the fixture server (tests/tools/fixturellmserver.cpp).
    log study
    need_bundle
    # STUDY_DB: a path the machine keeps between warm calls (e.g. under build-gpu/), so a study split
    # over several calls continues one database; otherwise a carried build-carry/study.db.
    db=${STUDY_DB:-$OUT/study.db}
    [[ -f build-carry/study.db && ! -f $db ]] && cp build-carry/study.db "$db"
    for regime in ${STUDY_REGIMES:-zero-shot profiling-guided iterative agent pilot-v1}; do
      $bundle/run kwb-fixture-llm --candidates tests/fixtures/candidates --log "$OUT/llm-$regime.log" > /tmp/llm.url &
      pid=$!; sleep 1
      log "study $regime"
      timeout ${STUDY_TIMEOUT:-300} $bundle/run kwb --worker "$worker" run --regime "$regime" \
        --tasks L1:1-10,L2:1-10,L3:1-10 --endpoint "$(cat /tmp/llm.url)" --model fixture-model --db "$db" \
        --prompts "$root/prompts" --timing-trials ${STUDY_TRIALS:-10} --isolation ${STUDY_ISOLATION:-reuse} \
        ${STUDY_EXTRA:-} > "$OUT/study-$regime.txt" 2>&1
      echo "rc=$?" >> "$OUT/study-$regime.txt"; tail -3 "$OUT/study-$regime.txt"
      kill $pid; wait $pid 2>/dev/null
    done
    $bundle/run kwb report --db "$db" > "$OUT/study-report.md" 2>&1
    $bundle/run kwb report --db "$db" --format json > "$OUT/study-report.json" 2>&1
    [[ $db == "$OUT/study.db" ]] || cp "$db" "$OUT/study.db"
    ;;
  study-kernelbench)
    # Every regime over the 30 tasks in KernelBench's answer format (issue 14): the fixture server
    # answers with ModelNew modules (twins, torch-only ModelNew, the study's load_inline mistakes).
    log study-kernelbench
    need_bundle
    db=$OUT/study-kernelbench.db
    for regime in ${STUDY_REGIMES:-zero-shot profiling-guided iterative agent pilot-v1}; do
      $bundle/run kwb-fixture-llm --candidates tests/fixtures/candidates --answer-format kernelbench \
        --tasks "$root/tasks" --log "$OUT/llm-kb-$regime.log" > /tmp/llm.url &
      pid=$!; sleep 1
      log "study-kernelbench $regime"
      timeout ${STUDY_TIMEOUT:-540} $bundle/run kwb --worker "$worker" run --regime "$regime" --answer-format kernelbench \
        --tasks L1:1-10,L2:1-10,L3:1-10 --endpoint "$(cat /tmp/llm.url)" --model fixture-model --db "$db" \
        --prompts "$root/prompts-kernelbench" --timing-trials ${STUDY_TRIALS:-10} --isolation ${STUDY_ISOLATION:-reuse} \
        ${STUDY_EXTRA:-} > "$OUT/study-kb-$regime.txt" 2>&1
      echo "rc=$?" >> "$OUT/study-kb-$regime.txt"; tail -3 "$OUT/study-kb-$regime.txt"
      kill $pid; wait $pid 2>/dev/null
    done
    $bundle/run kwb report --db "$db" > "$OUT/study-kernelbench-report.md" 2>&1
    ;;
  study-recorded)
    # Issue 36 item 7: the study preset (KernelBench's format, prompts-kernelbench/) over the 30
    # tasks against real model text: kwb-fixture-llm --recorded serves a licensed folder of recorded
    # answers (default packaging/examples/recorded-qwen3-coder-480b: one answer per task, so every
    # sample and turn of a task gets the same text and builds once; the cache makes the later
    # regimes cheap). The five regimes, the agent's best-of-n sweep and its four ablations, into one
    # database (STUDY_DB keeps it between warm calls; a run cut by STUDY_TIMEOUT is listed as such
    # and `kwb run --resume` continues it), then the report beside the recorder's verdicts
    # (kwb import of the same folder). Every run evaluates a task's identical answers once
    # (--evaluate-identical-once), and every run after the first takes the earlier runs' verdicts of
    # the same text (--identical-across-runs; STUDY_EVAL_ARGS= turns both off): the recorded server
    # repeats one text per task, which would otherwise be measured again for every sample, turn and
    # run (about 420 evaluations of 30 texts).
    # A run left `running` in STUDY_DB by an earlier call is resumed first (STUDY_RESUME=0: not);
    # STUDY_RUNS= (empty) resumes only.
    log study-recorded
    need_bundle
    # After each run: the database checkpointed and everything of the step in one archive, so a call
    # cut by its limit (only a few files come back) still returns what ran (session 20 lost it).
    # xz, and the database only there: session 28's 12 runs made a 148 MB database (1.25 MB in xz),
    # too large for a call to return as a plain or gzip'd file.
    keep_study() {
      python3 -c "import sqlite3,sys;c=sqlite3.connect(sys.argv[1]);c.execute('PRAGMA wal_checkpoint(TRUNCATE)');c.close()" "$db" 2>/dev/null
      XZ_OPT="-T0 -3" tar -cJf "$OUT/.study-recorded.txz" -C "$(dirname "$db")" "$(basename "$db")" -C "$OUT" \
        $(cd "$OUT" && ls study-recorded-*.txt study-recorded-report.md llm-recorded.* 2>/dev/null) 2>/dev/null &&
        mv "$OUT/.study-recorded.txz" "$OUT/study-recorded.txz"
    }
    recorded=${RECORDED_DIR:-$root/packaging/examples/recorded-qwen3-coder-480b}
    db=${STUDY_DB:-$OUT/study-recorded.db}
    # STUDY_SEED: a database an earlier call returned, xz'd (as committed under bench/results) or
    # this step's study-recorded.txz, carried into a fresh machine's STUDY_DB: its runs go on
    # there, and runs of the same build and GPU lend their verdicts (--identical-across-runs).
    if [[ -n ${STUDY_SEED:-} && ! -f $db ]]; then
      if [[ $STUDY_SEED == *.txz ]]; then
        tar -xJOf "$STUDY_SEED" --wildcards '*.db' > "$db"
      else
        xz -dc "$STUDY_SEED" > "$db"
      fi || { echo "study-recorded: cannot unpack $STUDY_SEED"; rm -f "$db"; }
    fi
    export KWB_EXTENSION_CACHE=${KWB_EXTENSION_CACHE:-$root/build-gpu/study-recorded-extensions}
    # One port for every call (STUDY_LLM_PORT): runs pair (ablations with their baseline, the report's
    # comparisons) only where their endpoints are the same URL, and session 28's runs, each with a
    # server of its own on a free port, had no ablation baseline.
    $bundle/run kwb-fixture-llm --recorded "$recorded" --answer-format kernelbench --tasks "$root/tasks" \
      --port ${STUDY_LLM_PORT:-18431} --log "$OUT/llm-recorded.log" > /tmp/llm-recorded.url 2> "$OUT/llm-recorded.err" &
    pid=$!; sleep 1
    # Runs an earlier call cut (STUDY_TIMEOUT, the call's own limit) go on first: every generated
    # run of the database still `running` is resumed against this call's server (STUDY_RESUME=0: not).
    if [[ ${STUDY_RESUME:-1} == 1 && -f $db ]]; then
      for id in $(python3 -c "import sqlite3,sys;print(' '.join(str(r[0]) for r in sqlite3.connect(sys.argv[1]).execute(\"select id from runs where status='running' and regime!='import' order by id\")))" "$db"); do
        log "study-recorded resume $id"
        timeout ${STUDY_TIMEOUT:-300} $bundle/run kwb --worker "$worker" run --resume "$id" --db "$db" \
          --endpoint "$(head -1 /tmp/llm-recorded.url)" --compile-workers ${STUDY_COMPILE_WORKERS:-12} \
          > "$OUT/study-recorded-resume-$id.txt" 2>&1
        echo "rc=$?" >> "$OUT/study-recorded-resume-$id.txt"; tail -2 "$OUT/study-recorded-resume-$id.txt"
        keep_study
      done
    fi
    for r in ${STUDY_RUNS-zero-shot profiling-guided iterative agent pilot-v1 sweep ablate:best-of-n ablate:feedback-analyzer ablate:monotone ablate:competence}; do
      case $r in
        sweep) cmd=(sweep --regime agent --n ${SWEEP_NS:-1,2,4,8}) ;;
        ablate:*) cmd=(run --regime agent --ablate "${r#ablate:}") ;;
        *) cmd=(run --regime "$r") ;;
      esac
      log "study-recorded $r"
      timeout ${STUDY_TIMEOUT:-300} $bundle/run kwb --worker "$worker" "${cmd[@]}" --answer-format kernelbench \
        --tasks study --endpoint "$(head -1 /tmp/llm-recorded.url)" --model "${RECORDED_MODEL:-recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8}" --db "$db" \
        --compile-workers ${STUDY_COMPILE_WORKERS:-12} --timing-trials ${STUDY_TRIALS:-10} \
        --isolation ${STUDY_ISOLATION:-reuse} ${STUDY_EVAL_ARGS---identical-across-runs} > "$OUT/study-recorded-${r/:/-}.txt" 2>&1
      echo "rc=$?" >> "$OUT/study-recorded-${r/:/-}.txt"; tail -3 "$OUT/study-recorded-${r/:/-}.txt"
      keep_study
    done
    kill $pid; wait $pid 2>/dev/null
    # STUDY_IMPORT_TIMEOUT=0: no import (a later call's runs into the same database already have it).
    if [[ ${STUDY_IMPORT_TIMEOUT:-150} != 0 ]]; then
      timeout ${STUDY_IMPORT_TIMEOUT:-150} $bundle/run kwb --worker "$worker" import kernelbench "$recorded" --db "$db" \
        --compile-workers 12 > "$OUT/study-recorded-import.txt" 2>&1
      echo "rc=$?" >> "$OUT/study-recorded-import.txt"
    fi
    $bundle/run kwb report --db "$db" > "$OUT/study-recorded-report.md" 2>&1
    keep_study
    [[ $db == "$OUT/study-recorded.db" ]] && rm -f "$db" # kept in study-recorded.txz
    head -40 "$OUT/study-recorded-report.md"
    ;;
  cold-zero-shot)
    # Issue 35 items 2-3: a cold KernelBench-format zero-shot run over the 30 tasks against real
    # model text (kwb-fixture-llm --recorded, as study-recorded), once per COLD_MODES entry, each
    # with an empty extension cache (the torch header made during the run, as a new user's first
    # run makes it) and a database of its own: "whole" builds every .cu as load_inline does
    # (KWB_CUDA_SPLIT=0), "apart" splits without joining main.cpp with the host unit
    # (KWB_CUDA_SPLIT=apart), "split" is this tree's default. Side by side in one call; the table
    # (bench/kb_cold_table.py) has candidates/min and where the build time went. Modes alternate
    # as listed; put a throwaway first to warm the page cache (torch's headers) for both. A mode
    # "M+header" (after M) starts from M's cache with every extension removed and only the torch
    # headers M's run made kept: every answer still built cold, as a researcher's second run on the
    # machine builds new answers, without the header's one-time half minute. A mode "M@N" runs M with
    # N evaluations at once on the GPU (--evaluations-per-gpu N; its cache as M's would be); M alone runs the
    # product's default for the format (defaultEvaluationsPerGpu).
    # A mode "M+cached" (after M) runs on M's cache as M left it: no build, the evaluations' own rate.
    # COLD_TASKS: other tasks than the study's 30 (`kwb run --tasks`, e.g. L3 for its ten).
    # A mode "nopause:M" runs M with --no-pause-generation-while-timing: the fixture server is on
    # this host, so a run pauses its model requests while its jobs hold the GPU by default, as for
    # a local model server on the GPU (runlaunch.h); the fixture's replies need no GPU.
    # A mode "nonice:M" runs M with KWB_BEFORE_HEADER_NICE=0: builds without torch's header while
    # the broker makes it run at its niceness, as before session 46 (extension_cache.py).
    # A mode "noprep:M" runs M with KWB_BUILD_PREPARER=0: no preparer, each builder imports torch
    # and plans its own build, as before session 48 (extension_cache.py).
    # A mode "base:M" runs M with the kwb of COLD_BASE_BUNDLE (a qt-bundle.tar.xz made from another
    # commit, scripts/device-bundle.sh) beside this tree's worker: a change of kwb's own (the run's
    # scheduling) side by side with the kwb before it.
    log cold-zero-shot
    need_bundle
    base_bundle=
    if [[ -n ${COLD_BASE_BUNDLE:-} ]]; then
      base_bundle=/tmp/kwb-base-bundle
      mkdir -p $base_bundle && tar xf "$COLD_BASE_BUNDLE" -C $base_bundle --strip-components=1
    fi
    recorded=${RECORDED_DIR:-$root/packaging/examples/recorded-qwen3-coder-480b}
    $bundle/run kwb-fixture-llm --recorded "$recorded" --answer-format kernelbench --tasks "$root/tasks" \
      --port ${STUDY_LLM_PORT:-18431} --log "$OUT/llm-cold.log" > /tmp/llm-cold.url 2> "$OUT/llm-cold.err" &
    pid=$!; sleep 1
    rows=(); declare -A caches=()
    for mode in ${COLD_MODES:-whole split}; do
      file=${mode//:/-} # a file name without ':'
      db=$OUT/cold-$file.db; rm -f "$db"
      # Without "@N" the product's default for the format (defaultEvaluationsPerGpu: 2 since session 44).
      evals=(); base=$mode; kwb_bundle=$bundle; extra=(); nice_env=()
      while :; do
        case $base in
          base:*) kwb_bundle=${base_bundle:?"cold-zero-shot: $mode needs COLD_BASE_BUNDLE"}; base=${base#base:} ;;
          nopause:*) extra+=(--no-pause-generation-while-timing); base=${base#nopause:} ;;
          nonice:*) nice_env+=(KWB_BEFORE_HEADER_NICE=0); base=${base#nonice:} ;;
          noprep:*) nice_env+=(KWB_BUILD_PREPARER=0); base=${base#noprep:} ;;
          *) break ;;
        esac
      done
      [[ $base == *@* ]] && { evals=(--evaluations-per-gpu "${base##*@}"); base=${base%@*}; }
      key=${mode%@*} # the cache's: "base:split+cached" runs on base:split's
      if [[ $base == *+header ]]; then
        cache=${caches[${key%+header}]:?"cold-zero-shot: $mode needs ${key%+header} before it"}
        find "$cache" -mindepth 1 -maxdepth 1 ! -name 'kwb_torch_pch-*' -exec rm -rf {} +
        echo "$mode: starts with $(ls "$cache" | tr '\n' ' ')" >> "$OUT/cold-zero-shot.log"
      elif [[ $base == *+cached ]]; then
        cache=${caches[${key%+cached}]:?"cold-zero-shot: $mode needs ${key%+cached} before it"}
        echo "$mode: starts with $(ls "$cache" | wc -l) entries of ${key%+cached}'s cache" >> "$OUT/cold-zero-shot.log"
      else
        cache=$(mktemp -d /tmp/kwb-cold-cache-XXXX)
      fi
      caches[$key]=$cache
      split=1; [[ $base == whole* ]] && split=0; [[ $base == apart* ]] && split=apart
      log "cold-zero-shot $mode"
      s=$(date +%s.%N)
      env "${nice_env[@]}" KWB_CUDA_SPLIT=$split KWB_EXTENSION_CACHE=$cache timeout -s INT ${COLD_TIMEOUT:-400} $kwb_bundle/run kwb --worker "$worker" \
        run --regime zero-shot --answer-format kernelbench --tasks ${COLD_TASKS:-study} --endpoint "$(head -1 /tmp/llm-cold.url)" \
        --model "${RECORDED_MODEL:-recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8}" --db "$db" \
        --compile-workers ${COLD_COMPILE_WORKERS:-12} --timing-trials ${COLD_TRIALS:-10} --isolation ${COLD_ISOLATION:-reuse} \
        "${evals[@]}" "${extra[@]}" \
        --json > "$OUT/cold-$file.json" 2> "$OUT/cold-$file.txt"
      echo "rc=$?" >> "$OUT/cold-$file.txt"
      e=$(date +%s.%N)
      rows+=("$mode=$db=$(python3 -c "print(float('$e') - float('$s'))")")
    done
    rm -rf "${caches[@]}"
    kill $pid; wait $pid 2>/dev/null
    { results_head "A cold KernelBench-format zero-shot run, built whole and split (issue 35)"
      echo "- answers: $(basename "$recorded") (kwb-fixture-llm --recorded), ${COLD_COMPILE_WORKERS:-12} compile workers, isolation ${COLD_ISOLATION:-reuse}"
      echo
      python3 bench/kb_cold_table.py "${rows[@]}"
    } > "$OUT/cold-zero-shot.md" 2>> "$OUT/cold-zero-shot.log"
    for mode in ${COLD_MODES:-whole split}; do xz -T0 -3 -f "$OUT/cold-${mode//:/-}.db"; done
    cat "$OUT/cold-zero-shot.md"
    ;;
  kb-bench)
    # Issue 14's benchmark, one Markdown file ($OUT/kb-bench.md, for bench/results/). KB_PARTS picks
    # "twins" and/or "run" (each fits one call; run them as two calls):
    #   twins: `kwb eval` of each KernelBench-format twin alone, cold (an empty extension cache: the
    #          worker builds it with load_inline, as KernelBench's harness does) for KB_COLD_TWINS,
    #          then cached (the second pass) for every twin;
    #   run:   a zero-shot `kwb run --answer-format kernelbench` over the 30 tasks against the fixture
    #          server with KB_WORKERS compile workers (default 12), cold then cached (a new run each;
    #          candidates/min from the run's wall time).
    # KB_TASKS narrows the run's tasks (default the 30). The caches live under KB_CACHE (default build-gpu/kb-bench-cache, kept between warm calls, or
    # carried): a cold run cut by KB_TIMEOUT resumes with KB_RESUME_RUN=<run id> and the same cache.
    log kb-bench
    need_bundle
    md=$OUT/kb-bench.md
    cache=${KB_CACHE:-$root/build-gpu/kb-bench-cache}
    parts=" ${KB_PARTS:-twins run} "
    twins=tests/fixtures/candidates/kernelbench
    [[ -f $md ]] || { results_head "KernelBench-format candidates: compile pool and extension cache (issue 14)"
      echo "- KernelBench's own harness on this machine (issue 14, 2026-12-01): 60.2 s (L2/1) and 98.3 s (L1/5) per candidate"
    } > "$md"
    task_of() { local b; b=$(basename "$1" .md); echo "L${b:1:1}/$((10#${b:3:2}))"; }
    [[ $parts == *" twins "* ]] && {
      echo
      echo "## Twins, one \`kwb eval\` each (build, checks, ${KB_TRIALS:-10} timing trials)"
      echo
      echo "| twin | task | pass | wall s | status | speed-up |"
      echo "|---|---|---|---:|---|---:|"
      rm -rf "$cache/twins"; mkdir -p "$cache/twins"; tc=
      for pass in cold cached; do
        if [[ $pass == cold ]]; then list=${KB_COLD_TWINS:-L2_01 L1_05}; else list=$(cd $twins && ls L?_??*.md | sed 's/\.md$//'); fi
        # The cached pass needs every twin built: all are built at once first (untimed; the cold
        # ones are there already), by compile requests to workers of their own. KB_TWINS_CACHE names
        # a cache already holding them (e.g. the gpu-tests step's prebuild) for that pass.
        [[ $pass == cached ]] && tc=${KB_TWINS_CACHE:-$cache/twins}
        [[ $pass == cached ]] && KWB_EXTENSION_CACHE=$tc timeout 300 python3 scripts/kb-prebuild.py \
          "$worker" tasks $(for t in $list; do echo "$twins/$t.md"; done) >> "$OUT/kb-bench.log" 2>&1
        for t in $list; do
          s=$(date +%s.%N)
          KWB_EXTENSION_CACHE=${tc:-$cache/twins} timeout 300 $bundle/run kwb --worker "$worker" eval "$(task_of $t.md)" \
            "$twins/$t.md" --answer-format kernelbench --trials ${KB_TRIALS:-10} --json > "$OUT/kb-twin-$t-$pass.json" 2>> "$OUT/kb-bench.log"
          e=$(date +%s.%N)
          python3 - "$OUT/kb-twin-$t-$pass.json" "$t" "$(task_of $t.md)" "$pass" "$s" "$e" <<'PY'
import json, sys
path, twin, task, p, s, e = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as x:
    d = {"status": f"no result ({x.__class__.__name__})"}
sp = d.get("speedup")
print(f"| {twin} | {task} | {p} | {float(e) - float(s):.1f} | {d.get('status')} | {'' if sp is None else f'{sp:.3f}'} |")
PY
        done
      done
    } >> "$md"
    [[ $parts == *" run "* ]] && {
      echo
      echo "## Zero-shot over ${KB_TASKS:-the 30 tasks}, fixture server, ${KB_WORKERS:-12} compile workers"
      echo
      echo "| pass | wall s | candidates | candidates/min | correct tasks | compiled tasks | complete | extensions built in a GPU evaluation / loaded built |"
      echo "|---|---:|---:|---:|---:|---:|---|---|"
      db=$cache/run.db
      if [[ -z ${KB_RESUME_RUN:-} ]]; then rm -rf "$cache/run" "$db"; fi
      mkdir -p "$cache/run"
      for pass in cold cached; do
        $bundle/run kwb-fixture-llm --candidates tests/fixtures/candidates --answer-format kernelbench \
          --tasks "$root/tasks" --log "$OUT/llm-kb-bench-$pass.log" > /tmp/llm.url &
        pid=$!; sleep 1
        if [[ $pass == cold && -n ${KB_RESUME_RUN:-} ]]; then what=(run --resume "$KB_RESUME_RUN");
        else what=(run --regime zero-shot --answer-format kernelbench --tasks "${KB_TASKS:-L1:1-10,L2:1-10,L3:1-10}" \
          --prompts "$root/prompts-kernelbench" --timing-trials ${KB_TRIALS:-10} --isolation reuse); fi
        s=$(date +%s.%N)
        KWB_EXTENSION_CACHE=$cache/run timeout -s INT ${KB_TIMEOUT:-300} $bundle/run kwb --worker "$worker" "${what[@]}" \
          --endpoint "$(cat /tmp/llm.url)" --model fixture-model --db "$db" --compile-workers ${KB_WORKERS:-12} \
          --json > "$OUT/kb-run-$pass.json" 2> "$OUT/kb-run-$pass.txt"
        rc=$?; e=$(date +%s.%N)
        kill $pid; wait $pid 2>/dev/null
        python3 - "$OUT/kb-run-$pass.json" "$pass${KB_RESUME_RUN:+ (resumed run $KB_RESUME_RUN)}" "$s" "$e" "$rc" "$db" <<'PY'
import json, sqlite3, sys
path, p, s, e, rc, db = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception:
    d = {}
wall = float(e) - float(s)
n = d.get("candidates_evaluated", 0)
# Where each evaluation's extensions came from: built by the GPU's own worker (the pool missed it)
# or loaded as the compile pool (or an earlier run) built them.
built = loaded = 0
try:
    rows = sqlite3.connect(db).execute(
        "SELECT e.result FROM evaluations e JOIN candidates c ON e.candidate_id = c.id JOIN responses r ON "
        "c.response_id = r.id JOIN prompts q ON r.prompt_id = q.id WHERE q.run_id = ?", (d.get("run", -1),))
    for (result,) in rows:
        for ext in (json.loads(result).get("compile") or {}).get("extensions") or []:
            loaded, built = (loaded + 1, built) if ext.get("cached") else (loaded, built + 1)
except Exception as x:
    built = loaded = f"? ({x.__class__.__name__})"
print(f"| {p} (run {d.get('run', '?')}, exit {rc}) | {wall:.1f} | {n} | {60.0 * n / wall:.1f} | {d.get('correct')} | "
      f"{d.get('compiled')} | {d.get('complete')} | {built} / {loaded} |")
PY
      done
      echo
      echo "A pass cut by its time limit (exit 130) resumes with KB_RESUME_RUN=<run> KB_PARTS=run and the same KB_CACHE."
      cp "$db" "$OUT/kb-bench-run.db" 2>/dev/null # the runs' verdicts come back too (kwb report --db)
    } >> "$md"
    cat "$md"
    ;;
  ablations|sweep)
    # The agent with one part switched off at a time, or its best-of-n sweep, into the same
    # database as `study` (fixture server restarted per run: its counters are its only state).
    need_bundle
    db=${STUDY_DB:-$OUT/study.db}
    [[ -f build-carry/study.db && ! -f $db ]] && cp build-carry/study.db "$db"
    if [[ $step == ablations ]]; then runs="best-of-n feedback-analyzer monotone competence"; else runs=sweep; fi
    for r in $runs; do
      # A sweep's runs ask with the same seeds: --stateless answers by what is asked, so one server
      # serves every n (and a sweep continued with SWEEP_ID=... in a later call).
      $bundle/run kwb-fixture-llm --candidates tests/fixtures/candidates --log "$OUT/llm-$r.log" \
        $([[ $r == sweep ]] && echo --stateless) > /tmp/llm.url &
      pid=$!; sleep 1
      log "$step $r"
      if [[ $r == sweep ]]; then cmd=(sweep --regime agent --n ${SWEEP_NS:-1,2,4,8} ${SWEEP_ID:+--sweep $SWEEP_ID});
      else cmd=(run --regime agent --ablate "$r"); fi
      timeout ${STUDY_TIMEOUT:-300} $bundle/run kwb --worker "$worker" "${cmd[@]}" \
        --tasks L1:1-10,L2:1-10,L3:1-10 --endpoint "$(cat /tmp/llm.url)" --model fixture-model --db "$db" \
        --prompts "$root/prompts" --timing-trials ${STUDY_TRIALS:-10} --isolation ${STUDY_ISOLATION:-reuse} \
        > "$OUT/$step-$r.txt" 2>&1
      echo "rc=$?" >> "$OUT/$step-$r.txt"; tail -8 "$OUT/$step-$r.txt"
      kill $pid; wait $pid 2>/dev/null
    done
    $bundle/run kwb report --db "$db" > "$OUT/study-report.md" 2>&1
    $bundle/run kwb report --db "$db" --format json > "$OUT/study-report.json" 2>&1
    [[ $db == "$OUT/study.db" ]] || cp "$db" "$OUT/study.db"
    ;;
  device)
    log device
    need_bundle
    $bundle/run kwb --worker "$worker" device --json > "$OUT/device.json" 2>&1
    $bundle/run kwb --worker "$worker" device > "$OUT/device.txt" 2>&1
    cat "$OUT/device.txt"
    ;;
  eval-stages)
    log eval-stages
    ./build-gpu/bin/kwb-bench-eval-stages --only "${STAGES_ONLY:-L1_}" --json "$OUT/eval-stages.json" > "$OUT/eval-stages.md" 2>&1
    tail -15 "$OUT/eval-stages.md"
    ;;
  measure)
    # Issue 13's benchmark, one Markdown file ($OUT/measure-bench.md, to commit under bench/results/):
    # the 32 reference candidates each in a fresh worker (stages against the GPU-time floor, the
    # adaptive timing's stop reason and interval), 10 re-measurements of L2/1, L1/9 and L3/9 (the
    # speed-up's CV), and candidates/min over L1+L2 through the queue (fresh+spare+ahead, reuse+ahead)
    # under the profile's own timing. MEASURE_PARTS picks some of "stages repeat queue" (one call's
    # time limit); each part appends to the file. The first queue mode of a process pays its own
    # start (~1.5 s more on its first job, H200): to compare modes, put a throwaway one first
    # (MEASURE_MODES=reuse+ahead,…) and alternate the compared ones ABBA (docs/decisions.md, session 10).
    log measure
    need_bundle
    md=$OUT/measure-bench.md
    parts=" ${MEASURE_PARTS:-stages repeat queue} "
    [[ -f $md ]] || { results_head "Measurement and throughput (issue 13)"
      echo "- profile: ${MEASURE_PROFILE:-kernelbench-fp32}; targets: L2/1 <= 1.2 s and L1/5 <= 2.0 s end to end, CV <= 1 %"
    } > "$md"
    [[ $parts == *" stages "* ]] && {
      echo
      echo "## Every reference candidate, fresh worker"
      echo
      timeout 300 ./build-gpu/bin/kwb-bench-eval-stages --only "${MEASURE_ONLY-reference/}" --profile "${MEASURE_PROFILE:-kernelbench-fp32}" \
        --json "$OUT/measure-stages.json" 2>> "$OUT/measure.log"
    } >> "$md"
    [[ $parts == *" repeat "* ]] && {
      echo
      echo "## Repeatability: each measured ${MEASURE_REPEAT:-10} times, fresh worker each"
      echo
      timeout 300 ./build-gpu/bin/kwb-bench-eval-stages --only "${MEASURE_REPEAT_ONLY:-L2_01.md,L1_09.md,L3_09.md}" \
        --repeat "${MEASURE_REPEAT:-10}" --profile "${MEASURE_PROFILE:-kernelbench-fp32}" --json "$OUT/measure-repeat.json" 2>> "$OUT/measure.log"
    } >> "$md"
    [[ $parts == *" queue "* ]] && {
      echo
      echo "## Candidates per minute over L1+L2 (the profile's own timing)"
      echo
      # The GPU's memory in use every 250 ms while the queue runs (warmed spares hold contexts).
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 > "$OUT/queue-gpu-memory.txt" 2>&1 &
      smi=$!
      # How busy the GPU was (utilization.gpu: the share of the driver's last sample period, 1/6 to
      # 1 s, in which a kernel ran), every 100 ms, placed in each mode's span by queue_floor.py.
      nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 > "$OUT/queue-gpu-busy.csv" 2>&1 &
      smibusy=$!
      timeout 300 $bundle/run kwb-bench-supervisor --worker "$worker" --candidates tests/fixtures/candidates \
        --tasks L1,L2 --timing-trials 0 --modes "${MEASURE_MODES:-fresh+spare+ahead,reuse+ahead}" --compile-workers 4 \
        --json "$OUT/measure-supervisor.json" 2>> "$OUT/measure.log"
      kill $smi 2>/dev/null
      echo
      echo "GPU memory in use while the queue ran (nvidia-smi every 250 ms): max $(sort -n "$OUT/queue-gpu-memory.txt" | tail -1) MiB, median $(sort -n "$OUT/queue-gpu-memory.txt" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') MiB"
      # Issue 35's target: each mode against the GPU floor of the stages part, where it ran too.
      [[ -f $OUT/measure-stages.json ]] && { echo; python3 bench/queue_floor.py "$OUT/measure-stages.json" "$OUT/measure-supervisor.json" "$OUT/queue-gpu-busy.csv"; }
      # MEASURE_BASE_WORKER: the same queue again with a base commit's worker (built beside, e.g.
      # in /tmp; waited for up to 300 s), under this tree's queue: the before of a before/after
      # table in one call. MEASURE_BASE names it.
      if [[ -n ${MEASURE_BASE_WORKER:-} ]]; then
        waited=0
        while [[ ! -x $MEASURE_BASE_WORKER ]] && ((waited < 300)); do sleep 2; waited=$((waited + 2)); done
        echo
        echo "### The same queue with ${MEASURE_BASE:-the base}'s worker"
        echo
        timeout 300 $bundle/run kwb-bench-supervisor --worker "$MEASURE_BASE_WORKER" --candidates tests/fixtures/candidates \
          --tasks L1,L2 --timing-trials 0 --modes "${MEASURE_MODES:-fresh+spare+ahead,reuse+ahead}" --compile-workers 4 \
          --json "$OUT/measure-supervisor-base.json" 2>> "$OUT/measure.log"
        [[ -f $OUT/measure-stages.json ]] && { echo; python3 bench/queue_floor.py "$OUT/measure-stages.json" "$OUT/measure-supervisor-base.json" "$OUT/queue-gpu-busy.csv"; }
      fi
      kill $smibusy 2>/dev/null
    } >> "$md"
    cat "$md"
    ;;
  agreement-kwb|agreement-kb|agreement-report)
    # Issue 33's agreement study (docs/agreement.md): the generations picked into
    # build-carry/agreement/gens (bench/agreement/select_generations.py) judged by kwb
    # (agreement-kwb: `kwb import kernelbench`) and by KernelBench's own evaluator from a fetched
    # checkout in build-carry/kernelbench (agreement-kb), then tabled (agreement-report).
    # AGREEMENT_DIR keeps the database, the JSON lines and KernelBench's builds between calls.
    log "$step"
    need_bundle
    gens=${AGREEMENT_GENS:-$root/build-carry/agreement/gens}
    adir=${AGREEMENT_DIR:-$root/build-gpu/agreement}
    mkdir -p "$adir"
    case $step in
    agreement-kwb)
      rm -f "$adir/kwb.db"
      s=$(date +%s)
      # The kernelbench profile: KernelBench's own settings (PyTorch's TF32 defaults). Session 30 ran
      # kwb's default, kernelbench-fp32, and its conv references took twice KernelBench's time.
      timeout ${AGREEMENT_TIMEOUT:-560} $bundle/run kwb --worker "$worker" import kernelbench "$gens" --db "$adir/kwb.db" \
        --profile ${AGREEMENT_PROFILE:-kernelbench} \
        --compile-workers ${AGREEMENT_COMPILE_WORKERS:-14} --json > "$adir/kwb-import.json" 2> "$adir/kwb-import.stderr"
      echo "exit $? wall_s $(( $(date +%s) - s ))" | tee "$adir/kwb-wall.txt"
      tail -3 "$adir/kwb-import.stderr"
      # The database's WAL into its file first: an import cut by its limit left everything in the
      # WAL, and the plain copy (session 29) came back as an empty 4 KB database. xz: a few files
      # of at most 16 MiB come back from a call.
      python3 -c "import sqlite3,sys;c=sqlite3.connect(sys.argv[1]);c.execute('PRAGMA wal_checkpoint(TRUNCATE)');c.close()" "$adir/kwb.db"
      xz -c "$adir/kwb.db" > "$OUT/kwb.db.xz"
      cp "$adir/kwb-import.json" "$adir/kwb-import.stderr" "$adir/kwb-wall.txt" "$OUT/" ;;
    agreement-kb)
      s=$(date +%s)
      # Its own limit (AGREEMENT_KB_TIMEOUT): session 30's final call gave both steps one
      # AGREEMENT_TIMEOUT of 300 s, which killed this step long before its --deadline.
      timeout ${AGREEMENT_KB_TIMEOUT:-${AGREEMENT_TIMEOUT:-560}} python3 bench/agreement/kb_eval.py --kernelbench "$root/build-carry/kernelbench" \
        --gens "$gens" --out "$adir/kb.jsonl" --build-root "$adir/kb-build" \
        --compile-workers ${AGREEMENT_COMPILE_WORKERS:-14} --gpu-procs ${AGREEMENT_GPU_PROCS:-4} ${AGREEMENT_KB_ARGS:-} 2>&1 | tail -8
      echo "exit ${PIPESTATUS[0]} wall_s $(( $(date +%s) - s ))" | tee "$adir/kb-wall.txt"
      # A cut call has only the partial file (kb_eval.py exits 3 or is stopped): bring it back too.
      cp "$adir/kb.jsonl" "$adir/kb.jsonl.partial" "$adir/kb-wall.txt" "$OUT/" 2>/dev/null ;;
    agreement-report)
      # AGREEMENT_KB_JSONL: KernelBench's side from an earlier call (a committed results file), so a
      # recheck of kwb's side alone needs no KernelBench run.
      python3 bench/agreement/compare.py --kb "${AGREEMENT_KB_JSONL:-$adir/kb.jsonl}" --db "$adir/kwb.db" \
        ${AGREEMENT_EXPLAIN:+--explain "$AGREEMENT_EXPLAIN"} --head "$(results_head x | tail -n +3)" > "$OUT/agreement.md"
      head -12 "$OUT/agreement.md" ;;
    esac
    ;;
  split-check)
    # Issue 35: every answer of a generations folder (AGREEMENT_GENS, as agreement-kwb's) built whole
    # and split with this tree's builder, and the libraries that both ways built run on the same
    # inputs, outputs compared bit for bit (bench/kb_split_check.py; docs/sandbox.md "The split build").
    log split-check
    gens=${AGREEMENT_GENS:-$root/build-carry/agreement/gens}
    # No build starts after the deadline, and no run a minute later: a cut step still writes its table
    # (session 32's, at 290 s, wrote nothing: its whole builds alone took longer on the H100 machine).
    timeout ${SPLIT_CHECK_TIMEOUT:-540} python3 bench/kb_split_check.py --gens "$gens" \
      --kernelbench "$root/build-carry/kernelbench" --jobs ${SPLIT_CHECK_JOBS:-14} \
      --deadline $(( ${SPLIT_CHECK_TIMEOUT:-540} * 55 / 100 )) \
      ${SPLIT_CHECK_LIMIT:+--limit $SPLIT_CHECK_LIMIT} --out "$OUT/split-check.md" 2> "$OUT/split-check.log"
    echo "exit $?"
    head -6 "$OUT/split-check.md" 2>/dev/null
    tail -4 "$OUT/split-check.md" 2>/dev/null
    tail -5 "$OUT/split-check.log"
    ;;
  record)
    # Re-records the H200 responses of tests/protocol/recorded/*.h200.request (tests/protocol/README.md):
    # each request sent alone to a fresh worker, pretty-printed with sorted keys as the files are kept.
    log record
    mkdir -p "$OUT/recorded"
    for r in tests/protocol/recorded/*.h200.request; do
      n=$(basename "$r" .request)
      timeout 300 ./build-gpu/bin/kwb-worker --tasks-dir tasks < "$r" 2> "$OUT/recorded/$n.stderr" |
        python3 -c 'import json,sys; [print(json.dumps(json.loads(l), indent=1, sort_keys=True)) for l in sys.stdin if l.strip()]' \
        > "$OUT/recorded/$n.response.json"
      echo "$n: $(python3 -c "import json;d=json.load(open('$OUT/recorded/$n.response.json'));print(d.get('status', d.get('ok')))" 2>&1)"
    done
    ;;
  limits)
    # The supervisor's host limits and the OS sandbox on the GPU machine, through kwb (docs/sandbox.md).
    log limits
    need_bundle
    c=tests/fixtures/candidates
    { for sb in "" --no-os-sandbox; do
        echo "## kwb eval L2/1 reference, ${sb:-sandboxed}"
        $bundle/run kwb --worker "$worker" eval L2/1 $c/reference/L2_01.md --trials 20 $sb --json | python3 -c \
          'import json,sys; d=json.load(sys.stdin); print(d.get("status"), d.get("speedup"), d.get("message","")[:200])'
      done
      echo "## host memory hog (16 GiB) with --max-host-memory 8G"
      s=$(date +%s.%N); $bundle/run kwb --worker "$worker" eval L1/1 $c/limits/host_memory_hog.md --max-host-memory 8G; echo "exit $?"
      e=$(date +%s.%N); echo "wall_s $(python3 -c "print(round($e - $s, 2))")"
      echo "## the next evaluation"
      $bundle/run kwb --worker "$worker" eval L1/1 $c/reference/L1_01.md --trials 10; echo "exit $?"
    } > "$OUT/limits.txt" 2>&1
    grep -E "^##|status|exit|wall_s|warning|correct|resource" "$OUT/limits.txt" | head -40
    ;;
  remote-workers)
    # Issue 16: the same verdicts from `kwb eval` locally and through ssh to an sshd of the check's
    # own on 127.0.0.1 (scripts/remote-workers-check.sh), with Debian's OpenSSH from
    # build-carry/ssh-bundle.tar.xz (scripts/ssh-bundle.sh): the machine has no ssh. Then
    # REMOTE_PARTS (default "run limits timeout"): run, the same whole `kwb run --regime
    # ${REMOTE_REGIME:-iterative}` over the 30 tasks locally and through ssh, each against a fresh
    # fixture server (the check's run mode: every candidate's verdict and where it ran); limits and
    # timeout, the host limits and the time-out through ssh. One file: $OUT/remote-workers.md; both
    # JSONs of every evaluation and both runs' databases under $OUT/remote-workers/.
    # REMOTE_CANDIDATES, REMOTE_ARGS pick others; REMOTE_RUN_ARGS adds `kwb run` options (e.g.
    # --compile-only, to try the step on a machine without a GPU).
    log remote-workers
    need_bundle
    [[ -x /tmp/ssh-bundle/bin/sshd ]] || tar xf build-carry/ssh-bundle.tar.xz -C /tmp
    export PATH=/tmp/ssh-bundle/bin:$bundle/bin:$PATH # bwrap travels in the kwb bundle (as for limits)
    # As root sshd needs its privilege-separation user and folder, and an unlocked account to log in to.
    if ! getent passwd sshd > /dev/null; then
      useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd 2>> "$OUT/remote-workers.log" || {
        uid=$(for i in $(seq 100 999); do getent passwd "$i" > /dev/null || { echo "$i"; break; }; done)
        echo "sshd:x:$uid:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin" >> /etc/passwd; }
      log "made the user sshd: $(getent passwd sshd)"
    fi
    mkdir -p -m 0755 /run/sshd
    # Without PAM, sshd refuses an account whose password field starts with '!' (locked).
    if [[ $(getent shadow "$(id -un)" 2>/dev/null | cut -d: -f2) == '!'* ]]; then
      usermod -p '*' "$(id -un)" 2>/dev/null || sed -i "s/^$(id -un):![^:]*:/$(id -un):*:/" /etc/shadow
      log "unlocked $(id -un) for key logins (password field '*')"
    fi
    c=tests/fixtures/candidates
    candidates=(${REMOTE_CANDIDATES:-$c/reference/L1_01.md $c/reference/L1_05.md $c/reference/L2_01.md $c/reference/L3_01.md
      $c/failing/wrong_result.md $c/failing/compile_error.md $c/adversarial/returns_input.md $c/kernelbench/L2_01.md})
    md=$OUT/remote-workers.md
    check() { # ARGS CANDIDATE...: one table; the local worker gets kwb's PATH and LD_LIBRARY_PATH ($bundle/run's), so does ssh's
      KWB_CHECK_KWB="$bundle/run kwb" KWB_CHECK_WORKER=$worker KWB_CHECK_ARGS=$1 KWB_CHECK_OUT=$OUT/remote-workers \
        KWB_CHECK_REMOTE_ENV="PATH=$PATH"$'\n'"LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        timeout ${REMOTE_TIMEOUT:-420} scripts/remote-workers-check.sh "$root/build-gpu" "${@:2}"
      echo "rc=$?"
    }
    { results_head "kwb eval, and a whole kwb run, locally and through ssh to 127.0.0.1 (issue 16)"
      echo "- ssh: $(cat /tmp/ssh-bundle/VERSION)"
      echo
      echo "## Verdicts (kwb eval ${REMOTE_ARGS:---trials 20})"
      echo
      check "${REMOTE_ARGS:---trials 20}" "${candidates[@]}"
      # REMOTE_PARTS: some of "run limits timeout" after the verdicts (device time is scarce).
      parts=" ${REMOTE_PARTS:-run limits timeout} "
      [[ $parts == *" run "* ]] && {
        regime=${REMOTE_REGIME:-iterative} # iterative: the error-log retries make several evaluations per task
        echo
        echo "## A whole run (kwb run --regime $regime) locally and through ssh"
        echo
        KWB_CHECK_RUN="run --regime $regime --tasks L1:1-10,L2:1-10,L3:1-10 --prompts $root/prompts --timing-trials 10 --isolation reuse" \
          KWB_CHECK_FIXTURE="$bundle/run kwb-fixture-llm" check "${REMOTE_RUN_ARGS:-}"; }
      [[ $parts == *" limits "* ]] && {
        echo
        echo "## Host memory hog (16 GiB) with --max-host-memory 8G: resource_limit both ways"
        echo
        check "--max-host-memory 8G" L1/1=$c/limits/host_memory_hog.md; }
      [[ $parts == *" timeout "* ]] && {
        echo
        echo "## Endless kernel with --timeout 10: timeout both ways"
        echo
        check "--timeout 10" $c/adversarial/endless_kernel.md; }
    } > "$md" 2>> "$OUT/remote-workers.log"
    cat "$md"
    ;;
  kb-build-speed)
    # Issue 35 item 1 on the GPU machine's CPU, one markdown file ($OUT/kb-build-speed.md;
    # bench/kb_build_speed.py --device), within 5.5 min: load_inline's own builds (no header; ninja's
    # per-stage times) of a C++-only answer and one with a compile error, a .cu answer, one with a
    # C++ error in its bindings and one with an error in its kernel, all at once with the
    # precompiled headers' builds; the same answers through this tree's broker (bwrap, the header,
    # the early syntax pass) one at a time; the failing ones through `kwb eval` where the build
    # step made kwb-worker (the worker's early request included); the libraries built both ways
    # run on the same inputs. Needs python3 with torch (the worker's), nvcc on PATH or in
    # /usr/local/cuda, ninja; KB_BUILD_ARCH (default sm_90). No network.
    log kb-build-speed
    [[ -f build-carry/qt-bundle.tar.xz ]] && need_bundle  # bwrap for the broker's sandbox, where the machine lacks it
    [[ -x /usr/local/cuda/bin/nvcc ]] && export PATH=$PATH:/usr/local/cuda/bin
    kwb_cmd=()
    [[ -x $worker && -x $bundle/run ]] && kwb_cmd=(--kwb "$bundle/run kwb --worker $worker")
    md=$OUT/kb-build-speed.md
    { results_head "KernelBench-format extension builds on the GPU machine's CPU (issue 35 item 1)"
      echo; echo "- host compiler: $(c++ --version | head -1); nvcc: $(nvcc --version 2>&1 | tail -1)"
      # What load_inline takes (CXX, else c++; CC for nvcc's -ccbin) against what kwb's builder
      # sees (CXX and CC are not passed to workers; session 34: /opt/gcc/bin/g++ against
      # /usr/bin/x86_64-linux-gnu-g++-13).
      echo "- CXX=${CXX-(unset)} CC=${CC-(unset)}; c++ is $(readlink -f "$(command -v c++)"); g++ is $(readlink -f "$(command -v g++)")"
      echo "- torch: $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"
      echo "- kwb eval: ${kwb_cmd[1]:-not run (no build-gpu/bin/kwb-worker or no bundle)}"; echo
      # 330 s: on session 32's H100 machine the five builds took 81 s at once and 230 s cut the step
      # before its slower rows.
      KWB_BENCH_ARCH=${KB_BUILD_ARCH:-sm_90} timeout -k 5 ${KB_BUILD_LIMIT:-330} python3 bench/kb_build_speed.py --device --base '' "${kwb_cmd[@]}"
      echo "(exit $?: 124 is the step's ${KB_BUILD_LIMIT:-330} s limit)"
    } > "$md" 2> "$OUT/kb-build-speed.log"
    tail -40 "$md"
    ;;
  kb-kernel-errors)
    # Issue 35 item 1's kernel error, before and after: two .cu answers with an error in a kernel
    # (`a[j]`, whose name torch's headers have somewhere, and `undeclared_scale`), and the same .cu
    # that builds (what the reading ahead costs a success), through a broker of
    # KB_BASE_DIR's src/worker/python (`git archive BASE src/worker/python`, unpacked into
    # build-carry; this copy has no history) and one of this tree's, alternating, KB_REPS times each
    # (bench/kb_build_speed.py --kernel-errors). Needs what kb-build-speed needs.
    log kb-kernel-errors
    [[ -f build-carry/qt-bundle.tar.xz ]] && need_bundle
    [[ -x /usr/local/cuda/bin/nvcc ]] && export PATH=$PATH:/usr/local/cuda/bin
    { results_head "A kernel's own compile error through the broker, before and after (issue 35 item 1)"
      echo; echo "- base: ${KB_BASE:-?} (${KB_BASE_DIR:-no base folder})"; echo
      KWB_BENCH_ARCH=${KB_BUILD_ARCH:-sm_90} timeout -k 5 ${KB_BUILD_LIMIT:-330} python3 bench/kb_build_speed.py \
        --parts broker --kernel-errors --reps ${KB_REPS:-3} --base "${KB_BASE:-base}" \
        ${KB_BASE_DIR:+--base-dir "$KB_BASE_DIR"}
      echo "(exit $?: 124 is the step's ${KB_BUILD_LIMIT:-330} s limit)"
    } > "$OUT/kb-kernel-errors.md" 2> "$OUT/kb-kernel-errors.log"
    tail -25 "$OUT/kb-kernel-errors.md"
    ;;
  kb-only-crash)
    # Session 20's 250-task check: kwb-worker ended by SIGSEGV in run_reference of every
    # KernelBench-only task it reached on the H200 (37 of 37), while evaluate of the KernelBench-only
    # fixtures (kbonly_*) passed. Which request order crashes, and where: Python's faulthandler
    # prints the Python stack on a fatal signal, the worker's stderr is kept. TASK (default L1/13).
    log kb-only-crash
    PYTHONFAULTHANDLER=1 timeout 300 python3 - "$worker" "${TASK:-L1/13}" > "$OUT/kb-only-crash.txt" 2>&1 <<'PY'
import json, subprocess, sys
worker, task = sys.argv[1], sys.argv[2]
ref = {"type": "run_reference", "task": task, "scale": "full", "seed": 42}
orders = {"cuda alone": [dict(ref, device="cuda")], "cpu alone": [dict(ref, device="cpu")],
          "warm, then cuda": [{"type": "warm"}, dict(ref, device="cuda")],
          "warm with python, then cuda": [{"type": "warm", "python": True}, dict(ref, device="cuda")],
          "cuda twice": [dict(ref, device="cuda"), dict(ref, device="cuda")]}
for name, requests in orders.items():
    p = subprocess.Popen([worker, "--tasks-dir", "tasks"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    said = []
    for i, request in enumerate(requests, 1):
        p.stdin.write(json.dumps(dict(request, id=i)) + "\n")
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                break
            reply = json.loads(line)
            if reply.get("id") == i:
                said.append({k: reply.get(k) for k in ("type", "ok", "output_shape", "mean", "ms", "error") if k in reply})
                break
        if not line:
            break
    p.stdin.close()
    code = p.wait(timeout=120)
    print(f"== {name}: exit {code}; replies {json.dumps(said)[:600]}")
    print("   stderr: " + "\n   ".join(p.stderr.read().splitlines()[-30:]))
PY
    cat "$OUT/kb-only-crash.txt" | cut -c1-300
    ;;
  check-tasks)
    # Issue 37 item 2: the 250-task check against KernelBench's references, resumed from the committed
    # state (bench/results/2026-12-04-kernelbench-tasks-h200-state.jsonl: rows and finished halves),
    # until CHECK_DEADLINE s (default 480); the state and table come back in $OUT (commit the state
    # over the committed one). CHECK_TASKS picks tasks (scripts/check-kernelbench-tasks.py --tasks).
    log check-tasks
    state=$OUT/kbtasks-state.jsonl
    [[ -f $state ]] || cp bench/results/2026-12-04-kernelbench-tasks-h200-state.jsonl "$state"
    timeout $(( ${CHECK_DEADLINE:-480} + 60 )) python3 scripts/check-kernelbench-tasks.py --worker "$worker" --tasks-dir tasks \
      --kernelbench tasks/kernelbench-src --state "$state" --out "$OUT/kernelbench-tasks-h200.md" --jobs 10 \
      --deadline "${CHECK_DEADLINE:-480}" --task-timeout "${CHECK_TASK_TIMEOUT:-120}" ${CHECK_TASKS:+--tasks "$CHECK_TASKS"} > "$OUT/check-tasks.log" 2>&1
    grep -v '^  ' "$OUT/check-tasks.log" | tail -5
    ;;
  nvcc-phases)
    # Issue 35 item 1: where nvcc's time goes for a CUDA answer's .cu (bench/nvcc_phases.py).
    log nvcc-phases
    PATH=$PATH:/usr/local/cuda/bin timeout 200 python3 bench/nvcc_phases.py > "$OUT/nvcc-phases.txt" 2>&1
    head -20 "$OUT/nvcc-phases.txt"
    ;;
  header-phases)
    # Issue 35 item 1: g++'s phases for an answer's main.cpp with torch's header precompiled, and
    # how soon -Wfatal-errors knows an error (bench/header_phases.py; the 2-core run is
    # bench/results/2026-12-06-header-phases-2core.md). About 4 min with torch 2.11 (HP_PARTS: a
    # shorter list of its parts).
    log header-phases
    { results_head "g++'s phases with torch's header precompiled, on the GPU machine's CPU (issue 35 item 1)"
      echo; timeout -k 5 ${HP_LIMIT:-330} python3 bench/header_phases.py --reps 3 --parts "${HP_PARTS:-pch,first,slim,headers}"
      echo "(exit $?: 124 is the step's ${HP_LIMIT:-330} s limit)"
    } > "$OUT/header-phases.md" 2> "$OUT/header-phases.log"
    tail -30 "$OUT/header-phases.md"
    ;;
  pack)
    # The machine returns only a few files: everything goes back as one archive.
    log pack
    tar -C "$OUT" -czf /tmp/results.tar.gz --exclude results.tar.gz . && mv /tmp/results.tar.gz "$OUT/results.tar.gz"
    find "$OUT" -mindepth 1 ! -name results.tar.gz -delete
    ;;
  sandbox)
    # Issue 32: the OS sandbox on the GPU machine. What the worker sees in it (the bwrap command
    # kwb starts, taken from /proc while a worker runs), whether the CUDA driver, NVML (nvidia-smi),
    # cuBLAS (L1/1), cuDNN (L2/1's convolution) and CUPTI (every timed evaluation's trace) work in
    # it, a KernelBench-format answer built through the broker's own sandbox with nvcc (cold
    # cache), and the sandbox's cost per evaluation: fresh `kwb eval`s with and without it.
    log sandbox
    need_bundle
    md=$OUT/sandbox.md
    c=tests/fixtures/candidates
    export KWB_EXTENSION_CACHE=$root/build-gpu/sandbox-extensions
    rm -rf "$KWB_EXTENSION_CACHE"; mkdir -p "$KWB_EXTENSION_CACHE"
    { results_head "The OS sandbox on the GPU machine (issue 32)"
      echo; echo "- bwrap: $(command -v bwrap) ($(bwrap --version 2>&1))"
      echo; echo '## The bwrap command of a local worker (from /proc of a running one)'; echo
      # A worker that stays (an endless kernel, 60 s limit): the made-up /etc files live as long as kwb.
      $bundle/run kwb --worker "$worker" eval L2/6 $c/adversarial/endless_kernel.md --timeout 60 > /dev/null 2>&1 &
      kp=$!; cmd=
      for _ in $(seq 1 100); do
        bp=$(pgrep -f -n "bwrap .*kwb-worker" || true)
        [[ -n $bp ]] && cmd=$(tr '\0' '\n' < /proc/$bp/cmdline) && break
        sleep 0.1
      done
      echo '```'; echo "$cmd" | tr '\n' ' ' | fold -w 120; echo; echo '```'
      if [[ -n $cmd ]]; then
        mapfile -t args <<< "$cmd"
        n=0; for a in "${args[@]}"; do [[ $a == -- ]] && break; n=$((n + 1)); done
        # The probes' own working folder: the worker's (kwb's probe folder, bound above) goes when
        # that kwb ends, and python3 then fails in os.getcwd (session 21); bwrap takes the last --chdir.
        pre=("${args[@]:0:$n}" --chdir /)
        echo; echo '## Inside that sandbox'; echo
        echo '```'
        echo "\$ nvidia-smi -L (NVML)"; timeout 60 "${pre[@]}" -- nvidia-smi -L 2>&1 | head -3
        echo "\$ ls /proc (the PID namespace)"; timeout 60 "${pre[@]}" -- /bin/sh -c 'ls /proc | grep -E "^[0-9]+$" | tr "\n" " "'; echo
        echo "\$ cat /etc/passwd"; timeout 60 "${pre[@]}" -- cat /etc/passwd
        echo "\$ ls / \$HOME"; timeout 60 "${pre[@]}" -- /bin/sh -c 'ls / | tr "\n" " "; echo; echo "$HOME: $(ls -A "$HOME" | wc -l) entries"'
        echo "\$ python3: torch.cuda, cuBLAS, cuDNN"
        timeout 120 "${pre[@]}" -- python3 -c 'import torch;x=torch.randn(256,256,device="cuda");print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0));print("cublas", float((x@x).sum())==float((x@x).sum()));print("cudnn", torch.backends.cudnn.is_available(), torch.nn.functional.conv2d(torch.randn(1,3,8,8,device="cuda"),torch.randn(4,3,3,3,device="cuda")).shape)' 2>&1 | tail -4
        echo '```'
      fi
      kill $kp 2>/dev/null; wait $kp 2>/dev/null
      if [[ -n ${KWB_ESCAPE_ONLY:-} ]]; then parts=escape; else parts=all; fi
      [[ $parts == all ]] && {
      echo; echo '## kwb eval in the sandbox'; echo
      echo '| candidate | task | status | speed-up | wall s |'; echo '|---|---|---|---:|---:|'
      for pair in "L1/1 reference/L1_01.md" "L2/1 reference/L2_01.md" "L2/6 reference/L2_06.md" "L1/5 kernelbench/L1_05.md"; do
        set -- $pair
        s=$(date +%s.%N); $bundle/run kwb --worker "$worker" eval $1 $c/$2 --trials 10 --json > "$OUT/sb.json" 2> "$OUT/sb.err"
        e=$(date +%s.%N)
        python3 - "$OUT/sb.json" "$1" "$2" "$s" "$e" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    d = {"status": f"no JSON ({e})"}
r = d.get("response", {}) or {}
sp = (r.get("speedup") or {}).get("value") if isinstance(r.get("speedup"), dict) else r.get("speedup")
print(f"| {sys.argv[3]} | {sys.argv[2]} | {d.get('status')} {str(d.get('message',''))[:120]} | {sp} | {float(sys.argv[5]) - float(sys.argv[4]):.2f} |")
PY
      done
      echo; echo '## Cost per evaluation: 5 fresh `kwb eval L2/6` each way, alternating'; echo
      echo '| sandbox | wall s (each) |'; echo '|---|---|'
      on=; off=
      for i in 1 2 3 4 5; do
        s=$(date +%s.%N); $bundle/run kwb --worker "$worker" eval L2/6 $c/reference/L2_06.md --trials 10 > /dev/null 2>&1; e=$(date +%s.%N)
        on="$on $(python3 -c "print(round($e - $s, 3))")"
        s=$(date +%s.%N); $bundle/run kwb --worker "$worker" eval L2/6 $c/reference/L2_06.md --trials 10 --no-os-sandbox > /dev/null 2>&1; e=$(date +%s.%N)
        off="$off $(python3 -c "print(round($e - $s, 3))")"
      done
      echo "| bubblewrap |$on |"; echo "| none (--no-os-sandbox) |$off |"
      }
      if [[ -n ${KWB_ESCAPE:-} && -f tests/security/test_escape.py ]]; then
        echo; echo '## The escape suite (tests/security/test_escape.py) on this machine'; echo; echo '```'
        LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" QT_PLUGIN_PATH="$bundle/plugins" \
          timeout ${KWB_ESCAPE_TIMEOUT:-500} python3 tests/security/test_escape.py --kwb "$bundle/bin/kwb" --worker "$worker" --gpu 2>&1 | tail -60
        echo '```'
      fi
    } > "$md" 2>&1
    cat "$md"
    ;;
  *) echo "unknown step $step"; exit 2 ;;
  esac
done
log done
