/* SPDX-License-Identifier: MIT */
/* barnes: Barnes-Hut N-body force calculation; allocation-light, pointer-chasing.
 *
 * Models the pattern of the "barnes" benchmark (the hierarchical N-body code from the SPLASH-2
 * suite, run single-threaded): every time step builds an octree over the bodies, allocating one
 * cell per tree node, computes centres of mass bottom-up, walks the tree once per body to sum the
 * gravitational forces (opening criterion theta = 0.6), advances the bodies (leapfrog) and frees
 * the whole tree. Written from scratch; differences from the original: bodies are malloc'ed one
 * by one (the original uses one array), leaves hold a single body (buckets only when bodies
 * coincide), no quadrupole terms, a Plummer-like random initial distribution instead of its
 * input file.
 *
 * Checks: every body and cell carries a header tag and a trailing guard word, verified whenever
 * the tree is freed (cells) and at the end (bodies); total momentum is checked to stay near 0.
 *
 * ops = blocks allocated (cells + bodies).
 * usage: barnes [-n STEPS] [-b BODIES] [-t THREADS] [-s SEED] [-q]
 *   single-threaded by default; with -t N each thread simulates its own system.
 */
#include "workload.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

#define BODY_MAGIC UINT64_C(0xB0D1E5B0D1E5B0D1)
#define CELL_MAGIC UINT64_C(0xCE11CE11CE11CE11)
#define GUARD UINT64_C(0x6A7D6A7D6A7D6A7D)
#define THETA 0.6
#define EPS2 1e-4
#define DT 0.01
#define MAX_DEPTH 48

typedef struct body {
  uint64_t tag;
  double pos[3], vel[3], acc[3];
  double mass;
  struct body *next; /* bucket chain in a leaf (only for coincident bodies) */
  uint64_t guard;
} body;

typedef struct cell {
  uint64_t tag;
  double center[3], half; /* cube of side 2*half */
  double cm[3], mass;
  struct cell *child[8];
  body *bodies; /* leaf: the body (or chain); NULL for inner cells */
  uint64_t guard;
} cell;

typedef struct job {
  uint64_t rng, allocs, check, interactions;
  unsigned nbodies, steps;
} job;

static void corrupt(const char *what, const void *p) {
  fprintf(stderr, "CORRUPT barnes: %s at %p\n", what, p);
  exit(1);
}

static void *xmalloc(job *j, size_t n) {
  void *p = malloc(n);
  if (p == NULL) {
    fprintf(stderr, "barnes: out of memory\n");
    exit(1);
  }
  j->allocs++;
  return p;
}

static cell *cell_new(job *j, const double center[3], double half) {
  cell *c = xmalloc(j, sizeof *c);
  c->tag = CELL_MAGIC;
  c->guard = GUARD ^ (uintptr_t)c;
  for (int k = 0; k < 3; k++) {
    c->center[k] = center[k];
    c->cm[k] = 0;
  }
  c->half = half;
  c->mass = 0;
  for (int k = 0; k < 8; k++) c->child[k] = NULL;
  c->bodies = NULL;
  return c;
}

static void cell_check(const cell *c) {
  if (c->tag != CELL_MAGIC || c->guard != (GUARD ^ (uintptr_t)c)) corrupt("cell header/guard", c);
}

static void body_check(const body *b) {
  if (b->tag != BODY_MAGIC || b->guard != (GUARD ^ (uintptr_t)b)) corrupt("body header/guard", b);
}

static void tree_free(cell *c) {
  if (c == NULL) return;
  cell_check(c);
  for (int k = 0; k < 8; k++) tree_free(c->child[k]);
  c->tag = 0;
  free(c);
}

static int octant(const cell *c, const double pos[3]) {
  return (pos[0] >= c->center[0]) | ((pos[1] >= c->center[1]) << 1) | ((pos[2] >= c->center[2]) << 2);
}

static cell *child_of(job *j, cell *c, int o) {
  if (c->child[o] == NULL) {
    double h = c->half / 2, ctr[3];
    for (int k = 0; k < 3; k++) ctr[k] = c->center[k] + ((o >> k) & 1 ? h : -h);
    c->child[o] = cell_new(j, ctr, h);
  }
  return c->child[o];
}

