#!/usr/bin/env bash
# Prints the N slowest tests (default 20) of a `swift test` log, slowest first, from Swift
# Testing's "Test "name" passed|failed after S seconds" lines (a parameterised test: its
# whole run). Usage: Scripts/slowest-tests.sh LOG [N]
set -euo pipefail
log=${1:?usage: slowest-tests.sh LOG [N]}
n=${2:-20}
echo "The $n slowest tests (seconds):"
grep -aE '^[^A-Za-z"]*Test .* (passed|failed|recorded an issue).* after [0-9.]+ seconds' "$log" \
    | sed -E 's/^[^A-Za-z"]*Test (.*) (passed|failed|recorded).* after ([0-9.]+) seconds.*/\3\t\1/' \
    | sort -rn | head -n "$n" || true
