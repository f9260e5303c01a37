#!/usr/bin/env bash
# Benchmark `usm-repair archive` against `bsdtar --zstd -cf` on the same large container, in one run.
#
# Usage: Benchmarks/archive-benchmark.sh [--size-mib N] [--runs R] [--workdir DIR] [--regenerate] [--enforce]
# Environment: USM_REPAIR_BIN     use this binary instead of building one (release)
#              USM_BENCH_SCRATCH  pass --scratch-path to `swift build` (e.g. .build-bench)
#
# The container (default 2048 MiB) holds a Core Data-shaped local store and cloud store of about a
# million objects each (from make-large-store.py, with rows waiting in their -wal), their -shm, and
# CloudLogs transaction logs made of half-compressible data up to the size asked. Both tools write
# zstd at its default level; usm-repair also writes manifest.json (every file's SHA-256, the status
# report) and the .sha256 sidecar, and captures the stores consistently. Figures printed: wall time
# (median), throughput (input MiB/s), peak RSS, and the throughput ratio usm-repair / bsdtar
# (target >= 0.9), plus, for information, bsdtar with as many zstd threads as usm-repair uses.
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
SIZE_MIB=2048
RUNS=3
WORK="${TMPDIR:-/tmp}"; WORK="${WORK%/}/usm-archive-bench"
REGENERATE=0
ENFORCE=0
TARGET_RATIO=0.9
TARGET_MIB=64

die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size-mib) SIZE_MIB="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --workdir) WORK="${2%/}"; shift 2 ;;
    --regenerate) REGENERATE=1; shift ;;
    --enforce) ENFORCE=1; shift ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
command -v bsdtar >/dev/null || die "bsdtar not found (apt-get install libarchive-tools)"
command -v python3 >/dev/null || die "python3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"

BIN="${USM_REPAIR_BIN:-}"
if [[ -z "$BIN" ]]; then
  scratch=()
  [[ -n "${USM_BENCH_SCRATCH:-}" ]] && scratch=(--scratch-path "$USM_BENCH_SCRATCH")
  (cd "$ROOT" && swift build -c release --product usm-repair "${scratch[@]}" >&2)
  BIN="$(cd "$ROOT" && swift build -c release --show-bin-path "${scratch[@]}")/usm-repair"
fi
[[ -x "$BIN" ]] || die "no usm-repair binary at $BIN"

# ---------------------------------------------------------------- the container
C="$WORK/Bench.xcappdata"
STAMP="$WORK/.params"
PARAMS="size=$SIZE_MIB gen=$(sha256sum "$SCRIPT_DIR/make-large-store.py" | cut -c1-16)"
if [[ $REGENERATE -eq 1 || ! -f "$STAMP" || "$(cat "$STAMP")" != "$PARAMS" ]]; then
  echo "generating a ${SIZE_MIB} MiB container in $C ..." >&2
  rm -rf "$WORK"; mkdir -p "$WORK"
  APP="$C/AppData/Library/Application Support"
  LOGS="$C/iCloud/CloudLogs"
  UUID=0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B
  mkdir -p "$APP/CloudStore" "$LOGS/$UUID/mobile.peer/$UUID" "$C/AppData/Library/Preferences"
  python3 "$SCRIPT_DIR/make-large-store.py" "$APP/UbiquityStore.sqlite" --objects 1000000 --seed 1 >&2
  python3 "$SCRIPT_DIR/make-large-store.py" "$APP/CloudStore/$UUID.sqlite" --objects 1000000 --seed 2 >&2
  printf '%s' "$UUID" > "$LOGS/StoreUUID+"
  used=$(du -sm "$C" | cut -f1)
  i=0
  # Half-compressible logs: random bytes, base64-encoded (zstd gets about 25% off).
  while [[ $used -lt $SIZE_MIB ]]; do
    chunk=$(( SIZE_MIB - used < 64 ? SIZE_MIB - used : 64 ))
    head -c $(( chunk * 1024 * 1024 * 3 / 4 )) /dev/urandom | base64 -w 0 > "$LOGS/$UUID/mobile.peer/$UUID/$(printf '%05d' $i).cdt"
    i=$((i + 1)); used=$(du -sm "$C" | cut -f1)
  done
  printf '%s' "$PARAMS" > "$STAMP"
