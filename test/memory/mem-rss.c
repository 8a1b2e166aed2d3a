/* SPDX-License-Identifier: MIT */
/* mem-rss.c -- freed memory goes back to the OS (RSS), according to MIMALLOC_PURGE_DELAY.

   Usage: mem-rss small|large collect|activity|now|never
     small   1 GiB in blocks of 64..512 bytes (random sizes, every byte written)
     large   1 GiB in blocks of 1 MiB (large pages) and 8 MiB (huge blocks, from arenas)
   Everything is freed (interleaved, so pages and segments empty out in a mixed order), then:
     collect   (default settings) after mi_collect(true) the RSS is within MT_MARGIN of the
               RSS before the workload, and the commit figure of the statistics within
               MT_COMMIT_MARGIN;
     activity  (default settings) no mi_collect: after sleeping 200 ms and some allocator
               activity (a few thousand blocks of varied sizes) the RSS is within
               MT_ACTIVITY_MARGIN; tried up to 5 times (about 1.2 s) before failing;
     now       (MIMALLOC_PURGE_DELAY=0) right after the frees and one mi_collect(false) (which
               frees the few retired pages), without sleeping, the RSS is within the margin;
     never     (MIMALLOC_PURGE_DELAY=-1) even after mi_collect(true), a sleep of 250 ms and
               activity the RSS stays at least 900 MiB above the start (nothing is purged:
               segments and arena blocks keep their memory), the commit figure too, and the
               purged, purge_calls and arena_purges statistics are 0.
   In every mode the RSS must have grown by at least 900 MiB while the blocks were alive (the
   workload really touched its memory), and the purge_delay option must be the one the mode
   is meant for (the ctest ENVIRONMENT property sets it).

   Margins: the RSS after the purge is compared with the RSS before the workload (taken after
   a warm-up, mi_collect(true) and one round of the activity, so the activity's own pages are
   in both). Measured on x86-64 Linux, 2 cores (Release / Debug, both workloads):
     collect  -0.7 / -2.4 MiB      now  -0.4..-0.3 / -1.8 MiB (just after the frees +1.0 MiB)
     activity +0.2..+5.2 MiB after 1 or 2 rounds (Debug +0.2..+0.8 MiB)
     never    +1024..+1057 MiB (Debug +1087..+1118 MiB) with the blocks freed
   MT_MARGIN is 8 MiB for collect/now. The activity mode gets MT_ACTIVITY_MARGIN = 12 MiB: the
   activity may build its segments on arena blocks that were freed but not yet purged (a reuse
   clears their pending purge), and such a segment keeps the old contents of the page slots it
   does not use resident (up to 4 MiB per segment, 2 segments for the activity's small and
   medium pages), on top of the activity's own ~1 MiB. Both margins are far below the 1 GiB
   that stays resident without purging. The commit figure (statistics) is held to 16 MiB:
   it counts whole committed segments (MT_COMMIT_MARGIN), measured -8..+0 MiB.
   Timing: every freed arena block has its own deadline (100 ms after its free, or 10 ms when
   over the budget), and a purge pass runs only from allocator activity, so it may come later
   than 100 ms after the last free; the activity mode therefore polls (5 x 200 ms).
   Under a sanitizer (ASan shadow memory) the RSS assertions are skipped (MT_RSS_ASSERTS);
   the commit-figure and statistics checks still run. */
#include "memory-common.h"

#define MT_MARGIN   (8 * MiB)
#define MT_ACTIVITY_MARGIN (12 * MiB)
#define MT_COMMIT_MARGIN (16 * MiB)   /* whole segments: a few of the activity's own */
#define MT_TOTAL    (1 * GiB)
#define MT_GROWTH   (900 * MiB)   /* at least this much RSS while the workload is alive */
#define MT_LISTS    8

typedef struct node_s { struct node_s* next; } node_t;

static node_t* lists[MT_LISTS];
static size_t  alive_blocks;

static void push(size_t list, void* p) {
  node_t* n = (node_t*)p;
  n->next = lists[list];
  lists[list] = n;
  alive_blocks++;
}

