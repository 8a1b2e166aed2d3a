/* SPDX-License-Identifier: MIT */
/* Validators: one function per structure that checks every invariant src/internal/types.h
   states for it (and the thread_free word's, page.h). A violation is reported through
   _mi_message as
       mimalloc: validate: <structure> <address>: <field>: expected <value>, found <value>
   and the process aborts. They never allocate.

   Compiled in checked builds (MI_DEBUG > 0), so a test can call them in any debug build
   (test/validate/); the library calls them itself only at MI_DEBUG >= 3 (CMake
   MI_DEBUG_FULL=ON), through mi_assert_expensive and the observers' check hook
   (_mi_observe_check, internal/observe.h: the core calls no observer directly) at the
   slow-path boundaries: a page found
   for an allocation or retired, heap collection, thread abandonment and reclaim, arena
   allocation and free, purges, and mi_collect (docs/testing.md, "Validators").

   Who may call which (a validator reads what only its owner changes):
     _mi_validate_page         the page's owner thread; for an abandoned page on its list, the
                               holder of its subprocess' lock
     _mi_validate_heap         the heap's thread
     _mi_validate_segment      any thread (takes its subprocess' lock; _locked: holding it)
     _mi_validate_subproc      any thread (takes the lock; _locked: holding it)
     _mi_validate_arena_memid  the holder of the blocks (the thread that frees a segment)
     _mi_validate_arenas       any thread (claims each free block while it looks at it)
     _mi_validate_stats        a thread's own figures: that thread; the totals: any thread
     _mi_validate_thread       the thread of the heap: all of the above for it
   Each returns true (so `mi_assert_expensive(_mi_observe_check(MI_CHECK_HEAP, heap, NULL))`
   reads as a check) or does not return. */
#include "internal/observers.h"
#include "internal/bitmap.h"

#if MI_DEBUG > 0
#include <stdlib.h>   /* abort */

static mi_decl_noinline mi_decl_cold void mi_validate_fail(const char* structure, const void* addr, const char* field,
                                                           const char* rel, size_t expected, size_t found) {
  _mi_fputs(NULL, NULL, NULL, "");
  _mi_message("validate: %s %p: %s: expected %s%zu, found %zu\n", structure, addr, field, rel, expected, found);
  abort();
}

/* the checks: found == expected, found <= bound, found >= bound */
#define mi_check_eq(s, a, f, expected, found) \
  do { const size_t e_ = (size_t)(expected), v_ = (size_t)(found); \
       if (mi_unlikely(e_ != v_)) mi_validate_fail(s, a, f, "", e_, v_); } while (0)
#define mi_check_le(s, a, f, bound, found) \
  do { const size_t e_ = (size_t)(bound), v_ = (size_t)(found); \
       if (mi_unlikely(v_ > e_)) mi_validate_fail(s, a, f, "at most ", e_, v_); } while (0)
#define mi_check_ge(s, a, f, bound, found) \
  do { const size_t e_ = (size_t)(bound), v_ = (size_t)(found); \
       if (mi_unlikely(v_ < e_)) mi_validate_fail(s, a, f, "at least ", e_, v_); } while (0)

/* ------------------------------------------------------------------------------------------
   Pages
------------------------------------------------------------------------------------------ */
/* Walk a list of the page (at most `max` links): every link a block start below the capacity.
   Returns its length. */
static size_t mi_validate_list(const mi_page_t* page, const mi_block_t* list, const char* field, size_t max) {
  size_t n = 0;
  for (const mi_block_t* b = list; b != NULL; b = mi_block_next(page, b)) {
    if (!mi_page_block_valid(page, b)) {
      /* expected: an offset below capacity * block_size that is a multiple of block_size */
      mi_validate_fail("page", page, field, "a block start below offset ", (size_t)page->capacity * page->block_size,
                       (size_t)((uintptr_t)b - (uintptr_t)mi_page_start(page)));
    }
    n++;
    mi_check_le("page", page, field, max, n);   /* (a cycle) */
  }
  return n;
}

static bool mi_validate_is_bin_size(size_t size) {
  return (size <= MI_LARGE_OBJ_SIZE_MAX && _mi_page_bin_size(_mi_bin(size)) == size);
}

