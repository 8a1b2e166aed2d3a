/* SPDX-License-Identifier: MIT */
/* stats-threads.c -- statistics under threads (ctest stats-threads, label stats).

   Rounds of worker threads allocate blocks of all kinds (small, medium, large, the odd huge
   one), hand half of them to other threads through a shared exchange (cross-thread frees),
   merge and print their own figures now and then, and exit with live blocks (abandoned
   pages and segments); the next round frees some of those and allocates (reclaiming
   abandoned segments). Meanwhile a sampler thread keeps reading the process figures:
   mi_stats_get, mi_stats_print_out and mi_stats_get_json into its own buffers, with an
   occasional mi_stats_reset and mi_stats_merge. Checked at every sample:
     - no figure of mi_stats_get is negative, no printed figure is negative (no '-' after a
       row's label), no JSON number is negative; every output call is one line;
     - the same for each worker's mi_thread_stats_print_out.
   At the end, with every block freed, every thread joined and mi_collect(true) (which
   reclaims what is still abandoned): pages and, with per-block statistics, binned (and each
   bin of the JSON) are back to the baseline taken before the first thread; nothing is
   abandoned; threads current is back to 1; peak >= current and total >= current everywhere.

   Arguments: workers rounds iterations (default 6 4 3000). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "stats-common.h"

#define XSLOTS 1024
#define LIVE_MAX 200
#define MAX_WORKERS 16

static ts_build_t build;
static int workers = 6, rounds = 4, iterations = 3000;
static _Atomic(void*) xslots[XSLOTS];
static _Atomic(int) done;
static _Atomic(long) samples, thread_prints;
static pthread_mutex_t left_lock = PTHREAD_MUTEX_INITIALIZER;
static void* leftover[MAX_WORKERS * LIVE_MAX * 8];
static size_t nleft;
static pthread_attr_t attr;

/* ---------------------------------------------------------------------------------------
   Sampler
--------------------------------------------------------------------------------------- */
static ts_capture_t sampler_cap;
static char sampler_json[1 << 20];

static bool json_negative(const char* json) {
  for (const char* p = json; (p = strchr(p, ':')) != NULL; p++) {
    const char* q = p + 1;
    while (*q == ' ') q++;
    if (*q == '-') return true;
  }
  return false;
}

static void sample(void) {
  mi_stats_t_decl(s);
  CHECK(mi_stats_get(&s));
  char why[256];
  const char* neg = ts_check_nonneg(&s, false, why, sizeof(why));
  CHECK_MSG(neg == NULL, "mi_stats_get while threads run: %s", why);
  ts_capture_reset(&sampler_cap);
  mi_stats_print_out(&ts_capture_out, &sampler_cap);
  ts_capture_split(&sampler_cap);
  CHECK_MSG(sampler_cap.bad_calls == 0, "output call that is not one line: \"%s\"", sampler_cap.first_bad);
  const int line = ts_text_negative_line(&sampler_cap);
  CHECK_MSG(line < 0, "printed while threads run: \"%s\"", line < 0 ? "" : sampler_cap.lines[line]);
  CHECK_MSG(ts_find_line(&sampler_cap, 0, "   process:") == sampler_cap.nlines - 1, "text cut short (%d lines)", sampler_cap.nlines);
  char* j = mi_stats_get_json(sizeof(sampler_json), sampler_json);
  CHECK(j == sampler_json);
  if (j != NULL) CHECK_MSG(!json_negative(j), "negative number in the JSON while threads run");
  atomic_fetch_add(&samples, 1);
}

/* Until the sampler has taken n samples, at most 30 s (the check on `samples` then fails). */
static void wait_samples(long n) {
  for (int ms = 0; ms < 30000 && atomic_load(&samples) < n; ms++) {
    struct timespec ts = { 0, 1000000 };
    nanosleep(&ts, NULL);
  }
}

static void* sampler_main(void* arg) {
  (void)arg;
  long n = 0;
  while (!atomic_load(&done)) {
    sample();
    n++;
    if (n % 40 == 0) mi_stats_reset();
    if (n % 7 == 0) mi_stats_merge();
    if (n % 3 == 0) sched_yield();
  }
  sample();
  return NULL;
}

