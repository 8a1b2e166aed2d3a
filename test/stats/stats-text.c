/* SPDX-License-Identifier: MIT */
/* stats-text.c -- the statistics text (mimalloc's layout, docs/statistics.md) and mi_stats_get
   (mimalloc-stats.h) after a
   known single-thread workload; ctest stats-text (shared library) and stats-text-static.

   1. The formatter of stats-common.h is checked against the examples of docs/statistics.md.
   2. Start from empty figures (probe freed, mi_collect(true), mi_stats_reset) and print: the
      output must match, line by line, the text built from mi_stats_get by the layout's rules.
   3. Workload (block sizes are chosen so each lands exactly on one of our size classes; debug
      builds add a 24-byte padding record, subtracted from the request):
        A: 1700 blocks of 32 bytes, 1000 of them freed at the end   (bin 3)
        B: 131 blocks of 128 bytes                                   (bin 9: 16768 = "16.4 KiB")
        C: 1 block of 640 bytes                                      (bin 27: "640   B  ")
        D: 10 blocks of 4 KiB, all freed, then mi_collect(true)      (bin 49: "ok" row)
        E: 96 KiB (its class's first page: a slot of a large segment), F: 1 MiB (a span of slots
           of the same segment)
        G: two huge blocks of 5 MiB, the second freed
      then print again: every line must match the text built from mi_stats_get + the per-bin
      figures of mi_stats_get_json, the counts the workload determines must be exact
      (segments 4/4/3, pages 7/8/6, mmaps 4, -retire 2, threads 1/1/1, reserved, huge, and with
      per-block statistics the bin rows, binned and malloc req), and a few rows must equal
      literal strings written by hand from the layout's description.
   4. mi_stats_get refuses a NULL / wrong-size / wrong-version struct without touching it, does
      not merge the calling thread, and its malloc_bins/page_bins are our bins folded into
      mimalloc v2's numbering (sums match the internal figures).
   5. A thread that never allocated prints all-zero figures (mi_thread_stats_print_out).
      A thread prints its own figures (mi_thread_stats_print_out) before and after
      mi_stats_merge, exits with 3 live blocks (abandoned page and segment), and the main
      thread frees them and collects: the figures return to where they were.

   Every output call must be exactly one line; no printed figure may be negative. */
#include <pthread.h>
#include <unistd.h>
#include "stats-common.h"

#define KiB ((int64_t)1024)
#define MiB (KiB * KiB)

typedef struct snapshot_s {
  mi_stats_t   s;
  ts_capture_t cap;
  size_t       e0, e1, u0, u1, sy0, sy1, prss0, prss1, f0, f1;
  ts_bin_t     bins[TS_BINS_MAX];
  ts_bin_t     page_bins[TS_BINS_MAX];
  int          nbins;
} snapshot_t;

static ts_build_t build;
static snapshot_t T0, T1, TA, TB;
static char json[1 << 20];
static char expected[TS_LINES_MAX][TS_LINE_MAX];

static void get_stats(mi_stats_t* s) {
  memset(s, 0, sizeof(*s));
  s->size = sizeof(mi_stats_t);
  s->version = MI_STAT_VERSION;
  CHECK(mi_stats_get(s));
}

/* Print the process statistics, then read them back through mi_stats_get and the JSON. */
static void take(snapshot_t* t) {
  mi_process_info(&t->e0, &t->u0, &t->sy0, NULL, &t->prss0, NULL, NULL, &t->f0);
  ts_capture_reset(&t->cap);
  mi_stats_print_out(&ts_capture_out, &t->cap);
  mi_process_info(&t->e1, &t->u1, &t->sy1, NULL, &t->prss1, NULL, NULL, &t->f1);
  get_stats(&t->s);
  char* j = mi_stats_get_json(sizeof(json), json);
  CHECK_PTR_EQ(j, json);
  t->nbins = ts_json_bins(json, "malloc_bins", t->bins, TS_BINS_MAX);
  CHECK_MSG(t->nbins > 0, "malloc_bins not found in the JSON");
  CHECK_MSG(ts_json_bins(json, "page_bins", t->page_bins, TS_BINS_MAX) == t->nbins, "page_bins has a different length");
  ts_capture_split(&t->cap);
}

