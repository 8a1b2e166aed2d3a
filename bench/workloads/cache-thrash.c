/* SPDX-License-Identifier: MIT */
/* cache-thrash: active false sharing between objects the allocator hands to different threads.
 *
 * Pattern modelled: Hoard's cache-thrash benchmark (Berger et al., "Hoard: A Scalable Memory
 * Allocator for Multithreaded Applications"). Every worker repeatedly allocates a small object,
 * writes every byte of it WRITES times and frees it. If the allocator serves concurrently
 * running threads from the same cache line (for example from one shared free list of a size
 * class), their writes fight over that line; an allocator with per-thread memory keeps them
 * apart. Unlike cache-scratch, no object is ever passed between threads.
 *
 * Written from the description of the pattern, not from the published code. Differences: -n is
 * the total number of allocations, split evenly over the workers; the workers start together
 * (a barrier); the bytes are written with read-modify-write increments, and every object is
 * checked before it is freed.
 *
 * One op = one malloc + WRITES passes over the object + one free.
 *
 * usage: cache-thrash [-t THREADS] [-n OBJECTS] [-w WRITES] [-z SIZE] [-s SEED] [-q]
 */
#include "../bench.h"

#include <pthread.h>
#include <unistd.h>

typedef struct worker {
  pthread_t tid;
  unsigned long long iters;
  unsigned char base;
  uint64_t sum; /* out */
} worker_t;

static size_t obj_size = 8;
static unsigned long long writes = 10000;
static pthread_barrier_t start;

static void check_obj(const unsigned char *p, unsigned char want, const char *where) {
  for (size_t k = 0; k < obj_size; k++) {
    if (p[k] != (unsigned char)(want + k)) {
      fprintf(stderr, "CORRUPT cache-thrash: byte %zu of %p is %u, expected %u (%s)\n", k,
              (const void *)p, p[k], (unsigned char)(want + k), where);
      exit(1);
    }
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pthread_barrier_wait(&start);
  uint64_t sum = 0;
  for (unsigned long long i = 0; i < w->iters; i++) {
    unsigned char *p = malloc(obj_size);
    if (p == NULL) {
      fprintf(stderr, "cache-thrash: out of memory\n");
      exit(1);
    }
    unsigned char init = (unsigned char)(w->base + i);
    for (size_t k = 0; k < obj_size; k++) p[k] = (unsigned char)(init + k);
    volatile unsigned char *v = p;
    for (unsigned long long r = 0; r < writes; r++)
      for (size_t k = 0; k < obj_size; k++) v[k] = (unsigned char)(v[k] + 1);
    unsigned char want = (unsigned char)(init + writes);
    check_obj(p, want, "after writes");
    sum += want;
    free(p);
  }
  w->sum = sum;
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: cache-thrash [-t THREADS (CPUs, max 64)] [-n OBJECTS in total (60000)] "
          "[-w WRITES per byte (10000)] [-z SIZE (8)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  unsigned long long threads = (unsigned long long)ncpu, objects = 60000, seed = 1;
  if (threads > 64) threads = 64;
  int quick = 0, opt, set_n = 0;
  while ((opt = getopt(argc, argv, "t:n:w:z:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': objects = bench_arg(optarg, "objects"); set_n = 1; break;
      case 'w': writes = bench_arg(optarg, "writes"); break;
      case 'z': obj_size = (size_t)bench_arg(optarg, "size"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 1024 || obj_size > 4096) usage();
  if (quick && !set_n) objects = 100;

  worker_t *w = calloc((size_t)threads, sizeof *w);
  if (w == NULL || pthread_barrier_init(&start, NULL, (unsigned)threads) != 0) {
    perror("init");
    return 1;
  }
  unsigned long long per = objects / threads, extra = objects % threads;
  for (size_t i = 0; i < threads; i++) {
    w[i].base = (unsigned char)(seed * 31 + i * 7);
    w[i].iters = per + (i < extra ? 1 : 0);
  }

  double t0 = bench_now();
  for (size_t i = 0; i < threads; i++) {
    int e = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
    if (e != 0) {
      fprintf(stderr, "cache-thrash: pthread_create failed (%d)\n", e);
      return 1;
    }
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < threads; i++) {
    pthread_join(w[i].tid, NULL);
    sum = sum * 31 + w[i].sum;
  }
  double secs = bench_now() - t0;
  pthread_barrier_destroy(&start);
  free(w);

  printf("RESULT workload=cache-thrash threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx",
         threads, objects, secs, (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
