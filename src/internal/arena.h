/* SPDX-License-Identifier: MIT */
/* Layer 3 (docs/design.md, "Layers"): the arenas (src/arena.c) and the purge of their free
   blocks (src/arena-purge.c): what the segments, the OS layer's users and the validators need of
   them, and the descriptor the two arena files share; the segment map (src/segment-map.c), the
   layer's third file, with the inline lookup of free's fast path. */
#pragma once
#include "os.h"
#include "bitmap.h"

/* ------------------------------------------------------------------------------------------
   arena.c: arenas
------------------------------------------------------------------------------------------ */
/* Memory for a segment: from the arenas (only req_arena_id's if not 0) when the size and
   alignment fit, else straight from the OS; NULL with errno ENOMEM when that is not allowed.
   numa_node >= 0: only memory of that node or of none (arenas, one reserved on demand for it),
   else NULL (the caller then asks without it); -1: the calling thread's node first, then any. */
void*      _mi_arena_alloc_aligned(size_t size, size_t alignment, size_t align_offset, bool commit, mi_arena_id_t req_arena_id,
                                   int numa_node, mi_memid_t* memid);
bool       _mi_arena_memid_on_node(const mi_memid_t* memid, int numa_node);   /* memory of that node, or of
                                                                                 none known (OS memory) */
/* Give memory back with committed_size bytes of it committed (counted): all of it, or none.
   Committed arena blocks are purged after a delay. */
void       _mi_arena_free(void* p, size_t size, size_t committed_size, const mi_memid_t* memid);
/* Extend memid's arena allocation in place to at least newsize bytes when the blocks after it
   are free (committed; *ext_zero: the added memory is zero); false, and nothing changed, else. */
bool       _mi_arena_try_expand(mi_memid_t* memid, size_t newsize, bool* ext_zero);
/* The program's commit (commit: true, is_zero may be set) or decommit (false, is_zero NULL) of
   [start, start+size) for an arena of mi_manage_memory; false if it could not. */
typedef bool (mi_cdecl mi_arena_commit_fun_t)(bool commit, void* start, size_t size, bool* is_zero, void* arg);
/* mi_manage_os_memory_ex with a commit function (NULL: the OS's); v3's mi_manage_memory */
bool       _mi_arena_manage_memory(void* start, size_t size, bool is_committed, bool is_pinned, bool is_zero, int numa_node,
                                   bool exclusive, mi_arena_commit_fun_t* commit_fun, void* commit_fun_arg, mi_arena_id_t* arena_id);
/* Commit, purge (true: decommitted, else only discarded or refused: still committed) and
   decommit (true: done) part of memid's memory, by the OS or by its arena's commit function */
bool       _mi_arena_commit(const mi_memid_t* memid, void* p, size_t size);
bool       _mi_arena_purge(const mi_memid_t* memid, void* p, size_t size);
bool       _mi_arena_decommit(const mi_memid_t* memid, void* p, size_t size);
bool       _mi_arena_memid_is_suitable(const mi_memid_t* memid, mi_arena_id_t req_arena_id);
bool       _mi_arena_id_is_valid(mi_arena_id_t id);
void       _mi_arenas_init_reserve(void);
/* An arena's descriptor as the validators see it (validate.c): the four bitmaps of mi_arena_t (below) */
typedef struct mi_arena_view_s {
  uint8_t*            start;          /* NULL while released */
  size_t              block_count;
  size_t              field_count;
  bool                is_pinned;
  bool                exclusive;
  bool                commit_syscall;
  bool                commit_fun;     /* commits through the program's function */
  int                 state;          /* 0 mapped, 1 released, 2 busy (arena.c, mi_arena_state_t) */
  size_t              blocks_used;
  _Atomic(size_t)*    inuse;          /* field_count words each (internal/bitmap.h) */
  _Atomic(size_t)*    committed;
  _Atomic(size_t)*    dirty;
  _Atomic(size_t)*    purge;
  _Atomic(mi_msecs_t)* purge_due;     /* block_count deadlines */
  _Atomic(mi_msecs_t)* purge_expire;  /* the arena's earliest deadline (0: none) */
} mi_arena_view_t;
bool       _mi_arena_view(size_t idx, mi_arena_view_t* view);
size_t     _mi_arena_slots(void);         /* arena slots taken (some may be empty briefly) */

/* ------------------------------------------------------------------------------------------
   arena-purge.c: the delayed purge of free arena blocks, and the release of empty arenas
------------------------------------------------------------------------------------------ */
extern _Atomic(size_t) _mi_arenas_purge_pending;   /* some arena may have a purge scheduled */
/* The due purges (all with force); thread-safe. try_purge never waits: an arena whose pass is in
   progress elsewhere is left to that pass (the allocator's own activity, the purger). collect
   (mi_collect) waits for such a pass, so the due purges are done when it returns. */
