/* SPDX-License-Identifier: MIT */
/* dbg.h -- shared helpers of the deliberately wrong programs in test/debug (debug build only).

   Every program is run as   prog CASE MODE   with MODE
     default    no error handler: the library's default (EFAULT aborts in debug builds)
     callback   mi_register_error(dbg_on_error): the error codes are recorded and the program
                continues; they are printed at the end as "codes NAME NAME ..."
   Output protocol on stdout (unbuffered, so it survives an abort), read by run-debug.py:
     var NAME VALUE   a value the expected messages refer to (pointers as %p, sizes as %zu)
     step TEXT        progress markers: the driver checks how far an aborting program got
     FAIL ...         a failed in-program check (the program then exits with status 1)
     codes ...        the recorded error codes (callback mode)
     ok               the end was reached and every in-program check held
   The mimalloc messages themselves go to stderr and are checked by the driver.

   The misuse is done through dbg_launder()ed pointers and volatile accesses so that the
   compiler neither removes it nor warns about it (the allocation functions carry malloc and
   alloc_size attributes). */
#ifndef MI_TEST_DBG_H
#define MI_TEST_DBG_H

#include <mimalloc.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define DBG_NOINLINE __attribute__((noinline))
#define DBG_UNUSED __attribute__((unused))
#define DBG_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DBG_NOINLINE
#define DBG_UNUSED
#define DBG_PRINTF(f, a)
#endif

/* the padding at the end of each block in debug builds (mi_padding_t: canary, delta, caller,
   check, and the guard word of the next block) */
#define DBG_PADDING_SIZE  (16 + sizeof(void*))

static bool dbg_callback_mode;
static int  dbg_codes[256];
static int  dbg_ncodes;          /* updated atomically: errors may be reported by any thread */
static int  dbg_failures;

/* An opaque copy of p: the compiler no longer knows where it came from. */
static DBG_NOINLINE DBG_UNUSED void* dbg_launder(void* p) {
#if defined(__GNUC__)
  __asm__ volatile("" : "+r"(p) : : "memory");
#endif
  return p;
}

/* An opaque size: the compiler cannot see the constant (no -Walloc-size-larger-than). */
static DBG_NOINLINE DBG_UNUSED size_t dbg_size(size_t n) {
#if defined(__GNUC__)
  __asm__ volatile("" : "+r"(n));
#endif
  return n;
}

static void dbg_on_error(int err, void* arg) {
  (void)arg;
  int i = __atomic_fetch_add(&dbg_ncodes, 1, __ATOMIC_SEQ_CST);
  if (i < (int)(sizeof(dbg_codes) / sizeof(dbg_codes[0]))) dbg_codes[i] = err;
}

static DBG_UNUSED const char* dbg_errname(int err) {
  switch (err) {
    case EAGAIN: return "EAGAIN";
    case EFAULT: return "EFAULT";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EOVERFLOW: return "EOVERFLOW";
    default: return "E?";
  }
}

static DBG_UNUSED DBG_PRINTF(1, 2) void dbg_step(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("step ", stdout);
  vprintf(fmt, args);
  fputs("\n", stdout);
  va_end(args);
}

static DBG_UNUSED void dbg_var_ptr(const char* name, const void* p) { printf("var %s %p\n", name, p); }
static DBG_UNUSED void dbg_var_size(const char* name, size_t n) { printf("var %s %zu\n", name, n); }

#define DBG_CHECK(cond) \
  do { if (!(cond)) { printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); dbg_failures++; } } while (0)
#define DBG_CHECK_MSG(cond, ...) \
  do { if (!(cond)) { printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); printf(__VA_ARGS__); \
                      printf("\n"); dbg_failures++; } } while (0)

/* Errors recorded so far (callback mode; always 0 in default mode). */
static DBG_UNUSED int dbg_error_count(void) { return __atomic_load_n(&dbg_ncodes, __ATOMIC_SEQ_CST); }

/* Parse "CASE MODE", set up stdout and the error handler; returns the case name. */
static DBG_UNUSED const char* dbg_setup(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc != 3 || (strcmp(argv[2], "default") != 0 && strcmp(argv[2], "callback") != 0)) {
    fprintf(stderr, "usage: %s CASE default|callback\n", argv[0]);
    exit(2);
  }
  dbg_callback_mode = (strcmp(argv[2], "callback") == 0);
  if (dbg_callback_mode) mi_register_error(&dbg_on_error, NULL);
  return argv[1];
}

/* Print the codes and the verdict; the return value is main's exit status. */
static DBG_UNUSED int dbg_finish(void) {
  if (dbg_callback_mode) {
    int n = dbg_error_count();
    printf("codes");
    for (int i = 0; i < n && i < (int)(sizeof(dbg_codes) / sizeof(dbg_codes[0])); i++) printf(" %s", dbg_errname(dbg_codes[i]));
    printf("\n");
  }
  if (dbg_failures > 0) { printf("%d failed checks\n", dbg_failures); return 1; }
  printf("ok\n");
  return 0;
}

