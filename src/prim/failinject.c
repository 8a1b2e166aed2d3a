/* SPDX-License-Identifier: MIT */
/* OS-failure injection: test builds only (CMake -DMI_FAIL_INJECT=ON defines MI_FAIL_INJECT=1;
   src/static.c then includes this file in place of the platform's). The platform file is
   included below with its memory primitives renamed _mi_prim_os_*; this file defines the
   primitives of prim.h under their own names as wrappers, so every caller (os.c, arena.c,
   segment.c) goes through them and none of them knows. A wrapper either calls the real one
   or fails the way the real one fails (the return value and outputs its contract in prim.h
   gives: an errno value, *addr NULL, false).

   MIMALLOC_TEST_FAIL, a comma-separated list, read once without allocating (the first call of
   a wrapped primitive once the environment is readable; calls before that are not counted):
     KIND:N       fail the Nth call (1-based) of that primitive
     KIND:N-M     fail its calls N to M
     KIND:pF      fail each of its calls with probability F (a decimal fraction: p0.01)
     all:...      the same for every kind
     seed:S       the random generator's seed (probability mode; default 1)
     count        at exit, print to stderr one line "mimalloc-failinject: count KIND N ..."
     noguard      guard markers answer EINVAL, as on a kernel without them (os.c then guards
                  with protect); not counted as failures
     trace        print a line to stderr for every injected failure (kind, call, size)
     numa:N       pretend N NUMA nodes (N >= 1; every thread on node 0): arena and heap NUMA
                  placement can be tested on a machine of one node; not counted as failures
   KIND is one of: map (_mi_prim_alloc), large (_mi_prim_alloc with allow_large), unmap
   (_mi_prim_free), commit, decommit, reset, protect, guard, huge
   (_mi_prim_alloc_huge_os_pages), random (_mi_prim_random_buf), thread (_mi_prim_thread_start,
   the purger's thread).
   Example: MIMALLOC_TEST_FAIL=commit:1000,map:p0.01,seed:7

   How each injected failure looks:
     map, large   *addr NULL, *is_large false, ENOMEM (mmap refused)
     unmap        EINVAL, nothing unmapped (munmap refused: the range stays mapped)
     commit       the first half of the range (in whole OS pages) is committed, then ENOMEM:
                  a commit that fails half-way (mprotect refused at the second VMA)
     decommit     nothing done, EAGAIN (madvise/mprotect refused)
     reset        nothing done, EAGAIN
     protect      nothing done, ENOMEM (mprotect could not split the mapping)
     guard        nothing done, ENOMEM (not EINVAL: os.c would take that as "no markers on
                  this kernel" and stop using them)
     huge         *addr NULL, ENOMEM (no 1 GiB pages left)
     random       false, buffer untouched (no entropy available)
     thread       EAGAIN, no thread (pthread_create out of resources): purges from allocator
                  activity only */

#include "prim.h"
#include "../internal/os.h"   /* hook: _mi_os_page_size */

