/* SPDX-License-Identifier: MIT */
/* mem-remote.c -- pages that other threads' frees emptied go back while their owner lives and
   allocates elsewhere (memory-remote-large, memory-remote-small).

   A page's blocks freed by another thread wait on the page's thread_free list until the owner
   looks at that page again. Two mechanisms bring such pages back without waiting for the owner
   to allocate from their size class again (src/page.c, src/heap.c):
   - large: a large page (one block) goes to its heap's full queue as the block is handed out,
     so another thread's free of it goes to the owner's delayed list, which its slow path takes
     within a few calls, and the page is freed;
   - small: a thread that takes fresh pages sweeps all its pages every 8 + a quarter of their
     number, giving back those whose blocks in use were (at least half) freed by others.

   usage: mem-remote large|small

   Thread A (alive until the end) allocates a set of blocks and hands them to thread B, which
   frees them all:
     large  one block in each of 14 large size classes (132 KiB .. 1.9 MiB, 11.6 MiB): each is
            the only page of its class, so no walk of its queue ever reaches it;
     small  8 MiB of 1 KiB blocks (128 pages of 64 KiB); A frees every other block itself first,
            so the pages leave the full queue (B's frees then go to the pages' own lists).
   Then A allocates elsewhere, each mechanism alone: small, 4 MiB of 2 KiB blocks (64 fresh
   pages, kept until the end); large, 64 huge blocks of 3 MiB, each freed at once (slow-path
   calls that take no fresh page, so no sweep). Then B allocates the same set again. Checked: at least a quarter
   of B's new blocks lie where A's pages were (large: inside one of A's blocks; small: in one of
   the 64 KiB pages A's blocks were in); A's own fresh pages may take some of those slots first.
   Before these mechanisms none did: A's pages stayed A's, each with its blocks on its
   thread_free list (without the first mechanism alone, 4 of the 14 large blocks did). The memory committed during B's allocation is printed, not checked (it
   grows by whole segments).
   MIMALLOC_PURGE_DELAY is 1000 ms (mi_option_set): the test is about reuse, not purging, and
   the periodic collect of a heap (every 10 purge delays, which also gives such pages back) does
   not run during it.
   Also checked: every block keeps its fill pattern until freed. */
#include "memory-common.h"

#include <pthread.h>

#define SMALL_SIZE   (1 * KiB)
#define SMALL_COUNT  8192
#define OTHER_SIZE   (2 * KiB)
#define OTHER_COUNT  2048
#define LARGE_COUNT  14
#define HUGE_SIZE    (3 * MiB)
#define HUGE_CALLS   64

static bool mode_large;
static size_t set_count, set_bytes;
static void* set_blocks[SMALL_COUNT];
static size_t set_sizes[SMALL_COUNT];

/* phases (mt_phase_set): 1: A allocated the set; 2: B freed it; 3: A allocated elsewhere; 4: B done */

/* the sizes of the set: 14 large classes growing by 1/4 each from 132 KiB, or 1 KiB blocks */
static void set_plan(void) {
  set_bytes = 0;
  if (mode_large) {
    set_count = LARGE_COUNT;
    size_t size = 132 * KiB;
    for (size_t i = 0; i < set_count; i++) {
      set_sizes[i] = size;
      set_bytes += size;
      size += size / 4;
    }
  }
  else {
    set_count = SMALL_COUNT;
    for (size_t i = 0; i < set_count; i++) { set_sizes[i] = SMALL_SIZE; set_bytes += SMALL_SIZE; }
  }
}

static void set_alloc(uint8_t fill) {
  for (size_t i = 0; i < set_count; i++) {
    set_blocks[i] = mi_malloc(set_sizes[i]);
    CHECK_MSG(set_blocks[i] != NULL, "malloc(%zu) failed", set_sizes[i]);
    if (set_blocks[i] != NULL) mt_fill(set_blocks[i], set_sizes[i], fill);
  }
}

static void set_free(size_t first, size_t step, uint8_t fill) {
  for (size_t i = first; i < set_count; i += step) {
    if (set_blocks[i] == NULL) continue;
    CHECK_MSG(mt_is_filled(set_blocks[i], set_sizes[i], fill), "block %zu (%p) lost its contents", i, set_blocks[i]);
    mi_free(set_blocks[i]);
    set_blocks[i] = NULL;
  }
}

static int64_t growth;   /* committed bytes added by B's second allocation */
static size_t reused;    /* B's blocks where A's pages were */

