/* SPDX-License-Identifier: MIT */
/* Shared heaps: heaps that any thread may allocate in (mimalloc v3's meaning of a heap,
   docs/v3-api.md). A shared heap (mi_sheap_t, types.h) holds no pages; each thread that
   allocates in it gets its own part, a theap: an ordinary heap of that thread with
   theap->sheap set. The public mi_heap_* functions tell a shared heap by its first word
   (mi_heap_is_shared) and turn it into the calling thread's theap here, so every fast path of
   a thread's own heaps stays as it is; the lookup is one compare when the thread's one-entry
   cache hits. Blocks are freed from any thread like any block: a page belongs to one theap.
   Deletion and destruction by one thread reach the other threads' theaps through a sweep that
   each thread runs itself (types.h, mi_sheap_t: state). A theap that ends with its thread while
   the heap is live leaves its pages to the heap (abandon.c): a later theap of it adopts them,
   its delete or destroy hands them over or frees them. */
#include "internal/sheap.h"

_Atomic(size_t) _mi_sheaps_dying;

/* All shared heaps, linked through next/prev under mi_sheaps_lock, for the fork handlers and the
   visit of abandoned pages. Lock order: mi_sheaps_lock, then a heap's lock or a subprocess'
   lock (fork takes all three in that order); no other lock is taken while a heap's lock is
   held, and a heap's lock is never taken under a subprocess' (a heap's abandoned pages,
   abandon.c, change under its subprocess' lock alone). */
static mi_lock_t   mi_sheaps_lock = MI_LOCK_INIT;
/* > 0 while this thread runs a visitor under mi_sheaps_lock: its sweep waits (ending a last
   theap frees its shared heap, which takes the lock: the thread would wait for itself) */
#if MI_TLS_PE   /* (native: a thread's exit reads it, base.h) */
mi_decl_tls_pe unsigned _mi_sheaps_held = 0;
#define mi_sheaps_held  (*mi_tls_pe_ptr(unsigned, _mi_sheaps_held))
#else
static mi_decl_thread unsigned mi_sheaps_held;
#endif
static mi_sheap_t* mi_sheaps;

/* mimalloc v3's main heap (mi_heap_main in the header's v3 mode, src/v3.c): a shared heap whose
   part for each thread is that thread's backing heap. It has no theaps of its own, is on no
   list (nothing locks it) and is never deleted, so no code that walks or frees shared heaps
   reaches it. */
static mi_sheap_t mi_sheap_main = { .mark = MI_SHEAP_MARK, .lock = MI_LOCK_INIT, .state = (int)MI_SHEAP_LIVE };

mi_heap_t* _mi_sheap_main(void) {
  return (mi_heap_t*)&mi_sheap_main;
}

static mi_sheap_t* mi_sheap_of(mi_heap_t* heap) {
  return (mi_sheap_t*)heap;
}

/* mi_subproc_visit_heaps (v3 mode, src/v3.c): the main heap (every thread's, in any
   subprocess), then each live shared heap made in `subproc`, in no particular order, until the
   visitor returns false. The list is walked under mi_sheaps_lock, so the visitor must not make,
   delete or destroy a shared heap (each takes that lock: it would wait for itself); it may
   allocate, free and collect (this thread's sweep waits, mi_sheaps_held). */
bool _mi_sheap_visit(mi_subproc_t* subproc, bool (*visit)(mi_heap_t* heap, void* arg), void* arg) {
  if (!visit((mi_heap_t*)&mi_sheap_main, arg)) return false;
  bool go_on = true;
  mi_lock_acquire(&mi_sheaps_lock);
  mi_sheaps_held++;
  for (mi_sheap_t* sh = mi_sheaps; sh != NULL && go_on; sh = sh->next) {
    if (sh->abandoned.subproc == subproc && mi_atomic_load_relaxed(&sh->state) == (int)MI_SHEAP_LIVE) go_on = visit((mi_heap_t*)sh, arg);
  }
  mi_sheaps_held--;
  mi_lock_release(&mi_sheaps_lock);
  return go_on;
}

