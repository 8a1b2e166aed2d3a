/* SPDX-License-Identifier: MIT */
/* mem-idle-remote.c -- a thread's full pages whose blocks other threads freed go back to the OS
   while the thread sleeps (idle reclaim, src/heap-idle.c; memory-idle-remote-*).

   usage: mem-idle-remote idle|spread|double-free|double-free-full|fork|keep|race

     idle  main allocates 64 MiB of 1 KiB blocks (each filled with its own pattern) and keeps the
           first eighth and every 509th block of the rest (pages with one live block); thread B
           frees the rest (and allocates a block, which starts the purger
           where a free cannot: src/purger.c) and sleeps 1.5 s while main waits in
           pthread_join (no call into the allocator). Checked: B's RSS then is within 8 MiB
           (main's first eighth) + 64 KiB per sparse block + 12 MiB of the start, and the `reset` statistic grew by at least
           40 MiB (the statistic is checked under sanitizers too, the RSS is not:
           MT_RSS_ASSERTS); main's kept blocks are intact (their pages were not emptied); main
           then allocates the freed amount again and the peak of committed memory grows by at
           most 16 MiB (the emptied pages went back to their segments at main's first allocation, and
           their slots are taken again), and every block is intact.
           Also checked (not under a sanitizer): the library's .bss gains at most 8 resident pages
           across the purger's passes (their tables come from the OS for a pass: 28 pages when
           they were static).
     spread  as idle, but B frees a quarter of every page's blocks at a time, 300 ms apart, and
           sleeps 3 s: only the first free into a full page notifies the purger, whose first
           looks find no page all free; it looks again later (a backoff) and then finds them.
     double-free  as idle; then main's first call frees again one of the blocks B freed, in a
           page the purger emptied: reported once (EAGAIN, mi_register_error), and the rest of
           idle's checks pass (nothing was written into the page). Not under a memory checker
           (it reports the double free itself).
     double-free-full  as idle, but B frees one block twice: the neighbour of a kept block, in
           a page whose other blocks B frees, so that its thread_free count plus the delayed
           block make the page look all free (its second free lands on its thread_free list, as
           all but the page's first free do). Checked: the kept block is intact (the purger did
           not give its page back) and the double free was reported (by the free in debug
           builds, else by the purger, src/heap-idle.c mi_page_try_empty). Main then touches that
           size no more (the page's lists are corrupt). Not under a memory checker.
     fork  as idle, but main forks right after the join, with the pages the purger emptied not
           yet taken back: the child's fork handler takes them back (init.c: after the purger's
           state is the child's own and the arenas' locks are released). The child checks main's
           kept blocks, allocates the freed amount again, checks every block and exits, within
           20 s (an alarm); the parent then goes on as in idle.
     keep  MIMALLOC_PURGE_THREAD=0: the same as idle, but B's RSS stays at least 50 MiB above the start
           (what `idle` would see without the purger: this is what the feature changes).
     race  three owner threads for 4 s (with MIMALLOC_PURGE_DELAY=1 the purger looks every
           20 ms): each allocates 2,000 blocks of 16 B .. 192 KiB, keeps one in 64 at random and
           hands the rest to a freeing thread, sleeps 150-350 ms (so that the purger, which runs at
           most every 100 ms, finds its heap idle at two looks), checks its kept blocks, frees half of them (its own frees into full pages:
           the owner sections), sleeps again, checks and frees the rest. The freeing thread
           checks every block before it frees it. Any page emptied under a live block would
           zero that block: every check compares the whole block with its pattern. Also
           checked: the purger emptied pages (the `reset` statistic grew). Run oversubscribed
           (five threads, two cores in CI) and under ThreadSanitizer (label stress). */
#include "memory-common.h"
#include <stdatomic.h>

#define IDLE_BLOCK   (1 * KiB)
#define IDLE_COUNT   (64 * 1024)
#define IDLE_KEEP    (IDLE_COUNT / 8)
#define IDLE_MS      1500
#define IDLE_SPARSE  509   /* of the rest, every 509th block stays live too: pages with one live
                              block among blocks all freed by B must not be emptied */

static unsigned char* blocks[IDLE_COUNT];

