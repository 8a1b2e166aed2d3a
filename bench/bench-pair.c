/* SPDX-License-Identifier: MIT */
/* bench-pair: N times { p = malloc(SIZE); write p[0]; free(p); } for instruction counting.
 *
 * bench/callgrind.sh runs it under callgrind with N and 2N iterations; the difference of the two
 * instruction totals divided by N is the cost of one pair (start-up and exit cost cancel out).
 * SIZE 0 runs the same loop without allocating, which measures the loop's own overhead.
 *
 * KEEP (default 1) blocks of the same size stay allocated during the loop, so the freed block is
 * never the last one in its page: this measures the fast paths. With KEEP = 0 an allocator that
 * does work when a page becomes empty (mimalloc retires the page) pays that work on every free.
 *
 * usage: bench-pair SIZE N [KEEP]
 */
#include "bench.h"

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: bench-pair SIZE N [KEEP]   (SIZE 0 = loop without allocation)\n");
    return 2;
  }
  size_t size = (size_t)strtoull(argv[1], NULL, 0);
  unsigned long long n = bench_arg(argv[2], "N");
  size_t keep = argc == 4 ? (size_t)strtoull(argv[3], NULL, 0) : 1;
  void *kept[64];
  if (keep > 64) keep = 64;

  /* first allocation outside the loop: process and thread initialisation is paid here, once,
     identically in both runs */
  void *first = BENCH_MALLOC(size > 0 ? size : 1);
  bench_escape(first);
  BENCH_FREE(first);
  for (size_t i = 0; i < keep; i++) {
    kept[i] = BENCH_MALLOC(size > 0 ? size : 1);
    bench_escape(kept[i]);
  }

  unsigned char local[16];
  if (size > 0) {
    for (unsigned long long i = 0; i < n; i++) {
      unsigned char *p = BENCH_MALLOC(size);
      p[0] = (unsigned char)i;
      bench_escape(p);
      BENCH_FREE(p);
    }
  } else {
    for (unsigned long long i = 0; i < n; i++) {
      unsigned char *p = local;
      p[0] = (unsigned char)i;
      bench_escape(p);
    }
  }
  for (size_t i = 0; i < keep; i++) BENCH_FREE(kept[i]);
  printf("RESULT bench=pair size=%zu keep=%zu ops=%llu", size, keep, n);
  bench_print_origin();
  return 0;
}
