/* SPDX-License-Identifier: MIT */
/* mem-collect.c -- explicit collects are synchronous (issue 49): when mi_collect(false) returns,
   the memory whose purge delay has passed is purged, and with mi_collect(true) everything that
   can be, whatever the purger thread (src/purger.c) is doing at the time. The purger only adds
   to that, it never stands in for it.

   Usage: mem-collect stall|stall-late|stall-fresh|stall-force|stall-heap
                      | workload [MIB] | loaded [RUNS] [BUSY] [MIB]
     stall*  deterministic, in every build: the purger's pass is made to stop in the middle. The
             memory is an exclusive arena of the program's (mi_manage_memory, v3's API) whose
             commit function purges (MADV_DONTNEED) and records which arena blocks it purged and
             on which thread; a heap of that arena holds 12 huge blocks (two arena blocks each),
             and every other one is freed (so six separate runs, due after PURGE_DELAY with
             ARENA_PURGE_MULT=1). When the purger thread purges the first of them, the function
             holds it there (MT_STALL_MS, or until the collect below has returned): the pass has
             taken the arena and claimed that block. Main waits two purge delays more (every
             freed block is due then, whether the purger's pass saw it due or not) and calls
               stall        mi_collect(false)
               stall-late   frees one more block, sleeps 3 purge delays, mi_collect(false)
               stall-fresh  frees one more block, mi_collect(false) at once (that block is not
                            due: it may stay)
               stall-force  frees one more block, mi_collect(true) (that one too)
               stall-heap   mi_heap_collect(heap, false)
             and when it returns, each of the six blocks must be purged (and the extra block
             of stall-late and stall-force too; stall-late: by main itself, since the purger's
             pass never saw it). Before the fix the collect passed over the arena the purger
             held (its deadline taken, or set again by a later free to one not yet due) and
             returned at once: every mode failed, with all six blocks resident (stall,
             stall-fresh, stall-heap) or the one the purger held (stall-late and stall-force,
             where the free set the deadline again and a second pass ran beside the purger's).
             Now it waits for the pass (about MT_STALL_MS here) and then purges what is still
             due itself.
     workload  the program of the issue: MIB (1024) MiB of mixed blocks (16 B - 16 MiB, every
             byte written) freed, 100 ms of sleep (the purge delay is 10 ms), 1,000 small
             allocations, mi_collect(false): then the RSS must be within MT_COLLECT_MARGIN (32 MiB)
             of the start, and the statistic `committed` within MT_COMMIT_MARGIN (128 MiB; it
             is checked in sanitizer builds too, where the RSS is not).
     loaded  RUNS (20) runs of `workload` (MIB: 1024, or 256 under a sanitizer or emulator), each
             a process of its own, with BUSY (6) busy loops beside on the machine's cores: every
             run must pass. Before the fix 2 of 5 to 8 of 10 runs held 120-830 MiB (the purger,
             descheduled in the middle of its pass, held the arena the collect skipped); on an
             idle machine all passed.
   Under a sanitizer or emulator the RSS figures are not asserted (memory-common.h); the purge
   records of the stall modes and the `committed` statistic are. */
#include "memory-common.h"
#include <signal.h>
#include <stdatomic.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#define MT_STALL_MS        2000          /* the longest the purger is held in its pass */
#define MT_AREA_BLOCKS     32            /* arena blocks of the program's memory */
#define MT_HUGE            (3 * MiB)     /* a huge block: two arena blocks (a huge segment is larger than one) */
#define MT_KEPT            12            /* huge blocks allocated; the even ones are freed */
#define MT_COLLECT_MARGIN  (32 * MiB)    /* workload: RSS above the start, at most */
#define MT_COMMIT_MARGIN   (128 * MiB)   /* workload: committed above the start, at most (see there) */

/* v3's mi_manage_memory (include/mimalloc-v3.h), declared here so this v2 test can use it: the
   arena id it returns is the v2 id as a pointer. */
