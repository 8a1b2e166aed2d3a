/* SPDX-License-Identifier: MIT */
/* Drop-in replacement: the standard allocation symbols of C, POSIX, glibc and the Itanium
   C++ ABI (every name mimalloc v2 overrides on Linux, listed below by family), defined as
   aliases of the mi_ functions. Exported from
   libmimalloc.so they take over a whole process under LD_PRELOAD; linked first (mimalloc.o,
   libmimalloc.a) they take over a program statically. Included by static.c only when built
   with MI_OVERRIDE, so the alias targets are in this translation unit.

   Invariants the aliases rely on:
   - every mi_ target is safe for any pointer a program may hand to free/realloc, including
     NULL and pointers that are not ours (free.c ignores those, realloc fails with EINVAL);
   - on the ELF ABIs we build for (x86-64, AArch64 and the other 64-bit SysV ABIs) a caller
     may pass trailing arguments that the callee ignores (std::nothrow_t&, a sized-delete
     size, an alignment), so those operators alias the shorter mi_ function directly. */
#if !defined(__GNUC__) || !defined(__ELF__)
#error "the override is implemented for GCC/Clang on ELF platforms"
#endif

#include "internal/api.h"
#include "prim/prim.h"   /* _mi_prim_symbol_provider */

#define mi_alias(target)  __attribute__((alias(#target), used, visibility("default")))
#define mi_alias_weak(target)  __attribute__((alias(#target), used, visibility("default"), weak))

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wattribute-alias"     /* the ignored trailing arguments above */
#pragma GCC diagnostic ignored "-Wmissing-attributes"  /* malloc/alloc_size are hints for callers */
#endif

/* ---- C, POSIX, BSD, GNU ---- */
void*  malloc(size_t size)                             mi_alias(mi_malloc);
void*  calloc(size_t count, size_t size)               mi_alias(mi_calloc);
void*  realloc(void* p, size_t newsize)                mi_alias(mi_realloc);
void   free(void* p)                                   mi_alias(mi_free);
void   cfree(void* p)                                  mi_alias(mi_free);
void   vfree(void* p)                                  mi_alias(mi_free);
char*  strdup(const char* s)                           mi_alias(mi_strdup);
char*  strndup(const char* s, size_t n)                mi_alias(mi_strndup);
void*  reallocf(void* p, size_t newsize)               mi_alias(mi_reallocf);
void*  reallocarray(void* p, size_t count, size_t size) mi_alias(mi_reallocarray);
int    reallocarr(void* p, size_t count, size_t size)  mi_alias_weak(mi_reallocarr);
size_t malloc_size(const void* p)                      mi_alias(mi_usable_size);
size_t malloc_usable_size(void* p)                     mi_alias(mi_usable_size);
size_t malloc_good_size(size_t size)                   mi_alias(mi_malloc_good_size);
void*  valloc(size_t size)                             mi_alias(mi_valloc);
void*  pvalloc(size_t size)                            mi_alias(mi_pvalloc);
void*  memalign(size_t alignment, size_t size)         mi_alias(mi_memalign);
int    posix_memalign(void** p, size_t alignment, size_t size) mi_alias(mi_posix_memalign);
void*  aligned_alloc(size_t alignment, size_t size)    mi_alias(mi_aligned_alloc);
void*  _aligned_malloc(size_t size, size_t alignment)  mi_alias(mi_malloc_aligned);

/* glibc's internal entry points: libc itself and some programs call these directly */
void*  __libc_malloc(size_t size)                      mi_alias(mi_malloc);
void*  __libc_calloc(size_t count, size_t size)        mi_alias(mi_calloc);
void*  __libc_realloc(void* p, size_t newsize)         mi_alias(mi_realloc);
void   __libc_free(void* p)                            mi_alias(mi_free);
void   __libc_cfree(void* p)                           mi_alias(mi_free);
void*  __libc_valloc(size_t size)                      mi_alias(mi_valloc);
void*  __libc_pvalloc(size_t size)                     mi_alias(mi_pvalloc);
void*  __libc_memalign(size_t alignment, size_t size)  mi_alias(mi_memalign);
int    __posix_memalign(void** p, size_t alignment, size_t size) mi_alias(mi_posix_memalign);

/* ---- C++ operator new/delete (Itanium ABI names; size_t mangles as m on LP64, j on ILP32) ----
   Weak, so a program that defines its own operators (e.g. with mimalloc-new-delete.h) can
   still link libmimalloc.a or mimalloc.o statically; the dynamic loader treats weak and strong
   definitions alike, so LD_PRELOAD is unaffected. */
#if SIZE_MAX == UINT64_MAX
#define mi_cxx(name64, name32)  __asm__(name64)
#else
#define mi_cxx(name64, name32)  __asm__(name32)
#endif

