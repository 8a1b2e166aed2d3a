/* SPDX-License-Identifier: MIT */
/* Layout probe of the header's v3 mode (MI_V3_API) for source/mimalloc/v3.d: the size,
   alignment and field offsets/sizes of the types v3 mode changes, and every mi_option_t value
   of v3 mode, as the C compiler sees them. A member of its own in the package's archive, linked
   only by the package's tests (tests/mimalloc_tests/headercheck.d), which compare it with the
   D declarations both ways. */
#define MI_V3_API
#include <stddef.h>
#include "mimalloc.h"

typedef struct mimalloc_d_probe_v3_entry_s {
  const char* name;
  long long   value;
} mimalloc_d_probe_v3_entry;

#define MI_PROBE(name, value)          { name, (long long)(value) },
#define MI_PROBE_TYPE(tname, t)        MI_PROBE(tname ".sizeof", sizeof(t)) MI_PROBE(tname ".alignof", _Alignof(t))
#define MI_PROBE_FIELD(tname, t, f)    MI_PROBE(tname "." #f ".offsetof", offsetof(t, f)) \
                                       MI_PROBE(tname "." #f ".sizeof", sizeof(((t*)0)->f))
#define MI_PROBE_OPTION(o)             MI_PROBE("mi_option_t." #o, o)

static const mimalloc_d_probe_v3_entry mi_probe_v3_entries[] = {
  MI_PROBE_TYPE("mi_arena_id_t", mi_arena_id_t)
  MI_PROBE_TYPE("mi_option_t", mi_option_t)
  MI_PROBE_TYPE("mi_subproc_id_t", mi_subproc_id_t)
  MI_PROBE_FIELD("mi_subproc_id_t", mi_subproc_id_t, _mi_subproc_id)
  MI_PROBE_TYPE("mi_heap_area_t", mi_heap_area_t)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, blocks)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, reserved)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, committed)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, used)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, block_size)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, full_block_size)
  MI_PROBE_FIELD("mi_heap_area_t", mi_heap_area_t, reserved1)
  MI_PROBE_OPTION(mi_option_show_errors)
  MI_PROBE_OPTION(mi_option_show_stats)
  MI_PROBE_OPTION(mi_option_verbose)
  MI_PROBE_OPTION(mi_option_deprecated_eager_commit)
  MI_PROBE_OPTION(mi_option_arena_eager_commit)
  MI_PROBE_OPTION(mi_option_purge_decommits)
  MI_PROBE_OPTION(mi_option_allow_large_os_pages)
  MI_PROBE_OPTION(mi_option_reserve_huge_os_pages)
  MI_PROBE_OPTION(mi_option_reserve_huge_os_pages_at)
  MI_PROBE_OPTION(mi_option_reserve_os_memory)
  MI_PROBE_OPTION(mi_option_deprecated_segment_cache)
  MI_PROBE_OPTION(mi_option_deprecated_page_reset)
  MI_PROBE_OPTION(mi_option_deprecated_abandoned_page_purge)
  MI_PROBE_OPTION(mi_option_deprecated_segment_reset)
  MI_PROBE_OPTION(mi_option_deprecated_eager_commit_delay)
  MI_PROBE_OPTION(mi_option_purge_delay)
  MI_PROBE_OPTION(mi_option_use_numa_nodes)
  MI_PROBE_OPTION(mi_option_disallow_os_alloc)
  MI_PROBE_OPTION(mi_option_os_tag)
  MI_PROBE_OPTION(mi_option_max_errors)
  MI_PROBE_OPTION(mi_option_max_warnings)
  MI_PROBE_OPTION(mi_option_deprecated_max_segment_reclaim)
  MI_PROBE_OPTION(mi_option_destroy_on_exit)
  MI_PROBE_OPTION(mi_option_arena_reserve)
  MI_PROBE_OPTION(mi_option_arena_purge_mult)
  MI_PROBE_OPTION(mi_option_deprecated_purge_extend_delay)
  MI_PROBE_OPTION(mi_option_disallow_arena_alloc)
  MI_PROBE_OPTION(mi_option_retry_on_oom)
  MI_PROBE_OPTION(mi_option_visit_abandoned)
  MI_PROBE_OPTION(mi_option_guarded_min)
  MI_PROBE_OPTION(mi_option_guarded_max)
  MI_PROBE_OPTION(mi_option_guarded_precise)
  MI_PROBE_OPTION(mi_option_guarded_sample_rate)
  MI_PROBE_OPTION(mi_option_guarded_sample_seed)
  MI_PROBE_OPTION(mi_option_generic_collect)
  MI_PROBE_OPTION(mi_option_page_reclaim_on_free)
  MI_PROBE_OPTION(mi_option_page_full_retain)
  MI_PROBE_OPTION(mi_option_page_max_candidates)
  MI_PROBE_OPTION(mi_option_max_vabits)
  MI_PROBE_OPTION(mi_option_pagemap_commit)
  MI_PROBE_OPTION(mi_option_page_commit_on_demand)
  MI_PROBE_OPTION(mi_option_page_max_reclaim)
  MI_PROBE_OPTION(mi_option_page_cross_thread_max_reclaim)
  MI_PROBE_OPTION(mi_option_allow_thp)
  MI_PROBE_OPTION(mi_option_minimal_purge_size)
  MI_PROBE_OPTION(mi_option_arena_max_object_size)
  MI_PROBE_OPTION(mi_option_arena_is_numa_local)
  MI_PROBE_OPTION(_mi_option_last)
  MI_PROBE_OPTION(mi_option_large_os_pages)
  MI_PROBE_OPTION(mi_option_eager_region_commit)
  MI_PROBE_OPTION(mi_option_reset_decommits)
  MI_PROBE_OPTION(mi_option_reset_delay)
  MI_PROBE_OPTION(mi_option_limit_os_alloc)
  MI_PROBE_OPTION(mi_option_live)
  MI_PROBE_OPTION(mi_option_live_interval)
  MI_PROBE_OPTION(mi_option_purge_thread)
  MI_PROBE_OPTION(mi_option_memory_limit)
  MI_PROBE_OPTION(mi_option_memory_limit_hard)
};

const mimalloc_d_probe_v3_entry* mimalloc_d_probe_v3_table(size_t* count);
const mimalloc_d_probe_v3_entry* mimalloc_d_probe_v3_table(size_t* count) {
  *count = sizeof(mi_probe_v3_entries) / sizeof(mi_probe_v3_entries[0]);
  return mi_probe_v3_entries;
}
