/* SPDX-License-Identifier: MIT */
/* Arenas: large reservations of OS memory (default 1 GiB, MIMALLOC_ARENA_RESERVE) from which
   segments get runs of whole blocks (MI_ARENA_BLOCK_SIZE = one segment). An arena is also made
   from memory the program hands us (mi_manage_os_memory), from an explicit reservation
   (mi_reserve_os_memory) or from 1 GiB huge OS pages (mi_reserve_huge_os_pages_*).

   Per arena four bitmaps with one bit per block, all changed with atomic operations, so arenas
   are never locked; mi_arena_t (internal/arena.h) states them and their invariants. This file
   makes arenas, hands out and takes back their blocks and commits them; the delayed purge of
   free blocks and the release of empty arenas reserved on demand are arena-purge.c's. */
#include "internal/arena.h"
#include "internal/observe.h"   /* _mi_observe_check (debug builds) */
#include "internal/bitmap.h"
#include "prim/prim.h"

static _Atomic(mi_arena_t*) mi_arenas[MI_MAX_ARENAS];
static _Atomic(size_t)      mi_arena_count;   /* slots taken (a slot may still be NULL briefly) */
_Atomic(size_t)             _mi_arenas_inuse;           /* blocks handed out (in use by segments) */

mi_arena_t* _mi_arena_at(size_t idx) {
  return (idx < MI_MAX_ARENAS ? mi_atomic_load_acquire(&mi_arenas[idx]) : NULL);
}

size_t _mi_arena_slots(void) {
  size_t n = mi_atomic_load_acquire(&mi_arena_count);
  return (n > MI_MAX_ARENAS ? MI_MAX_ARENAS : n);
}

static mi_arena_t* mi_arena_from_id(mi_arena_id_t id) {
  if (id <= 0 || id > MI_MAX_ARENAS) return NULL;
  return _mi_arena_at((size_t)id - 1);
}

bool _mi_arena_id_is_valid(mi_arena_id_t id) {
  return (mi_arena_from_id(id) != NULL);
}

/* May memory from arena `memid` serve a heap bound to `req_arena_id` (0: none)? Exclusive
   arenas serve only their own heaps; a bound heap uses only its arena. */
bool _mi_arena_memid_is_suitable(const mi_memid_t* memid, mi_arena_id_t req_arena_id) {
  if (req_arena_id == 0) return !memid->is_exclusive;
  return (memid->arena_idx >= 0 && memid->arena_idx + 1 == req_arena_id);
}

bool _mi_arena_memid_on_node(const mi_memid_t* memid, int numa_node) {
  if (numa_node < 0 || memid->arena_idx < 0) return true;
  const mi_arena_t* const arena = _mi_arena_at((size_t)memid->arena_idx);
  return (arena == NULL || arena->numa_node < 0 || arena->numa_node == numa_node);
}

/* ------------------------------------------------------------------------------------------
   Creating arenas
------------------------------------------------------------------------------------------ */
static bool mi_arena_add(mi_arena_t* arena, mi_arena_id_t* arena_id) {
  const size_t idx = mi_atomic_add_relaxed(&mi_arena_count, 1);
  if (idx >= MI_MAX_ARENAS) {
    mi_atomic_sub_relaxed(&mi_arena_count, 1);
    return false;
  }
  mi_atomic_store_release(&mi_arenas[idx], arena);
  mi_os_stat_counter_increase(arena_count, 1);
  if (arena_id != NULL) *arena_id = (mi_arena_id_t)(idx + 1);
  return true;
}

/* Arena descriptors come from the OS, except the first one that fits in MI_ARENA_STATIC_META
   bytes (a 1 GiB arena needs about 2.3 KiB), which is static data: the first allocation of a
   process, which reserves the first arena, makes one system call less. Like the OS memory of
   the others, it is zero when handed out. */
#define MI_ARENA_STATIC_META  (4*MI_KiB)
static mi_decl_cache_align uint8_t mi_arena_static_meta[MI_ARENA_STATIC_META];
static _Atomic(int) mi_arena_static_meta_taken;

static mi_arena_t* mi_arena_meta_alloc(size_t meta_size) {
  int expected = 0;   /* (no load first: a first read and then a write of a zero page fault twice) */
  if (meta_size <= MI_ARENA_STATIC_META && mi_atomic_cas_strong_acq_rel(&mi_arena_static_meta_taken, &expected, 1)) {
    return (mi_arena_t*)(void*)mi_arena_static_meta;
  }
  return (mi_arena_t*)_mi_os_alloc(meta_size, NULL);   /* zeroed */
}

static void mi_arena_meta_free(mi_arena_t* arena, size_t meta_size) {
  if ((void*)arena == (void*)mi_arena_static_meta) {
    memset(arena, 0, meta_size);
    mi_atomic_store_release(&mi_arena_static_meta_taken, 0);
  }
  else {
    _mi_os_free(arena, meta_size);
  }
}

