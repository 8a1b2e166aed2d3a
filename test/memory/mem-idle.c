/* SPDX-License-Identifier: MIT */
/* mem-idle.c -- an idle process gives back what it freed, without calling the allocator again
   (the purger thread, src/purger.c; MIMALLOC_PURGE_THREAD).

   Usage: mem-idle large|keep|nofree|fork|mainexit|small|small-keep
     large   256 MiB in huge blocks (8 MiB - 64 KiB each: one 8 MiB huge segment, two arena
             blocks), every byte written, all freed (then one allocation where a free cannot
             start the purger: mt_kick_purger), then 2.5 s of sleep without any call into
             the allocator (no malloc through printf either: stdout's buffer exists before).
             Then the RSS must be within MT_IDLE_MARGIN (16 MiB) of the RSS before the
             workload, the `purged` statistic must have grown by at least 200 MiB, the process
             must have had two threads right after the frees (ours and the purger;
             ThreadSanitizer adds one), one of them named "mi-purger" (/proc/self/task/TID/comm:
             what ps -L, top -H and gdb show), and one after the idle time (the purger ends
             when nothing waits for 1 s), none named so, and with MIMALLOC_VERBOSE on the
             purger must have said once that it started.
     keep    (MIMALLOC_PURGE_THREAD=0) the same workload: after the 2.5 s the RSS is still at
             least 200 MiB above the start (nothing purges while nobody calls the allocator:
             this is what `large` would see without the purger, so it can fail), one thread,
             none named "mi-purger".
     nofree  blocks of every kind (small, medium, large, huge) allocated and never freed, then
             300 ms of sleep: the process still has one thread (a program that never frees
             never gets the purger), and the purger never said it started.
     fork    the parent frees 64 MiB (its purger starts: see mt_kick_purger), idles 2.5 s (its RSS must be back
             within MT_IDLE_MARGIN) and forks; the child has one thread
             (the purger is not inherited), allocates and frees 128 MiB in huge blocks (a purger
             of its own starts: two threads), idles 2.5 s and must then be within MT_IDLE_MARGIN
             of its RSS after the fork. The parent's RSS, after idling while it waits
             for the child, is within MT_IDLE_MARGIN of its start too.
     mainexit  main frees 64 MiB (the purger starts) and calls pthread_exit: the process must
             end (the purger must not keep it alive; ctest's TIMEOUT of 30 s would fail it).
     join    a free never starts the purger in a process that has had threads: glibc calls
             free inside pthread_join with the lock pthread_create takes (it frees the ended
             thread's TLS under its stack cache lock), and a purger started there deadlocked.
             12 threads touch a 1 MiB thread-local variable of a module loaded with dlopen
             (argument 2; glibc gives each a block of dynamic TLS from malloc) and end; main
             holds 64 MiB of huge blocks, idles 2.5 s (no purger thread left), joins the
             threads (an alarm of 30 s ends the process if that hangs) and frees its blocks:
             if no purger ran before the joins, still one thread (with the old rule, the frees
             started the purger: two). The workers' ends may have started it instead (a safe
             place), and it stays while blocks of ended threads live (some builds leave one
             for good): then two. One allocation (the slow path) then starts it if need be;
             after the 2.5 s idle the RSS is within MT_IDLE_MARGIN of the start.
     small   128 MiB of blocks of 1-64 KiB, all freed but one in 256 (so the segments stay:
             their freed pages wait in the slot purge queues, which the purger reaches), then the
             same 2.5 s idle: the RSS within MT_IDLE_MARGIN plus a whole medium page (512 KiB,
             extended) per kept block. With MIMALLOC_PURGE_THREAD=0 (small-keep) it stays up.

   Measured (Release, x86-64 Linux, 2 cores): see the summary line each mode prints. The
   purger runs a pass at most 100 ms after a deadline, and freed arena blocks are due 10 ms
   (over the unpurged budget) to 100 ms (below it) after their free, so 2.5 s leaves a wide
   margin even on a loaded machine.
   Under a sanitizer the RSS figures are not asserted (memory-common.h MT_RSS_ASSERTS); the
   statistics and the thread counts are. */
