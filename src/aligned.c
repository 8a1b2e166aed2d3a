/* SPDX-License-Identifier: MIT */
/* Aligned allocation. Small alignments are natural (every block >= 16 bytes is 16-byte
   aligned and power-of-two blocks are aligned to their size); moderate ones over-allocate in
   a normal page and hand out an interior pointer (the page is flagged has_aligned so free and
   usable_size find the block start); alignments above MI_ALIGN_OVERALLOC_MAX get a huge
   segment whose block is placed exactly. */
#include "internal/alloc.h"

/* The first pointer at or after block p with (result + offset) % alignment == 0; an interior
   pointer flags its page so free and usable_size find the block start. */
static void* mi_block_align(void* p, size_t size, size_t alignment, size_t offset, bool zero) {
  if (p == NULL) return NULL;
  const uintptr_t mask = alignment - 1;
  const uintptr_t adjust = (alignment - (((uintptr_t)p + offset) & mask)) & mask;
  if (adjust > 0) {
    mi_page_set_has_aligned(_mi_ptr_page(p), true);
  }
  void* aligned = (uint8_t*)p + adjust;
#if MI_PADDING
#if MI_TRACK_ENABLED
  mi_page_t* const page = _mi_ptr_page(p);
  const size_t oversize = _mi_debug_requested_size(page, (mi_block_t*)p, p);   /* as the tool knows it */
#endif
  if (MI_DEBUG > 0 && zero && adjust > 0) {
    /* the allocation marked the slack after p + size; re-zero what of it is now ours (tracking
       builds do not mark the slack) */
    _mi_debug_rezero_slack(p, aligned, size);
  }
  _mi_debug_set_size(aligned, size);   /* the over-allocation is slack, checked on free */
#if MI_TRACK_ENABLED
  _mi_track_block_change(page, (mi_block_t*)p, p, oversize, aligned, size, zero);
#endif
#else
  (void)size; (void)zero;
#endif
  return aligned;
}

static void* mi_heap_malloc_zero_aligned_at_overalloc(mi_heap_t* heap, size_t size, size_t alignment, size_t offset, bool zero) {
  size_t oversize;
  if (mi_unlikely(__builtin_add_overflow(size, alignment - 1, &oversize))) {
    errno = ENOMEM;
    return NULL;
  }
  return mi_block_align(_mi_malloc_zero_unsampled(heap, oversize, zero), size, alignment, offset, zero);
}

void* _mi_aligned_malloc_zero_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset, bool zero) {
  if (mi_unlikely(mi_heap_is_shared(heap)) && (heap = _mi_sheap_theap(heap, true)) == NULL) { errno = ENOMEM; return NULL; }   /* (sheap.c) */
  if (mi_heap_is_foreign(heap, "aligned allocation")) { errno = ENOMEM; return NULL; }   /* debug builds */
  if (mi_unlikely(alignment == 0 || !mi_is_power_of_two(alignment))) {
    _mi_error_message(EINVAL, "aligned allocation requires a power-of-two alignment (size %zu, alignment %zu)\n", size, alignment);
    errno = ENOMEM;   /* every failing allocation sets ENOMEM, whatever the cause (mimalloc.h) */
    return NULL;
  }
  if (mi_unlikely(size > MI_MAX_ALLOC_SIZE)) {
    _mi_error_message(EOVERFLOW, "aligned allocation request is too large (size %zu, alignment %zu)\n", size, alignment);
    errno = ENOMEM;
    return NULL;
  }
  const uintptr_t mask = alignment - 1;
  if (offset == 0 && alignment <= MI_MAX_ALIGN_SIZE) {
    /* blocks of at least `alignment` bytes are naturally aligned; with padding (debug) every
       block is at least 16 bytes, so the exact size keeps the overflow check exact */
    return _mi_malloc_zero_unsampled(heap, (size < alignment && !MI_PADDING ? alignment : size), zero);
  }
  /* try the next free block of the direct page */
  if (size <= MI_SMALL_SIZE_MAX - MI_PADDING_SIZE) {
    mi_page_t* page = heap->pages_free_direct[_mi_wsize_from_size(size + MI_PADDING_SIZE)];
    if (page->free != NULL && (((uintptr_t)page->free + offset) & mask) == 0) {
      return _mi_page_malloc(heap, page, size, zero);
    }
  }
  if (alignment > MI_ALIGN_OVERALLOC_MAX) {
    if (!_mi_segment_huge_align_ok(alignment, offset)) {
      _mi_error_message(EINVAL, "cannot place %zu bytes at alignment %zu with offset %zu (the offset lies just below a multiple of %zu bytes)\n",
                        size, alignment, offset, MI_SEGMENT_SIZE);
      errno = ENOMEM;   /* every failing allocation sets ENOMEM, whatever the cause (mimalloc.h) */
      return NULL;
    }
    return mi_block_align(_mi_malloc_generic((size == 0 ? 1 : size), heap, zero, alignment, offset), size, alignment, offset, zero);
  }
  return mi_heap_malloc_zero_aligned_at_overalloc(heap, size, alignment, offset, zero);
}

