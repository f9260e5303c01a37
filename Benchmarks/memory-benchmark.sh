#!/usr/bin/env bash
# Peak memory of usm-repair on every input of issue 6's item 12 and issue 20's finding 10, each large
# in one dimension a careless reader would decode whole, against its target: 64 MiB for what is read
# as a stream or refused by size; 64 MiB plus 1.5x the value for a row copy-entities must hold whole;
# 64 MiB plus twice the file for preferences that are rewritten.
#
# Usage: Benchmarks/memory-benchmark.sh [--workdir DIR] [--only NAME] [--enforce]
# Environment: USM_REPAIR_BIN     use this binary instead of building one (release)
#              USM_BENCH_SCRATCH  pass --scratch-path to `swift build` (e.g. .build-bench)
#
# The inputs (make-memory-inputs.py, written once into DIR/inputs and reused): a 15 MB binary and
# a 15 MB XML preferences plist, a 200 MB preferences plist, a bundle whose manifest.json is
# 250 MB, a container of 200,000 transaction logs (and the bundle archived from it), a store whose
# Z_PLIST is 200 MB, one whose Z_MODELCACHE inflates to 31 MiB, one with 200,000 Z_PRIMARYKEY rows.
# Also (issue 20): a store with one 200 MB row migrated with copy-entities and with ios, a plugin
# printing 300 MB of lines, a 200 MB plan.json, a 3 M-line journal, a 100 MB recipe, preferences
# with 200,000 keys and with a 50 MB value (binary and XML) rewritten by `cloud disable`.
# Also (issue 28, finding 6): a 200 MB BLOB in a string column migrated with ios and copy-entities,
# salvage of a store with a 50 MB schema row (refused, exit 2), a --model of 1M nested elements
# (refused, exit 2).
# Each command runs under /usr/bin/time -v; printed: input, command, exit status, wall seconds, peak
# RSS in MiB, its target, PASS or FAIL. Exit 0 (1 with --enforce when one fails; 2 set-up error).
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
printf '%-18s %-58s %4s %8s %9s %11s  %s\n' input command exit seconds "peak MiB" "target MiB" verdict >&2
results=()

# mib FILE: a file's size in MiB (for the targets that grow with what must be held whole).
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# run NAME TARGET_MIB ARGS...: one measured run of usm-repair (GNU time -v: maximum resident set size).
run() {
  local name="$1" target="$2"; shift 2
  if [[ -n "$ONLY" && "$name" != *"$ONLY"* ]]; then return; fi
  local timing="$OUT/time-$RANDOM"
  set +e
  /usr/bin/time -v -o "$timing" "$BIN" "$@" >"$OUT/last.stdout" 2>"$OUT/last.stderr"
  local status=$?
  set -e
  local kib seconds
  kib=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$timing")
  seconds=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$timing" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }')
  local mib; mib=$(awk -v k="$kib" 'BEGIN { printf "%.1f", k / 1024 }')
  local verdict=PASS
  if awk -v m="$mib" -v t="$target" 'BEGIN { exit !(m > t) }'; then verdict=FAIL; failures=$((failures + 1)); fi
  if [[ $status -ge 128 ]]; then verdict="FAIL (signal $((status - 128)))"; failures=$((failures + 1)); fi
  local shown="$*"; shown="${shown//$IN\//}"; shown="${shown//$OUT\//}"
  printf '%-18s %-58.58s %4s %8s %9s %11s  %s\n' "$name" "$shown" "$status" "$seconds" "$mib" "$target" "$verdict" >&2
  results+=("$name=$mib/$target:$verdict")
}

# prefs NAME FILE: `cloud disable` rewriting a fresh copy of the preferences FILE (target: 64 MiB
# plus twice the file, what holding it whole would cost).
prefs() {
  local name="$1" file="$2"
  if [[ -n "$ONLY" && "$name" != *"$ONLY"* ]]; then return; fi
  rm -rf "$OUT/prefs-run"; mkdir -p "$OUT/prefs-run"
  cp "$file" "$OUT/prefs-run/com.example.notes.plist"
  local target; target=$(awk -v f="$(mib "$file")" -v t="$TARGET_MIB" 'BEGIN { printf "%.1f", t + 2 * f }')
  run "$name" "$target" cloud disable --app-dir "$IN/app" --prefs "$OUT/prefs-run/com.example.notes.plist" --yes
}

T=$TARGET_MIB
run prefs-15mb "$T"       status --app-dir "$IN/app" --prefs "$IN/prefs-15mb.plist"
run prefs-15mb "$T"       archive --app-dir "$IN/app" --prefs "$IN/prefs-15mb.plist" --redact -o "$OUT/p15.tar.zst"
run prefs-15mb-xml "$T"   status --app-dir "$IN/app" --prefs "$IN/prefs-15mb-xml.plist"
run prefs-200mb "$T"      archive --app-dir "$IN/app" --prefs "$IN/prefs-200mb.plist" --redact -o "$OUT/p200.tar.zst"
run manifest-250mb "$T"   bundle verify "$IN/manifest-250mb.tar.zst"
run manifest-250mb "$T"   restore "$IN/manifest-250mb.tar.zst" --to "$OUT/m250"
run logs-200k "$T"        archive --cloud-dir "$IN/logs-200k" -o "$OUT/logs-200k.tar.zst"
if [[ -f "$OUT/logs-200k.tar.zst" ]]; then
  run bundle-200k "$T"    bundle verify "$OUT/logs-200k.tar.zst"
  run bundle-200k "$T"    restore "$OUT/logs-200k.tar.zst" --to "$OUT/b200k"
