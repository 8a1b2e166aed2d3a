#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-hot-text.py LIB PROBE -- the shared library's hot text (CMakeLists.txt, MI_HOT_TEXT):
the functions listed in cmake/hot-text.txt lie together, and a small program (hot-text-probe.c)
runs nothing of the library beyond them, so that the kernel's fault-around keeps only their
pages resident.
Checked:
  - most of the list names functions of this build (a list gone stale groups nothing);
  - under callgrind (when valgrind is installed), every function of the library the probe ran,
    exit included, lies at or before the end of the listed ones;
  - the library's code pages resident at the probe's exit all lie within the first 64 KiB of
    the code segment (one fault-around window), which the link aligns to 64 KiB: one window
    of code for a small program (which also keeps them within 64 KiB past that end);
  - none of the pages of the read-only segment that holds the unwind tables (.eh_frame) is
    resident at the probe's exit: the library's read-only data was moved out of it, into
    .data.rel.ro (CMakeLists.txt), so that a program which throws nothing never touches it.
A failure names the functions: run tools/hot-text.py on a Release build to list them again."""
import importlib.util, os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "..", "..", "cmake", "hot-text.txt")
# the list's maker: its nm and callgrind readers (tools/hot-text.py)
_spec = importlib.util.spec_from_file_location("hot_text", os.path.join(HERE, "..", "..", "tools", "hot-text.py"))
hot_text = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hot_text)
WINDOW = 64 * 1024
# the C runtime's start-up code in the library (crtbeginS.o): before .text with our link script
# (cmake/hot-text.ld), right after the listed functions without it
CRT = {"deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux", "frame_dummy", "_init", "_fini"}
failures = 0

def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)

def name_at(syms, addr):
    best = None
    for a, size, n in syms:
        if a <= addr: best = (a, n)
        else: break
    return "%s+0x%x" % (best[1], addr - best[0]) if best else hex(addr)

def sections(lib):
    """{name: (file offset, size)} of the library's sections (readelf)"""
    out = subprocess.run(["readelf", "-SW", lib], check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) >= 6 and f[0].startswith("[") and f[1].startswith("."):
            result[f[1]] = (int(f[4], 16), int(f[5], 16))
    return result

def code_segment(lib):
    """(file offset, alignment) of the library's executable LOAD segment (readelf)"""
    out = subprocess.run(["readelf", "-lW", lib], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]: return int(f[1], 16), int(f[-1], 16)
    return None

def main():
    lib, probe = os.path.realpath(sys.argv[1]), sys.argv[2]
    listed = [l.strip() for l in open(LIST) if l.strip() and not l.startswith("#")]
    syms = hot_text.functions(lib)
    by_name = {n: (a, s) for a, s, n in syms}
    found = [n for n in listed if n in by_name and by_name[n][1] > 0]
    print("listed %d functions, %d in this build" % (len(listed), len(found)))
    if len(found) < len(listed) * 3 // 4:
        fail("only %d of the %d listed functions are in this build: the list is stale" % (len(found), len(listed)))
    if not found: return
    lo = min(by_name[n][0] for n in found)
    hi = max(by_name[n][0] + by_name[n][1] for n in found)
    text_end = max(a + s for a, s, n in syms)
    print("the listed functions: 0x%x..0x%x (%d KiB); the code ends at 0x%x" % (lo, hi, (hi - lo) // 1024, text_end))
    if hi - lo > 2 * WINDOW:
        fail("the listed functions span %d KiB: not grouped (is the objcopy step of CMakeLists.txt in the link?)" % ((hi - lo) // 1024))

    # the functions the probe runs (callgrind: every call, the exit included)
    if shutil.which("valgrind") and shutil.which("callgrind_annotate"):
        ran, beyond = 0, []
        for name in hot_text.functions_run(lib, probe):
            ran += 1
            addr = int(name, 16) if name.startswith("0x") else by_name.get(name, (None,))[0]
            if addr is None or addr < hi: continue
            where = name_at(syms, addr)
            if where.split("+")[0] not in CRT: beyond.append(where)
        print("under callgrind the probe ran %d functions of the library, %d beyond the listed ones" % (ran, len(beyond)))
        if ran == 0: fail("callgrind saw no function of the library run (its symbols unread?)")
        if beyond: fail("functions run beyond the listed ones: " + ", ".join(sorted(beyond)))
    else:
        print("(no valgrind: the functions run are not checked)")

    # the pages resident at the probe's exit
    res = subprocess.run([probe], check=True, capture_output=True, text=True).stdout
    line = [l for l in res.splitlines() if l.startswith("resident:")]
    if not line or "unknown" in line[0]:
        print("(no /proc/self/pagemap: the resident pages are not checked)")
    else:
        pages = [int(x, 16) for x in line[0].split()[1:]]
        print("resident code pages at exit: %d (%d KiB)" % (len(pages), len(pages) * 4))
        seg = code_segment(lib)
        if seg is not None and seg[1] >= WINDOW and seg[0] % WINDOW == 0:
            out = [p for p in pages if not seg[0] <= p < seg[0] + WINDOW]
            print("code segment at 0x%x, aligned to %d KiB: %d resident page(s) past its first window" % (seg[0], seg[1] // 1024, len(out)))
            if out:
                fail("resident code pages past the first 64 KiB of the code: " + ", ".join("0x%x (%s)" % (p, name_at(syms, p)) for p in out[:12]) +
                     " (what small programs run no longer fits one window: a function grew, or the list is stale)")
        else:
            fail("the code segment (%s) is not on a 64 KiB boundary: the link's -z max-page-size is missing (CMakeLists.txt)" %
                 ("not found" if seg is None else "file offset 0x%x, alignment 0x%x" % seg))
        if not pages: fail("no resident code page found (the mapping not found?)")
    # the read-only segment of the unwind tables: untouched
    eh = sections(lib).get(".eh_frame")
    ro = [l for l in res.splitlines() if l.startswith("readonly ")]
    if eh is None or not ro:
        fail("no .eh_frame section or no read-only mapping reported (readelf, /proc/self/maps)")
    else:
        seg = None
        for l in ro:
            head, _, pages = l.partition(":")
            lo, hi = (int(x, 16) for x in head.split()[1].split("-"))
            if lo <= eh[0] < hi: seg = (lo, hi, [int(x, 16) for x in pages.split()])
        if seg is None:
            fail(".eh_frame (file offset 0x%x) in no read-only mapping of the library" % eh[0])
        else:
            by_off = sorted(sections(lib).items(), key=lambda kv: kv[1][0])
            def section_at(off):
                names = [n for n, (o, sz) in by_off if o <= off + 4095 and off < o + max(sz, 1)]
                return "/".join(names) or "?"
            print("the unwind tables' segment 0x%x..0x%x: %d page(s) resident at exit" % (seg[0], seg[1], len(seg[2])))
            if seg[2]:
                fail("resident in the unwind tables' segment: " + ", ".join("0x%x (%s)" % (p, section_at(p)) for p in seg[2][:12]) +
                     " (read-only data left in .rodata? see the objcopy step of CMakeLists.txt)")
    print("%s hot-text: %d failure(s)" % ("FAIL" if failures else "PASS", failures))
    sys.exit(1 if failures else 0)

if __name__ == "__main__":
    main()
