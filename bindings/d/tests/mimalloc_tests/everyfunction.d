// SPDX-License-Identifier: MIT
/**
Calls every C function declared in mimalloc.capi at least once, with sensible arguments,
and checks the results where they are meaningful. Each call goes through `c!"name"(...)`,
which records the name; the last test fails if any declared function was never called.
*/
module mimalloc_tests.everyfunction;

import core.stdc.errno : EINVAL;
import core.stdc.string : strlen, strcmp, memset;
import core.sys.posix.sys.mman : mmap, munmap, PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANON, MAP_FAILED;
import core.sys.posix.unistd : fork, _exit;
import core.sys.posix.sys.wait : waitpid, WIFEXITED, WEXITSTATUS;
import core.thread : Thread;
import std.algorithm : canFind, sort;
import std.array : array, join;
import std.format : format;
import std.traits : Parameters;

import mimalloc.capi;
static import mimalloc.capi;
import mimalloc_tests.headercheck : allDFunctionNames;

__gshared bool[string] called;

/// Calls the C function `name` and records the call.
template c(string name)
{
    alias fn = __traits(getMember, mimalloc.capi, name);

    auto c(Parameters!fn args)
    {
        synchronized called[name] = true;
        return fn(args);
    }
}

bool aligned(const void* p, size_t a)
{
    return (cast(size_t) p & (a - 1)) == 0;
}

bool allZero(const void* p, size_t n)
{
    foreach (b; (cast(const(ubyte)*) p)[0 .. n])
        if (b != 0)
            return false;
    return true;
}

// ---- output capture for the printers -------------------------------------------------------

__gshared char[] captured;

extern (C) void capture(const(char)* msg, void* arg) nothrow
{
    try
    {
        captured ~= msg[0 .. strlen(msg)];
        if (arg !is null)
            ++*cast(int*) arg;
    }
    catch (Exception)
    {
    }
}

string capturedText()
{
    auto s = captured.idup;
    captured = null;
    return s;
}

// ---- tests --------------------------------------------------------------------------------

unittest // basic, extended and usable-size allocation
{
    auto p = cast(ubyte*) c!"mi_malloc"(100);
    assert(p !is null && c!"mi_usable_size"(p) >= 100);
    p[0 .. 100] = 7;
    p = cast(ubyte*) c!"mi_realloc"(p, 1000);
    assert(p !is null && p[99] == 7);
    c!"mi_free"(p);

    auto z = c!"mi_calloc"(10, 10);
    assert(z !is null && allZero(z, 100));
    c!"mi_free"(z);
    assert(c!"mi_calloc"(size_t.max / 2, 4) is null); // overflow

    z = c!"mi_zalloc"(200);
    assert(allZero(z, 200));
    assert(c!"mi_expand"(z, 100) is z); // shrink in place
    c!"mi_free"(z);

    p = cast(ubyte*) c!"mi_mallocn"(10, 8);
    assert(p !is null);
    p = cast(ubyte*) c!"mi_reallocn"(p, 20, 8);
    assert(p !is null && c!"mi_usable_size"(p) >= 160);
    p = cast(ubyte*) c!"mi_reallocf"(p, 300);
    assert(p !is null);
    c!"mi_free"(p);
    assert(c!"mi_mallocn"(size_t.max / 2, 4) is null);

    assert(c!"mi_good_size"(100) >= 100);
    assert(c!"mi_usable_size"(null) == 0);

    auto s = c!"mi_strdup"("hello");
    assert(strcmp(s, "hello") == 0);
    c!"mi_free"(s);
    s = c!"mi_strndup"("hello world", 5);
    assert(strcmp(s, "hello") == 0);
    c!"mi_free"(s);
    s = c!"mi_realpath"("/tmp/../", null);
    assert(s !is null && strcmp(s, "/") == 0);
    c!"mi_free"(s);

    auto q = c!"mi_malloc_small"(MI_SMALL_SIZE_MAX);
    assert(q !is null);
    c!"mi_free_small"(q);
    q = c!"mi_zalloc_small"(64);
    assert(allZero(q, 64));
    c!"mi_free"(q);

    size_t bs, pre, post;
    q = c!"mi_umalloc"(50, &bs);
    assert(q !is null && bs >= 50);
    q = c!"mi_urealloc"(q, 5000, &pre, &post);
    assert(q !is null && pre == bs && post >= 5000);
    c!"mi_ufree"(q, &bs);
    assert(bs == post);
    q = c!"mi_ucalloc"(3, 7, &bs);
    assert(allZero(q, 21) && bs >= 21);
    c!"mi_free"(q);
    q = c!"mi_umalloc_aligned"(100, 256, &bs);
    assert(aligned(q, 256) && bs >= 100);
    c!"mi_free"(q);
    q = c!"mi_uzalloc_aligned"(100, 256, &bs);
    assert(aligned(q, 256) && allZero(q, 100));
    c!"mi_free"(q);
    q = c!"mi_umalloc_small"(32, &bs);
    assert(q !is null && bs >= 32);
    c!"mi_free"(q);
    q = c!"mi_uzalloc_small"(32, &bs);
    assert(allZero(q, 32) && bs >= 32);
    c!"mi_free"(q);
}

