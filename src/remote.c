/* SPDX-License-Identifier: MIT */
/* Cross-thread frees: the push on another thread's page (one CAS, the delayed-free handshake,
   the abandoned form's last block), and the batches in which release builds hold such frees
   back to push several blocks of a page with one CAS (free.c's mi_free_remote adds to them). */
#include "internal/heap.h"
#include "prim/prim.h"

/* Free by another thread: one CAS on the page's thread_free list, or, the first time a block
   is freed into a full page, a push on the owning heap's delayed list so the owner learns the
   page has space again (see mi_delayed_t). Into an abandoned page (abandoned form,
   page.h) the push needs no handshake; the page's last live block is pushed under the
   subprocess' lock, which releases the page (abandon.c): memory of ended threads comes back as
   soon as its blocks are freed, whoever frees them. */
void _mi_remote_free_block(mi_block_t* block, mi_page_t* page, mi_segment_t* segment) {
  if (segment->page_kind == MI_PAGE_HUGE && page->block_size > MI_HUGE_RESET_MIN &&
      !segment->memid.is_pinned && mi_option_get(mi_option_purge_delay) >= 0) {
    /* the owner releases the segment later; give the memory back now */
    _mi_os_discard((uint8_t*)block + _mi_os_page_size(), page->block_size - _mi_os_page_size());
  }
  uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  uintptr_t tfreex;
  bool use_delayed;
  for (;;) {
    if (mi_unlikely(mi_tf_is_abandoned(tfree))) {
      if (mi_tf_count(tfree) + 1 >= MI_TF_ABANDONED_BASE) {   /* the last live block */
        mi_sched_point(MI_SCHED_FREE_LAST);   /* before the lock: an adopter may own the page meanwhile */
        if (_mi_abandoned_free_last(segment, page, block)) return;
        tfree = mi_atomic_load_relaxed(&page->xthread_free);   /* owned again */
        continue;
      }
      use_delayed = false;
      mi_block_set_next(page, block, mi_tf_block(tfree));
      tfreex = mi_tf_push(tfree, block);
    }
    else {
      use_delayed = (mi_tf_delayed(tfree) == MI_USE_DELAYED_FREE);
      if (mi_unlikely(use_delayed)) {
        tfreex = mi_tf_set_delayed(tfree, MI_DELAYED_FREEING);
      }
      else {
        mi_block_set_next(page, block, mi_tf_block(tfree));
        tfreex = mi_tf_push(tfree, block);
      }
    }
    if (mi_atomic_cas_weak_acq_rel(&page->xthread_free, &tfree, tfreex)) break;
  }

  if (mi_unlikely(use_delayed)) {
    mi_sched_point(MI_SCHED_FREE_DELAYED);   /* the owner waits (yielding) for the end of MI_DELAYED_FREEING */
    /* the owner cannot change xheap while we are MI_DELAYED_FREEING */
    mi_heap_t* heap = mi_atomic_load_acquire(&page->xheap);
    if (heap != NULL) {
      mi_block_t* dfree = mi_atomic_load_relaxed(&heap->thread_delayed_free);
      do {
        mi_block_set_next(page, block, dfree);
      } while (!mi_atomic_cas_weak_release(&heap->thread_delayed_free, &dfree, block));
      /* the owner may sleep: the purger looks (heap-idle.c) */
      if (mi_atomic_load_relaxed(&_mi_heap_idle_notified) == 0) _mi_heap_idle_notify_slow();
    }
    tfree = mi_atomic_load_relaxed(&page->xthread_free);
    do {
      tfreex = tfree;
      if (heap == NULL) {   /* cannot happen by the protocol; keep the block anyway */
        mi_block_set_next(page, block, mi_tf_block(tfree));
        tfreex = mi_tf_push(tfree, block);
      }
      tfreex = mi_tf_set_delayed(tfreex, MI_NO_DELAYED_FREE);
    } while (!mi_atomic_cas_weak_release(&page->xthread_free, &tfree, tfreex));
  }
}

#if MI_REMOTE_BATCH
/* Batches (types.h, mi_tld_t.remote_batch). A free into another thread's page costs a locked
   CAS, which also waits for the freeing thread's earlier stores to drain: in two threads handing
   each other blocks it was 42% of the run. A batch links up to page->remote_batch blocks of one
   page (at most MI_REMOTE_BATCH_BYTES) and pushes them with one CAS.
   Invariants:
   - a held block counts as used in its page, so the page is not freed while a batch holds it
     (its owner's retire, the purger's emptying of full pages and the abandoned form's last
     block all wait for `used` or the count to reach the page's blocks);
   - only pages set up in a heap that cannot be destroyed batch (remote_batch != 0), and a
     destroyable heap never adopts another heap's page (abandon.c; heap.c's _mi_heap_by_tag):
     mi_heap_destroy, which frees its pages wholesale, never frees a page a batch points into;
   - the freeing thread pushes what it holds: when a batch is full, when another page takes its
     slot, every 16th allocation slow path, at mi_collect / mi_heap_collect, and at thread exit
     (before its heaps go, and once more before its data is freed). A thread that frees and then
     sleeps holds at most MI_REMOTE_BATCH_SLOTS batches. */

/* Push a batch (the slot is emptied first: a free from inside the push finds it empty). */
mi_decl_noinline void _mi_remote_batch_push(mi_tld_t* tld, struct mi_remote_batch_s* b) {
  mi_page_t* const page = b->page;
  mi_block_t* block = b->head;
  mi_block_t* const tail = b->tail;
  const size_t count = b->count;
  b->page = NULL;
  tld->remote_batch_used--;
  mi_sched_point(MI_SCHED_REMOTE_PUSH);
  if (mi_likely(mi_page_push_remote_chain(page, block, tail, count))) return;
  /* the handshake of a full page, or the abandoned form: one block at a time */
  mi_segment_t* const segment = _mi_page_segment(page);
  for (size_t i = 0; i < count; i++) {
    mi_block_t* const next = mi_block_next(page, block);   /* (before the push relinks it) */
    _mi_remote_free_block(block, page, segment);
    block = next;
  }
}

/* A free into a page that holds no batch here: the slot's batch (of another page) is pushed,
   and a new one starts with the block. */
void _mi_remote_batch_start(mi_tld_t* tld, mi_page_t* page, mi_block_t* block) {
  struct mi_remote_batch_s* const b = &tld->remote_batch[mi_remote_batch_slot(page)];
  while (b->page != NULL) _mi_remote_batch_push(tld, b);
  b->page = page;
  b->head = block;
  b->tail = block;
  b->count = 1;
  tld->remote_batch_used++;
}

void _mi_remote_flush(mi_tld_t* tld) {
  if (tld == NULL || tld->remote_batch_used == 0) return;
  for (size_t i = 0; i < MI_REMOTE_BATCH_SLOTS; i++) {
    if (tld->remote_batch[i].page != NULL) _mi_remote_batch_push(tld, &tld->remote_batch[i]);
  }
}
#else
void _mi_remote_flush(mi_tld_t* tld) { (void)tld; }
#endif
