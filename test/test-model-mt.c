/* SPDX-License-Identifier: MIT */
/* test-model-mt.c -- the multi-threaded model fuzzer: random operations on several threads that
   hand blocks to each other, checked against a shadow model.

   Several worker positions (default 4) each run a stream of operations. A position's thread
   ends when its stream says so (an `end` operation, about one step in 200, or the end of the
   stream) and the main thread joins it and starts a new thread that continues the same stream,
   so threads end with blocks alive all the time. Each block is described by a record (`blk_t`):
   its address, requested size, alignment and offset, whether its bytes beyond the requested
   size are still zero, an id, and its tag: the thread and heap it was allocated from. A record
   lives in exactly one place: a thread's slots, the shared exchange, the orphans (the blocks a
   thread left behind when it ended) or the bag (blocks given away in bulk); only its holder
   touches the block.

   The operations: mi_malloc, mi_calloc, mi_zalloc, mi_malloc_aligned(_at) and
   mi_zalloc_aligned (alignments up to 8 MiB), huge blocks (2-12 MiB), mi_realloc, mi_reallocn
   (with overflowing counts), mi_rezalloc, mi_realloc_aligned(_at), mi_expand, growing a block to
   its mi_usable_size, mi_free; first-class heaps (mi_heap_new, mi_heap_malloc & co.,
   mi_heap_realloc/rezalloc, mi_heap_destroy, mi_heap_delete, mi_heap_collect: each heap only
   from its owning thread); mi_collect(true/false); and the cross-thread ones: swap a local block
   with a slot of the exchange, take a block from the exchange and free or reallocate it, take an
   orphan and free or reallocate it; and in bulk (16-256 blocks of one size, so pages fill up and
   foreign frees meet full pages, and ended threads leave pages with many blocks): allocate,
   free, give to the bag, take from the bag and free or keep; visiting the blocks of a heap of
   the thread (mi_heap_visit_blocks, mi_heap_check_owned) and of the abandoned pages
   (mi_abandoned_visit_blocks) while other threads free and reclaim.

   Checked: every allocation is non-NULL, aligned (p + offset), in the heap region, with usable
   size >= requested, zero where it must be, and overlapping no other live block (a set of
   address ranges, [p, p + usable size), sharded by 64 KiB chunk); a block's contents (a pattern
   from its id and size) are checked completely before every free and reallocation, where the
   block changes hands (sampled), and at the end; a reallocation keeps the old contents; blocks
   the owner holds are in their heap (mi_heap_contains_block) and not in its other heaps. A heap
   is destroyed only when none of its blocks is held by another thread (its blocks given away
   are counted, the count taken back when the block is freed or moved); otherwise it is deleted.
   At the end the main thread frees what is left and the range set must be empty.

   Determinism: the operations a position attempts (kind, slot, and the random values that pick
   size, alignment and flags) are a function of the seed (or the fuzz input) and the position's
   index only, whatever the threads' interleaving; the blocks a thread finds in the exchange,
   the bag and among the orphans, and so the outcome of the cross-thread operations (and a few
   sizes: a huge block's growth, the memory budget), depend on the interleaving. With
   --threads 1 a run is fully deterministic.

   Every error the allocator reports (mi_register_error) fails the test, except the overflow
   that mi_reallocn with an overflowing count must report; debug and secure builds print those
   expected ones ("allocation request is too large").

   Usage:
     test-model-mt [--seed S] [--threads T] [--steps N]   one round (default seed 1, 4 threads,
                                                          20000 steps per position)
     test-model-mt --seconds N [--threads T] [--steps N]  rounds with random seeds for N seconds
   Every round prints its seed; a failure prints the command line that replays it.

   Built with -DMI_FUZZ it instead provides LLVMFuzzerTestOneInput() (libFuzzer): the first byte
   of the input picks 2-4 threads, the rest is split into one stream per position, and the first
   failed check aborts. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if !defined(_WIN32)
#include <signal.h>
#include <unistd.h>
#endif

#include "mimalloc.h"
#ifdef MI_FUZZ
#define TEST_ABORT_ON_FAILURE 1
#endif
#include "testing.h"
#include "rss-guard.h"

#define KiB ((size_t)1024)
#define MiB (KiB * KiB)

enum {
  MAX_THREADS = 16,
  LOCAL_SLOTS = 64,   /* blocks a thread holds for the single-block operations */
  BULK_SLOTS = 512,   /* and for the bulk ones: enough blocks of one size to fill pages */
  HELD = LOCAL_SLOTS + BULK_SLOTS,
  XCHG_SLOTS = 64,    /* the exchange: few slots, so blocks change hands often */
  BAG_CAP = 2048,     /* the bag: blocks given away in bulk */
  MAX_ORPHANS = 4096, /* blocks of ended threads; beyond it the ending thread frees them */
  MAX_HEAPS = 4,      /* first-class heaps per thread at a time */
  MAX_HEAPRECS = 1 << 14,
};
/* bound on the live requested bytes of a round; an allocation that would exceed it is cut down */
#if TEST_SANITIZED
#define BUDGET (96 * MiB)
#else
#define BUDGET (192 * MiB)
#endif

/* ---------------------------------------------------------------------------------------------
   Records, heaps, the exchange and the orphans
--------------------------------------------------------------------------------------------- */

typedef struct blk_s {
  uint8_t* p;
  size_t size;       /* requested: bytes [0,size) hold the pattern of (id, size) */
  size_t align;      /* p + offset is a multiple of align */
  size_t offset;
  uintptr_t span_hi; /* the end of the range registered in the range set */
  uint64_t id;
  uint32_t owner;    /* the thread (serial) whose heap the block is in */
  int heap;          /* 0: that thread's backing heap; else an index into heaprecs[] */
  bool zeroed;       /* allocated zeroed, only grown by zeroing reallocs: [size, usable) is zero */
  bool counted_out;  /* counted in heaprecs[heap].out (a block of a live heap away from its owner) */
} blk_t;

typedef struct heaprec_s {
  mi_heap_t* heap;   /* touched by the owner only */
  bool live;
  bool private_;     /* its blocks never leave the owner: may always be destroyed */
  atomic_long out;   /* blocks of this heap held by other threads (or in the exchange) */
} heaprec_t;

static heaprec_t heaprecs[MAX_HEAPRECS];
static atomic_int heaprec_next;
static _Atomic(blk_t*) xchg[XCHG_SLOTS];
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static blk_t* orphans[MAX_ORPHANS];
static size_t orphan_count;
static pthread_mutex_t bag_lock = PTHREAD_MUTEX_INITIALIZER;
static blk_t* bag[BAG_CAP];
static size_t bag_count;
static atomic_size_t live_bytes;
static atomic_bool failed;

/* the live requested bytes: for the budget, and for the RSS guard (rss-guard.h) */
static void live_add(size_t n) { atomic_fetch_add(&live_bytes, n); test_live_add(n); }
static void live_sub(size_t n) { atomic_fetch_sub(&live_bytes, n); test_live_sub(n); }

/* ---------------------------------------------------------------------------------------------
   The operations: names and weights (out of their sum)
--------------------------------------------------------------------------------------------- */

