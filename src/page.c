/* SPDX-License-Identifier: MIT */
/* Pages and page queues: free-list construction, collecting the local and thread free lists,
   moving pages between a heap's bin queues and its full queue, retiring empty pages, and the
   generic (slow-path) allocation that finds or makes a page with a free block. */
#include "internal/page.h"
#include "internal/heap.h"   /* hook: _mi_heap_fresh_page_taken */

/* small blocks' interior purge (_mi_page_purge_free_interiors): release builds without a
   memory checker, and not secure builds (no room for the mask in their descriptor) */
#if MI_DEBUG == 0 && !MI_TRACK_ENABLED && MI_SECURE == 0
#define MI_PAGE_PURGE_SMALL 1
#else
#define MI_PAGE_PURGE_SMALL 0
#endif

/* The empty page: free == NULL, so the fast path falls through to the slow path. */
const mi_page_t _mi_page_empty;

/* ------------------------------------------------------------------------------------------
   Bins
------------------------------------------------------------------------------------------ */
size_t _mi_page_bin_size(size_t bin) {
  if (bin <= 1) return sizeof(uintptr_t);
  if (bin < MI_BIN_FIRST_SPACED) return (bin - 1) * 2 * sizeof(uintptr_t);
  if (bin >= MI_BIN_HUGE_INTERNAL) return MI_LARGE_OBJ_SIZE_MAX + 1;
  const size_t k = bin - MI_BIN_FIRST_SPACED;
  const size_t b = 4 + k/8;
  return ((9 + (k % 8)) << (b - 3)) * sizeof(uintptr_t);
}

/* The block of the page that p points into (an interior pointer of an aligned block); here,
   below free.c, for the checks and trackers of the page layer (debug.c, track.c). */
mi_block_t* _mi_page_ptr_unalign(const mi_page_t* page, const void* p) {
  const size_t diff   = (size_t)((const uint8_t*)p - mi_page_start(page));
  const size_t adjust = diff % page->block_size;
  return (mi_block_t*)((uintptr_t)p - adjust);
}

/* ------------------------------------------------------------------------------------------
   Page queues
------------------------------------------------------------------------------------------ */
static bool mi_page_queue_is_huge(const mi_page_queue_t* pq) { return (pq->block_size == MI_LARGE_OBJ_SIZE_MAX + 1); }
static bool mi_page_queue_is_full(const mi_page_queue_t* pq) { return (pq->block_size == MI_LARGE_OBJ_SIZE_MAX + 2); }

/* the queue of the page's size class (whether or not the page is in the full queue) */
static mi_page_queue_t* mi_page_bin_queue(mi_heap_t* heap, const mi_page_t* page) {
  if (_mi_page_segment(page)->page_kind == MI_PAGE_HUGE) return &heap->pages[MI_BIN_HUGE_INTERNAL];
  return &heap->pages[_mi_bin(page->block_size)];
}

mi_page_queue_t* _mi_page_queue_of(const mi_page_t* page) {
  mi_heap_t* heap = mi_page_heap(page);
  mi_assert_internal(heap != NULL);
  if (mi_page_is_in_full(page)) return &heap->pages[MI_BIN_FULL];
  return mi_page_bin_queue(heap, page);
}

/* Keep the direct tables in sync with the first page of a medium or small bin queue (the real
   table: pages_free_direct itself, or the profiler's copy while pages_free_direct points at its
   proxies, types.h). */
static mi_decl_always_inline void mi_heap_queue_first_update(mi_heap_t* heap, const mi_page_queue_t* pq) {
  const size_t size = pq->block_size;
  if (size > MI_MEDIUM_OBJ_SIZE_MAX) return;
  if (heap->prof == NULL) heap->pages_medium_direct[pq - heap->pages] = pq->first;   /* (else the proxies) */
  if (size > MI_SMALL_SIZE_MAX) return;
  mi_page_t* page = (pq->first == NULL ? (mi_page_t*)&_mi_page_empty : pq->first);
  size_t idx = _mi_wsize_from_size(size);
  mi_page_t** const direct = mi_heap_direct_real(heap);
  if (direct[idx] == page) return;
  /* the word sizes served by this bin: from just above the previous bin's size up to idx */
  size_t start = 0;
  if (idx > 1) {
    start = 1 + _mi_wsize_from_size((pq - 1)->block_size);
    if (start > idx) start = idx;
  }
  for (size_t sz = start; sz <= idx; sz++) direct[sz] = page;
}

void _mi_page_queue_remove(mi_page_queue_t* pq, mi_page_t* page) {
  mi_heap_t* heap = mi_page_heap(page);
  mi_live_enter(heap->tld);
  if (page->prev != NULL) page->prev->next = page->next;
  if (page->next != NULL) page->next->prev = page->prev;
  if (page == pq->last) pq->last = page->prev;
  if (page == pq->first) {
    pq->first = page->next;
    mi_heap_queue_first_update(heap, pq);
  }
  heap->page_count--;
  page->next = NULL;
  page->prev = NULL;
  mi_page_set_in_full(page, false);
  mi_live_leave(heap->tld);
}

/* Push at the front: the most recently used page is found first. */
void _mi_page_queue_push(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  mi_assert_internal(mi_page_heap(page) == heap);
  mi_live_enter(heap->tld);
  mi_page_set_in_full(page, mi_page_queue_is_full(pq));
  page->next = pq->first;
  page->prev = NULL;
  if (pq->first != NULL) pq->first->prev = page;
  else pq->last = page;
  pq->first = page;
  mi_heap_queue_first_update(heap, pq);
  heap->page_count++;
  mi_live_leave(heap->tld);
}

static void mi_page_queue_enqueue_from(mi_page_queue_t* to, mi_page_queue_t* from, mi_page_t* page) {
  mi_heap_t* heap = mi_page_heap(page);
  mi_live_enter(heap->tld);
  _mi_page_queue_remove(from, page);
  /* append at the end so full or unfull pages don't hide the current allocation page */
  mi_page_set_in_full(page, mi_page_queue_is_full(to));
  page->prev = to->last;
  page->next = NULL;
  if (to->last != NULL) to->last->next = page;
  else { to->first = page; }
  to->last = page;
  if (to->first == page) mi_heap_queue_first_update(heap, to);
  heap->page_count++;
  mi_live_leave(heap->tld);
}

