/* SPDX-License-Identifier: MIT */
/* A program with known allocation sites, for the profiler's checks (check-profile.py):
     alloc_sixty   60% of the bytes, main thread, all freed
     alloc_thirty  30%, another thread, all freed
     alloc_ten     10%, main thread, never freed (the leak)
     alloc_in_heap blocks of a first-class heap that mi_heap_destroy releases without frees
   It prints "site <name> <bytes>" with the bytes each site allocated (usable sizes), so the
   script can compare the profile's estimates with the truth. It calls mi_malloc and mi_free,
   or with PROF_SITES_MALLOC malloc and free (the library's override; not in sanitizer builds,
   which intercept malloc).
   Modes:
     (none)   the profiler is switched on by MIMALLOC_PROFILE (or not: then mi_profile_dump
              must fail and no file appear)
     --api D  mi_profile_start from main while a thread is already allocating; dumps to D
     --fork D forks children while a thread samples; each child allocates, dumps to D.<pid>
              and exits (no deadlock, files from every process) */
#include <mimalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(PROF_SITES_MALLOC)
#define ALLOC(n)  malloc(n)
#define FREE(p)   free(p)
#else
#define ALLOC(n)  mi_malloc(n)
#define FREE(p)   mi_free(p)
#endif

#define BLOCK 100          /* requested; the usable size is counted */
#define N_SIXTY 600000
#define N_THIRTY 300000
#define N_TEN 100000
#define N_HEAP 50000

static void* volatile sink;

__attribute__((noinline)) void* alloc_sixty(size_t n) { void* p = ALLOC(n); memset(p, 1, 8); return p; }
__attribute__((noinline)) void* alloc_thirty(size_t n) { void* p = ALLOC(n); memset(p, 2, 8); return p; }
__attribute__((noinline)) void* alloc_ten(size_t n) { void* p = ALLOC(n); memset(p, 3, 8); return p; }
__attribute__((noinline)) void* alloc_in_heap(mi_heap_t* heap, size_t n) { void* p = mi_heap_malloc(heap, n); memset(p, 4, 8); return p; }

static size_t usable(size_t n) { void* p = ALLOC(n); size_t u = mi_usable_size(p); FREE(p); return u; }

static atomic_int go;
/* in batches of 10000 live blocks: pages run out, so the thread takes its allocation slow path
   (where a thread that was running before mi_profile_start joins the profiler) */
#define BATCH 10000
static void* thirty_main(void* arg) {
  (void)arg;
  static void* batch[BATCH];
  while (!go) { void* p = ALLOC(BLOCK); FREE(p); }   /* --api: allocating before the start */
  for (int i = 0; i < N_THIRTY; i += BATCH) {
    for (int j = 0; j < BATCH; j++) batch[j] = alloc_thirty(BLOCK);
    for (int j = 0; j < BATCH; j++) FREE(batch[j]);
  }
  return NULL;
}

static void* churn_main(void* arg) {   /* --fork: samples while the main thread forks */
  (void)arg;
  while (!go) { void* p = alloc_sixty(BLOCK * 50); FREE(p); }
  return NULL;
}

static int run_sites(void) {
  pthread_t t;
  go = 1;
  if (pthread_create(&t, NULL, thirty_main, NULL) != 0) return 1;
  for (int i = 0; i < N_SIXTY; i++) { void* p = alloc_sixty(BLOCK); FREE(p); }
  static void* keep[N_TEN];
  for (int i = 0; i < N_TEN; i++) keep[i] = alloc_ten(BLOCK);
  sink = keep;
  mi_heap_t* heap = mi_heap_new();
  for (int i = 0; i < N_HEAP; i++) sink = alloc_in_heap(heap, BLOCK);
  mi_heap_destroy(heap);
  pthread_join(t, NULL);
  const size_t u = usable(BLOCK);
  printf("site alloc_sixty %zu\nsite alloc_thirty %zu\nsite alloc_ten %zu\nsite alloc_in_heap %zu\n",
         (size_t)N_SIXTY * u, (size_t)N_THIRTY * u, (size_t)N_TEN * u, (size_t)N_HEAP * u);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 1) {
    const char* env = getenv("MIMALLOC_PROFILE");
    const int rc = run_sites();
    if (env == NULL || env[0] == 0) {
      /* off: nothing to dump */
      if (mi_profile_dump("/nonexistent-dir/should-not-be-written")) { fprintf(stderr, "mi_profile_dump succeeded with the profiler off\n"); return 1; }
      printf("profiler off: dump refused\n");
    }
    return rc;
  }
  if (argc == 3 && strcmp(argv[1], "--api") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, thirty_main, NULL) != 0) return 1;
    usleep(20000);   /* the thread allocates before the profiler starts */
    if (!mi_profile_start(16384)) { fprintf(stderr, "mi_profile_start failed\n"); return 1; }
    go = 1;
    for (int i = 0; i < N_SIXTY; i++) { void* p = alloc_sixty(BLOCK); FREE(p); }
    pthread_join(t, NULL);
    if (!mi_profile_dump(argv[2])) { fprintf(stderr, "mi_profile_dump failed\n"); return 1; }
    const size_t u = usable(BLOCK);
    printf("site alloc_sixty %zu\nsite alloc_thirty %zu\n", (size_t)N_SIXTY * u, (size_t)N_THIRTY * u);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "--fork") == 0) {
    if (!mi_profile_start(4096)) { fprintf(stderr, "mi_profile_start failed\n"); return 1; }
    pthread_t t;
    if (pthread_create(&t, NULL, churn_main, NULL) != 0) return 1;
    int children = 0;
    for (int k = 0; k < 8; k++) {
      for (int i = 0; i < 20000; i++) { void* p = alloc_sixty(BLOCK); FREE(p); }
      const pid_t pid = fork();
      if (pid < 0) { perror("fork"); return 1; }
      if (pid == 0) {
        for (int i = 0; i < 20000; i++) sink = alloc_ten(BLOCK);   /* the child's own samples */
        char path[512];
        snprintf(path, sizeof(path), "%s.%d", argv[2], (int)getpid());
        _exit(mi_profile_dump(path) ? 0 : 3);
      }
      int status = 0;
      if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child %d failed (status %d)\n", (int)pid, status);
        return 1;
      }
      children++;
    }
    go = 1;
    pthread_join(t, NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s.parent", argv[2]);
    if (!mi_profile_dump(path)) { fprintf(stderr, "parent dump failed\n"); return 1; }
    printf("children %d\n", children);
    return 0;
  }
  fprintf(stderr, "usage: prof-sites [--api DIR | --fork DIR]\n");
  return 2;
}
