/* SPDX-License-Identifier: MIT */
/* The sampling heap profiler's store: the stacks of sampled allocations, what they stand for,
   which sampled blocks are still live, and the dumps (docs/profiler.md). prof.c decides which
   allocation is sampled; prof-write.c writes the copies this file makes.

   Memory: at most MIMALLOC_PROFILE_MAX MiB (default 64) from the OS. 70% of it is reserved when
   the profiler starts for the call sites (mi_prof_site_t, with their stacks), touched only as
   they fill; the rest bounds two open-addressing tables, which start small and double when
   3/4 full (hashed slots touch pages at random, so a table sized for the cap from the start
   cost larson 35 MB of resident memory): the index of the sites by stack hash, and the live
   sampled blocks (address -> site, the values the sample added). When the sites or the tables'
   budget run out a sample is dropped (counted, reported in the profile, one warning). Nothing
   here calls malloc.

   Locking: one lock over the store, taken by a sample (the allocating thread), by the free of a
   block of a page with samples (page->prof_samples != 0, any thread), when such a page is
   released, and by a copy for a dump. Lock order: a subprocess' segment lock, then this one
   (a page released under the segment lock); nothing is taken while holding this one. A thread
   that holds it and re-enters (a free made by the unwinder) is let through without recording.

   Frees: a sample sets MI_PAGE_FREE_HOOK on its page and counts itself in page->prof_samples,
   so every free of a block of that page reaches _mi_free_generic and _mi_prof_samples_freed, before the
   block is pushed back (it could otherwise be handed out and sampled again before its old
   entry is gone). The owner clears the flag when the count is back to 0 (free.c). */
#include "internal/observers.h"
#include "internal/prof-hook.h"
#include "internal/prof.h"
#include "internal/api.h"   /* _mi_override_rebind_counted */
#include "prim/prim.h"

#if MI_PROF_AVAILABLE
#include <link.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>

#define MI_PROF_DEFAULT_RATE   (512 * MI_KiB)
#define MI_PROF_DEFAULT_MAX    (64)      /* MiB */
#define MI_PROF_PATH_MAX       (512)

typedef struct mi_prof_live_s {
  uintptr_t  block;      /* block start; 0: free slot */
  uint32_t   site;       /* index in sites */
  uint32_t   reserved_;
  double     objects;    /* what the sample added to its site's in-use values */
  double     bytes;
} mi_prof_live_t;

typedef struct mi_prof_store_s {
  mi_prof_site_t*  sites;
  size_t           site_count;
  size_t           site_cap;
  uint32_t*        site_index;     /* site + 1, 0: empty; site_index_mask + 1 slots */
  size_t           site_index_mask;
  mi_prof_live_t*  live;
  size_t           live_mask;      /* live_mask + 1 slots, a power of 2 */
  size_t           live_count;     /* at most 3/4 of the slots */
  uint8_t*         region;         /* the sites */
  size_t           region_size;
  size_t           table_budget;   /* bytes the two tables may take together */
  uint64_t         samples;
  uint64_t         dropped;
  bool             warned_full;
  int64_t          start_nanos;
  size_t           depth;          /* frames kept, 1 .. MI_PROF_DEPTH_MAX */
  uintptr_t        ours_lo, ours_hi;   /* our code: frames to skip at the top of a stack */
  char             path[MI_PROF_PATH_MAX];   /* MIMALLOC_PROFILE; "" if not set */
  uint32_t         dump_seq;
} mi_prof_store_t;

static mi_prof_store_t     mi_prof;
static mi_spin_t           mi_prof_lock;   /* (held for a sample's work: a spin lock, atomic.h) */
static _Atomic(uintptr_t)  mi_prof_holder;   /* thread id holding mi_prof_lock, or 0 */
static _Atomic(uintptr_t)  mi_prof_dumping;  /* a periodic dump is being written */
static _Atomic(int64_t)    mi_prof_next_dump;   /* time of the next periodic dump */
mi_msecs_t                 _mi_prof_samples_interval = 0;

static bool mi_prof_lock_enter(void) {
  const uintptr_t self = _mi_thread_id();
  if (mi_atomic_load_relaxed(&mi_prof_holder) == self) return false;   /* re-entered */
  mi_spin_acquire(&mi_prof_lock);
  mi_atomic_store_relaxed(&mi_prof_holder, self);
  return true;
}
static void mi_prof_lock_leave(void) {
  mi_atomic_store_relaxed(&mi_prof_holder, (uintptr_t)0);
  mi_spin_release(&mi_prof_lock);
}

