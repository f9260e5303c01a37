#!/usr/bin/env bash
# Peak memory of usm-repair on every input of issue 6's item 12, each large in one dimension a
# careless reader would decode whole, against the target of 64 MiB.
#
# Usage: Benchmarks/memory-benchmark.sh [--workdir DIR] [--only NAME] [--enforce]
# Environment: USM_REPAIR_BIN     use this binary instead of building one (release)
#              USM_BENCH_SCRATCH  pass --scratch-path to `swift build` (e.g. .build-bench)
#
# The inputs (make-memory-inputs.py, written once into DIR/inputs and reused): a 15 MB binary and
# a 15 MB XML preferences plist, a 200 MB preferences plist, a bundle whose manifest.json is
# 250 MB, a container of 200,000 transaction logs (and the bundle archived from it), a store whose
# Z_PLIST is 200 MB, one whose Z_MODELCACHE inflates to 31 MiB, one with 200,000 Z_PRIMARYKEY rows.
# Each command runs under /usr/bin/time; printed: input, command, exit status, wall seconds, peak
# RSS in MiB, PASS or FAIL against 64 MiB. Exit 0 (1 with --enforce when one fails; 2 set-up error).
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
WORK="${TMPDIR:-/tmp}"; WORK="${WORK%/}/usm-memory-bench"
ONLY=""
ENFORCE=0
TARGET_MIB=64

die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --workdir) WORK="${2%/}"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --enforce) ENFORCE=1; shift ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
command -v python3 >/dev/null || die "python3 not found"
command -v bsdtar >/dev/null || die "bsdtar not found (apt-get install libarchive-tools)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"

BIN="${USM_REPAIR_BIN:-}"
if [[ -z "$BIN" ]]; then
  scratch=()
  [[ -n "${USM_BENCH_SCRATCH:-}" ]] && scratch=(--scratch-path "$USM_BENCH_SCRATCH")
  (cd "$ROOT" && swift build -c release --product usm-repair "${scratch[@]}" >&2)
  BIN="$(cd "$ROOT" && swift build -c release --show-bin-path "${scratch[@]}")/usm-repair"
fi
[[ -x "$BIN" ]] || die "no usm-repair binary at $BIN"

IN="$WORK/inputs"
python3 "$SCRIPT_DIR/make-memory-inputs.py" "$IN" ${ONLY:+--only "$ONLY"}
if [[ -d "$IN/manifest-250mb" && ! -f "$IN/manifest-250mb.tar.zst" ]]; then
  echo "packing manifest-250mb.tar.zst ..." >&2
  bsdtar --zstd -cf "$IN/manifest-250mb.tar.zst.tmp" -C "$IN/manifest-250mb" manifest.json container
  mv "$IN/manifest-250mb.tar.zst.tmp" "$IN/manifest-250mb.tar.zst"
fi

OUT="$WORK/out"
rm -rf "$OUT"; mkdir -p "$OUT"
export XDG_STATE_HOME="$WORK/state"
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
failures=0
printf '%-18s %-58s %4s %8s %9s  %s\n' input command exit seconds "peak MiB" "target ${TARGET_MIB} MiB" >&2
results=()

# run NAME ARGS...: one measured run of usm-repair.
run() {
  local name="$1"; shift
  if [[ -n "$ONLY" && "$name" != *"$ONLY"* ]]; then return; fi
  local timing="$OUT/time-$RANDOM"
  set +e
  /usr/bin/time -f '%e %M' -o "$timing" "$BIN" "$@" >"$OUT/last.stdout" 2>"$OUT/last.stderr"
  local status=$?
  set -e
  local seconds kib; read -r seconds kib < <(tail -n 1 "$timing")
  local mib; mib=$(awk -v k="$kib" 'BEGIN { printf "%.1f", k / 1024 }')
  local verdict=PASS
  if awk -v m="$mib" -v t="$TARGET_MIB" 'BEGIN { exit !(m > t) }'; then verdict=FAIL; failures=$((failures + 1)); fi
  if [[ $status -ge 128 ]]; then verdict="FAIL (signal $((status - 128)))"; failures=$((failures + 1)); fi
  local shown="$*"; shown="${shown//$IN\//}"; shown="${shown//$OUT\//}"
  printf '%-18s %-58.58s %4s %8s %9s  %s\n' "$name" "$shown" "$status" "$seconds" "$mib" "$verdict" >&2
  results+=("$name=$mib:$verdict")
}

run prefs-15mb            status --app-dir "$IN/app" --prefs "$IN/prefs-15mb.plist"
run prefs-15mb            archive --app-dir "$IN/app" --prefs "$IN/prefs-15mb.plist" --redact -o "$OUT/p15.tar.zst"
run prefs-15mb-xml        status --app-dir "$IN/app" --prefs "$IN/prefs-15mb-xml.plist"
run prefs-200mb           archive --app-dir "$IN/app" --prefs "$IN/prefs-200mb.plist" --redact -o "$OUT/p200.tar.zst"
run manifest-250mb        bundle verify "$IN/manifest-250mb.tar.zst"
run manifest-250mb        restore "$IN/manifest-250mb.tar.zst" --to "$OUT/m250"
run logs-200k             archive --cloud-dir "$IN/logs-200k" -o "$OUT/logs-200k.tar.zst"
if [[ -f "$OUT/logs-200k.tar.zst" ]]; then
  run bundle-200k         bundle verify "$OUT/logs-200k.tar.zst"
  run bundle-200k         restore "$OUT/logs-200k.tar.zst" --to "$OUT/b200k"
fi
run zplist-200mb          status --store "$IN/zplist-200mb.sqlite"
run modelcache-31mib      status --store "$IN/modelcache-31mib.sqlite"
run modelcache-31mib      check --store "$IN/modelcache-31mib.sqlite"
run primarykey-200k       status --store "$IN/primarykey-200k.sqlite"

echo "summary: target=${TARGET_MIB}MiB failures=$failures ${results[*]}"
rm -rf "$OUT/b200k" "$OUT/m250"
if [[ $ENFORCE -eq 1 && $failures -gt 0 ]]; then exit 1; fi
exit 0
