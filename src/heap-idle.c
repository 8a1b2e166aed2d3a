/* SPDX-License-Identifier: MIT */
/* Idle reclaim: the purger gives back the full pages of a sleeping thread whose blocks other
   threads have all freed (docs/memory.md, "Memory freed by other threads").

   A block freed by another thread goes back to its page: the owner collects it in its slow
   path. The first free into a full page also pushes the block on the owner's delayed list
   (types.h, mi_delayed_t). While the owner sleeps (a producer waiting for its consumers, a
   pool thread between jobs), nothing collects, and all of that memory stays resident though
   no block of it is in use: 1 GiB in the remote-idle scenario (bench/scenarios), in every
   allocator we measured. Here the purger takes over:
   - a delayed push notifies it (once per pass: _mi_heap_idle_notified), and it looks at the
     heaps of the threads listed here 20 purge delays later (mi_heap_idle_ms);
   - a heap whose owner ran none of its slow paths since the previous look (idle_owner
     unchanged, types.h) and whose delayed list holds blocks is worked on, under the owner
     handshake of mi_heap_t: the purger takes the delayed list, and each full page whose
     blocks are then all accounted for (page->used == its thread_free count + its delayed
     blocks taken: the owner holds none; and those blocks are every block of the page once,
     by their index sums, so a block freed twice is not taken for a live one) is emptied
     (mi_page_try_empty): its lists
     dropped, its memory given back to the OS at once, its thread_free word MI_TF_EMPTIED;
   - the other delayed blocks go back on the list, so the owner learns of them as before;
   - the owner frees the emptied pages to their segments at the start of its next owner
     section (_mi_heap_idle_take_back): their slots are then anyone's.
   Why that is safe without a lock on any fast path: the owner touches a full page only in its
   slow paths (a full page's frees take _mi_free_generic: MI_PAGE_IN_FULL is a flag; malloc
   never takes a full page), and those run in owner sections, which exclude the purger's
   work on the heap (the handshake, types.h). The page's fields the purger reads were written
   in an earlier section or before it, and the section's end (a release store) orders them
   before the purger's look (an acquire load).
   The list is of threads' backing heaps (other heaps and shared heaps' parts are not looked
   at); a thread leaves it before its heap is released, under the list's lock, which the
   purger holds while it works. */
#include "internal/heap.h"
#include "prim/prim.h"

/* ms from a delayed push to the purger's look: 20 purge delays (200 ms by default; a heap is
   idle once its owner ran no slow path between two looks, so its pages go back 400-600 ms
   after the frees), at least 10 ms */
static mi_msecs_t mi_heap_idle_ms(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  return (delay < 1 ? 10 : 20 * (mi_msecs_t)delay);
}
#define MI_HEAP_IDLE_TALLY (1024)   /* pages of one heap worked on per look (one table, the
                                       purger's: it is one thread); the rest waits for the next look */

static mi_lock_t    mi_heap_idle_lock = MI_LOCK_INIT;
static mi_tld_t*    mi_heap_idle_threads;          /* under the lock */
static _Atomic(size_t) mi_heap_idle_count;         /* threads listed (written under the lock) */
_Atomic(int)        _mi_heap_idle_notified;        /* 1: a look is due (set by a delayed push) */

/* A set of a page's blocks as their number and the sums of their indexes and squared indexes:
   the blocks of a full page are all free exactly when the freed ones' sums are those of
   0..capacity-1 (a block freed twice in place of a live one changes the sum by their
   difference). Index sums of up to 2^16 blocks fit in 64 bits. */
typedef struct mi_page_block_sums_s { size_t count; uint64_t sum; uint64_t sum2; } mi_page_block_sums_t;

/* The purger's table of one heap's delayed blocks by page (only the purger thread uses it). */
typedef struct mi_idle_tally_s {
  mi_page_t*  page;
  mi_block_t* first;   /* its delayed blocks, linked (with the page's keys) */
  mi_block_t* last;
  mi_page_block_sums_t sums;   /* their count and index sums (mi_page_try_empty) */
} mi_idle_tally_t;
/* The memory of the pages emptied in one round, given back in address order, adjacent ranges
   with one system call (the pages of a segment freed together are: remote-idle's 16,384 pages
   of 64 KiB took 16,384 calls, now one per segment). */
