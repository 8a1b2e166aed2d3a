/* SPDX-License-Identifier: MIT */
/* rptest: a realistic mixed-size multi-threaded working set with cross-thread handoff.
 *
 * Pattern modelled: rpmalloc's benchmark (rptest): every thread keeps a working set of blocks
 * whose sizes are weighted to small ones but with a tail to large, and runs allocate/free loops
 * over it; part of the blocks are released by another thread. Here each thread owns SLOTS slots
 * and does OPS/T steps: pick a random slot; if it holds a block, either free it (1 in 8 of those
 * frees is instead handed to the next thread, which frees it) and leave the slot empty (1 step in
 * 4) or free it and put a new block there (3 in 4). Every new block is written: a header, a
 * trailer, the first 64 bytes and one word per 4 KiB page. Sizes: 55% 16..128 B, 30% ..1 KiB,
 * 12% ..8 KiB, 2.9% ..64 KiB, 0.1% 64..512 KiB. Handed-off blocks travel in batches of 64 through
 * a mutex-protected inbox per thread; a thread empties its inbox every 128 steps, and keeps
 * emptying it after its own work until every thread has finished.
 *
 * Written from the description of the pattern, not from the published code. Differences: fixed
 * work instead of the published loop/iteration/cycle parameters, a simpler step structure
 * (random replacement rather than ordered allocate-all/free-all cycles), one size distribution,
 * and verification of every block before its free.
 *
 * One op = one malloc (every block is freed exactly once).
 *
 * usage: rptest [-t THREADS] [-n OPS] [-l SLOTS] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

/* ---- block check: header word at the start, its complement in the last 8 bytes ---- */
#define BLK_MIN 16
#define BLK_MAX (512u << 10)

/* the header and trailer, the first bytes, and the header again every 4 KiB (touches every
   page) */
static inline void blk_fill(void *p, size_t size) {
  wl_blk_fill(p, size);
  const uint64_t h = wl_blk_hdr(size);
  memset((char *)p + 8, (int)(h >> 56), (size < 80 ? size : 80) - 16); /* touch the start */
  for (size_t off = 4096; off + 16 <= size; off += 4096) memcpy((char *)p + off, &h, 8);
}
static uint64_t blk_check(const void *p, const char *where) {
  return wl_blk_check(p, BLK_MIN, BLK_MAX, "rptest", where);
}

#define HANDOFF_BATCH 64
#define DRAIN_EVERY 128

typedef struct handoff {
  struct handoff *next;
  size_t n;
  void *blk[HANDOFF_BATCH];
} handoff_t;

typedef struct thread_state {
  pthread_t tid;
  size_t index;
  uint64_t seed;
  unsigned long long steps;
  unsigned long long allocs; /* out */
  uint64_t sum;              /* out: sum of headers allocated */
  uint64_t freed_sum;        /* out: sum of headers freed by this thread */
  /* inbox: batches handed over by the previous thread */
  pthread_mutex_t mu;
  handoff_t *inbox;
} thread_state_t;

static thread_state_t *ts;
static size_t nthreads, nslots;
static atomic_size_t finished;

static size_t draw_size(uint64_t r) {
  uint64_t band = bench_index(r, 1000);
  uint64_t lo = (uint32_t)r;
  if (band < 550) return 16 + ((lo * (128 - 16 + 1)) >> 32);
  if (band < 850) return 129 + ((lo * (1024 - 129 + 1)) >> 32);
  if (band < 970) return 1025 + ((lo * (8192 - 1025 + 1)) >> 32);
  if (band < 999) return 8193 + ((lo * (65536 - 8193 + 1)) >> 32);
  return 65537 + ((lo * (BLK_MAX - 65537 + 1)) >> 32);
}

static uint64_t drain(thread_state_t *self) {
  pthread_mutex_lock(&self->mu);
  handoff_t *h = self->inbox;
  self->inbox = NULL;
  pthread_mutex_unlock(&self->mu);
  uint64_t sum = 0;
  while (h != NULL) {
    handoff_t *next = h->next;
    for (size_t i = 0; i < h->n; i++) {
      sum += blk_check(h->blk[i], "handed over");
      free(h->blk[i]);
    }
    free(h);
    h = next;
  }
  return sum;
}

static void handoff_send(thread_state_t *to, handoff_t *h) {
  pthread_mutex_lock(&to->mu);
  h->next = to->inbox;
  to->inbox = h;
  pthread_mutex_unlock(&to->mu);
}

static handoff_t *new_handoff(void) {
  handoff_t *h = malloc(sizeof *h);
  if (h == NULL) {
    fprintf(stderr, "rptest: out of memory\n");
    exit(1);
  }
  h->next = NULL;
  h->n = 0;
  return h;
}

