/* SPDX-License-Identifier: MIT */
/* The public mi_heap_* functions that are not allocation: a heap's making, ending, collection,
   the thread's default heap and the queries. Here, in the shared-heap layer, each one tells a
   shared heap (mi_heap_is_shared) or a theap from a heap of the thread and calls heap.c for a
   heap of the thread, so heap.c knows nothing of shared heaps but one field of a heap
   (mi_heap_t.sheap). A heap's descriptor, and a theap's (mi_sheap_part_t, sheap.c), is a block
   of its thread's backing heap: made here, freed here once heap.c has ended the heap. */
#include "internal/sheap.h"
#include "prim/prim.h"

/* A path that does not take shared heaps, or another thread's heap (sheap.h: mi_heap_check_owner) */
bool _mi_heap_api_is_foreign(const mi_heap_t* heap, const char* call) {
  if (heap != NULL && mi_heap_is_shared(heap)) {   /* a path that does not take shared heaps */
    _mi_error_message(EINVAL, "%s: %p is a shared heap, which this call does not take (ignored)\n", call, (const void*)heap);
    return true;
  }
  /* an uninitialised heap (the empty default heap of a new thread) is anybody's */
  if (!mi_heap_is_initialized(heap) || heap->thread_id == _mi_thread_id()) return false;
  _mi_error_message(EINVAL, "%s: heap %p belongs to another thread (heaps are thread-local; ignored)\n", call, (const void*)heap);
  return true;
}

/* ---------------------------------------------------------------------------------------
   Collection
--------------------------------------------------------------------------------------- */
void mi_heap_collect(mi_heap_t* heap, bool force) mi_attr_noexcept {
  if (heap != NULL && mi_heap_is_shared(heap)) {   /* the calling thread's part */
    heap = _mi_sheap_theap(heap, false);
    if (heap == NULL) return;
  }
  if (mi_heap_check_owner(heap, "mi_heap_collect")) return;
  _mi_heap_collect(heap, force);
}

void mi_collect(bool force) mi_attr_noexcept {
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (mi_unlikely(mi_atomic_load_relaxed(&_mi_sheaps_dying) != 0) && mi_heap_is_initialized(heap)) {
    _mi_sheap_sweep(heap->tld);   /* this thread's parts of deleted shared heaps */
    heap = mi_prim_get_default_heap();   /* (the backing heap if the default was such a part) */
  }
  mi_heap_collect(heap, force);
  if (mi_unlikely(mi_live_enabled()) && mi_heap_is_initialized(heap)) _mi_observe_collected(heap->tld);   /* figures now */
  mi_assert_expensive(_mi_observe_check(MI_CHECK_THREAD, heap, NULL));
}

/* ---------------------------------------------------------------------------------------
   Creation
--------------------------------------------------------------------------------------- */
mi_heap_t* mi_heap_new_ex(int heap_tag, bool allow_destroy, mi_arena_id_t arena_id) {
  if (arena_id != 0 && !_mi_arena_id_is_valid(arena_id)) {
    _mi_error_message(EINVAL, "unknown arena id %d\n", arena_id);
    return NULL;
  }
  mi_heap_t* bheap = mi_heap_get_backing();
  if (!mi_heap_is_initialized(bheap)) return NULL;
  mi_heap_t* heap = (mi_heap_t*)mi_heap_malloc(bheap, sizeof(mi_heap_t));
  if (heap == NULL) return NULL;
  _mi_heap_init(heap, bheap->tld, arena_id, allow_destroy, (uint8_t)heap_tag);
  return heap;
}

mi_heap_t* mi_heap_new(void) {
  return mi_heap_new_ex(0, true, 0);
}

mi_heap_t* mi_heap_new_in_arena(mi_arena_id_t arena_id) {
  return mi_heap_new_ex(0, false, arena_id);
}

/* ---------------------------------------------------------------------------------------
   Deletion and destruction
--------------------------------------------------------------------------------------- */
/* The descriptor of a heap heap.c ended: a theap leaves its shared heap first (which may free
   that heap with its last theap; its pages were abandoned to it before, so it was not freed
   under them). */
static void mi_heap_descriptor_free(mi_heap_t* heap) {
  if (mi_heap_is_theap(heap)) _mi_sheap_theap_unlink(heap);
  mi_free(heap);
}

void mi_heap_delete(mi_heap_t* heap) {
  if (heap != NULL && mi_heap_is_shared(heap)) { _mi_sheap_delete(heap, false); return; }
  if (!mi_heap_is_initialized(heap) || mi_heap_check_owner(heap, "mi_heap_delete")) return;
  if (mi_heap_is_backing(heap)) {
    mi_heap_collect(heap, false);   /* the backing heap lives until thread exit */
    return;
  }
  /* a theap of a live shared heap (thread exit: the sweep ends those of dead ones first)
     abandons its pages to that heap (abandon.c): they stay its blocks, for a later theap of it
     to reclaim, its destroy to free, mi_heap_of to name */
  _mi_heap_delete(heap, mi_heap_is_live_part(heap));
  mi_heap_descriptor_free(heap);
}

