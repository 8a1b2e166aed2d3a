/* SPDX-License-Identifier: MIT */
/* cfrac: many small, short-lived allocations in one thread (bignum arithmetic).
 *
 * Models the allocation pattern of the "cfrac" benchmark (continued-fraction factoring on top of a
 * bignum library that allocates every intermediate result). Written from scratch: a tiny unsigned
 * bignum type (32-bit digits) whose every operation returns a freshly malloc'ed result, used to
 * expand sqrt(N) as a continued fraction for random composite N of 64..768 bits. Each step
 * computes the next partial quotient (m, Q, a), the next convergent numerator A mod N, checks the
 * identity A(k-1)^2 == (-1)^k Q(k) (mod N), and trial-divides Q(k) by a small factor base (each
 * trial division allocates a quotient). Temporaries are freed as soon as they are used, so almost
 * every block lives for a few operations; sizes are 12..208 bytes. Differences from the original:
 * no factor-base relation collection or Gaussian elimination (nothing is actually factored), and
 * the numbers are random rather than one fixed N.
 *
 * Every bignum carries a header tag and a guard word after its last digit, both checked before
 * the block is freed; the continued-fraction identity above checks the arithmetic itself.
 *
 * usage: cfrac [-n STEPS] [-t THREADS] [-s SEED] [-q]
 *   single-threaded by default; with -t N each thread runs its own independent expansion.
 */
#include "workload.h"

#include <pthread.h>
#include <unistd.h>

#define BIG_MAGIC 0xB16D16u
#define BIG_GUARD 0x6A5D0C1Fu
#define STEPS_PER_N 1500

typedef struct big {
  uint16_t n;   /* digits in use (normalized: d[n-1] != 0, zero has n == 0) */
  uint16_t cap; /* digits allocated; d[cap] is the guard word */
  uint32_t tag; /* BIG_MAGIC ^ cap */
  uint32_t d[];
} big;

typedef struct ctx {
  uint64_t rng;
  uint64_t allocs;
  uint64_t check;
  uint64_t steps;
  uint64_t smooth;
} ctx;

static void corrupt(const char *what, const void *p) {
  fprintf(stderr, "CORRUPT cfrac: %s at %p\n", what, p);
  exit(1);
}

static big *big_alloc(ctx *c, unsigned cap) {
  if (cap > 4000) corrupt("digit count out of range", NULL);
  big *b = malloc(sizeof(big) + sizeof(uint32_t) * ((size_t)cap + 1));
  if (b == NULL) {
    fprintf(stderr, "cfrac: out of memory\n");
    exit(1);
  }
  c->allocs++;
  b->n = 0;
  b->cap = (uint16_t)cap;
  b->tag = BIG_MAGIC ^ cap;
  b->d[cap] = BIG_GUARD ^ cap;
  return b;
}

static void big_check(const big *b) {
  if (b->tag != (BIG_MAGIC ^ b->cap) || b->n > b->cap || b->d[b->cap] != (BIG_GUARD ^ b->cap) ||
      (b->n > 0 && b->d[b->n - 1] == 0))
    corrupt("bignum header/guard mismatch", b);
}

static void big_free(big *b) {
  big_check(b);
  b->tag = 0;
  free(b);
}

static void big_trim(big *b) {
  while (b->n > 0 && b->d[b->n - 1] == 0) b->n--;
}

static big *big_from_u64(ctx *c, uint64_t v) {
  big *b = big_alloc(c, 2);
  b->d[0] = (uint32_t)v;
  b->d[1] = (uint32_t)(v >> 32);
  b->n = 2;
  big_trim(b);
  return b;
}

static big *big_copy(ctx *c, const big *a) {
  big *b = big_alloc(c, a->n);
  memcpy(b->d, a->d, sizeof(uint32_t) * a->n);
  b->n = a->n;
  return b;
}

static int big_cmp(const big *a, const big *b) {
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (unsigned i = a->n; i-- > 0;)
    if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
  return 0;
}

static unsigned big_bits(const big *a) {
  if (a->n == 0) return 0;
  return 32u * (a->n - 1u) + (32u - (unsigned)__builtin_clz(a->d[a->n - 1]));
}

static big *big_add(ctx *c, const big *a, const big *b) {
  if (a->n < b->n) {
    const big *t = a;
    a = b;
    b = t;
  }
  big *r = big_alloc(c, a->n + 1u);
  uint64_t carry = 0;
  for (unsigned i = 0; i < a->n; i++) {
    uint64_t s = (uint64_t)a->d[i] + (i < b->n ? b->d[i] : 0) + carry;
    r->d[i] = (uint32_t)s;
    carry = s >> 32;
  }
  r->d[a->n] = (uint32_t)carry;
  r->n = (uint16_t)(a->n + 1u);
  big_trim(r);
  return r;
}

