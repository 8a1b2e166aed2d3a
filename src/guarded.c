/* SPDX-License-Identifier: MIT */
/* Sampled guarded objects (MI_GUARDED builds: the secure build). One in `guarded_sample_rate`
   eligible allocations of a heap is placed at the end of its own OS pages, right before a guard
   page, so the first byte written (or read) past its end faults. Freed, it becomes a guard as a
   whole and waits in a small quarantine, so a use after free of it faults too, until later frees
   push it out.

   Layout: a normal block of the heap, aligned to the OS page, of `total` bytes:
       block: header (magic, total, user offset) ... object ... | guard page |
   The object ends at the guard (guarded_precise) or at most 15 bytes before it (16-byte
   aligned). Its page is flagged has_aligned, so every free of it leaves the fast path for
   _mi_free_generic, which asks _mi_guarded_free first (aligned pages of blocks of 8 KiB or
   more: mi_page_may_have_guarded); the header's magic, keyed with the page's keys, tells a
   guarded object from another aligned block (whose page-aligned point is inside it, as its
   block is at least a page long).
   Aligned allocations are never sampled (the object is only 16-byte aligned). */
#include "internal/alloc.h"

#if MI_GUARDED > 0

typedef struct mi_guarded_header_s {
  uintptr_t magic;         /* mi_guarded_magic(page, block) while the object is live */
  size_t    total;         /* bytes of the block in use, the guard page included */
  size_t    user_offset;   /* the object starts at block + user_offset */
  size_t    reserved_;
} mi_guarded_header_t;

static uintptr_t mi_guarded_magic(const mi_page_t* page, const uint8_t* block) {
  return ((uintptr_t)block ^ page->keys[1]) + page->keys[0];
}

/* The page-aligned start of a guarded object's block, for any pointer into that block. */
static uint8_t* mi_guarded_block(const mi_page_t* page, const void* p) {
  return (uint8_t*)_mi_align_up((uintptr_t)_mi_page_ptr_unalign(page, p), MI_SECURE_GUARD_SIZE);
}

/* [p, p+size) inside the guarded object's block (whose start maps to its segment: a pointer
   deep in a huge block does not) becomes a guard, or normal memory again */
static bool mi_guarded_set(const uint8_t* block, uint8_t* p, size_t size, bool install) {
  const mi_segment_t* segment = _mi_ptr_segment_unchecked(block);
  if (segment->memid.is_pinned) return false;
  return _mi_os_guard(p, size, install, !segment->memid.commit_syscall);
}

/* ---- the quarantine of freed objects: their blocks, guarded whole ----
   Each entry is block | pages (pages < the OS page size; larger objects skip the quarantine).
   Lock-free: a free exchanges its entry into the next slot and releases what it pushed out; a
   lookup (double free) reads the slots. Racing with a release, a lookup can miss (the second
   free then finds no guarded header and goes to the usual checks of the block). */
#define MI_GUARDED_QUARANTINE  (32)
static _Atomic(uintptr_t) mi_guarded_quarantine[MI_GUARDED_QUARANTINE];
static _Atomic(size_t)    mi_guarded_quarantine_next;

static bool mi_guarded_quarantined(const uint8_t* block) {
  const uintptr_t mask = ~(uintptr_t)(MI_SECURE_GUARD_SIZE - 1);
  for (size_t i = 0; i < MI_GUARDED_QUARANTINE; i++) {
    if ((mi_atomic_load_relaxed(&mi_guarded_quarantine[i]) & mask) == (uintptr_t)block) return true;
  }
  return false;
}

/* The object's memory becomes normal again and its block is freed as any other. If the OS
   refuses to lift the guard, the block stays allocated for good: handed out again it would
   fault (and so would the write of its header below). */
static void mi_guarded_release(uint8_t* block, size_t total) {
  if (!mi_guarded_set(block, block, total, false)) {
    _mi_warning_message("unable to remove the guard of a freed guarded object (block %p, %zu bytes kept out of use)\n", (void*)block, total);
    return;
  }
  ((mi_guarded_header_t*)block)->magic = 0;   /* (mprotect keeps contents, markers do not) */
  mi_free(block);
}
/* ... for a quarantine entry taken out of its slot (0: an empty slot) */
static void mi_guarded_release_entry(uintptr_t entry) {
  const uintptr_t ps = MI_SECURE_GUARD_SIZE;
  if (entry != 0) mi_guarded_release((uint8_t*)(entry & ~(ps - 1)), (entry & (ps - 1)) * ps);
}

void _mi_guarded_quarantine_flush(void) {
  for (size_t i = 0; i < MI_GUARDED_QUARANTINE; i++) {
    if (mi_atomic_load_relaxed(&mi_guarded_quarantine[i]) == 0) continue;
    mi_guarded_release_entry(mi_atomic_exchange_acq_rel(&mi_guarded_quarantine[i], (uintptr_t)0));
  }
}

