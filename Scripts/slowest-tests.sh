#!/usr/bin/env bash
# Prints the N slowest tests (default 20), slowest first, by their own duration: the seconds from the
# start to the end of each test's body, a parameterised test's cases summed (with their count).
# The input is the file a `swift test` run wrote with USM_TEST_TIMES=FILE (TimedTrait, on every
# suite, appends `seconds<TAB>name<TAB>file:line` per test case). Swift Testing's own "passed after"
# lines are no use: in a parallel run on 2 cores the end events of finished tests wait behind the
# tests still running, so every test seemed to last the whole run. In a parallel run a body's
# seconds still include contention for the cores while it runs: where the time goes, not exact costs.
# Usage: Scripts/slowest-tests.sh TIMES-FILE [N]
set -euo pipefail
times=${1:?usage: slowest-tests.sh TIMES-FILE [N]}
n=${2:-20}
if [ ! -s "$times" ]; then
    echo "slowest-tests: no test durations in $times (run swift test with USM_TEST_TIMES=$times)" >&2
    exit 0
fi
echo "The $n slowest tests (seconds of their own bodies; cases of a parameterised test summed):"
awk -F'\t' '{ key = $2 "\t" $3; sum[key] += $1; cases[key]++ }
    END { for (k in sum) { split(k, p, "\t"); printf "%8.2f  %s (%s%s)\n", sum[k], p[1], p[2], (cases[k] > 1 ? ", " cases[k] " cases" : "") } }' \
    "$times" | sort -rn | head -n "$n" || true
awk -F'\t' '{ s += $1 } END { printf "All %d test cases: %.1f s of bodies.\n", NR, s }' "$times"
