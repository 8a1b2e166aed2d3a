/* SPDX-License-Identifier: MIT */
/* Double frees (EAGAIN, "double free detected of block <p> with size <requested size> (ignored)").
   The extra free must be ignored: afterwards the heap hands out every block at most once.

   Cases (p = mi_malloc(64), a block of 96 bytes with the padding, unless said otherwise):
     twice              freed twice by the owner thread
     thrice             freed three times: two reports
     buried             freed, then 100 more blocks of its size freed, then p again
     reused             freed, then a forced collect of its (private) heap moves p from the
                        page's local_free list to its free list, then p freed again
     small              mi_malloc(8) (a 32-byte block) freed twice
     zero               mi_malloc(0) (a block that is only padding) freed twice
     large              mi_malloc(100000) freed twice
     remote-twice       freed twice by another thread
     remote-then-local  freed by another thread, then by the owner
     abandoned          a block of a thread that has ended (and left a second block alive),
                        freed twice by the main thread
     abandoned-released the only block of a thread that has ended, freed twice: the first free
                        adopts the page (abandoned_reclaim_on_free) and frees the block in it,
                        so the second is a double free in a page of this thread
   debug-pending (double frees that are not detected yet):
     local-then-remote  freed by the owner, then by another thread
     remote-full        freed twice by another thread while its page is full (the first free
                        goes to the heap's delayed-free list)
   After the misuse: many blocks of the same and other sizes are allocated, filled with
   distinct patterns, checked (no block twice, patterns intact) and freed. */
#include "dbg.h"
#include <pthread.h>

static void* volatile shared_block;
static int frees_in_thread;

static void* thread_free(void* arg) {
  (void)arg;
  for (int i = 0; i < frees_in_thread; i++) {
    dbg_step("thread free %d", i + 1);
    mi_free(shared_block);
  }
  return NULL;
}

static void free_in_thread(void* p, int times) {
  shared_block = p;
  frees_in_thread = times;
  pthread_t t;
  DBG_CHECK(pthread_create(&t, NULL, &thread_free, NULL) == 0);
  pthread_join(t, NULL);
}

static void* volatile kept_block;
static void* thread_alloc(void* arg) {
  shared_block = mi_malloc(64);
  if (arg != NULL) kept_block = mi_malloc(64);   /* keeps the page of an ended thread */
  return NULL;
}

static void free_n(void* p, int times) {
  for (int i = 0; i < times; i++) {
    dbg_step("free %d", i + 1);
    mi_free(p);
  }
}

static void* alloc(size_t n) {
  void* p = mi_malloc(n);
  DBG_CHECK(p != NULL);
  dbg_var_ptr("p", p);
  memset(dbg_launder(p), 0x33, n);
  return p;
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  size_t checked_size = 64;
  if (strcmp(c, "twice") == 0) {
    free_n(alloc(64), 2);
  }
  else if (strcmp(c, "thrice") == 0) {
    free_n(alloc(64), 3);
  }
  else if (strcmp(c, "buried") == 0) {
    void* others[100];
    for (int i = 0; i < 100; i++) others[i] = mi_malloc(64);
    void* p = alloc(64);
    free_n(p, 1);
    for (int i = 0; i < 100; i++) mi_free(others[i]);
    dbg_step("again");
    mi_free(dbg_launder(p));
  }
  else if (strcmp(c, "reused") == 0) {
    /* a forced collect moves the page's local_free list (holding p) to page->free */
    mi_heap_t* heap = mi_heap_new();
    void* keep = mi_heap_malloc(heap, 64);   /* keeps the page in use */
    void* p = mi_heap_malloc(heap, 64);
    dbg_var_ptr("p", p);
    free_n(p, 1);
    mi_heap_collect(heap, true);
    dbg_step("again");
    mi_free(dbg_launder(p));
    mi_free(keep);
    mi_heap_delete(heap);
  }
  else if (strcmp(c, "small") == 0) {
    checked_size = 8;
    free_n(alloc(8), 2);
  }
  else if (strcmp(c, "zero") == 0) {
    checked_size = 0;
    free_n(alloc(0), 2);
  }
  else if (strcmp(c, "large") == 0) {
    checked_size = 100000;
    void* keep = mi_malloc(100000);   /* keeps the page in use */
    free_n(alloc(100000), 2);
    mi_free(keep);
  }
  else if (strcmp(c, "remote-twice") == 0) {
    free_in_thread(alloc(64), 2);
  }
  else if (strcmp(c, "remote-then-local") == 0) {
    void* p = alloc(64);
    free_in_thread(p, 1);
    free_n(p, 1);
  }
  else if (strcmp(c, "local-then-remote") == 0) {
    void* keep = mi_malloc(64);   /* keeps the page in use */
    void* p = alloc(64);
    free_n(p, 1);
    free_in_thread(p, 1);
    mi_free(keep);
  }
  else if (strcmp(c, "remote-full") == 0) {
    /* fill a private heap's page and make the heap move it to the full queue */
    mi_heap_t* heap = mi_heap_new();
    void* blocks[2000];
    size_t n = 0;
    for (; n < 2000; n++) {
      blocks[n] = mi_heap_malloc(heap, 64);
      if (n > 0 && ((uintptr_t)blocks[n] >> 16) != ((uintptr_t)blocks[0] >> 16)) break;
    }
    DBG_CHECK(n < 2000);
    void* p = blocks[0];
    dbg_var_ptr("p", p);
    free_in_thread(p, 2);
    for (size_t i = 1; i <= n; i++) mi_free(blocks[i]);
    mi_heap_delete(heap);
  }
  else if (strcmp(c, "abandoned") == 0 || strcmp(c, "abandoned-released") == 0) {
    const bool keep = (strcmp(c, "abandoned") == 0);
    pthread_t t;
    DBG_CHECK(pthread_create(&t, NULL, &thread_alloc, keep ? (void*)&kept_block : NULL) == 0);
    pthread_join(t, NULL);
    void* p = shared_block;
    dbg_var_ptr("p", p);
    free_n(p, 2);
    if (keep) mi_free(kept_block);
  }
  else {
    return dbg_unknown_case(c);
  }
  dbg_step("heap check");
  /* 500 blocks of 100 KB are 100 pages: filling and checking 5,000 took 4 s of a debug build
     per mode, and the whole test went past its 60 s timeout under CI's load */
  dbg_heap_works(checked_size > 4096 ? 500 : 5000, &checked_size, 1, NULL, 0);
  static const size_t sizes[] = { 64, 8, 0, 48, 100000, 72, 1000 };
  dbg_heap_works(3000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
