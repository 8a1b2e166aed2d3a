/* Segments: 4 MiB-aligned regions that hold page descriptors and pages (see types.h).
   This file owns segment allocation and release, the page slots inside a segment, the segment
   map (which 4 MiB chunks are ours), the cache of empty segments, and abandonment/reclaim of
   segments of threads that have ended. */
#include "internal/internal.h"

/* ------------------------------------------------------------------------------------------
   Segment maps, zero-initialised data only touched where we have segments:
   - _mi_segment_map_start (internal.h): a byte per chunk where one of our segments starts,
     holding its page_shift; free and usable_size check it, so pointers that are not ours,
     including the inside of a huge block beyond its first chunk, are never dereferenced;
   - mi_segment_map_covered: a bit per chunk covered by one of our segments
     (mi_is_in_heap_region).
   Entries are set before a segment hands out blocks and cleared before it is released.
------------------------------------------------------------------------------------------ */
_Atomic(uint8_t) _mi_segment_map_start[MI_SEGMENT_MAP_CHUNKS];
static _Atomic(uintptr_t) mi_segment_map_covered[MI_SEGMENT_MAP_CHUNKS / MI_INTPTR_BITS];

static bool mi_segment_map_can_hold(const void* start, size_t size) {
  return ((uintptr_t)start + size - 1) >> MI_SEGMENT_SHIFT < MI_SEGMENT_MAP_CHUNKS;
}

static void mi_segment_map_set(const mi_segment_t* segment, bool on) {
  mi_assert_internal(mi_segment_map_can_hold(segment, segment->segment_size));
  const uintptr_t start = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  const uintptr_t end   = ((uintptr_t)segment + segment->segment_size - 1) >> MI_SEGMENT_SHIFT;
  mi_atomic_store_release(&_mi_segment_map_start[start], (uint8_t)(on ? segment->page_shift : 0));
  for (uintptr_t chunk = start; chunk <= end; chunk++) {
    const uintptr_t bit = (uintptr_t)1 << (chunk % MI_INTPTR_BITS);
    _Atomic(uintptr_t)* word = &mi_segment_map_covered[chunk / MI_INTPTR_BITS];
    if (on) mi_atomic_or_acq_rel(word, bit);
    else    mi_atomic_and_acq_rel(word, ~bit);
  }
}

/* Fresh segment memory from the OS, refused (so the allocation fails) in the unlikely case
   that the OS places it beyond the address range of the maps. */
static mi_segment_t* mi_segment_os_alloc(size_t size, size_t alignment, size_t align_offset) {
  void* p = _mi_os_alloc_aligned_at(size, alignment, align_offset, NULL);
  if (p != NULL && !mi_segment_map_can_hold(p, size)) {
    _mi_warning_message("the OS returned memory at %p, beyond the %d-bit range this allocator maps\n", p, MI_SEGMENT_MAP_ADDR_BITS);
    _mi_os_free(p, size);
    return NULL;
  }
  return (mi_segment_t*)p;
}

bool _mi_segment_map_covers(const void* p) {
  const uintptr_t chunk = (uintptr_t)p >> MI_SEGMENT_SHIFT;
  if (chunk >= MI_SEGMENT_MAP_CHUNKS) return false;
  const uintptr_t word = mi_atomic_load_relaxed(&mi_segment_map_covered[chunk / MI_INTPTR_BITS]);
  return ((word >> (chunk % MI_INTPTR_BITS)) & 1) != 0;
}

static _Atomic(uintptr_t) mi_segment_cookie_key;

uintptr_t _mi_segment_cookie(const mi_segment_t* segment) {
  uintptr_t key = mi_atomic_load_relaxed(&mi_segment_cookie_key);
  if (mi_unlikely(key == 0)) {
    uintptr_t expected = 0;
    key = _mi_random_next() | 1;
    if (!mi_atomic_cas_strong_acq_rel(&mi_segment_cookie_key, &expected, key)) key = expected;
  }
  return ((uintptr_t)segment ^ key);
}

/* ------------------------------------------------------------------------------------------
   The thread's queues of small and medium segments with free pages
------------------------------------------------------------------------------------------ */
static mi_segment_queue_t* mi_segment_free_queue(mi_page_kind_t kind, mi_tld_t* tld) {
  if (kind == MI_PAGE_SMALL)  return &tld->segments.small_free;
  if (kind == MI_PAGE_MEDIUM) return &tld->segments.medium_free;
  return NULL;
}

