#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs leaky (see leaky.c) with MIMALLOC_SHOW_LEAKS and checks that the report lists exactly
its leaks: the total, one line per size class with the exact block count, and in debug
builds the allocating function of every leaked block and of nothing else.
Usage: check-leaks.py <leaky> <padding (debug and tracking builds): 0|1> <callers recorded: 0|1>"""
import os, re, shlex, subprocess, sys

exe, debug, callers_recorded = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
failures = []

def check(cond, msg):
    if not cond:
        failures.append(msg)

# cross builds run the programs under an emulator (test/CMakeLists.txt: MI_TEST_EMULATOR)
EMULATOR = shlex.split(os.environ.get("MI_TEST_EMULATOR", ""))

def run(args, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MIMALLOC_")}
    env.update(env_extra)
    p = subprocess.run(EMULATOR + [exe] + args, env=env, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"{args} {env_extra}: exit status {p.returncode}")
    return p.stderr

# 1. the leaks
err = run([], {"MIMALLOC_SHOW_LEAKS": "1"})
lines = [l for l in err.splitlines() if l.startswith("mimalloc: ")]
check(all(l.startswith("mimalloc: ") for l in err.splitlines()), f"unprefixed output:\n{err}")
m = [re.match(r"mimalloc: leak report: (\d+) blocks? \((.*)\) still allocated at exit$", l) for l in lines]
m = [x for x in m if x]
check(len(m) == 1 and m[0].group(1) == "5", f"expected one summary line with 5 blocks:\n{err}")
classes = {}
for l in lines:
    c = re.match(r"mimalloc: leaks: (\d+) blocks? of size class (\d+), (.*)$", l)
    h = re.match(r"mimalloc: leaks: (\d+) huge blocks?, (.*)$", l)
    if c: classes[int(c.group(2))] = (int(c.group(1)), c.group(3))
    if h: classes["huge"] = (int(h.group(1)), h.group(2))
small = 64 if debug else 48          # 40 bytes (+24 bytes of padding in debug builds)
check(classes.get(small, (0,))[0] == 3, f"expected 3 blocks of class {small}: {classes}")
check(classes.get(327680, (0,))[0] == 1, f"expected 1 block of class 327680: {classes}")
check(classes.get("huge", (0,))[0] == 1, f"expected 1 huge block: {classes}")
check(len(classes) == 3, f"expected exactly 3 classes: {classes}")
# one block is "1 block", not "1 blocks"
check(any(l.startswith("mimalloc: leaks: 1 block of size class 327680, ") for l in lines), f"singular class line:\n{err}")
check(any(l.startswith("mimalloc: leaks: 1 huge block, ") for l in lines), f"singular huge line:\n{err}")
check(any(l.startswith("mimalloc: leaks: 3 blocks of size class ") for l in lines), f"plural class line:\n{err}")
if debug:
    check(classes.get(small, (0, ""))[1] == "120 bytes requested", f"small class bytes: {classes.get(small)}")
    check(classes.get("huge", (0, ""))[1] == "3.0 MiB requested", f"huge bytes: {classes.get('huge')}")
if debug and callers_recorded:
    callers = re.findall(r"mimalloc:   0x[0-9a-f]+: (\d+) bytes, allocated at 0x[0-9a-f]+ \((\w+)\+0x[0-9a-f]+ in leaky\)", err)
    got = sorted(callers)
    want = sorted([("40", "leak_small")] * 3 + [("300000", "leak_big"), ("3145728", "leak_huge")])
    check(got == want, f"callers: got {got}, want {want}\n{err}")
    blocks = [l for l in lines if l.startswith("mimalloc:   0x")]
    check(len(blocks) == 5, f"expected 5 block lines:\n{err}")

# 2. nothing leaked
err = run(["none"], {"MIMALLOC_SHOW_LEAKS": "yes"})
check("mimalloc: leak report: no blocks are still allocated" in err, f"no-leak run:\n{err}")
check("leaks:" not in err, f"no-leak run lists leaks:\n{err}")

# 3. off unless asked
for env in ({}, {"MIMALLOC_SHOW_LEAKS": "0"}, {"MIMALLOC_SHOW_LEAKS": "off"}):
    err = run([], env)
    check("leak" not in err, f"report printed with {env}:\n{err}")

if failures:
    print("FAIL leaks:\n" + "\n".join(failures))
    sys.exit(1)
print(f"PASS leaks ({'debug' if debug else 'release'} build)")
