/* SPDX-License-Identifier: MIT */
/* Allocation entry points: malloc and friends, zeroed, reallocation, strings. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* realpath */
#endif
#include "internal/alloc.h"
#include "prim/prim.h"   /* _mi_prim_thread_is_exited */
#include <stdlib.h>
#include <limits.h>

/* Zero a block just handed out: fresh (zero) memory only needs its free-list link cleared.
   The whole usable block is zeroed so in-place growth of zeroed blocks stays zero. */
void _mi_alloc_block_zero_init(const mi_page_t* page, void* p) {
  if (page->free_is_zero) {
    ((mi_block_t*)p)->next = NULL;
  }
  else {
    memset(p, 0, page->block_size - MI_PADDING_SIZE);   /* debug builds write the padding next */
  }
}

/* ------------------------------------------------------------------------------------------
   The allocation slow path (the fast path is mi_heap_malloc_small_zero in alloc.h)
------------------------------------------------------------------------------------------ */
/* The slow path of every allocation: initialises the thread on its first call, runs the
   periodic work (deferred-free hook, delayed frees, retired pages), and finds a page.
   On failure returns NULL with errno = ENOMEM. */
/* A usual reason for a call here is that the first page of the size's bin ran out of free
   blocks while it holds blocks freed since (thread_free; local_free in sharded builds, types.h):
   those are taken at once, and the bookkeeping of the slow path (deferred-free hook, delayed
   frees, due purges, periodic collect) runs on every MI_GENERIC_WORK_EVERY-th call, or when that
   quick retry finds nothing. With owner frees on local_free, glibc-thread (bench/workloads)
   called this for 47% of its mallocs (callgrind, 1M mallocs), and the quick retry served 60% of
   those calls: 5-7% less time. Large sizes skip the quick retry (their pages go full at once,
   below). */
#define MI_GENERIC_WORK_EVERY  (4)

/* A large page (one block) goes to the full queue as its block is handed out, so that
   another thread's free of it reaches this heap's delayed list, which the slow path takes every
   few calls, and the page goes back at once, instead of waiting unseen on the page's own list
   until this thread allocates from that class again (mstress with 16 threads: 11-17 MiB of
   large pages whose only block others had freed). Its own free then takes the generic path
   (unfull, then the page is freed), a few instructions beside a segment's lock. */
static inline void* mi_page_malloc_last(mi_heap_t* heap, mi_page_t* page, size_t size, bool zero) {
  void* const p = _mi_page_malloc(heap, page, size, zero);
  mi_assert_internal(!mi_page_is_in_full(page));   /* found in its bin's queue */
  if (page->block_size > MI_MEDIUM_OBJ_SIZE_MAX && page->block_size <= MI_LARGE_OBJ_SIZE_MAX) {
    _mi_page_to_full(page, _mi_page_queue_of(page));
  }
  return p;
}

/* The slow path and shared heaps (sheap.c): looked at only while _mi_sheaps_dying != 0, tested
   with the profiler's rate in the periodic work (a test of its own before the quick retry made
   "malloc remote 64 B" 18.09 instructions instead of 18.04). A default that is a part of a
   shared heap another thread deleted or destroyed (mi_heap_set_default) gives way to the backing
   heap, which serves the call: in the periodic work, or before the profiler's slow path, never
   inside it (busy: its caller goes on with the heap it holds). The part ends at a later sweep,
   never in the call that switched (a caller up the stack may still hold it). */
static inline bool mi_heap_is_dead_default(const mi_heap_t* heap) {
  return (mi_heap_is_dead_part(heap) && heap == mi_prim_get_default_heap());
}

/* _mi_sheaps_dying != 0, where no profiler is busy (never inside the profiler's slow path, whose
   caller holds its heap): the heap that serves the call (sheap.c); the sweep every 4th time */
static mi_decl_noinline mi_heap_t* mi_malloc_sheaps_dying(mi_heap_t* heap) {
  return _mi_sheap_dying_step(heap, (heap->tld->heartbeat % (4 * MI_GENERIC_WORK_EVERY)) == 0);
}

static void* mi_malloc_generic_find(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset, size_t psize, unsigned long long beat);

/* Delayed purges that are due (segment-purge.c looks at the clock every few calls). */
static inline void mi_malloc_purge_tick(mi_heap_t* heap) {
  if (mi_unlikely(_mi_segments_purge_pending(heap->tld) || mi_atomic_load_relaxed(&_mi_arenas_purge_pending) != 0)) {
    _mi_segments_purge_tick(heap->tld);
  }
}

