/* SPDX-License-Identifier: MIT */
/* Static override on Windows (mingw-w64): the C runtime's allocation functions and the C++
   operators new/delete, defined as plain wrappers of the mi_ functions, for the one program
   (.exe or .dll) this object is linked into. Built as its own object, mimalloc-override.o, and
   linked beside the library (libmimalloc.a or mimalloc.o); static.c does not include it.

   Why a separate translation unit: PE/COFF has no cross-unit aliases, and mingw-w64 declares
   most of these functions dllimport (_CRTIMP) in <stdlib.h> and <malloc.h>, which a
   definition in a unit that includes those headers contradicts. This unit includes no C
   runtime header and declares every name itself.

   How calls reach us: the linker takes a name from the first object that defines it, and
   an import library (libmsvcrt.a) supplies a name only while it is still undefined. A
   program calls malloc, free, calloc, realloc, strdup and wcsdup directly (mingw-w64 does not
   declare them dllimport); the other names it calls through their import slot, __imp_<name>,
   so that slot is defined here too, holding our function. Other modules (the C runtime DLL
   itself, other DLLs) keep their own allocator: docs/platforms.md, "Static override on Windows".

   Invariants:
   - every wrapper is safe for any pointer a program may pass: NULL, and pointers that are not
     ours (mi_free ignores those; size and resize queries fail with EINVAL, as the CRT does for
     an invalid pointer);
   - CRT semantics where they differ from the mi_ function: realloc(p, 0) frees and returns
     NULL; _msize(NULL) and _aligned_msize(NULL) set EINVAL and return (size_t)-1; _expand
     never moves a block; an alignment that is not a power of two is EINVAL. */
#if !defined(_WIN32) || !defined(__GNUC__)
#error "override-windows.c is the static override for mingw-w64 (gcc) on Windows"
#endif

#include <errno.h>
#include "mimalloc.h"
#include "internal/crt-windows.h"

/* kept even when nothing in this unit calls them: the program's references come at link time */
#define mi_win_decl  __attribute__((used))

/* Not NULL and not ours: the CRT's answer to an invalid block is EINVAL. */
static int mi_win_foreign(const void* p) {
  if (p != NULL && !mi_is_in_heap_region(p)) { errno = EINVAL; return 1; }
  return 0;
}

/* ---- C: malloc & co. ---- */
mi_win_decl void* malloc(size_t size)                  { return mi_malloc(size); }
mi_win_decl void* calloc(size_t count, size_t size)    { return mi_calloc(count, size); }
mi_win_decl void  free(void* p)                        { mi_free(p); }
mi_win_decl void* realloc(void* p, size_t newsize) {
  return mi_crt_realloc(p, newsize);   /* a foreign p: NULL with EINVAL, p untouched */
}
mi_win_decl void* _recalloc(void* p, size_t count, size_t size) {
  if (mi_win_foreign(p)) return NULL;
  return mi_recalloc(p, count, size);
}
mi_win_decl size_t _msize(void* p) {
  if (p == NULL) { errno = EINVAL; return (size_t)-1; }
  if (mi_win_foreign(p)) return (size_t)-1;
  return mi_usable_size(p);
}
mi_win_decl void* _expand(void* p, size_t newsize) {
  if (p == NULL) { errno = EINVAL; return NULL; }
  if (mi_win_foreign(p)) return NULL;
  return mi__expand(p, newsize);   /* p, or NULL with ENOMEM when it does not fit in place */
}

