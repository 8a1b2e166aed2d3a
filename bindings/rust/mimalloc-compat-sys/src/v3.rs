//! mimalloc v3's API (the `v3` feature): the declarations a C program gets from
//! `include/mimalloc.h` when it defines `MI_V3_API` before the include (docs/v3-api.md),
//! where they differ from the v2 declarations at the crate root. Everything not declared here
//! has the same name, types and meaning in both modes: use it from the crate root.
//!
//! Each function has v3's name and types; `#[link_name]` gives the library's symbol when the
//! header maps the name onto another one in v3 mode (`mi_heap_new` is `mi_heap_new_shared`,
//! the arena, subprocess and option functions are `mi_v3_*`). `tests/header.rs` checks every
//! declaration, symbol and option number here against the header's v3 mode.
//!
//! - [`mi_heap_new`] makes a heap that any thread may allocate in; [`mi_heap_main`] is one
//!   heap for all threads (each allocates in its backing heap through it).
//! - [`mi_theap_t`] is one thread's part of a heap ([`mi_heap_theap`]), with its own
//!   `mi_theap_*` functions.
//! - [`mi_arena_id_t`] is a pointer (null: none) and [`mi_subproc_id_t`] v3's struct.
//! - The options have v3's numbers ([`_mi_option_last`] 47); the library translates them.
//!
//! ```
//! use mimalloc_compat_sys::{mi_free, v3};
//! unsafe {
//!     let heap = v3::mi_heap_new();
//!     let p = std::thread::scope(|s| {
//!         let heap = heap as usize; // any thread may allocate in the heap
//!         s.spawn(move || mimalloc_compat_sys::mi_heap_malloc(heap as *mut _, 64) as usize).join().unwrap()
//!     });
//!     mi_free(p as *mut _);
//!     mimalloc_compat_sys::mi_heap_delete(heap);
//! }
//! ```
#![allow(non_camel_case_types, non_upper_case_globals)]

use crate::{mi_heap_t, mi_output_fun, mi_stat_count_t, mi_stat_counter_t};
use core::ffi::{c_char, c_int, c_long, c_void};

// ---- Types ---------------------------------------------------------------------------------

/// One thread's part of a heap (a *theap*): only that thread allocates in it.
#[repr(C)]
pub struct mi_theap_t {
    _opaque: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// Arena identifier: the v2 id as a pointer value; null is "no particular arena".
pub type mi_arena_id_t = *mut c_void;

/// Subprocess identifier: v3's struct around the v2 id (null inside: the main subprocess).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct mi_subproc_id_t {
    /// the v2 id (`mimalloc_compat_sys::mi_subproc_id_t`)
    pub _mi_subproc_id: *mut c_void,
}

/// One area of equally sized blocks, as reported by the visitors (v3: the last field is
/// reserved; v2 mode's `heap_tag`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct mi_heap_area_t {
    /// start of the area
    pub blocks: *mut c_void,
    /// bytes reserved for the area
    pub reserved: usize,
    /// bytes currently committed
    pub committed: usize,
    /// number of blocks in use (a count, not bytes)
    pub used: usize,
    /// usable bytes of each block
    pub block_size: usize,
    /// bytes of each block including padding and metadata
    pub full_block_size: usize,
    /// internal
    pub reserved1: *mut c_void,
}

/// Block visitor of the v3 functions ([`mi_theap_visit_blocks`],
/// [`mi_heap_visit_abandoned_blocks`]).
pub type mi_block_visit_fun = unsafe extern "C" fn(
    heap: *const mi_heap_t,
    area: *const mi_heap_area_t,
    block: *mut c_void,
    block_size: usize,
    arg: *mut c_void,
) -> bool;

/// Heap visitor of [`mi_subproc_visit_heaps`]: return false to stop the walk.
pub type mi_heap_visit_fun = unsafe extern "C" fn(heap: *mut mi_heap_t, arg: *mut c_void) -> bool;