void       _mi_arenas_purge_try(bool force);
void       _mi_arenas_purge_collect(bool force);
void       _mi_arenas_purge_fork_prepare(void);   /* no arena purge pass runs across a fork */
void       _mi_arenas_purge_fork_release(void);   /* parent and child */
void       _mi_arenas_purge_show_policy(void);   /* the verbose line of the purge policy (start-up) */

/* ------------------------------------------------------------------------------------------
   The arena descriptor, and the helpers arena.c and arena-purge.c share (no other file uses
   them: the validators see an arena through mi_arena_view_t)

   Per arena four bitmaps with one bit per block (bitmap.h), all changed with atomic operations,
   so arenas are never locked:
     inuse      the block belongs to a segment, or to a purge in progress (a claim);
     committed  the block is committed (counted in the committed statistic);
     dirty      the block may hold non-zero bytes;
     purge      the block is free and waits for its delayed purge.
   Invariants: purge ⊆ committed; a block in use is committed unless its segment commits page
   by page itself (it gives the blocks back fully committed); pinned arenas (large/huge OS
   pages) are committed from the start and never purged. Only a claimer of the inuse bits
   changes the other bits of its blocks, so a purge and an allocation of the same blocks never
   overlap: both claim the inuse bits first.
------------------------------------------------------------------------------------------ */
typedef enum mi_arena_state_e { MI_ARENA_MAPPED, MI_ARENA_RELEASED, MI_ARENA_BUSY } mi_arena_state_t;

typedef struct mi_arena_s {
  _Atomic(uint8_t*)    start;            /* NULL while released */
  size_t               block_count;
  size_t               field_count;
  size_t               meta_size;        /* bytes of this descriptor (mi_arena_meta_alloc) */
  int                  numa_node;        /* -1: any */
  bool                 exclusive;
  bool                 is_pinned;        /* large or huge OS pages */
  bool                 commit_syscall;   /* reserved inaccessible: commit with mprotect (or commit_fun) */
  mi_arena_commit_fun_t* commit_fun;     /* the program's commit and decommit (mi_manage_memory), or
                                            NULL: the OS's. Set: commit_syscall too, never on_demand */
  void*                commit_fun_arg;
  bool                 is_huge_pages;    /* 1 GiB pages */
  bool                 purge_zeroes;     /* our private anonymous memory: a decommit zeroes it
                                            (not so for memory we manage, e.g. a shared file) */
  bool                 on_demand;        /* reserved by us when memory ran out: released when
                                            it is entirely free (except the first such arena)
                                            and mapped again when needed (arena-purge.c, Release) */
  _Atomic(int)         state;            /* mi_arena_state_t (always MAPPED unless on_demand) */
  _Atomic(size_t)      blocks_used;      /* blocks handed out */
  _Atomic(mi_msecs_t)  purge_expire;     /* 0: no purge scheduled; else <= every waiting block's deadline
                                            (while no pass holds purge_lock) */
  mi_lock_t            purge_lock;       /* held by the one purge pass of the arena (arena-purge.c) */
  bool                 purge_fork_held;  /* purge_lock is held by the forking thread (fork handlers) */
  mi_lock_t            commit_lock;      /* held around every call of commit_fun: the program's
                                            function is never called twice at once for an arena
                                            (an allocation's commit beside a purge pass's
                                            decommit), so it needs no lock of its own; a leaf */
  _Atomic(mi_msecs_t)* purge_due;        /* per block: deadline of its purge while its purge bit is
                                            set; after a purge: the time of the purge (or 0) */
  mi_bitmap_field_t*   blocks_committed;
  mi_bitmap_field_t*   blocks_dirty;
  mi_bitmap_field_t*   blocks_purge;
  mi_bitmap_field_t    blocks_inuse[1];  /* field_count fields, then the three other bitmaps */
} mi_arena_t;

extern _Atomic(size_t) _mi_arenas_inuse;   /* blocks handed out (in use by segments), all arenas */
mi_arena_t* _mi_arena_at(size_t idx);      /* the arena in slot idx; NULL if empty or out of range */
static inline uint8_t* _mi_arena_start(mi_arena_t* arena) {   /* NULL while released */
  return mi_atomic_load_relaxed(&arena->start);
}
/* Decommit [p, p+size) of the arena (purge: as a purge, which the OS may do by discarding), by
   the OS or the program's function; true if decommitted, false if it stays committed. */
bool       _mi_arena_mem_decommit(mi_arena_t* arena, void* p, size_t size, bool purge);
/* Blocks [idx, idx+count) the caller holds in use (claimed) and gives back: their purge is
   scheduled after the delay (done now with purge_delay 0; never for a pinned arena). */
void       _mi_arena_purge_schedule(mi_arena_t* arena, size_t idx, size_t count);
/* Blocks [idx, idx+count) the caller just claimed for use: their pending purge is cancelled
   (and one done shortly before counts as done in vain: the budget grows). */