/* `page`, first of `pq`, ran out and another follows: it goes to the end of the queue, not to
   the full queue (mi_page_queue_find_free), so its owner's frees keep the fast path. */
static void mi_page_queue_rotate(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  mi_assert_internal(pq->first == page && page->next != NULL && pq->last != page);
  mi_live_enter(heap->tld);
  mi_page_t* const next = page->next;
  next->prev = NULL;
  pq->first = next;
  page->prev = pq->last;
  page->next = NULL;
  pq->last->next = page;
  pq->last = page;
  mi_heap_queue_first_update(heap, pq);
  mi_live_leave(heap->tld);
}

/* `full` (in the full queue) takes the place of `first`, the first page of bin queue `pq`, which
   takes full's place in the full queue `pqfull`: two moves at the cost of one
   (_mi_page_unfull_freed). */
static void mi_page_queue_swap(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* first, mi_page_queue_t* pqfull, mi_page_t* full) {
  mi_assert_internal(pq->first == first && first->prev == NULL && mi_page_is_in_full(full) && !mi_page_is_in_full(first));
  mi_live_enter(heap->tld);
  mi_page_t* const next = first->next;
  mi_page_t* const fprev = full->prev;
  mi_page_t* const fnext = full->next;
  full->prev = NULL;
  full->next = next;
  if (next != NULL) next->prev = full;
  else pq->last = full;
  pq->first = full;
  first->prev = fprev;
  first->next = fnext;
  if (fprev != NULL) fprev->next = first;
  else pqfull->first = first;
  if (fnext != NULL) fnext->prev = first;
  else pqfull->last = first;
  mi_page_set_in_full(full, false);
  mi_page_set_in_full(first, true);
  mi_heap_queue_first_update(heap, pq);
  mi_live_leave(heap->tld);
}

static void mi_page_queue_move_to_front(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page) {
  if (pq->first == page) return;
  _mi_page_queue_remove(pq, page);
  _mi_page_queue_push(heap, pq, page);
}

/* Move all pages of `append` (of another heap of this thread) to the end of `pq`; the pages
   get the new heap and the delayed-free state of their queue. Returns the number moved. */
size_t _mi_page_queue_append(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_queue_t* append) {
  size_t count = 0;
  const bool full = mi_page_queue_is_full(pq);
  const bool huge = mi_page_queue_is_huge(pq);
  for (mi_page_t* page = append->first; page != NULL; page = page->next) {
    mi_page_set_heap(page, heap);
    page->heap_tag = heap->tag;   /* the tag of the heap it belongs to now (types.h) */
    /* waits for any thread still pushing on the old heap's delayed list */
    _mi_page_use_delayed_free(page, (full || huge) ? MI_USE_DELAYED_FREE : MI_NO_DELAYED_FREE, true);
    mi_page_set_in_full(page, full);
    count++;
  }
  if (append->first == NULL) return 0;
  mi_live_enter(heap->tld);
  if (pq->last == NULL) {
    pq->first = append->first;
    pq->last = append->last;
    mi_heap_queue_first_update(heap, pq);
  }
  else {
    pq->last->next = append->first;
    append->first->prev = pq->last;
    pq->last = append->last;
  }
  heap->page_count += count;
  mi_live_leave(heap->tld);
  return count;
}

/* ------------------------------------------------------------------------------------------
   The delayed-free state (see mi_delayed_t in types.h)
------------------------------------------------------------------------------------------ */
static bool mi_page_try_use_delayed_free(mi_page_t* page, mi_delayed_t delay, bool override_never) {
  uintptr_t tfree = mi_atomic_load_acquire(&page->xthread_free);
  for (;;) {
    const mi_delayed_t old = mi_tf_delayed(tfree);
    if (mi_unlikely(old == MI_DELAYED_FREEING)) return false;   /* another thread is pushing */
    if (old == delay) return true;
    if (old == MI_NEVER_DELAYED_FREE && !override_never) return true;
    const uintptr_t tfreex = mi_tf_set_delayed(tfree, delay);
    if (mi_atomic_cas_weak_acq_rel(&page->xthread_free, &tfree, tfreex)) return true;
  }
}

void _mi_page_use_delayed_free(mi_page_t* page, mi_delayed_t delay, bool override_never) {
  size_t spins = 0;
  while (!mi_page_try_use_delayed_free(page, delay, override_never)) {
    if (++spins >= 4) mi_atomic_yield();   /* the pushing thread finishes in a few instructions */
  }
}

/* ------------------------------------------------------------------------------------------
   Collecting free lists
------------------------------------------------------------------------------------------ */
/* Take the whole thread_free list with one CAS (keeping the delayed state; an abandoned-form
   word keeps its form and count, which does not depend on the list); returns the word as it
   was (its block NULL: there was nothing to take). */
static inline uintptr_t mi_page_thread_free_take_ex(mi_page_t* page, bool maybe_abandoned) {
  uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  uintptr_t tfreex;
  do {
    if (mi_tf_block(tfree) == NULL) return tfree;
    tfreex = (maybe_abandoned && mi_tf_is_abandoned(tfree) ? (tfree & ~MI_TF_BLOCK_MASK) : mi_tf_make_empty(mi_tf_delayed(tfree)));
  } while (!mi_atomic_cas_weak_acq_rel(&page->xthread_free, &tfree, tfreex));
  return tfree;
}

/* The thread_free word of a page whose segment is being abandoned (by its owner, the page's
   delayed state MI_NEVER_DELAYED_FREE) to the abandoned form (page.h); returns the number
   of blocks still live. A list longer than `used` (a block freed twice) counts every block as
   live: the page then stays until reclaimed rather than being released under a live block. */
size_t _mi_page_tf_to_abandoned(mi_page_t* page) {
  uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  size_t live;
  do {
    mi_assert_internal(!mi_tf_is_abandoned(tfree) && mi_tf_delayed(tfree) == MI_NEVER_DELAYED_FREE);
    const size_t listed = mi_tf_count(tfree);
    live = (listed <= page->used ? page->used - listed : page->used);
  } while (!mi_atomic_cas_weak_acq_rel(&page->xthread_free, &tfree, mi_tf_with_count(tfree, MI_TF_ABANDONED_BASE - live, MI_TF_ABANDONED)));
  return live;
}