void* _mi_malloc_generic(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset) {
  /* the sampling profiler (prof.c) has its own slow path, which calls this one again while
     busy; a heap with a profiler is initialised and its own */
  if (mi_unlikely(mi_heap_prof_ready(heap))) {
    if (mi_unlikely(mi_atomic_load_relaxed(&_mi_sheaps_dying) != 0)) {
      mi_heap_t* const bheap = heap->tld->heap_backing;
      if (!mi_heap_is_dead_default(heap)) heap = mi_malloc_sheaps_dying(heap);   /* (its sweep: the profiler's only chance but mi_collect) */
      else if (mi_heap_prof_ready(bheap)) heap = _mi_sheap_default_back(heap);   /* (else at mi_collect) */
    }
    return _mi_observe_malloc(size, heap, zero, huge_alignment, align_offset);
  }
  if (mi_unlikely(!mi_heap_is_initialized(heap))) {
    if (mi_unlikely(_mi_thread_id_is(mi_atomic_load_relaxed(&_mi_static_alloc_thread)))) {
      return _mi_static_alloc_block(size, zero, huge_alignment, align_offset);   /* libc's, for a call of ours */
    }
    mi_thread_init();
    heap = mi_prim_get_default_heap();
    if (mi_unlikely(!mi_heap_is_initialized(heap))) { errno = ENOMEM; return NULL; }
    if (mi_unlikely(_mi_prim_thread_is_exited())) {
      /* past the thread's last exit hook (prim.h): this heap serves this one call and is
         abandoned at once; the block is freed later like any block of an exited thread */
      void* const p = _mi_malloc_generic(size, heap, zero, huge_alignment, align_offset);
      const int err = errno;
      _mi_thread_done(heap);
      errno = err;
      return p;
    }
  }
  else if (mi_heap_check_owner(heap, "allocation")) {   /* every build: heap.h */
    errno = ENOMEM;
    return NULL;
  }
  const size_t psize = (size <= MI_MAX_ALLOC_SIZE ? size + MI_PADDING_SIZE : size);   /* room for the padding */
  const unsigned long long beat = ++heap->tld->heartbeat;
  if (mi_likely((beat % MI_GENERIC_WORK_EVERY) != 0 && psize <= MI_MEDIUM_OBJ_SIZE_MAX && huge_alignment == 0)) {
    mi_page_t* page = _mi_page_first_available(heap, psize);
    if (page == NULL) {   /* its first page ran out: the next one, which a search would take too */
      page = _mi_page_next_available(heap, psize);
      if (page != NULL) mi_malloc_purge_tick(heap);   /* (a page change: taking them out of the
                                                         search's way left purges for later, and
                                                         rptest held 5% more memory) */
    }
    if (page != NULL) {
      mi_assert_expensive(_mi_observe_check(MI_CHECK_PAGE, page, NULL));
      return _mi_page_malloc(heap, page, size, zero);
    }
  }
  /* two globals that are almost always 0, one test; both cases want a heap without a profiler
     (heap->prof != NULL here: inside the profiler's slow path) */
  const size_t dying = mi_atomic_load_relaxed(&_mi_sheaps_dying);
  if (mi_unlikely((dying | mi_prof_rate()) != 0) && heap->prof == NULL) {
    if (dying != 0) heap = mi_malloc_sheaps_dying(heap);
    if (mi_prof_rate() != 0) _mi_observe_thread_start(heap->tld);   /* mi_profile_start by another thread */
  }
  /* frees held back (remote.c), every 16th time: outside the owner section (a push may take
     the subprocess' lock) */
  if (mi_unlikely((beat % (4 * MI_GENERIC_WORK_EVERY)) == 0)) _mi_remote_flush(heap->tld);
  mi_heap_owner_enter(heap);   /* (heap-idle.c: the purger stays off our full pages meanwhile) */
  void* const p = mi_malloc_generic_find(size, heap, zero, huge_alignment, align_offset, psize, beat);
  mi_heap_owner_leave(heap);
  return p;
}