bool _mi_validate_page(const mi_page_t* page) {
  const char* const S = "page";
  const mi_segment_t* segment = _mi_page_segment(page);
  mi_check_eq(S, page, "segment_in_use", 1, page->segment_in_use);
  mi_check_eq(S, page, "span_tail", 0, page->span_tail);
  mi_check_eq(S, page, "segment_idx", (size_t)(page - segment->pages), page->segment_idx);
  mi_check_le(S, page, "segment_idx + slot_count", segment->capacity, (size_t)page->segment_idx + page->slot_count);
  mi_check_ge(S, page, "slot_count", 1, page->slot_count);
  for (size_t i = 1; i < page->slot_count; i++) {
    mi_check_eq(S, page, "span: slot's span_tail", i, page[i].span_tail);
    mi_check_eq(S, page, "span: slot's segment_in_use", 0, page[i].segment_in_use);
  }
  mi_check_eq(S, page, "is_committed", 1, page->is_committed);
  mi_check_eq(S, page, "purge_pending", 0, page->purge_pending);
  /* geometry: the blocks lie in the page's area */
  mi_check_ge(S, page, "reserved", 1, page->reserved);
  mi_check_le(S, page, "capacity", page->reserved, page->capacity);
  mi_check_ge(S, page, "block_size", 1, page->block_size);
  size_t area_size;
  const uint8_t* area = _mi_segment_page_area(segment, page, &area_size);
  const uint8_t* start = mi_page_start(page);
  mi_check_ge(S, page, "page_start", (uintptr_t)area, (uintptr_t)start);
  mi_check_le(S, page, "page_start + reserved * block_size", (uintptr_t)area + area_size,
              (uintptr_t)start + (size_t)page->reserved * page->block_size);
  if (segment->page_kind == MI_PAGE_HUGE) {
    mi_check_eq(S, page, "reserved (huge)", 1, page->reserved);
    mi_check_eq(S, page, "capacity (huge)", 1, page->capacity);
  }
  else if (!mi_validate_is_bin_size(page->block_size)) {
    mi_check_eq(S, page, "block_size (a bin size)", _mi_page_bin_size(_mi_bin(page->block_size)), page->block_size);
  }
  /* the lists and the count of blocks in use */
  const size_t nfree = mi_validate_list(page, page->free, "free", page->capacity);
  const size_t nlocal = mi_validate_list(page, page->local_free, "local_free", page->capacity);
  const size_t npurged = _mi_page_purged_mark(page, NULL);
  mi_check_eq(S, page, "used (== capacity - |free| - |local_free| - |purged|)", (size_t)page->capacity - nfree - nlocal - npurged, page->used);
  if (page->free_is_zero && page->free != NULL) {
    /* every block in `free` is zero except its link: the first one is looked at (its first
       4 KiB: a huge block may be large) */
    const uint8_t* b = (const uint8_t*)page->free;
    const size_t n = (page->block_size < 4096 ? page->block_size : 4096);
    for (size_t i = sizeof(mi_block_t); i < n; i++) {
      if (mi_unlikely(b[i] != 0)) mi_validate_fail(S, page, "free_is_zero: a byte of the first free block (found: its offset)", "", 0, i);
    }
  }
  const uintptr_t tf = mi_atomic_load_acquire(&((mi_page_t*)page)->xthread_free);
  const mi_heap_t* heap = mi_page_heap(page);
  const uintptr_t owner = mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_id) & ~MI_PAGE_FLAGS_MASK;
  const size_t ntf = mi_validate_list(page, mi_tf_block(tf), "thread_free", page->capacity);
  if (mi_tf_is_abandoned(tf)) {
    /* abandoned form (page.h): no heap, no owner, state bits 0; the count says how many
       blocks are still live, and they are among the blocks in use */
    mi_check_eq(S, page, "xheap (abandoned)", 0, (uintptr_t)heap);
    mi_check_eq(S, page, "xthread_id owner (abandoned)", 0, owner);
    mi_check_eq(S, page, "thread_free delayed bits (abandoned)", 0, mi_tf_delayed(tf));
    mi_check_le(S, page, "thread_free count (abandoned)", MI_TF_ABANDONED_BASE, mi_tf_count(tf));
    mi_check_le(S, page, "thread_free live blocks (abandoned)", page->used, MI_TF_ABANDONED_BASE - mi_tf_count(tf));
    return true;
  }
  /* owned form: the count is the list's length, every listed block is counted in used */
  mi_check_eq(S, page, "thread_free count", ntf, mi_tf_count(tf));
  mi_check_le(S, page, "thread_free length (<= used)", page->used, ntf);
  mi_check_eq(S, page, "xthread_id owner", (heap != NULL ? heap->thread_id : 0), owner);
  if (heap != NULL) mi_check_eq(S, page, "heap_tag", heap->tag, page->heap_tag);
  return true;
}

/* ------------------------------------------------------------------------------------------
   Heaps
------------------------------------------------------------------------------------------ */
static size_t mi_validate_queue_block_size(size_t bin) {
  if (bin < MI_BIN_HUGE_INTERNAL) return _mi_page_bin_size(bin);
  return (bin == MI_BIN_HUGE_INTERNAL ? MI_LARGE_OBJ_SIZE_MAX + 1 : MI_LARGE_OBJ_SIZE_MAX + 2);
}

