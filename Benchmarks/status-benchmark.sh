#!/usr/bin/env bash
# Benchmark `usm-repair status` on a large Core Data-shaped store against a reference:
# copying the store's file set (main + -wal) and running `sqlite3 COPY 'PRAGMA quick_check'`.
#
# Usage: Benchmarks/status-benchmark.sh [--objects N] [--runs R] [--wal-rows K]
#                                        [--workdir DIR] [--regenerate] [--enforce]
#                                        [--reference-only] [--allow-shm-change]
# Environment: USM_REPAIR_BIN      use this binary instead of building one
#              USM_BENCH_SCRATCH   pass --scratch-path to `swift build` (e.g. .build-bench)
# See Benchmarks/README.md.
set -euo pipefail
export LC_ALL=C   # '.' as decimal separator in EPOCHREALTIME, awk and printf

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"

OBJECTS=1000000
RUNS=3
WAL_ROWS=1000
WORK="${TMPDIR:-/tmp}"
WORK="${WORK%/}/usm-bench"
REGENERATE=0
ENFORCE=0
REFERENCE_ONLY=0
ALLOW_SHM_CHANGE=0
TARGET_RATIO=2.0
TARGET_MIB=64

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "error: $*" >&2; exit 2; }
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --objects)  need_value "$@"; OBJECTS="$2"; shift 2 ;;
    --runs)     need_value "$@"; RUNS="$2"; shift 2 ;;
    --wal-rows) need_value "$@"; WAL_ROWS="$2"; shift 2 ;;
    --workdir)  need_value "$@"; WORK="${2%/}"; shift 2 ;;
    --regenerate) REGENERATE=1; shift ;;
    --enforce)    ENFORCE=1; shift ;;
    --reference-only) REFERENCE_ONLY=1; shift ;;
    --allow-shm-change) ALLOW_SHM_CHANGE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ "$OBJECTS" =~ ^[0-9]+$ && "$OBJECTS" -ge 10 ]] || die "--objects must be an integer >= 10"
[[ "$RUNS" =~ ^[0-9]+$ && "$RUNS" -ge 1 ]] || die "--runs must be an integer >= 1"
[[ "$WAL_ROWS" =~ ^[0-9]+$ ]] || die "--wal-rows must be an integer >= 0"

# ---------------------------------------------------------------- tools

command -v python3 >/dev/null || die "python3 not found"
command -v sqlite3 >/dev/null || die "sqlite3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian/Ubuntu: apt-get install time)"

# Wall clock in seconds with sub-millisecond resolution.
if [[ -n "${EPOCHREALTIME:-}" ]]; then
  now() { printf '%s\n' "$EPOCHREALTIME"; }
elif date +%s.%N 2>/dev/null | grep -qv N; then
  now() { date +%s.%N; }
else
  now() { python3 -c 'import time; print(f"{time.time():.6f}")'; }
fi

# Peak RSS in KiB of one command: GNU time has -f %M (KiB); BSD/macOS time has -l (bytes).
if /usr/bin/time -f %M -o /dev/null true 2>/dev/null; then
  TIME_STYLE=gnu
else
  TIME_STYLE=bsd
fi
# run_measured RSS_FILE ERR_FILE CMD...  -> runs CMD (stdout untouched), leaves the peak RSS
# in KiB as the only line of RSS_FILE and CMD's stderr in ERR_FILE; returns CMD's exit code.
run_measured() {
  local rss_file="$1" err_file="$2" rc=0
  shift 2
  if [[ $TIME_STYLE == gnu ]]; then
    /usr/bin/time -f %M -o "$rss_file.raw" "$@" 2>"$err_file" || rc=$?
    # GNU time writes "Command exited with non-zero status N" above the figure when rc != 0.
    tail -n 1 "$rss_file.raw" >"$rss_file"
  else
    /usr/bin/time -l "$@" 2>"$err_file" || rc=$?
    awk '/maximum resident set size/ { printf "%d\n", $1 / 1024 }' "$err_file" >"$rss_file"
  fi
  rm -f "$rss_file.raw"
  return "$rc"
}

if command -v sha256sum >/dev/null; then
  sha256() { sha256sum "$1" | awk '{print $1}'; }
