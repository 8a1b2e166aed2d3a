# SPDX-License-Identifier: MIT
"""Build the allocator micro-benchmarks and compare allocators (python3 standard library only).

  bench/bench.py micro [--build-dir DIR] [--reps N] [--quick]   throughput table (markdown)
  bench/bench.py micro --callgrind [--build-dir DIR] [--quick]  instructions per malloc+free pair
                                                                (bench/callgrind.sh)

Allocators compared (each row is skipped with a message when it is not available):
  glibc                    plain malloc/free build, nothing preloaded
  mimalloc 2.0.9 (Debian)  plain build with LD_PRELOAD=libmimalloc.so.2            ("malloc" calls)
                           -DBENCH_USE_MI build linked to Debian's -lmimalloc       ("mi_" calls)
  ours                     plain build with LD_PRELOAD=<build>/libmimalloc.so, only if that
                           library exports `malloc`                                 ("malloc" calls)
                           -DBENCH_USE_MI build against <repo>/include, linked to
                           <build>/libmimalloc.so with an rpath                      ("mi_" calls)
Every run prints which shared object defines the allocation function it calls (dladdr); a run
whose allocator is not the expected one is an error, so a table never shows a mislabelled row.
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import sys
import tempfile

from benchlib import debian, ours, origin
from benchlib.common import BENCH_DIR, REPO_DIR, add_build_dir_option, clean_env, loadavg, \
    machine_info, note, parse_result, run

CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra"]
LIBS = ["-ldl", "-lpthread"]
PROGRAMS = ["bench-st", "bench-xthread", "bench-pair", "bench-fast"]

# name, program, arguments (normal), arguments (--quick)
BENCHMARKS = [
    ("st", "bench-st", ["-n", "50000000", "-l", "4096"], ["-n", "300000", "-l", "1024"]),
    ("st-100k", "bench-st", ["-n", "20000000", "-l", "100000"], ["-n", "300000", "-l", "100000"]),
    ("xthread", "bench-xthread", ["-n", "5000000", "-r", "1024"], ["-n", "100000", "-r", "1024"]),
    ("xthread-both", "bench-xthread", ["-b", "-n", "5000000", "-r", "4096"], ["-b", "-n", "100000", "-r", "4096"]),
]
PAIR_SIZES = [16, 64, 256, 1024]


# ---------------------------------------------------------------------------------------------
# peers and our library

def debian_mimalloc():
    """(runtime .so, header present?) of Debian's libmimalloc2.0, or (None, False)."""
    libs = sorted(glob.glob("/usr/lib/*/libmimalloc.so.2") + glob.glob("/usr/lib/libmimalloc.so.2"))
    devel = os.path.exists("/usr/include/mimalloc.h") and bool(
        glob.glob("/usr/lib/*/libmimalloc.so") + glob.glob("/usr/lib/libmimalloc.so"))
    return (libs[0] if libs else None), devel


def ensure_debian_mimalloc():
    lib, devel = debian_mimalloc()
    if lib is None or not devel:
        note("Debian mimalloc (libmimalloc2.0 / libmimalloc-dev) missing: installing")
        debian.ensure(["libmimalloc2.0", "libmimalloc-dev"])
        lib, devel = debian_mimalloc()
    if lib is None:
        note("SKIP Debian mimalloc: libmimalloc.so.2 not installed")
    elif not devel:
        note("SKIP Debian mimalloc mi_ API build: libmimalloc-dev (header, -lmimalloc) missing")
    return lib, devel


def debian_mimalloc_name():
    """'mimalloc 2.0.9' from the installed package's version, or 'mimalloc (Debian)'."""
    v = debian.version("libmimalloc2.0")
    return "mimalloc %s" % v if v else "mimalloc (Debian)"


# ---------------------------------------------------------------------------------------------
# building

def compile_one(cc, src, out, extra_before, extra_after):
    cmd = [cc] + CFLAGS + extra_before + ["-o", out, src] + extra_after + LIBS
    r = run(cmd)
    if r.returncode != 0:
        note("build failed: " + " ".join(cmd) + "\n" + r.stderr)
        return False
    if r.stderr.strip():
        note("warnings from: " + " ".join(cmd) + "\n" + r.stderr)
    return True