bool _mi_validate_heap(const mi_heap_t* heap) {
  const char* const S = "heap";
  if (!mi_heap_is_initialized(heap)) return true;   /* the static empty heap */
  mi_check_eq(S, heap, "thread_id", _mi_thread_id(), heap->thread_id);
  bool linked = false;
  size_t nheaps = 0;
  for (const mi_heap_t* h = heap->tld->heaps; h != NULL && !linked; h = h->next) {
    linked = (h == heap);
    mi_check_le(S, heap, "tld->heaps (a cycle)", 1 << 20, ++nheaps);
  }
  mi_check_eq(S, heap, "tld->heaps (links this heap)", 1, linked);
  size_t count = 0;
  const mi_segment_t* last_segment = NULL;
  for (size_t bin = 0; bin <= MI_BIN_FULL; bin++) {
    const mi_page_queue_t* pq = &heap->pages[bin];
    mi_check_eq(S, heap, "pages[bin].block_size", mi_validate_queue_block_size(bin), pq->block_size);
    const mi_page_t* prev = NULL;
    for (const mi_page_t* page = pq->first; page != NULL; page = page->next) {
      mi_check_eq(S, heap, "pages[bin]: page's prev", (uintptr_t)prev, (uintptr_t)page->prev);
      mi_check_eq(S, heap, "pages[bin]: page's xheap", (uintptr_t)heap, (uintptr_t)mi_page_heap(page));
      mi_check_eq(S, heap, "pages[bin]: page's abandon_lists (the heap's pages_lists)", (uintptr_t)heap->pages_lists, (uintptr_t)mi_atomic_load_relaxed(&((mi_page_t*)page)->abandon_lists));
      mi_check_eq(S, heap, "pages[bin]: page's in_full flag", (bin == MI_BIN_FULL), mi_page_is_in_full(page));
      if (bin == MI_BIN_FULL) {
        /* a full page learns of its first foreign free through the heap's delayed list (checked
           here, not by the page's validator: while the owner drains the list it is empty) */
        const mi_delayed_t delayed = mi_tf_delayed(mi_atomic_load_acquire(&((mi_page_t*)page)->xthread_free));
        if (delayed == MI_NO_DELAYED_FREE) {
          mi_check_ge(S, heap, "pages[full]: page in MI_NO_DELAYED_FREE: thread_delayed_free (a block queued)", 1,
                      mi_atomic_load_acquire(&((mi_heap_t*)heap)->thread_delayed_free) != NULL);
        }
      }
      if (bin < MI_BIN_HUGE_INTERNAL) {
        mi_check_eq(S, heap, "pages[bin]: page's block_size", pq->block_size, page->block_size);
      }
      else if (bin == MI_BIN_HUGE_INTERNAL) {
        mi_check_eq(S, heap, "pages[huge]: page's segment kind", MI_PAGE_HUGE, _mi_page_segment(page)->page_kind);
      }
      _mi_validate_page(page);
      if (_mi_page_segment(page) != last_segment) {   /* (pages of a segment are often adjacent in a queue) */
        last_segment = _mi_page_segment(page);
        _mi_validate_segment(last_segment);
      }
      mi_check_le(S, heap, "page_count (pages in the queues)", heap->page_count, ++count);
      prev = page;
    }
    mi_check_eq(S, heap, "pages[bin].last", (uintptr_t)prev, (uintptr_t)pq->last);
  }
  mi_check_eq(S, heap, "page_count", count, heap->page_count);
  /* the direct table: the first page of the bin of each word size, or the empty page (the real
     table: without a profiler that is pages_free_direct itself) */
  mi_page_t* const* const direct = mi_heap_direct_real((mi_heap_t*)heap);
  for (size_t w = 0; w < MI_PAGES_DIRECT; w++) {
    const mi_page_t* first = (w <= MI_SMALL_WSIZE_MAX ? heap->pages[_mi_bin(w * sizeof(uintptr_t))].first : NULL);
    const mi_page_t* expected = (first != NULL ? first : &_mi_page_empty);
    if (direct[w] != expected) {
      char field[64];
      _mi_snprintf(field, sizeof(field), "%s[%zu]", (heap->prof == NULL ? "pages_free_direct" : "prof->direct"), w);
      mi_validate_fail(S, heap, field, "", (uintptr_t)expected, (uintptr_t)direct[w]);
    }
  }
  /* blocks other threads queued for us: blocks of pages in use */
  size_t ndelayed = 0;
  for (const mi_block_t* b = mi_atomic_load_acquire(&((mi_heap_t*)heap)->thread_delayed_free); b != NULL; ) {
    const mi_segment_t* segment = _mi_ptr_segment_checked(b);
    mi_check_eq(S, heap, "thread_delayed_free: a block of ours", 1, segment != NULL);
    const mi_page_t* page = _mi_segment_page_of(segment, b);
    mi_check_eq(S, heap, "thread_delayed_free: block's page segment_in_use", 1, page->segment_in_use);
    mi_check_le(S, heap, "thread_delayed_free (a cycle)", 1 << 24, ++ndelayed);
    b = mi_block_next(page, b);
  }
  return true;
}

