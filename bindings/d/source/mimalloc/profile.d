// SPDX-License-Identifier: MIT
/**
The sampling heap profiler of the C library (`mi_profile_start`, `mi_profile_dump`) with D
arguments: about one allocation per `rate` bytes is recorded with its call stack, and a dump
writes what is in use and what was allocated, per call site.

The profiler exists in release builds on Linux only: in the `secure` and `debug`
configurations (and on other systems) both functions return false. Once on, it stays on for
the life of the process.

---
import mimalloc;

if (profileStart(64 * 1024))            // false: not in this build
{
    auto a = Mimallocator.instance.makeArray!long(100_000);
    profileDump("/tmp/myprog-%p");      // /tmp/myprog-<pid>.pb, .txt, .inuse.folded, .alloc.folded
    Mimallocator.instance.dispose(a);
}
---

Without a call, the environment switches it on at start-up: `MIMALLOC_PROFILE=path` (the
profile is written at exit), `MIMALLOC_PROFILE_RATE` (bytes), `MIMALLOC_PROFILE_MAX` (MiB cap
of the profiler's store, default 64), `MIMALLOC_PROFILE_DEPTH` (frames, default 64) and
`MIMALLOC_PROFILE_INTERVAL` (seconds between periodic dumps to `path.NNNN.*`).
*/
module mimalloc.profile;

import mimalloc.capi : mi_free, mi_malloc, mi_profile_dump, mi_profile_start;

/// The suffixes `profileDump` appends to its path: the pprof profile, the top call sites as
/// text, the in-use and the allocated flame graphs (folded stacks).
immutable string[4] profileFileSuffixes = [".pb", ".txt", ".inuse.folded", ".alloc.folded"];

/**
Switches the profiler on (`mi_profile_start`): every thread samples about one allocation per
`rate` bytes allocated (0: 512 KiB) from its next allocation on. Returns true if the profiler
is on; a second call keeps the rate of the first. False in builds without the profiler.
*/
bool profileStart(size_t rate = 0) @trusted @nogc nothrow
{
    return mi_profile_start(rate);
}

/**
Writes the profile now (`mi_profile_dump`) to four files: `path` with each of
`profileFileSuffixes` appended; `%p` in `path` is replaced by the process id. Returns true if
all four were written; false if the profiler is off or not in this build, or if `path` is
empty or contains a NUL character.
*/
bool profileDump(scope const(char)[] path) @trusted @nogc nothrow
{
    if (path.length == 0)
        return false;
    foreach (ch; path)
        if (ch == '\0')
            return false;
    // a NUL-terminated copy: on the stack, or from the allocator for long paths
    char[512] local = void;
    char* z = path.length < local.length ? local.ptr : cast(char*) mi_malloc(path.length + 1);
    if (z is null)
        return false;
    z[0 .. path.length] = path[];
    z[path.length] = '\0';
    const ok = mi_profile_dump(z);
    if (z !is local.ptr)
        mi_free(z);
    return ok;
}

@safe nothrow @nogc unittest
{
    // paths the C library cannot take (does not switch the profiler on: tests/ does that in a
    // child process)
    assert(!profileDump(""));
    assert(!profileDump("a\0b"));
}
