#!/usr/bin/env bash
# scikit-learn's and SciPy's own array-API tests with gparray as the namespace, then the same
# tests with CuPy as the reference. One command for the GPU machine, from the repo root:
#
#   PART=sklearn bash ecosystem/run.sh             (carry .vendor: array_api_strict's wheel)
#   PART="scipy-fft scipy-cluster" bash ecosystem/run.sh
#   PART=scipy-signal@2/3 bash ecosystem/run.sh    (the 2nd of 3 shards of a part)
#   PART=check bash ecosystem/run.sh               (versions; collection counts only)
#   PART=list bash ecosystem/run.sh                (the parts, then exit)
#
# Parts (PART, space separated; each may end in @i/n to run one shard of n):
#   sklearn          pytest --pyargs sklearn -k "$SKLEARN_K" (default: array_api), the way
#                    scikit-learn's docs run its array-API tests; or one of its pieces:
#   sklearn-common   sklearn.tests (the estimator checks)    sklearn-utils    sklearn.utils
#   sklearn-metrics  sklearn.metrics                          sklearn-other    the rest
#   scipy-<module>   pytest --pyargs scipy.<module> -m "$SCIPY_MARK" (default:
#                    "array_api_backends and not slow": the tests of the xp fixture, as
#                    SciPy's `spin test -b <backend>`, whose default mode is "not slow")
#   scipy-small      scipy.cluster scipy.differentiate scipy.integrate scipy.optimize scipy.spatial
#   scipy-all        the ten modules of issue 16: special stats fft signal cluster ndimage
#                    integrate optimize differentiate spatial (too long for one call)
#   check            versions, GPU, the plugins' collection counts per backend; runs no test
# Every part runs once per backend of $BACKENDS (default "gparray cupy"), each in its own
# pytest process with GP_ECO_BACKENDS=<backend> and the plugins of ecosystem/ (-p
# gp_eco_common -p gp_sklearn_plugin / gp_scipy_plugin), so each count is one library's.
#
# $OUT gets (at most 5 files, as the device call brings back 8):
#   eco-run.log        this script's output
#   eco-results.tgz    per run <part>.<backend>.xml (junit), .log (pytest -v), .rc
#   eco-summary.md     ecosystem/summarize.py: per-file table, gparray beside CuPy, and the
#   eco-summary.json   tests that fail with one and not the other
#   kcache.tgz         gparray's kernel cache (SAVE_KCACHE=1), to carry as .vendor/kcache.tgz
#
# Environment (all optional):
#   BACKENDS         namespaces to run, first = subject (default "gparray cupy")
#   BUDGET_S         wall seconds for the whole script (default 540; a device call allows 600).
#                    Each run gets an equal share of what is left; at its limit pytest gets
#                    SIGINT (it still writes its junit XML), 45 s later SIGKILL (then the
#                    summary reads the -v log).
#   JOBS             pytest-xdist workers (default 8; 0 = none; none without pytest-xdist)
#   TEST_TIMEOUT     per-test limit of pytest-timeout, if installed (default 300)
#   SKLEARN_K        -k expression of the sklearn parts (default array_api)
#   SCIPY_MARK       -m expression of the scipy parts (default "array_api_backends and not slow")
#   GP_ECO_SCIPY_CPU_ONLY=run   also run SciPy's cpu_only tests on gparray (CuPy skips them)
#   WHEELS_DIR       wheels for missing modules (default .vendor; see ecosystem/README.md)
#   GPARRAY_CACHE_DIR  kernel cache (default .kcache, else .vendor/kcache.tgz unpacked there)
#   GPARRAY_PY_LAUNCH=1  do not build the C extension
#   PYTHON           interpreter (default python3)
# Arguments after the script's name go to every pytest run (e.g. -x, --lf, -k "not lstsq").
set -uo pipefail
export PYTHONUNBUFFERED=1

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD
PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/device-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
PARTS=${PART:-check}
BACKENDS=${BACKENDS:-gparray cupy}
BUDGET_S=${BUDGET_S:-540}
JOBS=${JOBS:-8}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
SKLEARN_K=${SKLEARN_K:-array_api}
SCIPY_MARK=${SCIPY_MARK:-array_api_backends and not slow}
WHEELS_DIR=${WHEELS_DIR:-$ROOT/.vendor}
SITE=${ECO_SITE:-/tmp/gp-eco-site}
SCIPY_ALL="special stats fft signal cluster ndimage integrate optimize differentiate spatial"

part_targets() {  # part name -> "suite targets..." (suite: sklearn or scipy); empty if unknown
    case $1 in
        sklearn)         echo "sklearn sklearn" ;;
        sklearn-common)  echo "sklearn sklearn.tests" ;;
        sklearn-utils)   echo "sklearn sklearn.utils" ;;
        sklearn-metrics) echo "sklearn sklearn.metrics" ;;
        sklearn-other)   echo "sklearn $("$PY" -c 'import pkgutil, sklearn; print(" ".join(
            "sklearn." + m.name for m in pkgutil.iter_modules(sklearn.__path__) if m.ispkg
            and m.name not in ("tests", "utils", "metrics", "externals", "__check_build", "_build_utils")))')" ;;
        scipy-all)       echo "scipy $(printf 'scipy.%s ' $SCIPY_ALL)" ;;
        scipy-small)     echo "scipy scipy.cluster scipy.differentiate scipy.integrate scipy.optimize scipy.spatial" ;;
        scipy-?*)        echo "scipy scipy.${1#scipy-}" ;;
        *)               echo "" ;;
    esac
}

