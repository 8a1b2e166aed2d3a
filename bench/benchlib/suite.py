# SPDX-License-Identifier: MIT
"""The allocator benchmark suite: every workload under every allocator (python3 standard library
only; the chart uses Debian's python3-matplotlib through /usr/bin/python3, and is skipped with a
message when that is not available).

  bench/bench.py suite [--quick] [--reps N] [--only w1,w2] [--allocators a,b] [--build-dir DIR]
                       [--out DIR] [--no-install] [--timeout S] [--keep]

1. Our library: <build-dir>/libmimalloc.so (default build-dir: <repo>/build), built with
   `cmake -B DIR -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build DIR` when missing.
2. Programs: bench/workloads/*.c and bench/bench-mem.c, each built with
   `cc -std=c11 -O2 -Wall -Wextra -pthread <src> -o <exe> -ldl -lm` (CC overrides cc), and
   bench/origin.c as a shared library (-shared -fPIC), all in a temporary directory.
   Real programs (redis, python, g++, sqlite, espresso-real) come from bench/benchlib/real.py when it exists.
3. Allocators: ours, plus the peers of bench/benchlib/peers.py (glibc; Debian's mimalloc 2.0.9,
   jemalloc, tcmalloc, tbbmalloc; the newest mimalloc v2 and v3, snmalloc and rpmalloc built from
   the sources bundled in crates.io crates, cached under ~/.cache/alloc-bench/).
4. Runs: for rep in reps: for workload: for allocator in a rotated order, with
   LD_PRELOAD="<allocator.so> <origin.so>" (glibc: "<origin.so>", or for a program linked with
   another allocator, like Debian's redis-server with jemalloc, "<libc.so.6> <origin.so>"), BENCH_ORIGIN_FILE set to a
   fresh file and MIMALLOC_*, MALLOC_*, GLIBC_TUNABLES and any inherited LD_PRELOAD removed.
   Wall time and peak RSS (ru_maxrss from wait4 in a small C launcher, so python's own RSS
   does not leak into it) of every run; the program's own elapsed_s.
5. Verification: every line origin.so wrote (one per process) and the RESULT line's alloc_from
   must name the allocator under test (libc for glibc). A peer that fails gets "fail" in that
   cell; if ours fails, the suite says so and exits non-zero at the end.
6. Output: markdown on stdout and bench/results/<date>-<host>[-quick].md, .json.gz (every run's
   raw numbers, gzip-compressed JSON) and .png (benchlib/chart_mpl.py: time and peak RSS
   relative to ours; `bench.py chart` draws it again from the .json.gz).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import statistics
import time
import tempfile

from benchlib import chart, debian, launcher, origin, ours, peers, results
from benchlib.common import BENCH_DIR, CACHE_DIR, CPUS, LIB_DIR, RESULTS_DIR, \
    add_build_dir_option, clean_env, finish_run_args, hms, loadavg, machine, note, parse_result, run
from benchlib.suite_report import report, summarize

CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-pthread"]
LIBS = ["-ldl", "-lm"]

# name -> (program, default arguments, --quick arguments). The programs' defaults are sized to
# take 1..4 s with glibc on a 2-core machine, and -q to take well under a second.
WORKLOADS = {
    "cfrac": ("cfrac", [], ["-q"]),
    "espresso": ("espresso", [], ["-q"]),
    "barnes": ("barnes", [], ["-q"]),
    "sh6bench": ("sh6bench", [], ["-q"]),
    "sh8bench": ("sh8bench", [], ["-q"]),
    "alloc-test1": ("alloc-test", ["-t", "1"], ["-t", "1", "-q"]),
    "alloc-testN": ("alloc-test", ["-t", str(2 * CPUS)], ["-t", str(2 * CPUS), "-q"]),
    "larson": ("larson", [], ["-q"]),
    "mstress": ("mstress", [], ["-q"]),
    "xmalloc": ("xmalloc", [], ["-q"]),
    "rptest": ("rptest", [], ["-q"]),
    "cache-scratch": ("cache-scratch", [], ["-q"]),
    "cache-thrash": ("cache-thrash", [], ["-q"]),
    "glibc-thread": ("glibc-thread", [], ["-q"]),
    "replace": ("replace", [], ["-q"]),
    "malloc-large": ("malloc-large", [], ["-q"]),
    "thread-churn": ("thread-churn", [], ["-q"]),
    "spawn": ("spawn", [], ["-q"]),
    "bench-mem": ("bench-mem", [], ["-q"]),
}
SOURCES = {"bench-mem": os.path.join(BENCH_DIR, "bench-mem.c")}  # else bench/workloads/<prog>.c


# ---------------------------------------------------------------------------------------------
# setup

def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench.py suite", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="every workload once with tiny sizes (the programs' -q), all allocators")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    p.add_argument("--only", default="", help="comma-separated workloads (names or programs)")
    p.add_argument("--allocators", default="",
                   help="comma-separated allocator keys: ours,glibc,mimalloc-deb,mimalloc2,"
                        "mimalloc3,jemalloc,tcmalloc,tbbmalloc,snmalloc,rpmalloc (default: all)")
    add_build_dir_option(p)
    p.add_argument("--out", default=RESULTS_DIR,
                   help="where the .md, .json.gz and .png go (default: bench/results/)")
    p.add_argument("--no-install", action="store_true",
                   help="no apt-get, no downloads or builds of peers: use what is there")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per run before it is killed and counted as failed "
                        "(default 300; 60 with --quick)")
    p.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    p.add_argument("--workloads-dir", default=os.path.join(BENCH_DIR, "workloads"),
                   help="where the workload programs are (default: bench/workloads/; for tests)")
    p.add_argument("--real", default=os.path.join(LIB_DIR, "real.py"),
                   help="the real-program module (default: bench/benchlib/real.py; for tests)")
    args = p.parse_args(argv)
    finish_run_args(p, args)
    args.argv = list(argv)
    return args


WORKLOADS_DIR = os.path.join(BENCH_DIR, "workloads")


def program_source(prog):
    return SOURCES.get(prog, os.path.join(WORKLOADS_DIR, prog + ".c"))


def workload_table(quick):
    """[(name, program, arguments)] for the programs that exist: the table's entries in order,
    then unknown programs of bench/workloads/ (no arguments; -q with --quick)."""
    out = []
    known = set()
    for name, (prog, normal, q) in WORKLOADS.items():
        known.add(prog)
        if os.path.exists(program_source(prog)):
            out.append((name, prog, q if quick else normal))
    wdir = WORKLOADS_DIR
    extra = sorted(f[:-2] for f in os.listdir(wdir) if f.endswith(".c")) if os.path.isdir(wdir) \
        else []
    for prog in extra:
        if prog not in known:
            out.append((prog, prog, ["-q"] if quick else []))
    return out


def models_of(src):
    """The summary at the top of a program's first comment ("name: summary ..."), or ""."""
    try:
        with open(src, errors="replace") as f:
            head = f.read(4000)
    except OSError:
        return ""
    head = re.sub(r"^\s*/\*\s*SPDX-License-Identifier:[^*]*\*/", "", head)
    m = re.match(r"\s*/\*(.*?)(?:\n\s*\*\s*\n|\*/)", head, re.S)
    if not m:
        return ""
    text = " ".join(l.strip().lstrip("*").strip() for l in m.group(1).splitlines())
    text = re.sub(r"^[\w.-]+:\s*", "", text.strip())
    return text[:200].replace("|", "/")


