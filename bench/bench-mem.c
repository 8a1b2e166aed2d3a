/* SPDX-License-Identifier: MIT */
/* bench-mem: memory use over time of a long-running server with load phases.
 *
 * Model: the "server under varying load" pattern used in the allocator literature to study
 * resident memory over time rather than throughput: jemalloc's decay-based purging and
 * mimalloc's delayed purging (purge_delay) were designed for services whose load rises to a
 * peak, falls back to a trough and then sits idle, where an allocator that keeps its freed pages
 * inflates the RSS of an idle process (e.g. the RSS-over-time plots of the mimalloc technical
 * report and of jemalloc's decay design notes). There is no standard program for it, so this is
 * our own rendition: only malloc/free/realloc from the C library are called, so the same binary
 * runs under any allocator (LD_PRELOAD), and a fixed-seed splitmix64 generator per thread makes
 * every allocator see the same sequence of requests.
 *
 * T worker threads (-t, default 4) run P phases (-p, default 12). Each phase has a target
 * working set, a fraction of the peak (-m MiB, default 320) taken from a fixed table that goes up
 * and down (30%, 65%, 100%, 45%, 3%, 55%, 90%, 20%, 1%, 75%, 35%, 2%, then repeating), split
 * evenly between the threads. In each phase:
 *
 *   1. work: every thread opens or closes sessions until its live bytes reach its share of the
 *      target. A session (a client connection with its state) is allocated all at once: 16..256
 *      small objects (16..1024 B, most of them under 128 B), 0..3 medium ones (1..64 KiB,
 *      log-uniform) and, one time in 80, a large buffer (256 KiB..4 MiB, log-uniform): about
 *      40% / 33% / 25% of the bytes, nearly all objects small. Shrinking closes sessions among
 *      the newest quarter (connection lifetimes are heavy-tailed: when the load falls, recent
 *      connections go first and old ones survive). Interleaved with that, and after it, the
 *      thread serves requests, half as many per phase as session objects are live: a request
 *      allocates 1..8 small temporaries, one time in 4 a medium one and one time in 500 a large
 *      buffer, and releases them when it completes, 64 requests later (a FIFO of requests in
 *      flight; all complete at the end of the phase); one request in 16 also replaces an object
 *      of a random session (free + malloc of the same class, or one time in 16 a realloc), so
 *      old sessions get scattered as the heap ages. One block in 8 that a thread lets go is
 *      handed to the next thread instead (a lock-free multi-producer inbox per thread, pushed
 *      in batches of 32), which frees it: cross-thread frees, as when a worker releases a
 *      buffer that a network thread allocated. Every new or grown byte range is touched (one
 *      write per 4 KiB, plus a 16-byte header that is checked before the free) so the RSS
 *      reflects it.
 *   2. all threads meet, empty their inboxes and meet again;
 *   3. idle gap: 50..200 ms depending on the phase (table below), in 10 ms ticks; at each tick
 *      every thread allocates, touches and frees 16 small blocks (a heartbeat), which gives an
 *      allocator that purges lazily on its next call the chance to do so. A good allocator
 *      returns the memory of the shrink to the OS here.
 *
 * -q (quick) shrinks everything: 32 MiB peak, 6 phases, 12..50 ms gaps (5 ms ticks); a run takes
 * about a quarter of a second. -v prints one line per phase on stderr (CLOCK_MONOTONIC times, so
 * an outside sampler can align them with its own clock; bench/bench.py mem draws the live bytes).
 *
 * Output: one "RESULT key=value ..." line (see bench.h): elapsed_s (wall time of all phases),
 * work_s (the work parts only: the sum over phases of the slowest thread, gaps excluded),
 * idle_s, operation counts and the shared object that serves malloc.
 *
 * usage: bench-mem [-t THREADS] [-p PHASES] [-m PEAK_MIB] [-s SEED] [-q] [-v]
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define XFER_ONE_IN 8    /* released blocks handed to the next thread to be freed */
#define XFER_BATCH 32    /* blocks per push to the next thread's inbox */
#define REALLOC_ONE_IN 16 /* session updates done with realloc */
#define REQS_PER_OBJ 0.5 /* requests per phase, per live session object */
#define REQ_SLICE 32     /* requests between two session openings/closings */
#define INFLIGHT 64      /* requests in flight per thread (a FIFO) */
#define REQ_TEMPS 10     /* at most 8 small + 1 medium + 1 large temporaries per request */
#define UPDATE_ONE_IN 16 /* requests that also replace an object of a session */
#define HEARTBEAT 16     /* small blocks allocated and freed per idle tick and thread */
#define HDR_MAGIC UINT64_C(0x6D656D2D62656E63)

