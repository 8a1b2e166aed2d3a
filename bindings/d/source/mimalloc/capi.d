// SPDX-License-Identifier: MIT
/**
D declarations of the whole C interface of the allocator: `include/mimalloc.h` and
`include/mimalloc-stats.h` of this repository (the mimalloc v2.4.1 API).

Names, types and values are those of the C headers, so C code carries over unchanged:
the option values are available both as `mi_option_t.mi_option_verbose` and as plain
`mi_option_verbose`, and the typed allocation macros of the header (`mi_malloc_tp` & co.)
are templates here (`mi_malloc_tp!T()`).

Differences forced by D:
$(UL
  $(LI The callback types (`mi_block_visit_fun`, `mi_output_fun`, `mi_error_fun`,
       `mi_deferred_free_fun`) are function $(I pointer) types, where C declares function
       types and takes pointers to them. Callbacks must be `extern(C)` and `nothrow`:
       an exception must never unwind through the allocator.)
  $(LI The field `version` of `mi_stats_t` is `version_` (`version` is a D keyword); the
       parameters named `out` in C are `out_`.)
  $(LI `mi_stats_t_decl(name)` is `mi_stats_t name = mi_stats_t_init();`)
  $(LI The C++ STL allocators have no counterpart here; `mimalloc.allocator` has the D
       allocators.)
)

Every function is `nothrow @nogc`, except the `mi_new` family, which follows C++
`operator new`: on failure it throws `std::bad_alloc` when a C++ runtime is linked in, and
otherwise prints an error and aborts the process.

The tests in `tests/` check every declaration here against the C headers: sizes, alignments
and field offsets, every enum value and constant (from a C probe compiled with the
headers), and the signature of every function and callback (parsed from the headers).
*/
module mimalloc.capi;

import core.stdc.config : c_long;
import core.stdc.stddef : wchar_t;

// ---------------------------------------------------------------------------
// Callback types (declared before the `@nogc:` below: a callback need not be @nogc, but
// it must be nothrow: a D exception must not unwind through the C library)

/// Block visitor: called once per area (block is null) and, when asked for, once per live
/// block. Return false to stop the walk.
alias mi_block_visit_fun = extern (C) bool function(const(mi_heap_t)* heap, const(mi_heap_area_t)* area,
                                         void* block, size_t block_size, void* arg) nothrow;
/// Sink for every message the allocator prints.
alias mi_output_fun = extern (C) void function(const(char)* msg, void* arg) nothrow;
/// Error callback, receives an errno-style code.
alias mi_error_fun = extern (C) void function(int err, void* arg) nothrow;
/// Hook run regularly so that a program can release memory it deferred.
alias mi_deferred_free_fun = extern (C) void function(bool force, ulong heartbeat, void* arg) nothrow;

// ---------------------------------------------------------------------------
// C++ allocation helpers with operator-new semantics: on failure they run the C++
// new-handler and throw std::bad_alloc if a C++ runtime is linked in, else they print an
// error and abort. So they are not `nothrow` here (the other declarations are).
extern (C) @nogc
{
    void* mi_new(size_t size);
    void* mi_new_aligned(size_t size, size_t alignment);
    void* mi_new_n(size_t count, size_t size);
    void* mi_new_realloc(void* p, size_t newsize);
    void* mi_new_reallocn(void* p, size_t newcount, size_t size);
    void* mi_heap_alloc_new(mi_heap_t* heap, size_t size);
    void* mi_heap_alloc_new_n(mi_heap_t* heap, size_t count, size_t size);
}

extern (C):
nothrow:
@nogc:

// ---------------------------------------------------------------------------
// 1. Version and constants

/// major*10000 + minor*100 + patch of the API: 20401 is v2.4.1.
enum MI_MALLOC_VERSION = 20401;
/// The `_small` allocation functions accept at most this many words ...
enum size_t MI_SMALL_WSIZE_MAX = 128;
/// ... or bytes.
enum size_t MI_SMALL_SIZE_MAX = MI_SMALL_WSIZE_MAX * (void*).sizeof;

// ---------------------------------------------------------------------------
// 4. Types

