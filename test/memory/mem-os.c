/* SPDX-License-Identifier: MIT */
/* mem-os.c -- OS-memory options read at start-up, and huge OS pages.

   Usage: mem-os <mode>   (the environment each mode needs is set by CMakeLists.txt)

   disallow-os    MIMALLOC_DISALLOW_OS_ALLOC=1 MIMALLOC_RESERVE_OS_MEMORY=64MiB (also run with the
                  legacy MIMALLOC_LIMIT_OS_ALLOC=1): one arena of 64 MiB; 1 MiB blocks come from it
                  until it is exhausted, then NULL with errno ENOMEM (no crash); then huge (20 MiB)
                  and OS-sized (300 MiB) blocks fail the same way and small blocks run out too;
                  after freeing, blocks fit again; mi_reserve_os_memory at run time adds an arena
                  that is used next
   disallow-os-none  MIMALLOC_DISALLOW_OS_ALLOC=1 and nothing reserved: every allocation fails
                  with ENOMEM, without crashing; after mi_reserve_os_memory(16 MiB) small blocks
                  succeed, inside that arena
   disallow-arena MIMALLOC_DISALLOW_ARENA_ALLOC=1: small, large and huge blocks work, arena_count
                  stays 0 and no block is inside an arena; an explicit exclusive arena still
                  serves its heap (arena_count 1)
   no-arenas      MIMALLOC_ARENA_RESERVE=0: arena_count stays 0; segments come from the OS and
                  go back at once: reserved falls to where it was after the frees
   arena-reserve  MIMALLOC_ARENA_RESERVE=64M: the arenas reserved on demand are 64 MiB each
                  (several for 150 MiB of 1 MiB blocks)
   os-huge        default settings: a 200 MiB block lies in an arena; a 300 MiB block (over
                  256 MiB) does not, and freeing it gives back its address space (reserved) and
                  RSS (not under sanitizers) at once
   huge-pages     mi_reserve_huge_os_pages_interleave/_at/_at_ex and the deprecated
                  mi_reserve_huge_os_pages: pages == 0 -> 0 (_at_ex: id -1); 1 page -> 0 or
                  ENOMEM; on ENOMEM a warning (show_errors), _at_ex's id -1 and no new arena;
                  on success a new arena of 1 GiB pages that a heap can use. Allocation works after.
   huge-pages-env runs this program with MIMALLOC_RESERVE_HUGE_OS_PAGES=1 (and =1 with
                  MIMALLOC_RESERVE_HUGE_OS_PAGES_AT=0): it starts, allocates and exits normally;
                  either it has an arena of 1 GiB pages or it printed a warning about them
   numa           runs this program with MIMALLOC_VERBOSE=1 and MIMALLOC_USE_NUMA_NODES = 0, 1, 2,
                  3: it prints "using N numa node(s)" exactly once, N = the detected node count
                  (/sys/devices/system/node/possible) capped by the option
   thp-on, thp-off  MIMALLOC_ALLOW_LARGE_OS_PAGES=1 / 0: the arena mapping has (on) or has not (off)
                  the "hg" VmFlag in /proc/self/smaps (MADV_HUGEPAGE); so has an arena from
                  mi_reserve_os_memory_ex(allow_large=true) when on, never one with
                  allow_large=false; allocation, zeroing, purge and reuse work.
                  Exit 77 (skipped) when transparent huge pages are [never] or absent. */
#include "memory-common.h"
#include <dlfcn.h>

static mt_capture_t cap;

static bool in_any_arena(const void* p, size_t n) {
  for (int id = 1; id <= 132; id++) {
    size_t size = 0;
    void* start = mi_arena_area(id, &size);
    if (start != NULL && mt_in_range(p, n, start, size)) return true;
  }
  return false;
}