static int is_leaf(const cell *c) { return c->bodies != NULL; }

static int has_children(const cell *c) {
  for (int k = 0; k < 8; k++)
    if (c->child[k]) return 1;
  return 0;
}

static void insert(job *j, cell *c, body *b) {
  for (int depth = 0;; depth++) {
    if (!is_leaf(c) && !has_children(c)) { /* empty cell */
      b->next = NULL;
      c->bodies = b;
      return;
    }
    if (is_leaf(c)) {
      if (depth >= MAX_DEPTH) { /* coincident bodies: chain them */
        b->next = c->bodies;
        c->bodies = b;
        return;
      }
      body *old = c->bodies; /* split: push the resident body one level down */
      c->bodies = NULL;
      cell *oc = child_of(j, c, octant(c, old->pos));
      old->next = NULL;
      oc->bodies = old;
    }
    c = child_of(j, c, octant(c, b->pos));
  }
}

static void summarize(cell *c) {
  double m = 0, cm[3] = {0, 0, 0};
  if (is_leaf(c)) {
    for (body *b = c->bodies; b; b = b->next) {
      m += b->mass;
      for (int k = 0; k < 3; k++) cm[k] += b->mass * b->pos[k];
    }
  } else {
    for (int o = 0; o < 8; o++) {
      cell *ch = c->child[o];
      if (ch == NULL) continue;
      summarize(ch);
      m += ch->mass;
      for (int k = 0; k < 3; k++) cm[k] += ch->mass * ch->cm[k];
    }
  }
  c->mass = m;
  for (int k = 0; k < 3; k++) c->cm[k] = m > 0 ? cm[k] / m : c->center[k];
}

static void accumulate(job *j, body *b, const double p[3], double m, double acc[3]) {
  double d[3] = {p[0] - b->pos[0], p[1] - b->pos[1], p[2] - b->pos[2]};
  double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2;
  double inv = 1.0 / sqrt(r2);
  double s = m * inv * inv * inv;
  for (int k = 0; k < 3; k++) acc[k] += s * d[k];
  j->interactions++;
}

static void force(job *j, const cell *c, body *b, double acc[3]) {
  if (c->mass == 0) return;
  if (is_leaf(c)) {
    for (body *o = c->bodies; o; o = o->next)
      if (o != b) accumulate(j, b, o->pos, o->mass, acc);
    return;
  }
  double d[3] = {c->cm[0] - b->pos[0], c->cm[1] - b->pos[1], c->cm[2] - b->pos[2]};
  double dist2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  double size = 2 * c->half;
  if (size * size < THETA * THETA * dist2) {
    accumulate(j, b, c->cm, c->mass, acc);
    return;
  }
  for (int o = 0; o < 8; o++)
    if (c->child[o]) force(j, c->child[o], b, acc);
}

static double urand(job *j) { return (double)(bench_rand(&j->rng) >> 11) * (1.0 / 9007199254740992.0); }

