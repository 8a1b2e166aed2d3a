/* SPDX-License-Identifier: MIT */
/* malloc-large: large blocks and buffers grown with realloc.
 *
 * Pattern modelled: the "malloc-large" test of mimalloc-bench (large allocations of many
 * megabytes, freed and reallocated) combined with the common "growing vector" pattern. Each
 * thread (default one; -t N runs N threads that split the work) keeps LIVE large blocks and does
 * steps of two kinds:
 *   - 7 steps in 8: replace a random live block by a new one of 64 KiB..32 MiB (the power of two
 *     is uniform in 64 KiB..16 MiB, then uniform up to twice that), writing a header, a trailer
 *     and one word every 8 pages (32 KiB);
 *   - 1 step in 8: grow a buffer from 4 KiB to a random 1..32 MiB target with realloc, by 2x
 *     (even sequences) or by 1.5x (odd sequences), writing one word per 4 KiB page of every new
 *     part (like appending to a vector) and checking the words of the old part after each
 *     realloc; then free it.
 *
 * Written from the description of the pattern, not from the published code. Differences: the
 * published test only allocates and frees; this one also grows buffers with realloc, keeps a few
 * blocks alive, touches only part of each block, and verifies the data it wrote before every
 * free and after every realloc.
 *
 * One op = one malloc or one realloc call (each block ends with one free).
 *
 * usage: malloc-large [-t THREADS] [-n STEPS] [-l LIVE] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define PAGE 4096
#define SPARSE (8 * PAGE)

static inline uint64_t mark(uint64_t tag, size_t off) { return wl_mix64(tag ^ (uint64_t)off); }
static inline void put(void *p, size_t off, uint64_t v) { memcpy((char *)p + off, &v, 8); }
static inline uint64_t get(const void *p, size_t off) {
  uint64_t v;
  memcpy(&v, (const char *)p + off, 8);
  return v;
}
static void corrupt(const void *p, size_t off, uint64_t got, uint64_t want, const char *where) {
  fprintf(stderr, "CORRUPT malloc-large: %p+%zu is %016llx, expected %016llx (%s)\n", p, off,
          (unsigned long long)got, (unsigned long long)want, where);
  exit(1);
}

/* A large block: header {tag, size}, a mark every SPARSE bytes, a mark in the last 8 bytes. */
typedef struct {
  void *p;
  size_t size;
  uint64_t tag;
} big_t;

static void big_write(const big_t *b) {
  put(b->p, 0, b->tag);
  put(b->p, 8, (uint64_t)b->size);
  for (size_t off = SPARSE; off + 8 <= b->size; off += SPARSE) put(b->p, off, mark(b->tag, off));
  put(b->p, b->size - 8, ~mark(b->tag, b->size));
}
static void big_check(const big_t *b) {
  if (get(b->p, 0) != b->tag) corrupt(b->p, 0, get(b->p, 0), b->tag, "header");
  if (get(b->p, 8) != b->size) corrupt(b->p, 8, get(b->p, 8), b->size, "size");
  for (size_t off = SPARSE; off + 8 <= b->size - 8; off += SPARSE)
    if (get(b->p, off) != mark(b->tag, off))
      corrupt(b->p, off, get(b->p, off), mark(b->tag, off), "page mark");
  if (get(b->p, b->size - 8) != ~mark(b->tag, b->size))
    corrupt(b->p, b->size - 8, get(b->p, b->size - 8), ~mark(b->tag, b->size), "trailer");
}

typedef struct worker {
  pthread_t tid;
  uint64_t seed;
  unsigned long long steps;
  size_t live;
  unsigned long long ops; /* out */
  uint64_t sum;           /* out */
} worker_t;

static void oom(void) {
  fprintf(stderr, "malloc-large: out of memory\n");
  exit(1);
}

