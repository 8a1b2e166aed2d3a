/* SPDX-License-Identifier: MIT */
/* Layer 2 (docs/design.md, "Layers"): memory from the OS (os.c) and random numbers (random.c);
   bitmaps (bitmap.c), the layer's third file, have bitmap.h. */
#pragma once
#include "base.h"

/* ------------------------------------------------------------------------------------------
   os.c: memory from the OS
------------------------------------------------------------------------------------------ */
void       _mi_os_init(void);
size_t     _mi_os_page_size(void);
size_t     _mi_os_large_page_size(void);
bool       _mi_os_has_overcommit(void);
/* Committed, zeroed memory for the allocator's own metadata. */
void*      _mi_os_alloc(size_t size, bool* is_zero);
void*      _mi_os_alloc_static(size_t size);   /* permanent tables: never freed, not counted */
/* Memory q with (q + align_offset) % alignment == 0; alignment a power of two >= page size.
   commit false: a reservation (inaccessible until committed). *is_large: pinned large pages. */
void*      _mi_os_alloc_aligned_at(size_t size, size_t alignment, size_t align_offset, bool commit, bool allow_large, bool* is_large, bool* is_zero);
/* Address space for an arena, read/write if `accessible`; counted as reserved, not committed. */
void*      _mi_os_reserve_aligned(size_t size, size_t alignment, bool accessible, bool allow_large, bool* is_large);
void       _mi_os_free(void* p, size_t size);                           /* all of it committed */
void       _mi_os_free_ex(void* p, size_t size, size_t committed_size);
/* Commit (counted; mprotect read/write only with `syscall`); false on failure. */
bool       _mi_os_commit(void* p, size_t size, bool syscall);
/* Decommit: RSS falls at once, reads as zero; `protect` also makes it inaccessible. False if
   the OS refused: still committed, contents kept. */
bool       _mi_os_decommit(void* p, size_t size, bool protect);
/* Contents no longer needed, memory stays committed: MADV_DONTNEED (RSS falls at once; returns
   true: reads as zero), or MADV_FREE when purge_decommits is off (returns false). */
bool       _mi_os_discard(void* p, size_t size);
/* Purge per mi_option_purge_decommits: decommit (returns true: must be committed again before
   use, and reads as zero) or discard (returns false: stays committed, contents undefined; so
   does a decommit the OS refused). */
bool       _mi_os_purge(void* p, size_t size, bool protect);
/* [p, p+size) (whole OS pages) becomes a guard (install) or normal memory; false if it cannot
   (may_protect: PROT_NONE is an acceptable fallback for this memory) */
bool       _mi_os_guard(void* p, size_t size, bool install, bool may_protect);
size_t     _mi_os_numa_node_count(void);   /* detected, capped by use_numa_nodes; >= 1 */
int        _mi_os_numa_node(void);         /* node of the calling thread, < count */
size_t     _mi_os_good_alloc_size(size_t size);

/* ------------------------------------------------------------------------------------------
   random.c
------------------------------------------------------------------------------------------ */
uintptr_t  _mi_random_next(void);     /* process-wide, thread-safe, not for cryptography */
uintptr_t  _mi_random_shuffle(uintptr_t x);
