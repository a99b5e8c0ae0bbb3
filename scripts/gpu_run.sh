#!/usr/bin/env bash
# shellcheck disable=SC2317  # the stage_* and helper functions are called by name
# The one project script for the GPU machine: configure and build, GPU and host tests, a
# compute-sanitizer pass, the Google Benchmark suite and the peer comparison. Each stage is
# timed and cut to fit the deadline; a failed stage does not stop the later ones (a failed build
# does). A short table is printed LAST; full logs go to $OUT.
#
# usage:  scripts/gpu_run.sh [STAGE...]          STAGE: build test sanitize bench peers steady python
#                                                       backward wgrad glu profile
#         STAGES="build bench peers" scripts/gpu_run.sh
#   (default: the first seven, in that order; `python` builds its own copy of the library;
#   `backward` times dgrad with N-major weights against its peers, bench/backward.py; `wgrad`
#   the weight gradient against its peers, bench/wgrad.py; `glu` the fused GLU forward against
#   its unfused paths on the fc1 cases, bench/glu.py; `profile` Nsight Compute on one case,
#   ggemm's kernel and DeepGEMM's, bench/profile_case.py)
#
# environment:
#   OUT               results folder (default ./out, which git ignores)
#   GGEMM_COMMIT      the commit measured (used over git rev-parse when set)
#   GGEMM_DEADLINE_S  seconds after the start by which every stage must end (default 570); no
#                     stage starts with under 30 s left
#   <STAGE>_TIMEOUT_S cap of one stage, e.g. BUILD_TIMEOUT_S (defaults below)
#   BUILD_DIR         default build-gpu
#   CMAKE_ARGS        extra configure arguments, e.g. -DGGEMM_DEBUG_BARRIERS=ON
#   BENCH_ARGS        extra ggemm_bench arguments, e.g. --benchmark_filter=suite/
#   PEERS_ARGS        peers.py arguments besides --lib/--out (default: --full-epilogue)
#   STEADY_ARGS       steady_clock.py arguments besides --lib/--out (default: none)
#   BACKWARD_ARGS     backward.py arguments besides --lib/--out (default: none)
#   WGRAD_ARGS        wgrad.py arguments besides --lib/--out (default: none)
#   GLU_ARGS          glu.py arguments besides --lib/--out (default: none)
#   PROFILE_ARGS      profile_case.py arguments besides --lib (default: --case qwen3_fc2_L128)
#   SANITIZE_TOOLS    compute-sanitizer tools (default: memcheck racecheck synccheck initcheck)
#   SANITIZE_FILTER   doctest test-case filter of the sanitizer pass (default: sanitizer:*)
#
# $OUT keeps at most 11 files: summary.txt, logs.tar.gz (every log), bench.json, peers.json,
# peers.md, peers.png, steady.json, backward.json, wgrad.json, glu.json, profile.ncu-rep, and while a stage runs its own log(s), which move into
# logs.tar when it ends. A run killed from outside leaves logs.tar uncompressed and the running stage's log.
#
# This script only reads the GPU's state (nvidia-smi -L / --query-gpu); it never changes clocks,
# power limits or any other setting.
set -u -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-gpu}
START_S=$(date +%s)
DEADLINE_S=$((START_S + ${GGEMM_DEADLINE_S:-570}))
ALL_STAGES="build test sanitize bench peers steady python backward wgrad glu profile"
DEFAULT_STAGES="build test sanitize bench peers steady python"
if (($#)); then STAGE_LIST="$*"; else STAGE_LIST=${STAGES:-$DEFAULT_STAGES}; fi
for stage in $STAGE_LIST; do
  case " $ALL_STAGES " in
    *" $stage "*) ;;
    *) echo "gpu_run.sh: unknown stage '$stage' (stages: $ALL_STAGES)"; exit 2 ;;
  esac
done

