/* SPDX-License-Identifier: MIT */
/* Layer 4 (docs/design.md, "Layers"): pages and page queues (page.c), the checks of checked
   builds (debug.c, secure.c), the trackers (track.c, track.h), and the inline helpers of a
   page: its flags, its thread_free word, its free-list links. */
#pragma once
#include "segment.h"
#include "track.h"
#include "observe.h"   /* mi_live_enabled (mi_live_count_freed) */

/* ------------------------------------------------------------------------------------------
   page.c: pages and page queues
------------------------------------------------------------------------------------------ */
/* The first page of size's bin when, after taking the frees it holds, it has a free block (no
   search); NULL otherwise. */
mi_page_t* _mi_page_first_available(mi_heap_t* heap, size_t size);
/* After _mi_page_first_available found nothing: the next page if it has a free block, the first
   rotated to the end. */
mi_page_t* _mi_page_next_available(mi_heap_t* heap, size_t size);
/* A page of the heap with a free block for size (searching the bin's queue, adopting an ended
   thread's page, or taking a fresh one; a huge page when size > MI_LARGE_OBJ_SIZE_MAX or
   huge_alignment > 0); NULL when out of memory. */
mi_page_t* _mi_page_find(mi_heap_t* heap, size_t size, size_t huge_alignment, size_t align_offset);
void       _mi_page_to_full(mi_page_t* page, mi_page_queue_t* pq);
void       _mi_page_free_collect(mi_page_t* page, bool force);
size_t     _mi_page_purge_free_interiors(mi_page_t* page);   /* owner: the OS pages inside free blocks (page.c) */
/* How a collect gives back the OS pages of a page's slot past its capacity (_mi_page_trim_tail) */
typedef enum mi_trim_e {
  MI_TRIM_PERIODIC,   /* the slow path's periodic collect: at the second look without growth, a tail of MI_TRIM_PERIODIC_MIN or more */
  MI_TRIM_LOOK,       /* mi_collect(false): at the second look without growth */
  MI_TRIM_NOW         /* mi_collect(true), an ended thread's one-block page: at once */
} mi_trim_t;
#define MI_TRIM_PERIODIC_MIN  (48 * MI_KiB)   /* (page.c, _mi_page_trim_tail: why) */
void       _mi_page_trim_tail(mi_page_t* page, mi_trim_t how);   /* owner: the OS pages of its slot past its capacity (page.c) */
size_t     _mi_page_purged_mark(const mi_page_t* page, uintptr_t* map);   /* the blocks of interior_purged: their number; their bits set in map (if not NULL) */
/* A bitmap of a page's blocks by index (pages of more blocks than MI_PAGE_MAP_BLOCKS hold one). */
#define MI_PAGE_MAP_BLOCKS  (MI_SMALL_PAGE_SIZE / sizeof(uintptr_t))
#define MI_PAGE_MAP_BITS    (8 * sizeof(uintptr_t))
#define MI_PAGE_MAP_WORDS   (MI_PAGE_MAP_BLOCKS / MI_PAGE_MAP_BITS)
/* the page's free blocks (its lists, `extra`, the purged ones) set in map, the rest clear;
   false (map untouched) for a page of more than MI_PAGE_MAP_BLOCKS blocks */
