/* SPDX-License-Identifier: MIT */
/* The heaps of a thread: their pages' collection, deletion (live blocks move to the backing
   heap), destruction (all blocks freed at once), thread-exit abandonment, and the visits of
   introspection. The public functions that take a heap are heap-api.c's, a layer up: they tell
   a shared heap from a heap of the thread; here a heap is always the calling thread's (of shared
   heaps only the field mi_heap_t.sheap is read, to leave a theap's pages out of other heaps). */
#include "internal/heap.h"
#include "internal/alloc.h"   /* hooks: _mi_free_delayed_block, the guarded objects' */
#include "prim/prim.h"
#include "internal/limit.h"   /* _mi_limit_is_pressing */

/* ---------------------------------------------------------------------------------------
   Page iteration
--------------------------------------------------------------------------------------- */
/* Visit every page of every queue; the visitor may remove the page from its queue. */
static bool mi_heap_visit_pages(mi_heap_t* heap, heap_page_visitor_fun* fn, void* arg) {
  if (heap == NULL || heap->page_count == 0) return true;
  mi_heap_owner_enter(heap);   /* (the pages the purger emptied are freed first: never visited) */
  bool ok = true;
  for (size_t i = 0; i <= MI_BIN_FULL && ok; i++) {
    mi_page_queue_t* pq = &heap->pages[i];
    mi_page_t* page = pq->first;
    while (page != NULL) {
      mi_page_t* next = page->next;
      if (!fn(heap, pq, page, arg)) { ok = false; break; }
      page = next;
    }
  }
  mi_heap_owner_leave(heap);
  return ok;
}

bool _mi_heap_visit_pages(mi_heap_t* heap, heap_page_visitor_fun* fn, void* arg) {
  return mi_heap_visit_pages(heap, fn, arg);
}

/* ---------------------------------------------------------------------------------------
   Delayed frees (blocks other threads freed into our full pages)
--------------------------------------------------------------------------------------- */
bool _mi_heap_delayed_free_partial(mi_heap_t* heap) {
  if (mi_atomic_load_relaxed(&heap->thread_delayed_free) == NULL) return true;
  mi_block_t* block = mi_atomic_exchange_acq_rel(&heap->thread_delayed_free, NULL);
  mi_sched_point(MI_SCHED_DELAYED_DRAIN);   /* taken: other threads push on an empty list meanwhile */
  while (block != NULL) {
    mi_block_t* next = mi_block_next(_mi_ptr_page(block), block);   /* linked with its page's keys */
#if MI_SECURE > 0
    if (mi_unlikely(next != NULL && (((uintptr_t)next & (sizeof(void*) - 1)) != 0 || _mi_ptr_segment_checked(next) == NULL))) {
      _mi_error_message(EFAULT, "corrupted delayed-free list: block %p links to %p, not one of our blocks (written after it was freed?)\n",
                        (void*)block, (void*)next);
      next = NULL;   /* leak the rest rather than follow it */
    }
#endif
    _mi_free_delayed_block(block);
    block = next;
  }
  return true;
}

void _mi_heap_delayed_free_all(mi_heap_t* heap) {
  while (mi_atomic_load_acquire(&heap->thread_delayed_free) != NULL) {
    _mi_heap_delayed_free_partial(heap);
  }
}

/* ---------------------------------------------------------------------------------------
   Collection
--------------------------------------------------------------------------------------- */
/* MI_PERIODIC: the allocation slow path's (never waits for another thread's purge pass);
   MI_NORMAL and MI_FORCE: mi_collect and mi_heap_collect (the due, or all, purges are done when
   they return); MI_ABANDON: thread exit. */
typedef enum mi_collect_e { MI_PERIODIC, MI_NORMAL, MI_FORCE, MI_ABANDON } mi_collect_t;

/* Does this collect give back all it can, pages of ended threads and the insides of free blocks
   in pages still in use included? mi_collect(true), and the slow path's near the memory limit. */
static bool mi_collect_gives_all(mi_collect_t collect) {
  return (collect == MI_FORCE || (collect == MI_PERIODIC && _mi_limit_is_pressing()));
}

