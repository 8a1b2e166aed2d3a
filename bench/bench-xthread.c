/* SPDX-License-Identifier: MIT */
/* bench-xthread: one thread allocates, another frees (the cross-thread free path).
 *
 * Model: a producer/consumer pipeline (e.g. a network thread handing buffers to a worker).
 * The producer allocates blocks of mixed small sizes (distribution in bench.h), writes the first
 * word and pushes the pointer into a bounded lock-free single-producer/single-consumer ring; the
 * consumer pops each pointer, reads the first word and frees the block, keeping at least half
 * the ring (512 blocks by default) in flight. Every free is therefore a free by a thread that
 * does not own the block. One op = one malloc (producer) + one free (consumer);
 * ops/s = COUNT / wall time of the timed phase, both threads running.
 *
 * Both threads first run an untimed warm-up of COUNT/8 blocks, then meet at a barrier.
 * When the process may run on two or more CPUs, the producer is pinned to the first and the
 * consumer to the second (-u: unpinned), so every run measures a cross-core hand-off; left to
 * the scheduler, both threads may share one core for a while, which measures something else.
 *
 * -b (both ways): the pattern of two pipeline stages that hand work to each other. Two rings,
 * one per direction; each thread allocates into its own ring and frees what the other thread
 * allocated from the other ring, interleaved one block at a time (each side again keeps at
 * least half a ring in flight). One op = one malloc + one free on each thread; ops/s =
 * COUNT / wall time, as above.
 *
 * usage: bench-xthread [-n COUNT] [-r RING] [-s SEED] [-u] [-b]
 */
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define BATCH 64 /* publish the ring index every BATCH items (or before waiting) */

typedef struct ring_s {
  _Alignas(64) _Atomic size_t head; /* next slot the producer fills; written by producer only */
  _Alignas(64) _Atomic size_t tail; /* next slot the consumer empties; written by consumer only */
  _Alignas(64) void **slots;        /* capacity = mask + 1, a power of two >= 2*BATCH */
  size_t mask;
  size_t lag; /* minimum number of blocks in flight before the consumer frees; < capacity - BATCH */
  unsigned long long warmup, count;
  uint64_t seed;
  uint64_t check; /* consumer's checksum */
  pthread_barrier_t start;
  int cpu[2]; /* CPUs for producer and consumer, or -1 for unpinned */
  /* timed phase, taken by the worker threads themselves: main may not even get a CPU while both
     workers run, so its own clock readings would be late */
  double t_start[2], t_end[2];
} ring_t;

static void pin_self(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    fprintf(stderr, "warning: cannot pin a thread to CPU %d\n", cpu);
}

/* The first two CPUs this process may use, or -1 -1 if it may use fewer than two. */
static void pick_cpus(int cpu[2]) {
  cpu_set_t set;
  int found = 0;
  cpu[0] = cpu[1] = -1;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
    if (CPU_ISSET(c, &set)) cpu[found++] = c;
  if (found < 2) cpu[0] = cpu[1] = -1;
}

static inline void cpu_relax(unsigned *spins) {
  if (++*spins < 1000) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    *spins = 0;
    sched_yield(); /* more threads than cores: let the other side run */
  }
}

static void produce(ring_t *q, const uint32_t *sizes, uint64_t *rng, unsigned long long n) {
  size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  size_t tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
  for (unsigned long long i = 0; i < n; i++) {
    uint64_t r = bench_rand(rng);
    uint64_t *p = BENCH_MALLOC(sizes[r & (BENCH_SIZE_TABLE - 1)]);
    if (p == NULL) { fprintf(stderr, "out of memory\n"); exit(1); }
    *p = r; /* touch the first word */
    if (head - tail_seen > q->mask) { /* ring looks full */
      atomic_store_explicit(&q->head, head, memory_order_release);
      unsigned spins = 0;
      while (head - (tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire)) > q->mask)
        cpu_relax(&spins);
    }
    q->slots[head & q->mask] = p;
    head++;
    if ((head & (BATCH - 1)) == 0) atomic_store_explicit(&q->head, head, memory_order_release);
  }
  atomic_store_explicit(&q->head, head, memory_order_release);
}