/* ------------------------------------------------------------------------------------------
   Stacks (prof-stack.c)
------------------------------------------------------------------------------------------ */
/* Our code's range, whose frames are skipped at the top of a stack. As the shared library
   (libmimalloc*.so: a module of its own), its executable segments: every function of it, cold
   parts included. Linked into a program or another library, static.c's unit between
   _mi_static_text_begin and _mi_static_text_end: release builds let gcc move cold parts and some functions
   out of that range, so a stack may keep a frame or two of ours at its top (the writers drop
   frames named mi_* and _mi_* at the top; pprof gets a drop_frames pattern). */
void _mi_static_text_begin(void);
void _mi_static_text_end(void);
static int mi_prof_find_ours(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size; (void)arg;
  const uintptr_t self = (uintptr_t)&_mi_prof_samples_record;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0) continue;
    const uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
    const uintptr_t hi = lo + ph->p_memsz;
    if (self < lo || self >= hi) continue;
    const char* name = (info->dlpi_name == NULL ? "" : info->dlpi_name);
    const char* base = name;
    for (const char* s = name; *s != 0; s++) { if (*s == '/') base = s + 1; }
    if (strncmp(base, "libmimalloc", 11) == 0) { mi_prof.ours_lo = lo; mi_prof.ours_hi = hi; }
    return 1;
  }
  return 0;
}
static void mi_prof_init_ours(void) {
  mi_prof.ours_lo = (uintptr_t)&_mi_static_text_begin;
  mi_prof.ours_hi = (uintptr_t)&_mi_static_text_end;
  dl_iterate_phdr(&mi_prof_find_ours, NULL);
}

/* ------------------------------------------------------------------------------------------
   The tables
------------------------------------------------------------------------------------------ */
static uint64_t mi_prof_hash(const uintptr_t* pcs, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL ^ n;
  for (size_t i = 0; i < n; i++) { h ^= (uint64_t)pcs[i]; h *= 0x100000001b3ULL; h ^= h >> 29; }
  return (h == 0 ? 1 : h);
}

static size_t mi_prof_live_slot(uintptr_t block) {
  return (size_t)(((uint64_t)block >> 4) * 0x9e3779b97f4a7c15ULL >> 20) & mi_prof.live_mask;
}

/* A table of twice the slots (OS memory), its entries moved over; false if over the budget or
   out of memory. */
static bool mi_prof_site_index_grow(void) {
  const size_t old_slots = mi_prof.site_index_mask + 1, slots = 2 * old_slots;
  const size_t old_bytes = old_slots * sizeof(uint32_t), bytes = slots * sizeof(uint32_t);
  const size_t live_bytes = (mi_prof.live_mask + 1) * sizeof(mi_prof_live_t);
  if (bytes + live_bytes > mi_prof.table_budget) return false;
  bool is_zero;
  uint32_t* const index = (uint32_t*)_mi_os_alloc(bytes, &is_zero);
  if (index == NULL) return false;
  if (!is_zero) memset(index, 0, bytes);
  for (size_t s = 0; s < mi_prof.site_count; s++) {
    size_t i = (size_t)mi_prof.sites[s].hash & (slots - 1);
    while (index[i] != 0) i = (i + 1) & (slots - 1);
    index[i] = (uint32_t)(s + 1);
  }
  _mi_os_free(mi_prof.site_index, old_bytes);
  mi_prof.site_index = index;
  mi_prof.site_index_mask = slots - 1;
  return true;
}

/* the site of this stack, added if new; SIZE_MAX when full */
static size_t mi_prof_site_find_add(const uintptr_t* pcs, size_t n) {
  const uint64_t h = mi_prof_hash(pcs, n);
  for (size_t i = (size_t)h & mi_prof.site_index_mask; ; i = (i + 1) & mi_prof.site_index_mask) {
    const uint32_t x = mi_prof.site_index[i];
    if (x == 0) {
      if (mi_prof.site_count >= mi_prof.site_cap) return SIZE_MAX;
      if ((mi_prof.site_count + 1) * 4 > (mi_prof.site_index_mask + 1) * 3) {
        if (!mi_prof_site_index_grow()) return SIZE_MAX;
        return mi_prof_site_find_add(pcs, n);   /* (once: the table has room now) */
      }
      const size_t s = mi_prof.site_count++;
      mi_prof_site_t* const site = &mi_prof.sites[s];
      memset(site, 0, sizeof(*site) - sizeof(site->pcs));
      site->hash = h;
      site->depth = (uint32_t)n;
      memcpy(site->pcs, pcs, n * sizeof(uintptr_t));
      mi_prof.site_index[i] = (uint32_t)(s + 1);
      return s;
    }
    const mi_prof_site_t* const site = &mi_prof.sites[x - 1];
    if (site->hash == h && site->depth == n && memcmp(site->pcs, pcs, n * sizeof(uintptr_t)) == 0) return x - 1;
  }
}

