/* SPDX-License-Identifier: MIT */
/* A DLL on the Universal C Runtime for test-redirect-win.c: linked against mingw-w64's
   libucrt.a without start-up files (-nostdlib), so its allocation imports come from
   api-ms-win-crt-heap-l1-1-0.dll (forwarded to ucrtbase.dll), as in programs built with MSVC.
   Loaded at run time by the test; knows nothing of this allocator. */
#include <windows.h>
#include <stddef.h>

/* ucrt's declarations (the headers in use are msvcrt's) */
void*  __cdecl malloc(size_t n);
void*  __cdecl calloc(size_t c, size_t n);
void*  __cdecl realloc(void* p, size_t n);
void   __cdecl free(void* p);
__declspec(dllimport) size_t __cdecl _msize(void* p);
__declspec(dllimport) void*  __cdecl _recalloc(void* p, size_t c, size_t n);
__declspec(dllimport) void*  __cdecl _aligned_malloc(size_t n, size_t a);
__declspec(dllimport) void   __cdecl _aligned_free(void* p);
__declspec(dllimport) void*  __cdecl _malloc_base(size_t n);
__declspec(dllimport) void   __cdecl _free_base(void* p);

#define RWU __declspec(dllexport)
RWU void*  rwu_malloc(size_t n)                  { return malloc(n); }
RWU void*  rwu_calloc(size_t c, size_t n)        { return calloc(c, n); }
RWU void*  rwu_realloc(void* p, size_t n)        { return realloc(p, n); }
RWU void   rwu_free(void* p)                     { free(p); }
RWU size_t rwu_msize(void* p)                    { return _msize(p); }
RWU void*  rwu_recalloc(void* p, size_t c, size_t n) { return _recalloc(p, c, n); }
RWU void*  rwu_aligned_malloc(size_t n, size_t a) { return _aligned_malloc(n, a); }
RWU void   rwu_aligned_free(void* p)             { _aligned_free(p); }
RWU void*  rwu_malloc_base(size_t n)             { return _malloc_base(n); }
RWU void   rwu_free_base(void* p)                { _free_base(p); }

/* the entry point (no C runtime start-up to run) */
BOOL WINAPI rwu_entry(HINSTANCE instance, DWORD reason, LPVOID reserved);
BOOL WINAPI rwu_entry(HINSTANCE instance, DWORD reason, LPVOID reserved) {
  (void)instance; (void)reason; (void)reserved;
  return TRUE;
}