/* Make an arena of [start, start+size); start is aligned up to a block and the size truncated
   to whole blocks. */
static bool mi_arena_manage(void* start, size_t size, bool accessible, bool is_pinned, bool is_zero,
                            int numa_node, bool exclusive, bool is_huge_pages, bool owned, bool on_demand,
                            mi_arena_commit_fun_t* commit_fun, void* commit_fun_arg, mi_arena_id_t* arena_id) {
  if (arena_id != NULL) *arena_id = 0;
  const uintptr_t astart = _mi_align_up((uintptr_t)start, MI_ARENA_BLOCK_SIZE);
  if (start == NULL || astart - (uintptr_t)start >= size) return false;
  const size_t block_count = (size - (astart - (uintptr_t)start)) / MI_ARENA_BLOCK_SIZE;
  if (block_count == 0) {
    _mi_warning_message("cannot use OS memory at %p of %zu bytes as an arena: at least one aligned block of %zu MiB is needed\n", start, size, MI_ARENA_BLOCK_SIZE / MI_MiB);
    return false;
  }
  if (!_mi_segment_map_can_hold((void*)astart, block_count * MI_ARENA_BLOCK_SIZE)) {
    _mi_warning_message("cannot use OS memory at %p as an arena: beyond the address range this allocator maps\n", start);
    return false;
  }
  if (_mi_arena_slots() >= MI_MAX_ARENAS) {
    _mi_warning_message("cannot add an arena: all %d arena slots are in use\n", MI_MAX_ARENAS);
    return false;
  }
  const size_t fields = _mi_divide_up(block_count, MI_BITMAP_FIELD_BITS);
  const size_t meta_size = sizeof(mi_arena_t) + (4*fields - 1) * sizeof(mi_bitmap_field_t)
                           + block_count * sizeof(mi_msecs_t);
  mi_arena_t* arena = mi_arena_meta_alloc(meta_size);   /* zeroed */
  if (arena == NULL) return false;
  mi_lock_init(&arena->purge_lock);
  mi_lock_init(&arena->commit_lock);
  mi_atomic_store_relaxed(&arena->start, (uint8_t*)astart);
  arena->block_count = block_count;
  arena->field_count = fields;
  arena->meta_size = meta_size;
  arena->numa_node = numa_node;
  arena->exclusive = exclusive;
  arena->is_pinned = is_pinned;
  arena->commit_syscall = !accessible || commit_fun != NULL;
  arena->commit_fun = commit_fun;
  arena->commit_fun_arg = commit_fun_arg;
  arena->is_huge_pages = is_huge_pages;
  arena->purge_zeroes = owned;
  arena->on_demand = on_demand && owned && !is_pinned && !exclusive;
  arena->blocks_committed = &arena->blocks_inuse[fields];
  arena->blocks_dirty = &arena->blocks_inuse[2*fields];
  arena->blocks_purge = &arena->blocks_inuse[3*fields];
  arena->purge_due = (_Atomic(mi_msecs_t)*)(void*)&arena->blocks_inuse[4*fields];
  /* the bits past the last block are taken forever */
  const size_t post = fields * MI_BITMAP_FIELD_BITS - block_count;
  if (post > 0) _mi_bitmap_set(arena->blocks_inuse, block_count, post, NULL);
  if (!is_zero) _mi_bitmap_set(arena->blocks_dirty, 0, block_count, NULL);
  /* committed from the start: pinned memory, and committed memory whose commits are the
     program's (without a commit function, accessible memory counts as committed when used) */
  const bool committed = is_pinned || (accessible && commit_fun != NULL);
  if (committed) {
    _mi_bitmap_set(arena->blocks_committed, 0, block_count, NULL);
    mi_os_stat_increase(committed, block_count * MI_ARENA_BLOCK_SIZE);
  }
  if (!mi_arena_add(arena, arena_id)) {
    if (committed) mi_os_stat_decrease(committed, block_count * MI_ARENA_BLOCK_SIZE);
    mi_lock_done(&arena->purge_lock);
    mi_lock_done(&arena->commit_lock);
    mi_arena_meta_free(arena, meta_size);
    _mi_warning_message("cannot add an arena: all %d arena slots are in use\n", MI_MAX_ARENAS);
    return false;
  }
  return true;
}

bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept {
  return _mi_arena_manage_memory(start, size, is_committed, is_large, is_zero, numa_node, exclusive, NULL, NULL, arena_id);
}

bool _mi_arena_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node,
                             bool exclusive, mi_arena_commit_fun_t* commit_fun, void* commit_fun_arg, mi_arena_id_t* arena_id) {
  if (arena_id != NULL) *arena_id = 0;
  mi_process_init();
  return mi_arena_manage(start, size, is_committed || is_pinned, is_pinned, is_zero, (numa_node < 0 ? -1 : numa_node),
                         exclusive, false, false, false, (is_pinned ? NULL : commit_fun), commit_fun_arg, arena_id);
}

