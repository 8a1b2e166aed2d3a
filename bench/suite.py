#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The allocator benchmark suite: every workload under every allocator (python3 standard library
only; the chart uses Debian's python3-matplotlib through /usr/bin/python3, and is skipped with a
message when that is not available).

  bench/suite.sh [--quick] [--reps N] [--only w1,w2] [--allocators a,b] [--build-dir DIR]
                 [--out DIR] [--no-install] [--timeout S] [--keep]

1. Our library: <build-dir>/libmimalloc.so (default build-dir: <repo>/build), built with
   `cmake -B DIR -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build DIR` when missing.
2. Programs: bench/workloads/*.c and bench/bench-mem.c, each built with
   `cc -std=c11 -O2 -Wall -Wextra -pthread <src> -o <exe> -ldl -lm` (CC overrides cc), and
   bench/origin.c as a shared library (-shared -fPIC), all in a temporary directory.
   Real programs (redis, python, g++, sqlite) come from bench/real.py when it exists.
3. Allocators: ours, plus the peers of bench/peers.py (glibc; Debian's mimalloc 2.0.9, jemalloc,
   tcmalloc, tbbmalloc; the newest mimalloc v2 and v3, snmalloc and rpmalloc built from the
   sources bundled in crates.io crates, cached under ~/.cache/alloc-bench/).
4. Runs: for rep in reps: for workload: for allocator in a rotated order, with
   LD_PRELOAD="<allocator.so> <origin.so>" (glibc: "<origin.so>", or for a program linked with
   another allocator, like Debian's redis-server with jemalloc, "<libc.so.6> <origin.so>"), BENCH_ORIGIN_FILE set to a
   fresh file and MIMALLOC_*, MALLOC_*, GLIBC_TUNABLES and any inherited LD_PRELOAD removed.
   Wall time and peak RSS (ru_maxrss from wait4 in a small C launcher, so python's own RSS
   does not leak into it) of every run; the program's own elapsed_s.
5. Verification: every line origin.so wrote (one per process) and the RESULT line's alloc_from
   must name the allocator under test (libc for glibc). A peer that fails gets "fail" in that
   cell; if ours fails, the suite says so and exits non-zero at the end.
6. Output: markdown on stdout and bench/results/<date>-<host>[-quick].md, .json (every run's
   raw numbers), .png and .svg (chart.py: time and peak RSS relative to ours).
"""
import argparse
import concurrent.futures
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
sys.dont_write_bytecode = True  # no __pycache__ in the work tree from importing run/mem/peers
sys.path.insert(0, BENCH_DIR)
import run as common  # noqa: E402  (bench/run.py: note, run, find_ours, exports_malloc, loadavg)
import mem  # noqa: E402  (bench/mem.py: clean_env, ours_config/build_ours, origin_ok)

note = common.note
CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-pthread"]
LIBS = ["-ldl", "-lm"]
CPUS = os.cpu_count() or 1
CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "alloc-bench")

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
    "malloc-large": ("malloc-large", [], ["-q"]),
    "thread-churn": ("thread-churn", [], ["-q"]),
    "spawn": ("spawn", [], ["-q"]),
    "bench-mem": ("bench-mem", [], ["-q"]),
}
SOURCES = {"bench-mem": os.path.join(BENCH_DIR, "bench-mem.c")}  # else bench/workloads/<prog>.c


# ---------------------------------------------------------------------------------------------
# setup

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="every workload once with tiny sizes (the programs' -q), all allocators")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    p.add_argument("--only", default="", help="comma-separated workloads (names or programs)")
    p.add_argument("--allocators", default="",
                   help="comma-separated allocator keys: ours,glibc,mimalloc-deb,mimalloc2,"
                        "mimalloc3,jemalloc,tcmalloc,tbbmalloc,snmalloc,rpmalloc (default: all)")
    p.add_argument("--build-dir", default=os.path.join(REPO_DIR, "build"),
                   help="build directory of our library (default: <repo>/build)")
    p.add_argument("--out", default=os.path.join(BENCH_DIR, "results"),
                   help="where the .md, .json, .png and .svg go (default: bench/results/)")
    p.add_argument("--no-install", action="store_true",
                   help="no apt-get, no downloads or builds of peers: use what is there")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per run before it is killed and counted as failed "
                        "(default 300; 60 with --quick)")
    p.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    p.add_argument("--workloads-dir", default=os.path.join(BENCH_DIR, "workloads"),
                   help="where the workload programs are (default: bench/workloads/; for tests)")
    p.add_argument("--real", default=os.path.join(BENCH_DIR, "real.py"),
                   help="the real-program module (default: bench/real.py; for tests)")
    args = p.parse_args(argv)
    if args.reps is not None and args.reps < 1:
        p.error("--reps must be at least 1")
    args.reps = args.reps or (1 if args.quick else 3)
    args.timeout = args.timeout or (60.0 if args.quick else 300.0)
    args.only = [x for x in args.only.split(",") if x]
    args.allocators = set(x for x in args.allocators.split(",") if x)
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
    """bench/real.py's WORKLOADS, or [] (with a message) when it is missing or broken."""
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
        note("SKIP real-program workloads: importing bench/real.py failed: %r" % e)
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
        r = common.run(cmd, timeout=300)
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


def build_origin(cc, tmp):
    so = os.path.join(tmp, "origin.so")
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC"]
    cmd = [cc] + flags + [os.path.join(BENCH_DIR, "origin.c"), "-o", so, "-ldl"]
    r = common.run(cmd)
    if r.returncode != 0:
        raise RuntimeError("cannot build origin.so:\n$ %s\n%s" % (" ".join(cmd), r.stderr))
    if r.stderr.strip():
        note("warnings building origin.so:\n" + r.stderr)
    return so, " ".join([cc] + flags + ["bench/origin.c", "-o", "origin.so", "-ldl"])


def git_describe():
    try:
        r = common.run(["git", "-C", REPO_DIR, "describe", "--always", "--dirty", "--abbrev=12"])
        return r.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def ours_allocator(args):
    cfg = mem.ours_config(os.path.abspath(args.build_dir))  # builds it if missing
    rev = git_describe()
    return dict(key="ours", name="ours", version="git %s" % rev, lib=cfg["preload"], env={},
                source="this repository (%s)" % rev, note="built in %s" % args.build_dir)


# ---------------------------------------------------------------------------------------------
# machine

def read_first(path, prefix):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine(cc):
    mem_kib = read_first("/proc/meminfo", "MemTotal")
    try:
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    except OSError:
        debian = None
    pretty = None
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    try:
        ccv = common.run([cc, "--version"]).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        ccv = cc
    return dict(cpu=read_first("/proc/cpuinfo", "model name") or platform.processor() or "?",
                cores=CPUS,
                memory="%.1f GiB" % (int(mem_kib.split()[0]) / 1048576.0) if mem_kib else "?",
                kernel="%s %s" % (platform.system(), platform.release()),
                os=("%s (debian_version %s)" % (pretty, debian)) if debian else (pretty or "?"),
                compiler=ccv, python=platform.python_version(),
                host=socket.gethostname())


# ---------------------------------------------------------------------------------------------
# one run

def run_env(alloc, origin_so, origin_file, glibc_preload=()):
    """The environment of one run. glibc_preload: what makes glibc serve malloc for a program
    that links another allocator (Debian's redis-server links jemalloc); only for glibc."""
    env = mem.clean_env()
    env.update(alloc["env"])
    first = [alloc["lib"]] if alloc["lib"] else list(glibc_preload)
    env["LD_PRELOAD"] = " ".join(x for x in first + [origin_so] if x)
    env["BENCH_ORIGIN_FILE"] = origin_file
    return env


def origin_problems(alloc, origin_file):
    """Problems with the origin lines of one run ([] when every process used the allocator)."""
    try:
        with open(origin_file) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    except OSError:
        lines = []
    if not lines:
        return ["no process reported its allocator (origin.so not loaded?)"], 0
    expect = {"expect": alloc["lib"] or "libc"}
    bad = []
    for line in lines:
        parts = line.split(" ", 2)
        got = parts[2] if len(parts) == 3 else "?"
        if not mem.origin_ok(expect, got):
            bad.append("pid %s (%s): malloc from %s" % (parts[0], parts[1] if len(parts) > 1
                                                         else "?", got))
    return bad, len(lines)


# A tiny launcher between this script and each program. A process forked from python inherits
# python's RSS in its ru_maxrss (Linux keeps the high-water mark of the pre-exec memory), which
# would put a floor of ~30 MiB under every measurement; forked from this small launcher, the
# floor is the launcher's ~1 MiB. It forks, sets LD_PRELOAD in the child only, execs the
# program, wait4()s for it and writes "<wait status> <ru_maxrss KiB> <wall seconds>" to a file.
LAUNCHER_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: launch OUTFILE PRELOAD PROGRAM [ARGS...]\n"); return 2; }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 126; }
  if (pid == 0) {
    if (argv[2][0] != 0) setenv("LD_PRELOAD", argv[2], 1);
    execv(argv[3], argv + 3);
    perror("execv");
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0) {
    if (errno != EINTR) { perror("wait4"); return 126; }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  FILE *f = fopen(argv[1], "w");
  if (f == NULL) { perror(argv[1]); return 126; }
  fprintf(f, "%d %ld %.6f %.6f %ld\n", st, ru.ru_maxrss,
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
          (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6,
          ru.ru_minflt);
  fclose(f);
  if (WIFSIGNALED(st)) {
    signal(WTERMSIG(st), SIG_DFL);
    raise(WTERMSIG(st));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 126;
}
"""


def build_launcher(cc, tmp):
    src = os.path.join(tmp, "launch.c")
    exe = os.path.join(tmp, "launch")
    with open(src, "w") as f:
        f.write(LAUNCHER_C)
    r = common.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", src, "-o", exe])
    if r.returncode != 0:
        raise RuntimeError("cannot build the launcher:\n" + r.stderr)
    return exe


def run_program(launcher, exe, argv, env, timeout, tmp, extra=None):
    """(wall_s, problem text or None, ru_maxrss KiB, stdout, stderr) of one run of exe, started
    by the launcher with env (whose LD_PRELOAD goes to the program only). extra (a dict), when
    given, gets the program's cpu_s (user + system) and minor page faults (minflt)."""
    env = dict(env)
    preload = env.pop("LD_PRELOAD", "")
    stat_file = os.path.join(tmp, "launch-stat.txt")
    if os.path.exists(stat_file):
        os.remove(stat_file)
    with tempfile.TemporaryFile("w+", dir=tmp) as out, tempfile.TemporaryFile("w+", dir=tmp) as err:
        proc = subprocess.Popen([launcher, stat_file, preload, exe] + argv, env=env, stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the program
            except OSError:
                pass
            proc.wait()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    wall, maxrss, status = None, None, None
    try:
        with open(stat_file) as f:
            st, rss, w, cpu, flt = f.read().split()
        status, maxrss, wall = int(st), int(rss), float(w)
        if extra is not None:
            extra.update(cpu_s=float(cpu), minflt=int(flt))
    except (OSError, ValueError):
        pass
    if timed_out:
        problem = "timed out after %.0f s" % timeout
    elif status is None:
        problem = "the launcher failed (exit %s): %s" % (proc.returncode, stderr.strip()[-300:])
    elif os.WIFSIGNALED(status):
        try:
            problem = "killed by %s" % signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            problem = "killed by signal %d" % os.WTERMSIG(status)
    elif os.WEXITSTATUS(status) != 0:
        problem = "exit status %d" % os.WEXITSTATUS(status)
    else:
        problem = None
    return wall, problem, maxrss, stdout, stderr


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
        wall, problem, maxrss, stdout, stderr = run_program(
            ctx["launcher"], item["exe"], item["args"], env, ctx["timeout"], ctx["tmp"])
        rec.update(wall_s=wall, peak_rss_kib=maxrss)
        res = common.parse_result(stdout)
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
            if not mem.origin_ok({"expect": alloc["lib"] or "libc"}, got):
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
    bad, nlines = origin_problems(alloc, origin_file)
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
# summary and report

def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(items, allocs, runs, failed):
    """{workload: {alloc: {...}}} with medians and ratios to ours; and the geometric means."""
    summ = {}
    for it in items:
        w = it["name"]
        summ[w] = {}
        for a in allocs:
            k = a["key"]
            rs = [r for r in runs if r["workload"] == w and r["allocator"] == k and r["ok"]]
            cell = dict(status="fail" if (w, k) in failed else ("ok" if rs else "missing"),
                        error=failed.get((w, k)), n=len(rs))
            if rs and (w, k) not in failed:
                cell["wall_s"] = statistics.median(r["wall_s"] for r in rs)
                cell["peak_rss_kib"] = statistics.median(r["peak_rss_kib"] for r in rs)
                el = [r["elapsed_s"] for r in rs if r["elapsed_s"] is not None]
                cell["elapsed_s"] = statistics.median(el) if el else None
                cell["wall_spread"] = (max(r["wall_s"] for r in rs) - min(r["wall_s"] for r in rs)) \
                    / 2 / cell["wall_s"] if cell["wall_s"] > 0 else 0.0
            summ[w][k] = cell
        ours = summ[w].get("ours", {})
        for k, cell in summ[w].items():
            for key, rkey in (("wall_s", "time_ratio"), ("peak_rss_kib", "rss_ratio")):
                if cell.get(key) is not None and ours.get(key):
                    cell[rkey] = cell[key] / ours[key]
                else:
                    cell[rkey] = None
    geo = {}
    for a in allocs:
        k = a["key"]
        geo[k] = dict(time_ratio=geomean([summ[w][k]["time_ratio"] for w in summ]),
                      rss_ratio=geomean([summ[w][k]["rss_ratio"] for w in summ]),
                      workloads=sum(1 for w in summ if summ[w][k]["time_ratio"] is not None))
    return summ, geo


def fmt_ratio(x):
    return "n/a" if x is None else "%.2f" % x


def table(items, allocs, summ, geo, what):
    key, rkey = ("wall_s", "time_ratio") if what == "time" else ("peak_rss_kib", "rss_ratio")
    head = "| workload | " + " | ".join(a["name"] for a in allocs) + " |"
    lines = [head, "|---" + "|---:" * len(allocs) + "|"]
    for it in items:
        cells = []
        for a in allocs:
            c = summ[it["name"]][a["key"]]
            if c["status"] == "fail":
                cells.append("fail")
            elif c.get(key) is None:
                cells.append("-")
            else:
                v = "%.3f" % c[key] if what == "time" else "%.1f" % (c[key] / 1024.0)
                cells.append(v if a["key"] == "ours" else "%s (%s)" % (v, fmt_ratio(c[rkey])))
        lines.append("| %s | %s |" % (it["name"], " | ".join(cells)))
    lines.append("| **geometric mean of the ratios** | " + " | ".join(
        "1.00" if a["key"] == "ours" else "**%s**" % fmt_ratio(geo[a["key"]][rkey])
        for a in allocs) + " |")
    return lines


def best_peers(items, allocs, summ, geo):
    """Per workload: the fastest and the leanest peer and ours relative to them (ours / it:
    above 1.00 we are slower or use more); then the geometric means against the best peer."""
    peers = [a for a in allocs if a["key"] != "ours"]
    name = {a["key"]: a["name"] for a in allocs}
    L = ["| workload | ours s | fastest peer | its s | ours / it | ours MiB | leanest peer | its MiB | ours / it |",
         "|---|---:|---|---:|---:|---:|---|---:|---:|"]
    t_ratios, r_ratios = [], []
    for it in items:
        w = it["name"]
        ours = summ[w].get("ours", {})
        if ours.get("wall_s") is None:
            continue
        cells = [w]
        for key, ratios, unit in (("wall_s", t_ratios, 1.0), ("peak_rss_kib", r_ratios, 1024.0)):
            have = [(summ[w][a["key"]][key], a["key"]) for a in peers if summ[w][a["key"]].get(key)]
            if not have:
                cells += ["%.2f" % (ours[key] / unit), "-", "-", "-"]
                continue
            best, k = min(have)
            ratios.append(ours[key] / best)
            fmt = "%.2f" if key == "wall_s" else "%.1f"
            cells += [fmt % (ours[key] / unit), name[k], fmt % (best / unit), "%.2f" % (ours[key] / best)]
        L.append("| " + " | ".join(cells) + " |")
    g_t, g_r = geomean(t_ratios), geomean(r_ratios)
    L.append("| **geometric mean** | | | | **%s** | | | | **%s** |" % (fmt_ratio(g_t), fmt_ratio(g_r)))
    L.append("")
    timed = [a for a in peers if geo[a["key"]]["time_ratio"]]
    if timed:
        best_t = min(timed, key=lambda a: geo[a["key"]]["time_ratio"])
        L.append("Time, ours / the fastest peer by geometric mean (%s): %.2f. Peak RSS, ours / each peer "
                 "by geometric mean: " % (best_t["name"], 1.0 / geo[best_t["key"]]["time_ratio"]) +
                 ", ".join("%s %.2f" % (a["name"], 1.0 / geo[a["key"]]["rss_ratio"])
                           for a in peers if geo[a["key"]]["rss_ratio"]) + ".")
        L.append("")
    return L


def reported_figures(items, allocs, runs):
    """Tables of the memory figures programs measure themselves (RESULT fields ending in _mib
    that name an address space or a resident set, e.g. thread-churn's at the end): medians per
    allocator."""
    L = []
    for it in items:
        w = it["name"]
        keys = []
        for r in runs:
            if r["workload"] == w and r["ok"]:
                keys += [k for k in r.get("result", {}) if k.endswith("_mib") and k not in keys
                         and ("rss" in k or "vsz" in k)]
        if not keys:
            continue
        L.append("### %s" % w)
        L.append("")
        L.append("| allocator | " + " | ".join(k[:-4].replace("_", " ") + " (MiB)" for k in keys) + " |")
        L.append("|---|" + "---|" * len(keys))
        for a in allocs:
            cells = []
            for k in keys:
                xs = []
                for r in runs:
                    if r["workload"] == w and r["allocator"] == a["key"] and r["ok"]:
                        try:
                            xs.append(float(r["result"][k]))
                        except (KeyError, ValueError):
                            pass
                cells.append("%.1f" % statistics.median(xs) if xs else "-")
            L.append("| %s | %s |" % (a["name"], " | ".join(cells)))
        L.append("")
    if L:
        L = ["## Memory figures the programs report", "",
             "Medians of what the programs measure themselves (see each program's comment; "
             "vsz: address space, /proc/self/statm size; rss: resident set).", ""] + L
    return L


PER_PROCESS = (("_us", "us"), ("_faults", "page faults"))


def reported_times(items, allocs, runs):
    """Tables of the per-process figures programs measure themselves (RESULT fields ending in
    _us or _faults, e.g. spawn's start-up cost per process): medians per allocator, with the
    difference to glibc's."""
    L = []
    base = next((a["key"] for a in allocs if a["key"] == "glibc"), None)
    for it in items:
        w = it["name"]
        keys = []
        for r in runs:
            if r["workload"] == w and r["ok"]:
                keys += [k for k in r.get("result", {}) if k not in keys
                         and any(k.endswith(suffix) for suffix, _ in PER_PROCESS)]
        if not keys:
            continue

        def med(key, alloc):
            xs = []
            for r in runs:
                if r["workload"] == w and r["allocator"] == alloc and r["ok"]:
                    try:
                        xs.append(float(r["result"][key]))
                    except (KeyError, ValueError):
                        pass
            return statistics.median(xs) if xs else None

        L.append("### %s" % w)
        L.append("")
        def title(k):
            suffix, unit = next((s, u) for s, u in PER_PROCESS if k.endswith(s))
            return "%s (%s)" % (k[:-len(suffix)].replace("_", " "), unit)

        L.append("| allocator | " + " | ".join(title(k) for k in keys) + " |")
        L.append("|---|" + "---|" * len(keys))
        for a in allocs:
            cells = []
            for k in keys:
                x = med(k, a["key"])
                b = med(k, base) if base else None
                if x is None:
                    cells.append("-")
                elif b is None or a["key"] == base:
                    cells.append("%.0f" % x)
                else:
                    cells.append("%.0f (%+.0f)" % (x, x - b))
            L.append("| %s | %s |" % (a["name"], " | ".join(cells)))
        L.append("")
    if L:
        L = ["## Per-process figures the programs report", "",
             "Medians of what the programs measure themselves per process (see each program's "
             "comment; spawn: the wall time from posix_spawn to the end of waitpid of each "
             "short-lived child, i.e. its whole start-up, run and exit, and its minor page "
             "faults); in parentheses the difference to glibc.", ""] + L
    return L


def report(ctx, items, allocs, runs, failed, summ, geo, stem):
    args = ctx["args"]
    m = ctx["machine"]
    L = []
    L.append("# Allocator benchmark suite%s" % (" (quick)" if args.quick else ""))
    L.append("")
    L.append("Date: %s; total time %.0f s; %d repetition(s), allocators interleaved in a rotated "
             "order; load average (1 min) before %.2f, after %.2f%s."
             % (ctx["date"], ctx["total_s"], args.reps, ctx["load_before"], ctx["load_after"],
                " -- other work was running: the times may be disturbed"
                if max(ctx["load_before"], ctx["load_after"]) > 0.5 else ""))
    L.append("")
    L.append("Machine: %s, %d cores, %s memory; %s; %s; %s."
             % (m["cpu"], m["cores"], m["memory"], m["kernel"], m["os"], m["compiler"]))
    L.append("")
    L.append("## Wall time (s)")
    L.append("")
    L.append("Median wall time of the whole process (fork to exit; real programs: what "
             "bench/real.py measures); in parentheses the ratio to ours "
             "(peer / ours: above 1.00 the peer is slower than ours).")
    L.append("")
    L += table(items, allocs, summ, geo, "time")
    L.append("")
    L.append("## Peak RSS (MiB)")
    L.append("")
    L.append("Median peak resident set size (ru_maxrss of the process and its waited-for "
             "children; for real programs what bench/real.py measures); in parentheses the ratio "
             "to ours (above 1.00 the peer uses more memory than ours).")
    L.append("")
    L += table(items, allocs, summ, geo, "rss")
    L.append("")
    L.append("## Against the best peer")
    L.append("")
    L.append("Per workload the fastest and the leanest peer (medians as above) and ours relative "
             "to it (ours / it: above 1.00 we are slower or use more memory); the geometric mean "
             "row is over these per-workload ratios, whichever peer is best on each.")
    L.append("")
    L += best_peers(items, allocs, summ, geo)
    L += reported_figures(items, allocs, runs)
    L += reported_times(items, allocs, runs)
    if stem:
        L.append("![time and peak RSS relative to ours](%s.svg)" % stem)
        L.append("")
    if failed:
        L.append("## Failures")
        L.append("")
        for (w, k), why in failed.items():
            name = next(a["name"] for a in allocs if a["key"] == k)
            L.append("- %s under %s: %s" % (w, name, why))
        L.append("")
    L.append("## Allocators")
    L.append("")
    L.append("| key | name | version | from | LD_PRELOAD object |")
    L.append("|---|---|---|---|---|")
    for a in allocs:
        L.append("| %s | %s | %s | %s | %s |" % (a["key"], a["name"], a["version"], a["source"],
                                                 a["lib"] or "(none: glibc)"))
    L.append("")
    L.append("Each run: `LD_PRELOAD=\"<object> <origin.so>\"` (glibc: `<origin.so>` only) and "
             "`BENCH_ORIGIN_FILE=<fresh file>` in an environment without `MIMALLOC_*`, "
             "`MALLOC_*`, `GLIBC_TUNABLES` or an inherited `LD_PRELOAD`. Every process of every "
             "run recorded the object that defines its `malloc` (bench/origin.c), and the "
             "programs' `RESULT ... alloc_from=`; any mismatch makes the cell `fail`.")
    L.append("")
    for a in allocs:
        if a.get("note") and a["key"] not in ("glibc",):
            L.append("- %s: %s" % (a["name"], a["note"]))
    L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    L.append(ctx["command"])
    L.append("```")
    L.append("")
    L.append("Build: `%s` (each program; `%s` for origin.so)."
             % (ctx["compile_example"], ctx["origin_cmd"]))
    L.append("")
    L.append("| workload | command (in the build directory) | models |")
    L.append("|---|---|---|")
    for it in items:
        L.append("| %s | `%s` | %s |" % (it["name"], it["command"], it.get("models", "")))
    L.append("")
    if ctx["skipped"]:
        L.append("Skipped: " + "; ".join(ctx["skipped"]))
        L.append("")
    return "\n".join(L) + "\n"


def chart(json_path, stem_path, args):
    """Run chart.py with Debian's python3 (matplotlib); never fails the suite."""
    py = "/usr/bin/python3"
    if not os.path.exists(py):
        note("SKIP chart: no /usr/bin/python3")
        return False

    def has_mpl():
        return subprocess.run([py, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    if not has_mpl():
        import peers as peers_mod  # apt_ensure: apt-get update once, then install
        note("chart: python3-matplotlib missing for %s" % py)
        peers_mod.apt_ensure(["python3-matplotlib"], args)
        if not has_mpl():
            note("SKIP chart: matplotlib is not available to %s" % py)
            return False
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    try:
        r = subprocess.run([py, os.path.join(BENCH_DIR, "chart.py"), json_path, stem_path],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=300)
    except subprocess.TimeoutExpired:
        note("SKIP chart: chart.py took too long")
        return False
    if r.returncode != 0:
        note("SKIP chart: chart.py failed:\n" + r.stderr[-2000:])
        return False
    return True


def hms(s):
    s = int(round(s))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else \
        "%d:%02d" % (s // 60, s % 60)


# ---------------------------------------------------------------------------------------------

def main(argv):
    args = parse_args(argv)
    t_begin = time.monotonic()
    cc = os.environ.get("CC", "cc")
    command = "bench/suite.sh" + "".join(" " + a for a in argv)

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
        ours = ours_allocator(args)
    except RuntimeError as e:
        note("error: %s" % e)
        return 1
    allocs = []
    if not args.allocators or "ours" in args.allocators:
        allocs.append(ours)
    else:
        note("note: --allocators without ours: no ratios")
    try:
        import peers as peers_mod
        note("peers: checking (installing/building what is missing)")
        allocs += peers_mod.peers(args)
    except Exception as e:  # noqa: BLE001 (no peers is not fatal)
        peers_mod = None
        note("SKIP all peers: bench/peers.py failed: %r" % e)
    unknown = args.allocators - set(a["key"] for a in allocs)
    if unknown:
        note("note: allocators not available: %s" % ", ".join(sorted(unknown)))
        skipped.append("allocators not available: %s" % ", ".join(sorted(unknown)))
    note("allocators: " + ", ".join("%s [%s]" % (a["name"], a["key"]) for a in allocs))

    tmp = tempfile.mkdtemp(prefix="alloc-suite-")
    try:
        origin_so, origin_cmd = build_origin(cc, tmp)
        launcher = build_launcher(cc, tmp)
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
                missing = peers_mod.apt_ensure(list(w.packages), args) if peers_mod else []
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
                              command=getattr(w, "command", None) or "bench/real.py: %s.run()"
                              % w.name))
        if not items:
            note("error: nothing left to run")
            return 2

        ctx = dict(args=args, tmp=tmp, origin_so=origin_so, launcher=launcher, timeout=args.timeout,
                   quick=args.quick, machine=machine(cc), command=command,
                   origin_cmd=origin_cmd, skipped=skipped,
                   compile_example="%s %s <src> -o <exe> %s" % (cc, " ".join(CFLAGS),
                                                               " ".join(LIBS)))
        ctx["load_before"] = common.loadavg()

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
        ctx["load_after"] = common.loadavg()
        summ, geo = summarize(items, allocs, runs, failed)
        ctx["total_s"] = time.monotonic() - t_begin
        ctx["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")

        # output
        os.makedirs(args.out, exist_ok=True)
        host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"
        stem = "%s-%s%s" % (time.strftime("%Y%m%d-%H%M%S"), host, "-quick" if args.quick else "")
        base = os.path.join(args.out, stem)
        data = dict(
            command=command, argv=argv, date=ctx["date"], quick=args.quick, reps=args.reps,
            timeout_s=args.timeout, total_s=round(ctx["total_s"], 2), machine=ctx["machine"],
            load_before=ctx["load_before"], load_after=ctx["load_after"],
            build=dict(cc=cc, cflags=CFLAGS, libs=LIBS, programs=cmds, origin=origin_cmd,
                       ours_lib=ours["lib"], ours_version=ours["version"]),
            allocators=[{k: v for k, v in a.items()} for a in allocs],
            workloads=[{k: v for k, v in it.items() if k not in ("real", "exe")}
                       for it in items],
            skipped=skipped,
            runs=runs,
            summary=summ, geomean=geo,
            failures=[dict(workload=w, allocator=k, error=e) for (w, k), e in failed.items()])
        with open(base + ".json", "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        have_chart = chart(base + ".json", base, args)
        text = report(ctx, items, allocs, runs, failed, summ, geo, stem if have_chart else None)
        with open(base + ".md", "w") as f:
            f.write(text)
        print(text)
        note("wrote %s.md and .json%s" % (base, " and .png/.svg" if have_chart else ""))
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