#define _mi_prim_alloc              _mi_prim_os_alloc
#define _mi_prim_free               _mi_prim_os_free
#define _mi_prim_commit             _mi_prim_os_commit
#define _mi_prim_decommit           _mi_prim_os_decommit
#define _mi_prim_reset              _mi_prim_os_reset
#define _mi_prim_protect            _mi_prim_os_protect
#define _mi_prim_guard              _mi_prim_os_guard
#define _mi_prim_alloc_huge_os_pages _mi_prim_os_alloc_huge_os_pages
#define _mi_prim_random_buf         _mi_prim_os_random_buf
#define _mi_prim_thread_start       _mi_prim_os_thread_start
#define _mi_prim_numa_node          _mi_prim_os_numa_node
#define _mi_prim_numa_node_count    _mi_prim_os_numa_node_count
int  _mi_prim_os_alloc(void* hint, size_t size, bool commit, bool allow_large, bool* is_large, void** addr);
int  _mi_prim_os_free(void* addr, size_t size);
int  _mi_prim_os_commit(void* addr, size_t size);
int  _mi_prim_os_decommit(void* addr, size_t size, bool protect);
int  _mi_prim_os_reset(void* addr, size_t size);
int  _mi_prim_os_protect(void* addr, size_t size, bool protect);
int  _mi_prim_os_guard(void* addr, size_t size, bool install);
int  _mi_prim_os_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr);
bool _mi_prim_os_random_buf(void* buf, size_t buf_len);
int  _mi_prim_os_thread_start(void (*fun)(void* arg), void* arg, bool init_wait);
size_t _mi_prim_os_numa_node(void);
size_t _mi_prim_os_numa_node_count(void);
#if defined(_WIN32)
#include "windows.c"
#else
#include "unix.c"
#endif
#undef _mi_prim_alloc
#undef _mi_prim_free
#undef _mi_prim_commit
#undef _mi_prim_decommit
#undef _mi_prim_reset
#undef _mi_prim_protect
#undef _mi_prim_guard
#undef _mi_prim_alloc_huge_os_pages
#undef _mi_prim_random_buf
#undef _mi_prim_thread_start
#undef _mi_prim_numa_node
#undef _mi_prim_numa_node_count

typedef enum mi_fi_kind_e {
  MI_FI_MAP, MI_FI_LARGE, MI_FI_UNMAP, MI_FI_COMMIT, MI_FI_DECOMMIT, MI_FI_RESET,
  MI_FI_PROTECT, MI_FI_GUARD, MI_FI_HUGE, MI_FI_RANDOM, MI_FI_THREAD, MI_FI_COUNT
} mi_fi_kind_t;

static const char* mi_fi_names[MI_FI_COUNT] = {
  "map", "large", "unmap", "commit", "decommit", "reset", "protect", "guard", "huge", "random", "thread"
};

typedef struct mi_fi_rule_s {
  size_t   first, last;   /* fail calls first..last (1-based; 0: none) */
  uint64_t prob;          /* fail with probability prob / 2^32 */
} mi_fi_rule_t;

static mi_fi_rule_t     mi_fi_rules[MI_FI_COUNT];
static _Atomic(size_t)  mi_fi_calls[MI_FI_COUNT];
static _Atomic(size_t)  mi_fi_failed[MI_FI_COUNT];
static _Atomic(int)     mi_fi_state;           /* 0 not read, 1 being read, 2 read */
static _Atomic(uint64_t) mi_fi_random;
static bool             mi_fi_count, mi_fi_trace, mi_fi_noguard;
static size_t           mi_fi_numa_nodes;   /* numa:N; 0: the OS's */

static bool mi_fi_word(const char* s, size_t n, const char* word) {
  size_t i = 0;
  for (; i < n && word[i] != 0; i++) if (s[i] != word[i]) return false;
  return (i == n && word[i] == 0);
}

static size_t mi_fi_number(const char** s) {
  size_t n = 0;
  while (**s >= '0' && **s <= '9') { n = 10*n + (size_t)(**s - '0'); (*s)++; }
  return n;
}

/* "0.01" -> 0.01 * 2^32 (digits after the point, up to 9) */
static uint64_t mi_fi_fraction(const char* s) {
  uint64_t whole = mi_fi_number(&s);
  if (whole >= 1) return ((uint64_t)1 << 32);
  uint64_t num = 0, den = 1;
  if (*s == '.') {
    s++;
    while (*s >= '0' && *s <= '9' && den < 1000000000) { num = 10*num + (uint64_t)(*s - '0'); den *= 10; s++; }
  }
  return (num << 32) / den;
}

static void mi_fi_set(mi_fi_kind_t k, const char* v) {
  if (*v == 'p') { mi_fi_rules[k].prob = mi_fi_fraction(v + 1); return; }
  const char* s = v;
  size_t first = mi_fi_number(&s), last = first;
  if (*s == '-') { s++; last = mi_fi_number(&s); }
  mi_fi_rules[k].first = first;
  mi_fi_rules[k].last = (last < first ? first : last);
}

