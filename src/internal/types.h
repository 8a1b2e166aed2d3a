/* SPDX-License-Identifier: MIT */
/* Internal data types of the allocator and the invariants that tie them together.

   Ownership (docs/design.md): a thread owns pages, nothing bigger. Segments belong to their
   subprocess: every thread of it takes pages from the free slots of any of its segments, and
   an empty page gives its slot back at once (purged after a delay), under the subprocess'
   lock. A thread that ends abandons its pages that hold live blocks one by one, onto its
   subprocess' per-bin abandoned page lists; from then on any thread's free of such a page's
   last live block releases the page under that lock, and a thread that needs a page of some
   size class takes over an abandoned page of the class with room before it takes a fresh one.
   See mi_segment_t, mi_subproc_t and the thread_free word (page.h).

   Types, in order:
     mi_block_t          a free block: just a link to the next free block
     mi_delayed_t        the 2-bit delayed-free state stored in a page's thread_free word
     mi_page_t           a page: blocks of one size, three free lists
     mi_page_kind_t      small / medium / large / huge segment layouts
     mi_segment_t        a 4 MiB-aligned region holding the page descriptors and the pages
     mi_page_queue_t     a heap's doubly linked list of pages of one size class
     mi_segment_queue_t  a subprocess' segments of one kind that still have free slots
     mi_subproc_t        owner of segments, their slot and purge queues, abandoned pages
     mi_segments_tld_t   per-thread segment bookkeeping
     mi_tld_t            thread-local data shared by all heaps of a thread
     mi_heap_t           a heap (struct mi_heap_s), owned by one thread; the theap (per-thread
                         part) of a shared heap is one too
     mi_sheap_t          a shared heap: a heap any thread may allocate in, one theap per thread

   Pointer to page, header-free, in O(1) (docs/design.md, "From a pointer to its page"): every
   segment starts at a multiple of MI_SEGMENT_SIZE and holds its descriptors at its start, so
   for any block pointer p handed out:
       segment = (p - 1) & ~MI_SEGMENT_MASK
       page    = &segment->pages[(p - segment) >> segment->page_shift]   (page_shift also in the map)
   The "- 1" lets a huge block with an alignment >= MI_SEGMENT_SIZE start exactly MI_SEGMENT_SIZE
   past its segment; no block ever starts at offset 0 of a segment (the header lives there).
   So a pointer p = segment + MI_SEGMENT_SIZE maps to this segment too; for free to reject it
   when it is not ours: huge segments are always larger than MI_SEGMENT_SIZE (p is then inside),
   and standard segments have a sentinel descriptor pages[capacity], where that p's index
   lands: never in use (segment_in_use == 0), xthread_id == 0 so the free fast path
   leaves it to _mi_free_generic, which rejects pages not in use, and block_size 0 so
   usable_size reports 0 (not ours).
   p == NULL maps to an address with the top bit set, which _mi_ptr_segment turns into NULL.
   Two global maps describe our segments (segment-map.c), kept exact while a segment hands out blocks:
     segment-start byte map: chunk index -> page_shift of our segment starting there, else 0.
       free, realloc and usable_size consult it before touching a pointer (so pointers that
       are not ours are never dereferenced), and take the page_shift from it;
     covered bitmap: every chunk inside one of our segments (mi_is_in_heap_region).
*/
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <errno.h>
#include "mimalloc.h"
#include "mimalloc-stats.h"
#include "atomic.h"

/* ------------------------------------------------------------------------------------------
   Build configuration. Every feature is a constant tested with a plain `if` where possible.
------------------------------------------------------------------------------------------ */
#ifndef MI_DEBUG
#define MI_DEBUG 0            /* 0: release, 1: basic assertions, 2: internal, 3: expensive */
#endif
#ifndef MI_SECURE
#define MI_SECURE 0           /* 1: hardened (secure.c): encoded free-list links checked on every
                                 use, double and interior frees rejected */
#endif
#ifndef MI_GUARDED
#define MI_GUARDED MI_SECURE  /* 1: sampled guarded objects (guarded.c): secure builds only (the
                                 default there; CMake MI_GUARDED=OFF drops it), the sample check
                                 costs malloc 5 instructions */
#endif
#if MI_GUARDED > 0 && MI_SECURE == 0
#error "MI_GUARDED needs MI_SECURE (the guarded block's header is keyed with the page's keys)"
#endif
/* The build's name in messages (the start-up line, mi_options_print), so a user can tell which
   library is loaded: "release", "debug", "secure", "debug secure", "valgrind" or "asan". */
#if MI_TRACK_VALGRIND
#define MI_BUILD_NAME "valgrind"
#define MI_TRACK_NAME "valgrind"
#elif MI_TRACK_ASAN
#define MI_BUILD_NAME "asan"
#define MI_TRACK_NAME "asan"
#elif MI_DEBUG > 0 && MI_SECURE > 0
#define MI_BUILD_NAME "debug secure"
#elif MI_DEBUG > 0
#define MI_BUILD_NAME "debug"
#elif MI_SECURE > 0
#define MI_BUILD_NAME "secure"
#else
#define MI_BUILD_NAME "release"
#endif
#ifndef MI_TRACK_NAME
#define MI_TRACK_NAME "none"   /* the memory checker a tracking build informs (track.h) */
#endif
#ifndef MI_STAT
#if MI_DEBUG > 0
#define MI_STAT 2             /* 2: also every malloc/free per size bin (costs on the fast paths) */
#else
#define MI_STAT 1             /* 1: OS, segment, page and slow-path counters only (free fast paths) */
#endif
#endif
#ifndef MI_MALLOC_OVERRIDE
#define MI_MALLOC_OVERRIDE 0  /* 1: define malloc, free, new/delete & co. (override.c) */
#endif

#define MI_INTPTR_SIZE        ((size_t)sizeof(void*))
#define MI_INTPTR_SHIFT       (3)
#define MI_MAX_ALIGN_SIZE     (16)   /* every block of >= 16 bytes is 16-byte aligned */

#define MI_KiB                ((size_t)1024)
#define MI_MiB                (MI_KiB*MI_KiB)
#define MI_GiB                (MI_MiB*MI_KiB)

/* Segment and page geometry. */
#define MI_SEGMENT_SHIFT      (22)                               /* 4 MiB */
#define MI_SEGMENT_SIZE       ((size_t)1 << MI_SEGMENT_SHIFT)
#define MI_SEGMENT_MASK       (MI_SEGMENT_SIZE - 1)
#define MI_SMALL_PAGE_SHIFT   (16)                               /* 64 KiB */
#define MI_MEDIUM_PAGE_SHIFT  (19)                               /* 512 KiB */
#define MI_LARGE_SLOT_SHIFT   (17)                               /* 128 KiB */
#define MI_SMALL_PAGE_SIZE    ((size_t)1 << MI_SMALL_PAGE_SHIFT)
#define MI_MEDIUM_PAGE_SIZE   ((size_t)1 << MI_MEDIUM_PAGE_SHIFT)
#define MI_LARGE_SLOT_SIZE    ((size_t)1 << MI_LARGE_SLOT_SHIFT)
#define MI_SMALL_PAGES_PER_SEGMENT  (MI_SEGMENT_SIZE / MI_SMALL_PAGE_SIZE)   /* 64 */
#define MI_MEDIUM_PAGES_PER_SEGMENT (MI_SEGMENT_SIZE / MI_MEDIUM_PAGE_SIZE)  /* 8 */
#define MI_LARGE_SLOTS_PER_SEGMENT  (MI_SEGMENT_SIZE / MI_LARGE_SLOT_SIZE)   /* 32 */
#define MI_HUGE_PAGE_SHIFT    (63)   /* (p - segment) >> 63 == 0: a huge segment has one page */