def load_real(path):
    """bench/benchlib/real.py's WORKLOADS, or [] (with a message) when it is missing or broken."""
    if not os.path.exists(path):
        note("no %s: running the programs only" % path)
        return []
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location("real", path)
        real = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(real)
        return list(real.WORKLOADS)
    except Exception as e:  # noqa: BLE001 (a broken module must not stop the suite)
        note("SKIP real-program workloads: importing %s failed: %r" % (path, e))
        return []


def select(items, only, name_of, aliases_of):
    if not only:
        return items
    return [it for it in items if name_of(it) in only or any(a in only for a in aliases_of(it))]


def compile_all(cc, progs, tmp):
    """Build every program (two at a time); returns {program: exe} of those that built."""
    cmds = {}

    def one(prog):
        exe = os.path.join(tmp, prog)
        cmd = [cc] + CFLAGS + [program_source(prog), "-o", exe] + LIBS
        r = run(cmd, timeout=300)
        return prog, exe, cmd, r

    built = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(CPUS, 4))) as pool:
        for prog, exe, cmd, r in pool.map(one, progs):
            cmds[prog] = " ".join(cmd)
            if r.returncode != 0:
                note("SKIP %s: it does not build:\n  $ %s\n%s" % (prog, " ".join(cmd),
                                                                  r.stderr[-3000:]))
            else:
                if r.stderr.strip():
                    note("warnings building %s:\n%s" % (prog, r.stderr[-3000:]))
                built[prog] = exe
    return built, cmds


