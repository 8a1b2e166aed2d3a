/* SPDX-License-Identifier: MIT */
/* mem-arena.c -- arenas made by the program: mi_reserve_os_memory(_ex), mi_manage_os_memory(_ex),
   mi_arena_area, mi_heap_new_in_arena, mi_debug_show_arenas.

   Usage: mem-arena exclusive|nocommit|rounding|shared|manage|manage-small|manage-uncommitted|
                    manage-pinned|manage-file|unknown|pending-file-zero|pending-reclaim|
                    pending-errno|realloc-grow|realloc-grow-nocommit

   exclusive   mi_reserve_os_memory_ex(64 MiB, commit, exclusive): id > 0, arena_count + 1, reserved
               + 64 MiB, mi_arena_area = the 4 MiB-aligned 64 MiB; then exercise() (below)
   nocommit    the same with commit=false: the area is inaccessible (---p in /proc/self/maps) until
               used, the used part becomes accessible (rw-p); then exercise()
   rounding    mi_reserve_os_memory_ex(5 MiB + 1) gives an 8 MiB arena (whole 4 MiB blocks)
   shared      mi_reserve_os_memory(40 MiB) (not exclusive): 0, arena_count + 1, a new arena of
               40 MiB shown without "exclusive"
   manage      mi_manage_os_memory_ex on an mmap'ed region with an unaligned start: true, the area
               is the start aligned up to 4 MiB and the whole blocks after it; exercise()
   manage-small  too little memory: no whole aligned 4 MiB block, NULL start -> false, id 0,
               arena_count unchanged; exactly one aligned block -> true
   manage-uncommitted  a PROT_NONE region handed over with is_committed=false: the library makes
               what it uses accessible; exercise()
   manage-pinned  is_large=true (pinned): shown as "pinned", usable, and never purged (the purged
               statistic does not move for its memory, even with mi_collect(true))
   manage-file a MAP_SHARED file mapping as an exclusive arena: blocks written through the heap are
               in the file (pread), and zero-initialised blocks are zero also after purges
               (purging a shared file mapping does not zero it)
   unknown     mi_arena_area of ids 0, -1, 133, 1000 and of an unused slot: NULL and size 0;
               mi_heap_new_in_arena with such ids: NULL
   pending-file-zero  manage-file with default purging and mi_collect(true) between the rounds:
               zero allocation is zero after purges of the shared file mapping
   pending-reclaim  after mi_heap_delete of a heap whose exclusive arena is full, the first small
               allocation of a new heap of the arena succeeds (abandoned small segment reclaimed)
   pending-errno  that successful allocation (after a failed internal attempt) leaves errno 0
   realloc-grow[-nocommit]  huge blocks of a heap in an exclusive 64 MiB arena (committed or not)
               grow in place with mi_heap_realloc when the blocks after them are free (same
               pointer, contents kept, all of the new size writable), move when another block is
               in the way; mi_heap_rezalloc growing in place over freed, dirty memory (purging off)
               gives zeros; the huge-bytes statistic returns to its start value after the frees
   (the pending-* modes were written for library bugs found by these tests, since fixed)

   exercise(id): a heap of the arena (mi_heap_new_in_arena) allocates small (16 B, 1000 B),
   medium (100 KiB), large (1 MiB) and huge (10 MiB) blocks, all inside [start, start+size), every
   byte writable; zero allocation is zero; the default heap never lands in an exclusive arena; a
   block larger than the arena fails with NULL/ENOMEM; filling the arena with 1 MiB blocks ends
   in NULL with errno ENOMEM (no crash) with all blocks inside, after which huge and medium blocks
   fail too while the default heap still works; after freeing, a huge block fits again;
   mi_debug_show_arenas shows the arena ("arena N: B blocks of 4 MiB at ...", "exclusive", rows
   inuse/committed/purge of B 'x'/'.' characters, in-use count matching); mi_heap_delete keeps
   the heap's blocks valid (their contents intact, freed later with mi_free). */
#include "memory-common.h"

static mt_capture_t cap;

/* the rows of arena `id` in mi_debug_show_arenas' output: header line, and the concatenated
   bitmap characters of each row kind */
typedef struct arena_show_s {
  bool found;
  char header[512];
  char inuse[1024], committed[1024], purge[1024];
} arena_show_t;

static void show_arena(int id, arena_show_t* out) {
  memset(out, 0, sizeof(*out));
  mt_capture_reset(&cap);
  mi_register_output(&mt_capture_out, &cap);
  mi_debug_show_arenas();
  mi_register_output(NULL, NULL);
  char want[32];
  snprintf(want, sizeof(want), "arena %d: ", id);
  char* row = NULL;
  for (char* line = cap.text; line != NULL && *line != 0; ) {
    char* next = strchr(line, '\n');
    size_t len = (next == NULL ? strlen(line) : (size_t)(next - line));
    char buf[512];
    if (len >= sizeof(buf)) len = sizeof(buf) - 1;
    memcpy(buf, line, len);
    buf[len] = 0;
    char* text = buf;
    if (strncmp(text, "mimalloc: ", 10) == 0) text += 10;
    if (strncmp(text, "arena ", 6) == 0 || strncmp(text, "total", 5) == 0 || strncmp(text, "arenas", 6) == 0) {
      if (out->found && row != NULL) break;   /* the next arena */
      if (strncmp(text, want, strlen(want)) == 0) {
        out->found = true;
        snprintf(out->header, sizeof(out->header), "%s", text);
      }
      row = NULL;
    }
    else if (out->found) {
      char* t = text;
      while (*t == ' ') t++;
      if (strncmp(t, "inuse:", 6) == 0) { row = out->inuse; t += 6; }
      else if (strncmp(t, "committed:", 10) == 0) { row = out->committed; t += 10; }
      else if (strncmp(t, "purge:", 6) == 0) { row = out->purge; t += 6; }
      while (*t == ' ') t++;
      if (row != NULL && strlen(row) + strlen(t) < 1000) strcat(row, t);
    }
    line = (next == NULL ? NULL : next + 1);
  }
}

