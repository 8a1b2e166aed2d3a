/* SPDX-License-Identifier: MIT */
/* PROTOTYPE of the sampling heap profiler's hook (docs/profiler-plan.md, section 1): measures
   the cost of the "lease through a per-heap proxy page" design. Not a feature: the sample is
   a counter, there is no stack capture, no sample store, no free hook.

   MIMALLOC_PROFILE_RATE=<bytes> (0: off; the compile-time default MI_PROF_DEFAULT_RATE) turns
   it on for release builds (not secure, debug, padding, tracking or guarded builds: the proxy
   would need their checks and keys). With it on, each heap gets a table of proxy pages, one
   per small or medium bin; pages_free_direct (small bins) and pages_medium_direct (medium
   bins) point at them, so the fast paths are unchanged and pop the proxy's free list. That
   list is leased from the bin's first page: its whole free list, or the first k blocks, k the
   number of allocations of the bin's size before its byte countdown crosses zero. The real
   page's `used` is charged with the lease length when it is taken, so the page invariant
   holds with leased blocks counted as in use and the page cannot be freed under the lease.
   When the proxy runs dry the fast path calls _mi_malloc_generic, which calls
   _mi_prof_malloc: it settles the lease (proxy->used = blocks popped; the unpopped rest goes
   back to the real page), counts down for the allocation at hand (sampling on the crossing),
   serves it through the ordinary slow path and leases again.

   MI_PROF_FALLBACK=1 (compile time): the proxies never get a lease, so every small and medium
   malloc takes the slow path, which counts down and pops from the real page (the plan's
   fallback design).

   Leases go back on every heap collect (hence at thread exit: abandon), heap delete and
   destroy, and before heap visits. Not handled: fork children (fine: the child's heap keeps
   its leases, which are its own memory), mi_heap_t fields read by validate.c (it would find
   proxies in pages_free_direct), leak reports of other threads' heaps. */
#include "internal/internal.h"

#ifndef MI_PROF_DEFAULT_RATE
#define MI_PROF_DEFAULT_RATE 0
#endif
/* MI_PROF_TOPUP=N (compile time, 0: off): a lease of fewer than N blocks from the first page
   is topped up to N with the free blocks of the next pages in the bin's queue, chained after
   them (release builds: plain links); each page is charged its own blocks, and the unpopped
   rest goes back block by block to the page it came from */
#ifndef MI_PROF_TOPUP
#define MI_PROF_TOPUP 0
#endif
#ifndef MI_PROF_FALLBACK
#define MI_PROF_FALLBACK 0
#endif

#define MI_PROF_AVAILABLE (MI_SECURE == 0 && MI_DEBUG == 0 && MI_PADDING == 0 && MI_TRACK_ENABLED == 0 && MI_GUARDED == 0)

size_t _mi_prof_rate = 0;

typedef struct mi_prof_s {
  bool        busy;          /* in the slow path proper, called from _mi_prof_malloc (first field:
                                read by _mi_malloc_generic through mi_prof_busy) */
  mi_page_t   proxy[MI_BIN_HUGE_INTERNAL];       /* bins 1 .. bin(MI_MEDIUM_OBJ_SIZE_MAX) used */
  mi_page_t*  lease_page[MI_BIN_HUGE_INTERNAL];  /* real page of the bin's lease; NULL: none */
  int64_t     countdown[MI_BIN_HUGE_INTERNAL];   /* bytes until the next sample, per bin */
  int64_t     countdown_big;                     /* ... for large, huge and over-aligned */
#if MI_PROF_TOPUP > 0
  bool        lease_chained[MI_BIN_HUGE_INTERNAL];  /* the lease holds blocks of other pages too */
  uint64_t    topups;
#endif
  uint64_t    rng;
  /* measurement counters */
  uint64_t    entries;       /* calls of _mi_prof_malloc */
  uint64_t    popped;        /* allocations served from a proxy (fast path) */
  uint64_t    slow_allocs;   /* allocations served by _mi_prof_malloc */
  uint64_t    samples;
  uint64_t    bytes;         /* bytes allocated (block sizes) */
  uint64_t    leases;
  uint64_t    leased_blocks;
  uint64_t    returned_blocks;
  uint64_t    bin_popped[MI_BIN_HUGE_INTERNAL];   /* allocations per bin: from the proxy */
  uint64_t    bin_slow[MI_BIN_HUGE_INTERNAL];     /* ... in _mi_prof_malloc */
  double      expected;      /* sum over allocations of P(sampled) = 1 - exp(-size/rate) */
} mi_prof_t;

