/* SPDX-License-Identifier: MIT */
/* sched-workload.c -- reaches every point of the schedule fuzzer (src/internal/sched.h) in a
   build with MI_SCHED_FUZZ; check-sched.py runs it under MIMALLOC_TEST_SCHED and reads the
   counts. Every block carries a pattern, checked before it is freed, so a fuzzed schedule that
   breaks the allocator fails here too.

   sched-workload points   the phases below, on several threads:
     cross      a producer fills pages of one size, a consumer frees them into the full pages
                (page-full, free-delayed) but one in 64, the producer allocates again (delayed-drain)
     remote     a consumer frees into a producer's pages that are not full and waits: held
                back in a release build, then pushed by its mi_collect (remote-push); prints
                "remote batch: on" or "remote batch: off" (whether they were held back)
     exit       a thread ends with live blocks in half-free pages (abandon, thread-done),
                another thread allocates that size (reclaim); nothing is due for 1.5 s, so the
                purger waits for the last frees (purger-wait); a third thread frees the rest
                (free-last)
     heaps      mi_heap_new + mi_heap_delete with blocks (heap-delete), + destroy (heap-destroy)
     sheap      a shared heap: a thread's part is its default; another thread deletes the heap;
                the first allocates on (sheap-switch), and ends its part (sheap-sweep)
     purge      large and huge blocks freed, then sleeps and allocator activity with the short
                MIMALLOC_PURGE_DELAY the driver sets (segment-purge, arena-purge, purger-pass)
     profile    mi_profile_start(4096) first where the profiler is built (prof-sample); prints
                "profiler: on" or "profiler: off"
   every phase takes fresh pages (page-fresh).
   sched-workload adopt    the last free of an abandoned page while another thread adopts it
                (reclaim, free-last), round after round (phase_adopt)
   sched-workload single   one thread, a fixed sequence of allocations, frees, a heap deleted
                and one destroyed: with MIMALLOC_PURGE_DELAY=-1 it reaches the same points in
                the same order in every run (the replay check). */
#include <mimalloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "../testing.h"

static void fill(void* p, size_t size) {
  const uint8_t v = (uint8_t)(((uintptr_t)p >> 4) ^ size);
  memset(p, v, size < 64 ? size : 64);
}
static void check_free(void* p, size_t size) {
  if (p == NULL) return;
  const uint8_t v = (uint8_t)(((uintptr_t)p >> 4) ^ size);
  const uint8_t* b = (const uint8_t*)p;
  for (size_t i = 0; i < (size < 64 ? size : 64); i++) {
    if (b[i] != v) { CHECK_MSG(b[i] == v, "block %p of %zu bytes: byte %zu changed", p, size, i); break; }
  }
  mi_free(p);
}
static void* alloc(size_t size) {
  void* p = mi_malloc(size);
  CHECK(p != NULL);
  if (p != NULL) fill(p, size);
  return p;
}
static void sleep_ms(long ms) {
  struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
  nanosleep(&t, NULL);
}
static void run(void* (*fn)(void*), void* arg) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, fn, arg), 0);
  pthread_join(t, NULL);
}

/* ---- cross: frees into another thread's full pages -------------------------------------- */
#define CROSS_N     20000
#define CROSS_SIZE  48
static void* cross_blocks[CROSS_N];

/* the consumer leaves every CROSS_KEEP-th block live: a page whose blocks others all freed may
   be emptied by the purger while the producer waits (idle reclaim, src/heap-idle.c), and then
   nothing would be left for the producer's own drain */
#define CROSS_KEEP  64
static void* cross_free(void* arg) {
  (void)arg;
  for (size_t i = 0; i < CROSS_N; i++) {
    if (i % CROSS_KEEP == 0) continue;
    check_free(cross_blocks[i], CROSS_SIZE); cross_blocks[i] = NULL;
  }
  return NULL;
}

