#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The optional suites of test/run.sh name what they need and how to install it; a user reads
# the same in README.md or docs/testing.md. Checks, for every suite of
# `test/run.sh --list-optional`, that each of its install commands (the hint split at ';')
# appears verbatim in README.md or docs/testing.md.
# usage: check-install-hints.sh [repository root]
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
docs=("$root/README.md" "$root/docs/testing.md")
list=$(bash "$root/test/run.sh" --list-optional) || { echo "FAIL: test/run.sh --list-optional did not run"; exit 1; }
[ -n "$list" ] || { echo "FAIL: test/run.sh lists no optional suite"; exit 1; }
n=0
while IFS=$'\t' read -r name needs how; do
  n=$((n + 1))
  [ -n "$how" ] || { fail "$name: no install hint (needs: $needs)"; continue; }
  IFS=';' read -ra cmds <<<"$how"
  for cmd in "${cmds[@]}"; do
    cmd=$(sed 's/^ *//; s/ *$//' <<<"$cmd")
    cat "${docs[@]}" 2>/dev/null | grep -qF -- "$cmd" || fail "$name: '$cmd' (test/run.sh's hint) is not in README.md or docs/testing.md"
  done
done <<<"$list"
[ "$fails" = 0 ] || { echo "check-install-hints: $fails failures"; exit 1; }
echo "check-install-hints: the install hints of $n optional suites match README.md and docs/testing.md"
