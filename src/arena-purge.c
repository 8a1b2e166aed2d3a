/* SPDX-License-Identifier: MIT */
/* The purge of free arena blocks (the arenas themselves: arena.c; their descriptor and its
   bitmaps: mi_arena_t in internal/arena.h).

   Purging: a freed block is purged once it has been free for purge_delay * arena_purge_mult
   ms, or only purge_delay ms while more than a budget of MI_ARENA_UNPURGED_MAX bytes (adaptive:
   mi_arenas_unpurged_max) wait (purge_delay 0:
   at once, -1: never). Every block has its own deadline (purge_due), so a pass purges only the
   blocks that are due, never one freed a moment ago (which is the one most likely to be reused
   right away); the arena's purge_expire is the earliest deadline.

   Release: an arena reserved on demand whose blocks are all free is unmapped by the purge pass
   that finds it so (after the arena purge delay; never with purge_delay < 0), except the
   lowest-numbered such arena, which stays for the next allocations. Its slot keeps the
   descriptor with every block claimed, so nothing allocates there, and is mapped again before
   a new arena is reserved (arena.c, mi_arena_try_revive). So the address space follows the
   memory in use: at most one empty
   reservation beyond it. Due purges run from ordinary allocator activity (arena allocation and
   free, the allocation slow path), from the purger thread (purger.c), which every scheduled
   deadline is told of (mi_arenas_purge_scheduled, also for the deadlines a pass leaves), and
   from mi_collect, which waits for a pass in progress and then does the due work itself
   (_mi_arenas_purge_collect; the others never wait). Both entry points are thread-safe and need no
   thread state. */
#include "internal/arena.h"
#include "internal/observe.h"   /* _mi_observe_check (debug builds) */
#include "internal/segment.h"   /* hook: _mi_purger_notify */
#include "internal/bitmap.h"
#include "internal/limit.h"   /* _mi_limit_is_pressing */
#include "prim/prim.h"

_Atomic(size_t)             _mi_arenas_purge_pending;   /* some arena may have a purge scheduled */
static _Atomic(size_t)      mi_arenas_unpurged;         /* blocks with their purge bit set */
static _Atomic(size_t)      mi_arenas_backoff;          /* the budget is MI_ARENA_UNPURGED_MAX << this */
static _Atomic(mi_msecs_t)  mi_arenas_backoff_time;     /* last change of the backoff */

static mi_msecs_t mi_arena_purge_delay(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  if (delay < 0) return -1;
  if (mi_unlikely(_mi_limit_is_pressing())) return 0;   /* near the memory limit: at once (limit.h) */
  return (mi_msecs_t)delay * (mi_msecs_t)mi_option_get_clamp(mi_option_arena_purge_mult, 0, 1000000);
}

/* MIMALLOC_VERBOSE at process start: which purge policy is active */
void _mi_arenas_purge_show_policy(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  if (delay < 0) {
    _mi_verbose_message("purging is off (purge_delay=-1): unused memory stays resident until it is reused or unmapped\n");
  }
  else {
    const bool decommit = mi_option_is_enabled(mi_option_purge_decommits);
    _mi_verbose_message("purge policy: unused pages are %s (%s) after %ld ms, free arena blocks after %lld ms\n",
                        (decommit ? "decommitted" : "reset"), _mi_prim_purge_method(decommit), delay,
                        (long long)mi_arena_purge_delay());
  }
}

/* ------------------------------------------------------------------------------------------
   Scheduling
------------------------------------------------------------------------------------------ */
/* The budget of unpurged free blocks adapts like the slot purge delay (segment.c): blocks taken
   again soon after their purge (freed and reused more slowly than purge_delay, e.g. big blocks
   that come and go) double it, up to 32 times; each second without such a reuse halves it.
   Beyond MI_ARENA_UNPURGED_MAX it never exceeds the memory in use: a program that keeps
   churning keeps at most as much free memory at hand as it uses, and does not grow. */
static size_t mi_arenas_unpurged_max(void) {
  const size_t budget = MI_ARENA_UNPURGED_MAX << mi_atomic_load_relaxed(&mi_arenas_backoff);
  const size_t inuse = mi_atomic_load_relaxed(&_mi_arenas_inuse) * MI_ARENA_BLOCK_SIZE;
  const size_t cap = (inuse > MI_ARENA_UNPURGED_MAX ? inuse : MI_ARENA_UNPURGED_MAX);
  return (budget < cap ? budget : cap);
}

