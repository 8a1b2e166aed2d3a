/* SPDX-License-Identifier: MIT */
/* fi-numa.c -- mi_heap_set_numa_affinity (mimalloc v3's API, MI_V3_API) on a machine that
   pretends to have two NUMA nodes: MIMALLOC_TEST_FAIL=numa:2 (src/prim/failinject.c; every
   thread is on node 0). Two arenas of the program's memory are labelled node 0 (B) and node 1
   (A); a heap with affinity 1 takes its pages from A, one without from B (the thread's node),
   from any thread that allocates in it; a new affinity applies to a part another thread
   already has; the main heap (NULL) steers every thread's backing heap; a node beyond the
   count is taken modulo; and when A cannot serve (too small, no arena reserved on demand), the
   allocation comes from elsewhere instead of failing. */
#define _GNU_SOURCE   /* MAP_ANONYMOUS, MAP_NORESERVE, pthread barriers under -std=c11 */
#define MI_V3_API
#include <mimalloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "../testing.h"

#define MIB  ((size_t)1 << 20)
#define BLOCK  (32 * MIB)   /* an arena block (the segment size) */

static mi_arena_id_t arena_a, arena_b;   /* node 1, node 0 */

static mi_arena_id_t make_arena(size_t blocks, int numa_node) {
  const size_t size = (blocks + 1) * BLOCK;   /* (one more: the arena starts at an aligned block) */
  void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(p != MAP_FAILED);
  mi_arena_id_t id = NULL;
  CHECK(mi_manage_os_memory_ex(p, size, true, false, true, numa_node, false, &id));
  CHECK(id != NULL);
  return id;
}

/* n blocks of `size` from heap: all in `arena` (want true) or none (want false) */
static void check_heap_in(mi_heap_t* heap, size_t size, int n, mi_arena_id_t arena, bool want, const char* what) {
  void* blocks[16];
  for (int i = 0; i < n; i++) {
    blocks[i] = mi_heap_malloc(heap, size);
    CHECK_MSG(blocks[i] != NULL, "%s: %zu bytes", what, size);
    if (blocks[i] == NULL) continue;
    memset(blocks[i], 0x5A, size < 4096 ? size : 4096);
    CHECK_MSG(mi_arena_contains(arena, blocks[i]) == want, "%s: block of %zu bytes at %p %s arena %p",
              what, size, blocks[i], want ? "not in" : "in", arena);
  }
  for (int i = 0; i < n; i++) mi_free(blocks[i]);
}

static void check_sizes_in(mi_heap_t* heap, mi_arena_id_t arena, bool want, const char* what) {
  check_heap_in(heap, 48, 16, arena, want, what);          /* small */
  check_heap_in(heap, 9000, 8, arena, want, what);         /* medium */
  check_heap_in(heap, 300 * 1024, 4, arena, want, what);   /* large */
  check_heap_in(heap, 40 * MIB, 1, arena, want, what);     /* huge: two arena blocks */
}

typedef struct job_s { mi_heap_t* heap; size_t size; mi_arena_id_t arena; bool want; pthread_barrier_t* step; } job_t;

/* another thread's part of the heap: its first pages follow the affinity; after the main thread
   changes it (between the barriers), its new pages (a size class it has not used) follow the new
   one */
static void* other_thread(void* arg) {
  job_t* job = (job_t*)arg;
  check_heap_in(job->heap, job->size, 8, arena_a, true, "other thread, affinity 1");
  pthread_barrier_wait(job->step);   /* the main thread sets affinity 0 */
  pthread_barrier_wait(job->step);
  check_heap_in(job->heap, 5000, 8, arena_b, true, "other thread, affinity 0 set by the main thread");
  check_heap_in(job->heap, 5000, 8, arena_a, false, "other thread, affinity 0 set by the main thread");
  return NULL;
}

int main(void) {
  const char* fi = getenv("MIMALLOC_TEST_FAIL");
  if (fi == NULL || strstr(fi, "numa:2") == NULL) {
    fprintf(stderr, "fi-numa: run with MIMALLOC_TEST_FAIL=numa:2 (a failure-injection build)\n");
    return 1;
  }
  mi_option_set(mi_option_guarded_sample_rate, 0);   /* (secure builds: guarded blocks have pages of their own) */
  arena_a = make_arena(4, 1);
  arena_b = make_arena(16, 0);

  /* a heap without affinity: the calling thread's node (0) */
  mi_heap_t* plain = mi_heap_new();
  CHECK(plain != NULL);
  check_sizes_in(plain, arena_b, true, "no affinity");

  /* affinity 1: node 1's arena for every kind of page */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  mi_heap_set_numa_affinity(h, 1);
  check_sizes_in(h, arena_a, true, "affinity 1");
  mi_heap_set_numa_affinity(h, 3);   /* modulo 2 nodes: 1 */
  check_heap_in(h, 700, 8, arena_a, true, "affinity 3 = 1");
  mi_heap_set_numa_affinity(h, -1);   /* none: node 0 again for new pages */
  check_heap_in(h, 1500, 8, arena_b, true, "affinity removed");

  /* another thread's part of h, and a change of affinity it sees */
  mi_heap_set_numa_affinity(h, 1);
  pthread_barrier_t step;
  pthread_barrier_init(&step, NULL, 2);
  job_t job = { h, 2500, arena_a, true, &step };
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &other_thread, &job) == 0);
  pthread_barrier_wait(&step);
  mi_heap_set_numa_affinity(h, 0);
  pthread_barrier_wait(&step);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&step);

  /* the main heap: every thread's backing heap (malloc) */
  mi_heap_set_numa_affinity(NULL, 1);
  check_heap_in(mi_heap_main(), 3500, 8, arena_a, true, "main heap, affinity 1");
  void* m = malloc(6000);   /* a size class the backing heap has not used */
  CHECK(m != NULL && mi_arena_contains(arena_a, m));
  free(m);
  mi_heap_set_numa_affinity(NULL, -1);

  /* a preference, not a requirement: node 1's arena is too small for 200 MiB and no arena is
     reserved on demand, so the block comes from node 0's arena */
  mi_option_set(mi_option_arena_reserve, 0);
  mi_heap_set_numa_affinity(h, 1);
  void* big = mi_heap_malloc(h, 200 * MIB);
  CHECK(big != NULL);
  CHECK(big != NULL && !mi_arena_contains(arena_a, big) && mi_arena_contains(arena_b, big));
  mi_free(big);

  mi_heap_delete(plain);
  mi_heap_delete(h);
  return test_summary("fi-numa", "%s", "heaps with a NUMA affinity, two pretended nodes");
}
