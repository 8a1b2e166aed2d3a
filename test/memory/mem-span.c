/* SPDX-License-Identifier: MIT */
/* mem-span.c -- large blocks (above 120 KiB, up to 2 MiB) as spans of adjacent 128 KiB slots of a
   large segment (src/internal/types.h, mi_page_kind_t). Checked here, in a fresh thread (its own
   segments) so the layout is predictable:
   - layout: large blocks share a 4 MiB segment of 128 KiB slots with the first page of each
     medium size class and start on a slot boundary, not in the header's slot while others are
     free; the next page of a medium class whose first page is full is a 512 KiB medium page
     of another segment;
   - contents: blocks of every large size class (and medium ones between them), filled, freed in
     a shuffled order with new ones allocated in between, keep their bytes, and usable_size covers
     the request;
   - zero: calloc of large blocks over slots that held dirty blocks (other spans)
     returns zeroed memory, also over a purged slot followed by a dirty one (a span is only zero
     when all its slots are);
   - reuse: a freed span of 16 slots (2 MiB) gives its slots to one-slot pages and to a span of another size
     without a new segment (segments statistic);
   - interior pointers: mi_heap_contains_block, mi_heap_check_owned and mi_is_in_heap_region find
     the block from any of its slots; mi_free of a pointer into a span's later slot is reported
     as invalid (EINVAL through the error handler) and the block is left intact.
   `runs` (its own run): adjacent due slots are purged with one system call.
   `holes` (its own run): a one-slot page takes a freed slot between pages in use, not one of a
   span freed after it, whose run the next large block of that size takes again.
   Run under the default purge delay, MIMALLOC_PURGE_DELAY=0 (every freed slot purged at once)
   and MIMALLOC_PURGE_DELAY=-1 (never: dirty slots are always reused). */
#include "memory-common.h"

#include <pthread.h>

#define SLOT (128 * KiB)
#define ONE_SLOT (125 * KiB)   /* a large block of one slot (the 128 KiB bin, also with debug padding) */
/* slots of a span of n bytes not at the header's slot (n: a bin size, e.g. a power of two) */
static size_t span_of(size_t n) { return (n + SLOT - 1) / SLOT; }

static size_t seg_off(const void* p) { return (uintptr_t)p & (MT_SEGMENT_SIZE - 1); }
static bool same_segment(const void* a, const void* b) { return (((uintptr_t)a ^ (uintptr_t)b) < MT_SEGMENT_SIZE); }

static uint64_t rng = 0x9E3779B97F4A7C15u;
static size_t rnd(size_t n) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (size_t)(rng % n);
}

static void fill_seed(void* p, size_t n, uint8_t seed) {
  uint8_t* b = (uint8_t*)p;
  for (size_t i = 0; i + 1 < n; i += 512) b[i] = (uint8_t)(seed + i / 512);
  b[n - 1] = seed;
}
static bool check_seed(const void* p, size_t n, uint8_t seed) {
  const uint8_t* b = (const uint8_t*)p;
  for (size_t i = 0; i + 1 < n; i += 512) if (b[i] != (uint8_t)(seed + i / 512)) return false;
  return b[n - 1] == seed;
}

