/* SPDX-License-Identifier: MIT */
/* mem-churn.c -- threads that end while blocks they allocated live on (memory-churn-* tests).

   Worker threads are started `conc` at a time, `threads` in all. Each allocates `blocks` blocks
   of the size class `sizes`, stamps them (a tag at both ends and in every 4 KiB page, so every
   page is touched), checks and frees all but `handed` of them and ends; the joining thread
   (main) takes the handed blocks over and checks and frees them after `delay` more threads have
   ended. With `alloc`, main also allocates: a block of the same class per block it frees, kept
   in a ring of 64 (a consumer that produces too). So segments of ended threads hold live blocks
   while thousands of other threads come and go, and their last blocks are freed by a thread
   that may never allocate.

   Checked (no mi_collect anywhere; "settle" = wait for the purge delays, then ordinary
   allocator activity, which runs the due purges):
   - every block's stamps, when it is freed (no block lost or overwritten);
   - resident memory (/proc/self/statm), its peak over the batches and, settled, at the end
     while the last `delay` threads' blocks are still live;
   - address space (statm size) likewise;
   - after main has freed everything and settled: resident within 24 MiB of the start, address
     space within 64 MiB (glibc keeps up to 40 MiB of thread stacks for reuse).

   The bounds, above the start, derived from L, the most bytes the program held live at once:
     settled resident  2 L + 68 MiB.  A block rounds up by less than 1/8 (size classes) plus its
                       page's unused tail; 2 L covers both with room for pages that hold a few
                       live blocks. 68 MiB: unused slots left resident in abandoned segments
                       (the orphan budget: 16 MiB, MI_ABANDONED_RESIDENT_MAX, up to 64 MiB
                       while threads keep taking ended threads' purged slots again; it decays
                       a second later), thread stacks and metadata.
     peak resident     2 L + 104 MiB: also the free arena blocks waiting for their purge (32 MiB,
                       MI_ARENA_UNPURGED_MAX) and page slots in the threads' purge queues.
     (3 L in the Debug build: it fills every freed block with a pattern that the next malloc
     checks, which keeps the free blocks of pages still in use resident.)
     address space     4 L + 1.25 GiB: the first arena reservation (1 GiB), segments of 4 MiB
                       only partly filled, thread stacks (8 MiB each, `conc` live at once).
     page faults       0.3 per OS page the blocks' stamps touch, plus 8 per thread (its stack
                       and thread data), except for huge blocks (their own segments, unmapped
                       or purged when freed): threads take the resident unused memory of ended
                       threads before fresh or purged memory. When ended threads' slots were
                       purged beyond a fixed 16 MiB and a reclaim took any abandoned segment,
                       mixed, medium and large took 0.4-0.8 faults per page (now 0.04-0.2).
   Before abandoned segments released themselves and were reclaimed by size class, every case
   here exceeded a bound (resident and address space grew with the number of threads: 150+ MiB
   and tens of GiB after 20,000 threads of the small case).

   usage: mem-churn huge-now   (see huge_now_mode)
          mem-churn sizes=small|medium|large|huge|mixed delay=N [threads=N] [conc=N]
                    [blocks=N] [handed=N] [alloc=0|1] */
#include "memory-common.h"
#include "rss-guard.h"
#include <pthread.h>

#ifdef NDEBUG
#define MT_CHURN_LIVE_FACTOR      2
#else   /* the Debug build (MI_DEBUG): freed blocks are filled and kept resident (see above) */
#define MT_CHURN_LIVE_FACTOR      3
#endif
#define MT_CHURN_RSS_BOUND(live)  (MT_CHURN_LIVE_FACTOR * (live) + 68 * MiB)
#define MT_CHURN_PEAK_BOUND(live) (MT_CHURN_LIVE_FACTOR * (live) + 104 * MiB)
#define MT_CHURN_VSZ_BOUND(live)  (4 * (live) + GiB + 256 * MiB)
#define MT_CHURN_FAULTS_BOUND(pages, threads)  ((pages) * 3 / 10 + 8 * (threads))
#define MT_CHURN_MAX_BLOCKS       16
#define MT_CHURN_MAX_CONC         8

