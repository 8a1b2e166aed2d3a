#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The live view with the heap profiler (label live): live-prof-prog holds 40 MB from hold_big
and 11 MB from hold_small with MIMALLOC_LIVE=1 and MIMALLOC_PROFILE set; tools/mimalloc-live
must show both sites, named, in that order, with estimates within 15% of the truth (json, top,
the served /live.json), and serve /metrics in Prometheus' text format with the process figures
and the sites. Without the profiler, no profile in the view and none in /metrics.
usage: run-live-profile.py PROGRAM VIEWER"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

PROG, VIEWER = sys.argv[1], sys.argv[2]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL", msg)
    return cond


def start(env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env.update({"MIMALLOC_LIVE": "1"}, **env_extra)
    p = subprocess.Popen([PROG], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    m = re.match(r"ready (\d+) (\d+)", p.stdout.readline())
    return p, (int(m.group(1)), int(m.group(2))) if m else None


def viewer(*args):
    r = subprocess.run([sys.executable, VIEWER] + list(args), capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"mimalloc-live {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def serve(pid):
    srv = subprocess.Popen([sys.executable, VIEWER, "serve", str(pid), "--listen", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, text=True)
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", srv.stdout.readline())
    if not check(m is not None, "the viewer did not say where it serves"):
        srv.terminate()
        return srv, None, None
    base = f"http://127.0.0.1:{m.group(1)}"
    live = json.loads(urllib.request.urlopen(base + "/live.json", timeout=10).read())
    resp = urllib.request.urlopen(base + "/metrics", timeout=10)
    check(resp.headers.get("Content-Type", "").startswith("text/plain"), "/metrics is not text/plain")
    return srv, live, resp.read().decode()


def check_metrics(text, with_profile):
    names = set()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            check(line == "" or re.match(r"# (HELP|TYPE) mimalloc_\w+ ", line), f"/metrics: bad comment line {line!r}")
            continue
        m = re.match(r'(mimalloc_\w+)(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? (-?\d+(\.\d+)?)$', line)
        if check(m is not None, f"/metrics: not a sample line: {line!r}"):
            names.add(m.group(1))
    for n in ("mimalloc_up", "mimalloc_rss_bytes", "mimalloc_committed_bytes", "mimalloc_threads", "mimalloc_thread_inuse_bytes"):
        check(n in names, f"/metrics lacks {n}")
    check(("mimalloc_profile_site_inuse_bytes" in names) == with_profile,
          f"/metrics {'lacks' if with_profile else 'has'} the profile's sites")


def main():
    out = tempfile.mkdtemp(prefix="live-prof-")
    p, truth = start({"MIMALLOC_PROFILE": os.path.join(out, "prof"), "MIMALLOC_PROFILE_RATE": "16384"})
    if not check(truth is not None, "the program did not get ready"):
        p.kill()
        return 1
    try:
        snap = json.loads(viewer("json", str(p.pid)))
        prof = snap.get("profile")
        if check(prof is not None and prof.get("sites"), "the snapshot has no profile sites"):
            funcs = [s["function"] for s in prof["sites"]]
            check(funcs[:2] == ["hold_big", "hold_small"], f"top sites {funcs[:4]}, expected hold_big, hold_small")
            for site, true in zip(prof["sites"][:2], truth):
                err = abs(site["inuse_bytes"] - true) / true
                print(f"  {site['function']}: {site['inuse_bytes']} bytes in use estimated, {true} true ({err * 100:.1f}% off)")
                check(err <= 0.15, f"{site['function']}: {site['inuse_bytes']} estimated, {true} true")
                check(any("main" in f for f in site["frames"][1:3]), f"{site['function']}: main is not its caller: {site['frames'][:3]}")
        top = viewer("top", str(p.pid), "--count", "1")
        check(re.search(r"heap profile: \d+ samples", top) is not None and "hold_big" in top, "top does not show the profile")
        srv, live, metrics = serve(p.pid)
        try:
            if live is not None:
                check((live.get("profile") or {}).get("sites", [{}])[0].get("function") == "hold_big", "/live.json: hold_big is not the top site")
                check_metrics(metrics, True)
                m = re.search(r'mimalloc_profile_site_inuse_bytes\{rank="1",function="hold_big",callers="[^"]*"\} (\d+)', metrics)
                check(m is not None, "/metrics: no rank 1 site hold_big")
        finally:
            srv.terminate()
            srv.wait(timeout=10)
    finally:
        p.stdin.close()
        p.wait(timeout=60)
    # without the profiler: no profile anywhere
    p, truth = start({})
    try:
        snap = json.loads(viewer("json", str(p.pid)))
        check(snap.get("profile") is None, "a profile in the view without MIMALLOC_PROFILE")
        srv, live, metrics = serve(p.pid)
        srv.terminate()
        srv.wait(timeout=10)
        if metrics is not None:
            check_metrics(metrics, False)
    finally:
        p.stdin.close()
        p.wait(timeout=60)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
