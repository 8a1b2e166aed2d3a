# SPDX-License-Identifier: MIT
"""The suite's summary and report: medians per workload and allocator, ratios to ours and
their geometric means (stored in the .json.gz, drawn by the chart), and the markdown report."""
import math
import statistics


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(items, allocs, runs, failed):
    """{workload: {alloc: {...}}} with medians and ratios to ours; and the geometric means."""
    summ = {}
    for it in items:
        w = it["name"]
        summ[w] = {}
        for a in allocs:
            k = a["key"]
            rs = [r for r in runs if r["workload"] == w and r["allocator"] == k and r["ok"]]
            cell = dict(status="fail" if (w, k) in failed else ("ok" if rs else "missing"),
                        error=failed.get((w, k)), n=len(rs))
            if rs and (w, k) not in failed:
                cell["wall_s"] = statistics.median(r["wall_s"] for r in rs)
                cell["peak_rss_kib"] = statistics.median(r["peak_rss_kib"] for r in rs)
                el = [r["elapsed_s"] for r in rs if r["elapsed_s"] is not None]
                cell["elapsed_s"] = statistics.median(el) if el else None
                cell["wall_spread"] = (max(r["wall_s"] for r in rs) - min(r["wall_s"] for r in rs)) \
                    / 2 / cell["wall_s"] if cell["wall_s"] > 0 else 0.0
            summ[w][k] = cell
        ours = summ[w].get("ours", {})
        for k, cell in summ[w].items():
            for key, rkey in (("wall_s", "time_ratio"), ("peak_rss_kib", "rss_ratio")):
                if cell.get(key) is not None and ours.get(key):
                    cell[rkey] = cell[key] / ours[key]
                else:
                    cell[rkey] = None
    geo = {}
    for a in allocs:
        k = a["key"]
        geo[k] = dict(time_ratio=geomean([summ[w][k]["time_ratio"] for w in summ]),
                      rss_ratio=geomean([summ[w][k]["rss_ratio"] for w in summ]),
                      workloads=sum(1 for w in summ if summ[w][k]["time_ratio"] is not None))
    return summ, geo


def fmt_ratio(x):
    return "n/a" if x is None else "%.2f" % x


def table(items, allocs, summ, geo, what):
    key, rkey = ("wall_s", "time_ratio") if what == "time" else ("peak_rss_kib", "rss_ratio")
    head = "| workload | " + " | ".join(a["name"] for a in allocs) + " |"
    lines = [head, "|---" + "|---:" * len(allocs) + "|"]
    for it in items:
        cells = []
        for a in allocs:
            c = summ[it["name"]][a["key"]]
            if c["status"] == "fail":
                cells.append("fail")
            elif c.get(key) is None:
                cells.append("-")
            else:
                v = "%.3f" % c[key] if what == "time" else "%.1f" % (c[key] / 1024.0)
                cells.append(v if a["key"] == "ours" else "%s (%s)" % (v, fmt_ratio(c[rkey])))
        lines.append("| %s | %s |" % (it["name"], " | ".join(cells)))
    lines.append("| **geometric mean of the ratios** | " + " | ".join(
        "1.00" if a["key"] == "ours" else "**%s**" % fmt_ratio(geo[a["key"]][rkey])
        for a in allocs) + " |")
    return lines


def best_peers(items, allocs, summ, geo):
    """Per workload: the fastest and the leanest peer and ours relative to them (ours / it:
    above 1.00 we are slower or use more); then the geometric means against the best peer."""
    peers = [a for a in allocs if a["key"] != "ours"]
    name = {a["key"]: a["name"] for a in allocs}
    L = ["| workload | ours s | fastest peer | its s | ours / it | ours MiB | leanest peer | its MiB | ours / it |",
         "|---|---:|---|---:|---:|---:|---|---:|---:|"]
    t_ratios, r_ratios = [], []
    for it in items:
        w = it["name"]
        ours = summ[w].get("ours", {})
        if ours.get("wall_s") is None:
            continue
        cells = [w]
        for key, ratios, unit in (("wall_s", t_ratios, 1.0), ("peak_rss_kib", r_ratios, 1024.0)):
            have = [(summ[w][a["key"]][key], a["key"]) for a in peers if summ[w][a["key"]].get(key)]
            if not have:
                cells += ["%.2f" % (ours[key] / unit), "-", "-", "-"]
                continue
            best, k = min(have)
            ratios.append(ours[key] / best)
            fmt = "%.2f" if key == "wall_s" else "%.1f"
            cells += [fmt % (ours[key] / unit), name[k], fmt % (best / unit), "%.2f" % (ours[key] / best)]
        L.append("| " + " | ".join(cells) + " |")
    g_t, g_r = geomean(t_ratios), geomean(r_ratios)
    L.append("| **geometric mean** | | | | **%s** | | | | **%s** |" % (fmt_ratio(g_t), fmt_ratio(g_r)))
    L.append("")
    timed = [a for a in peers if geo[a["key"]]["time_ratio"]]
    if timed:
        best_t = min(timed, key=lambda a: geo[a["key"]]["time_ratio"])
        L.append("Time, ours / the fastest peer by geometric mean (%s): %.2f. Peak RSS, ours / each peer "
                 "by geometric mean: " % (best_t["name"], 1.0 / geo[best_t["key"]]["time_ratio"]) +
                 ", ".join("%s %.2f" % (a["name"], 1.0 / geo[a["key"]]["rss_ratio"])
                           for a in peers if geo[a["key"]]["rss_ratio"]) + ".")
        L.append("")
    return L


