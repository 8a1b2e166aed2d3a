/* SPDX-License-Identifier: MIT */
/* The soft memory limit (docs/memory.md, "The memory limit"): which limit is in force and where
   it comes from. MIMALLOC_MEMORY_LIMIT (mi_option_memory_limit) is an amount in KiB, 0 (off) or
   a share of the process's cgroup (or job object) limit stored as -percent; the default, -100,
   is that limit itself:
   - cgroup v2: the least of memory.high and memory.max of the process's cgroup (the `0::/path`
     line of /proc/self/cgroup, under /sys/fs/cgroup) and of each cgroup above it (a slice's
     limit binds its children; a container's own cgroup is the root of its namespace, whose files
     are read last); high normally lies below max, so it is the one used when both are set;
   - else cgroup v1: the least memory.limit_in_bytes of the memory controller's path and those
     above it (under /sys/fs/cgroup/memory);
   - "max", a missing file, anything but a decimal number, 0 and values from 2^60 up (v1 writes
     2^63 - 4096 for "no limit") mean no limit at that level;
   - Windows: the job object the process is in (_mi_prim_job_limits), the lesser of its
     per-process and its whole-job memory limit (both count committed memory, like ours; the
     job's is shared with the job's other processes, as a cgroup's is).
   The files are read on first need (not at start-up: a short process pays nothing) and again
   when the last read is MI_LIMIT_REREAD_MS old (a container's limit can change): by whoever
   asks, which is the purger's thread, the statistics and mi_memory_limit; never a fast path.
   Reading is open/read/close into stack buffers (_mi_prim_read_file), parsing by hand: no
   allocation. MIMALLOC_TEST_CGROUP_ROOT (tests) names a directory read in place of `/`, holding
   proc/self/cgroup and sys/fs/cgroup/..., so tests build v1 and v2 layouts without privileges. */
#include "internal/limit.h"
#include "internal/base.h"
#include "prim/prim.h"
#include <limits.h>
#include <string.h>

typedef enum mi_limit_source_e {
  MI_LIMIT_SRC_NONE,       /* no cgroup limit found */
  MI_LIMIT_SRC_CG2_HIGH,   /* cgroup v2 memory.high */
  MI_LIMIT_SRC_CG2_MAX,    /* cgroup v2 memory.max */
  MI_LIMIT_SRC_CG1,        /* cgroup v1 memory.limit_in_bytes */
  MI_LIMIT_SRC_JOB_PROCESS,/* Windows: the job object's per-process memory limit */
  MI_LIMIT_SRC_JOB         /* Windows: the job object's memory limit (all its processes) */
} mi_limit_source_t;

static const char* const mi_limit_source_names[] = {
#if defined(_WIN32)
  "no job memory limit",
#else
  "no cgroup limit",
#endif
  "cgroup v2 memory.high", "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes",
  "job object process memory limit", "job object job memory limit"
};

#define MI_LIMIT_PATH_MAX   (512)
#define MI_LIMIT_DEPTH_MAX  (32)                   /* levels of cgroups read above the process's */
#define MI_LIMIT_NONE_FROM  ((uint64_t)1 << 60)    /* a value this large means no limit */

static _Atomic(size_t)     mi_limit_cgroup;       /* the cgroup's limit in bytes, 0: none */
static _Atomic(int)        mi_limit_cgroup_src;   /* mi_limit_source_t */
static _Atomic(mi_msecs_t) mi_limit_read_at;      /* when the files were read last (0: never) */
static _Atomic(size_t)     mi_limit_pressure;     /* starts of pressing, and purger passes, for the limit */
static _Atomic(size_t)     mi_limit_shown;        /* the limit last said in a verbose message (+1) */
static _Atomic(size_t)     mi_limit_refused;      /* commits the hard limit refused */
_Atomic(size_t)            _mi_limit_watch_at;    /* (limit.h; 0: the first commit computes it) */

/* A cgroup value: decimal digits, then at most white space. False for "max" and odd values. */
static bool mi_limit_parse(const char* s, size_t* bytes) {
  uint64_t v = 0;
  size_t digits = 0;
  for (; *s >= '0' && *s <= '9'; s++, digits++) {
    if (v >= MI_LIMIT_NONE_FROM) return false;   /* (before it could overflow) */
    v = v * 10 + (uint64_t)(*s - '0');
  }
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  if (digits == 0 || *s != 0 || v == 0 || v >= MI_LIMIT_NONE_FROM || v > (uint64_t)SIZE_MAX) return false;
  *bytes = (size_t)v;
  return true;
}

