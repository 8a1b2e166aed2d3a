/* SPDX-License-Identifier: MIT */
/* stats-process.c -- mi_process_info (ctest stats-process, label stats).

   - every pointer may be NULL;
   - elapsed grows with wall time (a 100 ms sleep) and is not more than the time since main
     started plus a start-up allowance;
   - user time grows after busy work (> 0), system time and faults agree with getrusage;
   - current RSS is the true resident size (our own reading of /proc/self/statm, within a few
     MiB), 0 < current_rss <= peak_rss;
   - 0 < current_commit <= peak_commit, current/peak commit equal mi_stats_get's committed;
   - (stats-process peak-rss, ctest stats-pending-peak-rss) a peak RSS is never below a current
     RSS reported earlier (touch 64 MiB, read, free, read);
   - touching a 64 MiB block grows the RSS by roughly 64 MiB (at least 7/8 of it, at most
     64 MiB + 16 MiB), peak RSS follows, and freeing it gives the memory back;
   - the "process:" and "elapsed:" rows of the statistics text agree with it. */
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "stats-common.h"

#define MiB ((size_t)1024 * 1024)

typedef struct pinfo_s {
  size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
} pinfo_t;

static pinfo_t info(void) {
  pinfo_t p;
  memset(&p, 0xFF, sizeof(p));
  mi_process_info(&p.elapsed, &p.user, &p.sys, &p.rss, &p.peak_rss, &p.commit, &p.peak_commit, &p.faults);
  return p;
}

static size_t statm_rss(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long size = 0, resident = 0;
  if (sscanf(buf, "%lu %lu", &size, &resident) != 2) return 0;
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static long long rusage_ms(bool user) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  const struct timeval* tv = (user ? &r.ru_utime : &r.ru_stime);
  return (long long)tv->tv_sec * 1000 + tv->tv_usec / 1000;
}

static size_t diff(size_t a, size_t b) { return a > b ? a - b : b - a; }

static ts_capture_t cap;
static volatile uint64_t sink;

