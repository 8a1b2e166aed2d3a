/* SPDX-License-Identifier: MIT */
/* cxx-variants.h -- the 20 replaceable global operators new/delete, shared by static-cxx.cpp,
   new-delete-header.cpp and cxx-threads.cpp (include testing.h first).

   cxx_operators()                 each operator's Itanium name and its address taken here
   cxx_exercise(in_heap)           calls every variant, explicitly and through new-expressions,
                                   and checks the blocks (in_heap, alignment, contents)
   cxx_exercise_failure(in_heap)   a huge `new` throws std::bad_alloc, nothrow forms give nullptr

   Compile with -fsized-deallocation and -faligned-new (C++17), so that the new-expressions
   below use the sized and aligned operators. Every block is passed to in_heap, an opaque
   call, so the compiler cannot elide a new/delete pair. */
#ifndef MI_CXX_VARIANTS_H
#define MI_CXX_VARIANTS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#if !defined(__cpp_sized_deallocation) || !defined(__cpp_aligned_new)
#error "compile with -fsized-deallocation and -faligned-new (C++17)"
#endif

typedef bool (*cxx_in_heap_fun)(const void* p);

struct cxx_operator { const char* name; void* addr; };

#define CXX_OP_(name, type, op) { name, reinterpret_cast<void*>(static_cast<type>(&op)) }

static inline const cxx_operator* cxx_operators(std::size_t* count) {
  typedef void* (*new_t)(std::size_t);
  typedef void* (*new_nt_t)(std::size_t, const std::nothrow_t&) noexcept;
  typedef void* (*new_al_t)(std::size_t, std::align_val_t);
  typedef void* (*new_al_nt_t)(std::size_t, std::align_val_t, const std::nothrow_t&) noexcept;
  typedef void (*del_t)(void*) noexcept;
  typedef void (*del_sz_t)(void*, std::size_t) noexcept;
  typedef void (*del_al_t)(void*, std::align_val_t) noexcept;
  typedef void (*del_sz_al_t)(void*, std::size_t, std::align_val_t) noexcept;
  typedef void (*del_nt_t)(void*, const std::nothrow_t&) noexcept;
  typedef void (*del_al_nt_t)(void*, std::align_val_t, const std::nothrow_t&) noexcept;
  static const cxx_operator ops[] = {
    CXX_OP_("_Znwm", new_t, ::operator new),
    CXX_OP_("_Znam", new_t, ::operator new[]),
    CXX_OP_("_ZnwmRKSt9nothrow_t", new_nt_t, ::operator new),
    CXX_OP_("_ZnamRKSt9nothrow_t", new_nt_t, ::operator new[]),
    CXX_OP_("_ZnwmSt11align_val_t", new_al_t, ::operator new),
    CXX_OP_("_ZnamSt11align_val_t", new_al_t, ::operator new[]),
    CXX_OP_("_ZnwmSt11align_val_tRKSt9nothrow_t", new_al_nt_t, ::operator new),
    CXX_OP_("_ZnamSt11align_val_tRKSt9nothrow_t", new_al_nt_t, ::operator new[]),
    CXX_OP_("_ZdlPv", del_t, ::operator delete),
    CXX_OP_("_ZdaPv", del_t, ::operator delete[]),
    CXX_OP_("_ZdlPvm", del_sz_t, ::operator delete),
    CXX_OP_("_ZdaPvm", del_sz_t, ::operator delete[]),
    CXX_OP_("_ZdlPvSt11align_val_t", del_al_t, ::operator delete),
    CXX_OP_("_ZdaPvSt11align_val_t", del_al_t, ::operator delete[]),
    CXX_OP_("_ZdlPvmSt11align_val_t", del_sz_al_t, ::operator delete),
    CXX_OP_("_ZdaPvmSt11align_val_t", del_sz_al_t, ::operator delete[]),
    CXX_OP_("_ZdlPvRKSt9nothrow_t", del_nt_t, ::operator delete),
    CXX_OP_("_ZdaPvRKSt9nothrow_t", del_nt_t, ::operator delete[]),
    CXX_OP_("_ZdlPvSt11align_val_tRKSt9nothrow_t", del_al_nt_t, ::operator delete),
    CXX_OP_("_ZdaPvSt11align_val_tRKSt9nothrow_t", del_al_nt_t, ::operator delete[]),
  };
  *count = sizeof(ops) / sizeof(ops[0]);
  return ops;
}
#undef CXX_OP_