/* Object size limits per page kind: at least 8 blocks fit in a small page and 4 in a medium
   one (blocks up to 120 KiB in 512 KiB pages); a large block (up to 2 MiB) takes a span of as many 128 KiB
   slots of a large segment as it needs (mi_page_kind_t), so it keeps its size rounded to
   128 KiB resident, not to the 512 KiB medium slots it took before. A medium size class starts
   with a page of one 128 KiB slot there too, and gets 512 KiB pages once that is full (segment.c,
   _mi_segment_page_alloc): a class with a few live blocks pins a quarter of the memory, a busy
   one gets pages of many blocks. Medians of interleaved runs against 512 KiB slots for all:
   mstress peak RSS 72 -> 59 MiB, malloc-large 127 -> 116 MiB, glibc-thread the same time and
   RSS; with 128 KiB pages for every medium page mstress fell to 53 MiB but glibc-thread ran 15%
   slower (4..7 blocks of 18..30 KiB per page, filling and emptying all the time). The same
   churn made small pages of 4..7 blocks (8..16 KiB) the cost of glibc-thread: 70% of its page
   moves to and from the full queue were in those bins; as medium classes they run 16% faster
   (20% with 4 threads) and mstress holds 2 MiB more (medians of 5 interleaved runs).
   Blocks of 32..64 KiB (a slot holds 2 or 3) take one-slot pages for every page of their class:
   their 512 KiB pages, of 8..15 blocks, were what held rptest's memory (peak RSS 115 -> 92 MiB,
   for 5-9% more time: 2.5x the page set-ups); smaller blocks churn too much (glibc-thread above),
   and a larger block fills a slot alone: one-slot pages for it only cost a set-up per block
   (docs/memory.md, "Blocks of 32..64 KiB"). Secure builds stop at 56 KiB: a 64 KiB block
   would be alone beside the slot's guard page, and take twice its size. */
#define MI_SMALL_OBJ_SIZE_MAX   (MI_SMALL_PAGE_SIZE/8)     /* 8 KiB */
#define MI_MEDIUM_OBJ_SIZE_MAX  (MI_LARGE_SLOT_SIZE - MI_LARGE_SLOT_SIZE/16)   /* 120 KiB: the 128 KiB bin is one large slot */
#define MI_MEDIUM_SLOT_ONLY_MIN (MI_LARGE_SLOT_SIZE/4 + 1)   /* blocks of 32..64 KiB: every page one slot */
#define MI_MEDIUM_SLOT_ONLY_MAX ((MI_LARGE_SLOT_SIZE - MI_SECURE_GUARD_SIZE)/2)   /* two fit beside a guard */
#define MI_LARGE_OBJ_SIZE_MAX   (MI_SEGMENT_SIZE/2)        /* 2 MiB; larger is huge */
/* Secure builds end every page (and the segment header) with a guard page of this size
   (segment.c); they are installed where the OS page is this size. */
#if MI_SECURE > 0
#define MI_SECURE_GUARD_SIZE    ((size_t)4096)
#else
#define MI_SECURE_GUARD_SIZE    ((size_t)0)
#endif
#define MI_SPAN_SLOTS_MAX       (MI_LARGE_OBJ_SIZE_MAX/MI_LARGE_SLOT_SIZE + 1)   /* 17: the +1 when the span starts at the header's slot */
#define MI_MAX_ALLOC_SIZE       ((size_t)1 << 47)           /* the user address space of x86-64 and riscv64 Sv48, half of aarch64's 48-bit one: larger requests fail at once (smaller spaces fail in mmap) */

/* Aligned allocation: alignments up to this are served by over-allocating in a normal page;
   larger ones get a huge segment placed so the block is exactly aligned. */
#define MI_ALIGN_OVERALLOC_MAX  (64*MI_KiB)

/* Size classes ("bins"), table-free:
     bin 1        :   8 bytes
     bins 2..9    :  16..128 bytes in steps of 16 (keeps 16-byte alignment for sizes >= 16)
     bins 10..121 :  eight classes per power of two up to MI_LARGE_OBJ_SIZE_MAX,
                     so a block wastes less than 1/8 of the requested size.
   MI_BIN_HUGE holds huge pages (one block each), MI_BIN_FULL pages with no free block (a bin
   queue may hold a few such pages too: page.c, mi_page_queue_find_free). */
#define MI_BIN_SMALL_WORDS    (16)
#define MI_BIN_FIRST_SPACED   (10)
#define MI_BIN_HUGE_INTERNAL  (122)
#define MI_BIN_FULL           (MI_BIN_HUGE_INTERNAL + 1)
#define MI_SLOT_HINTS         (4)   /* warm slots remembered per bin (mi_subproc_t: slot hints) */
struct mi_page_s;
typedef struct mi_page_s* mi_slot_hints_t[MI_BIN_HUGE_INTERNAL][MI_SLOT_HINTS];

/* The heap's direct table covers every word size up to MI_SMALL_SIZE_MAX. */
#define MI_PAGES_DIRECT       (MI_SMALL_WSIZE_MAX + 2)

/* Blocks a page makes available at a time (lazy free-list construction keeps RSS low): an
   extension ends at a MI_MAX_EXTEND_SIZE boundary of the address space and hands out the
   blocks that start before it, from half that size on (page.c, mi_page_extend_free); at least
   MI_MIN_EXTEND blocks (secure builds shuffle them, which needs a few). */
#define MI_MAX_EXTEND_SIZE    (4*MI_KiB)
#define MI_MIN_EXTEND         (MI_SECURE > 0 ? 4 : 1)

/* Huge blocks freed by another thread are reset beyond this prefix so RSS drops at once. */
#define MI_HUGE_RESET_MIN     (64*MI_KiB)

/* Arenas (arena.c): large reservations handed out in blocks of one segment. */
#define MI_ARENA_BLOCK_SIZE   MI_SEGMENT_SIZE
#define MI_ARENA_MAX_OBJ_SIZE (64 * MI_ARENA_BLOCK_SIZE)   /* 256 MiB; larger goes to the OS */
#define MI_MAX_ARENAS         (132)                         /* arena ids 1..132 */
/* Free arena blocks waiting for their (long) arena purge delay, over all arenas: a block freed
   while more than this amount waits is due after the short purge_delay. A few segments
   churning keep their memory for reuse; a program that shrinks returns the bulk promptly.
   The budget in force adapts (arena-purge.c, mi_arenas_unpurged_max): up to 32 times this. */
#define MI_ARENA_UNPURGED_MAX (8 * MI_ARENA_BLOCK_SIZE)     /* 32 MiB */

/* ------------------------------------------------------------------------------------------
   Blocks and pages
------------------------------------------------------------------------------------------ */
/* The link is only read and written through mi_block_next/mi_block_set_next (page.h): in
   secure builds it is stored encoded with its page's keys. */
typedef struct mi_block_s {
  struct mi_block_s* next;
} mi_block_t;