void mi_heap_destroy(mi_heap_t* heap) {
  if (heap != NULL && mi_heap_is_shared(heap)) { _mi_sheap_delete(heap, true); return; }
  if (!mi_heap_is_initialized(heap) || mi_heap_check_owner(heap, "mi_heap_destroy")) return;
  if (!heap->allow_destroy) {
    _mi_warning_message("mi_heap_destroy: heap %p does not allow destruction (use mi_heap_new); deleting it instead\n", (void*)heap);
    mi_heap_delete(heap);
    return;
  }
  if (!_mi_heap_destroy(heap)) { mi_heap_delete(heap); return; }   /* (guarded objects: heap.c) */
  mi_heap_descriptor_free(heap);
}

/* Thread exit (init.c, after the thread's default went back to its backing heap): every heap
   of the thread but the backing one ends; theaps of dead shared heaps as their heap did (the
   sweep), the others deleted (a live shared heap's keep their pages on its lists). */
void _mi_heap_api_thread_done(mi_tld_t* tld) {
  _mi_sheap_sweep(tld);
  mi_heap_t* h = tld->heaps;
  while (h != NULL) {
    mi_heap_t* next = h->next;
    if (h != tld->heap_backing) mi_heap_delete(h);
    h = next;
  }
}

/* ---------------------------------------------------------------------------------------
   Default heap
--------------------------------------------------------------------------------------- */
/* A shared heap stands for the calling thread's part of it (made on first use): that part
   becomes the default, so mi_malloc allocates in the shared heap until the default changes or
   the part ends (sheap.c: the default goes back to the backing heap first). */
mi_heap_t* mi_heap_set_default(mi_heap_t* heap) {
  if (heap != NULL && mi_heap_is_shared(heap)) heap = _mi_sheap_theap(heap, true);   /* (NULL after its delete) */
  if (!mi_heap_is_initialized(heap) || mi_heap_check_owner(heap, "mi_heap_set_default")) return NULL;
  if (mi_heap_is_dead_part(heap)) {
    _mi_error_message(EINVAL, "mi_heap_set_default: %p is a part of a deleted or destroyed shared heap (ignored)\n", (void*)heap);
    return NULL;
  }
  mi_heap_t* old = mi_prim_get_default_heap();
  _mi_thread_set_default_heap(heap);
  return old;
}

mi_heap_t* mi_heap_get_default(void) {
  mi_thread_init();
  mi_heap_t* heap = mi_prim_get_default_heap();
  if (mi_unlikely(mi_heap_is_dead_part(heap))) {
    heap = heap->tld->heap_backing;   /* a part of a shared heap another thread ended (as in _mi_malloc_generic) */
    _mi_thread_set_default_heap(heap);
  }
  return heap;
}

mi_heap_t* mi_heap_get_backing(void) {
  mi_heap_t* heap = mi_heap_get_default();
  if (!mi_heap_is_initialized(heap)) return heap;
  return heap->tld->heap_backing;
}

/* ---------------------------------------------------------------------------------------
   Introspection
--------------------------------------------------------------------------------------- */
/* A shared heap in the introspection calls: the calling thread's part of it (NULL: none) */
static mi_heap_t* mi_heap_own_part(mi_heap_t* heap) {
  return (heap != NULL && mi_heap_is_shared(heap) ? _mi_sheap_theap(heap, false) : heap);
}

bool mi_heap_contains_block(mi_heap_t* heap, const void* p) {
  heap = mi_heap_own_part(heap);
  if (!mi_heap_is_initialized(heap) || p == NULL) return false;
  mi_segment_t* segment = _mi_ptr_segment_checked(p);
  if (segment == NULL) return false;
  const mi_heap_t* const owner = mi_page_heap(_mi_segment_page_of(segment, p));
  return (owner == heap || (owner != NULL && owner == _mi_observe_heap_companion(heap)));
}

bool mi_heap_check_owned(mi_heap_t* heap, const void* p) {
  heap = mi_heap_own_part(heap);
  if (!mi_heap_is_initialized(heap) || p == NULL) return false;
  return _mi_heap_check_owned(heap, p);
}

bool mi_check_owned(const void* p) {
  return mi_heap_check_owned(mi_prim_get_default_heap(), p);
}

/* mi_heap_main of the v2 header (v3 mode's is mi_v3_heap_main, the shared heap
   _mi_sheap_main): the calling thread's backing heap, its part of the heap every thread
   allocates from by default, and the heap mi_heap_delete hands live blocks to. */
mi_heap_t* mi_heap_main(void) {
  return mi_heap_get_backing();
}

/* The heap that owns p's page now. A block of a shared heap names the shared heap, whichever
   thread's part holds it, sampled or not, or whether that thread ended: the page carries the
   mark (its abandon_lists, sheap.h: mi_sheap_of_page), as only its thread may read a heap's
   fields. A block the profiler sampled (prof.c) lies in its heap's sample heap: that is mapped back for the
   calling thread's heaps, whose list only this thread may walk. An ordinary abandoned page has
   no heap until a thread reclaims it: NULL. */
