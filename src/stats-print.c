/* SPDX-License-Identifier: MIT */
/* The statistics as text, in two layouts: a readable one (the default: a summary line, then
   sections with plain names, only rows that are not zero; docs/statistics.md) and mimalloc
   v2.4's (docs/statistics.md, "mimalloc's layout"), chosen with MIMALLOC_STATS_LAYOUT=mimalloc.
   Called with a snapshot of the figures (stats.c) and the process information of the same
   moment; the text writers go through _mi_fputs one line at a time and never allocate.
   Also the other ways out of the figures, which may allocate: the public printing functions,
   mi_stats_get, the JSON rendering and the process information. An observer (the top layer,
   docs/design.md "Layers"): stats.c only counts. */
#include "internal/observers.h"
#include "internal/v3.h"
#include "internal/limit.h"
#include "prim/prim.h"
#include <stdio.h>   /* only to recognise stdout/stderr in mi_stats_print */

mi_msecs_t _mi_process_elapsed(void);

/* ---------------------------------------------------------------------------------------
   Output one line at a time through the output function
--------------------------------------------------------------------------------------- */
typedef struct mi_line_s {
  char  buf[256];
  size_t len;
  mi_output_fun* out;
  void* arg;
} mi_line_t;

static void mi_line_add(mi_line_t* line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  line->len += (size_t)_mi_vsnprintf(line->buf + line->len, sizeof(line->buf) - line->len, fmt, args);
  va_end(args);
}

static void mi_line_end(mi_line_t* line) {
  mi_line_add(line, "\n");
  _mi_fputs(line->out, line->arg, NULL, line->buf);
  line->len = 0;
  line->buf[0] = 0;
}

/* ---------------------------------------------------------------------------------------
   mimalloc v2.4's layout (docs/statistics.md, "mimalloc's layout"). Trailing blanks of the
   fixed-width layout stay; the unit suffix of amounts below the base adds blanks too
   ("640   B  "), as in mimalloc's output.
--------------------------------------------------------------------------------------- */
/* One number: base 1024 for bytes (unit > 0) and binary counts (unit < 0), 1000 for decimal
   counts (unit == 0); truncated tenths above the base, e.g. "16.4 KiB", "1.8 K", "640   B". */
static void mi_format_amount(char* buf, size_t size, int64_t n, int64_t unit) {
  const bool bytes = (unit > 0);
  const int64_t base = (unit == 0 ? 1000 : 1024);
  const char* suffix = (n == 0 ? "" : (bytes ? "B" : " "));
  const int64_t pos = (n < 0 ? -n : n);
  if (bytes && n == 1) { buf[0] = 0; return; }   /* as mimalloc: "1 byte" is an empty cell */
  if (pos < base) {
    _mi_snprintf(buf, size, "%lld   %-3s", (long long)n, suffix);
    return;
  }
  int64_t divider = base;
  const char* magnitude = "K";
  if (pos >= base*base*base) { divider = base*base*base; magnitude = "G"; }
  else if (pos >= base*base) { divider = base*base; magnitude = "M"; }
  char unit_name[4];
  _mi_snprintf(unit_name, sizeof(unit_name), "%s%s", magnitude, (base == 1024 ? (bytes ? "iB" : "i") : ""));
  const int64_t tenths = n / (divider / 10);
  const int64_t whole = tenths / 10;
  const int64_t frac = (tenths % 10 < 0 ? -(tenths % 10) : tenths % 10);
  _mi_snprintf(buf, size, "%s%lld.%lld %-3s", (n < 0 && whole == 0 ? "-" : ""), (long long)whole, (long long)frac, unit_name);
}

static void mi_line_amount(mi_line_t* line, int64_t n, int64_t unit) {
  char buf[32];
  mi_format_amount(buf, sizeof(buf), n, unit);
  mi_line_add(line, "%12s", buf);
}

/* label, then peak/total/current in bytes (count * unit), the unit, the count, and a status */
static void mi_print_amount_row(mi_line_t* line, const char* label, const mi_stat_count_t* stat, int64_t unit, const char* note) {
  mi_line_add(line, "%10s:", label);
  const int64_t mult = (unit > 0 ? unit : 1);        /* bins count blocks of `unit` bytes */
  const int64_t format = (unit < 0 ? -1 : 1);        /* binary counts, or bytes */
  mi_line_amount(line, stat->peak * mult, format);
  mi_line_amount(line, stat->total * mult, format);
  mi_line_amount(line, stat->current * mult, format);
  if (unit > 1) {
    mi_line_amount(line, unit, 1);
    mi_line_amount(line, stat->total, 0);
  }
  else {
    mi_line_add(line, "%24s", "");
  }
  if (stat->current == 0) mi_line_add(line, "  ok");
  else mi_line_add(line, "  %s", note);
  mi_line_end(line);
}

static void mi_print_count_row(mi_line_t* line, const char* label, const mi_stat_count_t* stat) {
  mi_line_add(line, "%10s:", label);
  mi_line_amount(line, stat->peak, 0);
  mi_line_amount(line, stat->total, 0);
  mi_line_amount(line, stat->current, 0);
  mi_line_end(line);
}

static void mi_print_counter_row(mi_line_t* line, const char* label, const mi_stat_counter_t* stat, bool bytes) {
  mi_line_add(line, "%10s:", label);
  mi_line_amount(line, stat->total, (bytes ? 1 : 0));
  mi_line_end(line);
}