def result_keys(runs, workload, wanted):
    """The RESULT fields that pass wanted(name) in the good runs of a workload, in order."""
    keys = []
    for r in runs:
        if r["workload"] == workload and r["ok"]:
            keys += [k for k in r.get("result", {}) if k not in keys and wanted(k)]
    return keys


def result_median(runs, workload, alloc, key):
    """The median of a RESULT field over an allocator's good runs of a workload, or None."""
    xs = []
    for r in runs:
        if r["workload"] == workload and r["allocator"] == alloc and r["ok"]:
            try:
                xs.append(float(r["result"][key]))
            except (KeyError, ValueError):
                pass
    return statistics.median(xs) if xs else None


def reported_figures(items, allocs, runs):
    """Tables of the memory figures programs measure themselves (RESULT fields ending in _mib
    that name an address space or a resident set, e.g. thread-churn's at the end): medians per
    allocator."""
    L = []
    for it in items:
        w = it["name"]
        keys = result_keys(runs, w, lambda k: k.endswith("_mib") and ("rss" in k or "vsz" in k))
        if not keys:
            continue
        L.append("### %s" % w)
        L.append("")
        L.append("| allocator | " + " | ".join(k[:-4].replace("_", " ") + " (MiB)" for k in keys) + " |")
        L.append("|---|" + "---|" * len(keys))
        for a in allocs:
            xs = [result_median(runs, w, a["key"], k) for k in keys]
            L.append("| %s | %s |" % (a["name"], " | ".join("-" if x is None else "%.1f" % x
                                                            for x in xs)))
        L.append("")
    if L:
        L = ["## Memory figures the programs report", "",
             "Medians of what the programs measure themselves (see each program's comment; "
             "vsz: address space, /proc/self/statm size; rss: resident set).", ""] + L
    return L


PER_PROCESS = (("_us", "us"), ("_faults", "page faults"))


def _per_process_title(k):
    suffix, unit = next((s, u) for s, u in PER_PROCESS if k.endswith(s))
    return "%s (%s)" % (k[:-len(suffix)].replace("_", " "), unit)


def reported_times(items, allocs, runs):
    """Tables of the per-process figures programs measure themselves (RESULT fields ending in
    _us or _faults, e.g. spawn's start-up cost per process): medians per allocator, with the
    difference to glibc's."""
    L = []
    base = next((a["key"] for a in allocs if a["key"] == "glibc"), None)
    for it in items:
        w = it["name"]
        keys = result_keys(runs, w, lambda k: any(k.endswith(sfx) for sfx, _ in PER_PROCESS))
        if not keys:
            continue
        L.append("### %s" % w)
        L.append("")
        L.append("| allocator | " + " | ".join(_per_process_title(k) for k in keys) + " |")
        L.append("|---|" + "---|" * len(keys))
        for a in allocs:
            cells = []
            for k in keys:
                x = result_median(runs, w, a["key"], k)
                b = result_median(runs, w, base, k) if base else None
                if x is None:
                    cells.append("-")
                elif b is None or a["key"] == base:
                    cells.append("%.0f" % x)
                else:
                    cells.append("%.0f (%+.0f)" % (x, x - b))
            L.append("| %s | %s |" % (a["name"], " | ".join(cells)))
        L.append("")
    if L:
        L = ["## Per-process figures the programs report", "",
             "Medians of what the programs measure themselves per process (see each program's "
             "comment; spawn: the wall time from posix_spawn to the end of waitpid of each "
             "short-lived child, i.e. its whole start-up, run and exit, and its minor page "
             "faults); in parentheses the difference to glibc.", ""] + L
    return L


