/* SPDX-License-Identifier: MIT */
/* mstress: short-lived threads whose objects outlive them.
 *
 * Pattern modelled: mimalloc's stress test (mimalloc-test-stress, "mstress" in mimalloc-bench).
 * The program runs ROUNDS rounds; each round creates T fresh worker threads and joins them. A
 * shared array of slots (atomic pointers) survives all rounds. A worker keeps a small local
 * array of blocks and, driven by its own random generator:
 *   - replaces a local block (free + malloc of a new size),
 *   - frees a local block,
 *   - swaps a local block with a shared slot (taking over a block that another, possibly
 *     finished, thread allocated),
 *   - frees the block of a random shared slot, or fills an empty shared slot.
 * When a worker ends, about a quarter of its local blocks are moved into shared slots (they are
 * transferred to later rounds), the rest are freed. Sizes are mostly small (16..255 B), with a
 * tail: 9% 256 B..4 KiB, 0.9% 4..64 KiB and 0.1% 64 KiB..1 MiB.
 *
 * Written from the description of the pattern, not from the published code. Differences: fixed
 * work instead of a time/scale loop, no "leak on purpose" (everything is freed at the end), and
 * every block carries a header and trailer that are verified before each free. Large blocks get
 * one word written per 4 KiB page.
 *
 * One op = one malloc (every malloc is eventually matched by one free). The number of mallocs
 * is deterministic; which thread frees which block depends on scheduling.
 *
 * usage: mstress [-t THREADS] [-n OPS] [-r ROUNDS] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

/* ---- block check: header word at the start, its complement in the last 8 bytes ---- */
#define BLK_MIN 16
#define BLK_MAX (1u << 20)

/* the header and trailer, and the header again every 4 KiB (touches every page) */
static inline void blk_fill(void *p, size_t size) {
  wl_blk_fill(p, size);
  const uint64_t h = wl_blk_hdr(size);
  for (size_t off = 4096; off + 16 <= size; off += 4096) memcpy((char *)p + off, &h, 8);
}
static uint64_t blk_check(const void *p, const char *where) {
  return wl_blk_check(p, BLK_MIN, BLK_MAX, "mstress", where);
}
static void blk_free(void *p, const char *where) {
  if (p == NULL) return;
  blk_check(p, where);
  free(p);
}

#define LOCAL 128 /* local blocks per worker */

static _Atomic(void *) *shared;
static size_t nshared;

typedef struct worker {
  pthread_t tid;
  uint64_t seed;
  unsigned long long iters;
  unsigned long long allocs; /* out */
  uint64_t sum;              /* out: sum of the headers allocated */
} worker_t;

static size_t draw_size(uint64_t *rng) {
  uint64_t r = bench_rand(rng);
  uint64_t band = bench_index(r, 1000);
  uint32_t lo = (uint32_t)r;
  if (band < 900) return 16 + (((uint64_t)lo * 240) >> 32);            /* 16..255 */
  if (band < 990) return 256 + (((uint64_t)lo * (4096 - 256)) >> 32);  /* ..4 KiB */
  if (band < 999) return 4096 + (((uint64_t)lo * (65536 - 4096)) >> 32); /* ..64 KiB */
  return 65536 + (((uint64_t)lo * (BLK_MAX - 65536)) >> 32);           /* ..1 MiB */
}

static void *alloc_block(worker_t *w, uint64_t *rng) {
  size_t size = draw_size(rng);
  void *p = malloc(size);
  if (p == NULL) {
    fprintf(stderr, "mstress: out of memory\n");
    exit(1);
  }
  blk_fill(p, size);
  w->allocs++;
  w->sum += wl_blk_hdr(size);
  return p;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  uint64_t rng = w->seed;
  void *local[LOCAL];
  memset(local, 0, sizeof local);
  for (unsigned long long i = 0; i < w->iters; i++) {
    uint64_t r = bench_rand(&rng);
    uint64_t action = bench_index(r, 100);
    size_t j = (size_t)(r & (LOCAL - 1));
    if (action < 50) { /* replace a local block */
      blk_free(local[j], "local replace");
      local[j] = alloc_block(w, &rng);
    } else if (action < 70) { /* free a local block */
      blk_free(local[j], "local free");
      local[j] = NULL;
    } else if (action < 90) { /* swap with a shared slot: take over another thread's block */
      size_t k = bench_index(bench_rand(&rng), nshared);
      local[j] = atomic_exchange_explicit(&shared[k], local[j], memory_order_acq_rel);
    } else if (action < 95) { /* free a shared slot's block */
      size_t k = bench_index(bench_rand(&rng), nshared);
      blk_free(atomic_exchange_explicit(&shared[k], NULL, memory_order_acq_rel), "shared free");
    } else { /* store a new block in a shared slot */
      size_t k = bench_index(bench_rand(&rng), nshared);
      void *p = alloc_block(w, &rng);
      blk_free(atomic_exchange_explicit(&shared[k], p, memory_order_acq_rel), "shared store");
    }
  }
  /* the thread ends: transfer about a quarter of its blocks, free the others */
  for (size_t j = 0; j < LOCAL; j++) {
    if (local[j] == NULL) continue;
    uint64_t r = bench_rand(&rng);
    if ((r & 3) == 0) {
      size_t k = bench_index(r, nshared);
      blk_free(atomic_exchange_explicit(&shared[k], local[j], memory_order_acq_rel), "transfer");
    } else {
      blk_free(local[j], "exit");
    }
  }
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: mstress [-t THREADS (2x CPUs, max 64)] [-n OPS (24000000)] [-r ROUNDS (40)] "
          "[-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  unsigned long long threads = (unsigned long long)ncpu * 2, ops = 24000000, rounds = 40, seed = 1;
  if (threads > 64) threads = 64;
  int quick = 0, opt, set_n = 0, set_r = 0;
  while ((opt = getopt(argc, argv, "t:n:r:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': ops = bench_arg(optarg, "ops"); set_n = 1; break;
      case 'r': rounds = bench_arg(optarg, "rounds"); set_r = 1; break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 1024) usage();
  if (quick) {
    if (!set_n) ops = 400000;
    if (!set_r) rounds = 8;
  }

  nshared = (size_t)threads * 256;
  shared = calloc(nshared, sizeof *shared);
  worker_t *w = calloc((size_t)threads, sizeof *w);
  if (shared == NULL || w == NULL) {
    perror("calloc");
    return 1;
  }
  for (size_t k = 0; k < nshared; k++) atomic_init(&shared[k], NULL);
  /* -n counts worker iterations in total (about 0.55 mallocs each) */
  unsigned long long per = ops / (threads * rounds);
  if (per == 0) per = 1;

  unsigned long long allocs = 0;
  uint64_t sum = 0;
  double t0 = bench_now();
  for (unsigned long long round = 0; round < rounds; round++) {
    for (size_t i = 0; i < threads; i++) {
      w[i].seed = seed + round * threads + i;
      w[i].iters = per;
      w[i].allocs = 0;
      w[i].sum = 0;
      int e = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
      if (e != 0) {
        fprintf(stderr, "mstress: pthread_create failed (%d)\n", e);
        return 1;
      }
    }
    for (size_t i = 0; i < threads; i++) {
      pthread_join(w[i].tid, NULL);
      allocs += w[i].allocs;
      sum += w[i].sum;
    }
  }
  double secs = bench_now() - t0;

  for (size_t k = 0; k < nshared; k++) blk_free(atomic_load(&shared[k]), "final");
  free(shared);
  free(w);

  printf("RESULT workload=mstress threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         allocs, secs, (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
