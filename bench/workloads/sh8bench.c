/* SPDX-License-Identifier: MIT */
/* sh8bench: sh6bench-style batches over many size classes, with blocks moving between threads
 * (cross-thread frees).
 *
 * Models the pattern of "sh8bench" (MicroQuill's multi-threaded SmartHeap stress test): several
 * threads allocate batches sweeping many size classes, free most in reverse order, and objects
 * allocated by one thread are freed by another. Written from scratch. Each round of each thread:
 *   1. allocate a batch of 256..1279 blocks (sizes sweep 1..1000 bytes, every 50th 1..8 KiB);
 *   2. hand every third block to another thread (the target rotates over the other threads):
 *      the blocks go into a malloc'ed message pushed on the target's lock-free inbox;
 *   3. free the rest of the batch in reverse order (LIFO);
 *   4. empty its own inbox: for every message, free its blocks newest first, then the message.
 * An inbox holding more than 8192 blocks makes the sender wait (emptying its own inbox), which
 * bounds memory when threads are descheduled. At the end the threads keep emptying their
 * inboxes until every thread has finished sending.
 * Differences from the original: the hand-off mechanism (lock-free message stacks rather than
 * the original's shared structures), fixed-seed sizes and batch lengths.
 *
 * Checks: the first and last 8 bytes of every block (all of it when under 16 bytes) hold a tag
 * derived from the allocating thread, size and sequence number, verified by whoever frees it.
 * The checksum is an order-independent sum, so it does not depend on thread timing.
 *
 * ops = blocks allocated (including messages).
 * usage: sh8bench [-n ROUNDS per thread] [-t THREADS (2x CPUs)] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_BATCH 1280
#define INBOX_LIMIT 8192

typedef struct slot {
  unsigned char *p;
  uint32_t size;
  uint32_t seq;
  uint32_t owner;
  uint32_t pad;
} slot;

typedef struct msg {
  struct msg *next;
  uint64_t tag;
  uint32_t count;
  uint32_t pad;
  slot s[];
} msg;

#define MSG_MAGIC UINT64_C(0x3E55A6E3E55A6E00)

typedef struct job {
  _Atomic(msg *) inbox;
  atomic_size_t pending;
  char pad1[64];
  uint64_t rng, allocs, check, rounds, seq, sweep;
  unsigned id, nthreads;
  struct job *all;
  slot *batch;
  pthread_t th;
  char pad2[64];
} job;

static atomic_uint finished;

static void corrupt(const slot *s) {
  fprintf(stderr, "CORRUPT sh8bench: block %p size %u seq %u thread %u\n", (void *)s->p, s->size,
          s->seq, s->owner);
  exit(1);
}

static uint64_t tag_of(const slot *s) {
  return ((UINT64_C(0x5A8C0DE000000000) | s->seq) ^ ((uint64_t)s->size << 40)) +
         ((uint64_t)s->owner << 33);
}

static void fill(const slot *s) { wl_stamp(s->p, s->size, tag_of(s)); }

static void verify(const slot *s) {
  if (!wl_stamp_ok(s->p, s->size, tag_of(s))) corrupt(s);
}

static void *xmalloc(job *j, size_t n) {
  void *p = malloc(n);
  if (p == NULL) {
    fprintf(stderr, "sh8bench: out of memory\n");
    exit(1);
  }
  j->allocs++;
  return p;
}

static uint32_t next_size(job *j) {
  uint64_t k = j->sweep++;
  if (k % 50 == 49) return 1001 + (uint32_t)((k * 131) % 7192);
  return 1 + (uint32_t)((k * 37) % 1000);
}

static void take(job *j, slot *s) {
  s->size = next_size(j);
  s->seq = (uint32_t)j->seq++;
  s->owner = j->id;
  s->p = xmalloc(j, s->size);
  fill(s);
}

static void give(job *j, slot *s) {
  verify(s);
  /* order-independent: the same sum whichever thread frees the block, in whatever order */
  uint64_t h = tag_of(s) * UINT64_C(0x9E3779B97F4A7C15);
  j->check += h ^ (h >> 29);
  free(s->p);
  s->p = NULL;
}