declare -A DEFAULT_CAP=([build]=420 [test]=240 [sanitize]=420 [bench]=300 [peers]=300 [steady]=120 [python]=480
                        [backward]=300 [wgrad]=300 [glu]=300 [profile]=300)
SANITIZE_TOOLS=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
SANITIZE_FILTER=${SANITIZE_FILTER:-sanitizer:*}
PEERS_ARGS=${PEERS_ARGS---full-epilogue}
STEADY_ARGS=${STEADY_ARGS:-}
BACKWARD_ARGS=${BACKWARD_ARGS:-}
WGRAD_ARGS=${WGRAD_ARGS:-}
BENCH_ARGS=${BENCH_ARGS:-}
CMAKE_ARGS=${CMAKE_ARGS:-}
SCRATCH=$(mktemp -d /tmp/gpu_run.XXXXXX)
LOG_TAR=$OUT/logs.tar
rm -f "$LOG_TAR" "$LOG_TAR.gz" "$OUT/summary.txt"

# --- helpers --------------------------------------------------------------------------------------
now_ms() { echo $(($(date +%s%N) / 1000000)); }
seconds_left() { echo $((STAGE_END_S - $(date +%s))); }

# run_logged LOG CMD...: runs CMD under the stage's remaining time, appending its output to
# $OUT/LOG (written as it comes, so it survives a kill) and showing the last lines here.
SHOW_LINES=${SHOW_LINES:-15}
run_logged() {
  local log=$1
  shift
  local limit
  limit=$(seconds_left)
  if ((limit < 5)); then
    echo "(no time left for: $*)" | tee -a "$OUT/$log"
    return 124
  fi
  echo "+ $* (limit ${limit}s)" | tee -a "$OUT/$log"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$OUT/$log" | tail -n "$SHOW_LINES"
  return "${PIPESTATUS[0]}"
}

# Moves every *.log and *.txt of $OUT but summary.txt into logs.tar (appendable, uncompressed).
pack_logs() {
  local f
  for f in "$OUT"/*.log "$OUT"/*.txt; do
    [ -f "$f" ] || continue
    [ "$(basename "$f")" = summary.txt ] && continue
    tar -rf "$LOG_TAR" -C "$OUT" "$(basename "$f")" && rm -f "$f"
  done
}

# built PATH: true when PATH exists; otherwise the stage's NOTE says so.
built() {
  [ -e "$1" ] && return 0
  NOTE="$1 not built"
  return 1
}

find_binary() {
  find "$BUILD_DIR" -name "$1" -type f -perm -u+x 2>/dev/null | head -n 1
}

# The doctest summary line of a log ("test cases: 12 | 12 passed | 0 failed | 0 skipped").
doctest_line() {
  grep -E "test cases:" "$1" 2>/dev/null | tail -n 1 | sed -E 's/^\[doctest\] *//; s/ +/ /g'
}

# --- environment ----------------------------------------------------------------------------------
# On a machine without network access, the Debian packages the build needs can be carried in
# .deps/ (git ignores it), fetched beforehand on a Debian machine with
#   apt-get download doctest-dev libbenchmark-dev libbenchmark1debian nlohmann-json3-dev
# They are unpacked under /tmp/deps, never into /.
if compgen -G ".deps/*.deb" >/dev/null; then
  if [ ! -f /tmp/deps/.unpacked ]; then
    mkdir -p /tmp/deps
    for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
    touch /tmp/deps/.unpacked
  fi
  DEPS_NOTE="deps from .deps"
else
  DEPS_NOTE="no .deps carried: doctest, Google Benchmark and nlohmann-json must already be installed"
fi
export CPATH=/tmp/deps/usr/include${CPATH:+:$CPATH}
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# GGEMM_COMMIT wins: a .git left on the device machine by an earlier call can be stale.
if [ -n "${GGEMM_COMMIT:-}" ]; then
  COMMIT=$GGEMM_COMMIT
elif git rev-parse HEAD >/dev/null 2>&1; then
  COMMIT=$(git rev-parse HEAD)
  git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT+dirty"