static void mi_segment_queue_remove(mi_segment_queue_t* queue, mi_segment_t* segment) {
  if (!segment->in_free_queue) return;
  if (segment->prev != NULL) segment->prev->next = segment->next;
  if (segment->next != NULL) segment->next->prev = segment->prev;
  if (segment == queue->first) queue->first = segment->next;
  if (segment == queue->last)  queue->last = segment->prev;
  segment->next = NULL;
  segment->prev = NULL;
  segment->in_free_queue = false;
}

static void mi_segment_queue_push(mi_segment_queue_t* queue, mi_segment_t* segment) {
  if (segment->in_free_queue) return;
  segment->next = NULL;
  segment->prev = queue->last;
  if (queue->last != NULL) queue->last->next = segment;
  else queue->first = segment;
  queue->last = segment;
  segment->in_free_queue = true;
}

static void mi_segment_remove_from_free_queue(mi_segment_t* segment, mi_tld_t* tld) {
  mi_segment_queue_t* queue = mi_segment_free_queue(segment->page_kind, tld);
  if (queue != NULL) mi_segment_queue_remove(queue, segment);
}

static void mi_segment_insert_in_free_queue(mi_segment_t* segment, mi_tld_t* tld) {
  mi_segment_queue_t* queue = mi_segment_free_queue(segment->page_kind, tld);
  if (queue != NULL) mi_segment_queue_push(queue, segment);
}

/* ------------------------------------------------------------------------------------------
   Cache of empty standard-size segments. Their memory is reset (RSS returned to the OS)
   when they enter the cache; only the address space is kept, to save the map/unmap calls.
------------------------------------------------------------------------------------------ */
static _Atomic(mi_segment_t*) mi_segment_cache[MI_SEGMENT_CACHE_MAX];

static bool mi_segment_cache_push(mi_segment_t* segment) {
  if (segment->segment_size != MI_SEGMENT_SIZE) return false;
  _mi_os_reset(segment, MI_SEGMENT_SIZE);          /* everything reads as zero afterwards */
  for (size_t i = 0; i < MI_SEGMENT_CACHE_MAX; i++) {
    mi_segment_t* expected = NULL;
    if (mi_atomic_load_relaxed(&mi_segment_cache[i]) == NULL &&
        mi_atomic_cas_strong_acq_rel(&mi_segment_cache[i], &expected, segment)) {
      mi_os_stat_increase(segments_cache, 1);
      return true;
    }
  }
  return false;
}

static mi_segment_t* mi_segment_cache_pop(void) {
  for (size_t i = 0; i < MI_SEGMENT_CACHE_MAX; i++) {
    if (mi_atomic_load_relaxed(&mi_segment_cache[i]) != NULL) {
      mi_segment_t* segment = mi_atomic_exchange_acq_rel(&mi_segment_cache[i], NULL);
      if (segment != NULL) { mi_os_stat_decrease(segments_cache, 1); return segment; }
    }
  }
  return NULL;
}

void _mi_segment_cache_collect(void) {
  for (size_t i = 0; i < MI_SEGMENT_CACHE_MAX; i++) {
    mi_segment_t* segment = mi_atomic_exchange_acq_rel(&mi_segment_cache[i], NULL);
    if (segment != NULL) { mi_os_stat_decrease(segments_cache, 1); _mi_os_free(segment, MI_SEGMENT_SIZE); }
  }
}

/* ------------------------------------------------------------------------------------------
   Segment allocation and release
------------------------------------------------------------------------------------------ */
static size_t mi_segment_capacity(mi_page_kind_t kind) {
  if (kind == MI_PAGE_SMALL)  return MI_SMALL_PAGES_PER_SEGMENT;
  if (kind == MI_PAGE_MEDIUM) return MI_MEDIUM_PAGES_PER_SEGMENT;
  return 1;
}

/* The header, `capacity` page descriptors and one sentinel descriptor (see types.h). */
static size_t mi_segment_info_size(size_t capacity) {
  size_t size = offsetof(mi_segment_t, pages) + (capacity + 1) * sizeof(mi_page_t);
  return _mi_align_up(size, MI_MAX_ALIGN_SIZE);
}

/* Start of a page's blocks. Blocks of a power-of-two size are naturally aligned to their size
   when that costs less than one block, so e.g. 4 KiB blocks serve page-aligned requests. */
