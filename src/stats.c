/* SPDX-License-Identifier: MIT */
/* Statistics: thread and process figures (see mi_stats_data_t in types.h for who updates
   what and why no figure goes negative), merging, the text layout of mimalloc v2.4 (API.md
   section 16), mi_stats_get, the JSON rendering and process information. */
#include "internal/internal.h"
#include "prim/prim.h"
#include <stdio.h>   /* only to recognise stdout/stderr in mi_stats_print */

mi_msecs_t _mi_process_elapsed(void);

mi_stats_data_t _mi_stats_main;

/* ---------------------------------------------------------------------------------------
   Updating
--------------------------------------------------------------------------------------- */
static int64_t mi_load64(const int64_t* p)              { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void    mi_store64(int64_t* p, int64_t x)        { __atomic_store_n(p, x, __ATOMIC_RELAXED); }
static int64_t mi_add64(int64_t* p, int64_t x)          { return __atomic_add_fetch(p, x, __ATOMIC_RELAXED); }
static void    mi_max64(int64_t* p, int64_t x) {
  int64_t cur = mi_load64(p);
  while (cur < x && !__atomic_compare_exchange_n(p, &cur, x, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { }
}

void _mi_stat_increase(mi_stat_count_t* stat, size_t amount) {
  stat->current += (int64_t)amount;
  stat->total += (int64_t)amount;
  if (stat->current > stat->peak) stat->peak = stat->current;
}

void _mi_stat_atomic_increase(mi_stat_count_t* stat, size_t amount) {
  const int64_t current = mi_add64(&stat->current, (int64_t)amount);
  mi_add64(&stat->total, (int64_t)amount);
  mi_max64(&stat->peak, current);
}

void _mi_stat_atomic_decrease(mi_stat_count_t* stat, size_t amount) {
  mi_add64(&stat->current, -(int64_t)amount);
}

void _mi_stat_atomic_counter_add(mi_stat_counter_t* stat, size_t amount) {
  mi_add64(&stat->total, (int64_t)amount);
}

/* Move `amount` of current value (not a new allocation: total stays) into or out of a figure. */
static void mi_stat_adjust(mi_stat_count_t* stat, int64_t amount, bool atomic) {
  if (atomic) {
    const int64_t current = mi_add64(&stat->current, amount);
    mi_max64(&stat->peak, current);
  }
  else {
    stat->current += amount;
    mi_assert_internal(stat->current >= 0);
    if (stat->current > stat->peak) stat->peak = stat->current;
  }
}

/* Huge blocks count in the process totals only (segment.c), never in a thread's figures. */
void _mi_stat_page_transfer(const mi_page_t* page, mi_tld_t* from, mi_tld_t* to) {
  if (MI_STAT < 2 || mi_page_is_huge(page) || page->used == 0 || from == to) return;
  const size_t bin = _mi_bin(page->block_size);
  const int64_t blocks = (int64_t)page->used;
  const int64_t bytes = blocks * (int64_t)page->block_size;
  mi_stats_data_t* src = (from == NULL ? &_mi_stats_main : &from->stats);
  mi_stats_data_t* dst = (to == NULL ? &_mi_stats_main : &to->stats);
  mi_stat_adjust(&src->malloc_normal, -bytes, from == NULL);
  mi_stat_adjust(&src->malloc_bins[bin], -blocks, from == NULL);
  mi_stat_adjust(&dst->malloc_normal, bytes, to == NULL);
  mi_stat_adjust(&dst->malloc_bins[bin], blocks, to == NULL);
}

void _mi_stat_blocks_freed(const mi_page_t* page, mi_tld_t* tld, size_t count) {
  if (MI_STAT < 2 || mi_page_is_huge(page) || count == 0) return;
  mi_stats_data_t* stats = (tld == NULL ? &_mi_stats_main : &tld->stats);
  mi_stat_adjust(&stats->malloc_normal, -(int64_t)(count * page->block_size), tld == NULL);
  mi_stat_adjust(&stats->malloc_bins[_mi_bin(page->block_size)], -(int64_t)count, tld == NULL);
}

void _mi_stat_block_malloc(mi_tld_t* tld, const mi_page_t* page, size_t size) {
  _mi_stat_increase(&tld->stats.malloc_requested, size);
  if (mi_page_is_huge(page)) return;
  _mi_stat_increase(&tld->stats.malloc_normal, page->block_size);
  _mi_stat_increase(&tld->stats.malloc_bins[_mi_bin(page->block_size)], 1);
  tld->stats.malloc_normal_count.total++;
}

/* ---------------------------------------------------------------------------------------
   Merging and resetting. A thread's count figures are kept (they are the blocks its pages
   hold); merging publishes their change since the last merge, so the totals never count a
   block twice and never go below zero.
--------------------------------------------------------------------------------------- */
static void mi_stat_count_merge(mi_stat_count_t* total, mi_stat_count_t* src, mi_stat_count_t* published) {
  const int64_t delta = src->current - published->current;
  published->current = src->current;
  const int64_t current = mi_add64(&total->current, delta);
  if (src->total != 0) { mi_add64(&total->total, src->total); src->total = 0; }
  mi_max64(&total->peak, (src->peak > current ? src->peak : current));
}

static void mi_stat_counter_merge(mi_stat_counter_t* total, mi_stat_counter_t* src) {
  if (src->total != 0) { mi_add64(&total->total, src->total); src->total = 0; }
}

static void mi_stats_data_merge(mi_stats_data_t* total, mi_stats_data_t* src, mi_stats_data_t* published) {
#define MI_STAT_COUNT(name)    mi_stat_count_merge(&total->name, &src->name, &published->name);
#define MI_STAT_COUNTER(name)  mi_stat_counter_merge(&total->name, &src->name);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_merge(&total->malloc_bins[i], &src->malloc_bins[i], &published->malloc_bins[i]);
    mi_stat_count_merge(&total->page_bins[i], &src->page_bins[i], &published->page_bins[i]);
  }
}

void _mi_stats_merge_thread(mi_tld_t* tld) {
  if (tld == NULL) return;
  mi_stats_data_merge(&_mi_stats_main, &tld->stats, &tld->stats_published);
}

static mi_tld_t* mi_current_tld(void) {
  mi_heap_t* heap = mi_prim_get_default_heap();
  return (mi_heap_is_initialized(heap) ? heap->tld : NULL);
}

void mi_stats_merge(void) mi_attr_noexcept {
  _mi_stats_merge_thread(mi_current_tld());
}

/* Totals restart from the present: current values stay (they describe memory that exists),
   peak becomes current, totals become current, counters zero. */
static void mi_stat_count_reset(mi_stat_count_t* stat, bool atomic) {
  const int64_t current = (atomic ? mi_load64(&stat->current) : stat->current);
  if (atomic) { mi_store64(&stat->peak, current); mi_store64(&stat->total, current); }
  else        { stat->peak = current; stat->total = 0; }
}
static void mi_stat_counter_reset(mi_stat_counter_t* stat, bool atomic) {
  if (atomic) mi_store64(&stat->total, 0); else stat->total = 0;
}
static void mi_stats_data_reset(mi_stats_data_t* stats, bool atomic) {
#define MI_STAT_COUNT(name)    mi_stat_count_reset(&stats->name, atomic);
#define MI_STAT_COUNTER(name)  mi_stat_counter_reset(&stats->name, atomic);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_reset(&stats->malloc_bins[i], atomic);
    mi_stat_count_reset(&stats->page_bins[i], atomic);
  }
}

void mi_stats_reset(void) mi_attr_noexcept {
  mi_tld_t* tld = mi_current_tld();
  if (tld != NULL) {
    _mi_stats_merge_thread(tld);
    mi_stats_data_reset(&tld->stats, false);
  }
  mi_stats_data_reset(&_mi_stats_main, true);
}

/* A consistent-enough copy of the process totals (each figure read atomically). */
static void mi_stats_snapshot(mi_stats_data_t* copy) {
  const int64_t* src = (const int64_t*)&_mi_stats_main;
  int64_t* dst = (int64_t*)copy;
  for (size_t i = 0; i < sizeof(mi_stats_data_t) / sizeof(int64_t); i++) dst[i] = mi_load64(&src[i]);
}

/* ---------------------------------------------------------------------------------------
   Process information
--------------------------------------------------------------------------------------- */
static void mi_process_info_get(mi_process_info_t* info) {
  memset(info, 0, sizeof(*info));
  info->elapsed = _mi_process_elapsed();
  _mi_prim_process_info(info);
  const int64_t commit = mi_load64(&_mi_stats_main.committed.current);
  const int64_t peak_commit = mi_load64(&_mi_stats_main.committed.peak);
  info->current_commit = (commit < 0 ? 0 : (size_t)commit);
  info->peak_commit = (peak_commit < 0 ? 0 : (size_t)peak_commit);
}

void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs, size_t* current_rss,
                     size_t* peak_rss, size_t* current_commit, size_t* peak_commit, size_t* page_faults) mi_attr_noexcept {
  mi_process_info_t info;
  mi_process_info_get(&info);
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
   Text output (API.md section 16): one line at a time through the output function.
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

static void mi_stats_print_data(const mi_stats_data_t* stats, mi_output_fun* out, void* arg) {
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

  mi_process_info_t info;
  mi_process_info_get(&info);
  mi_line_add(&line, "%10s: %5lld.%03lld s", "elapsed", (long long)(info.elapsed / 1000), (long long)(info.elapsed % 1000));
  mi_line_end(&line);
  char peak_rss[32];
  mi_format_amount(peak_rss, sizeof(peak_rss), (int64_t)info.peak_rss, 1);
  mi_line_add(&line, "%10s: user: %lld.%03lld s, system: %lld.%03lld s, faults: %zu, peak rss: %s", "process",
              (long long)(info.utime / 1000), (long long)(info.utime % 1000),
              (long long)(info.stime / 1000), (long long)(info.stime % 1000), info.page_faults, peak_rss);
  if (info.peak_commit > 0) {
    char peak_commit[32];
    mi_format_amount(peak_commit, sizeof(peak_commit), (int64_t)info.peak_commit, 1);
    mi_line_add(&line, ", peak commit: %s", peak_commit);
  }
  mi_line_end(&line);
}

/* Trailing blanks of the fixed-width layout stay; the unit suffix of amounts below the base
   adds blanks too ("640   B  "), as in mimalloc's output. */
void mi_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_stats_merge();
  mi_stats_data_t stats;
  mi_stats_snapshot(&stats);
  mi_stats_print_data(&stats, out, arg);
}

