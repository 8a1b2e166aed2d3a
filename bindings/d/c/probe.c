/* SPDX-License-Identifier: MIT */
/* Layout probe for the D declarations (source/mimalloc/capi.d).

   Compiled against include/mimalloc.h and include/mimalloc-stats.h into the package's
   archive as a member of its own: nothing links it unless a program calls
   mimalloc_d_probe_table, which only the package's tests do.

   The table lists, by name, every constant, every mi_option_t value, and the size,
   alignment and field offsets/sizes of every public struct, as the C compiler sees them.
   The D tests build the same names from the D declarations and compare both ways. */
#include <stddef.h>
#include <stdbool.h>
#include <wchar.h>
#include "mimalloc.h"
#include "mimalloc-stats.h"

typedef struct mimalloc_d_probe_entry_s {
  const char* name;
  long long   value;
} mimalloc_d_probe_entry;

#define MI_PROBE(name, value)          { name, (long long)(value) },
#define MI_PROBE_TYPE(tname, t)        MI_PROBE(tname ".sizeof", sizeof(t)) MI_PROBE(tname ".alignof", _Alignof(t))
#define MI_PROBE_FIELD(tname, t, f)    MI_PROBE(tname "." #f ".offsetof", offsetof(t, f)) \
                                       MI_PROBE(tname "." #f ".sizeof", sizeof(((t*)0)->f))
#define MI_PROBE_OPTION(o)             MI_PROBE("mi_option_t." #o, o)

static const mimalloc_d_probe_entry mi_probe_entries[] = {
  /* constants */
  MI_PROBE("MI_MALLOC_VERSION", MI_MALLOC_VERSION)
  MI_PROBE("MI_SMALL_WSIZE_MAX", MI_SMALL_WSIZE_MAX)
  MI_PROBE("MI_SMALL_SIZE_MAX", MI_SMALL_SIZE_MAX)
  MI_PROBE("MI_STAT_VERSION", MI_STAT_VERSION)
  MI_PROBE("MI_BIN_HUGE", MI_BIN_HUGE)
  MI_PROBE("MI_OPTION_EXT_FIRST", MI_OPTION_EXT_FIRST)

  /* scalar types of the interface */
  MI_PROBE_TYPE("mi_arena_id_t", mi_arena_id_t)
  MI_PROBE_TYPE("mi_subproc_id_t", mi_subproc_id_t)
  MI_PROBE_TYPE("mi_option_t", mi_option_t)
  MI_PROBE_TYPE("bool", bool)
  MI_PROBE_TYPE("long", long)
  MI_PROBE_TYPE("size_t", size_t)
  MI_PROBE_TYPE("wchar_t", wchar_t)

  /* mi_heap_area_t */
  MI_PROBE_TYPE("mi_heap_area_t", mi_heap_area_t)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, blocks)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, reserved)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, committed)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, used)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, block_size)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, full_block_size)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, heap_tag)

  /* mimalloc-stats.h */
  MI_PROBE_TYPE("mi_stat_count_t", mi_stat_count_t)
  MI_PROBE_FIELD("mi_stat_count_t", mi_stat_count_t, total)
  MI_PROBE_FIELD("mi_stat_count_t", mi_stat_count_t, peak)
  MI_PROBE_FIELD("mi_stat_count_t", mi_stat_count_t, current)
  MI_PROBE_TYPE("mi_stat_counter_t", mi_stat_counter_t)
  MI_PROBE_FIELD("mi_stat_counter_t", mi_stat_counter_t, total)
  MI_PROBE_TYPE("mi_stats_t", mi_stats_t)
  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, size)
  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, version)
