/* SPDX-License-Identifier: MIT */
/* Heap attacks against the secure build, as an attacker's test would try them.
 *
 * usage: secure-attacks CASE expect-detected|expect-vulnerable
 *
 * Each case corrupts the heap the way a buggy program does (a write after free of a free-list
 * link, an overflow into a freed neighbour, double frees, interior and foreign frees) and then
 * allocates on. The outcome is classified:
 *   vulnerable  malloc returned the attacker's chosen address, or a block that overlaps another
 *               live block (every live block is tracked, every new one checked against all);
 *   detected    an error was reported (mi_register_error) and nothing of the above happened;
 *   silent      neither (the attack went unnoticed but did no visible harm).
 * expect-detected (the secure build) passes only on "detected"; expect-vulnerable (the release
 * build) passes only on "vulnerable", which shows that the case can fail.
 * The case "abort" checks that, without an error handler, a corrupted free list aborts the
 * program (a forked child must die of SIGABRT); "placement" that the heap lies at a random
 * address in [1 TiB, 64 TiB) (the release build: where mmap puts it, next to the libraries).
 * The guard cases write byte by byte off the end (or the start) of a block in a forked child
 * and check where it faults: right after its page's blocks ("guard-page-end"), after the end of
 * a huge block ("guard-huge"), and before the segment's header when going backwards
 * ("guard-header"). Without guards the writes run on through the heap.
 * The guarded cases run with MIMALLOC_GUARDED_SAMPLE_RATE=1 (every allocation is a guarded
 * object, CMakeLists.txt): an overflow of an object faults on its first byte past the usable
 * size ("guarded-overflow"; "guarded-precise" with MIMALLOC_GUARDED_PRECISE=1: right after the
 * requested size), and a use after free at the object's first byte ("guarded-uaf").
 * "guarded-sample" (secure build only) checks that exactly 1 in N eligible allocations is
 * guarded, within the size bounds, through mi_heap_guarded_set_sample_rate/_size_bound.
 */
#include <mimalloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <unistd.h>

#include "../testing.h"

static int reports;
static void on_error(int err, void* arg) { (void)err; (void)arg; __atomic_fetch_add(&reports, 1, __ATOMIC_RELAXED); }

static char target[256];   /* what the attacker wants malloc to return */

/* ---- the live set ---- */
#define LIVE_MAX 4096
static struct { uint8_t* p; size_t n; } live[LIVE_MAX];
static int nlive;
static int violations;

static void violation(const char* what, void* p) {
  if (violations++ < 4) fprintf(stderr, "secure-attacks: %s: %p\n", what, p);
}

static void live_add(void* p, size_t n) {
  if (p == NULL) return;
  uint8_t* b = (uint8_t*)p;
  if ((uintptr_t)b + 64 >= (uintptr_t)target && (uintptr_t)b < (uintptr_t)target + sizeof target) { violation("malloc returned the attacker's address", p); return; }
  for (int i = 0; i < nlive; i++) {
    if (b < live[i].p + live[i].n && live[i].p < b + n) { violation("malloc returned a block overlapping a live one", p); return; }
  }
  if (nlive < LIVE_MAX) { live[nlive].p = b; live[nlive].n = n; nlive++; }
}

static void live_forget(void* p) {
  for (int i = 0; i < nlive; i++) {
    if (live[i].p == p) { live[i] = live[--nlive]; return; }
  }
}

static void* alloc(size_t n) {
  void* p = mi_malloc(n);
  if (p != NULL) { memset(p, 0x5A, n); live_add(p, n); }
  return p;
}

static void release(void* p) {
  live_forget(p);
  mi_free(p);
}

/* Allocate on: the corrupted or doubled block comes back to the front of its page's lists. */
static void allocate_on(size_t n, int count) {
  for (int i = 0; i < count && violations == 0; i++) alloc(n);   /* stop before using a bad block */
}

