/* SPDX-License-Identifier: MIT */
/* override-header.c -- <mimalloc-override.h> (test static-override-header).

   The header turns the standard allocation names into macros for the mi_ functions. Checked
   - at compile time: every name is a macro (#error otherwise);
   - at run time: each macro expands to the right mi_ function with the arguments in the right
     order (the Microsoft _aligned_* forms swap size and alignment), and the blocks are ours,
     aligned and usable;
   - by the test script: the executable imports the mi_ functions and none of malloc, free,
     strdup, ... (so no call went to the standard names).
   The program links libmimalloc.so, which overrides malloc for the process as well, so only
   the compile-time and import checks tell the header's redirection from the dynamic override. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include <mimalloc-override.h>   /* after the system headers, as documented */

#include "../testing.h"

#if !defined(malloc) || !defined(calloc) || !defined(realloc) || !defined(free)
#error "mimalloc-override.h does not redirect malloc/calloc/realloc/free"
#endif
#if !defined(strdup) || !defined(strndup) || !defined(realpath)
#error "mimalloc-override.h does not redirect strdup/strndup/realpath"
#endif
#if !defined(posix_memalign) || !defined(aligned_alloc) || !defined(memalign) || !defined(valloc) || !defined(pvalloc)
#error "mimalloc-override.h does not redirect the aligned allocation functions"
#endif
#if !defined(reallocf) || !defined(reallocarray) || !defined(reallocarr) || !defined(cfree)
#error "mimalloc-override.h does not redirect reallocf/reallocarray/reallocarr/cfree"
#endif
#if !defined(malloc_size) || !defined(malloc_usable_size) || !defined(malloc_good_size)
#error "mimalloc-override.h does not redirect malloc_size/malloc_usable_size/malloc_good_size"
#endif
#if !defined(_aligned_malloc) || !defined(_aligned_realloc) || !defined(_aligned_free) || !defined(_msize) || !defined(_expand)
#error "mimalloc-override.h does not redirect the Microsoft CRT names"
#endif
#if !defined(_strdup) || !defined(_wcsdup) || !defined(_mbsdup) || !defined(_dupenv_s) || !defined(_recalloc)
#error "mimalloc-override.h does not redirect the Microsoft CRT string names"
#endif

#define IN_HEAP(p)  CHECK_MSG((p) != NULL && mi_is_in_heap_region(p), "%s = %p is not in our heap", #p, (void*)(p))