typedef int64_t mi_msecs_t;   /* milliseconds (monotonic clock) */

/* Where a segment's memory came from (arena.c) and its state when handed out. Memory from
   an arena is a run of whole arena blocks; memory straight from the OS is page-rounded.
   Invariants (the arena bitmaps, mi_arena_t in internal/arena.h; checked by validate.c):
     while a segment holds arena blocks [block_index, block_index + size / MI_ARENA_BLOCK_SIZE):
       their inuse and dirty bits are set and their purge bits clear, their committed bits are
       all set if initially_committed or is_pinned and all clear otherwise (the segment commits
       page by page itself), and is_pinned, is_exclusive, commit_syscall, commit_fun are the
       arena's; every commit, purge and decommit of it goes through _mi_arena_commit/_purge/
       _decommit (arena.c), which call the program's function when commit_fun is set;
     a free arena block with its purge bit set is committed and has a deadline (purge_due != 0);
     a pinned arena's blocks are all committed, none waits for a purge;
     inuse bits past an arena's last block are set. */
typedef struct mi_memid_s {
  int    arena_idx;            /* index in the arena table, or -1: straight from the OS */
  size_t block_index;          /* first arena block */
  size_t size;                 /* bytes obtained (block_count * MI_ARENA_BLOCK_SIZE for arenas) */
  bool   is_exclusive;         /* from an exclusive arena: only heaps of that arena use it */
  bool   is_pinned;            /* large/huge OS pages: always committed, never purged */
  bool   commit_syscall;       /* reserved inaccessible: commit needs mprotect, decommit protects
                                  (set also with commit_fun: no mprotect of that memory of ours) */
  bool   commit_fun;           /* its arena commits through the program's function (mi_manage_memory) */
  bool   initially_committed;  /* all of it committed (counted) when handed out */
  bool   initially_zero;       /* all of it reads as zero when handed out */
  bool   purge_zeroes;         /* a decommit zeroes it (private anonymous memory) */
} mi_memid_t;

/* Debug builds (and tracking builds, below) end every block with a padding record (debug.c). A block of block_size bytes
   handed out for `size` bytes at user pointer p = block + a (a > 0 only for aligned
   interior pointers) looks like:
     [block, p+size)                 the program's bytes
     [p+size, end - MI_PADDING_SIZE) slack, filled with MI_DEBUG_PADDING
     [end - MI_PADDING_SIZE, end)    mi_padding_t
   so free finds every byte written past the requested size (byte-precise overflow check).
   The padding checks itself: `canary` depends only on the block (a changed canary is an
   overwrite of it, its other fields may still be trusted), `check` covers delta and caller
   (only when it holds is the requested size known). `guard` is not this block's: it is the
   word just before the next block, written when the page is extended and never changed, and
   checked when the next block is freed or handed out (a write before that block's start).
   The first block of a page gets its guard in MI_PADDING_GUARD_ROOM bytes reserved before it
   (segment.c), except in pages of large blocks (their spans stay slot-sized); a huge block
   has none, an aligned interior pointer none of its own.
   Every check word has a zero second byte, so a string read past the end stops at the
   canary after one byte; its first and last bytes are never zero, so the classic stray
   terminator (p[size] = 0, or p[-1] = 0) always changes it.
   Freed blocks are filled with MI_DEBUG_FREED except their link word and the guard, new
   blocks with MI_DEBUG_UNINIT; free-list blocks keep MI_DEBUG_FREED until handed out again
   (a freed block keeps canary, delta and check, the canary in a freed form).
   Tracking builds (track.h) carry the padding for the requested size, and the room before a
   page's first block (never accessible there, so an underflow of it is reported); no fills
   and no guard words. */
#if MI_DEBUG > 0 || MI_TRACK_VALGRIND || MI_TRACK_ASAN
#define MI_PADDING        1
#else
#define MI_PADDING        0
#endif
typedef struct mi_padding_s {
  uint32_t canary;    /* hash of segment cookie and block (live and freed forms) */
  uint32_t delta;     /* slack: end - MI_PADDING_SIZE - (p+size) */
  void*    caller;    /* return address of the program's allocation call, or NULL */
  uint32_t check;     /* hash of segment cookie, block, delta and caller */
  uint32_t guard;     /* the next block's: hash of segment cookie and the next block */
} mi_padding_t;
#define MI_PADDING_SIZE   (MI_PADDING ? sizeof(mi_padding_t) : 0)
#define MI_PADDING_GUARD_ROOM (MI_PADDING ? MI_MAX_ALIGN_SIZE : 0)   /* before a page's first block */
/* Cross-thread frees batched by the freeing thread (remote.c): release builds only. Checked
   builds search every free list for a double free, which a block held back would escape. */
#ifndef MI_REMOTE_BATCH
#define MI_REMOTE_BATCH   (MI_SECURE == 0 && MI_PADDING == 0)
#endif
#define MI_REMOTE_BATCH_SLOTS  (64)     /* per thread, by page descriptor address */
#define MI_REMOTE_BATCH_BYTES  (8192)   /* a batch holds back at most this much, or 32 blocks */
#define MI_REMOTE_BATCH_SIZE_MAX (MI_REMOTE_BATCH_BYTES / 4)   /* larger blocks are pushed at once */
#define MI_DEBUG_UNINIT   (0xD0)
#define MI_DEBUG_FREED    (0xDF)
#define MI_DEBUG_PADDING  (0xDE)

/* State of the delayed-free handshake, in the low 2 bits of page->xthread_free.
   A non-owner thread freeing into a page whose state is MI_USE_DELAYED_FREE sets
   MI_DELAYED_FREEING, pushes the block on the owning heap's thread_delayed_free list and then
   sets MI_NO_DELAYED_FREE; in every other state it pushes on the page's thread_free list with a
   single CAS. Invariants:
   - a page in its heap's full queue is in MI_USE_DELAYED_FREE, or a delayed block for it is
     queued on (or being pushed to) its heap, so the owner learns it has space again; a page
     in a bin queue may be in MI_USE_DELAYED_FREE too (huge pages, and a page that took the
     first page's place after its owner's free, page.c): the next free into it by another
     thread then goes through the delayed list once, which is slower, never wrong;
   - the owner never changes page->xheap or frees the heap while a page is MI_DELAYED_FREEING
     (it spins until the state changes), so the pushing thread always sees a live heap;
   - MI_NEVER_DELAYED_FREE is sticky (abandoned pages, heaps being deleted) and is only
     overridden explicitly when a page is adopted by a heap again. */
typedef enum mi_delayed_e {
  MI_USE_DELAYED_FREE   = 0,
  MI_DELAYED_FREEING    = 1,
  MI_NO_DELAYED_FREE    = 2,
  MI_NEVER_DELAYED_FREE = 3
} mi_delayed_t;

/* Page flags, in the low bits of the page's xthread_id (see mi_page_t). Only the owner writes
   them; other threads read has_aligned (usable_size of a block they hold). */
#define MI_PAGE_IN_FULL      ((uintptr_t)0x01)   /* page is in the heap's MI_BIN_FULL queue */
#define MI_PAGE_HAS_ALIGNED  ((uintptr_t)0x02)   /* a block was handed out at an interior pointer */
#define MI_PAGE_FREE_HOOK    ((uintptr_t)0x04)   /* frees take the generic path: the live view
                                                    (MIMALLOC_LIVE) counts them, the profiler
                                                    looks for its sampled blocks (prof_samples) */
