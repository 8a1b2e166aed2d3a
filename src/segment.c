/* SPDX-License-Identifier: MIT */
/* Segments: 4 MiB-aligned regions that hold page descriptors and pages (see types.h), shared
   by the threads of their subprocess. This file owns segment allocation and release, the page
   slots inside a segment with their commit, and the kept empty segments. The slots' delayed
   purge: segment-purge.c; the segment map: segment-map.c; abandoned pages of ended threads:
   abandon.c. */
#include "internal/page.h"
#include "prim/prim.h"
#include "internal/limit.h"   /* _mi_limit_is_pressing */

_Atomic(uintptr_t) _mi_segment_cookie_key;

uintptr_t _mi_segment_cookie(const mi_segment_t* segment) {
  uintptr_t key = mi_atomic_load_relaxed(&_mi_segment_cookie_key);
  if (mi_unlikely(key == 0)) {
    uintptr_t expected = 0;
    key = _mi_random_next() | 1;
    if (!mi_atomic_cas_strong_acq_rel(&_mi_segment_cookie_key, &expected, key)) key = expected;
  }
  return ((uintptr_t)segment ^ key);
}

/* ------------------------------------------------------------------------------------------
   The subprocess' segments (types.h, mi_subproc_t): standard segments are shared by all its
   threads. Their slots, free queues and purge queues change under subproc->lock; it is taken
   once per page taken or returned, never per block (mi_segments_lock, segment.h).
------------------------------------------------------------------------------------------ */
static mi_segment_queue_t* mi_segment_free_queue(mi_page_kind_t kind, mi_subproc_t* subproc) {
  return (kind < MI_PAGE_HUGE ? &subproc->free[kind] : NULL);
}

