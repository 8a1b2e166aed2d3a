/* SPDX-License-Identifier: MIT */
/* bench-st: single-thread malloc/free of mixed small sizes.
 *
 * Model: a program holding a working set of LIVE objects that it keeps replacing. Each step picks
 * a random live slot, reads the block's first word, frees it, allocates a new block with a size
 * drawn from the distribution in bench.h (mostly 8..512 bytes, 5% up to 4 KiB) and writes its
 * first word. Frees therefore arrive in random order, not LIFO. One step = one malloc+free pair.
 *
 * usage: bench-st [-n ITERATIONS] [-l LIVE] [-s SEED]
 */
#include "bench.h"

#include <unistd.h>

static void usage(void) {
  fprintf(stderr, "usage: bench-st [-n ITERATIONS (50000000)] [-l LIVE (4096)] [-s SEED (1)]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long iters = 50000000, live = 4096, seed = 1;
  int opt;
  while ((opt = getopt(argc, argv, "n:l:s:h")) != -1) {
    switch (opt) {
      case 'n': iters = bench_arg(optarg, "iterations"); break;
      case 'l': live = bench_arg(optarg, "live"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      default: usage();
    }
  }
  if (optind != argc) usage();

  static uint32_t sizes[BENCH_SIZE_TABLE];
  bench_size_table_init(sizes, seed);
  /* the slot array itself comes from the system allocator in every configuration: it is not
     part of the measurement */
  uint64_t **slots = calloc((size_t)live, sizeof *slots);
  if (slots == NULL) { perror("calloc"); return 1; }

  uint64_t rng = seed, check = 0;
  for (size_t i = 0; i < live; i++) {
    uint64_t r = bench_rand(&rng);
    uint64_t *p = BENCH_MALLOC(sizes[r & (BENCH_SIZE_TABLE - 1)]);
    if (p == NULL) { fprintf(stderr, "out of memory\n"); return 1; }
    *p = r;
    slots[i] = p;
  }

  /* one loop for the untimed warm-up (1/8 of the work, reaching steady state) and the timed run */
  unsigned long long warmup = iters / 8;
  double t0 = 0;
  for (unsigned long long i = 0; i < warmup + iters; i++) {
    if (i == warmup) t0 = bench_now();
    uint64_t r = bench_rand(&rng);
    size_t slot = bench_index(r, (size_t)live);
    uint64_t *old = slots[slot];
    check += *old;
    BENCH_FREE(old);
    uint64_t *p = BENCH_MALLOC(sizes[r & (BENCH_SIZE_TABLE - 1)]);
    if (p == NULL) { fprintf(stderr, "out of memory\n"); return 1; }
    *p = i; /* touch the first word */
    slots[slot] = p;
  }
  double secs = bench_now() - t0;

  for (size_t i = 0; i < live; i++) {
    check += *slots[i];
    BENCH_FREE(slots[i]);
  }
  free(slots);

  printf("RESULT bench=st ops=%llu live=%llu seconds=%.6f ops_per_sec=%.0f check=%llu", iters,
         live, secs, (double)iters / secs, (unsigned long long)(check & 0xffff));
  bench_print_origin();
  return 0;
}
