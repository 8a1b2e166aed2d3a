/* SPDX-License-Identifier: MIT */
/* mimalloc 3.x's per-heap and per-subprocess statistics (mimalloc-stats.h in v3 mode;
   docs/statistics.md, "Heaps and subprocesses"). Nothing here is counted as it happens: a
   heap's figures are taken when asked, by walking the pages of the calling thread's part of
   it, so no fast path pays for them. Another thread's part cannot be walked (only its thread
   may read its page lists), so each thread publishes its part's figures under the heap's lock
   whenever it takes them (any of these functions on the heap, or
   mi_heap_stats_merge_to_subproc), and a heap's figures add the other parts as last published.
   The parts that ended while the heap lived count too: their pages, on the heap's abandoned
   lists, walked under the subprocess' lock, and their published totals (mi_stats_parts_locked).
   The process' figures (the main subprocess') are stats.c's. */
#include "internal/observers.h"
#include "internal/v3.h"

/* ---------------------------------------------------------------------------------------
   A thread's heap, from its pages
--------------------------------------------------------------------------------------- */
/* One page's `used` blocks in use and memory. Huge pages count under the huge bin. */
static void mi_stats_page_count(mi_stats_data_t* st, const mi_page_t* page, size_t page_used) {
  size_t page_size = 0;
  _mi_segment_page_start(_mi_page_segment(page), page, &page_size);
  const size_t bin = _mi_bin(page->block_size);
  const int64_t used = (int64_t)page_used;
  const int64_t bytes = used * (int64_t)page->block_size;
  st->pages.current += 1;
  st->page_bins[bin].current += 1;
  st->malloc_bins[bin].current += used;
  if (mi_page_is_huge(page)) st->malloc_huge.current += bytes;
  else st->malloc_normal.current += bytes;
  st->page_committed.current += (int64_t)page->capacity * (int64_t)page->block_size;
  st->reserved.current += (int64_t)page_size;
  if (page->is_committed) st->committed.current += (int64_t)page_size;
}

/* A page of the thread's own (blocks other threads freed count until the page collects them) */
static bool mi_stats_page_add(mi_heap_t* heap, mi_page_queue_t* pq, mi_page_t* page, void* arg) {
  (void)heap; (void)pq;
  mi_stats_page_count((mi_stats_data_t*)arg, page, page->used);
  return true;
}

/* A page an ended part left to its shared heap (abandon.c, under the subprocess' lock) */
static void mi_stats_abandoned_page_add(const mi_page_t* page, size_t live, void* arg) {
  mi_stats_page_count((mi_stats_data_t*)arg, page, live);
}

/* The calling thread's heap `heap` (and the heap of its sampled blocks) added into `st`. */
static void mi_stats_heap_pages_add(mi_heap_t* heap, mi_stats_data_t* st) {
  if (heap->prof != NULL) _mi_observe_heap_release(heap);   /* leased blocks are not in use */
  _mi_heap_visit_pages(heap, &mi_stats_page_add, st);
  mi_heap_t* const sampled = _mi_observe_heap_companion(heap);
  if (sampled != NULL) _mi_heap_visit_pages(sampled, &mi_stats_page_add, st);
}

/* Figures taken now have only a current value: the peak is the highest current taken so far
   and the total the sum of the rises between takings (`before`: the last taking, or NULL). */
static void mi_stat_count_settle(mi_stat_count_t* now, const mi_stat_count_t* before) {
  const int64_t peak = (before == NULL ? 0 : before->peak);
  const int64_t prev = (before == NULL ? 0 : before->current);
  now->peak = (now->current > peak ? now->current : peak);
  now->total = (before == NULL ? 0 : before->total) + (now->current > prev ? now->current - prev : 0);
}

static void mi_stats_settle(mi_stats_data_t* now, const mi_stats_data_t* before) {
#define MI_STAT_COUNT(name)    mi_stat_count_settle(&now->name, (before == NULL ? NULL : &before->name));
#define MI_STAT_COUNTER(name)
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_settle(&now->malloc_bins[i], (before == NULL ? NULL : &before->malloc_bins[i]));
    mi_stat_count_settle(&now->page_bins[i], (before == NULL ? NULL : &before->page_bins[i]));
  }
}

