#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Regenerate cmake/hot-text.txt: the library's functions that small programs run, which the
shared library's link places together at the start of its code (CMakeLists.txt, MI_HOT_TEXT;
docs/memory.md, "The library's own pages"). The kernel maps a file's pages 64 KiB around each
one touched (fault-around), so functions run by every program but scattered over the 216 KiB
of code made all of it resident in every process.

usage: tools/hot-text.py BUILD_DIR    (a Release build of the shared library, MI_HOT_TEXT on or
                                       off; needs valgrind and a C and C++ compiler)
Runs each program of PROGRAMS under callgrind with the library preloaded, takes every function
of the library that ran, and writes their names (an alias's target too: it names the section),
those run by more of the programs first, then in the order of their first program and cost."""
import os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELLO_C = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char** argv) {
  char* p = malloc(100); strcpy(p, "hello"); puts(p); p = realloc(p, 1000); free(p);
  void* q = calloc(10, 10); free(q);
  return argc > 5 ? (int)strlen(argv[0]) : 0;
}
'''
HELLO_CXX = r'''
#include <string>
#include <vector>
#include <map>
#include <cstdio>
int main() {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 2000; i++) m[std::to_string(i % 300)].push_back(i);
  std::printf("%zu\n", m.size());
  return 0;
}
'''
# (name, source or workload, arguments): small programs of the kinds the benchmarks run
PROGRAMS = [
    ("hello", ("c", HELLO_C), []),
    ("hello-cxx", ("cxx", HELLO_CXX), []),
    ("espresso", ("wl", "espresso.c"), []),
    ("cfrac", ("wl", "cfrac.c"), []),
    ("barnes", ("wl", "barnes.c"), []),
    ("larson", ("wl", "larson.c"), []),
    ("glibc-thread", ("wl", "glibc-thread.c"), []),
]

# run natively by every program but never under callgrind: the purger starts once the process
# is older than 10 ms (purger.c, mi_purger_too_young), and under callgrind every program is
# older than that at its first purge, which starts the purger on another path
ALWAYS = ["_mi_purger_start_wanted"]

def build(tmp, name, src):
    exe = os.path.join(tmp, name)
    kind, text = src
    if kind == "wl":
        cmd = ["cc", "-std=c11", "-O2", "-pthread", os.path.join(ROOT, "bench", "workloads", text), "-o", exe, "-ldl", "-lm"]
    else:
        path = os.path.join(tmp, name + (".c" if kind == "c" else ".cpp"))
        with open(path, "w") as f: f.write(text)
        cmd = (["cc", "-O2"] if kind == "c" else ["c++", "-O2"]) + [path, "-o", exe]
    subprocess.run(cmd, check=True)
    return exe

def functions(lib):
    """the library's functions, (address, size, name) by address (nm, local symbols too; size 0
    where nm gives none: the C runtime's crtbeginS.o). Also used by test/hot-text."""
    out = subprocess.run(["nm", "-S", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "TtWw": syms.append((int(p[0], 16), int(p[1], 16), p[3]))
        elif len(p) == 3 and p[1] in "TtWw": syms.append((int(p[0], 16), 0, p[2]))
    return sorted(syms)

def functions_run(lib, exe, args=(), env=None):
    """the names of the library's functions that `exe` ran under callgrind ("0x..." for code
    without a symbol). Also used by test/hot-text."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.cg")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe] + list(args), env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ann = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True, capture_output=True, text=True).stdout
    ran = []
    for line in ann.splitlines():
        m = re.match(r"\s*[\d,]+ .*:([A-Za-z0-9_.$]+)(?:'\d+)? \[(.*)\]$", line)
        if m and os.path.realpath(m.group(2)) == lib: ran.append(m.group(1))
    return ran

def main():
    if len(sys.argv) != 2: sys.exit(__doc__)
    lib = os.path.realpath(os.path.join(sys.argv[1], "libmimalloc.so"))
    by_addr, by_name = {}, {}
    for a, size, n in functions(lib):
        by_addr.setdefault(a, []).append(n)
        by_name[n] = a
    first, runs = {}, {}   # name -> (first program, rank in it); name -> programs that ran it
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, src, args) in enumerate(PROGRAMS):
            exe = build(tmp, name, src)
            ran = functions_run(lib, exe, args, dict(os.environ, LD_PRELOAD=lib))
            for j, fn in enumerate(ran):
                if fn not in by_name: continue
                for alias in by_addr[by_name[fn]]:   # (the section is named after the definition)
                    first.setdefault(alias, (i, j))
                    runs.setdefault(alias, set()).add(i)
            print(f"{name}: {len(ran)} functions ran, {len(first)} listed so far", file=sys.stderr)
    for fn in ALWAYS:
        if fn in by_name:
            first.setdefault(fn, (0, 0))
            runs[fn] = set(range(len(PROGRAMS)))
    # Those most programs run first: the link keeps this order (CMakeLists.txt), so a program
    # that runs only the common ones touches one fault-around window of code, and the rarer
    # ones (threads, the memory limit's cgroup files) come last.
    order = sorted(first, key=lambda fn: (-len(runs[fn]), first[fn], fn))
    dest = os.path.join(ROOT, "cmake", "hot-text.txt")
    with open(dest, "w") as f:
        f.write("# The functions small programs run, placed together at the start of the shared library's code\n")
        f.write("# (CMakeLists.txt, MI_HOT_TEXT). Generated by tools/hot-text.py from a Release build; regenerate it\n")
        f.write("# when test hot-text fails. One name per line, in order.\n")
        for fn in order: f.write(fn + "\n")
    print(f"wrote {len(order)} names to {dest}", file=sys.stderr)
    size = {n: s for a, s, n in functions(lib)}
    for k in range(len(PROGRAMS), 0, -1):
        total = sum(size.get(fn, 0) for fn in set(by_addr[by_name[f]][0] for f in order if len(runs[f]) >= k))
        print(f"run by {k} or more programs: {total} bytes", file=sys.stderr)

if __name__ == "__main__":
    main()