#define MI_PAGE_FLAGS_MASK   ((uintptr_t)0x07)   /* thread ids are at least 8-byte aligned */
#define MI_PAGE_REMOTE_SLOW  (MI_PAGE_HAS_ALIGNED | MI_PAGE_FREE_HOOK)   /* the flags that send a
                                                    cross-thread free to the generic path */

/* A page holds blocks of a single size in [page_start, page_start + reserved*block_size).
   Invariants (owner thread view, `|l|` = length of list l):
     capacity <= reserved;  blocks with index >= capacity were never handed out;
     used == capacity - |free| - |local_free| - |purged|   (used counts blocks not in free or
                                                   local_free: the live ones and those freed by
                                                   other threads and not yet collected; |purged|:
                                                   the free blocks that start in the OS pages of
                                                   interior_purged, on no list)
     |thread_free| <= used                         (owned form: |thread_free| is the count of the
                                                   thread_free word, page.h; the blocks pushed
                                                   on the heap's delayed list count in used too)
     in use (segment_in_use): is_committed, not purge_pending; its blocks
       [page_start, page_start + reserved * block_size) lie in the page's area (segment.c,
       _mi_segment_page_area); block_size is a bin size (_mi_page_bin_size), or reserved == capacity
       == 1 in a huge segment; slots segment_idx + 1 .. + slot_count - 1 are its span tails;
     used == 0 and segment_in_use  =>  the page can be returned to its segment;
     free_is_zero                  =>  every block in `free` is zero except its first word;
     xheap == NULL                 <=> page is abandoned (or not in use);
     abandoned_listed              <=> abandoned and on an abandoned page list of its
                                   subprocess (abandon_lists == NULL) or of the lists
                                   abandon_lists (then abandon_lists->subproc == the
                                   segment's subproc); set and cleared under that
                                   subprocess' lock;
     xheap != NULL                 =>  abandon_lists == xheap->pages_lists: where the page
                                   goes if its owner ends (NULL: the subprocess' lists), so
                                   that any thread can tell the lists' owner (a shared heap,
                                   sheap.c: mi_heap_of) without reading another thread's heap;
     xheap != NULL                 =>  heap_tag == xheap->tag (the tag mi_heap_visit_blocks
                                   reports and reclaim by tag goes by; pages that move to
                                   another heap take its tag);
     xthread_id == owner | flags   where owner = the thread id of the page's heap, or 0 when
                                   xheap == NULL; so the free fast path tests "owned by me and
                                   no flags" with one compare against _mi_thread_id() (whose low
                                   bits are 0);
     flags & MI_PAGE_IN_FULL       <=> page is in its heap's full queue.
   Only the owner thread touches free, local_free, used, capacity and the queue links;
   other threads only push on xthread_free. The slot fields (segment_in_use, span_tail,
   slot_count, is_committed, purge_*, and next/prev while the slot is unused) belong to the
   segment's subprocess and change under its lock. */
/* Where the owner's frees go. Release and debug builds push them on `free` itself (LIFO): the
   next malloc of the class takes the block just freed, still in cache, and malloc leaves its
   fast path only when the page has no block left. Pushing on local_free instead, to be moved
   to `free` when that runs out, made the malloc slow path run every few calls in pages of few
   blocks: free on `free` is 11% faster on glibc-thread, 8-10% on sh6bench and larson (medians
   of 5 interleaved runs; the free fast path stores one byte more, free_is_zero). Secure builds
   keep the two lists (sharded): a freed block is not handed out again at once, which makes a
   use after free harder to turn into control of a live block. */