void mi_stats_print(void* out) mi_attr_noexcept {
  if (out == (void*)stdout || out == (void*)stderr) out = NULL;   /* the default output */
  mi_stats_print_out((mi_output_fun*)out, NULL);
}

void mi_thread_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_tld_t* tld = mi_current_tld();
  if (tld == NULL) {
    mi_stats_data_t empty;
    memset(&empty, 0, sizeof(empty));
    mi_stats_print_data(&empty, out, arg);
  }
  else {
    /* the thread's live figures (blocks in its pages), also after a merge: subtracting what
       was merged could print negative values once the thread frees merged blocks */
    mi_stats_print_data(&tld->stats, out, arg);
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

bool mi_stats_get(mi_stats_t* stats) mi_attr_noexcept {
  if (stats == NULL || stats->size != sizeof(mi_stats_t) || stats->version != MI_STAT_VERSION) return false;
  mi_stats_data_t data;
  mi_stats_snapshot(&data);
  memset(stats, 0, sizeof(*stats));
  stats->size = sizeof(mi_stats_t);
  stats->version = MI_STAT_VERSION;
#define MI_STAT_COUNT(name)    stats->name = data.name;
#define MI_STAT_COUNTER(name)  stats->name = data.name;
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t bin = 1; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    const size_t pbin = mi_public_bin(_mi_bin_size(bin));
    mi_stat_count_add(&stats->malloc_bins[pbin], &data.malloc_bins[bin]);
    mi_stat_count_add(&stats->page_bins[pbin], &data.page_bins[bin]);
  }
  return true;
}

