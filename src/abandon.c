/* SPDX-License-Identifier: MIT */
/* Abandoned pages: a thread that ends leaves each of its pages that still hold live blocks to
   its subprocess, one by one (types.h, mi_subproc_t). Frees into such a page push on its
   thread_free list, whose word counts the live blocks (internal.h, abandoned form); the free of
   the last one releases the page under the subprocess' lock, whichever thread makes it. A
   thread that needs a page of a size class adopts an abandoned page of that class with room
   before it takes a fresh one, so the free blocks of ended threads are used first.
   Who may change an abandoned page: while it is listed (abandoned_listed), only the holder of
   its subprocess' lock; once a thread has unlisted it under the lock, that thread. */
#include "internal/internal.h"

/* The list a page goes on: its bin's when it can hold more than one block (a thread needing a
   page of the bin may adopt it), else the last list (it is only ever released or visited). */
static _Atomic(mi_page_t*)* mi_abandoned_list_of(mi_subproc_t* subproc, const mi_page_t* page) {
  return &subproc->abandoned_pages[page->reserved > 1 ? _mi_bin(page->block_size) : MI_BIN_HUGE_INTERNAL];
}

static void mi_abandoned_page_link(mi_subproc_t* subproc, mi_page_t* page) {
  _Atomic(mi_page_t*)* head = mi_abandoned_list_of(subproc, page);
  mi_page_t* first = mi_atomic_load_relaxed(head);
  page->prev = NULL;
  page->next = first;
  if (first != NULL) first->prev = page;
  mi_atomic_store_relaxed(head, page);
  page->abandoned_listed = 1;
  subproc->abandoned_count++;
}

/* Off its list; the page stays abandoned in the segment's count until adopted or released. */
static void mi_abandoned_page_unlink(mi_subproc_t* subproc, mi_page_t* page) {
  mi_assert_internal(page->abandoned_listed);
  if (page->prev != NULL) page->prev->next = page->next;
  else mi_atomic_store_relaxed(mi_abandoned_list_of(subproc, page), page->next);
  if (page->next != NULL) page->next->prev = page->prev;
  page->next = NULL;
  page->prev = NULL;
  page->abandoned_listed = 0;
  subproc->abandoned_count--;
}

/* Under the lock: an abandoned page whose blocks are all free leaves its segment. Returns a
   segment to release after the lock (_mi_segment_page_release_locked). */
static mi_segment_t* mi_abandoned_page_release(mi_page_t* page) {
  mi_segment_t* segment = _mi_page_segment(page);
  if (page->abandoned_listed) mi_abandoned_page_unlink(segment->subproc, page);
  _mi_stat_blocks_freed(page, NULL, page->used);   /* they moved to the totals when abandoned */
  _mi_segment_abandoned_change(segment, -1);
  mi_os_stat_decrease(pages_abandoned, 1);
  return _mi_segment_page_release_locked(page, mi_option_is_enabled(mi_option_abandoned_page_purge));
}

/* Thread exit, or mi_heap_delete of a heap whose arena no other heap of the thread uses: the
   page (taken off its heap, delayed state MI_NEVER_DELAYED_FREE) is left to the subprocess. */
void _mi_segment_page_abandon(mi_page_t* page, mi_tld_t* tld) {
  mi_segment_t* segment = _mi_page_segment(page);
  mi_subproc_t* subproc = segment->subproc;   /* the creator's: never changes (free reads it) */
  mi_os_stat_increase(pages_abandoned, 1);
  _mi_stat_page_transfer(page, tld, NULL);
  const size_t live = _mi_page_tf_to_abandoned(page);
  mi_segment_t* released = NULL;
  mi_lock_acquire(&subproc->lock);
  _mi_segment_abandoned_change(segment, +1);
  if (live == 0) {
    released = mi_abandoned_page_release(page);   /* its blocks were freed by other threads */
  }
  else {
    mi_abandoned_page_link(subproc, page);
    /* a last block freed since the conversion found the page not yet listed (it left the
       release to us) */
    if (mi_tf_count(mi_atomic_load_acquire(&page->xthread_free)) == MI_TF_ABANDONED_BASE) {
      released = mi_abandoned_page_release(page);
    }
  }
  mi_assert_expensive(_mi_subproc_validate_locked(subproc));
  mi_lock_release(&subproc->lock);
  _mi_segment_free_released(released);
  _mi_segments_notify_purger(subproc);
}

