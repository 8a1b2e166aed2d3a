/* SPDX-License-Identifier: MIT */
/* errno.c -- successful calls through the override leave errno alone; failures set ENOMEM.

   errno is set to a sentinel before each successful call of malloc, calloc, realloc (grow in
   place, shrink, move, from NULL, to 0), reallocarray, free, posix_memalign, aligned_alloc,
   memalign, valloc, pvalloc, malloc_usable_size, strdup and strndup, with small, large and
   huge sizes (the latter reach the OS), also as the first calls of a new thread (thread
   initialisation). Impossible requests return NULL with errno ENOMEM (huge sizes, calloc and
   reallocarray overflow) and leave the old block of a failed realloc intact.

   Built linked (override-errno) and plain under LD_PRELOAD (override-errno-preload). */
#define _GNU_SOURCE
#include <pthread.h>

#include "ov.h"

#define SENTINEL 4245

static volatile size_t opaque_sink;
static size_t opaque(size_t x) { opaque_sink = x; return opaque_sink; }
/* hides from gcc that a failed realloc's argument is used again (-Wuse-after-free) */
static void* launder(void* p) { __asm__ volatile("" : "+r"(p)); return p; }

static _Thread_local size_t n_ctx;   /* the size the loops are at, for failure messages */

/* OK(expr): must succeed (non-NULL) and leave errno at the sentinel */
static void* ok_(void* p, const char* expr, int line) {
  const int e = errno;
  CHECK_MSG(p != NULL, "line %d: %s returned NULL (errno %d, n = %zu)", line, expr, e, n_ctx);
  CHECK_MSG(e == SENTINEL, "line %d: %s succeeded but changed errno to %d (n = %zu)", line, expr, e, n_ctx);
  return p;
}
#define OK(expr) (errno = SENTINEL, ok_((void*)(expr), #expr, __LINE__))