def report(ctx, items, allocs, runs, failed, summ, geo, stem):
    args = ctx["args"]
    m = ctx["machine"]
    L = []
    L.append("# Allocator benchmark suite%s" % (" (quick)" if args.quick else ""))
    L.append("")
    L.append("Date: %s; total time %.0f s; %d repetition(s), allocators interleaved in a rotated "
             "order; load average (1 min) before %.2f, after %.2f%s."
             % (ctx["date"], ctx["total_s"], args.reps, ctx["load_before"], ctx["load_after"],
                " -- other work was running: the times may be disturbed"
                if max(ctx["load_before"], ctx["load_after"]) > 0.5 else ""))
    L.append("")
    L.append("Machine: %s, %d cores, %s memory; %s; %s; %s."
             % (m["cpu"], m["cores"], m["memory"], m["kernel"], m["os"], m["compiler"]))
    L.append("")
    L.append("## Wall time (s)")
    L.append("")
    L.append("Median wall time of the whole process (fork to exit; real programs: what "
             "bench/benchlib/real.py measures); in parentheses the ratio to ours "
             "(peer / ours: above 1.00 the peer is slower than ours).")
    L.append("")
    L += table(items, allocs, summ, geo, "time")
    L.append("")
    L.append("## Peak RSS (MiB)")
    L.append("")
    L.append("Median peak resident set size (ru_maxrss of the process and its waited-for "
             "children; for real programs what bench/benchlib/real.py measures); in parentheses "
             "the ratio to ours (above 1.00 the peer uses more memory than ours).")
    L.append("")
    L += table(items, allocs, summ, geo, "rss")
    L.append("")
    L.append("## Against the best peer")
    L.append("")
    L.append("Per workload the fastest and the leanest peer (medians as above) and ours relative "
             "to it (ours / it: above 1.00 we are slower or use more memory); the geometric mean "
             "row is over these per-workload ratios, whichever peer is best on each.")
    L.append("")
    L += best_peers(items, allocs, summ, geo)
    L += reported_figures(items, allocs, runs)
    L += reported_times(items, allocs, runs)
    if stem:
        L.append("![time and peak RSS relative to ours](%s.png)" % stem)
        L.append("")
    if failed:
        L.append("## Failures")
        L.append("")
        for (w, k), why in failed.items():
            name = next(a["name"] for a in allocs if a["key"] == k)
            L.append("- %s under %s: %s" % (w, name, why))
        L.append("")
    L.append("## Allocators")
    L.append("")
    L.append("| key | name | version | from | LD_PRELOAD object |")
    L.append("|---|---|---|---|---|")
    for a in allocs:
        L.append("| %s | %s | %s | %s | %s |" % (a["key"], a["name"], a["version"], a["source"],
                                                 a["lib"] or "(none: glibc)"))
    L.append("")
    L.append("Each run: `LD_PRELOAD=\"<object> <origin.so>\"` (glibc: `<origin.so>` only) and "
             "`BENCH_ORIGIN_FILE=<fresh file>` in an environment without `MIMALLOC_*`, "
             "`MALLOC_*`, `GLIBC_TUNABLES` or an inherited `LD_PRELOAD`. Every process of every "
             "run recorded the object that defines its `malloc` (bench/origin.c), and the "
             "programs' `RESULT ... alloc_from=`; any mismatch makes the cell `fail`.")
    L.append("")
    for a in allocs:
        if a.get("note") and a["key"] not in ("glibc",):
            L.append("- %s: %s" % (a["name"], a["note"]))
    L.append("")
    L.append("## Commands")
    L.append("")
    L.append("```")
    L.append(ctx["command"])
    L.append("```")
    L.append("")
    L.append("Build: `%s` (each program; `%s` for origin.so)."
             % (ctx["compile_example"], ctx["origin_cmd"]))
    L.append("")
    L.append("| workload | command (in the build directory) | models |")
    L.append("|---|---|---|")
    for it in items:
        L.append("| %s | `%s` | %s |" % (it["name"], it["command"], it.get("models", "")))
    L.append("")
    if ctx["skipped"]:
        L.append("Skipped: " + "; ".join(ctx["skipped"]))
        L.append("")
    return "\n".join(L) + "\n"


