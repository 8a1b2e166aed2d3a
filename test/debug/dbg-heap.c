/* SPDX-License-Identifier: MIT */
/* Heaps in debug builds: what the heap visitor reports.

   Cases:
     visit      mi_heap_visit_blocks on a heap with small, medium, large and huge blocks: each
                block's size and area.block_size are the usable size of the size class (the
                block size without the debug padding), area.full_block_size is the stride
                between blocks (padding included); no message. */
#include "dbg.h"

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

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  if (strcmp(c, "visit") == 0) {
    visit();
  }
  else {
    return dbg_unknown_case(c);
  }
  return dbg_finish();
}
