/* SPDX-License-Identifier: MIT */
/* mem-purge.c -- delayed purging: statistics, timing, and reuse of purged memory.

   Usage: mem-purge cycle|delay|now|grid

   cycle  (run under each purge/commit setting, see CMakeLists.txt) six rounds of: allocate a mix
          of small (16 B..1 KiB), medium (20..120 KiB), large (1 MiB), huge (10 MiB, from an
          arena) blocks with every byte written (0xA5), plus once a 300 MiB block (straight from
          the OS); free them all except one small "anchor" block per round (so its segment stays
          and its other pages' slots are purged rather than the whole segment); then
          - even rounds: mi_collect(true), which must run every purge at once;
          - odd rounds: no collect; sleep and allocator activity until the purge statistics
            below are reached (up to 3 s);
          then the statistics must say (by the options in effect):
          - purge_delay >= 0: `purged` and `purge_calls` grew (after mi_collect(true), with
            arenas, by at least 40 MiB: the freed segments); with a delay > 0 an arena purge pass
            ran (`arena_purges`); with purge_decommits the commit figure fell back to within
            16 MiB of the start of the round; without it (MADV_FREE) the `reset` counters grew;
          - purge_delay < 0: `purged`, `purge_calls` and `arena_purges` stay 0 for the whole run;
          and then the same sizes again through mi_zalloc, mi_calloc, mi_zalloc_aligned and
          mi_rezalloc (of a zeroed block) must be all zero (every byte checked), and keep what is
          written into them. At the end mi_stats_get_json shows the same purged, purge_calls,
          arena_purges, reset, committed, reserved and arena_count figures as mi_stats_get.
          Without arenas (MIMALLOC_ARENA_RESERVE=0) only the page slots of live segments are
          purged (segments are unmapped): no arena figures are expected there.
   delay  (MIMALLOC_PURGE_DELAY=300, MIMALLOC_ARENA_PURGE_MULT=3: pages after 300 ms, arena
          blocks after 900 ms) the timing: right after freeing 48 small pages next to an anchor
          and a large block's segment, and after 100 ms of sleep plus activity, nothing is purged
          (statistics unchanged); by about 450 ms the page slots are purged (purged grew by at
          least the 48 slots) but no arena purge has run yet; by about 1.1 s (polled up to 3 s)
          the arena purge has run too (arena_purges grew, purged grew by at least the 4 MiB
          segment; a secure build keeps an empty segment and purges the block's slots
          then). mi_collect(true) purges everything at once (a second round, no sleeping).
          Purged memory then reads as zero through mi_zalloc.
   now    (MIMALLOC_PURGE_DELAY=0) right after the frees (plus mi_collect(false) to free the empty
          pages kept by the heap) the slots and the large block's segment are purged, without
          sleeping and without any arena purge pass (arena_purges stays the same).

   grid   (MIMALLOC_PURGE_DELAY=200) 48 page slots freed one by one, 2 ms apart: purged in a few
          calls (their due times lie on a grid of a quarter of the delay), not one call each.

   Only the statistics are asserted (not the RSS: MADV_FREE leaves it high until memory pressure),
   so this runs under the sanitizers too. */
#include "memory-common.h"

typedef struct snap_s {
  int64_t purged, purge_calls, arena_purges, reset, reset_calls, committed;
} snap_t;

static snap_t snap(void) {
  const mi_stats_t* s = mt_stats();
  snap_t r = { s->purged.total, s->purge_calls.total, s->arena_purges.total, s->reset.total,
               s->reset_calls.total, s->committed.current };
  return r;
}

/* ---------------------------------------------------------------------------------------
   cycle
--------------------------------------------------------------------------------------- */
enum { MAX_BLOCKS = 40000 };
static void*  blocks[MAX_BLOCKS];
static size_t sizes[MAX_BLOCKS];
static size_t nblocks;

