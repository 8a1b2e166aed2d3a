# SPDX-License-Identifier: MIT
"""Memory use over time of a server-like program under several allocators (python3 standard
library only).

  bench/bench.py mem [--build-dir DIR] [--reps N] [--quick] [--out DIR] [--interval-ms MS]

Builds bench/bench-mem.c with `cc -std=c11 -O2`, then runs it (`-v`, or `-q -v` with --quick)
under each allocator, the repetitions interleaved (A B C D A B C D ...):

  ours              LD_PRELOAD=<build-dir>/libmimalloc.so (built with cmake if missing)
  glibc             nothing preloaded
  jemalloc          LD_PRELOAD of Debian's libjemalloc2 (path from `dpkg -L`)
  mimalloc 2.0.9    LD_PRELOAD of Debian's libmimalloc2.0 (path from `dpkg -L`)

A missing peer is installed with apt-get when running as root, otherwise skipped with a message.
While a run goes on, this script reads /proc/<pid>/statm (RSS) and /proc/<pid>/status (VmHWM)
every few milliseconds from outside, the same way for every allocator. Each run's `alloc_from=`
must name the intended object: a peer that fails or is not the one loaded is reported and left
out; if our library's run fails or was not really active, the script exits non-zero.

Output: a markdown table on stdout; the same table, the raw data (every run, gzip-compressed
JSON) and an SVG chart (RSS over time, one line per allocator, from each allocator's median run)
in --out (default bench/results/) as mem-<date>-<host>[-quick].{md,json.gz,svg}.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import debian, ours, origin, results, svgchart
from benchlib.common import BENCH_DIR, RESULTS_DIR, add_build_dir_option, clean_env, loadavg, \
    machine_info, note, parse_result, run
from benchlib.svgchart import thin

CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra"]
LIBS = ["-ldl", "-lpthread"]
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024.0 * 1024.0
COLORS = {"ours": "#d62728", "glibc": "#1f77b4", "jemalloc": "#2ca02c", "mimalloc": "#9467bd"}
# name, Debian package, file name pattern of the object to preload
PEERS = (("jemalloc", "libjemalloc2", r"libjemalloc\.so\.2.*"),
         ("mimalloc", "libmimalloc2.0", r"libmimalloc\.so\.2.*"))


# ---------------------------------------------------------------------------------------------
# allocators

def peer(name, package, pattern):
    """An allocator configuration for a Debian peer, installing it if needed, or None."""
    if debian.find_lib(package, pattern) is None:
        note("%s (%s) missing: installing" % (name, package))
        debian.ensure([package])
    lib = debian.find_lib(package, pattern)
    if lib is None:
        note("SKIP %s: package %s is not installed" % (name, package))
        return None
    if not ours.exports_malloc(lib):
        note("SKIP %s: %s does not export malloc" % (name, lib))
        return None
    version = debian.version(package)
    label = "%s %s" % (name, version) if version else name
    return dict(key=name, label=label, preload=lib, expect=lib)


# ---------------------------------------------------------------------------------------------
# one run, sampled from outside

def read_hwm(pid):
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def sampled_run(cfg, exe, argv, interval, timeout):
    """Run exe under cfg's allocator; returns a dict with the RESULT fields, the samples
    [(seconds since start, RSS bytes)], the peak and the phases, or raises RuntimeError."""
    env = clean_env()
    if cfg["preload"]:
        env["LD_PRELOAD"] = cfg["preload"]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([exe] + argv, env=env, stdout=out, stderr=err)
        # Popen returns once exec succeeded, so /proc/<pid> is already the benchmark
        samples, hwm, status, killed = [], 0, None, False
        try:
            fd = os.open("/proc/%d/statm" % proc.pid, os.O_RDONLY)
        except OSError:
            fd = None
        k, nxt = 0, t0
        try:
            while True:
                pid, st, _ = os.wait4(proc.pid, os.WNOHANG)
                if pid != 0:
                    status = st
                    break
                now = time.monotonic()
                if fd is not None:
                    try:
                        rss = int(os.pread(fd, 200, 0).split()[1]) * PAGE
                    except (OSError, ValueError, IndexError):
                        rss = 0
                    if rss > 0:
                        samples.append((now - t0, rss))
                if k % 2 == 0:  # /proc/<pid>/status is dearer; every other sample is plenty
                    hwm = max(hwm, read_hwm(proc.pid))
                k += 1
                if now - t0 > timeout and not killed:
                    proc.kill()
                    killed = True
                nxt = max(nxt + interval, now + interval / 4)
                time.sleep(max(0.0, nxt - time.monotonic()))
        finally:
            if fd is not None:
                os.close(fd)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    res = parse_result(stdout)
    if killed:
        raise RuntimeError("%s: killed after %d s" % (cfg["label"], timeout))
    if proc.returncode != 0 or res is None:
        how = ("killed by signal %d" % -proc.returncode if proc.returncode < 0
               else "exit %d" % proc.returncode)
        raise RuntimeError("%s: %s %s failed (%s)\n%s%s" % (
            cfg["label"], exe, " ".join(argv), how, stdout[-2000:], stderr[-2000:]))
    origin.check_result(cfg["label"], cfg["expect"], res)
    phases = []
    for line in stderr.splitlines():
        if line.startswith("PHASE "):
            f = dict(x.split("=", 1) for x in line.split()[2:] if "=" in x)
            phases.append(dict(start=float(f["t_start"]) - t0, work_end=float(f["t_work_end"]) - t0,
                               live_mib=float(f["live_mib"]), gap_s=float(f["gap_ms"]) / 1000))
    if len(samples) < 2:
        raise RuntimeError("%s: too few RSS samples (%d)" % (cfg["label"], len(samples)))
    return dict(result=res, samples=samples, wall=wall, hwm=hwm, phases=phases)


def summarize(run):
    """Average RSS (time-weighted), peak and end-of-run idle RSS of one run, in MiB."""
    s = run["samples"]
    area = sum((t1 - t0) * (r0 + r1) / 2 for (t0, r0), (t1, r1) in zip(s, s[1:]))
    span = s[-1][0] - s[0][0]
    avg = area / span if span > 0 else s[0][1]
    peak = max(max(r for _, r in s), run["hwm"])
    # idle RSS at the end: mean of the samples in the second half of the last idle gap
    end = None
    if run["phases"]:
        last = run["phases"][-1]
        lo, hi = last["work_end"] + last["gap_s"] / 2, last["work_end"] + last["gap_s"]
        tail = [r for t, r in s if lo <= t <= hi]
        end = statistics.mean(tail) / MIB if tail else None
    res = run["result"]
    return dict(elapsed_s=float(res["elapsed_s"]), work_s=float(res["work_s"]),
                wall_s=run["wall"], avg_rss_mib=avg / MIB, peak_rss_mib=peak / MIB,
                sampled_peak_mib=max(r for _, r in s) / MIB, end_rss_mib=end,
                samples=len(s), alloc_from=res.get("alloc_from"),
                mi_version=int(res.get("mi_version", "0")))


# ---------------------------------------------------------------------------------------------

def fmt(v, digits=1):
    return "n/a" if v is None else "%.*f" % (digits, v)


def ratio(runs, ref_runs, key):
    """Median over the repetitions of this run's value / ours in the same repetition."""
    pairs = [(a[key], b[key]) for a, b in zip(runs, ref_runs)
             if a[key] is not None and b[key] is not None and b[key] > 0]
    return statistics.median(a / b for a, b in pairs) if pairs else None


