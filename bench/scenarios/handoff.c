/* SPDX-License-Identifier: MIT */
/* handoff: two threads, each freeing what the other allocated, through a ring of 4,096 blocks
 * of 16..496 B each way (two pipeline stages handing each other work).
 *
 * Each thread allocates blocks of 16..496 B (written, with their size) into a ring
 * of 4,096 slots that the other thread empties, checking and freeing the blocks; a lock-free
 * single-producer/single-consumer ring each way. Each thread allocates `-n` blocks (default
 * 10M) and frees as many; a full ring or an empty one is waited on by spinning.
 *
 * Reported: ops_per_s, mallocs plus frees of both threads per second; elapsed_s, the time of
 * the exchange (issue 52's target: within 1.05x jemalloc's).
 *
 *   handoff [-q] [-n BLOCKS]     -q: 200K blocks per thread */
#include "scenario.h"
#include <sched.h>
#include <stdatomic.h>

#define PROG "handoff"
#define RING 4096 /* a power of two */

typedef struct ring_s {
  _Alignas(64) _Atomic size_t head; /* written by the consumer */
  _Alignas(64) _Atomic size_t tail; /* written by the producer */
  _Alignas(64) void *slot[RING];
} ring_t;

static ring_t g_ring[2];
static size_t g_n = 10000000;

static void *stage(void *arg) {
  int me = (int)(intptr_t)arg;
  ring_t *out = &g_ring[me], *in = &g_ring[1 - me];
  uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(me + 1);
  size_t made = 0, freed = 0, spins = 0;
  while (made < g_n || freed < g_n) {
    bool progress = false;
    size_t tail = atomic_load_explicit(&out->tail, memory_order_relaxed);
    if (made < g_n && tail - atomic_load_explicit(&out->head, memory_order_acquire) < RING) {
      size_t size = 16 + bench_index(bench_rand(&rng), 481); /* 16..496 */
      unsigned char *p = malloc(size);
      if (p == NULL) exit(1);
      memcpy(p, &size, sizeof size);
      p[size - 1] = (unsigned char)size;
      out->slot[tail % RING] = p;
      atomic_store_explicit(&out->tail, tail + 1, memory_order_release);
      made++;
      progress = true;
    }
    size_t head = atomic_load_explicit(&in->head, memory_order_relaxed);
    if (freed < g_n && head != atomic_load_explicit(&in->tail, memory_order_acquire)) {
      unsigned char *p = in->slot[head % RING];
      atomic_store_explicit(&in->head, head + 1, memory_order_release);
      size_t size;
      memcpy(&size, p, sizeof size);
      if (size < 16 || size > 496 || p[size - 1] != (unsigned char)size) {
        fprintf(stderr, "CORRUPT %s: block %p changed\n", PROG, (void *)p);
        exit(1);
      }
      free(p);
      freed++;
      progress = true;
    }
    if (!progress && ++spins % 64 == 0) sched_yield(); /* 2 threads may share one CPU */
  }
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-q") == 0) {
      g_n = 200000;
    } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      g_n = (size_t)bench_arg(argv[++i], "blocks");
    } else {
      fprintf(stderr, "usage: %s [-q] [-n BLOCKS]\n", PROG);
      return 2;
    }
  }
  double t0 = bench_now();
  pthread_t th;
  if (pthread_create(&th, NULL, stage, (void *)(intptr_t)1) != 0) {
    fprintf(stderr, "%s: pthread_create failed\n", PROG);
    return 1;
  }
  stage((void *)(intptr_t)0);
  pthread_join(th, NULL);
  double elapsed = bench_now() - t0;
  printf("RESULT prog=%s blocks=%zu ring=%d ops_per_s=%.0f elapsed_s=%.3f rss_mib=%.1f", PROG,
         g_n, RING, 4.0 * (double)g_n / elapsed, elapsed, sc_rss_mib());
  bench_print_origin();
  return 0;
}