/// Opaque first-class heap; in v2 a heap belongs to the thread that made it.
struct mi_heap_s;
/// ditto
alias mi_heap_t = mi_heap_s;
/// v3 name of the same type.
alias mi_theap_t = mi_heap_t;

/// Arena identifier: 0 means "no particular arena"; real ids start at 1.
alias mi_arena_id_t = int;

/// Subprocess identifier: null is the main subprocess.
alias mi_subproc_id_t = void*;

/// One area of equally sized blocks, as reported by the heap visitors.
struct mi_heap_area_s
{
    void* blocks;           /// start of the area
    size_t reserved;        /// bytes reserved for the area
    size_t committed;       /// bytes currently committed (usable)
    size_t used;            /// number of blocks in use (a count, not bytes)
    size_t block_size;      /// usable bytes of each block
    size_t full_block_size; /// bytes of each block including padding/metadata
    int heap_tag;           /// tag of the heap the area belongs to
}
/// ditto
alias mi_heap_area_t = mi_heap_area_s;

// ---------------------------------------------------------------------------
// 5. Functions

// ---- Basic allocation (default heap; free anything with mi_free)
void* mi_malloc(size_t size);
void* mi_calloc(size_t count, size_t size);
void* mi_realloc(void* p, size_t newsize);
void mi_free(void* p);

// ---- Extended allocation
void* mi_zalloc(size_t size);
void* mi_mallocn(size_t count, size_t size);
void* mi_reallocn(void* p, size_t count, size_t size);
void* mi_reallocf(void* p, size_t newsize);
void* mi_expand(void* p, size_t newsize);
size_t mi_usable_size(const(void)* p);
size_t mi_good_size(size_t size);
char* mi_strdup(const(char)* s);
char* mi_strndup(const(char)* s, size_t n);
char* mi_realpath(const(char)* fname, char* resolved_name);
void* mi_malloc_small(size_t size);
void* mi_zalloc_small(size_t size);
void mi_free_small(void* p);

// ---- Usable-size reporting variants
void* mi_umalloc(size_t size, size_t* block_size);
void* mi_ucalloc(size_t count, size_t size, size_t* block_size);
void* mi_urealloc(void* p, size_t newsize, size_t* block_size_pre, size_t* block_size_post);
void mi_ufree(void* p, size_t* block_size);
void* mi_umalloc_aligned(size_t size, size_t alignment, size_t* block_size);
void* mi_uzalloc_aligned(size_t size, size_t alignment, size_t* block_size);
void* mi_umalloc_small(size_t size, size_t* block_size);
void* mi_uzalloc_small(size_t size, size_t* block_size);

// ---- Aligned allocation (alignment after the size arguments; `_at`: align p + offset)
void* mi_malloc_aligned(size_t size, size_t alignment);
void* mi_malloc_aligned_at(size_t size, size_t alignment, size_t offset);
void* mi_zalloc_aligned(size_t size, size_t alignment);
void* mi_zalloc_aligned_at(size_t size, size_t alignment, size_t offset);
void* mi_calloc_aligned(size_t count, size_t size, size_t alignment);
void* mi_calloc_aligned_at(size_t count, size_t size, size_t alignment, size_t offset);
void* mi_realloc_aligned(void* p, size_t newsize, size_t alignment);
void* mi_realloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset);

// ---- Heaps (only the owning thread may allocate from, collect, delete or destroy a heap)
mi_heap_t* mi_heap_new();
mi_heap_t* mi_heap_new_in_arena(mi_arena_id_t arena_id);
mi_heap_t* mi_heap_new_ex(int heap_tag, bool allow_destroy, mi_arena_id_t arena_id);
// a heap any thread may allocate in (each thread in its own part); delete or destroy it once no thread allocates in it
mi_heap_t* mi_heap_new_shared();
mi_heap_t* mi_heap_new_shared_in_arena(mi_arena_id_t arena_id);
void mi_heap_delete(mi_heap_t* heap);
void mi_heap_destroy(mi_heap_t* heap);
mi_heap_t* mi_heap_set_default(mi_heap_t* heap);
mi_heap_t* mi_heap_get_default();
mi_heap_t* mi_heap_get_backing();
void mi_heap_collect(mi_heap_t* heap, bool force);

