/* SPDX-License-Identifier: MIT */
/* validate-corrupt: each validator of src/validate.c catches a corrupted field.

   usage: validate-corrupt CASE

   A corruption case forks a child that builds the structure through the allocator, corrupts
   one field through the internal headers (src/internal/internal.h), and calls the structure's
   validator directly. The parent checks that the child died of SIGABRT and that its stderr
   holds "validate: <structure> " and the field's name. The "clean" cases run the validators on
   healthy structures (including an ended thread's abandoned segment): the child must exit 0
   without a message, so a validator that rejects everything would fail them. "heap-tag-moved"
   is the regression test of the first bug the validators found (pages that moved to another
   heap kept their old tag).

   The validators are compiled in every debug build (MI_DEBUG > 0), so this runs in the plain
   Debug build as well as in the MI_DEBUG_FULL one. Exit status 0: the expectation held. */
#include "internal/internal.h"
#include "internal/bitmap.h"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void* keep[64];   /* blocks kept alive through the case */

static mi_heap_t* heap_of_thread(void) {
  mi_heap_t* heap = mi_heap_get_default();
  if (!mi_heap_is_initialized(heap)) { fprintf(stderr, "no initialised heap\n"); exit(3); }
  return heap;
}

/* A small block's page, with a few blocks handed out (and one freed: a free list). */
static mi_page_t* small_page(void) {
  for (int i = 0; i < 8; i++) keep[i] = mi_malloc(64);
  mi_free(keep[7]);
  keep[7] = NULL;
  return _mi_ptr_page(keep[0]);
}

/* ---- an abandoned page: a thread that ends leaving a block behind ---- */
static void* leave_block(void* arg) {
  (void)arg;
  keep[40] = mi_malloc(200);
  keep[41] = mi_malloc(200);
  return NULL;
}
static mi_page_t* abandoned_page(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, &leave_block, NULL) != 0 || pthread_join(t, NULL) != 0) exit(3);
  mi_page_t* page = _mi_ptr_page(keep[40]);
  if (!page->abandoned_listed) { fprintf(stderr, "the ended thread's page is not abandoned\n"); exit(3); }
  return page;
}

/* ---- the arena of a segment, and a free block of it ---- */
static bool arena_of(const mi_segment_t* segment, mi_arena_view_t* view) {
  if (segment->memid.arena_idx < 0) { fprintf(stderr, "segment not from an arena\n"); exit(3); }
  return _mi_arena_view((size_t)segment->memid.arena_idx, view);
}

/* ---- the corruption cases: set up, corrupt one field, validate (must not return) ---- */
typedef struct case_s {
  const char* name;
  const char* structure;   /* expected in the message */
  const char* field;       /* expected in the message (NULL: a clean case, exit 0 expected) */
  void (*run)(void);
} case_t;

static void page_used(void)        { mi_page_t* p = small_page(); p->used++; _mi_validate_page(p); }
static void page_capacity(void)    { mi_page_t* p = small_page(); p->capacity = p->reserved + 1; _mi_validate_page(p); }
static void page_free_link(void) {
  mi_page_t* p = small_page();
  if (p->free == NULL) exit(3);
  mi_block_set_next(p, p->free, (mi_block_t*)(mi_page_start(p) + 1));   /* not a block start */
  _mi_validate_page(p);
}
static void page_thread_free(void) {
  mi_page_t* p = small_page();
  const uintptr_t tf = mi_atomic_load_relaxed(&p->xthread_free);
  mi_atomic_store_relaxed(&p->xthread_free, mi_tf_with_count(tf, mi_tf_count(tf) + 1, mi_tf_delayed(tf)));
  _mi_validate_page(p);
}
static void page_free_is_zero(void) {
  mi_page_t* p = small_page();
  if (p->free == NULL) exit(3);
  p->free_is_zero = 1;   /* a freed block (or a debug build's fill) is not zero */
  _mi_validate_page(p);
}
static void page_heap_tag(void)    { mi_page_t* p = small_page(); p->heap_tag = 9; _mi_validate_page(p); }
static void page_owner(void) {
  mi_page_t* p = small_page();
  mi_atomic_store_relaxed(&p->xthread_id, mi_atomic_load_relaxed(&p->xthread_id) + 8);
  _mi_validate_page(p);
}

