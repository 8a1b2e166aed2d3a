/* SPDX-License-Identifier: MIT */
/* Layer 5 (docs/design.md, "Layers"): heaps of a thread (heap.c), the process and thread life
   cycle (init.c) and static allocation (static-alloc.c). Shared heaps and the public heap
   functions are the layer above (sheap.h). */
#pragma once
#include "page.h"


/* ------------------------------------------------------------------------------------------
   remote.c: cross-thread frees
------------------------------------------------------------------------------------------ */
/* push `block` of another thread's page (or an abandoned one); never held back */
void       _mi_remote_free_block(mi_block_t* block, mi_page_t* page, mi_segment_t* segment);
/* push every cross-thread free this thread holds back (tld of the calling thread, or NULL) */
void       _mi_remote_flush(mi_tld_t* tld);
#if MI_REMOTE_BATCH
/* start the slot's batch of `page` with `block` (the slot's batch of another page is pushed) */
void       _mi_remote_batch_start(mi_tld_t* tld, mi_page_t* page, mi_block_t* block) mi_decl_noinline;
/* push the batch of slot `b` (full, or flushed) */
void       _mi_remote_batch_push(mi_tld_t* tld, struct mi_remote_batch_s* b) mi_decl_noinline;
static inline size_t mi_remote_batch_slot(const mi_page_t* page) {
  return ((uintptr_t)page / MI_PAGE_DESC_ALIGN) % MI_REMOTE_BATCH_SLOTS;
}
#endif

/* ------------------------------------------------------------------------------------------
   init.c: process and thread life cycle
------------------------------------------------------------------------------------------ */
extern const mi_heap_t  _mi_thread_empty_heap;    /* default heap of uninitialised threads */
extern mi_heap_t        _mi_thread_main_heap;     /* backing heap of the first thread */
extern mi_subproc_t     _mi_subproc_main;
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
void       _mi_subprocs_visit(void (*visit)(mi_subproc_t* subproc, void* arg), void* arg);   /* every subprocess, under the list's lock */

static inline bool mi_heap_is_backing(const mi_heap_t* heap) {
  return (heap->tld->heap_backing == heap);
}

/* The lists a heap adopts abandoned pages from before its subprocess' (page.c): a theap's, its
   shared heap's (sheap.h); not those of the profiler's sample heap of a theap, which never
   reclaims (its sheap is NULL) */
static inline mi_abandoned_lists_t* mi_heap_own_lists(const mi_heap_t* heap) {
  return (heap->sheap != NULL ? heap->pages_lists : NULL);
}

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
void       _mi_heap_collect(mi_heap_t* heap, bool force);   /* mi_heap_collect of a heap of the calling thread */
void       _mi_heap_delete(mi_heap_t* heap, bool keep_lists);   /* mi_heap_delete of a heap of the thread but its backing one; its descriptor is the caller's to free */
bool       _mi_heap_destroy(mi_heap_t* heap);   /* mi_heap_destroy of one that allows it; false: not destroyed (delete it) */
mi_page_t* _mi_heap_page_in_use_of(const void* p);   /* p's page if in use (any thread's), else NULL */
bool       _mi_heap_check_owned(mi_heap_t* heap, const void* p);   /* mi_heap_check_owned of a heap of the calling thread */
void       _mi_heap_fresh_page_taken(mi_heap_t* heap);   /* page.c, before a fresh page: every so often take other threads' frees into all pages */
void       _mi_heap_collect_periodic(mi_heap_t* heap);   /* every ~100 ms of slow-path calls */
void       _mi_heap_after_fork_child(mi_heap_t* heap);   /* the forking thread's heaps, in the child */
bool       _mi_heap_delayed_free_partial(mi_heap_t* heap);
void       _mi_heap_delayed_free_all(mi_heap_t* heap);
mi_heap_t* _mi_heap_by_tag(mi_heap_t* heap, uint8_t tag);
bool       _mi_heap_area_visit_blocks(const mi_heap_t* heap, mi_page_t* page, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);
bool       _mi_heap_visit_part(const mi_heap_t* heap, const mi_heap_t* shown, bool own, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* a heap's blocks as `shown`'s: the calling thread's (own) or another thread's part of a shared heap (sheap.c) */

/* ------------------------------------------------------------------------------------------
   heap-idle.c: the purger empties the full pages of a sleeping thread (types.h, mi_heap_t)
------------------------------------------------------------------------------------------ */
void       _mi_heap_idle_register(mi_tld_t* tld);     /* a thread with a backing heap starts */
void       _mi_heap_idle_unregister(mi_tld_t* tld);   /* ... ends: before its heap is released; `idle_listed` still true after it: the process is ending, keep the tld */
void       _mi_heap_idle_wait(mi_heap_t* heap);       /* owner: the purger works on the heap: wait for it to stop */
void       _mi_heap_idle_take_back(mi_heap_t* heap);  /* owner: free the pages the purger emptied */
void       _mi_heap_idle_notify_slow(void);           /* a block was pushed on a heap's delayed list */
size_t     _mi_heap_idle_pass(mi_msecs_t now);        /* the purger: returns the pages emptied */
bool       _mi_heap_idle_keep(void);                  /* should the purger stay for frees into full pages? */
void       _mi_heap_idle_fork_prepare(void);
void       _mi_heap_idle_fork_release(bool child);
extern _Atomic(int) _mi_heap_idle_notified;           /* a pass is due (set by the first delayed push after one) */

/* An owner section (types.h, mi_heap_t): around the owner's slow paths that may touch one of
   its full pages; nests. The first entry frees what the purger emptied meanwhile. Only a
   thread's backing heap has them (the purger looks at no other heap), so a visit of another
   thread's heap (a shared heap's part, never a backing heap) writes nothing. Not for the static
   empty heap (tld == NULL). */
static inline void mi_heap_owner_enter_ex(mi_heap_t* heap, bool take_back) {
  if (heap->tld->heap_backing != heap || heap->idle_depth++ != 0) return;
  /* odd: inside; the store and the load below against the purger's (sequentially consistent) */
  mi_atomic_store_seq_cst(&heap->idle_owner, mi_atomic_load_relaxed(&heap->idle_owner) + 1);
  if (mi_unlikely(mi_atomic_load_seq_cst(&heap->idle_purger) != 0)) _mi_heap_idle_wait(heap);
  if (take_back && mi_unlikely(mi_atomic_load_relaxed(&heap->idle_emptied) != 0)) _mi_heap_idle_take_back(heap);
}
static inline void mi_heap_owner_enter(mi_heap_t* heap) { mi_heap_owner_enter_ex(heap, true); }
static inline void mi_heap_owner_leave(mi_heap_t* heap) {
  if (heap->tld->heap_backing != heap || --heap->idle_depth != 0) return;
  mi_atomic_store_release(&heap->idle_owner, mi_atomic_load_relaxed(&heap->idle_owner) + 1);
}
