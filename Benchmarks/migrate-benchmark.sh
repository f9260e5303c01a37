#!/usr/bin/env bash
# Benchmark `usm-repair migrate-store` against the same work done carefully by hand with sqlite3,
# which checks its result before trusting it (issue 15), on a Core Data-shaped store of N objects
# (inheritance, to-one, many-to-many, external data, rows only in the -wal):
#   ios            vs  sqlite3 '.backup' of a copy of the file set + PRAGMA integrity_check of the result
#   copy-entities  vs  INSERT INTO t SELECT * FROM src.t into an empty clone + integrity_check
#   merge (--into a store of N/2 objects) vs the hand-written SQL merge below + integrity_check
#   none           absolute seconds against 0.2 s (it needs the schema, not the rows)
#   dry-run        `migrate-store SRC DST --dry-run` vs PRAGMA quick_check of a copy of the source (<= 1.5x)
# Target: usm-repair / by hand <= 1.0 for the first three; peak RSS of every usm-repair run <= 64 MiB.
# usm-repair runs with USM_REPAIR_TIMINGS=1: the last run's phases of each case are printed.
# Each run alternates the two sides (by hand first in odd runs, usm-repair first in even ones); the
# ratio of each row is taken within a run, and the median of the runs is reported.
#
# Usage: Benchmarks/migrate-benchmark.sh [--objects N] [--runs R] [--workdir DIR] [--regenerate]
#                                        [--enforce]
# Environment: USM_REPAIR_BIN     use this binary instead of building one (swift build -c release)
#              USM_BENCH_SCRATCH  pass --scratch-path to that build (e.g. .build-bench)
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OBJECTS=1000000
RUNS=3
REGENERATE=0
ENFORCE=0
WORK="${TMPDIR:-/tmp}"
WORK="${WORK%/}/usm-migrate-bench"
TARGET_RATIO=1.0
TARGET_NONE=0.2
TARGET_DRY=1.5
export USM_REPAIR_TIMINGS=1
TARGET_MIB=64
die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --objects) OBJECTS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --workdir) WORK="${2%/}"; shift 2 ;;
    --regenerate) REGENERATE=1; shift ;;
    --enforce) ENFORCE=1; shift ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