#ifndef MI_FREE_SHARDED
#define MI_FREE_SHARDED (MI_SECURE > 0)
#endif
/* 128 bytes (aligned so on 64-bit targets): the page index scales with one shift in free. */
#define MI_PAGE_DESC_ALIGN  (128)
typedef struct mi_page_s {
  /* Two cache lines. The first holds what malloc touches and only the owner writes (free,
     used, ...). Release builds keep on the second line what a free by another thread reads
     (xthread_id, block_size) beside what it writes (xthread_free): such a free then takes one
     line and never the first, which the owner writes on every malloc. With the owner id on the
     first line, two threads handing each other blocks (bench-xthread -b) took 1.9 times as long
     and the one-way pipeline 2.2 times: each foreign free pulled the line away from the owner's
     core and the owner's next malloc pulled it back. The owner's free reads xthread_id on the
     second line and writes the first: one line more, no instruction more (bench/callgrind.sh).
     Secure builds keep xthread_id with the link keys on the first line. */
  _Alignas(MI_PAGE_DESC_ALIGN)
  mi_block_t*        free;            /* blocks available for allocation */
  mi_block_t*        local_free;      /* blocks freed by the owner thread (MI_FREE_SHARDED), or
                                         collected from thread_free while `free` is not empty */
#if MI_SECURE > 0
  _Atomic(uintptr_t) xthread_id;      /* owner thread id | flags (see above) */
#endif
  uint32_t           used;            /* blocks in use (including not yet collected thread frees) */
#if MI_SECURE > 0
  uint32_t           capacity;        /* blocks whose memory has been made available */
  uint8_t*           page_start_;     /* first block (read and set through mi_page_start, track.h) */
  uintptr_t          keys[2];         /* the free-list link keys, drawn at each page set-up
                                         (page.h, mi_block_next) */
  uint64_t           block_magic;     /* UINT64_MAX / block_size + 1: the block index of an
                                         offset and whether it is a block start, with one
                                         multiplication (mi_page_offset_is_block) */
  size_t             block_size;      /* size of each block (a bin size, or exact for huge) */
#endif
  uint8_t            free_is_zero;    /* see invariant above */
  uint8_t            retire_expire;   /* heartbeats left before a retired empty page is freed */
  uint8_t            segment_in_use;  /* the segment has handed out this page */
  uint8_t            span_tail;       /* k > 0: slot k of a span (a large page over several
                                         medium slots), whose descriptor is `this - k`; never
                                         in use itself, so a block pointer never maps here */
#if MI_SECURE == 0
  uint8_t*           page_start_;     /* first block (read and set through mi_page_start, track.h) */
  uint32_t           capacity;        /* blocks whose memory has been made available */
#endif
  uint32_t           reserved;        /* blocks that fit in the page */
  uint8_t            segment_idx;     /* index in segment->pages */
  uint8_t            is_zero_init;    /* page memory was fresh (zero) when the page was set up */
  uint8_t            heap_tag;        /* tag of the page's heap (see the invariants above); kept
                                         while abandoned, for a reclaim to find a heap of it */
  uint8_t            is_committed;    /* the page's slot in the segment is committed */
  uint8_t            purge_pending;   /* unused slot in its subprocess' purge queue (segment.c) */
  uint8_t            abandoned_listed; /* on the abandoned page lists (see the invariants) */
  uint8_t            slot_count;      /* slots the page spans while in use: 1, or up to
                                         MI_SPAN_SLOTS_MAX for a large page (see mi_page_kind_t) */
  uint8_t            freed_by;        /* unused slot: a hash of the thread that gave it back (0:
                                         none); a new page prefers the slots of its own thread,
                                         still in that core's cache (segment.c) */

  union {
    mi_msecs_t       purge_expire;    /* when purge_pending: time the slot is due for a purge;
                                         when purged (!is_committed): time of the purge, or 0 */
    _Atomic(struct mi_abandoned_lists_s*) abandon_lists; /* a slot in use (never purged): the
                                         abandoned lists the page goes on, else NULL (its
                                         subprocess'): its owner's pages_lists (set with the
                                         owner, mi_page_set_heap), or the lists that hold it
                                         (set and cleared as it is listed and unlisted, under
                                         the subprocess' lock); between owners, either; read
                                         by mi_heap_of from any thread (sheap.c) */
  };
#if MI_SECURE == 0
  struct mi_page_s*  next;            /* (see below) */
  /* the second line (release builds): what other threads read and write */
  _Atomic(uintptr_t) xthread_id;      /* owner thread id | flags (see above) */
  size_t             block_size;      /* size of each block (a bin size, or exact for huge) */
#endif
  _Atomic(uintptr_t) xthread_free;    /* mi_block_t* | mi_delayed_t in the low 2 bits */
  _Atomic(mi_heap_t*) xheap;          /* owning heap, NULL when abandoned */
#if MI_SECURE > 0
  struct mi_page_s*  next;            /* links of: the heap's page queue (owned page), the
                                         subprocess' purge queue (unused slot) or abandoned page
                                         list of its bin (abandoned page) */
#endif
  struct mi_page_s*  prev;
#if MI_SECURE == 0
  _Atomic(uint32_t)  prof_samples;    /* blocks of the page sampled by the profiler and not
                                         freed, with a filter of their addresses (prof-samples.c;
                                         changed under its lock): while not 0 the page has
                                         MI_PAGE_FREE_HOOK, so their frees
                                         reach the profiler (_mi_free_generic); read through
                                         mi_page_prof_samples (secure builds: no profiler, no
                                         room in the descriptor). The profiler's one field in
                                         the page, kept here rather than in a table of its own:
                                         any thread's free of a flagged page reads it without
                                         the store's lock (the filter: a block not sampled is
                                         let go at one load), every page release reads it
                                         (segment.c), and it fills padding of the 128-byte
                                         descriptor; the free fast path never reads it */
  uint8_t            remote_batch;    /* 0, or how many of its blocks another thread's free may
                                         hold back before pushing them with one CAS (remote.c):
                                         set at the page's set-up in a heap that cannot be
                                         destroyed, kept until the page is freed */
  uint16_t           interior_purged; /* owner: bit j: OS page j of the page's blocks (from
                                         mi_page_start aligned down) was given back while it
                                         held only free blocks; the blocks that start in it are
                                         free and on no list (page.c, _mi_page_purge_free_
                                         interiors); listed again before the page's next
                                         allocation finds its lists empty. Secure builds: no
                                         room, never set */
  uint16_t           interior_used;   /* owner: used + 1 when it last looked for OS pages to give
                                         back (0: never): with no more free blocks than then, the
                                         next look skips the walk of the lists (page.c) */
  uint8_t            tail_dirty;      /* how many OS pages from the start of the slot's area may
                                         hold an earlier page's memory, resident (0: none;
                                         MI_PAGE_TAIL_ALL: any of them). Kept by a free slot (set
                                         when its page is freed, 0 when it is purged: segment.c)
                                         and taken over by the next page of the slot, whose owner
                                         gives back the part past its capacity and sets it to 0
                                         (page.c, _mi_page_trim_tail; a page of one block also
                                         at its thread's end: heap.c). Secure builds: no room */
  uint8_t            freed_bin;       /* unused slot of a small or medium segment: the bin + 1
                                         of the page it last held (0: none), for a new page of
                                         that bin (mi_subproc_t: slot hints). Secure builds: no
                                         room */
  uint16_t           tail_seen;       /* owner: capacity + 1 at the last look at the tail (0:
                                         none): a page whose capacity grew since is still
                                         growing into it, and keeps it */
#endif
} mi_page_t;
_Static_assert(sizeof(void*) != 8 || sizeof(mi_page_t) == MI_PAGE_DESC_ALIGN, "page descriptors are 128 bytes");
#define MI_PAGE_TAIL_ALL  255   /* tail_dirty: the whole area (a span's slots are not tracked one by one) */

/* Segment kinds. Large blocks (MI_MEDIUM_OBJ_SIZE_MAX < size <= MI_LARGE_OBJ_SIZE_MAX) live in
   large segments: a large page is a span of 1..MI_SPAN_SLOTS_MAX adjacent 128 KiB slots holding
   one block at the span's start. The first page of a medium size class (while the heap has no
   full page of it) is one slot there too. So a thread's large blocks of every size share its
   large segments, and a freed one gives back its slots to be reused by any large or first
   medium page (purged after the delay like any unused slot), instead of a 4 MiB segment per
   size class. The block starts in the span's first slot, so free finds the
   span's descriptor with the usual shift; the other slots' descriptors are span tails. */
typedef enum mi_page_kind_e {
  MI_PAGE_SMALL,    /* 64 pages of 64 KiB, blocks <= MI_SMALL_OBJ_SIZE_MAX */
  MI_PAGE_MEDIUM,   /* 8 pages of 512 KiB, blocks <= MI_MEDIUM_OBJ_SIZE_MAX */
  MI_PAGE_LARGE,    /* 32 slots of 128 KiB: large pages (spans, one block each), first medium pages */
  MI_PAGE_HUGE      /* one page with one block, segment sized (and aligned) to fit */
} mi_page_kind_t;

struct mi_subproc_s;

/* A segment. Invariants:
     (uintptr_t)segment % MI_SEGMENT_SIZE == 0;  segment->cookie == _mi_segment_cookie(segment);
     used == number of pages with segment_in_use;  abandoned <= used;
     abandoned == number of its pages on the abandoned lists (abandoned_listed), under the lock;
     page_shift and capacity follow page_kind: MI_SEGMENT_SIZE >> page_shift slots of
       segment_size == MI_SEGMENT_SIZE, or (huge) one page, MI_HUGE_PAGE_SHIFT and
       segment_size > MI_SEGMENT_SIZE; segment_size <= memid.size;
     pages[i].segment_idx == i;
     slots_used == sum of slot_count over those pages <= capacity; a span's other slots have
       span_tail set (and nothing else) while it is in use;
     ownership: a standard (small, medium, large) segment belongs to its subprocess, not to a
       thread: used, slots_used, abandoned, in_free_queue, next/prev and every slot field of
       its page descriptors change only under subproc->lock (the owner of a page in use owns
       the page's other fields). A huge segment is its one page: it lives and dies with it;
     subproc: the subprocess of the creating thread, never changed (free reads it unlocked);
     commit: a slot of a page in use is committed (is_committed); the header's slot always is;
       when the segment is released every slot is committed again first, so an arena gets
       back whole committed blocks (committed stat = committed slots);
     purge: an unused committed slot that may be resident is purge_pending, in its
       subprocess' purge queue of the kind, to be purged at purge_expire;
     in_free_queue <=> a standard segment with slots_used < capacity, on its subprocess' free
       queue of its kind;
     the segment maps [segment, segment + segment_size), all of it ours (segment map bits set);
     guards (secure builds, segment.c): the last OS page of info_size is a guard page, and so is
       the last OS page of slot i if bit i of `guarded` is set: always for the last slot of a
       page in use (and of a huge segment); never for another slot of a span in use. */
