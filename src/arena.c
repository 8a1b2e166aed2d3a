/* Arenas and reserved OS memory. This version takes memory from the OS per segment; arenas,
   reservations and huge OS pages are the subject of the OS-memory issue (#5). Until then these
   functions fail clearly (ENOMEM / false / NULL, with a warning) instead of pretending. */
#include "internal/internal.h"

static int mi_arenas_unavailable(const char* fname) {
  _mi_warning_message("%s: arenas and reserved OS memory are not available in this version\n", fname);
  return ENOMEM;
}

int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes, size_t timeout_msecs) mi_attr_noexcept {
  (void)numa_nodes; (void)timeout_msecs;
  if (pages == 0) return 0;
  return mi_arenas_unavailable("mi_reserve_huge_os_pages_interleave");
}

int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept {
  (void)numa_node; (void)timeout_msecs; (void)exclusive;
  if (arena_id != NULL) *arena_id = -1;
  if (pages == 0) return 0;
  return mi_arenas_unavailable("mi_reserve_huge_os_pages_at");
}

int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs) mi_attr_noexcept {
  return mi_reserve_huge_os_pages_at_ex(pages, numa_node, timeout_msecs, false, NULL);
}

int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved) mi_attr_noexcept {
  (void)max_secs;
  _mi_warning_message("mi_reserve_huge_os_pages is deprecated: use mi_reserve_huge_os_pages_interleave/_at instead\n");
  if (pages_reserved != NULL) *pages_reserved = 0;
  if (pages == 0) return 0;
  return mi_arenas_unavailable("mi_reserve_huge_os_pages");
}

int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept {
  (void)size; (void)commit; (void)allow_large; (void)exclusive;
  if (arena_id != NULL) *arena_id = 0;
  return mi_arenas_unavailable("mi_reserve_os_memory");
}

int mi_reserve_os_memory(size_t size, bool commit, bool allow_large) mi_attr_noexcept {
  return mi_reserve_os_memory_ex(size, commit, allow_large, false, NULL);
}

bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept {
  (void)start; (void)size; (void)is_committed; (void)is_large; (void)is_zero; (void)numa_node; (void)exclusive;
  if (arena_id != NULL) *arena_id = 0;
  mi_arenas_unavailable("mi_manage_os_memory");
  return false;
}

bool mi_manage_os_memory(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node) mi_attr_noexcept {
  return mi_manage_os_memory_ex(start, size, is_committed, is_large, is_zero, numa_node, false, NULL);
}

void* mi_arena_area(mi_arena_id_t arena_id, size_t* size) {
  (void)arena_id;
  if (size != NULL) *size = 0;
  return NULL;   /* no arena id is known */
}

void mi_debug_show_arenas(void) mi_attr_noexcept {
  _mi_message("arenas: none (memory is taken from the OS per segment in this version)\n");
}

void mi_arenas_print(void) mi_attr_noexcept {
  mi_debug_show_arenas();
}

/* Guarded objects exist only in MI_GUARDED builds (not yet available): documented no-ops. */
void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed) {
  (void)heap; (void)sample_rate; (void)seed;
}
void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max) {
  (void)heap; (void)min; (void)max;
}

/* Forced collect, then nothing more: segments are not yet pooled per thread (issue #5). */
void mi_collect_reduce(size_t target_thread_owned) mi_attr_noexcept {
  (void)target_thread_owned;
  mi_collect(true);
}
