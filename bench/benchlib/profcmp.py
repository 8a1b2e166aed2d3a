# SPDX-License-Identifier: MIT
"""Our heap profiler's call sites against jemalloc's profiler and gperftools' heap profiler
(python3 standard library only).

  bench/bench.py profcmp [--build-dir D] [--rate R] [--top N] [--no-install] -- PROGRAM [ARGS ...]

Runs PROGRAM three times, in an environment without MIMALLOC_*, MALLOC_* or GLIBC_TUNABLES:
  ours      LD_PRELOAD=<build>/libmimalloc.so MIMALLOC_PROFILE=... MIMALLOC_PROFILE_RATE=R
  jemalloc  Debian's libjemalloc2 with MALLOC_CONF=prof:true,prof_accum:true,prof_final:true,
            lg_prof_sample:log2(R) (the same rate; read with jeprof from libjemalloc-dev)
  exact     gperftools' tcmalloc (libgoogle-perftools4) with HEAPPROFILE, which records every
            allocation: the true figures the two samplers estimate
and prints, for the bytes allocated in total (alloc_space) and the bytes still allocated at
exit (inuse_space), each function's share of the total in the three profiles: the function
that called the allocator (allocator frames hidden), the `flat` column of `pprof -top` and
`jeprof --text`. Then, per sampler, the largest difference from the exact share in percentage
points and whether its top sites are the exact top sites in the same order.

The shares of a sampled profile have a sampling error of about sqrt(p(1-p)/n) for n samples:
a site with 10% of the bytes in 1000 samples is within +-1 point two times in three. Nothing
is asserted; the sites' agreement is the figure to quote (docs/profiler.md).
"""
import argparse
import ctypes
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

from benchlib import debian, ours
from benchlib.common import add_build_dir_option, clean_env, note, parse_with_command

JEMALLOC = ("libjemalloc2", r"libjemalloc\.so\.2")
JEPROF = "libjemalloc-dev"
TCMALLOC = ("libgoogle-perftools4", r"libtcmalloc\.so\.4(\.\d+)*")
# the allocators' own frames, hidden so that a sample belongs to the function that called it
HIDE = (r"^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|"
        r"operator new.*|je_.*|imalloc.*|prof_.*|tc_.*|.*tcmalloc.*|mi_.*|_mi_.*)$")


