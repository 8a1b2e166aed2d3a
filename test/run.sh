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
# Suites that need a toolchain beyond C/C++: skipped with a message when it is missing, failed
# instead when MI_TEST_REQUIRE_ALL=1 (CI installs every toolchain and sets it). Each suite names
# what it needs and how to install it; the README and docs/testing.md give the same commands
# (test/docs/check-install-hints.sh compares them).
OPTIONAL_SUITES=(
  "rust|bindings/rust/run-tests.sh|cargo|install Rust with rustup"
  "d|bindings/d/run-tests.sh|ldc2 gdc dub|apt-get install ldc gdc dub"
  "cross|test/cross.sh|qemu-aarch64-static qemu-riscv64-static aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ riscv64-linux-gnu-gcc riscv64-linux-gnu-g++|apt-get install qemu-user-static gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-riscv64-linux-gnu g++-riscv64-linux-gnu"
  "musl|test/musl.sh|musl-gcc|apt-get install musl-tools"
  "windows|test/windows.sh|x86_64-w64-mingw32-gcc-win32 x86_64-w64-mingw32-g++-win32 wine wineboot wineserver|apt-get install g++-mingw-w64-x86-64-win32 wine wine64"
  "macos|test/macos-check.sh|ziglang file|pip install ziglang; apt-get install file"
)
if [ "${1:-}" = "--list-optional" ]; then   # name, what it needs, how to install it
  for s in "${OPTIONAL_SUITES[@]}"; do IFS='|' read -r n _ needs how <<<"$s"; printf '%s\t%s\t%s\n' "$n" "$needs" "$how"; done
  exit 0
fi
have() {   # a command, or ziglang: Zig's C compiler from PyPI (a Python module, not a command)
  if [ "$1" = ziglang ]; then python3 -m ziglang version >/dev/null 2>&1; else command -v "$1" >/dev/null 2>&1; fi
}

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

# OS-failure injection (docs/testing.md): every primitive failing once at each sampled call,
# then 1% of all of them, in a secure build (guard pages too); about 4.5 minutes after the build
run_suite failinject -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON -DMI_FAIL_INJECT=ON -- -L failinject

skipped=()
for suite in "${OPTIONAL_SUITES[@]}"; do
  IFS='|' read -r name script needs how <<<"$suite"
  missing=()
  for c in $needs; do have "$c" || missing+=("$c"); done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "${MI_TEST_REQUIRE_ALL:-0}" = 1 ]; then echo "=== $name: missing ${missing[*]} ($how)"; exit 1; fi
    echo "=== $name: skipped (not installed: ${missing[*]}; $how)"
    skipped+=("$name")
    continue
  fi
  echo "=== $name: $script"
  bash "$root/$script"
done
if [ ${#skipped[@]} -gt 0 ]; then
  echo "=== all test suites passed; skipped for want of a toolchain: ${skipped[*]}"
else
  echo "=== all test suites passed"
fi