/* free.c: the free of an abandoned page's last live block (its thread_free count at
   MI_TF_ABANDONED_BASE - 1: every push is made under the lock then). Pushes the block, and
   releases the page if it is listed; an unlisted page is being adopted or abandoned by a thread
   that looks at it after the lock. False if the page is owned again (the caller frees as usual). */
bool _mi_segment_abandoned_free_last(mi_segment_t* segment, mi_page_t* page, mi_block_t* block) {
  mi_subproc_t* subproc = segment->subproc;   /* stable: our block keeps the segment alive */
  mi_lock_acquire(&subproc->lock);
  uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  uintptr_t tfreex;
  do {
    if (!mi_tf_is_abandoned(tfree)) {
      mi_lock_release(&subproc->lock);
      return false;
    }
    mi_block_set_next(page, block, mi_tf_block(tfree));
    tfreex = mi_tf_push(tfree, block);
  } while (!mi_atomic_cas_weak_acq_rel(&page->xthread_free, &tfree, tfreex));
  mi_segment_t* released = NULL;
  if (page->abandoned_listed && mi_tf_count(tfreex) == MI_TF_ABANDONED_BASE) {
    released = mi_abandoned_page_release(page);
  }
  mi_lock_release(&subproc->lock);
  _mi_segment_free_released(released);
  _mi_segments_notify_purger(subproc);
  return true;
}

/* Under the lock: take a listed page for adoption. */
static void mi_abandoned_page_take(mi_subproc_t* subproc, mi_page_t* page) {
  mi_abandoned_page_unlink(subproc, page);
  _mi_segment_abandoned_change(_mi_page_segment(page), -1);
}

/* A page taken off its list (mi_abandoned_page_take) joins the calling thread's heap of its
   tag (or `heap`, types.h); a page whose blocks turn out all free is released instead. */
static void mi_page_adopt(mi_page_t* page, mi_heap_t* heap) {
  mi_tld_t* tld = heap->tld;
  mi_heap_t* target = _mi_heap_by_tag(heap, page->heap_tag);
  mi_page_set_heap(page, target);
  page->heap_tag = target->tag;   /* (no heap of its tag: the page joins `heap`, types.h) */
  mi_os_stat_decrease(pages_abandoned, 1);
  _mi_stat_page_transfer(page, NULL, tld);   /* before collecting: the collect decreases */
  if (mi_unlikely(mi_live_enabled())) _mi_live_page_move(page, NULL, tld);
  else if (mi_unlikely((mi_page_flags(page) & MI_PAGE_FREE_HOOK) != 0) && mi_page_prof_samples(page) == 0) {
    mi_page_flag_set(page, MI_PAGE_FREE_HOOK, false);   /* counted by a view now off (a fork child's parent) */
  }
  const bool huge = (_mi_page_segment(page)->page_kind == MI_PAGE_HUGE);
  _mi_page_tf_to_owned(page, huge ? MI_USE_DELAYED_FREE : MI_NO_DELAYED_FREE);
  _mi_page_free_collect(page, false);
  if (mi_page_all_free(page)) {
    mi_page_set_heap(page, NULL);
    _mi_segment_page_free(page, tld);
    return;
  }
  mi_page_queue_t* pq = (huge ? &target->pages[MI_BIN_HUGE_INTERNAL] : &target->pages[_mi_bin(page->block_size)]);
  _mi_page_queue_push(target, pq, page);
}

/* May `heap` adopt abandoned memory of this segment? */
static bool mi_abandoned_suits(const mi_heap_t* heap, const mi_segment_t* segment) {
  return (segment->subproc == heap->tld->subproc && _mi_arena_memid_is_suitable(&segment->memid, heap->arena_id));
}

/* page.c, before a fresh page of blocks of `block_size` in `heap`: adopt an ended thread's page
   of that size class with room (of the heap's tag, in memory that may serve it), among the
   first few of the class' list. Returns true if it adopted one. */