#define OPS(X) \
  X(MALLOC, 20) X(CALLOC, 8) X(ZALLOC, 4) X(ALIGNED, 10) X(HUGE, 1) X(REALLOC, 14) X(REALLOCN, 5) \
  X(REZALLOC, 4) X(REALLOC_ALIGNED, 6) X(EXPAND, 4) X(USABLE, 3) X(FREE, 24) X(HEAP_NEW, 3) \
  X(HEAP_MALLOC, 12) X(HEAP_REALLOC, 5) X(HEAP_END, 3) X(COLLECT, 2) X(CHECK, 4) X(SWAP, 30) \
  X(XFREE, 20) X(XREALLOC, 10) X(ORPHAN, 8) X(BULK_ALLOC, 1) X(BULK_GIVE, 1) X(BULK_TAKE, 1) X(BULK_FREE, 1) \
  X(VISIT, 1) X(END, 1)
#define OP_ENUM(name, w) OP_##name,
#define OP_NAME(name, w) #name,
#define OP_WEIGHT(name, w) w,
enum { OPS(OP_ENUM) OP_COUNT };
static const char* const op_names[OP_COUNT] = { OPS(OP_NAME) };
static const int op_weights[OP_COUNT] = { OPS(OP_WEIGHT) };
static int op_total;
static atomic_long op_counts[OP_COUNT];
static atomic_long stat_threads, stat_foreign_frees, stat_destroys, stat_deletes, stat_allocs;

/* ---------------------------------------------------------------------------------------------
   Streams: where a position's operations come from
--------------------------------------------------------------------------------------------- */

typedef struct stream_s {
  test_rng_t rng;      /* random mode */
  long steps_left;
  const uint8_t* data; /* fuzz mode: the bytes of this position */
  size_t len, pos;
} stream_t;

static uint64_t draw(stream_t* s) {
  if (s->data == NULL) return test_rand(&s->rng);
  uint64_t v = 0;
  for (int k = 0; k < 8; k++) v = (v << 8) | (s->pos < s->len ? s->data[s->pos++] : 0);
  return v;
}
static bool stream_done(const stream_t* s) { return s->data != NULL ? s->pos >= s->len : s->steps_left <= 0; }

/* ---------------------------------------------------------------------------------------------
   Workers
--------------------------------------------------------------------------------------------- */

typedef struct worker_s {
  int pos;
  stream_t stream;
  long gen;            /* threads this position has run */
  long step;           /* steps done by this position */
  uint32_t serial;     /* (pos + 1) << 20 | gen: the owner tag of this thread's blocks */
  uint64_t next_id;
  const char* op;
  int expect_error;    /* the error the allocator is to report now (the error handler checks) */
  blk_t* local[HELD];    /* [0, LOCAL_SLOTS): single-block operations; the rest: bulk ones */
  int heaps[MAX_HEAPS]; /* heaprec indices, 0: none */
  pthread_t thread;
  bool running;
  atomic_bool done;
} worker_t;

static worker_t workers[MAX_THREADS];
static _Thread_local worker_t* W; /* this thread's worker; NULL on the main thread */

