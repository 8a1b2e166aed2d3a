/* SPDX-License-Identifier: MIT */
/* The delayed purge of unused page slots (segment.c owns the segments and their slots): each
   subprocess keeps one queue per segment kind, ordered by deadline; the due slots are purged in
   runs of neighbours from the allocation slow path, the purger thread (purger.c) and
   mi_collect. The delay adapts to slots taken again soon after their purge (backoff).
   Everything that reads or writes a queue or a slot's purge state runs under the subprocess'
   lock. */
#include "internal/page.h"
#include "internal/heap.h"   /* hook: _mi_subprocs_visit */
#include "prim/prim.h"
#include "internal/limit.h"   /* _mi_limit_is_pressing */

#if MI_SECURE == 0
/* the main subprocess' (3.9 KiB in the cold .bss: a program touches the OS pages of the rows
   it uses, not the hot data's); another's follows its descriptor (init.c, mi_subproc_new) */
static mi_decl_cold_bss mi_slot_hints_t mi_slot_hints_main;

mi_slot_hints_t* _mi_segments_purge_hints(const mi_subproc_t* subproc) {
  return (subproc == &_mi_subproc_main ? &mi_slot_hints_main : (mi_slot_hints_t*)(subproc + 1));
}

/* The slot hints (types.h, mi_subproc_t): a queued slot whose last page had a bin
   joins its bin's hints, in place of the oldest when they are full. */
static mi_decl_noinline void mi_slot_hint_add(mi_subproc_t* subproc, mi_page_t* page) {
  mi_page_t** hints = (*_mi_segments_purge_hints(subproc))[page->freed_bin - 1];
  size_t oldest = 0;
  for (size_t i = 0; i < MI_SLOT_HINTS; i++) {
    if (hints[i] == NULL) { hints[i] = page; return; }
    if (hints[i]->purge_expire < hints[oldest]->purge_expire) oldest = i;
  }
  hints[oldest] = page;
}

static mi_decl_noinline void mi_slot_hint_remove(mi_subproc_t* subproc, const mi_page_t* page) {
  mi_page_t** hints = (*_mi_segments_purge_hints(subproc))[page->freed_bin - 1];
  for (size_t i = 0; i < MI_SLOT_HINTS; i++) {
    if (hints[i] == page) { hints[i] = NULL; return; }
  }
}
#endif

mi_decl_noinline void _mi_segments_purge_queue_remove(mi_segment_t* segment, mi_page_t* page) {
  mi_assert_internal(page->purge_pending);
  mi_subproc_t* subproc = segment->subproc;
#if MI_SECURE == 0
  if (page->freed_bin != 0) mi_slot_hint_remove(subproc, page);
#endif
  mi_purge_queue_t* queue = &subproc->purge[segment->page_kind];
  mi_atomic_sub_relaxed(&subproc->purge_count, 1);
  if (page->prev != NULL) page->prev->next = page->next;
  else queue->first = page->next;
  if (page->next != NULL) page->next->prev = page->prev;
  else queue->last = page->prev;
  page->next = NULL;
  page->prev = NULL;
  page->purge_pending = 0;
}

/* Purge an unused slot now. The header's slot is only discarded past the header, and stays
   committed (its memory is not all unused). */
static void mi_segment_slot_purge(mi_segment_t* segment, mi_page_t* page) {
  mi_assert_internal(!page->segment_in_use && page->is_committed);
#if MI_SECURE == 0
  page->tail_dirty = 0;   /* (the header's slot: its area starts past the header) */
#endif
  uint8_t* start = mi_segment_slot_start(segment, page);
  const size_t size = mi_segment_slot_size(segment);
  if (page->segment_idx == 0) {
    _mi_os_discard(start + segment->info_size, size - segment->info_size);
    mi_os_stat_counter_increase(purge_calls, 1);
    mi_os_stat_counter_increase(purged, size - segment->info_size);
  }
  else if (_mi_arena_purge(&segment->memid, start, size)) {
    page->is_committed = 0;
    page->purge_expire = _mi_prim_clock_now();   /* when, for the adaptive delay */
    page->is_zero_init = segment->memid.purge_zeroes;   /* decommitted anonymous memory reads as zero */
  }
}

