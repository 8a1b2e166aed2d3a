/* SPDX-License-Identifier: MIT */
/* Internal functions, grouped by the file that owns them, and the inline helpers of the fast
   paths. Public names are mi_, internal ones _mi_, everything else is static. */
#pragma once
#include "types.h"
#include "track.h"
#include "sheap.h"
#include "sched.h"   /* the schedule fuzzer's points (test builds) */
#include <string.h>
#include <stdarg.h>

#if defined(__GNUC__)
#define mi_likely(x)      __builtin_expect(!!(x), 1)
#define mi_unlikely(x)    __builtin_expect(!!(x), 0)
#define mi_decl_noinline  __attribute__((noinline))
#define mi_decl_cold      __attribute__((cold))
#if defined(_WIN32)
/* PE has neither TLS models nor symbol visibility (exports are chosen by dllexport) */
#define mi_decl_thread    __thread
#define mi_decl_hidden
#else
#define mi_decl_thread    __thread __attribute__((tls_model("initial-exec")))
#define mi_decl_hidden    __attribute__((visibility("hidden")))
#endif
#define mi_decl_weak      __attribute__((weak))
/* malloc and free entry points: a cache-line aligned start measured 2-3% faster on
   bench-st than wherever the unity build happens to place them */
#define mi_decl_cache_align __attribute__((aligned(64)))
/* Makes the compiler keep x in a register as computed (no rematerialisation); no code. */
#define mi_opaque_reg(x)  __asm__("" : "+r"(x))
/* Large zero-initialised tables that a process touches rarely or sparsely (the segment map,
   spare parts, report buffers): kept together, away from the small variables that every
   process touches at start-up, so that those share a few pages (each page of zero data costs
   a page fault when first touched, two when first read and then written). Zero-initialised
   data only (a .bss.* section, so it takes no room in the file). */
#if defined(_WIN32)
#define mi_decl_cold_bss  /* PE: a named section would be stored as initialised data (32 MiB of zeros) */
#elif defined(__APPLE__)
#define mi_decl_cold_bss  /* Mach-O: plain zero-fill data (no ELF .bss.* section names) */
#else
#define mi_decl_cold_bss  __attribute__((section(".bss.mi_cold")))
#endif
#else
#define mi_likely(x)      (x)
#define mi_unlikely(x)    (x)
#define mi_decl_noinline
#define mi_decl_cold
#define mi_decl_thread    _Thread_local
#define mi_decl_hidden
#define mi_decl_weak
#define mi_decl_cache_align
#define mi_opaque_reg(x)  ((void)(x))
#define mi_decl_cold_bss
#endif

#if MI_DEBUG > 0
void _mi_assert_fail(const char* assertion, const char* fname, unsigned line, const char* func);
#define mi_assert(expr)   ((expr) ? (void)0 : _mi_assert_fail(#expr, __FILE__, __LINE__, __func__))
#else
#define mi_assert(x)      ((void)0)
#endif
#if MI_DEBUG > 1
#define mi_assert_internal  mi_assert
#else
#define mi_assert_internal(x) ((void)0)
#endif
#if MI_DEBUG > 2
#define mi_assert_expensive mi_assert
#else
#define mi_assert_expensive(x) ((void)0)
#endif

/* ------------------------------------------------------------------------------------------
   init.c: process and thread life cycle
------------------------------------------------------------------------------------------ */
extern const mi_page_t  _mi_page_empty;           /* free == NULL: always takes the slow path */
extern const mi_heap_t  _mi_thread_empty_heap;    /* default heap of uninitialised threads */
extern mi_heap_t        _mi_thread_main_heap;     /* backing heap of the first thread */
extern mi_subproc_t     _mi_subproc_main;
#if defined(_WIN32) && defined(__x86_64__) && defined(__GNUC__)
/* Windows x64: mingw-w64's gcc has only emulated TLS (a call into libgcc per access, which
   allocates on a thread's first access), so the one TLS pointer is native TLS made by hand:
   it sits in the image's TLS template (section .tls$MI, between the CRT's _tls_start in .tls
   and _tls_end in .tls$ZZZ) and is reached through the TEB's ThreadLocalStoragePointer
   (%gs:0x58) indexed by the image's _tls_index, at its section-relative offset (SECREL32).
   Never access _mi_thread_default_heap directly there: only through _mi_thread_default_heap_ptr(). */
#define MI_TLS_PE 1
extern mi_heap_t* _mi_thread_default_heap;
static inline mi_heap_t** _mi_thread_default_heap_ptr(void) {
  uintptr_t idx, tls;
  mi_heap_t** p;
  __asm__("movl _tls_index(%%rip), %k0" : "=r"(idx));
  __asm__("movq %%gs:0x58, %0" : "=r"(tls));
  __asm__("leaq _mi_thread_default_heap@SECREL32(%1), %0" : "=r"(p) : "r"(((char**)tls)[idx]));
  return p;
}
#else
/* The fast paths' thread-local data, at one TLS address: the default heap, and beside it what
   the profiler's counted entry points read (prof-entry.c; one GOT load serves all three). */
typedef struct mi_thread_tls_s {
  mi_heap_t* heap;         /* the default heap: &_mi_thread_empty_heap until the thread is set up */
  size_t     prof_left;    /* bytes the counted entry points may allocate before the next sample */
  mi_page_t* const* prof_direct;   /* == mi_heap_direct_real(heap) (prof-hook.h): set with the
                                      heap (_mi_thread_set_default_heap), and again when the
                                      default heap's profiler comes or goes (prof.c) */
} mi_thread_tls_t;
extern mi_decl_thread mi_thread_tls_t _mi_thread_tls;
#endif
extern bool             _mi_process_is_initialized;

void       _mi_thread_set_default_heap(mi_heap_t* heap);
bool       _mi_thread_is_main(void);              /* the thread that initialised the process (or none yet) */
void       _mi_thread_done(mi_heap_t* heap);       /* called at thread exit with the backing heap */
mi_msecs_t _mi_process_elapsed(void);            /* milliseconds since the process started */

/* musl's pthread_atfork mallocs a record for each handler set it registers (40 bytes) and never
   frees it; glibc keeps the first ones in static storage. MI_ATFORK_RECORDS: the records libc
   allocates while we register our fork handlers come from static storage (static-alloc.c), not from
   the heap. (musl defines no macro of its own: Linux without glibc and not Android.) */
#if defined(__linux__) && !defined(__GLIBC__) && !defined(__ANDROID__)
#define MI_ATFORK_RECORDS  1
#else
#define MI_ATFORK_RECORDS  0
#endif
/* Static allocation: between begin and end, the calling thread's allocations come from a small
   static room (static-alloc.c), not from a heap: for what libc allocates on our behalf inside a call we
   make at a point where no heap may be touched (musl's fork-handler records with
   MI_ATFORK_RECORDS; pthread_create's TLS vector for the purger thread). Never counted, never
   freed (free ignores it). One thread at a time; not nested. */
extern _Atomic(uintptr_t) _mi_static_alloc_thread;  /* the thread between begin and end, or 0 */
void       _mi_static_alloc_begin(void);
void       _mi_static_alloc_end(void);
void*      _mi_static_alloc_block(size_t size, bool zero, size_t huge_alignment, size_t align_offset);
bool       _mi_static_alloc_contains(const void* p);

/* ------------------------------------------------------------------------------------------
   options.c: options, output, errors
------------------------------------------------------------------------------------------ */
void       _mi_options_init(void);
void       _mi_fputs(mi_output_fun* out, void* arg, const char* prefix, const char* message);
void       _mi_message(const char* fmt, ...);
void       _mi_verbose_message(const char* fmt, ...);
void       _mi_trace_message(const char* fmt, ...);     /* verbose >= 2: each OS call */
void       _mi_warning_message(const char* fmt, ...);   /* with show_errors or verbose */
void       _mi_warning_always(const char* fmt, ...);    /* about the user's settings: unless show_errors=0 was set */
void       _mi_error_message(int err, const char* fmt, ...);
int        _mi_vsnprintf(char* buf, size_t bufsize, const char* fmt, va_list args);
int        _mi_snprintf(char* buf, size_t bufsize, const char* fmt, ...);
void       _mi_options_deferred_free(mi_heap_t* heap, bool force);
bool       _mi_option_env_flag(const char* name);   /* a boolean MIMALLOC_ setting outside the option table */