static int arena_of(const void* p) {
  for (int id = 1; id <= 132; id++) {
    size_t size = 0;
    void* start = mi_arena_area(id, &size);
    if (start != NULL && mt_in_range(p, 1, start, size)) return id;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------
   disallow-os
--------------------------------------------------------------------------------------- */
enum { MAX_FILL = 256, MAX_SMALL = 1 << 21 };
static void* fill[MAX_FILL];
static void* smalls[MAX_SMALL];

static size_t fill_until_null(size_t size, int want_arena, const char* what) {
  size_t n = 0;
  int err = 0;
  while (n < MAX_FILL) {
    errno = 0;
    void* p = mi_malloc(size);
    if (p == NULL) { err = errno; break; }
    ((volatile uint8_t*)p)[size - 1] = 1;
    const int a = arena_of(p);
    if (want_arena > 0) CHECK_MSG(a == want_arena, "%s: block %zu at %p in arena %d, not %d", what, n, p, a, want_arena);
    fill[n++] = p;
  }
  CHECK_MSG(n < MAX_FILL, "%s: %zu blocks of %zu bytes and no end", what, n, size);
  CHECK_MSG(err == ENOMEM, "%s: the failing allocation set errno %d", what, err);
  return n;
}

static int disallow_os_mode(const char* name) {
  CHECK(mi_option_is_enabled(mi_option_disallow_os_alloc));
  CHECK_EQ(mi_option_get_size(mi_option_reserve_os_memory), 64 * MiB);
  CHECK_EQ(mt_stats()->arena_count.total, 1);
  size_t size = 0;
  void* start = mi_arena_area(1, &size);
  CHECK(start != NULL);
  CHECK_EQ(size, 64 * MiB);

  /* some small blocks first (a small segment in the arena) */
  size_t ns = 0;
  for (; ns < 2000; ns++) {
    smalls[ns] = mi_malloc(64);
    CHECK(smalls[ns] != NULL && arena_of(smalls[ns]) == 1);
  }
  const size_t n1 = fill_until_null(1 * MiB, 1, "1 MiB blocks");
  /* a 1 MiB block is a span of 8 medium slots of 128 KiB (9 at the header's slot): 3 per 4 MiB
     segment, also when debug padding makes its bin 1.125 MiB (9 slots each); one or two of the
     16 segments hold small pages */
  const size_t per_segment = mt_max_per_segment(fill, n1);
  CHECK_MSG(per_segment == 3, "%zu blocks of 1 MiB in one segment", per_segment);
  CHECK_MSG(n1 >= 14 * per_segment && n1 <= 15 * per_segment, "%zu blocks of 1 MiB from a 64 MiB arena (%zu per segment)", n1, per_segment);
  errno = 0;
  void* h = mi_malloc(20 * MiB);
  CHECK_MSG(h == NULL && errno == ENOMEM, "a 20 MiB block from the exhausted arena: %p, errno %d", h, errno);
  errno = 0;
  void* os = mi_malloc(300 * MiB);
  CHECK_MSG(os == NULL && errno == ENOMEM, "a 300 MiB block with OS allocation disallowed: %p, errno %d", os, errno);
  errno = 0;
  void* c = mi_calloc(1, 300 * MiB);
  CHECK_MSG(c == NULL && errno == ENOMEM, "mi_calloc of 300 MiB with OS allocation disallowed: %p, errno %d", c, errno);
  /* small blocks run out as well (the small segment fills up) */
  const size_t ns0 = ns;
  int err = 0;
  while (ns < MAX_SMALL) {
    errno = 0;
    void* p = mi_malloc(64);
    if (p == NULL) { err = errno; break; }
    smalls[ns++] = p;
  }
  CHECK_MSG(ns < MAX_SMALL && err == ENOMEM, "small blocks: %zu allocated, errno %d at the end", ns, err);
  CHECK_MSG(ns > ns0, "no small block fitted after the 1 MiB blocks (%zu)", ns);
  for (size_t i = 0; i < ns; i++) CHECK_MSG(in_any_arena(smalls[i], 64), "small block %p outside the arena", smalls[i]);
  /* free everything: the arena serves again */
  for (size_t i = 0; i < ns; i++) mi_free(smalls[i]);
  for (size_t i = 0; i < n1; i++) mi_free(fill[i]);
  void* again = mi_malloc(20 * MiB);
  CHECK_MSG(again != NULL && arena_of(again) == 1, "after freeing, a 20 MiB block: %p", again);
  if (again != NULL) memset(again, 1, 20 * MiB);
  mi_free(again);
  void* z = mi_zalloc(1 * MiB);
  CHECK(z != NULL && mt_is_zero(z, 1 * MiB));
  mi_free(z);

  /* an explicit reservation is allowed and used */
  const size_t n2 = fill_until_null(1 * MiB, 1, "second fill");
  CHECK_EQ(mi_reserve_os_memory(32 * MiB, true, false), 0);
  CHECK_EQ(mt_stats()->arena_count.total, 2);
  void* more = mi_malloc(1 * MiB);
  CHECK_MSG(more != NULL && arena_of(more) == 2, "after mi_reserve_os_memory, a 1 MiB block at %p (arena %d)", more, arena_of(more));
  mi_free(more);
  for (size_t i = 0; i < n2; i++) mi_free(fill[i]);
  return test_summary(name, "%zu blocks of 1 MiB, %zu of 64 bytes until exhausted", n1, ns);
}

static int disallow_os_none_mode(void) {
  CHECK(mi_option_is_enabled(mi_option_disallow_os_alloc));
  CHECK_EQ(mt_stats()->arena_count.total, 0);
  static const size_t sizes[] = { 8, 100, 5000, 100 * KiB, 1 * MiB, 10 * MiB, 300 * MiB };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    errno = 0;
    void* p = mi_malloc(sizes[i]);
    CHECK_MSG(p == NULL && errno == ENOMEM, "mi_malloc(%zu) = %p, errno %d", sizes[i], p, errno);
    mi_free(p);
    errno = 0;
    p = mi_zalloc_aligned(sizes[i], 4096);
    CHECK_MSG(p == NULL && errno == ENOMEM, "mi_zalloc_aligned(%zu) = %p, errno %d", sizes[i], p, errno);
    mi_free(p);
  }
  CHECK_EQ(mi_reserve_os_memory(16 * MiB, true, false), 0);
  void* p = mi_malloc(100);
  CHECK(p != NULL && arena_of(p) == 1);
  void* q = mi_malloc(1 * MiB);
  CHECK(q != NULL && arena_of(q) == 1);
  mi_free(p);
  mi_free(q);
  return test_summary("mem-os disallow-os-none", NULL);
}

/* ---------------------------------------------------------------------------------------
   disallow-arena, no-arenas, arena-reserve, os-huge
--------------------------------------------------------------------------------------- */
static void* work[200];

static int disallow_arena_mode(void) {
  CHECK(mi_option_is_enabled(mi_option_disallow_arena_alloc));
  static const size_t sizes[] = { 16, 3000, 100 * KiB, 1 * MiB, 10 * MiB, 100 * MiB };
  for (int round = 0; round < 3; round++) {
    for (size_t i = 0; i < 6; i++) {
      void* p = mi_zalloc(sizes[i]);
      CHECK(p != NULL && mt_is_zero(p, sizes[i]));
      if (p != NULL) { memset(p, 0x42, sizes[i]); CHECK(!in_any_arena(p, 1)); }
      work[i] = p;
    }
    for (size_t i = 0; i < 6; i++) mi_free(work[i]);
    mi_collect(true);
  }
  CHECK_EQ(mt_stats()->arena_count.total, 0);
  mi_arena_id_t id = 0;
  CHECK_EQ(mi_reserve_os_memory_ex(32 * MiB, true, false, true, &id), 0);
  CHECK_EQ(mt_stats()->arena_count.total, 1);
  size_t size = 0;
  void* start = mi_arena_area(id, &size);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap != NULL) {
    void* p = mi_heap_malloc(heap, 100);
    void* q = mi_heap_malloc(heap, 5 * MiB);
    CHECK(p != NULL && mt_in_range(p, 100, start, size));
    CHECK(q != NULL && mt_in_range(q, 5 * MiB, start, size));
    mi_free(p);
    mi_free(q);
    mi_heap_delete(heap);
  }
  /* the default heap still does not use it */
  void* d = mi_malloc(1 * MiB);
  CHECK(d != NULL && !in_any_arena(d, 1));
  mi_free(d);
  return test_summary("mem-os disallow-arena", NULL);
}

