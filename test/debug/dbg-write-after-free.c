/* SPDX-License-Identifier: MIT */
/* Writes into freed blocks (EFAULT), found when the block is about to be handed out again.

   Setup (default heap, size 40: 64-byte blocks, a class nothing else here uses): 200 live blocks with distinct patterns, then p = mi_malloc(40) freed,
   then the write into the freed p, then mi_malloc(40) until the allocation that takes p
   (found by address, or up to 5000 allocations).
   Cases:
     data        a byte at offset 20 (beyond the link word):
                 "block <p> (size 64) was written after it was freed (at offset 20)";
                 p is handed out anyway (with a callback), its bytes are not trusted
     data-end    the last byte of the block (offset 63: the guard word of the block after it,
                 checked as this block's when it is handed out)
     link        the first word (the free-list link) set to 0x4141414141414141:
                 "corrupted free list: free block <p> (size 64) links to 0x4141414141414141,
                 not a block of its page (written after it was freed?)"; the page's free
                 lists are dropped: p and the blocks after it are never handed out
     link-byte   only the lowest byte of the link changed (xor 0x55): links to q ^ 0x55
     remote-CASE the same, with q and p freed by another thread (they are on the page's
                 thread-free list until the owner collects it; debug-pending for the link
                 cases: collecting that list follows the damaged link)
   In callback mode the program goes on and checks: the live blocks still hold their patterns,
   the allocations after the report succeed and never return a live block (nor p after a
   corrupted link), and the heap still works. In default mode EFAULT aborts at the allocation
   that finds the damage (the last step line is "realloc"). */
#include "dbg.h"

#include <pthread.h>

#define LIVE   200
#define TRIES  5000
#define SIZE   40

static void* live[LIVE];
static void* got[TRIES];

static void* thread_free(void* arg) {
  mi_free(arg);
  return NULL;
}

static void free_in_thread(void* p) {
  pthread_t t;
  DBG_CHECK(pthread_create(&t, NULL, &thread_free, p) == 0);
  pthread_join(t, NULL);
}

int main(int argc, char** argv) {
  const char* c = dbg_setup(argc, argv);
  enum { DATA, DATA_END, LINK, LINK_BYTE } kind;
  const bool remote = (strncmp(c, "remote-", 7) == 0);
  if (remote) c += 7;
  if (strcmp(c, "data") == 0) kind = DATA;
  else if (strcmp(c, "data-end") == 0) kind = DATA_END;
  else if (strcmp(c, "link") == 0) kind = LINK;
  else if (strcmp(c, "link-byte") == 0) kind = LINK_BYTE;
  else return dbg_unknown_case(c);

  for (int i = 0; i < LIVE; i++) {
    live[i] = mi_malloc(SIZE);
    DBG_CHECK(live[i] != NULL);
    dbg_fill(live[i], SIZE, (uint32_t)i);
  }
  void* q = mi_malloc(SIZE);   /* freed before p: p's link points to q */
  uint8_t* p = (uint8_t*)mi_malloc(SIZE);
  DBG_CHECK(p != NULL && q != NULL);
  dbg_var_ptr("p", p);
  dbg_var_ptr("q", q);
  dbg_fill(p, SIZE, 12345);
  uintptr_t old_link = 0;
  if (remote) free_in_thread(q); else mi_free(q);
  if (remote) free_in_thread(p); else mi_free(p);
  DBG_CHECK(*(void* volatile*)dbg_launder(p) == q);
  dbg_step("write");
  volatile uint8_t* v = (volatile uint8_t*)dbg_launder(p);
  switch (kind) {
    case DATA:      v[20] = 'x'; break;
    case DATA_END:  v[63] = (uint8_t)(v[63] ^ 0xFF); break;
    case LINK:      old_link = *(volatile uintptr_t*)v; *(volatile uintptr_t*)v = (uintptr_t)0x4141414141414141ULL; break;
    case LINK_BYTE: old_link = *(volatile uintptr_t*)v; v[0] = (uint8_t)(v[0] ^ 0x55); break;
  }
  dbg_var_ptr("link", (void*)(*(volatile uintptr_t*)v));
  (void)old_link;

  dbg_step("realloc");
  size_t n = 0;
  bool got_p = false;
  int errors_before = dbg_error_count();
  size_t reported_at = TRIES;
  for (; n < TRIES; n++) {
    got[n] = mi_malloc(SIZE);
    DBG_CHECK_MSG(got[n] != NULL, "allocation %zu failed", n);
    if (got[n] == NULL) break;
    if (reported_at == TRIES && dbg_error_count() > errors_before) reported_at = n;
    if (got[n] == p) { got_p = true; n++; break; }
    if (reported_at < TRIES && n >= reported_at + 500) { n++; break; }   /* enough after the report */
  }
  dbg_step("after");
  dbg_var_size("reported", (reported_at == TRIES ? (size_t)0 : 1));
  if (kind == DATA) {
    /* p itself is handed out: that allocation reported */
    DBG_CHECK(got_p);
    DBG_CHECK(reported_at == n - 1);
  }
  else if (kind == DATA_END) {
    /* p's last 4 bytes are the guard of the block after it: whichever of the two is handed
       out first reports the write (as one into p, which is free) */
    DBG_CHECK(got_p);
    DBG_CHECK(reported_at <= n - 1);
  }
  else {
    /* p and its free list are dropped: never handed out */
    DBG_CHECK(!got_p);
    DBG_CHECK(reported_at < TRIES);
  }
  /* nothing handed out twice, no live block handed out, the live blocks are intact */
  for (size_t i = 0; i < n; i++) dbg_fill(got[i], SIZE, 100000u + (uint32_t)i);
  DBG_CHECK(dbg_all_distinct(got, n, SIZE));
  for (size_t i = 0; i < n; i++) {
    for (int j = 0; j < LIVE; j++) DBG_CHECK_MSG(got[i] != live[j], "live block %p handed out again", live[j]);
  }
  for (int j = 0; j < LIVE; j++) DBG_CHECK_MSG(dbg_check_fill(live[j], SIZE, (uint32_t)j), "live block %d (%p) lost its pattern", j, live[j]);
  for (size_t i = 0; i < n; i++) DBG_CHECK_MSG(dbg_check_fill(got[i], SIZE, 100000u + (uint32_t)i), "block %zu (%p) lost its pattern", i, got[i]);
  /* more allocations of the size and others: never a live block */
  void* avoid[LIVE + TRIES];
  size_t navoid = 0;
  for (int j = 0; j < LIVE; j++) avoid[navoid++] = live[j];
  for (size_t i = 0; i < n; i++) avoid[navoid++] = got[i];
  static const size_t sizes[] = { SIZE, 40, 16, 100 };
  dbg_heap_works(4000, sizes, sizeof(sizes) / sizeof(sizes[0]), avoid, navoid);
  for (size_t i = 0; i < n; i++) mi_free(got[i]);
  for (int j = 0; j < LIVE; j++) mi_free(live[j]);
  dbg_heap_works(4000, sizes, sizeof(sizes) / sizeof(sizes[0]), NULL, 0);
  return dbg_finish();
}