else
  COMMIT=unknown
fi
export GGEMM_COMMIT=$COMMIT
GPU_LINE=$(nvidia-smi -L 2>/dev/null | head -n 1)
{
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit:  $COMMIT"
  echo "stages:  $STAGE_LIST"
  echo "deps:    $DEPS_NOTE"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode \
    --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 2
  cmake --version 2>&1 | head -n 1
} | tee "$OUT/env.log"
pack_logs

# --- stages ---------------------------------------------------------------------------------------
# Each stage_X sets NOTE (key numbers) and may set STATUS; it returns non-zero on failure.

stage_build() {
  # shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
  run_logged build.log cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGEMM_BUILD_BENCH=ON -DGGEMM_PTXAS_VERBOSE=ON -DCMAKE_PREFIX_PATH=/tmp/deps/usr $CMAKE_ARGS
  local rc=$?
  if ((rc != 0)); then
    NOTE="configure failed: $(grep -m1 -iE "error" "$OUT/build.log" | cut -c1-200)"
    return "$rc"
  fi
  run_logged build.log cmake --build "$BUILD_DIR" -j16
  rc=$?
  local warnings spills
  warnings=$(grep -ciE "warning" "$OUT/build.log")
  spills=$(grep -cE "[1-9][0-9]* bytes spill (stores|loads)" "$OUT/build.log")
  NOTE="$warnings warning lines, $spills ptxas lines with spills"
  ((rc != 0)) && NOTE="build failed: $(grep -m1 -E "error|FAILED" "$OUT/build.log" | cut -c1-200); $NOTE"
  return "$rc"
}

stage_test() {
  # The GPU cases run once, through their binary below; CTest runs everything else (its gpu/
  # entries are the same cases one by one, which would double the stage's time).
  run_logged test.log ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -E '^gpu/'
  local rc_ctest=$?
  local ctest_line
  ctest_line=$(grep -E "tests passed|No tests were found" "$OUT/test.log" | tail -n 1)
  local gpu_bin rc_gpu=1 gpu_line="ggemm_gpu_tests not built"
  gpu_bin=$(find_binary ggemm_gpu_tests)
  if [ -n "$gpu_bin" ]; then
    run_logged gpu_tests.log "$gpu_bin"
    rc_gpu=$?
    gpu_line="gpu: $(doctest_line "$OUT/gpu_tests.log")"
  fi
  NOTE="ctest: ${ctest_line:-?}; $gpu_line"
  ((rc_ctest == 0 && rc_gpu == 0))
}

stage_sanitize() {
  local gpu_bin
  gpu_bin=$(find_binary ggemm_gpu_tests)
  if [ -z "$gpu_bin" ]; then
    NOTE="ggemm_gpu_tests not built"
    return 1
  fi
  local tool rc=0 tool_rc summary cases
  NOTE=""
  for tool in $SANITIZE_TOOLS; do
    run_logged "sanitize_$tool.log" compute-sanitizer --tool "$tool" --error-exitcode 86 --print-limit 100 \
      "$gpu_bin" "--test-case=$SANITIZE_FILTER"
    tool_rc=$?
    summary=$(grep -E "(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY" "$OUT/sanitize_$tool.log" | tail -n 1 |
      sed -E 's/^=+ *//')
    cases=$(doctest_line "$OUT/sanitize_$tool.log")
    # A filter that matches nothing passes trivially: that is not a clean sanitizer run.
    if [[ "$cases" =~ test\ cases:\ 0\ \| ]]; then
      summary="no test case matched '$SANITIZE_FILTER'"
      ((tool_rc == 0)) && tool_rc=3
    fi
    NOTE+="$tool: ${summary:-no summary} (rc $tool_rc, ${cases:-no doctest line}); "
    ((tool_rc != 0)) && rc=$tool_rc
  done
  NOTE=${NOTE%; }
  return "$rc"
}