/* ---------------------------------------------------------------------------------------
   JSON: written through a bounded writer that counts what does not fit, so the same code
   measures the size, fills a caller's buffer, or streams to a file at exit.
--------------------------------------------------------------------------------------- */
typedef struct mi_json_s {
  char*  buf;
  size_t size;
  size_t len;      /* characters produced so far, also beyond size */
} mi_json_t;

static void mi_json_add(mi_json_t* json, const char* fmt, ...) {
  char tmp[256];
  va_list args;
  va_start(args, fmt);
  const size_t n = (size_t)_mi_vsnprintf(tmp, sizeof(tmp), fmt, args);
  va_end(args);
  if (json->buf != NULL && json->len + n < json->size) memcpy(json->buf + json->len, tmp, n);
  json->len += n;
}

static void mi_json_count(mi_json_t* json, const char* name, const mi_stat_count_t* stat) {
  mi_json_add(json, ",\n  \"%s\": { \"total\": %lld, \"peak\": %lld, \"current\": %lld }", name,
              (long long)stat->total, (long long)stat->peak, (long long)stat->current);
}

static void mi_json_bins(mi_json_t* json, const char* name, const mi_stat_count_t* bins) {
  mi_json_add(json, ",\n  \"%s\": [", name);
  bool first = true;
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    const size_t bsize = (bin == 0 ? 0 : _mi_bin_size(bin));   /* huge: the smallest huge size */
    const size_t psize = (bsize <= MI_SMALL_OBJ_SIZE_MAX ? MI_SMALL_PAGE_SIZE : bsize <= MI_MEDIUM_OBJ_SIZE_MAX ? MI_MEDIUM_PAGE_SIZE : MI_SEGMENT_SIZE);
    mi_json_add(json, "%s\n    { \"bin\": %zu, \"total\": %lld, \"peak\": %lld, \"current\": %lld, \"block_size\": %zu, \"page_size\": %zu }",
                (first ? "" : ","), bin, (long long)bins[bin].total, (long long)bins[bin].peak, (long long)bins[bin].current,
                bsize, psize);
    first = false;
  }
  mi_json_add(json, "\n  ]");
}

