/* SPDX-License-Identifier: MIT */
/* mem-tail.c -- a page set up in a warm slot gives back what the slot's earlier page left
   resident past its capacity (page.c, _mi_page_trim_tail; heap.c, mi_heap_page_collect).

   A heap fills a 64 KiB page with 16-byte blocks, writes them all and is destroyed: its slot
   waits for its purge, resident (MIMALLOC_PURGE_DELAY is long here). The default heap then
   takes its first block of another size, whose page reuses that warm slot (checked: the block
   lies in it), so the OS pages past the new page's capacity are resident but unused. Then:
     - mi_collect(false) leaves them at its first look (a page that may still grow), and again
       at the next look after the page grew; the next look with no growth gives them back;
     - for a second size, mi_collect(true) gives them back at once;
     - the blocks handed out keep their contents, new blocks extend over the given-back pages
       and can be written, and calloc's read zero.
   A slot whose earlier page handed out one OS page of blocks only: the next page there covers
   that with its first extension, and its looks make no system call at all (the statistics'
   reset calls stay the same).
   A page of one large block in a span of 128 KiB slots an earlier block wrote in full (a
   160 KiB block in 256 KiB): the 92 KiB past the block are given back by two looks of
   mi_collect(false), and, for a block a thread hands on when it ends, by the thread's end.
   With `bins`: a new page takes the warm slot a page of its own size class left, not a newer
   one of another class (segment.c, mi_segment_find_hinted_slot): a page of few small blocks
   does not carry a slot that 48 KiB of bigger blocks dirtied, nor does the next page of those
   fault a fresh slot in again.
   With `periodic` (MIMALLOC_PURGE_DELAY=10): the slow path's periodic looks give back a tail of
   48 KiB or more and leave a smaller one to an explicit collect (run_periodic).
   With `expect-trim` (release builds without a memory checker, not secure: page.c,
   MI_PAGE_PURGE_SMALL) the reuse of the warm slot is required and the resident OS pages are
   counted with mincore; elsewhere the same steps run and only the contents are checked.

   usage: mem-tail [periodic | bins] [expect-trim] */
#include "memory-common.h"

#define OS_PAGE   ((size_t)4096)
#define PAGE_SIZE ((size_t)64 * 1024)

/* resident OS pages of p's page past its capacity (from the first OS page no block starts in) */
static size_t tail_resident(const void* p, uintptr_t slot) {
  const mi_heap_area_t a = mt_area_of(mi_heap_get_default(), p);
  const uintptr_t cap_end = (uintptr_t)a.blocks + a.committed;
  return mt_resident_pages((cap_end + OS_PAGE - 1) / OS_PAGE * OS_PAGE, slot + PAGE_SIZE);
}

/* A destroyed heap's warm 64 KiB slot; returns its start. */
static uintptr_t warm_slot(void) {
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  void* first = NULL;
  for (size_t i = 0; i < PAGE_SIZE / 16; i++) {
    uint8_t* b = (uint8_t*)mi_heap_malloc(h, 16);
    CHECK(b != NULL);
    memset(b, 0x5a, 16);
    if (first == NULL) first = b;
  }
  const mi_heap_area_t a = mt_area_of(h, first);
  const uintptr_t slot = (uintptr_t)a.blocks / PAGE_SIZE * PAGE_SIZE;
  mi_heap_destroy(h);
  return slot;
}

static bool expect_trim;

static void check_blocks(uint8_t** blocks, size_t n, size_t size) {
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < size; j++) {
      if (blocks[i][j] != (uint8_t)(i + 1)) {
        CHECK_MSG(false, "block %zu of %zu bytes changed at byte %zu", i, size, j);
        return;
      }
    }
  }
}

/* One size: a first block in a warm slot, its tail given back by two mi_collect(false) looks
   without growth (with_force: by one mi_collect(true)). */
