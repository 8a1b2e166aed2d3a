/* SPDX-License-Identifier: MIT */
/* The observers' hooks (internal/observe.h): each event of the core handed to the observers
   that want it, in the top layer (docs/design.md, "Layers"). The core calls only these; the
   observers (prof*.c, live.c, leaks.c, stats-print.c, validate.c) never see a core call site.
   The cheap test in front of a hook stays at its call site (observe.h); what is tested here
   again is what tells the observers apart. */
#include "internal/observers.h"
#include "internal/prof-hook.h"

void _mi_observe_process_init(void) {
  _mi_live_init();             /* MIMALLOC_LIVE */
  _mi_prof_samples_init_env();         /* MIMALLOC_PROFILE (prof-samples.c) */
}

void _mi_observe_process_done(void) {
  mi_heap_t* const heap = mi_prim_get_default_heap();
  if (mi_unlikely(mi_prof_rate() != 0) && mi_heap_is_initialized(heap)) {
    for (mi_heap_t* h = heap->tld->heaps; h != NULL; h = h->next) _mi_prof_return_all(h);   /* leased blocks are not leaks */
  }
  if (_mi_option_env_flag("MIMALLOC_SHOW_LEAKS")) _mi_leaks_report();
  _mi_stats_print_at_exit();
  _mi_prof_samples_process_done();     /* MIMALLOC_PROFILE: the profile at exit */
  _mi_live_done();
}

void _mi_observe_option_set(mi_option_t option, long value) {
  if (option == mi_option_live && value != 0) _mi_live_init();   /* started now */
}

void _mi_observe_thread_start(mi_tld_t* tld) {
  _mi_prof_thread_start(tld);   /* mi_profile_start by another thread */
}

void _mi_observe_thread_new(mi_tld_t* tld) {
  _mi_live_thread_new(tld);
}

void _mi_observe_thread_done(mi_tld_t* tld) {
  _mi_live_thread_done(tld);
}

/* The order of the core's own fork handling around these calls is init.c's */
void _mi_observe_fork(mi_observe_fork_t phase) {
  if (phase == MI_OBSERVE_FORK_PREPARE) {
    _mi_live_fork_prepare();   /* (the purger's live work is paused now) */
    _mi_prof_samples_fork_prepare();
  }
  else if (phase == MI_OBSERVE_FORK_PARENT) {
    _mi_live_fork_parent();
    _mi_prof_samples_fork_parent();
  }
  else {
    _mi_prof_samples_fork_child();
    mi_heap_t* const heap = mi_prim_get_default_heap();
    _mi_live_fork_child(mi_heap_is_initialized(heap) ? heap->tld : NULL);
  }
}

void _mi_observe_heartbeat(mi_tld_t* tld) {
  if (mi_unlikely(mi_live_enabled())) _mi_live_publish(tld, false);   /* MIMALLOC_LIVE */
  if (mi_unlikely(_mi_prof_samples_interval != 0)) _mi_prof_samples_periodic();        /* MIMALLOC_PROFILE_INTERVAL */
}

void _mi_observe_collected(mi_tld_t* tld) {
  _mi_live_publish(tld, true);   /* figures now */
}

mi_msecs_t _mi_observe_background(mi_msecs_t now) {
  return _mi_live_background(now);
}

void _mi_observe_heap_init(mi_heap_t* heap) {
  _mi_prof_heap_init(heap);
}

void _mi_observe_heap_done(mi_heap_t* heap) {
  _mi_prof_heap_done(heap);
}

void _mi_observe_heap_release(mi_heap_t* heap) {
  _mi_prof_return_all(heap);   /* leased blocks back on their pages */
}

mi_heap_t* _mi_observe_heap_companion(const mi_heap_t* heap) {
  return _mi_prof_sample_heap(heap);   /* the heap's sampled blocks */
}

mi_block_t* _mi_observe_page_held(const mi_heap_t* heap, const mi_page_t* page) {
  return _mi_prof_leased(heap, page);
}

void* _mi_observe_malloc(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) {
  return _mi_prof_malloc(size, heap, zero, huge_alignment, align_offset);
}

void _mi_observe_page_move(mi_page_t* page, mi_tld_t* from, mi_tld_t* to) {
  _mi_live_page_move(page, from, to);
}

void _mi_observe_free(mi_page_t* page, mi_block_t* block) {
  _mi_prof_samples_freed(page, block);
}

void _mi_observe_page_gone(mi_page_t* page) {
  _mi_prof_samples_page_gone(page);
}

bool _mi_observe_check(mi_observe_check_t what, const void* x, const void* y) {
#if MI_DEBUG > 0
  switch (what) {
    case MI_CHECK_PAGE:           return _mi_validate_page((const mi_page_t*)x);
    case MI_CHECK_HEAP:           return _mi_validate_heap((const mi_heap_t*)x);
    case MI_CHECK_THREAD:         return _mi_validate_thread((const mi_heap_t*)x);
    case MI_CHECK_SUBPROC:        return _mi_validate_subproc((mi_subproc_t*)x);
    case MI_CHECK_SUBPROC_LOCKED: return _mi_validate_subproc_locked((mi_subproc_t*)x);
    case MI_CHECK_SEGMENT_LOCKED: return _mi_validate_segment_locked((const mi_segment_t*)x);
    case MI_CHECK_ARENA_MEMID:    return _mi_validate_arena_memid(x, (const mi_memid_t*)y);
    case MI_CHECK_ARENAS:         return _mi_validate_arenas();
    case MI_CHECK_THREAD_STATS:   return _mi_validate_stats((const mi_stats_data_t*)x, true);
  }
#endif
  (void)what; (void)x; (void)y;
  return true;
}
