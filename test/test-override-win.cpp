/* SPDX-License-Identifier: MIT */
/* test-override-win.cpp -- Windows: the static override (mimalloc-override.o linked beside
   libmimalloc.a, src/override-windows.c).

   1. Every replaced C runtime function and C++ operator serves from this allocator: each block
      is ours (mi_is_in_heap_region), _msize agrees with mi_usable_size, alignments hold, the
      CRT's semantics for NULL, zero sizes and in-place resizing hold, and each block is freed
      by its matching function.
   2. Blocks from another allocator (msvcrt.dll's own malloc and _strdup, found with
      GetProcAddress so they bypass our definitions; _getcwd(NULL, 0), which allocates inside
      msvcrt.dll; HeapAlloc) given to free are ignored:
      no crash, and _msize, realloc and _expand of them fail with EINVAL.
   3. Threads made with CreateThread and _beginthreadex allocate and free with malloc and new.

   How the test knows the override is there: without it malloc is msvcrt's, whose blocks are
   not in our heap region. The first check looks at malloc(16); it fails with the line
   "malloc is not served by this allocator", which the negative control (the same program
   linked without the override, test override-win-none) must print.
   Usage: test-override-win */
#include <windows.h>
#include <process.h>
#include <direct.h>
#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <wchar.h>
#include <new>
#include <string>
#include <vector>
#include <mimalloc.h>
#include "testing.h"

/* msvcrt.dll has no _aligned_msize, _recalloc or _aligned_recalloc (mingw-w64 declares only
   the last two, and its import library has none): only the override defines them, so the
   negative control (MI_TEST_NO_OVERRIDE) makes the first check only. */
extern "C" size_t __cdecl _aligned_msize(void* p, size_t alignment, size_t offset);

static bool ours(const void* p) { return p != NULL && mi_is_in_heap_region(p); }

#if !MI_TEST_NO_OVERRIDE
static void check_block(void* p, size_t size, size_t align) {
  CHECK_MSG(ours(p), "%p (size %zu) is not ours", p, size);
  if (p == NULL) return;
  CHECK_EQ(_msize(p), mi_usable_size(p));
  CHECK_GE(_msize(p), size);
  if (align > 0) CHECK_ALIGNED(p, align);
}

struct alignas(256) over_aligned { char c[300]; };

static void test_c_functions(void) {
  void* p = malloc(100);
  check_block(p, 100, 16);
  memset(p, 0x5a, 100);
  p = realloc(p, 5000);
  check_block(p, 5000, 16);
  CHECK(((unsigned char*)p)[99] == 0x5a);
  CHECK(realloc(p, 0) == NULL);               /* the CRT frees on a zero size */

  int* z = (int*)calloc(1000, sizeof(int));
  check_block(z, 1000 * sizeof(int), 16);
  bool zero = true;
  for (int i = 0; i < 1000; i++) zero = zero && z[i] == 0;
  CHECK(zero);
  z[999] = 7;
  z = (int*)_recalloc(z, 4000, sizeof(int));  /* grows, zero beyond the old size */
  check_block(z, 4000 * sizeof(int), 16);
  CHECK_EQ(z[999], 7);
  CHECK_EQ(z[3999], 0);
  free(z);

  char* s = strdup("strdup");
  char* s2 = _strdup("_strdup");
  wchar_t* w = _wcsdup(L"_wcsdup");
  check_block(s, 7, 0);
  check_block(s2, 8, 0);
  check_block(w, 8 * sizeof(wchar_t), 0);
  CHECK(strcmp(s, "strdup") == 0 && strcmp(s2, "_strdup") == 0 && wcscmp(w, L"_wcsdup") == 0);
  free(s); free(s2); free(w);

  /* _expand: in place only */
  char* e = (char*)malloc(1000);
  const size_t usable = _msize(e);
  CHECK_PTR_EQ(_expand(e, 500), e);
  CHECK_PTR_EQ(_expand(e, usable), e);
  errno = 0;
  CHECK(_expand(e, usable + 100000) == NULL);
  CHECK_EQ(errno, ENOMEM);
  errno = 0;
  CHECK(_expand(NULL, 10) == NULL);
  CHECK_EQ(errno, EINVAL);
  free(e);

  errno = 0;
  CHECK_EQ(_msize(NULL), (size_t)-1);
  CHECK_EQ(errno, EINVAL);
  free(NULL);

  /* aligned: _aligned_malloc(size, alignment) */
  for (size_t align = 8; align <= 65536; align *= 4) {
    void* a = _aligned_malloc(1000, align);
    check_block(a, 1000, align);
    CHECK_EQ(_aligned_msize(a, align, 0), mi_usable_size(a));
    a = _aligned_realloc(a, 20000, align);
    check_block(a, 20000, align);
    a = _aligned_recalloc(a, 10, 3000, align);
    check_block(a, 30000, align);
    _aligned_free(a);
  }
  char* ao = (char*)_aligned_offset_malloc(200, 128, 16);
  CHECK(ours(ao));
  CHECK_ALIGNED(ao + 16, 128);
  ao = (char*)_aligned_offset_realloc(ao, 3000, 128, 16);
  CHECK(ours(ao));
  CHECK_ALIGNED(ao + 16, 128);
  _aligned_free(ao);
  _aligned_free(NULL);                         /* a no-op */
  errno = 0;
  CHECK(_aligned_malloc(100, 48) == NULL);     /* not a power of two */
  CHECK_EQ(errno, EINVAL);
  errno = 0;
  CHECK_EQ(_aligned_msize(NULL, 16, 0), (size_t)-1);
  CHECK_EQ(errno, EINVAL);
}