/* A taking `now` whose walk is not kept in `block` (older than the block's, or from before a
   part's figures joined it): it adds no rise to the totals (a rise against a later baseline is
   none, and one the next kept walk finds would count twice), so it shows the block's totals,
   which no later taking lowers; its current values may raise the peak, kept in the block. */
static void mi_stat_count_older_walk(mi_stat_count_t* block, mi_stat_count_t* now) {
  now->total = block->total;
  if (now->current > block->peak) block->peak = now->current;
  now->peak = block->peak;
}

static void mi_stats_older_walk(mi_stats_data_t* block, mi_stats_data_t* now) {
#define MI_STAT_COUNT(name)    mi_stat_count_older_walk(&block->name, &now->name);
#define MI_STAT_COUNTER(name)
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  for (size_t i = 0; i <= MI_BIN_HUGE_INTERNAL; i++) {
    mi_stat_count_older_walk(&block->malloc_bins[i], &now->malloc_bins[i]);
    mi_stat_count_older_walk(&block->page_bins[i], &now->page_bins[i]);
  }
}

/* ---------------------------------------------------------------------------------------
   A heap's figures: the calling thread's part taken now (and published when `publish`), the
   other threads' parts as they last published them, and its ended parts: the pages they left
   to it walked now, settled against the heap's ended block (types.h, mi_sheap_t: ended_stats).
   The ended block holds, under the heap's lock: as totals and peaks, those the ended parts last
   published plus the rises the walks saw; as current values, the last walk's plus the current
   values of the parts that ended since (their blocks are on the walked pages now: the next walk
   counts as a rise only what they had not published). Not exact: a taking between a part's
   abandoning of its pages and its unlinking (heap-api.c, mi_heap_delete) counts the blocks it had
   published twice (in the totals for good), and
   blocks a later part adopts count again in its totals. `parts`: the threads' parts counted.
--------------------------------------------------------------------------------------- */
typedef struct mi_parts_sum_s {
  mi_stats_data_t* sum;
  const mi_heap_t* own;
  size_t           parts;
  mi_stats_data_t* ended;    /* the walk's current values; settled here */
  size_t           walk;     /* its number */
  mi_stats_data_t* spare;    /* a block for the heap's ended one if it has none (NULL once used) */
} mi_parts_sum_t;

/* Under the heap's lock. Only a walk later than the block's last is kept in it (two takings
   may settle in the other order than they walked), nor one numbered before a part's figures
   joined the block (sheap.c, mi_sheap_part_ended: it may have run before the part's pages
   reached the lists; kept, its current values would drop the part's blocks from the baseline
   and the next walk would count them again in the totals). A walk not kept shows the block's
   totals (mi_stats_older_walk), so no later taking shows less. */
static void mi_stats_parts_locked(mi_sheap_t* sh, void* arg) {
  mi_parts_sum_t* const s = (mi_parts_sum_t*)arg;
  mi_stats_data_t* block = mi_atomic_load_relaxed(&sh->ended_stats);
  if (block == NULL && s->spare != NULL) {
    block = s->spare;
    s->spare = NULL;
    memset(block, 0, sizeof(*block));
    mi_atomic_store_relaxed(&sh->ended_stats, block);
  }
  if (block != NULL && s->walk <= sh->ended_walk) {
    mi_stats_older_walk(block, s->ended);   /* the block's totals, no rise of its own */
  }
  else {
    mi_stats_settle(s->ended, block);
    if (block != NULL) {
      memcpy(block, s->ended, sizeof(*block));
      sh->ended_walk = s->walk;
    }
  }
  for (const mi_heap_t* theap = sh->theaps; theap != NULL; theap = mi_sheap_part_of(theap)->next) {
    s->parts++;
    if (theap != s->own && mi_sheap_part_of(theap)->stats != NULL) _mi_stats_sum(s->sum, mi_sheap_part_of(theap)->stats);
  }
}

