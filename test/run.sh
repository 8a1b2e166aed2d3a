#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite: a Release build with every ctest test, the same suite against the
# Debug build (libmimalloc-debug: invariant assertions, heap-misuse checks, per-bin statistics),
# the secure build (libmimalloc-secure: encoded free lists, double and invalid frees rejected),
# under AddressSanitizer+UBSan, the tracking builds for Valgrind and ASan (deliberate heap bugs
# the checker must report at their line; the whole suite natively in the ASan one), and the multi-threaded stress
# tests under ThreadSanitizer (Release and Debug builds); then, where their toolchains are
# installed, the Rust and D packages' tests (cargo; ldc2, gdc, dub) and the aarch64 and riscv64
# suites under qemu-user (test/cross.sh), the musl suite (test/musl.sh), the Windows build
# with its core suite under Wine (test/windows.sh) and the macOS compile and link check
# (test/macos-check.sh, Zig's C compiler). After the core suites: the multi-threaded model fuzzer
# and the loaded round (test/loaded.sh: the multi-threaded tests oversubscribed, beside busy
# loops, with the schedule fuzzer on).
# Usage: test/run.sh [--quick]   (--quick: the Release build only)
# Environment: MI_TEST_REQUIRE_ALL=1 (a missing toolchain fails the run), MI_TEST_WERROR=1 (the
# release, debug and secure builds with -Werror; CI sets both)
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
  "windows-secure|test/windows-secure.sh|x86_64-w64-mingw32-gcc-win32 x86_64-w64-mingw32-g++-win32 wine wineboot wineserver|apt-get install g++-mingw-w64-x86-64-win32 wine wine64"
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
# ctest runs twice as many tests as there are cores (MI_TEST_CTEST_JOBS to change it; exported for
# test/cross.sh, test/musl.sh and test/windows.sh), with a resource `busy` of one slot per core
# (ctest_busy_spec): the tests whose threads keep a core or more busy take one (test property
# RESOURCE_GROUPS busy:1), so that no more of them run at once than with -j the cores, and the
# many tests that mostly sleep or wait fill the other places (docs/testing.md, "Parallel tests")
export MI_TEST_CTEST_JOBS=${MI_TEST_CTEST_JOBS:-$((2 * jobs))}
ctest_busy_spec() {   # build dir: writes the resource file there, prints its path
  printf '{"version": {"major": 1, "minor": 0}, "local": [{"busy": [{"id": "0", "slots": %d}]}]}\n' "$jobs" >"$1/ctest-busy.json"
  echo "$1/ctest-busy.json"
}
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

# The build outputs that the tests ctest selects name (their command, environment, other
# properties; read from the CTestTestfile.cmake files, as ctest itself shows no command whose
# program is not built yet): a suite that runs some of the tests builds only these (and what they
# link), not every test program. Prints nothing when the generator is not Ninja or no output is
# named.
tested_outputs() {   # build dir, ctest selection args...
  local dir=$1; shift
  [ -f "$dir/build.ninja" ] || return 0
  ctest --test-dir "$dir" --show-only=json-v1 "$@" | python3 -c '
import json, os, re, sys
root = sys.argv[1]
dirs = {root.rstrip("/") + "/", os.path.realpath(root) + "/"}
outs = {o for o, rule in (line.rstrip("\n").rsplit(": ", 1) for line in open(sys.argv[2])) if rule != "phony"}
names = {t["name"] for t in json.load(sys.stdin)["tests"]}
head = re.compile(r"^(?:add_test|set_tests_properties)\(\s*(?:\[(=*)\[(.*?)\]\1\]|\"([^\"]*)\"|([^\s)]+))")
found = set()
for base, _, files in os.walk(root):
    if "CTestTestfile.cmake" not in files:
        continue
    for line in open(os.path.join(base, "CTestTestfile.cmake")):
        m = head.match(line)
        if not m or next(g for g in m.groups()[1:] if g is not None) not in names:
            continue
        for tok in re.split(r"[\s\"=;,()]+", line):
            for d in dirs:
                if tok.startswith(d) and tok[len(d):] in outs:
                    found.add(tok[len(d):])
for f in sorted(found):
    print(f)' "$dir" <(ninja -C "$dir" -t targets all)
}

