/* SPDX-License-Identifier: MIT */
/* Process and thread life cycle: the static empty and main heaps, lazy reentrancy-safe
   process initialisation, thread initialisation on the first slow-path allocation, and
   thread-exit abandonment (docs/design.md: "Heaps and the fast paths", "Thread exit",
   "Initialisation"). */
#include "internal/heap.h"
#include "internal/sheap.h"   /* hooks: thread exit and fork (_mi_heap_api_thread_done, _mi_sheap_fork_*) */
#include "internal/version.h"
#include "prim/prim.h"
#if defined(_WIN32)
#include <stdlib.h>   /* malloc, free: which one serves the program (mi_report_active) */
#endif

#define MI_PAGE_EMPTY_PTR  ((mi_page_t*)&_mi_page_empty)

/* The heap of threads that have not allocated yet: its direct pages are all empty, so the
   first allocation initialises the thread in _mi_malloc_generic; tld == NULL marks it. */
const mi_heap_t _mi_thread_empty_heap = {
  .tld = NULL,
  .pages_free_direct = { [0 ... MI_PAGES_DIRECT-1] = MI_PAGE_EMPTY_PTR },
  .page_retired_min = MI_BIN_FULL,
  .numa_node = -1,
};

#if MI_TLS_PE
mi_decl_tls_pe mi_heap_t* _mi_thread_default_heap = (mi_heap_t*)&_mi_thread_empty_heap;   /* (base.h) */
#else
mi_decl_thread mi_thread_tls_t _mi_thread_tls = { (mi_heap_t*)&_mi_thread_empty_heap, 0, &_mi_thread_empty_heap.pages_free_direct[0] };
#endif

mi_subproc_t     _mi_subproc_main = { .lock = MI_LOCK_INIT };
mi_heap_t        _mi_thread_main_heap;
static mi_tld_t  mi_tld_main;
bool             _mi_process_is_initialized = false;

static mi_msecs_t  mi_process_start;

mi_msecs_t _mi_process_elapsed(void) {
  return _mi_prim_clock_now() - mi_process_start;
}

void _mi_thread_set_default_heap(mi_heap_t* heap) {
#if MI_TLS_PE
  *_mi_thread_default_heap_ptr() = heap;
#else
  _mi_thread_tls.heap = heap;
  _mi_thread_tls.prof_direct = mi_heap_direct_real(heap);
#endif
}

/* ---------------------------------------------------------------------------------------
   Thread data: a backing heap and its tld, from the OS, with a small cache so that thread
   churn does not map and unmap memory for every thread.
--------------------------------------------------------------------------------------- */
#define MI_THREAD_DATA_CACHE  (32)
static _Atomic(mi_thread_data_t*) mi_thread_data_cache[MI_THREAD_DATA_CACHE];

/* *is_zero: the data is fresh from the OS (all zero), not from the cache. */
static mi_thread_data_t* mi_thread_data_alloc(bool* is_zero) {
  *is_zero = false;
  for (size_t i = 0; i < MI_THREAD_DATA_CACHE; i++) {
    if (mi_atomic_load_relaxed(&mi_thread_data_cache[i]) != NULL) {
      mi_thread_data_t* td = mi_atomic_exchange_acq_rel(&mi_thread_data_cache[i], NULL);
      if (td != NULL) return td;
    }
  }
  return (mi_thread_data_t*)_mi_os_alloc(sizeof(mi_thread_data_t), is_zero);
}

static void mi_thread_data_free(mi_thread_data_t* td) {
  if (mi_unlikely(td->tld.idle_listed)) {   /* (a bug: the purger's list would link freed memory; a thread's end, rare) */
    _mi_error_message(EFAULT, "thread metadata at %p freed while the purger's thread list links it: kept\n", (void*)td);
    return;
  }
  for (size_t i = 0; i < MI_THREAD_DATA_CACHE; i++) {
    mi_thread_data_t* expected = NULL;
    if (mi_atomic_load_relaxed(&mi_thread_data_cache[i]) == NULL &&
        mi_atomic_cas_strong_acq_rel(&mi_thread_data_cache[i], &expected, td)) {
      return;
    }
  }
  _mi_os_free(td, sizeof(mi_thread_data_t));
}

