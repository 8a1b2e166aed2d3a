/* SPDX-License-Identifier: MIT */
/* Consumer written for mimalloc 3.x, built by run-consumers.sh through the installed package's
   mimalloc-v3 targets and the mimalloc-v3 pkg-config module, which must define MI_V3_API: the
   source has no #define of its own, and without the definition it does not compile (v3-only
   names: mi_option_page_reclaim_on_free, mi_heap_theap; the typed macros in v3's argument
   order). Two threads allocate in one heap from mi_heap_new (v3: any thread may), the main
   thread checks and frees their blocks, then deletes the heap. Prints the version and the
   mapped library as main.c does; exits nonzero on any failure.
   Usage: consumer-v3 [ignored]   (run-consumers.sh passes the override flag to every consumer) */
#include <mimalloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"

#define BLOCKS 2000   /* per thread */

typedef struct worker_s {
  mi_heap_t* heap;          /* shared by both workers */
  unsigned char tag;        /* fill byte of this worker's blocks */
  mi_theap_t* theap;        /* this thread's part of the heap */
  unsigned char* blocks[BLOCKS];
  size_t sizes[BLOCKS];
  int failed;
} worker_t;

static int failures = 0;

/* the workers meet twice, so that both run at once and their parts of the heap coexist: each
   waits until `target` arrivals in all (2, then 4); a mutex and a condition variable, as
   pthread barriers are not everywhere (macOS) */
static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static int arrived = 0;
static void meet(int target) {
  pthread_mutex_lock(&meet_lock);
  arrived++;
  pthread_cond_broadcast(&meet_cond);
  while (arrived < target) pthread_cond_wait(&meet_cond, &meet_lock);
  pthread_mutex_unlock(&meet_lock);
}

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

/* small sizes, with a medium and a large block now and then */
static size_t block_size(size_t i) {
  if (i % 500 == 499) return 300 * 1024;
  if (i % 50 == 49) return 20 * 1024;
  return 8 + (i % 64) * 16;
}

static void* work(void* arg) {
  worker_t* w = (worker_t*)arg;
  meet(2);
  w->theap = mi_heap_theap(w->heap);   /* v3: this thread's part, made on first use */
  for (size_t i = 0; i < BLOCKS; i++) {
    const size_t size = block_size(i);
    unsigned char* p = (unsigned char*)mi_heap_malloc(w->heap, size);
    if (p == NULL) { w->failed = 1; break; }
    memset(p, w->tag, size);
    w->blocks[i] = p;
    w->sizes[i] = size;
  }
  meet(4);   /* neither part ends before both were taken */
  return NULL;
}

static int filled(const unsigned char* p, size_t size, unsigned char tag) {
  for (size_t i = 0; i < size; i++) {
    if (p[i] != tag) return 0;
  }
  return 1;
}

int main(void) {
  /* v3's option names and numbers; its new options keep what the program sets */
  mi_option_set(mi_option_page_reclaim_on_free, 1);
  CHECK(mi_option_get(mi_option_page_reclaim_on_free) == 1);

  mi_heap_t* heap = mi_heap_new();
  CHECK(heap != NULL);
  if (heap == NULL) return 1;

  static worker_t workers[2];
  pthread_t threads[2];
  for (int t = 0; t < 2; t++) {
    workers[t].heap = heap;
    workers[t].tag = (unsigned char)(0xA0 + t);
    CHECK(pthread_create(&threads[t], NULL, work, &workers[t]) == 0);
  }
  for (int t = 0; t < 2; t++) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(!workers[t].failed);
    CHECK(workers[t].theap != NULL);
  }
  if (failures > 0) return 1;
  CHECK(workers[0].theap != workers[1].theap);   /* one part per thread */

  /* the main thread allocates in the same heap: the typed macro in v3's order (type first) */
  int64_t* mine = mi_heap_malloc_tp(int64_t, heap);
  CHECK(mine != NULL);
  if (mine != NULL) *mine = 42;
  CHECK(mi_heap_contains(heap, mine));

  /* every block of both threads is the heap's and intact; free worker 0's here (another thread) */
  for (int t = 0; t < 2; t++) {
    worker_t* w = &workers[t];
    for (size_t i = 0; i < BLOCKS; i++) {
      CHECK(mi_heap_contains(heap, w->blocks[i]));
      CHECK(mi_heap_of(w->blocks[i]) == heap);
      CHECK(mi_usable_size(w->blocks[i]) >= w->sizes[i]);
      CHECK(filled(w->blocks[i], w->sizes[i], w->tag));
      if (t == 0) { mi_free(w->blocks[i]); w->blocks[i] = NULL; }
    }
  }
  /* a block of the main heap is not the shared heap's */
  void* other = mi_malloc(64);
  CHECK(other != NULL && !mi_heap_contains(heap, other));
  CHECK(mi_heap_contains(mi_heap_main(), other));
  mi_free(other);

  /* delete: the blocks still live (worker 1's, the main thread's) stay valid and are freed after */
  mi_heap_delete(heap);
  for (size_t i = 0; i < BLOCKS; i++) {
    CHECK(filled(workers[1].blocks[i], workers[1].sizes[i], workers[1].tag));
    mi_free(workers[1].blocks[i]);
  }
  CHECK(mine == NULL || *mine == 42);
  mi_free(mine);

  /* the header and the library must be the same release (a system mimalloc.h would differ) */
  CHECK(mi_version() == MI_MALLOC_VERSION);
  if (failures > 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  /* only once all passed: the in-tree tests pass on these lines (CMakeLists.txt one up) */
  printf("mimalloc version: %d\n", mi_version());
  printf("v3 heap shared by 2 threads: %d blocks checked\n", 2 * BLOCKS);
  print_mapped_library();
  return 0;
}
