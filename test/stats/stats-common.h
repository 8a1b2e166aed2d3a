/* SPDX-License-Identifier: MIT */
/* stats-common.h -- helpers shared by the statistics tests (test/stats, label "stats").

   - ts_capture_t / ts_capture_out: an mi_output_fun that appends to a static buffer (never
     allocates, so capturing does not change the figures being printed) and records every call
     that was not exactly one complete line (the statistics text is written one complete line
     per call: docs/statistics.md);
   - ts_fmt: the number formatting of mimalloc's layout, written from its description (now in
     docs/statistics.md, "mimalloc's layout"), not from our printer's code
     (bytes / decimal counts / binary counts, truncated tenths, "1 byte" = empty cell);
   - ts_row_*: the row kinds of that layout, and ts_expected_lines: every line of the statistics
     text up to "numa nodes" built from an mi_stats_t (mi_stats_get) plus the per-bin figures;
   - ts_bin / ts_bin_size: our size classes as documented in src/internal/types.h, and
     ts_public_bin: mimalloc v2's bin numbering that mi_stats_get folds them into;
   - ts_json_bins: reads the malloc_bins/page_bins arrays out of mi_stats_get_json's text;
   - ts_check_nonneg: no figure of an mi_stats_t is negative.

   Nothing here allocates, so the helpers can run between a workload and the snapshot of it. */
#ifndef MI_STATS_COMMON_H
#define MI_STATS_COMMON_H

#include <mimalloc.h>
#include <mimalloc-stats.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "testing.h"

#define TS_LINE_MAX   320
#define TS_LINES_MAX  400
#define TS_BINS_MAX   256

/* ---------------------------------------------------------------------------------------
   Output capture
--------------------------------------------------------------------------------------- */
typedef struct ts_capture_s {
  char   text[1 << 16];
  size_t len;
  int    calls;
  int    bad_calls;          /* calls whose message was not exactly one line ending in "\n" */
  char   first_bad[TS_LINE_MAX];
  bool   overflow;
  char   lines[TS_LINES_MAX][TS_LINE_MAX];
  int    nlines;
} ts_capture_t;

static TEST_UNUSED_ void ts_capture_reset(ts_capture_t* c) {
  c->len = 0; c->text[0] = 0; c->calls = 0; c->bad_calls = 0; c->first_bad[0] = 0;
  c->overflow = false; c->nlines = 0;
}

static TEST_UNUSED_ void ts_capture_out(const char* msg, void* arg) {
  ts_capture_t* c = (ts_capture_t*)arg;
  const size_t n = strlen(msg);
  c->calls++;
  const char* nl = (const char*)memchr(msg, '\n', n);
  if (n == 0 || nl != msg + n - 1) {
    if (c->bad_calls++ == 0) snprintf(c->first_bad, sizeof(c->first_bad), "%s", msg);
  }
  if (c->len + n + 1 > sizeof(c->text)) { c->overflow = true; return; }
  memcpy(c->text + c->len, msg, n);
  c->len += n;
  c->text[c->len] = 0;
}

/* Split the captured text into lines (without their "\n"). */
static TEST_UNUSED_ void ts_capture_split(ts_capture_t* c) {
  c->nlines = 0;
  const char* p = c->text;
  while (*p != 0 && c->nlines < TS_LINES_MAX) {
    const char* e = strchr(p, '\n');
    size_t n = (e == NULL ? strlen(p) : (size_t)(e - p));
    if (n >= TS_LINE_MAX) n = TS_LINE_MAX - 1;
    memcpy(c->lines[c->nlines], p, n);
    c->lines[c->nlines][n] = 0;
    c->nlines++;
    if (e == NULL) break;
    p = e + 1;
  }
}

/* The index of the first line starting with `prefix` at or after `from`, or -1. */
static TEST_UNUSED_ int ts_find_line(const ts_capture_t* c, int from, const char* prefix) {
  for (int i = from; i < c->nlines; i++) {
    if (strncmp(c->lines[i], prefix, strlen(prefix)) == 0) return i;
  }
  return -1;
}

/* No printed figure is negative: after the label's ':' no '-' appears on any line. */
static TEST_UNUSED_ int ts_text_negative_line(const ts_capture_t* c) {
  for (int i = 0; i < c->nlines; i++) {
    const char* colon = strchr(c->lines[i], ':');
    if (colon != NULL && strchr(colon, '-') != NULL) return i;
  }
  return -1;
}