def build(cc, out_dir, variant, ours_lib=None, include_dir=None):
    """Build every program in one variant: 'plain', 'mi-debian' or 'mi-ours'. True on success."""
    ok = True
    for prog in PROGRAMS:
        src = os.path.join(BENCH_DIR, prog + ".c")
        exe = os.path.join(out_dir, prog + "-" + variant)
        if variant == "plain":
            ok &= compile_one(cc, src, exe, [], [])
        elif variant == "mi-debian":
            ok &= compile_one(cc, src, exe, ["-DBENCH_USE_MI"], ["-lmimalloc"])
        else:
            libdir = os.path.dirname(os.path.abspath(ours_lib))
            ok &= compile_one(cc, src, exe, ["-DBENCH_USE_MI", "-I" + include_dir],
                              [os.path.abspath(ours_lib), "-Wl,-rpath," + libdir])
    return ok


def setup(args):
    """Build the variants and return the list of allocator configurations to run."""
    cc = os.environ.get("CC", "cc")
    out_dir = args.out or tempfile.mkdtemp(prefix="mi-bench-")
    os.makedirs(out_dir, exist_ok=True)
    args.made_dir = out_dir
    note("building benchmarks in %s with %s %s" % (out_dir, cc, " ".join(CFLAGS)))
    if not build(cc, out_dir, "plain"):
        sys.exit("cannot build the benchmarks")
    configs = [dict(name="glibc", calls="malloc", variant="plain", preload=None, expect="libc")]

    deb_lib, deb_devel = ensure_debian_mimalloc()
    deb_name = debian_mimalloc_name()
    if deb_lib:
        configs.append(dict(name=deb_name, calls="malloc", variant="plain",
                            preload=deb_lib, expect=deb_lib))
        if deb_devel and build(cc, out_dir, "mi-debian"):
            configs.append(dict(name=deb_name, calls="mi_", variant="mi-debian",
                                preload=None, expect=deb_lib))

    build_dir = os.path.abspath(args.build_dir)
    ours_lib = ours.find(build_dir)
    include_dir = os.path.abspath(args.include_dir)
    if ours_lib is None:
        note("SKIP ours: no libmimalloc.so under %s (build it first: cmake -B build -G Ninja && "
             "cmake --build build, at the repository root)" % build_dir)
    elif not os.path.exists(os.path.join(include_dir, "mimalloc.h")):
        note("SKIP ours: no mimalloc.h in %s" % include_dir)
    else:
        note("ours: %s" % ours_lib)
        if ours.exports_malloc(ours_lib):
            configs.append(dict(name="ours", calls="malloc", variant="plain", preload=ours_lib,
                                expect=ours_lib))
        else:
            note("  ours does not export malloc (no override yet): only the mi_ API build runs")
        if build(cc, out_dir, "mi-ours", ours_lib=ours_lib, include_dir=include_dir):
            configs.append(dict(name="ours", calls="mi_", variant="mi-ours", preload=None,
                                expect=ours_lib))
        else:
            note("SKIP ours mi_ API build: it did not compile/link")
    for c in configs:
        c["label"] = "%s (%s)" % (c["name"], "mi_malloc" if c["calls"] == "mi_" else
                                  ("LD_PRELOAD" if c["preload"] else "malloc"))
    return out_dir, configs


# ---------------------------------------------------------------------------------------------
# running

def run_prog(out_dir, cfg, prog, argv, wrapper=()):
    exe = os.path.join(out_dir, prog + "-" + cfg["variant"])
    env = clean_env()
    if cfg["preload"]:
        env["LD_PRELOAD"] = cfg["preload"]
    r = run(list(wrapper) + [exe] + argv, env=env)
    res = parse_result(r.stdout)
    if r.returncode != 0 or res is None:
        raise RuntimeError("%s failed (exit %d):\n%s%s" % (" ".join([exe] + argv), r.returncode,
                                                            r.stdout, r.stderr))
    res["from"] = origin.check_result(cfg["label"], cfg["expect"], res)
    return res, r.stderr


