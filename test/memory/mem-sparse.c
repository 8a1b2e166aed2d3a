/* SPDX-License-Identifier: MIT */
/* mem-sparse.c -- pages that hold a few live blocks give back the OS pages inside their free
   blocks (page.c, _mi_page_purge_free_interiors; docs/memory.md, "The memory limit"): a size
   class the program no longer asks for would otherwise pin whole pages for its survivors.

   Usage: mem-sparse collect|pressing|ended [small] [expect-drop]
     The program allocates 64 MiB of 32 KiB blocks (16 to a 512 KiB page), each filled with a
     pattern of its own, and frees all but every 16th: each page keeps one live block. With
     `small`, 64 MiB of 1000-byte blocks (about 64 to a 64 KiB page, across OS page
     boundaries) of which every 61st stays: blocks below an OS page, whose links go with the OS
     pages given back (the page's interior_purged mask). With `mid`, 64 MiB of 5000-byte
     blocks (about 12 to a 64 KiB page), every 13th kept: blocks above an OS page that hold
     no whole OS page past their first words, so only the mask gives their memory back. Then
       collect   mi_collect(true)
       pressing  no collect: 400 ms of allocations in new heaps (the slow path, whose periodic
                 collect also collects the backing heap, where the pages are), run under
                 MIMALLOC_MEMORY_LIMIT=16MiB (near the limit: it collects every 100 ms and
                 gives the free blocks' insides back)
       ended     as pressing, but a thread allocated the blocks, freed its share and ended: its
                 pages are abandoned with one live block each; near the limit the slow path's
                 collect takes them back (as mi_collect(true) does) and gives back the rest
     and checks:
     - with expect-drop (release builds with the RSS reliable: debug builds check the fill of
       free blocks and keep it, memory checkers track every byte), the RSS falls by at least
       40 of the 60 MiB freed, and the statistics' `reset` (memory discarded) grew by that;
     - always: every live block still holds its pattern; visiting the heap's blocks
       (collect) finds exactly the live ones of the test's size; the freed blocks are handed out again
       (new allocations land in the pages of the first ones: the pages were kept), their memory
       is usable (written and read back whole) and calloc'ed ones read zero; freeing everything
       at the end leaves no page in use. */
#include "memory-common.h"

#define MAX_COUNT 65536
static size_t BLOCK = 32 * KiB;
static size_t COUNT = 2048;      /* 64 MiB */
static size_t KEEP = 16;         /* every 16th stays live: one per 512 KiB page */

static unsigned char* blocks[MAX_COUNT];

static unsigned char pattern_of(size_t i, size_t k) { return (unsigned char)(i * 131 + k * 7 + 1); }

static void fill(size_t i) {
  for (size_t k = 0; k < BLOCK; k += 512) blocks[i][k] = pattern_of(i, k);
  blocks[i][BLOCK - 1] = pattern_of(i, BLOCK - 1);
}

static bool intact(size_t i) {
  for (size_t k = 0; k < BLOCK; k += 512) if (blocks[i][k] != pattern_of(i, k)) return false;
  return (blocks[i][BLOCK - 1] == pattern_of(i, BLOCK - 1));
}

static uintptr_t lo = UINTPTR_MAX, hi = 0;

/* mi_heap_visit_blocks: the blocks of the test's size inside [lo, hi) */
static bool count_visited(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)block_size;
  if (block != NULL && area->block_size >= BLOCK && area->block_size < BLOCK + BLOCK / 8 &&
      (uintptr_t)block >= lo && (uintptr_t)block < hi) (*(size_t*)arg)++;
  return true;
}

