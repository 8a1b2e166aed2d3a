//! Raw bindings to this repository's allocator: every function, type, constant and option of
//! `include/mimalloc.h` and `include/mimalloc-stats.h` (the mimalloc v2.4.1 interface),
//! declared by hand and checked against the headers by this crate's tests
//! (`tests/header.rs` parses the headers; `tests/layout.rs` compares the layouts and values
//! that the C compiler reports through `c/probe.c`).
//!
//! The build script compiles the C library from the repository (`src/static.c`, one
//! translation unit) with the `cc` crate. Cargo features select the build: `override`,
//! `secure`, `debug`, `debug_in_debug`, `local_dynamic_tls`; `v2`, `extended`, `no_thp` and
//! `win_direct_tls` are accepted for compatibility with the `mimalloc` crate and change
//! nothing. The `v3` feature adds the module `v3`: mimalloc v3's API, as the
//! header declares it in its `MI_V3_API` mode (the crate root stays v2's).
//!
//! Everything here is `unsafe` to call; the `mimalloc-compat` crate has the safe wrappers and
//! the global allocator.
//!
//! ```
//! use mimalloc_compat_sys as ffi;
//! unsafe {
//!     let p = ffi::mi_malloc_aligned(100, 64);
//!     assert!(!p.is_null() && p as usize % 64 == 0);
//!     assert!(ffi::mi_usable_size(p) >= 100);
//!     ffi::mi_free(p);
//! }
//! assert_eq!(unsafe { ffi::mi_version() }, ffi::MI_MALLOC_VERSION);
//! ```
#![no_std]
#![allow(non_camel_case_types, non_upper_case_globals)]
#![warn(missing_docs)]

use core::ffi::{c_char, c_int, c_long, c_uchar, c_ulonglong, c_void};

#[cfg(feature = "v3")]
pub mod v3;

// ---- 1. Constants --------------------------------------------------------------------------

/// `MI_MALLOC_VERSION`: major*10000 + minor*100 + patch of the interface (2.4.1).
pub const MI_MALLOC_VERSION: c_int = 20401;
/// The `_small` allocation functions accept at most this many words.
pub const MI_SMALL_WSIZE_MAX: usize = 128;
/// The `_small` allocation functions accept at most this many bytes.
pub const MI_SMALL_SIZE_MAX: usize = MI_SMALL_WSIZE_MAX * core::mem::size_of::<*mut c_void>();
/// Layout version of [`mi_stats_t`] (`mimalloc-stats.h`).
pub const MI_STAT_VERSION: usize = 4;
/// Index of the huge-size bin; the bin arrays of [`mi_stats_t`] have `MI_BIN_HUGE + 1` entries.
pub const MI_BIN_HUGE: usize = 73;

// ---- 4. Types ------------------------------------------------------------------------------

/// Opaque first-class heap (owned by the thread that made it).
#[repr(C)]
pub struct mi_heap_t {
    _opaque: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}
/// The v3 name of [`mi_heap_t`].
pub type mi_theap_t = mi_heap_t;

/// Arena identifier: 0 is "no particular arena".
pub type mi_arena_id_t = c_int;
/// Subprocess identifier: null is the main subprocess.
pub type mi_subproc_id_t = *mut c_void;

/// One area of equally sized blocks, as reported by the heap visitors.
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
    /// tag of the heap the area belongs to
    pub heap_tag: c_int,
}

/// Block visitor: called once per area (`block` null) and, when asked for, once per live
/// block. Return false to stop the walk.
pub type mi_block_visit_fun = unsafe extern "C" fn(
    heap: *const mi_heap_t,
    area: *const mi_heap_area_t,
    block: *mut c_void,
    block_size: usize,
    arg: *mut c_void,
) -> bool;
/// Sink for every message the allocator prints.
pub type mi_output_fun = unsafe extern "C" fn(msg: *const c_char, arg: *mut c_void);
/// Error callback; receives an errno-style code.
pub type mi_error_fun = unsafe extern "C" fn(err: c_int, arg: *mut c_void);
/// Hook run regularly so that a program can release memory it deferred.
pub type mi_deferred_free_fun =
    unsafe extern "C" fn(force: bool, heartbeat: c_ulonglong, arg: *mut c_void);