static bool mi_heap_page_never_delayed(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap; (void)pq; (void)arg;
  _mi_page_use_delayed_free(page, MI_NEVER_DELAYED_FREE, false);
  return true;
}

static bool mi_heap_page_collect(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap;
  const mi_collect_t collect = *(const mi_collect_t*)arg;
  _mi_page_free_collect(page, collect >= MI_FORCE);
  if (mi_page_all_free(page)) {
    _mi_page_free(page, pq);
    return true;
  }
  const bool gives_all = mi_collect_gives_all(collect);
  /* the warm-slot tail an earlier page of its slot left resident; an ended thread's one-block
     page whose block lives on (handed to another thread) gives it at once: no owner will look
     at that page again (thread-churn: 2026-12-01) */
  if (gives_all || (mi_option_get(mi_option_purge_delay) >= 0 &&
                    (collect != MI_ABANDON || page->reserved == 1))) {
    _mi_page_trim_tail(page, (gives_all || collect == MI_ABANDON) ? MI_TRIM_NOW
                             : (collect == MI_PERIODIC ? MI_TRIM_PERIODIC : MI_TRIM_LOOK));
  }
  if (gives_all) {
    _mi_page_purge_free_interiors(page);   /* its live blocks pin the page: give back the rest */
  }
  else if (collect == MI_ABANDON) {
    _mi_page_abandon(page, pq);
  }
  else if (mi_page_is_in_full(page) && mi_page_immediate_available(page)) {
    _mi_page_unfull(page);
  }
  return true;
}

/* In a fork child: a thread of the parent that was between the two CASes of the delayed-free
   handshake (free.c) left the page in MI_DELAYED_FREEING; it does not exist in the child, so
   finish for it (its block is lost, a leak) or the owner would wait for it forever. The live
   view's counting flag goes too (the child publishes nothing unless it starts its own view):
   its frees take the fast path again. Only pages that need it are written (each write copies
   a page of the parent's metadata). */
static bool mi_heap_page_fork_repair(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap; (void)pq; (void)arg;
  const uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  if (mi_tf_delayed(tfree) == MI_DELAYED_FREEING) {
    mi_atomic_store_relaxed(&page->xthread_free, mi_tf_set_delayed(tfree, MI_NO_DELAYED_FREE));
  }
  if ((mi_page_flags(page) & MI_PAGE_FREE_HOOK) != 0 && mi_page_prof_samples(page) == 0) {
    mi_page_flag_set(page, MI_PAGE_FREE_HOOK, false);   /* (a page with profiler samples keeps it) */
  }
  return true;
}

void _mi_heap_after_fork_child(mi_heap_t* heap) {
  if (!mi_heap_is_initialized(heap)) return;
  for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
    mi_heap_visit_pages(h, &mi_heap_page_fork_repair, NULL);
    mi_heap_t* const sampled = _mi_observe_heap_companion(h);   /* (not in the list) */
    if (sampled != NULL) mi_heap_visit_pages(sampled, &mi_heap_page_fork_repair, NULL);
  }
}

static void mi_heap_collect_ex_in(mi_heap_t* heap, mi_collect_t collect);
static void mi_heap_collect_ex(mi_heap_t* heap, mi_collect_t collect) {
  if (!mi_heap_is_initialized(heap)) return;
  mi_heap_owner_enter(heap);
  mi_heap_collect_ex_in(heap, collect);
  mi_heap_owner_leave(heap);
}

