/* SPDX-License-Identifier: MIT */
/* Heap-misuse checks of debug builds (MI_DEBUG > 0): the padding after every block
   (byte-precise overflow detection, see mi_padding_t in types.h), fill patterns for new and
   freed memory, free-list validation (writes after free), double and invalid frees, and the
   allocating caller of each block for the leak report. With MI_STAT > 1 also the per-block
   statistics. None of this is compiled into release builds. */
#include "internal/page.h"

#if MI_PADDING || MI_STAT > 1

#if MI_PADDING
/* Bytes of slack after the requested size that are filled and checked (the rest of a large
   slack, e.g. at the end of a huge block, is not). */
#define MI_DEBUG_SLACK_CHECK_MAX  (4*MI_KiB)

#if MI_DEBUG > 0
/* Whether the n bytes at p all equal value: the first byte, then every byte equal to the one
   before it, with the C library's memcmp (the checks at every malloc and free were a fifth of
   a Debug build's time with a byte loop at -O0); the first differing byte only on a mismatch. */
static bool mi_bytes_are(const uint8_t* p, size_t n, uint8_t value, size_t* first_diff) {
  if (n == 0 || (p[0] == value && memcmp(p, p + 1, n - 1) == 0)) return true;
  size_t i = 0;
  while (p[i] == value) i++;   /* (a byte differs: the check above failed) */
  if (first_diff != NULL) *first_diff = i;
  return false;
}
#endif

static mi_padding_t* mi_block_padding(const mi_page_t* page, const mi_block_t* block) {
  return (mi_padding_t*)((uint8_t*)block + page->block_size - MI_PADDING_SIZE);
}

/* A check word of the padding (types.h): a mix of the segment cookie with a block address and
   field values, so the bytes a program may read (the first) tell nothing about the cookie;
   second byte zero, first and last byte never zero. */
static uint32_t mi_check_word(const mi_page_t* page, const void* block, uintptr_t a, uintptr_t b) {
  uint64_t x = (uint64_t)_mi_page_segment(page)->cookie ^ ((uint64_t)(uintptr_t)block * 0x9E3779B97F4A7C15ull);
  x ^= (x >> 31) ^ a;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= (x >> 29) ^ b;
  x *= 0x94D049BB133111EBull;
  x ^= (x >> 32);
  /* byte order independent: the bytes as they lie in memory (the low bit of the first and the
     last byte is 0x01000001 in either order; the second byte a mask laid out as bytes). Word
     operations: writing bytes and reading the word back stalled a Debug build's every malloc
     and free at -O0. */
  static const union { uint8_t b[4]; uint32_t w; } second = { { 0, 0xFF, 0, 0 } };
  return ((uint32_t)x | 0x01000001u) & ~second.w;
}

#define MI_SALT_CANARY (0x6C697665u)
#define MI_SALT_CHECK  (0x63686B73u)
#define MI_SALT_GUARD  (0x67756172u)

/* The freed form differs from the live one in fixed bits (never equal, whatever the hash),
   keeping the check-word properties: byte 0 keeps its low bit, byte 1 stays zero, byte 3
   keeps its low bit. */
static uint32_t mi_padding_canary(const mi_page_t* page, const mi_block_t* block, bool freed) {
  const uint32_t canary = mi_check_word(page, block, MI_SALT_CANARY, 0);
  static const union { uint8_t b[4]; uint32_t w; } flip = { { 0x02, 0x00, 0xA5, 0x5A } };   /* as laid out in memory */
  return (freed ? canary ^ flip.w : canary);
}

/* covers what describes the block: a padding whose check fails has no trustworthy delta */
static uint32_t mi_padding_check_of(const mi_page_t* page, const mi_block_t* block, const mi_padding_t* padding) {
  return mi_check_word(page, block, MI_SALT_CHECK ^ (uintptr_t)padding->delta, (uintptr_t)padding->caller);
}

static bool mi_padding_described(const mi_page_t* page, const mi_block_t* block, const mi_padding_t* padding) {
  return (padding->check == mi_padding_check_of(page, block, padding));
}

static void mi_padding_seal(const mi_page_t* page, const mi_block_t* block, mi_padding_t* padding) {
  padding->check = mi_padding_check_of(page, block, padding);
}

#if MI_DEBUG > 0
/* The guard word before `block` (in the padding of the block before it, or in the room before
   a page's first block, which pages of large blocks do not have); none in huge pages. Only the
   block's own life touches it (its extension, its frees and its hand-outs): a free on another
   thread reads it race-free. */