/* The lists of the shared heap after `prev`'s (from the first at NULL), dead ones too, under
   mi_sheaps_lock (abandon.c keeps those of other subprocesses out) */
static mi_abandoned_lists_t* mi_sheaps_lists_next(mi_abandoned_lists_t* prev, void* it) {
  (void)it;
  mi_sheap_t* const sh = (prev == NULL ? mi_sheaps : mi_sheap_of(mi_sheap_of_lists(prev))->next);
  return (sh == NULL ? NULL : &sh->abandoned);
}

/* mi_abandoned_visit_blocks (heap-api.c): the abandoned pages of a subprocess and of its shared
   heaps, under the lock of the list of shared heaps (none is freed), then the subprocess'
   (fork's lock order). The visitor runs under both: it must not allocate, nor make or end a
   heap. */
bool _mi_sheaps_abandoned_visit(mi_subproc_t* subproc, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_lock_acquire(&mi_sheaps_lock);
  mi_sheaps_held++;
  const bool ok = _mi_abandoned_visit(subproc, &mi_sheaps_lists_next, NULL, heap_tag, visit_blocks, visitor, arg);
  mi_sheaps_held--;
  mi_lock_release(&mi_sheaps_lock);
  return ok;
}

/* ---------------------------------------------------------------------------------------
   Creation
--------------------------------------------------------------------------------------- */
static mi_heap_t* mi_sheap_new(bool allow_destroy, mi_arena_id_t arena_id) {
  if (arena_id != 0 && !_mi_arena_id_is_valid(arena_id)) {
    _mi_error_message(EINVAL, "unknown arena id %d\n", arena_id);
    return NULL;
  }
  mi_heap_t* bheap = mi_heap_get_backing();   /* (initialises the thread) */
  if (!mi_heap_is_initialized(bheap)) return NULL;
  mi_sheap_t* sh = (mi_sheap_t*)mi_heap_malloc(bheap, sizeof(mi_sheap_t));
  if (sh == NULL) return NULL;
  memset(sh, 0, sizeof(*sh));
  sh->mark = MI_SHEAP_MARK;
  mi_lock_init(&sh->lock);
  mi_atomic_store_relaxed(&sh->state, (int)MI_SHEAP_LIVE);
  sh->allow_destroy = allow_destroy;
  sh->arena_id = arena_id;
  mi_atomic_store_relaxed(&sh->numa_node, -1);
  sh->abandoned.subproc = bheap->tld->subproc;
  mi_lock_acquire(&mi_sheaps_lock);
  sh->next = mi_sheaps;
  if (mi_sheaps != NULL) mi_sheaps->prev = sh;
  mi_sheaps = sh;
  mi_lock_release(&mi_sheaps_lock);
  return (mi_heap_t*)sh;
}

/* mi_heap_set_numa_affinity (v3 mode's header): the node's memory first for the heap's new pages
   (segment.c). A shared heap's theaps take it under the heap's lock, as a theap made later takes
   the heap's. The main heap's parts are the threads' backing heaps (a backing heap given here
   stands for it). */
mi_decl_export void mi_heap_set_numa_affinity(mi_heap_t* heap, int numa_node) {
  const int node = (numa_node < 0 ? -1 : (int)((size_t)numa_node % _mi_os_numa_node_count()));
  if (heap != NULL && heap != _mi_sheap_main() && mi_heap_is_shared(heap)) {
    mi_sheap_t* const sh = mi_sheap_of(heap);
    mi_lock_acquire(&sh->lock);
    mi_atomic_store_relaxed(&sh->numa_node, node);
    for (mi_heap_t* t = sh->theaps; t != NULL; t = mi_sheap_part_of(t)->next) mi_atomic_store_relaxed(&t->numa_node, node);
    mi_lock_release(&sh->lock);
  }
  else if (heap == NULL || heap == _mi_sheap_main() || (mi_heap_is_initialized(heap) && heap == heap->tld->heap_backing)) {
    _mi_segments_set_main_numa(node);   /* (the main heap's own field is not read: segment.c keeps it) */
  }
  else if (mi_heap_is_initialized(heap)) {
    mi_atomic_store_relaxed(&heap->numa_node, node);   /* a heap of the v2 API */
  }
}