static const double phase_target[] = {0.30, 0.65, 1.00, 0.45, 0.03, 0.55,
                                      0.90, 0.20, 0.01, 0.75, 0.35, 0.02};
static const unsigned phase_gap_ms[] = {80, 150, 60, 200, 120, 50, 100, 180, 70, 130, 90, 200};
#define NTABLE (sizeof phase_target / sizeof phase_target[0])

typedef struct obj_s {
  char *p;
  uint32_t size;
  uint32_t cls;
} obj_t;

typedef struct session_s {
  obj_t *o; /* fixed number of objects, allocated with the session */
  size_t n;
  size_t bytes;
} session_t;

typedef struct request_s {
  obj_t t[REQ_TEMPS]; /* temporaries, released when the request completes */
  unsigned n;
} request_t;

typedef struct inbox_s {
  _Alignas(64) _Atomic(uintptr_t) head; /* singly linked through the first word of each block */
} inbox_t;

typedef struct config_s {
  unsigned threads, phases;
  size_t peak;        /* bytes */
  unsigned tick_us;   /* idle tick */
  double gap_scale;   /* multiplies phase_gap_ms */
  uint64_t seed;
  int verbose;
} config_t;

struct shared_s;

typedef struct worker_s {
  struct shared_s *sh;
  unsigned id;
  pthread_t thread;
  uint64_t rng;
  session_t *sess; /* open sessions */
  size_t nsess, capsess;
  size_t live, live_objs; /* bytes and objects in the open sessions */
  request_t inflight[INFLIGHT];
  unsigned req_next; /* FIFO position: the oldest request in flight */
  unsigned long long requests;
  uintptr_t batch_first, batch_last; /* blocks waiting to be pushed to the next thread */
  unsigned batch_n;
  unsigned long long allocs, frees, reallocs, xsent, xfreed, opened, closed;
  _Alignas(64) inbox_t inbox;
} worker_t;

typedef struct shared_s {
  config_t cfg;
  worker_t *w;
  pthread_barrier_t barrier;
  double work_s, idle_s;
  double live_max, live_last; /* bytes, at the phase ends */
} shared_t;

/* ---------------------------------------------------------------------------------------- */
/* sizes, touching, checking */

static size_t draw_size(uint64_t *rng, int cls) {
  uint64_t r = bench_rand(rng);
  if (cls == 0) { /* 16..1024: 60% up to 128, 30% 129..512, 10% 513..1024 */
    uint64_t band = bench_index(r, 100);
    uint64_t x = bench_rand(rng);
    if (band < 60) return 16 + bench_index(x, 113);
    if (band < 90) return 129 + bench_index(x, 384);
    return 513 + bench_index(x, 512);
  }
  /* log-uniform: a power-of-two band, then uniform inside it */
  size_t lo = cls == 1 ? 1024 : 256 * 1024;
  unsigned bands = cls == 1 ? 6 : 4; /* 1K..64K or 256K..4M */
  size_t base = lo << bench_index(r, bands);
  size_t size = base + bench_index(bench_rand(rng), base);
  if (size <= 1024) size = 1025;
  return size;
}

_Noreturn static void die(const char *what) {
  fprintf(stderr, "bench-mem: %s\n", what);
  exit(3);
}