static int no_arenas_mode(void) {
  CHECK_EQ(mi_option_get(mi_option_arena_reserve), 0);
  mt_activity(1000);
  mi_collect(true);
  const int64_t reserved0 = mt_stats()->reserved.current;
  for (int i = 0; i < 100; i++) {
    work[i] = mi_malloc(i % 10 == 9 ? 10 * MiB : 1 * MiB);
    CHECK(work[i] != NULL);
    if (work[i] != NULL) memset(work[i], 1, 1 * MiB);
  }
  const int64_t reserved1 = mt_stats()->reserved.current;
  CHECK_MSG(reserved1 >= reserved0 + (int64_t)(190 * MiB), "reserved grew by %lld bytes", (long long)(reserved1 - reserved0));
  for (int i = 0; i < 100; i++) mi_free(work[i]);
  mi_collect(true);
  const int64_t reserved2 = mt_stats()->reserved.current;
  CHECK_MSG(reserved2 <= reserved0 + (int64_t)(8 * MiB), "after the frees reserved is %lld bytes above the start", (long long)(reserved2 - reserved0));
  CHECK_EQ(mt_stats()->arena_count.total, 0);
  CHECK(mi_arena_area(1, NULL) == NULL);
  return test_summary("mem-os no-arenas", "reserved %+.1f MiB with the blocks, %+.1f MiB after", (double)(reserved1 - reserved0) / MiB, (double)(reserved2 - reserved0) / MiB);
}

