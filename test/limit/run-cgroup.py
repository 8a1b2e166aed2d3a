#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run-cgroup.py -- the memory limit in a real cgroup (issue 53: "the process finishes under ours").

Needs root and a writable memory controller (CI); otherwise it exits with 77 (ctest's
SKIP_RETURN_CODE) and says why. It makes a child memory cgroup with a limit of 320 MiB (v1:
memory.limit_in_bytes, and memory.memsw.limit_in_bytes when swap accounting is on; v2:
memory.max, and memory.swap.max 0), so the limit means RAM: the workload cannot escape it into
swap. Each run gets a fresh cgroup (its peak usage and OOM counts are that run's), the workload
joins it between fork and exec (it writes its own pid into cgroup.procs), and the cgroup is
removed afterwards whatever happened. Where it is made:

  cgroup v1   a child of the process's own memory cgroup (its `memory` line of /proc/self/cgroup,
              under the controller's mount): nested, so every limit above still binds
  cgroup v2   a child of the nearest cgroup, from the process's own (its `0::/path` line) up to
              the mount's root, whose cgroup.subtree_control already enables `memory`; else one
              where writing `+memory` there succeeds (the own cgroup holds processes, so the
              kernel refuses it there unless it is the root; a `+memory` written is taken back)

limit.c reads the limit from /sys/fs/cgroup/memory (v1) or /sys/fs/cgroup (v2): a controller
mounted elsewhere cannot be found by it, and the test skips there (saying so); so it does
where an enclosing cgroup's limit is below the test's (it would bind first).

Checks, in that cgroup:
  detect   limit-probe's `get print`: mi_memory_limit() is the cgroup's 320 MiB, and the
           "memory limit:" line names the cgroup file: the detection found the real cgroup's path
           in /proc/self/cgroup (nothing points MIMALLOC_TEST_CGROUP_ROOT anywhere)
  ours     `limit-drift 200 4000` (a 200 MiB live set whose block sizes drift while 4000 MiB pass
           through it) with MIMALLOC_PURGE_DELAY=10000 and the default limit option (the
           cgroup's): it finishes, exit 0, not killed by the OOM killer; its verbose start-up line
           names the cgroup's limit
  off      the same with MIMALLOC_MEMORY_LIMIT=0: killed (SIGKILL, the cgroup's OOM count rises).
           Without a limit the freed blocks of the old sizes stay committed for the 10 s purge
           delay and the RSS grows to 1.0 GiB (measured outside a cgroup), three times the limit, and
           anonymous memory without swap cannot be reclaimed by the kernel: asserted when swap
           cannot be used (no swap, or the swap limit set); otherwise only reported
Each run prints its figures: the workload's peak RSS (its own report; none when killed), the
cgroup's peak usage and its limit-hit / OOM counts (v2 memory.events; v1 memory.failcnt, which
Linux 6.18 leaves at 0, and memory.oom_control's oom_kill), killed or not, the time taken.
--ours-may-be-killed reports the `ours` run without asserting it (while the allocator's reaction
to the limit cannot yet keep this workload under it; CMakeLists.txt says when to drop it).

usage: run-cgroup.py --probe PATH --drift PATH [--limit-mib N] [--live-mib N] [--total-mib N]
                     [--timeout S] [--ours-may-be-killed]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

from limitcheck import FAILS, MiB, check, clean_env   # (this directory: the drivers' shared part)

SKIP = 77   # ctest's SKIP_RETURN_CODE (CMakeLists.txt)


def skip(why):
    print(f"SKIP limit-cgroup: {why}")
    sys.exit(SKIP)


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def keyed(text):
    """'key value' lines (memory.events, memory.oom_control) as a dict of ints."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def mounts():
    """(mount point, type, options) of every cgroup file system (/proc/self/mounts)."""
    out = []
    for line in (read("/proc/self/mounts") or "").splitlines():
        f = line.split()
        if len(f) >= 4 and f[2] in ("cgroup", "cgroup2"):
            out.append((f[1], f[2], f[3].split(",")))
    return out


def own_paths():
    """The memory controller's v1 path and the v2 path, from /proc/self/cgroup (None: none)."""
    v1 = v2 = None
    for line in (read("/proc/self/cgroup") or "").splitlines():
        hid, _, rest = line.partition(":")
        ctrls, _, path = rest.partition(":")
        if hid == "0" and ctrls == "":
            v2 = path
        elif "memory" in ctrls.split(","):
            v1 = path
    return v1, v2


class Cgroup:
    """Where children with a memory limit are made (v1 or v2) and how to limit and read them."""

    def __init__(self):
        self.enabled = None   # a v2 cgroup.subtree_control where we wrote "+memory" (taken back)
        v1path, v2path = own_paths()
        ms = mounts()
        v1mount = next((m for m, t, o in ms if t == "cgroup" and "memory" in o), None)
        v2mount = next((m for m, t, o in ms if t == "cgroup2"), None)
        if v1path is not None and v1mount is not None:
            # v1 (or hybrid: the v2 hierarchy then has no memory controller, v1 has it)
            if v1mount != "/sys/fs/cgroup/memory":
                skip(f"the v1 memory controller is mounted at {v1mount}; limit.c reads /sys/fs/cgroup/memory")
            self.v2 = False
            self.mount = v1mount
            self.parent = v1mount + v1path.rstrip("/")
        elif v2path is not None and v2mount is not None:
            if "memory" not in (read(os.path.join(v2mount, "cgroup.controllers")) or "").split():
                skip(f"no memory controller in the cgroup v2 hierarchy at {v2mount}")
            if v2mount != "/sys/fs/cgroup":
                skip(f"cgroup v2 is mounted at {v2mount}; limit.c reads /sys/fs/cgroup")
            self.v2 = True
            self.mount = v2mount
            self.parent = self.v2_parent(v2mount, v2path)
        else:
            skip("no memory cgroup controller (no v1 memory line in /proc/self/cgroup, no cgroup v2)")
        if not os.access(self.parent, os.W_OK):
            skip(f"{self.parent} is not writable")

    def enclosing_limit(self):
        """The least limit of the parent and the cgroups above it (None: none): limit.c reads the
        least of every level, and a lower one there would bind the workload before ours."""
        files = ("memory.high", "memory.max") if self.v2 else ("memory.limit_in_bytes",)
        least, d = None, self.parent
        while True:
            for f in files:
                v = (read(os.path.join(d, f)) or "").strip()
                # (v1's "no limit" is a huge page-rounded number: anything past 2^60 is none)
                if v.isdigit() and int(v) < 1 << 60 and (least is None or int(v) < least):
                    least = int(v)
            if os.path.normpath(d) == os.path.normpath(self.mount):
                return least
            d = os.path.dirname(d)

    def v2_parent(self, mount, path):
        levels = []
        p = path.rstrip("/")
        while True:   # own cgroup first, then each one above it up to the mount's root
            levels.append(mount + p)
            if p == "":
                break
            p = p[:p.rfind("/")]
        for d in levels:
            if "memory" in (read(os.path.join(d, "cgroup.subtree_control")) or "").split():
                return d
        for d in levels:
            ctl = os.path.join(d, "cgroup.subtree_control")
            try:
                write(ctl, "+memory")
            except OSError:
                continue   # EBUSY where processes live (only the root is exempt), EACCES, EROFS
            self.enabled = ctl
            return d
        skip("no cgroup v2 level can enable the memory controller for a child (cgroup.subtree_control)")

    def make(self, name, limit):
        d = os.path.join(self.parent, name)
        try:
            os.mkdir(d)
        except OSError as e:
            skip(f"cannot make a cgroup in {self.parent}: {e}")
        try:
            if self.v2:
                write(os.path.join(d, "memory.max"), str(limit))
                if os.path.exists(os.path.join(d, "memory.swap.max")):
                    write(os.path.join(d, "memory.swap.max"), "0")
            else:
                write(os.path.join(d, "memory.limit_in_bytes"), str(limit))
                # (memsw is memory + swap, never below the memory limit: set after it)
                if os.path.exists(os.path.join(d, "memory.memsw.limit_in_bytes")):
                    write(os.path.join(d, "memory.memsw.limit_in_bytes"), str(limit))
        except OSError:
            remove(d)
            raise
        return d

    def no_swap(self, d):
        """True when the cgroup's processes cannot use swap (none, or its limit is set)."""
        swap_total = re.search(r"^SwapTotal:\s+(\d+)", read("/proc/meminfo") or "", re.M)
        if swap_total and int(swap_total.group(1)) == 0:
            return True
        f = "memory.swap.max" if self.v2 else "memory.memsw.limit_in_bytes"
        return os.path.exists(os.path.join(d, f))

    def figures(self, d):
        """The cgroup's peak usage, limit hits and OOM kills (None where the kernel has no file)."""
        if self.v2:
            ev = keyed(read(os.path.join(d, "memory.events")))
            peak = read(os.path.join(d, "memory.peak"))   # (kernel 5.19 on)
            return {"peak": int(peak) if peak and peak.strip().isdigit() else None,
                    "limit_hits": ev.get("max"), "oom": ev.get("oom"), "oom_kill": ev.get("oom_kill")}
        def num(f):
            v = read(os.path.join(d, f))
            return int(v) if v and v.strip().isdigit() else None
        # with memsw set, memory + swap is charged (and fails) first: its failcnt counts the hits
        hits = [v for v in (num("memory.failcnt"), num("memory.memsw.failcnt")) if v is not None]
        oc = keyed(read(os.path.join(d, "memory.oom_control")))
        return {"peak": num("memory.max_usage_in_bytes"), "limit_hits": max(hits) if hits else None,
                "oom": oc.get("under_oom"), "oom_kill": oc.get("oom_kill")}

    def restore(self):
        if self.enabled:
            try:
                write(self.enabled, "-memory")
            except OSError as e:
                print(f"note: could not take back +memory in {self.enabled}: {e}")


def remove(d):
    """rmdir the cgroup once its processes are gone (they are reaped before this is called;
    the kernel may take a moment to drop a dying task from it)."""
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    print(f"FAIL could not remove the cgroup {d}")
    FAILS.append(f"cgroup {d} left behind")


def run_in(cg, d, cmd, extra_env, timeout):
    """Start cmd inside cgroup d (the child moves itself between fork and exec, so nothing of
    it runs outside) and wait; (returncode, stdout, stderr, seconds)."""
    procs = os.path.join(d, "cgroup.procs")

    def join():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, env=clean_env(extra_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=join)
    except subprocess.SubprocessError as e:   # the child could not write cgroup.procs
        skip(f"a process cannot join {d}: {e}")
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        FAILS.append(f"{cmd[0]} timed out after {timeout} s")
        print(f"FAIL {os.path.basename(cmd[0])}: timed out after {timeout} s")
    return p.returncode, out, err, time.monotonic() - t0


def limit_line(err):
    m = re.search(r"^mimalloc: memory limit: (.*)$", err, re.M)
    return m.group(1) if m else None


def mib(v):
    return "-" if v is None else f"{v / MiB:.0f} MiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True, help="limit-probe")
    ap.add_argument("--drift", required=True, help="limit-drift")
    ap.add_argument("--limit-mib", type=int, default=320, help="the cgroup's limit (320)")
    ap.add_argument("--live-mib", type=int, default=200, help="the workload's live set (200)")
    ap.add_argument("--total-mib", type=int, default=4000, help="what passes through it (4000)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run (300)")
    ap.add_argument("--ours-may-be-killed", action="store_true",
                    help="report, do not assert, that the run with our limit finishes")
    args = ap.parse_args()
    if os.geteuid() != 0:
        skip("not root (a memory cgroup with a limit needs it)")
    limit = args.limit_mib * MiB
    cg = Cgroup()
    above = cg.enclosing_limit()
    if above is not None and above < limit:
        skip(f"an enclosing cgroup's limit ({above / MiB:.0f} MiB) is below the test's {args.limit_mib} MiB")
    src = "cgroup v2 memory.max" if cg.v2 else "cgroup v1 memory.limit_in_bytes"
    print(f"cgroup {'v2' if cg.v2 else 'v1'}: children of {cg.parent}, limit {args.limit_mib} MiB "
          f"(swap too); workload limit-drift {args.live_mib} {args.total_mib}, "
          f"MIMALLOC_PURGE_DELAY=10000")
    base = f"mi-limit-cgroup-{os.getpid()}"
    try:
        # detect: the probe finds the real cgroup's limit through /proc/self/cgroup
        d = cg.make(base + "-detect", limit)
        try:
            rc, out, err, _ = run_in(cg, d, [args.probe, "get", "print"], {}, 60)
        finally:
            remove(d)
        m = re.search(r"^limit (\d+)$", out, re.M)
        got = int(m.group(1)) if m else None
        line = limit_line(err)
        print(f"detect: mi_memory_limit() {got}, line {line!r}")
        check(rc == 0 and got == limit, "detect: mi_memory_limit() is the cgroup's limit",
              f"exit {rc}, limit {got}, expected {limit}; stderr {err[-400:]}")
        check(line is not None and src in line, "detect: the line names the cgroup file", f"{line!r}, expected {src!r}")

        drift = [args.drift, str(args.live_mib), str(args.total_mib)]
        for name, extra in (("ours", {}), ("off", {"MIMALLOC_MEMORY_LIMIT": "0"})):
            env = {"MIMALLOC_PURGE_DELAY": "10000", "MIMALLOC_VERBOSE": "1", **extra}
            d = cg.make(f"{base}-{name}", limit)
            try:
                rc, out, err, secs = run_in(cg, d, drift, env, args.timeout)
                fig = cg.figures(d)
                no_swap = cg.no_swap(d)
            finally:
                remove(d)
            killed = rc == -signal.SIGKILL
            m = re.search(r"peak_commit (\d+) peak_rss (\d+) elapsed_ms (\d+)", out)
            rss = int(m.group(2)) if m else None
            commit = int(m.group(1)) if m else None
            print(f"{name}: {'KILLED (SIGKILL)' if killed else f'exit {rc}'}, {secs:.1f} s; workload peak RSS {mib(rss)}, "
                  f"peak commit {mib(commit)}; cgroup peak usage {mib(fig['peak'])}, limit hits {fig['limit_hits']}, "
                  f"oom_kill {fig['oom_kill']}; limit line {limit_line(err)!r}")
            if name == "ours" and args.ours_may_be_killed and rc != 0:
                print(f"note: ours did not finish ({'killed' if killed else f'exit {rc}'}); not asserted "
                      f"(--ours-may-be-killed)")
            elif name == "ours":
                check(rc == 0 and m is not None, "ours: limit-drift finishes under the cgroup's limit",
                      "killed by SIGKILL (the OOM killer)" if killed else f"exit {rc}; stderr {err[-400:]}")
                line = limit_line(err)
                check(line is not None and src in line, "ours: the start-up line names the cgroup's limit", f"{line!r}")
            elif no_swap:
                check(killed, "off: without the limit the same workload is killed",
                      f"exit {rc}: the kernel found enough to reclaim; cgroup peak {mib(fig['peak'])}")
            else:
                print(f"note: swap can be used in this cgroup: 'off' only reported ({'killed' if killed else 'not killed'})")
    finally:
        cg.restore()
    print(f"{'FAIL' if FAILS else 'PASS'} limit-cgroup: {len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
