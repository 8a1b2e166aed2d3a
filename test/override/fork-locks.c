/* SPDX-License-Identifier: MIT */
/* fork-locks.c -- the allocator's internal locks are fork-safe.

   The abandoned-segment lock is taken when a thread exits with live blocks (its segments are
   abandoned), by mi_collect(true) (reclaim) and, for a whole walk, by
   mi_abandoned_visit_blocks. Background threads do all three continuously:
   - spawners create short-lived threads that allocate, free blocks of earlier threads and exit
     leaving live blocks in a shared pool;
   - collectors call mi_collect(true) in a loop;
   - a visitor walks the abandoned blocks with a slow visitor (holding the lock a long time
     makes a fork while it is held likely, not just possible).
   Meanwhile the main thread forks ~200 times. Each child at once calls mi_collect(true), runs
   a thread that allocates and exits with live blocks (abandon: takes the lock), collects again
   (reclaim: takes the lock), frees blocks of the parent's threads and exits. A lock inherited
   in the locked state would hang the child: the parent kills it after a few seconds and fails.

   Usage: ov-fork-locks [forks (200)] [child timeout ms (5000)] [visitor 1|0 (1)].
   Linked with libmimalloc. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "ov.h"

#define NPOOL 2048
#define NSPAWNERS 2
#define NCOLLECTORS 1

static _Atomic(void*) pool[NPOOL];
static _Atomic(int) stop;
static _Atomic(long) threads_made, collects, visits, visited_blocks;

static void pool_put(void* p, size_t i) {
  void* old = atomic_exchange(&pool[i % NPOOL], p);
  if (old != NULL) { CHECK_MSG(ov_verify(old), "a pooled block was damaged"); free(old); }
}

/* a short-lived thread: allocates, frees others' blocks, exits with live blocks in the pool */
static void* short_lived(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  void* local[64];
  for (int i = 0; i < 64; i++) local[i] = ov_make((size_t)test_rand_range(&rng, OV_HDR, (i % 16 == 0 ? 70000 : 2000)), test_rand(&rng));
  for (int i = 0; i < 64; i += 2) { CHECK(local[i] == NULL || ov_verify(local[i])); free(local[i]); }
  for (int i = 1; i < 64; i += 2) pool_put(local[i], (size_t)test_rand(&rng));
  return NULL;
}

static void* spawner(void* arg) {
  uint64_t seed = (uint64_t)(uintptr_t)arg * 1000000;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    pthread_t t;
    if (pthread_create(&t, NULL, &short_lived, (void*)(uintptr_t)(++seed)) == 0) {
      pthread_join(t, NULL);
      atomic_fetch_add_explicit(&threads_made, 1, memory_order_relaxed);
    }
  }
  return NULL;
}

static void* collector(void* arg) {
  (void)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    mi_collect(true);   /* reclaims every abandoned segment, under the lock */
    free(ov_make(100, 1));
    atomic_fetch_add_explicit(&collects, 1, memory_order_relaxed);
  }
  return NULL;
}

/* runs under the abandoned-segment lock: no allocation here, just time */
static bool slow_visitor(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size; (void)arg;
  if (block == NULL) {
    for (volatile int i = 0; i < 2000; i++) { }
  }
  else {
    atomic_fetch_add_explicit(&visited_blocks, 1, memory_order_relaxed);
  }
  return true;
}

static void* visitor(void* arg) {
  (void)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    mi_abandoned_visit_blocks(mi_subproc_main(), -1, true, &slow_visitor, NULL);
    atomic_fetch_add_explicit(&visits, 1, memory_order_relaxed);
    sched_yield();
  }
  return NULL;
}

static void* child_thread(void* arg) {
  void** keep = (void**)arg;
  for (int i = 0; i < 200; i++) {
    void* p = ov_make(16 + (size_t)i * 37, (uint64_t)i);
    if (i % 2 == 0) keep[i / 2] = p;   /* live at exit: abandoned */
    else free(p);
  }
  return NULL;
}

static int child_main(void) {
  const long failures_before = test_failure_count();   /* the parent's, inherited */
  mi_collect(true);   /* reclaim: takes the abandoned-segment lock */
  void* keep[100] = { NULL };
  pthread_t t;
  if (pthread_create(&t, NULL, &child_thread, keep) != 0) return 3;
  pthread_join(t, NULL);   /* its exit abandoned its segments under the lock */
  mi_collect(true);
  for (int i = 0; i < 100; i++) { CHECK(keep[i] != NULL && ov_verify(keep[i])); free(keep[i]); }
  for (size_t i = 0; i < NPOOL; i += 3) {   /* blocks of the parent's threads */
    void* p = atomic_exchange(&pool[i], NULL);
    if (p != NULL) { CHECK(ov_verify(p)); free(p); }
  }
  mi_collect(true);
  return (test_failure_count() == failures_before ? 0 : 1);
}

int main(int argc, char** argv) {
  const int nforks = (int)test_arg(argc, argv, 1, 200);
  const int timeout_ms = (int)test_arg(argc, argv, 2, 5000);
  const bool use_visitor = (test_arg(argc, argv, 3, 1) != 0);
  ov_require_override("fork-locks");
  mi_option_enable(mi_option_visit_abandoned);   /* before any thread: allows mi_abandoned_visit_blocks */

  pthread_t bg[NSPAWNERS + NCOLLECTORS + 1];
  int nbg = 0;
  for (int i = 0; i < NSPAWNERS; i++) pthread_create(&bg[nbg++], NULL, &spawner, (void*)(uintptr_t)(i + 1));
  for (int i = 0; i < NCOLLECTORS; i++) pthread_create(&bg[nbg++], NULL, &collector, NULL);
  if (use_visitor) pthread_create(&bg[nbg++], NULL, &visitor, NULL);
  while (atomic_load(&threads_made) < 20) usleep(1000);   /* let the churn get going */

  int hung = 0, failed = 0, done = 0;
  for (int f = 0; f < nforks && hung + failed < 3; f++) {
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) break;
    if (pid == 0) _exit(child_main());   /* _exit: the verdict is the child's own checks */
    int status = 0;
    char st[64];
    if (!ov_wait(pid, (uint64_t)timeout_ms, &status)) {
      hung++;
      CHECK_MSG(false, "fork %d: the child deadlocked (no exit within %d ms)", f, timeout_ms);
    }
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
      CHECK_MSG(false, "fork %d: the child failed: %s", f, ov_status_str(status, st, sizeof(st)));
    }
    else done++;
  }

  atomic_store(&stop, 1);
  for (int i = 0; i < nbg; i++) pthread_join(bg[i], NULL);
  for (size_t i = 0; i < NPOOL; i++) {
    void* p = atomic_exchange(&pool[i], NULL);
    if (p != NULL) { CHECK(ov_verify(p)); free(p); }
  }
  CHECK_MSG(atomic_load(&threads_made) > 100, "only %ld short-lived threads", atomic_load(&threads_made));
  CHECK_MSG(atomic_load(&collects) > 10, "only %ld collects", atomic_load(&collects));
  CHECK_MSG(!use_visitor || atomic_load(&visited_blocks) > 0, "the visitor never saw an abandoned block (%ld walks)", atomic_load(&visits));
  return test_summary("override-fork-locks" OV_SUFFIX, "%d of %d children finished, %d deadlocked, %d failed; %ld short-lived threads, %ld collects, %ld abandoned walks (%ld blocks)",
                      done, nforks, hung, failed, atomic_load(&threads_made), atomic_load(&collects), atomic_load(&visits), atomic_load(&visited_blocks));
}
