#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs the ctest suite for the other Linux targets (docs/platforms.md):
#   aarch64   cross-built with aarch64-linux-gnu-gcc, tests under qemu-aarch64-static
#   riscv64   cross-built with riscv64-linux-gnu-gcc, tests under qemu-riscv64-static
# (musl, which runs natively: test/musl.sh)
# aarch64 runs the whole suite but profile-fork-loader (a child hangs under qemu-user now and
# then, docs/testing.md) and the memory tests' purge-setting variants (test/purge-variants.sh:
# the same OS calls from the same C code, whose RSS figures emulated builds do not assert);
# riscv64 leaves out the labels memory, churn, options and stats
# and the core programs' runs with the live view or the profiler on, and profile-fork-loader (a
# child hangs under riscv64's qemu-user now and then: docs/testing.md) (issue 51, docs/testing.md
# "The cross suites' selection": the same OS calls through the same qemu-user, and C code with
# nothing of the architecture in it, that aarch64 runs), and runs the rest: the core
# programs (atomics, bit scans, TLS, alignment), the profiler's own tests (the unwinder), the
# static and dynamic override (linking, TLS models), secure, install, docs.
# CROSS_FULL=1: the whole suite on both targets. MI_TEST_BUILD_ONLY=1: configure and build only
# (test/run.sh builds the cross suites so beside its earlier suites' tests, at a low priority).
# Installs nothing: a missing toolchain is an error naming the Debian package to install.
# Usage: test/cross.sh [aarch64] [riscv64]   (default: both)
# Build directories: build-cross-<target> in the source tree (CROSS_BUILD_ROOT to move them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/test/purge-variants.sh"
broot=${CROSS_BUILD_ROOT:-$root}
jobs=$(nproc 2>/dev/null || echo 2)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(aarch64 riscv64)

need() {   # command, debian package
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "cross.sh: $1 not found (Debian: apt-get install $2)" >&2
    exit 2
  fi
}
command -v ninja >/dev/null 2>&1 || { echo "cross.sh: ninja not found (apt-get install ninja-build)" >&2; exit 2; }

declare -A took
run_target() {
  local t=$1 dir="$broot/build-cross-$1" start cmake_args=() select=()
  case "$t" in
    aarch64|riscv64)
      need "$t-linux-gnu-gcc" "gcc-$t-linux-gnu"
      need "$t-linux-gnu-g++" "g++-$t-linux-gnu"
      need "qemu-$t-static" "qemu-user-static"
      [ -d "/usr/$t-linux-gnu/lib" ] || { echo "cross.sh: /usr/$t-linux-gnu/lib missing (apt-get install libc6-dev-${t/aarch64/arm64}-cross)" >&2; exit 2; }
      cmake_args=(-DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-$t-linux-gnu.cmake") ;;
    musl) echo "cross.sh: the musl suite runs natively: test/musl.sh" >&2; exit 2 ;;
    *) echo "cross.sh: unknown target $t (aarch64, riscv64)" >&2; exit 2 ;;
  esac
  [ "$t" = aarch64 ] && [ "${CROSS_FULL:-0}" != 1 ] \
    && select=(-LE "$MI_PURGE_VARIANTS_LABEL_RE" -E "$MI_PURGE_VARIANTS_RE|^profile-fork-loader\$")
  [ "$t" = riscv64 ] && [ "${CROSS_FULL:-0}" != 1 ] \
    && select=(-LE '^(memory|churn|options|stats)$' -E '^(stress-profile|model-mt-profile|stress-live|sheap-live|model-mt-live|profile-fork-loader$)')
  start=$(date +%s)
  echo "=== $t: configure and build ($dir)"
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" | grep -A40 "tests disabled" || true
  cmake --build "$dir" -j "$jobs"
  if [ "${MI_TEST_BUILD_ONLY:-0}" = 1 ]; then echo "=== $t: built in $(( $(date +%s) - start )) s"; return 0; fi
  echo "=== $t: ctest ${select[*]:-(the whole suite)}"
  # -j twice the cores; the tests that keep a core busy (RESOURCE_GROUPS busy:1) one per core (test/run.sh)
  printf '{"version": {"major": 1, "minor": 0}, "local": [{"busy": [{"id": "0", "slots": %d}]}]}\n' "$jobs" >"$dir/ctest-busy.json"
  ctest --test-dir "$dir" --output-on-failure -j "${MI_TEST_CTEST_JOBS:-$((2 * jobs))}" --resource-spec-file "$dir/ctest-busy.json" "${select[@]}"
  took[$t]=$(( $(date +%s) - start ))
  echo "=== $t: passed in ${took[$t]} s"
}

total_start=$(date +%s)
for t in "${targets[@]}"; do run_target "$t"; done
[ "${MI_TEST_BUILD_ONLY:-0}" = 1 ] && exit 0
echo "=== cross suites passed:"
for t in "${targets[@]}"; do printf '  %-8s %4d s (build + tests)\n' "$t" "${took[$t]}"; done
echo "  total    $(( $(date +%s) - total_start )) s"