/* 64 MiB of blocks, each filled, then all but every KEEP-th freed */
static void* allocate_and_thin(void* arg) {
  (void)arg;
  for (size_t i = 0; i < COUNT; i++) {
    blocks[i] = (unsigned char*)mi_malloc(BLOCK);
    CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) return NULL;
    memset(blocks[i], 0x5a, BLOCK);   /* resident, all of it */
    fill(i);
    if ((uintptr_t)blocks[i] < lo) lo = (uintptr_t)blocks[i];
    if ((uintptr_t)blocks[i] + BLOCK > hi) hi = (uintptr_t)blocks[i] + BLOCK;
  }
  for (size_t i = 0; i < COUNT; i++) {
    if (i % KEEP != 0) { mi_free(blocks[i]); blocks[i] = NULL; }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "collect") != 0 && strcmp(argv[1], "pressing") != 0 && strcmp(argv[1], "ended") != 0)) {
    fprintf(stderr, "usage: mem-sparse collect|pressing|ended [small] [expect-drop]\n");
    return 2;
  }
  const bool small = (argc > 2 && strcmp(argv[2], "small") == 0);
  const bool mid = (argc > 2 && strcmp(argv[2], "mid") == 0);
  if (small) { BLOCK = 1000; COUNT = MAX_COUNT; KEEP = 61; }
  if (mid) { BLOCK = 5000; COUNT = 13000; KEEP = 13; }
  const bool ended = (strcmp(argv[1], "ended") == 0);
  const bool pressing = ended || (strcmp(argv[1], "pressing") == 0);
  const bool expect_drop = (argc > 2 && strcmp(argv[argc - 1], "expect-drop") == 0 && MT_RSS_ASSERTS);
  if (ended) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, &allocate_and_thin, NULL) == 0);
    pthread_join(t, NULL);
  }
  else {
    allocate_and_thin(NULL);
  }
  const size_t rss_before = mt_rss();
  const int64_t reset_before = mt_stats()->reset.total;
  if (pressing) {
    /* other work that takes the allocation slow path (a heap's first block of each size class),
       whose periodic collect also collects the thread's backing heap, where the pages are */
    const long long end = mt_now_ms() + 400;
    while (mt_now_ms() < end) {
      mi_heap_t* const heap = mi_heap_new();
      for (size_t k = 0; k < 100; k++) CHECK(mi_heap_malloc(heap, 16 + k * 40) != NULL);
      mi_heap_destroy(heap);
    }
  }
  else {
    mi_collect(true);
  }
  const size_t rss_after = mt_rss();
  const int64_t reset_after = mt_stats()->reset.total;
  printf("rss %zu -> %zu KiB, discarded %lld KiB\n", rss_before / KiB, rss_after / KiB,
         (long long)(reset_after - reset_before) / (long long)KiB);
  if (expect_drop) {
    CHECK_MSG(rss_after + 40 * MiB <= rss_before, "rss %zu -> %zu KiB", rss_before / KiB, rss_after / KiB);
    CHECK_GE((size_t)(reset_after - reset_before), (size_t)(40 * MiB));
  }
  for (size_t i = 0; i < COUNT; i += KEEP) CHECK_MSG(intact(i), "live block %zu changed", i);
  if (!pressing) {
    size_t visited = 0;
    CHECK(mi_heap_visit_blocks(mi_heap_get_default(), true, &count_visited, &visited));
    CHECK_MSG(visited == (COUNT + KEEP - 1) / KEEP, "visited %zu live blocks, %zu are live", visited, (COUNT + KEEP - 1) / KEEP);
  }
  /* the freed blocks again: in the kept pages, whole, writable; calloc'ed ones zero */
  size_t inside = 0;
  for (size_t i = 0; i < COUNT; i++) {
    if (i % KEEP == 0) continue;
    blocks[i] = (unsigned char*)(i % 2 == 0 ? mi_calloc(1, BLOCK) : mi_malloc(BLOCK));
    CHECK(blocks[i] != NULL);
    if (blocks[i] == NULL) break;
    if (i % 2 == 0) {
      CHECK_MSG(mt_is_zero(blocks[i], BLOCK), "calloc'ed block %zu is not zero", i);
    }
    if ((uintptr_t)blocks[i] >= lo && (uintptr_t)blocks[i] < hi) inside++;
    fill(i);
  }
  CHECK_MSG(inside >= (COUNT - COUNT / KEEP) * 9 / 10, "%zu of %zu new blocks in the first blocks' pages", inside, COUNT - COUNT / KEEP);
  for (size_t i = 0; i < COUNT; i++) CHECK_MSG(blocks[i] == NULL || intact(i), "block %zu changed", i);
  for (size_t i = 0; i < COUNT; i++) mi_free(blocks[i]);
  mi_collect(true);
  return test_summary("mem-sparse", "%s%s%s", argv[1], small ? ", small blocks" : mid ? ", 5000-byte blocks" : "", expect_drop ? ", RSS checked" : "");
}
