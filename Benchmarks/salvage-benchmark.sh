#!/usr/bin/env bash
# Benchmark `usm-repair salvage` on damaged copies of healthy stores, every figure from one run:
#   for each store (the real corpus, read in place, and a store of N objects from make-migrate-store.py)
#   and each kind of damage (make-damaged-store.py, deterministic by seed):
#     recall      rows salvaged / rows of the original whose cells lie on undamaged pages
#     attrib      the same without the rows no reader can attribute to one table (salvage-score.py:
#                 tables of the same shape, no Z_ENT, whose sqlite_schema rows were both lost)
#     precision   salvaged rows identical to the original's row with their key (salvage-score.py)
#     check       usm-repair check --store on the result (0: no error)
#     time, peak  wall clock and peak RSS of the salvage (/usr/bin/time)
#   and, as the reference, the time of `sqlite3 .dump | sqlite3` on the *undamaged* original (a
#   floor no damaged-store tool beats), with SQLite's own `.recover` scored beside ours when its
#   amalgamation can be built (--sqlite-zip).
#
# Usage: Benchmarks/salvage-benchmark.sh [--objects N] [--workdir DIR] [--kinds "K ..."] [--no-corpus]
#                                        [--no-big] [--seed S] [--sqlite-zip sqlite-amalgamation-3XXXXXX.zip]
# Environment: USM_REPAIR_BIN   use this binary instead of building one (swift build -c release)
#              USM_CORPUS_DIR   the corpus (default ../shared/corpus/real beside the checkout)
#              SQLITE_RECOVER_BIN  an sqlite3 shell already built with SQLITE_ENABLE_DBPAGE_VTAB
#                               (instead of building one from --sqlite-zip)
# A salvage that exits 2 without a sibling (the schema or Z_PRIMARYKEY lost), or whose report says
# part of sqlite_schema was lost, is run again with --schema-from a healthy store of the same model
# and no rows (the generator's sibling/), and the row says "+sib". Results also go to WORK/results.tsv.
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OBJECTS=1000000
WORK="${TMPDIR:-/tmp}"
WORK="${WORK%/}/usm-salvage-bench"
KINDS="random-1 random-5 random-20 page-header-zeroed interior-destroyed truncated wal-torn schema-destroyed header-zeroed freelist-loop"
CORPUS_DIR="${USM_CORPUS_DIR:-$ROOT/../shared/corpus/real}"
USE_CORPUS=1
USE_BIG=1
SEED=1
SQLITE_ZIP=""
die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --objects) OBJECTS="$2"; shift 2 ;;
    --workdir) WORK="${2%/}"; shift 2 ;;
    --kinds) KINDS="$2"; shift 2 ;;
    --no-corpus) USE_CORPUS=0; shift ;;
    --no-big) USE_BIG=0; shift ;;
    --seed) SEED="$2"; shift 2 ;;
    --sqlite-zip) SQLITE_ZIP="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
for tool in sqlite3 python3; do command -v "$tool" >/dev/null || die "$tool not found"; done
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"

if [[ -n "${USM_REPAIR_BIN:-}" ]]; then
  BIN="$USM_REPAIR_BIN"
else
  (cd "$ROOT" && swift build -c release --product usm-repair >/dev/null) || die "release build failed"
  BIN="$(cd "$ROOT" && swift build -c release --product usm-repair --show-bin-path)/usm-repair"
fi
[[ -x "$BIN" ]] || die "no usm-repair binary at $BIN"
rm -rf "$WORK"; mkdir -p "$WORK"
export XDG_STATE_HOME="$WORK/state"