/* Header: word 0 is free for the inbox link, word 1 holds the size mixed with a magic. */
static void put_header(char *p, size_t size) {
  uint64_t h[2] = {0, (uint64_t)size ^ HDR_MAGIC};
  memcpy(p, h, sizeof h);
}

static size_t header_size(const char *p) {
  uint64_t h;
  memcpy(&h, p + 8, sizeof h);
  return (size_t)(h ^ HDR_MAGIC);
}

/* Write one byte in every 4 KiB of [from, to) of p, and the last byte. */
static void touch(char *p, size_t from, size_t to) {
  for (size_t off = from; off < to; off += 4096) p[off] = (char)(off >> 12);
  if (to > from) p[to - 1] = 1;
}

static char *new_block(worker_t *w, size_t size) {
  char *p = malloc(size);
  if (p == NULL) die("out of memory");
  put_header(p, size);
  touch(p, 16, size);
  w->allocs++;
  return p;
}

static void check_block(const char *p, size_t size) {
  if (header_size(p) != size) die("block header damaged: heap corruption");
}

/* ---------------------------------------------------------------------------------------- */
/* cross-thread frees */

static void inbox_push(inbox_t *in, uintptr_t first, uintptr_t last) {
  uintptr_t old = atomic_load_explicit(&in->head, memory_order_relaxed);
  do {
    memcpy((void *)last, &old, sizeof old);
  } while (!atomic_compare_exchange_weak_explicit(&in->head, &old, first, memory_order_release,
                                                  memory_order_relaxed));
}

static void flush_batch(worker_t *w) {
  if (w->batch_n == 0) return;
  worker_t *to = &w->sh->w[(w->id + 1) % w->sh->cfg.threads];
  inbox_push(&to->inbox, w->batch_first, w->batch_last);
  w->batch_first = w->batch_last = 0;
  w->batch_n = 0;
}

static void drain_inbox(worker_t *w) {
  uintptr_t cur = atomic_exchange_explicit(&w->inbox.head, 0, memory_order_acquire);
  while (cur != 0) {
    char *p = (char *)cur;
    memcpy(&cur, p, sizeof cur);
    size_t size = header_size(p);
    if (size < 16 || size > ((size_t)8 << 20)) die("handed-over block damaged: heap corruption");
    free(p);
    w->xfreed++;
  }
}

/* Let go of a block: free it here, or (one time in XFER_ONE_IN) hand it to the next thread. */
static void release(worker_t *w, char *p, size_t size) {
  check_block(p, size);
  if (w->sh->cfg.threads > 1 && bench_index(bench_rand(&w->rng), XFER_ONE_IN) == 0) {
    uintptr_t u = (uintptr_t)p, zero = 0;
    memcpy(p, &zero, sizeof zero);
    if (w->batch_n == 0) w->batch_first = u;
    else memcpy((void *)w->batch_last, &u, sizeof u);
    w->batch_last = u;
    w->xsent++;
    if (++w->batch_n == XFER_BATCH) flush_batch(w);
  } else {
    free(p);
    w->frees++;
  }
}

/* ---------------------------------------------------------------------------------------- */
/* sessions */

/* A session (a client connection with its state) holds 16..256 small objects, 0..3 medium ones
 * and, one time in 80, a large buffer, all allocated together (large first, then small and
 * medium interleaved): on average ~30 KiB small, ~24 KiB medium and ~18 KiB large. */
static void open_session(worker_t *w) {
  size_t nsmall = 16 + bench_index(bench_rand(&w->rng), 241);
  size_t nmed = bench_index(bench_rand(&w->rng), 4);
  size_t nlarge = bench_index(bench_rand(&w->rng), 80) == 0 ? 1 : 0;
  session_t s;
  s.n = nsmall + nmed + nlarge;
  s.bytes = 0;
  s.o = malloc(s.n * sizeof *s.o);
  if (s.o == NULL) die("out of memory");
  for (size_t i = 0; i < s.n; i++) {
    size_t left = s.n - i - nlarge;
    int cls = nlarge ? 2 : (bench_index(bench_rand(&w->rng), left) < nmed ? 1 : 0);
    if (cls == 2) nlarge--;
    if (cls == 1) nmed--;
    size_t size = draw_size(&w->rng, cls);
    s.o[i].p = new_block(w, size);
    s.o[i].size = (uint32_t)size;
    s.o[i].cls = (uint32_t)cls;
    s.bytes += size;
  }
  if (w->nsess == w->capsess) {
    size_t cap = w->capsess ? 2 * w->capsess : 64;
    session_t *v = realloc(w->sess, cap * sizeof *v);
    if (v == NULL) die("out of memory");
    w->sess = v;
    w->capsess = cap;
  }
  w->sess[w->nsess++] = s;
  w->live += s.bytes;
  w->live_objs += s.n;
  w->opened++;
}