mi_heap_t* mi_heap_of(const void* p) {
  mi_page_t* page = _mi_heap_page_in_use_of(p);
  if (page == NULL) return NULL;
  /* acquire: pairs with mi_page_set_heap's release of xheap, so the mark read below is at
     least the one set with this owner (a relaxed read could see the mark from before an
     adoption, NULL, and name the other thread's theap) */
  mi_heap_t* const owner = mi_atomic_load_acquire(&page->xheap);
  if (owner == NULL) return mi_sheap_of_page(page);   /* NULL: an ordinary abandoned page */
  if (mi_page_owner(page) != _mi_thread_id()) {
    mi_heap_t* const sheap = mi_sheap_of_page(page);   /* (set before xheap) */
    return (sheap != NULL ? sheap : owner);
  }
  mi_heap_t* const dflt = mi_prim_get_default_heap();
  if (!mi_heap_is_initialized(dflt)) return owner;
  for (mi_heap_t* h = dflt->tld->heaps; h != NULL; h = h->next) {
    if (h == owner || _mi_observe_heap_companion(h) == owner) return mi_heap_named(h);
  }
  return owner;
}

bool mi_heap_contains(const mi_heap_t* heap, const void* p) {
  if (heap == NULL) heap = mi_heap_main();
  return (mi_heap_is_initialized(heap) && mi_heap_of(p) == heap);
}

bool mi_heap_visit_blocks(const mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  if (visitor == NULL) return false;
  if (heap != NULL && mi_heap_is_shared(heap)) return _mi_sheap_visit_blocks((mi_heap_t*)heap, visit_blocks, visitor, arg);
  if (!mi_heap_is_initialized(heap) || mi_heap_check_owner(heap, "mi_heap_visit_blocks")) return false;
  return _mi_heap_visit_part(heap, heap, true, visit_blocks, visitor, arg);   /* (a heap of its own) */
}

static bool mi_abandoned_visit_allowed(mi_block_visit_fun* visitor, const char* call) {
  if (visitor == NULL) return false;
  if (!mi_option_is_enabled(mi_option_visit_abandoned)) {
    _mi_error_message(EFAULT, "%s requires the option 'visit_abandoned' to be enabled\n", call);
    return false;
  }
  return true;
}

/* v3's mi_heap_visit_abandoned_blocks (v3.c): the abandoned blocks that are the heap's. A shared
   heap's: the pages its ended parts left to it (sheap.c). The main heap's (NULL) or a thread's
   heap's: the ordinary abandoned pages of its subprocess (the calling thread's for the main
   heap) and tag, as no list tells from which heap of an ended thread a page came. */
bool _mi_heap_api_visit_abandoned(mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  if (!mi_abandoned_visit_allowed(visitor, "mi_heap_visit_abandoned_blocks")) return false;
  const bool main = (heap == NULL || heap == _mi_sheap_main());
  if (!main && mi_heap_is_shared(heap)) return _mi_sheap_abandoned_visit(heap, visit_blocks, visitor, arg);
  mi_heap_t* const own = (main ? mi_prim_get_default_heap() : heap);
  if (!mi_heap_is_initialized(own)) return (main && _mi_abandoned_visit(&_mi_subproc_main, NULL, NULL, 0, visit_blocks, visitor, arg));
  return _mi_abandoned_visit(own->tld->subproc, NULL, NULL, (main ? 0 : own->tag), visit_blocks, visitor, arg);
}

bool mi_abandoned_visit_blocks(mi_subproc_id_t subproc_id, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  if (!mi_abandoned_visit_allowed(visitor, "mi_abandoned_visit_blocks")) return false;
  mi_subproc_t* subproc = (subproc_id == NULL ? &_mi_subproc_main : (mi_subproc_t*)subproc_id);
  return _mi_sheaps_abandoned_visit(subproc, heap_tag, visit_blocks, visitor, arg);   /* its shared heaps' pages too */
}

bool mi_unsafe_heap_page_is_under_utilized(mi_heap_t* heap, void* p, size_t perc_threshold) mi_attr_noexcept {
  if (p == NULL) return false;
  mi_segment_t* segment = _mi_ptr_segment_checked(p);
  if (segment == NULL) return false;
  mi_page_t* page = _mi_segment_page_of(segment, p);
  mi_heap_t* pheap = mi_page_heap(page);
  if (heap != NULL && mi_heap_is_shared(heap) && (heap = mi_heap_own_part(heap)) == NULL) return false;
  if (pheap == NULL || (heap != NULL && pheap != heap)) return false;
  if (perc_threshold >= 100) return true;
  if (segment->page_kind == MI_PAGE_HUGE) return false;
  if (pheap->pages[_mi_bin(page->block_size)].first == page) return false;   /* current allocation page */
  if (page->capacity < page->reserved) return false;                          /* not fully extended */
  return ((size_t)page->used * 100 <= perc_threshold * (size_t)page->reserved);
}
