/* SPDX-License-Identifier: MIT */
/* The purger: a background thread that runs the delayed purges when they are due, so that a
   process that goes idle gives back what it freed without another call into the allocator
   (docs/memory.md, "Purging"; MIMALLOC_PURGE_THREAD, on by default).

   Started lazily, and never from inside a free: glibc calls free while it holds the lock that
   pthread_create takes (pthread_join frees the ended thread's TLS under the stack cache lock;
   musl's dlopen holds its thread-creation lock), so a start there can deadlock. A notify
   (arena-purge.c and segment.c call it wherever they set a purge deadline) that finds no thread
   sets _mi_purger_wanted, and the next allocation slow path (_mi_malloc_generic) starts the
   thread. The one exception: a process that provably never had a second thread
   (_mi_prim_process_single_threaded, glibc's __libc_single_threaded) starts it in the notify,
   since no thread teardown can be under way there. A program that never frees never has the
   thread. The notify is on slow paths but frequent: when the thread runs it is one load of
   the state, one of the earliest deadline known and, only when the deadline is earlier than
   that, one CAS (and a wake when the thread sleeps beyond it by more than the granularity).

   The thread sleeps until the earliest deadline notified, and never sooner than
   MI_PURGER_GRANULARITY ms after its last pass: a purge runs at most that long after it is
   due, and the thread wakes at most 1000 / MI_PURGER_GRANULARITY times a second, only while
   purges wait. With nothing pending it waits MI_PURGER_LINGER ms for new work (so that frees
   right after an allocation burst find it running) and then ends; _mi_purger_wanted is set
   again, so the next allocation slow path starts another. It does not end while pages of
   ended threads hold live blocks and a thread that may free them lives (mi_purger_keep): the
   free of such a page's last block releases the page and notifies its purge from inside the
   free, where no thread may be started, so it waits for that notify without a timeout. A
   thread of ours must not keep a process alive whose other threads have all ended (a main
   that called pthread_exit: glibc ends the process when its last thread ends, ours included;
   the end of the last thread with a heap wakes a waiting thread, which then ends), and an
   idle process has no thread of ours left once its memory is back and no ended thread's page
   holds a block. (A restart costs one pthread_create, which
   reuses the ended thread's cached stack, at most once per MI_PURGER_LINGER.) Each pass
   runs the due purges through the thread-safe entry points, which need no thread state (no
   heap, no tld: the thread never allocates, is not counted in the `threads` statistic and has
   no thread-exit work). A pass forgets the deadlines notified before it (mi_purger_due is
   reset first): every purge pass called from here must notify the deadlines it leaves, as
   arena-purge.c does when it lowers an arena's next deadline.

   Starting it: pthread_create allocates the thread's TLS vector (glibc: about 300 bytes)
   through malloc, i.e. through us, from inside the allocation that starts it. That
   allocation is served from static storage (static-alloc.c, _mi_static_alloc_begin), so no heap is
   touched in the middle of another operation. A failed start (no threads left) leaves the
   behaviour of MIMALLOC_PURGE_THREAD=0: purges from allocator activity only. The thread
   names itself "mi-purger" first thing (_mi_prim_thread_set_name: no allocation), so that
   process listings and debuggers tell it from the program's threads.

   Life cycle: fork pauses the thread between passes (a pass may claim arena blocks: a child
   must not inherit such a claim from a thread it does not have) and the child starts a new one
   on its first notify; mi_process_done stops it after any pass in progress (it then ends; the
   library stays mapped: -z nodelete, the pinned Windows DLL). */
#include "internal/page.h"
#include "internal/heap.h"   /* hooks: _mi_static_alloc_begin, _mi_static_alloc_end, _mi_process_elapsed */
#include "internal/limit.h"
#include "prim/prim.h"

#define MI_PURGER_GRANULARITY  (100)    /* ms: the least time between two passes */
#define MI_PURGER_LINGER       (1000)   /* ms: with nothing pending, the wait for work before it ends */
#define MI_PURGER_THREAD_NAME  "mi-purger"   /* the thread's name, set by itself (ps -L, top -H, gdb) */