/* ------------------------------------------------------------------------------------------
   Segments and the segment map
------------------------------------------------------------------------------------------ */
bool _mi_validate_segment_map(const mi_segment_t* segment) {
  const char* const S = "segment map";
  const uintptr_t first = (uintptr_t)segment >> MI_SEGMENT_SHIFT;
  const uintptr_t last = ((uintptr_t)segment + segment->segment_size - 1) >> MI_SEGMENT_SHIFT;
  mi_check_le(S, segment, "segment end chunk", MI_SEGMENT_MAP_CHUNKS - 2, last);
  mi_check_eq(S, segment, "_mi_segment_map_start[segment chunk] (page_shift)", (uint8_t)segment->page_shift,
              mi_atomic_load_relaxed(&_mi_segment_map_start[first]));
  for (uintptr_t chunk = first; chunk <= last; chunk++) {
    mi_check_eq(S, (void*)(chunk << MI_SEGMENT_SHIFT), "covered bit of a chunk of the segment", 1,
                _mi_segment_map_covers((void*)(chunk << MI_SEGMENT_SHIFT)));
    if (chunk > first) {   /* no segment starts inside another one */
      mi_check_eq(S, (void*)(chunk << MI_SEGMENT_SHIFT), "_mi_segment_map_start[chunk inside the segment]", 0,
                  mi_atomic_load_relaxed(&_mi_segment_map_start[chunk]));
    }
  }
  return true;
}

static size_t mi_validate_page_shift(mi_page_kind_t kind) {
  switch (kind) {
    case MI_PAGE_SMALL:  return MI_SMALL_PAGE_SHIFT;
    case MI_PAGE_MEDIUM: return MI_MEDIUM_PAGE_SHIFT;
    case MI_PAGE_LARGE:  return MI_LARGE_SLOT_SHIFT;
    default:             return MI_HUGE_PAGE_SHIFT;
  }
}

