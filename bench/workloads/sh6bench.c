/* SPDX-License-Identifier: MIT */
/* sh6bench: batches over many size classes, freed mostly in reverse (LIFO) order, partly in
 * random order, plus a pool of longer-lived survivors.
 *
 * Models the pattern of "sh6bench" (MicroQuill's SmartHeap stress test): a thread allocates a
 * batch of blocks whose sizes sweep through many size classes and releases them in the reverse
 * order, then repeats with other orders. Written from scratch. Each round (batch of 256..1279
 * blocks, sizes sweeping 1..1000 bytes with every 50th block 1..8 KiB):
 *   1. allocate the batch, free it in reverse order (LIFO);
 *   2. allocate the batch again, free the newer half in reverse order, allocate a quarter more,
 *      then free everything left in random order;
 *   every 8th block of step 2 instead replaces a random entry of a 4096-entry survivor pool
 *   (freeing the evicted block), so some blocks outlive many rounds.
 * Differences from the original: sizes and batch lengths are drawn from a fixed-seed generator,
 * the random-order phase and the survivor pool are additions, no SmartHeap-specific calls.
 *
 * Checks: the first and last 8 bytes of every block (all of it when under 16 bytes) hold a tag
 * derived from its size and sequence number, verified before each free.
 *
 * ops = blocks allocated.
 * usage: sh6bench [-n ROUNDS] [-t THREADS] [-s SEED] [-q]
 *   single-threaded by default; with -t N each thread runs its own rounds (no sharing).
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

#define POOL 4096
#define MAX_BATCH 1280

typedef struct slot {
  unsigned char *p;
  uint32_t size;
  uint32_t seq;
} slot;

typedef struct job {
  uint64_t rng, allocs, check, rounds, seq, sweep;
  slot *batch, *pool;
  pthread_t th;
} job;

static void corrupt(const slot *s) {
  fprintf(stderr, "CORRUPT sh6bench: block %p size %u seq %u\n", (void *)s->p, s->size, s->seq);
  exit(1);
}

static uint64_t tag_of(const slot *s) {
  return (UINT64_C(0x5A17C0DE00000000) | s->seq) ^ ((uint64_t)s->size << 44);
}

static void fill(const slot *s) { wl_stamp(s->p, s->size, tag_of(s)); }

static void verify(const slot *s) {
  if (!wl_stamp_ok(s->p, s->size, tag_of(s))) corrupt(s);
}

/* next size of the sweep: every class 1..1000 in a scrambled order, every 50th block 1..8 KiB */
static uint32_t next_size(job *j) {
  uint64_t k = j->sweep++;
  if (k % 50 == 49) return 1001 + (uint32_t)((k * 131) % 7192);
  return 1 + (uint32_t)((k * 37) % 1000);
}

static void take(job *j, slot *s) {
  s->size = next_size(j);
  s->seq = (uint32_t)j->seq++;
  s->p = malloc(s->size);
  if (s->p == NULL) {
    fprintf(stderr, "sh6bench: out of memory\n");
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
  slot *b = j->batch;
  for (uint64_t r = 0; r < j->rounds; r++) {
    unsigned n = 256 + (unsigned)bench_index(bench_rand(&j->rng), 1024);
    /* 1: LIFO */
    for (unsigned i = 0; i < n; i++) take(j, &b[i]);
    for (unsigned i = n; i-- > 0;) give(j, &b[i]);
    /* 2: allocate, free the newer half LIFO, allocate a quarter more, free the rest randomly */
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
      take(j, &b[m]);
      if (i % 8 == 7) { /* into the survivor pool */
        size_t k = bench_index(bench_rand(&j->rng), POOL);
        if (j->pool[k].p) give(j, &j->pool[k]);
        j->pool[k] = b[m];
      } else {
        m++;
      }
    }
    unsigned keep = m / 2;
    while (m > keep) give(j, &b[--m]);
    for (unsigned i = 0; i < n / 4; i++) take(j, &b[m++]);
    for (unsigned i = m; i > 1; i--) { /* Fisher-Yates shuffle */
      size_t k = bench_index(bench_rand(&j->rng), i);
      slot t = b[i - 1];
      b[i - 1] = b[k];
      b[k] = t;
    }
    for (unsigned i = 0; i < m; i++) give(j, &b[i]);
  }
  for (size_t k = 0; k < POOL; k++)
    if (j->pool[k].p) give(j, &j->pool[k]);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: sh6bench [-n ROUNDS (15000)] [-t THREADS (1)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long rounds = 15000, threads = 1, seed = 1;
  int quick = 0, nset = 0, opt;
  while ((opt = getopt(argc, argv, "n:t:s:qh")) != -1) {
    switch (opt) {
      case 'n': rounds = bench_arg(optarg, "rounds"); nset = 1; break;
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (threads > 256) threads = 256;
  if (quick && !nset) rounds = 600;

  job *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (unsigned long long i = 0; i < threads; i++) {
    jobs[i].rng = seed + i;
    jobs[i].rounds = rounds;
    jobs[i].sweep = (seed + i) * 7919;
    jobs[i].batch = calloc(MAX_BATCH + MAX_BATCH / 4, sizeof(slot));
    jobs[i].pool = calloc(POOL, sizeof(slot));
    if (jobs[i].batch == NULL || jobs[i].pool == NULL) return 1;
  }
  double t0 = bench_now();
  if (threads == 1) {
    run(&jobs[0]);
  } else {
    for (unsigned long long i = 0; i < threads; i++)
      if (pthread_create(&jobs[i].th, NULL, run, &jobs[i]) != 0) {
        fprintf(stderr, "sh6bench: pthread_create failed\n");
        return 1;
      }
    for (unsigned long long i = 0; i < threads; i++) pthread_join(jobs[i].th, NULL);
  }
  double secs = bench_now() - t0;
  uint64_t ops = 0, check = 0;
  for (unsigned long long i = 0; i < threads; i++) {
    ops += jobs[i].allocs;
    check = (check * 31) ^ jobs[i].check;
    free(jobs[i].batch);
    free(jobs[i].pool);
  }
  free(jobs);
  printf("RESULT workload=sh6bench threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         (unsigned long long)ops, secs, (unsigned long long)check);
  bench_print_origin();
  return 0;
}
