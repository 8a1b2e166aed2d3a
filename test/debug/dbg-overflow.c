/* SPDX-License-Identifier: MIT */
/* Buffer overflows past the requested size, found by mi_free (padding check, EFAULT).

   Cases (each writes past the end of one block, then frees it):
     one        mi_malloc(100), p[100] changed: 1 byte overwritten, 1 past the end
     seven      mi_malloc(100), p[100..106] changed: 7 bytes of the slack
     seven-canary mi_malloc(108) (4 bytes of slack), p[108..114]: 4 slack and 3 canary bytes
     gap        mi_malloc(100), only p[102] changed: 1 byte overwritten, up to 3 past the end
     canary     mi_malloc(112) (no slack: the size class fits exactly), p[112..115]: the canary
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
    need_slack(100, 7, 64);   /* 7 bytes of slack */
    overflow(mi_malloc(100), 100, 0, 7);
  }
  else if (strcmp(c, "seven-canary") == 0) {
    need_slack(108, 3, 6);    /* 7 bytes: through the slack into the canary (not the delta) */
    overflow(mi_malloc(108), 108, 0, 7);
  }
  else if (strcmp(c, "gap") == 0) {
    need_slack(100, 3, 64);
    overflow(mi_malloc(100), 100, 2, 3);
  }
  else if (strcmp(c, "canary") == 0) {
    need_slack(112, 0, 0);
    overflow(mi_malloc(112), 112, 0, 4);
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
  static const size_t sizes[] = { 100, 60, 108, 112, 16, 200, 3000 };
  dbg_heap_works(3000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
