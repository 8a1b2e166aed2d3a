/* SPDX-License-Identifier: MIT */
/* dlopen-mimalloc.c -- dlopen of a library that itself links libmimalloc.so (DT_NEEDED), from a
   program that neither links nor preloads it: the dlopen succeeds (libmimalloc's initial-exec
   TLS fits the loader's surplus static TLS: no "cannot allocate memory in static TLS block"),
   the library's mi_malloc/mi_free work from its own threads and from the program's (some
   started before the dlopen), and the program's malloc stays glibc's. With RTLD_LOCAL the mi_
   symbols stay out of the global scope; with RTLD_GLOBAL they join it, after libc, so malloc
   still resolves to glibc's. Two dlopen/dlclose cycles.

   Usage: ov-dlopen-mimalloc <path of libov-miplugin.so> local|global. Built plain, run without
   LD_PRELOAD. */
#define _GNU_SOURCE
#include <pthread.h>

#include "ov.h"

#define NSLOTS 256
#define NTHREADS 2   /* of each kind: before and after the dlopen */

typedef struct miplugin_s {
  void* (*malloc)(size_t, uint64_t);
  void  (*free)(void*);
  bool  (*owns)(const void*);
  size_t (*usable)(const void*);
  void* (*plain_malloc)(size_t);
  void  (*plain_free)(void*);
  void* (*plain_malloc_addr)(void);
  long  (*run)(int, int);
} miplugin_t;

static _Atomic(miplugin_t*) plugin;
static _Atomic(int) stop;
static _Atomic(void*) slots[NSLOTS];
static _Atomic(long) ops;

static const char* object_of(void* addr) {
  Dl_info info;
  if (addr == NULL || !dladdr(addr, &info) || info.dli_fname == NULL) return "(none)";
  return info.dli_fname;
}

