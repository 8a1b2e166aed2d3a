/* SPDX-License-Identifier: MIT */
/* test-thread-churn-win.c -- Windows: threads that start and end together must leave the
   purger's thread list (src/heap-idle.c) before their metadata is freed, whether the purger
   thread runs or not (run twice: as is, and with MIMALLOC_PURGE_THREAD=0).

   Cyclers end their heap (mi_thread_done) and make a new one at their next allocation, 4 x
   threads-per-creator times each; then as many creators each start and join short threads one
   after another, so that one thread's end (leaving the list) meets another's start (joining
   it). A thread that gave up the list's lock while the purger was not running left its freed
   metadata listed, and the next thread to leave wrote into it (a corrupted heap of the OS's,
   under Wine). The allocator reports metadata freed while listed (EFAULT, init.c) and keeps
   it: any error fails here (with the old lock the no-purger run failed 6 times in 6).
   Also: the thread count is back at its value before, and mi_collect(true) leaves no more pages
   and segments than before.
   Usage: test-thread-churn-win [threads-per-creator=500] [creators=8] */
#include <windows.h>
#include <process.h>
#include <stdatomic.h>
#include <mimalloc.h>
#include <mimalloc-stats.h>
#include "testing.h"
#include "thread-figures.h"

#define MAX_CREATORS 64

static atomic_int errors;
static atomic_int leaves;
static int per_creator;
static int creators;

static void on_error(int err, void* arg) {
  (void)arg;
  atomic_fetch_add(&errors, 1);
  CHECK_MSG(false, "the allocator reported error %d", err);
}

static unsigned __stdcall leaf(void* arg) {
  const size_t i = (size_t)(uintptr_t)arg;
  void* p = mi_malloc(16 + (i % 64) * 16);
  void* q = mi_malloc(2000 + (i % 7) * 1000);
  CHECK(p != NULL && q != NULL);
  mi_free(p);
  mi_free(q);
  atomic_fetch_add(&leaves, 1);
  return 0;
}

/* the same, without the OS's thread start and end in between: a thread ends its heap
   (mi_thread_done) and makes a new one at its next allocation, many times, beside others */
static int cycles;
static unsigned __stdcall cycler(void* arg) {
  const size_t id = (size_t)(uintptr_t)arg;
  for (int i = 0; i < cycles; i++) {
    void* p = mi_malloc(16 + ((id + (size_t)i) % 64) * 16);
    CHECK(p != NULL);
    mi_free(p);
    mi_thread_done();
  }
  return 0;
}

static unsigned __stdcall creator(void* arg) {
  const int id = (int)(intptr_t)arg;
  for (int i = 0; i < per_creator; i++) {
    HANDLE h = (HANDLE)_beginthreadex(NULL, 0, &leaf, (void*)(intptr_t)(id * per_creator + i), 0, NULL);
    CHECK(h != NULL);
    if (h == NULL) continue;
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
  }
  return 0;
}

int main(int argc, char** argv) {
  per_creator = (argc > 1 ? atoi(argv[1]) : 500);
  creators = (argc > 2 ? atoi(argv[2]) : 8);
  if (per_creator < 1) per_creator = 1;
  if (creators < 1) creators = 1;
  if (creators > MAX_CREATORS) creators = MAX_CREATORS;
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("thread-churn-win: %d creators x %d threads\n", creators, per_creator);
  mi_register_error(&on_error, NULL);
  mi_free(mi_malloc(8));
  mi_collect(true);
  const figures_t before = figures();

  /* the cyclers (as many as creators) */
  HANDLE h[MAX_CREATORS];
  cycles = 4 * per_creator;
  for (int i = 0; i < creators; i++) {
    h[i] = (HANDLE)_beginthreadex(NULL, 0, &cycler, (void*)(intptr_t)i, 0, NULL);
    CHECK(h[i] != NULL);
  }
  for (int i = 0; i < creators; i++) {
    if (h[i] == NULL) continue;
    WaitForSingleObject(h[i], INFINITE);
    CloseHandle(h[i]);
  }
  CHECK_EQ(atomic_load(&errors), 0);

  /* the creators */
  int started = 0;
  for (int i = 0; i < creators; i++) {
    h[i] = (HANDLE)_beginthreadex(NULL, 0, &creator, (void*)(intptr_t)i, 0, NULL);
    CHECK(h[i] != NULL);
    if (h[i] != NULL) started++;
  }
  for (int i = 0; i < creators; i++) {
    if (h[i] == NULL) continue;
    WaitForSingleObject(h[i], INFINITE);
    CloseHandle(h[i]);
  }
  CHECK_EQ(atomic_load(&leaves), started * per_creator);
  CHECK_EQ(atomic_load(&errors), 0);

  mi_collect(true);
  const figures_t after = figures();
  printf("  threads %lld -> %lld; pages %lld -> %lld; segments %lld -> %lld; errors %d\n", before.threads,
         after.threads, before.pages, after.pages, before.segments, after.segments, atomic_load(&errors));
  CHECK_EQ(after.threads, before.threads);
  CHECK_MSG(after.pages <= before.pages, "pages: %lld before, %lld after mi_collect(true)", before.pages, after.pages);
  CHECK_MSG(after.segments <= before.segments, "segments: %lld before, %lld after", before.segments, after.segments);
  return test_summary("thread-churn-win", "%d threads started and ended by %d creators", started * per_creator, creators);
}