static void mi_heap_collect_ex_in(mi_heap_t* heap, mi_collect_t collect) {
  mi_assert_expensive(_mi_observe_check(MI_CHECK_HEAP, heap, NULL));
  const bool force = (collect >= MI_FORCE);
  if (mi_unlikely(heap->prof != NULL)) {
    _mi_observe_heap_release(heap);   /* leased blocks back on their pages */
    mi_heap_t* const sampled = _mi_observe_heap_companion(heap);
    if (sampled != NULL) mi_heap_collect_ex(sampled, collect);   /* its pages hold blocks of this heap */
  }
  _mi_options_deferred_free(heap, force);
#if MI_GUARDED > 0
  if (collect == MI_FORCE) _mi_guarded_quarantine_flush();   /* freed guarded objects, any thread's */
#endif
  if (collect == MI_ABANDON) {
    /* no thread may push on our delayed list any more */
    mi_heap_visit_pages(heap, &mi_heap_page_never_delayed, NULL);
  }
  _mi_heap_delayed_free_all(heap);
  if (mi_collect_gives_all(collect) && mi_heap_is_backing(heap) && !heap->allow_destroy) {
    _mi_abandoned_reclaim_all(heap);   /* memory of ended threads (its free parts go back below) */
  }
  _mi_page_collect_retired(heap, force);
  mi_heap_visit_pages(heap, &mi_heap_page_collect, &collect);
  /* due purges; all of them on mi_collect(true) (not at thread exit: other threads may reuse
     the memory a thread frees as it ends); an explicit call does them whatever the purger
     thread is doing (docs/memory.md) */
  if (collect == MI_FORCE) _mi_segments_free_empty(heap->tld->subproc);   /* the kept empty segments */
  _mi_segments_purge_collect(heap->tld, collect == MI_FORCE, collect == MI_NORMAL || collect == MI_FORCE);
  mi_assert_expensive(_mi_observe_check(MI_CHECK_HEAP, heap, NULL) && _mi_observe_check(MI_CHECK_SUBPROC, heap->tld->subproc, NULL) &&
                      _mi_observe_check(MI_CHECK_THREAD_STATS, &heap->tld->stats, NULL));
}

/* From the allocation slow path: collect the heap when it was not collected for ten purge
   delays (100 ms by default). Pages emptied by other threads' frees only go back to their
   segments, and so get purged, when the owner collects them; a thread that keeps allocating
   from other pages would otherwise hold them forever. */
void _mi_heap_collect_periodic(mi_heap_t* heap) {
  const long delay = mi_option_get(mi_option_purge_delay);
  if (delay < 0) return;
  const mi_msecs_t interval = (delay < 1 ? 10 : (_mi_limit_is_pressing() ? 25 : 10 * (mi_msecs_t)delay));   /* (near the memory limit: 25 ms, docs/memory.md) */
  const mi_msecs_t now = _mi_prim_clock_now();
  /* the backing heap too, from any heap's slow path: the pages of every heap the thread deletes
     go there (mi_heap_absorb), and other threads' frees empty them later; a thread that makes a
     heap per request allocates from the new heaps, so the backing heap's own slow path may
     never run (test-threads (d): 1.2 MiB kept per heap deleted while others freed into it) */
  mi_heap_t* const backing = heap->tld->heap_backing;
  if (backing != heap && backing->page_count > 0 && now - backing->last_collect >= interval) {
    backing->last_collect = now;
    mi_heap_collect_ex(backing, MI_PERIODIC);
  }
  if (now - heap->last_collect < interval) return;
  heap->last_collect = now;
  mi_heap_collect_ex(heap, MI_PERIODIC);
}

/* Blocks other threads free into a page that is not full wait on its thread_free list until the
   owner looks at that page again, which it does only when the page's size class runs out: a
   page whose blocks were all freed by others stays owned, and its slot out of every other
   thread's reach, for as long as its owner allocates from other classes (mstress with 16
   threads: a quarter of the resident memory, 47 MiB for 43 MiB live, sat on such lists, most of
   it in single-block pages of large classes). So a thread that takes fresh pages looks, every
   so often, at all its pages and gives back those that others' frees emptied. The interval is
   a quarter of its pages (and 8), so the cost is a few page visits per fresh page (mstress, 2
   threads: peak RSS 55 -> 39 MiB). */
static bool mi_heap_page_sweep(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap; (void)pq; (void)arg;
  /* only pages with at least half their blocks in use on the thread_free list (its count,
     page.h): taking every list cost mstress (2 threads) 2-4% of its time for no memory;
     taking only lists that empty their page cost 16 threads 0.2 x live more */
  const uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  if (mi_tf_block(tfree) == NULL || 2 * mi_tf_count(tfree) < page->used) return true;
  _mi_page_free_collect(page, false);
  if (mi_page_all_free(page)) _mi_page_retire(page);   /* freed, or kept a few heartbeats if the only page of its class */
  else if (mi_page_is_in_full(page) && mi_page_immediate_available(page)) _mi_page_unfull(page);
  return true;
}