def fmt_mops(values):
    med = statistics.median(values)
    spread = (max(values) - min(values)) / 2 / med * 100 if med > 0 else 0
    return med, "%.1f ±%.0f%%" % (med / 1e6, spread) if len(values) > 1 else "%.1f" % (med / 1e6)


def reference(configs, cfg):
    """The 'ours' row a row is compared with: same call style if present, else the other one."""
    ours = [c for c in configs if c["name"] == "ours"]
    same = [c for c in ours if c["calls"] == cfg["calls"]]
    return (same or ours or [None])[0]


def load_line(before, after):
    busy = max(before, after) > 0.5
    return "Load average (1 min) before: %.2f, after: %.2f%s" % (
        before, after, " -- other work was running; the numbers may be disturbed" if busy else "")


def throughput(args):
    out_dir, configs = setup(args)
    load_before = loadavg()
    reps = 1 if args.quick and args.reps is None else (args.reps or 5)
    results = {}  # (label, bench) -> [ops/s]
    origin = {}
    xcore = []  # cross-core latency probes of bench-xthread, ns
    for rep in range(reps):
        for bname, prog, normal, quick in BENCHMARKS:
            for cfg in configs:  # interleaved: A B C A B C ...
                res, _ = run_prog(out_dir, cfg, prog, quick if args.quick else normal)
                ops = float(res["ops_per_sec"])
                if int(res.get("xcore_ns", "-1")) > 0:
                    xcore.append(int(res["xcore_ns"]))
                results.setdefault((cfg["label"], bname), []).append(ops)
                origin[cfg["label"]] = "%s (mi_version %s)" % (res["from"], res["mi_version"]) \
                    if res["mi_version"] != "0" else res["from"]
                note("rep %d/%d %-8s %-28s %8.2f Mops/s%s"
                     % (rep + 1, reps, bname, cfg["label"], ops / 1e6,
                        "  (cross-core %s ns)" % res["xcore_ns"] if "xcore_ns" in res else ""))

    print()
    print("Machine: %s  " % machine_info(os.environ.get("CC", "cc")))
    print(load_line(load_before, loadavg()) + "  ")
    print("Command: `bench/bench.py micro %s`; %d repetition(s), allocators interleaved; "
          "median ops/s in millions (± half the min-max range)." % (" ".join(args.argv), reps))
    print("Parameters: " + "; ".join("%s = %s %s" % (b, p, " ".join(q if args.quick else n))
                                     for b, p, n, q in BENCHMARKS))
    print()
    head = "| allocator |" + "".join(" %s Mops/s | vs ours |" % b for b, _, _, _ in BENCHMARKS) \
        + " allocation function served by |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for cfg in configs:
        ref = reference(configs, cfg)
        row = "| %s |" % cfg["label"]
        for bname, _, _, _ in BENCHMARKS:
            med, text = fmt_mops(results[(cfg["label"], bname)])
            if ref is None:
                ratio = "n/a"
            else:  # median of per-repetition ratios: neighbours in time share the conditions
                ratio = "%.2f" % statistics.median(
                    a / b for a, b in zip(results[(cfg["label"], bname)],
                                          results[(ref["label"], bname)]))
            row += " %s | %s |" % (text, ratio)
        print(row + " %s |" % origin[cfg["label"]])
    print()
    if xcore:
        noisy = max(xcore) >= 1.5 * min(xcore)
        print("xthread: cross-core hand-off latency measured before each run: %d..%d ns%s"
              % (min(xcore), max(xcore), " -- it changed during the runs (other load, or VM CPU "
                 "placement), so xthread results are noisy" if noisy else ""))
        print()
    if not any(c["name"] == "ours" for c in configs):
        print("(ours skipped: library not found under %s; ratios unavailable)"
              % os.path.abspath(args.build_dir))
    else:
        print("vs ours = median over the repetitions of (this row's ops/s / ours' ops/s in the "
              "same repetition); ours = 1.00, below 1 means slower than ours. `malloc` and "
              "LD_PRELOAD rows are compared with ours (LD_PRELOAD) when it exists, `mi_malloc` "
              "rows with ours (mi_malloc), else with the other ours row.")
    cleanup(args, out_dir)


