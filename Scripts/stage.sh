#!/usr/bin/env bash
# Lays out an installable tree (a prefix) around a built usm-repair binary:
#
#   PREFIX/bin/usm-repair
#   PREFIX/share/usm-repair/recipes/           the recipes (found relative to the binary: ../share/usm-repair/recipes)
#   PREFIX/share/man/man1/usm-repair.1         the man page: docs/usm-repair.1, or the one given (--man FILE)
#   PREFIX/share/bash-completion/completions/usm-repair
#   PREFIX/share/zsh/site-functions/_usm-repair
#   PREFIX/share/fish/vendor_completions.d/usm-repair.fish
#   PREFIX/share/doc/usm-repair/               README.md, CHANGELOG.md, LICENSE, docs/*.md (the README links them)
#
# Copy the tree over a prefix to install it (`sudo cp -R PREFIX/. /usr/local/`), or run
# PREFIX/bin/usm-repair where it is: it needs nothing outside PREFIX but the system's C libraries.
#
# Usage: Scripts/stage.sh BINARY PREFIX [--man FILE]
# Exit codes: 0 done; 1 a file is missing or the staged binary does not run; 64 usage.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: Scripts/stage.sh BINARY PREFIX [--man FILE]" >&2
  exit 64
fi
bin_in=$1
prefix=$2
shift 2
man="$(cd "$(dirname "$0")/.." && pwd)/docs/usm-repair.1"
while [ $# -gt 0 ]; do
  case "$1" in
    --man) man=$2; shift 2 ;;
    *) echo "stage: unknown argument $1" >&2; exit 64 ;;
  esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
[ -x "$bin_in" ] || { echo "stage: $bin_in is not an executable" >&2; exit 1; }

mkdir -p "$prefix/bin" "$prefix/share/usm-repair/recipes" "$prefix/share/man/man1" \
  "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
  "$prefix/share/fish/vendor_completions.d" "$prefix/share/doc/usm-repair/docs"
install -m 755 "$bin_in" "$prefix/bin/usm-repair"
bin="$prefix/bin/usm-repair"

# Recipes: every recipe with its description, and the folder's README.
install -m 644 "$repo"/Recipes/*.json "$repo"/Recipes/*.md "$prefix/share/usm-repair/recipes/"

# Documentation the help and messages refer to.
install -m 644 "$repo/README.md" "$repo/CHANGELOG.md" "$repo/LICENSE" "$prefix/share/doc/usm-repair/"
install -m 644 "$repo"/docs/*.md "$prefix/share/doc/usm-repair/docs/"

# Shell completions, from the staged binary itself (recipe names are completed by asking it).
"$bin" --generate-completion-script bash > "$prefix/share/bash-completion/completions/usm-repair"
"$bin" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_usm-repair"
"$bin" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/usm-repair.fish"

[ -f "$man" ] || { echo "stage: no man page at $man" >&2; exit 1; }
install -m 644 "$man" "$prefix/share/man/man1/usm-repair.1"

# The staged binary finds its recipes with no checkout and no USM_REPAIR_RECIPES.
found=$(cd / && env -u USM_REPAIR_RECIPES "$bin" strategies --json | grep -c "$prefix/share/usm-repair/recipes/" || true)
if [ "$found" -lt 1 ]; then
  echo "stage: $bin does not list the recipes in $prefix/share/usm-repair/recipes" >&2
  exit 1
fi
echo "stage: $("$bin" --version) in $prefix ($found recipe path(s) listed)" >&2
