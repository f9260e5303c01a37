#!/usr/bin/env bash
# Benchmark the maintenance operations (issue 9) on a real iOS 7+ layout whose active cloud store's
# copy holds N objects (default 1,000,000), every figure and ratio from one run:
#   migrate cloud-to-local, rebuild --from cloud (default strategy and --strategy ios)
#       vs the same work done carefully by hand: bsdtar --zstd -cf of the files the operation
#          touches, sqlite3 .backup of the store into place, PRAGMA integrity_check of the store it
#          built (targets, issue 33: migrate cloud-to-local <= 1.3x, rebuild --from cloud <= 1.5x);
#   the same operations with --dry-run
#       vs PRAGMA quick_check of both stores by hand (the local store and the active copy; target <= 1.5x);
#   rebuild --from local, migrate local-to-cloud, switch, cloud enable|disable, corruption mark|clear,
#   every delete variant
#       vs bsdtar --zstd -cf of exactly the paths the operation snapshots, beside the snapshot's size
#          and the layout's size (target: time in the size of the snapshot, not of the layout);
#   peak memory (GNU /usr/bin/time -v) of every usm-repair run (target <= 64 MiB).
# Every operation runs on a fresh `cp -a` copy of the layout (made outside the timed part), with
# XDG_STATE_HOME in the work folder so that snapshots stay out of the home folder. Each run
# alternates the two sides (by hand first in odd runs, usm-repair first in even ones); the ratio of
# each row is taken within a run, and the median of the runs' ratios is reported (default 3 runs).
#
# Usage: Benchmarks/operations-benchmark.sh [--objects N] [--local-objects M] [--logs-mib L]
#          [--runs R] [--only REGEX] [--workdir DIR] [--regenerate] [--enforce]
# Environment: USM_REPAIR_BIN     use this binary instead of building one (swift build -c release)
#              USM_BENCH_SCRATCH  pass --scratch-path to that build (e.g. .build-bench)
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OBJECTS=1000000
LOCAL_OBJECTS=100000
LOGS_MIB=32
RUNS=3
ONLY=""
WORK="${TMPDIR:-/tmp}"; WORK="${WORK%/}/usm-operations-bench"
REGENERATE=0
ENFORCE=0
TARGET_RATIO=1.0
TARGET_DRY=1.5
TARGET_MIB=64
# Issue 33's targets per data-moving operation (the rest: TARGET_RATIO).
target_of() { case "$1" in "migrate cloud-to-local"*) echo 1.3 ;; "rebuild --from cloud"*) echo 1.5 ;; *) echo "$TARGET_RATIO" ;; esac; }
# Every usm-repair run prints its phases (`timing: <phase> <seconds>` on stderr).
export USM_REPAIR_TIMINGS=1

die() { echo "error: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --objects) OBJECTS="$2"; shift 2 ;;
    --local-objects) LOCAL_OBJECTS="$2"; shift 2 ;;
    --logs-mib) LOGS_MIB="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --workdir) WORK="${2%/}"; shift 2 ;;
    --regenerate) REGENERATE=1; shift ;;
    --enforce) ENFORCE=1; shift ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
command -v bsdtar >/dev/null || die "bsdtar not found (apt-get install libarchive-tools)"
command -v sqlite3 >/dev/null || die "sqlite3 not found"
command -v python3 >/dev/null || die "python3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
[[ "$(/usr/bin/time -v true 2>&1)" == *"Maximum resident set size"* ]] || die "/usr/bin/time is not GNU time (-v)"

BIN="${USM_REPAIR_BIN:-}"
if [[ -z "$BIN" ]]; then
  scratch=()
  [[ -n "${USM_BENCH_SCRATCH:-}" ]] && scratch=(--scratch-path "$USM_BENCH_SCRATCH")
  (cd "$ROOT" && swift build -c release --product usm-repair "${scratch[@]}" >&2) || die "release build failed"
  BIN="$(cd "$ROOT" && swift build -c release --show-bin-path "${scratch[@]}")/usm-repair"
fi
[[ -x "$BIN" ]] || die "no usm-repair binary at $BIN"

