/* SPDX-License-Identifier: MIT */
/* The observers' hooks: the only way the core (layers 1-8, docs/design.md "Layers") reaches
   the observers of the top layer (the profiler, the live view, the leak report, the statistics'
   printing, the validators). Each hook is an event of the core, not an observer's function;
   src/observe.c hands it to every observer that wants it. A hook that today has a cheap test
   in front of it (mi_live_enabled(), mi_prof_rate(), heap->prof != NULL) keeps it at the call
   site: nothing new runs on a fast path. test/layers.py lists them (OBSERVE_HOOKS), each with
   why it exists. Callable from any layer; with the observers' state that the
   core reads before a hook (whether the profiler and the live view are on). */
#pragma once
#include "base.h"

/* ------------------------------------------------------------------------------------------
   The observers' state the core reads (the cheap tests in front of the hooks)
------------------------------------------------------------------------------------------ */
/* prof.c: the sampling profiler's hook (off unless MIMALLOC_PROFILE or mi_profile_start) */
#if defined(__linux__) && defined(__GLIBC__) && MI_SECURE == 0 && MI_DEBUG == 0 && MI_PADDING == 0 && MI_TRACK_ENABLED == 0 && MI_GUARDED == 0
#define MI_PROF_AVAILABLE 1   /* release builds on Linux with glibc (prof.c says why) */
#else
#define MI_PROF_AVAILABLE 0
#endif
/* The counted entry points (prof-entry.c, prof.c): a second malloc, calloc and operator new that count bytes
   in their fast path; with the profiler on from the start, the program's calls are sent to them
   (override.c). Where the profiler is and the library overrides malloc, on the 64-bit ABIs
   whose PLT relocations prim/unix.c knows. */
#if MI_PROF_AVAILABLE && MI_MALLOC_OVERRIDE && (defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64))
#define MI_PROF_ENTRIES 1
#else
#define MI_PROF_ENTRIES 0
#endif
extern size_t _mi_prof_rate;   /* bytes between samples on average; 0: off (set once, with a release
                                  store after the profiler's store is ready) */
static inline size_t mi_prof_rate(void) { return __atomic_load_n(&_mi_prof_rate, __ATOMIC_ACQUIRE); }
/* The start of a heap's profiler state (prof.c's mi_prof_t; heap->prof points at it), the part
   the core reads. */
typedef struct mi_prof_head_s {
  bool        busy;                        /* in the profiler's slow path or a sample
                                              (mi_heap_prof_ready) */
  mi_page_t*  direct[MI_PAGES_DIRECT];     /* the heap's real first pages by word size, while its
                                              pages_free_direct points at the proxies */
} mi_prof_head_t;
/* The heap's table of real first pages by word size (types.h, the heap's invariants), which
   page.c's queue updates write and the counted entry points read (through _mi_thread_tls.prof_direct):
   pages_free_direct itself, or with the profiler on in the heap the profiler's copy. */
static inline mi_page_t** mi_heap_direct_real(mi_heap_t* heap) {
  return (heap->prof == NULL ? heap->pages_free_direct : ((mi_prof_head_t*)heap->prof)->direct);
}
/* Does the heap have a profiler that is not busy (whose slow path then serves the heap's)? */
static inline bool mi_heap_prof_ready(const mi_heap_t* heap) {
  return (heap->prof != NULL && !((const mi_prof_head_t*)heap->prof)->busy);
}
extern mi_msecs_t _mi_prof_samples_interval;        /* ms between periodic dumps; 0: none */

/* live.c: live statistics in shared memory for a viewer (MIMALLOC_LIVE) */
extern bool _mi_live_enabled;                       /* atomic: set once at start, cleared at exit */
static inline bool mi_live_enabled(void) { return __atomic_load_n(&_mi_live_enabled, __ATOMIC_RELAXED); }
/* The part of a thread's live state (tld->live, types.h) that the core touches; the first member
   of live.c's mi_live_thread_t, which owns the rest. While `watched` (set by the thread itself
   at its first publication, cleared at its end), the live view's publisher (another thread,
   live.c) may read the thread's heap list and page queues under `lock`; the thread holds it
   (mi_live_enter/leave, nesting counted in `depth`) wherever it changes them: the page-queue
   operations (page.c), the heap list (heap.c) and a heap's absorb. watched and depth are the
   owner's alone; `freed` is written by the owner only (the publisher reads it as it is). */
typedef struct mi_live_head_s {
  bool       watched;
  int        depth;
  mi_lock_t  lock;
  int64_t    freed;     /* blocks of this thread's pages freed since it got the state
                           (counted where the frees of pages with MI_PAGE_FREE_HOOK go) */
} mi_live_head_t;
/* The owner's side of the lock: around every change of its page queues and heap list while a
   publisher may read them; a load or two and a branch otherwise. */