/* The calling thread's part of a shared heap into `own_figures` (zero if it has none). The
   snapshot is allocated outside the heap's lock: an allocation may end theaps, which takes it. */
static mi_heap_t* mi_stats_own_part(mi_heap_t* sheap, mi_stats_data_t* own_figures, bool publish) {
  memset(own_figures, 0, sizeof(*own_figures));
  mi_heap_t* const own = _mi_sheap_theap(sheap, false);
  if (own == NULL) return NULL;
  mi_stats_heap_pages_add(own, own_figures);
  mi_stats_settle(own_figures, mi_sheap_part_of(own)->stats);   /* (only this thread writes it) */
  if (publish) {
    mi_stats_data_t* block = mi_sheap_part_of(own)->stats;
    if (block == NULL) block = (mi_stats_data_t*)mi_heap_malloc(own->tld->heap_backing, sizeof(mi_stats_data_t));
    if (block != NULL) _mi_sheap_publish(own, block, own_figures);
  }
  return own;
}

/* False for a heap of another thread (v2 mode's kind) or of no initialised thread. NULL: the
   main heap, whose part for each thread is its backing heap: the calling thread's only. */
static bool mi_stats_heap_figures(mi_heap_t* heap, mi_stats_data_t* figures, size_t* parts, bool publish) {
  memset(figures, 0, sizeof(*figures));
  *parts = 0;
  if (heap == NULL) heap = _mi_sheap_main();
  if (heap == _mi_sheap_main() || !mi_heap_is_shared(heap)) {
    mi_heap_t* const h = (heap == _mi_sheap_main() ? _mi_sheap_theap(heap, false) : heap);
    if (h == NULL || !mi_heap_is_initialized(h) || h->thread_id != _mi_thread_id()) return (h == NULL && heap == _mi_sheap_main());
    mi_stats_heap_pages_add(h, figures);
    mi_stats_settle(figures, NULL);
    *parts = 1;
    return true;
  }
  mi_sheap_t* const sh = (mi_sheap_t*)heap;   /* (a shared heap: mi_heap_is_shared) */
  mi_stats_data_t own_figures;
  mi_stats_data_t ended;
  memset(&ended, 0, sizeof(ended));
  mi_parts_sum_t sum = { figures, mi_stats_own_part(heap, &own_figures, publish), 0, &ended, 0, NULL };
  if (publish && mi_atomic_load_relaxed(&sh->ended_stats) == NULL) {
    /* (a thread that never allocated too: initialised here, else its taking would settle
       against nothing and keep nothing, and a later one could show lower totals) */
    mi_heap_t* const bheap = mi_heap_get_backing();
    if (mi_heap_is_initialized(bheap)) sum.spare = (mi_stats_data_t*)mi_heap_malloc(bheap, sizeof(mi_stats_data_t));   /* (no lock held: as above) */
  }
  sum.walk = _mi_abandoned_lists_pages(&sh->abandoned, &mi_stats_abandoned_page_add, &ended);
  _mi_sheap_stats_locked(heap, &mi_stats_parts_locked, &sum);
  if (sum.spare != NULL) mi_free(sum.spare);
  _mi_stats_sum(figures, &ended);
  _mi_stats_sum(figures, &own_figures);
  *parts = sum.parts;
  return true;
}

/* ---------------------------------------------------------------------------------------
   A subprocess' figures. The main subprocess': the process' (stats.c). Another's: its segments,
   and (unless `exclusive`) the calling thread's own heaps when it belongs to the subprocess and
   the shared heaps made in it (mi_subproc_visit_heaps' list), none published: the list's lock
   is held, under which no allocation may run. `heaps`, `theaps`: the heaps and parts counted.
--------------------------------------------------------------------------------------- */
typedef struct mi_subproc_sum_s {
  mi_stats_data_t* sum;
  bool             main;      /* the main subprocess: the figures are the process', count only */
  size_t           heaps;
  size_t           theaps;
} mi_subproc_sum_t;

