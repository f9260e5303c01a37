#!/usr/bin/env bash
# Benchmark `usm-repair migrate-store` against plain sqlite3 doing the bare data movement, on a
# Core Data-shaped store of N objects (inheritance, to-one, many-to-many, external data, rows only
# in the -wal), every figure and ratio from one run:
#   ios            vs  sqlite3 '.backup' of a copy of the same file set        (target <= 1.3x)
#   copy-entities  vs  INSERT INTO t SELECT * FROM src.t of every table into an empty clone (<= 1.5x)
#   merge (--into a store of N/2 objects) vs a hand-written SQL merge with key offsets that drops
#                  and rebuilds the secondary indexes around the inserts             (<= 1.5x)
#   none           (target < 0.1 s at any size)
# with the peak memory of every usm-repair run (target <= 64 MiB).
#
# Usage: Benchmarks/migrate-benchmark.sh [--objects N] [--workdir DIR]
# Environment: USM_REPAIR_BIN  use this binary instead of building one (swift build -c release)
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OBJECTS=1000000
WORK="${TMPDIR:-/tmp}"
WORK="${WORK%/}/usm-migrate-bench"
die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --objects) OBJECTS="$2"; shift 2 ;;
    --workdir) WORK="${2%/}"; shift 2 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
command -v sqlite3 >/dev/null || die "sqlite3 not found"
command -v python3 >/dev/null || die "python3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"

if [[ -n "${USM_REPAIR_BIN:-}" ]]; then
  BIN="$USM_REPAIR_BIN"
else
  (cd "$ROOT" && swift build -c release --product usm-repair >/dev/null) || die "release build failed"
  BIN="$(cd "$ROOT" && swift build -c release --product usm-repair --show-bin-path)/usm-repair"
fi
[[ -x "$BIN" ]] || die "no usm-repair binary at $BIN"

now() { printf '%s\n' "$EPOCHREALTIME"; }
# timed LABEL CMD... : runs CMD under /usr/bin/time, records seconds and peak RSS (KiB).
declare -A SECONDS_OF RSS_OF
timed() {
  local label="$1"; shift
  sync
  local t0 t1
  t0=$(now)
  /usr/bin/time -f %M -o "$WORK/rss" "$@" >"$WORK/$label.out" 2>"$WORK/$label.err" || { cat "$WORK/$label.err" >&2; die "$label failed"; }
  t1=$(now)
  SECONDS_OF[$label]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  RSS_OF[$label]=$(tail -n 1 "$WORK/rss")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
copyset() { # copyset SRC_MAIN DST_DIR: the file set (main, -wal, -shm, _SUPPORT) into DST_DIR
  mkdir -p "$2"; local base; base="$(basename "$1" .sqlite)"
  cp --reflink=never "$1" "$2/" 2>/dev/null || cp "$1" "$2/"
  for s in -wal -shm; do [[ -e "$1$s" ]] && cp "$1$s" "$2/"; done
  [[ -d "$(dirname "$1")/.${base}_SUPPORT" ]] && cp -R "$(dirname "$1")/.${base}_SUPPORT" "$2/"
  return 0
}

rm -rf "$WORK"; mkdir -p "$WORK/src" "$WORK/dst"
echo "generating $OBJECTS objects (and a destination of $((OBJECTS / 2)) for the merge) in $WORK"
python3 "$SCRIPT_DIR/make-migrate-store.py" "$WORK/src/Bench.sqlite" --objects "$OBJECTS" --wal-rows 1000 --prefix a
python3 "$SCRIPT_DIR/make-migrate-store.py" "$WORK/dst/Bench.sqlite" --objects "$((OBJECTS / 2))" --wal-rows 0 --prefix b
SRC="$WORK/src/Bench.sqlite"
echo "source: $(du -sh "$WORK/src" | cut -f1) (main $(wc -c <"$SRC") bytes, -wal $(wc -c <"$SRC-wal") bytes)"
cat "$SRC" "$SRC-wal" >/dev/null   # warm the cache for both sides alike

# ---- ios vs sqlite3 .backup (on a copy of the same file set: sqlite3 would checkpoint the original)
copyset "$SRC" "$WORK/ref-ios/src"
timed ref_ios sqlite3 "$WORK/ref-ios/src/Bench.sqlite" ".backup '$WORK/ref-ios/out.sqlite'"
mkdir -p "$WORK/ios"
timed ios "$BIN" migrate-store "$SRC" "$WORK/ios/Bench.sqlite" --strategy ios --json

# ---- copy-entities into an empty store vs INSERT INTO t SELECT * FROM src.t into an empty clone
copyset "$SRC" "$WORK/ref-copy/src"
sqlite3 "$WORK/ref-copy/src/Bench.sqlite" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null   # the clone needs a plain source file
sqlite3 "$WORK/ref-copy/src/Bench.sqlite" .schema | sqlite3 "$WORK/ref-copy/clone.sqlite"
TABLES=$(sqlite3 "$WORK/ref-copy/src/Bench.sqlite" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
SQL="ATTACH '$WORK/ref-copy/src/Bench.sqlite' AS src; BEGIN;"
for t in $TABLES; do SQL="$SQL INSERT INTO main.\"$t\" SELECT * FROM src.\"$t\";"; done
timed ref_copy sqlite3 "$WORK/ref-copy/clone.sqlite" "$SQL COMMIT;"
mkdir -p "$WORK/copy"
timed copy "$BIN" migrate-store "$SRC" "$WORK/copy/Bench.sqlite" --strategy copy-entities --json

# ---- merge into a store of N/2 objects vs a hand-written SQL merge with key offsets
copyset "$WORK/dst/Bench.sqlite" "$WORK/ref-merge"
OFF_F=$(sqlite3 "$WORK/ref-merge/Bench.sqlite" "SELECT MAX(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT = 1")
OFF_I=$(sqlite3 "$WORK/ref-merge/Bench.sqlite" "SELECT MAX(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT IN (2, 3)")
OFF_T=$(sqlite3 "$WORK/ref-merge/Bench.sqlite" "SELECT MAX(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT = 4")
MERGE_SQL="ATTACH '$WORK/ref-copy/src/Bench.sqlite' AS src; BEGIN;
DROP INDEX ZITEM_ZFOLDER_INDEX; DROP INDEX ZITEM_Z_ENT_INDEX; DROP INDEX Z_2TAGS_Z_4TAGS_INDEX;
INSERT INTO ZFOLDER SELECT Z_PK + $OFF_F, Z_ENT, Z_OPT, ZNAME FROM src.ZFOLDER;
INSERT INTO ZTAG SELECT Z_PK + $OFF_T, Z_ENT, Z_OPT, ZNAME FROM src.ZTAG;
INSERT INTO ZITEM SELECT Z_PK + $OFF_I, Z_ENT, Z_OPT, ZFOLDER + $OFF_F, ZCREATED, ZTITLE, ZCOVER FROM src.ZITEM;
INSERT INTO Z_2TAGS SELECT Z_2ITEMS + $OFF_I, Z_4TAGS + $OFF_T FROM src.Z_2TAGS;
CREATE INDEX ZITEM_ZFOLDER_INDEX ON ZITEM (ZFOLDER); CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT);
CREATE INDEX Z_2TAGS_Z_4TAGS_INDEX ON Z_2TAGS (Z_4TAGS, Z_2ITEMS);
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZFOLDER) WHERE Z_ENT = 1;
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZITEM) WHERE Z_ENT IN (2, 3);
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZTAG) WHERE Z_ENT = 4;
COMMIT;"
timed ref_merge sqlite3 "$WORK/ref-merge/Bench.sqlite" "$MERGE_SQL"
copyset "$WORK/dst/Bench.sqlite" "$WORK/merge"
timed merge "$BIN" migrate-store "$SRC" "$WORK/merge/Bench.sqlite" --into --snapshot-dir "$WORK/snapshots" --json