static void run(size_t size, bool with_force) {
  enum { N = 40 };
  const uintptr_t slot = warm_slot();
  uint8_t* blocks[N];
  size_t n = 0;
  blocks[n] = (uint8_t*)mi_malloc(size);
  CHECK(blocks[n] != NULL);
  /* (debug builds may take another slot: there the contents are checked only) */
  if (expect_trim) {
    CHECK_MSG((uintptr_t)blocks[n] / PAGE_SIZE * PAGE_SIZE == slot, "size %zu: the first block %p is not in the warm slot %#zx",
              size, (void*)blocks[n], (size_t)slot);
  }
  memset(blocks[n], n + 1, size);
  n++;
  const size_t before = tail_resident(blocks[0], slot);
  if (expect_trim) CHECK_MSG(before >= 8, "size %zu: only %zu OS pages resident past the capacity of a warm slot", size, before);
  if (with_force) {
    mi_collect(true);
    if (expect_trim) CHECK_MSG(tail_resident(blocks[0], slot) == 0, "size %zu: mi_collect(true) left %zu of %zu", size, tail_resident(blocks[0], slot), before);
  }
  else {
    mi_collect(false);   /* the first look: the page may still grow */
    if (expect_trim) CHECK_MSG(tail_resident(blocks[0], slot) == before, "size %zu: the first look gave back %zu of %zu", size, before - tail_resident(blocks[0], slot), before);
    /* grow the page (a few more blocks, past its first extension) */
    const size_t cap0 = mt_area_of(mi_heap_get_default(), blocks[0]).committed;
    while (n < N && mt_area_of(mi_heap_get_default(), blocks[0]).committed == cap0) {
      blocks[n] = (uint8_t*)mi_malloc(size);
      CHECK(blocks[n] != NULL);
      memset(blocks[n], n + 1, size);
      n++;
    }
    CHECK_MSG(mt_area_of(mi_heap_get_default(), blocks[0]).committed > cap0, "size %zu: the page did not grow", size);
    const size_t grown = tail_resident(blocks[0], slot);
    mi_collect(false);   /* it grew since the last look: kept */
    if (expect_trim) CHECK_MSG(tail_resident(blocks[0], slot) == grown, "size %zu: a look right after growth gave back %zu of %zu", size, grown - tail_resident(blocks[0], slot), grown);
    mi_collect(false);   /* no growth since: given back */
    if (expect_trim) CHECK_MSG(tail_resident(blocks[0], slot) == 0, "size %zu: the look after no growth left %zu of %zu", size, tail_resident(blocks[0], slot), grown);
  }
  check_blocks(blocks, n, size);
  /* new blocks over the given-back pages: writable, calloc's zero */
  while (n < N) {
    blocks[n] = (uint8_t*)((n % 2) ? mi_calloc(1, size) : mi_malloc(size));
    CHECK(blocks[n] != NULL);
    if (n % 2) CHECK_MSG(mt_is_zero(blocks[n], size), "size %zu: calloc'ed block %zu is not zero", size, n);
    memset(blocks[n], n + 1, size);
    n++;
  }
  CHECK_MSG(mt_area_of(mi_heap_get_default(), blocks[0]).committed >= 16 * 1024 || (uintptr_t)blocks[N - 1] / PAGE_SIZE * PAGE_SIZE != (uintptr_t)blocks[0] / PAGE_SIZE * PAGE_SIZE,
            "size %zu: the page did not extend over its old tail", size);
  check_blocks(blocks, n, size);
  for (size_t i = 0; i < n; i++) mi_free(blocks[i]);
}

/* A warm slot where the destroyed heap's page handed out one extension of 16-byte blocks (an
   OS page): a page of 2000-byte blocks there extends past it at once, so it has no tail to give
   back and two looks without growth make no call. */