/* The delay of a slot purge: purge_delay, doubled for each step of backoff, at most the arena
   purge delay. When slots are taken again soon after they were purged (the program cycles
   through the same memory slower than purge_delay) every OS page faults in again each time: the
   delay backs off until the memory stays; each collect without such a reuse (every 10 purge
   delays, see _mi_heap_collect_periodic) steps it back. */
static mi_msecs_t mi_segments_slot_purge_max(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  const long mult = mi_option_get(mi_option_arena_purge_mult);
  return (mult > 1 ? (mi_msecs_t)delay * mult : (mi_msecs_t)delay);
}
static mi_msecs_t mi_segments_slot_purge_delay(const mi_subproc_t* subproc) {
  const long delay = mi_option_get(mi_option_purge_delay);
  if (delay <= 0) return delay;
  if (mi_unlikely(_mi_limit_is_pressing())) return 0;   /* near the memory limit: at once (limit.h) */
  const mi_msecs_t max = mi_segments_slot_purge_max();
  const mi_msecs_t d = (mi_msecs_t)delay << subproc->purge_backoff;
  return (d < max ? d : max);
}

/* Slots [slots, slots + count) are taken again: if any of them was purged soon before, back off
   one step (no further than the maximum delay, so stepping back starts at once when the reuse
   stops). */
void _mi_segments_purge_note_reuse(mi_page_t* slots, size_t count, mi_subproc_t* subproc) {
  const mi_msecs_t delay = mi_segments_slot_purge_delay(subproc);
  mi_msecs_t now = 0;
  bool soon = false;
  for (size_t i = 0; i < count; i++) {
    mi_page_t* page = &slots[i];
    if (page->is_committed || page->purge_expire == 0) continue;
    if (delay > 0) {
      if (now == 0) now = _mi_prim_clock_now();
      if (now - page->purge_expire < 4 * delay) soon = true;
    }
    page->purge_expire = 0;
  }
  if (soon) {
    subproc->purge_reused = true;
    if (delay < mi_segments_slot_purge_max()) subproc->purge_backoff++;
  }
}

/* A slot became unused in a segment that stays: purge it now, later, or never (purge_delay).
   A large page's slots (`span`) wait the longest slot delay: a big block is many OS pages to
   fault in again, and is freed and allocated less often (with the short delay malloc-large took
   48K page faults, not 36K, and 20% more time). Due times lie on a grid of a quarter of the delay,
   so neighbours freed within a step go in one call (mstress -t 32: 3,800 -> 1,300 purge calls).
   The queue stays ordered by purge_expire (the walk back passes only entries that wait longer).
   With `now` (an ended thread's page under ABANDONED_PAGE_PURGE) the slot is purged at once. */
static void mi_segment_slot_schedule_purge(mi_segment_t* segment, mi_page_t* page, bool span, bool now) {
  if (segment->memid.is_pinned || !page->is_committed || !mi_segment_has_slots(segment) || page->purge_pending) return;
  mi_subproc_t* subproc = segment->subproc;
  mi_msecs_t delay = mi_segments_slot_purge_delay(subproc);
  if (delay < 0) return;
  if (delay == 0 || now) { mi_segment_slot_purge(segment, page); return; }
  if (span) delay = mi_segments_slot_purge_max();
  mi_purge_queue_t* queue = &subproc->purge[segment->page_kind];
  mi_atomic_add_relaxed(&subproc->purge_count, 1);
  const mi_msecs_t step = (delay >= 4 ? delay / 4 : 1);
  page->purge_expire = ((_mi_prim_clock_now() + delay + step - 1) / step) * step;
  page->purge_pending = 1;
  const mi_msecs_t next = mi_atomic_load_relaxed(&subproc->purge_next);
  if (next == 0 || page->purge_expire < next) mi_atomic_store_relaxed(&subproc->purge_next, page->purge_expire);
  mi_page_t* before = queue->last;   /* insert after it */
  while (before != NULL && before->purge_expire > page->purge_expire) before = before->prev;
  page->prev = before;
  page->next = (before != NULL ? before->next : queue->first);
  if (page->next != NULL) page->next->prev = page;
  else queue->last = page;
  if (before != NULL) before->next = page;
  else queue->first = page;
#if MI_SECURE == 0
  if (page->freed_bin != 0) mi_slot_hint_add(subproc, page);
#endif
}