static size_t count_char(const char* s, char c) {
  size_t n = 0;
  for (; *s; s++) if (*s == c) n++;
  return n;
}

static bool only_bitmap_chars(const char* s) {
  for (; *s; s++) if (*s != 'x' && *s != '.') return false;
  return true;
}

static void check_show(int id, size_t blocks, bool exclusive, size_t min_inuse, const char* when) {
  arena_show_t a;
  show_arena(id, &a);
  CHECK_MSG(a.found, "%s: mi_debug_show_arenas shows no \"arena %d:\" line", when, id);
  if (!a.found) return;
  char want[64];
  snprintf(want, sizeof(want), "%zu blocks of 4 MiB", blocks);
  CHECK_MSG(strstr(a.header, want) != NULL, "%s: header \"%s\" lacks \"%s\"", when, a.header, want);
  CHECK_MSG((strstr(a.header, "exclusive") != NULL) == exclusive, "%s: header \"%s\" (exclusive %d)", when, a.header, (int)exclusive);
  CHECK_MSG(strlen(a.inuse) == blocks && only_bitmap_chars(a.inuse), "%s: inuse row \"%s\" (%zu blocks)", when, a.inuse, blocks);
  CHECK_MSG(strlen(a.committed) == blocks && only_bitmap_chars(a.committed), "%s: committed row \"%s\"", when, a.committed);
  CHECK_MSG(strlen(a.purge) == blocks && only_bitmap_chars(a.purge), "%s: purge row \"%s\"", when, a.purge);
  CHECK_MSG(count_char(a.inuse, 'x') >= min_inuse, "%s: inuse row \"%s\" has fewer than %zu blocks in use", when, a.inuse, min_inuse);
}

/* ---------------------------------------------------------------------------------------
   exercise
--------------------------------------------------------------------------------------- */
enum { MAX_FILL = 512 };
static void* fill[MAX_FILL];