#include "memory-common.h"
#include <pthread.h>
#include <dlfcn.h>
#include <sys/syscall.h>   /* SYS_getdents64 */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
#include <sys/single_threaded.h>
#endif

#define MT_IDLE_MARGIN  (16 * MiB)   /* RSS after the idle time above the start, at most */
#define MT_IDLE_MS      2500
#define MT_HUGE_BLOCK   (8 * MiB - 64 * KiB)
#define MT_MAX_BLOCKS   64

static mt_capture_t capture;
static void*        blocks[MT_MAX_BLOCKS];

/* ThreadSanitizer starts a thread of its own with the first pthread_create: with a purger
   there may be one more thread than ours and the purger. */
#define MT_PURGER_THREADS(n)  (n) + (TEST_SANITIZED ? 1 : 0)

/* The number of threads of this process (/proc/self/status), read without allocating. */
static int mt_threads(void) {
  char buf[4096];
  if (!mt_read_proc("/proc/self/status", buf, sizeof(buf))) return -1;
  const char* t = strstr(buf, "\nThreads:");
  return (t == NULL ? -1 : atoi(t + 9));
}

/* The number of this process's threads named `name` (/proc/self/task/TID/comm), read without
   allocating (getdents64 rather than opendir, whose buffer comes from malloc: us). */
static int mt_threads_named(const char* name) {
  const int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  int count = 0;
  char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
    for (long off = 0; off < n; ) {
      const char* entry = buf + off;
      unsigned short reclen;
      memcpy(&reclen, entry + 16, sizeof(reclen));   /* d_ino, d_off (8 bytes each), d_reclen, d_type, d_name */
      const char* tid = entry + 19;
      off += reclen;
      if (tid[0] < '0' || tid[0] > '9') continue;   /* . and .. */
      char path[64], comm[64];
      snprintf(path, sizeof(path), "/proc/self/task/%s/comm", tid);
      if (!mt_read_proc(path, comm, sizeof(comm))) continue;   /* (the thread ended meanwhile) */
      comm[strcspn(comm, "\n")] = 0;
      if (strcmp(comm, name) == 0) count++;
    }
  }
  close(dir);
  return count;
}

/* Threads named "mi-purger" (the purger names itself when it starts: src/purger.c). With a
   thread besides ours, wait up to 1 s for the name: pthread_create returns before the new
   thread ran its first instruction. (Any second thread: a sanitizer's own thread may be
   missing, as in a fork child under AddressSanitizer, where the count alone did not show the
   purger: it was seen unnamed.) */
static int mt_purger_named(void) {
  int named = mt_threads_named("mi-purger");
  for (int waited = 0; named == 0 && mt_threads() > 1 && waited < 1000; waited += 10) {
    mt_sleep_ms(10);
    named = mt_threads_named("mi-purger");
  }
  return named;
}

/* Capture the library's verbose messages (no allocation) to see the purger's start line. */
static void mt_verbose_capture(void) {
  mt_capture_reset(&capture);
  mi_register_output(&mt_capture_out, &capture);
  mi_option_enable(mi_option_verbose);
}

static void mt_verbose_end(void) {
  mi_option_disable(mi_option_verbose);
  mi_register_output(NULL, NULL);
}

static int mt_purger_started_lines(void) {
  return mt_count(capture.text, "purger thread started");
}

/* Allocate `total` bytes in huge blocks, every byte written. */
static size_t mt_alloc_huge(size_t total) {
  size_t n = 0;
  for (size_t done = 0; done < total && n < MT_MAX_BLOCKS; done += MT_HUGE_BLOCK) {
    blocks[n] = mi_malloc(MT_HUGE_BLOCK);
    CHECK(blocks[n] != NULL);
    if (blocks[n] == NULL) break;
    memset(blocks[n], 0xA5, MT_HUGE_BLOCK);
    n++;
  }
  return n;
}