bool _mi_validate_segment_locked(const mi_segment_t* segment) {
  const char* const S = "segment";
  mi_check_eq(S, segment, "address % MI_SEGMENT_SIZE", 0, (uintptr_t)segment & MI_SEGMENT_MASK);
  mi_check_eq(S, segment, "cookie", (uintptr_t)segment ^ mi_atomic_load_relaxed(&_mi_segment_cookie_key), segment->cookie);
  mi_check_le(S, segment, "page_kind", MI_PAGE_HUGE, segment->page_kind);
  mi_check_eq(S, segment, "page_shift", mi_validate_page_shift(segment->page_kind), segment->page_shift);
  const bool huge = (segment->page_kind == MI_PAGE_HUGE);
  if (huge) {
    mi_check_eq(S, segment, "capacity (huge)", 1, segment->capacity);
    mi_check_ge(S, segment, "segment_size (huge)", MI_SEGMENT_SIZE + 1, segment->segment_size);
  }
  else {
    mi_check_eq(S, segment, "capacity", MI_SEGMENT_SIZE >> segment->page_shift, segment->capacity);
    mi_check_eq(S, segment, "segment_size", MI_SEGMENT_SIZE, segment->segment_size);
    mi_check_le(S, segment, "info_size", (size_t)1 << segment->page_shift, segment->info_size);
  }
  mi_check_ge(S, segment, "info_size", offsetof(mi_segment_t, pages) + (segment->capacity + 1) * sizeof(mi_page_t), segment->info_size);
  mi_check_le(S, segment, "segment_size (<= memid.size)", segment->memid.size, segment->segment_size);
  /* the slots: pages in use with their span tails, unused slots' purge states */
  size_t used = 0, slots_used = 0, listed = 0;
  for (size_t i = 0; i < segment->capacity; i++) {
    const mi_page_t* page = &segment->pages[i];
    mi_check_eq(S, segment, "pages[i].segment_idx", i, page->segment_idx);
    mi_check_eq(S, segment, "pages[i].span_tail (outside a span in use)", 0, page->span_tail);
    if (page->segment_in_use) {
      used++;
      slots_used += page->slot_count;
      if (page->abandoned_listed) {
        /* an abandoned page: no heap reaches it, so it is validated here (under the lock nobody
           else touches it); the pages of heaps are validated with their heap. (A page without
           a heap that is not listed is between its owners: set up, freed, abandoned or adopted
           by a thread that does not hold the lock.) */
        listed++;
        mi_check_eq(S, segment, "pages[i].xheap (abandoned_listed)", 0, (uintptr_t)mi_page_heap(page));
        _mi_validate_page(page);
      }
      mi_check_ge(S, segment, "pages[i].slot_count (in use)", 1, page->slot_count);
      mi_check_le(S, segment, "pages[i]: i + slot_count", segment->capacity, i + page->slot_count);
      mi_check_eq(S, segment, "pages[i].is_committed (in use)", 1, page->is_committed);
      mi_check_eq(S, segment, "pages[i].purge_pending (in use)", 0, page->purge_pending);
      for (size_t k = 1; k < page->slot_count; k++) {
        mi_check_eq(S, segment, "pages[i+k].span_tail (span in use)", k, page[k].span_tail);
        mi_check_eq(S, segment, "pages[i+k].segment_in_use (span tail)", 0, page[k].segment_in_use);
        mi_check_eq(S, segment, "pages[i+k].purge_pending (span tail)", 0, page[k].purge_pending);
        mi_check_eq(S, segment, "pages[i+k].is_committed (span tail)", 1, page[k].is_committed);
      }
      if (page->slot_count > 1) i += page->slot_count - 1;
    }
    else {
      mi_check_eq(S, segment, "pages[i].abandoned_listed (unused slot)", 0, page->abandoned_listed);
      if (page->purge_pending) {
        mi_check_eq(S, segment, "pages[i].is_committed (purge_pending)", 1, page->is_committed);
        mi_check_eq(S, segment, "pages[i].purge_pending (standard segment)", 0, huge);
      }
    }
  }
  mi_check_eq(S, segment, "used", used, segment->used);
  mi_check_eq(S, segment, "slots_used", slots_used, segment->slots_used);
  mi_check_le(S, segment, "slots_used", segment->capacity, segment->slots_used);
  mi_check_le(S, segment, "abandoned", segment->used, segment->abandoned);
  mi_check_eq(S, segment, "abandoned (== pages on the abandoned lists)", listed, segment->abandoned);
  mi_check_eq(S, segment, "pages[0].is_committed (header's slot)", 1, segment->pages[0].is_committed);
  /* the sentinel after the last page */
  const mi_page_t* sentinel = &segment->pages[segment->capacity];
  mi_check_eq(S, segment, "sentinel segment_in_use", 0, sentinel->segment_in_use);
  mi_check_eq(S, segment, "sentinel xthread_id", 0, mi_atomic_load_relaxed(&((mi_page_t*)sentinel)->xthread_id));
  mi_check_eq(S, segment, "sentinel block_size", 0, sentinel->block_size);
  /* the free queue of its kind */
  if (huge) {
    mi_check_eq(S, segment, "in_free_queue (huge)", 0, segment->in_free_queue);
  }
  else if (segment->used > 0 || segment->subproc->empty[segment->page_kind] == segment) {
    mi_check_eq(S, segment, "in_free_queue (slots_used < capacity)", segment->slots_used < segment->capacity, segment->in_free_queue);
  }
  return _mi_validate_segment_map(segment);
}

bool _mi_validate_segment(const mi_segment_t* segment) {
  mi_subproc_t* subproc = segment->subproc;
  mi_lock_acquire(&subproc->lock);
  _mi_validate_segment_locked(segment);
  mi_lock_release(&subproc->lock);
  return true;
}