now() { printf '%s\n' "$EPOCHREALTIME"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
copyset() { # copyset SRC_MAIN DST_DIR: the file set (main, -wal, -shm, _SUPPORT) into DST_DIR
  mkdir -p "$2"; local base; base="$(basename "$1" .sqlite)"
  cp --reflink=never "$1" "$2/" 2>/dev/null || cp "$1" "$2/"
  for s in -wal -shm; do [[ -e "$1$s" ]] && cp "$1$s" "$2/"; done
  [[ -d "$(dirname "$1")/.${base}_SUPPORT" ]] && cp -R "$(dirname "$1")/.${base}_SUPPORT" "$2/"
  return 0
}

# ---------------------------------------------------------------- the stores (built once, reused)
STAMP="$WORK/.params"
PARAMS="objects=$OBJECTS gen=$(sha256sum <"$SCRIPT_DIR/make-migrate-store.py" | cut -c1-16)"
SRC="$WORK/src/Bench.sqlite"
if [[ $REGENERATE -eq 1 || ! -f "$STAMP" || "$(cat "$STAMP")" != "$PARAMS" || ! -f "$SRC-wal" ]]; then
  rm -rf "$WORK"; mkdir -p "$WORK/src" "$WORK/dst"
  echo "generating $OBJECTS objects (and a destination of $((OBJECTS / 2)) for the merge) in $WORK" >&2
  python3 "$SCRIPT_DIR/make-migrate-store.py" "$SRC" --objects "$OBJECTS" --wal-rows 1000 --prefix a >&2
  python3 "$SCRIPT_DIR/make-migrate-store.py" "$WORK/dst/Bench.sqlite" --objects "$((OBJECTS / 2))" --wal-rows 0 --prefix b >&2
  printf '%s' "$PARAMS" > "$STAMP"
fi
rm -rf "$WORK/run" "$WORK/out"; mkdir -p "$WORK/run" "$WORK/out"
OUT="$WORK/out"; RUN="$WORK/run"
echo "source: $(du -sh "$WORK/src" | cut -f1) (main $(wc -c <"$SRC") bytes, -wal $(wc -c <"$SRC-wal") bytes)" >&2

# A plain (checkpointed) copy of the source for the by-hand INSERT ... SELECT and the merge, and the
# empty clone's schema: set-up of the reference, outside the timing.
copyset "$SRC" "$WORK/run/plain"
sqlite3 "$WORK/run/plain/Bench.sqlite" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
PLAIN="$WORK/run/plain/Bench.sqlite"
sqlite3 "$PLAIN" .schema > "$OUT/schema.sql"
TABLES=$(sqlite3 "$PLAIN" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
COPY_SQL="ATTACH '$PLAIN' AS src; BEGIN;"
for t in $TABLES; do COPY_SQL="$COPY_SQL INSERT INTO main.\"$t\" SELECT * FROM src.\"$t\";"; done
COPY_SQL="$COPY_SQL COMMIT;"
OFF_F=$(sqlite3 -readonly "$WORK/dst/Bench.sqlite" "SELECT MAX(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT = 1")
OFF_I=$(sqlite3 -readonly "$WORK/dst/Bench.sqlite" "SELECT MAX(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT IN (2, 3)")
OFF_T=$(sqlite3 -readonly "$WORK/dst/Bench.sqlite" "SELECT MAX(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT = 4")
MERGE_SQL="ATTACH '$PLAIN' AS src; BEGIN;
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
export COPY_SQL MERGE_SQL

# by_hand CASE DIR: the careful hand's work on the prepared DIR, the result checked with
# integrity_check (anything but "ok" fails the benchmark); appends "work W check C" to $OUT/CASE.parts.
by_hand() {
  local case="$1" dir="$2" t0 t1 t2 result
  t0=$EPOCHREALTIME
  case "$case" in
    ios) sqlite3 "$dir/src/Bench.sqlite" ".backup '$dir/out.sqlite'"; result="$dir/out.sqlite" ;;
    dry) # what a dry run is measured against: quick_check of the store it reads (no result to check)
      [[ "$(sqlite3 "$dir/src/Bench.sqlite" 'PRAGMA quick_check')" == ok ]] || { echo "quick_check failed" >&2; return 1; }
      t1=$EPOCHREALTIME
      awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f 0\n", b - a }' >> "$OUT/$case.parts"
      return 0 ;;
    copy) sqlite3 "$dir/clone.sqlite" "$COPY_SQL"; result="$dir/clone.sqlite" ;;
    merge) sqlite3 "$dir/Bench.sqlite" "$MERGE_SQL"; result="$dir/Bench.sqlite" ;;
  esac
  t1=$EPOCHREALTIME
  [[ "$(sqlite3 "$result" 'PRAGMA integrity_check')" == ok ]] || { echo "integrity_check of the by-hand $case failed" >&2; return 1; }
  t2=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f\n", b - a, c - b }' >> "$OUT/$case.parts"
}
export -f by_hand
export OUT

# prepare SIDE CASE DIR: what each side starts from, outside the timing (fresh every run).
prepare() {
  rm -rf "$3" "$RUN/snapshots"; mkdir -p "$3"
  case "$1:$2" in
    ref:ios|ref:dry) copyset "$SRC" "$3/src" ;;
    ref:copy) sqlite3 "$3/clone.sqlite" < "$OUT/schema.sql" ;;
    ref:merge) copyset "$WORK/dst/Bench.sqlite" "$3" ;;
    usm:merge) copyset "$WORK/dst/Bench.sqlite" "$3" ;;
  esac
  sync
}

