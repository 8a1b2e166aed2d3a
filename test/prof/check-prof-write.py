#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs prof-write-test (see prof-write-test.c) and checks what the profiler's writers wrote:
the text list names site_sixty, site_thirty and site_ten in the order of their bytes, with the
exact figures, for in use and for allocated in total; the collapsed stacks are the three stacks
root first with their bytes; the big profile (4000 sites) has every line and the top 30; and
pprof reads the profile.proto files: the four sample types and the period, and with the test
binary it names the three sites with their 60/30/10 in-use and 300/150/70 allocated shares.
pprof is found in PATH or in $(go env GOPATH)/bin; without it those checks are skipped, or
failed when MI_TEST_REQUIRE_ALL=1 (docs/testing.md says how to install it).
Usage: check-prof-write.py <prof-write-test>"""
import os, re, shlex, shutil, subprocess, sys, tempfile

exe = sys.argv[1]
failures = []
MiB = 1024 * 1024

def check(cond, msg):
    if not cond:
        failures.append(msg)

# cross builds run the program under an emulator (test/CMakeLists.txt: MI_TEST_EMULATOR)
EMULATOR = shlex.split(os.environ.get("MI_TEST_EMULATOR", ""))
tmp = tempfile.mkdtemp(prefix="prof-write-")
env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MIMALLOC_")}
p = subprocess.run(EMULATOR + [exe, tmp], env=env, capture_output=True, text=True, timeout=60)
if p.returncode != 0:
    print(p.stdout + p.stderr)
    print(f"FAIL: prof-write-test exited with {p.returncode}")
    sys.exit(1)

def read(name):
    with open(os.path.join(tmp, name)) as f:
        return f.read()

SITES = {"site_sixty": (60, 70), "site_thirty": (30, 300), "site_ten": (10, 150)}   # MiB in use, allocated

def sections(text):
    """{title: [(bytes, percent, objects, [frame names])]} of a text list"""
    out, cur, entry = {}, None, None
    for line in text.splitlines():
        t = re.match(r"^(.*): the top (\d+) of (\d+) sites by bytes$", line)
        e = re.match(r"^(\d+) bytes \(([\d.]+ \w+), ([\d.]+)%\) in (\d+) objects$", line)
        f = re.match(r"^    #(\d+) (\S+?)(\+0x[0-9a-f]+)? \((.*)\)$", line)
        if t:
            cur = out.setdefault(t.group(1), [])
        elif e and cur is not None:
            entry = (int(e.group(1)), e.group(3), int(e.group(4)), [])
            cur.append(entry)
        elif f and entry is not None:
            entry[3].append(f.group(2))
    return out

# 1. the text list
text = read("small.txt")
lines = text.splitlines()
check(lines[0] == "mimalloc heap profile: sampling rate 524288 bytes, 1234 samples, 7 dropped, 3 sites", f"header: {lines[0]!r}")
check("in use: 104857600 bytes (100.0 MiB) in 100 objects" in lines, f"in-use totals:\n{text}")
check("allocated in total: 545259520 bytes (520.0 MiB) in 1040 objects" in lines, f"allocated totals:\n{text}")
check("at exit" not in text, f"'at exit' in a profile not written at exit:\n{text}")
sec = sections(text)
check(list(sec) == ["in use", "allocated in total"], f"sections: {list(sec)}\n{text}")
inuse = [("site_sixty", "60.0", 60), ("site_thirty", "30.0", 30), ("site_ten", "10.0", 10)]
alloc = [("site_thirty", "57.7", 600), ("site_ten", "28.8", 300), ("site_sixty", "13.5", 140)]
for title, want, col in (("in use", inuse, 0), ("allocated in total", alloc, 1)):
    got = sec.get(title, [])
    check(len(got) == 3, f"{title}: {len(got)} sites, want 3\n{text}")
    for (name, pct, objects), entry in zip(want, got):
        check(entry[0] == SITES[name][col] * MiB, f"{title}, {name}: {entry[0]} bytes, want {SITES[name][col] * MiB}")
        check(entry[1] == pct and entry[2] == objects, f"{title}, {name}: {entry[1]}% of {entry[2]} objects, want {pct}% of {objects}")
        check(entry[3] == [name, "run_sites", "main"], f"{title}, {name}: frames {entry[3]}")
text = read("small-exit.txt")
check(text.startswith("mimalloc heap profile at exit: "), f"at exit: header:\n{text}")
check("(at exit: blocks never freed)" in text, f"at exit: totals line:\n{text}")
check(list(sections(text)) == ["still live at exit (leaks)", "allocated in total"], f"at exit: sections:\n{text}")

# 2. collapsed stacks
for name, col in (("small-inuse.folded", 0), ("small-alloc.folded", 1)):
    got = sorted(read(name).splitlines())
    want = sorted(f"main;run_sites;{s} {v[col] * MiB}" for s, v in SITES.items())
    check(got == want, f"{name}: got {got}, want {want}")

# 3. the big profile: 4000 sites, depth 1 + i % 64, in use 1000 + i bytes unless i % 3 == 0
folded = read("big-inuse.folded").splitlines()
want = sorted(1000 + i for i in range(4000) if i % 3 != 0)
got = sorted(int(l.rsplit(" ", 1)[1]) for l in folded)
check(got == want, f"big-inuse.folded: {len(folded)} lines, want {len(want)}, values differ: {got != want}")
depths = sorted(len(l.rsplit(" ", 1)[0].split(";")) for l in folded)
check(depths == sorted(1 + i % 64 for i in range(4000) if i % 3 != 0), "big-inuse.folded: frame counts differ")
words = set(w for l in folded for w in l.rsplit(" ", 1)[0].split(";"))
for name in ("site_sixty", "site_thirty", "site_ten", "_mi_prof_write_text"):
    check(name in words, f"big-inuse.folded: no frame named {name}")
check(any(re.fullmatch(r"0x1[0-9a-f]{4}", w) for w in words), "big-inuse.folded: the frames in no mapping are not shown as addresses")
text = read("big.txt")
sec = sections(text)
check([len(v) for v in sec.values()] == [30, 30], f"big.txt: {[len(v) for v in sec.values()]} sites shown, want 30 and 30")
check("in use: the top 30 of 2666 sites by bytes" in text and "allocated in total: the top 30 of 4000 sites by bytes" in text,
      "big.txt: section titles")
check([e[0] for e in sec.get("in use", [])] == sorted((1000 + i for i in range(4000) if i % 3 != 0), reverse=True)[:30],
      "big.txt: the in-use top 30")
check([e[0] for e in sec.get("allocated in total", [])] == list(range(5999, 5969, -1)), "big.txt: the allocated top 30")
check(all(len(e[3]) <= 16 for v in sec.values() for e in v) and "more frames" in text, "big.txt: frames not limited to 16")

# 4. pprof
def find_pprof():
    p = shutil.which("pprof")
    if p:
        return p
    for go in (shutil.which("go"), "/usr/local/go/bin/go"):
        if go and os.access(go, os.X_OK):
            r = subprocess.run([go, "env", "GOPATH"], capture_output=True, text=True)
            cand = os.path.join(r.stdout.strip(), "bin", "pprof")
            if r.returncode == 0 and os.access(cand, os.X_OK):
                return cand
    return None

def top(pb, index):
    """[(function, flat%)] of `pprof -top` for one sample index"""
    r = subprocess.run([pprof, "-top", f"-sample_index={index}", exe, pb], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"pprof -top -sample_index={index}: exit {r.returncode}\n{r.stderr}")
    rows = re.findall(r"^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(\S+)\s*$", r.stdout, re.M)
    return [(name, float(pct)) for pct, name in rows], r.stdout

pprof = find_pprof()
skipped = ""
if EMULATOR:
    skipped = "pprof checks skipped: the program runs under an emulator (pprof would read a foreign binary)"
elif pprof is None:
    if os.environ.get("MI_TEST_REQUIRE_ALL", "0") == "1":
        failures.append("pprof not found in PATH or $(go env GOPATH)/bin (see docs/testing.md: "
                        "go install github.com/google/pprof@...) and MI_TEST_REQUIRE_ALL=1")
    skipped = "pprof checks skipped: pprof not installed (docs/testing.md: go install github.com/google/pprof@...)"
else:
    pb = os.path.join(tmp, "small.pb")
    r = subprocess.run([pprof, "-raw", pb], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"pprof -raw small.pb: exit {r.returncode}\n{r.stderr}")
    out = r.stdout
    check("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]" in out, f"pprof -raw: sample types\n{out}")
    check("PeriodType: space bytes" in out and "Period: 524288" in out, f"pprof -raw: period\n{out}")
    check("1234 samples, 7 samples dropped" in out, f"pprof -raw: comment\n{out}")
    samples = sorted(tuple(int(x) for x in m) for m in re.findall(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+):", out, re.M))
    want = sorted((2 * a, a * MiB, u, u * MiB) for u, a in SITES.values())
    check(samples == want, f"pprof -raw: samples {samples}, want {want}")
    maps = re.findall(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+)", out, re.M)
    check(maps[:1] == [os.path.realpath(exe)], f"pprof -raw: mapping 1 is {maps[:1]}, want the program")
    for index, want in (("inuse_space", [("site_sixty", 60.0), ("site_thirty", 30.0), ("site_ten", 10.0)]),
                        ("alloc_space", [("site_thirty", 57.69), ("site_ten", 28.85), ("site_sixty", 13.46)]),
                        ("alloc_objects", [("site_thirty", 57.69), ("site_ten", 28.85), ("site_sixty", 13.46)])):
        rows, out = top(pb, index)
        got = [(n, p) for n, p in rows if n.startswith("site_")]
        check([n for n, _ in got] == [n for n, _ in want] and all(abs(p - q) < 0.02 for (_, p), (_, q) in zip(got, want)),
              f"pprof -top -sample_index={index}: {got}, want {want}\n{out}")
    r = subprocess.run([pprof, "-raw", os.path.join(tmp, "big.pb")], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"pprof -raw big.pb: exit {r.returncode}\n{r.stderr}")
    n = len(re.findall(r"^\s+\d+\s+\d+\s+\d+\s+\d+:", r.stdout, re.M))
    check(n == 4000, f"pprof -raw big.pb: {n} samples, want 4000")

if failures:
    for f in failures:
        print("FAIL:", f)
    print(f"(files in {tmp})")
    sys.exit(1)
shutil.rmtree(tmp)
print("prof-write: text" + (" and folded" if skipped else ", folded and pprof") + " checks passed" + (f"; {skipped}" if skipped else ""))
