#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""run-stats.py -- JSON and exit-time statistics checks (ctest stats-json, stats-exit-*, label stats).

Runs stats-child (stats-child.c) in a clean environment (only PATH and sanitizer settings are
inherited, plus the MIMALLOC_* variables of the group) and checks:

  v3-json           --child test-stats-v3: the JSON of v3 mode's heap and subprocess statistics
                    parses and holds the figures the program saw (mi_heap_stats_get)
  json              mi_stats_get_json: valid JSON (no duplicate keys), stat_version 4,
                    mimalloc_version 20401, the process object, every mi_stats_t field with the
                    right shape, malloc_bins/page_bins entries with block_size/page_size; the
                    caller-buffer document equals mi_stats_get taken just before it, and its bins
                    folded into mimalloc v2's numbering equal mi_stats_get's bins; the allocated
                    (buf NULL) and size-0 documents are valid and no older than it.
  exit-json         MIMALLOC_STATS_JSON=<file>: a valid document is written at exit whose
                    figures equal the child's last mi_stats_get.
  exit-json-badpath an unwritable MIMALLOC_STATS_JSON path: the program still exits normally.
  exit-show         MIMALLOC_SHOW_STATS=1 (with MIMALLOC_STATS_JSON too): the statistics text on
                    stderr, in mimalloc's layout (docs/statistics.md), each row equal to the same
                    figures of the exit JSON formatted by that layout's rules; nothing on stdout but
                    the child's own lines.
  exit-verbose      MIMALLOC_VERBOSE=1: the same text on stderr among "mimalloc: " messages.
  exit-quiet        no variable / MIMALLOC_SHOW_STATS=0: no statistics at exit, empty stderr.
  exit-output       MIMALLOC_SHOW_STATS=1 with mi_register_output: the text goes to the
                    registered function (stdout, "OUT|" prefix), nothing to stderr.
  legacy-print      mi_stats_print(NULL / stdout / stderr) prints to the default output (stderr)
                    three times and returns (pending when written: the FILE pointers crash).

The groups above check mimalloc's layout: they run with MIMALLOC_STATS_LAYOUT=mimalloc. The
readable layout (the default, docs/statistics.md) is checked by:

  readable-show     MIMALLOC_SHOW_STATS=1 with MIMALLOC_STATS_JSON: the text on stderr equals,
                    line by line, the text built here from the exit JSON (same snapshot): the
                    summary line first (peak RSS = process.rss_peak, peak in use =
                    page_committed.peak, elapsed/user/system, page faults), then the sections
                    with exactly the rows that are not zero; every row name is in the tables of
                    docs/statistics.md, no cell is empty, no line is wider than 100 columns
                    (the summary 120), none holds one of mimalloc's labels ("-abandoned",
                    "heap stats", ...). Per-block statistics (debug builds): a "blocks by size"
                    section with a row per size class of the workload, named by its exact block
                    size; without them: no block rows at all.
  readable-freed    the same after the child freed everything and collected: rows whose current
                    value is 0 (huge blocks, ended threads' segments and pages) print "0".
  readable-verbose  MIMALLOC_VERBOSE=1: the same structure among "mimalloc: " messages.
  readable-output   mi_register_output: one line per call, the same structure.
  readable-legacy   mi_stats_print(NULL / stdout / stderr): three readable blocks on stderr.
  readable-thread   mi_thread_stats_print_out: the thread heading instead of the summary; a
                    thread that never allocated prints no rows; a busy thread's figures (with
                    per-block statistics: its 100- and 200-byte size classes).
  layout-select     MIMALLOC_STATS_LAYOUT: "mimalloc" in any case selects mimalloc's layout;
                    unset, empty, "readable" or anything else the readable one.