static bool mi_block_has_guard(const mi_page_t* page, const mi_block_t* block) {
  return (!mi_page_is_huge(page) &&
          ((const uint8_t*)block > mi_page_start(page) || page->block_size <= MI_MEDIUM_OBJ_SIZE_MAX));
}
static uint32_t* mi_block_guard(const mi_block_t* block) {
  return (uint32_t*)((uint8_t*)block - sizeof(uint32_t));
}
static uint32_t mi_guard_value(const mi_page_t* page, const mi_block_t* block) {
  return mi_check_word(page, block, MI_SALT_GUARD, 0);
}

/* A freed block keeps its padding's delta (so a double free can report the size the program
   asked for) under the freed form of the canary, which no live block's padding has. */
static bool mi_padding_keeps_delta(const mi_page_t* page) {   /* not where the free-list link is */
  return (page->block_size >= MI_PADDING_SIZE + sizeof(mi_block_t));
}

static bool mi_padding_is_freed(const mi_page_t* page, const mi_block_t* block) {
  if (!mi_padding_keeps_delta(page)) return false;
  const mi_padding_t* padding = mi_block_padding(page, block);
  return (padding->delta <= page->block_size &&
          padding->canary == mi_padding_canary(page, block, true) &&
          mi_padding_described(page, block, padding));
}

static void mi_padding_set_freed(const mi_page_t* page, mi_block_t* block, uint32_t delta) {
  mi_padding_t* padding = mi_block_padding(page, block);
  padding->canary = mi_padding_canary(page, block, true);
  padding->delta = delta;
  mi_padding_seal(page, block, padding);   /* over the caller field's freed fill */
}

/* Is the block free (its padding in freed form, or freed fill where a live block has its
   canary)? Read from any thread only once its guard was found damaged. */
static bool mi_block_looks_freed(const mi_page_t* page, const mi_block_t* block) {
  if (mi_padding_keeps_delta(page)) return mi_padding_is_freed(page, block);
  return mi_bytes_are((const uint8_t*)block + sizeof(mi_block_t), sizeof(uint32_t), MI_DEBUG_FREED, NULL);
}

/* A write into the guard before the block: before the block's start, or past the end of the
   block before it. When that one is free, it is reported as a write after its free (the
   likelier cause), else as an underflow of this block; the guard is repaired either way, so
   one write is reported once. */
static void mi_guard_verify(const mi_page_t* page, mi_block_t* block, const void* p) {
  if (!mi_block_has_guard(page, block)) return;
  uint32_t* guard = mi_block_guard(block);
  const uint32_t expected = mi_guard_value(page, block);
  if (mi_likely(*guard == expected)) return;
  size_t first = 0;   /* offset of the first changed byte in the guard */
  while (first + 1 < sizeof(uint32_t) && ((const uint8_t*)guard)[first] == ((const uint8_t*)&expected)[first]) first++;
  const size_t bsize = page->block_size;
  const mi_block_t* prev = (mi_block_t*)((uint8_t*)block - bsize);
  if ((uint8_t*)block > mi_page_start(page) && mi_block_looks_freed(page, prev)) {
    _mi_error_message(EFAULT, "block %p (size %zu) was written after it was freed (at offset %zu)\n",
                      (const void*)prev, bsize, bsize - sizeof(uint32_t) + first);
  }
  else {
    _mi_error_message(EFAULT, "buffer underflow before heap block %p: the %zu bytes before its start were overwritten (or past the end of the block before it)\n",
                      p, sizeof(uint32_t) - first);
  }
  *guard = expected;
}
#endif

/* Record that the block serves [block .. end) and fill the slack up to the padding; keeps
   the caller. */
static void mi_padding_set(const mi_page_t* page, mi_block_t* block, uint8_t* end) {
  mi_padding_t* padding = mi_block_padding(page, block);
  const size_t slack = (size_t)((uint8_t*)padding - end);
#if MI_DEBUG > 0
  memset(end, MI_DEBUG_PADDING, (slack > MI_DEBUG_SLACK_CHECK_MAX ? MI_DEBUG_SLACK_CHECK_MAX : slack));
#endif
  mi_track_open(padding, sizeof(*padding));   /* tracking builds: never the program's */
  padding->canary = mi_padding_canary(page, block, false);
  padding->delta = (uint32_t)slack;
  mi_padding_seal(page, block, padding);
  mi_track_close(padding, sizeof(*padding));
}

