/* SPDX-License-Identifier: MIT */
/* xmalloc: asymmetric producer/consumer; one set of threads only allocates, another only frees.
 *
 * Pattern modelled: xmalloc-test (Lever & Boreham's "malloc() performance in a multithreaded
 * Linux environment", as packaged in mimalloc-bench). Half of the T threads (at least one) are
 * producers: they allocate small blocks (16..128 bytes), write them, and push them in batches
 * of BATCH pointers onto one shared mutex-protected queue. The other half are consumers: they
 * pop batches, verify and free every block, and free the batch record (which the producer
 * allocated too). So every free is a cross-thread free, and the allocating threads never get
 * their memory back locally.
 *
 * Written from the description of the pattern, not from the published code. Differences: fixed
 * work (-n blocks in total, split evenly over the producers) instead of a timed run, a bounded
 * queue (producers wait when QMAX batches are queued, so memory stays bounded when consumers are
 * slower), blocks carry a header and trailer that are verified before the free, and the sum of
 * the freed headers must equal the sum of the allocated ones.
 *
 * One op = one block (one malloc by a producer + one free by a consumer).
 *
 * usage: xmalloc [-t THREADS] [-n BLOCKS] [-b BATCH] [-s SEED] [-q]
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

/* ---- block check: header word at the start, its complement in the last 8 bytes ---- */
#define BLK_MIN 16
#define BLK_MAX 128

static uint64_t blk_check(const void *p, const char *where) {
  return wl_blk_check(p, BLK_MIN, BLK_MAX, "xmalloc", where);
}

typedef struct batch {
  struct batch *next;
  size_t n;
  void *blk[]; /* BATCH entries */
} batch_t;

#define QMAX 256 /* batches in the queue at most */

static struct {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  batch_t *head, *tail;
  size_t len;
  size_t producers_left;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL,
       0, 0};

static size_t batch_size = 128;

typedef struct role {
  pthread_t tid;
  uint64_t seed;
  unsigned long long blocks; /* producer: blocks to make; consumer: out, blocks freed */
  uint64_t sum;              /* out: sum of headers allocated / freed */
} role_t;

static void *producer_main(void *arg) {
  role_t *r = arg;
  uint64_t rng = r->seed, sum = 0;
  unsigned long long left = r->blocks;
  while (left > 0) {
    size_t n = left < batch_size ? (size_t)left : batch_size;
    batch_t *b = malloc(sizeof *b + batch_size * sizeof(void *));
    if (b == NULL) goto oom;
    b->next = NULL;
    b->n = n;
    for (size_t i = 0; i < n; i++) {
      uint64_t x = bench_rand(&rng);
      size_t size = BLK_MIN + bench_index(x, BLK_MAX - BLK_MIN + 1);
      void *p = malloc(size);
      if (p == NULL) goto oom;
      wl_blk_fill(p, size);
      sum += wl_blk_hdr(size);
      b->blk[i] = p;
    }
    left -= n;
    pthread_mutex_lock(&q.mu);
    while (q.len >= QMAX) pthread_cond_wait(&q.not_full, &q.mu);
    if (q.tail) q.tail->next = b;
    else q.head = b;
    q.tail = b;
    q.len++;
    pthread_cond_signal(&q.not_empty);
    pthread_mutex_unlock(&q.mu);
  }
  pthread_mutex_lock(&q.mu);
  if (--q.producers_left == 0) pthread_cond_broadcast(&q.not_empty);
  pthread_mutex_unlock(&q.mu);
  r->sum = sum;
  return NULL;
oom:
  fprintf(stderr, "xmalloc: out of memory\n");
  exit(1);
}

static void *consumer_main(void *arg) {
  role_t *r = arg;
  uint64_t sum = 0;
  unsigned long long freed = 0;
  for (;;) {
    pthread_mutex_lock(&q.mu);
    while (q.head == NULL && q.producers_left > 0) pthread_cond_wait(&q.not_empty, &q.mu);
    batch_t *b = q.head;
    if (b == NULL) { /* no producers left and the queue is empty */
      pthread_mutex_unlock(&q.mu);
      break;
    }
    q.head = b->next;
    if (q.head == NULL) q.tail = NULL;
    q.len--;
    pthread_cond_signal(&q.not_full);
    pthread_mutex_unlock(&q.mu);
    for (size_t i = 0; i < b->n; i++) {
      sum += blk_check(b->blk[i], "consumer");
      free(b->blk[i]);
    }
    freed += b->n;
    free(b);
  }
  r->sum = sum;
  r->blocks = freed;
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: xmalloc [-t THREADS (2x CPUs, max 64; half produce, half consume)] "
          "[-n BLOCKS (16000000)] [-b BATCH (128)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  unsigned long long threads = (unsigned long long)ncpu * 2, blocks = 16000000, seed = 1;
  if (threads > 64) threads = 64;
  int quick = 0, opt, set_n = 0;
  while ((opt = getopt(argc, argv, "t:n:b:s:qh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 'n': blocks = bench_arg(optarg, "blocks"); set_n = 1; break;
      case 'b': batch_size = (size_t)bench_arg(optarg, "batch"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc || threads > 1024 || batch_size > 65536) usage();
  if (quick && !set_n) blocks = 1000000;
  if (threads < 2) threads = 2; /* at least one producer and one consumer */

  size_t np = (size_t)(threads / 2); /* producers; the others consume */
  role_t *roles = calloc((size_t)threads, sizeof *roles);
  if (roles == NULL) {
    perror("calloc");
    return 1;
  }
  q.producers_left = np;
  unsigned long long per = blocks / np, extra = blocks % np;

  double t0 = bench_now();
  for (size_t i = 0; i < threads; i++) {
    role_t *r = &roles[i];
    int producer = (i % 2 == 0 && i / 2 < np); /* interleave the roles */
    r->seed = seed + i;
    if (producer) r->blocks = per + (i / 2 < extra ? 1 : 0);
    int e = pthread_create(&r->tid, NULL, producer ? producer_main : consumer_main, r);
    if (e != 0) {
      fprintf(stderr, "xmalloc: pthread_create failed (%d)\n", e);
      return 1;
    }
  }
  for (size_t i = 0; i < threads; i++) pthread_join(roles[i].tid, NULL);
  double secs = bench_now() - t0;

  uint64_t made = 0, freed = 0;
  unsigned long long nfreed = 0;
  for (size_t i = 0; i < threads; i++) {
    int producer = (i % 2 == 0 && i / 2 < np);
    if (producer) made += roles[i].sum;
    else {
      freed += roles[i].sum;
      nfreed += roles[i].blocks;
    }
  }
  free(roles);
  if (made != freed || nfreed != blocks) {
    fprintf(stderr, "CORRUPT xmalloc: allocated %016llx / %llu blocks, freed %016llx / %llu\n",
            (unsigned long long)made, blocks, (unsigned long long)freed, nfreed);
    return 1;
  }

  printf("RESULT workload=xmalloc threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         blocks, secs, (unsigned long long)made);
  bench_print_origin();
  return 0;
}