/* leaks.c */
void       _mi_leaks_report(void);           /* MIMALLOC_SHOW_LEAKS at exit */

/* ------------------------------------------------------------------------------------------
   os.c: memory from the OS
------------------------------------------------------------------------------------------ */
void       _mi_os_init(void);
size_t     _mi_os_page_size(void);
size_t     _mi_os_large_page_size(void);
bool       _mi_os_has_overcommit(void);
/* Committed, zeroed memory for the allocator's own metadata. */
void*      _mi_os_alloc(size_t size, bool* is_zero);
void*      _mi_os_alloc_static(size_t size);   /* permanent tables: never freed, not counted */
/* Memory q with (q + align_offset) % alignment == 0; alignment a power of two >= page size.
   commit false: a reservation (inaccessible until committed). *is_large: pinned large pages. */
void*      _mi_os_alloc_aligned_at(size_t size, size_t alignment, size_t align_offset, bool commit, bool allow_large, bool* is_large, bool* is_zero);
/* Address space for an arena, read/write if `accessible`; counted as reserved, not committed. */
void*      _mi_os_reserve_aligned(size_t size, size_t alignment, bool accessible, bool allow_large, bool* is_large);
void       _mi_os_free(void* p, size_t size);                           /* all of it committed */
void       _mi_os_free_ex(void* p, size_t size, size_t committed_size);
/* Commit (counted; mprotect read/write only with `syscall`); false on failure. */
bool       _mi_os_commit(void* p, size_t size, bool syscall);
/* Decommit: RSS falls at once, reads as zero; `protect` also makes it inaccessible. False if
   the OS refused: still committed, contents kept. */
bool       _mi_os_decommit(void* p, size_t size, bool protect);
/* Contents no longer needed, memory stays committed: MADV_DONTNEED (RSS falls at once; returns
   true: reads as zero), or MADV_FREE when purge_decommits is off (returns false). */
bool       _mi_os_discard(void* p, size_t size);
/* Purge per mi_option_purge_decommits: decommit (returns true: must be committed again before
   use, and reads as zero) or discard (returns false: stays committed, contents undefined; so
   does a decommit the OS refused). */
bool       _mi_os_purge(void* p, size_t size, bool protect);
/* [p, p+size) (whole OS pages) becomes a guard (install) or normal memory; false if it cannot
   (may_protect: PROT_NONE is an acceptable fallback for this memory) */
bool       _mi_os_guard(void* p, size_t size, bool install, bool may_protect);
size_t     _mi_os_numa_node_count(void);   /* detected, capped by use_numa_nodes; >= 1 */
int        _mi_os_numa_node(void);         /* node of the calling thread, < count */
size_t     _mi_os_good_alloc_size(size_t size);

#include "arena.h"   /* arena.c, arena-purge.c and purger.c */

/* ------------------------------------------------------------------------------------------
   segment.c: segments (shared by the threads of a subprocess), the segment map, page slots
   and their purge; abandon.c: abandoned pages of ended threads
------------------------------------------------------------------------------------------ */
/* A fresh page for blocks of block_size (huge: the size, page_alignment > 0 for a huge aligned
   block); `busy`: the heap has pages of this class, all full (a medium page is then 512 KiB,
   else one 128 KiB slot, see mi_page_kind_t). */
mi_page_t* _mi_segment_page_alloc(mi_heap_t* heap, size_t block_size, size_t page_alignment, size_t align_offset, bool busy);
void       _mi_segments_set_main_numa(int numa_node);   /* the backing heaps' NUMA node, -1: none (mi_heap_set_numa_affinity) */
void       _mi_segment_page_free(mi_page_t* page, mi_tld_t* tld);
void       _mi_abandoned_add_page(mi_page_t* page, mi_tld_t* tld, mi_abandoned_lists_t* lists);   /* to lists (its heap's pages_lists), NULL: the subprocess' */
void       _mi_abandoned_lists_done(mi_abandoned_lists_t* lists, bool destroy);   /* their pages freed (destroy) or handed to the subprocess */
void       _mi_abandoned_reclaim_all(mi_heap_t* heap);   /* mi_collect(true) */
bool       _mi_abandoned_reclaim_for_bin(mi_heap_t* heap, mi_abandoned_lists_t* own, size_t block_size);   /* page.c, before a fresh page; own lists first */
bool       _mi_abandoned_reclaim_on_free(mi_page_t* page);   /* option abandoned_reclaim_on_free */
/* Free `block`, the last live block of `page` (abandoned form, internal.h), under the
   subprocess' lock, releasing the page (and the segment with its last page). False when the
   page was owned again meanwhile: nothing done, the caller frees the block as into an owned page. */
bool       _mi_abandoned_free_last(mi_segment_t* segment, mi_page_t* page, mi_block_t* block);
/* Under the subprocess' lock: an empty page leaves its segment; returns a segment to release
   with _mi_segment_free_released once the lock is dropped (NULL: none). */
mi_segment_t* _mi_segment_page_release_locked(mi_page_t* page, bool purge_now);
void       _mi_segment_free_released(mi_segment_t* segment);
void       _mi_segment_abandoned_change(mi_segment_t* segment, int delta);   /* under the lock: +1 abandoned, -1 adopted or released */
void       _mi_segments_collect(mi_tld_t* tld, bool force, bool wait);   /* due (all: force) purges; wait: mi_collect's */
void       _mi_segments_free_empty(mi_subproc_t* subproc);    /* the kept empty segments */
bool       _mi_segments_subproc_done(mi_subproc_t* subproc);  /* mi_subproc_delete: false while in use */
void       _mi_segments_purge_tick(mi_tld_t* tld);            /* due purges, if any pending */
bool       _mi_segments_purge_pending(const mi_tld_t* tld);   /* slot purges wait (peek, no lock) */
void       _mi_segments_purge_shared(bool force);             /* the purger: every subprocess' due slot purges */
void       _mi_segments_notify_purger(mi_subproc_t* subproc); /* after the lock: the earliest slot purge to the purger */
size_t     _mi_abandoned_pages_listed(void);                   /* pages of ended threads on any abandoned list */
void       _mi_subprocs_visit(void (*visit)(mi_subproc_t* subproc, void* arg), void* arg);   /* init.c: every subprocess, under the list's lock */
bool       _mi_segment_map_can_hold(const void* start, size_t size);
/* segment-map.c: the covered map's parts for [start, start + size) (false: out of memory); a
   segment's entries set (on) or cleared */
bool       _mi_segment_map_prepare(const void* start, size_t size);
mi_segment_t* _mi_segment_map_alloc(size_t size, size_t alignment, size_t align_offset, bool commit,
                                    mi_arena_id_t req_arena_id, int numa_node, mi_memid_t* memid);   /* memory the map can hold, from the arenas */
void       _mi_segment_map_set(const mi_segment_t* segment, bool on);
/* realloc: grow the huge block p (its page's start, segment owned by the calling thread) in
   place so that [p, p + size) fits, taking the free arena blocks after it; *ext_zero tells
   whether the added bytes are zero. False, and nothing changed, when that is not possible. */