static void mt_free_all(size_t n) {
  for (size_t i = 0; i < n; i++) { mi_free(blocks[i]); blocks[i] = NULL; }
}

/* The start: the library initialised, stdout's buffer made, a first huge block's arena there. */
static size_t mt_baseline(const char* name) {
  void* p = mi_malloc(100);
  mi_free(p);
  printf("%s: start\n", name);
  fflush(stdout);
  return mt_rss();
}

/* A free starts the purger thread only in a process that never had a second thread (glibc's
   __libc_single_threaded, src/purger.c); anywhere else (musl, or once a purger has run and
   ended: a slow build's allocations can outlast its 1 s linger) the next allocation slow path
   does. mt_single_threaded before the frees, mt_kick_purger after them: one allocation if a
   free could not have started it. */
static bool mt_single_threaded(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  return __libc_single_threaded != 0;
#else
  return false;
#endif
}
static void mt_kick_purger(bool single) {
  if (!single && mi_option_is_enabled(mi_option_purge_thread)) mi_free(mi_malloc(MT_HUGE_BLOCK));
}

/* The workload of large, keep and fork: returns the RSS at the peak; *threads: the thread
   count right after the frees (with the purger busy). */
static int mt_named_busy;   /* mt_alloc_free_idle: threads named mi-purger right after the frees */

static size_t mt_alloc_free_idle(size_t total, int* threads) {
  const size_t n = mt_alloc_huge(total);
  const size_t peak = mt_rss();
  const bool single = mt_single_threaded();
  mt_free_all(n);
  mt_kick_purger(single);
  *threads = mt_threads();
  mt_named_busy = mt_purger_named();
  mt_sleep_ms(MT_IDLE_MS);   /* no allocator call from here to the measurement */
  return peak;
}

/* The purger runs (count: right after frees) or has ended (after the idle time: nothing
   waits). */
static void mt_check_purger_threads(int busy, int idle) {
  CHECK_GE((size_t)busy, 2);
  CHECK_LE((size_t)busy, (size_t)MT_PURGER_THREADS(2));
  CHECK_LE((size_t)idle, (size_t)MT_PURGER_THREADS(1));
  CHECK_MSG(mt_named_busy == 1, "%d threads named mi-purger while the purger runs (want 1)", mt_named_busy);
  const int named_idle = mt_threads_named("mi-purger");
  CHECK_MSG(named_idle == 0, "%d threads named mi-purger after the idle time (want 0)", named_idle);
}

static int test_large(bool keep) {
  const char* name = (keep ? "mem-idle keep" : "mem-idle large");
  CHECK_EQ(mi_option_get(mi_option_purge_thread), keep ? 0 : 1);
  mt_verbose_capture();
  const size_t rss0 = mt_baseline(name);
  const int64_t purged0 = mt_stats()->purged.total;
  int busy_threads = 0;
  const size_t peak = mt_alloc_free_idle(256 * MiB, &busy_threads);
  const size_t rss1 = mt_rss();
  const int threads = mt_threads();
  const int64_t purged = mt_stats()->purged.total - purged0;
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(peak >= rss0 + 240 * MiB, "the workload touched only %.1f MiB", mt_mib_diff(peak, rss0));
    if (keep) CHECK_MSG(rss1 >= rss0 + 200 * MiB, "without the purger the RSS fell to %.1f MiB above the start", mt_mib_diff(rss1, rss0));
    else CHECK_MSG(rss1 <= rss0 + MT_IDLE_MARGIN, "after %d ms idle the RSS is %.1f MiB above the start (margin %zu MiB)", MT_IDLE_MS, mt_mib_diff(rss1, rss0), MT_IDLE_MARGIN / MiB);
  }
  if (keep) CHECK_MSG(purged < (int64_t)(64 * MiB), "purged %.1f MiB without the purger", (double)purged / MiB);
  else CHECK_MSG(purged >= (int64_t)(200 * MiB), "purged only %.1f MiB while idle", (double)purged / MiB);
  if (keep) {
    CHECK_EQ(busy_threads, 1);
    CHECK_EQ(threads, 1);
    CHECK_MSG(mt_named_busy == 0, "%d threads named mi-purger with MIMALLOC_PURGE_THREAD=0", mt_named_busy);
  }
  else mt_check_purger_threads(busy_threads, threads);
  CHECK_EQ(mt_purger_started_lines(), keep ? 0 : 1);
  mt_verbose_end();
  return test_summary(name, "RSS start %.1f MiB, peak %+.1f MiB, after %d ms idle %+.1f MiB; purged %.1f MiB; threads %d after the frees (%d named mi-purger), %d after the idle time",
                      mt_mib(rss0), mt_mib_diff(peak, rss0), MT_IDLE_MS, mt_mib_diff(rss1, rss0), (double)purged / MiB, busy_threads, mt_named_busy, threads);
}

