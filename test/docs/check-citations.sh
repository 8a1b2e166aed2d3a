#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-citations.sh -- every file the repository cites is in the repository.
#
#   check-citations.sh [SOURCE_DIR]      (default: the checkout this script is in)
#
# Fails (exit 1, one line per finding) when a tracked file
#   1. names one of the planning documents that live outside the repository (the three
#      upper-case guides beside the project, or a path through the folder that holds them: a
#      reader's clone has none of them; the project's design record is docs/design.md, the API
#      contracts are in include/mimalloc.h); the pattern is built from parts below, so this
#      script does not name them either;
#   2. is a .md file with a relative markdown link, `[text](path)` or `[name]: path`, whose
#      path (relative to the linking file; a leading / means the repository root) is not a
#      tracked file or a directory holding tracked files. Links with a scheme (https:, mailto:)
#      and links to an anchor of the same page (#...) are not checked; neither is text in code
#      blocks or `code spans`, which is not a link.
# Only tracked files count (git ls-files), so a file that exists only in one's own checkout does
# not hide a broken citation. Exit 77 (ctest: skipped) when SOURCE_DIR is not a git work tree,
# e.g. an unpacked release archive.
set -u

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

if ! command -v git >/dev/null 2>&1 ||
   ! git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-citations: $root is not a git work tree (or git is missing): skipped"
  exit 77
fi
root="$(git -C "$root" rev-parse --show-toplevel)"
cd "$root" || exit 2

fail=0

# ---- 1. documents outside the repository ----------------------------------------------------
ext='\.m''d' up='\.\./'
outside="(A""PI|DES""IGN|ST""YLE)$ext|${up}sh""ared\b"
if hits="$(git grep -n -I -E "$outside" -- .)"; then
  echo "$hits"
  echo "check-citations: the lines above cite a planning document from beside the project, which is"
  echo "  not in the repository: say what is meant in place, or cite a file of the repository"
  fail=1
fi

# ---- 2. relative markdown links that do not resolve to a tracked file ------------------------
# awk reads the list of tracked files first (NUL-separated names would need gawk; the names of
# this repository have no newlines), then every tracked .md file, and prints
# "file:line: target" for each link target that is neither a tracked file nor a directory of
# tracked files.
tracked="$(mktemp)"
trap 'rm -f "$tracked"' EXIT
git ls-files > "$tracked"

mapfile -t mdfiles < <(git ls-files -- '*.md')
if [ "${#mdfiles[@]}" -gt 0 ]; then
  broken="$(awk '
    # Normalise a/b/../c/./d to a/c/d; returns "" for a path that climbs out of the root.
    function normalise(p,    n, parts, out, k, i) {
      n = split(p, parts, "/"); k = 0
      for (i = 1; i <= n; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == "..") { if (k == 0) return "\001"; k--; continue }
        out[++k] = parts[i]
      }
      p = ""
      for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
      return p
    }
    function check(target,    t, dir, path) {
      t = target
      sub(/^[ \t]+/, "", t)
      if (t ~ /^</) { sub(/^</, "", t); sub(/>.*$/, "", t) }   # <path with spaces>
      else sub(/[ \t].*$/, "", t)                              # drop a "title"
      if (t == "" || t ~ /^#/) return                          # same-page anchor
      if (t ~ /^[A-Za-z][A-Za-z0-9+.-]*:/) return              # https:, mailto:, ...
      sub(/[#?].*$/, "", t)
      gsub(/%20/, " ", t)
      if (t ~ /^\//) path = normalise(t)
      else { dir = FILENAME; if (dir ~ /\//) sub(/\/[^\/]*$/, "", dir); else dir = ""
             path = normalise((dir == "" ? "" : dir "/") t) }
      if (path == "") return                                   # the root itself
      if ((path in files) || (path in dirs)) return
      printf "%s:%d: link to %s: not a tracked file of the repository\n", FILENAME, FNR, target
    }
    FNR == NR {
      files[$0] = 1
      d = $0
      while (d ~ /\//) { sub(/\/[^\/]*$/, "", d); dirs[d] = 1 }
      next
    }
    FNR == 1 { fence = "" }
    {
      line = $0
      # fenced code blocks (``` or ~~~) hold no links
      if (match(line, /^[ ]*(```|~~~)/)) {
        mark = substr(line, RSTART + RLENGTH - 3, 3)
        if (fence == "") fence = mark; else if (fence == mark) fence = ""
        next
      }
      if (fence != "") next
      gsub(/``[^`]*``/, "", line)                              # code spans
      gsub(/`[^`]*`/, "", line)
      # reference definitions: [name]: path
      if (match(line, /^[ ]*\[[^]]+\]:[ \t]+[^ \t]+/)) {
        t = substr(line, RSTART, RLENGTH); sub(/^[ ]*\[[^]]+\]:[ \t]+/, "", t)
        check(t)
        next
      }
      # inline links and images: ](path)
      while (match(line, /\]\([^)]*\)/)) {
        t = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        check(t)
      }
    }
  ' "$tracked" "${mdfiles[@]}")"
  if [ -n "$broken" ]; then
    echo "$broken"
    fail=1
  fi
fi

if [ "$fail" -ne 0 ]; then
  echo "check-citations: FAILED (files cited above are not in the repository)"
  exit 1
fi
echo "check-citations: every cited file is in the repository (${#mdfiles[@]} markdown files checked)"
exit 0
