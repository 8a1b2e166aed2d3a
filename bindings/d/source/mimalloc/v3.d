// SPDX-License-Identifier: MIT
/**
mimalloc v3's API: the declarations that `include/mimalloc.h` makes when a C program defines
`MI_V3_API` before the include (docs/v3-api.md), where they differ from the v2 declarations
of `mimalloc.capi`. Opt in by importing this module; `mimalloc` and `mimalloc.capi` stay v2's.

$(UL
  $(LI `mi_heap_new` and `mi_heap_new_in_arena` make heaps that any thread may allocate in
       (through the `mi_heap_*` functions of `mimalloc.capi`, which take both kinds);
       `mi_heap_main` is one heap for all threads.)
  $(LI `mi_theap_t` is one thread's part of a heap (`mi_heap_theap`), with its own
       `mi_theap_*` functions.)
  $(LI `mi_arena_id_t` is a pointer (null: none), `mi_subproc_id_t` v3's struct, and
       `mi_option_t` has v3's numbers (`_mi_option_last` 47), which the library translates.)
)

Each function has v3's name and types and, where the header maps the name onto another
symbol in v3 mode, that symbol (`pragma(mangle)`: `mi_heap_new` is `mi_heap_new_shared`,
`mi_option_get` is `mi_v3_option_get`). Where a name is in both modules, say which one:
`import mimalloc.v3 : mi_heap_new;` or `mimalloc.v3.mi_heap_new()`.
`tests/mimalloc_tests/headercheck.d` checks every declaration here against the header's v3
mode.
*/
module mimalloc.v3;

import core.stdc.config : c_long;
import mimalloc.capi : mi_heap_t, mi_heap_s, mi_output_fun, mi_stat_count_t, mi_stat_counter_t;

/// Block visitor of the v3 functions (`mi_theap_visit_blocks`,
/// `mi_heap_visit_abandoned_blocks`): its area is v3's `mi_heap_area_t`.
alias mi_block_visit_fun = extern (C) bool function(const(mi_heap_t)* heap, const(mi_heap_area_t)* area,
                                         void* block, size_t block_size, void* arg) nothrow;

/// Heap visitor of `mi_subproc_visit_heaps`: return false to stop the walk.
alias mi_heap_visit_fun = extern (C) bool function(mi_heap_t* heap, void* arg) nothrow;

/// The program's commit (`commit` true; it may set `*is_zero`) or decommit (`commit` false,
/// `is_zero` null) of an arena's memory, for `mi_manage_memory`: false if it could not. It runs
/// with the allocator's locks held and must not allocate or free with it.
alias mi_commit_fun_t = extern (C) bool function(bool commit, void* start, size_t size, bool* is_zero, void* user_arg) nothrow;

extern (C):
nothrow:
@nogc:

// ---- Types

/// One thread's part of a heap (a theap): only that thread allocates in it.
struct mi_theap_s;
/// ditto
alias mi_theap_t = mi_theap_s;

/// Arena identifier: the v2 id as a pointer value; null is "no particular arena".
alias mi_arena_id_t = void*;

/// Subprocess identifier: v3's struct around the v2 id (null inside: the main subprocess).
struct mi_subproc_id_t
{
    void* _mi_subproc_id; /// the v2 id (`mimalloc.capi.mi_subproc_id_t`)
}

/// One area of equally sized blocks, as reported by the visitors (v3: the last field is
/// reserved; `heap_tag` in v2 mode).
struct mi_heap_area_s
{
    void* blocks;           /// start of the area
    size_t reserved;        /// bytes reserved for the area
    size_t committed;       /// bytes currently committed (usable)
    size_t used;            /// number of blocks in use (a count, not bytes)
    size_t block_size;      /// usable bytes of each block
    size_t full_block_size; /// bytes of each block including padding/metadata
    void* reserved1;        /// internal
}
/// ditto
alias mi_heap_area_t = mi_heap_area_s;

// ---- Heaps: any thread may allocate in a heap from mi_heap_new (and in the main heap)