/* The alignment a block of n bytes needs without an explicit alignment: that of the largest
   fundamental-alignment object of size n. Such an object's alignment divides its size, so a
   small block need not be 16-aligned (8 bytes: 8-aligned suffices). */
static inline std::size_t cxx_fundamental_align(std::size_t n) {
  const std::size_t low = n & (~n + 1);   // largest power of two dividing n
  return (n == 0 || low > alignof(std::max_align_t)) ? alignof(std::max_align_t) : low;
}

/* keeps a block observable, so the compiler cannot elide its new/delete pair */
static inline void cxx_sink(void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* checks a fresh block: ours, aligned, writable over its whole size */
static inline void cxx_check_block(cxx_in_heap_fun in_heap, void* p, std::size_t n, std::size_t align) {
  CHECK_MSG(p != nullptr && in_heap(p), "block %p (size %zu, alignment %zu) is not in our heap", p, n, align);
  if (p == nullptr) return;
  CHECK_ALIGNED(p, align);
  std::memset(p, 0x5a, n);
  const unsigned char* b = static_cast<const unsigned char*>(p);
  CHECK(b[0] == 0x5a && b[n - 1] == 0x5a);
}

/* over-aligned types with non-trivial destructors (so delete[] needs the array cookie and
   uses the sized array operators) */
template <std::size_t A>
struct alignas(A) cxx_aligned {
  unsigned char bytes[A];
  std::uint32_t tag;
  cxx_aligned() : tag(0xA11C0DEu) { std::memset(bytes, (int)(A & 0xff), sizeof(bytes)); }
  ~cxx_aligned() { tag = 0; }
  bool ok() const { return tag == 0xA11C0DEu && bytes[0] == (unsigned char)(A & 0xff) && bytes[A - 1] == bytes[0]; }
};

struct cxx_plain {
  long v[5];
  explicit cxx_plain(long x = 3) { for (long& e : v) e = x; }
  ~cxx_plain() { v[0] = -1; }
};

template <std::size_t A>
static void cxx_exercise_aligned_type(cxx_in_heap_fun in_heap) {
  typedef cxx_aligned<A> T;
  T* one = new T;                                  // _ZnwmSt11align_val_t
  CHECK(in_heap(one) && one->ok());
  CHECK_ALIGNED(one, A);
  delete one;                                      // _ZdlPvmSt11align_val_t

  T* arr = new T[3];                               // _ZnamSt11align_val_t
  CHECK(in_heap(arr) && arr[0].ok() && arr[2].ok());
  CHECK_ALIGNED(&arr[0], A);
  delete[] arr;                                    // _ZdaPvmSt11align_val_t

  T* nt = new (std::nothrow) T;                    // _ZnwmSt11align_val_tRKSt9nothrow_t
  CHECK(nt != nullptr && in_heap(nt) && nt->ok());
  CHECK_ALIGNED(nt, A);
  delete nt;

  T* ntarr = new (std::nothrow) T[2];              // _ZnamSt11align_val_tRKSt9nothrow_t
  CHECK(ntarr != nullptr && in_heap(ntarr) && ntarr[1].ok());
  delete[] ntarr;

  std::unique_ptr<T> u = std::make_unique<T>();
  CHECK(in_heap(u.get()) && u->ok());
  CHECK_ALIGNED(u.get(), A);
  u.reset();

  std::vector<T> v;                                // std::allocator: aligned new, sized aligned delete
  for (int i = 0; i < 20; i++) {
    v.emplace_back();
    CHECK_ALIGNED(v.data(), A);
  }
  CHECK(in_heap(v.data()));
  bool all_ok = true;
  for (const T& e : v) all_ok = all_ok && e.ok();
  CHECK(all_ok);
}

static inline void cxx_exercise(cxx_in_heap_fun in_heap) {
  static const std::size_t sizes[] = { 1, 24, 100, 5000, 300000 };
  for (std::size_t n : sizes) {
    void* p;
    p = ::operator new(n);                      cxx_check_block(in_heap, p, n, cxx_fundamental_align(n)); ::operator delete(p);
    p = ::operator new(n);                      cxx_check_block(in_heap, p, n, cxx_fundamental_align(n)); ::operator delete(p, n);
    p = ::operator new[](n);                    cxx_check_block(in_heap, p, n, cxx_fundamental_align(n)); ::operator delete[](p);
    p = ::operator new[](n);                    cxx_check_block(in_heap, p, n, cxx_fundamental_align(n)); ::operator delete[](p, n);
    p = ::operator new(n, std::nothrow);        cxx_check_block(in_heap, p, n, cxx_fundamental_align(n)); ::operator delete(p, std::nothrow);
    p = ::operator new[](n, std::nothrow);      cxx_check_block(in_heap, p, n, cxx_fundamental_align(n)); ::operator delete[](p, std::nothrow);
    for (std::size_t a = 32; a <= 4096; a *= 2) {
      const std::align_val_t al = static_cast<std::align_val_t>(a);
      p = ::operator new(n, al);                  cxx_check_block(in_heap, p, n, a); ::operator delete(p, al);
      p = ::operator new(n, al);                  cxx_check_block(in_heap, p, n, a); ::operator delete(p, n, al);
      p = ::operator new[](n, al);                cxx_check_block(in_heap, p, n, a); ::operator delete[](p, al);
      p = ::operator new[](n, al);                cxx_check_block(in_heap, p, n, a); ::operator delete[](p, n, al);
      p = ::operator new(n, al, std::nothrow);    cxx_check_block(in_heap, p, n, a); ::operator delete(p, al, std::nothrow);
      p = ::operator new[](n, al, std::nothrow);  cxx_check_block(in_heap, p, n, a); ::operator delete[](p, al, std::nothrow);
    }
  }

  // new-expressions
  long* l = new long(42);                          // _Znwm, then _ZdlPvm (sized delete)
  CHECK(in_heap(l) && *l == 42);
  delete l;
  cxx_plain* arr = new cxx_plain[7];               // _Znam, then _ZdaPvm (cookie: sized array delete)
  CHECK(in_heap(arr) && arr[6].v[4] == 3);
  delete[] arr;
  char* chars = new char[333];                     // trivially destructible: _ZdaPv
  CHECK(in_heap(chars));
  delete[] chars;
  int* nt = new (std::nothrow) int(7);
  CHECK(nt != nullptr && in_heap(nt) && *nt == 7);
  delete nt;
  int* ntarr = new (std::nothrow) int[50]();
  CHECK(ntarr != nullptr && in_heap(ntarr) && ntarr[49] == 0);
  delete[] ntarr;

  cxx_exercise_aligned_type<64>(in_heap);
  cxx_exercise_aligned_type<256>(in_heap);
  cxx_exercise_aligned_type<4096>(in_heap);
}

/* a size no allocator can satisfy, hidden from the optimizer */
static inline std::size_t cxx_huge_size() {
  static volatile std::size_t huge = SIZE_MAX / 2 + 1;
  return huge;
}

static inline void cxx_exercise_failure(cxx_in_heap_fun in_heap) {
  (void)in_heap;
  const std::size_t huge = cxx_huge_size();
  const std::align_val_t al = static_cast<std::align_val_t>(64);
  int thrown = 0;
  try { void* p = ::operator new(huge); cxx_sink(p); ::operator delete(p); } catch (const std::bad_alloc&) { thrown++; }
  try { void* p = ::operator new[](huge); cxx_sink(p); ::operator delete[](p); } catch (const std::bad_alloc&) { thrown++; }
  try { void* p = ::operator new(huge, al); cxx_sink(p); ::operator delete(p, al); } catch (const std::bad_alloc&) { thrown++; }
  try { void* p = ::operator new[](huge, al); cxx_sink(p); ::operator delete[](p, al); } catch (const std::bad_alloc&) { thrown++; }
  try { char* p = new char[huge]; cxx_sink(p); delete[] p; } catch (const std::bad_alloc&) { thrown++; }
  CHECK_EQ(thrown, 5);
  CHECK(::operator new(huge, std::nothrow) == nullptr);
  CHECK(::operator new[](huge, std::nothrow) == nullptr);
  CHECK(::operator new(huge, al, std::nothrow) == nullptr);
  CHECK(::operator new[](huge, al, std::nothrow) == nullptr);
  char* c = new (std::nothrow) char[huge];
  cxx_sink(c);
  CHECK(c == nullptr);
}

#endif
