/* SPDX-License-Identifier: MIT */
/* rss-guard.h -- a memory bound for the multi-threaded test programs (issue 49: on a busy
   machine one run grew to 23 GB before the kernel killed it).

   test_rss_guard_start(name, factor, base_mib)
       starts a watchdog thread that reads this process' resident set size (/proc/self/statm)
       every TEST_RSS_GUARD_POLL_MS and compares it with the bytes the test holds live:

           RSS  <=  RSS at the start  +  factor x (peak of live bytes so far)  +  base_mib MiB

       scaled for the build (TEST_RSS_BUILD_FACTOR, TEST_RSS_BUILD_BASE_MIB below). Past the
       bound it prints

           <name>: RSS X MiB past its bound Y MiB (live Z MiB, ...)

       on stderr and ends the process with _exit(1): nothing of the allocator is called after
       that (the message is formatted on the stack and written with write(2)).
   test_live_add(n), test_live_sub(n)
       the test's count of the bytes it holds (requested or usable sizes, as each test states);
       any thread may call them. The bound follows the peak of that count since the start, not
       the count now: the allocator may keep freed memory resident (the purge delays, which the
       memory-stress-delay-1 test sets to "never", and on a loaded machine the purges come late),
       and the watchdog itself may be descheduled for a while.
   test_rss_leak()
       true when MI_TEST_RSS_LEAK=1: the test is to leak (skip its frees, keep counting them
       as freed), so that its RSS runs away while its live count stays put and the guard must
       stop it (the ctests rss-guard-leak-*, which expect the message above).

   At the end test_summary() (testing.h) stops the watchdog and prints one line: the peak RSS
   and the peak live bytes, and the sample closest to the bound (RSS above the start against
   the bound's allowance there). The measured figures behind each test's factor and base are
   stated where the test starts its guard.

   MI_TEST_RSS_GUARD=report watches without failing (the figures at the end only);
   MI_TEST_RSS_GUARD=trace also prints a sample every 100 ms (for measuring a bound).

   Not watched (the start prints why): where there is no /proc/self/statm (Windows, macOS),
   under qemu-user (MI_TEST_EMULATED: the RSS is qemu's and madvise is ignored), and when
   MI_TEST_RSS_GUARD=0 is set. Under the sanitizers the bound is scaled instead (their shadow
   memory grows with the memory touched, and their runtimes keep memory of their own): see
   TEST_RSS_BUILD_FACTOR. */
#ifndef MI_TEST_RSS_GUARD_H
#define MI_TEST_RSS_GUARD_H

#include "testing.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__) && !(defined(MI_TEST_EMULATED) && MI_TEST_EMULATED)
#define TEST_RSS_GUARD_AVAILABLE 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#else
#define TEST_RSS_GUARD_AVAILABLE 0
#endif

#ifndef TEST_RSS_GUARD_POLL_MS
#define TEST_RSS_GUARD_POLL_MS 5
#endif

/* The sanitizers, told apart (testing.h's TEST_SANITIZED covers both). */
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

/* The build's scaling of every test's bound (its factor x TEST_RSS_BUILD_FACTOR, its base +
   TEST_RSS_BUILD_BASE_MIB), measured with every guarded ctest test (2 busy cores):
   - ThreadSanitizer: its shadow of the application memory stays after a purge and covers every
     address ever touched, and its runtime keeps per-thread state: peak RSS 1.5-1.8 GiB for
     170-210 MiB live in test-stress (8.3 x; 7.5 x with the debug build), 0.69-0.88 GiB for
     100-118 MiB in model-mt and sheap, 685 MiB in test-threads (whose live bytes peak at 42
     MiB in that build's smaller run), 115-133 MiB in api-v3-mode with nothing live: x 5 and
     + 384 MiB, which leaves at least 17% of every bound unused (test-threads, Debug);
   - AddressSanitizer (the library under ASan, malloc not overridden): the RSS above the peak
     live bytes as in the plain builds (+8 MiB of runtime at the start, which the start
     figure holds): x 1.25 and + 64 MiB;
   - every other build (Debug, MI_DEBUG_FULL, secure, the tracking builds): 1 and 0, the
     tests' own factors and bases cover them (each states its figures). */
#if defined(TEST_TSAN)
#define TEST_RSS_BUILD_FACTOR   5.0
#define TEST_RSS_BUILD_BASE_MIB 384
#elif defined(TEST_ASAN)
#define TEST_RSS_BUILD_FACTOR   1.25
#define TEST_RSS_BUILD_BASE_MIB 64
#else
#define TEST_RSS_BUILD_FACTOR   1.0
#define TEST_RSS_BUILD_BASE_MIB 0
#endif

#define TEST_RSS_MIB_ ((size_t)1024 * 1024)