/// A heap any thread may allocate in; delete or destroy it once no thread allocates in it.
pragma(mangle, "mi_heap_new_shared") mi_heap_t* mi_heap_new();
/// A shared heap that allocates only in the given (exclusive) arena; not destroyable.
pragma(mangle, "mi_v3_heap_new_in_arena") mi_heap_t* mi_heap_new_in_arena(mi_arena_id_t arena_id);
/// The NUMA node whose memory the heap's new pages prefer, -1 for none; null: the main heap.
void mi_heap_set_numa_affinity(mi_heap_t* heap, int numa_node);

// ---- Heap introspection
/// Does `p` lie in a page of ours in use, of any heap of any thread?
pragma(mangle, "mi_v3_check_owned") bool mi_check_owned(const(void)* p);
/// Walk the abandoned blocks of the heap's subprocess and tag (needs mi_option_visit_abandoned).
bool mi_heap_visit_abandoned_blocks(mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun visitor, void* arg);
/// One heap for all threads: each thread allocates in its backing heap through it.
pragma(mangle, "mi_v3_heap_main") mi_heap_t* mi_heap_main();
/// The heap of a block (the main heap for a block of the calling thread's default heap).
pragma(mangle, "mi_v3_heap_of") mi_heap_t* mi_heap_of(const(void)* p);
/// mi_heap_of(p) == heap, null standing for the main heap.
pragma(mangle, "mi_v3_heap_contains") bool mi_heap_contains(const(mi_heap_t)* heap, const(void)* p);

// ---- Arenas and OS memory: the pointer id
pragma(mangle, "mi_v3_reserve_huge_os_pages_at_ex") int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive, mi_arena_id_t* arena_id); ///
pragma(mangle, "mi_v3_reserve_os_memory_ex") int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* arena_id); ///
pragma(mangle, "mi_v3_manage_os_memory_ex") bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node, bool exclusive, mi_arena_id_t* arena_id); ///
/// mi_manage_os_memory_ex whose commits and purges go through `commit_fun` (null: the OS's).
bool mi_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node, bool exclusive,
                      mi_commit_fun_t commit_fun, void* commit_fun_arg, mi_arena_id_t* arena_id);
pragma(mangle, "mi_v3_arena_area") void* mi_arena_area(mi_arena_id_t arena_id, size_t* size); ///
pragma(mangle, "mi_v3_arena_contains") bool mi_arena_contains(mi_arena_id_t arena_id, const(void)* p); ///

// ---- Subprocesses: v3's struct
pragma(mangle, "mi_v3_subproc_main") mi_subproc_id_t mi_subproc_main(); ///
pragma(mangle, "mi_v3_subproc_current") mi_subproc_id_t mi_subproc_current(); ///
pragma(mangle, "mi_v3_subproc_new") mi_subproc_id_t mi_subproc_new(); ///
/// Release a subprocess once its threads have ended and its memory is free (main: ignored).
void mi_subproc_destroy(mi_subproc_id_t subproc);
/// Call `visitor` on the main heap, then on each heap of `mi_heap_new` the subprocess' threads
/// made and did not delete, until it returns false (then false). It runs under a lock: it
/// must not make, delete or destroy a heap.
pragma(mangle, "mi_v3_subproc_visit_heaps") bool mi_subproc_visit_heaps(mi_subproc_id_t subproc, mi_heap_visit_fun visitor, void* arg);
pragma(mangle, "mi_v3_subproc_add_current_thread") void mi_subproc_add_current_thread(mi_subproc_id_t subproc); ///

// ---- Statistics (mimalloc-stats.h): v3's layout, a heap's and a subprocess' figures

enum size_t MI_STAT_VERSION = 5; /// layout version of v3's `mi_stats_t`
enum size_t MI_BIN_HUGE = 73;    /// the huge bin; the bin arrays have MI_BIN_HUGE + 1 entries
enum size_t MI_CBIN_COUNT = 6;   /// entries of `chunk_bins`

/// v3's statistics (fields in the order of v3 mode's MI_STAT_FIELDS): a heap's
/// (`mi_heap_stats_get`), a subprocess' (`mi_subproc_stats_get`) or the process'
/// (`mimalloc.capi.mi_stats_get`, which tells this layout from v2's by size and version).
/// `mi_stats_t.make()` gives one ready for use (v3's `mi_stats_init`).
struct mi_stats_s
{
    /// Zeroed, with size and version set.
    static mi_stats_s make() pure
    {
        mi_stats_s s;
        s.size = mi_stats_s.sizeof;
        s.version_ = MI_STAT_VERSION;
        return s;
    }

