#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""OS-failure sweep (docs/testing.md, "OS-failure injection"): runs fi-workload (a build with
MI_FAIL_INJECT, src/prim/failinject.c) once per (configuration, primitive, N) with the Nth call
of that primitive failing (MIMALLOC_TEST_FAIL=KIND:N), and checks each run against a run of
the same configuration without failure:
  - exit status 0 and fi-workload's PASS line: no crash, no NULL without ENOMEM, no corrupted
    pattern, the allocation right after a failed one succeeds ("strict"), and so do the
    allocations after the workload;
  - no leak: after everything is freed and mi_collect(true), the statistics' reserved and
    committed bytes and the address space (/proc/self/statm) are not above the run without
    failure (plus SLACK for the address space), except that a failed unmap may leave its range
    mapped (the documented fallback: the address space grows, the statistics do not);
  - the injected failure happened (the count line says so).
N: every call when a primitive makes at most --all calls in the run; else --sample values
spread evenly over 1..count (the first and the last included).
--prob: instead, every primitive fails with probability 1% (seeds 1..--seeds), without
"strict" (a NULL may follow a NULL); the same checks except the leak comparison.
--secure (a secure build): also with guard markers refused (noguard), so guards use protect.
Usage: sweep.py [--prob] [--secure] [--jobs J] [--all A] [--sample S] [--seeds K] [--config NAME] FI_WORKLOAD
A failure prints the command that reproduces it."""
import argparse
import concurrent.futures
import os
import re
import shlex
import subprocess
import sys
import time

KINDS = ["map", "large", "unmap", "commit", "decommit", "reset", "protect", "guard", "huge", "random", "thread"]
SEGMENT = 4 << 20
# a refused call may make the allocator reserve one more arena, released when empty; its
# descriptor (4 KiB for 1 GiB) stays in its slot by design (src/arena-purge.c, "Release") and counts
# as reserved and committed metadata. Less than the smallest page (64 KiB): a lost page shows.
META = 16 << 10
SLACK = 8 << 20   # address space: thread stacks and libc's own mappings may differ a little

# Configurations: which primitives a run calls depends on the options (PURGE_DELAY=0 makes the
# purges happen at the frees, so the calls are the same in every run)
CONFIGS = {
    "default":  {"MIMALLOC_PURGE_DELAY": "0"},
    "eager0":   {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ARENA_EAGER_COMMIT": "0"},   # commit/decommit with mprotect
    "reset":    {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_PURGE_DECOMMITS": "0"},      # MADV_FREE
    "noarena":  {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ARENA_RESERVE": "0"},        # segments from the OS
    "large":    {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ALLOW_LARGE_OS_PAGES": "1",
                 "MIMALLOC_RESERVE_HUGE_OS_PAGES": "1"},
}
# Secure builds (guard pages): also with the guard markers refused as on an older kernel, so
# that os.c guards with protect (mprotect) instead. FI_SPEC: prepended to MIMALLOC_TEST_FAIL.
SECURE_CONFIGS = {
    "noguard":        {"MIMALLOC_PURGE_DELAY": "0", "FI_SPEC": "noguard"},
    "noguard-eager0": {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ARENA_EAGER_COMMIT": "0", "FI_SPEC": "noguard"},
}

COUNT_RE = re.compile(r"mimalloc-failinject: count (.*) failed (.*)")
FAIL_RE = re.compile(r"mimalloc-failinject: fail (\w+) call (\d+) size (\d+)")
KEPT_RE = re.compile(r"segment 0x[0-9a-f]+ \((\d+) KiB\) to its arena: it is kept out of use")
STATS_RE = re.compile(r"fi-workload: nulls (\d+) reserved (-?\d+) committed (-?\d+) vsz (\d+)")


def run(prog, env_extra, spec, strict, timeout=120):
    """strict: a single failure (fi-workload's "strict"); else the probability mode, which
    also runs fi-workload's concurrent threads"""
    env = dict(os.environ)
    env.update(env_extra)
    env.pop("FI_SPEC", None)
    env["MIMALLOC_TEST_FAIL"] = ",".join(x for x in (env_extra.get("FI_SPEC"), spec) if x)
    cmd = [prog] + (["strict"] if strict else ["concurrent"])
    emu = os.environ.get("MI_TEST_EMULATOR", "")
    if emu:
        cmd = shlex.split(emu) + cmd
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out, rc = p.stdout.decode(errors="replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace"), "timeout"
    res = {"rc": rc, "out": out, "counts": None, "failed": None, "stats": None,
           "failed_bytes": sum(int(m.group(3)) for m in FAIL_RE.finditer(out)),
           "kept_bytes": sum(int(m.group(1)) << 10 for m in KEPT_RE.finditer(out))}
    m = COUNT_RE.search(out)
    if m:
        words = m.group(1).split()
        res["counts"] = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
        res["failed"] = dict(zip(KINDS, map(int, m.group(2).split())))
    m = STATS_RE.search(out)
    if m:
        res["stats"] = tuple(int(x) for x in m.groups())
    return res


def repro(prog, env_extra, spec, strict):
    envs = " ".join("%s=%s" % kv for kv in sorted(env_extra.items()) if kv[0] != "FI_SPEC")
    spec = ",".join(x for x in (env_extra.get("FI_SPEC"), spec) if x)
    return "%s MIMALLOC_TEST_FAIL=%s %s%s" % (envs, spec, prog, " strict" if strict else " concurrent")


def spread(count, all_max, sample):
    if count <= all_max:
        return list(range(1, count + 1))
    return sorted(set(1 + (i * (count - 1)) // (sample - 1) for i in range(sample)))


def check(res, base, kind, n, leak_check):
    """the list of broken rules (empty: the run passed)"""
    errs = []
    if res["rc"] != 0:
        errs.append("exit status %s" % res["rc"])
    if res["stats"] is None:
        errs.append("no statistics line (crashed before the end?)")
    if res["counts"] is None:
        errs.append("no count line")
    elif kind is not None and res["failed"].get(kind, 0) == 0 and res["counts"].get(kind, 0) >= n:
        errs.append("call %d of %s did not fail" % (n, kind))
    if leak_check and res["stats"] is not None and base["stats"] is not None:
        _, reserved, committed, vsz = res["stats"]
        _, b_reserved, b_committed, b_vsz = base["stats"]
        # a refused map may move a segment out of an arena (the first arena reserved later):
        # one segment of the live blocks the C library keeps (stdio, thread descriptors) then
        # counts as reserved on its own
        moved = SEGMENT if kind in ("map", "large", "huge") else 0
        if reserved > b_reserved + moved + META:
            errs.append("reserved %d > %d without failure" % (reserved, b_reserved))
        # the fallbacks: a refused decommit or reset keeps its range committed; a refused
        # unmap leaves its range mapped (at most the failed call's size more)
        # a guard that stays keeps its segment out of use (a warning gives its size)
        kept = res["failed_bytes"] if kind in ("decommit", "reset") else 0
        kept += res["kept_bytes"] if kind in ("guard", "protect") else 0
        if committed > b_committed + kept + META:
            errs.append("committed %d > %d without failure (+%d kept by the failed call)" % (committed, b_committed, kept))
        unmapped = res["failed_bytes"] if kind == "unmap" else 0
        if vsz > b_vsz + SLACK + unmapped:
            errs.append("address space %d > %d without failure (+%d MiB)" % (vsz, b_vsz, (vsz - b_vsz) >> 20))
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("prog")
    ap.add_argument("--prob", action="store_true")
    ap.add_argument("--secure", action="store_true", help="also the configurations for guard pages")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("MI_FAILINJECT_JOBS", "2")))
    ap.add_argument("--all", type=int, default=40)
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--config", action="append")
    ap.add_argument("--kind", action="append", help="only these primitives")
    args = ap.parse_args()
    configs = dict(CONFIGS)
    if args.secure:
        configs.update(SECURE_CONFIGS)
    configs = {k: v for k, v in configs.items() if not args.config or k in args.config}
    start = time.time()
    failures, runs = [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, env_extra in configs.items():
            base = run(args.prog, env_extra, "count", True)
            errs = check(base, base, None, 0, False)
            if errs:
                print("FAIL %s without failure: %s\n  %s\n%s" % (name, "; ".join(errs), repro(args.prog, env_extra, "count", True), base["out"]))
                failures.append(name)
                continue
            counts = base["counts"]
            jobs = []
            if args.prob:
                for seed in range(1, args.seeds + 1):
                    spec = "count,all:p0.01,seed:%d" % seed
                    jobs.append((None, 0, spec, False))
            else:
                for kind in KINDS:
                    if args.kind and kind not in args.kind:
                        continue
                    for n in spread(counts.get(kind, 0), args.all, args.sample):
                        jobs.append((kind, n, "count,trace,%s:%d" % (kind, n), True))
            print("%s: %s; %d runs" % (name, " ".join("%s %d" % (k, counts[k]) for k in KINDS if counts.get(k)), len(jobs)))
            sys.stdout.flush()
            futs = [(j, pool.submit(run, args.prog, env_extra, j[2], j[3])) for j in jobs]
            for (kind, n, spec, strict), fut in futs:
                res = fut.result()
                runs += 1
                errs = check(res, base, kind, n, not args.prob)
                if errs:
                    failures.append("%s %s" % (name, spec))
                    print("FAIL %s %s: %s\n  reproduce: %s" % (name, spec, "; ".join(errs), repro(args.prog, env_extra, spec, strict)))
                    tail = res["out"].strip().splitlines()[-12:]
                    print("    " + "\n    ".join(tail))
                    sys.stdout.flush()
    print("%s: %d runs, %d failed, %.0f s" % ("PASS" if not failures else "FAIL", runs, len(failures), time.time() - start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