static void mi_print_header(mi_line_t* line) {
  mi_line_add(line, "%10s: %11s %11s %11s %11s %11s", "heap stats", "peak   ", "total   ", "current   ", "block   ", "total#   ");
  mi_line_end(line);
}

/* The two process lines that end mimalloc's layout; alone, mi_process_info_print_out */
static void mi_print_process_info(mi_line_t* line, const mi_process_info_t* info) {
  mi_line_add(line, "%10s: %5lld.%03lld s", "elapsed", (long long)(info->elapsed / 1000), (long long)(info->elapsed % 1000));
  mi_line_end(line);
  char peak_rss[32];
  mi_format_amount(peak_rss, sizeof(peak_rss), (int64_t)info->peak_rss, 1);
  mi_line_add(line, "%10s: user: %lld.%03lld s, system: %lld.%03lld s, faults: %zu, peak rss: %s", "process",
              (long long)(info->utime / 1000), (long long)(info->utime % 1000),
              (long long)(info->stime / 1000), (long long)(info->stime % 1000), info->page_faults, peak_rss);
  if (info->peak_commit > 0) {
    char peak_commit[32];
    mi_format_amount(peak_commit, sizeof(peak_commit), (int64_t)info->peak_commit, 1);
    mi_line_add(line, ", peak commit: %s", peak_commit);
  }
  mi_line_end(line);
}

void _mi_stats_print_process_info_text(const mi_process_info_t* info, mi_output_fun* out, void* arg) {
  mi_line_t line;
  line.len = 0;
  line.buf[0] = 0;
  line.out = out;
  line.arg = arg;
  mi_print_process_info(&line, info);
}

static void mi_print_limit(mi_line_t* line, bool mimalloc_layout);

static void mi_stats_print_mimalloc(const mi_stats_data_t* stats, const mi_process_info_t* info, mi_output_fun* out, void* arg) {
  mi_line_t line;
  line.len = 0;
  line.buf[0] = 0;
  line.out = out;
  line.arg = arg;
  mi_print_header(&line);
  if (MI_STAT > 1) {
    bool any = false;
    for (size_t bin = 1; bin < MI_BIN_HUGE_INTERNAL; bin++) {
      const mi_stat_count_t* stat = &stats->malloc_bins[bin];
      if (stat->total == 0 && stat->current == 0) continue;
      char label[16];
      _mi_snprintf(label, sizeof(label), "bin %3zu", bin);
      mi_print_amount_row(&line, label, stat, (int64_t)_mi_page_bin_size(bin), "not all freed");
      any = true;
    }
    if (any) {
      mi_line_end(&line);
      mi_print_header(&line);
    }
    mi_stat_count_t total;
    total.peak = stats->malloc_normal.peak + stats->malloc_huge.peak;
    total.total = stats->malloc_normal.total + stats->malloc_huge.total;
    total.current = stats->malloc_normal.current + stats->malloc_huge.current;
    /* binary counts when no such allocation was counted, as mimalloc prints them */
    mi_print_amount_row(&line, "binned", &stats->malloc_normal, (stats->malloc_normal_count.total == 0 ? -1 : 1), "not all freed");
    mi_print_amount_row(&line, "huge", &stats->malloc_huge, (stats->malloc_huge_count.total == 0 ? -1 : 1), "not all freed");
    mi_print_amount_row(&line, "total", &total, 1, "");
    mi_line_add(&line, "%10s:", "malloc req");
    mi_line_add(&line, "%12s", "");
    mi_line_amount(&line, stats->malloc_requested.total, 1);
    mi_line_end(&line);
    mi_line_end(&line);
  }
  mi_print_amount_row(&line, "reserved", &stats->reserved, 1, "");
  mi_print_amount_row(&line, "committed", &stats->committed, 1, "");
  mi_print_counter_row(&line, "reset", &stats->reset, true);
  mi_print_counter_row(&line, "purged", &stats->purged, true);
  mi_print_amount_row(&line, "touched", &stats->page_committed, 1, "");
  mi_print_count_row(&line, "segments", &stats->segments);
  mi_print_count_row(&line, "-abandoned", &stats->segments_abandoned);
  mi_print_count_row(&line, "-cached", &stats->segments_cache);
  mi_print_count_row(&line, "pages", &stats->pages);
  mi_print_count_row(&line, "-abandoned", &stats->pages_abandoned);
  mi_print_counter_row(&line, "-extended", &stats->pages_extended, false);
  mi_print_counter_row(&line, "-retire", &stats->pages_retire, false);
  mi_print_counter_row(&line, "arenas", &stats->arena_count, false);
  mi_print_counter_row(&line, "-rollback", &stats->arena_rollback_count, false);
  mi_print_counter_row(&line, "mmaps", &stats->mmap_calls, false);
  mi_print_counter_row(&line, "commits", &stats->commit_calls, false);
  mi_print_counter_row(&line, "resets", &stats->reset_calls, false);
  mi_print_counter_row(&line, "purges", &stats->purge_calls, false);
  mi_print_counter_row(&line, "guarded", &stats->malloc_guarded_count, false);
  mi_print_count_row(&line, "threads", &stats->threads);
  const int64_t searches = stats->page_searches.total;
  const int64_t count = stats->page_searches_count.total;
  const int64_t avg10 = (count == 0 ? 0 : (searches * 10) / count);
  mi_line_add(&line, "%10s: %5lld.%lld avg", "searches", (long long)(avg10 / 10), (long long)(avg10 % 10));
  mi_line_end(&line);
  mi_line_add(&line, "%10s: %5zu", "numa nodes", _mi_os_numa_node_count());
  mi_line_end(&line);
  mi_print_limit(&line, true);

  mi_print_process_info(&line, info);
}

