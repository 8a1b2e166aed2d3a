/* SPDX-License-Identifier: MIT */
/* foreign.c -- free, realloc, reallocarray and malloc_usable_size of pointers that are not ours:
   a stack address, a global, a string literal, anonymous mmap memory (also at a 4 MiB boundary,
   where a segment header would be), small and large blocks of the C library's own malloc (glibc's
   or musl's, found with dlsym(RTLD_NEXT) from libov-next.so), the inside of a 64 MiB block (+10 MiB), and NULL.

   Never a crash; free leaves the memory and errno alone; realloc/reallocarray return NULL with
   errno EINVAL and leave the memory alone; malloc_usable_size is 0. Blocks allocated before
   stay intact and allocation goes on normally. A child run with MIMALLOC_SHOW_ERRORS=1 must
   print exactly one message naming the pointer per bad free (and per bad realloc), and one
   without it prints nothing (unless a debug build shows errors by default).

   "boundary" mode: the same for foreign memory starting exactly at the 4 MiB boundary where
   one of our segments ends.

   Built linked (override-foreign) and plain under LD_PRELOAD (override-foreign-preload). */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "ov.h"

#define SENTINEL 4243

extern void* ov_next_sym(const char* name);   /* libov-next.so */

typedef void* (*malloc_fun)(size_t);
typedef void (*free_fun)(void*);
typedef size_t (*usable_fun)(void*);

static char global_buf[512];
static bool print_ptrs;   /* child mode: report each bad pointer on stdout */

typedef struct foreign_s {
  const char* what;
  uint8_t*    p;          /* the bad pointer */
  uint8_t*    region;     /* memory around it with a known pattern: n bytes of seed's pattern */
  size_t      n;
  uint64_t    seed;
  const char* literal;    /* for the string literal: its expected text */
  bool        far_from_heap;   /* the stack or the executable's image */
} foreign_t;

static bool foreign_intact(const foreign_t* f) {
  if (f->literal != NULL) return strcmp((const char*)f->p, f->literal) == 0;
  return ov_first_bad(f->region, f->n, f->seed) == f->n;
}

/* every operation on a pointer that is not ours */
static void bad_ops(const foreign_t* f) {
  if (print_ptrs) { printf("bad-free %p\n", (void*)f->p); fflush(stdout); }

  errno = SENTINEL;
  free(f->p);
  CHECK_MSG(errno == SENTINEL, "%s: free changed errno to %d", f->what, errno);
  CHECK_MSG(foreign_intact(f), "%s: free(%p) changed the memory", f->what, (void*)f->p);

  errno = 0;
  void* r = realloc(f->p, 100);
  CHECK_MSG(r == NULL && errno == EINVAL, "%s: realloc(%p, 100) = %p, errno %d (expected NULL, EINVAL)", f->what, (void*)f->p, r, errno);
  CHECK_MSG(foreign_intact(f), "%s: realloc(%p, 100) changed the memory", f->what, (void*)f->p);

  errno = 0;
  r = realloc(f->p, 0);
  CHECK_MSG(r == NULL && errno == EINVAL, "%s: realloc(%p, 0) = %p, errno %d (expected NULL, EINVAL)", f->what, (void*)f->p, r, errno);
  CHECK_MSG(foreign_intact(f), "%s: realloc(%p, 0) changed the memory", f->what, (void*)f->p);

  errno = 0;
  r = reallocarray(f->p, 10, 10);
  CHECK_MSG(r == NULL && errno == EINVAL, "%s: reallocarray(%p) = %p, errno %d (expected NULL, EINVAL)", f->what, (void*)f->p, r, errno);
  CHECK_MSG(foreign_intact(f), "%s: reallocarray(%p) changed the memory", f->what, (void*)f->p);

  errno = SENTINEL;
  const size_t us = malloc_usable_size(f->p);
  CHECK_MSG(us == 0, "%s: malloc_usable_size(%p) = %zu, expected 0", f->what, (void*)f->p, us);
  CHECK_MSG(errno == SENTINEL, "%s: malloc_usable_size changed errno to %d", f->what, errno);
  /* (mi_is_in_heap_region has 4 MiB granularity: only pointers far from any mapping of ours
     are certain to be outside it) */
  if (f->far_from_heap) CHECK_MSG(!mi_is_in_heap_region(f->p), "%s: %p is reported as in our heap", f->what, (void*)f->p);
}

enum { NWITNESS = 300 };
static void* witness[NWITNESS];