typedef struct mi_segment_s {
  size_t               segment_size;    /* bytes mapped from the segment start */
  size_t               info_size;       /* bytes used by this header and the page descriptors
                                           (secure builds: and the guard page after them) */
#if MI_SECURE > 0
  uint64_t             guarded;         /* slots that end in a guard page (see above) */
  bool                 guards;          /* guard pages could be installed (header's, all) */
#endif
  uintptr_t            cookie;          /* validates segment pointers in checked builds */
  struct mi_segment_s* next;            /* the subprocess' free queue of its kind */
  struct mi_segment_s* prev;
  struct mi_subproc_s* subproc;
  size_t               used;            /* pages in use */
  size_t               slots_used;      /* slots of the pages in use (a span counts all its slots) */
  size_t               abandoned;       /* pages in use whose heap is gone */
  size_t               capacity;        /* number of pages */
  size_t               page_shift;      /* page index = (p - segment) >> page_shift */
  mi_page_kind_t       page_kind;
  bool                 in_free_queue;
  mi_memid_t           memid;           /* origin of the memory (arena or OS) */
  mi_page_t            pages[1];        /* `capacity` page descriptors, then the sentinel */
} mi_segment_t;

/* ------------------------------------------------------------------------------------------
   Heaps and thread-local data
------------------------------------------------------------------------------------------ */
typedef struct mi_page_queue_s {
  mi_page_t* first;
  mi_page_t* last;
  size_t     block_size;   /* the bin size; MI_LARGE_OBJ_SIZE_MAX+1.. for huge/full queues */
} mi_page_queue_t;

typedef struct mi_segment_queue_s {   /* (under the subprocess' lock) */
  mi_segment_t* first;
  mi_segment_t* last;
} mi_segment_queue_t;

/* A purge queue: unused page slots of a subprocess' segments of one kind, linked through the
   page descriptors' next/prev (free while a slot is unused), ordered by purge_expire (the slots
   of a large page, and slots queued after the delay backed off, wait longer than others). The
   last one is the most recently freed slot of the kind: resident, taken first for a new page. */
typedef struct mi_purge_queue_s {
  mi_page_t* first;
  mi_page_t* last;
} mi_purge_queue_t;

/* A subprocess (mi_subproc_new; the main one is static) owns the segments its threads create,
   and everything below changes under its lock, which is held only for page-sized work (taking
   or returning a page, its purge, abandoning or adopting a page; never on a malloc or free fast
   path):
     free[kind]: its standard segments of the kind with a free slot (in_free_queue), linked
       through segment->next/prev; a new page takes a slot of any of them;
     purge[kind]: its unused slots that may be resident (purge_pending), by deadline;
       purge_count is their number, purge_next at most their earliest deadline (both peeked
       without the lock: the purger is told purge_next once the lock is dropped);
     purge_backoff, purge_reused, purge_backoff_time: the adaptive slot purge delay (segment.c);
     slot hints (release builds): a table of 3.9 KiB apart from the descriptor (the main
       one's in the cold .bss, another's right after its descriptor: segment-purge.c,
       _mi_segments_purge_hints), so that the hot data around the descriptor keeps its pages;
       row bin holds up to MI_SLOT_HINTS of the slots in purge[small or medium] whose last page was of the bin
       (freed_bin == bin + 1), the newest kept; a slot leaves them when it leaves its queue.
       A new page of the bin takes one of them first: the slot holds what a page of the same
       class left resident, which the new page will most likely reach too (segment.c,
       mi_segment_find_hinted_slot);
     empty[kind]: with MI_SEGMENT_KEEP_EMPTY, a segment of the kind without pages in use kept
       (in its free queue) so pages that come and go at the edge of a segment do not map and
       unmap it; freed on mi_collect(true);
     abandoned_pages[bin] (bin < MI_BIN_HUGE_INTERNAL): its abandoned pages that can hold more
       than one block, linked through page->next/prev; abandoned_pages[MI_BIN_HUGE_INTERNAL]:
       the others (one block each: large and huge pages); a page is on a list <=>
       abandoned_listed and abandon_lists == NULL; abandoned_count is the number of listed
       pages. A thread that needs a page of a bin takes one with room from its list (abandon.c).
       A page whose abandon_lists is set goes on those lists of the same form instead
       (mi_abandoned_lists_t: a live shared heap's, for its theaps' pages), under this lock too;
     segment_count: its segments (standard and huge). */
typedef struct mi_subproc_s {
  struct mi_subproc_s* next;          /* all subprocesses, from _mi_subproc_main (init.c, for fork) */
  mi_lock_t     lock;
  mi_segment_queue_t free[MI_PAGE_HUGE];
  mi_purge_queue_t   purge[MI_PAGE_HUGE];
  _Atomic(size_t)    purge_count;
  _Atomic(mi_msecs_t) purge_next;     /* at most the earliest purge_expire queued (0: none); for the purger */
  uint8_t       purge_backoff;        /* slot purge delay = purge_delay << purge_backoff (segment.c) */
  bool          purge_reused;         /* a slot purged shortly before was taken again since the last step */
  mi_msecs_t    purge_backoff_time;   /* the last step back (at most one per 10 purge delays) */
  struct mi_segment_s* empty[MI_PAGE_HUGE];
  size_t        abandoned_count;
  _Atomic(size_t) segment_count;
  _Atomic(struct mi_page_s*) abandoned_pages[MI_BIN_HUGE_INTERNAL + 1];   /* modified under the lock; peeked without it */
} mi_subproc_t;

/* Abandoned page lists apart from a subprocess' (abandon.c), for pages only their owner's heaps
   may adopt: a page's abandon_lists. Their owner (a shared heap, sheap.c) is opaque to the
   page and abandonment code. Invariants:
     pages[bin], count: as a subprocess' lists (mi_subproc_t): a page is on them <=>
       abandoned_listed and page->abandon_lists == this; changed only under subproc->lock, and
       only pages of segments of `subproc` (a page of another subprocess' segment goes to its
       own subprocess' lists);
     walks: the walks of the lists for statistics (_mi_abandoned_lists_pages), numbered from 1,
       incremented under subproc->lock. */
typedef struct mi_abandoned_lists_s {
  mi_subproc_t*       subproc;          /* whose lock guards them; never changes */
  size_t              count;            /* pages on the lists (under subproc->lock) */
  _Atomic(size_t)     walks;
  _Atomic(mi_page_t*) pages[MI_BIN_HUGE_INTERNAL + 1];   /* by bin (under subproc->lock; peeked without it) */
} mi_abandoned_lists_t;

/* Secure builds keep their subprocess' last empty segment of each kind instead of returning it
   to its arena at once: a segment costs them two guard system calls (its header's guard, and
   removing all guards when it goes back), and the memory of a guard page faults in again in the
   next segment there. mstress (threads of a few milliseconds that make and empty 1,500 medium and
   large segments each way, when segments were the threads'): 0.56 -> 0.50 s and 55K -> 40K page
   faults. Release builds free it: kept, malloc-large held 7 MiB more (its huge blocks could not
   use the kept segments' memory), and mstress 10% more when segments were the threads'. */
#ifndef MI_SEGMENT_KEEP_EMPTY
#define MI_SEGMENT_KEEP_EMPTY (MI_SECURE > 0)
#endif