stage_bench() {
  local bin="$BUILD_DIR/bench/ggemm_bench"
  built "$bin" || return 1
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
  run_logged bench.log "$bin" --benchmark_out="$OUT/bench.json" --benchmark_out_format=json $BENCH_ARGS
  local rc=$?
  if [ -s "$OUT/bench.json" ]; then
    python3 bench/summarize_bench.py "$OUT/bench.json" >"$SCRATCH/bench_table.txt" 2>&1
    cp "$SCRATCH/bench_table.txt" "$OUT/bench_table.txt"
    NOTE=$(python3 bench/summarize_bench.py "$OUT/bench.json" --oneline 2>&1)
    # Benchmarks that skipped with an error leave the binary's exit code at 0.
    [[ "$NOTE" =~ ,\ 0\ errors ]] || { ((rc == 0)) && rc=1; }
  else
    NOTE="no bench.json written"
    ((rc == 0)) && rc=1
  fi
  return "$rc"
}

stage_backward() {
  local lib="$BUILD_DIR/libggemm.so"
  built "$lib" || return 1
  # shellcheck disable=SC2086  # BACKWARD_ARGS is a list of arguments
  SHOW_LINES=30 run_logged backward.log env PYTHONUNBUFFERED=1 python3 bench/backward.py --lib "$lib" \
    --out "$OUT" $BACKWARD_ARGS
  local rc=$?
  NOTE="dgrad N-major: $(grep -cE '^\| [a-z0-9_]+ \|' "$OUT/backward.log" 2>/dev/null) case rows (table in backward.log)"
  return "$rc"
}

# The weight gradient against torch._grouped_mm's K-grouped form, DeepGEMM's k-grouped kernel
# (when importable) and one dense GEMM, on every case of bench/moe_shapes.json.
stage_wgrad() {
  local lib="$BUILD_DIR/libggemm.so"
  built "$lib" || return 1
  # shellcheck disable=SC2086  # WGRAD_ARGS is a list of arguments
  SHOW_LINES=30 run_logged wgrad.log env PYTHONUNBUFFERED=1 python3 bench/wgrad.py --lib "$lib" --out "$OUT" $WGRAD_ARGS
  local rc=$?
  NOTE=$(grep -E "^geomean|^FAILED" "$OUT/wgrad.log" | tr '\n' ' ')
  return "$rc"
}

stage_glu() {
  local lib="$BUILD_DIR/libggemm.so"
  built "$lib" || return 1
  # shellcheck disable=SC2086  # GLU_ARGS is a list of arguments
  SHOW_LINES=12 run_logged glu.log env PYTHONUNBUFFERED=1 python3 bench/glu.py --lib "$lib" --out "$OUT" ${GLU_ARGS:-}
  local rc=$?
  NOTE=$(grep -E "^geomean|^FAILED" "$OUT/glu.log" | tr '\n' ' ')
  return "$rc"
}

# Nsight Compute over one case: the plan's kernel and DeepGEMM's (when importable), once each
# (bench/profile_case.py); the sections' text in profile.log, the report in profile.ncu-rep.
stage_profile() {
  local lib="$BUILD_DIR/libggemm.so"
  built "$lib" || return 1
  if ! command -v ncu >/dev/null; then
    NOTE="ncu not found"
    return 1
  fi
  # shellcheck disable=SC2086  # PROFILE_ARGS is a list of arguments
  SHOW_LINES=20 run_logged profile.log env PYTHONUNBUFFERED=1 ncu --clock-control none --nvtx \
    --nvtx-include "profile/" --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section LaunchStats --section Occupancy --export "$OUT/profile" --force-overwrite \
    python3 bench/profile_case.py --lib "$lib" ${PROFILE_ARGS:---case qwen3_fc2_L128}
  local rc=$?
  NOTE="$(grep -cE "Context [0-9]+, Stream [0-9]+" "$OUT/profile.log") kernels profiled; $(grep -m1 "^profiled" "$OUT/profile.log")"
  return "$rc"
}