static size_t witness_size(size_t i) {
  if (i == 0) return 3 * OV_MiB;           /* a large block */
  if (i == 1) return 40 * OV_MiB;          /* a huge block */
  return 16 + (i * 997) % 70000;
}

/* Returns the number of bad frees made. */
static int run_all(void) {
  int nbad = 0;

  /* the C library's allocator, reached past the override */
  malloc_fun libc_malloc = (malloc_fun)ov_next_sym("malloc");
  free_fun libc_free = (free_fun)ov_next_sym("free");
  usable_fun libc_usable = (usable_fun)ov_next_sym("malloc_usable_size");
  Dl_info info;
  CHECK_MSG(libc_malloc != NULL && libc_free != NULL && libc_usable != NULL, "dlsym(RTLD_NEXT) found no C library malloc/free");
  /* the C library: glibc's libc.so.6, or musl's, which is its dynamic linker (ld-musl-<arch>.so.1) */
  CHECK_MSG(libc_malloc != NULL && dladdr((void*)libc_malloc, &info) &&
            (strstr(info.dli_fname, "libc.so") != NULL || strstr(info.dli_fname, "ld-musl-") != NULL),
            "dlsym(RTLD_NEXT, \"malloc\") from libov-next.so is not the C library's");
  CHECK_MSG((void*)libc_malloc != (void*)&malloc, "the C library's malloc is the program's malloc: no override?");
  /* from the executable itself RTLD_NEXT finds the override */
  void* exe_next = dlsym(RTLD_NEXT, "malloc");
  CHECK_MSG(exe_next != NULL && dladdr(exe_next, &info) && strstr(info.dli_fname, "mimalloc") != NULL,
            "dlsym(RTLD_NEXT, \"malloc\") from the executable is not libmimalloc's");

  for (size_t i = 0; i < NWITNESS; i++) {
    witness[i] = ov_make(witness_size(i), 1000 + i);
    CHECK(witness[i] != NULL);
  }

  /* the stack */
  uint8_t stack_buf[512];
  ov_fill(stack_buf, sizeof(stack_buf), 1);
  const foreign_t f_stack = { "a stack address", stack_buf, stack_buf, sizeof(stack_buf), 1, NULL, true };
  bad_ops(&f_stack); nbad++;
  const foreign_t f_stack_mid = { "the middle of a stack buffer", stack_buf + 100, stack_buf, sizeof(stack_buf), 1, NULL, true };
  bad_ops(&f_stack_mid); nbad++;

  /* a global */
  ov_fill(global_buf, sizeof(global_buf), 2);
  const foreign_t f_global = { "a global", (uint8_t*)global_buf, (uint8_t*)global_buf, sizeof(global_buf), 2, NULL, true };
  bad_ops(&f_global); nbad++;

  /* a string literal (read-only: any write would crash) */
  static const char* const lit = "a string literal in read-only memory";
  const foreign_t f_lit = { "a string literal", (uint8_t*)(uintptr_t)lit, NULL, 0, 0, lit, true };
  bad_ops(&f_lit); nbad++;

  /* mmap, and mmap memory starting exactly at a 4 MiB boundary (where one of our segments
     would keep its header), filled with a pattern that a header read would misinterpret */
  const size_t mlen = 64 * OV_KiB;
  uint8_t* m = (uint8_t*)mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED);
  if (m != MAP_FAILED) {
    ov_fill(m, mlen, 3);
    const foreign_t f_mmap = { "mmap memory", m, m, mlen, 3, NULL, false };
    bad_ops(&f_mmap); nbad++;
    munmap(m, mlen);
  }
  const size_t alen = 12 * OV_MiB;
  uint8_t* big = (uint8_t*)mmap(NULL, alen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(big != MAP_FAILED);
  if (big != MAP_FAILED) {
    uint8_t* a = (uint8_t*)(((uintptr_t)big + 4 * OV_MiB - 1) & ~(uintptr_t)(4 * OV_MiB - 1));
    ov_fill(a, 256 * OV_KiB, 4);
    const foreign_t f_aligned = { "mmap memory at a 4 MiB boundary", a, a, 256 * OV_KiB, 4, NULL, false };
    bad_ops(&f_aligned); nbad++;
    const foreign_t f_aligned_in = { "mmap memory 64 KiB past a 4 MiB boundary", a + 64 * OV_KiB, a, 256 * OV_KiB, 4, NULL, false };
    bad_ops(&f_aligned_in); nbad++;
    munmap(big, alen);
  }

  /* the C library's own blocks: a small one (its heap) and a large one (its own mmap) */
  if (libc_malloc != NULL && libc_free != NULL) {
    uint8_t* gs = (uint8_t*)libc_malloc(64);
    uint8_t* gl = (uint8_t*)libc_malloc(OV_MiB);
    CHECK(gs != NULL && gl != NULL);
    if (gs != NULL && gl != NULL) {
      ov_fill(gs, 64, 6);
      ov_fill(gl, OV_MiB, 7);
      const foreign_t f_gs = { "a small libc block", gs, gs, 64, 6, NULL, false };
      const foreign_t f_gl = { "a large libc block", gl, gl, OV_MiB, 7, NULL, false };
      bad_ops(&f_gs); nbad++;
      bad_ops(&f_gl); nbad++;
      /* the C library still considers them its own, intact blocks */
      CHECK(libc_usable(gs) >= 64);
      CHECK(libc_usable(gl) >= OV_MiB);
      libc_free(gs);
      libc_free(gl);
      void* again = libc_malloc(100);   /* the C library's heap is still consistent */
      CHECK(again != NULL);
      libc_free(again);
    }
  }

  /* the inside of a huge block of ours */
  uint8_t* h = (uint8_t*)malloc(64 * OV_MiB);
  CHECK(h != NULL && mi_is_in_heap_region(h));
  if (h != NULL) {
    uint8_t* in = h + 10 * OV_MiB;
    ov_fill(in - 64 * OV_KiB, 128 * OV_KiB, 8);
    const foreign_t f_in = { "inside a 64 MiB block", in, in - 64 * OV_KiB, 128 * OV_KiB, 8, NULL, false };
    bad_ops(&f_in); nbad++;
    CHECK_GE(malloc_usable_size(h), 64 * OV_MiB);   /* the block itself is still fine */
    free(h);
  }

  /* NULL */
  errno = SENTINEL;
  free(NULL);
  CHECK_EQ(errno, SENTINEL);
  CHECK_EQ(malloc_usable_size(NULL), 0);
  void* rn = realloc(NULL, 100);
  CHECK(rn != NULL && mi_is_in_heap_region(rn));
  free(rn);

  /* blocks allocated before are intact; allocation goes on normally */
  for (size_t i = 0; i < NWITNESS; i++) {
    if (witness[i] != NULL) CHECK_MSG(ov_verify(witness[i]), "witness block %zu (%zu bytes) was damaged", i, witness_size(i));
  }
  for (size_t i = 0; i < NWITNESS; i += 2) {
    free(witness[i]);
    witness[i] = ov_make(witness_size(i) / 2 + 16, 5000 + i);
    CHECK(witness[i] != NULL && mi_is_in_heap_region(witness[i]));
  }
  for (size_t i = 0; i < NWITNESS; i++) {
    if (witness[i] != NULL) CHECK_MSG(ov_verify(witness[i]), "block %zu was damaged", i);
    free(witness[i]);
  }
  return nbad;
}

