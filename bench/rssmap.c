/* SPDX-License-Identifier: MIT */
/* rssmap: where a running program's resident memory sits inside our segments.
 *
 * A contributor's diagnostic, not part of the library: a shared object preloaded after ours
 * (bench/rssmap.sh builds and runs it). On SIGUSR1, and at exit when RSSMAP_AT_EXIT is set, it
 * walks every large anonymous mapping (our arenas: 256 MiB and more), asks the kernel which OS
 * pages are resident (mincore), reads the segment headers found there (this source tree's
 * internal types, so it must be built from the same tree as the library) and prints a line:
 *   - resident memory in pages in use, beside what those pages hold (used blocks) and what
 *     they were extended to (capacity): the difference is page-level fragmentation;
 *   - resident memory in unused slots, by state (waiting for their purge, purged, other);
 *   - resident memory in freed segments (arena blocks waiting for their purge);
 *   - blocks other threads freed that the owner has not collected yet (thread_free lists);
 * then one line per segment kind (small, medium, large): pages in use, resident, capacity,
 * live blocks and unused slots waiting for their purge;
 * and with RSSMAP_SEGMENTS=1 one line per medium or large segment showing each slot (block size, blocks
 * used/reserved, resident KiB). With RSSMAP_PEAK=1 (and RSSMAP_AT_EXIT) a thread reads the RSS
 * every millisecond and takes a report at each new highest value; the exit prints the last one
 * first: the memory at the moment a peak RSS figure measures. It reads the allocator's data
 * without locks while the program runs: figures are a snapshot, good to a few pages. No report
 * allocates or locks (input with read(2), output with write(2)): the signal may stop the
 * program inside the allocator; the figures are for finding mechanisms, the benchmarks judge
 * the results. */
#include "internal/internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define OS_PAGE 4096
#define MIN_MAPPING ((size_t)256 << 20)

typedef struct rss_acc_s {
  size_t total, freed_segments, huge;
  size_t inuse_resident, inuse_used, inuse_capacity, inuse_tfree;
  /* per segment kind (small, medium, large): pages in use, their resident memory, capacity,
     live blocks (used less those on thread_free) and unused slots waiting for their purge */
  size_t kind_pages[4], kind_resident[4], kind_capacity[4], kind_live[4], kind_pending[4];
  size_t slot_pending, slot_purged, slot_other;
  size_t abandoned_resident;   /* (within pages in use: those of ended threads) */
  size_t segments[4];
} rss_acc_t;

static unsigned char rss_vec[MI_SEGMENT_SIZE / OS_PAGE];

/* Where a report goes: stderr, or a buffer (the peak's report, kept until the exit). */
typedef struct rss_out_s {
  char* buf;   /* NULL: stderr */
  size_t cap, len;
} rss_out_t;

static void rss_write(rss_out_t* out, const char* s, int len) {
  if (len <= 0) return;
  if (out->buf == NULL) { (void)!write(2, s, (size_t)len); return; }
  const size_t n = ((size_t)len < out->cap - out->len ? (size_t)len : out->cap - out->len);
  memcpy(out->buf + out->len, s, n);
  out->len += n;
}

static size_t rss_count(size_t first, size_t n) {
  size_t r = 0;
  for (size_t i = first; i < first + n; i++) r += rss_vec[i] & 1;
  return r * OS_PAGE;
}

