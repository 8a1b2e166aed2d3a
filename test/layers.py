#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the library's code calls down its layers (docs/design.md, "Layers").

Every function of src/ belongs to the file that defines it, and every file to a layer (LAYERS
below, no exemption). A reference from a function to a function of a higher layer (a call, or
its address taken) is an up-call; each one must be a named hook, with the reason it exists:
either one of the observers' hooks (OBSERVE_HOOKS: declared in src/internal/observe.h, defined
in observe.c, callable from any layer; the only way into the top layer, the observers), or a
(calling file, called function) pair in HOOKS. Inline helpers and macros of src/internal/*.h
belong to no layer: a reference to one counts as the references it makes itself (a macro's body
in every #if branch); so does a reference to a macro of the file itself, and each such macro is
also checked where it is defined.

docs/design.md's layer table and list of the hooks are generated from LAYERS and the hooks
(between their markers), so they cannot disagree: the check fails when either differs, and
--write-doc rewrites them.

Includes: every header of src/internal and src/prim has a layer (HEADERS; None: any layer), and a
file of LAYERS (or a header) includes only headers of its layer or below, or of a layer it has a
hook into (HOOKS: the include declares the hook); never the umbrella internal/internal.h. The
headers are a column of docs/design.md's layer table.

Names: every name of src/ with external linkage that starts with _mi_ (a function or a global)
starts with a prefix of the file that defines it (PREFIXES), so a reader knows where to look. A
prefix belongs to one file (the platform files of prim/, which define the same functions of
prim/prim.h, share theirs); where prefixes nest, the longest that matches names the file
(_mi_segment_map_ is segment-map.c's, _mi_segment_ segment.c's). The output functions
(OUTPUT_NAMES) are the one set of names that do not follow the rule. docs/design.md's table of
the prefixes is generated from PREFIXES and OUTPUT_NAMES like the layer table.

usage: test/layers.py [--write-doc] [SRC_DIR]   (default: the src/ beside this script's directory)
Exit status 0 when every up-call is a listed hook, every listed hook is still used, observe.h
declares exactly OBSERVE_HOOKS, every external _mi_ name has its file's prefix and the design
document shows exactly LAYERS, the hooks and the prefixes, and every include follows the rule; 1 otherwise, with one line per
offence."""
import os
import re
import sys

# Layer of each file, bottom up (docs/design.md, "Layers"); every file of src/ has one.
LAYERS = {
    # The schedule fuzzer (test builds) stands for the OS's scheduler: prim, calling only prim.
    "prim/unix.c": 1, "prim/windows.c": 1, "prim/failinject.c": 1, "prim/sched-fuzz.c": 1,
    # Used from every layer, so at the bottom: options and output, the statistics' counters
    # (only counting: reading them out is stats-print.c's), and the unit's two text markers.
    "options.c": 1, "stats.c": 1, "static.c": 1,
    # The memory limit: which one is in force (options, the cgroup's files through prim); the
    # purger acts on it.
    "limit.c": 1,
    "os.c": 2, "bitmap.c": 2, "random.c": 2,
    "arena.c": 3, "arena-purge.c": 3, "segment-map.c": 3,
    "segment.c": 4, "segment-purge.c": 4, "abandon.c": 4, "page.c": 4, "purger.c": 4,
    # The checks of checked builds and the trackers act on pages and blocks from the page layer up.
    "debug.c": 4, "secure.c": 4, "track.c": 4,
    "heap.c": 5, "init.c": 5, "static-alloc.c": 5,
    # Cross-thread frees: the push on another thread's page and the batches of held-back frees.
    "remote.c": 5,
    # Idle reclaim: the purger's look at sleeping threads' heaps (their full pages, their delayed lists).
    "heap-idle.c": 5,
    # Shared heaps over the heaps of a thread, and the public heap functions that tell the two
    # apart (heap.c knows of shared heaps only the field mi_heap_t.sheap). Below the allocation
    # entry points, which turn a shared heap into the thread's theap (_mi_sheap_theap) and whose
    # slow path ends dead theaps: those calls go down; the descriptors being blocks
    # (mi_heap_malloc, mi_free) are the two calls up (HOOKS).
    "sheap.c": 6, "heap-api.c": 6,
    # Guarded objects are allocations of their own (they call malloc and free).
    "alloc.c": 7, "free.c": 7, "aligned.c": 7, "guarded.c": 7,
    # The profiler's counted entry points (malloc, calloc, operator new that count bytes) are entry
    # points like the public ones, which the override binds the program's calls to.
    "posix.c": 8, "new.c": 8, "override.c": 8, "v3.c": 8, "prof-entry.c": 8,
    # Windows' static override: its own object (not in static.c's unit), the public API's layer.
    "override-windows.c": 8,
    # Windows' redirecting DLL: its own unit too (libmimalloc-redirect.dll), on the public API.
    "redirect-windows.c": 8,
    # The observers: they read the core and the core reaches them only through the hooks of
    # internal/observe.h, which observe.c hands on.
    "observe.c": 9, "prof.c": 9, "prof-samples.c": 9, "prof-stack.c": 9, "prof-write.c": 9,
    "live.c": 9, "leaks.c": 9, "stats-print.c": 9, "stats-v3.c": 9, "validate.c": 9,
}

# What each layer is (docs/design.md's layer table is generated from this and LAYERS).
LAYER_NAMES = {
    1: "prim and base: the OS's primitives (with two files of test builds, which stand for the OS "
       "misbehaving: failure injection and the schedule fuzzer, docs/testing.md); options and output; "
       "the statistics' counters; the memory limit in force (`limit.c`); the unit (`static.c`)",
    2: "os: page-granular, aligned OS memory, commit and purge; bitmaps; random numbers",
    3: "arenas and the segment map, with the purge of free arena blocks",
    4: "segments and pages, abandonment, the purger thread (the due purges of both); the checks of "
       "checked builds, secure builds' checks and the trackers",
    5: "heaps of a thread, the thread and process life cycle, and the static allocation of what libc allocates for us",
    6: "shared heaps (heaps any thread can use) and the public heap functions, which tell a shared heap from a thread's",
    7: "allocation and free, aligned allocation, guarded objects",
    8: "API and override: POSIX and C++ entry points, the profiler's counted entry points, the symbols of the header's v3 mode (`MI_V3_API`, "
       "docs/v3-api.md); Windows' static override and redirecting DLL, objects of their own on the public API",
    9: "observers: the profiler, the live view, the leak report, the statistics' read-outs, the validators "
       "of debug builds; the hooks' dispatch (`observe.c`)",
}

OBSERVE_HEADER, OBSERVE_FILE = "internal/observe.h", "observe.c"

# Layer of each header (path under src/), for the check of includes: a file (or header) may include
# a header of its own layer or a lower one; a header of a higher layer only where HOOKS lists an
# up-call of that file into a function of that layer (the include carries the hook). None: the
# foundation, or the observers' hooks, includable from any layer. Generated into docs/design.md's
# layer table with LAYERS.
HEADERS = {
    "internal/types.h": None, "internal/atomic.h": None, "internal/version.h": None,
    OBSERVE_HEADER: None,
    "prim/prim.h": 1, "internal/base.h": 1, "internal/sched.h": 1, "internal/limit.h": 1,
    "internal/os.h": 2, "internal/bitmap.h": 2,
    "internal/arena.h": 3,
    "internal/segment.h": 4, "internal/page.h": 4, "internal/track.h": 4,
    "internal/heap.h": 5,
    "internal/sheap.h": 6,
    "internal/alloc.h": 7,
    "internal/api.h": 8, "internal/v3.h": 8, "internal/crt-windows.h": 8,
    "internal/observers.h": 9, "internal/prof-hook.h": 9, "internal/prof.h": 9,
}
# The umbrella of all the layer headers: no file of src/ includes it (its includes would show no
# dependency); it is not a layer's header.
UMBRELLA = "internal/internal.h"

# The observers' hooks (internal/observe.h, defined in observe.c): the only functions of the
# observer layer that the layers below may call, from any file. Each is an event of the core.
OBSERVE_HOOKS = {
    "_mi_observe_process_init": "the environment is readable: the live view and the profiler start",
    "_mi_observe_process_done": "process exit: the leak report, the statistics and the profile at exit, then the live view stops",
    "_mi_observe_option_set": "mi_option_set after start: MIMALLOC_LIVE set by the program starts the live view",
    "_mi_observe_thread_start": "a thread allocates after mi_profile_start (another thread's): its heaps get their profiler",
    "_mi_observe_thread_new": "a thread starts while the live view is on: its live state, counting from its start",
    "_mi_observe_thread_done": "a thread ends: its live-view slot and state are freed",
    "_mi_observe_fork": "fork's prepare, parent and child: the observers' locks with the core's",
    "_mi_observe_heartbeat": "one heartbeat of the allocation slow path, behind one test: the live view publishes, the profiler dumps when due",
    "_mi_observe_collected": "mi_collect: the live view publishes the thread's figures now",
    "_mi_observe_background": "the purger's thread does the observers' due work (the live view's)",
    "_mi_observe_heap_init": "a new heap while the profiler is on gets its proxy pages",
    "_mi_observe_heap_done": "a heap with a profiler ends: leases back, proxies gone",
    "_mi_observe_heap_release": "a heap's pages are about to be walked, destroyed or counted: observers hand back the blocks they hold",
    "_mi_observe_heap_companion": "the heap whose pages count as this heap's (the sampled blocks'), for destroy, visit, contains and collect",
    "_mi_observe_page_held": "a heap visit skips the free blocks an observer holds on a page",
    "_mi_observe_malloc": "the slow path of a heap whose fast path the profiler leases",
    "_mi_observe_page_move": "a page with blocks in use changes thread (abandon, reclaim): the live view moves its counts",
    "_mi_observe_free": "a free into a page with profiler samples",
    "_mi_observe_page_gone": "a page released with sampled blocks never freed",
    "_mi_observe_check": "the validators of debug builds, inside mi_assert_expensive",
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
    # A heap's descriptor, a shared heap and its theaps are blocks of the thread's backing heap.
    ("heap-api.c", "mi_heap_malloc"): "mi_heap_new allocates the heap's descriptor",
    ("heap-api.c", "mi_free"): "mi_heap_delete frees the heap's descriptor (a theap's too)",
    ("sheap.c", "mi_heap_malloc"): "a shared heap and its theaps are blocks of the thread's backing heap",
    ("sheap.c", "mi_free"): "and are freed as blocks",
    # Thread exit and fork, events of init.c, reach the shared heaps: only the thread may end its
    # heaps (a theap's pages go to its shared heap, which it may free with its last theap), and
    # the shared heaps' locks come first in fork's lock order (sheap.c), before the subprocesses'.
    ("init.c", "_mi_heap_api_thread_done"): "a thread's end ends its heaps: theaps (and their shared heaps, with the last), heaps of mi_heap_new, their descriptors",
    ("init.c", "_mi_sheap_fork_prepare"): "fork takes the shared heaps' locks first (their lock order) ...",
    ("init.c", "_mi_sheap_fork_release"): "... and releases them in the parent and the child",
    # MIMALLOC_DESTROY_ON_EXIT: process end collects the thread's heaps as a program's mi_collect(true).
    ("init.c", "mi_collect"): "destroy_on_exit: process end collects like mi_collect(true)",
    # Static allocation (while the allocator itself calls libc) falls back on the slow path of
    # its heap when its room is used up.
    ("static-alloc.c", "_mi_malloc_generic"): "static allocation falls back on its heap",
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
    ("segment-purge.c", "_mi_subprocs_visit"): "the purger's pass visits every subprocess",
    # The purger looks at sleeping threads' heaps (heap-idle.c): their full pages emptied by others' frees.
    ("purger.c", "_mi_heap_idle_pass"): "the purger empties the full pages of sleeping threads (idle reclaim)",
    ("purger.c", "_mi_heap_idle_keep"): "and waits for frees into them while two threads live",
    # pthread_create allocates through malloc: the purger starts its thread under static allocation.
    ("purger.c", "_mi_static_alloc_begin"): "pthread_create allocates: the purger starts its thread under static allocation",
    ("purger.c", "_mi_static_alloc_end"): "the end of that static allocation",
    # A young process starts no purger yet (most end before their first purge is due).
    ("purger.c", "_mi_process_elapsed"): "a process younger than 10 ms starts no purger thread yet",
    # Output: messages of threads other than the one that started the process name their thread.
    ("options.c", "_mi_thread_is_main"): "messages of other threads than the process' first name their thread",
    # Guarded objects (MI_GUARDED builds) are per heap.
    ("heap.c", "_mi_guarded_heap_init"): "a new heap takes the guarded-sampling options",
    ("heap.c", "_mi_guarded_quarantine_flush"): "a forced collect empties the quarantine of freed guarded objects",
    # Secure builds: malloc's check of the next free block found a corrupt list.
    ("secure.c", "_mi_malloc_generic"): "after a corrupt free list is reported, the allocation goes on in the slow path",
    # The profiler's counted entry points (prof-entry.c, MI_PROF_ENTRIES) sit with the entry
    # points; a miss and a due sample are the profiler's own work.
    ("prof-entry.c", "_mi_prof_counted_slow"): "the profiler's counted entry points: their slow path is the profiler's",
    ("prof-entry.c", "_mi_prof_counted_due"): "the profiler's counted entry points: their sample is the profiler's",
}

# The prefixes of the names with external linkage each file defines (functions and globals that
# start with _mi_; public mi_ names are the API's). A prefix names its file, or the one concept
# the file holds where that is what a reader looks for (init.c: the process, its threads and
# subprocesses; alloc.c: malloc and realloc). Every file of LAYERS has an entry (also the ones
# that define no such name today, so that a new one has its prefix), and so has the C++ file.
# The C++ glue of the new-handler (outside LAYERS, which has the C files) is new.c's, in its layer.
CXX_FILES = {"new-handler.cpp": "new.c"}
PREFIXES = {
    # The platform files define the functions of prim/prim.h, one of them per build.
    "prim/unix.c": ["_mi_prim_"], "prim/windows.c": ["_mi_prim_"], "prim/failinject.c": ["_mi_prim_"],
    "prim/sched-fuzz.c": ["_mi_sched_"],
    "options.c": ["_mi_option_", "_mi_options_"],   # and OUTPUT_NAMES
    "stats.c": ["_mi_stat_", "_mi_stats_"],
    "static.c": ["_mi_static_"], "limit.c": ["_mi_limit_"],
    "os.c": ["_mi_os_"], "bitmap.c": ["_mi_bitmap_"], "random.c": ["_mi_random_"],
    "arena.c": ["_mi_arena_", "_mi_arenas_"], "arena-purge.c": ["_mi_arena_purge_", "_mi_arenas_purge_"],
    "segment-map.c": ["_mi_segment_map_"],
    "segment.c": ["_mi_segment_", "_mi_segments_"], "segment-purge.c": ["_mi_segments_purge_"], "abandon.c": ["_mi_abandoned_"], "page.c": ["_mi_page_"],
    "purger.c": ["_mi_purger_"],
    "debug.c": ["_mi_debug_"], "secure.c": ["_mi_secure_"], "track.c": ["_mi_track_"],
    "heap.c": ["_mi_heap_"], "init.c": ["_mi_process_", "_mi_thread_", "_mi_subproc_", "_mi_subprocs_"],
    "static-alloc.c": ["_mi_static_alloc_"], "sheap.c": ["_mi_sheap_", "_mi_sheaps_"],
    "heap-api.c": ["_mi_heap_api_"],
    "heap-idle.c": ["_mi_heap_idle_"], "remote.c": ["_mi_remote_"],
    "alloc.c": ["_mi_alloc_", "_mi_malloc_", "_mi_realloc_"], "free.c": ["_mi_free_"],
    "aligned.c": ["_mi_aligned_"], "guarded.c": ["_mi_guarded_"],
    "posix.c": ["_mi_posix_"], "new.c": ["_mi_new_"], "new-handler.cpp": ["_mi_new_handler_"],
    "override.c": ["_mi_override_"], "v3.c": ["_mi_v3_"], "prof-entry.c": ["_mi_prof_entry_"],
    "override-windows.c": ["_mi_override_windows_"], "redirect-windows.c": ["_mi_redirect_"],
    "observe.c": ["_mi_observe_"], "prof.c": ["_mi_prof_"], "prof-samples.c": ["_mi_prof_samples_"],
    "prof-stack.c": ["_mi_prof_stack_"], "prof-write.c": ["_mi_prof_write_"], "live.c": ["_mi_live_"],
    "leaks.c": ["_mi_leaks_"], "stats-print.c": ["_mi_stats_print_"], "stats-v3.c": ["_mi_stats_v3_"],
    "validate.c": ["_mi_validate_"],
}

# The one set of names that carry no file's prefix: the output of options.c. Every layer calls
# them (some 200 call sites in 25 files), they read as what they do (the printf family and its
# levels of message), and they are the names mimalloc gives the same functions; a prefix would
# lengthen every message line and tell a reader nothing they do not know. Their file is options.c.
OUTPUT_FILE = "options.c"
OUTPUT_NAMES = ["_mi_message", "_mi_error_message", "_mi_warning_message", "_mi_warning_always",
                "_mi_verbose_message", "_mi_trace_message", "_mi_fputs", "_mi_snprintf",
                "_mi_vsnprintf", "_mi_assert_fail"]

# Names with external linkage that need not carry their file's prefix: (file, name) -> why.
NAME_EXEMPT = {
}


IDENT = re.compile(r"[A-Za-z_]\w*")
# An identifier in a body that is not a member (page->free, s.size): a call, or a function's address.
REF = re.compile(r"(?<![\w.>])[A-Za-z_]\w*")


def strip(text, keep_pp=False):
    """Text with comments, string and character literals blanked and preprocessor lines removed
    (kept with keep_pp; line numbers kept)."""
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
    if keep_pp:
        return "".join(out)
    lines = "".join(out).split("\n")
    kept, cont = [], False
    for line in lines:
        is_pp = cont or line.lstrip().startswith("#")
        cont = is_pp and line.rstrip().endswith("\\")
        kept.append("" if is_pp else line)
    return "\n".join(kept)


DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?(.*)", re.S)


def macros(text):
    """{name: set of identifiers its body references} for the macros a source text defines (in
    any branch of its #if: every configuration's body counts), its parameters left out. A
    reference to a macro counts as the references its body makes, like an inline helper."""
    out, lines, i = {}, strip_comments(text).split("\n"), 0
    while i < len(lines):
        line = lines[i]
        while line.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i]
        i += 1
        m = DEFINE.match(line.strip())
        if m:
            params = set(IDENT.findall(m.group(2) or ""))
            out.setdefault(m.group(1), set()).update(set(REF.findall(m.group(3))) - params)
    return out


def strip_comments(text):
    """Text with comments and literals blanked, preprocessor lines kept (for macros)."""
    return strip(text, keep_pp=True)


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


def statements(text):
    """The declarations at file scope of a stripped text: (text before its ';' or '{', which)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                out.append((text[start:i], "{"))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            out.append((text[start:i], ";"))
            start = i + 1
    return out


def external_names(text):
    """The _mi_ names a source text defines with external linkage: functions with a body and
    globals, neither static (nor, for a global, extern: a declaration)."""
    out = []
    for head, ender in statements(strip(text)):
        head = " ".join(head.split())
        if not head or re.search(r"\b(static|typedef)\b", head):
            continue
        decl, init = head.split("=", 1)[0], "=" in head
        fn = re.search(r"\b(_mi_\w+)\s*\(", decl)
        if fn and not init:
            if ender == "{":
                out.append(fn.group(1))   # a function's definition (a prototype otherwise)
            continue
        if (ender == "{" and not init) or re.search(r"\bextern\b", head):
            continue                      # a structure, or a declaration
        names = re.findall(r"\b(_mi_\w+)\b", decl)
        if names:
            out.append(names[-1])
    return out


def prefix_owner(name):
    """(the longest prefix of PREFIXES or name of OUTPUT_NAMES that name starts with, the files
    it belongs to), or (None, [])."""
    best, files = None, []
    for rel, prefixes in PREFIXES.items():
        for p in prefixes:
            if name.startswith(p) and (best is None or len(p) > len(best)):
                best, files = p, [rel]
            elif p == best:
                files.append(rel)
    if name in OUTPUT_NAMES:
        return name, [OUTPUT_FILE]
    return best, files


def check_names(src):
    """Offences against PREFIXES: a file without prefixes, a prefix of two files, an external
    _mi_ name whose longest matching prefix is not its file's, a stale exemption."""
    bad, seen = [], {}
    for rel in list(LAYERS) + list(CXX_FILES):
        if rel not in PREFIXES:
            bad.append(f"{rel}: no prefixes in PREFIXES (test/layers.py)")
    for rel, prefixes in PREFIXES.items():
        for p in prefixes:
            if not p.startswith("_mi_") or not p.endswith("_"):
                bad.append(f"{rel}: prefix {p} must start with _mi_ and end with _")
            other = seen.setdefault(p, rel)
            if other != rel and not (other.startswith("prim/") and rel.startswith("prim/")):
                bad.append(f"prefix {p} is both {other}'s and {rel}'s")
    exempt_used, checked = set(), 0
    for rel in sorted(set(PREFIXES) - set(LAYERS) - set(CXX_FILES)):
        bad.append(f"{rel} is in PREFIXES but has no layer")
    for rel in PREFIXES:
        path = os.path.join(src, rel)
        if not os.path.exists(path):
            bad.append(f"{rel} is in PREFIXES but not in {src}")
            continue
        for name in sorted(set(external_names(open(path, encoding="utf-8").read()))):
            checked += 1
            prefix, files = prefix_owner(name)
            if rel in files:
                continue
            if (rel, name) in NAME_EXEMPT:
                exempt_used.add((rel, name))
                continue
            whose = f" ({prefix} is {', '.join(files)}'s)" if prefix else ""
            bad.append(f"{rel}: {name} does not start with a prefix of {rel} "
                       f"({', '.join(PREFIXES[rel])}){whose}: rename it")
    for key in sorted(set(NAME_EXEMPT) - exempt_used):
        bad.append(f"exemption {key[0]}: {key[1]} is no longer needed: remove it from NAME_EXEMPT")
    return bad, checked


DOC_BEGIN = "<!-- hooks: generated by test/layers.py --write-doc from its HOOKS; edit those -->"
DOC_END = "<!-- end of hooks -->"
TABLE_BEGIN = "<!-- layers: generated by test/layers.py --write-doc from its LAYERS; edit those -->"
TABLE_END = "<!-- end of layers -->"
NAMES_BEGIN = "<!-- prefixes: generated by test/layers.py --write-doc from its PREFIXES; edit those -->"
NAMES_END = "<!-- end of prefixes -->"


def hooks_markdown():
    """The hook list of docs/design.md: the observers' hooks, then per calling file each called
    function with its reason."""
    lines = [DOC_BEGIN, f"The observers' hooks (`src/{OBSERVE_HEADER}`), {len(OBSERVE_HOOKS)} today, "
             "callable from any layer:"]
    for callee, why in OBSERVE_HOOKS.items():
        lines.append(f"- `{callee}`: {why}.")
    lines.append("")
    lines.append(f"The other up-calls, {len(HOOKS)} today:")
    by_file = {}
    for (rel, callee), why in HOOKS.items():
        by_file.setdefault(rel, []).append(f"`{callee}` ({why})")
    for rel in sorted(by_file, key=lambda r: (LAYERS.get(r) or 0, r)):
        lines.append(f"- `{rel}`: " + "; ".join(by_file[rel]) + ".")
    lines.append(DOC_END)
    return "\n".join(lines)


def layers_markdown():
    """The layer table of docs/design.md: each layer with its files (src/) and what it is."""
    lines = [TABLE_BEGIN, "| layer | files (`src/`) | headers (`src/`) | what |", "|---|---|---|---|"]
    anyh = ", ".join(f"`{h}`" for h in HEADERS if HEADERS[h] is None)
    lines.append(f"| any | | {anyh} | the types and atomics every header builds on; the observers' hooks |")
    for layer in sorted(LAYER_NAMES):
        files = ", ".join(f"`{rel}`" for rel in LAYERS if LAYERS[rel] == layer)
        headers = ", ".join(f"`{h}`" for h in HEADERS if HEADERS[h] == layer)
        lines.append(f"| {layer} | {files} | {headers} | {LAYER_NAMES[layer]} |")
    lines.append(TABLE_END)
    return "\n".join(lines)


def prefixes_markdown():
    """The prefix table of docs/design.md: per layer, each file with its prefixes."""
    lines = [NAMES_BEGIN, "| layer | file (`src/`) | prefixes of its `_mi_` names |", "|---|---|---|"]
    layer = lambda rel: LAYERS[CXX_FILES.get(rel, rel)]
    for rel in sorted(list(LAYERS) + list(CXX_FILES), key=layer):
        names = ", ".join(f"`{p}`" for p in PREFIXES.get(rel, []))
        if rel == OUTPUT_FILE:
            names += "; and the output functions " + ", ".join(f"`{n}`" for n in OUTPUT_NAMES)
        lines.append(f"| {layer(rel)} | `{rel}` | {names} |")
    if NAME_EXEMPT:
        lines.append("")
        lines.append("Exempt from the rule:")
        for (rel, name), why in NAME_EXEMPT.items():
            lines.append(f"- `{name}` (`{rel}`): {why}.")
    lines.append(NAMES_END)
    return "\n".join(lines)


def check_doc(doc_path, write):
    """Reasons docs/design.md's generated parts (the layer table, the hook list) differ from
    LAYERS and HOOKS (none after rewriting them, with write)."""
    if not os.path.exists(doc_path):
        return []   # (a source tree without docs: nothing to compare)
    text = open(doc_path, encoding="utf-8").read()
    why, changed = [], False
    for begin, end, wanted, what in ((TABLE_BEGIN, TABLE_END, layers_markdown(), "layer table"),
                                     (DOC_BEGIN, DOC_END, hooks_markdown(), "hook list"),
                                     (NAMES_BEGIN, NAMES_END, prefixes_markdown(), "prefix table")):
        b, e = text.find(begin), text.find(end)
        if b < 0 or e < b:
            why.append(f"{doc_path} has no {what} between the markers {begin!r} and {end!r}")
        elif text[b:e + len(end)] != wanted:
            if write:
                text, changed = text[:b] + wanted + text[e + len(end):], True
                print(f"layers.py: rewrote the {what} of {doc_path}")
            else:
                why.append(f"{doc_path}'s {what} differs from test/layers.py: run test/layers.py --write-doc")
    if changed:
        with open(doc_path, "w", encoding="utf-8") as f:
            f.write(text)
    return why


INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def check_includes(src, owner):
    """Offences of the includes: each quoted include of a file of LAYERS or a header of HEADERS
    that names a header of src/ must name one of HEADERS of its layer or below (or of a layer it
    has a hook into), never the umbrella; every header of src/internal and src/prim has a layer."""
    bad, count = [], 0
    hook_layers = {}   # file -> layers it has hooks into
    for (rel, callee) in HOOKS:
        if callee in owner:
            hook_layers.setdefault(rel, set()).add(LAYERS[owner[callee]])
    for d in ("internal", "prim"):
        for f in sorted(os.listdir(os.path.join(src, d))):
            rel = d + "/" + f
            if f.endswith(".h") and rel not in HEADERS and rel != UMBRELLA:
                bad.append(f"{rel} has no layer: add it to HEADERS in test/layers.py")
    units = [(rel, LAYERS[rel]) for rel in LAYERS] + [(h, l) for h, l in HEADERS.items()]
    for rel, layer in units:
        path = os.path.join(src, rel)
        if not os.path.exists(path):
            continue
        text = re.sub(r"/\*.*?\*/", " ", open(path, encoding="utf-8").read(), flags=re.S)   # comments out, paths kept
        for inc in INCLUDE_RE.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), inc)).replace(os.sep, "/")
            if target.endswith(".c") or not os.path.exists(os.path.join(src, target)):
                continue   # the unit's .c files (static.c), public headers (include/)
            count += 1
            if target == UMBRELLA:
                bad.append(f"{rel} includes the umbrella {UMBRELLA}: include the headers of its layer and below")
            elif target not in HEADERS:
                bad.append(f"{rel} includes {target}, which has no layer in HEADERS")
            elif HEADERS[target] is None or layer is None or HEADERS[target] <= layer:
                continue
            elif rel in LAYERS and HEADERS[target] in hook_layers.get(rel, set()):
                continue   # the declarations of its hooks
            else:
                bad.append(f"{rel} (layer {layer}) includes {target} (layer {HEADERS[target]}): "
                           "only headers of its layer and below, or of a layer it has a hook into (HOOKS)")
    return bad, count