mi_heap_t* mi_heap_new_shared(void) {
  return mi_sheap_new(true, 0);
}

mi_heap_t* mi_heap_new_shared_in_arena(mi_arena_id_t arena_id) {
  return mi_sheap_new(false, arena_id);
}

/* ---------------------------------------------------------------------------------------
   The calling thread's theap
--------------------------------------------------------------------------------------- */
/* Linked only while the heap is live (checked under its lock), so a heap that is no longer
   live gains no theap, and the one that unlinks the last theap may free it. */
static mi_heap_t* mi_sheap_theap_make(mi_sheap_t* sh, mi_tld_t* tld) {
  mi_sheap_part_t* const part = (mi_sheap_part_t*)mi_heap_malloc(tld->heap_backing, sizeof(mi_sheap_part_t));
  if (part == NULL) return NULL;
  mi_heap_t* const theap = &part->heap;   /* (heap-api.c frees the whole block through it) */
  _mi_heap_init(theap, tld, sh->arena_id, sh->allow_destroy, 0);
  part->next = NULL;
  part->stats = NULL;
  mi_lock_acquire(&sh->lock);
  const bool live = (mi_atomic_load_relaxed(&sh->state) == (int)MI_SHEAP_LIVE);
  if (live) {
    mi_atomic_store_relaxed(&theap->numa_node, mi_atomic_load_relaxed(&sh->numa_node));   /* (under the lock: see below) */
    theap->sheap = sh;
    theap->pages_lists = &sh->abandoned;
    part->next = sh->theaps;
    sh->theaps = theap;
  }
  mi_lock_release(&sh->lock);
  if (!live) {
    mi_heap_delete(theap);   /* (empty) */
    _mi_error_message(EINVAL, "shared heap %p is used after mi_heap_delete or mi_heap_destroy\n", (void*)sh);
    return NULL;
  }
  return theap;
}

mi_heap_t* _mi_sheap_theap(mi_heap_t* sheap, bool create) {
  mi_sheap_t* const sh = mi_sheap_of(sheap);
  mi_heap_t* dflt = mi_prim_get_default_heap();
  if (mi_unlikely(!mi_heap_is_initialized(dflt))) {
    if (!create) return NULL;
    mi_thread_init();
    dflt = mi_prim_get_default_heap();
    if (!mi_heap_is_initialized(dflt)) return NULL;
  }
  mi_tld_t* const tld = dflt->tld;
  if (mi_likely(tld->sheap_last.sheap == sh)) return tld->sheap_last.theap;
  if (sh == &mi_sheap_main) return tld->heap_backing;   /* (never cached: one compare anyway) */
  mi_heap_t* theap = NULL;
  for (mi_heap_t* h = tld->heaps; h != NULL; h = h->next) {
    if (h->sheap == sh) { theap = h; break; }
  }
  if (theap == NULL) {
    if (!create) return NULL;
    theap = mi_sheap_theap_make(sh, tld);
    if (theap == NULL) return NULL;
  }
  tld->sheap_last.sheap = sh;
  tld->sheap_last.theap = theap;
  return theap;
}

