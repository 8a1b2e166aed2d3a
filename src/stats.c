/* SPDX-License-Identifier: MIT */
/* Statistics: thread and process figures (see mi_stats_data_t in types.h for who updates
   what and why no figure goes negative), merging, mi_stats_get, the JSON rendering and
   process information. The text layouts are in stats-print.c. */
#include "internal/internal.h"
#include "internal/v3.h"
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
  /* nothing added since the last merge: the figure's peak since then is not above what that
     merge published (most of a thread's per-bin figures; each merge is two atomic operations
     on a line all threads write: 4.5% of thread-churn's samples, 20,000 threads) */
  if (delta == 0 && src->total == 0) return;
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

/* Figures of parts that are not the process' (shared heaps: stats-v3.c, sheap.c) added up */
static void mi_stat_count_sum(mi_stat_count_t* dst, const mi_stat_count_t* src) {
  dst->current += src->current;
  dst->peak += src->peak;     /* an upper bound: the parts peaked at different times */
  dst->total += src->total;
}

void _mi_stats_sum(mi_stats_data_t* dst, const mi_stats_data_t* src) {
#define MI_STAT_COUNT(name)    mi_stat_count_sum(&dst->name, &src->name);
#define MI_STAT_COUNTER(name)  dst->name.total += src->name.total;
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_sum(&dst->malloc_bins[i], &src->malloc_bins[i]);
    mi_stat_count_sum(&dst->page_bins[i], &src->page_bins[i]);
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
void _mi_process_info_get(mi_process_info_t* info) {
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
  _mi_process_info_get(&info);
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
  mi_stats_snapshot(&stats);
  mi_process_info_t info;
  _mi_process_info_get(&info);
  _mi_stats_print_text(&stats, &info, false, out, arg);
}

void mi_process_info_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_process_info_t info;
  _mi_process_info_get(&info);
  _mi_process_info_print_text(&info, out, arg);
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
  _mi_process_info_get(&info);
  mi_tld_t* tld = mi_current_tld();
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
void _mi_stats_fold_bins(const mi_stat_count_t* bins, mi_stat_count_t* public_bins) {
  for (size_t bin = 1; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    mi_stat_count_add(&public_bins[mi_public_bin(_mi_bin_size(bin))], &bins[bin]);
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
void _mi_stats_process_now(mi_stats_data_t* data) {
  mi_stats_merge();
  mi_stats_snapshot(data);
}

/* v3 mode's callers pass mimalloc 3.x's layout (version 5, stats-v3.c); every other size or
   version is refused. */
bool mi_stats_get(mi_stats_t* stats) mi_attr_noexcept {
  if (stats != NULL && stats->version == MI_V3_STAT_VERSION) return _mi_stats_get_v3((mi_v3_stats_t*)(void*)stats);
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
  _mi_stats_fold_bins(data.malloc_bins, stats->malloc_bins);
  _mi_stats_fold_bins(data.page_bins, stats->page_bins);
  return true;
}

/* ---------------------------------------------------------------------------------------
   JSON: written through a bounded writer that counts what does not fit, so the same code
   measures the size, fills a caller's buffer, or streams to a file at exit.
--------------------------------------------------------------------------------------- */
void _mi_json_add(mi_json_t* json, const char* fmt, ...) {
  char tmp[256];
  va_list args;
  va_start(args, fmt);
  const size_t n = (size_t)_mi_vsnprintf(tmp, sizeof(tmp), fmt, args);
  va_end(args);
  if (json->buf != NULL && json->len + n < json->size) memcpy(json->buf + json->len, tmp, n);
  json->len += n;
}

void _mi_json_count(mi_json_t* json, const char* name, const mi_stat_count_t* stat) {
  _mi_json_add(json, ",\n  \"%s\": { \"total\": %lld, \"peak\": %lld, \"current\": %lld }", name,
              (long long)stat->total, (long long)stat->peak, (long long)stat->current);
}

static void mi_json_bins(mi_json_t* json, const char* name, const mi_stat_count_t* bins) {
  _mi_json_add(json, ",\n  \"%s\": [", name);
  bool first = true;
  for (size_t bin = 0; bin <= MI_BIN_HUGE_INTERNAL; bin++) {
    const size_t bsize = (bin == 0 ? 0 : _mi_bin_size(bin));   /* huge: the smallest huge size */
    /* large: a span of 128 KiB slots (one more when it starts at the header's slot) */
    const size_t psize = (bsize <= MI_SMALL_OBJ_SIZE_MAX ? MI_SMALL_PAGE_SIZE : bsize <= MI_MEDIUM_OBJ_SIZE_MAX ? MI_MEDIUM_PAGE_SIZE
                          : bsize <= MI_LARGE_OBJ_SIZE_MAX ? _mi_align_up(bsize, MI_LARGE_SLOT_SIZE) : MI_SEGMENT_SIZE);
    _mi_json_add(json, "%s\n    { \"bin\": %zu, \"total\": %lld, \"peak\": %lld, \"current\": %lld, \"block_size\": %zu, \"page_size\": %zu }",
                (first ? "" : ","), bin, (long long)bins[bin].total, (long long)bins[bin].peak, (long long)bins[bin].current,
                bsize, psize);
    first = false;
  }
  _mi_json_add(json, "\n  ]");
}

static void mi_stats_json(mi_json_t* json, const mi_stats_data_t* data, const mi_process_info_t* info) {
  _mi_json_add(json, "{\n  \"stat_version\": %d,\n  \"mimalloc_version\": %d,\n  \"stat_level\": %d,\n  \"debug\": %d", MI_STAT_VERSION, MI_MALLOC_VERSION, MI_STAT, MI_DEBUG);
  _mi_json_add(json, ",\n  \"process\": { \"elapsed_msecs\": %lld, \"user_msecs\": %lld, \"system_msecs\": %lld, \"page_faults\": %zu, ",
              (long long)info->elapsed, (long long)info->utime, (long long)info->stime, info->page_faults);
  _mi_json_add(json, "\"rss_current\": %zu, \"rss_peak\": %zu, \"commit_current\": %zu, \"commit_peak\": %zu }",
              info->current_rss, info->peak_rss, info->current_commit, info->peak_commit);
#define MI_STAT_COUNT(name)    _mi_json_count(json, #name, &data->name);
#define MI_STAT_COUNTER(name)  _mi_json_add(json, ",\n  \"%s\": %lld", #name, (long long)data->name.total);
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  mi_json_bins(json, "malloc_bins", data->malloc_bins);
  mi_json_bins(json, "page_bins", data->page_bins);
  _mi_json_add(json, "\n}\n");
}

/* Each pass renders the figures of its own moment (the allocated buffer counts in the second). */
static void mi_stats_json_now(mi_json_t* json) {
  mi_stats_data_t data;
  mi_stats_snapshot(&data);
  mi_process_info_t info;
  _mi_process_info_get(&info);
  mi_stats_json(json, &data, &info);
}

/* The process document of this moment into buf (live.c); its length, which may exceed size
   (then buf holds a truncated prefix). */
size_t _mi_stats_json_now(char* buf, size_t size) {
  mi_json_t json = { buf, size, 0 };
  mi_stats_json_now(&json);
  if (json.len < size) buf[json.len] = 0;
  return json.len;
}

/* A document rendered by `render` into the caller's buffer, or (buf NULL or buf_size 0) into
   a new block of the calling thread's heap; NULL if it does not fit. Each pass renders the
   figures of its own moment, so the block is measured with room to spare. */
char* _mi_json_render(void (*render)(mi_json_t* json, void* arg), void* arg, size_t buf_size, char* buf) {
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
  return _mi_json_render(&mi_stats_json_render_now, NULL, buf_size, buf);
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
   of the figures and one reading of the process information. */
void _mi_stats_at_exit(void) {
  const bool print = (mi_option_is_enabled(mi_option_show_stats) || mi_option_is_enabled(mi_option_verbose));
  char path[1024];
  const bool json = (_mi_prim_getenv("MIMALLOC_STATS_JSON", path, sizeof(path)) && path[0] != 0);
  /* merge only for our own output: a later mi_stats_print or mi_stats_get merges the calling
     thread itself, and the merge would fault in the statistics pages of a process that exits */
  if (!print && !json) return;
  mi_stats_merge();
  mi_stats_data_t data;
  mi_stats_snapshot(&data);
  mi_process_info_t info;
  _mi_process_info_get(&info);
  if (print) _mi_stats_print_text(&data, &info, false, NULL, NULL);
  if (json) mi_stats_write_json_file(path, &data, &info);
}