unittest // aligned allocation
{
    foreach (a; [16, 64, 4096, 1 << 16])
    {
        auto p = c!"mi_malloc_aligned"(100, a);
        assert(aligned(p, a));
        p = c!"mi_realloc_aligned"(p, 10_000, a);
        assert(aligned(p, a));
        c!"mi_free"(p);
    }
    assert(c!"mi_malloc_aligned"(100, 48) is null); // not a power of two

    auto p = cast(ubyte*) c!"mi_malloc_aligned_at"(100, 64, 16);
    assert(aligned(p + 16, 64));
    p = cast(ubyte*) c!"mi_realloc_aligned_at"(p, 500, 64, 16);
    assert(aligned(p + 16, 64));
    c!"mi_free"(p);
    p = cast(ubyte*) c!"mi_zalloc_aligned"(100, 128);
    assert(aligned(p, 128) && allZero(p, 100));
    c!"mi_free"(p);
    p = cast(ubyte*) c!"mi_zalloc_aligned_at"(100, 128, 8);
    assert(aligned(p + 8, 128) && allZero(p, 100));
    c!"mi_free"(p);
    p = cast(ubyte*) c!"mi_calloc_aligned"(10, 10, 256);
    assert(aligned(p, 256) && allZero(p, 100));
    c!"mi_free"(p);
    p = cast(ubyte*) c!"mi_calloc_aligned_at"(10, 10, 256, 32);
    assert(aligned(p + 32, 256) && allZero(p, 100));
    c!"mi_free"(p);
}

unittest // zero-initialised re-allocation
{
    auto p = c!"mi_zalloc"(10);
    p = c!"mi_rezalloc"(p, 1000);
    assert(allZero(p, 1000));
    p = c!"mi_recalloc"(p, 100, 20);
    assert(allZero(p, 2000));
    c!"mi_free"(p);
    p = c!"mi_zalloc_aligned"(10, 64);
    p = c!"mi_rezalloc_aligned"(p, 1000, 64);
    assert(aligned(p, 64) && allZero(p, 1000));
    p = c!"mi_recalloc_aligned"(p, 50, 50, 64);
    assert(aligned(p, 64) && allZero(p, 2500));
    c!"mi_free"(p);
    auto q = cast(ubyte*) c!"mi_zalloc_aligned_at"(10, 64, 8);
    q = cast(ubyte*) c!"mi_rezalloc_aligned_at"(q, 1000, 64, 8);
    assert(aligned(q + 8, 64) && allZero(q, 1000));
    q = cast(ubyte*) c!"mi_recalloc_aligned_at"(q, 30, 100, 64, 8);
    assert(aligned(q + 8, 64) && allZero(q, 3000));
    c!"mi_free"(q);
}

unittest // a shared heap: another thread allocates in it too, this thread frees its block
{
    auto sh = c!"mi_heap_new_shared"();
    assert(sh !is null);
    auto p = c!"mi_heap_malloc"(sh, 100);
    assert(c!"mi_heap_contains"(sh, p));
    void* q;
    auto t = new Thread({ q = mi_heap_malloc(sh, 200); assert(mi_heap_contains(sh, q)); });
    t.start();
    t.join();
    assert(q !is null && c!"mi_heap_contains"(sh, q)); // (the ended thread's part left its pages to the heap)
    c!"mi_free"(q);
    c!"mi_heap_destroy"(sh); // frees p with this thread's part
}