/* The end of the requested bytes, or NULL when what describes the padding was overwritten. */
static uint8_t* mi_padding_end(const mi_page_t* page, const mi_block_t* block, const void* p) {
  const mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  const size_t delta = padding->delta;
  const bool described = mi_padding_described(page, block, padding);
  mi_track_close(padding, sizeof(*padding));
  if (!described) return NULL;
  if (delta > (size_t)((const uint8_t*)padding - (const uint8_t*)p)) return NULL;
  return (uint8_t*)padding - delta;
}

/* ---------------------------------------------------------------------------------------
   The caller of an allocation: walk our own frames (debug builds keep frame pointers, see
   CMakeLists.txt) up to the first return address outside the library's code, which static.c
   brackets with _mi_static_text_begin and _mi_static_text_end.
--------------------------------------------------------------------------------------- */
#if MI_DEBUG > 0 && defined(MI_DEBUG_TRACE_CALLER) && defined(__GNUC__)
void _mi_static_text_begin(void);
void _mi_static_text_end(void);
static void* mi_caller_address(void) {
  void** fp = (void**)__builtin_frame_address(0);
  for (int depth = 0; depth < 32 && fp != NULL; depth++) {
    void* ret = fp[1];
    if ((uintptr_t)ret < (uintptr_t)&_mi_static_text_begin || (uintptr_t)ret >= (uintptr_t)&_mi_static_text_end) return ret;
    void** next = (void**)fp[0];
    if (next <= fp || (uintptr_t)next - (uintptr_t)fp > MI_MiB || ((uintptr_t)next % sizeof(void*)) != 0) return NULL;
    fp = next;
  }
  return NULL;
}
#else
static void* mi_caller_address(void) { return NULL; }
#endif

void* _mi_debug_block_caller(const mi_page_t* page, const mi_block_t* block) {
  const mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  void* caller = (mi_padding_described(page, block, padding) ? padding->caller : NULL);   /* never a damaged one */
  mi_track_close(padding, sizeof(*padding));
  return caller;
}

void _mi_debug_set_caller(const mi_page_t* page, const mi_block_t* block, void* caller) {
  mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  padding->caller = caller;
  mi_padding_seal(page, block, padding);
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
    memset(b + sizeof(mi_block_t), MI_DEBUG_FREED, bsize - sizeof(mi_block_t) - sizeof(uint32_t));
    /* the first one's guard is in the block before it (possibly live: its own frees never
       write the guard) or in the room before the page's first block */
    if (mi_block_has_guard(page, (mi_block_t*)b)) *mi_block_guard((mi_block_t*)b) = mi_guard_value(page, (mi_block_t*)b);
  }
  page->free_is_zero = false;
}

/* ---------------------------------------------------------------------------------------
   Allocation
--------------------------------------------------------------------------------------- */
bool _mi_debug_malloc_check(mi_page_t* page, mi_block_t* block) {
  mi_block_t* next = mi_block_next(page, block);
  if (mi_unlikely(!mi_page_block_valid(page, next))) {
    _mi_secure_page_list_corrupt(page, block, next);
    return false;
  }
  if (!mi_page_is_huge(page)) {
    /* all freed fill up to the next block's guard, except canary, delta and check of a
       padding in freed form */
    const size_t bsize = page->block_size;
    const size_t end = bsize - sizeof(uint32_t);
    const size_t pad = bsize - MI_PADDING_SIZE;
    const bool kept = mi_padding_is_freed(page, block);
    const size_t ranges[3][2] = {
      { sizeof(mi_block_t), (kept ? pad : end) },
      { (kept ? pad + offsetof(mi_padding_t, caller) : end), (kept ? pad + offsetof(mi_padding_t, check) : end) },
      { (kept ? pad + offsetof(mi_padding_t, guard) : end), end } };
    bool reported = false;
    for (size_t r = 0; r < 3 && !reported; r++) {
      size_t offset = 0;
      const size_t from = ranges[r][0];
      if (from < ranges[r][1] && !mi_bytes_are((uint8_t*)block + from, ranges[r][1] - from, MI_DEBUG_FREED, &offset)) {
        _mi_error_message(EFAULT, "block %p (size %zu) was written after it was freed (at offset %zu)\n",
                          (void*)block, bsize, from + offset);
        reported = true;
      }
    }
    /* the next block's guard at the end of this one: while this block was free, a write
       there was most likely a write after free (reported once: repaired) */
    const size_t idx = (size_t)((uint8_t*)block - mi_page_start(page)) / bsize;
    if (idx + 1 < page->capacity) {
      mi_block_t* nextb = (mi_block_t*)((uint8_t*)block + bsize);
      uint32_t* guard = mi_block_guard(nextb);
      const uint32_t expected = mi_guard_value(page, nextb);
      if (*guard != expected) {
        size_t i = 0;
        while (i + 1 < sizeof(uint32_t) && ((const uint8_t*)guard)[i] == ((const uint8_t*)&expected)[i]) i++;
        if (!reported) {
          _mi_error_message(EFAULT, "block %p (size %zu) was written after it was freed (at offset %zu)\n",
                            (void*)block, bsize, end + i);
        }
        *guard = expected;
      }
    }
    mi_guard_verify(page, block, block);
  }
  return true;
}
#endif
#endif /* MI_PADDING */