# timed FILE CMD...: CMD under /usr/bin/time; appends "seconds peak_kib" to FILE, stdout to FILE.stdout.
timed() {
  local file="$1"; shift
  local t0 t1
  t0=$(now)
  /usr/bin/time -f %M -o "$OUT/rss" "$@" >"$file.stdout" 2>"$file.stderr" || { tail -n 20 "$file.stderr" >&2; die "failed: $*"; }
  t1=$(now)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(tail -n 1 "$OUT/rss")" >> "$file"
}

usm() { # usm CASE DIR: the usm-repair side
  case "$1" in
    ios) timed "$OUT/ios.usm" "$BIN" migrate-store "$SRC" "$2/Bench.sqlite" --strategy ios --json ;;
    copy) timed "$OUT/copy.usm" "$BIN" migrate-store "$SRC" "$2/Bench.sqlite" --strategy copy-entities --json ;;
    merge) timed "$OUT/merge.usm" "$BIN" migrate-store "$SRC" "$2/Bench.sqlite" --into --snapshot-dir "$RUN/snapshots" --json ;;
    none) timed "$OUT/none.usm" "$BIN" migrate-store "$SRC" "$2/Bench.sqlite" --strategy none --json ;;
    dry) timed "$OUT/dry.usm" "$BIN" migrate-store "$SRC" "$2/Bench.sqlite" --dry-run --json ;;
  esac
  cp "$OUT/$1.usm.stderr" "$OUT/$1.timings"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); d=j.get("durations") or (j.get("details") or {}).get("durations") or {}; print(" ".join("%s %.3f" % (k, d[k]) for k in ("capture","strategy","identity","verify","install","total") if k in d))' \
    "$OUT/$1.usm.stdout" >> "$OUT/$1.phases"
}
ref() { timed "$OUT/$1.ref" bash -c 'by_hand "$1" "$2"' _ "$1" "$2"; }

cat "$SRC" "$SRC-wal" "$WORK/dst/Bench.sqlite" >/dev/null   # warm the cache for both sides alike
for r in $(seq 1 "$RUNS"); do
  for c in ios copy merge dry; do
    if (( r % 2 == 1 )); then
      prepare ref "$c" "$RUN/ref"; ref "$c" "$RUN/ref"
      prepare usm "$c" "$RUN/usm"; usm "$c" "$RUN/usm"
    else
      prepare usm "$c" "$RUN/usm"; usm "$c" "$RUN/usm"
      prepare ref "$c" "$RUN/ref"; ref "$c" "$RUN/ref"
    fi
    if [[ $c == merge ]]; then
      count="SELECT (SELECT COUNT(*) FROM ZFOLDER) + (SELECT COUNT(*) FROM ZITEM) + (SELECT COUNT(*) FROM ZTAG) + (SELECT COUNT(*) FROM Z_2TAGS)"
      a=$(sqlite3 -readonly "$RUN/ref/Bench.sqlite" "$count"); b=$(sqlite3 -readonly "$RUN/usm/Bench.sqlite" "$count")
      [[ "$a" == "$b" ]] || die "the merges differ in rows: by hand $a, usm-repair $b"
    fi
    u=$(tail -n 1 "$OUT/$c.usm" | cut -d' ' -f1); h=$(tail -n 1 "$OUT/$c.ref" | cut -d' ' -f1)
    ratio "$u" "$h" >> "$OUT/$c.ratio"; echo >> "$OUT/$c.ratio"
    echo "run $r: $c usm-repair ${u}s, by hand ${h}s, ratio $(tail -n 1 "$OUT/$c.ratio")" >&2
  done
  prepare usm none "$RUN/usm"; usm none "$RUN/usm"
  echo "run $r: none usm-repair $(tail -n 1 "$OUT/none.usm" | cut -d' ' -f1)s" >&2
done
rm -rf "$RUN"

