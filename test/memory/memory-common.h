/* SPDX-License-Identifier: MIT */
/* memory-common.h -- helpers shared by the OS-memory tests (test/memory, label "memory").

   - mt_rss, mt_vsz: the true resident set size and the address space, from /proc/self/statm;
     mt_minor_faults: the process' minor page faults (getrusage);
   - MT_RSS_ASSERTS: 0 under a sanitizer (ASan's shadow memory and quarantine change the RSS
     figures), so the RSS assertions are skipped there and only the workloads and the
     statistics checks run;
   - mt_stats: a snapshot of mi_stats_get;
   - mt_activity: ordinary allocator activity (a few thousand blocks of varied sizes, touched
     and freed), which drives the delayed purges (the allocation slow path runs the due ones);
   - mt_capture_*: an mi_output_fun that appends to a static buffer (never allocates);
   - mt_run_child: runs this program again (/proc/self/exe) with extra environment variables
     and captures its stdout and stderr together (for messages printed before main, e.g.
     with MIMALLOC_VERBOSE);
   - mt_maps_find: the /proc/self/maps or /proc/self/smaps entry of an address (permissions,
     VmFlags);
   - mt_fill / mt_is_filled / mt_is_zero: byte patterns;
   - mt_max_per_segment: how many of some blocks share a segment (the layout the tests expect);
   - mt_area_of: the heap area (page) that holds a block, from mi_heap_visit_blocks;
   - mt_resident_pages: how many 4 KiB pages of an address range are resident (mincore). */
#ifndef MI_MEMORY_COMMON_H
#define MI_MEMORY_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <mimalloc.h>
#include <mimalloc-stats.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testing.h"

#define KiB ((size_t)1024)
#define MiB (KiB * KiB)
#define GiB (MiB * KiB)

/* the library's granularities (API: MI_SEGMENT_SIZE; arena blocks are one segment) */
#define MT_SEGMENT_SIZE      (4 * MiB)
#define MT_ARENA_BLOCK_SIZE  (4 * MiB)
#define MT_ARENA_MAX_OBJ     (256 * MiB)   /* larger huge blocks come straight from the OS */

#if TEST_RSS_UNRELIABLE   /* a sanitizer, or qemu-user (testing.h) */
#define MT_RSS_ASSERTS 0
#else
#define MT_RSS_ASSERTS 1
#endif

/* the start of a /proc file, NUL-terminated, in buf; false if it cannot be read */
static TEST_UNUSED_ bool mt_read_proc(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  return true;
}

/* field `field` of /proc/self/statm (0: address space, 1: resident) in bytes, or 0 */
static TEST_UNUSED_ size_t mt_statm(int field) {
  char buf[128];
  if (!mt_read_proc("/proc/self/statm", buf, sizeof(buf))) return 0;
  unsigned long f[2] = { 0, 0 };
  if (sscanf(buf, "%lu %lu", &f[0], &f[1]) != 2) return 0;
  return (size_t)f[field] * (size_t)sysconf(_SC_PAGESIZE);
}
static TEST_UNUSED_ size_t mt_rss(void) { return mt_statm(1); }
static TEST_UNUSED_ size_t mt_vsz(void) { return mt_statm(0); }

/* minor page faults of the whole process so far (all threads, ended ones included) */
static TEST_UNUSED_ long mt_minor_faults(void) {
  struct rusage u;
  return (getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0);
}

static TEST_UNUSED_ double mt_mib(size_t bytes) { return (double)bytes / (double)MiB; }
static TEST_UNUSED_ double mt_mib_diff(size_t a, size_t b) { return ((double)a - (double)b) / (double)MiB; }

static TEST_UNUSED_ long long mt_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static TEST_UNUSED_ void mt_sleep_ms(long ms) {
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}

/* The phase of a test's threads: one thread sets it, the others wait until it is reached (it
   only grows). */
static TEST_UNUSED_ pthread_mutex_t mt_phase_lock = PTHREAD_MUTEX_INITIALIZER;
static TEST_UNUSED_ pthread_cond_t  mt_phase_cond = PTHREAD_COND_INITIALIZER;
static TEST_UNUSED_ int mt_phase_now;

static TEST_UNUSED_ void mt_phase_set(int phase) {
  pthread_mutex_lock(&mt_phase_lock);
  mt_phase_now = phase;
  pthread_cond_broadcast(&mt_phase_cond);
  pthread_mutex_unlock(&mt_phase_lock);
}

static TEST_UNUSED_ void mt_phase_wait(int phase) {
  pthread_mutex_lock(&mt_phase_lock);
  while (mt_phase_now < phase) pthread_cond_wait(&mt_phase_cond, &mt_phase_lock);
  pthread_mutex_unlock(&mt_phase_lock);
}