/* ---------------------------------------------------------------------------------------
   Workers
--------------------------------------------------------------------------------------- */
static size_t pick_size(test_rng_t* r) {
  const uint64_t k = test_rand_below(r, 1000);
  if (k < 700) return (size_t)test_rand_range(r, 1, 512);
  if (k < 900) return (size_t)test_rand_range(r, 513, 16 * 1024);
  if (k < 980) return (size_t)test_rand_range(r, 16 * 1024 + 1, 256 * 1024);
  if (k < 998) return (size_t)test_rand_range(r, 256 * 1024 + 1, 1536 * 1024);
  return (size_t)test_rand_range(r, 2560 * 1024, 4 * 1024 * 1024);   /* huge */
}

static ts_capture_t worker_cap[MAX_WORKERS];

typedef struct worker_arg_s { int id; int round; } worker_arg_t;

static void* worker_main(void* argp) {
  const worker_arg_t* arg = (const worker_arg_t*)argp;
  test_rng_t r = { (uint64_t)(arg->round * 1000 + arg->id + 1) };
  void* live[LIVE_MAX];
  int nlive = 0;
  /* some of the blocks earlier threads left behind (maybe in abandoned pages) */
  pthread_mutex_lock(&left_lock);
  for (int k = 0; k < 50 && nleft > 0; k++) mi_free(leftover[--nleft]);
  pthread_mutex_unlock(&left_lock);
  for (int i = 0; i < iterations; i++) {
    const size_t size = pick_size(&r);
    unsigned char* p = (unsigned char*)mi_malloc(size);
    CHECK(p != NULL);
    if (p == NULL) continue;
    p[0] = (unsigned char)i;
    p[size - 1] = (unsigned char)i;
    if (test_rand_below(&r, 2) == 0) {
      /* to another thread: whatever was in the slot is freed here */
      void* old = atomic_exchange(&xslots[test_rand_below(&r, XSLOTS)], (void*)p);
      mi_free(old);
    }
    else {
      if (nlive == LIVE_MAX) {
        const int k = (int)test_rand_below(&r, LIVE_MAX);
        mi_free(live[k]);
        live[k] = live[--nlive];
      }
      live[nlive++] = p;
    }
    if (i % 500 == 250) mi_stats_merge();
    if (i % 1000 == 999) {
      ts_capture_t* c = &worker_cap[arg->id];
      ts_capture_reset(c);
      mi_thread_stats_print_out(&ts_capture_out, c);
      ts_capture_split(c);
      CHECK_MSG(c->bad_calls == 0, "thread print: output call that is not one line: \"%s\"", c->first_bad);
      const int line = ts_text_negative_line(c);
      CHECK_MSG(line < 0, "thread print: \"%s\"", line < 0 ? "" : c->lines[line]);
      CHECK(ts_find_line(c, 0, "   process:") == c->nlines - 1);
      atomic_fetch_add(&thread_prints, 1);
    }
    if (i % 700 == 0) {
      mi_stats_t_decl(s);
      mi_stats_get(&s);
      char why[256];
      CHECK_MSG(ts_check_nonneg(&s, false, why, sizeof(why)) == NULL, "worker mi_stats_get: %s", why);
    }
  }
  /* half of the live blocks stay behind: the thread exits with them (abandoned) */
  for (int k = 0; k < nlive / 2; k++) mi_free(live[k]);
  pthread_mutex_lock(&left_lock);
  for (int k = nlive / 2; k < nlive; k++) leftover[nleft++] = live[k];
  pthread_mutex_unlock(&left_lock);
  return NULL;
}

static void* nop(void* arg) { return arg; }

static void get_stats(mi_stats_t* s) {
  memset(s, 0, sizeof(*s));
  s->size = sizeof(mi_stats_t);
  s->version = MI_STAT_VERSION;
  CHECK(mi_stats_get(s));
}

static char json[1 << 20];
static ts_bin_t base_bins[TS_BINS_MAX], end_bins[TS_BINS_MAX];