/* ---- aligned: _aligned_malloc(size, alignment), the CRT's argument order ---- */
mi_win_decl void* _aligned_malloc(size_t size, size_t alignment) { return mi_crt_aligned_malloc(size, alignment); }
mi_win_decl void* _aligned_offset_malloc(size_t size, size_t alignment, size_t offset) {
  return mi_crt_aligned_offset_malloc(size, alignment, offset);
}
mi_win_decl void* _aligned_realloc(void* p, size_t size, size_t alignment) {
  if (!mi_crt_alignment_ok(alignment)) return NULL;
  if (p != NULL && size == 0) { mi_free(p); return NULL; }
  if (mi_win_foreign(p)) return NULL;
  return mi_realloc_aligned(p, size, alignment);
}
mi_win_decl void* _aligned_offset_realloc(void* p, size_t size, size_t alignment, size_t offset) {
  if (!mi_crt_alignment_ok(alignment)) return NULL;
  if (p != NULL && size == 0) { mi_free(p); return NULL; }
  if (mi_win_foreign(p)) return NULL;
  return mi_realloc_aligned_at(p, size, alignment, offset);
}
mi_win_decl void* _aligned_recalloc(void* p, size_t count, size_t size, size_t alignment) {
  if (!mi_crt_alignment_ok(alignment)) return NULL;
  if (mi_win_foreign(p)) return NULL;
  return mi_aligned_recalloc(p, count, size, alignment);
}
mi_win_decl void* _aligned_offset_recalloc(void* p, size_t count, size_t size, size_t alignment, size_t offset) {
  if (!mi_crt_alignment_ok(alignment)) return NULL;
  if (mi_win_foreign(p)) return NULL;
  return mi_aligned_offset_recalloc(p, count, size, alignment, offset);
}
mi_win_decl void   _aligned_free(void* p)   { mi_free(p); }   /* NULL: nothing */
mi_win_decl size_t _aligned_msize(void* p, size_t alignment, size_t offset) {
  (void)alignment; (void)offset;   /* the block knows its size */
  return _msize(p);
}

/* ---- strings and the environment ---- */
mi_win_decl char*    strdup(const char* s)              { return mi_strdup(s); }
mi_win_decl char*    _strdup(const char* s)             { return mi_strdup(s); }
mi_win_decl wchar_t* wcsdup(const wchar_t* s)           { return mi_wcsdup(s); }
mi_win_decl wchar_t* _wcsdup(const wchar_t* s)          { return mi_wcsdup(s); }
mi_win_decl unsigned char* _mbsdup(const unsigned char* s) { return mi_mbsdup(s); }
mi_win_decl int _dupenv_s(char** buf, size_t* size, const char* name)        { return mi_dupenv_s(buf, size, name); }
mi_win_decl int _wdupenv_s(wchar_t** buf, size_t* size, const wchar_t* name) { return mi_wdupenv_s(buf, size, name); }

/* ---- the Universal CRT's internal names (a program built against ucrt may call them) ---- */
mi_win_decl void*  _malloc_base(size_t size)                     { return malloc(size); }
mi_win_decl void*  _calloc_base(size_t count, size_t size)       { return calloc(count, size); }
mi_win_decl void*  _realloc_base(void* p, size_t newsize)        { return realloc(p, newsize); }
mi_win_decl void   _free_base(void* p)                           { free(p); }
mi_win_decl size_t _msize_base(void* p)                          { return _msize(p); }
mi_win_decl void*  _expand_base(void* p, size_t newsize)         { return _expand(p, newsize); }
mi_win_decl void*  _recalloc_base(void* p, size_t count, size_t size) { return _recalloc(p, count, size); }

/* ---- import slots: a call through __imp_<name> (dllimport) reaches the wrapper ---- */
#define mi_win_imp(name)  void* __imp_##name = (void*)&name;
mi_win_imp(malloc)          mi_win_imp(calloc)          mi_win_imp(realloc)
mi_win_imp(free)            mi_win_imp(_recalloc)       mi_win_imp(_msize)
mi_win_imp(_expand)         mi_win_imp(_aligned_malloc) mi_win_imp(_aligned_offset_malloc)
mi_win_imp(_aligned_realloc) mi_win_imp(_aligned_offset_realloc)
mi_win_imp(_aligned_recalloc) mi_win_imp(_aligned_offset_recalloc)
mi_win_imp(_aligned_free)   mi_win_imp(_aligned_msize)
mi_win_imp(strdup)          mi_win_imp(_strdup)         mi_win_imp(wcsdup)
mi_win_imp(_wcsdup)         mi_win_imp(_mbsdup)         mi_win_imp(_dupenv_s)
mi_win_imp(_wdupenv_s)

/* ---- C++ operator new/delete (Itanium ABI; size_t is unsigned long long on Win64: 'y') ----
   The throwing forms follow mi_new: new-handler, then std::bad_alloc where the library's C++
   part (src/new-handler.cpp) is linked (mimalloc.o; with libmimalloc.a only if the program
   pulls it), else an error message and abort. delete needs neither size nor alignment. */
