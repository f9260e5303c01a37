#!/usr/bin/env bash
# Benchmark `usm-repair dedupe` (issue 29) against the careful hand, on a Core Data-shaped store of
# N objects of which 10% have a copy (relationships split between the copies,
# make-duplicated-store.py):
#   usm-repair dedupe --store COPY --yes   (snapshot, staged copy, identity by refinement, removal,
#                                           integrity_check, install)
#   by hand: a copy of the file set, a GROUP BY over every attribute of each table (the duplicates
#            found), PRAGMA integrity_check of the copy
# Target: usm-repair / by hand <= 2.0; peak RSS of usm-repair <= 64 MiB. Runs alternate the sides;
# the ratio of each run is taken within it, and the median is reported.
#
# Usage: Benchmarks/dedupe-benchmark.sh [--objects N] [--runs R] [--workdir DIR] [--enforce]
# Environment: USM_REPAIR_BIN     use this binary instead of building one (swift build -c release)
#              USM_BENCH_SCRATCH  pass --scratch-path to that build (e.g. .build-bench)
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OBJECTS=200000
RUNS=3
ENFORCE=0
WORK="${TMPDIR:-/tmp}"
WORK="${WORK%/}/usm-dedupe-bench"
TARGET_RATIO=2.0
TARGET_MIB=64
die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --objects) OBJECTS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --workdir) WORK="${2%/}"; shift 2 ;;
    --enforce) ENFORCE=1; shift ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs takes a positive number"
[[ "$OBJECTS" =~ ^[1-9][0-9]*$ ]] || die "--objects takes a positive number"
command -v sqlite3 >/dev/null || die "sqlite3 not found"
command -v python3 >/dev/null || die "python3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
if [[ -n "${USM_REPAIR_BIN:-}" ]]; then
  BIN="$USM_REPAIR_BIN"
else
  scratch=()
  [[ -n "${USM_BENCH_SCRATCH:-}" ]] && scratch=(--scratch-path "$USM_BENCH_SCRATCH")
  (cd "$ROOT" && swift build -c release --product usm-repair "${scratch[@]}" >&2) || die "release build failed"
  BIN="$(cd "$ROOT" && swift build -c release --show-bin-path "${scratch[@]}")/usm-repair"
fi
[[ -x "$BIN" ]] || die "no usm-repair binary at $BIN"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
copyset() { # copyset SRC_MAIN DST_DIR: the file set (main, -wal, _SUPPORT) into DST_DIR
  mkdir -p "$2"; local base; base="$(basename "$1" .sqlite)"
  cp "$1" "$2/"
  for s in -wal -shm; do [[ -e "$1$s" ]] && cp "$1$s" "$2/"; done
  [[ -d "$(dirname "$1")/.${base}_SUPPORT" ]] && cp -R "$(dirname "$1")/.${base}_SUPPORT" "$2/"
  return 0
}

SRC="$WORK/src/Bench.sqlite"
PARAMS="objects=$OBJECTS gen=$(cat "$SCRIPT_DIR/make-duplicated-store.py" "$SCRIPT_DIR/make-migrate-store.py" | sha256sum | cut -c1-16)"
if [[ ! -f "$WORK/.params" || "$(cat "$WORK/.params")" != "$PARAMS" ]]; then
  rm -rf "$WORK"; mkdir -p "$WORK/src"
  python3 "$SCRIPT_DIR/make-duplicated-store.py" "$SRC" --objects "$OBJECTS" >&2
  printf '%s' "$PARAMS" > "$WORK/.params"
fi
OUT="$WORK/out"; RUN="$WORK/run"; rm -rf "$OUT" "$RUN"; mkdir -p "$OUT" "$RUN"

# The careful hand's query: every table's rows grouped by every attribute (keys left out: Z_PK,
# Z_OPT and the model's one to-one key, ZITEM.ZFOLDER).
GROUP_SQL=""
for t in $(sqlite3 -readonly "$SRC" "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'Z[A-Z]*' AND name NOT GLOB 'Z_*'"); do
  cols=$(sqlite3 -readonly "$SRC" "SELECT group_concat(name, ', ') FROM pragma_table_info('$t') WHERE name NOT IN ('Z_PK', 'Z_OPT', 'ZFOLDER')")
  GROUP_SQL="$GROUP_SQL SELECT '$t', COUNT(*) FROM (SELECT 1 FROM \"$t\" GROUP BY $cols HAVING COUNT(*) > 1);"
done
export GROUP_SQL

by_hand() { # by_hand DIR: copy, group, check
  copyset "$SRC" "$1/copy"
  sqlite3 "$1/copy/Bench.sqlite" "$GROUP_SQL" >/dev/null
  [[ "$(sqlite3 "$1/copy/Bench.sqlite" 'PRAGMA integrity_check')" == ok ]] || { echo "integrity_check failed" >&2; return 1; }
}
export -f by_hand copyset
export SRC

