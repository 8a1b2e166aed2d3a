/* SPDX-License-Identifier: MIT */
/* ----------------------------------------------------------------------------
  mimalloc-v3.h -- v3 mode of mimalloc.h: mimalloc 3.x's names and meanings
  where mimalloc v2 and v3 disagree.

  Not included on its own: mimalloc.h includes it (section 4b) when the
  program defines MI_V3_API before including mimalloc.h. It then declares,
  in this order:
    1. v3's types: the theap, the pointer arena id, the subprocess struct
    2. the names mapped onto the library's symbols for v3's meaning, so that
       mimalloc.h's sections 5 and 7 declare those symbols with v3's types
    3. the functions only v3 mode declares, and those it declares otherwise
       (heaps, introspection, subprocesses, theaps)
    4. the typed allocation macros in v3's argument order
    5. the option enumeration with v3's names and numbers
  The library exports every symbol in both modes, so translation units of
  either mode share one process (docs/v3-api.md).
---------------------------------------------------------------------------- */
#pragma once
#ifndef MIMALLOC_V3_H
#define MIMALLOC_V3_H

#if !defined(MIMALLOC_H) || !defined(MI_V3_API)
#error "include <mimalloc.h> with MI_V3_API defined, not mimalloc-v3.h itself"
#endif

/* ---- 1. Types -------------------------------------------------------------
   A theap is one thread's part of a heap; the arena id is the v2 id as a
   pointer value (NULL: none); the subprocess id wraps the v2 one (NULL
   inside: the main subprocess). */
struct mi_theap_s;
typedef struct mi_theap_s mi_theap_t;
typedef void* mi_arena_id_t;
typedef struct mi_subproc_id_s { void* _mi_subproc_id; } mi_subproc_id_t;


/* ---- 2. Names that are other symbols in v3 mode --------------------------
   mi_heap_new makes a heap any thread may allocate in (our shared heap); the
   arena, subprocess and option functions take v3's types and option numbers
   (the library translates those, src/v3.c). */
  #define mi_heap_new                     mi_heap_new_shared
  #define mi_heap_new_in_arena            mi_v3_heap_new_in_arena
  #define mi_heap_new_shared_in_arena     mi_v3_heap_new_in_arena
  #define mi_heap_main                    mi_v3_heap_main
  #define mi_heap_of                      mi_v3_heap_of
  #define mi_heap_contains                mi_v3_heap_contains
  #define mi_check_owned                  mi_v3_check_owned
  #define mi_arena_area                   mi_v3_arena_area
  #define mi_arena_contains               mi_v3_arena_contains
  #define mi_reserve_huge_os_pages_at_ex  mi_v3_reserve_huge_os_pages_at_ex
  #define mi_reserve_os_memory_ex         mi_v3_reserve_os_memory_ex
  #define mi_manage_os_memory_ex          mi_v3_manage_os_memory_ex
  #define mi_subproc_main                 mi_v3_subproc_main
  #define mi_subproc_current              mi_v3_subproc_current
  #define mi_subproc_new                  mi_v3_subproc_new
  #define mi_subproc_add_current_thread   mi_v3_subproc_add_current_thread
  #define mi_subproc_visit_heaps          mi_v3_subproc_visit_heaps
  #define mi_option_is_enabled            mi_v3_option_is_enabled
  #define mi_option_enable                mi_v3_option_enable
  #define mi_option_disable               mi_v3_option_disable
  #define mi_option_set_enabled           mi_v3_option_set_enabled
  #define mi_option_set_enabled_default   mi_v3_option_set_enabled_default
  #define mi_option_get                   mi_v3_option_get
  #define mi_option_get_clamp             mi_v3_option_get_clamp
  #define mi_option_get_size              mi_v3_option_get_size
  #define mi_option_set                   mi_v3_option_set
  #define mi_option_set_default           mi_v3_option_set_default


/* ---- 3. Functions that only v3 mode declares, or declares otherwise ------ */

/* Process delayed frees and return empty pages; `force` also purges. */
mi_decl_export void mi_heap_collect(mi_heap_t* heap, bool force);   /* (v3 declares it without noexcept) */
/* (v3) The NUMA node whose memory the heap's new pages prefer, -1 for none (taken modulo the
   nodes in use); NULL: the main heap, that is every thread's backing heap. */
mi_decl_export void mi_heap_set_numa_affinity(mi_heap_t* heap, int numa_node);
/* (v3) Walk the blocks ended threads left in `heap` (NULL: the main heap: the ordinary abandoned
   blocks of the calling thread's subprocess, tag 0); needs the option visit_abandoned, and the
   visitor runs under the subprocess' lock: it must not allocate or free. */
mi_decl_export bool mi_heap_visit_abandoned_blocks(mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);
/* (v3) Release a subprocess once all its threads have ended and its memory is free (the main
   one is ignored); v3 frees its memory at once, we keep a subprocess that still holds memory. */
