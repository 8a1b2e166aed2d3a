/* SPDX-License-Identifier: MIT */
/* test-model.c -- random operations mirrored in a shadow model.

   run_ops() interprets a byte string as a sequence of allocator operations (malloc, zalloc,
   calloc, realloc, rezalloc, recalloc, malloc_aligned(_at), zalloc_aligned(_at),
   realloc_aligned(_at), usable_size, free, expand, strdup, heap_new, heap_malloc & co.,
   heap_realloc, heap_destroy, heap_delete, collect) and mirrors each one in a shadow table that
   records, per live block: requested size, alignment and offset, whether it is zero-initialised,
   the seed of its expected contents and the heap it belongs to. After every step it checks every
   live block: usable size >= requested, alignment of p + offset, mi_is_in_heap_region, heap
   membership with mi_heap_contains_block (its own heap: yes; the other live heaps: no), and the
   contents (the block touched by the step completely, the others at sampled positions; all of
   them completely every 32 steps and at the end of the run).

   main() runs ITERATIONS random byte strings from a seeded generator.
   Usage: test-model [iterations=1500] [seed=1]

   Built with -DMI_FUZZ it instead provides LLVMFuzzerTestOneInput() (for libFuzzer, which has
   its own main) and aborts at the first failed check. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mimalloc.h"
#ifdef MI_FUZZ
#define TEST_ABORT_ON_FAILURE 1
#endif
#include "testing.h"

#define KiB ((size_t)1024)
#define MiB (KiB * KiB)

enum { MAX_LIVE = 48, MAX_HEAPS = 4, BACKING = -1 };
#define TOTAL_MAX (1 * MiB)     /* bound on the live requested bytes */
#define BLOCK_MAX (512 * KiB + 4096)

typedef struct shadow_s {
  uint8_t* p;      /* NULL: slot empty */
  size_t size;     /* requested size: bytes [0,size) hold pat(seed, i) */
  size_t align;    /* p + offset is a multiple of align */
  size_t offset;
  bool zeroed;     /* allocated zero-initialised and only grown by zeroing reallocs since:
                      a zeroing growth must produce zeros beyond `size` */
  uint64_t seed;
  int heap;        /* BACKING or an index into heaps[] */
} shadow_t;

typedef struct model_s {
  shadow_t blk[MAX_LIVE];
  mi_heap_t* heaps[MAX_HEAPS];
  size_t total;
  uint64_t next_seed;
  const uint8_t* data;
  size_t len, pos;
  long step;
  const char* op;
  int last_slot;
} model_t;

static model_t M;
static bool trace; /* print every step of a run (main: environment variable TEST_MODEL_TRACE=<run>) */
static long op_counts[32];
static const char* op_names[32];

/* ---------------------------------------------------------------------------------------------
   Helpers
--------------------------------------------------------------------------------------------- */

