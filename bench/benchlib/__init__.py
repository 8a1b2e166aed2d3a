# SPDX-License-Identifier: MIT
"""The benchmark harness behind bench/bench.py (python3 standard library only).

Layers, each importing only from the ones above it (no cycles):
  common                          paths, messages, running commands, clean environment, machine
  debian, ours, origin, launcher, the shared helpers: Debian packages (dpkg/apt-get), our
  results, crates, svgchart       library, which object served malloc, the wait4 launcher,
                                  result files, crates.io sources, the hand-written SVG chart
  peers, real, suite_report       the peer allocators; the real-program workloads; the suite's
                                  summary and report
  micro, mem, chart, suite, ab,   the subcommands, each with main(argv) -> exit status; one may
  real, peers, scenarios          use one listed before it (chart draws mem's SVG; suite, chart;
                                  scenarios runs its programs with suite's one_run)
chart_mpl is a script of its own, run with Debian's python3 for matplotlib.
"""