uint8_t* _mi_segment_page_start(const mi_segment_t* segment, const mi_page_t* page, size_t* page_size) {
  size_t psize = (segment->page_kind <= MI_PAGE_MEDIUM ? ((size_t)1 << segment->page_shift) : segment->segment_size);
  uint8_t* p = (uint8_t*)segment + page->segment_idx * psize;
  if (page->segment_idx == 0) {
    p += segment->info_size;
    psize -= segment->info_size;
  }
  const size_t bsize = page->block_size;
  if (segment->page_kind <= MI_PAGE_MEDIUM && bsize > 0 && mi_is_power_of_two(bsize) && bsize <= MI_MEDIUM_OBJ_SIZE_MAX) {
    size_t adjust = (bsize - ((uintptr_t)p % bsize)) % bsize;
    if (adjust > 0 && psize >= adjust + 2*bsize) {
      p += adjust;
      psize -= adjust;
    }
  }
  if (page_size != NULL) *page_size = psize;
  return p;
}

static void mi_segment_init_header(mi_segment_t* segment, size_t segment_size, size_t info_size,
                                   mi_page_kind_t kind, size_t capacity, size_t page_shift, mi_tld_t* tld) {
  memset(segment, 0, info_size);
  segment->segment_size = segment_size;
  segment->info_size    = info_size;
  segment->capacity     = capacity;
  segment->page_shift   = page_shift;
  segment->page_kind    = kind;
  /* the sentinel: never in use, flags != 0 so free leaves the fast path, block_size 0 */
  mi_atomic_store_relaxed(&segment->pages[capacity].flags, MI_PAGE_IN_FULL);
  segment->subproc      = tld->subproc;
  segment->cookie       = _mi_segment_cookie(segment);
  for (size_t i = 0; i < capacity; i++) {
    segment->pages[i].segment_idx  = (uint8_t)i;
    segment->pages[i].is_zero_init = 1;
  }
  mi_atomic_store_release(&segment->thread_id, _mi_thread_id());
  mi_segment_map_set(segment, true);
  tld->segments.count++;
  mi_os_stat_increase(segments, 1);
}

/* A standard (MI_SEGMENT_SIZE) segment for small, medium or large pages. */
static mi_segment_t* mi_segment_alloc_standard(mi_page_kind_t kind, mi_tld_t* tld) {
  mi_segment_t* segment = mi_segment_cache_pop();
  if (segment == NULL) {
    segment = mi_segment_os_alloc(MI_SEGMENT_SIZE, MI_SEGMENT_SIZE, 0);
    if (segment == NULL) return NULL;
  }
  const size_t capacity = mi_segment_capacity(kind);
  /* a large page's shift is the segment's: a pointer one past the segment gets index 1, the
     sentinel (types.h) */
  const size_t page_shift = (kind == MI_PAGE_SMALL ? MI_SMALL_PAGE_SHIFT :
                             kind == MI_PAGE_MEDIUM ? MI_MEDIUM_PAGE_SHIFT : MI_SEGMENT_SHIFT);
  mi_segment_init_header(segment, MI_SEGMENT_SIZE, mi_segment_info_size(capacity), kind, capacity, page_shift, tld);
  return segment;
}

static void mi_segment_free(mi_segment_t* segment, mi_tld_t* tld) {
  mi_assert_internal(segment->used == 0);
  mi_segment_remove_from_free_queue(segment, tld);
  mi_segment_map_set(segment, false);
  if (tld->segments.count > 0) tld->segments.count--;
  mi_os_stat_decrease(segments, 1);
  if (segment->page_kind == MI_PAGE_HUGE) mi_os_stat_decrease(malloc_huge, segment->segment_size - segment->info_size);
  mi_atomic_store_release(&segment->thread_id, 0);
  segment->cookie = 0;
  const size_t size = segment->segment_size;
  if (!mi_segment_cache_push(segment)) {
    _mi_os_free(segment, size);
  }
}

/* ------------------------------------------------------------------------------------------
   Pages inside segments
------------------------------------------------------------------------------------------ */
static mi_page_t* mi_segment_page_claim(mi_segment_t* segment, mi_page_t* page, mi_tld_t* tld) {
  mi_assert_internal(!page->segment_in_use);
  page->segment_in_use = 1;
  segment->used++;
  mi_os_stat_increase(pages, 1);
  if (segment->used == segment->capacity) {
    mi_segment_remove_from_free_queue(segment, tld);
  }
  return page;
}