static void* cross_producer(void* arg) {
  (void)arg;
  for (int round = 0; round < 4; round++) {
    for (size_t i = 0; i < CROSS_N; i++) cross_blocks[i] = alloc(CROSS_SIZE);   /* pages fill up: full queue */
    run(&cross_free, NULL);                                                   /* into full pages: delayed */
    for (size_t i = 0; i < 1000; i++) check_free(alloc(CROSS_SIZE), CROSS_SIZE);   /* drains the delayed list */
    for (size_t i = 0; i < CROSS_N; i += CROSS_KEEP) { check_free(cross_blocks[i], CROSS_SIZE); cross_blocks[i] = NULL; }
  }
  return NULL;
}

/* ---- remote: frees another thread holds back (release builds, src/remote.c) ------------- */
#define REMOTE_N     4000
#define REMOTE_SIZE  48
static void* remote_blocks[REMOTE_N];
static atomic_int remote_stage;
static bool remote_batched;

static void* remote_consumer(void* arg) {
  (void)arg;
  void* own = alloc(16);   /* (a heap of its own: its frees may be held back) */
  for (size_t i = 0; i < REMOTE_N; i++) {
    if (i % 50 != 0) { check_free(remote_blocks[i], REMOTE_SIZE); remote_blocks[i] = NULL; }
  }
  atomic_store(&remote_stage, 1);
  while (atomic_load(&remote_stage) < 2) sleep_ms(1);
  mi_collect(false);   /* pushes what it holds (remote-push) */
  check_free(own, 16);
  return NULL;
}

static bool remote_count(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap; (void)size;
  if (block != NULL && area->block_size == REMOTE_SIZE) (*(size_t*)arg)++;
  return true;
}

/* the producer's pages are not full (it frees one block in 50 itself): the consumer's frees
   may be held back; whether they were (blocks of the producer still live while the consumer
   waits) says if this build batches */
static void* remote_producer(void* arg) {
  (void)arg;
  for (size_t i = 0; i < REMOTE_N; i++) remote_blocks[i] = alloc(REMOTE_SIZE);
  for (size_t i = 0; i < REMOTE_N; i += 50) { check_free(remote_blocks[i], REMOTE_SIZE); remote_blocks[i] = NULL; }
  atomic_store(&remote_stage, 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &remote_consumer, NULL), 0);
  while (atomic_load(&remote_stage) < 1) sleep_ms(1);
  size_t live = 0;
  mi_heap_visit_blocks(mi_heap_get_backing(), true, &remote_count, &live);
  remote_batched = (live > 0);
  atomic_store(&remote_stage, 2);
  pthread_join(t, NULL);
  return NULL;
}

/* ---- exit: an ended thread's pages ------------------------------------------------------ */
#define EXIT_N     4000
#define EXIT_SIZE  128
static void* exit_blocks[EXIT_N];

static void* exit_leaver(void* arg) {
  (void)arg;
  for (size_t i = 0; i < EXIT_N; i++) exit_blocks[i] = alloc(EXIT_SIZE);
  for (size_t i = 0; i < EXIT_N; i += 2) { check_free(exit_blocks[i], EXIT_SIZE); exit_blocks[i] = NULL; }
  return NULL;   /* ends with half of each page live: abandoned */
}

static void* exit_reclaimer(void* arg) {
  (void)arg;
  void* mine[1000];
  for (size_t i = 0; i < 1000; i++) mine[i] = alloc(EXIT_SIZE);   /* adopts pages with room */
  for (size_t i = 0; i < 1000; i++) check_free(mine[i], EXIT_SIZE);
  return NULL;
}

/* a thread that never allocates has no heap, so it cannot adopt a page on free (the option
   abandoned_reclaim_on_free, on by default): its frees of the last live blocks release them */
static void* exit_freer(void* arg) {
  (void)arg;
  for (size_t i = 0; i < EXIT_N; i++) { check_free(exit_blocks[i], EXIT_SIZE); exit_blocks[i] = NULL; }
  return NULL;
}

static void phase_exit(void) {
  run(&exit_leaver, NULL);
  run(&exit_reclaimer, NULL);
  sleep_ms(1500);   /* the purger lingers 1 s, then waits for the free of those pages' last blocks */
  run(&exit_freer, NULL);
}

