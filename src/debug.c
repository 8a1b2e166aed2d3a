/* SPDX-License-Identifier: MIT */
/* Heap-misuse checks of debug builds (MI_DEBUG > 0): the padding after every block
   (byte-precise overflow detection, see mi_padding_t in types.h), fill patterns for new and
   freed memory, free-list validation (writes after free), double and invalid frees, and the
   allocating caller of each block for the leak report. With MI_STAT > 1 also the per-block
   statistics. None of this is compiled into release builds. */
#include "internal/internal.h"

#if MI_PADDING || MI_STAT > 1

#if MI_PADDING
/* Bytes of slack after the requested size that are filled and checked (the rest of a large
   slack, e.g. at the end of a huge block, is not). */
#define MI_DEBUG_SLACK_CHECK_MAX  (4*MI_KiB)

static mi_padding_t* mi_block_padding(const mi_page_t* page, const mi_block_t* block) {
  return (mi_padding_t*)((uint8_t*)block + page->block_size - MI_PADDING_SIZE);
}

static uint32_t mi_padding_canary(const mi_page_t* page, const mi_block_t* block, uint32_t delta) {
  const mi_segment_t* segment = _mi_page_segment(page);
  return (uint32_t)(segment->cookie ^ (uintptr_t)block ^ ((uintptr_t)delta * 0x9E3779B1u));
}

#if MI_DEBUG > 0
/* A freed block keeps its padding's delta (so a double free can report the size the program
   asked for) under a canary of another form, which no live block's padding has. */
#define MI_PADDING_FREED_XOR  (0xA5C3F00Fu)

static bool mi_padding_keeps_delta(const mi_page_t* page) {   /* not where the free-list link is */
  return (page->block_size >= MI_PADDING_SIZE + sizeof(mi_block_t));
}

static bool mi_padding_is_freed(const mi_page_t* page, const mi_block_t* block) {
  if (!mi_padding_keeps_delta(page)) return false;
  const mi_padding_t* padding = mi_block_padding(page, block);
  return (padding->delta <= page->block_size &&
          padding->canary == (mi_padding_canary(page, block, padding->delta) ^ MI_PADDING_FREED_XOR));
}

static void mi_padding_set_freed(const mi_page_t* page, mi_block_t* block, uint32_t delta) {
  mi_padding_t* padding = mi_block_padding(page, block);
  padding->delta = delta;
  padding->canary = mi_padding_canary(page, block, delta) ^ MI_PADDING_FREED_XOR;
}
#endif

/* Record that the block serves [block .. end) and fill the slack up to the padding. */
static void mi_padding_set(const mi_page_t* page, mi_block_t* block, uint8_t* end) {
  mi_padding_t* padding = mi_block_padding(page, block);
  const size_t slack = (size_t)((uint8_t*)padding - end);
#if MI_DEBUG > 0
  memset(end, MI_DEBUG_PADDING, (slack > MI_DEBUG_SLACK_CHECK_MAX ? MI_DEBUG_SLACK_CHECK_MAX : slack));
#endif
  mi_track_open(padding, sizeof(*padding));   /* tracking builds: never the program's */
  padding->delta = (uint32_t)slack;
  padding->canary = mi_padding_canary(page, block, padding->delta);
  mi_track_close(padding, sizeof(*padding));
}

/* The end of the requested bytes, or NULL when the padding itself was overwritten. */
static uint8_t* mi_padding_end(const mi_page_t* page, const mi_block_t* block, const void* p) {
  const mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  const size_t delta = padding->delta;
  const uint32_t canary = padding->canary;
  mi_track_close(padding, sizeof(*padding));
  if (canary != mi_padding_canary(page, block, (uint32_t)delta)) return NULL;
  if (delta > (size_t)((const uint8_t*)padding - (const uint8_t*)p)) return NULL;
  return (uint8_t*)padding - delta;
}

#if MI_DEBUG > 0
static bool mi_bytes_are(const uint8_t* p, size_t n, uint8_t value, size_t* first_diff) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != value) { if (first_diff != NULL) *first_diff = i; return false; }
  }
  return true;
}
#endif

/* ---------------------------------------------------------------------------------------
   The caller of an allocation: walk our own frames (debug builds keep frame pointers, see
   CMakeLists.txt) up to the first return address outside the library's code, which static.c
   brackets with _mi_text_begin and _mi_text_end.
--------------------------------------------------------------------------------------- */
#if MI_DEBUG > 0
#if defined(MI_DEBUG_TRACE_CALLER) && defined(__GNUC__)
void _mi_text_begin(void);
void _mi_text_end(void);
static void* mi_caller_address(void) {
  void** fp = (void**)__builtin_frame_address(0);
  for (int depth = 0; depth < 32 && fp != NULL; depth++) {
    void* ret = fp[1];
    if ((uintptr_t)ret < (uintptr_t)&_mi_text_begin || (uintptr_t)ret >= (uintptr_t)&_mi_text_end) return ret;
    void** next = (void**)fp[0];
    if (next <= fp || (uintptr_t)next - (uintptr_t)fp > MI_MiB || ((uintptr_t)next % sizeof(void*)) != 0) return NULL;
    fp = next;
  }
  return NULL;
}
#else
static void* mi_caller_address(void) { return NULL; }
#endif
#endif