void* mi_heap_malloc(mi_heap_t* heap, size_t size);
void* mi_heap_zalloc(mi_heap_t* heap, size_t size);
void* mi_heap_calloc(mi_heap_t* heap, size_t count, size_t size);
void* mi_heap_mallocn(mi_heap_t* heap, size_t count, size_t size);
void* mi_heap_malloc_small(mi_heap_t* heap, size_t size);
void* mi_heap_zalloc_small(mi_heap_t* heap, size_t size);

void* mi_heap_realloc(mi_heap_t* heap, void* p, size_t newsize);
void* mi_heap_reallocn(mi_heap_t* heap, void* p, size_t count, size_t size);
void* mi_heap_reallocf(mi_heap_t* heap, void* p, size_t newsize);

char* mi_heap_strdup(mi_heap_t* heap, const(char)* s);
char* mi_heap_strndup(mi_heap_t* heap, const(char)* s, size_t n);
char* mi_heap_realpath(mi_heap_t* heap, const(char)* fname, char* resolved_name);

void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size, size_t alignment);
void* mi_heap_malloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset);
void* mi_heap_zalloc_aligned(mi_heap_t* heap, size_t size, size_t alignment);
void* mi_heap_zalloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset);
void* mi_heap_calloc_aligned(mi_heap_t* heap, size_t count, size_t size, size_t alignment);
void* mi_heap_calloc_aligned_at(mi_heap_t* heap, size_t count, size_t size, size_t alignment, size_t offset);
void* mi_heap_realloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment);
void* mi_heap_realloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset);

void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed);
void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max);

// ---- Zero-initialised re-allocation (only for blocks that were allocated zeroed)
void* mi_rezalloc(void* p, size_t newsize);
void* mi_recalloc(void* p, size_t newcount, size_t size);

void* mi_rezalloc_aligned(void* p, size_t newsize, size_t alignment);
void* mi_rezalloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset);
void* mi_recalloc_aligned(void* p, size_t newcount, size_t size, size_t alignment);
void* mi_recalloc_aligned_at(void* p, size_t newcount, size_t size, size_t alignment, size_t offset);

void* mi_heap_rezalloc(mi_heap_t* heap, void* p, size_t newsize);
void* mi_heap_recalloc(mi_heap_t* heap, void* p, size_t newcount, size_t size);

void* mi_heap_rezalloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment);
void* mi_heap_rezalloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset);
void* mi_heap_recalloc_aligned(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment);
void* mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment, size_t offset);

// ---- Heap introspection
bool mi_heap_contains_block(mi_heap_t* heap, const(void)* p);
bool mi_heap_check_owned(mi_heap_t* heap, const(void)* p);
bool mi_check_owned(const(void)* p);
bool mi_heap_visit_blocks(const(mi_heap_t)* heap, bool visit_blocks, mi_block_visit_fun visitor, void* arg);
bool mi_abandoned_visit_blocks(mi_subproc_id_t subproc_id, int heap_tag, bool visit_blocks, mi_block_visit_fun visitor, void* arg);
bool mi_is_in_heap_region(const(void)* p);
bool mi_unsafe_heap_page_is_under_utilized(mi_heap_t* heap, void* p, size_t perc_threshold);
mi_heap_t* mi_heap_main();
mi_heap_t* mi_heap_of(const(void)* p);
bool mi_heap_contains(const(mi_heap_t)* heap, const(void)* p);
bool mi_any_heap_contains(const(void)* p);

// ---- Statistics and process information
void mi_stats_reset();
void mi_stats_merge();
/// Legacy printer: `out_` is an `mi_output_fun` (or null for the default output).
void mi_stats_print(void* out_);
void mi_stats_print_out(mi_output_fun out_, void* arg);
void mi_thread_stats_print_out(mi_output_fun out_, void* arg);
void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                     size_t* current_rss, size_t* peak_rss,
                     size_t* current_commit, size_t* peak_commit, size_t* page_faults);
void mi_process_info_print_out(mi_output_fun out_, void* arg);
void mi_process_info_print();

// ---- Output, error and deferred-free registration (one process-wide slot each)
void mi_register_output(mi_output_fun out_, void* arg);
void mi_register_error(mi_error_fun fun, void* arg);
void mi_register_deferred_free(mi_deferred_free_fun deferred_free, void* arg);

