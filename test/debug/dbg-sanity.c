/* SPDX-License-Identifier: MIT */
/* Correct use only: lots of allocation, reallocation, aligned allocation and freeing, also
   across threads, writing every usable byte of every block. The debug checks must stay
   silent: the driver expects no output on stderr at all and no error code.
   Case "all" (argument-free work list):
     - random sizes 0..70000 (and a few 1..8 MiB), each block written up to its usable size
       and checked before it is freed or reallocated (grow, shrink in place, move);
     - aligned allocation at alignments 8..1 MiB, with offsets, zeroed and reallocated;
       interior pointers of over-aligned blocks freed;
     - calloc, zalloc, rezalloc, strdup/strndup, posix_memalign, aligned_alloc, mi_expand;
     - private heaps: allocate, mi_heap_destroy, mi_heap_delete (blocks move to the default
       heap and are freed later), forced collects;
     - 4 producer threads hand blocks to 4 consumer threads that check and free them (the
       cross-thread free path, full pages with delayed frees), and threads that end with
       blocks still allocated, freed afterwards by the main thread (abandoned pages). */
#include "dbg.h"
#include <pthread.h>

static uint64_t rnd_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(uint64_t* s) {
  uint64_t x = *s;
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  return (*s = x);
}

static size_t random_size(uint64_t* s) {
  const uint64_t r = rnd(s);
  switch (r % 16) {
    case 0: return (size_t)(r >> 20) % 9;             /* 0..8 */
    case 1: case 2: case 3: case 4: case 5: case 6: return (size_t)(r >> 20) % 200;
    case 7: case 8: case 9: return (size_t)(r >> 20) % 2000;
    case 10: case 11: return (size_t)(r >> 20) % 70000;
    case 12: return ((size_t)(r >> 20) % 8) * 4096 + (size_t)(r >> 40) % 64;
    default: return (size_t)(r >> 20) % 600;
  }
}

typedef struct slot_s { uint8_t* p; size_t n; uint32_t seed; } slot_t;

static bool slot_ok(const slot_t* s) {
  return s->p == NULL || (mi_usable_size(s->p) >= s->n && dbg_check_fill(s->p, s->n, s->seed));
}

static void slot_set(slot_t* s, void* p, size_t n, uint32_t seed) {
  s->p = (uint8_t*)p;
  s->n = (p == NULL ? 0 : mi_usable_size(p));
  s->seed = seed;
  DBG_CHECK(p == NULL || s->n >= n);
  if (p != NULL) dbg_fill(p, s->n, seed);
}