/// `wchar_t` (32-bit signed on Linux).
pub type wchar_t = i32;

// ---- mimalloc-stats.h ----------------------------------------------------------------------

/// An amount that goes up and down over time.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct mi_stat_count_t {
    /// sum of all increases
    pub total: i64,
    /// highest value of `current` seen
    pub peak: i64,
    /// value now
    pub current: i64,
}

/// A counter that only increases.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct mi_stat_counter_t {
    /// the count
    pub total: i64,
}

/// Defines [`mi_stats_t`] from the header's field list (`MI_STAT_FIELDS`), and the list of
/// its field names and offsets that the layout test compares with the C compiler's.
macro_rules! mi_stats_struct {
    ($($kind:ident $name:ident,)*) => {
        /// The process-wide statistics (`mimalloc-stats.h`): fill with [`mi_stats_get`] after
        /// setting `size` and `version` (see [`mi_stats_t::new`]).
        #[repr(C)]
        #[derive(Debug, Clone, Copy)]
        pub struct mi_stats_t {
            /// must be `size_of::<mi_stats_t>()`
            pub size: usize,
            /// must be [`MI_STAT_VERSION`]
            pub version: usize,
            $(
                #[allow(missing_docs)]
                pub $name: mi_stats_struct!(@ty $kind),
            )*
            /// room for growth
            pub _stat_reserved: [mi_stat_count_t; 4],
            /// room for growth
            pub _stat_counter_reserved: [mi_stat_counter_t; 4],
            /// live blocks per size bin
            pub malloc_bins: [mi_stat_count_t; MI_BIN_HUGE + 1],
            /// pages per size bin
            pub page_bins: [mi_stat_count_t; MI_BIN_HUGE + 1],
        }

        /// `(field name, offset, size)` of every field of [`mi_stats_t`], for the layout test.
        #[doc(hidden)]
        pub const MI_STATS_FIELDS: &[(&str, usize, usize)] = &[
            ("size", core::mem::offset_of!(mi_stats_t, size), core::mem::size_of::<usize>()),
            ("version", core::mem::offset_of!(mi_stats_t, version), core::mem::size_of::<usize>()),
            $( (stringify!($name), core::mem::offset_of!(mi_stats_t, $name),
                core::mem::size_of::<mi_stats_struct!(@ty $kind)>()), )*
            ("_stat_reserved", core::mem::offset_of!(mi_stats_t, _stat_reserved),
                core::mem::size_of::<[mi_stat_count_t; 4]>()),
            ("_stat_counter_reserved", core::mem::offset_of!(mi_stats_t, _stat_counter_reserved),
                core::mem::size_of::<[mi_stat_counter_t; 4]>()),
            ("malloc_bins", core::mem::offset_of!(mi_stats_t, malloc_bins),
                core::mem::size_of::<[mi_stat_count_t; MI_BIN_HUGE + 1]>()),
            ("page_bins", core::mem::offset_of!(mi_stats_t, page_bins),
                core::mem::size_of::<[mi_stat_count_t; MI_BIN_HUGE + 1]>()),
        ];
    };
    (@ty count) => { mi_stat_count_t };
    (@ty counter) => { mi_stat_counter_t };
}

mi_stats_struct! {
    count pages,
    count reserved,
    count committed,
    counter reset,
    counter purged,
    count page_committed,
    count pages_abandoned,
    count threads,
    count malloc_normal,
    count malloc_huge,
    count malloc_requested,
    counter mmap_calls,
    counter commit_calls,
    counter reset_calls,
    counter purge_calls,
    counter arena_count,
    counter malloc_normal_count,
    counter malloc_huge_count,
    counter malloc_guarded_count,
    counter arena_rollback_count,
    counter arena_purges,
    counter pages_extended,
    counter pages_retire,
    counter page_searches,
    counter page_searches_count,
    count segments,
    count segments_abandoned,
    count segments_cache,
    count _segments_reserved,
    counter pages_reclaim_on_alloc,
    counter pages_reclaim_on_free,
    counter pages_reabandon_full,
    counter pages_unabandon_busy_wait,
}