static bool mi_stats_subproc_heap_add(mi_heap_t* heap, void* arg) {
  mi_subproc_sum_t* const s = (mi_subproc_sum_t*)arg;
  if (heap == _mi_sheap_main()) {   /* every thread's: counted with the threads of the process */
    if (s->main) { s->heaps++; s->theaps += (size_t)(s->sum->threads.current < 0 ? 0 : s->sum->threads.current); }
    return true;
  }
  mi_stats_data_t figures;
  size_t parts = 0;
  mi_stats_heap_figures(heap, &figures, &parts, false);
  if (!s->main) _mi_stats_sum(s->sum, &figures);
  s->heaps++;
  s->theaps += parts;
  return true;
}

static void mi_stats_subproc_figures(mi_subproc_t* sp, bool exclusive, mi_stats_data_t* figures, size_t* heaps, size_t* theaps) {
  mi_subproc_sum_t s = { figures, (sp == &_mi_subproc_main), 0, 0 };
  if (s.main) {
    _mi_stats_print_process_now(figures);
  }
  else {
    memset(figures, 0, sizeof(*figures));
    figures->segments.current = (int64_t)mi_atomic_load_relaxed(&sp->segment_count);
    mi_heap_t* const dflt = mi_prim_get_default_heap();
    if (!exclusive && mi_heap_is_initialized(dflt) && dflt->tld->subproc == sp) {
      for (mi_heap_t* h = dflt->tld->heaps; h != NULL; h = h->next) {
        if (!mi_heap_is_theap(h)) mi_stats_heap_pages_add(h, figures);   /* (theaps: with their heaps) */
      }
    }
    mi_stats_settle(figures, NULL);
  }
  if (!exclusive) _mi_sheap_visit(sp, &mi_stats_subproc_heap_add, &s);
  *heaps = s.heaps;
  *theaps = s.theaps;
}

/* ---------------------------------------------------------------------------------------
   v3's layout (version 5): our figures by name, our bins folded into its numbering
--------------------------------------------------------------------------------------- */
static bool mi_stats_v3_valid(const mi_v3_stats_t* stats) {
  return (stats != NULL && stats->size == sizeof(mi_v3_stats_t) && stats->version == MI_V3_STAT_VERSION);
}

static void mi_stat_count_set(mi_stat_count_t* stat, size_t n) {
  stat->current = stat->peak = stat->total = (int64_t)n;
}

static bool mi_stats_to_v3(const mi_stats_data_t* data, size_t heaps, size_t theaps, mi_v3_stats_t* stats) {
  if (!mi_stats_v3_valid(stats)) return false;
  memset(stats, 0, sizeof(*stats));
  stats->size = sizeof(mi_v3_stats_t);
  stats->version = MI_V3_STAT_VERSION;
#define MI_STAT_COUNT(name)    stats->name = data->name;
#define MI_STAT_COUNTER(name)  stats->name = data->name;
  MI_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  mi_stat_count_set(&stats->heaps, heaps);
  mi_stat_count_set(&stats->theaps, theaps);
  _mi_stats_print_fold_bins(data->malloc_bins, stats->malloc_bins);
  _mi_stats_print_fold_bins(data->page_bins, stats->page_bins);
  return true;
}

static bool mi_stats_subproc_get(mi_subproc_t* sp, bool exclusive, mi_v3_stats_t* stats) {
  if (!mi_stats_v3_valid(stats)) return false;
  mi_stats_data_t figures;
  size_t heaps = 0, theaps = 0;
  mi_stats_subproc_figures(sp, exclusive, &figures, &heaps, &theaps);
  return mi_stats_to_v3(&figures, heaps, theaps, stats);
}

bool _mi_stats_v3_get(mi_v3_stats_t* stats) {
  return mi_stats_subproc_get(&_mi_subproc_main, false, stats);
}

mi_decl_export bool mi_heap_stats_get(mi_heap_t* heap, mi_v3_stats_t* stats) mi_attr_noexcept {
  if (!mi_stats_v3_valid(stats)) return false;
  mi_stats_data_t figures;
  size_t parts = 0;
  if (!mi_stats_heap_figures(heap, &figures, &parts, true)) return false;
  return mi_stats_to_v3(&figures, 1, parts, stats);
}

