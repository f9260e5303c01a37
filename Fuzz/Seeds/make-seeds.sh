#!/usr/bin/env bash
# Writes the seed corpus of every fuzz target into Fuzz/Corpus/<Target>/ from real examples: the
# example layout (Examples/), its preferences and markers, plans and journals of real operations
# stopped half-way (strace kills usm-repair at its N-th rename), bundles and snapshots usm-repair
# wrote (tar.zst, plain tar, zip), the recipes (Recipes/), the example plugin's output, and for
# salvage's reader a small store of its own with its pages, records and damaged copies.
#
# Usage: Fuzz/Seeds/make-seeds.sh            (USM_REPAIR_BIN: binary to use; default: a debug build)
# Seeds are small (a few KiB; the bundles a few tens) and overwritten on each run; files a fuzz
# run found (crashes kept as regression inputs, named crash-*) are left alone.
set -euo pipefail
export LC_ALL=C
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CORPUS="$ROOT/Fuzz/Corpus"
BIN="${USM_REPAIR_BIN:-}"
if [[ -z "$BIN" ]]; then
  (cd "$ROOT" && swift build --product usm-repair >&2)
  BIN="$(cd "$ROOT" && swift build --show-bin-path)/usm-repair"
fi
for tool in python3 strace bsdtar; do command -v "$tool" >/dev/null || { echo "make-seeds: $tool not found" >&2; exit 2; }; done

# The layout lives at a fixed place: the Plan target checks plans against these folders.
L=/tmp/usm-repair-fuzz-layout
APP="$L/Demo.xcappdata/AppData/Library/Application Support"
PREFS="$L/Demo.xcappdata/AppData/Library/Preferences"
CLOUD="$L/Mobile Documents/ABCDE12345~com~example~notes"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK" "$L"' EXIT
export XDG_STATE_HOME="$WORK/state"
fresh() { rm -rf "$L"; mkdir -p "$L"; cp -a "$ROOT/Examples/Demo.xcappdata" "$ROOT/Examples/Mobile Documents" "$L/"; }
seed() { mkdir -p "$CORPUS/$1"; cp "$2" "$CORPUS/$1/$3"; }

# --- preferences: the example's binary plist, as XML, and variants the reader treats differently
fresh
python3 - "$PREFS/com.example.notes.plist" "$WORK/prefs" <<'EOF'
import os, plistlib, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
base = plistlib.load(open(src, "rb"))
def write(name, value, fmt):
    with open(os.path.join(out, name), "wb") as f:
        plistlib.dump(value, f, fmt=fmt, sort_keys=False)
write("example.bplist", base, plistlib.FMT_BINARY)
write("example.xml", base, plistlib.FMT_XML)
two = dict(base)
two["/private/var/mobile/Library/Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/StoreUUID++"] = "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"
two["USMCloudEnabledKey"] = 1
two["Ünïcödé key"] = "värde"
write("two-caches-integer-key.bplist", two, plistlib.FMT_BINARY)
write("two-caches-integer-key.xml", two, plistlib.FMT_XML)
off = {"USMCloudEnabledKey": False, "LastLaunchVersion": "2.4", "NSLanguages": ["en", "de"]}
write("cloud-off.bplist", off, plistlib.FMT_BINARY)
write("cloud-off.xml", off, plistlib.FMT_XML)
write("empty-dict.bplist", {}, plistlib.FMT_BINARY)
write("array-root.bplist", ["USMCloudEnabledKey"], plistlib.FMT_BINARY)
maps = {"USMCloudEnabledKey": True, "content": {"PFUbiquitySetupTokenAndIDArray": [[b"t", "local"], [b"u", "7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E"]]},
        "nested": {"a": {"b": [1, 2.5, b"\x00\x01"]}}, "date": __import__("datetime").datetime(2026, 11, 21)}
