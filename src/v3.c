/* SPDX-License-Identifier: MIT */
/* mimalloc v3's API (docs/v3-api.md): the symbols that mimalloc.h declares in its MI_V3_API mode
   (include/mimalloc-v3.h), where v3 gives a name another meaning or other types than v2. Each is a
   thin translation onto the v2 functions: arena ids from pointer values, subprocess ids from
   v3's struct, option numbers from v3's numbering, theaps as the thread's own heaps. This unit
   sees the header in its v2 mode, so the v3 types are restated here with the same layout. */
#include "internal/alloc.h"
#include "internal/v3.h"
#include <limits.h>   /* INT_MAX (not reached through the internal headers on every platform: macOS) */

/* In v2 mode the header spells the theap functions as macros over mi_heap_*; here they are
   the exported functions that v3 mode declares. */
#undef mi_theap_get_default
#undef mi_theap_set_default
#undef mi_theap_collect
#undef mi_theap_malloc
#undef mi_theap_zalloc
#undef mi_theap_calloc
#undef mi_theap_malloc_small
#undef mi_theap_zalloc_small
#undef mi_theap_malloc_aligned
#undef mi_theap_realloc

/* ---------------------------------------------------------------------------------------
   Arenas: v3's id is a pointer; ours is an int (0: none, ids from 1). The pointer value is the
   int, so an id converts both ways; a pointer that is no int is an unknown id (-1).
--------------------------------------------------------------------------------------- */
static mi_arena_id_t mi_v3_arena_id(void* id) {
  const intptr_t n = (intptr_t)id;
  return (n >= 0 && n <= INT_MAX ? (mi_arena_id_t)n : -1);
}

/* v2's "no arena" is 0 or -1 (what the _ex functions store when they make none): NULL here */
static void* mi_v3_arena_ptr(mi_arena_id_t id) {
  return (id > 0 ? (void*)(intptr_t)id : NULL);
}

mi_decl_export mi_heap_t* mi_v3_heap_new_in_arena(void* arena_id) {
  return mi_heap_new_shared_in_arena(mi_v3_arena_id(arena_id));
}

mi_decl_export void* mi_v3_arena_area(void* arena_id, size_t* size) {
  return mi_arena_area(mi_v3_arena_id(arena_id), size);
}

mi_decl_export bool mi_v3_arena_contains(void* arena_id, const void* p) {
  return mi_arena_contains(mi_v3_arena_id(arena_id), p);
}

/* The out-parameter is written on every return (NULL on failure), as v3 does: the caller's
   pointer-sized slot is never left half written by an int. */
mi_decl_export int mi_v3_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive, void** arena_id) mi_attr_noexcept {
  mi_arena_id_t id = 0;
  const int err = mi_reserve_huge_os_pages_at_ex(pages, numa_node, timeout_msecs, exclusive, &id);
  if (arena_id != NULL) *arena_id = (err == 0 ? mi_v3_arena_ptr(id) : NULL);
  return err;
}

mi_decl_export int mi_v3_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, void** arena_id) mi_attr_noexcept {
  mi_arena_id_t id = 0;
  const int err = mi_reserve_os_memory_ex(size, commit, allow_large, exclusive, &id);
  if (arena_id != NULL) *arena_id = (err == 0 ? mi_v3_arena_ptr(id) : NULL);
  return err;
}

mi_decl_export bool mi_v3_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node, bool exclusive, void** arena_id) mi_attr_noexcept {
  mi_arena_id_t id = 0;
  const bool ok = mi_manage_os_memory_ex(start, size, is_committed, is_pinned, is_zero, numa_node, exclusive, &id);
  if (arena_id != NULL) *arena_id = (ok ? mi_v3_arena_ptr(id) : NULL);
  return ok;
}

/* v3's mi_commit_fun_t is mi_arena_commit_fun_t (arena.h): the arena commits and decommits
   (purges) through it, never through the OS (arena.c). With is_pinned it is never called. */
mi_decl_export bool mi_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node, bool exclusive,
                                     mi_arena_commit_fun_t* commit_fun, void* commit_fun_arg, void** arena_id) mi_attr_noexcept {
  mi_arena_id_t id = 0;
  const bool ok = _mi_arena_manage_memory(start, size, is_committed, is_pinned, is_zero, numa_node, exclusive, commit_fun, commit_fun_arg, &id);
  if (arena_id != NULL) *arena_id = (ok ? mi_v3_arena_ptr(id) : NULL);
  return ok;
}

