/* SPDX-License-Identifier: MIT */
/* Abandoned pages: a thread that ends leaves each of its pages that still hold live blocks to
   its subprocess, one by one (types.h, mi_subproc_t). Frees into such a page push on its
   thread_free list, whose word counts the live blocks (page.h, abandoned form); the free of
   the last one releases the page under the subprocess' lock, whichever thread makes it. A
   thread that needs a page of a size class adopts an abandoned page of that class with room
   before it takes a fresh one, so the free blocks of ended threads are used first.
   Who may change an abandoned page: while it is listed (abandoned_listed), only the holder of
   its subprocess' lock; once a thread has unlisted it under the lock, that thread. */
#include "internal/page.h"
#include "internal/heap.h"   /* hooks: _mi_heap_by_tag, _mi_heap_area_visit_blocks */

/* The lists a page goes on: those it is marked with (abandon_lists: types.h,
   mi_abandoned_lists_t) or else its subprocess'. In them, its bin's list when it
   can hold more than one block (a thread needing a page of the bin may adopt it), else the
   last list (it is only ever released, visited or destroyed). */
static _Atomic(mi_page_t*)* mi_abandoned_list_of(mi_subproc_t* subproc, const mi_page_t* page) {
  mi_abandoned_lists_t* const own = mi_atomic_load_relaxed(&((mi_page_t*)page)->abandon_lists);
  _Atomic(mi_page_t*)* const lists = (own != NULL ? own->pages : subproc->abandoned_pages);
  return &lists[page->reserved > 1 ? _mi_bin(page->block_size) : MI_BIN_HUGE_INTERNAL];
}

static size_t* mi_abandoned_count_of(mi_subproc_t* subproc, const mi_page_t* page) {
  mi_abandoned_lists_t* const own = mi_atomic_load_relaxed(&((mi_page_t*)page)->abandon_lists);
  return (own != NULL ? &own->count : &subproc->abandoned_count);
}

/* Pages on every abandoned list of the process (the purger waits for their last frees while
   there are any: purger.c, mi_purger_keep). Changed under the lists' lock; read without. */
static _Atomic(size_t) mi_abandoned_listed;

size_t _mi_abandoned_pages_listed(void) {
  return mi_atomic_load_seq_cst(&mi_abandoned_listed);
}