static void layout(void) {
  void* m = mi_malloc(100 * KiB);   /* its class's first page: a slot of the thread's large segment */
  void* l = mi_malloc(1 * MiB);
  CHECK(m != NULL && l != NULL);
  CHECK_MSG(same_segment(m, l), "1 MiB block %p not in the segment of the medium block %p", l, m);
  /* that page (one block of the 104 KiB bin) is full: the class's next page is a medium page */
  void* m2 = mi_malloc(100 * KiB);
  CHECK(m2 != NULL);
#ifndef MI_TEST_SECURE
  CHECK_MSG(!same_segment(m2, l) && seg_off(m2) % (512 * KiB) < 8 * KiB, "second 100 KiB block %p: segment offset %zu", m2, seg_off(m2));
#else   /* secure builds hand out a fresh page's blocks in a random order */
  CHECK_MSG(!same_segment(m2, l) && seg_off(m2) % (512 * KiB) < 512 * KiB - 100 * KiB, "second 100 KiB block %p: segment offset %zu", m2, seg_off(m2));
#endif
  mi_free(m2);
  CHECK_MSG(seg_off(l) % SLOT == 0 && seg_off(l) >= SLOT, "1 MiB block at offset %zu of its segment", seg_off(l));
  CHECK(mi_usable_size(l) >= 1 * MiB);
  void* l2 = mi_malloc(1 * MiB);
  CHECK(l2 != NULL && same_segment(l, l2) && seg_off(l2) % SLOT == 0);
  CHECK_MSG(seg_off(l2) >= seg_off(l) + span_of(1 * MiB) * SLOT || seg_off(l) >= seg_off(l2) + span_of(1 * MiB) * SLOT,
            "spans overlap: offsets %zu and %zu", seg_off(l), seg_off(l2));
  mi_free(l2);
  mi_free(l);
  mi_free(m);
}

enum { NLIVE = 24 };
static void contents(void) {
  static const size_t sizes[] = { 120 * KiB + 1, 128 * KiB, 200 * KiB, 300 * KiB, 500 * KiB, 700 * KiB,
                                  900 * KiB, 1 * MiB, 1 * MiB + 1, 1300 * KiB, 1536 * KiB, 1800 * KiB,
                                  2 * MiB - 100, 2 * MiB, 20 * KiB, 100 * KiB, 120 * KiB, 480 * KiB };
  const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
  void* live[NLIVE] = { 0 };
  size_t lsize[NLIVE] = { 0 };
  uint8_t lseed[NLIVE] = { 0 };
  for (size_t round = 0; round < 600; round++) {
    const size_t i = rnd(NLIVE);
    if (live[i] != NULL) {
      CHECK_MSG(check_seed(live[i], lsize[i], lseed[i]), "block %p of %zu bytes lost its contents", live[i], lsize[i]);
      mi_free(live[i]);
    }
    lsize[i] = sizes[rnd(nsizes)];
    lseed[i] = (uint8_t)round;
    live[i] = mi_malloc(lsize[i]);
    CHECK(live[i] != NULL);
    if (live[i] == NULL) continue;
    CHECK_MSG(mi_usable_size(live[i]) >= lsize[i], "usable size %zu < %zu", mi_usable_size(live[i]), lsize[i]);
    fill_seed(live[i], lsize[i], lseed[i]);
  }
  for (size_t i = 0; i < NLIVE; i++) {
    if (live[i] == NULL) continue;
    CHECK_MSG(check_seed(live[i], lsize[i], lseed[i]), "block %p of %zu bytes lost its contents", live[i], lsize[i]);
    mi_free(live[i]);
  }
}

static void zero(void) {
  for (int round = 0; round < 20; round++) {
    /* dirty spans of several sizes, freed */
    void* d[12];
    for (int i = 0; i < 12; i++) {
      const size_t n = (i % 3 == 0 ? 200 * KiB : i % 3 == 1 ? 700 * KiB : 1700 * KiB);
      d[i] = mi_malloc(n);
      CHECK(d[i] != NULL);
      if (d[i] != NULL) memset(d[i], 0xA5, n);
    }
    for (int i = 0; i < 12; i++) mi_free(d[(i * 5) % 12]);
    /* zeroed spans over those slots */
    void* z[6];
    for (int i = 0; i < 6; i++) {
      const size_t n = (i % 2 == 0 ? 1100 * KiB : 2 * MiB);
      z[i] = mi_calloc(1, n);
      CHECK(z[i] != NULL);
      if (z[i] != NULL) CHECK_MSG(mt_is_zero(z[i], n), "calloc(%zu) = %p is not zero (round %d)", n, z[i], round);
    }
    for (int i = 0; i < 6; i++) mi_free(z[i]);
  }
}

/* A span over a slot purged earlier (zero) and a slot freed just now (dirty, its purge still
   pending): calloc must clear it. Needs a fresh thread (the first large segment's slots). */