/* The whole text against mimalloc's layout filled with the snapshot's figures. */
static void check_text(const snapshot_t* t, const char* what) {
  const ts_capture_t* c = &t->cap;
  CHECK_MSG(c->bad_calls == 0, "%s: %d output calls were not exactly one line, first: \"%s\"", what, c->bad_calls, c->first_bad);
  CHECK_MSG(!c->overflow, "%s: capture overflow", what);
  CHECK_MSG(c->len > 0 && c->text[c->len - 1] == '\n', "%s: text does not end with a newline", what);
  CHECK_MSG(c->calls == c->nlines, "%s: %d output calls for %d lines", what, c->calls, c->nlines);
  const int n = ts_expected_lines(expected, &t->s, t->bins, build.stat_level);
  CHECK_MSG(c->nlines == n + 2, "%s: %d lines, expected %d", what, c->nlines, n + 2);
  for (int i = 0; i < n && i < c->nlines; i++) {
    CHECK_MSG(strcmp(c->lines[i], expected[i]) == 0, "%s: line %d\n  got      \"%s\"\n  expected \"%s\"", what, i + 1, c->lines[i], expected[i]);
  }
  const int neg = ts_text_negative_line(c);
  CHECK_MSG(neg < 0, "%s: negative figure on line \"%s\"", what, neg < 0 ? "" : c->lines[neg]);
  if (c->nlines < n + 2) return;
  /* elapsed: %5d.%03d s, between the process_info calls around the print */
  regmatch_t m[8];
  const char* el = c->lines[n];
  if (ts_match("^   elapsed: [ 0-9]{4}([0-9])\\.([0-9]{3}) s$", el, m, 3) ||
      ts_match("^   elapsed: ([0-9]{5,})\\.([0-9]{3}) s$", el, m, 3)) {
    long long secs = 0;
    sscanf(el + 12, "%lld", &secs);
    const long long ms = secs * 1000 + ts_match_num(el, &m[2]);
    CHECK_MSG(ms >= (long long)t->e0 && ms <= (long long)t->e1, "%s: elapsed %lld ms outside [%zu, %zu]", what, ms, t->e0, t->e1);
  }
  else {
    CHECK_MSG(false, "%s: elapsed line \"%s\"", what, el);
  }
  /* process: user/system/faults within the bracketing values, peak rss, peak commit */
  const char* pl = c->lines[n + 1];
  const bool with_commit = (t->s.committed.peak > 0);
  const char* pat = (with_commit
    ? "^   process: user: ([0-9]+)\\.([0-9]{3}) s, system: ([0-9]+)\\.([0-9]{3}) s, faults: ([0-9]+), peak rss: (.+), peak commit: (.+)$"
    : "^   process: user: ([0-9]+)\\.([0-9]{3}) s, system: ([0-9]+)\\.([0-9]{3}) s, faults: ([0-9]+), peak rss: (.+)$");
  if (ts_match(pat, pl, m, 8)) {
    const long long user = ts_match_num(pl, &m[1]) * 1000 + ts_match_num(pl, &m[2]);
    const long long sys = ts_match_num(pl, &m[3]) * 1000 + ts_match_num(pl, &m[4]);
    const long long faults = ts_match_num(pl, &m[5]);
    CHECK_MSG(user >= (long long)t->u0 && user <= (long long)t->u1, "%s: user %lld ms outside [%zu, %zu]", what, user, t->u0, t->u1);
    CHECK_MSG(sys >= (long long)t->sy0 && sys <= (long long)t->sy1, "%s: system %lld ms outside [%zu, %zu]", what, sys, t->sy0, t->sy1);
    CHECK_MSG(faults >= (long long)t->f0 && faults <= (long long)t->f1, "%s: faults %lld outside [%zu, %zu]", what, faults, t->f0, t->f1);
    char rss[64], r0[48], r1[48];
    size_t len = (size_t)(m[6].rm_eo - m[6].rm_so);
    snprintf(rss, sizeof(rss), "%.*s", (int)len, pl + m[6].rm_so);
    ts_fmt(r0, sizeof(r0), (int64_t)t->prss0, TS_BYTES);
    ts_fmt(r1, sizeof(r1), (int64_t)t->prss1, TS_BYTES);
    /* the peak read by the print lies between the two bracketing reads (it grew from 1.7 to
       1.9 MiB around a print once): any value of that range, as printed, is right */
    bool rss_ok = false;
    for (uint64_t v = t->prss0; v <= t->prss1 && !rss_ok; v += 1024) {
      char e[48];
      ts_fmt(e, sizeof(e), (int64_t)v, TS_BYTES);
      rss_ok = (strcmp(rss, e) == 0);
    }
    CHECK_MSG(rss_ok || strcmp(rss, r1) == 0, "%s: peak rss \"%s\", expected \"%s\" .. \"%s\"", what, rss, r0, r1);
    if (with_commit) {
      char pc[64], e[48];
      len = (size_t)(m[7].rm_eo - m[7].rm_so);
      snprintf(pc, sizeof(pc), "%.*s", (int)len, pl + m[7].rm_so);
      ts_fmt(e, sizeof(e), t->s.committed.peak, TS_BYTES);
      CHECK_MSG(strcmp(pc, e) == 0, "%s: peak commit \"%s\", expected \"%s\"", what, pc, e);
    }
  }
  else {
    CHECK_MSG(false, "%s: process line \"%s\"", what, pl);
  }
}

/* A line of the snapshot that starts with `label` must equal `line` exactly. */
static void check_literal_in(const ts_capture_t* c, const char* label, const char* line) {
  const int i = ts_find_line(c, 0, label);
  CHECK_MSG(i >= 0, "no line starting with \"%s\"", label);
  if (i >= 0) CHECK_MSG(strcmp(c->lines[i], line) == 0, "\n  got      \"%s\"\n  expected \"%s\"", c->lines[i], line);
}
static void check_literal(const snapshot_t* t, const char* label, const char* line) {
  check_literal_in(&t->cap, label, line);
}