// ---- Arenas and OS memory
int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes, size_t timeout_msecs);
int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs);
int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive, mi_arena_id_t* arena_id);
int mi_reserve_os_memory(size_t size, bool commit, bool allow_large);
int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* arena_id);
bool mi_manage_os_memory(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node);
bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node, bool exclusive, mi_arena_id_t* arena_id);
void* mi_arena_area(mi_arena_id_t arena_id, size_t* size);
bool mi_arena_contains(mi_arena_id_t arena_id, const(void)* p);
size_t mi_arena_min_alignment();
size_t mi_arena_min_size();
void mi_debug_show_arenas();
void mi_arenas_print();
/// Deprecated: use mi_reserve_huge_os_pages_interleave/_at.
int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved);

// ---- Subprocesses
mi_subproc_id_t mi_subproc_main();
mi_subproc_id_t mi_subproc_current();
mi_subproc_id_t mi_subproc_new();
void mi_subproc_delete(mi_subproc_id_t subproc);
void mi_subproc_add_current_thread(mi_subproc_id_t subproc);

// ---- Process and thread life cycle, misc
void mi_process_init();
void mi_process_done();
void mi_thread_init();
void mi_thread_done();
void mi_thread_set_in_threadpool();
bool mi_is_redirected();
void mi_collect(bool force);
void mi_collect_reduce(size_t target_thread_owned);

// ---- Sampling heap profiler (this implementation's): release builds on Linux; elsewhere
// (also the secure and debug configurations) both return false. MIMALLOC_PROFILE=path
// switches it on at start-up without a call.
/// Samples about one allocation per `rate` bytes allocated (0: 512 KiB) with its call stack,
/// on every thread from its next allocation. True if the profiler is on (a second call keeps
/// the first rate).
bool mi_profile_start(size_t rate);
/// Writes the profile now: path.pb (pprof), path.txt (top call sites), path.inuse.folded and
/// path.alloc.folded (flame graphs); "%p" in `path` is the process id. True if all four were
/// written.
bool mi_profile_dump(const(char)* path);

// ---- Version
int mi_version();

// ---- POSIX / Unix / Windows compatibility
void mi_cfree(void* p);
void* mi__expand(void* p, size_t newsize);
size_t mi_malloc_size(const(void)* p);
size_t mi_malloc_good_size(size_t size);
size_t mi_malloc_usable_size(const(void)* p);

int mi_posix_memalign(void** p, size_t alignment, size_t size);
void* mi_memalign(size_t alignment, size_t size);
void* mi_valloc(size_t size);
void* mi_pvalloc(size_t size);
void* mi_aligned_alloc(size_t alignment, size_t size);

void* mi_reallocarray(void* p, size_t count, size_t size);
/// `ptrp` is really a `void**`.
int mi_reallocarr(void* ptrp, size_t count, size_t size);
void* mi_aligned_recalloc(void* p, size_t newcount, size_t size, size_t alignment);
void* mi_aligned_offset_recalloc(void* p, size_t newcount, size_t size, size_t alignment, size_t offset);

void mi_free_size(void* p, size_t size);
void mi_free_size_aligned(void* p, size_t size, size_t alignment);
void mi_free_aligned(void* p, size_t alignment);

int mi_dupenv_s(char** buf, size_t* size, const(char)* name);
int mi_wdupenv_s(wchar_t** buf, size_t* size, const(wchar_t)* name);
wchar_t* mi_wcsdup(const(wchar_t)* s);
ubyte* mi_mbsdup(const(ubyte)* s);

// ---- C++ allocation helpers, nothrow forms
void* mi_new_nothrow(size_t size);
void* mi_new_aligned_nothrow(size_t size, size_t alignment);

// ---------------------------------------------------------------------------
// 7. Options (numbering is part of the ABI)

/// The number of the first option of this implementation beyond mimalloc's (the options
/// from here on are `#define`s in mimalloc.h; mimalloc's numbering stays unchanged).
enum MI_OPTION_EXT_FIRST = 1000;