# MI_TEST_WERROR=1 (CI sets it): the release, debug and secure suites build with -Werror, so
# that their builds are also the warning check of the default compiler in these configurations
werror=()
[ "${MI_TEST_WERROR:-0}" = 1 ] && werror=(-DCMAKE_C_FLAGS=-Werror -DCMAKE_CXX_FLAGS=-Werror)

# The suites: name, cmake args, then after -- the ctest selection (none: every test; with one,
# only the programs the selected tests run are built). Each suite's build runs, at a lower CPU
# priority (nice), while the previous suite's tests run (these leave a core idle much of the
# time: sleeps, purge delays, serial tails); its output goes to build-test-<name>/run-build.log,
# shown when it fails.
S_NAME=() S_CMAKE=() S_CTEST=() S_ENV=()
suite() {   # [ENV=VALUE for ctest] name, cmake args..., -- ctest args...
  local env="" name cm=() ct=()
  [[ "$1" == *=* ]] && { env=$1; shift; }
  name=$1; shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ct=("$@")
  S_NAME+=("$name") S_ENV+=("$env")
  S_CMAKE+=("$([ ${#cm[@]} -eq 0 ] || printf '%s\x1f' "${cm[@]}")")
  S_CTEST+=("$([ ${#ct[@]} -eq 0 ] || printf '%s\x1f' "${ct[@]}")")
}
split_args() { local IFS=$'\x1f'; read -r -a "$1" <<<"$2"; }   # array name, joined args

