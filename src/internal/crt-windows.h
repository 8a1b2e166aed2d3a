/* SPDX-License-Identifier: MIT */
/* The C runtime's allocation semantics on this allocator's blocks, shared by Windows' static
   override (override-windows.c) and its redirecting DLL (redirect-windows.c); what each does with
   a block that is not ours stays in its own file. Public mi_ API only. */
#pragma once
#include <errno.h>
#include "mimalloc.h"

/* The CRT's alignment rule: a power of two, else EINVAL. */
static inline int mi_crt_alignment_ok(size_t alignment) {
  if (alignment != 0 && (alignment & (alignment - 1)) == 0) return 1;
  errno = EINVAL;
  return 0;
}

/* realloc of one of our blocks (or NULL): the CRT frees on a zero size and returns NULL
   (mi_realloc would return a new block). */
static inline void* mi_crt_realloc(void* p, size_t newsize) {
  if (p != NULL && newsize == 0) { mi_free(p); return NULL; }
  return mi_realloc(p, newsize);
}

/* _aligned_malloc(size, alignment): the CRT's argument order. */
static inline void* mi_crt_aligned_malloc(size_t size, size_t alignment) {
  if (!mi_crt_alignment_ok(alignment)) return NULL;
  return mi_malloc_aligned(size, alignment);
}

/* _aligned_offset_malloc: the offset must lie inside the block (EINVAL). */
static inline void* mi_crt_aligned_offset_malloc(size_t size, size_t alignment, size_t offset) {
  if (!mi_crt_alignment_ok(alignment)) return NULL;
  if (size != 0 && offset >= size) { errno = EINVAL; return NULL; }
  return mi_malloc_aligned_at(size, alignment, offset);
}