static void test_cxx_operators(void) {
  int* i = new int(42);
  check_block(i, sizeof(int), 0);
  delete i;
  char* arr = new char[3000];
  check_block(arr, 3000, 0);
  delete[] arr;
  over_aligned* o = new over_aligned;           /* operator new(size_t, align_val_t) */
  check_block(o, sizeof(over_aligned), 256);
  delete o;
  over_aligned* oa = new over_aligned[5];
  CHECK(ours(oa));
  CHECK_ALIGNED(oa, 256);
  delete[] oa;
  int* nt = new (std::nothrow) int[10];
  check_block(nt, 10 * sizeof(int), 0);
  delete[] nt;
  void* raw = ::operator new(777, std::align_val_t(4096), std::nothrow);
  check_block(raw, 777, 4096);
  ::operator delete(raw, std::align_val_t(4096));
  /* the C++ runtime's containers (inlined into this program) allocate through operator new */
  std::vector<long> v(10000, 1);
  CHECK(ours(v.data()));
  std::string str(500, 'x');
  CHECK(ours(str.data()));
}

typedef void* (__cdecl* crt_malloc_t)(size_t);
typedef void  (__cdecl* crt_free_t)(void*);
typedef char* (__cdecl* crt_strdup_t)(const char*);

/* the foreign blocks are used after our free on purpose: that free must have ignored them */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
static void test_foreign_blocks(void) {
  HMODULE crt = GetModuleHandleA("msvcrt.dll");
  CHECK(crt != NULL);
  if (crt == NULL) return;
  crt_malloc_t crt_malloc = (crt_malloc_t)(void*)GetProcAddress(crt, "malloc");
  crt_free_t crt_free = (crt_free_t)(void*)GetProcAddress(crt, "free");
  crt_strdup_t crt_strdup = (crt_strdup_t)(void*)GetProcAddress(crt, "_strdup");
  CHECK(crt_malloc != NULL && crt_free != NULL && crt_strdup != NULL);
  if (crt_malloc == NULL || crt_free == NULL || crt_strdup == NULL) return;

  void* q = crt_malloc(32);
  CHECK(q != NULL && !ours(q));
  free(q);                                     /* ignored: not ours */
  errno = 0;
  CHECK_EQ(_msize(q), (size_t)-1);
  CHECK_EQ(errno, EINVAL);
  errno = 0;
  CHECK(realloc(q, 64) == NULL);               /* q untouched */
  CHECK_EQ(errno, EINVAL);
  errno = 0;
  CHECK(_expand(q, 16) == NULL);
  CHECK_EQ(errno, EINVAL);
  errno = 0;
  CHECK(_recalloc(q, 2, 32) == NULL);
  CHECK_EQ(errno, EINVAL);
  _aligned_free(q);                            /* ignored too */
  memset(q, 1, 32);                            /* still the CRT's, still usable */
  crt_free(q);                                 /* the owner frees it */

  char* cs = crt_strdup("from msvcrt");
  CHECK(cs != NULL && !ours(cs));
  free(cs);                                    /* ignored: the block is leaked, not freed */
  CHECK(strcmp(cs, "from msvcrt") == 0);
  crt_free(cs);

  char* cwd = _getcwd(NULL, 0);                /* allocated inside msvcrt.dll, by its malloc */
  CHECK(cwd != NULL && !ours(cwd));
  free(cwd);                                   /* ignored: leaked, not freed */
  if (cwd != NULL) CHECK(strlen(cwd) > 0);
  crt_free(cwd);

  void* h = HeapAlloc(GetProcessHeap(), 0, 100);
  CHECK(h != NULL && !ours(h));
  free(h);
  delete (char*)h;
  CHECK(HeapFree(GetProcessHeap(), 0, h));
}

static void work(void) {
  void* blocks[64];
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < 64; i++) {
      blocks[i] = (i % 2 == 0 ? malloc((size_t)(8 + i * 24)) : (void*)new char[(size_t)(8 + i * 40)]);
      CHECK(ours(blocks[i]));
    }
    for (int i = 0; i < 64; i++) {
      if (i % 2 == 0) free(blocks[i]);
      else delete[] (char*)blocks[i];
    }
  }
}
static DWORD WINAPI win_thread(LPVOID arg) { (void)arg; work(); return 0; }
static unsigned __stdcall crt_thread(void* arg) { (void)arg; work(); return 0; }

static void test_threads(void) {
  enum { N = 4 };
  HANDLE t[2 * N];
  for (int i = 0; i < N; i++) {
    t[i] = CreateThread(NULL, 0, &win_thread, NULL, 0, NULL);
    t[N + i] = (HANDLE)_beginthreadex(NULL, 0, &crt_thread, NULL, 0, NULL);
    CHECK(t[i] != NULL && t[N + i] != NULL);
  }
  for (int i = 0; i < 2 * N; i++) {
    if (t[i] == NULL) continue;
    CHECK_EQ(WaitForSingleObject(t[i], INFINITE), WAIT_OBJECT_0);
    CloseHandle(t[i]);
  }
}

#endif  /* !MI_TEST_NO_OVERRIDE */

int main(void) {
  char* p = (char*)malloc(16);
  if (p != NULL) p[0] = 0;   /* (gcc warns of a read of uninitialised memory otherwise) */
  const bool served = ours(p);
  free(p);
  if (!served) {
    printf("malloc is not served by this allocator\n");
    CHECK(served);
    return test_summary("override-win", "malloc is msvcrt's: the override is not linked");
  }
#if !MI_TEST_NO_OVERRIDE
  test_c_functions();
  test_cxx_operators();
  test_foreign_blocks();
  test_threads();
#endif
  return test_summary("override-win", "C runtime functions, operators, foreign blocks, threads");
}