static void mi_arenas_backoff_step(bool up, mi_msecs_t now) {
  size_t b = mi_atomic_load_relaxed(&mi_arenas_backoff);
  if (up ? b < 5 : b > 0) {
    if (mi_atomic_cas_strong_acq_rel(&mi_arenas_backoff, &b, up ? b + 1 : b - 1)) {
      mi_atomic_store_relaxed(&mi_arenas_backoff_time, now);
    }
  }
  else if (up) mi_atomic_store_relaxed(&mi_arenas_backoff_time, now);
}

/* Claimed blocks [idx, idx+count): those purged less than 4 short delays ago were purged in vain. */
static void mi_arenas_note_reuse(mi_arena_t* arena, size_t idx, size_t count) {
  const long delay = mi_option_get(mi_option_purge_delay);
  if (delay <= 0) return;
  mi_msecs_t now = 0;
  for (size_t i = idx; i < idx + count; i++) {
    if (_mi_bitmap_is_all_set(arena->blocks_purge, i, 1)) continue;   /* not purged: a deadline */
    const mi_msecs_t purged = mi_atomic_load_relaxed(&arena->purge_due[i]);
    if (purged == 0) continue;
    mi_atomic_store_relaxed(&arena->purge_due[i], 0);
    if (now == 0) now = _mi_prim_clock_now();
    if (now - purged < 4 * (mi_msecs_t)delay) { mi_arenas_backoff_step(true, now); return; }
  }
}

void _mi_arena_purge_unschedule(mi_arena_t* arena, size_t idx, size_t count) {
  mi_arenas_note_reuse(arena, idx, count);
  const size_t unscheduled = _mi_bitmap_clear_count(arena->blocks_purge, idx, count);   /* reused before its purge */
  if (unscheduled > 0) mi_atomic_sub_relaxed(&mi_arenas_unpurged, unscheduled);
}

/* Lower the arena's purge_expire to `due` (0 counts as "none"). */
static void mi_arena_expire_at_most(mi_arena_t* arena, mi_msecs_t due) {
  mi_msecs_t expire = mi_atomic_load_relaxed(&arena->purge_expire);
  while ((expire == 0 || expire > due) && !mi_atomic_cas_weak_acq_rel(&arena->purge_expire, &expire, due)) { }
}

/* A purge is scheduled, due at `due`: the passes look again (_mi_arenas_purge_try), and the
   purger thread wakes by then (purger.c). After the deadlines and bits are written. */
static void mi_arenas_purge_scheduled(mi_msecs_t due) {
  mi_atomic_store_release(&_mi_arenas_purge_pending, 1);
  _mi_purger_notify(due);
}

void _mi_arena_purge_schedule(mi_arena_t* arena, size_t idx, size_t count) {
  const mi_msecs_t delay = mi_arena_purge_delay();
  if (arena->is_pinned || delay < 0) return;
  if (delay == 0) {
    if (_mi_arena_mem_decommit(arena, _mi_arena_start(arena) + idx * MI_ARENA_BLOCK_SIZE, count * MI_ARENA_BLOCK_SIZE, true)) {
      _mi_bitmap_clear(arena->blocks_committed, idx, count);
      if (arena->purge_zeroes) _mi_bitmap_clear(arena->blocks_dirty, idx, count);
    }
    return;
  }
  const size_t unpurged = mi_atomic_add_relaxed(&mi_arenas_unpurged, count) + count;
  /* over the budget: due after the short delay */
  const mi_msecs_t due = _mi_prim_clock_now() + (unpurged * MI_ARENA_BLOCK_SIZE > mi_arenas_unpurged_max()
                                                 ? (mi_msecs_t)mi_option_get_clamp(mi_option_purge_delay, 0, 1000000) : delay);
  for (size_t i = idx; i < idx + count; i++) mi_atomic_store_relaxed(&arena->purge_due[i], due);
  _mi_bitmap_set(arena->blocks_purge, idx, count, NULL);   /* (release: the deadlines first) */
  mi_arena_expire_at_most(arena, due);
  mi_arenas_purge_scheduled(due);
}

void _mi_arena_purge_schedule_release(mi_arena_t* arena) {
  if (mi_arena_purge_delay() < 0) return;
  /* empty: the purge pass releases it when it is still empty after the delay */
  const mi_msecs_t due = _mi_prim_clock_now() + mi_arena_purge_delay();
  mi_arena_expire_at_most(arena, due);
  mi_arenas_purge_scheduled(due);
}

