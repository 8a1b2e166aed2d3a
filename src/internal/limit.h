/* SPDX-License-Identifier: MIT */
/* limit.c: the soft memory limit (MIMALLOC_MEMORY_LIMIT, by default the process's cgroup limit;
   docs/memory.md, "The memory limit"). Layer 1: it reads options and, through prim, the cgroup
   files; it acts on nothing (the purger, purger.c, does the work near the limit). */
#pragma once
#include "types.h"

#define MI_LIMIT_REREAD_MS   (1000)   /* the cgroup's files are read at most once a second */
#define MI_LIMIT_NEAR_PCT    (80)     /* "near the limit": our committed memory past this share */
#define MI_LIMIT_LEAVE_PCT   (70)     /* ... and no longer near once below this one */

/* The soft limit in force, in bytes (0: none); reads the cgroup again when the last read is
   MI_LIMIT_REREAD_MS old (a few open/read/close, never an allocation). Not for fast paths. */
size_t     _mi_limit_get(void);
/* The hard limit (MIMALLOC_MEMORY_LIMIT_HARD) in bytes (0: none); computed like the soft one.
   Not enforced yet: the allocation paths have no hook for it (docs/memory.md). */
size_t     _mi_limit_hard_get(void);
/* Our committed memory (the statistics' `committed`, all threads): what the limit is held to. */
size_t     _mi_limit_committed(void);
/* Is our committed memory past MI_LIMIT_NEAR_PCT of the soft limit (or, while pressing, still
   past MI_LIMIT_LEAVE_PCT)? False without a limit. */
bool       _mi_limit_near(void);
/* Near the limit (as the purger's last check found): the purge delays of slots and arena
   blocks are 0 (segment.c, arena-purge.c), so what is freed is given back at once, not at its
   deadline. Set and cleared by the purger's thread only; one relaxed load for the readers. */
extern _Atomic(size_t) _mi_limit_pressing;
static inline bool _mi_limit_is_pressing(void) { return (mi_atomic_load_relaxed(&_mi_limit_pressing) != 0); }
void       _mi_limit_pressing_set(bool on);
/* The purger had to give memory back at once because of the limit: counted (statistics). */
void       _mi_limit_pressure_note(void);
size_t     _mi_limit_pressure_count(void);
/* "300 MiB (90% of cgroup v2 memory.high 333 MiB)", "none (no cgroup limit found)", ...:
   the limit in force and where it comes from, for the start-up line and the statistics. */
void       _mi_limit_describe(char* buf, size_t size);