/* KEPT(stmt): a statement that must leave errno at the sentinel */
#define KEPT(stmt) \
  do { errno = SENTINEL; stmt; CHECK_MSG(errno == SENTINEL, "line %d: errno changed to %d by: %s (n = %zu)", __LINE__, errno, #stmt, n_ctx); } while (0)

/* FAILS(expr): must return NULL with errno ENOMEM */
static void fails_(void* p, const char* expr, int line) {
  const int e = errno;
  CHECK_MSG(p == NULL && e == ENOMEM, "line %d: %s = %p, errno %d (expected NULL, ENOMEM; n = %zu)", line, expr, p, e, n_ctx);
  free(p);
}
#define FAILS(expr) (errno = SENTINEL, fails_((void*)(expr), #expr, __LINE__))

static void successes(void) {
  const size_t sizes[] = { 0, 1, 8, 100, 1000, 20000, 300000, 3 * OV_MiB, 40 * OV_MiB };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    const size_t n = n_ctx = sizes[i];
    void* p = OK(malloc(n));
    size_t us = 0;
    KEPT(us = malloc_usable_size(p));
    CHECK_GE(us, n);
    if (n > 0) ov_fill(p, n, n);
    KEPT(free(p));

    void* c = OK(calloc(n, 1));
    KEPT(free(c));
    c = OK(calloc(1, n));
    KEPT(free(c));

    void* a = NULL;
    int r = -1;
    KEPT(r = posix_memalign(&a, 64, n));
    CHECK_EQ(r, 0);
    KEPT(free(a));
    a = OK(aligned_alloc(256, n));
    KEPT(free(a));
    a = OK(memalign(4096, n));
    KEPT(free(a));
    a = OK(valloc(n));
    KEPT(free(a));
    a = OK(pvalloc(n));
    KEPT(free(a));
  }

  n_ctx = 0;
  /* realloc: grow in place (within the usable size), shrink, move, from NULL, to 0 */
  uint8_t* p = (uint8_t*)OK(malloc(100));
  if (p == NULL) return;
  ov_fill(p, 100, 1);
  const size_t us = malloc_usable_size(p);
  uint8_t* q = (uint8_t*)OK(realloc(p, us));
  CHECK_PTR_EQ(q, p);   /* fits: in place */
  p = q;
  q = (uint8_t*)OK(realloc(p, 60));   /* shrink */
  CHECK(q != NULL && ov_first_bad(q, 60, 1) == 60);
  p = q;
  q = (uint8_t*)OK(realloc(p, 200000));   /* move */
  CHECK(q != NULL && ov_first_bad(q, 60, 1) == 60);
  p = q;
  q = (uint8_t*)OK(realloc(p, 5 * OV_MiB));   /* to a huge block */
  CHECK(q != NULL && ov_first_bad(q, 60, 1) == 60);
  p = q;
  q = (uint8_t*)OK(realloc(p, 30));   /* huge back to small */
  CHECK(q != NULL && ov_first_bad(q, 30, 1) == 30);
  p = q;
  q = (uint8_t*)OK(reallocarray(p, 100, 10));
  CHECK(q != NULL && ov_first_bad(q, 30, 1) == 30);
  p = q;
  q = (uint8_t*)OK(reallocarray(p, 3, 5));
  CHECK(q != NULL && ov_first_bad(q, 15, 1) == 15);
  p = q;
  errno = SENTINEL;
  q = (uint8_t*)realloc(p, 0);   /* ours returns a minimal block; NULL (p freed) is also fine */
  CHECK_MSG(errno == SENTINEL, "realloc(p, 0) changed errno to %d", errno);
  KEPT(free(q));
  void* r0 = OK(realloc(NULL, 50));
  KEPT(free(r0));
  void* r1 = OK(reallocarray(NULL, 7, 9));
  KEPT(free(r1));
  KEPT(free(NULL));
  size_t u0 = 1;
  KEPT(u0 = malloc_usable_size(NULL));
  CHECK_EQ(u0, 0);

  char* s = (char*)OK(strdup("errno stays"));
  CHECK(s != NULL && strcmp(s, "errno stays") == 0);
  KEPT(free(s));
  s = (char*)OK(strndup("errno stays", 5));
  CHECK(s != NULL && strcmp(s, "errno") == 0);
  KEPT(free(s));

  /* many blocks: new pages and segments from the OS, then all given back */
  enum { N = 3000 };
  void** many = (void**)OK(malloc(N * sizeof(void*)));
  if (many != NULL) {
    for (size_t i = 0; i < N; i++) many[i] = OK(malloc(16 + (i * 131) % 9000));
    for (size_t i = 0; i < N; i++) KEPT(free(many[i]));
    KEPT(free(many));
  }
}

static void failures(void) {
  const size_t huge[] = { SIZE_MAX, SIZE_MAX - 4095, (size_t)PTRDIFF_MAX + 1, (size_t)1 << 60, ((size_t)1 << 48) + 1 };
  for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
    const size_t n = n_ctx = opaque(huge[i]);
    FAILS(malloc(n));
    FAILS(calloc(1, n));
    FAILS(calloc(n, 1));
    FAILS(aligned_alloc(64, n));
    FAILS(memalign(64, n));
    FAILS(valloc(n));
    FAILS(pvalloc(n));
    FAILS(reallocarray(NULL, 1, n));
    FAILS(realloc(NULL, n));
    void* a = (void*)(uintptr_t)1;
    int r = 0;
    KEPT(r = posix_memalign(&a, 64, n));   /* reports ENOMEM by its result, errno untouched */
    CHECK_EQ(r, ENOMEM);
    CHECK(a == (void*)(uintptr_t)1);
  }
  n_ctx = 0;
  /* count * size overflows */
  FAILS(calloc(opaque(SIZE_MAX / 2), 3));
  FAILS(calloc(opaque((size_t)1 << 33), (size_t)1 << 33));
  FAILS(reallocarray(NULL, opaque(SIZE_MAX / 2), 3));

  /* a failed realloc/reallocarray leaves the block intact */
  uint8_t* p = (uint8_t*)malloc(1000);
  CHECK(p != NULL);
  if (p == NULL) return;
  ov_fill(p, 1000, 5);
  FAILS(realloc(launder(p), opaque(SIZE_MAX)));
  FAILS(realloc(launder(p), opaque((size_t)1 << 60)));
  FAILS(reallocarray(launder(p), opaque(SIZE_MAX / 2), 3));
  FAILS(reallocarray(launder(p), opaque((size_t)1 << 40), (size_t)1 << 40));
  CHECK(ov_first_bad(p, 1000, 5) == 1000);
  CHECK_GE(malloc_usable_size(p), 1000);
  uint8_t* q = (uint8_t*)OK(realloc(p, 5000));   /* and still works */
  CHECK(q != NULL && ov_first_bad(q, 1000, 5) == 1000);
  free(q != NULL ? q : p);
}

/* the first calls of a new thread initialise it */
static void* fresh_thread(void* arg) {
  (void)arg;
  void* p = OK(malloc(24));
  KEPT(free(p));
  successes();
  failures();
  return NULL;
}

int main(void) {
  ov_require_override("errno");
  successes();
  failures();
  for (int i = 0; i < 3; i++) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, &fresh_thread, NULL) == 0);
    pthread_join(t, NULL);
  }
  return test_summary("override-errno" OV_SUFFIX, "main thread and 3 fresh threads");
}