/* Foreign memory that starts exactly where one of our 4 MiB segments ends (the next chunk
   boundary): mapped with MAP_FIXED_NOREPLACE after the segments of blocks of a few size
   classes, where that address is free. Returns the number of such cases made. */
static int boundary_cases(void) {
  static const size_t sizes[] = { 64, 1000, 100 * 1024, 600 * 1024 };
  enum { N = sizeof(sizes) / sizeof(sizes[0]) };
  const size_t seg_size = 4 * OV_MiB, len = OV_MiB;
  void* blocks[N];
  int made = 0;
  for (size_t i = 0; i < N; i++) {
    blocks[i] = ov_make(sizes[i], 40 + i);
    CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) continue;
    uint8_t* next = (uint8_t*)(((uintptr_t)blocks[i] & ~(uintptr_t)(seg_size - 1)) + seg_size);
    void* m = mmap(next, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m == MAP_FAILED) continue;   /* taken (by another segment of ours, say) */
    if (m != next) { munmap(m, len); continue; }
    ov_fill(next, len, 9);
    const foreign_t f = { "memory starting right after one of our segments", next, next, len, 9, NULL, false };
    bad_ops(&f);
    made++;
    munmap(next, len);
  }
  for (size_t i = 0; i < N; i++) {
    if (blocks[i] != NULL) CHECK_MSG(ov_verify(blocks[i]), "our %zu-byte block was damaged", sizes[i]);
    free(blocks[i]);
  }
  return made;
}

/* lines of the child's stderr that mention p in a free error */
static size_t free_messages_for(const char* err, const char* ptr) {
  char needle[64];
  snprintf(needle, sizeof(needle), "mi_free: invalid pointer %s ", ptr);
  return ov_count(err, needle);
}

