// SPDX-License-Identifier: MIT
/**
Calls every function of mimalloc.v3 (mimalloc v3's API) at least once, with results that
tell v3's meaning from v2's: a heap that several threads allocate in and free across, then
deleted or destroyed; the main heap, the same in every thread; theaps; options by v3's
numbers; arenas by pointer id; subprocesses by struct. Each call goes through `v!"name"(...)`;
the last test fails if a function of the module was never called.
*/
module mimalloc_tests.v3;

import core.atomic : atomicOp;
import core.sync.barrier : Barrier;
import core.thread : Thread;
import std.algorithm : sort;
import std.array : array, join;
import std.traits : Parameters;

static import mimalloc.capi;
static import mimalloc.v3;
import mimalloc.capi : mi_heap_t, mi_free, mi_malloc, mi_heap_malloc, mi_heap_delete, mi_heap_destroy,
    mi_usable_size, mi_heap_get_backing;
import mimalloc.v3 : mi_theap_t, mi_arena_id_t, mi_subproc_id_t, mi_option_t, mi_heap_area_t;

__gshared bool[string] calledV3;

/// Calls the function `name` of mimalloc.v3 and records the call.
template v(string name)
{
    alias fn = __traits(getMember, mimalloc.v3, name);

    auto v(Parameters!fn args)
    {
        synchronized calledV3[name] = true;
        return fn(args);
    }
}

unittest // a heap any thread allocates in: 4 threads, frees across threads, delete and destroy
{
    enum threads = 4, blocks = 400;
    foreach (destroy; [false, true])
    {
        mi_heap_t* heap = v!"mi_heap_new"();
        assert(heap !is null);
        __gshared void*[blocks][threads] slots;
        auto barrier = new Barrier(threads);
        // each thread's delegate gets its own frame (a loop variable is shared by closures)
        Thread worker(size_t t)
        {
            return new Thread({
                foreach (i; 0 .. blocks)
                {
                    auto p = cast(ubyte*) mi_heap_malloc(heap, 16 + i % 100);
                    assert(p !is null);
                    *p = cast(ubyte) t;
                    assert(v!"mi_heap_contains"(heap, p), "v3: the block is the heap's");
                    slots[t][i] = p;
                }
                barrier.wait();
                if (!destroy)
                    foreach (p; slots[(t + 1) % threads])   // the next thread's blocks
                    {
                        assert(*cast(ubyte*) p == (t + 1) % threads);
                        mi_free(p);
                    }
            });
        }
        Thread[] ts;
        foreach (t; 0 .. threads)
            ts ~= worker(t);
        foreach (th; ts)
            th.start();
        foreach (th; ts)
            th.join();
        auto p = mi_heap_malloc(heap, 100);   // this thread uses it too
        assert(p !is null);
        if (destroy)
            mi_heap_destroy(heap);
        else
        {
            mi_free(p);
            mi_heap_delete(heap);
        }
    }
}

unittest // the main heap: one heap for all threads, never deleted
{
    auto main = v!"mi_heap_main"();
    assert(main !is null && main != mi_heap_get_backing());
    __gshared mi_heap_t* other;
    __gshared void* fromOther;
    auto th = new Thread({ other = v!"mi_heap_main"(); fromOther = mi_heap_malloc(other, 24); });
    th.start();
    th.join();
    assert(other == main && fromOther !is null);
    mi_free(fromOther);
    auto p = mi_malloc(40);
    assert(v!"mi_heap_of"(p) == main, "a default block is the main heap's");
    assert(v!"mi_heap_contains"(main, p) && v!"mi_heap_contains"(null, p));
    mi_heap_delete(main);                       // refused: it still works
    auto q = mi_heap_malloc(main, 8);
    assert(q !is null && v!"mi_heap_of"(q) == main);
    mi_free(p);
    mi_free(q);
    int stack;
    assert(v!"mi_heap_of"(&stack) is null);
}

