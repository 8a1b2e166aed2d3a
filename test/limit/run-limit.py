#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run-limit.py -- the memory limit (src/limit.c, docs/memory.md "The memory limit").

Builds fake cgroup layouts in a temporary directory (proc/self/cgroup and sys/fs/cgroup/...),
points MIMALLOC_TEST_CGROUP_ROOT at it and runs limit-probe (limit-probe.c) in a clean
environment (only PATH and sanitizer settings are inherited). Groups (one ctest test each):

  detect     every layout: cgroup v2 memory.high below memory.max, memory.max only, both "max",
             high "max" with a max, v1 limit_in_bytes, v1's huge "no limit" value, hybrid (v2
             line without memory files, v1 memory controller), missing files, no
             /proc/self/cgroup, garbage values (text, empty, negative, too long, 0, trailing
             text), nested paths (a parent's lower limit binds; the least of the levels), a
             trailing '/', a memory controller listed with others: mi_memory_limit() and the
             source named on mi_options_print's "memory limit:" line
  option     MIMALLOC_MEMORY_LIMIT: amounts (300MiB, 2GiB, 2g, 512k, plain bytes), shares of
             the cgroup's limit (90%, 50% of v1, a share without a cgroup limit = none), 0 = off
             even under a cgroup limit, invalid values (a warning, the default kept), a share
             over 100% (clamped, warned); MIMALLOC_MEMORY_LIMIT_HARD shown (on, an amount)
  api        mi_memory_limit_set (bytes rounded up to KiB, at least 2 KiB; 0 = off) and mi_option_set with a
             share, over a cgroup limit
  reread     the cgroup's value changes while the process runs: mi_memory_limit() returns the
             new one after the re-read interval (1 s), not before; the verbose line says it; the
             purger's thread re-reads it while purges wait, without a call of the program
  stats      mi_stats_print_out with a limit: a line with the limit, its source and the headroom
             (limit minus committed); without a limit no such line; MIMALLOC_VERBOSE=1's start-up
             options print the "memory limit:" line
  json       MIMALLOC_STATS_JSON's process object: memory_limit (0 without) and
             memory_limit_purges; the live view's /metrics (tools/mimalloc-live's metrics() on
             that document): limit, headroom and purges only while a limit is in force
  pressure   the purger near the limit (80% of it, MIMALLOC_PURGE_DELAY=10000): memory freed
             under a limit goes back within about a second (committed falls), and the statistics
             count the purges made for the limit; without the limit the same memory stays
             committed for the purge delay. While the purger finds the program near the limit
             (56 of 64 MiB live), a free gives its memory back before it returns: 8 MiB freed
             is 8 MiB less committed at once, with no wait for the purger (none without)
  drift      the drifting workload (limit-drift.c: a 200 MiB live set whose block sizes move
             from 1 KiB to 1 MiB and back while 4,000 MiB pass through it) with
             MIMALLOC_PURGE_DELAY=10000 and MIMALLOC_MEMORY_LIMIT=260MiB: with --drift-bound B its
             peak RSS stays within B times the limit (CMake passes 1.4 where the library gives
             back the OS pages inside pages that hold live blocks: release builds, not secure,
             no sanitizer; docs/memory.md has the measured 1.2x); with the limit off it goes past
             that bound (it needs 1 GiB), so the test shows the difference. Without --drift-bound
             both runs only print their figures.