build_suite() {   # index: configure and build
  local i=$1 name=${S_NAME[$1]} cm=() ct=() targets=()
  local dir="$root/build-test-$name" t0=$SECONDS
  split_args cm "${S_CMAKE[$i]}"; split_args ct "${S_CTEST[$i]}"
  echo "=== $name: configure and build ($dir)"
  cmake -S "$root" -B "$dir" "${gen[@]}" "${cm[@]}" >/dev/null
  if [ ${#ct[@]} -gt 0 ]; then
    mapfile -t targets < <(tested_outputs "$dir" "${ct[@]}")
    [ ${#targets[@]} -gt 0 ] && echo "=== $name: building the ${#targets[@]} outputs the selected tests run: ${targets[*]}"
  fi
  if [ ${#targets[@]} -gt 0 ]; then
    cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$jobs"
  fi
  echo "=== $name: built in $((SECONDS - t0)) s"
}

bg_pid=""
stop_bg() {
  [ -n "$bg_pid" ] && { kill -- "-$bg_pid" 2>/dev/null || kill "$bg_pid" 2>/dev/null; } || true
  [ -n "${pre_pid:-}" ] && { kill -- "-$pre_pid" 2>/dev/null || kill "$pre_pid" 2>/dev/null; } || true
}
trap 'stop_bg; step_summary' EXIT
start_bg_build() {   # index: build_suite in the background, niced, into its log
  local dir="$root/build-test-${S_NAME[$1]}"
  mkdir -p "$dir"
  setsid -w nice -n 10 bash -c "set -euo pipefail; $(declare -p root gen jobs S_NAME S_CMAKE S_CTEST); $(declare -f split_args tested_outputs build_suite); build_suite $1" \
    >"$dir/run-build.log" 2>&1 &
  bg_pid=$!
}
# The builds of the fuzzer's and the loaded round's programs, beside the last suite's tests: the
# same configurations and targets as below and test/loaded.sh use, which then find them built
# (a failure here is left for them to report)
build_later() {
  local t0=$SECONDS
  if command -v clang >/dev/null 2>&1 && echo 'int LLVMFuzzerTestOneInput(const char* d, unsigned long n) { (void)d; (void)n; return 0; }' \
       | clang -x c -fsanitize=fuzzer,address -o "$root/build-test-fuzz/libfuzzer-probe" - >/dev/null 2>&1; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-test-fuzz" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DMI_SANITIZE=address -DMI_BUILD_FUZZ=ON >/dev/null && cmake --build "$root/build-test-fuzz" -j "$jobs" --target fuzz-model-mt || true
  fi
  cmake -S "$root" -B "$root/build-test-loaded" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DMI_SCHED_FUZZ=ON >/dev/null \
    && cmake --build "$root/build-test-loaded" -j "$jobs" --target mi-loaded-programs || true
  echo "=== fuzz-model-mt and loaded programs: built in $((SECONDS - t0)) s"
}
start_bg_later() {
  mkdir -p "$root/build-test-fuzz" "$root/build-test-loaded"
  setsid -w nice -n 10 bash -c "set -uo pipefail; $(declare -p root gen jobs); $(declare -f build_later); build_later" \
    >"$root/build-test-loaded/run-build.log" 2>&1 &
  bg_pid=$!
}
wait_bg_later() {
  [ -n "$bg_pid" ] || return 0
  wait "$bg_pid" || true
  bg_pid=""
  grep -E '^=== ' "$root/build-test-loaded/run-build.log" || true
}
# Ahead of the optional suites, in the background from the debug suite's tests on, at a lower CPU
# priority than the suites' own builds (nice 15), so that they take the CPU the tests leave idle
# (sleeps, purge delays, waits) instead of minutes of their own after the core suites (issue 51):
# the builds of the cross, musl and Windows suites (their scripts with MI_TEST_BUILD_ONLY=1: the
# same configurations, which the scripts then find built; a failure is left for the suite to
# build again and report), and the Rust and D packages' suites and the macOS compile and link
# check whole (builds and unit tests that wait on nothing; each one's output and exit status in
# build-test-optional/<name>.log and <name>.rc, shown and checked in its place below).
pre_pid=""
pre_dir="$root/build-test-optional"
rm -rf "$pre_dir" && mkdir -p "$pre_dir"   # (no result of an earlier run is taken for this one's)
start_prebuild_optional() {
  local suite name script needs how c ok todo=()
  for suite in "${OPTIONAL_SUITES[@]}"; do
    IFS='|' read -r name script needs how <<<"$suite"
    case "$name" in cross|musl|windows|windows-secure|rust|d|macos) ;; *) continue ;; esac
    ok=1
    for c in $needs; do have "$c" || ok=0; done
    [ $ok = 1 ] && todo+=("$name:$script")
  done
  [ ${#todo[@]} -gt 0 ] || return 0
  echo "=== in the background (nice 15): the builds of the cross, musl and Windows suites, the Rust and D suites and the macOS check (${todo[*]}), output in $pre_dir"
  setsid -w nice -n 15 bash -c '
    root=$1 dir=$2; shift 2
    for j in "$@"; do
      name=${j%%:*} script=${j#*:} t0=$SECONDS rc=0
      case $name in
        rust|d|macos) bash "$root/$script" >"$dir/$name.log" 2>&1 || rc=$?
                echo $rc >"$dir/$name.rc"
                echo "=== $name: its suite ran in the background in $((SECONDS - t0)) s (exit status $rc)" ;;
        *) MI_TEST_BUILD_ONLY=1 bash "$root/$script" >"$dir/$name-build.log" 2>&1 \
             || echo "=== $name: the build failed (the suite builds again and reports it)"
           echo "=== $name: its build in the background took $((SECONDS - t0)) s" ;;
      esac
    done' bash "$root" "$pre_dir" "${todo[@]}" >"$pre_dir/summary.log" 2>&1 &
  pre_pid=$!
}
wait_prebuild_optional() {
  [ -n "$pre_pid" ] || return 0
  wait "$pre_pid" || true
  pre_pid=""
  cat "$pre_dir/summary.log" || true
}
wait_bg_build() {   # index
  local dir="$root/build-test-${S_NAME[$1]}" rc=0
  wait "$bg_pid" || rc=$?
  bg_pid=""
  if [ $rc -ne 0 ]; then
    tail -n 60 "$dir/run-build.log"
    echo "=== ${S_NAME[$1]}: the build failed (log $dir/run-build.log)"
    exit 1
  fi
  grep -E '^=== ' "$dir/run-build.log"
}
run_tests() {   # index
  local i=$1 name=${S_NAME[$1]} ct=() env=()
  split_args ct "${S_CTEST[$i]}"
  [ -n "${S_ENV[$i]}" ] && env=("${S_ENV[$i]}")
  echo "=== $name: ctest ${ct[*]:-}"
  env "${env[@]}" ctest --test-dir "$root/build-test-$name" --output-on-failure -j "$MI_TEST_CTEST_JOBS" \
    --resource-spec-file "$(ctest_busy_spec "$root/build-test-$name")" "${ct[@]}"
}

suite release -DCMAKE_BUILD_TYPE=Release "${werror[@]}"
suite debug -DCMAKE_BUILD_TYPE=Debug "${werror[@]}"
# MI_DEBUG=3: the validators (src/validate.c) at every slow-path boundary, on the multi-threaded and model tests
suite debug-full -DCMAKE_BUILD_TYPE=Debug -DMI_DEBUG_FULL=ON -- -R '^(stress|stress-reclaim-on-free|stress-live|threads|sheap|model|model-mt|validate-.*)$'
suite secure -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON "${werror[@]}"
suite asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SANITIZE=address
# track-valgrind: memcheck's reports (label track) and the tests that check the build's name
# ("valgrind": options, override); the rest of the suite runs natively in track-asan, the same
# tracking build to a native program (every block padded; both checkers' calls are inert without
# their tool, and the test registrations treat the two builds alike): not twice
suite track-valgrind -DCMAKE_BUILD_TYPE=Release -DMI_TRACK_VALGRIND=ON -- -L "track|options|override"
suite track-asan -DCMAKE_BUILD_TYPE=Release -DMI_TRACK_ASAN=ON
# both TSan builds have the schedule fuzzer (off unless a test sets MIMALLOC_TEST_SCHED): its
# tests hold a thread inside a protocol's window, where TSan sees an access the window allows
suite "TSAN_OPTIONS=halt_on_error=1 ${TSAN_OPTIONS:-}" tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SANITIZE=thread -DMI_SCHED_FUZZ=ON -- -L "stress|purger"
# the debug build's checks run on the freeing thread (padding, double-free search): race-free
# too; and every fuzzed test (label sched) under TSan
suite "TSAN_OPTIONS=halt_on_error=1 ${TSAN_OPTIONS:-}" tsan-debug -DCMAKE_BUILD_TYPE=Debug -DMI_SANITIZE=thread -DMI_SCHED_FUZZ=ON -- -L "stress|purger|sched"
# OS-failure injection (docs/testing.md): every primitive failing once at each sampled call,
# then 1% of all of them, in a secure build (guard pages too); about 4.5 minutes after the build
suite failinject -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON -DMI_FAIL_INJECT=ON -- -L failinject

nsuites=${#S_NAME[@]}
[ "${1:-}" = "--quick" ] && nsuites=1
for i in $(seq 0 $((nsuites - 1))); do
  name=${S_NAME[$i]}
  if [ "$i" = 0 ]; then
    build_suite 0
    step_time "$name: build"
  else
    echo "=== $name: waiting for its build (started beside ${S_NAME[$((i - 1))]}'s tests)"
    wait_bg_build "$i"
    step_time "$name: build (the rest after the previous suite's tests)"
  fi
  if [ $((i + 1)) -lt "$nsuites" ]; then
    start_bg_build $((i + 1))
  elif [ "${1:-}" != "--quick" ]; then
    start_bg_later
  fi
  [ "$i" = 1 ] && start_prebuild_optional
  run_tests "$i"
  step_time "$name: ctest"
  if [ "$name" = release ]; then
    shot="$root/build-test-release/test/live/live-view.png"
    [ -f "$shot" ] && echo "=== live view in headless Chromium, screenshot: $shot"
  fi
done
if [ "${1:-}" = "--quick" ]; then exit 0; fi
wait_bg_later
step_time "fuzz-model-mt and loaded programs: build (the rest after the last suite's tests)"

skipped=()

# ---- the multi-threaded model fuzzer (test/test-model-mt.c; docs/testing.md): about 1.5 minutes ----
# random seeds for a fixed time on the release and ASan builds (a failure prints the command that
# replays its seed), then the libFuzzer target (clang, library and test under ASan) for a fixed
# time in its own build; without clang's libFuzzer that part is skipped (failed with
# MI_TEST_REQUIRE_ALL=1)
echo "=== model-mt: random seeds, 20 s on release and 20 s on asan"
"$root/build-test-release/test/test-model-mt" --seconds 20
"$root/build-test-asan/test/test-model-mt" --seconds 20 --steps 6000
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

wait_prebuild_optional
step_time "the background builds and suites (the rest after the loaded round)"
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
  if [ -f "$pre_dir/$name.rc" ]; then   # run in the background (start_prebuild_optional)
    echo "=== $name: $script (ran in the background beside the core suites; its output:)"
    cat "$pre_dir/$name.log"
    rc=$(cat "$pre_dir/$name.rc")
    [ "$rc" = 0 ] || { echo "=== $name: failed (exit status $rc; log $pre_dir/$name.log)"; exit 1; }
    step_time "$name (its output; it ran in the background)"
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
