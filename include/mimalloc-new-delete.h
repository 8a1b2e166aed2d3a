/* SPDX-License-Identifier: MIT */
/* ----------------------------------------------------------------------------
  mimalloc-new-delete.h -- route C++ operator new/delete to this allocator.

  This header DEFINES the replaceable global operator new and delete
  functions (they are not inline), so include it in exactly one source file
  of a program. It has no effect when compiled as C.

  Always:             new, new[], delete, delete[] and their nothrow forms.
  C++14 and later:    sized delete / delete[].
  Aligned new (C++17 or __cpp_aligned_new): the std::align_val_t forms.
  Failing `new` throws std::bad_alloc (after the new-handler); the nothrow
  forms return NULL.
---------------------------------------------------------------------------- */
#pragma once
#ifndef MIMALLOC_NEW_DELETE_H
#define MIMALLOC_NEW_DELETE_H

#if defined(__cplusplus)

#include <new>
#include "mimalloc.h"

/* Declaration attributes of operator new: nodiscard + restrict, plus the
   SAL annotations that MSVC's own declarations carry. */
#if defined(_MSC_VER) && defined(_Ret_notnull_) && defined(_Post_writable_byte_size_)
  #define mi_decl_new(n)          mi_decl_nodiscard mi_decl_restrict _Ret_notnull_ _Post_writable_byte_size_(n)
  #define mi_decl_new_nothrow(n)  mi_decl_nodiscard mi_decl_restrict _Ret_maybenull_ _Success_(return != NULL) _Post_writable_byte_size_(n)
#else
  #define mi_decl_new(n)          mi_decl_nodiscard mi_decl_restrict
  #define mi_decl_new_nothrow(n)  mi_decl_nodiscard mi_decl_restrict
#endif

/* Exception specification of the throwing `new` forms; C++98 spells it as a
   dynamic exception specification, which the prior declaration in <new> uses. */
#if (__cplusplus >= 201103L) || (defined(_MSC_VER) && (_MSC_VER >= 1900))
  #define _mi_new_throws  noexcept(false)
#else
  #define _mi_new_throws  throw(std::bad_alloc)
#endif

/* ---- delete (always) ------------------------------------------------------ */
void operator delete(void* p) mi_attr_noexcept   { mi_free(p); }
void operator delete[](void* p) mi_attr_noexcept { mi_free(p); }

void operator delete(void* p, const std::nothrow_t&) mi_attr_noexcept   { mi_free(p); }
void operator delete[](void* p, const std::nothrow_t&) mi_attr_noexcept { mi_free(p); }

/* ---- new (always) --------------------------------------------------------- */
mi_decl_new(n) void* operator new(std::size_t n) _mi_new_throws   { return mi_new(n); }
mi_decl_new(n) void* operator new[](std::size_t n) _mi_new_throws { return mi_new(n); }

mi_decl_new_nothrow(n) void* operator new(std::size_t n, const std::nothrow_t&) mi_attr_noexcept   { return mi_new_nothrow(n); }
mi_decl_new_nothrow(n) void* operator new[](std::size_t n, const std::nothrow_t&) mi_attr_noexcept { return mi_new_nothrow(n); }

/* ---- sized delete (C++14) ------------------------------------------------- */
#if (__cplusplus >= 201402L) || (defined(_MSC_VER) && (_MSC_VER >= 1916))
void operator delete(void* p, std::size_t n) mi_attr_noexcept   { mi_free_size(p, n); }
void operator delete[](void* p, std::size_t n) mi_attr_noexcept { mi_free_size(p, n); }
#endif

/* ---- aligned new/delete (C++17) ------------------------------------------- */
#if (__cplusplus > 201402L) || defined(__cpp_aligned_new)
void operator delete(void* p, std::align_val_t al) mi_attr_noexcept   { mi_free_aligned(p, static_cast<std::size_t>(al)); }
void operator delete[](void* p, std::align_val_t al) mi_attr_noexcept { mi_free_aligned(p, static_cast<std::size_t>(al)); }
void operator delete(void* p, std::size_t n, std::align_val_t al) mi_attr_noexcept   { mi_free_size_aligned(p, n, static_cast<std::size_t>(al)); }
void operator delete[](void* p, std::size_t n, std::align_val_t al) mi_attr_noexcept { mi_free_size_aligned(p, n, static_cast<std::size_t>(al)); }
void operator delete(void* p, std::align_val_t al, const std::nothrow_t&) mi_attr_noexcept   { mi_free_aligned(p, static_cast<std::size_t>(al)); }
void operator delete[](void* p, std::align_val_t al, const std::nothrow_t&) mi_attr_noexcept { mi_free_aligned(p, static_cast<std::size_t>(al)); }

mi_decl_new(n) void* operator new(std::size_t n, std::align_val_t al) _mi_new_throws   { return mi_new_aligned(n, static_cast<std::size_t>(al)); }
mi_decl_new(n) void* operator new[](std::size_t n, std::align_val_t al) _mi_new_throws { return mi_new_aligned(n, static_cast<std::size_t>(al)); }
mi_decl_new_nothrow(n) void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) mi_attr_noexcept   { return mi_new_aligned_nothrow(n, static_cast<std::size_t>(al)); }
mi_decl_new_nothrow(n) void* operator new[](std::size_t n, std::align_val_t al, const std::nothrow_t&) mi_attr_noexcept { return mi_new_aligned_nothrow(n, static_cast<std::size_t>(al)); }
#endif

#undef _mi_new_throws

#endif /* __cplusplus */

#endif /* MIMALLOC_NEW_DELETE_H */
