/* SPDX-License-Identifier: MIT */
/* The sampling heap profiler's hook: which allocations are sampled, with nothing added to the
   malloc and free fast paths (docs/profiler.md; the design and its measurements are in
   docs/profiler-plan.md). The samples themselves go to prof-samples.c.

   Sampling is by bytes: each heap keeps, per size class, a countdown of bytes drawn from an
   exponential distribution of mean R (MIMALLOC_PROFILE_RATE); the allocation whose block takes
   a countdown to zero or below is sampled and a new countdown is drawn. So a block of s bytes
   is sampled with probability 1 - exp(-s/R) wherever it is allocated, and the countdowns of the
   size classes are independent (a Poisson process of bytes split into streams; being
   memoryless, a countdown may be redrawn at any time).

   The lease. With the profiler on, a heap's pages_free_direct (small bins) and
   pages_medium_direct (medium bins) point at the heap's proxy pages, one per bin, so the fast
   paths pop the proxy's free list, unchanged. That list is leased from the bin's first page:
   its whole free list, or its first k blocks when the countdown crosses within it (k the
   allocations that keep it above zero). Invariants:
     lease_page[b] != NULL  <=> the proxy of bin b holds a lease of that page's blocks;
     lease_page[b]->used counts the leased blocks (popped or not) as in use, so the page
       invariant (types.h) holds and the page is neither freed nor retired under the lease;
     proxy[b].used == blocks popped since the lease was taken;
     the lease never takes the block whose allocation would reach zero: the fast path runs dry
       before it, and the slow path (_mi_prof_malloc, called first in _mi_malloc_generic)
       counts the popped blocks, serves the allocation at hand and samples it if due.
   Frees go to the real page as always (the pointer finds it), never to the proxy, whose list
   therefore only shrinks. Leases go back (mi_prof_settle) before anything that walks or moves
   the heap's pages: every collect (thread exit abandons through one), delete, destroy and the
   block visits.

   Sampled blocks. A sampled small or medium block is allocated from the heap's sample heap
   (`sampled`, not in the thread's list of heaps, never reclaiming abandoned pages), whose pages
   therefore hold sampled blocks only: their frees are exactly the frees the profiler must see
   (the page flag MI_PAGE_FREE_HOOK sends them to _mi_free_generic), and the heap's own pages
   keep the free fast path. (With the samples in the heap's pages, a page with one sampled block
   sent all its frees to the generic path: 16% of glibc-thread's frees.) The sample heap's
   blocks are the heap's: collect, delete, destroy, the visits and mi_heap_contains_block take
   it with the heap (heap.c, _mi_prof_sample_heap). Large and huge blocks are sampled where they
   are, in pages of their own.

   Available in release builds on Linux with glibc: not in secure, debug, padding, tracking or
   guarded builds (the proxy would need their checks and keys); the stacks and the writers are
   Linux's (libgcc's unwinder, /proc/self/maps, ELF), and libgcc's unwinder as GCC builds it for
   glibc 2.35 and later needs glibc's _dl_find_object (a musl link fails). Elsewhere
   MIMALLOC_PROFILE says so and does nothing. */
#include "internal/observers.h"
#include "internal/prof-hook.h"

size_t _mi_prof_rate = 0;

typedef struct mi_prof_s {
  mi_prof_head_t head;       /* first (prof-hook.h): busy, in the slow path proper or in a sample,
                                called from _mi_prof_malloc; direct, the heap's real first pages
                                (mi_heap_direct_real), kept by page.c while the heap's
                                pages_free_direct points at the proxies */
  mi_page_t   proxy[MI_BIN_HUGE_INTERNAL];       /* bins 1 .. bin(MI_MEDIUM_OBJ_SIZE_MAX) used */
  mi_page_t*  lease_page[MI_BIN_HUGE_INTERNAL];  /* real page of the bin's lease; NULL: none */
  int64_t     countdown[MI_BIN_HUGE_INTERNAL];   /* bytes until the next sample, per bin; 0: not
                                                   drawn yet (drawn at the bin's first lease: a
                                                   thread uses a few bins, a draw costs ~65
                                                   instructions), else >= 1 */
  int64_t     countdown_big;                     /* ... for large, huge and over-aligned */
  uint64_t    rng;
  bool        sampled_ready;  /* `sampled` is initialised */
  mi_heap_t   sampled;        /* the heap's sampled small and medium blocks (see below) */
} mi_prof_t;