static mi_page_t* mi_segment_find_free_page(mi_segment_t* segment) {
  for (size_t i = 0; i < segment->capacity; i++) {
    if (!segment->pages[i].segment_in_use) return &segment->pages[i];
  }
  return NULL;
}

/* Mark a page unused in its segment; returns true when the segment has no pages left in use. */
static bool mi_segment_page_clear(mi_segment_t* segment, mi_page_t* page) {
  mi_assert_internal(page->segment_in_use);
  mi_os_stat_decrease(pages, 1);
  mi_os_stat_decrease(page_committed, (size_t)page->capacity * page->block_size);
  if (MI_STAT > 1 && page->block_size > 0) mi_os_stat_decrease(page_bins[_mi_bin(page->block_size)], 1);
  const uint8_t idx = page->segment_idx;
  memset(page, 0, sizeof(*page));
  page->segment_idx = idx;
  page->is_zero_init = 0;   /* the memory has been used */
  segment->used--;
  return (segment->used == 0);
}

static void mi_segment_abandon(mi_segment_t* segment, mi_tld_t* tld);

void _mi_segment_page_free(mi_page_t* page, mi_tld_t* tld) {
  mi_segment_t* segment = _mi_page_segment(page);
  if (mi_segment_page_clear(segment, page)) {
    mi_segment_free(segment, tld);
  }
  else if (segment->used == segment->abandoned) {
    mi_segment_abandon(segment, tld);     /* only abandoned pages are left (thread exit) */
  }
  else {
    mi_segment_insert_in_free_queue(segment, tld);
  }
}

/* A small or medium page: from a segment of this thread with a free page, else from a
   reclaimed abandoned segment, else from a fresh segment. */
static mi_page_t* mi_segment_page_alloc_in(mi_heap_t* heap, mi_page_kind_t kind) {
  mi_tld_t* tld = heap->tld;
  mi_segment_queue_t* queue = mi_segment_free_queue(kind, tld);
  if (queue->first == NULL && !heap->allow_destroy) {
    _mi_segment_try_reclaim_abandoned(heap, false);
  }
  mi_segment_t* segment = queue->first;
  if (segment == NULL) {
    segment = mi_segment_alloc_standard(kind, tld);
    if (segment == NULL) return NULL;
    mi_segment_queue_push(queue, segment);
  }
  mi_page_t* page = mi_segment_find_free_page(segment);
  mi_assert_internal(page != NULL);
  return mi_segment_page_claim(segment, page, tld);
}

static mi_page_t* mi_segment_large_page_alloc(mi_heap_t* heap) {
  mi_segment_t* segment = mi_segment_alloc_standard(MI_PAGE_LARGE, heap->tld);
  if (segment == NULL) return NULL;
  return mi_segment_page_claim(segment, &segment->pages[0], heap->tld);
}

/* A huge page: one block of at least `size` bytes in its own segment, with the block start p
   such that the first p >= block with (p + align_offset) % alignment == 0 (alignment 0 or a
   power of two) lies at distance d from the segment start with info_size <= d <= MI_SEGMENT_SIZE,
   so (p - 1) & ~MI_SEGMENT_MASK still finds the segment, and p + size fits. */