/* By the thread that took the page's segment off the abandoned list: the thread_free word back
   to the owned form, in state `delayed` (the count becomes the list length again). */
void _mi_page_tf_to_owned(mi_page_t* page, mi_delayed_t delayed) {
  uintptr_t tfree = mi_atomic_load_relaxed(&page->xthread_free);
  size_t listed;
  do {
    mi_assert_internal(mi_tf_is_abandoned(tfree));
    const size_t n = mi_tf_count(tfree) + page->used;   /* live = BASE - count; listed = used - live */
    listed = (n >= MI_TF_ABANDONED_BASE ? n - MI_TF_ABANDONED_BASE : 0);
  } while (!mi_atomic_cas_weak_acq_rel(&page->xthread_free, &tfree, mi_tf_with_count(tfree, listed, (uintptr_t)delayed)));
}

/* `count` blocks taken from the thread_free list are free again: adjust `used`. */
static void mi_page_thread_freed(mi_page_t* page, size_t count) {
  page->used -= (uint32_t)count;
  mi_live_count_freed(page, count);
  if (MI_STAT > 1) {
    mi_heap_t* heap = mi_page_heap(page);
    _mi_stat_blocks_freed(page, (heap == NULL ? NULL : heap->tld), count);
  }
}

/* Take the thread_free list and add it to local_free, walking it to find its end (and, in
   debug builds, to validate every link). Also for a page in abandoned form (its segment
   unowned, under the abandoned lock: visits, the leak report). */
static void mi_page_thread_free_collect(mi_page_t* page) {
  mi_block_t* head = mi_tf_block(mi_page_thread_free_take_ex(page, true));
  if (head == NULL) return;
  mi_block_t* tail = head;
  uint32_t count = 1;
  const uint32_t max_count = page->capacity;
  mi_block_t* next;
  while ((next = mi_block_next(page, tail)) != NULL && count <= max_count) {
#if MI_DEBUG > 0 || MI_SECURE > 0
    if (mi_unlikely(!mi_page_block_valid(page, next))) {
      _mi_secure_page_link_report(page, tail, next);
      return;   /* leak the list rather than corrupt the page */
    }
#endif
    count++;
    tail = next;
  }
  if (mi_unlikely(count > max_count)) {
    _mi_error_message(EFAULT, "corrupted thread-free list in page %p (block size %zu)\n", (void*)page, page->block_size);
    return;   /* leak the list rather than corrupt the page */
  }
  mi_block_set_next(page, tail, page->local_free);
  page->local_free = head;
  mi_page_thread_freed(page, count);
}

/* Debug builds collect by walking the lists, which validates every link at once. Secure builds
   take the thread_free list whole like release builds: each link is validated when malloc
   follows it (mi_page_link_ok), and walking the list cost xmalloc 40% and sh8bench 20% (a cache
   miss per block that another core freed). */
#define MI_COLLECT_WALKS  (MI_DEBUG > 0)

/* local_free becomes the free list when that is empty. */
static void mi_page_local_to_free(mi_page_t* page) {
  if (page->free == NULL && page->local_free != NULL) {
    page->free = page->local_free;
    page->local_free = NULL;
    page->free_is_zero = false;
  }
}

#if !MI_COLLECT_WALKS
/* Take the thread_free list of an owned page whole, with its length (mi_tf_count), in one
   atomic step, without walking it (a cache miss per block that another core wrote): into free
   if that is empty, else into local_free, which must be empty then. */
static void mi_page_thread_free_adopt(mi_page_t* page) {
  mi_assert_internal(page->free == NULL || page->local_free == NULL);
  const uintptr_t tfree = mi_page_thread_free_take_ex(page, false);   /* owned form only */
  mi_block_t* remote = mi_tf_block(tfree);
  if (remote == NULL) return;
  const size_t count = mi_tf_count(tfree);
  if (mi_unlikely(count == 0 || count > page->used)) {   /* a block freed twice, or a wild write */
    _mi_error_message(EFAULT, "corrupted thread-free list in page %p (block size %zu, %zu blocks for %u in use)\n",
                      (void*)page, page->block_size, count, page->used);
    return;   /* leak the list rather than corrupt the page */
  }
  mi_page_thread_freed(page, count);
  if (page->free == NULL) {
    page->free = remote;
    page->free_is_zero = false;
  }
  else {
    page->local_free = remote;
  }
}
#endif

/* Collect the thread_free list into local_free and local_free into free when free is empty;
   `force` also joins local_free to a non-empty free list. Release builds do not walk the
   thread_free list when free or local_free is empty (mi_page_thread_free_adopt): local_free
   (this thread's own frees, likely still in its cache) becomes the free list and the remote
   blocks the new local_free, or the free list itself. So remote-freed blocks are touched once,
   when they are handed out (the walks of the delayed frees into full pages and of the move of
   a page to the full queue were 5% of sh8bench's time for 1% of its instructions). */
void _mi_page_free_collect(mi_page_t* page, bool force) {
#if !MI_COLLECT_WALKS
  if (!force && (page->free == NULL || page->local_free == NULL)) {
    mi_page_local_to_free(page);
    mi_page_thread_free_adopt(page);
    return;
  }
#endif
  if (force || mi_page_thread_free(page) != NULL) {
    mi_page_thread_free_collect(page);
  }
  if (page->local_free == NULL) return;
  if (mi_likely(page->free == NULL)) {
    mi_page_local_to_free(page);
  }
  else if (force) {
    mi_block_t* tail = page->local_free;
    mi_block_t* next;
    size_t count = 0;
    while ((next = mi_block_next(page, tail)) != NULL) {
      if (mi_unlikely((MI_DEBUG > 0 || MI_SECURE > 0) && (!mi_page_block_valid(page, next) || ++count > page->capacity))) {
        _mi_secure_page_link_report(page, tail, next);
        page->local_free = NULL;   /* leak the list rather than corrupt the page */
        return;
      }
      tail = next;
    }
    mi_block_set_next(page, tail, page->free);
    page->free = page->local_free;
    page->local_free = NULL;
    page->free_is_zero = false;
  }
}