typedef enum mi_purger_state_e {
  MI_PURGER_NONE,      /* no thread: not started, ended for want of work, a fork child, option 0 */
  MI_PURGER_STARTING,  /* one notify is starting it */
  MI_PURGER_RUNNING,
  MI_PURGER_FAILED,    /* the OS refused the thread: purges from allocator activity only */
  MI_PURGER_DONE       /* the process is done (or will exit): the thread does nothing more */
} mi_purger_state_t;

#define MI_PURGER_AWAKE  ((mi_msecs_t)-1)   /* mi_purger_wake while the thread is not sleeping */
#define MI_PURGER_UNTIL_NOTIFIED  ((mi_msecs_t)1 << 60)   /* mi_purger_wake of a wait without timeout */

static _Atomic(int)        mi_purger_state;   /* mi_purger_state_t */
static _Atomic(mi_msecs_t) mi_purger_due;     /* earliest deadline notified since the last pass (0: none) */
static _Atomic(mi_msecs_t) mi_purger_wake;    /* when the sleeping thread wakes; 0: when notified; or AWAKE */
static _Atomic(int)        mi_purger_busy;    /* 1 while a pass runs */
static _Atomic(int)        mi_purger_paused;  /* 1: no pass may begin (fork, process done) */
static bool                mi_purger_wait_ready;     /* the prim wait is initialised (by a starter) */
static _Atomic(int)        mi_purger_started_once;   /* the verbose line is printed once per process */
static _Atomic(int)        mi_purger_live;    /* 1: the live view is on (live.c): the thread publishes its
                                                 figures every half interval and stays while it is on */

_Atomic(int) _mi_purger_wanted;   /* 1: a purge was notified while no thread ran (or it lingered out) */

/* Threads with a heap (init.c tells of each start and end; the main thread counts from process
   init): while none is left, the thread must not wait for frees (a main that called pthread_exit
   ends the process with its last thread, and ours would be the last). */
static _Atomic(size_t) mi_purger_threads;

/* Should the thread stay, with nothing due? While pages of ended threads hold live blocks (on
   an abandoned list), the free of a page's last block, by any thread, releases it (abandon.c)
   and schedules its purge from inside that free, where the thread cannot be started: a
   process whose threads only free what an ended thread left (a consumer; a pool of threads
   that ended) would keep all of it. So the thread waits, without a timeout, for the notify of
   that purge, as long as a thread that may free is alive. */
static bool mi_purger_keep(void) {
  return (mi_atomic_load_seq_cst(&mi_purger_threads) > 0 && _mi_abandoned_pages_listed() > 0 &&
          mi_option_get(mi_option_purge_delay) >= 0) ||
         (mi_atomic_load_seq_cst(&mi_purger_threads) >= 2 && _mi_heap_idle_keep());   /* (frees into a sleeping thread's full pages notify from inside a free too: heap-idle.c) */
}

/* The purge passes, all thread-safe and free of thread state. */
static void mi_purger_pass(void) {
  if (mi_atomic_load_acquire(&_mi_heap_idle_notified) != 0) _mi_heap_idle_pass(_mi_prim_clock_now());   /* sleeping threads' full pages */
  _mi_segments_purge_shared(false);
  mi_sched_point(MI_SCHED_PURGER_PASS);   /* busy: a fork or mi_process_done waits for the pass */
  _mi_arenas_purge_try(false);
}

/* Run a pass unless paused; the pause and the busy flag form a handshake (sequentially
   consistent): a pauser that then sees busy == 0 knows no pass runs until it unpauses. The
   live view's work runs the same way (it takes live.c's locks, which a fork child must not
   inherit held). */
static bool mi_purger_busy_begin(void) {
  mi_atomic_store_seq_cst(&mi_purger_busy, 1);
  return (mi_atomic_load_seq_cst(&mi_purger_paused) == 0);
}
static void mi_purger_busy_end(void) {
  mi_atomic_store_release(&mi_purger_busy, 0);
}

/* Near the memory limit (limit.c: our committed memory past MI_LIMIT_NEAR_PCT of it), every
   purge waiting is done now, not at its deadline: all the slots of every subprocess and all
   the free arena blocks, as mi_collect(true) purges them (docs/memory.md, "The memory limit").
   Checked every MI_PURGER_GRANULARITY ms while the thread runs and a limit is in force; that
   check also reads the cgroup's limit again (at most once a second, limit.c). Returns whether
   a limit is in force. */