static unsigned char pattern_of(size_t i) { return (unsigned char)(i * 7 + 1); }
static bool intact(size_t i) { return mt_is_filled(blocks[i], IDLE_BLOCK, pattern_of(i)); }
static bool kept(size_t i) { return (i < IDLE_KEEP || i % IDLE_SPARSE == 0); }

static size_t b_rss;
static int64_t b_reset;
static bool idle_double_free;        /* mode double-free */
static unsigned char* stale_block;   /* one of B's blocks, freed */
static bool idle_double_free_full;   /* mode double-free-full */
static unsigned char* twice_block;   /* the block B frees twice */
static size_t twice_kept;            /* the kept block beside it */
static _Atomic(int) errors_seen[2];  /* EAGAIN, other (from B or the purger) */

static void on_error(int err, void* arg) {
  (void)arg;
  errors_seen[err == EAGAIN ? 0 : 1]++;
}

static bool idle_spread;

/* The resident pages of the library's .bss (the anonymous mapping right after its last file
   mapping, as found by the first call: a mapping made later right after it would merge with it
   and is not counted), or -1 where that is not found (another platform, a static link). The
   purger's tables for a pass come from the OS and go back after it: their 112 KiB stay out of
   .bss. Without stdio: no allocation (double-free's first call after the idle time is its free). */
static char maps_text[256 * 1024];
static unsigned long bss_lo, bss_hi;
static long lib_bss_pages(void) {
#if !defined(__linux__) || MI_TEST_EMULATED   /* (under qemu-user the page map is the emulator's) */
  return -1;
#endif
  if (bss_hi == 0) {
    const int fd = open("/proc/self/maps", O_RDONLY);
    size_t len = 0;
    ssize_t n;
    while (fd >= 0 && len < sizeof(maps_text) - 1 && (n = read(fd, maps_text + len, sizeof(maps_text) - 1 - len)) > 0) len += (size_t)n;
    if (fd >= 0) close(fd);
    maps_text[len] = 0;
    unsigned long lib_end = 0;
    for (char* line = maps_text; *line != 0 && bss_hi == 0; ) {
      char* eol = strchr(line, '\n');
      if (eol != NULL) *eol = 0;
      unsigned long lo, hi;
      if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
        if (strstr(line, "libmimalloc") != NULL) lib_end = hi;
        else {
          if (lib_end != 0 && lo == lib_end && strchr(line, '/') == NULL) { bss_lo = lo; bss_hi = hi; }
          lib_end = 0;
        }
      }
      if (eol == NULL) break;
      line = eol + 1;
    }
    if (bss_hi == 0) return -1;
  }
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  if (pagemap < 0) return -1;
  long pages = 0;
  for (unsigned long a = bss_lo; a < bss_hi; a += 4096) {
    uint64_t entry = 0;
    if (pread(pagemap, &entry, sizeof(entry), (off_t)(a / 4096 * sizeof(entry))) == sizeof(entry) && (entry >> 63) != 0) pages++;
  }
  close(pagemap);
  return pages;
}
static bool idle_fork;   /* mode fork */

/* The freed amount again, into the slots of the pages given back; every block checked. */
static void idle_refill(void) {
  for (size_t i = IDLE_KEEP; i < IDLE_COUNT; i++) {
    if (kept(i)) continue;
    blocks[i] = (unsigned char*)mi_malloc(IDLE_BLOCK);
    CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) break;
    mt_fill(blocks[i], IDLE_BLOCK, pattern_of(i));
  }
  for (size_t i = 0; i < IDLE_COUNT; i++) CHECK_MSG(blocks[i] == NULL || intact(i), "block %zu changed", i);
}

