/* SPDX-License-Identifier: MIT */
/* Freeing: the owner-thread fast path, the cross-thread one (held back in a batch, or one CAS;
   remote.c has the rest), and the slow cases (aligned interior pointers, full pages, empty pages). */
#include "internal/alloc.h"

/* Every build checks that a pointer is in one of our segments before touching it (the segment
   map, which marks only a segment's first 4 MiB: a pointer deep inside a huge block is not
   ours); debug builds also validate the segment's cookie (a header overwritten by a wild
   write). Secure builds check the block itself instead (mi_secure_free_plain): the cookie's
   load of the segment header cost free 5 instructions and a cache line. */
#define MI_CHECK_FREE  (MI_DEBUG > 0)

/* Free by the owning thread into a page that needs attention (full, or empty afterwards, or
   with MI_PAGE_FREE_HOOK: counted by the live view, or holding profiler samples). */
static void mi_free_block_local(mi_page_t* page, mi_block_t* block) {
  mi_live_count_freed(page, 1);
  mi_page_push_owner_free(page, block);
  if (mi_unlikely(--page->used == 0)) {
    _mi_page_retire(page);
  }
  else if (mi_unlikely(mi_page_is_in_full(page))) {
    _mi_page_unfull_freed(page);
  }
}

/* ... into a full page (or one just adopted): in an owner section (heap-idle.c: the purger
   empties full pages of a heap while its owner is out of them). */
static mi_decl_noinline void mi_free_block_local_full(mi_page_t* page, mi_block_t* block) {
  mi_heap_t* const heap = mi_page_heap(page);
  mi_heap_owner_enter_ex(heap, false);   /* (the emptied pages, this one perhaps, are freed below) */
  if (mi_unlikely(mi_tf_is_emptied(mi_atomic_load_acquire(&page->xthread_free)))) {
    /* every block of the page was free when the purger emptied it: this one was freed before */
    _mi_error_message(EAGAIN, "mi_free: double free of %p (its page was given back while its owner slept)\n", (void*)block);
  }
  else {
    mi_free_block_local(page, block);
  }
  mi_heap_owner_leave(heap);
}

/* A free into another thread's page without flags but MI_PAGE_IN_FULL (p is the block), in a
   frame-less function. Release builds hold a small block of a page that is not full back in
   the freeing thread's batch of that page (remote.c): a load, a compare and two stores, no
   atomic; the batch is pushed with one CAS. Other frees push at once with one CAS; the
   delayed-free handshake (the first free into a full page, whose state is MI_USE_DELAYED_FREE)
   and big blocks go to _mi_remote_free_block. Later frees into a full page push directly like
   any other (a pipeline's consumer frees a third of its blocks into its producer's full pages).
   `xtid` is the page's xthread_id: with MI_PAGE_IN_FULL it may be the caller's own full page
   (generic path). */
static mi_decl_noinline void mi_free_remote(mi_block_t* block, mi_page_t* page, mi_segment_t* segment, uintptr_t xtid) {
  if (mi_unlikely((xtid & MI_PAGE_IN_FULL) != 0 || page->block_size > MI_HUGE_RESET_MIN)) {
    if ((xtid & ~MI_PAGE_IN_FULL) == _mi_thread_id()) { _mi_free_generic(block, page, segment); return; }
    if (page->block_size > MI_HUGE_RESET_MIN) { _mi_remote_free_block(block, page, segment); return; }
    goto push;   /* a full page: at once (a sleeping owner's purger counts its frees, heap-idle.c) */
  }
#if MI_REMOTE_BATCH
  /* held back in this thread's batch of the page (remote.c); not by an uninitialised or
     ending thread (the empty heap: no tld) */
  const size_t limit = mi_page_remote_batch(page);
  if (mi_likely(limit != 0)) {
    mi_tld_t* const tld = mi_prim_get_default_heap()->tld;
    if (mi_likely(tld != NULL)) {
      struct mi_remote_batch_s* const b = &tld->remote_batch[mi_remote_batch_slot(page)];
      if (mi_unlikely(b->page != page)) { _mi_remote_batch_start(tld, page, block); return; }
      mi_block_set_next(page, block, b->head);
      b->head = block;
      if (mi_unlikely(++b->count >= limit)) _mi_remote_batch_push(tld, b);
      return;
    }
  }
#endif
push:
  /* (the segment again from the page: keeping `segment` live across the CAS costs a move) */
  if (mi_unlikely(!mi_page_push_remote_chain(page, block, block, 1))) _mi_remote_free_block(block, page, _mi_page_segment(page));
}