static void zero_mixed(void) {
#ifdef MI_TEST_SECURE
  printf("mem-span: zero-mixed skipped: a secure build has no large block of one slot (its guard page takes a second)\n");
  return;
#endif
  void* a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = mi_malloc(ONE_SLOT);   /* one slot each: slots 1, 2, 3, 4 (the header's slot last) */
    CHECK(a[i] != NULL);
    if (a[i] == NULL) return;
    CHECK_MSG(seg_off(a[i]) / SLOT == (size_t)i + 1 && same_segment(a[i], a[0]), "one-slot block %d in slot %zu", i, seg_off(a[i]) / SLOT);
    memset(a[i], 0xC3, ONE_SLOT);
  }
  mi_free(a[1]);
  mt_sleep_ms(50);
  mi_collect(false);   /* slot 2 is purged (default delay), then reads as zero */
  mi_free(a[2]);       /* slot 3 stays dirty until its delay is up */
  const size_t n = SLOT + SLOT / 2;   /* a span of slots 2 and 3 */
  void* z = mi_calloc(1, n);
  CHECK(z != NULL);
  if (z == NULL) return;
  CHECK_MSG(same_segment(z, a[0]) && seg_off(z) == 2 * SLOT, "%zu KiB block at offset %zu", n / KiB, seg_off(z));
  CHECK_MSG(mt_is_zero(z, n), "calloc(%zu) over a purged and a dirty slot is not zero", n);
  mi_free(z);
  mi_free(a[0]);
  mi_free(a[3]);
}

static void reuse(void) {
  void* m = mi_malloc(ONE_SLOT);
  const size_t n = 2 * MiB - 4096;   /* the 2 MiB bin, also with debug padding (16 slots) */
  void* big = mi_malloc(n);
  CHECK(m != NULL && big != NULL && same_segment(m, big));
  if (big != NULL) memset(big, 1, n);
  const int64_t segments = mt_stats()->segments.current;
  mi_free(big);
  /* four one-slot pages and a 1 MiB span fit in the freed slots */
  void* p[4];
  for (int i = 0; i < 4; i++) {
    p[i] = mi_malloc(ONE_SLOT);
    CHECK(p[i] != NULL && same_segment(p[i], m));
  }
  for (int i = 0; i < 4; i++) mi_free(p[i]);
  void* l = mi_malloc(1 * MiB);
  CHECK(l != NULL && same_segment(l, m));
  CHECK_EQ(mt_stats()->segments.current, segments);
  mi_free(l);
  mi_free(m);
}

static _Atomic(int) errors_einval;
static void on_error(int err, void* arg) {
  (void)arg;
  if (err == EINVAL) errors_einval++;
}

static void interior(void) {
  mi_heap_t* heap = mi_heap_get_default();
  const size_t n = 1536 * KiB;
  uint8_t* p = (uint8_t*)mi_malloc(n);
  CHECK(p != NULL);
  if (p == NULL) return;
  memset(p, 0x5A, n);
  for (size_t off = 0; off < n; off += 256 * KiB) {
    CHECK_MSG(mi_heap_contains_block(heap, p + off), "contains_block(%p + %zu) is false", (void*)p, off);
    CHECK_MSG(mi_heap_check_owned(heap, p + off), "check_owned(%p + %zu) is false", (void*)p, off);
    CHECK(mi_is_in_heap_region(p + off));
  }
  mi_register_error(&on_error, NULL);
  const int before = errors_einval;
  mi_free(p + SLOT + 4096);   /* not a block start: inside the span's second slot */
  CHECK_MSG(errors_einval == before + 1, "free of an interior pointer reported %d EINVAL errors", errors_einval - before);
  mi_register_error(NULL, NULL);
  CHECK(mt_is_filled(p, n, 0x5A));
  CHECK(mi_heap_contains_block(heap, p));
  mi_free(p);
}