typedef struct churn_class_s { const char* name; size_t min, max; } churn_class_t;
static const churn_class_t churn_classes[] = {
  { "small",  16,             1024 },
  { "medium", 16 * KiB + 1,   400 * KiB },
  { "large",  600 * KiB,      2 * MiB },
  { "huge",   2 * MiB + 1,    6 * MiB },
  { "mixed",  16,             256 * KiB },
};

static const churn_class_t* cls;
static size_t threads = 4000, conc = 4, blocks = 6, handed = 3, delay = 1000;
static bool main_allocs = false;

/* ---- blocks: size log-uniform in the class, tag at both ends and every 4 KiB ---- */
typedef struct churn_block_s { uint8_t* p; size_t size; uint64_t tag; size_t born; } churn_block_t;

static uint64_t churn_rand(uint64_t* x) {
  *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
  return *x;
}

static size_t churn_size(uint64_t* x) {
  /* log-uniform: a random power-of-two scale, then uniform within it */
  size_t lo = cls->min;
  const size_t hi = cls->max;
  size_t span = 1;
  while (lo * 2 <= hi) { lo *= 2; span++; }
  const size_t k = (size_t)(churn_rand(x) % span);
  size_t a = cls->min << k;
  size_t b = (a * 2 > hi ? hi : a * 2);
  if (a > hi) a = hi;
  return a + (size_t)(churn_rand(x) % (b - a + 1));
}

static void churn_stamp(churn_block_t* b) {
  for (size_t off = 0; off + 16 <= b->size; off += 4096) memcpy(b->p + off, &b->tag, 8);   /* clear of the tail */
  memcpy(b->p + b->size - 8, &b->tag, 8);
}

static _Atomic(long) churn_corrupt;
static void churn_check_free(churn_block_t* b) {
  bool ok = true;
  for (size_t off = 0; off + 16 <= b->size; off += 4096) ok = ok && memcmp(b->p + off, &b->tag, 8) == 0;
  ok = ok && memcmp(b->p + b->size - 8, &b->tag, 8) == 0;
  if (!ok && churn_corrupt++ < 5) {
    size_t off = 0; uint64_t v = 0;
    for (off = 0; off + 8 <= b->size; off += 4096) { memcpy(&v, b->p + off, 8); if (v != b->tag) break; }
    if (off + 8 > b->size) { off = b->size - 8; memcpy(&v, b->p + off, 8); }
    fprintf(stderr, "block %p of %zu bytes (tag %llx) was overwritten at offset %zu: %llx\n", (void*)b->p, b->size, (unsigned long long)b->tag, off, (unsigned long long)v);
  }
  if (!test_rss_leak()) mi_free(b->p);   /* (MI_TEST_RSS_LEAK=1: leaked, counted as freed) */
  test_live_sub(b->size);
  b->p = NULL;
}

static _Atomic(size_t) churn_pages_stamped;   /* OS pages the stamps of all blocks touched */

static bool churn_alloc(churn_block_t* b, uint64_t* x, uint64_t tag) {
  b->size = churn_size(x);
  churn_pages_stamped += (b->size + 4095) / 4096;
  b->tag = tag;
  test_live_add(b->size);   /* the RSS guard's live bytes (rss-guard.h): every block, the workers' too */
  b->p = (uint8_t*)mi_malloc(b->size);
  if (b->p == NULL) { test_live_sub(b->size); return false; }
  churn_stamp(b);
  return true;
}

/* ---- workers ---- */
typedef struct churn_job_s {
  pthread_t tid;
  size_t index;
  bool failed;
  churn_block_t kept[MT_CHURN_MAX_BLOCKS];
} churn_job_t;

static void* churn_worker(void* arg) {
  churn_job_t* job = (churn_job_t*)arg;
  uint64_t x = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)job->index * 0x2545F4914F6CDD1DULL);
  churn_block_t all[MT_CHURN_MAX_BLOCKS];
  for (size_t i = 0; i < blocks; i++) {
    if (!churn_alloc(&all[i], &x, ((uint64_t)job->index << 8) | i)) { job->failed = true; all[i].p = NULL; }
  }
  for (size_t i = 0; i < blocks; i++) {
    if (i < handed) job->kept[i] = all[i];
    else if (all[i].p != NULL) churn_check_free(&all[i]);
  }
  return NULL;
}