/* ---------------------------------------------------------------------------------------
   1. The formatter against the examples of docs/statistics.md
--------------------------------------------------------------------------------------- */
static void check_fmt(int64_t n, ts_unit_t u, const char* want) {
  char buf[64];
  ts_fmt(buf, sizeof(buf), n, u);
  CHECK_MSG(strcmp(buf, want) == 0, "ts_fmt(%lld) = \"%s\", expected \"%s\"", (long long)n, buf, want);
}

static void test_formatter(void) {
  check_fmt(640, TS_BYTES, "640   B  ");
  check_fmt(16768, TS_BYTES, "16.4 KiB");
  check_fmt(1800, TS_COUNT, "1.8 K  ");
  check_fmt(40, TS_COUNT, "40      ");
  check_fmt(0, TS_COUNT, "0      ");
  check_fmt(0, TS_BYTES, "0      ");
  check_fmt(1, TS_BYTES, "");
  check_fmt(1, TS_COUNT, "1      ");
  check_fmt(-8283750, TS_BYTES, "-7.9 MiB");
  check_fmt(1023, TS_BYTES, "1023   B  ");
  check_fmt(1024, TS_BYTES, "1.0 KiB");
  check_fmt(999, TS_COUNT, "999      ");
  check_fmt(2048, TS_BINCOUNT, "2.0 Ki ");
  check_fmt(5 * MiB, TS_BINCOUNT, "5.0 Mi ");
  check_fmt(3 * KiB * MiB, TS_BYTES, "3.0 GiB");
  check_fmt(5 * KiB * KiB * MiB, TS_BYTES, "5120.0 GiB");
  check_fmt(2500000, TS_COUNT, "2.5 M  ");
  char line[TS_LINE_MAX];
  ts_header(line);
  CHECK(strcmp(line, "heap stats:     peak       total     current       block      total#   ") == 0);
}

/* ---------------------------------------------------------------------------------------
   3. The workload and its exact figures
--------------------------------------------------------------------------------------- */
static void* blocks_a[1700];   /* 54400 bytes: fit in the first page beside the segment header */
static void* blocks_b[131];
static int64_t huge_block;      /* bytes one 5 MiB huge block adds to malloc_huge */
static int64_t requested;       /* bytes requested by the workload */

static void* alloc(size_t block) {
  const size_t req = block - build.pad;
  requested += (int64_t)req;
  void* p = mi_malloc(req);
  CHECK(p != NULL);
  return p;
}

static void workload(void) {
  for (int i = 0; i < 1700; i++) blocks_a[i] = alloc(32);
  for (int i = 0; i < 131; i++) blocks_b[i] = alloc(128);
  void* c = alloc(640); (void)c;
  void* d[10];
  for (int i = 0; i < 10; i++) d[i] = alloc(4096);
  for (int i = 0; i < 10; i++) mi_free(d[i]);
  mi_collect(true);            /* the empty 4 KiB page goes back to its segment */
  void* e = alloc(96 * KiB); (void)e;
  void* f = alloc(1 * MiB); (void)f;
  mi_stats_t_decl(h0);
  mi_stats_get(&h0);
  void* g1 = mi_malloc(5 * MiB);
  CHECK(g1 != NULL);
  mi_stats_t_decl(h1);
  mi_stats_get(&h1);
  huge_block = h1.malloc_huge.current - h0.malloc_huge.current;
  if (!build.debug) CHECK_EQ(huge_block, (int64_t)mi_usable_size(g1));   /* the whole block is usable */
  else CHECK_EQ(mi_usable_size(g1), 5 * MiB);
  void* g2 = mi_malloc(5 * MiB);
  CHECK(g2 != NULL);
  requested += 10 * MiB;
  for (int i = 0; i < 1000; i++) mi_free(blocks_a[i]);
  mi_free(g2);
}