static void exercise(int id, bool exclusive, const char* what) {
  size_t size = 0;
  uint8_t* start = (uint8_t*)mi_arena_area(id, &size);
  CHECK_MSG(start != NULL && size >= 32 * MiB, "%s: arena %d area %p, %zu bytes (need >= 32 MiB)", what, id, (void*)start, size);
  if (start == NULL || size < 32 * MiB) return;
  const size_t blocks = size / MT_ARENA_BLOCK_SIZE;
  check_show(id, blocks, exclusive, 0, what);

  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK_MSG(heap != NULL, "%s: mi_heap_new_in_arena(%d) returned NULL", what, id);
  if (heap == NULL) return;

  static const size_t sizes[] = { 16, 1000, 100 * KiB, 1 * MiB, 10 * MiB };
  void* kept[5];
  for (size_t i = 0; i < 5; i++) {
    const size_t n = sizes[i];
    uint8_t* p = (uint8_t*)mi_heap_malloc(heap, n);
    kept[i] = p;
    CHECK_MSG(p != NULL && mt_in_range(p, n, start, size), "%s: mi_heap_malloc(arena heap, %zu) = %p, outside [%p, +%zu MiB)", what, n, (void*)p, (void*)start, size / MiB);
    if (p != NULL) { memset(p, 0x3C, n); }
    uint8_t* z = (uint8_t*)mi_heap_zalloc(heap, n);
    CHECK_MSG(z != NULL && mt_in_range(z, n, start, size) && mt_is_zero(z, n), "%s: mi_heap_zalloc(arena heap, %zu) = %p not in the arena or not zero", what, n, (void*)z);
    if (z != NULL) memset(z, 0x77, n);
    mi_free(z);
    uint8_t* c = (uint8_t*)mi_heap_calloc(heap, 1, n);   /* (often the memory of z again) */
    CHECK_MSG(c != NULL && mt_in_range(c, n, start, size) && mt_is_zero(c, n), "%s: mi_heap_calloc(arena heap, 1, %zu) = %p not in the arena or not zero", what, n, (void*)c);
    mi_free(c);
    void* d = mi_malloc(n);
    CHECK(d != NULL);
    if (exclusive) CHECK_MSG(!mt_in_range(d, 1, start, size), "%s: mi_malloc(%zu) = %p landed in the exclusive arena", what, n, d);
    mi_free(d);
  }
  for (size_t i = 0; i < 5; i++) CHECK_MSG(kept[i] == NULL || mt_is_filled(kept[i], sizes[i], 0x3C), "%s: block of %zu bytes lost its contents", what, sizes[i]);
  /* 10 MiB huge: 3 blocks; small: 1; medium, with the 1 MiB large block in a span of its
     slots: 1 */
  check_show(id, blocks, exclusive, 5, "with 5 blocks allocated");

  /* more than the arena holds */
  errno = 0;
  void* big = mi_heap_malloc(heap, size + 4 * MiB);
  CHECK_MSG(big == NULL && errno == ENOMEM, "%s: a block larger than the arena: %p, errno %d", what, big, errno);
  mi_free(big);

  /* fill the arena with 1 MiB blocks until it is exhausted */
  size_t nfill = 0;
  int err = 0;
  while (nfill < MAX_FILL) {
    errno = 0;
    void* p = mi_heap_malloc(heap, 1 * MiB);
    if (p == NULL) { err = errno; break; }
    CHECK_MSG(mt_in_range(p, 1 * MiB, start, size), "%s: fill block %zu at %p outside the arena", what, nfill, p);
    ((volatile uint8_t*)p)[0] = 1;
    fill[nfill++] = p;
  }
  CHECK_MSG(nfill < MAX_FILL, "%s: %zu blocks of 1 MiB fitted into a %zu MiB arena", what, nfill, size / MiB);
  CHECK_MSG(err == ENOMEM, "%s: the allocation that failed set errno %d, not ENOMEM", what, err);
  /* all blocks but the 5 taken above, 3 blocks of 1 MiB per 4 MiB medium segment (spans of 8
     slots of 128 KiB), also when debug padding makes the bin 1.125 MiB (9 slots each) */
  const size_t per_segment = mt_max_per_segment(fill, nfill);
  CHECK_MSG(per_segment == 3, "%s: %zu blocks of 1 MiB in one segment", what, per_segment);
  CHECK_MSG(nfill >= (blocks - 5) * per_segment - 1 && nfill * MiB <= size, "%s: %zu blocks of 1 MiB before exhaustion (arena %zu MiB)", what, nfill, size / MiB);
  errno = 0;
  void* h = mi_heap_malloc(heap, 10 * MiB);
  CHECK_MSG(h == NULL && errno == ENOMEM, "%s: exhausted arena still gave a 10 MiB block %p (errno %d)", what, h, errno);
  mi_free(h);
  /* medium: until the slots the spans left free are full */
  size_t nmed = 0;
  void* meds[256];
  while (nmed < 256) {
    errno = 0;
    void* p = mi_heap_malloc(heap, 100 * KiB);
    if (p == NULL) { CHECK_EQ(errno, ENOMEM); break; }
    CHECK(mt_in_range(p, 100 * KiB, start, size));
    meds[nmed++] = p;
  }
  CHECK_MSG(nmed < 256, "%s: 256 medium blocks in an exhausted arena", what);
  check_show(id, blocks, exclusive, blocks, "exhausted");
  /* the default heap is not affected */
  void* d1 = mi_malloc(1 * MiB);
  void* d2 = mi_malloc(100);
  CHECK(d1 != NULL && d2 != NULL);
  if (exclusive) CHECK(!mt_in_range(d1, 1, start, size) && !mt_in_range(d2, 1, start, size));
  mi_free(d1);
  mi_free(d2);

  for (size_t i = 0; i < nfill; i++) mi_free(fill[i]);
  for (size_t i = 0; i < nmed; i++) mi_free(meds[i]);
  h = mi_heap_malloc(heap, 10 * MiB);
  CHECK_MSG(h != NULL && mt_in_range(h, 10 * MiB, start, size), "%s: after freeing, a 10 MiB block in the arena: %p", what, h);
  mi_free(h);
  /* a huge block that outlives its heap: 2 blocks, so the arena (>= 9 blocks, 6 in use) is
     not full when the heap is deleted (see pending-reclaim for the full case) */
  h = mi_heap_malloc(heap, 5 * MiB);
  CHECK_MSG(h != NULL && mt_in_range(h, 5 * MiB, start, size), "%s: a 5 MiB block in the arena: %p", what, h);
  if (h != NULL) memset(h, 0x11, 5 * MiB);

  /* mi_heap_delete: the blocks stay valid and are freed later */
  mi_heap_delete(heap);
  CHECK_MSG(kept[0] == NULL || mt_is_filled(kept[0], 16, 0x3C), "%s: after mi_heap_delete a small block lost its contents", what);
  CHECK_MSG(kept[4] == NULL || mt_is_filled(kept[4], 10 * MiB, 0x3C), "%s: after mi_heap_delete the 10 MiB block lost its contents", what);
  CHECK_MSG(h == NULL || mt_is_filled(h, 5 * MiB, 0x11), "%s: after mi_heap_delete a huge block lost its contents", what);
  mi_heap_t* heap2 = mi_heap_new_in_arena(id);
  CHECK(heap2 != NULL);
  void* q = (heap2 != NULL ? mi_heap_malloc(heap2, 5000) : NULL);
  CHECK_MSG(q != NULL && mt_in_range(q, 5000, start, size), "%s: a new heap of the arena after mi_heap_delete: %p", what, q);
  for (size_t i = 0; i < 5; i++) mi_free(kept[i]);
  mi_free(h);
  mi_free(q);
  if (heap2 != NULL) mi_heap_delete(heap2);
}

/* ---------------------------------------------------------------------------------------
   modes
--------------------------------------------------------------------------------------- */
static int last_arena_id(void) {
  int id = 0;
  for (int i = 1; i <= 132; i++) if (mi_arena_area(i, NULL) != NULL) id = i;
  return id;
}