typedef bool (mt_commit_fun_t)(bool commit, void* start, size_t size, bool* is_zero, void* arg);
bool mi_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node,
                      bool exclusive, mt_commit_fun_t* commit_fun, void* commit_fun_arg, void** arena_id);

/* ---------------------------------------------------------------------------------------
   The program's memory: purges recorded per arena block, the purger held in one
--------------------------------------------------------------------------------------- */
enum { MT_IDLE, MT_ARMED, MT_STALLED, MT_RELEASE, MT_OVER };

static pthread_t       mt_main;
static uint8_t*        mt_astart;           /* the arena's first block */
static size_t          mt_ablocks;          /* its blocks */
static _Atomic(int)    mt_purged[MT_AREA_BLOCKS];          /* the block was purged (since reset) */
static _Atomic(int)    mt_purged_by_main[MT_AREA_BLOCKS];  /* ... by the main thread */
static pthread_mutex_t mt_stall_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  mt_stall_cond = PTHREAD_COND_INITIALIZER;
static int             mt_stall_state;      /* MT_IDLE .. MT_OVER, under mt_stall_lock */
static long long       mt_stall_end;        /* when the stall ended (ms), under mt_stall_lock */

/* The purger thread purges the first block: hold it here until released or MT_STALL_MS. */
static void mt_stall_here(void) {
  pthread_mutex_lock(&mt_stall_lock);
  if (mt_stall_state == MT_ARMED) {
    mt_stall_state = MT_STALLED;
    pthread_cond_broadcast(&mt_stall_cond);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += MT_STALL_MS / 1000;
    until.tv_nsec += (MT_STALL_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    while (mt_stall_state == MT_STALLED) {
      if (pthread_cond_timedwait(&mt_stall_cond, &mt_stall_lock, &until) == ETIMEDOUT) break;
    }
    mt_stall_state = MT_OVER;
    mt_stall_end = mt_now_ms();
    pthread_cond_broadcast(&mt_stall_cond);
  }
  pthread_mutex_unlock(&mt_stall_lock);
}

/* Called by the allocator with its locks held: no allocation here. Commits leave the memory as
   it is (it stays accessible); a purge discards it and is recorded per whole arena block. */
static bool mt_commit(bool commit, void* start, size_t size, bool* is_zero, void* arg) {
  (void)arg;
  if (commit) { if (is_zero != NULL) *is_zero = false; return true; }
  const uintptr_t off = (uintptr_t)start - (uintptr_t)mt_astart;
  const bool blocks = ((uint8_t*)start >= mt_astart && off % MT_ARENA_BLOCK_SIZE == 0 && size % MT_ARENA_BLOCK_SIZE == 0);
  const bool on_main = pthread_equal(pthread_self(), mt_main);
  if (blocks && !on_main) mt_stall_here();   /* an arena purge by another thread: the purger */
  madvise(start, size, MADV_DONTNEED);
  if (blocks) {
    for (size_t i = off / MT_ARENA_BLOCK_SIZE; i < (off + size) / MT_ARENA_BLOCK_SIZE && i < MT_AREA_BLOCKS; i++) {
      atomic_store(&mt_purged[i], 1);
      if (on_main) atomic_store(&mt_purged_by_main[i], 1);
    }
  }
  return true;
}

static size_t mt_block_of(const void* p) {
  return (size_t)(((const uint8_t*)p - mt_astart) / MT_ARENA_BLOCK_SIZE);
}

static int mt_wait_state(int state, long ms) {
  const long long until = mt_now_ms() + ms;
  pthread_mutex_lock(&mt_stall_lock);
  while (mt_stall_state < state && mt_now_ms() < until) {
    pthread_mutex_unlock(&mt_stall_lock);
    mt_sleep_ms(1);
    pthread_mutex_lock(&mt_stall_lock);
  }
  const int now = mt_stall_state;
  pthread_mutex_unlock(&mt_stall_lock);
  return now;
}

static int test_stall(const char* mode) {
  const bool late = (strcmp(mode, "stall-late") == 0);
  const bool fresh = (strcmp(mode, "stall-fresh") == 0);
  const bool force = (strcmp(mode, "stall-force") == 0);
  const bool heap_collect = (strcmp(mode, "stall-heap") == 0);
  const long delay = mi_option_get(mi_option_purge_delay);
  if (!mi_option_is_enabled(mi_option_purge_thread) || delay <= 0) {
    printf("SKIP mem-collect %s: needs the purger thread and a purge delay\n", mode);
    return 77;
  }
  mi_option_set(mi_option_arena_purge_mult, 1);   /* free arena blocks are due after the purge delay */
  mt_main = pthread_self();

  /* the program's memory as an exclusive arena, and a heap in it */
  const size_t msize = (MT_AREA_BLOCKS + 1) * MT_ARENA_BLOCK_SIZE;
  uint8_t* mem = (uint8_t*)mmap(NULL, msize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(mem != MAP_FAILED);
  if (mem == MAP_FAILED) return test_summary("mem-collect", "%s: no memory", mode);
  mt_astart = (uint8_t*)(((uintptr_t)mem + MT_ARENA_BLOCK_SIZE - 1) & ~(uintptr_t)(MT_ARENA_BLOCK_SIZE - 1));
  void* id3 = NULL;
  CHECK(mi_manage_memory(mt_astart, MT_AREA_BLOCKS * MT_ARENA_BLOCK_SIZE, true, false, true, -1, true, &mt_commit, NULL, &id3));
  const mi_arena_id_t id = (mi_arena_id_t)(intptr_t)id3;
  size_t asize = 0;
  CHECK(mi_arena_area(id, &asize) == mt_astart);
  mt_ablocks = asize / MT_ARENA_BLOCK_SIZE;
  CHECK_EQ(mt_ablocks, MT_AREA_BLOCKS);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap == NULL || mt_ablocks != MT_AREA_BLOCKS) return test_summary("mem-collect", "%s: no arena", mode);

  /* huge blocks of one arena block each, written; the even ones are freed, the odd kept */
  void* blocks[MT_KEPT];
  bool  freed[MT_AREA_BLOCKS] = { false };
  for (int i = 0; i < MT_KEPT; i++) {
    blocks[i] = mi_heap_malloc(heap, MT_HUGE);
    CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) return test_summary("mem-collect", "%s: allocation %d failed", mode, i);
    memset(blocks[i], 0x5A, MT_HUGE);
    CHECK_LE(mt_block_of(blocks[i]), MT_AREA_BLOCKS - 1);
  }
  void* const extra = blocks[1];   /* freed after the purger stalled */
  for (int i = 0; i < MT_KEPT; i += 2) {
    CHECK(!freed[mt_block_of(blocks[i])]);   /* (distinct) */
    freed[mt_block_of(blocks[i])] = true;    /* its first arena block */
  }
  for (size_t b = 0; b < MT_AREA_BLOCKS; b++) { atomic_store(&mt_purged[b], 0); atomic_store(&mt_purged_by_main[b], 0); }
  pthread_mutex_lock(&mt_stall_lock);
  mt_stall_state = MT_ARMED;
  pthread_mutex_unlock(&mt_stall_lock);
  size_t nfreed = 0;
  for (int i = 0; i < MT_KEPT; i += 2) { mi_free(blocks[i]); blocks[i] = NULL; nfreed++; }
  CHECK_EQ(nfreed, MT_KEPT / 2);
  /* an allocation off the fast path: starts the purger if the frees could not (mem-idle.c);
     not in the arena, whose freed blocks it would take */
  void* kick = mi_malloc(5 * MiB);
  CHECK(kick != NULL);

  /* the purger takes its pass over the arena and stops at its first purge */
  const int reached = mt_wait_state(MT_STALLED, 20000);
  CHECK_MSG(reached >= MT_STALLED, "the purger thread did not purge the freed blocks within 20 s");
  mt_sleep_ms(2 * delay);   /* every freed block is due now, whether the purger's pass saw it due or not */
  size_t extra_block = MT_AREA_BLOCKS;
  if (late || fresh || force) {
    extra_block = mt_block_of(extra);
    blocks[1] = NULL;
    mi_free(extra);
    if (late) mt_sleep_ms(3 * delay);
  }
  const long long t_call = mt_now_ms();
  if (heap_collect) mi_heap_collect(heap, false);
  else mi_collect(force);
  const long long t_return = mt_now_ms();
  int purged[MT_AREA_BLOCKS], by_main[MT_AREA_BLOCKS];
  for (size_t b = 0; b < MT_AREA_BLOCKS; b++) { purged[b] = atomic_load(&mt_purged[b]); by_main[b] = atomic_load(&mt_purged_by_main[b]); }

  /* let the purger go, and wait for its pass to end */
  pthread_mutex_lock(&mt_stall_lock);
  if (mt_stall_state == MT_STALLED) mt_stall_state = MT_RELEASE;
  pthread_cond_broadcast(&mt_stall_cond);
  pthread_mutex_unlock(&mt_stall_lock);
  mt_wait_state(MT_OVER, 20000);
  pthread_mutex_lock(&mt_stall_lock);
  const long long t_stall_end = mt_stall_end;
  pthread_mutex_unlock(&mt_stall_lock);

  /* the scenario: the collect began while the purger was held in its pass */
  CHECK_MSG(t_call < t_stall_end, "the collect began %lld ms after the purger's stall ended (main was not scheduled for %d ms?)",
            t_call - t_stall_end, MT_STALL_MS);
  size_t missing = 0;
  for (size_t b = 0; b < MT_AREA_BLOCKS; b++) {
    if (!freed[b]) continue;
    CHECK_MSG(purged[b], "arena block %zu, due before the collect began, was not purged when it returned", b);
    if (!purged[b]) missing++;
  }
  if (late || force) CHECK_MSG(purged[extra_block], "the block freed after the purger stalled (%zu) was not purged", extra_block);
  if (late) CHECK_MSG(by_main[extra_block], "the block freed after the purger stalled (%zu) was not purged by the collect's own pass", extra_block);

  /* clean up: nothing of the arena's stays in use */
  for (int i = 0; i < MT_KEPT; i++) mi_free(blocks[i]);
  mi_free(kick);
  mi_heap_delete(heap);
  mi_collect(true);
  return test_summary("mem-collect", "%s: the collect took %lld ms (the purger was held up to %d ms); %zu of %zu due blocks not purged on return",
                      mode, t_return - t_call, MT_STALL_MS, missing, (size_t)(MT_KEPT / 2));
}

