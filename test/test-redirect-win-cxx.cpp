// SPDX-License-Identifier: MIT
// test-redirect-win-cxx.cpp -- Windows: C++ new/delete of a program and a DLL built with
// mingw-w64's shared libstdc++ (libstdc++-6.dll, which allocates through msvcrt.dll) come from
// us once the redirecting DLL is linked: objects made with new in the DLL (plain, array,
// over-aligned, nothrow, a std::string's and a std::vector's buffers) are ours and are deleted
// in the program, and the reverse. Negative control (MI_TEST_NO_REDIRECT, redirect-win-cxx-none):
// linked with libmimalloc.a instead, it must say "new is not served by this allocator" (and then
// only frees each object in the module that made it... both sides use the same libstdc++, so
// crossing modules is harmless there too).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>
#include <mimalloc.h>
#if !MI_TEST_NO_REDIRECT
#include <mimalloc-redirect.h>
#endif
#include "testing.h"

extern "C" {
__declspec(dllimport) std::string* rwx_make_string(const char* s);
__declspec(dllimport) void rwx_delete_string(std::string* s);
__declspec(dllimport) int* rwx_new_ints(std::size_t n);
__declspec(dllimport) void rwx_delete_ints(int* p);
__declspec(dllimport) void* rwx_new_wide(void);
__declspec(dllimport) void rwx_delete_wide(void* p);
__declspec(dllimport) void* rwx_new_nothrow(std::size_t n);
__declspec(dllimport) std::vector<int>* rwx_make_vector(std::size_t n);
}

struct alignas(64) rwx_wide { char bytes[64]; };

static bool ours(const void* p) { return p != nullptr && mi_is_in_heap_region(p); }

int main() {
  int* probe = new int(1);
  const bool served = ours(probe);
  delete probe;
  if (!served) std::printf("new is not served by this allocator\n");
  CHECK(served);

  const char* text = "a string long enough to live on the heap, not in the object";
  std::string* s = rwx_make_string(text);
  CHECK_MSG(ours(s), "DLL new std::string: %p", (void*)s);
  CHECK_MSG(ours(s->data()), "its buffer: %p", (const void*)s->data());
  CHECK(*s == text);
  s->append(200, 'x');                          // grows in the program: freed by libstdc++ there
  CHECK_MSG(ours(s->data()), "grown buffer: %p", (const void*)s->data());
  delete s;                                     // the DLL's object, deleted here

  int* ints = rwx_new_ints(1000);
  CHECK_MSG(ours(ints), "DLL new int[]: %p", (void*)ints);
  bool zero = true;
  for (int i = 0; i < 1000; i++) zero = zero && ints[i] == 0;
  CHECK(zero);
  delete[] ints;

  void* w = rwx_new_wide();                     // over-aligned: libstdc++ uses _aligned_malloc
  CHECK_MSG(ours(w), "DLL aligned new: %p", w);
  CHECK(((std::uintptr_t)w % 64) == 0);
  delete static_cast<rwx_wide*>(w);
  rwx_wide* w2 = new rwx_wide();
  CHECK_MSG(ours(w2), "program aligned new: %p", (void*)w2);
  rwx_delete_wide(w2);                          // the program's, deleted in the DLL

  char* nt = static_cast<char*>(rwx_new_nothrow(5000));
  CHECK_MSG(ours(nt), "DLL new (nothrow): %p", (void*)nt);
  delete[] nt;

  std::vector<int>* v = rwx_make_vector(10000);
  CHECK_MSG(ours(v) && ours(v->data()), "DLL vector %p, buffer %p", (void*)v, (void*)v->data());
  CHECK(v->size() == 10000 && (*v)[9999] == 9999);
  delete v;

  std::string* mine = new std::string(text);
  CHECK_MSG(ours(mine) && ours(mine->data()), "program std::string %p", (void*)mine);
  rwx_delete_string(mine);
#if !MI_TEST_NO_REDIRECT
  CHECK(mi_redirect_imports() > 0);
#endif
  return test_summary("redirect-win-cxx", "new/delete across a program and a DLL on libstdc++-6.dll");
}