static void *thread_main(void *arg) {
  thread_state_t *self = arg;
  thread_state_t *next = &ts[(self->index + 1) % nthreads];
  void **slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) {
    fprintf(stderr, "rptest: out of memory\n");
    exit(1);
  }
  uint64_t rng = self->seed, sum = 0, freed = 0;
  unsigned long long allocs = 0;
  handoff_t *out = new_handoff();
  for (unsigned long long i = 0; i < self->steps; i++) {
    if (i % DRAIN_EVERY == DRAIN_EVERY - 1) freed += drain(self);
    uint64_t r = bench_rand(&rng);
    size_t j = bench_index(r, nslots);
    void *old = slots[j];
    if (old != NULL) {
      if ((r & 7) == 0) { /* hand this one to the next thread */
        out->blk[out->n++] = old;
        if (out->n == HANDOFF_BATCH) {
          handoff_send(next, out);
          out = new_handoff();
        }
      } else {
        freed += blk_check(old, "own");
        free(old);
      }
      slots[j] = NULL;
      if ((r & 0x18) == 0) continue; /* 1 in 4: leave the slot empty */
    }
    size_t size = draw_size(bench_rand(&rng));
    void *p = malloc(size);
    if (p == NULL) {
      fprintf(stderr, "rptest: out of memory\n");
      exit(1);
    }
    blk_fill(p, size);
    sum += wl_blk_hdr(size);
    allocs++;
    slots[j] = p;
  }
  /* tear down the working set (these frees count as the thread's own work) */
  for (size_t j = 0; j < nslots; j++) {
    if (slots[j] == NULL) continue;
    freed += blk_check(slots[j], "teardown");
    free(slots[j]);
  }
  free(slots);
  if (out->n > 0) handoff_send(next, out);
  else free(out);
  /* keep serving the inbox until everybody has stopped sending */
  atomic_fetch_add_explicit(&finished, 1, memory_order_acq_rel);
  while (atomic_load_explicit(&finished, memory_order_acquire) < nthreads) {
    freed += drain(self);
    sched_yield();
  }
  freed += drain(self);
  self->allocs = allocs;
  self->sum = sum;
  self->freed_sum = freed;
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: rptest [-t THREADS (2x CPUs, max 64)] [-n OPS (16000000)] [-l SLOTS per thread "
          "(4096)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  unsigned long long threads = (unsigned long long)ncpu * 2, ops = 16000000, slots = 4096, seed = 1;
  if (threads > 64) threads = 64;
  int quick = 0, opt, set_n = 0, set_l = 0;
  while ((opt = getopt(argc, argv, "t:n:l:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': ops = bench_arg(optarg, "ops"); set_n = 1; break;
      case 'l': slots = bench_arg(optarg, "slots"); set_l = 1; break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 1024) usage();
  if (quick) {
    if (!set_n) ops = 200000;
    if (!set_l) slots = 1024;
  }
  nthreads = (size_t)threads;
  nslots = (size_t)slots;
  ts = calloc(nthreads, sizeof *ts);
  if (ts == NULL) {
    perror("calloc");
    return 1;
  }
  atomic_init(&finished, 0);
  unsigned long long per = ops / threads, extra = ops % threads;

  double t0 = bench_now();
  for (size_t i = 0; i < nthreads; i++) {
    ts[i].index = i;
    ts[i].seed = seed + i;
    ts[i].steps = per + (i < extra ? 1 : 0);
    pthread_mutex_init(&ts[i].mu, NULL);
  }
  for (size_t i = 0; i < nthreads; i++) {
    int e = pthread_create(&ts[i].tid, NULL, thread_main, &ts[i]);
    if (e != 0) {
      fprintf(stderr, "rptest: pthread_create failed (%d)\n", e);
      return 1;
    }
  }
  for (size_t i = 0; i < nthreads; i++) pthread_join(ts[i].tid, NULL);
  double secs = bench_now() - t0;

  unsigned long long allocs = 0;
  uint64_t sum = 0, freed = 0;
  for (size_t i = 0; i < nthreads; i++) {
    allocs += ts[i].allocs;
    sum += ts[i].sum;
    freed += ts[i].freed_sum;
    if (ts[i].inbox != NULL) freed += drain(&ts[i]); /* cannot happen; be safe */
    pthread_mutex_destroy(&ts[i].mu);
  }
  free(ts);
  if (sum != freed) {
    fprintf(stderr, "CORRUPT rptest: allocated headers %016llx != freed %016llx\n",
            (unsigned long long)sum, (unsigned long long)freed);
    return 1;
  }

  printf("RESULT workload=rptest threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         allocs, secs, (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
