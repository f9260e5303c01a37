#!/usr/bin/env bash
# Builds the release binary that runs without the Swift toolchain, proves it, and lays it out with
# its recipes, man page, shell completions and documentation as an installable prefix tree
# (default dist/), with Scripts/stage.sh:
#
#   dist/bin/usm-repair                                 the binary (Swift runtime and Foundation linked in)
#   dist/share/usm-repair/recipes/                      the recipes (found relative to the binary)
#   dist/share/man/man1/usm-repair.1                    the man page (argument-parser's generate-manual plugin)
#   dist/share/bash-completion/completions/usm-repair   bash completion
#   dist/share/zsh/site-functions/_usm-repair           zsh completion
#   dist/share/fish/vendor_completions.d/usm-repair.fish fish completion
#   dist/share/doc/usm-repair/                          README, CHANGELOG, LICENSE, docs/usm-behaviour.md
#
# Install: sudo cp -R dist/. /usr/local/   (or any prefix; the tree is relocatable)
#
# Usage: Scripts/release.sh [DIR]
# Exit codes: 0 done; 1 the binary still needs a Swift library, or does not run without them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
version_date=${USM_RELEASE_DATE:-$(date -u +%Y-%m-%d)}

echo "release: building (swift build -c release --static-swift-stdlib)" >&2
swift build -c release --static-swift-stdlib --product usm-repair
built="$(swift build -c release --static-swift-stdlib --show-bin-path)/usm-repair"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Copied now: the man-page plugin below builds the package again and would relink this path.
cp "$built" "$work/usm-repair"
bin="$work/usm-repair"

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

# 3. The man page, with argument-parser's plugin (on the debug build: the text is the same), made
#    usm-repair's by Scripts/man-page.sh (no groff warnings, a real EXIT STATUS, SEE ALSO).
swift package generate-manual --configuration debug --date "$version_date" --authors "the usm-repair authors" >&2
bash Scripts/man-page.sh "$bin" .build/plugins/GenerateManual/outputs/usm-repair/usm-repair.1 > "$work/usm-repair.1"

# 4. The prefix tree: binary, recipes, man page, completions, documentation.
bash Scripts/stage.sh "$bin" "$out" --man "$work/usm-repair.1"

echo "release: $("$out/bin/usm-repair" --version) in $out/" >&2
find "$out" -type f | sort >&2