/* Secure builds: may the fast paths free p? Yes if p is a block start below the page's capacity
   whose first word does not decode to a link within p's segment or NULL (a live block: secure
   malloc clears the link). Anything else goes to _mi_free_generic and its full check. */
#if MI_SECURE > 0
static inline bool mi_secure_free_plain(const mi_page_t* page, const void* p) {
  /* a block start below the capacity, with a multiplication (a division was a third of free's
     time in sh6bench) */
  if (!mi_page_offset_is_block(page, (uintptr_t)p - (uintptr_t)mi_page_start(page))) return false;
  const mi_block_t* next = mi_block_next(page, (const mi_block_t*)p);
  return (next != NULL && (((uintptr_t)next ^ (uintptr_t)p) >> MI_SEGMENT_SHIFT) != 0);
}
#endif

void _mi_free_generic(void* p, mi_page_t* page, mi_segment_t* segment) {
  if (mi_unlikely(!page->segment_in_use)) {   /* e.g. the sentinel: p is just past the segment */
    _mi_error_message(EINVAL, "mi_free: invalid pointer %p (not in a page in use)\n", p);
    return;
  }
  /* local: the page is this thread's (its owner in xthread_id); an abandoned page (no heap)
     only takes frees on its thread_free list */
  const uintptr_t owner = (mi_atomic_load_relaxed(&page->xthread_id) & ~MI_PAGE_FLAGS_MASK);
#if MI_GUARDED > 0
  if (mi_unlikely(mi_page_may_have_guarded(page)) && _mi_guarded_free(page, p)) return;   /* before any read of the block */
#endif
#if MI_SECURE > 0
  if (!mi_secure_free_plain(page, p) && !_mi_secure_free_check(page, p, owner == _mi_thread_id())) return;
#endif
  mi_block_t* block = (mi_page_has_aligned(page) ? _mi_page_ptr_unalign(page, p) : (mi_block_t*)p);
#if MI_PROF_AVAILABLE
  if (mi_unlikely(mi_page_prof_samples(page) != 0)) {   /* before the block can be handed out again */
    _mi_observe_free(page, block);
    if (owner == _mi_thread_id() && mi_page_prof_samples(page) == 0 && !mi_live_enabled()) {
      mi_page_flag_set(page, MI_PAGE_FREE_HOOK, false);   /* its last sample: frees take the fast path again */
    }
  }
#endif
  if (owner == _mi_thread_id()) {
    if (mi_likely(!mi_page_is_in_full(page))) mi_free_block_local(page, block);
    else mi_free_block_local_full(page, block);
  }
  else if (owner == 0 && _mi_abandoned_reclaim_on_free(page)) {
    /* adopted: the page is ours now (mi_free took the block for a foreign one and did not
       count it: counted here, as for a delayed block) */
    _mi_stat_blocks_freed(page, mi_page_heap(page)->tld, 1);
    mi_free_block_local_full(page, block);
  }
  else _mi_remote_free_block(block, page, segment);
}

/* A block that another thread queued on our heap's delayed list. */
void _mi_free_delayed_block(mi_block_t* block) {
  mi_page_t* page = _mi_ptr_page(block);
  _mi_page_free_collect(page, false);
  _mi_stat_blocks_freed(page, mi_page_heap(page)->tld, 1);   /* not counted by the freeing thread */
  mi_free_block_local(page, block);
}

/* A pointer that is not the start of one of our segments' blocks: NULL, memory from another
   allocator (the loader's, or libc's before we were preloaded), the stack, a global. It is
   left alone: never a crash; an error message (EINVAL) when errors are shown. */
static mi_decl_noinline void mi_free_not_ours(void* p) {
  if (p == NULL || _mi_static_alloc_contains(p)) return;   /* (libc freeing what it got there: static-alloc.c) */
  _mi_error_message(EINVAL, "mi_free: invalid pointer %p (not allocated by this allocator; ignored)\n", p);
}