/* The consumer frees a block only once more than q->lag newer blocks are in the ring (or the
   producer is done), so every block is freed between lag and capacity allocations after it was
   made, whichever side is faster. Without this floor the hand-off distance depends on which
   thread happens to be the bottleneck (ring empty: blocks are freed right after allocation;
   ring full: a ring's length later), and so would the cache behaviour being measured. */
static void consume(ring_t *q, unsigned long long n) {
  size_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
  size_t end = tail + (size_t)n;
  size_t head_seen = atomic_load_explicit(&q->head, memory_order_acquire);
  uint64_t check = 0;
  for (unsigned long long i = 0; i < n; i++) {
    if (head_seen - tail <= q->lag && head_seen != end) { /* not enough in flight yet */
      atomic_store_explicit(&q->tail, tail, memory_order_release);
      unsigned spins = 0;
      for (;;) {
        head_seen = atomic_load_explicit(&q->head, memory_order_acquire);
        if (head_seen - tail > q->lag || head_seen == end) break;
        cpu_relax(&spins);
      }
    }
    uint64_t *p = q->slots[tail & q->mask];
    tail++;
    if ((tail & (BATCH - 1)) == 0) atomic_store_explicit(&q->tail, tail, memory_order_release);
    check += *p;
    BENCH_FREE(p);
  }
  atomic_store_explicit(&q->tail, tail, memory_order_release);
  q->check += check;
}

/* -b: one side of the two-way hand-off; produces into `out`, consumes from `in`, never blocking
   on one ring while the other has work (two threads each waiting for the other would deadlock) */
typedef struct side_s {
  ring_t *out, *in;
  pthread_barrier_t *start; /* both sides meet at ring 0's barrier */
  int cpu, index;
} side_t;

static void both_run(side_t *s, const uint32_t *sizes, uint64_t *rng, unsigned long long n) {
  ring_t *out = s->out, *in = s->in;
  size_t head = atomic_load_explicit(&out->head, memory_order_relaxed);
  size_t tail = atomic_load_explicit(&in->tail, memory_order_relaxed);
  const size_t head_end = head + (size_t)n, tail_end = tail + (size_t)n;
  size_t tail_seen = atomic_load_explicit(&out->tail, memory_order_acquire);
  size_t head_seen = atomic_load_explicit(&in->head, memory_order_acquire);
  uint64_t check = 0;
  unsigned spins = 0;
  while (head != head_end || tail != tail_end) {
    bool progress = false;
    if (head != head_end) {
      if (head - tail_seen > out->mask) tail_seen = atomic_load_explicit(&out->tail, memory_order_acquire);
      if (head - tail_seen <= out->mask) {
        uint64_t r = bench_rand(rng);
        uint64_t *p = BENCH_MALLOC(sizes[r & (BENCH_SIZE_TABLE - 1)]);
        if (p == NULL) { fprintf(stderr, "out of memory\n"); exit(1); }
        *p = r;
        out->slots[head & out->mask] = p;
        head++;
        if ((head & (BATCH - 1)) == 0 || head == head_end) atomic_store_explicit(&out->head, head, memory_order_release);
        progress = true;
      }
    }
    if (tail != tail_end) {
      if (head_seen - tail <= in->lag && head_seen != tail_end) head_seen = atomic_load_explicit(&in->head, memory_order_acquire);
      if (head_seen != tail && (head_seen - tail > in->lag || head_seen == tail_end)) {
        uint64_t *p = in->slots[tail & in->mask];
        tail++;
        if ((tail & (BATCH - 1)) == 0 || tail == tail_end) atomic_store_explicit(&in->tail, tail, memory_order_release);
        check += *p;
        BENCH_FREE(p);
        progress = true;
      }
    }
    if (progress) spins = 0;
    else {
      atomic_store_explicit(&out->head, head, memory_order_release);
      atomic_store_explicit(&in->tail, tail, memory_order_release);
      cpu_relax(&spins);
    }
  }
  atomic_store_explicit(&out->head, head, memory_order_release);
  atomic_store_explicit(&in->tail, tail, memory_order_release);
  in->check += check;
}