"""
import argparse
import json
import os
import re
import subprocess
import shlex
import sys
import tempfile

COUNTS = ["pages", "reserved", "committed", "page_committed", "pages_abandoned", "threads",
          "malloc_normal", "malloc_huge", "malloc_requested", "segments", "segments_abandoned",
          "segments_cache", "_segments_reserved"]
COUNTERS = ["reset", "purged", "mmap_calls", "commit_calls", "reset_calls", "purge_calls", "arena_count",
            "malloc_normal_count", "malloc_huge_count", "malloc_guarded_count", "arena_rollback_count",
            "arena_purges", "pages_extended", "pages_retire", "page_searches", "page_searches_count",
            "pages_reclaim_on_alloc", "pages_reclaim_on_free", "pages_reabandon_full", "pages_unabandon_busy_wait"]
PROCESS_KEYS = ["elapsed_msecs", "user_msecs", "system_msecs", "page_faults", "rss_current", "rss_peak",
                "commit_current", "commit_peak"]
MI_BIN_HUGE = 73
LARGE_OBJ_SIZE_MAX = 2 * 1024 * 1024

failures = 0
checks = 0


def check(cond, msg):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        if failures <= 40:
            print("CHECK failed: " + msg, file=sys.stderr)
    return cond


# ------------------------------------------------------------------------------------------
# The number formatting of mimalloc's layout (docs/statistics.md, "mimalloc's layout")
# ------------------------------------------------------------------------------------------
def fmt(n, kind):
    """kind: 'B' bytes, 'C' decimal count, 'I' binary count"""
    base = 1000 if kind == 'C' else 1024
    pos = abs(n)
    if pos < base:
        if kind == 'B' and n == 1:
            return ""
        suffix = "" if n == 0 else ("B" if kind == 'B' else " ")
        return "%d   %-3s" % (n, suffix)
    d, mag = base, "K"
    if pos >= base ** 3:
        d, mag = base ** 3, "G"
    elif pos >= base ** 2:
        d, mag = base ** 2, "M"
    div = d // 10
    tenths = int(n / div) if n < 0 else n // div      # C division truncates toward zero
    whole = int(tenths / 10) if tenths < 0 else tenths // 10
    frac = abs(tenths) % 10
    unit = mag + ("iB" if kind == 'B' else "i" if kind == 'I' else "")
    sign = "-" if (n < 0 and whole == 0) else ""
    return "%s%d.%d %-3s" % (sign, whole, frac, unit)


def cell(n, kind):
    return "%12s" % fmt(n, kind)


def status(current, note):
    return "  ok" if current == 0 else "  " + note


def row_amount(label, st, unit, note):
    s = "%10s:" % label + cell(st["peak"] * unit, 'B') + cell(st["total"] * unit, 'B') + cell(st["current"] * unit, 'B')
    s += " " * 24 if unit == 1 else cell(unit, 'B') + cell(st["total"], 'C')
    return s + status(st["current"], note)


def row_bincount(label, st, note):
    return ("%10s:" % label + cell(st["peak"], 'I') + cell(st["total"], 'I') + cell(st["current"], 'I') + " " * 24 +
            status(st["current"], note))


def row_count(label, st):
    return "%10s:" % label + cell(st["peak"], 'C') + cell(st["total"], 'C') + cell(st["current"], 'C')


def row_counter(label, n, kind='C'):
    return "%10s:" % label + cell(n, kind)


HEADER = "%10s: %11s %11s %11s %11s %11s" % ("heap stats", "peak   ", "total   ", "current   ", "block   ", "total#   ")


def self_test():
    for n, k, want in [(640, 'B', "640   B  "), (16768, 'B', "16.4 KiB"), (1800, 'C', "1.8 K  "), (40, 'C', "40      "),
                       (0, 'C', "0      "), (1, 'B', ""), (-8283750, 'B', "-7.9 MiB"), (2048, 'I', "2.0 Ki ")]:
        check(fmt(n, k) == want, "fmt(%d, %s) = %r, expected %r" % (n, k, fmt(n, k), want))
    check(HEADER == "heap stats:     peak       total     current       block      total#   ", "header %r" % HEADER)


# ------------------------------------------------------------------------------------------
# size classes (src/internal/types.h) and mimalloc v2's numbering
# ------------------------------------------------------------------------------------------
def bin_size(b):
    if b <= 1:
        return 8
    if b < 10:
        return (b - 1) * 16
    if b >= 122:
        return LARGE_OBJ_SIZE_MAX + 1
    k = b - 10
    p2 = 128 << (k // 8)
    return p2 + (p2 // 8) * (1 + k % 8)


def public_bin(size):
    if size > LARGE_OBJ_SIZE_MAX:
        return MI_BIN_HUGE
    w = (size + 7) // 8
    if w <= 1:
        return 1
    if w <= 8:
        return w
    w -= 1
    b = w.bit_length() - 1
    return ((b << 2) + ((w >> (b - 2)) & 3)) - 3


# ------------------------------------------------------------------------------------------
# child runs
# ------------------------------------------------------------------------------------------
def clean_env(extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    # no memory limit line in the layouts checked here, also in a container with a limit
    # (test/limit checks that line)
    env["MIMALLOC_MEMORY_LIMIT"] = "0"
    for k, v in os.environ.items():
        if k.endswith("SAN_OPTIONS") or k.startswith("LD_LIBRARY_PATH"):
            env[k] = v
    env.update(extra)
    return env


# cross builds run the programs under an emulator (test/CMakeLists.txt: MI_TEST_EMULATOR)
EMULATOR = shlex.split(os.environ.get("MI_TEST_EMULATOR", ""))


def run_child(args, extra_env, timeout=60, layout="mimalloc"):
    """layout: the MIMALLOC_STATS_LAYOUT value, or None to leave it unset (the readable layout)"""
    env = dict(extra_env)
    if layout is not None:
        env.setdefault("MIMALLOC_STATS_LAYOUT", layout)
    p = subprocess.run(EMULATOR + [ARGS.child] + args, env=clean_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    return p.returncode, out, err


def parse_build(out):
    m = re.search(r"^build debug=(\d) stat=(\d)$", out, re.M)
    check(m is not None, "child did not report its build: %r" % out[:200])
    return (int(m.group(1)), int(m.group(2))) if m else (0, 1)


def parse_get(text):
    """key value lines of stats-child (format_get)"""
    get = {"malloc_bins": {}, "page_bins": {}}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] in ("malloc_bins", "page_bins"):
            get[f[0]][int(f[1])] = {"total": int(f[2]), "peak": int(f[3]), "current": int(f[4])}
        elif len(f) == 4 and f[0] in COUNTS:
            get[f[0]] = {"total": int(f[1]), "peak": int(f[2]), "current": int(f[3])}
        elif len(f) == 2 and f[0] in COUNTERS:
            get[f[0]] = int(f[1])
    return get


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted(set(k for k in keys if keys.count(k) > 1))
    check(not dup, "duplicate JSON keys: %s" % dup)
    return dict(pairs)


def load_json(text, what):
    try:
        doc = json.loads(text, object_pairs_hook=no_duplicates)
    except ValueError as e:
        check(False, "%s is not valid JSON: %s\n%s" % (what, e, text[:400]))
        return None
    check(isinstance(doc, dict), "%s: not an object" % what)
    return doc if isinstance(doc, dict) else None


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def validate_json(doc, what, stat_level):
    """shape of a mi_stats_get_json document"""
    check(doc.get("stat_version") == 4, "%s: stat_version %r" % (what, doc.get("stat_version")))
    check(doc.get("mimalloc_version") == 20401, "%s: mimalloc_version %r" % (what, doc.get("mimalloc_version")))
    proc = doc.get("process")
    if check(isinstance(proc, dict), "%s: process object missing" % what):
        for k in PROCESS_KEYS:
            check(is_uint(proc.get(k)), "%s: process.%s = %r" % (what, k, proc.get(k)))
        if all(is_uint(proc.get(k)) for k in PROCESS_KEYS):
            check(0 < proc["rss_current"] <= proc["rss_peak"], "%s: rss current %d peak %d" % (what, proc["rss_current"], proc["rss_peak"]))
            check(0 < proc["commit_current"] <= proc["commit_peak"], "%s: commit current %d peak %d" % (what, proc["commit_current"], proc["commit_peak"]))
    for name in COUNTS:
        v = doc.get(name)
        ok = isinstance(v, dict) and set(v.keys()) == {"total", "peak", "current"} and all(is_uint(x) for x in v.values())
        check(ok, "%s: count %s = %r" % (what, name, v))
    for name in COUNTERS:
        check(is_uint(doc.get(name)), "%s: counter %s = %r" % (what, name, doc.get(name)))
    for k in ("pages_reclaim_on_alloc", "pages_reclaim_on_free", "pages_reabandon_full", "pages_unabandon_busy_wait"):
        check(doc.get(k) == 0, "%s: v3-only counter %s = %r" % (what, k, doc.get(k)))
    if isinstance(proc, dict) and isinstance(doc.get("committed"), dict):
        check(proc.get("commit_peak") == doc["committed"]["peak"], "%s: commit_peak %r != committed.peak %r" % (what, proc.get("commit_peak"), doc["committed"]["peak"]))
    bins = {}
    for arr in ("malloc_bins", "page_bins"):
        v = doc.get(arr)
        if not check(isinstance(v, list) and len(v) >= MI_BIN_HUGE + 1, "%s: %s = %r" % (what, arr, type(v))):
            return None
        prev = -1
        for i, e in enumerate(v):
            keys_ok = isinstance(e, dict) and {"total", "peak", "current", "block_size", "page_size"} <= set(e.keys())
            if not check(keys_ok and all(is_uint(e[k]) for k in ("total", "peak", "current", "block_size", "page_size")),
                         "%s: %s[%d] = %r" % (what, arr, i, e)):
                return None
            check(e["block_size"] >= prev, "%s: %s[%d] block_size %d after %d" % (what, arr, i, e["block_size"], prev))
            prev = e["block_size"]
            # small pages 64 KiB (blocks up to 8 KiB), medium 512 KiB, large blocks a span of 128 KiB slots, huge 4 MiB
            bs, ps = e["block_size"], e["page_size"]
            if bs <= 8 << 10:
                ps_ok = ps == 64 << 10
            elif bs <= 120 << 10:
                ps_ok = ps == 512 << 10
            elif bs <= 2 << 20:
                ps_ok = ps % (128 << 10) == 0 and bs <= ps < bs + (128 << 10)
            else:
                ps_ok = ps == 4 << 20
            check(ps_ok, "%s: %s[%d] page_size %d for block_size %d" % (what, arr, i, ps, bs))
            if 1 <= i < 122:
                check(e["block_size"] == bin_size(i), "%s: %s[%d] block_size %d, expected %d" % (what, arr, i, e["block_size"], bin_size(i)))
            if stat_level < 2:
                check(e["total"] == 0 and e["current"] == 0, "%s: %s[%d] nonzero without per-block statistics: %r" % (what, arr, i, e))
        bins[arr] = v
    check(len(bins["malloc_bins"]) == len(bins["page_bins"]), "%s: bin arrays of different lengths" % what)
    if stat_level >= 2:
        live = sum(e["current"] * e["block_size"] for e in bins["malloc_bins"])
        check(live == doc["malloc_normal"]["current"], "%s: malloc_bins hold %d bytes, malloc_normal.current %d" % (what, live, doc["malloc_normal"]["current"]))
        pages = sum(e["current"] for e in bins["page_bins"])
        check(pages == doc["pages"]["current"], "%s: page_bins hold %d pages, pages.current %d" % (what, pages, doc["pages"]["current"]))
    return bins


def compare_get(doc, get, what, skip=()):
    for name in COUNTS:
        if name in skip:
            continue
        check(doc.get(name) == get.get(name), "%s: %s = %r, mi_stats_get gave %r" % (what, name, doc.get(name), get.get(name)))
    for name in COUNTERS:
        if name in skip:
            continue
        check(doc.get(name) == get.get(name), "%s: %s = %r, mi_stats_get gave %r" % (what, name, doc.get(name), get.get(name)))


def fold_bins(entries):
    fold = [{"total": 0, "peak": 0, "current": 0} for _ in range(MI_BIN_HUGE + 1)]
    for e in entries:
        if e["block_size"] == 0:
            continue
        pb = public_bin(e["block_size"])
        for k in ("total", "peak", "current"):
            fold[pb][k] += e[k]
    return fold


# ------------------------------------------------------------------------------------------
# the statistics text
# ------------------------------------------------------------------------------------------
BYTES_CELL = r"(|0      |-?\d+   B  |-?\d+\.\d (KiB|MiB|GiB))"
COUNT_CELL = r"(0      |\d+      |\d+\.\d [KMG]  )"
BINCOUNT_CELL = r"(0      |\d+      |\d+\.\d (Ki|Mi|Gi) )"
COMMON = ["reserved", "committed", "reset", "purged", "touched", "segments", "-abandoned", "-cached", "pages",
          "-abandoned", "-extended", "-retire", "arenas", "-rollback", "mmaps", "commits", "resets", "purges", "guarded",
          "threads", "searches", "numa nodes", "elapsed", "process"]


def cells_ok(line, kinds):
    body = line[11:]
    for i, k in enumerate(kinds):
        c = body[12 * i:12 * i + 12]     # "%12s": the formatted number right-aligned
        if len(c) != 12:
            return False
        pat = {"B": BYTES_CELL, "C": COUNT_CELL, "I": BINCOUNT_CELL, "-": r"()"}[k]
        if not re.fullmatch(pat, c.lstrip(" ")):
            return False
    return True


def find_block(lines):
    """index of the statistics header, or -1"""
    for i, l in enumerate(lines):
        if l == HEADER:
            return i
    return -1


def validate_text(lines, stat_level, what, doc=None):
    """lines: the statistics block starting at the header; doc: JSON of the same moment"""
    i = 0
    if not check(len(lines) > 0 and lines[0] == HEADER, "%s: header %r" % (what, lines[0] if lines else None)):
        return
    i = 1
    bins = {}
    if stat_level >= 2:
        while i < len(lines) and re.match(r"^   bin [ \d]{2}\d:", lines[i]):
            l = lines[i]
            b = int(l[7:10])
            bins[b] = l
            check(cells_ok(l, "BBBBC") and re.search(r"  (ok|not all freed)$", l), "%s: bin row %r" % (what, l))
            check(l[47:59] == cell(bin_size(b), 'B'), "%s: bin %d block cell %r" % (what, b, l[47:59]))
            i += 1
        if bins:
            check(lines[i] == "" and lines[i + 1] == HEADER, "%s: no empty line and header after the bin rows: %r" % (what, lines[i:i + 2]))
            i += 2
        for label in ("binned", "huge", "total"):
            l = lines[i]
            check(l.startswith("%10s:" % label) and (cells_ok(l, "BBB--") or cells_ok(l, "III--")), "%s: row %r" % (what, l))
            i += 1
        check(re.fullmatch(r"malloc req: {12}" + r" *" + BYTES_CELL, lines[i]) is not None and len(lines[i]) == 35, "%s: malloc req %r" % (what, lines[i]))
        check(lines[i + 1] == "", "%s: no empty line after malloc req" % what)
        i += 2
    else:
        check(not any(l.startswith("   bin ") or l.startswith("    binned:") or l.startswith("malloc req:") for l in lines),
              "%s: per-block rows without per-block statistics" % what)
    start = i
    for k, label in enumerate(COMMON):
        if not check(i < len(lines) and lines[i].startswith("%10s:" % label), "%s: row %d is %r, expected %r" % (what, i, lines[i] if i < len(lines) else None, label)):
            return
        l = lines[i]
        if label in ("reserved", "committed", "touched"):
            check(cells_ok(l, "BBB--") and (l.endswith("  ok") or l.endswith(" " * 26)), "%s: %r" % (what, l))
        elif label in ("reset", "purged"):
            check(len(l) == 23 and cells_ok(l, "B"), "%s: %r" % (what, l))
        elif label in ("segments", "-abandoned", "-cached", "pages", "threads"):
            check(len(l) == 47 and cells_ok(l, "CCC"), "%s: %r" % (what, l))
        elif label == "searches":
            check(re.fullmatch(r"  searches: [ \d]{4}\d\.\d avg", l) is not None, "%s: %r" % (what, l))
        elif label == "numa nodes":
            check(l == "numa nodes:     1", "%s: %r" % (what, l))
        elif label == "elapsed":
            check(re.fullmatch(r"   elapsed: [ \d]{4}\d\.\d{3} s", l) is not None, "%s: %r" % (what, l))
        elif label == "process":
            check(re.fullmatch(r"   process: user: \d+\.\d{3} s, system: \d+\.\d{3} s, faults: \d+, peak rss: \d+\.\d (KiB|MiB|GiB)(, peak commit: \d+\.\d (KiB|MiB|GiB))?", l) is not None,
                  "%s: %r" % (what, l))
        else:
            check(len(l) == 23 and cells_ok(l, "C"), "%s: %r" % (what, l))
        neg = "-" in l[l.index(":"):]
        check(not neg, "%s: negative figure: %r" % (what, l))
        i += 1
    check(i == len(lines), "%s: %d lines after the process row: %r" % (what, len(lines) - i, lines[i:i + 3]))

    if doc is None:
        return
    # every row against the JSON of the same moment (reserved, committed and mmaps differ by
    # the JSON writer's own buffer; elapsed and process are not figures of the document)
    exp = {}
    if stat_level >= 2:
        for b, e in enumerate(doc["malloc_bins"]):
            if 1 <= b < 122 and (e["total"] != 0 or e["current"] != 0):
                exp["bin %3d" % b] = row_amount("bin %3d" % b, e, bin_size(b), "not all freed")
        check(sorted(exp.keys()) == sorted("bin %3d" % b for b in bins), "%s: bin rows %s, the JSON has %s" % (what, sorted(bins), sorted(exp.keys())))
        for b, l in bins.items():
            e = exp.get("bin %3d" % b)
            check(e == l, "%s: bin %d\n  got      %r\n  expected %r" % (what, b, l, e))
        for label, name, cnt in (("binned", "malloc_normal", "malloc_normal_count"), ("huge", "malloc_huge", "malloc_huge_count")):
            want = row_bincount(label, doc[name], "not all freed") if doc[cnt] == 0 else row_amount(label, doc[name], 1, "not all freed")
            got = [l for l in lines if l.startswith("%10s:" % label)]
            check(got and got[0] == want, "%s: %s\n  got      %r\n  expected %r" % (what, label, got[0] if got else None, want))
        tot = {k: doc["malloc_normal"][k] + doc["malloc_huge"][k] for k in ("total", "peak", "current")}
        got = [l for l in lines if l.startswith("     total:")]
        check(got and got[0] == row_amount("total", tot, 1, ""), "%s: total %r" % (what, got[0] if got else None))
        got = [l for l in lines if l.startswith("malloc req:")]
        want = "malloc req:" + " " * 12 + cell(doc["malloc_requested"]["total"], 'B')
        check(got and got[0] == want, "%s: malloc req %r, expected %r" % (what, got[0] if got else None, want))
    common = lines[start:]
    avg10 = 0 if doc["page_searches_count"] == 0 else doc["page_searches"] * 10 // doc["page_searches_count"]
    want = [None, None,  # reserved, committed
            row_counter("reset", doc["reset"], 'B'), row_counter("purged", doc["purged"], 'B'),
            row_amount("touched", doc["page_committed"], 1, ""),
            row_count("segments", doc["segments"]), row_count("-abandoned", doc["segments_abandoned"]),
            row_count("-cached", doc["segments_cache"]), row_count("pages", doc["pages"]),
            row_count("-abandoned", doc["pages_abandoned"]), row_counter("-extended", doc["pages_extended"]),
            row_counter("-retire", doc["pages_retire"]), row_counter("arenas", doc["arena_count"]),
            row_counter("-rollback", doc["arena_rollback_count"]), None,  # mmaps
            row_counter("commits", doc["commit_calls"]), row_counter("resets", doc["reset_calls"]),
            row_counter("purges", doc["purge_calls"]), row_counter("guarded", doc["malloc_guarded_count"]),
            row_count("threads", doc["threads"]),
            "%10s: %5d.%d avg" % ("searches", avg10 // 10, avg10 % 10)]
    for k, w in enumerate(want):
        if w is not None and k < len(common):
            check(common[k] == w, "%s: row %s\n  got      %r\n  expected %r" % (what, COMMON[k], common[k], w))


# ------------------------------------------------------------------------------------------
# the readable layout (docs/statistics.md)
# ------------------------------------------------------------------------------------------
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "statistics.md")
SUMMARY_PREFIX = "mimalloc: peak RSS "
THREAD_HEADING = "mimalloc: statistics of this thread only (the process totals: mi_stats_print_out)"
CLOSING = "(rows that are zero are not shown; MIMALLOC_STATS_LAYOUT=mimalloc prints mimalloc's layout)"
# mimalloc's labels, which must not appear in the readable layout
OLD_LABELS = ["-abandoned", "-extended", "-retire", "-cached", "-rollback", "heap stats", "malloc req", "binned",
              "touched", "numa nodes", "not all freed", "total#"]
COLS_AMOUNT = ("now", "peak", "total")
COLS_BINS = ("now", "peak", "allocated", "bytes now", "pages now")
COLS_BINS_THREAD = COLS_BINS[:4]     # pages are counted for the process only
COLS_TOTAL = ("total",)
# the rows as the documentation defines them: (name, JSON field, kind); kinds: B bytes count,
# N object count, TB/TN total in bytes / number, S page searches (with the average)
R_MEMORY = [("blocks (up to 2 MiB each)", "malloc_normal", "B"), ("huge blocks (over 2 MiB each)", "malloc_huge", "B"),
            ("in use (pages set up for blocks)", "page_committed", "B"), ("committed", "committed", "B"),
            ("reserved (address space)", "reserved", "B")]
R_OBJECTS = [("threads", "threads", "N"), ("segments", "segments", "N"),
             ("segments of ended threads (abandoned)", "segments_abandoned", "N"),
             ("segments cached", "segments_cache", "N"), ("pages in use", "pages", "N"),
             ("pages of ended threads (abandoned)", "pages_abandoned", "N")]
R_ACTIVITY = [("memory requested by the program", "malloc_requested", "TB"),
              ("blocks allocated (up to 2 MiB each)", "malloc_normal_count", "TN"),
              ("huge blocks allocated", "malloc_huge_count", "TN"),
              ("guarded blocks allocated", "malloc_guarded_count", "TN"),
              ("memory purged (given back to the OS)", "purged", "TB"),
              ("memory discarded (reset)", "reset", "TB"),
              ("OS memory mappings (mmap)", "mmap_calls", "TN"), ("OS commit calls", "commit_calls", "TN"),
              ("OS purge calls", "purge_calls", "TN"), ("OS reset calls", "reset_calls", "TN"),
              ("arenas reserved", "arena_count", "TN"), ("arena commit rollbacks", "arena_rollback_count", "TN"),
              ("arena purge passes", "arena_purges", "TN"), ("page extensions", "pages_extended", "TN"),
              ("pages retired (emptied)", "pages_retire", "TN"), ("slow-path page searches", "page_searches_count", "S")]
NOTES = {"reserved (address space)": "not memory in use"}
SECTIONS = [("memory", COLS_AMOUNT), ("blocks by size", COLS_BINS), ("threads, segments and pages", COLS_AMOUNT),
            ("activity", COLS_TOTAL)]
READABLE_BYTES = r"(0|\d+ B|\d\.\d (KiB|MiB|GiB|TiB|PiB)|\d+ (KiB|MiB|GiB|TiB|PiB))"


def rbytes(n):
    """bytes as the readable layout prints them (docs/statistics.md, "Sections, columns and units")"""
    if n <= 0:
        return "0"
    if n < 1024:
        return "%d B" % n
    units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    unit, u = 1024, 0
    while u + 1 < len(units) and n // 1024 >= unit:
        unit, u = unit * 1024, u + 1
    while True:
        tenths = (n // unit) * 10 + ((n % unit) * 10 + unit // 2) // unit
        if tenths < 100:
            return "%d.%d %s" % (tenths // 10, tenths % 10, units[u])
        whole = n // unit + (1 if (n % unit) * 2 >= unit else 0)
        if whole >= 1024 and u + 1 < len(units):
            unit, u = unit * 1024, u + 1
            continue
        return "%d %s" % (whole, units[u])


def rsize(n):
    """a size class exactly"""
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%d MiB" % (n >> 20)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def rsecs(ms):
    return "%d.%03d s" % (ms // 1000, ms % 1000)


def rheader(title, cols):
    return "%-40s" % title + "".join("%11s" % c for c in cols)


def rrow(name, cells, note=None):
    return "  %-38s" % name + "".join("%11s" % c for c in cells) + ("  (%s)" % note if note else "")


def rsummary(doc):
    p = doc["process"]
    return "mimalloc: peak RSS %s, peak in use %s, %s (user %s, system %s), %d page fault%s" % (
        rbytes(p["rss_peak"]), rbytes(doc["page_committed"]["peak"]), rsecs(p["elapsed_msecs"]), rsecs(p["user_msecs"]),
        rsecs(p["system_msecs"]), p["page_faults"], "" if p["page_faults"] == 1 else "s")


def readable_self_test():
    for n, want in [(0, "0"), (1, "1 B"), (640, "640 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1075, "1.0 KiB"),
                    (1076, "1.1 KiB"), (10188, "9.9 KiB"), (10200, "10 KiB"), (16768, "16 KiB"), (16896, "17 KiB"),
                    (1572864, "1.5 MiB"), (1048166, "1.0 MiB"), (1047552, "1023 KiB"), (1 << 30, "1.0 GiB"),
                    (5 << 40, "5.0 TiB"), (3 << 60, "3072 PiB")]:
        check(rbytes(n) == want, "rbytes(%d) = %r, expected %r" % (n, rbytes(n), want))
    for n, want in [(48, "48 B"), (1152, "1152 B"), (9216, "9 KiB"), (1179648, "1152 KiB"), (2 << 20, "2 MiB")]:
        check(rsize(n) == want, "rsize(%d) = %r, expected %r" % (n, rsize(n), want))
    names, sections = doc_names()
    for name, _, _ in R_MEMORY + R_OBJECTS + R_ACTIVITY:
        check(name in names, "row %r is not in the tables of docs/statistics.md" % name)
    for title, _ in SECTIONS:
        check(title in sections, "section %r is not in docs/statistics.md" % title)
    check(set(names) == set(n for n, _, _ in R_MEMORY + R_OBJECTS + R_ACTIVITY),
          "docs/statistics.md lists rows %s that this test does not know" %
          sorted(set(names) - set(n for n, _, _ in R_MEMORY + R_OBJECTS + R_ACTIVITY)))


_doc_names = None


def doc_names():
    """the row names of the tables in docs/statistics.md ("### Rows") and its section titles"""
    global _doc_names
    if _doc_names is None:
        text = open(DOCS).read()
        start = text.find("### Rows")
        end = text.find("\n## ", start)
        part = text[start:end] if start >= 0 else ""
        check(start >= 0, "docs/statistics.md has no \"### Rows\" section")
        _doc_names = (re.findall(r"^\| `([^`]+)` \|", part, re.M), re.findall(r"^Section `([^`]+)`", part, re.M))
    return _doc_names


def readable_expected(doc, thread=False):
    """the whole readable text for the figures of a JSON document"""
    lines = [THREAD_HEADING if thread else rsummary(doc)]

    def section(title, cols, rows):
        out = []
        for name, field, kind in rows:
            v = doc[field]
            if kind in ("B", "N"):
                if v["current"] == 0 and v["peak"] == 0 and v["total"] == 0:
                    continue
                f = rbytes if kind == "B" else str
                out.append(rrow(name, [f(v["current"]), f(v["peak"]), f(v["total"])], NOTES.get(name)))
            else:
                t = v["total"] if isinstance(v, dict) else v
                if t == 0:
                    continue
                line = rrow(name, [rbytes(t) if kind == "TB" else str(t)], NOTES.get(name))
                if kind == "S":
                    avg10 = (doc["page_searches"] * 10 + t // 2) // t
                    line += "  (%d.%d pages visited on average)" % (avg10 // 10, avg10 % 10)
                out.append(line)
        return [rheader(title, cols)] + out if out else []

    lines += section("memory", COLS_AMOUNT, R_MEMORY)
    bins = []
    for b, e in enumerate(doc["malloc_bins"]):
        pg = doc["page_bins"][b]
        if not 1 <= b < 122 or (e["total"] == 0 and e["current"] == 0 and e["peak"] == 0 and pg["current"] == 0):
            continue
        bins.append(rrow(rsize(e["block_size"]), [str(e["current"]), str(e["peak"]), str(e["total"]),
                                                  rbytes(e["current"] * e["block_size"]), str(pg["current"])]))
    if bins:
        lines += [rheader("blocks by size", COLS_BINS)] + bins
    lines += section("threads, segments and pages", COLS_AMOUNT, R_OBJECTS)
    lines += section("activity", COLS_TOTAL, R_ACTIVITY)
    return lines + [CLOSING]


def readable_block(text, what, thread=False):
    """the readable statistics in `text`: from the summary (or thread heading) to the closing line"""
    lines = text.split("\n")
    first = THREAD_HEADING if thread else SUMMARY_PREFIX
    i = next((k for k, l in enumerate(lines) if l.startswith(first)), None)
    if not check(i is not None, "%s: no line starting with %r in %r" % (what, first, text[:400])):
        return None
    j = next((k for k in range(i, len(lines)) if lines[k] == CLOSING), None)
    if not check(j is not None, "%s: no closing line after the summary" % what):
        return None
    return lines[i:j + 1]


def validate_readable(block, what, stat_level, thread=False):
    """structure of a readable block (without figures to compare); returns {row name: line}"""
    names, _ = doc_names()
    bin_names = set(rsize(bin_size(b)) for b in range(1, 122))
    rows = {}
    if thread:
        check(block[0] == THREAD_HEADING, "%s: first line %r" % (what, block[0]))
    else:
        pat = (r"mimalloc: peak RSS %s, peak in use %s, \d+\.\d{3} s \(user \d+\.\d{3} s, system \d+\.\d{3} s\), "
               r"\d+ page faults?" % (READABLE_BYTES, READABLE_BYTES))
        check(re.fullmatch(pat, block[0]) is not None, "%s: summary line %r" % (what, block[0]))
        check(len(block[0]) <= 120, "%s: summary line of %d columns" % (what, len(block[0])))
    check(block[-1] == CLOSING, "%s: last line %r" % (what, block[-1]))
    order = [t for t, _ in SECTIONS]
    seen = []
    cols = None
    for l in block[1:-1]:
        check(len(l) <= 100, "%s: line of %d columns: %r" % (what, len(l), l))
        for old in OLD_LABELS:
            check(old not in l, "%s: mimalloc's label %r in %r" % (what, old, l))
        if not l.startswith("  "):
            title = l[:40].rstrip()
            sec = dict(SECTIONS).get(title)
            if thread and title == "blocks by size":
                sec = COLS_BINS_THREAD
            if not check(sec is not None and l == rheader(title, sec), "%s: not a section header: %r" % (what, l)):
                cols = None
                continue
            check(title not in seen and all(order.index(t) < order.index(title) for t in seen),
                  "%s: section %r after %s" % (what, title, seen))
            seen.append(title)
            cols = sec
            continue
        if not check(cols is not None, "%s: a row outside a section: %r" % (what, l)):
            continue
        name = l[2:40].rstrip()
        if seen[-1] == "blocks by size":
            check(name in bin_names, "%s: %r is not the block size of a size class" % (what, name))
        else:
            check(name in names, "%s: row name %r is not in docs/statistics.md" % (what, name))
        rows[name] = l
        cells = [l[40 + 11 * k:40 + 11 * (k + 1)] for k in range(len(cols))]
        for k, c in enumerate(cells):
            ok = len(c) == 11 and c.strip() != "" and c == "%11s" % c.strip()
            kind_ok = re.fullmatch(READABLE_BYTES + "|" + r"\d+", c.strip()) is not None
            check(ok and kind_ok, "%s: column %r of %r is empty or malformed: %r" % (what, cols[k], name, c))
        rest = l[40 + 11 * len(cols):]
        if name == "reserved (address space)":
            check(rest == "  (not memory in use)", "%s: reserved row ends with %r" % (what, rest))
        elif name == "slow-path page searches":
            check(re.fullmatch(r"  \(\d+\.\d pages visited on average\)", rest) is not None, "%s: searches row ends with %r" % (what, rest))
        else:
            check(rest == "", "%s: row %r ends with %r" % (what, name, rest))
    if stat_level >= 2:
        # the per-block statistics are shown, by size class
        if not thread:
            check("blocks by size" in seen and "blocks (up to 2 MiB each)" in rows, "%s: no block rows with per-block statistics" % what)
    else:
        check("blocks by size" not in seen and "blocks (up to 2 MiB each)" not in rows and
              "memory requested by the program" not in rows, "%s: block rows without per-block statistics" % what)
    return rows


def compare_readable(block, doc, what, thread=False):
    want = readable_expected(doc, thread)
    check(len(block) == len(want), "%s: %d lines, the JSON gives %d:\n%s\n--- expected:\n%s" %
          (what, len(block), len(want), "\n".join(block), "\n".join(want)))
    for k, (g, w) in enumerate(zip(block, want)):
        check(g == w, "%s: line %d\n  got      %r\n  expected %r" % (what, k + 1, g, w))


# ------------------------------------------------------------------------------------------
# groups
# ------------------------------------------------------------------------------------------
def group_json():
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = run_child(["json", d], {})
        check(rc == 0, "stats-child json exited with %d:\n%s%s" % (rc, out, err))
        debug, stat = parse_build(out)
        docs = {}
        for name in ("buf.json", "alloc.json", "size0.json"):
            path = os.path.join(d, name)
            if not check(os.path.exists(path), "%s not written" % name):
                return
            text = open(path).read()
            check(text.lstrip().startswith("{"), "%s does not start with an object" % name)
            docs[name] = load_json(text, name)
        get = parse_get(open(os.path.join(d, "get.txt")).read())
    if any(v is None for v in docs.values()):
        return
    for name, doc in docs.items():
        validate_json(doc, name, stat)
    doc = docs["buf.json"]
    compare_get(doc, get, "buf.json vs mi_stats_get")
    check(doc["process"]["commit_current"] == get["committed"]["current"], "commit_current %d != committed.current %d" % (doc["process"]["commit_current"], get["committed"]["current"]))
    # bins: mi_stats_get folds ours into v2's numbering (page_bins[MI_BIN_HUGE]: stats-pending-huge-bin)
    for arr in ("malloc_bins", "page_bins"):
        fold = fold_bins(doc[arr])
        for i in range(MI_BIN_HUGE + (1 if arr == "malloc_bins" else 0)):
            g = get[arr][i]
            check(fold[i]["total"] == g["total"] and fold[i]["current"] == g["current"] and fold[i]["peak"] == g["peak"],
                  "%s[%d]: mi_stats_get %r, folded JSON bins %r" % (arr, i, g, fold[i]))
    if stat >= 2:
        check(get["malloc_normal"]["current"] > 0 and doc["malloc_normal_count"] > 0, "no binned blocks counted")
    check(doc["malloc_huge_count"] == 3 and get["malloc_huge"]["current"] >= 8 << 20, "huge figures %r %r" % (doc["malloc_huge_count"], get["malloc_huge"]))
    check(doc["threads"]["total"] == 2 and doc["threads"]["current"] == 1, "threads %r" % doc["threads"])
    check(doc["pages_abandoned"]["current"] >= 1 and doc["segments_abandoned"]["current"] >= 1, "abandoned %r %r" % (doc["pages_abandoned"], doc["segments_abandoned"]))
    # later documents: counters never go back
    for name in ("alloc.json", "size0.json"):
        for c in COUNTERS:
            check(docs[name][c] >= doc[c], "%s: %s %d < %d" % (name, c, docs[name][c], doc[c]))
        for c in COUNTS:
            check(docs[name][c]["total"] >= doc[c]["total"], "%s: %s.total went back" % (name, c))


def exit_figures(out):
    return parse_get(out)


def group_exit_json():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "exit.json")
        rc, out, err = run_child(["exit"], {"MIMALLOC_STATS_JSON": path})
        check(rc == 0, "child exited with %d: %s" % (rc, err))
        check(err == "", "stderr not empty: %r" % err[:300])
        debug, stat = parse_build(out)
        if not check(os.path.exists(path), "MIMALLOC_STATS_JSON=%s: no file written" % path):
            return
        doc = load_json(open(path).read(), "exit.json")
    if doc is None:
        return
    validate_json(doc, "exit.json", stat)
    get = exit_figures(out)
    # the document is rendered after the child's last mi_stats_get; only the JSON writer's own
    # OS buffer (reserved, committed, mmaps) may come in between
    compare_get(doc, get, "exit.json vs the child's last mi_stats_get", skip=("reserved", "committed", "mmap_calls"))
    check(doc["reserved"]["current"] >= get["reserved"]["current"], "reserved went down")
    check(doc["mmap_calls"] - get["mmap_calls"] in (0, 1), "mmaps %d -> %d" % (get["mmap_calls"], doc["mmap_calls"]))


def group_exit_json_badpath():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "no-such-dir", "exit.json")
        rc, out, err = run_child(["exit"], {"MIMALLOC_STATS_JSON": path})
        check(rc == 0, "child exited with %d: %s" % (rc, err))
        check(not os.path.exists(path), "file appeared")
        check("heap stats" not in err, "statistics printed without show_stats")
        # with errors shown, a warning names the path
        rc, out, err = run_child(["exit"], {"MIMALLOC_STATS_JSON": path, "MIMALLOC_SHOW_ERRORS": "1"})
        check(rc == 0, "child exited with %d" % rc)
        check("mimalloc: warning:" in err and path in err, "no warning naming the unwritable path: %r" % err[:300])


def stats_block(text, what):
    lines = text.split("\n")
    i = find_block(lines)
    if not check(i >= 0, "%s: no statistics header in %r" % (what, text[:500])):
        return None
    j = next((k for k in range(i, len(lines)) if lines[k].startswith("   process:")), None)
    if not check(j is not None, "%s: no process row" % what):
        return None
    return lines[i:j + 1]


def group_exit_show():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "exit.json")
        rc, out, err = run_child(["exit"], {"MIMALLOC_SHOW_STATS": "1", "MIMALLOC_STATS_JSON": path})
        check(rc == 0, "child exited with %d" % rc)
        debug, stat = parse_build(out)
        check("heap stats" not in out, "statistics on stdout")
        doc = load_json(open(path).read(), "exit.json") if os.path.exists(path) else None
        check(doc is not None, "no exit JSON")
    block = stats_block(err, "MIMALLOC_SHOW_STATS=1")
    if block is None:
        return
    check(err.endswith("\n") and err.index(block[0]) == 0, "stderr has more than the statistics: %r" % err[:200])
    check(err.count(HEADER) == (2 if (stat >= 2 and any(l.startswith("   bin ") for l in block)) else 1), "statistics printed more than once")
    check(not any(l.startswith("mimalloc:") for l in block), "prefixed lines in the statistics")
    validate_text(block, stat, "exit text", doc)
    # a few figures of the child's workload
    rows = {l[:11]: l for l in block}
    check(rows.get("   threads:") == row_count("threads", {"peak": 2, "total": 2, "current": 1}), "threads row %r" % rows.get("   threads:"))


def group_exit_verbose():
    rc, out, err = run_child(["exit"], {"MIMALLOC_VERBOSE": "1"})
    check(rc == 0, "child exited with %d" % rc)
    debug, stat = parse_build(out)
    block = stats_block(err, "MIMALLOC_VERBOSE=1")
    if block is None:
        return
    validate_text(block, stat, "verbose exit text")
    others = [l for l in err.split("\n") if l and l not in block]
    check(len(others) > 0 and all(l.startswith("mimalloc: ") for l in others), "other verbose lines: %r" % others[:5])


def group_exit_quiet():
    for env in ({}, {"MIMALLOC_SHOW_STATS": "0"}, {"MIMALLOC_SHOW_STATS": "0", "MIMALLOC_VERBOSE": "0"}):
        rc, out, err = run_child(["exit"], env)
        check(rc == 0, "%r: child exited with %d" % (env, rc))
        check(err == "", "%r: stderr %r" % (env, err[:300]))
        check("heap stats" not in out, "%r: statistics on stdout" % env)


def group_exit_output():
    rc, out, err = run_child(["exit", "out"], {"MIMALLOC_SHOW_STATS": "1"})
    check(rc == 0, "child exited with %d" % rc)
    debug, stat = parse_build(out)
    check("heap stats" not in err, "statistics on stderr despite mi_register_output: %r" % err[:300])
    lines = [l[4:] for l in out.split("\n") if l.startswith("OUT|")]
    check(all(l.startswith("OUT|") for l in out.split("\n") if l and not l.startswith("build ") and not re.match(r"^[a-z_]+( \d+)+$", l)),
          "stdout lines without the prefix: %r" % [l for l in out.split("\n") if l and not l.startswith(("OUT|", "build "))][:5])
    # every message is one line: the prefix starts every line
    block = stats_block("\n".join(lines), "registered output")
    if block is not None:
        validate_text(block, stat, "registered output")


def group_legacy_print():
    rc, out, err = run_child(["legacy-print"], {})
    check(rc == 0, "mi_stats_print(NULL / stdout / stderr): the child exited with %d (signal %d?)" % (rc, -rc if rc < 0 else 0))
    debug, stat = parse_build(out)
    check("done" in out, "the child did not finish")
    parts = err.split("--\n")
    check(len(parts) == 3, "expected three statistics blocks on stderr separated by --, got %d parts" % len(parts))
    for k, part in enumerate(parts):
        block = stats_block(part, "mi_stats_print #%d" % (k + 1))
        if block is not None:
            validate_text(block, stat, "mi_stats_print #%d" % (k + 1))
    check("heap stats" not in out, "statistics on stdout")


def group_readable_show(freed=False):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "exit.json")
        rc, out, err = run_child(["exit"] + (["freed"] if freed else []), {"MIMALLOC_SHOW_STATS": "1", "MIMALLOC_STATS_JSON": path}, layout=None)
        check(rc == 0, "child exited with %d" % rc)
        debug, stat = parse_build(out)
        check(SUMMARY_PREFIX not in out and CLOSING not in out, "statistics on stdout")
        doc = load_json(open(path).read(), "exit.json") if os.path.exists(path) else None
        check(doc is not None, "no exit JSON")
    block = readable_block(err, "MIMALLOC_SHOW_STATS=1")
    if block is None:
        return
    check(err == "\n".join(block) + "\n", "stderr has more than the statistics: %r" % err[:300])
    check(err.startswith(SUMMARY_PREFIX), "the summary is not the first line: %r" % err[:100])
    rows = validate_readable(block, "exit text", stat)
    if doc is None:
        return
    check(doc.get("stat_level") == stat, "stat_level %r, the child measured %d" % (doc.get("stat_level"), stat))
    # the summary's figures, one by one, then the whole text
    m = re.fullmatch(r"mimalloc: peak RSS (.+), peak in use (.+), (\S+ s) \(user (\S+ s), system (\S+ s)\), (\d+) page faults?", block[0])
    if check(m is not None, "summary %r" % block[0]):
        p = doc["process"]
        for k, (name, want) in enumerate([("peak RSS", rbytes(p["rss_peak"])), ("peak in use", rbytes(doc["page_committed"]["peak"])),
                                          ("elapsed", rsecs(p["elapsed_msecs"])), ("user", rsecs(p["user_msecs"])),
                                          ("system", rsecs(p["system_msecs"])), ("page faults", str(p["page_faults"]))]):
            check(m.group(k + 1) == want, "summary: %s %r, the JSON gives %r" % (name, m.group(k + 1), want))
    compare_readable(block, doc, "exit text")
    if freed:
        # everything freed: rows whose current value is 0 print "0" (no empty column)
        for name in ("huge blocks (over 2 MiB each)", "pages of ended threads (abandoned)", "segments of ended threads (abandoned)"):
            check(name in rows and rows[name][40:51] == "%11s" % "0", "freed: row %r" % rows.get(name))
        return
    # the workload: a thread that ended with live blocks, huge blocks, the 1 GiB arena
    for name in ("threads", "pages of ended threads (abandoned)", "segments of ended threads (abandoned)",
                 "huge blocks (over 2 MiB each)", "huge blocks allocated", "reserved (address space)"):
        check(name in rows, "exit text: no row %r" % name)
    check(rows.get("threads") == rrow("threads", ["1", "2", "2"]), "threads row %r" % rows.get("threads"))
    if stat >= 2:
        # the child's sizes 24 + 40 k (k = 0..6) plus the 24-byte padding of debug builds, 48 and 256
        pad = 24 if debug else 0
        sizes = set(rsize(bin_size(next(b for b in range(1, 122) if bin_size(b) >= n + pad)))
                    for n in [24 + 40 * k for k in range(7)] + [48, 256])
        shown = set(l[2:40].rstrip() for l in block if l.startswith("  ") and l[2:40].rstrip() in
                    set(rsize(bin_size(b)) for b in range(1, 122)))
        check(sizes <= shown, "blocks by size: rows %s, expected at least %s" % (sorted(shown), sorted(sizes)))


def group_readable_verbose():
    rc, out, err = run_child(["exit"], {"MIMALLOC_VERBOSE": "1"}, layout=None)
    check(rc == 0, "child exited with %d" % rc)
    debug, stat = parse_build(out)
    block = readable_block(err, "MIMALLOC_VERBOSE=1")
    if block is None:
        return
    validate_readable(block, "verbose exit text", stat)
    lines = err.split("\n")
    i = lines.index(block[0])
    others = [l for k, l in enumerate(lines) if l and not (i < k < i + len(block))]
    check(len(others) > 1 and all(l.startswith("mimalloc: ") for l in others), "other verbose lines: %r" % others[:5])


def group_readable_output():
    rc, out, err = run_child(["exit", "out"], {"MIMALLOC_SHOW_STATS": "1"}, layout=None)
    check(rc == 0, "child exited with %d" % rc)
    debug, stat = parse_build(out)
    check(SUMMARY_PREFIX not in err, "statistics on stderr despite mi_register_output: %r" % err[:300])
    # one line per call: every line of the statistics carries the prefix
    stray = [l for l in out.split("\n") if l and not l.startswith(("OUT|", "build ")) and not re.match(r"^[a-z_]+( -?\d+)+$", l)]
    check(not stray, "stdout lines without the prefix: %r" % stray[:5])
    block = readable_block("\n".join(l[4:] for l in out.split("\n") if l.startswith("OUT|")), "registered output")
    if block is not None:
        validate_readable(block, "registered output", stat)


def group_readable_legacy():
    rc, out, err = run_child(["legacy-print"], {}, layout=None)
    check(rc == 0, "mi_stats_print: the child exited with %d" % rc)
    debug, stat = parse_build(out)
    parts = err.split("--\n")
    check(len(parts) == 3, "expected three statistics blocks on stderr separated by --, got %d parts" % len(parts))
    for k, part in enumerate(parts):
        block = readable_block(part, "mi_stats_print #%d" % (k + 1))
        if block is not None:
            check(part == "\n".join(block) + "\n", "mi_stats_print #%d: more than the statistics: %r" % (k + 1, part[:200]))
            validate_readable(block, "mi_stats_print #%d" % (k + 1), stat)


def group_readable_thread():
    rc, out, err = run_child(["thread-print"], {}, layout=None)
    check(rc == 0 and "done" in out, "thread-print: the child exited with %d" % rc)
    debug, stat = parse_build(out)
    idle = [l[2:] for l in out.split("\n") if l.startswith("I|")]
    check(idle == [THREAD_HEADING, CLOSING], "a thread that never allocated printed %r" % idle)
    busy = readable_block("\n".join(l[2:] for l in out.split("\n") if l.startswith("T|")), "thread print", thread=True)
    if busy is None:
        return
    rows = validate_readable(busy, "thread print", stat, thread=True)
    check("page extensions" in rows, "thread print: no page extensions: %r" % busy)
    # memory, segments and pages are counted for the process only
    for name in ("committed", "reserved (address space)", "segments", "pages in use", "threads"):
        check(name not in rows, "thread print: process figure %r" % name)
    if stat >= 2:
        pad = 24 if debug else 0
        b100 = next(b for b in range(1, 122) if bin_size(b) >= 100 + pad)
        b200 = next(b for b in range(1, 122) if bin_size(b) >= 200 + pad)
        n100, n200 = rsize(bin_size(b100)), rsize(bin_size(b200))
        check(rows.get(n100) == rrow(n100, ["30", "30", "30", rbytes(30 * bin_size(b100))]), "thread print: %r row %r" % (n100, rows.get(n100)))
        check(rows.get(n200) == rrow(n200, ["0", "10", "10", "0"]), "thread print: %r row %r" % (n200, rows.get(n200)))
        check(rows.get("blocks (up to 2 MiB each)") == rrow("blocks (up to 2 MiB each)", [rbytes(30 * bin_size(b100)), rbytes(30 * bin_size(b100) + 10 * bin_size(b200)), rbytes(30 * bin_size(b100) + 10 * bin_size(b200))]),
              "thread print: blocks row %r" % rows.get("blocks (up to 2 MiB each)"))
        check(rows.get("blocks allocated (up to 2 MiB each)") == rrow("blocks allocated (up to 2 MiB each)", ["40"]), "thread print: %r" % rows.get("blocks allocated (up to 2 MiB each)"))


def group_layout_select():
    for value, mimalloc in ((None, False), ("", False), ("readable", False), ("mimalloc", True), ("MiMalloc", True),
                            ("MIMALLOC", True), ("mimalloc2", False), ("mimal", False), ("json", False)):
        env = {"MIMALLOC_SHOW_STATS": "1"}
        if value is not None:
            env["MIMALLOC_STATS_LAYOUT"] = value
        rc, out, err = run_child(["exit"], env, layout=None)
        what = "MIMALLOC_STATS_LAYOUT=%r" % value
        check(rc == 0, "%s: child exited with %d" % (what, rc))
        debug, stat = parse_build(out)
        if mimalloc:
            check(err.startswith(HEADER + "\n") and SUMMARY_PREFIX not in err, "%s: not mimalloc's layout: %r" % (what, err[:200]))
            block = stats_block(err, what)
            if block is not None:
                validate_text(block, stat, what)
        else:
            check(err.startswith(SUMMARY_PREFIX) and HEADER not in err, "%s: not the readable layout: %r" % (what, err[:200]))
            block = readable_block(err, what)
            if block is not None:
                validate_readable(block, what, stat)



V3_COUNTS = COUNTS + ["heaps", "theaps"]
V3_COUNTERS = COUNTERS + ["heaps_delete_wait"]


def validate_v3_json(doc, what):
    """shape of a v3-mode document (mi_heap_stats_get_json, mi_subproc_stats_get_json, mi_stats_as_json)"""
    check(doc.get("stat_version") == 5, "%s: stat_version %r" % (what, doc.get("stat_version")))
    for name in V3_COUNTS:
        v = doc.get(name)
        ok = isinstance(v, dict) and set(v.keys()) == {"total", "peak", "current"} and all(is_uint(x) for x in v.values())
        check(ok, "%s: count %s = %r" % (what, name, v))
    for name in V3_COUNTERS:
        check(is_uint(doc.get(name)), "%s: counter %s = %r" % (what, name, doc.get(name)))
    for arr, n in (("malloc_bins", MI_BIN_HUGE + 1), ("page_bins", MI_BIN_HUGE + 1), ("chunk_bins", 6)):
        v = doc.get(arr)
        check(isinstance(v, list) and len(v) == n, "%s: %s has %r entries, not %d" % (what, arr, len(v) if isinstance(v, list) else v, n))
    prev = 0
    for i, e in enumerate(doc.get("malloc_bins") or []):
        if i >= 1 and i < MI_BIN_HUGE:
            check(e.get("bin") == i and e.get("block_size", 0) > prev, "%s: malloc_bins[%d] = %r" % (what, i, e))
            prev = e.get("block_size", 0)


def group_v3_json():
    """test-stats-v3 <dir> (--child): its JSON parses, with the figures the program saw"""
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = run_child([d], {}, layout=None)
        check(rc == 0, "test-stats-v3 exited with %d:\n%s%s" % (rc, out, err))
        docs = {}
        for name in ("heap.json", "subproc.json", "as.json"):
            path = os.path.join(d, name)
            if check(os.path.exists(path), "%s not written" % name):
                with open(path) as f:
                    docs[name] = load_json(f.read(), name)
        expect = {}
        if os.path.exists(os.path.join(d, "heap.expect")):
            with open(os.path.join(d, "heap.expect")) as f:
                expect = dict(line.strip().split("=", 1) for line in f if "=" in line)
    for name, doc in docs.items():
        if doc is not None:
            validate_v3_json(doc, name)
    heap = docs.get("heap.json")
    if heap is None or not check(expect, "heap.expect not written"):
        return
    bins = heap.get("malloc_bins") or []
    check(sum(e.get("current", 0) for e in bins) == int(expect["blocks"]), "heap.json: %d blocks in use, want %s" % (sum(e.get("current", 0) for e in bins), expect["blocks"]))
    if expect["exact"] == "1":
        b = int(expect["bin"])
        check(bins[b]["current"] == int(expect["blocks"]), "heap.json: malloc_bins[%d] = %r" % (b, bins[b]))
    check(heap["malloc_normal"]["current"] == int(expect["malloc_normal"]), "heap.json: malloc_normal %r" % heap["malloc_normal"])
    check(heap["pages"]["current"] == int(expect["pages"]), "heap.json: pages %r" % heap["pages"])
    check(heap["theaps"]["current"] == 1 and heap["heaps"]["current"] == 1, "heap.json: heaps %r theaps %r" % (heap["heaps"], heap["theaps"]))
    sub = docs.get("subproc.json")
    if sub is not None:
        check(sub["pages"]["current"] > 0 and sub["heaps"]["current"] >= 2, "subproc.json: pages %r heaps %r" % (sub["pages"], sub["heaps"]))


GROUPS = {"json": group_json, "exit-json": group_exit_json, "exit-json-badpath": group_exit_json_badpath,
          "exit-show": group_exit_show, "exit-verbose": group_exit_verbose, "exit-quiet": group_exit_quiet,
          "exit-output": group_exit_output, "legacy-print": group_legacy_print,
          "readable-show": group_readable_show, "readable-freed": lambda: group_readable_show(freed=True),
          "readable-verbose": group_readable_verbose,
          "readable-output": group_readable_output, "readable-legacy": group_readable_legacy,
          "readable-thread": group_readable_thread, "layout-select": group_layout_select,
          "v3-json": group_v3_json}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", required=True)
    ap.add_argument("group", choices=sorted(GROUPS))
    ARGS = ap.parse_args()
    self_test()
    readable_self_test()
    GROUPS[ARGS.group]()
    if failures:
        print("FAIL stats %s: %d of %d checks failed" % (ARGS.group, failures, checks))
        sys.exit(1)
    print("PASS stats %s: %d checks passed" % (ARGS.group, checks))
    sys.exit(0)
