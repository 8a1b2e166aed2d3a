#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: a Release build with every ctest test, the same suite against the
# Debug build (libmimalloc-debug: invariant assertions, heap-misuse checks, per-bin statistics),
# the secure build (libmimalloc-secure: encoded free lists, double and invalid frees rejected),
# under AddressSanitizer+UBSan, the tracking builds for Valgrind and ASan (whole suite, plus
# deliberate heap bugs the checker must report at their line), and the multi-threaded stress
# tests under ThreadSanitizer (Release and Debug builds); then, where their toolchains are
# installed, the Rust and D packages' tests (cargo; ldc2, gdc, dub) and the aarch64 and riscv64
# suites under qemu-user (test/cross.sh), the musl suite (test/musl.sh), the Windows build
# with its core suite under Wine (test/windows.sh) and the macOS compile and link check
# (test/macos-check.sh, Zig's C compiler).
# Usage: test/run.sh [--quick]   (--quick: the Release build only)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)

run_suite() {   # name, extra cmake args..., then ctest args after --
  local name=$1; shift
  local cmake_args=() ctest_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ctest_args=("$@")
  local dir="$root/build-test-$name"
  echo "=== $name: configure and build ($dir)"
  cmake -S "$root" -B "$dir" "${gen[@]}" "${cmake_args[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "=== $name: ctest ${ctest_args[*]:-}"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_args[@]}"
}

run_suite release -DCMAKE_BUILD_TYPE=Release
shot="$root/build-test-release/test/live/live-view.png"
[ -f "$shot" ] && echo "=== live view in headless Chromium, screenshot: $shot"
if [ "${1:-}" = "--quick" ]; then exit 0; fi
run_suite debug -DCMAKE_BUILD_TYPE=Debug
run_suite secure -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON
run_suite asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SANITIZE=address
run_suite track-valgrind -DCMAKE_BUILD_TYPE=Release -DMI_TRACK_VALGRIND=ON
run_suite track-asan -DCMAKE_BUILD_TYPE=Release -DMI_TRACK_ASAN=ON
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" run_suite tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SANITIZE=thread -- -L stress
# the debug build's checks run on the freeing thread (padding, double-free search): race-free too
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" run_suite tsan-debug -DCMAKE_BUILD_TYPE=Debug -DMI_SANITIZE=thread -- -L stress

# Suites that need a toolchain beyond C/C++: skipped with a message when it is missing, failed
# instead when MI_TEST_REQUIRE_ALL=1 (CI installs every toolchain and sets it).
skipped=()
run_optional() {   # name, script, then the commands it needs
  local name=$1 script=$2; shift 2
  local missing=()
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "${MI_TEST_REQUIRE_ALL:-0}" = 1 ]; then echo "=== $name: missing ${missing[*]}"; exit 1; fi
    echo "=== $name: skipped (not installed: ${missing[*]})"
    skipped+=("$name")
    return 0
  fi
  echo "=== $name: $script"
  bash "$root/$script"
}
run_optional rust bindings/rust/run-tests.sh cargo
run_optional d bindings/d/run-tests.sh ldc2 gdc dub
run_optional cross test/cross.sh qemu-aarch64-static qemu-riscv64-static aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ riscv64-linux-gnu-gcc riscv64-linux-gnu-g++
run_optional musl test/musl.sh musl-gcc
run_optional windows test/windows.sh x86_64-w64-mingw32-gcc-win32 x86_64-w64-mingw32-g++-win32 wine wineboot wineserver
run_optional macos test/macos-check.sh python-zig file
if [ ${#skipped[@]} -gt 0 ]; then
  echo "=== all test suites passed; skipped for want of a toolchain: ${skipped[*]}"
else
  echo "=== all test suites passed"
fi