    size_t size;     /// must be mi_stats_t.sizeof
    size_t version_; /// `version` in C (a keyword in D): must be MI_STAT_VERSION

    mi_stat_count_t pages, reserved, committed; ///
    mi_stat_counter_t reset, purged; ///
    mi_stat_count_t page_committed, pages_abandoned, threads, malloc_normal, malloc_huge, malloc_requested; ///
    mi_stat_counter_t mmap_calls, commit_calls, reset_calls, purge_calls, arena_count, malloc_normal_count,
        malloc_huge_count, malloc_guarded_count, arena_rollback_count, arena_purges, pages_extended,
        pages_retire, page_searches, page_searches_count; ///
    mi_stat_count_t segments, segments_abandoned, segments_cache, _segments_reserved; ///
    mi_stat_count_t heaps, theaps; ///
    mi_stat_counter_t pages_reclaim_on_alloc, pages_reclaim_on_free, pages_reabandon_full,
        pages_unabandon_busy_wait, heaps_delete_wait; ///

    mi_stat_count_t[4] _stat_reserved;           /// room for growth
    mi_stat_counter_t[4] _stat_counter_reserved; /// room for growth
    mi_stat_count_t[MI_BIN_HUGE + 1] malloc_bins; /// live blocks per size bin
    mi_stat_count_t[MI_BIN_HUGE + 1] page_bins;   /// pages per size bin
    mi_stat_count_t[MI_CBIN_COUNT] chunk_bins;    /// arena chunks per kind (zero here)
}
/// ditto
alias mi_stats_t = mi_stats_s;

bool mi_heap_stats_get(mi_heap_t* heap, mi_stats_t* stats); ///
char* mi_heap_stats_get_json(mi_heap_t* heap, size_t buf_size, char* buf); ///
void mi_heap_stats_print_out(mi_heap_t* heap, mi_output_fun output, void* arg); ///
/// Publish the calling thread's part of `heap` for other threads' calls to see.
void mi_heap_stats_merge_to_subproc(mi_heap_t* heap);
bool mi_subproc_stats_get(mi_subproc_id_t subproc_id, mi_stats_t* stats); ///
char* mi_subproc_stats_get_json(mi_subproc_id_t subproc_id, size_t buf_size, char* buf); ///
void mi_subproc_stats_print_out(mi_subproc_id_t subproc_id, mi_output_fun output, void* arg); ///
void mi_subproc_heap_stats_print_out(mi_subproc_id_t subproc_id, mi_output_fun output, void* arg); ///
bool mi_subproc_stats_get_exclusive(mi_subproc_id_t subproc_id, mi_stats_t* stats); ///
char* mi_stats_as_json(mi_stats_t* stats, size_t buf_size, char* buf); ///
size_t mi_stats_get_bin_size(size_t bin); ///

// ---- Theaps: a thread's own part of a heap
/// The calling thread's part of `heap`, made on first use (null: the main heap's part).
mi_theap_t* mi_heap_theap(mi_heap_t* heap);
/// Make `theap` (the calling thread's own) the thread's default; returns the previous one. The
/// thread's part of a heap from mi_heap_new may be it: mi_malloc then allocates in that heap.
mi_theap_t* mi_theap_set_default(mi_theap_t* theap);
mi_theap_t* mi_theap_get_default(); ///
void mi_theap_collect(mi_theap_t* theap, bool force); ///
void* mi_theap_malloc(mi_theap_t* theap, size_t size); ///
void* mi_theap_zalloc(mi_theap_t* theap, size_t size); ///
void* mi_theap_calloc(mi_theap_t* theap, size_t count, size_t size); ///
void* mi_theap_malloc_small(mi_theap_t* theap, size_t size); ///
void* mi_theap_zalloc_small(mi_theap_t* theap, size_t size); ///
void* mi_theap_malloc_aligned(mi_theap_t* theap, size_t size, size_t alignment); ///
void* mi_theap_realloc(mi_theap_t* theap, void* p, size_t newsize); ///
void mi_theap_guarded_set_sample_rate(mi_theap_t* theap, size_t sample_rate, size_t seed); ///
void mi_theap_guarded_set_size_bound(mi_theap_t* theap, size_t min, size_t max); ///
bool mi_theap_visit_blocks(const(mi_theap_t)* theap, bool visit_blocks, mi_block_visit_fun visitor, void* arg); ///

