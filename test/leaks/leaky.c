/* SPDX-License-Identifier: MIT */
/* A program with known leaks for the leak report (MIMALLOC_SHOW_LEAKS=1): three 40-byte
   blocks from leak_small, one 300000-byte block from leak_big, one 3 MiB block from
   leak_huge; everything else it allocates is freed. With the argument "none" it leaks
   nothing. Pointers go to a volatile global so the compiler cannot drop the allocations. */
#include <mimalloc.h>
#include <string.h>

void* volatile keep[8];

__attribute__((noinline)) void* leak_small(void) { return mi_malloc(40); }
__attribute__((noinline)) void* leak_big(void)   { return mi_calloc(1, 300000); }
__attribute__((noinline)) void* leak_huge(void)  { return mi_malloc(3 * 1024 * 1024); }

int main(int argc, char** argv) {
  const int leak = !(argc > 1 && strcmp(argv[1], "none") == 0);
  /* freed work of many sizes, also across a realloc chain */
  for (int i = 0; i < 1000; i++) {
    void* p = mi_malloc((size_t)(i % 97) * 13 + 1);
    keep[7] = p;
    mi_free(p);
  }
  void* r = mi_malloc(10);
  for (size_t n = 20; n < 200000; n *= 3) r = mi_realloc(r, n);
  keep[6] = r;
  mi_free(r);
  if (leak) {
    for (int i = 0; i < 3; i++) keep[i] = leak_small();
    keep[3] = leak_big();
    keep[4] = leak_huge();
  }
  return 0;
}