bool       _mi_segment_huge_try_grow(mi_page_t* page, void* p, size_t size, bool* ext_zero);
bool       _mi_segment_huge_align_ok(size_t alignment, size_t align_offset);
bool       _mi_segment_map_covers(const void* p);          /* p is inside one of our segments */
mi_segment_t* _mi_segment_map_segment_of(const void* p);   /* the segment p lies in (also inside a huge one), or NULL */
void       _mi_segment_map_visit(void (*visit)(mi_segment_t* segment, void* arg), void* arg);   /* every segment */
uint8_t*   _mi_segment_page_start(const mi_segment_t* segment, const mi_page_t* page, size_t* page_size);
/* the page's whole area (without the segment header and a secure guard page): blocks and the room before them */
uint8_t*   _mi_segment_page_area(const mi_segment_t* segment, const mi_page_t* page, size_t* area_size);
uintptr_t  _mi_segment_cookie(const mi_segment_t* segment);
/* the key of the cookies (0 until the first segment is made) */
extern _Atomic(uintptr_t) _mi_segment_cookie_key;
/* does the segment carry a valid cookie? (for a segment of the segment map: a key exists) */
static inline bool _mi_segment_cookie_ok(const mi_segment_t* segment) {
  return (segment->cookie == ((uintptr_t)segment ^ mi_atomic_load_relaxed(&_mi_segment_cookie_key)));
}
bool       _mi_abandoned_visit(mi_subproc_t* subproc, mi_abandoned_lists_t* (*more)(mi_abandoned_lists_t* prev, void* it), void* it,
                               int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* and the lists more(prev) gives, of its subprocess */
bool       _mi_abandoned_lists_visit(mi_abandoned_lists_t* lists, const mi_heap_t* shown, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* one set of lists */
size_t     _mi_abandoned_lists_pages(mi_abandoned_lists_t* lists, void (*fn)(const mi_page_t* page, size_t live, void* arg), void* arg);   /* each page of the lists and its live blocks, under the lock; returns the walk's number */

/* ------------------------------------------------------------------------------------------
   page.c: pages and page queues
------------------------------------------------------------------------------------------ */
/* The first page of size's bin when, after taking the frees it holds, it has a free block (no
   search); NULL otherwise. */
mi_page_t* _mi_page_first_available(mi_heap_t* heap, size_t size);
/* A page of the heap with a free block for size (searching the bin's queue, adopting an ended
   thread's page, or taking a fresh one; a huge page when size > MI_LARGE_OBJ_SIZE_MAX or
   huge_alignment > 0); NULL when out of memory. */
mi_page_t* _mi_page_find(mi_heap_t* heap, size_t size, size_t huge_alignment, size_t align_offset);
void       _mi_page_to_full(mi_page_t* page, mi_page_queue_t* pq);
void       _mi_page_free_collect(mi_page_t* page, bool force);
void       _mi_page_retire(mi_page_t* page);
void       _mi_page_unfull(mi_page_t* page);
void       _mi_page_free(mi_page_t* page, mi_page_queue_t* pq);
void       _mi_page_abandon(mi_page_t* page, mi_page_queue_t* pq);
void       _mi_page_use_delayed_free(mi_page_t* page, mi_delayed_t delay, bool override_never);
size_t     _mi_page_tf_to_abandoned(mi_page_t* page);   /* returns the live blocks (see internal.h) */
void       _mi_page_tf_to_owned(mi_page_t* page, mi_delayed_t delayed);
void       _mi_page_init_fresh(mi_heap_t* heap, mi_page_t* page, size_t block_size);
void       _mi_page_queue_push(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page);
void       _mi_page_queue_remove(mi_page_queue_t* pq, mi_page_t* page);
size_t     _mi_page_queue_append(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_queue_t* append);
mi_page_queue_t* _mi_page_queue_of(const mi_page_t* page);
void       _mi_page_collect_retired(mi_heap_t* heap, bool force);
size_t     _mi_page_bin_size(size_t bin);
mi_block_t* _mi_page_ptr_unalign(const mi_page_t* page, const void* p);   /* the block p points into */

/* ------------------------------------------------------------------------------------------
   heap.c
------------------------------------------------------------------------------------------ */
void       _mi_heap_init(mi_heap_t* heap, mi_tld_t* tld, mi_arena_id_t arena_id, bool allow_destroy, uint8_t tag);
/* Visit every page of every queue of one of the calling thread's heaps (the visitor may remove
   the page from its queue); false if a visit returned false. */
typedef bool (heap_page_visitor_fun)(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg);
bool       _mi_heap_visit_pages(mi_heap_t* heap, heap_page_visitor_fun* fn, void* arg);
void       _mi_heap_init_unlisted(mi_heap_t* heap, mi_tld_t* tld, mi_arena_id_t arena_id, bool allow_destroy, uint8_t tag);   /* no list, no profiler */
void       _mi_heap_collect_abandon(mi_heap_t* heap);
void       _mi_heap_fresh_page_taken(mi_heap_t* heap);   /* page.c, before a fresh page: every so often take other threads' frees into all pages */
void       _mi_heap_collect_periodic(mi_heap_t* heap);   /* every ~100 ms of slow-path calls */
void       _mi_heap_after_fork_child(mi_heap_t* heap);   /* the forking thread's heaps, in the child */
bool       _mi_heap_delayed_free_partial(mi_heap_t* heap);
void       _mi_heap_delayed_free_all(mi_heap_t* heap);
mi_heap_t* _mi_heap_by_tag(mi_heap_t* heap, uint8_t tag);
bool       _mi_heap_area_visit_blocks(const mi_heap_t* heap, mi_page_t* page, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);
bool       _mi_heap_visit_abandoned(mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* v3's mi_heap_visit_abandoned_blocks: the heap's own */
bool       _mi_heap_visit_part(const mi_heap_t* theap, const mi_heap_t* shown, bool own, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* sheap.c: a shared heap's part (own: the calling thread's) */
/* Heaps are thread-local (v2 API): is `heap` another thread's? Then it is reported (EINVAL) and
   the call does nothing (an allocation returns NULL with errno ENOMEM, like every failing
   allocation): using another thread's heap would change its page lists unsynchronised.
   mi_heap_check_owner is in every build, on the paths that change a heap's page lists or pages
   (the generic allocation path, collect, delete, destroy, set_default, visit); the entry
   points that share malloc's fast path use mi_heap_is_foreign, which only debug builds
   compile: release builds leave the compare (and the thread-id load) off that path, so a
   foreign heap's blocks may be taken from a page's free list unchecked until its next refill. */
bool       _mi_heap_is_foreign(const mi_heap_t* heap, const char* call);
#define mi_heap_check_owner(heap, call)  mi_unlikely(_mi_heap_is_foreign(heap, call))
#if MI_DEBUG > 0
#define mi_heap_is_foreign(heap, call)  mi_heap_check_owner(heap, call)
#else
#define mi_heap_is_foreign(heap, call)  (false)
#endif

/* ------------------------------------------------------------------------------------------
   alloc.c / free.c / aligned.c
------------------------------------------------------------------------------------------ */
void*      _mi_malloc_generic(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) mi_decl_noinline;
void*      _mi_malloc_zero(mi_heap_t* heap, size_t size, bool zero);                 /* may sample (guarded.c) */
void*      _mi_malloc_zero_unsampled(mi_heap_t* heap, size_t size, bool zero);        /* never a guarded object */
void*      _mi_realloc_zero(mi_heap_t* heap, void* p, size_t newsize, bool zero, size_t* usable_pre, size_t* usable_post);
void*      _mi_aligned_malloc_zero_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset, bool zero);
void       _mi_free_delayed_block(mi_block_t* block);
void       _mi_free_generic(void* p, mi_page_t* page, mi_segment_t* segment) mi_decl_noinline;
size_t     _mi_free_usable_size(const void* p);

/* ------------------------------------------------------------------------------------------
   guarded.c (MI_GUARDED builds): sampled objects placed against a guard page
------------------------------------------------------------------------------------------ */
#if MI_GUARDED > 0
void       _mi_guarded_heap_init(mi_heap_t* heap);   /* sampling from the options */
void*      _mi_guarded_malloc_sampled(mi_heap_t* heap, size_t size, bool zero) mi_decl_noinline;
/* free of p in a page with guarded blocks: true if p was a guarded object's (freed, or
   reported as a double or interior free); false: not one, free it as usual */
bool       _mi_guarded_free(mi_page_t* page, void* p) mi_decl_noinline;
/* usable size of p if it is a guarded object */
bool       _mi_guarded_usable_size(const mi_page_t* page, const void* p, size_t* size);
void       _mi_guarded_quarantine_flush(void);   /* release every quarantined object now */
/* A guarded object's block takes at least two OS pages (its header's and the guard) and its
   page is flagged has_aligned; a pointer into a page of other blocks is never one. */
#define MI_GUARDED_BLOCK_MIN  (2*MI_SECURE_GUARD_SIZE)
#define mi_page_may_have_guarded(page)  (mi_page_has_aligned(page) && (page)->block_size >= MI_GUARDED_BLOCK_MIN)
#endif
void       _mi_alloc_block_zero_init(const mi_page_t* page, void* p);
/* Move a block's contents to newp after a reallocation; with `zero`, newp's tail is zeroed. */
void       _mi_realloc_copy(void* newp, const void* p, size_t size, size_t newsize, bool zero);

/* ------------------------------------------------------------------------------------------
   stats.c (see mi_stats_data_t in types.h)
------------------------------------------------------------------------------------------ */
extern mi_stats_data_t _mi_stats_main;     /* process totals: atomic updates only */
void       _mi_stat_increase(mi_stat_count_t* stat, size_t amount);          /* thread-local */
void       _mi_stat_atomic_increase(mi_stat_count_t* stat, size_t amount);   /* process totals */
void       _mi_stat_atomic_decrease(mi_stat_count_t* stat, size_t amount);
void       _mi_stat_atomic_counter_add(mi_stat_counter_t* stat, size_t amount);
/* Blocks of a page leave (out) or join (in) the figures of the thread `tld` (NULL: the page
   is or was abandoned and its blocks count in the process totals only). MI_STAT > 1. */
void       _mi_stat_page_transfer(const mi_page_t* page, mi_tld_t* from, mi_tld_t* to);
/* A non-huge block of `page` freed or collected by its owner (tld NULL: abandoned page). */
void       _mi_stat_blocks_freed(const mi_page_t* page, mi_tld_t* tld, size_t count);
void       _mi_stat_block_malloc(mi_tld_t* tld, const mi_page_t* page, size_t size);
void       _mi_stats_merge_thread(mi_tld_t* tld);     /* add the thread's figures to the totals */
void       _mi_stats_sum(mi_stats_data_t* dst, const mi_stats_data_t* src);   /* dst += src, peaks too (plain memory) */
void       _mi_stats_snapshot(mi_stats_data_t* copy);   /* the process totals as they are (relaxed loads) */
/* stats-print.c: the ways out of the figures (printing, JSON, mi_stats_get) */
size_t     _mi_stats_print_json_now(char* buf, size_t size);   /* the process JSON now; its length */
/* A bounded text writer (stats-print.c) that counts what does not fit, so the same code measures a
   text's size or fills a buffer; each piece under 256 characters. */
typedef struct mi_json_s {
  char*  buf;
  size_t size;
  size_t len;      /* characters produced so far, also beyond size */
} mi_json_t;
void       _mi_stats_print_json_add(mi_json_t* json, const char* fmt, ...);
void       _mi_stats_print_json_count(mi_json_t* json, const char* name, const mi_stat_count_t* stat);   /* ,"name": {total, peak, current} */
/* a document into buf, or into a new block (buf NULL or buf_size 0); NULL if it does not fit */
char*      _mi_stats_print_json_render(void (*render)(mi_json_t* json, void* arg), void* arg, size_t buf_size, char* buf);
void       _mi_stats_print_process_info_get(mi_process_info_t* info);
void       _mi_stats_print_process_now(mi_stats_data_t* data);   /* the process' figures, the calling thread's merged */
void       _mi_stats_print_fold_bins(const mi_stat_count_t* bins, mi_stat_count_t* public_bins);   /* into mimalloc's bin numbering */

/* live.c: live statistics in shared memory for a viewer (MIMALLOC_LIVE) */
extern bool _mi_live_enabled;                       /* atomic: set once at start, cleared at exit */
static inline bool mi_live_enabled(void) { return __atomic_load_n(&_mi_live_enabled, __ATOMIC_RELAXED); }
void       _mi_live_init(void);                       /* process init: reads MIMALLOC_LIVE */
void       _mi_live_done(void);                       /* process exit: removes the file */
void       _mi_live_fork_child(mi_tld_t* tld);        /* a fork child publishes nothing */
void       _mi_live_publish(mi_tld_t* tld, bool force);   /* the thread's figures, when due */
void       _mi_live_thread_done(mi_tld_t* tld);       /* frees the thread's slot */
void       _mi_live_page_move(mi_page_t* page, mi_tld_t* from, mi_tld_t* to);   /* a page with blocks in use changes thread (NULL: none) */
mi_msecs_t _mi_live_background(mi_msecs_t now);     /* the background thread: publishes what is due; when next (0: off) */
void       _mi_live_fork_prepare(void);               /* the publisher's locks around fork */
void       _mi_live_fork_parent(void);
void       _mi_purger_live_wanted(void);             /* purger.c: its thread runs _mi_live_background from now */
/* The owner's side of live_lock (types.h): around every change of its page queues and heap
   list while a publisher may read them; one load and branch otherwise. */
static inline void mi_live_enter(mi_tld_t* tld) {
  if (mi_unlikely(tld->live_watched) && tld->live_depth++ == 0) mi_lock_acquire(&tld->live_lock);
}
static inline void mi_live_leave(mi_tld_t* tld) {
  if (mi_unlikely(tld->live_watched) && --tld->live_depth == 0) mi_lock_release(&tld->live_lock);
}
void       _mi_stats_print_at_exit(void);              /* show_stats, verbose, stats JSON */

/* stats-print.c: the statistics as text, from a snapshot and the process information of the
   same moment; `thread`: the figures are the calling thread's own (mi_thread_stats_print_out). */
void       _mi_stats_print_text(const mi_stats_data_t* stats, const mi_process_info_t* info, bool thread,
                                mi_output_fun* out, void* arg);
void       _mi_stats_print_process_info_text(const mi_process_info_t* info, mi_output_fun* out, void* arg);   /* mimalloc's two process lines */
/* the readable layout under a title line of its own (a heap's or a subprocess' figures) */
void       _mi_stats_print_titled(const mi_stats_data_t* stats, const mi_process_info_t* info, const char* title,
                                  mi_output_fun* out, void* arg);

#define mi_stat_counter_increase(tld, stat, n)  ((tld)->stats.stat.total += (int64_t)(n))
#define mi_os_stat_increase(stat, n)            _mi_stat_atomic_increase(&_mi_stats_main.stat, (n))
#define mi_os_stat_decrease(stat, n)            _mi_stat_atomic_decrease(&_mi_stats_main.stat, (n))
#define mi_os_stat_counter_increase(stat, n)    _mi_stat_atomic_counter_add(&_mi_stats_main.stat, (n))

/* ------------------------------------------------------------------------------------------
   debug.c: heap-misuse checks of debug builds (MI_DEBUG > 0) and the per-block statistics
   of MI_STAT > 1. Every block of a debug build ends in a mi_padding_t (types.h).
------------------------------------------------------------------------------------------ */
/* Validate the block taken from page->free (its link and its freed fill); false when the
   free list was corrupted: the page's free list is then dropped and nothing is handed out. */
bool       _mi_debug_malloc_check(mi_page_t* page, mi_block_t* block);
/* A block just handed out for `size` bytes: fill, padding, caller, statistics. */
void       _mi_debug_block_malloc(mi_heap_t* heap, mi_page_t* page, mi_block_t* block, size_t size, bool zero);
/* Checks before freeing p (interior pointer, double free, overflow), then fill and
   statistics; false when p must not be freed. */
bool       _mi_debug_free(mi_segment_t* segment, mi_page_t* page, void* p, bool is_local);
/* The block holding user pointer p now serves exactly `size` bytes from p. */
void       _mi_debug_set_size(void* p, size_t size);
/* Bytes the program asked for at p (the usable size of debug builds). */
size_t     _mi_debug_requested_size(const mi_page_t* page, const mi_block_t* block, const void* p);
/* After an aligned allocation moved the user pointer from p to aligned (size bytes, zeroed):
   zero again the slack marking that the allocation wrote after p's requested size. */
void       _mi_debug_rezero_slack(void* p, void* aligned, size_t size);
/* secure.c (checked builds): is block on the page's list (validated walk)? */
bool       _mi_secure_list_contains(const mi_page_t* page, const mi_block_t* list, const mi_block_t* block);
/* secure.c: the block a checked free of p releases, or NULL (reported) if p is no block start */
mi_block_t* _mi_secure_checked_free_block(mi_page_t* page, void* p);
/* secure.c: report (EFAULT) a link of the page's lists that leads outside its blocks */
void       _mi_secure_page_link_report(const mi_page_t* page, const mi_block_t* block, const mi_block_t* next) mi_decl_noinline;
/* secure.c (secure builds): fresh link keys for a page being set up */
void       _mi_secure_page_init_keys(mi_page_t* page);
/* secure.c (checked builds): a link of the page's lists leads outside it: report and drop the lists */
void       _mi_secure_page_list_corrupt(mi_page_t* page, const mi_block_t* block, const mi_block_t* next);
/* secure.c: malloc found the link of `block` corrupted: _mi_secure_page_list_corrupt, then the generic path */
void*      _mi_secure_page_malloc_corrupt(mi_heap_t* heap, mi_page_t* page, const mi_block_t* block, const mi_block_t* next, size_t size, bool zero);
/* secure.c: the full check of a free in secure builds; false (reported) to ignore the free */
bool       _mi_secure_free_check(mi_page_t* page, void* p, bool is_local);
/* New blocks of a page (extend): filled as freed blocks. */
void       _mi_debug_fill_new_blocks(mi_page_t* page, uint8_t* start, size_t count);
/* The return address into the program of the allocation of the block (NULL if unknown). */
void*      _mi_debug_block_caller(const mi_page_t* page, const mi_block_t* block);
void       _mi_debug_set_caller(const mi_page_t* page, const mi_block_t* block, void* caller);

/* ------------------------------------------------------------------------------------------
   validate.c (checked builds): one validator per structure, checking the invariants of
   types.h; each returns true or reports the field (expected and found values) and aborts.
   MI_DEBUG >= 3 (CMake MI_DEBUG_FULL) calls them at the slow-path boundaries through
   mi_assert_expensive(_mi_observe_check(...)) (observe.h); tests may call them in any debug build. See validate.c for who may
   call which.
------------------------------------------------------------------------------------------ */
bool       _mi_validate_page(const mi_page_t* page);
bool       _mi_validate_heap(const mi_heap_t* heap);           /* with its pages and their segments */
bool       _mi_validate_segment(const mi_segment_t* segment);  /* with its segment map entries; takes its subprocess' lock */
bool       _mi_validate_segment_locked(const mi_segment_t* segment);   /* the caller holds the lock */
bool       _mi_validate_segment_map(const mi_segment_t* segment);
bool       _mi_validate_subproc(mi_subproc_t* subproc);        /* free, purge and abandoned lists; takes the lock */
bool       _mi_validate_subproc_locked(mi_subproc_t* subproc);
bool       _mi_validate_arena_memid(const void* p, const mi_memid_t* memid);   /* blocks a segment holds */
bool       _mi_validate_arenas(void);
bool       _mi_validate_stats(const mi_stats_data_t* stats, bool thread);   /* thread: tld->stats (else the totals) */
bool       _mi_validate_thread(const mi_heap_t* heap);         /* all of the above for this thread */

/* ------------------------------------------------------------------------------------------
   random.c
------------------------------------------------------------------------------------------ */
#include "prof-hook.h"   /* the sampling profiler (prof.c and its files) */
#include "observe.h"     /* the observers' hooks: the core's only way up to them */
uintptr_t  _mi_random_next(void);     /* process-wide, thread-safe, not for cryptography */
uintptr_t  _mi_random_shuffle(uintptr_t x);

/* ------------------------------------------------------------------------------------------
   Inline helpers
------------------------------------------------------------------------------------------ */
static inline bool mi_is_power_of_two(uintptr_t x) { return (x & (x - 1)) == 0; }

static inline uintptr_t _mi_align_up(uintptr_t sz, size_t alignment) {
  mi_assert_internal(alignment != 0);
  uintptr_t mask = alignment - 1;
  if ((alignment & mask) == 0) return ((sz + mask) & ~mask);
  return ((sz + mask) / alignment) * alignment;
}
static inline uintptr_t _mi_align_down(uintptr_t sz, size_t alignment) {
  uintptr_t mask = alignment - 1;
  if ((alignment & mask) == 0) return (sz & ~mask);
  return ((sz / alignment) * alignment);
}
static inline size_t _mi_divide_up(size_t size, size_t divider) {
  return (divider == 0 ? size : ((size + divider - 1) / divider));
}

/* count*size with overflow detection; true when it overflowed */
static inline bool mi_mul_overflow(size_t count, size_t size, size_t* total) {
  return __builtin_mul_overflow(count, size, total);
}
/* true (and errno = ENOMEM) when count*size overflows */
static inline bool mi_count_size_overflow(size_t count, size_t size, size_t* total) {
  if (count == 1) { *total = size; return false; }
  if (mi_unlikely(mi_mul_overflow(count, size, total))) {
    _mi_error_message(EOVERFLOW, "allocation request is too large (%zu * %zu bytes)\n", count, size);
    errno = ENOMEM;
    return true;
  }
  return false;
}

static inline size_t _mi_wsize_from_size(size_t size) {
  return (size + sizeof(uintptr_t) - 1) / sizeof(uintptr_t);
}

static inline size_t mi_bsr(uintptr_t x) {  /* index of the highest set bit; x != 0 */
  return (sizeof(uintptr_t)*8 - 1) - (size_t)__builtin_clzll(x);   /* (long is 32 bits on Windows) */
}

/* Size to bin, table free (see the bin layout in types.h). */
static inline size_t _mi_bin(size_t size) {
  size_t wsize = _mi_wsize_from_size(size);
  if (wsize <= 1) return 1;
  if (wsize <= MI_BIN_SMALL_WORDS) return ((wsize + 1) >> 1) + 1;
  if (size > MI_LARGE_OBJ_SIZE_MAX) return MI_BIN_HUGE_INTERNAL;
  wsize--;
  size_t b = mi_bsr(wsize);                                         /* b >= 4 */
  return ((b - 4) << 3) + ((wsize >> (b - 3)) & 7) + MI_BIN_FIRST_SPACED;
}

/* ------------------------------------------------------------------------------------------
   Thread id and the default heap
------------------------------------------------------------------------------------------ */
/* A unique id of the calling thread that costs one instruction: the thread pointer (the
   thread control block the C library sets up per thread; distinct for every live thread).
     x86-64     %fs:0, the TCB's self pointer (glibc and musl both store it there)
     aarch64    tpidr_el0 (EL0 read/write thread register, the TLS base)
     riscv64    tp (x4), the ABI's thread pointer
     Windows x64  %gs:0x30, the TEB's self pointer (NtCurrentTeb())
     macOS      %gs:0 on x86-64 (TSD slot 0: the thread's pthread), tpidrro_el0 on arm64 (the
                TSD base, the low 3 bits cleared); untested at run time (docs/platforms.md)
   Every id is at least 8-byte aligned: the page flags share its word (MI_PAGE_FLAGS_MASK).
   Any other target: __builtin_thread_pointer() where the compiler has it, else the address of
   a thread-local variable (unique per live thread too, one TLS address computation).
   The asm is not volatile: within a thread the value never changes, so the compiler may reuse
   it; it reads no memory. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define MI_HAS_BUILTIN_THREAD_POINTER 1
#endif
#endif
static inline uintptr_t _mi_thread_id(void) {
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__)
  uintptr_t tid;
  __asm__("movq %%fs:0, %0" : "=r"(tid));
  return tid;
#elif defined(__x86_64__) && defined(_WIN32)
  uintptr_t tid;
  __asm__("movq %%gs:0x30, %0" : "=r"(tid));
  return tid;
#elif defined(__aarch64__) && defined(__linux__)
  uintptr_t tid;
  __asm__("mrs %0, tpidr_el0" : "=r"(tid));
  return tid;
#elif defined(__riscv) && (__riscv_xlen == 64) && defined(__linux__)
  uintptr_t tid;
  __asm__("mv %0, tp" : "=r"(tid));
  return tid;
#elif defined(__x86_64__) && defined(__APPLE__)
  uintptr_t tid;
  __asm__("movq %%gs:0, %0" : "=r"(tid));   /* the thread's pthread (TSD slot 0) */
  return tid;
#elif defined(__aarch64__) && defined(__APPLE__)
  uintptr_t tid;
  __asm__("mrs %0, tpidrro_el0" : "=r"(tid));   /* the thread's TSD base */
  return tid & ~(uintptr_t)7;                   /* older kernels kept the CPU number in bits 0-2 */
#elif defined(MI_HAS_BUILTIN_THREAD_POINTER) || (defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__))
  return (uintptr_t)__builtin_thread_pointer();
#else
#if MI_TLS_PE
  return (uintptr_t)_mi_thread_default_heap_ptr();
#else
  return (uintptr_t)&_mi_thread_tls;
#endif
#endif
}

/* x == _mi_thread_id(), as one compare with the memory operand %fs:0 on x86-64 Linux (%gs:0 on
   macOS) (the free fast path; a C load through a __seg_fs null pointer would do too, but trips
   UBSan).
   Elsewhere the thread register is read into a register and compared (2 instructions). */
static inline bool _mi_thread_id_is(uintptr_t x) {
#if defined(__x86_64__) && defined(__linux__) && !defined(__SANITIZE_THREAD__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool eq;
  __asm__("cmpq %%fs:0, %1" : "=@cce"(eq) : "r"(x));
  return eq;
#elif defined(__x86_64__) && defined(__APPLE__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool eq;
  __asm__("cmpq %%gs:0, %1" : "=@cce"(eq) : "r"(x));
  return eq;
#else
  return (x == _mi_thread_id());
#endif
}

static inline mi_heap_t* mi_prim_get_default_heap(void) {
#if MI_TLS_PE
  return *_mi_thread_default_heap_ptr();
#else
  return _mi_thread_tls.heap;
#endif
}

static inline bool mi_heap_is_initialized(const mi_heap_t* heap) {
  return (heap != NULL && heap->tld != NULL);
}
static inline bool mi_heap_is_backing(const mi_heap_t* heap) {
  return (heap->tld->heap_backing == heap);
}

/* ------------------------------------------------------------------------------------------
   Segments and pages from pointers
------------------------------------------------------------------------------------------ */
static inline mi_segment_t* _mi_ptr_segment(const void* p) {
  mi_segment_t* segment = (mi_segment_t*)(((uintptr_t)p - 1) & ~MI_SEGMENT_MASK);
  return ((intptr_t)segment <= 0 ? NULL : segment);
}

/* The segment-start map (segment.c): one byte per MI_SEGMENT_SIZE chunk of the user address
   space; non-zero iff one of our segments starts in that chunk, and then it is the segment's
   page_shift (16, 19 or 63), so free gets its page index without loading the header field.
   The range is the user address space Linux hands out without an explicit mmap hint (we never
   pass one), per target:
     x86-64   2^47 (4-level paging; 5-level paging maps above 2^47 only for a hint beyond it)
     riscv64  2^47 (Sv48; Sv39 gives 2^38; Sv57 maps above 2^47 only for a hint beyond it)
     aarch64  2^48 (48-bit VA; kernels with 52-bit VA map above 2^48 only for a hint beyond
              it; 39/42-bit VA kernels give less)
     other    2^48, the most that the thread_free word's pointer field holds (below)
   Segments the OS places beyond MI_SEGMENT_MAP_ADDR_BITS are refused with a warning
   (segment.c), so an unexpected layout makes allocation fail visibly, never corrupts the map.
   A lookup needs no range check: the index keeps bits [ADDR_BITS-1, 22] of p - 1.
   NULL - 1 lands on the last chunk, which never holds a segment (refused like the ones beyond),
   so its entry stays 0. A pointer that is not a user address (the kernel half, non-canonical
   values), which no allocator hands out, may alias a user chunk: such garbage is not detected.
   32 MiB (47 bits) or 64 MiB (48 bits) of zero-initialised address space, touched only where
   we have segments. */
#if defined(__x86_64__) || (defined(__riscv) && __riscv_xlen == 64)
#define MI_SEGMENT_MAP_ADDR_BITS  (47)
#else
#define MI_SEGMENT_MAP_ADDR_BITS  (48)
#endif
#define MI_INTPTR_BITS            (8*sizeof(uintptr_t))
#define MI_SEGMENT_MAP_CHUNKS     ((uintptr_t)1 << (MI_SEGMENT_MAP_ADDR_BITS - MI_SEGMENT_SHIFT))
extern _Atomic(uint8_t) _mi_segment_map_start[MI_SEGMENT_MAP_CHUNKS];

/* The page shift of our segment whose first chunk holds p - 1, which every block we hand out
   satisfies (see _mi_ptr_segment); 0 for NULL and for every user-space pointer that is not
   ours, so free and realloc never dereference a foreign pointer. */
static inline size_t _mi_ptr_page_shift(const void* p) {
  const uintptr_t chunk = (((uintptr_t)p - 1) << (MI_INTPTR_BITS - MI_SEGMENT_MAP_ADDR_BITS))
                          >> (MI_INTPTR_BITS - MI_SEGMENT_MAP_ADDR_BITS + MI_SEGMENT_SHIFT);
  return mi_atomic_load_relaxed(&_mi_segment_map_start[chunk]);
}
/* The segment of p when p is known to be ours. */
static inline mi_segment_t* _mi_ptr_segment_unchecked(const void* p) {
  return (mi_segment_t*)(((uintptr_t)p - 1) & ~MI_SEGMENT_MASK);
}
/* Like _mi_ptr_segment, but NULL also for every pointer that is not ours. */
static inline mi_segment_t* _mi_ptr_segment_checked(const void* p) {
  return (_mi_ptr_page_shift(p) != 0 ? _mi_ptr_segment_unchecked(p) : NULL);
}
static inline mi_segment_t* _mi_page_segment(const mi_page_t* page) {
  return (mi_segment_t*)((uintptr_t)page & ~MI_SEGMENT_MASK);
}
/* The page holding p, also for a pointer inside a large page's span beyond its first slot
   (free, which only takes block starts, indexes directly). */
static inline mi_page_t* _mi_segment_page_of(const mi_segment_t* segment, const void* p) {
  size_t idx = ((uintptr_t)p - (uintptr_t)segment) >> segment->page_shift;
  mi_assert_internal(idx <= segment->capacity);   /* == capacity: the sentinel (types.h) */
  const mi_page_t* page = &segment->pages[idx];
  return (mi_page_t*)(page - page->span_tail);
}
static inline mi_page_t* _mi_ptr_page(const void* p) {
  return _mi_segment_page_of(_mi_ptr_segment(p), p);
}

/* p is in a page of ours that is in use (a block we handed out, or inside one) */
static inline bool mi_is_in_heap_block(const void* p) {
  const mi_segment_t* segment = _mi_ptr_segment_checked(p);
  return (segment != NULL && _mi_segment_page_of(segment, p)->block_size != 0);
}

static inline mi_heap_t* mi_page_heap(const mi_page_t* page) {
  return mi_atomic_load_relaxed(&((mi_page_t*)page)->xheap);
}

/* `n` blocks of `page` were freed (the frees of live.c); slow paths only */
static inline void mi_live_count_freed(const mi_page_t* page, size_t n) {
  if (mi_unlikely(mi_live_enabled())) {
    mi_heap_t* const heap = mi_page_heap(page);
    if (heap != NULL) heap->tld->live_freed += (int64_t)n;
  }
}
static inline uintptr_t mi_page_flags(const mi_page_t* page) {
  return (mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_id) & MI_PAGE_FLAGS_MASK);
}
/* The page's owner (part of xthread_id) follows its heap: heap->thread_id, or 0 without one. */
/* The thread id of the page's owner (0: abandoned or not in use). */
static inline uintptr_t mi_page_owner(const mi_page_t* page) {
  return (mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_id) & ~MI_PAGE_FLAGS_MASK);
}
/* Without a heap the page keeps its abandon_lists, until abandon.c lists it (types.h). */
static inline void mi_page_set_heap(mi_page_t* page, mi_heap_t* heap) {
  const uintptr_t owner = (heap != NULL ? heap->thread_id : 0);
  mi_assert_internal((owner & MI_PAGE_FLAGS_MASK) == 0);
  if (heap != NULL) mi_atomic_store_relaxed(&page->abandon_lists, heap->pages_lists);
  mi_atomic_store_release(&page->xheap, heap);
  mi_atomic_store_relaxed(&page->xthread_id, owner | mi_page_flags(page));
}
static inline void mi_page_flag_set(mi_page_t* page, uintptr_t flag, bool on) {   /* owner only */
  const uintptr_t x = mi_atomic_load_relaxed(&page->xthread_id);
  mi_atomic_store_relaxed(&page->xthread_id, (on ? (x | flag) : (x & ~flag)));
}
static inline void mi_page_flags_clear(mi_page_t* page) {   /* owner only */
  mi_atomic_store_relaxed(&page->xthread_id, mi_atomic_load_relaxed(&page->xthread_id) & ~MI_PAGE_FLAGS_MASK);
}
static inline uint32_t mi_page_prof_samples(const mi_page_t* page) {   /* profiler samples in the page */
#if MI_SECURE == 0
  return mi_atomic_load_relaxed(&((mi_page_t*)page)->prof_samples);
#else
  (void)page; return 0;
#endif
}
static inline bool mi_page_is_in_full(const mi_page_t* page) { return (mi_page_flags(page) & MI_PAGE_IN_FULL) != 0; }
static inline void mi_page_set_in_full(mi_page_t* page, bool in_full) { mi_page_flag_set(page, MI_PAGE_IN_FULL, in_full); }
static inline bool mi_page_has_aligned(const mi_page_t* page) { return (mi_page_flags(page) & MI_PAGE_HAS_ALIGNED) != 0; }
static inline void mi_page_set_has_aligned(mi_page_t* page, bool has) { mi_page_flag_set(page, MI_PAGE_HAS_ALIGNED, has); }