#define MI_STAT_COUNT(f)    MI_PROBE_FIELD("mi_stats_t", mi_stats_t, f)
#define MI_STAT_COUNTER(f)  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, f)
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, _stat_reserved)
  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, _stat_counter_reserved)
  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, malloc_bins)
  MI_PROBE_FIELD("mi_stats_t", mi_stats_t, page_bins)

  /* every mi_option_t value, the legacy names included */
  MI_PROBE_OPTION(mi_option_show_errors)
  MI_PROBE_OPTION(mi_option_show_stats)
  MI_PROBE_OPTION(mi_option_verbose)
  MI_PROBE_OPTION(mi_option_eager_commit)
  MI_PROBE_OPTION(mi_option_arena_eager_commit)
  MI_PROBE_OPTION(mi_option_purge_decommits)
  MI_PROBE_OPTION(mi_option_allow_large_os_pages)
  MI_PROBE_OPTION(mi_option_reserve_huge_os_pages)
  MI_PROBE_OPTION(mi_option_reserve_huge_os_pages_at)
  MI_PROBE_OPTION(mi_option_reserve_os_memory)
  MI_PROBE_OPTION(mi_option_deprecated_segment_cache)
  MI_PROBE_OPTION(mi_option_deprecated_page_reset)
  MI_PROBE_OPTION(mi_option_abandoned_page_purge)
  MI_PROBE_OPTION(mi_option_deprecated_segment_reset)
  MI_PROBE_OPTION(mi_option_eager_commit_delay)
  MI_PROBE_OPTION(mi_option_purge_delay)
  MI_PROBE_OPTION(mi_option_use_numa_nodes)
  MI_PROBE_OPTION(mi_option_disallow_os_alloc)
  MI_PROBE_OPTION(mi_option_os_tag)
  MI_PROBE_OPTION(mi_option_max_errors)
  MI_PROBE_OPTION(mi_option_max_warnings)
  MI_PROBE_OPTION(mi_option_max_segment_reclaim)
  MI_PROBE_OPTION(mi_option_destroy_on_exit)
  MI_PROBE_OPTION(mi_option_arena_reserve)
  MI_PROBE_OPTION(mi_option_arena_purge_mult)
  MI_PROBE_OPTION(mi_option_purge_extend_delay)
  MI_PROBE_OPTION(mi_option_abandoned_reclaim_on_free)
  MI_PROBE_OPTION(mi_option_disallow_arena_alloc)
  MI_PROBE_OPTION(mi_option_retry_on_oom)
  MI_PROBE_OPTION(mi_option_visit_abandoned)
  MI_PROBE_OPTION(mi_option_guarded_min)
  MI_PROBE_OPTION(mi_option_guarded_max)
  MI_PROBE_OPTION(mi_option_guarded_precise)
  MI_PROBE_OPTION(mi_option_guarded_sample_rate)
  MI_PROBE_OPTION(mi_option_guarded_sample_seed)
  MI_PROBE_OPTION(mi_option_target_segments_per_thread)
  MI_PROBE_OPTION(mi_option_generic_collect)
  MI_PROBE_OPTION(mi_option_allow_thp)
  MI_PROBE_OPTION(_mi_option_last)
  MI_PROBE_OPTION(mi_option_large_os_pages)
  MI_PROBE_OPTION(mi_option_eager_region_commit)
  MI_PROBE_OPTION(mi_option_reset_decommits)
  MI_PROBE_OPTION(mi_option_reset_delay)
  MI_PROBE_OPTION(mi_option_abandoned_page_reset)
  MI_PROBE_OPTION(mi_option_limit_os_alloc)
  /* this implementation's own (#defines from MI_OPTION_EXT_FIRST on) */
  MI_PROBE_OPTION(mi_option_live)
  MI_PROBE_OPTION(mi_option_live_interval)
  MI_PROBE_OPTION(mi_option_purge_thread)
  MI_PROBE_OPTION(mi_option_memory_limit)
  MI_PROBE_OPTION(mi_option_memory_limit_hard)
};

/* The table and its length. */
const mimalloc_d_probe_entry* mimalloc_d_probe_table(size_t* count) {
  *count = sizeof(mi_probe_entries) / sizeof(mi_probe_entries[0]);
  return mi_probe_entries;
}

/* Which variant of the library this archive was built as (so the tests can check that
   dub linked the configuration it was asked for). */
const char* mimalloc_d_probe_variant(void) {
#if defined(MI_MALLOC_OVERRIDE) && MI_MALLOC_OVERRIDE
  return "override";
#elif defined(MI_SECURE) && MI_SECURE
  return "secure";
#elif defined(MI_DEBUG) && MI_DEBUG
  return "debug";
#else
  return "release";
#endif
}
