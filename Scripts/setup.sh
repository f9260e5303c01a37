#!/usr/bin/env bash
# Installs what usm-repair needs to build and test on Debian/Ubuntu, and only what is missing:
# the C libraries (libarchive, SQLite, zlib headers, pkg-config) and the reference tools the
# tests and benchmarks compare against (sqlite3, bsdtar, GNU time), strace (the tests walk every
# kill and failure point of the changing commands with its fault injection), and python3 (the example
# migration plugin and the migrate benchmark's store generator), graphviz (the README renders `status --graph` with dot), and groff-base (a test reads the man page with groff -ww).
set -euo pipefail

need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in libarchive-dev libsqlite3-dev zlib1g-dev libzstd-dev pkg-config sqlite3 libarchive-tools time zstd unzip tar python3 strace graphviz groff-base; do
  have_pkg "$pkg" || need+=("$pkg")
done

if ((${#need[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${need[*]} and no apt-get here; install them with your package manager" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

command -v swift >/dev/null 2>&1 || { echo "setup: swift is not on PATH (Swift 6.1 or later is needed)" >&2; exit 1; }
echo "setup: ready ($(swift --version 2>/dev/null | head -n 1))" >&2