/* ---- the attacks ---- */
static void uaf_local(void) {
  void* p = alloc(48);
  for (int i = 0; i < 8; i++) alloc(48);
  release(p);
  void* evil = target + 64;
  memcpy(p, &evil, sizeof evil);            /* the freed block's link */
  allocate_on(48, 2000);
}

typedef struct { void** blocks; int n; } job_t;
static void* free_all(void* arg) {
  job_t* j = (job_t*)arg;
  for (int i = 0; i < j->n; i++) mi_free(j->blocks[i]);
  return NULL;
}

static void uaf_remote(void) {
  void* blocks[4];
  for (int i = 0; i < 4; i++) blocks[i] = alloc(64);
  for (int i = 0; i < 4; i++) live_forget(blocks[i]);
  job_t j = { blocks, 4 };
  pthread_t t;
  pthread_create(&t, NULL, free_all, &j);
  pthread_join(t, NULL);
  void* evil = target + 64;
  memcpy(blocks[3], &evil, sizeof evil);    /* the head of the thread-free list */
  memcpy(blocks[1], &evil, sizeof evil);
  allocate_on(64, 3000);
}

/* a: a live block whose neighbour right after it is free; overflow `len` bytes past a */
static void overflow(size_t len) {
  const size_t n = 64;
  uint8_t* blocks[64];
  for (int i = 0; i < 64; i++) blocks[i] = alloc(n);
  uint8_t* a = NULL;
  uint8_t* b = NULL;
  for (int i = 0; i < 64 && a == NULL; i++) {
    for (int k = 0; k < 64; k++) {
      if (blocks[k] == blocks[i] + n) { a = blocks[i]; b = blocks[k]; break; }
    }
  }
  if (a == NULL) { fprintf(stderr, "secure-attacks: no adjacent blocks\n"); violations++; return; }
  release(b);
  uint8_t evil[64];
  const uintptr_t t = (uintptr_t)(target + 64);
  for (size_t i = 0; i < sizeof evil; i += sizeof t) memcpy(evil + i, &t, sizeof t);
  if (len == 1) evil[0] = 0x28;   /* the low byte: the link then points into another block */
  if (len == 1 && a[n] == evil[0]) evil[0] ^= 0x40;   /* an encoded link's byte may be 0x28: change it */
  memcpy(a + n, evil, len);
  allocate_on(n, 3000);
}

static void double_free_immediate(void) {
  void* p = alloc(32);
  release(p);
  mi_free(p);
  allocate_on(32, 3000);
}

static void double_free_delayed(void) {
  void* p = alloc(80);
  release(p);
  for (int i = 0; i < 200; i++) { void* q = mi_malloc(80 + (size_t)(i % 3) * 16); mi_free(q); }
  mi_free(p);
  allocate_on(80, 300);
}

static void double_free_remote(void) {
  void* blocks[2];
  blocks[0] = alloc(96);
  blocks[1] = blocks[0];
  live_forget(blocks[0]);
  job_t j = { blocks, 2 };
  pthread_t t;
  pthread_create(&t, NULL, free_all, &j);
  pthread_join(t, NULL);
  allocate_on(96, 300);
}

static void double_free_size(size_t n) {
  void* keep = alloc(n);           /* the page stays in use */
  void* p = alloc(n);
  release(p);
  mi_free(p);
  allocate_on(n, 3);
  (void)keep;
}

static void interior_free(size_t n, size_t offset) {
  uint8_t* p = alloc(n);
  mi_free(p + offset);              /* still live */
  allocate_on(n < 4096 ? n : 64, n < 4096 ? 200 : 2);
  memset(p, 1, n);                  /* the block must still be ours */
}

static void foreign_free(void) {
  static char global[64];
  char local[64];
  mi_free(global + 16);
  mi_free(local);
  allocate_on(64, 100);
}