/* Give the OS pages inside free blocks back while the page holds live blocks (near the memory
   limit, and on mi_collect(true)): a page keeps its slots until its last block is freed, so a
   size class the program no longer asks for pins whole pages for a few survivors (limit-drift:
   574 MiB of pages for a 200 MiB live set). Owner only (its lists), release builds only (debug
   builds check the fill of free blocks), not under a memory checker. Two forms:
   - blocks of at least an OS page in pages of more than 16 OS pages (secure builds: in every
     page): of each free block of the page's own lists, the whole OS pages between its first
     two words (the link, and the mark below) and its padding are discarded (zero, or their old
     contents, when touched again: a free block's contents are undefined, and free_is_zero is
     dropped with the mark). The mark, MI_PAGE_INTERIOR_PURGED in the block's second word, keeps
     a block that stays free from being discarded again; an allocation overwrites it, or leaves
     it to read as garbage.
   - pages of at most 16 OS pages (small pages: blocks up to 8 KiB; not secure builds: no room
     in the descriptor for the mask), of any block size: a 5 KiB block holds no whole OS page
     past its link, so the form above gave back little of them (limit-drift: 157 MiB resident
     for 48 MiB live in such pages). An OS page wholly inside the blocks handed out (capacity)
     whose every block is free is discarded with the links of the blocks that start in it:
     those blocks leave the lists, and the page's interior_purged mask records the OS page
     (types.h). Blocks that start before it keep their link, and any tail they have there is
     undefined as free memory is. The blocks of the mask are listed again when an allocation
     finds the page's lists empty (mi_page_collect_for_alloc): before the page extends or
     counts as full.
   Returns the bytes discarded. */
#if MI_DEBUG == 0 && !MI_TRACK_ENABLED
#define MI_PAGE_INTERIOR_PURGED  ((uintptr_t)0x6d692d7075726764ULL)
static size_t mi_page_purge_list(mi_page_t* page, mi_block_t* list, size_t bsize, size_t os_page) {
  size_t purged = 0;
  size_t count = 0;
  for (mi_block_t* b = list; b != NULL && count <= page->capacity; b = mi_block_next(page, b), count++) {
    uintptr_t* const mark = (uintptr_t*)b + 1;
    if (*mark == MI_PAGE_INTERIOR_PURGED) continue;
    const uintptr_t start = _mi_align_up((uintptr_t)b + 2 * sizeof(uintptr_t), os_page);
    const uintptr_t end = _mi_align_down((uintptr_t)b + bsize - MI_PADDING_SIZE, os_page);
    if (end <= start) continue;
    _mi_os_discard((void*)start, end - start);
    *mark = MI_PAGE_INTERIOR_PURGED;
    purged += end - start;
  }
  return purged;
}
#endif

static void mi_map_set(uintptr_t* map, size_t i) { map[i / MI_PAGE_MAP_BITS] |= (uintptr_t)1 << (i % MI_PAGE_MAP_BITS); }

bool _mi_page_free_map(const mi_page_t* page, const mi_block_t* extra, uintptr_t* map) {
  const size_t capacity = page->capacity;
  if (capacity > MI_PAGE_MAP_BLOCKS) return false;
  memset(map, 0, _mi_divide_up(capacity, MI_PAGE_MAP_BITS) * sizeof(uintptr_t));
  const uint8_t* const start = mi_page_start(page);
  for (int l = 0; l < 3; l++) {
    size_t count = 0;
    for (const mi_block_t* b = (l == 0 ? page->free : l == 1 ? page->local_free : extra); b != NULL && count <= capacity; b = mi_block_next(page, b), count++) {
      const size_t i = (size_t)((const uint8_t*)b - start) / page->block_size;
      if (i < capacity) mi_map_set(map, i);
    }
  }
  _mi_page_purged_mark(page, map);
  return true;
}

#if MI_PAGE_PURGE_SMALL

/* The blocks that start in the OS pages of `pages` (a mask as interior_purged): calls
   visit(page, index, arg) for each, returns their number. */
static size_t mi_page_mask_blocks(const mi_page_t* page, unsigned pages, void (*visit)(mi_page_t*, size_t, void*), void* arg) {
  const size_t os_page = _mi_os_page_size();
  const uintptr_t start = (uintptr_t)mi_page_start(page);
  const uintptr_t base = _mi_align_down(start, os_page);
  const size_t bsize = page->block_size;
  size_t n = 0;
  for (unsigned m = pages; m != 0; m &= m - 1) {
    const uintptr_t lo = base + (size_t)__builtin_ctz(m) * os_page;   /* (>= start: wholly inside the blocks) */
    for (size_t i = _mi_divide_up(lo - start, bsize); i < page->capacity && start + i * bsize < lo + os_page; i++) {
      if (visit != NULL) visit((mi_page_t*)page, i, arg);
      n++;
    }
  }
  return n;
}

static void mi_page_mark_block(mi_page_t* page, size_t i, void* map) { (void)page; mi_map_set((uintptr_t*)map, i); }

size_t _mi_page_purged_mark(const mi_page_t* page, uintptr_t* map) {
  if (page->interior_purged == 0) return 0;
  return mi_page_mask_blocks(page, page->interior_purged, (map != NULL ? &mi_page_mark_block : NULL), map);
}

static void mi_page_relist_block(mi_page_t* page, size_t i, void* arg) {
  (void)arg;
  mi_block_t* const b = (mi_block_t*)(mi_page_start(page) + i * page->block_size);
  mi_block_set_next(page, b, page->free);
  page->free = b;
}

/* The owner's allocation found the lists empty: the purged blocks are listed again (their
   OS pages fault in, zero). */
static mi_decl_noinline void mi_page_purged_relist(mi_page_t* page) {
  mi_page_mask_blocks(page, page->interior_purged, &mi_page_relist_block, NULL);
  page->interior_purged = 0;
  page->free_is_zero = false;
}

/* Drop from `list` the blocks that start in the OS pages of `pages`, keeping the others in
   order. */
static mi_block_t* mi_page_list_drop(mi_page_t* page, mi_block_t* list, uintptr_t base, size_t os_page, unsigned pages) {
  mi_block_t* head = NULL;
  mi_block_t* tail = NULL;
  size_t count = 0;
  for (mi_block_t* b = list; b != NULL && count <= page->capacity; count++) {
    mi_block_t* const next = mi_block_next(page, b);
    const uintptr_t j = ((uintptr_t)b - base) / os_page;
    if (j >= 8 * sizeof(pages) || ((pages >> j) & 1) == 0) {
      if (tail == NULL) head = b;
      else mi_block_set_next(page, tail, b);
      tail = b;
    }
    b = next;
  }
  if (tail != NULL) mi_block_set_next(page, tail, NULL);
  return head;
}