void _mi_heap_fresh_page_taken(mi_heap_t* heap) {
  if (++heap->page_fresh <= 8 + heap->page_count / 4) return;
  heap->page_fresh = 0;
  _mi_heap_delayed_free_partial(heap);
  mi_heap_visit_pages(heap, &mi_heap_page_sweep, NULL);
}

void _mi_heap_collect_abandon(mi_heap_t* heap) {
  mi_heap_collect_ex(heap, MI_ABANDON);
}

void _mi_heap_collect(mi_heap_t* heap, bool force) {
  if (mi_heap_is_initialized(heap)) _mi_remote_flush(heap->tld);   /* the calling thread's frees into others' pages */
  mi_heap_collect_ex(heap, force ? MI_FORCE : MI_NORMAL);
}

/* ---------------------------------------------------------------------------------------
   Creation
--------------------------------------------------------------------------------------- */
/* The fields of a new heap; not linked into the thread's heaps, not profiled. */
void _mi_heap_init_unlisted(mi_heap_t* heap, mi_tld_t* tld, mi_arena_id_t arena_id, bool allow_destroy, uint8_t tag) {
  memcpy(heap, &_mi_thread_empty_heap, sizeof(*heap));
  heap->tld = tld;
  heap->thread_id = _mi_thread_id();
  if (mi_unlikely((heap->thread_id & MI_PAGE_FLAGS_MASK) != 0)) {   /* a port's _mi_thread_id is wrong */
    _mi_error_message(EFAULT, "thread id %p has low bits set: page flags would be taken for it (base.h, _mi_thread_id)\n", (void*)heap->thread_id);
  }
  heap->arena_id = arena_id;
  mi_atomic_store_relaxed(&heap->numa_node, -1);
  heap->allow_destroy = allow_destroy;
  heap->tag = tag;
  for (size_t i = 0; i < MI_BIN_HUGE_INTERNAL; i++) {
    heap->pages[i].block_size = _mi_page_bin_size(i);
  }
  heap->pages[MI_BIN_HUGE_INTERNAL].block_size = MI_LARGE_OBJ_SIZE_MAX + 1;
  heap->pages[MI_BIN_FULL].block_size = MI_LARGE_OBJ_SIZE_MAX + 2;
  heap->page_retired_min = MI_BIN_FULL;
  heap->page_retired_max = 0;
#if MI_GUARDED > 0
  _mi_guarded_heap_init(heap);
#endif
}

void _mi_heap_init(mi_heap_t* heap, mi_tld_t* tld, mi_arena_id_t arena_id, bool allow_destroy, uint8_t tag) {
  _mi_heap_init_unlisted(heap, tld, arena_id, allow_destroy, tag);
  if (mi_unlikely(mi_prof_rate() != 0)) _mi_observe_heap_init(heap);
  /* link into the thread's heaps */
  if (tld->heaps != heap) {
    mi_live_enter(tld);
    heap->next = tld->heaps;
    tld->heaps = heap;
    mi_live_leave(tld);
  }
}

mi_heap_t* _mi_heap_by_tag(mi_heap_t* heap, uint8_t tag) {
  if (heap->tag == tag) return heap;
  for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
    if (h->tag == tag && !h->allow_destroy && h->sheap == NULL && h->arena_id == heap->arena_id) return h;
  }
  return heap;
}

/* ---------------------------------------------------------------------------------------
   Deletion and destruction
--------------------------------------------------------------------------------------- */
static void mi_heap_reset_pages(mi_heap_t* heap) {
  mi_live_enter(heap->tld);
  mi_page_t** const direct = mi_heap_direct_real(heap);
  for (size_t i = 0; i < MI_PAGES_DIRECT; i++) direct[i] = (mi_page_t*)&_mi_page_empty;
  if (heap->prof == NULL) {   /* (else the proxies stay: prof.c) */
    for (size_t i = 0; i < MI_BIN_HUGE_INTERNAL; i++) heap->pages_medium_direct[i] = NULL;
  }
  for (size_t i = 0; i <= MI_BIN_FULL; i++) {
    heap->pages[i].first = NULL;
    heap->pages[i].last = NULL;
  }
  heap->page_count = 0;
  heap->page_retired_min = MI_BIN_FULL;
  heap->page_retired_max = 0;
  mi_live_leave(heap->tld);
}