static inline bool mi_page_all_free(const mi_page_t* page) { return page->used == 0; }
/* a page of a huge segment: one block, larger than any bin (huge segments exceed MI_SEGMENT_SIZE) */
static inline bool mi_page_is_huge(const mi_page_t* page) { return page->block_size > MI_LARGE_OBJ_SIZE_MAX; }
static inline bool mi_page_immediate_available(const mi_page_t* page) { return page->free != NULL; }

/* thread_free word: the list head (blocks are 8-aligned and, like every segment, below 2^48:
   MI_SEGMENT_MAP_ADDR_BITS), the delayed state in bits 0-1, the abandoned mark in bit 2 and a
   count in bits 48-63. Two forms:
   - owned (bit 2 clear): the count is the list length, so the owner takes the list with its
     length in one exchange, without walking it (mi_page_collect_for_alloc);
   - abandoned (bit 2 set, state bits 0): the page's segment has no owner (types.h, abandoned
     segments); the count is MI_TF_ABANDONED_BASE - (blocks still live), so the free whose push
     makes it MI_TF_ABANDONED_BASE freed the page's last block and releases the page (free.c).
     The state bits read as MI_USE_DELAYED_FREE, so the cross-thread fast path, which only
     pushes directly in the other states, leaves such a page to mi_free_block_mt.
   Pushes add one to the count in both forms; only the segment's owner (or the holder of the
   abandoned lock while nobody owns it) converts between them (page.c). */
