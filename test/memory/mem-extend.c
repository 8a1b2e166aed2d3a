/* SPDX-License-Identifier: MIT */
/* mem-extend.c -- how far a page's free list runs ahead of the blocks handed out (page.c,
   mi_page_extend_free; types.h, MI_MAX_EXTEND_SIZE).

   A page makes its blocks available a few at a time. Each extension from address x hands out
   the blocks that start before B, the first 4 KiB boundary at or after x + 2 KiB (the page's
   end if that comes first), and at least one block (secure builds: 4, which they shuffle). Its
   free-list links are written at the block starts, so it touches no OS page beyond the blocks
   it hands out: a size class with few blocks keeps few OS pages resident.

   For block sizes from 16 B to 64 KiB, a fresh heap allocates blocks one at a time; after each
   allocation the heap visit (area.committed) says whether the page extended, and every
   extension is checked against the rule above. With `resident` (release builds, no memory
   checker), mincore then checks that the page's resident OS pages are exactly those in which
   the blocks handed out so far start: the process is fresh, nothing was freed, so every page
   comes from untouched memory, and the test writes nothing into the blocks.

   usage: mem-extend [secure] [resident] */
#include "memory-common.h"

#define OS_PAGE  ((size_t)4096)
#define STEPS    24   /* allocations per size: several extensions for every size */

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static size_t extensions_checked;

/* (the heap is kept to the end: its pages freed, another size could take their resident slots) */
static mi_heap_t* check_size(size_t size, bool secure, bool resident) {
  mi_heap_t* heap = mi_heap_new();
  CHECK(heap != NULL);
  size_t committed = 0;
  uintptr_t page_start = 0;
  for (size_t k = 0; k < STEPS; k++) {
    void* p = mi_heap_malloc(heap, size);
    CHECK(p != NULL);
    const mi_heap_area_t a = mt_area_of(heap, p);
    const uintptr_t s = (uintptr_t)a.blocks;
    const size_t bsize = a.full_block_size;
    CHECK(a.committed % bsize == 0 && a.committed <= a.reserved);
    if (s != page_start) { committed = 0; page_start = s; }   /* a new page of the class */
    if (a.committed != committed) {
      /* one extension: from x = s + committed to e = s + a.committed */
      const uintptr_t x = s + committed;
      const uintptr_t e = s + a.committed;
      const uintptr_t end = s + a.reserved;
      const uintptr_t b = align_up(x + OS_PAGE / 2, OS_PAGE);
      const size_t blocks = (size_t)(e - x) / bsize;
      extensions_checked++;
      if (secure) {
        CHECK_MSG(blocks >= 4 || e == end, "size %zu: secure extension of %zu blocks", size, blocks);
      }
      else {
        CHECK_MSG(blocks >= 1, "size %zu: empty extension", size);
        /* every block handed out starts before B */
        CHECK_MSG(e - bsize < b, "size %zu: extension %#zx..%#zx runs past the boundary %#zx",
                  size, (size_t)(x - s), (size_t)(e - s), (size_t)(b - s));
        /* and it hands out all of them (up to the page's end) */
        CHECK_MSG(e >= b || e == end, "size %zu: extension %#zx..%#zx stops before the boundary %#zx",
                  size, (size_t)(x - s), (size_t)(e - s), (size_t)(b - s));
      }
      committed = a.committed;
    }
    if (resident && MT_RSS_ASSERTS && !secure) {
      /* resident: exactly the OS pages where the handed-out blocks start (their links) */
      size_t expect = 0;
      uintptr_t last = 0;
      for (uintptr_t q = s; q < s + a.committed; q += bsize) {
        const uintptr_t page = q / OS_PAGE;
        if (page != last) { expect++; last = page; }
      }
      const size_t got = mt_resident_pages(s, s + a.reserved);
      /* (an OS page the first block shares with the segment's header is counted in both) */
      CHECK_MSG(got == expect,
                "size %zu after %zu blocks: %zu OS pages resident, blocks start in %zu", size, k + 1, got, expect);
      const size_t beyond = mt_resident_pages(align_up(s + a.committed - bsize + 1, OS_PAGE), s + a.reserved);
      CHECK_MSG(beyond == 0, "size %zu after %zu blocks: %zu OS pages resident beyond the last block start at +%#zx",
                size, k + 1, beyond, (size_t)(a.committed - bsize));
    }
  }
  return heap;
}

int main(int argc, char** argv) {
  bool secure = false, resident = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "secure") == 0) secure = true;
    else if (strcmp(argv[i], "resident") == 0) resident = true;
    else { fprintf(stderr, "usage: mem-extend [secure] [resident]\n"); return 2; }
  }
  static const size_t sizes[] = { 16, 48, 112, 160, 448, 1000, 2048, 3000, 4096, 5000, 8192, 12000, 16384, 40000, 65536 };
  enum { N = sizeof(sizes) / sizeof(sizes[0]) };
  mi_heap_t* heaps[N];
  for (size_t i = 0; i < N; i++) heaps[i] = check_size(sizes[i], secure, resident);
  for (size_t i = 0; i < N; i++) mi_heap_destroy(heaps[i]);
  CHECK_MSG(extensions_checked >= 60, "only %zu extensions seen", extensions_checked);
  return test_summary("mem-extend", "%zu extensions checked%s%s", extensions_checked,
                      secure ? ", secure" : "", resident && MT_RSS_ASSERTS && !secure ? ", resident pages checked" : "");
}