# ---------------------------------------------------------------- the layout (built once, reused)
# $WORK/base/Notes.xcappdata                                   the download (what --container names)
# $WORK/base/Mobile Documents/ABCDE12345~com~example~notes     the ubiquity container beside it
TEAM=ABCDE12345
ACTIVE=0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B
OLD=A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF
PEER_UUID=8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A
ACCOUNT=7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E
BASE="$WORK/base"
STAMP="$WORK/.params"
PARAMS="objects=$OBJECTS local=$LOCAL_OBJECTS logs=$LOGS_MIB gen=$(cat "$SCRIPT_DIR/make-migrate-store.py" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
# Paths inside a layout folder $1 (base or run).
app_dir() { printf '%s' "$1/Notes.xcappdata/AppData/Library/Application Support"; }
cloud_dir() { printf '%s' "$1/Mobile Documents/$TEAM~com~example~notes"; }
prefs_of() { printf '%s' "$1/Notes.xcappdata/AppData/Library/Preferences/com.example.notes.plist"; }
copy_of() { printf '%s' "$(app_dir "$1")/CloudStore/CoreDataUbiquitySupport/mobile~$PEER_UUID/$2/$ACCOUNT/store/$2.sqlite"; }

# write_prefs FILE CLOUD_ENABLED(1|0): binary plist as the app writes it (USMCloudEnabledKey, the
# cached StoreUUID of StoreUUID+, Core Data's account map of the active store, other keys).
write_prefs() {
  python3 - "$1" "$2" "$TEAM" "$ACTIVE" "$ACCOUNT" <<'EOF'
import plistlib, sys
path, enabled, team, active, account = sys.argv[1], sys.argv[2] == "1", *sys.argv[3:]
prefs = {"NSLanguages": ["en"], "LastLaunchVersion": "2.4", "USMCloudEnabledKey": enabled,
         f"/private/var/mobile/Library/Mobile Documents/{team}~com~example~notes/CloudLogs/StoreUUID+": active,
         active: {"PFUbiquitySetupTokenAndIDArray": [[b"identity-token", account]]}}
with open(path, "wb") as f:
    plistlib.dump(prefs, f, fmt=plistlib.FMT_BINARY)
EOF
}

if [[ $REGENERATE -eq 1 || ! -f "$STAMP" || "$(cat "$STAMP")" != "$PARAMS" ]]; then
  echo "generating the layout in $BASE: cloud store copy of $OBJECTS objects, local store of $LOCAL_OBJECTS, $LOGS_MIB MiB of logs" >&2
  rm -rf "$WORK"; mkdir -p "$BASE"
  APP="$(app_dir "$BASE")"; CLOUD="$(cloud_dir "$BASE")"
  mkdir -p "$APP/CloudStore" "$BASE/Notes.xcappdata/AppData/Documents" "$(dirname "$(prefs_of "$BASE")")"
  # The local store: rows waiting in its -wal (the app was running), -shm beside, external data.
  python3 "$SCRIPT_DIR/make-migrate-store.py" "$APP/UbiquityStore.sqlite" --objects "$LOCAL_OBJECTS" --wal-rows 1000 --prefix b --local >&2
  # Core Data's copy of the active cloud store (inheritance, to-one, many-to-many, external data,
  # the last 1,000 items only in its -wal), and of an older store; each with Core Data's container/.
  for spec in "$ACTIVE $OBJECTS 1000 a" "$OLD 1000 0 c"; do
    read -r uuid n wal prefix <<<"$spec"
    store="$(copy_of "$BASE" "$uuid")"
    mkdir -p "$(dirname "$store")" "$(dirname "$(dirname "$store")")/container"
    python3 "$SCRIPT_DIR/make-migrate-store.py" "$store" --objects "$n" --wal-rows "$wal" --prefix "$prefix" >&2
    printf 'bookkeeping' > "$(dirname "$(dirname "$store")")/container/ubiquity.plist"
  done
  # The ubiquity container: StoreUUID+ naming the active store, transaction logs of both stores
  # (half-compressible, 256 KiB each for the active store), receipts.
  for uuid in "$ACTIVE" "$OLD"; do
    mkdir -p "$CLOUD/CloudLogs/$uuid/mobile.$PEER_UUID/$uuid/receipts"
    printf 'receipt' > "$CLOUD/CloudLogs/$uuid/mobile.$PEER_UUID/$uuid/receipts/0001.receipt"
  done
  printf 'opaque transaction log' > "$CLOUD/CloudLogs/$OLD/mobile.$PEER_UUID/$OLD/00001.cdt"
  for i in $(seq 1 $(( LOGS_MIB * 4 ))); do
    head -c $(( 256 * 1024 * 3 / 4 )) /dev/urandom | base64 -w 0 > "$CLOUD/CloudLogs/$ACTIVE/mobile.$PEER_UUID/$ACTIVE/$(printf '%05d' "$i").cdt"
  done
  printf '%s' "$ACTIVE" > "$CLOUD/CloudLogs/StoreUUID+"
  write_prefs "$(prefs_of "$BASE")" 1
  "$BIN" status --container "$BASE/Notes.xcappdata" --json > "$WORK/base-status.json" || true
  python3 - "$WORK/base-status.json" <<'EOF' || die "the generated layout is not what the benchmark needs (see $WORK/base-status.json)"
