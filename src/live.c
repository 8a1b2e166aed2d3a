/* SPDX-License-Identifier: MIT */
/* Live statistics for an observer in another process. With MIMALLOC_LIVE=1 the allocator keeps
   a shared-memory file, /dev/shm/mimalloc-live.<pid>, up to date:
   - the process document: the JSON of MIMALLOC_STATS_JSON (one schema for both);
   - one document per thread: its blocks and bytes in use, in total and per size class, with
     their peaks (read off its own pages: page->used of every page of its heaps).
   No socket is added to the program. Each thread publishes its own document from its
   allocation slow path at most once per interval; the background thread (purger.c) publishes,
   every half interval, the document of every thread that did not for an interval (it sleeps,
   waits in a system call, or stays on the fast paths) and the process document, so every
   document is at most 1.5 intervals old (docs/live.md). A viewer reads the file
   (tools/mimalloc-live).

   Layout (all offsets fixed, little-endian as the machine):
     header        MI_LIVE_HEADER_SIZE bytes (mi_live_header_t)
     process doc   MI_LIVE_PROCESS_SIZE bytes (mi_live_doc_t + text)
     thread docs   slot_count x MI_LIVE_SLOT_SIZE bytes
   A document is valid when its seq is even and the same before and after reading it (a
   seqlock: the writer makes seq odd, writes, makes it even again). A thread slot whose tid is
   0 is free. Untouched slots cost no memory (tmpfs pages are allocated on first write).

   Allocations and frees per thread, with nothing counted on the fast paths. Pages carry the
   flag MI_PAGE_FREE_HOOK while the option is on (set at page set-up, at reclaim, and on a
   thread's existing pages at its first publication), which sends every free of their blocks
   off the free fast path to the generic one, where the owner's frees are counted; other
   threads' frees are counted when the owner collects them. Allocations then follow from
   `used`, which malloc increments and free decrements:
     allocations = frees + (blocks in use now) - (blocks in use of pages that came with reclaim)
   Cost with the option on: frees take the generic path (docs/live.md has the figure); off,
   nothing (the flag test is part of the free fast path's one compare).

   Nothing here runs unless the option is set: the only cost otherwise is one load and branch
   in the generic allocation path's periodic work (page.c), never on a fast path. */
#include "internal/observers.h"
#include "internal/prof-hook.h"   /* _mi_prof_samples_json */
#include "prim/prim.h"

#define MI_LIVE_VERSION        (2)
#define MI_LIVE_HEADER_SIZE    (4 * MI_KiB)
#define MI_LIVE_PROCESS_SIZE   (64 * MI_KiB)
#define MI_LIVE_SLOT_SIZE      (16 * MI_KiB)
#define MI_LIVE_SLOTS          (256)
#define MI_LIVE_INTERVAL_MS    (1000)
#if defined(__APPLE__)
#define MI_LIVE_DIR            "/tmp"       /* macOS has no /dev/shm: a sparse file in /tmp */
#else
#define MI_LIVE_DIR            "/dev/shm"
#endif

typedef struct mi_live_header_s {
  char              magic[8];        /* "mi-live" */
  uint32_t          version;
  uint32_t          slot_count;
  uint64_t          header_size;
  uint64_t          process_size;
  uint64_t          slot_size;
  int64_t           pid;
  int64_t           clock_start_ms;  /* the monotonic clock (ms) when the process started: a
                                        document's msecs are since then, so a viewer knows its age */
  _Atomic(uint64_t) interval_ms;     /* the viewer may change it (MI_LIVE_MIN..MAX_INTERVAL) */
  _Atomic(uint64_t) reset_request;   /* incremented by the viewer: publishers reset their peaks */
  _Atomic(uint64_t) thread_states;   /* threads' live states in use (the pool below), as of the
                                        last process document: one per thread that has one */
} mi_live_header_t;

