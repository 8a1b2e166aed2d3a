/* SPDX-License-Identifier: MIT */
/* espresso: one thread, many small/medium blocks of varying sizes with mixed lifetimes and
 * frequent realloc of growing arrays (two-level logic minimisation).
 *
 * Models the allocation pattern of the "espresso" benchmark (the Berkeley two-level boolean
 * minimiser run on a PLA file). Written from scratch: each problem is a random single-output
 * function over 12..100 inputs given as an ON-set cover F and an OFF-set cover R (disjoint by
 * construction; everything else is don't-care). Cubes are bit vectors (2 bits per input), covers
 * are pointer arrays grown with realloc. The minimiser runs espresso-like passes:
 *   - expand: every cube tries to drop each literal on a fresh copy, kept if it stays disjoint
 *     from R (one short-lived cube copy per attempt);
 *   - single-cube containment: sort by size, drop covered cubes, shrink the array with realloc;
 *   - irredundant: a cube is dropped if the rest of the cover, cofactored against it, is a
 *     tautology (unate-recursive check: per-level cofactor covers, per-level calloc'ed literal
 *     count arrays, depth up to the number of inputs, bounded work per check).
 * Results of the last 8 problems stay alive while new ones are solved (mixed lifetimes).
 * Differences from the original: single-output only, no complement/reduce/last-gasp, random
 * problems instead of PLA files; only the allocation pattern is intended to be similar.
 *
 * Checks: every cube has a header tag and a guard word after its data, every cover array a guard
 * slot after its capacity (also checked across realloc); the result is verified to stay disjoint
 * from R and to cover sampled minterms of every original ON-set cube.
 *
 * usage: espresso [-n PROBLEMS] [-t THREADS] [-s SEED] [-q]
 *   single-threaded by default; with -t N each thread solves its own problems.
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

#define CUBE_MAGIC 0xC0BE0000u
#define CUBE_GUARD UINT64_C(0x9D5EC0BE71A2F00D)
#define COVER_MAGIC 0xC0FE12ABu
#define COVER_GUARD ((uintptr_t)0xC0FEC0FEu)
#define KEEP 8          /* problems kept alive */
#define TAUT_BUDGET 600 /* recursive calls per tautology check */

typedef struct cube {
  uint32_t tag; /* CUBE_MAGIC ^ nw */
  uint16_t nw;  /* 64-bit words of data; w[nw] is the guard */
  uint16_t pad;
  uint64_t w[];
} cube;

typedef struct cover {
  uint32_t tag;
  uint32_t n, cap; /* v[cap] holds COVER_GUARD */
  cube **v;
} cover;

typedef struct ctx {
  uint64_t rng;
  uint64_t allocs;
  uint64_t check;
  unsigned nv, nw;        /* current problem */
  uint64_t lowmask[4];    /* 0b01 at every valid variable position, per word */
  int taut_budget;
} ctx;

typedef struct problem {
  cover *on, *off, *res;
} problem;

static void corrupt(const char *what, const void *p) {
  fprintf(stderr, "CORRUPT espresso: %s at %p\n", what, p);
  exit(1);
}

static void oom(void) {
  fprintf(stderr, "espresso: out of memory\n");
  exit(1);
}

/* ---- cubes ---- */

static cube *cube_new(ctx *c) {
  cube *k = malloc(sizeof(cube) + sizeof(uint64_t) * (c->nw + 1u));
  if (k == NULL) oom();
  c->allocs++;
  k->tag = CUBE_MAGIC ^ c->nw;
  k->nw = (uint16_t)c->nw;
  k->pad = 0;
  k->w[c->nw] = CUBE_GUARD ^ c->nw;
  return k;
}

static void cube_check(const cube *k) {
  if (k->tag != (CUBE_MAGIC ^ k->nw) || k->nw == 0 || k->nw > 4 ||
      k->w[k->nw] != (CUBE_GUARD ^ k->nw))
    corrupt("cube header/guard mismatch", k);
}

static void cube_free(cube *k) {
  cube_check(k);
  k->tag = 0;
  free(k);
}

static cube *cube_universe(ctx *c) {
  cube *k = cube_new(c);
  for (unsigned i = 0; i < c->nw; i++) k->w[i] = c->lowmask[i] | (c->lowmask[i] << 1);
  return k;
}

static cube *cube_copy(ctx *c, const cube *a) {
  cube *k = cube_new(c);
  memcpy(k->w, a->w, sizeof(uint64_t) * c->nw);
  return k;
}