// ---- Options: v3's numbering

/// Option identifier in v3's numbering (the `mi_option_e` of v3 mode).
enum mi_option_t : int
{
    mi_option_show_errors,                   /// 0: print errors and warnings
    mi_option_show_stats,                    /// 1: print statistics at exit
    mi_option_verbose,                       /// 2: print informational messages
    mi_option_deprecated_eager_commit,       /// 3: commit segments eagerly (v2's `eager_commit`, same number)
    mi_option_arena_eager_commit,            /// 4: commit arenas up front (2 = only on overcommit systems)
    mi_option_purge_decommits,               /// 5: purge by decommitting (0 = reset only)
    mi_option_allow_large_os_pages,          /// 6: allow 2/4 MiB large OS pages
    mi_option_reserve_huge_os_pages,         /// 7: 1 GiB pages to reserve at start-up
    mi_option_reserve_huge_os_pages_at,      /// 8: NUMA node for those pages (-1 = all)
    mi_option_reserve_os_memory,             /// 9: KiB of OS memory to reserve at start-up
    mi_option_deprecated_segment_cache,      /// 10: unused
    mi_option_deprecated_page_reset,         /// 11: unused
    mi_option_deprecated_abandoned_page_purge, /// 12: purge abandoned segments right away at thread exit (v2's `abandoned_page_purge`, same number)
    mi_option_deprecated_segment_reset,      /// 13: unused
    mi_option_deprecated_eager_commit_delay, /// 14: first N segments per thread are committed lazily (v2's `eager_commit_delay`, same number)
    mi_option_purge_delay,                   /// 15: ms before unused memory is purged (-1 = never)
    mi_option_use_numa_nodes,                /// 16: assume at most N NUMA nodes (0 = detect)
    mi_option_disallow_os_alloc,             /// 17: only use pre-reserved arenas
    mi_option_os_tag,                        /// 18: macOS VM tag
    mi_option_max_errors,                    /// 19: maximum error messages printed
    mi_option_max_warnings,                  /// 20: maximum warnings printed
    mi_option_deprecated_max_segment_reclaim, /// 21: % of abandoned segments examined per reclaim (v2's `max_segment_reclaim`, same number)
    mi_option_destroy_on_exit,               /// 22: release all memory at process exit
    mi_option_arena_reserve,                 /// 23: KiB per arena reserved on demand
    mi_option_arena_purge_mult,              /// 24: arena purge delay multiplier
    mi_option_deprecated_purge_extend_delay, /// 25: extra purge delay on later frees (v2's `purge_extend_delay`, same number)
    mi_option_disallow_arena_alloc,          /// 26: do not use arenas (except explicit arena heaps) (v2: 27)
    mi_option_retry_on_oom,                  /// 27: Windows: ms to retry failed OS allocations (v2: 28)
    mi_option_visit_abandoned,               /// 28: allow `mi_heap_visit_abandoned_blocks` (v2: 29)
    mi_option_guarded_min,                   /// 29: guarded builds: minimum guarded size (v2: 30)
    mi_option_guarded_max,                   /// 30: guarded builds: maximum guarded size (v2: 31)
    mi_option_guarded_precise,               /// 31: place guarded objects right against the guard page (v2: 32)
    mi_option_guarded_sample_rate,           /// 32: guard 1 in N eligible allocations (v2: 33)
    mi_option_guarded_sample_seed,           /// 33: start of the sampling counter (0 = random) (v2: 34)
    mi_option_generic_collect,               /// 34: collect every N slow-path allocations (v2: 36)
    mi_option_page_reclaim_on_free,          /// 35: v3 only: kept and read back, no effect here
    mi_option_page_full_retain,              /// 36: v3 only: kept and read back, no effect here
    mi_option_page_max_candidates,           /// 37: v3 only: kept and read back, no effect here
    mi_option_max_vabits,                    /// 38: v3 only: kept and read back, no effect here
    mi_option_pagemap_commit,                /// 39: v3 only: kept and read back, no effect here
    mi_option_page_commit_on_demand,         /// 40: v3 only: kept and read back, no effect here
    mi_option_page_max_reclaim,              /// 41: v3 only: kept and read back, no effect here
    mi_option_page_cross_thread_max_reclaim, /// 42: v3 only: kept and read back, no effect here
    mi_option_allow_thp,                     /// 43: 0 = disable transparent huge pages (v2: 37)
    mi_option_minimal_purge_size,            /// 44: v3 only (KiB): kept and read back, no effect here
    mi_option_arena_max_object_size,         /// 45: v3 only (KiB): kept and read back, no effect here
    mi_option_arena_is_numa_local,           /// 46: v3 only: kept and read back, no effect here
    _mi_option_last,                         /// 47: number of options (v2: 38)
    mi_option_large_os_pages = mi_option_allow_large_os_pages, ///
    mi_option_eager_region_commit = mi_option_arena_eager_commit, ///
    mi_option_reset_decommits = mi_option_purge_decommits, ///
    mi_option_reset_delay = mi_option_purge_delay, ///
    mi_option_limit_os_alloc = mi_option_disallow_os_alloc, ///
    // this implementation's own (MI_OPTION_EXT_FIRST ..), the same in both modes
    mi_option_live = 1000,                   /// 1000: live statistics for tools/mimalloc-live
    mi_option_live_interval = 1001,          /// 1001: ms between publications of the live statistics
    mi_option_purge_thread = 1002,           /// 1002: 0 = no background purger thread
    mi_option_memory_limit = 1003,           /// 1003: soft memory limit (KiB; -P: P% of the cgroup's)
    mi_option_memory_limit_hard = 1004,      /// 1004: hard memory limit (past it an allocation returns NULL)
}
/// The C tag name.
alias mi_option_e = mi_option_t;