bool       _mi_page_free_map(const mi_page_t* page, const mi_block_t* extra, uintptr_t* map);
void       _mi_page_retire(mi_page_t* page);
void       _mi_page_free_emptied(mi_page_t* page, mi_page_queue_t* pq);   /* the owner: a page it emptied */
void       _mi_page_free_all(mi_page_t* page, mi_page_queue_t* pq);   /* a page with its blocks in use (they count as freed) */
void       _mi_page_unfull(mi_page_t* page);
void       _mi_page_unfull_freed(mi_page_t* page);   /* after the owner's free into it: may take the first page's place */
void       _mi_page_free(mi_page_t* page, mi_page_queue_t* pq);
void       _mi_page_abandon(mi_page_t* page, mi_page_queue_t* pq);
void       _mi_page_use_delayed_free(mi_page_t* page, mi_delayed_t delay, bool override_never);
size_t     _mi_page_tf_to_abandoned(mi_page_t* page);   /* returns the live blocks (the thread_free word, below) */
void       _mi_page_tf_to_owned(mi_page_t* page, mi_delayed_t delayed);
void       _mi_page_init_fresh(mi_heap_t* heap, mi_page_t* page, size_t block_size);
void       _mi_page_queue_push(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page);
void       _mi_page_queue_remove(mi_page_queue_t* pq, mi_page_t* page);
size_t     _mi_page_queue_append(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_queue_t* append);
mi_page_queue_t* _mi_page_queue_of(const mi_page_t* page);
void       _mi_page_collect_retired(mi_heap_t* heap, bool force);
size_t     _mi_page_bin_size(size_t bin);
mi_block_t* _mi_page_ptr_unalign(const mi_page_t* page, const void* p);   /* the block p points into */
/* the empty page (page.c): free == NULL, always takes the slow path */
extern const mi_page_t  _mi_page_empty;           /* free == NULL: always takes the slow path */

/* ------------------------------------------------------------------------------------------
   debug.c: heap-misuse checks of debug builds (MI_DEBUG > 0) and the per-block statistics
   of MI_STAT > 1. Every block of a debug build ends in a mi_padding_t (types.h).
------------------------------------------------------------------------------------------ */
/* Validate the block taken from page->free (its link and its freed fill); false when the
   free list was corrupted: the page's free list is then dropped and nothing is handed out. */
bool       _mi_debug_malloc_check(mi_page_t* page, mi_block_t* block);
/* A block just handed out for `size` bytes: fill, padding, caller, statistics. */
void       _mi_debug_block_malloc(mi_heap_t* heap, mi_page_t* page, mi_block_t* block, size_t size, bool zero);
/* Checks before freeing p (interior pointer, double free, overflow), then fill and
   statistics; false when p must not be freed. */
bool       _mi_debug_free(mi_segment_t* segment, mi_page_t* page, void* p, bool is_local);
/* The block holding user pointer p now serves exactly `size` bytes from p. */
void       _mi_debug_set_size(void* p, size_t size);
/* Bytes the program asked for at p (the usable size of debug builds). */
size_t     _mi_debug_requested_size(const mi_page_t* page, const mi_block_t* block, const void* p);
/* After an aligned allocation moved the user pointer from p to aligned (size bytes, zeroed):
   zero again the slack marking that the allocation wrote after p's requested size. */
void       _mi_debug_rezero_slack(void* p, void* aligned, size_t size);
/* secure.c (checked builds): is block on the page's list (validated walk)? */
bool       _mi_secure_list_contains(const mi_page_t* page, const mi_block_t* list, const mi_block_t* block);
/* secure.c: the block a checked free of p releases, or NULL (reported) if p is no block start */
mi_block_t* _mi_secure_checked_free_block(mi_page_t* page, void* p);
/* secure.c: report (EFAULT) a link of the page's lists that leads outside its blocks */
void       _mi_secure_page_link_report(const mi_page_t* page, const mi_block_t* block, const mi_block_t* next) mi_decl_noinline;
/* secure.c (secure builds): fresh link keys for a page being set up */
void       _mi_secure_page_init_keys(mi_page_t* page);
/* secure.c (checked builds): a link of the page's lists leads outside it: report and drop the lists */
void       _mi_secure_page_list_corrupt(mi_page_t* page, const mi_block_t* block, const mi_block_t* next);
/* secure.c: malloc found the link of `block` corrupted: _mi_secure_page_list_corrupt, then the generic path */
void*      _mi_secure_page_malloc_corrupt(mi_heap_t* heap, mi_page_t* page, const mi_block_t* block, const mi_block_t* next, size_t size, bool zero);
/* secure.c: the full check of a free in secure builds; false (reported) to ignore the free */
bool       _mi_secure_free_check(mi_page_t* page, void* p, bool is_local);
/* New blocks of a page (extend): filled as freed blocks. */
void       _mi_debug_fill_new_blocks(mi_page_t* page, uint8_t* start, size_t count);
/* The return address into the program of the allocation of the block (NULL if unknown). */
void*      _mi_debug_block_caller(const mi_page_t* page, const mi_block_t* block);
void       _mi_debug_set_caller(const mi_page_t* page, const mi_block_t* block, void* caller);

