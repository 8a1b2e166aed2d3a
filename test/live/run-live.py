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
    draws the chart; from a snapshot that lacks a field, it marks that card as missing.
usage: run-live.py PROGRAM VIEWER [SCREENSHOT.png]
"""
import decimal
import html.parser
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from importlib.machinery import SourceFileLoader

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


DASH = "\u2013"   # what the page shows for a figure that is not known (null)


def js_fixed(x, digits):
    """JavaScript's Number.prototype.toFixed: exact binary value, ties away from zero (Python's
    format rounds ties to even: 1.25 KiB would be "1.2" here and "1.3" on the page)."""
    v = decimal.Decimal(x).quantize(decimal.Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_UP)
    return f"{abs(v) if v == 0 else v:f}"


def fmt_bytes(n):
    if n is None:
        return DASH
    units, i = ("B", "KiB", "MiB", "GiB", "TiB"), 0
    while abs(n) >= 1024 and i < len(units) - 1:
        n /= 1024
        i += 1
    return js_fixed(n, 0 if i == 0 else 1) + " " + units[i]


def fmt_rate(r):
    if r is None:
        return DASH
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= div:
            return js_fixed(r / div, 1) + unit
    return js_fixed(r, 0)


def fmt_count(n):
    """toLocaleString("en-US") of an integer."""
    return DASH if n is None else f"{int(n):,}"


def fmt_secs(ms):
    return DASH if ms is None else js_fixed(ms / 1000, 1) + " s"


def rate_sum(threads, key):
    """The sum over the threads whose rate is known, None when none is."""
    if all(t[key] is None for t in threads):
        return None
    total = 0
    for t in threads:   # in the page's order: the same floating-point sum
        total += t[key] or 0
    return total


def expected_view(s):
    """What the page must show for snapshot s: [(label, value, sub)] of the cards in order, the
    thread rows by tid, and the size-class rows in order (the cells' text), from the field
    paths of docs/live.md and docs/statistics.md."""
    p, o = s["process"], s["os"]
    cards = [
        ("RSS", fmt_bytes(o["rss"]), "peak " + fmt_bytes(o["rss_peak"])),
        ("committed", fmt_bytes(p["committed"]["current"]), "peak " + fmt_bytes(p["committed"]["peak"])),
        ("in use", fmt_bytes(p["page_committed"]["current"]), "peak " + fmt_bytes(p["page_committed"]["peak"])),
        ("reserved", fmt_bytes(p["reserved"]["current"]), "address space"),
        ("threads", fmt_count(p["threads"]["current"]), "peak " + fmt_count(p["threads"]["peak"])),
        ("allocations /s", fmt_rate(rate_sum(s["threads"], "allocs_per_sec")),
         fmt_rate(rate_sum(s["threads"], "frees_per_sec")) + " frees /s"),
        ("abandoned", fmt_count(p["segments_abandoned"]["current"]) + " segments",
         fmt_count(p["pages_abandoned"]["current"]) + " pages"),
        ("purged", fmt_bytes(p["purged"]), fmt_count(p["purge_calls"]) + " purges"),
    ]
    threads = {str(t["tid"]): [t["name"] or "?", str(t["tid"]), fmt_bytes(t["bytes"]["current"]), fmt_bytes(t["bytes"]["peak"]),
                               fmt_count(t["blocks"]["current"]), fmt_count(t["blocks"]["peak"]),
                               fmt_rate(t["allocs_per_sec"]), fmt_rate(t["frees_per_sec"]), fmt_secs(t["msecs"]), ""]
               for t in s["threads"]}
    classes = [[fmt_bytes(c["block_size"]) if c["block_size"] else "huge", fmt_count(c["blocks"]), fmt_count(c["peak"]),
                fmt_bytes(c["bytes"]), ""]
               for c in s["size_classes"] if c["blocks"] > 0 or c["peak"] > 0]
    return cards, threads, classes


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find(self, pred):
        """Every element below this one for which pred holds, in document order."""
        found = []
        for c in self.children:
            if isinstance(c, Node):
                if pred(c):
                    found.append(c)
                found += c.find(pred)
        return found


class DomParser(html.parser.HTMLParser):
    VOID = {"meta", "link", "br", "img", "input", "hr", "area", "base", "col", "source", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = Node("#root", [], None)
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in self.VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def by_id(root, ident):
    found = root.find(lambda n: n.attrs.get("id") == ident)
    return found[0] if found else Node("#none", [], None)


def has_class(n, cls):
    return cls in (n.attrs.get("class") or "").split()


def shown_view(dom):
    """What the dumped page shows: the cards [(label, value, sub, missing)], the thread rows
    {tid: (cells, missing)}, the size-class rows [(cells, missing)], the polylines' points."""
    root = DomParser(dom).root
    cards = []
    for card in by_id(root, "cards").find(lambda n: has_class(n, "card")):
        parts = [d.text() for d in card.find(lambda n: n.tag == "div")]
        cards.append((*(parts + ["", "", ""])[:3], card.attrs.get("data-missing")))
    threads = {}
    for tr in by_id(root, "threads").find(lambda n: n.tag == "tr" and "data-tid" in n.attrs):
        threads[tr.attrs["data-tid"]] = ([td.text() for td in tr.find(lambda n: n.tag == "td")], tr.attrs.get("data-missing"))
    tbody = by_id(root, "classes").find(lambda n: n.tag == "tbody")
    classes = [([td.text() for td in tr.find(lambda n: n.tag == "td")], tr.attrs.get("data-missing"))
               for tr in (tbody[0].find(lambda n: n.tag == "tr") if tbody else [])]
    points = [n.attrs.get("points", "") for n in by_id(root, "chart").find(lambda n: n.tag == "polyline")]
    return cards, threads, classes, points, by_id(root, "nthreads").text()


class FrozenView:
    """Serves the viewer's page and one fixed /live.json body, so that every poll of the page
    renders the JSON the test compares it with."""

    def __init__(self, page, body):
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, ctype, data, code=200):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/":
                    self._send("text/html; charset=utf-8", page)
                elif self.path.startswith("/live.json"):
                    self._send("application/json", body)
                else:
                    self._send("text/plain", b"not found\n", 404)

            def do_POST(self):
                self._send("application/json", b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--virtual-time-budget=4000", "--window-size=1280,900"]


def browser_dom(chromium, page, snap):
    """The page's DOM after it rendered snap (its polls in four seconds of virtual time)."""
    view = FrozenView(page, json.dumps(snap).encode())
    try:
        with tempfile.TemporaryDirectory() as ud:
            out = subprocess.run([chromium, *BROWSER_FLAGS, f"--user-data-dir={ud}", "--dump-dom", view.url],
                                 capture_output=True, text=True, timeout=120)
        return out.stdout
    finally:
        view.close()


def browser_checks(base, page, snap, tids):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("SKIP browser check: chromium not installed (Debian: apt-get install chromium)")
        return
    # snap: the driver's own reader's snapshot of phase 2 (json.dumps of it is what /live.json
    # serves). Its peaks differ from the current figures (a page that swaps them fails) and the
    # workers' rates are known, where the server's fresh reader gives null until it has seen
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
    check(any(t["name"] == "live-worker-0" for t in snap["threads"]), "thread names missing")
    # a field the page reads that the JSON lacks shows as an error, not as a quiet "–"
    broken = json.loads(json.dumps(snap))
    del broken["process"]["purged"]
    del broken["threads"][0]["msecs"]
    cards, threads, _, _, _ = shown_view(browser_dom(chromium, page, broken))
    marks = {c[0]: c[3] for c in cards}
    check(marks.get("purged") == "process.purged" and all(m is None for k, m in marks.items() if k != "purged"),
          f"browser: without process.purged, the cards' missing marks are {marks}, expected the purged card's only")
    tid0 = str(broken["threads"][0]["tid"])
    check(threads.get(tid0, ([], None))[1] == "msecs",
          f"browser: without msecs, thread {tid0}'s missing mark is {threads.get(tid0, ([], None))[1]!r}, expected 'msecs'")
    if SHOT:   # the real viewer, as a user sees it
        with tempfile.TemporaryDirectory() as ud:
            subprocess.run([chromium, *BROWSER_FLAGS, f"--user-data-dir={ud}", f"--screenshot={SHOT}", base + "/"],
                           capture_output=True, timeout=120)
        print(f"browser screenshot: {SHOT}" if os.path.exists(SHOT) else "browser screenshot: not written")

def run_off():
    prog = Prog({})
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
