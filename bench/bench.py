#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The allocator benchmarks: one entry point, one subcommand per kind of measurement.

  python3 bench/bench.py SUBCOMMAND [options]      (python3 standard library only)
  python3 bench/bench.py SUBCOMMAND --help         the options of one subcommand

See bench/README.md; the code is in bench/benchlib/ (its __init__.py gives the layout).
"""
import importlib
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# name -> (module in benchlib, one line); the module's main(argv) returns the exit status
SUBCOMMANDS = {
    "suite": ("suite", "every workload under every allocator: report, chart, raw runs"),
    "micro": ("micro", "micro-benchmarks (throughput table; --callgrind: instructions per call)"),
    "mem": ("mem", "RSS over time of a server-like program (bench-mem) under four allocators"),
    "scenarios": ("scenarios", "memory at named moments (big values, remote frees, drift) and handoff"),
    "ab": ("ab", "A/B: two or more builds (or glibc) on one program, interleaved runs"),
    "real": ("real", "the real-program workloads (redis, python, g++, sqlite) on their own"),
    "chart": ("chart", "draw the chart of a result file (.json.gz) again"),
    "peers": ("peers", "list the peer allocators (installing or building what is missing)"),
    "profcmp": ("profcmp", "the heap profiler's sites against jemalloc's and the exact ones"),
}


def usage(out):
    out.write(__doc__.lstrip() + "\nsubcommands:\n")
    for name, (_, line) in SUBCOMMANDS.items():
        out.write("  %-9s %s\n" % (name, line))


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        usage(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] not in SUBCOMMANDS:
        sys.stderr.write("bench.py: unknown subcommand %r\n\n" % argv[0])
        usage(sys.stderr)
        return 2
    module = importlib.import_module("benchlib." + SUBCOMMANDS[argv[0]][0])
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