static size_t mi_page_purge_masked(mi_page_t* page, size_t os_page) {
  const uintptr_t start = (uintptr_t)mi_page_start(page);
  const uintptr_t base = _mi_align_down(start, os_page);
  const size_t bsize = page->block_size;
  const size_t capacity = page->capacity;
  const uintptr_t end = start + capacity * bsize;   /* the blocks handed out so far */
  const size_t pages = (_mi_align_up(start + (size_t)page->reserved * bsize, os_page) - base) / os_page;
  uintptr_t map[MI_PAGE_MAP_WORDS];   /* the free blocks */
  if (pages > 8 * sizeof(page->interior_purged) || !_mi_page_free_map(page, NULL, map)) return SIZE_MAX;
  unsigned add = 0;
  for (size_t j = 0; j < pages; j++) {
    const uintptr_t lo = base + j * os_page;
    if (lo < start || lo + os_page > end || ((page->interior_purged >> j) & 1) != 0) continue;
    bool all_free = true;
    for (size_t i = (lo - start) / bsize; all_free && i <= (lo + os_page - 1 - start) / bsize; i++) all_free = mi_page_map_get(map, i);
    if (all_free) add |= 1u << j;
  }
  if (add == 0) return 0;
  page->free = mi_page_list_drop(page, page->free, base, os_page, add);
  page->local_free = mi_page_list_drop(page, page->local_free, base, os_page, add);
  page->interior_purged = (uint16_t)(page->interior_purged | add);
  page->free_is_zero = false;
  size_t purged = 0;
  for (unsigned m = add; m != 0; ) {   /* one call per run of adjacent OS pages */
    const size_t j = (size_t)__builtin_ctz(m);
    size_t k = j;
    while (k < pages && ((m >> k) & 1) != 0) k++;
    _mi_os_discard((void*)(base + j * os_page), (k - j) * os_page);
    purged += (k - j) * os_page;
    m &= ~(((1u << (k - j)) - 1) << j);
  }
  return purged;
}
#else
size_t _mi_page_purged_mark(const mi_page_t* page, uintptr_t* map) {
  (void)page; (void)map;
  return 0;
}
#endif

#if MI_DEBUG == 0 && !MI_TRACK_ENABLED
size_t _mi_page_purge_free_interiors(mi_page_t* page) {
  const size_t os_page = _mi_os_page_size();
  const size_t bsize = page->block_size;
  if (page->used == 0 || page->free_is_zero) return 0;
#if MI_SECURE == 0
  /* a page with no more free blocks than at the last look has nothing new to give back, or
     little (blocks taken and freed again since): the walks cost a cache miss per free block,
     and near the limit every page is looked at on every periodic collect */
  if (page->interior_used != 0 && page->used + 1 >= page->interior_used) return 0;
  page->interior_used = (uint16_t)(page->used + 1);
#endif
#if MI_PAGE_PURGE_SMALL
  const size_t purged = mi_page_purge_masked(page, os_page);
  if (purged != SIZE_MAX) return purged;
#endif
  if (bsize < os_page) return 0;   /* (no whole OS page inside a block) */
  return mi_page_purge_list(page, page->free, bsize, os_page) + mi_page_purge_list(page, page->local_free, bsize, os_page);
}
#else
size_t _mi_page_purge_free_interiors(mi_page_t* page) {
  (void)page;
  return 0;
}
#endif

/* The owner, in a collect: give back the OS pages of the page's slot past its capacity that an
   earlier page of the warm slot left resident, up to where its blocks ended (tail_dirty). Looks
   (not MI_TRIM_NOW) take them once the capacity did not grow since the last look, so a growing
   page does not fault them in again (larson: peak RSS 12.7 -> 9.8 MiB); no call when the
   capacity covers them; pages of one block too (a 160 KiB block in a 256 KiB span). Periodic
   looks leave tails under MI_TRIM_PERIODIC_MIN: they gave no peak RSS back in any synthetic
   workload (larson's: 48 KiB and more) and were most calls of mstress -t 32 (early second looks
   at ended threads' pages, taken over). */
void _mi_page_trim_tail(mi_page_t* page, mi_trim_t how) {
#if MI_PAGE_PURGE_SMALL
  if (mi_likely(page->tail_dirty == 0)) return;
  if (page->capacity >= page->reserved && page->reserved > 1) return;   /* (full: a block's remainder at most) */
  size_t area_size;
  uint8_t* const area = _mi_segment_page_area(_mi_page_segment(page), page, &area_size);
  const size_t os_page = _mi_os_page_size();
  const uintptr_t start = _mi_align_up(mi_page_blocks_end(page), os_page);
  uintptr_t end = _mi_align_down((uintptr_t)area + area_size, os_page);
  if (page->tail_dirty != MI_PAGE_TAIL_ALL) {
    const uintptr_t dirty_end = _mi_align_down((uintptr_t)area, os_page) + (size_t)page->tail_dirty * os_page;
    if (dirty_end < end) end = dirty_end;
  }
  if (start >= end) {   /* its blocks cover what the earlier page left */
    page->tail_dirty = 0;
    return;
  }
  if (how == MI_TRIM_PERIODIC && end - start < MI_TRIM_PERIODIC_MIN) return;
  const uint16_t seen = (uint16_t)(page->capacity + 1);
  if (how != MI_TRIM_NOW && page->tail_seen != seen) {
    page->tail_seen = seen;
    return;
  }
  page->tail_dirty = 0;
  _mi_os_discard((void*)start, end - start);
#else
  (void)page; (void)how;
#endif
}

/* For an allocation from a page whose free list is empty: _mi_page_free_collect's release
   path, inlined here (a page with free blocks is left alone); checked builds collect, and
   validate, every time. */
static void mi_page_collect_for_alloc(mi_page_t* page) {
#if MI_COLLECT_WALKS
  _mi_page_free_collect(page, false);
#else
  if (page->free != NULL) return;
  mi_page_local_to_free(page);
  mi_page_thread_free_adopt(page);
#endif
#if MI_PAGE_PURGE_SMALL
  if (mi_unlikely(page->free == NULL && page->interior_purged != 0)) mi_page_purged_relist(page);
#endif
}