/* Arena runs of at least MI_ARENA_UNPURGED_MAX bytes (huge blocks) that a thread freed last: they
   wait for the arena purge delay, but the thread's end purges what of them still waits (segment.c,
   _mi_segments_big_freed_purge): an ending thread will not reuse them (big-values: 1.15x the live
   data right after the joins, 1.01x with this). A ring; an entry may be stale (reused, purged). */
#define MI_BIG_FREED_SLOTS 8
typedef struct mi_arena_run_s {
  int                arena_idx;
  uint32_t           count;        /* arena blocks (0: an empty entry) */
  size_t             block_index;
} mi_arena_run_t;

/* A thread's segment bookkeeping (the segments themselves are its subprocess'). */
typedef struct mi_segments_tld_s {
  uint8_t            purge_tick_skip; /* slow-path calls left before the next look at due purges */
  uint8_t            big_freed_next;  /* the next entry of big_freed to write */
  size_t             created;      /* standard segments this thread created (eager_commit_delay) */
  mi_arena_run_t     big_freed[MI_BIG_FREED_SLOTS];
} mi_segments_tld_t;


/* Statistics (stats.c): the named figures of mimalloc-stats.h plus per-bin figures for our own
   bins. Two kinds of instances:
   - the process totals _mi_stats_main, updated with atomic operations: the OS, segment, page
     and huge-block figures go there directly (they change on slow paths only), and every
     thread's own figures are added at thread exit or mi_stats_merge;
   - a thread's own figures, tld->stats, plain memory touched only by that thread: slow-path
     counters, and with MI_STAT > 1 the malloc_* and bin figures of non-huge blocks.
   No figure is ever negative. For the thread figures of blocks this holds because a block
   counts in the thread that owns its page: local frees and collected thread-free lists
   decrease the owner's figures, and when a page changes owner (abandoned at thread exit,
   reclaimed later) its live blocks move between the thread's figures and the process
   totals (_mi_stat_page_transfer). */
#define MI_STAT_COUNT(name)    mi_stat_count_t name;
#define MI_STAT_COUNTER(name)  mi_stat_counter_t name;
typedef struct mi_stats_data_s {
  MI_STAT_FIELDS()
  mi_stat_count_t malloc_bins[MI_BIN_HUGE_INTERNAL + 1];   /* live blocks' bytes per bin */
  mi_stat_count_t page_bins[MI_BIN_HUGE_INTERNAL + 1];     /* pages per bin */
} mi_stats_data_t;
#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER

typedef struct mi_tld_s {
  unsigned long long  heartbeat;      /* incremented on every generic (slow-path) allocation */
  bool                recurse;        /* guards the deferred-free callback against recursion */
  mi_heap_t*          heap_backing;   /* the thread's first heap; lives until thread exit */
  mi_heap_t*          heaps;          /* all heaps of this thread, linked through heap->next */
  mi_subproc_t*       subproc;
  mi_segments_tld_t   segments;
  mi_stats_data_t     stats;          /* this thread's figures (see above) */
  mi_stats_data_t     stats_published; /* current values already added to the totals */
  /* The live view's state of this thread (live.c, MIMALLOC_LIVE only), or NULL: its slot, peaks
     and counts, and the lock by which another thread may read its heaps. The core sees only the
     part it touches, observe.h's mi_live_head_t (through mi_live_enter/leave and
     mi_live_count_freed); live.c owns the rest and gives and takes it back: set at thread start
     while the view is on, else at the first publication; returned at thread end. */
  struct mi_live_head_s* live;
  /* the one-entry cache of the shared-heap lookup (sheap.c): the last shared heap this thread
     allocated in and its theap of it, both NULL or theap->sheap == sheap and theap in this
     thread's heaps (cleared when that theap goes) */
  struct { struct mi_sheap_s* sheap; mi_heap_t* theap; } sheap_last;
  /* the list of threads whose backing heap the purger may empty pages of while the thread
     sleeps (heap-idle.c), under its lock */
  /* cross-thread frees this thread holds back (remote.c, MI_REMOTE_BATCH): slot i holds
     blocks of one page whose descriptor address hashes to i, linked head to tail, count < the
     page's remote_batch; they count as used in their page until pushed. remote_batch_used is
     the number of slots with a page. */
#if MI_REMOTE_BATCH
  struct mi_remote_batch_s { mi_page_t* page; mi_block_t* head; mi_block_t* tail; size_t count; } remote_batch[MI_REMOTE_BATCH_SLOTS];
  size_t              remote_batch_used;
#endif
  /* the purger's list of threads (heap-idle.c), under its lock. Invariant: a listed tld is
     never freed or reused (init.c, _mi_thread_done: one that cannot leave is kept) */
  struct mi_tld_s*    idle_next;
  struct mi_tld_s*    idle_prev;
  bool                idle_listed;
} mi_tld_t;

/* A heap. Owned by the thread that created it; only that thread allocates from it.
   Invariants:
     pages_free_direct[w] == pages[bin(w*8)].first, or &_mi_page_empty if that queue is empty
       (w <= MI_SMALL_WSIZE_MAX; the last entry is always &_mi_page_empty);
     pages_medium_direct[b] == pages[b].first for medium bins b;
     with the profiler on (prof != NULL) both tables point at the heap's proxy pages instead,
       whose free lists are leased from pages[b].first (prof.c has the lease's invariants);
     the table of real first pages, mi_heap_direct_real(heap) (prof-hook.h), is
       pages_free_direct itself, or with the profiler on the profiler's copy in its state
       (prof->head.direct), which holds what pages_free_direct would: page.c's queue updates
       write through mi_heap_direct_real, and the counted entry points read it (prof-entry.c,
       through _mi_thread_tls.prof_direct while the heap is its thread's default);
     every page in pages[b] has xheap == this heap, and MI_PAGE_IN_FULL set iff b == MI_BIN_FULL;
     the queues are doubly linked (first->prev == NULL, each page->next->prev == page, last);
     every page in pages[b] (b < MI_BIN_HUGE_INTERNAL) has block_size == _mi_page_bin_size(b);
     page_count == total number of pages in all queues;
     tld == NULL  <=> the heap is the static empty heap of an uninitialised thread;
     tld == MI_SHEAP_MARK <=> it is not a heap but a shared heap (mi_sheap_t, which starts with
       that word): the public mi_heap_* functions tell the two apart by this word alone;
     sheap != NULL <=> a theap of that shared heap (allocated by sheap.c with its list link
       and published figures behind it, mi_sheap_part_t): on its list of theaps until the
       heap is freed, never a thread's backing heap, and only its own thread allocates in it
       (as in any heap); it may be its thread's default (mi_heap_set_default) while its shared heap is live: a theap that ends sets its thread's
       default back to the backing heap first (heap.c, sheap.c), and a default whose shared heap
       another thread ended goes back in the slow path's periodic work (at the latest the
       fourth allocation off the fast path; alloc.c, _mi_malloc_generic), before the profiler's
       slow path, or at mi_heap_get_default or mi_collect, before any sweep ends it. */