/* ---- the blocks main holds: a FIFO of handed blocks, and its own ring ---- */
static churn_block_t* fifo;
static size_t fifo_cap, fifo_head, fifo_len;
static size_t live_bytes, live_max;
static churn_block_t own[64];
static uint64_t own_x = 12345;
static size_t own_count;

static void live_add(size_t n) { live_bytes += n; if (live_bytes > live_max) live_max = live_bytes; }

static void fifo_push(churn_block_t b) {
  fifo[(fifo_head + fifo_len++) % fifo_cap] = b;
  live_add(b.size);
}

static void fifo_pop_free(void) {
  churn_block_t* b = &fifo[fifo_head];
  fifo_head = (fifo_head + 1) % fifo_cap;
  fifo_len--;
  live_bytes -= b->size;
  churn_check_free(b);
  if (main_allocs) {
    churn_block_t* o = &own[own_count++ % 64];
    if (o->p != NULL) { live_bytes -= o->size; churn_check_free(o); }
    if (churn_alloc(o, &own_x, ((uint64_t)1 << 63) | own_count)) live_add(o->size);
  }
}

/* wait for the purge delays, then ordinary activity (runs the due purges) */
static void churn_settle(void) {
  const long delay_ms = mi_option_get(mi_option_purge_delay);
  const long mult = mi_option_get(mi_option_arena_purge_mult);
  const long wait = (delay_ms <= 0 ? 0 : 2 * delay_ms * (mult > 1 ? mult : 1)) + 20;
  for (int round = 0; round < 2; round++) {
    mt_sleep_ms(wait);
    mt_activity(3000);
  }
}

static bool churn_arg(const char* a, const char* key, size_t* v) {
  const size_t n = strlen(key);
  if (strncmp(a, key, n) != 0 || a[n] != '=') return false;
  *v = (size_t)strtoull(a + n + 1, NULL, 10);
  return true;
}

/* `huge-now`: huge blocks of an ended thread, freed by another thread, give back their memory
   and their segment at once (no wait, no allocation, no collect): one of 64 MiB (from an arena)
   and one of 300 MiB (straight from the OS), both touched. Right after the two frees: resident
   down by at least 330 MiB, address space down by at least 300 MiB (the OS mapping is gone),
   no abandoned segment left and the segment count back where it was. Before, a thread that
   starts and allocates does not take the huge segments over. */
static void* huge_blocks[2];
static void* huge_thread(void* arg) {
  (void)arg;
  const size_t sizes[2] = { 64 * MiB, 300 * MiB };
  for (int i = 0; i < 2; i++) {
    huge_blocks[i] = mi_malloc(sizes[i]);
    if (huge_blocks[i] != NULL) memset(huge_blocks[i], 0x5a, sizes[i]);
  }
  return NULL;
}

/* a fresh thread that needs a page reclaims ended threads' segments, but never a huge one (it
   has no room, and the free of its block releases it anyway) */
static _Atomic(long long) huge_seen_abandoned = -1;
static void* huge_bystander(void* arg) {
  (void)arg;
  void* p = mi_malloc(100);
  huge_seen_abandoned = mt_stats()->segments_abandoned.current;
  mi_free(p);
  return NULL;
}

