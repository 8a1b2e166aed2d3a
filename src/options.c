/* SPDX-License-Identifier: MIT */
/* Options (read lazily from MIMALLOC_<NAME> environment variables), message output through
   one small allocation-free formatter, error reporting and the deferred-free hook. */
#include "internal/base.h"
#include "internal/heap.h"   /* hook: _mi_thread_is_main (layers.py HOOKS) */
#include "internal/version.h"
#include "internal/limit.h"
#include "prim/prim.h"
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>

/* ---------------------------------------------------------------------------------------
   The option table, written once: value, default, state, name, legacy name.
--------------------------------------------------------------------------------------- */
typedef enum mi_init_e { MI_UNINIT, MI_DEFAULTED, MI_INITIALIZED } mi_init_t;

/* value and init are read by every thread (relaxed: plain moves on x86-64) and written at
   first use or by mi_option_set; a racing first read may parse the environment twice, with
   the same result. */
typedef struct mi_option_desc_s {
  _Atomic(long) value;
  _Atomic(int)  init;   /* mi_init_t */
  mi_option_t option;
  const char* name;
  const char* legacy_name;
  bool        is_kib;      /* size option stored in KiB */
  long        min;         /* every stored value lies in [min, max] (mi_option_clamp) */
  long        max;
} mi_option_desc_t;

/* Checked builds say what they caught by default: a secure build that ignores a double free
   or aborts on a corrupted free list without a word cannot be told from a crash. */
#if MI_DEBUG > 0 || MI_SECURE > 0
#define MI_DEFAULT_SHOW_ERRORS 1
#else
#define MI_DEFAULT_SHOW_ERRORS 0
#endif

/* Ranges: booleans 0..1; delays in ms up to a day (so delay * arena_purge_mult cannot
   overflow); sizes in KiB up to half the user address space; negative means "off/never/
   unlimited" where the option documents it (clamped to -1 unless any negative is meaningful). */
