#!/usr/bin/env bash
# Builds the fuzz targets of Fuzz/ with libFuzzer (and AddressSanitizer, which also finds leaks)
# and runs each for a given time.
#
# Usage: Scripts/fuzz.sh [TARGET|all] [SECONDS]      (defaults: all, 30)
# Environment:
#   FUZZ_NO_BUILD=1    use the binaries already built (run several scripts side by side)
#   FUZZ_SANITIZERS    default "fuzzer,address"; "fuzzer" alone is faster but finds no leaks
#   FUZZ_TIMEOUT       seconds one input may take before it counts as a hang (default 10)
#   FUZZ_RSS_MB        memory one run may reach before it counts as a finding (default 2048)
#   FUZZ_ARGS          more libFuzzer flags, e.g. "-jobs=2 -workers=2"
#   FUZZ_CONFIGURATION release (default: optimised, many more inputs a second) or debug (builds in
#                      a fraction of the time and memory on a small machine; finds the same bugs)
#
# Each target runs on a working corpus in Fuzz/.build/corpus/TARGET (kept between runs, ignored by
# git) seeded from Fuzz/Corpus/TARGET (committed). A crash, a leak, a hang past FUZZ_TIMEOUT or
# memory past FUZZ_RSS_MB stops that target; its input is kept as Fuzz/.build/findings/TARGET/*
# (copy it into Fuzz/Corpus/TARGET once fixed). Prints one line per target (executions, coverage,
# features, corpus) and exits 1 when any target found something, 2 on a set-up error.
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ="$ROOT/Fuzz"
SCRATCH="$FUZZ/.build"
TARGET="${1:-all}"
SECONDS_EACH="${2:-30}"
SANITIZERS="${FUZZ_SANITIZERS:-fuzzer,address}"
TIMEOUT="${FUZZ_TIMEOUT:-10}"
RSS_MB="${FUZZ_RSS_MB:-2048}"
CONFIGURATION="${FUZZ_CONFIGURATION:-release}"

die() { echo "fuzz.sh: $*" >&2; exit 2; }
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || die "SECONDS must be a whole number, not '$SECONDS_EACH'"
[[ "$CONFIGURATION" == release || "$CONFIGURATION" == debug ]] ||
  die "FUZZ_CONFIGURATION must be release or debug, not '$CONFIGURATION'"

mapfile -t ALL < <(find "$FUZZ/Sources" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
[[ ${#ALL[@]} -gt 0 ]] || die "no targets under $FUZZ/Sources"
if [[ "$TARGET" == all ]]; then
  TARGETS=("${ALL[@]}")
else
  [[ -d "$FUZZ/Sources/$TARGET" ]] || die "no target '$TARGET' (targets: ${ALL[*]})"
  TARGETS=("$TARGET")
fi

if [[ "${FUZZ_NO_BUILD:-0}" != 1 ]]; then
  echo "building ${#ALL[@]} fuzz targets ($CONFIGURATION) with -sanitize=$SANITIZERS ..." >&2
  # SwiftPM keeps the file lists of a path dependency until the manifest changes: a new file in
  # the core would be missing from the fuzz build. Touching the manifest makes it look again.
  touch "$FUZZ/Package.swift"
  # (the gold linker warns about every ASan helper symbol it cannot export: noise)
  # Release (optimised code runs many times more inputs a second), with testing enabled so that the
  # targets reach the core's internal parsers (@testable import).
  (cd "$FUZZ" && swift build -c "$CONFIGURATION" --scratch-path "$SCRATCH" -Xswiftc -enable-testing -Xswiftc "-sanitize=$SANITIZERS" \
    -Xswiftc -g 2>&1 | grep -v 'Cannot export local symbol' >&2; exit "${PIPESTATUS[0]}") || die "the build failed"
fi
BIN="$(cd "$FUZZ" && swift build -c "$CONFIGURATION" --scratch-path "$SCRATCH" --show-bin-path)"

# The inputs a parser reads from a path are written per run into a private folder: on tmpfs when
# there is one (no disk I/O per run).
if [[ -z "${FUZZ_TMPDIR:-}" ]]; then
  if [[ -d /dev/shm && -w /dev/shm ]]; then FUZZ_TMPDIR=/dev/shm; else FUZZ_TMPDIR="${TMPDIR:-/tmp}"; fi
fi
RUN_TMP="$(mktemp -d "$FUZZ_TMPDIR/usm-repair-fuzz.XXXXXX")"
trap 'rm -rf "$RUN_TMP"' EXIT

# Leaks are checked at the end of each input (detect_leaks); Swift's runtime keeps its metadata
# caches reachable, so nothing but a real leak is reported.
# Leaks of the toolchain's own libraries are listed (and explained) in Fuzz/lsan-suppressions.txt.
# The Swift runtime's own crash reporter reads memory that ASan guards: off, libFuzzer reports.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:handle_abort=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$FUZZ/lsan-suppressions.txt:print_suppressions=0}"

failed=0
summary=()
printf '%-16s %8s %10s %9s %7s %7s %12s  %s\n' target seconds executions "exec/s" cov ft corpus result >&2
for t in "${TARGETS[@]}"; do
  exe="$BIN/$t"
  [[ -x "$exe" ]] || die "no binary $exe (build first, or unset FUZZ_NO_BUILD)"
  work="$SCRATCH/corpus/$t"; findings="$SCRATCH/findings/$t"; seeds="$FUZZ/Corpus/$t"
  mkdir -p "$work" "$findings" "$seeds"
  log="$SCRATCH/logs/$t.log"; mkdir -p "$(dirname "$log")"
  tmp="$RUN_TMP/$t"; mkdir -p "$tmp"
  set +e
  started=$(date +%s)
  # shellcheck disable=SC2086
  TMPDIR="$tmp" "$exe" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -print_final_stats=1 -artifact_prefix="$findings/" ${FUZZ_ARGS:-} "$work" "$seeds" >"$log" 2>&1
  status=$?
  elapsed=$(($(date +%s) - started))  # less than SECONDS when a finding stopped the run
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last"); ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
  persec=$(awk -v e="${execs:-0}" -v s="$elapsed" 'BEGIN { if (s > 0) printf "%.0f", e / s; else print 0 }')
  if [[ $status -eq 0 ]]; then
    result=ok
  else
    failed=1
    kind=$(grep -oE 'ERROR: (libFuzzer: [a-z-]+|AddressSanitizer: [a-zA-Z-]+|LeakSanitizer: [a-z ]+)|FUZZ FINDING: .*|Fatal error: .*' "$log" | head -n 1 || true)
    result="FAILED (exit $status) ${kind:-see $log}; input in $findings"
  fi
  printf '%-16s %8s %10s %9s %7s %7s %12s  %s\n' "$t" "$elapsed" "${execs:-?}" "$persec" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result" >&2
  summary+=("$t=${execs:-0}/${elapsed}s:${result%% *}")
done
echo "summary: seconds=$SECONDS_EACH (each at most) ${summary[*]}"
exit "$failed"
