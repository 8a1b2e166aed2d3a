/* SPDX-License-Identifier: MIT */
/* thread-churn: short-lived threads whose blocks outlive them by many other threads.
 *
 * Pattern modelled: servers with per-request threads or thread pools that hand results to a
 * long-lived thread (producer/consumer queues), mimalloc-bench's "mleak" family, language
 * runtimes that start threads. Worker threads are started C at a time, N in all; each
 * allocates B blocks (sizes log-uniform in [MIN, MAX]), writes them (a tag in every 4 KiB page
 * and at the end), frees B-H of them and ends; the main thread takes the other H over and
 * checks and frees them after D more threads have ended. So the memory of ended threads holds
 * live blocks while thousands of other threads come and go, and is freed by a thread that does
 * not allocate.
 *
 * Reported besides the time: the address space (/proc/self/statm size) at its peak (sampled
 * after every batch of threads) and at the end, and the resident set at the end, both while
 * the last D threads' blocks are still live ("end") and after main freed them and paused
 * 300 ms with a little allocation activity ("final"); the launcher adds the peak resident set.
 *
 * usage: thread-churn [-n THREADS] [-c CONC] [-b BLOCKS] [-h HANDED] [-d DELAY]
 *                     [-m MIN] [-M MAX] [-q]
 *   defaults: -n 20000 -c 4 -b 6 -h 3 -d 1000 -m 16 -M 262144; -q: -n 2000 -d 100
 */
#include "workload.h"

#include <fcntl.h>
#include <unistd.h>

#define MAX_BLOCKS 16
#define MAX_CONC 16

static size_t nthreads = 20000, conc = 4, nblocks = 6, handed = 3, delay = 1000;
static size_t min_size = 16, max_size = 256 * 1024;

typedef struct blk {
  unsigned char *p;
  size_t size;
  uint64_t tag;
  size_t born;
} blk_t;

static size_t log_uniform(uint64_t *s) {
  size_t lo = min_size, scales = 1;
  while (lo * 2 <= max_size) { lo *= 2; scales++; }
  size_t a = min_size << bench_index(bench_rand(s), scales);
  if (a > max_size) a = max_size;
  size_t b = (a * 2 > max_size ? max_size : a * 2);
  return a + bench_index(bench_rand(s), b - a + 1);
}

/* the tag in every 4 KiB page (so every page is touched) and in the last 8 bytes */
static void blk_stamp(const blk_t *b) {
  for (size_t off = 0; off + 16 <= b->size; off += 4096) memcpy(b->p + off, &b->tag, 8);
  memcpy(b->p + b->size - 8, &b->tag, 8);
}

static void blk_check_free(blk_t *b) {
  bool ok = true;
  for (size_t off = 0; off + 16 <= b->size; off += 4096) ok = ok && memcmp(b->p + off, &b->tag, 8) == 0;
  if (!ok || memcmp(b->p + b->size - 8, &b->tag, 8) != 0) {
    fprintf(stderr, "CORRUPT thread-churn: block %p of %zu bytes overwritten\n", (void *)b->p, b->size);
    exit(1);
  }
  BENCH_FREE(b->p);
  b->p = NULL;
}

typedef struct job {
  pthread_t tid;
  size_t index;
  blk_t kept[MAX_BLOCKS];
} job_t;

static void *worker(void *arg) {
  job_t *job = arg;
  uint64_t s = UINT64_C(0x1234) + job->index;
  blk_t all[MAX_BLOCKS];
  for (size_t i = 0; i < nblocks; i++) {
    all[i].size = log_uniform(&s);
    all[i].tag = ((uint64_t)job->index << 8) | i;
    all[i].p = BENCH_MALLOC(all[i].size);
    if (all[i].p == NULL) {
      fprintf(stderr, "thread-churn: out of memory\n");
      exit(1);
    }
    blk_stamp(&all[i]);
  }
  for (size_t i = 0; i < nblocks; i++) {
    if (i < handed) job->kept[i] = all[i];
    else blk_check_free(&all[i]);
  }
  return NULL;
}

/* statm fields 1 (size) and 2 (resident), in bytes */
static void statm(size_t *vsz, size_t *rss) {
  char buf[128];
  unsigned long a = 0, b = 0;
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n > 0) {
      buf[n] = 0;
      if (sscanf(buf, "%lu %lu", &a, &b) != 2) a = b = 0;
    }
    close(fd);
  }
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  *vsz = a * page;
  *rss = b * page;
}

static double mib(size_t n) { return (double)n / (1024.0 * 1024.0); }