/* ---------------------------------------------------------------------------------------
   Number formatting (docs/statistics.md, "mimalloc's layout", "Numbers")
--------------------------------------------------------------------------------------- */
typedef enum ts_unit_e { TS_BYTES, TS_COUNT, TS_BINCOUNT } ts_unit_t;

static TEST_UNUSED_ void ts_fmt(char* buf, size_t size, int64_t n, ts_unit_t u) {
  const int64_t base = (u == TS_COUNT ? 1000 : 1024);
  const int64_t pos = (n < 0 ? -n : n);
  if (pos < base) {
    if (u == TS_BYTES && n == 1) { buf[0] = 0; return; }   /* "1 byte" is an empty cell */
    const char* suffix = (n == 0 ? "" : (u == TS_BYTES ? "B" : " "));
    snprintf(buf, size, "%lld   %-3s", (long long)n, suffix);
    return;
  }
  int64_t d = base;
  const char* mag = "K";
  if (pos >= base * base * base) { d = base * base * base; mag = "G"; }
  else if (pos >= base * base)   { d = base * base; mag = "M"; }
  const int64_t tenths = n / (d / 10);
  const int64_t whole = tenths / 10;
  const int64_t frac = (tenths % 10 < 0 ? -(tenths % 10) : tenths % 10);
  char unit[8];
  snprintf(unit, sizeof(unit), "%s%s", mag, (u == TS_BYTES ? "iB" : u == TS_BINCOUNT ? "i" : ""));
  snprintf(buf, size, "%s%lld.%lld %-3s", (n < 0 && whole == 0 ? "-" : ""), (long long)whole, (long long)frac, unit);
}

/* A 12-column right-aligned cell appended to line. */
static TEST_UNUSED_ void ts_cell(char* line, int64_t n, ts_unit_t u) {
  char c[48];
  ts_fmt(c, sizeof(c), n, u);
  snprintf(line + strlen(line), TS_LINE_MAX - strlen(line), "%12s", c);
}

static TEST_UNUSED_ void ts_status(char* line, int64_t current, const char* note) {
  if (current == 0) strcat(line, "  ok");
  else { strcat(line, "  "); strcat(line, note); }
}

/* Amount row (unit >= 1). */
static TEST_UNUSED_ void ts_row_amount(char* line, const char* label, const mi_stat_count_t* st, int64_t unit, const char* note) {
  snprintf(line, TS_LINE_MAX, "%10s:", label);
  ts_cell(line, st->peak * unit, TS_BYTES);
  ts_cell(line, st->total * unit, TS_BYTES);
  ts_cell(line, st->current * unit, TS_BYTES);
  if (unit == 1) strcat(line, "                        ");   /* both cells blank */
  else {
    ts_cell(line, unit, TS_BYTES);
    ts_cell(line, st->total, TS_COUNT);
  }
  ts_status(line, st->current, note);
}

/* Binary-count row (unit -1). */
static TEST_UNUSED_ void ts_row_bincount(char* line, const char* label, const mi_stat_count_t* st, const char* note) {
  snprintf(line, TS_LINE_MAX, "%10s:", label);
  ts_cell(line, st->peak, TS_BINCOUNT);
  ts_cell(line, st->total, TS_BINCOUNT);
  ts_cell(line, st->current, TS_BINCOUNT);
  strcat(line, "                        ");
  ts_status(line, st->current, note);
}

static TEST_UNUSED_ void ts_row_count(char* line, const char* label, const mi_stat_count_t* st) {
  snprintf(line, TS_LINE_MAX, "%10s:", label);
  ts_cell(line, st->peak, TS_COUNT);
  ts_cell(line, st->total, TS_COUNT);
  ts_cell(line, st->current, TS_COUNT);
}

static TEST_UNUSED_ void ts_row_counter(char* line, const char* label, int64_t n, bool bytes) {
  snprintf(line, TS_LINE_MAX, "%10s:", label);
  ts_cell(line, n, bytes ? TS_BYTES : TS_COUNT);
}

static TEST_UNUSED_ void ts_header(char* line) {
  snprintf(line, TS_LINE_MAX, "%10s: %11s %11s %11s %11s %11s", "heap stats", "peak   ", "total   ", "current   ", "block   ", "total#   ");
}