/* process totals, for the report at exit */
static _Atomic(uint64_t) mi_prof_total_entries, mi_prof_total_popped, mi_prof_total_slow_allocs,
  mi_prof_total_samples, mi_prof_total_bytes, mi_prof_total_leases, mi_prof_total_leased_blocks,
  mi_prof_total_returned, mi_prof_total_heartbeat, mi_prof_total_expected_milli;

/* ------------------------------------------------------------------------------------------
   Random exponential countdowns (no libm)
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
  const double c = mi_prof_neg_ln(u) * (double)_mi_prof_rate;
  return (c >= 4e18 ? (int64_t)4e18 : (int64_t)c + 1);
}

/* 1 - exp(-x), x >= 0 (no libm): exp(-x/2^16) by its series, squared 16 times */
static double mi_prof_prob(double x) {
  if (x > 40) return 1.0;
  const double y = x / 65536.0;
  double e = 1.0 - y + y*y/2 - y*y*y/6;
  for (int i = 0; i < 16; i++) e = e * e;
  return 1.0 - e;
}

/* the sample point (stubbed) */
static void mi_prof_sample(mi_prof_t* pr, void* p, size_t size) {
  (void)p; (void)size;
  pr->samples++;
}

/* ------------------------------------------------------------------------------------------
   Set-up
------------------------------------------------------------------------------------------ */
void _mi_prof_init_env(void) {
#if MI_PROF_AVAILABLE
  char buf[64];
  long long rate = MI_PROF_DEFAULT_RATE;
  if (_mi_prim_getenv("MIMALLOC_PROFILE_RATE", buf, sizeof(buf)) && buf[0] != 0) {
    rate = 0;
    for (const char* s = buf; *s >= '0' && *s <= '9'; s++) rate = rate * 10 + (*s - '0');
  }
  if (rate <= 0) return;
  _mi_prof_rate = (size_t)rate;
  mi_heap_t* heap = mi_prim_get_default_heap();   /* the main thread's, set up before the env */
  if (mi_heap_is_initialized(heap)) {
    for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
      if (h->prof == NULL) _mi_prof_heap_init(h);
    }
  }
#endif
}

/* a few freed profiler structures, for the next threads (as init.c's thread data cache):
   larson's threads each took an mmap, a munmap and 5 page faults for it otherwise */
#define MI_PROF_CACHE 8
static _Atomic(mi_prof_t*) mi_prof_cache[MI_PROF_CACHE];

void _mi_prof_heap_init(mi_heap_t* heap) {
#if MI_PROF_AVAILABLE
  if (heap->prof != NULL || heap->tld == NULL) return;
  bool is_zero = false;
  mi_prof_t* pr = NULL;
  for (int i = 0; i < MI_PROF_CACHE && pr == NULL; i++) {
    if (mi_atomic_load_relaxed(&mi_prof_cache[i]) != NULL) pr = mi_atomic_exchange_acq_rel(&mi_prof_cache[i], (mi_prof_t*)NULL);
  }
  if (pr == NULL) pr = (mi_prof_t*)_mi_os_alloc(sizeof(mi_prof_t), &is_zero);
  if (pr == NULL) return;
  if (!is_zero) memset(pr, 0, sizeof(*pr));
  pr->rng = (uint64_t)_mi_random_next();
  const size_t medium_bins = _mi_bin(MI_MEDIUM_OBJ_SIZE_MAX) + 1;
  for (size_t b = 1; b < medium_bins; b++) {
    mi_page_t* px = &pr->proxy[b];
    px->block_size = _mi_bin_size(b);
    pr->countdown[b] = mi_prof_draw(pr);
  }
  pr->countdown_big = mi_prof_draw(pr);
  heap->prof = pr;
  /* the fast paths now pop the proxies (empty: the first malloc of each bin leases) */
  for (size_t w = 0; w <= MI_SMALL_WSIZE_MAX; w++) {
    heap->pages_free_direct[w] = &pr->proxy[_mi_bin(w * sizeof(uintptr_t))];
  }
  for (size_t b = 1; b < medium_bins; b++) heap->pages_medium_direct[b] = &pr->proxy[b];
#else
  (void)heap;
#endif
}