stage_peers() {
  local lib="$BUILD_DIR/libggemm.so"
  built "$lib" || return 1
  # shellcheck disable=SC2086  # PEERS_ARGS is a list of arguments
  SHOW_LINES=40 run_logged peers.log env PYTHONUNBUFFERED=1 python3 bench/peers.py --lib "$lib" --out "$OUT" $PEERS_ARGS
  local rc=$?
  NOTE=$(python3 - "$OUT/peers.json" <<'EOF' 2>&1
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as e:
    print("no peers.json (%s)" % type(e).__name__); sys.exit()
s = doc["summary"]
f = lambda v: "-" if v is None else "%.3f" % v
parts = ["geomean ggemm/grouped_mm %s, ggemm/dense %s over %d/%d cases"
         % (f(s["ggemm_over_grouped_mm"]), f(s["ggemm_over_dense"]), s["cases_with_ratio"], s["cases"])]
if s.get("deepgemm_cases"):
    parts.append("ggemm/deepgemm %s over %d cases" % (f(s["ggemm_over_deepgemm"]), s["deepgemm_cases"]))
for c in doc["cases"]:
    if "full_epilogue_overhead" in c:
        parts.append("full epilogue %+.1f%%" % (100 * c["full_epilogue_overhead"]))
if s["check_failures"]:
    parts.append("CHECK FAILED: " + ", ".join(s["check_failures"]))
if s["cases_with_errors"]:
    parts.append("errors in: " + ", ".join(s["cases_with_errors"]))
if not doc.get("complete"):
    parts.append("INCOMPLETE")
print("; ".join(parts))
EOF
)
  return "$rc"
}

stage_steady() {
  local lib="$BUILD_DIR/libggemm.so"
  built "$lib" || return 1
  # The clock samples stay in $SCRATCH: only steady.json and the log come back.
  # shellcheck disable=SC2086  # STEADY_ARGS is a list of arguments
  SHOW_LINES=20 run_logged steady.log env PYTHONUNBUFFERED=1 python3 bench/steady_clock.py --lib "$lib" \
    --out "$SCRATCH/steady" $STEADY_ARGS
  local rc=$?
  [ -s "$SCRATCH/steady/steady.json" ] && cp "$SCRATCH/steady/steady.json" "$OUT/steady.json"
  NOTE=$(python3 - "$OUT/steady.json" <<'EOF' 2>&1
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as e:
    print("no steady.json (%s)" % type(e).__name__); sys.exit()
by = {}
for w in doc["windows"]:
    by.setdefault(w["case"], {})[w["op"]] = w
parts = []
for case, ops in by.items():
    g, d = ops.get("ggemm", {}), ops.get("dense", {})
    if g.get("clock_mhz") and d.get("clock_mhz"):
        parts.append("%s ggemm/dense %.3f at %.0f/%.0f MHz" % (
            case, g["tflops"] / d["tflops"], g["clock_mhz"], d["clock_mhz"]))
print("; ".join(parts) or "no clock samples")
EOF
)
  return "$rc"
}

