#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sampled guarded objects (secure builds) when the OS refuses to lift a guard (ctest
# failinject-guarded): every allocation is a guarded object (MIMALLOC_GUARDED_SAMPLE_RATE=1) and
# one guard call fails, for 16 consecutive calls N from the middle of the run (installs and
# removals alternate there). Each run must pass fi-workload's checks; a refused removal keeps the
# block out of use with a warning (before: the freed object's header was written through the
# guard, SIGSEGV), and at least one of the runs must have taken that path.
# usage: guarded.sh <fi-workload>
set -u
prog=$1
count=$(MIMALLOC_GUARDED_SAMPLE_RATE=1 MIMALLOC_PURGE_DELAY=0 MIMALLOC_TEST_FAIL=count "$prog" strict 2>&1 \
        | sed -n 's/^mimalloc-failinject: count .* guard \([0-9]*\) .*/\1/p')
[ -n "$count" ] && [ "$count" -gt 100 ] || { echo "FAIL: no guard calls counted ($count)"; exit 1; }
start=$((count / 2)) fails=0 kept=0
for n in $(seq "$start" $((start + 15))); do
  out=$(MIMALLOC_SHOW_ERRORS=1 MIMALLOC_GUARDED_SAMPLE_RATE=1 MIMALLOC_PURGE_DELAY=0 MIMALLOC_TEST_FAIL=guard:$n "$prog" strict 2>&1)
  rc=$?
  grep -q "^PASS fi-workload" <<<"$out" && [ "$rc" = 0 ] \
    || { echo "FAIL guard:$n (exit $rc): $(tail -n 3 <<<"$out")"; fails=$((fails + 1)); }
  grep -q "unable to remove the guard of a freed guarded object" <<<"$out" && kept=$((kept + 1))
done
[ "$kept" -gt 0 ] || { echo "FAIL: no run refused the removal of a guarded object's guard (calls $start..$((start + 15)) of $count)"; fails=$((fails + 1)); }
[ "$fails" = 0 ] || exit 1
echo "PASS failinject-guarded: 16 runs (guard calls $start..$((start + 15)) of $count), $kept refused a removal and kept the block"