/* ---------------------------------------------------------------------------------------
   Subprocesses
--------------------------------------------------------------------------------------- */
static mi_v3_subproc_id_t mi_v3_subproc(mi_subproc_id_t id) {
  mi_v3_subproc_id_t v3 = { id };
  return v3;
}

mi_decl_export mi_v3_subproc_id_t mi_v3_subproc_main(void)    { return mi_v3_subproc(mi_subproc_main()); }
mi_decl_export mi_v3_subproc_id_t mi_v3_subproc_current(void) { return mi_v3_subproc(mi_subproc_current()); }
mi_decl_export mi_v3_subproc_id_t mi_v3_subproc_new(void)     { return mi_v3_subproc(mi_subproc_new()); }

mi_decl_export void mi_v3_subproc_add_current_thread(mi_v3_subproc_id_t subproc) {
  mi_subproc_add_current_thread(subproc._mi_subproc_id);
}

/* v3 frees the subprocess' memory at once; ours is kept until its threads have ended and its
   segments are free (mi_subproc_delete), as that is the only time it can go safely. */
mi_decl_export void mi_subproc_destroy(mi_v3_subproc_id_t subproc) {
  mi_subproc_delete(subproc._mi_subproc_id);
}

/* v3's heaps are the main heap and those of mi_heap_new (shared heaps, sheap.c); a v2 heap of
   one thread is not one of them. */
mi_decl_export bool mi_v3_subproc_visit_heaps(mi_v3_subproc_id_t subproc, bool (*visitor)(mi_heap_t* heap, void* arg), void* arg) {
  if (visitor == NULL) return false;
  return _mi_sheap_visit(mi_v3_subproc_of(subproc), visitor, arg);
}

/* ---------------------------------------------------------------------------------------
   Heaps and theaps
--------------------------------------------------------------------------------------- */
/* (heap-api.c: a shared heap's ended parts' pages; the main heap's or a thread's heap's: the
   ordinary ones of its subprocess and tag. Reading another thread's heap's tld and tag is safe:
   both are set when it is made and never change.) */
mi_decl_export bool mi_heap_visit_abandoned_blocks(mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  return _mi_heap_api_visit_abandoned(heap, visit_blocks, visitor, arg);
}

/* v3's main heap is one heap for all threads: the shared heap _mi_sheap_main, whose part for a
   thread is its backing heap. mi_heap_of names it for any thread's backing heap. Another
   thread's heap may not be read (only its thread may), but where it lies tells: a thread's
   other heaps, its theaps and the shared heaps are blocks of our segments (heap-api.c, sheap.c),
   its backing heap is not (thread data from the OS, init.c; the first thread's is static). Nor
   is a thread's profiler sample heap (prof.c): another thread's blocks sampled in its backing
   heap name the main heap too; those sampled in a theap name its shared heap (the page's mark,
   heap-api.c, mi_heap_of). */
mi_decl_export mi_heap_t* mi_v3_heap_main(void) {
  return _mi_sheap_main();
}

mi_decl_export mi_heap_t* mi_v3_heap_of(const void* p) {
  mi_heap_t* const heap = mi_heap_of(p);
  if (heap == NULL) return (mi_any_heap_contains(p) ? _mi_sheap_main() : NULL);   /* an ended thread's block */
  return (_mi_ptr_segment_checked(heap) == NULL ? _mi_sheap_main() : heap);
}

mi_decl_export bool mi_v3_heap_contains(const mi_heap_t* heap, const void* p) {
  if (heap == NULL) heap = _mi_sheap_main();
  return (mi_v3_heap_of(p) == heap);
}

/* v3's mi_check_owned: any heap's block (v2's: the calling thread's default heap's) */
mi_decl_export bool mi_v3_check_owned(const void* p) {
  return mi_any_heap_contains(p);
}

/* A theap is a heap of the calling thread: a shared heap's part for it, or a heap it owns. */
mi_decl_export mi_heap_t* mi_heap_theap(mi_heap_t* heap) {
  if (heap == NULL) heap = mi_heap_get_backing();   /* the main heap's part */
  if (mi_heap_is_shared(heap)) return _mi_sheap_theap(heap, true);
  if (!mi_heap_is_initialized(heap) || mi_heap_check_owner(heap, "mi_heap_theap")) return NULL;
  return heap;
}

