/* SPDX-License-Identifier: MIT */
/* test-remote-batch.c -- frees into another thread's pages that the freeing thread holds back
   (release builds batch them: src/remote.c) come back to their owner when the freeing thread
   calls mi_collect, runs its allocation slow path, or ends; a thread that frees and then sleeps
   holds at most 64 batches of at most 32 blocks; and an ended thread's pages, which such a
   batch may point into, are never adopted by a heap that can be destroyed wholesale (a shared
   heap's part, a mi_heap_new heap). Debug and secure builds push every free at once: the same
   checks hold there too.

   usage: test-remote-batch [collect|exit|slow|bounded|adopt|destroy|all] */
#include <mimalloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "testing.h"

#define N_BLOCKS  (24000)
#define HELD_MAX  (64 * 32)   /* src/internal/types.h: MI_REMOTE_BATCH_SLOTS batches of at most 32 blocks */

static void* blocks[N_BLOCKS];

/* An open-addressing set of the blocks: the visitor counts those of them still live. */
#define SET_SIZE  (1 << 16)
static uintptr_t set[SET_SIZE];
static size_t set_slot(uintptr_t p) { return (size_t)((p * 0x9E3779B97F4A7C15ull) >> 48) & (SET_SIZE - 1); }
static void set_clear(void) { memset(set, 0, sizeof(set)); }
static void set_add(const void* p) {
  size_t i = set_slot((uintptr_t)p);
  while (set[i] != 0) i = (i + 1) & (SET_SIZE - 1);
  set[i] = (uintptr_t)p;
}
static void set_remove(const void* p) {   /* (a tombstone: 1 is never a block) */
  for (size_t i = set_slot((uintptr_t)p); set[i] != 0; i = (i + 1) & (SET_SIZE - 1)) {
    if (set[i] == (uintptr_t)p) { set[i] = 1; return; }
  }
}
static int set_has(const void* p) {
  for (size_t i = set_slot((uintptr_t)p); set[i] != 0; i = (i + 1) & (SET_SIZE - 1)) {
    if (set[i] == (uintptr_t)p) return 1;
  }
  return 0;
}

static bool count_live(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap; (void)area; (void)size;
  if (block != NULL && set_has(block)) (*(size_t*)arg)++;
  return true;
}

/* Live blocks of the set in the calling thread's backing heap (its thread frees collected). */
static size_t live_in_set(void) {
  mi_heap_collect(mi_heap_get_backing(), true);   /* (blocks freed into full pages wait on the heap's delayed list) */
  size_t n = 0;
  mi_heap_visit_blocks(mi_heap_get_backing(), true, &count_live, &n);
  return n;
}

/* The calling thread allocates the blocks: small sizes, several size classes. */
static void alloc_blocks(void) {
  set_clear();
  for (size_t i = 0; i < N_BLOCKS; i++) {
    blocks[i] = mi_malloc(16 + (i % 24) * 40);   /* 16..936 bytes */
    CHECK(blocks[i] != NULL);
    set_add(blocks[i]);
  }
}

/* The freeing thread: frees every block, then does what `mode` says and tells main; main
   counts; the thread then ends (when `wait_after` it waits for main's count first). */
typedef enum { F_COLLECT, F_EXIT, F_SLOW, F_BOUNDED } freer_mode_t;
static freer_mode_t freer_mode;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;   /* 1: the freer is done and waits; 2: main counted */

static void stage_set(int s) { pthread_mutex_lock(&mu); stage = s; pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu); }
static void stage_wait(int s) { pthread_mutex_lock(&mu); while (stage < s) pthread_cond_wait(&cv, &mu); pthread_mutex_unlock(&mu); }

static void* freer(void* arg) {
  (void)arg;
  void* own = mi_malloc(100);   /* (an initialised thread: its frees may be held back) */
  for (size_t i = 0; i < N_BLOCKS; i++) mi_free(blocks[i]);
  void* kept[2000];
  if (freer_mode == F_COLLECT) mi_collect(false);
  if (freer_mode == F_SLOW) {
    /* its own allocations off the fast path: about 100 fresh pages of 24 KiB blocks */
    for (size_t i = 0; i < 2000; i++) kept[i] = mi_malloc(24 * 1024);
    for (size_t i = 0; i < 2000; i++) mi_free(kept[i]);
  }
  mi_free(own);
  if (freer_mode != F_EXIT) {
    stage_set(1);
    stage_wait(2);
  }
  return NULL;
}

