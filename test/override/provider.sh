#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The start-up report tells the truth about who serves malloc and operator new (ctest
# override-provider): with our library alone in LD_PRELOAD, MIMALLOC_VERBOSE=1 says "allocator
# active ... overrides malloc and new/delete"; with another allocator earlier in LD_PRELOAD
# (jemalloc, tcmalloc, Debian's mimalloc: each case runs when that library is installed), a
# warning names that library and the active line is replaced by "loaded but not in use";
# MIMALLOC_SHOW_ERRORS=1 alone gives the warning and no active line; with neither option the
# check is not made and nothing is printed. Exit 77 (skip) only if no other allocator exists.
# Also: a non-PIE python3 (its PLT stub for malloc is not a definition) under the preload, and
# a program whose own operators from mimalloc-new-delete.h forward to us: both "active".
# The active line names the build (release, debug, secure, debug secure, valgrind, asan).
# (Debug and secure builds show errors by default: there the warning comes without options too.)
# usage: provider.sh <libmimalloc.so> <program> <program with mimalloc-new-delete.h operators> <build name>
set -u
lib=$1 prog=$2 nd_prog=$3 build=${4:-release}
case " $build " in *" debug "*|*" secure "*) errors_default=1 ;; *) errors_default=0 ;; esac
fails=0 ran=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {   # preload, env... -> stderr in $err
  local pre=$1; shift
  err=$(env -i PATH=/usr/bin:/bin LD_PRELOAD="$pre" "$@" "$prog" 2>&1 >/dev/null)
}

run "$lib" MIMALLOC_VERBOSE=1
grep -q "^mimalloc: allocator active: version [0-9.]* (independent implementation of the mimalloc 2.4.1 API; $build build, overrides malloc and new/delete)$" <<<"$err" \
  || fail "ours alone: no truthful active line naming the $build build: $err"
grep -q "warning: loaded, but" <<<"$err" && fail "ours alone: a false warning: $err"
run "$lib"
[ -z "$err" ] || fail "ours alone, no options: stderr not empty: $err"

err=$(env -i PATH=/usr/bin:/bin MIMALLOC_VERBOSE=1 "$nd_prog" 2>&1 >/dev/null)
grep -q "allocator active: .*overrides malloc and new/delete)$" <<<"$err" || fail "header operators: not active: $err"
grep -q "warning: loaded, but" <<<"$err" && fail "header operators: a false warning: $err"
if [ -x /usr/bin/python3 ]; then
  err=$(env -i PATH=/usr/bin:/bin LD_PRELOAD="$lib" MIMALLOC_VERBOSE=1 /usr/bin/python3 -c pass 2>&1 >/dev/null)
  grep -q "allocator active: .*overrides malloc and new/delete)$" <<<"$err" || fail "python3: not active: $err"
  grep -q "warning: loaded, but" <<<"$err" && fail "python3: a false warning: $err"
fi

libdir=/usr/lib/x86_64-linux-gnu
for other in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
  [ -e "$libdir/$other" ] || { echo "skip: $libdir/$other is not installed"; continue; }
  ran=$((ran + 1))
  want="^mimalloc: warning: loaded, but malloc/free and operator new/delete are provided by $libdir/$other: this allocator does not serve those calls$"
  run "$libdir/$other:$lib" MIMALLOC_VERBOSE=1
  grep -q "$want" <<<"$err" || fail "$other first: no warning naming it: $err"
  grep -q "allocator active" <<<"$err" && fail "$other first: still claims to be active: $err"
  grep -q "^mimalloc: allocator loaded but not in use for malloc: version" <<<"$err" || fail "$other first: no 'not in use' line: $err"
  run "$libdir/$other:$lib" MIMALLOC_SHOW_ERRORS=1
  grep -q "$want" <<<"$err" || fail "$other first, show_errors: no warning: $err"
  grep -q "not in use\|allocator active" <<<"$err" && fail "$other first, show_errors: verbose lines: $err"
  run "$libdir/$other:$lib"
  if [ "$errors_default" = 1 ]; then
    [ "$err" = "${want:1:-1}" ] || fail "$other first, no options ($build build): not just the warning: $err"
  else
    [ -z "$err" ] || fail "$other first, no options: stderr not empty: $err"
  fi
  # ours first: ours serves, whatever comes after
  run "$lib:$libdir/$other" MIMALLOC_VERBOSE=1
  grep -q "allocator active: .*overrides malloc and new/delete" <<<"$err" || fail "ours before $other: not active: $err"
  grep -q "warning: loaded, but" <<<"$err" && fail "ours before $other: a false warning: $err"
done
[ $fails -eq 0 ] || { echo "override-provider: $fails failures"; exit 1; }
[ $ran -gt 0 ] || { echo "no other allocator installed: only our own case ran"; exit 77; }
echo "override-provider: passed ($ran other allocators)"
