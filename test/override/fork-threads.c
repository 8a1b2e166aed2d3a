/* SPDX-License-Identifier: MIT */
/* fork-threads.c -- fork() in a multi-threaded program.

   Worker threads allocate, reallocate and free continuously and trade blocks through shared
   slots (so most frees are cross-thread); a churner thread keeps starting short-lived threads
   that leave blocks in the slots when they exit (abandoned segments) and collects (reclaim),
   so the allocator's locks are in use too; the main thread also hands out bursts of its own
   small blocks for the workers to free (cross-thread frees into its full pages go through the
   delayed-free handshake), and forks meanwhile. Each child takes over the blocks it finds in
   the slots (allocated by threads that do not exist in the child), verifies them, reallocates
   half of them and frees them all, churns its own allocations, runs a thread that allocates
   and exits with live blocks, calls mi_collect(true) and exits 0. The parent waits with a
   timeout: a hang or a non-zero status fails the test.

   Usage: ov-fork-threads [forks (100)] [workers (4)]. Built plain, run under LD_PRELOAD. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>

#include "ov.h"

#define NSLOTS 1024
#define CHILD_TIMEOUT_MS 10000

static _Atomic(void*) slots[NSLOTS];
static _Atomic(int) stop;
static _Atomic(long) worker_ops;

static size_t pick_size(test_rng_t* r) {
  const uint64_t k = test_rand_below(r, 1000);
  if (k < 900) return (size_t)test_rand_range(r, OV_HDR, 512);
  if (k < 990) return (size_t)test_rand_range(r, 512, 16 * OV_KiB);
  if (k < 999) return (size_t)test_rand_range(r, 16 * OV_KiB, 600 * OV_KiB);
  return (size_t)test_rand_range(r, 2 * OV_MiB, 5 * OV_MiB);   /* huge: its own segment */
}

/* realloc a stamped block and re-stamp it; verifies the prefix survived */
static void* restamp_realloc(void* p, size_t newsize, uint64_t seed) {
  const size_t old = ov_size(p);
  const uint64_t oldseed = ((uint64_t*)p)[1];
  if (newsize < OV_HDR) newsize = OV_HDR;
  void* q = realloc(p, newsize);
  CHECK(q != NULL);
  if (q == NULL) return p;
  /* the header still says the old size: check what was kept */
  CHECK_MSG(ov_verify_prefix(q, (old < newsize ? old : newsize), oldseed), "realloc lost the contents");
  ov_stamp(q, newsize, seed);
  return q;
}

static void* worker(void* arg) {
  /* lowest priority: the workers take whatever CPU the forking thread and the children leave,
     so on two cores one runs next to every fork, without starving the test's progress */
  setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
  test_rng_t rng = { (uint64_t)(uintptr_t)arg * 7919 + 1 };
  void* local[64] = { NULL };
  long ops = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    const size_t i = (size_t)test_rand_below(&rng, NSLOTS);
    const uint64_t action = test_rand_below(&rng, 10);
    if (action < 6) {
      /* trade through a slot: take what is there, put a fresh block back */
      void* p = atomic_exchange(&slots[i], NULL);
      if (p != NULL) {
        CHECK_MSG(ov_verify(p), "a traded block was damaged");
        if (action == 0) p = restamp_realloc(p, pick_size(&rng), test_rand(&rng));   /* cross-thread realloc */
        else { free(p); p = NULL; }
      }
      if (p == NULL) p = ov_make(pick_size(&rng), test_rand(&rng));
      void* old = atomic_exchange(&slots[i], p);
      if (old != NULL) { CHECK(ov_verify(old)); free(old); }
    }
    else {
      /* local churn */
      const size_t j = (size_t)test_rand_below(&rng, 64);
      if (local[j] != NULL) { CHECK(ov_verify(local[j])); free(local[j]); }
      local[j] = ov_make(pick_size(&rng), test_rand(&rng));
    }
    ops++;
  }
  for (size_t j = 0; j < 64; j++) free(local[j]);
  atomic_fetch_add(&worker_ops, ops);
  return NULL;
}

/* a short-lived thread: trades a few blocks, exits with some of its own in the slots */
static void* short_lived(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  for (int k = 0; k < 100; k++) {
    void* p = ov_make((size_t)test_rand_range(&rng, OV_HDR, 2000), test_rand(&rng));
    p = atomic_exchange(&slots[test_rand_below(&rng, NSLOTS)], p);
    if (p != NULL) { CHECK(ov_verify(p)); free(p); }
  }
  return NULL;
}

static void* churner(void* arg) {
  setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
  uint64_t seed = (uint64_t)(uintptr_t)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    pthread_t t;
    if (pthread_create(&t, NULL, &short_lived, (void*)(uintptr_t)(++seed)) == 0) pthread_join(t, NULL);
    if (seed % 4 == 0) mi_collect(true);
  }
  return NULL;
}