static mi_page_t* mi_segment_huge_page_alloc(mi_heap_t* heap, size_t size, size_t alignment, size_t align_offset) {
  const size_t info_size = mi_segment_info_size(1);
  size_t d;
  size_t os_alignment = MI_SEGMENT_SIZE;
  size_t os_offset = 0;
  if (alignment <= MI_SEGMENT_SIZE/2) {
    const size_t a = (alignment < MI_MAX_ALIGN_SIZE ? MI_MAX_ALIGN_SIZE : alignment);
    d = info_size + ((a - ((info_size + align_offset) % a)) % a);
  }
  else {
    const size_t r = (MI_SEGMENT_SIZE - (align_offset % MI_SEGMENT_SIZE)) % MI_SEGMENT_SIZE;
    d = (r == 0 ? MI_SEGMENT_SIZE : r);
    if (d < info_size) return NULL;   /* excluded by _mi_segment_huge_align_ok */
    os_alignment = alignment;
    os_offset = (d + align_offset) % alignment;   /* a multiple of MI_SEGMENT_SIZE */
  }
  if (size > MI_MAX_ALLOC_SIZE - d) return NULL;
  /* larger than MI_SEGMENT_SIZE, so every p with p - 1 in the first chunk is inside it (a
     foreign pointer at segment + MI_SEGMENT_SIZE must not be taken for one of ours) */
  size_t segment_size = _mi_os_good_alloc_size(d + size);
  if (segment_size <= MI_SEGMENT_SIZE) segment_size = MI_SEGMENT_SIZE + _mi_os_page_size();
  mi_segment_t* segment = mi_segment_os_alloc(segment_size, os_alignment, os_offset);
  if (segment == NULL) return NULL;
  mi_segment_init_header(segment, segment_size, info_size, MI_PAGE_HUGE, 1, MI_HUGE_PAGE_SHIFT, heap->tld);
  mi_page_t* page = mi_segment_page_claim(segment, &segment->pages[0], heap->tld);
  /* the block starts right after the header (keeps it word aligned); the caller hands out
     the aligned interior pointer segment + d */
  page->page_start = (uint8_t*)segment + info_size;
  page->block_size = segment_size - info_size;
  mi_os_stat_increase(malloc_huge, page->block_size);
  mi_os_stat_counter_increase(malloc_huge_count, 1);
  return page;
}

/* Can a huge block start p satisfy (p + offset) % alignment == 0? Only fails for alignments
   above half a segment with an offset just below a multiple of MI_SEGMENT_SIZE, where the
   block would have to start inside the segment header. */
bool _mi_segment_huge_align_ok(size_t alignment, size_t align_offset) {
  if (alignment <= MI_SEGMENT_SIZE/2) return true;
  const size_t r = (MI_SEGMENT_SIZE - (align_offset % MI_SEGMENT_SIZE)) % MI_SEGMENT_SIZE;
  return (r == 0 || r >= mi_segment_info_size(1));
}

/* A page for blocks of `block_size` (huge: the requested size), not yet initialised. */
mi_page_t* _mi_segment_page_alloc(mi_heap_t* heap, size_t block_size, size_t page_alignment, size_t align_offset) {
  if (mi_unlikely(page_alignment > 0 || block_size > MI_LARGE_OBJ_SIZE_MAX)) {
    return mi_segment_huge_page_alloc(heap, block_size, page_alignment, align_offset);
  }
  if (block_size <= MI_SMALL_OBJ_SIZE_MAX)  return mi_segment_page_alloc_in(heap, MI_PAGE_SMALL);
  if (block_size <= MI_MEDIUM_OBJ_SIZE_MAX) return mi_segment_page_alloc_in(heap, MI_PAGE_MEDIUM);
  return mi_segment_large_page_alloc(heap);
}

/* ------------------------------------------------------------------------------------------
   Abandonment: at thread exit the pages still in use are abandoned one by one; when all pages
   in use of a segment are abandoned, the segment goes on its subprocess' abandoned list with
   thread_id 0. Frees into it go to the pages' thread_free lists (their delayed state is
   MI_NEVER_DELAYED_FREE) until another thread reclaims the segment.
------------------------------------------------------------------------------------------ */
static void mi_segment_abandon(mi_segment_t* segment, mi_tld_t* tld) {
  mi_assert_internal(segment->used == segment->abandoned && segment->used > 0);
  mi_segment_remove_from_free_queue(segment, tld);
  if (tld->segments.count > 0) tld->segments.count--;
  mi_subproc_t* subproc = tld->subproc;
  segment->subproc = subproc;
  mi_os_stat_increase(segments_abandoned, 1);
  mi_atomic_store_release(&segment->thread_id, 0);
  mi_lock_acquire(&subproc->abandoned_lock);
  segment->prev = NULL;
  segment->next = mi_atomic_load_relaxed(&subproc->abandoned);
  mi_atomic_store_relaxed(&subproc->abandoned, segment);
  subproc->abandoned_count++;
  mi_lock_release(&subproc->abandoned_lock);
}

void _mi_segment_page_abandon(mi_page_t* page, mi_tld_t* tld) {
  mi_segment_t* segment = _mi_page_segment(page);
  segment->abandoned++;
  mi_os_stat_increase(pages_abandoned, 1);
  _mi_stat_page_transfer(page, tld, NULL);
  if (segment->used == segment->abandoned) {
    mi_segment_abandon(segment, tld);
  }
}