static void mi_fi_parse(const char* spec) {
  const char* s = spec;
  while (*s != 0) {
    size_t n = 0;
    while (s[n] != 0 && s[n] != ',' && s[n] != ':') n++;
    const char* v = (s[n] == ':' ? s + n + 1 : s + n);
    if (mi_fi_word(s, n, "count")) mi_fi_count = true;
    else if (mi_fi_word(s, n, "trace")) mi_fi_trace = true;
    else if (mi_fi_word(s, n, "noguard")) mi_fi_noguard = true;
    else if (mi_fi_word(s, n, "numa")) { const char* t = v; mi_fi_numa_nodes = mi_fi_number(&t); }
    else if (mi_fi_word(s, n, "seed")) { const char* t = v; mi_atomic_store_relaxed(&mi_fi_random, (uint64_t)mi_fi_number(&t)); }
    else {
      bool known = false;
      for (int k = 0; k < MI_FI_COUNT; k++) {
        if (mi_fi_word(s, n, "all") || mi_fi_word(s, n, mi_fi_names[k])) { mi_fi_set((mi_fi_kind_t)k, v); known = true; }
      }
      if (!known) { _mi_prim_out_stderr("mimalloc-failinject: unknown entry in MIMALLOC_TEST_FAIL: "); _mi_prim_out_stderr(s); _mi_prim_out_stderr("\n"); }
    }
    while (*s != 0 && *s != ',') s++;
    if (*s == ',') s++;
  }
}

static void mi_fi_read(void) {
  int expected = 0;
  if (!_mi_prim_env_ready()) return;
  if (!mi_atomic_cas_strong_acq_rel(&mi_fi_state, &expected, 1)) {
    while (mi_atomic_load_acquire(&mi_fi_state) == 1) { }   /* another thread reads it (once) */
    return;
  }
  mi_atomic_store_relaxed(&mi_fi_random, 1);
  char buf[256];
  if (_mi_prim_getenv("MIMALLOC_TEST_FAIL", buf, sizeof(buf))) mi_fi_parse(buf);
  mi_atomic_store_release(&mi_fi_state, 2);
}

