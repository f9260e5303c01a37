#!/usr/bin/env bash
# Turns the page swift-argument-parser's generate-manual plugin writes into usm-repair's man page:
# no empty input lines (groff warns on each; a paragraph break `.Pp` instead), indented example
# lines in literal displays, a real EXIT STATUS (every code, from `usm-repair help exit-codes`) in
# place of the plugin's generic `.Ex -std`, and a SEE ALSO section.
#
# Usage: Scripts/man-page.sh BINARY RAW_PAGE > usm-repair.1
# `Scripts/release.sh` runs it; the result is kept as docs/usm-repair.1, which Scripts/stage.sh
# installs by default (a test checks it has no groff warning and names every exit code and command).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: Scripts/man-page.sh BINARY RAW_PAGE" >&2
  exit 64
fi
"$1" help exit-codes | python3 -c '
import re, sys
raw = open(sys.argv[1], encoding="utf-8").read().split("\n")
codes = [m.groups() for m in (re.match(r"^  (\d+)\s+(\S+)\s+(.*)$", l) for l in sys.stdin.read().split("\n")) if m]
def esc(text):
    # A line of text must not start with a dot or an apostrophe (a request), and backslashes are escapes.
    text = text.replace("\\", "\\e")
    return "\\&" + text if text[:1] in (".", "\x27") else text
out = []
literal = False
for line in raw:
    indented = line.startswith("  ") and not line.startswith(".")
    if indented and not literal:
        out.append(".Bd -literal -offset indent")
        literal = True
    elif literal and not indented:
        out.append(".Ed")
        literal = False
    if indented:
        out.append(esc(line[2:]))
    elif line.strip() == "":
        # The last line of the file is empty: no paragraph after the end.
        if out and out[-1] not in (".Pp",) and not out[-1].startswith((".Sh", ".Bl", ".It", ".Bd")):
            out.append(".Pp")
    else:
        out.append(line)
if literal:
    out.append(".Ed")
while out and out[-1] == ".Pp":
    out.pop()
text = "\n".join(out) + "\n"
# Paragraph breaks right before a list end, a section or an item are redundant (mandoc and groff warn).
text = re.sub(r"\n\.Pp\n(?=\.(El|Sh|It|Ss|Bl)\b)", "\n", text)
status = [".Sh \"EXIT STATUS\"", "The exit code says what happened; with --json the report carries it as exitCode and exitStatus.", ".Bl -tag -width Ds"]
for code, name, meaning in codes:
    status += [".It " + code, "(" + name + ") " + esc(meaning)]
status += [".El", ".Pp", "When several stores give different answers, the worst wins."]
see_also = "\n".join([
    ".Sh \"SEE ALSO\"",
    ".Xr sqlite3 1 ,",
    ".Xr dot 1 ,",
    ".Xr tar 1 ,",
    ".Xr zstd 1",
    ".Pp",
    "usm-repair help exit-codes, usm-repair help problems and usm-repair help next-steps print the references from the binary;",
    "README.md is in share/doc/usm-repair, and beside it in docs/ commands.md, exit-codes.md, problem-codes.md, json-report.md, guide.md and usm-behaviour.md (what UbiquityStoreManager does at launch, E1 to E13).",
    ""])
text, n = re.subn(r"\.Sh \"EXIT STATUS\"\n\.Ex -std\n", "\n".join(status) + "\n" + see_also, text)
if n != 1:
    sys.exit("man-page: no EXIT STATUS section with .Ex -std in " + sys.argv[1])
sys.stdout.write(text)
' "$2"