else
  sha256() { shasum -a 256 "$1" | awk '{print $1}'; }
fi

# Copy really copying bytes: GNU cp >= 9 clones (reflink) by default where the file system can.
CP=(cp)
probe="$(mktemp)"
if cp --reflink=never "$probe" "$probe.2" 2>/dev/null; then CP=(cp --reflink=never); fi
rm -f "$probe" "$probe.2"

median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maximum() { sort -g | tail -n 1; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
bytes_mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
file_size() { wc -c <"$1" | tr -d ' '; }

# ---------------------------------------------------------------- usm-repair binary

BIN=""
if [[ $REFERENCE_ONLY -eq 0 ]]; then
  if [[ -n "${USM_REPAIR_BIN:-}" ]]; then
    BIN="$USM_REPAIR_BIN"
    echo "using USM_REPAIR_BIN=$BIN"
  else
    command -v swift >/dev/null || die "swift not found; set USM_REPAIR_BIN or use --reference-only"
    build=(swift build -c release --product usm-repair)
    [[ -n "${USM_BENCH_SCRATCH:-}" ]] && build+=(--scratch-path "$USM_BENCH_SCRATCH")
    echo "building: (cd $ROOT && ${build[*]})"
    (cd "$ROOT" && "${build[@]}") || die "release build failed; set USM_REPAIR_BIN to a prebuilt binary or use --reference-only"
    BIN="$(cd "$ROOT" && "${build[@]}" --show-bin-path)/usm-repair"
  fi
  [[ -x "$BIN" ]] || die "usm-repair binary not found or not executable: $BIN"
fi

# ---------------------------------------------------------------- store

STORE_DIR="$WORK/store"
STORE="$STORE_DIR/Bench.sqlite"
PARAMS_FILE="$STORE_DIR/params"
GEN_LOG="$STORE_DIR/generate.log"
GENERATOR="$SCRIPT_DIR/make-large-store.py"
params="objects=$OBJECTS wal_rows=$WAL_ROWS generator=$(sha256 "$GENERATOR")"

reason=""
if [[ $REGENERATE -eq 1 ]]; then
  reason="--regenerate given"
elif [[ ! -s "$STORE" ]]; then
  reason="no store in $STORE_DIR"
elif [[ ! -s "$PARAMS_FILE" ]]; then
  reason="no record of how the store was made, or an earlier run modified it"
elif [[ "$(cat "$PARAMS_FILE")" != "$params" ]]; then
  reason="the store was made with other parameters or another generator version"
elif [[ $WAL_ROWS -gt 0 && ! -s "$STORE-wal" ]]; then
  reason="the store's -wal is gone; something checkpointed it"
fi
if [[ -n "$reason" ]]; then
  echo "generating store ($reason): $OBJECTS objects, $WAL_ROWS rows in the -wal"
  mkdir -p "$STORE_DIR"
  rm -f "$PARAMS_FILE"
  python3 "$GENERATOR" "$STORE" --objects "$OBJECTS" --wal-rows "$WAL_ROWS" --force | tee "$GEN_LOG"
  if [[ $WAL_ROWS -gt 0 && ! -s "$STORE-wal" ]]; then die "generator left no -wal next to $STORE"; fi
  printf '%s\n' "$params" >"$PARAMS_FILE"
else
  echo "reusing store $STORE (--regenerate to rebuild)"
fi

# The files the reference copies, and the files that must not change.
COPY_SET=("$STORE")
[[ -e "$STORE-wal" ]] && COPY_SET+=("$STORE-wal")
WATCHED=("$STORE" "$STORE-wal" "$STORE-shm" "$STORE-journal")

snapshot() {  # one "name hash" line per watched file; "absent" when missing
  local f
  for f in "${WATCHED[@]}"; do
    if [[ -e "$f" ]]; then echo "$(basename "$f") $(sha256 "$f")"; else echo "$(basename "$f") absent"; fi
  done
}

RUN_DIR="$(mktemp -d "$WORK/run.XXXXXX")"
trap 'rm -rf "$RUN_DIR"' EXIT

# Warm the page cache so neither side pays for the first read from disk.
cat "${COPY_SET[@]}" >/dev/null

echo "hashing the store's files"
BEFORE="$(snapshot)"
SHM_CHANGED=0

check_unchanged() {  # $1 = what just ran; exits 3 if any watched file changed, appeared or vanished
  local after name before_hash after_hash modified=0
  after="$(snapshot)"
  [[ "$BEFORE" == "$after" ]] && return 0
  SHM_CHANGED=1
  while read -r name before_hash && read -r _ after_hash <&3; do
    [[ "$before_hash" == "$after_hash" ]] && continue
    if [[ "$name" == *-shm && $ALLOW_SHM_CHANGE -eq 1 ]]; then
      echo "warning: $name changed after $1 ($before_hash -> $after_hash); allowed by --allow-shm-change" >&2
      continue
    fi
    echo "!!! $name changed after $1: $before_hash -> $after_hash" >&2
    modified=1
  done < <(printf '%s\n' "$BEFORE") 3< <(printf '%s\n' "$after")
  [[ $modified -eq 0 ]] && return 0
  echo "!!! FAIL: the store was modified; 'usm-repair status' must be read-only." >&2
  echo "!!! The store in $STORE_DIR is no longer the generated one; it will be regenerated next time." >&2
  rm -f "$PARAMS_FILE"   # force regeneration next time
  exit 3
}

# ---------------------------------------------------------------- runs

RUN_SECS=""; RUN_KIB=""
reference_run() {  # sets RUN_SECS and RUN_KIB
  local i="$1" dest="$RUN_DIR/ref-copy" t0 t1 out
  rm -rf "$dest"
  t0="$(now)"
  mkdir "$dest"
  "${CP[@]}" "${COPY_SET[@]}" "$dest/" || die "reference run $i: copying the store failed"
  if ! run_measured "$RUN_DIR/ref.rss" "$RUN_DIR/ref.err" \
         sqlite3 "$dest/$(basename "$STORE")" 'PRAGMA quick_check' >"$RUN_DIR/ref.out"; then
    cat "$RUN_DIR/ref.err" >&2
    die "reference run $i: sqlite3 quick_check failed"
  fi
  t1="$(now)"
  out="$(cat "$RUN_DIR/ref.out")"
  [[ "$out" == "ok" ]] || die "reference run $i: quick_check did not say ok: $(head -c 500 "$RUN_DIR/ref.out")"
  rm -rf "$dest"
  RUN_SECS="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  RUN_KIB="$(cat "$RUN_DIR/ref.rss")"
}

USM_RC_SEEN=""
usm_run() {  # sets RUN_SECS and RUN_KIB; $2 = where usm-repair's stdout goes
  local i="$1" out="$2" t0 t1 rc=0
  t0="$(now)"
  run_measured "$RUN_DIR/usm.rss" "$RUN_DIR/usm.err" \
    "$BIN" status --store "$STORE" --json >"$out" || rc=$?
  t1="$(now)"
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then
    echo "---- usm-repair stderr (run $i, exit code $rc) ----" >&2
    cat "$RUN_DIR/usm.err" >&2
    echo "----" >&2
    die "usm-repair status exited with $rc (0 = healthy, 1 = problems found; anything else is a failure)"
  fi
  USM_RC_SEEN="$rc"
  RUN_SECS="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  RUN_KIB="$(cat "$RUN_DIR/usm.rss")"
}

if [[ -n "$BIN" ]]; then
  # One untimed run that keeps the JSON (also warms the binary); checks that it parses.
  usm_run 0 "$WORK/status.json"
  check_unchanged "usm-repair run 0"
  echo "usm-repair untimed run: exit code $USM_RC_SEEN, ${RUN_SECS} s"
  if python3 -m json.tool "$WORK/status.json" >/dev/null 2>&1; then
    echo "status --json output is valid JSON ($WORK/status.json)"
  else
    echo "warning: status --json output is not valid JSON ($WORK/status.json)" >&2
  fi
fi

: >"$RUN_DIR/ref.times"; : >"$RUN_DIR/ref.rsss"; : >"$RUN_DIR/usm.times"; : >"$RUN_DIR/usm.rsss"
for ((i = 1; i <= RUNS; i++)); do   # interleaved, so both sides see the same machine state
  reference_run "$i"
  echo "reference  run $i: ${RUN_SECS} s, sqlite3 peak $(mib "$RUN_KIB") MiB"
  echo "$RUN_SECS" >>"$RUN_DIR/ref.times"; echo "$RUN_KIB" >>"$RUN_DIR/ref.rsss"
  if [[ -n "$BIN" ]]; then
    usm_run "$i" /dev/null
    check_unchanged "usm-repair run $i"   # outside the timed part
    echo "usm-repair run $i: ${RUN_SECS} s, peak $(mib "$RUN_KIB") MiB, exit code $USM_RC_SEEN"
    echo "$RUN_SECS" >>"$RUN_DIR/usm.times"; echo "$RUN_KIB" >>"$RUN_DIR/usm.rsss"
  fi
done

# ---------------------------------------------------------------- read-only check

echo "re-hashing the store's files"
check_unchanged "the benchmark"
if [[ $SHM_CHANGED -eq 0 ]]; then
  echo "store unchanged (sha256 of main, -wal, -shm identical before and after)"
else
  echo "store unchanged except -shm (allowed by --allow-shm-change)"
fi

# ---------------------------------------------------------------- report

REF_S="$(median <"$RUN_DIR/ref.times")"
REF_KIB="$(maximum <"$RUN_DIR/ref.rsss")"
objects_line="$(grep '^objects:' "$GEN_LOG" 2>/dev/null | sed 's/^objects: *//' || true)"
wal_size=0; [[ -e "$STORE-wal" ]] && wal_size="$(file_size "$STORE-wal")"

echo
echo "usm-repair status benchmark ($(uname -sm), $RUNS runs, median wall time, peak RSS = max over runs)"
echo "  store: $STORE"
echo "  objects: ${objects_line:-?}; main $(bytes_mib "$(file_size "$STORE")") MiB, -wal $(bytes_mib "$wal_size") MiB"
echo
row() { printf '  %-36s %9s %-4s %-9s %s\n' "$@"; }
row "measure" "value" "" "target" "result"
row "reference: cp + sqlite3 quick_check" "$REF_S" "s" "" ""
row "reference: sqlite3 peak RSS" "$(mib "$REF_KIB")" "MiB" "" "(info)"

miss=0
if [[ -n "$BIN" ]]; then
  USM_S="$(median <"$RUN_DIR/usm.times")"
  USM_KIB="$(maximum <"$RUN_DIR/usm.rsss")"
  USM_MIB="$(mib "$USM_KIB")"
  RATIO="$(awk -v u="$USM_S" -v r="$REF_S" 'BEGIN { printf "%.2f", (r > 0 ? u / r : 0) }')"
  ratio_ok="$(awk -v x="$RATIO" -v t="$TARGET_RATIO" 'BEGIN { print (x <= t ? "PASS" : "FAIL") }')"
  rss_ok="$(awk -v k="$USM_KIB" -v t="$TARGET_MIB" 'BEGIN { print (k < t * 1024 ? "PASS" : "FAIL") }')"
  row "usm-repair status --json" "$USM_S" "s" "" "(exit code $USM_RC_SEEN)"
  row "ratio usm-repair / reference" "$RATIO" "" "<= $TARGET_RATIO" "$ratio_ok"
  row "usm-repair peak RSS" "$USM_MIB" "MiB" "< $TARGET_MIB" "$rss_ok"
  echo
  echo "summary: reference=${REF_S}s usm=${USM_S}s ratio=${RATIO} usm_peak_mib=${USM_MIB} ratio_target=${ratio_ok} rss_target=${rss_ok}"
  [[ $ratio_ok == PASS && $rss_ok == PASS ]] || miss=1
else
  echo
  echo "summary: reference=${REF_S}s (usm-repair not run: --reference-only)"
fi

if [[ $miss -eq 1 ]]; then
  if [[ $ENFORCE -eq 1 ]]; then
    echo "FAIL: a target was missed (--enforce)" >&2
    exit 1
  fi
  echo "note: a target was missed (not enforced; pass --enforce to fail)"
fi
exit 0
