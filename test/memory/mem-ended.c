/* SPDX-License-Identifier: MIT */
/* mem-ended.c -- an ended thread leaves nothing behind: memory that other threads free after
   its owner ended goes back to the OS within a second, without another call into the
   allocator (the purger thread, src/purger.c; abandoned pages, src/abandon.c).

   Usage: mem-ended after|alive|third|keep|mainexit|big
     after   a producer thread allocates MT_ENDED_BLOCKS blocks of 1 KiB (every byte written)
             and ends; then a consumer thread frees them all and ends; both joined. Every page
             is abandoned with all its blocks live, and the consumer's free of each page's last
             block releases it from inside a free, where the purger cannot be started (glibc
             calls free with its locks held): before, when no purge had been scheduled while
             the producer ran, nothing started the purger and the process kept all of it
             (1 GiB of 1 GiB in the run).
     alive   the consumer frees while the producer, done, still lives; then the producer ends:
             its exit frees the pages (delayed frees) with no allocation after it.
     third   as `after`, but the consumer leaves one block in 64 and a third thread frees those
             after it: the last free of every page comes from a thread that did not free the
             others.
     keep    `after` with MIMALLOC_PURGE_THREAD=0 (and a purge delay of 5 s, so that the frees
             themselves run no purge that came due meanwhile): nothing gives the memory back
             while nobody calls the allocator (at least 3/4 of it still resident): the workload
             does what the other modes say it does, so they can fail.
     mainexit  a thread ends with its blocks live (abandoned: the purger waits for their frees)
             and main calls pthread_exit: the process must end (the purger must not keep it
             alive: ctest's TIMEOUT of 30 s fails it).
     big     a thread frees big blocks (huge, 40 MiB) and ends: they are purged by its end, not
             after the arena purge delay (MIMALLOC_PURGE_DELAY=5000); a run main reused before
             the end stays intact (test_big).
   Checks, MT_ENDED_WAIT_MS after the joins with no allocator call in between: the RSS within
   MT_ENDED_MARGIN of the start (not under sanitizers: memory-common.h MT_RSS_ASSERTS) and the
   committed statistic within the same margin of its start (every build). */
#include "memory-common.h"
#include <pthread.h>

#define MT_ENDED_BLOCKS   (256 * 1024)   /* 256 MiB of 1 KiB blocks */
#define MT_ENDED_SIZE     1024
#define MT_ENDED_MARGIN   (8 * MiB)
#define MT_ENDED_WAIT_MS  1000

static void** blocks;
static _Atomic(int) producer_done;   /* the producer has allocated everything */
static _Atomic(int) consumer_done;   /* the consumer has freed its share */
static int          mode_alive;
static int          mode_third;

static void* producer(void* arg) {
  (void)arg;
  for (size_t i = 0; i < MT_ENDED_BLOCKS; i++) {
    blocks[i] = mi_malloc(MT_ENDED_SIZE);
    CHECK(blocks[i] != NULL);
    if (blocks[i] != NULL) memset(blocks[i], 0x5c, MT_ENDED_SIZE);
  }
  producer_done = 1;
  if (mode_alive) { while (!consumer_done) mt_sleep_ms(1); }   /* lives while they are freed */
  return NULL;
}

static void* consumer(void* arg) {
  (void)arg;
  while (!producer_done) mt_sleep_ms(1);
  for (size_t i = 0; i < MT_ENDED_BLOCKS; i++) {
    if (mode_third && i % 64 == 0) continue;   /* the third thread's */
    mi_free(blocks[i]);
  }
  consumer_done = 1;
  return NULL;
}

static void* third(void* arg) {
  (void)arg;
  for (size_t i = 0; i < MT_ENDED_BLOCKS; i += 64) mi_free(blocks[i]);
  return NULL;
}

static void run(void* (*fun)(void*)) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, fun, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
}

