/* SPDX-License-Identifier: MIT */
/* ----------------------------------------------------------------------------
  mimalloc-stats.h -- machine-readable statistics.

  Usage:
      mi_stats_t_decl(stats);            // zeroed, size and version filled in
      if (mi_stats_get(&stats)) { ... stats.committed.current ... }

  The layout is versioned by MI_STAT_VERSION; mi_stats_get refuses a struct
  whose `size` or `version` does not match the library.
---------------------------------------------------------------------------- */
#pragma once
#ifndef MIMALLOC_STATS_H
#define MIMALLOC_STATS_H

#include "mimalloc.h"
#include <stdint.h>

#if defined(MI_V3_API)
/* v3 mode (MI_V3_API defined before mimalloc.h, docs/v3-api.md): mimalloc 3.x's statistics,
   version 5 of the layout, with per-heap and per-subprocess figures. mi_stats_get and the
   functions below tell the layout of the caller's struct by its `size` and `version`, so one
   library serves both modes. What each figure means for a heap and a subprocess here:
   docs/statistics.md, "Heaps and subprocesses". */
#include <string.h>   /* memset, for mi_stats_init */

#define MI_STAT_VERSION   5

typedef struct mi_stat_count_s {
  int64_t total;      /* sum of all increases */
  int64_t peak;       /* highest value of `current` seen */
  int64_t current;    /* value now */
} mi_stat_count_t;

typedef struct mi_stat_counter_s {
  int64_t total;
} mi_stat_counter_t;

/* v3's named figures in layout order (X-macro, as in v2 mode), with its four new ones:
   heaps, theaps and heaps_delete_wait */
#define MI_STAT_FIELDS() \
  MI_STAT_COUNT(pages)                      /* pages in use */ \
  MI_STAT_COUNT(reserved)                   /* bytes of address space reserved */ \
  MI_STAT_COUNT(committed)                  /* bytes committed */ \
  MI_STAT_COUNTER(reset)                    /* bytes reset */ \
  MI_STAT_COUNTER(purged)                   /* bytes purged */ \
  MI_STAT_COUNT(page_committed)             /* bytes of committed page memory ("touched") */ \
  MI_STAT_COUNT(pages_abandoned)            /* abandoned pages */ \
  MI_STAT_COUNT(threads)                    /* threads */ \
  MI_STAT_COUNT(malloc_normal)              /* bytes in binned (non-huge) blocks */ \
  MI_STAT_COUNT(malloc_huge)                /* bytes in huge blocks */ \
  MI_STAT_COUNT(malloc_requested)           /* bytes requested by the program */ \
  \
  MI_STAT_COUNTER(mmap_calls)               /* OS memory mappings */ \
  MI_STAT_COUNTER(commit_calls)             /* OS commit calls */ \
  MI_STAT_COUNTER(reset_calls)              /* OS reset calls */ \
  MI_STAT_COUNTER(purge_calls)              /* OS purge calls */ \
  MI_STAT_COUNTER(arena_count)              /* arenas created */ \
  MI_STAT_COUNTER(malloc_normal_count)      /* normal allocations */ \
  MI_STAT_COUNTER(malloc_huge_count)        /* huge allocations */ \
  MI_STAT_COUNTER(malloc_guarded_count)     /* allocations given a guard page */ \
  MI_STAT_COUNTER(arena_rollback_count)     /* arena reservations rolled back */ \
  MI_STAT_COUNTER(arena_purges)             /* arena purge passes */ \
  MI_STAT_COUNTER(pages_extended)           /* page free-list extensions */ \
  MI_STAT_COUNTER(pages_retire)             /* pages retired */ \
  MI_STAT_COUNTER(page_searches)            /* pages visited while searching */ \
  MI_STAT_COUNTER(page_searches_count)      /* page searches */ \
  \
  MI_STAT_COUNT(segments)                   /* segments */ \
  MI_STAT_COUNT(segments_abandoned)         /* abandoned segments */ \
  MI_STAT_COUNT(segments_cache)             /* cached segments */ \
  MI_STAT_COUNT(_segments_reserved)         /* reserved, unused */ \
  \
  MI_STAT_COUNT(heaps)                      /* heaps of mi_heap_new, and the main heap */ \
  MI_STAT_COUNT(theaps)                     /* threads' parts of those heaps */ \
  MI_STAT_COUNTER(pages_reclaim_on_alloc)   /* stays 0 */ \
  MI_STAT_COUNTER(pages_reclaim_on_free)    /* stays 0 */ \
  MI_STAT_COUNTER(pages_reabandon_full)     /* stays 0 */ \
  MI_STAT_COUNTER(pages_unabandon_busy_wait) /* stays 0 */ \
  MI_STAT_COUNTER(heaps_delete_wait)        /* stays 0 */

/* mimalloc 3.x's kinds of arena chunk, for chunk_bins (always zero here: no chunks) */
typedef enum mi_chunkbin_e {
  MI_CBIN_SMALL,
  MI_CBIN_OTHER,
  MI_CBIN_MEDIUM,
  MI_CBIN_LARGE,
  MI_CBIN_HUGE,
  MI_CBIN_NONE,
  MI_CBIN_COUNT
} mi_chunkbin_t;