bool mi_manage_os_memory(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node) mi_attr_noexcept {
  return mi_manage_os_memory_ex(start, size, is_committed, is_large, is_zero, numa_node, false, NULL);
}

/* Reserve fresh OS memory as an arena; commit makes it accessible up front (it is counted as
   committed block by block when used). */
static int mi_arena_reserve_os(size_t size, bool commit, bool allow_large, bool exclusive, bool on_demand, int numa_node, mi_arena_id_t* arena_id) {
  if (arena_id != NULL) *arena_id = 0;
  if (size == 0 || size > MI_MAX_ALLOC_SIZE) return ENOMEM;
  size = _mi_align_up(size, MI_ARENA_BLOCK_SIZE);
  bool is_large = false;
  void* p = _mi_os_reserve_aligned(size, MI_ARENA_BLOCK_SIZE, commit, allow_large, &is_large);
  if (p == NULL) return ENOMEM;
  if (!mi_arena_manage(p, size, commit || is_large, is_large, true, numa_node, exclusive, false, true, on_demand, NULL, NULL, arena_id)) {
    _mi_os_free_ex(p, size, 0);
    return ENOMEM;
  }
  _mi_verbose_message("reserved %zu MiB of OS memory as an arena%s%s\n", size / MI_MiB,
                      (is_large ? " (large OS pages)" : ""), (commit ? "" : " (committed on demand)"));
  return 0;
}

int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept {
  mi_process_init();
  const int err = mi_arena_reserve_os(size, commit, allow_large, exclusive, false, -1, arena_id);
  if (err != 0) _mi_warning_message("failed to reserve %zu KiB of OS memory as an arena\n", _mi_divide_up(size, MI_KiB));
  return err;
}

int mi_reserve_os_memory(size_t size, bool commit, bool allow_large) mi_attr_noexcept {
  return mi_reserve_os_memory_ex(size, commit, allow_large, false, NULL);
}

/* Map a released arena (arena-purge.c, "Release") of at least `size` bytes again, with the
   same properties (its NUMA node: numa_node's or none, if numa_node >= 0); false if there is
   none or the OS refuses. */
static bool mi_arena_try_revive(size_t size, bool commit, bool allow_large, int numa_node, mi_arena_id_t* arena_id) {
  const size_t n = _mi_arena_slots();
  for (size_t i = 0; i < n; i++) {
    mi_arena_t* arena = _mi_arena_at(i);
    if (arena == NULL || !arena->on_demand || arena->block_count * MI_ARENA_BLOCK_SIZE < size) continue;
    if (numa_node >= 0 && arena->numa_node >= 0 && arena->numa_node != numa_node) continue;
    int expected = MI_ARENA_RELEASED;
    if (!mi_atomic_cas_strong_acq_rel(&arena->state, &expected, MI_ARENA_BUSY)) continue;
    const size_t asize = arena->block_count * MI_ARENA_BLOCK_SIZE;
    bool is_large = false;
    void* p = _mi_os_reserve_aligned(asize, MI_ARENA_BLOCK_SIZE, commit, allow_large, &is_large);
    if (p == NULL || is_large || arena->commit_syscall == commit || !_mi_segment_map_can_hold(p, asize)) {
      if (p != NULL) _mi_os_free_ex(p, asize, 0);
      mi_atomic_store_release(&arena->state, MI_ARENA_RELEASED);
      return false;
    }
    mi_atomic_store_relaxed(&arena->start, (uint8_t*)p);
    mi_atomic_store_relaxed(&arena->purge_expire, 0);
    mi_atomic_store_release(&arena->state, MI_ARENA_MAPPED);
    _mi_bitmap_clear(arena->blocks_inuse, 0, arena->block_count);   /* (release) open for use */
    _mi_verbose_message("mapped a released arena of %zu MiB again\n", asize / MI_MiB);
    *arena_id = (mi_arena_id_t)(i + 1);
    return true;
  }
  return false;
}

/* An arena reserved on demand: arena_reserve bytes, doubling every 8 arenas (fewer, larger
   reservations for big heaps), of NUMA node numa_node (-1: the calling thread's; none on a
   machine of one node). False if reservations are off or too small for `size`. */
static bool mi_arena_reserve_on_demand(size_t size, bool allow_large, int numa_node, mi_arena_id_t* arena_id) {
  size_t reserve = mi_option_get_size(mi_option_arena_reserve);
  if (reserve == 0) return false;
  reserve = _mi_align_up(reserve, MI_ARENA_BLOCK_SIZE);
  const size_t count = _mi_arena_slots();
  if (count >= 8 && count <= 128) {
    const size_t shift = count / 8;
    if (reserve <= (MI_MAX_ALLOC_SIZE >> 4) >> shift) reserve <<= shift;
  }
  if (reserve < size) return false;
  const long eager = mi_option_get(mi_option_arena_eager_commit);
  const bool commit = (eager == 1 || (eager == 2 && _mi_os_has_overcommit()));
  if (_mi_os_numa_node_count() <= 1) numa_node = -1;
  else if (numa_node < 0) numa_node = _mi_os_numa_node();
  if (mi_arena_try_revive(size, commit, allow_large, numa_node, arena_id)) return true;
  return (mi_arena_reserve_os(reserve, commit, allow_large, false, true, numa_node, arena_id) == 0);
}