fi
run zplist-200mb "$T"     status --store "$IN/zplist-200mb.sqlite"
run modelcache-31mib "$T" status --store "$IN/modelcache-31mib.sqlite"
run modelcache-31mib "$T" check --store "$IN/modelcache-31mib.sqlite"
run primarykey-200k "$T"  status --store "$IN/primarykey-200k.sqlite"

# Issue 20, finding 10.
if [[ -d "$IN/row-200mb" ]]; then
  # copy-entities holds the row's value whole (SQLite reads a value whole): 64 MiB + 1.5x it.
  row_target=$(awk -v t="$T" 'BEGIN { printf "%.1f", t + 1.5 * 200000000 / 1048576 }')
  rm -f "$OUT"/row-*.sqlite*
  run row-200mb "$row_target" migrate-store "$IN/row-200mb/Store.sqlite" "$OUT/row-copy.sqlite" --strategy copy-entities
  run row-200mb "$T"        migrate-store "$IN/row-200mb/Store.sqlite" "$OUT/row-ios.sqlite" --strategy ios
  rm -rf "$OUT"/row-*.sqlite* "$OUT"/.row-*_SUPPORT
fi
# Issue 28, finding 6: the 200 MB in a string column, as a BLOB (object identity and the digests
# read it in pieces; copy-entities still holds the value SQLite copies).
if [[ -d "$IN/string-200mb" ]]; then
  row_target=$(awk -v t="$T" 'BEGIN { printf "%.1f", t + 1.5 * 200000000 / 1048576 }')
  rm -f "$OUT"/string-*.sqlite*
  run string-200mb "$T"      migrate-store "$IN/string-200mb/Store.sqlite" "$OUT/string-ios.sqlite" --strategy ios
  run string-200mb "$row_target" migrate-store "$IN/string-200mb/Store.sqlite" "$OUT/string-copy.sqlite" --strategy copy-entities
  rm -rf "$OUT"/string-*.sqlite* "$OUT"/.string-*_SUPPORT
fi
if [[ -d "$IN/schema-50mb" ]]; then
  run schema-50mb "$T"       salvage "$IN/schema-50mb/Store.sqlite" "$OUT/schema-out.sqlite" --dry-run
  run schema-50mb "$T"       salvage "$IN/schema-50mb/Store.sqlite" "$OUT/schema-out.sqlite"
  rm -rf "$OUT"/schema-out.sqlite*
fi
if [[ -f "$IN/model-1m-nested.xml" && -d "$IN/app" ]]; then
  run model-1m-nested "$T"   migrate-store "$IN/app/UbiquityStore.sqlite" "$OUT/model-dst.sqlite" --strategy none \
    --model "$IN/model-1m-nested.xml"
  rm -rf "$OUT"/model-dst.sqlite*
fi
if [[ -d "$IN/plugin-300mb" ]]; then
  rm -f "$OUT"/plugin-*.sqlite*
  run plugin-300mb "$T"     migrate-store "$IN/app/UbiquityStore.sqlite" "$OUT/plugin-dst.sqlite" \
    --plugin "$IN/plugin-300mb/usm-repair-strategy-flood" --plugin-timeout 600
  rm -rf "$OUT"/plugin-*.sqlite* "$OUT"/.plugin-*_SUPPORT
fi
if [[ -d "$IN/plan-200mb" && ( -z "$ONLY" || "plan-200mb" == *"$ONLY"* ) ]]; then
  mkdir -p "$XDG_STATE_HOME/usm-repair/operations"
  cp "$IN"/plan-200mb/state/usm-repair/operations/*.json "$XDG_STATE_HOME/usm-repair/operations/"
  run plan-200mb "$T"       recover --app-dir "$IN/app" --prefs "$IN/plan-200mb/com.example.notes.plist"
  run plan-200mb "$T"       status --app-dir "$IN/app" --prefs "$IN/plan-200mb/com.example.notes.plist"
fi
if [[ -z "$ONLY" || "journal-3m" == *"$ONLY"* ]]; then
  rm -rf "$OUT/journal-run"; mkdir -p "$OUT/journal-run"
  python3 -c 'import plistlib,sys; plistlib.dump({"USMCloudEnabledKey": True}, open(sys.argv[1], "wb"))' "$OUT/journal-run/com.example.notes.plist"
  python3 "$SCRIPT_DIR/make-memory-inputs.py" --pending "$OUT/journal-run/com.example.notes.plist" "$XDG_STATE_HOME" 3000000
  run journal-3m "$T"       recover --app-dir "$IN/app" --prefs "$OUT/journal-run/com.example.notes.plist"
fi
run recipe-100mb "$T"     migrate-store "$IN/app/UbiquityStore.sqlite" "$OUT/recipe-dst.sqlite" --recipe "$IN/recipe-100mb.json"
for f in prefs-200k-keys prefs-200k-keys-xml prefs-50mb-value prefs-50mb-value-xml; do
  [[ -f "$IN/$f.plist" ]] && prefs "$f" "$IN/$f.plist"
done

echo "summary: failures=$failures ${results[*]}"
rm -rf "$OUT/b200k" "$OUT/m250" "$OUT/prefs-run" "$OUT/journal-run"
if [[ $ENFORCE -eq 1 && $failures -gt 0 ]]; then exit 1; fi
exit 0
