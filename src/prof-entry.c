/* SPDX-License-Identifier: MIT */
/* The sampling profiler's counted entry points: a second malloc and calloc (operator new's are
   in new.c, override.c sends the program's calls here) that count the requested bytes in their
   fast path (prof.c, "Counted entry points", has the design; the countdown's slow side is there,
   _mi_prof_counted_due and _mi_prof_counted_slow). The fast path is the ordinary one
   (alloc.h, mi_heap_malloc_small_from and mi_heap_malloc_medium_from), given the real first
   pages and the profiler's slow path, so a change to the ordinary fast path reaches this one. */
#include "internal/api.h"     /* _mi_prof_entry_malloc, _mi_prof_entry_calloc */
#include "internal/prof-hook.h"   /* hooks: _mi_prof_counted_slow, _mi_prof_counted_due */

#if MI_PROF_ENTRIES
/* Medium sizes: the ordinary medium path on the bin's real first page (pages_medium_direct
   holds the profiler's proxies). A leaf of its own, as the ordinary one; its arguments in the
   slow path's order, which it passes on a miss. */
static mi_decl_noinline void* mi_prof_entry_medium(size_t size, mi_heap_t* heap, bool zero) {
  return mi_heap_malloc_medium_from(heap, true, size, zero, &_mi_prof_counted_slow);
}

/* The counted fast path, in the default heap: the thread's countdown, then the ordinary pop
   from the real first page. The countdown sits beside the default heap pointer (_mi_thread_tls), so one
   TLS address serves both; on x86-64 it is one subtract from memory whose borrow is the due
   test (C gives load, subtract, store and compare: malloc ran 22 instructions, 18 this way,
   against 16 without the profiler). When due, the countdown is left wrapped:
   _mi_prof_counted_due draws it again. */
static mi_decl_always_inline void* mi_prof_entry_zero(size_t size, bool zero) {
#if defined(__x86_64__) && defined(__GNUC__)
  __asm__ goto("subq %1, %0\n\tjb %l[due]" : : "m"(_mi_thread_tls.prof_left), "r"(size) : "cc", "memory" : due);
#else
  const size_t left = _mi_thread_tls.prof_left;
  if (mi_unlikely(left < size)) goto due;
  _mi_thread_tls.prof_left = left - size;
#endif
  {
    mi_heap_t* const heap = mi_prim_get_default_heap();
    if (mi_likely(size <= MI_SMALL_SIZE_MAX - MI_PADDING_SIZE)) {
      return mi_heap_malloc_small_from(heap, _mi_thread_tls.prof_direct, size, zero, &_mi_prof_counted_slow);
    }
    return mi_prof_entry_medium(size, heap, zero);
  }
due:
  return _mi_prof_counted_due(size, zero);
}

void* _mi_prof_entry_malloc(size_t size) mi_attr_noexcept {
  return mi_prof_entry_zero(size, false);
}
void* _mi_prof_entry_calloc(size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return mi_prof_entry_zero(total, true);
}
#endif