import json, sys
d = json.load(open(sys.argv[1]))
nl = d.get("nextLaunch") or {}
assert nl.get("store") == "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B", nl
healthy = [s for s in d["stores"] if s.get("health") == "ok"]
assert len(healthy) >= 3, [(s["path"], s.get("health")) for s in d["stores"]]
assert d["summary"]["errors"] == 0, [p for s in d["stores"] for p in s["problems"]] + d["problems"]
EOF
  printf '%s' "$PARAMS" > "$STAMP"
fi
LAYOUT_BYTES=$(du -sb "$BASE" | cut -f1)

# ---------------------------------------------------------------- helpers
RUN="$WORK/run"; REF="$WORK/ref"; OUT="$WORK/out"
export XDG_STATE_HOME="$WORK/state"
mkdir -p "$OUT"
now() { printf '%s\n' "$EPOCHREALTIME"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# fresh DIR: a byte-for-byte copy of the layout, flushed and in the page cache (outside any timing).
fresh() {
  rm -rf "$1"; cp -a "$BASE" "$1"; sync
  find "$1" -type f -print0 | xargs -0 cat > /dev/null
}

# timed FILE CMD...: runs CMD under GNU time -v; appends "seconds peak_kib" to FILE; stdout to FILE.stdout.
timed() {
  local file="$1"; shift
  local t0 t1
  t0=$(now)
  /usr/bin/time -v -o "$OUT/time.txt" "$@" > "$file.stdout" 2> "$file.stderr" || { tail -n 20 "$file.stderr" >&2; die "failed: $*"; }
  t1=$(now)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/time.txt")" >> "$file"
}

# status_time FILE DIR: `usm-repair status` on DIR (what an operation runs before planning and on its
# result), appending its seconds to FILE; exit 1 (problems found) counts as a normal run.
status_time() {
  local t0 t1 rc=0
  t0=$(now)
  "$BIN" status --container "$2/Notes.xcappdata" --json > /dev/null 2>&1 || rc=$?
  t1=$(now)
  [[ $rc -le 1 ]] || die "status failed on $2 (exit $rc)"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >> "$1"
}

# plan_paths DIR OP...: the paths the operation's plan retires (exactly what its snapshot captures
# besides the absent paths it records), from --dry-run --json, NUL-separated relative to /.
plan_paths() {
  local dir="$1"; shift
  "$BIN" "$@" --container "$dir/Notes.xcappdata" --dry-run --json > "$OUT/plan.json" || die "dry run failed: $*"
  python3 - "$OUT/plan.json" > "$OUT/paths" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
assert not plan["noOp"], "the operation would do nothing on this layout"
paths = [s["paths"][0] for s in plan["steps"] if s["action"] == "retire"]
sys.stdout.write("".join(p.lstrip("/") + "\0" for p in paths))
EOF
  SNAP_BYTES=$(cd / && xargs -0 -r du -sbc < "$OUT/paths" | tail -n 1 | cut -f1)
  SNAP_BYTES=${SNAP_BYTES:-0}
  SNAP_ITEMS=$(tr -cd '\0' < "$OUT/paths" | wc -c)
}

# set_up NAME DIR: what a layout needs before NAME has something to do (outside the timing).
set_up() {
  case "$1" in
    "corruption clear") printf '%s' "$ACTIVE" > "$(cloud_dir "$2")/CloudLogs/CorruptedUUID+" ;;
    "cloud enable") write_prefs "$(prefs_of "$2")" 0 ;;
  esac
}