/* mi_stats_get into a static struct (nothing allocated) */
static TEST_UNUSED_ const mi_stats_t* mt_stats(void) {
  static mi_stats_t s;
  memset(&s, 0, sizeof(s));
  s.size = sizeof(mi_stats_t);
  s.version = MI_STAT_VERSION;
  if (!mi_stats_get(&s)) {
    fprintf(stderr, "mi_stats_get refused the struct\n");
    memset(&s, 0, sizeof(s));
  }
  return &s;
}

static TEST_UNUSED_ void mt_fill(void* p, size_t n, uint8_t v) { memset(p, v, n); }

/* The most of blocks[0..n) that share one MT_SEGMENT_SIZE-aligned segment. */
static TEST_UNUSED_ size_t mt_max_per_segment(void* const* blocks, size_t n) {
  size_t most = 0;
  for (size_t i = 0; i < n; i++) {
    size_t same = 0;
    for (size_t j = 0; j < n; j++) same += (((uintptr_t)blocks[i] ^ (uintptr_t)blocks[j]) < MT_SEGMENT_SIZE);
    if (same > most) most = same;
  }
  return most;
}

static TEST_UNUSED_ bool mt_is_filled(const void* p, size_t n, uint8_t v) {
  const uint8_t* b = (const uint8_t*)p;
  for (size_t i = 0; i < n; i++) if (b[i] != v) return false;
  return true;
}

static TEST_UNUSED_ bool mt_is_zero(const void* p, size_t n) { return mt_is_filled(p, n, 0); }

/* index of the first non-zero byte, or n */
static TEST_UNUSED_ size_t mt_first_nonzero(const void* p, size_t n) {
  const uint8_t* b = (const uint8_t*)p;
  for (size_t i = 0; i < n; i++) if (b[i] != 0) return i;
  return n;
}

static TEST_UNUSED_ bool mt_in_range(const void* p, size_t size, const void* start, size_t len) {
  const uintptr_t a = (uintptr_t)p, s = (uintptr_t)start;
  return (start != NULL && a >= s && a + size <= s + len && a + size >= a);
}

/* Ordinary allocator activity: `n` blocks of sizes 8 B .. 48 KiB and a few medium ones
   (up to 120 KiB), written, kept in a small ring and freed; a few sizes nobody used before
   (the slow path, which runs the due purges); everything is freed at the end. */
static TEST_UNUSED_ void mt_activity(size_t n) {
  enum { RING = 64 };
  void* ring[RING] = { 0 };
  static const size_t sizes[] = { 8, 24, 40, 72, 136, 264, 520, 1000, 2056, 4100, 8200, 12000,
                                  24000, 48000, 70000, 120000 };
  const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
  uint64_t x = 0x1234567;
  for (size_t i = 0; i < n; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t size = sizes[(x >> 33) % nsizes];
    if (((x >> 20) & 15) == 0) size += (size_t)((x >> 40) % 512);   /* odd sizes now and then */
    if (size > 48000 && ((x >> 50) & 7) != 0) size = 300;          /* medium ones are rarer */
    void* p = mi_malloc(size);
    if (p != NULL) {
      ((volatile uint8_t*)p)[0] = 1;
      ((volatile uint8_t*)p)[size - 1] = 2;
    }
    const size_t slot = (size_t)((x >> 27) % RING);
    mi_free(ring[slot]);
    ring[slot] = p;
  }
  for (size_t i = 0; i < RING; i++) mi_free(ring[i]);
}

/* ---------------------------------------------------------------------------------------
   Output capture
--------------------------------------------------------------------------------------- */
typedef struct mt_capture_s {
  char   text[1 << 17];
  size_t len;
  bool   overflow;
} mt_capture_t;

static TEST_UNUSED_ void mt_capture_out(const char* msg, void* arg) {
  mt_capture_t* c = (mt_capture_t*)arg;
  const size_t n = strlen(msg);
  if (c->len + n + 1 > sizeof(c->text)) { c->overflow = true; return; }
  memcpy(c->text + c->len, msg, n);
  c->len += n;
  c->text[c->len] = 0;
}

static TEST_UNUSED_ void mt_capture_reset(mt_capture_t* c) { c->len = 0; c->text[0] = 0; c->overflow = false; }

/* Number of non-overlapping occurrences of `needle` in `hay`. */
static TEST_UNUSED_ int mt_count(const char* hay, const char* needle) {
  int n = 0;
  const size_t len = strlen(needle);
  for (const char* p = strstr(hay, needle); p != NULL; p = strstr(p + len, needle)) n++;
  return n;
}

/* ---------------------------------------------------------------------------------------
   Running this program again
--------------------------------------------------------------------------------------- */
/* Runs /proc/self/exe with args (NULL-terminated, without argv[0]) and the environment plus
   `env` (NULL-terminated "NAME=value" strings); its stdout and stderr go into out (truncated
   to out_size-1). Returns the wait status (or -1). */
