#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Start-up cost of a preloaded allocator: run a short program (default /bin/true) with each
library in LD_PRELOAD (and once without any), interleaved, and print the median wall time of
each and its ratio to the first library.

  python3 bench/startup.py [--runs 300] [--program /bin/true] LIB [LIB ...]

Each round runs every variant once, in an order that rotates from round to round, so a slow
stretch of the machine falls on all of them alike. Time is from posix_spawn to waitpid."""
import argparse, os, statistics, sys, time

def run_once(program, env):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(program[0], program, env)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter_ns()
    if status != 0:
        sys.exit(f"{program[0]} failed (status {status}) with LD_PRELOAD={env.get('LD_PRELOAD', '')}")
    return (t1 - t0) / 1000.0

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--program", default="/bin/true")
    ap.add_argument("libs", nargs="+", help="shared libraries to preload, one variant each")
    args = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_") and k != "LD_PRELOAD"}
    variants = [(lib, dict(base, LD_PRELOAD=os.path.abspath(lib))) for lib in args.libs]
    variants.append(("(no preload)", base))
    times = {name: [] for name, _ in variants}
    for name, env in variants:   # warm the page cache
        for _ in range(5): run_once([args.program], env)
    for r in range(args.runs):
        k = r % len(variants)
        for name, env in variants[k:] + variants[:k]:
            times[name].append(run_once([args.program], env))
    ref = statistics.median(times[variants[0][0]])
    print(f"{args.program}, {args.runs} runs each, interleaved; median and quartiles of wall time (us)")
    for name, _ in variants:
        t = sorted(times[name])
        med = statistics.median(t)
        q1, q3 = t[len(t) // 4], t[(3 * len(t)) // 4]
        print(f"  {med:8.1f}  [{q1:7.1f} {q3:7.1f}]  {med / ref:5.3f}x  {name}")

if __name__ == "__main__":
    main()