void       _mi_arena_purge_unschedule(mi_arena_t* arena, size_t idx, size_t count);
/* An arena reserved on demand became entirely free: a pass releases it after the delay if it
   is still free then (never with purge_delay < 0). */
void       _mi_arena_purge_schedule_release(mi_arena_t* arena);
/* Purge now the blocks of [idx, idx+count) of arena `arena_idx` that are free and wait for their
   purge (those in use again are left alone); any thread, no lock held. */
void       _mi_arena_purge_run_now(int arena_idx, size_t idx, size_t count);

/* ------------------------------------------------------------------------------------------
   segment-map.c: the segment map (which memory holds our segments)
------------------------------------------------------------------------------------------ */
bool       _mi_segment_map_can_hold(const void* start, size_t size);
/* segment-map.c: the covered map's parts for [start, start + size) (false: out of memory); a
   segment's entries set (on) or cleared */
bool       _mi_segment_map_prepare(const void* start, size_t size);
mi_segment_t* _mi_segment_map_alloc(size_t size, size_t alignment, size_t align_offset, bool commit,
                                    mi_arena_id_t req_arena_id, int numa_node, mi_memid_t* memid);   /* memory the map can hold, from the arenas */
void       _mi_segment_map_set(const mi_segment_t* segment, bool on);
bool       _mi_segment_map_covers(const void* p);          /* p is inside one of our segments */
mi_segment_t* _mi_segment_map_segment_of(const void* p);   /* the segment p lies in (also inside a huge one), or NULL */
void       _mi_segment_map_visit(void (*visit)(mi_segment_t* segment, void* arg), void* arg);   /* every segment */

/* The segment-start map (segment.c): one byte per MI_SEGMENT_SIZE chunk of the user address
   space; non-zero iff one of our segments starts in that chunk, and then it is the segment's
   page_shift (16, 19 or 63), so free gets its page index without loading the header field.
   The range is the user address space Linux hands out without an explicit mmap hint (we never
   pass one), per target:
     x86-64   2^47 (4-level paging; 5-level paging maps above 2^47 only for a hint beyond it)
     riscv64  2^47 (Sv48; Sv39 gives 2^38; Sv57 maps above 2^47 only for a hint beyond it)
     aarch64  2^48 (48-bit VA; kernels with 52-bit VA map above 2^48 only for a hint beyond
              it; 39/42-bit VA kernels give less)
     other    2^48, the most that the thread_free word's pointer field holds (below)
   Segments the OS places beyond MI_SEGMENT_MAP_ADDR_BITS are refused with a warning
   (segment.c), so an unexpected layout makes allocation fail visibly, never corrupts the map.
   A lookup needs no range check: the index keeps bits [ADDR_BITS-1, 22] of p - 1.
   NULL - 1 lands on the last chunk, which never holds a segment (refused like the ones beyond),
   so its entry stays 0. A pointer that is not a user address (the kernel half, non-canonical
   values), which no allocator hands out, may alias a user chunk: such garbage is not detected.
   32 MiB (47 bits) or 64 MiB (48 bits) of zero-initialised address space, touched only where
   we have segments. */
#if defined(__x86_64__) || (defined(__riscv) && __riscv_xlen == 64)
#define MI_SEGMENT_MAP_ADDR_BITS  (47)
#else
#define MI_SEGMENT_MAP_ADDR_BITS  (48)
#endif
#define MI_INTPTR_BITS            (8*sizeof(uintptr_t))
#define MI_SEGMENT_MAP_CHUNKS     ((uintptr_t)1 << (MI_SEGMENT_MAP_ADDR_BITS - MI_SEGMENT_SHIFT))
extern _Atomic(uint8_t) _mi_segment_map_start[MI_SEGMENT_MAP_CHUNKS];

/* The page shift of our segment whose first chunk holds p - 1, which every block we hand out
   satisfies (see _mi_ptr_segment); 0 for NULL and for every user-space pointer that is not
   ours, so free and realloc never dereference a foreign pointer. */
static inline size_t _mi_ptr_page_shift(const void* p) {
  const uintptr_t chunk = (((uintptr_t)p - 1) << (MI_INTPTR_BITS - MI_SEGMENT_MAP_ADDR_BITS))
                          >> (MI_INTPTR_BITS - MI_SEGMENT_MAP_ADDR_BITS + MI_SEGMENT_SHIFT);
  return mi_atomic_load_relaxed(&_mi_segment_map_start[chunk]);
}
/* The segment of p when p is known to be ours. */
static inline mi_segment_t* _mi_ptr_segment_unchecked(const void* p) {
  return (mi_segment_t*)(((uintptr_t)p - 1) & ~MI_SEGMENT_MASK);
}
/* Like _mi_ptr_segment, but NULL also for every pointer that is not ours. */
static inline mi_segment_t* _mi_ptr_segment_checked(const void* p) {
  return (_mi_ptr_page_shift(p) != 0 ? _mi_ptr_segment_unchecked(p) : NULL);
}