/* ---------------------------------------------------------------------------------------
   The readable layout (the default). Rows that are zero are left out, so release builds,
   which do not count blocks one by one, show no block rows and no empty column.
   docs/statistics.md explains every row; its list of row names and the names here must
   agree (test/stats/run-stats.py checks the printed names against it).
--------------------------------------------------------------------------------------- */
/* Widths: a section title takes 40 columns, a row name 2 blanks and 38 columns (the longest
   name has 37 characters), each cell 11, right-aligned; a line stays under 100 columns. */

/* Bytes in the largest binary unit that leaves at least 1, to three significant digits at
   most, rounded to nearest: "0", "640 B", "1.5 MiB", "16 KiB", "245 MiB", "1.0 GiB". */
static void mi_fmt_bytes(char* buf, size_t size, int64_t n) {
  static const char* const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
  const size_t nunits = sizeof(units) / sizeof(units[0]);
  const uint64_t v = (n < 0 ? 0 : (uint64_t)n);   /* no figure is negative */
  if (v == 0)    { _mi_snprintf(buf, size, "0"); return; }
  if (v < 1024)  { _mi_snprintf(buf, size, "%llu B", (unsigned long long)v); return; }
  uint64_t unit = 1024;
  size_t u = 0;
  while (u + 1 < nunits && v / 1024 >= unit) { unit *= 1024; u++; }
  for (;;) {
    const uint64_t tenths = (v / unit) * 10 + ((v % unit) * 10 + unit / 2) / unit;
    if (tenths < 100) {
      _mi_snprintf(buf, size, "%llu.%llu %s", (unsigned long long)(tenths / 10), (unsigned long long)(tenths % 10), units[u]);
      return;
    }
    const uint64_t whole = v / unit + ((v % unit) * 2 >= unit ? 1 : 0);
    if (whole >= 1024 && u + 1 < nunits) { unit *= 1024; u++; continue; }   /* "1024 KiB" is "1.0 MiB" */
    _mi_snprintf(buf, size, "%llu %s", (unsigned long long)whole, units[u]);
    return;
  }
}

/* A size class exactly: "48 B", "1152 B", "9 KiB", "1152 KiB", "2 MiB". */
static void mi_fmt_size_exact(char* buf, size_t size, size_t n) {
  if (n >= 1024*1024 && n % (1024*1024) == 0) _mi_snprintf(buf, size, "%zu MiB", n / (1024*1024));
  else if (n >= 1024 && n % 1024 == 0)         _mi_snprintf(buf, size, "%zu KiB", n / 1024);
  else                                          _mi_snprintf(buf, size, "%zu B", n);
}

/* Milliseconds as seconds: "0.002 s". */
static void mi_fmt_msecs(char* buf, size_t size, mi_msecs_t ms) {
  if (ms < 0) ms = 0;
  _mi_snprintf(buf, size, "%lld.%03lld s", (long long)(ms / 1000), (long long)(ms % 1000));
}

typedef enum mi_row_kind_e {
  MI_ROW_BYTES,          /* a count of bytes: now, peak, total */
  MI_ROW_NUMBER,         /* a count of objects: now, peak, total */
  MI_ROW_TOTAL_BYTES,    /* the total of a counter (or of a count) in bytes */
  MI_ROW_TOTAL_NUMBER,   /* the total of a counter */
  MI_ROW_SEARCHES        /* page searches, with the average pages looked at per search */
} mi_row_kind_t;

typedef struct mi_row_s {
  const char*   name;
  size_t        offset;      /* of the mi_stat_count_t / mi_stat_counter_t in mi_stats_data_t */
  mi_row_kind_t kind;
  const char*   note;        /* printed after the cells, or NULL */
} mi_row_t;

#define MI_ROW(name, field, kind, note)  { name, offsetof(mi_stats_data_t, field), kind, note }

/* The block rows name the size limit of binned blocks */
_Static_assert(MI_LARGE_OBJ_SIZE_MAX == 2*1024*1024, "the row names say 2 MiB");

static const mi_row_t mi_rows_memory[] = {
  MI_ROW("blocks (up to 2 MiB each)",        malloc_normal,  MI_ROW_BYTES, NULL),
  MI_ROW("huge blocks (over 2 MiB each)",    malloc_huge,    MI_ROW_BYTES, NULL),
  MI_ROW("in use (pages set up for blocks)", page_committed, MI_ROW_BYTES, NULL),
  MI_ROW("committed",                        committed,      MI_ROW_BYTES, NULL),
  MI_ROW("reserved (address space)",         reserved,       MI_ROW_BYTES, "not memory in use"),
};

static const mi_row_t mi_rows_objects[] = {
  MI_ROW("threads",                               threads,            MI_ROW_NUMBER, NULL),
  MI_ROW("segments",                              segments,           MI_ROW_NUMBER, NULL),
  MI_ROW("segments of ended threads (abandoned)", segments_abandoned, MI_ROW_NUMBER, NULL),
  MI_ROW("segments cached",                       segments_cache,     MI_ROW_NUMBER, NULL),
  MI_ROW("pages in use",                          pages,              MI_ROW_NUMBER, NULL),
  MI_ROW("pages of ended threads (abandoned)",    pages_abandoned,    MI_ROW_NUMBER, NULL),
};