static void add_block(size_t size) {
  if (nblocks >= MAX_BLOCKS) return;
  void* p = mi_malloc(size);
  CHECK_MSG(p != NULL, "mi_malloc(%zu) failed", size);
  if (p == NULL) return;
  memset(p, 0xA5, size);
  blocks[nblocks] = p;
  sizes[nblocks] = size;
  nblocks++;
}

static void alloc_mix(uint64_t seed, bool with_os_block) {
  uint64_t x = seed;
  nblocks = 0;
  size_t small_total = 0, medium_total = 0;
  while (small_total < 12 * MiB) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t size = 16 + (size_t)((x >> 33) % 1009);
    add_block(size);
    small_total += size;
  }
  while (medium_total < 12 * MiB) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t size = 20 * KiB + (size_t)((x >> 33) % (100 * KiB));
    add_block(size);
    medium_total += size;
  }
  for (int i = 0; i < 6; i++) add_block(1 * MiB + (size_t)i * 4096);
  for (int i = 0; i < 2; i++) add_block(10 * MiB);
  if (with_os_block) add_block(300 * MiB);
}

static void free_mix(void) {
  for (size_t i = 0; i < nblocks; i++) mi_free(blocks[i]);
}

/* Every size again, zero-initialised by the four entry points in turn; all bytes checked,
   then written and read back. */
static void check_zero_reuse(int round) {
  static void* again[MAX_BLOCKS];
  size_t bad = 0;
  for (size_t i = 0; i < nblocks; i++) {
    const size_t size = sizes[i];
    void* p = NULL;
    switch ((i + (size_t)round) % 4) {
      case 0: p = mi_zalloc(size); break;
      case 1: p = mi_calloc(1, size); break;
      case 2: p = mi_zalloc_aligned(size, 64); break;
      default: {
        void* q = mi_zalloc(8);   /* rezalloc zeroes beyond the old size: start from zero */
        p = mi_rezalloc(q, size);
        if (p == NULL) mi_free(q);
        break;
      }
    }
    again[i] = p;
    if (p == NULL) { CHECK_MSG(p != NULL, "round %d: zero allocation of %zu bytes failed", round, size); continue; }
    const size_t nz = mt_first_nonzero(p, size);
    if (nz != size) {
      bad++;
      CHECK_MSG(nz == size, "round %d: zero-initialised block of %zu bytes at %p has byte %zu = 0x%02x", round, size, p, nz, ((uint8_t*)p)[nz]);
    }
    memset(p, (int)(i & 0x7F) | 0x40, size);
  }
  for (size_t i = 0; i < nblocks; i++) {
    if (again[i] == NULL) continue;
    const uint8_t v = (uint8_t)((i & 0x7F) | 0x40);
    if (!mt_is_filled(again[i], sizes[i], v)) {
      bad++;
      CHECK_MSG(false, "round %d: block %zu of %zu bytes did not keep its contents", round, i, sizes[i]);
    }
    mi_free(again[i]);
  }
  CHECK_MSG(bad == 0, "round %d: %zu bad blocks", round, bad);
}

/* The same figures through mi_stats_get_json (into our buffer: no allocation in between). */
static long long json_number(const char* json, const char* key) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\": ", key);
  const char* p = strstr(json, pat);
  if (p == NULL) return -1;
  p += strlen(pat);
  if (*p == '{') {   /* a count: its "current" */
    const char* c = strstr(p, "\"current\": ");
    if (c == NULL) return -1;
    p = c + strlen("\"current\": ");
  }
  return strtoll(p, NULL, 10);
}

static bool snap_equal(const snap_t* a, const snap_t* b) {
  return (a->purged == b->purged && a->purge_calls == b->purge_calls && a->arena_purges == b->arena_purges &&
          a->reset == b->reset && a->reset_calls == b->reset_calls && a->committed == b->committed);
}

/* The purger thread may run a due purge at any moment (10 ms delays; slower under emulation),
   so the JSON is compared with snapshots taken just before and just after it, retried until the
   two agree (nothing purged in between). */