static int reserve_mode(bool commit) {
  const mi_stats_t* s0p = mt_stats();
  const int64_t arenas0 = s0p->arena_count.total, reserved0 = s0p->reserved.current;
  mi_arena_id_t id = -7;
  const int err = mi_reserve_os_memory_ex(64 * MiB, commit, false, true, &id);
  CHECK_EQ(err, 0);
  CHECK_MSG(id > 0 && id <= 132, "arena id %d", id);
  const mi_stats_t* s1 = mt_stats();
  CHECK_EQ(s1->arena_count.total, arenas0 + 1);
  CHECK_MSG(s1->reserved.current >= reserved0 + (int64_t)(64 * MiB), "reserved grew by %lld bytes", (long long)(s1->reserved.current - reserved0));
  size_t size = 0;
  uint8_t* start = (uint8_t*)mi_arena_area(id, &size);
  CHECK(start != NULL);
  CHECK_EQ(size, 64 * MiB);
  CHECK_ALIGNED(start, MT_ARENA_BLOCK_SIZE);
  if (!commit && start != NULL) {
    mt_mapping_t m;
    CHECK(mt_maps_find(start + 32 * MiB, false, &m));
    CHECK_MSG(strncmp(m.perms, "---", 3) == 0, "an uncommitted arena is %s before use", m.perms);
  }
  exercise(id, true, commit ? "reserve(commit)" : "reserve(no commit)");
  if (!commit && start != NULL) {
    /* used and committed blocks are accessible */
    mi_heap_t* heap = mi_heap_new_in_arena(id);
    void* p = (heap != NULL ? mi_heap_malloc(heap, 1000) : NULL);
    CHECK(p != NULL);
    mt_mapping_t m;
    CHECK(p != NULL && mt_maps_find(p, false, &m) && strncmp(m.perms, "rw", 2) == 0);
    mi_free(p);
    if (heap != NULL) mi_heap_delete(heap);
  }
  return test_summary(commit ? "mem-arena exclusive" : "mem-arena nocommit", "arena %d at %p", id, (void*)start);
}

static int rounding_mode(void) {
  mi_arena_id_t id = 0;
  CHECK_EQ(mi_reserve_os_memory_ex(5 * MiB + 1, true, false, true, &id), 0);
  size_t size = 0;
  void* start = mi_arena_area(id, &size);
  CHECK(start != NULL);
  CHECK_EQ(size, 8 * MiB);
  CHECK_ALIGNED(start, MT_ARENA_BLOCK_SIZE);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  void* p = (heap != NULL ? mi_heap_malloc(heap, 6 * MiB) : NULL);   /* 2 blocks */
  CHECK(p != NULL && mt_in_range(p, 6 * MiB, start, size));
  if (p != NULL) memset(p, 1, 6 * MiB);
  errno = 0;
  void* p2 = (heap != NULL ? mi_heap_malloc(heap, 1 * MiB) : NULL);  /* nothing left */
  CHECK(p2 == NULL && errno == ENOMEM);
  mi_free(p);
  if (heap != NULL) mi_heap_delete(heap);
  check_show(id, 2, true, 0, "8 MiB arena");
  return test_summary("mem-arena rounding", NULL);
}

static int shared_mode(void) {
  const int64_t arenas0 = mt_stats()->arena_count.total;
  const int before = last_arena_id();
  CHECK_EQ(mi_reserve_os_memory(40 * MiB, true, false), 0);
  CHECK_EQ(mt_stats()->arena_count.total, arenas0 + 1);
  const int id = last_arena_id();
  CHECK_EQ(id, before + 1);
  size_t size = 0;
  void* start = mi_arena_area(id, &size);
  CHECK(start != NULL);
  CHECK_EQ(size, 40 * MiB);
  check_show(id, 10, false, 0, "shared arena");
  /* a heap bound to a shared arena allocates in it too */
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  void* p = (heap != NULL ? mi_heap_malloc(heap, 2000) : NULL);
  CHECK(p != NULL && mt_in_range(p, 2000, start, size));
  mi_free(p);
  if (heap != NULL) mi_heap_delete(heap);
  return test_summary("mem-arena shared", "arena %d", id);
}

static int manage_mode(void) {
  const size_t len = 44 * MiB;
  uint8_t* region = (uint8_t*)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(region != MAP_FAILED);
  if (region == MAP_FAILED) return test_summary("mem-arena manage", "mmap failed");
  /* an unaligned start */
  uint8_t* ustart = region + 4096;
  if (((uintptr_t)ustart % MT_ARENA_BLOCK_SIZE) == 0) ustart += 4096;
  const size_t usize = 40 * MiB;
  const uintptr_t astart = ((uintptr_t)ustart + MT_ARENA_BLOCK_SIZE - 1) & ~(uintptr_t)(MT_ARENA_BLOCK_SIZE - 1);
  const size_t expect = (((uintptr_t)ustart + usize - astart) / MT_ARENA_BLOCK_SIZE) * MT_ARENA_BLOCK_SIZE;
  const int64_t arenas0 = mt_stats()->arena_count.total;
  mi_arena_id_t id = -7;
  CHECK(mi_manage_os_memory_ex(ustart, usize, true, false, false, -1, true, &id));
  CHECK(id > 0);
  CHECK_EQ(mt_stats()->arena_count.total, arenas0 + 1);
  size_t size = 0;
  uint8_t* start = (uint8_t*)mi_arena_area(id, &size);
  CHECK_PTR_EQ(start, (void*)astart);
  CHECK_EQ(size, expect);
  CHECK(start >= ustart && start + size <= ustart + usize);
  exercise(id, true, "manage");
  /* the memory outside the area was never touched by the library */
  CHECK(mt_is_zero(region, (size_t)(start - region)));
  return test_summary("mem-arena manage", "area %zu MiB of %zu MiB given", size / MiB, usize / MiB);
}