/* The part of the slow path that may touch the heap's full pages: in an owner section. */
static void* mi_malloc_generic_find(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset, size_t psize, unsigned long long beat) {
  _mi_options_deferred_free(heap, false);
  _mi_heap_delayed_free_partial(heap);
  if (mi_unlikely(mi_atomic_load_relaxed(&_mi_purger_wanted) != 0)) _mi_purger_start_wanted();   /* (never from a free) */
  mi_malloc_purge_tick(heap);
  if (mi_unlikely((beat % (4 * MI_GENERIC_WORK_EVERY)) == 0)) {
    _mi_heap_collect_periodic(heap);      /* looks at the clock */
    if (mi_unlikely(mi_observe_beat_wanted())) _mi_observe_heartbeat(heap->tld);   /* MIMALLOC_LIVE, MIMALLOC_PROFILE_INTERVAL */
  }

  mi_page_t* page = _mi_page_find(heap, psize, huge_alignment, align_offset);
  if (mi_unlikely(page == NULL) && size <= MI_MAX_ALLOC_SIZE) {
    const int saved_errno = errno;   /* failed system calls on the way set errno */
    mi_heap_collect(heap, true);     /* release what we can and try once more */
    page = _mi_page_find(heap, psize, huge_alignment, align_offset);
    if (page != NULL) errno = saved_errno;   /* success leaves errno alone */
  }
  if (mi_unlikely(page == NULL)) {
    _mi_error_message(ENOMEM, "unable to allocate memory (%zu bytes)\n", size);
    errno = ENOMEM;
    return NULL;
  }
  mi_assert_internal(mi_page_immediate_available(page));
  mi_assert_expensive(_mi_observe_check(MI_CHECK_PAGE, page, NULL));
  return mi_page_malloc_last(heap, page, size, zero);
}

/* Medium sizes (alloc.h). Not inlined: the small path stays a frameless leaf (as one
   function, malloc of 16 B took 24 instructions instead of 15). */
static mi_decl_noinline void* mi_heap_malloc_medium_zero(mi_heap_t* heap, size_t size, bool zero) {
  return mi_heap_malloc_medium_from(heap, false, size, zero, &_mi_malloc_generic);
}

static inline void* mi_heap_malloc_zero_unsampled(mi_heap_t* heap, size_t size, bool zero) {
  if (mi_likely(size <= MI_SMALL_SIZE_MAX - MI_PADDING_SIZE)) {
    return mi_heap_malloc_small_zero(heap, size, zero);
  }
  return mi_heap_malloc_medium_zero(heap, size, zero);
}

/* Guarded builds sample here: every allocation entry but the aligned ones (a guarded object
   is only 16-byte aligned) and the `_small` ones comes through this function. `heap` is a
   thread's heap: the default one, or a theap found by _mi_malloc_zero. */
static inline void* mi_theap_malloc_zero(mi_heap_t* heap, size_t size, bool zero) {
  if (mi_heap_is_foreign(heap, "allocation")) { errno = ENOMEM; return NULL; }   /* debug builds */
#if MI_GUARDED > 0
  if (mi_unlikely(heap->guarded_sample_count == 0)) return _mi_guarded_malloc_sampled(heap, size, zero);
  heap->guarded_sample_count--;
#endif
  return mi_heap_malloc_zero_unsampled(heap, size, zero);
}

/* The mi_heap_* entry points: `heap` may be a shared heap (sheap.c), whose calling thread's
   part (theap) is looked up here, made on first use. The default heap's entry points (mi_malloc,
   mi_zalloc, mi_calloc, mi_mallocn) call mi_theap_malloc_zero directly: no lookup on their path. */
void* _mi_malloc_zero(mi_heap_t* heap, size_t size, bool zero) {
  if (mi_unlikely(mi_heap_is_shared(heap)) && (heap = _mi_sheap_theap(heap, true)) == NULL) { errno = ENOMEM; return NULL; }
  return mi_theap_malloc_zero(heap, size, zero);
}

void* _mi_malloc_zero_unsampled(mi_heap_t* heap, size_t size, bool zero) {
  return mi_heap_malloc_zero_unsampled(heap, size, zero);
}