usage: run-limit.py --probe PATH [--drift PATH [--drift-bound B]] GROUP
"""
import argparse
import errno
import os
import re
import shlex
import subprocess
import sys
import tempfile

from limitcheck import FAILS, GiB, KiB, MiB, check, clean_env   # (this directory: the drivers' shared part)


# cross builds run the probe under an emulator (test/CMakeLists.txt: MI_TEST_EMULATOR)
EMULATOR = shlex.split(os.environ.get("MI_TEST_EMULATOR", ""))


# a probe run that does not end fails the check that called it and names itself, well within
# the test's own timeout (CMake: 120 s, 600 emulated or sanitized), which would end the whole
# driver with nothing to show
PROBE_TIMEOUT = 300 if EMULATOR else 60


def run(args, extra_env, *cmds):
    try:
        r = subprocess.run(EMULATOR + [args.probe] + list(cmds), env=clean_env(extra_env), capture_output=True,
                           text=True, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        text = lambda b: (b.decode(errors="replace") if isinstance(b, bytes) else (b or ""))
        check(False, f"the probe ended within {PROBE_TIMEOUT} s", f"{' '.join(cmds)} with "
              f"{ {k: v for k, v in extra_env.items() if k.startswith('MIMALLOC_')} }: "
              f"stdout {text(e.stdout)[-400:]!r} stderr {text(e.stderr)[-600:]!r}")
        return -1, text(e.stdout), text(e.stderr)
    return r.returncode, r.stdout, r.stderr


def layout(root, cgroup_text, files):
    """proc/self/cgroup holds cgroup_text (None: no file); files: relative path -> contents."""
    os.makedirs(os.path.join(root, "proc", "self"), exist_ok=True)
    if cgroup_text is not None:
        with open(os.path.join(root, "proc", "self", "cgroup"), "w") as f:
            f.write(cgroup_text)
    for rel, text in files.items():
        path = os.path.join(root, "sys", "fs", "cgroup", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def limit_of(out):
    m = re.search(r"^limit (\d+)$", out, re.M)
    return int(m.group(1)) if m else None


def limit_line(err):
    m = re.search(r"^mimalloc: memory limit: (.*)$", err, re.M)
    return m.group(1) if m else None


V1 = "12:pids:/x\n5:memory:/docker/abc\n1:name=systemd:/x\n"   # a v1 memory line among others


def group_detect(args, tmp):
    cases = [
        # name, /proc/self/cgroup, files, expected bytes, expected source words
        ("v2 high below max", "0::/app\n", {"app/memory.high": "314572800\n", "app/memory.max": "419430400\n"},
         300 * MiB, "cgroup v2 memory.high"),
        ("v2 max only", "0::/app\n", {"app/memory.max": "419430400\n"}, 400 * MiB, "cgroup v2 memory.max"),
        ("v2 high max, max set", "0::/app\n", {"app/memory.high": "max\n", "app/memory.max": "419430400\n"},
         400 * MiB, "cgroup v2 memory.max"),
        ("v2 both max", "0::/app\n", {"app/memory.high": "max\n", "app/memory.max": "max\n"}, 0, "none"),
        ("v2 high above max", "0::/app\n", {"app/memory.high": "524288000\n", "app/memory.max": "419430400\n"},
         400 * MiB, "cgroup v2 memory.max"),
        ("v1", V1, {"memory/docker/abc/memory.limit_in_bytes": "268435456\n"}, 256 * MiB,
         "cgroup v1 memory.limit_in_bytes"),
        ("v1 huge is none", V1, {"memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n"}, 0, "none"),
        ("hybrid: v2 line, v1 memory", "4:memory:/m\n0::/\n",
         {"unified/cgroup.procs": "", "memory/m/memory.limit_in_bytes": "134217728\n"}, 128 * MiB, "cgroup v1"),
        ("v1 controller list", "3:cpu,memory,blkio:/g\n", {"memory/g/memory.limit_in_bytes": "67108864"},
         64 * MiB, "cgroup v1"),
        ("missing files", "0::/app\n", {}, 0, "none"),
        ("no /proc/self/cgroup", None, {"app/memory.max": "419430400\n"}, 0, "none"),
        ("garbage text", "0::/app\n", {"app/memory.max": "lots\n"}, 0, "none"),
        ("garbage empty", "0::/app\n", {"app/memory.max": ""}, 0, "none"),
        ("garbage negative", "0::/app\n", {"app/memory.max": "-5\n"}, 0, "none"),
        ("garbage trailing", "0::/app\n", {"app/memory.max": "1048576k\n"}, 0, "none"),
        ("garbage zero", "0::/app\n", {"app/memory.max": "0\n"}, 0, "none"),
        ("garbage too long", "0::/app\n", {"app/memory.max": "99999999999999999999999999\n"}, 0, "none"),
        ("garbage cgroup file", "hello world\n", {"memory.max": "419430400\n"}, 0, "none"),
        ("nested: parent binds", "0::/a/b/c\n",
         {"a/b/c/memory.max": "max\n", "a/b/memory.max": "209715200\n", "a/memory.max": "419430400\n"},
         200 * MiB, "cgroup v2 memory.max"),
        ("nested: least of levels", "0::/a/b/c\n",
         {"a/b/c/memory.max": "314572800\n", "a/b/memory.high": "104857600\n", "memory.max": "52428800\n"},
         50 * MiB, "cgroup v2 memory.max"),
        ("nested: namespace root", "0::/\n", {"memory.max": "157286400\n"}, 150 * MiB, "cgroup v2 memory.max"),
        ("trailing slash", "0::/app/\n", {"app/memory.high": "314572800\n"}, 300 * MiB, "cgroup v2 memory.high"),
        ("v1 nested", "4:memory:/a/b\n", {"memory/a/b/memory.limit_in_bytes": "9223372036854771712\n",
                                          "memory/a/memory.limit_in_bytes": "100663296\n"}, 96 * MiB, "cgroup v1"),
    ]
    for i, (name, cg, files, want, source) in enumerate(cases):
        root = os.path.join(tmp, "detect%d" % i)
        layout(root, cg, files)
        rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root}, "get", "print")
        what = "detect: " + name
        if not check(rc == 0, what, f"exit {rc}: {err[-500:]}"):
            continue
        check(limit_of(out) == want, what, f"limit {limit_of(out)}, expected {want}")
        line = limit_line(err)
        check(line is not None and source in line, what, f"line {line!r} should name {source!r}")


def group_option(args, tmp):
    root = os.path.join(tmp, "opt")
    layout(root, "0::/svc\n", {"svc/memory.max": "1048576000\n"})   # 1000 MiB
    v1root = os.path.join(tmp, "opt1")
    layout(v1root, "4:memory:/j\n", {"memory/j/memory.limit_in_bytes": "2147483648\n"})
    none = os.path.join(tmp, "none")
    layout(none, "0::/svc\n", {})
    cases = [
        ("300MiB", root, 300 * MiB, "300 MiB (option memory_limit)"),
        ("2GiB", root, 2 * GiB, "2 GiB (option memory_limit)"),
        ("2g", root, 2 * GiB, "2 GiB"),
        ("512k", root, 512 * KiB, "512 KiB"),
        ("1048576", root, 1 * MiB, "1 MiB"),
        ("90%", root, 900 * MiB, "900 MiB (90% of cgroup v2 memory.max 1000 MiB)"),
        ("50%", v1root, 1 * GiB, "1 GiB (50% of cgroup v1 memory.limit_in_bytes 2 GiB)"),
        ("100%", root, 1000 * MiB, "1000 MiB (cgroup v2 memory.max)"),
        ("90%", none, 0, "none"),
        ("on", root, 1000 * MiB, "1000 MiB (cgroup v2 memory.max)"),
        ("", root, 1000 * MiB, "1000 MiB (cgroup v2 memory.max)"),
        ("0", root, 0, "off"),
        ("off", root, 0, "off"),
    ]
    for value, r, want, text in cases:
        rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": r, "MIMALLOC_MEMORY_LIMIT": value}, "get", "print")
        what = f"option: MIMALLOC_MEMORY_LIMIT={value}"
        check(rc == 0 and limit_of(out) == want, what, f"limit {limit_of(out)}, expected {want} ({err[-300:]})")
        line = limit_line(err)
        check(line is not None and line.startswith(text), what, f"line {line!r}, expected it to start with {text!r}")
        check("mimalloc: warning" not in err, what, f"unexpected warning: {err[-300:]}")
    for value in ("lots", "90%%", "-5%", "12 MiB"):
        rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_MEMORY_LIMIT": value}, "get")
        what = f"option: invalid MIMALLOC_MEMORY_LIMIT={value}"
        check(limit_of(out) == 1000 * MiB, what, f"the default (the cgroup's) should stay: {limit_of(out)}")
        check("memory_limit has an invalid value" in err, what, f"no warning: {err[-300:]}")
    rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_MEMORY_LIMIT": "150%"}, "get")
    check(limit_of(out) == 1000 * MiB and "out of range" in err, "option: 150% is clamped to 100%",
          f"limit {limit_of(out)}, stderr {err[-300:]}")
    for value, text in (("on", "hard limit 1000 MiB"), ("1200MiB", "hard limit 1200 MiB"), ("0", None)):
        rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_MEMORY_LIMIT_HARD": value}, "print")
        line = limit_line(err) or ""
        what = f"option: MIMALLOC_MEMORY_LIMIT_HARD={value}"
        if text is None:
            check("hard" not in line, what, f"line {line!r}")
        else:
            check(text in line, what, f"line {line!r} should say {text!r}")


def group_api(args, tmp):
    root = os.path.join(tmp, "api")
    layout(root, "0::/svc\n", {"svc/memory.high": "1048576000\n"})
    env = {"MIMALLOC_TEST_CGROUP_ROOT": root}
    rc, out, err = run(args, env, "get", "set", str(123 * MiB), "get", "print", "set", "1000", "get",
                       "set", "0", "get", "opt", "-50", "get")
    got = [int(x) for x in re.findall(r"^limit (\d+)$", out, re.M)]
    check(got == [1000 * MiB, 123 * MiB, 2048, 0, 500 * MiB], "api: mi_memory_limit_set / mi_option_set",
          f"limits {got}")
    check((limit_line(err) or "").startswith("123 MiB (option memory_limit)"), "api: the line after a set",
          f"{limit_line(err)!r}")


def group_reread(args, tmp):
    root = os.path.join(tmp, "reread")
    layout(root, "0::/svc\n", {"svc/memory.max": "419430400\n"})
    path = os.path.join(root, "sys/fs/cgroup/svc/memory.max")
    rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_VERBOSE": "1"},
                       "get", "write", path, "209715200\n", "get", "sleep", "1200", "get",
                       "write", path, "max\n", "sleep", "1200", "get")
    got = [int(x) for x in re.findall(r"^limit (\d+)$", out, re.M)]
    check(got == [400 * MiB, 400 * MiB, 200 * MiB, 0], "reread: the limit follows the cgroup's file",
          f"limits {got} (expected 400 MiB, the same before 1 s, then 200 MiB, then none)")
    check("memory limit changed: 200 MiB (cgroup v2 memory.max)" in err, "reread: the verbose line",
          f"stderr {err[-600:]}")
    # the purger re-reads it too, without a call of the program: freed memory waits 10 s for its
    # purge, so the purger runs (checking the limit every 100 ms) while the file changes
    layout(root, "0::/svc\n", {"svc/memory.max": "419430400\n"})
    rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_VERBOSE": "1", "MIMALLOC_PURGE_DELAY": "10000"},
                       "alloc", "8", "free", "write", path, "314572800\n", "sleep", "1500")
    check(re.search(r"^mimalloc: thread 0x[0-9a-f]+: memory limit changed: 300 MiB \(cgroup v2 memory.max\)$", err, re.M)
          is not None, "reread: by the purger", f"stderr {err[-600:]}")


def amount(text):
    """ "1.5 MiB" -> bytes (stats-print.c's rounding: three digits at most)."""
    num, unit = text.split()
    return float(num) * {"B": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB}[unit]


def group_stats(args, tmp):
    root = os.path.join(tmp, "stats")
    layout(root, "0::/svc\n", {"svc/memory.high": "1073741824\n"})
    rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root}, "alloc", "8", "stats")
    m = re.search(r"^mimalloc: memory limit: 1 GiB \(cgroup v2 memory.high\), headroom (\S+ \S+) "
                  r"\(limit minus committed (\S+ \S+)\), (\d+) purges? near the limit$", err, re.M)
    if check(m is not None, "stats: the limit line of the readable layout", f"stderr {err[:800]}"):
        head, com = amount(m.group(1)), amount(m.group(2))
        check(com >= 8 * MiB and abs(head + com - GiB) <= 0.01 * GiB, "stats: headroom = limit - committed",
              f"headroom {m.group(1)}, committed {m.group(2)}")
        lines = err.splitlines()
        check(lines.index(m.group(0)) == 1, "stats: the limit line follows the summary", f"{lines[:3]}")
    rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_STATS_LAYOUT": "mimalloc"}, "alloc", "8", "stats")
    check(re.search(r"^     limit: 1 GiB \(cgroup v2 memory.high\), headroom \S+ \S+ \(limit minus committed \S+ \S+\), "
                    r"\d+ purges? near the limit$", err, re.M) is not None,
          "stats: the limit row of mimalloc's layout", f"stderr {err[-800:]}")
    none = os.path.join(tmp, "stats-none")
    layout(none, "0::/svc\n", {})
    for env in ({"MIMALLOC_TEST_CGROUP_ROOT": none}, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_MEMORY_LIMIT": "0"}):
        rc, out, err = run(args, env, "alloc", "8", "stats")
        check("limit" not in err and "headroom" not in err and "peak RSS" in err, "stats: no limit, no line",
              f"{env}: stderr {err[:400]}")
    rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_VERBOSE": "1"}, "alloc", "1")
    check("mimalloc: memory limit: 1 GiB (cgroup v2 memory.high)\n" in err, "stats: the verbose start-up line",
          f"stderr {err[:1200]}")


def group_pressure(args, tmp):
    root = os.path.join(tmp, "pressure")
    layout(root, "0::/svc\n", {"svc/memory.max": str(64 * MiB) + "\n"})
    cmds = ("alloc", "60", "free", "sleep", "1500", "committed", "stats")
    base = {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_PURGE_DELAY": "10000"}
    rc, out, err = run(args, base, *cmds)
    m = re.search(r"^committed (\d+)$", out, re.M)
    committed = int(m.group(1)) if m else None
    # (below 80% nothing is forced, and once pressing, the purge stops below 70%: frees late in
    # the burst may wait for their delay; 8 MiB when the purger's first check follows the whole
    # burst, 24 MiB seen in a TSan Debug build whose check came in the middle of it)
    check(committed is not None and committed < 64 * MiB * 8 // 10, "pressure: freed memory goes back near the limit",
          f"committed {committed} 1.5 s after freeing 60 MiB under a 64 MiB limit (purge delay 10 s)")
    m = re.search(r"(\d+) purges? near the limit", err)
    check(m is not None and int(m.group(1)) >= 1, "pressure: counted", f"stderr {err[:600]}")
    rc, out, err = run(args, {**base, "MIMALLOC_MEMORY_LIMIT": "0"}, *cmds)
    m = re.search(r"^committed (\d+)$", out, re.M)
    check(m is not None and int(m.group(1)) >= 60 * MiB, "pressure: without the limit the memory waits",
          f"committed {m.group(1) if m else None} (the purge delay is 10 s)")
    # near the limit, frees purge at once: 4 MiB freed starts the purger, whose check finds
    # 56 MiB live (past 80% of 64); 600 ms later 12 MiB more is freed and committed read at once
    # (before and after: still past 70%, where the purger would stop pressing). Measured: 8 MiB
    # less committed (the last segment emptied is kept, with its slots, for the next pages);
    # without the limit 4 MiB more (a segment handed back whole to its arena, which waits)
    cmds = ("alloc", "60", "release", "4", "sleep", "600", "committed", "release", "12", "committed")
    # another thread frees 56 MiB of this thread's blocks, which then allocates other sizes for
    # 0.5 s: near the limit the emptied pages go back (this thread's sweeps of its pages, the
    # purge at once); without the limit they wait for the 10 s purge delay
    cmds2 = ("alloc", "56", "remote", "committed", "churn", "500", "committed")
    for env, limited in ((base, True), ({**base, "MIMALLOC_MEMORY_LIMIT": "0"}, False)):
        rc, out, err = run(args, env, *cmds2)
        vals = [int(v) for v in re.findall(r"^committed (\d+)$", out, re.M)]
        ok = len(vals) == 2 and vals[0] >= 52 * MiB and ((vals[1] < 16 * MiB) if limited else (vals[1] >= 48 * MiB))
        check(ok, "pressure: another thread's frees come back near the limit" if limited else
              "pressure: without the limit another thread's frees wait for the purge delay",
              f"committed {vals}: after the frees by another thread, after 0.5 s of other allocations")
    for env, pressing in ((base, True), ({**base, "MIMALLOC_MEMORY_LIMIT": "0"}, False)):
        rc, out, err = run(args, env, *cmds)
        vals = [int(v) for v in re.findall(r"^committed (\d+)$", out, re.M)]
        ok = len(vals) == 2 and (vals[0] - vals[1] >= 6 * MiB if pressing else vals[0] - vals[1] < 2 * MiB)
        check(ok, "pressure: a free near the limit purges at once" if pressing else
              "pressure: without the limit a free waits for the purge delay",
              f"committed {vals}: before and right after freeing 12 MiB of 56 (purge delay 10 s)")


def group_json(args, tmp):
    root = os.path.join(tmp, "json")
    layout(root, "0::/svc\n", {"svc/memory.max": "1073741824\n"})
    import json
    docs = {}
    for name, extra in (("limit", {}), ("none", {"MIMALLOC_MEMORY_LIMIT": "0"})):
        path = os.path.join(tmp, name + ".json")
        rc, out, err = run(args, {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_STATS_JSON": path, **extra}, "alloc", "4")
        try:
            docs[name] = json.load(open(path))
        except (OSError, ValueError) as e:
            check(False, "json: the exit document", f"{name}: {e}; stderr {err[-300:]}")
            return
    p = docs["limit"]["process"]
    check(p.get("memory_limit") == GiB and p.get("memory_limit_purges") == 0, "json: process.memory_limit",
          f"{p}")
    check(docs["none"]["process"].get("memory_limit") == 0, "json: no limit is 0", f"{docs['none']['process']}")
    # the live view's /metrics (tools/mimalloc-live) from such a document
    import importlib.machinery, importlib.util
    loader = importlib.machinery.SourceFileLoader("mimalloc_live", args.tool)
    tool = importlib.util.module_from_spec(importlib.util.spec_from_loader("mimalloc_live", loader))
    loader.exec_module(tool)
    for name, want in (("limit", True), ("none", False)):
        snap = {"process": docs[name], "alive": True, "os": {}, "threads": [], "process_age_ms": None}
        text = tool.metrics(snap)
        head = docs[name]["process"]["memory_limit"] - docs[name]["process"]["commit_current"]
        has = (f"mimalloc_memory_limit_bytes {GiB}\n" in text and f"mimalloc_memory_limit_headroom_bytes {head}\n" in text
               and "mimalloc_memory_limit_purges_total 0\n" in text)
        check(has if want else "memory_limit" not in text, f"json: /metrics ({name})", text[:600])


def group_hard(args, tmp):
    """MIMALLOC_MEMORY_LIMIT_HARD: past it an allocation returns NULL with ENOMEM (not a crash,
    not the kernel's SIGKILL), only after what can be given back was; freed memory is usable
    again; no limit, no refusal."""
    root = os.path.join(tmp, "hard")
    layout(root, "0::/svc\n", {"svc/memory.max": str(128 * MiB) + "\n"})
    base = {"MIMALLOC_TEST_CGROUP_ROOT": root, "MIMALLOC_MEMORY_LIMIT": "0"}
    fills = lambda out: [(int(a), int(b)) for a, b in re.findall(r"^fill (\d+) errno (\d+)$", out, re.M)]
    # 64 KiB blocks until NULL under 64 MiB: ENOMEM past 40 MiB and within the limit (plus the
    # allocator's own metadata, which the limit does not hold); 16 MiB freed is usable again;
    # a huge block over the headroom is refused, and allowed once the blocks are freed
    for hard in ("64MiB", "50%"):   # (50% of the cgroup's 128 MiB)
        rc, out, err = run(args, {**base, "MIMALLOC_MEMORY_LIMIT_HARD": hard, "MIMALLOC_SHOW_STATS": "1"},
                           "fill", "64", "committed", "release", "16", "fill", "64", "big", "32", "free", "big", "32")
        f = fills(out)
        m = re.search(r"^committed (\d+)$", out, re.M)
        committed = int(m.group(1)) if m else None
        check(rc == 0 and len(f) == 2, f"hard {hard}: the probe ran", f"rc {rc} out {out[-400:]} err {err[-400:]}")
        if len(f) != 2:
            continue
        check(f[0][1] == errno.ENOMEM and 40 * MiB <= f[0][0] * 64 * KiB <= 64 * MiB,
              f"hard {hard}: NULL with ENOMEM at the limit", f"fill {f[0]} (blocks of 64 KiB, errno)")
        check(committed is not None and committed <= 64 * MiB + 2 * MiB, f"hard {hard}: committed within the limit",
              f"committed {committed}")
        check(f[1][1] == errno.ENOMEM and f[1][0] >= 200, f"hard {hard}: freed memory is allocated again",
              f"second fill {f[1]} after freeing 16 MiB (256 blocks)")
        check(re.search(r"^big NULL errno %d$" % errno.ENOMEM, out, re.M) is not None and "big ok" in out,
              f"hard {hard}: a huge block past the limit is refused, then allowed", out[-300:])
        m = re.search(r"memory limit: (.*)$", err, re.M)
        check(m is not None and "hard limit 64 MiB" in m.group(1) and re.search(r"[1-9]\d* commits? refused", m.group(1)),
              f"hard {hard}: the statistics count the refusals", f"{m.group(1) if m else err[-600:]}")
    # memory freed a moment ago waits for a 10 s purge delay; under the limit it is given back
    # (or reused) before anything is refused: 48 MiB freed, then blocks of another size class
    slow = {**base, "MIMALLOC_MEMORY_LIMIT_HARD": "64MiB", "MIMALLOC_PURGE_DELAY": "10000"}
    rc, out, err = run(args, slow, "alloc", "48", "free", "fill", "300")
    f = fills(out)
    check(len(f) == 1 and f[0][0] * 300 * KiB >= 40 * MiB, "hard: memory waiting for its purge is given back first",
          f"fill {f} (blocks of 300 KiB after 48 MiB of 64 KiB blocks were freed; purge delay 10 s)")
    # without a hard limit the same allocation succeeds; with it, the probe sees NULL
    rc, out, err = run(args, base, "alloc", "80")
    check(rc == 0 and "alloc NULL" not in out, "hard: no limit, no refusal", f"rc {rc} {out[-200:]}")
    rc, out, err = run(args, {**base, "MIMALLOC_MEMORY_LIMIT_HARD": "64MiB"}, "alloc", "80")
    check(rc == 2 and "alloc NULL" in out, "hard: 80 MiB under a 64 MiB hard limit fails", f"rc {rc} {out[-200:]}")
    # four threads fill at once and hold what they got until all saw ENOMEM: with blocks of
    # 20 MiB at most three fit in 64 MiB, whatever the threads' timing (the compare-and-swap of
    # limit.c; a check before a plain add let two threads take the last room together). With
    # 256 KiB blocks the statistics' peak stays within the limit plus what may be in flight for
    # an instant (a 4 MiB arena block per thread, taken back when refused) and the metadata.
    # With 16 threads most start after the first ones filled the limit: their first malloc is
    # NULL with ENOMEM too (the probe once waited forever for such a thread)
    mt = re.compile(r"^mtfill (\d+) enomem (\d+) peak (\d+)$", re.M)
    for threads, size_kib, most in ((4, 20480, 3), (4, 256, None), (16, 256, None)):
        rc, out, err = run(args, {**base, "MIMALLOC_MEMORY_LIMIT_HARD": "64MiB"}, "mtfill", str(threads), str(size_kib), "fill", "64")
        m = mt.search(out)
        ok = m is not None and int(m.group(2)) == threads
        if ok and most is not None:
            ok = 1 <= int(m.group(1)) <= most
        if ok and most is None:
            ok = int(m.group(1)) * size_kib * KiB >= 32 * MiB and int(m.group(3)) <= 64 * MiB + threads * 4 * MiB + 2 * MiB
        check(ok, f"hard: {threads} threads filling at once with {size_kib} KiB blocks stay within it",
              f"{m.group(0) if m else out[-300:]} (64 MiB)")
        f = fills(out)
        check(len(f) == 1 and f[0][0] * 64 * KiB >= 40 * MiB, "hard: what the threads freed is allocated again", f"fill {f}")
    # "on": the soft limit is also the hard one
    rc, out, err = run(args, {**base, "MIMALLOC_MEMORY_LIMIT": "64MiB", "MIMALLOC_MEMORY_LIMIT_HARD": "on"}, "fill", "64")
    f = fills(out)
    check(len(f) == 1 and f[0][1] == errno.ENOMEM and f[0][0] * 64 * KiB <= 64 * MiB, "hard: on = the soft limit", f"fill {f}")


def group_drift(args, tmp):
    if args.drift is None:
        check(False, "drift: --drift PATH is needed")
        return
    limit = 260 * MiB
    peaks = {}
    for name, value in (("limit", "260MiB"), ("off", "0")):
        env = {"MIMALLOC_PURGE_DELAY": "10000", "MIMALLOC_MEMORY_LIMIT": value,
               "MIMALLOC_TEST_CGROUP_ROOT": os.path.join(tmp, "none")}   # (no cgroup limit of the machine's)
        r = subprocess.run(EMULATOR + [args.drift, "200", "4000"], env=clean_env(env), capture_output=True, text=True, timeout=300)
        m = re.search(r"peak_commit (\d+) peak_rss (\d+) elapsed_ms (\d+)", r.stdout)
        check(r.returncode == 0 and m is not None, f"drift ({name}): runs", f"exit {r.returncode}, stdout {r.stdout[:200]} stderr {r.stderr[:300]}")
        if m is None:
            return
        peaks[name] = int(m.group(2))
        print(f"drift, limit {value}: peak RSS {int(m.group(2)) / MiB:.0f} MiB, peak committed {int(m.group(1)) / MiB:.0f} MiB, {int(m.group(3))} ms")
    if args.drift_bound is not None:
        bound = int(limit * args.drift_bound)
        check(peaks["limit"] <= bound, "drift: under a 260 MiB limit the peak RSS stays within the bound",
              f"{peaks['limit'] / MiB:.0f} MiB, bound {bound / MiB:.0f} MiB ({args.drift_bound}x)")
        check(peaks["off"] > bound, "drift: without the limit it goes past the bound",
              f"{peaks['off'] / MiB:.0f} MiB, bound {bound / MiB:.0f} MiB")


GROUPS = {"drift": group_drift, "json": group_json, "detect": group_detect, "option": group_option, "api": group_api, "reread": group_reread,
          "stats": group_stats, "pressure": group_pressure, "hard": group_hard}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--tool", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "mimalloc-live"))
    ap.add_argument("--drift", help="limit-drift (the drift group)")
    ap.add_argument("--drift-bound", type=float, help="the drift group's bound on the peak RSS, times the limit")
    ap.add_argument("group", choices=sorted(GROUPS))
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)   # (what was printed survives a kill at the test's timeout)
    with tempfile.TemporaryDirectory(prefix="mi-limit-") as tmp:
        GROUPS[args.group](args, tmp)
    print(f"{'FAIL' if FAILS else 'PASS'} limit-{args.group}: {len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
