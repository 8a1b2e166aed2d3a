/* SPDX-License-Identifier: MIT */
/* Atomic operations (C11 <stdatomic.h>) and the one internal lock type.
   Memory orders are explicit at every use so each site documents what it synchronises. */
#pragma once
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <pthread.h>
#include <sched.h>
#endif

#define mi_atomic_load_relaxed(p)        atomic_load_explicit(p, memory_order_relaxed)
#define mi_atomic_load_acquire(p)        atomic_load_explicit(p, memory_order_acquire)
#define mi_atomic_store_relaxed(p, x)    atomic_store_explicit(p, x, memory_order_relaxed)
#define mi_atomic_store_release(p, x)    atomic_store_explicit(p, x, memory_order_release)
#define mi_atomic_exchange_acq_rel(p, x) atomic_exchange_explicit(p, x, memory_order_acq_rel)
#define mi_atomic_add_relaxed(p, x)      atomic_fetch_add_explicit(p, x, memory_order_relaxed)
#define mi_atomic_sub_relaxed(p, x)      atomic_fetch_sub_explicit(p, x, memory_order_relaxed)
#define mi_atomic_or_acq_rel(p, x)       atomic_fetch_or_explicit(p, x, memory_order_acq_rel)
#define mi_atomic_and_acq_rel(p, x)      atomic_fetch_and_explicit(p, x, memory_order_acq_rel)
/* Sequentially consistent: for handshakes where each side stores, then loads what the other
   stored (purger.c); a fence instead is not understood by ThreadSanitizer. */
#define mi_atomic_load_seq_cst(p)        atomic_load(p)
#define mi_atomic_store_seq_cst(p, x)    atomic_store(p, x)
#define mi_atomic_cas_weak_seq_cst(p, expected, desired)   atomic_compare_exchange_weak(p, expected, desired)
#define mi_atomic_cas_strong_seq_cst(p, expected, desired) atomic_compare_exchange_strong(p, expected, desired)
/* On failure `*expected` receives the current value. */
#define mi_atomic_cas_weak_release(p, expected, desired) \
  atomic_compare_exchange_weak_explicit(p, expected, desired, memory_order_release, memory_order_relaxed)
#define mi_atomic_cas_weak_acq_rel(p, expected, desired) \
  atomic_compare_exchange_weak_explicit(p, expected, desired, memory_order_acq_rel, memory_order_acquire)
#define mi_atomic_cas_strong_acq_rel(p, expected, desired) \
  atomic_compare_exchange_strong_explicit(p, expected, desired, memory_order_acq_rel, memory_order_acquire)

#if defined(_WIN32)
static inline void mi_atomic_yield(void) {
  SwitchToThread();
}

/* Windows: a slim reader/writer lock, taken exclusively; like the pthread mutex below it
   never allocates and has a static initialiser (no dependency on a pthread library). */
typedef SRWLOCK mi_lock_t;
#define MI_LOCK_INIT  SRWLOCK_INIT
static inline void mi_lock_init(mi_lock_t* l)    { InitializeSRWLock(l); }
static inline void mi_lock_done(mi_lock_t* l)    { (void)l; }
static inline void mi_lock_acquire(mi_lock_t* l) { AcquireSRWLockExclusive(l); }
static inline bool mi_lock_try_acquire(mi_lock_t* l) { return (TryAcquireSRWLockExclusive(l) != 0); }
static inline void mi_lock_release(mi_lock_t* l) { ReleaseSRWLockExclusive(l); }
#else
static inline void mi_atomic_yield(void) {
  sched_yield();
}

/* A test-and-set word for locks held for short work only: where the calls of a pthread mutex
   cost more than the work (the profiler's store: about 60 instructions a lock, against 5) or
   cannot be made (the ASan tracking build, below). Zero is unlocked. A waiter spins a while
   (the holder is usually running: a profiler sample holds it about a microsecond), then yields
   (the holder may have been preempted); yielding at once made larson's threads switch 4 to 10
   times as often as with the mutex. */
typedef _Atomic(uintptr_t) mi_spin_t;
static inline bool mi_spin_try_acquire(mi_spin_t* l) {
  uintptr_t expected = 0;
  return (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
          atomic_compare_exchange_strong_explicit(l, &expected, 1, memory_order_acquire, memory_order_relaxed));
}
static inline void mi_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}
static inline void mi_spin_acquire(mi_spin_t* l) {
  for (unsigned spins = 0; !mi_spin_try_acquire(l); spins++) {
    if (spins < 200) mi_spin_pause();
    else mi_atomic_yield();
  }
}
static inline void mi_spin_release(mi_spin_t* l) { atomic_store_explicit(l, 0, memory_order_release); }

#if defined(MI_TRACK_ASAN) && MI_TRACK_ASAN
/* The ASan tracking build: AddressSanitizer allocates (through us) while it starts, before its
   interceptors of the pthread_mutex functions are set (calling one then jumps to address 0), and
   a page taken or returned takes a subprocess' lock. The spin lock instead (the lock is held for
   page-sized work only). */
typedef mi_spin_t mi_lock_t;
#define MI_LOCK_INIT  0
static inline void mi_lock_init(mi_lock_t* l)    { atomic_store_explicit(l, 0, memory_order_release); }
static inline void mi_lock_done(mi_lock_t* l)    { (void)l; }
static inline bool mi_lock_try_acquire(mi_lock_t* l) { return mi_spin_try_acquire(l); }
static inline void mi_lock_acquire(mi_lock_t* l) { mi_spin_acquire(l); }
static inline void mi_lock_release(mi_lock_t* l) { mi_spin_release(l); }
#else
/* The internal lock: only taken on slow paths (a page taken or returned, abandoned pages,
   subprocesses). A pthread mutex never allocates and is safe before constructors run (static
   initialiser). */
typedef pthread_mutex_t mi_lock_t;
#define MI_LOCK_INIT  PTHREAD_MUTEX_INITIALIZER
static inline void mi_lock_init(mi_lock_t* l)    { pthread_mutex_init(l, NULL); }
static inline void mi_lock_done(mi_lock_t* l)    { pthread_mutex_destroy(l); }
static inline void mi_lock_acquire(mi_lock_t* l) { pthread_mutex_lock(l); }
static inline bool mi_lock_try_acquire(mi_lock_t* l) { return (pthread_mutex_trylock(l) == 0); }
static inline void mi_lock_release(mi_lock_t* l) { pthread_mutex_unlock(l); }
#endif
#endif