def ours_allocator(args):
    lib = ours.preloadable(os.path.abspath(args.build_dir))  # builds it if missing
    rev = ours.git_describe()
    return dict(key="ours", name="ours", version="git %s" % rev, lib=lib, env={},
                source="this repository (%s)" % rev, note="built in %s" % args.build_dir)


# ---------------------------------------------------------------------------------------------
# one run

def run_env(alloc, origin_so, origin_file, glibc_preload=()):
    """The environment of one run. glibc_preload: what makes glibc serve malloc for a program
    that links another allocator (Debian's redis-server links jemalloc); only for glibc."""
    env = clean_env()
    env.update(alloc["env"])
    first = [alloc["lib"]] if alloc["lib"] else list(glibc_preload)
    env["LD_PRELOAD"] = " ".join(x for x in first + [origin_so] if x)
    env["BENCH_ORIGIN_FILE"] = origin_file
    return env


def one_run(item, alloc, ctx, rep, order):
    """Run one workload under one allocator; returns the run record (ok or not)."""
    origin_file = os.path.join(ctx["tmp"], "origin-%d-%s-%s-%d.txt"
                               % (rep, item["name"], alloc["key"], order))
    if os.path.exists(origin_file):
        os.remove(origin_file)
    env = run_env(alloc, ctx["origin_so"], origin_file,
                  getattr(item.get("real"), "glibc_preload", ()) if item["kind"] != "program" else ())
    rec = dict(workload=item["name"], allocator=alloc["key"], rep=rep, order=order, ok=False,
               error=None, wall_s=None, elapsed_s=None, peak_rss_kib=None)
    problems = []
    if item["kind"] == "program":
        wall, problem, maxrss, stdout, stderr = launcher.run_program(
            ctx["launcher"], item["exe"], item["args"], env, ctx["timeout"], ctx["tmp"])
        rec.update(wall_s=wall, peak_rss_kib=maxrss)
        res = parse_result(stdout)
        if problem:
            problems.append(problem)
        if "CORRUPT" in stderr:
            problems.append("CORRUPT reported")
        if res is None:
            problems.append("no RESULT line")
        else:
            rec["result"] = res
            try:
                rec["elapsed_s"] = float(res.get("elapsed_s", "nan"))
            except ValueError:
                pass
            got = res.get("alloc_from", "?")
            if not origin.ok(alloc["lib"] or "libc", got):
                problems.append("RESULT alloc_from=%s" % got)
        if problems and stderr.strip():
            problems.append("stderr: " + " | ".join(stderr.strip().splitlines()[-3:])[:400])
    else:
        w = item["real"]
        try:
            t0 = time.monotonic()
            r = w.run(env, item["workdir"], ctx["quick"], ctx["timeout"])
            wall = time.monotonic() - t0
        except Exception as e:  # noqa: BLE001 (the workload's failure, reported in the cell)
            r, wall = None, None
            problems.append("run() raised %r" % e)
        if r is not None:
            rec.update(wall_s=r.get("elapsed_s"), elapsed_s=r.get("elapsed_s"),
                       peak_rss_kib=r.get("peak_rss_kib"), detail=r.get("detail"),
                       total_s=wall)
            if not r.get("ok"):
                problems.append("not ok: %s" % r.get("detail"))
            if rec["wall_s"] is None or rec["peak_rss_kib"] is None:
                problems.append("run() returned no elapsed_s/peak_rss_kib")
    bad, nlines = origin.file_problems(alloc["lib"] or "libc", origin_file)
    rec["processes"] = nlines
    if bad:
        problems.append("wrong allocator: " + "; ".join(bad[:3])
                        + (" (and %d more)" % (len(bad) - 3) if len(bad) > 3 else ""))
    try:
        os.remove(origin_file)
    except OSError:
        pass
    rec["ok"] = not problems
    rec["error"] = "; ".join(problems) if problems else None
    return rec


