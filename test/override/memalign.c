/* SPDX-License-Identifier: MIT */
/* memalign.c -- posix_memalign, aligned_alloc, memalign, valloc and pvalloc through the
   override: argument errors and valid cases.

   posix_memalign: an alignment that is not a power-of-two multiple of sizeof(void*) (0, 1, 2,
   3, 4, 12, 24, 48, 2^63 + 8, SIZE_MAX) returns EINVAL; an alignment or size that can never be
   satisfied (2^63, which is a valid alignment by POSIX's rule and gets ENOMEM from glibc too;
   sizes near SIZE_MAX) returns ENOMEM; in both cases *p and errno are untouched. Size 0
   succeeds. aligned_alloc and memalign return NULL with errno EINVAL for an alignment that is
   not a power of two (including 0), and NULL with ENOMEM for impossible sizes. Valid requests
   (alignments 1 B to 16 MiB, sizes 0 to 3 x alignment) are aligned, ours, usable for the whole
   size and leave errno alone. valloc and pvalloc give page-aligned blocks; pvalloc's usable
   size covers the size rounded up to a page.

   Built linked (override-memalign) and plain under LD_PRELOAD (override-memalign-preload). */
#define _GNU_SOURCE
#include "ov.h"

#define SENTINEL 4244
#define MARKER ((void*)(uintptr_t)0x5eed)

/* hide sizes from gcc's alloc_size warnings on purposefully impossible requests */
static volatile size_t opaque_sink;
static size_t opaque(size_t x) { opaque_sink = x; return opaque_sink; }

static void use_block(void* p, size_t size, size_t align, const char* fn) {
  CHECK_MSG(p != NULL, "%s(align %zu, size %zu) failed", fn, align, size);
  if (p == NULL) return;
  CHECK_MSG(align == 0 || ((uintptr_t)p & (align - 1)) == 0, "%s: %p is not aligned to %zu", fn, p, align);
  CHECK_MSG(mi_is_in_heap_region(p), "%s: %p is not ours", fn, p);
  CHECK_MSG(malloc_usable_size(p) >= size, "%s: usable %zu < size %zu", fn, malloc_usable_size(p), size);
  if (size > 0) {
    ov_fill(p, size, size + align);
    CHECK_MSG(ov_first_bad(p, size, size + align) == size, "%s: block not usable", fn);
  }
}

static void pm_bad(size_t align, size_t size, int expect) {
  void* p = MARKER;
  errno = SENTINEL;
  const int r = posix_memalign(&p, align, size);
  const int e = errno;
  CHECK_MSG(r == expect, "posix_memalign(align %zu, size %zu) = %d, expected %d", align, size, r, expect);
  CHECK_MSG(p == MARKER, "posix_memalign(align %zu, size %zu) changed *p to %p", align, size, p);
  CHECK_MSG(e == SENTINEL, "posix_memalign(align %zu, size %zu) changed errno to %d", align, size, e);
}

static void pm_ok(size_t align, size_t size) {
  void* p = MARKER;
  errno = SENTINEL;
  const int r = posix_memalign(&p, align, size);
  CHECK_MSG(r == 0, "posix_memalign(align %zu, size %zu) = %d", align, size, r);
  CHECK_MSG(errno == SENTINEL, "posix_memalign(align %zu, size %zu) changed errno to %d", align, size, errno);
  if (r != 0) return;
  if (size == 0 && p == NULL) return;   /* allowed for size 0 */
  use_block(p, size, align, "posix_memalign");
  free(p);
}

typedef void* (*alloc2_fun)(size_t, size_t);

static void a2_bad(alloc2_fun fn, const char* name, size_t align, size_t size, int expect) {
  errno = SENTINEL;
  void* p = fn(align, size);
  const int e = errno;
  CHECK_MSG(p == NULL && e == expect, "%s(align %zu, size %zu) = %p, errno %d (expected NULL, errno %d)", name, align, size, p, e, expect);
  free(p);
}

static void a2_ok(alloc2_fun fn, const char* name, size_t align, size_t size) {
  errno = SENTINEL;
  void* p = fn(align, size);
  CHECK_MSG(errno == SENTINEL, "%s(align %zu, size %zu) changed errno to %d", name, align, size, errno);
  use_block(p, size, align, name);
  free(p);
}