mi_decl_export void mi_subproc_destroy(mi_subproc_id_t subproc);
/* (v3) Call `visitor` on each heap of `subproc` (the main heap, then each heap of mi_heap_new
   made by its threads and not deleted) until it returns false; false if it did. The visitor
   runs under a lock: it must not make, delete or destroy a heap. */
typedef bool (mi_cdecl mi_heap_visit_fun)(mi_heap_t* heap, void* arg);
mi_decl_export bool mi_subproc_visit_heaps(mi_subproc_id_t subproc, mi_heap_visit_fun* visitor, void* arg);

/* Theaps: a thread's own part of a heap. A theap is a heap of one thread: only
   that thread allocates in it. Each mi_theap_X is mi_heap_X on the theap. (In
   v2 mode these names are macros over the mi_heap_ functions, mimalloc.h
   section 6.) */

/* The calling thread's part of `heap`, made on first use (NULL: the main heap, i.e. this
   thread's backing heap); NULL for another thread's heap, a deleted heap, or out of memory. */
mi_decl_export mi_theap_t* mi_heap_theap(mi_heap_t* heap);
/* Make `theap` the thread's default (mi_malloc allocates there); returns the previous one.
   The calling thread's part of a heap from mi_heap_new may be it: malloc then allocates in that
   heap. Another thread's theap, or a part of a deleted heap, is refused (NULL, EINVAL). When the
   heap is deleted or destroyed the default goes back to the thread's main theap (after another
   thread's delete or destroy: at the thread's next allocation off the fast path, mi_collect or
   mi_theap_get_default; blocks allocated in the part meanwhile die with a destroy). */
