/* SPDX-License-Identifier: MIT */
/* Memory from the OS: page-granular, optionally aligned, through the prim layer only. */
#include "internal/os.h"
#include "prim/prim.h"
#include "internal/limit.h"   /* the memory limit's watch on commits */

static mi_os_mem_config_t mi_os_mem_config = {
  4096,         /* page size */
  2*MI_MiB,     /* large page size */
  4096,         /* allocation granularity */
  true,         /* partial free */
  true,         /* decommit keeps access */
};

void _mi_os_init(void) {
  _mi_prim_mem_init(&mi_os_mem_config);
}

/* Detected on first use (the first arena reservation), not at start-up: 0 unknown, 1 no, 2 yes. */
static _Atomic(int) mi_os_overcommit;

bool _mi_os_has_overcommit(void) {
  int state = mi_atomic_load_relaxed(&mi_os_overcommit);
  if (mi_unlikely(state == 0)) {
    state = (_mi_prim_has_overcommit() ? 2 : 1);
    mi_atomic_store_relaxed(&mi_os_overcommit, state);
  }
  return (state == 2);
}

size_t _mi_os_large_page_size(void) {
  return mi_os_mem_config.large_page_size;
}

size_t _mi_os_page_size(void) {
  return mi_os_mem_config.page_size;
}

size_t _mi_os_good_alloc_size(size_t size) {
  size_t align = mi_os_mem_config.page_size;
  if (size >= SIZE_MAX - align) return size;
  return _mi_align_up(size, align);
}

/* Memory for the allocator's own permanent tables (parts of the segment map), committed and
   zero: never freed, and like static data not counted in the statistics. NULL on failure. */
void* _mi_os_alloc_static(size_t size) {
  void* p = NULL;
  bool is_large = false;
  if (size == 0 || _mi_prim_alloc(NULL, _mi_os_good_alloc_size(size), true, false, &is_large, &p) != 0) return NULL;
  return p;
}

/* Memory for the allocator's own metadata (thread data, arena bitmaps): committed, zero. */
void* _mi_os_alloc(size_t size, bool* is_zero) {
  if (size == 0) return NULL;
  size = _mi_os_good_alloc_size(size);
  void* p = NULL;
  bool is_large = false;
  int err = _mi_prim_alloc(NULL, size, true, false, &is_large, &p);
  if (err != 0) {
    _mi_warning_message("unable to allocate OS memory (error %d (0x%x), size 0x%zx bytes)\n", err, err, size);
    return NULL;
  }
  if (is_zero != NULL) *is_zero = true;
  mi_os_stat_increase(reserved, size);
  mi_os_stat_increase(committed, size);
  mi_os_stat_counter_increase(mmap_calls, 1);
  _mi_trace_message("os: mapped %zu KiB at %p (metadata)\n", size / MI_KiB, p);
  return p;
}

void _mi_os_free_ex(void* p, size_t size, size_t committed_size) {
  if (p == NULL || size == 0) return;
  size = _mi_os_good_alloc_size(size);
  int err = _mi_prim_free(p, size);
  _mi_trace_message("os: unmapped %zu KiB at %p\n", size / MI_KiB, p);
  mi_os_stat_decrease(reserved, size);
  if (committed_size > 0) { mi_os_stat_decrease(committed, committed_size); _mi_limit_released(); }
  if (err != 0) {
    _mi_warning_message("unable to free OS memory (error %d (0x%x), address %p, size 0x%zx bytes)\n", err, err, p, size);
  }
}

void _mi_os_free(void* p, size_t size) {
  _mi_os_free_ex(p, size, _mi_os_good_alloc_size(size));
}

/* The whole OS pages inside [p, p+size), or false if there are none. */
static bool mi_os_page_range(void* p, size_t size, uint8_t** start, size_t* len) {
  uintptr_t s = _mi_align_up((uintptr_t)p, mi_os_mem_config.page_size);
  uintptr_t e = _mi_align_down((uintptr_t)p + size, mi_os_mem_config.page_size);
  if (e <= s) return false;
  *start = (uint8_t*)s;
  *len = e - s;
  return true;
}