static int manage_small_mode(void) {
  const size_t len = 16 * MiB;
  uint8_t* region = (uint8_t*)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(region != MAP_FAILED);
  if (region == MAP_FAILED) return test_summary("mem-arena manage-small", "mmap failed");
  uint8_t* a = (uint8_t*)(((uintptr_t)region + MT_ARENA_BLOCK_SIZE - 1) & ~(uintptr_t)(MT_ARENA_BLOCK_SIZE - 1));
  if (a == region) a += MT_ARENA_BLOCK_SIZE;   /* room before it */
  const int64_t arenas0 = mt_stats()->arena_count.total;
  mi_arena_id_t id = -7;
  CHECK(!mi_manage_os_memory_ex(a - 4096, 4 * MiB, true, false, false, -1, true, &id));   /* straddles */
  CHECK_EQ(id, 0);
  id = -7;
  CHECK(!mi_manage_os_memory_ex(a, 4 * MiB - 4096, true, false, false, -1, true, &id));   /* short */
  CHECK_EQ(id, 0);
  CHECK(!mi_manage_os_memory(a, 3 * MiB, true, false, false, -1));
  CHECK(!mi_manage_os_memory(a + 1, 4 * MiB, true, false, false, -1));
  id = -7;
  CHECK(!mi_manage_os_memory_ex(NULL, 8 * MiB, true, false, false, -1, true, &id));
  CHECK_EQ(id, 0);
  CHECK_EQ(mt_stats()->arena_count.total, arenas0);
  /* exactly one block */
  id = -7;
  CHECK(mi_manage_os_memory_ex(a, 4 * MiB, true, false, false, -1, true, &id));
  CHECK(id > 0);
  size_t size = 0;
  CHECK_PTR_EQ(mi_arena_area(id, &size), a);
  CHECK_EQ(size, 4 * MiB);
  CHECK_EQ(mt_stats()->arena_count.total, arenas0 + 1);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  void* p = (heap != NULL ? mi_heap_malloc(heap, 100) : NULL);
  CHECK(p != NULL && mt_in_range(p, 100, a, 4 * MiB));
  mi_free(p);
  if (heap != NULL) mi_heap_delete(heap);
  return test_summary("mem-arena manage-small", NULL);
}

static int manage_uncommitted_mode(void) {
  const size_t len = 44 * MiB;
  uint8_t* region = (uint8_t*)mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(region != MAP_FAILED);
  if (region == MAP_FAILED) return test_summary("mem-arena manage-uncommitted", "mmap failed");
  mi_arena_id_t id = 0;
  CHECK(mi_manage_os_memory_ex(region, len, false, false, true, -1, true, &id));
  exercise(id, true, "manage(uncommitted)");
  return test_summary("mem-arena manage-uncommitted", NULL);
}

static int manage_pinned_mode(void) {
  const size_t len = 44 * MiB;
  uint8_t* region = (uint8_t*)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(region != MAP_FAILED);
  if (region == MAP_FAILED) return test_summary("mem-arena manage-pinned", "mmap failed");
  mi_arena_id_t id = 0;
  CHECK(mi_manage_os_memory_ex(region, len, true, true, false, -1, true, &id));
  arena_show_t a;
  show_arena(id, &a);
  CHECK_MSG(a.found && strstr(a.header, "pinned") != NULL, "pinned arena header: \"%s\"", a.header);
  CHECK_MSG(a.found && count_char(a.committed, 'x') == strlen(a.committed) && strlen(a.committed) > 0, "pinned arena: committed row \"%s\"", a.committed);
  mi_collect(true);   /* nothing of ours left to purge */
  const int64_t purged0 = mt_stats()->purged.total;
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap != NULL) {
    void* ps[200];
    for (int i = 0; i < 200; i++) { ps[i] = mi_heap_malloc(heap, 1000); CHECK(ps[i] != NULL); if (ps[i]) memset(ps[i], 7, 1000); }
    void* big = mi_heap_malloc(heap, 6 * MiB);
    CHECK(big != NULL);
    void* large = mi_heap_malloc(heap, 1 * MiB);
    CHECK(large != NULL);
    for (int i = 1; i < 200; i++) mi_free(ps[i]);
    mi_free(big);
    mi_free(large);
    mi_heap_collect(heap, true);
    mi_collect(true);
    CHECK_MSG(mt_stats()->purged.total == purged0, "memory of a pinned arena was purged (%lld bytes)", (long long)(mt_stats()->purged.total - purged0));
    void* z = mi_heap_zalloc(heap, 6 * MiB);
    CHECK(z != NULL && mt_is_zero(z, 6 * MiB));
    mi_free(z);
    mi_free(ps[0]);
    mi_heap_delete(heap);
  }
  exercise(id, true, "manage(pinned)");
  return test_summary("mem-arena manage-pinned", NULL);
}