/* ------------------------------------------------------------------------------------------
   A subprocess: its free queues, purge queues, kept empty segments and abandoned page lists
------------------------------------------------------------------------------------------ */
bool _mi_validate_subproc_locked(mi_subproc_t* subproc) {
  const char* const S = "subproc";
  for (size_t kind = 0; kind < MI_PAGE_HUGE; kind++) {
    const mi_segment_t* prev = NULL;
    size_t n = 0;
    bool empty_seen = (subproc->empty[kind] == NULL);
    for (const mi_segment_t* s = subproc->free[kind].first; s != NULL; s = s->next) {
      mi_check_eq(S, subproc, "free queue: segment's prev", (uintptr_t)prev, (uintptr_t)s->prev);
      mi_check_eq(S, subproc, "free queue: segment's in_free_queue", 1, s->in_free_queue);
      mi_check_eq(S, subproc, "free queue: segment's page_kind", kind, s->page_kind);
      mi_check_eq(S, subproc, "free queue: segment's subproc", (uintptr_t)subproc, (uintptr_t)s->subproc);
      if (s == subproc->empty[kind]) empty_seen = true;
      else mi_check_ge(S, subproc, "free queue: segment's used (or the kept empty one)", 1, s->used);
      _mi_validate_segment_locked(s);
      mi_check_le(S, subproc, "free queue length (<= segment_count)", mi_atomic_load_relaxed(&subproc->segment_count), ++n);
      prev = s;
    }
    mi_check_eq(S, subproc, "free queue last", (uintptr_t)prev, (uintptr_t)subproc->free[kind].last);
    mi_check_eq(S, subproc, "empty[kind] (on the free queue)", 1, empty_seen);
    if (subproc->empty[kind] != NULL) {
      mi_check_eq(S, subproc, "empty[kind]: segment's used", 0, subproc->empty[kind]->used);
    }
  }
  /* purge queues: unused committed slots of the subprocess' segments of the kind, by deadline */
  size_t count = 0;
  for (size_t kind = 0; kind < MI_PAGE_HUGE; kind++) {
    const mi_page_t* prev = NULL;
    for (const mi_page_t* page = subproc->purge[kind].first; page != NULL; page = page->next) {
      const mi_segment_t* segment = _mi_page_segment(page);
      mi_check_eq(S, subproc, "purge queue: slot's prev", (uintptr_t)prev, (uintptr_t)page->prev);
      mi_check_eq(S, subproc, "purge queue: slot's purge_pending", 1, page->purge_pending);
      mi_check_eq(S, subproc, "purge queue: slot's segment_in_use", 0, page->segment_in_use);
      mi_check_eq(S, subproc, "purge queue: slot's span_tail", 0, page->span_tail);
      mi_check_eq(S, subproc, "purge queue: slot's is_committed", 1, page->is_committed);
      mi_check_eq(S, subproc, "purge queue: slot's segment page_kind", kind, segment->page_kind);
      mi_check_eq(S, subproc, "purge queue: slot's segment subproc", (uintptr_t)subproc, (uintptr_t)segment->subproc);
      if (prev != NULL) {
        mi_check_ge(S, subproc, "purge queue: slot's purge_expire (ordered)", (size_t)prev->purge_expire, (size_t)page->purge_expire);
      }
      mi_check_le(S, subproc, "purge queue length (<= purge_count)", mi_atomic_load_relaxed(&subproc->purge_count), ++count);
      prev = page;
    }
    mi_check_eq(S, subproc, "purge queue last", (uintptr_t)prev, (uintptr_t)subproc->purge[kind].last);
  }
  mi_check_eq(S, subproc, "purge_count", count, mi_atomic_load_relaxed(&subproc->purge_count));
#if MI_SECURE == 0
  /* slot hints: queued slots of small or medium segments whose last page was of the bin */
  for (size_t bin = 0; bin < MI_BIN_HUGE_INTERNAL; bin++) {
    mi_page_t* const* row = (*_mi_segments_purge_hints(subproc))[bin];
    for (size_t i = 0; i < MI_SLOT_HINTS; i++) {
      const mi_page_t* page = row[i];
      if (page == NULL) continue;
      mi_check_eq(S, subproc, "slot_hints: slot's purge_pending", 1, page->purge_pending);
      mi_check_eq(S, subproc, "slot_hints: slot's freed_bin", bin + 1, page->freed_bin);
      mi_check_le(S, subproc, "slot_hints: slot's segment page_kind (small or medium)", MI_PAGE_MEDIUM, _mi_page_segment(page)->page_kind);
      mi_check_eq(S, subproc, "slot_hints: slot's segment subproc", (uintptr_t)subproc, (uintptr_t)_mi_page_segment(page)->subproc);
      for (size_t j = i + 1; j < MI_SLOT_HINTS; j++) {
        mi_check_eq(S, subproc, "slot_hints: slot listed once", 0, (uintptr_t)(row[j] == page));
      }
    }
  }
#endif
  /* abandoned pages: by bin, or (one block each) on the last list */
  size_t listed = 0;
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    const mi_page_t* pprev = NULL;
    for (const mi_page_t* page = mi_atomic_load_relaxed(&subproc->abandoned_pages[bin]); page != NULL; page = page->next) {
      mi_check_eq(S, subproc, "abandoned_pages[bin]: page's prev", (uintptr_t)pprev, (uintptr_t)page->prev);
      mi_check_eq(S, subproc, "abandoned_pages[bin]: page's abandoned_listed", 1, page->abandoned_listed);
      mi_check_eq(S, subproc, "abandoned_pages[bin]: page's segment_in_use", 1, page->segment_in_use);
      mi_check_eq(S, subproc, "abandoned_pages[bin]: page's xheap", 0, (uintptr_t)mi_page_heap(page));
      mi_check_eq(S, subproc, "abandoned_pages[bin]: page's abandon_lists (none)", 0, (uintptr_t)mi_atomic_load_relaxed(&((mi_page_t*)page)->abandon_lists));
      mi_check_eq(S, subproc, "abandoned_pages[bin]: page's segment subproc", (uintptr_t)subproc, (uintptr_t)_mi_page_segment(page)->subproc);
      if (bin < MI_BIN_HUGE_INTERNAL) {
        mi_check_ge(S, subproc, "abandoned_pages[bin]: page's reserved", 2, page->reserved);
        mi_check_eq(S, subproc, "abandoned_pages[bin]: page's bin", bin, _mi_bin(page->block_size));
      }
      else {
        mi_check_eq(S, subproc, "abandoned_pages[last]: page's reserved", 1, page->reserved);
      }
      const uintptr_t tf = mi_atomic_load_acquire(&((mi_page_t*)page)->xthread_free);
      mi_check_eq(S, subproc, "abandoned page's thread_free form (abandoned)", 1, mi_tf_is_abandoned(tf));
      /* under the lock a listed page whose last block was freed has been released already */
      mi_check_le(S, subproc, "abandoned page's thread_free count (a live block left)", MI_TF_ABANDONED_BASE - 1, mi_tf_count(tf));
      mi_check_le(S, subproc, "abandoned_count (pages on the lists)", subproc->abandoned_count, ++listed);
      pprev = page;
    }
  }
  mi_check_eq(S, subproc, "abandoned_count (pages on the lists)", listed, subproc->abandoned_count);
  return true;
}

