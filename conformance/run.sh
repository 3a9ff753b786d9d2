#!/usr/bin/env bash
# Run data-apis/array-api-tests against gparray.
#
#   ARRAY_API_TESTS_DIR=.vendor/array-api-tests conformance/run.sh [pytest args / test files...]
#
# Test files may be named bare (test_dlpack.py, test_linalg.py::test_cholesky): they are looked
# up in $ARRAY_API_TESTS_DIR/array_api_tests/. With no test file named, the whole suite runs.
#
# Environment (all optional):
#   ARRAY_API_TESTS_DIR   the suite checkout            (default: <repo>/.vendor/array-api-tests)
#   WHEELS_DIR            wheels the suite needs        (default: <repo>/.vendor; installed if present)
#   CONF_SITE             where those wheels go         (default: /tmp/gp-conf-site)
#   MAX_EXAMPLES          Hypothesis max_examples       (default: 100)
#   REPORT                JSON report path              (default: conformance-report.json)
#   ARRAY_API_TESTS_MODULE / ARRAY_API_TESTS_VERSION    (default: gparray / 2025.12)
#   PYTHON                interpreter                   (default: python3)
# Skips and xfails come from conformance/skips.txt and conformance/xfails.txt; every entry there
# carries a "# reason" (see conformance/README.md); this script checks that before running.
set -uo pipefail

CALLER_PWD=$PWD
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}

abspath() {  # absolute form of $1, relative to the caller's working directory
    case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$CALLER_PWD/$1" ;; esac
}

SUITE=$(abspath "${ARRAY_API_TESTS_DIR:-$REPO_ROOT/.vendor/array-api-tests}")
WHEELS=$(abspath "${WHEELS_DIR:-$REPO_ROOT/.vendor}")
SITE=${CONF_SITE:-/tmp/gp-conf-site}
REPORT_PATH=$(abspath "${REPORT:-conformance-report.json}")
SKIPS_SRC=$REPO_ROOT/conformance/skips.txt
XFAILS_SRC=$REPO_ROOT/conformance/xfails.txt

if [[ ! -d "$SUITE/array_api_tests" ]]; then
    echo "conformance/run.sh: no array-api-tests checkout at $SUITE (expected $SUITE/array_api_tests);" \
         "see conformance/README.md for how to fetch it, or set ARRAY_API_TESTS_DIR" >&2
    exit 2
fi

# --- skips / xfails: every entry needs a reason; the suite wants bare ids, so strip the comments
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gp-conf.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
clean_list() {  # $1 source file, $2 output file; returns 1 when an entry has no reason
    local src=$1 out=$2 bad=0 n=0 line id
    : > "$out"
    [[ -f "$src" ]] || return 0
    while IFS= read -r line || [[ -n "$line" ]]; do
        n=$((n + 1))
        [[ "$line" =~ ^[[:space:]]*(#.*)?$ ]] && continue
        if [[ ! "$line" =~ [[:space:]]#[[:space:]]*[^[:space:]] ]]; then
            echo "conformance/run.sh: $src:$n has no '# reason': $line" >&2
            bad=1
        fi
        id=$(printf '%s' "$line" | sed -E 's/[[:space:]]+#.*$//; s/^[[:space:]]+//; s/[[:space:]]+$//')
        [[ -n "$id" ]] && printf '%s\n' "$id" >> "$out"
    done < "$src"
    return $bad
}
clean_list "$SKIPS_SRC" "$TMPD/skips.txt" || reasons_missing=1
clean_list "$XFAILS_SRC" "$TMPD/xfails.txt" || reasons_missing=1
if [[ -n "${reasons_missing:-}" ]]; then
    echo "conformance/run.sh: every skips/xfails entry must end with '# reason' (conformance/README.md)" >&2
    exit 2
fi

# --- the suite's own dependencies, from wheels, into a private site dir
shopt -s nullglob
wheels=("$WHEELS"/*.whl)
shopt -u nullglob
if (( ${#wheels[@]} )); then
    stamp="$($PY -c 'import sys; print(sys.version)' 2>/dev/null) $(ls -l "${wheels[@]}" | md5sum)"
    if [[ ! -f "$SITE/.gp-stamp" || "$(cat "$SITE/.gp-stamp")" != "$stamp" ]]; then
        rm -rf "$SITE"
        mkdir -p "$SITE"
        if ! $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "${wheels[@]}" 2>"$TMPD/pip.err"; then
            # one wheel may not suit this interpreter (e.g. cp312 wheels under 3.11): go one by one
            echo "conformance/run.sh: installing the wheels together failed; trying one by one" >&2
            for w in "${wheels[@]}"; do
                $PY -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$w" 2>/dev/null \
                    || echo "conformance/run.sh: skipped wheel $(basename "$w") (not installable here)" >&2
            done
        fi
        printf '%s' "$stamp" > "$SITE/.gp-stamp"
    fi
    export PYTHONPATH="$SITE:$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi

export ARRAY_API_TESTS_MODULE=${ARRAY_API_TESTS_MODULE:-gparray}
export ARRAY_API_TESTS_VERSION=${ARRAY_API_TESTS_VERSION:-2025.12}
export PYTHONUNBUFFERED=1

# --- arguments: bare test file names are looked up in the suite; existing paths made absolute.
# Test paths go first: some options (--disable-extension, --json-report-omit) take several values
# and would swallow a path that follows them.
tests=()
opts=()
for a in "$@"; do
    base=${a%%::*}
    base=${base%%\[*}
    if [[ "$a" != -* && "$base" == test_*.py && -f "$SUITE/array_api_tests/$base" && ! -e "$base" ]]; then
        tests+=("$SUITE/array_api_tests/$a")
    elif [[ "$a" != -* && -e "$base" && "$base" == *array_api_tests* ]]; then
        tests+=("$(abspath "$a")")
    else
        opts+=("$a")
    fi
done
(( ${#tests[@]} )) || tests=("$SUITE/array_api_tests")

ini=()
[[ -f "$SUITE/pytest.ini" ]] && ini=(-c "$SUITE/pytest.ini")
# RUN_SUITE_SKIPS=1 (default): also run the tests the suite marks skip("flaky") (gp_unskip.py)
if [[ "${RUN_SUITE_SKIPS:-1}" == "1" ]]; then
    export PYTHONPATH="$REPO_ROOT/conformance:$PYTHONPATH"
    ini+=(-p gp_unskip)
fi

cmd=("$PY" -m pytest "${tests[@]}" "${ini[@]}" --rootdir "$SUITE" -p no:cacheprovider -v --tb=short
     --json-report --json-report-file="$REPORT_PATH"
     --json-report-omit collectors log streams keywords traceback
     --max-examples "${MAX_EXAMPLES:-100}" --hypothesis-disable-deadline
     --skips-file "$TMPD/skips.txt" --xfails-file "$TMPD/xfails.txt"
     "${opts[@]}")
echo "conformance: module=$ARRAY_API_TESTS_MODULE version=$ARRAY_API_TESTS_VERSION suite=$SUITE"
echo "conformance: report=$REPORT_PATH max_examples=${MAX_EXAMPLES:-100}"
echo "+ ${cmd[*]}"
"${cmd[@]}"
rc=$?
echo "conformance: pytest exited with $rc"
exit $rc