static inline mi_heap_t* mi_page_heap(const mi_page_t* page) {
  return mi_atomic_load_relaxed(&((mi_page_t*)page)->xheap);
}

/* `n` blocks of `page` were freed (the frees of live.c), by the page's owner; slow paths only.
   A thread without its live state yet counts nothing: its first publication takes its counts
   from then on (live.c). */
static inline void mi_live_count_freed(const mi_page_t* page, size_t n) {
  if (mi_unlikely(mi_live_enabled())) {
    mi_heap_t* const heap = mi_page_heap(page);
    if (heap != NULL && heap->tld->live != NULL) heap->tld->live->freed += (int64_t)n;
  }
}
static inline uintptr_t mi_page_flags(const mi_page_t* page) {
  return (mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_id) & MI_PAGE_FLAGS_MASK);
}
/* The page's owner (part of xthread_id) follows its heap: heap->thread_id, or 0 without one. */
/* The thread id of the page's owner (0: abandoned or not in use). */
static inline uintptr_t mi_page_owner(const mi_page_t* page) {
  return (mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_id) & ~MI_PAGE_FLAGS_MASK);
}
/* Without a heap the page keeps its abandon_lists, until abandon.c lists it (types.h). */
static inline void mi_page_set_heap(mi_page_t* page, mi_heap_t* heap) {
  const uintptr_t owner = (heap != NULL ? heap->thread_id : 0);
  mi_assert_internal((owner & MI_PAGE_FLAGS_MASK) == 0);
  if (heap != NULL) mi_atomic_store_relaxed(&page->abandon_lists, heap->pages_lists);
  mi_atomic_store_release(&page->xheap, heap);
  mi_atomic_store_relaxed(&page->xthread_id, owner | mi_page_flags(page));
}
static inline void mi_page_flag_set(mi_page_t* page, uintptr_t flag, bool on) {   /* owner only */
  const uintptr_t x = mi_atomic_load_relaxed(&page->xthread_id);
  mi_atomic_store_relaxed(&page->xthread_id, (on ? (x | flag) : (x & ~flag)));
}
static inline void mi_page_flags_clear(mi_page_t* page) {   /* owner only */
  mi_atomic_store_relaxed(&page->xthread_id, mi_atomic_load_relaxed(&page->xthread_id) & ~MI_PAGE_FLAGS_MASK);
}
static inline uint32_t mi_page_prof_samples(const mi_page_t* page) {   /* profiler samples in the page */
#if MI_SECURE == 0
  return mi_atomic_load_relaxed(&((mi_page_t*)page)->prof_samples);
#else
  (void)page; return 0;
#endif
}
static inline size_t mi_page_remote_batch(const mi_page_t* page) {   /* types.h: remote_batch */
#if MI_REMOTE_BATCH
  return page->remote_batch;
#else
  (void)page; return 0;
#endif
}
static inline bool mi_page_is_in_full(const mi_page_t* page) { return (mi_page_flags(page) & MI_PAGE_IN_FULL) != 0; }
static inline void mi_page_set_in_full(mi_page_t* page, bool in_full) { mi_page_flag_set(page, MI_PAGE_IN_FULL, in_full); }
static inline bool mi_page_has_aligned(const mi_page_t* page) { return (mi_page_flags(page) & MI_PAGE_HAS_ALIGNED) != 0; }
static inline void mi_page_set_has_aligned(mi_page_t* page, bool has) { mi_page_flag_set(page, MI_PAGE_HAS_ALIGNED, has); }

static inline bool mi_page_all_free(const mi_page_t* page) { return page->used == 0; }
static inline bool mi_page_map_get(const uintptr_t* map, size_t i) { return ((map[i / MI_PAGE_MAP_BITS] >> (i % MI_PAGE_MAP_BITS)) & 1) != 0; }
/* Has the page free blocks on no list, in OS pages given back (types.h, interior_purged)? */
static inline bool mi_page_has_purged(const mi_page_t* page) {
#if MI_SECURE == 0
  return (page->interior_purged != 0);
#else
  (void)page;
  return false;
#endif
}
static inline bool mi_page_immediate_available(const mi_page_t* page) { return page->free != NULL; }

