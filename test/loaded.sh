#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The loaded mode (issue 49: failures that appear only when the machine is busy;
# docs/testing.md, "Loaded mode"): the multi-threaded stress, model, shared-heap, profiler and
# purger tests (ctest label `loaded`) run oversubscribed -- ctest -j twice the cores, and in
# this build (-DMI_SCHED_FUZZ=ON) programs with more threads than cores (loaded-*) -- beside one
# busy loop per core, with the schedule fuzzer on (MIMALLOC_TEST_SCHED=seed:S,p:F,sleep:US), a
# different seed S every round. Every test program watches its RSS (test/rss-guard.h).
#
# usage: test/loaded.sh [--rounds N | --seconds N] [--seed S] [--build DIR | --build-dir DIR]
#                       [--label L] [--tests REGEX] [--p F] [--sleep US] [--jobs J] [--busy B]
#                       [--keep-going]
#   --rounds N     N rounds (default 1); --seconds N: rounds until N seconds have passed (a
#                  round that started runs to its end)
#   --seed S       the first round's seed (default: from the clock); round r uses S + r - 1
#   --build DIR    use this build as it is (configured with -DMI_SCHED_FUZZ=ON, or the fuzzer
#                  is off: the variable is then ignored); without it the script configures and
#                  builds --build-dir DIR (default build-loaded): Release, -DMI_SCHED_FUZZ=ON,
#                  only the programs of the label (target mi-loaded-programs)
#   --label L      the ctest label (default loaded); --tests REGEX: only the tests it matches
#   --p F, --sleep US   the fuzzer's probability per point and longest sleep (default 0.05, 1000)
#   --jobs J       ctest -j (default: twice the cores); --busy B: busy loops (default: the cores)
#   --keep-going   run the remaining rounds after a failed one (test/soak.sh does)
# Output: per round its seed and ctest's lines; per failed test the seed and the commands that
# replay it (ctest with the same MIMALLOC_TEST_SCHED, and the program itself); at the end a
# summary: rounds, runs and failures per test. Exit status 1 when any test failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ncpu=$(nproc 2>/dev/null || echo 2)
rounds=1 seconds=0 seed="" build="" build_dir="$root/build-loaded" label=loaded tests="" p=0.05 sleep_us=1000
jobs=$((2 * ncpu)) busy=$ncpu keep_going=0 title=loaded
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; seconds=0; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --p) p=$2; shift 2 ;;
    --sleep) sleep_us=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --title) title=$2; shift 2 ;;   # (soak.sh: the name in the output)
    *) echo "usage: test/loaded.sh [--rounds N | --seconds N] [--seed S] [--build DIR | --build-dir DIR] [--label L] [--tests REGEX]" \
            "[--p F] [--sleep US] [--jobs J] [--busy B] [--keep-going]" >&2; exit 2 ;;
  esac
done
if [ -z "$seed" ]; then seed=$(( ($(date +%s%N) / 1000) % 1000000000 + 1 )); fi
case "$seed" in ''|*[!0-9]*|0) echo "$title: --seed must be a positive integer (0 turns the fuzzer off)" >&2; exit 2 ;; esac

t_start=$(date +%s)
if [ -z "$build" ]; then
  build=$build_dir
  gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  echo "=== $title: configure and build $build (Release, -DMI_SCHED_FUZZ=ON; target mi-loaded-programs)"
  mkdir -p "$build"
  if ! { cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DMI_SCHED_FUZZ=ON &&
         cmake --build "$build" -j "$ncpu" --target mi-loaded-programs; } >"$build/loaded-build.log" 2>&1; then
    tail -n 40 "$build/loaded-build.log"
    echo "=== $title: the build failed (log $build/loaded-build.log)"
    exit 1
  fi
  echo "=== $title: built in $(( $(date +%s) - t_start )) s"
fi
build=$(cd "$build" && pwd)
grep -q '^MI_SCHED_FUZZ:[A-Z]*=ON' "$build/CMakeCache.txt" 2>/dev/null \
  || echo "=== $title: note: $build was not configured with -DMI_SCHED_FUZZ=ON: the schedule fuzzer is not there (MIMALLOC_TEST_SCHED is ignored)"
select=(-L "$label")
[ -n "$tests" ] && select+=(-R "$tests")
logs="$build/loaded-logs"
mkdir -p "$logs"

# one busy loop per core (or --busy), ended when this script ends, however it ends
busy_pids=()
stop_busy() {
  for pid in "${busy_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${busy_pids[@]}"; do wait "$pid" 2>/dev/null; done
  busy_pids=()
}
trap 'stop_busy' EXIT
trap 'stop_busy; exit 130' INT TERM
for _ in $(seq 1 "$busy"); do
  ( trap - INT TERM; while :; do :; done ) &
  busy_pids+=($!)