write("account-maps-types.bplist", maps, plistlib.FMT_BINARY)
write("account-maps-types.xml", maps, plistlib.FMT_XML)
EOF
for f in "$WORK"/prefs/*; do seed PreferencesRead "$f" "$(basename "$f")"; seed PreferencesEdit "$f" "$(basename "$f")"; done

# --- markers: the example's, and the defects discovery reports
seed Marker "$CLOUD/CloudLogs/StoreUUID+" StoreUUID
seed Marker "$CLOUD/CloudLogs/CorruptedUUID+" CorruptedUUID
printf '0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B\n' >"$WORK/newline"; seed Marker "$WORK/newline" trailing-newline
printf '0f6e2c1a-8b3d-4e5f-9a7b-1c2d3e4f5a6b' >"$WORK/lower"; seed Marker "$WORK/lower" lowercase
printf 'StoreUUID++' >"$WORK/name"; seed Marker "$WORK/name" file-name

# --- plans and journals: real operations stopped by a kill at their N-th rename
n=0
stop() {  # stop K ARGS...: run usm-repair ARGS, killed at its K-th rename; keep every plan/journal left
  local k="$1"; shift
  fresh
  (strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:signal=KILL:when="$k" \
    "$BIN" "$@" </dev/null >/dev/null 2>&1) 2>/dev/null || true
  while IFS= read -r -d '' plan; do
    n=$((n + 1))
    seed Plan "$plan" "$(printf '%s\n' "$@" | grep -E '^[a-z][a-z-]*$' | head -n 3 | paste -sd-)-$n.json"
    [[ -f "$(dirname "$plan")/journal.jsonl" ]] && seed Journal "$(dirname "$plan")/journal.jsonl" "journal-$n.jsonl"
  done < <(find "$L" -name plan.json -print0)
}
C=(--app-dir "$APP" --cloud-dir "$CLOUD" --prefs "$PREFS/com.example.notes.plist")
stop 12 delete container --yes "${C[@]}"
stop 8 delete container --local-only --yes "${C[@]}"
stop 8 delete local-store --yes "${C[@]}"
stop 5 switch A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF --yes "${C[@]}"
stop 7 cloud disable --yes "${C[@]}"
stop 9 rebuild --from local --discard-cloud --yes "${C[@]}"
stop 12 migrate cloud-to-local --yes --replace "${C[@]}"
stop 16 migrate cloud-to-local --yes --replace "${C[@]}"
fresh
"$BIN" archive --cloud-dir "$CLOUD" -o "$WORK/for-restore.tar.zst" >/dev/null 2>&1
stop 2 restore "$WORK/for-restore.tar.zst" --to "$L/restored" --yes
printf '{"event":"begin","step":0,"snapshot":null}\n{"event":"done","step":0,"snapshot":"/tmp/s.tar.zst"}\n{"event":"committed"}\n{"event":"finished"}\n{"event":"begin","st' >"$WORK/j"
seed Journal "$WORK/j" journal-hand.jsonl

# --- bundles and snapshots: what restore and bundle verify read
fresh
"$BIN" archive --store "$APP/UbiquityStore.sqlite" -o "$WORK/store.tar.zst" >/dev/null 2>&1
"$BIN" archive --app-dir "$APP" --cloud-dir "$CLOUD" --prefs "$PREFS/com.example.notes.plist" --redact -o "$WORK/redacted.tar.zst" >/dev/null 2>&1
"$BIN" archive --cloud-dir "$CLOUD" -o "$WORK/cloud.zip" >/dev/null
"$BIN" archive --cloud-dir "$CLOUD" -o "$WORK/cloud.tar.zst" >/dev/null
"$BIN" switch A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF --yes "${C[@]}" --snapshot-dir "$WORK/snaps" >/dev/null
for b in "$WORK/store.tar.zst" "$WORK/redacted.tar.zst" "$WORK/cloud.zip" "$WORK"/snaps/*.tar.zst; do
  name="$(basename "$b")"
  seed BundleVerify "$b" "$name"; seed Restore "$b" "$name"
  # The same entries uncompressed: mutations reach the tar headers and the manifest, not zstd's frames.
  # (only for the small ones: a store is a few hundred KiB uncompressed)
  if [[ "$name" == *.tar.zst && $(bsdtar -xOf "$b" | wc -c) -lt 100000 ]]; then
    rm -rf "$WORK/x"; mkdir -p "$WORK/x"; bsdtar -xf "$b" -C "$WORK/x"
    (cd "$WORK/x" && bsdtar --format pax -cf "$WORK/${name%.zst}" manifest.json $(bsdtar -tf "$b" | grep -v '^manifest.json$'))
    seed BundleVerify "$WORK/${name%.zst}" "${name%.zst}"; seed Restore "$WORK/${name%.zst}" "${name%.zst}"
  fi
  rm -rf "$WORK/x"; mkdir -p "$WORK/x"; bsdtar -xf "$b" -C "$WORK/x" manifest.json
  seed Manifest "$WORK/x/manifest.json" "${name%%.*}-manifest.json"
done

# --- recipes and plugin output
for r in "$ROOT"/Recipes/*.json; do seed Recipe "$r" "$(basename "$r")"; done
{ printf '\x07'; printf '%s\n' '{"progress": {"done": 1, "total": 2}}' '{"note": "persistent history left out"}' \
  '{"progress": {"done": 2, "total": 2}}' '' '{"result": {"rows": {"Book": 6, "Note": 3}}}'; } >"$WORK/plugin"
seed PluginOutput "$WORK/plugin" sqlite-copy-output
{ printf '\x00'; printf '%s\n' '{"note": "ü"}' '{"result": {}}' '{"note": "after"}'; } >"$WORK/plugin2"
seed PluginOutput "$WORK/plugin2" after-result

# --- salvage's reader of the SQLite file format: a small store of its own, its pages, records, damaged copies
python3 "$ROOT/Fuzz/Seeds/make-sqlite-seeds.py" "$CORPUS"
du -sh "$CORPUS"/* >&2