void* _mi_debug_block_caller(const mi_page_t* page, const mi_block_t* block) {
  mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  void* caller = padding->caller;
  mi_track_close(padding, sizeof(*padding));
  return caller;
}

void _mi_debug_set_caller(const mi_page_t* page, const mi_block_t* block, void* caller) {
  mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  padding->caller = caller;
  mi_track_close(padding, sizeof(*padding));
}

size_t _mi_debug_requested_size(const mi_page_t* page, const mi_block_t* block, const void* p) {
  const uint8_t* end = mi_padding_end(page, block, p);
  if (end == NULL) end = (const uint8_t*)mi_block_padding(page, block);   /* overwritten: all of it */
  return (size_t)(end - (const uint8_t*)p);
}

void _mi_debug_set_size(void* p, size_t size) {
  mi_page_t* page = _mi_ptr_page(p);
  mi_block_t* block = (mi_page_has_aligned(page) ? _mi_page_ptr_unalign(page, p) : (mi_block_t*)p);
  mi_padding_set(page, block, (uint8_t*)p + size);
}

void _mi_debug_rezero_slack(void* p, void* aligned, size_t size) {
  mi_page_t* page = _mi_ptr_page(p);
  mi_padding_t* padding = mi_block_padding(page, (mi_block_t*)p);
  mi_track_open(padding, sizeof(*padding));
  uint8_t* from = (uint8_t*)padding - padding->delta;   /* where the marked slack starts */
  mi_track_close(padding, sizeof(*padding));
  uint8_t* to = from + MI_DEBUG_SLACK_CHECK_MAX;
  uint8_t* lo = (uint8_t*)aligned;
  uint8_t* hi = (uint8_t*)aligned + size;
  if (from < lo) from = lo;
  if (to > hi) to = hi;
  if (from < to) memset(from, 0, (size_t)(to - from));
}

#if MI_DEBUG > 0
void _mi_debug_fill_new_blocks(mi_page_t* page, uint8_t* start, size_t count) {
  const size_t bsize = page->block_size;
  if (mi_page_is_huge(page)) return;
  for (size_t i = 0; i < count; i++) {
    uint8_t* b = start + i*bsize;
    memset(b + sizeof(mi_block_t), MI_DEBUG_FREED, bsize - sizeof(mi_block_t));
  }
  page->free_is_zero = false;
}

/* ---------------------------------------------------------------------------------------
   Allocation
--------------------------------------------------------------------------------------- */
bool _mi_debug_malloc_check(mi_page_t* page, mi_block_t* block) {
  mi_block_t* next = mi_block_next(page, block);
  if (mi_unlikely(!mi_page_block_valid(page, next))) {
    _mi_page_list_corrupt(page, block, next);
    return false;
  }
  if (!mi_page_is_huge(page)) {
    /* all freed fill, except the padding's canary and delta when they are in freed form */
    const size_t pad_offset = (mi_padding_keeps_delta(page) ? page->block_size - MI_PADDING_SIZE : page->block_size);
    const size_t kept = (mi_padding_is_freed(page, block) ? 2 * sizeof(uint32_t) : 0);
    size_t offset = 0;
    bool intact = mi_bytes_are((uint8_t*)block + sizeof(mi_block_t), pad_offset - sizeof(mi_block_t), MI_DEBUG_FREED, &offset);
    if (intact) offset = pad_offset - sizeof(mi_block_t);
    if (intact && pad_offset < page->block_size &&
        !mi_bytes_are((uint8_t*)block + pad_offset + kept, MI_PADDING_SIZE - kept, MI_DEBUG_FREED, &offset)) {
      intact = false;
      offset += pad_offset + kept - sizeof(mi_block_t);
    }
    if (mi_unlikely(!intact)) {
      _mi_error_message(EFAULT, "block %p (size %zu) was written after it was freed (at offset %zu)\n",
                        (void*)block, page->block_size, offset + sizeof(mi_block_t));
    }
  }
  return true;
}
#endif
#endif /* MI_PADDING */

void _mi_debug_block_malloc(mi_heap_t* heap, mi_page_t* page, mi_block_t* block, size_t size, bool zero) {
#if MI_DEBUG > 0
  if (!zero && !mi_page_is_huge(page)) memset(block, MI_DEBUG_UNINIT, size);
#endif
#if MI_PADDING
  mi_padding_set(page, block, (uint8_t*)block + size);
#endif
#if MI_DEBUG > 0
  mi_block_padding(page, block)->caller = mi_caller_address();
#else
  (void)block; (void)zero;
#endif
#if MI_STAT > 1
  _mi_stat_block_malloc(heap->tld, page, size);
#else
  (void)heap; (void)page; (void)size;
#endif
}