impl mi_stats_t {
    /// A zeroed struct with `size` and `version` set, ready for [`mi_stats_get`]
    /// (the `mi_stats_t_decl` macro of the header).
    pub fn new() -> Self {
        // SAFETY: all fields are integers (or arrays of them), for which zero is valid
        let mut stats: mi_stats_t = unsafe { core::mem::zeroed() };
        stats.size = core::mem::size_of::<mi_stats_t>();
        stats.version = MI_STAT_VERSION;
        stats
    }
}

impl Default for mi_stats_t {
    fn default() -> Self {
        Self::new()
    }
}

// ---- 7. Options ----------------------------------------------------------------------------

/// Option identifier (`mi_option_e`); the numbering is part of the ABI.
pub type mi_option_t = c_int;

/// print errors and warnings
pub const mi_option_show_errors: mi_option_t = 0;
/// print statistics at exit
pub const mi_option_show_stats: mi_option_t = 1;
/// print informational messages
pub const mi_option_verbose: mi_option_t = 2;
/// commit segments eagerly
pub const mi_option_eager_commit: mi_option_t = 3;
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
/// purge abandoned segments right away at thread exit
pub const mi_option_abandoned_page_purge: mi_option_t = 12;
/// unused
pub const mi_option_deprecated_segment_reset: mi_option_t = 13;
/// first N segments per thread are committed lazily
pub const mi_option_eager_commit_delay: mi_option_t = 14;
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
/// % of abandoned segments examined per reclaim
pub const mi_option_max_segment_reclaim: mi_option_t = 21;
/// release all memory at process exit
pub const mi_option_destroy_on_exit: mi_option_t = 22;
/// KiB per arena reserved on demand
pub const mi_option_arena_reserve: mi_option_t = 23;
/// arena purge delay multiplier
pub const mi_option_arena_purge_mult: mi_option_t = 24;
/// extra purge delay on later frees
pub const mi_option_purge_extend_delay: mi_option_t = 25;
/// a free may reclaim an abandoned segment
pub const mi_option_abandoned_reclaim_on_free: mi_option_t = 26;
/// do not use arenas (except explicit arena heaps)
pub const mi_option_disallow_arena_alloc: mi_option_t = 27;
/// Windows: ms to retry failed OS allocations
pub const mi_option_retry_on_oom: mi_option_t = 28;
/// allow `mi_abandoned_visit_blocks`
pub const mi_option_visit_abandoned: mi_option_t = 29;
/// guarded builds: minimum guarded size
pub const mi_option_guarded_min: mi_option_t = 30;
/// guarded builds: maximum guarded size
pub const mi_option_guarded_max: mi_option_t = 31;
/// place guarded objects right against the guard page
pub const mi_option_guarded_precise: mi_option_t = 32;
/// guard 1 in N eligible allocations
pub const mi_option_guarded_sample_rate: mi_option_t = 33;
/// start of the sampling counter (0 = random)
pub const mi_option_guarded_sample_seed: mi_option_t = 34;
/// experimental: abandon segments beyond N per thread
pub const mi_option_target_segments_per_thread: mi_option_t = 35;
/// collect every N slow-path allocations
pub const mi_option_generic_collect: mi_option_t = 36;
/// 0 = disable transparent huge pages
pub const mi_option_allow_thp: mi_option_t = 37;
/// number of options
pub const _mi_option_last: mi_option_t = 38;
/// legacy name of [`mi_option_allow_large_os_pages`]
pub const mi_option_large_os_pages: mi_option_t = mi_option_allow_large_os_pages;
/// legacy name of [`mi_option_arena_eager_commit`]
pub const mi_option_eager_region_commit: mi_option_t = mi_option_arena_eager_commit;
/// legacy name of [`mi_option_purge_decommits`]
pub const mi_option_reset_decommits: mi_option_t = mi_option_purge_decommits;
/// legacy name of [`mi_option_purge_delay`]
pub const mi_option_reset_delay: mi_option_t = mi_option_purge_delay;
/// legacy name of [`mi_option_abandoned_page_purge`]
pub const mi_option_abandoned_page_reset: mi_option_t = mi_option_abandoned_page_purge;
/// legacy name of [`mi_option_disallow_os_alloc`]
pub const mi_option_limit_os_alloc: mi_option_t = mi_option_disallow_os_alloc;

