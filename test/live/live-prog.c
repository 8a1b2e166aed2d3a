/* SPDX-License-Identifier: MIT */
/* The program run-live.py watches: three worker threads hold known numbers of blocks of known
   sizes, in phases the driver steps through stdin, and publish with mi_collect at each:
     phase 1  worker i holds COUNT[i] blocks of SIZE[i] bytes          -> "ready 1"
     phase 2  every other one is freed (COUNT[i]/2 left): half of those by the main thread
              first (frees from another thread), then the rest by the worker -> "ready 2"
     phase 3  nothing changes; it publishes again (after a reset)     -> "ready 3"
     phase 4  it frees the rest and ends                              -> "ready 4"
   then the main thread waits for a last line and exits. "tid i T" lines give the workers' OS
   thread ids; with the argument "fork", the main thread forks after phase 1, twice: the first
   child allocates and publishes (it must not write into the parent's figures), printing
   "child P S"; the second asks for its own file (mi_option_set(mi_option_live, 1)), checks
   that it shows its main thread with 6001 allocations (1000 of them in a heap it deleted, one
   the heap itself), and exits, printing "child-live P S"
   (S: exit status, 0 when its checks passed).
   Before phase 1 the main thread frees an 8 MiB block and purges it (mi_collect(true)), so
   that the process document's `purged` and `purge_calls` are not zero (the page shows them).
   Blocks come from mi_malloc (sanitizer builds do not override malloc). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <mimalloc.h>

#define WORKERS 3
static const size_t SIZE[WORKERS] = { 48, 1000, 20000 };
static const size_t COUNT[WORKERS] = { 3000, 800, 60 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int phase = 0;          /* the phase the workers are asked to do */
static int done[5];           /* per phase 1..4: workers that finished it */
static long tids[WORKERS];
static void** worker_blocks[WORKERS];

static void wait_phase(int p) {
  pthread_mutex_lock(&lock);
  while (phase < p) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
}
static void finished(int p) {
  pthread_mutex_lock(&lock);
  done[p]++;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
}

static void* worker(void* arg) {
  const int i = (int)(intptr_t)arg;
  char name[16];
  snprintf(name, sizeof(name), "live-worker-%d", i);
  pthread_setname_np(pthread_self(), name);
  tids[i] = (long)syscall(SYS_gettid);
  void** blocks = (void**)mi_malloc(COUNT[i] * sizeof(void*));   /* counted: one more block */
  worker_blocks[i] = blocks;
  wait_phase(1);
  for (size_t k = 0; k < COUNT[i]; k++) { blocks[k] = mi_malloc(SIZE[i]); memset(blocks[k], 1, SIZE[i]); }
  mi_collect(false);
  finished(1);
  wait_phase(2);
  for (size_t k = 0; k < COUNT[i]; k += 4) { mi_free(blocks[k]); blocks[k] = NULL; }   /* k % 4 == 2: freed by main */
  mi_collect(false);
  finished(2);
  wait_phase(3);
  mi_collect(false);
  finished(3);
  wait_phase(4);
  for (size_t k = 0; k < COUNT[i]; k++) mi_free(blocks[k]);
  mi_free(blocks);
  finished(4);
  return NULL;
}

static void step(int p) {
  char line[64];
  if (p > 1 && fgets(line, sizeof(line), stdin) == NULL) exit(3);
  if (p == 2) {   /* frees from another thread: the workers wait for the phase */
    for (int i = 0; i < WORKERS; i++) {
      for (size_t k = 2; k < COUNT[i]; k += 4) { mi_free(worker_blocks[i][k]); worker_blocks[i][k] = NULL; }
    }
  }
  pthread_mutex_lock(&lock);
  phase = p;
  pthread_cond_broadcast(&cond);
  while (done[p] < WORKERS) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
}

/* The second fork child: starts its own publishing and finds itself in its file (0), else
   the step that failed. exit() then removes the file. */
static int child_with_live(void) {
  mi_option_set(mi_option_live, 1);
  mi_collect(false);                       /* its first publication: counting starts */
  void* keep[5000];
  for (int k = 0; k < 5000; k++) keep[k] = mi_malloc(64);
  /* 1000 more in a heap of an exclusive arena: mi_heap_delete hands its pages over (abandons
     them, no other heap of the thread uses that arena), which are neither frees nor fewer
     allocations */
  mi_arena_id_t arena;
  if (mi_reserve_os_memory_ex(64u << 20, false, false, true, &arena) != 0) return 8;
  mi_heap_t* heap = mi_heap_new_in_arena(arena);
  if (heap == NULL) return 8;
  for (int k = 0; k < 1000; k++) { if (mi_heap_malloc(heap, 32) == NULL) return 8; }
  mi_heap_delete(heap);
  mi_collect(false);
  char path[64];
  snprintf(path, sizeof(path), "/dev/shm/mimalloc-live.%ld", (long)getpid());
  FILE* f = fopen(path, "rb");
  if (f == NULL) return 5;
  const size_t cap = 8u << 20;
  char* buf = (char*)mi_malloc(cap);
  const size_t len = fread(buf, 1, cap, f);
  fclose(f);
  char want[64];
  snprintf(want, sizeof(want), "\"tid\": %ld,", (long)syscall(SYS_gettid));
  int rc = 0;
  if (memmem(buf, len, want, strlen(want)) == NULL) rc = 6;
  else if (memmem(buf, len, "\"allocs\": 6001,", 15) == NULL) rc = 7;
  mi_free(buf);
  for (int k = 0; k < 5000; k++) mi_free(keep[k]);
  return rc;
}

int main(int argc, char** argv) {
  const bool do_fork = (argc > 1 && strcmp(argv[1], "fork") == 0);
  setvbuf(stdout, NULL, _IOLBF, 0);
  void* big = mi_malloc(8u << 20);
  memset(big, 1, 8u << 20);
  mi_free(big);
  mi_collect(true);
  pthread_t t[WORKERS];
  for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, &worker, (void*)(intptr_t)i);
  step(1);
  for (int i = 0; i < WORKERS; i++) printf("tid %d %ld %zu %zu\n", i, tids[i], SIZE[i], COUNT[i]);
  if (do_fork) {
    const pid_t child = fork();
    if (child == 0) {
      void* keep[5000];
      for (int k = 0; k < 5000; k++) keep[k] = mi_malloc(64);
      mi_collect(false);
      for (int k = 0; k < 5000; k++) mi_free(keep[k]);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("child %ld %d\n", (long)child, (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    const pid_t child2 = fork();
    if (child2 == 0) exit(child_with_live());
    waitpid(child2, &status, 0);
    printf("child-live %ld %d\n", (long)child2, (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  printf("ready 1\n");
  step(2);
  printf("ready 2\n");
  step(3);
  printf("ready 3\n");
  step(4);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  printf("ready 4\n");
  char line[64];
  if (fgets(line, sizeof(line), stdin) == NULL) return 3;
  return 0;
}
