/* SPDX-License-Identifier: MIT */
/* C++ allocation helpers with standard operator-new failure semantics: call the installed
   std::new_handler and retry; with no handler throw std::bad_alloc (the nothrow forms return
   NULL). The library is C: the C++ runtime is reached through weak references, so C programs
   link without libstdc++, and C++ programs (which always have it) get real exceptions.
   This file is compiled with -fexceptions so the exception can unwind through it. */
#include "internal/api.h"   /* _mi_new_counted, _mi_prof_entry_malloc */
#include <stdlib.h>

typedef void (*mi_std_new_handler_t)(void);

/* Itanium C++ ABI / libstdc++ symbols (weak: NULL when the C++ runtime is absent) */
extern mi_std_new_handler_t _ZSt15get_new_handlerv(void) mi_decl_weak;                   /* std::get_new_handler() */
#if !defined(_WIN32)
extern void* __cxa_allocate_exception(size_t size) mi_decl_weak;
extern void  __cxa_throw(void* obj, void* tinfo, void (*dest)(void*)) mi_decl_weak;
extern char  _ZTISt9bad_alloc[] mi_decl_weak;                                            /* typeinfo for std::bad_alloc */
extern void* _ZTVSt9bad_alloc[] mi_decl_weak;                                            /* vtable for std::bad_alloc */
extern void  _ZNSt9bad_allocD1Ev(void* self) mi_decl_weak;                               /* std::bad_alloc::~bad_alloc() */
#endif

/* new-handler.cpp; weak: a C-only build of src/static.c alone (no C++ compiler) links without
   it, and then a nothrow new calls the handler directly (a std::bad_alloc thrown by it would
   end the program; C++ programs link the library built with the .cpp, or add it) */
bool _mi_new_handler_call_nothrow(mi_std_new_handler_t handler) mi_decl_weak;

#if defined(_WIN32)
/* new-handler.cpp; weak. PE has no weak references to data (typeinfo, vtable): on Windows
   the C++ side throws, and a C-only build of src/static.c has no C++ runtime to throw with. */
void _mi_new_handler_throw_bad_alloc(void) mi_decl_weak;
#endif

static void mi_throw_bad_alloc(void) {
#if defined(_WIN32)
  if (_mi_new_handler_throw_bad_alloc != NULL) _mi_new_handler_throw_bad_alloc();
#else
  if (__cxa_allocate_exception != NULL && __cxa_throw != NULL && _ZTISt9bad_alloc != NULL &&
      _ZTVSt9bad_alloc != NULL && _ZNSt9bad_allocD1Ev != NULL) {
    void** obj = (void**)__cxa_allocate_exception(sizeof(void*));
    obj[0] = &_ZTVSt9bad_alloc[2];   /* the vptr points past offset-to-top and typeinfo */
    __cxa_throw(obj, _ZTISt9bad_alloc, &_ZNSt9bad_allocD1Ev);
  }
#endif
  _mi_error_message(ENOMEM, "out of memory in operator new and no C++ runtime to throw std::bad_alloc\n");
  abort();
}

/* One round of the failure protocol: returns true to retry, false to give up (nothrow);
   otherwise throws. */
static bool mi_try_new_handler(bool nothrow) {
  mi_std_new_handler_t h = (_ZSt15get_new_handlerv != NULL ? _ZSt15get_new_handlerv() : NULL);
  if (h == NULL) {
    _mi_error_message(ENOMEM, "out of memory in 'new'\n");
    if (!nothrow) mi_throw_bad_alloc();
    return false;
  }
  if (nothrow && _mi_new_handler_call_nothrow != NULL) {
    return _mi_new_handler_call_nothrow(h);       /* a std::bad_alloc from h means: give up */
  }
  h();   /* may free memory, install another handler, or throw */
  return true;
}

static void* mi_heap_try_new(mi_heap_t* heap, size_t size, bool nothrow) {
  void* p = NULL;
  while (p == NULL && mi_try_new_handler(nothrow)) {
    p = mi_heap_malloc(heap, size);
  }
  return p;
}

void* mi_heap_alloc_new(mi_heap_t* heap, size_t size) {
  void* p = mi_heap_malloc(heap, size);
  if (mi_unlikely(p == NULL)) return mi_heap_try_new(heap, size, false);
  return p;
}

void* mi_new(size_t size) {
  return mi_heap_alloc_new(mi_prim_get_default_heap(), size);
}

void* mi_new_nothrow(size_t size) mi_attr_noexcept {
  void* p = mi_malloc(size);
  if (mi_unlikely(p == NULL)) return mi_heap_try_new(mi_prim_get_default_heap(), size, true);
  return p;
}

#if MI_PROF_ENTRIES
/* operator new's counted versions (prof-entry.c; override.c picks them) */
void* _mi_new_counted(size_t size) {
  void* p = _mi_prof_entry_malloc(size);
  if (mi_unlikely(p == NULL)) return mi_heap_try_new(mi_prim_get_default_heap(), size, false);
  return p;
}
void* _mi_new_counted_nothrow(size_t size) mi_attr_noexcept {
  void* p = _mi_prof_entry_malloc(size);
  if (mi_unlikely(p == NULL)) return mi_heap_try_new(mi_prim_get_default_heap(), size, true);
  return p;
}
#endif

static void* mi_try_new_aligned(size_t size, size_t alignment, bool nothrow) {
  void* p;
  do {
    p = mi_malloc_aligned(size, alignment);
  } while (p == NULL && mi_try_new_handler(nothrow));
  return p;
}

void* mi_new_aligned(size_t size, size_t alignment) {
  return mi_try_new_aligned(size, alignment, false);
}

void* mi_new_aligned_nothrow(size_t size, size_t alignment) mi_attr_noexcept {
  return mi_try_new_aligned(size, alignment, true);
}

/* count*size overflow can never succeed: run the new-handler loop until the handler gives up
   (uninstalls itself or throws), then throw std::bad_alloc like any failed operator new. */
static void* mi_new_overflow(void) {
  errno = ENOMEM;
  while (mi_try_new_handler(false)) { }
  return NULL;   /* not reached: mi_try_new_handler(false) throws when there is no handler */
}

void* mi_heap_alloc_new_n(mi_heap_t* heap, size_t count, size_t size) {
  size_t total;
  if (mi_unlikely(mi_mul_overflow(count, size, &total))) return mi_new_overflow();
  return mi_heap_alloc_new(heap, total);
}

void* mi_new_n(size_t count, size_t size) {
  return mi_heap_alloc_new_n(mi_prim_get_default_heap(), count, size);
}

void* mi_new_realloc(void* p, size_t newsize) {
  void* q;
  do {
    q = mi_realloc(p, newsize);
  } while (q == NULL && mi_try_new_handler(false));
  return q;
}

void* mi_new_reallocn(void* p, size_t newcount, size_t size) {
  size_t total;
  if (mi_unlikely(mi_mul_overflow(newcount, size, &total))) return mi_new_overflow();
  return mi_new_realloc(p, total);
}