static void check_json(void) {
  static char json[1 << 18];
  const char* j = NULL;
  snap_t expect = snap();
  for (int tries = 0; tries < 100; tries++) {
    const snap_t before = snap();
    j = mi_stats_get_json(sizeof(json), json);
    expect = snap();
    if (snap_equal(&before, &expect)) break;
    mt_sleep_ms(1);
  }
  CHECK(j != NULL);
  if (j == NULL) return;
  const mi_stats_t* s = mt_stats();
  const snap_t* e = &expect;
  CHECK_EQ(json_number(j, "purged"), e->purged);
  CHECK_EQ(json_number(j, "purge_calls"), e->purge_calls);
  CHECK_EQ(json_number(j, "arena_purges"), e->arena_purges);
  CHECK_EQ(json_number(j, "reset"), e->reset);
  CHECK_EQ(json_number(j, "committed"), e->committed);
  CHECK_EQ(json_number(j, "arena_count"), s->arena_count.total);
  CHECK_EQ(json_number(j, "reserved"), s->reserved.current);
}

static int cycle(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  const bool decommits = mi_option_is_enabled(mi_option_purge_decommits);
  const long mult = mi_option_get(mi_option_arena_purge_mult);
  /* without arenas (MIMALLOC_ARENA_RESERVE=0) segments go back to the OS at once: only the
     page slots of live segments are purged */
  const bool use_arenas = (mi_option_get_size(mi_option_arena_reserve) > 0 && !mi_option_is_enabled(mi_option_disallow_arena_alloc));
  const bool arena_delayed = (use_arenas && delay > 0 && mult > 0);
  mt_activity(2000);
  mi_collect(true);
  const snap_t start = snap();
  void* anchors[6] = { 0 };
  for (int round = 0; round < 6; round++) {
    const snap_t before = snap();
    anchors[round] = mi_malloc(24);
    CHECK(anchors[round] != NULL);
    alloc_mix(1000 + (uint64_t)round, round == 1);
    free_mix();
    const bool collect = (round % 2 == 0);
    snap_t after;
    if (collect) {
      mi_collect(true);
      after = snap();
    }
    else {
      /* wait for the page purges and the arena purge (delay * mult plus the extensions; an
         arena pass that was due from the previous round's frees may run in the middle of this
         round's frees, so wait until the figures checked below are reached, up to 3 s) */
      const long long t0 = mt_now_ms();
      const long long limit = (delay < 0 ? 300 : 3000);
      do {
        mt_sleep_ms(delay < 0 ? 100 : (delay * (mult > 0 ? mult : 1)) / 2 + 20);
        mt_activity(1000);
        after = snap();
      } while ((delay < 0 || (arena_delayed && after.arena_purges == before.arena_purges) || after.purged == before.purged ||
                (decommits && after.committed > before.committed + (int64_t)(16 * MiB))) &&
               mt_now_ms() - t0 < limit);
    }
    if (delay >= 0) {
      CHECK_MSG(after.purged > before.purged, "round %d (%s): purged did not grow (%lld)", round, collect ? "collect" : "sleep+activity", (long long)after.purged);
      CHECK_MSG(after.purge_calls > before.purge_calls, "round %d: purge_calls did not grow", round);
      if (arena_delayed) {
        CHECK_MSG(after.arena_purges > before.arena_purges, "round %d (%s): no arena purge pass", round, collect ? "collect" : "sleep+activity");
      }
      /* mi_collect(true): at least the large and huge blocks' segments (2 x 4 MiB + 2 x 12 MiB)
         and most small and medium ones (with sleep+activity the activity may take some of the
         freed blocks again before their purge) */
      if (use_arenas && collect) CHECK_MSG(after.purged >= before.purged + (int64_t)(40 * MiB), "round %d: purged grew by only %lld bytes", round, (long long)(after.purged - before.purged));
      if (decommits) {
        CHECK_MSG(after.committed <= before.committed + (int64_t)(16 * MiB), "round %d: committed is %.1f MiB above the start of the round after the purge",
                  round, (double)(after.committed - before.committed) / MiB);
      }
      else {
        CHECK_MSG(after.reset_calls > before.reset_calls && after.reset > before.reset, "round %d: purge_decommits=0 but no reset (MADV_FREE) counted", round);
      }
    }
    check_zero_reuse(round);
  }
  for (int round = 0; round < 6; round++) mi_free(anchors[round]);
  check_json();
  const snap_t end = snap();
  if (delay < 0) {
    CHECK_EQ(end.purged, 0);
    CHECK_EQ(end.purge_calls, 0);
    CHECK_EQ(end.arena_purges, 0);
  }
  return test_summary("mem-purge cycle", "arena_reserve %zu KiB, purge_delay %ld, arena_purge_mult %ld, purge_decommits %d, eager_commit %ld, eager_commit_delay %ld, arena_eager_commit %ld: "
                      "purged %.1f MiB in %lld calls, %lld arena purge passes, reset %.1f MiB",
                      mi_option_get_size(mi_option_arena_reserve) / KiB, delay, mult, (int)decommits, mi_option_get(mi_option_eager_commit), mi_option_get(mi_option_eager_commit_delay),
                      mi_option_get(mi_option_arena_eager_commit), (double)(end.purged - start.purged) / MiB,
                      (long long)(end.purge_calls - start.purge_calls), (long long)(end.arena_purges - start.arena_purges),
                      (double)(end.reset - start.reset) / MiB);
}