/* The calling thread's part of a shared heap may be its default (mi_heap_set_default): plain
   malloc then allocates in that heap, until the part ends (the default goes back to the backing
   heap first, sheap.c) or the default changes. Another thread's theap is refused (EINVAL). */
mi_decl_export mi_heap_t* mi_theap_set_default(mi_heap_t* theap) {
  return mi_heap_set_default(theap);
}

mi_decl_export mi_heap_t* mi_theap_get_default(void) {
  return mi_heap_get_default();
}

mi_decl_export void mi_theap_collect(mi_heap_t* theap, bool force) mi_attr_noexcept {
  mi_heap_collect(theap, force);
}

mi_decl_export void* mi_theap_malloc(mi_heap_t* theap, size_t size) mi_attr_noexcept {
  return mi_heap_malloc(theap, size);
}

mi_decl_export void* mi_theap_zalloc(mi_heap_t* theap, size_t size) mi_attr_noexcept {
  return mi_heap_zalloc(theap, size);
}

mi_decl_export void* mi_theap_calloc(mi_heap_t* theap, size_t count, size_t size) mi_attr_noexcept {
  return mi_heap_calloc(theap, count, size);
}

mi_decl_export void* mi_theap_malloc_small(mi_heap_t* theap, size_t size) mi_attr_noexcept {
  return mi_heap_malloc_small(theap, size);
}

mi_decl_export void* mi_theap_zalloc_small(mi_heap_t* theap, size_t size) mi_attr_noexcept {
  return mi_heap_zalloc_small(theap, size);
}

mi_decl_export void* mi_theap_malloc_aligned(mi_heap_t* theap, size_t size, size_t alignment) mi_attr_noexcept {
  return mi_heap_malloc_aligned(theap, size, alignment);
}

mi_decl_export void* mi_theap_realloc(mi_heap_t* theap, void* p, size_t newsize) mi_attr_noexcept {
  return mi_heap_realloc(theap, p, newsize);
}

mi_decl_export void mi_theap_guarded_set_sample_rate(mi_heap_t* theap, size_t sample_rate, size_t seed) {
  mi_heap_guarded_set_sample_rate(theap, sample_rate, seed);
}

mi_decl_export void mi_theap_guarded_set_size_bound(mi_heap_t* theap, size_t min, size_t max) {
  mi_heap_guarded_set_size_bound(theap, min, max);
}

mi_decl_export bool mi_theap_visit_blocks(const mi_heap_t* theap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  return mi_heap_visit_blocks(theap, visit_blocks, visitor, arg);
}

/* ---------------------------------------------------------------------------------------
   Options: v3's numbers (mimalloc.h, v3 mode) onto ours. An entry >= 0 is our option; an
   entry < 0 is -(k+1) for slot k of the options only v3 has, which are stored so that they
   read back (the program's settings only: nothing here reads them, nor the environment).
   Numbers from MI_OPTION_EXT_FIRST on are ours in both modes.
--------------------------------------------------------------------------------------- */
#define MI_V3_OPTION_LAST  47   /* v3's _mi_option_last */
#define MI_V3_ONLY(k)      (-(k) - 1)

static const int16_t mi_v3_options[MI_V3_OPTION_LAST] = {
  /* 0..25: the same numbers (a v3 deprecated_ name is the v2 option of its number) */
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
  mi_option_disallow_arena_alloc, mi_option_retry_on_oom, mi_option_visit_abandoned,     /* 26..28 */
  mi_option_guarded_min, mi_option_guarded_max, mi_option_guarded_precise,               /* 29..31 */
  mi_option_guarded_sample_rate, mi_option_guarded_sample_seed, mi_option_generic_collect, /* 32..34 */
  MI_V3_ONLY(0), MI_V3_ONLY(1), MI_V3_ONLY(2), MI_V3_ONLY(3),                            /* 35..38 */
  MI_V3_ONLY(4), MI_V3_ONLY(5), MI_V3_ONLY(6), MI_V3_ONLY(7),                            /* 39..42 */
  mi_option_allow_thp,                                                                   /* 43 */
  MI_V3_ONLY(8), MI_V3_ONLY(9), MI_V3_ONLY(10),                                          /* 44..46 */
};

/* value starts at v3's default; once is_set (mi_option_set), mi_option_set_default leaves it */
typedef struct mi_v3_option_s {
  _Atomic(long) value;
  _Atomic(int)  is_set;
  bool          is_kib;
} mi_v3_option_t;