bool _mi_segment_reclaim_for_bin(mi_heap_t* heap, size_t block_size) {
  if (heap->allow_destroy || block_size > MI_LARGE_OBJ_SIZE_MAX) return false;
  mi_subproc_t* subproc = heap->tld->subproc;
  _Atomic(mi_page_t*)* head = &subproc->abandoned_pages[_mi_bin(block_size)];
  if (mi_atomic_load_relaxed(head) == NULL) return false;   /* a stale peek only delays reclaim */
  mi_page_t* found = NULL;
  mi_lock_acquire(&subproc->lock);
  size_t n = 0;
  for (mi_page_t* page = mi_atomic_load_relaxed(head); page != NULL && n < 8; page = page->next, n++) {
    if (page->heap_tag != heap->tag || !mi_abandoned_suits(heap, _mi_page_segment(page))) continue;
    const size_t live = MI_TF_ABANDONED_BASE - mi_tf_count(mi_atomic_load_relaxed(&page->xthread_free));
    if (live >= page->reserved) continue;   /* full (until more of its blocks are freed) */
    mi_abandoned_page_take(subproc, page);
    found = page;
    break;
  }
  mi_lock_release(&subproc->lock);
  if (found == NULL) return false;
  mi_page_adopt(found, heap);
  return true;
}

/* A free by this thread into an abandoned page: with the option abandoned_reclaim_on_free the
   thread adopts the page (if it may serve the thread's default heap) and the free becomes
   local. Returns true if it did (the page is then this thread's). Not a page of one block (a
   large or huge one): its free releases it anyway, and the release of a huge block by
   mi_free_block_mt gives its memory back at once. */
bool _mi_segment_reclaim_on_free(mi_page_t* page) {
  if (page->reserved <= 1 || !mi_option_is_enabled(mi_option_abandoned_reclaim_on_free)) return false;
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (!mi_heap_is_initialized(heap) || heap->allow_destroy) return false;
  if (heap->tld->heap_backing->thread_id != _mi_thread_id()) return false;   /* e.g. the thread is ending */
  mi_segment_t* segment = _mi_page_segment(page);
  if (!mi_abandoned_suits(heap, segment)) return false;
  mi_subproc_t* subproc = segment->subproc;
  mi_lock_acquire(&subproc->lock);
  const bool taken = page->abandoned_listed;   /* else another thread is adopting or releasing it */
  if (taken) mi_abandoned_page_take(subproc, page);
  mi_lock_release(&subproc->lock);
  if (!taken) return false;
  mi_page_adopt(page, heap);   /* (the block being freed is live: the page stays) */
  return true;
}

/* mi_collect(true): adopt every abandoned page that may serve `heap`. */
void _mi_segment_reclaim_all_abandoned(mi_heap_t* heap) {
  mi_subproc_t* subproc = heap->tld->subproc;
  mi_page_t* taken = NULL;
  mi_lock_acquire(&subproc->lock);
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    mi_page_t* page = mi_atomic_load_relaxed(&subproc->abandoned_pages[bin]);
    while (page != NULL) {
      mi_page_t* next = page->next;
      if (mi_abandoned_suits(heap, _mi_page_segment(page))) {
        mi_abandoned_page_take(subproc, page);
        page->next = taken;
        taken = page;
      }
      page = next;
    }
  }
  mi_lock_release(&subproc->lock);
  while (taken != NULL) {
    mi_page_t* next = taken->next;
    taken->next = NULL;
    mi_page_adopt(taken, heap);
    taken = next;
  }
}

/* Visit the abandoned pages of a subprocess (under its lock, so none is adopted or released). */
bool _mi_abandoned_visit(mi_subproc_t* subproc, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  bool ok = true;
  mi_lock_acquire(&subproc->lock);
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL && ok; bin++) {
    for (mi_page_t* page = mi_atomic_load_relaxed(&subproc->abandoned_pages[bin]); page != NULL && ok; page = page->next) {
      if (heap_tag >= 0 && page->heap_tag != (uint8_t)heap_tag) continue;
      _mi_page_free_collect(page, true);   /* nobody owns the page: safe under the lock */
      ok = _mi_heap_area_visit_blocks(NULL, page, visit_blocks, visitor, arg);
    }
  }
  mi_lock_release(&subproc->lock);
  return ok;
}