static void rss_segment(mi_segment_t* seg, rss_acc_t* acc, bool detail, rss_out_t* out) {
  if (mincore(seg, MI_SEGMENT_SIZE, rss_vec) != 0) return;
  const size_t resident = rss_count(0, MI_SEGMENT_SIZE / OS_PAGE);
  if (resident == 0) return;
  acc->total += resident;
  if (seg->cookie == 0 || seg->page_kind > MI_PAGE_HUGE || seg->segment_size != MI_SEGMENT_SIZE) {
    /* a freed segment (cookie cleared), or the tail of a huge one */
    if (seg->cookie != 0 && seg->page_kind == MI_PAGE_HUGE) acc->huge += resident;
    else acc->freed_segments += resident;
    return;
  }
  acc->segments[seg->page_kind]++;
  const size_t slot_pages = ((size_t)1 << seg->page_shift) / OS_PAGE;
  char line[1024];
  int len = 0;
  if (detail && (seg->page_kind == MI_PAGE_MEDIUM || seg->page_kind == MI_PAGE_LARGE)) {
    len = snprintf(line, sizeof line, "rssmap: %s segment %p%s:", seg->page_kind == MI_PAGE_MEDIUM ? "medium" : "large", (void*)seg, seg->used > 0 && seg->used == seg->abandoned ? " (all pages abandoned)" : "");
  }
  for (size_t i = 0; i < seg->capacity; i++) {
    const mi_page_t* page = &seg->pages[i];
    const size_t r = rss_count(i * slot_pages, slot_pages);
    if (page->segment_in_use || page->span_tail) {
      acc->inuse_resident += r;
      if (page->segment_in_use) {
        acc->inuse_used += (size_t)page->used * page->block_size;
        acc->inuse_capacity += (size_t)page->capacity * page->block_size;
        /* blocks other threads freed, not yet collected by the owner: in `used` still (read
           without synchronisation, a bounded walk) */
        size_t tfree = 0;
        for (const mi_block_t* b = mi_tf_block(mi_atomic_load_relaxed(&((mi_page_t*)page)->xthread_free));
             b != NULL && tfree < page->used; b = mi_block_next(page, b)) tfree++;
        acc->inuse_tfree += tfree * page->block_size;
        const int k = seg->page_kind;
        acc->kind_pages[k]++;
        acc->kind_resident[k] += r;
        acc->kind_capacity[k] += (size_t)page->capacity * page->block_size;
        acc->kind_live[k] += (size_t)(page->used - tfree) * page->block_size;
        if (page->abandoned_listed) acc->abandoned_resident += r;
      }
    }
    else if (page->purge_pending) { acc->slot_pending += r; acc->kind_pending[seg->page_kind] += r; }
    else if (!page->is_committed) acc->slot_purged += r;
    else acc->slot_other += r;
    if (len > 0 && len < (int)sizeof line - 64) {
      if (page->segment_in_use) len += snprintf(line + len, sizeof line - (size_t)len, " [%zuK %u/%u r%zuK%s]", page->block_size / 1024, page->used, page->reserved, r / 1024, page->abandoned_listed ? " abandoned" : "");
      else if (page->span_tail) len += snprintf(line + len, sizeof line - (size_t)len, " [span r%zuK]", r / 1024);
      else len += snprintf(line + len, sizeof line - (size_t)len, " [free%s r%zuK]", page->purge_pending ? "/queued" : !page->is_committed ? "/purged" : "", r / 1024);
    }
  }
  if (len > 0) {
    if (len > (int)sizeof line - 2) len = (int)sizeof line - 2;
    line[len++] = '\n';
    rss_write(out, line, len);
  }
}

static bool rss_detail;   /* RSSMAP_SEGMENTS was set */

static void rss_report(const char* when, rss_out_t* out) {
  rss_acc_t acc;
  memset(&acc, 0, sizeof acc);
  const bool detail = rss_detail;
  /* read with read(2) into a static buffer: stdio would allocate, and the signal may have
     stopped the program inside the allocator (with a lock held: fopen hung limit-drift) */
  static char buf[1 << 16];   /* (one report at a time: rss_lock) */
  const int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return;
  size_t have = 0;
  for (;;) {
    const ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
    if (n <= 0) break;
    have += (size_t)n;
    buf[have] = 0;
    char* line = buf;
    char* eol;
    while ((eol = strchr(line, '\n')) != NULL) {
      *eol = 0;
      unsigned long a, b;
      if (sscanf(line, "%lx-%lx", &a, &b) == 2 && b - a >= MIN_MAPPING) {
        for (uintptr_t s = _mi_align_up(a, MI_SEGMENT_SIZE); s + MI_SEGMENT_SIZE <= b; s += MI_SEGMENT_SIZE) {
          rss_segment((mi_segment_t*)s, &acc, detail, out);
        }
      }
      line = eol + 1;
    }
    have = (size_t)(buf + have - line);   /* a partial line waits for the next read */
    memmove(buf, line, have);
  }
  close(fd);
  char line[1024];
  const bool kib = (getenv("RSSMAP_KIB") != NULL);   /* KiB for small programs */
  const size_t M = (kib ? 1024 : 1024 * 1024);
  const char* const u = (kib ? "KiB" : "MiB");
  int len = snprintf(line, sizeof line,
    "rssmap (%s): %zu %s resident in arenas: pages in use %zu (their used blocks %zu, "
    "capacity %zu; on thread_free lists %zu; of ended threads %zu); unused slots waiting for purge %zu, purged %zu, "
    "other %zu; freed segments %zu; huge %zu; segments small %zu, medium %zu, large %zu, huge %zu\n",
    when, acc.total / M, u, acc.inuse_resident / M, acc.inuse_used / M, acc.inuse_capacity / M, acc.inuse_tfree / M, acc.abandoned_resident / M,
    acc.slot_pending / M, acc.slot_purged / M, acc.slot_other / M,
    acc.freed_segments / M, acc.huge / M, acc.segments[0], acc.segments[1], acc.segments[2], acc.segments[3]);
  rss_write(out, line, len);
  static const char* const kinds[3] = { "small", "medium", "large" };
  for (int k = 0; k < 3; k++) {
    len = snprintf(line, sizeof line, "rssmap   in %s segments: %zu pages in use, resident %zu %s, capacity %zu, live %zu; unused slots waiting for purge %zu\n",
                   kinds[k], acc.kind_pages[k], acc.kind_resident[k] / M, u, acc.kind_capacity[k] / M, acc.kind_live[k] / M, acc.kind_pending[k] / M);
    rss_write(out, line, len);
  }
}