/* ---- guard pages: where does a linear overflow fault? ---- */
#define SEGMENT_SIZE  ((uintptr_t)4 << 20)   /* segments are aligned to it (src/internal/types.h) */
#define OS_PAGE       ((uintptr_t)4096)
static volatile uintptr_t fault_lo, fault_hi;   /* the child exits 0 iff the fault is in [lo, hi) */
static void on_fault(int sig, siginfo_t* info, void* ctx) {
  (void)sig; (void)ctx;
  const uintptr_t a = (uintptr_t)info->si_addr;
  _exit(a >= fault_lo && a < fault_hi ? 0 : 3);
}
/* In a child: write `limit` bytes one by one from p on (step +1 or -1); true iff the write
   faulted at an address in [lo, hi) (the child exits 4 if nothing faulted). */
static int faults_within(uint8_t* p, long step, size_t limit, uintptr_t lo, uintptr_t hi) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    fault_lo = lo; fault_hi = hi;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    volatile uint8_t* q = p;
    for (size_t i = 0; i < limit; i++) q[(long)i * step] = 0xEE;
    _exit(4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  printf("secure-attacks: writes from %p by %+ld: %s\n", (void*)p, step,
         code == 0 ? "faulted at the guard" : code == 3 ? "faulted elsewhere" : code == 4 ? "no fault" : "child died otherwise");
  return code == 0;
}

typedef struct { uint8_t* p; uintptr_t end; size_t block_size; } area_find_t;
static bool find_area(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t bsize, void* arg) {
  (void)heap; (void)bsize;
  area_find_t* f = (area_find_t*)arg;
  uint8_t* start = (uint8_t*)area->blocks;
  if (block == NULL && f->p >= start && f->p < start + area->reserved) {
    f->end = (uintptr_t)start + area->reserved;
    f->block_size = area->block_size;
  }
  return true;
}

/* An overflow off the last block of a page faults on the page's guard (at most one block and
   one OS page past the end of its blocks). */
static int guard_page_end(void) {
  area_find_t f = { (uint8_t*)mi_malloc(1000), 0, 0 };
  mi_heap_visit_blocks(mi_heap_get_default(), false, find_area, &f);
  if (f.end == 0) { fprintf(stderr, "secure-attacks: block %p not found in the heap's areas\n", (void*)f.p); return 0; }
  const uintptr_t hi = ((f.end + f.block_size + OS_PAGE - 1) & ~(OS_PAGE - 1)) + 1;
  return faults_within(f.p, 1, 16u << 20, f.end, hi);
}

/* An overflow off a huge block faults on the OS page after its end, also after the block grew
   in place (realloc: the guard moves to the new end). Freed, its segment's guards go: the
   memory then serves other segments (of other layouts), every byte of which is written here (a
   guard left behind kills the test). */
static int guard_huge(void) {
  uint8_t* p = (uint8_t*)mi_malloc(5000000);
  uintptr_t end = (uintptr_t)p + mi_usable_size(p);
  const int before = faults_within(p, 1, 64u << 20, end, ((end + OS_PAGE - 1) & ~(OS_PAGE - 1)) + 1);
  uint8_t* q = (uint8_t*)mi_realloc(p, 9000000);
  printf("secure-attacks guard-huge: realloc to 9 MB %s\n", q == p ? "in place" : "moved");
  end = (uintptr_t)q + mi_usable_size(q);
  const int after = faults_within(q, 1, 64u << 20, end, ((end + OS_PAGE - 1) & ~(OS_PAGE - 1)) + 1);
  const uintptr_t freed = (uintptr_t)q & ~(SEGMENT_SIZE - 1);
  mi_free(q);
  enum { N = 48 };
  static void* reuse[N];
  size_t inside = 0;
  for (size_t i = 0; i < N; i++) {
    const size_t size = (i % 3 == 0 ? 700000 : i % 3 == 1 ? 60000 : 3000);
    reuse[i] = mi_malloc(size);
    CHECK(reuse[i] != NULL);
    if (reuse[i] == NULL) continue;
    memset(reuse[i], 0x5A, size);
    if ((uintptr_t)reuse[i] >= freed && (uintptr_t)reuse[i] < freed + (12u << 20)) inside++;
  }
  printf("secure-attacks guard-huge: %zu of %d new blocks in the freed segment's memory\n", inside, N);
  CHECK_MSG(inside > 0, "no new block reused the freed huge segment's memory");
  for (size_t i = 0; i < N; i++) mi_free(reuse[i]);
  return before && after;
}