bool _mi_guarded_free(mi_page_t* page, void* p) {
  uint8_t* block = mi_guarded_block(page, p);
  if (mi_guarded_quarantined(block)) {
    _mi_error_message(EAGAIN, "double free detected of guarded object %p (ignored)\n", p);
    return true;
  }
  mi_guarded_header_t* h = (mi_guarded_header_t*)block;
  if (h->magic != mi_guarded_magic(page, block)) return false;   /* another aligned block */
  if ((uint8_t*)p != block + h->user_offset) {
    _mi_error_message(EINVAL, "mi_free: invalid pointer %p (inside guarded object %p; ignored)\n", p, (void*)(block + h->user_offset));
    return true;
  }
  const size_t total = h->total;
  const size_t ps = MI_SECURE_GUARD_SIZE;
  h->magic = 0;
  if (total / ps < ps && mi_guarded_set(block, block, total - ps, true)) {
    const size_t slot = mi_atomic_add_relaxed(&mi_guarded_quarantine_next, (size_t)1) % MI_GUARDED_QUARANTINE;
    mi_guarded_release_entry(mi_atomic_exchange_acq_rel(&mi_guarded_quarantine[slot], (uintptr_t)block | (total / ps)));
  }
  else {
    mi_guarded_release(block, total);
  }
  return true;
}

bool _mi_guarded_usable_size(const mi_page_t* page, const void* p, size_t* size) {
  const uint8_t* block = mi_guarded_block(page, p);
  const mi_guarded_header_t* h = (const mi_guarded_header_t*)block;
  if (h->magic != mi_guarded_magic(page, block)) return false;
  const uint8_t* end = block + h->total - MI_SECURE_GUARD_SIZE;
  if ((const uint8_t*)p < block + sizeof(*h) || (const uint8_t*)p > end) return false;
  *size = (size_t)(end - (const uint8_t*)p);
  return true;
}

/* A guarded object of `size` bytes, or NULL (the caller allocates it unguarded). */
static void* mi_guarded_malloc(mi_heap_t* heap, size_t size, bool zero) {
  const size_t ps = MI_SECURE_GUARD_SIZE;
  if (size > MI_MAX_ALLOC_SIZE / 2 || _mi_os_page_size() != ps) return NULL;
  const size_t total = _mi_align_up(sizeof(mi_guarded_header_t) + size, ps) + ps;
  uint8_t* block = (uint8_t*)_mi_aligned_malloc_zero_at(heap, total, ps, 0, zero);
  if (block == NULL) return NULL;
  mi_guarded_header_t* h = (mi_guarded_header_t*)block;
  h->magic = 0;
  if (!mi_guarded_set(block, block + total - ps, ps, true)) {
    mi_free(block);
    return NULL;
  }
  mi_page_t* page = _mi_ptr_page(block);
  mi_page_set_has_aligned(page, true);   /* every free of it to _mi_free_generic */
  heap->guarded_used = true;
  uint8_t* p = block + total - ps - (size == 0 ? 1 : size);   /* malloc(0): a unique pointer with usable bytes */
  if (!mi_option_is_enabled(mi_option_guarded_precise)) p = (uint8_t*)_mi_align_down((uintptr_t)p, MI_MAX_ALIGN_SIZE);
  h->total = total;
  h->user_offset = (size_t)(p - block);
  h->magic = mi_guarded_magic(page, block);
  mi_os_stat_counter_increase(malloc_guarded_count, 1);
  return p;
}

void* _mi_guarded_malloc_sampled(mi_heap_t* heap, size_t size, bool zero) {
  if (mi_heap_is_initialized(heap)) {
    if (heap->guarded_sample_rate == 0) {
      heap->guarded_sample_count = SIZE_MAX;
    }
    else if (size >= heap->guarded_size_min && size <= heap->guarded_size_max) {
      heap->guarded_sample_count = heap->guarded_sample_rate - 1;
      void* p = mi_guarded_malloc(heap, size, zero);
      if (p != NULL) return p;
    }
    /* else the count stays 0: the next eligible allocation is the sample */
  }
  return _mi_malloc_zero_unsampled(heap, size, zero);
}

void _mi_guarded_heap_init(mi_heap_t* heap) {
  mi_heap_guarded_set_sample_rate(heap, (size_t)mi_option_get(mi_option_guarded_sample_rate),
                                  (size_t)mi_option_get(mi_option_guarded_sample_seed));
  mi_heap_guarded_set_size_bound(heap, (size_t)mi_option_get(mi_option_guarded_min),
                                 (size_t)mi_option_get(mi_option_guarded_max));
}

void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed) {
  if (heap == NULL || heap->tld == NULL) return;
  if (mi_heap_is_shared(heap) && (heap = _mi_sheap_theap(heap, true)) == NULL) return;   /* the calling thread's part */
  heap->guarded_sample_rate = sample_rate;
  if (sample_rate == 0) heap->guarded_sample_count = SIZE_MAX;
  else heap->guarded_sample_count = (seed != 0 ? seed : (size_t)_mi_random_next()) % sample_rate;
}

void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max) {
  if (heap == NULL || heap->tld == NULL) return;
  if (mi_heap_is_shared(heap) && (heap = _mi_sheap_theap(heap, true)) == NULL) return;   /* the calling thread's part */
  heap->guarded_size_min = min;
  heap->guarded_size_max = (max < min ? min : max);
}

#else
/* Other builds have no guarded objects: documented no-ops. */
void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed) {
  (void)heap; (void)sample_rate; (void)seed;
}
void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max) {
  (void)heap; (void)min; (void)max;
}
#endif