static void mi_segment_queue_remove(mi_segment_queue_t* queue, mi_segment_t* segment) {
  if (!segment->in_free_queue) return;
  if (segment->prev != NULL) segment->prev->next = segment->next;
  if (segment->next != NULL) segment->next->prev = segment->prev;
  if (segment == queue->first) queue->first = segment->next;
  if (segment == queue->last)  queue->last = segment->prev;
  segment->next = segment->prev = NULL;
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

static void mi_segment_remove_from_free_queue(mi_segment_t* segment) {
  mi_segment_queue_t* queue = mi_segment_free_queue(segment->page_kind, segment->subproc);
  if (queue != NULL) mi_segment_queue_remove(queue, segment);
}

static void mi_segment_insert_in_free_queue(mi_segment_t* segment) {
  mi_segment_queue_t* queue = mi_segment_free_queue(segment->page_kind, segment->subproc);
  if (queue != NULL) mi_segment_queue_push(queue, segment);
}

/* "Every page in use of the segment is abandoned": the segments_abandoned statistic counts the
   segments in that state (the memory of ended threads), kept exact at every change of `used`
   or `abandoned` (under the lock, or by the owner of a huge segment). */
static bool mi_segment_all_abandoned(const mi_segment_t* segment) {
  return (segment->used > 0 && segment->used == segment->abandoned);
}
static void mi_segment_abandoned_stat(const mi_segment_t* segment, bool before) {
  const bool after = mi_segment_all_abandoned(segment);
  if (after && !before) mi_os_stat_increase(segments_abandoned, 1);
  else if (before && !after) mi_os_stat_decrease(segments_abandoned, 1);
}
/* A page of the segment is abandoned (+1) or adopted or released while abandoned (-1). */
void _mi_segment_abandoned_change(mi_segment_t* segment, int delta) {
  const bool before = mi_segment_all_abandoned(segment);
  if (delta > 0) segment->abandoned++;
  else segment->abandoned--;
  mi_segment_abandoned_stat(segment, before);
}

/* ------------------------------------------------------------------------------------------
   Page slots: a slot is [segment + idx * page size, + page size) in a small or medium segment:
   a page takes one slot, a large page a span of several (types.h), each with its own commit
   and purge state (the delayed purge: segment-purge.c). A huge segment has one page, which
   lives and dies with the segment. Everything here runs under the subprocess' lock.
------------------------------------------------------------------------------------------ */
static bool mi_segment_slot_commit(mi_segment_t* segment, mi_page_t* page) {
  if (page->is_committed) return true;
  if (!_mi_arena_commit(&segment->memid, mi_segment_slot_start(segment, page), mi_segment_slot_size(segment))) return false;
  page->is_committed = 1;
  return true;
}


static void mi_segment_free(mi_segment_t* segment);

/* mi_collect(true), mi_subproc_delete: release the kept empty segments. */
void _mi_segments_free_empty(mi_subproc_t* subproc) {
  mi_segment_t* empty[MI_PAGE_HUGE];
  mi_segments_lock(subproc);
  for (size_t kind = 0; kind < MI_PAGE_HUGE; kind++) {
    empty[kind] = subproc->empty[kind];
    subproc->empty[kind] = NULL;
    if (empty[kind] != NULL) {
      mi_segment_remove_from_free_queue(empty[kind]);
      _mi_segments_purge_unqueue(empty[kind]);
    }
  }
  mi_segments_unlock(subproc);
  for (size_t kind = 0; kind < MI_PAGE_HUGE; kind++) {
    if (empty[kind] != NULL) mi_segment_free(empty[kind]);
  }
}

/* mi_subproc_delete: true (and the kept empty segments released) when no segment of the
   subprocess holds a page any more. */
bool _mi_segments_subproc_done(mi_subproc_t* subproc) {
  mi_segments_lock(subproc);
  size_t kept = 0;
  for (size_t kind = 0; kind < MI_PAGE_HUGE; kind++) kept += (subproc->empty[kind] != NULL ? 1 : 0);
  const bool in_use = (mi_atomic_load_relaxed(&subproc->segment_count) > kept || subproc->abandoned_count > 0);
  mi_segments_unlock(subproc);
  if (in_use) return false;
  _mi_segments_free_empty(subproc);
  return true;
}

/* ------------------------------------------------------------------------------------------
   Segment allocation and release
------------------------------------------------------------------------------------------ */
/* The kind of standard segment that holds pages for blocks of `block_size` (not huge). */
static mi_page_kind_t mi_segment_kind_of(size_t block_size) {
  return (block_size <= MI_SMALL_OBJ_SIZE_MAX ? MI_PAGE_SMALL : block_size <= MI_MEDIUM_OBJ_SIZE_MAX ? MI_PAGE_MEDIUM : MI_PAGE_LARGE);
}

/* The slot size of a standard segment kind; it has MI_SEGMENT_SIZE >> shift slots. */
static size_t mi_segment_page_shift(mi_page_kind_t kind) {
  return (kind == MI_PAGE_SMALL ? MI_SMALL_PAGE_SHIFT : kind == MI_PAGE_MEDIUM ? MI_MEDIUM_PAGE_SHIFT : MI_LARGE_SLOT_SHIFT);
}

/* The header, `capacity` page descriptors and one sentinel descriptor (see types.h). */
static size_t mi_segment_info_size(size_t capacity) {
  size_t size = offsetof(mi_segment_t, pages) + (capacity + 1) * sizeof(mi_page_t);
#if MI_SECURE > 0
  return _mi_align_up(size, _mi_os_page_size()) + MI_SECURE_GUARD_SIZE;   /* and the guard page */
#else
  return _mi_align_up(size, MI_MAX_ALIGN_SIZE);
#endif
}
/* the first medium page holds one block of the largest medium bin beside the header */
_Static_assert(offsetof(mi_segment_t, pages) + (MI_MEDIUM_PAGES_PER_SEGMENT + 1) * sizeof(mi_page_t) + MI_MAX_ALIGN_SIZE
               + MI_PADDING_GUARD_ROOM <= MI_MEDIUM_PAGE_SIZE - MI_MEDIUM_OBJ_SIZE_MAX, "medium header fits beside a largest medium block");

/* the first page of a medium class may take the header's slot of a large segment */
_Static_assert(offsetof(mi_segment_t, pages) + (MI_LARGE_SLOTS_PER_SEGMENT + 1) * sizeof(mi_page_t) + MI_MAX_ALIGN_SIZE
               + MI_PADDING_GUARD_ROOM <= MI_LARGE_SLOT_SIZE - MI_MEDIUM_OBJ_SIZE_MAX, "large header fits beside a largest medium block");

/* Start of a page's blocks. Blocks of a power-of-two size are naturally aligned to their size
   when that costs less than one block, so e.g. 4 KiB blocks serve page-aligned requests. */
uint8_t* _mi_segment_page_area(const mi_segment_t* segment, const mi_page_t* page, size_t* area_size) {
  const size_t slots = (page->slot_count > 1 ? page->slot_count : 1);   /* a span: several */
  size_t psize = (mi_segment_has_slots(segment) ? slots << segment->page_shift : segment->segment_size);
  uint8_t* p = (uint8_t*)segment + ((size_t)page->segment_idx << segment->page_shift);   /* (huge: index 0) */
  if (page->segment_idx == 0) {
    p += segment->info_size;
    psize -= segment->info_size;
  }
  *area_size = psize - MI_SECURE_GUARD_SIZE;   /* secure builds: the guard page at the end */
  return p;
}

uint8_t* _mi_segment_page_start(const mi_segment_t* segment, const mi_page_t* page, size_t* page_size) {
  size_t psize;
  uint8_t* p = _mi_segment_page_area(segment, page, &psize);
  const size_t bsize = page->block_size;
  if (MI_PADDING_GUARD_ROOM > 0 && bsize <= MI_MEDIUM_OBJ_SIZE_MAX) {
    /* debug and tracking builds: room for the first block's guard word (types.h), which the
       tracking builds keep inaccessible; not for large blocks, whose spans stay slot-aligned
       and exactly sized */
    p += MI_PADDING_GUARD_ROOM;
    psize -= MI_PADDING_GUARD_ROOM;
  }
  if (mi_segment_has_slots(segment) && bsize > 0 && mi_is_power_of_two(bsize) && bsize <= MI_MEDIUM_OBJ_SIZE_MAX) {
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
                                   mi_page_kind_t kind, size_t capacity, size_t page_shift,
                                   const mi_memid_t* memid, bool all_committed, mi_subproc_t* subproc) {
  mi_track_mem_undefined(segment, info_size);   /* tracking builds: may have held blocks before */
  memset(segment, 0, info_size);
  segment->segment_size = segment_size;
  segment->info_size    = info_size;
  segment->capacity     = capacity;
  segment->page_shift   = page_shift;
  segment->page_kind    = kind;
  segment->memid        = *memid;
  /* the sentinel: never in use, xthread_id 0 (zeroed) so free leaves the fast path, block_size 0 */
  segment->subproc      = subproc;
  segment->cookie       = _mi_segment_cookie(segment);
  for (size_t i = 0; i < capacity; i++) {
    segment->pages[i].segment_idx  = (uint8_t)i;
    segment->pages[i].is_zero_init = memid->initially_zero;
    segment->pages[i].is_committed = (all_committed || i == 0);
#if MI_SECURE == 0
    segment->pages[i].tail_dirty = (memid->initially_zero ? 0 : MI_PAGE_TAIL_ALL);
#endif
  }
  _mi_segment_map_set(segment, true);
  mi_atomic_add_relaxed(&subproc->segment_count, 1);
  mi_os_stat_increase(segments, 1);
}

/* ------------------------------------------------------------------------------------------
   Guard pages (secure builds): the last OS page of the header (in info_size) and of every page
   in use faults on access, so an overflow off the end of a page, or into the page descriptors,
   stops there. Slots keep their guard when their page is freed (no system call when the slot
   is taken again for a page of the same span length); a large page's span has its guard at
   its end only. The guards go when the segment goes back to its arena (mi_segment_guards_done).
   Page guards need the kernel's guard markers (Linux 6.13+): with mprotect instead, each would
   split the mapping in two, and a large heap would exhaust vm.max_map_count (mmap then fails).
   Without markers only the header's guard and a huge block's are installed (one or two
   mappings more per segment).
------------------------------------------------------------------------------------------ */
#if MI_SECURE > 0
static bool mi_segment_guard_ok(const mi_segment_t* segment) {
  return (!segment->memid.is_pinned && _mi_os_page_size() == MI_SECURE_GUARD_SIZE);
}
/* (may_protect: mprotect is an acceptable fallback here) */
static bool mi_segment_guard(mi_segment_t* segment, uint8_t* at, bool install, bool may_protect) {
  return _mi_os_guard(at, MI_SECURE_GUARD_SIZE, install, may_protect && !segment->memid.commit_syscall);
}
/* The header's guard page: the last OS page of info_size. */
static uint8_t* mi_segment_header_guard(mi_segment_t* segment) {
  return (uint8_t*)segment + segment->info_size - MI_SECURE_GUARD_SIZE;
}
/* A huge segment's guard at its end (bit 0 of guarded): installed with the segment, moved when
   the block grows (_mi_segment_huge_try_grow); where it cannot be, the block stays unguarded. */
static void mi_segment_huge_guard_end(mi_segment_t* segment, bool install) {
  if (!segment->guards || ((segment->guarded & 1) != 0) == install) return;
  if (mi_segment_guard(segment, (uint8_t*)segment + segment->segment_size - MI_SECURE_GUARD_SIZE, install, true)) segment->guarded ^= 1;
}
/* A new segment: the header's guard page (and a huge segment's at its end). */
static void mi_segment_guards_init(mi_segment_t* segment) {
  segment->guarded = 0;
  segment->guards = mi_segment_guard_ok(segment) &&
                    mi_segment_guard(segment, mi_segment_header_guard(segment), true, true);
  if (!mi_segment_has_slots(segment)) mi_segment_huge_guard_end(segment, true);
}
/* The span [idx, idx + count) becomes a page: a guard at its end and none inside. False if a
   guard inside cannot be removed (the page would fault). */
static bool mi_segment_guards_claim(mi_segment_t* segment, size_t idx, size_t count) {
  if (!segment->guards) return true;
  const size_t slot_size = (size_t)1 << segment->page_shift;
  for (size_t i = idx; i < idx + count; i++) {
    const uint64_t bit = (uint64_t)1 << i;
    const bool want = (i == idx + count - 1);
    if (((segment->guarded & bit) != 0) == want) continue;
    uint8_t* at = (uint8_t*)segment + (i + 1) * slot_size - MI_SECURE_GUARD_SIZE;
    if (mi_segment_guard(segment, at, want, false)) segment->guarded ^= bit;
    else if (!want) return false;   /* an unguarded page end is only a lost check; a guard inside is a fault */
  }
  return true;
}
/* Before the segment's memory goes back to the arena. A removal walks the page tables of its
   whole range (0.3 ms for 64 MiB, 20 us for 4 MiB): a huge segment has its two guards removed
   one by one (malloc-large: 2.0 -> 1.36 times the release build's time), a standard one, with
   up to a guard per slot, in one call. */
static bool mi_segment_guards_done(mi_segment_t* segment) {
  if (!segment->guards) return true;
  if (mi_segment_has_slots(segment)) {
    return _mi_os_guard(segment, segment->segment_size, false, !segment->memid.commit_syscall);
  }
  mi_segment_huge_guard_end(segment, false);
  const bool header = mi_segment_guard(segment, mi_segment_header_guard(segment), false, true);
  return (header && (segment->guarded & 1) == 0);
}
#endif

/* A standard (MI_SEGMENT_SIZE) segment for small or medium (and large) pages, not yet on its
   free queue (no lock held: arena allocation is lock-free). The first eager_commit_delay
   segments a thread creates commit page by page (a thread that allocates little commits
   little); all others are committed whole. */
static mi_segment_t* mi_segment_alloc_standard(mi_page_kind_t kind, mi_arena_id_t req_arena_id, int numa_node, mi_tld_t* tld) {
  mi_assert_internal(kind <= MI_PAGE_LARGE);
  /* (near a memory limit, or under a hard one, commit only the slots used: limit.h) */
  const bool eager = (mi_option_is_enabled(mi_option_eager_commit) && !_mi_limit_is_pressing() && !_mi_limit_hard_in_force() &&
                      tld->segments.created >= (size_t)mi_option_get_clamp(mi_option_eager_commit_delay, 0, 1024));
  mi_memid_t memid;
  mi_segment_t* segment = _mi_segment_map_alloc(MI_SEGMENT_SIZE, MI_SEGMENT_SIZE, 0, eager, req_arena_id, numa_node, &memid);
  if (segment == NULL) return NULL;
  const size_t page_shift = mi_segment_page_shift(kind);
  const size_t capacity = MI_SEGMENT_SIZE >> page_shift;
  const bool all_committed = memid.initially_committed || memid.is_pinned;
  if (!all_committed) {
    /* the header's slot, before the header is written */
    if (!_mi_arena_commit(&memid, segment, (size_t)1 << page_shift)) {
      _mi_arena_free(segment, memid.size, 0, &memid);
      return NULL;
    }
  }
  tld->segments.created++;
  mi_segment_init_header(segment, MI_SEGMENT_SIZE, mi_segment_info_size(capacity), kind, capacity, page_shift, &memid, all_committed, tld->subproc);
#if MI_SECURE > 0
  mi_segment_guards_init(segment);
#endif
  return segment;
}

/* Under the lock: a new segment joins its free queue. Memory an arena hands out again before
   its purge may still be resident: its slots wait for a purge like any unused slot (else they
   would stay resident, unused, for as long as the segment lives: thread-churn held 100 MiB of
   such slots). */
static void mi_segment_publish(mi_segment_t* segment) {
  mi_segment_insert_in_free_queue(segment);
  if (!segment->memid.initially_zero) {
    for (size_t i = 1; i < segment->capacity; i++) _mi_segments_purge_schedule(segment, &segment->pages[i], 1, false, false);
  }
}

/* Release a segment with no page in use, off every queue (no lock held). */
static void mi_segment_free(mi_segment_t* segment) {
  mi_assert_internal(segment->used == 0 && !segment->in_free_queue);
  _mi_segment_map_set(segment, false);
  mi_atomic_sub_relaxed(&segment->subproc->segment_count, 1);
  mi_os_stat_decrease(segments, 1);
  if (segment->page_kind == MI_PAGE_HUGE) mi_os_stat_decrease(malloc_huge, segment->segment_size - segment->info_size - MI_SECURE_GUARD_SIZE);
  segment->cookie = 0;
  const mi_memid_t memid = segment->memid;
  /* arena memory must come back without a guard in it (an unmap removes them): if the OS
     refuses to remove one, the segment's memory is kept out of use instead */
  bool keep = false;
#if MI_SECURE > 0
  keep = (!mi_segment_guards_done(segment) && memid.arena_idx >= 0);
#endif
  /* hand back whole committed memory: committing unused slots costs no RSS. If the OS refuses
     a commit (with commit_syscall, or the hard memory limit), the whole range is decommitted and
     handed back uncommitted instead: the arena's committed bits must be true for every byte */
  bool committed = true;
  size_t uncounted = 0;   /* bytes of slots not committed (not in the committed statistic) */
  for (size_t i = 1; i < segment->capacity && mi_segment_has_slots(segment); i++) {
    mi_page_t* page = &segment->pages[i];
    if (page->is_committed || memid.is_pinned || keep) continue;
    if (!committed || !_mi_arena_commit(&memid, mi_segment_slot_start(segment, page), mi_segment_slot_size(segment))) {
      committed = false;
      uncounted += mi_segment_slot_size(segment);
    }
  }
  if (!committed) {
    mi_os_stat_increase(committed, uncounted);   /* (the decommit counts the whole range) */
    if (!_mi_arena_decommit(&memid, segment, memid.size)) keep = true;
  }
  if (keep) {
    _mi_warning_message("unable to return the memory of segment %p (%zu KiB) to its arena: it is kept out of use\n", (void*)segment, memid.size / MI_KiB);
    return;
  }
  _mi_arena_free(segment, memid.size, (committed ? memid.size : 0), &memid);
}

/* ------------------------------------------------------------------------------------------
   Pages inside segments
------------------------------------------------------------------------------------------ */
/* Under the lock (or on a new huge segment): the unused slots [page, page + count) become a
   page in use (committing them if needed); NULL if a commit fails (the slots stay unused). */
static mi_page_t* mi_segment_page_claim(mi_segment_t* segment, mi_page_t* page, size_t count) {
  mi_assert_internal(count >= 1 && count <= MI_SPAN_SLOTS_MAX && page->segment_idx + count <= segment->capacity);
  mi_subproc_t* subproc = segment->subproc;
  if (mi_segment_has_slots(segment)) _mi_segments_purge_note_reuse(page, count, subproc);
  if (segment->used == 0 && segment->page_kind < MI_PAGE_HUGE && subproc->empty[segment->page_kind] == segment) {
    subproc->empty[segment->page_kind] = NULL;   /* in use again */
  }
  for (size_t i = 0; i < count; i++) {
    mi_page_t* slot = &page[i];
    mi_assert_internal(!slot->segment_in_use && slot->span_tail == 0);
    if (slot->purge_pending) _mi_segments_purge_queue_remove(segment, slot);
    if (!mi_segment_slot_commit(segment, slot)) {
      _mi_segments_purge_schedule(segment, page, i, count > 1, false);
      return NULL;
    }
  }
#if MI_SECURE > 0
  if (mi_segment_has_slots(segment) && !mi_segment_guards_claim(segment, page->segment_idx, count)) {
    _mi_segments_purge_schedule(segment, page, count, count > 1, false);
    return NULL;
  }
#endif
  for (size_t i = 1; i < count; i++) {
    page[i].span_tail = (uint8_t)i;
    if (!page[i].is_zero_init) page->is_zero_init = 0;   /* the span is zero if all its slots are */
#if MI_SECURE == 0
    if (page[i].tail_dirty != 0) page->tail_dirty = MI_PAGE_TAIL_ALL;
#endif
  }
  const bool all_abandoned = mi_segment_all_abandoned(segment);
  page->segment_in_use = 1;
  page->slot_count = (uint8_t)count;
  segment->used++;
  segment->slots_used += count;
  mi_segment_abandoned_stat(segment, all_abandoned);
  mi_os_stat_increase(pages, 1);
  if (segment->slots_used == segment->capacity) {
    mi_segment_remove_from_free_queue(segment);
  }
  return page;
}

/* Secure builds: are the guards of slots [i, i + count) already where a page of that span needs
   them (one at its end, none inside)? Always true where the segment has no guards (and in other
   builds). Installing a guard discards the OS page it lands on and removing one leaves that page
   to fault in again, each a madvise that flushes the other threads' TLBs: slots taken without
   regard to their guards went back and forth between one-slot pages and spans, and mstress ran
   2.2 times as long as the release build with 5 times its page faults. */
static bool mi_segment_guards_ready(const mi_segment_t* segment, size_t i, size_t count) {
#if MI_SECURE > 0
  if (!segment->guards) return true;
  const uint64_t inner = (((uint64_t)1 << (count - 1)) - 1) << i;
  return ((segment->guarded & inner) == 0 && ((segment->guarded >> (i + count - 1)) & 1) != 0);
#else
  (void)segment; (void)i; (void)count;
  return true;
#endif
}

_Static_assert(MI_SPAN_SLOTS_MAX < MI_LARGE_SLOTS_PER_SEGMENT, "the largest span fits in a large segment");
static bool mi_segment_slot_is_free(const mi_segment_t* segment, size_t i) {
  return (!segment->pages[i].segment_in_use && segment->pages[i].span_tail == 0);
}

/* A run of unused slots that holds a page for blocks of `block_size`, and in *count its length:
   the first unused slot for small and medium blocks; for a large block as many slots as it
   needs, one more at the header's slot, which is therefore tried last (the slots around a span
   stay free for medium pages). Secure builds first look for slots whose guards are ready
   (mi_segment_guards_ready), and take spans from the end of the segment, one-slot pages from
   its start, so that the two kinds of use seldom meet. NULL if there is none. */
static mi_page_t* mi_segment_find_free_slots(mi_segment_t* segment, size_t block_size, size_t* count) {
  const size_t n = segment->capacity;
  const size_t slot_size = (size_t)1 << segment->page_shift;
  for (int ready = (MI_SECURE > 0 ? 1 : 0); ready >= 0; ready--) {
    if (block_size <= MI_MEDIUM_OBJ_SIZE_MAX) {
      for (size_t i = 0; i < n; i++) {
        /* (a secure build's header slot of a large segment, with its guards, may be too small) */
        if (i == 0 && MI_SECURE > 0 && slot_size < segment->info_size + MI_SECURE_GUARD_SIZE + block_size) continue;
        if (mi_segment_slot_is_free(segment, i) && (!ready || mi_segment_guards_ready(segment, i, 1))) {
          *count = 1;
          return &segment->pages[i];
        }
      }
      continue;
    }
    for (size_t k = 1; k <= n; k++) {
      const size_t i = (MI_SECURE > 0 ? n - k : k % n);
      const size_t need = _mi_divide_up(block_size + (i == 0 ? segment->info_size : 0) + MI_SECURE_GUARD_SIZE, slot_size);
      if (i + need > n) continue;
      if (ready && !mi_segment_guards_ready(segment, i, need)) continue;
      size_t run = 0;
      while (run < need && mi_segment_slot_is_free(segment, i + run)) run++;
      if (run == need) { *count = need; return &segment->pages[i]; }
    }
  }
  return NULL;
}


/* A one-byte hash of the calling thread (never 0), for slot affinity (mi_page_t.freed_by). */
static uint8_t mi_thread_hash8(void) {
  const uintptr_t tid = _mi_thread_id();
  const uint8_t h = (uint8_t)((tid >> 8) ^ (tid >> 16) ^ (tid >> 24) ^ (tid >> 32));
  return (h == 0 ? 1 : h);
}

#if MI_SECURE == 0
/* What a page being freed leaves resident in its slot, for the slot's next page (types.h,
   tail_dirty): the OS pages up to the end of the blocks it handed out, and what it took over
   from an earlier page and kept. A span: all of it. */
static uint8_t mi_segment_page_dirty_extent(mi_segment_t* segment, mi_page_t* page) {
  if (page->slot_count != 1 || page->block_size == 0) return MI_PAGE_TAIL_ALL;
  size_t area_size;
  uint8_t* const area = _mi_segment_page_area(segment, page, &area_size);
  const size_t os_page = _mi_os_page_size();
  const uintptr_t base = _mi_align_down((uintptr_t)area, os_page);
  const uintptr_t end = mi_page_blocks_end(page);
  size_t n = (end > base ? _mi_divide_up(end - base, os_page) : 0);
  if (page->tail_dirty > n) n = page->tail_dirty;
  return (uint8_t)(n < MI_PAGE_TAIL_ALL ? n : MI_PAGE_TAIL_ALL);
}
#endif

/* Mark a page unused in its segment, with the other slots of its span (their number in
   *slots); returns true when the segment has no pages left in use. The slots keep their commit
   state. */
static bool mi_segment_page_clear(mi_segment_t* segment, mi_page_t* page, size_t* slots) {
  mi_assert_internal(page->segment_in_use && page->slot_count >= 1 && !page->abandoned_listed);
  if (mi_unlikely(mi_page_prof_samples(page) != 0)) _mi_observe_page_gone(page);   /* mi_heap_destroy: blocks never freed */
  const size_t count = page->slot_count;
  mi_os_stat_decrease(pages, 1);
  mi_os_stat_decrease(page_committed, (size_t)page->capacity * page->block_size);
  if (MI_STAT > 1 && page->block_size > 0) mi_os_stat_decrease(page_bins[_mi_bin(page->block_size)], 1);
  const uint8_t idx = page->segment_idx;
  const uint8_t committed = page->is_committed;
#if MI_SECURE == 0
  const uint8_t dirty = mi_segment_page_dirty_extent(segment, page);
  /* bin + 1, or 0: a one-slot page of a large segment is placed by its run of free slots, not by its bin */
  const uint8_t freed_bin = (uint8_t)(segment->page_kind < MI_PAGE_LARGE && page->block_size > 0 ? _mi_bin(page->block_size) + 1 : 0);
#endif
  memset(page, 0, sizeof(*page));
  page->segment_idx = idx;
  page->is_committed = committed;
  page->is_zero_init = 0;   /* the memory has been used */
#if MI_SECURE == 0
  page->tail_dirty = dirty;
  page->freed_bin = freed_bin;
#endif
  for (size_t i = 1; i < count; i++) {
    mi_assert_internal(page[i].span_tail == i);
    page[i].span_tail = 0;
    page[i].is_zero_init = 0;
#if MI_SECURE == 0
    page[i].tail_dirty = MI_PAGE_TAIL_ALL;
#endif
  }
  const bool all_abandoned = mi_segment_all_abandoned(segment);
  segment->used--;
  segment->slots_used -= count;
  mi_segment_abandoned_stat(segment, all_abandoned);
  *slots = count;
  return (segment->used == 0);
}

/* Under the lock (huge segments: by the page's owner, or under the lock while abandoned): a
   page whose blocks are all free leaves its segment. Its slots wait for their purge (at once
   with `purge_now`); a segment left without pages in use is kept as its subprocess' empty one
   of the kind if there is none, else it is returned: then the caller releases it with
   _mi_segment_free_released after the lock. */
mi_segment_t* _mi_segment_page_release_locked(mi_page_t* page, bool purge_now) {
  mi_segment_t* segment = _mi_page_segment(page);
  size_t slots;
  if (mi_segment_page_clear(segment, page, &slots)) {
    const mi_page_kind_t kind = (mi_page_kind_t)segment->page_kind;
    mi_subproc_t* subproc = segment->subproc;
    if (MI_SEGMENT_KEEP_EMPTY && kind < MI_PAGE_HUGE && subproc->empty[kind] == NULL) {
      subproc->empty[kind] = segment;   /* kept (types.h); its slots wait for their purge */
      _mi_segments_purge_schedule(segment, page, slots, slots > 1, purge_now);
      mi_segment_insert_in_free_queue(segment);
      return NULL;
    }
    mi_segment_remove_from_free_queue(segment);
    _mi_segments_purge_unqueue(segment);
    return segment;
  }
  _mi_segments_purge_schedule(segment, page, slots, slots > 1, purge_now);
  mi_segment_insert_in_free_queue(segment);
  return NULL;
}

void _mi_segment_free_released(mi_segment_t* segment) {
  if (segment != NULL) mi_segment_free(segment);
}

/* A huge segment goes back to its arena, where its blocks wait for the arena purge delay; a
   big run is noted for the thread's end (types.h, mi_arena_run_t). */
static void mi_segment_note_big_free(mi_tld_t* tld, const mi_segment_t* segment) {
  const mi_memid_t* memid = &segment->memid;
  if (memid->arena_idx < 0 || memid->is_pinned || memid->size < MI_ARENA_UNPURGED_MAX) return;
  mi_arena_run_t* run = &tld->segments.big_freed[tld->segments.big_freed_next];
  tld->segments.big_freed_next = (uint8_t)((tld->segments.big_freed_next + 1) % MI_BIG_FREED_SLOTS);
  run->arena_idx = memid->arena_idx;
  run->block_index = memid->block_index;
  run->count = (uint32_t)(memid->size / MI_ARENA_BLOCK_SIZE);
}

/* Thread exit, after its pages went: the big runs it freed are purged now if still free and
   waiting (a thread that ends will not reuse them; others reuse them at the price peers pay on
   every such free: glibc unmaps at once, jemalloc purges blocks above 8 MiB at once). */
void _mi_segments_big_freed_purge(mi_tld_t* tld) {
  for (size_t i = 0; i < MI_BIG_FREED_SLOTS; i++) {
    mi_arena_run_t* run = &tld->segments.big_freed[i];
    if (run->count == 0) continue;
    _mi_arena_purge_run_now(run->arena_idx, run->block_index, run->count);
    run->count = 0;
  }
}

/* The owner returns an empty page (page.c). */
void _mi_segment_page_free(mi_page_t* page, mi_tld_t* tld) {
  mi_segment_t* segment = _mi_page_segment(page);
  mi_subproc_t* subproc = segment->subproc;
  const bool has_slots = mi_segment_has_slots(segment);
  mi_segment_t* released;
  if (!has_slots) {
    mi_segment_note_big_free(tld, segment);
    released = _mi_segment_page_release_locked(page, false);   /* a huge segment: nobody else knows it */
  }
  else {
    mi_segments_lock(subproc);
    released = _mi_segment_page_release_locked(page, false);
    if (released == NULL) page->freed_by = mi_thread_hash8();
    mi_assert_expensive(_mi_observe_check(MI_CHECK_SEGMENT_LOCKED, segment, NULL));
    mi_segments_unlock(subproc);
  }
  _mi_segment_free_released(released);   /* (segment may be gone now) */
  if (has_slots) _mi_segments_purge_notify(subproc);
  /* a thread that is mostly freeing (shrinking) purges as it goes */
  _mi_segments_purge_tick(tld);
}

/* ------------------------------------------------------------------------------------------
   NUMA affinity (mi_heap_set_numa_affinity, sheap.c): a heap's pages are taken from memory of
   its node first. The main heap's parts are the threads' backing heaps, which follow the node
   set for it here.
------------------------------------------------------------------------------------------ */
static _Atomic(int) mi_segments_main_numa = -1;

void _mi_segments_set_main_numa(int numa_node) {
  mi_atomic_store_relaxed(&mi_segments_main_numa, numa_node);
}

static int mi_heap_numa_node(const mi_heap_t* heap) {
  if (heap == heap->tld->heap_backing) return mi_atomic_load_relaxed(&mi_segments_main_numa);
  return mi_atomic_load_relaxed(&((mi_heap_t*)heap)->numa_node);
}

/* May `segment`'s memory serve `heap`: its arena (_mi_arena_memid_is_suitable), and of
   numa_node or of none if numa_node >= 0? */
static bool mi_segment_suits(const mi_segment_t* segment, const mi_heap_t* heap, int numa_node) {
  return (_mi_arena_memid_is_suitable(&segment->memid, heap->arena_id) && _mi_arena_memid_on_node(&segment->memid, numa_node));
}

/* Free slots for a page of `block_size` (see mi_segment_find_free_slots) in the first segment
   of the queue that has them and whose memory may serve `heap` (mi_segment_suits); usually the
   first. */
static mi_page_t* mi_segment_queue_find_slots(mi_segment_queue_t* queue, mi_heap_t* heap, int numa_node, size_t block_size, size_t* count) {
  for (mi_segment_t* segment = queue->first; segment != NULL; segment = segment->next) {
    if (!mi_segment_suits(segment, heap, numa_node)) continue;
    mi_page_t* page = mi_segment_find_free_slots(segment, block_size, count);
    if (page != NULL) return page;
  }
  return NULL;
}

#if MI_SECURE == 0
/* A warm slot a page of the same bin left (types.h, mi_subproc_t: slot hints): the thread's
   own, else the newest; NULL if none suits. Out of line: a page set-up is rare, and its code is
   hot text. */
static mi_decl_noinline mi_page_t* mi_segment_find_hinted_slot(mi_heap_t* heap, mi_page_kind_t kind, int numa_node, size_t block_size, uint8_t self) {
  (void)kind;   /* (debug builds: checked) */
  mi_page_t* const* hints = (*_mi_segments_purge_hints(heap->tld->subproc))[_mi_bin(block_size)];
  mi_page_t* found = NULL;
  bool found_own = false;
#if defined(__GNUC__) && !defined(__clang__)
  #pragma GCC unroll 1   /* (unrolled, the four looks were 760 bytes of hot text) */
#endif
  for (size_t i = 0; i < MI_SLOT_HINTS; i++) {
    mi_page_t* page = hints[i];
    if (page == NULL) continue;
    mi_assert_internal(_mi_page_segment(page)->page_kind == kind);   /* (a bin has one kind) */
    const bool own = (page->freed_by == self);
    if (found == NULL || (own && !found_own) || (own == found_own && page->purge_expire > found->purge_expire)) {
      found = page;
      found_own = own;
    }
  }
  /* (a heap bound to an arena or a node: rarely do the other hints lie in another arena or node) */
  return (found != NULL && mi_segment_suits(_mi_page_segment(found), heap, numa_node) ? found : NULL);
}
#endif

/* A slot of `kind` (small or medium) still waiting in its purge queue (resident: reusing it
   costs no page faults, where a purged slot faults in every OS page again): one that a page of
   the same bin left (it holds what the new page will most likely reach: larson 14 K -> 4 K
   page faults, glibc-thread 6.8 -> 5.9 MiB; docs/memory.md), else the most recently freed
   among the newest few of the kind, the calling thread's own first (still in its core's
   cache: taking the newest of any thread cost alloc-test with 4 threads 3-8% of its time); NULL
   if none suits. With one queue for all kinds, where only the newest 4 slots of any kind were
   looked at, rptest held 25 MiB more (200 -> 175 MiB). */
static mi_page_t* mi_segment_find_resident_page(mi_heap_t* heap, mi_page_kind_t kind, int numa_node, size_t block_size) {
  const uint8_t self = mi_thread_hash8();
  mi_page_t* found = NULL;
#if MI_SECURE == 0
  found = mi_segment_find_hinted_slot(heap, kind, numa_node, block_size, self);
  if (found != NULL) return found;
#else
  (void)block_size;
#endif
  int budget = 8;
  for (mi_page_t* page = heap->tld->subproc->purge[kind].last; page != NULL && budget-- > 0; page = page->prev) {
    const mi_segment_t* segment = _mi_page_segment(page);
    if (!mi_segment_guards_ready(segment, page->segment_idx, 1)) continue;   /* (secure builds) */
    if (!mi_segment_suits(segment, heap, numa_node)) continue;
    if (page->freed_by == self) return page;
    if (found == NULL && budget >= 4) found = page;   /* the newest 4: any thread's */
  }
  return found;
}

/* The length, up to `max`, of the run of unused slots that slot i lies in. */
static size_t mi_segment_free_run(const mi_segment_t* segment, size_t i, size_t max) {
  size_t run = 1;
  for (size_t j = i; j > 0 && run < max && mi_segment_slot_is_free(segment, j - 1); j--) run++;
  for (size_t j = i + 1; j < segment->capacity && run < max && mi_segment_slot_is_free(segment, j); j++) run++;
  return run;
}

/* As mi_segment_find_resident_page, for a one-slot page in a large segment, whose slots spans
   share: of the newest 32 waiting slots (a freed span queues up to 17), the one in the shortest
   run of unused slots, the thread's own first among equals, then the newest. The newest is
   mostly the last slot of a span just freed: a one-slot page there split the run that the next
   large block needed, which then took slots nobody had touched while the freed ones waited for
   their purge (mstress: peak RSS 29.7 -> 24.1 MiB; docs/memory.md). Out of line: programs with
   small blocks only never come here. */
static mi_decl_noinline mi_page_t* mi_segment_find_resident_hole(mi_heap_t* heap, int numa_node) {
  const uint8_t self = mi_thread_hash8();
  mi_page_t* found = NULL;
  size_t found_run = SIZE_MAX;
  const mi_page_t* last = NULL;   /* the previous candidate and its run */
  size_t last_run = 0;
  int budget = (int)MI_LARGE_SLOTS_PER_SEGMENT;
  for (mi_page_t* page = heap->tld->subproc->purge[MI_PAGE_LARGE].last; page != NULL && budget-- > 0; page = page->prev) {
    const mi_segment_t* segment = _mi_page_segment(page);
    if (!mi_segment_guards_ready(segment, page->segment_idx, 1)) continue;   /* (secure builds) */
    if (!mi_segment_suits(segment, heap, numa_node)) continue;
    /* (a freed span queues its slots one after the other: they share a run) */
    const bool same_run = (last != NULL && (page + 1 == last || page == last + 1));
    const size_t run = (same_run ? last_run : mi_segment_free_run(segment, page->segment_idx, MI_SPAN_SLOTS_MAX));
    last = page;
    last_run = run;
    if (run < found_run || (run == found_run && page->freed_by == self && found->freed_by != self)) {
      found = page;
      found_run = run;
      if (run == 1 && page->freed_by == self) break;   /* (none better) */
    }
  }
  return found;
}

/* A small, medium or large page (of `kind`'s segments, for blocks of `block_size`): a resident
   unused slot (one-slot pages), else free slots of any segment of the subprocess, else of a
   fresh segment. A heap with a NUMA node looks for memory of that node first (a fresh segment
   of it too), then for any: the affinity is a preference, and a heap never takes a fresh
   segment while a suitable one has room. */
static mi_decl_noinline mi_page_t* mi_segment_page_alloc_in(mi_heap_t* heap, mi_page_kind_t kind, size_t block_size) {
  mi_subproc_t* subproc = heap->tld->subproc;
  mi_segment_queue_t* queue = mi_segment_free_queue(kind, subproc);
  const int numa_node = mi_heap_numa_node(heap);
  size_t count = 1;
  mi_page_t* page = NULL;
  mi_segments_lock(subproc);
  for (int pass = (numa_node >= 0 ? 0 : 1); pass < 2 && page == NULL; pass++) {
    const int node = (pass == 0 ? numa_node : -1);
    if (block_size <= MI_MEDIUM_OBJ_SIZE_MAX) {
      page = (kind == MI_PAGE_LARGE ? mi_segment_find_resident_hole(heap, node) : mi_segment_find_resident_page(heap, kind, node, block_size));
    }
    if (page == NULL) page = mi_segment_queue_find_slots(queue, heap, node, block_size, &count);
    if (page == NULL) {
      mi_segments_unlock(subproc);
      mi_segment_t* segment = mi_segment_alloc_standard(kind, heap->arena_id, node, heap->tld);
      mi_segments_lock(subproc);
      if (segment != NULL) {
        mi_segment_publish(segment);
        page = mi_segment_find_free_slots(segment, block_size, &count);
        mi_assert_internal(page != NULL);
      }
    }
  }
  if (page == NULL) {
    mi_segments_unlock(subproc);
    return NULL;
  }
  page = mi_segment_page_claim(_mi_page_segment(page), page, count);
  mi_segments_unlock(subproc);
  _mi_segments_purge_notify(subproc);   /* (a new segment's stale slots, a failed claim's) */
  return page;
}

/* A huge page: one block of at least `size` bytes in its own segment, with the block start p
   such that the first p >= block with (p + align_offset) % alignment == 0 (alignment 0 or a
   power of two) lies at distance d from the segment start with info_size <= d <= MI_SEGMENT_SIZE,
   so (p - 1) & ~MI_SEGMENT_MASK still finds the segment, and p + size fits. */
static mi_decl_noinline mi_page_t* mi_segment_huge_page_alloc(mi_heap_t* heap, size_t size, size_t alignment, size_t align_offset) {
  const size_t info_size = mi_segment_info_size(1);
  size_t d;
  size_t os_alignment = MI_SEGMENT_SIZE, os_offset = 0;
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
  size_t segment_size = _mi_os_good_alloc_size(d + size + MI_SECURE_GUARD_SIZE);
  if (segment_size <= MI_SEGMENT_SIZE) segment_size = MI_SEGMENT_SIZE + _mi_os_page_size();
  mi_memid_t memid;
  const int numa_node = mi_heap_numa_node(heap);
  mi_segment_t* segment = NULL;
  if (numa_node >= 0) segment = _mi_segment_map_alloc(segment_size, os_alignment, os_offset, true, heap->arena_id, numa_node, &memid);
  if (segment == NULL) segment = _mi_segment_map_alloc(segment_size, os_alignment, os_offset, true, heap->arena_id, -1, &memid);
  if (segment == NULL) return NULL;
  mi_segment_init_header(segment, segment_size, info_size, MI_PAGE_HUGE, 1, MI_HUGE_PAGE_SHIFT, &memid, true, heap->tld->subproc);
#if MI_SECURE > 0
  mi_segment_guards_init(segment);
#endif
  mi_page_t* page = mi_segment_page_claim(segment, &segment->pages[0], 1);
  /* the block starts right after the header (keeps it word aligned); the caller hands out
     the aligned interior pointer segment + d */
  mi_page_set_start(page, (uint8_t*)segment + info_size);
  page->block_size = segment_size - info_size - MI_SECURE_GUARD_SIZE;
  mi_os_stat_increase(malloc_huge, page->block_size);
  mi_os_stat_counter_increase(malloc_huge_count, 1);
  return page;
}

bool _mi_segment_huge_try_grow(mi_page_t* page, void* p, size_t size, bool* ext_zero) {
  mi_segment_t* segment = _mi_page_segment(page);
  if (segment->page_kind != MI_PAGE_HUGE || (uint8_t*)p != mi_page_start(page)) return false;
  /* other threads read the block size of pages they own (collect); only the owner changes it */
  if (mi_page_owner(page) != _mi_thread_id()) return false;
  const size_t d = (size_t)((uint8_t*)p - (uint8_t*)segment) + MI_SECURE_GUARD_SIZE;   /* (and the guard after the block) */
  if (size > MI_ARENA_MAX_OBJ_SIZE - d || d + size <= segment->segment_size) return false;
  if (!_mi_segment_map_can_hold(segment, _mi_align_up(d + size, MI_ARENA_BLOCK_SIZE)) ||
      !_mi_segment_map_prepare(segment, _mi_align_up(d + size, MI_ARENA_BLOCK_SIZE))) return false;
  mi_memid_t memid = segment->memid;
  bool zero = false;
  /* secure builds: the guard at the end moves to the new end (the old guard page reads zero
     once removed, or was never written: it is part of the zero extension) */
#if MI_SECURE > 0
  mi_segment_huge_guard_end(segment, false);
  if ((segment->guarded & 1) != 0) return false;   /* a guard that stays would be inside the block */
  if (!_mi_arena_try_expand(&memid, d + size, &zero)) {
    mi_segment_huge_guard_end(segment, true);
    return false;
  }
#else
  if (!_mi_arena_try_expand(&memid, d + size, &zero)) return false;
#endif
  /* the block takes the whole arena allocation; the old slack past segment_size was never
     handed out, so it is zero when the allocation was */
  const size_t delta = memid.size - segment->segment_size;
  *ext_zero = zero && segment->memid.initially_zero;
  segment->memid = memid;
  segment->segment_size = memid.size;
  page->block_size += delta;
#if MI_SECURE > 0
  mi_segment_huge_guard_end(segment, true);
#endif
  _mi_segment_map_set(segment, true);
  mi_os_stat_increase(malloc_huge, delta);
  mi_os_stat_increase(page_committed, delta);
  return true;
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
mi_page_t* _mi_segment_page_alloc(mi_heap_t* heap, size_t block_size, size_t page_alignment, size_t align_offset, bool busy) {
  if (mi_unlikely(page_alignment > 0 || block_size > MI_LARGE_OBJ_SIZE_MAX)) {
    return mi_segment_huge_page_alloc(heap, block_size, page_alignment, align_offset);
  }
  mi_page_kind_t kind = mi_segment_kind_of(block_size);
  /* a class's first page is one slot, and so is every page of blocks a slot holds 2 or 3 of
     (types.h, MI_MEDIUM_SLOT_ONLY_MIN) */
  if (kind == MI_PAGE_MEDIUM && (!busy || (block_size >= MI_MEDIUM_SLOT_ONLY_MIN && block_size <= MI_MEDIUM_SLOT_ONLY_MAX))) {
    kind = MI_PAGE_LARGE;
  }
  return mi_segment_page_alloc_in(heap, kind, block_size);
}