static void check_workload(void) {
  const mi_stats_t* s = &T1.s;
  const int64_t page = sysconf(_SC_PAGESIZE);
  /* a huge block's segment: the 5 MiB and a header of less than a page, in whole OS pages */
#ifdef MI_TEST_SECURE
  const int64_t huge_segment = 5 * MiB + 3 * page;   /* and its guard page, and the header's */
  CHECK_MSG(huge_block >= 5 * MiB && huge_block < huge_segment, "huge block %lld bytes", (long long)huge_block);
#else
  const int64_t huge_segment = 5 * MiB + page;
  CHECK_MSG(huge_block > 5 * MiB && huge_block < huge_segment, "huge block %lld bytes", (long long)huge_block);
#endif

  CHECK_EQ(s->segments.peak, 4);  CHECK_EQ(s->segments.total, 4);  CHECK_EQ(s->segments.current, 3);
#ifdef MI_TEST_SECURE
  /* the header's guard page leaves 44 KiB in a small segment's first page: the 1700 blocks of
     32 B take a second page */
  CHECK_EQ(s->pages.peak, 8);     CHECK_EQ(s->pages.total, 9);     CHECK_EQ(s->pages.current, 7);
#else
  CHECK_EQ(s->pages.peak, 7);     CHECK_EQ(s->pages.total, 8);     CHECK_EQ(s->pages.current, 6);
#endif
  CHECK_EQ(s->segments_abandoned.total, 0); CHECK_EQ(s->segments_abandoned.current, 0);
  CHECK_EQ(s->pages_abandoned.total, 0);    CHECK_EQ(s->pages_abandoned.current, 0);
  CHECK_EQ(s->segments_cache.current, 0);
  CHECK_EQ(s->threads.peak, 1);   CHECK_EQ(s->threads.total, 1);   CHECK_EQ(s->threads.current, 1);
  CHECK_EQ(s->mmap_calls.total, 4);
  CHECK_EQ(s->pages_retire.total, 2);
  CHECK_EQ(s->reset.total, 0);    CHECK_EQ(s->reset_calls.total, 0);
  CHECK_EQ(s->purged.total, 0);   CHECK_EQ(s->purge_calls.total, 0);
  CHECK_EQ(s->commit_calls.total, 0);
  CHECK_EQ(s->arena_count.total, 0);
  CHECK_EQ(s->malloc_guarded_count.total, 0);
  CHECK_EQ(s->reserved.current, 2 * 4 * MiB + huge_segment);
  CHECK_EQ(s->reserved.peak, 2 * 4 * MiB + 2 * huge_segment);
  CHECK_EQ(s->reserved.total, 2 * 4 * MiB + 2 * huge_segment);
  CHECK_EQ(s->committed.current, s->reserved.current);
  CHECK_EQ(s->committed.peak, s->reserved.peak);
  CHECK_EQ(s->malloc_huge.current, huge_block);
  CHECK_EQ(s->malloc_huge.total, 2 * huge_block);
  CHECK_EQ(s->malloc_huge.peak, 2 * huge_block);
  CHECK_EQ(s->malloc_huge_count.total, 2);
  CHECK_GE(s->pages_extended.total, 6);
  CHECK_GE(s->page_searches_count.total, 6);

  const int64_t live = 700 * 32 + 131 * 128 + 640 + 96 * KiB + MiB;
  CHECK_GE(s->page_committed.current, live + huge_block);
  CHECK_GE(s->page_committed.peak, s->page_committed.current);
  if (build.stat_level >= 2) {
    CHECK_EQ(s->malloc_normal.current, live);
    CHECK_EQ(s->malloc_normal.total, 1700 * 32 + 131 * 128 + 640 + 10 * 4096 + 96 * KiB + MiB);
    CHECK_EQ(s->malloc_normal.peak, 1700 * 32 + 131 * 128 + 640 + 96 * KiB + MiB);
    CHECK_EQ(s->malloc_normal_count.total, 1700 + 131 + 1 + 10 + 1 + 1);
    /* since the reset; figures of blocks freed before it must not count (see stats-pending) */
    CHECK_EQ(s->malloc_requested.total - T0.s.malloc_requested.total, requested);
    const ts_bin_t* b = T1.bins;
    CHECK_EQ(b[3].total, 1700);  CHECK_EQ(b[3].current, 700);  CHECK_EQ(b[3].peak, 1700);
    CHECK_EQ(b[9].total, 131);   CHECK_EQ(b[9].current, 131);
    CHECK_EQ(b[27].total, 1);    CHECK_EQ(b[27].current, 1);
    CHECK_EQ(b[49].total, 10);   CHECK_EQ(b[49].current, 0);   CHECK_EQ(b[49].peak, 10);
    CHECK_EQ(b[ts_bin(96 * KiB)].current, 1);
    CHECK_EQ(b[ts_bin(MiB)].current, 1);
    CHECK_EQ(ts_bin(32), 3); CHECK_EQ(ts_bin(128), 9); CHECK_EQ(ts_bin(640), 27); CHECK_EQ(ts_bin(4096), 49);
    /* exactly the workload's bins have rows */
    int rows = 0;
    for (int i = 0; i < T1.cap.nlines; i++) if (strncmp(T1.cap.lines[i], "   bin ", 7) == 0) rows++;
    CHECK_EQ(rows, 6);
  }
  else {
    CHECK_EQ(s->malloc_normal.total, 0);
    CHECK_EQ(s->malloc_normal_count.total, 0);
    CHECK_EQ(ts_find_line(&T1.cap, 0, "   bin "), -1);
    CHECK_EQ(ts_find_line(&T1.cap, 0, "    binned:"), -1);
    CHECK_EQ(ts_find_line(&T1.cap, 0, "malloc req:"), -1);
  }

  /* rows written by hand from the layout's description */
  check_literal(&T1, "  segments:", "  segments:     4           4           3      ");
#ifdef MI_TEST_SECURE
  check_literal(&T1, "     pages:", "     pages:     8           9           7      ");   /* see check_workload */
#else
  check_literal(&T1, "     pages:", "     pages:     7           8           6      ");
#endif
  check_literal(&T1, "     mmaps:", "     mmaps:     4      ");
  check_literal(&T1, "   -retire:", "   -retire:     2      ");
  check_literal(&T1, "   threads:", "   threads:     1           1           1      ");
  check_literal(&T1, "     reset:", "     reset:     0      ");
  check_literal(&T1, "   -cached:", "   -cached:     0           0           0      ");
  if (page == 4096) {
    check_literal(&T1, "  reserved:", "  reserved:    18.0 MiB    18.0 MiB    13.0 MiB                          ");
  }
  if (build.stat_level >= 2) {
    check_literal(&T1, "   bin   3:", "   bin   3:" "    53.3 KiB" "    53.3 KiB" "    21.9 KiB" "    32   B  " "     1.7 K  " "  not all freed");
    check_literal(&T1, "   bin   9:", "   bin   9:" "    16.4 KiB" "    16.4 KiB" "    16.4 KiB" "   128   B  " "   131      " "  not all freed");
    check_literal(&T1, "   bin  27:", "   bin  27:" "   640   B  " "   640   B  " "   640   B  " "   640   B  " "     1      " "  not all freed");
    check_literal(&T1, "   bin  49:", "   bin  49:" "    40.1 KiB" "    40.1 KiB" "     0      " "     4.0 KiB" "    10      " "  ok");
    check_literal(&T1, "      huge:", "      huge:" "    10.0 MiB" "    10.0 MiB" "     5.0 MiB" "                        " "  not all freed");
    /* after the bin rows: an empty line and the header again */
    const int i = ts_find_line(&T1.cap, 0, "    binned:");
    CHECK(i >= 2 && T1.cap.lines[i - 2][0] == 0 && strcmp(T1.cap.lines[i - 1], T1.cap.lines[0]) == 0);
  }
}

