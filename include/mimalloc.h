/* SPDX-License-Identifier: MIT */
/* ----------------------------------------------------------------------------
  mimalloc.h -- public C/C++ interface.

  Source-compatible with the public API of mimalloc v2.4.1: every name, type,
  enum value and declaration attribute matches that interface, so a program
  written for mimalloc v2 compiles against this header unchanged. A program
  that defines MI_V3_API before the include gets mimalloc 3.x's names and
  meanings instead where the two disagree (section 4b: mimalloc-v3.h). Each
  declaration below carries its contract in one line (or its group's does).
  The implementation behind it is our own.

  Layout of this header:
    1. version and configuration constants
    2. attribute / declaration macros
    3. standard includes
    4. types
    4b. v3 mode: mimalloc-v3.h, included under MI_V3_API
    5. function declarations, in groups: basic, extended, usable-size variants,
       aligned, heaps, zero-initialised re-allocation, heap introspection,
       statistics, output/error registration, arenas, subprocesses, life
       cycle, version, POSIX/Unix/Windows compatibility, C++ helpers
    6. typed allocation macros
    7. the option enumeration and option functions
    8. C++ STL allocators (C++ only)
---------------------------------------------------------------------------- */
#pragma once
#ifndef MIMALLOC_H
#define MIMALLOC_H

/* ============================================================================
   1. Version and constants
============================================================================ */

/* major*10000 + minor*100 + patch: 20401 is v2.4.1. */
#define MI_MALLOC_VERSION   20401

/* The `_small` allocation functions accept at most this many words/bytes. */
#define MI_SMALL_WSIZE_MAX  (128)
#define MI_SMALL_SIZE_MAX   (MI_SMALL_WSIZE_MAX*sizeof(void*))


/* ============================================================================
   2. Attribute and declaration macros

   Order used in every declaration:
     [mi_decl_nodiscard] mi_decl_export [mi_decl_restrict] <ret> name(args)
       [mi_attr_noexcept] [mi_attr_malloc] [mi_attr_alloc_size..] [mi_attr_alloc_align];
   (`[[nodiscard]]` must come first in C++, GNU attributes may trail the
   declarator.)
============================================================================ */

/* mi_attr_noexcept: the function never throws (part of the type in C++17). */
#if defined(__cplusplus)
  #if (__cplusplus >= 201103L) || (defined(_MSC_VER) && (_MSC_VER >= 1900))
    #define mi_attr_noexcept   noexcept
  #else
    #define mi_attr_noexcept   throw()
  #endif
#else
  #define mi_attr_noexcept
#endif

/* mi_decl_nodiscard: warn when the result is ignored. */
#if defined(__cplusplus) && (__cplusplus >= 201703L)
  #define mi_decl_nodiscard    [[nodiscard]]
#elif defined(__GNUC__) || defined(__clang__)   /* includes clang, icc, mingw */
  #define mi_decl_nodiscard    __attribute__((warn_unused_result))
#elif defined(_HAS_NODISCARD)
  #define mi_decl_nodiscard    _NODISCARD
#elif defined(_MSC_VER) && (_MSC_VER >= 1700)
  #define mi_decl_nodiscard    _Check_return_
#else
  #define mi_decl_nodiscard
#endif

/* mi_cdecl: calling convention of callbacks and of mi_process_done. */
#if defined(_MSC_VER) || defined(__MINGW32__)
  #define mi_cdecl             __cdecl
#else
  #define mi_cdecl
#endif

/* mi_decl_export: makes the public functions visible outside the library.
   On ELF/Mach-O targets (GCC/Clang) the library is built with hidden default
   visibility, so public names are always marked `default`. On Windows the
   DLL export/import decoration is chosen by MI_SHARED_LIB and
   MI_SHARED_LIB_EXPORT (the latter only while building the DLL). */
#if defined(_MSC_VER) || defined(_WIN32) || defined(__CYGWIN__)
  #if defined(MI_SHARED_LIB)
    #if defined(MI_SHARED_LIB_EXPORT)
      #define mi_decl_export   __declspec(dllexport)
    #else
      #define mi_decl_export   __declspec(dllimport)
    #endif
  #else
    #define mi_decl_export
  #endif
#elif defined(__GNUC__) || defined(__clang__)
  #define mi_decl_export       __attribute__((visibility("default")))
#else
  #define mi_decl_export
#endif

/* mi_decl_restrict: the returned pointer aliases nothing else (MSVC form). */
#if defined(_MSC_VER) && (_MSC_VER >= 1900)
  #define mi_decl_restrict     __declspec(allocator) __declspec(restrict)
#else
  #define mi_decl_restrict
#endif

/* mi_attr_malloc / mi_attr_alloc_size / mi_attr_alloc_size2 / mi_attr_alloc_align:
   allocation-function hints for GCC-compatible compilers.
   alloc_size/alloc_align need GCC >= 5 or Clang >= 4; alloc_align is not used
   with the Intel compiler. Everything is empty on MSVC and unknown compilers. */
#if defined(_MSC_VER) && !defined(__clang__)
  #define mi_attr_malloc
  #define mi_attr_alloc_size(s)
  #define mi_attr_alloc_size2(s1,s2)
  #define mi_attr_alloc_align(p)
#elif defined(__GNUC__) || defined(__clang__)
  #define mi_attr_malloc       __attribute__((malloc))
  #if (defined(__clang_major__) && (__clang_major__ < 4)) || \
      (!defined(__clang__) && (__GNUC__ < 5))
    #define mi_attr_alloc_size(s)
    #define mi_attr_alloc_size2(s1,s2)
    #define mi_attr_alloc_align(p)
  #elif defined(__INTEL_COMPILER)
    #define mi_attr_alloc_size(s)       __attribute__((alloc_size(s)))
    #define mi_attr_alloc_size2(s1,s2)  __attribute__((alloc_size(s1,s2)))
    #define mi_attr_alloc_align(p)
  #else
    #define mi_attr_alloc_size(s)       __attribute__((alloc_size(s)))
    #define mi_attr_alloc_size2(s1,s2)  __attribute__((alloc_size(s1,s2)))
    #define mi_attr_alloc_align(p)      __attribute__((alloc_align(p)))
  #endif
#else
  #define mi_attr_malloc
  #define mi_attr_alloc_size(s)
  #define mi_attr_alloc_size2(s1,s2)
  #define mi_attr_alloc_align(p)
#endif


/* ============================================================================
   3. Includes
============================================================================ */

#include <stddef.h>     /* size_t, ptrdiff_t, wchar_t (C) */
#include <stdbool.h>    /* bool */
#include <stdint.h>     /* int64_t, PTRDIFF_MAX */

#if defined(__cplusplus)
  #include <cstddef>
  #include <new>        /* placement new, std::bad_alloc */
  #if (__cplusplus >= 201103L) || (defined(_MSC_VER) && (_MSC_VER > 1900))
    #include <cstdint>  /* C++11 header; C++98 relies on <stdint.h> above */
    #include <type_traits>
    #include <utility>
    #include <memory>
  #endif
#endif