/* Slots [page, page + count) became unused in a segment that stays. */
void _mi_segments_purge_schedule(mi_segment_t* segment, mi_page_t* page, size_t count, bool span, bool now) {
  for (size_t i = 0; i < count; i++) mi_segment_slot_schedule_purge(segment, &page[i], span, now);
}

/* Take a segment's slots off the purge queue (it is about to be released). */
void _mi_segments_purge_unqueue(mi_segment_t* segment) {
  if (!mi_segment_has_slots(segment)) return;
  for (size_t i = 0; i < segment->capacity; i++) {
    mi_page_t* page = &segment->pages[i];
    if (page->purge_pending) _mi_segments_purge_queue_remove(segment, page);
  }
}

/* After the lock is dropped: tell the purger thread (purger.c) of the earliest slot purge. */
void _mi_segments_purge_notify(mi_subproc_t* subproc) {
  const mi_msecs_t next = mi_atomic_load_relaxed(&subproc->purge_next);
  if (next != 0) _mi_purger_notify(next);
}

/* May slot i of the segment join a purge run: queued, due (or forced), and not the header's
   slot (which is only discarded past the header)? */
static bool mi_segment_slot_purge_joins(const mi_segment_t* segment, size_t i, mi_msecs_t now, bool force) {
  if (i == 0 || i >= segment->capacity) return false;
  const mi_page_t* page = &segment->pages[i];
  return (page->purge_pending && (force || page->purge_expire <= now));
}

/* Purge `page`, a due slot taken off its queue, with the due queued slots next to it in its
   segment, in one call: slots freed together (a large page's span, a thread's pages) are
   purged with one system call instead of one each. */
static void mi_segment_slots_purge_run(mi_segment_t* segment, mi_page_t* page, mi_msecs_t now, bool force) {
  if (page->segment_idx == 0) { mi_segment_slot_purge(segment, page); return; }
  size_t lo = page->segment_idx, hi = page->segment_idx + 1;
  while (mi_segment_slot_purge_joins(segment, lo - 1, now, force)) _mi_segments_purge_queue_remove(segment, &segment->pages[--lo]);
  while (mi_segment_slot_purge_joins(segment, hi, now, force)) _mi_segments_purge_queue_remove(segment, &segment->pages[hi++]);
  const size_t slot_size = mi_segment_slot_size(segment);
  if (!_mi_arena_purge(&segment->memid, (uint8_t*)segment + lo * slot_size, (hi - lo) * slot_size)) return;
  for (size_t i = lo; i < hi; i++) {
    mi_page_t* slot = &segment->pages[i];
    mi_assert_internal(!slot->segment_in_use && slot->span_tail == 0 && slot->is_committed);
    slot->is_committed = 0;
    slot->purge_expire = now;   /* when, for the adaptive delay */
    slot->is_zero_init = segment->memid.purge_zeroes;
  }
}

/* Purge the queued slots that are due (all with force), oldest first. The lock is let go after
   every MI_PURGE_RUNS_PER_LOCK system calls, so that a pass over many slots (a burst of frees
   given back) does not stall the threads that take or give back pages meanwhile. A slot leaves
   the queue (purge_count) in the same hold of the lock as its purge: so `wait` (mi_collect)
   always takes the lock, even with an empty queue, and then finds every slot that another pass
   took off the queue purged (its purge may be in progress, preempted, while the count is 0). */