static void mi_abandoned_page_link(mi_subproc_t* subproc, mi_page_t* page, mi_abandoned_lists_t* lists) {
  mi_atomic_store_release(&page->abandon_lists, lists);   /* (mi_heap_of reads it) */
  _Atomic(mi_page_t*)* head = mi_abandoned_list_of(subproc, page);
  mi_page_t* first = mi_atomic_load_relaxed(head);
  page->prev = NULL;
  page->next = first;
  if (first != NULL) first->prev = page;
  mi_atomic_store_relaxed(head, page);
  page->abandoned_listed = 1;
  (*mi_abandoned_count_of(subproc, page))++;
  mi_atomic_add_relaxed(&mi_abandoned_listed, 1);
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
  (*mi_abandoned_count_of(subproc, page))--;
  mi_atomic_sub_relaxed(&mi_abandoned_listed, 1);
  mi_atomic_store_relaxed(&page->abandon_lists, NULL);
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
   page (taken off its heap, delayed state MI_NEVER_DELAYED_FREE) is left to the subprocess, or,
   given `lists` (its heap's pages_lists, which the heap keeps alive), to those, where only the
   heaps whose pages_lists they are find it (types.h). */
void _mi_abandoned_add_page(mi_page_t* page, mi_tld_t* tld, mi_abandoned_lists_t* lists) {
  mi_segment_t* segment = _mi_page_segment(page);
  mi_subproc_t* subproc = segment->subproc;   /* the creator's: never changes (free reads it) */
  if (lists != NULL && lists->subproc != subproc) lists = NULL;   /* (they are under their subprocess' lock) */
  mi_os_stat_increase(pages_abandoned, 1);
  _mi_stat_page_transfer(page, tld, NULL);
  const size_t live = _mi_page_tf_to_abandoned(page);
  mi_sched_point(MI_SCHED_ABANDON);   /* abandoned form, not listed: a last free leaves the release to us */
  mi_segment_t* released = NULL;
  mi_lock_acquire(&subproc->lock);
  _mi_segment_abandoned_change(segment, +1);
  if (live == 0) {
    released = mi_abandoned_page_release(page);   /* its blocks were freed by other threads */
  }
  else {
    mi_abandoned_page_link(subproc, page, lists);
    /* a last block freed since the conversion found the page not yet listed (it left the
       release to us) */
    if (mi_tf_count(mi_atomic_load_acquire(&page->xthread_free)) == MI_TF_ABANDONED_BASE) {
      released = mi_abandoned_page_release(page);
    }
  }
  mi_assert_expensive(_mi_observe_check(MI_CHECK_SUBPROC_LOCKED, subproc, NULL));
  mi_lock_release(&subproc->lock);
  _mi_segment_free_released(released);
  _mi_segments_purge_notify(subproc);
}

/* free.c: the free of an abandoned page's last live block (its thread_free count at
   MI_TF_ABANDONED_BASE - 1: every push is made under the lock then). Pushes the block, and
   releases the page if it is listed; an unlisted page is being adopted or abandoned by a thread
   that looks at it after the lock. False if the page is owned again (the caller frees as usual). */
bool _mi_abandoned_free_last(mi_segment_t* segment, mi_page_t* page, mi_block_t* block) {
  mi_subproc_t* subproc = segment->subproc;   /* stable: our block keeps the segment alive */
  mi_lock_acquire(&subproc->lock);
  /* Read before the push: once our block is pushed, an adopter that took the page off its list
     before our lock may collect the page, find it all free and release it, so nothing of the
     page may be read after the CAS. (Listing changes only under the lock we hold.) */
  const bool listed = page->abandoned_listed;
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
  if (listed && mi_tf_count(tfreex) == MI_TF_ABANDONED_BASE) {
    released = mi_abandoned_page_release(page);
  }
  mi_lock_release(&subproc->lock);
  _mi_segment_free_released(released);
  _mi_segments_purge_notify(subproc);
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
  mi_sched_point(MI_SCHED_RECLAIM);   /* off the lists, still in abandoned form: frees push as into an abandoned page */
  mi_tld_t* tld = heap->tld;
  mi_heap_t* target = _mi_heap_by_tag(heap, page->heap_tag);
  mi_page_set_heap(page, target);
  page->heap_tag = target->tag;   /* (no heap of its tag: the page joins `heap`, types.h) */
  mi_os_stat_decrease(pages_abandoned, 1);
  _mi_stat_page_transfer(page, NULL, tld);   /* before collecting: the collect decreases */
  if (mi_unlikely(mi_live_enabled())) _mi_observe_page_move(page, NULL, tld);
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

/* Take a page of the list `head` (of subproc's lists, or of lists whose subprocess it is) for
   `heap`: an ended thread's page with room, of the heap's tag, in memory that may
   serve it, among the first few of the list. */
static bool mi_abandoned_reclaim_from(mi_heap_t* heap, mi_subproc_t* subproc, _Atomic(mi_page_t*)* head) {
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

/* page.c, before a fresh page of blocks of `block_size` in `heap`: adopt an ended thread's page
   of that size class with room. A heap with lists of its own (`own`: a theap's, its shared
   heap's, sheap.c) looks at them first (they are its blocks, so a heap that may be destroyed
   takes them too; the heap keeps them alive), then, like any heap that is never destroyed, at
   its subprocess'. Returns true if it adopted one. */
bool _mi_abandoned_reclaim_for_bin(mi_heap_t* heap, mi_abandoned_lists_t* own, size_t block_size) {
  if (block_size > MI_LARGE_OBJ_SIZE_MAX) return false;
  const size_t bin = _mi_bin(block_size);
  if (own != NULL && own->subproc == heap->tld->subproc && mi_abandoned_reclaim_from(heap, own->subproc, &own->pages[bin])) return true;
  if (heap->allow_destroy) return false;
  mi_subproc_t* subproc = heap->tld->subproc;
  return mi_abandoned_reclaim_from(heap, subproc, &subproc->abandoned_pages[bin]);
}

/* A free by this thread into an abandoned page: with the option abandoned_reclaim_on_free the
   thread adopts the page (if it may serve the thread's default heap) and the free becomes
   local. Returns true if it did (the page is then this thread's). Not a page of one block (a
   large or huge one): its free releases it anyway, and the release of a huge block by
   _mi_remote_free_block gives its memory back at once. */
bool _mi_abandoned_reclaim_on_free(mi_page_t* page) {
  if (page->reserved <= 1 || !mi_option_is_enabled(mi_option_abandoned_reclaim_on_free)) return false;
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (!mi_heap_is_initialized(heap) || heap->allow_destroy) return false;
  if (heap->tld->heap_backing->thread_id != _mi_thread_id()) return false;   /* e.g. the thread is ending */
  mi_segment_t* segment = _mi_page_segment(page);
  if (!mi_abandoned_suits(heap, segment)) return false;
  mi_subproc_t* subproc = segment->subproc;
  mi_lock_acquire(&subproc->lock);
  /* not listed: another thread is adopting or releasing it; a page on lists of their own is
     for their heaps only */
  const bool taken = (page->abandoned_listed && mi_atomic_load_relaxed(&page->abandon_lists) == NULL);
  if (taken) mi_abandoned_page_take(subproc, page);
  mi_lock_release(&subproc->lock);
  if (!taken) return false;
  mi_page_adopt(page, heap);   /* (the block being freed is live: the page stays) */
  return true;
}

/* mi_collect(true): adopt every abandoned page that may serve `heap`. */
void _mi_abandoned_reclaim_all(mi_heap_t* heap) {
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

/* Visit the abandoned pages of a subprocess, and those on the lists `more` gives (until NULL,
   from NULL; the caller keeps them from being freed), under the subprocess' lock, so none is
   adopted or released. */
static bool mi_abandoned_bins_visit(_Atomic(mi_page_t*)* lists, const mi_heap_t* shown, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    for (mi_page_t* page = mi_atomic_load_relaxed(&lists[bin]); page != NULL; page = page->next) {
      if (heap_tag >= 0 && page->heap_tag != (uint8_t)heap_tag) continue;
      _mi_page_free_collect(page, true);   /* nobody owns the page: safe under the lock */
      if (!_mi_heap_area_visit_blocks(shown, page, visit_blocks, visitor, arg)) return false;
    }
  }
  return true;
}

bool _mi_abandoned_visit(mi_subproc_t* subproc, mi_abandoned_lists_t* (*more)(mi_abandoned_lists_t* prev, void* it), void* it,
                         int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_lock_acquire(&subproc->lock);
  bool ok = mi_abandoned_bins_visit(subproc->abandoned_pages, NULL, heap_tag, visit_blocks, visitor, arg);
  for (mi_abandoned_lists_t* l = (more == NULL ? NULL : more(NULL, it)); l != NULL && ok; l = more(l, it)) {
    if (l->subproc == subproc) ok = mi_abandoned_bins_visit(l->pages, NULL, heap_tag, visit_blocks, visitor, arg);
  }
  mi_lock_release(&subproc->lock);
  return ok;
}

/* The pages of one set of lists (the caller keeps them from being freed), the visitor told of
   `shown`; under their subprocess' lock, like the above. */
bool _mi_abandoned_lists_visit(mi_abandoned_lists_t* lists, const mi_heap_t* shown, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_subproc_t* const subproc = lists->subproc;
  mi_lock_acquire(&subproc->lock);
  const bool ok = mi_abandoned_bins_visit(lists->pages, shown, -1, visit_blocks, visitor, arg);
  mi_lock_release(&subproc->lock);
  return ok;
}

/* Statistics of lists (a shared heap's: stats-v3.c): `fn` gets each page on them with its live
   blocks (an abandoned page's `used` is stale: they are counted in its thread_free word), under
   their subprocess' lock, so none is adopted or released meanwhile (the caller keeps them from
   being freed). Returns the walk's number: walks are numbered in the order they held the lock,
   so of two walks the caller can tell the later. */
size_t _mi_abandoned_lists_pages(mi_abandoned_lists_t* lists, void (*fn)(const mi_page_t* page, size_t live, void* arg), void* arg) {
  mi_subproc_t* const subproc = lists->subproc;
  mi_lock_acquire(&subproc->lock);
  const size_t walk = mi_atomic_add_relaxed(&lists->walks, 1) + 1;
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    for (mi_page_t* page = mi_atomic_load_relaxed(&lists->pages[bin]); page != NULL; page = page->next) {
      fn(page, MI_TF_ABANDONED_BASE - mi_tf_count(mi_atomic_load_relaxed(&page->xthread_free)), arg);
    }
  }
  mi_lock_release(&subproc->lock);
  return walk;
}

/* Under the lock: a page of lists of their own dies with its blocks (a shared heap's
   mi_heap_destroy), as a heap's own pages do in mi_heap_destroy. Returns a segment to release after the lock. */
static mi_segment_t* mi_abandoned_page_destroy(mi_page_t* page) {
  _mi_page_free_collect(page, true);   /* the blocks others freed are not live */
#if MI_TRACK_ENABLED
  _mi_heap_area_visit_blocks(NULL, page, true, &_mi_track_visit_destroyed, page);   /* the tool learns they die */
#endif
  return mi_abandoned_page_release(page);   /* (its live blocks are counted freed there) */
}

/* The end of lists of their own (a shared heap's mi_heap_delete or mi_heap_destroy, and its
   freeing, sheap.c): their pages leave them. Destroyed, each page is freed with its blocks
   (not one that may hold a guarded object: only the free of that block removes its guard
   page); deleted, each page goes to the subprocess' lists, an ordinary abandoned page any heap
   may adopt, whose blocks stay valid. One page per lock hold when pages are freed (each may release its segment). */
void _mi_abandoned_lists_done(mi_abandoned_lists_t* lists, bool destroy) {
  mi_subproc_t* subproc = lists->subproc;
  size_t bin = 0;
  bool freed = false;
  for (;;) {
    mi_segment_t* released = NULL;
    mi_lock_acquire(&subproc->lock);
    while (bin <= MI_BIN_HUGE_INTERNAL && released == NULL) {
      mi_page_t* page = mi_atomic_load_relaxed(&lists->pages[bin]);
      if (page == NULL) { bin++; continue; }
      bool keep = !destroy;
#if MI_GUARDED > 0
      if (mi_page_may_have_guarded(page)) keep = true;
#endif
      if (keep) {
        mi_abandoned_page_unlink(subproc, page);
        mi_abandoned_page_link(subproc, page, NULL);
      }
      else {
        released = mi_abandoned_page_destroy(page);
        freed = true;
        if (released == NULL) continue;
      }
    }
    /* (a heap ending at the same time may list a page in a bin passed already: the owner of
       the lists ends them again once no heap is left to add more, sheap.c) */
    mi_assert_expensive(_mi_observe_check(MI_CHECK_SUBPROC_LOCKED, subproc, NULL));
    mi_lock_release(&subproc->lock);
    if (released == NULL) break;
    _mi_segment_free_released(released);
  }
  if (freed) _mi_segments_purge_notify(subproc);
}