now() { printf '%s\n' "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# SQLite's recovery extension (sqlite3_recover, the shell's .recover; needs the dbpage table that
# Debian's sqlite3 lacks): built from the public amalgamation in the work folder, never committed.
RECOVER=""
RECOVER_WHY="no --sqlite-zip given (SQLite's public amalgamation, 3.40 or later)"
if [[ -n "${SQLITE_RECOVER_BIN:-}" ]]; then
  RECOVER="$SQLITE_RECOVER_BIN"
  echo "SQLite's .recover: $("$RECOVER" --version | cut -d' ' -f1-2) ($RECOVER)"
elif [[ -n "$SQLITE_ZIP" ]]; then
  if [[ ! -f "$SQLITE_ZIP" ]]; then
    RECOVER_WHY="$SQLITE_ZIP not found"
  elif ! command -v cc >/dev/null; then
    RECOVER_WHY="no C compiler"
  else
    mkdir -p "$WORK/sqlite"
    (cd "$WORK/sqlite" && python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall('.')" "$SQLITE_ZIP")
    src="$(dirname "$(find "$WORK/sqlite" -name shell.c | head -n 1)")"
    if [[ -f "$src/sqlite3.c" ]] && cc -O1 -DSQLITE_ENABLE_DBPAGE_VTAB -DSQLITE_THREADSAFE=0 "$src/shell.c" "$src/sqlite3.c" -ldl -lm \
        -o "$WORK/sqlite/sqlite3-recover" 2>"$WORK/sqlite/build.log"; then
      RECOVER="$WORK/sqlite/sqlite3-recover"
      echo "SQLite's .recover: $("$RECOVER" --version | cut -d' ' -f1-2), built from $(basename "$SQLITE_ZIP") (sha256 $(sha256sum "$SQLITE_ZIP" | cut -c1-16)...)"
    else
      RECOVER_WHY="the amalgamation did not build (see $WORK/sqlite/build.log)"
    fi
  fi
fi
[[ -n "$RECOVER" ]] || echo "SQLite's .recover: not run: $RECOVER_WHY"

STORES=()
if [[ $USE_CORPUS == 1 ]]; then
  [[ -d "$CORPUS_DIR" ]] || die "no corpus at $CORPUS_DIR (USM_CORPUS_DIR, or --no-corpus)"
  while IFS= read -r f; do STORES+=("$f"); done < <(
    for d in "$CORPUS_DIR"/*/; do
      for f in "$d"*; do
        [[ -f "$f" && "$f" != *-wal && "$f" != *-shm && "$f" != *.md ]] || continue
        [[ "$(head -c 15 "$f")" == "SQLite format 3" ]] && { echo "$f"; break; }
      done
    done)
fi
if [[ $USE_BIG == 1 ]]; then
  echo "generating a store of $OBJECTS objects (make-migrate-store.py, 1,000 items only in its -wal)"
  mkdir -p "$WORK/big"
  python3 "$SCRIPT_DIR/make-migrate-store.py" "$WORK/big/Bench.sqlite" --objects "$OBJECTS" --wal-rows 1000 --prefix a --local
  STORES+=("$WORK/big/Bench.sqlite")
fi

copyset() { # copyset MAIN DIR: main, -wal (not -shm: sqlite3 builds its own) into DIR
  mkdir -p "$2"; cp "$1" "$2/"; [[ -e "$1-wal" ]] && cp "$1-wal" "$2/"; return 0
}
# recover_score ORIGINAL DAMAGED DAMAGE_JSON PREVIOUS OUTDIR: SQLite's .recover on a copy, scored.
recover_score() {
  [[ -n "$RECOVER" ]] || { echo "-"; return; }
  local out="$5/recover"; rm -rf "$out"; copyset "$2" "$out/in"
  local name; name="$(basename "$2")"
  if ! "$RECOVER" "$out/in/$name" .recover 2>/dev/null | "$RECOVER" "$out/out.sqlite" >/dev/null 2>&1 || [[ ! -s "$out/out.sqlite" ]]; then
    echo "failed"; return
  fi
  python3 "$SCRIPT_DIR/salvage-score.py" "$1" "$out/out.sqlite" "$3" "$WORK/empty.json" ${4:+"$4"} 2>/dev/null \
    | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.2f%%/%.2f%%" % (r["recall"] * 100, r["precision"] * 100))' || echo "failed"
}

printf '%s\n' "{}" >"$WORK/empty.json"
TSV="$WORK/results.tsv"
printf 'store\tkind\texit\trecall\tprecision\tcut\tcheck\tseconds\treference\tratio\tpeakMiB\trecover(recall/precision)\tattrib\n' >"$TSV"
printf '%-30s %-19s %5s %8s %8s %9s %6s %5s %8s %8s %6s %7s  %s\n' store kind exit recall attrib precision cut check time dump ratio peakMiB "sqlite .recover"
for store in "${STORES[@]}"; do
  name="$(basename "$store")"
  label="$(basename "$(dirname "$store")")"
  [[ "$label" == big ]] && label="bench-$OBJECTS"
  # Reference: sqlite3 .dump | sqlite3 of the undamaged original, on a copy (sqlite3 would checkpoint it).
  ref="$WORK/ref/$label"; rm -rf "$ref"; copyset "$store" "$ref/in"
  cat "$ref/in/"* >/dev/null
  t0=$(now); sqlite3 "$ref/in/$name" .dump | sqlite3 "$ref/out.sqlite"; t1=$(now)
  reference=$(secs "$t0" "$t1")
  for kind in $KINDS; do
    d="$WORK/damage/$label/$kind"
    if ! python3 "$SCRIPT_DIR/make-damaged-store.py" "$store" "$d" --kind "$kind" --seed "$SEED" >/dev/null 2>"$WORK/gen.err"; then
      printf '%-30s %-19s %5s\n' "$label" "$kind" "n/a"
      continue
    fi
    out="$WORK/out/$label/$kind"; rm -rf "$out"; mkdir -p "$out"
    cat "$d/damaged/"* >/dev/null
    sib=""
    run() {
      t0=$(now)
      set +e
      /usr/bin/time -f %M -o "$out/rss" "$BIN" salvage "$d/damaged/$name" "$out/$name" --json "$@" >"$out/report.json" 2>"$out/err"
      code=$?
      set -e
      t1=$(now)
    }
    run
    # As the report tells a user: exit 2 (no schema, or Z_PRIMARYKEY lost), or sqlite_schema partly
    # lost (the tables it described are missing from the result): again with a healthy sibling.
    if [[ -e "$d/sibling/$name" ]] && { [[ $code == 2 ]] || grep -q 'sqlite_schema: part of it could not be read' "$out/report.json"; }; then
      sib="+sib"; rm -f "$out/$name"; run --schema-from "$d/sibling/$name"
    fi
    seconds=$(secs "$t0" "$t1"); peak=$(tail -n 1 "$out/rss" 2>/dev/null | awk '{ printf "%.1f", $1 / 1024 }')
    previous=""; [[ -e "$d/previous/$name" ]] && previous="$d/previous/$name"
    if [[ -e "$out/$name" ]]; then
      score=$(python3 "$SCRIPT_DIR/salvage-score.py" "$d/original/$name" "$out/$name" "$d/damage.json" "$out/report.json" ${previous:+"$previous"})
      recall=$(python3 -c 'import json,sys; print("%.2f%%" % (json.loads(sys.argv[1])["recall"] * 100))' "$score")
      attrib=$(python3 -c 'import json,sys; print("%.2f%%" % (json.loads(sys.argv[1])["recallAttributable"] * 100))' "$score")
      precision=$(python3 -c 'import json,sys; print("%.2f%%" % (json.loads(sys.argv[1])["precision"] * 100))' "$score")
      cut=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["cutRows"])' "$score")
      set +e; "$BIN" check --store "$out/$name" >/dev/null 2>&1; check=$?; set -e
    else
      recall="-"; attrib="-"; precision="-"; cut="-"; check="-"
    fi
    ratio=$(awk -v a="$seconds" -v b="$reference" 'BEGIN { printf "%.2f", a / b }')
    rec=$(recover_score "$d/original/$name" "$d/damaged/$name" "$d/damage.json" "$previous" "$out")
    printf '%-30s %-19s %5s %8s %8s %9s %6s %5s %7ss %7ss %6s %7s  %s\n' "$label" "$kind" "$code$sib" "$recall" "$attrib" "$precision" "$cut" "$check" "$seconds" "$reference" "$ratio" "$peak" "$rec"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$kind" "$code$sib" "$recall" "$precision" "$cut" "$check" "$seconds" "$reference" "$ratio" "$peak" "$rec" "$attrib" >>"$TSV"
    rm -rf "$d/original" "$d/damaged" "$d/previous" "$out/recover"
  done
done
echo
echo "per kind over every store (min recall, min attributable recall, min precision, results failing check, max peak MiB):"
awk -F'\t' 'NR > 1 && $4 != "-" {
  k = $2; r = $4 + 0; p = $5 + 0; m = $11 + 0; a = $13 + 0
  if (!(k in minr) || r < minr[k]) minr[k] = r
  if (!(k in mina) || a < mina[k]) mina[k] = a
  if (!(k in minp) || p < minp[k]) minp[k] = p
  if ($7 != "0") bad[k]++
  if (m > maxm[k]) maxm[k] = m
  n[k]++
} END { for (k in n) printf "  %-19s stores %3d  recall >= %6.2f%%  attrib >= %6.2f%%  precision >= %6.2f%%  check failed %d  peak <= %.1f MiB\n", k, n[k], minr[k], mina[k], minp[k], bad[k] + 0, maxm[k] }' "$TSV" | sort
