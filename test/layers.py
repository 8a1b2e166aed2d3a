#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the library's code calls down its layers (docs/design.md, "Layers").

Every function of src/ belongs to the file that defines it, and every file to a layer (LAYERS
below). A reference from a function to a function of a higher layer (a call, or its address
taken) is an up-call; each one must be a named hook in HOOKS, with the reason it exists. Inline
helpers of src/internal/*.h belong to no layer: a reference to one counts as the references it
makes itself. Cross-cutting files (options, statistics, checks of checked builds, tracking) may be
used from any layer, and use any layer.

docs/design.md's list of the hooks is generated from HOOKS (between its "hooks:" markers), so the
two cannot disagree: the check fails when the list differs, and --write-doc rewrites it.

usage: test/layers.py [--write-doc] [SRC_DIR]   (default: the src/ beside this script's directory)
Exit status 0 when every up-call is a listed hook, every listed hook is still used and the design
document lists exactly HOOKS; 1 otherwise, with one line per offence."""
import os
import re
import sys

# Layer of each file, bottom up (docs/design.md, "Layers"). None: cross-cutting.
LAYERS = {
    # The schedule fuzzer (test builds) stands for the OS's scheduler: prim, calling only prim.
    "prim/unix.c": 1, "prim/windows.c": 1, "prim/failinject.c": 1, "prim/sched-fuzz.c": 1,
    "os.c": 2, "bitmap.c": 2, "random.c": 2,
    "arena.c": 3, "arena-purge.c": 3, "segment-map.c": 3,
    "segment.c": 4, "abandon.c": 4, "page.c": 4, "purger.c": 4,
    "heap.c": 5, "init.c": 5, "sheap.c": 5,
    "alloc.c": 6, "free.c": 6, "aligned.c": 6,
    "posix.c": 7, "new.c": 7, "override.c": 7, "v3.c": 7, "stats-v3.c": 7,
    "options.c": None, "stats.c": None, "stats-print.c": None, "live.c": None, "leaks.c": None, "prof.c": None, "prof-samples.c": None, "prof-stack.c": None, "prof-write.c": None, "prof-entry.c": None,
    "debug.c": None, "secure.c": None, "guarded.c": None, "track.c": None, "validate.c": None,
    "static.c": None,
    # Windows' static override: its own object (not in static.c's unit), the public API's layer.
    "override-windows.c": 7,
    # Windows' redirecting DLL: its own unit too (libmimalloc-redirect.dll), on the public API.
    "redirect-windows.c": 7,
}

# The up-calls the design allows: (calling file, called function) -> why it runs up the layers.
HOOKS = {
    # The public arena API lives with the arenas; it starts the process like every entry point.
    ("arena.c", "mi_process_init"): "public arena functions start the process",
    # mi_collect_reduce (public, in arena.c) collects the calling thread's heap first.
    ("arena.c", "mi_collect"): "mi_collect_reduce collects the thread's heap",
    # Adoption of an abandoned page hands it to a heap of the adopting thread.
    ("abandon.c", "_mi_heap_by_tag"): "an adopted page goes to the heap of its tag",
    ("abandon.c", "_mi_heap_area_visit_blocks"): "mi_abandoned_visit_blocks visits blocks like a heap visit",
    # Taking a fresh page paces the heap's sweep of pages that other threads' frees emptied.
    ("page.c", "_mi_heap_fresh_page_taken"): "a fresh page paces the heap's sweep of late remote frees",
    # Delayed blocks are freed like any block of the owner.
    ("heap.c", "_mi_free_delayed_block"): "delayed blocks are freed by the owner",
    # A heap's descriptor is a block of the thread's backing heap.
    ("heap.c", "mi_heap_malloc"): "mi_heap_new allocates the heap's descriptor",
    ("heap.c", "mi_free"): "mi_heap_delete frees the heap's descriptor",
    ("sheap.c", "mi_heap_malloc"): "a shared heap and its theaps are blocks of the thread's backing heap",
    ("sheap.c", "mi_free"): "and are freed as blocks",
    # Static allocation (while the allocator itself calls libc) falls back on the slow path of
    # its heap when its room is used up.
    ("init.c", "_mi_malloc_generic"): "static allocation falls back on its heap",
    # A scheduled arena purge wakes the purger thread (which runs the purges of both layers).
    ("arena-purge.c", "_mi_purger_notify"): "a scheduled arena purge wakes the purger",
    # MIMALLOC_VERBOSE on Windows: one block through the program's malloc tells whether the static
    # override (override-windows.c) serves it.
    ("init.c", "malloc"): "Windows' verbose start-up line asks the program's malloc who serves it",
    ("init.c", "free"): "and frees that block",
    # Failure injection (test builds) rounds a partial commit to the OS page.
    ("prim/failinject.c", "_mi_os_page_size"): "an injected partial commit is page-rounded",
    # The OS layer's thread-exit destructor ends the thread's heaps.
    ("prim/unix.c", "_mi_thread_done"): "the thread-exit destructor ends the thread's heaps",
    ("prim/windows.c", "_mi_thread_done"): "thread detach ends the thread's heaps",
    # The purger's pass visits every subprocess, whose list init.c keeps.
    ("segment.c", "_mi_subprocs_visit"): "the purger's pass visits every subprocess",
    # pthread_create allocates through malloc: the purger starts its thread under static allocation.
    ("purger.c", "_mi_static_alloc_begin"): "pthread_create allocates: the purger starts its thread under static allocation",
    ("purger.c", "_mi_static_alloc_end"): "the end of that static allocation",
}

IDENT = re.compile(r"[A-Za-z_]\w*")
# An identifier in a body that is not a member (page->free, s.size): a call, or a function's address.
REF = re.compile(r"(?<![\w.>])[A-Za-z_]\w*")


def strip(text):
    """Text with comments, string and character literals blanked and preprocessor lines removed
    (line numbers kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    kept, cont = [], False
    for line in lines:
        is_pp = cont or line.lstrip().startswith("#")
        cont = is_pp and line.rstrip().endswith("\\")
        kept.append("" if is_pp else line)
    return "\n".join(kept)


def functions(text):
    """{name: set of identifiers referenced in its body} for the function definitions of a
    stripped source text (a definition: an identifier and its parameter list at brace depth 0,
    followed by '{')."""
    defs, depth, i, n = {}, 0, 0, len(text)
    current, body_start = None, 0
    while i < n:
        c = text[i]
        if c == "{":
            if depth == 0:
                current = pending if pending_ok(text, i) else None
                body_start = i
            depth += 1
            i += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and current:
                defs.setdefault(current, set()).update(REF.findall(text[body_start:i]))
                current = None
            i += 1
        elif depth == 0 and (c.isalpha() or c == "_"):
            m = IDENT.match(text, i)
            j = m.end()
            k = j
            while k < n and text[k].isspace():
                k += 1
            if k < n and text[k] == "(":
                globals()["pending"] = m.group(0)
                globals()["pending_end"] = close_paren(text, k)
                i = globals()["pending_end"]
            else:
                i = j
        else:
            i += 1
    return defs


pending, pending_end = None, -1


def close_paren(text, k):
    depth = 0
    while k < len(text):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return k


def pending_ok(text, brace):
    """The '{' at brace follows the last parameter list, with at most attribute macros between
    (a definition, not an initialiser or a structure)."""
    return pending is not None and re.fullmatch(r"[\s\w]*", text[pending_end:brace]) is not None


DOC_BEGIN = "<!-- hooks: generated by test/layers.py --write-doc from its HOOKS; edit those -->"
DOC_END = "<!-- end of hooks -->"


def hooks_markdown():
    """The hook list of docs/design.md: per calling file, each called function with its reason."""
    lines = [DOC_BEGIN, f"The hooks, {len(HOOKS)} today:"]
    by_file = {}
    for (rel, callee), why in HOOKS.items():
        by_file.setdefault(rel, []).append(f"`{callee}` ({why})")
    for rel in sorted(by_file, key=lambda r: (LAYERS.get(r) or 0, r)):
        lines.append(f"- `{rel}`: " + "; ".join(by_file[rel]) + ".")
    lines.append(DOC_END)
    return "\n".join(lines)


def check_doc(doc_path, write):
    """None when docs/design.md lists exactly HOOKS (after rewriting it, with write); else why not."""
    if not os.path.exists(doc_path):
        return None   # (a source tree without docs: nothing to compare)
    text = open(doc_path, encoding="utf-8").read()
    b, e = text.find(DOC_BEGIN), text.find(DOC_END)
    if b < 0 or e < b:
        return f"{doc_path} has no hook list between the markers {DOC_BEGIN!r} and {DOC_END!r}"
    current = text[b:e + len(DOC_END)]
    wanted = hooks_markdown()
    if current == wanted:
        return None
    if write:
        with open(doc_path, "w", encoding="utf-8") as f:
            f.write(text[:b] + wanted + text[e + len(DOC_END):])
        print(f"layers.py: rewrote the hook list of {doc_path}")
        return None
    return f"{doc_path}'s hook list differs from HOOKS in test/layers.py: run test/layers.py --write-doc"


def main():
    args = [a for a in sys.argv[1:] if a != "--write-doc"]
    write = len(args) < len(sys.argv) - 1
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    owner, refs = {}, {}   # function -> file; (file, function) -> referenced identifiers
    for rel in LAYERS:
        path = os.path.join(src, rel)
        if not os.path.exists(path):
            print(f"layers.py: {rel} is in LAYERS but not in {src}")
            return 1
        for name, ids in functions(strip(open(path, encoding="utf-8").read())).items():
            owner.setdefault(name, rel)
            refs.setdefault((rel, name), set()).update(ids)
    listed = set(LAYERS)
    for dirpath, _, files in os.walk(src):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            if f.endswith(".c") and rel not in listed:
                print(f"layers.py: {rel} has no layer: add it to LAYERS (and to docs/design.md, Layers)")
                return 1
    inline = {}   # header inline helper -> identifiers it references
    hdir = os.path.join(src, "internal")
    for f in sorted(os.listdir(hdir)):
        if f.endswith(".h"):
            for name, ids in functions(strip(open(os.path.join(hdir, f), encoding="utf-8").read())).items():
                inline.setdefault(name, set()).update(ids)

    def expand(ids, seen):
        out = set()
        for x in ids:
            if x in inline and x not in seen:
                seen.add(x)
                out |= expand(inline[x], seen)
            elif x in owner:
                out.add(x)
        return out

    bad, used = [], set()
    for (rel, name), ids in sorted(refs.items()):
        lo = LAYERS[rel]
        if lo is None:
            continue
        for callee in sorted(expand(ids, set())):
            hi = LAYERS[owner[callee]]
            if hi is not None and hi > lo:
                if (rel, callee) in HOOKS:
                    used.add((rel, callee))
                else:
                    bad.append(f"{rel}: {name} calls {callee} ({owner[callee]}, layer {hi} above {lo}): "
                               "not a hook in test/layers.py")
    present = {rel for rel in LAYERS if os.path.exists(os.path.join(src, rel))}
    for hook in sorted(set(HOOKS) - used):
        if hook[0] in present:
            bad.append(f"hook {hook[0]} -> {hook[1]} is listed but no longer used: remove it from HOOKS")
    why = check_doc(os.path.join(src, "..", "docs", "design.md"), write)
    if why:
        bad.append(why)
    for line in bad:
        print(line)
    print(f"layers.py: {len(owner)} functions in {len(LAYERS)} files, {len(used)} hooks used, "
          f"{len(bad)} offence(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
