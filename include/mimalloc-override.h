/* SPDX-License-Identifier: MIT */
/* ----------------------------------------------------------------------------
  mimalloc-override.h -- redirect the standard allocation names to mi_ ones.

  Include this header (after the system headers) in a translation unit to
  make calls such as malloc(n) or posix_memalign(p,a,n) use this allocator
  at the source level, without any link-time or dynamic override. Memory
  obtained this way must also be released through the redirected names.
  Every redirection is a function-like macro, so taking the address of e.g.
  `free` still refers to the C library function.
---------------------------------------------------------------------------- */
#pragma once
#ifndef MIMALLOC_OVERRIDE_H
#define MIMALLOC_OVERRIDE_H

#include "mimalloc.h"

/* ---- Standard C ------------------------------------------------------------ */
#define malloc(n)                             mi_malloc(n)
#define calloc(c,n)                           mi_calloc(c,n)
#define realloc(p,n)                          mi_realloc(p,n)
#define free(p)                               mi_free(p)

/* ---- POSIX strings and paths ---------------------------------------------- */
#define strdup(s)                             mi_strdup(s)
#define strndup(s,n)                          mi_strndup(s,n)
#define realpath(f,n)                         mi_realpath(f,n)

/* ---- Microsoft CRT ------------------------------------------------------------ */
#define _expand(p,n)                          mi_expand(p,n)
#define _msize(p)                             mi_usable_size(p)
#define _recalloc(p,c,n)                      mi_recalloc(p,c,n)

#define _strdup(s)                            mi_strdup(s)
#define _strndup(s,n)                         mi_strndup(s,n)
#define _wcsdup(s)                            mi_wcsdup(s)
#define _mbsdup(s)                            mi_mbsdup(s)
#define _dupenv_s(b,n,v)                      mi_dupenv_s(b,n,v)
#define _wdupenv_s(b,n,v)                     mi_wdupenv_s(b,n,v)

/* ---- BSD, macOS and glibc extensions --------------------------------------- */
#define reallocf(p,n)                         mi_reallocf(p,n)
#define malloc_size(p)                        mi_usable_size(p)
#define malloc_usable_size(p)                 mi_usable_size(p)
#define malloc_good_size(sz)                  mi_malloc_good_size(sz)
#define cfree(p)                              mi_free(p)

#define valloc(n)                             mi_valloc(n)
#define pvalloc(n)                            mi_pvalloc(n)
#define reallocarray(p,s,n)                   mi_reallocarray(p,s,n)
#define reallocarr(p,s,n)                     mi_reallocarr(p,s,n)

/* ---- Aligned allocation (POSIX / C11) -------------------------------------- */
#define memalign(a,n)                         mi_memalign(a,n)
#define aligned_alloc(a,n)                    mi_aligned_alloc(a,n)
#define posix_memalign(p,a,n)                 mi_posix_memalign(p,a,n)
#define _posix_memalign(p,a,n)                mi_posix_memalign(p,a,n)

/* ---- Aligned allocation (Microsoft CRT; note the (size, alignment) order) -- */
#define _aligned_malloc(n,a)                  mi_malloc_aligned(n,a)
#define _aligned_realloc(p,n,a)               mi_realloc_aligned(p,n,a)
#define _aligned_recalloc(p,s,n,a)            mi_aligned_recalloc(p,s,n,a)
#define _aligned_msize(p,a,o)                 mi_usable_size(p)
#define _aligned_free(p)                      mi_free(p)
#define _aligned_offset_malloc(n,a,o)         mi_malloc_aligned_at(n,a,o)
#define _aligned_offset_realloc(p,n,a,o)      mi_realloc_aligned_at(p,n,a,o)
#define _aligned_offset_recalloc(p,s,n,a,o)   mi_recalloc_aligned_at(p,s,n,a,o)

#endif /* MIMALLOC_OVERRIDE_H */
