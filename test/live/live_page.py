# SPDX-License-Identifier: MIT
"""The live page as run-live.py checks it: what the page must show for a /live.json snapshot,
formatted here independently of the page (expected_view); what a headless browser's dump of
the page shows (shown_view); and a server of the page with one fixed snapshot, so that every
poll of the page renders the JSON the test compares it with (browser_dom)."""
import decimal
import html.parser
import http.server
import json
import subprocess
import tempfile
import threading

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
    if p.get("memory_limit"):   # only while a limit is in force
        limit, hard = p["memory_limit"], p["memory_limit_hard"]
        cards.append(("memory limit", fmt_bytes(limit),
                      "headroom " + fmt_bytes(max(0, limit - p["committed"]["current"])) + ", " +
                      fmt_count(p["memory_limit_purges"]) + " purges" + (", hard " + fmt_bytes(hard) if hard else "")))
    threads = {str(t["tid"]): [t["name"] or "?", str(t["tid"]), fmt_bytes(t["bytes"]["current"]), fmt_bytes(t["bytes"]["peak"]),
                               fmt_count(t["blocks"]["current"]), fmt_count(t["blocks"]["peak"]),
                               fmt_rate(t["allocs_per_sec"]), fmt_rate(t["frees_per_sec"]), fmt_secs(t["age_ms"]), ""]
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
