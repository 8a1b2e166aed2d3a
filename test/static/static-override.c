/* SPDX-License-Identifier: MIT */
/* static-override.c -- the static override in C (tests static-object and static-archive).

   Linked with mimalloc.o first, or with libmimalloc.a inside --whole-archive, and never with
   libmimalloc.so. Checks that
   - malloc & co. resolve (for the whole process, libc included) to definitions in this
     executable, and that no libmimalloc shared object is loaded;
   - blocks from malloc, calloc, realloc, posix_memalign, aligned_alloc, ... are in our heap;
   - blocks that libc allocates internally (getline, asprintf, realpath, getcwd,
     open_memstream) are in our heap and can be freed with free;
   - blocks freed by another thread (while the owner runs, and after the owner exited) work.
   Linked against plain glibc (malloc not overridden) the heap checks fail.

   Compiled with MI_TEST_FULLY_STATIC=1 and linked with -static (static-fully-static: libc.a,
   glibc's or musl's, and no dynamic loader): there are no dynamic symbols to look up, so the
   linkage check is that no shared object is mapped at all; the heap checks are the same (libc.a's
   own getline, asprintf, ... must call our malloc). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mimalloc.h>
#include "../testing.h"

#define IN_HEAP(p)  CHECK_MSG((p) != NULL && mi_is_in_heap_region(p), "%s = %p is not in our heap", #p, (void*)(p))

static void fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7);
}
static int verify(const unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) if (p[i] != (unsigned char)(seed + i * 7)) return 0;
  return 1;
}

/* ---- symbol resolution and loaded objects ---- */

#ifndef MI_TEST_FULLY_STATIC
#define MI_TEST_FULLY_STATIC 0
#endif

#if !MI_TEST_FULLY_STATIC
static void exe_marker(void) {}

/* The process-wide definition (what libc's own calls bind to) must be in this executable. */
static void check_resolves_to_exe(const char* name) {
  Dl_info self, def;
  void* addr = dlsym(RTLD_DEFAULT, name);
  CHECK_MSG(addr != NULL, "dlsym(%s) failed", name);
  if (addr == NULL) return;
  CHECK(dladdr((void*)&exe_marker, &self) != 0);
  CHECK_MSG(dladdr(addr, &def) != 0 && def.dli_fbase == self.dli_fbase,
            "%s is defined in %s, not in the executable", name, def.dli_fname ? def.dli_fname : "?");
}
#endif

/* is the file name (not the directories: a build directory may be called anything) ours? */
static int is_mimalloc_file(const char* path) {
  const char* slash = strrchr(path, '/');
  return strncmp(slash != NULL ? slash + 1 : path, "libmimalloc", 11) == 0;
}

static int find_mimalloc_object(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  if (info->dlpi_name != NULL && is_mimalloc_file(info->dlpi_name)) {
    *(const char**)arg = info->dlpi_name;
    return 1;
  }
  return 0;
}

static void test_linkage(void) {
#if !MI_TEST_FULLY_STATIC
  static const char* names[] = { "malloc", "free", "calloc", "realloc", "posix_memalign",
                                 "aligned_alloc", "memalign", "valloc", "malloc_usable_size" };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) check_resolves_to_exe(names[i]);
#endif

  const char* found = NULL;
  dl_iterate_phdr(&find_mimalloc_object, (void*)&found);
  CHECK_MSG(found == NULL, "shared object %s is loaded", found);

  FILE* maps = fopen("/proc/self/maps", "r");
  CHECK(maps != NULL);
  if (maps != NULL) {
    char line[4096];
    int mapped = 0;
    int shared = 0;
    while (fgets(line, sizeof(line), maps) != NULL) {
      line[strcspn(line, "\n")] = 0;
      const char* path = strchr(line, '/');           /* the pathname column, if any */
      if (path != NULL && is_mimalloc_file(path)) { mapped = 1; fprintf(stderr, "mapped: %s\n", line); }
#if MI_TEST_FULLY_STATIC
      if (path != NULL && strstr(path, ".so") != NULL) { shared = 1; fprintf(stderr, "mapped: %s\n", line); }
#endif
    }
    fclose(maps);
    CHECK_MSG(!mapped, "a libmimalloc file is mapped into the process");
    CHECK_MSG(!shared, "a shared object is mapped into a program linked with -static");
  }
}

