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
# (test/macos-check.sh, Zig's C compiler). After the core suites: the multi-threaded model fuzzer
# and the loaded round (test/loaded.sh: the multi-threaded tests oversubscribed, beside busy
# loops, with the schedule fuzzer on).
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
  "v3-header|test/v3-header.sh|python3 cc c++|apt-get install python3 gcc g++"
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

# Elapsed time per step: `step_time NAME` prints the seconds since the previous step ended (or
# since the start) and keeps them for the summary that ends the run, also a failed one.
step_t0=$SECONDS
step_names=() step_secs=()
step_time() {
  local s=$((SECONDS - step_t0))
  step_names+=("$1") step_secs+=("$s")
  echo "=== time: $1: $s s"
  step_t0=$SECONDS
}
step_summary() {
  [ ${#step_names[@]} -gt 0 ] || return 0
  echo "=== time per step (seconds; total $SECONDS s):"
  local i
  for i in "${!step_names[@]}"; do printf '  %6d  %s\n' "${step_secs[$i]}" "${step_names[$i]}"; done
}
trap step_summary EXIT

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
  step_time "$name: build"
  echo "=== $name: ctest ${ctest_args[*]:-}"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_args[@]}"
  step_time "$name: ctest"
}

run_suite release -DCMAKE_BUILD_TYPE=Release
shot="$root/build-test-release/test/live/live-view.png"
[ -f "$shot" ] && echo "=== live view in headless Chromium, screenshot: $shot"
if [ "${1:-}" = "--quick" ]; then exit 0; fi
run_suite debug -DCMAKE_BUILD_TYPE=Debug
# MI_DEBUG=3: the validators (src/validate.c) at every slow-path boundary, on the multi-threaded and model tests
run_suite debug-full -DCMAKE_BUILD_TYPE=Debug -DMI_DEBUG_FULL=ON -- -R '^(stress|stress-reclaim-on-free|stress-live|threads|sheap|model|model-mt|validate-.*)$'
run_suite secure -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON
run_suite asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SANITIZE=address
run_suite track-valgrind -DCMAKE_BUILD_TYPE=Release -DMI_TRACK_VALGRIND=ON
run_suite track-asan -DCMAKE_BUILD_TYPE=Release -DMI_TRACK_ASAN=ON
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" run_suite tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SANITIZE=thread -- -L "stress|purger"
# the debug build's checks run on the freeing thread (padding, double-free search): race-free too
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" run_suite tsan-debug -DCMAKE_BUILD_TYPE=Debug -DMI_SANITIZE=thread -- -L "stress|purger"

# OS-failure injection (docs/testing.md): every primitive failing once at each sampled call,
# then 1% of all of them, in a secure build (guard pages too); about 4.5 minutes after the build
run_suite failinject -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON -DMI_FAIL_INJECT=ON -- -L failinject

skipped=()

# ---- the multi-threaded model fuzzer (test/test-model-mt.c; docs/testing.md): about 2 minutes ----
# random seeds for a fixed time on the release and ASan builds (a failure prints the command that
# replays its seed), then the libFuzzer target (clang, library and test under ASan) for a fixed
# time in its own build; without clang's libFuzzer that part is skipped (failed with
# MI_TEST_REQUIRE_ALL=1)
echo "=== model-mt: random seeds, 30 s on release and 30 s on asan"
"$root/build-test-release/test/test-model-mt" --seconds 30
"$root/build-test-asan/test/test-model-mt" --seconds 30 --steps 6000
step_time "model-mt: random seeds"
fuzz_probe="$root/build-test-fuzz/libfuzzer-probe"
mkdir -p "$root/build-test-fuzz"
if command -v clang >/dev/null 2>&1 && echo 'int LLVMFuzzerTestOneInput(const char* d, unsigned long n) { (void)d; (void)n; return 0; }' \
     | clang -x c -fsanitize=fuzzer,address -o "$fuzz_probe" - >/dev/null 2>&1; then
  echo "=== model-mt: libFuzzer (fuzz-model-mt), 45 s"
  CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-test-fuzz" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMI_SANITIZE=address -DMI_BUILD_FUZZ=ON >/dev/null
  cmake --build "$root/build-test-fuzz" -j "$jobs" --target fuzz-model-mt
  rm -rf "$root/build-test-fuzz/corpus" && mkdir -p "$root/build-test-fuzz/corpus"
  fuzz_log="$root/build-test-fuzz/fuzz-model-mt.log"
  if ! (cd "$root/build-test-fuzz" && ./test/fuzz-model-mt -max_total_time=45 -max_len=4096 -len_control=0 \
          -print_final_stats=1 corpus >"$fuzz_log" 2>&1); then
    grep -v -E '^#[0-9]+' "$fuzz_log" | tail -n 100
    echo "=== model-mt libFuzzer failed: the input is the crash-* file in $root/build-test-fuzz (run it as the argument of test/fuzz-model-mt), the log $fuzz_log"
    exit 1
  fi
  grep -E '^(Done|stat::)' "$fuzz_log"
  step_time "model-mt: libFuzzer build and run"
elif [ "${MI_TEST_REQUIRE_ALL:-0}" = 1 ]; then
  echo "=== model-mt libFuzzer: missing clang or its libFuzzer (apt-get install clang libclang-rt-14-dev)"; exit 1
else
  echo "=== model-mt libFuzzer: skipped (not installed: clang or its libFuzzer; apt-get install clang libclang-rt-14-dev)"
  skipped+=("model-mt-libfuzzer")
fi
# ---- end of the multi-threaded model fuzzer ----

# ---- the loaded round (test/loaded.sh; docs/testing.md, "Loaded mode"): about 3 minutes ----
# every test of the label `loaded` once, oversubscribed (ctest -j twice the cores, and programs
# with 12-16 threads), beside one busy loop per core, with the schedule fuzzer on and a new seed
# every run, in its own Release build with -DMI_SCHED_FUZZ=ON (only the programs the label
# needs); a failure prints the seed and the commands that replay it. test/soak.sh runs rounds
# of it for hours.
bash "$root/test/loaded.sh" --build-dir "$root/build-test-loaded" --rounds 1
step_time "loaded: build and round"
# ---- end of the loaded round ----

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
  step_time "$name"
done
if [ ${#skipped[@]} -gt 0 ]; then
  echo "=== all test suites passed; skipped for want of a toolchain: ${skipped[*]}"
else
  echo "=== all test suites passed"
fi