/* ------------------------------------------------------------------------------------------
   Purge passes
------------------------------------------------------------------------------------------ */
/* Is block i scheduled and due (or any scheduled one when forced)? */
static bool mi_arena_block_is_due(mi_arena_t* arena, size_t i, mi_msecs_t now, bool force) {
  if (!_mi_bitmap_is_all_set(arena->blocks_purge, i, 1)) return false;
  return (force || mi_atomic_load_relaxed(&arena->purge_due[i]) <= now);
}

/* Purge the blocks of [idx, idx+count) that are still scheduled and due, in runs; the caller
   has claimed their inuse bits, so their purge bits and deadlines are stable (a block of the
   caller's snapshot may have been reused, freed again or purged meanwhile: re-read here). */
static size_t mi_arena_purge_claimed(mi_arena_t* arena, size_t idx, size_t count, mi_msecs_t now, bool force) {
  size_t purged = 0;
  size_t i = idx;
  while (i < idx + count) {
    if (!mi_arena_block_is_due(arena, i, now, force)) { i++; continue; }
    size_t len = 1;
    while (i + len < idx + count && mi_arena_block_is_due(arena, i + len, now, force)) len++;
    const bool ok = _mi_arena_mem_decommit(arena, _mi_arena_start(arena) + i * MI_ARENA_BLOCK_SIZE, len * MI_ARENA_BLOCK_SIZE, true);
    if (ok) {
      _mi_bitmap_clear(arena->blocks_committed, i, len);
      if (arena->purge_zeroes) _mi_bitmap_clear(arena->blocks_dirty, i, len);
    }
    for (size_t k = i; k < i + len; k++) mi_atomic_store_relaxed(&arena->purge_due[k], ok ? now : 0);
    const size_t done = _mi_bitmap_clear_count(arena->blocks_purge, i, len);
    if (done > 0) mi_atomic_sub_relaxed(&mi_arenas_unpurged, done);
    purged += done;
    i += len;
  }
  return purged;
}

/* Purge the blocks of [idx, idx+count) that are free (claimed for the purge) and scheduled and
   due; those in use are left alone. Returns the number purged. */
static size_t mi_arena_purge_free(mi_arena_t* arena, size_t idx, size_t count, mi_msecs_t now, bool force) {
  size_t purged = 0;
  if (_mi_bitmap_try_claim(arena->blocks_inuse, idx, count)) {
    purged = mi_arena_purge_claimed(arena, idx, count, now, force);
    mi_sched_point(MI_SCHED_ARENA_PURGE);   /* purged, still claimed: others must look elsewhere */
    _mi_bitmap_clear(arena->blocks_inuse, idx, count);
    return purged;
  }
  /* partly in use (reused meanwhile): block by block what is still free */
  for (size_t i = idx; i < idx + count; i++) {
    if (!_mi_bitmap_try_claim(arena->blocks_inuse, i, 1)) continue;
    purged += mi_arena_purge_claimed(arena, i, 1, now, force);
    _mi_bitmap_clear(arena->blocks_inuse, i, 1);
  }
  return purged;
}

/* Purge the scheduled blocks that are due and not in use (a concurrent allocation clears the
   purge bits of the blocks it takes itself); returns the earliest deadline of the scheduled
   blocks left, or 0 if none; *purged: the number of blocks purged. */
static mi_msecs_t mi_arena_purge_due(mi_arena_t* arena, mi_msecs_t now, bool force, size_t* purged) {
  mi_msecs_t next = 0;
  *purged = 0;
  for (size_t f = 0; f < arena->field_count; f++) {
    size_t bits = mi_atomic_load_relaxed(&arena->blocks_purge[f]);
    /* the due ones of this field; the others give the next deadline */
    size_t due_bits = 0;
    for (size_t b = bits; b != 0; b &= b - 1) {
      const size_t bit = (size_t)__builtin_ctzll((unsigned long long)b);
      const mi_msecs_t due = mi_atomic_load_relaxed(&arena->purge_due[f * MI_BITMAP_FIELD_BITS + bit]);
      if (force || due <= now) due_bits |= (size_t)1 << bit;
      else if (next == 0 || due < next) next = due;
    }
    while (due_bits != 0) {
      const size_t start = (size_t)__builtin_ctzll((unsigned long long)due_bits);
      size_t len = 1;
      while (start + len < MI_BITMAP_FIELD_BITS && ((due_bits >> (start + len)) & 1) != 0) len++;
      *purged += mi_arena_purge_free(arena, f * MI_BITMAP_FIELD_BITS + start, len, now, force);
      const size_t run_mask = (len >= MI_BITMAP_FIELD_BITS ? ~(size_t)0 : (((size_t)1 << len) - 1) << start);
      due_bits &= ~run_mask;
    }
  }
  return next;
}