typedef struct mi_live_doc_s {
  _Atomic(uint64_t) seq;             /* odd while the text is written */
  _Atomic(int64_t)  tid;             /* thread slots: the OS thread id of the owner, 0 if free */
  uint64_t          len;             /* of text, without the terminating 0 */
  char              text[];          /* JSON */
} mi_live_doc_t;

_Static_assert(sizeof(mi_live_header_t) <= MI_LIVE_HEADER_SIZE, "live header fits");

bool _mi_live_enabled;                             /* read in slow paths only */
static mi_live_header_t* mi_live_map;
static size_t mi_live_map_size;
/* The process document is formatted here, under the lock, and copied into the file under the
   seqlock: formatting (all statistics, a few ms under a sanitizer) inside the odd window made
   readers give up on a loaded machine. From the OS when the view starts (in .bss it split the
   small variables around it over more pages, resident in every process); kept to the end. */
#define MI_LIVE_PROCESS_TEXT  (MI_LIVE_PROCESS_SIZE - sizeof(mi_live_doc_t))
static char* mi_live_process_text;
static char mi_live_path[64];
static _Atomic(mi_msecs_t) mi_live_process_next;   /* when the process document is due */
static _Atomic(int) mi_live_starting;               /* mi_option_set from two threads at once: one starts it */

/* A thread's live state (tld->live points at its head). Invariants: tld->live == &state->head
   and state->tld == tld while the thread has it; a thread has one from its start when the view
   was on then (exact: its frees and pages moved in are counted from the start), else from its
   first publication (its counts start there: the bases), until its end. Written by the owner
   only, except `published` and what mi_live_write_thread writes, which are under head.lock. */
typedef struct mi_live_thread_s {
  mi_live_head_t   head;            /* first (observe.h): watched, depth, lock, freed */
  mi_tld_t*        tld;             /* the owner's */
  struct mi_live_thread_s* next_free;   /* on the pool's free list (only there) */
  mi_live_doc_t*   doc;             /* NULL: no slot (yet) */
  size_t           slot;
  bool             no_slot;         /* every slot was taken when this thread looked */
  bool             exact;           /* counting since the thread's start (else from its first
                                       publication: the bases below) */
  mi_msecs_t       next;            /* when the next publication is due */
  mi_msecs_t       published;       /* when its document was last written (under head.lock) */
  uint64_t         reset_seen;
  int64_t          peak_blocks;
  int64_t          peak_bytes;
  int64_t          bin_peak[MI_BIN_HUGE_INTERNAL + 1];
  int64_t          used_in;         /* blocks in use of pages that came from other threads */
  int64_t          allocs_base, frees_base;
} mi_live_thread_t;

static inline mi_live_thread_t* mi_live_of(const mi_tld_t* tld) {
  return (mi_live_thread_t*)tld->live;   /* (NULL or a state's head, its first member) */
}

/* The threads whose documents the background thread keeps fresh: the state of slot i's owner,
   or NULL. Set by the owner at its first publication, cleared at its end, both under the lock,
   which the background thread holds while it publishes for one of them (so their tld and state
   outlive it). Lock order: registry, then a state's head.lock; an owner never takes the
   registry while it holds its own head.lock. */
static mi_lock_t mi_live_registry_lock = MI_LOCK_INIT;
static mi_decl_cold_bss mi_live_thread_t* mi_live_watched[MI_LIVE_SLOTS];   /* (the live view's only) */

/* The states come from a pool of OS memory in 64 KiB chunks (56 states each), never from
   malloc (the allocator's internals do not allocate from themselves), and not from the shared
   file's slots: a thread has a state from its start, before it has a slot, and threads may
   outnumber slots. Chunks are never returned (they hold the peak number of threads at once
   that had a state, about 1.2 KiB each); a state is, at its thread's end. Under the pool's
   lock: the chunk list, the free list, the count in use. Lock order: a process document's
   lock, then the pool's; the pool's holds no other. */