mi_decl_export void mi_heap_stats_merge_to_subproc(mi_heap_t* heap) {
  if (heap == NULL || !mi_heap_is_shared(heap) || heap == _mi_sheap_main()) return;   /* (nothing to publish) */
  mi_stats_data_t own_figures;
  mi_stats_own_part(heap, &own_figures, true);
}

mi_decl_export bool mi_subproc_stats_get(mi_v3_subproc_id_t subproc_id, mi_v3_stats_t* stats) mi_attr_noexcept {
  return mi_stats_subproc_get(mi_v3_subproc_of(subproc_id), false, stats);
}

mi_decl_export bool mi_subproc_stats_get_exclusive(mi_v3_subproc_id_t subproc_id, mi_v3_stats_t* stats) mi_attr_noexcept {
  return mi_stats_subproc_get(mi_v3_subproc_of(subproc_id), true, stats);
}

/* ---------------------------------------------------------------------------------------
   JSON of v3's layout: stat_version 5, v3's field names, the bins in its numbering with their
   block sizes
--------------------------------------------------------------------------------------- */
static void mi_json_v3_bins(mi_json_t* json, const char* name, const mi_stat_count_t* bins, size_t count, bool with_size) {
  _mi_stats_print_json_add(json, ",\n  \"%s\": [", name);
  for (size_t bin = 0; bin < count; bin++) {
    _mi_stats_print_json_add(json, "%s\n    { \"bin\": %zu, \"total\": %lld, \"peak\": %lld, \"current\": %lld", (bin == 0 ? "" : ","), bin,
                 (long long)bins[bin].total, (long long)bins[bin].peak, (long long)bins[bin].current);
    if (with_size) _mi_stats_print_json_add(json, ", \"block_size\": %zu", mi_stats_get_bin_size(bin));
    _mi_stats_print_json_add(json, " }");
  }
  _mi_stats_print_json_add(json, "\n  ]");
}

static void mi_json_v3(mi_json_t* json, void* arg) {
  const mi_v3_stats_t* const stats = (const mi_v3_stats_t*)arg;
  _mi_stats_print_json_add(json, "{\n  \"stat_version\": %d,\n  \"mimalloc_version\": %d,\n  \"stat_level\": %d,\n  \"debug\": %d",
               MI_V3_STAT_VERSION, MI_MALLOC_VERSION, MI_STAT, MI_DEBUG);
#define MI_STAT_COUNT(name)    _mi_stats_print_json_count(json, #name, &stats->name);
#define MI_STAT_COUNTER(name)  _mi_stats_print_json_add(json, ",\n  \"%s\": %lld", #name, (long long)stats->name.total);
  MI_V3_STAT_FIELDS()
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER
  mi_json_v3_bins(json, "malloc_bins", stats->malloc_bins, MI_V3_BIN_HUGE + 1, true);
  mi_json_v3_bins(json, "page_bins", stats->page_bins, MI_V3_BIN_HUGE + 1, true);
  mi_json_v3_bins(json, "chunk_bins", stats->chunk_bins, MI_V3_CBIN_COUNT, false);
  _mi_stats_print_json_add(json, "\n}\n");
}

mi_decl_export char* mi_stats_as_json(mi_v3_stats_t* stats, size_t buf_size, char* buf) mi_attr_noexcept {
  if (!mi_stats_v3_valid(stats)) return NULL;
  return _mi_stats_print_json_render(&mi_json_v3, stats, buf_size, buf);
}

/* (the figures are taken once: both passes of the rendering show the same) */
mi_decl_export char* mi_heap_stats_get_json(mi_heap_t* heap, size_t buf_size, char* buf) mi_attr_noexcept {
  mi_v3_stats_t stats;
  stats.size = sizeof(stats);
  stats.version = MI_V3_STAT_VERSION;
  if (!mi_heap_stats_get(heap, &stats)) return NULL;
  return mi_stats_as_json(&stats, buf_size, buf);
}

