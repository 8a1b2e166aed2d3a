#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Start-up cost of a preloaded allocator: run a short program (default /bin/true) with each
library in LD_PRELOAD (and once without any), interleaved, and print the median wall time of
each and its ratio to the first library.

  python3 bench/startup.py [--runs 300] [--program /bin/true] LIB [LIB ...]

Each round runs every variant once, in an order that rotates from round to round, so a slow
stretch of the machine falls on all of them alike. Wall time is from posix_spawn to wait4; CPU
time is the child's user + system time (wait4), which a busy machine disturbs less."""
import argparse, os, statistics, sys, time

def run_once(program, env):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(program[0], program, env)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    if status != 0:
        sys.exit(f"{program[0]} failed (status {status}) with LD_PRELOAD={env.get('LD_PRELOAD', '')}")
    return (t1 - t0) / 1000.0, (ru.ru_utime + ru.ru_stime) * 1e6

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
    cpu = {name: [] for name, _ in variants}
    for name, env in variants:   # warm the page cache
        for _ in range(5): run_once([args.program], env)
    for r in range(args.runs):
        k = r % len(variants)
        for name, env in variants[k:] + variants[:k]:
            wall, c = run_once([args.program], env)
            times[name].append(wall)
            cpu[name].append(c)
    ref, cref = statistics.median(times[variants[0][0]]), statistics.median(cpu[variants[0][0]])
    print(f"{args.program}, {args.runs} runs each, interleaved; medians in us (wall: with quartiles)")
    print(f"  {'wall':>8}  {'quartiles':>17}  {'ratio':>6}  {'cpu':>7}  {'ratio':>6}")
    for name, _ in variants:
        t = sorted(times[name])
        med, cmed = statistics.median(t), statistics.median(cpu[name])
        q1, q3 = t[len(t) // 4], t[(3 * len(t)) // 4]
        print(f"  {med:8.1f}  [{q1:7.1f} {q3:7.1f}]  {med / ref:5.3f}x  {cmed:7.1f}  {cmed / cref:5.3f}x  {name}")

if __name__ == "__main__":
    main()