unittest // heaps
{
    auto h = c!"mi_heap_new"();
    assert(h !is null);
    auto p = cast(char*) c!"mi_heap_malloc"(h, 100);
    assert(c!"mi_heap_contains_block"(h, p));
    assert(c!"mi_heap_check_owned"(h, p + 48)); // any word-aligned pointer into its pages
    assert(!c!"mi_heap_contains_block"(c!"mi_heap_get_backing"(), p));
    assert(c!"mi_is_in_heap_region"(p));
    int local;
    assert(!c!"mi_is_in_heap_region"(&local));
    cast(void) c!"mi_unsafe_heap_page_is_under_utilized"(h, p, 50);
    // mimalloc v3's queries: the main heap is the thread's backing heap (docs/v3-api.md)
    assert(c!"mi_heap_main"() is c!"mi_heap_get_backing"());
    assert(c!"mi_heap_of"(p + 50) is h);
    assert(c!"mi_heap_of"(&local) is null);
    assert(c!"mi_heap_contains"(h, p));
    assert(!c!"mi_heap_contains"(null, p)); // null: the main heap
    assert(c!"mi_any_heap_contains"(p));
    assert(!c!"mi_any_heap_contains"(&local));

    void*[] blocks;
    blocks ~= c!"mi_heap_zalloc"(h, 64);
    assert(allZero(blocks[$ - 1], 64));
    blocks ~= c!"mi_heap_calloc"(h, 8, 8);
    assert(allZero(blocks[$ - 1], 64));
    blocks ~= c!"mi_heap_mallocn"(h, 8, 8);
    blocks ~= c!"mi_heap_malloc_small"(h, 16);
    blocks ~= c!"mi_heap_zalloc_small"(h, 16);
    assert(allZero(blocks[$ - 1], 16));
    blocks ~= c!"mi_heap_strdup"(h, "abc");
    assert(strcmp(cast(char*) blocks[$ - 1], "abc") == 0);
    blocks ~= c!"mi_heap_strndup"(h, "abcdef", 2);
    assert(strcmp(cast(char*) blocks[$ - 1], "ab") == 0);
    blocks ~= c!"mi_heap_realpath"(h, "/", null);
    assert(strcmp(cast(char*) blocks[$ - 1], "/") == 0);
    blocks ~= c!"mi_heap_malloc_aligned"(h, 100, 512);
    assert(aligned(blocks[$ - 1], 512));
    blocks ~= c!"mi_heap_malloc_aligned_at"(h, 100, 512, 16);
    assert(aligned(blocks[$ - 1] + 16, 512));
    blocks ~= c!"mi_heap_zalloc_aligned"(h, 100, 512);
    assert(aligned(blocks[$ - 1], 512) && allZero(blocks[$ - 1], 100));
    blocks ~= c!"mi_heap_zalloc_aligned_at"(h, 100, 512, 16);
    assert(aligned(blocks[$ - 1] + 16, 512) && allZero(blocks[$ - 1], 100));
    blocks ~= c!"mi_heap_calloc_aligned"(h, 10, 10, 512);
    assert(aligned(blocks[$ - 1], 512) && allZero(blocks[$ - 1], 100));
    blocks ~= c!"mi_heap_calloc_aligned_at"(h, 10, 10, 512, 16);
    assert(aligned(blocks[$ - 1] + 16, 512) && allZero(blocks[$ - 1], 100));
    blocks ~= c!"mi_heap_alloc_new"(h, 100);
    blocks ~= c!"mi_heap_alloc_new_n"(h, 10, 10);
    foreach (b; blocks)
    {
        assert(b !is null);
        assert(c!"mi_heap_contains_block"(h, b));
    }

    p = cast(char*) c!"mi_heap_realloc"(h, p, 2000);
    p = cast(char*) c!"mi_heap_reallocn"(h, p, 10, 300);
    p = cast(char*) c!"mi_heap_reallocf"(h, p, 100);
    p = cast(char*) c!"mi_heap_realloc_aligned"(h, p, 300, 256);
    assert(aligned(p, 256));
    p = cast(char*) c!"mi_heap_realloc_aligned_at"(h, p, 600, 256, 16);
    assert(aligned(p + 16, 256) && c!"mi_heap_contains_block"(h, p));
    auto z = c!"mi_heap_zalloc"(h, 10);
    z = c!"mi_heap_rezalloc"(h, z, 500);
    assert(allZero(z, 500));
    z = c!"mi_heap_recalloc"(h, z, 10, 100);
    assert(allZero(z, 1000));
    z = c!"mi_heap_rezalloc_aligned"(h, z, 2000, 128);
    assert(aligned(z, 128) && allZero(z, 2000));
    z = c!"mi_heap_recalloc_aligned"(h, z, 30, 100, 128);
    assert(aligned(z, 128) && allZero(z, 3000));
    z = c!"mi_heap_rezalloc_aligned_at"(h, z, 4000, 128, 8);
    assert(aligned(z + 8, 128) && allZero(z, 4000));
    z = c!"mi_heap_recalloc_aligned_at"(h, z, 50, 100, 128, 8);
    assert(aligned(z + 8, 128) && allZero(z, 5000));

    static struct Count { size_t areas, blocks, used; }
    static extern (C) bool visit(const(mi_heap_t)*, const(mi_heap_area_t)* area, void* block,
                                 size_t, void* arg) nothrow
    {
        auto n = cast(Count*) arg;
        if (block is null)
        {
            n.areas++;
            n.used += area.used;
        }
        else
            n.blocks++;
        return true;
    }
    Count n;
    assert(c!"mi_heap_visit_blocks"(h, true, &visit, &n));
    assert(n.areas > 0 && n.blocks == n.used && n.blocks == blocks.length + 2);

    c!"mi_heap_guarded_set_sample_rate"(h, 0, 0);
    c!"mi_heap_guarded_set_size_bound"(h, 0, 1 << 20);

    auto old = c!"mi_heap_set_default"(h);
    assert(c!"mi_heap_get_default"() is h);
    auto d = c!"mi_malloc"(10);
    assert(c!"mi_heap_contains_block"(h, d));
    assert(c!"mi_check_owned"(d));
    c!"mi_free"(d);
    assert(c!"mi_heap_set_default"(old) is h);
    assert(c!"mi_heap_get_default"() is old);

    c!"mi_heap_collect"(h, true);
    c!"mi_heap_destroy"(h); // frees every block above

    // a deleted heap's blocks stay valid
    auto h2 = c!"mi_heap_new_ex"(1, false, 0);
    auto keep = cast(ubyte*) c!"mi_heap_malloc"(h2, 100);
    keep[0 .. 100] = 5;
    c!"mi_heap_delete"(h2);
    assert(keep[99] == 5 && c!"mi_is_in_heap_region"(keep));
    c!"mi_free"(keep);
}