#define MI_MS_MAX     (24L*60*60*1000)
/* x bytes in KiB as a long, saturated at LONG_MAX (long has 32 bits on Windows) */
#define MI_KIB_LONG(x) ((x) / MI_KiB > (size_t)LONG_MAX ? LONG_MAX : (long)((x) / MI_KiB))
#define MI_KIB_MAX    MI_KIB_LONG(MI_MAX_ALLOC_SIZE / 2)
#define MI_OPT(value, option, name, legacy, is_kib, min, max) \
  { value, MI_UNINIT, mi_option_##option, name, legacy, is_kib, min, max }

/* mimalloc's options (numbered 0 .. _mi_option_last-1), then this implementation's own from
   MI_OPTION_EXT_FIRST on (mimalloc.h): the table index of an option is mi_option_index. */
#define MI_OPTION_EXT_COUNT  (5)
#define MI_OPTION_COUNT      (_mi_option_last + MI_OPTION_EXT_COUNT)

static mi_option_desc_t mi_options[MI_OPTION_COUNT] = {
  MI_OPT(MI_DEFAULT_SHOW_ERRORS, show_errors, "show_errors", NULL, false, 0, 1),
  MI_OPT(0,     show_stats, "show_stats", NULL, false, 0, 1),
  MI_OPT(0,     verbose, "verbose", NULL, false, 0, 2),
  MI_OPT(1,     eager_commit, "eager_commit", NULL, false, 0, 1),
  MI_OPT(2,     arena_eager_commit, "arena_eager_commit", "eager_region_commit", false, 0, 2),
  MI_OPT(1,     purge_decommits, "purge_decommits", "reset_decommits", false, 0, 1),
  MI_OPT(0,     allow_large_os_pages, "allow_large_os_pages", "large_os_pages", false, 0, 1),
  MI_OPT(0,     reserve_huge_os_pages, "reserve_huge_os_pages", NULL, false, 0, 128L*1024),
  MI_OPT(-1,    reserve_huge_os_pages_at, "reserve_huge_os_pages_at", NULL, false, -1, 1023),
  MI_OPT(0,     reserve_os_memory, "reserve_os_memory", NULL, true, 0, MI_KIB_MAX),
  MI_OPT(0,     deprecated_segment_cache, "deprecated_segment_cache", NULL, false, LONG_MIN, LONG_MAX),
  MI_OPT(0,     deprecated_page_reset, "deprecated_page_reset", NULL, false, LONG_MIN, LONG_MAX),
  MI_OPT(0,     abandoned_page_purge, "abandoned_page_purge", "abandoned_page_reset", false, 0, 1),
  MI_OPT(0,     deprecated_segment_reset, "deprecated_segment_reset", NULL, false, LONG_MIN, LONG_MAX),
  MI_OPT(1,     eager_commit_delay, "eager_commit_delay", NULL, false, 0, 1024),
  MI_OPT(10,    purge_delay, "purge_delay", "reset_delay", false, -1, MI_MS_MAX),
  MI_OPT(0,     use_numa_nodes, "use_numa_nodes", NULL, false, 0, 1024),
  MI_OPT(0,     disallow_os_alloc, "disallow_os_alloc", "limit_os_alloc", false, 0, 1),
  MI_OPT(100,   os_tag, "os_tag", NULL, false, LONG_MIN, LONG_MAX),   /* macOS: outside 100..255 means 254 */
  MI_OPT(32,    max_errors, "max_errors", NULL, false, LONG_MIN, LONG_MAX),     /* negative: unlimited */
  MI_OPT(32,    max_warnings, "max_warnings", NULL, false, LONG_MIN, LONG_MAX),
  MI_OPT(10,    max_segment_reclaim, "max_segment_reclaim", NULL, false, 0, 100),
  MI_OPT(0,     destroy_on_exit, "destroy_on_exit", NULL, false, 0, 2),
  MI_OPT(1024L*1024L, arena_reserve, "arena_reserve", NULL, true, 0, MI_KIB_MAX),
  MI_OPT(10,    arena_purge_mult, "arena_purge_mult", NULL, false, 0, 1000),
  MI_OPT(1,     purge_extend_delay, "purge_extend_delay", "decommit_extend_delay", false, 0, MI_MS_MAX),
  /* on: with pages owned one by one, a thread that frees an ended thread's blocks takes their
     page (its later frees are local); off, larson took 1.27 times as long (2026-11-26) */
  MI_OPT(1,     abandoned_reclaim_on_free, "abandoned_reclaim_on_free", NULL, false, 0, 1),
  MI_OPT(0,     disallow_arena_alloc, "disallow_arena_alloc", NULL, false, 0, 1),
  MI_OPT(400,   retry_on_oom, "retry_on_oom", NULL, false, 0, 2000),
  MI_OPT(0,     visit_abandoned, "visit_abandoned", NULL, false, 0, 1),
  MI_OPT(0,     guarded_min, "guarded_min", NULL, false, 0, LONG_MAX),
  MI_OPT(1024L*1024L*1024L, guarded_max, "guarded_max", NULL, false, 0, LONG_MAX),
  MI_OPT(0,     guarded_precise, "guarded_precise", NULL, false, 0, 1),
  MI_OPT(0,     guarded_sample_rate, "guarded_sample_rate", NULL, false, 0, LONG_MAX),
  MI_OPT(0,     guarded_sample_seed, "guarded_sample_seed", NULL, false, LONG_MIN, LONG_MAX),
  MI_OPT(0,     target_segments_per_thread, "target_segments_per_thread", NULL, false, 0, 1000000),
  MI_OPT(10000, generic_collect, "generic_collect", NULL, false, 1, 1000000),
  MI_OPT(1,     allow_thp, "allow_thp", NULL, false, 0, 1),
  /* this implementation's own (MI_OPTION_EXT_FIRST ..) */
  MI_OPT(0,     live, "live", NULL, false, 0, 1),
  MI_OPT(1000,  live_interval, "live_interval", NULL, false, 10, 60000),
  MI_OPT(1,     purge_thread, "purge_thread", NULL, false, 0, 1),
  /* sizes in KiB, or a share of the cgroup's limit as -percent (mi_option_has_pct): the
     default -100 is the cgroup's limit itself (src/limit.c) */
  MI_OPT(-100,  memory_limit, "memory_limit", NULL, true, -100, MI_KIB_MAX),
  MI_OPT(0,     memory_limit_hard, "memory_limit_hard", NULL, true, -100, MI_KIB_MAX),
};

/* A size option whose negative values are shares of the cgroup's limit ("90%" is -90). */
static bool mi_option_has_pct(const mi_option_desc_t* desc) {
  return (desc->is_kib && desc->min < 0);
}

/* The table index of an option, or -1 for a number that is no option. */
static int mi_option_index(mi_option_t option) {
  const int n = (int)option;
  if (n >= 0 && n < _mi_option_last) return n;
  if (n >= MI_OPTION_EXT_FIRST && n < MI_OPTION_EXT_FIRST + MI_OPTION_EXT_COUNT) return _mi_option_last + (n - MI_OPTION_EXT_FIRST);
  return -1;
}

static void mi_option_init(mi_option_desc_t* desc);
static void mi_env_check_entry(const char* entry, void* arg);
static void mi_vfprintf(const char* prefix, const char* fmt, va_list args);

void _mi_options_init(void) {
  if (!_mi_prim_env_may_have("MIMALLOC_")) {
    /* the common case, with no MIMALLOC_ variable: the options not set by the program keep
       their defaults (one pass over the environment instead of one or two per option) */
    for (int i = 0; i < MI_OPTION_COUNT; i++) {
      int expected = MI_UNINIT;
      mi_atomic_cas_strong_acq_rel(&mi_options[i].init, &expected, (int)MI_DEFAULTED);
    }
    return;
  }
  for (int i = 0; i < MI_OPTION_COUNT; i++) {
    long value = mi_option_get(mi_options[i].option);   /* reads the environment */
    (void)value;
  }
  (void)_mi_prim_env_visit(&mi_env_check_entry, NULL);
}

long mi_option_get(mi_option_t option) {
  const int i = mi_option_index(option);
  if (i < 0) return 0;
  mi_option_desc_t* desc = &mi_options[i];
  if (mi_unlikely(mi_atomic_load_acquire(&desc->init) == MI_UNINIT)) mi_option_init(desc);
  return mi_atomic_load_relaxed(&desc->value);
}

long mi_option_get_clamp(mi_option_t option, long min, long max) {
  long x = mi_option_get(option);
  return (x < min ? min : (x > max ? max : x));
}

size_t mi_option_get_size(mi_option_t option) {
  long x = mi_option_get(option);
  if (x < 0) return 0;
  size_t size = (size_t)x;
  const int i = mi_option_index(option);
  if (i >= 0 && mi_options[i].is_kib) {
    if (size > MI_MAX_ALLOC_SIZE / MI_KiB) return MI_MAX_ALLOC_SIZE;
    size *= MI_KiB;
  }
  return size;
}

static long mi_option_clamp(const mi_option_desc_t* desc, long value) {
  return (value < desc->min ? desc->min : (value > desc->max ? desc->max : value));
}

void mi_option_set(mi_option_t option, long value) {
  const int i = mi_option_index(option);
  if (i < 0) return;
  mi_option_desc_t* desc = &mi_options[i];
  value = mi_option_clamp(desc, value);
  mi_atomic_store_relaxed(&desc->value, value);
  mi_atomic_store_release(&desc->init, MI_INITIALIZED);
  if (option == mi_option_guarded_min && mi_option_get(mi_option_guarded_max) < value) {
    mi_option_set(mi_option_guarded_max, value);
  }
  else if (option == mi_option_guarded_max && mi_option_get(mi_option_guarded_min) > value) {
    mi_option_set(mi_option_guarded_min, value);
  }
  if (_mi_process_is_initialized) _mi_observe_option_set(option, value);   /* (before: at process start) */
}

void mi_option_set_default(mi_option_t option, long value) {
  const int i = mi_option_index(option);
  if (i < 0) return;
  mi_option_desc_t* desc = &mi_options[i];
  if (mi_atomic_load_relaxed(&desc->init) != MI_INITIALIZED) {
    mi_atomic_store_relaxed(&desc->value, mi_option_clamp(desc, value));   /* init stays: an environment value not read yet still wins */
  }
}

bool mi_option_is_enabled(mi_option_t option)                 { return (mi_option_get(option) != 0); }
void mi_option_set_enabled(mi_option_t option, bool enable)   { mi_option_set(option, enable ? 1 : 0); }
void mi_option_set_enabled_default(mi_option_t option, bool enable) { mi_option_set_default(option, enable ? 1 : 0); }
void mi_option_enable(mi_option_t option)                     { mi_option_set_enabled(option, true); }
void mi_option_disable(mi_option_t option)                    { mi_option_set_enabled(option, false); }

/* One line of mi_options_print_out: to `out` with the "mimalloc: " prefix, or as a message
   (the registered output, naming the thread) when `out` is NULL */
static void mi_options_line(mi_output_fun* out, void* arg, const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  _mi_vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  if (out == NULL) _mi_message("%s", buf);
  else _mi_fputs(out, arg, "mimalloc: ", buf);
}

void mi_options_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_options_line(out, arg, MI_VERSION_TEXT_FMT "; " MI_BUILD_NAME " build)\n", MI_VERSION_TEXT_ARGS);
  for (int i = 0; i < MI_OPTION_COUNT; i++) {
    const mi_option_desc_t* desc = &mi_options[i];
    const long value = mi_option_get(desc->option);
    if (mi_option_has_pct(desc) && value < 0) mi_options_line(out, arg, "option '%s': %ld%%\n", desc->name, -value);
    else mi_options_line(out, arg, "option '%s': %ld%s\n", desc->name, value, (desc->is_kib ? " KiB" : ""));
  }
  char limit[160];
  _mi_limit_describe(limit, sizeof(limit));
  mi_options_line(out, arg, "memory limit: %s\n", limit);
  mi_options_line(out, arg, "debug level : %d\n", MI_DEBUG);
  mi_options_line(out, arg, "secure level: %d\n", MI_SECURE);
  mi_options_line(out, arg, "mem tracking: " MI_TRACK_NAME "\n");
}

