# SPDX-License-Identifier: MIT
"""Which allocator really served a run. The programs' RESULT line names the object that defines
malloc (`alloc_from=`), and bench/origin.c, preloaded after the allocator, writes one line per
process "<pid> <exe> <object>" to $BENCH_ORIGIN_FILE. A run whose object is not the expected
one never makes it into a table under the allocator's name."""
import os

from benchlib.common import BENCH_DIR, note, run


def ok(expect, got):
    """True when `got` (a path, or a name) is the expected object; expect "libc" for glibc."""
    if expect == "libc":
        base = os.path.basename(os.path.realpath(got)) if got.startswith("/") else got
        return base.startswith("libc.so") or base.startswith("libc-")
    return got.startswith("/") and os.path.realpath(got) == os.path.realpath(expect)


def build_so(compiler, tmp):
    """(origin.so in tmp, the command as quoted in reports)."""
    so = os.path.join(tmp, "origin.so")
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC"]
    cmd = [compiler] + flags + [os.path.join(BENCH_DIR, "origin.c"), "-o", so, "-ldl"]
    r = run(cmd)
    if r.returncode != 0:
        raise RuntimeError("cannot build origin.so:\n$ %s\n%s" % (" ".join(cmd), r.stderr))
    if r.stderr.strip():
        note("warnings building origin.so:\n" + r.stderr)
    return so, " ".join([compiler] + flags + ["bench/origin.c", "-o", "origin.so", "-ldl"])


def file_problems(expect, origin_file):
    """(problems, number of processes) of one run's origin file: [] when every process used
    the expected object."""
    try:
        with open(origin_file) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    except OSError:
        lines = []
    if not lines:
        return ["no process reported its allocator (origin.so not loaded?)"], 0
    bad = []
    for line in lines:
        parts = line.split(" ", 2)
        got = parts[2] if len(parts) == 3 else "?"
        if not ok(expect, got):
            bad.append("pid %s (%s): malloc from %s" % (parts[0], parts[1] if len(parts) > 1
                                                         else "?", got))
    return bad, len(lines)


def check_result(label, expect, result):
    """The object a RESULT line names (alloc_from=); raises RuntimeError when it is not the
    expected one, so that a run can never be counted under the wrong allocator."""
    got = result.get("alloc_from", "?")
    if not ok(expect, got):
        raise RuntimeError("%s: malloc came from %s, expected %s (the allocator was not active)"
                           % (label, got, expect))
    return got