/* a pause and a little ordinary activity, which lets allocators run their delayed purges */
static void settle(void) {
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  void *ring[64] = {0};
  uint64_t s = 99;
  for (size_t i = 0; i < 4000; i++) {
    size_t k = bench_index(bench_rand(&s), 64);
    BENCH_FREE(ring[k]);
    ring[k] = BENCH_MALLOC(16 + bench_index(bench_rand(&s), 4000));
    if (ring[k] != NULL) memset(ring[k], 1, 16);
  }
  for (size_t k = 0; k < 64; k++) BENCH_FREE(ring[k]);
}

static void usage(void) {
  fprintf(stderr, "usage: thread-churn [-n THREADS] [-c CONC<=%d] [-b BLOCKS<=%d] [-h HANDED] "
                  "[-d DELAY] [-m MIN] [-M MAX] [-q]\n", MAX_CONC, MAX_BLOCKS);
  exit(2);
}

int main(int argc, char **argv) {
  int opt;
  bool quick = false, set_n = false, set_d = false;
  while ((opt = getopt(argc, argv, "n:c:b:h:d:m:M:q")) != -1) {
    switch (opt) {
      case 'n': nthreads = bench_arg(optarg, "-n"); set_n = true; break;
      case 'c': conc = bench_arg(optarg, "-c"); break;
      case 'b': nblocks = bench_arg(optarg, "-b"); break;
      case 'h': handed = (size_t)strtoull(optarg, NULL, 10); break;
      case 'd': delay = (size_t)strtoull(optarg, NULL, 10); set_d = true; break;
      case 'm': min_size = bench_arg(optarg, "-m"); break;
      case 'M': max_size = bench_arg(optarg, "-M"); break;
      case 'q': quick = true; break;
      default: usage();
    }
  }
  if (optind != argc || conc > MAX_CONC || nblocks > MAX_BLOCKS || handed > nblocks ||
      min_size < 16 || max_size < min_size) usage();
  if (quick) {
    if (!set_n) nthreads = 2000;
    if (!set_d) delay = 100;
  }
  const size_t cap = (delay + conc + 1) * handed + 1;
  blk_t *fifo = calloc(cap, sizeof *fifo);
  job_t *jobs = calloc(conc, sizeof *jobs);
  if (fifo == NULL || jobs == NULL) return 1;
  size_t head = 0, len = 0;

  size_t vsz_peak = 0, vsz, rss;
  uint64_t sum = 0;
  double t0 = bench_now();
  for (size_t t = 0; t < nthreads; t += conc) {
    const size_t n = (nthreads - t < conc ? nthreads - t : conc);
    for (size_t k = 0; k < n; k++) {
      memset(&jobs[k], 0, sizeof jobs[k]);
      jobs[k].index = t + k;
      if (pthread_create(&jobs[k].tid, NULL, worker, &jobs[k]) != 0) {
        fprintf(stderr, "thread-churn: pthread_create failed\n");
        return 1;
      }
    }
    for (size_t k = 0; k < n; k++) {
      pthread_join(jobs[k].tid, NULL);
      for (size_t i = 0; i < handed; i++) {
        jobs[k].kept[i].born = t + k;
        fifo[(head + len++) % cap] = jobs[k].kept[i];
        sum += jobs[k].kept[i].size;
      }
    }
    while (len > 0 && fifo[head].born + delay < t + n) {
      blk_check_free(&fifo[head]);
      head = (head + 1) % cap;
      len--;
    }
    statm(&vsz, &rss);
    if (vsz > vsz_peak) vsz_peak = vsz;
  }
  double secs = bench_now() - t0;
  size_t end_vsz, end_rss, final_vsz, final_rss;
  settle();
  statm(&end_vsz, &end_rss);
  while (len > 0) {
    blk_check_free(&fifo[head]);
    head = (head + 1) % cap;
    len--;
  }
  settle();
  statm(&final_vsz, &final_rss);
  free(fifo);
  free(jobs);

  printf("RESULT workload=thread-churn threads=%zu delay=%zu elapsed_s=%.6f peak_vsz_mib=%.1f "
         "end_vsz_mib=%.1f end_rss_mib=%.1f final_vsz_mib=%.1f final_rss_mib=%.1f checksum=%016llx",
         nthreads, delay, secs, mib(vsz_peak), mib(end_vsz), mib(end_rss), mib(final_vsz),
         mib(final_rss), (unsigned long long)sum);
  bench_print_origin();
  return 0;
}