/* ------------------------------------------------------------------------------------------
   Page initialisation and lazy free-list extension
------------------------------------------------------------------------------------------ */
#if MI_SECURE > 0
static size_t mi_gcd(size_t a, size_t b) {
  while (b != 0) { const size_t t = a % b; a = b; b = t; }
  return a;
}
#endif

/* Make further blocks available, in address order (secure builds: in a random order): those
   that start before the first 4 KiB boundary at least 2 KiB on (MI_MAX_EXTEND_SIZE). The links
   written touch no OS page beyond the blocks handed out, so a size class with a few blocks
   keeps one OS page resident, not two, and a class of big blocks one block's first page, not
   four. */
static void mi_page_extend_free(mi_page_t* page) {
  mi_assert_internal(page->free == NULL && page->local_free == NULL);
  if (page->capacity >= page->reserved) return;
  const size_t bsize = page->block_size;
  uint8_t* start = (uint8_t*)mi_page_blocks_end(page);
  const uintptr_t end = _mi_align_up((uintptr_t)start + MI_MAX_EXTEND_SIZE/2, MI_MAX_EXTEND_SIZE);
  size_t max_extend = _mi_divide_up(end - (uintptr_t)start, bsize);
  if (max_extend < MI_MIN_EXTEND) max_extend = MI_MIN_EXTEND;
  size_t extend = page->reserved - page->capacity;
  if (extend > max_extend) extend = max_extend;
  mi_block_t* first = (mi_block_t*)start;
#if MI_SECURE > 0
  if (extend > 2) {
    /* secure builds hand the new blocks out in an order the program cannot predict: start at
       a random block and step by a random stride coprime with their number (so an overflow
       does not know which block follows its own) */
    const uintptr_t r = _mi_random_shuffle(page->keys[0] + page->capacity);
    size_t step = 1 + (size_t)(r % (extend - 1));
    while (mi_gcd(step, extend) != 1) step = (step + 1 < extend ? step + 1 : 1);
    size_t idx = (size_t)((r >> 32) % extend);
    first = (mi_block_t*)(start + idx * bsize);
    mi_block_t* block = first;
    for (size_t i = 1; i < extend; i++) {
      idx += step;
      if (idx >= extend) idx -= extend;
      mi_block_t* next = (mi_block_t*)(start + idx * bsize);
      mi_block_set_next(page, block, next);
      block = next;
    }
    mi_block_set_next(page, block, NULL);
  }
  else
#endif
  {
    mi_block_t* block = first;
    for (size_t i = 1; i < extend; i++) {
      mi_block_t* next = (mi_block_t*)((uint8_t*)block + bsize);
      mi_block_set_next(page, block, next);
      block = next;
    }
    mi_block_set_next(page, block, NULL);
  }
  page->free = first;
  /* atomic (a plain store on common targets): checked frees read it from other threads
     (mi_page_capacity_any) */
  atomic_store_explicit((_Atomic(uint32_t)*)&page->capacity, page->capacity + (uint32_t)extend, memory_order_relaxed);
  page->free_is_zero = page->is_zero_init;
#if MI_DEBUG > 0
  _mi_debug_fill_new_blocks(page, start, extend);
#endif
  mi_os_stat_increase(page_committed, extend * bsize);
  mi_stat_counter_increase(mi_page_heap(page)->tld, pages_extended, 1);
}

/* Set up a page fresh from its segment for blocks of `block_size` in `heap`. */
void _mi_page_init_fresh(mi_heap_t* heap, mi_page_t* page, size_t block_size) {
  mi_segment_t* segment = _mi_page_segment(page);
  mi_page_set_heap(page, heap);   /* (also abandon_lists: the slot's purge_expire until now, types.h) */
  page->heap_tag = heap->tag;
#if MI_REMOTE_BATCH
  /* others may hold back frees of its small blocks (remote.c); not in a heap that
     mi_heap_destroy may free wholesale under them */
  const bool batch = (!heap->allow_destroy && segment->page_kind != MI_PAGE_HUGE && block_size <= MI_REMOTE_BATCH_SIZE_MAX);
  page->remote_batch = (uint8_t)(batch ? (MI_REMOTE_BATCH_BYTES / block_size < 32 ? MI_REMOTE_BATCH_BYTES / block_size : 32) : 0);
#endif
#if MI_SECURE > 0
  _mi_secure_page_init_keys(page);   /* before the first link is written */
#endif
  if (segment->page_kind == MI_PAGE_HUGE) {
    /* start and block size were set by the segment; one block */
#if MI_SECURE > 0
    page->block_magic = mi_block_magic_of(page->block_size);
#endif
    page->reserved = 1;
    page->capacity = 1;
    mi_track_mem_noaccess(mi_page_start(page), page->block_size);   /* until it is handed out */
    page->free = (mi_block_t*)mi_page_start(page);
    mi_block_set_next(page, page->free, NULL);
    page->free_is_zero = page->is_zero_init;
    mi_atomic_store_release(&page->xthread_free, mi_tf_make_empty(MI_USE_DELAYED_FREE));
    if (mi_unlikely(mi_live_enabled())) mi_page_flag_set(page, MI_PAGE_FREE_HOOK, true);
    mi_os_stat_increase(page_committed, page->block_size);
    if (MI_STAT > 1) mi_os_stat_increase(page_bins[MI_BIN_HUGE_INTERNAL], 1);
    return;
  }
  if (MI_STAT > 1) mi_os_stat_increase(page_bins[_mi_bin(block_size)], 1);
  page->block_size = block_size;
#if MI_SECURE > 0
  page->block_magic = mi_block_magic_of(block_size);
#endif
  size_t page_size;
  mi_page_set_start(page, _mi_segment_page_start(segment, page, &page_size));
  page->reserved = (uint32_t)(page_size / block_size);
  mi_assert_internal(page->reserved > 0);
#if MI_TRACK_ENABLED
  {  /* blocks become accessible when handed out; the room before the first one never does */
    size_t area_size;
    uint8_t* area = _mi_segment_page_area(segment, page, &area_size);
    mi_track_mem_noaccess(area, area_size);
  }
#endif
  page->capacity = 0;
#if MI_PAGE_PURGE_SMALL
  if (page->is_zero_init) page->tail_dirty = 0;   /* (else the slot's: segment.c; tail_seen: 0, as the slot's descriptor was cleared) */
#endif
  page->used = 0;
  page->free = NULL;
  page->local_free = NULL;
  mi_page_flags_clear(page);
  if (mi_unlikely(mi_live_enabled())) mi_page_flag_set(page, MI_PAGE_FREE_HOOK, true);   /* live.c */
  page->retire_expire = 0;
  mi_atomic_store_release(&page->xthread_free, mi_tf_make_empty(MI_NO_DELAYED_FREE));
  mi_page_extend_free(page);
}