/* the live table with twice the slots; false if over the budget or out of memory */
static bool mi_prof_live_grow(void) {
  const size_t old_slots = mi_prof.live_mask + 1, slots = 2 * old_slots;
  const size_t old_bytes = old_slots * sizeof(mi_prof_live_t), bytes = slots * sizeof(mi_prof_live_t);
  if (bytes + (mi_prof.site_index_mask + 1) * sizeof(uint32_t) > mi_prof.table_budget) return false;
  bool is_zero;
  mi_prof_live_t* const live = (mi_prof_live_t*)_mi_os_alloc(bytes, &is_zero);
  if (live == NULL) return false;
  if (!is_zero) memset(live, 0, bytes);
  mi_prof_live_t* const old = mi_prof.live;
  mi_prof.live = live;
  mi_prof.live_mask = slots - 1;
  for (size_t j = 0; j < old_slots; j++) {
    if (old[j].block == 0) continue;
    size_t i = mi_prof_live_slot(old[j].block);
    while (live[i].block != 0) i = (i + 1) & mi_prof.live_mask;
    live[i] = old[j];
  }
  _mi_os_free(old, old_bytes);
  return true;
}

/* remove slot i, shifting back the entries of its probe run (no tombstones) */
static void mi_prof_live_remove_at(size_t i) {
  for (size_t j = (i + 1) & mi_prof.live_mask; mi_prof.live[j].block != 0; j = (j + 1) & mi_prof.live_mask) {
    const size_t home = mi_prof_live_slot(mi_prof.live[j].block);
    /* j's entry may move to i if its home is not cyclically in (i, j] */
    if (((j - home) & mi_prof.live_mask) >= ((j - i) & mi_prof.live_mask)) {
      mi_prof.live[i] = mi_prof.live[j];
      i = j;
    }
  }
  mi_prof.live[i].block = 0;
  mi_prof.live_count--;
}

/* the live entry's values leave its site */
static void mi_prof_live_drop(size_t i) {
  const mi_prof_live_t* const e = &mi_prof.live[i];
  mi_prof_site_t* const site = &mi_prof.sites[e->site];
  site->inuse_objects -= e->objects;
  site->inuse_bytes -= e->bytes;
  if (site->inuse_bytes < 0.5) { site->inuse_bytes = 0; site->inuse_objects = 0; }   /* rounding */
  mi_prof_live_remove_at(i);
}

static void mi_prof_full_warning(void) {
  if (mi_prof.warned_full) return;
  mi_prof.warned_full = true;
  _mi_warning_message("profiler: its store is full (%zu call sites, %zu live samples; MIMALLOC_PROFILE_MAX=%zu MiB): further samples are dropped and counted in the profile\n",
    mi_prof.site_count, mi_prof.live_count, mi_prof.region_size / MI_MiB);
}

/* ------------------------------------------------------------------------------------------
   Samples and frees
------------------------------------------------------------------------------------------ */
/* page->prof_samples: the count of the page's live samples in the low 16 bits (a page has
   fewer blocks), a 16-bit filter of their addresses in the high ones (a bit per sampled block,
   cleared when the count is back to 0): a free whose bit is clear is not of a sampled block
   and does not take the lock. */
#define MI_PROF_COUNT_MASK  0xFFFFu
static uint32_t mi_prof_filter_bit(uintptr_t block) {
  return (uint32_t)1 << (16 + (unsigned)((((uint64_t)block >> 4) * 0x9e3779b97f4a7c15ULL) >> 60));
}

static uintptr_t mi_prof_block_start(const mi_page_t* page, const void* p) {
  const uintptr_t start = (uintptr_t)mi_page_start(page);
  const size_t diff = (uintptr_t)p - start;
  return start + (diff - diff % page->block_size);
}

