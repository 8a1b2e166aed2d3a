#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The live view is never stale (label live): live-fresh's threads stop calling the allocator's
slow paths right after a burst (the main thread allocates and frees on the fast paths ten times a
second, one thread blocks in read(), one frees without allocating). With MIMALLOC_LIVE=1 and an
interval of INTERVAL ms, for several seconds after the bursts, every snapshot that
tools/mimalloc-live takes must show:
  - each thread's bytes in use as the program holds them (the bursts; the freer's figure after
    its frees), with its document at most two intervals old;
  - the process document at most two intervals old, its committed memory at least the bursts;
  - the viewer's ages in `top` and /metrics-style output (no "STALE").
usage: run-live-fresh.py PROGRAM VIEWER
"""
import os
import subprocess
import sys
import threading
import time
from importlib.machinery import SourceFileLoader

sys.dont_write_bytecode = True
PROG, VIEWER = sys.argv[1], sys.argv[2]
live_mod = SourceFileLoader("mimalloc_live", VIEWER).load_module()
INTERVAL = 500          # ms (ages may reach 1.5 intervals; the check allows 2, for a loaded machine)
WATCH = 5.0             # s of snapshots after the bursts
MAIN = 24000 * 2000     # the bursts (live-fresh.c), as requested sizes: bins are at least this
SLEEPER = 16000 * 1000
FREER_BLOCKS, FREER_LATER = 20000, 15000
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL", msg, flush=True)
    return cond


env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
env.update({"MIMALLOC_LIVE": "1", "MIMALLOC_LIVE_INTERVAL": str(INTERVAL)})
p = subprocess.Popen([PROG], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
tids = {}
while True:
    line = p.stdout.readline()
    if not line:
        sys.exit("live-fresh ended before it was ready")
    words = line.split()
    if words[0] == "tid":
        tids[words[1]] = int(words[2])
    elif words[0] == "ready":
        break
ready = time.monotonic()
live = live_mod.LiveFile(p.pid)
freed_seen = None
snapshots = 0
worst = {}


def read_rest():
    global freed_seen
    for line in p.stdout:
        if line.strip() == "freed":
            freed_seen = time.monotonic()


threading.Thread(target=read_rest, daemon=True).start()
try:
    while time.monotonic() - ready < WATCH:
        time.sleep(INTERVAL / 1000 * 0.7)
        s = live.snapshot()
        snapshots += 1
        by_tid = {t["tid"]: t for t in s["threads"]}
        late = time.monotonic() - ready > 2 * INTERVAL / 1000   # (the first snapshot may precede a publication)
        for name, tid in tids.items():
            t = by_tid.get(tid)
            if not check(t is not None, f"{name} (tid {tid}) has no document"):
                continue
            worst[name] = max(worst.get(name, 0), t["age_ms"])
            if late:
                check(t["age_ms"] <= 2 * INTERVAL and not t["stale"],
                      f"{name}'s figures are {t['age_ms']} ms old at {time.monotonic() - ready:.1f} s (interval {INTERVAL} ms)")
        if not check(s["process"] is not None, "no consistent process document"):
            continue
        proc = s["process"]["process"]
        worst["process"] = max(worst.get("process", 0), s["process_age_ms"])
        if late:
            check(s["process_age_ms"] <= 2 * INTERVAL and not s["process_stale"],
                  f"the process figures are {s['process_age_ms']} ms old (elapsed_msecs {proc['elapsed_msecs']})")
            check(s["process"]["committed"]["current"] >= MAIN + SLEEPER,
                  f"committed {s['process']['committed']['current']} is below the bursts ({MAIN + SLEEPER})")
            m, sl, fr = by_tid.get(tids["main"]), by_tid.get(tids["sleeper"]), by_tid.get(tids["freer"])
            if m and sl:
                check(MAIN <= m["bytes"]["current"] <= MAIN * 1.1, f"main holds {m['bytes']['current']} bytes, not {MAIN}")
                check(SLEEPER <= sl["bytes"]["current"] <= SLEEPER * 1.1, f"sleeper holds {sl['bytes']['current']} bytes, not {SLEEPER}")
            # once the freer said it is done, and an interval after that, its figure shows it
            if fr and freed_seen is not None and time.monotonic() - freed_seen > 2 * INTERVAL / 1000:
                check(fr["blocks"]["current"] <= FREER_BLOCKS - FREER_LATER + 64,
                      f"freer shows {fr['blocks']['current']} blocks after freeing {FREER_LATER} of {FREER_BLOCKS}")
                check(fr["frees"] >= FREER_LATER, f"freer shows {fr['frees']} frees, not at least {FREER_LATER}")
    check(freed_seen is not None, "the freer never finished")
    # the terminal view says how old the figures are
    top = subprocess.run([sys.executable, VIEWER, "top", str(p.pid), "--count", "1"], capture_output=True, text=True)
    check(top.returncode == 0 and "figures " in top.stdout and "STALE" not in top.stdout, f"top: {top.stdout}{top.stderr}")
    metrics = live_mod.metrics(live.snapshot())
    check("mimalloc_process_figures_age_seconds" in metrics and "mimalloc_thread_figures_age_seconds{" in metrics,
          "/metrics has no ages")
finally:
    p.stdin.close()
    p.wait(timeout=30)
print(f"{snapshots} snapshots over {WATCH} s; largest ages (ms): {worst}")
if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("live-fresh: ok")