/// Every option; `mi_option_<name>` is read from `MIMALLOC_<NAME>` on first use.
enum mi_option_t
{
    mi_option_show_errors,                /// 0: print errors and warnings
    mi_option_show_stats,                 /// 1: print statistics at exit
    mi_option_verbose,                    /// 2: print informational messages
    mi_option_eager_commit,               /// 3: commit segments eagerly
    mi_option_arena_eager_commit,         /// 4: commit arenas up front (2 = only on overcommit systems)
    mi_option_purge_decommits,            /// 5: purge by decommitting (0 = reset only)
    mi_option_allow_large_os_pages,       /// 6: allow 2/4 MiB large OS pages
    mi_option_reserve_huge_os_pages,      /// 7: 1 GiB pages to reserve at start-up
    mi_option_reserve_huge_os_pages_at,   /// 8: NUMA node for those pages (-1 = all)
    mi_option_reserve_os_memory,          /// 9: KiB of OS memory to reserve at start-up
    mi_option_deprecated_segment_cache,   /// 10: unused
    mi_option_deprecated_page_reset,      /// 11: unused
    mi_option_abandoned_page_purge,       /// 12: purge abandoned segments right away at thread exit
    mi_option_deprecated_segment_reset,   /// 13: unused
    mi_option_eager_commit_delay,         /// 14: first N segments per thread are committed lazily
    mi_option_purge_delay,                /// 15: ms before unused memory is purged (-1 = never)
    mi_option_use_numa_nodes,             /// 16: assume at most N NUMA nodes (0 = detect)
    mi_option_disallow_os_alloc,          /// 17: only use pre-reserved arenas
    mi_option_os_tag,                     /// 18: macOS VM tag
    mi_option_max_errors,                 /// 19: maximum error messages printed
    mi_option_max_warnings,               /// 20: maximum warnings printed
    mi_option_max_segment_reclaim,        /// 21: % of abandoned segments examined per reclaim
    mi_option_destroy_on_exit,            /// 22: release all memory at process exit
    mi_option_arena_reserve,              /// 23: KiB per arena reserved on demand
    mi_option_arena_purge_mult,           /// 24: arena purge delay multiplier
    mi_option_purge_extend_delay,         /// 25: extra purge delay on later frees
    mi_option_abandoned_reclaim_on_free,  /// 26: a free into an ended thread's page adopts the page
    mi_option_disallow_arena_alloc,       /// 27: do not use arenas (except explicit arena heaps)
    mi_option_retry_on_oom,               /// 28: Windows: ms to retry failed OS allocations
    mi_option_visit_abandoned,            /// 29: allow mi_abandoned_visit_blocks
    mi_option_guarded_min,                /// 30: guarded builds: minimum guarded size
    mi_option_guarded_max,                /// 31: guarded builds: maximum guarded size
    mi_option_guarded_precise,            /// 32: place guarded objects right against the guard page
    mi_option_guarded_sample_rate,        /// 33: guard 1 in N eligible allocations
    mi_option_guarded_sample_seed,        /// 34: start of the sampling counter (0 = random)
    mi_option_target_segments_per_thread, /// 35: experimental: abandon segments beyond N per thread
    mi_option_generic_collect,            /// 36: collect every N slow-path allocations
    mi_option_allow_thp,                  /// 37: 0 = disable transparent huge pages
    _mi_option_last,                      /// 38: number of options
    // legacy names
    mi_option_large_os_pages = mi_option_allow_large_os_pages,    ///
    mi_option_eager_region_commit = mi_option_arena_eager_commit, ///
    mi_option_reset_decommits = mi_option_purge_decommits,        ///
    mi_option_reset_delay = mi_option_purge_delay,                ///
    mi_option_abandoned_page_reset = mi_option_abandoned_page_purge, ///
    mi_option_limit_os_alloc = mi_option_disallow_os_alloc,       ///
    // this implementation's own (MI_OPTION_EXT_FIRST ..)
    mi_option_live = 1000,                /// 1000: publish live statistics in /dev/shm for tools/mimalloc-live (MIMALLOC_LIVE)
    mi_option_live_interval = 1001,       /// 1001: ms between publications of the live statistics (10..60000)
    mi_option_purge_thread = 1002,        /// 1002: 0 = no background purger thread (MIMALLOC_PURGE_THREAD, default 1)
    mi_option_memory_limit = 1003,        /// 1003: soft memory limit in KiB, -P = P% of the cgroup's (default -100), 0 = none (MIMALLOC_MEMORY_LIMIT)
    mi_option_memory_limit_hard = 1004,   /// 1004: hard memory limit, as above (default 0; past it an allocation returns NULL)
}
/// The C tag name.
alias mi_option_e = mi_option_t;