mi_decl_export char* mi_subproc_stats_get_json(mi_v3_subproc_id_t subproc_id, size_t buf_size, char* buf) mi_attr_noexcept {
  mi_v3_stats_t stats;
  stats.size = sizeof(stats);
  stats.version = MI_V3_STAT_VERSION;
  if (!mi_subproc_stats_get(subproc_id, &stats)) return NULL;
  return mi_stats_as_json(&stats, buf_size, buf);
}

/* ---------------------------------------------------------------------------------------
   Text: the readable layout (or mimalloc's, MIMALLOC_STATS_LAYOUT) under a title line
--------------------------------------------------------------------------------------- */
static void mi_stats_print_heap(mi_heap_t* heap, bool publish, mi_output_fun* out, void* arg) {
  mi_stats_data_t figures;
  size_t parts = 0;
  char title[160];
  if (!mi_stats_heap_figures(heap, &figures, &parts, publish)) {
    _mi_snprintf(title, sizeof(title), "mimalloc: heap %p: not a heap of this thread (no statistics)", (void*)heap);
    memset(&figures, 0, sizeof(figures));
  }
  else if (heap == NULL || heap == _mi_sheap_main()) {
    _mi_snprintf(title, sizeof(title), "mimalloc: the main heap, this thread's part (the process: mi_stats_print_out)");
  }
  else {
    _mi_snprintf(title, sizeof(title), "mimalloc: heap %p, %zu %s (other threads' as they last published them)",
                 (void*)heap, parts, (parts == 1 ? "thread's part" : "threads' parts"));
  }
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  _mi_stats_print_titled(&figures, &info, title, out, arg);
}

mi_decl_export void mi_heap_stats_print_out(mi_heap_t* heap, mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_stats_print_heap(heap, true, out, arg);
}

static void mi_stats_print_subproc(mi_subproc_t* sp, mi_output_fun* out, void* arg) {
  if (sp == &_mi_subproc_main) { mi_stats_print_out(out, arg); return; }
  mi_stats_data_t figures;
  size_t heaps = 0, theaps = 0;
  mi_stats_subproc_figures(sp, false, &figures, &heaps, &theaps);
  char title[160];
  _mi_snprintf(title, sizeof(title), "mimalloc: subprocess %p: its segments, this thread's heaps, %zu shared heap%s (%zu part%s)",
               (void*)sp, heaps, (heaps == 1 ? "" : "s"), theaps, (theaps == 1 ? "" : "s"));
  mi_process_info_t info;
  _mi_stats_print_process_info_get(&info);
  _mi_stats_print_titled(&figures, &info, title, out, arg);
}

mi_decl_export void mi_subproc_stats_print_out(mi_v3_subproc_id_t subproc_id, mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_stats_print_subproc(mi_v3_subproc_of(subproc_id), out, arg);
}

typedef struct mi_print_heaps_s {
  mi_subproc_t*  sp;
  mi_output_fun* out;
  void*          arg;
} mi_print_heaps_t;

/* Under the list's lock (_mi_sheap_visit): nothing published (no allocation). The main heap is
   the main subprocess' only (its part for this thread is this thread's). */
static bool mi_stats_print_listed_heap(mi_heap_t* heap, void* arg) {
  const mi_print_heaps_t* const p = (const mi_print_heaps_t*)arg;
  if (heap == _mi_sheap_main() && p->sp != &_mi_subproc_main) return true;
  mi_stats_print_heap(heap, false, p->out, p->arg);
  return true;
}

mi_decl_export void mi_subproc_heap_stats_print_out(mi_v3_subproc_id_t subproc_id, mi_output_fun* out, void* arg) mi_attr_noexcept {
  mi_subproc_t* const sp = mi_v3_subproc_of(subproc_id);
  mi_stats_print_subproc(sp, out, arg);
  mi_print_heaps_t p = { sp, out, arg };
  _mi_sheap_visit(sp, &mi_stats_print_listed_heap, &p);
}