/* ---------------------------------------------------------------------------------------
   The program of the issue, alone and under load
--------------------------------------------------------------------------------------- */
static int test_workload(size_t mib) {
  enum { MAXB = 1 << 20, SMALL = 1000 };
  static void* blocks[MAXB];
  static void* small[SMALL];
  void* p0 = mi_malloc(100);   /* the library initialised, stdout's buffer made */
  mi_free(p0);
  printf("mem-collect workload: %zu MiB\n", mib);
  fflush(stdout);
  const size_t rss0 = mt_rss();
  const size_t committed0 = (size_t)mt_stats()->committed.current;
  size_t total = 0, n = 0;
  uint64_t x = 42;
  while (total < mib * MiB && n < MAXB) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const unsigned r = (unsigned)(x >> 33) % 100;
    size_t size;
    if (r < 70) size = 16 + (x >> 20) % 1024;                             /* small */
    else if (r < 90) size = 1024 + (x >> 20) % (127 * KiB);               /* small and medium */
    else if (r < 99) size = 128 * KiB + (x >> 20) % (1920 * KiB);         /* large */
    else size = 4 * MiB + (x >> 20) % (12 * MiB);                         /* huge */
    void* p = mi_malloc(size);
    CHECK(p != NULL);
    if (p == NULL) break;
    memset(p, 1, size);
    blocks[n++] = p;
    total += size;
  }
  const size_t rss_full = mt_rss();
  for (size_t i = 0; i < n; i++) mi_free(blocks[i]);
  mt_sleep_ms(100);
  for (int i = 0; i < SMALL; i++) small[i] = mi_malloc(16 + (size_t)(i % 64) * 8);
  const long long t0 = mt_now_ms();
  mi_collect(false);
  const long long t1 = mt_now_ms();
  const size_t rss = mt_rss();
  const size_t committed = (size_t)mt_stats()->committed.current;
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss <= rss0 + MT_COLLECT_MARGIN, "RSS %.1f MiB above the start after mi_collect(false)", mt_mib_diff(rss, rss0));
  }
  /* committed also counts the segments the collect itself emptied (the workload's last pages):
     given back to the arena with a fresh deadline, not yet due, and mostly no longer resident
     (their page slots were purged): up to 17 of them, 70 MiB, in 2 runs of 12 under load */
  CHECK_MSG(committed <= committed0 + MT_COMMIT_MARGIN, "committed %.1f MiB above the start after mi_collect(false)",
            mt_mib_diff(committed, committed0));
  for (int i = 0; i < SMALL; i++) mi_free(small[i]);
  return test_summary("mem-collect", "workload: %zu blocks, %.0f MiB; RSS %.1f -> %.1f -> %.1f MiB, committed +%.1f MiB after mi_collect(false) (%lld ms)",
                      n, mt_mib(total), mt_mib(rss0), mt_mib(rss_full), mt_mib(rss), mt_mib_diff(committed, committed0), t1 - t0);
}