static int arena_reserve_mode(void) {
  CHECK_EQ(mi_option_get_size(mi_option_arena_reserve), 64 * MiB);
  for (int i = 0; i < 150; i++) {
    work[i] = mi_malloc(1 * MiB);
    CHECK(work[i] != NULL);
  }
  const int64_t arenas = mt_stats()->arena_count.total;
  CHECK_MSG(arenas >= 3 && arenas <= 8, "%lld arenas for 150 MiB of 1 MiB blocks (64 MiB each)", (long long)arenas);
  for (int id = 1; id <= arenas; id++) {
    size_t size = 0;
    CHECK(mi_arena_area(id, &size) != NULL);
    CHECK_MSG(size == 64 * MiB, "arena %d: %zu bytes", id, size);
  }
  for (int i = 0; i < 150; i++) {
    CHECK(work[i] == NULL || in_any_arena(work[i], 1 * MiB));
    mi_free(work[i]);
  }
  return test_summary("mem-os arena-reserve", "%lld arenas", (long long)arenas);
}

static int os_huge_mode(void) {
  mi_collect(true);
  uint8_t* a = (uint8_t*)mi_malloc(200 * MiB);
  CHECK(a != NULL && in_any_arena(a, 200 * MiB));
  if (a != NULL) memset(a, 1, 200 * MiB);
  const int64_t reserved0 = mt_stats()->reserved.current;
  const size_t rss0 = mt_rss();
  uint8_t* b = (uint8_t*)mi_malloc(300 * MiB);
  CHECK(b != NULL);
  if (b != NULL) {
    CHECK(!in_any_arena(b, 1));
    memset(b, 2, 300 * MiB);
    const size_t rss1 = mt_rss();
    CHECK(mt_stats()->reserved.current >= reserved0 + (int64_t)(300 * MiB));
    mi_free(b);
    const size_t rss2 = mt_rss();
    const int64_t reserved2 = mt_stats()->reserved.current;
    CHECK_MSG(reserved2 <= reserved0 + (int64_t)(1 * MiB), "after freeing the 300 MiB block reserved is %lld bytes above", (long long)(reserved2 - reserved0));
    if (MT_RSS_ASSERTS) {
      CHECK_MSG(rss1 >= rss0 + 290 * MiB, "RSS grew by %.1f MiB for the 300 MiB block", mt_mib_diff(rss1, rss0));
      CHECK_MSG(rss2 <= rss0 + 8 * MiB, "right after freeing the 300 MiB block the RSS is %.1f MiB above", mt_mib_diff(rss2, rss0));
    }
  }
  void* z = mi_zalloc(300 * MiB);
  CHECK(z != NULL && mt_is_zero(z, 300 * MiB));
  mi_free(z);
  mi_free(a);
  return test_summary("mem-os os-huge", NULL);
}