void _mi_prof_samples_record(void* p, size_t size, size_t counted, const uintptr_t* start) {
  if (p == NULL || mi_prof_rate() == 0) return;
  const double prob = _mi_prof_probability((double)counted / (double)mi_prof_rate());
  const double objects = 1.0 / prob;
  const double bytes = (double)size / prob;
  mi_page_t* const page = _mi_ptr_page(p);
  const uintptr_t block = mi_prof_block_start(page, p);
  unsigned long long loader[2];
  _mi_prof_stack_loader_generation(loader);   /* (not under the lock: prof-stack.c) */
  if (!mi_prof_lock_enter()) return;
  uintptr_t pcs[MI_PROF_DEPTH_MAX];
  const size_t n = _mi_prof_stack_backtrace(pcs, mi_prof.depth, mi_prof.ours_lo, mi_prof.ours_hi, loader, start);   /* (its cache is under the lock) */
  if (n == 0) { mi_prof_lock_leave(); return; }
  mi_prof.samples++;
  const size_t s = mi_prof_site_find_add(pcs, n);
  if (s == SIZE_MAX || (mi_prof.live_count + 1 > (mi_prof.live_mask + 1) / 4 * 3 && !mi_prof_live_grow())) {
    mi_prof.dropped++;
    mi_prof_full_warning();
    mi_prof_lock_leave();
    return;
  }
  mi_prof_site_t* const site = &mi_prof.sites[s];
  site->alloc_objects += objects;
  site->alloc_bytes += bytes;
  size_t i = mi_prof_live_slot(block);
  while (mi_prof.live[i].block != 0 && mi_prof.live[i].block != block) i = (i + 1) & mi_prof.live_mask;
  if (mi_prof.live[i].block == block) {   /* a block whose free we missed (a page released unseen): stale */
    mi_prof.sites[mi_prof.live[i].site].inuse_objects -= mi_prof.live[i].objects;
    mi_prof.sites[mi_prof.live[i].site].inuse_bytes -= mi_prof.live[i].bytes;
  }
  else {
    mi_prof.live_count++;
    mi_atomic_store_relaxed(&page->prof_samples, (mi_atomic_load_relaxed(&page->prof_samples) + 1) | mi_prof_filter_bit(block));
  }
  mi_prof.live[i] = (mi_prof_live_t){ block, (uint32_t)s, 0, objects, bytes };
  site->inuse_objects += objects;
  site->inuse_bytes += bytes;
  mi_prof_lock_leave();
  if ((mi_page_flags(page) & MI_PAGE_FREE_HOOK) == 0) mi_page_flag_set(page, MI_PAGE_FREE_HOOK, true);   /* the owner: we allocated from it */
}

void _mi_prof_samples_freed(mi_page_t* page, mi_block_t* block) {
  if ((mi_atomic_load_relaxed(&page->prof_samples) & mi_prof_filter_bit((uintptr_t)block)) == 0) return;   /* not sampled */
  if (!mi_prof_lock_enter()) return;
  if (mi_prof.live != NULL) {
    size_t i = mi_prof_live_slot((uintptr_t)block);
    while (mi_prof.live[i].block != 0 && mi_prof.live[i].block != (uintptr_t)block) i = (i + 1) & mi_prof.live_mask;
    if (mi_prof.live[i].block == (uintptr_t)block) {
      mi_prof_live_drop(i);
      const uint32_t x = mi_atomic_load_relaxed(&page->prof_samples);
      const uint32_t count = (x & MI_PROF_COUNT_MASK);
      if (count > 0) mi_atomic_store_relaxed(&page->prof_samples, (count == 1 ? 0 : x - 1));
    }
  }
  mi_prof_lock_leave();
}

/* the page goes back to its segment without frees of its blocks (mi_heap_destroy) */
void _mi_prof_samples_page_gone(mi_page_t* page) {
  if (!mi_prof_lock_enter()) return;
  if (mi_prof.live != NULL) {
    const uintptr_t lo = (uintptr_t)mi_page_start(page);
    const uintptr_t hi = lo + (size_t)page->reserved * page->block_size;
    for (size_t i = 0; i <= mi_prof.live_mask; ) {
      const uintptr_t b = mi_prof.live[i].block;
      if (b != 0 && b >= lo && b < hi) mi_prof_live_drop(i);   /* (an entry may have moved into i) */
      else i++;
    }
  }
  mi_atomic_store_relaxed(&page->prof_samples, (uint32_t)0);
  mi_prof_lock_leave();
}