static void run_covered(void) {
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  uint8_t* b = (uint8_t*)mi_heap_malloc(h, 16);
  CHECK(b != NULL);
  memset(b, 0x5a, 16);
  const uintptr_t slot = (uintptr_t)mt_area_of(h, b).blocks / PAGE_SIZE * PAGE_SIZE;
  mi_heap_destroy(h);
  uint8_t* p = (uint8_t*)mi_malloc(2000);
  CHECK(p != NULL);
  memset(p, 0x33, 2000);
  if (expect_trim) {
    CHECK_MSG((uintptr_t)p / PAGE_SIZE * PAGE_SIZE == slot, "the 2000-byte block %p is not in the warm slot %#zx", (void*)p, (size_t)slot);
    const int64_t calls = mt_stats()->reset_calls.total;
    mi_collect(false);
    mi_collect(false);
    const int64_t made = mt_stats()->reset_calls.total - calls;
    CHECK_MSG(made == 0, "%lld discard call(s) for a tail its page's blocks already cover", (long long)made);
  }
  for (size_t j = 0; j < 2000; j++) {
    if (p[j] != 0x33) { CHECK_MSG(false, "the 2000-byte block changed at byte %zu", j); break; }
  }
  mi_free(p);
}

#define SLOT ((size_t)128 * 1024)
#define BIG_OLD  ((size_t)250 * 1024)   /* a 256 KiB span, written in full */
#define BIG_NEW  ((size_t)150000)       /* its bin (160 KiB) takes a 256 KiB span too */

/* resident OS pages of the span of a large block p past the block */
static size_t span_tail_resident(const void* p) {
  const uintptr_t start = ((uintptr_t)p + mi_usable_size(p) + OS_PAGE - 1) / OS_PAGE * OS_PAGE;
  const uintptr_t end = ((uintptr_t)p + mi_usable_size(p) + SLOT - 1) / SLOT * SLOT;
  return mt_resident_pages(start, end);
}

/* A large block in a span an earlier block of this thread wrote in full and freed (a block
   beside it keeps the segment in use). */
static uint8_t* big_in_warm_span(void** keep) {
  *keep = mi_malloc(BIG_OLD);
  uint8_t* old = (uint8_t*)mi_malloc(BIG_OLD);
  CHECK(*keep != NULL && old != NULL);
  memset(old, 0x77, BIG_OLD);
  mi_free(old);
  uint8_t* p = (uint8_t*)mi_malloc(BIG_NEW);
  CHECK(p != NULL);
  memset(p, 0x44, BIG_NEW);
  if (expect_trim) {
    CHECK_MSG(p == old, "the %zu-byte block %p did not take the warm span %p", BIG_NEW, (void*)p, (void*)old);
    CHECK_MSG(span_tail_resident(p) >= 16, "only %zu OS pages resident past a block in a warm span", span_tail_resident(p));
  }
  return p;
}

static void check_big(const uint8_t* p, const char* what) {
  for (size_t j = 0; j < BIG_NEW; j += 997) {
    if (p[j] != 0x44) { CHECK_MSG(false, "%s: the large block changed at byte %zu", what, j); return; }
  }
}

/* the owner's looks: kept at the first, given back at the second (a one-block page never grows) */
static void run_span(void) {
  void* keep;
  uint8_t* p = big_in_warm_span(&keep);
  const size_t before = span_tail_resident(p);
  mi_collect(false);
  if (expect_trim) CHECK_MSG(span_tail_resident(p) == before, "the first look gave back %zu of %zu OS pages past a large block", before - span_tail_resident(p), before);
  mi_collect(false);
  if (expect_trim) CHECK_MSG(span_tail_resident(p) == 0, "the second look left %zu of %zu OS pages past a large block", span_tail_resident(p), before);
  check_big(p, "after the looks");
  mi_free(p);
  mi_free(keep);
}

/* a thread that ends with its large block handed on: the tail goes at its end */
static void* span_thread(void* arg) {
  void* keep;
  uint8_t** out = (uint8_t**)arg;
  out[0] = big_in_warm_span(&keep);
  out[1] = (uint8_t*)keep;
  return NULL;
}