unittest // mi_check_owned: any heap of any thread (v2's looks in the thread's default heap)
{
    __gshared void* p;
    auto th = new Thread({ p = mi_malloc(64); });
    th.start();
    th.join();
    assert(v!"mi_check_owned"(p));
    assert(!mimalloc.capi.mi_check_owned(p));
    int stack;
    assert(!v!"mi_check_owned"(&stack));
    mi_free(p);
}

struct Count
{
    size_t areas, blocks;
}

extern (C) bool countBlocks(const(mi_heap_t)* heap, const(mi_heap_area_t)* area, void* block,
                            size_t size, void* arg) nothrow
{
    auto c = cast(Count*) arg;
    if (block is null)
        c.areas++;
    else
        c.blocks++;
    return true;
}

unittest // theaps
{
    auto heap = v!"mi_heap_new"();
    mi_theap_t* theap = v!"mi_heap_theap"(heap);
    assert(theap !is null && v!"mi_heap_theap"(heap) == theap);
    __gshared mi_theap_t* other;
    __gshared mi_heap_t* sharedHeap;
    sharedHeap = heap;
    auto th = new Thread({ other = v!"mi_heap_theap"(sharedHeap); });
    th.start();
    th.join();
    assert(other !is null && other != theap, "another thread gets another part");
    assert(v!"mi_heap_theap"(null) == v!"mi_theap_get_default"());
    assert(v!"mi_heap_theap"(v!"mi_heap_main"()) == v!"mi_theap_get_default"());

    auto a = cast(ubyte*) v!"mi_theap_malloc"(theap, 100);
    auto z = cast(ubyte*) v!"mi_theap_zalloc"(theap, 300);
    auto c = cast(ubyte*) v!"mi_theap_calloc"(theap, 10, 30);
    auto s = cast(ubyte*) v!"mi_theap_malloc_small"(theap, 64);
    auto zs = cast(ubyte*) v!"mi_theap_zalloc_small"(theap, 128);
    auto al = cast(ubyte*) v!"mi_theap_malloc_aligned"(theap, 100, 256);
    foreach (p; [a, z, c, s, zs, al])
        assert(p !is null && v!"mi_heap_contains"(heap, p), "a theap's block is its heap's");
    foreach (i; 0 .. 300)
        assert(z[i] == 0 && c[i] == 0);
    foreach (i; 0 .. 128)
        assert(zs[i] == 0);
    assert((cast(size_t) al & 255) == 0);
    assert(v!"mi_theap_calloc"(theap, size_t.max, 2) is null, "overflow");
    a[0 .. 100] = 9;
    auto a2 = cast(ubyte*) v!"mi_theap_realloc"(theap, a, 5000);
    assert(a2 !is null && a2[99] == 9 && mi_usable_size(a2) >= 5000);

    Count n;
    assert(v!"mi_theap_visit_blocks"(theap, true, &countBlocks, &n));
    assert(n.blocks == 6 && n.areas >= 1);

    // guarded builds only; elsewhere no effect: the theap keeps allocating
    v!"mi_theap_guarded_set_sample_rate"(theap, 1, 0);
    v!"mi_theap_guarded_set_size_bound"(theap, 0, 1 << 20);
    auto g = v!"mi_theap_malloc"(theap, 64);
    assert(g !is null);
    foreach (p; [cast(void*) a2, cast(void*) z, cast(void*) c, cast(void*) s, cast(void*) zs, cast(void*) al, g])
        mi_free(p);
    v!"mi_theap_collect"(theap, true);
    n = Count.init;
    assert(v!"mi_theap_visit_blocks"(theap, true, &countBlocks, &n));
    assert(n.blocks == 0, "freed and collected");

    // the thread's part of a shared heap as its default theap: mi_malloc allocates in the heap
    auto dflt = v!"mi_theap_get_default"();
    assert(v!"mi_theap_set_default"(theap) == dflt);
    assert(v!"mi_theap_get_default"() == theap);
    auto p = mi_malloc(40);
    assert(p !is null && v!"mi_heap_of"(p) == heap && v!"mi_heap_contains"(heap, p));
    assert(v!"mi_theap_set_default"(dflt) == theap);
    assert(v!"mi_theap_get_default"() == dflt);
    // deleting the heap while its part is the default sets the default back; the block stays
    assert(v!"mi_theap_set_default"(theap) == dflt);
    mi_heap_delete(heap);
    assert(v!"mi_theap_get_default"() == dflt);
    mi_free(p);
}

