#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Tracking-build checks (label track): runs track-bugs under the memory checker the library
was built for and checks, for every case, that the checker reported that bug at the line of
track-bugs.c marked "BUG <case>" (the first frame in track-bugs.c of the first report), and
that the clean case runs with no report at all. Every case also checks that the program's
malloc was ours ("ours 1"): a checker's own malloc would test nothing.

usage: run-track.py valgrind PROGRAM [--preload LIBRARY]   (PROGRAM linked with the library,
                                                             or not, with LIBRARY preloaded)
       run-track.py asan PROGRAM                             (PROGRAM built with -fsanitize=address
                                                             and the library's single object)
"""
import os
import re
import subprocess
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "track-bugs.c")

# per case: the words of the checker's report that name the bug
VALGRIND = {
    "overflow":    r"Invalid write of size 1",
    "underflow":   r"Invalid read of size 1",
    "first-underflow": r"Invalid read of size 1",
    "uaf":         r"Invalid write of size 1",
    "double-free": r"Invalid free\(\)",
    "uninit":      r"Conditional jump or move depends on uninitialised value",
    "leak":        r"1,000 bytes in 1 blocks are definitely lost",
}
ASAN = {
    "overflow":    r"ERROR: AddressSanitizer: heap-buffer-overflow",
    "underflow":   r"ERROR: AddressSanitizer: heap-buffer-overflow",
    "first-underflow": r"ERROR: AddressSanitizer: heap-buffer-overflow",
    "uaf":         r"ERROR: AddressSanitizer: heap-use-after-free",
    "double-free": r"ERROR: AddressSanitizer: heap-use-after-free",   # reported by our free (track.c)
}


def bug_lines():
    lines = {}
    with open(SRC) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"/\* BUG ([\w-]+) \*/", line)
            if m:
                lines[m.group(1)] = i
    return lines


def main():
    tool, prog = sys.argv[1], sys.argv[2]
    preload = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--preload" else None
    lines = bug_lines()
    expect = VALGRIND if tool == "valgrind" else ASAN
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    failures = []
    for case in ["clean"] + sorted(expect):
        if tool == "valgrind":
            cmd = ["valgrind", "--soname-synonyms=somalloc=nouserintercepts", "--leak-check=full",
                   "--error-exitcode=99", "--num-callers=12", prog, case]
            if preload:
                env["LD_PRELOAD"] = preload
        else:
            cmd = [prog, case]
            env["ASAN_OPTIONS"] = "detect_leaks=0"   # LeakSanitizer sees only ASan's own blocks
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        out, err = r.stdout, r.stderr
        what = f"{tool} {case}{' (preloaded)' if preload else ''}"
        if "ours 1" not in out:
            failures.append(f"{what}: malloc was not ours\n{out}{err}")
            continue
        if case == "clean":
            if r.returncode != 0 or ("ERROR SUMMARY: 0 errors" not in err if tool == "valgrind" else "ERROR" in err):
                failures.append(f"{what}: the clean run reported something (status {r.returncode})\n{err}")
            else:
                print(f"ok   {what}: no report")
            continue
        m = re.search(expect[case], err)
        if m is None:
            failures.append(f"{what}: no report matching '{expect[case]}' (status {r.returncode})\n{err}")
            continue
        # the first line of track-bugs.c after the report's first line: where the checker says it happened
        frame = re.search(r"track-bugs\.c:(\d+)", err[m.start():])
        want = lines[case]
        if frame is None or int(frame.group(1)) != want:
            failures.append(f"{what}: reported at line {frame.group(1) if frame else '?'}, the bug is on line {want}\n{err}")
            continue
        if r.returncode == 0:
            failures.append(f"{what}: the checker's report did not fail the run\n{err}")
            continue
        print(f"ok   {what}: '{m.group(0)}' at track-bugs.c:{want}")
    # MIMALLOC_ options are honoured (with ASan the allocator starts from ASan's .preinit_array
    # function, before libc set `environ`) and the start-up line names the build
    what = f"{tool} MIMALLOC_VERBOSE=1{' (preloaded)' if preload else ''}"
    venv = dict(env, MIMALLOC_VERBOSE="1")
    r = subprocess.run(cmd[:-1] + ["clean"], env=venv, capture_output=True, text=True, timeout=300)
    want = r"^mimalloc: allocator active: version .*; %s build, overrides malloc and new/delete\)$" % tool
    if re.search(want, r.stderr, re.M) is None:
        failures.append(f"{what}: no start-up line naming the {tool} build (the option not read?)\n{r.stderr[-2000:]}")
    else:
        print(f"ok   {what}: the start-up line names the {tool} build")
    for f in failures:
        print("FAIL " + f)
    if failures:
        sys.exit(1)
    print(f"PASS track {tool}{' preload' if preload else ''}: {len(expect) + 2} cases")


if __name__ == "__main__":
    main()