/* thread_free word: the list head (blocks are 8-aligned and, like every segment, below 2^48:
   MI_SEGMENT_MAP_ADDR_BITS), the delayed state in bits 0-1, the abandoned mark in bit 2 and a
   count in bits 48-63. Two forms:
   - owned (bit 2 clear): the count is the list length, so the owner takes the list with its
     length in one exchange, without walking it (mi_page_collect_for_alloc);
   - abandoned (bit 2 set, state bits 0): the page's segment has no owner (types.h, abandoned
     segments); the count is MI_TF_ABANDONED_BASE - (blocks still live), so the free whose push
     makes it MI_TF_ABANDONED_BASE freed the page's last block and releases the page (free.c).
     The state bits read as MI_USE_DELAYED_FREE, so the cross-thread fast path, which only
     pushes directly in the other states, leaves such a page to mi_free_block_mt.
   Pushes add one to the count in both forms; only the segment's owner (or the holder of the
   abandoned lock while nobody owns it) converts between them (page.c).
   A third form, emptied (bits 0-2 all set, MI_TF_EMPTIED): a full page of a sleeping owner
   whose blocks were all freed by other threads, taken whole by the purger and given back to
   the OS (heap-idle.c); its lists are gone, and the owner frees the page when it next runs
   (_mi_heap_idle_take_back). A push onto it (a block freed twice) keeps the form. */
#define MI_TF_COUNT_SHIFT  (48)
#define MI_TF_ABANDONED    ((uintptr_t)4)
#define MI_TF_ABANDONED_BASE ((size_t)1 << 15)
#define MI_TF_BLOCK_MASK   ((((uintptr_t)1) << MI_TF_COUNT_SHIFT) - 8)
_Static_assert(MI_SEGMENT_MAP_ADDR_BITS <= MI_TF_COUNT_SHIFT && sizeof(uintptr_t) == 8, "block pointers leave the top 16 bits of the thread_free word free");
_Static_assert(MI_SMALL_PAGE_SIZE / 8 <= MI_TF_ABANDONED_BASE / 2, "a page's blocks fit the thread_free count, in both forms");
static inline mi_block_t* mi_tf_block(uintptr_t tf) { return (mi_block_t*)(tf & MI_TF_BLOCK_MASK); }
static inline mi_delayed_t mi_tf_delayed(uintptr_t tf) { return (mi_delayed_t)(tf & 3); }
static inline size_t mi_tf_count(uintptr_t tf) { return (size_t)(tf >> MI_TF_COUNT_SHIFT); }
static inline bool mi_tf_is_abandoned(uintptr_t tf) { return (tf & MI_TF_ABANDONED) != 0; }
#define MI_TF_EMPTIED      (MI_TF_ABANDONED | (uintptr_t)MI_NEVER_DELAYED_FREE)
static inline bool mi_tf_is_emptied(uintptr_t tf) { return (tf & MI_TF_EMPTIED) == MI_TF_EMPTIED; }
/* an empty list in state `delayed` */
static inline uintptr_t mi_tf_make_empty(mi_delayed_t delayed) { return (uintptr_t)delayed; }
/* the same list (and length) in another state (owned form) */
static inline uintptr_t mi_tf_set_delayed(uintptr_t tf, mi_delayed_t delayed) { return ((tf & ~(uintptr_t)3) | (uintptr_t)delayed); }
/* the list with `block` pushed (the caller linked it to mi_tf_block(tf)) */
static inline uintptr_t mi_tf_push(uintptr_t tf, mi_block_t* block) {
  return ((tf + (((uintptr_t)1) << MI_TF_COUNT_SHIFT)) & ~MI_TF_BLOCK_MASK) | (uintptr_t)block;
}
/* the list with the chain head..tail of n blocks pushed (the caller linked tail to mi_tf_block(tf)) */
static inline uintptr_t mi_tf_push_n(uintptr_t tf, mi_block_t* head, size_t n) {
  return ((tf + ((uintptr_t)n << MI_TF_COUNT_SHIFT)) & ~MI_TF_BLOCK_MASK) | (uintptr_t)head;
}
/* the same list with another count (and form bits `low`: a delayed state, or MI_TF_ABANDONED) */
static inline uintptr_t mi_tf_with_count(uintptr_t tf, size_t count, uintptr_t low) {
  return (tf & MI_TF_BLOCK_MASK) | ((uintptr_t)count << MI_TF_COUNT_SHIFT) | low;
}
static inline mi_block_t* mi_page_thread_free(const mi_page_t* page) {
  return mi_tf_block(mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_free));
}
/* ... for a walk of the list (double-free search of checked builds): acquire pairs with the
   pushers' release CAS, so the links of the blocks pushed so far are visible */
