// SPDX-License-Identifier: MIT
// A C++ DLL for test-redirect-win-cxx.cpp, linked with the shared libstdc++ (libstdc++-6.dll):
// its new and delete are libstdc++'s, which call msvcrt's malloc, free and _aligned_malloc.
// Knows nothing of this allocator.
#include <cstddef>
#include <new>
#include <string>
#include <vector>

#define RWX extern "C" __declspec(dllexport)

struct alignas(64) rwx_wide { char bytes[64]; };

RWX std::string* rwx_make_string(const char* s) { return new std::string(s); }
RWX void rwx_delete_string(std::string* s) { delete s; }
RWX int* rwx_new_ints(std::size_t n) { return new int[n](); }
RWX void rwx_delete_ints(int* p) { delete[] p; }
RWX void* rwx_new_wide(void) { return new rwx_wide(); }
RWX void rwx_delete_wide(void* p) { delete static_cast<rwx_wide*>(p); }
RWX void* rwx_new_nothrow(std::size_t n) { return new (std::nothrow) char[n]; }
RWX std::vector<int>* rwx_make_vector(std::size_t n) {
  std::vector<int>* v = new std::vector<int>();
  for (std::size_t i = 0; i < n; i++) v->push_back(static_cast<int>(i));
  return v;
}