static void heap_page_count(void)  { small_page(); mi_heap_t* h = heap_of_thread(); h->page_count++; _mi_validate_heap(h); }
static void heap_direct(void) {
  small_page();   /* blocks of 64 bytes: the direct entry of 64 bytes and the padding */
  mi_heap_t* h = heap_of_thread();
  h->pages_free_direct[_mi_wsize_from_size(64 + MI_PADDING_SIZE)] = (mi_page_t*)&_mi_page_empty;
  _mi_validate_heap(h);
}
static void heap_in_full(void) {
  mi_page_t* p = small_page();
  mi_page_set_in_full(p, true);   /* but it is in its bin's queue */
  _mi_validate_heap(heap_of_thread());
}
static void heap_page_sheap(void) {
  mi_page_t* p = small_page();   /* a default heap's page: no lists of its own (no shared heap) */
  mi_atomic_store_relaxed(&p->abandon_lists, (mi_abandoned_lists_t*)(void*)heap_of_thread());
  _mi_validate_heap(heap_of_thread());
}
static void heap_queue_last(void) {
  mi_page_t* p = small_page();
  mi_heap_t* h = heap_of_thread();
  h->pages[_mi_bin(p->block_size)].last = NULL;
  _mi_validate_heap(h);
}

static void segment_used(void)       { mi_segment_t* s = _mi_page_segment(small_page()); s->used++; _mi_validate_segment(s); }
static void segment_slots_used(void) { mi_segment_t* s = _mi_page_segment(small_page()); s->slots_used += 2; _mi_validate_segment(s); }
static void segment_cookie(void)     { mi_segment_t* s = _mi_page_segment(small_page()); s->cookie ^= 0x10; _mi_validate_segment(s); }
static void segment_span_tail(void) {
  mi_segment_t* s = _mi_page_segment(small_page());
  s->pages[s->capacity - 1].span_tail = 1;   /* an unused slot (a fresh process uses the first ones) */
  _mi_validate_segment(s);
}
static void segment_abandoned(void) { mi_segment_t* s = _mi_page_segment(small_page()); s->abandoned++; _mi_validate_segment(s); }
static void segment_listed(void)     { mi_page_t* p = small_page(); p->abandoned_listed = 1; _mi_validate_segment(_mi_page_segment(p)); }

static void map_start(void) {
  mi_segment_t* s = _mi_page_segment(small_page());
  mi_atomic_store_relaxed(&_mi_segment_map_start[(uintptr_t)s >> MI_SEGMENT_SHIFT], (uint8_t)(s->page_shift + 1));
  _mi_validate_segment_map(s);
}

static void subproc_purge_count(void) { small_page(); mi_subproc_t* sp = heap_of_thread()->tld->subproc; mi_atomic_add_relaxed(&sp->purge_count, 1); _mi_validate_subproc(sp); }
static void subproc_free_queue(void) {
  mi_segment_t* s = _mi_page_segment(small_page());
  if (!s->in_free_queue) exit(3);
  s->in_free_queue = false;
  _mi_validate_subproc(s->subproc);
}
/* large blocks freed: their slots wait in the large purge queue, by deadline (a third one
   keeps the segment) */
static void make_purge_queue(void) {
  keep[20] = mi_malloc(300 * 1024);
  keep[21] = mi_malloc(300 * 1024);
  keep[22] = mi_malloc(300 * 1024);
  mi_free(keep[20]);
  mi_free(keep[21]);
}
static void subproc_purge_order(void) {
  make_purge_queue();
  mi_subproc_t* sp = heap_of_thread()->tld->subproc;
  mi_page_t* first = sp->purge[MI_PAGE_LARGE].first;
  if (first == NULL || first->next == NULL) { fprintf(stderr, "no purge queue\n"); exit(3); }
  first->purge_expire = first->next->purge_expire + 1000;
  _mi_validate_subproc(sp);
}

static void abandoned_count(void) {
  abandoned_page();
  _mi_subproc_main.abandoned_count++;
  _mi_validate_subproc(&_mi_subproc_main);
}
static void abandoned_flag(void) {
  mi_page_t* p = abandoned_page();
  p->abandoned_listed = 0;
  _mi_page_segment(p)->abandoned--;   /* (so the segment's count agrees: the list walk must see it) */
  _mi_validate_subproc(&_mi_subproc_main);
}
static void abandoned_page_form(void) {
  mi_page_t* p = abandoned_page();
  mi_atomic_store_relaxed(&p->xthread_free, mi_tf_make_empty(MI_NEVER_DELAYED_FREE));   /* the owned form */
  _mi_validate_subproc(&_mi_subproc_main);
}