# ---- none
mkdir -p "$WORK/none"
timed none "$BIN" migrate-store "$SRC" "$WORK/none/Bench.sqlite" --strategy none --json

# ---- results
ROWS_REF=$(sqlite3 "$WORK/ref-merge/Bench.sqlite" "SELECT (SELECT COUNT(*) FROM ZFOLDER) + (SELECT COUNT(*) FROM ZITEM) + (SELECT COUNT(*) FROM ZTAG)")
ROWS_OURS=$(sqlite3 "$WORK/merge/Bench.sqlite" "SELECT (SELECT COUNT(*) FROM ZFOLDER) + (SELECT COUNT(*) FROM ZITEM) + (SELECT COUNT(*) FROM ZTAG)")
[[ "$ROWS_REF" == "$ROWS_OURS" ]] || die "the merge results differ in rows: reference $ROWS_REF, usm-repair $ROWS_OURS"
echo
echo "objects: $OBJECTS source (+1000 in the -wal), $((OBJECTS / 2)) in the merge destination; $(nproc) cores"
printf '%-15s %9s %9s %7s %7s %12s\n' case usm-repair reference ratio target "peak MiB"
printf '%-15s %8ss %8ss %7s %7s %12s\n' ios "${SECONDS_OF[ios]}" "${SECONDS_OF[ref_ios]}" "$(ratio "${SECONDS_OF[ios]}" "${SECONDS_OF[ref_ios]}")" "<=1.3" "$(mib "${RSS_OF[ios]}")"
printf '%-15s %8ss %8ss %7s %7s %12s\n' copy-entities "${SECONDS_OF[copy]}" "${SECONDS_OF[ref_copy]}" "$(ratio "${SECONDS_OF[copy]}" "${SECONDS_OF[ref_copy]}")" "<=1.5" "$(mib "${RSS_OF[copy]}")"
printf '%-15s %8ss %8ss %7s %7s %12s\n' merge "${SECONDS_OF[merge]}" "${SECONDS_OF[ref_merge]}" "$(ratio "${SECONDS_OF[merge]}" "${SECONDS_OF[ref_merge]}")" "<=1.5" "$(mib "${RSS_OF[merge]}")"
printf '%-15s %8ss %9s %7s %7s %12s\n' none "${SECONDS_OF[none]}" "-" "-" "<0.1s" "$(mib "${RSS_OF[none]}")"
echo "reference peaks (sqlite3): .backup $(mib "${RSS_OF[ref_ios]}") MiB, INSERT SELECT $(mib "${RSS_OF[ref_copy]}") MiB, SQL merge $(mib "${RSS_OF[ref_merge]}") MiB"
echo "usm-repair phases (s), from --json durations:"
for c in ios copy merge none; do
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["durations"]; print("  %-6s " % sys.argv[2] + "  ".join("%s %.3f" % (k, d[k]) for k in ("capture","strategy","identity","verify","install","total") if k in d))' "$WORK/$c.out" "$c"
done