/* ------------------------------------------------------------------------------------------
   Full pages, retiring and freeing pages
------------------------------------------------------------------------------------------ */
void _mi_page_to_full(mi_page_t* page, mi_page_queue_t* pq) {
  mi_heap_t* heap = mi_page_heap(page);
  _mi_page_use_delayed_free(page, MI_USE_DELAYED_FREE, false);
  mi_page_queue_enqueue_from(&heap->pages[MI_BIN_FULL], pq, page);
  /* a thread may have freed just before the state changed: look once more */
  _mi_page_free_collect(page, false);
}

static void mi_page_unfull_ex(mi_page_t* page, bool freed) {
  if (!mi_page_is_in_full(page)) return;
  mi_heap_t* heap = mi_page_heap(page);
  mi_page_queue_t* pqfull = &heap->pages[MI_BIN_FULL];
  mi_page_queue_t* const pq = mi_page_bin_queue(heap, page);
  mi_page_t* const first = pq->first;
  if (!freed || (first != NULL && (first->free != NULL || first->local_free != NULL || first->capacity < first->reserved))) {
    _mi_page_use_delayed_free(page, MI_NO_DELAYED_FREE, false);
    mi_page_queue_enqueue_from(pq, pqfull, page);
    return;
  }
  /* The owner freed into this full page and the first page of its class has no block to give
     (none free, none to extend): that one goes to the full queue, as the next search would send
     it, and this one takes its place, so the next malloc takes the block on its fast path
     (docs/design.md, "Full pages"). This page keeps its delayed-free state: such pages go full
     again soon, and each change is a locked CAS (types.h: slower for one remote free, never wrong). */
  page->retire_expire = 0;
  if (first == NULL) {   /* (an empty queue: its end is its front) */
    mi_page_queue_enqueue_from(pq, pqfull, page);
    return;
  }
  _mi_page_use_delayed_free(first, MI_USE_DELAYED_FREE, false);   /* (as _mi_page_to_full; no CAS if it kept that state) */
  mi_page_queue_swap(heap, pq, first, pqfull, page);
  /* a thread may have freed into it just before its state changed: look once more */
  _mi_page_free_collect(first, false);
  if (mi_page_immediate_available(first)) mi_page_unfull_ex(first, false);
}

void _mi_page_unfull(mi_page_t* page) { mi_page_unfull_ex(page, false); }
void _mi_page_unfull_freed(mi_page_t* page) { mi_page_unfull_ex(page, true); }

/* Return an empty page to its segment. */
void _mi_page_free(mi_page_t* page, mi_page_queue_t* pq) {
  mi_assert_internal(page->used == 0);
  mi_heap_t* heap = mi_page_heap(page);
  _mi_page_use_delayed_free(page, MI_NEVER_DELAYED_FREE, false);
  _mi_page_queue_remove(pq, page);
  mi_page_set_heap(page, NULL);
  _mi_segment_page_free(page, heap->tld);
}

/* Detach a page with live blocks from its heap: at thread exit, and on mi_heap_delete of a heap
   whose arena no other heap of the thread uses. */
void _mi_page_abandon(mi_page_t* page, mi_page_queue_t* pq) {
  mi_heap_t* heap = mi_page_heap(page);
  mi_tld_t* tld = heap->tld;
  if (mi_unlikely(mi_live_enabled())) _mi_observe_page_move(page, tld, NULL);   /* its blocks leave the thread's figures */
  _mi_page_use_delayed_free(page, MI_NEVER_DELAYED_FREE, false);
  _mi_page_queue_remove(pq, page);
  mi_page_set_heap(page, NULL);
  /* frees leave the fast path: a page without heap only takes frees on its thread_free list
     (also from this thread, after mi_heap_delete of an arena heap) */
  mi_page_set_in_full(page, true);
  _mi_abandoned_add_page(page, tld, heap->pages_lists);   /* its heap's own lists, if any (types.h) */
}

/* Free a page with the blocks it still counts in use: they die with it (mi_heap_destroy) or
   were all free already (a page the purger emptied); either way they count as freed. */
void _mi_page_free_all(mi_page_t* page, mi_page_queue_t* pq) {
  mi_page_thread_freed(page, page->used);
  page->free = NULL;
  page->local_free = NULL;
  _mi_page_free(page, pq);
}

/* By the owner: a page the purger emptied (above) goes back to its segment. */
void _mi_page_free_emptied(mi_page_t* page, mi_page_queue_t* pq) {
  mi_assert_internal(mi_tf_is_emptied(mi_atomic_load_relaxed(&page->xthread_free)));
  mi_atomic_store_release(&page->xthread_free, mi_tf_make_empty(MI_NO_DELAYED_FREE));
  _mi_page_free_all(page, pq);
}

/* A page became empty. If it is the only page of its size class, keep it for a few heartbeats
   (allocation patterns often free and re-allocate right away); otherwise free it now. */
void _mi_page_retire(mi_page_t* page) {
  mi_assert_expensive(_mi_observe_check(MI_CHECK_PAGE, page, NULL));
  mi_heap_t* heap = mi_page_heap(page);
  mi_stat_counter_increase(heap->tld, pages_retire, 1);
  mi_page_set_has_aligned(page, false);
  mi_page_queue_t* pq = _mi_page_queue_of(page);
  if (mi_likely(page->block_size <= MI_MEDIUM_OBJ_SIZE_MAX && !mi_page_queue_is_full(pq) &&
                pq->last == page && pq->first == page)) {
    page->retire_expire = (page->block_size <= MI_SMALL_OBJ_SIZE_MAX ? 16 : 4);
    const size_t index = (size_t)(pq - heap->pages);
    if (index < heap->page_retired_min) heap->page_retired_min = index;
    if (index > heap->page_retired_max) heap->page_retired_max = index;
    return;
  }
  _mi_page_free(page, pq);
}