typedef struct mi_idle_range_s { uintptr_t start; uintptr_t end; } mi_idle_range_t;
/* Both tables, taken from the OS for a pass that works on a heap and given back after it: as
   static arrays they stayed resident after the first pass, 112 KiB in every process whose
   purger ever looked (larson: 37 pages of .bss resident instead of 13). */
typedef struct mi_idle_scratch_s {
  mi_idle_tally_t tally[MI_HEAP_IDLE_TALLY * 2];
  mi_idle_range_t ranges[MI_HEAP_IDLE_TALLY];
} mi_idle_scratch_t;
static mi_idle_scratch_t* mi_heap_idle_scratch;   /* during a pass (the purger's alone), else NULL */

static void mi_heap_idle_discard(size_t n) {
  mi_idle_range_t* const ranges = mi_heap_idle_scratch->ranges;
  for (size_t i = 1; i < n; i++) {   /* insertion sort: mostly in order already */
    const mi_idle_range_t r = ranges[i];
    size_t j = i;
    while (j > 0 && ranges[j - 1].start > r.start) { ranges[j] = ranges[j - 1]; j--; }
    ranges[j] = r;
  }
  for (size_t i = 0; i < n; ) {
    const uintptr_t start = ranges[i].start;
    uintptr_t end = ranges[i].end;
    for (i++; i < n && ranges[i].start == end; i++) end = ranges[i].end;
    if (end > start) _mi_os_discard((void*)start, end - start);
  }
}

/* The list's lock. The purger holds it while it works, a thread while it joins or leaves.
   On Windows, ExitProcess ends the other threads wherever they are, the purger among them
   (purger.c, mi_purger_pause): a holder may never release it, and the thread that ends the
   process then gives up rather than wait forever (false). Only then: a thread that could not
   leave the list must keep its metadata (init.c, _mi_thread_done). The purger merely not
   running (not started yet, ended after its linger) is no reason: skipping the wait there let
   threads that ended together leave their freed metadata listed, and the next one to leave
   wrote into it (seen under Wine: a corrupted heap of the OS's, test thread-exit-win). */
static bool mi_heap_idle_lock_acquire(void) {
  if (mi_lock_try_acquire(&mi_heap_idle_lock)) return true;
  if (_mi_prim_process_ending()) return false;
  mi_lock_acquire(&mi_heap_idle_lock);
  return true;
}

void _mi_heap_idle_register(mi_tld_t* tld) {
  if (!mi_heap_idle_lock_acquire()) return;
  tld->idle_prev = NULL;
  tld->idle_next = mi_heap_idle_threads;
  if (mi_heap_idle_threads != NULL) mi_heap_idle_threads->idle_prev = tld;
  mi_heap_idle_threads = tld;
  tld->idle_listed = true;
  mi_atomic_add_relaxed(&mi_heap_idle_count, 1);
  mi_lock_release(&mi_heap_idle_lock);
}

void _mi_heap_idle_unregister(mi_tld_t* tld) {
  if (!tld->idle_listed) return;
  if (!mi_heap_idle_lock_acquire()) return;   /* (waits for a look in progress; gives up only when the process is ending: it stays listed) */
  if (tld->idle_prev != NULL) tld->idle_prev->idle_next = tld->idle_next;
  else mi_heap_idle_threads = tld->idle_next;
  if (tld->idle_next != NULL) tld->idle_next->idle_prev = tld->idle_prev;
  tld->idle_next = tld->idle_prev = NULL;
  tld->idle_listed = false;
  mi_atomic_sub_relaxed(&mi_heap_idle_count, 1);
  mi_lock_release(&mi_heap_idle_lock);
}

/* The purger waits (without a timeout) for delayed pushes while another thread may free into
   a thread's pages: while two threads are listed. */
bool _mi_heap_idle_keep(void) {
  return (mi_atomic_load_relaxed(&mi_heap_idle_count) >= 2 && mi_option_get(mi_option_purge_delay) >= 0);
}