/* ------------------------------------------------------------------------------------------
   Huge (1 GiB) OS pages
------------------------------------------------------------------------------------------ */
int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept {
  if (arena_id != NULL) *arena_id = -1;
  if (pages == 0) return 0;
  mi_process_init();
  if (numa_node >= 0) numa_node = numa_node % (int)_mi_os_numa_node_count();
  if (pages > MI_MAX_ALLOC_SIZE / MI_GiB) pages = MI_MAX_ALLOC_SIZE / MI_GiB;
  const mi_msecs_t start_time = _mi_prim_clock_now();
  uint8_t* base = NULL;
  size_t obtained = 0;
  int err = 0;
  while (obtained < pages) {
    void* hint = (base == NULL ? NULL : base + obtained * MI_GiB);
    void* p = NULL;
    err = _mi_prim_alloc_huge_os_pages(hint, MI_GiB, numa_node, &p);
    if (err != 0 || p == NULL) break;
    if (base == NULL) {
      if (((uintptr_t)p % MI_ARENA_BLOCK_SIZE) != 0) { _mi_prim_free(p, MI_GiB); err = EINVAL; break; }
      base = (uint8_t*)p;
    }
    obtained++;
    if (timeout_msecs > 0 && obtained < pages) {
      const mi_msecs_t elapsed = _mi_prim_clock_now() - start_time;
      if (elapsed > (mi_msecs_t)timeout_msecs) {
        _mi_warning_message("huge page reservation timed out after %zu of %zu pages (%lld ms)\n", obtained, pages, (long long)elapsed);
        break;
      }
    }
  }
  if (obtained == 0) {
    _mi_warning_message("unable to reserve huge (1 GiB) OS pages on numa node %d (error %d): the OS has none available; continuing with ordinary pages\n", numa_node, err);
    return ENOMEM;
  }
  const size_t size = obtained * MI_GiB;
  mi_os_stat_increase(reserved, size);
  mi_os_stat_counter_increase(mmap_calls, obtained);
  mi_arena_id_t id = 0;
  if (!mi_arena_manage(base, size, true, true, true, numa_node, exclusive, true, true, false, NULL, NULL, &id)) {
    _mi_os_free_ex(base, size, 0);
    return ENOMEM;
  }
  if (arena_id != NULL) *arena_id = id;
  _mi_verbose_message("numa node %d: reserved %zu GiB huge pages (of the %zu GiB requested)\n", numa_node, obtained, pages);
  return 0;
}

int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs) mi_attr_noexcept {
  return mi_reserve_huge_os_pages_at_ex(pages, numa_node, timeout_msecs, false, NULL);
}

int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes, size_t timeout_msecs) mi_attr_noexcept {
  if (pages == 0) return 0;
  mi_process_init();
  size_t nodes = (numa_nodes == 0 ? _mi_os_numa_node_count() : numa_nodes);
  if (nodes == 0) nodes = 1;
  const size_t per_node = pages / nodes;
  const size_t extra = pages % nodes;
  const size_t node_timeout = (timeout_msecs == 0 ? 0 : timeout_msecs / nodes + 50);
  for (size_t node = 0; node < nodes && node < pages; node++) {
    const size_t n = per_node + (node < extra ? 1 : 0);
    if (n == 0) continue;
    const int err = mi_reserve_huge_os_pages_at(n, (int)node, node_timeout);
    if (err != 0) return err;
  }
  return 0;
}

int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved) mi_attr_noexcept {
  _mi_warning_message("mi_reserve_huge_os_pages is deprecated: use mi_reserve_huge_os_pages_interleave/_at instead\n");
  if (pages_reserved != NULL) *pages_reserved = 0;
  const size_t timeout = (max_secs <= 0 ? 0 : (size_t)(max_secs * 1000.0));
  const int err = mi_reserve_huge_os_pages_interleave(pages, 0, timeout);
  if (err == 0 && pages_reserved != NULL) *pages_reserved = pages;
  return err;
}

/* At process start (mi_process_init): say which purge policy is active (verbose, arena-purge.c),
   then make the reservations asked for by options. */