static bool mi_purger_limit_check(void) {
  bool in_force = false;
  const bool is_near = _mi_limit_near(&in_force);
  _mi_limit_pressing_set(is_near);   /* while near: what is freed is purged at once (limit.h) */
  if (!is_near) return in_force;
  if (mi_purger_busy_begin()) {
    _mi_segments_purge_shared(true);
    _mi_arenas_purge_try(true);
    _mi_limit_pressure_note();
  }
  mi_purger_busy_end();
  return true;
}

static bool mi_purger_try_pass(void) {
  const bool run = mi_purger_busy_begin();
  if (run) mi_purger_pass();
  mi_purger_busy_end();
  return run;
}

/* The live view's work when due; returns when it is due next (0: the view is off). */
static mi_msecs_t mi_purger_try_live(mi_msecs_t now) {
  mi_msecs_t next = now + 10;   /* paused (a fork): soon again */
  if (mi_purger_busy_begin()) next = _mi_observe_background(now);
  mi_purger_busy_end();
  if (next == 0) mi_atomic_store_release(&mi_purger_live, 0);
  return next;
}

/* Does the live view keep the thread? Not once no thread with a heap is left (it must not keep
   a process alive whose other threads have ended). */
static bool mi_purger_live_on(void) {
  return (mi_atomic_load_acquire(&mi_purger_live) != 0 && mi_atomic_load_seq_cst(&mi_purger_threads) > 0);
}

/* Pause (or with `stop`, end) the passes; returns once no pass runs. A thread that ended inside
   a pass never clears `busy`: on Windows, mi_process_done in a DLL runs after ExitProcess ended
   the purger's thread wherever it was (waiting for it spun forever, seen under Wine). */
static void mi_purger_pause(void) {
  mi_atomic_store_seq_cst(&mi_purger_paused, 1);
  while (mi_atomic_load_seq_cst(&mi_purger_busy) != 0 && _mi_prim_thread_alive()) mi_atomic_yield();   /* at most one pass */
}

