/* SPDX-License-Identifier: MIT */
/* replace: a cache of fixed-size entries, one evicted and one inserted at a time.
 *
 * Pattern modelled: a program that holds a steady population of objects of one size and
 * replaces them at random: a cache of fixed-size entries (an LRU of buffers, a connection or
 * session table, a pool of request objects). Each step frees a random live block and
 * allocates a new one of the same size in its place, so the population never grows and the
 * allocator's pages of that size stay nearly full: a block is freed into a full page and the
 * next allocation must find that one free block.
 *
 * The run is nine phases: block sizes 64 B, 1,000 B and 9,000 B, each with 3,001, 4,003 and
 * 5,009 live blocks (how many blocks fit an allocator's pages decides how many free blocks
 * it has to spare, so a single population would favour whichever allocator it happens to
 * suit). Every block carries a header and trailer, checked before its free, and the header
 * again every 4 KiB (so every page of a block is touched, as a cache entry's contents would
 * be, and peak RSS measures the blocks' footprint).
 *
 * One op = one free and one malloc.
 *
 * usage: replace [-n STEPS per phase (1000000)] [-s SEED (1)] [-q]
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const size_t SIZES[] = {64, 1000, 9000};
static const size_t LIVE[] = {3001, 4003, 5009};

/* the header and trailer, and the header again every 4 KiB */
static inline void blk_fill(void *p, size_t size) {
  wl_blk_fill(p, size);
  const uint64_t h = wl_blk_hdr(size);
  for (size_t off = 4096; off + 16 <= size; off += 4096) memcpy((char *)p + off, &h, 8);
}

static void usage(void) {
  fprintf(stderr, "usage: replace [-n STEPS per phase (1000000)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long steps = 1000000, seed = 1;
  int opt, quick = 0, set_n = 0;
  while ((opt = getopt(argc, argv, "n:s:qh")) != -1) {
    switch (opt) {
      case 'n': steps = bench_arg(optarg, "steps"); set_n = 1; break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (quick && !set_n) steps = 20000;

  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
  uint64_t sum = 0;
  unsigned long long ops = 0;
  const double t0 = bench_now();
  for (size_t si = 0; si < sizeof SIZES / sizeof SIZES[0]; si++) {
    const size_t size = SIZES[si];
    for (size_t li = 0; li < sizeof LIVE / sizeof LIVE[0]; li++) {
      const size_t live = LIVE[li];
      void **blocks = calloc(live, sizeof *blocks);
      if (blocks == NULL) exit(1);
      for (size_t k = 0; k < live; k++) {
        blocks[k] = malloc(size);
        if (blocks[k] == NULL) { fprintf(stderr, "replace: out of memory\n"); exit(1); }
        blk_fill(blocks[k], size);
        sum += wl_blk_hdr(size);
      }
      for (unsigned long long i = 0; i < steps; i++) {
        const size_t k = bench_index(bench_rand(&rng), live);
        wl_blk_check(blocks[k], size, size, "replace", "evict");
        free(blocks[k]);
        void *p = malloc(size);
        if (p == NULL) { fprintf(stderr, "replace: out of memory\n"); exit(1); }
        blk_fill(p, size);
        sum += wl_blk_hdr(size);
        blocks[k] = p;
      }
      for (size_t k = 0; k < live; k++) {
        wl_blk_check(blocks[k], size, size, "replace", "final");
        free(blocks[k]);
      }
      free(blocks);
      ops += steps;
    }
  }
  const double secs = bench_now() - t0;

  printf("RESULT workload=replace threads=1 ops=%llu elapsed_s=%.6f checksum=%016llx", ops, secs,
         (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