int main(void) {
  ov_require_override("memalign");
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);

  /* posix_memalign: invalid alignments */
  const size_t bad_align[] = { 0, 1, 2, 3, 4, 5, 12, 24, 48, 1000, ((size_t)1 << 63) + 8, SIZE_MAX };
  for (size_t i = 0; i < sizeof(bad_align) / sizeof(bad_align[0]); i++) {
    pm_bad(bad_align[i], 100, EINVAL);
    pm_bad(bad_align[i], 0, EINVAL);
  }
  /* valid alignments or sizes that can never be satisfied */
  pm_bad((size_t)1 << 63, 100, ENOMEM);
  pm_bad((size_t)1 << 62, 100, ENOMEM);
  pm_bad(64, opaque(SIZE_MAX), ENOMEM);
  pm_bad(64, opaque(SIZE_MAX - 4095), ENOMEM);
  pm_bad(64, opaque((size_t)PTRDIFF_MAX + 1), ENOMEM);
  pm_bad(4096, opaque((size_t)1 << 62), ENOMEM);
  pm_bad((size_t)1 << 20, opaque(SIZE_MAX - (1 << 19)), ENOMEM);
  /* size 0 */
  pm_ok(sizeof(void*), 0);
  pm_ok(64, 0);
  pm_ok(page, 0);
  pm_ok((size_t)1 << 22, 0);

  /* aligned_alloc and memalign: non-power-of-two alignments, impossible sizes */
  const size_t bad_pow2[] = { 0, 3, 5, 12, 24, 48, 1000, 4097, ((size_t)1 << 63) + 1, SIZE_MAX };
  for (size_t i = 0; i < sizeof(bad_pow2) / sizeof(bad_pow2[0]); i++) {
    a2_bad(&aligned_alloc, "aligned_alloc", bad_pow2[i], 64, EINVAL);
    a2_bad(&memalign, "memalign", bad_pow2[i], 64, EINVAL);
  }
  a2_bad(&aligned_alloc, "aligned_alloc", 64, opaque(SIZE_MAX), ENOMEM);
  a2_bad(&memalign, "memalign", 64, opaque(SIZE_MAX), ENOMEM);
  a2_bad(&aligned_alloc, "aligned_alloc", (size_t)1 << 63, 64, ENOMEM);
  a2_bad(&memalign, "memalign", (size_t)1 << 62, 64, ENOMEM);

  /* valid requests: every power-of-two alignment up to 16 MiB with a spread of sizes */
  for (size_t align = 1; align <= ((size_t)16 << 20); align *= 2) {
    const size_t sizes[] = { 0, 1, 7, 100, align, align + 1, 3 * align + 5, 5000 };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      if (align >= sizeof(void*)) pm_ok(align, sizes[s]);
      a2_ok(&aligned_alloc, "aligned_alloc", align, sizes[s]);
      a2_ok(&memalign, "memalign", align, sizes[s]);
    }
  }

  /* valloc, pvalloc */
  const size_t vsizes[] = { 0, 1, 100, page - 1, page, page + 1, 10 * page + 3, 3 * OV_MiB + 17 };
  for (size_t s = 0; s < sizeof(vsizes) / sizeof(vsizes[0]); s++) {
    const size_t n = vsizes[s];
    errno = SENTINEL;
    void* v = valloc(n);
    CHECK_MSG(errno == SENTINEL, "valloc(%zu) changed errno to %d", n, errno);
    use_block(v, n, page, "valloc");
    free(v);
    errno = SENTINEL;
    void* pv = pvalloc(n);
    CHECK_MSG(errno == SENTINEL, "pvalloc(%zu) changed errno to %d", n, errno);
    const size_t rounded = (n + page - 1) / page * page;
    use_block(pv, rounded, page, "pvalloc");   /* the whole rounded-up size is usable */
    free(pv);
  }
  errno = SENTINEL;
  CHECK(valloc(opaque(SIZE_MAX)) == NULL && errno == ENOMEM);
  errno = SENTINEL;
  CHECK(pvalloc(opaque(SIZE_MAX)) == NULL && errno == ENOMEM);
  errno = SENTINEL;
  CHECK(pvalloc(opaque(SIZE_MAX - page + 2)) == NULL && errno == ENOMEM);   /* rounding up would wrap */

  /* aligned blocks free cleanly from another path: realloc keeps the contents */
  void* p = NULL;
  CHECK_EQ(posix_memalign(&p, 4096, 10000), 0);
  if (p != NULL) {
    ov_fill(p, 10000, 9);
    void* q = realloc(p, 50000);
    CHECK(q != NULL && ov_first_bad(q, 10000, 9) == 10000);
    free(q != NULL ? q : p);
  }
  return test_summary("override-memalign" OV_SUFFIX, "alignments up to 16 MiB");
}