/* the expansion of a macro call, as text */
#define EXPANDED_(x)  #x
#define EXPANDED(x)   EXPANDED_(x)
#define CHECK_EXPANDS(call, expected) \
  CHECK_MSG(strcmp(EXPANDED(call), expected) == 0, "%s expands to %s", #call, EXPANDED(call))

static void check_expansions(void) {
  CHECK_EXPANDS(malloc(N), "mi_malloc(N)");
  CHECK_EXPANDS(calloc(C,N), "mi_calloc(C,N)");
  CHECK_EXPANDS(realloc(P,N), "mi_realloc(P,N)");
  CHECK_EXPANDS(free(P), "mi_free(P)");
  CHECK_EXPANDS(cfree(P), "mi_free(P)");
  CHECK_EXPANDS(strdup(S), "mi_strdup(S)");
  CHECK_EXPANDS(strndup(S,N), "mi_strndup(S,N)");
  CHECK_EXPANDS(realpath(F,R), "mi_realpath(F,R)");
  CHECK_EXPANDS(reallocf(P,N), "mi_reallocf(P,N)");
  CHECK_EXPANDS(reallocarray(P,C,N), "mi_reallocarray(P,C,N)");
  CHECK_EXPANDS(reallocarr(P,C,N), "mi_reallocarr(P,C,N)");
  CHECK_EXPANDS(malloc_size(P), "mi_usable_size(P)");
  CHECK_EXPANDS(malloc_usable_size(P), "mi_usable_size(P)");
  CHECK_EXPANDS(malloc_good_size(N), "mi_malloc_good_size(N)");
  CHECK_EXPANDS(valloc(N), "mi_valloc(N)");
  CHECK_EXPANDS(pvalloc(N), "mi_pvalloc(N)");
  CHECK_EXPANDS(memalign(A,N), "mi_memalign(A,N)");
  CHECK_EXPANDS(aligned_alloc(A,N), "mi_aligned_alloc(A,N)");
  CHECK_EXPANDS(posix_memalign(P,A,N), "mi_posix_memalign(P,A,N)");
  CHECK_EXPANDS(_aligned_malloc(N,A), "mi_malloc_aligned(N,A)");
  CHECK_EXPANDS(_aligned_realloc(P,N,A), "mi_realloc_aligned(P,N,A)");
  CHECK_EXPANDS(_aligned_free(P), "mi_free(P)");
  CHECK_EXPANDS(_aligned_offset_malloc(N,A,O), "mi_malloc_aligned_at(N,A,O)");
  CHECK_EXPANDS(_msize(P), "mi_usable_size(P)");
  CHECK_EXPANDS(_expand(P,N), "mi_expand(P,N)");
  CHECK_EXPANDS(_recalloc(P,C,N), "mi_recalloc(P,C,N)");
}

static void check_calls(void) {
  char* p = malloc(100);
  IN_HEAP(p);
  CHECK_GE(malloc_usable_size(p), 100);
  CHECK_GE(malloc_size(p), 100);
  memset(p, 'a', 100);
  p = realloc(p, 100000);
  IN_HEAP(p);
  if (p != NULL) CHECK(p[0] == 'a' && p[99] == 'a');
  free(p);

  int* z = calloc(1000, sizeof(int));
  IN_HEAP(z);
  if (z != NULL) CHECK(z[0] == 0 && z[999] == 0);
  z = reallocarray(z, 2000, sizeof(int));
  IN_HEAP(z);
  volatile size_t half = SIZE_MAX / 2;                /* volatile: no compile-time overflow warning */
  CHECK(reallocarray(z, half, 4) == NULL);            /* overflow: fails, z stays valid */
  z = reallocf(z, 50);
  IN_HEAP(z);
  cfree(z);

  int* arr = NULL;
  CHECK_EQ(reallocarr(&arr, 10, sizeof(int)), 0);
  IN_HEAP(arr);
  free(arr);

  char* s = strdup("override header");
  IN_HEAP(s);
  if (s != NULL) CHECK(strcmp(s, "override header") == 0);
  free(s);
  s = strndup("override header", 8);
  IN_HEAP(s);
  if (s != NULL) CHECK(strcmp(s, "override") == 0);
  free(s);

  char* rp = realpath("/proc/self/exe", NULL);
  IN_HEAP(rp);
  if (rp != NULL) CHECK(rp[0] == '/');
  free(rp);

  for (size_t align = sizeof(void*); align <= 8192; align *= 2) {
    void* q = NULL;
    CHECK_EQ(posix_memalign(&q, align, 3 * align), 0);
    IN_HEAP(q);
    CHECK_ALIGNED(q, align);
    free(q);
    q = aligned_alloc(align, align);
    IN_HEAP(q);
    CHECK_ALIGNED(q, align);
    free(q);
    q = memalign(align, 10);
    IN_HEAP(q);
    CHECK_ALIGNED(q, align);
    free(q);
    q = _aligned_malloc(10, align);                   /* (size, alignment) */
    IN_HEAP(q);
    CHECK_ALIGNED(q, align);
    q = _aligned_realloc(q, 5000, align);
    IN_HEAP(q);
    CHECK_ALIGNED(q, align);
    _aligned_free(q);
  }
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void* v = valloc(10);
  IN_HEAP(v);
  CHECK_ALIGNED(v, page);
  free(v);
  v = pvalloc(page + 1);
  IN_HEAP(v);
  CHECK_ALIGNED(v, page);
  CHECK_GE(malloc_usable_size(v), 2 * page);            /* rounded up to whole pages */
  free(v);
  CHECK_GE(malloc_good_size(100), 100);

  wchar_t* w = _wcsdup(L"wide");
  IN_HEAP(w);
  if (w != NULL) CHECK(wcscmp(w, L"wide") == 0);
  free(w);
  CHECK_EQ(setenv("MI_OVERRIDE_HEADER_TEST", "value", 1), 0);
  char* env = NULL;
  size_t envlen = 0;
  CHECK_EQ(_dupenv_s(&env, &envlen, "MI_OVERRIDE_HEADER_TEST"), 0);
  IN_HEAP(env);
  CHECK_EQ(envlen, 6);
  free(env);
}

int main(void) {
  check_expansions();
  check_calls();
  return test_summary("override-header", "macros expand to mi_ functions; blocks in our heap");
}