bool _mi_os_commit(void* p, size_t size, bool syscall) {
  if (!_mi_limit_commit_count(size)) return false;   /* counted, unless the hard memory limit refuses (limit.h) */
  if (!syscall) return true;   /* already accessible: bookkeeping only */
  mi_os_stat_counter_increase(commit_calls, 1);
  uint8_t* start; size_t len;
  if (!mi_os_page_range(p, size, &start, &len)) return true;
  int err = _mi_prim_commit(start, len);
  _mi_trace_message("os: committed %zu KiB at %p\n", len / MI_KiB, (void*)start);
  if (err != 0) {
    mi_os_stat_decrease(committed, size);
    _mi_warning_message("unable to commit OS memory (error %d (0x%x), address %p, size 0x%zx bytes)\n", err, err, (void*)start, len);
    return false;
  }
  return true;
}

/* False if the OS refused: the range then stays committed, with its contents, and is counted
   so (the caller must not take it as zero or as needing a commit). */
bool _mi_os_decommit(void* p, size_t size, bool protect) {
  mi_os_stat_decrease(committed, size);
  _mi_limit_released();   /* (the pressing flag may end: limit.h) */
  uint8_t* start; size_t len;
  if (!mi_os_page_range(p, size, &start, &len)) return true;
  int err = _mi_prim_decommit(start, len, protect);
  _mi_trace_message("os: decommitted %zu KiB at %p\n", len / MI_KiB, (void*)start);
  if (err != 0) {
    mi_os_stat_increase(committed, size);
    _mi_warning_message("unable to decommit OS memory (error %d (0x%x), address %p, size 0x%zx bytes)\n", err, err, (void*)start, len);
    return false;
  }
  return true;
}

/* May the range be decommitted without being made inaccessible (else it is reset)? */
static bool mi_os_may_decommit_in_place(void) {
  return (mi_option_is_enabled(mi_option_purge_decommits) && mi_os_mem_config.decommit_keeps_access);
}

bool _mi_os_discard(void* p, size_t size) {
  uint8_t* start; size_t len;
  if (!mi_os_page_range(p, size, &start, &len)) return false;
  const bool decommits = mi_os_may_decommit_in_place();
  int err = (decommits ? _mi_prim_decommit(start, len, false) : _mi_prim_reset(start, len));
  _mi_trace_message("os: %s %zu KiB at %p\n", (decommits ? "decommitted" : "reset"), len / MI_KiB, (void*)start);
  mi_os_stat_counter_increase(reset, len);
  mi_os_stat_counter_increase(reset_calls, 1);
  if (err != 0) {
    _mi_warning_message("unable to reset OS memory (error %d (0x%x), address %p, size 0x%zx bytes)\n", err, err, (void*)start, len);
    return false;
  }
  return decommits;
}

/* Make [p, p+size) (whole OS pages) a guard, or normal memory again. Lightweight guard markers
   where the kernel has them (no VMA split, they survive purges and mprotect); else, only where
   `may_protect` (memory never committed with mprotect, which would lift it), PROT_NONE. False if
   neither works: the memory stays unguarded. */
static _Atomic(int) mi_os_guard_markers = 1;   /* 0 once the kernel refused them */
bool _mi_os_guard(void* p, size_t size, bool install, bool may_protect) {
  if (mi_atomic_load_relaxed(&mi_os_guard_markers) != 0) {
    const int err = _mi_prim_guard(p, size, install);
    if (err == 0) return true;
    if (err != EINVAL && err != ENOSYS) {
      _mi_warning_message("unable to %s a guard page (error %d, address %p)\n", install ? "install" : "remove", err, p);
      return false;
    }
    mi_atomic_store_relaxed(&mi_os_guard_markers, 0);
  }
  if (!may_protect) return false;
  return (_mi_prim_protect(p, size, install) == 0);
}