static unsigned cube_get(const cube *k, unsigned v) { return (unsigned)(k->w[v / 32] >> (2 * (v % 32))) & 3u; }

static void cube_set(cube *k, unsigned v, unsigned val) {
  uint64_t *w = &k->w[v / 32];
  unsigned sh = 2 * (v % 32);
  *w = (*w & ~(UINT64_C(3) << sh)) | ((uint64_t)val << sh);
}

static int cube_disjoint(const ctx *c, const cube *a, const cube *b) {
  for (unsigned i = 0; i < c->nw; i++) {
    uint64_t x = a->w[i] & b->w[i];
    if (((x | (x >> 1)) & c->lowmask[i]) != c->lowmask[i]) return 1;
  }
  return 0;
}

static int cube_contains(const ctx *c, const cube *a, const cube *b) { /* a >= b */
  for (unsigned i = 0; i < c->nw; i++)
    if ((a->w[i] & b->w[i]) != b->w[i]) return 0;
  return 1;
}

static unsigned cube_dc(const ctx *c, const cube *a) { /* number of don't-care inputs */
  unsigned n = 0;
  for (unsigned i = 0; i < c->nw; i++)
    n += (unsigned)__builtin_popcountll(a->w[i] & (a->w[i] >> 1) & c->lowmask[i]);
  return n;
}

/* ---- covers ---- */

static cover *cover_new(ctx *c, unsigned cap) {
  cover *f = malloc(sizeof *f);
  if (f == NULL) oom();
  f->v = malloc(sizeof(cube *) * (cap + 1u));
  if (f->v == NULL) oom();
  c->allocs += 2;
  f->tag = COVER_MAGIC;
  f->n = 0;
  f->cap = cap;
  f->v[cap] = (cube *)COVER_GUARD;
  return f;
}

static void cover_check(const cover *f) {
  if (f->tag != COVER_MAGIC || f->n > f->cap || f->v[f->cap] != (cube *)COVER_GUARD)
    corrupt("cover header/guard mismatch", f);
}

static void cover_resize(ctx *c, cover *f, unsigned cap) {
  cover_check(f);
  cube **v = realloc(f->v, sizeof(cube *) * (cap + 1u));
  if (v == NULL) oom();
  c->allocs++;
  f->v = v;
  f->cap = cap;
  f->v[cap] = (cube *)COVER_GUARD;
}

static void cover_push(ctx *c, cover *f, cube *k) {
  if (f->n == f->cap) cover_resize(c, f, f->cap + f->cap / 2 + 2);
  f->v[f->n++] = k;
}

static void cover_free(cover *f) {
  cover_check(f);
  for (unsigned i = 0; i < f->n; i++) cube_free(f->v[i]);
  f->tag = 0;
  free(f->v);
  free(f);
}

static cover *cover_copy(ctx *c, const cover *f) {
  cover *g = cover_new(c, 2);
  for (unsigned i = 0; i < f->n; i++) cover_push(c, g, cube_copy(c, f->v[i]));
  return g;
}

static int intersects_any(const ctx *c, const cube *k, const cover *f) {
  for (unsigned i = 0; i < f->n; i++)
    if (!cube_disjoint(c, k, f->v[i])) return 1;
  return 0;
}

/* ---- problem generation ---- */

static cube *random_cube(ctx *c, unsigned lit_pct) {
  cube *k = cube_universe(c);
  for (unsigned v = 0; v < c->nv; v++) {
    uint64_t r = bench_rand(&c->rng);
    if (bench_index(r, 100) < lit_pct) cube_set(k, v, 1u + (unsigned)(r & 1));
  }
  return k;
}

/* An OFF-set cube: random, then made disjoint from every ON-set cube by adding a conflicting
 * literal; dropped (NULL) if some ON-set cube leaves no free input to conflict on. */
static cube *random_off_cube(ctx *c, const cover *on, unsigned lit_pct) {
  cube *k = random_cube(c, lit_pct);
  for (unsigned i = 0; i < on->n; i++) {
    const cube *o = on->v[i];
    if (cube_disjoint(c, k, o)) continue;
    unsigned start = (unsigned)bench_index(bench_rand(&c->rng), c->nv), v = 0, found = 0;
    for (unsigned j = 0; j < c->nv && !found; j++) {
      v = (start + j) % c->nv;
      unsigned ov = cube_get(o, v);
      if (ov != 3 && cube_get(k, v) == 3) found = 1;
    }
    if (!found) {
      cube_free(k);
      return NULL;
    }
    cube_set(k, v, 3u ^ cube_get(o, v));
  }
  return k;
}