static void single_thread_work(void) {
  enum { SLOTS = 2000, ROUNDS = 60000 };
  static slot_t slots[SLOTS];
  uint64_t s = rnd_state;
  for (uint32_t i = 0; i < ROUNDS; i++) {
    slot_t* sl = &slots[rnd(&s) % SLOTS];
    if (!slot_ok(sl)) { printf("FAIL block %p lost its pattern\n", (void*)sl->p); dbg_failures++; }
    const uint64_t op = rnd(&s) % 10;
    if (sl->p == NULL || op < 3) {
      mi_free(sl->p);
      size_t n = random_size(&s);
      void* p;
      switch (rnd(&s) % 6) {
        case 0: p = mi_zalloc(n); if (p != NULL) for (size_t k = 0; k < n; k++) DBG_CHECK(((uint8_t*)p)[k] == 0); break;
        case 1: p = mi_calloc(n % 7 + 1, n / 7 + 1); n = (n % 7 + 1) * (n / 7 + 1); break;
        case 2: p = mi_malloc_aligned(n, (size_t)1 << (3 + rnd(&s) % 10)); break;
        case 3: p = mi_malloc_aligned_at(n + 16, (size_t)1 << (4 + rnd(&s) % 8), 16); n += 16; break;
        default: p = mi_malloc(n); break;
      }
      DBG_CHECK(p != NULL);
      slot_set(sl, p, n, i);
    }
    else if (op < 6) {
      const size_t old = sl->n;
      const size_t n = (rnd(&s) % 2 == 0 ? old / 2 + 1 + rnd(&s) % (old / 2 + 1) : random_size(&s));
      uint8_t* p = (uint8_t*)(rnd(&s) % 3 == 0 ? mi_rezalloc(sl->p, n) : mi_realloc(sl->p, n));
      DBG_CHECK(p != NULL);
      const size_t kept = (old < n ? old : n);
      DBG_CHECK_MSG(dbg_check_fill(p, kept, sl->seed), "realloc %zu -> %zu lost bytes", old, n);
      slot_set(sl, p, n, i);
    }
    else if (op < 7) {
      /* mi_expand: NULL in padded builds, or p when it fits */
      void* e = mi_expand(sl->p, sl->n);
      DBG_CHECK(e == NULL || e == sl->p);
    }
    else if (op < 8) {
      char* d = mi_strndup((const char*)"sanity string for strdup", rnd(&s) % 30);
      char* e = mi_strdup(d);
      DBG_CHECK(d != NULL && e != NULL && strcmp(d, e) == 0);
      mi_free(d);
      mi_free(e);
    }
  }
  for (size_t i = 0; i < SLOTS; i++) {
    DBG_CHECK(slot_ok(&slots[i]));
    mi_free(slots[i].p);
    slots[i].p = NULL;
  }
  /* big blocks */
  for (size_t n = 1u << 20; n <= (8u << 20); n *= 2) {
    uint8_t* p = (uint8_t*)mi_malloc(n + 3);
    dbg_fill(p, n + 3, 1);
    p = (uint8_t*)mi_realloc(p, 2 * n + 5);
    DBG_CHECK(dbg_check_fill(p, n + 3, 1));
    memset(p, 2, 2 * n + 5);
    mi_free(p);
  }
  /* posix_memalign, aligned_alloc, huge alignment */
  void* pm = NULL;
  DBG_CHECK(mi_posix_memalign(&pm, 256, 1000) == 0 && pm != NULL && ((uintptr_t)pm % 256) == 0);
  memset(pm, 1, 1000);
  mi_free(pm);
  void* aa = mi_aligned_alloc(1u << 20, 5000);
  DBG_CHECK(aa != NULL && ((uintptr_t)aa % (1u << 20)) == 0);
  memset(aa, 1, mi_usable_size(aa));
  mi_free(aa);
  void* ra = mi_malloc_aligned(100, 4096);
  memset(ra, 3, 100);
  ra = mi_realloc_aligned(ra, 9000, 4096);
  DBG_CHECK(ra != NULL && ((uintptr_t)ra % 4096) == 0 && ((uint8_t*)ra)[99] == 3);
  memset(ra, 4, 9000);
  mi_free(ra);
}

static void heap_work(void) {
  for (int round = 0; round < 20; round++) {
    mi_heap_t* heap = mi_heap_new();
    void* blocks[500];
    for (int i = 0; i < 500; i++) {
      size_t n = (size_t)(i * 37 + round) % 3000;
      blocks[i] = mi_heap_malloc(heap, n);
      memset(blocks[i], i, n);
    }
    for (int i = 0; i < 500; i += 3) mi_free(blocks[i]);
    if (round % 2 == 0) {
      mi_heap_destroy(heap);   /* frees the rest */
    }
    else {
      mi_heap_delete(heap);    /* the rest moves to the default heap */
      for (int i = 0; i < 500; i++) if (i % 3 != 0) mi_free(blocks[i]);
    }
  }
  mi_collect(true);
}

/* cross-thread: producers push blocks into a ring, consumers check and free them */
#define RING 256
static void* ring[RING];
static size_t ring_size[RING];
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ring_cond = PTHREAD_COND_INITIALIZER;
static size_t ring_head, ring_tail;
static int producers_left;
enum { PRODUCERS = 4, CONSUMERS = 4, PER_PRODUCER = 20000 };

