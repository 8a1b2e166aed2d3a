# SPDX-License-Identifier: MIT
"""A/B comparison of allocator builds on one program (python3 standard library only).

  bench/bench.py ab [--reps N] [--timeout S] LIB_A LIB_B [LIB ...] -- PROGRAM [ARGS ...]

Runs PROGRAM under LD_PRELOAD=LIB for every LIB ("glibc" for none), N times each (default 7),
interleaved in a rotated order so that slow phases of a noisy machine hit every library alike,
in an environment without MIMALLOC_*, MALLOC_* or GLIBC_TUNABLES (add settings with
env VAR=... in front of PROGRAM, e.g. `-- /usr/bin/env MIMALLOC_PURGE_DELAY=0 ./prog`; the
preload then applies to env and what it runs). Each run is started by the suite's small C
launcher (benchlib/launcher.py), so the figures are the program's own: wall time, CPU time (user +
system), peak RSS and minor page faults. Prints per library the minimum and median wall time,
the medians of the rest, and the ratio of its median wall time to the first library's.

It is how the before/after figures of the optimisation notes are measured: build the old and
the new library in two directories and compare them, e.g.
  bench/bench.py ab old/build/libmimalloc.so build/libmimalloc.so -- /tmp/rptest
Timing is never asserted anywhere; medians of interleaved runs are the figure to quote.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

from benchlib import launcher
from benchlib.common import clean_env, parse_with_command


def parse_args(argv):
    if "--" not in argv and not ("-h" in argv or "--help" in argv):
        sys.exit("usage: bench/bench.py ab [--reps N] [--timeout S] LIB_A LIB_B [LIB ...] -- PROGRAM [ARGS ...]")
    p = argparse.ArgumentParser(prog="bench.py ab", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reps", type=int, default=7, help="runs per library (default 7)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run (default 600)")
    p.add_argument("libs", nargs="+", help='shared objects to preload ("glibc": none)')
    args = parse_with_command(p, argv)
    if args.reps < 1:
        p.error("--reps must be at least 1")
    for lib in args.libs:
        if lib != "glibc" and not os.path.isfile(lib):
            p.error("no such library: %s" % lib)
    return args


def main(argv):
    args = parse_args(argv)
    cc = os.environ.get("CC", "cc")
    tmp = tempfile.mkdtemp(prefix="alloc-ab-")
    try:
        launch_exe = launcher.build(cc, tmp)
        runs = {lib: [] for lib in args.libs}
        n = len(args.libs)
        for rep in range(args.reps):
            for k in range(n):
                lib = args.libs[(rep + k) % n]
                env = clean_env()
                if lib != "glibc":
                    env["LD_PRELOAD"] = os.path.abspath(lib)
                extra = {}
                wall, problem, rss, _out, err = launcher.run_program(
                    launch_exe, args.command[0], args.command[1:], env, args.timeout, tmp, extra)
                if problem is not None:
                    sys.exit("%s under %s: %s\n%s" % (" ".join(args.command), lib, problem, err.strip()[-2000:]))
                runs[lib].append(dict(wall=wall, rss=rss, **extra))
                sys.stderr.write("\r[%d/%d] %-60s %.3f s" % (rep * n + k + 1, args.reps * n, lib[-60:], wall))
                sys.stderr.flush()
        sys.stderr.write("\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    base = med(r["wall"] for r in runs[args.libs[0]])
    print("%s, %d interleaved run(s) per library" % (" ".join(args.command), args.reps))
    print()
    print("| library | wall min s | wall median s | / first | cpu median s | peak RSS median MiB | minor faults median |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for lib in args.libs:
        rs = runs[lib]
        w = med(r["wall"] for r in rs)
        print("| %s | %.3f | %.3f | %.2f | %.3f | %.1f | %.0f |" % (
            lib, min(r["wall"] for r in rs), w, w / base if base > 0 else 0.0,
            med(r["cpu_s"] for r in rs), med(r["rss"] for r in rs) / 1024.0, med(r["minflt"] for r in rs)))
    return 0