static void mi_stats_json(mi_json_t* json) {
  mi_stats_data_t data;
  mi_stats_snapshot(&data);
  mi_process_info_t info;
  mi_process_info_get(&info);
  mi_json_add(json, "{\n  \"stat_version\": %d,\n  \"mimalloc_version\": %d,\n  \"stat_level\": %d,\n  \"debug\": %d", MI_STAT_VERSION, MI_MALLOC_VERSION, MI_STAT, MI_DEBUG);
  mi_json_add(json, ",\n  \"process\": { \"elapsed_msecs\": %lld, \"user_msecs\": %lld, \"system_msecs\": %lld, \"page_faults\": %zu, ",
              (long long)info.elapsed, (long long)info.utime, (long long)info.stime, info.page_faults);
  mi_json_add(json, "\"rss_current\": %zu, \"rss_peak\": %zu, \"commit_current\": %zu, \"commit_peak\": %zu }",
              info.current_rss, info.peak_rss, info.current_commit, info.peak_commit);
#define MI_STAT_COUNT(name)    mi_json_count(json, #name, &data.name);
#define MI_STAT_COUNTER(name)  mi_json_add(json, ",\n  \"%s\": %lld", #name, (long long)data.name.total);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  mi_json_bins(json, "malloc_bins", data.malloc_bins);
  mi_json_bins(json, "page_bins", data.page_bins);
  mi_json_add(json, "\n}\n");
}

char* mi_stats_get_json(size_t buf_size, char* buf) mi_attr_noexcept {
  mi_stats_merge();
  mi_json_t json = { buf, buf_size, 0 };
  if (buf == NULL || buf_size == 0) {
    mi_json_t measure = { NULL, 0, 0 };
    mi_stats_json(&measure);
    json.size = measure.len + 1024;   /* figures may grow a few digits between the passes */
    json.buf = (char*)mi_malloc(json.size);
    if (json.buf == NULL) return NULL;
  }
  mi_stats_json(&json);
  if (json.len >= json.size) {
    if (buf == NULL || buf_size == 0) mi_free(json.buf);
    return NULL;
  }
  json.buf[json.len] = 0;
  return json.buf;
}

/* MIMALLOC_STATS_JSON=<path>: the JSON document written at exit, through memory from the OS
   (the heap may be in any state then). */
static void mi_stats_write_json_file(const char* path) {
  mi_json_t measure = { NULL, 0, 0 };
  mi_stats_json(&measure);
  const size_t size = measure.len + 1024;
  char* buf = (char*)_mi_os_alloc(size, NULL);
  if (buf == NULL) { _mi_warning_message("unable to render the statistics as JSON\n"); return; }
  mi_json_t json = { buf, size, 0 };
  mi_stats_json(&json);
  const size_t len = (json.len < size ? json.len : 0);
  const int err = _mi_prim_write_file(path, buf, len);
  if (err != 0) _mi_warning_message("unable to write the statistics to \"%s\" (error %d)\n", path, err);
  _mi_os_free(buf, size);
}

void _mi_stats_at_exit(void) {
  const bool print = (mi_option_is_enabled(mi_option_show_stats) || mi_option_is_enabled(mi_option_verbose));
  char path[1024];
  const bool json = (_mi_prim_getenv("MIMALLOC_STATS_JSON", path, sizeof(path)) && path[0] != 0);
  /* merge only for our own output: a later mi_stats_print or mi_stats_get merges the calling
     thread itself, and the merge would fault in the statistics pages of a process that exits */
  if (!print && !json) return;
  mi_stats_merge();
  if (print) mi_stats_print_out(NULL, NULL);
  if (json) mi_stats_write_json_file(path);
}
