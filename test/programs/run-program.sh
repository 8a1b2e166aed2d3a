#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a real program with and without LD_PRELOAD of our libmimalloc.so and checks
#   1. that our allocator really served it: libmi-preload-check.so, preloaded after ours,
#      appends one line per exiting process to a check file (see preload-check.c). Rule: at
#      least one line, every line result=ok, and for each process of interest (named by its
#      comm, e.g. python3, cc1plus, git, redis-server) a line with live > 0, i.e. blocks of
#      that process's own were alive in our heap at its exit;
#   2. that it behaves the same: same exit status, same stdout and (unless a case says why
#      not) same stderr as the run without the preload.
#
# usage: run-program.sh NAME LIBMIMALLOC LIBCHECK SOURCE-DIR
#   NAME: python | sort | git | gxx | redis | java
# Exit status: 0 passed, 1 failed, 77 the program is not installed (ctest: skipped).
# MI_PROGRAMS_PRELOAD, if set, replaces the LD_PRELOAD list (only to show that the checks fail
# when the preload does not take effect, e.g. MI_PROGRAMS_PRELOAD=LIBCHECK).
set -euo pipefail

if (( $# != 4 )); then
  echo "usage: $0 NAME LIBMIMALLOC LIBCHECK SOURCE-DIR" >&2
  exit 2
fi
name=$1 lib=$2 checklib=$3 srcdir=$4
for f in "$lib" "$checklib"; do
  [[ $f == /* && -f $f ]] || { echo "not an absolute path to a file: $f" >&2; exit 2; }
done
preload=${MI_PROGRAMS_PRELOAD-"$lib $checklib"}

# mimalloc options from the caller's environment would change our output (verbose, stats)
for var in $(compgen -e); do
  if [[ $var == MIMALLOC_* ]]; then unset "$var"; fi
done
unset MI_PRELOAD_CHECK_OUT LD_PRELOAD
export LC_ALL=C TZ=UTC

log() { echo "[program-$name] $*"; }
skip() { log "SKIP: $*"; exit 77; }

failures=0
fail() { log "FAIL: $*"; failures=$((failures + 1)); }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mi-program-$name.XXXXXX")
server_pid=""
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM     # so the EXIT trap runs (and kills a server) on a ctest timeout too
log "temp dir $tmp, LD_PRELOAD=\"$preload\""

# run MODE TAG CMD...: MODE plain or preload; stdout, stderr and exit status go to
# $tmp/TAG.MODE.{out,err,rc}; the preloaded run appends check lines to $tmp/TAG.check
run() {
  local mode=$1 tag=$2; shift 2
  local base=$tmp/$tag.$mode rc=0
  log "$mode: $*"
  if [[ $mode == preload ]]; then
    env LD_PRELOAD="$preload" MI_PRELOAD_CHECK_OUT="$tmp/$tag.check" "$@" > "$base.out" 2> "$base.err" || rc=$?
  else
    "$@" > "$base.out" 2> "$base.err" || rc=$?
  fi
  echo "$rc" > "$base.rc"
}

# compare TAG WHAT...: WHAT in out, err, rc; the plain and preloaded runs must agree
compare() {
  local tag=$1 what; shift
  for what in "$@"; do
    if cmp -s "$tmp/$tag.plain.$what" "$tmp/$tag.preload.$what"; then
      log "same $what ($tag): $(wc -c < "$tmp/$tag.plain.$what") bytes"
    else
      fail "$what differs with the preload ($tag):"
      diff "$tmp/$tag.plain.$what" "$tmp/$tag.preload.$what" | head -20 || true
    fi
  done
}

# expect_rc TAG MODE N: the exit status of a run
expect_rc() {
  local got
  got=$(cat "$tmp/$1.$2.rc")
  [[ $got == "$3" ]] || { fail "$1 ($2) exited with $got, expected $3"; tail -20 "$tmp/$1.$2.err" || true; }
}

# awk prologue: the key=value fields of a check line into f[]
fields='{ delete f; for (i = 1; i <= NF; i++) { eq = index($i, "="); if (eq > 0) f[substr($i, 1, eq - 1)] = substr($i, eq + 1) } }'

# check_lines TAG COMM...: the rule in the header
check_lines() {
  local tag=$1 file=$tmp/$1.check comm; shift
  if [[ ! -s $file ]]; then
    fail "no check line in $tag: the check library did not run at exit"
    return
  fi
  log "check lines ($tag): $(wc -l < "$file") processes: $(awk "$fields"' { c = f["comm"]; n[c]++; l = f["live"] + 0
      if (!(c in lo) || l < lo[c]) lo[c] = l; if (l > hi[c]) hi[c] = l }
    END { for (c in n) printf "%s x%d (live %d..%d); ", c, n[c], lo[c], hi[c] }' "$file")"
  if grep -v ' result=ok$' "$file" > "$tmp/bad"; then
    fail "processes not served by our allocator ($tag):"
    head -5 "$tmp/bad"
  fi
  for comm in "$@"; do
    # a line of that process with every check ok and a live-block count > 0
    if ! awk -v c="$comm" "$fields"' f["comm"] == c && f["result"] == "ok" && f["live"] + 0 > 0 { found = 1 } END { exit !found }' "$file"; then
      fail "no ok line with live > 0 for process '$comm' ($tag)"
      grep " comm=$comm " "$file" | head -3 || true
    fi
  done
}

have() { command -v "$1" > /dev/null 2>&1; }

case $name in
python)
  py=/usr/bin/python3     # the Debian interpreter; python3 on PATH may be a shell shim
  [[ -x $py ]] || skip "$py not installed"
  cd "$tmp"
  run plain workload "$py" "$srcdir/workload.py"
  run preload workload "$py" "$srcdir/workload.py"
  compare workload rc out err
  expect_rc workload plain 0
  check_lines workload python3

  # the verbose option's start-up line: the library itself says it is active
  run preload verbose env MIMALLOC_VERBOSE=1 "$py" -c pass
  grep -q "^mimalloc: allocator active: version [0-9]*[.][0-9]*[.][0-9]* (independent implementation of the mimalloc 2.4.1 API" "$tmp/verbose.preload.err" \
    || fail "no 'allocator active' line with MIMALLOC_VERBOSE=1"
  check_lines verbose python3

  # a few modules of CPython's own test suite (Debian: libpython3.11-testsuite); they print
  # timings, so only the exit status is compared
  modules=(test_dict test_json test_re test_threading test_list test_string test_set test_bytes
           test_collections test_gc test_unicode)
  if "$py" -m test --help > /dev/null 2>&1 \
     && "$py" -c "import importlib, sys; [importlib.import_module('test.' + m) for m in sys.argv[1:]]" "${modules[@]}" > /dev/null 2>&1; then
    mkdir -p "$tmp/regrtest"
    export TMPDIR=$tmp/regrtest     # regrtest's work directories
    # the preloaded run must pass; the run without the preload (as long again) only runs to
    # tell, when it does not, whether the modules fail without us too
    run preload testsuite "$py" -m test "${modules[@]}"
    if [[ $(cat "$tmp/testsuite.preload.rc") != 0 ]]; then
      run plain testsuite "$py" -m test "${modules[@]}"
      log "without the preload the test suite exited with $(cat "$tmp/testsuite.plain.rc")"
    fi
    unset TMPDIR
    expect_rc testsuite preload 0
    grep -h "Total duration" "$tmp"/testsuite.*.out | sed "s/^/[program-$name] test suite: /" || true
    check_lines testsuite python3
  else
    log "CPython's test suite is not installed (libpython3.11-testsuite): only the workload ran"
  fi
  ;;

sort)
  have sort || skip "sort not installed"
  # 1.5 million deterministic lines "number word number" (Park-Miller LCG: exact in awk's doubles)
  log "generating input"
  awk 'BEGIN { a = "abcdefghijklmnopqrstuvwxyz"; x = 12345
    for (i = 0; i < 1500000; i++) {
      x = (x * 16807) % 2147483647; n = x % 100000
      x = (x * 16807) % 2147483647; len = 3 + x % 10; y = x; w = ""
      for (j = 0; j < len; j++) { y = (y * 16807) % 2147483647; w = w substr(a, 1 + y % 26, 1) }
      print n " " w " " (i % 977)
    } }' > "$tmp/input.txt"
  log "input: $(wc -l < "$tmp/input.txt") lines, $(wc -c < "$tmp/input.txt") bytes"
  mkdir -p "$tmp/sorttmp"
  variant=0
  # plain, numeric, unique on a key, a small buffer forcing temporary files and merges with
  # two threads, and a UTF-8 locale (strcoll and key transformations)
  for args in "" "-n" "-u -k2,2" "-S 4M --parallel=2 -T $tmp/sorttmp -k2,2 -k1,1n" "LOCALE -f -k2,2"; do
    variant=$((variant + 1))
    cmd=(sort)
    if [[ $args == LOCALE* ]]; then cmd=(env LC_ALL=C.UTF-8 sort); args=${args#LOCALE }; fi
    # shellcheck disable=SC2206  # the words of args are the options
    cmd+=($args "$tmp/input.txt")
    run plain "sort$variant" "${cmd[@]}"
    run preload "sort$variant" "${cmd[@]}"
    compare "sort$variant" rc out err
    expect_rc "sort$variant" plain 0
    log "sort $args: output sha256 $(sha256sum < "$tmp/sort$variant.preload.out" | cut -c1-16)"
    check_lines "sort$variant" sort
    rm -f "$tmp/sort$variant".*.out
  done
  ;;

git)
  have git || skip "git not installed"
  mkdir "$tmp/plain" "$tmp/preload"
  # the whole session (bash and its helpers too) runs under the preload; git's own
  # subprocesses (gc runs pack-objects, repack, ...) inherit it
  run plain git bash "$srcdir/git-workload.sh" "$tmp/plain"
  run preload git bash "$srcdir/git-workload.sh" "$tmp/preload"
  compare git rc out err
  expect_rc git plain 0
  check_lines git git bash
  ;;

gxx)
  have g++ || skip "g++ not installed"
  flags=(-std=c++17 -O2 -frandom-seed=mi-preload -Wall -Wextra)
  for mode in plain preload; do
    # same relative file names and directory depth: the object file records the source name
    mkdir "$tmp/$mode"
    cp "$srcdir/gxx-workload.cpp" "$tmp/$mode/"
    cd "$tmp/$mode"
    run "$mode" compile g++ "${flags[@]}" -c gxx-workload.cpp -o gxx-workload.o
    run "$mode" link g++ gxx-workload.o -o gxx-workload
    cd "$tmp"
  done
  compare compile rc out err
  compare link rc out err
  expect_rc compile plain 0
  expect_rc link plain 0
  if cmp "$tmp/plain/gxx-workload.o" "$tmp/preload/gxx-workload.o"; then
    log "object files identical ($(wc -c < "$tmp/plain/gxx-workload.o") bytes)"
  else
    fail "the object file compiled under the preload differs"
  fi
  if cmp "$tmp/plain/gxx-workload" "$tmp/preload/gxx-workload"; then
    log "linked programs identical"
  else
    fail "the program linked under the preload differs"
  fi
  # the compiler proper, the assembler and the linker are the processes we care about
  check_lines compile cc1plus as
  check_lines link ld
  run plain prog "$tmp/plain/gxx-workload"
  run preload prog "$tmp/plain/gxx-workload"
  compare prog rc out err
  expect_rc prog plain 0
  check_lines prog gxx-workload
  ;;

redis)
  for p in redis-server redis-cli redis-benchmark; do have "$p" || skip "$p not installed (Debian: redis-server, redis-tools)"; done
  # redis_session MODE: server and clients in MODE; deterministic replies go to
  # $tmp/redis.MODE.out, the server's exit status to $tmp/redis.MODE.rc
  redis_session() {
    local mode=$1 port="" attempt i
    local -a pre=()
    [[ $mode == preload ]] && pre=(env LD_PRELOAD="$preload" MI_PRELOAD_CHECK_OUT="$tmp/redis.check")
    mkdir -p "$tmp/redis-$mode"
    for attempt in 1 2 3 4 5; do
      # a loopback port nobody listens on (bash's /dev/tcp connects only if someone does)
      port=$(( 20000 + (RANDOM * 7 + attempt) % 40000 ))
      if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
      log "$mode: redis-server on 127.0.0.1:$port"
      "${pre[@]}" redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
        --dir "$tmp/redis-$mode" --daemonize no --logfile "" --enable-debug-command local > "$tmp/redis.$mode.log" 2>&1 &
      server_pid=$!
      for i in $(seq 1 100); do
        if [[ $(redis-cli -h 127.0.0.1 -p "$port" PING 2>/dev/null) == PONG ]]; then break; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
      done
      if kill -0 "$server_pid" 2>/dev/null; then break; fi
      wait "$server_pid" || true     # it died (port taken in between?): try another port
      server_pid=""
    done
    [[ -n $server_pid ]] || { fail "redis-server did not start ($mode)"; cat "$tmp/redis.$mode.log"; return; }
    # a failing client is recorded in the compared output rather than ending the script
    cli() { "${pre[@]}" redis-cli -h 127.0.0.1 -p "$port" "$@" || echo "redis-cli $1 failed: $?"; }
    {
      cli PING
      log "$mode: redis-benchmark" >&2
      "${pre[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -n 20000 -c 10 -q -t set,get,lpush,lpop,incr -P 8 \
        > "$tmp/bench.$mode" 2>&1 && echo "benchmark rc=0" || echo "benchmark rc=$?"
      # what the benchmark left behind is deterministic: 20000 INCRs, as many LPUSHes as LPOPs
      cli DBSIZE
      cli GET "counter:__rand_int__"
      cli STRLEN "key:__rand_int__"
      cli LLEN mylist
      cli RPUSH check a b c d e
      cli LRANGE check 0 -1
      cli SET big "$(printf 'x%.0s' $(seq 1 5000))"
      cli STRLEN big
      # a deterministic bulk load (key:0..N-1), its digest, then a flush that frees the whole
      # dataset in redis's lazy-free thread (frees from another thread than the allocating one)
      cli DEBUG POPULATE 200000 key 64
      cli DBSIZE
      cli DEBUG DIGEST
      cli INFO memory | tr -d '\r' > "$tmp/info.$mode"
      cli FLUSHALL ASYNC
      cli DEBUG POPULATE 50000 other 16
      cli DBSIZE
      cli DEBUG DIGEST
    } > "$tmp/redis.$mode.out"
    log "$mode: INFO memory: $(grep -E '^(used_memory|mem_allocator|allocator_allocated|allocator_active|allocator_resident):' "$tmp/info.$mode" | tr '\n' ' ')"
    tr '\r' '\n' < "$tmp/bench.$mode" | grep 'requests per second' | grep -v 'rps=' | sed "s/^ */[program-$name] $mode: /" || true
    cli SHUTDOWN NOSAVE > /dev/null 2>&1 || true    # no reply: the server exits
    for i in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$server_pid" 2>/dev/null; then
      fail "redis-server ($mode) still running 10 s after SHUTDOWN NOSAVE: killed"
      kill -9 "$server_pid" 2>/dev/null || true
    fi
    local rc=0
    wait "$server_pid" || rc=$?
    server_pid=""
    echo "$rc" > "$tmp/redis.$mode.rc"
    log "$mode: redis-server exited with $rc"
  }
  redis_session plain
  redis_session preload
  # the server's own output has timestamps and pids: the replies and the exit status are compared
  compare redis rc out
  log "replies: $(tr '\n' ' ' < "$tmp/redis.preload.out" | cut -c1-300)"
  expect_rc redis plain 0
  check_lines redis redis-server
  # Debian links redis-server to libjemalloc.so.2 but calls malloc/calloc/realloc/free and
  # malloc_usable_size by their plain names, so under the preload they bind to us: INFO's
  # used_memory (redis's own count of usable sizes) is about the same, while jemalloc's own
  # allocator_allocated drops to what jemalloc allocated for itself (mallctl, stats).
  # INFO was taken with the 200000 keys loaded
  info_field() { sed -n "s/^$1:\([0-9]*\)\$/\1/p" "$tmp/info.$2"; }
  used=$(info_field used_memory preload) jemalloc=$(info_field allocator_allocated preload)
  if [[ -n $used && -n $jemalloc ]] && (( jemalloc * 4 > used )); then
    fail "under the preload jemalloc still allocated $jemalloc bytes of redis's $used"
  fi
  ;;

java)
  have java || skip "java not installed"
  # the JVM prints its version on stderr
  run plain java java -version
  run preload java java -version
  compare java rc out err
  expect_rc java plain 0
  log "java -version: $(head -1 "$tmp/java.plain.err")"
  check_lines java java
  ;;

*)
  echo "unknown program: $name" >&2
  exit 2
  ;;
esac

if (( failures > 0 )); then
  log "$failures check(s) failed"
  exit 1
fi
log "passed"