/* ---------------------------------------------------------------------------------------
   Basic allocation
--------------------------------------------------------------------------------------- */
void* mi_heap_malloc_small(mi_heap_t* heap, size_t size) mi_attr_noexcept {
  if (mi_unlikely(mi_heap_is_shared(heap)) && (heap = _mi_sheap_theap(heap, true)) == NULL) { errno = ENOMEM; return NULL; }
  if (mi_heap_is_foreign(heap, "mi_heap_malloc_small")) { errno = ENOMEM; return NULL; }
  return mi_heap_malloc_small_zero(heap, size, false);
}
void* mi_heap_zalloc_small(mi_heap_t* heap, size_t size) mi_attr_noexcept {
  if (mi_unlikely(mi_heap_is_shared(heap)) && (heap = _mi_sheap_theap(heap, true)) == NULL) { errno = ENOMEM; return NULL; }
  if (mi_heap_is_foreign(heap, "mi_heap_zalloc_small")) { errno = ENOMEM; return NULL; }
  return mi_heap_malloc_small_zero(heap, size, true);
}
void* mi_malloc_small(size_t size) mi_attr_noexcept {
  return mi_heap_malloc_small_zero(mi_prim_get_default_heap(), size, false);
}
void* mi_zalloc_small(size_t size) mi_attr_noexcept {
  return mi_heap_malloc_small_zero(mi_prim_get_default_heap(), size, true);
}
void* mi_umalloc_small(size_t size, size_t* block_size) mi_attr_noexcept {
  void* p = mi_malloc_small(size);
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  return p;
}
void* mi_uzalloc_small(size_t size, size_t* block_size) mi_attr_noexcept {
  void* p = mi_zalloc_small(size);
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  return p;
}

void* mi_heap_malloc(mi_heap_t* heap, size_t size) mi_attr_noexcept {
  return _mi_malloc_zero(heap, size, false);
}
mi_decl_cache_align void* mi_malloc(size_t size) mi_attr_noexcept {
  return mi_theap_malloc_zero(mi_prim_get_default_heap(), size, false);
}
void* mi_heap_zalloc(mi_heap_t* heap, size_t size) mi_attr_noexcept {
  return _mi_malloc_zero(heap, size, true);
}
void* mi_zalloc(size_t size) mi_attr_noexcept {
  return mi_theap_malloc_zero(mi_prim_get_default_heap(), size, true);
}
void* mi_umalloc(size_t size, size_t* block_size) mi_attr_noexcept {
  void* p = mi_malloc(size);
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  return p;
}

void* mi_heap_calloc(mi_heap_t* heap, size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return _mi_malloc_zero(heap, total, true);
}
void* mi_calloc(size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return mi_theap_malloc_zero(mi_prim_get_default_heap(), total, true);
}
void* mi_ucalloc(size_t count, size_t size, size_t* block_size) mi_attr_noexcept {
  void* p = mi_calloc(count, size);
  if (p != NULL && block_size != NULL) *block_size = _mi_free_usable_size(p);
  return p;
}

void* mi_heap_mallocn(mi_heap_t* heap, size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return _mi_malloc_zero(heap, total, false);
}
void* mi_mallocn(size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return mi_theap_malloc_zero(mi_prim_get_default_heap(), total, false);
}

/* ---------------------------------------------------------------------------------------
   Reallocation
--------------------------------------------------------------------------------------- */
/* Grow a huge block in place when the arena blocks after it are free: no copy, and the
   pages already written stay where they are (growing buffers, e.g. a vector doubling). */
static bool mi_realloc_grow_huge(void* p, size_t size, size_t newsize, bool zero) {
  if (newsize <= MI_LARGE_OBJ_SIZE_MAX || newsize > MI_MAX_ALLOC_SIZE) return false;
  mi_page_t* page = _mi_ptr_page(p);
  /* only a block at its page's start grows (_mi_segment_huge_try_grow); an aligned block's
     interior pointer must not reach the padding reads below, which would read past the page */
  if (!mi_page_is_huge(page) || (uint8_t*)p != mi_page_start(page)) return false;
  const size_t old_block_size = page->block_size;
#if MI_PADDING
  void* caller = _mi_debug_block_caller(page, (mi_block_t*)p);
#endif
  bool ext_zero = false;
  if (!_mi_segment_huge_try_grow(page, p, newsize + MI_PADDING_SIZE, &ext_zero)) return false;
  mi_track_mem_undefined((uint8_t*)p + size, page->block_size - size);   /* for the writes below */
  if (zero) {
    /* the old block beyond the requested size (padding builds), and the added part unless it
       is known to be zero */
    uint8_t* old_end = mi_page_start(page) + old_block_size;
    memset((uint8_t*)p + size, 0, (size_t)(old_end - ((uint8_t*)p + size)));
    if (!ext_zero) memset(old_end, 0, page->block_size - old_block_size);
  }
#if MI_PADDING
  _mi_debug_set_size(p, newsize);
  _mi_debug_set_caller(page, (mi_block_t*)p, caller);
#endif
#if MI_TRACK_ENABLED
  _mi_track_realloc_in_place(p, size, newsize, zero);
#endif
  return true;
}