void _mi_arenas_init_reserve(void) {
  if (mi_option_is_enabled(mi_option_verbose)) {
    (void)_mi_os_numa_node_count();   /* its verbose line belongs to start-up; else on first need */
  }
  _mi_arenas_purge_show_policy();
  const long huge = mi_option_get_clamp(mi_option_reserve_huge_os_pages, 0, 128*1024);
  if (huge > 0) {
    const long at = mi_option_get(mi_option_reserve_huge_os_pages_at);
    if (at >= 0) mi_reserve_huge_os_pages_at((size_t)huge, (int)at, (size_t)huge * 500);
    else mi_reserve_huge_os_pages_interleave((size_t)huge, 0, (size_t)huge * 500);
  }
  const size_t os_memory = mi_option_get_size(mi_option_reserve_os_memory);
  if (os_memory > 0 && mi_arena_reserve_os(os_memory, true, true, false, false, -1, NULL) != 0) {
    _mi_warning_always("mimalloc_reserve_os_memory: could not reserve %zu MiB of OS memory; continuing without it\n",
                       _mi_divide_up(os_memory, MI_MiB));
  }
}

/* ------------------------------------------------------------------------------------------
   Allocation and free
------------------------------------------------------------------------------------------ */
/* Commit and purge of an arena's memory: through the program's function for an arena of
   mi_manage_memory (its decommit is the purge: we never discard the program's memory behind
   its back), else the OS's (os.c). The statistics count both alike. The function runs where
   the allocator may hold its locks (it must not allocate with this allocator), one call at a
   time per arena (commit_lock). */
static bool mi_arena_commit_fun_call(mi_arena_t* arena, bool commit, void* p, size_t size, bool* is_zero) {
  mi_lock_acquire(&arena->commit_lock);
  const bool ok = arena->commit_fun(commit, p, size, is_zero, arena->commit_fun_arg);
  mi_lock_release(&arena->commit_lock);
  return ok;
}

static bool mi_arena_mem_commit(mi_arena_t* arena, void* p, size_t size) {
  if (arena->commit_fun == NULL) return _mi_os_commit(p, size, arena->commit_syscall);
  bool is_zero = false;   /* (not used: the arena's dirty bits decide what reads as zero) */
  mi_os_stat_counter_increase(commit_calls, 1);
  if (!mi_arena_commit_fun_call(arena, true, p, size, &is_zero)) {
    _mi_warning_message("the program's commit function refused to commit %zu KiB at %p\n", size / MI_KiB, p);
    return false;
  }
  mi_os_stat_increase(committed, size);
  return true;
}

/* True if the memory was decommitted (it needs a commit before use), false if it stays
   committed (the OS only discarded it, or the program's function refused). */
bool _mi_arena_mem_decommit(mi_arena_t* arena, void* p, size_t size, bool purge) {
  /* (an arena whose commit is bookkeeping only, commit_syscall false, never protects: its next
     commit would not lift the protection) */
  if (arena->commit_fun == NULL) return (purge ? _mi_os_purge(p, size, arena->commit_syscall) : _mi_os_decommit(p, size, arena->commit_syscall));
  if (purge) {
    mi_os_stat_counter_increase(purge_calls, 1);
    mi_os_stat_counter_increase(purged, size);
  }
  if (!mi_arena_commit_fun_call(arena, false, p, size, NULL)) return false;
  mi_os_stat_decrease(committed, size);
  return true;
}

static mi_arena_t* mi_arena_of_memid(const mi_memid_t* memid) {
  mi_assert_internal(memid->commit_fun && memid->arena_idx >= 0);
  return _mi_arena_at((size_t)memid->arena_idx);   /* (never released: an arena with a commit
                                                      function is not on_demand) */
}

bool _mi_arena_commit(const mi_memid_t* memid, void* p, size_t size) {
  if (!memid->commit_fun) return _mi_os_commit(p, size, memid->commit_syscall);
  return mi_arena_mem_commit(mi_arena_of_memid(memid), p, size);
}

bool _mi_arena_purge(const mi_memid_t* memid, void* p, size_t size) {
  if (!memid->commit_fun) return _mi_os_purge(p, size, memid->commit_syscall);
  return _mi_arena_mem_decommit(mi_arena_of_memid(memid), p, size, true);
}

bool _mi_arena_decommit(const mi_memid_t* memid, void* p, size_t size) {
  if (!memid->commit_fun) return _mi_os_decommit(p, size, memid->commit_syscall);   /* (as above) */
  return _mi_arena_mem_decommit(mi_arena_of_memid(memid), p, size, false);
}

static bool mi_arena_commit_blocks(mi_arena_t* arena, size_t idx, size_t count) {
  for (size_t i = idx; i < idx + count; i++) {
    if (_mi_bitmap_is_all_set(arena->blocks_committed, i, 1)) continue;
    if (!mi_arena_mem_commit(arena, _mi_arena_start(arena) + i * MI_ARENA_BLOCK_SIZE, MI_ARENA_BLOCK_SIZE)) return false;
    _mi_bitmap_set(arena->blocks_committed, i, 1, NULL);
  }
  return true;
}

/* Blocks [idx, idx+count) whose inuse bits the caller just claimed: cancel their pending purge,
   commit them when asked (or when partly committed), describe them in memid. NULL (and the
   claim undone) when the commit fails. */
