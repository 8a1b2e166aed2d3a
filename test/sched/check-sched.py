#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The schedule fuzzer's checks (docs/testing.md, "Schedule fuzzing"; an MI_SCHED_FUZZ build).

usage: check-sched.py points WORKLOAD    every point reached and fuzzed; the settings parsed
       check-sched.py replay WORKLOAD    the same seed gives the same decisions (one thread)

points: sched-workload points runs with every call an event (p:1, yields only) and `count`:
each point of src/internal/sched.h must be called and have as many events as calls (prof-sample
only where the profiler is built, remote-push only where cross-thread frees are held back: the
workload says so); then with the default probability and
sleeps (PASS, some events); with `points:` (events only there, calls everywhere); with p:0
(no events); with seed:0 (off: no count line); with unknown entries (reported, the rest kept).
replay: sched-workload single, with trace, twice with one seed (the same lines, and some) and
once with another (other lines); MIMALLOC_PURGE_DELAY=-1 and no purger thread, so that the one
thread reaches the same points in the same order."""
import os
import re
import subprocess
import sys

POINTS = ["page-fresh", "page-full", "abandon", "reclaim", "free-last", "free-delayed",
          "remote-push", "delayed-drain", "segment-purge", "arena-purge", "purger-start", "purger-pass", "purger-wait", "heap-delete",
          "heap-destroy", "thread-done", "prof-sample", "sheap-sweep", "sheap-switch"]

failures = []


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def run(workload, mode, sched, extra=None):
    env = dict(os.environ)
    env["MIMALLOC_TEST_SCHED"] = sched
    env.update(extra or {})
    cmd = os.environ.get("MI_TEST_EMULATOR", "").split() + [workload, mode]
    shown = " ".join(f"{k}={v}" for k, v in sorted((extra or {}).items())) + f" MIMALLOC_TEST_SCHED={sched} {workload} {mode}"
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {shown.strip()}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p


def counts(p, what):
    """{point: (calls, events)} from the count line, or None"""
    lines = [l for l in p.stderr.splitlines() if l.startswith("mimalloc-sched: count")]
    if len(lines) != 1:
        fail(f"{what}: {len(lines)} count lines")
        return None
    words = lines[0].split()[2:]
    if len(words) != 3 * len(POINTS):
        fail(f"{what}: count line has {len(words)} words, {3 * len(POINTS)} expected: {lines[0]}")
        return None
    got = {words[i]: (int(words[i + 1]), int(words[i + 2])) for i in range(0, len(words), 3)}
    if sorted(got) != sorted(POINTS):
        fail(f"{what}: the points are {sorted(got)}")
    return got


def check_points(workload):
    purge = {"MIMALLOC_PURGE_DELAY": "1", "MIMALLOC_ARENA_PURGE_MULT": "1"}
    # every call an event, all yields (fast): every point reached and fuzzed
    p = run(workload, "points", "seed:1,p:1,yield:1,count", purge)
    prof = "profiler: on" in p.stdout
    batch = "remote batch: on" in p.stdout   # (release builds hold cross-thread frees back)
    c = counts(p, "p:1")
    if c is not None:
        for name in POINTS:
            calls, events = c[name]
            if name == "prof-sample" and not prof:
                if calls != 0:
                    fail(f"p:1: prof-sample called {calls} times with the profiler off")
                continue
            if name == "remote-push" and not batch:
                if calls != 0:
                    fail(f"p:1: remote-push called {calls} times in a build that does not batch")
                continue
            if calls == 0:
                fail(f"p:1: point {name} never reached")
            if events != calls:
                fail(f"p:1: point {name}: {events} events for {calls} calls")
        print("p:1 counts: " + " ".join(f"{k} {v[0]}" for k, v in c.items()) + f" (profiler {'on' if prof else 'off'}, remote batch {'on' if batch else 'off'})")
    # the defaults: some events, sleeps among them
    p = run(workload, "points", "seed:2,count,trace", purge)
    c = counts(p, "defaults")
    if c is not None:
        calls = sum(v[0] for v in c.values())
        events = sum(v[1] for v in c.values())
        sleeps = sum(1 for l in p.stderr.splitlines() if re.match(r"mimalloc-sched: thread \d+ call \d+ [a-z-]+ sleep \d+$", l))
        yields = sum(1 for l in p.stderr.splitlines() if re.match(r"mimalloc-sched: thread \d+ call \d+ [a-z-]+ yield$", l))
        print(f"defaults: {events} events ({sleeps} sleeps, {yields} yields) in {calls} calls")
        if sleeps + yields != events or sleeps == 0 or yields == 0:
            fail(f"defaults: {events} events, {sleeps} sleeps and {yields} yields traced")
        if not (0.02 * calls <= events <= 0.08 * calls):
            fail(f"defaults: {events} events in {calls} calls, about 5% expected")
    # only some points
    p = run(workload, "points", "seed:3,p:1,sleep:0,points:abandon+reclaim+free-last,count", purge)
    c = counts(p, "points:")
    if c is not None:
        for name, (calls, events) in c.items():
            want = calls if name in ("abandon", "reclaim", "free-last") else 0
            if events != want:
                fail(f"points:abandon+reclaim+free-last: {name} has {events} events for {calls} calls")
        if c["page-fresh"][0] == 0:
            fail("points:...: the other points are not counted")
    # p:0 counts only; seed:0 is off
    c = counts(run(workload, "points", "seed:4,p:0,count", purge), "p:0")
    if c is not None and sum(v[1] for v in c.values()) != 0:
        fail("p:0: events happened")
    p = run(workload, "points", "seed:0,p:1,count,trace", purge)
    if "mimalloc-sched:" in p.stderr:
        fail("seed:0: the fuzzer is not off")
    # unknown entries and points are reported; the rest is kept
    p = run(workload, "single", "bogus:3,p:1,yield:1,points:nope+heap-delete,count")
    if "mimalloc-sched: unknown entry in MIMALLOC_TEST_SCHED: bogus" not in p.stderr:
        fail("an unknown entry is not reported")
    if "mimalloc-sched: unknown point in MIMALLOC_TEST_SCHED: nope" not in p.stderr:
        fail("an unknown point is not reported")
    c = counts(p, "unknown entries")
    if c is not None and (c["heap-delete"][1] == 0 or c["heap-delete"][1] != sum(v[1] for v in c.values())):
        fail(f"unknown entries: the rest of the list is not kept ({c})")


def trace(p):
    return [l for l in p.stderr.splitlines() if l.startswith("mimalloc-sched: thread")]


def check_replay(workload):
    quiet = {"MIMALLOC_PURGE_DELAY": "-1", "MIMALLOC_PURGE_THREAD": "0"}
    a = trace(run(workload, "single", "seed:5,p:0.1,sleep:50,trace", quiet))
    b = trace(run(workload, "single", "seed:5,p:0.1,sleep:50,trace", quiet))
    c = trace(run(workload, "single", "seed:6,p:0.1,sleep:50,trace", quiet))
    print(f"replay: seed 5: {len(a)} and {len(b)} events, seed 6: {len(c)}")
    if len(a) < 20:
        fail(f"replay: only {len(a)} events")
    if a != b:
        diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        fail(f"replay: the traces of seed 5 differ from event {diff}: {a[diff:diff+1]} / {b[diff:diff+1]}")
    if a == c:
        fail("replay: seeds 5 and 6 made the same trace")
    if any(not l.startswith("mimalloc-sched: thread 1 ") for l in a):
        fail("replay: a one-thread program had events on another thread")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("points", "replay"):
        print(__doc__)
        return 2
    if sys.argv[1] == "points":
        check_points(sys.argv[2])
    else:
        check_replay(sys.argv[2])
    print(("FAIL" if failures else "PASS") + f" sched-{sys.argv[1]}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