/* ---------------------------------------------------------------------------------------
   huge OS pages
--------------------------------------------------------------------------------------- */
static int huge_arena_count(void) {
  mt_capture_reset(&cap);
  mi_register_output(&mt_capture_out, &cap);
  mi_debug_show_arenas();
  mi_register_output(NULL, NULL);
  return mt_count(cap.text, "(1 GiB pages)");
}

static int huge_pages_mode(void) {
  mi_option_enable(mi_option_show_errors);
  mi_arena_id_t id = 77;
  CHECK_EQ(mi_reserve_huge_os_pages_interleave(0, 0, 0), 0);
  CHECK_EQ(mi_reserve_huge_os_pages_at(0, 0, 0), 0);
  CHECK_EQ(mi_reserve_huge_os_pages_at_ex(0, 0, 0, true, &id), 0);
  CHECK_EQ(id, -1);
  const int64_t arenas0 = mt_stats()->arena_count.total;
  int successes = 0;

  struct { const char* name; int kind; } calls[] = { { "interleave", 0 }, { "at", 1 }, { "at_ex", 2 }, { "deprecated", 3 } };
  for (size_t k = 0; k < 4; k++) {
    mt_capture_reset(&cap);
    mi_register_output(&mt_capture_out, &cap);
    const int64_t before = mt_stats()->arena_count.total;
    int err = -1;
    size_t reserved_pages = 99;
    id = 77;
    switch (calls[k].kind) {
      case 0: err = mi_reserve_huge_os_pages_interleave(1, 0, 200); break;
      case 1: err = mi_reserve_huge_os_pages_at(1, 0, 200); break;
      case 2: err = mi_reserve_huge_os_pages_at_ex(1, 0, 200, true, &id); break;
      default: err = mi_reserve_huge_os_pages(1, 0.2, &reserved_pages); break;
    }
    mi_register_output(NULL, NULL);
    const int64_t after = mt_stats()->arena_count.total;
    CHECK_MSG(err == 0 || err == ENOMEM, "%s: returned %d", calls[k].name, err);
    if (err == ENOMEM) {
      CHECK_MSG(after == before, "%s failed but added an arena", calls[k].name);
      CHECK_MSG(strstr(cap.text, "warning") != NULL && strstr(cap.text, "huge") != NULL, "%s failed without a warning about huge pages: \"%s\"", calls[k].name, cap.text);
      if (calls[k].kind == 2) CHECK_EQ(id, -1);
      if (calls[k].kind == 3) CHECK_EQ(reserved_pages, 0);
    }
    else if (err == 0) {
      successes++;
      CHECK_MSG(after == before + 1, "%s succeeded: arena_count %lld -> %lld", calls[k].name, (long long)before, (long long)after);
      if (calls[k].kind == 3) CHECK_EQ(reserved_pages, 1);
      if (calls[k].kind == 2) {
        CHECK(id > 0);
        size_t size = 0;
        void* start = mi_arena_area(id, &size);
        CHECK_MSG(start != NULL && size == 1 * GiB, "huge-page arena %d: %p, %zu bytes", id, start, size);
        mi_heap_t* heap = mi_heap_new_in_arena(id);
        CHECK(heap != NULL);
        void* p = (heap != NULL ? mi_heap_zalloc(heap, 10 * MiB) : NULL);
        CHECK(p != NULL && mt_in_range(p, 10 * MiB, start, size) && mt_is_zero(p, 10 * MiB));
        mi_free(p);
        if (heap != NULL) mi_heap_delete(heap);
      }
    }
  }
  CHECK_EQ(huge_arena_count(), (int)(mt_stats()->arena_count.total - arenas0));
  /* the program goes on normally */
  mt_activity(2000);
  void* p = mi_zalloc(20 * MiB);
  CHECK(p != NULL && mt_is_zero(p, 20 * MiB));
  mi_free(p);
  return test_summary("mem-os huge-pages", "%d of 4 reservations of a 1 GiB page succeeded", successes);
}