# The by-hand reference of a data-moving operation, on DIR: archive what it touches, copy the
# active copy's data into a staged local store with sqlite3 .backup (read-only source: the copy
# stays as it is), check the result, take its external data along, then swap it into place and
# remove what the operation removes. $OUT/paths holds the touched paths.
# Appends "bsdtar B backup K integrity_check I rest R" (seconds) to $OUT/parts.
by_hand() {
  local dir="$1" app src staged t0 t1 t2 t3 t4
  app="$(app_dir "$dir")"; src="$(copy_of "$dir" "$ACTIVE")"; staged="$app/.staged/UbiquityStore.sqlite"
  t0=$EPOCHREALTIME
  (cd / && bsdtar --zstd -cf "$OUT/ref.tar.zst" --null -T "$OUT/paths")
  t1=$EPOCHREALTIME
  mkdir -p "$app/.staged"
  sqlite3 -readonly "$src" ".backup '$staged'"
  t2=$EPOCHREALTIME
  [[ "$(sqlite3 "$staged" 'PRAGMA integrity_check')" == ok ]] || { echo "integrity_check failed" >&2; return 1; }
  t3=$EPOCHREALTIME
  cp -a "$(dirname "$src")/.${ACTIVE}_SUPPORT" "$app/.staged/.UbiquityStore_SUPPORT"
  (cd / && xargs -0 -r rm -rf < "$OUT/paths")
  mv "$staged" "$app/UbiquityStore.sqlite"
  mv "$app/.staged/.UbiquityStore_SUPPORT" "$app/.UbiquityStore_SUPPORT"
  rmdir "$app/.staged"
  sync
  t4=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" \
    'BEGIN { printf "bsdtar %.3f  .backup %.3f  integrity_check %.3f  rest %.3f\n", b - a, c - b, d - c, e - d }' >> "$OUT/parts"
}
export -f by_hand app_dir copy_of
export OUT ACTIVE PEER_UUID ACCOUNT

# objects DIR: rows of the entity tables of DIR's local store.
objects() {
  sqlite3 -readonly "$(app_dir "$1")/UbiquityStore.sqlite" \
    "SELECT (SELECT COUNT(*) FROM ZFOLDER) + (SELECT COUNT(*) FROM ZITEM) + (SELECT COUNT(*) FROM ZTAG)"
}

# phases JSON WALL BEFORE AFTER: the executor's steps (summed per action) from --json, the status
# runs before planning and on the result (timed separately on the same files), and the rest.
phases() {
  python3 - "$@" <<'EOF'
import collections, json, sys
d = json.load(open(sys.argv[1])); wall, before, after = map(float, sys.argv[2:5])
per = collections.OrderedDict()
for s in d["steps"]:
    per[s["action"]] = per.get(s["action"], 0.0) + (s["seconds"] or 0.0)
inside = sum(per.values())
print("  ".join("%s %.3f" % kv for kv in per.items())
      + "  | status before ~%.3f, after ~%.3f, rest %.3f" % (before, after, wall - inside - before - after))
EOF
}