static bool mi_limit_read_value(const char* path, size_t* bytes) {
  char buf[64];
  size_t len = 0;
  if (_mi_prim_read_file(path, buf, sizeof(buf), &len) != 0) return false;
  return mi_limit_parse(buf, bytes);
}

/* The cgroup path of the v2 line (`0::/path`) or of the v1 line whose controllers include
   `memory`, from the text of /proc/self/cgroup; false if there is none or it does not fit. */
static bool mi_limit_cgroup_path(const char* text, bool v1, char* path, size_t size) {
  for (const char* line = text; *line != 0; ) {
    const char* end = line;
    while (*end != 0 && *end != '\n') end++;
    const char* c1 = line;
    while (c1 < end && *c1 != ':') c1++;
    const char* c2 = (c1 < end ? c1 + 1 : end);
    while (c2 < end && *c2 != ':') c2++;
    bool match = false;
    if (c2 < end) {
      if (!v1) match = (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1);
      for (const char* w = c1 + 1; v1 && w < c2 && !match; ) {   /* a comma-separated list */
        const char* we = w;
        while (we < c2 && *we != ',') we++;
        match = (we - w == 6 && strncmp(w, "memory", 6) == 0);
        w = we + 1;
      }
    }
    if (match && c2[1] == '/' && (size_t)(end - c2) <= size) {
      size_t n = (size_t)(end - c2 - 1);
      memcpy(path, c2 + 1, n);
      while (n > 1 && path[n - 1] == '/') n--;   /* (a trailing '/') */
      path[n] = 0;
      return true;
    }
    line = (*end == 0 ? end : end + 1);
  }
  return false;
}

/* dst = a b c d; false (dst "") when that does not fit. (Not _mi_snprintf: the detection runs
   in most programs, and the formatter's code would join the functions they all run.) */
static bool mi_limit_path(char* dst, size_t size, const char* a, const char* b, const char* c, const char* d) {
  const char* const parts[4] = { a, b, c, d };
  size_t n = 0;
  for (size_t i = 0; i < 4; i++) {
    const size_t len = strlen(parts[i]);
    if (len >= size - n) { dst[0] = 0; return false; }
    memcpy(dst + n, parts[i], len);
    n += len;
  }
  dst[n] = 0;
  return true;
}

/* The least value of `file` in the cgroup `cgpath` under `mount` and in each cgroup above it
   (0: none anywhere). */
static size_t mi_limit_walk(const char* mount, const char* cgpath, const char* file) {
  char dir[MI_LIMIT_PATH_MAX];
  if (!mi_limit_path(dir, sizeof(dir) - 1, cgpath, "", "", "")) return 0;   /* (too long: not a path of ours) */
  size_t len = strlen(dir);
  size_t least = 0;
  for (int depth = 0; depth < MI_LIMIT_DEPTH_MAX; depth++) {
    while (len > 0 && dir[len - 1] == '/') dir[--len] = 0;   /* "/" is the mount's root: "" */
    char path[MI_LIMIT_PATH_MAX];
    size_t v = 0;
    if (mi_limit_path(path, sizeof(path), mount, dir, "/", file) && mi_limit_read_value(path, &v) && (least == 0 || v < least)) least = v;
    if (len == 0) break;
    while (len > 0 && dir[len - 1] != '/') dir[--len] = 0;   /* up one level */
  }
  return least;
}