/* fork: no thread may hold the list's lock across it (init.c's lock order: before the
   subprocesses' locks). The child keeps the list: the parent's other threads' heaps stay
   (unowned, as their memory does), and the purger may empty their pages there too. */
void _mi_heap_idle_fork_prepare(void) { mi_lock_acquire(&mi_heap_idle_lock); }
void _mi_heap_idle_fork_release(bool child) {
  if (child) mi_atomic_store_relaxed(&_mi_heap_idle_notified, 0);   /* the child's purger is told anew (its deadlines start empty) */
  mi_lock_release(&mi_heap_idle_lock);
}

void _mi_heap_idle_wait(mi_heap_t* heap) {
  while (mi_atomic_load_seq_cst(&heap->idle_purger) != 0) {   /* it stops at its next page */
    if (!_mi_prim_thread_alive()) {   /* ended by ExitProcess (Windows) in the middle: the process ends */
      mi_atomic_store_release(&heap->idle_purger, 0);
      return;
    }
    mi_atomic_yield();
  }
}

void _mi_heap_idle_take_back(mi_heap_t* heap) {
  if (mi_atomic_exchange_acq_rel(&heap->idle_emptied, 0) == 0) return;
  mi_page_queue_t* const pq = &heap->pages[MI_BIN_FULL];
  for (mi_page_t* page = pq->first; page != NULL; ) {
    mi_page_t* const next = page->next;
    if (mi_tf_is_emptied(mi_atomic_load_acquire(&page->xthread_free))) _mi_page_free_emptied(page, pq);
    page = next;
  }
}

/* _mi_heap_idle_notified: 0, or a pass is due: 1 after a delayed push, 2 for a look again
   (the pass sets it, below) */
void _mi_heap_idle_notify_slow(void) {
  if (mi_option_get(mi_option_purge_delay) < 0) return;   /* nothing is given back */
  if (mi_atomic_exchange_acq_rel(&_mi_heap_idle_notified, 1) != 0) return;
  _mi_purger_notify(_mi_prim_clock_now() + mi_heap_idle_ms());
}

static void mi_page_block_sums_add(const mi_page_t* page, const mi_block_t* block, mi_page_block_sums_t* sums) {
  const uint64_t idx = (uint64_t)(((const uint8_t*)block - mi_page_start(page)) / page->block_size);
  sums->count++;
  sums->sum += idx;
  sums->sum2 += idx * idx;
}

/* By the purger, while the page's owner is out of its slow paths
   (the owner handshake, types.h). If every block of this full page is free, the owner holding
   none (`used` then counts only the thread_free list and the `delayed` blocks of the heap's
   delayed list the caller took), its lists are dropped (thread_free word MI_TF_EMPTIED) and
   [*start, *end) is the memory of its blocks (whole OS pages), for the caller to give back to
   the OS before the owner may run again. The caller drops the delayed blocks.
   Counts alone took a block freed twice for a live one: the page was given back under it (a
   full page's first remote free goes to the delayed list, the others to thread_free, so the
   second free of a block lands in a list whose count then matches). So the thread_free list is
   walked too (its blocks never change while linked: the owner, idle, does not take them, and
   a push since the load fails the exchange below), and the blocks' index sums must be those of
   every block of the page. */
static bool mi_page_try_empty(mi_page_t* page, const mi_page_block_sums_t* delayed, uintptr_t* start, uintptr_t* end) {
  if (!mi_page_is_in_full(page) || page->free != NULL || page->local_free != NULL) return false;
  if (mi_page_prof_samples(page) != 0 || mi_page_is_huge(page)) return false;
  uintptr_t tfree = mi_atomic_load_acquire(&page->xthread_free);
  if (mi_tf_is_abandoned(tfree) || mi_tf_delayed(tfree) != MI_NO_DELAYED_FREE) return false;
  if (page->used != page->capacity || page->used != mi_tf_count(tfree) + delayed->count) return false;   /* live blocks (or a free in flight) */
  mi_page_block_sums_t sums = *delayed;
  for (mi_block_t* b = mi_tf_block(tfree); b != NULL && sums.count <= page->capacity; b = mi_block_next(page, b)) {
    mi_page_block_sums_add(page, b, &sums);
  }
  const uint64_t n = page->capacity;
  if (sums.count != n || sums.sum != n * (n - 1) / 2 || sums.sum2 != (n - 1) * n * (2 * n - 1) / 6) {
    /* (the list's length is its count: a push links the block before its CAS adds to both) */
    _mi_error_message(EAGAIN, "double free: a block of page %p (block size %zu) was freed twice by other threads while its owner slept; the page is kept\n",
                      (void*)page, page->block_size);
    return false;
  }
  /* a push since the load (a block freed twice) fails the exchange: not emptied */
  if (!mi_atomic_cas_strong_acq_rel(&page->xthread_free, &tfree, MI_TF_EMPTIED)) return false;
  const size_t os_page = _mi_os_page_size();
  *start = _mi_align_up((uintptr_t)mi_page_start(page), os_page);
  *end = _mi_align_down(mi_page_blocks_end(page), os_page);
  if (*end < *start) *end = *start;
  return true;
}

