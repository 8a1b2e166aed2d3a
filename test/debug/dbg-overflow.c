/* SPDX-License-Identifier: MIT */
/* Buffer overflows past the requested size and underflows before the start, found by mi_free
   (padding and guard checks, EFAULT). The padding is 24 bytes: canary, delta, caller, check
   word, and the next block's guard (types.h).

   Cases (each writes past the end of one block, then frees it):
     one        mi_malloc(100) (4 bytes of slack), p[100] changed: 1 byte overwritten, 1 past the end
     seven      mi_malloc(96) (8 bytes of slack), p[96..102] changed: 7 bytes of the slack
     seven-canary mi_malloc(100) (4 bytes of slack), p[100..106]: 4 slack and 3 canary bytes
     gap        mi_malloc(100), only p[102] changed: 1 byte overwritten, up to 3 past the end
     canary     mi_malloc(104) (no slack: the size class fits exactly), p[104..107]: the canary
     terminator mi_malloc(104), p[104] = 0 (a string's terminator one past the end): the
                canary's first byte is never zero, so this is 1 byte overwritten
     padding    mi_malloc(8) (a 32-byte block, no slack), 16 bytes written past the end:
                canary, delta and caller; the check word no longer matches, so the requested
                size is unknown: "the padding at the end of its block (size 32) was
                overwritten, so the requested size is unknown (at most 8 bytes)"
     delta      mi_malloc(100), only the delta field changed (p[108..111]): the same kind of
                report (at most 104 bytes), not a made-up size
     underflow  the second of two mi_malloc(100) blocks, p[-1] = 0: "buffer underflow before
                heap block <p>: the 1 bytes before its start were overwritten ..."
     underflow4 the same, p[-4..-1] changed: the 4 bytes before its start
     underflow-first the first block of a fresh page (area.blocks of mi_heap_visit_blocks),
                p[-1] changed: its guard lies in the room before the page's first block
     underflow-remote p[-1] changed, freed by another thread (which reports it)
     canary-zero no message: the check words of a padding (canary, check, guard; live and
                freed) hold a zero byte, and strnlen of a block filled without terminator
                stops one byte into the canary
     aligned    mi_malloc_aligned(100, 64), p[100]
     aligned-big mi_malloc_aligned(200, 4096) (an interior pointer), p[200..202]
     large      mi_malloc(200000) (a medium page), p[200000]
     huge       mi_malloc(40 MiB + 3) (a huge segment), p[size+5] only: up to 6 past the end
     realloc    mi_malloc(100) shrunk in place by mi_realloc(p, 60), q[60..61]
     remote     mi_malloc(100), p[100], freed by another thread (which reports it)
     realloc-aligned  (debug-pending) mi_malloc_aligned(100, 4096) shrunk in place by
                mi_realloc_aligned(p, 60, 4096), q[60..61]
     aligned-small mi_malloc_aligned(10, 16), p[10]  (debug-pending: 16 bytes are usable)
     exact      writing exactly up to the requested size of many blocks is not reported
   Every overwritten byte is flipped (x ^= 0xFF), so it differs from what was there whatever
   the canary's value. In callback mode the program goes on: the heap must still work. */
#include "dbg.h"
#include <pthread.h>

static void* thread_free(void* p) {
  mi_free(p);
  return NULL;
}

static void flip(void* p, size_t from, size_t to) {   /* bytes [from, to) */
  volatile uint8_t* b = (volatile uint8_t*)dbg_launder(p);
  for (size_t i = from; i < to; i++) b[i] = (uint8_t)(b[i] ^ 0xFF);
}

/* Allocate n bytes, write all of them, then change bytes [n+from, n+to) and free. */
static void overflow(void* p, size_t n, size_t from, size_t to) {
  DBG_CHECK(p != NULL);
  if (p == NULL) return;
  dbg_var_ptr("p", p);
  dbg_var_size("size", n);
  DBG_CHECK_MSG(mi_usable_size(p) == n, "usable size %zu", mi_usable_size(p));
  memset(dbg_launder(p), 0x5A, n);
  flip(p, n + from, n + to);
  dbg_step("free");
  mi_free(p);
  dbg_step("freed");
}