/* ---- adopt: the last free of an abandoned page against its adoption ---------------------- */
/* Round after round, a thread ends with ADOPT_N live blocks in one page and one huge block; a
   thread without a heap frees all but one of the small blocks, then, while the main thread's
   mi_collect(true) adopts the pages (the fuzzer sleeping at reclaim holds a page taken but still
   abandoned), the huge block and the last small one. Such a free must push its block and touch
   the page no more: the adopter may then find the page all free and release it, and a huge
   page's segment goes back to the OS at once (unmapped: a read is a crash). Under TSan (the tsan
   suites build with the fuzzer) a read of the page after the push is a race with that release. */
#define ADOPT_ROUNDS  150
#define ADOPT_N       24
#define ADOPT_SIZE    1040   /* a size class no other phase uses: its page is this round's */
#define ADOPT_HUGE    (3u << 20)   /* above MI_LARGE_OBJ_SIZE_MAX: a segment of its own */
static void* adopt_blocks[ADOPT_N];
static void* adopt_huge;
static _Atomic(int) adopt_stage;   /* 1: all but the last freed; 2: the adoption begins */

static void* adopt_leaver(void* arg) {
  (void)arg;
  for (size_t i = 0; i < ADOPT_N; i++) adopt_blocks[i] = alloc(ADOPT_SIZE);
  adopt_huge = alloc(ADOPT_HUGE);
  return NULL;   /* ends with its pages' blocks live: abandoned */
}

static void* adopt_freer(void* arg) {
  (void)arg;
  for (size_t i = 1; i < ADOPT_N; i++) { check_free(adopt_blocks[i], ADOPT_SIZE); adopt_blocks[i] = NULL; }
  atomic_store(&adopt_stage, 1);
  while (atomic_load(&adopt_stage) != 2) sched_yield();
  check_free(adopt_huge, ADOPT_HUGE);        /* the last (only) block of its page */
  adopt_huge = NULL;
  check_free(adopt_blocks[0], ADOPT_SIZE);   /* the last live block: under the lists' lock */
  adopt_blocks[0] = NULL;
  return NULL;
}

static void phase_adopt(void) {
  for (int round = 0; round < ADOPT_ROUNDS; round++) {
    run(&adopt_leaver, NULL);
    atomic_store(&adopt_stage, 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, &adopt_freer, NULL), 0);
    while (atomic_load(&adopt_stage) != 1) sched_yield();
    atomic_store(&adopt_stage, 2);
    mi_collect(true);   /* adopts every abandoned page: this round's among them, unless freed first */
    pthread_join(t, NULL);
  }
  void* p = alloc(ADOPT_SIZE);   /* the size class still serves */
  check_free(p, ADOPT_SIZE);
}

/* ---- heaps ------------------------------------------------------------------------------ */
static void phase_heaps(size_t n) {
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  void* kept[64];
  for (size_t i = 0; i < n; i++) {
    void* p = mi_heap_malloc(h, 16 + (i % 64) * 16);
    CHECK(p != NULL);
    if (i < 64) { kept[i] = p; fill(p, 16 + i * 16); }
  }
  mi_heap_delete(h);   /* its blocks move to the backing heap, still valid */
  for (size_t i = 0; i < 64 && i < n; i++) check_free(kept[i], 16 + i * 16);
  h = mi_heap_new();
  CHECK(h != NULL);
  for (size_t i = 0; i < n; i++) CHECK(mi_heap_malloc(h, 16 + (i % 64) * 16) != NULL);
  mi_heap_destroy(h);   /* its blocks die with it */
}

/* ---- sheap: a dead part as the default -------------------------------------------------- */
typedef struct sheap_arg_s {
  mi_heap_t*        heap;
  pthread_barrier_t set, deleted;
} sheap_arg_t;