static void mi_prof_add_totals(mi_prof_t* pr) {
  for (size_t b = 0; b < MI_BIN_HUGE_INTERNAL; b++) {
    const uint64_t n = pr->bin_popped[b] + pr->bin_slow[b];
    if (n == 0) continue;
    const size_t bsize = _mi_bin_size(b);
    pr->popped += pr->bin_popped[b];
    pr->slow_allocs += pr->bin_slow[b];
    pr->bytes += n * bsize;
    pr->expected += (double)n * mi_prof_prob((double)bsize / (double)_mi_prof_rate);
    pr->bin_popped[b] = pr->bin_slow[b] = 0;
  }
  mi_atomic_add_relaxed(&mi_prof_total_entries, pr->entries);
  mi_atomic_add_relaxed(&mi_prof_total_popped, pr->popped);
  mi_atomic_add_relaxed(&mi_prof_total_slow_allocs, pr->slow_allocs);
  mi_atomic_add_relaxed(&mi_prof_total_samples, pr->samples);
  mi_atomic_add_relaxed(&mi_prof_total_bytes, pr->bytes);
  mi_atomic_add_relaxed(&mi_prof_total_leases, pr->leases);
  mi_atomic_add_relaxed(&mi_prof_total_leased_blocks, pr->leased_blocks);
  mi_atomic_add_relaxed(&mi_prof_total_returned, pr->returned_blocks);
  mi_atomic_add_relaxed(&mi_prof_total_expected_milli, (uint64_t)(pr->expected * 1000.0));
  pr->expected = 0;
  pr->entries = pr->popped = pr->slow_allocs = pr->samples = pr->bytes = 0;
  pr->leases = pr->leased_blocks = pr->returned_blocks = 0;
}

/* the heap's pages go away or move: leases back, tables back to the real pages, proxies freed */
void _mi_prof_heap_done(mi_heap_t* heap) {
  mi_prof_t* const pr = heap->prof;
  if (pr == NULL) return;
  _mi_prof_return_all(heap);
  mi_prof_add_totals(pr);
  heap->prof = NULL;
  for (size_t w = 0; w < MI_PAGES_DIRECT; w++) heap->pages_free_direct[w] = (mi_page_t*)&_mi_page_empty;
  for (size_t b = 0; b < MI_BIN_HUGE_INTERNAL; b++) heap->pages_medium_direct[b] = NULL;
  /* the tables as mi_heap_queue_first_update (page.c) keeps them */
  const size_t medium_bins = _mi_bin(MI_MEDIUM_OBJ_SIZE_MAX) + 1;
  for (size_t b = 1; b < medium_bins; b++) heap->pages_medium_direct[b] = heap->pages[b].first;
  for (size_t w = 0; w <= MI_SMALL_WSIZE_MAX; w++) {
    mi_page_t* const first = heap->pages[_mi_bin(w * sizeof(uintptr_t))].first;
    heap->pages_free_direct[w] = (first == NULL ? (mi_page_t*)&_mi_page_empty : first);
  }
  for (int i = 0; i < MI_PROF_CACHE; i++) {
    mi_prof_t* expected = NULL;
    if (mi_atomic_load_relaxed(&mi_prof_cache[i]) == NULL && mi_atomic_cas_strong_acq_rel(&mi_prof_cache[i], &expected, pr)) return;
  }
  _mi_os_free(pr, sizeof(mi_prof_t));
}

/* slow-path entries of the thread (both modes: the OFF figure) */
void _mi_prof_thread_done(mi_tld_t* tld) {
  mi_atomic_add_relaxed(&mi_prof_total_heartbeat, (uint64_t)tld->heartbeat);
  tld->heartbeat = 0;
}