unittest // arenas, OS memory, huge pages (none requested)
{
    mi_arena_id_t id = -5;
    assert(c!"mi_reserve_os_memory_ex"(16 << 20, false, false, true, &id) == 0);
    assert(id > 0);
    size_t size;
    auto start = cast(ubyte*) c!"mi_arena_area"(id, &size);
    assert(start !is null && size >= 16 << 20);
    auto h = c!"mi_heap_new_in_arena"(id);
    assert(h !is null);
    auto p = cast(ubyte*) c!"mi_heap_malloc"(h, 1000);
    assert(p >= start && p < start + size, "block of an arena heap outside its arena");
    c!"mi_free"(p);
    c!"mi_heap_delete"(h); // mi_heap_new_in_arena heaps cannot be destroyed (as in mimalloc)
    auto sh = c!"mi_heap_new_shared_in_arena"(id); // a shared heap in the arena
    assert(sh !is null);
    p = cast(ubyte*) c!"mi_heap_malloc"(sh, 1000);
    assert(p >= start && p < start + size, "block of a shared arena heap outside its arena");
    c!"mi_free"(p);
    c!"mi_heap_delete"(sh);
    assert(c!"mi_arena_contains"(id, start) && c!"mi_arena_contains"(id, start + size - 1));
    assert(!c!"mi_arena_contains"(id, start + size) && !c!"mi_arena_contains"(12345, start));
    assert(c!"mi_arena_area"(12345, &size) is null);
    assert(c!"mi_arena_min_size"() >= 64 << 10 && c!"mi_arena_min_alignment"() >= 64 << 10);

    assert(c!"mi_reserve_os_memory"(8 << 20, false, false) == 0);

    // memory of our own, handed over for good (never unmapped)
    enum len = 32 << 20;
    auto m = mmap(null, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    assert(m != MAP_FAILED);
    mi_arena_id_t mid;
    assert(c!"mi_manage_os_memory_ex"(m, len / 2, true, false, true, -1, true, &mid));
    assert(mid > 0);
    auto hm = c!"mi_heap_new_ex"(0, true, mid);
    auto q = cast(ubyte*) c!"mi_heap_malloc"(hm, 100);
    assert(q >= cast(ubyte*) m && q < cast(ubyte*) m + len / 2);
    c!"mi_heap_destroy"(hm);
    assert(c!"mi_manage_os_memory"(m + len / 2, len / 2, true, false, true, -1));

    // zero pages: succeeds at once without asking the OS for 1 GiB pages
    assert(c!"mi_reserve_huge_os_pages_interleave"(0, 0, 0) == 0);
    assert(c!"mi_reserve_huge_os_pages_at"(0, 0, 0) == 0);
    assert(c!"mi_reserve_huge_os_pages_at_ex"(0, -1, 0, false, &id) == 0);
    size_t reserved = 99;
    assert(c!"mi_reserve_huge_os_pages"(0, 0.0, &reserved) == 0);
    assert(reserved == 0);

    auto cnt = 0;
    c!"mi_register_output"(&capture, &cnt);
    c!"mi_debug_show_arenas"();
    assert(capturedText().length > 0);
    c!"mi_arenas_print"();
    assert(capturedText().length > 0);
    c!"mi_register_output"(null, null);
}

unittest // statistics, process information, output, error and deferred-free registration
{
    int calls;
    c!"mi_register_output"(&capture, &calls);
    scope (exit) c!"mi_register_output"(null, null);

    c!"mi_stats_merge"();
    c!"mi_stats_print_out"(&capture, &calls);
    auto text = capturedText();
    assert(text.length > 100 && calls > 0);
    c!"mi_thread_stats_print_out"(&capture, null);
    cast(void) capturedText();
    c!"mi_stats_print"(cast(void*) &capture); // legacy form: the output function as void*
    assert(capturedText().length > 100);
    c!"mi_options_print"();
    assert(capturedText().canFind("purge_delay"));
    c!"mi_options_print_out"(&capture, &calls);
    assert(capturedText().canFind("purge_delay"));
    // the memory limit: set, read back (rounded up to KiB), off again
    c!"mi_memory_limit_set"(300 * 1024 * 1024 + 1);
    assert(c!"mi_memory_limit"() == 300 * 1024 * 1024 + 1024);
    c!"mi_memory_limit_set"(0);
    assert(c!"mi_memory_limit"() == 0);
    c!"mi_process_info_print_out"(&capture, &calls);
    assert(capturedText().canFind("peak rss"));
    c!"mi_process_info_print"();
    assert(capturedText().canFind("elapsed"));

    auto st = mi_stats_t_init();
    assert(c!"mi_stats_get"(&st));
    assert(st.size == mi_stats_t.sizeof && st.version_ == MI_STAT_VERSION);
    assert(st.reserved.current > 0 && st.committed.current > 0 && st.segments.current > 0,
           format!"reserved %s committed %s segments %s"(st.reserved.current, st.committed.current, st.segments.current));
    auto bad = mi_stats_t_init();
    bad.version_ = 3;
    assert(!c!"mi_stats_get"(&bad));
    auto json = c!"mi_stats_get_json"(0, null);
    assert(json !is null && json[0] == '{');
    c!"mi_free"(json);
    char[4] small;
    assert(c!"mi_stats_get_json"(small.length, small.ptr) is null);
    c!"mi_stats_reset"();

    size_t elapsed = size_t.max, user, sys, rss, peak_rss, commit, peak_commit, faults;
    c!"mi_process_info"(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
    assert(elapsed != size_t.max && rss > 0 && peak_rss >= rss);

    // error callback: a free of memory that is not ours is reported (EINVAL) and ignored
    static extern (C) void onError(int err, void* arg) nothrow
    {
        *cast(int*) arg = err;
    }
    int err;
    c!"mi_register_error"(&onError, &err);
    long[4] notOurs;
    c!"mi_free"(&notOurs[1]);
    c!"mi_register_error"(null, null);
    assert(err == EINVAL, format!"error callback got %s"(err));
    cast(void) capturedText();

    // deferred free: run by a forced collect
    static extern (C) void deferred(bool force, ulong heartbeat, void* arg) nothrow
    {
        if (force)
            ++*cast(ulong*) arg;
    }
    ulong forced;
    c!"mi_register_deferred_free"(&deferred, &forced);
    c!"mi_collect"(true);
    c!"mi_register_deferred_free"(null, null);
    assert(forced > 0);
    c!"mi_collect_reduce"(1);
}

unittest // options
{
    with (mi_option_t)
    {
        const old = c!"mi_option_get"(mi_option_max_warnings);
        c!"mi_option_set"(mi_option_max_warnings, 7);
        assert(c!"mi_option_get"(mi_option_max_warnings) == 7);
        assert(c!"mi_option_get_clamp"(mi_option_max_warnings, 0, 5) == 5);
        c!"mi_option_set_default"(mi_option_max_warnings, 9); // explicitly set: no effect
        assert(c!"mi_option_get"(mi_option_max_warnings) == 7);
        c!"mi_option_set"(mi_option_max_warnings, old);

        // a boolean option that is accepted and has no effect
        c!"mi_option_enable"(mi_option_abandoned_reclaim_on_free);
        assert(c!"mi_option_is_enabled"(mi_option_abandoned_reclaim_on_free));
        c!"mi_option_disable"(mi_option_abandoned_reclaim_on_free);
        assert(!c!"mi_option_is_enabled"(mi_option_abandoned_reclaim_on_free));
        c!"mi_option_set_enabled"(mi_option_abandoned_reclaim_on_free, true);
        assert(c!"mi_option_is_enabled"(mi_option_abandoned_reclaim_on_free));
        c!"mi_option_set_enabled_default"(mi_option_abandoned_reclaim_on_free, false);
        assert(c!"mi_option_is_enabled"(mi_option_abandoned_reclaim_on_free));
        c!"mi_option_set_enabled"(mi_option_abandoned_reclaim_on_free, false);

        // KiB-valued option, reported in bytes (default 1 GiB unless the environment says)
        assert(c!"mi_option_get_size"(mi_option_arena_reserve)
               == cast(size_t) c!"mi_option_get"(mi_option_arena_reserve) * 1024);
    }
    // the plain C names exist too
    assert(mi_option_verbose == mi_option_t.mi_option_verbose && mi_option_reset_delay == 15);
}

unittest // this implementation's own options: the live statistics (docs/live.md)
{
    import core.stdc.stdlib : getenv;

    // off unless MIMALLOC_LIVE says otherwise (not enabled here: that would create
    // /dev/shm/mimalloc-live.<pid>)
    if (getenv("MIMALLOC_LIVE") is null)
    {
        assert(!c!"mi_option_is_enabled"(mi_option_live));
        assert(c!"mi_option_get"(mi_option_live) == 0);
    }
    // the interval (ms), set and read back, clamped to 10..60000
    const old = c!"mi_option_get"(mi_option_live_interval);
    c!"mi_option_set"(mi_option_live_interval, 250);
    assert(c!"mi_option_get"(mi_option_live_interval) == 250);
    c!"mi_option_set"(mi_option_live_interval, 5);
    assert(c!"mi_option_get"(mi_option_live_interval) == 10);
    c!"mi_option_set"(mi_option_live_interval, 100_000);
    assert(c!"mi_option_get"(mi_option_live_interval) == 60_000);
    c!"mi_option_set"(mi_option_live_interval, old);
}

unittest // process/thread life cycle, subprocesses, version, misc
{
    c!"mi_process_init"();
    c!"mi_thread_init"();
    c!"mi_thread_set_in_threadpool"();
    assert(!c!"mi_is_redirected"());
    assert(c!"mi_version"() == MI_MALLOC_VERSION);

    // a thread that allocates, frees into the main thread's heap, and ends explicitly
    auto mainBlock = c!"mi_malloc"(64);
    auto t = new Thread({
        c!"mi_thread_init"();
        auto p = c!"mi_malloc"(100);
        c!"mi_free"(mainBlock); // cross-thread free
        c!"mi_free"(p);
        c!"mi_thread_done"();
    });
    t.start();
    t.join();

    // a thread in a subprocess of its own; its block is abandoned when it ends and is then
    // visible to mi_abandoned_visit_blocks (which needs MIMALLOC_VISIT_ABANDONED: without it
    // the call reports EFAULT, which aborts debug and secure builds)
    c!"mi_option_enable"(mi_option_visit_abandoned);
    auto sub = c!"mi_subproc_new"();
    assert(sub !is null && sub != c!"mi_subproc_main"());
    assert(c!"mi_subproc_current"() == c!"mi_subproc_main"());
    __gshared void* left;
    auto t2 = new Thread({
        c!"mi_subproc_add_current_thread"(sub);
        left = c!"mi_malloc"(100); // abandoned with the thread, freed below
    });
    t2.start();
    t2.join();
    __gshared size_t nvisited;
    static extern (C) bool findLeft(const(mi_heap_t)*, const(mi_heap_area_t)*, void* block, size_t, void* arg) nothrow
    {
        if (block !is null) nvisited++;
        if (block !is null && block is left)
            *cast(bool*) arg = true;
        return true;
    }
    bool found;
    assert(c!"mi_abandoned_visit_blocks"(sub, -1, true, &findLeft, &found));
    version (MimallocOverride)
    {
        // druntime's thread start-up mallocs before the thread joins the subprocess, so its
        // first segment (and `left` in it) belongs to the main subprocess
        if (!found)
            assert(c!"mi_abandoned_visit_blocks"(null, -1, true, &findLeft, &found));
    }
    assert(found, format!"the abandoned block was not visited (%s blocks visited)"(nvisited));
    c!"mi_free"(left);
    c!"mi_subproc_delete"(sub);

    // process shutdown, in a child process
    const pid = fork();
    assert(pid >= 0);
    if (pid == 0)
    {
        c!"mi_process_done"();
        _exit(0);
    }
    int status;
    assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    called["mi_process_done"] = true; // recorded in the child's memory only
}

unittest // POSIX / Unix / Windows compatibility
{
    auto p = c!"mi_malloc"(100);
    assert(c!"mi_malloc_size"(p) >= 100 && c!"mi_malloc_usable_size"(p) >= 100);
    assert(c!"mi_malloc_good_size"(100) >= 100);
    assert(c!"mi__expand"(p, 50) is p);
    c!"mi_cfree"(p);
    long notOurs;
    c!"mi_cfree"(&notOurs); // ignored: not ours

    void* q;
    assert(c!"mi_posix_memalign"(&q, 64, 100) == 0 && aligned(q, 64));
    c!"mi_free"(q);
    q = cast(void*) 1;
    assert(c!"mi_posix_memalign"(&q, 24, 100) == EINVAL && q is cast(void*) 1);
    q = c!"mi_memalign"(128, 100);
    assert(aligned(q, 128));
    c!"mi_free_aligned"(q, 128);
    q = c!"mi_valloc"(100);
    assert(aligned(q, 4096));
    c!"mi_free"(q);
    q = c!"mi_pvalloc"(100);
    assert(aligned(q, 4096) && c!"mi_usable_size"(q) >= 4096);
    c!"mi_free"(q);
    q = c!"mi_aligned_alloc"(256, 512);
    assert(aligned(q, 256));
    c!"mi_free_size_aligned"(q, 512, 256);

    q = c!"mi_reallocarray"(null, 10, 10);
    assert(q !is null);
    assert(c!"mi_reallocarray"(q, size_t.max / 2, 4) is null); // overflow, q still valid
    assert(c!"mi_reallocarr"(&q, 100, 10) == 0 && c!"mi_usable_size"(q) >= 1000);
    c!"mi_free_size"(q, 1000);

    q = c!"mi_aligned_recalloc"(null, 10, 10, 64);
    assert(aligned(q, 64) && allZero(q, 100));
    q = c!"mi_aligned_recalloc"(q, 100, 10, 64);
    assert(aligned(q, 64) && allZero(q, 1000));
    c!"mi_free"(q);
    auto r = cast(ubyte*) c!"mi_aligned_offset_recalloc"(null, 10, 10, 64, 16);
    assert(aligned(r + 16, 64) && allZero(r, 100));
    c!"mi_free"(r);

    char* env;
    size_t len;
    assert(c!"mi_dupenv_s"(&env, &len, "MIMALLOC_D_TEST_UNSET_VARIABLE") == 0 && env is null);
    assert(c!"mi_dupenv_s"(&env, &len, "PATH") == 0 && env !is null && len == strlen(env) + 1);
    c!"mi_free"(env);
    import core.stdc.stddef : wchar_t;
    wchar_t* wenv;
    // wide environment strings exist only on Windows
    assert(c!"mi_wdupenv_s"(&wenv, &len, "PATH"d.ptr) == EINVAL && wenv is null);
    auto w = c!"mi_wcsdup"("wide"d.ptr);
    assert(w[0 .. 5] == "wide\0"d);
    c!"mi_free"(w);
    auto mb = c!"mi_mbsdup"(cast(const(ubyte)*) "bytes".ptr);
    assert(strcmp(cast(char*) mb, "bytes") == 0);
    c!"mi_free"(mb);
}

unittest // the C++ helpers (only their success paths: failure aborts without a C++ runtime)
{
    void*[] ps;
    ps ~= c!"mi_new"(100);
    ps ~= c!"mi_new_aligned"(100, 256);
    assert(aligned(ps[$ - 1], 256));
    ps ~= c!"mi_new_nothrow"(100);
    ps ~= c!"mi_new_aligned_nothrow"(100, 256);
    assert(aligned(ps[$ - 1], 256));
    ps ~= c!"mi_new_n"(10, 10);
    auto p = c!"mi_new_realloc"(c!"mi_new"(10), 1000);
    p = c!"mi_new_reallocn"(p, 100, 20);
    assert(c!"mi_usable_size"(p) >= 2000);
    ps ~= p;
    foreach (q; ps)
    {
        assert(q !is null);
        c!"mi_free"(q);
    }
    assert(c!"mi_new_nothrow"(size_t.max / 2) is null);
}

unittest // the sampling heap profiler, in a child process (once on it stays on)
{
    import std.conv : to;
    import std.path : buildPath;
    import std.string : toStringz;
    import mimalloc_tests.profile : checkDump, freshDir, inChildProcess, profilerAvailable;

    const dir = freshDir("everyfunction");
    scope (exit)
    {
        import std.file : rmdirRecurse;
        rmdirRecurse(dir);
    }
    const base = buildPath(dir, "prof");
    const pattern = buildPath(dir, "pid-%p");
    const child = inChildProcess({
        assert(!c!"mi_profile_dump"(base.toStringz), "a dump before the profiler is on");
        assert(c!"mi_profile_start"(4096) == profilerAvailable);
        assert(c!"mi_profile_start"(0) == profilerAvailable); // stays on, with the first rate
        // a few MB: small, medium and large blocks, one in four kept until after the dump
        void*[1000] kept;
        foreach (i; 0 .. 4000)
        {
            const size = [24, 200, 3000, 40_000][i % 4];
            auto p = c!"mi_malloc"(size);
            memset(p, i & 0xFF, size);
            if (i % 4 == 0)
                kept[i / 4] = p;
            else
                c!"mi_free"(p);
        }
        assert(c!"mi_profile_dump"(base.toStringz) == profilerAvailable);
        assert(c!"mi_profile_dump"(pattern.toStringz) == profilerAvailable);
        assert(!c!"mi_profile_dump"(null) && !c!"mi_profile_dump"(""));
        foreach (p; kept)
            c!"mi_free"(p);
    });
    checkDump(base);
    checkDump(buildPath(dir, "pid-" ~ child.to!string));
    called["mi_profile_start"] = true; // recorded in the child's memory only
    called["mi_profile_dump"] = true;
}

unittest // keep last: every declared function was called by the tests above
{
    string[] missing;
    foreach (name; allDFunctionNames())
        if (name !in called)
            missing ~= name;
    assert(missing.length == 0, "functions never called by the tests: " ~ missing.join(", "));
    assert(called.length >= 150);
}
