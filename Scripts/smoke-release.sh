#!/usr/bin/env bash
# Builds the release binary and runs it as a user would on a copy of the example container: the
# read-only commands, a changing command's dry run and the change itself, its undo, and a migration
# through the engine. Fails on a crash or an undocumented exit code. (Release builds optimise
# differently: a crash there once went unseen by the debug build the tests used then; CI passes the
# optimised build its tests ran with.)
# Usage: Scripts/smoke-release.sh   (USM_REPAIR_BIN: use this binary instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${USM_REPAIR_BIN:-}" ]]; then
  swift build -c release --product usm-repair >&2
  USM_REPAIR_BIN="$(swift build -c release --show-bin-path)/usm-repair"
fi
work="$(mktemp -d)"
state="$(mktemp -d)"   # outside every folder a command changes (snapshots live there)
trap 'rm -rf "$work" "$state"' EXIT
cp -R Examples/Demo.xcappdata "$work/Demo.xcappdata"
mkdir -p "$work/out"
export XDG_STATE_HOME="$state"
failed=0
# expect "CODES" ARGS...: runs the binary; its exit code must be one of CODES.
expect() {
  local codes="$1"; shift
  local status=0
  "$USM_REPAIR_BIN" "$@" >"$state/stdout" 2>"$state/stderr" || status=$?
  if [[ " $codes " != *" $status "* ]]; then
    echo "smoke: usm-repair $* exited $status (expected $codes)" >&2
    tail -n 5 "$state/stderr" >&2
    failed=1
  else
    echo "smoke: usm-repair $1 ${2:-} ... exit $status" >&2
  fi
}
c="$work/Demo.xcappdata"
expect "0" --version
expect "0 1" status --container "$c"
expect "0 1" status --container "$c" --json
expect "0 1" check --container "$c"
expect "0" strategies
expect "0" archive --container "$c" -o "$work/bundle.tar.zst"
expect "0 1" bundle verify "$work/bundle.tar.zst"
expect "0" restore "$work/bundle.tar.zst" --to "$work/restored" --yes
expect "0" cloud disable --container "$c" --dry-run
expect "0" cloud disable --container "$c" --yes --snapshot-dir "$state/snapshots"
expect "0" snapshots list --snapshot-dir "$state/snapshots"
snapshot="$(ls "$state"/snapshots/*.tar.zst | head -n 1)"
expect "0" restore "$snapshot" --yes
store="$(find "$c" -name 'UbiquityStore.sqlite' | head -n 1)"
expect "0" migrate-store "$store" "$work/out/copy.sqlite" --strategy copy-entities
expect "0" migrate-store "$store" "$work/out/ios.sqlite" --strategy ios
expect "0" check --store "$work/out/copy.sqlite"
exit "$failed"