/* Check the slack assumption of a case: the overwrite must stay within slack + canary
   (overwriting the delta field gives a different message). */
static void need_slack(size_t n, size_t slack_min, size_t slack_max) {
  size_t slack = dbg_block_size(n) - DBG_PADDING_SIZE - n;
  dbg_var_size("slack", slack);
  DBG_CHECK_MSG(slack >= slack_min && slack <= slack_max, "slack %zu of size %zu not in [%zu,%zu]: the test's assumption is wrong", slack, n, slack_min, slack_max);
}

/* Change the n bytes before p (to 0 when `zero`, else flipped), then free p. */
static void underflow(uint8_t* p, size_t size, size_t n, bool zero) {
  dbg_var_ptr("p", p);
  memset(dbg_launder(p), 0x5A, size);
  volatile uint8_t* b = (volatile uint8_t*)dbg_launder(p);
  for (size_t i = 1; i <= n; i++) b[-(ptrdiff_t)i] = (uint8_t)(zero ? 0 : b[-(ptrdiff_t)i] ^ 0xFF);
  dbg_step("free");
  mi_free(p);
  dbg_step("freed");
}

static bool first_area(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)block; (void)block_size;
  *(void**)arg = area->blocks;
  return false;
}

static bool has_zero_byte(const uint8_t* w) {
  return (w[0] == 0 || w[1] == 0 || w[2] == 0 || w[3] == 0);
}

/* Check words hold a zero byte; a string read past the end stops in the canary. */
static void canary_zero(void) {
  static const size_t sizes[] = { 0, 1, 8, 13, 96, 100, 104, 1000, 5000 };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    const size_t n = sizes[i];
    void* keep = mi_malloc(n);   /* keeps the page in use while p is freed */
    uint8_t* p = (uint8_t*)mi_malloc(n);
    const size_t bsize = dbg_block_size(n);
    const size_t pad = bsize - DBG_PADDING_SIZE;   /* the padding's offset in the block */
    memset(dbg_launder(p), 'a', n);
    const volatile uint8_t* b = (const volatile uint8_t*)dbg_launder(p);
    uint8_t w[4];
    for (size_t k = 0; k < 3; k++) {   /* canary, check word, guard */
      const size_t off = pad + (k == 0 ? 0 : k == 1 ? 8 + sizeof(void*) : 12 + sizeof(void*));
      for (size_t j = 0; j < 4; j++) w[j] = b[off + j];
      DBG_CHECK_MSG(has_zero_byte(w), "mi_malloc(%zu): check word %zu has no zero byte", n, k);
    }
    /* slack (0xDE), then the canary's first byte (never zero), then its zero byte */
    const size_t len = strnlen((const char*)p, bsize);
    DBG_CHECK_MSG(len == pad + 1, "mi_malloc(%zu): a string read stops after %zu bytes, not %zu", n, len, pad + 1);
    if (n >= 8) {   /* freed: canary and check word of the freed form */
      mi_free(p);
      for (size_t k = 0; k < 2; k++) {
        const size_t off = pad + (k == 0 ? 0 : 8 + sizeof(void*));
        for (size_t j = 0; j < 4; j++) w[j] = b[off + j];
        DBG_CHECK_MSG(has_zero_byte(w), "mi_malloc(%zu), freed: check word %zu has no zero byte", n, k);
      }
    }
    else {
      mi_free(p);
    }
    mi_free(keep);
  }
}

