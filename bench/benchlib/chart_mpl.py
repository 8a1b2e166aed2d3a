# SPDX-License-Identifier: MIT
"""Chart of a benchmark-suite result: time and peak RSS of every allocator relative to ours.

  /usr/bin/python3 bench/benchlib/chart_mpl.py RESULT.json.gz OUT_STEM      -> OUT_STEM.png

Run by `bench.py chart` and `bench.py suite` (benchlib/chart.py) with Debian's python3, as a
script of its own: it imports nothing of the harness, only matplotlib.

Two panels (like the charts in mimalloc's README): relative time on top, relative peak RSS below;
per workload one bar per allocator, ours = 1.0 (the dashed line); lower is better. Bars taller
than the axis are cut and labelled with their value; a failed run is marked with an "x".
Needs matplotlib (Debian's python3-matplotlib).
"""
import gzip
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CAP = 3.0  # the y axis ends here; taller bars are cut and labelled
# a fixed colour per allocator key (ours red), so charts of different runs compare at a glance
COLORS = {"ours": "#d62728", "glibc": "#1f77b4", "mimalloc-deb": "#c5b0d5",
          "mimalloc2": "#9467bd", "mimalloc3": "#5b2a86", "jemalloc": "#2ca02c",
          "tcmalloc": "#ff7f0e", "tbbmalloc": "#8c564b", "snmalloc": "#17becf",
          "rpmalloc": "#bcbd22"}
SPARE = ["#e377c2", "#7f7f7f", "#aec7e8", "#98df8a", "#ff9896", "#c49c94"]


def main(json_path, stem):
    with (gzip.open if json_path.endswith(".gz") else open)(json_path, "rt") as f:
        data = json.load(f)
    allocs = data["allocators"]
    workloads = [w["name"] for w in data["workloads"]]
    summ, geo = data["summary"], data["geomean"]
    names = workloads + ["geomean"]
    n = len(allocs)
    width = 0.8 / max(1, n)
    fig_w = min(28.0, max(10.0, 0.12 * n * len(names) + 2.5))
    fig, axes = plt.subplots(2, 1, figsize=(fig_w, max(8.0, 0.36 * fig_w)), sharex=True)
    panels = (("time_ratio", "time relative to ours (lower is better)"),
              ("rss_ratio", "peak RSS relative to ours (lower is better)"))
    for ax, (rkey, ylabel) in zip(axes, panels):
        top = CAP
        vals_all = []
        for i, a in enumerate(allocs):
            xs, ys, fails = [], [], []
            for j, w in enumerate(names):
                x = j - 0.4 + width * (i + 0.5)
                if w == "geomean":
                    v = geo.get(a["key"], {}).get(rkey)
                    failed = False
                else:
                    cell = summ[w][a["key"]]
                    v = cell.get(rkey)
                    failed = cell.get("status") == "fail"
                if failed:
                    fails.append(x)
                elif v is not None:
                    xs.append(x)
                    ys.append(v)
                    vals_all.append(v)
            color = COLORS.get(a["key"]) or SPARE[i % len(SPARE)]
            ax.bar(xs, [min(y, top) for y in ys], width=width * 0.92, color=color,
                   label=a["name"], edgecolor="none")
            for x, y in zip(xs, ys):
                if y > top:
                    ax.text(x, top * 0.985, "%.1f" % y, rotation=90, ha="center", va="top",
                            fontsize=6, color="white", fontweight="bold")
            if fails:
                ax.plot(fails, [0.06 * top] * len(fails), "x", color=color, markersize=6,
                        markeredgewidth=2)
        ax.axhline(1.0, color="#333", linestyle="--", linewidth=0.9)
        ax.set_ylim(0, top)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="#ddd", linewidth=0.6)
        ax.set_axisbelow(True)
        for j in range(1, len(names)):
            ax.axvline(j - 0.5, color="#eee", linewidth=0.6)
        if names:
            ax.axvspan(len(names) - 1.5, len(names) - 0.5, color="#f4f4f4", zorder=0)
    axes[1].set_xticks(range(len(names)))
    axes[1].set_xticklabels(names, rotation=35, ha="right")
    axes[1].set_xlim(-0.5, len(names) - 0.5)
    m = data.get("machine", {})
    title = "Allocator benchmark suite%s: %d rep(s), %s, %s cores" % (
        " (quick)" if data.get("quick") else "", data.get("reps", 0), m.get("cpu", "?"),
        m.get("cores", "?"))
    axes[0].set_title(title, fontsize=11, pad=34)
    axes[0].legend(ncol=min(n, 10 if fig_w > 16 else 5), fontsize=8, loc="lower center",
                   bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.text(0.01, 0.005, "median over the repetitions; ratio = allocator / ours; "
             "bars cut at %.1f are labelled; x = failed run" % CAP, fontsize=7, color="#555")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(stem + ".png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chart_mpl.py RESULT.json.gz OUT_STEM")
    main(sys.argv[1], sys.argv[2])