/* `order` (MIMALLOC_PURGE_DELAY=100, MIMALLOC_ARENA_PURGE_MULT=10): a freed span's slots wait
   the long delay (1 s), a one-slot page's slot freed after them the short one (100 ms), and the
   thread's purge queue stays ordered: the one slot is purged first although queued last. */
static void order(void) {
#ifdef MI_TEST_SECURE
  printf("mem-span: order skipped: a secure build has no large block of one slot (its guard page takes a second)\n");
  CHECK(mi_malloc(0) != NULL);
  return;
#endif
  void* m = mi_malloc(ONE_SLOT);    /* slot 1 */
  void* l = mi_malloc(1 * MiB);     /* a span of slots 2-9 (2-10 with debug padding) */
  void* n = mi_malloc(ONE_SLOT);    /* the next free slot */
  CHECK(m != NULL && l != NULL && n != NULL && same_segment(m, l) && same_segment(m, n));
  if (m == NULL || l == NULL || n == NULL) return;
  memset(l, 1, 1 * MiB);
  memset(n, 1, ONE_SLOT);
  const size_t span_slots = (seg_off(n) - seg_off(l)) / SLOT;
  CHECK_MSG(span_slots == span_of(1 * MiB) || span_slots == span_of(1152 * KiB), "1 MiB span of %zu slots", span_slots);
  const int64_t before = mt_stats()->purged.total;
  const long long t0 = mt_now_ms();
  mi_free(l);
  mi_free(n);
  for (int i = 0; i < 5; i++) mi_collect(false);   /* (retired empty pages are freed) */
  mt_sleep_ms(300);
  mi_collect(false);
  const long long t1 = mt_now_ms();
  const int64_t p1 = mt_stats()->purged.total - before;
  if (t1 - t0 < 900) {   /* (a stalled machine would make the first look late) */
    CHECK_MSG(p1 == (int64_t)SLOT, "after %lld ms: %lld bytes purged, not the one slot (%zu)", t1 - t0, (long long)p1, SLOT);
  }
  mt_sleep_ms(1200);
  mi_collect(false);
  const int64_t p2 = mt_stats()->purged.total - before;
  CHECK_MSG(p2 == (int64_t)((1 + span_slots) * SLOT), "after %lld ms: %lld bytes purged, not all %zu slots", mt_now_ms() - t0, (long long)p2, 1 + span_slots);
  mi_free(m);
}

/* `runs`: the due slots next to each other in a segment are purged together, with one system
   call: two adjacent 1 MiB spans freed and purged (mi_collect(true)) take one purge call for
   their 16 (18 with padding or guards) slots, not one per slot. */
static void runs(void) {
  void* m = mi_malloc(ONE_SLOT);    /* keeps the segment in use (a secure build: one span more) */
  void* a = mi_malloc(1 * MiB);
  void* b = mi_malloc(1 * MiB);
  CHECK(m != NULL && a != NULL && b != NULL && same_segment(a, b));
  if (m == NULL || a == NULL || b == NULL) return;
  const size_t span_slots = (seg_off(a) > seg_off(b) ? seg_off(a) - seg_off(b) : seg_off(b) - seg_off(a)) / SLOT;
  CHECK_MSG(span_slots == span_of(1 * MiB) || span_slots == span_of(1152 * KiB), "1 MiB blocks %zu slots apart", span_slots);
  memset(a, 1, 1 * MiB);
  memset(b, 1, 1 * MiB);
  mi_collect(true);   /* nothing else left to purge */
  const int64_t calls0 = mt_stats()->purge_calls.total, purged0 = mt_stats()->purged.total;
  mi_free(a);
  mi_free(b);
  mi_collect(true);
  const int64_t calls = mt_stats()->purge_calls.total - calls0, purged = mt_stats()->purged.total - purged0;
  CHECK_MSG(purged == (int64_t)(2 * span_slots * SLOT), "%lld bytes purged, not the %zu slots of the two spans", (long long)purged, 2 * span_slots);
  CHECK_MSG(calls == 1, "%lld purge calls for the %zu adjacent slots of two spans (one expected)", (long long)calls, 2 * span_slots);
  mi_free(m);
}

