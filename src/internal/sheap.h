/* SPDX-License-Identifier: MIT */
/* Shared heaps (src/sheap.c; the object and its invariants: types.h, mi_sheap_t): what the
   heap entry points, thread exit and fork need of them. */
#pragma once

#include "types.h"

extern _Atomic(size_t) _mi_sheaps_dying;   /* shared heaps deleted or destroyed, not yet freed */
mi_heap_t* _mi_sheap_theap(mi_heap_t* sheap, bool create);   /* the calling thread's theap; NULL: none (or could not make one) */
void       _mi_sheap_theap_unlink(mi_heap_t* theap);         /* mi_heap_free of a theap: off its shared heap */
void       _mi_sheap_sweep(mi_tld_t* tld);                   /* delete or destroy this thread's theaps of dead shared heaps */
void       _mi_sheap_delete(mi_heap_t* sheap, bool destroy); /* mi_heap_delete / mi_heap_destroy */
mi_heap_t* _mi_sheap_main(void);                             /* v3's main heap: each thread's part is its backing heap */
bool       _mi_sheap_visit(mi_subproc_t* subproc, bool (*visit)(mi_heap_t* heap, void* arg), void* arg);   /* the main heap, then the live shared heaps of subproc */
bool       _mi_sheap_parts_visit(mi_heap_t* sheap, bool (*visit)(const mi_heap_t* theap, void* arg), void* arg);   /* each theap, under the heap's lock, until visit is false; false if it was */
bool       _mi_sheap_abandoned_visit(mi_heap_t* sheap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);   /* its ended theaps' pages */
void       _mi_sheap_publish(mi_heap_t* theap, mi_stats_data_t* block, const mi_stats_data_t* stats);   /* its thread: theap->sheap_stats = block, a copy of stats, under the lock */
void       _mi_sheap_stats_locked(mi_heap_t* sheap, void (*fn)(mi_sheap_t* sh, void* arg), void* arg);   /* fn(heap) under its lock */
bool       _mi_sheaps_locked(bool (*fn)(mi_sheap_t* sheaps, void* arg), void* arg);   /* fn(first shared heap) under the list's lock (mi_abandoned_visit_blocks) */
void       _mi_sheap_fork_prepare(void);                     /* every shared heap's lock taken ... */
void       _mi_sheap_fork_release(void);                     /* ... and released (parent and child) */

/* A shared heap (types.h: its first word is where a heap has its tld) */
static inline bool mi_heap_is_shared(const mi_heap_t* heap) {
  return (heap->tld == MI_SHEAP_MARK);
}

/* A theap whose shared heap was deleted or destroyed (it ends at its thread's next sweep; as a
   thread's default it gives way to the backing heap first: types.h, mi_heap_s) */
static inline bool mi_heap_is_dead_part(const mi_heap_t* heap) {
  return (heap->sheap != NULL && mi_atomic_load_acquire(&heap->sheap->state) != (int)MI_SHEAP_LIVE);
}