# ---------------------------------------------------------------- results
FAIL=0
col() { cut -d' ' -f"$2" "$1" | median; }
peak() { cut -d' ' -f2 "$1" | sort -g | tail -n 1; }
verdict() { awk -v r="$1" -v m="$2" 'BEGIN { print (r <= m) ? "PASS" : "FAIL" }'; }
echo
echo "objects: $OBJECTS in the source (+1000 only in its -wal), $((OBJECTS / 2)) in the merge destination; $(nproc) cores;"
echo "$RUNS alternating run(s), medians; ratio = median of the per-run ratios; usm-repair $("$BIN" --version 2>/dev/null || echo '?')"
printf '%-15s %11s %11s %7s %12s %9s %12s\n' case usm-repair "by hand" ratio target "peak MiB" "RSS target"
for c in ios copy merge dry; do
  name=$c; [[ $c == copy ]] && name=copy-entities; tg=$TARGET_RATIO
  [[ $c == dry ]] && { name=dry-run; tg=$TARGET_DRY; }
  rt=$(median < "$OUT/$c.ratio"); p=$(peak "$OUT/$c.usm"); v=$(verdict "$rt" "$tg"); vm=$(verdict "$p" $((TARGET_MIB * 1024)))
  [[ $v == PASS && $vm == PASS ]] || FAIL=1
  printf '%-15s %10ss %10ss %7s %12s %9s %12s\n' "$name" "$(col "$OUT/$c.usm" 1)" "$(col "$OUT/$c.ref" 1)" "$rt" "<=$tg $v" "$(mib "$p")" "<=$TARGET_MIB $vm"
done
n=$(col "$OUT/none.usm" 1); p=$(peak "$OUT/none.usm"); v=$(verdict "$n" "$TARGET_NONE"); vm=$(verdict "$p" $((TARGET_MIB * 1024)))
[[ $v == PASS && $vm == PASS ]] || FAIL=1
printf '%-15s %10ss %11s %7s %12s %9s %12s\n' none "$n" - - "<=${TARGET_NONE}s $v" "$(mib "$p")" "<=$TARGET_MIB $vm"
echo
echo "by hand, parts (s, medians): the work, then PRAGMA integrity_check of its result; peak MiB of sqlite3:"
for c in ios copy merge dry; do
  printf '  %-6s work %s  integrity_check %s  peak %s\n' "$c" "$(col "$OUT/$c.parts" 1)" "$(col "$OUT/$c.parts" 2)" "$(mib "$(peak "$OUT/$c.ref")")"
done
echo "usm-repair phases (s, medians of the runs), from --json durations:"
for c in ios copy merge none dry; do
  python3 - "$OUT/$c.phases" "$c" <<'EOF'
import statistics, sys
runs = [dict(zip(l.split()[::2], map(float, l.split()[1::2]))) for l in open(sys.argv[1]) if l.strip()]
keys = [k for k in ("capture", "strategy", "identity", "verify", "install", "total") if k in runs[0]]
print("  %-6s " % sys.argv[2] + "  ".join("%s %.3f" % (k, statistics.median(r[k] for r in runs)) for k in keys))
EOF
done
echo "usm-repair's own phases (s, last run; USM_REPAIR_TIMINGS=1 on stderr):"
for c in ios copy merge none dry; do
  printf '  %s:\n' "$c"; sed -n 's/^timing: /    /p' "$OUT/$c.timings" 2>/dev/null || true
done
echo "summary: ios=$(median < "$OUT/ios.ratio") copy=$(median < "$OUT/copy.ratio") merge=$(median < "$OUT/merge.ratio") dry=$(median < "$OUT/dry.ratio") none=${n}s peak_mib=$(mib "$(cat "$OUT"/*.usm | cut -d' ' -f2 | sort -g | tail -n 1)")"
[[ $ENFORCE -eq 1 && $FAIL -eq 1 ]] && exit 1
exit 0