def observe_declared(src):
    """The functions internal/observe.h declares (the observers' hooks)."""
    text = strip(open(os.path.join(src, OBSERVE_HEADER), encoding="utf-8").read())
    return set(re.findall(r"\b(_mi_observe_\w+)\s*\(", text))


def main():
    args = [a for a in sys.argv[1:] if a != "--write-doc"]
    write = len(args) < len(sys.argv) - 1
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    owner, refs = {}, {}   # function -> file; (file, function) -> referenced identifiers
    local = {}             # file -> its own macros -> identifiers their bodies reference
    for rel in LAYERS:
        path = os.path.join(src, rel)
        if not os.path.exists(path):
            print(f"layers.py: {rel} is in LAYERS but not in {src}")
            return 1
        text = open(path, encoding="utf-8").read()
        for name, ids in functions(strip(text)).items():
            owner.setdefault(name, rel)
            refs.setdefault((rel, name), set()).update(ids)
        local[rel] = macros(text)
        for name, ids in local[rel].items():   # a macro of the file is checked where it is defined
            refs.setdefault((rel, "#define " + name), set()).update(ids)
    listed = set(LAYERS)
    for dirpath, _, files in os.walk(src):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            if f.endswith(".c") and rel not in listed:
                print(f"layers.py: {rel} has no layer: add it to LAYERS (and to docs/design.md, Layers)")
                return 1
    inline = {}   # header inline helper or macro -> identifiers it references
    hdir = os.path.join(src, "internal")
    for f in sorted(os.listdir(hdir)):
        if f.endswith(".h"):
            text = open(os.path.join(hdir, f), encoding="utf-8").read()
            for name, ids in list(functions(strip(text)).items()) + list(macros(text).items()):
                inline.setdefault(name, set()).update(ids)

    def expand(ids, seen, mine):
        """The functions of src/ that references ids make, through the file's own macros (mine)
        and the headers' inline helpers and macros."""
        out = set()
        for x in ids:
            if x in owner:
                out.add(x)
            body = mine.get(x, inline.get(x))
            if body is not None and x not in seen:
                seen.add(x)
                out |= expand(body, seen, mine)
        return out

    bad, used = [], set()
    for rel in LAYERS:
        if LAYERS[rel] not in LAYER_NAMES:
            bad.append(f"{rel}: layer {LAYERS[rel]!r} is not one of LAYER_NAMES")
    if bad:
        print("\n".join(bad))
        return 1
    top = max(LAYER_NAMES)
    for (rel, name), ids in sorted(refs.items()):
        lo = LAYERS[rel]
        for callee in sorted(expand(ids, set(), local[rel])):
            hi = LAYERS[owner[callee]]
            if hi <= lo:
                continue
            if (rel, callee) in HOOKS:
                used.add((rel, callee))
            elif callee in OBSERVE_HOOKS and owner[callee] == OBSERVE_FILE:
                used.add(callee)
            else:
                what = "an observer: call it through a hook of " + OBSERVE_HEADER if hi == top else "not a hook in test/layers.py"
                bad.append(f"{rel}: {name} calls {callee} ({owner[callee]}, layer {hi} above {lo}): {what}")
    present = {rel for rel in LAYERS if os.path.exists(os.path.join(src, rel))}
    for hook in sorted(set(HOOKS) - used):
        if hook[0] in present:
            bad.append(f"hook {hook[0]} -> {hook[1]} is listed but no longer used: remove it from HOOKS")
    declared = observe_declared(src)
    for hook in sorted(set(OBSERVE_HOOKS) - declared):
        bad.append(f"observer hook {hook} is in OBSERVE_HOOKS but not declared in {OBSERVE_HEADER}")
    for hook in sorted(declared - set(OBSERVE_HOOKS)):
        bad.append(f"{OBSERVE_HEADER} declares {hook}: add it to OBSERVE_HOOKS with why it exists")
    for hook in sorted(set(OBSERVE_HOOKS) - used):
        bad.append(f"observer hook {hook} is listed but no layer below calls it: remove it")
    for hook in sorted(set(OBSERVE_HOOKS)):
        if owner.get(hook) != OBSERVE_FILE:
            bad.append(f"observer hook {hook} is not defined in {OBSERVE_FILE}")
    includes_bad, includes_checked = check_includes(src, owner)
    bad += includes_bad
    names_bad, names_checked = check_names(src)
    bad += names_bad
    bad += check_doc(os.path.join(src, "..", "docs", "design.md"), write)
    for line in bad:
        print(line)
    print(f"layers.py: {len(owner)} functions in {len(LAYERS)} files, {len(used)} hooks used "
          f"({len(OBSERVE_HOOKS)} of them the observers'), {names_checked} external _mi_ names checked, "
          f"{includes_checked} includes checked, "
          f"{len(bad)} offence(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