static mi_v3_option_t mi_v3_only[11] = {
  { 0, 0, false },       /* 35 page_reclaim_on_free */
  { 2, 0, false },       /* 36 page_full_retain */
  { 4, 0, false },       /* 37 page_max_candidates */
  { 0, 0, false },       /* 38 max_vabits (0: as the system says) */
  { 0, 0, false },       /* 39 pagemap_commit */
  { 0, 0, false },       /* 40 page_commit_on_demand */
  { -1, 0, false },      /* 41 page_max_reclaim (-1: unlimited) */
  { 16, 0, false },      /* 42 page_cross_thread_max_reclaim */
  { 0, 0, true },        /* 44 minimal_purge_size (KiB; 0: v3 chooses) */
  { (MI_INTPTR_SIZE >= 8 ? 2L*1024*1024 : 128L*1024), 0, true },   /* 45 arena_max_object_size (KiB) */
  { 0, 0, false },       /* 46 arena_is_numa_local */
};

/* true: v3's number `option` is our option *ours; false: it is v3's own *only, or no option
   (*only NULL). The parameters are mi_option_t as in the header: v3's enum there, ours here,
   both of the same integer type. */
static bool mi_v3_option_of(mi_option_t v3, mi_option_t* ours, mi_v3_option_t** only) {
  const int option = (int)v3;
  *only = NULL;
  if (option >= MI_OPTION_EXT_FIRST) { *ours = (mi_option_t)option; return true; }
  if (option < 0 || option >= MI_V3_OPTION_LAST) return false;
  const int n = mi_v3_options[option];
  if (n >= 0) { *ours = (mi_option_t)n; return true; }
  *only = &mi_v3_only[-n - 1];
  return false;
}

mi_decl_export long mi_v3_option_get(mi_option_t option) {
  mi_option_t ours; mi_v3_option_t* only;
  if (mi_v3_option_of(option, &ours, &only)) return mi_option_get(ours);
  return (only != NULL ? mi_atomic_load_relaxed(&only->value) : 0);
}

mi_decl_export void mi_v3_option_set(mi_option_t option, long value) {
  mi_option_t ours; mi_v3_option_t* only;
  if (mi_v3_option_of(option, &ours, &only)) { mi_option_set(ours, value); return; }
  if (only == NULL) return;
  mi_atomic_store_relaxed(&only->value, value);
  mi_atomic_store_release(&only->is_set, 1);
}

mi_decl_export void mi_v3_option_set_default(mi_option_t option, long value) {
  mi_option_t ours; mi_v3_option_t* only;
  if (mi_v3_option_of(option, &ours, &only)) { mi_option_set_default(ours, value); return; }
  if (only != NULL && mi_atomic_load_acquire(&only->is_set) == 0) mi_atomic_store_relaxed(&only->value, value);
}

mi_decl_export long mi_v3_option_get_clamp(mi_option_t option, long min, long max) {
  const long x = mi_v3_option_get(option);
  return (x < min ? min : (x > max ? max : x));
}

/* As mi_option_get_size: negative is 0, a KiB option in bytes (saturated) */
mi_decl_export size_t mi_v3_option_get_size(mi_option_t option) {
  mi_option_t ours; mi_v3_option_t* only;
  if (mi_v3_option_of(option, &ours, &only)) return mi_option_get_size(ours);
  if (only == NULL) return 0;
  const long x = mi_atomic_load_relaxed(&only->value);
  if (x < 0) return 0;
  if (!only->is_kib) return (size_t)x;
  return ((size_t)x > MI_MAX_ALLOC_SIZE / MI_KiB ? MI_MAX_ALLOC_SIZE : (size_t)x * MI_KiB);
}

mi_decl_export bool mi_v3_option_is_enabled(mi_option_t option)                   { return (mi_v3_option_get(option) != 0); }
mi_decl_export void mi_v3_option_set_enabled(mi_option_t option, bool enable)     { mi_v3_option_set(option, enable ? 1 : 0); }
mi_decl_export void mi_v3_option_set_enabled_default(mi_option_t option, bool enable) { mi_v3_option_set_default(option, enable ? 1 : 0); }
mi_decl_export void mi_v3_option_enable(mi_option_t option)                       { mi_v3_option_set(option, 1); }
mi_decl_export void mi_v3_option_disable(mi_option_t option)                      { mi_v3_option_set(option, 0); }