/* ---- minimisation passes ---- */

static _Thread_local ctx *tls_ctx; /* for the qsort comparator */

static int cmp_cubes(const void *pa, const void *pb) {
  const cube *a = *(cube *const *)pa, *b = *(cube *const *)pb;
  unsigned da = cube_dc(tls_ctx, a), db = cube_dc(tls_ctx, b);
  if (da != db) return da > db ? -1 : 1; /* biggest cubes first */
  return memcmp(a->w, b->w, sizeof(uint64_t) * a->nw);
}

static void expand(ctx *c, cover *f, const cover *off) {
  for (unsigned i = 0; i < f->n; i++) {
    cube *k = f->v[i];
    unsigned start = (unsigned)bench_index(bench_rand(&c->rng), c->nv);
    for (unsigned j = 0; j < c->nv; j++) {
      unsigned v = (start + j) % c->nv;
      if (cube_get(k, v) == 3) continue;
      cube *t = cube_copy(c, k);
      cube_set(t, v, 3);
      if (intersects_any(c, t, off)) {
        cube_free(t);
      } else {
        cube_free(k);
        k = t;
      }
    }
    f->v[i] = k;
  }
}

static void containment(ctx *c, cover *f) {
  tls_ctx = c;
  qsort(f->v, f->n, sizeof(cube *), cmp_cubes);
  unsigned out = 0;
  for (unsigned i = 0; i < f->n; i++) {
    int covered = 0;
    for (unsigned j = 0; j < out && !covered; j++) covered = cube_contains(c, f->v[j], f->v[i]);
    if (covered) cube_free(f->v[i]);
    else f->v[out++] = f->v[i];
  }
  f->n = out;
  if (f->cap > out + 8) cover_resize(c, f, out + 2);
}

/* cofactor of f against cube p (NULL = no cube), optionally skipping entry `skip` */
static cover *cofactor(ctx *c, const cover *f, const cube *p, unsigned skip) {
  cover *g = cover_new(c, 4);
  for (unsigned i = 0; i < f->n; i++) {
    if (i == skip) continue;
    const cube *k = f->v[i];
    if (!cube_disjoint(c, k, p)) {
      cube *t = cube_copy(c, k);
      for (unsigned w = 0; w < c->nw; w++) {
        uint64_t pl = ~(p->w[w] & (p->w[w] >> 1)) & c->lowmask[w]; /* inputs p fixes */
        t->w[w] |= pl | (pl << 1);
      }
      cover_push(c, g, t);
    }
  }
  return g;
}

/* is f a tautology? 0 also when the work budget runs out (conservative) */
static int tautology(ctx *c, const cover *f) {
  if (--c->taut_budget <= 0) return 0;
  if (f->n == 0) return 0;
  for (unsigned i = 0; i < f->n; i++)
    if (cube_dc(c, f->v[i]) == c->nv) return 1;
  unsigned *cnt = calloc(2 * (size_t)c->nv, sizeof *cnt);
  if (cnt == NULL) oom();
  c->allocs++;
  for (unsigned i = 0; i < f->n; i++)
    for (unsigned v = 0; v < c->nv; v++) {
      unsigned l = cube_get(f->v[i], v);
      if (l != 3) cnt[2 * v + (l - 1)]++;
    }
  unsigned best = c->nv, bestscore = 0;
  for (unsigned v = 0; v < c->nv; v++) {
    unsigned lo = cnt[2 * v] < cnt[2 * v + 1] ? cnt[2 * v] : cnt[2 * v + 1];
    if (lo > 0 && cnt[2 * v] + cnt[2 * v + 1] > bestscore) {
      bestscore = cnt[2 * v] + cnt[2 * v + 1];
      best = v;
    }
  }
  free(cnt);
  if (best == c->nv) return 0; /* unate without a universal cube */
  int result = 1;
  for (unsigned val = 1; val <= 2 && result; val++) {
    cube *p = cube_universe(c);
    cube_set(p, best, val);
    cover *g = cofactor(c, f, p, UINT32_MAX);
    cube_free(p);
    result = tautology(c, g);
    cover_free(g);
  }
  return result;
}

static void irredundant(ctx *c, cover *f) {
  for (unsigned i = 0; i < f->n;) {
    cover *g = cofactor(c, f, f->v[i], i);
    c->taut_budget = TAUT_BUDGET;
    int redundant = tautology(c, g);
    cover_free(g);
    if (redundant) {
      cube_free(f->v[i]);
      f->v[i] = f->v[--f->n];
    } else {
      i++;
    }
  }
}