#if defined(__cplusplus)
extern "C" {
#endif


/* ============================================================================
   4. Types
============================================================================ */

/* Opaque first-class heap. In v2 a heap is owned by the thread that made it. */
struct mi_heap_s;
typedef struct mi_heap_s mi_heap_t;

#if !defined(MI_V3_API)   /* v3 mode: mimalloc-v3.h */
/* Name used by the v3 interface for the same thing. */
typedef mi_heap_t mi_theap_t;

/* Arena identifier: 0 means "no particular arena"; real ids start at 1. */
typedef int mi_arena_id_t;

/* Subprocess identifier: NULL is the main subprocess. */
typedef void* mi_subproc_id_t;
#endif

/* One area of equally sized blocks, as reported by the heap visitors. */
typedef struct mi_heap_area_s {
  void*  blocks;            /* start of the area */
  size_t reserved;          /* bytes reserved for the area */
  size_t committed;         /* bytes currently committed (usable) */
  size_t used;              /* number of blocks in use (a count, not bytes) */
  size_t block_size;        /* usable bytes of each block */
  size_t full_block_size;   /* bytes of each block including padding/metadata */
#if defined(MI_V3_API)
  void*  reserved1;         /* internal (the heap's tag in v2 mode) */
#else
  int    heap_tag;          /* tag of the heap the area belongs to */
#endif
} mi_heap_area_t;

/* Block visitor: called once per area (block == NULL) and, when asked for,
   once per live block. Return false to stop the walk. */
typedef bool (mi_cdecl mi_block_visit_fun)(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg);

/* Sink for every message the allocator prints. */
typedef void (mi_cdecl mi_output_fun)(const char* msg, void* arg);

/* Error callback, receives an errno-style code. */
typedef void (mi_cdecl mi_error_fun)(int err, void* arg);

/* Hook run regularly so a program can release memory it deferred.
   (`unsigned long long` is part of the interface; silence -Wlong-long for
   -std=c++98 -pedantic users.) */
#if defined(__cplusplus) && (__cplusplus < 201103L) && defined(__GNUC__)
  #pragma GCC diagnostic push
  #pragma GCC diagnostic ignored "-Wlong-long"
#endif
typedef void (mi_cdecl mi_deferred_free_fun)(bool force, unsigned long long heartbeat, void* arg);
#if defined(__cplusplus) && (__cplusplus < 201103L) && defined(__GNUC__)
  #pragma GCC diagnostic pop
#endif


/* ============================================================================
   4b. v3 mode: mimalloc 3.x's names and meanings where the two disagree

   With MI_V3_API defined before the include, mimalloc-v3.h declares v3's
   types, maps each name whose meaning is v3's onto the library's symbol for
   it (so sections 5 and 7 declare those symbols with v3's types), and adds
   the functions only v3 has. Without MI_V3_API none of this exists, and
   each `#if !defined(MI_V3_API)` below marks what v3 mode replaces.
============================================================================ */
#if defined(MI_V3_API)
#include "mimalloc-v3.h"
#endif


/* ============================================================================
   5. Functions

   Rules for every function below unless its comment says otherwise:
   - an allocation that fails returns NULL and sets errno to ENOMEM, also when
     the cause is a size overflow (count*size) or an invalid alignment; the
     cause is reported to the mi_register_error callback with its own code
     (ENOMEM, EOVERFLOW, EINVAL). A call that succeeds leaves errno unchanged.
     (mimalloc itself sets errno only in some functions; this is deliberate.)
   - a block from any mi_ allocation function may be freed with mi_free (or
     reallocated) from any thread; the mi_heap_ functions that allocate may be
     called only by the thread that owns the heap.
   - the maximum size of one allocation is about 2^48 bytes; larger requests
     fail as above.
============================================================================ */

/* ---- Basic allocation (default heap; free anything with mi_free) -------- */

/* Uninitialised block of at least `size` bytes, or NULL. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_malloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
/* Zeroed block of count*size bytes; NULL on overflow or out of memory. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_calloc(size_t count, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(1,2);
/* Resize `p` (NULL acts as malloc); on NULL result `p` is still valid. */
mi_decl_nodiscard mi_decl_export void* mi_realloc(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
/* Release a block from any mi_ allocator, from any thread; NULL is ignored. */
mi_decl_export void mi_free(void* p) mi_attr_noexcept;


/* ---- Extended allocation ------------------------------------------------ */

/* Zeroed block of `size` bytes. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_zalloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
/* Uninitialised block of count*size bytes with an overflow check. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_mallocn(size_t count, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(1,2);
/* Resize to count*size bytes with an overflow check (`p` untouched on failure). */
mi_decl_nodiscard mi_decl_export void* mi_reallocn(void* p, size_t count, size_t size) mi_attr_noexcept mi_attr_alloc_size2(2,3);
/* Like mi_realloc but frees `p` when the result is NULL (BSD reallocf). */
mi_decl_nodiscard mi_decl_export void* mi_reallocf(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
/* Grow or shrink in place only: returns `p` if it fits, else NULL. */
mi_decl_export void* mi_expand(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
/* Usable bytes of the block at `p` (0 for NULL). */
mi_decl_nodiscard mi_decl_export size_t mi_usable_size(const void* p) mi_attr_noexcept;
/* Usable size an allocation of `size` bytes would receive. */
mi_decl_nodiscard mi_decl_export size_t mi_good_size(size_t size) mi_attr_noexcept;
/* Copy of a NUL-terminated string (NULL for NULL). */
mi_decl_nodiscard mi_decl_export mi_decl_restrict char* mi_strdup(const char* s) mi_attr_noexcept mi_attr_malloc;
/* Copy of at most `n` bytes of `s`, always NUL-terminated. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict char* mi_strndup(const char* s, size_t n) mi_attr_noexcept mi_attr_malloc;
/* realpath; with resolved_name == NULL the result is an mi_malloc'ed string. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict char* mi_realpath(const char* fname, char* resolved_name) mi_attr_noexcept;
/* Fast path for size <= MI_SMALL_SIZE_MAX (larger sizes are undefined). */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_malloc_small(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
/* Zeroed variant of mi_malloc_small. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_zalloc_small(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
/* Same as mi_free (name kept for v3 compatibility). */
mi_decl_export void mi_free_small(void* p) mi_attr_noexcept;


/* ---- Usable-size reporting variants -------------------------------------
   Like the plain function; on success the usable block size is also stored
   through the extra `size_t*` argument when it is not NULL. */

mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_umalloc(size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_ucalloc(size_t count, size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(1,2);
/* Reports the usable size of the old block (0 for NULL) and of the new one. */
mi_decl_nodiscard mi_decl_export void* mi_urealloc(void* p, size_t newsize, size_t* block_size_pre, size_t* block_size_post) mi_attr_noexcept mi_attr_alloc_size(2);
/* Reports the usable size of the block, then frees it. */
mi_decl_export void mi_ufree(void* p, size_t* block_size) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_umalloc_aligned(size_t size, size_t alignment, size_t* block_size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_uzalloc_aligned(size_t size, size_t alignment, size_t* block_size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_umalloc_small(size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
/* Zeroed mi_umalloc_small (declared but missing in the reference library; we define it). */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_uzalloc_small(size_t size, size_t* block_size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);


/* ---- Aligned allocation --------------------------------------------------
   `alignment` must be a power of two (> 0), else NULL. Note that alignment
   comes after the size arguments. `_at` variants align `p + offset`; with an
   alignment above 2 MiB they fail when `offset` lies just below a multiple of
   4 MiB (where the block would overlap its segment's header). */

mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_malloc_aligned(size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_malloc_aligned_at(size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_zalloc_aligned(size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1) mi_attr_alloc_align(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_zalloc_aligned_at(size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_calloc_aligned(size_t count, size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(1,2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_calloc_aligned_at(size_t count, size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(1,2);
/* Aligned resize; keeps `p` when it still fits and is still aligned. */
mi_decl_nodiscard mi_decl_export void* mi_realloc_aligned(void* p, size_t newsize, size_t alignment) mi_attr_noexcept mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_realloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_alloc_size(2);


/* ---- Heaps ---------------------------------------------------------------
   Only the owning thread may allocate from (or delete/destroy/collect) a heap;
   its blocks may be freed with mi_free from any thread. Each mi_heap_X
   allocation function is mi_X allocating in `heap`. A shared heap
   (mi_heap_new_shared) is the exception: any thread may allocate in it. */

/* New destroyable heap for the calling thread (NULL when out of memory). In v3 mode the
   name is mi_heap_new_shared's, and mi_heap_new_in_arena's a shared heap's (section 4b). */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new(void);
#if MI_MALLOC_VERSION >= 182
/* New heap that only allocates from the given (exclusive) arena. */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new_in_arena(mi_arena_id_t arena_id);
#endif
#if !defined(MI_V3_API)   /* v3 mode: the shared heaps are mi_heap_new(_in_arena); mi_heap_new_ex takes v2's arena id */
/* New destroyable heap that any thread may allocate in (mimalloc v3's heap; ours, not v2's).
   The mi_heap_X allocation functions take it from any thread; mi_heap_delete/destroy by one
   thread once no thread allocates in it any more; collect covers the calling thread's part,
   visit every part (while no other thread uses the heap). NULL when out of memory. */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new_shared(void);
/* New shared heap that only allocates from the given (exclusive) arena; not destroyable. */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new_shared_in_arena(mi_arena_id_t arena_id);
/* New heap with a tag, a destroy/reclaim policy and an arena (0 = any). */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_new_ex(int heap_tag, bool allow_destroy, mi_arena_id_t arena_id);
#endif
/* Delete the heap; its live blocks stay valid and migrate or get abandoned. */
mi_decl_export void mi_heap_delete(mi_heap_t* heap);
/* Free the heap together with every block still allocated in it. */
mi_decl_export void mi_heap_destroy(mi_heap_t* heap);
/* Make `heap` the thread's default; returns the previous default. */
mi_decl_export mi_heap_t* mi_heap_set_default(mi_heap_t* heap);
/* The calling thread's current default heap. */
mi_decl_export mi_heap_t* mi_heap_get_default(void);
/* The thread's backing heap (its initial default, lives until thread exit). */
mi_decl_export mi_heap_t* mi_heap_get_backing(void);
/* Process delayed frees and return empty pages, then purge the memory whose purge delay has
   passed (`force`: all freed memory, due or not). Done when it returns, as mi_collect. */
#if !defined(MI_V3_API)   /* v3 mode: mimalloc-v3.h */
mi_decl_export void mi_heap_collect(mi_heap_t* heap, bool force) mi_attr_noexcept;
#endif

mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_malloc(mi_heap_t* heap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_zalloc(mi_heap_t* heap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_calloc(mi_heap_t* heap, size_t count, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(2,3);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_mallocn(mi_heap_t* heap, size_t count, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(2,3);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_malloc_small(mi_heap_t* heap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_zalloc_small(mi_heap_t* heap, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);

mi_decl_nodiscard mi_decl_export void* mi_heap_realloc(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_reallocn(mi_heap_t* heap, void* p, size_t count, size_t size) mi_attr_noexcept mi_attr_alloc_size2(3,4);
mi_decl_nodiscard mi_decl_export void* mi_heap_reallocf(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(3);

mi_decl_nodiscard mi_decl_export mi_decl_restrict char* mi_heap_strdup(mi_heap_t* heap, const char* s) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export mi_decl_restrict char* mi_heap_strndup(mi_heap_t* heap, const char* s, size_t n) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export mi_decl_restrict char* mi_heap_realpath(mi_heap_t* heap, const char* fname, char* resolved_name) mi_attr_noexcept;

mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_malloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_zalloc_aligned(mi_heap_t* heap, size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_zalloc_aligned_at(mi_heap_t* heap, size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_calloc_aligned(mi_heap_t* heap, size_t count, size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(2,3) mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_calloc_aligned_at(mi_heap_t* heap, size_t count, size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size2(2,3);
mi_decl_nodiscard mi_decl_export void* mi_heap_realloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment) mi_attr_noexcept mi_attr_alloc_size(3) mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_heap_realloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_alloc_size(3);

/* Guarded builds: put a guard page behind 1 in `sample_rate` allocations of `heap`. */
mi_decl_export void mi_heap_guarded_set_sample_rate(mi_heap_t* heap, size_t sample_rate, size_t seed);
/* Guarded builds: only guard blocks whose size lies within [min,max]. */
mi_decl_export void mi_heap_guarded_set_size_bound(mi_heap_t* heap, size_t min, size_t max);

/* ---- Zero-initialised re-allocation --------------------------------------
   Only for blocks that were allocated zeroed: bytes gained by growing are
   zero. Failure returns NULL and leaves `p` valid. */

mi_decl_nodiscard mi_decl_export void* mi_rezalloc(void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_recalloc(void* p, size_t newcount, size_t size) mi_attr_noexcept mi_attr_alloc_size2(2,3);

mi_decl_nodiscard mi_decl_export void* mi_rezalloc_aligned(void* p, size_t newsize, size_t alignment) mi_attr_noexcept mi_attr_alloc_size(2) mi_attr_alloc_align(3);
mi_decl_nodiscard mi_decl_export void* mi_rezalloc_aligned_at(void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_recalloc_aligned(void* p, size_t newcount, size_t size, size_t alignment) mi_attr_noexcept mi_attr_alloc_size2(2,3) mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_recalloc_aligned_at(void* p, size_t newcount, size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_alloc_size2(2,3);

mi_decl_nodiscard mi_decl_export void* mi_heap_rezalloc(mi_heap_t* heap, void* p, size_t newsize) mi_attr_noexcept mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_recalloc(mi_heap_t* heap, void* p, size_t newcount, size_t size) mi_attr_noexcept mi_attr_alloc_size2(3,4);

mi_decl_nodiscard mi_decl_export void* mi_heap_rezalloc_aligned(mi_heap_t* heap, void* p, size_t newsize, size_t alignment) mi_attr_noexcept mi_attr_alloc_size(3) mi_attr_alloc_align(4);
mi_decl_nodiscard mi_decl_export void* mi_heap_rezalloc_aligned_at(mi_heap_t* heap, void* p, size_t newsize, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_alloc_size(3);
mi_decl_nodiscard mi_decl_export void* mi_heap_recalloc_aligned(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment) mi_attr_noexcept mi_attr_alloc_size2(3,4) mi_attr_alloc_align(5);
mi_decl_nodiscard mi_decl_export void* mi_heap_recalloc_aligned_at(mi_heap_t* heap, void* p, size_t newcount, size_t size, size_t alignment, size_t offset) mi_attr_noexcept mi_attr_alloc_size2(3,4);


/* ---- Heap introspection ------------------------------------------------- */

/* Is `p` in a page of `heap`? Any pointer may be passed: one that is not ours gives false. */
mi_decl_export bool mi_heap_contains_block(mi_heap_t* heap, const void* p);
/* Does any pointer `p` lie inside one of `heap`'s pages? (linear scan) */
mi_decl_export bool mi_heap_check_owned(mi_heap_t* heap, const void* p);
/* mi_heap_check_owned on the calling thread's default heap (v3 mode: mi_any_heap_contains). */
mi_decl_export bool mi_check_owned(const void* p);
/* Walk the areas (and optionally the live blocks) of `heap`; true if completed. A shared heap:
   every thread's part, under its lock, while no other thread uses the heap. */
mi_decl_export bool mi_heap_visit_blocks(const mi_heap_t* heap, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);
#if !defined(MI_V3_API)   /* v3 mode: mimalloc-v3.h */
/* Walk abandoned memory of a subprocess (heap_tag -1 = all tags); the visitor runs under the
   subprocess' abandoned lock and must not allocate or free. */
mi_decl_export bool mi_abandoned_visit_blocks(mi_subproc_id_t subproc_id, int heap_tag, bool visit_blocks, mi_block_visit_fun* visitor, void* arg);
#endif
/* Constant-time test whether `p` points into memory managed by the allocator. */
mi_decl_nodiscard mi_decl_export bool mi_is_in_heap_region(const void* p) mi_attr_noexcept;
/* Is the page holding `p` (in `heap`, or any heap for NULL) used <= perc_threshold %? */
mi_decl_nodiscard mi_decl_export bool mi_unsafe_heap_page_is_under_utilized(mi_heap_t* heap, void* p, size_t perc_threshold) mi_attr_noexcept;
/* (v3) The main heap: the calling thread's backing heap (v3 mode: one heap for all threads, whose
   part for each thread is its backing heap; it cannot be deleted). */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_main(void);
/* (v3) The heap whose page holds `p` (any pointer); NULL if not ours, not in use, or abandoned
   (v3 mode: the main heap for a block of the calling thread's backing heap). */
mi_decl_nodiscard mi_decl_export mi_heap_t* mi_heap_of(const void* p);
/* (v3) mi_heap_of(p) == heap, with NULL standing for mi_heap_main(). */
mi_decl_nodiscard mi_decl_export bool mi_heap_contains(const mi_heap_t* heap, const void* p);
/* (v3) Does `p` (any pointer) lie in a page of ours that is in use, of any heap or abandoned? */
mi_decl_nodiscard mi_decl_export bool mi_any_heap_contains(const void* p);


/* ---- Statistics and process information ----------------------------------
   (mi_stats_get and mi_stats_get_json are declared in mimalloc-stats.h.) */

/* Zero the calling thread's and the process-wide statistics. */
mi_decl_export void mi_stats_reset(void) mi_attr_noexcept;
/* Fold the calling thread's statistics into the process-wide totals. */
mi_decl_export void mi_stats_merge(void) mi_attr_noexcept;
/* Legacy printer: `out` is an mi_output_fun* (or NULL for the default output). */
mi_decl_export void mi_stats_print(void* out) mi_attr_noexcept;
/* Merge this thread, then print the process-wide statistics through `out`.
   Layout (every printer): mimalloc's if MIMALLOC_STATS_LAYOUT=mimalloc, else readable (docs/statistics.md). */
mi_decl_export void mi_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept;
/* Print only the calling thread's not yet merged statistics. */
mi_decl_export void mi_thread_stats_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept;
/* Fill every non-NULL argument with process time, memory and fault figures. */
mi_decl_export void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                                    size_t* current_rss, size_t* peak_rss,
                                    size_t* current_commit, size_t* peak_commit, size_t* page_faults) mi_attr_noexcept;
/* (v3) Print elapsed and process times, page faults and peak RSS/commit through `out` (NULL: default). */
mi_decl_export void mi_process_info_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept;
/* (v3) mi_process_info_print_out to the default output. */
mi_decl_export void mi_process_info_print(void) mi_attr_noexcept;


/* ---- Output, error and deferred-free registration -------------------------
   Each is a single process-wide slot; NULL restores the default. */

/* Send every message (errors, warnings, verbose output, statistics) to `out`
   instead of stderr; messages printed before the first registration are
   replayed to it. */
mi_decl_export void mi_register_output(mi_output_fun* out, void* arg) mi_attr_noexcept;
/* Call `fun(err, arg)` after each error message (EAGAIN double free, EFAULT
   corrupted memory, ENOMEM, EOVERFLOW, EINVAL invalid pointer or argument);
   when it returns, the failing call returns or is ignored. Without one, EFAULT
   aborts debug and secure builds. */
mi_decl_export void mi_register_error(mi_error_fun* fun, void* arg);
/* Call `deferred_free(force, heartbeat, arg)` regularly from the allocation
   slow path and on collect (`force` for a forced collect), so the program can
   free memory it deferred; `heartbeat` counts the calls of this thread. */
mi_decl_export void mi_register_deferred_free(mi_deferred_free_fun* deferred_free, void* arg) mi_attr_noexcept;


/* ---- Arenas and OS memory ------------------------------------------------ */

/* Reserve `pages` 1 GiB pages spread over `numa_nodes` nodes (0 = all). */
mi_decl_export int mi_reserve_huge_os_pages_interleave(size_t pages, size_t numa_nodes, size_t timeout_msecs) mi_attr_noexcept;
/* Reserve up to `pages` 1 GiB pages on one NUMA node (-1 = no affinity). */
mi_decl_export int mi_reserve_huge_os_pages_at(size_t pages, int numa_node, size_t timeout_msecs) mi_attr_noexcept;
/* The `_ex` variants also make the arena exclusive (used only by heaps made for
   it, mi_heap_new_in_arena) if asked and store its id in `*arena_id`. */
mi_decl_export int mi_reserve_huge_os_pages_at_ex(size_t pages, int numa_node, size_t timeout_msecs, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept;
/* Reserve `size` bytes of ordinary OS memory as an arena; 0 or ENOMEM. */
mi_decl_export int mi_reserve_os_memory(size_t size, bool commit, bool allow_large) mi_attr_noexcept;
mi_decl_export int mi_reserve_os_memory_ex(size_t size, bool commit, bool allow_large, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept;
/* Hand an existing memory range to the allocator as an arena. */
mi_decl_export bool mi_manage_os_memory(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node) mi_attr_noexcept;
mi_decl_export bool mi_manage_os_memory_ex(void* start, size_t size, bool is_committed, bool is_large, bool is_zero, int numa_node, bool exclusive, mi_arena_id_t* arena_id) mi_attr_noexcept;
/* Start address (and usable size) of an arena; NULL for an unknown id. */
mi_decl_export void* mi_arena_area(mi_arena_id_t arena_id, size_t* size);
/* (v3) Does `p` lie in the area of arena `arena_id`? false for an unknown id. */
mi_decl_export bool mi_arena_contains(mi_arena_id_t arena_id, const void* p);
/* (v3) Alignment at which memory given as an arena is used from its start (smaller: rounded up). */
mi_decl_export size_t mi_arena_min_alignment(void);
/* (v3) Smallest aligned memory that makes an arena (mi_manage_os_memory). */
mi_decl_export size_t mi_arena_min_size(void);
/* Print every arena with its usage bitmaps (v2.4 signature: no arguments). */
mi_decl_export void mi_debug_show_arenas(void) mi_attr_noexcept;
/* Same output as mi_debug_show_arenas. */
mi_decl_export void mi_arenas_print(void) mi_attr_noexcept;
/* Deprecated: use mi_reserve_huge_os_pages_interleave/_at. */
mi_decl_export int mi_reserve_huge_os_pages(size_t pages, double max_secs, size_t* pages_reserved) mi_attr_noexcept;


/* ---- Subprocesses ----------------------------------------------------------
   A subprocess owns its own abandoned memory; threads of different
   subprocesses never reclaim or visit each other's memory. */

/* The main subprocess (always NULL). */
mi_decl_export mi_subproc_id_t mi_subproc_main(void);
/* (v3) The calling thread's subprocess (NULL: the main one). */
mi_decl_export mi_subproc_id_t mi_subproc_current(void);
/* A new, empty subprocess; NULL when out of memory. */
mi_decl_export mi_subproc_id_t mi_subproc_new(void);
#if !defined(MI_V3_API)   /* v3 mode: mimalloc-v3.h */
/* Release a subprocess once all its threads have ended (main/NULL ignored). */
mi_decl_export void mi_subproc_delete(mi_subproc_id_t subproc);
#endif
/* Move the calling thread (still in the main subprocess) into `subproc`. */
mi_decl_export void mi_subproc_add_current_thread(mi_subproc_id_t subproc);


/* ---- Process and thread life cycle, misc ---------------------------------
   Normally run automatically; explicit calls are harmless. */

/* Initialise the process once (thread-safe); also makes the start-up
   reservations asked for by the reserve_* options. */
mi_decl_export void mi_process_init(void) mi_attr_noexcept;
/* Process shutdown: collect, print the statistics if asked, release all memory
   with destroy_on_exit; mi_cdecl so that it can be handed to atexit. */
mi_decl_export void mi_cdecl mi_process_done(void) mi_attr_noexcept;
/* Set up the calling thread's heap (and the process if needed); idempotent. */
mi_decl_export void mi_thread_init(void) mi_attr_noexcept;
/* Abandon the calling thread's memory so other threads can take it over
   (runs by itself at thread exit). */
mi_decl_export void mi_thread_done(void) mi_attr_noexcept;
/* Hint that the thread is part of a thread pool (no effect in v2). */
mi_decl_export void mi_thread_set_in_threadpool(void) mi_attr_noexcept;
/* True only on Windows when the CRT malloc is redirected to this allocator. */
mi_decl_nodiscard mi_decl_export bool mi_is_redirected(void) mi_attr_noexcept;
/* Collect the calling thread's default heap (mi_heap_collect). When it returns, the memory whose
   purge delay has passed is purged (given back to the OS), and with `force` all that can be
   returned, whatever the background purger thread is doing (it may wait for a purge the purger
   has in progress). */
mi_decl_export void mi_collect(bool force) mi_attr_noexcept;

/* Experimental: forced collect, then abandon segments beyond the target. */
mi_decl_export void mi_collect_reduce(size_t target_thread_owned) mi_attr_noexcept;

/* ---- Sampling heap profiler (this implementation; docs/profiler.md) -------
   Release builds on Linux with glibc; elsewhere both return false. MIMALLOC_PROFILE=path
   switches it on at start-up without a call. */

/* Sample about one allocation per `rate` bytes allocated (0: 512 KiB), with its
   call stack; every thread, from its next allocation. True if the profiler is on
   (a second call keeps the first rate). */
mi_decl_export bool mi_profile_start(size_t rate) mi_attr_noexcept;
/* Write the profile now: path.pb (pprof), path.txt (top call sites),
   path.inuse.folded and path.alloc.folded (flame graphs); "%p" in path is the
   process id. True if all four were written. */
mi_decl_export bool mi_profile_dump(const char* path) mi_attr_noexcept;


/* ---- Version ------------------------------------------------------------ */

/* MI_MALLOC_VERSION of the library that is actually linked. */
mi_decl_export int mi_version(void) mi_attr_noexcept;


/* ---- POSIX / Unix / Windows compatibility ---------------------------------
   mi_ versions of platform allocation functions (see mimalloc-override.h). */

/* Free `p` only if it is managed by the allocator; ignore it otherwise. */
mi_decl_export void mi_cfree(void* p) mi_attr_noexcept;
/* mi_expand that sets errno = ENOMEM on failure (MSVC _expand). */
mi_decl_export void* mi__expand(void* p, size_t newsize) mi_attr_noexcept;
/* mi_usable_size (macOS malloc_size, glibc malloc_usable_size) and mi_good_size. */
mi_decl_nodiscard mi_decl_export size_t mi_malloc_size(const void* p) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export size_t mi_malloc_good_size(size_t size) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export size_t mi_malloc_usable_size(const void* p) mi_attr_noexcept;

/* posix_memalign: 0, EINVAL or ENOMEM (deliberately not noexcept, as in v2.4). */
mi_decl_export int mi_posix_memalign(void** p, size_t alignment, size_t size);
/* memalign / aligned_alloc: mi_malloc_aligned with the arguments swapped; an
   alignment that is not a power of two sets errno to EINVAL, as POSIX asks
   (size need not be a multiple of the alignment). valloc: aligned to the OS
   page size; pvalloc: also rounded up to whole OS pages. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_memalign(size_t alignment, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2) mi_attr_alloc_align(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_valloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_pvalloc(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_aligned_alloc(size_t alignment, size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(2) mi_attr_alloc_align(1);

/* BSD reallocarray: mi_reallocn. NetBSD reallocarr (`ptrp` is really a void**):
   returns 0, or EINVAL / EOVERFLOW / ENOMEM (also in errno) leaving *ptrp. */
mi_decl_nodiscard mi_decl_export void* mi_reallocarray(void* p, size_t count, size_t size) mi_attr_noexcept mi_attr_alloc_size2(2,3);
mi_decl_nodiscard mi_decl_export int mi_reallocarr(void* ptrp, size_t count, size_t size) mi_attr_noexcept;
/* MSVC _aligned_recalloc / _aligned_offset_recalloc. */
mi_decl_nodiscard mi_decl_export void* mi_aligned_recalloc(void* p, size_t newcount, size_t size, size_t alignment) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export void* mi_aligned_offset_recalloc(void* p, size_t newcount, size_t size, size_t alignment, size_t offset) mi_attr_noexcept;

/* Free variants with size/alignment hints (checked in debug builds only). */
mi_decl_export void mi_free_size(void* p, size_t size) mi_attr_noexcept;
mi_decl_export void mi_free_size_aligned(void* p, size_t size, size_t alignment) mi_attr_noexcept;
mi_decl_export void mi_free_aligned(void* p, size_t alignment) mi_attr_noexcept;

/* MSVC _dupenv_s / _wdupenv_s and string duplicates. */
mi_decl_export int mi_dupenv_s(char** buf, size_t* size, const char* name) mi_attr_noexcept;
mi_decl_export int mi_wdupenv_s(wchar_t** buf, size_t* size, const wchar_t* name) mi_attr_noexcept;
mi_decl_nodiscard mi_decl_export mi_decl_restrict wchar_t* mi_wcsdup(const wchar_t* s) mi_attr_noexcept mi_attr_malloc;
mi_decl_nodiscard mi_decl_export mi_decl_restrict unsigned char* mi_mbsdup(const unsigned char* s) mi_attr_noexcept mi_attr_malloc;


/* ---- C++ allocation helpers ------------------------------------------------
   operator-new semantics: on failure run the std::new_handler and retry;
   without a handler throw std::bad_alloc. The throwing ones are therefore
   not noexcept; the _nothrow ones return NULL instead. */

/* mi_malloc / mi_malloc_aligned that never return NULL. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_new(size_t size) mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_new_aligned(size_t size, size_t alignment) mi_attr_malloc mi_attr_alloc_size(1) mi_attr_alloc_align(2);
/* Run the new-handler loop, then return NULL instead of throwing. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_new_nothrow(size_t size) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_new_aligned_nothrow(size_t size, size_t alignment) mi_attr_noexcept mi_attr_malloc mi_attr_alloc_size(1) mi_attr_alloc_align(2);
/* mi_new(count*size); an overflow counts as an allocation failure. */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_new_n(size_t count, size_t size) mi_attr_malloc mi_attr_alloc_size2(1,2);
/* mi_realloc / mi_reallocn with the new-handler loop; never return NULL. */
mi_decl_nodiscard mi_decl_export void* mi_new_realloc(void* p, size_t newsize) mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export void* mi_new_reallocn(void* p, size_t newcount, size_t size) mi_attr_alloc_size2(2,3);
/* mi_new / mi_new_n allocating in `heap` (used by the heap STL allocators). */
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_alloc_new(mi_heap_t* heap, size_t size) mi_attr_malloc mi_attr_alloc_size(2);
mi_decl_nodiscard mi_decl_export mi_decl_restrict void* mi_heap_alloc_new_n(mi_heap_t* heap, size_t count, size_t size) mi_attr_malloc mi_attr_alloc_size2(2,3);


#if defined(__cplusplus)
}  /* extern "C" */
#endif


/* ============================================================================
   6. Typed allocation macros: allocate `n` objects of type `tp`
============================================================================ */

#if !defined(MI_V3_API)   /* v3 mode: mimalloc-v3.h */
#define mi_malloc_tp(tp)                 ((tp*)mi_malloc(sizeof(tp)))
#define mi_zalloc_tp(tp)                 ((tp*)mi_zalloc(sizeof(tp)))
#define mi_calloc_tp(tp,n)               ((tp*)mi_calloc(n,sizeof(tp)))
#define mi_mallocn_tp(tp,n)              ((tp*)mi_mallocn(n,sizeof(tp)))
#define mi_reallocn_tp(p,tp,n)           ((tp*)mi_reallocn(p,n,sizeof(tp)))
#define mi_recalloc_tp(p,tp,n)           ((tp*)mi_recalloc(p,n,sizeof(tp)))

#define mi_heap_malloc_tp(hp,tp)         ((tp*)mi_heap_malloc(hp,sizeof(tp)))
#define mi_heap_zalloc_tp(hp,tp)         ((tp*)mi_heap_zalloc(hp,sizeof(tp)))
#define mi_heap_calloc_tp(hp,tp,n)       ((tp*)mi_heap_calloc(hp,n,sizeof(tp)))
#define mi_heap_mallocn_tp(hp,tp,n)      ((tp*)mi_heap_mallocn(hp,n,sizeof(tp)))
#define mi_heap_reallocn_tp(hp,p,tp,n)   ((tp*)mi_heap_reallocn(hp,p,n,sizeof(tp)))
#define mi_heap_recalloc_tp(hp,p,tp,n)   ((tp*)mi_heap_recalloc(hp,p,n,sizeof(tp)))

/* v3-compatible spellings of the heap API (mi_theap_t is mi_heap_t). */
#define mi_theap_get_default()                 mi_heap_get_default()
#define mi_theap_set_default(hp)               mi_heap_set_default(hp)
#define mi_theap_collect(hp,force)             mi_heap_collect(hp,force)
#define mi_theap_malloc(hp,sz)                 mi_heap_malloc(hp,sz)
#define mi_theap_zalloc(hp,sz)                 mi_heap_zalloc(hp,sz)
#define mi_theap_calloc(hp,cnt,sz)             mi_heap_calloc(hp,cnt,sz)
#define mi_theap_malloc_small(hp,sz)           mi_heap_malloc_small(hp,sz)
#define mi_theap_zalloc_small(hp,sz)           mi_heap_zalloc_small(hp,sz)
#define mi_theap_malloc_aligned(hp,sz,a)       mi_heap_malloc_aligned(hp,sz,a)
#define mi_theap_realloc(hp,p,newsz)           mi_heap_realloc(hp,p,newsz)
#endif


/* ============================================================================
   7. Options

   Each option `mi_option_<name>` is read from the environment variable
   MIMALLOC_<NAME> on first use; mi_option_set* overrides the environment.
   The numbering is part of the ABI: never reorder.
   v3 mode numbers the options as mimalloc 3.x does; the library translates
   them (mi_v3_option_*, section 4b). An option v3 has and v2 has not is
   accepted and read back but changes nothing here; a v3 `deprecated_` name
   is the v2 option of the same number.
============================================================================ */

#if !defined(MI_V3_API)   /* v3 mode: mimalloc-v3.h */
typedef enum mi_option_e {
  /* stable options */
  mi_option_show_errors,                /*  0: print errors and warnings */
  mi_option_show_stats,                 /*  1: print statistics at exit */
  mi_option_verbose,                    /*  2: print informational messages */
  /* tuning: the defaults are sensible for most programs */
  mi_option_eager_commit,               /*  3: commit segments eagerly */
  mi_option_arena_eager_commit,         /*  4: commit arenas up front (2 = only on overcommit systems) */
  mi_option_purge_decommits,            /*  5: purge by decommitting (0 = reset only) */
  mi_option_allow_large_os_pages,       /*  6: allow 2/4 MiB large OS pages */
  mi_option_reserve_huge_os_pages,      /*  7: 1 GiB pages to reserve at start-up */
  mi_option_reserve_huge_os_pages_at,   /*  8: NUMA node for those pages (-1 = all) */
  mi_option_reserve_os_memory,          /*  9: KiB of OS memory to reserve at start-up */
  mi_option_deprecated_segment_cache,   /* 10: unused */
  mi_option_deprecated_page_reset,      /* 11: unused */
  mi_option_abandoned_page_purge,       /* 12: purge an ended thread's page as soon as it is released */
  mi_option_deprecated_segment_reset,   /* 13: unused */
  mi_option_eager_commit_delay,         /* 14: first N segments per thread are committed lazily */
  mi_option_purge_delay,                /* 15: ms before unused memory is purged (-1 = never) */
  mi_option_use_numa_nodes,             /* 16: assume at most N NUMA nodes (0 = detect) */
  mi_option_disallow_os_alloc,          /* 17: only use pre-reserved arenas */
  mi_option_os_tag,                     /* 18: macOS VM tag */
  mi_option_max_errors,                 /* 19: maximum error messages printed */
  mi_option_max_warnings,               /* 20: maximum warnings printed */
  mi_option_max_segment_reclaim,        /* 21: % of abandoned segments examined per reclaim */
  mi_option_destroy_on_exit,            /* 22: release all memory at process exit */
  mi_option_arena_reserve,              /* 23: KiB per arena reserved on demand */
  mi_option_arena_purge_mult,           /* 24: arena purge delay multiplier */
  mi_option_purge_extend_delay,         /* 25: extra purge delay on later frees */
  mi_option_abandoned_reclaim_on_free,  /* 26: a free into an ended thread's page adopts the page */
  mi_option_disallow_arena_alloc,       /* 27: do not use arenas (except explicit arena heaps) */
  mi_option_retry_on_oom,               /* 28: Windows: ms to retry failed OS allocations */
  mi_option_visit_abandoned,            /* 29: allow mi_abandoned_visit_blocks */
  mi_option_guarded_min,                /* 30: guarded builds: minimum guarded size */
  mi_option_guarded_max,                /* 31: guarded builds: maximum guarded size */
  mi_option_guarded_precise,            /* 32: place guarded objects right against the guard page */
  mi_option_guarded_sample_rate,        /* 33: guard 1 in N eligible allocations */
  mi_option_guarded_sample_seed,        /* 34: start of the sampling counter (0 = random) */
  mi_option_target_segments_per_thread, /* 35: experimental: abandon segments beyond N per thread */
  mi_option_generic_collect,            /* 36: collect every N slow-path allocations */
  mi_option_allow_thp,                  /* 37: 0 = disable transparent huge pages */
  _mi_option_last,                      /* 38: number of options */
  /* legacy names */
  mi_option_large_os_pages         = mi_option_allow_large_os_pages,
  mi_option_eager_region_commit    = mi_option_arena_eager_commit,
  mi_option_reset_decommits        = mi_option_purge_decommits,
  mi_option_reset_delay            = mi_option_purge_delay,
  mi_option_abandoned_page_reset   = mi_option_abandoned_page_purge,
  mi_option_limit_os_alloc         = mi_option_disallow_os_alloc
} mi_option_t;
#endif

/* Options of this implementation beyond mimalloc's numbering (which they leave unchanged). */
#define MI_OPTION_EXT_FIRST      1000
#define mi_option_live           ((mi_option_t)1000)   /* MIMALLOC_LIVE: publish live statistics for tools/mimalloc-live */
#define mi_option_live_interval  ((mi_option_t)1001)   /* MIMALLOC_LIVE_INTERVAL: ms between publications (10..60000) */
#define mi_option_purge_thread   ((mi_option_t)1002)   /* MIMALLOC_PURGE_THREAD: 0 = no background purger thread */
#define mi_option_memory_limit   ((mi_option_t)1003)   /* MIMALLOC_MEMORY_LIMIT: soft limit in KiB; -P = P% of the cgroup's (default -100; 1 = on = -100); 0 = off */
#define mi_option_memory_limit_hard ((mi_option_t)1004) /* MIMALLOC_MEMORY_LIMIT_HARD: 0 = off (default); 1 = the soft limit; else KiB or -P%: past it malloc gives NULL, ENOMEM */

#if defined(__cplusplus)
extern "C" {
#endif

/* ---- Options (functions) --------------------------------------------------- */

/* True iff the option's value is non-zero. */
mi_decl_nodiscard mi_decl_export bool mi_option_is_enabled(mi_option_t option);
/* Set to 1 / 0 / the given boolean (an explicit setting). */
mi_decl_export void mi_option_enable(mi_option_t option);
mi_decl_export void mi_option_disable(mi_option_t option);
mi_decl_export void mi_option_set_enabled(mi_option_t option, bool enable);
/* Set 1/0 only if neither the program nor the environment set it. */
mi_decl_export void mi_option_set_enabled_default(mi_option_t option, bool enable);

/* Current value (reading the environment on first access). */
mi_decl_nodiscard mi_decl_export long mi_option_get(mi_option_t option);
/* Current value clamped to [min,max]. */
mi_decl_nodiscard mi_decl_export long mi_option_get_clamp(mi_option_t option, long min, long max);
/* Value as size_t; the KiB-valued options are converted to bytes. */
mi_decl_nodiscard mi_decl_export size_t mi_option_get_size(mi_option_t option);
/* Set the value explicitly (the environment no longer overrides it). */
mi_decl_export void mi_option_set(mi_option_t option, long value);
/* Set the value only if neither the program nor the environment set it. */
mi_decl_export void mi_option_set_default(mi_option_t option, long value);
/* Print the version/build line and every option's current value. */
mi_decl_export void mi_options_print(void) mi_attr_noexcept;
/* (v3) mi_options_print through `out` (NULL: default output), each line prefixed "mimalloc: ". */
mi_decl_export void mi_options_print_out(mi_output_fun* out, void* arg) mi_attr_noexcept;

/* The soft memory limit in bytes (0: none; by default the cgroup's, docs/memory.md); set: KiB, 0 = off. */
mi_decl_nodiscard mi_decl_export size_t mi_memory_limit(void) mi_attr_noexcept;
mi_decl_export void mi_memory_limit_set(size_t bytes) mi_attr_noexcept;

#if defined(__cplusplus)
}  /* extern "C" */
#endif


/* ============================================================================
   8. C++ STL allocators (C++ only)

   mi_stl_allocator<T>               stateless, allocates on the default heap.
   mi_heap_stl_allocator<T>          allocates in a shared heap; the heap is
                                     deleted with the last copy (live blocks
                                     survive) unless it was passed in.
   mi_heap_destroy_stl_allocator<T>  like the above, but deallocate is a no-op
                                     and the heap is destroyed (all blocks
                                     freed at once) with the last copy.
   Heap allocators may only allocate in the thread that created the heap.
============================================================================ */
#if defined(__cplusplus)

#if (__cplusplus >= 201103L) || (defined(_MSC_VER) && (_MSC_VER > 1900))
  #define MI_HAS_HEAP_STL_ALLOCATOR 1
#endif

/* Members shared by all three allocators. */
template<class T> struct _mi_stl_allocator_common {
  typedef T                 value_type;
  typedef std::size_t       size_type;
  typedef std::ptrdiff_t    difference_type;
  typedef value_type&       reference;
  typedef value_type const& const_reference;
  typedef value_type*       pointer;
  typedef value_type const* const_pointer;

#if defined(MI_HAS_HEAP_STL_ALLOCATOR)
  typedef std::true_type    propagate_on_container_copy_assignment;
  typedef std::true_type    propagate_on_container_move_assignment;
  typedef std::true_type    propagate_on_container_swap;

  template<class U, class... Args> void construct(U* p, Args&&... args) {
    ::new(const_cast<void*>(static_cast<const volatile void*>(p))) U(std::forward<Args>(args)...);
  }
  template<class U> void destroy(U* p) mi_attr_noexcept { p->~U(); }

  pointer       address(reference x) const       { return std::addressof(x); }
  const_pointer address(const_reference x) const { return std::addressof(x); }
#else
  void construct(pointer p, value_type const& val) {
    ::new(const_cast<void*>(static_cast<const volatile void*>(p))) value_type(val);
  }
  void destroy(pointer p) { p->~value_type(); }

  pointer       address(reference x) const       { return &x; }
  const_pointer address(const_reference x) const { return &x; }
#endif

  size_type max_size() const mi_attr_noexcept {
#if defined(PTRDIFF_MAX)
    return (static_cast<size_type>(PTRDIFF_MAX) / sizeof(value_type));
#else
    return ((static_cast<size_type>(-1) >> 1) / sizeof(value_type));
#endif
  }
};


/* ---- mi_stl_allocator: default heap, stateless ----------------------------- */

template<class T> struct mi_stl_allocator : public _mi_stl_allocator_common<T> {
  typedef typename _mi_stl_allocator_common<T>::size_type  size_type;
  typedef typename _mi_stl_allocator_common<T>::value_type value_type;
  typedef typename _mi_stl_allocator_common<T>::pointer    pointer;

  template<class U> struct rebind { typedef mi_stl_allocator<U> other; };

  mi_stl_allocator() mi_attr_noexcept { }
  mi_stl_allocator(const mi_stl_allocator&) mi_attr_noexcept { }
  template<class U> mi_stl_allocator(const mi_stl_allocator<U>&) mi_attr_noexcept { }
  mi_stl_allocator& operator=(const mi_stl_allocator&) mi_attr_noexcept { return *this; }

  mi_stl_allocator select_on_container_copy_construction() const { return *this; }

  /* Throws std::bad_alloc on failure (never returns NULL). */
#if (__cplusplus >= 201703L)
  mi_decl_nodiscard T* allocate(size_type count) { return static_cast<T*>(mi_new_n(count, sizeof(T))); }
  mi_decl_nodiscard T* allocate(size_type count, const void*) { return allocate(count); }
#elif defined(MI_HAS_HEAP_STL_ALLOCATOR)
  mi_decl_nodiscard pointer allocate(size_type count, const void* = nullptr) { return static_cast<pointer>(mi_new_n(count, sizeof(T))); }
#else
  mi_decl_nodiscard pointer allocate(size_type count, const void* = 0) { return static_cast<pointer>(mi_new_n(count, sizeof(T))); }
#endif
  void deallocate(T* p, size_type) { mi_free(p); }

#if defined(MI_HAS_HEAP_STL_ALLOCATOR)
  typedef std::true_type is_always_equal;
#endif
};

template<class T1, class T2>
bool operator==(const mi_stl_allocator<T1>&, const mi_stl_allocator<T2>&) mi_attr_noexcept { return true; }
template<class T1, class T2>
bool operator!=(const mi_stl_allocator<T1>&, const mi_stl_allocator<T2>&) mi_attr_noexcept { return false; }


#if defined(MI_HAS_HEAP_STL_ALLOCATOR)

/* ---- Heap allocators: state is a shared_ptr to the heap ------------------- */

template<class T, bool _mi_destroy> struct _mi_heap_stl_allocator_common : public _mi_stl_allocator_common<T> {
  typedef typename _mi_stl_allocator_common<T>::size_type  size_type;
  typedef typename _mi_stl_allocator_common<T>::value_type value_type;

  typedef std::false_type is_always_equal;

  /* Throws std::bad_alloc on failure (never returns NULL). */
  mi_decl_nodiscard T* allocate(size_type count) { return static_cast<T*>(mi_heap_alloc_new_n(this->heap.get(), count, sizeof(T))); }
  mi_decl_nodiscard T* allocate(size_type count, const void*) { return allocate(count); }

  /* Collect the underlying heap. */
  void collect(bool force) { mi_heap_collect(this->heap.get(), force); }

  /* Two allocators are equal when they share the same heap. */
  template<class U> bool is_equal(const _mi_heap_stl_allocator_common<U, _mi_destroy>& x) const {
    return (this->heap == x.heap);
  }

protected:
  std::shared_ptr<mi_heap_t> heap;
  template<class U, bool D> friend struct _mi_heap_stl_allocator_common;

  /* A fresh heap, released by the last copy (delete or destroy). */
  _mi_heap_stl_allocator_common() : heap(mi_heap_new(), (_mi_destroy ? &heap_destroy : &heap_delete)) { }
  /* Use a caller-owned heap; it is never deleted by the allocator. */
  _mi_heap_stl_allocator_common(mi_heap_t* hp) : heap(hp, &heap_no_delete) { }

  /* Copies share the heap. A "move" is a copy too, so that the source stays
     a valid allocator for the same heap (as the Allocator rules require). */
  _mi_heap_stl_allocator_common(const _mi_heap_stl_allocator_common& x) mi_attr_noexcept : heap(x.heap) { }
  template<class U> _mi_heap_stl_allocator_common(const _mi_heap_stl_allocator_common<U, _mi_destroy>& x) mi_attr_noexcept : heap(x.heap) { }
  _mi_heap_stl_allocator_common& operator=(const _mi_heap_stl_allocator_common& x) mi_attr_noexcept {
    this->heap = x.heap;
    return *this;
  }

private:
  static void heap_delete(mi_heap_t* hp)    { if (hp != nullptr) { mi_heap_delete(hp); } }
  static void heap_destroy(mi_heap_t* hp)   { if (hp != nullptr) { mi_heap_destroy(hp); } }
  static void heap_no_delete(mi_heap_t*)    { }
};


/* ---- mi_heap_stl_allocator: frees blocks individually --------------------- */

template<class T> struct mi_heap_stl_allocator : public _mi_heap_stl_allocator_common<T, false> {
  typedef typename _mi_heap_stl_allocator_common<T, false>::size_type size_type;

  template<class U> struct rebind { typedef mi_heap_stl_allocator<U> other; };

  mi_heap_stl_allocator() : _mi_heap_stl_allocator_common<T, false>() { }
  mi_heap_stl_allocator(mi_heap_t* hp) : _mi_heap_stl_allocator_common<T, false>(hp) { }
  template<class U> mi_heap_stl_allocator(const mi_heap_stl_allocator<U>& x) mi_attr_noexcept
    : _mi_heap_stl_allocator_common<T, false>(x) { }

  mi_heap_stl_allocator select_on_container_copy_construction() const { return *this; }
  void deallocate(T* p, size_type) { mi_free(p); }
};

template<class T1, class T2>
bool operator==(const mi_heap_stl_allocator<T1>& x, const mi_heap_stl_allocator<T2>& y) mi_attr_noexcept { return (x.is_equal(y)); }
template<class T1, class T2>
bool operator!=(const mi_heap_stl_allocator<T1>& x, const mi_heap_stl_allocator<T2>& y) mi_attr_noexcept { return (!x.is_equal(y)); }


/* ---- mi_heap_destroy_stl_allocator: frees everything at once -------------- */

template<class T> struct mi_heap_destroy_stl_allocator : public _mi_heap_stl_allocator_common<T, true> {
  typedef typename _mi_heap_stl_allocator_common<T, true>::size_type size_type;

  template<class U> struct rebind { typedef mi_heap_destroy_stl_allocator<U> other; };

  mi_heap_destroy_stl_allocator() : _mi_heap_stl_allocator_common<T, true>() { }
  mi_heap_destroy_stl_allocator(mi_heap_t* hp) : _mi_heap_stl_allocator_common<T, true>(hp) { }
  template<class U> mi_heap_destroy_stl_allocator(const mi_heap_destroy_stl_allocator<U>& x) mi_attr_noexcept
    : _mi_heap_stl_allocator_common<T, true>(x) { }

  mi_heap_destroy_stl_allocator select_on_container_copy_construction() const { return *this; }
  /* Nothing to do: blocks are released when the heap is destroyed. */
  void deallocate(T*, size_type) { }
};

template<class T1, class T2>
bool operator==(const mi_heap_destroy_stl_allocator<T1>& x, const mi_heap_destroy_stl_allocator<T2>& y) mi_attr_noexcept { return (x.is_equal(y)); }
template<class T1, class T2>
bool operator!=(const mi_heap_destroy_stl_allocator<T1>& x, const mi_heap_destroy_stl_allocator<T2>& y) mi_attr_noexcept { return (!x.is_equal(y)); }

#endif /* MI_HAS_HEAP_STL_ALLOCATOR */

#endif /* __cplusplus */

#endif /* MIMALLOC_H */