unittest // options by v3's numbers
{
    import mimalloc.v3 : o = mi_option_t;
    // generic_collect is v3's 34, v2's 36; allow_thp v3's 43, v2's 37
    assert(v!"mi_option_get"(o.mi_option_allow_thp) == mimalloc.capi.mi_option_get(mimalloc.capi.mi_option_t.mi_option_allow_thp));
    v!"mi_option_set"(o.mi_option_generic_collect, 12345);
    assert(mimalloc.capi.mi_option_get(mimalloc.capi.mi_option_t.mi_option_generic_collect) == 12345);
    assert(v!"mi_option_get_clamp"(o.mi_option_generic_collect, 0, 100) == 100);
    // a v3-only option keeps what the program sets
    v!"mi_option_set"(o.mi_option_page_max_candidates, 7);
    v!"mi_option_set_default"(o.mi_option_page_max_candidates, 99);   // already set: kept
    assert(v!"mi_option_get"(o.mi_option_page_max_candidates) == 7);
    v!"mi_option_disable"(o.mi_option_page_full_retain);
    assert(!v!"mi_option_is_enabled"(o.mi_option_page_full_retain));
    v!"mi_option_enable"(o.mi_option_page_full_retain);
    assert(v!"mi_option_is_enabled"(o.mi_option_page_full_retain));
    v!"mi_option_set_enabled"(o.mi_option_page_full_retain, false);
    v!"mi_option_set_enabled_default"(o.mi_option_page_full_retain, true);   // already set
    assert(v!"mi_option_get"(o.mi_option_page_full_retain) == 0);
    v!"mi_option_set"(o.mi_option_arena_max_object_size, 3);            // KiB
    assert(v!"mi_option_get_size"(o.mi_option_arena_max_object_size) == 3 * 1024);
}

