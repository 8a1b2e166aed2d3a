#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Live statistics (label live): runs live-prog through its phases with MIMALLOC_LIVE=1 and
checks what tools/mimalloc-live reads at each one:
  - each worker thread's blocks and bytes in its size class are exactly what it holds, its
    name is the one it set, and peaks follow (phase 2: current halves, peak stays; after a
    reset of the peaks, phase 3: peak = current);
  - its allocations and frees are exactly those it made, and the viewer's rates follow them
    (phase 2: frees but no allocations per second; phase 3: neither);
  - ended threads leave the view, and the file is gone when the process exits;
  - the process document has the MIMALLOC_STATS_JSON schema;
  - a fork child publishes nothing (no document of it in the parent's file, no file of its own)
    unless it asks with mi_option_set (then its own file shows it, and goes at its exit);
  - without the option: no file and no extra thread;
  - the viewer's HTTP server: the page, /live.json, POST /reset, POST /interval;
  - `clean` removes the file of an ended process and keeps a running one's;
  - in headless Chromium (when installed), the page rendered from a snapshot of /live.json
    shows every card's value, every thread row and every size-class row exactly as that JSON
    gives it (formatted here, independently of the page), marks no field as missing, and
    draws the chart; from a snapshot that lacks a field, it marks that card as missing
    (the page's expected text, its DOM and the fixed-snapshot server: live_page.py).
usage: run-live.py PROGRAM VIEWER [SCREENSHOT.png]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib.machinery import SourceFileLoader

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
from live_page import BROWSER_FLAGS, DASH, browser_dom, expected_view, shown_view  # noqa: E402

PROG, VIEWER = sys.argv[1], sys.argv[2]
SHOT = sys.argv[3] if len(sys.argv) > 3 else None
live_mod = SourceFileLoader("mimalloc_live", VIEWER).load_module()
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL", msg)
    return cond


class Prog:
    def __init__(self, env_extra, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
        env.update(env_extra)
        self.p = subprocess.Popen([PROG, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)
        self.workers = {}   # i -> (tid, size, count)
        self.child = None
        self.child_live = None

    def until_ready(self, n):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"program ended before ready {n}")
            parts = line.split()
            if parts[:1] == ["tid"]:
                self.workers[int(parts[1])] = (int(parts[2]), int(parts[3]), int(parts[4]))
            elif parts[:1] == ["child"]:
                self.child = (int(parts[1]), int(parts[2]))
            elif parts[:1] == ["child-live"]:
                self.child_live = (int(parts[1]), int(parts[2]))
            elif parts == ["ready", str(n)]:
                return

    def next(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def finish(self):
        self.next()
        return self.p.wait(timeout=30)


def snapshot(live, want_tids, pred, what, timeout=5.0):
    """The first snapshot in which pred holds for every wanted thread's document (publications
    happen at mi_collect: a snapshot may still be one publication behind), else the last."""
    deadline = time.time() + timeout
    while True:
        s = live.snapshot()
        by_tid = {t["tid"]: t for t in s["threads"]}
        if all(t in by_tid and pred(by_tid[t]) for t in want_tids) or time.time() > deadline:
            return s, by_tid
        time.sleep(0.05)


def size_bin(doc, size):
    """The bin entry of the size class serving `size` (the smallest block size >= size)."""
    fits = [b for b in doc["bins"] if b["block_size"] >= size]
    return min(fits, key=lambda b: b["block_size"]) if fits else None


def phase_checks(prog, live, phase):
    for i, (tid, size, count) in sorted(prog.workers.items()):
        held = count if phase == 1 else count // 2
        peak = count if phase in (1, 2) else count // 2
        allocs, frees = count + 1, (0 if phase == 1 else count // 2)   # and the pointer array
        s, by_tid = snapshot(live, [tid], lambda d: size_bin(d, size) is not None and size_bin(d, size)["blocks"] == held and size_bin(d, size)["peak"] == peak
                             and d["allocs"] == allocs and d["frees"] == frees, f"phase {phase}")
        doc = by_tid.get(tid)
        if not check(doc is not None, f"phase {phase}: worker {i} (tid {tid}) not in the view"):
            continue
        b = size_bin(doc, size)
        if not check(b is not None, f"phase {phase}: worker {i}: no size class for {size} bytes in {doc['bins']}"):
            continue
        check(b["blocks"] == held, f"phase {phase}: worker {i}: {b['blocks']} blocks of {b['block_size']} B, expected {held}")
        check(b["peak"] == peak, f"phase {phase}: worker {i}: peak {b['peak']}, expected {peak}")
        check(b["bytes"] == held * b["block_size"], f"phase {phase}: worker {i}: bytes {b['bytes']} != {held} x {b['block_size']}")
        check(size <= b["block_size"] < size * 1.25 + 48,   # debug builds: plus the padding
              f"phase {phase}: worker {i}: size class {b['block_size']} for {size} bytes")
        # its only other block: the pointer array
        check(doc["blocks"]["current"] == held + 1, f"phase {phase}: worker {i}: {doc['blocks']['current']} blocks in all, expected {held + 1}")
        check(doc["name"] == f"live-worker-{i}", f"phase {phase}: worker {i}: name {doc['name']!r}")
        check(doc["allocs"] == allocs and doc["frees"] == frees,
              f"phase {phase}: worker {i}: {doc['allocs']} allocations and {doc['frees']} frees, expected {allocs} and {frees}")
        if phase == 2:   # since phase 1's publication: frees only
            check(doc["allocs_per_sec"] == 0 and (doc["frees_per_sec"] or 0) > 0,
                  f"phase 2: worker {i}: {doc['allocs_per_sec']} allocations/s and {doc['frees_per_sec']} frees/s, expected 0 and > 0")
        elif phase == 3:
            check(doc["allocs_per_sec"] == 0 and doc["frees_per_sec"] == 0,
                  f"phase 3: worker {i}: {doc['allocs_per_sec']} allocations/s and {doc['frees_per_sec']} frees/s, expected 0 and 0")
    return s


def run_live():
    prog = Prog({"MIMALLOC_LIVE": "1", "MIMALLOC_LIVE_INTERVAL": "50"}, "fork")
    pid = prog.p.pid
    prog.until_ready(1)
    path = f"/dev/shm/mimalloc-live.{pid}"
    check(os.path.exists(path), f"{path} missing with MIMALLOC_LIVE=1")
    live = live_mod.LiveFile(pid)
    check(live.interval_ms == 50, f"interval {live.interval_ms}, expected 50 (MIMALLOC_LIVE_INTERVAL)")
    s = phase_checks(prog, live, 1)
    # the process document includes what the threads hold (each forced publication merges first)
    held = lambda snap: sum(t["bytes"]["current"] for t in snap["threads"])
    deadline = time.time() + 5
    while (s["process"] or {}).get("page_committed", {}).get("current", 0) < held(s) and time.time() < deadline:
        time.sleep(0.05)
        s = live.snapshot()
    check(s["process"]["page_committed"]["current"] >= held(s),
          f"process: pages in use {s['process']['page_committed']['current']} < {held(s)} bytes the threads hold")
    p = s["process"]
    check(p is not None and p.get("mimalloc_version") == 20401 and "malloc_bins" in p and "committed" in p,
          "process document lacks the MIMALLOC_STATS_JSON fields")
    # the fork child published nothing into this file and has none of its own
    check(prog.child is not None and prog.child[1] == 0, f"fork child: {prog.child}")
    if prog.child:
        check(prog.child[0] not in {t["tid"] for t in s["threads"]}, "the fork child published into the parent's file")
        check(not os.path.exists(f"/dev/shm/mimalloc-live.{prog.child[0]}"), "the fork child made a file of its own")
    codes = {5: "it has no file", 6: "its file lacks its thread", 7: "its thread does not show 6001 allocations (5000, 1000 in a deleted arena heap and the heap)",
             8: "it could not make its arena heap"}
    check(prog.child_live is not None and prog.child_live[1] == 0,
          f"fork child with mi_option_set(mi_option_live): {codes.get(prog.child_live[1], prog.child_live) if prog.child_live else 'no report'}")
    if prog.child_live:
        check(not os.path.exists(f"/dev/shm/mimalloc-live.{prog.child_live[0]}"), "the publishing fork child's file outlived it")
    clean_checks(path)
    prog.next()
    prog.until_ready(2)
    phase_checks(prog, live, 2)
    view_snap = live.snapshot()   # for the page: peaks above the current figures, frees per second
    live.reset_peaks()
    prog.next()
    prog.until_ready(3)
    phase_checks(prog, live, 3)
    # the viewer's server, while the program runs (its reset comes after the peak checks)
    serve_checks(prog, pid, view_snap)
    prog.next()
    prog.until_ready(4)
    tids = {tid for tid, _, _ in prog.workers.values()}
    s, _ = snapshot(live, [], lambda d: True, "phase 4")
    check(not tids & {t["tid"] for t in s["threads"]}, "ended threads are still in the view")
    check(prog.finish() == 0, "live-prog failed")
    check(not os.path.exists(path), f"{path} still there after the process exited")


def clean_checks(running):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"/dev/shm/mimalloc-live.{dead.pid}"   # as a killed program leaves it
    with open(stale, "wb") as f:
        f.write(b"\0" * 4096)
    out = subprocess.run([sys.executable, VIEWER, "clean"], capture_output=True, text=True, timeout=30)
    check(out.returncode == 0 and not os.path.exists(stale), f"clean left {stale}: {out.stdout}{out.stderr}")
    check(os.path.exists(running), f"clean removed the running program's {running}")
    if os.path.exists(stale):
        os.unlink(stale)


def serve_checks(prog, pid, view_snap):
    srv = subprocess.Popen([sys.executable, VIEWER, "serve", str(pid), "--listen", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not check(m is not None, f"viewer did not say where it serves: {line!r}"):
            return
        base = f"http://127.0.0.1:{m.group(1)}"
        page = urllib.request.urlopen(base + "/", timeout=10).read().decode()
        check('<svg id="chart"' in page and "<script>" in page, "the page is not the live view")
        check(not re.search(r"<(script|link)[^>]+(src|href)=", page), "the page loads external resources")
        data = json.loads(urllib.request.urlopen(base + "/live.json", timeout=10).read())
        tids = {tid for tid, _, _ in prog.workers.values()}
        check(tids <= {t["tid"] for t in data["threads"]}, "/live.json lacks the workers")
        hdr = prog_header(pid)
        r = urllib.request.urlopen(urllib.request.Request(base + "/reset", method="POST", data=b""), timeout=10)
        check(json.loads(r.read()).get("reset") is True, "POST /reset did not answer")
        check(prog_header(pid) == hdr + 1, "POST /reset did not raise the reset request")
        r = urllib.request.urlopen(urllib.request.Request(base + "/interval?ms=200", method="POST", data=b""), timeout=10)
        check(json.loads(r.read()).get("interval_ms") == 200, "POST /interval did not answer")
        check(prog_header(pid, -2) == 200, f"POST /interval: the program's interval is {prog_header(pid, -2)} ms, expected 200")
        urllib.request.urlopen(urllib.request.Request(base + "/interval?ms=50", method="POST", data=b""), timeout=10)
        browser_checks(base, page.encode(), view_snap, tids)
    finally:
        srv.terminate()
        srv.wait(timeout=10)


def prog_header(pid, field=-1):
    """A field of the program's header: the reset request (-1), the interval (-2)."""
    with open(f"/dev/shm/mimalloc-live.{pid}", "rb") as f:
        data = f.read(live_mod.HEADER.size)
    return live_mod.HEADER.unpack(data)[field]


def browser_checks(base, page, snap, tids):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIP browser check: chromium not installed (Debian: apt-get install chromium)")
        return
    # snap: the driver's own reader's snapshot of phase 2 (json.dumps of it is what /live.json
    # serves). The threads' peaks and the in-use and RSS peaks differ from the current figures
    # (a page that swaps them fails), and the workers' rates are known, where the server's fresh reader gives null until it has seen
    # two publications of a thread.
    check(snap["process"]["purged"] > 0 and snap["process"]["purge_calls"] > 0,
          f"the program purged nothing (purged {snap['process']['purged']}): the purged card would show 0 B on any page")
    want_cards, want_threads, want_classes = expected_view(snap)
    cards, threads, classes, points, nthreads = shown_view(browser_dom(chromium, page, snap))
    check([c[0] for c in cards] == [c[0] for c in want_cards],
          f"browser: cards {[c[0] for c in cards]}, expected {[c[0] for c in want_cards]}")
    for (label, v, sub, missing), (wlabel, wv, wsub) in zip(cards, want_cards):
        check(missing is None, f"browser: card {label!r}: fields not in the JSON: {missing}")
        check(label == wlabel and v == wv and sub == wsub and DASH not in v + sub,
              f"browser: card {label!r} shows {v!r} / {sub!r}, expected {wv!r} / {wsub!r}")
    check(nthreads == f"({len(snap['threads'])})", f"browser: thread count {nthreads!r}, expected ({len(snap['threads'])})")
    check(set(threads) == set(want_threads), f"browser: thread rows {sorted(threads)}, expected {sorted(want_threads)}")
    for tid in tids:
        check(str(tid) in threads, f"browser: the page shows no row for thread {tid}")
    for tid, (cells, missing) in threads.items():
        check(missing is None, f"browser: thread {tid}: fields not in the JSON: {missing}")
        check(cells == want_threads.get(tid), f"browser: thread {tid} shows {cells}, expected {want_threads.get(tid)}")
    check(len(classes) == len(want_classes) > 0, f"browser: {len(classes)} size-class rows, expected {len(want_classes)}")
    for i, ((cells, missing), want) in enumerate(zip(classes, want_classes)):
        check(missing is None, f"browser: size class {cells[:1]}: fields not in the JSON: {missing}")
        check(cells == want, f"browser: size-class row {i} shows {cells}, expected {want}")
    check(len(points) >= 3 and all(len(p.split()) >= 2 for p in points), f"browser: the chart has no lines ({len(points)} polylines)")
    check(any(t["name"] == "live-worker-0" for t in snap["threads"]), "the snapshot lacks the workers' names")
    # a field the page reads that the JSON lacks shows as an error, not as a quiet "–"
    broken = json.loads(json.dumps(snap))
    del broken["process"]["purged"]
    del broken["threads"][0]["age_ms"]
    cards, threads, _, _, _ = shown_view(browser_dom(chromium, page, broken))
    marks = {c[0]: c[3] for c in cards}
    check(marks.get("purged") == "process.purged" and all(m is None for k, m in marks.items() if k != "purged"),
          f"browser: without process.purged, the cards' missing marks are {marks}, expected the purged card's only")
    tid0 = str(broken["threads"][0]["tid"])
    check(threads.get(tid0, ([], None))[1] == "age_ms",
          f"browser: without age_ms, thread {tid0}'s missing mark is {threads.get(tid0, ([], None))[1]!r}, expected 'age_ms'")
    # a memory limit in force: its card (limit, headroom, purges, the hard limit), and its line on
    # the chart where it is near the figures; none without a limit (the program runs without one)
    check(all(c[0] != "memory limit" for c in want_cards), "the program's snapshot has a memory limit: the page's no-limit case is untested")
    limited = json.loads(json.dumps(snap))
    lp = limited["process"]
    lp["memory_limit"] = lp["committed"]["current"] + 3 * 1024 * 1024 + 512 * 1024
    lp["memory_limit_purges"], lp["memory_limit_hard"] = 7, 2 * lp["memory_limit"]
    want_cards = expected_view(limited)[0]
    dom = browser_dom(chromium, page, limited)
    cards = shown_view(dom)[0]
    check([c[:3] for c in cards] == want_cards and all(c[3] is None for c in cards),
          f"browser: with a memory limit the cards are {cards}, expected {want_cards}")
    check('id="limit-line"' in dom, "browser: no limit line on the chart with the limit near the figures")
    if SHOT:   # the real viewer, as a user sees it
        with tempfile.TemporaryDirectory() as ud:
            subprocess.run([chromium, *BROWSER_FLAGS, f"--user-data-dir={ud}", f"--screenshot={SHOT}", base + "/"],
                           capture_output=True, timeout=120)
        print(f"browser screenshot: {SHOT}" if os.path.exists(SHOT) else "browser screenshot: not written")

def run_off():
    # (the purger thread off: it would start with the workers' frees; this checks the live view's)
    prog = Prog({"MIMALLOC_PURGE_THREAD": "0"})
    pid = prog.p.pid
    prog.until_ready(1)
    check(not os.path.exists(f"/dev/shm/mimalloc-live.{pid}"), "a live file exists without MIMALLOC_LIVE")
    threads = len(os.listdir(f"/proc/{pid}/task"))
    check(threads == 4, f"{threads} threads without the option, expected 4 (main and 3 workers)")
    for n in (2, 3, 4):
        prog.next()
        prog.until_ready(n)
    check(prog.finish() == 0, "live-prog failed (option off)")


def main():
    run_off()
    run_live()
    if failures:
        print(f"FAIL live: {len(failures)} failures")
        return 1
    print("PASS live: figures per thread and size class, peaks and reset, thread exit, fork child, "
          "option off, viewer server" + ("" if shutil.which("chromium") is None else ", browser"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