static void mi_purger_main(void* arg) {
  (void)arg;
  _mi_prim_thread_set_name(MI_PURGER_THREAD_NAME);
  mi_msecs_t last = 0;         /* end of the last pass */
  mi_msecs_t idle_since = 0;   /* when it last found nothing pending (0: work since) */
  mi_msecs_t live_next = 0;    /* when the live view's work is due next */
  mi_msecs_t limit_next = 0;   /* when the memory limit is checked next */
  bool limited = false;        /* a memory limit is in force (as of the last check) */
  for (;;) {
    const int state = mi_atomic_load_acquire(&mi_purger_state);
    if (state != MI_PURGER_RUNNING && state != MI_PURGER_STARTING) break;   /* (it may run before its starter goes on) */
    mi_atomic_store_seq_cst(&mi_purger_wake, MI_PURGER_AWAKE);
    const mi_msecs_t due = mi_atomic_load_seq_cst(&mi_purger_due);
    const mi_msecs_t now = _mi_prim_clock_now();
    const bool live = mi_purger_live_on();
    if (live && live_next <= now) {
      live_next = mi_purger_try_live(now);
      continue;
    }
    const bool enabled = mi_option_is_enabled(mi_option_purge_thread);
    if (enabled && limit_next <= now) {
      limited = mi_purger_limit_check();
      limit_next = _mi_prim_clock_now() + MI_PURGER_GRANULARITY;
    }
    if (due != 0) idle_since = 0;
    else if (idle_since == 0) idle_since = now;
    const mi_msecs_t wake = (due == 0 ? idle_since + MI_PURGER_LINGER : (due > last + MI_PURGER_GRANULARITY ? due : last + MI_PURGER_GRANULARITY));
    if (due != 0 && wake <= now && enabled) {
      mi_atomic_store_release(&mi_purger_due, 0);   /* the pass notifies what it leaves */
      if (!mi_purger_try_pass()) mi_atomic_store_release(&mi_purger_due, now);   /* paused: later */
      last = _mi_prim_clock_now();
      continue;
    }
    if (enabled && due == 0 && wake <= now && mi_purger_keep() && !_mi_limit_is_pressing()) {
      /* nothing due, but ended threads' pages wait for their last frees: sleep until a notify
         (or the end of the last thread: _mi_purger_thread_done wakes us) */
      mi_atomic_store_seq_cst(&mi_purger_wake, MI_PURGER_UNTIL_NOTIFIED);
      /* (a notify or a thread's end changes its figure, then reads `wake`; we the reverse) */
      if (mi_atomic_load_seq_cst(&mi_purger_due) != 0 || !mi_purger_keep()) continue;
      mi_sched_point(MI_SCHED_PURGER_WAIT);   /* checked: a wake that comes now must be kept by the wait */
      _mi_prim_thread_wait(live ? live_next - now : -1);
      idle_since = 0;   /* (a wake for nothing lingers again before it ends) */
      continue;
    }
    if (!live && (!enabled || (due == 0 && wake <= now && !_mi_limit_is_pressing()))) {   /* (near the limit it stays: frees purge at once while it checks) */
      /* nothing to wait for (and none came while it lingered): end, so that this thread never
         keeps a process alive whose other threads have ended (pthread_exit in main); the next
         allocation slow path starts another */
      int expected = MI_PURGER_RUNNING;
      if (!mi_atomic_cas_strong_seq_cst(&mi_purger_state, &expected, MI_PURGER_NONE)) {
        if (expected == MI_PURGER_STARTING) mi_atomic_yield();   /* our starter is finishing */
        continue;
      }
      _mi_limit_pressing_set(false);   /* (only when it was off or purging is: nothing checks it now) */
      /* (a notify writes the deadline, then reads the state) */
      if (mi_atomic_load_seq_cst(&mi_purger_due) == 0 || !mi_option_is_enabled(mi_option_purge_thread)) {
        if (mi_option_is_enabled(mi_option_purge_thread)) mi_atomic_store_release(&_mi_purger_wanted, 1);
        return;
      }
      expected = MI_PURGER_NONE;   /* a deadline came meanwhile: go on, unless a notify starts a new thread */
      if (mi_atomic_cas_strong_acq_rel(&mi_purger_state, &expected, MI_PURGER_RUNNING)) continue;
      return;
    }
    /* sleep; a notify that comes after the publication of `wake` sees it and wakes us if need be */
    mi_msecs_t planned = (live && (wake <= now || live_next < wake || !enabled) ? live_next : wake);
    if (limited && enabled && limit_next < planned) planned = limit_next;   /* (the limit is checked while purges wait) */
    mi_atomic_store_seq_cst(&mi_purger_wake, planned);
    if (mi_atomic_load_seq_cst(&mi_purger_due) != due) continue;   /* changed meanwhile */
    _mi_prim_thread_wait(planned - now);
  }
  /* the process is done: end */
}

/* A young process (younger than MI_PURGER_YOUNG_MS, or the purge delay if shorter) with less
   than MI_LIMIT_FIRST_LOOK committed (a short process, for the memory limit too: limit.h) starts
   no thread yet: the deadlines notified are at least a purge delay off, and most such processes
   (a shell's tools, a build's compilers) end before then, while the start and the teardown at
   exit of a thread cost a 1 ms process about 0.2 ms (spawn's child: 1.47 -> 1.25 ms). The
   next notify or allocation slow path after that age starts it; a process that goes idle that
   young keeps what it freed (less than MI_LIMIT_FIRST_LOOK committed) until it allocates again. */
#define MI_PURGER_YOUNG_MS  (10)
static bool mi_purger_too_young(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  const mi_msecs_t young = (delay < MI_PURGER_YOUNG_MS ? (mi_msecs_t)delay : MI_PURGER_YOUNG_MS);
  return (_mi_limit_committed() < MI_LIMIT_FIRST_LOOK && !_mi_limit_is_pressing() &&
          mi_atomic_load_relaxed(&mi_purger_live) == 0 && _mi_process_elapsed() < young);
}

