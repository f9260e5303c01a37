#!/usr/bin/env bash
# Builds the release binary that runs without the Swift toolchain, proves it, and writes it with
# its shell completions and man page into a folder (default dist/):
#
#   dist/usm-repair                       the binary (Swift runtime and Foundation linked in)
#   dist/completions/usm-repair.bash      bash completion
#   dist/completions/_usm-repair          zsh completion
#   dist/completions/usm-repair.fish      fish completion
#   dist/man/usm-repair.1                 the man page (argument-parser's generate-manual plugin)
#
# Usage: Scripts/release.sh [DIR]
# Exit codes: 0 done; 1 the binary still needs a Swift library, or does not run without them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
version_date=${USM_RELEASE_DATE:-$(date -u +%Y-%m-%d)}

echo "release: building (swift build -c release --static-swift-stdlib)" >&2
swift build -c release --static-swift-stdlib --product usm-repair
bin="$(swift build -c release --static-swift-stdlib --show-bin-path)/usm-repair"
mkdir -p "$out/completions" "$out/man"
# Copied now: the man-page plugin below builds the package again and would relink this path.
cp "$bin" "$out/usm-repair"
bin="$out/usm-repair"

# 1. No Swift runtime, Foundation or dispatch library is loaded at run time.
if ldd "$bin" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|/swift/'; then
  echo "release: $bin still links Swift libraries (above)" >&2
  exit 1
fi
# 2. It runs with the toolchain's libraries out of reach (a private mount hides them; needs root).
toolchain_lib="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/linux"
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1 && [ -d "$toolchain_lib" ]; then
  unshare -m sh -c "mount -t tmpfs tmpfs '$toolchain_lib' && test -z \"\$(ls '$toolchain_lib')\" && '$bin' --version" \
    || { echo "release: $bin does not run with $toolchain_lib hidden" >&2; exit 1; }
  echo "release: runs with $toolchain_lib hidden" >&2
else
  echo "release: not root (or no unshare): skipped running with $toolchain_lib hidden; ldd lists no Swift library" >&2
fi

# 3. Shell completions, from the binary itself.
"$bin" --generate-completion-script bash > "$out/completions/usm-repair.bash"
"$bin" --generate-completion-script zsh > "$out/completions/_usm-repair"
"$bin" --generate-completion-script fish > "$out/completions/usm-repair.fish"

# 4. The man page, with argument-parser's plugin (on the debug build: the text is the same).
swift package generate-manual --configuration debug --date "$version_date" --authors "the usm-repair authors" >&2
cp .build/plugins/GenerateManual/outputs/usm-repair/usm-repair.1 "$out/man/usm-repair.1"

echo "release: $("$bin" --version) in $out/" >&2
ls -l "$out" "$out/completions" "$out/man" >&2