/* ------------------------------------------------------------------------------------------
   Exponential countdowns (no libm)
------------------------------------------------------------------------------------------ */
static uint64_t mi_prof_rand(mi_prof_t* pr) {
  pr->rng += 0x9e3779b97f4a7c15ULL;
  return (uint64_t)_mi_random_shuffle((uintptr_t)pr->rng);
}

/* -ln(u) for u in (0,1]: u = m * 2^e, m in [1,2); ln m = 2 atanh((m-1)/(m+1)) by its series
   (t <= 1/3: relative error below 2e-5) */
static double mi_prof_neg_ln(double u) {
  union { double d; uint64_t i; } x = { u };
  const int e = (int)((x.i >> 52) & 0x7FF) - 1023;
  x.i = (x.i & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;
  const double m = x.d;
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  const double lnm = 2.0 * t * (1.0 + t2 * (1.0/3 + t2 * (1.0/5 + t2 * (1.0/7 + t2 * (1.0/9)))));
  return -((double)e * 0.6931471805599453 + lnm);
}

static int64_t mi_prof_draw(mi_prof_t* pr) {
  const double u = (double)((mi_prof_rand(pr) >> 11) + 1) * (1.0 / 9007199254740992.0);   /* (0,1] */
  const double c = mi_prof_neg_ln(u) * (double)mi_prof_rate();
  return (c >= 4e18 ? (int64_t)4e18 : (int64_t)c + 1);
}

/* 1 - exp(-x), x >= 0 (no libm). Most samples are of blocks far below the rate: for x < 1/64 its
   series to x^5 (relative error below x^5/720, 1e-12); else exp(-x/2^16) by its series, squared
   16 times. */
double _mi_prof_probability(double x) {
  if (x < 1.0/64) return x * (1.0 - x/2 * (1.0 - x/3 * (1.0 - x/4 * (1.0 - x/5))));
  if (x > 40) return 1.0;
  const double y = x / 65536.0;
  double e = 1.0 - y + y*y/2 - y*y*y/6;
  for (int i = 0; i < 16; i++) e = e * e;
  return 1.0 - e;
}

/* A sample: stack and weight to the store, outside the heap's bookkeeping (busy: an
   allocation made meanwhile, which there should be none of, is served unsampled). */
static void mi_prof_sample(mi_prof_t* pr, void* p, size_t size) {
  pr->head.busy = true;
  _mi_prof_samples_record(p, _mi_free_usable_size(p), size, NULL);
  pr->head.busy = false;
}

/* ------------------------------------------------------------------------------------------
   Set-up
------------------------------------------------------------------------------------------ */
/* a few freed profiler structures, for the next threads (as init.c's thread data cache):
   larson's threads each took an mmap, a munmap and 5 page faults for it otherwise */
#define MI_PROF_CACHE 8
static _Atomic(mi_prof_t*) mi_prof_cache[MI_PROF_CACHE];

void _mi_prof_heap_init(mi_heap_t* heap) {
#if MI_PROF_AVAILABLE
  if (heap->prof != NULL || heap->tld == NULL || mi_prof_rate() == 0) return;
  bool is_zero = false;
  mi_prof_t* pr = NULL;
  for (int i = 0; i < MI_PROF_CACHE && pr == NULL; i++) {
    if (mi_atomic_load_relaxed(&mi_prof_cache[i]) != NULL) pr = mi_atomic_exchange_acq_rel(&mi_prof_cache[i], (mi_prof_t*)NULL);
  }
  const size_t medium_bins = _mi_bin(MI_MEDIUM_OBJ_SIZE_MAX) + 1;
  if (pr != NULL) {
    /* a cached one, as _mi_prof_heap_done left it: no lease, proxies empty with their block
       sizes, not busy, sample heap not ready; only the countdowns start again (for threads that
       come and go: larson's threads zeroed 14 KiB each) */
    memset(pr->countdown, 0, sizeof(pr->countdown));
  }
  else {
    pr = (mi_prof_t*)_mi_os_alloc(sizeof(mi_prof_t), &is_zero);
    if (pr == NULL) return;   /* no memory: this heap is not profiled */
    if (!is_zero) memset(pr, 0, sizeof(*pr));
    for (size_t b = 1; b < medium_bins; b++) pr->proxy[b].block_size = _mi_page_bin_size(b);
  }
  pr->rng = (uint64_t)_mi_random_next();
  pr->countdown_big = mi_prof_draw(pr);
  memcpy(pr->head.direct, heap->pages_free_direct, sizeof(pr->head.direct));
  heap->prof = pr;
  if (heap == mi_prim_get_default_heap()) _mi_thread_set_default_heap(heap);   /* the counted entry points' table */
  /* the fast paths now pop the proxies (empty: the first malloc of each bin leases) */
  for (size_t w = 0; w <= MI_SMALL_WSIZE_MAX; w++) {
    heap->pages_free_direct[w] = &pr->proxy[_mi_bin(w * sizeof(uintptr_t))];
  }
  for (size_t b = 1; b < medium_bins; b++) heap->pages_medium_direct[b] = &pr->proxy[b];
#else
  (void)heap;
#endif
}

/* Every heap of the thread (the profiler was switched on after they were made). */
void _mi_prof_thread_start(mi_tld_t* tld) {
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) _mi_prof_heap_init(h);
}