/* The heap leaves its thread (its pages are gone): its descriptor is its maker's to free
   (heap-api.c, sheap.c). */
static void mi_heap_unlist(mi_heap_t* heap) {
  mi_assert_internal(!mi_heap_is_backing(heap));   /* (it lives until thread exit) */
  if (heap->prof != NULL) _mi_observe_heap_done(heap);
  if (heap == mi_prim_get_default_heap()) {
    _mi_thread_set_default_heap(heap->tld->heap_backing);
  }
  mi_heap_t* prev = NULL;
  mi_heap_t* cur = heap->tld->heaps;
  while (cur != heap && cur != NULL) { prev = cur; cur = cur->next; }
  if (cur == heap) {
    mi_live_enter(heap->tld);
    if (prev != NULL) prev->next = heap->next;
    else heap->tld->heaps = heap->next;
    mi_live_leave(heap->tld);
  }
}

/* Move all pages of `from` into `heap` (same thread). */
static void mi_heap_absorb(mi_heap_t* heap, mi_heap_t* from) {
  if (from == NULL || from->page_count == 0) return;
  _mi_heap_delayed_free_partial(from);
  /* pages whose blocks are all free go back to their segments now: in `heap`'s queues only an
     allocation of their size class would look at them again, so a heap made and deleted per
     request kept one page per delete (64 KiB committed each, without bound: test-sheap's fork
     churn grew past 20 GiB while a slow child kept its loop going) */
  mi_collect_t normal = MI_NORMAL;
  mi_heap_visit_pages(from, &mi_heap_page_collect, &normal);
  mi_live_enter(heap->tld);   /* until `from` is empty: a publisher must not see its pages twice */
  for (size_t i = 0; i <= MI_BIN_FULL; i++) {
    _mi_page_queue_append(heap, &heap->pages[i], &from->pages[i]);
  }
  mi_sched_point(MI_SCHED_HEAP_DELETE);   /* the pages are the target's: their frees go to it */
  /* no thread pushes on from's delayed list any more (append waited for them) */
  _mi_heap_delayed_free_all(from);
  mi_heap_reset_pages(from);
  mi_live_leave(heap->tld);
}

/* mi_heap_delete (heap-api.c) of a heap of the calling thread, not its backing heap: live
   blocks move to a heap of the same arena, else they are abandoned (for a later heap of that
   arena to reclaim); with keep_lists, to the lists the heap's pages go on (pages_lists: a
   theap's, its shared heap's, abandon.c). Then the heap leaves the thread (mi_heap_unlist). */
void _mi_heap_delete(mi_heap_t* heap, bool keep_lists) {
  mi_heap_t* target = heap->tld->heap_backing;
  if (keep_lists) {
    target = NULL;
  }
  else if (target->arena_id != heap->arena_id) {
    for (target = heap->tld->heaps; target != NULL; target = target->next) {
      /* (not a heap that may be destroyed, nor a shared heap's part: the blocks stay live) */
      if (target != heap && target->arena_id == heap->arena_id && !target->allow_destroy && target->sheap == NULL) break;
    }
  }
  mi_heap_t* const sampled = _mi_observe_heap_companion(heap);
  if (heap->prof != NULL) _mi_observe_heap_release(heap);
  mi_heap_t* const backing = heap->tld->heap_backing;
  mi_heap_owner_enter(backing);   /* (the target's queues may be the backing heap's) */
  if (target != NULL) { mi_heap_absorb(target, heap); mi_heap_absorb(target, sampled); }
  else { _mi_heap_collect_abandon(heap); if (sampled != NULL) _mi_heap_collect_abandon(sampled); }
  mi_heap_owner_leave(backing);
  mi_heap_unlist(heap);
}