def median_of(runs, key):
    vals = [r[key] for r in runs if r[key] is not None]
    return statistics.median(vals) if vals else None


def main(argv):
    p = argparse.ArgumentParser(prog="bench.py mem", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    add_build_dir_option(p)
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="bench-mem -q, one repetition")
    p.add_argument("--out", default=RESULTS_DIR,
                   help="where the .md, .json.gz and .svg go (default: bench/results/)")
    p.add_argument("--interval-ms", type=float, default=5.0, help="RSS sampling period (5 ms)")
    args = p.parse_args(argv)
    args.argv = list(argv)
    if args.reps is not None and args.reps < 1:
        p.error("--reps must be at least 1")
    reps = args.reps or (1 if args.quick else 3)
    t_begin = time.monotonic()
    try:
        report = measure(args, reps)
    except RuntimeError as e:
        sys.exit("error: %s" % e)
    note("total time: %.0f s" % (time.monotonic() - t_begin))
    return 0


def measure(args, reps):
    cc = os.environ.get("CC", "cc")
    tmp = tempfile.mkdtemp(prefix="mi-bench-mem-")
    try:
        exe = os.path.join(tmp, "bench-mem")
        cmd = [cc] + CFLAGS + ["-o", exe, os.path.join(BENCH_DIR, "bench-mem.c")] + LIBS
        note("building: " + " ".join(cmd))
        r = run(cmd)
        if r.returncode != 0:
            raise RuntimeError("cannot build bench-mem:\n" + r.stderr)
        if r.stderr.strip():
            note(r.stderr)
        return measure_with(args, reps, exe, cc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure_with(args, reps, exe, cc):
    lib = ours.preloadable(os.path.abspath(args.build_dir))
    configs = [dict(key="ours", label="ours", preload=lib, expect=lib),
               dict(key="glibc", label="glibc", preload=None, expect="libc")]
    for name, package, pattern in PEERS:
        c = peer(name, package, pattern)
        if c:
            configs.append(c)
    argv = ["-v"] + (["-q"] if args.quick else [])
    timeout = 60 if args.quick else 300
    interval = args.interval_ms / 1000.0
    load_before = loadavg()
    t_begin = time.monotonic()
    raw = {c["key"]: [] for c in configs}
    failed = {}
    for rep in range(reps):
        for cfg in configs:  # interleaved: A B C D A B C D ...
            if cfg["key"] in failed:
                continue
            try:
                run = sampled_run(cfg, exe, argv, interval, timeout)
            except RuntimeError as e:
                if cfg["key"] == "ours":
                    raise
                note("FAILED %s (left out of the table): %s" % (cfg["label"], e))
                failed[cfg["key"]] = str(e).splitlines()[0]
                continue
            run["summary"] = summarize(run)
            raw[cfg["key"]].append(run)
            s = run["summary"]
            note("rep %d/%d %-16s %6.2f s (work %5.2f s)  avg RSS %7.1f MiB  peak %7.1f MiB  "
                 "end %6s MiB  (%d samples)" % (rep + 1, reps, cfg["label"], s["elapsed_s"],
                                                 s["work_s"], s["avg_rss_mib"], s["peak_rss_mib"],
                                                 fmt(s["end_rss_mib"]), s["samples"]))
    run_seconds = time.monotonic() - t_begin
    configs = [c for c in configs if c["key"] not in failed]

    ours_runs = [r["summary"] for r in raw["ours"]]
    rows = []
    for cfg in configs:
        runs = [r["summary"] for r in raw[cfg["key"]]]
        row = dict(label=cfg["label"], key=cfg["key"], preload=cfg["preload"],
                   alloc_from=runs[0]["alloc_from"], mi_version=runs[0]["mi_version"])
        for key in ("elapsed_s", "work_s", "avg_rss_mib", "peak_rss_mib", "end_rss_mib"):
            row[key] = median_of(runs, key)
            row[key + "_vs_ours"] = ratio(runs, ours_runs, key)
        rows.append(row)

    # chart: each allocator's run with the median average RSS
    series, live = [], None
    for cfg in configs:
        runs = sorted(raw[cfg["key"]], key=lambda r: r["summary"]["avg_rss_mib"])
        med = runs[(len(runs) - 1) // 2]
        cfg["median_run"] = med
        series.append((cfg["label"], COLORS.get(cfg["key"], "#000"),
                       [(t, v / MIB) for t, v in med["samples"]]))
        if cfg["key"] == "ours":
            live = svgchart.live_curve(med["phases"])
    res0 = raw["ours"][0]["result"]
    params = "bench-mem %s: %s threads, %s phases, peak target %s MiB, seed %s" % (
        " ".join(argv), res0["threads"], res0["phases"], res0["peak_mib"], res0["seed"])
    title = chart_title(args.quick, reps)

    command = "bench/bench.py mem" + "".join(" " + a for a in args.argv)
    lines = []
    lines.append("Machine: %s  " % machine_info(cc))
    lines.append("Load average (1 min) before the runs: %.2f%s  " % (
        load_before, " -- other work was running; the times may be disturbed"
        if load_before > 0.5 else ""))
    lines.append("Command: `%s`; %d repetition(s), allocators interleaved; runs took %.0f s.  "
                 % (command, reps, run_seconds))
    lines.append("Parameters: %s; RSS sampled every %g ms from /proc/<pid>/statm."
                 % (params, args.interval_ms))
    lines.append("")
    lines.append("| allocator | time s | vs ours | work s | vs ours | avg RSS MiB | vs ours | "
                 "peak RSS MiB | vs ours | idle RSS at end MiB | vs ours | malloc served by |")
    lines.append("|---" * 12 + "|")
    for row in rows:
        cells = []
        for key, d in (("elapsed_s", 2), ("work_s", 2), ("avg_rss_mib", 1), ("peak_rss_mib", 1),
                       ("end_rss_mib", 1)):
            cells += [fmt(row[key], d), fmt(row[key + "_vs_ours"], 2)]
        served = row["alloc_from"] + (" (mi_version %d)" % row["mi_version"]
                                      if row["mi_version"] else "")
        lines.append("| %s | %s | %s |" % (row["label"], " | ".join(cells), served))
    lines.append("")
    lines.append("Medians over the repetitions. time = wall time of all phases including the idle "
                 "gaps (%.1f s of sleep in total); work = the phases without the gaps. avg RSS = "
                 "time-weighted mean of the samples over the whole process; peak = the highest "
                 "RSS (VmHWM); idle RSS at end = mean RSS over the second half of the last idle "
                 "gap, when %.1f MiB are live. vs ours = median over the repetitions of (this "
                 "row / ours in the same repetition): above 1.00 the allocator is slower or uses "
                 "more memory than ours." % (float(res0["idle_s"]), float(res0["final_live_mib"])))
    for key, why in failed.items():
        lines.append("")
        lines.append("Left out: %s" % why)
    table = "\n".join(lines)
    print()
    print(table)

    os.makedirs(args.out, exist_ok=True)
    stem = results.stem("mem-", args.quick)
    base = os.path.join(args.out, stem)
    results.write_text(base + ".svg", svgchart.svg_chart(title, series, live))
    results.write_text(base + ".md", "# bench-mem: RSS of a server-like program over time\n\n%s\n\n"
                       "![RSS over time](%s)\n" % (table, stem + ".svg"))
    results.write_json(
        base + ".json.gz",
        dict(command=command, reps=reps, params=params, quick=args.quick,
             interval_ms=args.interval_ms, machine=machine_info(cc),
             load_before=load_before, rows=rows, failed=failed,
             runs={c["key"]: [dict(r["summary"], result=r["result"], phases=r["phases"])
                              for r in raw[c["key"]]] for c in configs},
             median_run_rss_mib={c["key"]: [(round(t, 4), round(v / MIB, 2)) for t, v in
                                            thin(c["median_run"]["samples"], 500)]
                                 for c in configs}),
        separators=(",", ":"))
    note("wrote %s.md, %s.json.gz, %s.svg" % (base, stem, stem))
    return rows


def chart_title(quick, reps):
    return "bench-mem%s: RSS over time (median run of %d)" % (" -q" if quick else "", reps)


def chart_from_data(data):
    """The SVG chart of a mem result file's data (bench.py chart): each allocator's median run
    as stored (thinned to 500 buckets), the live bytes from ours' median run."""
    series, live = [], None
    for row in data["rows"]:
        key = row["key"]
        series.append((row["label"], COLORS.get(key, "#000"), data["median_run_rss_mib"][key]))
        runs = sorted(data["runs"][key], key=lambda r: r["avg_rss_mib"])
        if key == "ours" and runs:
            live = svgchart.live_curve(runs[(len(runs) - 1) // 2]["phases"])
    return svgchart.svg_chart(chart_title(data.get("quick"), data["reps"]), series, live)