void* mi_cxx_new(size_t n)                         mi_cxx("_Znwm", "_Znwj") mi_alias_weak(mi_new);
void* mi_cxx_new_array(size_t n)                   mi_cxx("_Znam", "_Znaj") mi_alias_weak(mi_new);
void* mi_cxx_new_nothrow(size_t n, const void* tag) mi_cxx("_ZnwmRKSt9nothrow_t", "_ZnwjRKSt9nothrow_t") mi_alias_weak(mi_new_nothrow);
void* mi_cxx_new_array_nothrow(size_t n, const void* tag) mi_cxx("_ZnamRKSt9nothrow_t", "_ZnajRKSt9nothrow_t") mi_alias_weak(mi_new_nothrow);
void* mi_cxx_new_aligned(size_t n, size_t al)      mi_cxx("_ZnwmSt11align_val_t", "_ZnwjSt11align_val_t") mi_alias_weak(mi_new_aligned);
void* mi_cxx_new_array_aligned(size_t n, size_t al) mi_cxx("_ZnamSt11align_val_t", "_ZnajSt11align_val_t") mi_alias_weak(mi_new_aligned);
void* mi_cxx_new_aligned_nothrow(size_t n, size_t al, const void* tag)
  mi_cxx("_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnwjSt11align_val_tRKSt9nothrow_t") mi_alias_weak(mi_new_aligned_nothrow);
void* mi_cxx_new_array_aligned_nothrow(size_t n, size_t al, const void* tag)
  mi_cxx("_ZnamSt11align_val_tRKSt9nothrow_t", "_ZnajSt11align_val_tRKSt9nothrow_t") mi_alias_weak(mi_new_aligned_nothrow);

/* delete: the size and alignment arguments are not needed to free a block (the segment knows) */
void mi_cxx_delete(void* p)                              __asm__("_ZdlPv") mi_alias_weak(mi_free);
void mi_cxx_delete_array(void* p)                        __asm__("_ZdaPv") mi_alias_weak(mi_free);
void mi_cxx_delete_sized(void* p, size_t n)              mi_cxx("_ZdlPvm", "_ZdlPvj") mi_alias_weak(mi_free);
void mi_cxx_delete_array_sized(void* p, size_t n)        mi_cxx("_ZdaPvm", "_ZdaPvj") mi_alias_weak(mi_free);
void mi_cxx_delete_aligned(void* p, size_t al)           __asm__("_ZdlPvSt11align_val_t") mi_alias_weak(mi_free);
void mi_cxx_delete_array_aligned(void* p, size_t al)     __asm__("_ZdaPvSt11align_val_t") mi_alias_weak(mi_free);
void mi_cxx_delete_sized_aligned(void* p, size_t n, size_t al)       mi_cxx("_ZdlPvmSt11align_val_t", "_ZdlPvjSt11align_val_t") mi_alias_weak(mi_free);
void mi_cxx_delete_array_sized_aligned(void* p, size_t n, size_t al) mi_cxx("_ZdaPvmSt11align_val_t", "_ZdaPvjSt11align_val_t") mi_alias_weak(mi_free);
void mi_cxx_delete_nothrow(void* p, const void* tag)     __asm__("_ZdlPvRKSt9nothrow_t") mi_alias_weak(mi_free);
void mi_cxx_delete_array_nothrow(void* p, const void* tag) __asm__("_ZdaPvRKSt9nothrow_t") mi_alias_weak(mi_free);
void mi_cxx_delete_aligned_nothrow(void* p, size_t al, const void* tag)       __asm__("_ZdlPvSt11align_val_tRKSt9nothrow_t") mi_alias_weak(mi_free);
void mi_cxx_delete_array_aligned_nothrow(void* p, size_t al, const void* tag) __asm__("_ZdaPvSt11align_val_tRKSt9nothrow_t") mi_alias_weak(mi_free);

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#if MI_PROF_ENTRIES
/* The profiler's counted entry points (prof-entry.c; prof.c, "Counted entry points"): with the profiler on
   from the start, the loaded objects' calls to malloc, calloc and operator new that bind to
   this library are sent to the counted versions (_mi_prim_rebind_calls). Names that another
   object defines first (the program's own malloc, a sanitizer's) are left alone. */
size_t _mi_override_rebind_counted(void) {
  const char* const names[] = { "malloc", "calloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t" };
  void* const from[] = { (void*)&mi_malloc, (void*)&mi_calloc, (void*)&mi_new, (void*)&mi_new,
                         (void*)&mi_new_nothrow, (void*)&mi_new_nothrow };
  void* const to[] = { (void*)&_mi_prof_entry_malloc, (void*)&_mi_prof_entry_calloc, (void*)&_mi_new_counted, (void*)&_mi_new_counted,
                       (void*)&_mi_new_counted_nothrow, (void*)&_mi_new_counted_nothrow };
  const char* ours_names[6];
  void* ours_from[6];
  void* ours_to[6];
  size_t n = 0;
  for (size_t k = 0; k < 6; k++) {
    void* addr;
    char path[8];
    if (_mi_prim_symbol_provider(names[k], (const void*)&mi_malloc, &addr, path, sizeof(path)) != 1) continue;
    ours_names[n] = names[k]; ours_from[n] = from[k]; ours_to[n] = to[k]; n++;
  }
  return _mi_prim_rebind_calls(ours_names, ours_from, ours_to, n);
}
#endif