/* ---------------------------------------------------------------------------------------
   The end of a theap, of a shared heap
--------------------------------------------------------------------------------------- */
static void mi_sheap_free(mi_sheap_t* sh) {
  /* pages a theap abandoned to the heap after its delete or destroy looked (a thread that ended
     meanwhile); no theap is left to add more */
  _mi_abandoned_lists_done(&sh->abandoned, mi_atomic_load_relaxed(&sh->state) == (int)MI_SHEAP_DESTROYED);
  mi_assert_internal(sh->abandoned.count == 0);
  mi_lock_acquire(&mi_sheaps_lock);
  if (sh->prev != NULL) sh->prev->next = sh->next;
  else mi_sheaps = sh->next;
  if (sh->next != NULL) sh->next->prev = sh->prev;
  mi_lock_release(&mi_sheaps_lock);
  mi_lock_done(&sh->lock);
  sh->mark = NULL;   /* a stale pointer is no shared heap any more */
  mi_atomic_sub_relaxed(&_mi_sheaps_dying, 1);
  mi_stats_data_t* const ended = mi_atomic_load_relaxed(&sh->ended_stats);
  if (ended != NULL) mi_free(ended);
  mi_free(sh);
}

/* Under the heap's lock: a theap's published figures join its ended ones (stats-v3.c: totals
   and peaks kept, current values the baseline of the walk of its abandoned pages). Returns the
   block to free after the lock (NULL: it became the heap's ended block as it is). */
static mi_stats_data_t* mi_sheap_part_ended(mi_sheap_t* sh, mi_stats_data_t* part) {
  if (part == NULL) return NULL;
  /* a walk numbered so far may have missed the part's pages (it ran before they reached the
     lists: every walk that held the subprocess' lock before that is counted here), so it must
     not replace the block, whose current values now hold the part's */
  const size_t walks = mi_atomic_load_relaxed(&sh->abandoned.walks);
  if (walks > sh->ended_walk) sh->ended_walk = walks;
  mi_stats_data_t* const ended = mi_atomic_load_relaxed(&sh->ended_stats);
  if (ended == NULL) { mi_atomic_store_relaxed(&sh->ended_stats, part); return NULL; }
  _mi_stats_sum(ended, part);
  return part;
}

/* A theap heap.c ended (its own thread; heap-api.c, before its block is freed): off its shared heap's list, and the shared heap
   freed if it is no longer live and this was its last theap. Its published figures join the
   heap's ended ones in the same hold of the lock, so a taking counts them once (stats-v3.c). */
void _mi_sheap_theap_unlink(mi_heap_t* theap) {
  mi_sheap_t* const sh = theap->sheap;
  mi_tld_t* const tld = theap->tld;
  if (tld->sheap_last.theap == theap) { tld->sheap_last.sheap = NULL; tld->sheap_last.theap = NULL; }
  mi_lock_acquire(&sh->lock);
  mi_sheap_part_t* const part = mi_sheap_part_of(theap);
  mi_heap_t** link = &sh->theaps;
  while (*link != NULL && *link != theap) link = &mi_sheap_part_of(*link)->next;
  if (*link == theap) *link = part->next;
  mi_stats_data_t* const merged = mi_sheap_part_ended(sh, part->stats);
  part->stats = NULL;
  const bool last = (sh->theaps == NULL && mi_atomic_load_relaxed(&sh->state) != (int)MI_SHEAP_LIVE);
  mi_lock_release(&sh->lock);
  theap->sheap = NULL;
  theap->pages_lists = NULL;
  part->next = NULL;
  if (merged != NULL) mi_free(merged);
  if (last) mi_sheap_free(sh);
}

/* ---------------------------------------------------------------------------------------
   Statistics (stats-v3.c): each thread publishes its theap's figures under the heap's lock,
   where other threads read them; no thread reads another's pages.
--------------------------------------------------------------------------------------- */
/* mi_heap_visit_blocks of a shared heap: every thread's part (under the heap's lock; another
   thread's pages are read, never changed: the program lets no thread allocate in the heap, free
   into it or collect while it is visited, as mimalloc 3.x asks), then the pages its ended parts
   left (abandon.c). v3's main heap: the calling thread's part only (its parts are all threads'
   backing heaps, which no list holds). */
