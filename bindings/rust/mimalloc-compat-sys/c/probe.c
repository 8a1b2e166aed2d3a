/* SPDX-License-Identifier: MIT */
/* Layout probe for the Rust bindings: a table of the sizes, alignments and field offsets of
   the public structs, every enum value and every constant of mimalloc.h and mimalloc-stats.h,
   as the C compiler sees them with the same flags as the library. The sys crate's tests
   compare it entry by entry with the Rust definitions. Nothing calls it in a normal program,
   so the linker leaves this object out. */
#include <stddef.h>
#include <stdalign.h>
#include "mimalloc.h"
#include "mimalloc-stats.h"

typedef struct mi_compat_probe_entry_s {
  const char* name;
  long long   value;
} mi_compat_probe_entry_t;

#define P_VALUE(name)            { #name, (long long)(name) },
#define P_STRUCT(tp)             { "sizeof(" #tp ")", (long long)sizeof(tp) }, \
                                 { "alignof(" #tp ")", (long long)alignof(tp) },
#define P_FIELD(tp, field)       { "offsetof(" #tp "," #field ")", (long long)offsetof(tp, field) }, \
                                 { "sizeof(" #tp "." #field ")", (long long)sizeof(((tp*)0)->field) },

/* every statistic of mi_stats_t, through the header's own field list */
#define MI_STAT_COUNT(stat)      P_FIELD(mi_stats_t, stat)
#define MI_STAT_COUNTER(stat)    P_FIELD(mi_stats_t, stat)

static const mi_compat_probe_entry_t mi_compat_probe_entries[] = {
  /* constants */
  P_VALUE(MI_MALLOC_VERSION)
  P_VALUE(MI_SMALL_WSIZE_MAX)
  P_VALUE(MI_SMALL_SIZE_MAX)
  P_VALUE(MI_STAT_VERSION)
  P_VALUE(MI_BIN_HUGE)

  /* types */
  P_STRUCT(mi_arena_id_t)
  P_STRUCT(mi_subproc_id_t)
  P_STRUCT(mi_option_t)
  P_STRUCT(bool)
  P_STRUCT(long)
  P_STRUCT(wchar_t)

  P_STRUCT(mi_heap_area_t)
  P_FIELD(mi_heap_area_t, blocks)
  P_FIELD(mi_heap_area_t, reserved)
  P_FIELD(mi_heap_area_t, committed)
  P_FIELD(mi_heap_area_t, used)
  P_FIELD(mi_heap_area_t, block_size)
  P_FIELD(mi_heap_area_t, full_block_size)
  P_FIELD(mi_heap_area_t, heap_tag)

  P_STRUCT(mi_stat_count_t)
  P_FIELD(mi_stat_count_t, total)
  P_FIELD(mi_stat_count_t, peak)
  P_FIELD(mi_stat_count_t, current)
  P_STRUCT(mi_stat_counter_t)
  P_FIELD(mi_stat_counter_t, total)

  P_STRUCT(mi_stats_t)
  P_FIELD(mi_stats_t, size)
  P_FIELD(mi_stats_t, version)
  MI_STAT_FIELDS()
  P_FIELD(mi_stats_t, _stat_reserved)
  P_FIELD(mi_stats_t, _stat_counter_reserved)
  P_FIELD(mi_stats_t, malloc_bins)
  P_FIELD(mi_stats_t, page_bins)

  /* mi_option_t: every option, the count, the legacy names, and the extension options */
  P_VALUE(mi_option_show_errors)
  P_VALUE(mi_option_show_stats)
  P_VALUE(mi_option_verbose)
  P_VALUE(mi_option_eager_commit)
  P_VALUE(mi_option_arena_eager_commit)
  P_VALUE(mi_option_purge_decommits)
  P_VALUE(mi_option_allow_large_os_pages)
  P_VALUE(mi_option_reserve_huge_os_pages)
  P_VALUE(mi_option_reserve_huge_os_pages_at)
  P_VALUE(mi_option_reserve_os_memory)
  P_VALUE(mi_option_deprecated_segment_cache)
  P_VALUE(mi_option_deprecated_page_reset)
  P_VALUE(mi_option_abandoned_page_purge)
  P_VALUE(mi_option_deprecated_segment_reset)
  P_VALUE(mi_option_eager_commit_delay)
  P_VALUE(mi_option_purge_delay)
  P_VALUE(mi_option_use_numa_nodes)
  P_VALUE(mi_option_disallow_os_alloc)
  P_VALUE(mi_option_os_tag)
  P_VALUE(mi_option_max_errors)
  P_VALUE(mi_option_max_warnings)
  P_VALUE(mi_option_max_segment_reclaim)
  P_VALUE(mi_option_destroy_on_exit)
  P_VALUE(mi_option_arena_reserve)
  P_VALUE(mi_option_arena_purge_mult)
  P_VALUE(mi_option_purge_extend_delay)
  P_VALUE(mi_option_abandoned_reclaim_on_free)
  P_VALUE(mi_option_disallow_arena_alloc)
  P_VALUE(mi_option_retry_on_oom)
  P_VALUE(mi_option_visit_abandoned)
  P_VALUE(mi_option_guarded_min)
  P_VALUE(mi_option_guarded_max)
  P_VALUE(mi_option_guarded_precise)
  P_VALUE(mi_option_guarded_sample_rate)
  P_VALUE(mi_option_guarded_sample_seed)
  P_VALUE(mi_option_target_segments_per_thread)
  P_VALUE(mi_option_generic_collect)
  P_VALUE(mi_option_allow_thp)
  P_VALUE(_mi_option_last)
  P_VALUE(mi_option_large_os_pages)
  P_VALUE(mi_option_eager_region_commit)
  P_VALUE(mi_option_reset_decommits)
  P_VALUE(mi_option_reset_delay)
  P_VALUE(mi_option_abandoned_page_reset)
  P_VALUE(mi_option_limit_os_alloc)
  /* this implementation's own options (#defines beyond mimalloc's numbering) */
  P_VALUE(MI_OPTION_EXT_FIRST)
  P_VALUE(mi_option_live)
  P_VALUE(mi_option_live_interval)
  P_VALUE(mi_option_purge_thread)
  P_VALUE(mi_option_memory_limit)
  P_VALUE(mi_option_memory_limit_hard)
};

#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER

/* Not declared in any header: the sys crate declares it for its tests. */
const mi_compat_probe_entry_t* mi_compat_probe_table(size_t* count);
const mi_compat_probe_entry_t* mi_compat_probe_table(size_t* count) {
  *count = sizeof(mi_compat_probe_entries) / sizeof(mi_compat_probe_entries[0]);
  return mi_compat_probe_entries;
}