/* Read the cgroup's limit (0: none) and where it comes from. */
static size_t mi_limit_detect(mi_limit_source_t* source) {
  *source = MI_LIMIT_SRC_NONE;
  size_t per_process = 0, job = 0;
  if (_mi_prim_job_limits(&per_process, &job) && (per_process != 0 || job != 0)) {   /* Windows */
    const bool least_is_job = (job != 0 && (per_process == 0 || job < per_process));
    *source = (least_is_job ? MI_LIMIT_SRC_JOB : MI_LIMIT_SRC_JOB_PROCESS);
    return (least_is_job ? job : per_process);
  }
  char root[256];
  if (!_mi_prim_getenv("MIMALLOC_TEST_CGROUP_ROOT", root, sizeof(root))) root[0] = 0;
  char path[MI_LIMIT_PATH_MAX];
  char text[4096];   /* /proc/self/cgroup: a line per v1 hierarchy, a few hundred bytes */
  size_t len = 0;
  if (!mi_limit_path(path, sizeof(path), root, "/proc/self/cgroup", "", "")) return 0;
  if (_mi_prim_read_file(path, text, sizeof(text), &len) != 0) return 0;
  char cgpath[MI_LIMIT_PATH_MAX];
  char mount[MI_LIMIT_PATH_MAX];
  if (mi_limit_cgroup_path(text, false, cgpath, sizeof(cgpath))) {
    mi_limit_path(mount, sizeof(mount), root, "/sys/fs/cgroup", "", "");   /* (root is short: it fits) */
    const size_t high = mi_limit_walk(mount, cgpath, "memory.high");
    const size_t max = mi_limit_walk(mount, cgpath, "memory.max");
    if (high != 0 && (max == 0 || high <= max)) { *source = MI_LIMIT_SRC_CG2_HIGH; return high; }
    if (max != 0) { *source = MI_LIMIT_SRC_CG2_MAX; return max; }
  }
  if (mi_limit_cgroup_path(text, true, cgpath, sizeof(cgpath))) {   /* v1, or a hybrid layout */
    mi_limit_path(mount, sizeof(mount), root, "/sys/fs/cgroup/memory", "", "");
    const size_t limit = mi_limit_walk(mount, cgpath, "memory.limit_in_bytes");
    if (limit != 0) { *source = MI_LIMIT_SRC_CG1; return limit; }
  }
  return 0;
}

/* "300 MiB" in the largest unit that divides the amount exactly (tests compare bytes). */
static void mi_limit_fmt(char* buf, size_t size, size_t bytes) {
  if (bytes != 0 && bytes % MI_GiB == 0) _mi_snprintf(buf, size, "%zu GiB", bytes / MI_GiB);
  else if (bytes != 0 && bytes % MI_MiB == 0) _mi_snprintf(buf, size, "%zu MiB", bytes / MI_MiB);
  else if (bytes != 0 && bytes % MI_KiB == 0) _mi_snprintf(buf, size, "%zu KiB", bytes / MI_KiB);
  else _mi_snprintf(buf, size, "%zu B", bytes);
}

/* An option's value in bytes: KiB, or -percent of the cgroup's limit; 0: none. */
static size_t mi_limit_of(long value, size_t cgroup) {
  if (value == 0) return 0;
  if (value > 0) return ((size_t)value > SIZE_MAX / MI_KiB ? SIZE_MAX : (size_t)value * MI_KiB);
  const size_t pct = (size_t)(-value);
  return (cgroup / 100) * pct + ((cgroup % 100) * pct) / 100;
}

/* Read the cgroup's files when due (or never read), one thread at a time: the one whose CAS
   moves the time of the last read on reads; another that asks meanwhile takes the figures of
   the last read (none yet, for a few microseconds, at the very first). No lock: a fork in the
   middle of a read leaves the child nothing held. */
static void mi_limit_refresh(void) {
  const mi_msecs_t now = _mi_prim_clock_now();
  mi_msecs_t last = mi_atomic_load_acquire(&mi_limit_read_at);
  if (last != 0 && now - last < MI_LIMIT_REREAD_MS) return;
  if (!mi_atomic_cas_strong_acq_rel(&mi_limit_read_at, &last, (now == 0 ? 1 : now))) return;
  mi_limit_source_t source;
  const size_t limit = mi_limit_detect(&source);
  mi_atomic_store_relaxed(&mi_limit_cgroup_src, (int)source);
  mi_atomic_store_release(&mi_limit_cgroup, limit);
}

/* The limit in bytes that option `value` gives, reading the cgroup only for a share. 1 (what
   "on", "yes" and an empty value parse to) is the cgroup's limit, not 1 KiB. */
static size_t mi_limit_from_option(long value) {
  if (value == 1) value = -100;
  if (value >= 0) return mi_limit_of(value, 0);
  mi_limit_refresh();
  return mi_limit_of(value, mi_atomic_load_relaxed(&mi_limit_cgroup));
}

size_t _mi_limit_get(void) {
  const size_t limit = mi_limit_from_option(mi_option_get(mi_option_memory_limit));
  size_t shown = mi_atomic_load_relaxed(&mi_limit_shown);
  if (shown != 0 && shown != limit + 1 && mi_atomic_cas_strong_acq_rel(&mi_limit_shown, &shown, limit + 1)) {
    char buf[160];   /* a container's limit changed: said once per change */
    _mi_limit_describe(buf, sizeof(buf));
    _mi_verbose_message("memory limit changed: %s\n", buf);
  }
  return limit;
}