static inline mi_block_t* mi_page_thread_free_acquire(const mi_page_t* page) {
  return mi_tf_block(mi_atomic_load_acquire(&((mi_page_t*)page)->xthread_free));
}

/* Free-list links. Secure builds store each link encoded with the keys of the page that holds
   the link's block: e = rotl(next + k0, k1) ^ k1. A write over a freed block (use after free,
   overflow from a neighbour) then decodes to an address the writer cannot choose, which the
   checks reject (mi_page_link_ok, secure.c). Every list of a page (free, local_free,
   thread_free) and the heap's delayed list are linked this way. */
#if MI_SECURE > 0
static inline uintptr_t mi_rotl(uintptr_t x, uintptr_t r) { r &= 63; return (r == 0 ? x : (x << r) | (x >> (64 - r))); }
static inline uintptr_t mi_rotr(uintptr_t x, uintptr_t r) { r &= 63; return (r == 0 ? x : (x >> r) | (x << (64 - r))); }
static inline mi_block_t* mi_link_decode(const mi_page_t* page, uintptr_t e) {
  return (mi_block_t*)(mi_rotr(e ^ page->keys[1], page->keys[1]) - page->keys[0]);
}
static inline uintptr_t mi_link_encode(const mi_page_t* page, const mi_block_t* next) {
  return mi_rotl((uintptr_t)next + page->keys[0], page->keys[1]) ^ page->keys[1];
}
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  return mi_link_decode(page, (uintptr_t)block->next);
}
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, mi_block_t* next) {
  block->next = (mi_block_t*)mi_link_encode(page, next);
}
#else
static inline mi_block_t* mi_block_next(const mi_page_t* page, const mi_block_t* block) {
  (void)page;
  mi_track_open(block, sizeof(mi_block_t));   /* a free block: no access for the program */
  mi_block_t* const next = block->next;
  mi_track_close(block, sizeof(mi_block_t));
  return next;
}
static inline void mi_block_set_next(const mi_page_t* page, mi_block_t* block, mi_block_t* next) {
  (void)page;
  mi_track_open(block, sizeof(mi_block_t));
  block->next = next;
  mi_track_close(block, sizeof(mi_block_t));
}
#endif

/* Another thread's free of the chain head..tail (n blocks, linked) into `page`: one CAS on its
   thread_free list. False, and nothing pushed, while the page is in the delayed-free handshake
   or the abandoned form: the caller then pushes block by block (_mi_remote_free_block). */
static inline bool mi_page_push_remote_chain(mi_page_t* page, mi_block_t* head, mi_block_t* tail, size_t n) {
  uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  uintptr_t tfreex;
  do {
    if (mi_unlikely(mi_tf_delayed(tfree) == MI_USE_DELAYED_FREE)) return false;
    mi_block_set_next(page, tail, mi_tf_block(tfree));
    tfreex = mi_tf_push_n(tfree, head, n);
  } while (!mi_atomic_cas_weak_release(&page->xthread_free, &tfree, tfreex));
  return true;
}

/* A block freed by the page's owner: on `free` (which then holds a used block), or on
   local_free in sharded builds (MI_FREE_SHARDED, types.h). The caller updates `used`. */