bool _mi_validate_subproc(mi_subproc_t* subproc) {
  mi_lock_acquire(&subproc->lock);
  _mi_validate_subproc_locked(subproc);
  mi_lock_release(&subproc->lock);
  return true;
}

/* ------------------------------------------------------------------------------------------
   Arenas
------------------------------------------------------------------------------------------ */
bool _mi_validate_arena_memid(const void* p, const mi_memid_t* memid) {
  const char* const S = "arena";
  if (memid->arena_idx < 0) return true;   /* straight from the OS */
  mi_arena_view_t a;
  mi_check_eq(S, p, "memid.arena_idx (an arena)", 1, _mi_arena_view((size_t)memid->arena_idx, &a));
  const size_t count = memid->size / MI_ARENA_BLOCK_SIZE;
  const size_t idx = memid->block_index;
  mi_check_eq(S, p, "memid.size (whole blocks)", count * MI_ARENA_BLOCK_SIZE, memid->size);
  mi_check_le(S, p, "memid.block_index + block count", a.block_count, idx + count);
  mi_check_eq(S, p, "start + block_index * MI_ARENA_BLOCK_SIZE", (uintptr_t)a.start + idx * MI_ARENA_BLOCK_SIZE, (uintptr_t)p);
  mi_check_eq(S, p, "memid.is_pinned", a.is_pinned, memid->is_pinned);
  mi_check_eq(S, p, "memid.is_exclusive", a.exclusive, memid->is_exclusive);
  mi_check_eq(S, p, "memid.commit_syscall", a.commit_syscall, memid->commit_syscall);
  mi_check_eq(S, p, "memid.commit_fun", a.commit_fun, memid->commit_fun);
  /* blocks held by a segment: claimed, dirty, no purge waiting; committed as handed out */
  for (size_t i = idx; i < idx + count; i++) {
    mi_check_eq(S, p, "blocks_inuse bit (block held)", 1, _mi_bitmap_is_all_set(a.inuse, i, 1));
    mi_check_eq(S, p, "blocks_purge bit (block held)", 0, _mi_bitmap_is_all_set(a.purge, i, 1));
    mi_check_eq(S, p, "blocks_dirty bit (block held)", 1, _mi_bitmap_is_all_set(a.dirty, i, 1));
    const bool committed = _mi_bitmap_is_all_set(a.committed, i, 1);
    mi_check_eq(S, p, "blocks_committed bit (block held; == memid.initially_committed or pinned)",
                memid->initially_committed || a.is_pinned, committed);
  }
  return true;
}

