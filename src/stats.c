/* Statistics and process information. This version reports process figures from the OS
   (elapsed, CPU times, RSS, faults); the per-heap counters and the full mimalloc statistics
   layout are the subject of the options/statistics issue (#4) and are reported as absent
   rather than as zeros that look real. */
#include "internal/internal.h"
#include "prim/prim.h"
#include "mimalloc-stats.h"

mi_msecs_t _mi_process_elapsed(void);

static void mi_process_info_get(mi_process_info_t* info) {
  memset(info, 0, sizeof(*info));
  info->elapsed = _mi_process_elapsed();
  _mi_prim_process_info(info);
  info->current_commit = info->current_rss;
  info->peak_commit = info->peak_rss;
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

void mi_stats_reset(void) mi_attr_noexcept {
  /* no heap counters are kept in this version (issue #4) */
}

void mi_stats_merge(void) mi_attr_noexcept {
  /* no heap counters are kept in this version (issue #4) */
}

static void mi_print_amount(char* buf, size_t size, size_t n) {
  if (n < 1024) { _mi_snprintf(buf, size, "%zu B", n); return; }
  const char* unit = "KiB";
  size_t div = 1024;
  if (n >= MI_GiB) { unit = "GiB"; div = MI_GiB; }
  else if (n >= MI_MiB) { unit = "MiB"; div = MI_MiB; }
  const size_t tenths = n / (div / 10);
  _mi_snprintf(buf, size, "%zu.%zu %s", tenths / 10, tenths % 10, unit);
}

void mi_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_process_info_t info;
  mi_process_info_get(&info);
  char line[256], rss[32], peak[32];
  _mi_fputs(out, arg, NULL, "heap stats: not available in this version (per-heap counters come with issue #4)\n");
  _mi_snprintf(line, sizeof(line), "   elapsed: %5lld.%03lld s\n", (long long)(info.elapsed / 1000), (long long)(info.elapsed % 1000));
  _mi_fputs(out, arg, NULL, line);
  mi_print_amount(rss, sizeof(rss), info.current_rss);
  mi_print_amount(peak, sizeof(peak), info.peak_rss);
  _mi_snprintf(line, sizeof(line), "   process: user: %lld.%03lld s, system: %lld.%03lld s, faults: %zu, rss: %s, peak rss: %s\n",
               (long long)(info.utime / 1000), (long long)(info.utime % 1000),
               (long long)(info.stime / 1000), (long long)(info.stime % 1000),
               info.page_faults, rss, peak);
  _mi_fputs(out, arg, NULL, line);
}

void mi_stats_print(void* out) mi_attr_noexcept {
  mi_stats_print_out((mi_output_fun*)out, NULL);
}

void mi_thread_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_stats_print_out(out, arg);
}

bool mi_stats_get(mi_stats_t* stats) mi_attr_noexcept {
  (void)stats;
  return false;   /* no heap counters in this version (issue #4) */
}

char* mi_stats_get_json(size_t buf_size, char* buf) mi_attr_noexcept {
  mi_process_info_t info;
  mi_process_info_get(&info);
  char tmp[512];
  int n = _mi_snprintf(tmp, sizeof(tmp),
    "{ \"stat_version\": %d, \"mimalloc_version\": %d, \"process\": { \"elapsed_msecs\": %lld, \"user_msecs\": %lld, "
    "\"system_msecs\": %lld, \"page_faults\": %zu, \"rss_current\": %zu, \"rss_peak\": %zu, \"commit_current\": %zu, "
    "\"commit_peak\": %zu } }",
    MI_STAT_VERSION, MI_MALLOC_VERSION, (long long)info.elapsed, (long long)info.utime, (long long)info.stime,
    info.page_faults, info.current_rss, info.peak_rss, info.current_commit, info.peak_commit);
  if (buf == NULL || buf_size == 0) {
    buf = (char*)mi_malloc((size_t)n + 1);
    if (buf == NULL) return NULL;
    buf_size = (size_t)n + 1;
  }
  if ((size_t)n + 1 > buf_size) return NULL;
  memcpy(buf, tmp, (size_t)n + 1);
  return buf;
}