static bool mi_heap_page_destroy(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap; (void)arg;
  _mi_page_use_delayed_free(page, MI_NEVER_DELAYED_FREE, false);
#if MI_TRACK_ENABLED
  /* the tool learns that the live blocks die (those freed by other threads it knows freed) */
  _mi_page_free_collect(page, true);
  _mi_heap_area_visit_blocks(heap, page, true, &_mi_track_visit_destroyed, page);
#endif
  _mi_page_free_all(page, pq);   /* its blocks die with the heap */
  return true;
}

/* Every page of the heap freed with its blocks. */
static void mi_heap_destroy_pages(mi_heap_t* heap) {
  if (heap == NULL) return;
  mi_heap_visit_pages(heap, &mi_heap_page_never_delayed, NULL);
  mi_sched_point(MI_SCHED_HEAP_DESTROY);   /* no more delayed pushes; others' late frees still land */
#if MI_TRACK_ENABLED
  _mi_heap_delayed_free_all(heap);   /* freed blocks back on their pages: not live for the tool */
#endif
  mi_atomic_store_release(&heap->thread_delayed_free, NULL);   /* those blocks die with the heap */
  mi_heap_visit_pages(heap, &mi_heap_page_destroy, NULL);
  mi_heap_reset_pages(heap);
}

/* mi_heap_destroy (heap-api.c) of a heap of the calling thread that allows it: every page
   freed with its blocks, then the heap leaves the thread. False: not destroyed (nothing done),
   the caller deletes it instead. */
bool _mi_heap_destroy(mi_heap_t* heap) {
  mi_assert_internal(heap->allow_destroy && !mi_heap_is_backing(heap));
#if MI_GUARDED > 0
  if (heap->guarded_used) {
    /* its pages may hold guard pages that only the free of their block removes */
    _mi_verbose_message("mi_heap_destroy: heap %p has held guarded objects; deleting it instead\n", (void*)heap);
    return false;
  }
#endif
  if (heap->prof != NULL) _mi_observe_heap_release(heap);
  mi_heap_destroy_pages(heap);
  mi_heap_destroy_pages(_mi_observe_heap_companion(heap));   /* the heap's sampled blocks */
  mi_heap_unlist(heap);
  return true;
}

bool mi_is_in_heap_region(const void* p) mi_attr_noexcept {
  return (p != NULL && _mi_segment_map_covers(p));
}

/* The page of p if p lies in a page of ours that is in use (the page need not be the caller's) */
mi_page_t* _mi_heap_page_in_use_of(const void* p) {
  mi_segment_t* segment = _mi_segment_map_segment_of(p);
  if (segment == NULL) return NULL;
  mi_page_t* page = _mi_segment_page_of(segment, p);
  return (page->segment_in_use && page->block_size != 0 ? page : NULL);
}

bool mi_any_heap_contains(const void* p) {
  return (_mi_heap_page_in_use_of(p) != NULL);
}

typedef struct mi_check_owned_s { const void* p; bool found; } mi_check_owned_t;

static bool mi_heap_page_check_owned(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap; (void)pq;
  mi_check_owned_t* info = (mi_check_owned_t*)arg;
  const uint8_t* start = mi_page_start(page);
  const uint8_t* end = start + (size_t)page->reserved * page->block_size;
  if ((const uint8_t*)info->p >= start && (const uint8_t*)info->p < end) {
    info->found = true;
    return false;
  }
  return true;
}

/* mi_heap_check_owned (heap-api.c) of a heap of the calling thread: p in one of its pages */
bool _mi_heap_check_owned(mi_heap_t* heap, const void* p) {
  if (((uintptr_t)p & (sizeof(uintptr_t) - 1)) != 0) return false;
  mi_check_owned_t info = { p, false };
  mi_heap_visit_pages(heap, &mi_heap_page_check_owned, &info);
  mi_heap_t* const sampled = _mi_observe_heap_companion(heap);
  if (!info.found && sampled != NULL) mi_heap_visit_pages(sampled, &mi_heap_page_check_owned, &info);
  return info.found;
}

/* Visit a page as an area and, optionally, each of its live blocks. The page's free lists
   must be collected (no local_free) and stable: owned by the caller or abandoned under lock.
   (`leased`: blocks the page's profiler lease holds unused, free as those of its free lists) */
