/* SPDX-License-Identifier: MIT */
/* Tracking builds: telling a memory checker about every block, so that it reports the
   program's heap errors at the faulting instruction (docs/tracking.md).

   MI_TRACK_VALGRIND  Valgrind's memcheck, through client requests (valgrind/memcheck.h; each
                      costs a few instructions when the program does not run under Valgrind).
   MI_TRACK_ASAN      AddressSanitizer: the allocator writes ASan's shadow memory itself, with
                      ASan's own heap codes (track.c), so ASan classifies an access as a
                      heap-buffer-overflow or a heap-use-after-free. The library itself is not
                      instrumented; the program that links it is.

   What the tool sees, in both: a block handed out for `size` bytes at p is accessible on
   [p, p+size) (defined when zeroed) and nothing else of its block is; a freed block, and every
   part of a page that holds no live block, is not accessible. The allocator's own reads and
   writes of free blocks (free-list links, mi_block_next) open the link word for the access in
   Valgrind builds (memcheck checks the allocator's code too; ASan does not instrument it).
   Tracking builds carry the debug build's padding record (MI_PADDING, types.h): it holds the
   requested size, which is what mi_usable_size returns there, so a program never uses bytes the
   tool considers out of bounds. The segment metadata is not marked (the allocator touches it
   on every call); the room before a page's first block (MI_PADDING_GUARD_ROOM) stays
   inaccessible, so an underflow of that block does not reach it unreported.

   None of this exists in other builds: every macro below is empty there. */
#pragma once

/* A page's first block, as its descriptor holds it. Valgrind builds keep it with the top bit
   flipped: memcheck's leak check takes any word of defined memory that points to a block's
   start for a reference to it, so the first block of every page would never be reported as
   leaked (the descriptor would keep it "still reachable"). */
#if MI_TRACK_VALGRIND
#define MI_TRACK_HIDE  ((uintptr_t)1 << 63)
#else
#define MI_TRACK_HIDE  ((uintptr_t)0)
#endif
#define mi_page_start(page)          ((uint8_t*)((uintptr_t)(page)->page_start_ ^ MI_TRACK_HIDE))
#define mi_page_set_start(page, p)   ((page)->page_start_ = (uint8_t*)((uintptr_t)(p) ^ MI_TRACK_HIDE))

#if MI_TRACK_VALGRIND && MI_TRACK_ASAN
#error "choose one of MI_TRACK_VALGRIND and MI_TRACK_ASAN"
#endif

#if MI_TRACK_VALGRIND
#include <valgrind/memcheck.h>
/* a block of `size` bytes at p is handed out (defined when zero) */
#define mi_track_malloc(p, size, zero)    VALGRIND_MALLOCLIKE_BLOCK((p), (size), 0, (zero))
/* the live block at p (as handed out) is freed; false if the tool says it was not live
   (memcheck then reported the invalid free) */
#define mi_track_free(p)                  _mi_track_free(p)
/* the live block at p now serves `newsize` bytes instead of `oldsize` (in place) */
#define mi_track_resize(p, oldsize, newsize)  VALGRIND_RESIZEINPLACE_BLOCK((p), (oldsize), (newsize), 0)
#define mi_track_mem_defined(p, size)     VALGRIND_MAKE_MEM_DEFINED((p), (size))
#define mi_track_mem_undefined(p, size)   VALGRIND_MAKE_MEM_UNDEFINED((p), (size))
#define mi_track_mem_noaccess(p, size)    VALGRIND_MAKE_MEM_NOACCESS((p), (size))
/* the allocator's own access to a word of a free block */
#define mi_track_open(p, size)            VALGRIND_MAKE_MEM_DEFINED((p), (size))
#define mi_track_close(p, size)           VALGRIND_MAKE_MEM_NOACCESS((p), (size))
#elif MI_TRACK_ASAN
#define mi_track_malloc(p, size, zero)    _mi_track_asan_malloc((p), (size))
#define mi_track_free(p)                  _mi_track_free(p)
#define mi_track_resize(p, oldsize, newsize)  _mi_track_asan_resize((p), (oldsize), (newsize))
#define mi_track_mem_defined(p, size)     _mi_track_asan_open((p), (size))
#define mi_track_mem_undefined(p, size)   _mi_track_asan_open((p), (size))
#define mi_track_mem_noaccess(p, size)    _mi_track_asan_close((p), (size))
#define mi_track_open(p, size)            ((void)(p), (void)(size))
#define mi_track_close(p, size)           ((void)(p), (void)(size))
#endif

#if MI_TRACK_VALGRIND || MI_TRACK_ASAN
#define MI_TRACK_ENABLED  1
/* track.c (page.h includes this) */
bool _mi_track_free(void* p);
void _mi_track_block_alloc(const mi_page_t* page, mi_block_t* block, size_t size, bool zero);
void _mi_track_block_change(const mi_page_t* page, mi_block_t* block, void* oldp, size_t oldsize, void* p, size_t newsize, bool zero);
void _mi_track_realloc_in_place(void* p, size_t oldsize, size_t newsize, bool zero);
void _mi_track_block_destroyed(const mi_page_t* page, mi_block_t* block);
bool _mi_track_visit_destroyed(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg);   /* arg: the page */
#if MI_TRACK_ASAN
void _mi_track_asan_malloc(void* p, size_t size);
void _mi_track_asan_resize(void* p, size_t oldsize, size_t newsize);
void _mi_track_asan_open(void* p, size_t size);
void _mi_track_asan_close(void* p, size_t size);
#endif
#else
#define MI_TRACK_ENABLED  0
#define mi_track_malloc(p, size, zero)        ((void)0)
#define mi_track_free(p)                      (true)
#define mi_track_resize(p, oldsize, newsize)  ((void)0)
#define mi_track_mem_defined(p, size)         ((void)0)
#define mi_track_mem_undefined(p, size)       ((void)0)
#define mi_track_mem_noaccess(p, size)        ((void)0)
#define mi_track_open(p, size)                ((void)0)
#define mi_track_close(p, size)               ((void)0)
#endif
