/* SPDX-License-Identifier: MIT */
/* test-thread-exit-win.cpp -- Windows: allocations made on a thread after the allocator's FLS
   callback has run (src/prim/windows.c, "Thread exit").

   Windows runs the FLS callbacks of an ending thread first, then the TLS callbacks and
   DLL_THREAD_DETACH of every module; mingw runs C++ thread_local destructors from a TLS
   callback. Each thread here allocates and frees in
     - the destructor of a thread_local object (mingw's .CRT$XLB callback), which also keeps one
       block alive for the main thread to free after the thread is gone, and
     - the callback of a second FLS slot, allocated after the allocator's,
   and half of the threads allocate nothing before those (their first allocation comes at exit).
   Every such late allocation makes a new heap for the dying thread; it must be released too.

   Then FIBER_THREADS threads make their heap on a fiber that they delete (fiber_worker).

   After the threads are joined and the kept blocks freed, the allocator's thread count
   must be back at its value before them, and mi_collect(true) must leave no more pages and
   segments than before (a heap that is never released keeps its pages, and a block freed into
   them from another thread never makes them free).
   Built twice: with libmimalloc.dll and with the static library.
   Usage: test-thread-exit-win [threads=200] */
#include <windows.h>
#include <process.h>
#include <atomic>
#include <cstring>
#include <mimalloc.h>
#include <mimalloc-stats.h>
#include "testing.h"
#include "thread-figures.h"

#define MAX_THREADS 4096
#define FIBER_THREADS 16

static void*            kept[MAX_THREADS];
static std::atomic<int> dtor_runs{0};
static std::atomic<int> fls_runs{0};
static DWORD            fls_key = FLS_OUT_OF_INDEXES;

static void use_block(size_t size) {
  unsigned char* p = (unsigned char*)mi_malloc(size);
  CHECK(p != NULL);
  if (p == NULL) return;
  memset(p, 0xA5, size);
  CHECK_EQ(p[size - 1], 0xA5);
  mi_free(p);
}

struct late_user {
  int id = -1;
  ~late_user() {
    use_block(100);
    use_block(5000);
    if (id >= 0 && id < MAX_THREADS) kept[id] = mi_malloc(200);   /* freed by the main thread */
    dtor_runs.fetch_add(1);
  }
};
static thread_local late_user late;

static void NTAPI fls_callback(void* value) {
  use_block(64);
  mi_free(value);
  fls_runs.fetch_add(1);
}

static unsigned __stdcall worker(void* arg) {
  const int id = (int)(intptr_t)arg;
  late.id = id;   /* constructs the thread_local: its destructor runs at exit */
  if (id % 2 == 0) {
    use_block(32);
    FlsSetValue(fls_key, mi_malloc(48));
  }
  /* odd ids: no allocation before exit, no FLS value (a NULL value gets no callback) */
  return 0;
}

/* Fibers: the thread's first allocation is made on a second fiber, which is then deleted on
   the thread (DeleteFiber runs that fiber's FLS callbacks there). The heap belongs to the
   thread and must outlive the fiber: a block from it still belongs to the default heap, and a
   heap made with mi_heap_new stays usable. Half of the threads end as fibers. */
typedef struct fiber_ctx_s {
  void* main;
  void* block;
} fiber_ctx_t;

static void CALLBACK fiber_proc(void* arg) {
  fiber_ctx_t* c = (fiber_ctx_t*)arg;
  c->block = mi_malloc(64);   /* the thread's first allocation */
  SwitchToFiber(c->main);
}

static unsigned __stdcall fiber_worker(void* arg) {
  const int id = (int)(intptr_t)arg;
  fiber_ctx_t c = { NULL, NULL };
  c.main = ConvertThreadToFiber(NULL);
  CHECK(c.main != NULL);
  void* f = CreateFiber(0, &fiber_proc, &c);
  CHECK(f != NULL);
  if (c.main == NULL || f == NULL) return 0;
  SwitchToFiber(f);
  CHECK(c.block != NULL);
  mi_heap_t* h = mi_heap_new();
  void* q = mi_heap_malloc(h, 100);
  CHECK(q != NULL);
  DeleteFiber(f);
  const bool kept_heap = mi_heap_check_owned(mi_heap_get_default(), c.block);
  CHECK_MSG(kept_heap, "DeleteFiber of the fiber that made the thread's heap released it");
  if (kept_heap) {   /* else h is gone too */
    CHECK(mi_heap_check_owned(h, q));
    mi_free(q);
    mi_heap_delete(h);
  }
  mi_free(c.block);
  if (id % 2 == 0) CHECK(ConvertFiberToThread());
  return 0;
}

int main(int argc, char** argv) {
  int threads = (argc > 1 ? atoi(argv[1]) : 200);
  if (threads < 2) threads = 2;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  /* unbuffered, with a first line: a process that dies at exit (after the threads' and the
     main thread's late allocations) has still said what it did, so test/windows.sh does not
     take it for a Wine start failure and run it again (a libgcc abort at exit was hidden so) */
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("thread-exit-win: %d threads\n", threads);

  mi_free(mi_malloc(8));   /* the allocator (and its FLS slot) first: ours comes after it */
  fls_key = FlsAlloc(&fls_callback);
  CHECK(fls_key != FLS_OUT_OF_INDEXES);
  mi_collect(true);
  const figures_t before = figures();

  int started = 0;
  for (int i = 0; i < threads; i += 16) {   /* batches of 16 */
    HANDLE h[16];
    int n = 0;
    for (int j = i; j < threads && j < i + 16; j++) {
      h[n] = (HANDLE)_beginthreadex(NULL, 0, &worker, (void*)(intptr_t)j, 0, NULL);
      CHECK(h[n] != NULL);
      if (h[n] != NULL) { n++; started++; }
    }
    WaitForMultipleObjects((DWORD)n, h, TRUE, INFINITE);
    for (int j = 0; j < n; j++) CloseHandle(h[j]);
  }
  for (int i = 0; i < FIBER_THREADS; i++) {
    HANDLE h = (HANDLE)_beginthreadex(NULL, 0, &fiber_worker, (void*)(intptr_t)i, 0, NULL);
    CHECK(h != NULL);
    if (h == NULL) continue;
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
  }
  CHECK_EQ(dtor_runs.load(), started);   /* (the fiber threads have no thread_local object) */
  CHECK_EQ(fls_runs.load(), (started + 1) / 2);

  const figures_t joined = figures();
  for (int i = 0; i < threads; i++) {
    CHECK(kept[i] != NULL);
    mi_free(kept[i]);
  }
  mi_collect(true);
  const figures_t after = figures();
  printf("  threads %lld -> %lld (joined) -> %lld; pages %lld -> %lld; segments %lld -> %lld\n",
         before.threads, joined.threads, after.threads, before.pages, after.pages, before.segments, after.segments);
  CHECK_MSG(after.threads == before.threads, "%lld threads counted after %d threads ended (%lld before): heaps made "
            "after the FLS callback were never released", after.threads, started, before.threads);
  CHECK_MSG(after.pages <= before.pages, "pages: %lld before, %lld after mi_collect(true)", before.pages, after.pages);
  CHECK_MSG(after.segments <= before.segments, "segments: %lld before, %lld after mi_collect(true)", before.segments,
            after.segments);
  return test_summary("thread-exit-win", "%d threads allocating in thread_local destructors and a later FLS callback, "
                      "%d fiber threads", started, FIBER_THREADS);
}