void* _mi_realloc_zero(mi_heap_t* heap, void* p, size_t newsize, bool zero, size_t* usable_pre, size_t* usable_post) {
  /* (debug builds) p stays valid, as after any failed reallocation */
  if (mi_unlikely(mi_heap_is_shared(heap)) && (heap = _mi_sheap_theap(heap, true)) == NULL) { errno = ENOMEM; return NULL; }   /* (sheap.c) */
  if (mi_heap_is_foreign(heap, "reallocation")) { errno = ENOMEM; return NULL; }
  const size_t size = _mi_free_usable_size(p);   /* 0 for NULL and for pointers that are not ours */
  if (mi_unlikely(size == 0 && p != NULL && !mi_is_in_heap_block(p))) {
    /* not ours: its size is unknown, so nothing can be copied; fail and leave it untouched */
    _mi_error_message(EINVAL, "mi_realloc: invalid pointer %p (not allocated by this allocator)\n", p);
    errno = EINVAL;
    return NULL;
  }
  if (usable_pre != NULL) *usable_pre = size;
  /* keep the block when it fits and does not waste more than half */
  if (mi_likely(newsize <= size && newsize >= (size / 2) && newsize > 0)) {
    if (zero) {
      /* keep "everything beyond the requested size is zero" so a later in-place growth
         (we do not know the previous size then) hands out zeros */
      memset((uint8_t*)p + newsize, 0, size - newsize);
    }
#if MI_TRACK_ENABLED
    _mi_track_realloc_in_place(p, size, newsize, false);
#endif
#if MI_PADDING
    _mi_debug_set_size(p, newsize);   /* overflow checks start at the new size */
    if (usable_post != NULL) *usable_post = newsize;
#else
    if (usable_post != NULL) *usable_post = size;
#endif
    return p;
  }
  if (newsize > size && size > 0 && mi_realloc_grow_huge(p, size, newsize, zero)) {
    if (usable_post != NULL) *usable_post = _mi_free_usable_size(p);
    return p;
  }
  void* newp = mi_theap_malloc_zero(heap, newsize, false);
  if (mi_unlikely(newp == NULL)) return NULL;   /* p stays valid; errno is ENOMEM */
  _mi_realloc_copy(newp, p, size, newsize, zero);
  if (newsize == 0 && !MI_PADDING) ((uint8_t*)newp)[0] = 0;
  if (p != NULL) mi_free(p);
  if (usable_post != NULL) *usable_post = _mi_free_usable_size(newp);
  return newp;
}

void _mi_realloc_copy(void* newp, const void* p, size_t size, size_t newsize, bool zero) {
  const size_t copied = (size < newsize ? size : newsize);
  if (p != NULL) memcpy(newp, p, copied);
  if (zero) {
    /* everything beyond the copied bytes is zero, so later in-place growth stays zero */
    const size_t newusable = _mi_free_usable_size(newp);
    if (newusable > copied) memset((uint8_t*)newp + copied, 0, newusable - copied);
  }
}