static int huge_pages_child(void) {
  void* p = mi_malloc(1 * MiB);
  void* q = mi_malloc(100);
  const int huge = huge_arena_count();
  printf("huge-page arenas: %d, allocation %s\n", huge, (p != NULL && q != NULL ? "ok" : "FAILED"));
  mi_free(p);
  mi_free(q);
  return (p != NULL && q != NULL ? 0 : 1);
}

static int huge_pages_env_mode(void) {
  static char out[1 << 16];
  const char* args[] = { "huge-pages-child", NULL };
  const char* env_sets[2][4] = {
    { "MIMALLOC_RESERVE_HUGE_OS_PAGES=1", "MIMALLOC_SHOW_ERRORS=1", NULL, NULL },
    { "MIMALLOC_RESERVE_HUGE_OS_PAGES=1", "MIMALLOC_RESERVE_HUGE_OS_PAGES_AT=0", "MIMALLOC_SHOW_ERRORS=1", NULL } };
  for (int k = 0; k < 2; k++) {
    const int status = mt_run_child(args, env_sets[k], out, sizeof(out));
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "env set %d: the child %s %d: %s", k,
              (WIFSIGNALED(status) ? "was killed by signal" : "exited with"), (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)), out);
    CHECK_MSG(strstr(out, "allocation ok") != NULL, "env set %d: %s", k, out);
    const bool has_arena = (strstr(out, "huge-page arenas: 1") != NULL);
    const bool warned = (strstr(out, "warning") != NULL && strstr(out, "huge") != NULL);
    CHECK_MSG(has_arena || warned, "env set %d: neither a huge-page arena nor a warning: %s", k, out);
    printf("env set %d: %s", k, out);
  }
  return test_summary("mem-os huge-pages-env", NULL);
}

/* ---------------------------------------------------------------------------------------
   NUMA
--------------------------------------------------------------------------------------- */
static size_t detected_numa_nodes(void) {
  FILE* f = fopen("/sys/devices/system/node/possible", "r");
  if (f == NULL) return 1;
  char buf[128] = "";
  if (fgets(buf, sizeof(buf), f) == NULL) buf[0] = 0;
  fclose(f);
  /* "0", "0-3", "0,2-5": the highest number + 1 */
  size_t last = 0;
  for (const char* s = buf; *s != 0; ) {
    if (*s >= '0' && *s <= '9') {
      size_t v = 0;
      while (*s >= '0' && *s <= '9') v = v * 10 + (size_t)(*s++ - '0');
      last = v;
    }
    else s++;
  }
  return last + 1;
}

static int numa_child(void) {
  void* p = mi_malloc(1 * MiB);   /* an arena (the first detection may be here) */
  mi_free(p);
  void* q = mi_zalloc(3 * MiB);
  printf("numa child: %s\n", (q != NULL ? "ok" : "FAILED"));
  mi_free(q);
  return (q != NULL ? 0 : 1);
}