// This implementation's own options, numbered from `MI_OPTION_EXT_FIRST` on so that
// mimalloc's numbering (0 .. `_mi_option_last`) stays unchanged. `#define`s in the header.

/// The number of the first option of this implementation beyond mimalloc's.
pub const MI_OPTION_EXT_FIRST: c_int = 1000;
/// publish live statistics in shared memory (`/dev/shm/mimalloc-live.<pid>`) for
/// `tools/mimalloc-live` (`MIMALLOC_LIVE`; docs/live.md)
pub const mi_option_live: mi_option_t = 1000;
/// ms between publications of the live statistics, 10..60000 (`MIMALLOC_LIVE_INTERVAL`)
pub const mi_option_live_interval: mi_option_t = 1001;
/// 0: no background purger thread (`MIMALLOC_PURGE_THREAD`, default 1)
pub const mi_option_purge_thread: mi_option_t = 1002;
/// the soft memory limit in KiB, or -P for P% of the cgroup's limit (default -100: the cgroup's
/// limit; 0: none) (`MIMALLOC_MEMORY_LIMIT`; docs/memory.md)
pub const mi_option_memory_limit: mi_option_t = 1003;
/// the hard memory limit, as above (default 0: none; past it an allocation returns NULL, ENOMEM) (`MIMALLOC_MEMORY_LIMIT_HARD`)
pub const mi_option_memory_limit_hard: mi_option_t = 1004;

// ---- 5. Functions (in the header's order) --------------------------------------------------