static void run_span_ended(void) {
  uint8_t* out[2] = { NULL, NULL };
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &span_thread, out) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(out[0] != NULL);
  if (expect_trim) CHECK_MSG(span_tail_resident(out[0]) == 0, "%zu OS pages resident past a large block its ended thread handed on", span_tail_resident(out[0]));
  check_big(out[0], "after its thread ended");
  mi_free(out[0]);
  mi_free(out[1]);
}

/* The periodic collect (`periodic`: MIMALLOC_PURGE_DELAY=10, so every 100 ms on the allocation
   slow path): two looks give back a tail of 48 KiB or more (MI_TRIM_PERIODIC_MIN) and leave a
   smaller one, which mi_collect(false) then takes. Each round sleeps past the interval and makes
   slow-path calls (large blocks, a page each), so the looks happen however loaded the machine
   is. */
static void run_periodic(void) {
  enum { NA = 24 };
  const uintptr_t slot_a = warm_slot();
  uint8_t* a[NA];
  for (size_t i = 0; i < NA; i++) {   /* 24 KiB of 1000-byte blocks: a tail of 40 KiB */
    a[i] = (uint8_t*)mi_malloc(1000);
    CHECK(a[i] != NULL);
    memset(a[i], (int)(i + 1), 1000);
  }
  const uintptr_t slot_b = warm_slot();
  uint8_t* b = (uint8_t*)mi_malloc(2000);   /* one block: a tail of about 60 KiB */
  CHECK(b != NULL);
  memset(b, 1, 2000);
  if (expect_trim) {
    CHECK_MSG((uintptr_t)a[0] / PAGE_SIZE * PAGE_SIZE == slot_a && (uintptr_t)a[NA - 1] / PAGE_SIZE * PAGE_SIZE == slot_a,
              "the 1000-byte blocks %p..%p are not in the warm slot %#zx", (void*)a[0], (void*)a[NA - 1], (size_t)slot_a);
    CHECK_MSG((uintptr_t)b / PAGE_SIZE * PAGE_SIZE == slot_b, "the 2000-byte block %p is not in the warm slot %#zx", (void*)b, (size_t)slot_b);
  }
  const size_t before_a = tail_resident(a[0], slot_a);
  const size_t before_b = tail_resident(b, slot_b);
  if (expect_trim) {
    CHECK_MSG(before_a >= 4 && before_a * OS_PAGE < 48 * 1024, "%zu OS pages resident past the 1000-byte page's capacity (expected 4..11)", before_a);
    CHECK_MSG(before_b * OS_PAGE >= 48 * 1024, "only %zu OS pages resident past the 2000-byte page's capacity", before_b);
  }
  for (int round = 0; round < 3; round++) {
    mt_sleep_ms(120);
    void* big[48];   /* a page each: every one takes the slow path */
    for (int i = 0; i < 48; i++) { big[i] = mi_malloc(200 * 1024); CHECK(big[i] != NULL); }
    for (int i = 0; i < 48; i++) mi_free(big[i]);
  }
  if (expect_trim) {
    CHECK_MSG(tail_resident(b, slot_b) == 0, "the periodic looks left %zu of %zu OS pages past the 2000-byte page", tail_resident(b, slot_b), before_b);
    CHECK_MSG(tail_resident(a[0], slot_a) == before_a, "the periodic looks gave back %zu of the %zu OS pages of a tail under 48 KiB", before_a - tail_resident(a[0], slot_a), before_a);
  }
  mi_collect(false);
  mi_collect(false);
  if (expect_trim) CHECK_MSG(tail_resident(a[0], slot_a) == 0, "mi_collect(false) left %zu of %zu OS pages past the 1000-byte page", tail_resident(a[0], slot_a), before_a);
  check_blocks(a, NA, 1000);
  check_blocks(&b, 1, 2000);   /* (filled with 1: block 0's tag) */
  for (size_t i = 0; i < NA; i++) mi_free(a[i]);
  mi_free(b);
}