struct mi_heap_s {
  mi_tld_t*             tld;
  mi_page_t*            pages_free_direct[MI_PAGES_DIRECT];
  mi_page_queue_t       pages[MI_BIN_FULL + 1];
  _Atomic(mi_block_t*)  thread_delayed_free;
  uintptr_t             thread_id;
  size_t                page_count;
  size_t                page_fresh;        /* fresh pages taken since the last sweep (heap.c) */
  size_t                page_retired_min;  /* range of bins that may hold a retired page */
  size_t                page_retired_max;
  mi_heap_t*            next;
  bool                  allow_destroy;     /* may be destroyed; never reclaims abandoned memory
                                              (but a theap its shared heap's, abandon.c) */
  mi_msecs_t            last_collect;      /* time of the last periodic collect (page.c) */
  uint8_t               tag;
  mi_arena_id_t         arena_id;
  _Atomic(int)          numa_node;         /* the NUMA node its new pages' memory prefers, -1: none
                                              (a theap: its shared heap's, set by any thread;
                                              a backing heap follows the main heap's: segment.c) */
#if MI_GUARDED > 0
  /* sampled guarded objects (guarded.c): malloc samples when the count is 0, else decrements
     it; SIZE_MAX when the rate is 0 (never reaches 0); the empty heap's 0 sends its calls to
     the sampler, which passes them on unsampled */
  size_t                guarded_sample_count;
  size_t                guarded_sample_rate;   /* 1 in N eligible allocations; 0: none */
  size_t                guarded_size_min;      /* eligible sizes: [min, max] */
  size_t                guarded_size_max;
  bool                  guarded_used;          /* a guarded block came from here: no destroy */
#endif
  /* The first page of each medium bin, read by the medium fast path (alloc.c) instead of
     pages[bin].first; with the profiler on it points at the bin's proxy page (prof.c), as
     pages_free_direct does for small bins. */
  mi_page_t*            pages_medium_direct[MI_BIN_HUGE_INTERNAL];
  struct mi_prof_s*     prof;              /* the sampling profiler's state (prof.c; its start,
                                              mi_prof_head_t, is read by the core); NULL: off.
                                              The profiler's one field in the heap */
  struct mi_sheap_s*    sheap;             /* the shared-heap layer's one field (sheap.c): the
                                              shared heap this is the thread's part of, or NULL */
  /* Idle reclaim (heap-idle.c): the purger gives back full pages whose blocks other threads
     freed all while the owner sleeps. The owner's slow paths that may touch a full page run
     in an owner section: idle_owner is odd inside one (nesting counted in idle_depth), and
     the purger works on the heap only while idle_purger is 1 and idle_owner was even and
     unchanged since its last look (a Dekker handshake, sequentially consistent): the owner
     then waits, the purger stops at its next page. The fast paths never touch a full page. */
  _Atomic(size_t)       idle_owner;        /* written by the owner only */
  size_t                idle_depth;        /* owner: nesting of its sections */
  _Atomic(int)          idle_purger;       /* 1 while the purger works on the heap's pages */
  size_t                idle_seen;         /* purger: idle_owner at its last look */
  _Atomic(size_t)       idle_emptied;      /* full pages the purger emptied (MI_TF_EMPTIED), not yet freed by the owner */
  mi_abandoned_lists_t* pages_lists;       /* where its pages go when abandoned (mi_page_t.
                                              abandon_lists): its shared heap's for a theap, its
                                              theap's for the sample heap of a theap (prof.c),
                                              else NULL (the subprocess') */
};

/* A shared heap (sheap.c): a mi_heap_t* of the public API that any thread may allocate in. It
   holds no pages: each thread that allocates in it gets its own theap (a mi_heap_t with
   sheap == this), found through the thread's one-entry cache (mi_tld_t.sheap_last) or its list
   of heaps, and made on first use. Blocks are freed from any thread as any block (a page
   belongs to one theap). Invariants:
     mark == MI_SHEAP_MARK (where a heap has its tld: mi_heap_is_shared);
     theaps: every theap whose sheap is this heap, linked through mi_sheap_part_t.next, under `lock`;
       a theap is linked by its own thread when made and unlinked when freed (heap-api.c),
       by its own thread: at thread exit, at a sweep (below), or in mi_heap_delete/destroy of
       the shared heap by that thread;
     state: MI_SHEAP_LIVE until mi_heap_delete or mi_heap_destroy (then _DELETED or
       _DESTROYED, never back; set under `lock`). A theap of a heap that is no longer live is
       deleted (its live blocks move to its thread's backing heap) or destroyed (its blocks
       freed) by its own thread at that thread's next sweep: the periodic step of the
       allocation slow path of its backing heap or of a part of a live shared heap, mi_collect,
       or thread exit;
     _mi_sheaps_dying == number of shared heaps not live and not yet freed;
     the heap is freed by the thread that unlinks its last theap once it is not live (or by
       mi_heap_delete/destroy when no theap is left): freeing is decided under `lock`;
     abandoned: the abandoned lists (mi_abandoned_lists_t) of the pages of its theaps that
       ended with their thread while it was live (its theaps' pages_lists; abandoned.subproc
       is the subprocess of the thread that made it, whose lock guards them; a theap of a
       thread of another subprocess abandons to its own subprocess' lists). A later theap of this heap (any
       thread) takes a page from them before a fresh page; no other heap takes them. Emptied by
       mi_heap_destroy (their blocks freed with the page) or mi_heap_delete (the pages go to the
       subprocess' lists, any heap's to reclaim) while the heap is still live, and again by
       whoever frees the heap (pages left by a theap that ended meanwhile): a page is never on
       the lists of a freed heap. */
#define MI_SHEAP_MARK  ((mi_tld_t*)(uintptr_t)1)
typedef enum mi_sheap_state_e { MI_SHEAP_LIVE, MI_SHEAP_DELETED, MI_SHEAP_DESTROYED } mi_sheap_state_t;
typedef struct mi_sheap_s {
  mi_tld_t*          mark;             /* MI_SHEAP_MARK: the first word, a heap's tld */
  mi_lock_t          lock;
  mi_heap_t*         theaps;           /* under lock */
  _Atomic(int)       state;            /* mi_sheap_state_t; written under lock */
  bool               allow_destroy;    /* its theaps' (mi_heap_new_shared: true; _in_arena: false) */
  mi_arena_id_t      arena_id;         /* its theaps' */
  _Atomic(int)       numa_node;        /* its theaps' (mi_heap_set_numa_affinity), -1: none */
  struct mi_sheap_s* next;             /* all shared heaps, until freed (sheap.c, for fork and
                                          the visitor) */
  struct mi_sheap_s* prev;
  mi_abandoned_lists_t abandoned;      /* its ended theaps' pages (subproc: of the thread that
                                          made it, also its heaps' visitor's; walks: read under
                                          lock when a part ends, sheap.c) */
  _Atomic(mi_stats_data_t*) ended_stats; /* its ended theaps' figures, settled with walk number
                                          ended_walk of `abandoned`, or NULL (stats-v3.c);
                                          written under lock, peeked without */
  size_t             ended_walk;       /* (under lock) */
} mi_sheap_t;

/* Per-thread memory: the backing heap and its tld are allocated together from the OS. */
typedef struct mi_thread_data_s {
  mi_heap_t heap;
  mi_tld_t  tld;
} mi_thread_data_t;

/* Process information from the OS layer. */
typedef struct mi_process_info_s {
  mi_msecs_t elapsed;
  mi_msecs_t utime;
  mi_msecs_t stime;
  size_t     current_rss;
  size_t     peak_rss;
  size_t     current_commit;
  size_t     peak_commit;
  size_t     page_faults;
} mi_process_info_t;