# ---------------------------------------------------------------------------------------------

def main(argv):
    args = parse_args(argv)
    t_begin = time.monotonic()
    cc = os.environ.get("CC", "cc")
    command = "bench/bench.py suite" + "".join(" " + a for a in argv)

    # what to run
    global WORKLOADS_DIR
    WORKLOADS_DIR = os.path.abspath(args.workloads_dir)
    progs = workload_table(args.quick)
    reals = load_real(os.path.abspath(args.real))
    known = [n for n, _, _ in progs] + [w.name for w in reals]
    if args.only:
        unknown = [x for x in args.only if x not in known and x not in [p for _, p, _ in progs]]
        if unknown:
            note("warning: --only names no available workload: %s (available: %s)"
                 % (", ".join(unknown), ", ".join(known)))
    progs = select(progs, args.only, lambda p: p[0], lambda p: [p[1]])
    reals = select(reals, args.only, lambda w: w.name, lambda w: [])
    if not progs and not reals:
        note("error: no workload to run")
        return 2
    skipped = []

    # allocators: ours first (fatal if it cannot be had), then the peers
    try:
        ours_alloc = ours_allocator(args)
    except RuntimeError as e:
        note("error: %s" % e)
        return 1
    allocs = []
    if not args.allocators or "ours" in args.allocators:
        allocs.append(ours_alloc)
    else:
        note("note: --allocators without ours: no ratios")
    try:
        note("peers: checking (installing/building what is missing)")
        allocs += peers.peers(args)
    except Exception as e:  # noqa: BLE001 (no peers is not fatal)
        note("SKIP all peers: benchlib/peers.py failed: %r" % e)
    unknown = args.allocators - set(a["key"] for a in allocs)
    if unknown:
        note("note: allocators not available: %s" % ", ".join(sorted(unknown)))
        skipped.append("allocators not available: %s" % ", ".join(sorted(unknown)))
    note("allocators: " + ", ".join("%s [%s]" % (a["name"], a["key"]) for a in allocs))

    tmp = tempfile.mkdtemp(prefix="alloc-suite-")
    try:
        origin_so, origin_cmd = origin.build_so(cc, tmp)
        launch_exe = launcher.build(cc, tmp)
        note("building %d program(s) in %s" % (len(set(p for _, p, _ in progs)), tmp))
        built, cmds = compile_all(cc, sorted(set(p for _, p, _ in progs)), tmp)
        items = []
        for name, prog, argv_ in progs:
            if prog not in built:
                skipped.append("%s (does not build)" % name)
                continue
            items.append(dict(name=name, kind="program", program=prog, exe=built[prog],
                              args=argv_, command=" ".join(["./" + prog] + argv_),
                              models=models_of(program_source(prog))))
        for w in reals:
            missing = []
            if getattr(w, "packages", None):
                missing = debian.ensure(list(w.packages), args.no_install)
            workdir = os.path.join(CACHE_DIR, "real", "%s%s" % (w.name, "-quick" if args.quick
                                                                 else ""))
            os.makedirs(workdir, exist_ok=True)
            try:
                if missing:
                    raise RuntimeError("packages missing: %s" % " ".join(missing))
                w.prepare(workdir, args.quick)
            except Exception as e:  # noqa: BLE001
                note("SKIP %s: %s" % (w.name, e))
                skipped.append("%s (%s)" % (w.name, e))
                continue
            items.append(dict(name=w.name, kind="real", real=w, workdir=workdir, args=[],
                              models=getattr(w, "models", ""),
                              command=getattr(w, "command", None)
                              or "bench/benchlib/real.py: %s.run()" % w.name))
        if not items:
            note("error: nothing left to run")
            return 2

        ctx = dict(args=args, tmp=tmp, origin_so=origin_so, launcher=launch_exe,
                   timeout=args.timeout, quick=args.quick, machine=machine(cc), command=command,
                   origin_cmd=origin_cmd, skipped=skipped,
                   compile_example="%s %s <src> -o <exe> %s" % (cc, " ".join(CFLAGS),
                                                               " ".join(LIBS)))
        ctx["load_before"] = loadavg()

        # the runs: for rep, for workload, for allocator in a rotated order
        runs, failed = [], {}
        total = args.reps * len(items) * len(allocs)
        done = 0
        per_wl = {}  # workload -> [wall] so far, for the estimate of the time left
        t_runs = time.monotonic()
        for rep in range(args.reps):
            for wi, it in enumerate(items):
                shift = (rep + wi) % len(allocs)
                order = allocs[shift:] + allocs[:shift]
                for pos, a in enumerate(order):
                    done += 1
                    if (it["name"], a["key"]) in failed:
                        continue
                    t0 = time.monotonic()
                    rec = one_run(it, a, ctx, rep, pos)
                    took = time.monotonic() - t0
                    runs.append(rec)
                    per_wl.setdefault(it["name"], []).append(took)
                    if not rec["ok"]:
                        failed[(it["name"], a["key"])] = rec["error"]
                        note("FAIL %s under %s: %s" % (it["name"], a["name"], rec["error"]))
                    # estimate: remaining runs x mean time of their workload (or of all runs)
                    mean_all = (time.monotonic() - t_runs) / done
                    left = 0.0
                    rem_this_rep = len(order) - pos - 1
                    for wj, it2 in enumerate(items):
                        n = (args.reps - rep - 1) * len(allocs)
                        if wj > wi:
                            n += len(allocs)
                        elif wj == wi:
                            n += rem_this_rep
                        ts = per_wl.get(it2["name"])
                        left += n * (statistics.mean(ts) if ts else mean_all)
                    note("[%d/%d] rep %d/%d %-14s %-26s %s  elapsed %s, ~%s left"
                         % (done, total, rep + 1, args.reps, it["name"], a["name"],
                            ("%7.3f s %8.1f MiB" % (rec["wall_s"], rec["peak_rss_kib"] / 1024.0))
                            if rec["ok"] else "FAIL",
                            hms(time.monotonic() - t_begin), hms(left)))
        ctx["load_after"] = loadavg()
        summ, geo = summarize(items, allocs, runs, failed)
        ctx["total_s"] = time.monotonic() - t_begin
        ctx["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")

        # output
        os.makedirs(args.out, exist_ok=True)
        stem = results.stem("", args.quick)
        base = os.path.join(args.out, stem)
        data = dict(
            command=command, argv=argv, date=ctx["date"], quick=args.quick, reps=args.reps,
            timeout_s=args.timeout, total_s=round(ctx["total_s"], 2), machine=ctx["machine"],
            load_before=ctx["load_before"], load_after=ctx["load_after"],
            build=dict(cc=cc, cflags=CFLAGS, libs=LIBS, programs=cmds, origin=origin_cmd,
                       ours_lib=ours_alloc["lib"], ours_version=ours_alloc["version"]),
            allocators=[{k: v for k, v in a.items()} for a in allocs],
            workloads=[{k: v for k, v in it.items() if k not in ("real", "exe")}
                       for it in items],
            skipped=skipped,
            runs=runs,
            summary=summ, geomean=geo,
            failures=[dict(workload=w, allocator=k, error=e) for (w, k), e in failed.items()])
        results.write_json(base + ".json.gz", data, indent=1)
        have_chart = chart.render_png(base + ".json.gz", base, args.no_install)
        text = report(ctx, items, allocs, runs, failed, summ, geo, stem if have_chart else None)
        results.write_text(base + ".md", text)
        print(text)
        note("wrote %s.md and .json.gz%s" % (base, " and .png" if have_chart else ""))
        note("total time: %s" % hms(time.monotonic() - t_begin))

        ours_fail = [(w, e) for (w, k), e in failed.items() if k == "ours"]
        if ours_fail:
            for w, e in ours_fail:
                note("ERROR: our library failed on %s: %s" % (w, e))
            return 1
        return 0
    finally:
        if args.keep:
            note("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