#define MCHECK(cond, ...) \
  do { test_count_(); if (!(cond)) { \
    atomic_store(&failed, true); \
    if (W != NULL) test_fail_(__FILE__, __LINE__, #cond, "position %d, thread %ld, step %ld, op %s", W->pos, W->gen, W->step, W->op); \
    else test_fail_(__FILE__, __LINE__, #cond, "main thread, at the end"); \
    fprintf(stderr, "    "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

/* Every error the allocator reports (mi_register_error) is a failure, but the one expected. */
static void on_error(int err, void* arg) {
  (void)arg;
  if (W != NULL && err == W->expect_error) return;
  MCHECK(false, "the allocator reported error %d (%s; its message is above)", err,
         err == EFAULT ? "EFAULT: corrupted metadata" : err == EINVAL ? "EINVAL" : err == ENOMEM ? "ENOMEM" : err == EOVERFLOW ? "EOVERFLOW" : "?");
  if (err == EFAULT) abort(); /* the heap is corrupted: do not go on */
}

/* ---------------------------------------------------------------------------------------------
   Block contents: 64-bit words from a seed of (id, size)
--------------------------------------------------------------------------------------------- */

static uint64_t pat_seed(const blk_t* b) { return test_mix64(b->id * 0x9E3779B97F4A7C15ULL ^ (uint64_t)b->size); }
static uint64_t pat_word(uint64_t seed, size_t i) { return seed ^ ((uint64_t)i * 0xD6E8FEB86659FD93ULL); }

static void fill(uint8_t* p, size_t n, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) { uint64_t w = pat_word(seed, i); memcpy(p + i, &w, 8); }
  if (i < n) { uint64_t w = pat_word(seed, i); memcpy(p + i, &w, n - i); }
}

/* the first byte in [from, to) (from a multiple of 8) that differs from the pattern, or to */
static size_t first_bad(const uint8_t* p, size_t from, size_t to, uint64_t seed) {
  size_t i = from;
  for (; i + 8 <= to; i += 8) {
    uint64_t w = pat_word(seed, i), v;
    memcpy(&v, p + i, 8);
    if (v != w) break;
  }
  if (i < to) { /* the bad word, or the last bytes */
    uint64_t w = pat_word(seed, i);
    for (size_t k = 0; i + k < to && k < 8; k++) if (p[i + k] != ((const uint8_t*)&w)[k]) return i + k;
  }
  return to;
}

static size_t first_nonzero(const uint8_t* p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) if (p[i] != 0) return i;
  return to;
}

/* ---------------------------------------------------------------------------------------------
   The range set: no two live blocks overlap. Every block's [p, p + usable) is registered in the
   shard of each 64 KiB chunk it touches; a shard is a sorted array of disjoint ranges under its
   own lock. Two overlapping ranges share a chunk, so whichever is registered second finds the
   first. A range is removed before its block is freed, so an address handed out again is never
   seen twice. (The locks order the threads that touch the same chunks; the sharding keeps that
   to the threads that share segments anyway.)
--------------------------------------------------------------------------------------------- */

enum { SHARDS = 1024, CHUNK_SHIFT = 16 };
typedef struct span_s { uintptr_t lo, hi; } span_t;
typedef struct shard_s { pthread_mutex_t lock; size_t n, cap; span_t* s; } shard_t;
static shard_t shards[SHARDS];

/* index of the first range that ends after lo */
static size_t shard_find(const shard_t* sh, uintptr_t lo) {
  size_t a = 0, b = sh->n;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (sh->s[m].hi <= lo) a = m + 1;
    else b = m;
  }
  return a;
}

static void for_chunks(uintptr_t lo, uintptr_t hi, void (*f)(shard_t*, uintptr_t, uintptr_t)) {
  uintptr_t c0 = lo >> CHUNK_SHIFT, c1 = (hi - 1) >> CHUNK_SHIFT;
  if (c1 - c0 >= SHARDS) c1 = c0 + SHARDS - 1; /* (blocks over 64 MiB: every shard once) */
  for (uintptr_t c = c0; c <= c1; c++) f(&shards[c % SHARDS], lo, hi);
}

static void shard_insert(shard_t* sh, uintptr_t lo, uintptr_t hi) {
  pthread_mutex_lock(&sh->lock);
  size_t i = shard_find(sh, lo);
  bool overlap = (i < sh->n && sh->s[i].lo < hi);
  MCHECK(!overlap, "block [%p, %p) overlaps the live block [%p, %p)", (void*)lo, (void*)hi, (void*)(overlap ? sh->s[i].lo : 0),
         (void*)(overlap ? sh->s[i].hi : 0));
  if (!overlap && sh->n == sh->cap) {
    sh->cap = (sh->cap == 0 ? 64 : 2 * sh->cap);
    sh->s = (span_t*)realloc(sh->s, sh->cap * sizeof(span_t));
    if (sh->s == NULL) { fprintf(stderr, "test-model-mt: out of memory for the range set\n"); abort(); }
  }
  if (!overlap) {
    memmove(&sh->s[i + 1], &sh->s[i], (sh->n - i) * sizeof(span_t));
    sh->s[i] = (span_t){ lo, hi };
    sh->n++;
  }
  pthread_mutex_unlock(&sh->lock);
}

static void shard_remove(shard_t* sh, uintptr_t lo, uintptr_t hi) {
  pthread_mutex_lock(&sh->lock);
  size_t i = shard_find(sh, lo);
  bool found = (i < sh->n && sh->s[i].lo == lo && sh->s[i].hi == hi);
  MCHECK(found, "block [%p, %p) is not in the range set", (void*)lo, (void*)hi);
  if (found) {
    memmove(&sh->s[i], &sh->s[i + 1], (sh->n - i - 1) * sizeof(span_t));
    sh->n--;
  }
  pthread_mutex_unlock(&sh->lock);
}

static void span_add(blk_t* b) {
  size_t us = mi_usable_size(b->p);
  b->span_hi = (uintptr_t)b->p + (us > 0 ? us : 1);
  for_chunks((uintptr_t)b->p, b->span_hi, &shard_insert);
}
static void span_remove(blk_t* b) { for_chunks((uintptr_t)b->p, b->span_hi, &shard_remove); }

/* ---------------------------------------------------------------------------------------------
   Checks
--------------------------------------------------------------------------------------------- */

static bool my_heap_live(int h) { return h != 0 && heaprecs[h].live; }

/* Which heap of this thread holds the block, as far as the model knows: -1 none of ours (or
   unknown), 0 the backing heap, else a heaprec index. */
static int my_heap_of(const blk_t* b) {
  if (W == NULL || b->owner != W->serial) return -1;
  if (b->heap == 0 || !heaprecs[b->heap].live) return 0; /* deleted heaps moved into the backing heap */
  return b->heap;
}

static void check_block(const blk_t* b, bool full, const char* when) {
  size_t us = mi_usable_size(b->p);
  MCHECK(us >= b->size, "%s: block %p: usable size %zu < requested %zu", when, (void*)b->p, us, b->size);
  MCHECK(((uintptr_t)b->p + b->offset) % b->align == 0, "%s: block %p + %zu not aligned to %zu", when, (void*)b->p, b->offset,
         b->align);
  MCHECK(mi_is_in_heap_region(b->p), "%s: block %p not in the heap region", when, (void*)b->p);
  int h = my_heap_of(b);
  if (h >= 0) {
    mi_heap_t* hp = (h == 0 ? mi_heap_get_backing() : heaprecs[h].heap);
    MCHECK(mi_heap_contains_block(hp, b->p), "%s: block %p not in its heap (%s)", when, (void*)b->p, h == 0 ? "backing" : "first-class");
    for (int k = 0; k < MAX_HEAPS; k++) {
      int o = W->heaps[k];
      if (o != 0 && o != h) MCHECK(!mi_heap_contains_block(heaprecs[o].heap, b->p), "%s: block %p also in another heap of its thread", when, (void*)b->p);
    }
  }
  uint64_t seed = pat_seed(b);
  size_t bad;
  if (full || b->size <= 192) bad = first_bad(b->p, 0, b->size, seed);
  else { /* the first and last 64 bytes and 64 at a varying place */
    size_t mid = (size_t)(test_mix64(b->id + (uint64_t)(W ? W->step : 0)) % (b->size - 64)) & ~(size_t)7;
    const size_t window[3][2] = { { 0, 64 }, { mid, mid + 64 }, { (b->size - 64) & ~(size_t)7, b->size } };
    bad = b->size;
    for (int k = 0; k < 3 && bad == b->size; k++) {
      size_t x = first_bad(b->p, window[k][0], window[k][1], seed);
      if (x != window[k][1]) bad = x;
    }
  }
  MCHECK(bad == b->size, "%s: contents of block %p (size %zu, id %llx) differ at byte %zu", when, (void*)b->p, b->size,
         (unsigned long long)b->id, bad);
}

/* ---------------------------------------------------------------------------------------------
   Block life cycle
--------------------------------------------------------------------------------------------- */

static size_t within_budget(size_t size) {
  if (atomic_load_explicit(&live_bytes, memory_order_relaxed) + size > BUDGET) size %= 4096;
  return size;
}

/* A fresh block: checks it, registers it, fills it. Returns the record or NULL. */
static blk_t* adopt(void* p, size_t size, size_t align, size_t offset, bool zero, int heap, const char* what) {
  MCHECK(p != NULL, "%s of %zu bytes (alignment %zu, offset %zu) failed", what, size, align, offset);
  if (p == NULL) return NULL;
  blk_t* b = (blk_t*)calloc(1, sizeof(blk_t));
  if (b == NULL) { fprintf(stderr, "test-model-mt: out of memory for records\n"); abort(); }
  *b = (blk_t){ .p = (uint8_t*)p, .size = size, .align = align, .offset = offset, .zeroed = zero, .heap = heap,
                .owner = W->serial, .id = ((uint64_t)(W->pos + 1) << 48) | ++W->next_id };
  if (zero) {
    size_t nz = first_nonzero(b->p, 0, size);
    MCHECK(nz == size, "%s: zeroed block %p of size %zu has a non-zero byte at %zu", what, p, size, nz);
  }
  span_add(b);
  fill(b->p, size, pat_seed(b));
  live_add(size);
  atomic_fetch_add_explicit(&stat_allocs, 1, memory_order_relaxed);
  check_block(b, true, what);
  return b;
}

static size_t plain_align(size_t size) { return size >= 16 ? 16 : 8; }

/* the block is no longer away from its owner (freed, moved, or back with the owner) */
static void uncount_out(blk_t* b) {
  if (!b->counted_out) return;
  b->counted_out = false;
  atomic_fetch_sub_explicit(&heaprecs[b->heap].out, 1, memory_order_release);
}

static void release(blk_t* b) {
  if (b == NULL) return;
  check_block(b, true, "before free");
  span_remove(b);
  if (W != NULL && b->owner != W->serial) atomic_fetch_add_explicit(&stat_foreign_frees, 1, memory_order_relaxed);
  if (!test_rss_leak()) mi_free(b->p);   /* (MI_TEST_RSS_LEAK=1: leaked, counted as freed) */
  uncount_out(b);
  live_sub(b->size);
  free(b);
}

/* Resizes b with resize(p) (a realloc-like call). align == 0: a plain realloc (a moved block is
   a fresh malloc block, an unmoved one keeps its alignment). heap_if_moved: the heap of this
   thread a moved block comes from. may_fail: NULL is the right answer (p is unchanged). */
typedef void* (*resize_fn)(void* p, size_t size, size_t align, size_t offset, void* arg);
static void resize(blk_t* b, size_t newsize, size_t align, size_t offset, bool zeroing, int heap_if_moved, bool may_fail,
                   resize_fn fn, void* arg, const char* what) {
  check_block(b, true, "before resize");
  span_remove(b);
  uint64_t oldseed = pat_seed(b);
  void* q = fn(b->p, newsize, align, offset, arg);
  if (q == NULL || may_fail) {
    MCHECK(q == NULL || !may_fail, "%s must fail but returned %p", what, q);
    MCHECK(q != NULL || may_fail, "%s of %p from %zu to %zu bytes failed", what, (void*)b->p, b->size, newsize);
    if (q == NULL) { span_add(b); check_block(b, true, "after a failed resize"); return; }
  }
  uint8_t* nq = (uint8_t*)q;
  size_t keep = (b->size < newsize ? b->size : newsize);
  size_t bad = first_bad(nq, 0, keep, oldseed);
  MCHECK(bad == keep, "%s %zu -> %zu (%p -> %p) lost contents at byte %zu", what, b->size, newsize, (void*)b->p, q, bad);
  if (zeroing && b->zeroed && newsize > b->size) {
    size_t nz = first_nonzero(nq, b->size, newsize);
    MCHECK(nz == newsize, "zeroing %s %zu -> %zu: byte %zu is not zero", what, b->size, newsize, nz);
  }
  if (nq != b->p) {
    uncount_out(b);
    b->owner = W->serial;
    b->heap = heap_if_moved;
  }
  if (align == 0) {
    if (nq != b->p) { align = plain_align(newsize); offset = 0; }
    else { align = b->align; offset = b->offset; }
  }
  b->zeroed = zeroing && b->zeroed && newsize >= b->size; /* a shrink leaves old bytes beyond the size */
  live_add(newsize);
  live_sub(b->size);
  b->p = nq;
  b->size = newsize;
  b->align = align;
  b->offset = offset;
  span_add(b);
  fill(b->p, newsize, pat_seed(b));
  check_block(b, true, what);
}

static void* do_realloc(void* p, size_t n, size_t a, size_t o, void* arg) { (void)a; (void)o; (void)arg; return mi_realloc(p, n); }
static void* do_rezalloc(void* p, size_t n, size_t a, size_t o, void* arg) { (void)a; (void)o; (void)arg; return mi_rezalloc(p, n); }
static void* do_reallocn(void* p, size_t n, size_t a, size_t o, void* arg) {
  (void)a; (void)o;
  size_t count = (size_t)(uintptr_t)arg; /* n is a multiple of it */
  return mi_reallocn(p, count, n / count);
}
static void* do_reallocn_overflow(void* p, size_t n, size_t a, size_t o, void* arg) {
  (void)n; (void)a; (void)o;
  size_t m = (size_t)(uintptr_t)arg; /* 2 .. 9: m * (SIZE_MAX / m + 1) overflows */
  errno = 0;
  W->expect_error = EOVERFLOW;
  void* q = mi_reallocn(p, SIZE_MAX / m + 1, m);
  W->expect_error = 0;
  MCHECK(q != NULL || errno == ENOMEM, "mi_reallocn overflow: errno %d, not ENOMEM", errno);
  return q;
}
static void* do_realloc_aligned(void* p, size_t n, size_t a, size_t o, void* arg) {
  (void)arg;
  return o == 0 ? mi_realloc_aligned(p, n, a) : mi_realloc_aligned_at(p, n, a, o);
}
static void* do_heap_realloc(void* p, size_t n, size_t a, size_t o, void* arg) { (void)a; (void)o; return mi_heap_realloc((mi_heap_t*)arg, p, n); }
static void* do_heap_rezalloc(void* p, size_t n, size_t a, size_t o, void* arg) { (void)a; (void)o; return mi_heap_rezalloc((mi_heap_t*)arg, p, n); }

/* a record arriving at this thread (from the exchange or the orphans) */
static void arrive(blk_t* b, const char* when) {
  if (b->owner == W->serial) uncount_out(b); /* back with its owner */
  check_block(b, false, when);
}

/* ---------------------------------------------------------------------------------------------
   Decoding: every step draws two words, whatever it does, so the sequence of operations does
   not depend on the state
--------------------------------------------------------------------------------------------- */

static size_t decode_size(uint64_t r) {
  unsigned c = (unsigned)(r & 0xff);
  uint64_t v = r >> 8;
  size_t size;
  if (c < 160) size = v % 257;                                 /* 0 .. 256 */
  else if (c < 216) size = 257 + v % (4 * KiB);                /* .. 4 KiB */
  else if (c < 244) size = 4 * KiB + v % (60 * KiB);           /* .. 64 KiB */
  else if (c < 254) size = 64 * KiB + v % (448 * KiB);         /* .. 512 KiB */
  else size = 512 * KiB + v % (1536 * KiB);                    /* .. 2 MiB */
  return within_budget(size);
}

static size_t decode_huge(uint64_t r) { return within_budget(2 * MiB + (size_t)((r >> 8) % (10 * MiB))); }

/* the new size of a resize: sometimes a huge block grows (in place where its segment can) */
static size_t decode_resize(const blk_t* b, uint64_t r, uint64_t bits) {
  if (b != NULL && b->size >= 1 * MiB && ((bits >> 60) & 1) == 0) return within_budget(b->size + 1 + (size_t)((r >> 8) % (4 * MiB)));
  return decode_size(r);
}

static size_t decode_align(uint64_t bits) {
  if ((bits & 63) == 0) return (size_t)1 << (16 + (bits >> 6) % 8); /* 64 KiB .. 8 MiB */
  return (size_t)1 << ((bits >> 6) % 13);                          /* 1 .. 4 KiB */
}

static size_t decode_offset(uint64_t bits, size_t align) {
  if ((bits & 3) != 0) return 0;
  return (size_t)(((bits >> 2) % 256) * 8) % (2 * align + 8); /* up to 2040: never just below a 4 MiB multiple */
}

static int pick_op(uint64_t r) {
  int x = (int)(r % (uint64_t)op_total);
  for (int k = 0; k < OP_COUNT; k++) {
    if (x < op_weights[k]) return k;
    x -= op_weights[k];
  }
  return OP_COUNT - 1;
}

/* ---------------------------------------------------------------------------------------------
   Heaps
--------------------------------------------------------------------------------------------- */

static void heap_end(int k, bool want_destroy) {
  int h = W->heaps[k];
  if (h == 0) return;
  heaprec_t* hr = &heaprecs[h];
  bool destroy = want_destroy && (hr->private_ || atomic_load_explicit(&hr->out, memory_order_acquire) == 0);
  for (int i = 0; i < HELD; i++) {
    blk_t* b = W->local[i];
    if (b == NULL || b->owner != W->serial || b->heap != h) continue;
    if (destroy) { /* freed by the destroy */
      check_block(b, true, "before heap destroy");
      span_remove(b);
      live_sub(b->size);
      free(b);
      W->local[i] = NULL;
    }
    else b->heap = 0; /* moved into the backing heap */
  }
  if (destroy) { mi_heap_destroy(hr->heap); atomic_fetch_add_explicit(&stat_destroys, 1, memory_order_relaxed); }
  else { mi_heap_delete(hr->heap); atomic_fetch_add_explicit(&stat_deletes, 1, memory_order_relaxed); }
  hr->live = false;
  hr->heap = NULL;
  W->heaps[k] = 0;
}

static bool is_private(const blk_t* b) { return b != NULL && b->owner == W->serial && my_heap_live(b->heap) && heaprecs[b->heap].private_; }

/* ---------------------------------------------------------------------------------------------
   Visiting heaps: every block the owner holds of a heap is among its visited blocks (others may
   be freed by other threads meanwhile: the visit may report more); abandoned pages are visited
   while other threads free into them and reclaim them
--------------------------------------------------------------------------------------------- */

/* The visitors must not allocate (mimalloc.h: the abandoned visit holds the abandoned lock; a
   heap's visit walks the pages an allocation would change): a buffer allocated before. */
enum { VISIT_CAP = 1 << 16 };
typedef struct visited_s { size_t n; span_t* v; long areas; bool bad_area, overflow; uintptr_t outside; } visited_t;

static bool visit_collect(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap;
  visited_t* vs = (visited_t*)arg;
  if (block == NULL) { /* the area: its counts must be sane */
    vs->areas++;
    if (area->full_block_size == 0 || area->used * area->full_block_size > area->committed || area->committed > area->reserved ||
        area->block_size > area->full_block_size) vs->bad_area = true;
    return true;
  }
  /* checked here: once the abandoned lock is released, the block may be freed and its segment gone */
  if (!mi_is_in_heap_region(block) && vs->outside == 0) vs->outside = (uintptr_t)block;
  if (vs->n == VISIT_CAP) { vs->overflow = true; return true; }
  vs->v[vs->n++] = (span_t){ (uintptr_t)block, (uintptr_t)block + block_size };
  return true;
}

static int span_cmp(const void* a, const void* b) {
  uintptr_t x = ((const span_t*)a)->lo, y = ((const span_t*)b)->lo;
  return (x > y) - (x < y);
}

static void visit(int h, bool abandoned) {
  visited_t vs = { 0 };
  vs.v = (span_t*)malloc(VISIT_CAP * sizeof(span_t));
  if (vs.v == NULL) { fprintf(stderr, "test-model-mt: out of memory for a visit\n"); abort(); }
  if (abandoned) {
    bool ok = mi_abandoned_visit_blocks(mi_subproc_main(), -1, true, &visit_collect, &vs);
    MCHECK(ok, "mi_abandoned_visit_blocks failed");
  }
  else {
    mi_heap_t* hp = (h == 0 ? mi_heap_get_backing() : heaprecs[h].heap);
    bool ok = mi_heap_visit_blocks(hp, true, &visit_collect, &vs);
    MCHECK(ok, "mi_heap_visit_blocks failed");
    qsort(vs.v, vs.n, sizeof(span_t), &span_cmp);
    for (int i = 0; i < HELD && !vs.overflow; i++) {
      const blk_t* b = W->local[i];
      if (b == NULL || my_heap_of(b) != h) continue;
      size_t a = 0, z = vs.n; /* the last visited block starting at or before p */
      while (a < z) { size_t m = (a + z) / 2; if (vs.v[m].lo <= (uintptr_t)b->p) a = m + 1; else z = m; }
      bool found = (a > 0 && (uintptr_t)b->p + b->size <= vs.v[a - 1].hi);
      MCHECK(found, "block %p (size %zu) of the visited heap (%s) is not among its %zu visited blocks", (void*)b->p, b->size,
             h == 0 ? "backing" : "first-class", vs.n);
      if (((uintptr_t)b->p & 7) == 0) MCHECK(mi_heap_check_owned(hp, b->p), "mi_heap_check_owned: block %p not owned by its heap", (void*)b->p);
    }
  }
  MCHECK(!vs.bad_area, "a visited area has inconsistent counts");
  MCHECK(vs.outside == 0, "%s visit: block %p not in the heap region", abandoned ? "abandoned" : "heap", (void*)vs.outside);
  free(vs.v);
}

/* ---------------------------------------------------------------------------------------------
   One step
--------------------------------------------------------------------------------------------- */

/* Returns false when the thread is to end. */
static bool step(void) {
  uint64_t r1 = draw(&W->stream), r2 = draw(&W->stream);
  if (W->stream.data == NULL) W->stream.steps_left--;
  W->step++;
  int op = pick_op(r1 & 0xffff);
  int i = (int)((r1 >> 16) % LOCAL_SLOTS);
  int k = (int)((r1 >> 24) % XCHG_SLOTS);
  uint64_t bits = r1 >> 32;
  blk_t** slot = &W->local[i];
  blk_t* b = *slot;
  W->op = op_names[op];
  atomic_fetch_add_explicit(&op_counts[op], 1, memory_order_relaxed);
  switch (op) {
    case OP_MALLOC: {
      size_t size = decode_size(r2);
      release(b); *slot = NULL;
      *slot = adopt(mi_malloc(size), size, plain_align(size), 0, false, 0, "mi_malloc");
      break;
    }
    case OP_CALLOC: {
      size_t n = decode_size(r2), m = 1 + bits % 8;
      n /= m;
      release(b); *slot = NULL;
      *slot = adopt(mi_calloc(n, m), n * m, plain_align(n * m), 0, true, 0, "mi_calloc");
      break;
    }
    case OP_ZALLOC: {
      size_t size = decode_size(r2);
      release(b); *slot = NULL;
      *slot = adopt(mi_zalloc(size), size, plain_align(size), 0, true, 0, "mi_zalloc");
      break;
    }
    case OP_ALIGNED: {
      size_t size = decode_size(r2), align = decode_align(bits), offset = decode_offset(bits >> 16, align);
      bool z = (bits >> 12) & 1;
      release(b); *slot = NULL;
      void* p = offset != 0 ? mi_malloc_aligned_at(size, align, offset) : z ? mi_zalloc_aligned(size, align) : mi_malloc_aligned(size, align);
      *slot = adopt(p, size, align, offset, z && offset == 0, 0, "mi_malloc_aligned");
      break;
    }
    case OP_HUGE: {
      size_t size = decode_huge(r2);
      release(b); *slot = NULL;
      if ((bits & 3) == 0) {
        size_t align = (size_t)1 << (12 + (bits >> 2) % 12); /* 4 KiB .. 8 MiB */
        *slot = adopt(mi_malloc_aligned(size, align), size, align, 0, false, 0, "huge mi_malloc_aligned");
      }
      else if ((bits & 3) == 1) *slot = adopt(mi_zalloc(size), size, plain_align(size), 0, true, 0, "huge mi_zalloc");
      else *slot = adopt(mi_malloc(size), size, plain_align(size), 0, false, 0, "huge mi_malloc");
      break;
    }
    case OP_REALLOC: {
      size_t size = decode_resize(b, r2, bits);
      if (b == NULL) { *slot = adopt(mi_realloc(NULL, size), size, plain_align(size), 0, false, 0, "mi_realloc(NULL)"); break; }
      resize(b, size == 0 ? 1 : size, 0, 0, false, 0, false, &do_realloc, NULL, "mi_realloc");
      break;
    }
    case OP_REALLOCN: {
      if (b == NULL) break;
      if ((bits & 63) == 0) { resize(b, b->size, 0, 0, false, 0, true, &do_reallocn_overflow, (void*)(uintptr_t)(2 + (bits >> 6) % 8), "mi_reallocn overflow"); break; }
      size_t count = 1 + (bits >> 6) % 16, size = decode_size(r2) / count * count;
      resize(b, size == 0 ? count : size, 0, 0, false, 0, false, &do_reallocn, (void*)(uintptr_t)count, "mi_reallocn");
      break;
    }
    case OP_REZALLOC: {
      size_t size = decode_resize(b, r2, bits);
      if (b == NULL || !b->zeroed) {
        release(b); *slot = NULL;
        *slot = adopt(mi_rezalloc(NULL, size), size, plain_align(size), 0, true, 0, "mi_rezalloc(NULL)");
        break;
      }
      resize(b, size == 0 ? 1 : size, 0, 0, true, 0, false, &do_rezalloc, NULL, "mi_rezalloc");
      break;
    }
    case OP_REALLOC_ALIGNED: {
      size_t size = decode_size(r2), align = decode_align(bits), offset = decode_offset(bits >> 16, align);
      if (size == 0) size = 1;
      if (b == NULL) { *slot = adopt(mi_realloc_aligned_at(NULL, size, align, offset), size, align, offset, false, 0, "mi_realloc_aligned(NULL)"); break; }
      resize(b, size, align, offset, false, 0, false, &do_realloc_aligned, NULL, "mi_realloc_aligned");
      break;
    }
    case OP_EXPAND: {
      if (b == NULL) break;
      size_t size = decode_size(r2), us = mi_usable_size(b->p);
      check_block(b, true, "before mi_expand");
      void* q = mi_expand(b->p, size);
      if (size <= us) {
        MCHECK(q == b->p, "mi_expand(%p, %zu) with usable size %zu returned %p", (void*)b->p, size, us, q);
        size_t keep = (b->size < size ? b->size : size);
        MCHECK(first_bad(b->p, 0, keep, pat_seed(b)) == keep, "mi_expand changed the contents of %p", (void*)b->p);
        live_add(size);
        live_sub(b->size);
        b->size = size;
        b->zeroed = false;
        fill(b->p, size, pat_seed(b));
      }
      else MCHECK(q == NULL, "mi_expand(%p, %zu) beyond usable size %zu returned %p", (void*)b->p, size, us, q);
      MCHECK(mi_usable_size(b->p) == us, "mi_expand changed the usable size of %p", (void*)b->p);
      check_block(b, true, "after mi_expand");
      break;
    }
    case OP_USABLE: { /* all of the usable size may be used */
      if (b == NULL) break;
      size_t us = mi_usable_size(b->p);
      if (within_budget(us) != us) break;
      check_block(b, true, "before growing to the usable size");
      live_add(us);
      live_sub(b->size);
      b->size = us;
      b->zeroed = false;
      fill(b->p, us, pat_seed(b));
      check_block(b, true, "grown to the usable size");
      break;
    }
    case OP_FREE:
      release(b); *slot = NULL;
      break;
    case OP_HEAP_NEW: {
      int hk = (int)(bits % MAX_HEAPS);
      if (W->heaps[hk] != 0) break;
      int h = atomic_fetch_add(&heaprec_next, 1);
      if (h >= MAX_HEAPRECS) break;
      mi_heap_t* hp = mi_heap_new();
      MCHECK(hp != NULL, "mi_heap_new failed");
      if (hp == NULL) break;
      heaprecs[h].heap = hp;
      heaprecs[h].live = true;
      heaprecs[h].private_ = (bits >> 8) & 1;
      atomic_store(&heaprecs[h].out, 0);
      W->heaps[hk] = h;
      break;
    }
    case OP_HEAP_MALLOC: {
      int h = W->heaps[bits % MAX_HEAPS];
      if (h == 0) break;
      mi_heap_t* hp = heaprecs[h].heap;
      size_t size = decode_size(r2);
      release(b); *slot = NULL;
      switch ((bits >> 4) % 5) {
        case 0: *slot = adopt(mi_heap_malloc(hp, size), size, plain_align(size), 0, false, h, "mi_heap_malloc"); break;
        case 1: *slot = adopt(mi_heap_zalloc(hp, size), size, plain_align(size), 0, true, h, "mi_heap_zalloc"); break;
        case 2: *slot = adopt(mi_heap_calloc(hp, 1, size), size, plain_align(size), 0, true, h, "mi_heap_calloc"); break;
        case 3: *slot = adopt(mi_heap_mallocn(hp, size, 1), size, plain_align(size), 0, false, h, "mi_heap_mallocn"); break;
        default: {
          size_t align = decode_align(bits >> 8), offset = decode_offset(bits >> 24, align);
          *slot = adopt(mi_heap_malloc_aligned_at(hp, size, align, offset), size, align, offset, false, h, "mi_heap_malloc_aligned_at");
          break;
        }
      }
      break;
    }
    case OP_HEAP_REALLOC: {
      int h = W->heaps[bits % MAX_HEAPS];
      if (h == 0 || b == NULL) break;
      size_t size = decode_size(r2);
      bool z = ((bits >> 4) & 1) && b->zeroed;
      resize(b, size == 0 ? 1 : size, 0, 0, z, h, false, z ? &do_heap_rezalloc : &do_heap_realloc, heaprecs[h].heap,
             z ? "mi_heap_rezalloc" : "mi_heap_realloc");
      break;
    }
    case OP_HEAP_END:
      heap_end((int)(bits % MAX_HEAPS), (bits >> 4) & 1);
      break;
    case OP_COLLECT: {
      int h = W->heaps[(bits >> 1) % MAX_HEAPS];
      if (h != 0 && ((bits >> 4) & 1)) mi_heap_collect(heaprecs[h].heap, bits & 1);
      else mi_collect(bits & 1);
      break;
    }
    case OP_CHECK:
      if (b != NULL) check_block(b, true, "check");
      break;
    case OP_SWAP: { /* give the local block (if any) to the exchange, take what was there */
      if (is_private(b)) break;
      if (b != NULL) {
        check_block(b, false, "given to the exchange");
        if (b->owner == W->serial && my_heap_live(b->heap) && !b->counted_out) {
          b->counted_out = true;
          atomic_fetch_add_explicit(&heaprecs[b->heap].out, 1, memory_order_relaxed);
        }
      }
      blk_t* got = atomic_exchange(&xchg[k], b);
      *slot = got;
      if (got != NULL) arrive(got, "taken from the exchange");
      break;
    }
    case OP_XFREE:
    case OP_XREALLOC: {
      blk_t* got = atomic_exchange(&xchg[k], NULL);
      if (got == NULL) break;
      arrive(got, "taken from the exchange");
      if (op == OP_XFREE) { release(got); break; }
      release(b); *slot = NULL;
      size_t size = decode_resize(got, r2, bits);
      if ((bits & 3) == 0) {
        size_t align = decode_align(bits >> 2);
        resize(got, size == 0 ? 1 : size, align, 0, false, 0, false, &do_realloc_aligned, NULL, "mi_realloc_aligned (foreign)");
      }
      else resize(got, size == 0 ? 1 : size, 0, 0, false, 0, false, &do_realloc, NULL, "mi_realloc (foreign)");
      *slot = got;
      break;
    }
    case OP_ORPHAN: {
      blk_t* got = NULL;
      pthread_mutex_lock(&orphan_lock);
      if (orphan_count > 0) {
        size_t at = (size_t)(bits >> 8) % orphan_count;
        got = orphans[at];
        orphans[at] = orphans[--orphan_count];
      }
      pthread_mutex_unlock(&orphan_lock);
      if (got == NULL) break;
      arrive(got, "taken from the orphans");
      if (bits & 1) { release(got); break; }
      release(b); *slot = NULL;
      size_t size = decode_size(r2);
      resize(got, size == 0 ? 1 : size, 0, 0, false, 0, false, &do_realloc, NULL, "mi_realloc (orphan)");
      *slot = got;
      break;
    }
    case OP_BULK_ALLOC: { /* n blocks of one size: enough to fill pages of its size class */
      size_t size = (size_t)(r2 & 0xffff);
      switch ((r2 >> 16) & 3) {
        case 0: size = 16 + size % 241; break;          /* 16 .. 256 */
        case 1: size = 2 * KiB + size % (14 * KiB); break; /* 2 .. 16 KiB */
        default: size = 256 + size % 769; break;        /* 256 .. 1 KiB */
      }
      int n = 16 + (int)((bits >> 8) % 241), at = (int)((bits >> 20) % BULK_SLOTS);
      int h = ((bits >> 4) & 1) ? W->heaps[bits % MAX_HEAPS] : 0;
      for (int j = 0; j < n; j++) {
        blk_t** bs = &W->local[LOCAL_SLOTS + (at + j) % BULK_SLOTS];
        release(*bs); *bs = NULL;
        if (h != 0) *bs = adopt(mi_heap_malloc(heaprecs[h].heap, size), size, plain_align(size), 0, false, h, "bulk mi_heap_malloc");
        else *bs = adopt(mi_malloc(size), size, plain_align(size), 0, false, 0, "bulk mi_malloc");
      }
      break;
    }
    case OP_BULK_GIVE: { /* n blocks into the bag, for other threads to free */
      int n = 16 + (int)((bits >> 8) % 241), at = (int)((bits >> 20) % BULK_SLOTS);
      for (int j = 0; j < n; j++) {
        blk_t** bs = &W->local[LOCAL_SLOTS + (at + j) % BULK_SLOTS];
        blk_t* g = *bs;
        if (g == NULL || is_private(g)) continue;
        check_block(g, false, "given to the bag");
        pthread_mutex_lock(&bag_lock);
        bool taken = (bag_count < BAG_CAP);
        if (taken) {
          if (g->owner == W->serial && my_heap_live(g->heap) && !g->counted_out) {
            g->counted_out = true;
            atomic_fetch_add_explicit(&heaprecs[g->heap].out, 1, memory_order_relaxed);
          }
          bag[bag_count++] = g;
        }
        pthread_mutex_unlock(&bag_lock);
        if (!taken) break;
        *bs = NULL;
      }
      break;
    }
    case OP_BULK_TAKE: { /* up to n blocks from the bag: freed, or kept */
      int n = 16 + (int)((bits >> 8) % 241), at = (int)((bits >> 20) % BULK_SLOTS);
      blk_t* got[256];
      int m = 0;
      pthread_mutex_lock(&bag_lock);
      while (m < n && bag_count > 0) got[m++] = bag[--bag_count];
      pthread_mutex_unlock(&bag_lock);
      for (int j = 0; j < m; j++) {
        arrive(got[j], "taken from the bag");
        if (bits & 1) { release(got[j]); continue; }
        blk_t** bs = &W->local[LOCAL_SLOTS + (at + j) % BULK_SLOTS];
        release(*bs);
        *bs = got[j];
      }
      break;
    }
    case OP_BULK_FREE: {
      int n = 16 + (int)((bits >> 8) % 241), at = (int)((bits >> 20) % BULK_SLOTS);
      for (int j = 0; j < n; j++) {
        blk_t** bs = &W->local[LOCAL_SLOTS + (at + j) % BULK_SLOTS];
        release(*bs); *bs = NULL;
      }
      break;
    }
    case OP_VISIT: {
      int h = W->heaps[bits % MAX_HEAPS];
      visit((bits >> 2) & 1 ? h : 0, ((bits >> 3) & 3) == 0);
      break;
    }
    case OP_END:
      /* each heap: ended here (destroyed or deleted) or left to the thread's exit, which deletes it */
      for (int hk = 0; hk < MAX_HEAPS; hk++) {
        if ((bits >> (2 * hk)) & 1) heap_end(hk, (bits >> (2 * hk + 1)) & 1);
      }
      return false;
    default:
      break;
  }
  /* one more block of this thread at sampled places */
  blk_t* other = W->local[(i + 1 + (int)(r2 % (LOCAL_SLOTS - 1))) % LOCAL_SLOTS];
  if (other != NULL) check_block(other, false, "sampled");
  return true;
}

/* The thread ends: its blocks stay alive as orphans (its heaps are deleted by the thread exit). */
static void orphan_all(void) {
  for (int i = 0; i < HELD; i++) {
    blk_t* b = W->local[i];
    if (b == NULL) continue;
    W->local[i] = NULL;
    check_block(b, false, "left behind");
    pthread_mutex_lock(&orphan_lock);
    bool kept = (orphan_count < MAX_ORPHANS);
    if (kept) orphans[orphan_count++] = b;
    pthread_mutex_unlock(&orphan_lock);
    if (!kept) release(b);
  }
  for (int k = 0; k < MAX_HEAPS; k++) {
    if (W->heaps[k] != 0) heaprecs[W->heaps[k]].live = false; /* deleted at the thread's exit */
    W->heaps[k] = 0;
  }
}

static void* worker_main(void* arg) {
  W = (worker_t*)arg;
  atomic_fetch_add_explicit(&stat_threads, 1, memory_order_relaxed);
  while (!stream_done(&W->stream) && !atomic_load_explicit(&failed, memory_order_relaxed)) {
    if (!step()) break;
  }
  W->op = "end of thread";
  orphan_all();
  atomic_store_explicit(&W->done, true, memory_order_release);
  return NULL;
}

static void start(worker_t* w) {
  w->serial = ((uint32_t)(w->pos + 1) << 20) | (uint32_t)(w->gen & 0xfffff);
  atomic_store(&w->done, false);
  w->running = (pthread_create(&w->thread, NULL, &worker_main, w) == 0);
  if (!w->running) { fprintf(stderr, "test-model-mt: pthread_create failed\n"); abort(); }
}

/* ---------------------------------------------------------------------------------------------
   A round: all positions until their streams end, then the main thread frees what is left
--------------------------------------------------------------------------------------------- */

static void reset(void) {
  if (op_total == 0) {
    for (int k = 0; k < OP_COUNT; k++) op_total += op_weights[k];
    for (int s = 0; s < SHARDS; s++) pthread_mutex_init(&shards[s].lock, NULL);
  }
  mi_option_enable(mi_option_visit_abandoned); /* for mi_abandoned_visit_blocks */
  mi_register_error(&on_error, NULL);
  memset(heaprecs, 0, sizeof(heaprecs));
  atomic_store(&heaprec_next, 1);
  atomic_store(&live_bytes, 0);
  memset(workers, 0, sizeof(workers));
}

static void sleep_briefly(void) {
  struct timespec ts = { 0, 100 * 1000 };
  nanosleep(&ts, NULL);
}

/* Runs one round; returns the number of failed checks. data == NULL: random streams from seed. */
static long run_round(uint64_t seed, long steps, const uint8_t* data, size_t len, int nthreads) {
  long before = test_failure_count();
  reset();
  size_t chunk = (data != NULL ? len / (size_t)nthreads : 0);
  for (int w = 0; w < nthreads; w++) {
    worker_t* wk = &workers[w];
    wk->pos = w;
    if (data != NULL) { wk->stream.data = data + (size_t)w * chunk; wk->stream.len = chunk; }
    else { wk->stream.rng.state = test_mix64(seed * 0x2545F4914F6CDD1DULL + (uint64_t)w + 1); wk->stream.steps_left = steps; }
    start(wk);
  }
  /* join threads as they end and start a new one for the position, while the others run */
  for (;;) {
    int running = 0;
    for (int w = 0; w < nthreads; w++) {
      worker_t* wk = &workers[w];
      if (!wk->running) continue;
      if (!atomic_load_explicit(&wk->done, memory_order_acquire)) { running++; continue; }
      pthread_join(wk->thread, NULL);
      wk->running = false;
      if (!stream_done(&wk->stream) && !atomic_load(&failed)) { wk->gen++; start(wk); running++; }
    }
    if (running == 0) break;
    sleep_briefly();
  }
  /* what is left: the exchange and the orphans, freed by the main thread */
  W = NULL;
  for (int k = 0; k < XCHG_SLOTS; k++) {
    blk_t* b = atomic_exchange(&xchg[k], NULL);
    if (b != NULL) release(b);
  }
  for (size_t k = 0; k < orphan_count; k++) release(orphans[k]);
  orphan_count = 0;
  for (size_t k = 0; k < bag_count; k++) release(bag[k]);
  bag_count = 0;
  for (int s = 0; s < SHARDS; s++) MCHECK(shards[s].n == 0 || atomic_load(&failed), "range set shard %d holds %zu ranges after the end", s, shards[s].n);
  MCHECK(atomic_load(&live_bytes) == 0 || atomic_load(&failed), "%zu live bytes counted after the end", atomic_load(&live_bytes));
  mi_collect(true);
  return test_failure_count() - before;
}

#ifdef MI_FUZZ
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  run_round(0, 0, data + 1, size - 1, 2 + data[0] % 3);
  return 0;
}
#else

static char replay[512]; /* the command line that replays the current round */

#if !defined(_WIN32) && !TEST_SANITIZED
static void on_crash(int sig) {
  static const char msg[] = "\ntest-model-mt: crashed; replay with: ";
  if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, replay, strlen(replay)) < 0 || write(2, "\n", 1) < 0) { /* nothing to do */ }
  signal(sig, SIG_DFL);
  raise(sig);
}
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long arg_value(int argc, char** argv, const char* name, long dflt) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], name) == 0) return strtol(argv[i + 1], NULL, 0);
  }
  return dflt;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--seed") != 0 && strcmp(argv[i], "--seconds") != 0 && strcmp(argv[i], "--threads") != 0 &&
        strcmp(argv[i], "--steps") != 0) {
      fprintf(stderr, "usage: %s [--seed S | --seconds N] [--threads T] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  long seconds = arg_value(argc, argv, "--seconds", 0);
  long nthreads = arg_value(argc, argv, "--threads", 4);
  long steps = arg_value(argc, argv, "--steps", 20000);
  uint64_t seed = (uint64_t)arg_value(argc, argv, "--seed", 1);
  if (nthreads < 1) nthreads = 1;
  if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
  if (seconds > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = test_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20));
  }