/* ------------------------------------------------------------------------------------------
   Start
------------------------------------------------------------------------------------------ */
static int64_t mi_prof_now_nanos(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define MI_PROF_SITE_INDEX_MIN  1024    /* slots of the tables at the start */
#define MI_PROF_LIVE_MIN        4096

/* The store: 70% of max_mib for the sites (reserved, touched as they fill), the rest the
   tables' budget. */
static bool mi_prof_store_init(size_t max_mib, size_t depth) {
  if (max_mib < 1) max_mib = 1;
  const size_t size = max_mib * MI_MiB;
  const size_t sites_size = size / 10 * 7;
  bool region_zero = false, index_zero = false, live_zero = false;
  uint8_t* const region = (uint8_t*)_mi_os_alloc(sites_size, &region_zero);   /* (a site is cleared as it is added) */
  uint32_t* const index = (uint32_t*)_mi_os_alloc(MI_PROF_SITE_INDEX_MIN * sizeof(uint32_t), &index_zero);
  mi_prof_live_t* const live = (mi_prof_live_t*)_mi_os_alloc(MI_PROF_LIVE_MIN * sizeof(mi_prof_live_t), &live_zero);
  if (region == NULL || index == NULL || live == NULL) {
    if (region != NULL) _mi_os_free(region, sites_size);
    if (index != NULL) _mi_os_free(index, MI_PROF_SITE_INDEX_MIN * sizeof(uint32_t));
    if (live != NULL) _mi_os_free(live, MI_PROF_LIVE_MIN * sizeof(mi_prof_live_t));
    return false;
  }
  if (!index_zero) memset(index, 0, MI_PROF_SITE_INDEX_MIN * sizeof(uint32_t));
  if (!live_zero) memset(live, 0, MI_PROF_LIVE_MIN * sizeof(mi_prof_live_t));   /* (128 KiB: fresh OS memory is zero) */
  mi_prof.region = region;
  mi_prof.region_size = size;
  mi_prof.table_budget = size - sites_size;
  mi_prof.sites = (mi_prof_site_t*)region;
  mi_prof.site_cap = sites_size / sizeof(mi_prof_site_t);
  mi_prof.site_index = index;
  mi_prof.site_index_mask = MI_PROF_SITE_INDEX_MIN - 1;
  mi_prof.live = live;
  mi_prof.live_mask = MI_PROF_LIVE_MIN - 1;
  mi_prof.depth = (depth < 1 ? 1 : (depth > MI_PROF_DEPTH_MAX ? MI_PROF_DEPTH_MAX : depth));
  mi_prof.start_nanos = mi_prof_now_nanos(CLOCK_MONOTONIC);
  mi_prof_init_ours();
  return true;
}

static bool mi_prof_start(size_t rate, size_t max_mib, size_t depth) {
  static _Atomic(uintptr_t) starting;
  uintptr_t expected = 0;
  if (mi_prof_rate() != 0) return true;   /* already on (its rate stays) */
  if (!mi_atomic_cas_strong_acq_rel(&starting, &expected, (uintptr_t)1)) {
    while (mi_atomic_load_acquire(&starting) == 1) mi_atomic_yield();
    return (mi_prof_rate() != 0);
  }
  bool ok = mi_prof_store_init(max_mib, depth);
  if (ok) {
    __atomic_store_n(&_mi_prof_rate, (rate == 0 ? MI_PROF_DEFAULT_RATE : rate), __ATOMIC_RELEASE);
    mi_heap_t* heap = mi_prim_get_default_heap();
    if (mi_heap_is_initialized(heap)) _mi_prof_thread_start(heap->tld);   /* other threads: at their next slow path */
  }
  else _mi_warning_message("profiler: no memory for its store (%zu MiB)\n", max_mib);
  mi_atomic_store_release(&starting, ok ? (uintptr_t)2 : (uintptr_t)0);
  return ok;
}

static size_t mi_prof_env_size(const char* name, size_t def) {
  char buf[32];
  if (!_mi_prim_getenv(name, buf, sizeof(buf)) || buf[0] == 0) return def;
  size_t x = 0;
  for (const char* s = buf; *s >= '0' && *s <= '9'; s++) x = x * 10 + (size_t)(*s - '0');
  return x;
}

void _mi_prof_samples_init_env(void) {
  char path[MI_PROF_PATH_MAX];
  bool has_path = _mi_prim_getenv("MIMALLOC_PROFILE", path, sizeof(path)) && path[0] != 0;
#if defined(MI_PROF_BENCH_PATH)
  /* benchmark builds only (docs/profiler.md, "Cost"): on without the variable, which bench.py
     removes from the environment of the programs it compares */
  if (!has_path) { memcpy(path, MI_PROF_BENCH_PATH, sizeof(MI_PROF_BENCH_PATH)); has_path = true; }
#endif
  if (!has_path) return;
  _mi_prof_stack_unwinder_load(false);   /* (maybe inside an allocation: the library's constructor loads it) */
  memcpy(mi_prof.path, path, sizeof(mi_prof.path));   /* (NUL-terminated by getenv) */
  const size_t rate = mi_prof_env_size("MIMALLOC_PROFILE_RATE", MI_PROF_DEFAULT_RATE);
  const size_t max_mib = mi_prof_env_size("MIMALLOC_PROFILE_MAX", MI_PROF_DEFAULT_MAX);
  const size_t depth = mi_prof_env_size("MIMALLOC_PROFILE_DEPTH", MI_PROF_DEPTH_MAX);
  const size_t interval = mi_prof_env_size("MIMALLOC_PROFILE_INTERVAL", 0);
  if (!mi_prof_start(rate, max_mib, depth)) return;
#if MI_PROF_ENTRIES
  const size_t rebound = _mi_override_rebind_counted();   /* malloc, calloc, new: counted (prof.c, override.c) */
#else
  const size_t rebound = 0;   /* (no counted entry points in this build: no override.c) */
#endif
  if (interval > 0) {
    _mi_prof_samples_interval = (mi_msecs_t)interval * 1000;
    mi_atomic_store_relaxed(&mi_prof_next_dump, (int64_t)(_mi_prim_clock_now() + _mi_prof_samples_interval));
  }
  _mi_verbose_message("profiler: on, one sample per %zu bytes on average, writing %s; %zu call slots of malloc, calloc and new counted\n", mi_prof_rate(), mi_prof.path, rebound);
}

/* ------------------------------------------------------------------------------------------
   Dumps
------------------------------------------------------------------------------------------ */
/* path with %p replaced by the process id and `suffix` appended; false if it does not fit */
static bool mi_prof_path(char* out, size_t size, const char* path, const char* suffix) {
  size_t n = 0;
  for (const char* s = path; *s != 0; s++) {
    if (s[0] == '%' && s[1] == 'p') {
      char pid[24];
      _mi_snprintf(pid, sizeof(pid), "%ld", _mi_prim_process_id());
      for (const char* q = pid; *q != 0; q++) { if (n + 1 >= size) return false; out[n++] = *q; }
      s++;
    }
    else { if (n + 1 >= size) return false; out[n++] = *s; }
  }
  for (const char* q = suffix; *q != 0; q++) { if (n + 1 >= size) return false; out[n++] = *q; }
  out[n] = 0;
  return true;
}

typedef enum mi_prof_format_e { MI_PROF_PPROF, MI_PROF_TEXT, MI_PROF_FOLDED_INUSE, MI_PROF_FOLDED_ALLOC } mi_prof_format_t;

static bool mi_prof_write_file(const char* base, const char* suffix, const mi_prof_profile_t* prof, mi_prof_format_t fmt) {
  char path[MI_PROF_PATH_MAX + 64];
  if (!mi_prof_path(path, sizeof(path), base, suffix)) return false;
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) { _mi_warning_message("profiler: cannot create %s\n", path); return false; }
  bool ok;
  switch (fmt) {
    case MI_PROF_PPROF: ok = _mi_prof_write_pprof(fd, prof); break;
    case MI_PROF_TEXT:  ok = _mi_prof_write_text(fd, prof); break;
    case MI_PROF_FOLDED_INUSE: ok = _mi_prof_write_folded(fd, prof, true); break;
    default: ok = _mi_prof_write_folded(fd, prof, false); break;
  }
  if (close(fd) != 0) ok = false;
  if (!ok) _mi_warning_message("profiler: could not write %s\n", path);
  return ok;
}

