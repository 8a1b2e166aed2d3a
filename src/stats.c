/* SPDX-License-Identifier: MIT */
/* Statistics: thread and process figures (see mi_stats_data_t in types.h for who updates
   what and why no figure goes negative), merging, reset and snapshots. Counting only, called
   from every layer: it calls nothing above it. Reading them out (mi_stats_get, printing, JSON,
   process information) is stats-print.c's, an observer's. */
#include "internal/base.h"

mi_stats_data_t _mi_stats_main;

/* ---------------------------------------------------------------------------------------
   Updating
--------------------------------------------------------------------------------------- */
static int64_t mi_load64(const int64_t* p)              { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void    mi_store64(int64_t* p, int64_t x)        { __atomic_store_n(p, x, __ATOMIC_RELAXED); }
static int64_t mi_add64(int64_t* p, int64_t x)          { return __atomic_add_fetch(p, x, __ATOMIC_RELAXED); }
static void    mi_max64(int64_t* p, int64_t x) {
  int64_t cur = mi_load64(p);
  while (cur < x && !__atomic_compare_exchange_n(p, &cur, x, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { }
}

void _mi_stat_increase(mi_stat_count_t* stat, size_t amount) {
  stat->current += (int64_t)amount;
  stat->total += (int64_t)amount;
  if (stat->current > stat->peak) stat->peak = stat->current;
}

void _mi_stat_atomic_increase(mi_stat_count_t* stat, size_t amount) {
  _mi_stat_atomic_counted(stat, amount, _mi_stat_atomic_add(stat, (int64_t)amount));
}

int64_t _mi_stat_atomic_add(mi_stat_count_t* stat, int64_t amount) {
  return mi_add64(&stat->current, amount);
}

int64_t _mi_stat_atomic_add_upto(mi_stat_count_t* stat, int64_t amount, int64_t limit) {
  int64_t current = mi_load64(&stat->current);
  do {
    if (current > limit - amount) return -1;
  } while (!__atomic_compare_exchange_n(&stat->current, &current, current + amount, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return current + amount;
}

void _mi_stat_atomic_counted(mi_stat_count_t* stat, size_t amount, int64_t current) {
  mi_add64(&stat->total, (int64_t)amount);
  mi_max64(&stat->peak, current);
}

void _mi_stat_atomic_decrease(mi_stat_count_t* stat, size_t amount) {
  mi_add64(&stat->current, -(int64_t)amount);
}

void _mi_stat_atomic_counter_add(mi_stat_counter_t* stat, size_t amount) {
  mi_add64(&stat->total, (int64_t)amount);
}

/* Move `amount` of current value (not a new allocation: total stays) into or out of a figure. */
static void mi_stat_adjust(mi_stat_count_t* stat, int64_t amount, bool atomic) {
  if (atomic) {
    const int64_t current = mi_add64(&stat->current, amount);
    mi_max64(&stat->peak, current);
  }
  else {
    stat->current += amount;
    mi_assert_internal(stat->current >= 0);
    if (stat->current > stat->peak) stat->peak = stat->current;
  }
}

/* Huge blocks count in the process totals only (segment.c), never in a thread's figures. */
void _mi_stat_page_transfer(const mi_page_t* page, mi_tld_t* from, mi_tld_t* to) {
  if (MI_STAT < 2 || mi_page_is_huge(page) || page->used == 0 || from == to) return;
  const size_t bin = _mi_bin(page->block_size);
  const int64_t blocks = (int64_t)page->used;
  const int64_t bytes = blocks * (int64_t)page->block_size;
  mi_stats_data_t* src = (from == NULL ? &_mi_stats_main : &from->stats);
  mi_stats_data_t* dst = (to == NULL ? &_mi_stats_main : &to->stats);
  mi_stat_adjust(&src->malloc_normal, -bytes, from == NULL);
  mi_stat_adjust(&src->malloc_bins[bin], -blocks, from == NULL);
  mi_stat_adjust(&dst->malloc_normal, bytes, to == NULL);
  mi_stat_adjust(&dst->malloc_bins[bin], blocks, to == NULL);
}

void _mi_stat_blocks_freed(const mi_page_t* page, mi_tld_t* tld, size_t count) {
  if (MI_STAT < 2 || mi_page_is_huge(page) || count == 0) return;
  mi_stats_data_t* stats = (tld == NULL ? &_mi_stats_main : &tld->stats);
  mi_stat_adjust(&stats->malloc_normal, -(int64_t)(count * page->block_size), tld == NULL);
  mi_stat_adjust(&stats->malloc_bins[_mi_bin(page->block_size)], -(int64_t)count, tld == NULL);
}

void _mi_stat_block_malloc(mi_tld_t* tld, const mi_page_t* page, size_t size) {
  _mi_stat_increase(&tld->stats.malloc_requested, size);
  if (mi_page_is_huge(page)) return;
  _mi_stat_increase(&tld->stats.malloc_normal, page->block_size);
  _mi_stat_increase(&tld->stats.malloc_bins[_mi_bin(page->block_size)], 1);
  tld->stats.malloc_normal_count.total++;
}

/* ---------------------------------------------------------------------------------------
   Merging and resetting. A thread's count figures are kept (they are the blocks its pages
   hold); merging publishes their change since the last merge, so the totals never count a
   block twice and never go below zero.
--------------------------------------------------------------------------------------- */
static void mi_stat_count_merge(mi_stat_count_t* total, mi_stat_count_t* src, mi_stat_count_t* published) {
  const int64_t delta = src->current - published->current;
  /* nothing added since the last merge: the figure's peak since then is not above what that
     merge published (most of a thread's per-bin figures; each merge is two atomic operations
     on a line all threads write: 4.5% of thread-churn's samples, 20,000 threads) */
  if (delta == 0 && src->total == 0) return;
  published->current = src->current;
  const int64_t current = mi_add64(&total->current, delta);
  if (src->total != 0) { mi_add64(&total->total, src->total); src->total = 0; }
  mi_max64(&total->peak, (src->peak > current ? src->peak : current));
}

static void mi_stat_counter_merge(mi_stat_counter_t* total, mi_stat_counter_t* src) {
  if (src->total != 0) { mi_add64(&total->total, src->total); src->total = 0; }
}

/* Where each count and each counter lies: the merge loops over them rather than inlining a
   merge per field (1.3 KiB of code every threaded program runs at each thread's end). */
#define MI_STAT_COUNT(name)    (uint16_t)offsetof(mi_stats_data_t, name),
#define MI_STAT_COUNTER(name)
static const uint16_t mi_stat_count_offsets[] = { MI_STAT_FIELDS() };
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
#define MI_STAT_COUNT(name)
#define MI_STAT_COUNTER(name)  (uint16_t)offsetof(mi_stats_data_t, name),
static const uint16_t mi_stat_counter_offsets[] = { MI_STAT_FIELDS() };
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
_Static_assert(sizeof(mi_stats_data_t) <= UINT16_MAX, "the fields' offsets fit");

static void mi_stats_data_merge(mi_stats_data_t* total, mi_stats_data_t* src, mi_stats_data_t* published) {
  for (size_t i = 0; i < sizeof(mi_stat_count_offsets) / sizeof(mi_stat_count_offsets[0]); i++) {
    const size_t off = mi_stat_count_offsets[i];
    mi_stat_count_merge((mi_stat_count_t*)((uint8_t*)total + off), (mi_stat_count_t*)((uint8_t*)src + off),
                        (mi_stat_count_t*)((uint8_t*)published + off));
  }
  for (size_t i = 0; i < sizeof(mi_stat_counter_offsets) / sizeof(mi_stat_counter_offsets[0]); i++) {
    const size_t off = mi_stat_counter_offsets[i];
    mi_stat_counter_merge((mi_stat_counter_t*)((uint8_t*)total + off), (mi_stat_counter_t*)((uint8_t*)src + off));
  }
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_merge(&total->malloc_bins[i], &src->malloc_bins[i], &published->malloc_bins[i]);
    mi_stat_count_merge(&total->page_bins[i], &src->page_bins[i], &published->page_bins[i]);
  }
}

/* Figures of parts that are not the process' (shared heaps: stats-v3.c, sheap.c) added up */
static void mi_stat_count_sum(mi_stat_count_t* dst, const mi_stat_count_t* src) {
  dst->current += src->current;
  dst->peak += src->peak;     /* an upper bound: the parts peaked at different times */
  dst->total += src->total;
}

void _mi_stats_sum(mi_stats_data_t* dst, const mi_stats_data_t* src) {
#define MI_STAT_COUNT(name)    mi_stat_count_sum(&dst->name, &src->name);
#define MI_STAT_COUNTER(name)  dst->name.total += src->name.total;
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_sum(&dst->malloc_bins[i], &src->malloc_bins[i]);
    mi_stat_count_sum(&dst->page_bins[i], &src->page_bins[i]);
  }
}

void _mi_stats_merge_thread(mi_tld_t* tld) {
  if (tld == NULL) return;
  mi_stats_data_merge(&_mi_stats_main, &tld->stats, &tld->stats_published);
}

static mi_tld_t* mi_current_tld(void) {
  mi_heap_t* heap = mi_prim_get_default_heap();
  return (mi_heap_is_initialized(heap) ? heap->tld : NULL);
}

void mi_stats_merge(void) mi_attr_noexcept {
  _mi_stats_merge_thread(mi_current_tld());
}

/* Totals restart from the present: current values stay (they describe memory that exists),
   peak becomes current, totals become current, counters zero. */
static void mi_stat_count_reset(mi_stat_count_t* stat, bool atomic) {
  const int64_t current = (atomic ? mi_load64(&stat->current) : stat->current);
  if (atomic) { mi_store64(&stat->peak, current); mi_store64(&stat->total, current); }
  else        { stat->peak = current; stat->total = 0; }
}
static void mi_stat_counter_reset(mi_stat_counter_t* stat, bool atomic) {
  if (atomic) mi_store64(&stat->total, 0); else stat->total = 0;
}
static void mi_stats_data_reset(mi_stats_data_t* stats, bool atomic) {
#define MI_STAT_COUNT(name)    mi_stat_count_reset(&stats->name, atomic);
#define MI_STAT_COUNTER(name)  mi_stat_counter_reset(&stats->name, atomic);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_reset(&stats->malloc_bins[i], atomic);
    mi_stat_count_reset(&stats->page_bins[i], atomic);
  }
}

void mi_stats_reset(void) mi_attr_noexcept {
  mi_tld_t* tld = mi_current_tld();
  if (tld != NULL) {
    _mi_stats_merge_thread(tld);
    mi_stats_data_reset(&tld->stats, false);
  }
  mi_stats_data_reset(&_mi_stats_main, true);
}

/* A consistent-enough copy of the process totals (each figure read atomically). */
void _mi_stats_snapshot(mi_stats_data_t* copy) {
  const int64_t* src = (const int64_t*)&_mi_stats_main;
  int64_t* dst = (int64_t*)copy;
  for (size_t i = 0; i < sizeof(mi_stats_data_t) / sizeof(int64_t); i++) dst[i] = mi_load64(&src[i]);
}