/* fork: the child checks and refills (its fork handler took the emptied pages back) */
static void idle_fork_child_check(void) {
  const pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(20);
    for (size_t i = 0; i < IDLE_COUNT; i++) {
      if (kept(i)) CHECK_MSG(intact(i), "child: kept block %zu changed", i);
    }
    idle_refill();
    fflush(stdout);
    _exit(test_failure_count() == 0 ? 0 : 1);
  }
  if (pid < 0) return;
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child %s %d", WIFSIGNALED(status) ? "died of signal" : "exited with",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static void* idle_freer(void* arg) {
  (void)arg;
  /* a thread that frees also allocates (a worker): its first allocation is a safe place to
     start the purger (a free is not: src/purger.c) */
  void* own = mi_malloc(100);
  CHECK(own != NULL);
  mi_free(own);
  const int64_t reset0 = mt_stats()->reset.total;
  const size_t rounds = (idle_spread ? 4 : 1);
  for (size_t r = 0; r < rounds; r++) {
    if (r > 0) mt_sleep_ms(300);   /* spread: a quarter of every page's blocks at a time */
    for (size_t i = IDLE_KEEP + r; i < IDLE_COUNT; i += rounds) {
      if (kept(i)) continue;
      CHECK_MSG(intact(i), "block %zu changed before its free", i);
      if (stale_block == NULL && i % IDLE_SPARSE == IDLE_SPARSE / 2) stale_block = blocks[i];   /* (254 blocks from a kept one: a page without one) */
      if (idle_double_free_full && twice_block == NULL && i % IDLE_SPARSE == 1 &&
          ((uintptr_t)blocks[i] >> 16) == ((uintptr_t)blocks[i - 1] >> 16)) {   /* (64 KiB pages) */
        twice_block = blocks[i];
        twice_kept = i - 1;
      }
      mi_free(blocks[i]);
      blocks[i] = NULL;
    }
  }
  if (twice_block != NULL) mi_free(twice_block);   /* double-free-full: once more */
  mt_sleep_ms(idle_spread ? 2 * IDLE_MS : IDLE_MS);   /* main waits in pthread_join: both idle */
  b_rss = mt_rss();
  b_reset = mt_stats()->reset.total - reset0;
  return NULL;
}

static int test_idle(bool keep) {
  const size_t rss0 = mt_rss();
  for (size_t i = 0; i < IDLE_COUNT; i++) {
    blocks[i] = (unsigned char*)mi_malloc(IDLE_BLOCK);
    CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) return test_summary("mem-idle-remote", "out of memory");
    mt_fill(blocks[i], IDLE_BLOCK, pattern_of(i));
  }
  const size_t rss_peak = mt_rss();
  if (idle_double_free_full) mi_register_error(&on_error, NULL);
  const long bss0 = lib_bss_pages();
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &idle_freer, NULL) == 0);
  pthread_join(t, NULL);
  const long bss1 = lib_bss_pages();   /* (printed below: stdio allocates, and double-free's first call must be its free) */
  if (idle_fork) idle_fork_child_check();
  if (idle_double_free_full) {
    mi_register_error(NULL, NULL);
    CHECK_MSG(twice_block != NULL, "no block beside a kept one in its page");
    CHECK_MSG(twice_block == NULL || intact(twice_kept), "kept block %zu, in the page of the block freed twice, changed: the page was given back under it", twice_kept);
    CHECK_MSG(errors_seen[0] + errors_seen[1] >= 1, "the double free was not reported");
    for (size_t i = 0; i < IDLE_COUNT; i++) {
      if (kept(i)) CHECK_MSG(intact(i), "kept block %zu changed", i);
    }
    printf("double free reported %d times (EAGAIN) and %d (other); discarded %.1f MiB\n", (int)errors_seen[0], (int)errors_seen[1], (double)b_reset / (double)MiB);
    return test_summary("mem-idle-remote", "double-free-full");   /* (that size's lists are corrupt: left as they are) */
  }
  if (idle_double_free) {
    /* main's first call after the idle time: a block B freed, freed again, into a page the
       purger emptied (its lists gone): reported, nothing written (the page is freed to its
       segment at main's next allocation) */
    mi_register_error(&on_error, NULL);
    mi_free(stale_block);
    mi_register_error(NULL, NULL);
    CHECK_MSG(errors_seen[0] == 1 && errors_seen[1] == 0, "double free: %d EAGAIN and %d other errors reported (want 1, 0)", errors_seen[0], errors_seen[1]);
  }
  printf("the library's .bss: %ld resident pages before the frees, %ld after the purger's passes\n", bss0, bss1);
  if (MT_RSS_ASSERTS) CHECK_MSG(bss0 < 0 || bss1 <= bss0 + 8, "the library's .bss grew by %ld resident pages in the purger's passes", bss1 - bss0);
  printf("rss: start %.1f MiB, peak %.1f, %d ms after the frees %.1f; discarded %.1f MiB\n",
         mt_mib(rss0), mt_mib(rss_peak), idle_spread ? 2 * IDLE_MS : IDLE_MS, mt_mib(b_rss), (double)b_reset / (double)MiB);
  if (keep) {
    if (MT_RSS_ASSERTS) CHECK_MSG(b_rss >= rss0 + 50 * MiB, "without the purger the RSS fell to %.1f MiB above the start", mt_mib_diff(b_rss, rss0));
  }
  else {
    /* (the sparse ones keep a 64 KiB page each) */
    if (MT_RSS_ASSERTS) CHECK_MSG(b_rss <= rss0 + IDLE_KEEP * IDLE_BLOCK + (IDLE_COUNT / IDLE_SPARSE) * 64 * KiB + 12 * MiB, "the RSS is %.1f MiB above the start while idle", mt_mib_diff(b_rss, rss0));
    CHECK_MSG(b_reset >= (int64_t)(40 * MiB), "only %.1f MiB discarded while idle", (double)b_reset / (double)MiB);
  }
  for (size_t i = 0; i < IDLE_COUNT; i++) {
    if (kept(i)) CHECK_MSG(intact(i), "kept block %zu changed", i);
  }
  /* the freed amount again: into the slots of the pages given back */
  const int64_t committed1 = mt_stats()->committed.peak;
  idle_refill();
  const int64_t committed2 = mt_stats()->committed.peak;
  printf("committed peak: %.1f MiB before allocating again, %.1f after\n", (double)committed1 / (double)MiB, (double)committed2 / (double)MiB);
  CHECK_MSG(committed2 <= committed1 + (int64_t)(16 * MiB), "the committed peak grew by %.1f MiB: the freed pages' slots were not reused",
            (double)(committed2 - committed1) / (double)MiB);
  for (size_t i = 0; i < IDLE_COUNT; i++) mi_free(blocks[i]);
  return test_summary("mem-idle-remote", "%s", keep ? "keep" : idle_spread ? "spread" : idle_double_free ? "double-free" : idle_fork ? "fork" : "idle");
}