static size_t free_all(void) {
  size_t freed = 0;
  for (size_t l = 0; l < MT_LISTS; l++) {
    node_t* n = lists[l];
    while (n != NULL) {
      node_t* next = n->next;
      mi_free(n);
      n = next;
      freed++;
    }
    lists[l] = NULL;
  }
  return freed;
}

static bool alloc_small(void) {
  uint64_t x = 42;
  size_t total = 0, i = 0;
  while (total < MT_TOTAL) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t size = 64 + 8 * (size_t)((x >> 33) % 57);   /* 64 .. 512 */
    void* p = mi_malloc(size);
    if (p == NULL) return false;
    memset(p, (int)(i & 0xFF) | 1, size);
    push((size_t)((x >> 45) % MT_LISTS), p);
    total += size;
    i++;
  }
  return true;
}

static bool alloc_large(void) {
  size_t total = 0, i = 0;
  while (total < MT_TOTAL) {
    const size_t size = ((i % 9) == 8 ? 8 * MiB : 1 * MiB);   /* half the bytes in each size */
    void* p = mi_malloc(size);
    if (p == NULL) return false;
    memset(p, (int)(i & 0xFF) | 1, size);
    push(i % MT_LISTS, p);
    total += size;
    i++;
  }
  return true;
}

int main(int argc, char** argv) {
  const char* kind = (argc > 1 ? argv[1] : "small");
  const char* mode = (argc > 2 ? argv[2] : "collect");
  const bool small = (strcmp(kind, "small") == 0);
  if (!small && strcmp(kind, "large") != 0) { fprintf(stderr, "unknown workload %s\n", kind); return 2; }
  long want_delay;
  if (strcmp(mode, "collect") == 0 || strcmp(mode, "activity") == 0) want_delay = 10;
  else if (strcmp(mode, "now") == 0) want_delay = 0;
  else if (strcmp(mode, "never") == 0) want_delay = -1;
  else { fprintf(stderr, "unknown mode %s\n", mode); return 2; }
  char name[64];
  snprintf(name, sizeof(name), "mem-rss %s %s", kind, mode);

  const long delay = mi_option_get(mi_option_purge_delay);
  CHECK_MSG(delay == want_delay, "purge_delay is %ld, mode %s needs %ld (MIMALLOC_PURGE_DELAY in the environment?)", delay, mode, want_delay);

  /* warm-up: the thread's first segments, stdio, the activity's own pages */
  mt_activity(5000);
  mi_collect(true);
  mt_activity(3000);   /* the state the activity mode ends in */
  const size_t rss0 = mt_rss();
  const int64_t commit0 = mt_stats()->committed.current;
  const long long t0 = mt_now_ms();

  const bool ok = (small ? alloc_small() : alloc_large());
  CHECK_MSG(ok, "the %s workload could not allocate its 1 GiB", kind);
  const size_t rss_peak = mt_rss();
  const int64_t commit_peak = mt_stats()->committed.current;
  const long long t1 = mt_now_ms();
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss_peak >= rss0 + MT_GROWTH, "RSS grew by only %.1f MiB while 1 GiB was alive", mt_mib_diff(rss_peak, rss0));
  }
  CHECK_MSG(commit_peak >= commit0 + (int64_t)MT_GROWTH, "committed grew by only %.1f MiB", (double)(commit_peak - commit0) / MiB);
  const size_t nblocks = alive_blocks;
  CHECK_EQ(free_all(), nblocks);

  size_t rss_end = 0;
  int64_t commit_end = 0;
  char note[256] = "";
  if (strcmp(mode, "collect") == 0) {
    mi_collect(true);
    rss_end = mt_rss();
    commit_end = mt_stats()->committed.current;
    if (MT_RSS_ASSERTS) {
      CHECK_MSG(rss_end <= rss0 + MT_MARGIN, "after mi_collect(true) the RSS is %.1f MiB above the start (margin %zu MiB)", mt_mib_diff(rss_end, rss0), MT_MARGIN / MiB);
    }
    CHECK_MSG(commit_end <= commit0 + (int64_t)MT_COMMIT_MARGIN, "after mi_collect(true) committed is %.1f MiB above the start", (double)(commit_end - commit0) / MiB);
  }
  else if (strcmp(mode, "activity") == 0) {
    const size_t rss_freed = mt_rss();
    int tries = 0;
    do {
      mt_sleep_ms(200);
      mt_activity(3000);
      tries++;
      rss_end = mt_rss();
      printf("round %d: RSS %+.1f MiB, committed %+.1f MiB\n", tries, mt_mib_diff(rss_end, rss0), (double)(mt_stats()->committed.current - commit0) / MiB);
    } while (tries < 5 && rss_end > rss0 + MT_ACTIVITY_MARGIN);
    commit_end = mt_stats()->committed.current;
    snprintf(note, sizeof(note), ", just after the frees %+.1f MiB, %d round(s) of sleep+activity", mt_mib_diff(rss_freed, rss0), tries);
    if (MT_RSS_ASSERTS) {
      CHECK_MSG(rss_end <= rss0 + MT_ACTIVITY_MARGIN, "after %d x (200 ms + activity) the RSS is %.1f MiB above the start (margin %zu MiB)", tries, mt_mib_diff(rss_end, rss0), MT_ACTIVITY_MARGIN / MiB);
    }
    CHECK_MSG(commit_end <= commit0 + (int64_t)MT_COMMIT_MARGIN, "after sleep+activity committed is %.1f MiB above the start", (double)(commit_end - commit0) / MiB);
  }
  else if (strcmp(mode, "now") == 0) {
    const size_t rss_freed = mt_rss();
    mi_collect(false);
    rss_end = mt_rss();
    commit_end = mt_stats()->committed.current;
    snprintf(note, sizeof(note), ", just after the frees %+.1f MiB", mt_mib_diff(rss_freed, rss0));
    if (MT_RSS_ASSERTS) {
      CHECK_MSG(rss_end <= rss0 + MT_MARGIN, "purge delay 0: after the frees and mi_collect(false) the RSS is %.1f MiB above the start (margin %zu MiB)", mt_mib_diff(rss_end, rss0), MT_MARGIN / MiB);
    }
    CHECK_MSG(commit_end <= commit0 + (int64_t)MT_COMMIT_MARGIN, "purge delay 0: committed is %.1f MiB above the start", (double)(commit_end - commit0) / MiB);
  }
  else {   /* never */
    mi_collect(true);
    mt_sleep_ms(250);
    mt_activity(3000);
    mi_collect(true);
    rss_end = mt_rss();
    commit_end = mt_stats()->committed.current;
    if (MT_RSS_ASSERTS) {
      CHECK_MSG(rss_end >= rss0 + MT_GROWTH, "purge delay -1: the RSS fell to %.1f MiB above the start", mt_mib_diff(rss_end, rss0));
    }
    CHECK_MSG(commit_end >= commit0 + (int64_t)MT_GROWTH, "purge delay -1: committed fell to %.1f MiB above the start", (double)(commit_end - commit0) / MiB);
    const mi_stats_t* s = mt_stats();
    CHECK_EQ(s->purged.total, 0);
    CHECK_EQ(s->purge_calls.total, 0);
    CHECK_EQ(s->arena_purges.total, 0);
  }
  /* the memory is usable again after all that */
  void* again = mi_zalloc(small ? 200 : 8 * MiB);
  CHECK(again != NULL && mt_is_zero(again, small ? 200 : 8 * MiB));
  mi_free(again);

  return test_summary(name, "%zu blocks, alloc %lld ms; RSS start %.1f MiB, peak %+.1f MiB, end %+.1f MiB%s; committed peak %+.1f MiB, end %+.1f MiB%s",
                      nblocks, t1 - t0, mt_mib(rss0), mt_mib_diff(rss_peak, rss0), mt_mib_diff(rss_end, rss0), note,
                      (double)(commit_peak - commit0) / MiB, (double)(commit_end - commit0) / MiB,
                      (MT_RSS_ASSERTS ? "" : " (sanitizer build: RSS not asserted)"));
}