/* is_zero: the tld is known to be all zero (static data at process start, fresh OS memory):
   its 12 KiB of statistics are then left untouched, so their pages are not faulted in
   before the thread needs them. */
static void mi_tld_init(mi_tld_t* tld, mi_heap_t* backing, bool is_zero) {
  if (!is_zero) memset(tld, 0, sizeof(*tld));
  tld->heap_backing = backing;
  tld->heaps = backing;
  tld->subproc = &_mi_subproc_main;
}

/* ---------------------------------------------------------------------------------------
   Process initialisation: on first use or from the library constructor, whichever comes
   first; never allocates, so malloc may be called from anywhere before it.
--------------------------------------------------------------------------------------- */
static void mi_fork_prepare(void);
static void mi_fork_parent(void);
static void mi_fork_child(void);

static void mi_process_init_env(void);
static _Atomic(int) mi_process_init_state;   /* 0: not started, 1: running, 2: done */
static _Atomic(uintptr_t) mi_process_init_thread;

/* Say whether this library really serves the program's malloc and operator new: with another
   allocator earlier in LD_PRELOAD, or linked before us, the program's calls bind to that one
   even though we are loaded. A definition elsewhere that forwards to us (operators from
   mimalloc-new-delete.h in the program) is recognised by a probe: one block allocated and
   freed through it. Checked only when there is someone to tell (verbose or show_errors). */
#if MI_MALLOC_OVERRIDE
typedef void* (mi_alloc_fun_t)(size_t);
typedef void  (mi_free_fun_t)(void*);

static bool mi_serves_pair(const char* alloc_name, const char* free_name, char* path, size_t path_size) {
  void* alloc_addr = NULL;
  void* free_addr = NULL;
  char free_path[256];
  const int alloc_ours = _mi_prim_symbol_provider(alloc_name, (const void*)&mi_serves_pair, &alloc_addr, path, path_size);
  const int free_ours = _mi_prim_symbol_provider(free_name, (const void*)&mi_serves_pair, &free_addr, free_path, sizeof(free_path));
  if (alloc_ours != 0 && free_ours != 0) return true;   /* ours, or cannot tell */
  if (alloc_ours != 0) _mi_snprintf(path, path_size, "%s", free_path);   /* name the foreign side */
  if (alloc_addr == NULL || free_addr == NULL) return false;
  void* p = ((mi_alloc_fun_t*)alloc_addr)(16);
  const bool ours = (p != NULL && _mi_segment_map_covers(p));   /* not the exported mi_is_in_heap_region: it may be interposed too */
  ((mi_free_fun_t*)free_addr)(p);
  return ours;
}
#endif

static void mi_report_active(void) {
  const bool verbose = mi_option_is_enabled(mi_option_verbose);
  if (!verbose && !mi_option_is_enabled(mi_option_show_errors)) return;
  const char* serves = "";
#if MI_MALLOC_OVERRIDE
  char malloc_path[256], new_path[256];
  const bool malloc_ours = mi_serves_pair("malloc", "free", malloc_path, sizeof(malloc_path));
  const bool new_ours = mi_serves_pair("_Znwm", "_ZdlPv", new_path, sizeof(new_path));
  if (!malloc_ours && !new_ours && strcmp(malloc_path, new_path) == 0) {
    _mi_warning_message("loaded, but malloc/free and operator new/delete are provided by %s: this allocator does not serve those calls\n", malloc_path);
  }
  else {
    if (!malloc_ours) _mi_warning_message("loaded, but malloc/free are provided by %s: this allocator does not serve those calls\n", malloc_path);
    if (!new_ours) _mi_warning_message("loaded, but operator new/delete are provided by %s: this allocator does not serve those calls\n", new_path);
  }
  serves = (malloc_ours && new_ours ? ", overrides malloc and new/delete"
            : malloc_ours ? ", overrides malloc but not new/delete" : NULL);
#elif defined(_WIN32)
  /* The library's own reference to malloc binds like the program's: in a program linked with
     mimalloc-override.o (which defines new/delete beside malloc) to that object's, else (and
     always in libmimalloc.dll) to the C runtime's. One block through it tells which. */
  if (verbose) {
    void* p = malloc(16);
    if (p != NULL && _mi_segment_map_covers(p)) serves = ", overrides malloc and new/delete";
    free(p);
  }
  if (_mi_prim_is_redirect_dll()) serves = ", overrides malloc and new/delete through the redirecting DLL";
#endif
  if (serves == NULL) {
    _mi_verbose_message("allocator loaded but not in use for malloc: " MI_VERSION_TEXT_FMT "; " MI_BUILD_NAME " build)\n", MI_VERSION_TEXT_ARGS);
    return;
  }
  _mi_verbose_message("allocator active: " MI_VERSION_TEXT_FMT "; " MI_BUILD_NAME " build%s)\n", MI_VERSION_TEXT_ARGS, serves);
}