static int manage_file_mode(bool purge) {
  char path[256];
  const char* dir = getenv("TMPDIR");
  snprintf(path, sizeof(path), "%s/mem-arena-XXXXXX", (dir != NULL && dir[0] != 0 ? dir : "/tmp"));
  int fd = mkstemp(path);
  CHECK_MSG(fd >= 0, "mkstemp(%s) failed", path);
  if (fd < 0) return test_summary("mem-arena manage-file", "no temporary file");
  unlink(path);
  const size_t len = 32 * MiB;
  CHECK_EQ(ftruncate(fd, (off_t)len), 0);
  uint8_t* map = (uint8_t*)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(map != MAP_FAILED);
  if (map == MAP_FAILED) { close(fd); return test_summary("mem-arena manage-file", "mmap failed"); }
  mi_arena_id_t id = 0;
  CHECK(mi_manage_os_memory_ex(map, len, true, false, true, -1, true, &id));
  size_t size = 0;
  uint8_t* start = (uint8_t*)mi_arena_area(id, &size);
  CHECK(start != NULL && size >= 12 * MiB);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap == NULL || start == NULL) { close(fd); return test_summary("mem-arena manage-file", "no heap"); }

  /* blocks written through the heap are in the file */
  static const size_t sizes[] = { 48, 3000, 100 * KiB, 1 * MiB };
  for (size_t i = 0; i < 4; i++) {
    uint8_t* p = (uint8_t*)mi_heap_malloc(heap, sizes[i]);
    CHECK(p != NULL && mt_in_range(p, sizes[i], start, size));
    if (p == NULL) continue;
    memset(p, 0x60 + (int)i, sizes[i]);
    CHECK_EQ(msync((void*)((uintptr_t)p & ~(uintptr_t)4095), sizes[i] + 4096, MS_SYNC), 0);
    uint8_t buf[4096];
    const size_t n = (sizes[i] < sizeof(buf) ? sizes[i] : sizeof(buf));
    CHECK_EQ(pread(fd, buf, n, (off_t)(p - map)), (ssize_t)n);
    CHECK_MSG(mt_is_filled(buf, n, (uint8_t)(0x60 + i)), "block of %zu bytes: the file does not hold what was written", sizes[i]);
    mi_free(p);
  }

  /* zero-initialised blocks: dirty everything, free (an anchor keeps the small segment), with
     `purge` run every purge (MADV_DONTNEED does not zero a shared file mapping: the memory
     must be cleared like any dirty memory), else reuse without purging (run with
     MIMALLOC_PURGE_DELAY=-1) */
  if (purge) CHECK_EQ(mi_option_get(mi_option_purge_delay), 10);
  else CHECK_EQ(mi_option_get(mi_option_purge_delay), -1);
  for (int round = 0; round < 3; round++) {
    void* anchor = mi_heap_malloc(heap, 64);
    enum { N = 2000 };
    static void* ps[N];
    for (int i = 0; i < N; i++) { ps[i] = mi_heap_malloc(heap, 1024); if (ps[i] != NULL) memset(ps[i], 0xE7, 1024); }
    void* large = mi_heap_malloc(heap, 1 * MiB);
    void* huge = mi_heap_malloc(heap, 5 * MiB);
    CHECK(anchor != NULL && large != NULL && huge != NULL);
    if (large != NULL) memset(large, 0xE7, 1 * MiB);
    if (huge != NULL) memset(huge, 0xE7, 5 * MiB);
    for (int i = 0; i < N; i++) mi_free(ps[i]);
    mi_free(large);
    mi_free(huge);
    mi_heap_collect(heap, true);
    if (purge) mi_collect(true);   /* every purge, now */
    size_t bad = 0;
    for (int i = 0; i < N; i++) {
      ps[i] = mi_heap_zalloc(heap, 1024);
      if (ps[i] == NULL || !mt_is_zero(ps[i], 1024)) bad++;
    }
    CHECK_MSG(bad == 0, "round %d: %zu of %d mi_heap_zalloc(1024) blocks in the file-backed arena were not zero%s", round, bad, N, purge ? " after a purge" : "");
    uint8_t* l = (uint8_t*)mi_heap_zalloc(heap, 1 * MiB);
    CHECK_MSG(l != NULL && mt_is_zero(l, 1 * MiB), "round %d: mi_heap_zalloc(1 MiB) in the file-backed arena not zero after a purge (first non-zero byte %zu)", round, l ? mt_first_nonzero(l, 1 * MiB) : 0);
    uint8_t* h = (uint8_t*)mi_heap_calloc(heap, 1, 5 * MiB);
    CHECK_MSG(h != NULL && mt_is_zero(h, 5 * MiB), "round %d: mi_heap_calloc(5 MiB) in the file-backed arena not zero after a purge (first non-zero byte %zu)", round, h ? mt_first_nonzero(h, 5 * MiB) : 0);
    for (int i = 0; i < N; i++) mi_free(ps[i]);
    mi_free(l);
    mi_free(h);
    mi_free(anchor);
  }
  mi_heap_delete(heap);
  close(fd);
  return test_summary(purge ? "mem-arena pending-file-zero" : "mem-arena manage-file", "arena %zu MiB", size / MiB);
}

static int unknown_mode(void) {
  static const int ids[] = { 0, -1, 133, 1000, 131 };   /* 131: a slot nobody took */
  for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
    size_t size = 12345;
    CHECK_MSG(mi_arena_area(ids[i], &size) == NULL, "mi_arena_area(%d) not NULL", ids[i]);
    CHECK_EQ(size, 0);
    CHECK(mi_arena_area(ids[i], NULL) == NULL);
    if (ids[i] != 0) {   /* 0 = no specific arena */
      mi_heap_t* h = mi_heap_new_in_arena(ids[i]);
      CHECK_MSG(h == NULL, "mi_heap_new_in_arena(%d) = %p", ids[i], (void*)h);
      if (h != NULL) mi_heap_delete(h);
    }
  }
  /* id 0: an ordinary heap */
  mi_heap_t* h0 = mi_heap_new_in_arena(0);
  CHECK(h0 != NULL);
  if (h0 != NULL) {
    void* p = mi_heap_malloc(h0, 100);
    CHECK(p != NULL);
    mi_free(p);
    mi_heap_delete(h0);
  }
  return test_summary("mem-arena unknown", NULL);
}

/* pending-reclaim: after mi_heap_delete of a heap whose exclusive arena is full, a new heap of
   the arena must be able to use the free pages of the abandoned small segment at once. */