/* ---------------------------------------------------------------------------------------
   4. mi_stats_get
--------------------------------------------------------------------------------------- */
static mi_stats_t probe, copy;

static void test_get_api(void) {
  CHECK(!mi_stats_get(NULL));
  /* refused structs stay untouched */
  memset(&probe, 0x5A, sizeof(probe));
  probe.size = sizeof(mi_stats_t) - 8;
  probe.version = MI_STAT_VERSION;
  copy = probe;
  CHECK(!mi_stats_get(&probe));
  CHECK(memcmp(&probe, &copy, sizeof(probe)) == 0);
  probe.size = sizeof(mi_stats_t) + 8;
  copy = probe;
  CHECK(!mi_stats_get(&probe));
  CHECK(memcmp(&probe, &copy, sizeof(probe)) == 0);
  probe.size = sizeof(mi_stats_t);
  probe.version = MI_STAT_VERSION + 1;
  copy = probe;
  CHECK(!mi_stats_get(&probe));
  CHECK(memcmp(&probe, &copy, sizeof(probe)) == 0);
  probe.version = 0;
  CHECK(!mi_stats_get(&probe));
  /* the declaration macro: zeroed, size and version set */
  {
    mi_stats_t_decl(d);
    CHECK_EQ(d.size, sizeof(mi_stats_t));
    CHECK_EQ(d.version, MI_STAT_VERSION);
    CHECK_EQ(d.pages.total, 0);
    CHECK_EQ(d.page_bins[MI_BIN_HUGE].current, 0);
    CHECK(mi_stats_get(&d));
    CHECK_EQ(d.size, sizeof(mi_stats_t));
    CHECK_EQ(d.version, MI_STAT_VERSION);
    CHECK(d.threads.current >= 1);
    /* reserved slots and the v3-only counters stay zero */
    for (int i = 0; i < 4; i++) {
      CHECK_EQ(d._stat_reserved[i].total, 0); CHECK_EQ(d._stat_reserved[i].current, 0);
      CHECK_EQ(d._stat_counter_reserved[i].total, 0);
    }
    CHECK_EQ(d.pages_reclaim_on_alloc.total, 0);
    CHECK_EQ(d.pages_reclaim_on_free.total, 0);
    CHECK_EQ(d.pages_reabandon_full.total, 0);
    CHECK_EQ(d.pages_unabandon_busy_wait.total, 0);
    CHECK_EQ(d._segments_reserved.current, 0);
    CHECK_EQ(d.malloc_bins[0].total, 0);
  }
  /* mi_stats_get does not merge the calling thread: slow-path counters of this thread only
     appear after mi_stats_merge */
  {
    mi_stats_merge();
    mi_stats_t_decl(a);
    mi_stats_get(&a);
    static void* tmp[600];
    for (int i = 0; i < 600; i++) tmp[i] = mi_malloc(200);     /* a fresh 208-byte page, extended several times */
    mi_stats_t_decl(b);
    mi_stats_get(&b);
    CHECK_EQ(b.pages_extended.total, a.pages_extended.total);
    CHECK_EQ(b.page_searches_count.total, a.page_searches_count.total);
    CHECK_EQ(b.malloc_normal_count.total, a.malloc_normal_count.total);
    mi_stats_merge();
    mi_stats_t_decl(c);
    mi_stats_get(&c);
    CHECK_GE(c.pages_extended.total, a.pages_extended.total + 2);
    CHECK_GE(c.page_searches_count.total, a.page_searches_count.total + 2);
    if (build.stat_level >= 2) {
      CHECK_EQ(c.malloc_normal_count.total, a.malloc_normal_count.total + 600);
      CHECK_EQ(c.malloc_normal.current, a.malloc_normal.current + 600 * (int64_t)ts_bin_size(ts_bin(200 + build.pad)));
    }
    for (int i = 0; i < 600; i++) mi_free(tmp[i]);
    mi_collect(true);
  }
}

