#!/bin/sh
# SPDX-License-Identifier: MIT
# Where a program's resident memory sits in our segments (bench/rssmap.c), at given moments.
# usage: bench/rssmap.sh [--build-dir DIR] [--at "0.2 0.5"] [--peak] [--segments] [--kib] -- program args...
#   --build-dir  build of our library (default <repo>/build; built in Release when missing)
#   --at         seconds after the start at which to take a snapshot (each one a SIGUSR1);
#                one more snapshot is always taken at exit
#   --peak       also a snapshot at the moment of the highest RSS (RSS read every millisecond;
#                printed at exit, before the exit snapshot)
#   --segments   also one line per medium or large segment, slot by slot
#   --kib        the summary lines in KiB instead of MiB (small programs)
# Output on stderr: lines starting with "rssmap"; the program's stdout is discarded. The exit
# snapshot is the first process's (a program it starts reports on a signal only).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
build="$repo/build"
at=""
segments=""
peak=""
kib=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --at) at=$2; shift 2 ;;
    --peak) peak=1; shift ;;
    --segments) segments=1; shift ;;
    --kib) kib=1; shift ;;
    --) shift; break ;;
    *) echo "rssmap.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: bench/rssmap.sh [--build-dir DIR] [--at SECONDS...] [--peak] [--segments] [--kib] -- program args" >&2; exit 2; }
if [ ! -f "$build/libmimalloc.so" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=c11 -O1 -shared -fPIC -D_GNU_SOURCE -I"$repo/src" -I"$repo/include" "$repo/bench/rssmap.c" -o "$tmp/rssmap.so" -lpthread
env RSSMAP_AT_EXIT=1 ${peak:+RSSMAP_PEAK=1} ${segments:+RSSMAP_SEGMENTS=1} ${kib:+RSSMAP_KIB=1} LD_PRELOAD="$build/libmimalloc.so $tmp/rssmap.so" "$@" >/dev/null &
pid=$!
start=0
for t in $at; do
  d=$(awk -v a="$t" -v b="$start" 'BEGIN { d = a - b; print (d > 0 ? d : 0) }')
  sleep "$d"
  start=$t
  kill -USR1 "$pid" 2>/dev/null || true
done
wait "$pid"
