/* SPDX-License-Identifier: MIT */
/* The schedule fuzzer's points (src/prim/sched-fuzz.c; docs/testing.md, "Schedule fuzzing"):
   places on the slow paths where a preemption is most revealing, between two steps of a
   protocol. A test build with -DMI_SCHED_FUZZ=ON (MI_SCHED_FUZZ=1) may yield or sleep there, as
   MIMALLOC_TEST_SCHED asks; every other build compiles mi_sched_point to nothing (the name is
   still checked). Never on the fast paths; never where the thread holds a spin that another
   thread waits on without yielding (a sleep under a mutex is fine: it is what preemption does). */
#pragma once

/* Each point: its enum name (MI_SCHED_<id>) and its name in MIMALLOC_TEST_SCHED and the output.
   Where it is and what a preemption there lets other threads do: docs/testing.md. */
#define MI_SCHED_POINTS(X) \
  X(PAGE_FRESH,    "page-fresh")     /* page.c: a fresh page claimed, before its set-up */ \
  X(PAGE_FULL,     "page-full")      /* page.c: a page moved to the full queue, before the late-free check */ \
  X(ABANDON,       "abandon")        /* abandon.c: a page in abandoned form, before it is listed */ \
  X(RECLAIM,       "reclaim")        /* abandon.c: a page taken off the abandoned lists, before it joins a heap */ \
  X(FREE_LAST,     "free-last")      /* remote.c: the last live block of an abandoned page, before the lock */ \
  X(FREE_DELAYED,  "free-delayed")   /* remote.c: a page in MI_DELAYED_FREEING, before the delayed push */ \
  X(REMOTE_PUSH,   "remote-push")    /* remote.c: a batch of cross-thread frees taken off its slot, before its push */ \
  X(DELAYED_DRAIN, "delayed-drain")  /* heap.c: the heap's delayed list taken, before its blocks are freed */ \
  X(SEGMENT_PURGE, "segment-purge")  /* segment.c: a slot purge pass between two holds of the lock */ \
  X(ARENA_PURGE,   "arena-purge")    /* arena-purge.c: arena blocks claimed and purged, before the claim is released */ \
  X(PURGER_START,  "purger-start")   /* purger.c: the thread started, its state still STARTING */ \
  X(PURGER_PASS,   "purger-pass")    /* purger.c: between the slot and the arena purges of a pass */ \
  X(PURGER_WAIT,   "purger-wait")    /* purger.c: nothing due, pages of ended threads wait: before it sleeps until notified */ \
  X(HEAP_DELETE,   "heap-delete")    /* heap.c: a deleted heap's pages moved, before its delayed list is drained */ \
  X(HEAP_DESTROY,  "heap-destroy")   /* heap.c: a destroyed heap's pages never-delayed, before they are freed */ \
  X(THREAD_DONE,   "thread-done")    /* init.c: an ending thread's pages abandoned, before the purger is told */ \
  X(PROF_SAMPLE,   "prof-sample")    /* prof.c: a sampled block allocated, before it is recorded */ \
  X(SHEAP_SWEEP,   "sheap-sweep")    /* sheap.c: a part of a dead shared heap found, before it ends */ \
  X(SHEAP_SWITCH,  "sheap-switch")   /* alloc.c: a dead part as default gave way to the backing heap */

typedef enum mi_sched_where_e {
#define MI_SCHED_ENUM(id, name)  MI_SCHED_##id,
  MI_SCHED_POINTS(MI_SCHED_ENUM)
#undef MI_SCHED_ENUM
  MI_SCHED_COUNT
} mi_sched_where_t;

#if defined(MI_SCHED_FUZZ) && MI_SCHED_FUZZ
/* Count the call of `where`; with the fuzzer on, maybe yield or sleep. Never allocates, takes
   no lock; callable from any thread (the purger's too, which has no heap) and at thread exit. */
void _mi_sched_point(mi_sched_where_t where);
#define mi_sched_point(where)  _mi_sched_point(where)
#else
#define mi_sched_point(where)  ((void)(where))
#endif