#define MI_LIVE_CHUNK_SIZE     (64 * MI_KiB)
#define MI_LIVE_CHUNK_STATES   ((MI_LIVE_CHUNK_SIZE - 64) / sizeof(mi_live_thread_t))
typedef struct mi_live_chunk_s {
  struct mi_live_chunk_s* next;
  mi_live_thread_t        states[MI_LIVE_CHUNK_STATES];
} mi_live_chunk_t;
_Static_assert(sizeof(mi_live_chunk_t) <= MI_LIVE_CHUNK_SIZE, "a chunk of states fits");

static mi_lock_t mi_live_pool_lock = MI_LOCK_INIT;
static mi_live_chunk_t* mi_live_chunks;
static mi_live_thread_t* mi_live_pool_free;
static size_t mi_live_pool_used;

/* A zeroed state for `tld`, or NULL without OS memory (the thread then tries again at its
   next publication, uncounted until then). */
static mi_live_thread_t* mi_live_state_alloc(mi_tld_t* tld, bool exact) {
  mi_lock_acquire(&mi_live_pool_lock);
  if (mi_live_pool_free == NULL) {
    mi_lock_release(&mi_live_pool_lock);   /* (no system call under the lock) */
    bool is_zero = false;
    mi_live_chunk_t* const chunk = (mi_live_chunk_t*)_mi_os_alloc(MI_LIVE_CHUNK_SIZE, &is_zero);
    if (chunk == NULL) return NULL;
    mi_lock_acquire(&mi_live_pool_lock);
    chunk->next = mi_live_chunks;
    mi_live_chunks = chunk;
    for (size_t i = 0; i < MI_LIVE_CHUNK_STATES; i++) {
      chunk->states[i].next_free = mi_live_pool_free;
      mi_live_pool_free = &chunk->states[i];
    }
  }
  mi_live_thread_t* const lt = mi_live_pool_free;
  mi_live_pool_free = lt->next_free;
  mi_live_pool_used++;
  mi_lock_release(&mi_live_pool_lock);
  memset(lt, 0, sizeof(*lt));   /* (its lock is set up at its first publication) */
  lt->tld = tld;
  lt->exact = exact;
  return lt;
}

static void mi_live_state_free(mi_live_thread_t* lt) {
  mi_lock_acquire(&mi_live_pool_lock);
  lt->next_free = mi_live_pool_free;
  mi_live_pool_free = lt;
  mi_live_pool_used--;
  mi_lock_release(&mi_live_pool_lock);
}

static size_t mi_live_pool_in_use(void) {
  mi_lock_acquire(&mi_live_pool_lock);
  const size_t n = mi_live_pool_used;
  mi_lock_release(&mi_live_pool_lock);
  return n;
}

/* The publication interval: the option's, unless a viewer changed it in the header. */
static mi_msecs_t mi_live_interval(void) {
  uint64_t ms = mi_atomic_load_relaxed(&mi_live_map->interval_ms);
  if (ms < 10) ms = 10;
  if (ms > 60000) ms = 60000;
  return (mi_msecs_t)ms;
}

static mi_live_doc_t* mi_live_process_doc(void) {
  return (mi_live_doc_t*)((uint8_t*)mi_live_map + MI_LIVE_HEADER_SIZE);
}
static mi_live_doc_t* mi_live_slot(size_t i) {
  return (mi_live_doc_t*)((uint8_t*)mi_live_map + MI_LIVE_HEADER_SIZE + MI_LIVE_PROCESS_SIZE + i * MI_LIVE_SLOT_SIZE);
}

