#!/usr/bin/env bash
# Prints the N slowest tests (default 20) of a `swift test` log, slowest first, from Swift
# Testing's "Test "name" passed|failed after S seconds" lines (a parameterised test: its
# whole run). Tests run in parallel, so a test's seconds are from its start to its end, waits for
# the cores and for tests it is serialised with included: candidates to look at, not exact costs.
# Usage: Scripts/slowest-tests.sh LOG [N]
set -euo pipefail
log=${1:?usage: slowest-tests.sh LOG [N]}
n=${2:-20}
echo "The $n slowest tests (seconds from start to end, waits included):"
grep -aE '^[^A-Za-z"]*Test .* (passed|failed|recorded an issue).* after [0-9.]+ seconds' "$log" \
    | sed -E 's/^[^A-Za-z"]*Test (.*) (passed|failed|recorded).* after ([0-9.]+) seconds.*/\3\t\1/' \
    | grep -v -P '^[0-9.]+\trun with ' | sort -rn | head -n "$n" || true