/* A copy of the store (OS memory, freed by the caller) and the four files of `base`. */
static bool mi_prof_dump(const char* base, bool at_exit) {
  if (mi_prof_rate() == 0 || mi_prof.sites == NULL) return false;
  if (!mi_prof_lock_enter()) return false;
  const size_t count = mi_prof.site_count;
  const size_t copy_size = (count == 0 ? sizeof(mi_prof_site_t) : count * sizeof(mi_prof_site_t));
  bool is_zero;
  mi_prof_site_t* const copy = (mi_prof_site_t*)_mi_os_alloc(copy_size, &is_zero);
  if (copy != NULL) memcpy(copy, mi_prof.sites, count * sizeof(mi_prof_site_t));
  mi_prof_profile_t prof = {
    copy, count, mi_prof_rate(), mi_prof_now_nanos(CLOCK_REALTIME),
    mi_prof_now_nanos(CLOCK_MONOTONIC) - mi_prof.start_nanos, mi_prof.samples, mi_prof.dropped, at_exit
  };
  mi_prof_lock_leave();
  if (copy == NULL) return false;
  bool ok = mi_prof_write_file(base, ".pb", &prof, MI_PROF_PPROF);
  ok = mi_prof_write_file(base, ".txt", &prof, MI_PROF_TEXT) && ok;
  ok = mi_prof_write_file(base, ".inuse.folded", &prof, MI_PROF_FOLDED_INUSE) && ok;
  ok = mi_prof_write_file(base, ".alloc.folded", &prof, MI_PROF_FOLDED_ALLOC) && ok;
  _mi_os_free(copy, copy_size);
  return ok;
}