// Each function is documented at its declaration in include/mimalloc.h (or mimalloc-stats.h).
#[allow(missing_docs)]
extern "C" {
    // ---- Basic allocation (default heap; free anything with `mi_free`)
    pub fn mi_malloc(size: usize) -> *mut c_void;
    pub fn mi_calloc(count: usize, size: usize) -> *mut c_void;
    pub fn mi_realloc(p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_free(p: *mut c_void);

    // ---- Extended allocation
    pub fn mi_zalloc(size: usize) -> *mut c_void;
    pub fn mi_mallocn(count: usize, size: usize) -> *mut c_void;
    pub fn mi_reallocn(p: *mut c_void, count: usize, size: usize) -> *mut c_void;
    pub fn mi_reallocf(p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_expand(p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_usable_size(p: *const c_void) -> usize;
    pub fn mi_good_size(size: usize) -> usize;
    pub fn mi_strdup(s: *const c_char) -> *mut c_char;
    pub fn mi_strndup(s: *const c_char, n: usize) -> *mut c_char;
    pub fn mi_realpath(fname: *const c_char, resolved_name: *mut c_char) -> *mut c_char;
    pub fn mi_malloc_small(size: usize) -> *mut c_void;
    pub fn mi_zalloc_small(size: usize) -> *mut c_void;
    pub fn mi_free_small(p: *mut c_void);

    // ---- Usable-size reporting variants: the usable size is also stored through the extra `*mut usize` when it is not null
    pub fn mi_umalloc(size: usize, block_size: *mut usize) -> *mut c_void;
    pub fn mi_ucalloc(count: usize, size: usize, block_size: *mut usize) -> *mut c_void;
    pub fn mi_urealloc(p: *mut c_void, newsize: usize, block_size_pre: *mut usize, block_size_post: *mut usize) -> *mut c_void;
    pub fn mi_ufree(p: *mut c_void, block_size: *mut usize);
    pub fn mi_umalloc_aligned(size: usize, alignment: usize, block_size: *mut usize) -> *mut c_void;
    pub fn mi_uzalloc_aligned(size: usize, alignment: usize, block_size: *mut usize) -> *mut c_void;
    pub fn mi_umalloc_small(size: usize, block_size: *mut usize) -> *mut c_void;
    pub fn mi_uzalloc_small(size: usize, block_size: *mut usize) -> *mut c_void;

    // ---- Aligned allocation: `alignment` is a power of two and comes after the size; `_at` variants align `p + offset`
    pub fn mi_malloc_aligned(size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_malloc_aligned_at(size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_zalloc_aligned(size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_zalloc_aligned_at(size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_calloc_aligned(count: usize, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_calloc_aligned_at(count: usize, size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_realloc_aligned(p: *mut c_void, newsize: usize, alignment: usize) -> *mut c_void;
    pub fn mi_realloc_aligned_at(p: *mut c_void, newsize: usize, alignment: usize, offset: usize) -> *mut c_void;

    // ---- Heaps: only the thread that made a heap may allocate from, collect, delete or destroy it; its blocks can be freed with `mi_free` on any thread
    pub fn mi_heap_new() -> *mut mi_heap_t;
    pub fn mi_heap_new_in_arena(arena_id: mi_arena_id_t) -> *mut mi_heap_t;
    pub fn mi_heap_new_ex(heap_tag: c_int, allow_destroy: bool, arena_id: mi_arena_id_t) -> *mut mi_heap_t;
    /// A heap any thread may allocate in (mimalloc v3's heap; docs/v3-api.md): each thread
    /// allocates in its own part of it; delete or destroy once no thread allocates in it.
    pub fn mi_heap_new_shared() -> *mut mi_heap_t;
    pub fn mi_heap_new_shared_in_arena(arena_id: mi_arena_id_t) -> *mut mi_heap_t;
    pub fn mi_heap_delete(heap: *mut mi_heap_t);
    pub fn mi_heap_destroy(heap: *mut mi_heap_t);
    pub fn mi_heap_set_default(heap: *mut mi_heap_t) -> *mut mi_heap_t;
    pub fn mi_heap_get_default() -> *mut mi_heap_t;
    pub fn mi_heap_get_backing() -> *mut mi_heap_t;
    pub fn mi_heap_collect(heap: *mut mi_heap_t, force: bool);
    pub fn mi_heap_malloc(heap: *mut mi_heap_t, size: usize) -> *mut c_void;
    pub fn mi_heap_zalloc(heap: *mut mi_heap_t, size: usize) -> *mut c_void;
    pub fn mi_heap_calloc(heap: *mut mi_heap_t, count: usize, size: usize) -> *mut c_void;
    pub fn mi_heap_mallocn(heap: *mut mi_heap_t, count: usize, size: usize) -> *mut c_void;
    pub fn mi_heap_malloc_small(heap: *mut mi_heap_t, size: usize) -> *mut c_void;
    pub fn mi_heap_zalloc_small(heap: *mut mi_heap_t, size: usize) -> *mut c_void;
    pub fn mi_heap_realloc(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_heap_reallocn(heap: *mut mi_heap_t, p: *mut c_void, count: usize, size: usize) -> *mut c_void;
    pub fn mi_heap_reallocf(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_heap_strdup(heap: *mut mi_heap_t, s: *const c_char) -> *mut c_char;
    pub fn mi_heap_strndup(heap: *mut mi_heap_t, s: *const c_char, n: usize) -> *mut c_char;
    pub fn mi_heap_realpath(heap: *mut mi_heap_t, fname: *const c_char, resolved_name: *mut c_char) -> *mut c_char;
    pub fn mi_heap_malloc_aligned(heap: *mut mi_heap_t, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_heap_malloc_aligned_at(heap: *mut mi_heap_t, size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_heap_zalloc_aligned(heap: *mut mi_heap_t, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_heap_zalloc_aligned_at(heap: *mut mi_heap_t, size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_heap_calloc_aligned(heap: *mut mi_heap_t, count: usize, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_heap_calloc_aligned_at(heap: *mut mi_heap_t, count: usize, size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_heap_realloc_aligned(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize, alignment: usize) -> *mut c_void;
    pub fn mi_heap_realloc_aligned_at(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_heap_guarded_set_sample_rate(heap: *mut mi_heap_t, sample_rate: usize, seed: usize);
    pub fn mi_heap_guarded_set_size_bound(heap: *mut mi_heap_t, min: usize, max: usize);

    // ---- Zero-initialised re-allocation (for blocks that were allocated zeroed)
    pub fn mi_rezalloc(p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_recalloc(p: *mut c_void, newcount: usize, size: usize) -> *mut c_void;
    pub fn mi_rezalloc_aligned(p: *mut c_void, newsize: usize, alignment: usize) -> *mut c_void;
    pub fn mi_rezalloc_aligned_at(p: *mut c_void, newsize: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_recalloc_aligned(p: *mut c_void, newcount: usize, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_recalloc_aligned_at(p: *mut c_void, newcount: usize, size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_heap_rezalloc(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_heap_recalloc(heap: *mut mi_heap_t, p: *mut c_void, newcount: usize, size: usize) -> *mut c_void;
    pub fn mi_heap_rezalloc_aligned(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize, alignment: usize) -> *mut c_void;
    pub fn mi_heap_rezalloc_aligned_at(heap: *mut mi_heap_t, p: *mut c_void, newsize: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_heap_recalloc_aligned(heap: *mut mi_heap_t, p: *mut c_void, newcount: usize, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_heap_recalloc_aligned_at(heap: *mut mi_heap_t, p: *mut c_void, newcount: usize, size: usize, alignment: usize, offset: usize) -> *mut c_void;

    // ---- Heap introspection
    pub fn mi_heap_contains_block(heap: *mut mi_heap_t, p: *const c_void) -> bool;
    pub fn mi_heap_check_owned(heap: *mut mi_heap_t, p: *const c_void) -> bool;
    pub fn mi_check_owned(p: *const c_void) -> bool;
    pub fn mi_heap_visit_blocks(heap: *const mi_heap_t, visit_blocks: bool, visitor: Option<mi_block_visit_fun>, arg: *mut c_void) -> bool;
    pub fn mi_abandoned_visit_blocks(subproc_id: mi_subproc_id_t, heap_tag: c_int, visit_blocks: bool, visitor: Option<mi_block_visit_fun>, arg: *mut c_void) -> bool;
    pub fn mi_is_in_heap_region(p: *const c_void) -> bool;
    pub fn mi_unsafe_heap_page_is_under_utilized(heap: *mut mi_heap_t, p: *mut c_void, perc_threshold: usize) -> bool;
    pub fn mi_heap_main() -> *mut mi_heap_t;
    pub fn mi_heap_of(p: *const c_void) -> *mut mi_heap_t;
    pub fn mi_heap_contains(heap: *const mi_heap_t, p: *const c_void) -> bool;
    pub fn mi_any_heap_contains(p: *const c_void) -> bool;

    // ---- Statistics and process information
    pub fn mi_stats_reset();
    pub fn mi_stats_merge();
    pub fn mi_stats_print(out: *mut c_void);
    pub fn mi_stats_print_out(out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_thread_stats_print_out(out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_process_info(elapsed_msecs: *mut usize, user_msecs: *mut usize, system_msecs: *mut usize, current_rss: *mut usize, peak_rss: *mut usize, current_commit: *mut usize, peak_commit: *mut usize, page_faults: *mut usize);
    pub fn mi_process_info_print_out(out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_process_info_print();

    // ---- Output, error and deferred-free registration (one process-wide slot each; `None` restores the default)
    pub fn mi_register_output(out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_register_error(fun: Option<mi_error_fun>, arg: *mut c_void);
    pub fn mi_register_deferred_free(deferred_free: Option<mi_deferred_free_fun>, arg: *mut c_void);

    // ---- Arenas and OS memory
    pub fn mi_reserve_huge_os_pages_interleave(pages: usize, numa_nodes: usize, timeout_msecs: usize) -> c_int;
    pub fn mi_reserve_huge_os_pages_at(pages: usize, numa_node: c_int, timeout_msecs: usize) -> c_int;
    pub fn mi_reserve_huge_os_pages_at_ex(pages: usize, numa_node: c_int, timeout_msecs: usize, exclusive: bool, arena_id: *mut mi_arena_id_t) -> c_int;
    pub fn mi_reserve_os_memory(size: usize, commit: bool, allow_large: bool) -> c_int;
    pub fn mi_reserve_os_memory_ex(size: usize, commit: bool, allow_large: bool, exclusive: bool, arena_id: *mut mi_arena_id_t) -> c_int;
    pub fn mi_manage_os_memory(start: *mut c_void, size: usize, is_committed: bool, is_large: bool, is_zero: bool, numa_node: c_int) -> bool;
    pub fn mi_manage_os_memory_ex(start: *mut c_void, size: usize, is_committed: bool, is_large: bool, is_zero: bool, numa_node: c_int, exclusive: bool, arena_id: *mut mi_arena_id_t) -> bool;
    pub fn mi_arena_area(arena_id: mi_arena_id_t, size: *mut usize) -> *mut c_void;
    pub fn mi_arena_contains(arena_id: mi_arena_id_t, p: *const c_void) -> bool;
    pub fn mi_arena_min_alignment() -> usize;
    pub fn mi_arena_min_size() -> usize;
    pub fn mi_debug_show_arenas();
    pub fn mi_arenas_print();
    pub fn mi_reserve_huge_os_pages(pages: usize, max_secs: f64, pages_reserved: *mut usize) -> c_int;

    // ---- Subprocesses
    pub fn mi_subproc_main() -> mi_subproc_id_t;
    pub fn mi_subproc_current() -> mi_subproc_id_t;
    pub fn mi_subproc_new() -> mi_subproc_id_t;
    pub fn mi_subproc_delete(subproc: mi_subproc_id_t);
    pub fn mi_subproc_add_current_thread(subproc: mi_subproc_id_t);

    // ---- Process and thread life cycle, misc
    pub fn mi_process_init();
    pub fn mi_process_done();
    pub fn mi_thread_init();
    pub fn mi_thread_done();
    pub fn mi_thread_set_in_threadpool();
    pub fn mi_is_redirected() -> bool;
    pub fn mi_collect(force: bool);
    pub fn mi_collect_reduce(target_thread_owned: usize);

    // ---- Sampling heap profiler (this implementation's): release builds on Linux, elsewhere both return false
    /// Samples about one allocation per `rate` bytes allocated (0: 512 KiB) with its call
    /// stack, on every thread from its next allocation; true if the profiler is on (a second
    /// call keeps the first rate). `MIMALLOC_PROFILE=path` switches it on at start-up.
    pub fn mi_profile_start(rate: usize) -> bool;
    /// Writes the profile now: `path.pb` (pprof), `path.txt` (top call sites),
    /// `path.inuse.folded` and `path.alloc.folded` (flame graphs); `%p` in `path` is the
    /// process id. True if all four files were written.
    pub fn mi_profile_dump(path: *const c_char) -> bool;

    // ---- Version
    pub fn mi_version() -> c_int;

    // ---- POSIX / Unix / Windows compatibility
    pub fn mi_cfree(p: *mut c_void);
    pub fn mi__expand(p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_malloc_size(p: *const c_void) -> usize;
    pub fn mi_malloc_good_size(size: usize) -> usize;
    pub fn mi_malloc_usable_size(p: *const c_void) -> usize;
    pub fn mi_posix_memalign(p: *mut *mut c_void, alignment: usize, size: usize) -> c_int;
    pub fn mi_memalign(alignment: usize, size: usize) -> *mut c_void;
    pub fn mi_valloc(size: usize) -> *mut c_void;
    pub fn mi_pvalloc(size: usize) -> *mut c_void;
    pub fn mi_aligned_alloc(alignment: usize, size: usize) -> *mut c_void;
    pub fn mi_reallocarray(p: *mut c_void, count: usize, size: usize) -> *mut c_void;
    pub fn mi_reallocarr(ptrp: *mut c_void, count: usize, size: usize) -> c_int;
    pub fn mi_aligned_recalloc(p: *mut c_void, newcount: usize, size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_aligned_offset_recalloc(p: *mut c_void, newcount: usize, size: usize, alignment: usize, offset: usize) -> *mut c_void;
    pub fn mi_free_size(p: *mut c_void, size: usize);
    pub fn mi_free_size_aligned(p: *mut c_void, size: usize, alignment: usize);
    pub fn mi_free_aligned(p: *mut c_void, alignment: usize);
    pub fn mi_dupenv_s(buf: *mut *mut c_char, size: *mut usize, name: *const c_char) -> c_int;
    pub fn mi_wdupenv_s(buf: *mut *mut wchar_t, size: *mut usize, name: *const wchar_t) -> c_int;
    pub fn mi_wcsdup(s: *const wchar_t) -> *mut wchar_t;
    pub fn mi_mbsdup(s: *const c_uchar) -> *mut c_uchar;

    // ---- C++ allocation helpers (operator-new semantics: the throwing ones are not meant to be called from Rust, where a C++ exception cannot unwind; use the `_nothrow` forms)
    pub fn mi_new(size: usize) -> *mut c_void;
    pub fn mi_new_aligned(size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_new_nothrow(size: usize) -> *mut c_void;
    pub fn mi_new_aligned_nothrow(size: usize, alignment: usize) -> *mut c_void;
    pub fn mi_new_n(count: usize, size: usize) -> *mut c_void;
    pub fn mi_new_realloc(p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_new_reallocn(p: *mut c_void, newcount: usize, size: usize) -> *mut c_void;
    pub fn mi_heap_alloc_new(heap: *mut mi_heap_t, size: usize) -> *mut c_void;
    pub fn mi_heap_alloc_new_n(heap: *mut mi_heap_t, count: usize, size: usize) -> *mut c_void;

    // ---- Options
    pub fn mi_option_is_enabled(option: mi_option_t) -> bool;
    pub fn mi_option_enable(option: mi_option_t);
    pub fn mi_option_disable(option: mi_option_t);
    pub fn mi_option_set_enabled(option: mi_option_t, enable: bool);
    pub fn mi_option_set_enabled_default(option: mi_option_t, enable: bool);
    pub fn mi_option_get(option: mi_option_t) -> c_long;
    pub fn mi_option_get_clamp(option: mi_option_t, min: c_long, max: c_long) -> c_long;
    pub fn mi_option_get_size(option: mi_option_t) -> usize;
    pub fn mi_option_set(option: mi_option_t, value: c_long);
    pub fn mi_option_set_default(option: mi_option_t, value: c_long);
    pub fn mi_options_print();
    pub fn mi_options_print_out(out: Option<mi_output_fun>, arg: *mut c_void);
    pub fn mi_memory_limit() -> usize;
    pub fn mi_memory_limit_set(bytes: usize);

    // ---- mimalloc-stats.h
    pub fn mi_stats_get(stats: *mut mi_stats_t) -> bool;
    pub fn mi_stats_get_json(buf_size: usize, buf: *mut c_char) -> *mut c_char;
}

/// The layout probe compiled from `c/probe.c`: the C compiler's view of the headers' sizes,
/// offsets and values, for this crate's tests. Not part of the API.
#[doc(hidden)]
pub mod probe {
    use core::ffi::c_char;

    /// One `(name, value)` row of the probe table.
    #[repr(C)]
    pub struct mi_compat_probe_entry_t {
        /// e.g. `sizeof(mi_heap_area_t)` or `mi_option_verbose`
        pub name: *const c_char,
        /// the value the C compiler computed
        pub value: i64,
    }

    extern "C" {
        /// The table and its length.
        pub fn mi_compat_probe_table(count: *mut usize) -> *const mi_compat_probe_entry_t;
        /// The table of the header's v3 mode (`c/probe_v3.c`) and its length.
        pub fn mi_compat_probe_v3_table(count: *mut usize) -> *const mi_compat_probe_entry_t;
    }
}
