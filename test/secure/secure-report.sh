#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The secure build says what it caught without being asked (ctest secure-report): a double
# free is reported and the program goes on; a corrupted free list is reported and the abort
# says why, also after max_errors other reports; MIMALLOC_SHOW_ERRORS=0 silences both (the
# abort stays). The program runs as a user's would: no option set, no error handler.
# usage: secure-report.sh <secure-report program>
set -u
prog=$1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {   # case, env... -> $out, $err, $rc
  local c=$1; shift
  local tmp; tmp=$(mktemp -d)
  env -i PATH=/usr/bin:/bin "$@" "$prog" "$c" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
  rm -rf "$tmp"
}
count() { grep -c -- "$1" <<<"$err"; }

dfree='^mimalloc: error: double free detected of block 0x[0-9a-f]* with size [0-9]* (ignored)$'
corrupt='^mimalloc: error: corrupted free list: free block 0x[0-9a-f]* (size [0-9]*) links to 0x[0-9a-f]*, not a block of its page'
aborting='^mimalloc: aborting: the heap is corrupted (the error above); a handler registered with mi_register_error would decide instead$'

run double-free
[ "$rc" = 0 ] || fail "double-free: exit $rc, expected 0: $err"
grep -q "went on" <<<"$out" || fail "double-free: the program did not go on: $out"
[ "$(count "$dfree")" = 1 ] && [ "$(wc -l <<<"$err")" = 1 ] || fail "double-free: expected exactly one report line, got: '$err'"

run uaf
[ "$rc" = 134 ] || fail "uaf: exit $rc, expected 134 (SIGABRT): $err"
grep -q "$corrupt" <<<"$err" || fail "uaf: no 'corrupted free list' report: '$err'"
grep -q "$aborting" <<<"$err" || fail "uaf: the abort does not say why: '$err'"

run many-then-uaf
[ "$rc" = 134 ] || fail "many-then-uaf: exit $rc, expected 134: $err"
[ "$(count "$dfree")" = 32 ] || fail "many-then-uaf: expected 32 double-free lines (max_errors), got $(count "$dfree")"
grep -q "$corrupt" <<<"$err" || fail "many-then-uaf: the corruption is not reported after max_errors: '$(tail -n 3 <<<"$err")'"
grep -q "$aborting" <<<"$err" || fail "many-then-uaf: the abort does not say why"

for c in double-free uaf; do
  run "$c" MIMALLOC_SHOW_ERRORS=0
  [ -z "$err" ] || fail "$c with MIMALLOC_SHOW_ERRORS=0: stderr not empty: '$err'"
  want=0; [ "$c" = uaf ] && want=134
  [ "$rc" = "$want" ] || fail "$c with MIMALLOC_SHOW_ERRORS=0: exit $rc, expected $want"
done

[ "$fails" = 0 ] || { echo "secure-report: $fails failures"; exit 1; }
echo "secure-report: double free reported and ignored, corruption reported with the reason for the abort, silenced by MIMALLOC_SHOW_ERRORS=0"