fi
INPUT_BYTES=$(find "$C" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
INPUT_MIB=$(awk -v b="$INPUT_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
THREADS=$(nproc)
before_sum=$(cd "$C" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)

# Warm the page cache so both sides read from memory.
find "$C" -type f -print0 | xargs -0 cat > /dev/null

OUT="$WORK/out"; mkdir -p "$OUT"
measure() { # label, command... -> appends "seconds rss_kib" to $OUT/label.times
  local label="$1"; shift
  rm -f "$OUT"/result*
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f %M -o "$OUT/rss" "$@" > /dev/null 2> "$OUT/err" || { cat "$OUT/err" >&2; die "$label failed"; }
  t1=$(date +%s.%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(tail -n 1 "$OUT/rss")" >> "$OUT/$label.times"
}
rm -f "$OUT"/*.times
for r in $(seq 1 "$RUNS"); do
  measure bsdtar bsdtar --zstd -cf "$OUT/result.tar.zst" -C "$WORK" Bench.xcappdata
  measure bsdtar-mt bsdtar --zstd --options "zstd:threads=$THREADS" -cf "$OUT/result.tar.zst" -C "$WORK" Bench.xcappdata
  measure usm "$BIN" archive --container "$C" --output "$OUT/result.tar.zst" --quiet
  echo "run $r done" >&2
done
"$BIN" bundle verify "$OUT/result.tar.zst" --quiet || die "the bundle does not verify"
USM_BYTES=$(stat -c %s "$OUT/result.tar.zst")
after_sum=$(cd "$C" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)
[[ "$before_sum" == "$after_sum" ]] || { echo "error: usm-repair changed the container" >&2; exit 3; }

median() { cut -d' ' -f1 "$1" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { cut -d' ' -f2 "$1" | sort -g | tail -n 1 | awk '{ printf "%.1f", $1 / 1024 }'; }
B_S=$(median "$OUT/bsdtar.times"); M_S=$(median "$OUT/bsdtar-mt.times"); U_S=$(median "$OUT/usm.times")
B_R=$(peak "$OUT/bsdtar.times"); U_R=$(peak "$OUT/usm.times")
tput() { awk -v b="$INPUT_BYTES" -v s="$1" 'BEGIN { printf "%.1f", b / 1048576 / s }'; }
RATIO=$(awk -v b="$B_S" -v u="$U_S" 'BEGIN { printf "%.2f", b / u }')
RATIO_MT=$(awk -v b="$M_S" -v u="$U_S" 'BEGIN { printf "%.2f", b / u }')
ok_ratio=$(awk -v r="$RATIO" -v t="$TARGET_RATIO" 'BEGIN { print (r >= t) ? "PASS" : "FAIL" }')
ok_rss=$(awk -v r="$U_R" -v t="$TARGET_MIB" 'BEGIN { print (r < t) ? "PASS" : "FAIL" }')

echo
echo "usm-repair archive benchmark ($(uname -sm), $THREADS cores, $RUNS runs, median wall time, peak RSS = max over runs)"
echo "  container: $C, $INPUT_MIB MiB in $(find "$C" -type f | wc -l) files; usm-repair bundle $(awk -v b="$USM_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }') MiB"
printf '  %-44s %9s %12s %10s\n' measure seconds "MiB/s" "peak MiB"
printf '  %-44s %9s %12s %10s\n' "bsdtar --zstd -cf" "$B_S" "$(tput "$B_S")" "$B_R"
printf '  %-44s %9s %12s %10s\n' "bsdtar --zstd --options zstd:threads=$THREADS" "$M_S" "$(tput "$M_S")" "$(peak "$OUT/bsdtar-mt.times")"
printf '  %-44s %9s %12s %10s\n' "usm-repair archive (tar.zst)" "$U_S" "$(tput "$U_S")" "$U_R"
echo "  throughput ratio usm-repair / bsdtar --zstd: $RATIO (target >= $TARGET_RATIO: $ok_ratio)"
echo "  throughput ratio usm-repair / bsdtar with $THREADS zstd threads: $RATIO_MT (information)"
echo "  usm-repair peak RSS: $U_R MiB (target < $TARGET_MIB: $ok_rss)"
echo "  container unchanged (sha256 of every file before and after); bundle verifies"
echo "summary: bsdtar=${B_S}s usm=${U_S}s ratio=$RATIO usm_peak_mib=$U_R ratio_target=$ok_ratio rss_target=$ok_rss"
if [[ $ENFORCE -eq 1 && ( "$ok_ratio" == FAIL || "$ok_rss" == FAIL ) ]]; then exit 1; fi
