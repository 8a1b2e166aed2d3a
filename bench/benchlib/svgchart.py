# SPDX-License-Identifier: MIT
"""RSS over time as an SVG line chart, written by hand (no plotting library needed): bench.py
mem's chart, one line per allocator, with the live bytes requested dashed in grey."""


def nice_step(span, target_ticks):
    raw = span / max(1, target_ticks)
    mag = 10 ** int(("%e" % raw).split("e")[1])
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def thin(points, buckets):
    """At most ~2*buckets points: the min and the max of each time bucket, in time order."""
    if len(points) <= 2 * buckets:
        return points
    t0, t1 = points[0][0], points[-1][0]
    width = (t1 - t0) / buckets or 1.0
    out, cur, idx = [], [], 0
    for p in points:
        b = min(buckets - 1, int((p[0] - t0) / width))
        if b != idx and cur:
            lo, hi = min(cur, key=lambda q: q[1]), max(cur, key=lambda q: q[1])
            out.extend(sorted({lo, hi}))
            cur = []
        idx = b
        cur.append(p)
    if cur:
        lo, hi = min(cur, key=lambda q: q[1]), max(cur, key=lambda q: q[1])
        out.extend(sorted({lo, hi}))
    return out


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_chart(title, series, live=None):
    """series: [(label, color, [(t, mib)])]; live: [(t, mib)] drawn dashed grey, or None."""
    W, H = 760, 400
    left, right, top, bottom = 64, 16, 40, 92
    pw, ph = W - left - right, H - top - bottom
    tmax = max(p[0] for _, _, pts in series for p in pts)
    ymax = max(p[1] for _, _, pts in series for p in pts)
    if live:
        ymax = max(ymax, max(p[1] for p in live))
    xstep = nice_step(tmax, 8)
    ystep = nice_step(ymax, 6)
    xmax = xstep * max(1, -(-tmax // xstep))
    ytop = ystep * max(1, -(-ymax * 1.02 // ystep))

    def X(t):
        return left + pw * t / xmax

    def Y(v):
        return top + ph * (1 - v / ytop)

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="%d" height="%d" fill="white"/>' % (W, H),
         '<text x="%d" y="22" text-anchor="middle" font-size="15" font-weight="bold">%s</text>'
         % (W // 2, esc(title))]
    v = 0.0
    while v <= ytop + 1e-9:
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                 % (left, left + pw, Y(v), Y(v)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (left - 6, Y(v) + 4, v))
        v += ystep
    t = 0.0
    while t <= xmax + 1e-9:
        o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>'
                 % (X(t), X(t), top, top + ph))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>'
                 % (X(t), top + ph + 16, round(t, 6)))
        t += xstep
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>'
             % (left, top, pw, ph))
    o.append('<text x="%d" y="%d" text-anchor="middle">time since start (s)</text>'
             % (left + pw // 2, top + ph + 34))
    o.append('<text transform="translate(16,%d) rotate(-90)" text-anchor="middle">RSS (MiB)</text>'
             % (top + ph // 2))
    legend = []
    if live:
        pts = " ".join("%.1f,%.1f" % (X(a), Y(b)) for a, b in live)
        o.append('<polyline points="%s" fill="none" stroke="#888" stroke-width="1.2" '
                 'stroke-dasharray="4 3"/>' % pts)
        legend.append(("live bytes requested (ours' run)", "#888", True))
    for label, color, pts in series:
        o.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6" '
                 'stroke-linejoin="round"/>'
                 % (" ".join("%.1f,%.1f" % (X(a), Y(b)) for a, b in thin(pts, 400)), color))
        legend.append((label, color, False))
    # legend under the plot, two columns
    for i, (label, color, dashed) in enumerate(legend):
        lx = left + (i % 2) * (pw // 2)
        ly = top + ph + 52 + (i // 2) * 16
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                 % (lx, lx + 22, ly - 4, ly - 4, color,
                    ' stroke-dasharray="4 3"' if dashed else ""))
        o.append('<text x="%d" y="%d">%s</text>' % (lx + 28, ly, esc(label)))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def live_curve(phases):
    """Live bytes from the PHASE lines: a ramp over each work part, flat over each gap."""
    pts, prev = [], 0.0
    for p in phases:
        pts += [(p["start"], prev), (p["work_end"], p["live_mib"])]
        prev = p["live_mib"]
    if phases:
        pts.append((phases[-1]["work_end"] + phases[-1]["gap_s"], prev))
    return pts
