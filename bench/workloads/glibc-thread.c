/* SPDX-License-Identifier: MIT */
/* glibc-thread: a small working set per thread, replaced at random, sizes up to 32 KiB.
 *
 * Pattern modelled: glibc's benchtests/bench-malloc-thread ("glibc-thread" in mimalloc-bench):
 * each thread keeps a fixed array of blocks and, over and over, frees a random entry and
 * allocates a new block of a random size in its place, with sizes drawn so that small requests
 * dominate and every size class up to 32 KiB is used now and then. What it measures besides
 * the throughput is the resident floor of a program with a few threads and a working set of
 * about a megabyte: the allocator's per-thread and per-size-class overhead is most of its
 * peak RSS.
 *
 * Written from the description of the pattern, not from the published code. Differences: a
 * fixed number of iterations instead of a fixed duration (so the work does not depend on the
 * machine), a working set of 1024 blocks per thread (-w), sizes whose power of two is uniform in
 * 16 B..16 KiB and then uniform up to twice that (so 16 B..32 KiB, most under 1 KiB), and every
 * block carries a header and trailer that are verified before its free.
 *
 * One op = one malloc (and one free, except for the first fill of the working set).
 *
 * usage: glibc-thread [-t THREADS (1)] [-n ITERATIONS per thread] [-w WORKING SET] [-s SEED] [-q]
 */
#include "workload.h"

#include <unistd.h>

#define BLK_MIN 16
#define BLK_MAX (32u << 10)

typedef struct job {
  uint64_t seed;
  unsigned long long iters;
  size_t wset;
  uint64_t sum; /* out: sum of the headers allocated */
} job_t;

/* log-uniform in [16, 32 KiB]: 16 * 2^(11 r) */
static size_t draw_size(uint64_t *rng) {
  const uint64_t r = bench_rand(rng);
  const unsigned shift = (unsigned)bench_index(r, 11);              /* 2^0 .. 2^10 */
  const size_t lo = (size_t)BLK_MIN << shift;                       /* 16 .. 16 KiB */
  return lo + (size_t)(((r >> 32) * (uint64_t)lo) >> 32);           /* [lo, 2 lo) */
}

static void *worker(void *arg) {
  job_t *j = arg;
  uint64_t rng = j->seed;
  void **blocks = calloc(j->wset, sizeof *blocks);
  if (blocks == NULL) exit(1);
  uint64_t sum = 0;
  for (unsigned long long i = 0; i < j->iters; i++) {
    const size_t k = bench_index(bench_rand(&rng), j->wset);
    if (blocks[k] != NULL) {
      wl_blk_check(blocks[k], BLK_MIN, BLK_MAX, "glibc-thread", "replace");
      free(blocks[k]);
    }
    const size_t size = draw_size(&rng);
    void *p = malloc(size);
    if (p == NULL) {
      fprintf(stderr, "glibc-thread: out of memory\n");
      exit(1);
    }
    wl_blk_fill(p, size);
    sum += wl_blk_hdr(size);
    blocks[k] = p;
  }
  for (size_t k = 0; k < j->wset; k++) {
    if (blocks[k] == NULL) continue;
    wl_blk_check(blocks[k], BLK_MIN, BLK_MAX, "glibc-thread", "final");
    free(blocks[k]);
  }
  free(blocks);
  j->sum = sum;
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: glibc-thread [-t THREADS (1)] [-n ITERATIONS per thread (16000000)] "
                  "[-w WORKING SET (1024)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long threads = 1, iters = 16000000, wset = 1024, seed = 1;
  int opt, quick = 0, set_n = 0;
  while ((opt = getopt(argc, argv, "t:n:w:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': iters = bench_arg(optarg, "iterations"); set_n = 1; break;
      case 'w': wset = bench_arg(optarg, "working set"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 256) usage();
  if (quick && !set_n) iters = 100000;

  job_t *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (size_t i = 0; i < threads; i++) {
    jobs[i].seed = seed * 1000003u + i;
    jobs[i].iters = iters;
    jobs[i].wset = (size_t)wset;
  }
  const double t0 = bench_now();
  wl_run_jobs(jobs, sizeof *jobs, (size_t)threads, worker, "glibc-thread");
  const double secs = bench_now() - t0;
  uint64_t sum = 0;
  for (size_t i = 0; i < threads; i++) sum += jobs[i].sum;
  free(jobs);

  printf("RESULT workload=glibc-thread threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx",
         threads, threads * iters, secs, (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