/* Checked builds also check the cookie: catches interior pointers into huge blocks and
   pointers into a segment that was freed. */
static mi_decl_noinline void mi_free_bad_cookie(const mi_segment_t* segment, const void* p) {
  _mi_error_message(EINVAL, "mi_free: invalid pointer %p (no segment of this allocator at %p)\n", p, (const void*)segment);
}

/* The free fast path (docs/design.md, "Fast paths"): a page owned by this thread and without
   flags (one compare of xthread_id) pushes the block back (mi_page_push_owner_free); everything
   else is one branch to the noinline _mi_free_generic. */
mi_decl_cache_align void mi_free(void* p) mi_attr_noexcept {
#if MI_TRACK_ENABLED
  if (mi_unlikely(!mi_track_free(p))) return;   /* the tool reported it: not a live block */
#endif
  const size_t page_shift = _mi_ptr_page_shift(p);
  if (mi_unlikely(page_shift == 0)) { mi_free_not_ours(p); return; }
  mi_segment_t* const segment = _mi_ptr_segment_unchecked(p);
  if (MI_CHECK_FREE && mi_unlikely(!_mi_segment_cookie_ok(segment))) { mi_free_bad_cookie(segment, p); return; }
  const size_t idx = ((uintptr_t)p - (uintptr_t)segment) >> page_shift;
  mi_page_t* page = (mi_page_t*)((uintptr_t)segment->pages + idx * sizeof(mi_page_t));
  mi_opaque_reg(page);   /* one page register for every access (gcc recomputes it otherwise) */
#if MI_DEBUG > 0 || MI_STAT > 1
  const bool is_local = (_mi_thread_id() == mi_page_owner(page));
  if (!_mi_debug_free(segment, page, p, is_local)) return;
#endif
  const uintptr_t xtid = mi_atomic_load_relaxed(&page->xthread_id);
  if (mi_likely(_mi_thread_id_is(xtid))) {
#if MI_SECURE > 0
    if (mi_unlikely(!mi_secure_free_plain(page, p))) { _mi_free_generic(p, page, segment); return; }
#endif
    mi_page_push_owner_free(page, (mi_block_t*)p);
    if (mi_unlikely(--page->used == 0)) {
      _mi_page_retire(page);
    }
  }
  else if (mi_likely((xtid & MI_PAGE_REMOTE_SLOW) == 0 && xtid > MI_PAGE_IN_FULL)) {   /* an owner, perhaps in full */
#if MI_SECURE > 0
    if (mi_unlikely(!mi_secure_free_plain(page, p))) { _mi_free_generic(p, page, segment); return; }
#endif
    mi_free_remote((mi_block_t*)p, page, segment, xtid);   /* an owner (perhaps this thread: a full page) */
  }
  else {
    _mi_free_generic(p, page, segment);
  }
}

/* Release builds: the bytes from p to the end of its block. Debug builds: the bytes the
   program asked for (anything beyond is an overflow). */
size_t _mi_free_usable_size(const void* p) {
  const mi_segment_t* const segment = _mi_ptr_segment_checked(p);
  if (segment == NULL) return 0;   /* NULL or not ours */
  const mi_page_t* const page = _mi_segment_page_of(segment, p);
  if (MI_PADDING && page->block_size > 0) {
    const mi_block_t* block = (mi_page_has_aligned(page) ? _mi_page_ptr_unalign(page, p) : (const mi_block_t*)p);
    return _mi_debug_requested_size(page, block, p);
  }
  if (mi_likely(!mi_page_has_aligned(page))) return page->block_size;
#if MI_GUARDED > 0
  size_t guarded_size;
  if (mi_page_may_have_guarded(page) && _mi_guarded_usable_size(page, p, &guarded_size)) return guarded_size;
#endif
  const mi_block_t* block = _mi_page_ptr_unalign(page, p);
  return page->block_size - (size_t)((const uint8_t*)p - (const uint8_t*)block);
}

size_t mi_usable_size(const void* p) mi_attr_noexcept {
  return _mi_free_usable_size(p);
}

void mi_ufree(void* p, size_t* block_size) mi_attr_noexcept {
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  mi_free(p);
}

void mi_free_small(void* p) mi_attr_noexcept {
  mi_free(p);
}