static void arena_committed(void) {
  mi_segment_t* s = _mi_page_segment(small_page());
  mi_arena_view_t a;
  if (!arena_of(s, &a)) exit(3);
  /* a held block's committed bit says how it was handed out: flip it */
  if (_mi_bitmap_is_all_set(a.committed, s->memid.block_index, 1)) _mi_bitmap_clear(a.committed, s->memid.block_index, 1);
  else _mi_bitmap_set(a.committed, s->memid.block_index, 1, NULL);
  _mi_validate_arena_memid(s, &s->memid);
}
static void arena_inuse(void) {
  mi_segment_t* s = _mi_page_segment(small_page());
  mi_arena_view_t a;
  if (!arena_of(s, &a)) exit(3);
  _mi_bitmap_clear(a.inuse, s->memid.block_index, 1);
  _mi_validate_arena_memid(s, &s->memid);
}
static void arena_purge(void) {
  mi_segment_t* s = _mi_page_segment(small_page());
  mi_arena_view_t a;
  if (!arena_of(s, &a)) exit(3);
  for (size_t i = 0; i < a.block_count; i++) {   /* a free block that is not committed */
    if (_mi_bitmap_is_all_set(a.inuse, i, 1) || _mi_bitmap_is_all_set(a.committed, i, 1)) continue;
    _mi_bitmap_set(a.purge, i, 1, NULL);
    _mi_validate_arenas();
    return;
  }
  fprintf(stderr, "no free uncommitted arena block\n");
  exit(3);
}

static void stats_negative(void) {
  small_page();
  mi_tld_t* t = heap_of_thread()->tld;
  t->stats.malloc_normal.current = -64;
  _mi_validate_stats(&t->stats, true);
}

/* clean: every validator on healthy structures returns */
static void clean_all(void) {
  small_page();
  make_purge_queue();
  keep[30] = mi_malloc(64 * 1024);         /* medium */
  keep[31] = mi_malloc(8 * 1024 * 1024);   /* huge */
  abandoned_page();
  mi_heap_t* h = heap_of_thread();
  mi_heap_t* h2 = mi_heap_new();
  keep[32] = mi_heap_malloc(h2, 100);
  if (!_mi_validate_page(_mi_ptr_page(keep[0])) || !_mi_validate_heap(h) || !_mi_validate_heap(h2) ||
      !_mi_validate_segment(_mi_ptr_segment(keep[31])) || !_mi_validate_subproc(h->tld->subproc) || !_mi_validate_arenas() || !_mi_validate_thread(h) ||
      !_mi_validate_arena_memid(_mi_ptr_segment(keep[0]), &_mi_ptr_segment(keep[0])->memid) ||
      !_mi_validate_stats(&h->tld->stats, true) || !_mi_validate_stats(&_mi_stats_main, false)) exit(1);
  mi_heap_delete(h2);
  mi_collect(true);   /* (adopts the abandoned page) */
  if (!_mi_validate_thread(h)) exit(1);
  exit(0);
}

/* regression: a heap's pages absorbed by the backing heap take its tag */
static bool tag_visitor(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap; (void)block; (void)size;
  if (area->heap_tag != 0) *(int*)arg = area->heap_tag;
  return true;
}
static void heap_tag_moved(void) {
  mi_heap_t* tagged = mi_heap_new_ex(7, false, 0);
  keep[0] = mi_heap_malloc(tagged, 100);
  mi_heap_delete(tagged);   /* its live block moves to the backing heap (tag 0) */
  int seen = 0;
  mi_heap_visit_blocks(mi_heap_get_backing(), false, &tag_visitor, &seen);
  if (seen != 0) { fprintf(stderr, "an area of the backing heap reports heap_tag %d\n", seen); exit(1); }
  if (_mi_ptr_page(keep[0])->heap_tag != 0) { fprintf(stderr, "the moved page kept its tag\n"); exit(1); }
  _mi_validate_heap(mi_heap_get_backing());
  exit(0);
}