/* Free retired pages whose time is up (or all of them when forced). */
void _mi_page_collect_retired(mi_heap_t* heap, bool force) {
  size_t min = MI_BIN_FULL;
  size_t max = 0;
  for (size_t bin = heap->page_retired_min; bin <= heap->page_retired_max && bin < MI_BIN_FULL; bin++) {
    mi_page_queue_t* pq = &heap->pages[bin];
    mi_page_t* page = pq->first;
    if (page != NULL && page->retire_expire != 0) {
      if (mi_page_all_free(page)) {
        page->retire_expire--;
        if (force || page->retire_expire == 0) {
          _mi_page_free(page, pq);
        }
        else {
          if (bin < min) min = bin;
          if (bin > max) max = bin;
        }
      }
      else {
        page->retire_expire = 0;
      }
    }
  }
  heap->page_retired_min = min;
  heap->page_retired_max = max;
}

/* ------------------------------------------------------------------------------------------
   Finding a page with a free block
------------------------------------------------------------------------------------------ */
static mi_page_t* mi_page_fresh(mi_heap_t* heap, mi_page_queue_t* pq, bool busy) {
  _mi_heap_fresh_page_taken(heap);   /* may give back pages others emptied: slots for this one */
  mi_page_t* page = _mi_segment_page_alloc(heap, pq->block_size, 0, 0, busy);
  if (page == NULL) return NULL;
  mi_sched_point(MI_SCHED_PAGE_FRESH);   /* claimed, not yet set up nor in the heap */
  _mi_page_init_fresh(heap, page, pq->block_size);
  _mi_page_queue_push(heap, pq, page);
  return page;
}

/* Walk the queue: collect each page's free lists, extend pages with unused capacity, move pages
   without free blocks to the full queue (the first MI_PAGE_ROTATE_MAX to its end instead: a few
   full pages per class stay, docs/design.md "Full pages"); a fresh page when none has space. */
#define MI_PAGE_ROTATE_MAX  (3)
static mi_page_t* mi_page_queue_find_free(mi_heap_t* heap, mi_page_queue_t* pq, bool first_try) {
  mi_page_t* page = pq->first;
  size_t searched = 0;
  while (page != NULL) {
    mi_page_t* next = page->next;
    searched++;
    mi_page_collect_for_alloc(page);
    if (mi_page_immediate_available(page)) break;
    if (page->capacity < page->reserved) {
      mi_page_extend_free(page);
      break;
    }
    if (searched <= MI_PAGE_ROTATE_MAX && next != NULL) {   /* (so far each page met was the first) */
      mi_page_queue_rotate(heap, pq, page);
      page = next;
      continue;
    }
    _mi_page_to_full(page, pq);
    mi_sched_point(MI_SCHED_PAGE_FULL);   /* others' frees now take the delayed path */
    if (mi_page_immediate_available(page)) {   /* a late cross-thread free arrived */
      _mi_page_unfull(page);
      break;
    }
    page = next;
  }
  mi_stat_counter_increase(heap->tld, page_searches, searched);
  mi_stat_counter_increase(heap->tld, page_searches_count, 1);
  if (page == NULL) {
    _mi_page_collect_retired(heap, false);
    /* an ended thread's page of this class with room comes before a fresh page */
    if (first_try && _mi_abandoned_reclaim_for_bin(heap, mi_heap_own_lists(heap), pq->block_size)) {
      return mi_page_queue_find_free(heap, pq, false);
    }
    page = mi_page_fresh(heap, pq, searched > 0);   /* busy: its pages were all full */
    if (page == NULL && first_try) return mi_page_queue_find_free(heap, pq, false);
  }
  else {
    mi_page_queue_move_to_front(heap, pq, page);
    page->retire_expire = 0;
  }
  return page;
}

/* The class's first page with a free block (its lists collected); or NULL. */
mi_page_t* _mi_page_first_available(mi_heap_t* heap, size_t size) {
  mi_page_t* page = heap->pages[_mi_bin(size)].first;
  if (page == NULL) return NULL;
  mi_page_collect_for_alloc(page);
  if (!mi_page_immediate_available(page)) return NULL;
  page->retire_expire = 0;
  return page;
}

/* The first page ran out (_mi_page_first_available): the next one if it has a block (rotated). */
mi_page_t* _mi_page_next_available(mi_heap_t* heap, size_t size) {
  mi_page_queue_t* const pq = &heap->pages[_mi_bin(size)];
  mi_page_t* const page = pq->first;
  mi_assert_internal(page == NULL || !mi_page_immediate_available(page));   /* (collected there) */
  if (page == NULL || page->next == NULL || page->capacity < page->reserved) return NULL;
  mi_page_t* const next = page->next;
  mi_page_collect_for_alloc(next);
  if (!mi_page_immediate_available(next)) return NULL;
  mi_page_queue_rotate(heap, pq, page);
  next->retire_expire = 0;
  return next;
}

static mi_page_t* mi_find_free_page(mi_heap_t* heap, size_t size) {
  mi_page_t* page = _mi_page_first_available(heap, size);
  if (page != NULL) return page;
  return mi_page_queue_find_free(heap, &heap->pages[_mi_bin(size)], true);
}

static mi_page_t* mi_huge_page_alloc(mi_heap_t* heap, size_t size, size_t alignment, size_t align_offset) {
  mi_page_t* page = _mi_segment_page_alloc(heap, size, alignment, align_offset, false);
  if (page == NULL) return NULL;
  _mi_page_init_fresh(heap, page, page->block_size);
  _mi_page_queue_push(heap, &heap->pages[MI_BIN_HUGE_INTERNAL], page);
  return page;
}

mi_page_t* _mi_page_find(mi_heap_t* heap, size_t size, size_t huge_alignment, size_t align_offset) {
  if (mi_unlikely(size > MI_LARGE_OBJ_SIZE_MAX || huge_alignment > 0)) {
    if (mi_unlikely(size > MI_MAX_ALLOC_SIZE)) {
      _mi_error_message(EOVERFLOW, "allocation request is too large (%zu bytes)\n", size);
      return NULL;
    }
    return mi_huge_page_alloc(heap, size, huge_alignment, align_offset);
  }
  return mi_find_free_page(heap, size);
}
