# SPDX-License-Identifier: MIT
"""Memory scenarios: figures read at named moments (RSS at the end, 1 s after the frees, the
highest during a phase) rather than a run's peak RSS, and the two-thread handoff's speed
(python3 standard library only).

  bench/bench.py scenarios [--reps N] [--only a,b] [--allocators a,b] [--quick]
                           [--build-dir DIR] [--env KEY=VAL ...] [--out DIR] [--no-install]
                           [--timeout S] [--keep]

1. Programs: bench/scenarios/*.c (big-values, remote-idle, drift, handoff), each built with
   `cc -std=c11 -O2 -Wall -Wextra -pthread <src> -o <exe> -ldl -lm`; each reads its own RSS
   from /proc/self/statm at the moments its header names and prints them on its RESULT line.
2. Allocators: ours (<build-dir>/libmimalloc.so, built when missing) and the peers of
   benchlib/peers.py, found, installed or built as for the suite. --env KEY=VAL (repeatable)
   adds to the environment of our runs only (e.g. MIMALLOC_PURGE_DELAY=10000), so that one run
   compares a setting of ours with the peers.
3. Runs: for rep, for scenario, the allocators in an order rotated every rep; each run is the
   suite's (benchlib/suite.one_run): the wait4 launcher, LD_PRELOAD="<allocator.so> origin.so",
   a clean environment, and the allocator verified by origin.so's lines and alloc_from=.
   A peer that fails is reported and left out of that scenario; if ours fails, the exit status
   is 1.
4. Output: per scenario a markdown table of each figure's median per allocator and its ratio to
   the best peer's median (lowest; highest for ops/s), on stdout and in
   bench/results/scenarios-<date>-<host>[-quick].md, with every run in .json.gz.
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

from benchlib import launcher, origin, peers, results, suite
from benchlib.common import BENCH_DIR, RESULTS_DIR, add_build_dir_option, finish_run_args, hms, \
    loadavg, machine, note, run

CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-pthread"]
LIBS = ["-ldl", "-lm"]
SCENARIOS_DIR = os.path.join(BENCH_DIR, "scenarios")

# name -> (arguments, --quick arguments, figures); a figure is (RESULT key, column, higher is
# better). The program is bench/scenarios/<name>.c; its header says what it models.
SCENARIOS = {
    "big-values": ([], ["-q"], [("live_mib", "live MiB", False),
                                ("max_rss_mib", "max RSS MiB", False),
                                ("end_rss_mib", "end RSS MiB", False),
                                ("later_rss_mib", "1 s later MiB", False)]),
    "remote-idle": ([], ["-q"], [("peak_rss_mib", "peak MiB", False),
                                 ("freed_rss_mib", "after frees MiB", False),
                                 ("later_rss_mib", "1 s later MiB", False),
                                 ("later_pct", "1 s later % of peak", False)]),
    "drift": ([], ["-q"], [("peak_rss_mib", "peak RSS MiB", False),
                           ("final_rss_mib", "final RSS MiB", False),
                           ("elapsed_s", "time s", False)]),
    "handoff": ([], ["-q"], [("ops_per_s", "Mops/s", True),
                             ("elapsed_s", "time s", False)]),
}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench.py scenarios", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the programs' -q sizes, one repetition")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    p.add_argument("--only", default="", help="comma-separated scenarios: " + ",".join(SCENARIOS))
    p.add_argument("--allocators", default="",
                   help="comma-separated allocator keys: ours,glibc,mimalloc-deb,mimalloc2,"
                        "mimalloc3,jemalloc,tcmalloc,tbbmalloc,snmalloc,rpmalloc (default: all)")
    add_build_dir_option(p)
    p.add_argument("--env", action="append", nargs="+", default=[], metavar="KEY=VAL",
                   help="extra environment for OUR runs only (several, or repeated)")
    p.add_argument("--out", default=RESULTS_DIR,
                   help="where the .md and .json.gz go (default: bench/results/)")
    p.add_argument("--no-install", action="store_true",
                   help="no apt-get, no downloads or builds of peers: use what is there")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per run (default 300; 60 with --quick)")
    p.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    args = p.parse_args(argv)
    finish_run_args(p, args)
    unknown = [x for x in args.only if x not in SCENARIOS]
    if unknown:
        p.error("unknown scenario(s): %s (known: %s)" % (",".join(unknown), ",".join(SCENARIOS)))
    args.env = [e for group in args.env for e in group]
    bad = [e for e in args.env if "=" not in e or e.startswith("=")]
    if bad:
        p.error("--env takes KEY=VAL, not %s" % " ".join(bad))
    args.env = dict(e.split("=", 1) for e in args.env)
    return args


def allocators(args):
    """Ours (with --env; raises RuntimeError when it cannot be had) and the available peers."""
    ours_alloc = suite.ours_allocator(args)
    ours_alloc["env"] = dict(args.env)
    if args.env:
        ours_alloc["name"] = "ours (%s)" % " ".join("%s=%s" % kv for kv in args.env.items())
    out = [ours_alloc] if not args.allocators or "ours" in args.allocators else []
    try:
        note("peers: checking (installing/building what is missing)")
        out += peers.peers(args)
    except Exception as e:  # noqa: BLE001 (no peers is not fatal)
        note("SKIP all peers: benchlib/peers.py failed: %r" % e)
    missing = sorted(args.allocators - set(a["key"] for a in out))
    return out, missing


def build_programs(cc, names, tmp):
    """{name: exe} of the scenarios that built, and {name: command}."""
    built, cmds = {}, {}
    for name in names:
        exe = os.path.join(tmp, name)
        cmd = [cc] + CFLAGS + [os.path.join(SCENARIOS_DIR, name + ".c"), "-o", exe] + LIBS
        cmds[name] = " ".join(cmd)
        r = run(cmd, timeout=300)
        if r.returncode != 0:
            note("SKIP %s: it does not build:\n  $ %s\n%s" % (name, cmds[name], r.stderr[-3000:]))
        else:
            if r.stderr.strip():
                note("warnings building %s:\n%s" % (name, r.stderr[-3000:]))
            built[name] = exe
    return built, cmds


def figure_value(rec, key):
    try:
        v = float(rec.get("result", {}).get(key, "nan"))
    except ValueError:
        return None
    if v != v:
        return None
    return v / 1e6 if key == "ops_per_s" else v


def summarize(items, allocs, runs, failed):
    """{scenario: {alloc key: {figure key: median, "n": runs, "status": ...}}}."""
    summ = {}
    for it in items:
        summ[it["name"]] = {}
        for a in allocs:
            rs = [r for r in runs if r["workload"] == it["name"] and r["allocator"] == a["key"]
                  and r["ok"]]
            cell = dict(n=len(rs), status="fail" if (it["name"], a["key"]) in failed
                        else ("ok" if rs else "missing"),
                        error=failed.get((it["name"], a["key"])))
            if cell["status"] == "ok":
                for key, _, _ in it["figures"]:
                    vs = [v for v in (figure_value(r, key) for r in rs) if v is not None]
                    cell[key] = statistics.median(vs) if vs else None
                cell["launcher_peak_mib"] = statistics.median(
                    r["peak_rss_kib"] / 1024.0 for r in rs)
            summ[it["name"]][a["key"]] = cell
    return summ


def best_peer(allocs, cells, key, higher):
    vals = [(cells[a["key"]].get(key), a["name"]) for a in allocs
            if a["key"] != "ours" and cells[a["key"]].get(key) is not None]
    if not vals:
        return None, None
    return (max if higher else min)(vals, key=lambda v: v[0])


def fmt(x):
    if x is None:
        return "n/a"
    return "%.3f" % x if abs(x) < 10 else ("%.1f" % x if abs(x) < 10000 else "{:,.0f}".format(x))


def scenario_table(it, allocs, cells):
    figs = it["figures"]
    head = "| allocator | " + " | ".join("%s | / best peer" % label for _, label, _ in figs) + " |"
    lines = [head, "|---" + "|---:|---:" * len(figs) + "|"]
    bests = [best_peer(allocs, cells, key, higher) for key, _, higher in figs]
    for a in allocs:
        c = cells[a["key"]]
        if c["status"] != "ok":
            lines.append("| %s | %s |" % (a["name"], " | ".join([c["status"]] * (2 * len(figs)))))
            continue
        row = []
        for (key, _, _), (best, _) in zip(figs, bests):
            v = c.get(key)
            row += [fmt(v), "%.2f" % (v / best) if v is not None and best else "n/a"]
        name = "**%s**" % a["name"] if a["key"] == "ours" else a["name"]
        lines.append("| %s | %s |" % (name, " | ".join(row)))
    notes = ["best peer: " + ", ".join("%s %s" % (label, bn or "n/a")
                                       for (_, label, _), (_, bn) in zip(figs, bests))]
    return "\n".join(lines), notes


def report(ctx, items, allocs, summ, failed, skipped):
    out = ["# Memory scenarios (`bench/bench.py scenarios`)", "",
           "- command: `%s`" % ctx["command"],
           "- date: %s; total %s; load average %.2f before, %.2f after"
           % (ctx["date"], hms(ctx["total_s"]), ctx["load_before"], ctx["load_after"]),
           "- machine: %(cpu)s, %(cores)d CPUs, %(memory)s, %(kernel)s, %(os)s, %(compiler)s"
           % ctx["machine"],
           "- medians of %d repetition(s), allocators interleaved in a rotated order; each figure"
           " is read by the program itself (/proc/self/statm) at the moment its column names;"
           " `/ best peer` is the allocator's median over the best peer's (the lowest; for"
           " Mops/s the highest)" % ctx["reps"], "",
           "| allocator | version | source |", "|---|---|---|"]
    for a in allocs:
        out.append("| %s | %s | %s%s |" % (a["name"], a["version"], a["source"],
                                            "; env " + " ".join("%s=%s" % kv for kv in a["env"].items())
                                            if a["env"] else ""))
    for it in items:
        text, notes = scenario_table(it, allocs, summ[it["name"]])
        out += ["", "## %s" % it["name"], "", "`%s`: %s" % (it["command"], it["models"]), "",
                text, ""] + ["%s." % n for n in notes]
    if failed or skipped:
        out += ["", "## Not measured", ""]
        names = {a["key"]: a["name"] for a in allocs}
        out += ["- %s under %s: %s" % (w, names.get(k, k), e) for (w, k), e in failed.items()]
        out += ["- %s" % s for s in skipped]
    return "\n".join(out) + "\n"


def main(argv):
    args = parse_args(argv)
    t_begin = time.monotonic()
    cc = os.environ.get("CC", "cc")
    command = "bench/bench.py scenarios" + "".join(" " + a for a in argv)
    names = [n for n in SCENARIOS if not args.only or n in args.only]
    try:
        allocs, missing = allocators(args)
    except RuntimeError as e:
        note("error: %s" % e)
        return 1
    skipped = ["allocator %s: not available" % k for k in missing]
    for s in skipped:
        note("SKIP " + s)
    if not allocs:
        note("error: no allocator to run")
        return 2
    note("allocators: " + ", ".join("%s [%s]" % (a["name"], a["key"]) for a in allocs))
    tmp = tempfile.mkdtemp(prefix="alloc-scenarios-")
    try:
        origin_so, origin_cmd = origin.build_so(cc, tmp)
        built, cmds = build_programs(cc, names, tmp)
        items = []
        for n in names:
            if n not in built:
                skipped.append("scenario %s: does not build" % n)
                continue
            argv_ = SCENARIOS[n][1] if args.quick else SCENARIOS[n][0]
            figures = [(k, label.replace("1 s later", "0.1 s later") if args.quick else label, h)
                       for k, label, h in SCENARIOS[n][2]]  # -q waits 100 ms, not 1 s
            items.append(dict(name=n, kind="program", program=n, exe=built[n], args=argv_,
                              command=" ".join(["./" + n] + argv_), figures=figures,
                              models=suite.models_of(os.path.join(SCENARIOS_DIR, n + ".c"))))
        if not items:
            note("error: nothing to run")
            return 2
        ctx = dict(tmp=tmp, origin_so=origin_so, launcher=launcher.build(cc, tmp),
                   timeout=args.timeout, quick=args.quick, machine=machine(cc), command=command,
                   reps=args.reps, load_before=loadavg())
        runs, failed = [], {}
        total, done = args.reps * len(items) * len(allocs), 0
        for rep in range(args.reps):
            for si, it in enumerate(items):
                shift = (rep + si) % len(allocs)
                for pos, a in enumerate(allocs[shift:] + allocs[:shift]):
                    done += 1
                    if (it["name"], a["key"]) in failed:
                        continue
                    rec = suite.one_run(it, a, ctx, rep, pos)
                    runs.append(rec)
                    if not rec["ok"]:
                        failed[(it["name"], a["key"])] = rec["error"]
                        note("FAIL %s under %s: %s" % (it["name"], a["name"], rec["error"]))
                        continue
                    note("[%d/%d] rep %d/%d %-12s %-28s %s  elapsed %s" % (
                        done, total, rep + 1, args.reps, it["name"], a["name"],
                        " ".join("%s=%s" % (k, rec["result"].get(k, "?")) for k, _, _ in
                                 it["figures"]), hms(time.monotonic() - t_begin)))
        ctx.update(load_after=loadavg(), total_s=time.monotonic() - t_begin,
                   date=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
        summ = summarize(items, allocs, runs, failed)
        text = report(ctx, items, allocs, summ, failed, skipped)
        os.makedirs(args.out, exist_ok=True)
        base = os.path.join(args.out, results.stem("scenarios-", args.quick))
        results.write_json(base + ".json.gz", dict(
            command=command, argv=argv, date=ctx["date"], quick=args.quick, reps=args.reps,
            total_s=round(ctx["total_s"], 2), machine=ctx["machine"],
            load_before=ctx["load_before"], load_after=ctx["load_after"],
            build=dict(cc=cc, cflags=CFLAGS, libs=LIBS, programs=cmds, origin=origin_cmd),
            allocators=allocs, ours_env=args.env,
            scenarios=[{k: v for k, v in it.items() if k != "exe"} for it in items],
            skipped=skipped, runs=runs, summary=summ,
            failures=[dict(scenario=w, allocator=k, error=e) for (w, k), e in failed.items()]),
            indent=1)
        results.write_text(base + ".md", text)
        print(text)
        note("wrote %s.md and .json.gz" % base)
        ours_fail = [(w, e) for (w, k), e in failed.items() if k == "ours"]
        for w, e in ours_fail:
            note("ERROR: our library failed on %s: %s" % (w, e))
        return 1 if ours_fail else 0
    finally:
        if args.keep:
            note("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