/* One report at a time (the static buffers): the signal handler only tries, so a signal that
   lands while the peak thread reports is skipped, never deadlocks. */
static atomic_flag rss_lock = ATOMIC_FLAG_INIT;

static void rss_on_signal(int sig) {
  (void)sig;
  if (atomic_flag_test_and_set(&rss_lock)) return;
  rss_out_t out = { NULL, 0, 0 };
  rss_report("signal", &out);
  atomic_flag_clear(&rss_lock);
}

/* RSSMAP_PEAK: a thread reads the process' RSS every millisecond and, at each new highest
   value, takes a report into a buffer; the exit prints the last one: where the memory was at the
   moment that peak RSS figures measure. */
static char rss_peak_buf[1 << 16];
static rss_out_t rss_peak_out = { rss_peak_buf, sizeof rss_peak_buf, 0 };   /* (read at exit, after the join) */
static size_t rss_peak_rss;
static atomic_bool rss_peak_stop;
static pthread_t rss_peak_thread;
static bool rss_peak_on;

static size_t rss_current(void) {
  char b[128];
  const int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, b, sizeof b - 1);
  close(fd);
  if (n <= 0) return 0;
  b[n] = 0;
  unsigned long size, resident;
  return (sscanf(b, "%lu %lu", &size, &resident) == 2 ? resident * OS_PAGE : 0);
}

static void* rss_peak_run(void* arg) {
  (void)arg;
  const struct timespec ms = { 0, 1000000 };
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!atomic_load(&rss_peak_stop)) {
    const size_t rss = rss_current();
    if (rss > rss_peak_rss && !atomic_flag_test_and_set(&rss_lock)) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      const long elapsed = (long)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
      char when[64];
      snprintf(when, sizeof when, "peak: RSS %zu KiB at %ld ms", rss / 1024, elapsed);
      rss_peak_out.len = 0;   /* (the report of the previous peak goes) */
      rss_report(when, &rss_peak_out);
      rss_peak_rss = rss;
      atomic_flag_clear(&rss_lock);
    }
    nanosleep(&ms, NULL);
  }
  return NULL;
}

static void rss_at_exit(void) {
  if (rss_peak_on) {
    atomic_store(&rss_peak_stop, true);
    pthread_join(rss_peak_thread, NULL);
    rss_out_t err = { NULL, 0, 0 };
    rss_write(&err, rss_peak_out.buf, (int)rss_peak_out.len);
  }
  rss_out_t out = { NULL, 0, 0 };
  rss_report("exit", &out);
}

/* A forked child has no peak thread (and reports its own exit, as before). */
static void rss_peak_child(void) {
  rss_peak_on = false;
}

/* The variables are taken out of the environment: programs the process starts (with the
   preload inherited) report only on a signal. */
__attribute__((constructor)) static void rss_init(void) {
  signal(SIGUSR1, rss_on_signal);
  rss_detail = (getenv("RSSMAP_SEGMENTS") != NULL);
  rss_peak_on = (getenv("RSSMAP_AT_EXIT") != NULL && getenv("RSSMAP_PEAK") != NULL &&
                 pthread_create(&rss_peak_thread, NULL, &rss_peak_run, NULL) == 0);
  if (rss_peak_on) pthread_atfork(NULL, NULL, &rss_peak_child);
  if (getenv("RSSMAP_AT_EXIT") != NULL) atexit(rss_at_exit);
  unsetenv("RSSMAP_AT_EXIT");
  unsetenv("RSSMAP_SEGMENTS");
  unsetenv("RSSMAP_PEAK");
}