static void* producer(void* arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg * 0x2545F4914F6CDD1DULL + 1;
  for (int i = 0; i < PER_PRODUCER; i++) {
    size_t n = random_size(&s) % 5000;
    uint8_t* p = (uint8_t*)(i % 5 == 0 ? mi_malloc_aligned(n, 64) : mi_malloc(n));
    DBG_CHECK(p != NULL);
    memset(p, (int)(n & 0xFF), n);
    pthread_mutex_lock(&ring_lock);
    while (ring_head - ring_tail == RING) pthread_cond_wait(&ring_cond, &ring_lock);
    ring[ring_head % RING] = p;
    ring_size[ring_head % RING] = n;
    ring_head++;
    pthread_cond_broadcast(&ring_cond);
    pthread_mutex_unlock(&ring_lock);
  }
  pthread_mutex_lock(&ring_lock);
  producers_left--;
  pthread_cond_broadcast(&ring_cond);
  pthread_mutex_unlock(&ring_lock);
  return NULL;
}

static void* consumer(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&ring_lock);
    while (ring_head == ring_tail && producers_left > 0) pthread_cond_wait(&ring_cond, &ring_lock);
    if (ring_head == ring_tail) { pthread_mutex_unlock(&ring_lock); break; }
    uint8_t* p = (uint8_t*)ring[ring_tail % RING];
    size_t n = ring_size[ring_tail % RING];
    ring_tail++;
    pthread_cond_broadcast(&ring_cond);
    pthread_mutex_unlock(&ring_lock);
    for (size_t k = 0; k < n; k++) {
      if (p[k] != (uint8_t)(n & 0xFF)) { DBG_CHECK_MSG(false, "block %p byte %zu", (void*)p, k); break; }
    }
    if (n > 0 && n % 3 == 0) {   /* reallocate in this thread first */
      p = (uint8_t*)mi_realloc(p, n * 2);
      memset(p, 1, n * 2);
    }
    mi_free(p);
  }
  return NULL;
}

static void* leaver(void* arg) {
  /* ends with blocks still allocated: the main thread frees them (abandoned pages) */
  void** out = (void**)arg;
  for (int i = 0; i < 1000; i++) {
    out[i] = mi_malloc((size_t)(i % 300) + 1);
    memset(out[i], 7, (size_t)(i % 300) + 1);
  }
  return NULL;
}

static void thread_work(void) {
  pthread_t prod[PRODUCERS], cons[CONSUMERS];
  producers_left = PRODUCERS;
  for (int i = 0; i < CONSUMERS; i++) DBG_CHECK(pthread_create(&cons[i], NULL, &consumer, NULL) == 0);
  for (int i = 0; i < PRODUCERS; i++) DBG_CHECK(pthread_create(&prod[i], NULL, &producer, (void*)(uintptr_t)(i + 1)) == 0);
  for (int i = 0; i < PRODUCERS; i++) pthread_join(prod[i], NULL);
  for (int i = 0; i < CONSUMERS; i++) pthread_join(cons[i], NULL);

  static void* left[4][1000];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) DBG_CHECK(pthread_create(&t[i], NULL, &leaver, left[i]) == 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) {
    for (int k = 0; k < 1000; k++) {
      const uint8_t* b = (const uint8_t*)left[i][k];
      DBG_CHECK(b[0] == 7 && b[k % 300] == 7);
      mi_free(left[i][k]);
    }
  }
  mi_collect(true);
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  if (strcmp(c, "all") != 0) return dbg_unknown_case(c);
  single_thread_work();
  dbg_step("single thread done");
  heap_work();
  dbg_step("heaps done");
  thread_work();
  dbg_step("threads done");
  static const size_t sizes[] = { 0, 1, 8, 64, 100, 1000, 20000 };
  dbg_heap_works(5000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