#define MCHECK(cond, ...) \
  do { test_count_(); if (!(cond)) { \
    test_fail_(__FILE__, __LINE__, #cond, "step %ld, op %s", M.step, M.op); \
    fprintf(stderr, "    "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

static uint8_t next8(void) { return M.pos < M.len ? M.data[M.pos++] : 0; }
static size_t next16(void) { size_t a = next8(); return (a << 8) | next8(); }

static uint8_t pat(uint64_t seed, size_t i) { return (uint8_t)(seed + i * 0x9d + (i >> 8) * 0x3b); }

static void fill(uint8_t* p, size_t from, size_t to, uint64_t seed) {
  for (size_t i = from; i < to; i++) p[i] = pat(seed, i);
}

static size_t first_bad(const uint8_t* p, size_t from, size_t to, uint64_t seed) {
  for (size_t i = from; i < to; i++) if (p[i] != pat(seed, i)) return i;
  return to;
}

static size_t first_nonzero(const uint8_t* p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) if (p[i] != 0) return i;
  return to;
}

static size_t decode_size(void) {
  uint8_t b = next8();
  size_t size;
  switch (b >> 6) {
    case 0: size = b & 63; break;                                     /* 0 .. 63 */
    case 1: size = 64 + (size_t)next8() * 4 + (b & 3); break;         /* .. 1 KiB */
    case 2: size = 1024 + next16() % (63 * 1024); break;              /* .. 64 KiB */
    default:
      if ((b & 15) == 0) size = 64 * KiB + next16() * 7;              /* .. ~512 KiB */
      else size = next16() % 8192;
      break;
  }
  if (size > BLOCK_MAX) size = BLOCK_MAX;
  if (M.total + size > TOTAL_MAX) size %= 4096; /* stay within the budget */
  return size;
}

static size_t decode_align(void) {
  uint8_t b = next8();
  if (b >= 250) return (size_t)1 << (16 + b % 7); /* 64 KiB .. 4 MiB */
  return (size_t)1 << (b % 13);                   /* 1 .. 4 KiB */
}

static size_t decode_offset(size_t align) {
  uint8_t b = next8();
  if ((b & 3) == 0) return 0;
  return ((size_t)b * 8) % (2 * align + 8);
}

static int decode_heap(void) {
  int h = next8() % MAX_HEAPS;
  return M.heaps[h] != NULL ? h : -1;
}

static mi_heap_t* heap_ptr(int h) { return h == BACKING ? mi_heap_get_backing() : M.heaps[h]; }

/* ---------------------------------------------------------------------------------------------
   Checks
--------------------------------------------------------------------------------------------- */

static void check_block(int i, bool full) {
  shadow_t* s = &M.blk[i];
  if (s->p == NULL) return;
  size_t us = mi_usable_size(s->p);
  MCHECK(us >= s->size, "slot %d: usable size %zu < requested %zu", i, us, s->size);
  MCHECK(((uintptr_t)s->p + s->offset) % s->align == 0, "slot %d: %p + %zu not aligned to %zu", i, (void*)s->p, s->offset,
         s->align);
  MCHECK(mi_is_in_heap_region(s->p), "slot %d: %p not in the heap region", i, (void*)s->p);
  MCHECK(mi_heap_contains_block(heap_ptr(s->heap), s->p), "slot %d: %p not contained in its heap %d", i, (void*)s->p, s->heap);
  for (int h = 0; h < MAX_HEAPS; h++) {
    if (M.heaps[h] != NULL && h != s->heap)
      MCHECK(!mi_heap_contains_block(M.heaps[h], s->p), "slot %d: %p (heap %d) also claimed by heap %d", i, (void*)s->p, s->heap, h);
  }
  size_t bad;
  if (full || s->size <= 64) {
    bad = first_bad(s->p, 0, s->size, s->seed);
  }
  else { /* sampled: the first and last 16 bytes and 16 bytes at a step-dependent place */
    size_t mid = (size_t)test_mix64((uint64_t)M.step) % (s->size - 16);
    bad = first_bad(s->p, 0, 16, s->seed);
    if (bad == 16) bad = first_bad(s->p, mid, mid + 16, s->seed);
    if (bad == mid + 16) bad = first_bad(s->p, s->size - 16, s->size, s->seed);
  }
  MCHECK(bad == s->size, "slot %d: contents of %p (size %zu) differ at byte %zu", i, (void*)s->p, s->size, bad);
}

static void check_all(bool full) {
  for (int i = 0; i < MAX_LIVE; i++) check_block(i, full);
}

/* ---------------------------------------------------------------------------------------------
   Operations
--------------------------------------------------------------------------------------------- */

static void release(int i) {
  shadow_t* s = &M.blk[i];
  if (s->p == NULL) return;
  check_block(i, true);
  mi_free(s->p);
  M.total -= s->size;
  memset(s, 0, sizeof(*s));
}

/* records a fresh block; zero: it must be zero over [0,size) now */
static void adopt(int i, void* p, size_t size, size_t align, size_t offset, bool zero, int heap) {
  MCHECK(p != NULL, "allocation of %zu bytes (alignment %zu, offset %zu) failed", size, align, offset);
  if (p == NULL) return;
  shadow_t* s = &M.blk[i];
  s->p = (uint8_t*)p;
  s->size = size;
  s->align = align;
  s->offset = offset;
  s->zeroed = zero;
  s->seed = ++M.next_seed;
  s->heap = heap;
  if (zero) {
    size_t nz = first_nonzero(s->p, 0, size);
    MCHECK(nz == size, "zero-initialised block %p of size %zu has a non-zero byte at %zu", p, size, nz);
  }
  fill(s->p, 0, size, s->seed);
  M.total += size;
  check_block(i, true);
}

/* after a realloc-like call: the old contents must have moved along; grown bytes must be zero
   for zeroing reallocs of zero-initialised blocks. align/offset: what the result must satisfy;
   align == 0 means a plain realloc: a moved block is a fresh malloc block, an unmoved one keeps
   its old alignment (it may be an interior pointer of an aligned allocation). */
static void after_resize(int i, void* q, size_t newsize, size_t align, size_t offset, bool zeroing, int heap_if_moved) {
  shadow_t* s = &M.blk[i];
  MCHECK(q != NULL, "resize of %p from %zu to %zu failed", (void*)s->p, s->size, newsize);
  if (q == NULL) return; /* the old block is still valid and unchanged */
  uint8_t* nq = (uint8_t*)q;
  size_t keep = s->size < newsize ? s->size : newsize;
  size_t bad = first_bad(nq, 0, keep, s->seed);
  MCHECK(bad == keep, "resize %zu -> %zu (%p -> %p) lost contents at byte %zu", s->size, newsize, (void*)s->p, q, bad);
  if (zeroing && s->zeroed && newsize > s->size) {
    size_t nz = first_nonzero(nq, s->size, newsize);
    MCHECK(nz == newsize, "zeroing resize %zu -> %zu: byte %zu is not zero", s->size, newsize, nz);
  }
  if (nq != s->p) s->heap = heap_if_moved;
  if (align == 0) {
    if (nq != s->p) { align = (newsize >= 16 ? 16 : 8); offset = 0; }
    else { align = s->align; offset = s->offset; }
  }
  /* a zeroing shrink leaves old contents beyond the new size: no longer "zeroed" in our sense */
  s->zeroed = zeroing && s->zeroed && newsize >= s->size;
  M.total = M.total - s->size + newsize;
  s->p = nq;
  s->size = newsize;
  s->align = align;
  s->offset = offset;
  fill(s->p, 0, newsize, s->seed); /* same seed: rewrite (cheap and keeps the model simple) */
  check_block(i, true);
}

enum {
  OP_MALLOC, OP_ZALLOC, OP_CALLOC, OP_REALLOC, OP_REZALLOC, OP_RECALLOC, OP_MALLOC_ALIGNED, OP_ZALLOC_ALIGNED,
  OP_REALLOC_ALIGNED, OP_USABLE, OP_FREE, OP_EXPAND, OP_STRDUP, OP_HEAP_NEW, OP_HEAP_MALLOC, OP_HEAP_ZALLOC,
  OP_HEAP_ALIGNED, OP_HEAP_REALLOC, OP_HEAP_REZALLOC, OP_HEAP_DESTROY, OP_HEAP_DELETE, OP_COLLECT, OP_SMALL, OP_FREE2,
  OP_COUNT
};

static void name_ops(void) {
  const char* n[OP_COUNT] = { "malloc", "zalloc", "calloc", "realloc", "rezalloc", "recalloc", "malloc_aligned(_at)",
                              "zalloc_aligned(_at)", "realloc_aligned(_at)", "usable_size", "free", "expand", "strdup",
                              "heap_new", "heap_malloc", "heap_zalloc", "heap_malloc_aligned(_at)", "heap_realloc",
                              "heap_rezalloc", "heap_destroy", "heap_delete", "collect", "malloc_small", "free" };
  for (int i = 0; i < OP_COUNT; i++) op_names[i] = n[i];
}

static void step(void) {
  int op = next8() % OP_COUNT;
  int i = next8() % MAX_LIVE;
  shadow_t* s = &M.blk[i];
  M.last_slot = i;
  M.op = op_names[op];
  op_counts[op]++;
  switch (op) {
    case OP_MALLOC: {
      size_t size = decode_size();
      release(i);
      errno = 4242;
      void* p = mi_malloc(size);
      MCHECK(errno == 4242, "successful mi_malloc(%zu) changed errno to %d", size, errno);
      adopt(i, p, size, size >= 16 ? 16 : 8, 0, false, BACKING);
      break;
    }
    case OP_ZALLOC: {
      size_t size = decode_size();
      release(i);
      adopt(i, mi_zalloc(size), size, size >= 16 ? 16 : 8, 0, true, BACKING);
      break;
    }
    case OP_CALLOC: {
      size_t n = decode_size(), m = 1 + next8() % 8;
      if (next8() == 255) { /* overflow */
        errno = 0;
        void* p = mi_calloc(SIZE_MAX / (m + 1) + 1, m + 1);
        MCHECK(p == NULL && errno == ENOMEM, "calloc overflow gave %p, errno %d", p, errno);
        break;
      }
      n = n / m;
      release(i);
      adopt(i, mi_calloc(n, m), n * m, n * m >= 16 ? 16 : 8, 0, true, BACKING);
      break;
    }
    case OP_REALLOC: {
      size_t size = decode_size();
      if (s->p == NULL) { adopt(i, mi_realloc(NULL, size), size, size >= 16 ? 16 : 8, 0, false, BACKING); break; }
      if (size == 0) size = 1; /* realloc(p, 0) is tested in test-api */
      after_resize(i, mi_realloc(s->p, size), size, 0, 0, false, BACKING);
      break;
    }
    case OP_REZALLOC:
    case OP_RECALLOC: {
      size_t size = decode_size();
      if (s->p == NULL || !s->zeroed) { /* only valid on zero-initialised blocks: allocate one */
        release(i);
        adopt(i, op == OP_REZALLOC ? mi_rezalloc(NULL, size) : mi_recalloc(NULL, size, 1), size, size >= 16 ? 16 : 8, 0, true, BACKING);
        break;
      }
      if (size == 0) size = 1;
      void* q = (op == OP_REZALLOC ? mi_rezalloc(s->p, size) : mi_recalloc(s->p, size, 1));
      after_resize(i, q, size, 0, 0, true, BACKING);
      break;
    }
    case OP_MALLOC_ALIGNED:
    case OP_ZALLOC_ALIGNED: {
      size_t size = decode_size(), align = decode_align(), offset = (next8() & 1) ? decode_offset(align) : 0;
      release(i);
      bool z = (op == OP_ZALLOC_ALIGNED);
      void* p = offset == 0 ? (z ? mi_zalloc_aligned(size, align) : mi_malloc_aligned(size, align))
                            : (z ? mi_zalloc_aligned_at(size, align, offset) : mi_malloc_aligned_at(size, align, offset));
      adopt(i, p, size, align, offset, z, BACKING);
      break;
    }
    case OP_REALLOC_ALIGNED: {
      size_t size = decode_size(), align = decode_align(), offset = (next8() & 1) ? decode_offset(align) : 0;
      if (size == 0) size = 1;
      if (s->p == NULL) {
        adopt(i, mi_realloc_aligned_at(NULL, size, align, offset), size, align, offset, false, BACKING);
        break;
      }
      bool z = s->zeroed && (next8() & 1);
      void* q = z ? (offset ? mi_rezalloc_aligned_at(s->p, size, align, offset) : mi_rezalloc_aligned(s->p, size, align))
                  : (offset ? mi_realloc_aligned_at(s->p, size, align, offset) : mi_realloc_aligned(s->p, size, align));
      after_resize(i, q, size, align, offset, z, BACKING);
      break;
    }
    case OP_USABLE: { /* the whole usable size may be used */
      if (s->p == NULL) break;
      size_t us = mi_usable_size(s->p);
      MCHECK(us >= s->size, "usable %zu < size %zu", us, s->size);
      if (us > BLOCK_MAX * 2 || M.total - s->size + us > TOTAL_MAX * 2) break;
      M.total = M.total - s->size + us;
      s->size = us;
      s->zeroed = false;
      fill(s->p, 0, us, s->seed);
      check_block(i, true);
      break;
    }
    case OP_FREE:
    case OP_FREE2:
      release(i);
      break;
    case OP_EXPAND: {
      if (s->p == NULL) break;
      size_t size = decode_size();
      size_t us = mi_usable_size(s->p);
      void* q = mi_expand(s->p, size);
      if (size <= us) {
        MCHECK(q == s->p, "mi_expand(%p, %zu) with usable size %zu returned %p", (void*)s->p, size, us, q);
        size_t keep = s->size < size ? s->size : size;
        MCHECK(first_bad(s->p, 0, keep, s->seed) == keep, "mi_expand changed contents");
        M.total = M.total - s->size + size;
        s->size = size;
        s->zeroed = false;
        fill(s->p, 0, size, s->seed);
      }
      else {
        MCHECK(q == NULL, "mi_expand(%p, %zu) beyond usable size %zu returned %p", (void*)s->p, size, us, q);
      }
      MCHECK(mi_usable_size(s->p) == us, "mi_expand changed the usable size");
      check_block(i, true);
      break;
    }
    case OP_STRDUP: {
      size_t len = decode_size() % 2048;
      int h = (next8() & 1) ? decode_heap() : BACKING;
      char* src = (char*)mi_malloc(len + 1);
      if (src == NULL) { MCHECK(false, "mi_malloc(%zu) failed", len + 1); break; }
      uint64_t seed = ++M.next_seed;
      for (size_t k = 0; k < len; k++) { uint8_t c = pat(seed, k); src[k] = (char)(c == 0 ? 1 : c); }
      src[len] = 0;
      size_t n = len + 1;
      char* d;
      if (next8() & 1) { size_t lim = next16() % (len + 2); d = (h == BACKING ? mi_strndup(src, lim) : mi_heap_strndup(heap_ptr(h), src, lim)); if (lim < len) n = lim + 1; }
      else d = (h == BACKING ? mi_strdup(src) : mi_heap_strdup(heap_ptr(h), src));
      MCHECK(d != NULL && memcmp(d, src, n - 1) == 0 && d[n - 1] == 0, "strdup/strndup of %zu bytes wrong", len);
      mi_free(src);
      release(i);
      if (d != NULL) adopt(i, d, n, 1, 0, false, h);
      break;
    }
    case OP_HEAP_NEW: {
      int h = next8() % MAX_HEAPS;
      if (M.heaps[h] == NULL) { M.heaps[h] = mi_heap_new(); MCHECK(M.heaps[h] != NULL, "mi_heap_new failed"); }
      break;
    }
    case OP_HEAP_MALLOC:
    case OP_HEAP_ZALLOC:
    case OP_HEAP_ALIGNED: {
      int h = decode_heap();
      if (h == BACKING) break;
      size_t size = decode_size();
      release(i);
      mi_heap_t* hp = M.heaps[h];
      if (op == OP_HEAP_MALLOC) {
        adopt(i, (next8() & 1) ? mi_heap_malloc(hp, size) : mi_heap_mallocn(hp, size, 1), size, size >= 16 ? 16 : 8, 0, false, h);
      }
      else if (op == OP_HEAP_ZALLOC) {
        adopt(i, (next8() & 1) ? mi_heap_zalloc(hp, size) : mi_heap_calloc(hp, 1, size), size, size >= 16 ? 16 : 8, 0, true, h);
      }
      else {
        size_t align = decode_align(), offset = decode_offset(align);
        bool z = next8() & 1;
        void* p = z ? mi_heap_zalloc_aligned_at(hp, size, align, offset) : mi_heap_malloc_aligned_at(hp, size, align, offset);
        adopt(i, p, size, align, offset, z, h);
      }
      break;
    }
    case OP_HEAP_REALLOC:
    case OP_HEAP_REZALLOC: {
      int h = decode_heap();
      if (h == BACKING || s->p == NULL) break;
      size_t size = decode_size();
      if (size == 0) size = 1;
      bool z = (op == OP_HEAP_REZALLOC) && s->zeroed;
      void* q = z ? mi_heap_rezalloc(M.heaps[h], s->p, size) : mi_heap_realloc(M.heaps[h], s->p, size);
      after_resize(i, q, size, 0, 0, z, h);
      break;
    }
    case OP_HEAP_DESTROY: {
      int h = decode_heap();
      if (h == BACKING) break;
      for (int k = 0; k < MAX_LIVE; k++) {
        if (M.blk[k].p != NULL && M.blk[k].heap == h) {
          check_block(k, true);
          M.total -= M.blk[k].size;
          memset(&M.blk[k], 0, sizeof(M.blk[k])); /* freed by the destroy */
        }
      }
      mi_heap_destroy(M.heaps[h]);
      M.heaps[h] = NULL;
      break;
    }
    case OP_HEAP_DELETE: {
      int h = decode_heap();
      if (h == BACKING) break;
      mi_heap_delete(M.heaps[h]);
      M.heaps[h] = NULL;
      for (int k = 0; k < MAX_LIVE; k++)
        if (M.blk[k].p != NULL && M.blk[k].heap == h) M.blk[k].heap = BACKING; /* migrated, still valid */
      break;
    }
    case OP_COLLECT: {
      int h = decode_heap();
      bool force = next8() & 1;
      if (h == BACKING) mi_collect(force);
      else mi_heap_collect(M.heaps[h], force);
      break;
    }
    case OP_SMALL: {
      size_t size = decode_size() % (MI_SMALL_SIZE_MAX + 1);
      bool z = next8() & 1;
      release(i);
      adopt(i, z ? mi_zalloc_small(size) : mi_malloc_small(size), size, size >= 16 ? 16 : 8, 0, z, BACKING);
      break;
    }
    default:
      break;
  }
}

/* Interprets data as operations; returns the number of failed checks. Leaves nothing behind. */
static int run_ops(const uint8_t* data, size_t len) {
  long before = test_failure_count();
  memset(&M, 0, sizeof(M));
  M.data = data;
  M.len = len;
  M.op = "start";
  while (M.pos < M.len) {
    M.step++;
    step();
    if (trace) {
      shadow_t* t = &M.blk[M.last_slot];
      fprintf(stderr, "step %ld %-24s slot %2d: p=%p size=%zu align=%zu offset=%zu zeroed=%d heap=%d usable=%zu\n", M.step, M.op,
              M.last_slot, (void*)t->p, t->size, t->align, t->offset, (int)t->zeroed, t->heap, t->p ? mi_usable_size(t->p) : 0);
    }
    check_all(M.step % 32 == 0);
  }
  M.op = "end";
  check_all(true);
  for (int i = 0; i < MAX_LIVE; i++) {
    if (M.blk[i].p != NULL && M.blk[i].heap != BACKING && (M.blk[i].seed & 1)) continue; /* left to heap_destroy below */
    release(i);
  }
  for (int h = 0; h < MAX_HEAPS; h++) {
    if (M.heaps[h] == NULL) continue;
    mi_heap_destroy(M.heaps[h]); /* frees the blocks left in it */
    M.heaps[h] = NULL;
  }
  return (int)(test_failure_count() - before);
}

#ifdef MI_FUZZ
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (op_names[0] == NULL) name_ops();
  run_ops(data, size);
  return 0;
}
#else
int main(int argc, char** argv) {
  long iterations = test_arg(argc, argv, 1, 1500);
  uint64_t seed = (uint64_t)test_arg(argc, argv, 2, 1);
  name_ops();
  test_rng_t rng = { seed };
  static uint8_t buf[2048];
  long steps = 0, failed_run = -1;
  const char* trace_env = getenv("TEST_MODEL_TRACE");
  long trace_run = trace_env != NULL ? atol(trace_env) : -1;
  for (long it = 0; it < iterations; it++) {
    size_t len = 32 + (size_t)test_rand_below(&rng, sizeof(buf) - 32);
    for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)test_rand(&rng);
    trace = (it == trace_run);
    if (run_ops(buf, len) != 0) {
      failed_run = it;
      fprintf(stderr, "model: run %ld (seed %llu, %zu bytes) failed; stopping\n", it, (unsigned long long)seed, len);
      break;
    }
    steps += M.step;
  }
  char counts[1024] = "";
  size_t used = 0;
  for (int k = 0; k < OP_COUNT && used < sizeof(counts); k++)
    used += (size_t)snprintf(counts + used, sizeof(counts) - used, "%s%s %ld", k ? ", " : "", op_names[k], op_counts[k]);
  return test_summary("model", "%ld runs, %ld steps, seed %llu%s; ops: %s", failed_run < 0 ? iterations : failed_run + 1, steps,
                      (unsigned long long)seed, failed_run < 0 ? "" : " (stopped at a failing run)", counts);
}
#endif