static void *both_main(void *arg) {
  side_t *s = arg;
  pin_self(s->cpu);
  static uint32_t sizes[2][BENCH_SIZE_TABLE];
  bench_size_table_init(sizes[s->index], s->out->seed);   /* the same size mix both ways */
  uint64_t rng = s->out->seed + 7919 * (uint64_t)s->index;
  both_run(s, sizes[s->index], &rng, s->out->warmup);
  pthread_barrier_wait(s->start);
  s->out->t_start[0] = bench_now();
  both_run(s, sizes[s->index], &rng, s->out->count);
  s->out->t_end[0] = bench_now();
  return NULL;
}

static void *producer_main(void *arg) {
  ring_t *q = arg;
  pin_self(q->cpu[0]);
  static uint32_t sizes[BENCH_SIZE_TABLE];
  bench_size_table_init(sizes, q->seed);
  uint64_t rng = q->seed;
  produce(q, sizes, &rng, q->warmup);
  pthread_barrier_wait(&q->start);
  q->t_start[0] = bench_now();
  produce(q, sizes, &rng, q->count);
  q->t_end[0] = bench_now();
  return NULL;
}

static void *consumer_main(void *arg) {
  ring_t *q = arg;
  pin_self(q->cpu[1]);
  consume(q, q->warmup);
  pthread_barrier_wait(&q->start);
  q->t_start[1] = bench_now();
  consume(q, q->count);
  q->t_end[1] = bench_now();
  return NULL;
}

/* Cross-core latency probe: one-way time of a cache-line hand-off between the two threads'
   CPUs, measured before the benchmark. On virtual machines it changes with where the hypervisor
   places the virtual CPUs (one VM showed ~50 ns at one time, ~190 ns at another), and this
   benchmark's absolute result moves with it; bench/bench.py micro prints the range seen. */
#define PROBE_ROUNDS 20000
typedef struct probe_s {
  _Alignas(64) _Atomic long flag;
  int cpu;
} probe_t;

static void *probe_echo(void *arg) {
  probe_t *pr = arg;
  pin_self(pr->cpu);
  for (long i = 1; i < 2 * PROBE_ROUNDS; i += 2) {
    while (atomic_load_explicit(&pr->flag, memory_order_acquire) != i) {}
    atomic_store_explicit(&pr->flag, i + 1, memory_order_release);
  }
  return NULL;
}

static void *probe_main(void *arg) {
  probe_t *pr = arg;
  pin_self(pr[0].cpu);
  double t0 = bench_now();
  for (long i = 0; i < 2 * PROBE_ROUNDS; i += 2) {
    while (atomic_load_explicit(&pr[1].flag, memory_order_acquire) != i) {}
    atomic_store_explicit(&pr[1].flag, i + 1, memory_order_release);
  }
  while (atomic_load_explicit(&pr[1].flag, memory_order_acquire) != 2 * PROBE_ROUNDS) {}
  pr[0].flag = (long)((bench_now() - t0) * 1e9 / (2.0 * PROBE_ROUNDS)); /* result in ns */
  return NULL;
}

