/* SPDX-License-Identifier: MIT */
/* For run-live-profile.py: holds known blocks from two call sites with the live view and the
   heap profiler on, publishes (mi_collect), says "ready <bytes of hold_big> <bytes of
   hold_small>" and waits for a line on stdin before it frees them and exits. */
#include <mimalloc.h>
#include <stdio.h>
#include <string.h>

#define N_BIG   40000    /* 40000 x 1000 B (1024-byte blocks) */
#define N_SMALL 100000   /* 100000 x 100 B (112-byte blocks) */
static void* big[N_BIG];
static void* small[N_SMALL];

__attribute__((noinline)) void* hold_big(size_t n) { void* p = mi_malloc(n); memset(p, 1, n); return p; }
__attribute__((noinline)) void* hold_small(size_t n) { void* p = mi_malloc(n); memset(p, 2, n); return p; }

int main(void) {
  for (int i = 0; i < N_BIG; i++) big[i] = hold_big(1000);
  for (int i = 0; i < N_SMALL; i++) small[i] = hold_small(100);
  mi_collect(false);   /* publishes now */
  printf("ready %zu %zu\n", (size_t)N_BIG * mi_usable_size(big[0]), (size_t)N_SMALL * mi_usable_size(small[0]));
  fflush(stdout);
  char line[16];
  if (fgets(line, sizeof(line), stdin) == NULL) { /* the driver closed stdin */ }
  for (int i = 0; i < N_BIG; i++) mi_free(big[i]);
  for (int i = 0; i < N_SMALL; i++) mi_free(small[i]);
  return 0;
}