/* malloc_bins/page_bins of mi_stats_get: our bins folded into mimalloc v2's numbering. */
static void check_bins(const snapshot_t* t) {
  const mi_stats_t* s = &t->s;
  /* the JSON names each internal bin's block size: our classes (types.h) */
  for (int bin = 1; bin < TS_BINS_MAX; bin++) {
    if (!t->bins[bin].present) continue;
    if (bin < TS_BIN_HUGE_INTERNAL) CHECK_MSG(t->bins[bin].block_size == (int64_t)ts_bin_size((size_t)bin), "bin %d block_size %lld, expected %zu", bin, (long long)t->bins[bin].block_size, ts_bin_size((size_t)bin));
    CHECK_MSG(t->bins[bin].page_size >= t->bins[bin].block_size, "bin %d page_size %lld < block_size %lld", bin, (long long)t->bins[bin].page_size, (long long)t->bins[bin].block_size);
  }
  mi_stat_count_t fold_m[MI_BIN_HUGE + 1], fold_p[MI_BIN_HUGE + 1];
  memset(fold_m, 0, sizeof(fold_m));
  memset(fold_p, 0, sizeof(fold_p));
  int64_t blocks = 0, bytes = 0, totals = 0, pages = 0;
  for (int bin = 1; bin < TS_BINS_MAX; bin++) {
    if (!t->bins[bin].present) continue;
    const size_t pb = ts_public_bin((size_t)t->bins[bin].block_size);
    CHECK(pb <= MI_BIN_HUGE);
    if (pb > MI_BIN_HUGE) continue;
    fold_m[pb].total += t->bins[bin].total;   fold_m[pb].current += t->bins[bin].current;   fold_m[pb].peak += t->bins[bin].peak;
    fold_p[pb].total += t->page_bins[bin].total; fold_p[pb].current += t->page_bins[bin].current; fold_p[pb].peak += t->page_bins[bin].peak;
    blocks += t->bins[bin].current;
    totals += t->bins[bin].total;
    bytes += t->bins[bin].current * t->bins[bin].block_size;
    pages += t->page_bins[bin].current;
  }
  int64_t pub_blocks = 0, pub_pages = 0;
  /* page_bins[MI_BIN_HUGE] (huge pages) is checked by stats-pending */
  pub_pages += fold_p[MI_BIN_HUGE].current;
  fold_p[MI_BIN_HUGE] = s->page_bins[MI_BIN_HUGE];
  for (size_t i = 0; i <= MI_BIN_HUGE; i++) {
    CHECK_MSG(s->malloc_bins[i].total == fold_m[i].total && s->malloc_bins[i].current == fold_m[i].current,
              "malloc_bins[%zu] = {total %lld, current %lld}, the folded internal bins give {%lld, %lld}", i,
              (long long)s->malloc_bins[i].total, (long long)s->malloc_bins[i].current, (long long)fold_m[i].total, (long long)fold_m[i].current);
    CHECK_MSG(s->page_bins[i].total == fold_p[i].total && s->page_bins[i].current == fold_p[i].current,
              "page_bins[%zu] = {total %lld, current %lld}, the folded internal bins give {%lld, %lld}", i,
              (long long)s->page_bins[i].total, (long long)s->page_bins[i].current, (long long)fold_p[i].total, (long long)fold_p[i].current);
    pub_blocks += s->malloc_bins[i].current;
    pub_pages += s->page_bins[i].current;
  }
  if (build.stat_level >= 2) {
    CHECK_EQ(bytes, s->malloc_normal.current);        /* internal bins add up to binned */
    CHECK_EQ(totals, s->malloc_normal_count.total);
    CHECK_EQ(pub_blocks, blocks);
    CHECK_EQ(pages, s->pages.current);                /* every page is in a bin (huge ones too) */
    CHECK_MSG(pub_pages - s->page_bins[MI_BIN_HUGE].current == s->pages.current, "mi_stats_get page_bins (with the huge pages of the JSON) hold %lld pages, pages.current = %lld",
              (long long)(pub_pages - s->page_bins[MI_BIN_HUGE].current), (long long)s->pages.current);
    CHECK_EQ(s->malloc_bins[ts_public_bin(32)].current, 700);
  }
  else {
    CHECK_EQ(pub_blocks, 0);
    CHECK_EQ(pub_pages, 0);
    CHECK_EQ(blocks, 0);
  }
}

