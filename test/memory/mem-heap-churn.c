/* SPDX-License-Identifier: MIT */
/* mem-heap-churn.c -- a heap made and deleted per request keeps nothing.

   Usage: mem-heap-churn plain|shared|profile [iterations]   (default 100000)
     One thread, in a loop: a heap (mi_heap_new, or mi_heap_new_shared: its part in this
     thread), one 64-byte block allocated in it and freed, the heap deleted. The pages a deleted
     heap moves into the thread's backing heap (heap.c, mi_heap_absorb) that hold no block must
     go back to their segments: before, each delete left one empty 64 KiB page in the backing
     heap's queue of the class, where only an allocation of that class would look again (the
     backing heap allocates other sizes here), so the loop grew by 64 KiB committed and 4 KiB
     resident per iteration (test-sheap's fork churn, section 3, ran away past 20 GiB while a
     slow child kept its loop going). `profile` is `shared` meant to run with the profiler on
     (its sample heap's pages move too).
   Checks, from the allocator's own statistics (valid under sanitizers too): pages in use at
   the end at most MT_CHURN_PAGES, and committed memory grown by at most MT_CHURN_COMMIT over
   the loop; and the RSS (not under sanitizers) by at most the same. */
#include "memory-common.h"

#define MT_CHURN_PAGES   16           /* pages in use after the loop (the backing heap's few) */
#define MT_CHURN_COMMIT  (32 * MiB)   /* growth of committed memory and of the RSS over the loop */

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "plain");
  const long n = (argc > 2 ? atol(argv[2]) : 100000);
  const bool shared = (strcmp(mode, "plain") != 0);
  void* warm = mi_malloc(100);   /* the thread's heap exists before the baseline */
  mi_free(warm);
  const size_t rss0 = mt_rss();
  const int64_t committed0 = mt_stats()->committed.current;
  for (long i = 0; i < n; i++) {
    mi_heap_t* h = (shared ? mi_heap_new_shared() : mi_heap_new());
    CHECK(h != NULL);
    if (h == NULL) break;
    void* p = mi_heap_malloc(h, 64);
    CHECK(p != NULL);
    mi_free(p);
    mi_heap_delete(h);
  }
  const mi_stats_t* s = mt_stats();
  const int64_t pages = s->pages.current;
  const int64_t committed = s->committed.current - committed0;
  const size_t rss1 = mt_rss();
  CHECK_MSG(pages <= MT_CHURN_PAGES, "%lld pages in use after %ld heaps made and deleted (at most %d)", (long long)pages, n, MT_CHURN_PAGES);
  CHECK_MSG(committed <= (int64_t)MT_CHURN_COMMIT, "committed grew by %.1f MiB over %ld heaps (at most %zu MiB)", (double)committed / MiB, n, MT_CHURN_COMMIT / MiB);
  if (MT_RSS_ASSERTS) CHECK_MSG(rss1 <= rss0 + MT_CHURN_COMMIT, "the RSS grew by %.1f MiB over %ld heaps", mt_mib_diff(rss1, rss0), n);
  char name[64];
  snprintf(name, sizeof(name), "mem-heap-churn %s", mode);
  return test_summary(name, "%ld heaps: %lld pages in use, committed %+.1f MiB, RSS %+.1f MiB",
                      n, (long long)pages, (double)committed / MiB, mt_mib_diff(rss1, rss0));
}
