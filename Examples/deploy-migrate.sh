#!/bin/sh
# One deployment step over a folder of customers' app containers: move each one's cloud data into
# its local store (`usm-repair migrate cloud-to-local`), unattended, and say for each container
# whether it was done, had nothing to do, was refused (nothing changed: it needs a person) or failed.
# Safe to run again: a container already migrated is "nothing to do".
#
#   Examples/deploy-migrate.sh FOLDER [usm-repair flags...]
#
# e.g. `Examples/deploy-migrate.sh /srv/containers --merge` or `... --dry-run`. Every container
# (`FOLDER/*.xcappdata`) gets its JSON report beside it (`<name>.report.json`) and its messages
# (`<name>.log`). One line per container on stdout: outcome, exit code, name; then a summary.
# The exit status is 0 when nothing failed, 1 otherwise (refusals are not failures: nothing changed).
# USM_REPAIR names the executable (default: usm-repair on PATH).
set -u
usm=${USM_REPAIR:-usm-repair}
[ $# -ge 1 ] || { echo "usage: $0 FOLDER [usm-repair flags...]" >&2; exit 64; }
folder=$1
shift
applied="done"
for arg in "$@"; do [ "$arg" = "--dry-run" ] && applied="would be done"; done
done_count=0 nothing=0 refused=0 failed=0
for container in "$folder"/*.xcappdata; do
  [ -d "$container" ] || continue
  name=$(basename "$container" .xcappdata)
  # --detailed-exitcode: 20 when files were changed, 0 when there was nothing to do.
  "$usm" migrate cloud-to-local --container "$container" --yes --json --detailed-exitcode "$@" \
    > "$folder/$name.report.json" 2> "$folder/$name.log"
  code=$?
  case $code in
    20) outcome=$applied; done_count=$((done_count + 1)) ;;
    0) outcome="nothing to do"; nothing=$((nothing + 1)) ;;
    # Bad input (2), refused (3), container needed (4), store in use (5), another run (6),
    # interrupted operation (7), precondition (8), files changed meanwhile (9): nothing changed.
    2|3|4|5|6|7|8|9) outcome="refused"; refused=$((refused + 1)) ;;
    # The work could not be done: strategy or verification (10), I/O (74), no room (75), usage...
    *) outcome="failed"; failed=$((failed + 1)) ;;
  esac
  printf '%s\t%s\t%s\n' "$outcome" "$code" "$name"
done
printf 'summary\tdone %d\tnothing to do %d\trefused %d\tfailed %d\n' "$done_count" "$nothing" "$refused" "$failed"
[ "$failed" -eq 0 ]