/* `bins`: two heaps each leave one warm slot, a page of 48-byte blocks (one OS page of them)
   and, freed after it, a page of 1008-byte blocks (48 KiB of them); a third heap's first
   blocks of each size go back to their own class's slot. */
static uintptr_t slot_of_class(mi_heap_t* h, size_t size, size_t count) {
  uintptr_t slot = 0;
  for (size_t i = 0; i < count; i++) {
    uint8_t* b = (uint8_t*)mi_heap_malloc(h, size);
    CHECK(b != NULL);
    memset(b, 0x6b, size);
    if (i == 0) slot = (uintptr_t)b / PAGE_SIZE * PAGE_SIZE;
    else CHECK_MSG((uintptr_t)b / PAGE_SIZE * PAGE_SIZE == slot, "size %zu: block %zu left the first page", size, i);
  }
  return slot;
}

static void run_bins(void) {
  mi_heap_t* hs = mi_heap_new();
  mi_heap_t* hb = mi_heap_new();
  CHECK(hs != NULL && hb != NULL);
  const uintptr_t small_slot = slot_of_class(hs, 48, 64);
  const uintptr_t big_slot = slot_of_class(hb, 1008, 48);
  CHECK(small_slot != big_slot);
  mi_heap_destroy(hs);   /* the small class's slot waits first, */
  mi_heap_destroy(hb);   /* the big class's after it: the newest */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  void* s = mi_heap_malloc(h, 48);
  void* b = mi_heap_malloc(h, 1008);
  CHECK(s != NULL && b != NULL);
  if (expect_trim) {
    CHECK_MSG((uintptr_t)s / PAGE_SIZE * PAGE_SIZE == small_slot, "the 48-byte block %p is not in the slot %#zx its class left (the 1008-byte class's: %#zx)",
              s, (size_t)small_slot, (size_t)big_slot);
    CHECK_MSG((uintptr_t)b / PAGE_SIZE * PAGE_SIZE == big_slot, "the 1008-byte block %p is not in the slot %#zx its class left (the 48-byte class's: %#zx)",
              b, (size_t)big_slot, (size_t)small_slot);
    /* the small page carries no dirty tail: past its first OS page, nothing of its slot is resident */
    const uintptr_t at = (uintptr_t)s / PAGE_SIZE * PAGE_SIZE;
    CHECK_MSG(mt_resident_pages(at + OS_PAGE, at + PAGE_SIZE) == 0, "the 48-byte block's slot has %zu OS pages resident past its first",
              mt_resident_pages(at + OS_PAGE, at + PAGE_SIZE));
  }
  memset(s, 1, 48);
  memset(b, 2, 1008);
  mi_heap_destroy(h);
}

int main(int argc, char** argv) {
  bool periodic = false, bins = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "expect-trim") == 0) expect_trim = true;
    else if (strcmp(argv[i], "periodic") == 0) periodic = true;
    else if (strcmp(argv[i], "bins") == 0) bins = true;
    else { fprintf(stderr, "usage: mem-tail [periodic | bins] [expect-trim]\n"); return 2; }
  }
  expect_trim = expect_trim && MT_RSS_ASSERTS;
  if (bins) {
    run_bins();
    return test_summary("mem-tail", "bins, %s", expect_trim ? "slots checked" : "contents only");
  }
  if (periodic) {
    run_periodic();
    return test_summary("mem-tail", "periodic, %s", expect_trim ? "resident pages checked" : "contents only");
  }
  run(1008, false);   /* sizes no page of the default heap has yet */
  run(656, true);
  run_covered();
  run_span();
  run_span_ended();
  return test_summary("mem-tail", "%s", expect_trim ? "resident pages checked" : "contents only");
}