done

# the command that replays one test: ctest, and the program with its environment (ctest's JSON)
replay() {   # test name, the round's seed
  local name=$1 s=$2
  local sched="seed:$s,p:$p,sleep:$sleep_us"
  echo "    replay: MIMALLOC_TEST_SCHED=$sched ctest --test-dir $build -R '^${name}\$' --output-on-failure"
  echo "    replay under load: $root/test/loaded.sh --build $build --label $label --tests '^${name}\$' --seed $s --p $p --sleep $sleep_us --rounds 1"
  ctest --test-dir "$build" --show-only=json-v1 -R "^${name}\$" 2>/dev/null | python3 -c '
import json, shlex, sys
sched = sys.argv[1]
try:
    tests = json.load(sys.stdin).get("tests", [])
except ValueError:
    tests = []
for t in tests:
    env = {}
    cwd = None
    for p in t.get("properties", []):
        if p.get("name") == "ENVIRONMENT":
            for e in p.get("value", []):
                k, _, v = e.partition("=")
                env[k] = v
        if p.get("name") == "WORKING_DIRECTORY":
            cwd = p.get("value")
    env.setdefault("MIMALLOC_TEST_SCHED", sched)
    cmd = " ".join(shlex.quote(c) for c in t.get("command", []))
    envs = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env.items())
    print("    replay: " + ("cd %s && " % shlex.quote(cwd) if cwd else "") + envs + " " + cmd)
' "$sched"
}

declare -A runs=() fails=()
round=0 failed_rounds=0 failures=()
echo "=== $title: $busy busy loops, ctest -j $jobs ${select[*]}, MIMALLOC_TEST_SCHED=seed:S,p:$p,sleep:$sleep_us from seed $seed;" \
     "$( [ "$seconds" -gt 0 ] && echo "rounds for $seconds s" || echo "$rounds round(s)")"
while :; do
  if [ "$seconds" -gt 0 ]; then
    [ $(( $(date +%s) - t_start )) -ge "$seconds" ] && [ $round -gt 0 ] && break
  elif [ $round -ge "$rounds" ]; then
    break
  fi
  round=$((round + 1))
  s=$((seed + round - 1))
  sched="seed:$s,p:$p,sleep:$sleep_us"
  log="$logs/round-$round-seed-$s.log"
  t0=$(date +%s)
  echo "=== $title round $round: MIMALLOC_TEST_SCHED=$sched (log $log)"
  MIMALLOC_TEST_SCHED=$sched ctest --test-dir "$build" "${select[@]}" -j "$jobs" --output-on-failure 2>&1 | tee "$log" \
    | grep --line-buffered -E '^ *[0-9]+/[0-9]+ Test +#' | sed -u -E 's/^ *[0-9]+\/[0-9]+ /  /'
  rc=${PIPESTATUS[0]}
  ran=0
  while read -r name result; do
    case "$result" in *Disabled*|*Skipped*) continue ;; esac   # (not run on purpose: not counted)
    ran=$((ran + 1))
    runs[$name]=$(( ${runs[$name]:-0} + 1 ))
    if [ "${result%% *}" != Passed ]; then fails[$name]=$(( ${fails[$name]:-0} + 1 )); fi
  done < <(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.*[ *]*([A-Za-z].*)$/\1 \2/p' "$log")
  echo "=== $title round $round: $ran tests in $(( $(date +%s) - t0 )) s"
  if [ $rc -ne 0 ]; then
    failed_rounds=$((failed_rounds + 1))
    echo "=== $title round $round FAILED (seed $s): the failed tests' output is in $log"
    sed -n '/The following tests FAILED/,$p' "$log"
    failed=$(sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) \(.*/\1/p' "$log")
    [ -z "$failed" ] && echo "    (ctest failed without a test: see $log)"
    for name in $failed; do
      echo "  $name failed in round $round, seed $s:"
      failures+=("$name (round $round, seed $s)")
      replay "$name" "$s"
    done
    [ $keep_going = 1 ] || break
  fi
done
stop_busy

echo "=== $title summary: $round round(s) in $(( $(date +%s) - t_start )) s from seed $seed (p:$p, sleep:$sleep_us, -j $jobs, $busy busy loops), $failed_rounds failed"
for name in $(printf '%s\n' "${!runs[@]}" | sort); do
  printf '  %-36s %4d runs %4d failed\n' "$name" "${runs[$name]}" "${fails[$name]:-0}"
done
if [ ${#failures[@]} -gt 0 ]; then
  echo "=== $title: FAILED: ${failures[*]}"
  exit 1
fi
echo "=== $title: all passed"