// The C names of the values without the `mi_option_t.` prefix, as in C.
static foreach (_mi_member; __traits(allMembers, mi_option_t))
    mixin("enum mi_option_t " ~ _mi_member ~ " = mi_option_t." ~ _mi_member ~ ";");

bool mi_option_is_enabled(mi_option_t option);
void mi_option_enable(mi_option_t option);
void mi_option_disable(mi_option_t option);
void mi_option_set_enabled(mi_option_t option, bool enable);
void mi_option_set_enabled_default(mi_option_t option, bool enable);

c_long mi_option_get(mi_option_t option);
c_long mi_option_get_clamp(mi_option_t option, c_long min, c_long max);
size_t mi_option_get_size(mi_option_t option);
void mi_option_set(mi_option_t option, c_long value);
void mi_option_set_default(mi_option_t option, c_long value);
void mi_options_print();
void mi_options_print_out(mi_output_fun out_, void* arg);

/// The soft memory limit in force, in bytes (0: none); docs/memory.md.
size_t mi_memory_limit();
/// Set the soft memory limit (rounded up to KiB, at least 2; 0: none).
void mi_memory_limit_set(size_t bytes);

// ---------------------------------------------------------------------------
// mimalloc-stats.h

/// Bumped whenever the layout of mi_stats_t changes incompatibly.
enum size_t MI_STAT_VERSION = 4;
/// Index of the huge-size bin; the bin arrays have MI_BIN_HUGE+1 entries.
enum size_t MI_BIN_HUGE = 73;

/// An amount that goes up and down over time (bytes or objects).
struct mi_stat_count_s
{
    long total;   /// sum of all increases
    long peak;    /// highest value of `current` seen
    long current; /// value now
}
/// ditto
alias mi_stat_count_t = mi_stat_count_s;

/// A counter that only increases.
struct mi_stat_counter_s
{
    long total; ///
}
/// ditto
alias mi_stat_counter_t = mi_stat_counter_s;

/// The process-wide statistics (fields in the order of the header's MI_STAT_FIELDS).
struct mi_stats_s
{
    size_t size;    /// must be mi_stats_t.sizeof
    size_t version_; /// `version` in C (a keyword in D): must be MI_STAT_VERSION

    mi_stat_count_t pages;            /// pages in use
    mi_stat_count_t reserved;         /// bytes of address space reserved
    mi_stat_count_t committed;        /// bytes committed
    mi_stat_counter_t reset;          /// bytes reset
    mi_stat_counter_t purged;         /// bytes purged
    mi_stat_count_t page_committed;   /// bytes of committed page memory ("touched")
    mi_stat_count_t pages_abandoned;  /// abandoned pages
    mi_stat_count_t threads;          /// threads
    mi_stat_count_t malloc_normal;    /// bytes in binned (non-huge) blocks
    mi_stat_count_t malloc_huge;      /// bytes in huge blocks
    mi_stat_count_t malloc_requested; /// bytes requested by the program

    mi_stat_counter_t mmap_calls;           /// OS memory mappings
    mi_stat_counter_t commit_calls;         /// OS commit calls
    mi_stat_counter_t reset_calls;          /// OS reset calls
    mi_stat_counter_t purge_calls;          /// OS purge calls
    mi_stat_counter_t arena_count;          /// arenas created
    mi_stat_counter_t malloc_normal_count;  /// normal allocations
    mi_stat_counter_t malloc_huge_count;    /// huge allocations
    mi_stat_counter_t malloc_guarded_count; /// allocations given a guard page
    mi_stat_counter_t arena_rollback_count; /// arena reservations rolled back
    mi_stat_counter_t arena_purges;         /// arena purge passes
    mi_stat_counter_t pages_extended;       /// page free-list extensions
    mi_stat_counter_t pages_retire;         /// pages retired
    mi_stat_counter_t page_searches;        /// pages visited while searching
    mi_stat_counter_t page_searches_count;  /// page searches