/* An underflow from a block (writing backwards) faults before it reaches the segment's header:
   on a guard after an earlier page or the one after the page descriptors. */
static int guard_header(void) {
  uint8_t* p = (uint8_t*)mi_malloc(1000);
  const uintptr_t segment = (uintptr_t)p & ~(SEGMENT_SIZE - 1);
  return faults_within(p, -1, 64u << 20, segment + OS_PAGE, (uintptr_t)p);
}

/* ---- sampled guarded objects ---- */
static int guarded_overflow(size_t n, int precise) {
  uint8_t* p = (uint8_t*)mi_malloc(n);
  const uintptr_t end = (uintptr_t)p + (precise ? n : mi_usable_size(p));
  return faults_within(p, 1, 1u << 20, end, end + 1);
}

static int guarded_uaf(void) {
  uint8_t* p = (uint8_t*)mi_malloc(100);
  mi_free(p);
  return faults_within(p, 1, 1u << 20, (uintptr_t)p, (uintptr_t)p + 1);
}

/* A guarded object ends at an OS page boundary with less than 16 bytes beyond the request;
   a block of a size class has at least 16 (mi_good_size checks the sizes used here). */
static int is_guarded(const uint8_t* p, size_t n) {
  const uintptr_t end = (uintptr_t)p + mi_usable_size(p);
  return (end % OS_PAGE) == 0 && mi_usable_size(p) < n + 16;
}
/* Sampling (guarded.c): the count starts at seed % rate; each allocation decrements it, and the
   one that finds it at 0 is the sample: guarded if its size is within the bounds (the count
   restarts at rate - 1), else the sample moves to the next allocation. The test replays that
   rule and compares allocation by allocation. */
static int guarded_sample(void) {
  mi_heap_t* heap = mi_heap_get_default();
  const size_t rate = 5, lo = 100, hi = 2000;
  const size_t sizes[3] = { 257, 1025, 3001 };   /* the last is out of bounds */
  for (int k = 0; k < 3; k++) {
    if (mi_good_size(sizes[k]) < sizes[k] + 16) { fprintf(stderr, "secure-attacks: size %zu is a bin size\n", sizes[k]); return 0; }
  }
  mi_heap_guarded_set_size_bound(heap, lo, hi);
  mi_heap_guarded_set_sample_rate(heap, rate, 1);
  size_t count = 1 % rate;
  int guarded[3] = { 0, 0, 0 }, mismatches = 0;
  void* blocks[300];
  for (int i = 0; i < 300; i++) {
    const size_t n = sizes[i % 3];
    blocks[i] = mi_malloc(n);
    memset(blocks[i], 0x33, n);
    const int g = is_guarded((uint8_t*)blocks[i], n);
    int expect = 0;
    if (count > 0) count--;
    else if (n >= lo && n <= hi) { expect = 1; count = rate - 1; }
    guarded[i % 3] += g;
    mismatches += (g != expect);
  }
  for (int i = 0; i < 300; i++) mi_free(blocks[i]);
  mi_heap_guarded_set_sample_rate(heap, 0, 0);
  void* after = mi_malloc(257);
  const int none_after = !is_guarded((uint8_t*)after, 257);
  mi_free(after);
  printf("secure-attacks guarded-sample: guarded %d of 100 (257 B), %d of 100 (1025 B), %d of 100 (3001 B, out of bounds); %d differ from the rule\n",
         guarded[0], guarded[1], guarded[2], mismatches);
  return mismatches == 0 && guarded[0] + guarded[1] > 0 && guarded[2] == 0 && none_after;
}