/* ---------------------------------------------------------------------------------------
   Size classes
--------------------------------------------------------------------------------------- */
/* Our bins (src/internal/types.h): bin 1 = 8 bytes, bins 2..9 = 16..128 in steps of 16,
   bins 10..121 eight classes per power of two up to 2 MiB; 122 = huge. */
#define TS_BIN_HUGE_INTERNAL 122
#define TS_LARGE_OBJ_SIZE_MAX ((size_t)2 * 1024 * 1024)

static TEST_UNUSED_ int ts_bsr(size_t x) { return 63 - __builtin_clzll((unsigned long long)x); }

static TEST_UNUSED_ size_t ts_bin_size(size_t bin) {
  if (bin <= 1) return 8;
  if (bin < 10) return (bin - 1) * 16;
  if (bin >= TS_BIN_HUGE_INTERNAL) return TS_LARGE_OBJ_SIZE_MAX + 1;
  /* classes 9/8 .. 16/8 of each power of two from 128 bytes on */
  const size_t k = bin - 10;
  const size_t pow2 = (size_t)128 << (k / 8);
  return pow2 + (pow2 / 8) * (1 + k % 8);
}

static TEST_UNUSED_ size_t ts_bin(size_t size) {
  if (size > TS_LARGE_OBJ_SIZE_MAX) return TS_BIN_HUGE_INTERNAL;
  for (size_t bin = 1; bin < TS_BIN_HUGE_INTERNAL; bin++) {
    if (ts_bin_size(bin) >= size) return bin;
  }
  return TS_BIN_HUGE_INTERNAL;
}

/* mimalloc v2's numbering (MI_BIN_HUGE = 73): 1 word -> 1, 2..8 words -> the word count,
   then four classes per power of two; huge -> MI_BIN_HUGE. */
static TEST_UNUSED_ size_t ts_public_bin(size_t size) {
  if (size > TS_LARGE_OBJ_SIZE_MAX) return MI_BIN_HUGE;
  size_t wsize = (size + 7) / 8;
  if (wsize <= 1) return 1;
  if (wsize <= 8) return wsize;
  wsize--;
  const size_t b = (size_t)ts_bsr(wsize);
  return ((b << 2) + ((wsize >> (b - 2)) & 3)) - 3;
}

/* ---------------------------------------------------------------------------------------
   Per-bin figures out of mi_stats_get_json's text (malloc_bins / page_bins arrays)
--------------------------------------------------------------------------------------- */
typedef struct ts_bin_s {
  bool    present;
  int64_t total, peak, current;
  int64_t block_size, page_size;
} ts_bin_t;

static TEST_UNUSED_ bool ts_json_num(const char* from, const char* to, const char* key, int64_t* v) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\"", key);
  const size_t plen = strlen(pat);
  for (const char* p = from; p + plen <= to; p++) {
    if (memcmp(p, pat, plen) != 0) continue;
    p += plen;
    while (p < to && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    if (p >= to || *p != ':') return false;
    p++;
    char* end = NULL;
    *v = strtoll(p, &end, 10);
    return (end != p && end <= to);
  }
  return false;
}

/* Fills bins[bin] (indexed by the "bin" member, or the array position when absent); returns the
   number of entries or -1 when the array is missing or malformed. */
static TEST_UNUSED_ int ts_json_bins(const char* json, const char* key, ts_bin_t* bins, int max) {
  memset(bins, 0, sizeof(ts_bin_t) * (size_t)max);
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\"", key);
  const char* p = strstr(json, pat);
  if (p == NULL) return -1;
  p = strchr(p, '[');
  if (p == NULL) return -1;
  const char* end = strchr(p, ']');
  if (end == NULL) return -1;
  int n = 0;
  while ((p = strchr(p, '{')) != NULL && p < end) {
    const char* q = strchr(p, '}');
    if (q == NULL || q > end) return -1;
    int64_t bin = n;
    ts_json_num(p, q, "bin", &bin);
    if (bin < 0 || bin >= max) return -1;
    ts_bin_t* b = &bins[bin];
    if (!ts_json_num(p, q, "total", &b->total) || !ts_json_num(p, q, "peak", &b->peak) ||
        !ts_json_num(p, q, "current", &b->current) || !ts_json_num(p, q, "block_size", &b->block_size) ||
        !ts_json_num(p, q, "page_size", &b->page_size)) return -1;
    b->present = true;
    n++;
    p = q;
  }
  return n;
}