/* a - b, requires a >= b */
static big *big_sub(ctx *c, const big *a, const big *b) {
  if (big_cmp(a, b) < 0) corrupt("subtraction underflow (arithmetic check)", a);
  big *r = big_alloc(c, a->n);
  int64_t borrow = 0;
  for (unsigned i = 0; i < a->n; i++) {
    int64_t s = (int64_t)a->d[i] - (i < b->n ? (int64_t)b->d[i] : 0) - borrow;
    borrow = s < 0;
    r->d[i] = (uint32_t)s;
  }
  r->n = a->n;
  big_trim(r);
  return r;
}

static big *big_mul(ctx *c, const big *a, const big *b) {
  big *r = big_alloc(c, (unsigned)a->n + b->n);
  memset(r->d, 0, sizeof(uint32_t) * ((size_t)a->n + b->n));
  for (unsigned i = 0; i < a->n; i++) {
    uint64_t carry = 0;
    for (unsigned j = 0; j < b->n; j++) {
      uint64_t t = (uint64_t)a->d[i] * b->d[j] + r->d[i + j] + carry;
      r->d[i + j] = (uint32_t)t;
      carry = t >> 32;
    }
    r->d[i + b->n] = (uint32_t)carry;
  }
  r->n = (uint16_t)(a->n + b->n);
  big_trim(r);
  return r;
}

/* quotient a / w (allocated), remainder returned */
static uint32_t big_divmod_small(ctx *c, const big *a, uint32_t w, big **q) {
  big *r = big_alloc(c, a->n);
  uint64_t rem = 0;
  for (unsigned i = a->n; i-- > 0;) {
    uint64_t cur = (rem << 32) | a->d[i];
    r->d[i] = (uint32_t)(cur / w);
    rem = cur % w;
  }
  r->n = a->n;
  big_trim(r);
  *q = r;
  return (uint32_t)rem;
}

static big *big_shr1(ctx *c, const big *a) {
  big *r = big_alloc(c, a->n);
  for (unsigned i = 0; i < a->n; i++)
    r->d[i] = (a->d[i] >> 1) | (i + 1u < a->n ? a->d[i + 1] << 31 : 0);
  r->n = a->n;
  big_trim(r);
  return r;
}

static big *big_pow2(ctx *c, unsigned k) {
  big *r = big_alloc(c, k / 32 + 1);
  memset(r->d, 0, sizeof(uint32_t) * (k / 32 + 1));
  r->d[k / 32] = 1u << (k % 32);
  r->n = (uint16_t)(k / 32 + 1);
  return r;
}

/* q = a / b, r = a % b (both allocated); long division in base 2^32 (Knuth's algorithm D). */
static void big_divmod(ctx *c, const big *a, const big *b, big **q, big **r) {
  if (b->n == 0) corrupt("division by zero (arithmetic check)", b);
  if (big_cmp(a, b) < 0) {
    *q = big_alloc(c, 0);
    *r = big_copy(c, a);
    return;
  }
  if (b->n == 1) {
    uint32_t rem = big_divmod_small(c, a, b->d[0], q);
    *r = big_from_u64(c, rem);
    return;
  }
  unsigned n = b->n, m = a->n;
  unsigned s = (unsigned)__builtin_clz(b->d[n - 1]);
  /* normalized copies: the divisor's top bit set */
  big *vn = big_alloc(c, n);
  big *un = big_alloc(c, m + 1);
  for (unsigned i = n - 1; i > 0; i--)
    vn->d[i] = (b->d[i] << s) | (s ? b->d[i - 1] >> (32 - s) : 0);
  vn->d[0] = b->d[0] << s;
  un->d[m] = s ? a->d[m - 1] >> (32 - s) : 0;
  for (unsigned i = m - 1; i > 0; i--)
    un->d[i] = (a->d[i] << s) | (s ? a->d[i - 1] >> (32 - s) : 0);
  un->d[0] = a->d[0] << s;
  big *qq = big_alloc(c, m - n + 1);
  for (unsigned j = m - n + 1; j-- > 0;) {
    uint64_t num = ((uint64_t)un->d[j + n] << 32) | un->d[j + n - 1];
    uint64_t qhat = num / vn->d[n - 1], rhat = num % vn->d[n - 1];
    while (qhat >= (UINT64_C(1) << 32) ||
           qhat * vn->d[n - 2] > ((rhat << 32) | un->d[j + n - 2])) {
      qhat--;
      rhat += vn->d[n - 1];
      if (rhat >= (UINT64_C(1) << 32)) break;
    }
    /* multiply and subtract */
    uint64_t borrow = 0;
    for (unsigned i = 0; i < n; i++) {
      uint64_t p = qhat * vn->d[i];
      uint64_t sub = (p & 0xFFFFFFFFu) + borrow;
      uint64_t cur = un->d[i + j];
      un->d[i + j] = (uint32_t)(cur - sub);
      borrow = (p >> 32) + (sub > cur ? (sub - cur + 0xFFFFFFFFu) >> 32 : 0);
    }
    uint64_t top = un->d[j + n];
    int negative = top < borrow;
    un->d[j + n] = (uint32_t)(top - borrow);
    if (negative) { /* qhat was one too large: add the divisor back */
      qhat--;
      uint64_t carry = 0;
      for (unsigned i = 0; i < n; i++) {
        uint64_t t = (uint64_t)un->d[i + j] + vn->d[i] + carry;
        un->d[i + j] = (uint32_t)t;
        carry = t >> 32;
      }
      un->d[j + n] = (uint32_t)(un->d[j + n] + carry);
    }
    qq->d[j] = (uint32_t)qhat;
  }
  qq->n = (uint16_t)(m - n + 1);
  big_trim(qq);
  big *rr = big_alloc(c, n);
  for (unsigned i = 0; i < n; i++)
    rr->d[i] = (un->d[i] >> s) | (s && i + 1 < n ? un->d[i + 1] << (32 - s) : 0);
  rr->n = (uint16_t)n;
  big_trim(rr);
  big_free(un);
  big_free(vn);
  *q = qq;
  *r = rr;
}