static int huge_now_mode(void) {
  mt_activity(1000);
  const int64_t segments0 = mt_stats()->segments.current;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &huge_thread, NULL) == 0);
  pthread_join(t, NULL);
  CHECK(huge_blocks[0] != NULL && huge_blocks[1] != NULL);
  CHECK(pthread_create(&t, NULL, &huge_bystander, NULL) == 0);
  pthread_join(t, NULL);
  CHECK_EQ(huge_seen_abandoned, 2);
  const size_t rss1 = mt_rss(), vsz1 = mt_vsz();
  CHECK_EQ(mt_stats()->segments_abandoned.current, 2);
  mi_free(huge_blocks[0]);
  mi_free(huge_blocks[1]);
  const size_t rss2 = mt_rss(), vsz2 = mt_vsz();
  const mi_stats_t* st = mt_stats();
  printf("huge blocks of an ended thread freed: resident -%.1f MiB, address space -%.0f MiB, abandoned segments %lld, segments %lld (before %lld)\n",
         mt_mib_diff(rss1, rss2), mt_mib_diff(vsz1, vsz2), (long long)st->segments_abandoned.current, (long long)st->segments.current, (long long)segments0);
  CHECK_EQ(st->segments_abandoned.current, 0);
  CHECK_EQ(st->segments.current, segments0);
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss2 + 330 * MiB <= rss1, "resident only -%.1f MiB", mt_mib_diff(rss1, rss2));
    CHECK_MSG(vsz2 + 300 * MiB <= vsz1, "address space only -%.0f MiB", mt_mib_diff(vsz1, vsz2));
  }
  return test_summary("memory-churn", "huge-now");
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "huge-now") == 0) return huge_now_mode();
  for (int i = 1; i < argc; i++) {
    size_t v;
    if (strncmp(argv[i], "sizes=", 6) == 0) {
      for (size_t k = 0; k < sizeof(churn_classes) / sizeof(churn_classes[0]); k++) {
        if (strcmp(argv[i] + 6, churn_classes[k].name) == 0) cls = &churn_classes[k];
      }
    }
    else if (churn_arg(argv[i], "delay", &delay) || churn_arg(argv[i], "threads", &threads) ||
             churn_arg(argv[i], "conc", &conc) || churn_arg(argv[i], "blocks", &blocks) ||
             churn_arg(argv[i], "handed", &handed)) { }
    else if (churn_arg(argv[i], "alloc", &v)) main_allocs = (v != 0);
    else { fprintf(stderr, "unknown argument '%s'\n", argv[i]); return 2; }
  }
  if (cls == NULL || conc == 0 || conc > MT_CHURN_MAX_CONC || blocks == 0 || blocks > MT_CHURN_MAX_BLOCKS || handed > blocks) {
    fprintf(stderr, "usage: mem-churn sizes=small|medium|large|huge|mixed delay=N [threads=N] [conc<=%d] [blocks<=%d] [handed<=blocks] [alloc=0|1]\n",
            MT_CHURN_MAX_CONC, MT_CHURN_MAX_BLOCKS);
    return 2;
  }
  /* The RSS guard (rss-guard.h) watches between the batches too: MT_CHURN_PEAK_BOUND's factor on
     the peak of every block live (the workers' as well) + 128 MiB (the peak bound's 104 MiB and
     a margin for the moments between the samples above), scaled under the sanitizers. Measured
     with every build (2 busy cores): at most 18 MiB above that factor x peak live. */
  test_rss_guard_start("memory-churn", MT_CHURN_LIVE_FACTOR, 128);
  fifo_cap = (delay + conc + 1) * handed + 1;
  fifo = (churn_block_t*)calloc(fifo_cap, sizeof(churn_block_t));
  CHECK(fifo != NULL);
  if (fifo == NULL) return test_summary("memory-churn", "no memory");

  mt_activity(1000);   /* the main thread's heap and the first arena exist */
  const size_t rss0 = mt_rss(), vsz0 = mt_vsz();
  size_t rss_peak = rss0, vsz_peak = vsz0;
  bool failed = false;
  const long long t0 = mt_now_ms();
  const long faults0 = mt_minor_faults();
  churn_job_t jobs[MT_CHURN_MAX_CONC];
  for (size_t t = 0; t < threads; t += conc) {
    const size_t n = (threads - t < conc ? threads - t : conc);
    for (size_t k = 0; k < n; k++) {
      memset(&jobs[k], 0, sizeof(jobs[k]));
      jobs[k].index = t + k;
      CHECK(pthread_create(&jobs[k].tid, NULL, &churn_worker, &jobs[k]) == 0);
    }
    for (size_t k = 0; k < n; k++) {
      pthread_join(jobs[k].tid, NULL);
      failed = failed || jobs[k].failed;
      for (size_t i = 0; i < handed; i++) {
        if (jobs[k].kept[i].p == NULL) continue;
        jobs[k].kept[i].born = t + k;
        fifo_push(jobs[k].kept[i]);
      }
    }
    /* the blocks of thread j are freed once `delay` more threads have ended */
    while (fifo_len > 0 && fifo[fifo_head].born + delay < t + n) fifo_pop_free();
    const size_t rss = mt_rss(), vsz = mt_vsz();
    if (rss > rss_peak) rss_peak = rss;
    if (vsz > vsz_peak) vsz_peak = vsz;
  }
  const long long elapsed = mt_now_ms() - t0;
  const long faults = mt_minor_faults() - faults0;
  CHECK_MSG(!failed, "an allocation failed");

  churn_settle();
  const size_t rss1 = mt_rss(), vsz1 = mt_vsz();
  printf("%s delay %zu: %zu threads (%zu at a time, %zu blocks, %zu handed%s) in %lld ms; most live %.1f MiB, live now %.1f MiB\n",
         cls->name, delay, threads, conc, blocks, handed, (main_allocs ? ", main allocates" : ""), elapsed, mt_mib(live_max), mt_mib(live_bytes));
  printf("  resident: start %.1f MiB, peak +%.1f (bound +%.1f), settled +%.1f (bound +%.1f); address space: start %.0f MiB, peak +%.0f, settled +%.0f (bound +%.0f)\n",
         mt_mib(rss0), mt_mib_diff(rss_peak, rss0), mt_mib(MT_CHURN_PEAK_BOUND(live_max)), mt_mib_diff(rss1, rss0), mt_mib(MT_CHURN_RSS_BOUND(live_max)),
         mt_mib(vsz0), mt_mib_diff(vsz_peak, vsz0), mt_mib_diff(vsz1, vsz0), mt_mib(MT_CHURN_VSZ_BOUND(live_max)));
  printf("  page faults %ld for %zu OS pages stamped (%.2f per page)\n", faults, (size_t)churn_pages_stamped, (double)faults / (double)(churn_pages_stamped + 1));
  if (MT_RSS_ASSERTS) {   /* (a sanitizer's shadow memory and quarantine change both figures) */
    CHECK_MSG(rss_peak <= rss0 + MT_CHURN_PEAK_BOUND(live_max), "peak resident +%.1f MiB", mt_mib_diff(rss_peak, rss0));
    CHECK_MSG(rss1 <= rss0 + MT_CHURN_RSS_BOUND(live_max), "settled resident +%.1f MiB", mt_mib_diff(rss1, rss0));
    CHECK_MSG(vsz_peak <= vsz0 + MT_CHURN_VSZ_BOUND(live_max), "peak address space +%.0f MiB", mt_mib_diff(vsz_peak, vsz0));
    CHECK_MSG(vsz1 <= vsz0 + MT_CHURN_VSZ_BOUND(live_max), "settled address space +%.0f MiB", mt_mib_diff(vsz1, vsz0));
    if (strcmp(cls->name, "huge") != 0) {
      CHECK_MSG((size_t)faults <= MT_CHURN_FAULTS_BOUND(churn_pages_stamped, threads), "%ld page faults (bound %zu)",
                faults, (size_t)MT_CHURN_FAULTS_BOUND(churn_pages_stamped, threads));
    }
  }

  while (fifo_len > 0) fifo_pop_free();
  for (size_t i = 0; i < 64; i++) if (own[i].p != NULL) { live_bytes -= own[i].size; churn_check_free(&own[i]); }
  churn_settle();
  const size_t rss2 = mt_rss(), vsz2 = mt_vsz();
  printf("  all freed, settled: resident +%.1f MiB, address space +%.0f MiB\n", mt_mib_diff(rss2, rss0), mt_mib_diff(vsz2, vsz0));
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss2 <= rss0 + 24 * MiB, "resident +%.1f MiB after everything was freed", mt_mib_diff(rss2, rss0));
    CHECK_MSG(vsz2 <= vsz0 + 64 * MiB, "address space +%.0f MiB after everything was freed", mt_mib_diff(vsz2, vsz0));
  }
  CHECK_EQ(live_bytes, 0);
  CHECK_EQ(churn_corrupt, 0);
  free(fifo);
  return test_summary("memory-churn", "%s", cls->name);
}
