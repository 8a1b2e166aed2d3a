#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end checks of the sampling heap profiler with prof-sites.c (known sites).

usage: check-profile.py MODE PROF_SITES_BINARY WORKDIR
  sites   three runs (three random seeds) with MIMALLOC_PROFILE: each site's estimated bytes
          (allocated, and in use at exit) within TOLERANCE of the truth the program prints;
          the leak profile names alloc_ten only (the heap destroyed is not a leak); the text
          report lists the sites; pprof (if found) reads the .pb and ranks the same sites.
          The mi_ API samples through the lease; a binary named *-malloc calls malloc, which
          must have been sent to the counted entry points (prof.c)
  off     no MIMALLOC_PROFILE: no file is written and mi_profile_dump refuses
  api     mi_profile_start at run time, with a thread already running: both threads' sites
  fork    forked children dump their own profiles while another thread samples (a *-malloc
          binary: with the profiler on from the start, through the counted entry points)
pprof: PATH, then $(go env GOPATH)/bin; missing, its checks are skipped with a message, or fail
when MI_TEST_REQUIRE_ALL=1."""
import glob
import math
import os
import re
import shlex
import shutil
import subprocess
import sys

RATE = 16384
TOLERANCE = 0.15   # relative, or 4 sigma of the site's sampling error if more (close())
SITES = ("alloc_sixty", "alloc_thirty", "alloc_ten", "alloc_in_heap")
failures = []
# cross builds run the programs under an emulator (test/CMakeLists.txt: MI_TEST_EMULATOR); pprof
# reads the host's binaries only, so its checks are left to native runs
EMULATOR = shlex.split(os.environ.get("MI_TEST_EMULATOR", ""))


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def run(binary, args, env_extra, cwd=None, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env.update(env_extra)
    r = subprocess.run(EMULATOR + [binary] + args, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if r.returncode != 0:
        fail(f"{binary} {args} exited with {r.returncode}: {r.stderr.strip()}")
    truth = {}
    for line in r.stdout.splitlines():
        m = re.match(r"site (\w+) (\d+)$", line)
        if m:
            truth[m.group(1)] = int(m.group(2))
    return r, truth


def folded(path):
    """bytes per site (innermost alloc_* frame), and bytes whose innermost frame is not a site"""
    per_site, other_leaf, total = {}, 0, 0
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, value = line.rpartition(" ")
            frames = stack.split(";")
            v = int(value)
            total += v
            site = None
            for fr in reversed(frames):
                m = re.search(r"\b(alloc_(?:sixty|thirty|ten|in_heap))\b", fr)
                if m:
                    site = m.group(1)
                    break
            if site is not None:
                per_site[site] = per_site.get(site, 0) + v
                if not re.search(r"\b" + site + r"\b", frames[-1]):
                    other_leaf += v
    return per_site, other_leaf, total


def find_pprof():
    p = shutil.which("pprof")
    if p:
        return p
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go:
        try:
            gopath = subprocess.run([go, "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
            cand = os.path.join(gopath, "bin", "pprof")
            if os.path.exists(cand):
                return cand
        except OSError:
            pass
    return None


def pprof_top(pprof, binary, pb, index):
    """flat bytes per site from pprof -top -sample_index=index"""
    r = subprocess.run([pprof, "-top", "-nodecount=50", "-unit=B", f"-sample_index={index}", binary, pb],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"pprof -top {pb}: {r.stderr.strip()}")
        return {}
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\d+)B\s+[\d.]+%\s+[\d.]+%\s+(\d+)B\s+[\d.]+%\s+(\S+)", line)
        if m and m.group(3) in SITES:
            out[m.group(3)] = int(m.group(1))
    return out


def close(est, true, what):
    if true <= 0:
        fail(f"{what}: the program reported {true} bytes allocated")
        return
    err = abs(est - true) / true
    # the sampling error of a site of n expected samples (blocks far smaller than RATE: about a
    # Poisson count) is 1/sqrt(n): alloc_in_heap's 342 samples give 5.4%, so 15% was 2.8 sigma
    # and failed about one run in 60; allow 4 sigma where that is more than TOLERANCE
    tol = max(TOLERANCE, 4.0 / math.sqrt(max(true / RATE, 1.0)))
    ok = err <= tol
    print(f"  {what}: estimated {est}, true {true} ({err * 100:.1f}% off){'' if ok else '  <-- over ' + str(round(tol * 100, 1)) + '%'}")
    if not ok:
        fail(f"{what}: estimated {est} bytes, true {true}")


def check_sites(binary, work):
    pprof = find_pprof() if not EMULATOR else None
    if pprof is None and EMULATOR:
        print("SKIP pprof checks: emulated target")
    elif pprof is None:
        msg = "pprof not found (GOFLAGS=-mod=mod go install github.com/google/pprof@v0.0.0-20261105003125-4bf881d7fb0b)"
        if os.environ.get("MI_TEST_REQUIRE_ALL") == "1":
            fail(msg)
        else:
            print("SKIP pprof checks: " + msg)
    for seed in range(3):
        base = os.path.join(work, f"sites{seed}")
        for f in glob.glob(base + ".*"):
            os.remove(f)
        print(f"run {seed + 1} of 3")
        r, truth = run(binary, [], {"MIMALLOC_PROFILE": base, "MIMALLOC_PROFILE_RATE": str(RATE), "MIMALLOC_VERBOSE": "1"})
        # the program's calls to malloc go to the counted entry points (prof.c): its PLT slot
        # and libc's were rewritten (with the mi_ API, prof-sites samples through the lease)
        m = re.search(r"(\d+) call slots of malloc, calloc and new counted", r.stderr)
        slots = int(m.group(1)) if m else -1
        print(f"  call slots counted: {slots}")
        if os.path.basename(binary).endswith("-malloc") and slots <= 0:
            fail(f"no call slot of malloc was sent to the counted entry points ({'none' if m is None else slots})")
        for suffix in (".pb", ".txt", ".inuse.folded", ".alloc.folded"):
            if not os.path.exists(base + suffix) or os.path.getsize(base + suffix) == 0:
                fail(f"{base + suffix} missing or empty")
        if failures:
            return
        alloc, alloc_other, _ = folded(base + ".alloc.folded")
        for s in SITES:
            close(alloc.get(s, 0), truth[s], f"allocated by {s}")
        if alloc_other > 0.01 * sum(alloc.values()):
            fail(f"{alloc_other} bytes have a frame of the allocator (not a site) innermost")
        inuse, _, inuse_total = folded(base + ".inuse.folded")
        close(inuse.get("alloc_ten", 0), truth["alloc_ten"], "in use at exit (leak) by alloc_ten")
        for s in ("alloc_sixty", "alloc_thirty", "alloc_in_heap"):
            if inuse.get(s, 0) != 0:
                fail(f"{s} shows {inuse[s]} bytes in use at exit: every block of it was freed")
        if inuse_total > 1.2 * truth["alloc_ten"] + 4 * RATE:
            fail(f"in use at exit {inuse_total} bytes, but only alloc_ten's {truth['alloc_ten']} leak")
        text = open(base + ".txt").read()
        for s in ("alloc_sixty", "alloc_thirty", "alloc_ten"):
            if s not in text:
                fail(f"the text report does not name {s}")
        if pprof is not None:
            top = pprof_top(pprof, binary, base + ".pb", "alloc_space")
            for s in ("alloc_sixty", "alloc_thirty", "alloc_ten"):
                close(top.get(s, 0), truth[s], f"pprof alloc_space {s}")
            top = pprof_top(pprof, binary, base + ".pb", "inuse_space")
            close(top.get("alloc_ten", 0), truth["alloc_ten"], "pprof inuse_space alloc_ten")
            for s in ("alloc_sixty", "alloc_thirty", "alloc_in_heap"):
                if top.get(s, 0) != 0:
                    fail(f"pprof inuse_space lists {s}")


def check_off(binary, work):
    before = set(os.listdir(work))
    r, truth = run(binary, [], {}, cwd=work)
    if "profiler off: dump refused" not in r.stdout:
        fail("with the profiler off, the program did not see mi_profile_dump refuse")
    after = set(os.listdir(work))
    if after != before:
        fail(f"files appeared with the profiler off: {sorted(after - before)}")


def check_api(binary, work):
    base = os.path.join(work, "api")
    r, truth = run(binary, ["--api", base], {})
    if failures:
        return
    alloc, _, _ = folded(base + ".alloc.folded")
    # the thread joined at its next slow path: a few allocations before that are not counted
    close(alloc.get("alloc_sixty", 0), truth["alloc_sixty"], "api: allocated by alloc_sixty")
    close(alloc.get("alloc_thirty", 0), truth["alloc_thirty"], "api: allocated by alloc_thirty (thread started before the profiler)")


def check_fork(binary, work):
    base = os.path.join(work, "fork")
    env = {}
    if os.path.basename(binary).endswith("-malloc"):
        # on from the start, so malloc goes to the counted entry points (the program's
        # mi_profile_start then finds it on); the exit profile is the parent's
        env = {"MIMALLOC_PROFILE": base + ".exit", "MIMALLOC_PROFILE_RATE": "4096", "MIMALLOC_VERBOSE": "1"}
    # Under qemu-user this forking, threaded program hangs about 1 run in 90 (3 at once) on a
    # lock inside qemu itself: the parent's main thread waits in a futex on qemu's own data, not
    # on the program's memory, its child gone. Natively 800 runs (4 at once) never hung. So
    # under an emulator a run that has not ended in 60 s (2 s normally) is tried once more.
    for attempt in (1, 2):
        for f in glob.glob(base + ".*"):
            os.remove(f)
        try:
            r, _ = run(binary, ["--fork", base], env, timeout=(60 if EMULATOR and attempt == 1 else 300))
            break
        except subprocess.TimeoutExpired:
            if not EMULATOR or attempt == 2:
                raise
            print("check-profile: fork: no end in 60 s under the emulator (a hang inside qemu-user); once more",
                  file=sys.stderr)
    if failures:
        return
    if env and not re.search(r"[1-9]\d* call slots of malloc, calloc and new counted", r.stderr):
        fail("no call slot of malloc was sent to the counted entry points")
    children = glob.glob(base + ".[0-9]*.alloc.folded")
    if len(children) != 8:
        fail(f"{len(children)} child profiles, expected 8")
    for c in children:
        alloc, _, _ = folded(c)
        if alloc.get("alloc_ten", 0) == 0:
            fail(f"{c}: the child's own site alloc_ten is missing")
    if not os.path.exists(base + ".parent.pb"):
        fail("the parent's profile is missing")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    mode, binary, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    {"sites": check_sites, "off": check_off, "api": check_api, "fork": check_fork}[mode](binary, work)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