/* The fork handlers are registered after init is complete: pthread_atfork may allocate.
   glibc keeps the first registrations in static storage; musl mallocs a 40-byte record for
   each (and never frees it), which would come from the heap: a segment and a page at start-up
   in the statistics, a "leak" of one block in every program's leak report, and with
   disallow_os_alloc (no arena reserved yet) a failed registration with an error about an
   allocation the program never made. With MI_ATFORK_RECORDS (musl) the registration runs under
   static allocation. (Later registrations by the program are its own allocations.) */
static void mi_register_fork_handlers(void) {
  if (MI_ATFORK_RECORDS) _mi_static_alloc_begin();
  const bool ok = _mi_prim_atfork(&mi_fork_prepare, &mi_fork_parent, &mi_fork_child);
  if (MI_ATFORK_RECORDS) _mi_static_alloc_end();
  if (!ok) _mi_warning_message("unable to register the fork handlers\n");
}

void mi_process_init(void) mi_attr_noexcept {
  if (mi_atomic_load_acquire(&mi_process_init_state) == 2) return;
  int expected = 0;
  if (!mi_atomic_cas_strong_acq_rel(&mi_process_init_state, &expected, 1)) {
    /* another thread is initialising (or we recursed into ourselves) */
    if (mi_atomic_load_relaxed(&mi_process_init_thread) == _mi_thread_id()) return;
    while (mi_atomic_load_acquire(&mi_process_init_state) != 2) mi_atomic_yield();
    return;
  }
  mi_atomic_store_release(&mi_process_init_thread, _mi_thread_id());
  mi_process_start = _mi_prim_clock_now();
  _mi_os_init();
  _mi_options_init();
  mi_tld_init(&mi_tld_main, &_mi_thread_main_heap, true);   /* static and never used before */
  _mi_heap_init(&_mi_thread_main_heap, &mi_tld_main, 0, false, 0);
  _mi_prim_thread_init_auto_done();
  mi_os_stat_increase(threads, 1);
  _mi_heap_idle_register(&mi_tld_main);
  _mi_purger_thread_init();
  _mi_process_is_initialized = true;
  mi_atomic_store_release(&mi_process_init_state, 2);
  if (!mi_heap_is_initialized(mi_prim_get_default_heap())) {
    _mi_thread_set_default_heap(&_mi_thread_main_heap);
    _mi_prim_thread_associate_default_heap(&_mi_thread_main_heap);
  }
  mi_register_fork_handlers();
  if (_mi_prim_env_ready()) mi_process_init_env();
  /* else a .preinit_array function allocated (AddressSanitizer's start-up, with the ASan
     tracking object linked in) before libc set `environ`: the options are still unread, and
     what depends on them waits for the library's constructor */
}

/* The part of process init that acts on the options: once, when the environment is readable. */
static _Atomic(int) mi_process_env_state;   /* 0: not yet, 1: done */