/* ---------------------------------------------------------------------------------------
   Set up at process start (MIMALLOC_LIVE), undone at exit and in a fork child
--------------------------------------------------------------------------------------- */
void _mi_live_init(void) {
  if (__atomic_load_n(&_mi_live_enabled, __ATOMIC_ACQUIRE) || !mi_option_is_enabled(mi_option_live)) return;
  int expected = 0;
  if (!mi_atomic_cas_strong_acq_rel(&mi_live_starting, &expected, 1)) return;
  const uint64_t interval = (uint64_t)mi_option_get(mi_option_live_interval);
  const size_t size = MI_LIVE_HEADER_SIZE + MI_LIVE_PROCESS_SIZE + (size_t)MI_LIVE_SLOTS * MI_LIVE_SLOT_SIZE;
  const long pid = _mi_prim_process_id();
  _mi_snprintf(mi_live_path, sizeof(mi_live_path), MI_LIVE_DIR "/mimalloc-live.%ld", pid);
  if (mi_live_process_text == NULL) {
    bool is_zero = false;
    mi_live_process_text = (char*)_mi_os_alloc(MI_LIVE_PROCESS_TEXT, &is_zero);
    if (mi_live_process_text == NULL) {
      _mi_warning_message("MIMALLOC_LIVE: out of memory: no live statistics\n");
      mi_atomic_store_release(&mi_live_starting, 0);
      return;
    }
  }
  void* map = NULL;
  const int err = _mi_prim_shared_map(mi_live_path, size, &map);
  if (err != 0) {
    _mi_warning_message("MIMALLOC_LIVE: unable to create %s (error %d): no live statistics\n", mi_live_path, err);
    mi_atomic_store_release(&mi_live_starting, 0);
    return;
  }
  mi_live_header_t* hdr = (mi_live_header_t*)map;
  hdr->version = MI_LIVE_VERSION;
  hdr->slot_count = MI_LIVE_SLOTS;
  hdr->header_size = MI_LIVE_HEADER_SIZE;
  hdr->process_size = MI_LIVE_PROCESS_SIZE;
  hdr->slot_size = MI_LIVE_SLOT_SIZE;
  hdr->pid = pid;
  hdr->clock_start_ms = _mi_prim_clock_now() - _mi_process_elapsed();
  mi_atomic_store_relaxed(&hdr->interval_ms, interval);
  mi_live_map = hdr;
  mi_live_map_size = size;
  mi_atomic_store_release(&mi_live_process_next, (mi_msecs_t)0);
  memcpy(hdr->magic, "mi-live", 8);   /* last: a viewer waits for it */
  __atomic_store_n(&_mi_live_enabled, true, __ATOMIC_RELEASE);   /* publishers then see the map */
  _mi_verbose_message("live statistics in %s, every %llu ms\n", mi_live_path, (unsigned long long)interval);
}

/* At exit: the file goes (a viewer holding it mapped keeps the last figures). The mapping
   stays: threads still running may be publishing into it. */