# The Python package, built from ./python with the machine's own scikit-build-core, nanobind,
# CMake and jax (no network: --no-build-isolation), installed into a scratch --target folder;
# then its tests, the MoE example and the host-time measurement (python_host_time.json).
stage_python() {
  local site="$SCRATCH/site" rc_install rc_tests rc_example rc_bench
  CMAKE_BUILD_PARALLEL_LEVEL=16 run_logged python_install.log python3 -m pip install -v \
    --no-build-isolation --no-deps --no-cache-dir --target "$site" ./python
  rc_install=$?
  if ((rc_install != 0)); then
    NOTE="pip install failed: $(grep -m1 -iE "error" "$OUT/python_install.log" | cut -c1-200)"
    return "$rc_install"
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" XLA_PYTHON_CLIENT_PREALLOCATE=false
  (cd python && run_logged python_tests.log python3 -m pytest -ra -q tests)
  rc_tests=$?
  run_logged python_example.log python3 examples/python/moe_layer.py
  rc_example=$?
  SHOW_LINES=20 run_logged python_host_time.log python3 bench/python_host_time.py \
    --out "$OUT/python_host_time.json"
  rc_bench=$?
  local counts check block
  counts=$(grep -E "^(=+ )?[0-9]+ (passed|failed)" "$OUT/python_tests.log" | tail -n 1 | tr -d '=')
  check=$(grep -m1 -oE "relative error [^,]+" "$OUT/python_example.log")
  block=$(grep -m1 -oE "ggemm/grouped_mm [0-9.]+" "$OUT/python_example.log")
  NOTE="pytest:${counts:- none}; example: ${check:-no check} ${block:+($block)}"
  ((rc_tests == 0 && rc_example == 0 && rc_bench == 0))
}

# --- run ------------------------------------------------------------------------------------------
ROWS=()
OVERALL=0
BUILD_FAILED=0
for stage in $STAGE_LIST; do
  if ((BUILD_FAILED)); then
    ROWS+=("$stage|skipped|0.0|the build failed")
    continue
  fi
  left=$((DEADLINE_S - $(date +%s)))
  if ((left < 30)); then
    ROWS+=("$stage|skipped|0.0|deadline: ${left}s left")
    OVERALL=1
    continue
  fi
  cap_var="${stage^^}_TIMEOUT_S"
  cap=${!cap_var:-${DEFAULT_CAP[$stage]}}
  STAGE_END_S=$(($(date +%s) + (cap < left ? cap : left)))
  echo
  echo "=== $stage (limit $((STAGE_END_S - $(date +%s)))s) ==="
  NOTE=""
  t0=$(now_ms)
  "stage_$stage"
  rc=$?
  t1=$(now_ms)
  if ((rc == 0)); then
    status=ok
  elif ((rc == 124 || rc == 137)); then
    status=TIMEOUT
  else
    status="FAIL($rc)"
  fi
  ((rc != 0)) && OVERALL=1
  [ "$stage" = build ] && ((rc != 0)) && BUILD_FAILED=1
  ROWS+=("$stage|$status|$(((t1 - t0) / 1000)).$((((t1 - t0) % 1000) / 100))|$NOTE")
  pack_logs
done

# --- summary, printed last ------------------------------------------------------------------------
{
  if [ -s "$SCRATCH/bench_table.txt" ]; then
    echo
    echo "=== ggemm_bench (median of event-timed iterations) ==="
    cat "$SCRATCH/bench_table.txt"
  fi
  if [ -s "$OUT/peers.md" ]; then
    echo
    echo "=== peers ==="
    grep -E "^\||^Full epilogue|^valid rows|^deepgemm_masked|^ERROR|^CHECK|^deepgemm on|^ggemm/deepgemm|^ggemm_" "$OUT/peers.md"
  fi
  echo
  echo "=== gpu_run.sh summary ==="
  echo "commit $COMMIT | ${GPU_LINE:-no nvidia-smi} | $(date -u +%Y-%m-%dT%H:%M:%SZ) | total $(($(date +%s) - START_S))s"
  printf '%-9s %-10s %8s  %s\n' stage status seconds "key numbers"
  for row in "${ROWS[@]}"; do
    IFS='|' read -r r_stage r_status r_secs r_note <<<"$row"
    printf '%-9s %-10s %8s  %s\n' "$r_stage" "$r_status" "$r_secs" "$r_note"
  done
} >"$SCRATCH/summary.txt"
cp "$SCRATCH/summary.txt" "$OUT/summary.txt"
pack_logs
[ -f "$LOG_TAR" ] && gzip -f "$LOG_TAR"
rm -rf "$SCRATCH"
cat "$OUT/summary.txt"
exit $OVERALL
