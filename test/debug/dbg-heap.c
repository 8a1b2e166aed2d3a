/* SPDX-License-Identifier: MIT */
/* Heaps in debug builds: what the heap visitor reports, and heaps used by a thread that does
   not own them.

   Cases:
     wrong-thread  a second thread calls every heap function on a heap of the main thread
                (malloc, zalloc, calloc, mallocn, malloc_small, realloc of NULL and of a block
                of the heap, aligned malloc and zalloc, strdup, collect, visit_blocks,
                set_default, delete, destroy): each is reported (EINVAL, "heap <h> belongs to
                another thread") and does nothing (NULL and errno ENOMEM, false); the
                thread's own heap works without a message; afterwards the heap and the
                block are intact and the main thread destroys the heap silently.
     visit      mi_heap_visit_blocks on a heap with small, medium, large and huge blocks: each
                block's size and area.block_size are the usable size of the size class (the
                block size without the debug padding), area.full_block_size is the stride
                between blocks (padding included); no message. */
#include "dbg.h"
#include <pthread.h>

typedef struct visit_s {
  void*  blocks[8];
  size_t sizes[8];      /* requested */
  size_t seen[8];       /* block_size the visitor got for blocks[i] (0: not visited) */
  size_t area_ubsize[8];
  size_t area_full[8];
  int    bad_areas;
} visit_t;

static bool visitor(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap;
  visit_t* v = (visit_t*)arg;
  if (block == NULL) {
    /* an area: its usable block size and the stride differ by exactly the padding */
    if (block_size != area->block_size || area->full_block_size != area->block_size + DBG_PADDING_SIZE) v->bad_areas++;
    return true;
  }
  for (int i = 0; i < 8; i++) {
    if (v->blocks[i] == block) {
      v->seen[i] = block_size;
      v->area_ubsize[i] = area->block_size;
      v->area_full[i] = area->full_block_size;
    }
  }
  return true;
}

static void visit(void) {
  static const size_t sizes[8] = { 1, 8, 100, 1000, 9000, 100000, 600000, (9u << 20) + 5 };
  mi_heap_t* heap = mi_heap_new();
  visit_t v;
  memset(&v, 0, sizeof(v));
  for (int i = 0; i < 8; i++) {
    v.sizes[i] = sizes[i];
    v.blocks[i] = mi_heap_malloc(heap, sizes[i]);
    DBG_CHECK(v.blocks[i] != NULL);
  }
  DBG_CHECK(mi_heap_visit_blocks(heap, true, &visitor, &v));
  DBG_CHECK_MSG(v.bad_areas == 0, "%d areas whose block_size is not full_block_size minus the padding", v.bad_areas);
  for (int i = 0; i < 8; i++) {
    const size_t n = sizes[i];
    DBG_CHECK_MSG(v.seen[i] != 0, "block of mi_heap_malloc(%zu) not visited", n);
    if (v.seen[i] == 0) continue;
    DBG_CHECK_MSG(v.seen[i] == v.area_ubsize[i], "mi_heap_malloc(%zu): block_size %zu, area.block_size %zu", n, v.seen[i], v.area_ubsize[i]);
    DBG_CHECK_MSG(v.seen[i] == v.area_full[i] - DBG_PADDING_SIZE, "mi_heap_malloc(%zu): block_size %zu, full %zu", n, v.seen[i], v.area_full[i]);
    DBG_CHECK_MSG(v.seen[i] >= mi_usable_size(v.blocks[i]) && v.seen[i] >= n, "mi_heap_malloc(%zu): block_size %zu below the usable size %zu", n, v.seen[i], mi_usable_size(v.blocks[i]));
    if (i < 5) {   /* small and medium pages: the stride of two neighbours is the full block size */
      DBG_CHECK_MSG(v.area_full[i] == dbg_block_size(n), "mi_heap_malloc(%zu): full block size %zu, stride %zu", n, v.area_full[i], dbg_block_size(n));
    }
  }
  mi_heap_destroy(heap);
}

static mi_heap_t* foreign_heap;
static uint8_t* foreign_block;   /* 40 bytes of foreign_heap */

static bool count_visitor(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size;
  if (block != NULL) (*(size_t*)arg)++;
  return true;
}

#define NULL_ENOMEM(call) \
  do { errno = 0; void* r_ = (call); DBG_CHECK_MSG(r_ == NULL && errno == ENOMEM, "%s: %p, errno %d", #call, r_, errno); } while (0)

static void* wrong_thread(void* arg) {
  (void)arg;
  mi_heap_t* h = foreign_heap;
  NULL_ENOMEM(mi_heap_malloc(h, 10));
  NULL_ENOMEM(mi_heap_zalloc(h, 10));
  NULL_ENOMEM(mi_heap_calloc(h, 2, 10));
  NULL_ENOMEM(mi_heap_mallocn(h, 2, 10));
  NULL_ENOMEM(mi_heap_malloc_small(h, 10));
  NULL_ENOMEM(mi_heap_realloc(h, NULL, 10));
  NULL_ENOMEM(mi_heap_realloc(h, foreign_block, 400));   /* the block stays valid */
  NULL_ENOMEM(mi_heap_malloc_aligned(h, 10, 64));
  NULL_ENOMEM(mi_heap_zalloc_aligned(h, 10, 4096));
  NULL_ENOMEM(mi_heap_strdup(h, "text"));
  mi_heap_collect(h, true);
  size_t n = 0;
  DBG_CHECK(!mi_heap_visit_blocks(h, true, &count_visitor, &n) && n == 0);
  DBG_CHECK(mi_heap_set_default(h) == NULL);
  mi_heap_delete(h);
  mi_heap_destroy(h);
  /* the thread's own heap: no message */
  mi_heap_t* own = mi_heap_new();
  void* p = mi_heap_malloc(own, 100);
  DBG_CHECK(p != NULL);
  memset(p, 1, 100);
  mi_heap_destroy(own);
  return NULL;
}

static void wrong_thread_case(void) {
  foreign_heap = mi_heap_new();
  dbg_var_ptr("h", foreign_heap);
  foreign_block = (uint8_t*)mi_heap_malloc(foreign_heap, 40);
  DBG_CHECK(foreign_block != NULL);
  dbg_fill(foreign_block, 40, 5);
  pthread_t t;
  DBG_CHECK(pthread_create(&t, NULL, &wrong_thread, NULL) == 0);
  pthread_join(t, NULL);
  /* the heap is intact and still ours */
  DBG_CHECK(dbg_check_fill(foreign_block, 40, 5) && mi_usable_size(foreign_block) == 40);
  size_t n = 0;
  DBG_CHECK(mi_heap_visit_blocks(foreign_heap, true, &count_visitor, &n) && n == 1);
  void* more[100];
  for (int i = 0; i < 100; i++) { more[i] = mi_heap_malloc(foreign_heap, 40); DBG_CHECK(more[i] != NULL); }
  DBG_CHECK(dbg_all_distinct(more, 100, 40));
  for (int i = 0; i < 100; i++) DBG_CHECK(more[i] != foreign_block);
  mi_heap_destroy(foreign_heap);
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  if (strcmp(c, "visit") == 0) {
    visit();
  }
  else if (strcmp(c, "wrong-thread") == 0) {
    wrong_thread_case();
  }
  else {
    return dbg_unknown_case(c);
  }
  return dbg_finish();
}