/* --- race ------------------------------------------------------------------------------ */
#define RACE_OWNERS   3
#define RACE_BATCH    2000
#define RACE_MS       4000

typedef struct race_block_s { unsigned char* p; size_t size; } race_block_t;

static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  race_cond = PTHREAD_COND_INITIALIZER;
static race_block_t*   race_queue[64];     /* batches for the freeing thread */
static size_t          race_queued;
static int             race_owners_left = RACE_OWNERS;
static _Atomic(long)   race_checked;

static unsigned char race_pattern(const void* p) { return (unsigned char)(((uintptr_t)p >> 4) * 13 + 5); }
static void race_fill(race_block_t* b) { memset(b->p, race_pattern(b->p), b->size); }
static void race_check(const race_block_t* b, const char* who) {
  CHECK_MSG(mt_is_filled(b->p, b->size, race_pattern(b->p)), "%s: block %p of %zu bytes changed (first byte 0x%02x, want 0x%02x)", who,
            (void*)b->p, b->size, b->p[0], race_pattern(b->p));
  atomic_fetch_add(&race_checked, 1);
}

static uint64_t race_rand(uint64_t* s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

static size_t race_size(uint64_t* s) {
  static const size_t sizes[] = { 16, 48, 200, 1024, 3000, 20000, 70000, 192 * 1024 };
  const uint64_t r = race_rand(s);
  /* mostly 1-3 KiB blocks: a batch fills pages, which go to the full queue */
  return (r % 16 < 12 ? sizes[2 + r % 3] : sizes[(r >> 8) % 8]);
}

static void race_hand(race_block_t* batch) {
  pthread_mutex_lock(&race_lock);
  while (race_queued == sizeof(race_queue) / sizeof(race_queue[0])) pthread_cond_wait(&race_cond, &race_lock);
  race_queue[race_queued++] = batch;
  pthread_cond_broadcast(&race_cond);
  pthread_mutex_unlock(&race_lock);
}

static void* race_owner(void* arg) {
  uint64_t seed = 0x9E3779B97F4A7C15ULL * (uint64_t)(uintptr_t)arg + 1;
  race_block_t kept[RACE_BATCH];
  const long long end = mt_now_ms() + RACE_MS;
  while (mt_now_ms() < end) {
    race_block_t* batch = (race_block_t*)calloc(RACE_BATCH + 1, sizeof(race_block_t));
    CHECK(batch != NULL);
    if (batch == NULL) break;
    size_t nkept = 0, nbatch = 0;
    for (size_t i = 0; i < RACE_BATCH; i++) {
      race_block_t b = { NULL, race_size(&seed) };
      b.p = (unsigned char*)mi_malloc(b.size);
      CHECK(b.p != NULL);
      if (b.p == NULL) continue;
      race_fill(&b);
      if (race_rand(&seed) % 64 == 0) kept[nkept++] = b;   /* (full pages with 0, 1, 2 .. live blocks) */
      else batch[nbatch++] = b;
    }
    batch[nbatch].p = NULL;   /* the end */
    race_hand(batch);
    mt_sleep_ms(150 + (long)(race_rand(&seed) % 200));   /* (two looks of the purger, at most one per 100 ms) */
    for (size_t i = 0; i < nkept; i++) race_check(&kept[i], "owner");
    for (size_t i = 0; i < nkept; i += 2) mi_free(kept[i].p);
    mt_sleep_ms((long)(race_rand(&seed) % 61));
    for (size_t i = 1; i < nkept; i += 2) { race_check(&kept[i], "owner"); mi_free(kept[i].p); }
  }
  pthread_mutex_lock(&race_lock);
  race_owners_left--;
  pthread_cond_broadcast(&race_cond);
  pthread_mutex_unlock(&race_lock);
  return NULL;
}

static void* race_freer(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&race_lock);
    while (race_queued == 0 && race_owners_left > 0) pthread_cond_wait(&race_cond, &race_lock);
    if (race_queued == 0) { pthread_mutex_unlock(&race_lock); break; }
    race_block_t* batch = race_queue[--race_queued];
    pthread_cond_broadcast(&race_cond);
    pthread_mutex_unlock(&race_lock);
    for (race_block_t* b = batch; b->p != NULL; b++) { race_check(b, "freer"); mi_free(b->p); }
    free(batch);
  }
  return NULL;
}