/* one-way hand-off latency in ns between cpu[0] and cpu[1], or -1 if not pinned */
static long probe_latency(const int cpu[2]) {
  static probe_t pr[2];
  pthread_t a, b;
  if (cpu[0] < 0) return -1;
  pr[0].cpu = cpu[0];
  pr[1].cpu = cpu[1];
  atomic_store(&pr[1].flag, 0);
  if (pthread_create(&b, NULL, probe_echo, &pr[1]) != 0) return -1;
  if (pthread_create(&a, NULL, probe_main, pr) != 0) exit(1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  return atomic_load(&pr[0].flag);
}

static void usage(void) {
  fprintf(stderr, "usage: bench-xthread [-n COUNT (5000000)] [-r RING (1024)] [-s SEED (1)] "
                  "[-u (unpinned)] [-b (both ways)]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long count = 5000000, ring = 1024, seed = 1;
  int opt, pinned = 1, both = 0;
  while ((opt = getopt(argc, argv, "n:r:s:ubh")) != -1) {
    switch (opt) {
      case 'n': count = bench_arg(optarg, "count"); break;
      case 'r': ring = bench_arg(optarg, "ring"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'u': pinned = 0; break;
      case 'b': both = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  size_t cap = 2 * BATCH;
  while (cap < ring) cap *= 2;

  static ring_t rings[2]; /* static: the rings' own memory is not part of the measurement */
  ring_t *const q = &rings[0];
  int cpu[2] = { -1, -1 };
  if (pinned) pick_cpus(cpu);
  long xcore_ns = probe_latency(cpu);
  for (int i = 0; i < 1 + both; i++) {
    ring_t *r = &rings[i];
    r->slots = calloc(cap, sizeof *r->slots);
    if (r->slots == NULL) { perror("calloc"); return 1; }
    r->mask = cap - 1;
    r->lag = cap / 2;
    r->warmup = count / 8;
    r->count = count;
    r->seed = seed;
    r->cpu[0] = cpu[i];
    r->cpu[1] = cpu[1 - i];
  }
  pthread_barrier_init(&q->start, NULL, 3);
  static side_t sides[2];
  if (both) {
    for (int i = 0; i < 2; i++) {
      sides[i].out = &rings[i];
      sides[i].in = &rings[1 - i];
      sides[i].start = &q->start;
      sides[i].cpu = cpu[i];
      sides[i].index = i;
    }
  }

  pthread_t t0h, t1h;
  int err;
  if (both) {
    err = pthread_create(&t0h, NULL, both_main, &sides[0]) != 0 ||
          pthread_create(&t1h, NULL, both_main, &sides[1]) != 0;
  } else {
    err = pthread_create(&t1h, NULL, consumer_main, q) != 0 ||
          pthread_create(&t0h, NULL, producer_main, q) != 0;
  }
  if (err) {
    fprintf(stderr, "pthread_create failed\n");
    return 1;
  }
  pthread_barrier_wait(&q->start); /* both threads are warmed up and the ring is empty */
  pthread_join(t0h, NULL);
  pthread_join(t1h, NULL);
  double t0, t1;
  if (both) {
    t0 = rings[0].t_start[0] < rings[1].t_start[0] ? rings[0].t_start[0] : rings[1].t_start[0];
    t1 = rings[0].t_end[0] > rings[1].t_end[0] ? rings[0].t_end[0] : rings[1].t_end[0];
  } else {
    t0 = q->t_start[0] < q->t_start[1] ? q->t_start[0] : q->t_start[1];
    t1 = q->t_end[0] > q->t_end[1] ? q->t_end[0] : q->t_end[1];
  }
  double secs = t1 - t0;
  pthread_barrier_destroy(&q->start);
  const uint64_t check = rings[0].check + rings[1].check;
  for (int i = 0; i < 1 + both; i++) free(rings[i].slots);

  printf("RESULT bench=%s ops=%llu ring=%zu cpus=%d,%d xcore_ns=%ld seconds=%.6f "
         "ops_per_sec=%.0f check=%llu", both ? "xthread-both" : "xthread", count, cap, cpu[0], cpu[1], xcore_ns, secs,
         (double)count / secs, (unsigned long long)(check & 0xffff));
  bench_print_origin();
  return 0;
}