def parse_args(argv):
    if "--" not in argv and not ("-h" in argv or "--help" in argv):
        argv = argv + ["-h"]
    p = argparse.ArgumentParser(prog="bench.py profcmp", description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    add_build_dir_option(p)
    p.add_argument("--rate", type=int, default=524288,
                   help="bytes per sample, a power of two (default 524288, both libraries' default)")
    p.add_argument("--top", type=int, default=8, help="functions listed per profile (default 8)")
    p.add_argument("--usable-rate", type=int, default=16384,
                   help="one more run of ours at this low rate (default 16384; 0: none): nearly\n"
                        "every block's usable size, what both samplers count, which differs from\n"
                        "the exact (requested) sizes by the size classes' rounding")
    p.add_argument("--by", choices=("function", "address"), default="function",
                   help="a site is the function that called the allocator (default), or the\n"
                        "call's return address (the runs have address randomisation off)")
    p.add_argument("--runs", type=int, default=1,
                   help="runs of each sampler, their shares averaged (default 1: what one run shows)")
    p.add_argument("--no-install", action="store_true", help="no apt-get: use what is there")
    args = parse_with_command(p, argv)
    if args.rate < 1 or args.rate & (args.rate - 1):
        p.error("--rate must be a power of two (jemalloc's lg_prof_sample)")
    return args


def pprof_path():
    """The pprof tool: on PATH, or where `go install` put it (GOPATH/bin)."""
    cands = [shutil.which("pprof")]
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go:
        r = subprocess.run([go, "env", "GOPATH"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True)
        if r.returncode == 0 and r.stdout.strip():
            cands.append(os.path.join(r.stdout.strip().split(os.pathsep)[0], "bin", "pprof"))
    cands.append(os.path.expanduser("~/go/bin/pprof"))
    for cand in cands:
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def no_aslr():
    """In the child before exec: address randomisation off (personality ADDR_NO_RANDOMIZE, what
    setarch -R does), so the return addresses of all runs are alike."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.personality(0x0040000)


def run_profiled(command, env, cwd, by="function"):
    try:
        r = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                           preexec_fn=(no_aslr if by == "address" else None),
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    except subprocess.TimeoutExpired:
        note("  %s: no result in 600 s" % os.path.basename(command[0]))
        return False
    if r.returncode != 0:
        note("  %s exited with %d: %s" % (os.path.basename(command[0]), r.returncode, r.stderr[-400:]))
    return r.returncode == 0


UNITS = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def pprof_total(text):
    """The total of a `pprof -top` output in bytes ("... of 779639.58kB total"), or 0."""
    m = re.search(r"of ([\d.]+)([kMGT]?B) total", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else 0.0


def parse_top(text, by="function"):
    """{site: flat share in %} from `pprof -top` or `jeprof --text` output; by address a site is
    "function+0xOFFSET" of the return address within its object, as the address granularity of
    either tool prints it ("0000555555555abc func file" or "0x0000555555555abc func")."""
    shares = {}
    for line in text.splitlines():
        # pprof:  flat flat% sum% cum cum% name ; jeprof: flat flat% sum% cum cum% name
        m = re.match(r"\s*([\d.]+)\S*\s+([\d.]+(?:e[-+]?\d+)?)%\s+[\d.]+%\s+[\d.]+\S*\s+[\d.]+%\s+(.+?)\s*$", line)
        if not m:
            continue
        name = re.sub(r"@@.*$", "", m.group(3))
        if by == "address":
            a = re.match(r"(?:0x)?([0-9a-fA-F]{8,})\s+(\S+)", name)
            if not a:
                continue
            name = "%s@%x" % (a.group(2), int(a.group(1), 16))
        shares[name] = shares.get(name, 0.0) + float(m.group(2))
    return shares


def pprof_top(pprof, exe, profile, index, with_total=False, by="function"):
    gran = ["-addresses"] if by == "address" else []
    r = subprocess.run([pprof, "-top", "-nodecount=60", "-sample_index=" + index, "-hide=" + HIDE] + gran +
                       [exe, profile], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    shares = parse_top(r.stdout, by) if r.returncode == 0 else None
    return (shares, pprof_total(r.stdout)) if with_total else shares


def mean_shares(tables):
    """The mean share of each function over several runs' tables (None: no run gave one)."""
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    names = set().union(*tables)
    return {n: sum(t.get(n, 0.0) for t in tables) / len(tables) for n in names}


def jeprof_top(exe, profile, index, by="function"):
    gran = ["--addresses"] if by == "address" else []
    r = subprocess.run(["jeprof", "--text", "--nodecount=60", "--" + index] + gran + [exe, profile],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True, timeout=600)
    return parse_top(r.stdout, by) if r.returncode == 0 else None


def newest(directory, prefix, suffix):
    files = [os.path.join(directory, f) for f in os.listdir(directory)
             if f.startswith(prefix) and f.endswith(suffix)]
    files.sort(key=os.path.getmtime)
    return files[-1] if files else None


def align(exact, shares):
    """Sites by address: a tool may write a call's return address or that minus one; a sampler's
    site one byte from an exact site is that site."""
    if shares is None:
        return None
    out = {}
    for key, v in shares.items():
        if key not in exact and "@" in key:
            func, addr = key.rsplit("@", 1)
            for d in (1, -1):
                near = "%s@%x" % (func, int(addr, 16) + d)
                if near in exact:
                    key = near
                    break
        out[key] = out.get(key, 0.0) + v
    return out


def compare(title, exact, columns, top):
    """Print one table: the exact top sites and each sampler's share of them; the samplers'
    differences are taken from the exact (requested) shares and, for ours, also from the shares
    of the usable sizes (the column "usable", when there is one)."""
    columns = [(label, align(exact, shares)) for label, shares in columns]
    names = [n for n, v in sorted(exact.items(), key=lambda kv: -kv[1]) if v > 0][:top]
    for _, shares in columns:
        if shares:
            for n, v in sorted(shares.items(), key=lambda kv: -kv[1])[:top]:
                if v >= 1.0 and n not in names:
                    names.append(n)
    print("\n%s (share of the total, %%)\n" % title)
    if any(label == "usable" for label, _ in columns):
        print("(usable: ours at the low --usable-rate, nearly every block's usable size)\n")
    print("| site | exact | " + " | ".join(c for c, _ in columns) + " |")
    print("|---|---:|" + "---:|" * len(columns))
    for n in names:
        cells = ["%.1f" % exact.get(n, 0.0)]
        for _, shares in columns:
            cells.append("-" if shares is None else "%.1f" % shares.get(n, 0.0))
        print("| %s | %s |" % (n, " | ".join(cells)))
    # the order of the sites that sampling at the default rate can rank: 5% of the bytes or more
    ranked = [n for n, v in sorted(exact.items(), key=lambda kv: -kv[1]) if v >= 5.0][:3]
    def largest_diff(a, b):
        return max([abs(a.get(n, 0.0) - b.get(n, 0.0)) for n in set(a) | set(b)] or [0.0])
    usable = dict(columns).get("usable")
    for label, shares in columns:
        if label == "usable":
            continue
        if shares is None:
            print("%s: no profile" % label)
            continue
        mine = [n for n, v in sorted(shares.items(), key=lambda kv: -kv[1])][:len(ranked)]
        extra = ""
        if label == "ours" and usable:
            extra = " (%.1f from the usable sizes' shares)" % largest_diff(shares, usable)
        print("%s: largest difference from exact %.1f points%s; top %d sites %s" %
              (label, largest_diff(shares, exact), extra, len(ranked),
               "in the same order" if mine == ranked else "differ: %s" % ", ".join(mine)))


def main(argv):
    args = parse_args(argv)
    lib = ours.preloadable(args.build_dir)
    pprof = pprof_path()
    if pprof is None:
        note("pprof not found: GOFLAGS=-mod=mod go install github.com/google/pprof@latest")
        return 2
    missing = debian.ensure([JEMALLOC[0], JEPROF, TCMALLOC[0]], args.no_install)
    jelib = debian.find_lib(*JEMALLOC)
    tclib = debian.find_lib(*TCMALLOC)
    if missing:
        note("missing %s: those columns are left out" % " ".join(missing))
    exe = args.command[0]
    base = clean_env()
    out = tempfile.mkdtemp(prefix="profcmp-")
    note("profiles in %s" % out)
    profiles = {"ours": [], "jemalloc": [], "exact": [], "usable": []}
    for i in range(args.runs):
        env = dict(base, LD_PRELOAD=lib, MIMALLOC_PROFILE=os.path.join(out, "ours%d" % i),
                   MIMALLOC_PROFILE_RATE=str(args.rate))
        if run_profiled(args.command, env, out, args.by) and os.path.exists(os.path.join(out, "ours%d.pb" % i)):
            profiles["ours"].append(os.path.join(out, "ours%d.pb" % i))
        if jelib and shutil.which("jeprof"):
            conf = "prof:true,prof_accum:true,prof_final:true,lg_prof_sample:%d,prof_prefix:%s" % (
                int(math.log2(args.rate)), os.path.join(out, "je%d" % i))
            if run_profiled(args.command, dict(base, LD_PRELOAD=jelib, MALLOC_CONF=conf), out, args.by):
                profiles["jemalloc"].append(newest(out, "je%d." % i, ".heap"))
    env = dict(base, LD_PRELOAD=lib, MIMALLOC_PROFILE=os.path.join(out, "usable"),
               MIMALLOC_PROFILE_RATE=str(args.usable_rate))
    if args.usable_rate > 0 and run_profiled(args.command, env, out, args.by) and os.path.exists(os.path.join(out, "usable.pb")):
        profiles["usable"].append(os.path.join(out, "usable.pb"))
    if tclib:
        env = dict(base, LD_PRELOAD=tclib, HEAPPROFILE=os.path.join(out, "tc"))
        if run_profiled(args.command, env, out, args.by) and newest(out, "tc.", ".heap"):
            profiles["exact"].append(newest(out, "tc.", ".heap"))
    if not profiles["exact"]:
        note("no exact profile (gperftools' HEAPPROFILE): nothing to compare with")
        return 1
    print("profcmp: %s, rate %d bytes, %d run%s per sampler; exact = gperftools' HEAPPROFILE "
          "(every allocation, requested sizes; the samplers count the usable size)" %
          (" ".join([os.path.basename(exe)] + args.command[1:]), args.rate, args.runs,
           "" if args.runs == 1 else "s"))
    for title, index in (("bytes allocated in total", "alloc_space"),
                         ("bytes allocated at exit", "inuse_space")):
        exact, total = pprof_top(pprof, exe, profiles["exact"][0], index, with_total=True, by=args.by)
        if not exact or total < 8 * args.rate:
            print("\n%s: %.0f kB in the exact profile, too little for %d-byte sampling" %
                  (title, total / 1024, args.rate))
            continue
        columns = []
        if args.usable_rate > 0:
            columns.append(("usable", mean_shares([pprof_top(pprof, exe, f, index, by=args.by)
                                                   for f in profiles["usable"]])))
        columns.append(("ours", mean_shares([pprof_top(pprof, exe, f, index, by=args.by)
                                             for f in profiles["ours"]])))
        if jelib:
            columns.append(("jemalloc", mean_shares([jeprof_top(exe, f, index, by=args.by)
                                                     for f in profiles["jemalloc"] if f])))
        compare(title, exact, columns, args.top)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