static int test_race(void) {
  const int64_t reset0 = mt_stats()->reset.total;
  pthread_t owners[RACE_OWNERS], freer;
  CHECK(pthread_create(&freer, NULL, &race_freer, NULL) == 0);
  for (size_t i = 0; i < RACE_OWNERS; i++) CHECK(pthread_create(&owners[i], NULL, &race_owner, (void*)(uintptr_t)(i + 1)) == 0);
  for (size_t i = 0; i < RACE_OWNERS; i++) pthread_join(owners[i], NULL);
  pthread_join(freer, NULL);
  const int64_t reset = mt_stats()->reset.total - reset0;
  printf("race: %ld blocks checked, %.1f MiB discarded\n", (long)atomic_load(&race_checked), (double)reset / (double)MiB);
  CHECK_MSG(reset > 0, "the purger emptied no page");
  return test_summary("mem-idle-remote", "race");
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "idle") == 0) return test_idle(false);
  if (argc >= 2 && strcmp(argv[1], "spread") == 0) { idle_spread = true; return test_idle(false); }
  if (argc >= 2 && strcmp(argv[1], "double-free") == 0) { idle_double_free = true; return test_idle(false); }
  if (argc >= 2 && strcmp(argv[1], "double-free-full") == 0) { idle_double_free_full = true; return test_idle(false); }
  if (argc >= 2 && strcmp(argv[1], "fork") == 0) { idle_fork = true; return test_idle(false); }
  if (argc >= 2 && strcmp(argv[1], "keep") == 0) return test_idle(true);
  if (argc >= 2 && strcmp(argv[1], "race") == 0) return test_race();
  fprintf(stderr, "usage: mem-idle-remote idle|spread|double-free|double-free-full|fork|keep|race\n");
  return 2;
}