void mi_options_print(void) mi_attr_noexcept {
  mi_options_print_out(NULL, NULL);
}

static char mi_upper(char c) { return (c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c); }

/* Parse an environment value (the value syntax of the README's options section). Numbers
   that do not fit saturate at LONG_MIN/LONG_MAX; sizes in bytes saturate in KiB alike; the
   caller clamps to the option's range. */
static bool mi_option_parse(const char* s, bool is_kib, bool allow_pct, long* result) {
  char buf[65];
  size_t len = 0;
  while (s[len] != 0 && len < sizeof(buf) - 1) {
    buf[len] = mi_upper(s[len]);
    len++;
  }
  buf[len] = 0;
  if (len == 0 || strcmp(buf, "1") == 0 || strcmp(buf, "TRUE") == 0 || strcmp(buf, "YES") == 0 || strcmp(buf, "ON") == 0) {
    *result = 1;
    return true;
  }
  if (strcmp(buf, "0") == 0 || strcmp(buf, "FALSE") == 0 || strcmp(buf, "NO") == 0 || strcmp(buf, "OFF") == 0) {
    *result = 0;
    return true;
  }
  char* end = buf;
  long value = strtol(buf, &end, 10);
  if (end == buf) return false;
  if (allow_pct && *end == '%' && *(end+1) == 0) {   /* a share: -percent (0% is 0: off) */
    if (value < 0) return false;
    *result = -value;
    return true;
  }
  if (is_kib) {
    long mult = 0;   /* in KiB; 0 means bytes */
    if (*end == 'K') { mult = 1; end++; }
    else if (*end == 'M') { mult = 1024; end++; }
    else if (*end == 'G') { mult = 1024L*1024; end++; }
    else if (*end == 'T') { mult = 1024L*1024*1024; end++; }
    if (*end == 'I' && *(end+1) == 'B') end += 2;
    else if (*end == 'B') end++;
    if (value <= 0) { /* negative: out of range, reported by the caller */ }
    else if (mult == 0) value = (long)_mi_divide_up(((size_t)value > MI_MAX_ALLOC_SIZE ? MI_MAX_ALLOC_SIZE : (size_t)value), 1024);
    else if (value > MI_KIB_LONG(MI_MAX_ALLOC_SIZE) / mult) value = MI_KIB_LONG(MI_MAX_ALLOC_SIZE);
    else value *= mult;
  }
  if (*end != 0) return false;
  *result = value;
  return true;
}