static void mi_process_init_env(void) {
  int expected = 0;
  if (!mi_atomic_cas_strong_acq_rel(&mi_process_env_state, &expected, 1)) return;
  mi_report_active();
  if (mi_option_is_enabled(mi_option_verbose)) mi_options_print();
  _mi_arenas_init_reserve();   /* MIMALLOC_RESERVE_HUGE_OS_PAGES(_AT), MIMALLOC_RESERVE_OS_MEMORY */
  _mi_observe_process_init();   /* MIMALLOC_LIVE, MIMALLOC_PROFILE */
}

bool _mi_thread_is_main(void) {
  const uintptr_t main_thread = mi_atomic_load_relaxed(&mi_process_init_thread);
  return (main_thread == 0 || main_thread == _mi_thread_id());
}

static _Atomic(int) mi_process_done_state;

void mi_process_done(void) mi_attr_noexcept {
  if (!_mi_process_is_initialized) return;
  int expected = 0;
  if (!mi_atomic_cas_strong_acq_rel(&mi_process_done_state, &expected, 1)) return;
  _mi_purger_done();   /* no background purge while we report and after */
  mi_heap_t* const heap = mi_prim_get_default_heap();
  if (mi_heap_is_initialized(heap)) _mi_remote_flush(heap->tld);   /* blocks this thread held back are free in the report */
  if (mi_option_is_enabled(mi_option_destroy_on_exit)) {
    mi_collect(true);
  }
  _mi_observe_process_done();   /* the leak report, statistics and profile at exit */
  _mi_verbose_message("process done: elapsed %lld ms\n", (long long)_mi_process_elapsed());
}

#if defined(__GNUC__)
__attribute__((constructor)) static void mi_process_load(void) {
  mi_process_init();
  if (mi_atomic_load_acquire(&mi_process_env_state) == 0 && _mi_prim_env_ready()) {
    _mi_options_init();   /* init ran before `environ` was set: read the options now */
    mi_process_init_env();
  }
}
__attribute__((destructor)) static void mi_process_unload(void) {
  mi_process_done();
}
/* The shared library's DT_FINI (CMakeLists.txt, MI_HOT_TEXT: -Wl,-fini): the C runtime's _fini
   does nothing on these targets (destructors are in .fini_array), but it sits after all of the
   code, and the loader's call at exit made a window of up to 64 KiB there resident. */
#if defined(__ELF__)
__attribute__((used, visibility("hidden"))) void _mi_process_fini_nothing(void) { }
#endif
#endif

/* ---------------------------------------------------------------------------------------
   Threads
--------------------------------------------------------------------------------------- */
void mi_thread_init(void) mi_attr_noexcept {
  mi_process_init();
  if (mi_heap_is_initialized(mi_prim_get_default_heap())) return;
  bool is_zero;
  mi_thread_data_t* td = mi_thread_data_alloc(&is_zero);
  if (td == NULL) {
    _mi_error_message(ENOMEM, "unable to allocate thread-local heap metadata\n");
    return;
  }
  mi_tld_init(&td->tld, &td->heap, is_zero);
  if (mi_unlikely(mi_live_enabled())) _mi_observe_thread_new(&td->tld);   /* counted from its start */
  _mi_heap_init(&td->heap, &td->tld, 0, false, 0);
  mi_os_stat_increase(threads, 1);
  _mi_heap_idle_register(&td->tld);
  _mi_purger_thread_init();
  _mi_thread_set_default_heap(&td->heap);
  _mi_prim_thread_associate_default_heap(&td->heap);
}

/* Thread exit (or mi_thread_done): delete the thread's other heaps into the backing heap,
   free what is empty, abandon the rest for other threads to reclaim, release the metadata. */
