/* SPDX-License-Identifier: MIT */
/* larson: a server whose worker threads hand their state to fresh threads ("bleeding").
 *
 * Pattern modelled: the Larson & Krishnan server benchmark ("larson"). Each of T lineages owns
 * an array of SLOTS live blocks (sizes uniform in 16..1000 bytes). The thread currently holding
 * a lineage repeatedly picks a random slot, checks and frees its block and allocates a
 * replacement. After ROUNDS such steps it creates a new thread, hands it the whole array and
 * exits, so most frees hit blocks allocated by threads that have already terminated.
 *
 * Written from the description of the pattern, not from the published code. Differences: the
 * published program runs for a fixed time and reports throughput; this one does a fixed amount
 * of work (-n steps in total, split evenly over the lineages) so wall times are comparable, the
 * initial arrays are allocated by the main thread before the clock starts, each new thread
 * joins its predecessor (so every thread is joined), and every block carries a header and a
 * trailer that are verified before it is freed.
 *
 * One op = one free + one malloc.
 *
 * usage: larson [-t THREADS] [-n STEPS] [-r ROUNDS] [-l SLOTS] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

/* ---- block check: header word at the start, its complement in the last 8 bytes ---- */
#define BLK_MIN 16
#define BLK_MAX 1000

/* Verify a block written by blk_fill; returns its header (exits on corruption). */
static uint64_t blk_check(const void *p, const char *where) {
  return wl_blk_check(p, BLK_MIN, BLK_MAX, "larson", where);
}

typedef struct lineage {
  void **slots;
  size_t nslots;
  unsigned long long rounds;    /* steps per generation */
  unsigned long long remaining; /* steps left for this lineage */
  uint64_t rng;
  uint64_t sum;
  unsigned long long generations;
  pthread_t prev; /* the thread that created the current holder */
  int has_prev;
  /* completion, read by main */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  pthread_t last;
  int idle; /* set by main: no steps, no thread */
} lineage_t;

static void *holder_main(void *arg) {
  lineage_t *L = arg;
  /* the previous holder returns right after creating us: reap it */
  if (L->has_prev) {
    int e = pthread_join(L->prev, NULL);
    if (e != 0) {
      fprintf(stderr, "larson: pthread_join failed (%d)\n", e);
      exit(1);
    }
  }
  L->generations++;
  unsigned long long n = L->rounds < L->remaining ? L->rounds : L->remaining;
  uint64_t rng = L->rng, sum = L->sum;
  void **slots = L->slots;
  size_t nslots = L->nslots;
  for (unsigned long long i = 0; i < n; i++) {
    uint64_t r = bench_rand(&rng);
    size_t j = bench_index(r, nslots);
    sum += blk_check(slots[j], "step");
    free(slots[j]);
    size_t size = BLK_MIN + (size_t)(((uint32_t)r * (uint64_t)(BLK_MAX - BLK_MIN + 1)) >> 32);
    void *p = malloc(size);
    if (p == NULL) {
      fprintf(stderr, "larson: out of memory\n");
      exit(1);
    }
    wl_blk_fill(p, size);
    slots[j] = p;
  }
  L->rng = rng;
  L->sum = sum;
  L->remaining -= n;
  if (L->remaining > 0) {
    /* bleed: hand the array to a fresh thread and exit */
    L->prev = pthread_self();
    L->has_prev = 1;
    pthread_t t;
    int e = pthread_create(&t, NULL, holder_main, L);
    if (e != 0) {
      fprintf(stderr, "larson: pthread_create failed (%d)\n", e);
      exit(1);
    }
    return NULL; /* L belongs to the new holder from here on */
  }
  pthread_mutex_lock(&L->mu);
  L->last = pthread_self();
  L->done = 1;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: larson [-t THREADS (2x CPUs, max 64)] [-n STEPS (80000000)] [-r ROUNDS per "
          "thread (20000)] [-l SLOTS per thread (1000)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  unsigned long long threads = (unsigned long long)ncpu * 2, steps = 80000000, rounds = 20000,
                     nslots = 1000, seed = 1;
  if (threads > 64) threads = 64;
  int quick = 0, opt, set_n = 0, set_r = 0;
  while ((opt = getopt(argc, argv, "t:n:r:l:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': steps = bench_arg(optarg, "steps"); set_n = 1; break;
      case 'r': rounds = bench_arg(optarg, "rounds"); set_r = 1; break;
      case 'l': nslots = bench_arg(optarg, "slots"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 1024) usage();
  if (quick) {
    if (!set_n) steps = 1000000;
    if (!set_r) rounds = 5000;
  }

  lineage_t *lin = calloc((size_t)threads, sizeof *lin);
  if (lin == NULL) {
    perror("calloc");
    return 1;
  }
  unsigned long long per = steps / threads, extra = steps % threads, total = 0;
  for (size_t i = 0; i < threads; i++) {
    lineage_t *L = &lin[i];
    L->nslots = (size_t)nslots;
    L->rounds = rounds;
    L->remaining = per + (i < extra ? 1 : 0);
    total += L->remaining;
    L->rng = seed + i;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    L->slots = malloc((size_t)nslots * sizeof *L->slots);
    if (L->slots == NULL) {
      fprintf(stderr, "larson: out of memory\n");
      return 1;
    }
    uint64_t r0 = wl_mix64(seed * 1000003u + i);
    for (size_t j = 0; j < nslots; j++) {
      uint64_t r = bench_rand(&r0);
      size_t size = BLK_MIN + bench_index(r, BLK_MAX - BLK_MIN + 1);
      void *p = malloc(size);
      if (p == NULL) {
        fprintf(stderr, "larson: out of memory\n");
        return 1;
      }
      wl_blk_fill(p, size);
      L->slots[j] = p;
    }
  }

  double t0 = bench_now();
  for (size_t i = 0; i < threads; i++) {
    if (lin[i].remaining == 0) {
      lin[i].idle = 1; /* nothing to do: no thread */
      continue;
    }
    pthread_t t;
    int e = pthread_create(&t, NULL, holder_main, &lin[i]);
    if (e != 0) {
      fprintf(stderr, "larson: pthread_create failed (%d)\n", e);
      return 1;
    }
  }
  for (size_t i = 0; i < threads; i++) {
    lineage_t *L = &lin[i];
    if (L->idle) continue;
    pthread_mutex_lock(&L->mu);
    while (!L->done) pthread_cond_wait(&L->cv, &L->mu);
    pthread_t last = L->last;
    pthread_mutex_unlock(&L->mu);
    pthread_join(last, NULL);
  }
  double secs = bench_now() - t0;

  uint64_t sum = 0;
  unsigned long long gens = 0;
  for (size_t i = 0; i < threads; i++) {
    lineage_t *L = &lin[i];
    for (size_t j = 0; j < L->nslots; j++) {
      sum += blk_check(L->slots[j], "final");
      free(L->slots[j]);
    }
    free(L->slots);
    sum += L->sum;
    gens += L->generations;
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv);
  }
  free(lin);
  (void)gens;

  printf("RESULT workload=larson threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         total, secs, (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