#define MI_TF_COUNT_SHIFT  (48)
#define MI_TF_ABANDONED    ((uintptr_t)4)
#define MI_TF_ABANDONED_BASE ((size_t)1 << 15)
#define MI_TF_BLOCK_MASK   ((((uintptr_t)1) << MI_TF_COUNT_SHIFT) - 8)
_Static_assert(MI_SEGMENT_MAP_ADDR_BITS <= MI_TF_COUNT_SHIFT && sizeof(uintptr_t) == 8, "block pointers leave the top 16 bits of the thread_free word free");
_Static_assert(MI_SMALL_PAGE_SIZE / 8 <= MI_TF_ABANDONED_BASE / 2, "a page's blocks fit the thread_free count, in both forms");
static inline mi_block_t* mi_tf_block(uintptr_t tf) { return (mi_block_t*)(tf & MI_TF_BLOCK_MASK); }
static inline mi_delayed_t mi_tf_delayed(uintptr_t tf) { return (mi_delayed_t)(tf & 3); }
static inline size_t mi_tf_count(uintptr_t tf) { return (size_t)(tf >> MI_TF_COUNT_SHIFT); }
static inline bool mi_tf_is_abandoned(uintptr_t tf) { return (tf & MI_TF_ABANDONED) != 0; }
/* an empty list in state `delayed` */
static inline uintptr_t mi_tf_make_empty(mi_delayed_t delayed) { return (uintptr_t)delayed; }
/* the same list (and length) in another state (owned form) */
static inline uintptr_t mi_tf_set_delayed(uintptr_t tf, mi_delayed_t delayed) { return ((tf & ~(uintptr_t)3) | (uintptr_t)delayed); }
/* the list with `block` pushed (the caller linked it to mi_tf_block(tf)) */
static inline uintptr_t mi_tf_push(uintptr_t tf, mi_block_t* block) {
  return ((tf + (((uintptr_t)1) << MI_TF_COUNT_SHIFT)) & ~MI_TF_BLOCK_MASK) | (uintptr_t)block;
}
/* the same list with another count (and form bits `low`: a delayed state, or MI_TF_ABANDONED) */
static inline uintptr_t mi_tf_with_count(uintptr_t tf, size_t count, uintptr_t low) {
  return (tf & MI_TF_BLOCK_MASK) | ((uintptr_t)count << MI_TF_COUNT_SHIFT) | low;
}
static inline mi_block_t* mi_page_thread_free(const mi_page_t* page) {
  return mi_tf_block(mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_free));
}
/* ... for a walk of the list (double-free search of checked builds): acquire pairs with the
   pushers' release CAS, so the links of the blocks pushed so far are visible */