static inline void mi_live_enter(mi_tld_t* tld) {
  mi_live_head_t* const live = tld->live;
  if (mi_unlikely(live != NULL && live->watched) && live->depth++ == 0) mi_lock_acquire(&live->lock);
}
static inline void mi_live_leave(mi_tld_t* tld) {
  mi_live_head_t* const live = tld->live;
  if (mi_unlikely(live != NULL && live->watched) && --live->depth == 0) mi_lock_release(&live->lock);
}


/* The process and its threads */
void       _mi_observe_process_init(void);   /* the environment is readable: observers start */
void       _mi_observe_process_done(void);   /* process exit: reports, then observers stop */
void       _mi_observe_option_set(mi_option_t option, long value);   /* after process init */
void       _mi_observe_thread_start(mi_tld_t* tld);   /* a thread allocates while mi_prof_rate() != 0 and its heap has no profiler */
void       _mi_observe_thread_new(mi_tld_t* tld);     /* a thread's tld is set up while mi_live_enabled() */
void       _mi_observe_thread_done(mi_tld_t* tld);    /* the thread ends; its heaps are still valid */
typedef enum mi_observe_fork_e { MI_OBSERVE_FORK_PREPARE, MI_OBSERVE_FORK_PARENT, MI_OBSERVE_FORK_CHILD } mi_observe_fork_t;
void       _mi_observe_fork(mi_observe_fork_t phase);   /* prepare: observers take their locks;
                                                           parent, child: they release them */
/* One heartbeat from one place of the allocation slow path, every 4 * MI_GENERIC_WORK_EVERY
   calls; the caller tests mi_observe_beat_wanted() first. */
static inline bool mi_observe_beat_wanted(void) { return mi_live_enabled() | (_mi_prof_samples_interval != 0); }
void       _mi_observe_heartbeat(mi_tld_t* tld);
void       _mi_observe_collected(mi_tld_t* tld);       /* mi_collect finished (mi_live_enabled()) */
mi_msecs_t _mi_observe_background(mi_msecs_t now);     /* the purger's thread: observers' due work;
                                                          when next (0: none wanted) */

/* Heaps: with the profiler, a heap (heap->prof != NULL) leases blocks from its pages and keeps
   its sampled blocks on a companion heap of its own */
void       _mi_observe_heap_init(mi_heap_t* heap);     /* when mi_prof_rate() != 0 */
void       _mi_observe_heap_done(mi_heap_t* heap);     /* when heap->prof != NULL */
void       _mi_observe_heap_release(mi_heap_t* heap);  /* when heap->prof != NULL: the heap's pages are
                                                          about to be walked, destroyed or counted;
                                                          observers hand back the blocks they hold */
mi_heap_t* _mi_observe_heap_companion(const mi_heap_t* heap);   /* the heap whose pages count as this
                                                          heap's (not in the thread's list), or NULL */
mi_block_t* _mi_observe_page_held(const mi_heap_t* heap, const mi_page_t* page);   /* the free blocks of page
                             an observer holds (page->used counts them), or NULL */
void*      _mi_observe_malloc(size_t size, mi_heap_t* heap, bool zero, size_t huge_alignment, size_t align_offset);
                          /* the slow path of a heap with heap->prof != NULL (and not busy) */

/* Pages */
void       _mi_observe_page_move(mi_page_t* page, mi_tld_t* from, mi_tld_t* to);   /* when mi_live_enabled():
                             a page with blocks in use changes thread (NULL: none) */
void       _mi_observe_free(mi_page_t* page, mi_block_t* block);   /* when mi_page_prof_samples(page) != 0 */
void       _mi_observe_page_gone(mi_page_t* page);   /* when mi_page_prof_samples(page) != 0: released
                                                        with blocks never freed */

/* The validators of checked builds (validate.c): what is checked; x and y as the kind says.
   Called only inside mi_assert_expensive. */
typedef enum mi_observe_check_e {
  MI_CHECK_PAGE,              /* x: the page */
  MI_CHECK_HEAP,              /* x: the heap, with its pages and their segments */
  MI_CHECK_THREAD,            /* x: the heap; everything of its thread */
  MI_CHECK_SUBPROC,           /* x: the subprocess; takes its lock */
  MI_CHECK_SUBPROC_LOCKED,    /* x: the subprocess; the caller holds the lock */
  MI_CHECK_SEGMENT_LOCKED,    /* x: the segment; the caller holds its subprocess' lock */
  MI_CHECK_ARENA_MEMID,       /* x: the memory, y: its memid */
  MI_CHECK_ARENAS,            /* (no arguments) */
  MI_CHECK_THREAD_STATS       /* x: the thread's statistics (tld->stats) */
} mi_observe_check_t;
bool       _mi_observe_check(mi_observe_check_t what, const void* x, const void* y);   /* true when valid */