static void check_child(char* argv0, bool show) {
  char* child_argv[] = { argv0, (char*)"child", NULL };
  /* an explicit max_errors, so the count is not capped at the default of 32 messages */
  const char* env_show[] = { "MIMALLOC_SHOW_ERRORS=1", "MIMALLOC_MAX_ERRORS=1000", "MIMALLOC_VERBOSE", NULL };
  const char* env_quiet[] = { "MIMALLOC_SHOW_ERRORS", "MIMALLOC_VERBOSE", NULL };
  ov_run_t* run = (ov_run_t*)malloc(sizeof(ov_run_t));
  ov_run_self(child_argv, (show ? env_show : env_quiet), 20000, run);
  char st[64];
  CHECK_MSG(!run->timed_out && WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0,
            "child (show_errors %d) failed: %s%s\nstdout:\n%s\nstderr:\n%s", show, ov_status_str(run->status, st, sizeof(st)),
            (run->timed_out ? " (timed out)" : ""), run->out, run->err);
  /* debug builds show errors by default (and cap them at max_errors): nothing to count */
  const char* se = strstr(run->out, "show_errors=");
  const bool shown_anyway = (!show && se != NULL && se[12] != '0');
  /* the child lists its bad frees as "bad-free 0x..." lines */
  size_t nbad = 0;
  for (const char* s = strstr(run->out, "bad-free "); s != NULL; s = strstr(s + 1, "bad-free ")) {
    char ptr[40] = "";
    sscanf(s + 9, "%39s", ptr);
    nbad++;
    const size_t k = free_messages_for(run->err, ptr);
    if (show) CHECK_MSG(k == 1, "bad free of %s: %zu messages (expected 1); stderr:\n%s", ptr, k, run->err);
    else if (!shown_anyway) CHECK_MSG(k == 0, "bad free of %s: %zu messages without MIMALLOC_SHOW_ERRORS", ptr, k);
  }
  CHECK_MSG(nbad >= 10, "the child reported only %zu bad frees", nbad);
  if (shown_anyway) { free(run); return; }
  const size_t nfree = ov_count(run->err, "mimalloc: error: mi_free: invalid pointer");
  const size_t nrealloc = ov_count(run->err, "mimalloc: error: mi_realloc: invalid pointer");
  const size_t nlines = ov_count(run->err, "\n");
  if (show) {
    CHECK_MSG(nfree == nbad, "%zu free messages for %zu bad frees", nfree, nbad);
    CHECK_MSG(nrealloc == 3 * nbad, "%zu realloc messages for %zu bad reallocs", nrealloc, 3 * nbad);
    CHECK_MSG(nlines == nfree + nrealloc, "stderr has %zu lines, expected only the %zu error messages:\n%s", nlines, nfree + nrealloc, run->err);
    CHECK_MSG(ov_count(run->err, "not allocated by this allocator") == nfree + nrealloc, "messages do not explain the error:\n%s", run->err);
  }
  else {
    CHECK_MSG(run->err_len == 0, "stderr without MIMALLOC_SHOW_ERRORS is not empty:\n%s", run->err);
  }
  free(run);
}

int main(int argc, char** argv) {
  const bool child = (argc > 1 && strcmp(argv[1], "child") == 0);
  ov_require_override("foreign");
  if (argc > 1 && strcmp(argv[1], "boundary") == 0) {
    const int made = boundary_cases();
    CHECK_MSG(made > 0, "no free address right after any of our segments");
    return test_summary("override-foreign-boundary" OV_SUFFIX, "%d mappings right after one of our segments", made);
  }
  print_ptrs = child;
  if (child) printf("show_errors=%ld\n", mi_option_get(mi_option_show_errors));
  int nbad = run_all();
  if (child) return test_summary("override-foreign child", "%d bad pointers", nbad);

  /* the process keeps working after all that */
  for (int round = 0; round < 3; round++) {
    void* blocks[500];
    for (int i = 0; i < 500; i++) blocks[i] = ov_make(16 + (size_t)i * 31, (uint64_t)(round * 1000 + i));
    for (int i = 0; i < 500; i++) { CHECK(blocks[i] != NULL && ov_verify(blocks[i])); free(blocks[i]); }
  }

  check_child(argv[0], true);
  check_child(argv[0], false);
  return test_summary("override-foreign" OV_SUFFIX, "%d bad pointers, each freed and reallocated", nbad);
}