static void verify(ctx *c, const problem *p) {
  for (unsigned i = 0; i < p->res->n; i++)
    if (intersects_any(c, p->res->v[i], p->off)) corrupt("result intersects the OFF-set", p->res->v[i]);
  for (unsigned i = 0; i < p->on->n; i++) {
    for (int s = 0; s < 4; s++) {
      cube *m = cube_copy(c, p->on->v[i]);
      for (unsigned v = 0; v < c->nv; v++)
        if (cube_get(m, v) == 3) cube_set(m, v, 1u + (unsigned)(bench_rand(&c->rng) & 1));
      int covered = 0;
      for (unsigned j = 0; j < p->res->n && !covered; j++) covered = cube_contains(c, p->res->v[j], m);
      if (!covered) corrupt("result does not cover an ON-set minterm", m);
      cube_free(m);
    }
  }
}

static void solve(ctx *c, problem *p) {
  c->nv = 12 + (unsigned)bench_index(bench_rand(&c->rng), 89); /* 12..100 inputs */
  c->nw = (c->nv + 31) / 32;
  for (unsigned i = 0; i < c->nw; i++) {
    unsigned vars = c->nv - 32 * i < 32 ? c->nv - 32 * i : 32;
    c->lowmask[i] = (vars == 32 ? ~UINT64_C(0) : (UINT64_C(1) << (2 * vars)) - 1) &
                    UINT64_C(0x5555555555555555);
  }
  unsigned non = 10 + (unsigned)bench_index(bench_rand(&c->rng), 50);
  unsigned noff = non + (unsigned)bench_index(bench_rand(&c->rng), 2 * non);
  unsigned pct = 35 + (unsigned)bench_index(bench_rand(&c->rng), 30);
  p->on = cover_new(c, 2);
  for (unsigned i = 0; i < non; i++) cover_push(c, p->on, random_cube(c, pct));
  p->off = cover_new(c, 2);
  for (unsigned i = 0; i < noff; i++) {
    cube *k = random_off_cube(c, p->on, pct);
    if (k != NULL) cover_push(c, p->off, k);
  }
  p->res = cover_copy(c, p->on);
  containment(c, p->res);
  for (int pass = 0; pass < 2; pass++) {
    expand(c, p->res, p->off);
    containment(c, p->res);
    irredundant(c, p->res);
  }
  verify(c, p);
  uint64_t h = p->res->n;
  for (unsigned i = 0; i < p->res->n; i++) h = h * 31 + cube_dc(c, p->res->v[i]);
  c->check = (c->check ^ h ^ ((uint64_t)p->off->n << 40)) * UINT64_C(0x100000001B3);
}

static void problem_free(problem *p) {
  if (p->on == NULL) return;
  cover_free(p->on);
  cover_free(p->off);
  cover_free(p->res);
  p->on = p->off = p->res = NULL;
}

typedef struct job {
  ctx c;
  uint64_t problems;
} job;

static void *run(void *arg) {
  job *j = arg;
  problem keep[KEEP];
  memset(keep, 0, sizeof keep);
  for (uint64_t i = 0; i < j->problems; i++) {
    problem *p = &keep[i % KEEP];
    problem_free(p);
    solve(&j->c, p);
  }
  for (int i = 0; i < KEEP; i++) problem_free(&keep[i]);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: espresso [-n PROBLEMS (1200)] [-t THREADS (1)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long problems = 1200, threads = 1, seed = 1;
  int quick = 0, nset = 0, opt;
  while ((opt = getopt(argc, argv, "n:t:s:qh")) != -1) {
    switch (opt) {
      case 'n': problems = bench_arg(optarg, "problems"); nset = 1; break;
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (threads > 256) threads = 256;
  if (quick && !nset) problems = 60;

  job *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (unsigned long long i = 0; i < threads; i++) {
    jobs[i].c.rng = seed + i;
    jobs[i].problems = problems;
  }
  double t0 = bench_now();
  wl_run_jobs(jobs, sizeof *jobs, (size_t)threads, run, "espresso");
  double secs = bench_now() - t0;
  uint64_t ops = 0, check = 0;
  for (unsigned long long i = 0; i < threads; i++) {
    ops += jobs[i].c.allocs;
    check = (check * 31) ^ jobs[i].c.check;
  }
  free(jobs);
  printf("RESULT workload=espresso threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         (unsigned long long)ops, secs, (unsigned long long)check);
  bench_print_origin();
  return 0;
}