bool _mi_os_purge(void* p, size_t size, bool protect) {
  mi_os_stat_counter_increase(purge_calls, 1);
  mi_os_stat_counter_increase(purged, size);
  if (mi_option_is_enabled(mi_option_purge_decommits) && (protect || mi_os_mem_config.decommit_keeps_access)) {
    return _mi_os_decommit(p, size, protect);   /* refused: kept committed, as a discard would */
  }
  _mi_os_discard(p, size);
  return false;
}

#if MI_SECURE > 0
/* Secure builds put large reservations (arenas, huge blocks) at a random address in
   [1 TiB, 64 TiB): a hint to mmap, which the kernel takes when the range is free, so where the
   heap lies cannot be derived from the address of a library or of another mapping. */
static void* mi_os_random_hint(size_t size, size_t alignment) {
  if (size < MI_SEGMENT_SIZE || alignment > MI_GiB) return NULL;
  const uintptr_t lo = (uintptr_t)1 << 40;
  const uintptr_t span = ((uintptr_t)1 << 46) - lo - size;
  return (void*)_mi_align_down(lo + (uintptr_t)(_mi_random_next() % span), alignment);
}
#endif

/* Where a mapping can only be released whole (Windows): find a free range of size + alignment
   by reserving it, release it, and map `size` bytes at the aligned address inside it (the
   aligned address is a multiple of the allocation granularity: alignment and align_offset are
   multiples of MI_SEGMENT_SIZE when alignment exceeds the granularity). Another thread may
   take the range in between: then a few more tries. NULL if none worked. */
static void* mi_os_alloc_placed(size_t size, size_t alignment, size_t align_offset, bool commit, bool allow_large, bool* large) {
  void* p = NULL;
  if (_mi_prim_alloc(NULL, size, commit, allow_large, large, &p) != 0) return NULL;
  if (((uintptr_t)p + align_offset) % alignment == 0) return p;   /* (alignment <= granularity) */
  _mi_prim_free(p, size);
  *large = false;
  for (int tries = 0; tries < 8; tries++) {
    void* probe = NULL;
    bool probe_large = false;
    if (_mi_prim_alloc(NULL, size + alignment, false, false, &probe_large, &probe) != 0) return NULL;
    uintptr_t aligned = _mi_align_up((uintptr_t)probe + align_offset, alignment) - align_offset;
    if (aligned < (uintptr_t)probe) aligned += alignment;
    _mi_prim_free(probe, size + alignment);
    if (_mi_prim_alloc((void*)aligned, size, commit, allow_large, large, &p) != 0) return NULL;
    if ((uintptr_t)p == aligned) return p;
    _mi_prim_free(p, size);   /* placed elsewhere: the range was taken meanwhile */
    *large = false;
  }
  return NULL;
}

/* Over-allocate by `alignment` and unmap the unaligned head and the unused tail, so that
   (result + align_offset) % alignment == 0. align_offset must be a multiple of the page size.
   Committed memory counts as committed; a reservation (commit false) does not. */