/* Close one of the newest sessions (uniformly among the newest quarter, keeping the opening
 * order): connection lifetimes are heavy-tailed, so when the load falls the recent connections
 * go first and the survivors are mostly old ones. All its objects are released (some through
 * another thread). */
static void close_session(worker_t *w) {
  size_t i = w->nsess - 1 - bench_index(bench_rand(&w->rng), w->nsess / 4 + 1);
  session_t s = w->sess[i];
  memmove(&w->sess[i], &w->sess[i + 1], (w->nsess - i - 1) * sizeof *w->sess);
  w->nsess--;
  for (size_t k = 0; k < s.n; k++) release(w, s.o[k].p, s.o[k].size);
  free(s.o);
  w->frees++;
  w->live -= s.bytes;
  w->live_objs -= s.n;
  w->closed++;
}

/* Replace one object of a random session by a new one of the same class (or, one time in
 * REALLOC_ONE_IN, realloc it to a new size of its class): the session state changes, and the
 * new block lands wherever the allocator finds room, so sessions get scattered as the heap ages. */
static void update_session(worker_t *w) {
  session_t *s = &w->sess[bench_index(bench_rand(&w->rng), w->nsess)];
  obj_t *x = &s->o[bench_index(bench_rand(&w->rng), s->n)];
  size_t size = draw_size(&w->rng, (int)x->cls);
  if (bench_index(bench_rand(&w->rng), REALLOC_ONE_IN) == 0) {
    check_block(x->p, x->size);
    char *p = realloc(x->p, size);
    if (p == NULL) die("out of memory");
    check_block(p, x->size); /* the header moved with the contents */
    put_header(p, size);
    if (size > x->size) touch(p, x->size, size);
    w->reallocs++;
    x->p = p;
  } else {
    release(w, x->p, x->size);
    x->p = new_block(w, size);
  }
  s->bytes = s->bytes - x->size + size;
  w->live = w->live - x->size + size;
  x->size = (uint32_t)size;
}

static void complete_request(worker_t *w, request_t *r) {
  for (unsigned i = 0; i < r->n; i++) release(w, r->t[i].p, r->t[i].size);
  r->n = 0;
}

static void add_temp(worker_t *w, request_t *r, int cls) {
  size_t size = draw_size(&w->rng, cls);
  r->t[r->n].p = new_block(w, size);
  r->t[r->n].size = (uint32_t)size;
  r->t[r->n].cls = (uint32_t)cls;
  r->n++;
}

/* One request: complete the oldest request in flight (release its temporaries), then start a
 * new one with 1..8 small temporaries, one time in 4 a medium one and one time in 500 a large
 * buffer; one request in UPDATE_ONE_IN also updates the state of a session. */
static void step_request(worker_t *w) {
  request_t *r = &w->inflight[w->req_next];
  w->req_next = (w->req_next + 1) % INFLIGHT;
  complete_request(w, r);
  unsigned nsmall = 1 + (unsigned)bench_index(bench_rand(&w->rng), 8);
  for (unsigned i = 0; i < nsmall; i++) add_temp(w, r, 0);
  if (bench_index(bench_rand(&w->rng), 4) == 0) add_temp(w, r, 1);
  if (bench_index(bench_rand(&w->rng), 500) == 0) add_temp(w, r, 2);
  if (w->nsess > 0 && bench_index(bench_rand(&w->rng), UPDATE_ONE_IN) == 0) update_session(w);
  w->requests++;
}