/* Unmap arena `idx` if it was reserved on demand, is entirely free and is not the lowest-
   numbered such arena still mapped (see Release at the top of this file). */
static void mi_arena_try_release(mi_arena_t* arena, size_t idx) {
  if (!arena->on_demand || mi_atomic_load_relaxed(&arena->blocks_used) != 0 || mi_arena_purge_delay() < 0) return;
  bool other = false;
  for (size_t j = 0; j < idx && !other; j++) {
    mi_arena_t* a = _mi_arena_at(j);
    other = (a != NULL && a->on_demand && mi_atomic_load_relaxed(&a->state) == MI_ARENA_MAPPED);
  }
  if (!other) return;
  int expected = MI_ARENA_MAPPED;
  if (!mi_atomic_cas_strong_acq_rel(&arena->state, &expected, MI_ARENA_BUSY)) return;
  const size_t n = arena->block_count;
  if (!_mi_bitmap_try_claim(arena->blocks_inuse, 0, n)) {   /* taken meanwhile */
    mi_atomic_store_release(&arena->state, MI_ARENA_MAPPED);
    return;
  }
  /* every block is ours: nothing allocates, frees or purges here any more */
  const size_t unpurged = _mi_bitmap_clear_count(arena->blocks_purge, 0, n);
  if (unpurged > 0) mi_atomic_sub_relaxed(&mi_arenas_unpurged, unpurged);
  const size_t committed = _mi_bitmap_clear_count(arena->blocks_committed, 0, n);
  _mi_bitmap_clear(arena->blocks_dirty, 0, n);
  for (size_t i = 0; i < n; i++) mi_atomic_store_relaxed(&arena->purge_due[i], 0);
  uint8_t* start = mi_atomic_exchange_acq_rel(&arena->start, NULL);
  _mi_os_free_ex(start, n * MI_ARENA_BLOCK_SIZE, committed * MI_ARENA_BLOCK_SIZE);
  _mi_verbose_message("released an empty arena of %zu MiB\n", n * MI_ARENA_BLOCK_SIZE / MI_MiB);
  mi_atomic_store_release(&arena->state, MI_ARENA_RELEASED);
}

/* One pass over the arena: its due purges (all with force). Passes of an arena take turns
   under its purge_lock, so while none holds it, purge_expire is at most the deadline of every
   block that waits (0: none); a pass takes the deadline (0) and leaves the earliest one it did
   not purge. The allocator's own passes and the purger's only try the lock: the holder does the
   work and tells the purger what it leaves. An explicit collect (`wait`) must not leave it so:
   the holder may be preempted in the middle (the purger on a loaded machine), with the due
   blocks it has not reached, and those it has claimed, waiting on it (issue 49: 120-190 MiB
   still resident after mi_collect(false)). So it waits for the lock, then purges what is due by
   then. Returns the earliest deadline left, as far as this pass knows (0: none). */
static mi_msecs_t mi_arena_try_purge(mi_arena_t* arena, size_t idx, mi_msecs_t now, bool force, bool wait) {
  if (!wait) {
    const mi_msecs_t expire = mi_atomic_load_acquire(&arena->purge_expire);
    if (expire == 0 || (!force && expire > now)) return expire;
    if (!mi_lock_try_acquire(&arena->purge_lock)) return expire;   /* the holder leaves it notified */
  }
  else if (!mi_lock_try_acquire(&arena->purge_lock)) {
    mi_lock_acquire(&arena->purge_lock);
    now = _mi_prim_clock_now();   /* (what became due while it waited is due too) */
  }
  /* under the lock only frees (and the validators) write the deadline, and only lower it */
  const mi_msecs_t expire = mi_atomic_load_acquire(&arena->purge_expire);
  if (expire == 0 || (!force && expire > now)) {
    mi_lock_release(&arena->purge_lock);
    return expire;
  }
  mi_atomic_exchange_acq_rel(&arena->purge_expire, 0);   /* (acquire: the purge bits of the deadlines lowered meanwhile) */
  size_t purged;
  const mi_msecs_t next = mi_arena_purge_due(arena, now, force, &purged);
  if (purged > 0) mi_os_stat_counter_increase(arena_purges, 1);
  if (next != 0) mi_arena_expire_at_most(arena, next);
  else mi_arena_try_release(arena, idx);
  mi_lock_release(&arena->purge_lock);
  return next;
}