/* Link the delayed blocks of `list` by page into the tally (up to MI_HEAP_IDLE_TALLY pages);
   returns the blocks left over (not tallied). */
static mi_block_t* mi_heap_idle_tally_list(mi_block_t* list) {
  const size_t slots = MI_HEAP_IDLE_TALLY * 2;
  memset(mi_heap_idle_scratch->tally, 0, sizeof(mi_heap_idle_scratch->tally));
  size_t n = 0;
  while (list != NULL) {
    mi_page_t* const page = _mi_ptr_page(list);
    mi_block_t* const next = mi_block_next(page, list);
    size_t i = (((uintptr_t)page >> 7) * 0x9E3779B97F4A7C15ULL) >> 53;   /* 11 bits of a page index */
    while (mi_heap_idle_scratch->tally[i].page != NULL && mi_heap_idle_scratch->tally[i].page != page) i = (i + 1) % slots;
    mi_idle_tally_t* const t = &mi_heap_idle_scratch->tally[i];
    if (t->page == NULL) {
      if (n >= MI_HEAP_IDLE_TALLY) break;   /* full: the rest waits */
      t->page = page;
      t->last = list;
      n++;
    }
    mi_block_set_next(page, list, t->first);
    t->first = list;
    mi_page_block_sums_add(page, list, &t->sums);
    list = next;
  }
  return list;
}

/* Put a chain of delayed blocks back on the heap's list (its last block links to the list). */
static void mi_heap_idle_push_back(mi_heap_t* heap, mi_block_t* first, mi_block_t* last) {
  if (first == NULL) return;
  mi_page_t* const last_page = _mi_ptr_page(last);
  mi_block_t* head = mi_atomic_load_relaxed(&heap->thread_delayed_free);
  do {
    mi_block_set_next(last_page, last, head);
  } while (!mi_atomic_cas_weak_release(&heap->thread_delayed_free, &head, first));
}

/* The last block of a list (linked with each block's page's keys). */
static mi_block_t* mi_heap_idle_list_last(mi_block_t* list) {
  mi_block_t* next;
  while ((next = mi_block_next(_mi_ptr_page(list), list)) != NULL) list = next;
  return list;
}

/* Work on one idle heap (the handshake is ours): its delayed list, MI_HEAP_IDLE_TALLY pages at
   a time, until done or the owner wants the heap back; returns the pages emptied. */