bool _mi_validate_arenas(void) {
  const char* const S = "arena";
  const size_t n = _mi_arena_slots();
  mi_check_le(S, NULL, "arena count", MI_MAX_ARENAS, n);
  for (size_t k = 0; k < n; k++) {
    mi_arena_view_t a;
    if (!_mi_arena_view(k, &a)) continue;
    const void* const A = a.start;
    mi_check_eq(S, A, "field_count", _mi_divide_up(a.block_count, MI_BITMAP_FIELD_BITS), a.field_count);
    mi_check_le(S, A, "blocks_used", a.block_count, a.blocks_used);
    const size_t post = a.field_count * MI_BITMAP_FIELD_BITS - a.block_count;
    if (post > 0) mi_check_eq(S, A, "blocks_inuse bits past the last block", 1, _mi_bitmap_is_all_set(a.inuse, a.block_count, post));
    if (a.state != 0 /* MI_ARENA_MAPPED */) continue;   /* released (start NULL) or being mapped or released */
    mi_check_eq(S, A, "start % MI_ARENA_BLOCK_SIZE (mapped)", 0, (uintptr_t)a.start % MI_ARENA_BLOCK_SIZE);
    if (a.is_pinned) {
      mi_check_eq(S, A, "blocks_committed (pinned: all)", 1, _mi_bitmap_is_all_set(a.committed, 0, a.block_count));
      mi_check_eq(S, A, "blocks_purge (pinned: none)", 0, _mi_bitmap_is_any_set(a.purge, 0, a.block_count));
      continue;
    }
    /* the free blocks: claimed one at a time (as a purge does, arena-purge.c), so their bits are stable
       while looked at: a block waiting for its purge is committed and has a deadline */
    for (size_t i = 0; i < a.block_count; i++) {
      if (!_mi_bitmap_try_claim(a.inuse, i, 1)) continue;   /* in use, or claimed by another thread */
      const bool purge = _mi_bitmap_is_all_set(a.purge, i, 1);
      const bool committed = _mi_bitmap_is_all_set(a.committed, i, 1);
      const mi_msecs_t due = mi_atomic_load_relaxed(&a.purge_due[i]);
      _mi_bitmap_clear(a.inuse, i, 1);
      if (purge && due > 0) {
        /* a purge pass that found the block claimed here skipped it: make sure one looks again
           (as arena-purge.c does when it schedules a purge, telling the purger thread too) */
        mi_msecs_t expire = mi_atomic_load_relaxed(a.purge_expire);
        while ((expire == 0 || expire > due) && !mi_atomic_cas_weak_acq_rel(a.purge_expire, &expire, due)) { }
        mi_atomic_store_release(&_mi_arenas_purge_pending, 1);
        _mi_purger_notify(due);
      }
      if (purge) {
        mi_check_eq(S, (uint8_t*)A + i * MI_ARENA_BLOCK_SIZE, "blocks_committed bit (purge bit set: purge is a subset of committed)", 1, committed);
        mi_check_ge(S, (uint8_t*)A + i * MI_ARENA_BLOCK_SIZE, "purge_due (purge bit set: a deadline)", 1, (size_t)due);
      }
    }
  }
  return true;
}

/* ------------------------------------------------------------------------------------------
   Statistics: no figure is ever negative (types.h, mi_stats_data_t), and a figure's peak is
   at least its current value (a thread's own figures; the totals' peaks are updated apart
   from their values, by other threads too)
------------------------------------------------------------------------------------------ */
static mi_decl_noinline mi_decl_cold void mi_validate_stat_fail(const mi_stats_data_t* stats, const char* name, const char* rel,
                                                                int64_t expected, int64_t found) {
  _mi_fputs(NULL, NULL, NULL, "");
  _mi_message("validate: stats %p: %s: expected %s%lld, found %lld\n", (const void*)stats, name, rel, (long long)expected, (long long)found);
  abort();
}

static void mi_validate_stat(const mi_stats_data_t* stats, const char* name, const mi_stat_count_t* c, bool thread) {
  if (mi_unlikely(c->current < 0)) mi_validate_stat_fail(stats, name, "at least ", 0, c->current);
  if (thread && mi_unlikely(c->peak < c->current)) mi_validate_stat_fail(stats, name, "a peak of at least ", c->current, c->peak);
}

bool _mi_validate_stats(const mi_stats_data_t* stats, bool thread) {
#define MI_STAT_COUNT(name)    mi_validate_stat(stats, #name, &stats->name, thread);
#define MI_STAT_COUNTER(name)
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    mi_validate_stat(stats, "malloc_bins[bin]", &stats->malloc_bins[bin], thread);
    mi_validate_stat(stats, "page_bins[bin]", &stats->page_bins[bin], thread);
  }
  return true;
}

/* ------------------------------------------------------------------------------------------
   Everything the calling thread may look at
------------------------------------------------------------------------------------------ */
bool _mi_validate_thread(const mi_heap_t* heap) {
  if (!mi_heap_is_initialized(heap)) return true;
  mi_tld_t* tld = heap->tld;
  for (const mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_validate_heap(h);
  _mi_validate_subproc(tld->subproc);
  _mi_validate_arenas();
  _mi_validate_stats(&tld->stats, true);
  _mi_validate_stats(&_mi_stats_main, false);
  return true;
}
#endif
