/* SPDX-License-Identifier: MIT */
/* bench-fast: drives malloc and free for per-call instruction counts of the fast paths.
 *
 * bench/callgrind.sh runs it under callgrind with --toggle-collect on the allocator's malloc
 * and, in a second run, on its free, so only the instructions inside those calls are counted
 * (inclusive of what they call). N and 2N rounds are run and the difference divided by the
 * number of calls, so start-up, thread creation and exit cancel out.
 *
 *   local  SIZE N   one thread: N rounds of { BATCH mallocs of SIZE; BATCH frees (same order) }.
 *                   The blocks come from a page's free list and go back to it, so almost every
 *                   call is a fast path; the refill of an exhausted free list happens once per
 *                   round and is amortised over BATCH calls (as in any real program).
 *   remote SIZE N   two threads: in each round the main thread mallocs BATCH blocks and a second
 *                   thread frees them (cross-thread frees), handed over through a barrier.
 *
 * usage: bench-fast local|remote SIZE N
 */
#include "bench.h"
#include <pthread.h>

#define BATCH 64

static void *blocks[BATCH];
static pthread_barrier_t round_start, round_end;
static unsigned long long rounds;

static void *remote_freer(void *arg) {
  (void)arg;
  for (unsigned long long r = 0; r < rounds; r++) {
    pthread_barrier_wait(&round_start);
    for (size_t i = 0; i < BATCH; i++) BENCH_FREE(blocks[i]);
    pthread_barrier_wait(&round_end);
  }
  return NULL;
}

static void alloc_batch(size_t size, unsigned long long r) {
  for (size_t i = 0; i < BATCH; i++) {
    unsigned char *p = BENCH_MALLOC(size);
    p[0] = (unsigned char)r;
    bench_escape(p);
    blocks[i] = p;
  }
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[1], "local") != 0 && strcmp(argv[1], "remote") != 0)) {
    fprintf(stderr, "usage: bench-fast local|remote SIZE N\n");
    return 2;
  }
  const int remote = (strcmp(argv[1], "remote") == 0);
  size_t size = (size_t)bench_arg(argv[2], "SIZE");
  rounds = bench_arg(argv[3], "N");

  /* initialise the process and this thread's heap before the counted rounds */
  void *first = BENCH_MALLOC(size);
  bench_escape(first);
  BENCH_FREE(first);

  if (!remote) {
    for (unsigned long long r = 0; r < rounds; r++) {
      alloc_batch(size, r);
      for (size_t i = 0; i < BATCH; i++) BENCH_FREE(blocks[i]);
    }
  } else {
    pthread_t t;
    pthread_barrier_init(&round_start, NULL, 2);
    pthread_barrier_init(&round_end, NULL, 2);
    if (pthread_create(&t, NULL, remote_freer, NULL) != 0) return 1;
    for (unsigned long long r = 0; r < rounds; r++) {
      alloc_batch(size, r);
      pthread_barrier_wait(&round_start);
      pthread_barrier_wait(&round_end);
    }
    pthread_join(t, NULL);
    pthread_barrier_destroy(&round_start);
    pthread_barrier_destroy(&round_end);
  }
  printf("RESULT bench=fast mode=%s size=%zu batch=%d rounds=%llu", argv[1], size, BATCH, rounds);
  bench_print_origin();
  return 0;
}