void _mi_live_done(void) {
  if (!__atomic_load_n(&_mi_live_enabled, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&_mi_live_enabled, false, __ATOMIC_RELEASE);
  _mi_prim_shared_unmap(mi_live_path, NULL, 0, true);
}

/* In a fork child: the mapping is the parent's; the child publishes nothing (and must not
   write into the parent's figures) unless it asks with mi_option_set(mi_option_live, 1), which
   starts a file of its own. */
void _mi_live_fork_child(mi_tld_t* tld) {
  /* the registry's lock was taken by _mi_live_fork_prepare; the other threads are gone */
  mi_lock_init(&mi_live_registry_lock);
  memset(mi_live_watched, 0, sizeof(mi_live_watched));
  /* the pool's lock was taken by _mi_live_fork_prepare: the states of the threads not here
     are free again, this thread's stays */
  mi_live_thread_t* const own = (tld != NULL ? mi_live_of(tld) : NULL);
  mi_live_pool_free = NULL;
  mi_live_pool_used = 0;
  for (mi_live_chunk_t* chunk = mi_live_chunks; chunk != NULL; chunk = chunk->next) {
    for (size_t i = 0; i < MI_LIVE_CHUNK_STATES; i++) {
      mi_live_thread_t* const lt = &chunk->states[i];
      if (lt == own) { mi_live_pool_used++; continue; }
      lt->next_free = mi_live_pool_free;
      mi_live_pool_free = lt;
    }
  }
  mi_lock_release(&mi_live_pool_lock);
  if (own != NULL) {   /* the slot and the counts were the parent's */
    own->head.watched = false;
    own->head.depth = 0;
    own->doc = NULL;
    own->no_slot = false;
    own->next = 0;
    own->exact = false;
  }
  /* (the pages' counting flags are cleared by _mi_heap_after_fork_child's walk) */
  mi_atomic_store_relaxed(&mi_live_starting, 0);   /* the child is single-threaded here */
  if (!__atomic_load_n(&_mi_live_enabled, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&_mi_live_enabled, false, __ATOMIC_RELEASE);
  _mi_prim_shared_unmap(mi_live_path, mi_live_map, mi_live_map_size, false);
  mi_live_map = NULL;
}

/* ---------------------------------------------------------------------------------------
   Publishing
--------------------------------------------------------------------------------------- */
static void mi_live_write_begin(mi_live_doc_t* doc) {
  const uint64_t seq = mi_atomic_load_relaxed(&doc->seq);
  mi_atomic_store_relaxed(&doc->seq, seq | 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);   /* the odd seq is seen before any text */
}
static void mi_live_write_end(mi_live_doc_t* doc) {
  const uint64_t seq = mi_atomic_load_relaxed(&doc->seq);
  mi_atomic_store_release(&doc->seq, (seq | 1) + 1);
}

/* The process document: written under a lock (one writer for its seqlock); when due, by the
   first publisher to get the lock, and always on a forced publication (mi_collect), so that it
   includes what that thread just merged. */
static mi_lock_t mi_live_process_lock = MI_LOCK_INIT;

static void mi_live_publish_process(mi_msecs_t now, bool force) {
  if (!force && now < mi_atomic_load_relaxed(&mi_live_process_next)) return;
  if (force) mi_lock_acquire(&mi_live_process_lock);
  else if (!mi_lock_try_acquire(&mi_live_process_lock)) return;   /* another thread writes it now */
  mi_atomic_store_relaxed(&mi_live_process_next, now + mi_live_interval());
  mi_atomic_store_relaxed(&mi_live_map->thread_states, (uint64_t)mi_live_pool_in_use());
  mi_live_doc_t* doc = mi_live_process_doc();
  char* const text = mi_live_process_text;   /* (set before the view was enabled) */
  const size_t cap = MI_LIVE_PROCESS_TEXT;
  size_t len = _mi_stats_print_json_now(text, cap);
  if (len < cap && mi_prof_rate() != 0) {
    /* the heap profiler's top sites, as a last member of the same object */
    while (len > 0 && text[len - 1] != '}') len--;
    if (len > 0) {
      mi_json_t json = { text, cap, len - 1 };
      _mi_prof_samples_json(&json, 20);
      _mi_stats_print_json_add(&json, "\n}\n");
      len = json.len;
    }
  }
  if (len >= cap) len = 0;
  mi_live_write_begin(doc);
  memcpy(doc->text, text, len);
  doc->text[len] = 0;
  doc->len = len;
  mi_live_write_end(doc);
  mi_lock_release(&mi_live_process_lock);
}

static bool mi_live_claim_slot(mi_live_thread_t* lt) {
  const int64_t tid = _mi_prim_thread_os_id();
  for (size_t i = 0; i < mi_live_map->slot_count; i++) {
    mi_live_doc_t* doc = mi_live_slot(i);
    int64_t expected = 0;
    if (mi_atomic_load_relaxed(&doc->tid) == 0 && mi_atomic_cas_strong_acq_rel(&doc->tid, &expected, tid)) {
      lt->doc = doc;
      lt->slot = i;
      return true;
    }
  }
  return false;   /* more threads than slots: this one shows in the process totals only */
}

/* A page with blocks in use moves from the thread of `from` to that of `to` (NULL: none):
   reclaim (by the new owner), abandon (mi_heap_delete of an arena heap; thread exit). Its
   blocks in use were allocated by neither. */
void _mi_live_page_move(mi_page_t* page, mi_tld_t* from, mi_tld_t* to) {
  if (from == to) return;
  /* (a thread without a state counts from its first publication: nothing to move yet) */
  if (from != NULL && from->live != NULL) mi_live_of(from)->used_in -= (int64_t)page->used;
  if (to != NULL) {
    if (to->live != NULL) mi_live_of(to)->used_in += (int64_t)page->used;
    mi_page_flag_set(page, MI_PAGE_FREE_HOOK, true);   /* the caller owns it now */
  }
}

/* Figures the owner changes outside head.lock (on its fast paths: page->used; on its slow
   paths: the counts of frees), read by the background thread as they are at that moment. An
   aligned word is read whole; the figure may be one operation old, which is what a snapshot
   of a running thread is. (ThreadSanitizer would report each pairing with the owner's plain
   writes; these reads are the only such ones.) */
#if defined(__GNUC__)
__attribute__((no_sanitize("thread"), noinline))
#endif
static int64_t mi_live_peek(const void* p, size_t size) {
  if (size == sizeof(uint16_t)) return (int64_t)__atomic_load_n((const uint16_t*)p, __ATOMIC_RELAXED);
  if (size == sizeof(uint32_t)) return (int64_t)__atomic_load_n((const uint32_t*)p, __ATOMIC_RELAXED);
  return __atomic_load_n((const int64_t*)p, __ATOMIC_RELAXED);
}
#define mi_live_peek_field(x)   mi_live_peek(&(x), sizeof(x))

/* A thread's document: its pages' blocks in use per size class. Called with lt->head.lock
   held (so its heap list and page queues stand still), by the thread itself (`owner`) or by
   the background thread; only the owner changes its pages' flags. */
static void mi_live_write_thread(mi_live_thread_t* lt, mi_msecs_t now, bool owner) {
  mi_tld_t* const tld = lt->tld;
  int64_t blocks[MI_BIN_HUGE_INTERNAL + 1];
  int64_t bytes[MI_BIN_HUGE_INTERNAL + 1];
  memset(blocks, 0, sizeof(blocks));
  memset(bytes, 0, sizeof(bytes));
  size_t heaps = 0, pages = 0;
  const bool counting_starts = !lt->exact;   /* the thread had pages before the option was on */
  mi_assert_internal(owner || !counting_starts);
  for (mi_heap_t* heap = tld->heaps; heap != NULL; heap = heap->next) {
    heaps++;
    for (size_t q = 0; q <= MI_BIN_FULL; q++) {
      for (mi_page_t* page = heap->pages[q].first; page != NULL; page = page->next) {
        const size_t bin = (mi_page_is_huge(page) ? MI_BIN_HUGE_INTERNAL : _mi_bin(page->block_size));
        const int64_t used = (owner ? (int64_t)page->used : mi_live_peek_field(page->used));
        pages++;
        blocks[bin] += used;
        bytes[bin] += used * (int64_t)page->block_size;
        if (counting_starts) mi_page_flag_set(page, MI_PAGE_FREE_HOOK, true);
      }
    }
  }
  int64_t total_blocks = 0, total_bytes = 0;
  for (size_t b = 0; b <= MI_BIN_HUGE_INTERNAL; b++) { total_blocks += blocks[b]; total_bytes += bytes[b]; }
  const int64_t frees = (owner ? lt->head.freed : mi_live_peek_field(lt->head.freed));
  const int64_t used_in = (owner ? lt->used_in : mi_live_peek_field(lt->used_in));
  const int64_t allocs = frees + total_blocks - used_in;
  if (counting_starts) {   /* count from now */
    lt->allocs_base = allocs;
    lt->frees_base = frees;
    lt->exact = true;
  }
  /* peaks: over the figures published (reset on the viewer's request) */
  const uint64_t reset = mi_atomic_load_relaxed(&mi_live_map->reset_request);
  if (reset != lt->reset_seen) {
    lt->reset_seen = reset;
    lt->peak_blocks = 0;
    lt->peak_bytes = 0;
    memset(lt->bin_peak, 0, sizeof(lt->bin_peak));
  }
  if (total_blocks > lt->peak_blocks) lt->peak_blocks = total_blocks;
  if (total_bytes > lt->peak_bytes) lt->peak_bytes = total_bytes;
  for (size_t b = 0; b <= MI_BIN_HUGE_INTERNAL; b++) {
    if (blocks[b] > lt->bin_peak[b]) lt->bin_peak[b] = blocks[b];
  }
  lt->published = now;
  mi_live_doc_t* doc = lt->doc;
  mi_json_t t = { doc->text, MI_LIVE_SLOT_SIZE - sizeof(mi_live_doc_t), 0 };
  mi_live_write_begin(doc);
  /* msecs: since the program started, when these figures were read; by: who read them */
  _mi_stats_print_json_add(&t, "{ \"tid\": %lld, \"slot\": %zu, \"msecs\": %lld, \"by\": \"%s\", \"heaps\": %zu, \"pages\": %zu,\n",
              (long long)mi_atomic_load_relaxed(&doc->tid), lt->slot, (long long)_mi_process_elapsed(),
              (owner ? "thread" : "background"), heaps, pages);
  _mi_stats_print_json_add(&t, "  \"blocks\": { \"current\": %lld, \"peak\": %lld }, \"bytes\": { \"current\": %lld, \"peak\": %lld },\n",
              (long long)total_blocks, (long long)lt->peak_blocks, (long long)total_bytes, (long long)lt->peak_bytes);
  _mi_stats_print_json_add(&t, "  \"allocs\": %lld, \"frees\": %lld,\n  \"bins\": [", (long long)(allocs - lt->allocs_base), (long long)(frees - lt->frees_base));
  bool first = true;
  for (size_t b = 1; b <= MI_BIN_HUGE_INTERNAL; b++) {
    if (blocks[b] == 0 && lt->bin_peak[b] == 0) continue;
    _mi_stats_print_json_add(&t, "%s\n    { \"bin\": %zu, \"block_size\": %zu, \"blocks\": %lld, \"peak\": %lld, \"bytes\": %lld }",
                (first ? "" : ","), b, (b == MI_BIN_HUGE_INTERNAL ? (size_t)0 : _mi_page_bin_size(b)),
                (long long)blocks[b], (long long)lt->bin_peak[b], (long long)bytes[b]);
    first = false;
  }
  _mi_stats_print_json_add(&t, "\n  ] }\n");
  doc->len = (t.len < t.size ? t.len : 0);   /* 0: did not fit (cannot happen with 123 bins) */
  mi_live_write_end(doc);
}

/* The calling thread's document, when due (or `force`: mi_collect). Its first one registers
   the thread with the background thread, which from then on publishes for it whenever the
   thread itself has not for an interval (it sleeps, waits in a system call, or allocates only
   on the fast paths), so no document is older than 1.5 intervals while the thread lives. */
void _mi_live_publish(mi_tld_t* tld, bool force) {
  if (!__atomic_load_n(&_mi_live_enabled, __ATOMIC_ACQUIRE) || tld == NULL) return;
  if (tld->live == NULL) {   /* the view started after the thread: counted from now on */
    mi_live_thread_t* const fresh = mi_live_state_alloc(tld, false);
    if (fresh == NULL) return;
    tld->live = &fresh->head;
  }
  mi_live_thread_t* const lt = mi_live_of(tld);
  const mi_msecs_t now = _mi_prim_clock_now();
  if (!force && now < lt->next) return;
  lt->next = now + mi_live_interval();
  _mi_stats_merge_thread(tld);   /* the totals include this thread's figures of now */
  mi_live_publish_process(now, force);
  if (lt->doc == NULL && (lt->no_slot || !mi_live_claim_slot(lt))) {
    lt->no_slot = true;
    return;
  }
  const bool first = !lt->head.watched;
  if (first) {   /* nobody else knows this state yet: set up its lock before it is registered */
    mi_assert_internal(lt->head.depth == 0);
    mi_lock_init(&lt->head.lock);
    lt->head.depth = 0;
    lt->head.watched = true;
  }
  mi_live_enter(tld);
  mi_live_write_thread(lt, now, true);
  mi_live_leave(tld);
  if (first) {   /* (after its first document: the background thread only refreshes) */
    mi_lock_acquire(&mi_live_registry_lock);
    mi_live_watched[lt->slot] = lt;
    mi_lock_release(&mi_live_registry_lock);
    _mi_purger_live_wanted();   /* the background thread publishes from now on */
  }
}

/* The background thread (purger.c), every half interval while the view is on: the process
   document when due, and the document of every registered thread that did not publish for an
   interval. Returns when it wants to run again (0: the view is off). */
mi_msecs_t _mi_live_background(mi_msecs_t now) {
  if (!__atomic_load_n(&_mi_live_enabled, __ATOMIC_ACQUIRE)) return 0;
  const mi_msecs_t interval = mi_live_interval();
  mi_live_publish_process(now, false);
  mi_lock_acquire(&mi_live_registry_lock);
  for (size_t i = 0; i < MI_LIVE_SLOTS; i++) {
    mi_live_thread_t* const lt = mi_live_watched[i];
    if (lt == NULL) continue;
    mi_lock_acquire(&lt->head.lock);   /* the owner holds it only inside a queue change */
    if (now - lt->published >= interval) mi_live_write_thread(lt, now, false);
    mi_lock_release(&lt->head.lock);
  }
  mi_lock_release(&mi_live_registry_lock);
  return now + (interval / 2 > 0 ? interval / 2 : 1);
}

/* fork: the child must not inherit the registry's lock held by the background thread (which
   the child does not have), nor the pool's held by another thread; a state's lock is only held
   inside the registry's (or by its owner, whose state the child frees). */
void _mi_live_fork_prepare(void) {
  mi_lock_acquire(&mi_live_registry_lock);
  mi_lock_acquire(&mi_live_pool_lock);
}
void _mi_live_fork_parent(void) {
  mi_lock_release(&mi_live_pool_lock);
  mi_lock_release(&mi_live_registry_lock);
}

/* A thread starts while the view is on: its frees and pages moved in count from now. Without
   OS memory it goes on without (and counts from its first publication). */
void _mi_live_thread_new(mi_tld_t* tld) {
  if (tld->live != NULL) return;
  mi_live_thread_t* const lt = mi_live_state_alloc(tld, true);
  if (lt != NULL) tld->live = &lt->head;
}

/* At thread exit: unregistered first (the background thread is then done with it), the slot
   becomes free (the viewer sees the thread go), and the state goes back to the pool. */
void _mi_live_thread_done(mi_tld_t* tld) {
  if (tld == NULL || tld->live == NULL) return;
  mi_live_thread_t* const lt = mi_live_of(tld);
  if (lt->head.watched) {   /* (also when the view ended meanwhile: the registry holds it) */
    mi_assert_internal(lt->head.depth == 0);
    mi_lock_acquire(&mi_live_registry_lock);   /* waits for a publication for it in progress */
    if (mi_live_watched[lt->slot] == lt) mi_live_watched[lt->slot] = NULL;
    mi_lock_release(&mi_live_registry_lock);
    lt->head.watched = false;
  }
  mi_live_doc_t* const doc = lt->doc;
  tld->live = NULL;   /* (the thread's last frees and its abandonment count nothing now) */
  mi_live_state_free(lt);
  if (!__atomic_load_n(&_mi_live_enabled, __ATOMIC_ACQUIRE) || doc == NULL) return;
  mi_live_write_begin(doc);
  doc->len = 0;
  mi_live_write_end(doc);
  mi_atomic_store_release(&doc->tid, (int64_t)0);
}