static void* mi_arena_take(mi_arena_t* arena, size_t arena_idx, size_t idx, size_t count, bool commit, mi_memid_t* memid) {
  mi_atomic_add_relaxed(&_mi_arenas_inuse, count);
  mi_atomic_add_relaxed(&arena->blocks_used, count);
  _mi_arena_purge_unschedule(arena, idx, count);
  bool was_dirty = false;
  _mi_bitmap_set(arena->blocks_dirty, idx, count, &was_dirty);
  const bool all_committed = _mi_bitmap_is_all_set(arena->blocks_committed, idx, count);
  const bool any_committed = all_committed || _mi_bitmap_is_any_set(arena->blocks_committed, idx, count);
  /* hand out either fully committed or fully uncommitted runs (a segment commits the rest) */
  if (!all_committed && (commit || any_committed)) {
    if (!mi_arena_commit_blocks(arena, idx, count)) {
      mi_os_stat_counter_increase(arena_rollback_count, 1);
      /* the blocks committed before the refusal are free again: purged in time like any
         free committed block (else they stay committed and counted until reused) */
      for (size_t i = idx; i < idx + count; i++) {
        if (_mi_bitmap_is_all_set(arena->blocks_committed, i, 1)) _mi_arena_purge_schedule(arena, i, 1);
      }
      _mi_bitmap_clear(arena->blocks_inuse, idx, count);
      mi_atomic_sub_relaxed(&_mi_arenas_inuse, count);
      mi_atomic_sub_relaxed(&arena->blocks_used, count);
      return NULL;
    }
  }
  memid->arena_idx = (int)arena_idx;
  memid->block_index = idx;
  memid->size = count * MI_ARENA_BLOCK_SIZE;
  memid->is_exclusive = arena->exclusive;
  memid->is_pinned = arena->is_pinned;
  memid->commit_syscall = arena->commit_syscall;
  memid->commit_fun = (arena->commit_fun != NULL);
  memid->initially_committed = (all_committed || commit || any_committed);
  memid->initially_zero = !was_dirty;
  memid->purge_zeroes = arena->purge_zeroes;
  return _mi_arena_start(arena) + idx * MI_ARENA_BLOCK_SIZE;
}

static void* mi_arena_try_alloc_in(mi_arena_t* arena, size_t arena_idx, size_t count, bool commit, mi_memid_t* memid) {
  /* first fit from the lowest address: blocks freed recently (resident, purge pending) are
     reused before fresh ones, which keeps the resident set compact; an arena has few fields
     (4 for 1 GiB), so the scan is short */
  size_t idx;
  if (!_mi_bitmap_try_find_claim(arena->blocks_inuse, arena->field_count, 0, count, &idx)) return NULL;
  return mi_arena_take(arena, arena_idx, idx, count, commit, memid);
}

bool _mi_arena_try_expand(mi_memid_t* memid, size_t newsize, bool* ext_zero) {
  if (memid->arena_idx < 0 || newsize > MI_ARENA_MAX_OBJ_SIZE) return false;
  mi_arena_t* arena = _mi_arena_at((size_t)memid->arena_idx);
  if (arena == NULL) return false;
  const size_t count = memid->size / MI_ARENA_BLOCK_SIZE;
  const size_t newcount = _mi_divide_up(newsize, MI_ARENA_BLOCK_SIZE);
  if (newcount <= count) return false;
  const size_t idx = memid->block_index + count;
  const size_t extra = newcount - count;
  if (idx + extra > arena->block_count) return false;
  if (!_mi_bitmap_try_claim(arena->blocks_inuse, idx, extra)) return false;
  mi_memid_t ext;
  memset(&ext, 0, sizeof(ext));
  if (mi_arena_take(arena, (size_t)memid->arena_idx, idx, extra, true, &ext) == NULL) return false;
  memid->size = newcount * MI_ARENA_BLOCK_SIZE;
  *ext_zero = ext.initially_zero;
  return true;
}

/* Try the arenas: only req_arena_id if given, else the shared ones, those of the NUMA node (or
   of none) first: numa_node's only if it is >= 0, else the calling thread's, then the others. */
static void* mi_arenas_try_alloc(size_t count, bool commit, mi_arena_id_t req_arena_id, int req_numa_node, mi_memid_t* memid) {
  if (req_arena_id != 0) {
    mi_arena_t* arena = mi_arena_from_id(req_arena_id);
    return (arena == NULL ? NULL : mi_arena_try_alloc_in(arena, (size_t)req_arena_id - 1, count, commit, memid));
  }
  const size_t n = _mi_arena_slots();
  if (n == 0) return NULL;
  const int numa_node = (req_numa_node >= 0 ? req_numa_node : (_mi_os_numa_node_count() > 1 ? _mi_os_numa_node() : -1));
  for (int pass = 0; pass < (req_numa_node >= 0 ? 1 : 2); pass++) {
    for (size_t i = 0; i < n; i++) {
      mi_arena_t* arena = _mi_arena_at(i);
      if (arena == NULL || arena->exclusive) continue;
      const bool local = (numa_node < 0 || arena->numa_node < 0 || arena->numa_node == numa_node);
      if (local != (pass == 0)) continue;
      void* p = mi_arena_try_alloc_in(arena, i, count, commit, memid);
      if (p != NULL) return p;
    }
  }
  return NULL;
}