static void* user(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  miplugin_t* pl;
  while ((pl = atomic_load(&plugin)) == NULL) {
    if (atomic_load(&stop)) return NULL;
    sched_yield();
  }
  long n = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed) || n < 1000) {
    const size_t i = (size_t)test_rand_below(&rng, NSLOTS);
    void* p = pl->malloc((size_t)test_rand_range(&rng, OV_HDR, (n % 64 == 0 ? 100000 : 2000)), test_rand(&rng));
    CHECK_MSG(p != NULL && pl->owns(p), "mi_malloc from the library returned %p, not in its heap", p);
    p = atomic_exchange(&slots[i], p);
    if (p != NULL) {
      CHECK(ov_verify(p));
      CHECK_GE(pl->usable(p), ov_size(p));
      pl->free(p);   /* often another thread's block */
    }
    /* the program's own malloc is glibc's: not in the library's heap */
    void* g = malloc(64);
    CHECK(g != NULL && !pl->owns(g));
    free(g);
    n++;
  }
  atomic_fetch_add(&ops, n);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s <libov-miplugin.so> local|global\n", argv[0]); return 2; }
  const bool global = (strcmp(argv[2], "global") == 0);
  const char* name = (global ? "override-dlopen-mimalloc-global" : "override-dlopen-mimalloc-local");

  /* the premise: no libmimalloc in the process yet */
  const char* preload = getenv("LD_PRELOAD");
  CHECK_MSG(preload == NULL || strstr(preload, "mimalloc") == NULL, "LD_PRELOAD=%s: this test must run without it", preload);
  CHECK_MSG(dlsym(RTLD_DEFAULT, "mi_malloc") == NULL, "mi_malloc is already in the process before the dlopen");
  CHECK_MSG(strstr(object_of(dlsym(RTLD_DEFAULT, "malloc")), "libc.so") != NULL, "malloc is in %s, not glibc",
            object_of(dlsym(RTLD_DEFAULT, "malloc")));

  uint64_t seed = 1;
  for (int cycle = 0; cycle < 2; cycle++) {
    atomic_store(&stop, 0);
    pthread_t before[NTHREADS], after[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) pthread_create(&before[i], NULL, &user, (void*)(uintptr_t)(seed++));
    usleep(2000);

    dlerror();
    void* h = dlopen(argv[1], RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
    const char* err = (h == NULL ? dlerror() : NULL);
    CHECK_MSG(h != NULL, "dlopen(%s) failed: %s", argv[1], err);
    if (h == NULL) {
      atomic_store(&stop, 1);
      for (int i = 0; i < NTHREADS; i++) pthread_join(before[i], NULL);
      break;
    }
    miplugin_t* pl = (miplugin_t*)malloc(sizeof(miplugin_t));
    *(void**)&pl->malloc = dlsym(h, "miplugin_malloc");
    *(void**)&pl->free = dlsym(h, "miplugin_free");
    *(void**)&pl->owns = dlsym(h, "miplugin_owns");
    *(void**)&pl->usable = dlsym(h, "miplugin_usable");
    *(void**)&pl->plain_malloc = dlsym(h, "miplugin_plain_malloc");
    *(void**)&pl->plain_free = dlsym(h, "miplugin_plain_free");
    *(void**)&pl->plain_malloc_addr = dlsym(h, "miplugin_plain_malloc_addr");
    *(void**)&pl->run = dlsym(h, "miplugin_run");
    CHECK(pl->malloc && pl->free && pl->owns && pl->usable && pl->plain_malloc && pl->plain_free && pl->plain_malloc_addr && pl->run);

    /* libmimalloc came in with the library */
    void* mi = dlsym(h, "mi_malloc");
    CHECK_MSG(strstr(object_of(mi), "libmimalloc") != NULL, "mi_malloc through the handle is in %s", object_of(mi));
    /* the global scope: malloc is still glibc's; mi_malloc only with RTLD_GLOBAL */
    CHECK_MSG(strstr(object_of(dlsym(RTLD_DEFAULT, "malloc")), "libc.so") != NULL, "after the dlopen, malloc is in %s",
              object_of(dlsym(RTLD_DEFAULT, "malloc")));
    void* mi_default = dlsym(RTLD_DEFAULT, "mi_malloc");
    if (global) CHECK_MSG(mi_default == mi, "RTLD_GLOBAL: mi_malloc is not in the global scope (%p)", mi_default);
    else CHECK_MSG(mi_default == NULL, "RTLD_LOCAL: mi_malloc leaked into the global scope (%s)", object_of(mi_default));
    /* the library's plain malloc binds to the same malloc as the program's: mixing is safe */
    CHECK_MSG(pl->plain_malloc_addr() == dlsym(RTLD_DEFAULT, "malloc"), "the library's malloc (%s) is not the program's",
              object_of(pl->plain_malloc_addr()));
    void* a = pl->plain_malloc(100);
    CHECK(a != NULL && !pl->owns(a));
    free(a);
    void* b = malloc(100);
    pl->plain_free(b);

    atomic_store(&plugin, pl);
    for (int i = 0; i < NTHREADS; i++) pthread_create(&after[i], NULL, &user, (void*)(uintptr_t)(seed++));
    const long errors = pl->run(4, 20000);   /* the library's own threads, meanwhile */
    CHECK_MSG(errors == 0, "the library's threads saw %ld errors", errors);
    usleep(10000);
    atomic_store(&stop, 1);
    for (int i = 0; i < NTHREADS; i++) { pthread_join(before[i], NULL); pthread_join(after[i], NULL); }
    atomic_store(&plugin, NULL);
    for (size_t i = 0; i < NSLOTS; i++) {
      void* p = atomic_exchange(&slots[i], NULL);
      if (p != NULL) { CHECK(ov_verify(p)); pl->free(p); }
    }
    free(pl);
    CHECK_EQ(dlclose(h), 0);
  }
  CHECK_MSG(atomic_load(&ops) > 1000, "only %ld operations", atomic_load(&ops));
  return test_summary(name, "2 dlopen/dlclose cycles, %ld operations from the program's threads", atomic_load(&ops));
}