/// The program's commit (`commit` true; it may set `*is_zero`) or decommit (`commit` false,
/// `is_zero` null) of an arena's memory, for [`mi_manage_memory`]: false if it could not. It
/// runs with the allocator's locks held and must not allocate or free with it.
pub type mi_commit_fun_t =
    unsafe extern "C" fn(commit: bool, start: *mut c_void, size: usize, is_zero: *mut bool, user_arg: *mut c_void) -> bool;

// ---- mimalloc-stats.h: v3's layout (version 5) ---------------------------------------------

/// Layout version of v3's [`mi_stats_t`].
pub const MI_STAT_VERSION: usize = 5;
/// Index of the huge-size bin; the bin arrays have `MI_BIN_HUGE + 1` entries.
pub const MI_BIN_HUGE: usize = 73;
/// Entries of [`mi_stats_t::chunk_bins`] (`MI_CBIN_COUNT`).
pub const MI_CBIN_COUNT: usize = 6;

macro_rules! mi_v3_stats_struct {
    ($($kind:ident $name:ident,)*) => {
        /// v3's statistics (`mimalloc-stats.h` in v3 mode): a heap's ([`mi_heap_stats_get`]), a
        /// subprocess' ([`mi_subproc_stats_get`]) or the process' (`mi_stats_get`, which tells
        /// this layout from v2's by `size` and `version`). Make one with [`mi_stats_t::new`].
        #[repr(C)]
        #[derive(Debug, Clone, Copy)]
        pub struct mi_stats_t {
            /// must be `size_of::<mi_stats_t>()`
            pub size: usize,
            /// must be [`MI_STAT_VERSION`]
            pub version: usize,
            $(
                #[allow(missing_docs)]
                pub $name: mi_v3_stats_struct!(@ty $kind),
            )*
            /// room for growth
            pub _stat_reserved: [mi_stat_count_t; 4],
            /// room for growth
            pub _stat_counter_reserved: [mi_stat_counter_t; 4],
            /// live blocks per size bin
            pub malloc_bins: [mi_stat_count_t; MI_BIN_HUGE + 1],
            /// pages per size bin
            pub page_bins: [mi_stat_count_t; MI_BIN_HUGE + 1],
            /// arena chunks per kind (zero here)
            pub chunk_bins: [mi_stat_count_t; MI_CBIN_COUNT],
        }
    };
    (@ty count) => { mi_stat_count_t };
    (@ty counter) => { mi_stat_counter_t };
}

mi_v3_stats_struct! {
    count pages, count reserved, count committed, counter reset, counter purged,
    count page_committed, count pages_abandoned, count threads, count malloc_normal,
    count malloc_huge, count malloc_requested, counter mmap_calls, counter commit_calls,
    counter reset_calls, counter purge_calls, counter arena_count, counter malloc_normal_count,
    counter malloc_huge_count, counter malloc_guarded_count, counter arena_rollback_count,
    counter arena_purges, counter pages_extended, counter pages_retire, counter page_searches,
    counter page_searches_count, count segments, count segments_abandoned, count segments_cache,
    count _segments_reserved, count heaps, count theaps, counter pages_reclaim_on_alloc,
    counter pages_reclaim_on_free, counter pages_reabandon_full,
    counter pages_unabandon_busy_wait, counter heaps_delete_wait,
}

impl mi_stats_t {
    /// Zeroed, with `size` and `version` set (v3's `mi_stats_init`).
    pub fn new() -> Self {
        // SAFETY: every field is an integer or an array of them: all zeros is a valid value.
        let mut s: Self = unsafe { core::mem::zeroed() };
        s.size = core::mem::size_of::<Self>();
        s.version = MI_STAT_VERSION;
        s
    }
}

impl Default for mi_stats_t {
    fn default() -> Self {
        Self::new()
    }
}

// ---- Options: v3's numbering ---------------------------------------------------------------