void* _mi_arena_alloc_aligned(size_t size, size_t alignment, size_t align_offset, bool commit, mi_arena_id_t req_arena_id,
                              int numa_node, mi_memid_t* memid) {
  memset(memid, 0, sizeof(*memid));
  memid->arena_idx = -1;
  const bool allow_large = mi_option_is_enabled(mi_option_allow_large_os_pages);
  _mi_arenas_purge_try(false);
  if (size <= MI_ARENA_MAX_OBJ_SIZE && alignment <= MI_ARENA_BLOCK_SIZE && align_offset == 0 &&
      (req_arena_id != 0 || !mi_option_is_enabled(mi_option_disallow_arena_alloc))) {
    const size_t count = _mi_divide_up(size, MI_ARENA_BLOCK_SIZE);
    void* p = mi_arenas_try_alloc(count, commit, req_arena_id, numa_node, memid);
    if (p != NULL) {
      mi_assert_expensive(_mi_observe_check(MI_CHECK_ARENA_MEMID, p, memid));
      return p;
    }
    if (req_arena_id == 0 && !mi_option_is_enabled(mi_option_disallow_os_alloc)) {
      mi_arena_id_t id = 0;
      if (mi_arena_reserve_on_demand(size, allow_large, numa_node, &id)) {
        p = mi_arena_try_alloc_in(mi_arena_from_id(id), (size_t)id - 1, count, commit, memid);
        if (p != NULL) {
          mi_assert_expensive(_mi_observe_check(MI_CHECK_ARENA_MEMID, p, memid));
          return p;
        }
      }
    }
  }
  if (req_arena_id != 0 || numa_node >= 0 || mi_option_is_enabled(mi_option_disallow_os_alloc)) {
    return NULL;   /* the caller reports ENOMEM if its retries fail too (or asks again without the node) */
  }
  bool is_large = false;
  bool is_zero = false;
  void* p = _mi_os_alloc_aligned_at(size, alignment, align_offset, true, allow_large, &is_large, &is_zero);
  if (p == NULL) return NULL;
  memid->size = _mi_os_good_alloc_size(size);
  memid->is_pinned = is_large;
  memid->initially_committed = true;
  memid->initially_zero = is_zero;
  memid->purge_zeroes = true;
  return p;
}

void _mi_arena_free(void* p, size_t size, size_t committed_size, const mi_memid_t* memid) {
  if (p == NULL || size == 0) return;
  mi_assert_internal(committed_size == 0 || committed_size == memid->size);
  if (memid->arena_idx < 0) {
    _mi_os_free_ex(p, memid->size, committed_size);
    return;
  }
  mi_arena_t* arena = _mi_arena_at((size_t)memid->arena_idx);
  const size_t count = memid->size / MI_ARENA_BLOCK_SIZE;
  if (arena == NULL || memid->block_index + count > arena->block_count || (uint8_t*)p != _mi_arena_start(arena) + memid->block_index * MI_ARENA_BLOCK_SIZE) {
    _mi_error_message(EINVAL, "trying to free arena memory that is not from this arena (%p)\n", p);
    return;
  }
  mi_assert_expensive(_mi_observe_check(MI_CHECK_ARENA_MEMID, p, memid));
  if (arena->is_pinned) {
    /* always committed */
  }
  else if (committed_size == 0) {
    _mi_bitmap_clear(arena->blocks_committed, memid->block_index, count);
  }
  else {
    _mi_bitmap_set(arena->blocks_committed, memid->block_index, count, NULL);
    _mi_arena_purge_schedule(arena, memid->block_index, count);
  }
  if (!_mi_bitmap_clear(arena->blocks_inuse, memid->block_index, count)) {
    _mi_error_message(EFAULT, "arena blocks freed twice (%p, %zu bytes)\n", p, size);
  }
  else {
    mi_atomic_sub_relaxed(&_mi_arenas_inuse, count);
    if (mi_atomic_sub_relaxed(&arena->blocks_used, count) == count && arena->on_demand) {
      _mi_arena_purge_schedule_release(arena);
    }
  }
  _mi_arenas_purge_try(false);
}

/* ------------------------------------------------------------------------------------------
   Information
------------------------------------------------------------------------------------------ */
void* mi_arena_area(mi_arena_id_t arena_id, size_t* size) {
  if (size != NULL) *size = 0;
  mi_arena_t* arena = mi_arena_from_id(arena_id);
  if (arena == NULL) return NULL;
  if (size != NULL) *size = arena->block_count * MI_ARENA_BLOCK_SIZE;
  return _mi_arena_start(arena);
}