/* Start the thread (from NONE only; again after it ended, and in a fork child). */
static mi_decl_noinline void mi_purger_start(void) {
  if (!mi_option_is_enabled(mi_option_purge_thread) && mi_atomic_load_acquire(&mi_purger_live) == 0) return;
  int expected = MI_PURGER_NONE;
  if (!mi_atomic_cas_strong_acq_rel(&mi_purger_state, &expected, MI_PURGER_STARTING)) return;
  mi_atomic_store_release(&_mi_purger_wanted, 0);   /* (a start from a notify) */
  mi_atomic_store_release(&mi_purger_wake, MI_PURGER_AWAKE);   /* (paused is 0: initially, and after a fork) */
  _mi_static_alloc_begin();   /* libc's allocations for the thread: not from a heap */
  const int err = _mi_prim_thread_start(&mi_purger_main, NULL, !mi_purger_wait_ready);
  _mi_static_alloc_end();
  if (err == 0) mi_purger_wait_ready = true;
  if (err != 0) {
    mi_atomic_store_release(&mi_purger_state, MI_PURGER_FAILED);
    _mi_warning_message("unable to start the purger thread (error %d): purges run from allocator activity only\n", err);
    return;
  }
  mi_sched_point(MI_SCHED_PURGER_START);   /* the thread runs, still STARTING: a notify now must not be lost */
  expected = MI_PURGER_STARTING;
  mi_atomic_cas_strong_acq_rel(&mi_purger_state, &expected, MI_PURGER_RUNNING);   /* (not if done meanwhile) */
  if (mi_atomic_exchange_acq_rel(&mi_purger_started_once, 1) != 0) return;   /* a restart: said once */
  _mi_verbose_message("purger thread started (purges when due, at most every %d ms; MIMALLOC_PURGE_THREAD=0 turns it off)\n", MI_PURGER_GRANULARITY);
}

/* The allocation slow path, when _mi_purger_wanted is set: a safe place to start the thread
   (the caller holds no lock of libc's: it asked us for memory, not the other way round). */
/* The live view is on and a thread registered (live.c): the thread runs for it from now on.
   Started by the next allocation slow path (the caller may be mi_collect, called anywhere); a
   running one is woken so that it plans for the view. */
void _mi_purger_live_wanted(void) {
  if (mi_atomic_exchange_acq_rel(&mi_purger_live, 1) != 0) return;
  const int state = mi_atomic_load_acquire(&mi_purger_state);
  if (state == MI_PURGER_NONE) mi_atomic_store_release(&_mi_purger_wanted, 1);
  else if (state == MI_PURGER_RUNNING) _mi_prim_thread_wake();
}

void _mi_purger_start_wanted(void) {
  if (mi_purger_too_young()) return;   /* (wanted stays set: a later slow path) */
  if (mi_atomic_exchange_acq_rel(&_mi_purger_wanted, 0) == 0) return;
  if (mi_atomic_load_relaxed(&mi_purger_state) == MI_PURGER_NONE) mi_purger_start();   /* (else running, failed or done) */
}

/* Process init (the main thread) and mi_thread_init: a thread with a heap. */
void _mi_purger_thread_init(void) {
  const size_t threads = mi_atomic_add_relaxed(&mi_purger_threads, 1) + 1;
  /* a second thread: frees into a sleeping thread's full pages may come from inside a free,
     where the thread cannot be started (heap-idle.c); this thread's allocation slow path starts it */
  if (threads == 2 && mi_atomic_load_relaxed(&mi_purger_state) == MI_PURGER_NONE &&
      mi_option_is_enabled(mi_option_purge_thread) && mi_option_get(mi_option_purge_delay) >= 0) {
    mi_atomic_store_release(&_mi_purger_wanted, 1);
  }
}

/* _mi_thread_done, after the thread's pages were abandoned (its heaps still valid): the other
   safe place to start the thread, and the one a process whose other threads only free has
   (a thread that ends holds no lock of libc's in its TLS destructors). Started when a purge was
   notified while none ran, or when pages of ended threads hold blocks (mi_purger_keep); the
   last thread's end wakes a thread that waits for frees, which then ends. */
void _mi_purger_thread_done(void) {
  const size_t left = atomic_fetch_sub(&mi_purger_threads, 1) - 1;   /* (seq_cst: mi_purger_main's wait) */
  const int state = mi_atomic_load_acquire(&mi_purger_state);
  if (state == MI_PURGER_NONE) {
    if (mi_atomic_load_relaxed(&_mi_purger_wanted) != 0 || mi_purger_keep()) mi_purger_start();
  }
  else if (state == MI_PURGER_RUNNING && left <= 1 && mi_atomic_load_seq_cst(&mi_purger_wake) == MI_PURGER_UNTIL_NOTIFIED) {   /* (1: mi_purger_keep may have changed) */
    _mi_prim_thread_wake();
  }
}