bool _mi_sheap_visit_blocks(mi_heap_t* sheap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_sheap_t* const sh = mi_sheap_of(sheap);
  mi_heap_t* const own = _mi_sheap_theap(sheap, false);
  if (sh == &mi_sheap_main) return (own == NULL || _mi_heap_visit_part(own, sheap, true, visit_blocks, visitor, arg));
  bool go_on = true;
  mi_lock_acquire(&sh->lock);
  for (const mi_heap_t* theap = sh->theaps; theap != NULL && go_on; theap = mi_sheap_part_of(theap)->next) {
    go_on = _mi_heap_visit_part(theap, sheap, theap == own, visit_blocks, visitor, arg);
  }
  mi_lock_release(&sh->lock);
  return (go_on && _mi_sheap_abandoned_visit(sheap, visit_blocks, visitor, arg));
}

/* `fn` under the heap's lock (stats-v3.c: its theaps' published figures and its ended ones),
   which must not allocate nor take another lock */
void _mi_sheap_stats_locked(mi_heap_t* sheap, void (*fn)(mi_sheap_t* sh, void* arg), void* arg) {
  mi_sheap_t* const sh = mi_sheap_of(sheap);
  mi_assert_internal(sh != &mi_sheap_main);
  mi_lock_acquire(&sh->lock);
  fn(sh, arg);
  mi_lock_release(&sh->lock);
}

/* mi_heap_visit_blocks: the pages its theaps that ended left to it (abandon.c) */
bool _mi_sheap_abandoned_visit(mi_heap_t* sheap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg) {
  mi_sheap_t* const sh = mi_sheap_of(sheap);
  if (sh == &mi_sheap_main) return true;   /* (its parts' pages go to the subprocess' lists) */
  return _mi_abandoned_lists_visit(&sh->abandoned, sheap, visit_blocks, visitor, arg);
}

/* `block`: the theap's stats, or a new block for it (set here, under the lock, where other
   threads read the pointer) */
void _mi_sheap_publish(mi_heap_t* theap, mi_stats_data_t* block, const mi_stats_data_t* stats) {
  mi_sheap_part_t* const part = mi_sheap_part_of(theap);
  mi_assert_internal(theap->sheap != NULL && (part->stats == NULL || part->stats == block));
  mi_lock_acquire(&theap->sheap->lock);
  memcpy(block, stats, sizeof(*stats));
  part->stats = block;
  mi_lock_release(&theap->sheap->lock);
}

/* A theap of a heap that is no longer live: deleted or destroyed as its heap was. The thread's
   default goes back to its backing heap first if it is this theap (mi_heap_set_default), so
   nothing on the way allocates in it and the default never points at a freed theap. */
static void mi_sheap_theap_end(mi_heap_t* theap, int state) {
  if (theap == mi_prim_get_default_heap()) _mi_thread_set_default_heap(theap->tld->heap_backing);
  mi_sched_point(MI_SCHED_SHEAP_SWEEP);   /* the heap is dead; its freeing waits for this part */
  if (state == (int)MI_SHEAP_DESTROYED && theap->allow_destroy) mi_heap_destroy(theap);
  else mi_heap_delete(theap);
}

/* The allocation slow path (alloc.c) while _mi_sheaps_dying != 0, where no profiler is busy
   (the periodic work of a heap without one, or before the profiler's slow path): the heap that
   serves the call. A default that is a part of a dead shared heap gives way to the backing heap
   (no sweep in this call: a caller up the stack may still hold the part). Else every 4th time
   (sweep_due: by the thread's heartbeat), this thread's parts of dead shared heaps end, from its
   backing heap or a part of a live shared heap (never the heap being ended). */
mi_heap_t* _mi_sheap_dying_step(mi_heap_t* heap, bool sweep_due) {
  if (mi_heap_is_dead_part(heap) && heap == mi_prim_get_default_heap()) return _mi_sheap_default_back(heap);
  if (sweep_due &&
      (heap == heap->tld->heap_backing || (heap->sheap != NULL && mi_atomic_load_relaxed(&heap->sheap->state) == (int)MI_SHEAP_LIVE))) {
    _mi_sheap_sweep(heap->tld);
  }
  return heap;
}