/* A warning about the user's own settings: shown unless show_errors was explicitly set to 0
   (a mistyped or out-of-range setting silently ignored misleads), within max_warnings. */
static _Atomic(size_t) mi_warning_count;

void _mi_warning_always(const char* fmt, ...) {
  if (!mi_option_is_enabled(mi_option_verbose)) {   /* verbose shows every warning */
    const mi_option_desc_t* show = &mi_options[mi_option_show_errors];
    const long shown = mi_option_get(mi_option_show_errors);   /* read first: table order must not matter */
    if (shown == 0 && mi_atomic_load_acquire(&show->init) == MI_INITIALIZED) return;
    const long max = mi_option_get(mi_option_max_warnings);
    if (max >= 0 && mi_atomic_add_relaxed(&mi_warning_count, 1) >= (size_t)max) return;
  }
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: warning: ", fmt, args);
  va_end(args);
}

/* A boolean environment setting outside the option table (e.g. MIMALLOC_SHOW_LEAKS): the
   same value syntax; a malformed value warns and counts as off. */
bool _mi_option_env_flag(const char* name) {
  char value[65];
  if (!_mi_prim_getenv(name, value, sizeof(value))) return false;
  long result;
  if (!mi_option_parse(value, false, false, &result)) {
    _mi_warning_always("environment setting %s has an invalid value.\n", name);
    return false;
  }
  return (result != 0);
}

/* A value as the user writes it: sizes in the largest binary unit that divides them. */
static void mi_option_value_str(const mi_option_desc_t* desc, long value, char* buf, size_t size) {
  if (mi_option_has_pct(desc) && value < 0) { _mi_snprintf(buf, size, "%ld%%", -value); return; }
  if (!desc->is_kib || value <= 0) { _mi_snprintf(buf, size, "%ld", value); return; }
  static const char* const units[] = { "KiB", "MiB", "GiB", "TiB" };
  size_t u = 0;
  while (u < 3 && value % 1024 == 0) { value /= 1024; u++; }
  _mi_snprintf(buf, size, "%ld %s", value, units[u]);
}

