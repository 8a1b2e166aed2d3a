/* SPDX-License-Identifier: MIT */
/* Invalid frees (EINVAL, ignored): pointers that are not the start of a block of ours.
   Afterwards the block they point into (if any) is still valid: its bytes and usable size are
   unchanged, it can be reallocated and freed without any message, and the heap still works.

   Cases (p = mi_malloc(56): a block of 80 bytes with the padding):
     stack        the address of a local variable  "(not allocated by this allocator; ignored)"
     global       the address of a global variable  (the same)
     literal      a string literal                  (the same)
     mmap         inside a mapping of the program's own (mmap)   (the same)
     interior1    p + 1   "(points inside block <p> of size 80, not at its start; ignored)"
     interior16   p + 16  (the same)
     interior-end p + 79, the last byte of the block (its padding)   (the same)
     never        a block 40 blocks beyond the first of a fresh page of 1 KiB blocks: inside the
                  page, beyond its capacity (which grows a few KiB at a time)
                  "(never allocated; ignored)"
     segment      the start of p's 4 MiB segment (maps to the segment before it, not ours)
                  "(not allocated by this allocator; ignored)"
     meta         256 bytes into p's segment, the segment's descriptors before the first page's
                  blocks: "(inside the metadata of a page of block size <n>; ignored)" */
#include "dbg.h"
#include <sys/mman.h>

static int global_int = 42;
static const char* const literal = "a string literal";

static uint8_t* p;           /* the block of the interior cases */
static size_t p_size = 56;

static void free_invalid(void* q) {
  dbg_var_ptr("q", q);
  dbg_step("free");
  mi_free(dbg_launder(q));
  dbg_step("freed");
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  p = (uint8_t*)mi_malloc(p_size);
  DBG_CHECK(p != NULL);
  dbg_var_ptr("p", p);
  dbg_fill(p, p_size, 99);
  if (strcmp(c, "stack") == 0) {
    volatile int local = 7;
    free_invalid((void*)&local);
    DBG_CHECK(local == 7);
  }
  else if (strcmp(c, "global") == 0) {
    free_invalid(&global_int);
    DBG_CHECK(global_int == 42);
  }
  else if (strcmp(c, "literal") == 0) {
    free_invalid((void*)literal);
    DBG_CHECK(strcmp(literal, "a string literal") == 0);
  }
  else if (strcmp(c, "mmap") == 0) {
    uint8_t* m = (uint8_t*)mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    DBG_CHECK(m != MAP_FAILED);
    m[100] = 5;
    free_invalid(m + 64);
    DBG_CHECK(m[100] == 5);
    munmap(m, 1 << 20);
  }
  else if (strcmp(c, "interior1") == 0) {
    free_invalid(p + 1);
  }
  else if (strcmp(c, "interior16") == 0) {
    free_invalid(p + 16);
  }
  else if (strcmp(c, "interior-end") == 0) {
    free_invalid(p + 79);
  }
  else if (strcmp(c, "never") == 0) {
    /* a fresh page (private heap): its capacity grows lazily, a few KiB at a time, so a block
       40 blocks further on is inside the page but was never handed out */
    mi_heap_t* heap = mi_heap_new();
    uint8_t* a = (uint8_t*)mi_heap_malloc(heap, 1000);
    uint8_t* b = (uint8_t*)mi_heap_malloc(heap, 1000);
    const size_t bsize = (size_t)(b - a);
    dbg_var_size("bsize", bsize);
    DBG_CHECK(bsize == 1024);
    DBG_CHECK(((uintptr_t)(a + 40 * bsize) >> 16) == ((uintptr_t)a >> 16));   /* same 64 KiB page */
    free_invalid(a + 40 * bsize);
    mi_free(a);
    mi_free(b);
    mi_heap_delete(heap);
  }
  else if (strcmp(c, "segment") == 0) {
    /* the start of p's segment: taken for the end of the one before it (segment map) */
    free_invalid((void*)((uintptr_t)p & ~(uintptr_t)((4u << 20) - 1)));   /* 4 MiB segments */
  }
  else if (strcmp(c, "meta") == 0) {
    /* 256 bytes into p's segment: the segment's descriptors, before its first page's blocks */
    free_invalid((void*)(((uintptr_t)p & ~(uintptr_t)((4u << 20) - 1)) + 256));
  }
  else {
    return dbg_unknown_case(c);
  }
  /* the block is untouched and still valid */
  DBG_CHECK(dbg_check_fill(p, p_size, 99));
  DBG_CHECK(mi_usable_size(p) == p_size);
  p = (uint8_t*)mi_realloc(p, 2 * p_size);
  DBG_CHECK(p != NULL && dbg_check_fill(p, p_size, 99));
  mi_free(p);
  static const size_t sizes[] = { 64, 1000, 8, 100 };
  dbg_heap_works(3000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
