/* SPDX-License-Identifier: MIT */
/* Layout probe of the header's v3 mode (MI_V3_API) for the Rust bindings' `v3` module: the
   sizes and field offsets of the types v3 mode changes and every option value, as the C
   compiler sees them. tests/v3.rs compares it entry by entry with mimalloc_compat_sys::v3.
   Nothing calls it in a normal program, so the linker leaves this object out. */
#define MI_V3_API
#include <stddef.h>
#include <stdalign.h>
#include "mimalloc.h"
#include "mimalloc-stats.h"

typedef struct mi_compat_probe_v3_entry_s {
  const char* name;
  long long   value;
} mi_compat_probe_v3_entry_t;

#define P_VALUE(name)            { #name, (long long)(name) },
#define P_STRUCT(tp)             { "sizeof(" #tp ")", (long long)sizeof(tp) }, \
                                 { "alignof(" #tp ")", (long long)alignof(tp) },
#define P_FIELD(tp, field)       { "offsetof(" #tp "," #field ")", (long long)offsetof(tp, field) }, \
                                 { "sizeof(" #tp "." #field ")", (long long)sizeof(((tp*)0)->field) },

static const mi_compat_probe_v3_entry_t mi_compat_probe_v3_entries[] = {
  P_STRUCT(mi_arena_id_t)
  P_STRUCT(mi_subproc_id_t)
  P_FIELD(mi_subproc_id_t, _mi_subproc_id)
  P_STRUCT(mi_option_t)
  P_STRUCT(mi_heap_area_t)
  P_FIELD(mi_heap_area_t, blocks)
  P_FIELD(mi_heap_area_t, reserved)
  P_FIELD(mi_heap_area_t, committed)
  P_FIELD(mi_heap_area_t, used)
  P_FIELD(mi_heap_area_t, block_size)
  P_FIELD(mi_heap_area_t, full_block_size)
  P_FIELD(mi_heap_area_t, reserved1)
  /* v3's statistics layout (version 5) */
  P_VALUE(MI_STAT_VERSION)
  P_STRUCT(mi_stats_t)
  P_FIELD(mi_stats_t, pages)
  P_FIELD(mi_stats_t, _segments_reserved)
  P_FIELD(mi_stats_t, heaps)
  P_FIELD(mi_stats_t, theaps)
  P_FIELD(mi_stats_t, pages_unabandon_busy_wait)
  P_FIELD(mi_stats_t, heaps_delete_wait)
  P_FIELD(mi_stats_t, malloc_bins)
  P_FIELD(mi_stats_t, page_bins)
  P_FIELD(mi_stats_t, chunk_bins)
  /* every option of v3 mode's mi_option_t, the legacy names, and this implementation's own */
  P_VALUE(mi_option_show_errors)
  P_VALUE(mi_option_show_stats)
  P_VALUE(mi_option_verbose)
  P_VALUE(mi_option_deprecated_eager_commit)
  P_VALUE(mi_option_arena_eager_commit)
  P_VALUE(mi_option_purge_decommits)
  P_VALUE(mi_option_allow_large_os_pages)
  P_VALUE(mi_option_reserve_huge_os_pages)
  P_VALUE(mi_option_reserve_huge_os_pages_at)
  P_VALUE(mi_option_reserve_os_memory)
  P_VALUE(mi_option_deprecated_segment_cache)
  P_VALUE(mi_option_deprecated_page_reset)
  P_VALUE(mi_option_deprecated_abandoned_page_purge)
  P_VALUE(mi_option_deprecated_segment_reset)
  P_VALUE(mi_option_deprecated_eager_commit_delay)
  P_VALUE(mi_option_purge_delay)
  P_VALUE(mi_option_use_numa_nodes)
  P_VALUE(mi_option_disallow_os_alloc)
  P_VALUE(mi_option_os_tag)
  P_VALUE(mi_option_max_errors)
  P_VALUE(mi_option_max_warnings)
  P_VALUE(mi_option_deprecated_max_segment_reclaim)
  P_VALUE(mi_option_destroy_on_exit)
  P_VALUE(mi_option_arena_reserve)
  P_VALUE(mi_option_arena_purge_mult)
  P_VALUE(mi_option_deprecated_purge_extend_delay)
  P_VALUE(mi_option_disallow_arena_alloc)
  P_VALUE(mi_option_retry_on_oom)
  P_VALUE(mi_option_visit_abandoned)
  P_VALUE(mi_option_guarded_min)
  P_VALUE(mi_option_guarded_max)
  P_VALUE(mi_option_guarded_precise)
  P_VALUE(mi_option_guarded_sample_rate)
  P_VALUE(mi_option_guarded_sample_seed)
  P_VALUE(mi_option_generic_collect)
  P_VALUE(mi_option_page_reclaim_on_free)
  P_VALUE(mi_option_page_full_retain)
  P_VALUE(mi_option_page_max_candidates)
  P_VALUE(mi_option_max_vabits)
  P_VALUE(mi_option_pagemap_commit)
  P_VALUE(mi_option_page_commit_on_demand)
  P_VALUE(mi_option_page_max_reclaim)
  P_VALUE(mi_option_page_cross_thread_max_reclaim)
  P_VALUE(mi_option_allow_thp)
  P_VALUE(mi_option_minimal_purge_size)
  P_VALUE(mi_option_arena_max_object_size)
  P_VALUE(mi_option_arena_is_numa_local)
  P_VALUE(_mi_option_last)
  P_VALUE(mi_option_large_os_pages)
  P_VALUE(mi_option_eager_region_commit)
  P_VALUE(mi_option_reset_decommits)
  P_VALUE(mi_option_reset_delay)
  P_VALUE(mi_option_limit_os_alloc)
  P_VALUE(mi_option_live)
  P_VALUE(mi_option_live_interval)
  P_VALUE(mi_option_purge_thread)
};

/* Not declared in any header: the sys crate declares it for its tests. */
const mi_compat_probe_v3_entry_t* mi_compat_probe_v3_table(size_t* count);
const mi_compat_probe_v3_entry_t* mi_compat_probe_v3_table(size_t* count) {
  *count = sizeof(mi_compat_probe_v3_entries) / sizeof(mi_compat_probe_v3_entries[0]);
  return mi_compat_probe_v3_entries;
}