static int test_ended(const char* mode) {
  const bool keep = (strcmp(mode, "keep") == 0);
  mode_alive = (strcmp(mode, "alive") == 0);
  mode_third = (strcmp(mode, "third") == 0);
  CHECK_EQ(mi_option_get(mi_option_purge_thread), keep ? 0 : 1);
  blocks = (void**)mi_calloc(MT_ENDED_BLOCKS, sizeof(void*));
  CHECK(blocks != NULL);
  if (blocks == NULL) return test_summary("mem-ended", "no memory");
  const size_t rss0 = mt_rss();
  const int64_t committed0 = mt_stats()->committed.current;
  if (mode_alive) {
    pthread_t p, c;
    CHECK_EQ(pthread_create(&p, NULL, &producer, NULL), 0);
    CHECK_EQ(pthread_create(&c, NULL, &consumer, NULL), 0);
    CHECK_EQ(pthread_join(c, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
  }
  else {
    run(&producer);   /* ends with every block live */
    const size_t peak = mt_rss();
    if (MT_RSS_ASSERTS) CHECK_MSG(peak >= rss0 + 200 * MiB, "the producer touched only %.1f MiB", mt_mib_diff(peak, rss0));
    run(&consumer);
    if (mode_third) run(&third);
  }
  mt_sleep_ms(MT_ENDED_WAIT_MS);   /* no allocator call from the last join to the measurement */
  const size_t rss1 = mt_rss();
  const int64_t committed = mt_stats()->committed.current - committed0;
  char name[64];
  snprintf(name, sizeof(name), "mem-ended %s", mode);
  if (keep) {
    if (MT_RSS_ASSERTS) CHECK_MSG(rss1 >= rss0 + 192 * MiB, "without the purger the RSS fell to %.1f MiB above the start", mt_mib_diff(rss1, rss0));
    CHECK_MSG(committed >= (int64_t)(192 * MiB), "without the purger committed fell to %.1f MiB above the start", (double)committed / MiB);
  }
  else {
    if (MT_RSS_ASSERTS) CHECK_MSG(rss1 <= rss0 + MT_ENDED_MARGIN, "%d ms after the joins the RSS is %.1f MiB above the start (margin %zu MiB)", MT_ENDED_WAIT_MS, mt_mib_diff(rss1, rss0), MT_ENDED_MARGIN / MiB);
    CHECK_MSG(committed <= (int64_t)MT_ENDED_MARGIN, "%d ms after the joins committed is %.1f MiB above the start", MT_ENDED_WAIT_MS, (double)committed / MiB);
  }
  mi_free(blocks);
  return test_summary(name, "%d KiB blocks of ended threads; %d ms after the joins: RSS %+.1f MiB, committed %+.1f MiB",
                      MT_ENDED_BLOCKS, MT_ENDED_WAIT_MS, mt_mib_diff(rss1, rss0), (double)committed / MiB);
}

static void* leave_blocks(void* arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) CHECK(mi_malloc(100 + (size_t)i) != NULL);   /* never freed */
  return NULL;
}

static int test_mainexit(void) {
  run(&leave_blocks);   /* its pages stay abandoned: the purger runs and waits for their frees */
  test_summary("mem-ended mainexit", "main calls pthread_exit while ended threads' pages hold blocks");
  fflush(stdout);
  pthread_exit(NULL);
}

/* big: an ending thread purges the big arena runs it freed (huge blocks), which would wait for
   the arena purge delay otherwise (MIMALLOC_PURGE_DELAY=5000: 5 s at least, even over the
   budget of unpurged blocks), and leaves alone a run reused meanwhile. */
#define MT_BIG_SIZE   (40 * MiB)
#define MT_BIG_COUNT  4
static void* big_again;   /* main's block after the thread's free (perhaps the same memory) */

static void* big_free_then_end(void* arg) {
  const bool reuse = (arg != NULL);
  void* p[MT_BIG_COUNT];
  for (int i = 0; i < MT_BIG_COUNT; i++) {
    p[i] = mi_malloc(MT_BIG_SIZE);
    CHECK(p[i] != NULL);
    if (p[i] != NULL) mt_fill(p[i], MT_BIG_SIZE, 0x11);
  }
  for (int i = 0; i < MT_BIG_COUNT; i++) mi_free(p[i]);
  if (reuse) *(void**)arg = p[0];
  mt_phase_set(reuse ? 3 : 1);   /* freed; main looks (and allocates) */
  mt_phase_wait(reuse ? 4 : 2);
  return NULL;   /* its end: the purge */
}

static int test_big(void) {
  CHECK_EQ(mi_option_get(mi_option_purge_delay), 5000);
  const int64_t committed0 = mt_stats()->committed.current;
  const size_t rss0 = mt_rss();
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &big_free_then_end, NULL), 0);
  mt_phase_wait(1);
  const long long t1 = mt_now_ms();
  const int64_t freed = mt_stats()->committed.current - committed0;
  /* (a machine stalled for the whole short delay could have purged them already) */
  const bool timely = (mt_now_ms() - t1 < 4000);
  if (timely) CHECK_MSG(freed >= (int64_t)(MT_BIG_COUNT * MT_BIG_SIZE) - (int64_t)MT_ENDED_MARGIN, "the freed blocks were purged before the thread ended (committed %+.1f MiB)", (double)freed / MiB);
  mt_phase_set(2);
  CHECK_EQ(pthread_join(t, NULL), 0);
  const int64_t ended = mt_stats()->committed.current - committed0;   /* no sleep: the end did it */
  const size_t rss1 = mt_rss();
  CHECK_MSG(ended <= (int64_t)MT_ENDED_MARGIN, "right after the join committed is %+.1f MiB (%d blocks of %zu MiB freed by the ended thread)", (double)ended / MiB, MT_BIG_COUNT, MT_BIG_SIZE / MiB);
  if (MT_RSS_ASSERTS) CHECK_MSG(rss1 <= rss0 + MT_ENDED_MARGIN, "right after the join the RSS is %.1f MiB above the start", mt_mib_diff(rss1, rss0));

  /* a run the thread freed and main took again before the thread's end stays as it is */
  void* first = NULL;
  CHECK_EQ(pthread_create(&t, NULL, &big_free_then_end, &first), 0);
  mt_phase_wait(3);
  big_again = mi_malloc(MT_BIG_SIZE);
  CHECK(big_again != NULL);
  if (big_again != NULL) mt_fill(big_again, MT_BIG_SIZE, 0x5a);
  mt_phase_set(4);
  CHECK_EQ(pthread_join(t, NULL), 0);
  const bool same = (big_again == first);
  if (big_again != NULL) CHECK_MSG(mt_is_filled(big_again, MT_BIG_SIZE, 0x5a), "main's block (%s the ended thread's memory) changed at the thread's end", same ? "in" : "beside");
  mi_free(big_again);
  return test_summary("mem-ended big", "%d x %zu MiB freed by a thread: committed %+.1f MiB before its end, %+.1f right after; reused run %s and intact",
                      MT_BIG_COUNT, MT_BIG_SIZE / MiB, (double)freed / MiB, (double)ended / MiB, same ? "the same memory" : "elsewhere");
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strcmp(mode, "after") == 0 || strcmp(mode, "alive") == 0 || strcmp(mode, "third") == 0 || strcmp(mode, "keep") == 0) return test_ended(mode);
  if (strcmp(mode, "mainexit") == 0) return test_mainexit();
  if (strcmp(mode, "big") == 0) return test_big();
  fprintf(stderr, "usage: mem-ended after|alive|third|keep|mainexit|big\n");
  return 2;
}