unittest // arenas by pointer id
{
    mi_arena_id_t id;
    assert(v!"mi_reserve_os_memory_ex"(64 << 20, false, false, true, &id) == 0 && id !is null);
    size_t size;
    auto start = v!"mi_arena_area"(id, &size);
    assert(start !is null && size >= 32 << 20);
    auto heap = v!"mi_heap_new_in_arena"(id);
    assert(heap !is null);
    auto p = mi_heap_malloc(heap, 1000);
    assert(p !is null && v!"mi_arena_contains"(id, p));
    auto q = mi_malloc(1000);
    assert(!v!"mi_arena_contains"(id, q), "a default block is in no exclusive arena");
    mi_free(p);
    mi_free(q);
    mi_heap_delete(heap);

    import core.sys.posix.sys.mman : mmap, PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANON, MAP_FAILED;
    const min = mimalloc.capi.mi_arena_min_size(), align_ = mimalloc.capi.mi_arena_min_alignment();
    auto raw = cast(ubyte*) mmap(null, 3 * min + align_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    assert(raw != MAP_FAILED);
    auto mem = cast(ubyte*) ((cast(size_t) raw + align_ - 1) & ~(align_ - 1));   // kept by the arena
    mi_arena_id_t id2;
    assert(v!"mi_manage_os_memory_ex"(mem, 2 * min, true, false, true, -1, true, &id2));
    assert(id2 !is null && id2 != id && v!"mi_arena_contains"(id2, mem + min));

    // memory whose commits are the program's: counted here (it is accessible already)
    static shared size_t[2] calls;
    static extern (C) bool count(bool commit, void* start, size_t size, bool* is_zero, void* arg) nothrow
    {
        assert(cast(size_t) arg == 42 && commit == (is_zero !is null));
        atomicOp!"+="(calls[commit], 1);
        return true;
    }
    auto raw4 = cast(ubyte*) mmap(null, 3 * min + align_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    assert(raw4 != MAP_FAILED);
    auto mem4 = cast(ubyte*) ((cast(size_t) raw4 + align_ - 1) & ~(align_ - 1));   // kept by the arena
    mi_arena_id_t id4;
    assert(v!"mi_manage_memory"(mem4, 2 * min, false, false, false, -1, true, &count, cast(void*) 42, &id4));
    assert(id4 !is null && v!"mi_arena_contains"(id4, mem4) && calls[1] == 0);
    auto heap4 = v!"mi_heap_new_in_arena"(id4);
    auto p4 = mi_heap_malloc(heap4, 100_000);
    assert(p4 !is null && v!"mi_arena_contains"(id4, p4) && calls[1] >= 1);
    mi_free(p4);
    mi_heap_delete(heap4);
    mimalloc.capi.mi_collect(true);
    assert(calls[0] >= 1);

    // 1 GiB pages are rarely there: either an arena or a null id
    mi_arena_id_t id3 = cast(void*) 1;
    const err = v!"mi_reserve_huge_os_pages_at_ex"(1, -1, 10, true, &id3);
    assert((err == 0) == (id3 !is null));
}

unittest // subprocesses by struct
{
    auto main = v!"mi_subproc_main"();
    assert(main._mi_subproc_id is null && v!"mi_subproc_current"() == main);
    __gshared mi_subproc_id_t sp, seen;
    sp = v!"mi_subproc_new"();
    assert(sp._mi_subproc_id !is null);
    auto th = new Thread({
        v!"mi_subproc_add_current_thread"(sp);
        mi_free(mi_malloc(10));
        seen = v!"mi_subproc_current"();
    });
    th.start();
    th.join();
    assert(seen == sp, "the thread moved into the new subprocess");
    assert(v!"mi_subproc_current"() == main);
    v!"mi_subproc_destroy"(sp);
    v!"mi_subproc_destroy"(main);   // ignored
}

unittest // abandoned blocks: a block of an ended thread, found through the main heap
{
    // v3's number of the option (28; v2's 29), which the walk needs
    v!"mi_option_enable"(mi_option_t.mi_option_visit_abandoned);
    assert(mimalloc.capi.mi_option_is_enabled(mimalloc.capi.mi_option_t.mi_option_visit_abandoned));
    __gshared void* left;
    auto th = new Thread({ left = mi_malloc(200); });   // abandoned with its thread
    th.start();
    th.join();
    __gshared void* wanted;
    wanted = left;
    static extern (C) bool find(const(mi_heap_t)*, const(mi_heap_area_t)* area, void* block, size_t, void* arg) nothrow
    {
        if (block !is null && block is wanted)
            *cast(bool*) arg = true;
        return true;
    }
    bool found;
    assert(v!"mi_heap_visit_abandoned_blocks"(null, true, &find, &found));
    assert(found, "the ended thread's block is visited");
    mi_free(left);
}

unittest // mi_subproc_visit_heaps: the main heap first, then the live heaps of the subprocess
{
    static struct Seen { mi_heap_t*[] heaps; size_t stopAfter = size_t.max; }
    static extern (C) bool record(mi_heap_t* heap, void* arg) nothrow
    {
        auto seen = cast(Seen*) arg;
        seen.heaps ~= heap;
        return seen.heaps.length < seen.stopAfter;
    }
    auto a = v!"mi_heap_new"(), b = v!"mi_heap_new"();
    Seen seen;
    assert(v!"mi_subproc_visit_heaps"(v!"mi_subproc_current"(), &record, &seen));
    assert(seen.heaps.length >= 3 && seen.heaps[0] == v!"mi_heap_main"(), "the main heap first");
    import std.algorithm : canFind;
    assert(seen.heaps.canFind(a) && seen.heaps.canFind(b));
    mi_heap_delete(a);
    seen = Seen.init;
    assert(v!"mi_subproc_visit_heaps"(v!"mi_subproc_main"(), &record, &seen));
    assert(!seen.heaps.canFind(a) && seen.heaps.canFind(b), "a deleted heap is no longer visited");
    seen = Seen.init;
    seen.stopAfter = 1;
    assert(!v!"mi_subproc_visit_heaps"(v!"mi_subproc_main"(), &record, &seen), "stopped by the visitor");
    assert(seen.heaps.length == 1);
    assert(!v!"mi_subproc_visit_heaps"(v!"mi_subproc_main"(), null, null), "no visitor");
    // a subprocess of its own: the main heap, then its heap
    __gshared mi_subproc_id_t sp;
    __gshared mi_heap_t* c;
    sp = v!"mi_subproc_new"();
    auto th = new Thread({ v!"mi_subproc_add_current_thread"(sp); c = v!"mi_heap_new"(); });
    th.start();
    th.join();
    seen = Seen.init;
    assert(v!"mi_subproc_visit_heaps"(sp, &record, &seen));
    assert(seen.heaps == [v!"mi_heap_main"(), c], "the main heap, then the subprocess' heap");
    mi_heap_delete(c);
    mi_heap_delete(b);
}

unittest // mi_heap_set_numa_affinity: a preference (the library's own test pretends two nodes);
         // here, with any number of nodes, a heap with an affinity still allocates, from threads too
{
    auto heap = v!"mi_heap_new"();
    v!"mi_heap_set_numa_affinity"(heap, 3);   // modulo the nodes in use
    __gshared void* q;
    auto th = new Thread({ q = mi_heap_malloc(heap, 3000); });
    th.start();
    th.join();
    auto p = mi_heap_malloc(heap, 100_000);
    assert(p !is null && q !is null && v!"mi_heap_contains"(heap, p));
    v!"mi_heap_set_numa_affinity"(null, 0);   // the main heap: every thread's backing heap
    auto r = mi_malloc(5000);
    assert(r !is null);
    v!"mi_heap_set_numa_affinity"(null, -1);
    v!"mi_heap_set_numa_affinity"(heap, -1);
    mi_free(r);
    mi_free(q);
    mi_free(p);
    mi_heap_delete(heap);
}

unittest // a heap's statistics: two threads' parts (the other as it published them), frees, JSON, printers
{
    import core.stdc.string : strlen;
    import std.algorithm : canFind;
    import mimalloc.v3 : mi_stats_t, MI_BIN_HUGE;
    static long inUse(ref const mi_stats_t st) { long n; foreach (b; st.malloc_bins) n += b.current; return n; }
    static extern (C) void countLines(const(char)* msg, void* arg) nothrow { ++*cast(size_t*) arg; }
    __gshared mi_heap_t* heap;
    heap = v!"mi_heap_new"();
    void*[] mine;
    foreach (i; 0 .. 40)
        mine ~= mi_heap_malloc(heap, 100);
    __gshared void*[] theirs;
    auto ready = new Barrier(2), done = new Barrier(2);
    auto th = new Thread({
        foreach (i; 0 .. 60)
            theirs ~= mi_heap_malloc(heap, 100);
        v!"mi_heap_stats_merge_to_subproc"(heap);   // published: the other thread counts them
        ready.wait();
        done.wait();
    });
    th.start();
    ready.wait();
    auto st = mi_stats_t.make();
    assert(v!"mi_heap_stats_get"(heap, &st));
    assert(inUse(st) == 100 && st.theaps.current == 2, "both threads' parts");
    foreach (p; mine[0 .. 10])
        mi_free(p);
    assert(v!"mi_heap_stats_get"(heap, &st));
    assert(inUse(st) == 90);
    done.wait();
    th.join();
    auto json = v!"mi_heap_stats_get_json"(heap, 0, null);
    assert(json !is null && json[0 .. strlen(json)].canFind(`"stat_version": 5`));
    mi_free(json);
    size_t lines;
    v!"mi_heap_stats_print_out"(heap, &countLines, &lines);
    assert(lines >= 4);
    auto sp = mi_stats_t.make();
    assert(v!"mi_subproc_stats_get"(v!"mi_subproc_main"(), &sp));
    assert(sp.pages.current > 0 && sp.heaps.current >= 2);
    assert(v!"mi_subproc_stats_get_exclusive"(v!"mi_subproc_main"(), &sp));
    auto sj = v!"mi_subproc_stats_get_json"(v!"mi_subproc_main"(), 0, null);
    assert(sj !is null);
    mi_free(sj);
    auto aj = v!"mi_stats_as_json"(&st, 0, null);
    assert(aj !is null);
    mi_free(aj);
    lines = 0;
    v!"mi_subproc_stats_print_out"(v!"mi_subproc_main"(), &countLines, &lines);
    v!"mi_subproc_heap_stats_print_out"(v!"mi_subproc_main"(), &countLines, &lines);
    assert(lines >= 8);
    assert(v!"mi_stats_get_bin_size"(1) == size_t.sizeof && v!"mi_stats_get_bin_size"(MI_BIN_HUGE + 1) == 0);
    foreach (p; mine[10 .. $] ~ theirs)
        mi_free(p);
    mi_heap_delete(heap);
}

unittest // keep last: every function of mimalloc.v3 was called by the tests above
{
    string[] missing;
    static foreach (m; __traits(allMembers, mimalloc.v3))
        static if (is(typeof(__traits(getMember, mimalloc.v3, m)) == function))
            if (m !in calledV3)
                missing ~= m;
    assert(missing.length == 0, "functions of mimalloc.v3 never called: " ~ missing.sort.array.join(", "));
}

unittest // MiSharedHeapAllocator: make, makeArray, dispose from 4 threads, deallocateAll
{
    import std.experimental.allocator : make, makeArray, dispose;
    import std.typecons : Ternary;
    import mimalloc.v3 : MiSharedHeapAllocator;

    auto heap = MiSharedHeapAllocator.create();
    assert(heap.heap !is null);
    static struct Node { long value; Node* next; }
    __gshared long[][4] arrays;
    auto barrier = new Barrier(4);
    Thread worker(size_t t)
    {
        return new Thread({
            Node* list;
            foreach (i; 0 .. 1000)
                list = heap.make!Node(t * 1000 + i, list);
            arrays[t] = heap.makeArray!long(500, cast(long) t);
            assert(heap.owns(arrays[t]) == Ternary.yes);
            for (auto n = list; n !is null; )
            {
                auto next = n.next;
                heap.dispose(n);
                n = next;
            }
            barrier.wait();
            heap.dispose(arrays[(t + 1) % 4]);   // another thread's array
        });
    }
    Thread[] ts;
    foreach (t; 0 .. 4)
        ts ~= worker(t);
    foreach (th; ts)
        th.start();
    foreach (th; ts)
        th.join();

    auto z = cast(ubyte[]) heap.allocateZeroed(100);
    assert(z.length == 100 && heap.owns(z) == Ternary.yes);
    foreach (b; z)
        assert(b == 0);
    void[] a = heap.alignedAllocate(100, 4096);
    assert(a.length == 100 && (cast(size_t) a.ptr & 4095) == 0);
    assert(heap.alignedAllocate(100, 3) is null);
    assert(heap.reallocate(a, 50_000) && a.length == 50_000);
    assert(heap.goodAllocSize(1) >= MiSharedHeapAllocator.alignment);
    int stack;
    assert(heap.owns((&stack)[0 .. 1]) == Ternary.unknown);
    assert(heap.deallocateAll());   // frees z and a, and starts a new heap
    assert(heap.heap !is null);
    auto b = heap.allocate(10);
    assert(b.length == 10 && heap.owns(b) == Ternary.yes && heap.deallocate(b));

    // a heap in an exclusive arena: its blocks are there; it cannot be destroyed
    mi_arena_id_t id;
    assert(mimalloc.v3.mi_reserve_os_memory_ex(32 << 20, false, false, true, &id) == 0);
    auto inArena = MiSharedHeapAllocator(id);
    auto c = inArena.allocate(1000);
    assert(c.length == 1000 && mimalloc.v3.mi_arena_contains(id, c.ptr));
    assert(!mimalloc.v3.mi_arena_contains(id, heap.allocate(1000).ptr));
    assert(!inArena.deallocateAll());
    inArena.deallocate(c);
}
