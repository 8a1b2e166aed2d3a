# SPDX-License-Identifier: MIT
"""bench.py chart: the chart of a result file, again (e.g. after a change to the chart's look).

  bench/bench.py chart RESULT.json.gz [OUT_STEM]

A suite result gives OUT_STEM.png (time and peak RSS relative to ours, drawn by chart_mpl.py
with Debian's python3 and matplotlib); a mem result (mem-*.json.gz) gives OUT_STEM.svg (RSS
over time, hand-written SVG, from the median runs as stored). OUT_STEM defaults to the result
file's own stem, so the chart beside it is replaced.
"""
import argparse
import os
import subprocess

from benchlib import debian, mem, results
from benchlib.common import LIB_DIR, note

PYTHON = "/usr/bin/python3"  # Debian's, for Debian's python3-matplotlib


def render_png(json_path, stem_path, no_install=False):
    """Draw stem_path.png from a suite result with matplotlib; False (with a message) when it
    cannot: a missing chart never fails a run."""
    if not os.path.exists(PYTHON):
        note("SKIP chart: no %s" % PYTHON)
        return False

    def has_mpl():
        return subprocess.run([PYTHON, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    if not has_mpl():
        note("chart: python3-matplotlib missing for %s" % PYTHON)
        debian.ensure(["python3-matplotlib"], no_install)
        if not has_mpl():
            note("SKIP chart: matplotlib is not available to %s" % PYTHON)
            return False
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    try:
        r = subprocess.run([PYTHON, os.path.join(LIB_DIR, "chart_mpl.py"), json_path, stem_path],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=300)
    except subprocess.TimeoutExpired:
        note("SKIP chart: chart_mpl.py took too long")
        return False
    if r.returncode != 0:
        note("SKIP chart: chart_mpl.py failed:\n" + r.stderr[-2000:])
        return False
    return True


def main(argv):
    p = argparse.ArgumentParser(prog="bench.py chart", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("result", help="a suite or mem result: .json.gz (or an older run's .json)")
    p.add_argument("stem", nargs="?", default=None,
                   help="output path without extension (default: the result's own stem)")
    p.add_argument("--no-install", action="store_true",
                   help="do not apt-get install python3-matplotlib when it is missing")
    args = p.parse_args(argv)
    if not os.path.isfile(args.result):
        p.error("no such file: %s" % args.result)
    stem = args.stem or results.strip_json(args.result)
    data = results.read_json(args.result)
    if "median_run_rss_mib" in data:  # a mem result
        results.write_text(stem + ".svg", mem.chart_from_data(data))
        note("wrote %s.svg" % stem)
        return 0
    if not render_png(os.path.abspath(args.result), stem, args.no_install):
        return 1
    note("wrote %s.png" % stem)
    return 0