static int test_loaded(int runs, int busy, size_t mib) {
  pid_t loops[64];
  if (busy > 64) busy = 64;
  fflush(stdout);
  for (int i = 0; i < busy; i++) {
    loops[i] = fork();
    if (loops[i] == 0) {
#if defined(__linux__)
      prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive the test */
#endif
      for (volatile unsigned long k = 0; ; k++) { }
    }
    CHECK(loops[i] > 0);
  }
  char mibs[32];
  snprintf(mibs, sizeof(mibs), "%zu", mib);
  const char* args[] = { "workload", mibs, NULL };
  static char out[8192];
  int failed = 0;
  for (int r = 0; r < runs; r++) {
    const int status = mt_run_child(args, NULL, out, sizeof(out));
    const bool ok = (WIFEXITED(status) && WEXITSTATUS(status) == 0);
    const char* line = strstr(out, "mem-collect: ");
    const char* end = (line != NULL ? strchr(line, '\n') : NULL);
    printf("run %2d: %s %.*s\n", r + 1, ok ? "ok  " : "FAIL", (int)(line == NULL ? 0 : end == NULL ? (long)strlen(line) : end - line), line == NULL ? "" : line);
    if (!ok) { failed++; fputs(out, stdout); }
    fflush(stdout);
  }
  for (int i = 0; i < busy; i++) {
    if (loops[i] <= 0) continue;
    kill(loops[i], SIGKILL);
    waitpid(loops[i], NULL, 0);
  }
  CHECK_EQ(failed, 0);
  return test_summary("mem-collect", "loaded: %d of %d runs of %zu MiB with %d busy loops held more than %zu MiB after mi_collect(false)",
                      failed, runs, mib, busy, MT_COLLECT_MARGIN / MiB);
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strncmp(mode, "stall", 5) == 0) return test_stall(mode);
  if (strcmp(mode, "workload") == 0) return test_workload((size_t)test_arg(argc, argv, 2, 1024));
  if (strcmp(mode, "loaded") == 0) {
    return test_loaded((int)test_arg(argc, argv, 2, 20), (int)test_arg(argc, argv, 3, 6),
                       (size_t)test_arg(argc, argv, 4, TEST_RSS_UNRELIABLE ? 256 : 1024));
  }
  fprintf(stderr, "usage: mem-collect stall|stall-late|stall-fresh|stall-force|stall-heap | workload [MIB] | loaded [RUNS] [BUSY] [MIB]\n");
  return 2;
}