void _mi_thread_done(mi_heap_t* heap) {
  if (!mi_heap_is_initialized(heap)) return;
  mi_tld_t* tld = heap->tld;
  mi_heap_t* backing = tld->heap_backing;
  if (backing->thread_id != _mi_thread_id()) return;   /* not ours */
  _mi_remote_flush(tld);   /* its frees into other threads' pages (remote.c) */
  _mi_observe_thread_done(tld);
  _mi_thread_set_default_heap(backing);
  _mi_heap_api_thread_done(tld);   /* its other heaps end (theaps as their shared heap did) */
  mi_heap_owner_enter(backing);
  _mi_heap_idle_unregister(tld);   /* the purger no longer looks at the heap (it stopped: our section) */
  mi_heap_owner_leave(backing);
  _mi_heap_collect_abandon(backing);
  _mi_segments_big_freed_purge(tld);   /* (after: its own huge pages are freed above) */
  mi_sched_point(MI_SCHED_THREAD_DONE);   /* pages abandoned, the purger not yet told; tld and stats still here */
  _mi_purger_thread_done();   /* (heaps valid: pthread_create's allocation is served statically) */
  if (backing->prof != NULL) _mi_observe_heap_done(backing);
  _mi_stats_merge_thread(tld);   /* after abandoning: the blocks left moved to the totals */
  mi_os_stat_decrease(threads, 1);
  _mi_remote_flush(tld);   /* any held back since (from here on its frees are pushed at once) */
  _mi_thread_set_default_heap((mi_heap_t*)&_mi_thread_empty_heap);
  if (backing == &_mi_thread_main_heap) {
    /* the static main heap stays valid and empty; the thread may come back to it */
    mi_tld_init(&mi_tld_main, &_mi_thread_main_heap, false);
    _mi_heap_init(&_mi_thread_main_heap, &mi_tld_main, 0, false, 0);
  }
  else if (!tld->idle_listed) {
    mi_thread_data_free((mi_thread_data_t*)backing);
  }
  /* (else the process is ending and the list still links the tld: it stays, never reused) */
}

void mi_thread_done(void) mi_attr_noexcept {
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (!mi_heap_is_initialized(heap)) return;
  _mi_prim_thread_associate_default_heap(NULL);
  _mi_thread_done(heap);
}

void mi_thread_set_in_threadpool(void) mi_attr_noexcept {
  /* a hint only; thread pools need nothing special in this design */
}

int mi_version(void) mi_attr_noexcept {
  return MI_MALLOC_VERSION;
}

bool mi_is_redirected(void) mi_attr_noexcept {
  return false;
}

/* ---------------------------------------------------------------------------------------
   Subprocesses: each owns its segments and its threads' abandoned pages (types.h).
--------------------------------------------------------------------------------------- */
mi_subproc_id_t mi_subproc_main(void) {
  return NULL;
}

/* The calling thread's subprocess; a thread not yet initialised is in the main one */
mi_subproc_id_t mi_subproc_current(void) {
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (!mi_heap_is_initialized(heap) || heap->tld->subproc == &_mi_subproc_main) return mi_subproc_main();
  return (mi_subproc_id_t)heap->tld->subproc;
}

/* The list of subprocesses starts at _mi_subproc_main; the fork handlers walk it. Lock order:
   mi_subprocs_lock, then a subprocess' lock. */
static mi_lock_t mi_subprocs_lock = MI_LOCK_INIT;

/* Call `visit` on every subprocess under the list's lock (the purger's passes, segment.c). */
void _mi_subprocs_visit(void (*visit)(mi_subproc_t* subproc, void* arg), void* arg) {
  mi_lock_acquire(&mi_subprocs_lock);
  for (mi_subproc_t* sp = &_mi_subproc_main; sp != NULL; sp = sp->next) visit(sp, arg);
  mi_lock_release(&mi_subprocs_lock);
}

/* A subprocess' descriptor and, after it, its slot hints (segment-purge.c, _mi_segments_purge_hints) */
#if MI_SECURE == 0
#define MI_SUBPROC_ALLOC_SIZE  (sizeof(mi_subproc_t) + sizeof(mi_slot_hints_t))
#else
#define MI_SUBPROC_ALLOC_SIZE  (sizeof(mi_subproc_t))
#endif