/* From the allocation slow path's periodic work: one thread writes <path>.<seq>.* when due. */
void _mi_prof_samples_periodic(void) {
  const mi_msecs_t now = _mi_prim_clock_now();
  if (now < mi_atomic_load_relaxed(&mi_prof_next_dump)) return;
  uintptr_t expected = 0;
  if (!mi_atomic_cas_strong_acq_rel(&mi_prof_dumping, &expected, (uintptr_t)1)) return;
  if (now >= mi_atomic_load_relaxed(&mi_prof_next_dump)) {
    mi_atomic_store_relaxed(&mi_prof_next_dump, (int64_t)(now + _mi_prof_samples_interval));
    char base[MI_PROF_PATH_MAX + 16];
    _mi_snprintf(base, sizeof(base), "%s.%04u", mi_prof.path, (unsigned)++mi_prof.dump_seq);
    mi_prof_dump(base, false);
  }
  mi_atomic_store_release(&mi_prof_dumping, (uintptr_t)0);
}

void _mi_prof_samples_process_done(void) {
  if (mi_prof_rate() == 0 || mi_prof.path[0] == 0) return;
  if (mi_prof_dump(mi_prof.path, true)) {
    char path[MI_PROF_PATH_MAX + 16];
    if (mi_prof_path(path, sizeof(path), mi_prof.path, ".pb")) _mi_verbose_message("profiler: wrote %s (and .txt, .inuse.folded, .alloc.folded)\n", path);
  }
}

/* The live view's part (live.c appends it to the process document): the top `count` sites
   by bytes in use, their figures and return addresses (the viewer names them), as the JSON
   member "profile". Nothing when the profiler is off. */
#define MI_PROF_JSON_FRAMES  16
void _mi_prof_samples_json(mi_json_t* json, size_t count) {
  if (mi_prof_rate() == 0 || mi_prof.sites == NULL || count == 0) return;
  if (count > 32) count = 32;
  if (!mi_prof_lock_enter()) return;
  size_t top[32];
  size_t n = 0;
  double inuse_total = 0, alloc_total = 0;
  for (size_t i = 0; i < mi_prof.site_count; i++) {   /* insertion into the top list */
    const double b = mi_prof.sites[i].inuse_bytes;
    inuse_total += b;
    alloc_total += mi_prof.sites[i].alloc_bytes;
    if (b < 0.5 || (n == count && b <= mi_prof.sites[top[n - 1]].inuse_bytes)) continue;
    size_t j = (n < count ? n++ : n - 1);
    while (j > 0 && mi_prof.sites[top[j - 1]].inuse_bytes < b) { top[j] = top[j - 1]; j--; }
    top[j] = i;
  }
  _mi_stats_print_json_add(json, ",\n  \"profile\": { \"rate\": %zu, \"samples\": %llu, \"dropped\": %llu, \"sites_total\": %zu,",
               mi_prof_rate(), (unsigned long long)mi_prof.samples, (unsigned long long)mi_prof.dropped, mi_prof.site_count);
  _mi_stats_print_json_add(json, " \"inuse_bytes\": %lld, \"alloc_bytes\": %lld, \"sites\": [",
               (long long)(inuse_total + 0.5), (long long)(alloc_total + 0.5));
  for (size_t k = 0; k < n; k++) {
    const mi_prof_site_t* const site = &mi_prof.sites[top[k]];
    _mi_stats_print_json_add(json, "%s\n    { \"inuse_bytes\": %lld, \"inuse_objects\": %lld,", (k == 0 ? "" : ","),
                 (long long)(site->inuse_bytes + 0.5), (long long)(site->inuse_objects + 0.5));
    _mi_stats_print_json_add(json, " \"alloc_bytes\": %lld, \"alloc_objects\": %lld, \"pcs\": [",
                 (long long)(site->alloc_bytes + 0.5), (long long)(site->alloc_objects + 0.5));
    const size_t frames = (site->depth < MI_PROF_JSON_FRAMES ? site->depth : MI_PROF_JSON_FRAMES);
    for (size_t f = 0; f < frames; f++) _mi_stats_print_json_add(json, "%s\"0x%zx\"", (f == 0 ? "" : ", "), (size_t)site->pcs[f]);
    _mi_stats_print_json_add(json, "] }");
  }
  _mi_stats_print_json_add(json, "\n  ] }");
  mi_prof_lock_leave();
}