static size_t test_live_;       /* bytes the test holds */
static size_t test_live_peak_;  /* the most it held so far */
static int test_rss_leak_ = -1;

static TEST_UNUSED_ void test_live_add(size_t n) {
  const size_t now = __atomic_add_fetch(&test_live_, n, __ATOMIC_RELAXED);
  size_t peak = __atomic_load_n(&test_live_peak_, __ATOMIC_RELAXED);
  while (now > peak && !__atomic_compare_exchange_n(&test_live_peak_, &peak, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { }
}
static TEST_UNUSED_ void test_live_sub(size_t n) { __atomic_sub_fetch(&test_live_, n, __ATOMIC_RELAXED); }
static TEST_UNUSED_ size_t test_live_now(void) { return __atomic_load_n(&test_live_, __ATOMIC_RELAXED); }

/* MI_TEST_RSS_LEAK=1: the test leaks what it frees (see above) */
static TEST_UNUSED_ int test_rss_leak(void) {
  int leak = __atomic_load_n(&test_rss_leak_, __ATOMIC_RELAXED);
  if (leak < 0) {
    const char* s = getenv("MI_TEST_RSS_LEAK");
    leak = (s != NULL && s[0] == '1');
    __atomic_store_n(&test_rss_leak_, leak, __ATOMIC_RELAXED);
  }
  return leak;
}

#if TEST_RSS_GUARD_AVAILABLE

typedef struct test_rss_guard_s {
  const char* name;
  double factor;          /* scaled for the build */
  size_t base;            /* bytes, scaled for the build */
  size_t start;           /* RSS when the guard started */
  int fd;                 /* /proc/self/statm */
  size_t page;
  pthread_t thread;
  int running;            /* the watchdog runs; 0 asks it to stop */
  int report_only;        /* MI_TEST_RSS_GUARD=report or trace: never fails */
  int trace;              /* MI_TEST_RSS_GUARD=trace */
  /* for the report at the end (written by the watchdog only, read after it ended) */
  size_t peak_rss, samples;
  double closest;         /* the highest (RSS - start) / allowance seen */
  size_t closest_rss, closest_bound, closest_live;
  double need_base;       /* the most of RSS - start - factor x peak live: the base the run needed */
  double over_live;       /* the most of RSS - start - peak live */
} test_rss_guard_t;

static test_rss_guard_t test_rss_guard_;

/* the resident set size, read without allocating (0 when unreadable) */
static TEST_UNUSED_ size_t test_rss_read_(test_rss_guard_t* g) {
  char buf[128];
  if (lseek(g->fd, 0, SEEK_SET) != 0) return 0;
  const ssize_t n = read(g->fd, buf, sizeof(buf) - 1);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* s = buf;
  while (*s != 0 && *s != ' ') s++;   /* the first field: the address space */
  return (size_t)strtoull(s, NULL, 10) * g->page;
}

static TEST_UNUSED_ size_t test_rss_bound_(const test_rss_guard_t* g, size_t peak_live) {
  return g->start + (size_t)(g->factor * (double)peak_live) + g->base;
}

static TEST_UNUSED_ void* test_rss_watch_(void* arg) {
  test_rss_guard_t* g = (test_rss_guard_t*)arg;
  const struct timespec interval = { 0, TEST_RSS_GUARD_POLL_MS * 1000000L };
  while (__atomic_load_n(&g->running, __ATOMIC_ACQUIRE)) {
    /* the peak first: an allocation counts before its memory is touched */
    const size_t peak_live = __atomic_load_n(&test_live_peak_, __ATOMIC_RELAXED);
    const size_t rss = test_rss_read_(g);
    const size_t bound = test_rss_bound_(g, peak_live);
    g->samples++;
    if (rss > g->peak_rss) g->peak_rss = rss;
    const double allowance = (double)(bound - g->start);
    const double used = (rss > g->start ? (double)(rss - g->start) : 0.0);
    if (used - (double)peak_live > g->over_live) g->over_live = used - (double)peak_live;
    if (used - g->factor * (double)peak_live > g->need_base) g->need_base = used - g->factor * (double)peak_live;
    if (allowance > 0 && used / allowance > g->closest) {
      g->closest = used / allowance;
      g->closest_rss = rss; g->closest_bound = bound; g->closest_live = peak_live;
    }
    if (g->trace && g->samples % (100 / TEST_RSS_GUARD_POLL_MS) == 0) {
      char msg[256];
      const int len = snprintf(msg, sizeof(msg), "rss-guard %s: sample %zu: RSS %.1f MiB, live %.1f MiB, peak live %.1f MiB, bound %.1f MiB\n",
                               g->name, g->samples, (double)rss / TEST_RSS_MIB_, (double)test_live_now() / TEST_RSS_MIB_,
                               (double)peak_live / TEST_RSS_MIB_, (double)bound / TEST_RSS_MIB_);
      if (len > 0 && write(2, msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1) < 0) { /* nothing to do */ }
    }
    if (rss > bound && !g->report_only) {
      char msg[512];
      const int len = snprintf(msg, sizeof(msg),
        "%s: RSS %.1f MiB past its bound %.1f MiB (live %.1f MiB; the bound: %.1f MiB at the start + %.2f x %.1f MiB peak live + %zu MiB)\n",
        g->name, (double)rss / TEST_RSS_MIB_, (double)bound / TEST_RSS_MIB_, (double)test_live_now() / TEST_RSS_MIB_,
        (double)g->start / TEST_RSS_MIB_, g->factor, (double)peak_live / TEST_RSS_MIB_, g->base / TEST_RSS_MIB_);
      if (len > 0 && write(2, msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1) < 0) { /* nothing to do */ }
      _exit(1);
    }
    nanosleep(&interval, NULL);
  }
  return NULL;
}

/* Stops the watchdog and prints what it saw (testing.h's test_summary calls it). */
static TEST_UNUSED_ void test_rss_guard_stop_(void) {
  test_rss_guard_t* g = &test_rss_guard_;
  if (!__atomic_load_n(&g->running, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&g->running, 0, __ATOMIC_RELEASE);
  pthread_join(g->thread, NULL);
  close(g->fd);
  const size_t peak_live = __atomic_load_n(&test_live_peak_, __ATOMIC_RELAXED);
  printf("rss-guard %s: peak RSS %.1f MiB (%.1f MiB at the start), peak live %.1f MiB, bound %.2f x peak live + %zu MiB "
         "= %.1f MiB at the end; closest: RSS %.1f MiB of bound %.1f MiB (%.0f%% of the allowance, peak live then %.1f MiB); "
         "base needed %.1f of %zu MiB; RSS above start + peak live at most %.1f MiB; %zu samples\n",
         g->name, (double)g->peak_rss / TEST_RSS_MIB_, (double)g->start / TEST_RSS_MIB_, (double)peak_live / TEST_RSS_MIB_, g->factor,
         g->base / TEST_RSS_MIB_, (double)test_rss_bound_(g, peak_live) / TEST_RSS_MIB_, (double)g->closest_rss / TEST_RSS_MIB_,
         (double)g->closest_bound / TEST_RSS_MIB_, 100.0 * g->closest, (double)g->closest_live / TEST_RSS_MIB_,
         g->need_base / (double)TEST_RSS_MIB_, g->base / TEST_RSS_MIB_, g->over_live / (double)TEST_RSS_MIB_, g->samples);
  fflush(stdout);
}

static TEST_UNUSED_ void test_rss_guard_start(const char* name, double factor, size_t base_mib) {
  test_rss_guard_t* g = &test_rss_guard_;
  const char* off = getenv("MI_TEST_RSS_GUARD");
  if (off != NULL && off[0] == '0') { printf("rss-guard %s: off (MI_TEST_RSS_GUARD=0)\n", name); return; }
  if (test_rss_leak()) printf("rss-guard %s: MI_TEST_RSS_LEAK=1: the test leaks what it frees; the guard must stop it\n", name);
  fflush(stdout);
  memset(g, 0, sizeof(*g));
  g->trace = (off != NULL && strcmp(off, "trace") == 0);
  g->report_only = g->trace || (off != NULL && strcmp(off, "report") == 0);
  g->name = name;
  g->factor = factor * TEST_RSS_BUILD_FACTOR;
  g->base = (base_mib + TEST_RSS_BUILD_BASE_MIB) * TEST_RSS_MIB_;
  g->page = (size_t)sysconf(_SC_PAGESIZE);
  g->fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (g->fd < 0) { printf("rss-guard %s: off (no /proc/self/statm: %s)\n", name, strerror(errno)); return; }
  g->start = test_rss_read_(g);
  g->running = 1;
  if (pthread_create(&g->thread, NULL, &test_rss_watch_, g) != 0) {
    g->running = 0;
    close(g->fd);
    printf("rss-guard %s: off (no thread)\n", name);
    return;
  }
  test_at_summary_ = &test_rss_guard_stop_;
}

#else   /* no /proc/self/statm, or qemu-user: not watched */

static TEST_UNUSED_ void test_rss_guard_start(const char* name, double factor, size_t base_mib) {
  (void)factor; (void)base_mib;
#if defined(MI_TEST_EMULATED) && MI_TEST_EMULATED
  printf("rss-guard %s: off (under qemu-user the RSS is the emulator's)\n", name);
#else
  printf("rss-guard %s: off (no /proc/self/statm on this system)\n", name);
#endif
}

#endif
#endif