static void complete_all_requests(worker_t *w) {
  for (unsigned i = 0; i < INFLIGHT; i++) complete_request(w, &w->inflight[i]);
}

/* ---------------------------------------------------------------------------------------- */
/* one phase of work */

/* Open (or close) sessions until the live bytes reach (or fall to) the target, with slices of
 * requests in between; then the rest of the requests, REQS_PER_OBJ per live session object (the
 * larger of the count now and the count expected at the target). The phase ends with every
 * request completed, so only the sessions stay live through the idle gap. */
static void phase_work(worker_t *w, double target) {
  int grow = (double)w->live < target;
  double per_obj = w->live_objs ? (double)w->live / (double)w->live_objs : 500.0;
  double objs = target / per_obj;
  if ((double)w->live_objs > objs) objs = (double)w->live_objs;
  unsigned long long reqs = (unsigned long long)(objs * REQS_PER_OBJ);
  int resizing = 1;
  while (resizing || reqs > 0) {
    if (resizing) {
      if (grow && (double)w->live < target) open_session(w);
      else if (!grow && (double)w->live > target && w->nsess > 0) close_session(w);
      else resizing = 0;
    }
    for (int k = 0; k < REQ_SLICE && reqs > 0; k++, reqs--) step_request(w);
    drain_inbox(w);
  }
  complete_all_requests(w);
  flush_batch(w);
}

/* ---------------------------------------------------------------------------------------- */
/* idle gap */