static void* sheap_user(void* arg) {
  sheap_arg_t* a = (sheap_arg_t*)arg;
  mi_heap_t* backing = mi_heap_get_backing();
  CHECK(mi_heap_set_default(a->heap) == backing);   /* its part is the default now */
  void* p = alloc(100);
  CHECK(mi_heap_contains_block(a->heap, p));
  pthread_barrier_wait(&a->set);
  pthread_barrier_wait(&a->deleted);
  for (size_t i = 0; i < 2000; i++) check_free(alloc(3000 + 1000 * (i % 8)), 3000 + 1000 * (i % 8));   /* in the backing heap */
  CHECK(mi_heap_get_default() == backing);
  check_free(p, 100);   /* a deleted heap's blocks stay valid */
  mi_collect(false);    /* the part ends, if no sweep ended it yet */
  return NULL;
}

static void phase_sheap(void) {
  for (int round = 0; round < 4; round++) {
    sheap_arg_t a;
    a.heap = mi_heap_new_shared();
    CHECK(a.heap != NULL);
    if (a.heap == NULL) return;
    pthread_barrier_init(&a.set, NULL, 2);
    pthread_barrier_init(&a.deleted, NULL, 2);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, &sheap_user, &a), 0);
    void* q = mi_heap_malloc(a.heap, 200);   /* main's part too */
    CHECK(q != NULL);
    pthread_barrier_wait(&a.set);
    mi_heap_delete(a.heap);   /* main's part ends now, the user's at its next sweep */
    pthread_barrier_wait(&a.deleted);
    pthread_join(t, NULL);
    mi_free(q);
    pthread_barrier_destroy(&a.set);
    pthread_barrier_destroy(&a.deleted);
  }
}

/* ---- purge ------------------------------------------------------------------------------ */
static void* purge_thread(void* arg) {
  (void)arg;
  void* big[48];
  for (int round = 0; round < 4; round++) {
    for (size_t i = 0; i < 48; i++) big[i] = alloc(i < 40 ? 200000 : 6000000);   /* large pages, huge segments */
    for (size_t i = 0; i < 48; i++) check_free(big[i], i < 40 ? 200000 : 6000000);
    sleep_ms(30);
    for (size_t i = 0; i < 2000; i++) check_free(alloc(1000 + i), 1000 + i);   /* slow paths: due purges */
    mi_collect(false);
  }
  return NULL;
}

static void phase_purge(void) {
  run(&purge_thread, NULL);
  sleep_ms(300);        /* the purger's passes (at most one per 100 ms) */
  mi_collect(true);     /* every purge now */
}

/* ---- main ------------------------------------------------------------------------------- */
static int points(void) {
  const bool prof = mi_profile_start(4096);
  printf("profiler: %s\n", prof ? "on" : "off");
  fflush(stdout);
  run(&cross_producer, NULL);
  run(&remote_producer, NULL);
  printf("remote batch: %s\n", remote_batched ? "on" : "off");
  fflush(stdout);
  phase_exit();
  phase_heaps(2000);
  phase_sheap();
  phase_purge();
  return test_summary("sched-workload points", "%s", "every point of the schedule fuzzer reached");
}

static int single(void) {
  void* blocks[3000];
  for (int round = 0; round < 3; round++) {
    for (size_t i = 0; i < 3000; i++) blocks[i] = alloc(16 + (i % 40) * 24);
    for (size_t i = 0; i < 3000; i += 2) check_free(blocks[i], 16 + (i % 40) * 24);
    for (size_t i = 1; i < 3000; i += 2) check_free(blocks[i], 16 + (i % 40) * 24);
    phase_heaps(500);
  }
  return test_summary("sched-workload single", "%s", "one thread, a fixed sequence");
}

static int adopt(void) {
  phase_adopt();
  return test_summary("sched-workload adopt", "%d rounds", ADOPT_ROUNDS);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "single") == 0) return single();
  if (argc > 1 && strcmp(argv[1], "adopt") == 0) return adopt();
  if (argc > 1 && strcmp(argv[1], "points") == 0) return points();
  fprintf(stderr, "usage: sched-workload points|single|adopt\n");
  return 2;
}
