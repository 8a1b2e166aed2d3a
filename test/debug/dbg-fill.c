/* SPDX-License-Identifier: MIT */
/* Fill patterns of the debug build (no misuse reported: expects no message at all).
   Case "all":
     - a fresh mi_malloc(100) block reads 0xD0 in all 100 bytes, and its slack (the bytes
       between the requested size and the padding, 4 for this size) reads 0xDE;
     - also a block taken from the free list (a freed block handed out again), a block of a
       large (medium page) size, an over-aligned interior block and the grown part of a
       mi_realloc'ed block read 0xD0;
     - after mi_free, a dangling read of bytes 8..99 (through a volatile pointer; another live
       block keeps the page in use) shows 0xDF; the whole block past the link word, padding
       included, is 0xDF;
     - mi_zalloc(100), mi_calloc(10, 10), mi_zalloc_aligned, mi_rezalloc's grown part and
       mi_zalloc of a just-freed (0xDF-filled) block are all zero. */
#include "dbg.h"

static bool all_bytes(const void* p, size_t from, size_t to, uint8_t value, const char* what) {
  const volatile uint8_t* b = (const volatile uint8_t*)dbg_launder((void*)p);
  for (size_t i = from; i < to; i++) {
    if (b[i] != value) {
      printf("FAIL %s: byte %zu of %p is 0x%02x, not 0x%02x\n", what, i, p, b[i], value);
      dbg_failures++;
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  if (strcmp(c, "all") != 0) return dbg_unknown_case(c);

  /* a private heap: a forced collect puts the freed p at the head of its page's free list */
  mi_heap_t* heap = mi_heap_new();
  void* keep = mi_heap_malloc(heap, 100);   /* keeps the page of the 100-byte blocks in use */
  uint8_t* p = (uint8_t*)mi_heap_malloc(heap, 100);
  DBG_CHECK(p != NULL && keep != NULL);
  dbg_var_ptr("p", p);
  all_bytes(p, 0, 100, 0xD0, "new block");
  const size_t bsize = dbg_block_size(100);
  DBG_CHECK(bsize == 128);
  all_bytes(p, 100, bsize - DBG_PADDING_SIZE, 0xDE, "slack");
  memset(dbg_launder(p), 0x11, 100);

  mi_free(p);
  all_bytes(p, 8, 100, 0xDF, "freed block");
  /* the padding keeps its delta (the requested size, for a double-free report) under a
     canary of the freed form and its check word; the caller field between them is freed
     fill, the last 4 bytes are the next block's guard */
  all_bytes(p, 8, bsize - DBG_PADDING_SIZE, 0xDF, "freed block (to its padding)");
  all_bytes(p, bsize - DBG_PADDING_SIZE + 8, bsize - 8, 0xDF, "freed block (caller field of its padding)");
  DBG_CHECK(*(const uint32_t*)(p + bsize - DBG_PADDING_SIZE + 4) == bsize - DBG_PADDING_SIZE - 100);   /* delta */

  /* the same block handed out again: uninitialised bytes are 0xD0 again */
  mi_heap_collect(heap, true);
  uint8_t* r = (uint8_t*)mi_heap_malloc(heap, 100);
  DBG_CHECK(r == p);
  all_bytes(r, 0, 100, 0xD0, "reused block");
  all_bytes(r, 100, bsize - DBG_PADDING_SIZE, 0xDE, "reused block's slack");
  mi_free(r);

  /* zalloc of a freed (0xDF) block is zero, also a fresh one */
  mi_heap_collect(heap, true);
  uint8_t* z = (uint8_t*)mi_heap_zalloc(heap, 100);
  DBG_CHECK(z == p);
  all_bytes(z, 0, 100, 0, "mi_zalloc (reused block)");
  uint8_t* z2 = (uint8_t*)mi_zalloc(100);
  all_bytes(z2, 0, 100, 0, "mi_zalloc");
  uint8_t* cz = (uint8_t*)mi_calloc(10, 10);
  all_bytes(cz, 0, 100, 0, "mi_calloc(10, 10)");
  mi_free(z);
  mi_free(z2);
  mi_free(cz);
  cz = (uint8_t*)mi_calloc(1000, 100);   /* a medium page */
  all_bytes(cz, 0, 100000, 0, "mi_calloc(1000, 100)");
  mi_free(cz);

  /* larger and aligned blocks */
  uint8_t* big = (uint8_t*)mi_malloc(100000);
  all_bytes(big, 0, 100000, 0xD0, "mi_malloc(100000)");
  void* keep_big = mi_malloc(100000);
  mi_free(big);
  all_bytes(big, 8, 100000, 0xDF, "freed mi_malloc(100000)");
  mi_free(keep_big);
  uint8_t* al = (uint8_t*)mi_malloc_aligned(100, 4096);
  DBG_CHECK(((uintptr_t)al % 4096) == 0);
  all_bytes(al, 0, 100, 0xD0, "mi_malloc_aligned(100, 4096)");
  mi_free(al);
  al = (uint8_t*)mi_zalloc_aligned(100, 4096);
  all_bytes(al, 0, 100, 0, "mi_zalloc_aligned(100, 4096)");
  mi_free(al);

  /* realloc: the grown part is uninitialised (0xD0); rezalloc: zero */
  uint8_t* g = (uint8_t*)mi_malloc(40);
  memset(dbg_launder(g), 0x22, 40);
  g = (uint8_t*)mi_realloc(g, 200);
  all_bytes(g, 0, 40, 0x22, "mi_realloc (kept bytes)");
  all_bytes(g, 40, 200, 0xD0, "mi_realloc (grown bytes)");
  mi_free(g);
  g = (uint8_t*)mi_zalloc(40);
  memset(dbg_launder(g), 0x22, 40);
  g = (uint8_t*)mi_rezalloc(g, 200);
  all_bytes(g, 0, 40, 0x22, "mi_rezalloc (kept bytes)");
  all_bytes(g, 40, 200, 0, "mi_rezalloc (grown bytes)");
  mi_free(g);

  mi_free(keep);
  mi_heap_delete(heap);
  return dbg_finish();
}