static void* mi_os_alloc_aligned_ex(size_t size, size_t alignment, size_t align_offset, bool commit, bool count_commit, bool allow_large, bool* is_large, bool* is_zero) {
  mi_assert_internal(mi_is_power_of_two(alignment));
  mi_assert_internal(align_offset % mi_os_mem_config.page_size == 0);
  bool large = false;
  if (is_large != NULL) *is_large = false;
  allow_large = allow_large && mi_option_is_enabled(mi_option_allow_large_os_pages);   /* a permission, and the option */
  size = _mi_os_good_alloc_size(size);
  if (alignment < mi_os_mem_config.page_size) alignment = mi_os_mem_config.page_size;
  align_offset = align_offset % alignment;
  if (size >= SIZE_MAX - alignment) return NULL;
  const bool counted = (commit && count_commit);
  if (counted && !_mi_limit_commit_count(size)) return NULL;   /* counted now, unless refused (limit.h) */

  void* p = NULL;
  size_t over_size = size + alignment;
  /* large pages need a size and alignment in whole large pages; try an exact fit first */
  if (allow_large && commit && align_offset == 0 && alignment <= mi_os_mem_config.large_page_size &&
      size % mi_os_mem_config.large_page_size == 0) {
    if (_mi_prim_alloc(NULL, size, true, true, &large, &p) == 0) {
      if (((uintptr_t)p % alignment) == 0) over_size = size;
      else { _mi_prim_free(p, size); p = NULL; large = false; }
    }
  }
#if MI_SECURE > 0
  if (p == NULL && align_offset == 0) {
    void* hint = mi_os_random_hint(size, alignment);
    if (hint != NULL && _mi_prim_alloc(hint, size, commit, allow_large, &large, &p) == 0) {
      if (((uintptr_t)p % alignment) == 0) over_size = size;
      else { _mi_prim_free(p, size); p = NULL; large = false; }
    }
  }
#endif
  if (p == NULL && !mi_os_mem_config.has_partial_free) {
    p = mi_os_alloc_placed(size, alignment, align_offset, commit, allow_large, &large);
    if (p == NULL) {
      if (counted) mi_os_stat_decrease(committed, size);
      _mi_warning_message("unable to allocate aligned OS memory (size 0x%zx bytes, alignment 0x%zx)\n", size, alignment);
      return NULL;
    }
    over_size = size;
  }
  if (p == NULL && _mi_prim_alloc(NULL, over_size, commit, allow_large, &large, &p) != 0) {
    if (counted) mi_os_stat_decrease(committed, size);
    _mi_warning_message("unable to allocate aligned OS memory (size 0x%zx bytes, alignment 0x%zx)\n", size, alignment);
    return NULL;
  }
  uintptr_t start   = (uintptr_t)p;
  uintptr_t aligned = _mi_align_up(start + align_offset, alignment) - align_offset;
  if (aligned < start) aligned += alignment;
  size_t pre  = aligned - start;
  size_t post = over_size - pre - size;
  if (pre > 0)  _mi_prim_free(p, pre);
  if (post > 0) _mi_prim_free((void*)(aligned + size), post);
  if (is_zero != NULL) *is_zero = true;
  if (is_large != NULL) *is_large = large;
  mi_os_stat_increase(reserved, size);
  mi_os_stat_counter_increase(mmap_calls, 1);
  _mi_trace_message("os: mapped %zu KiB at %p (%s%s)\n", size / MI_KiB, (void*)aligned,
                    (commit ? "committed" : "reserved"), (large ? ", large OS pages" : ""));
  return (void*)aligned;
}

void* _mi_os_alloc_aligned_at(size_t size, size_t alignment, size_t align_offset, bool commit, bool allow_large, bool* is_large, bool* is_zero) {
  return mi_os_alloc_aligned_ex(size, alignment, align_offset, commit, commit, allow_large, is_large, is_zero);
}

void* _mi_os_reserve_aligned(size_t size, size_t alignment, bool accessible, bool allow_large, bool* is_large) {
  return mi_os_alloc_aligned_ex(size, alignment, 0, accessible, false, allow_large, is_large, NULL);
}

/* ------------------------------------------------------------------------------------------
   NUMA
------------------------------------------------------------------------------------------ */
static _Atomic(size_t) mi_numa_node_count;   /* 0: not yet detected */

size_t _mi_os_numa_node_count(void) {
  size_t count = mi_atomic_load_relaxed(&mi_numa_node_count);
  if (mi_unlikely(count == 0)) {
    long ncap = mi_option_get(mi_option_use_numa_nodes);
    count = _mi_prim_numa_node_count();
    if (count == 0) count = 1;
    if (ncap > 0 && (size_t)ncap < count) count = (size_t)ncap;
    mi_atomic_store_relaxed(&mi_numa_node_count, count);
    _mi_verbose_message("using %zu numa node%s\n", count, (count == 1 ? "" : "s"));
  }
  return count;
}

int _mi_os_numa_node(void) {
  const size_t count = _mi_os_numa_node_count();
  if (mi_likely(count <= 1)) return 0;
  return (int)(_mi_prim_numa_node() % count);
}