mi_heap_t* _mi_prof_sample_heap(const mi_heap_t* heap) {
  mi_prof_t* const pr = heap->prof;
  return (pr != NULL && pr->sampled_ready ? &pr->sampled : NULL);
}

/* The heap's pages go away or move: leases back, the sample heap's pages abandoned if any are
   left (delete and destroy took them before), tables back to the real pages, proxies cached or
   freed. */
void _mi_prof_heap_done(mi_heap_t* heap) {
  mi_prof_t* const pr = heap->prof;
  if (pr == NULL) return;
  _mi_prof_return_all(heap);
  if (pr->sampled_ready && pr->sampled.page_count > 0) _mi_heap_collect_abandon(&pr->sampled);
  pr->sampled_ready = false;
  pr->head.busy = false;
  heap->prof = NULL;
  /* the entries _mi_prof_heap_init changed, as mi_heap_queue_first_update (page.c) keeps them */
  const size_t medium_bins = _mi_bin(MI_MEDIUM_OBJ_SIZE_MAX) + 1;
  for (size_t b = 1; b < medium_bins; b++) heap->pages_medium_direct[b] = heap->pages[b].first;
  memcpy(heap->pages_free_direct, pr->head.direct, sizeof(pr->head.direct));
  if (heap == mi_prim_get_default_heap()) _mi_thread_set_default_heap(heap);   /* the counted entry points' table */
  for (int i = 0; i < MI_PROF_CACHE; i++) {
    mi_prof_t* expected = NULL;
    if (mi_atomic_load_relaxed(&mi_prof_cache[i]) == NULL && mi_atomic_cas_strong_acq_rel(&mi_prof_cache[i], &expected, pr)) return;
  }
  _mi_os_free(pr, sizeof(mi_prof_t));
}