/* `holes` (its own run, with a purge delay long enough that no slot is purged meanwhile): a
   one-slot page takes a freed slot between pages in use before the slots of a span freed after
   it, so the span's run stays whole for the next large block of its size (segment.c,
   mi_segment_find_resident_hole). */
static void holes(void) {
#ifdef MI_TEST_SECURE
  printf("mem-span: holes skipped: a secure build places spans at the segment's end, behind guards\n");
  CHECK(mi_malloc(0) != NULL);
  return;
#endif
  void* a = mi_malloc(ONE_SLOT);   /* slots 1, 2 and 3 */
  void* x = mi_malloc(ONE_SLOT);
  void* c = mi_malloc(ONE_SLOT);
  void* l = mi_malloc(1 * MiB);    /* the span after them */
  CHECK(a != NULL && x != NULL && c != NULL && l != NULL);
  if (a == NULL || x == NULL || c == NULL || l == NULL) return;
  CHECK(same_segment(a, x) && same_segment(a, c) && same_segment(a, l));
  CHECK_MSG(seg_off(x) == seg_off(a) + SLOT && seg_off(c) == seg_off(x) + SLOT && seg_off(l) > seg_off(c),
            "layout: slots %zu %zu %zu, span at %zu", seg_off(a) / SLOT, seg_off(x) / SLOT, seg_off(c) / SLOT, seg_off(l) / SLOT);
  memset(l, 1, 1 * MiB);
  const size_t x_off = seg_off(x);
  mi_free(x);   /* a hole of one slot */
  mi_free(l);   /* then a run of span_of(1 MiB) slots and more: the newest unused slots */
  void* m = mi_malloc(40 * KiB);   /* the first page of its class: one slot */
  CHECK(m != NULL && same_segment(m, a));
  CHECK_MSG(seg_off(m) / SLOT == x_off / SLOT, "the one-slot page went to slot %zu, not to the hole at slot %zu", seg_off(m) / SLOT, x_off / SLOT);
  void* l2 = mi_malloc(1 * MiB);
  CHECK_MSG(l2 == l, "a 1 MiB block at %p (slot %zu), not in the freed span at %p (slot %zu)", l2, seg_off(l2) / SLOT, l, seg_off(l) / SLOT);
  mi_free(l2);
  mi_free(m);
  mi_free(c);
  mi_free(a);
}

static void* run_holes(void* arg) {
  (void)arg;
  holes();
  return NULL;
}

static void* run_runs(void* arg) {
  (void)arg;
  runs();
  return NULL;
}

static void* run_order(void* arg) {
  (void)arg;
  order();
  return NULL;
}

static void* run_zero_mixed(void* arg) {
  (void)arg;
  zero_mixed();
  return NULL;
}

static void* run(void* arg) {
  (void)arg;
  layout();
  contents();
  zero();
  reuse();
  interior();
  return NULL;
}

int main(int argc, char** argv) {
  pthread_t t;
  if (argc > 1 && strcmp(argv[1], "order") == 0) {
    CHECK_EQ(pthread_create(&t, NULL, &run_order, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return test_summary("mem-span order", "a span's slots wait the long purge delay, the queue stays ordered");
  }
  if (argc > 1 && strcmp(argv[1], "holes") == 0) {
    CHECK_EQ(pthread_create(&t, NULL, &run_holes, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return test_summary("mem-span holes", "a one-slot page fills a hole, not a freed span's run");
  }
  if (argc > 1 && strcmp(argv[1], "runs") == 0) {
    CHECK_EQ(pthread_create(&t, NULL, &run_runs, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return test_summary("mem-span runs", "adjacent due slots are purged with one call");
  }
  CHECK_EQ(pthread_create(&t, NULL, &run_zero_mixed, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(pthread_create(&t, NULL, &run, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  return test_summary("mem-span", "layout, contents, zero (also over purged + dirty slots), reuse, interior pointers");
}