/// Option identifier in v3's numbering (`mi_option_e` of v3 mode).
pub type mi_option_t = c_int;

/// print errors and warnings
pub const mi_option_show_errors: mi_option_t = 0;
/// print statistics at exit
pub const mi_option_show_stats: mi_option_t = 1;
/// print informational messages
pub const mi_option_verbose: mi_option_t = 2;
/// commit segments eagerly (v2's `eager_commit`, same number)
pub const mi_option_deprecated_eager_commit: mi_option_t = 3;
/// commit arenas up front (2 = only on overcommit systems)
pub const mi_option_arena_eager_commit: mi_option_t = 4;
/// purge by decommitting (0 = reset only)
pub const mi_option_purge_decommits: mi_option_t = 5;
/// allow 2/4 MiB large OS pages
pub const mi_option_allow_large_os_pages: mi_option_t = 6;
/// 1 GiB pages to reserve at start-up
pub const mi_option_reserve_huge_os_pages: mi_option_t = 7;
/// NUMA node for those pages (-1 = all)
pub const mi_option_reserve_huge_os_pages_at: mi_option_t = 8;
/// KiB of OS memory to reserve at start-up
pub const mi_option_reserve_os_memory: mi_option_t = 9;
/// unused
pub const mi_option_deprecated_segment_cache: mi_option_t = 10;
/// unused
pub const mi_option_deprecated_page_reset: mi_option_t = 11;
/// purge abandoned segments right away at thread exit (v2's `abandoned_page_purge`, same number)
pub const mi_option_deprecated_abandoned_page_purge: mi_option_t = 12;
/// unused
pub const mi_option_deprecated_segment_reset: mi_option_t = 13;
/// first N segments per thread are committed lazily (v2's `eager_commit_delay`, same number)
pub const mi_option_deprecated_eager_commit_delay: mi_option_t = 14;
/// ms before unused memory is purged (-1 = never)
pub const mi_option_purge_delay: mi_option_t = 15;
/// assume at most N NUMA nodes (0 = detect)
pub const mi_option_use_numa_nodes: mi_option_t = 16;
/// only use pre-reserved arenas
pub const mi_option_disallow_os_alloc: mi_option_t = 17;
/// macOS VM tag
pub const mi_option_os_tag: mi_option_t = 18;
/// maximum error messages printed
pub const mi_option_max_errors: mi_option_t = 19;
/// maximum warnings printed
pub const mi_option_max_warnings: mi_option_t = 20;
/// % of abandoned segments examined per reclaim (v2's `max_segment_reclaim`, same number)
pub const mi_option_deprecated_max_segment_reclaim: mi_option_t = 21;
/// release all memory at process exit
pub const mi_option_destroy_on_exit: mi_option_t = 22;
/// KiB per arena reserved on demand
pub const mi_option_arena_reserve: mi_option_t = 23;
/// arena purge delay multiplier
pub const mi_option_arena_purge_mult: mi_option_t = 24;
/// extra purge delay on later frees (v2's `purge_extend_delay`, same number)
pub const mi_option_deprecated_purge_extend_delay: mi_option_t = 25;
/// do not use arenas (except explicit arena heaps) (v2: 27)
pub const mi_option_disallow_arena_alloc: mi_option_t = 26;
/// Windows: ms to retry failed OS allocations (v2: 28)
pub const mi_option_retry_on_oom: mi_option_t = 27;
/// allow `mi_heap_visit_abandoned_blocks` (v2: 29)
pub const mi_option_visit_abandoned: mi_option_t = 28;
/// guarded builds: minimum guarded size (v2: 30)
pub const mi_option_guarded_min: mi_option_t = 29;
/// guarded builds: maximum guarded size (v2: 31)
pub const mi_option_guarded_max: mi_option_t = 30;
/// place guarded objects right against the guard page (v2: 32)
pub const mi_option_guarded_precise: mi_option_t = 31;
/// guard 1 in N eligible allocations (v2: 33)
pub const mi_option_guarded_sample_rate: mi_option_t = 32;
/// start of the sampling counter (0 = random) (v2: 34)
pub const mi_option_guarded_sample_seed: mi_option_t = 33;
/// collect every N slow-path allocations (v2: 36)
pub const mi_option_generic_collect: mi_option_t = 34;
/// v3 only: kept and read back, no effect here
pub const mi_option_page_reclaim_on_free: mi_option_t = 35;
/// v3 only: kept and read back, no effect here
pub const mi_option_page_full_retain: mi_option_t = 36;
/// v3 only: kept and read back, no effect here
pub const mi_option_page_max_candidates: mi_option_t = 37;
/// v3 only: kept and read back, no effect here
pub const mi_option_max_vabits: mi_option_t = 38;
/// v3 only: kept and read back, no effect here
pub const mi_option_pagemap_commit: mi_option_t = 39;
/// v3 only: kept and read back, no effect here
pub const mi_option_page_commit_on_demand: mi_option_t = 40;
/// v3 only: kept and read back, no effect here
pub const mi_option_page_max_reclaim: mi_option_t = 41;
/// v3 only: kept and read back, no effect here
pub const mi_option_page_cross_thread_max_reclaim: mi_option_t = 42;
/// 0 = disable transparent huge pages (v2: 37)
pub const mi_option_allow_thp: mi_option_t = 43;
/// v3 only (KiB): kept and read back, no effect here
pub const mi_option_minimal_purge_size: mi_option_t = 44;
/// v3 only (KiB): kept and read back, no effect here
pub const mi_option_arena_max_object_size: mi_option_t = 45;
/// v3 only: kept and read back, no effect here
pub const mi_option_arena_is_numa_local: mi_option_t = 46;
/// number of options (v2: 38)
pub const _mi_option_last: mi_option_t = 47;
/// legacy name of [`mi_option_allow_large_os_pages`]
pub const mi_option_large_os_pages: mi_option_t = mi_option_allow_large_os_pages;
/// legacy name of [`mi_option_arena_eager_commit`]
pub const mi_option_eager_region_commit: mi_option_t = mi_option_arena_eager_commit;
/// legacy name of [`mi_option_purge_decommits`]
pub const mi_option_reset_decommits: mi_option_t = mi_option_purge_decommits;
/// legacy name of [`mi_option_purge_delay`]
pub const mi_option_reset_delay: mi_option_t = mi_option_purge_delay;
/// legacy name of [`mi_option_disallow_os_alloc`]
pub const mi_option_limit_os_alloc: mi_option_t = mi_option_disallow_os_alloc;

