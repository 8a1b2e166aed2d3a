/* SPDX-License-Identifier: MIT */
/* A shared heap's part as the thread's default while the profiler is on (MIMALLOC_PROFILE):
   another thread deletes or destroys the heap, and the thread's next allocations that its part
   has no page for land in its backing heap (docs/v3-api.md, mi_theap_set_default). With the
   profiler the slow path is the profiler's: the lease (mi_malloc, src/alloc.c) or, with
   PROF_SHEAP_MALLOC, the counted entry points (malloc, src/prof.c), whose own slow path and
   sample path must let the default go back too. A small MIMALLOC_PROFILE_RATE makes the counted
   countdown run out often (its sample path). */
#include <mimalloc.h>
#include <pthread.h>
#include <stdlib.h>
#include "../testing.h"

#if defined(PROF_SHEAP_MALLOC)
#define ALLOC(n)  malloc(n)
#define FREE(p)   free(p)
#else
#define ALLOC(n)  mi_malloc(n)
#define FREE(p)   mi_free(p)
#endif

typedef struct ender_s { mi_heap_t* heap; int destroy; } ender_t;

static void* ender(void* arg) {
  ender_t* e = (ender_t*)arg;
  if (e->destroy) mi_heap_destroy(e->heap);
  else mi_heap_delete(e->heap);
  return NULL;
}

int main(void) {
  CHECK(getenv("MIMALLOC_PROFILE") != NULL && mi_profile_start(0));   /* on from the start */
  void* warm = ALLOC(16);
  FREE(warm);
  mi_heap_t* const backing = mi_heap_get_backing();
  for (int round = 0; round < 16; round++) {   /* (each slow-path phase: alloc.c, MI_GENERIC_WORK_EVERY) */
    ender_t e = { mi_heap_new_shared(), round & 1 };
    CHECK(e.heap != NULL);
    if (e.heap == NULL) break;
    CHECK(mi_heap_set_default(e.heap) == backing);
    void* p = ALLOC(100);
    CHECK(p != NULL && mi_heap_contains_block(e.heap, p));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, &ender, &e), 0);
    pthread_join(t, NULL);
    /* sizes the part has no page for (nor sampled blocks of), each in the backing heap */
    for (size_t i = 0; i < 8; i++) {
      void* q = ALLOC(3000 + 1000 * i);
      CHECK_MSG(q != NULL && mi_heap_contains_block(backing, q), "round %d, block %zu", round, i);
      FREE(q);
    }
    CHECK(mi_heap_get_default() == backing);
    if (!e.destroy) FREE(p);   /* a deleted heap's blocks stay (a destroyed one's are gone) */
    mi_collect(false);         /* the part ends (if the sweep did not end it yet) */
  }
  return test_summary("prof-sheap-default", "%s", "a shared heap's part as the default, profiler on");
}