static void mi_arenas_purge(bool force, bool wait) {
  if (!force && !wait && mi_atomic_load_relaxed(&_mi_arenas_purge_pending) == 0) return;
  const size_t n = _mi_arena_slots();
  const mi_msecs_t now = _mi_prim_clock_now();
  mi_msecs_t next_due = 0;   /* the earliest deadline left (0: none) */
  if (now - mi_atomic_load_relaxed(&mi_arenas_backoff_time) >= 1000) mi_arenas_backoff_step(false, now);
  mi_atomic_store_relaxed(&_mi_arenas_purge_pending, 0);
  for (size_t i = 0; i < n; i++) {
    mi_arena_t* arena = _mi_arena_at(i);
    if (arena == NULL || arena->is_pinned) continue;
    const mi_msecs_t next = mi_arena_try_purge(arena, i, now, force, wait);
    if (next != 0 && (next_due == 0 || next < next_due)) next_due = next;
  }
  if (next_due != 0) mi_arenas_purge_scheduled(next_due);
  mi_assert_expensive(_mi_observe_check(MI_CHECK_ARENAS, NULL, NULL));
}

/* The allocator's own passes and the purger's: never wait */
void _mi_arenas_purge_try(bool force) {
  mi_arenas_purge(force, false);
}

/* mi_collect: the due purges (all with force) are done when this returns, whoever does them */
void _mi_arenas_purge_collect(bool force) {
  mi_arenas_purge(force, true);
}

/* Purge now what of arena blocks [idx, idx+count) of arena `arena_idx` is free and waits for its
   purge, whatever its deadline (a thread's end: its big frees, segment.c). Under the arena's purge
   lock, as a pass (so no fork separates the claim from its release); the blocks' deadlines may
   stay in purge_expire: a pass then finds nothing due there. */
void _mi_arena_purge_run_now(int arena_idx, size_t idx, size_t count) {
  if (arena_idx < 0 || count == 0 || mi_arena_purge_delay() < 0) return;
  mi_arena_t* arena = _mi_arena_at((size_t)arena_idx);
  if (arena == NULL || arena->is_pinned || idx >= arena->block_count || count > arena->block_count - idx) return;
  if (!mi_lock_try_acquire(&arena->purge_lock)) {
    /* a pass holds it; on Windows, ExitProcess may have ended the pass's thread in the middle
       (prim.h): then the blocks wait for their delay rather than this thread forever */
    if (!_mi_prim_thread_alive()) return;
    mi_lock_acquire(&arena->purge_lock);
  }
  /* (a released arena keeps all its blocks claimed: the claim fails there) */
  if (mi_arena_purge_free(arena, idx, count, _mi_prim_clock_now(), true) > 0) {
    mi_os_stat_counter_increase(arena_purges, 1);
  }
  mi_lock_release(&arena->purge_lock);
}

/* fork: no arena purge pass runs across it (a pass holds its arena's lock and claims blocks:
   the child has no thread to give them back). Each arena's lock is taken by the forking
   thread, which alone reads and writes purge_fork_held. */
void _mi_arenas_purge_fork_prepare(void) {
  const size_t n = _mi_arena_slots();
  for (size_t i = 0; i < n; i++) {
    mi_arena_t* arena = _mi_arena_at(i);
    if (arena == NULL) continue;
    mi_lock_acquire(&arena->purge_lock);
    if (arena->commit_fun != NULL) mi_lock_acquire(&arena->commit_lock);   /* (a call in progress ends first) */
    arena->purge_fork_held = true;
  }
}

void _mi_arenas_purge_fork_release(void) {
  const size_t n = _mi_arena_slots();
  for (size_t i = 0; i < n; i++) {
    mi_arena_t* arena = _mi_arena_at(i);
    if (arena == NULL || !arena->purge_fork_held) continue;   /* (added after the prepare) */
    arena->purge_fork_held = false;
    if (arena->commit_fun != NULL) mi_lock_release(&arena->commit_lock);
    mi_lock_release(&arena->purge_lock);
  }
}