/* splitmix64 over one shared atomic state: the sequence is the seed's in a single thread */
static uint64_t mi_fi_next_random(void) {
  uint64_t z = mi_atomic_add_relaxed(&mi_fi_random, (uint64_t)0x9E3779B97F4A7C15ULL) + (uint64_t)0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * (uint64_t)0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * (uint64_t)0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Count this call of kind k; true if it is to fail. */
static bool mi_fi_fail(mi_fi_kind_t k, size_t size) {
  if (mi_atomic_load_acquire(&mi_fi_state) != 2) {
    mi_fi_read();
    if (mi_atomic_load_acquire(&mi_fi_state) != 2) return false;
  }
  const size_t n = mi_atomic_add_relaxed(&mi_fi_calls[k], 1) + 1;
  const mi_fi_rule_t* r = &mi_fi_rules[k];
  bool fail = (r->first != 0 && n >= r->first && n <= r->last);
  if (!fail && r->prob != 0) fail = ((mi_fi_next_random() >> 32) < r->prob);
  if (fail) {
    mi_atomic_add_relaxed(&mi_fi_failed[k], 1);
    if (mi_fi_trace) {
      char msg[128];
      _mi_snprintf(msg, sizeof(msg), "mimalloc-failinject: fail %s call %zu size %zu\n", mi_fi_names[k], n, size);
      _mi_prim_out_stderr(msg);
    }
  }
  return fail;
}

/* at exit: the number of calls of each kind (a sweep learns the range of N from it) */
__attribute__((destructor(101))) static void mi_fi_print_counts(void) {
  if (!mi_fi_count) return;
  char msg[512];
  size_t len = 0;
  len += (size_t)_mi_snprintf(msg, sizeof(msg), "mimalloc-failinject: count");
  for (int k = 0; k < MI_FI_COUNT && len < sizeof(msg); k++) {
    len += (size_t)_mi_snprintf(msg + len, sizeof(msg) - len, " %s %zu", mi_fi_names[k], mi_atomic_load_relaxed(&mi_fi_calls[k]));
  }
  if (len < sizeof(msg)) len += (size_t)_mi_snprintf(msg + len, sizeof(msg) - len, " failed");
  for (int k = 0; k < MI_FI_COUNT && len < sizeof(msg); k++) {
    len += (size_t)_mi_snprintf(msg + len, sizeof(msg) - len, " %zu", mi_atomic_load_relaxed(&mi_fi_failed[k]));
  }
  if (len < sizeof(msg) - 1) { msg[len] = '\n'; msg[len+1] = 0; }
  _mi_prim_out_stderr(msg);
}

int _mi_prim_alloc(void* hint, size_t size, bool commit, bool allow_large, bool* is_large, void** addr) {
  if (mi_fi_fail(allow_large && commit ? MI_FI_LARGE : MI_FI_MAP, size)) { *is_large = false; *addr = NULL; return ENOMEM; }
  return _mi_prim_os_alloc(hint, size, commit, allow_large, is_large, addr);
}

int _mi_prim_free(void* addr, size_t size) {
  if (mi_fi_fail(MI_FI_UNMAP, size)) return EINVAL;
  return _mi_prim_os_free(addr, size);
}

int _mi_prim_commit(void* addr, size_t size) {
  if (mi_fi_fail(MI_FI_COMMIT, size)) {
    const size_t half = _mi_align_down(size / 2, _mi_os_page_size());
    if (half > 0) (void)_mi_prim_os_commit(addr, half);
    return ENOMEM;
  }
  return _mi_prim_os_commit(addr, size);
}

int _mi_prim_decommit(void* addr, size_t size, bool protect) {
  if (mi_fi_fail(MI_FI_DECOMMIT, size)) return EAGAIN;
  return _mi_prim_os_decommit(addr, size, protect);
}

int _mi_prim_reset(void* addr, size_t size) {
  if (mi_fi_fail(MI_FI_RESET, size)) return EAGAIN;
  return _mi_prim_os_reset(addr, size);
}

int _mi_prim_protect(void* addr, size_t size, bool protect) {
  if (mi_fi_fail(MI_FI_PROTECT, size)) return ENOMEM;
  return _mi_prim_os_protect(addr, size, protect);
}

int _mi_prim_guard(void* addr, size_t size, bool install) {
  if (mi_fi_fail(MI_FI_GUARD, size)) return ENOMEM;
  if (mi_fi_noguard) return EINVAL;
  return _mi_prim_os_guard(addr, size, install);
}

int _mi_prim_alloc_huge_os_pages(void* hint, size_t size, int numa_node, void** addr) {
  if (mi_fi_fail(MI_FI_HUGE, size)) { *addr = NULL; return ENOMEM; }
  return _mi_prim_os_alloc_huge_os_pages(hint, size, numa_node, addr);
}

bool _mi_prim_random_buf(void* buf, size_t buf_len) {
  if (mi_fi_fail(MI_FI_RANDOM, buf_len)) return false;
  return _mi_prim_os_random_buf(buf, buf_len);
}

int _mi_prim_thread_start(void (*fun)(void* arg), void* arg, bool init_wait) {
  if (mi_fi_fail(MI_FI_THREAD, 0)) return EAGAIN;
  return _mi_prim_os_thread_start(fun, arg, init_wait);
}

size_t _mi_prim_numa_node_count(void) {
  if (mi_atomic_load_acquire(&mi_fi_state) != 2) mi_fi_read();
  if (mi_fi_numa_nodes > 0) return mi_fi_numa_nodes;
  return _mi_prim_os_numa_node_count();
}

size_t _mi_prim_numa_node(void) {
  if (mi_fi_numa_nodes > 0) return 0;
  return _mi_prim_os_numa_node();
}