/* ------------------------------------------------------------------------------------------
   Leases
------------------------------------------------------------------------------------------ */
/* End the bin's lease: count the blocks popped, give the unpopped rest back to the real page. */
static mi_decl_noinline void mi_prof_settle(mi_prof_t* pr, size_t bin) {
  mi_page_t* const px = &pr->proxy[bin];
  mi_page_t* const real = pr->lease_page[bin];
  if (real == NULL) return;
  pr->countdown[bin] -= (int64_t)(px->used * px->block_size);   /* stays > 0: the lease was cut */
  mi_block_t* const rest = px->free;
  if (rest != NULL) {
    size_t n = 1;
    mi_block_t* last = rest;
    for (mi_block_t* next = mi_block_next(real, last); next != NULL; next = mi_block_next(real, last)) { last = next; n++; }
    if (real->free == NULL) real->free_is_zero = px->free_is_zero;
    else real->free_is_zero = (real->free_is_zero && px->free_is_zero);
    mi_block_set_next(real, last, real->free);
    real->free = rest;
    mi_assert_internal(real->used >= n);
    real->used -= (uint32_t)n;
    if (mi_page_is_in_full(real)) _mi_page_unfull(real);
  }
  px->free = NULL;
  px->used = 0;
  pr->lease_page[bin] = NULL;
}

mi_block_t* _mi_prof_leased(const mi_heap_t* heap, const mi_page_t* page) {
  const mi_prof_t* const pr = heap->prof;
  if (pr == NULL || page->reserved <= 1) return NULL;
  const size_t bin = _mi_bin(page->block_size);
  return (bin < MI_BIN_HUGE_INTERNAL && pr->lease_page[bin] == page ? pr->proxy[bin].free : NULL);
}

void _mi_prof_return_all(mi_heap_t* heap) {
  mi_prof_t* const pr = heap->prof;
  if (pr == NULL) return;
  for (size_t b = 0; b < MI_BIN_HUGE_INTERNAL; b++) {
    if (pr->lease_page[b] != NULL) mi_prof_settle(pr, b);
  }
}

/* Lease the free list of the bin's first page to its proxy, up to the block before the one
   whose allocation crosses the countdown. */
static mi_decl_noinline void mi_prof_lease(mi_heap_t* heap, mi_prof_t* pr, size_t bin) {
  mi_page_t* const real = heap->pages[bin].first;
  if (real == NULL || real->free == NULL) return;
  const size_t bsize = real->block_size;
  const int64_t cd = pr->countdown[bin];
  if (cd <= (int64_t)bsize) return;   /* the next allocation samples: leave the proxy empty */
  const size_t k = (size_t)((cd - 1) / (int64_t)bsize);   /* >= 1 allocations that keep it > 0 */
  mi_block_t* const head = real->free;
  size_t n;
  if (real->local_free == NULL && !mi_page_has_purged(real) && real->capacity - real->used <= k) {
    n = real->capacity - real->used;   /* |free| by the page invariant: take it all, no walk */
    real->free = NULL;
  }
  else {
    n = 1;
    mi_block_t* last = head;
    mi_block_t* next = mi_block_next(real, last);
    while (n < k && next != NULL) { last = next; n++; next = mi_block_next(real, last); }
    real->free = next;
    mi_block_set_next(real, last, NULL);
  }
  real->used += (uint32_t)n;
  mi_page_t* const px = &pr->proxy[bin];
  px->free = head;
  px->used = 0;
  px->free_is_zero = real->free_is_zero;
  px->page_start_ = real->page_start_;
  px->capacity = real->capacity;
  px->block_size = bsize;
  pr->lease_page[bin] = real;
}

/* A sampled small or medium block: from the sample heap (set up at the first sample), recorded. */
/* (counted: the bytes whose countdown chose it, the block size for the lease; the profile weighs
   the usable size, so the lease's and the counted samples add up alike) */