/* ---- allocations made directly by the program ---- */

static void test_direct(void) {
  static const size_t sizes[] = { 1, 8, 16, 100, 1000, 8192, 70000, 1u << 20, 9u << 20 };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t n = sizes[i];
    unsigned char* p = malloc(n);
    IN_HEAP(p);
    if (p == NULL) continue;
    CHECK_GE(malloc_usable_size(p), n);
    fill(p, n, (unsigned)i);
    p = realloc(p, 2 * n + 5);            /* grows, possibly moves: contents must survive */
    IN_HEAP(p);
    if (p != NULL) CHECK(verify(p, n, (unsigned)i));
    free(p);

    unsigned char* z = calloc(n, 3);
    IN_HEAP(z);
    if (z != NULL) {
      size_t nonzero = 0;
      for (size_t k = 0; k < 3 * n; k++) nonzero += (z[k] != 0);
      CHECK_EQ(nonzero, 0);
    }
    free(z);
  }
  /* overflow must fail, not wrap; called through a volatile pointer, else the compiler may
     drop the unused allocation and assume it succeeded */
  void* (*volatile calloc_fn)(size_t, size_t) = &calloc;
  CHECK(calloc_fn(SIZE_MAX / 2, 4) == NULL);
  free(NULL);

  for (size_t align = sizeof(void*); align <= 65536; align *= 2) {
    void* p = NULL;
    CHECK_EQ(posix_memalign(&p, align, 3 * align + 1), 0);
    IN_HEAP(p);
    CHECK_ALIGNED(p, align);
    free(p);
    void* q = aligned_alloc(align, 2 * align);
    IN_HEAP(q);
    CHECK_ALIGNED(q, align);
    free(q);
    void* r = memalign(align, 100);
    IN_HEAP(r);
    CHECK_ALIGNED(r, align);
    free(r);
  }
  void* bad = (void*)1;
  CHECK_EQ(posix_memalign(&bad, 3, 16), EINVAL);      /* not a power of two */
  void* v = valloc(10);
  IN_HEAP(v);
  CHECK_ALIGNED(v, (size_t)sysconf(_SC_PAGESIZE));
  free(v);

  char* s = strdup("static override");
  IN_HEAP(s);
  if (s != NULL) CHECK(strcmp(s, "static override") == 0);
  free(s);
}

/* ---- allocations made inside libc ---- */

static void test_libc_internal(void) {
  /* getline: libc mallocs and then reallocs the line buffer */
  char text[] = "first line\na second, longer line that makes the buffer grow a little\n";
  FILE* f = fmemopen(text, strlen(text), "r");
  CHECK(f != NULL);
  if (f != NULL) {
    char* line = NULL;
    size_t cap = 0;
    CHECK_EQ(getline(&line, &cap, f), 11);
    IN_HEAP(line);
    CHECK(getline(&line, &cap, f) > 20);
    IN_HEAP(line);
    free(line);
    fclose(f);
  }

  char* a = NULL;
  CHECK_EQ(asprintf(&a, "%s-%d-%0500d", "asprintf", 42, 7), 512);
  IN_HEAP(a);
  if (a != NULL) CHECK(strncmp(a, "asprintf-42-000", 15) == 0);
  free(a);

  char* rp = realpath("/proc/self/exe", NULL);
  IN_HEAP(rp);
  if (rp != NULL) CHECK(rp[0] == '/');
  free(rp);

  char* cwd = getcwd(NULL, 0);
  IN_HEAP(cwd);
  free(cwd);

  char* buf = NULL;
  size_t len = 0;
  FILE* ms = open_memstream(&buf, &len);
  CHECK(ms != NULL);
  if (ms != NULL) {
    for (int i = 0; i < 2000; i++) fprintf(ms, "%d,", i);
    CHECK_EQ(fclose(ms), 0);
    IN_HEAP(buf);
    CHECK(len > 5000);
    free(buf);
  }

#ifdef __GLIBC__
  /* glibc mallocs the FILE object itself */
  FILE* fp = fopen("/proc/self/exe", "r");
  IN_HEAP(fp);
  if (fp != NULL) fclose(fp);
#endif
}