static big *big_mod(ctx *c, const big *a, const big *m) {
  big *q, *r;
  big_divmod(c, a, m, &q, &r);
  big_free(q);
  return r;
}

/* floor(sqrt(a)) by Newton's iteration from a power of two above the root */
static big *big_isqrt(ctx *c, const big *a) {
  big *x = big_pow2(c, (big_bits(a) + 1) / 2 + 1);
  for (;;) {
    big *q, *r;
    big_divmod(c, a, x, &q, &r);
    big *s = big_add(c, x, q);
    big *y = big_shr1(c, s);
    big_free(q);
    big_free(r);
    big_free(s);
    if (big_cmp(y, x) >= 0) {
      big_free(y);
      return x;
    }
    big_free(x);
    x = y;
  }
}

static big *big_random(ctx *c, unsigned bits) {
  unsigned nd = (bits + 31) / 32;
  big *b = big_alloc(c, nd);
  for (unsigned i = 0; i < nd; i++) b->d[i] = (uint32_t)bench_rand(&c->rng);
  unsigned top = bits - 32 * (nd - 1); /* 1..32 bits in the top digit */
  if (top < 32) b->d[nd - 1] &= (1u << top) - 1;
  b->d[nd - 1] |= 1u << (top - 1);
  b->d[0] |= 1;
  b->n = (uint16_t)nd;
  return b;
}

static const uint32_t primes[] = {2,   3,   5,   7,   11,  13,  17,  19,  23,  29,  31,  37,
                                  41,  43,  47,  53,  59,  61,  67,  71,  73,  79,  83,  89,
                                  97,  101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151,
                                  157, 163, 167, 173, 179, 181, 191, 193, 197, 199};