mi_subproc_id_t mi_subproc_new(void) {
  mi_subproc_t* subproc = (mi_subproc_t*)_mi_os_alloc(MI_SUBPROC_ALLOC_SIZE, NULL);
  if (subproc == NULL) return NULL;
  memset(subproc, 0, sizeof(*subproc));   /* (its slot hints after it: zero from the OS) */
  mi_lock_init(&subproc->lock);
  mi_lock_acquire(&mi_subprocs_lock);
  subproc->next = _mi_subproc_main.next;
  _mi_subproc_main.next = subproc;
  mi_lock_release(&mi_subprocs_lock);
  return subproc;
}

void mi_subproc_delete(mi_subproc_id_t subproc_id) {
  if (subproc_id == NULL) return;
  mi_subproc_t* subproc = (mi_subproc_t*)subproc_id;
  mi_lock_acquire(&mi_subprocs_lock);
  const bool in_use = !_mi_segments_subproc_done(subproc);
  if (!in_use) {
    mi_subproc_t* prev = &_mi_subproc_main;
    while (prev->next != NULL && prev->next != subproc) prev = prev->next;
    if (prev->next == subproc) prev->next = subproc->next;
  }
  mi_lock_release(&mi_subprocs_lock);
  if (in_use) return;   /* its segments hold pages still */
  mi_lock_done(&subproc->lock);
  _mi_os_free(subproc, MI_SUBPROC_ALLOC_SIZE);
}

/* fork() in a multi-threaded process: take every internal lock first, so the child never
   inherits one held by a thread that does not exist there. (A block visitor that forks while
   mi_abandoned_visit_blocks holds a lock would deadlock; visitors must not fork.) */
static void mi_fork_prepare(void) {
  _mi_purger_fork_prepare();   /* first: a pass may take locks */
  _mi_observe_fork(MI_OBSERVE_FORK_PREPARE);   /* (the purger's live work is paused now) */
  _mi_sheap_fork_prepare();
  _mi_heap_idle_fork_prepare();
  mi_lock_acquire(&mi_subprocs_lock);
  for (mi_subproc_t* sp = &_mi_subproc_main; sp != NULL; sp = sp->next) {
    mi_lock_acquire(&sp->lock);
  }
}

static void mi_fork_parent(void) {
  for (mi_subproc_t* sp = &_mi_subproc_main; sp != NULL; sp = sp->next) {
    mi_lock_release(&sp->lock);
  }
  mi_lock_release(&mi_subprocs_lock);
  _mi_heap_idle_fork_release(false);
  _mi_sheap_fork_release();
  _mi_observe_fork(MI_OBSERVE_FORK_PARENT);
  _mi_purger_fork_parent();
}

/* In the child only the forking thread exists, and it holds every lock (mi_fork_prepare): it
   releases them. (Initialising them again instead left ThreadSanitizer seeing a second lock of a
   held mutex when the child's purger took the list's lock.) */
static void mi_fork_child(void) {
  for (mi_subproc_t* sp = &_mi_subproc_main; sp != NULL; sp = sp->next) {
    mi_lock_release(&sp->lock);
  }
  mi_lock_release(&mi_subprocs_lock);
  _mi_heap_idle_fork_release(true);
  _mi_sheap_fork_release();
  _mi_observe_fork(MI_OBSERVE_FORK_CHILD);
  mi_heap_t* heap = mi_prim_get_default_heap();
  /* the purger first: the thread is not in the child (started again on first need), and the
     repair below may free pages the purger emptied (heap-idle.c) and so notify, commit and
     purge: with the parent's purger state a notify would wake a thread that is not here,
     under a lock it may have held, and an arena's commit lock would still be ours */
  _mi_purger_fork_child(mi_heap_is_initialized(heap));
  _mi_heap_after_fork_child(heap);
}

void mi_subproc_add_current_thread(mi_subproc_id_t subproc_id) {
  if (subproc_id == NULL) return;
  mi_thread_init();
  mi_heap_t* heap = mi_prim_get_default_heap();   /* (any of the thread's heaps: its tld) */
  if (!mi_heap_is_initialized(heap)) return;
  if (heap->tld->subproc != &_mi_subproc_main) return;
  heap->tld->subproc = (mi_subproc_t*)subproc_id;
}
