/* SPDX-License-Identifier: MIT */
/* v3.h -- the types of mimalloc.h's v3 mode (MI_V3_API) that the library's own units (v3.c,
   stats-v3.c) take from callers. The library sees the public headers in v2 mode, so these
   restate v3 mode's layouts under names of their own; a v3-mode program passes its struct,
   whose `size` and `version` are checked before any field is read. */
#pragma once
#ifndef MI_INTERNAL_V3_H
#define MI_INTERNAL_V3_H

#include "heap.h"   /* _mi_subproc_main */

/* v3 mode's mi_subproc_id_t (mimalloc.h): a struct around v2's id, returned and passed by value */
typedef struct mi_subproc_id_s { void* _mi_subproc_id; } mi_v3_subproc_id_t;

static inline mi_subproc_t* mi_v3_subproc_of(mi_v3_subproc_id_t id) {
  return (id._mi_subproc_id == NULL ? &_mi_subproc_main : (mi_subproc_t*)id._mi_subproc_id);
}

/* v3 mode's mi_stats_t (mimalloc-stats.h): version 5. Its named figures in layout order: ours
   (MI_STAT_FIELDS in v2 mode) with heaps and theaps before the four reclaim counters, and
   heaps_delete_wait after them. */
#define MI_V3_STAT_VERSION  5
#define MI_V3_BIN_HUGE      73
#define MI_V3_CBIN_COUNT    6
#define MI_V3_STAT_FIELDS() \
  MI_STAT_COUNT(pages) MI_STAT_COUNT(reserved) MI_STAT_COUNT(committed) \
  MI_STAT_COUNTER(reset) MI_STAT_COUNTER(purged) MI_STAT_COUNT(page_committed) \
  MI_STAT_COUNT(pages_abandoned) MI_STAT_COUNT(threads) MI_STAT_COUNT(malloc_normal) \
  MI_STAT_COUNT(malloc_huge) MI_STAT_COUNT(malloc_requested) \
  MI_STAT_COUNTER(mmap_calls) MI_STAT_COUNTER(commit_calls) MI_STAT_COUNTER(reset_calls) \
  MI_STAT_COUNTER(purge_calls) MI_STAT_COUNTER(arena_count) MI_STAT_COUNTER(malloc_normal_count) \
  MI_STAT_COUNTER(malloc_huge_count) MI_STAT_COUNTER(malloc_guarded_count) \
  MI_STAT_COUNTER(arena_rollback_count) MI_STAT_COUNTER(arena_purges) MI_STAT_COUNTER(pages_extended) \
  MI_STAT_COUNTER(pages_retire) MI_STAT_COUNTER(page_searches) MI_STAT_COUNTER(page_searches_count) \
  MI_STAT_COUNT(segments) MI_STAT_COUNT(segments_abandoned) MI_STAT_COUNT(segments_cache) \
  MI_STAT_COUNT(_segments_reserved) \
  MI_STAT_COUNT(heaps) MI_STAT_COUNT(theaps) \
  MI_STAT_COUNTER(pages_reclaim_on_alloc) MI_STAT_COUNTER(pages_reclaim_on_free) \
  MI_STAT_COUNTER(pages_reabandon_full) MI_STAT_COUNTER(pages_unabandon_busy_wait) \
  MI_STAT_COUNTER(heaps_delete_wait)

#define MI_STAT_COUNT(name)    mi_stat_count_t   name;
#define MI_STAT_COUNTER(name)  mi_stat_counter_t name;
typedef struct mi_v3_stats_s {
  size_t size;
  size_t version;
  MI_V3_STAT_FIELDS()
  mi_stat_count_t   _stat_reserved[4];
  mi_stat_counter_t _stat_counter_reserved[4];
  mi_stat_count_t   malloc_bins[MI_V3_BIN_HUGE + 1];
  mi_stat_count_t   page_bins[MI_V3_BIN_HUGE + 1];
  mi_stat_count_t   chunk_bins[MI_V3_CBIN_COUNT];
} mi_v3_stats_t;
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER

/* stats-v3.c: the process' figures in v3's layout (mi_stats_get of a version-5 struct) */
bool _mi_stats_v3_get(mi_v3_stats_t* stats);
/* stats-print.c: the largest block size of v3's bin `bin` (exported; declared by v3 mode's header) */
mi_decl_export size_t mi_stats_get_bin_size(size_t bin) mi_attr_noexcept;

#endif /* MI_INTERNAL_V3_H */