static bool mi_heap_area_visit(const mi_heap_t* heap, mi_page_t* page, const mi_block_t* leased, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  const size_t bsize = page->block_size;
  /* the visitor gets what a program may use of each block: without the debug padding (it is
     ours; writing it is an overflow), as area.block_size; full_block_size is the stride */
  const size_t ubsize = bsize - MI_PADDING_SIZE;
  mi_heap_area_t area;
  area.blocks = mi_page_start(page);
  area.reserved = (size_t)page->reserved * bsize;
  area.committed = (size_t)page->capacity * bsize;
  area.used = page->used;
  for (const mi_block_t* b = leased; b != NULL; b = mi_block_next(page, b)) area.used--;
  area.block_size = ubsize;
  area.full_block_size = bsize;
  area.heap_tag = page->heap_tag;
  if (!visitor(heap, &area, NULL, ubsize, arg)) return false;
  if (!visit_blocks || area.used == 0) return true;
  if (page->capacity == 1) {
    return visitor(heap, &area, mi_page_start(page), ubsize, arg);
  }
  /* mark the free blocks, then visit the others */
  uintptr_t free_map[MI_PAGE_MAP_WORDS];
  if (!_mi_page_free_map(page, leased, free_map)) return false;
  const size_t capacity = page->capacity;
  for (size_t i = 0; i < capacity; i++) {
    if (mi_page_map_get(free_map, i)) continue;
    if (!visitor(heap, &area, mi_page_start(page) + i*bsize, ubsize, arg)) return false;
  }
  return true;
}

bool _mi_heap_area_visit_blocks(const mi_heap_t* heap, mi_page_t* page, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  return mi_heap_area_visit(heap, page, NULL, visit_blocks, visitor, arg);
}

typedef struct mi_visit_blocks_args_s {
  bool visit_blocks;
  mi_block_visit_fun* visitor;
  void* arg;
  const mi_heap_t* heap;   /* the heap the visitor is told of (the profiler's sample heap is its heap's) */
} mi_visit_blocks_args_t;

static bool mi_heap_page_visit(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* vargs) {
  (void)heap; (void)pq;
  mi_visit_blocks_args_t* args = (mi_visit_blocks_args_t*)vargs;
  _mi_page_free_collect(page, true);
  return _mi_heap_area_visit_blocks(args->heap, page, args->visit_blocks, args->visitor, args->arg);
}

/* Another thread's part of a shared heap: its pages as they are (only its thread may collect
   them, so blocks freed by other threads and not yet collected count as live; the blocks its
   profiler leased and did not hand out are free) */
static bool mi_heap_page_visit_as_is(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* vargs) {
  (void)pq;
  mi_visit_blocks_args_t* args = (mi_visit_blocks_args_t*)vargs;
  return mi_heap_area_visit(args->heap, page, _mi_observe_page_held(heap, page), args->visit_blocks, args->visitor, args->arg);
}

/* The calling thread's heap, or its part of a shared heap (`shown`) */
static bool mi_heap_visit_own(mi_heap_t* heap, mi_visit_blocks_args_t* args) {
  if (heap->prof != NULL) _mi_observe_heap_release(heap);   /* leased blocks are not live */
  if (!mi_heap_visit_pages(heap, &mi_heap_page_visit, args)) return false;
  mi_heap_t* const sampled = _mi_observe_heap_companion(heap);
  return (sampled == NULL || mi_heap_visit_pages(sampled, &mi_heap_page_visit, args));
}

/* A heap's blocks, the visitor told of `shown`: the calling thread's heap (`own`: heap-api.c,
   or its part of a shared heap), or another thread's part of a shared heap as it is
   (mi_heap_page_visit_as_is, sheap.c) */
bool _mi_heap_visit_part(const mi_heap_t* heap, const mi_heap_t* shown, bool own, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_visit_blocks_args_t args = { visit_blocks, visitor, arg, shown };
  if (own) return mi_heap_visit_own((mi_heap_t*)heap, &args);
  mi_heap_t* const sampled = _mi_observe_heap_companion(heap);
  return (mi_heap_visit_pages((mi_heap_t*)heap, &mi_heap_page_visit_as_is, &args) &&
          (sampled == NULL || mi_heap_visit_pages(sampled, &mi_heap_page_visit_as_is, &args)));
}

