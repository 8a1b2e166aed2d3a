/* SPDX-License-Identifier: MIT */
/* Layer 6 (docs/design.md, "Layers"): shared heaps (src/sheap.c; the object and its invariants:
   types.h, mi_sheap_t) and the public heap functions that take them (src/heap-api.c), over the
   heaps of a thread (heap.h): what the allocation entry points and slow path, thread exit and
   fork need of them. The layer owns one field of a heap (mi_heap_t.sheap) and one of a thread
   (mi_tld_t.sheap_last); a theap's pages go on its shared heap's abandoned lists
   (mi_heap_t.pages_lists), which the page and abandonment code see as lists of their own,
   nothing more. */
#pragma once

#include "heap.h"

/* ------------------------------------------------------------------------------------------
   heap-api.c: the public heap functions
------------------------------------------------------------------------------------------ */
/* Heaps are thread-local (v2 API): is `heap` another thread's? Then it is reported (EINVAL) and
   the call does nothing (an allocation returns NULL with errno ENOMEM, like every failing
   allocation): using another thread's heap would change its page lists unsynchronised.
   mi_heap_check_owner is in every build, on the paths that change a heap's page lists or pages
   (the generic allocation path, collect, delete, destroy, set_default, visit); the entry
   points that share malloc's fast path use mi_heap_is_foreign, which only debug builds
   compile: release builds leave the compare (and the thread-id load) off that path, so a
   foreign heap's blocks may be taken from a page's free list unchecked until its next refill. */
bool       _mi_heap_api_is_foreign(const mi_heap_t* heap, const char* call);   /* (a shared heap is refused too) */
#define mi_heap_check_owner(heap, call)  mi_unlikely(_mi_heap_api_is_foreign(heap, call))
#if MI_DEBUG > 0
#define mi_heap_is_foreign(heap, call)  mi_heap_check_owner(heap, call)
#else
#define mi_heap_is_foreign(heap, call)  (false)
#endif
void       _mi_heap_api_thread_done(mi_tld_t* tld);   /* thread exit (init.c): the thread's heaps but its backing one end */
bool       _mi_heap_api_visit_abandoned(mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* v3's mi_heap_visit_abandoned_blocks: the heap's own */

/* ------------------------------------------------------------------------------------------
   sheap.c: shared heaps
------------------------------------------------------------------------------------------ */

extern _Atomic(size_t) _mi_sheaps_dying;   /* shared heaps deleted or destroyed, not yet freed */
mi_heap_t* _mi_sheap_theap(mi_heap_t* sheap, bool create);   /* the calling thread's theap; NULL: none (or could not make one) */
void       _mi_sheap_theap_unlink(mi_heap_t* theap);         /* a theap heap.c ended, before its block is freed: off its shared heap */
void       _mi_sheap_sweep(mi_tld_t* tld);                   /* delete or destroy this thread's theaps of dead shared heaps */
mi_heap_t* _mi_sheap_dying_step(mi_heap_t* heap, bool sweep_due);   /* the slow path while _mi_sheaps_dying != 0: the heap that serves the call */
mi_heap_t* _mi_sheap_default_back(mi_heap_t* heap);          /* a dead default part gives way to the backing heap (returned) */
void       _mi_sheap_delete(mi_heap_t* sheap, bool destroy); /* mi_heap_delete / mi_heap_destroy */
mi_heap_t* _mi_sheap_main(void);                             /* v3's main heap: each thread's part is its backing heap */
bool       _mi_sheap_visit(mi_subproc_t* subproc, bool (*visit)(mi_heap_t* heap, void* arg), void* arg);   /* the main heap, then the live shared heaps of subproc */
bool       _mi_sheap_visit_blocks(mi_heap_t* sheap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* mi_heap_visit_blocks: every part's blocks, then its ended parts' */
bool       _mi_sheap_abandoned_visit(mi_heap_t* sheap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* its ended theaps' pages */
bool       _mi_sheaps_abandoned_visit(mi_subproc_t* subproc, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* mi_abandoned_visit_blocks: subproc's, its shared heaps' too */
void       _mi_sheap_publish(mi_heap_t* theap, mi_stats_data_t* block, const mi_stats_data_t* stats);   /* its thread: the theap's stats = block, a copy of stats, under the lock */
void       _mi_sheap_stats_locked(mi_heap_t* sheap, void (*fn)(mi_sheap_t* sh, void* arg), void* arg);   /* fn(heap) under its lock */
void       _mi_sheap_fork_prepare(void);                     /* every shared heap's lock taken ... */
void       _mi_sheap_fork_release(void);                     /* ... and released (parent and child) */

/* A theap as sheap.c allocates it: the heap, then what only the layer reads (under the shared
   heap's lock). heap-api.c frees the block through the heap. */
typedef struct mi_sheap_part_s {
  mi_heap_t         heap;    /* first: a theap's mi_heap_t* is its mi_sheap_part_t* */
  mi_heap_t*        next;    /* its shared heap's theaps (mi_sheap_t.theaps) */
  mi_stats_data_t*  stats;   /* its figures as its thread last published them for other threads
                                (stats-v3.c), or NULL; allocated and freed by its own thread */
} mi_sheap_part_t;

static inline mi_sheap_part_t* mi_sheap_part_of(const mi_heap_t* theap) {
  return (mi_sheap_part_t*)theap;   /* (theap->sheap != NULL) */
}

/* A shared heap (types.h: its first word is where a heap has its tld) */
static inline bool mi_heap_is_shared(const mi_heap_t* heap) {
  return (heap->tld == MI_SHEAP_MARK);
}

/* A thread's part of a shared heap (never takes another heap's blocks: heap.c) */
static inline bool mi_heap_is_theap(const mi_heap_t* heap) {
  return (heap->sheap != NULL);
}

/* A theap whose shared heap was deleted or destroyed (it ends at its thread's next sweep; as a
   thread's default it gives way to the backing heap first: types.h, mi_heap_s) */
static inline bool mi_heap_is_dead_part(const mi_heap_t* heap) {
  return (heap->sheap != NULL && mi_atomic_load_acquire(&heap->sheap->state) != (int)MI_SHEAP_LIVE);
}

/* A theap whose shared heap is live (its pages, abandoned, stay the heap's) */
static inline bool mi_heap_is_live_part(const mi_heap_t* heap) {
  return (heap->sheap != NULL && mi_atomic_load_acquire(&heap->sheap->state) == (int)MI_SHEAP_LIVE);
}

/* The heap the API names for one of the thread's heaps: a theap's shared heap, else itself */
static inline mi_heap_t* mi_heap_named(mi_heap_t* heap) {
  return (heap->sheap != NULL ? (mi_heap_t*)heap->sheap : heap);
}

/* mi_heap_of of a block in a page: the shared heap whose lists the page goes on (only shared
   heaps own lists: mi_sheap_t.abandoned), or NULL. Any thread, without a lock: the field is
   NULL or such lists while the page is in use (types.h); the heap is not freed while the page
   is listed or its theap lives, nor the page released while the caller's block lives. */
static inline mi_heap_t* mi_sheap_of_lists(mi_abandoned_lists_t* lists) {
  return (lists == NULL ? NULL : (mi_heap_t*)((uint8_t*)lists - offsetof(mi_sheap_t, abandoned)));
}
static inline mi_heap_t* mi_sheap_of_page(mi_page_t* page) {
  return mi_sheap_of_lists(mi_atomic_load_acquire(&page->abandon_lists));
}