/* the ranges A's set occupied: large, each block; small, the 64 KiB pages of its blocks */
#define PAGE_RANGE (64 * KiB)
static uintptr_t a_start[SMALL_COUNT], a_end[SMALL_COUNT];
static size_t a_ranges;

static void a_ranges_record(void) {
  a_ranges = 0;
  for (size_t i = 0; i < set_count; i++) {
    if (set_blocks[i] == NULL) continue;
    uintptr_t start = (uintptr_t)set_blocks[i], end = start + set_sizes[i];
    if (!mode_large) { start &= ~(uintptr_t)(PAGE_RANGE - 1); end = start + PAGE_RANGE; }
    if (a_ranges > 0 && a_start[a_ranges - 1] == start) continue;   /* the same page as the last */
    a_start[a_ranges] = start;
    a_end[a_ranges] = end;
    a_ranges++;
  }
}

static bool in_a_ranges(const void* p) {
  for (size_t j = 0; j < a_ranges; j++) {
    if ((uintptr_t)p >= a_start[j] && (uintptr_t)p < a_end[j]) return true;
  }
  return false;
}

static void* thread_a(void* arg) {
  (void)arg;
  /* the thread's first periodic collect (on its 16th slow-path call; the next one 10 purge
     delays later) happens now, not in the middle of the test: a block in each of 64 small
     classes, each a slow-path call */
  static void* warm[64];
  for (size_t i = 0; i < 64; i++) warm[i] = mi_malloc(16 * (i + 1));
  for (size_t i = 0; i < 64; i++) mi_free(warm[i]);
  set_alloc(0xA1);
  a_ranges_record();
  if (!mode_large) set_free(1, 2, 0xA1);   /* the odd blocks: the pages leave the full queue */
  mt_phase_set(1);
  mt_phase_wait(2);
  /* elsewhere: small, fresh pages of another class (each a slow-path call, and the sweep every
     8 + a quarter of the pages); large, slow-path calls without a fresh page (huge blocks,
     which take no page of a queue) */
  static void* other[OTHER_COUNT];
  if (mode_large) {
    for (size_t i = 0; i < HUGE_CALLS; i++) {
      void* p = mi_malloc(HUGE_SIZE);
      CHECK(p != NULL);
      mi_free(p);
    }
  }
  else {
    for (size_t i = 0; i < OTHER_COUNT; i++) {
      other[i] = mi_malloc(OTHER_SIZE);
      CHECK(other[i] != NULL);
      if (other[i] != NULL) mt_fill(other[i], OTHER_SIZE, 0xA2);
    }
  }
  mt_phase_set(3);
  mt_phase_wait(4);
  for (size_t i = 0; i < OTHER_COUNT && !mode_large; i++) {
    if (other[i] == NULL) continue;
    CHECK_MSG(mt_is_filled(other[i], OTHER_SIZE, 0xA2), "block %p lost its contents", other[i]);
    mi_free(other[i]);
  }
  return NULL;
}

static void* thread_b(void* arg) {
  (void)arg;
  mt_phase_wait(1);
  set_free(0, 1, 0xA1);   /* all of A's blocks still live */
  mt_phase_set(2);
  mt_phase_wait(3);
  const int64_t before = mt_stats()->committed.current;
  set_alloc(0xB1);
  growth = mt_stats()->committed.current - before;
  for (size_t i = 0; i < set_count; i++) if (set_blocks[i] != NULL && in_a_ranges(set_blocks[i])) reused++;
  set_free(0, 1, 0xB1);
  mt_phase_set(4);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "large") != 0 && strcmp(argv[1], "small") != 0)) {
    fprintf(stderr, "usage: mem-remote large|small\n");
    return 2;
  }
  mode_large = (strcmp(argv[1], "large") == 0);
  mi_option_set(mi_option_purge_delay, 1000);
  set_plan();
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, thread_a, NULL) == 0);
  CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
  pthread_join(b, NULL);
  pthread_join(a, NULL);
  printf("mem-remote %s: a set of %zu blocks, %.1f MiB; of B's second set %zu blocks where A's pages were; "
         "committed growth meanwhile %.1f MiB\n", argv[1], set_count, mt_mib(set_bytes), reused, (double)growth / (double)MiB);
  const size_t need = (mode_large ? set_count * 3 / 4 : set_count / 4);
  CHECK_MSG(reused >= need, "only %zu of B's %zu blocks where A's pages were: the pages B's frees emptied "
            "stayed A's", reused, set_count);
  return test_summary(mode_large ? "memory-remote-large" : "memory-remote-small", "%zu of %zu blocks reused A's pages", reused, set_count);
}