/* ---------------------------------------------------------------------------------------
   5. A thread's own figures, and its abandoned blocks
--------------------------------------------------------------------------------------- */
static void* thread_blocks[5];
static ts_capture_t thread_cap1, thread_cap2;

static void check_labels(const ts_capture_t* c, const char* what) {
  int at = 0;
  for (int k = 0; ts_common_labels[k] != NULL; k++) {
    const int i = ts_find_line(c, at, ts_common_labels[k]);
    CHECK_MSG(i >= at, "%s: row \"%s\" missing or out of order", what, ts_common_labels[k]);
    if (i >= 0) at = i + 1;
  }
  CHECK_MSG(at == c->nlines, "%s: %d lines after the process row", what, c->nlines - at);
  CHECK_MSG(c->bad_calls == 0, "%s: output calls that were not one line: \"%s\"", what, c->first_bad);
  const int neg = ts_text_negative_line(c);
  CHECK_MSG(neg < 0, "%s: negative figure: \"%s\"", what, neg < 0 ? "" : c->lines[neg]);
}

static void* thread_main(void* arg) {
  (void)arg;
  for (int i = 0; i < 5; i++) thread_blocks[i] = mi_malloc(640 - build.pad);
  mi_free(thread_blocks[0]);
  mi_free(thread_blocks[1]);
  ts_capture_reset(&thread_cap1);
  mi_thread_stats_print_out(&ts_capture_out, &thread_cap1);
  ts_capture_split(&thread_cap1);
  check_labels(&thread_cap1, "thread print");
  CHECK_EQ(ts_find_line(&thread_cap1, 0, "   bin "), (build.stat_level >= 2 ? 1 : -1));
  if (build.stat_level >= 2) {
    /* the thread's own blocks, not yet merged */
    check_literal_in(&thread_cap1, "   bin  27:", "   bin  27:" "     3.1 KiB" "     3.1 KiB" "     1.8 KiB" "   640   B  " "     5      " "  not all freed");
    CHECK_EQ(thread_cap1.lines[2][0], 0);
    const int i = ts_find_line(&thread_cap1, 0, "    binned:");
    CHECK(i == 4);
    if (i == 4) {
      CHECK_MSG(strcmp(thread_cap1.lines[4], "    binned:" "     3.1 KiB" "     3.1 KiB" "     1.8 KiB" "                        " "  not all freed") == 0, "\"%s\"", thread_cap1.lines[4]);
      CHECK_MSG(strcmp(thread_cap1.lines[5], "      huge:" "     0      " "     0      " "     0      " "                        " "  ok") == 0, "\"%s\"", thread_cap1.lines[5]);
      CHECK_MSG(strcmp(thread_cap1.lines[6], "     total:" "     3.1 KiB" "     3.1 KiB" "     1.8 KiB" "                        " "  ") == 0, "\"%s\"", thread_cap1.lines[6]);
      char req[TS_LINE_MAX];
      snprintf(req, sizeof(req), "%10s:%12s", "malloc req", "");
      ts_cell(req, 5 * (int64_t)(640 - build.pad), TS_BYTES);
      CHECK_MSG(strcmp(thread_cap1.lines[7], req) == 0, "\"%s\" expected \"%s\"", thread_cap1.lines[7], req);
    }
  }
  const int ext = ts_find_line(&thread_cap1, 0, " -extended:");
  CHECK(ext >= 0 && strcmp(thread_cap1.lines[ext], " -extended:     0      ") != 0);   /* the thread extended a page */
  /* after merging, the thread's counters start again from zero */
  mi_stats_merge();
  ts_capture_reset(&thread_cap2);
  mi_thread_stats_print_out(&ts_capture_out, &thread_cap2);
  ts_capture_split(&thread_cap2);
  check_labels(&thread_cap2, "thread print after merge");
  const char* zero_counters[] = { " -extended:", "   -retire:", "     mmaps:", "   guarded:", NULL };
  for (int k = 0; zero_counters[k] != NULL; k++) {
    char want[TS_LINE_MAX];
    snprintf(want, sizeof(want), "%s%12s", zero_counters[k], "0      ");
    const int i = ts_find_line(&thread_cap2, 0, zero_counters[k]);
    CHECK_MSG(i >= 0 && strcmp(thread_cap2.lines[i], want) == 0, "after merge: \"%s\"", i >= 0 ? thread_cap2.lines[i] : "(missing)");
  }
  return NULL;   /* exits with blocks 2..4 live: their page and segment are abandoned */
}

static void* thread_nop(void* arg) { return arg; }

/* A thread that never allocated has no figures of its own: its print is the all-zero text. */
static ts_capture_t idle_cap;
static char idle_expected[TS_LINES_MAX][TS_LINE_MAX];
static void* thread_idle(void* arg) {
  (void)arg;
  mi_stats_merge();
  ts_capture_reset(&idle_cap);
  mi_thread_stats_print_out(&ts_capture_out, &idle_cap);
  ts_capture_split(&idle_cap);
  static mi_stats_t zero;
  const int n = ts_expected_lines(idle_expected, &zero, NULL, build.stat_level);
  CHECK_EQ(idle_cap.nlines, n + 2);
  CHECK(idle_cap.bad_calls == 0);
  for (int i = 0; i < n && i < idle_cap.nlines; i++) {
    CHECK_MSG(strcmp(idle_cap.lines[i], idle_expected[i]) == 0, "idle thread line %d\n  got      \"%s\"\n  expected \"%s\"", i + 1, idle_cap.lines[i], idle_expected[i]);
  }
  return NULL;
}

