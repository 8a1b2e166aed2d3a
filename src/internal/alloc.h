/* SPDX-License-Identifier: MIT */
/* Layer 7 (docs/design.md, "Layers"): allocation and free (alloc.c, free.c), aligned allocation
   (aligned.c), guarded objects (guarded.c), and the allocation fast path, inline. */
#pragma once
#include "sheap.h"

/* ------------------------------------------------------------------------------------------
   alloc.c / free.c / aligned.c
------------------------------------------------------------------------------------------ */
void*      _mi_malloc_generic(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) mi_decl_noinline;
void*      _mi_malloc_zero(mi_heap_t* heap, size_t size, bool zero);                 /* may sample (guarded.c) */
void*      _mi_malloc_zero_unsampled(mi_heap_t* heap, size_t size, bool zero);        /* never a guarded object */
void*      _mi_realloc_zero(mi_heap_t* heap, void* p, size_t newsize, bool zero, size_t* usable_pre, size_t* usable_post);
void*      _mi_aligned_malloc_zero_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset, bool zero);
void       _mi_free_delayed_block(mi_block_t* block);
void       _mi_free_generic(void* p, mi_page_t* page, mi_segment_t* segment) mi_decl_noinline;
size_t     _mi_free_usable_size(const void* p);

/* ------------------------------------------------------------------------------------------
   guarded.c (MI_GUARDED builds): sampled objects placed against a guard page
------------------------------------------------------------------------------------------ */
#if MI_GUARDED > 0
void       _mi_guarded_heap_init(mi_heap_t* heap);   /* sampling from the options */
void*      _mi_guarded_malloc_sampled(mi_heap_t* heap, size_t size, bool zero) mi_decl_noinline;
/* free of p in a page with guarded blocks: true if p was a guarded object's (freed, or
   reported as a double or interior free); false: not one, free it as usual */
bool       _mi_guarded_free(mi_page_t* page, void* p) mi_decl_noinline;
/* usable size of p if it is a guarded object */
bool       _mi_guarded_usable_size(const mi_page_t* page, const void* p, size_t* size);
void       _mi_guarded_quarantine_flush(void);   /* release every quarantined object now */
#endif
void       _mi_alloc_block_zero_init(const mi_page_t* page, void* p);
/* Move a block's contents to newp after a reallocation; with `zero`, newp's tail is zeroed. */
void       _mi_realloc_copy(void* newp, const void* p, size_t size, size_t newsize, bool zero);

/* ------------------------------------------------------------------------------------------
   The allocation fast path (docs/design.md, "Fast paths"): pop the page's free list, bump
   `used`. Anything else (empty free list, uninitialised thread, zeroing of fresh pages) goes to
   the noinline _mi_malloc_generic.
------------------------------------------------------------------------------------------ */
/* always inlined: with the guarded builds' second copy of the malloc body (alloc.c) gcc
   otherwise makes this a call from malloc (secure malloc 16 B: 29 -> 44 instructions) */
/* The fast paths are written once, parameterised by the slow path they call on a miss (and the
   small one by the direct table it reads): the ordinary entry points pass _mi_malloc_generic and
   heap->pages_free_direct, the profiler's counted entry points (prof-entry.c) their own. Both are
   compile-time constants where the fast paths are inlined, so each copy is as if written out. */
typedef void* mi_malloc_slow_fun(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset);

static mi_decl_always_inline void* mi_page_malloc_or(mi_heap_t* heap, mi_page_t* page, size_t size, bool zero, mi_malloc_slow_fun* slow) {
  mi_block_t* const block = page->free;
  if (mi_unlikely(block == NULL)) {
    return slow(size, heap, zero, 0, 0);
  }
#if MI_DEBUG > 0
  if (mi_unlikely(!_mi_debug_malloc_check(page, block))) {
    return _mi_malloc_generic(size, heap, zero, 0, 0);
  }
#endif
  mi_block_t* const next = mi_block_next(page, block);
#if MI_SECURE > 0
  if (mi_unlikely(!mi_page_link_ok(page, next))) {
    return _mi_secure_page_malloc_corrupt(heap, page, block, next, size, zero);   /* a tail call: no frame here */
  }
  block->next = NULL;   /* a live block holds no link: a later free of it is not mistaken for a double free */
#endif
  page->free = next;
#if defined(__GNUC__)
  /* the next malloc reads next->next: blocks freed by other threads or long ago are cold, and
     that load was 77% of malloc's samples in sh8bench. One instruction (malloc 16 B: 15.4 ->
     16.4): sh8bench -7%, mstress -4%, bench-st with 100K live blocks -4%, 4K live +1% (noise),
     single-threaded workloads unchanged (medians of 5-11 interleaved runs). */
  __builtin_prefetch(next, 1);
#endif
  page->used++;
#if MI_TRACK_ENABLED
  mi_track_mem_undefined(block, page->block_size);   /* for the writes below */
#endif
  if (mi_unlikely(zero)) {
    _mi_alloc_block_zero_init(page, block);
  }
#if MI_PADDING || MI_STAT > 1
  _mi_debug_block_malloc(heap, page, block, size, zero);
#endif
#if MI_TRACK_ENABLED
  _mi_track_block_alloc(page, block, size, zero);
#endif
  return block;
}

static mi_decl_always_inline void* _mi_page_malloc(mi_heap_t* heap, mi_page_t* page, size_t size, bool zero) {
  return mi_page_malloc_or(heap, page, size, zero, &_mi_malloc_generic);
}

/* size <= MI_SMALL_SIZE_MAX - MI_PADDING_SIZE; `direct`: the heap's table of first pages by
   word size (pages_free_direct, or the profiler's table of the real ones) */
static mi_decl_always_inline void* mi_heap_malloc_small_from(mi_heap_t* heap, mi_page_t* const* direct, size_t size, bool zero, mi_malloc_slow_fun* slow) {
  mi_assert(size <= MI_SMALL_SIZE_MAX);
  if (MI_PADDING_SIZE > 0 && mi_unlikely(size > MI_SMALL_SIZE_MAX - MI_PADDING_SIZE)) {
    return slow(size, heap, zero, 0, 0);
  }
  mi_page_t* page = direct[_mi_wsize_from_size(size + MI_PADDING_SIZE)];
  return mi_page_malloc_or(heap, page, size, zero, slow);
}

static inline void* mi_heap_malloc_small_zero(mi_heap_t* heap, size_t size, bool zero) {
  return mi_heap_malloc_small_from(heap, heap->pages_free_direct, size, zero, &_mi_malloc_generic);
}

/* Medium sizes: a free block of the bin's first page, before the slow path (which would take
   the same block after its bookkeeping); `real_first`: read the bin's queue (the profiler's
   counted entry points) instead of pages_medium_direct (which then holds its proxies). An
   uninitialised heap has no pages. */
static mi_decl_always_inline void* mi_heap_malloc_medium_from(mi_heap_t* heap, bool real_first, size_t size, bool zero, mi_malloc_slow_fun* slow) {
  if (mi_likely(size <= MI_MEDIUM_OBJ_SIZE_MAX - MI_PADDING_SIZE)) {
    const size_t bin = _mi_bin(size + MI_PADDING_SIZE);
    mi_page_t* const page = (real_first ? heap->pages[bin].first : heap->pages_medium_direct[bin]);
    if (mi_likely(page != NULL && page->free != NULL)) return mi_page_malloc_or(heap, page, size, zero, slow);
  }
  return slow(size, heap, zero, 0, 0);
}