static inline mi_block_t* mi_page_thread_free_acquire(const mi_page_t* page) {
  return mi_tf_block(mi_atomic_load_acquire(&((mi_page_t*)page)->xthread_free));
}

/* Free-list links. Secure builds store each link encoded with the keys of the page that holds
   the link's block: e = rotl(next + k0, k1) ^ k1. A write over a freed block (use after free,
   overflow from a neighbour) then decodes to an address the writer cannot choose, which the
   checks reject (mi_page_link_ok, secure.c). Every list of a page (free, local_free,
   thread_free) and the heap's delayed list are linked this way. */
#if MI_SECURE > 0
static inline uintptr_t mi_rotl(uintptr_t x, uintptr_t r) { r &= 63; return (r == 0 ? x : (x << r) | (x >> (64 - r))); }
static inline uintptr_t mi_rotr(uintptr_t x, uintptr_t r) { r &= 63; return (r == 0 ? x : (x >> r) | (x << (64 - r))); }
static inline mi_block_t* mi_link_decode(const mi_page_t* page, uintptr_t e) {
  return (mi_block_t*)(mi_rotr(e ^ page->keys[1], page->keys[1]) - page->keys[0]);
}
static inline uintptr_t mi_link_encode(const mi_page_t* page, const mi_block_t* next) {
  return mi_rotl((uintptr_t)next + page->keys[0], page->keys[1]) ^ page->keys[1];
}
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  return mi_link_decode(page, (uintptr_t)block->next);
}
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, mi_block_t* next) {
  block->next = (mi_block_t*)mi_link_encode(page, next);
}
#else
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  (void)page;
  mi_track_open(block, sizeof(mi_block_t));   /* a free block: no access for the program */
  mi_block_t* const next = block->next;
  mi_track_close(block, sizeof(mi_block_t));
  return next;
}
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, mi_block_t* next) {
  (void)page;
  mi_track_open(block, sizeof(mi_block_t));
  block->next = next;
  mi_track_close(block, sizeof(mi_block_t));
}
#endif

