#!/usr/bin/env bash
# One command for the GPU machine, from the repo root:
#
#   bash tools/device_check.sh            (carry .vendor, and .kcache if you have one)
#
# Steps (select with STEPS="report tests conformance bench", the default; "sanitize" on request):
#   report       GPU and package versions, then `python3 -m gparray` (report + self-check)
#   tests        python3 -m pytest -q -n $JOBS -p randomly --randomly-seed=S --timeout 300 $TESTS,
#                once per seed in $SEEDS (both tiers; random orders; a hang fails with a dump);
#                the gpu_exclusive tests run first in one process of their own, the rest in
#                parallel without them (--durations=15 lists the slowest setup/call phases)
#   sanitize     $SANITIZE_FILES (every kernel family and planner strategy; less the tests
#                that fault on purpose or fill the device) under `compute-sanitizer --tool
#                memcheck` with GPARRAY_NO_CACHING=1 (one process; child processes followed); then
#                `--tool racecheck` on reductions and scans.
#                Passes only with 0 errors reported (logs: sanitize-*.log).
#   conformance  conformance/run.sh on $CONFORMANCE_FILES (array-api-tests from .vendor)
#   bench        python3 bench/bench.py --json $OUT/bench.json $BENCH_ARGS
#   multigpu     (not in the default; for a machine with two GPUs) the two-device tests in one
#                process: $MULTIGPU_TESTS -k "$MULTIGPU_K" (the whole of
#                tests/test_multi_gpu_gpu.py and the other files' two-device tests), junit XML
#                in $OUT/tests-multigpu.xml; then python3 bench/bench.py --cases multigpu
#                (--json $OUT/bench-multigpu.json). With fewer than two GPUs the tests skip
#                with the reason and the bench prints why it has no rows.
# Each step logs to $OUT/<step>.log (plus tests.xml, conformance.json, bench.json); a failed
# step does not stop the next one; a compact summary comes last. The failing tests'
# tracebacks go to $OUT/tests-failures.txt (tools/junit_failures.py); when $OUT then holds
# more than OUT_MAX_FILES (8: what the device tool brings back) files, the rest are packed
# into $OUT/logs.tgz (tools/pack_out.sh). Exit status 0 only if every step passed.
#
# Environment (all optional):
#   OUT                 where logs go (default ./device-out)
#   STEPS               which steps, in this order (default: report tests conformance bench)
#   GPARRAY_CACHE_DIR   kernel cache; default $PWD/.kcache when that folder was carried, else
#                       .vendor/kcache.tgz (if carried) unpacked into $PWD/.kcache
#   CONFORMANCE_FILES   suite files (default: creation, data types, dlpack, inspection,
#                       constants, array object, has_names)
#   MAX_EXAMPLES        Hypothesis examples per conformance test (run.sh default: 100)
#   JOBS                pytest-xdist workers for tests and conformance (default 12; 0 = off)
#   SEEDS               pytest-randomly seeds of the tests step (default: two random ones)
#   TESTS               test files or folders of the tests step (default: tests)
#   TESTS_MARK          -m expression of the tests step's parallel run (default "not gpu_exclusive";
#                       "gpu and not gpu_exclusive": the GPU tier alone, without the CPU tier's
#                       tests, which .ci/run runs, among them every kernel instance's NVRTC build)
#   SANITIZE_FILES      test files of the memcheck pass (the whole GPU tier takes > 10 min)
#   SANITIZE_ARGS       extra pytest arguments of the memcheck pass (split on spaces: no quoting)
#   SANITIZE_K          a -k expression the memcheck pass also requires (e.g. "not large")
#   MULTIGPU_TESTS      test files of the multigpu step; MULTIGPU_K its -k expression
#   TESTS_ARGS / CONFORMANCE_ARGS / BENCH_ARGS / MULTIGPU_TESTS_ARGS / MULTIGPU_BENCH_ARGS
#                       extra arguments for each step
#   BUDGET_S            wall seconds for all steps together (default 560: the device call
#                       allows 600); each step also has its own cap:
#   REPORT_TIMEOUT (90) TESTS_TIMEOUT (300) CONFORMANCE_TIMEOUT (300) BENCH_TIMEOUT (300)
#   SANITIZE_TIMEOUT (420) MULTIGPU_TIMEOUT (420)
#   GPARRAY_PY_LAUNCH=1 skip building the C extension and launch from Python
#   SAVE_KCACHE=1       also pack the kernel cache into $OUT/kcache.tar.gz (to carry next time)
set -o pipefail
export PYTHONUNBUFFERED=1

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD
OUT=${OUT:-$ROOT/device-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STEPS=${STEPS:-report tests conformance bench}
JOBS=${JOBS:-12}
SEEDS=${SEEDS:-"$RANDOM $RANDOM"}
TESTS=${TESTS:-tests}
# the memcheck pass: every kernel family and planner strategy (reductions, scans, searching,
# contiguous/strided/tiled/rows elementwise, copies, creation), small enough for ~5 minutes
SANITIZE_FILES=${SANITIZE_FILES:-"tests/test_reductions_gpu.py tests/test_elementwise_variants_gpu.py tests/test_foundation_gpu.py tests/test_memory_safety_gpu.py tests/test_indexing_gpu.py tests/test_bounds_check_gpu.py tests/test_manipulation_gpu.py"}
BUDGET_S=${BUDGET_S:-560}
# the multigpu step: the whole two-GPU file, and the two-device tests of the other files
# (-k matches test and module names; tests/test_device_check_tools.py checks that every
# term still names a test)
MULTIGPU_TESTS=${MULTIGPU_TESTS:-"tests/test_multi_gpu_gpu.py tests/test_streams_gpu.py tests/test_transfer_staging_gpu.py tests/test_user_kernels_gpu.py tests/test_readme_examples_gpu.py"}
MULTIGPU_K=${MULTIGPU_K:-"test_multi_gpu_gpu or test_with_stream_of_another_device_switches_device or test_to_device_peer_copy_on_a_stream or test_staged_transfers_on_two_devices or test_launches_on_the_arrays_device or test_devices_example"}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

if [[ -n "${GPARRAY_CACHE_DIR:-}" ]]; then
    case "$GPARRAY_CACHE_DIR" in /*) ;; *) GPARRAY_CACHE_DIR=$ROOT/$GPARRAY_CACHE_DIR ;; esac
    export GPARRAY_CACHE_DIR
    mkdir -p "$GPARRAY_CACHE_DIR"
elif [[ -d "$ROOT/.kcache" ]]; then
    export GPARRAY_CACHE_DIR=$ROOT/.kcache
elif [[ -f "$ROOT/.vendor/kcache.tgz" ]]; then
    # a packed kernel cache carried in .vendor (SAVE_KCACHE=1 of an earlier run): unpack it
    mkdir -p "$ROOT/.kcache" && tar -xzf "$ROOT/.vendor/kcache.tgz" -C "$ROOT/.kcache" \
        && export GPARRAY_CACHE_DIR=$ROOT/.kcache \
        && echo "== kernel cache: $(ls "$ROOT/.kcache" | wc -l) files from .vendor/kcache.tgz"
fi

CONFORMANCE_FILES=${CONFORMANCE_FILES:-test_creation_functions.py test_data_type_functions.py test_dlpack.py test_inspection_functions.py test_constants.py test_array_object.py}

declare -A RC
XDIST_ARGS=""
if (( JOBS > 0 )) && python3 -c 'import xdist' 2>/dev/null; then
    XDIST_ARGS="-n $JOBS"
fi
export ROOT OUT XDIST_ARGS CONFORMANCE_FILES SEEDS SANITIZE_FILES TESTS MULTIGPU_TESTS MULTIGPU_K

# pytest-randomly, pytest-timeout and the optional libraries of some GPU tests (array-api-extra,
# cubed, dask.distributed and their dependencies): installed, or carried as wheels in .vendor/
# and .vendor/cubed-wheels/; tools/test_site.py installs those this Python lacks (--no-deps)
if compgen -G "$ROOT/.vendor/*.whl" >/dev/null || compgen -G "$ROOT/.vendor/cubed-wheels/*.whl" >/dev/null; then
    python3 "$ROOT/tools/test_site.py" --site /tmp/gp-test-site >"$OUT/test_site.log" 2>&1 \
        || echo "== tools/test_site.py failed (see test_site.log): the tests that need those libraries skip"
    echo "== test site: $(grep -c installing "$OUT/test_site.log") wheel(s) installed into /tmp/gp-test-site"
    [[ -d /tmp/gp-test-site ]] && export PYTHONPATH="/tmp/gp-test-site:$PYTHONPATH"
fi

# the optional C extension (compiled launches and elementwise fast paths), built in place
if [[ "${GPARRAY_PY_LAUNCH:-0}" == "0" ]]; then
    if python3 setup.py -q build_ext --inplace >"$OUT/build_ext.log" 2>&1; then
        echo "== C extension: built ($(ls gparray/_native/_claunch*.so 2>/dev/null))"
    else
        echo "== C extension: NOT built (Python launch path); see build_ext.log"
    fi
fi

# step timeout: the smaller of the step's own cap and what is left of the budget
step_timeout() {
    local cap=$1 left=$((BUDGET_S - SECONDS - 15))
    (( left < 10 )) && left=10
    (( cap < left )) && echo "$cap" || echo "$left"
}

run_step() {  # run_step NAME CAP command...
    local name=$1 cap=$2; shift 2
    local t; t=$(step_timeout "$cap")
    echo
    echo "=================== $name (timeout ${t}s, at ${SECONDS}s) ==================="
    timeout -k 10 "$t" bash -c "$*" 2>&1 | tee -a "$OUT/$name.log"
    local rc=$?
    (( rc == 124 || rc == 137 )) && echo "device_check: step $name timed out after ${t}s" | tee -a "$OUT/$name.log"
    RC[$name]=$rc
    echo "=================== $name: exit $rc (at ${SECONDS}s) ==================="
}

step_report() {
    echo "date: $(date -Is)  host: $(hostname)  repo: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,temperature.gpu --format=csv 2>/dev/null
    python3 - <<'PY'
import importlib, sys
print("python", sys.version.split()[0], sys.executable)
for name in ("numpy", "cupy", "torch", "hypothesis", "pytest", "xdist"):
    try:
        m = importlib.import_module(name)
        print(f"{name:<11}", getattr(m, "__version__", "?"))
    except Exception as exc:
        print(f"{name:<11} missing ({type(exc).__name__}: {exc})")
PY
    echo "GPARRAY_CACHE_DIR=${GPARRAY_CACHE_DIR:-<unset>}"
    echo "--- python3 -m gparray"
    python3 -m gparray
}

step_tests() {
    local rc=0 seed
    for seed in $SEEDS; do
        # the gpu_exclusive tests (they fill the device) first, alone: run among the others,
        # one waiting for the GPU closes the readers/writer gate of tests/conftest.py, and
        # every worker then idles until the longest test in flight ends (about 100 s per
        # seed in the 2026-11-27 runs, read from the junit times)
        echo "--- pytest, seed $seed: the gpu_exclusive tests, one process"
        # shellcheck disable=SC2086
        python3 -m pytest -q -p no:xdist -p no:cacheprovider -p randomly --randomly-seed="$seed" \
            --timeout 300 -rfE -m gpu_exclusive --junitxml="$OUT/tests-$seed-exclusive.xml" $TESTS \
            ${TESTS_ARGS:-}
        case $? in 0|5) ;; *) rc=1 ;; esac     # 5: none selected (TESTS without them)
        echo "--- pytest, random order, seed $seed: the rest"
        # shellcheck disable=SC2086
        python3 -m pytest -q $XDIST_ARGS -p no:cacheprovider -p randomly --randomly-seed="$seed" \
            --timeout 300 -rfE --durations=15 -m "${TESTS_MARK:-not gpu_exclusive}" --junitxml="$OUT/tests-$seed.xml" \
            $TESTS ${TESTS_ARGS:-} || rc=1
    done
    return $rc
}

step_sanitize() {
    local rc=0 errs
    rm -f /tmp/gp-memcheck.*.log
    echo "--- memcheck, GPARRAY_NO_CACHING=1: $SANITIZE_FILES"
    # shellcheck disable=SC2086
    # one process: under the sanitizer, xdist workers did not get going in 4 minutes
    GPARRAY_NO_CACHING=1 timeout -k 10 "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck \
        --report-api-errors no --target-processes all --print-limit 50 --log-file /tmp/gp-memcheck.%p.log \
        python3 -m pytest -q -p no:xdist -p no:cacheprovider -p no:randomly -m gpu \
        -k "not fault and not launch_blocking and not device_is_full${SANITIZE_K:+ and ($SANITIZE_K)}" \
        $SANITIZE_FILES ${SANITIZE_ARGS:-} || rc=1
    cat /tmp/gp-memcheck.*.log > "$OUT/sanitize-memcheck.log" 2>/dev/null
    errs=$(grep -h "ERROR SUMMARY" /tmp/gp-memcheck.*.log | awk '{s += $4} END {print s + 0}')
    echo "memcheck: $(grep -l "ERROR SUMMARY" /tmp/gp-memcheck.*.log 2>/dev/null | wc -l) processes, $errs errors"
    (( errs == 0 )) || { rc=1; grep -h -m3 -A6 "Invalid\|Program hit" /tmp/gp-memcheck.*.log | head -40; }
    echo "--- racecheck, reductions and scans"
    timeout -k 10 "${RACECHECK_TIMEOUT:-150}" compute-sanitizer --tool racecheck --print-limit 50 \
        --log-file "$OUT/sanitize-racecheck.log" python3 -m pytest -q -p no:cacheprovider -p no:randomly \
        tests/test_reductions_gpu.py -k "non_contiguous or cumulative_sum_prod or argmax_argmin" || rc=1
    errs=$(grep -h "ERROR SUMMARY" "$OUT/sanitize-racecheck.log" | awk '{s += $4} END {print s + 0}')
    grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" "$OUT/sanitize-racecheck.log"
    echo "racecheck: $errs errors"
    (( errs == 0 )) || rc=1
    return $rc
}

step_conformance() {
    # shellcheck disable=SC2086
    REPORT="$OUT/conformance.json" bash "$ROOT/conformance/run.sh" $CONFORMANCE_FILES $XDIST_ARGS ${CONFORMANCE_ARGS:-}
}

step_bench() {
    # shellcheck disable=SC2086
    python3 "$ROOT/bench/bench.py" --json "$OUT/bench.json" ${BENCH_ARGS:-}
}

step_multigpu() {
    local rc=0 n timeout_args=""
    n=$(python3 -c 'from gparray._core import _backend; print(_backend.device_count())' 2>/dev/null || echo 0)
    echo "--- visible CUDA devices: $n"
    nvidia-smi topo -m 2>/dev/null | head -n 8      # how the GPUs are linked (NVLink, PCIe)
    (( n >= 2 )) || echo "multigpu: fewer than two CUDA devices: the tests skip, the bench says why"
    python3 -c 'import pytest_timeout' 2>/dev/null && timeout_args="--timeout 300"
    echo "--- pytest, one process: $MULTIGPU_TESTS -k \"$MULTIGPU_K\""
    # shellcheck disable=SC2086
    python3 -m pytest -q -p no:xdist -p no:cacheprovider -p no:randomly $timeout_args -rfEs \
        --junitxml="$OUT/tests-multigpu.xml" -k "$MULTIGPU_K" $MULTIGPU_TESTS ${MULTIGPU_TESTS_ARGS:-} || rc=1
    echo "--- bench --cases multigpu"
    # shellcheck disable=SC2086
    python3 "$ROOT/bench/bench.py" --cases multigpu --no-startup --json "$OUT/bench-multigpu.json" \
        ${MULTIGPU_BENCH_ARGS:-} || rc=1
    return $rc
}

export -f step_report step_tests step_sanitize step_conformance step_bench step_multigpu

rm -f "$OUT"/{report,tests,sanitize,conformance,bench,multigpu}.log "$OUT"/tests*.xml "$OUT"/conformance.json \
    "$OUT"/bench.json "$OUT"/bench-multigpu.json
for step in $STEPS; do
    case $step in
        report)      run_step report "${REPORT_TIMEOUT:-90}" step_report ;;
        tests)       run_step tests "${TESTS_TIMEOUT:-300}" step_tests ;;
        sanitize)    run_step sanitize "${SANITIZE_TIMEOUT:-420}" step_sanitize ;;
        conformance) run_step conformance "${CONFORMANCE_TIMEOUT:-300}" step_conformance ;;
        bench)       run_step bench "${BENCH_TIMEOUT:-300}" step_bench ;;
        multigpu)    run_step multigpu "${MULTIGPU_TIMEOUT:-420}" step_multigpu ;;
        *)           echo "device_check: unknown step '$step' (report tests sanitize conformance bench multigpu)"
                     RC[$step]=2 ;;
    esac
done

if [[ "${SAVE_KCACHE:-0}" == 1 && -n "${GPARRAY_CACHE_DIR:-}" && -d "$GPARRAY_CACHE_DIR" ]]; then
    tar -czf "$OUT/kcache.tar.gz" -C "$GPARRAY_CACHE_DIR" . && echo "device_check: kernel cache packed into $OUT/kcache.tar.gz"
fi

# ----------------------------------------------------------------------------- summary
echo
echo "########################## device_check summary ##########################"
for step in $STEPS; do
    printf '%s=%s ' "$step" "${RC[$step]:-?}"
done
echo " (exit codes; total ${SECONDS}s; logs in $OUT)"
if [[ -f "$OUT/report.log" ]]; then
    echo "--- report"
    grep -m1 -E '^\s*\[0\] ' "$OUT/report.log"
    grep -E '^(no CUDA device was found|self-check:)|FAIL' "$OUT/report.log" | head -n 12
fi
if [[ -f "$OUT/tests.log" ]]; then
    echo "--- tests"
    grep -E '^(FAILED|ERROR) ' "$OUT/tests.log" | head -n 15
    n=$(grep -cE '^(FAILED|ERROR) ' "$OUT/tests.log")
    (( n > 15 )) && echo "... $((n - 15)) more FAILED/ERROR lines in tests.log"
    grep -E '[0-9]+ (passed|failed|errors?|skipped)|no tests ran' "$OUT/tests.log"
fi
if [[ -f "$OUT/sanitize.log" ]]; then
    echo "--- sanitize"
    grep -E '^(memcheck|racecheck):|[0-9]+ (passed|failed)' "$OUT/sanitize.log"
fi
if [[ " $STEPS " == *" conformance "* ]]; then
    echo "--- conformance ($CONFORMANCE_FILES)"
    if [[ -f "$OUT/conformance.json" ]]; then
        python3 "$ROOT/conformance/summarize.py" "$OUT/conformance.json" --max-failures 15
    else
        echo "no JSON report; the end of conformance.log:"
        tail -n 8 "$OUT/conformance.log" 2>/dev/null
    fi
fi
if [[ -f "$OUT/bench.log" ]]; then
    echo "--- bench"
    if grep -q '^ratios are gparray time' "$OUT/bench.log"; then
        awk '/^bench: .*median of/ {buf=""; keep=1} keep {buf = buf $0 "\n"} END {printf "%s", buf}' "$OUT/bench.log"
    else
        tail -n 8 "$OUT/bench.log"
    fi
fi

if [[ -f "$OUT/multigpu.log" ]]; then
    echo "--- multigpu"
    grep -m1 -E '^--- visible CUDA devices' "$OUT/multigpu.log"
    grep -E '^(FAILED|ERROR) ' "$OUT/multigpu.log" | head -n 15
    grep -E '[0-9]+ (passed|failed|errors?|skipped)|no tests ran' "$OUT/multigpu.log"
    grep -E '^\[multigpu\]' "$OUT/multigpu.log"
    awk '/^bench: .*median of/ {buf=""; keep=1} keep {buf = buf $0 "\n"} END {printf "%s", buf}' "$OUT/multigpu.log"
fi

# The failing tests' tracebacks, from the junit XML of every seed (the log's -rfE lines
# name them; this has the why), and, where $OUT holds more files than the device tool brings
# back (8), everything but the summaries packed into logs.tgz.
if compgen -G "$OUT/tests-*.xml" >/dev/null; then
    python3 "$ROOT/tools/junit_failures.py" "$OUT"/tests-*.xml >"$OUT/tests-failures.txt" 2>&1 || true
fi
bash "$ROOT/tools/pack_out.sh" "$OUT" "${OUT_MAX_FILES:-8}"

for step in $STEPS; do
    [[ "${RC[$step]:-1}" == 0 ]] || exit 1
done
exit 0
