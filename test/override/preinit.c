/* SPDX-License-Identifier: MIT */
/* preinit.c -- allocation before any constructor: from the executable's .preinit_array (runs
   before every shared library constructor) and from libov-early.so's constructor (runs before
   libmimalloc's). Each calls malloc/calloc/realloc/free/posix_memalign/strdup and checks the
   blocks are ours and usable (ov-early.h); main then verifies the blocks they kept, reallocates
   some and frees them, half from another thread. A child run with LD_DEBUG=libs proves the
   constructor order the test depends on.

   Built twice: linked with libmimalloc (override-preinit) and plain under LD_PRELOAD
   (override-preinit-preload). */
#define _GNU_SOURCE
#include <pthread.h>

#include "ov.h"
#include "ov-early.h"

extern ov_early_t ov_early_state;   /* libov-early.so */
static ov_early_t preinit_state;

static void ov_preinit(int argc, char** argv, char** envp) {
  (void)argc; (void)argv; (void)envp;
  ov_early_exercise(&preinit_state, 7);
}
__attribute__((section(".preinit_array"), used))
static void (*const ov_preinit_entry)(int, char**, char**) = &ov_preinit;

/* verify (and reallocate) a kept block, then free it */
static void release(ov_early_t* st, size_t i, bool do_realloc) {
  void* p = st->keep[i];
  if (p == NULL) return;
  CHECK_MSG(ov_early_intact(p, st->keep_size[i], st->keep_seed[i]), "early block %zu (%zu bytes) was changed", i, st->keep_size[i]);
  CHECK(mi_is_in_heap_region(p));
  CHECK_GE(malloc_usable_size(p), st->keep_size[i]);
  if (do_realloc) {
    void* q = realloc(p, st->keep_size[i] * 2 + 10);
    CHECK(q != NULL);
    if (q != NULL) {
      CHECK_MSG(ov_early_intact(q, st->keep_size[i], st->keep_seed[i]), "early block %zu lost its contents in realloc", i);
      p = q;
    }
  }
  free(p);
  st->keep[i] = NULL;
}

static void* free_odd(void* arg) {
  ov_early_t* st = (ov_early_t*)arg;
  for (size_t i = 1; i < OV_EARLY_KEEP; i += 2) release(st, i, i == 3);
  return NULL;
}

/* Position of the loader's "calling init:" line for a path containing name, or -1. */
static long init_pos(const char* log, const char* name) {
  for (const char* s = strstr(log, "calling init: "); s != NULL; s = strstr(s + 1, "calling init: ")) {
    const char* eol = strchr(s, '\n');
    const char* hit = strstr(s, name);
    if (hit != NULL && (eol == NULL || hit < eol)) return (long)(s - log);
  }
  return -1;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "order") == 0) return 0;   /* the LD_DEBUG child */
  ov_require_override("preinit");

  /* both early exercises ran, and passed */
  CHECK_MSG(preinit_state.ran, "the .preinit_array function did not run");
  CHECK_MSG(ov_early_state.ran, "libov-early.so's constructor did not run");
  CHECK_MSG(ov_early_state.checks > 10, "the early constructor made only %d checks", ov_early_state.checks);
  CHECK_MSG(ov_early_state.failures == 0, "%d checks failed in libov-early.so's constructor (see above)", ov_early_state.failures);
  CHECK_MSG(preinit_state.failures == 0, "%d checks failed in the preinit function (see above)", preinit_state.failures);

  /* the kept blocks: even ones freed here, odd ones from another thread */
  pthread_t t1, t2;
  pthread_create(&t1, NULL, &free_odd, &preinit_state);
  pthread_create(&t2, NULL, &free_odd, &ov_early_state);
  for (size_t i = 0; i < OV_EARLY_KEEP; i += 2) {
    release(&preinit_state, i, i == 2);
    release(&ov_early_state, i, i == 4);
  }
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  for (int k = 0; k < 1000; k++) free(ov_make(16 + (size_t)k * 40, (uint64_t)k));   /* still allocating */

  /* The order this test depends on: preinit, then libov-early's constructor, then
     libmimalloc's (the loader reports constructor calls with LD_DEBUG=libs). */
  char* child_argv[] = { argv[0], (char*)"order", NULL };
  const char* env[] = { "LD_DEBUG=libs", NULL };
  ov_run_t* run = (ov_run_t*)malloc(sizeof(ov_run_t));
  ov_run_self(child_argv, env, 20000, run);
  CHECK(!run->timed_out && WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0);
  const long pos_early = init_pos(run->err, "libov-early.so");
  const long pos_mi = init_pos(run->err, "libmimalloc");
  CHECK_MSG(pos_early >= 0 && pos_mi >= 0, "no 'calling init' lines for libov-early.so (%ld) and libmimalloc (%ld) in:\n%s",
            pos_early, pos_mi, run->err);
  CHECK_MSG(pos_early < pos_mi, "libov-early.so's constructor ran after libmimalloc's; loader log:\n%s", run->err);
  const char* pre = strstr(run->err, "calling preinit: ");
  CHECK_MSG(pre != NULL && pos_mi >= 0 && pre - run->err < pos_mi, "the preinit function did not run before libmimalloc's constructor; loader log:\n%s", run->err);
  free(run);

  return test_summary("override-preinit" OV_SUFFIX, "preinit: %d checks, early constructor: %d checks", preinit_state.checks, ov_early_state.checks);
}