// The C names of the values without the `mi_option_t.` prefix, as in C.
static foreach (_mi_member; __traits(allMembers, mi_option_t))
    mixin("enum mi_option_t " ~ _mi_member ~ " = mi_option_t." ~ _mi_member ~ ";");

pragma(mangle, "mi_v3_option_is_enabled") bool mi_option_is_enabled(mi_option_t option); ///
pragma(mangle, "mi_v3_option_enable") void mi_option_enable(mi_option_t option); ///
pragma(mangle, "mi_v3_option_disable") void mi_option_disable(mi_option_t option); ///
pragma(mangle, "mi_v3_option_set_enabled") void mi_option_set_enabled(mi_option_t option, bool enable); ///
pragma(mangle, "mi_v3_option_set_enabled_default") void mi_option_set_enabled_default(mi_option_t option, bool enable); ///
pragma(mangle, "mi_v3_option_get") c_long mi_option_get(mi_option_t option); ///
pragma(mangle, "mi_v3_option_get_clamp") c_long mi_option_get_clamp(mi_option_t option, c_long min, c_long max); ///
pragma(mangle, "mi_v3_option_get_size") size_t mi_option_get_size(mi_option_t option); ///
pragma(mangle, "mi_v3_option_set") void mi_option_set(mi_option_t option, c_long value); ///
pragma(mangle, "mi_v3_option_set_default") void mi_option_set_default(mi_option_t option, c_long value); ///

// ---- An allocator for std.experimental.allocator

extern (D):

/**
A heap that any thread may allocate in (`mi_heap_new` of v3 mode) as an allocator for
`std.experimental.allocator` (`make`, `makeArray`, `dispose`, ...). Share it between threads
by reference (`&heap` in the threads' delegates); every thread allocates in its own part of
the heap, and any thread may free a block. Not copyable.

When it is destroyed the heap is deleted: blocks still allocated stay valid. `deallocateAll`
frees every block of every thread at once; call it (and let the allocator go) only when no
other thread allocates in it any more.
*/
struct MiSharedHeapAllocator
{
    import std.experimental.allocator.common : platformAlignment;
    import std.typecons : Ternary;
    static import mimalloc.capi;