/* Without a handler a corrupted list aborts (secure builds); the child must die of SIGABRT. */
static int abort_case(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    mi_register_error(NULL, NULL);
    uaf_local();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* Secure builds reserve arenas at a random address in [1 TiB, 64 TiB) (where nothing else is
   mapped by default); the release build takes what mmap gives, next to the libraries. */
static int placement_random(void) {
  void* small = mi_malloc(16);
  void* huge = mi_malloc(8 * 1024 * 1024);
  const uintptr_t lo = (uintptr_t)1 << 40, hi = (uintptr_t)1 << 46;
  const int inside = ((uintptr_t)small >= lo && (uintptr_t)small < hi && (uintptr_t)huge >= lo && (uintptr_t)huge < hi);
  printf("secure-attacks placement: blocks at %p and %p\n", small, huge);
  mi_free(small);
  mi_free(huge);
  return inside;
}

static int guarded_overflow_usable(void) { return guarded_overflow(100, 0); }
static int guarded_overflow_precise(void) { return guarded_overflow(13, 1); }

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: secure-attacks CASE expect-detected|expect-vulnerable\n"); return 2; }
  const char* c = argv[1];
  const int expect_detected = (strcmp(argv[2], "expect-detected") == 0);
  mi_option_set(mi_option_show_errors, 1);
  mi_register_error(on_error, NULL);
  if (strcmp(c, "abort") == 0) {
    const int aborted = abort_case();
    CHECK_MSG(aborted == expect_detected, "corrupted free list %s abort", aborted ? "did" : "did not");
    return test_summary("secure abort", "%s", expect_detected ? "aborts" : "does not abort");
  }
  if (strcmp(c, "placement") == 0) {
    const int random_place = placement_random();
    CHECK_MSG(random_place == expect_detected, "arenas %s at a random address", random_place ? "are" : "are not");
    return test_summary("secure placement", "%s", expect_detected ? "random" : "next to the libraries");
  }
  struct { const char* name; int (*run)(void); } guards[] = {
    { "guard-page-end", guard_page_end }, { "guard-huge", guard_huge }, { "guard-header", guard_header },
    { "guarded-overflow", guarded_overflow_usable }, { "guarded-precise", guarded_overflow_precise },
    { "guarded-uaf", guarded_uaf }, { "guarded-sample", guarded_sample } };
  for (size_t i = 0; i < sizeof guards / sizeof guards[0]; i++) {
    if (strcmp(c, guards[i].name) != 0) continue;
    const int guarded = guards[i].run();
    CHECK_MSG(guarded == expect_detected, "%s: %s", c, guarded ? "guarded" : "not guarded");
    return test_summary(c, "%s", guarded ? "faults at the guard" : "no guard");
  }
  if (strcmp(c, "uaf-local") == 0) uaf_local();
  else if (strcmp(c, "uaf-remote") == 0) uaf_remote();
  else if (strcmp(c, "overflow-1") == 0) overflow(1);
  else if (strcmp(c, "overflow-8") == 0) overflow(8);
  else if (strcmp(c, "overflow-64") == 0) overflow(64);
  else if (strcmp(c, "double-free") == 0 || strcmp(c, "guarded-double-free") == 0) double_free_immediate();
  else if (strcmp(c, "double-free-delayed") == 0) double_free_delayed();
  else if (strcmp(c, "double-free-remote") == 0) double_free_remote();
  else if (strcmp(c, "double-free-large") == 0) double_free_size(200 * 1024);
  else if (strcmp(c, "double-free-huge") == 0) double_free_size(8 * 1024 * 1024);
  else if (strcmp(c, "interior-free") == 0) interior_free(64, 8);
  else if (strcmp(c, "interior-free-huge") == 0) interior_free(64 * 1024 * 1024, 4096);
  else if (strcmp(c, "foreign-free") == 0) foreign_free();
  else { fprintf(stderr, "secure-attacks: unknown case %s\n", c); return 2; }
  const char* outcome = (violations > 0 ? "vulnerable" : reports > 0 ? "detected" : "silent");
  printf("secure-attacks %s: %s (%d reports, %d violations)\n", c, outcome, reports, violations);
  CHECK_MSG(strcmp(outcome, expect_detected ? "detected" : "vulnerable") == 0, "%s: %s", c, outcome);
  return test_summary(c, "%s", outcome);
}