/* fork: the child must not inherit the lock held by a thread it does not have */
static bool mi_prof_fork_locked;   /* (the forking thread's, between prepare and parent or child) */
void _mi_prof_samples_fork_prepare(void) {
  mi_prof_fork_locked = (mi_prof_rate() != 0);
  if (!mi_prof_fork_locked) return;
  _mi_prof_stack_loader_fork_prepare();   /* (first: a thread leaving the loader takes the lock next) */
  mi_spin_acquire(&mi_prof_lock);
}
void _mi_prof_samples_fork_parent(void) { if (mi_prof_fork_locked) { mi_spin_release(&mi_prof_lock); _mi_prof_stack_loader_fork_parent(); } }
void _mi_prof_samples_fork_child(void)  { if (mi_prof_fork_locked) { mi_spin_release(&mi_prof_lock); _mi_prof_stack_loader_fork_child(); } }

#else  /* !MI_PROF_AVAILABLE */
mi_msecs_t _mi_prof_samples_interval = 0;
void _mi_prof_samples_json(mi_json_t* json, size_t count) { (void)json; (void)count; }
void _mi_prof_samples_record(void* p, size_t size, size_t counted, const uintptr_t* start) { (void)p; (void)size; (void)counted; (void)start; }
void _mi_prof_samples_freed(mi_page_t* page, mi_block_t* block) { (void)page; (void)block; }
void _mi_prof_samples_page_gone(mi_page_t* page) { (void)page; }
void _mi_prof_samples_periodic(void) { }
void _mi_prof_samples_process_done(void) { }
void _mi_prof_samples_fork_prepare(void) { }
void _mi_prof_samples_fork_parent(void) { }
void _mi_prof_samples_fork_child(void) { }
void _mi_prof_samples_init_env(void) {
  char path[8];
  if (_mi_prim_getenv("MIMALLOC_PROFILE", path, sizeof(path)) && path[0] != 0) {
    _mi_warning_message("profiler: MIMALLOC_PROFILE is ignored: the profiler is in release builds for Linux with glibc only (not secure, debug or tracking builds)\n");
  }
}
#endif

/* ------------------------------------------------------------------------------------------
   Public API
------------------------------------------------------------------------------------------ */
bool mi_profile_start(size_t rate) mi_attr_noexcept {
#if MI_PROF_AVAILABLE
  mi_process_init();
  _mi_prof_stack_unwinder_load(true);   /* (before the profiler is on: the loader's allocations are not sampled) */
  return mi_prof_start(rate, mi_prof_env_size("MIMALLOC_PROFILE_MAX", MI_PROF_DEFAULT_MAX),
                       mi_prof_env_size("MIMALLOC_PROFILE_DEPTH", MI_PROF_DEPTH_MAX));
#else
  (void)rate;
  return false;
#endif
}

bool mi_profile_dump(const char* path) mi_attr_noexcept {
#if MI_PROF_AVAILABLE
  if (path == NULL || path[0] == 0) return false;
  return mi_prof_dump(path, false);
#else
  (void)path;
  return false;
#endif
}