void _mi_debug_block_malloc(mi_heap_t* heap, mi_page_t* page, mi_block_t* block, size_t size, bool zero) {
#if MI_DEBUG > 0
  if (!zero && !mi_page_is_huge(page)) memset(block, MI_DEBUG_UNINIT, size);
#else
  (void)zero;
#endif
#if MI_PADDING
  mi_padding_t* padding = mi_block_padding(page, block);
  mi_track_open(padding, sizeof(*padding));
  padding->caller = mi_caller_address();
  mi_track_close(padding, sizeof(*padding));
  mi_padding_set(page, block, (uint8_t*)block + size);   /* seals delta and caller */
#else
  (void)block;
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
  mi_block_t* block = _mi_secure_checked_free_block(page, p);
  if (block == NULL) return false;
  if (mi_unlikely(mi_tf_is_emptied(mi_atomic_load_acquire(&page->xthread_free)))) {
    /* the purger emptied the page (heap-idle.c): all its blocks were free, its memory is gone */
    _mi_error_message(EAGAIN, "double free detected of block %p with size %zu (its page was given back while its owner slept; ignored)\n", p, bsize);
    return false;
  }
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
    const bool found = padding_freed || _mi_secure_list_contains(page, mi_page_thread_free_acquire(page), block) ||
                       (is_local && (_mi_secure_list_contains(page, page->free, block) || _mi_secure_list_contains(page, page->local_free, block)));
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
  /* overflow: the padding must still describe the block (its check word), then every byte
     from the requested size to the end of the canary must be intact */
  mi_padding_t* padding = mi_block_padding(page, block);
  const size_t usable = (size_t)((const uint8_t*)padding - (const uint8_t*)p);   /* >= the requested size */
  const size_t delta = padding->delta;
  const bool described = (delta <= usable && mi_padding_described(page, block, padding));
  if (!described) {
    /* delta (and caller) are lost: any size or byte count from them would be made up */
    _mi_error_message(EFAULT, "buffer overflow in heap block %p: the padding at the end of its block (size %zu) was overwritten, so the requested size is unknown (at most %zu bytes)\n",
                      p, bsize, usable);
  }
  else {
    const uint8_t* end = (const uint8_t*)padding - delta;
    const size_t slack = (delta > MI_DEBUG_SLACK_CHECK_MAX ? MI_DEBUG_SLACK_CHECK_MAX : delta);
    size_t overwritten = 0;
    size_t last = 0;
    for (size_t i = 0; i < slack; i++) {
      if (end[i] != MI_DEBUG_PADDING) { overwritten++; last = i + 1; }
    }
    const uint32_t canary = mi_padding_canary(page, block, false);
    for (size_t i = 0; i < sizeof(uint32_t); i++) {
      if (((const uint8_t*)&padding->canary)[i] != ((const uint8_t*)&canary)[i]) { overwritten++; last = delta + i + 1; }
    }
    if (overwritten > 0) {
      _mi_error_message(EFAULT, "buffer overflow in heap block %p of size %zu: %zu bytes overwritten, up to %zu bytes past the end\n",
                        p, (size_t)(end - (const uint8_t*)p), overwritten, last);
    }
  }
  /* underflow: the guard before the block */
  mi_guard_verify(page, block, p);
  if (!huge) {
    /* up to the next block's guard, which is not ours to write */
    memset((uint8_t*)block + sizeof(mi_block_t), MI_DEBUG_FREED, bsize - sizeof(mi_block_t) - sizeof(uint32_t));
    /* the requested size for a later double-free report; never from a corrupted padding */
    if (described && mi_padding_keeps_delta(page)) mi_padding_set_freed(page, block, (uint32_t)delta);
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