static int pending_reclaim_mode(void) {
  mi_arena_id_t id = 0;
  CHECK_EQ(mi_reserve_os_memory_ex(36 * MiB, true, false, true, &id), 0);   /* 9 blocks */
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap == NULL) return test_summary("mem-arena pending-reclaim", "no heap");
  void* b[5];
  b[0] = mi_heap_malloc(heap, 16);          /* small segment: 1 block */
  b[1] = mi_heap_malloc(heap, 100 * KiB);   /* medium segment: 1 block */
  b[2] = mi_heap_malloc(heap, 1 * MiB);     /* large segment: 1 block */
  b[3] = mi_heap_malloc(heap, 10 * MiB);    /* huge: 3 blocks */
  b[4] = mi_heap_malloc(heap, 10 * MiB);    /* huge: 3 blocks: the arena is full */
  for (int i = 0; i < 5; i++) CHECK(b[i] != NULL);
  mi_heap_delete(heap);
  mi_heap_t* heap2 = mi_heap_new_in_arena(id);
  CHECK(heap2 != NULL);
  errno = 0;
  void* q = (heap2 != NULL ? mi_heap_malloc(heap2, 5000) : NULL);
  CHECK_MSG(q != NULL, "the first small allocation of a new heap of the full arena failed (errno %d) although the abandoned small segment has free pages", errno);
  void* q2 = (heap2 != NULL ? mi_heap_malloc(heap2, 5000) : NULL);
  CHECK(q2 != NULL);
  mi_free(q); mi_free(q2);
  for (int i = 0; i < 5; i++) mi_free(b[i]);
  if (heap2 != NULL) mi_heap_delete(heap2);
  return test_summary("mem-arena pending-reclaim", NULL);
}

/* pending-errno: a successful allocation leaves errno unchanged (include/mimalloc.h, section 5),
   also when an internal attempt failed first (here: a new segment in the full exclusive arena,
   before the abandoned one is reclaimed). */
static int pending_errno_mode(void) {
  mi_arena_id_t id = 0;
  CHECK_EQ(mi_reserve_os_memory_ex(24 * MiB, true, false, true, &id), 0);   /* 6 blocks */
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap == NULL) return test_summary("mem-arena pending-errno", "no heap");
  void* small = mi_heap_malloc(heap, 16);
  void* medium = mi_heap_malloc(heap, 100 * KiB);
  void* huge = mi_heap_malloc(heap, 14 * MiB);   /* 4 blocks: the arena is full */
  CHECK(small != NULL && medium != NULL && huge != NULL);
  mi_heap_delete(heap);
  mi_heap_t* heap2 = mi_heap_new_in_arena(id);
  CHECK(heap2 != NULL);
  errno = 0;
  void* q = (heap2 != NULL ? mi_heap_malloc(heap2, 5000) : NULL);
  const int err = errno;
  CHECK(q != NULL);
  CHECK_MSG(q == NULL || err == 0, "mi_heap_malloc succeeded (%p) but set errno to %d", q, err);
  mi_free(q); mi_free(small); mi_free(medium); mi_free(huge);
  if (heap2 != NULL) mi_heap_delete(heap2);
  return test_summary("mem-arena pending-errno", NULL);
}

static void fill_pattern(uint8_t* p, size_t from, size_t to, uint8_t seed) {
  for (size_t i = from; i < to; i++) p[i] = (uint8_t)(seed + i * 7 + (i >> 12));
}
static size_t check_pattern(const uint8_t* p, size_t from, size_t to, uint8_t seed) {
  for (size_t i = from; i < to; i++) {
    if (p[i] != (uint8_t)(seed + i * 7 + (i >> 12))) return i;
  }
  return SIZE_MAX;
}

static int realloc_grow_mode(bool commit) {
  mi_option_set(mi_option_purge_delay, -1);   /* freed blocks stay dirty */
  mi_arena_id_t id = 0;
  CHECK_EQ(mi_reserve_os_memory_ex(64 * MiB, commit, false, true, &id), 0);
  mi_heap_t* heap = mi_heap_new_in_arena(id);
  CHECK(heap != NULL);
  if (heap == NULL) return test_summary("mem-arena realloc-grow", "no heap");
  const int64_t huge0 = mt_stats()->malloc_huge.current;

  /* rezalloc over dirty memory: a (blocks 0) is zero; d (the blocks after it) is written and
     freed; growing a in place must zero what d left */
  uint8_t* a = (uint8_t*)mi_heap_zalloc(heap, 3 * MiB);
  uint8_t* d = (uint8_t*)mi_heap_malloc(heap, 9 * MiB);
  CHECK(a != NULL && d != NULL);
  if (a == NULL || d == NULL) return test_summary("mem-arena realloc-grow", "allocation failed");
  CHECK_MSG(d > a, "d %p after a %p", (void*)d, (void*)a);
  memset(d, 0xAB, 9 * MiB);
  mi_free(d);
  uint8_t* z = (uint8_t*)mi_heap_rezalloc(heap, a, 10 * MiB);
  CHECK_PTR_EQ(z, a);
  CHECK_MSG(z != NULL && mt_is_zero(z, 10 * MiB), "rezalloc grown in place: not all zero");
  mi_free(z);

  /* realloc: in place while the blocks after it are free, moving when they are not */
  uint8_t* p = (uint8_t*)mi_heap_malloc(heap, 6 * MiB);
  CHECK(p != NULL);
  if (p == NULL) return test_summary("mem-arena realloc-grow", "allocation failed");
  fill_pattern(p, 0, 6 * MiB, 1);
  uint8_t* q = (uint8_t*)mi_heap_realloc(heap, p, 14 * MiB);
  CHECK_PTR_EQ(q, p);
  CHECK_GE(mi_usable_size(q), 14 * MiB);
  CHECK_EQ(check_pattern(q, 0, 6 * MiB, 1), SIZE_MAX);
  fill_pattern(q, 6 * MiB, 14 * MiB, 1);   /* all of it writable (committed) */
  uint8_t* b = (uint8_t*)mi_heap_malloc(heap, 5 * MiB);   /* right after q: in the way */
  CHECK(b != NULL && b > q);
  uint8_t* r = (uint8_t*)mi_heap_realloc(heap, q, 30 * MiB);
  CHECK(r != NULL && r != q);
  if (r != NULL) {
    CHECK_EQ(check_pattern(r, 0, 14 * MiB, 1), SIZE_MAX);
    fill_pattern(r, 14 * MiB, 30 * MiB, 1);
  }
  mi_free(b);
  /* r (blocks 6..13 of 16) grows in place to the arena's end, although the blocks before it
     are free now: growing beats moving */
  uint8_t* s2 = (uint8_t*)mi_heap_realloc(heap, r, 38 * MiB);
  CHECK_PTR_EQ(s2, r);
  if (s2 != NULL) {
    CHECK_EQ(check_pattern(s2, 0, 30 * MiB, 1), SIZE_MAX);
    fill_pattern(s2, 30 * MiB, 38 * MiB, 1);
    CHECK_EQ(check_pattern(s2, 0, 38 * MiB, 1), SIZE_MAX);
    mi_free(s2);
  }
  else mi_free(r);
  CHECK_EQ(mt_stats()->malloc_huge.current, huge0);
  mi_heap_delete(heap);
  return test_summary(commit ? "mem-arena realloc-grow" : "mem-arena realloc-grow-nocommit", "arena %d", id);
}