static int test_nofree(void) {
  mt_verbose_capture();
  printf("mem-idle nofree: start\n");   /* (not mt_baseline: its free of a block would count) */
  fflush(stdout);
  static const size_t sizes[] = { 16, 200, 3000, 20000, 100000, 1 * MiB, 3 * MiB, 20 * MiB };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    for (int k = 0; k < 50; k++) {
      void* p = mi_malloc(sizes[i]);
      CHECK(p != NULL);
      if (p != NULL) ((volatile char*)p)[0] = 1;   /* (never freed) */
    }
  }
  mt_sleep_ms(300);
  const int threads = mt_threads();
  CHECK_EQ(threads, 1);
  CHECK_EQ(mt_purger_started_lines(), 0);
  mt_verbose_end();
  return test_summary("mem-idle nofree", "%d thread(s) after allocating without a free", threads);
}

static int test_fork(void) {
  const size_t rss0 = mt_baseline("mem-idle fork");
  const size_t nf = mt_alloc_huge(64 * MiB);
  const bool single = mt_single_threaded();
  mt_free_all(nf);
  mt_kick_purger(single);
  const int threads = mt_threads();   /* the parent's purger */
  mt_named_busy = mt_purger_named();
  mt_sleep_ms(MT_IDLE_MS);     /* (so the child starts from purged memory, not from the parent's freed blocks; the purger lingers 1 s) */
  const size_t rss_fork = mt_rss();
  mt_check_purger_threads(threads, mt_threads());
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss_fork <= rss0 + MT_IDLE_MARGIN, "parent: %d ms after its frees the RSS is %.1f MiB above the start", MT_IDLE_MS, mt_mib_diff(rss_fork, rss0));
  }
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) { CHECK(pid >= 0); return test_summary("mem-idle fork", "fork failed"); }
  if (pid == 0) {
    const int threads0 = mt_threads();
    const size_t crss0 = mt_rss();
    int threads1 = 0;
    const size_t peak = mt_alloc_free_idle(128 * MiB, &threads1);
    const size_t crss1 = mt_rss();
    const int threads2 = mt_threads();
    CHECK_LE((size_t)threads0, (size_t)MT_PURGER_THREADS(1));   /* the parent's purger is not here */
    mt_check_purger_threads(threads1, threads2);
    if (MT_RSS_ASSERTS) {
      CHECK_MSG(peak >= crss0 + 120 * MiB, "the child touched only %.1f MiB", mt_mib_diff(peak, crss0));
      CHECK_MSG(crss1 <= crss0 + MT_IDLE_MARGIN, "child: after %d ms idle the RSS is %.1f MiB above its start (margin %zu MiB)", MT_IDLE_MS, mt_mib_diff(crss1, crss0), MT_IDLE_MARGIN / MiB);
    }
    const int rc = test_summary("mem-idle fork (child)", "RSS after the fork %.1f MiB, peak %+.1f MiB, after %d ms idle %+.1f MiB; threads %d, %d, %d",
                                mt_mib(crss0), mt_mib_diff(peak, crss0), MT_IDLE_MS, mt_mib_diff(crss1, crss0), threads0, threads1, threads2);
    _exit(rc);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
  const size_t rss1 = mt_rss();   /* the parent idled meanwhile */
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d)", status);
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss1 <= rss0 + MT_IDLE_MARGIN, "parent: after idling the RSS is %.1f MiB above the start", mt_mib_diff(rss1, rss0));
  }
  return test_summary("mem-idle fork", "parent RSS start %.1f MiB, at the fork %+.1f MiB, after the child %+.1f MiB", mt_mib(rss0), mt_mib_diff(rss_fork, rss0), mt_mib_diff(rss1, rss0));
}

