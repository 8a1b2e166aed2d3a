#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs the ctest suite on x86-64 Linux with musl libc (docs/platforms.md): Debian's
# musl-gcc wrapper (musl-tools), cmake/toolchain-x86_64-linux-musl.cmake (a C-only library,
# MI_CXX=OFF; no C++ tests). The programs run natively. Tests that need glibc's loader are
# disabled with their reasons (listed at configure time and below). The memory tests' purge-setting
# variants are left out (test/purge-variants.sh: the same OS calls from the same C code, with
# nothing of the C library in them; the glibc suites run them); MUSL_FULL=1 runs them too.
# Installs nothing: a missing tool is an error naming the Debian package to install.
# Usage: test/musl.sh   (build directory: build-musl in the source tree; MUSL_BUILD_DIR moves it)
# MI_TEST_BUILD_ONLY=1: configure and build only (test/run.sh builds it so beside its earlier
# suites' tests, at a low priority)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MUSL_BUILD_DIR:-$root/build-musl}
jobs=$(nproc 2>/dev/null || echo 2)
source "$root/test/purge-variants.sh"
select=()
[ "${MUSL_FULL:-0}" != 1 ] && select=(-LE "$MI_PURGE_VARIANTS_LABEL_RE" -E "$MI_PURGE_VARIANTS_RE")

need() {   # command, debian package
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "musl.sh: $1 not found (Debian: apt-get install $2)" >&2
    exit 2
  fi
}
need musl-gcc musl-tools
need cmake cmake
need ninja ninja-build
need python3 python3        # the options and stats test drivers
need readelf binutils       # test/static

start=$(date +%s)
echo "=== musl: configure and build ($dir)"
# -Werror: the library and the tests compile warning-free against musl's headers too
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-Werror \
      -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-x86_64-linux-musl.cmake" | grep -A40 "tests disabled" || true
cmake --build "$dir" -j "$jobs"
if [ "${MI_TEST_BUILD_ONLY:-0}" = 1 ]; then echo "=== musl: built in $(( $(date +%s) - start )) s"; exit 0; fi
echo "=== musl: ctest ${select[*]:-(the whole suite)}"
# -j twice the cores; the tests that keep a core busy (RESOURCE_GROUPS busy:1) one per core (test/run.sh)
printf '{"version": {"major": 1, "minor": 0}, "local": [{"busy": [{"id": "0", "slots": %d}]}]}\n' "$jobs" >"$dir/ctest-busy.json"
ctest --test-dir "$dir" --output-on-failure -j "${MI_TEST_CTEST_JOBS:-$((2 * jobs))}" --resource-spec-file "$dir/ctest-busy.json" "${select[@]}"
echo "=== musl: passed in $(( $(date +%s) - start )) s (build + tests)"