// This implementation's own options: the same numbers in both modes.
pub use crate::{mi_option_live, mi_option_live_interval, mi_option_memory_limit, mi_option_memory_limit_hard,
                mi_option_purge_thread, MI_OPTION_EXT_FIRST};

// ---- Functions -----------------------------------------------------------------------------

// Each function is documented at its declaration in include/mimalloc.h (v3 mode).
#[allow(missing_docs)]
extern "C" {
    // ---- Heaps: any thread may allocate in a heap from `mi_heap_new` (and in the main heap)
    /// A heap any thread may allocate in (delete or destroy it once no thread allocates in it).
    #[link_name = "mi_heap_new_shared"]
    pub fn mi_heap_new() -> *mut mi_heap_t;
    #[link_name = "mi_v3_heap_new_in_arena"]
    pub fn mi_heap_new_in_arena(arena_id: mi_arena_id_t) -> *mut mi_heap_t;
    /// The NUMA node whose memory the heap's new pages prefer, -1 for none; null: the main heap.
    pub fn mi_heap_set_numa_affinity(heap: *mut mi_heap_t, numa_node: c_int);

    // ---- Heap introspection
    #[link_name = "mi_v3_check_owned"]
    pub fn mi_check_owned(p: *const c_void) -> bool;
    pub fn mi_heap_visit_abandoned_blocks(heap: *mut mi_heap_t, visit_blocks: bool, visitor: Option<mi_block_visit_fun>, arg: *mut c_void) -> bool;
    /// One heap for all threads: each thread allocates in its backing heap through it.
    #[link_name = "mi_v3_heap_main"]
    pub fn mi_heap_main() -> *mut mi_heap_t;
    #[link_name = "mi_v3_heap_of"]
    pub fn mi_heap_of(p: *const c_void) -> *mut mi_heap_t;
    #[link_name = "mi_v3_heap_contains"]
    pub fn mi_heap_contains(heap: *const mi_heap_t, p: *const c_void) -> bool;

    // ---- Arenas and OS memory: the pointer id
    #[link_name = "mi_v3_reserve_huge_os_pages_at_ex"]
    pub fn mi_reserve_huge_os_pages_at_ex(pages: usize, numa_node: c_int, timeout_msecs: usize, exclusive: bool, arena_id: *mut mi_arena_id_t) -> c_int;
    #[link_name = "mi_v3_reserve_os_memory_ex"]
    pub fn mi_reserve_os_memory_ex(size: usize, commit: bool, allow_large: bool, exclusive: bool, arena_id: *mut mi_arena_id_t) -> c_int;
    #[link_name = "mi_v3_manage_os_memory_ex"]
    pub fn mi_manage_os_memory_ex(start: *mut c_void, size: usize, is_committed: bool, is_large: bool, is_zero: bool, numa_node: c_int, exclusive: bool, arena_id: *mut mi_arena_id_t) -> bool;
    pub fn mi_manage_memory(start: *mut c_void, size: usize, is_committed: bool, is_pinned: bool, is_zero: bool, numa_node: c_int, exclusive: bool,
                            commit_fun: Option<mi_commit_fun_t>, commit_fun_arg: *mut c_void, arena_id: *mut mi_arena_id_t) -> bool;
    #[link_name = "mi_v3_arena_area"]
    pub fn mi_arena_area(arena_id: mi_arena_id_t, size: *mut usize) -> *mut c_void;
    #[link_name = "mi_v3_arena_contains"]
    pub fn mi_arena_contains(arena_id: mi_arena_id_t, p: *const c_void) -> bool;

    // ---- Subprocesses: v3's struct
    #[link_name = "mi_v3_subproc_main"]
    pub fn mi_subproc_main() -> mi_subproc_id_t;
    #[link_name = "mi_v3_subproc_current"]
    pub fn mi_subproc_current() -> mi_subproc_id_t;
    #[link_name = "mi_v3_subproc_new"]
    pub fn mi_subproc_new() -> mi_subproc_id_t;
    pub fn mi_subproc_destroy(subproc: mi_subproc_id_t);
    /// Calls `visitor` on the main heap, then on each heap of [`mi_heap_new`] that the
    /// subprocess' threads made and did not delete, until it returns false (then false). It
    /// runs under a lock: it must not make, delete or destroy a heap.
    #[link_name = "mi_v3_subproc_visit_heaps"]
    pub fn mi_subproc_visit_heaps(subproc: mi_subproc_id_t, visitor: Option<mi_heap_visit_fun>, arg: *mut c_void) -> bool;
    #[link_name = "mi_v3_subproc_add_current_thread"]
    pub fn mi_subproc_add_current_thread(subproc: mi_subproc_id_t);

    // ---- Theaps: a thread's own part of a heap
    pub fn mi_heap_theap(heap: *mut mi_heap_t) -> *mut mi_theap_t;
    pub fn mi_theap_set_default(theap: *mut mi_theap_t) -> *mut mi_theap_t;
    pub fn mi_theap_get_default() -> *mut mi_theap_t;
    pub fn mi_theap_collect(theap: *mut mi_theap_t, force: bool);
    pub fn mi_theap_malloc(theap: *mut mi_theap_t, size: usize) -> *mut c_void;
    pub fn mi_theap_zalloc(theap: *mut mi_theap_t, size: usize) -> *mut c_void;
    pub fn mi_theap_calloc(theap: *mut mi_theap_t, count: usize, size: usize) -> *mut c_void;
    pub fn mi_theap_malloc_small(theap: *mut mi_theap_t, size: usize) -> *mut c_void;
    pub fn mi_theap_zalloc_small(theap: *mut mi_theap_t, size: usize) -> *mut c_void;
    pub fn mi_theap_malloc_aligned(theap: *mut mi_theap_t, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_theap_realloc(theap: *mut mi_theap_t, p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_theap_guarded_set_sample_rate(theap: *mut mi_theap_t, sample_rate: usize, seed: usize);
    pub fn mi_theap_guarded_set_size_bound(theap: *mut mi_theap_t, min: usize, max: usize);
    pub fn mi_theap_visit_blocks(theap: *const mi_theap_t, visit_blocks: bool, visitor: Option<mi_block_visit_fun>, arg: *mut c_void) -> bool;

    // ---- Statistics (mimalloc-stats.h): a heap's, a subprocess', v3's layout
    pub fn mi_heap_stats_get(heap: *mut mi_heap_t, stats: *mut mi_stats_t) -> bool;
    pub fn mi_heap_stats_get_json(heap: *mut mi_heap_t, buf_size: usize, buf: *mut c_char) -> *mut c_char;
    pub fn mi_heap_stats_print_out(heap: *mut mi_heap_t, out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_heap_stats_merge_to_subproc(heap: *mut mi_heap_t);
    pub fn mi_subproc_stats_get(subproc_id: mi_subproc_id_t, stats: *mut mi_stats_t) -> bool;
    pub fn mi_subproc_stats_get_json(subproc_id: mi_subproc_id_t, buf_size: usize, buf: *mut c_char) -> *mut c_char;
    pub fn mi_subproc_stats_print_out(subproc_id: mi_subproc_id_t, out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_subproc_heap_stats_print_out(subproc_id: mi_subproc_id_t, out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_subproc_stats_get_exclusive(subproc_id: mi_subproc_id_t, stats: *mut mi_stats_t) -> bool;
    pub fn mi_stats_as_json(stats: *mut mi_stats_t, buf_size: usize, buf: *mut c_char) -> *mut c_char;
    pub fn mi_stats_get_bin_size(bin: usize) -> usize;

    // ---- Options: v3's numbers
    #[link_name = "mi_v3_option_is_enabled"]
    pub fn mi_option_is_enabled(option: mi_option_t) -> bool;
    #[link_name = "mi_v3_option_enable"]
    pub fn mi_option_enable(option: mi_option_t);
    #[link_name = "mi_v3_option_disable"]
    pub fn mi_option_disable(option: mi_option_t);
    #[link_name = "mi_v3_option_set_enabled"]
    pub fn mi_option_set_enabled(option: mi_option_t, enable: bool);
    #[link_name = "mi_v3_option_set_enabled_default"]
    pub fn mi_option_set_enabled_default(option: mi_option_t, enable: bool);
    #[link_name = "mi_v3_option_get"]
    pub fn mi_option_get(option: mi_option_t) -> c_long;
    #[link_name = "mi_v3_option_get_clamp"]
    pub fn mi_option_get_clamp(option: mi_option_t, min: c_long, max: c_long) -> c_long;
    #[link_name = "mi_v3_option_get_size"]
    pub fn mi_option_get_size(option: mi_option_t) -> usize;
    #[link_name = "mi_v3_option_set"]
    pub fn mi_option_set(option: mi_option_t, value: c_long);
    #[link_name = "mi_v3_option_set_default"]
    pub fn mi_option_set_default(option: mi_option_t, value: c_long);
}
