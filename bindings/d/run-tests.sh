#!/usr/bin/env bash
# Everything CI runs for the D package (bindings/d), from any directory:
#   dub test with ldc2 for every configuration (release, override, secure, debug),
#   the same with gdc, and dub run of the example (ldc2 and gdc).
# Needs: ldc, dub, gdc, a C compiler (cc) and ar (Debian 12: apt-get install ldc dub gdc).
# Stops at the first failure (exit status non-zero); prints each command and the time taken.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
start=$(date +%s)

run() {
  echo "+ (cd $PWD && $*)"
  "$@"
}

compilers=(ldc2)
if command -v gdc >/dev/null 2>&1; then
  compilers+=(gdc)
else
  echo "run-tests.sh: gdc not installed: gdc runs skipped (apt-get install gdc)" >&2
fi

cd "$here"
for dc in "${compilers[@]}"; do
  for config in unittest unittest-override unittest-secure unittest-debug; do
    run dub test --compiler="$dc" --config="$config" -q
  done
done

cd "$here/example"
for dc in "${compilers[@]}"; do
  out=$(run dub run --compiler="$dc" -q --force)
  printf '%s\n' "$out"
  # the example must show that the allocator served its blocks
  grep -q 'makeArray!long(1000): .*mi_is_in_heap_region = true' <<<"$out"
  grep -q 'a stack variable: mi_is_in_heap_region = false' <<<"$out"
  grep -q 'statistics (mi_stats_print_out)' <<<"$out"
done

echo "run-tests.sh: all D package tests passed in $(( $(date +%s) - start )) s"
