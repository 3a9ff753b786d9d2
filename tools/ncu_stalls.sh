#!/usr/bin/env bash
# Where one kernel launch waits, by source line (run on the GPU machine, from the repo root).
#
#   bash tools/ncu_stalls.sh KERNEL_REGEX 'python statements' [LAUNCH_SKIP]
#   bash tools/ncu_stalls.sh gp_sort_onesweep \
#       'import numpy as np, gparray as xp; x = xp.asarray(np.random.rand(1 << 26).astype(np.float32)); [xp.sort(x) for _ in range(2)]; xp.cuda.synchronize()' 4
#
# The statements run under Nsight Compute with the GPU's clocks left alone (--clock-control
# none, as the device notes ask) and kernels compiled with -lineinfo (GPARRAY_NVRTC_LINEINFO=1,
# into a fresh kernel cache so that every kernel is rebuilt with line information). It
# profiles launch LAUNCH_SKIP (default 0) of the kernels matching KERNEL_REGEX and prints:
#   - the warp-state section (stall reasons per issued instruction),
#   - the source-counters section with the top stall locations of the warp-state sampling,
#   - the CUDA source lines with their sampled stalls (--page source), the 40 heaviest
#     (ncu must find NVRTC's source files; it may not),
#   - the SASS instructions with their sampled stalls and top two reasons, the 40 heaviest.
# Output: $OUT/ncu_stalls.txt when $OUT is set, else stdout.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    sed -n '2,15p' "$0"
    exit 2
fi
kernel=$1
code=$2
skip=${3:-0}
dest=${OUT:+$OUT/ncu_stalls.txt}
cache=$(mktemp -d /tmp/gp-ncu-cache-XXXX)
run() {
    GPARRAY_NVRTC_LINEINFO=1 GPARRAY_CACHE_DIR=$cache ncu --clock-control none -k "regex:$kernel" \
        --launch-skip "$skip" --launch-count 1 "$@" python3 -c "$code"
}
{
    echo "=== warp states and source counters ($kernel, launch $skip)"
    run --section WarpStateStats --section SourceCounters --print-details all
    echo "=== source lines by sampled stalls (heaviest 40)"
    run --section SourceCounters --page source --print-source cuda --csv 2>/dev/null \
        | python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin)]
head = next((i for i, r in enumerate(rows) if "Source" in r and any("Sampling" in c for c in r)), None)
if head is None:
    print("(no source page: was the kernel built with -lineinfo?)")
    sys.exit(0)
cols = rows[head]
src = cols.index("Source")
sam = next(i for i, c in enumerate(cols) if "Sampling" in c and "All" in c)
body = [r for r in rows[head + 1:] if len(r) > sam]
def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0
for r in sorted(body, key=lambda r: -num(r[sam]))[:40]:
    print(f"{num(r[sam]):10.0f}  {r[src].strip()[:150]}")
'
    echo "=== SASS instructions by sampled stalls (heaviest 40; offsets from the kernel's start)"
    run --section SourceCounters --section WarpStateStats --page source --print-source sass --csv 2>/dev/null \
        | python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin)]
head = next((i for i, r in enumerate(rows) if "Source" in r and "Address" in r), None)
if head is None:
    print("(no SASS page)")
    sys.exit(0)
cols = rows[head]
ix = {c: i for i, c in enumerate(cols)}
sam = next(i for i, c in enumerate(cols) if "Sampling" in c and "All" in c)
stalls = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
body = [r for r in rows[head + 1:] if len(r) == len(cols)]
def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0
total = sum(num(r[sam]) for r in body) or 1.0
base = int(body[0][ix["Address"]], 16) if body else 0
for r in sorted(body, key=lambda r: -num(r[sam]))[:40]:
    why = sorted(((num(r[ix[c]]), c[6:]) for c in stalls), reverse=True)[:2]
    off, n, text = int(r[ix["Address"]], 16) - base, num(r[sam]), r[ix["Source"]].strip()[:60]
    print(f"{off:#07x} {n:7.0f} {100 * n / total:5.1f}%  {text:60s} " + " ".join(f"{w}:{v:.0f}" for v, w in why))
'
} > "${dest:-/dev/stdout}" 2>&1
rm -rf "$cache"