static const case_t cases[] = {
  { "page-used",            "page",        "used",                   &page_used },
  { "page-capacity",        "page",        "capacity",               &page_capacity },
  { "page-free-link",       "page",        "free",                   &page_free_link },
  { "page-thread-free",     "page",        "thread_free count",      &page_thread_free },
  { "page-free-is-zero",    "page",        "free_is_zero",           &page_free_is_zero },
  { "page-heap-tag",        "page",        "heap_tag",               &page_heap_tag },
  { "page-owner",           "page",        "xthread_id owner",       &page_owner },
  { "heap-page-count",      "heap",        "page_count",             &heap_page_count },
  { "heap-direct",          "heap",        "pages_free_direct[",     &heap_direct },
  { "heap-in-full",         "heap",        "in_full flag",           &heap_in_full },
  { "heap-queue-last",      "heap",        "pages[bin].last",        &heap_queue_last },
  { "heap-page-sheap",      "heap",        "page's abandon_lists",   &heap_page_sheap },
  { "segment-used",         "segment",     "used",                   &segment_used },
  { "segment-slots-used",   "segment",     "slots_used",             &segment_slots_used },
  { "segment-cookie",       "segment",     "cookie",                 &segment_cookie },
  { "segment-span-tail",    "segment",     "span_tail",              &segment_span_tail },
  { "segment-listed",       "segment",     "xheap (abandoned_listed)", &segment_listed },
  { "segment-abandoned",    "segment",     "abandoned (== pages on the abandoned lists)", &segment_abandoned },
  { "map-start",            "segment map", "_mi_segment_map_start",  &map_start },
  { "subproc-purge-count",  "subproc",     "purge_count",            &subproc_purge_count },
  { "subproc-free-queue",   "subproc",     "in_free_queue",          &subproc_free_queue },
  { "subproc-purge-order",  "subproc",     "purge_expire (ordered)", &subproc_purge_order },
  { "abandoned-count",      "subproc",     "abandoned_count",        &abandoned_count },
  { "abandoned-flag",       "subproc",     "abandoned_listed",       &abandoned_flag },
  { "abandoned-page-form",  "subproc",     "thread_free form",       &abandoned_page_form },
  { "arena-committed",      "arena",       "blocks_committed bit",   &arena_committed },
  { "arena-inuse",          "arena",       "blocks_inuse bit",       &arena_inuse },
  { "arena-purge",          "arena",       "purge is a subset of committed", &arena_purge },
  { "stats-negative",       "stats",       "malloc_normal",          &stats_negative },
  { "clean",                NULL,          NULL,                     &clean_all },
  { "heap-tag-moved",       NULL,          NULL,                     &heap_tag_moved },
};

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: validate-corrupt CASE\n"); return 2; }
  const case_t* c = NULL;
  for (size_t i = 0; i < sizeof(cases)/sizeof(cases[0]); i++) {
    if (strcmp(cases[i].name, argv[1]) == 0) c = &cases[i];
  }
  if (c == NULL) { fprintf(stderr, "unknown case %s\n", argv[1]); return 2; }
  int fds[2];
  if (pipe(fds) != 0) return 3;
  const pid_t pid = fork();
  if (pid < 0) return 3;
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    c->run();
    _exit(c->field == NULL ? 0 : 4);   /* a corruption case must not get here */
  }
  close(fds[1]);
  char err[8192];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], err + len, sizeof(err) - 1 - len)) > 0) len += (size_t)n;
  err[len] = 0;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 3;
  printf("%s: child %s %d; stderr:\n%s", c->name, (WIFSIGNALED(status) ? "killed by signal" : "exited with"),
         (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)), err);
  if (c->field == NULL) {
    const bool ok = (WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(err, "validate:") == NULL);
    printf("%s\n", ok ? "ok: exit 0, no validation message" : "FAIL: expected exit 0 and no validation message");
    return (ok ? 0 : 1);
  }
  char want[128];
  snprintf(want, sizeof(want), "validate: %s 0x", c->structure);
  const bool died = (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  const char* at = strstr(err, want);
  const bool named = (at != NULL && strstr(at, c->field) != NULL);
  printf("%s\n", (died && named) ? "ok: SIGABRT, structure and field named"
                                 : "FAIL: expected SIGABRT and a message naming the structure and the field");
  if (!named) printf("(expected \"%s...%s\")\n", want, c->field);
  return (died && named ? 0 : 1);
}