int main(int argc, char** argv) {
  workers = (int)test_arg(argc, argv, 1, workers);
  rounds = (int)test_arg(argc, argv, 2, rounds);
  iterations = (int)test_arg(argc, argv, 3, iterations);
  if (workers > MAX_WORKERS) workers = MAX_WORKERS;
  build = ts_detect_build();
  /* small stacks that the C library keeps for reuse: its per-thread allocations (made by the
     creating thread) are done in the warm-up and stay the same afterwards */
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  {
    pthread_t t[MAX_WORKERS + 1];
    for (int i = 0; i <= workers; i++) CHECK_EQ(pthread_create(&t[i], &attr, &nop, NULL), 0);
    for (int i = 0; i <= workers; i++) pthread_join(t[i], NULL);
  }
  mi_collect(true);
  mi_stats_merge();
  mi_stats_t base;
  get_stats(&base);
  CHECK(mi_stats_get_json(sizeof(json), json) == json);
  CHECK(ts_json_bins(json, "malloc_bins", base_bins, TS_BINS_MAX) > 0);

  pthread_t sampler;
  CHECK_EQ(pthread_create(&sampler, &attr, &sampler_main, NULL), 0);
  wait_samples(1);   /* the sampler runs before the workers start: they overlap however loaded the machine */
  worker_arg_t args[MAX_WORKERS];
  for (int round = 0; round < rounds; round++) {
    pthread_t t[MAX_WORKERS];
    for (int i = 0; i < workers; i++) {
      args[i].id = i;
      args[i].round = round;
      CHECK_EQ(pthread_create(&t[i], &attr, &worker_main, &args[i]), 0);
    }
    for (int i = 0; i < workers; i++) pthread_join(t[i], NULL);
    /* between rounds: abandoned memory exists now */
    mi_stats_merge();
    mi_stats_t mid;
    get_stats(&mid);
    char why[256];
    CHECK_MSG(ts_check_nonneg(&mid, false, why, sizeof(why)) == NULL, "between rounds: %s", why);
    CHECK_EQ(mid.threads.current, base.threads.current);   /* the workers are gone; the sampler never allocates */
  }
  wait_samples(10);  /* a few more (a loaded machine ran 7 while two rounds ran) */
  atomic_store(&done, 1);
  pthread_join(sampler, NULL);

  /* free everything, then collect (reclaiming whatever is still abandoned) */
  for (size_t k = 0; k < nleft; k++) mi_free(leftover[k]);
  nleft = 0;
  for (size_t k = 0; k < XSLOTS; k++) mi_free(atomic_exchange(&xslots[k], NULL));
  mi_collect(true);
  mi_stats_merge();
  mi_stats_t end;
  get_stats(&end);
  char why[256];
  CHECK_MSG(ts_check_nonneg(&end, true, why, sizeof(why)) == NULL, "at the end: %s", why);
  CHECK_EQ(end.threads.current, base.threads.current);
  CHECK_GE(end.threads.total, end.threads.current);   /* the sampler reset the totals now and then */
  CHECK_EQ(end.pages_abandoned.current, 0);
  CHECK_EQ(end.segments_abandoned.current, 0);
  CHECK_EQ(end.pages.current, base.pages.current);
  CHECK_EQ(end.segments.current, base.segments.current);
  CHECK_EQ(end.malloc_huge.current, base.malloc_huge.current);
  CHECK_EQ(end.segments_cache.current, 0);
  if (build.stat_level >= 2) {
    CHECK_EQ(end.malloc_normal.current, base.malloc_normal.current);
    CHECK(mi_stats_get_json(sizeof(json), json) == json);
    CHECK(ts_json_bins(json, "malloc_bins", end_bins, TS_BINS_MAX) > 0);
    for (int b = 0; b < TS_BINS_MAX; b++) {
      CHECK_MSG(end_bins[b].current == base_bins[b].current, "bin %d: %lld blocks live at the end, %lld at the start",
                b, (long long)end_bins[b].current, (long long)base_bins[b].current);
    }
  }
  CHECK_GE(atomic_load(&samples), 10);
  CHECK_GE(atomic_load(&thread_prints), 1);
  return test_summary("stats-threads", "%s build, statistics level %d, %d workers x %d rounds x %d, %ld samples",
                      build.debug ? "debug" : "release", build.stat_level, workers, rounds, iterations, (long)atomic_load(&samples));
}