median() { cut -d' ' -f1 "$1" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { cut -d' ' -f2 "$1" | sort -g | tail -n 1; }
wanted() { [[ -z "$ONLY" || "$1" =~ $ONLY ]]; }
label() { printf '%s' "$1" | tr ' /' '__' | tr -cd 'A-Za-z0-9_.-'; }

# ---------------------------------------------------------------- the runs
# --replace: the layout's local store holds objects the cloud store lacks (another prefix), so the
# operations refuse to replace it without being told (the data-first guard); the by-hand side replaces it too.
DATA_OPS=(
  "migrate cloud-to-local --replace"
  "migrate cloud-to-local --replace --strategy ios"
  "rebuild --from cloud --replace"
  "rebuild --from cloud --replace --strategy ios"
)
# --dry-run: the plan (the inspection, the comparison of the stores behind the guard, the engine's
# preview) against quick_check of the two stores by hand.
DRY_OPS=(
  "migrate cloud-to-local --replace --dry-run"
  "rebuild --from cloud --replace --dry-run"
)
SNAP_OPS=(
  "rebuild --from local"
  "migrate local-to-cloud"
  "switch $OLD"
  "cloud enable"
  "cloud disable"
  "corruption mark"
  "corruption clear"
  "delete container"
  "delete container --local-only"
  "delete cloud-store"
  "delete cloud-store --local-only"
  "delete cloud-store --uuid $OLD"
  "delete local-store"
)
rm -f "$OUT"/*.timings "$OUT"/*.t "$OUT"/*.ref "$OUT"/*.info "$OUT"/*.before "$OUT"/*.after "$OUT"/*.ratio
SOURCE_OBJECTS=""
for r in $(seq 1 "$RUNS"); do
  for op in "${DATA_OPS[@]}"; do
    wanted "$op" || continue
    l=$(label "$op"); read -r -a args <<<"$op"
    data_ref() {
      fresh "$REF"; plan_paths "$REF" "${args[@]}"
      status_time "$OUT/$l.before" "$REF"
      rm -f "$OUT/parts"
      timed "$OUT/$l.ref" bash -c 'by_hand "$1"' _ "$REF"
      cp "$OUT/parts" "$OUT/$l.parts"
      ref_objects=$(objects "$REF")
    }
    data_usm() {
      fresh "$RUN"; rm -rf "$XDG_STATE_HOME"
      timed "$OUT/$l.t" "$BIN" "${args[@]}" --container "$RUN/Notes.xcappdata" --yes --json
      cp "$OUT/$l.t.stdout" "$OUT/$l.json"
      cp "$OUT/$l.t.stderr" "$OUT/$l.timings"
      status_time "$OUT/$l.after" "$RUN"
    }
    if (( r % 2 == 1 )); then data_ref; data_usm; else data_usm; data_ref; fi
    ours=$(objects "$RUN")
    [[ "$ours" == "$ref_objects" ]] || die "$op: the local store holds $ours objects, the by-hand result $ref_objects"
    SOURCE_OBJECTS="$ours"
    echo "$SNAP_BYTES $SNAP_ITEMS $(stat -c %s "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["snapshot"])' "$OUT/$l.json")")" > "$OUT/$l.info"
    ratio "$(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)" "$(tail -n 1 "$OUT/$l.ref" | cut -d' ' -f1)" >> "$OUT/$l.ratio"; echo >> "$OUT/$l.ratio"
    echo "run $r: $op $(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)s, by hand $(tail -n 1 "$OUT/$l.ref" | cut -d' ' -f1)s, ratio $(tail -n 1 "$OUT/$l.ratio")" >&2
  done
  for op in "${DRY_OPS[@]}"; do
    wanted "$op" || continue
    l=$(label "$op"); read -r -a args <<<"$op"
    fresh "$RUN"; rm -rf "$XDG_STATE_HOME"
    dry_ref() {
      timed "$OUT/$l.ref" bash -c '[[ "$(sqlite3 "$1" "PRAGMA quick_check")" == ok && "$(sqlite3 "$2" "PRAGMA quick_check")" == ok ]]' _ \
        "$(app_dir "$REF")/UbiquityStore.sqlite" "$(copy_of "$REF" "$ACTIVE")"
    }
    dry_usm() { timed "$OUT/$l.t" "$BIN" "${args[@]}" --container "$RUN/Notes.xcappdata" --json; }
    fresh "$REF"
    if (( r % 2 == 1 )); then dry_ref; dry_usm; else dry_usm; dry_ref; fi
    cp "$OUT/$l.t.stderr" "$OUT/$l.timings"
    ratio "$(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)" "$(tail -n 1 "$OUT/$l.ref" | cut -d' ' -f1)" >> "$OUT/$l.ratio"; echo >> "$OUT/$l.ratio"
    echo "run $r: $op $(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)s, quick_check of both stores $(tail -n 1 "$OUT/$l.ref" | cut -d' ' -f1)s, ratio $(tail -n 1 "$OUT/$l.ratio")" >&2
  done
  for op in "${SNAP_OPS[@]}"; do
    wanted "$op" || continue
    l=$(label "$op"); read -r -a args <<<"$op"
    fresh "$RUN"; set_up "$op" "$RUN"; sync; rm -rf "$XDG_STATE_HOME"
    plan_paths "$RUN" "${args[@]}"
    status_time "$OUT/$l.before" "$RUN"
    snap_ref() { timed "$OUT/$l.ref" bash -c 'cd / && bsdtar --zstd -cf "$1" --null -T "$2"' _ "$OUT/ref.tar.zst" "$OUT/paths"; }
    if (( r % 2 == 1 )); then snap_ref; fi
    timed "$OUT/$l.t" "$BIN" "${args[@]}" --container "$RUN/Notes.xcappdata" --yes --json
    if (( r % 2 == 0 )); then snap_ref; fi
    cp "$OUT/$l.t.stdout" "$OUT/$l.json"
    status_time "$OUT/$l.after" "$RUN"
    echo "$SNAP_BYTES $SNAP_ITEMS $(stat -c %s "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["snapshot"])' "$OUT/$l.json")")" > "$OUT/$l.info"
    ratio "$(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)" "$(tail -n 1 "$OUT/$l.ref" | cut -d' ' -f1)" >> "$OUT/$l.ratio"; echo >> "$OUT/$l.ratio"
    echo "run $r: $op $(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)s, bsdtar of its snapshot $(tail -n 1 "$OUT/$l.ref" | cut -d' ' -f1)s, ratio $(tail -n 1 "$OUT/$l.ratio")" >&2
  done
done
# The migration engine's own phases on the same copy (what the `build` step does), for information.
ENGINE=()
if [[ -z "$ONLY" || "migrate cloud-to-local rebuild --from cloud" =~ $ONLY ]]; then
  for strategy in copy-entities ios; do
    rm -rf "$WORK/engine"; mkdir -p "$WORK/engine"
    "$BIN" migrate-store "$(copy_of "$BASE" "$ACTIVE")" "$WORK/engine/UbiquityStore.sqlite" --strategy "$strategy" --json > "$OUT/engine.json" \
      || die "migrate-store --strategy $strategy failed"
    ENGINE+=("$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["durations"]; print("%-13s " % sys.argv[2] + "  ".join("%s %.3f" % (k, d[k]) for k in ("capture","strategy","identity","verify","install","total") if k in d))' "$OUT/engine.json" "$strategy")")
  done
fi
rm -rf "$RUN" "$REF" "$WORK/engine" "$XDG_STATE_HOME" "$OUT/ref.tar.zst"

# ---------------------------------------------------------------- results
FAIL=0
echo
echo "layout: $(mib "$LAYOUT_BYTES") MiB ($OBJECTS objects in the active cloud store's copy, $LOCAL_OBJECTS in the local store, $LOGS_MIB MiB of logs); $(nproc) cores; $RUNS alternating run(s), medians; ratio = median of the per-run ratios; usm-repair $("$BIN" --version 2>/dev/null || echo '?')"
any() { local op; for op in "$@"; do wanted "$op" && return 0; done; return 1; }
if any "${DATA_OPS[@]}"; then
echo
echo "Data-moving operations against the same work done by hand (bsdtar --zstd of the touched files + sqlite3 .backup + integrity_check of the store built):"
printf '%-40s %9s %9s %7s %8s %10s %9s\n' operation usm-repair "by hand" ratio target "peak MiB" snap-MiB
fi
for op in "${DATA_OPS[@]}"; do
  wanted "$op" || continue
  l=$(label "$op"); t=$(median "$OUT/$l.t"); h=$(median "$OUT/$l.ref"); p=$(peak "$OUT/$l.t"); read -r sb _ _ < "$OUT/$l.info"
  rt=$(median "$OUT/$l.ratio"); ok=PASS; tg=$(target_of "$op")
  awk -v r="$rt" -v m="$tg" 'BEGIN { exit !(r > m) }' && { ok=FAIL; FAIL=1; }
  [[ $p -gt $((TARGET_MIB * 1024)) ]] && { ok="$ok/RSS-FAIL"; FAIL=1; }
  printf '%-40s %8ss %8ss %7s %8s %10s %9s\n' "$op" "$t" "$h" "$rt" "<=$tg $ok" "$(mib $((p * 1024)))" "$(mib "$sb")"
done
if any "${DRY_OPS[@]}"; then
echo
echo "--dry-run against PRAGMA quick_check of both stores by hand (the local store and the active copy):"
printf '%-44s %9s %9s %7s %8s %10s\n' operation usm-repair "by hand" ratio target "peak MiB"
fi
for op in "${DRY_OPS[@]}"; do
  wanted "$op" || continue
  l=$(label "$op"); t=$(median "$OUT/$l.t"); h=$(median "$OUT/$l.ref"); p=$(peak "$OUT/$l.t")
  rt=$(median "$OUT/$l.ratio"); ok=PASS
  awk -v r="$rt" -v m="$TARGET_DRY" 'BEGIN { exit !(r > m) }' && { ok=FAIL; FAIL=1; }
  [[ $p -gt $((TARGET_MIB * 1024)) ]] && { ok="$ok/RSS-FAIL"; FAIL=1; }
  printf '%-44s %8ss %8ss %7s %8s %10s\n' "$op" "$t" "$h" "$rt" "<=$TARGET_DRY $ok" "$(mib $((p * 1024)))"
done
if any "${SNAP_OPS[@]}"; then
echo
echo "Operations whose work is their snapshot, against bsdtar --zstd -cf of exactly the paths they snapshot (layout $(mib "$LAYOUT_BYTES") MiB):"
printf '%-40s %9s %9s %7s %10s %8s %10s\n' operation usm-repair bsdtar ratio snap-MiB items "peak MiB"
fi
for op in "${SNAP_OPS[@]}"; do
  wanted "$op" || continue
  l=$(label "$op"); t=$(median "$OUT/$l.t"); h=$(median "$OUT/$l.ref"); p=$(peak "$OUT/$l.t"); read -r sb si _ < "$OUT/$l.info"
  [[ $p -gt $((TARGET_MIB * 1024)) ]] && FAIL=1
  printf '%-40s %8ss %8ss %7s %10s %8s %10s\n' "${op/$OLD/OLD}" "$t" "$h" "$(median "$OUT/$l.ratio")" "$(mib "$sb")" "$si" "$(mib $((p * 1024)))"
done
echo
echo "usm-repair phases (s, last run): the executor's steps from --json steps[].seconds; the inspection of the"
echo "layout before planning and of the result afterwards, each timed as \`usm-repair status\` on the same files;"
echo "the rest (start-up, discovery, planning, locks, printing):"
for op in "${DATA_OPS[@]}" "${SNAP_OPS[@]}"; do
  wanted "$op" || continue
  l=$(label "$op")
  printf '  %-38s %s\n' "${op/$OLD/OLD}" "$(phases "$OUT/$l.json" "$(tail -n 1 "$OUT/$l.t" | cut -d' ' -f1)" "$(tail -n 1 "$OUT/$l.before")" "$(tail -n 1 "$OUT/$l.after")")"
done
any "${DATA_OPS[@]}" && echo && echo "by hand (s, last run), with its peak memory (the largest of bsdtar and sqlite3):"
for op in "${DATA_OPS[@]}"; do
  wanted "$op" || continue
  l=$(label "$op")
  printf '  %-38s %s  peak %s MiB\n' "$op" "$(tail -n 1 "$OUT/$l.parts")" "$(mib $(( $(peak "$OUT/$l.ref") * 1024 )))"
done
if any "${DATA_OPS[@]}" "${DRY_OPS[@]}"; then
  echo "usm-repair's own phases (s, last run; USM_REPAIR_TIMINGS=1 on stderr):"
  for op in "${DATA_OPS[@]}" "${DRY_OPS[@]}"; do
    wanted "$op" || continue
    l=$(label "$op")
    printf '  %s:\n' "$op"
    sed -n 's/^timing: /    /p' "$OUT/$l.timings" 2>/dev/null || true
  done
fi
if [[ ${#ENGINE[@]} -gt 0 ]]; then
  echo "the migration engine's phases inside the build step (migrate-store on the same copy, --json durations):"
  for line in "${ENGINE[@]}"; do echo "  $line"; done
fi
[[ $ENFORCE -eq 1 && $FAIL -eq 1 ]] && exit 1
exit 0