/* MIMALLOC_PROFILE_REPORT=1: the counters at exit (stderr) */
void _mi_prof_report(void) {
  if (!_mi_env_flag("MIMALLOC_PROFILE_REPORT")) return;
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (mi_heap_is_initialized(heap)) {
    _mi_prof_thread_done(heap->tld);
    for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) {
      if (h->prof != NULL) { _mi_prof_return_all(h); mi_prof_add_totals(h->prof); }
    }
  }
  const uint64_t popped = mi_atomic_load_relaxed(&mi_prof_total_popped);
  const uint64_t slow = mi_atomic_load_relaxed(&mi_prof_total_slow_allocs);
  const uint64_t bytes = mi_atomic_load_relaxed(&mi_prof_total_bytes);
  const uint64_t exp10 = (_mi_prof_rate == 0 ? 0 : (uint64_t)((double)bytes * 10.0 / (double)_mi_prof_rate));
  const uint64_t expm = mi_atomic_load_relaxed(&mi_prof_total_expected_milli);
  _mi_message("prof: rate %zu, slow-path entries (heartbeat) %llu, prof entries %llu, mallocs %llu (proxy %llu, slow %llu), "
    "bytes %llu, samples %llu (expected %llu.%llu; bytes/rate %llu.%llu), leases %llu, leased blocks %llu, returned %llu\n",
    _mi_prof_rate,
    (unsigned long long)mi_atomic_load_relaxed(&mi_prof_total_heartbeat),
    (unsigned long long)mi_atomic_load_relaxed(&mi_prof_total_entries),
    (unsigned long long)(popped + slow), (unsigned long long)popped, (unsigned long long)slow,
    (unsigned long long)bytes, (unsigned long long)mi_atomic_load_relaxed(&mi_prof_total_samples),
    (unsigned long long)(expm / 1000), (unsigned long long)(expm % 1000 / 100),
    (unsigned long long)(exp10 / 10), (unsigned long long)(exp10 % 10),
    (unsigned long long)mi_atomic_load_relaxed(&mi_prof_total_leases),
    (unsigned long long)mi_atomic_load_relaxed(&mi_prof_total_leased_blocks),
    (unsigned long long)mi_atomic_load_relaxed(&mi_prof_total_returned));
}

/* ------------------------------------------------------------------------------------------
   Leases
------------------------------------------------------------------------------------------ */
/* End the bin's lease: count the blocks popped, give the unpopped rest back to the real page. */
static mi_decl_noinline void mi_prof_settle(mi_prof_t* pr, size_t bin) {
  mi_page_t* const px = &pr->proxy[bin];
  mi_page_t* const real = pr->lease_page[bin];
  if (real == NULL) return;
  const size_t popped = px->used;
  pr->bin_popped[bin] += popped;
  pr->countdown[bin] -= (int64_t)(popped * px->block_size);   /* stays > 0: the lease was cut */
  mi_block_t* rest = px->free;
#if MI_PROF_TOPUP > 0
  if (rest != NULL && pr->lease_chained[bin]) {
    /* blocks of several pages: each back to its own */
    while (rest != NULL) {
      mi_block_t* const next = mi_block_next(real, rest);
      mi_page_t* const page = _mi_ptr_page(rest);
      if (page->free == NULL) page->free_is_zero = px->free_is_zero;
      else page->free_is_zero = (page->free_is_zero && px->free_is_zero);
      mi_block_set_next(page, rest, page->free);
      page->free = rest;
      page->used--;
      pr->returned_blocks++;
      if (mi_page_is_in_full(page)) _mi_page_unfull(page);
      rest = next;
    }
  }
#endif
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
    pr->returned_blocks += n;
    if (mi_page_is_in_full(real)) _mi_page_unfull(real);
  }
  px->free = NULL;
  px->used = 0;
  pr->lease_page[bin] = NULL;
#if MI_PROF_TOPUP > 0
  pr->lease_chained[bin] = false;
#endif
}

void _mi_prof_return_all(mi_heap_t* heap) {
  mi_prof_t* const pr = heap->prof;
  if (pr == NULL) return;
  for (size_t b = 0; b < MI_BIN_HUGE_INTERNAL; b++) mi_prof_settle(pr, b);
}

/* Lease the free list of the bin's first page to its proxy, up to the block before the one
   whose allocation crosses the countdown. */