/* "MIMALLOC_<NAME>" in upper case, as messages name a variable */
static void mi_env_name(char* buf, size_t size, const char* name) {
  _mi_snprintf(buf, size, "MIMALLOC_%s", name);
  for (size_t i = 0; i < size && buf[i] != 0; i++) buf[i] = mi_upper(buf[i]);
}

static void mi_option_init(mi_option_desc_t* desc) {
  char name[64];
  char value[65];
  mi_env_name(name, sizeof(name), desc->name);
  bool found = _mi_prim_getenv(name, value, sizeof(value));
  if (desc->legacy_name != NULL) {
    /* a legacy name works, but is reported like a typo (always): it is mimalloc's old
       spelling, and a user who set both should know which one counts */
    char legacy[64];
    char legacy_value[65];
    mi_env_name(legacy, sizeof(legacy), desc->legacy_name);
    if (_mi_prim_getenv(legacy, legacy_value, sizeof(legacy_value))) {
      if (found) {
        _mi_warning_always("environment option %s is deprecated and ignored: %s is set.\n", legacy, name);
      }
      else {
        _mi_warning_always("environment option %s is deprecated; use %s (its value is applied to it).\n", legacy, name);
        memcpy(value, legacy_value, sizeof(value));
        found = true;
      }
    }
  }
  if (found) {
    long result;
    if (mi_option_parse(value, desc->is_kib, mi_option_has_pct(desc), &result)) {
      const long clamped = mi_option_clamp(desc, result);
      mi_atomic_store_relaxed(&desc->value, clamped);
      mi_atomic_store_release(&desc->init, MI_INITIALIZED);   /* before warning: it reads options */
      if (clamped != result) {
        char lo[32], hi[32], used[32];
        mi_option_value_str(desc, desc->min, lo, sizeof(lo));
        mi_option_value_str(desc, desc->max, hi, sizeof(hi));
        mi_option_value_str(desc, clamped, used, sizeof(used));
        _mi_warning_always("environment option mimalloc_%s=%s is out of range (%s to %s); using %s.\n",
                           desc->name, value, lo, hi, used);
      }
    }
    else {
      mi_atomic_store_release(&desc->init, MI_DEFAULTED);
      _mi_warning_always("environment option mimalloc_%s has an invalid value.\n", desc->name);
    }
  }
  else if (_mi_process_is_initialized && _mi_prim_env_ready()) {
    mi_atomic_store_release(&desc->init, MI_DEFAULTED);   /* the environment was accessible: it is absent */
  }
}

/* ---------------------------------------------------------------------------------------
   Unknown MIMALLOC_ variables: a name close to a setting (MIMALLOC_SHOWSTATS) is a typo the
   user would never notice, so it is always reported; others only with show_errors/verbose.
--------------------------------------------------------------------------------------- */
static const char* mi_env_extra_names[] = {   /* settings read outside the option table */
  "SHOW_LEAKS", "STATS_JSON", "STATS_LAYOUT", "DISABLE_REDIRECT",
  "TEST_CGROUP_ROOT",   /* src/limit.c (tests) */
  "PROFILE", "PROFILE_RATE", "PROFILE_MAX", "PROFILE_DEPTH", "PROFILE_INTERVAL",   /* src/prof-samples.c */
#if MI_FAIL_INJECT
  "TEST_FAIL",   /* src/prim/failinject.c (test builds) */
#endif
};

