/* SPDX-License-Identifier: MIT */
/* limit.c: the soft memory limit (MIMALLOC_MEMORY_LIMIT, by default the process's cgroup limit)
   and the hard one (MIMALLOC_MEMORY_LIMIT_HARD); docs/memory.md, "The memory limit". Layer 1: it
   reads options and, through prim, the cgroup files; it acts on nothing but a flag and a refusal
   (the purger, purger.c, does the work near the limit; os.c asks before it commits). */
#pragma once
#include "types.h"
#include "base.h"   /* _mi_stats_main */

#define MI_LIMIT_REREAD_MS   (1000)   /* the cgroup's files are read at most once a second */
#define MI_LIMIT_NEAR_PCT    (80)     /* "near the limit": our committed memory past this share */
#define MI_LIMIT_LEAVE_PCT   (70)     /* ... and no longer near once below this one */

/* The soft limit in force, in bytes (0: none); reads the cgroup again when the last read is
   MI_LIMIT_REREAD_MS old (a few open/read/close, never an allocation). Not for fast paths. */
size_t     _mi_limit_get(void);
/* The hard limit (MIMALLOC_MEMORY_LIMIT_HARD) in bytes (0: none); computed like the soft one;
   "on" (1) is the soft limit. Enforced by _mi_limit_commit_allowed. */
size_t     _mi_limit_hard_get(void);
/* Our committed memory (the statistics' `committed`, all threads): what the limit is held to. */
size_t     _mi_limit_committed(void);
/* Is our committed memory past MI_LIMIT_NEAR_PCT of the soft limit (or of the hard one when it
   is lower), or, while pressing, still past MI_LIMIT_LEAVE_PCT? False without a limit; sets
   `in_force` to whether either limit is. Computes the limits again (the commit watch's too). */
bool       _mi_limit_near(bool* in_force);
/* Near the limit (as the purger's last check found): the purge delays of slots and arena
   blocks are 0 (segment.c, arena-purge.c), so what is freed is given back at once, not at its
   deadline. Set and cleared by the purger's thread only; one relaxed load for the readers. */
extern _Atomic(size_t) _mi_limit_pressing;
static inline bool _mi_limit_is_pressing(void) { return (mi_atomic_load_relaxed(&_mi_limit_pressing) != 0); }
void       _mi_limit_pressing_set(bool on);
/* The hard limit's watch: os.c asks before it commits `size` bytes of OS memory (a commit, or a
   mapping made committed; not the allocator's own metadata, which the limit does not hold). One
   relaxed load and a compare while our committed memory stays below `_mi_limit_watch_at` (the
   hard limit, SIZE_MAX without one; 0 until the first commit computes it, and the purger's check
   and mi_memory_limit_set compute it again). Past it, the slow path reads the options again and
   refuses a commit that would take our committed memory past the hard limit: false, counted, and
   the caller's allocation fails; _mi_malloc_generic then collects everything it can (purges
   included) and tries once more before it returns NULL with ENOMEM. The soft limit, or 80% of
   the hard one, has the purger give memory back before that (_mi_limit_near). */
extern _Atomic(size_t) _mi_limit_watch_at;
bool       _mi_limit_commit_slow(size_t size);
static inline bool _mi_limit_commit_allowed(size_t size) {
  const int64_t committed = __atomic_load_n(&_mi_stats_main.committed.current, __ATOMIC_RELAXED);
  if (mi_likely(committed < 0 || (size_t)committed + size <= mi_atomic_load_relaxed(&_mi_limit_watch_at))) return true;
  return _mi_limit_commit_slow(size);
}
/* Is a hard limit in force (as the watch last computed it; 0, not yet computed, counts as one)? */
static inline bool _mi_limit_hard_in_force(void) {
  return (mi_atomic_load_relaxed(&_mi_limit_watch_at) != SIZE_MAX);
}
/* Commits the hard limit refused (statistics). */
size_t     _mi_limit_refused_count(void);
/* The purger had to give memory back at once because of the limit: counted (statistics). */
void       _mi_limit_pressure_note(void);
size_t     _mi_limit_pressure_count(void);
/* "300 MiB (90% of cgroup v2 memory.high 333 MiB)", "none (no cgroup limit found)", ...:
   the limit in force and where it comes from, for the start-up line and the statistics. */
void       _mi_limit_describe(char* buf, size_t size);
