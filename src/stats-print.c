/* SPDX-License-Identifier: MIT */
/* The statistics as text: mimalloc v2.4's layout (API.md section 16). Called by stats.c
   with a snapshot of the figures and the process information of the same moment. Writes
   through _mi_fputs one line at a time and never allocates. */
#include "internal/internal.h"

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
   mimalloc v2.4's layout (API.md section 16). Trailing blanks of the fixed-width layout
   stay; the unit suffix of amounts below the base adds blanks too ("640   B  "), as in
   mimalloc's output.
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
      mi_print_amount_row(&line, label, stat, (int64_t)_mi_bin_size(bin), "not all freed");
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
    /* binary counts when no such allocation was counted (section 16) */
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

  mi_line_add(&line, "%10s: %5lld.%03lld s", "elapsed", (long long)(info->elapsed / 1000), (long long)(info->elapsed % 1000));
  mi_line_end(&line);
  char peak_rss[32];
  mi_format_amount(peak_rss, sizeof(peak_rss), (int64_t)info->peak_rss, 1);
  mi_line_add(&line, "%10s: user: %lld.%03lld s, system: %lld.%03lld s, faults: %zu, peak rss: %s", "process",
              (long long)(info->utime / 1000), (long long)(info->utime % 1000),
              (long long)(info->stime / 1000), (long long)(info->stime % 1000), info->page_faults, peak_rss);
  if (info->peak_commit > 0) {
    char peak_commit[32];
    mi_format_amount(peak_commit, sizeof(peak_commit), (int64_t)info->peak_commit, 1);
    mi_line_add(&line, ", peak commit: %s", peak_commit);
  }
  mi_line_end(&line);
}

void _mi_stats_print_text(const mi_stats_data_t* stats, const mi_process_info_t* info, bool thread, mi_output_fun* out, void* arg) {
  (void)thread;
  mi_stats_print_mimalloc(stats, info, out, arg);
}