static void test_thread(void) {
  /* the C library allocates for its first thread (and keeps it for the next ones) */
  pthread_t w;
  CHECK_EQ(pthread_create(&w, NULL, &thread_nop, NULL), 0);
  CHECK_EQ(pthread_join(w, NULL), 0);
  CHECK_EQ(pthread_create(&w, NULL, &thread_idle, NULL), 0);
  CHECK_EQ(pthread_join(w, NULL), 0);
  mi_collect(true);
  mi_stats_merge();
  mi_stats_t_decl(before);
  mi_stats_get(&before);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &thread_main, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  mi_stats_merge();
  mi_stats_t_decl(after);
  mi_stats_get(&after);
  CHECK_EQ(after.threads.current, before.threads.current);
  CHECK_EQ(after.threads.total, before.threads.total + 1);
  CHECK_EQ(after.threads.peak, 2);
  /* the thread's page took a slot of the small segment this thread uses too (segments are
     shared): no new segment, and not one of only ended threads' pages */
  CHECK_EQ(after.pages_abandoned.current, before.pages_abandoned.current + 1);
  CHECK_EQ(after.segments_abandoned.current, before.segments_abandoned.current);
  CHECK_EQ(after.pages.current, before.pages.current + 1);
  CHECK_EQ(after.segments.current, before.segments.current);
  if (build.stat_level >= 2) {
    CHECK_EQ(after.malloc_normal.current, before.malloc_normal.current + 3 * 640);
    CHECK_EQ(after.malloc_normal_count.total, before.malloc_normal_count.total + 5);
    CHECK_EQ(after.malloc_bins[ts_public_bin(640)].current, before.malloc_bins[ts_public_bin(640)].current + 3);
  }
  char why[256];
  CHECK_MSG(ts_check_nonneg(&after, true, why, sizeof(why)) == NULL, "%s", why);
  /* the main thread frees them and collects: reclaimed, emptied, released */
  for (int i = 2; i < 5; i++) mi_free(thread_blocks[i]);
  mi_collect(true);
  mi_stats_merge();
  mi_stats_t_decl(end);
  mi_stats_get(&end);
  CHECK_EQ(end.pages_abandoned.current, before.pages_abandoned.current);
  CHECK_EQ(end.segments_abandoned.current, before.segments_abandoned.current);
  CHECK_EQ(end.pages.current, before.pages.current);
  CHECK_EQ(end.segments.current, before.segments.current);
  CHECK_EQ(end.malloc_normal.current, before.malloc_normal.current);
  CHECK_EQ(end.segments_cache.current, 0);
  CHECK_MSG(ts_check_nonneg(&end, true, why, sizeof(why)) == NULL, "%s", why);
  take(&TB);
  check_text(&TB, "after the thread");
}

int main(void) {
  build = ts_detect_build();
  test_formatter();

  /* 2. empty figures (their text is checked after the workload: the checks allocate) */
  mi_collect(true);
  mi_stats_reset();
  take(&T0);
  CHECK_EQ(T0.s.segments.current, 0);
  CHECK_EQ(T0.s.pages.current, 0);
  CHECK_EQ(T0.s.reserved.current, 0);
  CHECK_EQ(T0.s.mmap_calls.total, 0);
  CHECK_EQ(T0.s.threads.current, 1);
  CHECK_EQ(ts_find_line(&T0.cap, 0, "   bin "), -1);
  char why[256];
  CHECK_MSG(ts_check_nonneg(&T0.s, true, why, sizeof(why)) == NULL, "%s", why);

  /* 3. the workload */
  workload();
  take(&T1);
  check_text(&T0, "empty");
  check_text(&T1, "workload");
  check_workload();
  CHECK_MSG(ts_check_nonneg(&T1.s, true, why, sizeof(why)) == NULL, "%s", why);

  /* 4. mi_stats_get */
  check_bins(&T1);
  test_get_api();

  /* printing twice in a row gives the same figures (printing allocates nothing) */
  take(&TA);
  take(&TB);
  CHECK(memcmp(&TA.s, &TB.s, sizeof(mi_stats_t)) == 0);
  const int n = ts_expected_lines(expected, &TA.s, TA.bins, build.stat_level);
  for (int i = 0; i < n; i++) CHECK_MSG(strcmp(TA.cap.lines[i], TB.cap.lines[i]) == 0, "line %d differs between two prints", i + 1);

  /* 5. a thread */
  test_thread();

  return test_summary("stats-text", "%s build, statistics level %d", build.debug ? "debug" : "release", build.stat_level);
}