timed() { # timed FILE CMD...: appends "seconds peak_kib" to FILE
  local file="$1"; shift; local t0 t1
  t0=$EPOCHREALTIME
  /usr/bin/time -f %M -o "$OUT/rss" "$@" >"$file.stdout" 2>"$file.stderr" || { tail -n 20 "$file.stderr" >&2; die "failed: $*"; }
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(tail -n 1 "$OUT/rss")" >> "$file"
}
usm_side() {
  rm -rf "$RUN/usm" "$RUN/snaps"; copyset "$SRC" "$RUN/usm"; sync
  timed "$OUT/usm" "$BIN" dedupe --store "$RUN/usm/Bench.sqlite" --yes --json --snapshot-dir "$RUN/snaps"
  # The snapshot's size (bytes) beside the store's.
  echo "$(cat "$RUN/snaps"/*.tar.zst 2>/dev/null | wc -c) $(stat -c %s "$SRC")" > "$OUT/snapshot-size"
  # The dry run alone (untimed): its count is the `preview` phase of the run above.
  rm -rf "$RUN/dry"; copyset "$SRC" "$RUN/dry"
  "$BIN" dedupe --store "$RUN/dry/Bench.sqlite" --dry-run --json >"$OUT/dry.stdout" 2>/dev/null || true
}
ref_side() { rm -rf "$RUN/ref"; mkdir -p "$RUN/ref"; sync; timed "$OUT/ref" bash -c 'by_hand "$1"' _ "$RUN/ref"; }

cat "$SRC" >/dev/null
for r in $(seq 1 "$RUNS"); do
  if (( r % 2 == 1 )); then ref_side; usm_side; else usm_side; ref_side; fi
  u=$(tail -n 1 "$OUT/usm" | cut -d' ' -f1); h=$(tail -n 1 "$OUT/ref" | cut -d' ' -f1)
  ratio "$u" "$h" >> "$OUT/ratio"; echo >> "$OUT/ratio"
  echo "run $r: dedupe ${u}s, by hand ${h}s, ratio $(tail -n 1 "$OUT/ratio")" >&2
done
removed=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["details"]; print(sum(d["removed"].values()), "of", sum(d["before"].values()))' "$OUT/usm.stdout")
rt=$(grep -v '^$' "$OUT/ratio" | median); peak=$(cut -d' ' -f2 "$OUT/usm" | sort -g | tail -n 1)
u=$(cut -d' ' -f1 "$OUT/usm" | median); h=$(cut -d' ' -f1 "$OUT/ref" | median)
pass() { awk -v r="$1" -v m="$2" 'BEGIN { print (r <= m) ? "PASS" : "FAIL" }'; }
echo
echo "objects: $OBJECTS ($removed removed as duplicates by dedupe); $(nproc) cores; $RUNS alternating run(s), medians"
printf '%-8s %11s %9s %7s %7s %9s %11s\n' case usm-repair "by hand" ratio target "peak MiB" "RSS target"
printf '%-8s %10.3fs %8.3fs %7s %7s %9.1f %11s\n' dedupe "$u" "$h" "$rt" "$(pass "$rt" "$TARGET_RATIO")" \
  "$(awk -v k="$peak" 'BEGIN { print k / 1024 }')" "$(pass "$peak" $((TARGET_MIB * 1024)))"
# Where the last run of usm-repair spent its time (its --json `details.durations`; `preview` is
# the count made while planning, which in a run also removes the duplicates from its private copy;
# the dry run's own count is printed beside it).
python3 - "$OUT/usm.stdout" "$OUT/dry.stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["details"].get("durations", {})
dry = json.load(open(sys.argv[2]))["details"].get("durations", {}) if len(sys.argv) > 2 else {}
parts = [f"dry run's count {dry.get('preview', 0):.2f}s"] + [f"{k} {v:.2f}s" for k, v in sorted(d.items()) if v >= 0.005]
print("phases of the last run:", ", ".join(parts))
PY
read -r snap store < "$OUT/snapshot-size" || true
echo "snapshot of the last run: $(awk -v s="$snap" 'BEGIN { printf "%.1f", s / 1048576 }') MiB (store $(awk -v s="$store" 'BEGIN { printf "%.1f", s / 1048576 }') MiB)"
# USM_REPAIR_TIMINGS=1: the in-process phases of the last run.
grep '^timing: ' "$OUT/usm.stderr" | sed 's/^/  /' || true
rm -rf "$RUN"
if [[ $ENFORCE -eq 1 ]] && { [[ $(pass "$rt" "$TARGET_RATIO") == FAIL ]] || [[ $(pass "$peak" $((TARGET_MIB * 1024))) == FAIL ]]; }; then exit 1; fi
exit 0