#define MI_PURGE_RUNS_PER_LOCK  (16)
static void mi_segments_try_purge(mi_subproc_t* subproc, bool force, bool wait) {
  if (!wait && mi_atomic_load_relaxed(&subproc->purge_count) == 0) return;
  const mi_msecs_t now = _mi_prim_clock_now();
  bool more;
  do {
    mi_segments_lock(subproc);
    mi_msecs_t next = 0;
    size_t runs = 0;
    more = false;
    for (size_t kind = 0; kind < MI_PAGE_HUGE; kind++) {
      mi_page_t* page;
      while ((page = subproc->purge[kind].first) != NULL && (force || page->purge_expire <= now)) {
        if (runs == MI_PURGE_RUNS_PER_LOCK) { more = true; break; }
        mi_segment_t* segment = _mi_page_segment(page);
        _mi_segments_purge_queue_remove(segment, page);
        mi_segment_slots_purge_run(segment, page, now, force);
        runs++;
      }
      if (more) break;
      if (page != NULL && (next == 0 || page->purge_expire < next)) next = page->purge_expire;
    }
    if (!more) mi_atomic_store_relaxed(&subproc->purge_next, next);
    mi_assert_expensive(_mi_observe_check(MI_CHECK_SUBPROC_LOCKED, subproc, NULL));
    mi_segments_unlock(subproc);
    mi_sched_point(MI_SCHED_SEGMENT_PURGE);   /* between two holds of the lock: others take and give back slots */
  } while (more);
  _mi_segments_purge_notify(subproc);   /* (a pass of the purger must notify what it leaves) */
}

static void mi_segments_purge_visit(mi_subproc_t* subproc, void* arg) {
  mi_segments_try_purge(subproc, *(const bool*)arg, false);
}

/* The purger thread's pass: the due slot purges of every subprocess (thread-safe, no thread
   state needed). */
void _mi_segments_purge_shared(bool force) {
  _mi_subprocs_visit(&mi_segments_purge_visit, &force);
}

/* Due purges (all with force) of the thread's subprocess and of the arenas. `wait`: an explicit
   collect (mi_collect, mi_heap_collect): they are done when it returns, whatever pass another
   thread (the purger) has in progress; else (the slow path's periodic collect, thread exit) an
   arena whose pass is in progress is left to it. */
void _mi_segments_purge_collect(mi_tld_t* tld, bool force, bool wait) {
  if (tld != NULL) {
    mi_subproc_t* subproc = tld->subproc;
    mi_segments_lock(subproc);
    /* one step back per 10 purge delays without a reuse, however many threads collect (each
       heap collects every 10 purge delays: with a step per collect, 16 threads undid every
       backoff at once, and larson purged 110 MiB instead of 2 MiB, 1770 purges instead of 37) */
    const mi_msecs_t now = _mi_prim_clock_now();
    const long delay = mi_option_get(mi_option_purge_delay);
    if (now - subproc->purge_backoff_time >= 10 * (mi_msecs_t)(delay > 1 ? delay : 1)) {
      subproc->purge_backoff_time = now;
      if (!subproc->purge_reused && subproc->purge_backoff > 0) subproc->purge_backoff--;
      subproc->purge_reused = false;
    }
    mi_segments_unlock(subproc);
    mi_segments_try_purge(subproc, force, wait);
  }
  if (wait) _mi_arenas_purge_collect(force);
  else _mi_arenas_purge_try(force);
}

/* Called on the allocation slow path while purges are pending: looks (reads the clock) only on
   every MI_PURGE_TICK_EVERY-th call; reading it on every call cost rptest 13% of its time. */
#define MI_PURGE_TICK_EVERY  (8)
void _mi_segments_purge_tick(mi_tld_t* tld) {
  if (tld->segments.purge_tick_skip > 0) { tld->segments.purge_tick_skip--; return; }
  tld->segments.purge_tick_skip = MI_PURGE_TICK_EVERY - 1;
  mi_segments_try_purge(tld->subproc, false, false);
  _mi_arenas_purge_try(false);
}

/* Are purges pending anywhere (page.c: worth a purge tick)? */
bool _mi_segments_purge_pending(const mi_tld_t* tld) {
  return (mi_atomic_load_relaxed(&tld->subproc->purge_count) != 0);
}