#define mi_win_cxx(name)  __asm__(name) __attribute__((used))
void* mi_win_new(size_t n)                               mi_win_cxx("_Znwy");
void* mi_win_new_array(size_t n)                         mi_win_cxx("_Znay");
void* mi_win_new_nothrow(size_t n, const void* tag)      mi_win_cxx("_ZnwyRKSt9nothrow_t");
void* mi_win_new_array_nothrow(size_t n, const void* tag) mi_win_cxx("_ZnayRKSt9nothrow_t");
void* mi_win_new_aligned(size_t n, size_t al)            mi_win_cxx("_ZnwySt11align_val_t");
void* mi_win_new_array_aligned(size_t n, size_t al)      mi_win_cxx("_ZnaySt11align_val_t");
void* mi_win_new_aligned_nothrow(size_t n, size_t al, const void* tag)       mi_win_cxx("_ZnwySt11align_val_tRKSt9nothrow_t");
void* mi_win_new_array_aligned_nothrow(size_t n, size_t al, const void* tag) mi_win_cxx("_ZnaySt11align_val_tRKSt9nothrow_t");
void mi_win_delete(void* p)                              mi_win_cxx("_ZdlPv");
void mi_win_delete_array(void* p)                        mi_win_cxx("_ZdaPv");
void mi_win_delete_sized(void* p, size_t n)              mi_win_cxx("_ZdlPvy");
void mi_win_delete_array_sized(void* p, size_t n)        mi_win_cxx("_ZdaPvy");
void mi_win_delete_aligned(void* p, size_t al)           mi_win_cxx("_ZdlPvSt11align_val_t");
void mi_win_delete_array_aligned(void* p, size_t al)     mi_win_cxx("_ZdaPvSt11align_val_t");
void mi_win_delete_sized_aligned(void* p, size_t n, size_t al)       mi_win_cxx("_ZdlPvySt11align_val_t");
void mi_win_delete_array_sized_aligned(void* p, size_t n, size_t al) mi_win_cxx("_ZdaPvySt11align_val_t");
void mi_win_delete_nothrow(void* p, const void* tag)     mi_win_cxx("_ZdlPvRKSt9nothrow_t");
void mi_win_delete_array_nothrow(void* p, const void* tag) mi_win_cxx("_ZdaPvRKSt9nothrow_t");
void mi_win_delete_aligned_nothrow(void* p, size_t al, const void* tag)       mi_win_cxx("_ZdlPvSt11align_val_tRKSt9nothrow_t");
void mi_win_delete_array_aligned_nothrow(void* p, size_t al, const void* tag) mi_win_cxx("_ZdaPvSt11align_val_tRKSt9nothrow_t");

void* mi_win_new(size_t n)                                { return mi_new(n); }
void* mi_win_new_array(size_t n)                          { return mi_new(n); }
void* mi_win_new_nothrow(size_t n, const void* tag)       { (void)tag; return mi_new_nothrow(n); }
void* mi_win_new_array_nothrow(size_t n, const void* tag) { (void)tag; return mi_new_nothrow(n); }
void* mi_win_new_aligned(size_t n, size_t al)             { return mi_new_aligned(n, al); }
void* mi_win_new_array_aligned(size_t n, size_t al)       { return mi_new_aligned(n, al); }
void* mi_win_new_aligned_nothrow(size_t n, size_t al, const void* tag)       { (void)tag; return mi_new_aligned_nothrow(n, al); }
void* mi_win_new_array_aligned_nothrow(size_t n, size_t al, const void* tag) { (void)tag; return mi_new_aligned_nothrow(n, al); }
void mi_win_delete(void* p)                               { mi_free(p); }
void mi_win_delete_array(void* p)                         { mi_free(p); }
void mi_win_delete_sized(void* p, size_t n)               { (void)n; mi_free(p); }
void mi_win_delete_array_sized(void* p, size_t n)         { (void)n; mi_free(p); }
void mi_win_delete_aligned(void* p, size_t al)            { (void)al; mi_free(p); }
void mi_win_delete_array_aligned(void* p, size_t al)      { (void)al; mi_free(p); }
void mi_win_delete_sized_aligned(void* p, size_t n, size_t al)       { (void)n; (void)al; mi_free(p); }
void mi_win_delete_array_sized_aligned(void* p, size_t n, size_t al) { (void)n; (void)al; mi_free(p); }
void mi_win_delete_nothrow(void* p, const void* tag)       { (void)tag; mi_free(p); }
void mi_win_delete_array_nothrow(void* p, const void* tag) { (void)tag; mi_free(p); }
void mi_win_delete_aligned_nothrow(void* p, size_t al, const void* tag)       { (void)al; (void)tag; mi_free(p); }
void mi_win_delete_array_aligned_nothrow(void* p, size_t al, const void* tag) { (void)al; (void)tag; mi_free(p); }