/* ---- cross-thread frees ---- */

enum { BLOCKS = 2000, ROUNDS = 20 };

typedef struct xfer_s {
  unsigned char* blocks[BLOCKS];
  size_t sizes[BLOCKS];
} xfer_t;

static size_t block_size(size_t i) { return 8 + (i * 37) % 3000; }

static void alloc_all(xfer_t* x, unsigned seed) {
  for (size_t i = 0; i < BLOCKS; i++) {
    x->sizes[i] = block_size(i + seed);
    x->blocks[i] = malloc(x->sizes[i]);
    if (x->blocks[i] != NULL) fill(x->blocks[i], x->sizes[i], seed + (unsigned)i);
  }
}

/* verifies and frees every block; returns the number of bad ones */
static long free_all(xfer_t* x, unsigned seed) {
  long bad = 0;
  for (size_t i = 0; i < BLOCKS; i++) {
    if (x->blocks[i] == NULL || !mi_is_in_heap_region(x->blocks[i]) ||
        !verify(x->blocks[i], x->sizes[i], seed + (unsigned)i)) bad++;
    free(x->blocks[i]);
    x->blocks[i] = NULL;
  }
  return bad;
}

typedef struct worker_s {
  xfer_t* to_free;    /* allocated by the main thread, freed here while main keeps allocating */
  xfer_t* to_return;  /* allocated here, freed by main after this thread exited */
  unsigned seed;
  long bad;
  char* libc_block;   /* allocated inside libc on this thread */
} worker_t;

static void* worker(void* arg) {
  worker_t* w = arg;
  w->bad = free_all(w->to_free, w->seed);
  alloc_all(w->to_return, w->seed + 1);
  if (asprintf(&w->libc_block, "from thread %u", w->seed) < 0) w->libc_block = NULL;
  return NULL;
}

static void test_threads(void) {
  enum { T = 4 };
  static xfer_t from_main[T], from_worker[T], churn;
  for (int round = 0; round < ROUNDS; round++) {
    pthread_t th[T];
    worker_t w[T];
    for (int t = 0; t < T; t++) {
      unsigned seed = (unsigned)(round * 100 + t * 10);
      alloc_all(&from_main[t], seed);
      w[t] = (worker_t){ &from_main[t], &from_worker[t], seed, 0, NULL };
      CHECK_EQ(pthread_create(&th[t], NULL, &worker, &w[t]), 0);
    }
    alloc_all(&churn, 5);                 /* main allocates while the workers free its blocks */
    CHECK_EQ(free_all(&churn, 5), 0);
    for (int t = 0; t < T; t++) {
      CHECK_EQ(pthread_join(th[t], NULL), 0);
      CHECK_EQ(w[t].bad, 0);
      CHECK_EQ(free_all(&from_worker[t], w[t].seed + 1), 0);
      IN_HEAP(w[t].libc_block);
      free(w[t].libc_block);
    }
  }
  /* the memory freed remotely must be usable again */
  mi_collect(true);
  alloc_all(&churn, 9);
  CHECK_EQ(free_all(&churn, 9), 0);
}

int main(void) {
  test_linkage();
  test_direct();
  test_libc_internal();
  test_threads();
  return test_summary("static-override", "malloc, libc-internal and cross-thread blocks in our heap");
}