static size_t small_size(size_t i) { return (size_t)KiB << (i % 7); }   /* 1, 2, .. 64 KiB */

static int test_small(bool keep) {
  enum { N = 7 * 1040, KEEP_EVERY = 256 };   /* 7 sizes of 1..64 KiB: 127 KiB per 7 blocks, 128 MiB in all */
  static void* small[N];
  const size_t rss0 = mt_baseline(keep ? "mem-idle small-keep" : "mem-idle small");
  for (size_t i = 0; i < N; i++) {
    small[i] = mi_malloc(small_size(i));
    CHECK(small[i] != NULL);
    if (small[i] != NULL) memset(small[i], 0xA5, small_size(i));
  }
  const size_t peak = mt_rss();
  const bool single = mt_single_threaded();
  size_t kept = 0;
  for (size_t i = 0; i < N; i++) {
    if (i % KEEP_EVERY != 0) { mi_free(small[i]); small[i] = NULL; }
    else kept++;
  }
  if (!keep) mt_kick_purger(single);
  mt_sleep_ms(MT_IDLE_MS);
  const size_t rss1 = mt_rss();
  const size_t margin = MT_IDLE_MARGIN + kept * 512 * KiB;   /* a kept block may keep its whole page */
  if (MT_RSS_ASSERTS && !keep) {
    CHECK_MSG(rss1 <= rss0 + margin, "after %d ms idle the RSS is %.1f MiB above the start (margin %zu MiB)", MT_IDLE_MS, mt_mib_diff(rss1, rss0), margin / MiB);
  }
  if (MT_RSS_ASSERTS && keep) {
    CHECK_MSG(rss1 >= rss0 + 96 * MiB, "without the purger thread the RSS fell to %.1f MiB above the start", mt_mib_diff(rss1, rss0));
  }
  for (size_t i = 0; i < N; i++) mi_free(small[i]);
  return test_summary(keep ? "mem-idle small-keep" : "mem-idle small", "RSS start %.1f MiB, peak %+.1f MiB, after %d ms idle %+.1f MiB",
                      mt_mib(rss0), mt_mib_diff(peak, rss0), MT_IDLE_MS, mt_mib_diff(rss1, rss0));
}

/* main frees (the purger starts) and ends with pthread_exit: the process must end (ctest's
   timeout catches a thread of ours that keeps it alive). */
static int test_mainexit(void) {
  (void)mt_baseline("mem-idle mainexit");
  const size_t n = mt_alloc_huge(64 * MiB);
  const bool single = mt_single_threaded();
  mt_free_all(n);
  mt_kick_purger(single);
  CHECK_GE((size_t)mt_threads(), 2);
  test_summary("mem-idle mainexit", "main calls pthread_exit with the purger running");
  fflush(stdout);
  pthread_exit(NULL);
}

/* join: see the top of the file */
enum { MT_JOIN_THREADS = 12 };
static size_t (*mt_tls_touch)(void);
static _Atomic(int) mt_join_done;

static void* mt_join_worker(void* arg) {
  (void)arg;
  mt_tls_touch();
  mt_join_done++;
  return NULL;
}