/* Edit distance of a and b ignoring case and '_', capped at 3 (enough to tell a typo). */
static size_t mi_name_distance(const char* a, size_t alen, const char* b) {
  char x[64], y[64];
  size_t n = 0, m = 0;
  for (size_t i = 0; i < alen && n < sizeof(x); i++) if (a[i] != '_') x[n++] = mi_upper(a[i]);
  for (size_t i = 0; b[i] != 0 && m < sizeof(y); i++) if (b[i] != '_') y[m++] = mi_upper(b[i]);
  if ((n > m ? n - m : m - n) > 3) return 3;
  size_t row[65];
  for (size_t j = 0; j <= m; j++) row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      const size_t up = row[j];
      size_t best = diag + (x[i-1] == y[j-1] ? 0 : 1);
      if (up + 1 < best) best = up + 1;
      if (row[j-1] + 1 < best) best = row[j-1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return (row[m] < 3 ? row[m] : 3);
}

static bool mi_name_equals(const char* a, size_t alen, const char* b) {
  size_t i = 0;
  for (; i < alen && b[i] != 0; i++) if (mi_upper(a[i]) != mi_upper(b[i])) return false;
  return (i == alen && b[i] == 0);
}

static void mi_env_check_entry(const char* entry, void* arg) {
  (void)arg;
  static const char prefix[] = "MIMALLOC_";
  for (size_t i = 0; i < sizeof(prefix) - 1; i++) {
    if (mi_upper(entry[i]) != prefix[i]) return;
  }
  const char* name = entry + sizeof(prefix) - 1;
  size_t len = 0;
  while (name[len] != 0 && name[len] != '=') len++;
  char shown[64];
  _mi_snprintf(shown, sizeof(shown), "%s", entry);
  for (size_t i = 0; i < sizeof(shown) && shown[i] != 0; i++) if (shown[i] == '=') { shown[i] = 0; break; }
  /* mimalloc's retired options (MIMALLOC_PAGE_RESET, _SEGMENT_CACHE, _SEGMENT_RESET) are now
     the placeholders deprecated_<name>: the old name does nothing, which the user must learn */
  static const char retired[] = "deprecated_";
  for (size_t k = 0; k < MI_OPTION_COUNT; k++) {
    const char* known = mi_options[k].name;
    if (strncmp(known, retired, sizeof(retired) - 1) == 0 && mi_name_equals(name, len, known + sizeof(retired) - 1)) {
      _mi_warning_always("environment option %s is deprecated and has no effect (ignored).\n", shown);
      return;
    }
  }
  const char* closest = NULL;
  size_t closest_dist = 3;
  for (size_t k = 0; k < 2 * MI_OPTION_COUNT + sizeof(mi_env_extra_names) / sizeof(mi_env_extra_names[0]); k++) {
    const char* known = (k < MI_OPTION_COUNT ? mi_options[k].name
                         : k < 2 * MI_OPTION_COUNT ? mi_options[k - MI_OPTION_COUNT].legacy_name
                         : mi_env_extra_names[k - 2 * MI_OPTION_COUNT]);
    if (known == NULL) continue;
    if (mi_name_equals(name, len, known)) return;
    const size_t d = mi_name_distance(name, len, known);
    if (d < closest_dist) { closest_dist = d; closest = known; }
  }
  /* a typo: distance 1 for short names, 2 for longer ones (distance 0: only '_' or case differ) */
  const size_t limit = (len <= 6 ? 1 : 2);
  if (closest != NULL && closest_dist <= limit) {
    char suggestion[64];
    mi_env_name(suggestion, sizeof(suggestion), closest);
    _mi_warning_always("environment variable %s is not a setting of this allocator (ignored); did you mean %s?\n", shown, suggestion);
  }
  else {
    _mi_warning_message("environment variable %s is not a setting of this allocator (ignored).\n", shown);
  }
}

/* ---------------------------------------------------------------------------------------
   Output: a registered function or stderr. Until a function is registered, output is also
   kept in a 16 KiB buffer that is replayed to the first function registered.
--------------------------------------------------------------------------------------- */
#define MI_OUT_BUF_SIZE  (16*1024)
static mi_decl_cold_bss char mi_out_buf[MI_OUT_BUF_SIZE + 1];
static _Atomic(size_t)    mi_out_len;
static mi_output_fun* _Atomic mi_out_fun;
static void* _Atomic      mi_out_arg;

static void mi_out_buf_append(const char* msg) {
  size_t n = strlen(msg);
  size_t start = mi_atomic_add_relaxed(&mi_out_len, n);
  if (start >= MI_OUT_BUF_SIZE) return;
  if (start + n > MI_OUT_BUF_SIZE) n = MI_OUT_BUF_SIZE - start;
  memcpy(&mi_out_buf[start], msg, n);
}

static void mi_out_default(const char* msg, void* arg) {
  (void)arg;
  mi_out_buf_append(msg);
  _mi_prim_out_stderr(msg);
}

void mi_register_output(mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_atomic_store_release(&mi_out_arg, arg);
  mi_atomic_store_release(&mi_out_fun, out);
  if (out != NULL) {
    size_t len = mi_atomic_exchange_acq_rel(&mi_out_len, MI_OUT_BUF_SIZE);   /* stop buffering */
    if (len > MI_OUT_BUF_SIZE) len = MI_OUT_BUF_SIZE;
    if (len > 0) {
      mi_out_buf[len] = 0;
      out(mi_out_buf, arg);
    }
  }
}

void _mi_fputs(mi_output_fun* out, void* arg, const char* prefix, const char* message) {
  if (out == NULL) {
    out = mi_atomic_load_acquire(&mi_out_fun);
    arg = mi_atomic_load_acquire(&mi_out_arg);
    if (out == NULL) out = &mi_out_default;
  }
  if (prefix != NULL && prefix[0] != 0) {
    char buf[512];
    _mi_snprintf(buf, sizeof(buf), "%s%s", prefix, message);
    out(buf, arg);
  }
  else {
    out(message, arg);
  }
}

/* Messages from threads other than the main one name the thread after the prefix. */
static void mi_vfprintf(const char* prefix, const char* fmt, va_list args) {
  char buf[512];
  _mi_vsnprintf(buf, sizeof(buf), fmt, args);
  if (!_mi_thread_is_main()) {
    char tprefix[64];
    _mi_snprintf(tprefix, sizeof(tprefix), "%sthread 0x%zx: ", prefix, (size_t)_mi_thread_id());
    _mi_fputs(NULL, NULL, tprefix, buf);
    return;
  }
  _mi_fputs(NULL, NULL, prefix, buf);
}

void _mi_message(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: ", fmt, args);
  va_end(args);
}

void _mi_verbose_message(const char* fmt, ...) {
  if (!mi_option_is_enabled(mi_option_verbose)) return;
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: ", fmt, args);
  va_end(args);
}

void _mi_trace_message(const char* fmt, ...) {
  if (mi_option_get(mi_option_verbose) < 2) return;
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: ", fmt, args);
  va_end(args);
}

static _Atomic(size_t) mi_error_count;

static bool mi_should_show(_Atomic(size_t)* count, mi_option_t max_option) {
  if (mi_option_is_enabled(mi_option_verbose)) return true;
  if (!mi_option_is_enabled(mi_option_show_errors)) return false;
  long max = mi_option_get(max_option);
  if (max < 0) return true;
  return (mi_atomic_add_relaxed(count, 1) < (size_t)max);
}

void _mi_warning_message(const char* fmt, ...) {
  if (!mi_should_show(&mi_warning_count, mi_option_max_warnings)) return;
  va_list args;
  va_start(args, fmt);
  mi_vfprintf("mimalloc: warning: ", fmt, args);
  va_end(args);
}

static mi_error_fun* _Atomic mi_error_handler;
static void* _Atomic         mi_error_arg;

void mi_register_error(mi_error_fun* fun, void* arg) {
  mi_atomic_store_release(&mi_error_arg, arg);
  mi_atomic_store_release(&mi_error_handler, fun);
}

void _mi_error_message(int err, const char* fmt, ...) {
  mi_error_fun* handler = mi_atomic_load_acquire(&mi_error_handler);
  /* corrupted metadata: checked builds do not continue without a handler that decides */
  const bool fatal = ((MI_DEBUG > 0 || MI_SECURE > 0) && err == EFAULT && handler == NULL);
  /* the reason for an abort is shown beyond max_errors (only show_errors=0 silences it) */
  const bool show = mi_should_show(&mi_error_count, mi_option_max_errors)
                    || (fatal && mi_option_is_enabled(mi_option_show_errors));
  if (show) {
    va_list args;
    va_start(args, fmt);
    mi_vfprintf("mimalloc: error: ", fmt, args);
    va_end(args);
  }
  if (handler != NULL) {
    handler(err, mi_atomic_load_acquire(&mi_error_arg));
  }
  else if (fatal) {
    if (show) _mi_message("aborting: the heap is corrupted (the error above); a handler registered with mi_register_error would decide instead\n");
    abort();
  }
}

#if MI_DEBUG > 0
void _mi_assert_fail(const char* assertion, const char* fname, unsigned line, const char* func) {
  _mi_fputs(NULL, NULL, NULL, "");
  _mi_message("assertion failed: at \"%s\":%u, %s: \"%s\"\n", fname, line, (func == NULL ? "" : func), assertion);
  abort();
}
#endif

/* ---------------------------------------------------------------------------------------
   The deferred-free hook: called about every 100 slow-path allocations, and on collect.
--------------------------------------------------------------------------------------- */
static mi_deferred_free_fun* _Atomic mi_deferred_free_fn;
static void* _Atomic                 mi_deferred_free_arg;

void mi_register_deferred_free(mi_deferred_free_fun* fn, void* arg) mi_attr_noexcept {
  mi_atomic_store_release(&mi_deferred_free_arg, arg);
  mi_atomic_store_release(&mi_deferred_free_fn, fn);
}

void _mi_options_deferred_free(mi_heap_t* heap, bool force) {
  mi_tld_t* tld = heap->tld;
  mi_deferred_free_fun* fn = mi_atomic_load_relaxed(&mi_deferred_free_fn);
  if (mi_likely(fn == NULL)) return;
  if (!force && (tld->heartbeat % 100) != 0) return;
  if (tld->recurse) return;
  tld->recurse = true;
  static _Atomic(unsigned long long) calls;
  fn(force, mi_atomic_add_relaxed(&calls, 1) + 1, mi_atomic_load_acquire(&mi_deferred_free_arg));
  tld->recurse = false;
}

/* ---------------------------------------------------------------------------------------
   A small vsnprintf: %s %c %d %i %u %x %X %p %%, with l/ll/z length, width and '0'/'-'
   flags. Never allocates; always NUL-terminates; returns the number of characters written.
--------------------------------------------------------------------------------------- */
static void mi_out_char(char** out, char* end, char c) {
  if (*out < end) { **out = c; (*out)++; }
}

static void mi_out_str(char** out, char* end, const char* s, size_t width, bool left, char fill) {
  size_t len = strlen(s);
  if (!left) for (size_t i = len; i < width; i++) mi_out_char(out, end, fill);
  while (*s != 0) mi_out_char(out, end, *s++);
  if (left) for (size_t i = len; i < width; i++) mi_out_char(out, end, ' ');
}

static void mi_out_num(char** out, char* end, uintptr_t x, unsigned base, bool upper, bool neg, size_t width, bool left, char fill) {
  char digits[24];
  size_t n = 0;
  const char* set = (upper ? "0123456789ABCDEF" : "0123456789abcdef");
  do { digits[n++] = set[x % base]; x /= base; } while (x != 0 && n < sizeof(digits) - 1);
  char buf[28];
  size_t k = 0;
  if (neg) buf[k++] = '-';
  while (n > 0) buf[k++] = digits[--n];
  buf[k] = 0;
  mi_out_str(out, end, buf, width, left, fill);
}

int _mi_vsnprintf(char* buf, size_t bufsize, const char* fmt, va_list args) {
  if (buf == NULL || bufsize == 0) return 0;
  char* out = buf;
  char* end = buf + bufsize - 1;
  for (const char* f = fmt; *f != 0; f++) {
    if (*f != '%') { mi_out_char(&out, end, *f); continue; }
    f++;
    bool left = false;
    char fill = ' ';
    if (*f == '-') { left = true; f++; }
    if (*f == '0') { fill = '0'; f++; }
    size_t width = 0;
    while (*f >= '0' && *f <= '9') { width = width*10 + (size_t)(*f - '0'); f++; }
    int lng = 0;
    bool zsize = false;
    while (*f == 'l') { lng++; f++; }
    if (*f == 'z') { zsize = true; f++; }
    const char c = *f;
    if (c == 0) break;
    switch (c) {
      case '%': mi_out_char(&out, end, '%'); break;
      case 'c': mi_out_char(&out, end, (char)va_arg(args, int)); break;
      case 's': {
        const char* s = va_arg(args, const char*);
        mi_out_str(&out, end, (s == NULL ? "(null)" : s), width, left, ' ');
        break;
      }
      case 'p': {
        uintptr_t x = (uintptr_t)va_arg(args, void*);
        mi_out_str(&out, end, "0x", 0, false, ' ');
        mi_out_num(&out, end, x, 16, false, false, width, left, fill);
        break;
      }
      case 'd': case 'i': {
        intptr_t x;
        if (zsize) x = (intptr_t)va_arg(args, ptrdiff_t);
        else if (lng >= 2) x = (intptr_t)va_arg(args, long long);
        else if (lng == 1) x = (intptr_t)va_arg(args, long);
        else x = (intptr_t)va_arg(args, int);
        const bool neg = (x < 0);
        mi_out_num(&out, end, (neg ? (uintptr_t)(-(x + 1)) + 1 : (uintptr_t)x), 10, false, neg, width, left, fill);
        break;
      }
      case 'u': case 'x': case 'X': {
        uintptr_t x;
        if (zsize) x = (uintptr_t)va_arg(args, size_t);
        else if (lng >= 2) x = (uintptr_t)va_arg(args, unsigned long long);
        else if (lng == 1) x = (uintptr_t)va_arg(args, unsigned long);
        else x = (uintptr_t)va_arg(args, unsigned int);
        mi_out_num(&out, end, x, (c == 'u' ? 10 : 16), (c == 'X'), false, width, left, fill);
        break;
      }
      default:
        mi_out_char(&out, end, '%');
        mi_out_char(&out, end, c);
        break;
    }
  }
  *out = 0;
  return (int)(out - buf);
}

int _mi_snprintf(char* buf, size_t bufsize, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int n = _mi_vsnprintf(buf, bufsize, fmt, args);
  va_end(args);
  return n;
}
