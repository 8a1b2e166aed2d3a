#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Debug-build checks (label debug), driven from ctest: runs the deliberately wrong programs of
test/debug against the debug library and checks, for every case, in both modes:

  callback  (prog CASE callback: an mi_register_error handler records the codes)
            stderr is exactly the expected mimalloc lines (each a full regex match, in order),
            the handler got exactly the expected code sequence ("codes ..." on stdout), the
            program reached its end with every in-program check holding ("ok"), status 0;
  default   (prog CASE default: no handler)
            with an EFAULT among the expected codes: stderr is exactly the lines up to the first
            EFAULT one, the program was killed by SIGABRT right after its last progress marker
            ("step <marker>") and never reached "ok"; otherwise the same as callback mode,
            without a codes line.

Placeholders %(name)s in the expected lines stand for values the program printed as
"var NAME VALUE" (addresses, mostly), regex-escaped. The environment is cleaned (only PATH and
sanitizer settings are kept; no MIMALLOC_* variable).

usage: run-debug.py --prog dbg-overflow=PATH ... GROUP|GROUP:CASE ...
       run-debug.py --list
Groups: overflow double-free invalid-free write-after-free fill errors sanity heap extra
(extra: checks of behaviour the library gained after they were written: aligned in-place
realloc and small aligned sizes, double frees seen from another thread, damaged links in
thread-free lists, calloc overflow, the code of a bad alignment).
"""
import argparse
import os
import re
import signal
import subprocess
import shlex
import sys

E = r"mimalloc: error: "
ET = r"mimalloc: error: thread 0x[0-9a-f]+: "   # errors reported on a thread other than main
W = r"mimalloc: warning: "

EAGAIN, EFAULT, EINVAL, ENOMEM, EOVERFLOW = "EAGAIN", "EFAULT", "EINVAL", "ENOMEM", "EOVERFLOW"


class Case:
    def __init__(self, group, prog, name, msgs, abort_step=None, pending=False, note=""):
        self.group = group            # ctest group
        self.prog = prog
        self.name = name
        self.msgs = msgs              # [(code or None, regex template)]
        self.abort_step = abort_step  # last "step" line before the EFAULT abort (default mode)
        self.pending = pending
        self.note = note

    @property
    def id(self):
        return "%s:%s" % (self.prog.replace("dbg-", ""), self.name)


CASES = []


# the line an EFAULT abort ends with (src/options.c, _mi_error_message)
ABORTING = (r"mimalloc: (thread 0x[0-9a-f]+: )?"
            + re.escape("aborting: the heap is corrupted (the error above); "
                        "a handler registered with mi_register_error would decide instead"))


def case(group, prog, name, msgs, **kw):
    CASES.append(Case(group, prog, name, msgs, **kw))


def pending(prog, name, msgs, **kw):
    CASES.append(Case("extra", prog, name, msgs, pending=False, **kw))


# ---------------------------------------------------------------------------------------------
# 1. buffer overflows: reported by mi_free with the requested size and exact byte counts
def ovf(size, count, last, prefix=E):
    return [(EFAULT, prefix + r"buffer overflow in heap block %%(p)s of size %d: %d bytes overwritten, "
             r"up to %d bytes past the end" % (size, count, last))]


P = "dbg-overflow"
case("overflow", P, "one", ovf(100, 1, 1), abort_step="free")
case("overflow", P, "seven", ovf(96, 7, 7), abort_step="free")
case("overflow", P, "seven-canary", ovf(100, 7, 7), abort_step="free")
case("overflow", P, "gap", ovf(100, 1, 3), abort_step="free")
case("overflow", P, "canary", ovf(104, 4, 4), abort_step="free")
case("overflow", P, "terminator", ovf(104, 1, 1), abort_step="free")


# a damaged padding: its size field is not trusted, only the block's size is reported
def ovf_padding(bsize, usable, prefix=E):
    return [(EFAULT, prefix + r"buffer overflow in heap block %%(p)s: the padding at the end of its block \(size %d\) "
             r"was overwritten, so the requested size is unknown \(at most %d bytes\)" % (bsize, usable))]


def udf(count, prefix=E):
    return [(EFAULT, prefix + r"buffer underflow before heap block %%(p)s: the %d bytes before its start were "
             r"overwritten \(or past the end of the block before it\)" % count)]


case("overflow", P, "padding", ovf_padding(32, 8), abort_step="free")
case("overflow", P, "delta", ovf_padding(128, 104), abort_step="free")
case("overflow", P, "underflow", udf(1), abort_step="free")
case("overflow", P, "underflow4", udf(4), abort_step="free")
case("overflow", P, "underflow-first", udf(1), abort_step="free")
case("overflow", P, "underflow-remote", udf(1, ET), abort_step="free")
case("overflow", P, "canary-zero", [])
case("overflow", P, "aligned", ovf(100, 1, 1), abort_step="free")
case("overflow", P, "aligned-big", ovf(200, 3, 3), abort_step="free")
case("overflow", P, "large", ovf(200000, 1, 1), abort_step="free")
case("overflow", P, "huge", ovf(41943043, 1, 6), abort_step="free")
case("overflow", P, "realloc", ovf(60, 2, 2), abort_step="free")
case("overflow", P, "remote", ovf(100, 1, 1, ET), abort_step="free")
case("overflow", P, "exact", [])
pending(P, "realloc-aligned", ovf(60, 2, 2), abort_step="free",
        note="mi_realloc_aligned shrinking in place keeps the old requested size (no _mi_debug_set_size)")
pending(P, "aligned-small", ovf(10, 1, 1), abort_step="free",
        note="mi_malloc_aligned(10, 16) gets 16 requested bytes: p[10] is not checked")

# ---------------------------------------------------------------------------------------------
# 2. double frees: one EAGAIN per extra free, ignored; the size is the one the program asked for


def dbl(size, n=1, prefix=E):
    return [(EAGAIN, prefix + r"double free detected of block %%(p)s with size %d \(ignored\)" % size)] * n


P = "dbg-double-free"
case("double-free", P, "twice", dbl(64))
case("double-free", P, "thrice", dbl(64, 2))
case("double-free", P, "buried", dbl(64))
case("double-free", P, "reused", dbl(64))
case("double-free", P, "small", dbl(8))
case("double-free", P, "zero", dbl(0))
case("double-free", P, "large", dbl(100000))
case("double-free", P, "remote-twice", dbl(64, 1, ET))
case("double-free", P, "remote-then-local", dbl(64))
case("double-free", P, "abandoned", dbl(64))
# (the first free adopts the ended thread's page, abandoned_reclaim_on_free, and frees locally:
# the page stays with the thread, so the second is found as a double free)
case("double-free", P, "abandoned-released", dbl(64))
pending(P, "local-then-remote", dbl(64, 1, ET),
        note="a block freed by its owner and then by another thread is pushed a second time")
pending(P, "remote-full", dbl(64, 1, ET),
        note="the first remote free into a full page goes to the heap's delayed list, not searched")

# ---------------------------------------------------------------------------------------------
# 3. invalid frees: EINVAL, ignored


def inv(what):
    return [(EINVAL, E + r"mi_free: invalid pointer %%(q)s \(%s; ignored\)" % what)]


P = "dbg-invalid-free"
NOT_OURS = "not allocated by this allocator"
INSIDE = r"points inside block %(p)s of size 80, not at its start"
case("invalid-free", P, "stack", inv(NOT_OURS))
case("invalid-free", P, "global", inv(NOT_OURS))
case("invalid-free", P, "literal", inv(NOT_OURS))
case("invalid-free", P, "mmap", inv(NOT_OURS))
case("invalid-free", P, "segment", inv(NOT_OURS))
case("invalid-free", P, "interior1", inv(INSIDE))
case("invalid-free", P, "interior16", inv(INSIDE))
case("invalid-free", P, "interior-end", inv(INSIDE))
case("invalid-free", P, "never", inv("never allocated"))
case("invalid-free", P, "meta", inv("inside the metadata of a page of block size 80"))

# ---------------------------------------------------------------------------------------------
# 4. writes after free: found when the block is handed out again (EFAULT)
P = "dbg-write-after-free"


def waf_data(offset):
    return [(EFAULT, E + r"block %%(p)s \(size 64\) was written after it was freed \(at offset %d\)" % offset)]


def waf_link(link):
    return [(EFAULT, E + r"corrupted free list: free block %%(p)s \(size 64\) links to %s, not a block of its page "
             r"\(written after it was freed\?\)" % link)]


case("write-after-free", P, "data", waf_data(20), abort_step="realloc")
case("write-after-free", P, "data-end", waf_data(63), abort_step="realloc")
case("write-after-free", P, "link", waf_link("0x4141414141414141"), abort_step="realloc")
case("write-after-free", P, "link-byte", waf_link("%(link)s"), abort_step="realloc")
case("write-after-free", P, "remote-data", waf_data(20), abort_step="realloc")
case("write-after-free", P, "remote-data-end", waf_data(63), abort_step="realloc")
WAF_REMOTE_LINK = (r"corrupted (free list: free block %(p)s \(size 64\) links to %(link)s, not a block of its page "
                   r"\(written after it was freed\?\)|thread-free list in page 0x[0-9a-f]+ \(block size 64\))")
pending(P, "remote-link", [(EFAULT, E + WAF_REMOTE_LINK)], abort_step="realloc",
        note="collecting the thread-free list follows the damaged link (SIGSEGV)")
pending(P, "remote-link-byte", [(EFAULT, E + WAF_REMOTE_LINK)], abort_step="realloc",
        note="collecting the thread-free list follows the damaged link (SIGSEGV)")

# ---------------------------------------------------------------------------------------------
# 5. fill patterns (checked inside the program; no message)
case("fill", "dbg-fill", "all", [])

# ---------------------------------------------------------------------------------------------
# 6. error codes
P = "dbg-errors"
TOO_LARGE = [(EOVERFLOW, E + r"allocation request is too large \(18446744073709551615 bytes\)"),
             (ENOMEM, E + r"unable to allocate memory \(18446744073709551615 bytes\)")]
case("errors", P, "too-large", TOO_LARGE)
case("errors", P, "too-large-realloc", TOO_LARGE)
case("errors", P, "too-large-aligned",
     [(EOVERFLOW, E + r"aligned allocation request is too large \(size 18446744073709551615, alignment 64\)")])
case("errors", P, "enomem",
     [(None, W + r"unable to allocate aligned OS memory \(size 0x[0-9a-f]+ bytes, alignment 0x[0-9a-f]+\)")] * 2 +
     [(ENOMEM, E + r"unable to allocate memory \(1073741824 bytes\)")])
case("errors", P, "realloc-foreign",
     [(EINVAL, E + r"mi_realloc: invalid pointer %(q)s \(not allocated by this allocator\)")])
pending(P, "calloc-overflow", [(EOVERFLOW, E + r".*(too large|overflow).*")],
        note="as in mimalloc: count*size overflow is reported (EOVERFLOW) in debug builds")
pending(P, "bad-alignment",
        [(EINVAL, E + r"aligned allocation requires a power-of-two alignment \(size 100, alignment 48\)")],
        note="a bad alignment is an invalid argument: EINVAL (mimalloc says EOVERFLOW; README)")

# ---------------------------------------------------------------------------------------------
# 7. correct use: silence
case("sanity", "dbg-sanity", "all", [])

# ---------------------------------------------------------------------------------------------
# 8. heaps
P = "dbg-heap"
case("heap", P, "visit", [])


def foreign(call):
    return (EINVAL, ET + r"%s: heap %%(h)s belongs to another thread \(heaps are thread-local; ignored\)" % call)


case("heap", P, "wrong-thread",
     [foreign(c) for c in ["allocation"] * 4 + ["mi_heap_malloc_small"] + ["reallocation"] * 2 +
      ["aligned allocation"] * 2 + ["allocation", "mi_heap_collect", "mi_heap_visit_blocks",
                                    "mi_heap_set_default", "mi_heap_delete", "mi_heap_destroy"]])

GROUPS = ["overflow", "double-free", "invalid-free", "write-after-free", "fill", "errors", "sanity", "heap", "extra"]


# ---------------------------------------------------------------------------------------------
def clean_env():
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for k, v in os.environ.items():
        if k.endswith("SAN_OPTIONS") or k == "LD_LIBRARY_PATH":
            env[k] = v
    return env


def parse_stdout(out):
    vars_, steps, codes, fails, ok = {}, [], None, [], False
    for line in out.splitlines():
        if line.startswith("var "):
            parts = line.split(" ", 2)
            if len(parts) == 3:
                vars_[parts[1]] = parts[2]
        elif line.startswith("step "):
            steps.append(line[5:])
        elif line.startswith("codes"):
            codes = line.split()[1:]
        elif line.startswith("FAIL") or "failed checks" in line:
            fails.append(line)
        elif line == "ok":
            ok = True
    return vars_, steps, codes, fails, ok


def expand(template, vars_):
    def sub(m):
        name = m.group(1)
        if name not in vars_:
            raise KeyError(name)
        return re.escape(vars_[name])
    return re.sub(r"%\((\w+)\)s", sub, template)


# cross builds run the programs under an emulator (test/CMakeLists.txt: MI_TEST_EMULATOR)
EMULATOR = shlex.split(os.environ.get("MI_TEST_EMULATOR", ""))


def run_mode(c, path, mode, timeout):
    """Returns a list of problems (empty: passed)."""
    try:
        r = subprocess.run(EMULATOR + [path, c.name, mode], env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return ["timed out after %d s" % timeout]
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    vars_, steps, codes, fails, ok = parse_stdout(out)
    problems = []
    msgs = list(c.msgs)
    aborts = False
    if mode == "default":
        for i, (code, _) in enumerate(msgs):
            if code == EFAULT:
                msgs = msgs[:i + 1]
                aborts = True
                break
    # stderr: exactly the expected lines
    lines = err.splitlines()
    try:
        expected = [expand(t, vars_) for _, t in msgs]
        if aborts:   # the abort says why, after the error
            expected.append(ABORTING)
    except KeyError as e:
        expected = None
        problems.append("the program printed no 'var %s' (needed by the expected messages)" % e.args[0])
    if expected is not None:
        if len(lines) != len(expected):
            problems.append("%d stderr lines, expected %d" % (len(lines), len(expected)))
        for i, rx in enumerate(expected):
            got = lines[i] if i < len(lines) else None
            if got is None or re.fullmatch(rx, got) is None:
                problems.append("stderr line %d: %r does not match %r" % (i + 1, got, rx))
    if fails:
        problems.extend("program: " + f for f in fails)
    if aborts:
        if r.returncode != -signal.SIGABRT:
            problems.append("exit status %s, expected SIGABRT (EFAULT aborts without a handler)" % describe(r.returncode))
        if ok:
            problems.append("the program went on after the EFAULT (printed 'ok')")
        if c.abort_step is not None and (not steps or steps[-1] != c.abort_step):
            problems.append("aborted after step %r, expected after %r" % (steps[-1] if steps else None, c.abort_step))
    else:
        if r.returncode != 0:
            problems.append("exit status %s, expected 0" % describe(r.returncode))
        if not ok:
            problems.append("the program did not reach its end ('ok')")
        want_codes = [code for code, _ in msgs if code is not None]
        if mode == "callback":
            if codes is None:
                problems.append("no codes line")
            elif codes != want_codes:
                problems.append("error codes %s, expected %s" % (" ".join(codes) or "(none)", " ".join(want_codes) or "(none)"))
        elif codes is not None:
            problems.append("codes line in default mode")
    if problems:
        problems.append("stdout:\n    " + "\n    ".join(out.splitlines()[-15:]))
        problems.append("stderr:\n    " + "\n    ".join(lines[-15:]))
    return problems


def describe(rc):
    if rc < 0:
        try:
            return "signal %s" % signal.Signals(-rc).name
        except ValueError:
            return "signal %d" % -rc
    return str(rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prog", action="append", default=[], help="NAME=PATH of a test program")
    ap.add_argument("--timeout", type=int, default=30, help="seconds per program run")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("what", nargs="*")
    a = ap.parse_args()
    if a.list:
        for c in CASES:
            print("%-14s %-32s %s" % (c.group, c.id, c.note))
        return 0
    progs = dict(p.split("=", 1) for p in a.prog)
    selected = []
    for w in a.what:
        if ":" in w:
            sel = [c for c in CASES if c.id == w]
        else:
            if w not in GROUPS:
                print("unknown group %r (groups: %s)" % (w, " ".join(GROUPS)))
                return 2
            sel = [c for c in CASES if c.group == w]
        if not sel:
            print("nothing selected by %r" % w)
            return 2
        selected.extend(sel)
    if not selected:
        ap.print_usage()
        return 2
    failed = 0
    for c in selected:
        path = progs.get(c.prog)
        if path is None:
            print("FAIL %s: no --prog %s=PATH" % (c.id, c.prog))
            failed += 1
            continue
        for mode in ("callback", "default"):
            problems = run_mode(c, path, mode, a.timeout)
            label = "%s (%s)" % (c.id, mode)
            if problems:
                failed += 1
                print("FAIL %s%s" % (label, (" -- pending: " + c.note) if c.pending and c.note else ""))
                for p in problems:
                    print("  " + p)
            else:
                print("PASS %s" % label)
    print("%s: %d of %d runs failed" % ("FAIL" if failed else "PASS", failed, 2 * len(selected)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
