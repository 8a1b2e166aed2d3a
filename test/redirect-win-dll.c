/* SPDX-License-Identifier: MIT */
/* A plain DLL for test-redirect-win.c, built three times (RW_NAME = rw_a, rw_b, rw_late): it
   allocates with the C runtime's names only, through its own import table, and knows nothing
   of this allocator. Each build exports RW_NAME_malloc, _free, ... and RW_NAME_early(), a
   block its start-up (DllMain) allocated. */
#include <windows.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define RW_CAT2(a, b) a##b
#define RW_CAT(a, b)  RW_CAT2(a, b)
#define RW(fn)        __declspec(dllexport) RW_CAT(RW_NAME, fn)

static void* rw_early_block;

void*  RW(_malloc)(size_t n)              { return malloc(n); }
void*  RW(_calloc)(size_t c, size_t n)    { return calloc(c, n); }
void*  RW(_realloc)(void* p, size_t n)    { return realloc(p, n); }
void   RW(_free)(void* p)                 { free(p); }
size_t RW(_msize)(void* p)                { return _msize(p); }
char*  RW(_strdup)(const char* s)         { return _strdup(s); }
void*  RW(_aligned_malloc)(size_t n, size_t a) { return _aligned_malloc(n, a); }
void   RW(_aligned_free)(void* p)         { _aligned_free(p); }
void*  RW(_early)(void)                   { return rw_early_block; }

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved) {
  (void)instance; (void)reserved;
  if (reason == DLL_PROCESS_ATTACH) {
    rw_early_block = malloc(40);
    if (rw_early_block != NULL) memset(rw_early_block, 0x3c, 40);
  }
  return TRUE;
}