static void test_freer(freer_mode_t mode, const char* name) {
  alloc_blocks();
  /* main frees one block in 50 itself: its pages are not full (frees into a full page are
     pushed at once, for the handshake that tells its owner) */
  size_t own_freed = 0;
  for (size_t i = 49; i < N_BLOCKS; i += 50) { set_remove(blocks[i]); mi_free(blocks[i]); blocks[i] = NULL; own_freed++; }
  const size_t live0 = live_in_set();
  CHECK_EQ(live0, N_BLOCKS - own_freed);
  freer_mode = mode;
  stage = 0;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &freer, NULL) == 0);
  if (mode == F_EXIT) pthread_join(t, NULL);
  else stage_wait(1);
  const size_t live = live_in_set();
  if (mode == F_BOUNDED) {
    CHECK_MSG(live <= HELD_MAX, "%s: %zu blocks still live while their freeing thread sleeps (at most %d may be held back)", name, live, HELD_MAX);
  }
  else {
    CHECK_MSG(live == 0, "%s: %zu of %d blocks freed by another thread still live", name, live, N_BLOCKS);
  }
  if (mode != F_EXIT) {
    stage_set(2);
    pthread_join(t, NULL);
    CHECK_MSG(live_in_set() == 0, "%s: blocks still live after their freeing thread ended", name);
  }
  printf("%s: %zu of %d blocks live at the count\n", name, live, N_BLOCKS);
}

/* ---- adopt: an ended thread's pages, with frees held back in them, are not adopted by a
   destroyable heap; destroying such heaps leaves the held frees intact. ---- */
static void* owner_alloc(void* arg) {
  (void)arg;
  alloc_blocks();
  return NULL;
}
static void* owner_free_half(void* arg) {
  (void)arg;
  for (size_t i = 0; i < N_BLOCKS; i++) {   /* half of each size class's blocks, some held back */
    if (i % 48 < 24) mi_free(blocks[i]);
  }
  stage_set(1);
  stage_wait(2);
  mi_collect(false);   /* pushed now, after the heaps below were destroyed */
  for (size_t i = 0; i < N_BLOCKS; i++) {
    if (i % 48 >= 24 && i % 96 != 47 && i % 96 != 46) mi_free(blocks[i]);   /* (main freed those) */
  }
  return NULL;
}

static size_t in_owner_pages(void** ps, size_t n) {
  size_t hits = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < N_BLOCKS; j += 7) {   /* (a sample of the owner's blocks: their 64 KiB pages) */
      if (((uintptr_t)ps[i] >> 16) == ((uintptr_t)blocks[j] >> 16)) { hits++; break; }
    }
  }
  return hits;
}

static void test_adopt(void) {
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, &owner_alloc, NULL) == 0);
  pthread_join(a, NULL);   /* its pages are abandoned, every block live */
  stage = 0;
  CHECK(pthread_create(&b, NULL, &owner_free_half, NULL) == 0);
  stage_wait(1);
  enum { M = 3000 };
  static void* ps[M];
  mi_heap_t* const heaps[2] = { mi_heap_new_shared(), mi_heap_new() };
  for (int h = 0; h < 2; h++) {
    CHECK(heaps[h] != NULL);
    if (heaps[h] == NULL) continue;
    /* the heap is main's default, and main frees blocks of the ended owner with
       reclaim-on-free: a free into an abandoned page adopts it into the default heap if it may */
    mi_option_enable(mi_option_abandoned_reclaim_on_free);
    mi_heap_t* const prev = mi_heap_set_default(heaps[h]);
    for (size_t i = 0; i < N_BLOCKS; i++) {
      if (i % 96 == (size_t)(47 - h)) mi_free(blocks[i]);   /* (a quarter of the blocks of one size class) */
    }
    for (size_t i = 0; i < M; i++) { ps[i] = mi_malloc(16 + (i % 24) * 40); CHECK(ps[i] != NULL); }
    mi_heap_set_default(prev);
    mi_option_disable(mi_option_abandoned_reclaim_on_free);
    const size_t hits = in_owner_pages(ps, M);
    CHECK_MSG(hits == 0, "%s: %zu of its blocks in pages of an ended thread whose frees another thread holds", h == 0 ? "shared heap" : "mi_heap_new heap", hits);
    mi_heap_destroy(heaps[h]);
  }
  stage_set(2);
  pthread_join(b, NULL);
  /* every page of the ended owner is free now: the backing heap adopts what is left, and a
     full collect must find no block of theirs live */
  mi_collect(true);
  set_clear();
  for (size_t i = 0; i < N_BLOCKS; i++) set_add(blocks[i]);
  CHECK_MSG(live_in_set() == 0, "adopt: blocks of the ended owner live after every one was freed");
  /* and the memory is usable: allocate and check it once more */
  for (size_t i = 0; i < M; i++) { ps[i] = mi_malloc(16 + (i % 24) * 40); CHECK(ps[i] != NULL); memset(ps[i], 0x5a, 16); }
  for (size_t i = 0; i < M; i++) mi_free(ps[i]);
  printf("adopt: no destroyable heap took an ended thread's page\n");
}