size_t _mi_limit_hard_get(void) {
  const long value = mi_option_get(mi_option_memory_limit_hard);
  if (value == 1) return _mi_limit_get();   /* "on": the soft limit is also the hard one */
  return mi_limit_from_option(value);
}

size_t _mi_limit_committed(void) {
  const int64_t committed = __atomic_load_n(&_mi_stats_main.committed.current, __ATOMIC_RELAXED);
  return (committed < 0 ? 0 : (size_t)committed);
}

_Atomic(size_t) _mi_limit_pressing;

/* The marks as last computed: the hard limit (SIZE_MAX: none) and the near mark, MI_LIMIT_NEAR_PCT
   of the soft limit or of the hard one when that is lower (SIZE_MAX: no limit; 0: not yet). */
static _Atomic(size_t) mi_limit_near_at;
_Atomic(size_t) _mi_limit_hard_at = SIZE_MAX;
static _Atomic(mi_msecs_t) mi_limit_pressed_at;   /* when the flag was last set (or confirmed) */

/* The watch: the hard limit, and the near mark while not pressing (MI_LIMIT_FIRST_LOOK until the
   soft limit is known: a short process never reads the cgroup's files). */
static void mi_limit_watch_set(void) {
  size_t watch = mi_atomic_load_relaxed(&_mi_limit_hard_at);
  const size_t near_at = mi_atomic_load_relaxed(&mi_limit_near_at);
  const size_t soft = (near_at == 0 ? MI_LIMIT_FIRST_LOOK : near_at);
  if (!_mi_limit_is_pressing() && soft < watch) watch = soft;
  mi_atomic_store_relaxed(&_mi_limit_watch_at, watch);
}

void _mi_limit_pressing_set(bool on) {
  if (on) mi_atomic_store_relaxed(&mi_limit_pressed_at, _mi_prim_clock_now());
  if ((mi_atomic_load_relaxed(&_mi_limit_pressing) != 0) != on) {
    mi_atomic_store_relaxed(&_mi_limit_pressing, on ? 1 : 0);
    mi_limit_watch_set();
  }
}

/* Compute both marks from the options (and the cgroup when due), and the watch. For the watch
   (not `any_time`), a soft limit of the cgroup's is read only from MI_LIMIT_FIRST_LOOK. */
static void mi_limit_marks_update(bool any_time) {
  const size_t hard = (mi_option_get(mi_option_memory_limit_hard) == 0 ? 0 : _mi_limit_hard_get());
  mi_atomic_store_relaxed(&_mi_limit_hard_at, hard == 0 ? SIZE_MAX : hard);
  const long soft_opt = mi_option_get(mi_option_memory_limit);
  const bool reads_cgroup = (soft_opt < 0 || soft_opt == 1);
  if (any_time || !reads_cgroup || _mi_limit_committed() >= MI_LIMIT_FIRST_LOOK || mi_atomic_load_relaxed(&mi_limit_read_at) != 0) {
    /* (a hard limit below the soft one, or alone, presses from its own mark: what can be given
       back is given back before it refuses anything) */
    size_t soft = _mi_limit_get();
    if (hard != 0 && (soft == 0 || hard < soft)) soft = hard;
    mi_atomic_store_relaxed(&mi_limit_near_at, soft == 0 ? SIZE_MAX : (soft / 100) * MI_LIMIT_NEAR_PCT);
  }
  mi_limit_watch_set();
}

/* The mark below which pressing ends (MI_LIMIT_LEAVE_PCT), from the near mark. */
static size_t mi_limit_leave_at(size_t near_at) {
  return (near_at / MI_LIMIT_NEAR_PCT) * MI_LIMIT_LEAVE_PCT;
}

bool _mi_limit_near(bool* in_force) {
  const size_t committed = _mi_limit_committed();
  mi_limit_marks_update(true);   /* (a limit set by mi_option_set, a cgroup's new one) */
  const size_t near_at = mi_atomic_load_relaxed(&mi_limit_near_at);
  *in_force = (near_at != 0 && near_at != SIZE_MAX);
  /* (once near, until below MI_LIMIT_LEAVE_PCT: frees that take committed memory down past the
     80% mark in the middle of a burst are purged at once too, not left for the purge delay) */
  const size_t mark = (_mi_limit_is_pressing() ? mi_limit_leave_at(near_at) : near_at);
  return (*in_force && committed >= mark);
}