mi_heap_t* _mi_sheap_default_back(mi_heap_t* heap) {
  mi_heap_t* const bheap = heap->tld->heap_backing;
  _mi_thread_set_default_heap(bheap);
  mi_sched_point(MI_SCHED_SHEAP_SWITCH);   /* the dead part is no longer the default; it ends at a later sweep */
  return bheap;
}

void _mi_sheap_sweep(mi_tld_t* tld) {
  if (mi_sheaps_held != 0) return;   /* (inside a visit of the list: at the next sweep) */
  mi_heap_t* h = tld->heaps;
  while (h != NULL) {
    mi_heap_t* const next = h->next;   /* (ending h unlinks h only) */
    if (h->sheap != NULL) {
      const int state = mi_atomic_load_acquire(&h->sheap->state);
      if (state != (int)MI_SHEAP_LIVE) mi_sheap_theap_end(h, state);
    }
    h = next;
  }
}

/* mi_heap_delete (destroy == false) or mi_heap_destroy of a shared heap: the calling thread's
   theap ends now, the other threads' theaps at their next sweep; the heap is freed with its
   last theap. v3's contract: no thread allocates in the heap from this call on. */
void _mi_sheap_delete(mi_heap_t* sheap, bool destroy) {
  mi_sheap_t* const sh = mi_sheap_of(sheap);
  if (sh == &mi_sheap_main) {
    _mi_error_message(EINVAL, "%s: the main heap cannot be deleted or destroyed (ignored)\n", destroy ? "mi_heap_destroy" : "mi_heap_delete");
    return;
  }
  if (destroy && !sh->allow_destroy) {
    _mi_warning_message("mi_heap_destroy: shared heap %p does not allow destruction (use mi_heap_new_shared); deleting it instead\n", (void*)sh);
    destroy = false;
  }
  mi_heap_t* const own = _mi_sheap_theap(sheap, false);
  mi_lock_acquire(&sh->lock);
  int state = mi_atomic_load_relaxed(&sh->state);
  mi_lock_release(&sh->lock);
  /* the pages of its theaps that ended: freed with their blocks, or handed over; while the heap
     is live, so no other thread frees it meanwhile (a delete or destroy by another thread at
     the same time is the program's error, reported below) */
  if (state == (int)MI_SHEAP_LIVE) _mi_abandoned_lists_done(&sh->abandoned, destroy);
  mi_lock_acquire(&sh->lock);
  state = mi_atomic_load_relaxed(&sh->state);
  if (state == (int)MI_SHEAP_LIVE) {
    mi_atomic_add_relaxed(&_mi_sheaps_dying, 1);
    mi_atomic_store_release(&sh->state, (int)(destroy ? MI_SHEAP_DESTROYED : MI_SHEAP_DELETED));
  }
  const bool unused = (sh->theaps == NULL);
  mi_lock_release(&sh->lock);
  if (state != (int)MI_SHEAP_LIVE) {
    _mi_error_message(EINVAL, "shared heap %p deleted or destroyed twice\n", (void*)sh);
    return;
  }
  if (own != NULL) mi_sheap_theap_end(own, destroy ? (int)MI_SHEAP_DESTROYED : (int)MI_SHEAP_DELETED);   /* may free sh */
  else if (unused) mi_sheap_free(sh);
}

/* ---------------------------------------------------------------------------------------
   fork() (init.c): every shared heap's lock is taken before and released after, in the
   parent and in the child, so the child never inherits a lock held by a thread it does not
   have (init.c, mi_fork_prepare).
--------------------------------------------------------------------------------------- */
void _mi_sheap_fork_prepare(void) {
  mi_lock_acquire(&mi_sheaps_lock);
  for (mi_sheap_t* sh = mi_sheaps; sh != NULL; sh = sh->next) mi_lock_acquire(&sh->lock);
}

void _mi_sheap_fork_release(void) {
  for (mi_sheap_t* sh = mi_sheaps; sh != NULL; sh = sh->next) mi_lock_release(&sh->lock);
  mi_lock_release(&mi_sheaps_lock);
}
