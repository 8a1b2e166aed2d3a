/* SPDX-License-Identifier: MIT */
/* Layer 4 (docs/design.md, "Layers"): segments (segment.c), abandoned pages (abandon.c), the
   purger thread (purger.c), and the segment and page of a pointer. The pages themselves:
   page.h. */
#pragma once
#include "arena.h"

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
void       _mi_segments_big_freed_purge(mi_tld_t* tld);   /* thread exit: purge the big arena runs it freed that still wait */
void       _mi_abandoned_add_page(mi_page_t* page, mi_tld_t* tld, mi_abandoned_lists_t* lists);   /* to lists (its heap's pages_lists), NULL: the subprocess' */
void       _mi_abandoned_lists_done(mi_abandoned_lists_t* lists, bool destroy);   /* their pages freed (destroy) or handed to the subprocess */
void       _mi_abandoned_reclaim_all(mi_heap_t* heap);   /* mi_collect(true) */
bool       _mi_abandoned_reclaim_for_bin(mi_heap_t* heap, mi_abandoned_lists_t* own, size_t block_size);   /* page.c, before a fresh page; own lists first */
bool       _mi_abandoned_reclaim_on_free(mi_page_t* page);   /* option abandoned_reclaim_on_free */
/* Free `block`, the last live block of `page` (abandoned form, page.h), under the
   subprocess' lock, releasing the page (and the segment with its last page). False when the
   page was owned again meanwhile: nothing done, the caller frees the block as into an owned page. */
bool       _mi_abandoned_free_last(mi_segment_t* segment, mi_page_t* page, mi_block_t* block);
/* Under the subprocess' lock: an empty page leaves its segment; returns a segment to release
   with _mi_segment_free_released once the lock is dropped (NULL: none). */
mi_segment_t* _mi_segment_page_release_locked(mi_page_t* page, bool purge_now);
void       _mi_segment_free_released(mi_segment_t* segment);
void       _mi_segment_abandoned_change(mi_segment_t* segment, int delta);   /* under the lock: +1 abandoned, -1 adopted or released */
void       _mi_segments_free_empty(mi_subproc_t* subproc);    /* the kept empty segments */
bool       _mi_segments_subproc_done(mi_subproc_t* subproc);  /* mi_subproc_delete: false while in use */
size_t     _mi_abandoned_pages_listed(void);                   /* pages of ended threads on any abandoned list */
/* realloc: grow the huge block p (its page's start, segment owned by the calling thread) in
   place so that [p, p + size) fits, taking the free arena blocks after it; *ext_zero tells
   whether the added bytes are zero. False, and nothing changed, when that is not possible. */
bool       _mi_segment_huge_try_grow(mi_page_t* page, void* p, size_t size, bool* ext_zero);
bool       _mi_segment_huge_align_ok(size_t alignment, size_t align_offset);
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
   segment-purge.c: the delayed purge of unused page slots (under the subprocess' lock unless
   said otherwise)
------------------------------------------------------------------------------------------ */
void       _mi_segments_purge_collect(mi_tld_t* tld, bool force, bool wait);   /* due (all: force) purges; wait: mi_collect's (no lock held) */
void       _mi_segments_purge_tick(mi_tld_t* tld);            /* due purges, if any pending (no lock held) */
bool       _mi_segments_purge_pending(const mi_tld_t* tld);   /* slot purges wait (peek, no lock) */
void       _mi_segments_purge_shared(bool force);             /* the purger: every subprocess' due slot purges (no lock held) */
void       _mi_segments_purge_notify(mi_subproc_t* subproc);  /* after the lock: the earliest slot purge to the purger */
/* slots [page, page + count) became unused in a segment that stays: purge now (`now`), later or never */
void       _mi_segments_purge_schedule(mi_segment_t* segment, mi_page_t* page, size_t count, bool span, bool now);
void       _mi_segments_purge_queue_remove(mi_segment_t* segment, mi_page_t* page);   /* a queued slot taken again */
#if MI_SECURE == 0
mi_slot_hints_t* _mi_segments_purge_hints(const mi_subproc_t* subproc);   /* its slot hints (types.h, mi_subproc_t) */
#endif
void       _mi_segments_purge_unqueue(mi_segment_t* segment);   /* every queued slot of a segment about to be released */
/* slots [slots, slots + count) are taken again: one purged soon before backs the delay off */
void       _mi_segments_purge_note_reuse(mi_page_t* slots, size_t count, mi_subproc_t* subproc);

/* The subprocess' lock over its segments' slots, free queues and purge queues (taken once per
   page taken or returned, never per block). */
static inline void mi_segments_lock(mi_subproc_t* subproc)   { mi_lock_acquire(&subproc->lock); }
static inline void mi_segments_unlock(mi_subproc_t* subproc) { mi_lock_release(&subproc->lock); }

/* Small, medium and large segments are cut into equal slots of 1 << page_shift bytes; a huge
   segment is one page. */
static inline bool mi_segment_has_slots(const mi_segment_t* segment) {
  return (segment->page_kind != MI_PAGE_HUGE);
}

static inline size_t mi_segment_slot_size(const mi_segment_t* segment) {
  return (mi_segment_has_slots(segment) ? ((size_t)1 << segment->page_shift) : segment->memid.size);
}

static inline uint8_t* mi_segment_slot_start(const mi_segment_t* segment, const mi_page_t* page) {
  return (uint8_t*)segment + (size_t)page->segment_idx * mi_segment_slot_size(segment);
}


/* ------------------------------------------------------------------------------------------
   Segments and pages from pointers
------------------------------------------------------------------------------------------ */
static inline mi_segment_t* _mi_ptr_segment(const void* p) {
  mi_segment_t* segment = (mi_segment_t*)(((uintptr_t)p - 1) & ~MI_SEGMENT_MASK);
  return ((intptr_t)segment <= 0 ? NULL : segment);
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


/* ------------------------------------------------------------------------------------------
   purger.c: the background thread that runs due purges (MIMALLOC_PURGE_THREAD)
------------------------------------------------------------------------------------------ */
/* A purge was scheduled, due at `due` (_mi_prim_clock_now time): wakes the thread if it would
   sleep past `due`; with no thread, sets _mi_purger_wanted (or starts it, in a process that
   never had a second thread). Cheap (loads, rarely a CAS); call it after the purge is visible
   to the passes, and from a pass for every deadline it leaves. Safe inside any free. */
void       _mi_purger_notify(mi_msecs_t due);
extern _Atomic(int) _mi_purger_wanted;   /* the allocation slow path calls _mi_purger_start_wanted */
void       _mi_purger_start_wanted(void);   /* only where the caller holds no lock of libc's */
void       _mi_purger_fork_prepare(void);   /* before the fork handlers take any lock */
void       _mi_purger_fork_parent(void);
void       _mi_purger_fork_child(bool thread_has_heap);   /* the forking thread: a thread with a heap? */
void       _mi_purger_thread_init(void);    /* a thread has a heap (process init, mi_thread_init) */
void       _mi_purger_thread_done(void);    /* its end, after its pages were abandoned: may start the
                                               thread (it holds no lock of libc's) */
void       _mi_purger_done(void);           /* mi_process_done: no pass after this */
void       _mi_purger_live_wanted(void);             /* its thread runs _mi_live_background from now (live.c) */