bool _mi_limit_commit_slow(size_t size) {
  _mi_stat_atomic_add(&_mi_stats_main.committed, -(int64_t)size);   /* (the caller's add: counted again below, or not) */
  mi_limit_marks_update(false);   /* (an option changed since: the watch follows) */
  const size_t hard = mi_atomic_load_relaxed(&_mi_limit_hard_at);
  const int64_t upto = (hard >= (size_t)INT64_MAX ? INT64_MAX : (int64_t)hard);
  const int64_t committed = _mi_stat_atomic_add_upto(&_mi_stats_main.committed, (int64_t)size, upto);
  if (committed < 0) {
    mi_atomic_add_relaxed(&mi_limit_refused, 1);
    _mi_warning_message("the hard memory limit refuses to commit %zu KiB more (committed %zu KiB, limit %zu KiB)\n",
                        size / MI_KiB, _mi_limit_committed() / MI_KiB, hard / MI_KiB);
    return false;
  }
  _mi_stat_atomic_counted(&_mi_stats_main.committed, size, committed);
  const size_t near_at = mi_atomic_load_relaxed(&mi_limit_near_at);
  if (near_at != 0 && (size_t)committed >= near_at && !_mi_limit_is_pressing()) {   /* (0: not known yet) */
    _mi_limit_pressing_set(true);   /* at once, not at the purger's next check */
    _mi_limit_pressure_note();
  }
  return true;
}

void _mi_limit_release_slow(void) {
  const size_t near_at = mi_atomic_load_relaxed(&mi_limit_near_at);
  if (near_at != SIZE_MAX && _mi_limit_committed() >= mi_limit_leave_at(near_at)) return;
  if (_mi_prim_clock_now() - mi_atomic_load_relaxed(&mi_limit_pressed_at) < MI_LIMIT_HOLD_MS) return;
  _mi_limit_pressing_set(false);
}

size_t _mi_limit_refused_count(void) {
  return mi_atomic_load_relaxed(&mi_limit_refused);
}

void _mi_limit_pressure_note(void) {
  mi_atomic_add_relaxed(&mi_limit_pressure, 1);
}

size_t _mi_limit_pressure_count(void) {
  return mi_atomic_load_relaxed(&mi_limit_pressure);
}

void _mi_limit_describe(char* buf, size_t size) {
  const long value = mi_option_get(mi_option_memory_limit);
  const size_t limit = mi_limit_from_option(value);
  if (mi_atomic_load_relaxed(&mi_limit_shown) == 0) mi_atomic_store_relaxed(&mi_limit_shown, limit + 1);
  char amount[32], cgroup_amount[32];
  mi_limit_fmt(amount, sizeof(amount), limit);
  const size_t cgroup = mi_atomic_load_relaxed(&mi_limit_cgroup);
  const int source = mi_atomic_load_relaxed(&mi_limit_cgroup_src);
  mi_limit_fmt(cgroup_amount, sizeof(cgroup_amount), cgroup);
  int n = 0;
  if (value == 0) n = _mi_snprintf(buf, size, "off (option memory_limit is 0)");
  else if (value > 1) n = _mi_snprintf(buf, size, "%s (option memory_limit)", amount);
  else if (limit == 0) n = _mi_snprintf(buf, size, "none (%s found)", mi_limit_source_names[MI_LIMIT_SRC_NONE]);
  else if (value == -100 || value == 1) n = _mi_snprintf(buf, size, "%s (%s)", amount, mi_limit_source_names[source]);
  else n = _mi_snprintf(buf, size, "%s (%ld%% of %s %s)", amount, -value, mi_limit_source_names[source], cgroup_amount);
  const size_t hard = _mi_limit_hard_get();
  if (hard != 0 && n > 0 && (size_t)n < size) {
    char hard_amount[32];
    mi_limit_fmt(hard_amount, sizeof(hard_amount), hard);
    _mi_snprintf(buf + n, size - (size_t)n, "; hard limit %s", hard_amount);
  }
}

/* ---------------------------------------------------------------------------------------
   Public API
--------------------------------------------------------------------------------------- */
size_t mi_memory_limit(void) mi_attr_noexcept {
  return _mi_limit_get();
}

void mi_memory_limit_set(size_t bytes) mi_attr_noexcept {
  size_t kib = _mi_divide_up(bytes, MI_KiB);
  if (kib == 1) kib = 2;   /* (the option's 1 is "on": the cgroup's limit) */
  mi_option_set(mi_option_memory_limit, (kib > (size_t)LONG_MAX ? LONG_MAX : (long)kib));
  mi_limit_marks_update(true);
}