#if !defined(_WIN32) && !TEST_SANITIZED
  signal(SIGSEGV, &on_crash);
  signal(SIGBUS, &on_crash);
  signal(SIGABRT, &on_crash);
#endif
  /* The RSS bound (rss-guard.h): 2 x the peak of the live requested bytes + 64 MiB (scaled
     under the sanitizers). The live bytes are kept under BUDGET (192 MiB; 96 under a
     sanitizer) and peak at 200-220 MiB (a block over the budget is cut to under 4 KiB).
     Measured with every build ctest runs (2 busy cores): peak RSS 236-283 MiB above the
     start, at most 78 MiB above the peak live and 21 MiB above 2 x peak live. */
  test_rss_guard_start("model-mt", 2.0, 64);
  double t0 = now();
  long rounds = 0, failures = 0;
  do {
    if (seconds > 0) seed = test_mix64(seed + 0x9E3779B97F4A7C15ULL) >> 1; /* random seeds, printable as longs */
    snprintf(replay, sizeof(replay), "%s --seed %llu --threads %ld --steps %ld", argv[0], (unsigned long long)seed, nthreads, steps);
    printf("round %ld: seed %llu\n", rounds + 1, (unsigned long long)seed);
    fflush(stdout);
    failures = run_round(seed, steps, NULL, 0, (int)nthreads);
    rounds++;
    if (failures > 0) {
      fprintf(stderr, "test-model-mt: round %ld (seed %llu) failed; replay with: %s\n", rounds, (unsigned long long)seed, replay);
      fprintf(stderr, "  (each thread repeats its operations; the interleaving of the threads, and so which blocks meet, may differ)\n");
      break;
    }
  } while (seconds > 0 && now() - t0 < (double)seconds);

  printf("operations:");
  for (int k = 0; k < OP_COUNT; k++) printf("%s %s %ld", k ? "," : "", op_names[k], atomic_load(&op_counts[k]));
  printf("\n");
  return test_summary("model-mt",
                      "%ld round(s) of %ld threads x %ld steps, last seed %llu, %.1f s: %ld threads run, %ld allocations, "
                      "%ld foreign frees, %ld heaps destroyed, %ld deleted",
                      rounds, nthreads, steps, (unsigned long long)seed, now() - t0, atomic_load(&stat_threads),
                      atomic_load(&stat_allocs), atomic_load(&stat_foreign_frees), atomic_load(&stat_destroys),
                      atomic_load(&stat_deletes));
}
#endif
