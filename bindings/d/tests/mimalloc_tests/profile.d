// SPDX-License-Identifier: MIT
/**
The sampling heap profiler through `mimalloc.profile` and the allocators. Each test switches
the profiler on in a child process: once on it stays on, and the other tests of this program
must not run under it. The profiler exists in release builds on Linux only: in the secure
and debug configurations both calls return false and write nothing.
*/
module mimalloc_tests.profile;

import core.stdc.stdio : fprintf, stderr;
import core.sys.posix.sys.wait : waitpid, WIFEXITED, WEXITSTATUS;
import core.sys.posix.unistd : fork, getpid, _exit;
import std.conv : to;
import std.experimental.allocator : dispose, makeArray;
import std.file : exists, getSize, mkdirRecurse, rmdirRecurse, tempDir;
import std.path : buildPath;

import mimalloc;

/// Whether this configuration of the C library has the profiler.
version (linux)
{
    version (MimallocSecure)
        enum bool profilerAvailable = false;
    else version (MimallocDebug)
        enum bool profilerAvailable = false;
    else
        enum bool profilerAvailable = true;
}
else
    enum bool profilerAvailable = false;

/// Runs `dg` in a child process and returns the child's process id once it has exited. A
/// failure in the child (an assertion, any Throwable) is printed there and fails the caller
/// here. The child never returns into the test runner.
int inChildProcess(scope void delegate() dg)
{
    const pid = fork();
    assert(pid >= 0, "fork failed");
    if (pid == 0)
    {
        int code = 0;
        try
            dg();
        catch (Throwable t)
        {
            try
            {
                const msg = t.toString();
                fprintf(stderr, "in the child process: %.*s\n", cast(int) msg.length, msg.ptr);
            }
            catch (Throwable)
            {
            }
            code = 1;
        }
        _exit(code);
    }
    int status;
    assert(waitpid(pid, &status, 0) == pid);
    assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child process failed (see above)");
    return pid;
}

/// A fresh directory under the temporary directory, for the dumps of one test.
string freshDir(string tag)
{
    const dir = buildPath(tempDir(), "mimalloc-d-" ~ tag ~ "-" ~ getpid().to!string);
    if (exists(dir))
        rmdirRecurse(dir);
    mkdirRecurse(dir);
    return dir;
}

/// The four files of a dump to `base` exist and are not empty; or, without the profiler,
/// none exists.
void checkDump(string base)
{
    foreach (suffix; profileFileSuffixes)
    {
        const file = base ~ suffix;
        static if (profilerAvailable)
        {
            assert(exists(file), file ~ " was not written");
            assert(getSize(file) > 0, file ~ " is empty");
        }
        else
            assert(!exists(file), file ~ " was written without the profiler");
    }
}

unittest // profileStart, allocations through the allocators, profileDump
{
    const dir = freshDir("profile");
    scope (exit)
        rmdirRecurse(dir);
    const base = buildPath(dir, "prof");
    const pattern = buildPath(dir, "pid-%p");

    const child = inChildProcess({
        assert(!profileDump(base), "a dump before the profiler is on");
        assert(profileStart(4096) == profilerAvailable);
        assert(profileStart() == profilerAvailable); // stays on, with the first rate

        // a few MB through the package's allocators: small, medium and large blocks, some kept
        size_t total;
        void[][] kept = Mimallocator.instance.makeArray!(void[])(1000);
        foreach (i; 0 .. 4000)
        {
            const size = [24, 200, 3000, 40_000][i % 4];
            auto b = Mimallocator.instance.allocate(size);
            assert(b.length == size);
            (cast(ubyte[]) b)[] = cast(ubyte) i;
            total += size;
            if (i % 4 == 0)
                kept[i / 4] = b;
            else
                Mimallocator.instance.deallocate(b);
        }
        auto longs = Mimallocator.instance.makeArray!long(1 << 18, 7); // 2 MiB
        assert(total + longs.length * long.sizeof > 4 << 20);
        auto heap = MiHeapAllocator.create();
        foreach (i; 0 .. 1000)
            assert(heap.allocate(100 + i).length == 100 + i);

        assert(profileDump(base) == profilerAvailable, "profileDump");
        assert(profileDump(pattern) == profilerAvailable, "profileDump with %p");

        heap.deallocateAll();
        foreach (b; kept)
            Mimallocator.instance.deallocate(b);
        Mimallocator.instance.dispose(kept);
        Mimallocator.instance.dispose(longs);
    });

    checkDump(base);
    checkDump(buildPath(dir, "pid-" ~ child.to!string));
}
