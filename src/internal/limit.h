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
#define MI_LIMIT_HOLD_MS     (1000)   /* ... and, where no purger check clears it, this long after it was last found near */
#define MI_LIMIT_FIRST_LOOK  (8 * MI_MiB)   /* below this committed, the watch reads no cgroup file */

/* The soft limit in force, in bytes (0: none); reads the cgroup again when the last read is
   MI_LIMIT_REREAD_MS old (a few open/read/close, never an allocation). Not for fast paths. */
size_t     _mi_limit_get(void);
/* The hard limit (MIMALLOC_MEMORY_LIMIT_HARD) in bytes (0: none); computed like the soft one;
   "on" (1) is the soft limit. Enforced by _mi_limit_commit_count. */
size_t     _mi_limit_hard_get(void);
/* Our committed memory (the statistics' `committed`, all threads): what the limit is held to. */
size_t     _mi_limit_committed(void);
/* Is our committed memory past MI_LIMIT_NEAR_PCT of the soft limit (or of the hard one when it
   is lower), or, while pressing, still past MI_LIMIT_LEAVE_PCT? False without a limit; sets
   `in_force` to whether either limit is. Computes the limits again (the commit watch's too). */
bool       _mi_limit_near(bool* in_force);
/* Near the limit: the purge delays of slots and arena blocks are 0 (segment.c, arena-purge.c),
   so what is freed is given back at once, not at its deadline, and new segments commit only the
   slots they use. Set by the commit watch the moment a commit takes committed memory past the
   near mark, and by the purger's check (every 100 ms) while it finds it there; cleared by that
   check, or by a purge that takes committed memory below MI_LIMIT_LEAVE_PCT at least
   MI_LIMIT_HOLD_MS after it was last set (so a burst of frees purges to its end, and the flag
   ends also where no purger runs). One relaxed load for the readers. */
extern _Atomic(size_t) _mi_limit_pressing;
static inline bool _mi_limit_is_pressing(void) { return (mi_atomic_load_relaxed(&_mi_limit_pressing) != 0); }
void       _mi_limit_pressing_set(bool on);
/* The watch: os.c counts every commit of OS memory here (a commit, or a mapping made committed;
   not the allocator's own metadata, which the limit does not hold): the statistics' committed
   memory grows by `size` (one atomic add, as it did before), and while the result stays below
   `_mi_limit_watch_at` that is all (one more relaxed load and a compare). The watch is the least
   of the hard limit and, while not pressing, the near mark (MI_LIMIT_FIRST_LOOK until the soft
   limit was first computed; 0 before the first commit). Past it, the slow path takes the add
   back, reads the options again (the cgroup when due), and adds again only if that keeps our
   committed memory within the hard limit (a compare-and-swap: threads that commit at once never
   pass it together); past the near mark it sets the pressing flag. (Until the slow path takes
   it back, an add past the watch is in the counter: another thread's count may see it, so the
   statistics' peak can include, for an instant, up to one commit per thread that was then
   refused; the memory itself never passes the limit.) A refused commit is counted and false: the caller's allocation fails, and
   _mi_malloc_generic then collects everything it can (purges included) and tries once more
   before it returns NULL with ENOMEM. */
extern _Atomic(size_t) _mi_limit_watch_at;
bool       _mi_limit_commit_slow(size_t size);
static inline bool _mi_limit_commit_count(size_t size) {
  const int64_t committed = _mi_stat_atomic_add(&_mi_stats_main.committed, (int64_t)size);
  if (mi_unlikely(committed >= 0 && (size_t)committed >= mi_atomic_load_relaxed(&_mi_limit_watch_at))) {
    return _mi_limit_commit_slow(size);   /* (it takes this add back first) */
  }
  _mi_stat_atomic_counted(&_mi_stats_main.committed, size, committed);
  return true;
}
/* os.c after it gave memory back: while pressing, the flag may end (see above). */
void       _mi_limit_release_slow(void);
static inline void _mi_limit_released(void) {
  if (mi_unlikely(_mi_limit_is_pressing())) _mi_limit_release_slow();
}
/* Is a hard limit in force (as last computed)? */
extern _Atomic(size_t) _mi_limit_hard_at;
static inline bool _mi_limit_hard_in_force(void) {
  return (mi_atomic_load_relaxed(&_mi_limit_hard_at) != SIZE_MAX);
}
/* Commits the hard limit refused (statistics). */
size_t     _mi_limit_refused_count(void);
/* Work for the limit, counted (statistics): each time the watch starts pressing, and each pass
   of the purger that gave back at once what waited for its purge delay. */
void       _mi_limit_pressure_note(void);
size_t     _mi_limit_pressure_count(void);
/* "300 MiB (90% of cgroup v2 memory.high 333 MiB)", "none (no cgroup limit found)", ...:
   the limit in force and where it comes from, for the start-up line and the statistics. */
void       _mi_limit_describe(char* buf, size_t size);