mi_decl_export mi_theap_t* mi_theap_set_default(mi_theap_t* theap);
/* The calling thread's default theap. */
mi_decl_export mi_theap_t* mi_theap_get_default(void);
mi_decl_export void mi_theap_collect(mi_theap_t* theap, bool force) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_theap_malloc(mi_theap_t* theap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_theap_zalloc(mi_theap_t* theap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_theap_calloc(mi_theap_t* theap, size_t count, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(2,3);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_theap_malloc_small(mi_theap_t* theap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_theap_zalloc_small(mi_theap_t* theap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_theap_malloc_aligned(mi_theap_t* theap, size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_theap_realloc(mi_theap_t* theap, void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(3);
/* Guarded builds: mi_heap_guarded_set_sample_rate / _size_bound on the theap. */
mi_decl_export void mi_theap_guarded_set_sample_rate(mi_theap_t* theap, size_t sample_rate, size_t seed);
mi_decl_export void mi_theap_guarded_set_size_bound(mi_theap_t* theap, size_t min, size_t max);
/* mi_heap_visit_blocks on the theap (the visitor is told of the theap). */
mi_decl_export bool mi_theap_visit_blocks(const mi_theap_t* theap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);


/* Arenas whose memory the program commits: `commit_fun(true, start, size, &is_zero, arg)` must
   make [start, start+size) readable and writable (it may set is_zero when it reads as zero) and
   `commit_fun(false, start, size, NULL, arg)` may release it (a purge); each returns false if it
   could not. It is called with the allocator's locks held: it must not allocate or free with
   this allocator. */
typedef bool (mi_cdecl mi_commit_fun_t)(bool commit, void* start, size_t size, bool* is_zero, void* user_arg);
/* mi_manage_os_memory_ex whose commits and purges go through `commit_fun` (NULL: the OS's);
   is_committed: all of it is committed at the start; is_pinned: never decommitted (the function
   is then never called). */
mi_decl_export bool mi_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node, bool exclusive,
                                     mi_commit_fun_t* commit_fun, void* commit_fun_arg, mi_arena_id_t* arena_id) mi_attr_noexcept;


/* ---- 4. Typed allocation macros ------------------------------------------ */

/* v3's order: the type always comes first (v2's puts it after the heap or pointer). */
#define mi_malloc_tp(tp)                 ((tp*)mi_malloc(sizeof(tp)))
#define mi_zalloc_tp(tp)                 ((tp*)mi_zalloc(sizeof(tp)))
#define mi_calloc_tp(tp,n)               ((tp*)mi_calloc(n,sizeof(tp)))
#define mi_mallocn_tp(tp,n)              ((tp*)mi_mallocn(n,sizeof(tp)))
#define mi_reallocn_tp(tp,p,n)           ((tp*)mi_reallocn(p,n,sizeof(tp)))
#define mi_recalloc_tp(tp,p,n)           ((tp*)mi_recalloc(p,n,sizeof(tp)))

#define mi_heap_malloc_tp(tp,hp)         ((tp*)mi_heap_malloc(hp,sizeof(tp)))
#define mi_heap_zalloc_tp(tp,hp)         ((tp*)mi_heap_zalloc(hp,sizeof(tp)))
#define mi_heap_calloc_tp(tp,hp,n)       ((tp*)mi_heap_calloc(hp,n,sizeof(tp)))
#define mi_heap_mallocn_tp(tp,hp,n)      ((tp*)mi_heap_mallocn(hp,n,sizeof(tp)))
#define mi_heap_reallocn_tp(tp,hp,p,n)   ((tp*)mi_heap_reallocn(hp,p,n,sizeof(tp)))
#define mi_heap_recalloc_tp(tp,hp,p,n)   ((tp*)mi_heap_recalloc(hp,p,n,sizeof(tp)))


/* ---- 5. Options ----------------------------------------------------------
   v3's names and numbers. An option v3 has and v2 has not is accepted and
   read back but changes nothing here; a v3 `deprecated_` name is the v2
   option of the same number. mimalloc.h declares the option functions. */

typedef enum mi_option_e {
  mi_option_show_errors,                      /*  0 */
  mi_option_show_stats,                       /*  1 */
  mi_option_verbose,                          /*  2 */
  mi_option_deprecated_eager_commit,          /*  3: v2's eager_commit */
  mi_option_arena_eager_commit,               /*  4 */
  mi_option_purge_decommits,                  /*  5 */
  mi_option_allow_large_os_pages,             /*  6 */
  mi_option_reserve_huge_os_pages,            /*  7 */
  mi_option_reserve_huge_os_pages_at,         /*  8 */
  mi_option_reserve_os_memory,                /*  9: KiB */
  mi_option_deprecated_segment_cache,         /* 10 */
  mi_option_deprecated_page_reset,            /* 11 */
  mi_option_deprecated_abandoned_page_purge,  /* 12: v2's abandoned_page_purge */
  mi_option_deprecated_segment_reset,         /* 13 */
  mi_option_deprecated_eager_commit_delay,    /* 14: v2's eager_commit_delay */
  mi_option_purge_delay,                      /* 15 */
  mi_option_use_numa_nodes,                   /* 16 */
  mi_option_disallow_os_alloc,                /* 17 */
  mi_option_os_tag,                           /* 18 */
  mi_option_max_errors,                       /* 19 */
  mi_option_max_warnings,                     /* 20 */
  mi_option_deprecated_max_segment_reclaim,   /* 21: v2's max_segment_reclaim */
  mi_option_destroy_on_exit,                  /* 22 */
  mi_option_arena_reserve,                    /* 23: KiB */
  mi_option_arena_purge_mult,                 /* 24 */
  mi_option_deprecated_purge_extend_delay,    /* 25: v2's purge_extend_delay */
  mi_option_disallow_arena_alloc,             /* 26 (v2: 27) */
  mi_option_retry_on_oom,                     /* 27 (v2: 28) */
  mi_option_visit_abandoned,                  /* 28 (v2: 29) */
  mi_option_guarded_min,                      /* 29 (v2: 30) */
  mi_option_guarded_max,                      /* 30 (v2: 31) */
  mi_option_guarded_precise,                  /* 31 (v2: 32) */
  mi_option_guarded_sample_rate,              /* 32 (v2: 33) */
  mi_option_guarded_sample_seed,              /* 33 (v2: 34) */
  mi_option_generic_collect,                  /* 34 (v2: 36) */
  mi_option_page_reclaim_on_free,             /* 35: v3 only (no effect here) */
  mi_option_page_full_retain,                 /* 36: v3 only */
  mi_option_page_max_candidates,              /* 37: v3 only */
  mi_option_max_vabits,                       /* 38: v3 only */
  mi_option_pagemap_commit,                   /* 39: v3 only */
  mi_option_page_commit_on_demand,            /* 40: v3 only */
  mi_option_page_max_reclaim,                 /* 41: v3 only */
  mi_option_page_cross_thread_max_reclaim,    /* 42: v3 only */
  mi_option_allow_thp,                        /* 43 (v2: 37) */
  mi_option_minimal_purge_size,               /* 44: v3 only, KiB */
  mi_option_arena_max_object_size,            /* 45: v3 only, KiB */
  mi_option_arena_is_numa_local,              /* 46: v3 only */
  _mi_option_last,                            /* 47: number of options */
  /* legacy names */
  mi_option_large_os_pages         = mi_option_allow_large_os_pages,
  mi_option_eager_region_commit    = mi_option_arena_eager_commit,
  mi_option_reset_decommits        = mi_option_purge_decommits,
  mi_option_reset_delay            = mi_option_purge_delay,
  mi_option_limit_os_alloc         = mi_option_disallow_os_alloc
} mi_option_t;

#endif /* MIMALLOC_V3_H */