/* ---- destroy: another thread's frees into a heap that is then destroyed are never held back
   (the destroy frees the pages under them; a late push would hand out live blocks). ---- */
static mi_heap_t* destroy_heap;
static void* destroy_freer(void* arg) {
  (void)arg;
  void* own = mi_malloc(100);
  for (size_t i = 0; i < N_BLOCKS; i++) mi_free(blocks[i]);   /* (NULL: main's own) */
  stage_set(1);
  stage_wait(2);   /* main destroyed the heap and allocated in its memory */
  mi_collect(false);
  mi_free(own);
  stage_set(3);
  return NULL;
}

static void test_destroy(void) {
  destroy_heap = mi_heap_new();
  CHECK(destroy_heap != NULL);
  if (destroy_heap == NULL) return;
  for (size_t i = 0; i < N_BLOCKS; i++) {
    blocks[i] = mi_heap_malloc(destroy_heap, 16 + (i % 24) * 40);
    CHECK(blocks[i] != NULL);
  }
  for (size_t i = 49; i < N_BLOCKS; i += 50) { mi_free(blocks[i]); blocks[i] = NULL; }   /* (pages not full) */
  stage = 0;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, &destroy_freer, NULL) == 0);
  stage_wait(1);
  mi_heap_destroy(destroy_heap);
  /* the destroyed heap's memory serves the backing heap now: live blocks, each filled */
  enum { M = N_BLOCKS };
  static unsigned char* live[M];
  set_clear();
  for (size_t i = 0; i < M; i++) {
    const size_t size = 16 + (i % 24) * 40;
    live[i] = (unsigned char*)mi_malloc(size);
    CHECK(live[i] != NULL);
    if (live[i] == NULL) return;
    memset(live[i], (int)(i & 0xff), size);
    set_add(live[i]);
  }
  stage_set(2);
  stage_wait(3);   /* the freeing thread pushed what it held */
  size_t twice = 0, changed = 0;
  for (size_t i = 0; i < M; i++) {
    void* const p = mi_malloc(16 + (i % 24) * 40);
    if (p != NULL && set_has(p)) twice++;
    blocks[i] = p;
  }
  for (size_t i = 0; i < M; i++) {
    const size_t size = 16 + (i % 24) * 40;
    for (size_t k = 0; k < size; k++) {
      if (live[i][k] != (unsigned char)(i & 0xff)) { changed++; break; }
    }
  }
  CHECK_MSG(twice == 0, "destroy: %zu live blocks handed out again after a late push of frees into the destroyed heap", twice);
  CHECK_MSG(changed == 0, "destroy: %zu live blocks changed", changed);
  for (size_t i = 0; i < M; i++) { mi_free(blocks[i]); mi_free(live[i]); }
  pthread_join(t, NULL);
  printf("destroy: no block handed out twice\n");
}

int main(int argc, char** argv) {
  const char* what = (argc > 1 ? argv[1] : "all");
  const bool all = (strcmp(what, "all") == 0);
  if (all || strcmp(what, "collect") == 0) test_freer(F_COLLECT, "collect");
  if (all || strcmp(what, "exit") == 0) test_freer(F_EXIT, "exit");
  if (all || strcmp(what, "slow") == 0) test_freer(F_SLOW, "slow");
  if (all || strcmp(what, "bounded") == 0) test_freer(F_BOUNDED, "bounded");
  if (all || strcmp(what, "adopt") == 0) test_adopt();
  if (all || strcmp(what, "destroy") == 0) test_destroy();
  return test_summary("remote-batch", "%s", what);
}