static int numa_mode(void) {
  static char out[1 << 17];
  const size_t detected = detected_numa_nodes();
  const char* args[] = { "numa-child", NULL };
  for (int cap_nodes = 0; cap_nodes <= 3; cap_nodes++) {
    char opt[64];
    snprintf(opt, sizeof(opt), "MIMALLOC_USE_NUMA_NODES=%d", cap_nodes);
    const char* env[] = { "MIMALLOC_VERBOSE=1", opt, NULL };
    const int status = mt_run_child(args, env, out, sizeof(out));
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child %s %d: %s", opt,
              (WIFSIGNALED(status) ? "was killed by signal" : "exited with"), (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)), out);
    CHECK_MSG(strstr(out, "numa child: ok") != NULL, "%s: %s", opt, out);
    const size_t want = (cap_nodes > 0 && (size_t)cap_nodes < detected ? (size_t)cap_nodes : detected);
    char msg[64];
    snprintf(msg, sizeof(msg), "using %zu numa node%s\n", want, (want == 1 ? "" : "s"));
    CHECK_MSG(mt_count(out, msg) == 1, "%s: \"%.*s\" printed %d times (detected %zu nodes)", opt, (int)strlen(msg) - 1, msg, mt_count(out, msg), detected);
    CHECK_MSG(mt_count(out, " numa node\n") + mt_count(out, " numa nodes\n") == 1, "%s: more than one node-count message: %s", opt, out);
  }
  return test_summary("mem-os numa", "%zu node(s) detected", detected);
}

/* ---------------------------------------------------------------------------------------
   transparent huge pages
--------------------------------------------------------------------------------------- */
static int thp_mode(bool on) {
  char buf[256] = "";
  FILE* f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f != NULL) { if (fgets(buf, sizeof(buf), f) == NULL) buf[0] = 0; fclose(f); }
  if (f == NULL || strstr(buf, "[never]") != NULL || buf[0] == 0) {
    printf("SKIP mem-os thp: transparent huge pages unavailable (%s)\n", buf);
    return 77;
  }
  CHECK_EQ(mi_option_is_enabled(mi_option_allow_large_os_pages), on);
  uint8_t* p = (uint8_t*)mi_malloc(1 * MiB);
  CHECK(p != NULL);
  if (p == NULL) return test_summary(on ? "mem-os thp-on" : "mem-os thp-off", NULL);
  memset(p, 1, 1 * MiB);
  const int id = arena_of(p);
  CHECK_MSG(id > 0, "a 1 MiB block outside every arena");
  size_t size = 0;
  uint8_t* start = (uint8_t*)mi_arena_area(id, &size);
  mt_mapping_t m;
  CHECK(mt_maps_find(p, true, &m));
  CHECK_MSG(m.vmflags[0] != 0, "no VmFlags line for the mapping of %p", (void*)p);
  CHECK_MSG(mt_vmflag(&m, "hg") == on, "ALLOW_LARGE_OS_PAGES=%d: the arena mapping %lx-%lx has VmFlags:%s", (int)on, (unsigned long)m.start, (unsigned long)m.end, m.vmflags);
  /* the whole arena is one mapping (or more) with the same advice */
  mt_mapping_t m2;
  CHECK(start != NULL && mt_maps_find(start + size - 1, true, &m2) && mt_vmflag(&m2, "hg") == on);
  /* explicit reservations: allow_large is a permission, the option decides */
  for (int allow = 0; allow <= 1; allow++) {
    mi_arena_id_t rid = 0;
    CHECK_EQ(mi_reserve_os_memory_ex(32 * MiB, true, allow != 0, true, &rid), 0);
    void* rstart = mi_arena_area(rid, NULL);
    mt_mapping_t rm;
    CHECK(rstart != NULL && mt_maps_find(rstart, true, &rm));
    CHECK_MSG(mt_vmflag(&rm, "hg") == (on && allow != 0), "ALLOW_LARGE_OS_PAGES=%d, mi_reserve_os_memory_ex(allow_large=%d): VmFlags:%s", (int)on, allow, rm.vmflags);
  }
  /* works: alloc, zero, purge, reuse */
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 40; i++) {
      work[i] = mi_zalloc(i % 4 == 3 ? 6 * MiB : 512 * KiB);
      const size_t n = (i % 4 == 3 ? 6 * MiB : 512 * KiB);
      CHECK(work[i] != NULL && mt_is_zero(work[i], n));
      if (work[i] != NULL) memset(work[i], 0x99, n);
    }
    for (int i = 0; i < 40; i++) mi_free(work[i]);
    mi_collect(true);
  }
  printf("arena mapping %lx-%lx, AnonHugePages %zu kB, VmFlags:%s\n", (unsigned long)m.start, (unsigned long)m.end, m.anon_huge_kib, m.vmflags);
  mi_free(p);
  return test_summary(on ? "mem-os thp-on" : "mem-os thp-off", NULL);
}