static void exact(void) {
  static const size_t sizes[] = { 0, 1, 7, 8, 9, 15, 16, 17, 24, 100, 104, 1000, 1024, 4095, 70000, 300000, 5u << 20 };
  static const size_t aligns[] = { 8, 16, 32, 64, 128, 4096, 65536, 1u << 20 };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    const size_t n = sizes[i];
    uint8_t* p = (uint8_t*)mi_malloc(n);
    DBG_CHECK_MSG(p != NULL && mi_usable_size(p) == n, "usable size of mi_malloc(%zu) is %zu", n, mi_usable_size(p));
    memset(dbg_launder(p), 0x77, mi_usable_size(p));
    mi_free(p);
    for (size_t j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++) {
      uint8_t* q = (uint8_t*)mi_malloc_aligned(n, aligns[j]);
      DBG_CHECK(q != NULL && ((uintptr_t)q % aligns[j]) == 0);
      DBG_CHECK(mi_usable_size(q) >= n);
      memset(dbg_launder(q), 0x66, mi_usable_size(q));
      mi_free(q);
      q = (uint8_t*)mi_zalloc_aligned(n, aligns[j]);
      DBG_CHECK(q != NULL);
      memset(dbg_launder(q), 0x65, mi_usable_size(q));
      mi_free(q);
    }
    /* realloc: shrink in place, grow, and write exactly the new size each time */
    p = (uint8_t*)mi_malloc(n + 64);
    memset(dbg_launder(p), 1, n + 64);
    p = (uint8_t*)mi_realloc(p, n / 2 + 40);
    DBG_CHECK(p != NULL && mi_usable_size(p) == n / 2 + 40);
    memset(dbg_launder(p), 2, n / 2 + 40);
    p = (uint8_t*)mi_realloc(p, 2 * n + 1);
    DBG_CHECK(p != NULL && mi_usable_size(p) == 2 * n + 1);
    memset(dbg_launder(p), 3, 2 * n + 1);
    mi_free(p);
    /* calloc / zalloc / strdup-style sizes */
    p = (uint8_t*)mi_calloc(1, n + 1);
    memset(dbg_launder(p), 4, n + 1);
    mi_free(p);
  }
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  if (strcmp(c, "one") == 0) {
    need_slack(100, 1, 64);
    overflow(mi_malloc(100), 100, 0, 1);
  }
  else if (strcmp(c, "seven") == 0) {
    need_slack(96, 7, 64);    /* 7 bytes of slack */
    overflow(mi_malloc(96), 96, 0, 7);
  }
  else if (strcmp(c, "seven-canary") == 0) {
    need_slack(100, 3, 6);    /* 7 bytes: through the slack into the canary (not the delta) */
    overflow(mi_malloc(100), 100, 0, 7);
  }
  else if (strcmp(c, "gap") == 0) {
    need_slack(100, 3, 64);
    overflow(mi_malloc(100), 100, 2, 3);
  }
  else if (strcmp(c, "canary") == 0) {
    need_slack(104, 0, 0);
    overflow(mi_malloc(104), 104, 0, 4);
  }
  else if (strcmp(c, "terminator") == 0) {
    need_slack(104, 0, 0);
    uint8_t* p = (uint8_t*)mi_malloc(104);
    dbg_var_ptr("p", p);
    memset(dbg_launder(p), 'a', 104);
    ((volatile uint8_t*)dbg_launder(p))[104] = 0;
    dbg_step("free");
    mi_free(p);
    dbg_step("freed");
  }
  else if (strcmp(c, "padding") == 0) {
    need_slack(8, 0, 0);
    overflow(mi_malloc(8), 8, 0, 16);
  }
  else if (strcmp(c, "delta") == 0) {
    need_slack(100, 4, 4);    /* the delta field is 8..11 bytes past the end */
    overflow(mi_malloc(100), 100, 8, 12);
  }
  else if (strcmp(c, "underflow") == 0 || strcmp(c, "underflow4") == 0) {
    const size_t n = (strcmp(c, "underflow") == 0 ? 1 : 4);
    uint8_t* a = (uint8_t*)mi_malloc(100);
    uint8_t* p = (uint8_t*)mi_malloc(100);
    DBG_CHECK_MSG(p == a + dbg_block_size(100), "%p does not follow %p: the test's assumption is wrong", (void*)p, (void*)a);
    underflow(p, 100, n, (n == 1));
    mi_free(a);   /* the block before: its own padding is intact */
  }
  else if (strcmp(c, "underflow-first") == 0) {
    mi_heap_t* heap = mi_heap_new();
    uint8_t* p = (uint8_t*)mi_heap_malloc(heap, 3000);
    void* first = NULL;
    mi_heap_visit_blocks(heap, false, &first_area, &first);
    DBG_CHECK_MSG(first == p, "block %p is not the first of its page (%p): the test's assumption is wrong", (void*)p, first);
    underflow(p, 3000, 1, false);
    mi_heap_delete(heap);
  }
  else if (strcmp(c, "underflow-remote") == 0) {
    uint8_t* a = (uint8_t*)mi_malloc(100);
    uint8_t* p = (uint8_t*)mi_malloc(100);
    dbg_var_ptr("p", p);
    memset(dbg_launder(p), 0x5A, 100);
    flip(p - 1, 0, 1);
    dbg_step("free");
    pthread_t t;
    DBG_CHECK(pthread_create(&t, NULL, &thread_free, p) == 0);
    pthread_join(t, NULL);
    dbg_step("freed");
    mi_free(a);
  }
  else if (strcmp(c, "canary-zero") == 0) {
    canary_zero();
  }
  else if (strcmp(c, "aligned") == 0) {
    void* p = mi_malloc_aligned(100, 64);
    DBG_CHECK(((uintptr_t)p % 64) == 0);
    overflow(p, 100, 0, 1);
  }
  else if (strcmp(c, "aligned-big") == 0) {
    void* keep[4];
    for (int i = 0; i < 4; i++) keep[i] = mi_malloc(200);   /* make an interior pointer likely */
    void* p = mi_malloc_aligned(200, 4096);
    DBG_CHECK(((uintptr_t)p % 4096) == 0);
    overflow(p, 200, 0, 3);
    for (int i = 0; i < 4; i++) mi_free(keep[i]);
  }
  else if (strcmp(c, "large") == 0) {
    overflow(mi_malloc(200000), 200000, 0, 1);
  }
  else if (strcmp(c, "huge") == 0) {
    const size_t n = (40u << 20) + 3;
    overflow(mi_malloc(n), n, 5, 6);
  }
  else if (strcmp(c, "realloc") == 0) {
    uint8_t* p = (uint8_t*)mi_malloc(100);
    memset(dbg_launder(p), 0x11, 100);
    dbg_var_ptr("orig", p);
    uint8_t* q = (uint8_t*)mi_realloc(p, 60);
    DBG_CHECK_MSG(q == p, "realloc(100 -> 60) moved the block: %p -> %p", (void*)p, (void*)q);
    overflow(q, 60, 0, 2);
  }
  else if (strcmp(c, "realloc-aligned") == 0) {
    /* pending: mi_realloc_aligned shrinking in place must move the padding too */
    uint8_t* p = (uint8_t*)mi_malloc_aligned(100, 4096);
    memset(dbg_launder(p), 0x11, 100);
    dbg_var_ptr("orig", p);
    uint8_t* q = (uint8_t*)mi_realloc_aligned(p, 60, 4096);
    DBG_CHECK_MSG(q == p, "realloc_aligned(100 -> 60) moved the block: %p -> %p", (void*)p, (void*)q);
    overflow(q, 60, 0, 2);
  }
  else if (strcmp(c, "remote") == 0) {
    /* the block is freed by another thread: that thread reports */
    uint8_t* p = (uint8_t*)mi_malloc(100);
    dbg_var_ptr("p", p);
    memset(dbg_launder(p), 0x5A, 100);
    flip(p, 100, 101);
    dbg_step("free");
    pthread_t t;
    DBG_CHECK(pthread_create(&t, NULL, &thread_free, p) == 0);
    pthread_join(t, NULL);
    dbg_step("freed");
  }
  else if (strcmp(c, "exact") == 0) {
    exact();
  }
  else if (strcmp(c, "aligned-small") == 0) {
    /* pending: a small alignment must not widen the block's requested size */
    void* p = mi_malloc_aligned(10, 16);
    DBG_CHECK(((uintptr_t)p % 16) == 0);
    overflow(p, 10, 0, 1);
  }
  else {
    return dbg_unknown_case(c);
  }
  /* in callback mode the program goes on: the heap must still work */
  static const size_t sizes[] = { 100, 60, 96, 104, 16, 200, 3000 };
  dbg_heap_works(3000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