static void *run(void *arg) {
  job *j = arg;
  unsigned n = j->nbodies;
  body **bs = xmalloc(j, sizeof(body *) * n);
  for (unsigned i = 0; i < n; i++) {
    body *b = xmalloc(j, sizeof *b);
    b->tag = BODY_MAGIC;
    b->guard = GUARD ^ (uintptr_t)b;
    /* Plummer-like radius, isotropic direction, small random velocities */
    double u = urand(j) * 0.99 + 0.005;
    double r = 1.0 / sqrt(pow(u, -2.0 / 3.0) - 1.0);
    double z = 2 * urand(j) - 1, phi = 6.283185307179586 * urand(j);
    double s = sqrt(1 - z * z);
    b->pos[0] = r * s * cos(phi);
    b->pos[1] = r * s * sin(phi);
    b->pos[2] = r * z;
    for (int k = 0; k < 3; k++) {
      b->vel[k] = 0.3 * (urand(j) - 0.5);
      b->acc[k] = 0;
    }
    b->mass = 1.0 / n;
    b->next = NULL;
    bs[i] = b;
  }
  /* remove the net momentum so that it stays ~0 (a physics self-check) */
  double p[3] = {0, 0, 0};
  for (unsigned i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) p[k] += bs[i]->mass * bs[i]->vel[k];
  for (unsigned i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) bs[i]->vel[k] -= p[k];

  for (unsigned step = 0; step < j->steps; step++) {
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) lo[k] = hi[k] = bs[0]->pos[k];
    for (unsigned i = 1; i < n; i++)
      for (int k = 0; k < 3; k++) {
        if (bs[i]->pos[k] < lo[k]) lo[k] = bs[i]->pos[k];
        if (bs[i]->pos[k] > hi[k]) hi[k] = bs[i]->pos[k];
      }
    double ctr[3], half = 0;
    for (int k = 0; k < 3; k++) {
      ctr[k] = (lo[k] + hi[k]) / 2;
      if ((hi[k] - lo[k]) / 2 > half) half = (hi[k] - lo[k]) / 2;
    }
    cell *root = cell_new(j, ctr, half * 1.0001 + 1e-9);
    for (unsigned i = 0; i < n; i++) {
      body_check(bs[i]);
      insert(j, root, bs[i]);
    }
    summarize(root);
    for (unsigned i = 0; i < n; i++) {
      double acc[3] = {0, 0, 0};
      force(j, root, bs[i], acc);
      for (int k = 0; k < 3; k++) bs[i]->acc[k] = acc[k];
    }
    tree_free(root);
    for (unsigned i = 0; i < n; i++) /* kick-drift (semi-implicit Euler, i.e. leapfrog) */
      for (int k = 0; k < 3; k++) {
        bs[i]->vel[k] += DT * bs[i]->acc[k];
        bs[i]->pos[k] += DT * bs[i]->vel[k];
      }
  }

  double mom[3] = {0, 0, 0};
  uint64_t h = 0;
  for (unsigned i = 0; i < n; i++) {
    body_check(bs[i]);
    for (int k = 0; k < 3; k++) {
      mom[k] += bs[i]->mass * bs[i]->vel[k];
      uint64_t bits;
      memcpy(&bits, &bs[i]->pos[k], sizeof bits);
      h = (h ^ bits) * UINT64_C(0x100000001B3);
    }
    bs[i]->tag = 0;
    free(bs[i]);
  }
  free(bs);
  /* the tree code does not conserve momentum exactly, but it must stay small */
  if (fabs(mom[0]) + fabs(mom[1]) + fabs(mom[2]) > 0.5) corrupt("momentum diverged", NULL);
  j->check = h;
  return NULL;
}

static void usage(void) {
  fprintf(stderr,
          "usage: barnes [-n STEPS (40)] [-b BODIES (4096)] [-t THREADS (1)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long steps = 40, nbodies = 4096, threads = 1, seed = 1;
  int quick = 0, nset = 0, bset = 0, opt;
  while ((opt = getopt(argc, argv, "n:b:t:s:qh")) != -1) {
    switch (opt) {
      case 'n': steps = bench_arg(optarg, "steps"); nset = 1; break;
      case 'b': nbodies = bench_arg(optarg, "bodies"); bset = 1; break;
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (threads > 256) threads = 256;
  if (nbodies < 2) nbodies = 2;
  if (nbodies > 10000000) nbodies = 10000000;
  if (steps > 1000000) steps = 1000000;
  if (quick && !nset) steps = 8;
  if (quick && !bset) nbodies = 1024;

  job *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (unsigned long long i = 0; i < threads; i++) {
    jobs[i].rng = seed + i;
    jobs[i].nbodies = (unsigned)nbodies;
    jobs[i].steps = (unsigned)steps;
  }
  double t0 = bench_now();
  wl_run_jobs(jobs, sizeof *jobs, (size_t)threads, run, "barnes");
  double secs = bench_now() - t0;
  uint64_t ops = 0, check = 0;
  for (unsigned long long i = 0; i < threads; i++) {
    ops += jobs[i].allocs;
    check = (check * 31) ^ jobs[i].check ^ jobs[i].interactions;
  }
  free(jobs);
  printf("RESULT workload=barnes threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         (unsigned long long)ops, secs, (unsigned long long)check);
  bench_print_origin();
  return 0;
}