static mi_decl_noinline void* mi_prof_malloc_sampled(mi_heap_t* heap, mi_prof_t* pr, size_t size, bool zero, size_t counted, const uintptr_t* start) {
  if (!pr->sampled_ready) {
    _mi_heap_init_unlisted(&pr->sampled, heap->tld, heap->arena_id, true /* never reclaims */, heap->tag);
    pr->sampled.pages_lists = heap->pages_lists;   /* a theap's samples are its shared heap's blocks */
    pr->sampled_ready = true;
  }
  pr->head.busy = true;
  void* const p = _mi_malloc_zero_unsampled(&pr->sampled, size, zero);
  mi_sched_point(MI_SCHED_PROF_SAMPLE);   /* allocated, not yet recorded (pr->head.busy) */
  if (p != NULL) _mi_prof_samples_record(p, _mi_free_usable_size(p), counted, start);
  pr->head.busy = false;
  return p;
}

/* ------------------------------------------------------------------------------------------
   The slow path with the profiler on (from _mi_malloc_generic)
------------------------------------------------------------------------------------------ */
void* _mi_prof_malloc(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) {
  mi_prof_t* const pr = heap->prof;
  if (mi_likely(size <= MI_MEDIUM_OBJ_SIZE_MAX - MI_PADDING_SIZE && huge_alignment == 0)) {
    const size_t bin = _mi_bin(size + MI_PADDING_SIZE);
    if (pr->lease_page[bin] != NULL) mi_prof_settle(pr, bin);
    if (mi_unlikely(pr->countdown[bin] == 0)) pr->countdown[bin] = mi_prof_draw(pr);   /* the bin's first lease */
    const int64_t bsize = (int64_t)pr->proxy[bin].block_size;
    int64_t cd = pr->countdown[bin] - bsize;
    void* p;
    if (mi_unlikely(cd <= 0)) {
      p = mi_prof_malloc_sampled(heap, pr, size, zero, (size_t)bsize, NULL);
      cd = mi_prof_draw(pr);
    }
    else {
      /* what the fast path would have done on the real first page (blocks freed since the
         lease), else the slow path proper */
      mi_page_t* const page = heap->pages[bin].first;
      if (mi_likely(page != NULL && page->free != NULL)) p = _mi_page_malloc(heap, page, size, zero);
      else {
        pr->head.busy = true;
        p = _mi_malloc_generic(size, heap, zero, 0, 0);
        pr->head.busy = false;
      }
    }
    if (p == NULL) return NULL;
    pr->countdown[bin] = cd;
    mi_prof_lease(heap, pr, bin);
    return p;
  }
  pr->head.busy = true;
  void* const p = _mi_malloc_generic(size, heap, zero, huge_alignment, align_offset);
  pr->head.busy = false;
  if (p == NULL) return NULL;
  pr->countdown_big -= (int64_t)size;
  if (pr->countdown_big <= 0) {
    mi_prof_sample(pr, p, size);
    pr->countdown_big = mi_prof_draw(pr);
  }
  return p;
}

/* ------------------------------------------------------------------------------------------
   Counted entry points

   The lease costs a slow-path trip each time a proxy runs dry, and under malloc/free churn the
   owner's frees end leases early (docs/profiler.md, "What it costs"). So the entry points most
   programs call (malloc, calloc, operator new: override.c) have a second version that counts
   the bytes in its fast path instead: a countdown per thread (_mi_thread_tls.prof_left, the bytes left
   before the next sample; the allocation that would take it below zero is sampled), then the
   ordinary pop from the default heap's real first page (prof-entry.c). The library without the
   profiler keeps its fast paths: when MIMALLOC_PROFILE switches the profiler on at process
   start, the PLT slots through which the program and its libraries call those functions are
   pointed at the counted versions (override.c; an IFUNC cannot do it: glibc relocates libc,
   which takes malloc's address, before a preloaded library, and warns). The mi_*
   functions and every other entry keep the lease, which also serves mi_profile_start at run
   time; the two never sample the same allocation, and each alone is unbiased (one countdown of
   mean R per stream: the split of a Poisson process). A counted allocation is sampled with the
   probability of its requested size, a leased one with that of its block size; both weigh the
   usable size (so each estimates usable bytes without bias).
------------------------------------------------------------------------------------------ */
#if MI_PROF_ENTRIES
/* The default is a part of a shared heap another thread ended: the generic path, not busy, sends
   the default back to the backing heap first (alloc.c; this one allocation is counted twice). */