/* Adopt an abandoned segment: its pages in use join the heaps of the calling thread (by tag),
   empty ones are released. Returns false when the whole segment turned out to be free. */
static bool mi_segment_reclaim(mi_segment_t* segment, mi_heap_t* heap) {
  mi_tld_t* tld = heap->tld;
  mi_atomic_store_release(&segment->thread_id, _mi_thread_id());
  segment->next = NULL;
  segment->prev = NULL;
  segment->subproc = tld->subproc;
  tld->segments.count++;
  mi_os_stat_decrease(segments_abandoned, 1);
  for (size_t i = 0; i < segment->capacity; i++) {
    mi_page_t* page = &segment->pages[i];
    if (!page->segment_in_use) continue;
    mi_assert_internal(segment->abandoned > 0);
    segment->abandoned--;
    mi_heap_t* target = _mi_heap_by_tag(heap, page->heap_tag);
    mi_page_set_heap(page, target);
    mi_os_stat_decrease(pages_abandoned, 1);
    _mi_stat_page_transfer(page, NULL, tld);   /* before collecting: the collect decreases */
    const bool huge = (segment->page_kind == MI_PAGE_HUGE);
    _mi_page_use_delayed_free(page, huge ? MI_USE_DELAYED_FREE : MI_NO_DELAYED_FREE, true);
    _mi_page_free_collect(page, false);
    if (mi_page_all_free(page)) {
      mi_segment_page_clear(segment, page);
    }
    else {
      mi_page_queue_t* pq = (huge ? &target->pages[MI_BIN_HUGE_INTERNAL] : &target->pages[_mi_bin(page->block_size)]);
      _mi_page_queue_push(target, pq, page);
    }
  }
  mi_assert_internal(segment->abandoned == 0);
  if (segment->used == 0) {
    mi_segment_free(segment, tld);
    return false;
  }
  if (segment->used < segment->capacity) {
    mi_segment_insert_in_free_queue(segment, tld);
  }
  return true;
}

static mi_segment_t* mi_abandoned_pop(mi_subproc_t* subproc) {
  if (mi_atomic_load_relaxed(&subproc->abandoned) == NULL) return NULL;   /* a stale peek only delays reclaim */
  mi_lock_acquire(&subproc->abandoned_lock);
  mi_segment_t* segment = mi_atomic_load_relaxed(&subproc->abandoned);
  if (segment != NULL) {
    mi_atomic_store_relaxed(&subproc->abandoned, segment->next);
    subproc->abandoned_count--;
    segment->next = NULL;
  }
  mi_lock_release(&subproc->abandoned_lock);
  return segment;
}

/* Reclaim abandoned segments into `heap`'s thread: all of them, or (when !all) until the
   thread has a segment with free small/medium pages, trying at most a few. */
bool _mi_segment_try_reclaim_abandoned(mi_heap_t* heap, bool all) {
  mi_tld_t* tld = heap->tld;
  mi_subproc_t* subproc = tld->subproc;
  size_t max_tries = (all ? SIZE_MAX : 8);
  bool reclaimed = false;
  while (max_tries-- > 0) {
    mi_segment_t* segment = mi_abandoned_pop(subproc);
    if (segment == NULL) break;
    reclaimed = true;
    mi_segment_reclaim(segment, heap);
    if (!all && (tld->segments.small_free.first != NULL || tld->segments.medium_free.first != NULL)) break;
  }
  return reclaimed;
}

/* Visit the abandoned segments of a subprocess (under its lock, so none is reclaimed). */
bool _mi_abandoned_visit(mi_subproc_t* subproc, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  bool ok = true;
  mi_lock_acquire(&subproc->abandoned_lock);
  for (mi_segment_t* segment = mi_atomic_load_relaxed(&subproc->abandoned); segment != NULL && ok; segment = segment->next) {
    for (size_t i = 0; i < segment->capacity && ok; i++) {
      mi_page_t* page = &segment->pages[i];
      if (!page->segment_in_use) continue;
      if (heap_tag >= 0 && page->heap_tag != (uint8_t)heap_tag) continue;
      _mi_page_free_collect(page, true);   /* nobody owns the page: safe under the lock */
      ok = _mi_heap_area_visit_blocks(NULL, page, visit_blocks, visitor, arg);
    }
  }
  mi_lock_release(&subproc->abandoned_lock);
  return ok;
}