void _mi_purger_notify(mi_msecs_t due) {
  const int state = mi_atomic_load_relaxed(&mi_purger_state);
  /* (a deadline notified while the thread starts is kept too: the new thread may already have
     run its first pass, and dropping it let that thread linger out with the purge still
     waiting; seen under ThreadSanitizer, where the starter is slow to mark it running) */
  if (mi_unlikely(state == MI_PURGER_FAILED || state == MI_PURGER_DONE)) return;
  mi_msecs_t known = mi_atomic_load_relaxed(&mi_purger_due);
  if (mi_likely(state == MI_PURGER_RUNNING && known != 0 && known <= due)) return;   /* the common case */
  while ((known == 0 || known > due) && !mi_atomic_cas_weak_seq_cst(&mi_purger_due, &known, due)) { }
  /* (the thread publishes its wake or its end, then reads the deadline; we the reverse) */
  if (mi_atomic_load_seq_cst(&mi_purger_state) == MI_PURGER_NONE) {
    /* the first notify, or the thread ended for want of work: we may be inside a free that
       libc calls with its locks held, so only a process that never had another thread starts
       it here; otherwise the next allocation slow path does */
    if (_mi_prim_process_single_threaded() && !mi_purger_too_young()) mi_purger_start();
    else if (mi_option_is_enabled(mi_option_purge_thread)) mi_atomic_store_release(&_mi_purger_wanted, 1);
    return;
  }
  if (known != 0 && known <= due) return;   /* another notify lowered it meanwhile */
  const mi_msecs_t wake = mi_atomic_load_seq_cst(&mi_purger_wake);
  if (wake == MI_PURGER_AWAKE) return;   /* it reads the deadline before it sleeps or ends */
  if (due + MI_PURGER_GRANULARITY < wake) _mi_prim_thread_wake();
}

/* Fork: no pass may run across it (init.c calls these before taking its locks, and after). */
void _mi_purger_fork_prepare(void) {
  if (mi_atomic_load_acquire(&mi_purger_state) != MI_PURGER_NONE) mi_purger_pause();
  _mi_arenas_purge_fork_prepare();   /* nor another thread's arena pass (arena-purge.c) */
}

void _mi_purger_fork_parent(void) {
  _mi_arenas_purge_fork_release();
  if (mi_atomic_load_acquire(&mi_purger_state) == MI_PURGER_DONE) return;
  mi_atomic_store_release(&mi_purger_paused, 0);
}

/* The child has no purger thread: its first allocation slow path starts one if the parent had
   one, else as in any process (the deadlines are still in the arenas; the next purge scheduled
   notifies, or the child's own activity runs them as before). */
void _mi_purger_fork_child(bool thread_has_heap) {
  _mi_arenas_purge_fork_release();
  mi_atomic_store_relaxed(&mi_purger_threads, thread_has_heap ? 1 : 0);   /* the forking thread only */
  _mi_limit_pressing_set(false);   /* (the child's purger, when it starts, checks the limit anew) */
  const int state = mi_atomic_load_relaxed(&mi_purger_state);
  if (state == MI_PURGER_DONE) return;
  if (state != MI_PURGER_NONE) mi_atomic_store_relaxed(&_mi_purger_wanted, 1);   /* the child's first allocation slow path */
  mi_atomic_store_relaxed(&mi_purger_state, MI_PURGER_NONE);
  mi_atomic_store_relaxed(&mi_purger_due, 0);
  mi_atomic_store_relaxed(&mi_purger_wake, 0);
  mi_atomic_store_relaxed(&mi_purger_busy, 0);
  mi_atomic_store_relaxed(&mi_purger_paused, 0);
  mi_atomic_store_relaxed(&mi_purger_live, 0);   /* the child's view is off (live.c) */
  mi_purger_wait_ready = false;   /* its lock may have been held by a thread not in the child */
}

/* mi_process_done: no pass after this returns. */
void _mi_purger_done(void) {
  const int state = mi_atomic_exchange_acq_rel(&mi_purger_state, MI_PURGER_DONE);
  if (state == MI_PURGER_NONE || state == MI_PURGER_FAILED) return;
  mi_purger_pause();
}