/* stats-pending-peak-rss: a peak RSS is never below a current RSS reported before it */
static int pending_peak_rss(void) {
  size_t max_current = 0;
  for (int round = 0; round < 5; round++) {
    unsigned char* big = (unsigned char*)mi_malloc(64 * MiB);
    CHECK(big != NULL);
    if (big == NULL) break;
    memset(big, 0x5A, 64 * MiB);
    pinfo_t e = info();
    if (e.rss > max_current) max_current = e.rss;
    CHECK_MSG(e.peak_rss >= max_current, "round %d: peak_rss %zu < current_rss %zu reported before", round, e.peak_rss, max_current);
    mi_free(big);
    pinfo_t f = info();
    CHECK_MSG(f.peak_rss >= max_current, "round %d, after free: peak_rss %zu < current_rss %zu reported before", round, f.peak_rss, max_current);
  }
  return test_summary("stats-pending peak-rss", NULL);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "peak-rss") == 0) return pending_peak_rss();
  const long long start = now_ms();
  ts_build_t build = ts_detect_build();
  void* warm = mi_malloc(1000);   /* some committed memory */

  /* NULL everywhere, and one at a time */
  mi_process_info(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  size_t only = (size_t)-1;
  mi_process_info(NULL, NULL, NULL, &only, NULL, NULL, NULL, NULL);
  CHECK(only > 0 && only != (size_t)-1);
  only = (size_t)-1;
  mi_process_info(NULL, NULL, NULL, NULL, NULL, NULL, &only, NULL);
  CHECK(only > 0 && only != (size_t)-1);

  /* elapsed */
  const long long since_main = now_ms() - start;   /* before the call: elapsed >= it */
  pinfo_t a = info();
  CHECK_GE(a.elapsed, (size_t)since_main);
  CHECK_LE(a.elapsed, (size_t)since_main + 5000);
  struct timespec ts = { 0, 100 * 1000 * 1000 };
  nanosleep(&ts, NULL);
  pinfo_t b = info();
  CHECK_GE(b.elapsed, a.elapsed + 95);
  CHECK_LE(b.elapsed, a.elapsed + 5000);

  /* user time after busy work: at least 60 ms of CPU */
  const long long u0 = rusage_ms(true);
  uint64_t x = 1;
  while (rusage_ms(true) < u0 + 60 && now_ms() < start + 10000) {
    for (int i = 0; i < 1000000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  sink = x;
  pinfo_t c = info();
  CHECK(c.user > 0);
  CHECK_GE(c.user, b.user + 50);
  CHECK_LE(c.user, (size_t)rusage_ms(true));
  CHECK_LE(c.sys, (size_t)rusage_ms(false));
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  CHECK_LE(c.faults, (size_t)ru.ru_majflt);

  /* RSS and commit */
  CHECK(c.rss > 0);
  CHECK_LE(c.rss, c.peak_rss);
  CHECK_MSG(diff(c.rss, statm_rss()) <= 4 * MiB, "current_rss %zu, /proc/self/statm %zu", c.rss, statm_rss());
  CHECK(c.commit > 0);
  CHECK_LE(c.commit, c.peak_commit);
  {
    mi_stats_t_decl(s);
    mi_stats_get(&s);
    CHECK_EQ(c.commit, s.committed.current);
    CHECK_EQ(c.peak_commit, s.committed.peak);
  }

  /* a 64 MiB block: committed at once, resident once touched, both given back when freed */
  const size_t big_size = 64 * MiB;
  unsigned char* big = (unsigned char*)mi_malloc(big_size);
  CHECK(big != NULL);
  pinfo_t d = info();
  CHECK_GE(d.commit, c.commit + big_size);
  CHECK_GE(d.peak_commit, d.commit);
  const size_t rss_before = d.rss;
  memset(big, 0x5A, big_size);
  pinfo_t e = info();
  CHECK_MSG(e.rss >= rss_before + big_size / 8 * 7, "RSS grew by %zd bytes after touching %zu", (ssize_t)(e.rss - rss_before), big_size);
  CHECK_MSG(e.rss <= rss_before + big_size + 16 * MiB, "RSS grew by %zu bytes after touching %zu", e.rss - rss_before, big_size);
  CHECK_GE(e.peak_rss, e.rss);
  CHECK_MSG(diff(e.rss, statm_rss()) <= 4 * MiB, "current_rss %zu, /proc/self/statm %zu", e.rss, statm_rss());
  mi_free(big);
  pinfo_t f = info();
  CHECK_MSG(f.rss + big_size / 8 * 7 <= e.rss, "RSS %zu after freeing, %zu before", f.rss, e.rss);
  CHECK_LE(f.commit + big_size, e.commit);
  CHECK_GE(f.peak_commit, d.commit);
  CHECK_GE(f.peak_rss, 64 * MiB);   /* peak >= an earlier current: stats-pending-peak-rss */

  /* the statistics text: elapsed and the process row */
  pinfo_t g0 = info();
  ts_capture_reset(&cap);
  mi_stats_print_out(&ts_capture_out, &cap);
  pinfo_t g1 = info();
  ts_capture_split(&cap);
  regmatch_t m[8];
  const int el = ts_find_line(&cap, 0, "   elapsed:");
  CHECK(el >= 0 && ts_match("^   elapsed: +([0-9]+)\\.([0-9]{3}) s$", cap.lines[el], m, 3));
  if (el >= 0 && ts_match("^   elapsed: +([0-9]+)\\.([0-9]{3}) s$", cap.lines[el], m, 3)) {
    const size_t ms = (size_t)(ts_match_num(cap.lines[el], &m[1]) * 1000 + ts_match_num(cap.lines[el], &m[2]));
    CHECK_GE(ms, g0.elapsed);
    CHECK_LE(ms, g1.elapsed);
    CHECK_GE(ms, 100);
  }
  const int pl = ts_find_line(&cap, 0, "   process:");
  const char* pat = "^   process: user: ([0-9]+)\\.([0-9]{3}) s, system: ([0-9]+)\\.([0-9]{3}) s, faults: ([0-9]+), peak rss: (.+), peak commit: (.+)$";
  CHECK(pl >= 0 && ts_match(pat, cap.lines[pl], m, 8));
  if (pl >= 0 && ts_match(pat, cap.lines[pl], m, 8)) {
    const char* l = cap.lines[pl];
    const size_t user = (size_t)(ts_match_num(l, &m[1]) * 1000 + ts_match_num(l, &m[2]));
    CHECK_GE(user, g0.user);
    CHECK_LE(user, g1.user);
    CHECK_GE(user, 50);
    char want0[48], want1[48], got[64];
    ts_fmt(want0, sizeof(want0), (int64_t)g0.peak_rss, TS_BYTES);
    ts_fmt(want1, sizeof(want1), (int64_t)g1.peak_rss, TS_BYTES);
    snprintf(got, sizeof(got), "%.*s", (int)(m[6].rm_eo - m[6].rm_so), l + m[6].rm_so);
    CHECK_MSG(strcmp(got, want0) == 0 || strcmp(got, want1) == 0, "peak rss \"%s\", expected \"%s\"", got, want0);
    ts_fmt(want0, sizeof(want0), (int64_t)g0.peak_commit, TS_BYTES);
    snprintf(got, sizeof(got), "%.*s", (int)(m[7].rm_eo - m[7].rm_so), l + m[7].rm_so);
    CHECK_MSG(strcmp(got, want0) == 0, "peak commit \"%s\", expected \"%s\"", got, want0);
    CHECK(g0.peak_rss >= 64 * MiB);   /* "64.x MiB" or more: the touched block counts */
  }
  mi_free(warm);
  return test_summary("stats-process", "%s build", build.debug ? "debug" : "release");
}