static inline void mi_page_push_owner_free(mi_page_t* page, mi_block_t* block) {
#if MI_FREE_SHARDED
  mi_block_set_next(page, block, page->local_free);
  page->local_free = block;
#else
  mi_block_set_next(page, block, page->free);
  page->free = block;
  page->free_is_zero = false;
#endif
}

#if MI_SECURE > 0
/* Secure builds: is `diff` (from page_start) the start of a block below the page's capacity?
   With m = block_magic = 2^64 / block_size rounded up, for diff < 2^32 the high half of
   diff * m is diff / block_size and its low half is below m exactly when block_size divides
   diff; a larger diff gives a quotient of at least its true one, so it fails the capacity
   test unless the page has one block (huge pages), where the quotient is 0 only for
   diff < 2^64 / m <= block_size and the low half diff * m is below m only for diff 0. */
static inline bool mi_page_offset_is_block(const mi_page_t* page, uintptr_t diff) {
  const __uint128_t prod = (__uint128_t)diff * page->block_magic;
  return ((uint64_t)(prod >> 64) < page->capacity && (uint64_t)prod < page->block_magic);
}
/* ... or anywhere inside such a block */
static inline bool mi_page_offset_in_blocks(const mi_page_t* page, uintptr_t diff) {
  return ((uint64_t)(((__uint128_t)diff * page->block_magic) >> 64) < page->capacity);
}
static inline uint64_t mi_block_magic_of(size_t block_size) {
  return (UINT64_MAX / block_size) + 1;
}
#endif

/* The end of the blocks the page has made available so far (its capacity). */
static inline uintptr_t mi_page_blocks_end(const mi_page_t* page) {
  return (uintptr_t)mi_page_start(page) + (size_t)page->capacity * page->block_size;
}

/* A link that may be followed: NULL or a block that was handed out of this page (the exact
   block start is checked where lists are walked, mi_page_block_valid). */
static inline bool mi_page_link_ok(const mi_page_t* page, const mi_block_t* next) {
#if MI_SECURE > 0
  return (mi_page_offset_in_blocks(page, (uintptr_t)next - (uintptr_t)mi_page_start(page)) || next == NULL);
#else
  return ((uintptr_t)next - (uintptr_t)mi_page_start(page) < (uintptr_t)page->capacity * page->block_size || next == NULL);
#endif
}
/* The page's capacity read from any thread: the checks of a free (debug and secure builds)
   run on the freeing thread while the owner may be extending the page. The read is benign:
   capacity only grows while the page holds a live block, and the block being freed was handed
   out below a capacity whose store happened before the free (the program passed the block
   on), so a stale value never rejects a valid block; it can only let through a pointer into
   blocks that are being made available at that moment. The owner's store in
   mi_page_extend_free is atomic too, so the pair is no data race (ThreadSanitizer). */
static inline uint32_t mi_page_capacity_any(const mi_page_t* page) {
  return atomic_load_explicit((_Atomic(uint32_t)*)&page->capacity, memory_order_relaxed);
}

/* NULL, or exactly the start of one of the first `capacity` blocks of the page. */
static inline bool mi_page_block_below(const mi_page_t* page, const mi_block_t* block, size_t capacity) {
  if (block == NULL) return true;
  const uintptr_t diff = (uintptr_t)block - (uintptr_t)mi_page_start(page);
  return (diff < (uintptr_t)capacity * page->block_size && diff % page->block_size == 0);
}
/* NULL, or exactly the start of a block below the page's capacity (owner thread). */
static inline bool mi_page_block_valid(const mi_page_t* page, const mi_block_t* block) {
  return mi_page_block_below(page, block, page->capacity);
}

#if MI_GUARDED > 0
/* A guarded object's block takes at least two OS pages (its header's and the guard) and its
   page is flagged has_aligned; a pointer into a page of other blocks is never one. */
#define MI_GUARDED_BLOCK_MIN  (2*MI_SECURE_GUARD_SIZE)
#define mi_page_may_have_guarded(page)  (mi_page_has_aligned(page) && (page)->block_size >= MI_GUARDED_BLOCK_MIN)
#endif
