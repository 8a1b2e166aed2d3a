/* SPDX-License-Identifier: MIT */
/* Error codes of failing calls (none of them aborts: EOVERFLOW, ENOMEM and EINVAL return).
   Every failing allocation returns NULL with errno ENOMEM, whatever the cause, and leaves errno
   alone when it succeeds (our deliberate difference from mimalloc: include/mimalloc.h, section 5).
   Cases:
     too-large          mi_malloc(SIZE_MAX): "allocation request is too large (<n> bytes)"
                        (EOVERFLOW), then "unable to allocate memory (<n> bytes)" (ENOMEM)
     too-large-aligned  mi_malloc_aligned(SIZE_MAX, 64): "aligned allocation request is too
                        large (size <n>, alignment 64)" (EOVERFLOW)
     too-large-realloc  mi_realloc(p, SIZE_MAX): as too-large; p stays valid and unchanged
     enomem             RLIMIT_AS set to the current size + 256 MiB, then mi_malloc(1 GiB):
                        two OS warnings (first try, retry after a collect), then "unable to
                        allocate memory (1073741824 bytes)" (ENOMEM); smaller allocations
                        still work
     realloc-foreign    mi_realloc(&local, 100): "mi_realloc: invalid pointer <q> (not
                        allocated by this allocator)" (EINVAL), NULL, the local untouched
   debug-pending:
     calloc-overflow    mi_calloc(SIZE_MAX/2, 3): NULL, errno ENOMEM, reported as EOVERFLOW in
                        debug builds (as mimalloc reports it)
     bad-alignment      mi_malloc_aligned(100, 48): NULL, errno ENOMEM, reported as EINVAL (an
                        invalid argument; mimalloc reports EOVERFLOW in debug builds) */
#include "dbg.h"
#include <sys/resource.h>

static void expect_null(void* r, const char* what) {
  DBG_CHECK_MSG(r == NULL, "%s returned %p", what, r);
  DBG_CHECK_MSG(errno == ENOMEM, "%s: errno %d, not ENOMEM", what, errno);
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  void* warm = mi_malloc(100);   /* the library is initialised before errno is watched */
  mi_free(warm);
  errno = 0;
  if (strcmp(c, "too-large") == 0) {
    dbg_var_size("n", SIZE_MAX);
    expect_null(mi_malloc(dbg_size(SIZE_MAX)), "mi_malloc(SIZE_MAX)");
  }
  else if (strcmp(c, "too-large-aligned") == 0) {
    dbg_var_size("n", SIZE_MAX);
    expect_null(mi_malloc_aligned(dbg_size(SIZE_MAX), 64), "mi_malloc_aligned(SIZE_MAX, 64)");
  }
  else if (strcmp(c, "too-large-realloc") == 0) {
    uint8_t* p = (uint8_t*)mi_malloc(50);
    dbg_fill(p, 50, 5);
    errno = 0;
    dbg_var_size("n", SIZE_MAX);
    expect_null(mi_realloc(p, dbg_size(SIZE_MAX)), "mi_realloc(p, SIZE_MAX)");
    DBG_CHECK(dbg_check_fill(p, 50, 5) && mi_usable_size(p) == 50);
    mi_free(p);
  }
  else if (strcmp(c, "enomem") == 0) {
    FILE* f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    DBG_CHECK(f != NULL && fscanf(f, "%lu", &pages) == 1);
    if (f != NULL) fclose(f);
    const rlim_t limit = (rlim_t)pages * 4096 + (256u << 20);
    struct rlimit rl = { limit, limit };
    DBG_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
    errno = 0;
    expect_null(mi_malloc((size_t)1 << 30), "mi_malloc(1 GiB) under RLIMIT_AS");
    errno = 0;
    void* small = mi_malloc(1000);
    void* medium = mi_malloc(1 << 20);
    DBG_CHECK(small != NULL && medium != NULL && errno == 0);
    mi_free(small);
    mi_free(medium);
  }
  else if (strcmp(c, "realloc-foreign") == 0) {
    volatile long local = 77;
    void* q = dbg_launder((void*)&local);
    dbg_var_ptr("q", q);
    void* r = mi_realloc(q, 100);
    DBG_CHECK_MSG(r == NULL, "mi_realloc of a foreign pointer returned %p", r);
    DBG_CHECK(errno != 0);
    dbg_var_size("errno", (size_t)errno);
    DBG_CHECK(local == 77);
  }
  else if (strcmp(c, "calloc-overflow") == 0) {
    expect_null(mi_calloc(dbg_size(SIZE_MAX / 2), 3), "mi_calloc(SIZE_MAX/2, 3)");
  }
  else if (strcmp(c, "bad-alignment") == 0) {
    expect_null(mi_malloc_aligned(100, dbg_size(48)), "mi_malloc_aligned(100, 48)");
  }
  else {
    return dbg_unknown_case(c);
  }
  /* successful allocations leave errno alone */
  errno = 12345;
  void* ok = mi_malloc(64);
  DBG_CHECK(ok != NULL && errno == 12345);
  mi_free(ok);
  static const size_t sizes[] = { 64, 1000, 100000 };
  dbg_heap_works(1000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