/* ---------------------------------------------------------------------------------------
   Expected text (docs/statistics.md, "mimalloc's layout", "Rows, in order": up to "numa nodes")
--------------------------------------------------------------------------------------- */
/* Fills lines[] with every expected line up to and including "numa nodes"; `bins` are the
   internal per-bin block counts (NULL or stat_level < 2: no bin rows). Returns the count. */
static TEST_UNUSED_ int ts_expected_lines(char lines[][TS_LINE_MAX], const mi_stats_t* s, const ts_bin_t* bins, int stat_level) {
  int n = 0;
  ts_header(lines[n++]);
  if (stat_level >= 2) {
    bool any = false;
    for (int bin = 1; bins != NULL && bin < TS_BIN_HUGE_INTERNAL; bin++) {
      if (!bins[bin].present || (bins[bin].total == 0 && bins[bin].current == 0)) continue;
      char label[16];
      snprintf(label, sizeof(label), "bin %3d", bin);
      mi_stat_count_t st = { bins[bin].total, bins[bin].peak, bins[bin].current };
      ts_row_amount(lines[n++], label, &st, (int64_t)ts_bin_size((size_t)bin), "not all freed");
      any = true;
    }
    if (any) {
      lines[n++][0] = 0;
      ts_header(lines[n++]);
    }
    if (s->malloc_normal_count.total == 0) ts_row_bincount(lines[n++], "binned", &s->malloc_normal, "not all freed");
    else ts_row_amount(lines[n++], "binned", &s->malloc_normal, 1, "not all freed");
    if (s->malloc_huge_count.total == 0) ts_row_bincount(lines[n++], "huge", &s->malloc_huge, "not all freed");
    else ts_row_amount(lines[n++], "huge", &s->malloc_huge, 1, "not all freed");
    mi_stat_count_t total = { s->malloc_normal.total + s->malloc_huge.total, s->malloc_normal.peak + s->malloc_huge.peak,
                              s->malloc_normal.current + s->malloc_huge.current };
    ts_row_amount(lines[n++], "total", &total, 1, "");
    snprintf(lines[n], TS_LINE_MAX, "%10s:%12s", "malloc req", "");
    ts_cell(lines[n++], s->malloc_requested.total, TS_BYTES);
    lines[n++][0] = 0;
  }
  ts_row_amount(lines[n++], "reserved", &s->reserved, 1, "");
  ts_row_amount(lines[n++], "committed", &s->committed, 1, "");
  ts_row_counter(lines[n++], "reset", s->reset.total, true);
  ts_row_counter(lines[n++], "purged", s->purged.total, true);
  ts_row_amount(lines[n++], "touched", &s->page_committed, 1, "");
  ts_row_count(lines[n++], "segments", &s->segments);
  ts_row_count(lines[n++], "-abandoned", &s->segments_abandoned);
  ts_row_count(lines[n++], "-cached", &s->segments_cache);
  ts_row_count(lines[n++], "pages", &s->pages);
  ts_row_count(lines[n++], "-abandoned", &s->pages_abandoned);
  ts_row_counter(lines[n++], "-extended", s->pages_extended.total, false);
  ts_row_counter(lines[n++], "-retire", s->pages_retire.total, false);
  ts_row_counter(lines[n++], "arenas", s->arena_count.total, false);
  ts_row_counter(lines[n++], "-rollback", s->arena_rollback_count.total, false);
  ts_row_counter(lines[n++], "mmaps", s->mmap_calls.total, false);
  ts_row_counter(lines[n++], "commits", s->commit_calls.total, false);
  ts_row_counter(lines[n++], "resets", s->reset_calls.total, false);
  ts_row_counter(lines[n++], "purges", s->purge_calls.total, false);
  ts_row_counter(lines[n++], "guarded", s->malloc_guarded_count.total, false);
  ts_row_count(lines[n++], "threads", &s->threads);
  const int64_t cnt = s->page_searches_count.total;
  const int64_t avg10 = (cnt == 0 ? 0 : (s->page_searches.total * 10) / cnt);
  snprintf(lines[n++], TS_LINE_MAX, "%10s: %5lld.%lld avg", "searches", (long long)(avg10 / 10), (long long)(avg10 % 10));
  snprintf(lines[n++], TS_LINE_MAX, "%10s: %5d", "numa nodes", 1);
  return n;
}