/* ---------------------------------------------------------------------------------------
   Free
--------------------------------------------------------------------------------------- */
#if MI_DEBUG > 0 || MI_STAT > 1
bool _mi_debug_free(mi_segment_t* segment, mi_page_t* page, void* p, bool is_local) {
  (void)segment;
  if (!page->segment_in_use || page->block_size == 0) return true;   /* _mi_free_generic reports it */
  const size_t bsize = page->block_size;
  mi_block_t* block = _mi_checked_free_block(page, p);
  if (block == NULL) return false;
#if MI_DEBUG > 0
  /* double free: a freed block is filled (the huge ones are not: always look) */
  const bool huge = mi_page_is_huge(page);
  const size_t probe = (bsize - sizeof(mi_block_t) < 16 ? bsize - sizeof(mi_block_t) : 16);
  if (huge || mi_padding_is_freed(page, block) ||
      mi_bytes_are((uint8_t*)block + sizeof(mi_block_t), probe, MI_DEBUG_FREED, NULL)) {
    /* a block freed by its owner or queued on the owner's heap cannot be searched from
       another thread; but its padding then holds the freed fill, which a live block's
       padding (canary) never does */
    const mi_padding_t* pad = mi_block_padding(page, block);
    const bool padding_freed = !huge && (mi_padding_is_freed(page, block) ||
                               mi_bytes_are((const uint8_t*)pad, sizeof(uint32_t), MI_DEBUG_FREED, NULL));
    const bool found = padding_freed || _mi_list_contains(page, mi_page_thread_free(page), block) ||
                       (is_local && (_mi_list_contains(page, page->free, block) || _mi_list_contains(page, page->local_free, block)));
    if (found) {
      /* the size the program asked for, when the freed padding still says it */
      const size_t usable = (size_t)((const uint8_t*)pad - (const uint8_t*)p);
      const size_t size = (!huge && mi_padding_is_freed(page, block) && pad->delta <= usable ? usable - pad->delta
                           : !mi_padding_keeps_delta(page) ? usable   /* only padding: malloc(0) */
                           : bsize);
      _mi_error_message(EAGAIN, "double free detected of block %p with size %zu (ignored)\n", p, size);
      return false;
    }
  }
  /* overflow: every byte between the requested size and the padding's canary must be intact */
  const mi_padding_t* padding = mi_block_padding(page, block);
  const size_t delta = padding->delta;
  const bool padding_intact = (delta <= (size_t)((const uint8_t*)padding - (const uint8_t*)p) &&
                               padding->canary == mi_padding_canary(page, block, (uint32_t)delta));
  if (delta > (size_t)((const uint8_t*)padding - (const uint8_t*)p)) {
    _mi_error_message(EFAULT, "buffer overflow in heap block %p of block size %zu: the padding after it was overwritten\n", p, bsize);
  }
  else {
    const uint8_t* end = (const uint8_t*)padding - delta;
    const size_t slack = (delta > MI_DEBUG_SLACK_CHECK_MAX ? MI_DEBUG_SLACK_CHECK_MAX : delta);
    size_t overwritten = 0;
    size_t last = 0;
    for (size_t i = 0; i < slack; i++) {
      if (end[i] != MI_DEBUG_PADDING) { overwritten++; last = i + 1; }
    }
    const uint32_t canary = mi_padding_canary(page, block, (uint32_t)delta);
    for (size_t i = 0; i < sizeof(uint32_t); i++) {
      if (((const uint8_t*)&padding->canary)[i] != ((const uint8_t*)&canary)[i]) { overwritten++; last = delta + i + 1; }
    }
    if (overwritten > 0) {
      _mi_error_message(EFAULT, "buffer overflow in heap block %p of size %zu: %zu bytes overwritten, up to %zu bytes past the end\n",
                        p, (size_t)(end - (const uint8_t*)p), overwritten, last);
    }
  }
  if (!huge) {
    memset((uint8_t*)block + sizeof(mi_block_t), MI_DEBUG_FREED, bsize - sizeof(mi_block_t));
    /* the requested size for a later double-free report; never from a corrupted padding */
    if (padding_intact && mi_padding_keeps_delta(page)) mi_padding_set_freed(page, block, (uint32_t)delta);
  }
#endif
#if MI_STAT > 1
  if (is_local) _mi_stat_blocks_freed(page, mi_page_heap(page)->tld, 1);
#else
  (void)is_local;
#endif
  return true;
}
#endif

#endif /* MI_PADDING || MI_STAT > 1 */