/* ---------------------------------------------------------------------------------------
   delay / now
--------------------------------------------------------------------------------------- */
enum { PAGE_BLOCKS = 64 * 1024 / 256 };   /* 256-byte blocks per 64 KiB page (about) */

/* An anchor block, then 48 pages' worth of 256-byte blocks after it (mostly in the anchor's
   segment: a fresh small segment has 64 page slots), and a 1 MiB block (its own segment). */
typedef struct work_s {
  void* anchor;
  void* small[48 * PAGE_BLOCKS];
  void* large;
} work_t;
static work_t work;

static void work_alloc(void) {
  work.anchor = mi_malloc(256);
  CHECK(work.anchor != NULL);
  for (size_t i = 0; i < 48 * PAGE_BLOCKS; i++) {
    work.small[i] = mi_malloc(256);
    CHECK(work.small[i] != NULL);
    if (work.small[i] != NULL) memset(work.small[i], 0x5A, 256);
  }
  work.large = mi_malloc(1 * MiB);
  CHECK(work.large != NULL);
  if (work.large != NULL) memset(work.large, 0x5A, 1 * MiB);
}

static void work_free(void) {
  for (size_t i = 0; i < 48 * PAGE_BLOCKS; i++) mi_free(work.small[i]);
  mi_free(work.large);
  mi_collect(false);   /* empty pages kept by the heap (retired) go back to their segments */
}

static void zero_check(const char* when) {
  size_t bad = 0;
  for (size_t i = 0; i < 48 * PAGE_BLOCKS; i++) {
    work.small[i] = mi_zalloc(256);
    if (work.small[i] == NULL || !mt_is_zero(work.small[i], 256)) bad++;
  }
  work.large = mi_zalloc(1 * MiB);
  CHECK_MSG(work.large != NULL && mt_is_zero(work.large, 1 * MiB), "%s: mi_zalloc(1 MiB) not zero", when);
  CHECK_MSG(bad == 0, "%s: %zu of the 256-byte mi_zalloc blocks were not zero", when, bad);
  for (size_t i = 0; i < 48 * PAGE_BLOCKS; i++) mi_free(work.small[i]);
  mi_free(work.large);
}

/* Allocator activity without taking page slots or arena blocks of the memory under test (a
   block that is reused and freed again starts a new purge delay): a small allocation and a
   normal collect, which runs the purges that are due. */
static void trigger(void) {
  void* a = mi_malloc(64);
  CHECK(a != NULL);
  mi_free(a);
  mi_collect(false);
}