static void* child_thread(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  void** keep = (void**)arg;   /* live blocks left for the main thread to free after the exit */
  void* live[128] = { NULL };
  for (int k = 0; k < 3000; k++) {
    const size_t j = (size_t)test_rand_below(&rng, 128);
    if (live[j] != NULL) { CHECK(ov_verify(live[j])); free(live[j]); }
    live[j] = ov_make(pick_size(&rng), test_rand(&rng));
  }
  for (size_t j = 0; j < 128; j++) keep[j] = live[j];
  return NULL;
}

/* Runs in the forked child: only this thread exists. Returns the exit status. */
static int child_main(uint64_t seed) {
  const long failures_before = test_failure_count();   /* the parent's, inherited */
  /* blocks of the parent's threads */
  size_t taken = 0;
  for (size_t i = 0; i < NSLOTS; i++) {
    void* p = atomic_exchange(&slots[i], NULL);
    if (p == NULL) continue;
    taken++;
    CHECK_MSG(ov_verify(p), "child: a block of the parent was damaged");
    if (i % 2 == 0) p = restamp_realloc(p, ov_size(p) * 2 + 32, seed + i);
    free(p);
  }
  /* our own allocations */
  test_rng_t rng = { seed };
  void* live[256] = { NULL };
  for (int k = 0; k < 10000; k++) {
    const size_t j = (size_t)test_rand_below(&rng, 256);
    if (live[j] != NULL) {
      CHECK(ov_verify(live[j]));
      if (k % 7 == 0) { live[j] = restamp_realloc(live[j], pick_size(&rng), test_rand(&rng)); continue; }
      free(live[j]);
    }
    live[j] = ov_make(pick_size(&rng), test_rand(&rng));
  }
  /* a thread that allocates and exits with live blocks (its segments are abandoned) */
  void* keep[128] = { NULL };
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &child_thread, keep) == 0);
  pthread_join(t, NULL);
  mi_collect(true);   /* reclaims the abandoned segments */
  for (size_t j = 0; j < 128; j++) { if (keep[j] != NULL) { CHECK(ov_verify(keep[j])); free(keep[j]); } }
  for (size_t j = 0; j < 256; j++) { if (live[j] != NULL) { CHECK(ov_verify(live[j])); free(live[j]); } }
  mi_collect(true);
  if (taken == 0) fprintf(stderr, "note: child found no blocks in the slots\n");
  return (test_failure_count() == failures_before ? 0 : 1);
}

int main(int argc, char** argv) {
  const int nforks = (int)test_arg(argc, argv, 1, 100);
  const int nworkers = (int)test_arg(argc, argv, 2, 4);
  ov_require_override("fork-threads");

  pthread_t workers[64], churn;
  for (int i = 0; i < nworkers && i < 64; i++) pthread_create(&workers[i], NULL, &worker, (void*)(uintptr_t)(i + 1));
  pthread_create(&churn, NULL, &churner, (void*)(uintptr_t)1000000);

  test_rng_t rng = { 12345 };
  int hung = 0, failed = 0;
  uint64_t slowest = 0;
  for (int f = 0; f < nforks; f++) {
    /* a burst of the main thread's small blocks for the workers to free cross-thread */
    for (int k = 0; k < 200; k++) {
      void* p = ov_make((size_t)test_rand_range(&rng, OV_HDR, 256), test_rand(&rng));
      void* old = atomic_exchange(&slots[test_rand_below(&rng, NSLOTS)], p);
      if (old != NULL) { CHECK(ov_verify(old)); free(old); }
    }
    fflush(stdout); fflush(stderr);
    const uint64_t t0 = ov_now_ms();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) break;
    if (pid == 0) exit(child_main((uint64_t)f * 1000003 + 17));
    int status = 0;
    char st[64];
    if (!ov_wait(pid, CHILD_TIMEOUT_MS, &status)) {
      hung++;
      CHECK_MSG(false, "fork %d: the child hung (killed after %d ms)", f, CHILD_TIMEOUT_MS);
    }
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
      CHECK_MSG(false, "fork %d: the child failed: %s", f, ov_status_str(status, st, sizeof(st)));
    }
    else CHECK(true);
    const uint64_t dt = ov_now_ms() - t0;
    if (dt > slowest) slowest = dt;
    if (hung + failed >= 5) break;   /* enough evidence */
  }

  atomic_store(&stop, 1);
  for (int i = 0; i < nworkers && i < 64; i++) pthread_join(workers[i], NULL);
  pthread_join(churn, NULL);
  for (size_t i = 0; i < NSLOTS; i++) {
    void* p = atomic_exchange(&slots[i], NULL);
    if (p != NULL) { CHECK(ov_verify(p)); free(p); }
  }
  CHECK_MSG(atomic_load(&worker_ops) > 1000, "the workers made only %ld operations", atomic_load(&worker_ops));
  return test_summary("override-fork-threads", "%d forks with %d threads running, %ld worker operations, %d hung, %d failed, slowest child %llu ms",
                      nforks, nworkers, atomic_load(&worker_ops), hung, failed, (unsigned long long)slowest);
}