/* A block freed by the page's owner: on `free` (which then holds a used block), or on
   local_free in sharded builds (MI_FREE_SHARDED, types.h). The caller updates `used`. */
static inline void mi_page_push_owner_free(mi_page_t* page, mi_block_t* block) {
#if MI_FREE_SHARDED
  mi_block_set_next(page, block, page->local_free);
  page->local_free = block;
#else
  mi_block_set_next(page, block, page->free);
  page->free = block;
  page->free_is_zero = false;
#endif
}

#if MI_SECURE > 0
/* Secure builds: is `diff` (from page_start) the start of a block below the page's capacity?
   With m = block_magic = 2^64 / block_size rounded up, for diff < 2^32 the high half of
   diff * m is diff / block_size and its low half is below m exactly when block_size divides
   diff; a larger diff gives a quotient of at least its true one, so it fails the capacity
   test unless the page has one block (huge pages), where the quotient is 0 only for
   diff < 2^64 / m <= block_size and the low half diff * m is below m only for diff 0. */
static inline bool mi_page_offset_is_block(const mi_page_t* page, uintptr_t diff) {
  const __uint128_t prod = (__uint128_t)diff * page->block_magic;
  return ((uint64_t)(prod >> 64) < page->capacity && (uint64_t)prod < page->block_magic);
}
/* ... or anywhere inside such a block */
static inline bool mi_page_offset_in_blocks(const mi_page_t* page, uintptr_t diff) {
  return ((uint64_t)(((__uint128_t)diff * page->block_magic) >> 64) < page->capacity);
}
static inline uint64_t mi_block_magic_of(size_t block_size) {
  return (UINT64_MAX / block_size) + 1;
}
#endif