/* one step of a wait for purges: sleep, trigger, then the figures (in *s) and the ms since t0 */
static long long poll_step(int ms, long long t0, snap_t* s) {
  mt_sleep_ms(ms);
  trigger();
  *s = snap();
  return mt_now_ms() - t0;
}

static int delay_test(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  const long mult = mi_option_get(mi_option_arena_purge_mult);
  CHECK_MSG(delay == 300 && mult == 3, "needs MIMALLOC_PURGE_DELAY=300 and MIMALLOC_ARENA_PURGE_MULT=3 (have %ld, %ld)", delay, mult);
  mt_activity(2000);
  mi_collect(true);
  work_alloc();
  const snap_t s0 = snap();
  const long long t0 = mt_now_ms();
  work_free();
  const snap_t s1 = snap();
  CHECK_MSG(s1.purged == s0.purged && s1.purge_calls == s0.purge_calls && s1.arena_purges == s0.arena_purges,
            "right after the frees: purged %lld -> %lld, arena_purges %lld -> %lld", (long long)s0.purged, (long long)s1.purged,
            (long long)s0.arena_purges, (long long)s1.arena_purges);
  mt_sleep_ms(100);
  trigger();
  const snap_t s2 = snap();
  const long long t2 = mt_now_ms() - t0;
  if (t2 < 280) {   /* (a badly stalled machine could have passed the deadline already) */
    CHECK_MSG(s2.purged == s0.purged && s2.arena_purges == s0.arena_purges, "%lld ms after the frees (delay 300 ms): purged %lld -> %lld",
              t2, (long long)s0.purged, (long long)s2.purged);
  }
  /* page slots: due at 300 ms */
  snap_t s3;
  long long t3;
  do {
    t3 = poll_step(50, t0, &s3);
  } while (s3.purged < s0.purged + (int64_t)(40 * 64 * KiB) && t3 < 3000);
  CHECK_MSG(s3.purged >= s0.purged + (int64_t)(40 * 64 * KiB), "%lld ms after the frees: purged grew by %lld bytes only", t3, (long long)(s3.purged - s0.purged));
  CHECK_MSG(t3 >= 300, "the page slots were purged after %lld ms, before the 300 ms delay", t3);
  if (t3 < 850) {
    CHECK_MSG(s3.arena_purges == s0.arena_purges, "an arena purge ran %lld ms after the frees (arena delay 900 ms)", t3);
  }
  snap_t s4;
  long long t4;
#if MI_TEST_SECURE
  /* a secure build keeps an empty large segment (its guards cost system calls): the
     large block's slots are purged after the longest slot delay, the arena delay */
  do {
    t4 = poll_step(100, t0, &s4);
  } while (s4.purged < s3.purged + (int64_t)MiB && t4 < 3000);
  CHECK_MSG(s4.purged >= s3.purged + (int64_t)MiB, "%lld ms after the frees the large block's slots were not purged (%lld bytes)", t4, (long long)(s4.purged - s3.purged));
  CHECK_MSG(t4 >= 900, "the large block's slots were purged after %lld ms, before the 900 ms delay", t4);
#else
  /* the large block's segment: due at 900 ms (plus 1 ms per further freed segment) */
  do {
    t4 = poll_step(100, t0, &s4);
  } while (s4.arena_purges == s0.arena_purges && t4 < 3000);
  CHECK_MSG(s4.arena_purges > s0.arena_purges, "no arena purge %lld ms after the frees", t4);
  CHECK_MSG(t4 >= 900, "the arena purge ran after %lld ms, before the 900 ms delay", t4);
  CHECK_MSG(s4.purged >= s3.purged + (int64_t)(4 * MiB), "the arena purge purged %lld bytes, less than the 4 MiB segment", (long long)(s4.purged - s3.purged));
#endif
  zero_check("after the delayed purges");
  void* first_anchor = work.anchor;

  /* a second round: mi_collect(true) purges at once */
  work_alloc();
  const snap_t s5 = snap();
  work_free();
  mi_collect(true);
  const snap_t s6 = snap();
  const long long t6 = mt_now_ms();
  mi_free(first_anchor);
  CHECK_MSG(s6.purged >= s5.purged + (int64_t)(40 * 64 * KiB + 4 * MiB), "mi_collect(true): purged grew by %lld bytes", (long long)(s6.purged - s5.purged));
  CHECK(s6.arena_purges > s5.arena_purges);
  zero_check("after mi_collect(true)");
  (void)t6;
  mi_free(work.anchor);
  return test_summary("mem-purge delay", "slots purged after %lld ms, arena after %lld ms", t3, t4);
}