/* The rows every build prints, in order (from "reserved" to "process"), for structure checks. */
static const char* const ts_common_labels[] = {
  "  reserved:", " committed:", "     reset:", "    purged:", "   touched:", "  segments:", "-abandoned:",
  "   -cached:", "     pages:", "-abandoned:", " -extended:", "   -retire:", "    arenas:", " -rollback:",
  "     mmaps:", "   commits:", "    resets:", "    purges:", "   guarded:", "   threads:", "  searches:",
  "numa nodes:", "   elapsed:", "   process:", NULL
};

/* ---------------------------------------------------------------------------------------
   Regular expressions and figures
--------------------------------------------------------------------------------------- */
static TEST_UNUSED_ bool ts_match(const char* pattern, const char* text, regmatch_t* m, size_t nm) {
  regex_t re;
  if (regcomp(&re, pattern, REG_EXTENDED) != 0) return false;
  const bool ok = (regexec(&re, text, nm, m, 0) == 0);
  regfree(&re);
  return ok;
}

static TEST_UNUSED_ long long ts_match_num(const char* text, const regmatch_t* m) {
  char tmp[32];
  size_t n = (size_t)(m->rm_eo - m->rm_so);
  if (n >= sizeof(tmp)) n = sizeof(tmp) - 1;
  memcpy(tmp, text + m->rm_so, n);
  tmp[n] = 0;
  return strtoll(tmp, NULL, 10);
}

/* Returns the name of the first negative figure, or NULL. Also checks peak >= current and
   total >= current when `quiescent` (no thread is changing the figures). */
static TEST_UNUSED_ const char* ts_check_nonneg(const mi_stats_t* s, bool quiescent, char* why, size_t whysize) {
#define MI_STAT_COUNT(name) \
  if (s->name.total < 0 || s->name.peak < 0 || s->name.current < 0) { snprintf(why, whysize, "%s = {%lld,%lld,%lld}", #name, (long long)s->name.total, (long long)s->name.peak, (long long)s->name.current); return #name; } \
  if (quiescent && s->name.peak < s->name.current) { snprintf(why, whysize, "%s peak %lld < current %lld", #name, (long long)s->name.peak, (long long)s->name.current); return #name; } \
  if (quiescent && s->name.total < s->name.current) { snprintf(why, whysize, "%s total %lld < current %lld", #name, (long long)s->name.total, (long long)s->name.current); return #name; }
#define MI_STAT_COUNTER(name) \
  if (s->name.total < 0) { snprintf(why, whysize, "%s = %lld", #name, (long long)s->name.total); return #name; }
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE; i++) {
    const mi_stat_count_t* b = &s->malloc_bins[i];
    const mi_stat_count_t* p = &s->page_bins[i];
    if (b->total < 0 || b->peak < 0 || b->current < 0) { snprintf(why, whysize, "malloc_bins[%zu] = {%lld,%lld,%lld}", i, (long long)b->total, (long long)b->peak, (long long)b->current); return "malloc_bins"; }
    if (p->total < 0 || p->peak < 0 || p->current < 0) { snprintf(why, whysize, "page_bins[%zu] = {%lld,%lld,%lld}", i, (long long)p->total, (long long)p->peak, (long long)p->current); return "page_bins"; }
  }
  return NULL;
}

/* Build properties, detected at run time: padding (debug builds give byte-exact usable sizes)
   and the statistics level (2 when per-block figures are kept). The probe's memory is freed
   and collected, so a program starts from empty figures afterwards. */
typedef struct ts_build_s {
  bool   debug;        /* MI_DEBUG > 0: blocks carry a 24-byte padding record */
  size_t pad;
  int    stat_level;   /* 1 or 2 */
} ts_build_t;

static TEST_UNUSED_ ts_build_t ts_detect_build(void) {
  ts_build_t b;
  void* p = mi_malloc(2);      /* 2 bytes: a 1-byte "malloc req" would print as an empty cell */
  b.debug = (mi_usable_size(p) == 2);
  b.pad = (b.debug ? 24 : 0);
  mi_free(p);
  mi_stats_merge();
  mi_stats_t_decl(s);
  mi_stats_get(&s);
  b.stat_level = (s.malloc_normal_count.total > 0 ? 2 : 1);
  return b;
}

#endif