/* Arenas reserved on demand are released when entirely free (all but the first) and mapped
   again when needed: the address space follows the memory in use. 3 GiB in 64 MiB blocks
   (never touched) take arenas beyond the first; once freed, after the arena purge delay and
   some allocator activity, the address space is back within 64 MiB of the start (the first
   arena stays), mi_debug_show_arenas says "released", and the same allocations again reuse the
   released arenas' slots (no new arena is created). With `keep` (PURGE_DELAY=-1) nothing is
   released. */
static int release_mode(bool keep) {
  enum { N = 48 };
  static void* blocks[N];
  mt_activity(1000);   /* the first arena exists */
  const size_t vsz0 = mt_vsz();
  size_t created = 0;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < N; i++) {
      blocks[i] = mi_malloc(64 * MiB);
      CHECK(blocks[i] != NULL);
      if (blocks[i] != NULL) ((volatile char*)blocks[i])[0] = (char)i;
    }
    const size_t vsz1 = mt_vsz();
    const size_t arenas = (size_t)mt_stats()->arena_count.total;
    CHECK_MSG(vsz1 >= vsz0 + 2 * GiB, "round %d: address space only +%.0f MiB for 3 GiB", round, mt_mib_diff(vsz1, vsz0));
    for (int i = 0; i < N; i++) {
      if (blocks[i] != NULL) CHECK_EQ(((volatile char*)blocks[i])[0], (char)i);
      mi_free(blocks[i]);
    }
    const long delay = mi_option_get(mi_option_purge_delay) * mi_option_get(mi_option_arena_purge_mult);
    for (int k = 0; k < 3; k++) { mt_sleep_ms(delay > 0 ? 2 * delay + 20 : 20); mt_activity(2000); }
    const size_t vsz2 = mt_vsz();
    printf("round %d: address space start %.0f MiB, with 3 GiB +%.0f MiB, freed +%.0f MiB; arenas created %zu\n",
           round, mt_mib(vsz0), mt_mib_diff(vsz1, vsz0), mt_mib_diff(vsz2, vsz0), arenas);
    if (keep) CHECK_MSG(vsz2 >= vsz0 + 2 * GiB, "round %d: arenas released although PURGE_DELAY=-1", round);
    else CHECK_MSG(vsz2 <= vsz0 + 64 * MiB, "round %d: address space +%.0f MiB after all was freed", round, mt_mib_diff(vsz2, vsz0));
    if (round == 0) created = arenas;
    else CHECK_MSG(arenas == created, "arenas created: %zu in the first round, %zu after the second", created, arenas);
  }
  static mt_capture_t cap;
  mt_capture_reset(&cap);
  mi_register_output(&mt_capture_out, &cap);
  mi_debug_show_arenas();
  mi_register_output(NULL, NULL);
  CHECK_MSG((mt_count(cap.text, "released") > 0) == !keep, "mi_debug_show_arenas:\n%s", cap.text);
  return test_summary(keep ? "mem-arena release-keep" : "mem-arena release", NULL);
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "exclusive");
  if (strcmp(mode, "exclusive") == 0) return reserve_mode(true);
  if (strcmp(mode, "nocommit") == 0) return reserve_mode(false);
  if (strcmp(mode, "rounding") == 0) return rounding_mode();
  if (strcmp(mode, "shared") == 0) return shared_mode();
  if (strcmp(mode, "manage") == 0) return manage_mode();
  if (strcmp(mode, "manage-small") == 0) return manage_small_mode();
  if (strcmp(mode, "manage-uncommitted") == 0) return manage_uncommitted_mode();
  if (strcmp(mode, "manage-pinned") == 0) return manage_pinned_mode();
  if (strcmp(mode, "manage-file") == 0) return manage_file_mode(false);
  if (strcmp(mode, "pending-file-zero") == 0) return manage_file_mode(true);
  if (strcmp(mode, "pending-reclaim") == 0) return pending_reclaim_mode();
  if (strcmp(mode, "pending-errno") == 0) return pending_errno_mode();
  if (strcmp(mode, "unknown") == 0) return unknown_mode();
  if (strcmp(mode, "realloc-grow") == 0) return realloc_grow_mode(true);
  if (strcmp(mode, "realloc-grow-nocommit") == 0) return realloc_grow_mode(false);
  if (strcmp(mode, "release") == 0) return release_mode(false);
  if (strcmp(mode, "release-keep") == 0) return release_mode(true);
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
