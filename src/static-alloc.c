/* SPDX-License-Identifier: MIT */
/* Static allocation (its contract is in heap.h): what libc allocates on our behalf inside a
   call we make where no heap may be touched comes from a small static room. */
#include "internal/heap.h"
#include "internal/alloc.h"   /* hook: _mi_malloc_generic */
#include "prim/prim.h"

/* The calling thread's default heap is the empty one between
   begin and end, so its allocations reach the generic path's uninitialised-heap branch, which
   serves them here from a static room while this thread is the marked one: not heap memory,
   never counted, never freed, and no heap structure is touched (the caller may be in the middle
   of a free). The room's pages are touched only when used. Beyond the room (a program with
   hundreds of TLS-using objects) the allocations come from the thread's heap after all. */
_Atomic(uintptr_t) _mi_static_alloc_thread;
static mi_heap_t*  mi_static_alloc_heap;               /* the thread's default heap meanwhile */
#define MI_STATIC_ALLOC_ROOM  (4*MI_KiB)
static uint8_t     mi_static_alloc_room[MI_STATIC_ALLOC_ROOM] __attribute__((aligned(MI_MAX_ALIGN_SIZE)));
static size_t      mi_static_alloc_used;

void _mi_static_alloc_begin(void) {
  mi_static_alloc_heap = mi_prim_get_default_heap();
  _mi_thread_set_default_heap((mi_heap_t*)&_mi_thread_empty_heap);
  mi_atomic_store_release(&_mi_static_alloc_thread, _mi_thread_id());
}

void _mi_static_alloc_end(void) {
  mi_atomic_store_release(&_mi_static_alloc_thread, (uintptr_t)0);
  _mi_thread_set_default_heap(mi_static_alloc_heap);
}

void* _mi_static_alloc_block(size_t size, bool zero, size_t huge_alignment, size_t align_offset) {
  const size_t bsize = _mi_align_up(size == 0 ? 1 : size, MI_MAX_ALIGN_SIZE);
  if (huge_alignment == 0 && bsize <= MI_STATIC_ALLOC_ROOM - mi_static_alloc_used) {
    void* p = &mi_static_alloc_room[mi_static_alloc_used];   /* all zero: never handed out before */
    mi_static_alloc_used += bsize;
    return p;
  }
  mi_heap_t* heap = mi_static_alloc_heap;
  if (!mi_heap_is_initialized(heap)) return NULL;   /* (a thread that never allocated: no heap to fall back on) */
  return _mi_malloc_generic(size, heap, zero, huge_alignment, align_offset);   /* the room is used up */
}

bool _mi_static_alloc_contains(const void* p) {
  return ((const uint8_t*)p >= mi_static_alloc_room && (const uint8_t*)p < mi_static_alloc_room + MI_STATIC_ALLOC_ROOM);
}