static void drain(job *j) {
  msg *m = atomic_exchange_explicit(&j->inbox, NULL, memory_order_acquire);
  while (m != NULL) {
    msg *next = m->next;
    if (m->tag != (MSG_MAGIC ^ m->count)) {
      fprintf(stderr, "CORRUPT sh8bench: message %p header\n", (void *)m);
      exit(1);
    }
    for (uint32_t i = m->count; i-- > 0;) give(j, &m->s[i]);
    atomic_fetch_sub_explicit(&j->pending, m->count, memory_order_relaxed);
    free(m);
    m = next;
  }
}

static void post(job *j, job *to, msg *m) {
  while (atomic_load_explicit(&to->pending, memory_order_relaxed) > INBOX_LIMIT) {
    drain(j);
    sched_yield();
  }
  atomic_fetch_add_explicit(&to->pending, m->count, memory_order_relaxed);
  msg *head = atomic_load_explicit(&to->inbox, memory_order_relaxed);
  do {
    m->next = head;
  } while (!atomic_compare_exchange_weak_explicit(&to->inbox, &head, m, memory_order_release,
                                                  memory_order_relaxed));
}

static void *run(void *arg) {
  job *j = arg;
  slot *b = j->batch;
  for (uint64_t r = 0; r < j->rounds; r++) {
    unsigned n = 256 + (unsigned)bench_index(bench_rand(&j->rng), 1024);
    for (unsigned i = 0; i < n; i++) take(j, &b[i]);
    /* every third block goes to another thread */
    unsigned out = n / 3;
    msg *m = xmalloc(j, sizeof(msg) + sizeof(slot) * out);
    m->count = out;
    m->tag = MSG_MAGIC ^ out;
    unsigned keep = 0;
    for (unsigned i = 0, k = 0; i < n; i++) {
      if (i % 3 == 2 && k < out) m->s[k++] = b[i];
      else b[keep++] = b[i];
    }
    unsigned target = j->id;
    if (j->nthreads > 1) target = (j->id + 1 + (unsigned)(r % (j->nthreads - 1))) % j->nthreads;
    post(j, &j->all[target], m);
    while (keep > 0) give(j, &b[--keep]);
    drain(j);
  }
  /* keep receiving until every thread has sent everything */
  atomic_fetch_add_explicit(&finished, 1, memory_order_release);
  while (atomic_load_explicit(&finished, memory_order_acquire) < j->nthreads) {
    drain(j);
    sched_yield();
  }
  drain(j);
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: sh8bench [-n ROUNDS per thread (6000)] [-t THREADS (2x CPUs)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  unsigned long long rounds = 6000, threads = 2 * (unsigned long long)cpus, seed = 1;
  if (threads > 64) threads = 64;
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
  if (quick && !nset) rounds = 100;

  job *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (unsigned long long i = 0; i < threads; i++) {
    atomic_init(&jobs[i].inbox, NULL);
    atomic_init(&jobs[i].pending, 0);
    jobs[i].rng = seed + i;
    jobs[i].rounds = rounds;
    jobs[i].sweep = (seed + i) * 7919;
    jobs[i].id = (unsigned)i;
    jobs[i].nthreads = (unsigned)threads;
    jobs[i].all = jobs;
    jobs[i].batch = calloc(MAX_BATCH, sizeof(slot));
    if (jobs[i].batch == NULL) return 1;
  }
  atomic_init(&finished, 0);
  double t0 = bench_now();
  for (unsigned long long i = 0; i < threads; i++)
    if (pthread_create(&jobs[i].th, NULL, run, &jobs[i]) != 0) {
      fprintf(stderr, "sh8bench: pthread_create failed\n");
      return 1;
    }
  for (unsigned long long i = 0; i < threads; i++) pthread_join(jobs[i].th, NULL);
  double secs = bench_now() - t0;
  uint64_t ops = 0, check = 0;
  for (unsigned long long i = 0; i < threads; i++) {
    ops += jobs[i].allocs;
    check += jobs[i].check;
    free(jobs[i].batch);
  }
  free(jobs);
  printf("RESULT workload=sh8bench threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         (unsigned long long)ops, secs, (unsigned long long)check);
  bench_print_origin();
  return 0;
}
