#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The long version of the loaded mode (test/loaded.sh; docs/testing.md, "Loaded mode"): rounds
# of the `loaded` tests with a new schedule-fuzzer seed each, oversubscribed and beside busy
# loops, for as long as asked; a failed round does not stop it. The same output as loaded.sh:
# every failed test with its seed and the commands that replay it, then the summary (rounds,
# runs and failures per test).
#
# usage: test/soak.sh --minutes N | --hours N  [any option of test/loaded.sh but --rounds/--seconds]
#   e.g. test/soak.sh --hours 8 --seed 1000        (rounds with seeds 1000, 1001, ...)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) seconds=$(( $2 * 60 )); shift 2 ;;
    --hours) seconds=$(( $2 * 3600 )); shift 2 ;;
    --rounds|--seconds) echo "soak.sh: the duration is --minutes N or --hours N" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ "$seconds" -le 0 ]; then
  echo "usage: test/soak.sh --minutes N | --hours N [--seed S] [--build DIR] [--label L] [--p F] [--sleep US] [--jobs J]" >&2
  exit 2
fi
exec bash "$root/test/loaded.sh" --seconds "$seconds" --keep-going --title soak "${args[@]}"
