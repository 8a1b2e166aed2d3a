/* SPDX-License-Identifier: MIT */
/* alloc-test: allocation-intensive size-class sweep over a per-thread working set.
 *
 * Models the pattern of the "alloc-test" benchmark of the rpmalloc/mimalloc benchmark suites:
 * each thread owns an array of live blocks and keeps replacing random entries (free the old
 * block, allocate a new one), with request sizes from 8 bytes to a few KiB, biased to small
 * sizes, so that every size class is exercised. Written from scratch. The size distribution
 * sweeps over time: the run is cut into phases of 32768 replacements, and the upper size limit
 * goes 16, 32, ..., 4096 bytes and back down (a triangle wave); within a phase a size is
 * 8 + (limit - 8) * u^3 for u uniform in [0,1) (most requests are small). The working set is
 * 8192 entries per thread (-w), filled at the start and freed at the end, both inside the timed
 * part (a negligible share at the default scale). Threads never share blocks.
 * Differences from the original: the exact distribution, the sweep, the working-set size.
 *
 * Checks: first and last 8 bytes of every block (all of it under 16 bytes) hold a tag derived
 * from its size and sequence number, verified before each free.
 *
 * ops = blocks allocated (over all threads).
 * usage: alloc-test [-n REPLACEMENTS per thread] [-t THREADS (1)] [-w WORKING SET] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

#define PHASE 32768

typedef struct slot {
  unsigned char *p;
  uint32_t size;
  uint32_t seq;
} slot;

typedef struct job {
  uint64_t rng, allocs, check, ops, seq;
  size_t live;
  slot *ws;
} job;

static void corrupt(const slot *s) {
  fprintf(stderr, "CORRUPT alloc-test: block %p size %u seq %u\n", (void *)s->p, s->size, s->seq);
  exit(1);
}

static uint64_t tag_of(const slot *s) {
  return (UINT64_C(0xA110C7E500000000) | s->seq) ^ ((uint64_t)s->size << 36);
}

static void fill(const slot *s) { wl_stamp(s->p, s->size, tag_of(s)); }

static void verify(const slot *s) {
  if (!wl_stamp_ok(s->p, s->size, tag_of(s))) corrupt(s);
}

/* upper size limit of phase k: 16, 32, ..., 4096, 2048, ..., 32, then again */
static uint32_t phase_limit(uint64_t k) {
  static const uint32_t tri[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                 2048, 1024, 512, 256, 128, 64, 32};
  return tri[k % (sizeof tri / sizeof tri[0])];
}

static void take(job *j, slot *s, uint32_t limit) {
  uint64_t r = bench_rand(&j->rng);
  double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
  s->size = 8 + (uint32_t)((double)(limit - 8) * u * u * u);
  s->seq = (uint32_t)j->seq++;
  s->p = malloc(s->size);
  if (s->p == NULL) {
    fprintf(stderr, "alloc-test: out of memory\n");
    exit(1);
  }
  j->allocs++;
  fill(s);
}

static void give(job *j, slot *s) {
  verify(s);
  j->check = (j->check ^ s->seq ^ ((uint64_t)s->size << 32)) * UINT64_C(0x100000001B3);
  free(s->p);
  s->p = NULL;
}

static void *run(void *arg) {
  job *j = arg;
  for (size_t i = 0; i < j->live; i++) take(j, &j->ws[i], phase_limit(0));
  for (uint64_t i = 0; i < j->ops; i++) {
    size_t k = bench_index(bench_rand(&j->rng), j->live);
    give(j, &j->ws[k]);
    take(j, &j->ws[k], phase_limit(i / PHASE));
  }
  for (size_t i = 0; i < j->live; i++) give(j, &j->ws[i]);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: alloc-test [-n REPLACEMENTS per thread (20000000)] [-t THREADS (1)] "
                  "[-w WORKING SET (8192)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long ops = 20000000, threads = 1, live = 8192, seed = 1;
  int quick = 0, nset = 0, opt;
  while ((opt = getopt(argc, argv, "n:t:w:s:qh")) != -1) {
    switch (opt) {
      case 'n': ops = bench_arg(optarg, "replacements"); nset = 1; break;
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'w': live = bench_arg(optarg, "working set"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (threads > 256) threads = 256;
  if (live > 100000000) live = 100000000;
  if (quick && !nset) ops = 300000;

  job *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (unsigned long long i = 0; i < threads; i++) {
    jobs[i].rng = seed + i;
    jobs[i].ops = ops;
    jobs[i].live = (size_t)live;
    jobs[i].ws = calloc((size_t)live, sizeof(slot));
    if (jobs[i].ws == NULL) return 1;
  }
  double t0 = bench_now();
  wl_run_jobs(jobs, sizeof *jobs, (size_t)threads, run, "alloc-test");
  double secs = bench_now() - t0;
  uint64_t total = 0, check = 0;
  for (unsigned long long i = 0; i < threads; i++) {
    total += jobs[i].allocs;
    check = (check * 31) ^ jobs[i].check;
    free(jobs[i].ws);
  }
  free(jobs);
  printf("RESULT workload=alloc-test threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         (unsigned long long)total, secs, (unsigned long long)check);
  bench_print_origin();
  return 0;
}