/* A link that may be followed: NULL or a block that was handed out of this page (the exact
   block start is checked where lists are walked, mi_page_block_valid). */
static inline bool mi_page_link_ok(const mi_page_t* page, const mi_block_t* next) {
#if MI_SECURE > 0
  return (mi_page_offset_in_blocks(page, (uintptr_t)next - (uintptr_t)mi_page_start(page)) || next == NULL);
#else
  return ((uintptr_t)next - (uintptr_t)mi_page_start(page) < (uintptr_t)page->capacity * page->block_size || next == NULL);
#endif
}
/* The page's capacity read from any thread: the checks of a free (debug and secure builds)
   run on the freeing thread while the owner may be extending the page. The read is benign:
   capacity only grows while the page holds a live block, and the block being freed was handed
   out below a capacity whose store happened before the free (the program passed the block
   on), so a stale value never rejects a valid block; it can only let through a pointer into
   blocks that are being made available at that moment. The owner's store in
   mi_page_extend_free is atomic too, so the pair is no data race (ThreadSanitizer). */
static inline uint32_t mi_page_capacity_any(const mi_page_t* page) {
  return atomic_load_explicit((_Atomic(uint32_t)*)&page->capacity, memory_order_relaxed);
}

/* NULL, or exactly the start of one of the first `capacity` blocks of the page. */
static inline bool mi_page_block_below(const mi_page_t* page, const mi_block_t* block, size_t capacity) {
  if (block == NULL) return true;
  const uintptr_t diff = (uintptr_t)block - (uintptr_t)mi_page_start(page);
  return (diff < (uintptr_t)capacity * page->block_size && diff % page->block_size == 0);
}
/* NULL, or exactly the start of a block below the page's capacity (owner thread). */
static inline bool mi_page_block_valid(const mi_page_t* page, const mi_block_t* block) {
  return mi_page_block_below(page, block, page->capacity);
}

/* ------------------------------------------------------------------------------------------
   The allocation fast path (docs/design.md, "Fast paths"): pop the page's free list, bump
   `used`. Anything else (empty free list, uninitialised thread, zeroing of fresh pages) goes to
   the noinline _mi_malloc_generic.
------------------------------------------------------------------------------------------ */
#if defined(__GNUC__)
#define mi_decl_always_inline  inline __attribute__((always_inline))
#else
#define mi_decl_always_inline  inline
#endif
/* always inlined: with the guarded builds' second copy of the malloc body (alloc.c) gcc
   otherwise makes this a call from malloc (secure malloc 16 B: 29 -> 44 instructions) */
/* The fast paths are written once, parameterised by the slow path they call on a miss (and the
   small one by the direct table it reads): the ordinary entry points pass _mi_malloc_generic and
   heap->pages_free_direct, the profiler's counted entry points (prof-entry.c) their own. Both are
   compile-time constants where the fast paths are inlined, so each copy is as if written out. */
typedef void* mi_malloc_slow_fun(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset);

static mi_decl_always_inline void* mi_page_malloc_or(mi_heap_t* heap, mi_page_t* page, size_t size, bool zero, mi_malloc_slow_fun* slow) {
  mi_block_t* const block = page->free;
  if (mi_unlikely(block == NULL)) {
    return slow(size, heap, zero, 0, 0);
  }
#if MI_DEBUG > 0
  if (mi_unlikely(!_mi_debug_malloc_check(page, block))) {
    return _mi_malloc_generic(size, heap, zero, 0, 0);
  }
#endif
  mi_block_t* const next = mi_block_next(page, block);
#if MI_SECURE > 0
  if (mi_unlikely(!mi_page_link_ok(page, next))) {
    return _mi_secure_page_malloc_corrupt(heap, page, block, next, size, zero);   /* a tail call: no frame here */
  }
  block->next = NULL;   /* a live block holds no link: a later free of it is not mistaken for a double free */
#endif
  page->free = next;
#if defined(__GNUC__)
  /* the next malloc reads next->next: blocks freed by other threads or long ago are cold, and
     that load was 77% of malloc's samples in sh8bench. One instruction (malloc 16 B: 15.4 ->
     16.4): sh8bench -7%, mstress -4%, bench-st with 100K live blocks -4%, 4K live +1% (noise),
     single-threaded workloads unchanged (medians of 5-11 interleaved runs). */
  __builtin_prefetch(next, 1);
#endif
  page->used++;
#if MI_TRACK_ENABLED
  mi_track_mem_undefined(block, page->block_size);   /* for the writes below */
#endif
  if (mi_unlikely(zero)) {
    _mi_alloc_block_zero_init(page, block);
  }
#if MI_PADDING || MI_STAT > 1
  _mi_debug_block_malloc(heap, page, block, size, zero);
#endif
#if MI_TRACK_ENABLED
  _mi_track_block_alloc(page, block, size, zero);
#endif
  return block;
}

static mi_decl_always_inline void* _mi_page_malloc(mi_heap_t* heap, mi_page_t* page, size_t size, bool zero) {
  return mi_page_malloc_or(heap, page, size, zero, &_mi_malloc_generic);
}

/* size <= MI_SMALL_SIZE_MAX - MI_PADDING_SIZE; `direct`: the heap's table of first pages by
   word size (pages_free_direct, or the profiler's table of the real ones) */
static mi_decl_always_inline void* mi_heap_malloc_small_from(mi_heap_t* heap, mi_page_t* const* direct, size_t size, bool zero, mi_malloc_slow_fun* slow) {
  mi_assert(size <= MI_SMALL_SIZE_MAX);
  if (MI_PADDING_SIZE > 0 && mi_unlikely(size > MI_SMALL_SIZE_MAX - MI_PADDING_SIZE)) {
    return slow(size, heap, zero, 0, 0);
  }
  mi_page_t* page = direct[_mi_wsize_from_size(size + MI_PADDING_SIZE)];
  return mi_page_malloc_or(heap, page, size, zero, slow);
}

static inline void* mi_heap_malloc_small_zero(mi_heap_t* heap, size_t size, bool zero) {
  return mi_heap_malloc_small_from(heap, heap->pages_free_direct, size, zero, &_mi_malloc_generic);
}

/* Medium sizes: a free block of the bin's first page, before the slow path (which would take
   the same block after its bookkeeping); `real_first`: read the bin's queue (the profiler's
   counted entry points) instead of pages_medium_direct (which then holds its proxies). An
   uninitialised heap has no pages. */
static mi_decl_always_inline void* mi_heap_malloc_medium_from(mi_heap_t* heap, bool real_first, size_t size, bool zero, mi_malloc_slow_fun* slow) {
  if (mi_likely(size <= MI_MEDIUM_OBJ_SIZE_MAX - MI_PADDING_SIZE)) {
    const size_t bin = _mi_bin(size + MI_PADDING_SIZE);
    mi_page_t* const page = (real_first ? heap->pages[bin].first : heap->pages_medium_direct[bin]);
    if (mi_likely(page != NULL && page->free != NULL)) return mi_page_malloc_or(heap, page, size, zero, slow);
  }
  return slow(size, heap, zero, 0, 0);
}