/* expand sqrt(N) for `steps` steps */
static void expand(ctx *c, unsigned bits, uint64_t steps) {
  big *p = big_random(c, bits / 2), *q = big_random(c, bits - bits / 2);
  big *N = big_mul(c, p, q);
  big_free(p);
  big_free(q);
  big *a0 = big_isqrt(c, N);
  {
    big *sq = big_mul(c, a0, a0);
    if (big_cmp(sq, N) == 0) { /* perfect square: the expansion would end; perturb N */
      big *two = big_from_u64(c, 2), *n2 = big_add(c, N, two);
      big_free(two);
      big_free(N);
      N = n2;
    }
    big_free(sq);
  }
  big *m = big_alloc(c, 0), *Q = big_from_u64(c, 1), *a = big_copy(c, a0);
  big *Aprev = big_from_u64(c, 1), *A = big_mod(c, a0, N);
  for (uint64_t k = 1; k <= steps; k++) {
    /* m' = Q a - m;  Q' = (N - m'^2) / Q (exact);  a' = (a0 + m') / Q' */
    big *t1 = big_mul(c, Q, a);
    big *mn = big_sub(c, t1, m);
    big_free(t1);
    big_free(m);
    m = mn;
    big *t2 = big_mul(c, m, m);
    big *t3 = big_sub(c, N, t2);
    big *Qn, *rem;
    big_divmod(c, t3, Q, &Qn, &rem);
    if (rem->n != 0) corrupt("continued fraction: Q does not divide N - m^2", rem);
    big_free(rem);
    big_free(t2);
    big_free(t3);
    big_free(Q);
    Q = Qn;
    big *t4 = big_add(c, a0, m);
    big *an;
    big_divmod(c, t4, Q, &an, &rem);
    big_free(rem);
    big_free(t4);
    big_free(a);
    a = an;
    /* A(k-1)^2 mod N must be Q(k) for even k and N - Q(k) for odd k */
    big *sq = big_mul(c, A, A);
    big *sr = big_mod(c, sq, N);
    big *want = (k & 1) ? big_sub(c, N, Q) : big_copy(c, Q);
    if (big_cmp(sr, want) != 0) corrupt("continued fraction identity A^2 = +-Q (mod N)", sr);
    big_free(want);
    big_free(sr);
    big_free(sq);
    /* trial division of Q over the factor base */
    big *f = big_copy(c, Q);
    for (size_t i = 0; i < sizeof primes / sizeof primes[0]; i++) {
      for (;;) {
        big *fq;
        uint32_t r = big_divmod_small(c, f, primes[i], &fq);
        if (r != 0) {
          big_free(fq);
          break;
        }
        big_free(f);
        f = fq;
      }
    }
    if (f->n == 1 && f->d[0] == 1) c->smooth++;
    big_free(f);
    /* A(k) = a(k) A(k-1) + A(k-2) mod N */
    big *t5 = big_mul(c, a, A);
    big *t6 = big_add(c, t5, Aprev);
    big *An = big_mod(c, t6, N);
    big_free(t5);
    big_free(t6);
    big_free(Aprev);
    Aprev = A;
    A = An;
    c->check = (c->check ^ (a->n ? a->d[0] : 0) ^ ((uint64_t)(A->n ? A->d[0] : 0) << 32)) *
               UINT64_C(0x100000001B3);
    c->steps++;
  }
  big_free(m);
  big_free(Q);
  big_free(a);
  big_free(a0);
  big_free(A);
  big_free(Aprev);
  big_free(N);
}

typedef struct job {
  ctx c;
  uint64_t steps;
} job;

static void *run(void *arg) {
  job *j = arg;
  static const unsigned sizes[] = {64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768};
  uint64_t done = 0;
  while (done < j->steps) {
    uint64_t n = j->steps - done < STEPS_PER_N ? j->steps - done : STEPS_PER_N;
    unsigned bits = sizes[bench_index(bench_rand(&j->c.rng), sizeof sizes / sizeof sizes[0])];
    expand(&j->c, bits, n);
    done += n;
  }
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: cfrac [-n STEPS (400000)] [-t THREADS (1)] [-s SEED (1)] [-q]\n");
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long steps = 400000, threads = 1, seed = 1;
  int quick = 0, nset = 0, opt;
  while ((opt = getopt(argc, argv, "n:t:s:qh")) != -1) {
    switch (opt) {
      case 'n': steps = bench_arg(optarg, "steps"); nset = 1; break;
      case 't': threads = bench_arg(optarg, "threads"); break;
      case 's': seed = bench_arg(optarg, "seed"); break;
      case 'q': quick = 1; break;
      default: usage();
    }
  }
  if (optind != argc) usage();
  if (threads > 256) threads = 256;
  if (quick && !nset) steps = 15000;

  job *jobs = calloc((size_t)threads, sizeof *jobs);
  if (jobs == NULL) return 1;
  for (unsigned long long i = 0; i < threads; i++) {
    jobs[i].c.rng = seed + i;
    jobs[i].steps = steps;
  }
  double t0 = bench_now();
  wl_run_jobs(jobs, sizeof *jobs, (size_t)threads, run, "cfrac");
  double secs = bench_now() - t0;
  uint64_t ops = 0, check = 0;
  for (unsigned long long i = 0; i < threads; i++) {
    ops += jobs[i].c.allocs;
    check = (check * 31) ^ jobs[i].c.check ^ jobs[i].c.smooth;
  }
  free(jobs);
  printf("RESULT workload=cfrac threads=%llu ops=%llu elapsed_s=%.6f checksum=%016llx", threads,
         (unsigned long long)ops, secs, (unsigned long long)check);
  bench_print_origin();
  return 0;
}
