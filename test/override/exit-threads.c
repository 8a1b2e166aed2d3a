/* SPDX-License-Identifier: MIT */
/* exit-threads.c -- process exit while other threads are still allocating.

   A child process (this program run again) starts 8 threads in tight malloc/realloc/free loops
   that also free each other's blocks, and then
   - "exit":   calls exit(0) while they run (atexit handlers and library destructors, ours
               included, run while the threads keep allocating);
   - "return": returns 0 from main (the same, through __libc_start_main);
   - "dying":  runs batches of short-lived threads that leave live blocks behind, and calls
               exit(0) just as the last batch starts returning (their thread-exit cleanup,
               which abandons segments, races with the process exit).
   Each variant runs `reps` times with the default options, with MIMALLOC_VERBOSE=1 (which
   prints statistics and a line at exit; checked) and with MIMALLOC_DESTROY_ON_EXIT=1. Every
   child must exit 0, within a timeout, with no error message.

   Usage: ov-exit-threads [reps (50)]. Built plain, run under LD_PRELOAD. */
#define _GNU_SOURCE
#include <pthread.h>

#include "ov.h"

#define NTHREADS 8
#define NSLOTS 512

static _Atomic(void*) slots[NSLOTS];
static _Atomic(int) started, returning;
static _Atomic(long) total_ops;

static void* looper(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  atomic_fetch_add(&started, 1);
  for (long n = 0;; n++) {
    const size_t i = (size_t)test_rand_below(&rng, NSLOTS);
    size_t size = (size_t)test_rand_range(&rng, OV_HDR, (n % 50 == 0 ? 300000 : 1500));
    void* p = atomic_exchange(&slots[i], NULL);
    if (p != NULL && (n & 3) == 0) {
      void* q = realloc(p, size);   /* often another thread's block */
      if (q != NULL) { ov_stamp(q, size, n); p = q; }
    }
    else {
      free(p);
      p = ov_make(size, (uint64_t)n);
    }
    p = atomic_exchange(&slots[i], p);
    if (p != NULL && !ov_verify(p)) { fprintf(stderr, "damaged block\n"); _exit(3); }
    free(p);
    if ((n & 1023) == 0) atomic_fetch_add_explicit(&total_ops, 1024, memory_order_relaxed);
  }
  return NULL;
}

static void* short_lived(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  for (int n = 0; n < 300; n++) {
    const size_t i = (size_t)test_rand_below(&rng, NSLOTS);
    void* p = ov_make((size_t)test_rand_range(&rng, OV_HDR, 3000), (uint64_t)n);
    p = atomic_exchange(&slots[i], p);   /* leaves live blocks behind at exit */
    if (p != NULL && !ov_verify(p)) { fprintf(stderr, "damaged block\n"); _exit(3); }
    free(p);
  }
  atomic_fetch_add(&returning, 1);
  return NULL;
}

static int child(const char* variant) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (strcmp(variant, "dying") == 0) {
    for (int batch = 0; batch < 5; batch++) {
      atomic_store(&returning, 0);
      for (int i = 0; i < NTHREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, &short_lived, (void*)(uintptr_t)(batch * 100 + i + 1)) != 0) return 4;
      }
      /* earlier batches finish; the last one is cut short by the exit */
      const int wait_for = (batch < 4 ? NTHREADS : 1);
      while (atomic_load(&returning) < wait_for) sched_yield();
    }
    exit(0);
  }
  for (int i = 0; i < NTHREADS; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, &looper, (void*)(uintptr_t)(i + 1)) != 0) return 4;
  }
  while (atomic_load(&started) < NTHREADS || atomic_load(&total_ops) < 4 * 1024) sched_yield();
  if (strcmp(variant, "exit") == 0) exit(0);
  return 0;   /* "return" */
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "child") == 0) return child(argv[2]);
  const int reps = (int)test_arg(argc, argv, 1, 50);
  ov_require_override("exit-threads");

  static const char* const variants[] = { "exit", "return", "dying" };
  static const char* const env_default[] = { "MIMALLOC_VERBOSE", "MIMALLOC_DESTROY_ON_EXIT", "MIMALLOC_SHOW_STATS", NULL };
  static const char* const env_verbose[] = { "MIMALLOC_VERBOSE=1", "MIMALLOC_DESTROY_ON_EXIT", NULL };
  static const char* const env_destroy[] = { "MIMALLOC_VERBOSE", "MIMALLOC_DESTROY_ON_EXIT=1", NULL };
  static const char* const* const envs[] = { env_default, env_verbose, env_destroy };
  static const char* const env_names[] = { "default", "MIMALLOC_VERBOSE=1", "MIMALLOC_DESTROY_ON_EXIT=1" };

  ov_run_t* run = (ov_run_t*)malloc(sizeof(ov_run_t));
  int runs = 0, bad = 0;
  uint64_t slowest = 0;
  for (int e = 0; e < 3; e++) {
    for (int v = 0; v < 3; v++) {
      for (int r = 0; r < reps && bad < 5; r++) {
        char* child_argv[] = { argv[0], (char*)"child", (char*)variants[v], NULL };
        const uint64_t t0 = ov_now_ms();
        ov_run_self(child_argv, envs[e], 15000, run);
        const uint64_t dt = ov_now_ms() - t0;
        if (dt > slowest) slowest = dt;
        runs++;
        char st[64];
        const bool exited = !run->timed_out && WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0;
        const bool said_done = (e != 1 || strstr(run->err, "mimalloc: process done") != NULL);
        const bool no_errors = (strstr(run->err, "error:") == NULL && strstr(run->err, "damaged") == NULL);
        if (!exited || !said_done || !no_errors) bad++;
        CHECK_MSG(exited, "%s, %s, run %d: %s%s\nstderr:\n%.2000s", variants[v], env_names[e], r,
                  ov_status_str(run->status, st, sizeof(st)), (run->timed_out ? " (hung: killed)" : ""), run->err);
        CHECK_MSG(said_done, "%s, %s, run %d: no 'process done' line at exit; stderr:\n%.2000s", variants[v], env_names[e], r, run->err);
        CHECK_MSG(no_errors, "%s, %s, run %d: errors on stderr:\n%.2000s", variants[v], env_names[e], r, run->err);
      }
    }
  }
  free(run);
  return test_summary("override-exit-threads", "%d child processes (3 variants x 3 option sets), %d bad, slowest %llu ms",
                      runs, bad, (unsigned long long)slowest);
}