/* Grow a buffer by realloc from 4 KiB to `target`; returns the number of calls. */
static unsigned long long grow(uint64_t tag, size_t target, int doubling, uint64_t *sum) {
  size_t cap = 4 * KIB, filled = 0;
  unsigned long long calls = 1;
  char *buf = malloc(cap);
  if (buf == NULL) oom();
  for (;;) {
    /* append: one word per page of the new part */
    for (size_t off = filled; off + 8 <= cap; off += PAGE) put(buf, off, mark(tag, off));
    filled = (cap + PAGE - 1) / PAGE * PAGE;
    if (cap >= target) break;
    size_t ncap = doubling ? cap * 2 : cap + cap / 2;
    if (ncap > target) ncap = target;
    char *nb = realloc(buf, ncap);
    if (nb == NULL) oom();
    buf = nb;
    calls++;
    /* the old part must have been carried over */
    for (size_t off = 0; off + 8 <= cap; off += PAGE)
      if (get(buf, off) != mark(tag, off)) corrupt(buf, off, get(buf, off), mark(tag, off), "realloc");
    cap = ncap;
  }
  *sum += get(buf, 0) + cap;
  free(buf);
  return calls;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  uint64_t rng = w->seed, sum = 0;
  unsigned long long ops = 0, seqs = 0;
  big_t *live = calloc(w->live, sizeof *live);
  if (live == NULL) oom();
  for (unsigned long long i = 0; i < w->steps; i++) {
    uint64_t r = bench_rand(&rng);
    if ((r & 7) == 7) {
      size_t target = MIB + bench_index(bench_rand(&rng), 31 * MIB + 1);
      ops += grow(r, target, (int)(seqs++ & 1) == 0, &sum);
      continue;
    }
    big_t *b = &live[bench_index(r, w->live)];
    if (b->p != NULL) {
      big_check(b);
      free(b->p);
    }
    uint64_t r2 = bench_rand(&rng);
    size_t base = (64 * KIB) << ((r2 & 0xff) % 9); /* 64 KiB .. 16 MiB */
    b->size = base + bench_index(r2, base + 1);     /* .. 32 MiB */
    b->tag = r2;
    b->p = malloc(b->size);
    if (b->p == NULL) oom();
    ops++;
    big_write(b);
    sum += b->size;
  }
  for (size_t j = 0; j < w->live; j++) {
    if (live[j].p == NULL) continue;
    big_check(&live[j]);
    free(live[j].p);
  }
  free(live);
  w->ops = ops;
  w->sum = sum;
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: malloc-large [-t THREADS (1)] [-n STEPS (1600)] [-l LIVE per thread (4)] "
          "[-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long threads = 1, steps = 1600, live = 4, seed = 1;
  int quick = 0, opt, set_n = 0;
  while ((opt = getopt(argc, argv, "t:n:l:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': steps = bench_arg(optarg, "steps"); set_n = 1; break;
      case 'l': live = bench_arg(optarg, "live"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 256 || live > 4096) usage();
  if (quick && !set_n) steps = 40;

  worker_t *w = calloc((size_t)threads, sizeof *w);
  if (w == NULL) {
    perror("calloc");
    return 1;
  }
  unsigned long long per = steps / threads, extra = steps % threads;
  for (size_t i = 0; i < threads; i++) {
    w[i].seed = seed + i;
    w[i].steps = per + (i < extra ? 1 : 0);
    w[i].live = (size_t)live;
  }

  double t0 = bench_now();
  if (threads == 1) {
    worker_main(&w[0]);
  } else {
    for (size_t i = 0; i < threads; i++) {
      int e = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
      if (e != 0) {
        fprintf(stderr, "malloc-large: pthread_create failed (%d)\n", e);
        return 1;
      }
    }
    for (size_t i = 0; i < threads; i++) pthread_join(w[i].tid, NULL);
  }
  double secs = bench_now() - t0;

  unsigned long long ops = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < threads; i++) {
    ops += w[i].ops;
    sum = sum * 31 + w[i].sum;
  }
  free(w);

  printf("RESULT workload=malloc-large threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx",
         threads, ops, secs, (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