static void sleep_us(unsigned us) {
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void idle_gap(worker_t *w, unsigned gap_us) {
  unsigned tick = w->sh->cfg.tick_us;
  char *tmp[HEARTBEAT];
  for (unsigned t = 0; t < gap_us; t += tick) {
    sleep_us(gap_us - t < tick ? gap_us - t : tick);
    for (int i = 0; i < HEARTBEAT; i++) tmp[i] = new_block(w, draw_size(&w->rng, 0));
    for (int i = 0; i < HEARTBEAT; i++) {
      free(tmp[i]);
      w->frees++;
    }
  }
}

/* ---------------------------------------------------------------------------------------- */

static double live_bytes(const shared_t *sh) {
  double sum = 0;
  for (unsigned i = 0; i < sh->cfg.threads; i++) sum += (double)sh->w[i].live;
  return sum;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  const config_t *cfg = &sh->cfg;
  for (unsigned ph = 0; ph < cfg->phases; ph++) {
    /* fewer phases than the table: spread them over it; more: cycle through it */
    size_t k = cfg->phases < NTABLE ? ph * NTABLE / cfg->phases : ph % NTABLE;
    double target = (double)cfg->peak * phase_target[k] / cfg->threads;
    unsigned gap_us = (unsigned)(phase_gap_ms[k] * 1000 * cfg->gap_scale);
    pthread_barrier_wait(&sh->barrier);
    double t0 = bench_now();
    phase_work(w, target);
    pthread_barrier_wait(&sh->barrier); /* every batch is pushed */
    drain_inbox(w);
    pthread_barrier_wait(&sh->barrier); /* every inbox is empty */
    double t1 = bench_now();
    if (w->id == 0) {
      double live = live_bytes(sh);
      if (live > sh->live_max) sh->live_max = live;
      sh->live_last = live;
      sh->work_s += t1 - t0;
      if (cfg->verbose)
        fprintf(stderr, "PHASE %u t_start=%.6f t_work_end=%.6f target_mib=%.2f live_mib=%.2f "
                "gap_ms=%.0f\n", ph, t0, t1, target * cfg->threads / 1048576.0,
                live / 1048576.0, gap_us / 1000.0);
    }
    idle_gap(w, gap_us);
    if (w->id == 0) sh->idle_s += bench_now() - t1;
  }
  /* shut down (after the last idle gap, so it is not part of the measured trough): free the
     sessions that are left, here; nothing is in flight any more */
  pthread_barrier_wait(&sh->barrier);
  for (size_t i = 0; i < w->nsess; i++) {
    for (size_t k = 0; k < w->sess[i].n; k++) free(w->sess[i].o[k].p);
    free(w->sess[i].o);
  }
  free(w->sess);
  return NULL;
}

_Noreturn static void usage(void) {
  fprintf(stderr, "usage: bench-mem [-t THREADS] [-p PHASES] [-m PEAK_MIB] [-s SEED] [-q] [-v]\n");
  exit(2);
}

int main(int argc, char **argv) {
  config_t cfg = {4, 12, (size_t)320 << 20, 10000, 1.0, 42, 0};
  int quick = 0, opt;
  unsigned long long threads = 0, phases = 0, peak_mib = 0;
  while ((opt = getopt(argc, argv, "t:p:m:s:qvh")) != -1) {
    switch (opt) {
      case 't': threads = bench_arg(optarg, "thread count"); break;
      case 'p': phases = bench_arg(optarg, "phase count"); break;
      case 'm': peak_mib = bench_arg(optarg, "peak MiB"); break;
      case 's': cfg.seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      case 'v': cfg.verbose = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (quick) {
    cfg.phases = 6;
    cfg.peak = (size_t)32 << 20;
    cfg.gap_scale = 0.25;
    cfg.tick_us = 5000;
  }
  if (threads) cfg.threads = threads > 256 ? 256 : (unsigned)threads;
  if (phases) cfg.phases = phases > 10000 ? 10000 : (unsigned)phases;
  if (peak_mib) cfg.peak = (size_t)(peak_mib > 65536 ? 65536 : peak_mib) << 20;

  shared_t sh;
  memset(&sh, 0, sizeof sh);
  sh.cfg = cfg;
  /* the bookkeeping is allocated with the allocator under test too, like everything else */
  sh.w = calloc(cfg.threads, sizeof *sh.w);
  if (sh.w == NULL) die("out of memory");
  if (pthread_barrier_init(&sh.barrier, NULL, cfg.threads) != 0) die("pthread_barrier_init");

  double t_start = bench_now();
  for (unsigned i = 0; i < cfg.threads; i++) {
    worker_t *w = &sh.w[i];
    w->sh = &sh;
    w->id = i;
    w->rng = cfg.seed * UINT64_C(0x100000001B3) + i + 1;
    atomic_init(&w->inbox.head, 0);
  }
  for (unsigned i = 0; i < cfg.threads; i++)
    if (pthread_create(&sh.w[i].thread, NULL, worker_main, &sh.w[i]) != 0) die("pthread_create");
  for (unsigned i = 0; i < cfg.threads; i++) pthread_join(sh.w[i].thread, NULL);
  double elapsed = bench_now() - t_start;

  unsigned long long allocs = 0, frees = 0, reallocs = 0, xfreed = 0, sessions = 0, requests = 0;
  for (unsigned i = 0; i < cfg.threads; i++) {
    sessions += sh.w[i].opened;
    requests += sh.w[i].requests;
    allocs += sh.w[i].allocs;
    frees += sh.w[i].frees;
    reallocs += sh.w[i].reallocs;
    xfreed += sh.w[i].xfreed;
  }
  printf("RESULT bench=mem threads=%u phases=%u peak_mib=%zu seed=%llu elapsed_s=%.4f "
         "work_s=%.4f idle_s=%.4f sessions=%llu requests=%llu allocs=%llu frees=%llu "
         "reallocs=%llu xfrees=%llu max_live_mib=%.1f final_live_mib=%.1f",
         cfg.threads, cfg.phases, cfg.peak >> 20, (unsigned long long)cfg.seed, elapsed,
         sh.work_s, sh.idle_s, sessions, requests, allocs, frees, reallocs, xfreed,
         sh.live_max / 1048576.0,
         sh.live_last / 1048576.0);
  bench_print_origin();
  pthread_barrier_destroy(&sh.barrier);
  free(sh.w);
  return 0;
}
