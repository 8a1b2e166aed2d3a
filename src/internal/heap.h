/* SPDX-License-Identifier: MIT */
/* Layer 5 (docs/design.md, "Layers"): heaps (heap.c), shared heaps (sheap.c, sheap.h), the
   process and thread life cycle (init.c) and static allocation (static-alloc.c). */
#pragma once
#include "page.h"
#include "sheap.h"


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