/* Index of the huge-size bin; the bin arrays have MI_BIN_HUGE+1 entries (mi_stats_get_bin_size
   gives each bin's block size). */
#define MI_BIN_HUGE  (73U)

#define MI_STAT_COUNT(stat)    mi_stat_count_t   stat;
#define MI_STAT_COUNTER(stat)  mi_stat_counter_t stat;

typedef struct mi_stats_s {
  size_t size;          /* sizeof(mi_stats_t) */
  size_t version;       /* MI_STAT_VERSION */

  MI_STAT_FIELDS()

  mi_stat_count_t   _stat_reserved[4];          /* room for growth */
  mi_stat_counter_t _stat_counter_reserved[4];  /* room for growth */

  mi_stat_count_t   malloc_bins[MI_BIN_HUGE+1]; /* live blocks per size bin */
  mi_stat_count_t   page_bins[MI_BIN_HUGE+1];   /* pages per size bin */
  mi_stat_count_t   chunk_bins[MI_CBIN_COUNT];  /* zero here */
} mi_stats_t;

#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER

/* Set `size` and `version` (mi_stats_header_init), or zero the struct and set them. */
static inline void mi_stats_header_init(mi_stats_t* stats) {
  stats->size = sizeof(*stats);
  stats->version = MI_STAT_VERSION;
}
static inline void mi_stats_init(mi_stats_t* stats) {
  memset(stats, 0, sizeof(*stats));
  mi_stats_header_init(stats);
}

/* Declare `mi_stats_t name`, zeroed, with size and version set (statements: block scope). */
#define mi_stats_t_decl(name)  mi_stats_t name; mi_stats_init(&name);

#if defined(__cplusplus)
extern "C" {
#endif

/* A heap's figures (all threads' parts; docs/statistics.md says how fresh each is). */
mi_decl_export bool  mi_heap_stats_get(mi_heap_t* heap, mi_stats_t* stats) mi_attr_noexcept;
mi_decl_export char* mi_heap_stats_get_json(mi_heap_t* heap, size_t buf_size, char* buf) mi_attr_noexcept;
mi_decl_export void  mi_heap_stats_print_out(mi_heap_t* heap, mi_output_fun* out, void* arg) mi_attr_noexcept;

/* A subprocess' figures, its heaps' included (the main subprocess: the process'). */
mi_decl_export bool  mi_subproc_stats_get(mi_subproc_id_t subproc_id, mi_stats_t* stats) mi_attr_noexcept;
mi_decl_export char* mi_subproc_stats_get_json(mi_subproc_id_t subproc_id, size_t buf_size, char* buf) mi_attr_noexcept;
mi_decl_export void  mi_subproc_stats_print_out(mi_subproc_id_t subproc_id, mi_output_fun* out, void* arg) mi_attr_noexcept;
/* The subprocess' figures, then each of its heaps' on its own. */
mi_decl_export void  mi_subproc_heap_stats_print_out(mi_subproc_id_t subproc_id, mi_output_fun* out, void* arg) mi_attr_noexcept;

/* The process' figures (mi_stats_print_out: mimalloc.h). */
mi_decl_export bool  mi_stats_get(mi_stats_t* stats) mi_attr_noexcept;
mi_decl_export char* mi_stats_get_json(size_t buf_size, char* buf) mi_attr_noexcept;

/* Publish the calling thread's part of the heap, for other threads' calls to see. */
mi_decl_export void  mi_heap_stats_merge_to_subproc(mi_heap_t* heap);

/* The subprocess' own figures, without its heaps'. */
mi_decl_export bool  mi_subproc_stats_get_exclusive(mi_subproc_id_t subproc_id, mi_stats_t* stats) mi_attr_noexcept;

/* `stats` as JSON into buf (buf NULL or buf_size 0: a new block, released with mi_free); NULL
   if it does not fit. */
mi_decl_export char* mi_stats_as_json(mi_stats_t* stats, size_t buf_size, char* buf) mi_attr_noexcept;
/* The largest block size of bin `bin` of malloc_bins and page_bins (0 for no such bin). */
mi_decl_export size_t mi_stats_get_bin_size(size_t bin) mi_attr_noexcept;

#if defined(__cplusplus)
}
#endif

#else  /* v2 mode, the default */
/* Bumped whenever the layout of mi_stats_t changes incompatibly. */
#define MI_STAT_VERSION   4

/* An amount that goes up and down over time (bytes or objects). */
typedef struct mi_stat_count_s {
  int64_t total;      /* sum of all increases */
  int64_t peak;       /* highest value of `current` seen */
  int64_t current;    /* value now */
} mi_stat_count_t;

/* A counter that only increases. */
typedef struct mi_stat_counter_s {
  int64_t total;
} mi_stat_counter_t;

/* All named statistics in layout order, as an X-macro: the user defines
   MI_STAT_COUNT(name) for mi_stat_count_t fields and MI_STAT_COUNTER(name)
   for mi_stat_counter_t fields, then expands MI_STAT_FIELDS(). */