void* mi_heap_realloc(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept {
  return _mi_realloc_zero(heap, p, newsize, false, NULL, NULL);
}
void* mi_realloc(void* p, size_t newsize) mi_attr_noexcept {
  return mi_heap_realloc(mi_prim_get_default_heap(), p, newsize);
}
void* mi_urealloc(void* p, size_t newsize, size_t* block_size_pre, size_t* block_size_post) mi_attr_noexcept {
  return _mi_realloc_zero(mi_prim_get_default_heap(), p, newsize, false, block_size_pre, block_size_post);
}

void* mi_heap_reallocn(mi_heap_t* heap, void* p, size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return mi_heap_realloc(heap, p, total);
}
void* mi_reallocn(void* p, size_t count, size_t size) mi_attr_noexcept {
  return mi_heap_reallocn(mi_prim_get_default_heap(), p, count, size);
}

/* BSD reallocf: frees p when the reallocation fails. */
void* mi_heap_reallocf(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept {
  void* newp = mi_heap_realloc(heap, p, newsize);
  if (newp == NULL && p != NULL) {
    const int err = errno;
    mi_free(p);
    errno = err;
  }
  return newp;
}
void* mi_reallocf(void* p, size_t newsize) mi_attr_noexcept {
  return mi_heap_reallocf(mi_prim_get_default_heap(), p, newsize);
}

void* mi_heap_rezalloc(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept {
  return _mi_realloc_zero(heap, p, newsize, true, NULL, NULL);
}
void* mi_rezalloc(void* p, size_t newsize) mi_attr_noexcept {
  return mi_heap_rezalloc(mi_prim_get_default_heap(), p, newsize);
}
void* mi_heap_recalloc(mi_heap_t* heap, void* p, size_t count, size_t size) mi_attr_noexcept {
  size_t total;
  if (mi_count_size_overflow(count, size, &total)) return NULL;
  return mi_heap_rezalloc(heap, p, total);
}
void* mi_recalloc(void* p, size_t count, size_t size) mi_attr_noexcept {
  return mi_heap_recalloc(mi_prim_get_default_heap(), p, count, size);
}

/* Resize in place only. */
void* mi_expand(void* p, size_t newsize) mi_attr_noexcept {
  if (p == NULL) return NULL;
  if (newsize > _mi_free_usable_size(p)) return NULL;
  return p;   /* the usable size stays (so in debug builds the overflow check too) */
}

/* ---------------------------------------------------------------------------------------
   Sizes
--------------------------------------------------------------------------------------- */
size_t mi_good_size(size_t size) mi_attr_noexcept {
  if (MI_PADDING) return size;   /* debug builds: exactly the requested bytes are usable */
  if (size <= MI_LARGE_OBJ_SIZE_MAX) return _mi_page_bin_size(_mi_bin(size));
  if (size > MI_MAX_ALLOC_SIZE) return size;
  return _mi_os_good_alloc_size(size);
}

/* ---------------------------------------------------------------------------------------
   Strings
--------------------------------------------------------------------------------------- */
char* mi_heap_strdup(mi_heap_t* heap, const char* s) mi_attr_noexcept {
  if (s == NULL) return NULL;
  const size_t len = strlen(s);
  char* t = (char*)mi_heap_malloc(heap, len + 1);
  if (t == NULL) return NULL;
  memcpy(t, s, len + 1);
  return t;
}
char* mi_strdup(const char* s) mi_attr_noexcept {
  return mi_heap_strdup(mi_prim_get_default_heap(), s);
}

char* mi_heap_strndup(mi_heap_t* heap, const char* s, size_t n) mi_attr_noexcept {
  if (s == NULL) return NULL;
  const size_t len = strnlen(s, n);
  char* t = (char*)mi_heap_malloc(heap, len + 1);
  if (t == NULL) return NULL;
  memcpy(t, s, len);
  t[len] = 0;
  return t;
}
char* mi_strndup(const char* s, size_t n) mi_attr_noexcept {
  return mi_heap_strndup(mi_prim_get_default_heap(), s, n);
}

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#if defined(_WIN32)
/* Windows has no realpath: the absolute path (GetFullPathNameA, into the caller's buffer of
   PATH_MAX bytes, as realpath's: no allocation) of a file that exists (else ENOENT, as
   realpath); links stay as they are */
static char* mi_win_realpath(const char* fname, char* resolved) {
  const DWORD n = GetFullPathNameA(fname, PATH_MAX, resolved, NULL);   /* n: without the NUL, or the size needed */
  if (n == 0 || n >= PATH_MAX) { errno = (n == 0 ? ENOENT : ENAMETOOLONG); return NULL; }
  if (GetFileAttributesA(resolved) == INVALID_FILE_ATTRIBUTES) { errno = ENOENT; return NULL; }
  return resolved;
}
#define realpath  mi_win_realpath
#endif
char* mi_heap_realpath(mi_heap_t* heap, const char* fname, char* resolved_name) mi_attr_noexcept {
  if (resolved_name != NULL) {
    return realpath(fname, resolved_name);
  }
  char buf[PATH_MAX + 1];
  char* rname = realpath(fname, buf);
  if (rname == NULL) return NULL;   /* errno from realpath */
  return mi_heap_strdup(heap, rname);
}
char* mi_realpath(const char* fname, char* resolved_name) mi_attr_noexcept {
  return mi_heap_realpath(mi_prim_get_default_heap(), fname, resolved_name);
}