/* ---------------------------------------------------------------------------------------
   Public aligned allocation
--------------------------------------------------------------------------------------- */
void* mi_heap_malloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return _mi_aligned_malloc_zero_at(heap, size, alignment, offset, false);
}
void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size, size_t alignment) mi_attr_noexcept {
  return _mi_aligned_malloc_zero_at(heap, size, alignment, 0, false);
}
void* mi_heap_zalloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return _mi_aligned_malloc_zero_at(heap, size, alignment, offset, true);
}
void* mi_heap_zalloc_aligned(mi_heap_t* heap, size_t size, size_t alignment) mi_attr_noexcept {
  return _mi_aligned_malloc_zero_at(heap, size, alignment, 0, true);
}
void* mi_heap_calloc_aligned_at(mi_heap_t* heap, size_t count, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return _mi_aligned_malloc_zero_at(heap, total, alignment, offset, true);
}
void* mi_heap_calloc_aligned(mi_heap_t* heap, size_t count, size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_calloc_aligned_at(heap, count, size, alignment, 0);
}

void* mi_malloc_aligned_at(size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_malloc_aligned_at(mi_prim_get_default_heap(), size, alignment, offset);
}
void* mi_malloc_aligned(size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_malloc_aligned(mi_prim_get_default_heap(), size, alignment);
}
void* mi_umalloc_aligned(size_t size, size_t alignment, size_t* block_size) mi_attr_noexcept {
  void* p = mi_malloc_aligned(size, alignment);
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  return p;
}
void* mi_zalloc_aligned_at(size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_zalloc_aligned_at(mi_prim_get_default_heap(), size, alignment, offset);
}
void* mi_zalloc_aligned(size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_zalloc_aligned(mi_prim_get_default_heap(), size, alignment);
}
void* mi_uzalloc_aligned(size_t size, size_t alignment, size_t* block_size) mi_attr_noexcept {
  void* p = mi_zalloc_aligned(size, alignment);
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  return p;
}
void* mi_calloc_aligned_at(size_t count, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_calloc_aligned_at(mi_prim_get_default_heap(), count, size, alignment, offset);
}
void* mi_calloc_aligned(size_t count, size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_calloc_aligned(mi_prim_get_default_heap(), count, size, alignment);
}

/* ---------------------------------------------------------------------------------------
   Aligned reallocation
--------------------------------------------------------------------------------------- */
static void* mi_heap_realloc_zero_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset, bool zero) {
  if (alignment <= sizeof(uintptr_t) && offset == 0) {
    return _mi_realloc_zero(heap, p, newsize, zero, NULL, NULL);
  }
  if (p == NULL) {
    return _mi_aligned_malloc_zero_at(heap, newsize, alignment, offset, zero);
  }
  const size_t size = _mi_free_usable_size(p);
  if (alignment != 0 && mi_is_power_of_two(alignment) && newsize <= size && newsize >= (size - (size / 2)) &&
      (((uintptr_t)p + offset) & (alignment - 1)) == 0) {
    if (zero) memset((uint8_t*)p + newsize, 0, size - newsize);   /* see _mi_realloc_zero */
#if MI_TRACK_ENABLED
    _mi_track_realloc_in_place(p, size, newsize, false);
#endif
#if MI_PADDING
    _mi_debug_set_size(p, newsize);   /* overflow checks start at the new size */
#endif
    return p;   /* still fits and is still aligned */
  }
  void* newp = _mi_aligned_malloc_zero_at(heap, newsize, alignment, offset, false);
  if (newp == NULL) return NULL;
  _mi_realloc_copy(newp, p, size, newsize, zero);
  mi_free(p);
  return newp;
}

void* mi_heap_realloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_realloc_zero_aligned_at(heap, p, newsize, alignment, offset, false);
}
void* mi_heap_realloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment) mi_attr_noexcept {
  return mi_heap_realloc_zero_aligned_at(heap, p, newsize, alignment, 0, false);
}
void* mi_heap_rezalloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_realloc_zero_aligned_at(heap, p, newsize, alignment, offset, true);
}
void* mi_heap_rezalloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment) mi_attr_noexcept {
  return mi_heap_realloc_zero_aligned_at(heap, p, newsize, alignment, 0, true);
}
void* mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(newcount, size, &total)) return NULL;
  return mi_heap_rezalloc_aligned_at(heap, p, total, alignment, offset);
}
void* mi_heap_recalloc_aligned(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_recalloc_aligned_at(heap, p, newcount, size, alignment, 0);
}

void* mi_realloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_realloc_aligned_at(mi_prim_get_default_heap(), p, newsize, alignment, offset);
}
void* mi_realloc_aligned(void* p, size_t newsize, size_t alignment) mi_attr_noexcept {
  return mi_heap_realloc_aligned(mi_prim_get_default_heap(), p, newsize, alignment);
}
void* mi_rezalloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_rezalloc_aligned_at(mi_prim_get_default_heap(), p, newsize, alignment, offset);
}
void* mi_rezalloc_aligned(void* p, size_t newsize, size_t alignment) mi_attr_noexcept {
  return mi_heap_rezalloc_aligned(mi_prim_get_default_heap(), p, newsize, alignment);
}
void* mi_recalloc_aligned_at(void* p, size_t newcount, size_t size, size_t alignment, size_t offset) mi_attr_noexcept {
  return mi_heap_recalloc_aligned_at(mi_prim_get_default_heap(), p, newcount, size, alignment, offset);
}
void* mi_recalloc_aligned(void* p, size_t newcount, size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_recalloc_aligned(mi_prim_get_default_heap(), p, newcount, size, alignment);
}