static DBG_UNUSED int dbg_unknown_case(const char* name) {
  printf("FAIL unknown case '%s'\n", name);
  return 2;
}

/* Fill [p, p+n) with a pattern derived from seed, and check it. */
static DBG_UNUSED void dbg_fill(void* p, size_t n, uint32_t seed) {
  uint8_t* b = (uint8_t*)p;
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)((seed * 2654435761u + i * 40503u) >> 11);
}
static DBG_UNUSED bool dbg_check_fill(const void* p, size_t n, uint32_t seed) {
  const uint8_t* b = (const uint8_t*)p;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != (uint8_t)((seed * 2654435761u + i * 40503u) >> 11)) return false;
  }
  return true;
}

/* The block size (size class, padding included) that an n-byte allocation gets: the distance
   between two blocks allocated one after the other from a fresh heap. */
static DBG_UNUSED size_t dbg_block_size(size_t n) {
  mi_heap_t* heap = mi_heap_new();
  uint8_t* a = (uint8_t*)mi_heap_malloc(heap, n);
  uint8_t* b = (uint8_t*)mi_heap_malloc(heap, n);
  size_t d = (a == NULL || b == NULL ? 0 : (b > a ? (size_t)(b - a) : (size_t)(a - b)));
  mi_free(a);
  mi_free(b);
  mi_heap_delete(heap);
  return d;
}

static int dbg_ptr_cmp(const void* a, const void* b) {
  uintptr_t x = (uintptr_t)*(void* const*)a, y = (uintptr_t)*(void* const*)b;
  return (x < y ? -1 : (x > y ? 1 : 0));
}

/* No two of the n pointers are equal (NULLs excluded), and no block overlaps the next one
   when each is `size` bytes long (size 0: only distinctness). */
static DBG_UNUSED bool dbg_all_distinct(void** ptrs, size_t n, size_t size) {
  void** sorted = (void**)malloc(n * sizeof(void*));
  if (sorted == NULL) return false;
  memcpy(sorted, ptrs, n * sizeof(void*));
  qsort(sorted, n, sizeof(void*), &dbg_ptr_cmp);
  bool ok = true;
  for (size_t i = 0; i + 1 < n; i++) {
    if (sorted[i] == NULL) continue;
    if (sorted[i] == sorted[i + 1]) { printf("FAIL block %p handed out twice\n", sorted[i]); ok = false; }
    else if (size > 0 && (uintptr_t)sorted[i] + size > (uintptr_t)sorted[i + 1]) {
      printf("FAIL blocks %p and %p overlap\n", sorted[i], sorted[i + 1]); ok = false;
    }
  }
  free(sorted);
  return ok;
}

/* The heap still works: allocate `count` blocks of sizes cycling through `sizes`, give each a
   distinct pattern, check that no block was handed out twice and that every pattern is still
   intact once all are allocated, optionally that none of them is one of `avoid` (blocks the
   program still holds), then free them all. Returns false (after printing FAIL lines) if not. */
static DBG_UNUSED bool dbg_heap_works(size_t count, const size_t* sizes, size_t nsizes, void* const* avoid, size_t navoid) {
  void** ptrs = (void**)mi_calloc(count, sizeof(void*));
  if (ptrs == NULL) { printf("FAIL heap check: no pointer array\n"); dbg_failures++; return false; }
  bool ok = true;
  size_t maxsize = 0;
  for (size_t i = 0; i < nsizes; i++) if (sizes[i] > maxsize) maxsize = sizes[i];
  for (size_t i = 0; i < count; i++) {
    const size_t n = sizes[i % nsizes];
    ptrs[i] = mi_malloc(n);
    if (ptrs[i] == NULL) { printf("FAIL heap check: allocation %zu of %zu bytes failed\n", i, n); ok = false; break; }
    dbg_fill(ptrs[i], n, (uint32_t)i + 7);
  }
  for (size_t i = 0; i < count && ok; i++) {
    const size_t n = sizes[i % nsizes];
    if (!dbg_check_fill(ptrs[i], n, (uint32_t)i + 7)) { printf("FAIL heap check: block %zu (%p) lost its pattern\n", i, ptrs[i]); ok = false; }
    if (mi_usable_size(ptrs[i]) != n) { printf("FAIL heap check: usable size of block %zu is %zu, not %zu\n", i, mi_usable_size(ptrs[i]), n); ok = false; }
    for (size_t j = 0; j < navoid; j++) {
      if (avoid[j] != NULL && ptrs[i] == avoid[j]) { printf("FAIL heap check: live block %p handed out again\n", ptrs[i]); ok = false; }
    }
  }
  /* distinctness; overlap only for a single size (blocks of different sizes do not share pages
     but checking them with the largest size would be wrong) */
  if (!dbg_all_distinct(ptrs, count, (nsizes == 1 ? sizes[0] : 0))) ok = false;
  for (size_t i = 0; i < count; i++) mi_free(ptrs[i]);
  mi_free(ptrs);
  if (!ok) dbg_failures++;
  return ok;
}

#endif