static const mi_row_t mi_rows_activity[] = {
  MI_ROW("memory requested by the program",      malloc_requested,     MI_ROW_TOTAL_BYTES,  NULL),
  MI_ROW("blocks allocated (up to 2 MiB each)",  malloc_normal_count,  MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("huge blocks allocated",                malloc_huge_count,    MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("guarded blocks allocated",             malloc_guarded_count, MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("memory purged (given back to the OS)", purged,               MI_ROW_TOTAL_BYTES,  NULL),
  MI_ROW("memory discarded (reset)",             reset,                MI_ROW_TOTAL_BYTES,  NULL),
  MI_ROW("OS memory mappings (mmap)",            mmap_calls,           MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("OS commit calls",                      commit_calls,         MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("OS purge calls",                       purge_calls,          MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("OS reset calls",                       reset_calls,          MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("arenas reserved",                      arena_count,          MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("arena commit rollbacks",               arena_rollback_count, MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("arena purge passes",                   arena_purges,         MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("page extensions",                      pages_extended,       MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("pages retired (emptied)",              pages_retire,         MI_ROW_TOTAL_NUMBER, NULL),
  MI_ROW("slow-path page searches",              page_searches_count,  MI_ROW_SEARCHES,     NULL),
};

#define MI_COUNT_OF(a)  (sizeof(a) / sizeof((a)[0]))

static const mi_stat_count_t* mi_row_count(const mi_stats_data_t* stats, const mi_row_t* row) {
  return (const mi_stat_count_t*)((const uint8_t*)stats + row->offset);
}

/* The total of a counter, or of a count: both structs start with it. */
_Static_assert(offsetof(mi_stat_count_t, total) == 0 && offsetof(mi_stat_counter_t, total) == 0, "total first");
static int64_t mi_row_total(const mi_stats_data_t* stats, const mi_row_t* row) {
  return *(const int64_t*)((const uint8_t*)stats + row->offset);
}

static bool mi_row_is_zero(const mi_stats_data_t* stats, const mi_row_t* row) {
  if (row->kind == MI_ROW_BYTES || row->kind == MI_ROW_NUMBER) {
    const mi_stat_count_t* c = mi_row_count(stats, row);
    return (c->current <= 0 && c->peak <= 0 && c->total <= 0);
  }
  return (mi_row_total(stats, row) <= 0);
}

static void mi_cell_bytes(mi_line_t* line, int64_t n) {
  char buf[32];
  mi_fmt_bytes(buf, sizeof(buf), n);
  mi_line_add(line, "%11s", buf);
}

static void mi_cell_number(mi_line_t* line, int64_t n) {
  mi_line_add(line, "%11lld", (long long)(n < 0 ? 0 : n));
}

static void mi_row_name(mi_line_t* line, const char* name) {
  mi_line_add(line, "%2s%-38s", "", name);
}

static void mi_section_header(mi_line_t* line, const char* title, const char* const* columns, size_t count) {
  mi_line_add(line, "%-40s", title);
  for (size_t i = 0; i < count; i++) mi_line_add(line, "%11s", columns[i]);
  mi_line_end(line);
}

static void mi_print_row(mi_line_t* line, const mi_stats_data_t* stats, const mi_row_t* row) {
  mi_row_name(line, row->name);
  if (row->kind == MI_ROW_BYTES || row->kind == MI_ROW_NUMBER) {
    const mi_stat_count_t* c = mi_row_count(stats, row);
    if (row->kind == MI_ROW_BYTES) { mi_cell_bytes(line, c->current); mi_cell_bytes(line, c->peak); mi_cell_bytes(line, c->total); }
    else                           { mi_cell_number(line, c->current); mi_cell_number(line, c->peak); mi_cell_number(line, c->total); }
  }
  else if (row->kind == MI_ROW_TOTAL_BYTES) {
    mi_cell_bytes(line, mi_row_total(stats, row));
  }
  else {
    const int64_t total = mi_row_total(stats, row);
    mi_cell_number(line, total);
    if (row->kind == MI_ROW_SEARCHES && total > 0) {
      const int64_t looked = (stats->page_searches.total < 0 ? 0 : stats->page_searches.total);
      const int64_t avg10 = (looked * 10 + total / 2) / total;
      mi_line_add(line, "  (%lld.%lld pages visited on average)", (long long)(avg10 / 10), (long long)(avg10 % 10));
    }
  }
  if (row->note != NULL) mi_line_add(line, "  (%s)", row->note);
  mi_line_end(line);
}

/* A section: its header and its rows that are not zero; nothing when all are zero. */
static void mi_print_section(mi_line_t* line, const mi_stats_data_t* stats, const char* title,
                             const char* const* columns, size_t ncolumns, const mi_row_t* rows, size_t nrows) {
  bool any = false;
  for (size_t i = 0; i < nrows && !any; i++) any = !mi_row_is_zero(stats, &rows[i]);
  if (!any) return;
  mi_section_header(line, title, columns, ncolumns);
  for (size_t i = 0; i < nrows; i++) {
    if (!mi_row_is_zero(stats, &rows[i])) mi_print_row(line, stats, &rows[i]);
  }
}

/* Per size class (per-block statistics, MI_STAT > 1): blocks now, at their peak and
   allocated in total, their bytes now, and the pages of the class now (pages are counted
   for the process only: a thread's print has no such column). */
static void mi_print_bins(mi_line_t* line, const mi_stats_data_t* stats, bool with_pages) {
  static const char* const columns[] = { "now", "peak", "allocated", "bytes now", "pages now" };
  bool header = false;
  for (size_t bin = 1; bin < MI_BIN_HUGE_INTERNAL; bin++) {
    const mi_stat_count_t* b = &stats->malloc_bins[bin];
    const mi_stat_count_t* p = &stats->page_bins[bin];
    if (b->total <= 0 && b->current <= 0 && b->peak <= 0 && (!with_pages || p->current <= 0)) continue;
    if (!header) {
      mi_section_header(line, "blocks by size", columns, MI_COUNT_OF(columns) - (with_pages ? 0 : 1));
      header = true;
    }
    const size_t bsize = _mi_page_bin_size(bin);
    char name[32];
    mi_fmt_size_exact(name, sizeof(name), bsize);
    mi_row_name(line, name);
    mi_cell_number(line, b->current);
    mi_cell_number(line, b->peak);
    mi_cell_number(line, b->total);
    mi_cell_bytes(line, (b->current < 0 ? 0 : b->current) * (int64_t)bsize);
    if (with_pages) mi_cell_number(line, p->current);
    mi_line_end(line);
  }
}

/* With a memory limit in force (limit.c): the limit, where it comes from, and the headroom,
   i.e. the limit minus our committed memory (not the RSS: committed is what the allocator can
   give back and holds to the limit, read without a system call; it includes what waits for a
   purge, so it is the figure that must stay under the limit), and how often the purger had to
   give memory back for it, and how many commits the hard limit refused. No line without a limit
   (the layouts stay mimalloc's). */
static void mi_print_limit(mi_line_t* line, bool mimalloc_layout) {
  const size_t hard = _mi_limit_hard_get();
  size_t limit = _mi_limit_get();
  if (limit == 0) limit = hard;   /* (a hard limit alone: its headroom) */
  if (limit == 0) return;
  const size_t committed = _mi_limit_committed();
  char desc[160], headroom[32], commit[32];
  _mi_limit_describe(desc, sizeof(desc));
  mi_fmt_bytes(headroom, sizeof(headroom), (committed >= limit ? 0 : (int64_t)(limit - committed)));
  mi_fmt_bytes(commit, sizeof(commit), (int64_t)committed);
  const size_t count = _mi_limit_pressure_count();
  if (mimalloc_layout) mi_line_add(line, "%10s: ", "limit");
  else mi_line_add(line, "mimalloc: memory limit: ");
  mi_line_add(line, "%s, headroom %s (limit minus committed %s), %zu purge%s near the limit",
              desc, headroom, commit, count, (count == 1 ? "" : "s"));
  if (hard != 0) {
    const size_t refused = _mi_limit_refused_count();
    mi_line_add(line, ", %zu commit%s refused by the hard limit", refused, (refused == 1 ? "" : "s"));
  }
  mi_line_end(line);
}

/* The first line: what most users want to know. "peak in use" is the peak of the page
   memory set up for blocks (the "in use" row), which every build counts. */
static void mi_print_summary(mi_line_t* line, const mi_stats_data_t* stats, const mi_process_info_t* info) {
  char rss[32], inuse[32], elapsed[32], user[32], sys[32];
  mi_fmt_bytes(rss, sizeof(rss), (int64_t)info->peak_rss);
  mi_fmt_bytes(inuse, sizeof(inuse), stats->page_committed.peak);
  mi_fmt_msecs(elapsed, sizeof(elapsed), info->elapsed);
  mi_fmt_msecs(user, sizeof(user), info->utime);
  mi_fmt_msecs(sys, sizeof(sys), info->stime);
  mi_line_add(line, "mimalloc: peak RSS %s, peak in use %s, %s (user %s, system %s), %zu page fault%s",
              rss, inuse, elapsed, user, sys, info->page_faults, (info->page_faults == 1 ? "" : "s"));
  mi_line_end(line);
}

/* title NULL: the process' summary line; with_pages: the figures count pages per size */
static void mi_stats_print_readable(const mi_stats_data_t* stats, const mi_process_info_t* info, const char* title, bool with_pages, mi_line_t* line) {
  static const char* const amounts[] = { "now", "peak", "total" };
  static const char* const totals[] = { "total" };
  if (title != NULL) {
    mi_line_add(line, "%s", title);
    mi_line_end(line);
  }
  else {
    mi_print_summary(line, stats, info);
    mi_print_limit(line, false);
  }
  mi_print_section(line, stats, "memory", amounts, MI_COUNT_OF(amounts), mi_rows_memory, MI_COUNT_OF(mi_rows_memory));
  mi_print_bins(line, stats, with_pages);
  mi_print_section(line, stats, "threads, segments and pages", amounts, MI_COUNT_OF(amounts), mi_rows_objects, MI_COUNT_OF(mi_rows_objects));
  mi_print_section(line, stats, "activity", totals, MI_COUNT_OF(totals), mi_rows_activity, MI_COUNT_OF(mi_rows_activity));
  mi_line_add(line, "(rows that are zero are not shown; MIMALLOC_STATS_LAYOUT=mimalloc prints mimalloc's layout)");
  mi_line_end(line);
}

/* ---------------------------------------------------------------------------------------
   The layout: MIMALLOC_STATS_LAYOUT=mimalloc selects mimalloc's, anything else (or nothing)
   the readable one. Read at every print, without allocating.
--------------------------------------------------------------------------------------- */
static bool mi_stats_layout_is_mimalloc(void) {
  char value[16];
  if (!_mi_prim_getenv("MIMALLOC_STATS_LAYOUT", value, sizeof(value))) return false;
  const char* want = "mimalloc";
  size_t i = 0;
  for (; want[i] != 0; i++) {
    char c = value[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != want[i]) return false;
  }
  return (value[i] == 0);
}

static void mi_stats_print_any(const mi_stats_data_t* stats, const mi_process_info_t* info, const char* title, bool with_pages,
                               mi_output_fun* out, void* arg) {
  if (mi_stats_layout_is_mimalloc()) {
    if (title != NULL) { mi_line_t line = { .out = out, .arg = arg }; mi_line_add(&line, "%s", title); mi_line_end(&line); }
    mi_stats_print_mimalloc(stats, info, out, arg);
    return;
  }
  mi_line_t line;
  line.len = 0;
  line.buf[0] = 0;
  line.out = out;
  line.arg = arg;
  mi_stats_print_readable(stats, info, title, with_pages, &line);
}

void _mi_stats_print_text(const mi_stats_data_t* stats, const mi_process_info_t* info, bool thread, mi_output_fun* out, void* arg) {
  const char* title = (thread ? "mimalloc: statistics of this thread only (the process totals: mi_stats_print_out)" : NULL);
  if (thread && mi_stats_layout_is_mimalloc()) title = NULL;   /* (mimalloc's layout has no title line) */
  mi_stats_print_any(stats, info, title, !thread, out, arg);
}

void _mi_stats_print_titled(const mi_stats_data_t* stats, const mi_process_info_t* info, const char* title,
                            mi_output_fun* out, void* arg) {
  mi_stats_print_any(stats, info, title, true, out, arg);
}

/* ---------------------------------------------------------------------------------------
   Process information
--------------------------------------------------------------------------------------- */
void _mi_stats_print_process_info_get(mi_process_info_t* info) {
  memset(info, 0, sizeof(*info));
  info->elapsed = _mi_process_elapsed();
  _mi_prim_process_info(info);
  const int64_t commit = __atomic_load_n(&_mi_stats_main.committed.current, __ATOMIC_RELAXED);
  const int64_t peak_commit = __atomic_load_n(&_mi_stats_main.committed.peak, __ATOMIC_RELAXED);
  info->current_commit = (commit < 0 ? 0 : (size_t)commit);
  info->peak_commit = (peak_commit < 0 ? 0 : (size_t)peak_commit);
}

void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs, size_t* current_rss,
                     size_t* peak_rss, size_t* current_commit, size_t* peak_commit, size_t* page_faults) mi_attr_noexcept {
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  if (elapsed_msecs != NULL)  *elapsed_msecs  = (info.elapsed < 0 ? 0 : (size_t)info.elapsed);
  if (user_msecs != NULL)     *user_msecs     = (info.utime < 0 ? 0 : (size_t)info.utime);
  if (system_msecs != NULL)   *system_msecs   = (info.stime < 0 ? 0 : (size_t)info.stime);
  if (current_rss != NULL)    *current_rss    = info.current_rss;
  if (peak_rss != NULL)       *peak_rss       = info.peak_rss;
  if (current_commit != NULL) *current_commit = info.current_commit;
  if (peak_commit != NULL)    *peak_commit    = info.peak_commit;
  if (page_faults != NULL)    *page_faults    = info.page_faults;
}

/* ---------------------------------------------------------------------------------------
   Printing (the text layouts are in stats-print.c)
--------------------------------------------------------------------------------------- */
void mi_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_stats_merge();
  mi_stats_data_t stats;
  _mi_stats_snapshot(&stats);
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  _mi_stats_print_text(&stats, &info, false, out, arg);
}

void mi_process_info_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  _mi_stats_print_process_info_text(&info, out, arg);
}

void mi_process_info_print(void) mi_attr_noexcept {
  mi_process_info_print_out(NULL, NULL);
}

void mi_stats_print(void* out) mi_attr_noexcept {
  if (out == (void*)stdout || out == (void*)stderr) out = NULL;   /* the default output */
  mi_stats_print_out((mi_output_fun*)out, NULL);
}

void mi_thread_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  mi_heap_t* const heap = mi_prim_get_default_heap();
  mi_tld_t* const tld = (mi_heap_is_initialized(heap) ? heap->tld : NULL);
  if (tld == NULL) {
    mi_stats_data_t empty;
    memset(&empty, 0, sizeof(empty));
    _mi_stats_print_text(&empty, &info, true, out, arg);
  }
  else {
    /* the thread's live figures (blocks in its pages), also after a merge: subtracting what
       was merged could print negative values once the thread frees merged blocks */
    _mi_stats_print_text(&tld->stats, &info, true, out, arg);
  }
}

/* ---------------------------------------------------------------------------------------
   mi_stats_get: the public layout uses mimalloc v2's bin numbering (four size classes per
   power of two); our bins (eight per power of two) are folded into it by block size.
--------------------------------------------------------------------------------------- */
static size_t mi_public_bin(size_t size) {
  if (size > MI_LARGE_OBJ_SIZE_MAX) return MI_BIN_HUGE;
  size_t wsize = _mi_wsize_from_size(size);
  if (wsize <= 1) return 1;
  if (wsize <= 8) return wsize;
  wsize--;
  const size_t b = mi_bsr(wsize);
  return ((b << 2) + ((wsize >> (b - 2)) & 3)) - 3;
}

static void mi_stat_count_add(mi_stat_count_t* dst, const mi_stat_count_t* src) {
  dst->total += src->total;
  dst->peak += src->peak;     /* an upper bound: the folded bins peaked at different times */
  dst->current += src->current;
}

/* Our per-bin figures added into mimalloc's numbering (MI_BIN_HUGE+1 entries, zeroed by the
   caller); v2 and v3 number their bins alike. */
void _mi_stats_print_fold_bins(const mi_stat_count_t* bins, mi_stat_count_t* public_bins) {
  for (size_t bin = 1; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    mi_stat_count_add(&public_bins[mi_public_bin(_mi_page_bin_size(bin))], &bins[bin]);
  }
}

/* The largest block size of mimalloc's bin `bin` (the inverse of mi_public_bin): bins 1-8 are
   1-8 words, then four per power of two; the huge bin's is the smallest huge size. */
mi_decl_export size_t mi_stats_get_bin_size(size_t bin) mi_attr_noexcept {
  if (bin == 0 || bin > MI_BIN_HUGE) return 0;
  if (bin == MI_BIN_HUGE) return MI_LARGE_OBJ_SIZE_MAX + 1;
  if (bin <= 8) return bin * sizeof(void*);
  const size_t b = (bin + 3) >> 2;
  const size_t r = (bin + 3) & 3;
  return ((5 + r) << (b - 2)) * sizeof(void*);
}

/* The process' figures now: the calling thread's merged first. */
void _mi_stats_print_process_now(mi_stats_data_t* data) {
  mi_stats_merge();
  _mi_stats_snapshot(data);
}

/* v3 mode's callers pass mimalloc 3.x's layout (version 5, stats-v3.c); every other size or
   version is refused. */
bool mi_stats_get(mi_stats_t* stats) mi_attr_noexcept {
  if (stats != NULL && stats->version == MI_V3_STAT_VERSION) return _mi_stats_v3_get((mi_v3_stats_t*)(void*)stats);
  if (stats == NULL || stats->size != sizeof(mi_stats_t) || stats->version != MI_STAT_VERSION) return false;
  mi_stats_data_t data;
  _mi_stats_snapshot(&data);
  memset(stats, 0, sizeof(*stats));
  stats->size = sizeof(mi_stats_t);
  stats->version = MI_STAT_VERSION;
#define MI_STAT_COUNT(name)    stats->name = data.name;
#define MI_STAT_COUNTER(name)  stats->name = data.name;
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  _mi_stats_print_fold_bins(data.malloc_bins, stats->malloc_bins);
  _mi_stats_print_fold_bins(data.page_bins, stats->page_bins);
  return true;
}

/* ---------------------------------------------------------------------------------------
   JSON: written through a bounded writer that counts what does not fit, so the same code
   measures the size, fills a caller's buffer, or streams to a file at exit.
--------------------------------------------------------------------------------------- */
void _mi_stats_print_json_add(mi_json_t* json, const char* fmt, ...) {
  char tmp[256];
  va_list args;
  va_start(args, fmt);
  const size_t n = (size_t)_mi_vsnprintf(tmp, sizeof(tmp), fmt, args);
  va_end(args);
  if (json->buf != NULL && json->len + n < json->size) memcpy(json->buf + json->len, tmp, n);
  json->len += n;
}

void _mi_stats_print_json_count(mi_json_t* json, const char* name, const mi_stat_count_t* stat) {
  _mi_stats_print_json_add(json, ",\n  \"%s\": { \"total\": %lld, \"peak\": %lld, \"current\": %lld }", name,
              (long long)stat->total, (long long)stat->peak, (long long)stat->current);
}

static void mi_json_bins(mi_json_t* json, const char* name, const mi_stat_count_t* bins) {
  _mi_stats_print_json_add(json, ",\n  \"%s\": [", name);
  bool first = true;
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    const size_t bsize = (bin == 0 ? 0 : _mi_page_bin_size(bin));   /* huge: the smallest huge size */
    /* large: a span of 128 KiB slots (one more when it starts at the header's slot) */
    const size_t psize = (bsize <= MI_SMALL_OBJ_SIZE_MAX ? MI_SMALL_PAGE_SIZE : bsize <= MI_MEDIUM_OBJ_SIZE_MAX ? MI_MEDIUM_PAGE_SIZE
                          : bsize <= MI_LARGE_OBJ_SIZE_MAX ? _mi_align_up(bsize, MI_LARGE_SLOT_SIZE) : MI_SEGMENT_SIZE);
    _mi_stats_print_json_add(json, "%s\n    { \"bin\": %zu, \"total\": %lld, \"peak\": %lld, \"current\": %lld, \"block_size\": %zu, \"page_size\": %zu }",
                (first ? "" : ","), bin, (long long)bins[bin].total, (long long)bins[bin].peak, (long long)bins[bin].current,
                bsize, psize);
    first = false;
  }
  _mi_stats_print_json_add(json, "\n  ]");
}

static void mi_stats_json(mi_json_t* json, const mi_stats_data_t* data, const mi_process_info_t* info) {
  _mi_stats_print_json_add(json, "{\n  \"stat_version\": %d,\n  \"mimalloc_version\": %d,\n  \"stat_level\": %d,\n  \"debug\": %d", MI_STAT_VERSION, MI_MALLOC_VERSION, MI_STAT, MI_DEBUG);
  _mi_stats_print_json_add(json, ",\n  \"process\": { \"elapsed_msecs\": %lld, \"user_msecs\": %lld, \"system_msecs\": %lld, \"page_faults\": %zu, ",
              (long long)info->elapsed, (long long)info->utime, (long long)info->stime, info->page_faults);
  _mi_stats_print_json_add(json, "\"rss_current\": %zu, \"rss_peak\": %zu, \"commit_current\": %zu, \"commit_peak\": %zu, ",
              info->current_rss, info->peak_rss, info->current_commit, info->peak_commit);
  /* the soft memory limit (0: none) and the purges made for it, the hard one and the commits it
     refused (limit.c): the live view's too */
  _mi_stats_print_json_add(json, "\"memory_limit\": %zu, \"memory_limit_purges\": %zu, \"memory_limit_hard\": %zu, \"memory_limit_refused\": %zu }",
                           _mi_limit_get(), _mi_limit_pressure_count(), _mi_limit_hard_get(), _mi_limit_refused_count());
#define MI_STAT_COUNT(name)    _mi_stats_print_json_count(json, #name, &data->name);
#define MI_STAT_COUNTER(name)  _mi_stats_print_json_add(json, ",\n  \"%s\": %lld", #name, (long long)data->name.total);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  mi_json_bins(json, "malloc_bins", data->malloc_bins);
  mi_json_bins(json, "page_bins", data->page_bins);
  _mi_stats_print_json_add(json, "\n}\n");
}

/* Each pass renders the figures of its own moment (the allocated buffer counts in the second). */
static void mi_stats_json_now(mi_json_t* json) {
  mi_stats_data_t data;
  _mi_stats_snapshot(&data);
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  mi_stats_json(json, &data, &info);
}

/* The process document of this moment into buf (live.c); its length, which may exceed size
   (then buf holds a truncated prefix). */
size_t _mi_stats_print_json_now(char* buf, size_t size) {
  mi_json_t json = { buf, size, 0 };
  mi_stats_json_now(&json);
  if (json.len < size) buf[json.len] = 0;
  return json.len;
}

/* A document rendered by `render` into the caller's buffer, or (buf NULL or buf_size 0) into
   a new block of the calling thread's heap; NULL if it does not fit. Each pass renders the
   figures of its own moment, so the block is measured with room to spare. */
char* _mi_stats_print_json_render(void (*render)(mi_json_t* json, void* arg), void* arg, size_t buf_size, char* buf) {
  mi_json_t json = { buf, buf_size, 0 };
  if (buf == NULL || buf_size == 0) {
    mi_json_t measure = { NULL, 0, 0 };
    render(&measure, arg);
    json.size = measure.len + 1024;   /* figures may grow a few digits between the passes */
    json.buf = (char*)mi_malloc(json.size);
    if (json.buf == NULL) return NULL;
  }
  render(&json, arg);
  if (json.len >= json.size) {
    if (buf == NULL || buf_size == 0) mi_free(json.buf);
    return NULL;
  }
  json.buf[json.len] = 0;
  return json.buf;
}

static void mi_stats_json_render_now(mi_json_t* json, void* arg) {
  (void)arg;
  mi_stats_json_now(json);
}

char* mi_stats_get_json(size_t buf_size, char* buf) mi_attr_noexcept {
  mi_stats_merge();
  return _mi_stats_print_json_render(&mi_stats_json_render_now, NULL, buf_size, buf);
}

/* MIMALLOC_STATS_JSON=<path>: the JSON document written at exit, through memory from the OS
   (the heap may be in any state then). It shows the same snapshot as the exit-time text, so
   its own buffer is not counted in it. */
static void mi_stats_write_json_file(const char* path, const mi_stats_data_t* data, const mi_process_info_t* info) {
  mi_json_t measure = { NULL, 0, 0 };
  mi_stats_json(&measure, data, info);
  const size_t size = measure.len + 1;
  char* buf = (char*)_mi_os_alloc(size, NULL);
  if (buf == NULL) { _mi_warning_message("unable to render the statistics as JSON\n"); return; }
  mi_json_t json = { buf, size, 0 };
  mi_stats_json(&json, data, info);
  const size_t len = (json.len < size ? json.len : 0);
  const int err = _mi_prim_write_file(path, buf, len);
  if (err != 0) _mi_warning_message("unable to write the statistics to \"%s\" (error %d)\n", path, err);
  _mi_os_free(buf, size);
}

/* The text (show_stats, verbose) and the JSON file at exit describe one moment: one snapshot
   of the figures and one reading of the process information. Out of line: every process runs
   the check below, few the rest (cmake/hot-text.txt groups what every process runs). */
static mi_decl_noinline void mi_stats_print_at_exit_now(bool print, bool json, const char* path) {
  mi_stats_merge();
  mi_stats_data_t data;
  _mi_stats_snapshot(&data);
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  if (print) _mi_stats_print_text(&data, &info, false, NULL, NULL);
  if (json) mi_stats_write_json_file(path, &data, &info);
}

void _mi_stats_print_at_exit(void) {
  const bool print = (mi_option_is_enabled(mi_option_show_stats) || mi_option_is_enabled(mi_option_verbose));
  char path[1024];
  const bool json = (_mi_prim_getenv("MIMALLOC_STATS_JSON", path, sizeof(path)) && path[0] != 0);
  /* merge only for our own output: a later mi_stats_print or mi_stats_get merges the calling
     thread itself, and the merge would fault in the statistics pages of a process that exits */
  if (print || json) mi_stats_print_at_exit_now(print, json, path);
}