static size_t mi_heap_idle_empty(mi_heap_t* heap) {
  mi_block_t* list = mi_atomic_exchange_acq_rel(&heap->thread_delayed_free, NULL);
  size_t emptied = 0;
  mi_block_t* back_first = NULL;   /* the delayed blocks of pages not emptied */
  mi_block_t* back_last = NULL;
  while (list != NULL && mi_atomic_load_seq_cst(&heap->idle_owner) == heap->idle_seen) {
    size_t ranges = 0;
    list = mi_heap_idle_tally_list(list);
    for (size_t i = 0; i < MI_HEAP_IDLE_TALLY * 2; i++) {
      mi_idle_tally_t* const t = &mi_heap_idle_scratch->tally[i];
      if (t->page == NULL) continue;
      /* (once the owner wants the heap back, the rest of the tally goes back to the list) */
      mi_idle_range_t* const r = &mi_heap_idle_scratch->ranges[ranges];
      if (mi_atomic_load_seq_cst(&heap->idle_owner) == heap->idle_seen &&
          mi_atomic_load_relaxed(&t->page->xheap) == heap && mi_page_try_empty(t->page, &t->sums, &r->start, &r->end)) {
        ranges++;
        emptied++;
        continue;
      }
      mi_block_set_next(t->page, t->last, back_first);   /* (the chain's last block links to the next chain) */
      if (back_last == NULL) back_last = t->last;
      back_first = t->first;
    }
    mi_heap_idle_discard(ranges);   /* before the owner may take the pages back (our handshake) */
  }
  if (list != NULL) mi_heap_idle_push_back(heap, list, mi_heap_idle_list_last(list));
  mi_heap_idle_push_back(heap, back_first, back_last);
  if (emptied > 0) mi_atomic_add_relaxed(&heap->idle_emptied, emptied);   /* (read by the owner after the handshake) */
  return emptied;
}

/* Looks again at heaps whose pages were not all free at a look (their last frees come slowly,
   and only the first free into a full page notifies): after idle_ms << backoff, the backoff
   growing with each look that empties nothing, up to MI_HEAP_IDLE_BACKOFF_MAX, then only at
   the next delayed push (which starts it over). The purger's alone. */
#define MI_HEAP_IDLE_BACKOFF_MAX  (6)   /* 200 ms .. 12.8 s by default */
static unsigned mi_heap_idle_backoff;

/* The purger's look at the listed heaps (purger.c, when notified). */
size_t _mi_heap_idle_pass(mi_msecs_t now) {
  /* pushes from now on notify again */
  if (mi_atomic_exchange_acq_rel(&_mi_heap_idle_notified, 0) == 1) mi_heap_idle_backoff = 0;
  size_t emptied = 0;
  bool again = false;     /* a heap whose owner ran since the last look */
  bool pending = false;   /* an idle heap with delayed blocks left */
  mi_lock_acquire(&mi_heap_idle_lock);
  for (mi_tld_t* tld = mi_heap_idle_threads; tld != NULL; tld = tld->idle_next) {
    mi_heap_t* const heap = tld->heap_backing;
    if (mi_atomic_load_relaxed(&heap->thread_delayed_free) == NULL) continue;
    const size_t owner = mi_atomic_load_seq_cst(&heap->idle_owner);
    if ((owner & 1) != 0 || owner != heap->idle_seen) {   /* ran since the last look: later */
      heap->idle_seen = owner;
      again = true;
      continue;
    }
    if (mi_heap_idle_scratch == NULL) {
      bool is_zero;
      mi_heap_idle_scratch = (mi_idle_scratch_t*)_mi_os_alloc(sizeof(mi_idle_scratch_t), &is_zero);
      if (mi_heap_idle_scratch == NULL) { pending = true; break; }   /* (out of memory: a later look) */
    }
    mi_atomic_store_seq_cst(&heap->idle_purger, 1);
    if (mi_atomic_load_seq_cst(&heap->idle_owner) == owner) emptied += mi_heap_idle_empty(heap);
    mi_atomic_store_release(&heap->idle_purger, 0);
    if (mi_atomic_load_relaxed(&heap->thread_delayed_free) != NULL) pending = true;
  }
  mi_lock_release(&mi_heap_idle_lock);
  if (mi_heap_idle_scratch != NULL) {
    _mi_os_free(mi_heap_idle_scratch, sizeof(mi_idle_scratch_t));
    mi_heap_idle_scratch = NULL;
  }
  if (emptied > 0) mi_heap_idle_backoff = 0;
  mi_msecs_t next = 0;
  if (again) next = now + mi_heap_idle_ms();   /* a look at those heaps once their owners may be idle */
  else if (pending && mi_heap_idle_backoff < MI_HEAP_IDLE_BACKOFF_MAX) next = now + (mi_heap_idle_ms() << ++mi_heap_idle_backoff);
  if (next != 0) {
    mi_atomic_store_release(&_mi_heap_idle_notified, 2);
    _mi_purger_notify(next);
  }
  return emptied;
}