#if !MI_PROF_FALLBACK
static mi_decl_noinline void mi_prof_lease(mi_heap_t* heap, mi_prof_t* pr, size_t bin) {
  mi_page_t* const real = heap->pages[bin].first;
  if (real == NULL || real->free == NULL) return;
  const size_t bsize = real->block_size;
  const int64_t cd = pr->countdown[bin];
  if (cd <= (int64_t)bsize) return;   /* the next allocation samples: leave the proxy empty */
  const size_t k = (size_t)((cd - 1) / (int64_t)bsize);   /* >= 1 allocations that keep it > 0 */
  mi_block_t* const head = real->free;
  size_t n;
  if (real->local_free == NULL && real->capacity - real->used <= k) {
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
#if MI_PROF_TOPUP > 0
  if (n < MI_PROF_TOPUP && n < k && real->next != NULL) {
    mi_block_t* tail = head;
    for (mi_block_t* next = mi_block_next(real, tail); next != NULL; next = mi_block_next(real, tail)) tail = next;
    const size_t want = (k < MI_PROF_TOPUP ? k : MI_PROF_TOPUP);
    size_t visited = 0;
    for (mi_page_t* page = real->next; page != NULL && n < want && visited < 4; page = page->next, visited++) {
      mi_block_t* const h = page->free;
      if (h == NULL) continue;
      size_t m = 1;
      mi_block_t* last = h;
      mi_block_t* next = mi_block_next(page, last);
      while (n + m < want && next != NULL) { last = next; m++; next = mi_block_next(page, last); }
      page->free = next;
      mi_block_set_next(page, last, NULL);
      page->used += (uint32_t)m;
      mi_block_set_next(real, tail, h);
      tail = last;
      n += m;
      pr->lease_chained[bin] = true;
      if (!page->free_is_zero) real->free_is_zero = false;   /* (copied to the proxy below) */
    }
    if (pr->lease_chained[bin]) pr->topups++;
  }
#endif
  mi_page_t* const px = &pr->proxy[bin];
  px->free = head;
  px->used = 0;
  px->free_is_zero = real->free_is_zero;
  px->page_start_ = real->page_start_;
  px->capacity = real->capacity;
  px->block_size = bsize;
  pr->lease_page[bin] = real;
  pr->leases++;
  pr->leased_blocks += n;
}
#endif

/* ------------------------------------------------------------------------------------------
   The slow path with the profiler on (from _mi_malloc_generic)
------------------------------------------------------------------------------------------ */
void* _mi_prof_malloc(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) {
  mi_prof_t* const pr = heap->prof;
  pr->entries++;
  if (mi_likely(size <= MI_MEDIUM_OBJ_SIZE_MAX - MI_PADDING_SIZE && huge_alignment == 0)) {
    const size_t bin = _mi_bin(size + MI_PADDING_SIZE);
    if (pr->lease_page[bin] != NULL) mi_prof_settle(pr, bin);
    const int64_t bsize = (int64_t)pr->proxy[bin].block_size;
    /* what the fast path would have done on the real first page (blocks freed since the
       lease, or all of them in the fallback), else the slow path proper */
    mi_page_t* const page = heap->pages[bin].first;
    void* p;
    if (mi_likely(page != NULL && page->free != NULL)) p = _mi_page_malloc(heap, page, size, zero);
    else {
      pr->busy = true;
      p = _mi_malloc_generic(size, heap, zero, 0, 0);
      pr->busy = false;
      if (p == NULL) return NULL;
    }
    pr->bin_slow[bin]++;
    int64_t cd = pr->countdown[bin] - bsize;
    if (mi_unlikely(cd <= 0)) {
      mi_prof_sample(pr, p, size);
      cd = mi_prof_draw(pr);
    }
    pr->countdown[bin] = cd;
#if !MI_PROF_FALLBACK
    mi_prof_lease(heap, pr, bin);
#endif
    return p;
  }
  pr->busy = true;
  void* const p = _mi_malloc_generic(size, heap, zero, huge_alignment, align_offset);
  pr->busy = false;
  if (p == NULL) return NULL;
  pr->slow_allocs++;
  pr->bytes += size;
  pr->expected += mi_prof_prob((double)size / (double)_mi_prof_rate);
  pr->countdown_big -= (int64_t)size;
  if (pr->countdown_big <= 0) {
    mi_prof_sample(pr, p, size);
    pr->countdown_big = mi_prof_draw(pr);
  }
  return p;
}