/* grid: page slots freed one by one about 2 ms apart fall in a few steps of the due-time grid
   (segment.c: a quarter of the delay) and are purged in a few runs, not one system call each.
   Meanwhile the thread runs the purges that are due every 2 ms (trigger: as a busy thread's
   slow path does), which without the grid would find one slot due each time. */
static int grid_test(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  CHECK_MSG(delay == 200, "needs MIMALLOC_PURGE_DELAY=200 (have %ld)", delay);
  mt_activity(2000);
  mi_collect(true);
  work_alloc();
  mi_free(work.large);
  const snap_t s0 = snap();
  const long long t0 = mt_now_ms();
  for (size_t page = 0; page < 48; page++) {
    for (size_t i = page * PAGE_BLOCKS; i < (page + 1) * PAGE_BLOCKS; i++) mi_free(work.small[i]);
    mt_sleep_ms(2);
  }
  const long long spread = mt_now_ms() - t0;
  snap_t s1;
  long long t1;
  do {
    t1 = poll_step(2, t0, &s1);
  } while (t1 < 3 * delay + spread && t1 < 3000);   /* (every slot due by 1.25 delays + the spread) */
  const long long calls = s1.purge_calls - s0.purge_calls;
  const long long cells = spread / (delay / 4) + 2;   /* grid cells the frees fell in */
  CHECK_MSG(s1.purged >= s0.purged + (int64_t)(40 * 64 * KiB), "%lld ms after the frees: purged grew by %lld bytes only", t1, (long long)(s1.purged - s0.purged));
  CHECK_MSG(calls <= cells + 2, "48 page slots freed over %lld ms took %lld purge calls (at most %lld expected: runs of slots due together)", spread, calls, cells + 2);
  mi_free(work.anchor);
  return test_summary("mem-purge grid", "48 slots freed over %lld ms purged in %lld calls", spread, calls);
}

static int now_test(void) {
  const long delay = mi_option_get(mi_option_purge_delay);
  CHECK_MSG(delay == 0, "needs MIMALLOC_PURGE_DELAY=0 (have %ld)", delay);
  mt_activity(2000);
  mi_collect(true);
  for (int round = 0; round < 3; round++) {
    work_alloc();
    const snap_t s0 = snap();
    work_free();
    const snap_t s1 = snap();
#if MI_TEST_SECURE
    const int64_t large = (int64_t)MiB;       /* the large block's slots (its empty segment is kept) */
#else
    const int64_t large = (int64_t)(4 * MiB); /* the large block's segment */
#endif
    CHECK_MSG(s1.purged >= s0.purged + (int64_t)(40 * 64 * KiB) + large, "round %d: right after the frees purged grew by %lld bytes", round, (long long)(s1.purged - s0.purged));
    CHECK_MSG(s1.arena_purges == s0.arena_purges, "round %d: delay 0 purges directly, yet an arena purge pass ran", round);
    zero_check("purge delay 0");
    mi_free(work.anchor);
  }
  return test_summary("mem-purge now", NULL);
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "cycle");
  if (strcmp(mode, "cycle") == 0) return cycle();
  if (strcmp(mode, "delay") == 0) return delay_test();
  if (strcmp(mode, "now") == 0) return now_test();
  if (strcmp(mode, "grid") == 0) return grid_test();
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