if [[ "$PARTS" == list ]]; then
    sed -n '/^# Parts/,/^# Every part/p' "$ROOT/ecosystem/run.sh" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi

main() {
    local RES; RES=$(mktemp -d "${TMPDIR:-/tmp}/gp-eco.XXXXXX")
    echo "== ecosystem/run.sh: PART='$PARTS' BACKENDS='$BACKENDS' BUDGET_S=$BUDGET_S JOBS=$JOBS at $(date -Is)"
    echo "== repo $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); $(nvidia-smi -L 2>/dev/null | head -n 1 || echo 'nvidia-smi: none')"

    # --- missing test dependencies from carried wheels (module:wheel-prefix), into a private folder
    local need=() pair mod whl w
    for pair in array_api_strict:array_api_strict hypothesis:hypothesis sortedcontainers:sortedcontainers \
                pytest_timeout:pytest_timeout xdist:pytest_xdist execnet:execnet; do
        mod=${pair%%:*}; whl=${pair#*:}
        "$PY" -c "import $mod" 2>/dev/null && continue
        for w in "$WHEELS_DIR"/"$whl"-*.whl; do [[ -f "$w" ]] && need+=("$w"); done
    done
    if (( ${#need[@]} )); then
        echo "== installing into $SITE: $(for w in "${need[@]}"; do basename "$w"; done | tr '\n' ' ')"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "${need[@]}" \
            || echo "== WARNING: wheel install failed"
    fi
    export PYTHONPATH="$SITE:$ROOT:$ROOT/ecosystem${PYTHONPATH:+:$PYTHONPATH}"
    export SCIPY_ARRAY_API=1
    # SciPy's conftest imports jax and torch when they are installed: keep JAX off the GPU
    # (it would take most of its memory in every worker) and never preallocating.
    export JAX_PLATFORMS=${JAX_PLATFORMS:-cpu} XLA_PYTHON_CLIENT_PREALLOCATE=false

    # --- gparray's kernel cache and C extension (as tools/device_check.sh)
    if [[ -z "${GPARRAY_CACHE_DIR:-}" ]]; then
        if [[ ! -d "$ROOT/.kcache" && -f "$ROOT/.vendor/kcache.tgz" ]]; then
            mkdir -p "$ROOT/.kcache" && tar -xzf "$ROOT/.vendor/kcache.tgz" -C "$ROOT/.kcache"
        fi
        [[ -d "$ROOT/.kcache" ]] || mkdir -p "$ROOT/.kcache"
        export GPARRAY_CACHE_DIR=$ROOT/.kcache
    fi
    if [[ "${GPARRAY_PY_LAUNCH:-0}" == 0 ]]; then
        "$PY" setup.py -q build_ext --inplace >"$RES/build_ext.log" 2>&1 \
            && echo "== C extension built" || echo "== C extension NOT built (Python launch path)"
    fi

    # --- versions; which backends can make an array here
    "$PY" - "$BACKENDS" <<'PY'
import importlib, sys
for name in ("numpy", "cupy", "sklearn", "scipy", "pytest", "xdist", "pytest_timeout",
             "hypothesis", "array_api_strict", "torch", "jax", "gparray"):
    try:
        m = importlib.import_module(name)
        print(f"   {name:<17}{getattr(m, '__version__', '?'):<14}{m.__file__}")
    except Exception as exc:
        print(f"   {name:<17}missing ({type(exc).__name__}: {exc})")
print("   python          ", sys.version.split()[0], sys.executable)
PY
    local ok_backends=() b
    for b in $BACKENDS; do
        if "$PY" -c "import $b as xp; xp.asarray([1.0]) + 1" >"$RES/probe.$b.txt" 2>&1; then
            ok_backends+=("$b")
        else
            echo "== backend $b cannot make an array here; left out: $(tail -n 1 "$RES/probe.$b.txt")"
        fi
    done
    (( ${#ok_backends[@]} )) || { echo "== no backend left"; return 2; }

    local xdist=() tmo=()
    if (( JOBS > 0 )) && "$PY" -c "import xdist" 2>/dev/null; then
        xdist=(-n "$JOBS"); export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
    fi
    "$PY" -c "import pytest_timeout" 2>/dev/null && tmo=(--timeout "$TEST_TIMEOUT")

    # --- the runs: part x backend, each with an equal share of the time left
    local runs=() p
    for p in $PARTS; do for b in "${ok_backends[@]}"; do runs+=("$p|$b"); done; done
    local left=${#runs[@]} entry part shard spec suite targets sitepkg stem cap t0 rc sel
    for entry in "${runs[@]}"; do
        p=${entry%|*}; b=${entry#*|}
        part=${p%%@*}; shard=""; [[ "$p" == *@* ]] && shard=${p#*@}
        if [[ "$part" == check ]]; then
            spec="check"
        else
            spec=$(part_targets "$part")
            [[ -n "$spec" ]] || { echo "== unknown part '$part' (PART=list shows them)"; left=$((left - 1)); continue; }
        fi
        cap=$(( (BUDGET_S - SECONDS - 40) / left )); left=$((left - 1))
        if (( cap < 30 )); then echo "== $p / $b: no time left (${SECONDS}s used of $BUDGET_S)"; continue; fi
        if [[ "$spec" == check ]]; then  # collection only: do the plugins give this backend tests?
            for spec in "sklearn sklearn" "scipy $(printf 'scipy.%s ' $SCIPY_ALL)"; do
                suite=${spec%% *}; targets=${spec#* }
                [[ $suite == sklearn ]] && sel=(-k "$SKLEARN_K") || sel=(-m "$SCIPY_MARK")
                sitepkg=$("$PY" -c "import os, $suite; print(os.path.dirname(os.path.dirname($suite.__file__)))") || continue
                (cd "$RES" && GP_ECO_BACKENDS=$b timeout -k 10 "$cap" "$PY" -m pytest -c "$ROOT/ecosystem/pytest.ini" \
                    --rootdir "$sitepkg" -p no:cacheprovider -p no:randomly -p gp_eco_common -p "gp_${suite}_plugin" \
                    --pyargs $targets "${sel[@]}" --collect-only -q >"$RES/check.$suite.$b.txt" 2>&1)
                echo "== check $suite / $b: $(grep -cE '^[A-Za-z_].*\.py::' "$RES/check.$suite.$b.txt") tests collected," \
                     "$(grep -E '^[A-Za-z_].*\.py::' "$RES/check.$suite.$b.txt" | grep -c -- "$b") naming $b;" \
                     "$(grep -E 'tests? collected|error' "$RES/check.$suite.$b.txt" | tail -n 1)"
            done
            continue
        fi
        suite=${spec%% *}; targets=${spec#* }
        [[ $suite == sklearn ]] && sel=(-k "$SKLEARN_K") || sel=(-m "$SCIPY_MARK")
        sitepkg=$("$PY" -c "import os, $suite; print(os.path.dirname(os.path.dirname($suite.__file__)))") \
            || { echo "== $suite is not importable: part $p skipped"; continue; }
        stem=$part; [[ -n "$shard" ]] && stem="${part}_${shard%/*}of${shard#*/}"
        echo "== $stem / $b: pytest --pyargs $targets ${sel[*]} (limit ${cap}s, at ${SECONDS}s)"
        t0=$SECONDS
        (cd "$RES" && GP_ECO_BACKENDS=$b GP_ECO_SHARD=$shard timeout -s INT -k 45 "$cap" \
            "$PY" -m pytest -c "$ROOT/ecosystem/pytest.ini" --rootdir "$sitepkg" -p no:cacheprovider \
            -p no:randomly -p gp_eco_common -p "gp_${suite}_plugin" --pyargs $targets "${sel[@]}" \
            -v -rfE --tb=short --durations=15 --junitxml="$RES/$stem.$b.xml" "${xdist[@]}" "${tmo[@]}" "$@" \
            >"$RES/$stem.$b.log" 2>&1)
        rc=$?
        echo "rc=$rc seconds=$((SECONDS - t0)) cap=$cap" >"$RES/$stem.$b.rc"
        echo "   rc=$rc in $((SECONDS - t0))s: $(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* =+$' "$RES/$stem.$b.log" | tail -n 1)"
        (( rc == 124 || rc == 137 )) && echo "   cut short at ${cap}s: split the part (PART=$part@1/2 ...)"
    done

    # --- summary and results into $OUT
    if ls "$RES"/*.rc >/dev/null 2>&1; then
        local subject=${ok_backends[0]} reference=${ok_backends[1]:-none}
        "$PY" "$ROOT/ecosystem/summarize.py" "$RES" --subject "$subject" --reference "$reference" \
            --md "$OUT/eco-summary.md" --json "$OUT/eco-summary.json" --brief
    fi
    tar -czf "$OUT/eco-results.tgz" -C "$RES" . && echo "== results: $OUT/eco-results.tgz ($(du -h "$OUT/eco-results.tgz" | cut -f1))"
    if [[ "${SAVE_KCACHE:-0}" == 1 && -d "$GPARRAY_CACHE_DIR" ]]; then
        tar -czf "$OUT/kcache.tgz" -C "$GPARRAY_CACHE_DIR" . && echo "== kernel cache: $OUT/kcache.tgz"
    fi
    rm -rf "$RES"
    echo "== done in ${SECONDS}s"
}

main "$@" 2>&1 | tee "$OUT/eco-run.log"
exit "${PIPESTATUS[0]}"