# ---------------------------------------------------------------------------------------------
# callgrind

def callgrind_total(out_dir, cfg, size, n, keep):
    cg_out = os.path.join(out_dir, "callgrind.out.%p")
    wrapper = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + cg_out]
    res, err = run_prog(out_dir, cfg, "bench-pair", [str(size), str(n), str(keep)], wrapper)
    m = re.findall(r"Collected\s*:\s*(\d+)", err)
    if not m:
        raise RuntimeError("no 'Collected' line in callgrind output:\n" + err)
    for f in glob.glob(os.path.join(out_dir, "callgrind.out.*")):
        os.remove(f)
    return int(m[-1]), res


def callgrind_calls(out_dir, cfg, mode, size, rounds, fn):
    """Instructions inside `fn` (malloc or free, with everything they call) over a bench-fast
    run: callgrind with --toggle-collect on the function's names."""
    names = [fn, "mi_" + fn, "__libc_" + fn] + (["cfree", "__libc_cfree"] if fn == "free" else [])
    wrapper = (["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
               + ["--toggle-collect=" + x for x in names])
    res, err = run_prog(out_dir, cfg, "bench-fast", [mode, str(size), str(rounds)], wrapper)
    m = re.findall(r"Collected\s*:\s*(\d+)", err)
    if not m:
        raise RuntimeError("no 'Collected' line in callgrind output:\n" + err)
    return int(m[-1]), res


FAST_BATCH = 64  # blocks per round in bench-fast.c


def per_call_table(args, out_dir, configs):
    """Rows of instructions per malloc call, per same-thread free and per cross-thread free."""
    rounds = 500 if args.quick else 4000
    cols = [("malloc", "local", s) for s in PAIR_SIZES] + [("free", "local", s) for s in PAIR_SIZES] \
        + [("malloc", "remote", 64), ("free", "remote", 64)]
    rows = []
    for cfg in configs:
        cells = []
        for fn, mode, size in cols:
            a, res = callgrind_calls(out_dir, cfg, mode, size, rounds, fn)
            b, _ = callgrind_calls(out_dir, cfg, mode, size, 2 * rounds, fn)
            cells.append((b - a) / (rounds * FAST_BATCH))
            note("%-28s %-6s %-6s %5d B: %.2f instructions per call"
                 % (cfg["label"], fn, mode, size, cells[-1]))
        rows.append((cfg, cells, res["from"]))
    return cols, rows, rounds


def fast_peers(args):
    """The newest mimalloc v2 and v3 (built from the libmimalloc-sys crate by bench/peers.py),
    as LD_PRELOAD configurations; [] when they cannot be had."""
    try:
        from benchlib import peers as peer_mod
        ns = argparse.Namespace(allocators={"mimalloc2", "mimalloc3"}, no_install=False)
        got = peer_mod.mimalloc_crate_peers(ns)
    except Exception as e:  # noqa: BLE001 (optional rows)
        note("SKIP newest mimalloc rows: %s" % e)
        return []
    return [dict(name=p["name"], calls="malloc", variant="plain", preload=p["lib"],
                 expect=p["lib"], label="%s (LD_PRELOAD)" % p["name"]) for p in got if p.get("lib")]


def callgrind(args):
    if shutil.which("valgrind") is None:
        note("valgrind missing: installing")
        if debian.ensure(["valgrind"]) or shutil.which("valgrind") is None:
            sys.exit("valgrind is not available")
    out_dir, configs = setup(args)
    n = 20000 if args.quick else 200000

    def per_pair(cfg, size, keep):
        a, res = callgrind_total(out_dir, cfg, size, n, keep)
        b, _ = callgrind_total(out_dir, cfg, size, 2 * n, keep)
        return (b - a) / n, res

    loop, _ = per_pair(configs[0], 0, 0)
    note("loop overhead without allocation: %.2f instructions per iteration" % loop)
    tables = []
    # keep=1: another block of the same size stays live, so the page never empties (fast paths);
    # keep=0: the block is alone, so every free empties its page (shows page-retire costs)
    for keep in (1, 0):
        rows = []
        for cfg in configs:
            cells, origin = [], ""
            for size in PAIR_SIZES:
                raw, res = per_pair(cfg, size, keep)
                origin = res["from"]
                cells.append(raw - loop)
                note("keep=%d %-28s size %5d: %.1f instructions per pair"
                     % (keep, cfg["label"], size, raw - loop))
            rows.append((cfg, cells, origin))
        tables.append((keep, rows))

    print()
    print("Machine: %s  " % machine_info(os.environ.get("CC", "cc")))
    print("Command: `bench/callgrind.sh %s`" % " ".join(a for a in args.argv if a != "--callgrind"))
    print()
    print("Instructions per `p = malloc(size); p[0] = x; free(p);` (callgrind Ir), computed as "
          "(Ir(2N) - Ir(N)) / N with N = %d so that start-up and exit cancel, minus the loop's "
          "own %.1f instructions; the call instructions and the PLT jump are included." % (n, loop))
    for keep, rows in tables:
        print()
        if keep:
            print("Fast paths: one other block of the same size stays allocated, so the page "
                  "never becomes empty (`bench-pair SIZE N 1`):")
        else:
            print("Block alone in its page: every free empties the page, so page-retire work "
                  "shows (`bench-pair SIZE N 0`):")
        print()
        head = "| allocator |" + "".join(" %d B |" % s for s in PAIR_SIZES) + " served by |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for cfg, cells, origin in rows:
            print("| %s |" % cfg["label"] + "".join(" %.1f |" % c for c in cells)
                  + " %s |" % origin)
    preload = [c for c in configs if c["preload"]] + ([] if args.quick else fast_peers(args))
    cols, rows, rounds = per_call_table(args, out_dir, preload)
    print()
    print("Instructions per call (callgrind Ir inside `malloc` or `free`, including what they "
          "call, with --toggle-collect; (Ir(2R) - Ir(R)) / (%d R) with R = %d rounds of "
          "`bench-fast`): each round mallocs %d blocks of one size and frees them in the same "
          "order (`local`), or another thread frees them (`remote`, a cross-thread free). The "
          "call and the PLT jump are not included; the refill of the free list once per round "
          "is." % (FAST_BATCH, rounds, FAST_BATCH))
    print()
    head = "| allocator |" + "".join(" %s %s%d B |" % (fn, "remote " if mode == "remote" else "", size)
                                     for fn, mode, size in cols)
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for cfg, cells, origin in rows:
        print("| %s |" % cfg["label"] + "".join(" %.1f |" % c for c in cells))
    cleanup(args, out_dir)


def cleanup(args, out_dir):
    if args.out is None and not args.keep:
        shutil.rmtree(out_dir, ignore_errors=True)


def main(argv):
    p = argparse.ArgumentParser(prog="bench.py micro", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    add_build_dir_option(p)
    p.add_argument("--include-dir", default=os.path.join(REPO_DIR, "include"),
                   help="our public headers (default: <repo>/include)")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 5; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repetition")
    p.add_argument("--out", default=None, help="where to build the benchmarks (default: temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    p.add_argument("--callgrind", action="store_true",
                   help="count instructions per malloc+free pair instead (bench/callgrind.sh)")
    args = p.parse_args(argv)
    args.argv = list(argv)
    if args.reps is not None and args.reps < 1:
        p.error("--reps must be at least 1")
    args.made_dir = None
    try:
        (callgrind if args.callgrind else throughput)(args)
        return 0
    except RuntimeError as e:
        sys.exit("error: %s" % e)
    finally:
        if args.made_dir:
            cleanup(args, args.made_dir)