static int test_join(const char* module) {
  alarm(30);   /* a deadlock in the joins ends the process (SIGALRM) */
  const size_t rss0 = mt_baseline("mem-idle join");
  void* lib = (module == NULL ? NULL : dlopen(module, RTLD_NOW));
  CHECK_MSG(lib != NULL, "dlopen(%s) failed", module == NULL ? "(no path)" : module);
  if (lib == NULL) return test_summary("mem-idle join", "no module");
  *(void**)&mt_tls_touch = dlsym(lib, "mt_tls_touch");
  CHECK(mt_tls_touch != NULL);
  if (mt_tls_touch == NULL) return test_summary("mem-idle join", "no symbol");
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 8 * MiB);   /* 12 of them overflow glibc's 40 MiB stack cache */
  pthread_t t[MT_JOIN_THREADS];
  for (int i = 0; i < MT_JOIN_THREADS; i++) CHECK(pthread_create(&t[i], &attr, &mt_join_worker, NULL) == 0);
  pthread_attr_destroy(&attr);
  while (mt_join_done < MT_JOIN_THREADS) mt_sleep_ms(10);
  const size_t n = mt_alloc_huge(64 * MiB);
  mt_sleep_ms(MT_IDLE_MS);   /* any purger started so far has ended */
  const int before = mt_threads();
  for (int i = 0; i < MT_JOIN_THREADS; i++) pthread_join(t[i], NULL);   /* frees their TLS under glibc's lock */
  const int joined = mt_threads();
  mt_free_all(n);              /* purges scheduled: no thread started here */
  const int freed = mt_threads();
  mi_free(mi_malloc(MT_HUGE_BLOCK));   /* an allocation slow path: starts it */
  const int busy = mt_threads();
  mt_sleep_ms(MT_IDLE_MS);
  const size_t rss1 = mt_rss();
  const int idle = mt_threads();
  /* The workers' ends may have started the purger (a thread's end is a safe place): while their
     blocks (glibc's dynamic TLS, freed in the joins) live on abandoned pages it waits for their
     frees, and a block an ended thread never frees (a build's own per-thread allocations) keeps
     it (src/purger.c, mi_purger_keep). So: a free must not start it when it was not running. */
  CHECK_LE((size_t)before, (size_t)MT_PURGER_THREADS(2));
  if (before <= MT_PURGER_THREADS(1)) {
    CHECK_MSG(joined <= MT_PURGER_THREADS(1), "%d threads after the joins: a free started the purger", joined);
    CHECK_MSG(freed <= MT_PURGER_THREADS(1), "%d threads after the frees: a free started the purger", freed);
  }
  CHECK_GE((size_t)busy, 2);
  CHECK_LE((size_t)busy, (size_t)MT_PURGER_THREADS(2));
  CHECK_LE((size_t)idle, (size_t)MT_PURGER_THREADS(2));
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(rss1 <= rss0 + MT_IDLE_MARGIN, "after %d ms idle the RSS is %.1f MiB above the start (margin %zu MiB)", MT_IDLE_MS, mt_mib_diff(rss1, rss0), MT_IDLE_MARGIN / MiB);
  }
  alarm(0);
  return test_summary("mem-idle join", "threads %d before the joins, %d after, %d after the frees, %d after an allocation, %d after %d ms idle; RSS %+.1f MiB",
                      before, joined, freed, busy, idle, MT_IDLE_MS, mt_mib_diff(rss1, rss0));
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strcmp(mode, "large") == 0) return test_large(false);
  if (strcmp(mode, "keep") == 0) return test_large(true);
  if (strcmp(mode, "nofree") == 0) return test_nofree();
  if (strcmp(mode, "fork") == 0) return test_fork();
  if (strcmp(mode, "small") == 0) return test_small(false);
  if (strcmp(mode, "small-keep") == 0) return test_small(true);
  if (strcmp(mode, "mainexit") == 0) return test_mainexit();
  if (strcmp(mode, "join") == 0) return test_join(argc > 2 ? argv[2] : NULL);
  fprintf(stderr, "usage: mem-idle large|keep|nofree|fork|small|small-keep|mainexit|join MODULE\n");
  return 2;
}
