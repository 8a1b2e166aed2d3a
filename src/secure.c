/* SPDX-License-Identifier: MIT */
/* The heap-corruption checks of checked builds (secure and debug): a freed pointer must be the
   start of a block handed out of a page in use; a block already on one of its page's free lists
   is a double free; a free-list link that does not lead to a block of its page is corruption.
   Secure builds (MI_SECURE > 0) also draw the keys of the encoded links (page.h) here, and
   run these checks without the debug build's fill patterns: a freed block's first word is an
   encoded link, which no live block holds (secure malloc clears it), so only a pointer whose
   first word decodes to a plausible link is searched for on the lists. */
#include "internal/page.h"
#include "internal/alloc.h"   /* hook: _mi_malloc_generic */

/* A free-list link of the page leads outside its blocks (EFAULT: aborts in checked builds unless
   an error handler is registered). */
mi_decl_noinline void _mi_secure_page_link_report(const mi_page_t* page, const mi_block_t* block, const mi_block_t* next) {
  _mi_error_message(EFAULT, "corrupted free list: free block %p (size %zu) links to %p, not a block of its page (written after it was freed?)\n",
                    (const void*)block, page->block_size, (const void*)next);
}

#if MI_SECURE > 0 || MI_DEBUG > 0

/* A link of one of the page's lists leads outside the page: the block holding it was written
   after its free. Report and drop the page's lists: their blocks are lost, never handed out;
   `used` becomes an over-count so the page is never taken for empty. */
mi_decl_noinline void _mi_secure_page_list_corrupt(mi_page_t* page, const mi_block_t* block, const mi_block_t* next) {
  _mi_secure_page_link_report(page, block, next);
  page->free = NULL;
  page->local_free = NULL;
  page->used += page->capacity;
}

/* Is block on this list? Follows only valid links, at most capacity of them (a list that is
   being changed by its owner while another thread looks ends at the first link that does not
   lead to a block of the page). */
bool _mi_secure_list_contains(const mi_page_t* page, const mi_block_t* list, const mi_block_t* block) {
  const size_t capacity = mi_page_capacity_any(page);   /* also from non-owner threads */
  size_t steps = 0;
  while (list != NULL && steps++ <= capacity) {
    if (list == block) return true;
    const mi_block_t* next = mi_block_next(page, list);
    if (!mi_page_block_below(page, next, capacity)) return false;
    list = next;
  }
  return false;
}

/* The block that p frees, or NULL (reported, EINVAL) when p is not the start of a block that
   was handed out of the page (an aligned block may be freed through any pointer into it). */
mi_block_t* _mi_secure_checked_free_block(mi_page_t* page, void* p) {
  const size_t bsize = page->block_size;
  const uint8_t* start = mi_page_start(page);
  if ((uint8_t*)p < start) {
    _mi_error_message(EINVAL, "mi_free: invalid pointer %p (inside the metadata of a page of block size %zu; ignored)\n", p, bsize);
    return NULL;
  }
  const size_t diff = (size_t)((uint8_t*)p - start);
  if (!mi_page_has_aligned(page) && diff % bsize != 0) {
    _mi_error_message(EINVAL, "mi_free: invalid pointer %p (points inside block %p of size %zu, not at its start; ignored)\n",
                      p, (void*)(start + (diff / bsize) * bsize), bsize);
    return NULL;
  }
  if (diff / bsize >= mi_page_capacity_any(page)) {   /* the freeing thread need not own the page */
    _mi_error_message(EINVAL, "mi_free: invalid pointer %p (never allocated; ignored)\n", p);
    return NULL;
  }
  return (mi_block_t*)(start + (diff / bsize) * bsize);
}
#endif

#if MI_SECURE > 0
/* The rotation (keys[1] & 63, page.h) is drawn from [16, 32]: decoding then moves the link's low
   16 bits, those an overflow of 1 or 2 bytes from the block below changes, to bits 32-63. A
   changed link so decodes at least 4 GiB away from its page and is always rejected; with any
   rotation, a 1-byte change could decode to another block of the page (1 in ~180 in the
   secure-overflow-1 test). */
void _mi_secure_page_init_keys(mi_page_t* page) {
  page->keys[0] = _mi_random_next();
  const uintptr_t k = _mi_random_next();
  page->keys[1] = (k & ~(uintptr_t)63) | (16 + (k >> 6) % 17);
}

mi_decl_noinline void* _mi_secure_page_malloc_corrupt(mi_heap_t* heap, mi_page_t* page, const mi_block_t* block, const mi_block_t* next, size_t size, bool zero) {
  _mi_secure_page_list_corrupt(page, block, next);
  return _mi_malloc_generic(size, heap, zero, 0, 0);
}

/* Read another thread's list head: the search below is a heuristic (see _mi_secure_list_contains). */
static mi_block_t* mi_list_peek(mi_block_t* const* head) {
  return mi_atomic_load_relaxed((_Atomic(mi_block_t*) const*)head);
}

/* The full check of a free in secure builds (from _mi_free_generic, where the fast paths of
   free send anything mi_secure_free_plain does not pass): false (reported) for an invalid
   pointer or a block that is free already. */
mi_decl_noinline bool _mi_secure_free_check(mi_page_t* page, void* p, bool is_local) {
  if (!page->segment_in_use || page->block_size == 0) return true;   /* _mi_free_generic reports it */
  mi_block_t* block = _mi_secure_checked_free_block(page, p);
  if (block == NULL) return false;
  const mi_block_t* next = mi_block_next(page, block);
  if (!mi_page_block_valid(page, next)) return true;   /* user data, not a link of this page */
  const bool found = _mi_secure_list_contains(page, mi_page_thread_free_acquire(page), block) ||
                     _mi_secure_list_contains(page, mi_list_peek(&page->free), block) ||
                     _mi_secure_list_contains(page, mi_list_peek(&page->local_free), block);
  if (found || (is_local && page->used == 0)) {
    _mi_error_message(EAGAIN, "double free detected of block %p with size %zu (ignored)\n", p, page->block_size);
    return false;
  }
  return true;
}
#endif