static inline bool mi_prof_dead_default(const mi_heap_t* heap) {
  return (mi_unlikely(mi_atomic_load_relaxed(&_mi_sheaps_dying) != 0) && mi_heap_is_dead_part(heap));
}

/* the counted path without a sample: the bin's real first page had no free block (or the size
   is large). The generic path runs as inside the profiler's own slow path (busy), so it does
   not lease or count again. */
void* _mi_prof_counted_slow(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) {
  mi_prof_t* const pr = heap->prof;
  if (pr == NULL || pr->head.busy || mi_prof_dead_default(heap)) return _mi_malloc_generic(size, heap, zero, huge_alignment, align_offset);
  pr->head.busy = true;
  void* const p = _mi_malloc_generic(size, heap, zero, huge_alignment, align_offset);
  pr->head.busy = false;
  return p;
}

static mi_decl_thread bool mi_prof_armed;   /* _mi_thread_tls.prof_left was drawn for this thread (it is
                                                0 in a new thread: its first counted call comes here) */

/* The countdown ran out (or was never set): sample this allocation if it is due, in the default
   heap. A countdown is drawn when the thread first comes here with a profiled heap (memoryless:
   one may start at any time, and no allocation is sampled for arming it). While the default heap
   has no profiler (a thread not set up yet, or one that was running when the profiler started
   and has not joined it: _mi_malloc_generic), the countdown is set to R and the heap looked at
   again after R bytes. */
void* _mi_prof_counted_due(size_t size, bool zero) {
  mi_heap_t* heap = mi_prim_get_default_heap();
  mi_prof_t* pr = heap->prof;
  if (pr == NULL || pr->head.busy || !mi_prof_armed || mi_prof_dead_default(heap)) {
    void* const p = _mi_prof_counted_slow(size, heap, zero, 0, 0);   /* (may set up the thread) */
    heap = mi_prim_get_default_heap();
    pr = heap->prof;
    if (pr != NULL && !pr->head.busy) { _mi_thread_tls.prof_left = (size_t)mi_prof_draw(pr); mi_prof_armed = true; }
    else _mi_thread_tls.prof_left = (mi_prof_rate() != 0 ? mi_prof_rate() : SIZE_MAX);
    return p;
  }
  const uintptr_t* start = NULL;
#if MI_PROF_UNWIND_CACHE
  /* the stack walk starts at our caller's frame (prof-hook.h, _mi_prof_stack_backtrace): asking for the
     frame address gives this function a frame pointer, so fp[0] is the caller's rbp (pushed
     first), fp[1] the return address, fp + 2 its stack pointer after the return. The counted
     entry points tail-call this function, so that is the program's frame; if one of ours is in
     between, the walk skips it as any frame of ours. About 5 frames fewer to unwind. */
  const uintptr_t* const fp = (const uintptr_t*)__builtin_frame_address(0);
  const uintptr_t frame[3] = { fp[1], (uintptr_t)(fp + 2), fp[0] };
  start = frame;
#endif
  void* p;
  if (size <= MI_MEDIUM_OBJ_SIZE_MAX - MI_PADDING_SIZE) p = mi_prof_malloc_sampled(heap, pr, size, zero, size, start);
  else {   /* large and huge blocks are sampled where they are (their own pages) */
    pr->head.busy = true;
    p = _mi_malloc_generic(size, heap, zero, 0, 0);
    if (p != NULL) _mi_prof_samples_record(p, _mi_free_usable_size(p), size, start);
    pr->head.busy = false;
  }
  _mi_thread_tls.prof_left = (size_t)mi_prof_draw(pr);   /* (memoryless: a fresh draw) */
  return p;
}
#endif
