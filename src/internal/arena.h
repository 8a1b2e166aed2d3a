/* SPDX-License-Identifier: MIT */
/* Arenas and the purge of their free blocks (src/arena.c), and the background thread that runs
   due purges (src/purger.c): what the segments, the OS layer's users and the validators need of
   them. Part of internal.h, which includes it after the OS layer's declarations. */
#pragma once

#include "types.h"

/* ------------------------------------------------------------------------------------------
   arena.c: arenas and purging of free arena blocks
------------------------------------------------------------------------------------------ */
extern _Atomic(size_t) _mi_arenas_purge_pending;
/* Memory for a segment: from the arenas (only req_arena_id's if not 0) when the size and
   alignment fit, else straight from the OS; NULL with errno ENOMEM when that is not allowed.
   numa_node >= 0: only memory of that node or of none (arenas, one reserved on demand for it),
   else NULL (the caller then asks without it); -1: the calling thread's node first, then any. */
void*      _mi_arena_alloc_aligned(size_t size, size_t alignment, size_t align_offset, bool commit, mi_arena_id_t req_arena_id,
                                   int numa_node, mi_memid_t* memid);
bool       _mi_arena_memid_on_node(const mi_memid_t* memid, int numa_node);   /* memory of that node, or of
                                                                                 none known (OS memory) */
/* Give memory back with committed_size bytes of it committed (counted): all of it, or none.
   Committed arena blocks are purged after a delay. */
void       _mi_arena_free(void* p, size_t size, size_t committed_size, const mi_memid_t* memid);
/* Extend memid's arena allocation in place to at least newsize bytes when the blocks after it
   are free (committed; *ext_zero: the added memory is zero); false, and nothing changed, else. */
bool       _mi_arena_try_expand(mi_memid_t* memid, size_t newsize, bool* ext_zero);
/* The program's commit (commit: true, is_zero may be set) or decommit (false, is_zero NULL) of
   [start, start+size) for an arena of mi_manage_memory; false if it could not. */
typedef bool (mi_cdecl mi_arena_commit_fun_t)(bool commit, void* start, size_t size, bool* is_zero, void* arg);
/* mi_manage_os_memory_ex with a commit function (NULL: the OS's); v3's mi_manage_memory */
bool       _mi_arena_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node,
                                   bool exclusive, mi_arena_commit_fun_t* commit_fun, void* commit_fun_arg, mi_arena_id_t* arena_id);
/* Commit, purge (true: decommitted, else only discarded or refused: still committed) and
   decommit (true: done) part of memid's memory, by the OS or by its arena's commit function */
bool       _mi_arena_commit(const mi_memid_t* memid, void* p, size_t size);
bool       _mi_arena_purge(const mi_memid_t* memid, void* p, size_t size);
bool       _mi_arena_decommit(const mi_memid_t* memid, void* p, size_t size);
/* The due purges (all with force); thread-safe. try_purge never waits: an arena whose pass is in
   progress elsewhere is left to that pass (the allocator's own activity, the purger). collect
   (mi_collect) waits for such a pass, so the due purges are done when it returns. */
void       _mi_arenas_try_purge(bool force);
void       _mi_arenas_collect(bool force);
void       _mi_arenas_fork_prepare(void);   /* no arena purge pass runs across a fork */
void       _mi_arenas_fork_release(void);   /* parent and child */
bool       _mi_arena_memid_is_suitable(const mi_memid_t* memid, mi_arena_id_t req_arena_id);
bool       _mi_arena_id_is_valid(mi_arena_id_t id);
void       _mi_arenas_init_reserve(void);
/* An arena's descriptor as the validators see it (validate.c): the four bitmaps of arena.c */
typedef struct mi_arena_view_s {
  uint8_t*            start;          /* NULL while released */
  size_t              block_count;
  size_t              field_count;
  bool                is_pinned;
  bool                exclusive;
  bool                commit_syscall;
  bool                commit_fun;     /* commits through the program's function */
  int                 state;          /* 0 mapped, 1 released, 2 busy (arena.c, mi_arena_state_t) */
  size_t              blocks_used;
  _Atomic(size_t)*    inuse;          /* field_count words each (internal/bitmap.h) */
  _Atomic(size_t)*    committed;
  _Atomic(size_t)*    dirty;
  _Atomic(size_t)*    purge;
  _Atomic(mi_msecs_t)* purge_due;     /* block_count deadlines */
  _Atomic(mi_msecs_t)* purge_expire;  /* the arena's earliest deadline (0: none) */
} mi_arena_view_t;
bool       _mi_arena_view(size_t idx, mi_arena_view_t* view);
size_t     _mi_arena_slots(void);         /* arena slots taken (some may be empty briefly) */

/* ------------------------------------------------------------------------------------------
   purger.c: the background thread that runs due purges (MIMALLOC_PURGE_THREAD)
------------------------------------------------------------------------------------------ */
/* A purge was scheduled, due at `due` (_mi_prim_clock_now time): wakes the thread if it would
   sleep past `due`; with no thread, sets _mi_purger_wanted (or starts it, in a process that
   never had a second thread). Cheap (loads, rarely a CAS); call it after the purge is visible
   to the passes, and from a pass for every deadline it leaves. Safe inside any free. */
void       _mi_purger_notify(mi_msecs_t due);
extern _Atomic(int) _mi_purger_wanted;   /* the allocation slow path calls _mi_purger_start_wanted */
void       _mi_purger_start_wanted(void);   /* only where the caller holds no lock of libc's */
void       _mi_purger_fork_prepare(void);   /* before the fork handlers take any lock */
void       _mi_purger_fork_parent(void);
void       _mi_purger_fork_child(bool thread_has_heap);   /* the forking thread: a thread with a heap? */
void       _mi_purger_thread_init(void);    /* a thread has a heap (process init, mi_thread_init) */
void       _mi_purger_thread_done(void);    /* its end, after its pages were abandoned: may start the
                                               thread (it holds no lock of libc's) */
void       _mi_purger_done(void);           /* mi_process_done: no pass after this */