/* (mimalloc v3) p lies in the arena's area; an on-demand arena that is released holds nothing */
bool mi_arena_contains(mi_arena_id_t arena_id, const void* p) {
  mi_arena_t* arena = mi_arena_from_id(arena_id);
  if (arena == NULL || p == NULL) return false;
  const uint8_t* start = _mi_arena_start(arena);
  return (start != NULL && (const uint8_t*)p >= start && (const uint8_t*)p < start + arena->block_count * MI_ARENA_BLOCK_SIZE);
}

/* (mimalloc v3) memory given to mi_manage_os_memory(_ex) becomes an arena of the whole blocks
   inside it: its start is rounded up to a block boundary, and at least one block must fit */
size_t mi_arena_min_alignment(void) {
  return MI_ARENA_BLOCK_SIZE;
}

size_t mi_arena_min_size(void) {
  return MI_ARENA_BLOCK_SIZE;
}

static size_t mi_debug_show_bitmap(const char* header, mi_bitmap_field_t* bitmap, size_t block_count) {
  char line[MI_BITMAP_FIELD_BITS + 16];
  size_t set = 0;
  for (size_t start = 0; start < block_count; start += MI_BITMAP_FIELD_BITS) {
    size_t k = 0;
    for (size_t i = start; i < block_count && i < start + MI_BITMAP_FIELD_BITS; i++) {
      const bool on = _mi_bitmap_is_all_set(bitmap, i, 1);
      if (on) set++;
      line[k++] = (on ? 'x' : '.');
    }
    line[k] = 0;
    _mi_message("  %-10s %s\n", (start == 0 ? header : ""), line);
  }
  return set;
}

void mi_debug_show_arenas(void) mi_attr_noexcept {
  const size_t n = _mi_arena_slots();
  size_t inuse_total = 0;
  size_t shown = 0;
  for (size_t i = 0; i < n; i++) {
    mi_arena_t* arena = _mi_arena_at(i);
    if (arena == NULL) continue;
    shown++;
    if (mi_atomic_load_relaxed(&arena->state) == MI_ARENA_RELEASED) {
      _mi_message("arena %zu: %zu blocks of %zu MiB, released (unmapped while empty)\n", i + 1, arena->block_count, MI_ARENA_BLOCK_SIZE / MI_MiB);
      continue;
    }
    _mi_message("arena %zu: %zu blocks of %zu MiB at %p%s%s%s%s, numa node %d\n", i + 1, arena->block_count,
                MI_ARENA_BLOCK_SIZE / MI_MiB, (void*)_mi_arena_start(arena),
                (arena->is_pinned ? ", pinned" : ""), (arena->is_huge_pages ? " (1 GiB pages)" : ""),
                (arena->exclusive ? ", exclusive" : ""), (arena->commit_fun != NULL ? ", the program's commit" : ""),
                arena->numa_node);
    inuse_total += mi_debug_show_bitmap("inuse:", arena->blocks_inuse, arena->block_count);
    mi_debug_show_bitmap("committed:", arena->blocks_committed, arena->block_count);
    mi_debug_show_bitmap("purge:", arena->blocks_purge, arena->block_count);
  }
  if (shown == 0) _mi_message("arenas: none\n");
  else _mi_message("total inuse blocks    : %zu\n", inuse_total);
}

#if MI_DEBUG > 0
/* For the validators (validate.c, checked builds only): arena `idx`'s descriptor as a view;
   false if the slot is empty or out of range. */
bool _mi_arena_view(size_t idx, mi_arena_view_t* view) {
  mi_arena_t* arena = _mi_arena_at(idx);
  if (arena == NULL) return false;
  view->start = _mi_arena_start(arena);
  view->block_count = arena->block_count;
  view->field_count = arena->field_count;
  view->is_pinned = arena->is_pinned;
  view->exclusive = arena->exclusive;
  view->commit_syscall = arena->commit_syscall;
  view->commit_fun = (arena->commit_fun != NULL);
  view->state = mi_atomic_load_acquire(&arena->state);
  view->blocks_used = mi_atomic_load_relaxed(&arena->blocks_used);
  view->inuse = arena->blocks_inuse;
  view->committed = arena->blocks_committed;
  view->dirty = arena->blocks_dirty;
  view->purge = arena->blocks_purge;
  view->purge_due = arena->purge_due;
  view->purge_expire = &arena->purge_expire;
  return true;
}
#endif

void mi_arenas_print(void) mi_attr_noexcept {
  mi_debug_show_arenas();
}

/* Forced collect, which also runs every purge now (and waits for a pass in progress). */
void mi_collect_reduce(size_t target_thread_owned) mi_attr_noexcept {
  (void)target_thread_owned;
  mi_collect(true);
}