    mi_stat_count_t segments;           /// segments
    mi_stat_count_t segments_abandoned; /// abandoned segments
    mi_stat_count_t segments_cache;     /// cached segments
    mi_stat_count_t _segments_reserved; /// reserved, unused

    mi_stat_counter_t pages_reclaim_on_alloc;    /// v3 only: stays 0
    mi_stat_counter_t pages_reclaim_on_free;     /// v3 only: stays 0
    mi_stat_counter_t pages_reabandon_full;      /// v3 only: stays 0
    mi_stat_counter_t pages_unabandon_busy_wait; /// v3 only: stays 0

    mi_stat_count_t[4] _stat_reserved;           /// room for growth
    mi_stat_counter_t[4] _stat_counter_reserved; /// room for growth

    mi_stat_count_t[MI_BIN_HUGE + 1] malloc_bins; /// live blocks per size bin
    mi_stat_count_t[MI_BIN_HUGE + 1] page_bins;   /// pages per size bin
}
/// ditto
alias mi_stats_t = mi_stats_s;

/// `mi_stats_t_decl(name)` of the C header: a zeroed mi_stats_t with `size` and `version`
/// set, ready for mi_stats_get.
extern (D) mi_stats_t mi_stats_t_init() pure @safe
{
    mi_stats_t s;
    s.size = mi_stats_t.sizeof;
    s.version_ = MI_STAT_VERSION;
    return s;
}

bool mi_stats_get(mi_stats_t* stats);
char* mi_stats_get_json(size_t buf_size, char* buf);

// ---------------------------------------------------------------------------
// 6. Typed allocation macros of the header, as templates: allocate n objects of type T.

extern (D)
{
    T* mi_malloc_tp(T)() { return cast(T*) mi_malloc(T.sizeof); }                       ///
    T* mi_zalloc_tp(T)() { return cast(T*) mi_zalloc(T.sizeof); }                       ///
    T* mi_calloc_tp(T)(size_t n) { return cast(T*) mi_calloc(n, T.sizeof); }            ///
    T* mi_mallocn_tp(T)(size_t n) { return cast(T*) mi_mallocn(n, T.sizeof); }          ///
    T* mi_reallocn_tp(T)(void* p, size_t n) { return cast(T*) mi_reallocn(p, n, T.sizeof); } ///
    T* mi_recalloc_tp(T)(void* p, size_t n) { return cast(T*) mi_recalloc(p, n, T.sizeof); } ///

    T* mi_heap_malloc_tp(T)(mi_heap_t* hp) { return cast(T*) mi_heap_malloc(hp, T.sizeof); } ///
    T* mi_heap_zalloc_tp(T)(mi_heap_t* hp) { return cast(T*) mi_heap_zalloc(hp, T.sizeof); } ///
    T* mi_heap_calloc_tp(T)(mi_heap_t* hp, size_t n) { return cast(T*) mi_heap_calloc(hp, n, T.sizeof); }   ///
    T* mi_heap_mallocn_tp(T)(mi_heap_t* hp, size_t n) { return cast(T*) mi_heap_mallocn(hp, n, T.sizeof); } ///
    T* mi_heap_reallocn_tp(T)(mi_heap_t* hp, void* p, size_t n) { return cast(T*) mi_heap_reallocn(hp, p, n, T.sizeof); } ///
    T* mi_heap_recalloc_tp(T)(mi_heap_t* hp, void* p, size_t n) { return cast(T*) mi_heap_recalloc(hp, p, n, T.sizeof); } ///
}

// v3-compatible spellings of the heap API (mi_theap_t is mi_heap_t).
alias mi_theap_get_default = mi_heap_get_default;       ///
alias mi_theap_set_default = mi_heap_set_default;       ///
alias mi_theap_collect = mi_heap_collect;               ///
alias mi_theap_malloc = mi_heap_malloc;                 ///
alias mi_theap_zalloc = mi_heap_zalloc;                 ///
alias mi_theap_calloc = mi_heap_calloc;                 ///
alias mi_theap_malloc_small = mi_heap_malloc_small;     ///
alias mi_theap_malloc_aligned = mi_heap_malloc_aligned; ///
alias mi_theap_realloc = mi_heap_realloc;               ///