#define MI_STAT_FIELDS() \
  MI_STAT_COUNT(pages)                      /* pages in use */ \
  MI_STAT_COUNT(reserved)                   /* bytes of address space reserved */ \
  MI_STAT_COUNT(committed)                  /* bytes committed */ \
  MI_STAT_COUNTER(reset)                    /* bytes reset */ \
  MI_STAT_COUNTER(purged)                   /* bytes purged */ \
  MI_STAT_COUNT(page_committed)             /* bytes of committed page memory ("touched") */ \
  MI_STAT_COUNT(pages_abandoned)            /* abandoned pages */ \
  MI_STAT_COUNT(threads)                    /* threads */ \
  MI_STAT_COUNT(malloc_normal)              /* bytes in binned (non-huge) blocks */ \
  MI_STAT_COUNT(malloc_huge)                /* bytes in huge blocks */ \
  MI_STAT_COUNT(malloc_requested)           /* bytes requested by the program */ \
  \
  MI_STAT_COUNTER(mmap_calls)               /* OS memory mappings */ \
  MI_STAT_COUNTER(commit_calls)             /* OS commit calls */ \
  MI_STAT_COUNTER(reset_calls)              /* OS reset calls */ \
  MI_STAT_COUNTER(purge_calls)              /* OS purge calls */ \
  MI_STAT_COUNTER(arena_count)              /* arenas created */ \
  MI_STAT_COUNTER(malloc_normal_count)      /* normal allocations */ \
  MI_STAT_COUNTER(malloc_huge_count)        /* huge allocations */ \
  MI_STAT_COUNTER(malloc_guarded_count)     /* allocations given a guard page */ \
  MI_STAT_COUNTER(arena_rollback_count)     /* arena reservations rolled back */ \
  MI_STAT_COUNTER(arena_purges)             /* arena purge passes */ \
  MI_STAT_COUNTER(pages_extended)           /* page free-list extensions */ \
  MI_STAT_COUNTER(pages_retire)             /* pages retired */ \
  MI_STAT_COUNTER(page_searches)            /* pages visited while searching */ \
  MI_STAT_COUNTER(page_searches_count)      /* page searches */ \
  \
  MI_STAT_COUNT(segments)                   /* segments */ \
  MI_STAT_COUNT(segments_abandoned)         /* abandoned segments */ \
  MI_STAT_COUNT(segments_cache)             /* cached segments */ \
  MI_STAT_COUNT(_segments_reserved)         /* reserved, unused */ \
  \
  MI_STAT_COUNTER(pages_reclaim_on_alloc)   /* v3 only: stays 0 */ \
  MI_STAT_COUNTER(pages_reclaim_on_free)    /* v3 only: stays 0 */ \
  MI_STAT_COUNTER(pages_reabandon_full)     /* v3 only: stays 0 */ \
  MI_STAT_COUNTER(pages_unabandon_busy_wait) /* v3 only: stays 0 */

/* Index of the huge-size bin; the bin arrays have MI_BIN_HUGE+1 entries. */
#define MI_BIN_HUGE  (73U)

#define MI_STAT_COUNT(stat)    mi_stat_count_t   stat;
#define MI_STAT_COUNTER(stat)  mi_stat_counter_t stat;

typedef struct mi_stats_s {
  size_t size;          /* must be sizeof(mi_stats_t) */
  size_t version;       /* must be MI_STAT_VERSION */

  MI_STAT_FIELDS()

  mi_stat_count_t   _stat_reserved[4];          /* room for growth */
  mi_stat_counter_t _stat_counter_reserved[4];  /* room for growth */

  mi_stat_count_t   malloc_bins[MI_BIN_HUGE+1]; /* live blocks per size bin */
  mi_stat_count_t   page_bins[MI_BIN_HUGE+1];   /* pages per size bin */
} mi_stats_t;

#undef MI_STAT_COUNT
#undef MI_STAT_COUNTER

/* Declare a zeroed `mi_stats_t name` with `size` and `version` set, ready
   for mi_stats_get. Expands to statements (block scope only). */
#if defined(__cplusplus)
  #define mi_stats_t_decl(name)  mi_stats_t name = mi_stats_t(); name.size = sizeof(mi_stats_t); name.version = MI_STAT_VERSION;
#else
  #define mi_stats_t_decl(name)  mi_stats_t name = { 0 }; name.size = sizeof(mi_stats_t); name.version = MI_STAT_VERSION;
#endif

#if defined(__cplusplus)
extern "C" {
#endif

/* Copy the process-wide statistics into *stats (which must be set up with
   mi_stats_t_decl); false if stats is NULL or its size/version mismatch. */
mi_decl_export bool mi_stats_get(mi_stats_t* stats) mi_attr_noexcept;

/* Render all statistics as a JSON object into buf (or, when buf is NULL or
   buf_size is 0, into a new block to be released with mi_free). Returns NULL
   if the caller's buffer is too small. */
mi_decl_export char* mi_stats_get_json(size_t buf_size, char* buf) mi_attr_noexcept;

#if defined(__cplusplus)
}
#endif

#endif /* MI_V3_API */

#endif /* MIMALLOC_STATS_H */