/* The address space the library itself costs a process: its mappings in /proc/self/maps (the
   file's segments and the zero-initialised data after them, up to the next mapping of another
   file or of nobody's after a gap). The segment map is 32 MiB of that (64 MiB where it covers
   48 address bits: aarch64 and other targets, see MI_SEGMENT_MAP_ADDR_BITS); mimalloc 2.0.9
   maps about 33 MiB; with 68 MiB of maps we mapped 69. */
#if defined(__x86_64__) || (defined(__riscv) && __riscv_xlen == 64)
#define MT_SEGMENT_MAP_SIZE (32 * MiB)
#else
#define MT_SEGMENT_MAP_SIZE (64 * MiB)
#endif
static int start_vsz_mode(void) {
  static char maps[1 << 20];
  Dl_info info;
  CHECK(dladdr((void*)&mi_malloc, &info) != 0 && info.dli_fname != NULL);
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  size_t len = 0;
  ssize_t n;
  while (fd >= 0 && len < sizeof(maps) - 1 && (n = read(fd, maps + len, sizeof(maps) - 1 - len)) > 0) len += (size_t)n;
  if (fd >= 0) close(fd);
  maps[len] = 0;
  size_t ours = 0;
  bool in_lib = false;
  unsigned long prev_end = 0;
  for (char* line = maps; *line != 0; ) {
    char* next = strchr(line, '\n');
    if (next != NULL) *next++ = 0; else next = line + strlen(line);
    unsigned long a = 0, b = 0;
    char path[512] = "";
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &a, &b, path) >= 2) {
      const bool is_lib = (strstr(path, "libmimalloc") != NULL);
      if (is_lib) in_lib = true;
      else if (path[0] != 0 || a != prev_end) in_lib = false;   /* another file, or a gap */
      if (in_lib) ours += (size_t)(b - a);
      prev_end = b;
    }
    line = next;
  }
  printf("%s maps %.1f MiB\n", info.dli_fname, mt_mib(ours));
  CHECK(ours > 0);
  CHECK_MSG(ours <= MT_SEGMENT_MAP_SIZE + 4 * MiB, "the library maps %.1f MiB", mt_mib(ours));
  return test_summary("mem-os start-vsz", NULL);
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
  if (strcmp(mode, "disallow-os") == 0) return disallow_os_mode("mem-os disallow-os");
  if (strcmp(mode, "disallow-os-legacy") == 0) return disallow_os_mode("mem-os disallow-os-legacy");
  if (strcmp(mode, "disallow-os-none") == 0) return disallow_os_none_mode();
  if (strcmp(mode, "disallow-arena") == 0) return disallow_arena_mode();
  if (strcmp(mode, "no-arenas") == 0) return no_arenas_mode();
  if (strcmp(mode, "arena-reserve") == 0) return arena_reserve_mode();
  if (strcmp(mode, "os-huge") == 0) return os_huge_mode();
  if (strcmp(mode, "huge-pages") == 0) return huge_pages_mode();
  if (strcmp(mode, "huge-pages-env") == 0) return huge_pages_env_mode();
  if (strcmp(mode, "huge-pages-child") == 0) return huge_pages_child();
  if (strcmp(mode, "numa") == 0) return numa_mode();
  if (strcmp(mode, "numa-child") == 0) return numa_child();
  if (strcmp(mode, "thp-on") == 0) return thp_mode(true);
  if (strcmp(mode, "thp-off") == 0) return thp_mode(false);
  if (strcmp(mode, "start-vsz") == 0) return start_vsz_mode();
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