    /// Every block is aligned at least to this (16 on x86-64).
    enum uint alignment = platformAlignment;

    private mi_heap_t* heap_;
    private mi_arena_id_t arena_;

    @disable this(this);

    /// A new heap in the given exclusive arena (null: any); check `heap !is null` for out
    /// of memory. A heap in an arena cannot be destroyed: `deallocateAll` fails for it.
    this(mi_arena_id_t arena) @trusted @nogc nothrow
    {
        arena_ = arena;
        heap_ = arena is null ? mi_heap_new() : mi_heap_new_in_arena(arena);
    }

    /// A new heap in no particular arena.
    static MiSharedHeapAllocator create() @trusted @nogc nothrow
    {
        return MiSharedHeapAllocator(null);
    }

    ~this() @trusted @nogc nothrow
    {
        if (heap_ !is null)
            mimalloc.capi.mi_heap_delete(heap_);
        heap_ = null;
    }

    /// The C heap (for the `mi_heap_*` functions).
    inout(mi_heap_t)* heap() inout @safe @nogc nothrow pure
    {
        return heap_;
    }

@trusted @nogc nothrow:

    // blocks of at least `alignment` bytes are aligned to it; smaller ones only to 8
    private static size_t atLeastMin(size_t n) pure @safe
    {
        return n < alignment ? alignment : n;
    }

    private static size_t alignArg(uint a) pure @safe
    {
        if (a == 0 || (a & (a - 1)) != 0)
            return 0;
        return a < alignment ? alignment : a;
    }

    ///
    void[] allocate(size_t bytes)
    {
        if (bytes == 0 || heap_ is null)
            return null;
        auto p = mimalloc.capi.mi_heap_malloc(heap_, atLeastMin(bytes));
        return p is null ? null : p[0 .. bytes];
    }

    ///
    void[] alignedAllocate(size_t bytes, uint a)
    {
        if (bytes == 0 || heap_ is null || alignArg(a) == 0)
            return null;
        auto p = mimalloc.capi.mi_heap_malloc_aligned(heap_, atLeastMin(bytes), alignArg(a));
        return p is null ? null : p[0 .. bytes];
    }

    ///
    void[] allocateZeroed(size_t bytes)
    {
        if (bytes == 0 || heap_ is null)
            return null;
        auto p = mimalloc.capi.mi_heap_zalloc(heap_, atLeastMin(bytes));
        return p is null ? null : p[0 .. bytes];
    }

    /// Frees `b` (from any thread).
    bool deallocate(void[] b)
    {
        mimalloc.capi.mi_free(b.ptr);
        return true;
    }

    /// Resizes `b`; a moved block is allocated in the calling thread's part of this heap.
    bool reallocate(ref void[] b, size_t s)
    {
        if (s == 0)
        {
            mimalloc.capi.mi_free(b.ptr);
            b = null;
            return true;
        }
        if (heap_ is null)
            return false;
        auto p = mimalloc.capi.mi_heap_realloc(heap_, b.ptr, atLeastMin(s));
        if (p is null)
            return false;
        b = p[0 .. s];
        return true;
    }

    ///
    size_t goodAllocSize(size_t n)
    {
        return n == 0 ? 0 : mimalloc.capi.mi_good_size(atLeastMin(n));
    }

    /// `Ternary.yes` for a block the calling thread allocated in this heap (v3's
    /// `mi_heap_contains`); `Ternary.unknown` otherwise (another thread's block is not told
    /// from a block of another heap).
    Ternary owns(const void[] b)
    {
        if (heap_ !is null && b.ptr !is null && mi_heap_contains(heap_, b.ptr))
            return Ternary.yes;
        return Ternary.unknown;
    }

    /// Frees every block of the heap, of every thread, at once (`mi_heap_destroy`) and
    /// starts a new heap. False for a heap in an arena (not destroyable), or out of memory.
    bool deallocateAll()
    {
        if (heap_ is null || arena_ !is null)
            return false;
        mimalloc.capi.mi_heap_destroy(heap_);
        heap_ = mi_heap_new();
        return heap_ !is null;
    }
}
