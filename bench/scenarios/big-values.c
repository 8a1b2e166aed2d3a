/* SPDX-License-Identifier: MIT */
/* big-values: 4 threads keep a shared cache of 64 MiB values under a 1 GiB cap, evicting the
 * oldest (a key-value store of big blobs), for 400 sets.
 *
 * Each set builds a value by realloc doubling from 1 MiB to 64 MiB
 * (memset of each new part), then, under the cache's lock, inserts it and takes out the oldest
 * when the cache holds 16; the evicting thread frees the evicted value outside the lock.
 *
 * Reported (MiB): live_mib, the values in the cache at the end; max_rss_mib, the highest RSS
 * read at each set under the lock; end_rss_mib, RSS right after the threads are joined;
 * later_rss_mib, RSS `-w` ms later (default 1000), the cache still full. A run whose RSS passes
 * `-x` MiB (default 4096, 4x the cap; mimalloc 2.4.1 was seen at 14.5 GB) stops with exit
 * status 3, so that a run-away allocator fails instead of exhausting the machine.
 *
 *   big-values [-q] [-t THREADS] [-n SETS] [-w MS] [-x MIB]   -q: 4 MiB values, 40 sets, -w 100 */
#include "scenario.h"

#define PROG "big-values"
#define SLOTS 16 /* the cap: 16 values */

static size_t g_value_size = (size_t)64 << 20;
static long g_sets = 400;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *g_cache[SLOTS];
static size_t g_count, g_oldest; /* a ring: g_cache[g_oldest] is evicted next */
static long g_next_set;
static double g_max_rss;
static double g_guard_mib = 4096; /* -x: 4x the cap */

static unsigned char *build_value(unsigned char tag) {
  size_t size = (size_t)1 << 20;
  unsigned char *p = sc_xmalloc(size, PROG);
  memset(p, tag, size);
  while (size < g_value_size) {
    unsigned char *q = realloc(p, 2 * size);
    if (q == NULL) {
      fprintf(stderr, "%s: realloc to %zu bytes failed\n", PROG, 2 * size);
      exit(1);
    }
    memset(q + size, tag, size);
    p = q;
    size *= 2;
  }
  return p;
}

static void check_value(const unsigned char *p) {
  if (p[0] != p[g_value_size - 1] || p[0] != p[g_value_size / 2]) {
    fprintf(stderr, "CORRUPT %s: value %p changed\n", PROG, (const void *)p);
    exit(1);
  }
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&g_lock);
    long set = g_next_set++;
    pthread_mutex_unlock(&g_lock);
    if (set >= g_sets) return NULL;
    unsigned char *value = build_value((unsigned char)(set * 7 + 1));
    unsigned char *evicted = NULL;
    pthread_mutex_lock(&g_lock);
    if (g_count == SLOTS) {
      evicted = g_cache[g_oldest];
      g_cache[g_oldest] = value;
      g_oldest = (g_oldest + 1) % SLOTS;
    } else {
      g_cache[(g_oldest + g_count++) % SLOTS] = value;
    }
    double rss = sc_rss_mib();
    if (rss > g_max_rss) g_max_rss = rss;
    if (rss > g_guard_mib) { /* a run away: stop before the machine runs out of memory */
      fprintf(stderr, "%s: RSS %.0f MiB at set %ld, above the guard of %.0f MiB (-x)\n", PROG,
              rss, set, g_guard_mib);
      _exit(3);
    }
    pthread_mutex_unlock(&g_lock);
    if (evicted != NULL) {
      check_value(evicted);
      free(evicted);
    }
  }
}

int main(int argc, char **argv) {
  int threads = 4;
  unsigned long wait_ms = 1000;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-q") == 0) {
      g_value_size = (size_t)4 << 20;
      g_sets = 40;
      wait_ms = 100;
    } else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
      threads = (int)bench_arg(argv[++i], "threads");
    } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      g_sets = (long)bench_arg(argv[++i], "sets");
    } else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
      wait_ms = (unsigned long)bench_arg(argv[++i], "wait ms");
    } else if (strcmp(argv[i], "-x") == 0 && i + 1 < argc) {
      g_guard_mib = (double)bench_arg(argv[++i], "guard MiB");
    } else {
      fprintf(stderr, "usage: %s [-q] [-t THREADS] [-n SETS] [-w MS] [-x MIB]\n", PROG);
      return 2;
    }
  }
  double t0 = bench_now();
  pthread_t th[64];
  if (threads > 64) threads = 64;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&th[i], NULL, worker, NULL) != 0) {
      fprintf(stderr, "%s: pthread_create failed\n", PROG);
      return 1;
    }
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  double elapsed = bench_now() - t0;
  double end_rss = sc_rss_mib();
  sc_sleep_ms(wait_ms);
  double later_rss = sc_rss_mib();
  double live = (double)g_count * (double)g_value_size / SC_MIB;
  for (size_t i = 0; i < g_count; i++) {
    check_value(g_cache[i]);
    free(g_cache[i]);
  }
  printf("RESULT prog=%s threads=%d sets=%ld value_mib=%.0f live_mib=%.1f max_rss_mib=%.1f "
         "end_rss_mib=%.1f later_rss_mib=%.1f later_ms=%lu elapsed_s=%.3f",
         PROG, threads, g_sets, (double)g_value_size / SC_MIB, live, g_max_rss, end_rss,
         later_rss, wait_ms, elapsed);
  bench_print_origin();
  return 0;
}