static TEST_UNUSED_ int mt_run_child(const char* const* args, const char* const* env, char* out, size_t out_size) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { close(fds[0]); close(fds[1]); return -1; }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[1]);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) putenv((char*)env[i]);
    const char* argv[16];
    size_t k = 0;
    argv[k++] = "memory-child";
    for (size_t i = 0; args[i] != NULL && k < 15; i++) argv[k++] = args[i];
    argv[k] = NULL;
    execv("/proc/self/exe", (char* const*)argv);
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  for (;;) {
    char tmp[4096];
    ssize_t n = read(fds[0], tmp, sizeof(tmp));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t m = (size_t)n;
    if (len + m > out_size - 1) m = out_size - 1 - len;
    memcpy(out + len, tmp, m);
    len += m;
  }
  out[len] = 0;
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

/* ---------------------------------------------------------------------------------------
   /proc/self/maps and smaps
--------------------------------------------------------------------------------------- */
typedef struct mt_mapping_s {
  uintptr_t start, end;
  char perms[8];
  char vmflags[256];    /* smaps only: the VmFlags line without the "VmFlags:" */
  size_t anon_huge_kib; /* smaps only: AnonHugePages */
} mt_mapping_t;

/* The mapping containing address p (from smaps when `smaps`, else maps). Reads with raw
   read(2) into a static buffer (no allocation). */
static TEST_UNUSED_ bool mt_maps_find(const void* p, bool smaps, mt_mapping_t* m) {
  static char buf[1 << 22];
  memset(m, 0, sizeof(*m));
  int fd = open(smaps ? "/proc/self/smaps" : "/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
    if (len >= sizeof(buf) - 1) break;
  }
  close(fd);
  buf[len] = 0;
  const uintptr_t a = (uintptr_t)p;
  bool found = false;
  for (char* line = buf; line != NULL && *line != 0; ) {
    char* next = strchr(line, '\n');
    if (next != NULL) *next++ = 0;
    unsigned long s = 0, e = 0;
    char perms[8] = "";
    const bool header = ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'));
    if (header && sscanf(line, "%lx-%lx %7s", &s, &e, perms) == 3) {
      if (found) break;   /* the next mapping started */
      if (a >= s && a < e) {
        found = true;
        m->start = s; m->end = e;
        snprintf(m->perms, sizeof(m->perms), "%s", perms);
      }
    }
    else if (found && strncmp(line, "VmFlags:", 8) == 0) {
      snprintf(m->vmflags, sizeof(m->vmflags), "%s ", line + 8);
    }
    else if (found && strncmp(line, "AnonHugePages:", 14) == 0) {
      m->anon_huge_kib = (size_t)strtoul(line + 14, NULL, 10);
    }
    line = next;
  }
  return found;
}

/* Does the VmFlags text contain the two-letter flag (e.g. "hg")? */
static TEST_UNUSED_ bool mt_vmflag(const mt_mapping_t* m, const char* flag) {
  char pat[8];
  snprintf(pat, sizeof(pat), " %s ", flag);
  return strstr(m->vmflags, pat) != NULL;
}

typedef struct mt_area_find_s {
  const void* inside;
  mi_heap_area_t area;
  bool found;
} mt_area_find_t;

static TEST_UNUSED_ bool mt_area_find(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t size, void* arg) {
  (void)heap; (void)block; (void)size;
  mt_area_find_t* f = (mt_area_find_t*)arg;
  const uint8_t* start = (const uint8_t*)area->blocks;
  if ((const uint8_t*)f->inside >= start && (const uint8_t*)f->inside < start + area->reserved) {
    f->area = *area;
    f->found = true;
  }
  return true;
}

/* the area of `heap` that holds block p (a CHECK fails if none does) */
static TEST_UNUSED_ mi_heap_area_t mt_area_of(mi_heap_t* heap, const void* p) {
  mt_area_find_t f;
  memset(&f, 0, sizeof(f));
  f.inside = p;
  CHECK(mi_heap_visit_blocks(heap, false, &mt_area_find, &f));
  CHECK_MSG(f.found, "no area holds %p", p);
  return f.area;
}

/* resident 4 KiB pages of [from, to), the range widened to whole pages (mincore) */
static TEST_UNUSED_ size_t mt_resident_pages(uintptr_t from, uintptr_t to) {
  const size_t os_page = 4096;
  from = from / os_page * os_page;
  to = (to + os_page - 1) / os_page * os_page;
  size_t count = 0;
  unsigned char vec[256];
  for (uintptr_t at = from; at < to; at += sizeof(vec) * os_page) {
    const size_t n = ((to - at) / os_page < sizeof(vec) ? (size_t)((to - at) / os_page) : sizeof(vec));
    CHECK(mincore((void*)at, n * os_page, vec) == 0);
    for (size_t i = 0; i < n; i++) count += (vec[i] & 1);
  }
  return count;
}

#endif
