/* SPDX-License-Identifier: MIT */
/* test-redirect-win.c -- Windows: the redirecting DLL (libmimalloc-redirect.dll,
   src/redirect-windows.c). The program and two DLLs (redirect-win-a.dll, redirect-win-b.dll:
   test/redirect-win-dll.c, plain C that knows nothing of this allocator) are linked with
   msvcrt.dll's allocation functions; the program also links the redirecting DLL.

   1. Cross-module: blocks from malloc, calloc, realloc, _strdup, strdup, _wcsdup and the
      _aligned_ functions in one module are ours (mi_is_in_heap_region) and are resized, sized
      (_msize == mi_usable_size) and freed in another module and in the program.
   2. Foreign blocks: msvcrt.dll's own malloc and _aligned_malloc (read from its export
      table: they bypass the import table and GetProcAddress), _getcwd(NULL, 0) (allocated inside msvcrt.dll) and the
      blocks the DLLs' DllMain allocated (possibly before the patch) are given to free,
      realloc, _msize and _aligned_free: the original functions take them (realloc keeps the
      contents and the block stays msvcrt's; _msize answers), no crash.
   3. Threads from CreateThread, _beginthreadex and the system thread pool allocate ours in the
      program and the DLLs.
   4. A DLL loaded at run time (redirect-win-late.dll, LoadLibrary): its DllMain's block and
      its malloc are ours, blocks cross between it and the program, and a block of it outlives
      FreeLibrary.

   5. A DLL on ucrt (redirect-win-ucrt.dll, LoadLibrary): see test_ucrt_dll.
   6. GetProcAddress of malloc & co. in msvcrt.dll and ucrtbase.dll gives ours.

   Negative control (MI_TEST_NO_REDIRECT, test redirect-win-none): the same program linked with
   libmimalloc.a instead of the redirecting DLL; it must print "malloc is not served by this
   allocator" and fail the checks of every part (each part prints its failure count).
   Usage: test-redirect-win */
#include <windows.h>
#include <process.h>
#include <direct.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <mimalloc.h>
#if !MI_TEST_NO_REDIRECT
#include <mimalloc-redirect.h>
#endif
#include "testing.h"

#define RW_IMPORTS(dll) \
  __declspec(dllimport) void*  dll##_malloc(size_t n); \
  __declspec(dllimport) void*  dll##_calloc(size_t c, size_t n); \
  __declspec(dllimport) void*  dll##_realloc(void* p, size_t n); \
  __declspec(dllimport) void   dll##_free(void* p); \
  __declspec(dllimport) size_t dll##_msize(void* p); \
  __declspec(dllimport) char*  dll##_strdup(const char* s); \
  __declspec(dllimport) void*  dll##_aligned_malloc(size_t n, size_t a); \
  __declspec(dllimport) void   dll##_aligned_free(void* p); \
  __declspec(dllimport) void*  dll##_early(void);
RW_IMPORTS(rw_a)
RW_IMPORTS(rw_b)

static bool ours(const void* p) { return p != NULL && mi_is_in_heap_region(p); }

static bool all_zero(const int* p, int n) {
  bool zero = (p != NULL);
  for (int i = 0; p != NULL && i < n; i++) zero = zero && p[i] == 0;
  return zero;
}

static void check_ours(void* p, size_t size, const char* what) {
  CHECK_MSG(ours(p), "%s: %p is not ours", what, p);
  if (p == NULL) return;
  CHECK_EQ(_msize(p), mi_usable_size(p));
  CHECK_GE(_msize(p), size);
}

static void test_cross_modules(void) {
  void* a = rw_a_malloc(100);
  check_ours(a, 100, "rw_a malloc");
  if (a != NULL) memset(a, 1, 100);
  rw_b_free(a);                                  /* freed in the other DLL */
  a = rw_a_malloc(200);
  check_ours(a, 200, "rw_a malloc");
  free(a);                                       /* and in the program */
  void* m = malloc(64);
  check_ours(m, 64, "program malloc");
  rw_a_free(m);

  char* r = (char*)rw_a_malloc(50);              /* realloc across modules */
  if (r != NULL) memset(r, 0x11, 50);
  r = (char*)rw_b_realloc(r, 5000);
  check_ours(r, 5000, "rw_b realloc");
  CHECK(r != NULL && r[0] == 0x11 && r[49] == 0x11);
  if (r != NULL) CHECK_EQ(rw_b_msize(r), mi_usable_size(r));
  r = (char*)realloc(r, 10);
  check_ours(r, 10, "program realloc");
  rw_a_free(r);

  char* s = rw_a_strdup("hello");
  check_ours(s, 6, "rw_a _strdup");
  CHECK(s != NULL && strcmp(s, "hello") == 0);
  free(s);
  s = _strdup("program");
  check_ours(s, 8, "_strdup");
  rw_b_free(s);
  s = strdup("posix name");
  check_ours(s, 11, "strdup");
  free(s);
  wchar_t* w = _wcsdup(L"wide");
  check_ours(w, 5 * sizeof(wchar_t), "_wcsdup");
  rw_a_free(w);

  int* z = (int*)rw_b_calloc(100, sizeof(int));
  check_ours(z, 100 * sizeof(int), "rw_b calloc");
  CHECK(all_zero(z, 100));
  free(z);

  void* al = rw_a_aligned_malloc(100, 64);
  CHECK_MSG(ours(al), "rw_a _aligned_malloc: %p", al);
  CHECK(((uintptr_t)al % 64) == 0);
  al = _aligned_realloc(al, 3000, 64);
  CHECK_MSG(ours(al), "_aligned_realloc: %p", al);
  CHECK(((uintptr_t)al % 64) == 0);
  rw_b_aligned_free(al);
  char* ao = (char*)_aligned_offset_malloc(100, 64, 8);
  CHECK_MSG(ours(ao), "_aligned_offset_malloc: %p", (void*)ao);
  CHECK(((uintptr_t)(ao + 8) % 64) == 0);
  _aligned_free(ao);

  void* e = malloc(1000);                        /* _expand stays in place */
  check_ours(e, 1000, "malloc");
  CHECK_PTR_EQ(_expand(e, 500), e);
  free(e);
}

typedef void* (*malloc_fn)(size_t);
typedef void* (*aligned_malloc_fn)(size_t, size_t);

/* A runtime's own function, read from its export table: GetProcAddress would give ours (the
   redirecting DLL patches it too). Forwarded exports are not followed (NULL). */
static void* raw_export(HMODULE module, const char* name) {
  unsigned char* base = (unsigned char*)module;
  if (base == NULL) return NULL;
  const IMAGE_NT_HEADERS* nt = (const IMAGE_NT_HEADERS*)(base + ((const IMAGE_DOS_HEADER*)base)->e_lfanew);
  const IMAGE_DATA_DIRECTORY* dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
  if (dir->VirtualAddress == 0) return NULL;
  const IMAGE_EXPORT_DIRECTORY* ex = (const IMAGE_EXPORT_DIRECTORY*)(base + dir->VirtualAddress);
  const DWORD* names = (const DWORD*)(base + ex->AddressOfNames);
  const WORD* ordinals = (const WORD*)(base + ex->AddressOfNameOrdinals);
  const DWORD* functions = (const DWORD*)(base + ex->AddressOfFunctions);
  for (DWORD i = 0; i < ex->NumberOfNames; i++) {
    if (strcmp((const char*)(base + names[i]), name) != 0) continue;
    const DWORD rva = functions[ordinals[i]];
    if (rva >= dir->VirtualAddress && rva < dir->VirtualAddress + dir->Size) return NULL;   /* a forwarder */
    return base + rva;
  }
  return NULL;
}

typedef intptr_t (*get_heap_fn)(void);

/* A block as the runtime's malloc made it before the patch: from its heap (_get_heap_handle). */
static void* runtime_heap_block(HMODULE rt, size_t size) {
  get_heap_fn gh = (get_heap_fn)raw_export(rt, "_get_heap_handle");
  CHECK(gh != NULL);
  HANDLE heap = (gh == NULL ? NULL : (HANDLE)gh());
  CHECK(heap != NULL);
  return (heap == NULL ? NULL : HeapAlloc(heap, 0, size));
}

static void test_foreign_blocks(void) {
  HMODULE crt = GetModuleHandleA("msvcrt.dll");
  CHECK(crt != NULL);
  if (crt == NULL) return;
  /* msvcrt's own code serves ours: its malloc called directly (read from its export table, past
     every import), _aligned_malloc likewise, and _getcwd's allocation inside msvcrt.dll */
  malloc_fn crt_malloc = (malloc_fn)raw_export(crt, "malloc");
  aligned_malloc_fn crt_aligned = (aligned_malloc_fn)raw_export(crt, "_aligned_malloc");
  CHECK(crt_malloc != NULL && crt_aligned != NULL);
  if (crt_malloc == NULL || crt_aligned == NULL) return;
  void* d = crt_malloc(64);
  CHECK_MSG(ours(d), "msvcrt's malloc, called directly: %p", d);
  free(d);
  char* cwd = _getcwd(NULL, 0);                  /* allocated inside msvcrt.dll */
  CHECK_MSG(ours(cwd), "_getcwd(NULL, 0): %p", (void*)cwd);
  free(cwd);
  void* da = crt_aligned(100, 64);
  CHECK_MSG(ours(da) && ((uintptr_t)da % 64) == 0, "msvcrt's _aligned_malloc, called directly: %p", da);
  _aligned_free(da);

  /* a block of msvcrt's heap (what its malloc returned before the patch) is foreign: _msize,
     _expand, realloc (contents kept, still its), _recalloc and free take it */
  char* f = (char*)runtime_heap_block(crt, 64);
  CHECK(f != NULL && !ours(f));
  if (f == NULL) return;
  memset(f, 0x77, 64);
  const size_t fsize = _msize(f);
  CHECK(fsize != (size_t)-1 && fsize >= 64);
  CHECK_PTR_EQ(_expand(f, 32), f);
  f = (char*)realloc(f, 4000);
  CHECK(f != NULL && !ours(f));
  CHECK(f != NULL && f[0] == 0x77 && f[31] == 0x77);
  typedef void* (*recalloc_fn_t)(void*, size_t, size_t);   /* (mingw's msvcrt import library lacks it) */
  recalloc_fn_t crt_recalloc = (recalloc_fn_t)raw_export(crt, "_recalloc");
  if (crt_recalloc != NULL) {                    /* its entry, patched: the foreign path */
    f = (char*)crt_recalloc(f, 1000, 8);
    CHECK(f != NULL && !ours(f) && f[0] == 0x77 && f[7999] == 0);
  }
  rw_a_free(f);
  free(runtime_heap_block(crt, 10));             /* through the program's own import */

  /* the DLLs' start-up blocks: ours or not depends on the loading order; free takes both */
  unsigned char* ea = (unsigned char*)rw_a_early();
  unsigned char* eb = (unsigned char*)rw_b_early();
  CHECK(ea != NULL && ea[0] == 0x3c && ea[39] == 0x3c);
  CHECK(eb != NULL && eb[0] == 0x3c && eb[39] == 0x3c);
  printf("DllMain blocks: rw_a %s, rw_b %s\n", ours(ea) ? "ours" : "msvcrt's", ours(eb) ? "ours" : "msvcrt's");
  free(ea);
  rw_a_free(eb);
}

static void thread_work(void** out) {
  for (int i = 0; i < 1000; i++) {
    void* p = malloc((size_t)(i % 500) + 1);
    if (i % 100 == 0) CHECK_MSG(ours(p), "thread malloc %p", p);
    rw_b_free(p);
    p = rw_a_malloc(64);
    if (i % 100 == 0) CHECK_MSG(ours(p), "thread rw_a malloc %p", p);
    free(p);
  }
  *out = rw_b_malloc(128);                       /* outlives the thread */
}
static DWORD WINAPI win_thread(LPVOID arg)       { thread_work((void**)arg); return 0; }
static unsigned __stdcall crt_thread(void* arg)  { thread_work((void**)arg); return 0; }

static void test_threads(void) {
  void* out[4] = { NULL, NULL, NULL, NULL };
  HANDLE h[4];
  h[0] = CreateThread(NULL, 0, &win_thread, &out[0], 0, NULL);
  h[1] = CreateThread(NULL, 0, &win_thread, &out[1], 0, NULL);
  h[2] = (HANDLE)_beginthreadex(NULL, 0, &crt_thread, &out[2], 0, NULL);
  h[3] = (HANDLE)_beginthreadex(NULL, 0, &crt_thread, &out[3], 0, NULL);
  for (int i = 0; i < 4; i++) {
    CHECK(h[i] != NULL);
    if (h[i] == NULL) continue;
    WaitForSingleObject(h[i], INFINITE);
    CloseHandle(h[i]);
    CHECK_MSG(ours(out[i]), "block of thread %d: %p", i, out[i]);
    free(out[i]);
  }
}

/* The system thread pool (TrySubmitThreadpoolCallback): its threads, made by ntdll, allocate
   ours in the program and the DLLs like any other thread. */
enum { POOL_JOBS = 16 };
static void* pool_out[POOL_JOBS];
static volatile LONG pool_left;
static HANDLE pool_done;
static VOID CALLBACK pool_job(PTP_CALLBACK_INSTANCE instance, PVOID arg) {
  (void)instance;
  thread_work((void**)arg);
  if (InterlockedDecrement(&pool_left) == 0) SetEvent(pool_done);
}

static void test_thread_pool(void) {
  pool_done = CreateEventA(NULL, TRUE, FALSE, NULL);
  CHECK(pool_done != NULL);
  if (pool_done == NULL) return;
  pool_left = POOL_JOBS;
  for (int i = 0; i < POOL_JOBS; i++) {
    if (!TrySubmitThreadpoolCallback(&pool_job, &pool_out[i], NULL)) {
      CHECK_MSG(false, "TrySubmitThreadpoolCallback failed (%lu)", GetLastError());
      if (InterlockedDecrement(&pool_left) == 0) SetEvent(pool_done);
    }
  }
  CHECK(WaitForSingleObject(pool_done, 30000) == WAIT_OBJECT_0);
  CloseHandle(pool_done);
  for (int i = 0; i < POOL_JOBS; i++) {
    CHECK_MSG(ours(pool_out[i]), "block of pool job %d: %p", i, pool_out[i]);
    rw_a_free(pool_out[i]);
  }
}

typedef void  (*free_fn)(void*);
typedef void* (*early_fn)(void);

static void test_late_dll(void) {
  HMODULE h = LoadLibraryA("redirect-win-late.dll");
  CHECK(h != NULL);
  if (h == NULL) return;
  malloc_fn late_malloc = (malloc_fn)(void*)GetProcAddress(h, "rw_late_malloc");
  free_fn late_free = (free_fn)(void*)GetProcAddress(h, "rw_late_free");
  early_fn late_early = (early_fn)(void*)GetProcAddress(h, "rw_late_early");
  CHECK(late_malloc != NULL && late_free != NULL && late_early != NULL);
  if (late_malloc == NULL || late_free == NULL || late_early == NULL) return;
  void* e = late_early();                        /* its DllMain ran after the loader told us */
  CHECK_MSG(ours(e), "late DLL's DllMain block %p", e);
  free(e);
  void* p = late_malloc(300);
  check_ours(p, 300, "late DLL malloc");
  free(p);
  void* q = malloc(30);
  late_free(q);
  void* keep = late_malloc(1000);
  check_ours(keep, 1000, "late DLL malloc");
  CHECK(FreeLibrary(h));
  free(keep);                                    /* ours: outlives the DLL */
}

/* 5. A DLL on the Universal C Runtime (redirect-win-ucrt.dll: api-ms-win-crt-heap imports,
   forwarded to ucrtbase.dll), loaded at run time: its malloc & co., its _malloc_base and
   _aligned_malloc are ours, and blocks cross between it (ucrt) and the program (msvcrt); a
   block of ucrtbase's own malloc (GetProcAddress) is foreign and goes back to it. Without the
   redirection blocks never cross runtimes (each would free the other's). */
typedef void*  (*calloc_fn)(size_t, size_t);
typedef void*  (*realloc_fn)(void*, size_t);
typedef size_t (*msize_fn)(void*);
typedef void*  (*recalloc_fn)(void*, size_t, size_t);
#define RWU_GET(type, name)  type name = (type)(void*)GetProcAddress(h, #name); CHECK_MSG(name != NULL, "%s", #name); if (name == NULL) return

static void test_ucrt_dll(void) {
  HMODULE h = LoadLibraryA("redirect-win-ucrt.dll");
  CHECK_MSG(h != NULL, "LoadLibrary(redirect-win-ucrt.dll): error %lu", GetLastError());
  if (h == NULL) return;
  RWU_GET(malloc_fn, rwu_malloc);
  RWU_GET(calloc_fn, rwu_calloc);
  RWU_GET(realloc_fn, rwu_realloc);
  RWU_GET(free_fn, rwu_free);
  RWU_GET(msize_fn, rwu_msize);
  RWU_GET(recalloc_fn, rwu_recalloc);
  RWU_GET(aligned_malloc_fn, rwu_aligned_malloc);
  RWU_GET(free_fn, rwu_aligned_free);
  RWU_GET(malloc_fn, rwu_malloc_base);
  RWU_GET(free_fn, rwu_free_base);
  HMODULE ucrt = GetModuleHandleA("ucrtbase.dll");
  CHECK_MSG(ucrt != NULL, "ucrtbase.dll is not loaded");

  char* a = (char*)rwu_malloc(100);
  CHECK_MSG(ours(a), "ucrt malloc: %p", (void*)a);
  if (a != NULL) memset(a, 0x21, 100);
  if (ours(a)) { CHECK_EQ(rwu_msize(a), mi_usable_size(a)); CHECK_EQ(_msize(a), mi_usable_size(a)); }
  a = (char*)rwu_realloc(a, 6000);
  CHECK_MSG(ours(a), "ucrt realloc: %p", (void*)a);
  CHECK(a != NULL && a[0] == 0x21 && a[99] == 0x21);
#if MI_TEST_NO_REDIRECT
  rwu_free(a);
#else
  free(a);                                       /* ucrt's block, msvcrt's import: both ours */
  void* m = malloc(300);
  check_ours(m, 300, "program malloc");
  rwu_free(m);                                   /* and the other way */
#endif
  int* z = (int*)rwu_calloc(50, sizeof(int));
  CHECK_MSG(ours(z), "ucrt calloc: %p", (void*)z);
  CHECK(all_zero(z, 50));
  z = (int*)rwu_recalloc(z, 400, sizeof(int));
  CHECK_MSG(ours(z), "ucrt _recalloc: %p", (void*)z);
  CHECK(all_zero(z, 400));
  rwu_free(z);
  void* al = rwu_aligned_malloc(100, 256);
  CHECK_MSG(ours(al), "ucrt _aligned_malloc: %p", al);
  CHECK(((uintptr_t)al % 256) == 0);
  rwu_aligned_free(al);
  void* b = rwu_malloc_base(64);
  CHECK_MSG(ours(b), "ucrt _malloc_base: %p", b);
  rwu_free_base(b);

  malloc_fn ucrt_malloc = (malloc_fn)raw_export(ucrt, "malloc");
  CHECK(ucrt_malloc != NULL);
  if (ucrt_malloc != NULL) {
    void* d = ucrt_malloc(90);                   /* ucrtbase's code serves ours */
    CHECK_MSG(ours(d), "ucrtbase's malloc, called directly: %p", d);
    rwu_free(d);
    char* f = (char*)runtime_heap_block(ucrt, 80);   /* a block of ucrt's heap: foreign */
    CHECK(f != NULL && !ours(f));
    if (f != NULL) memset(f, 0x42, 80);
    CHECK(f == NULL || rwu_msize(f) >= 80);
    f = (char*)rwu_realloc(f, 3000);             /* its realloc: contents kept, still its */
    CHECK(f != NULL && !ours(f) && f[0] == 0x42 && f[79] == 0x42);
    rwu_free(f);
  }
  CHECK(FreeLibrary(h));
}

/* 6. GetProcAddress of a redirected name in a runtime gives ours (msvcrt and ucrtbase, whose
   DLL loaded after the redirecting one); other names and ordinals are left alone. */
static void test_getprocaddress(void) {
  HMODULE crt = GetModuleHandleA("msvcrt.dll");
  HMODULE ucrt = LoadLibraryA("ucrtbase.dll");
  CHECK(crt != NULL && ucrt != NULL);
  if (crt == NULL || ucrt == NULL) return;
  malloc_fn m = (malloc_fn)(void*)GetProcAddress(crt, "malloc");
  free_fn f = (free_fn)(void*)GetProcAddress(crt, "free");
  realloc_fn r = (realloc_fn)(void*)GetProcAddress(crt, "realloc");
  CHECK(m != NULL && f != NULL && r != NULL);
  if (m == NULL || f == NULL || r == NULL) return;
  void* p = m(100);
  CHECK_MSG(ours(p), "GetProcAddress(msvcrt, malloc) block %p", p);
  p = r(p, 9000);
  CHECK_MSG(ours(p), "GetProcAddress(msvcrt, realloc) block %p", p);
  f(p);
  void* q = malloc(50);                          /* the import's block, the looked-up free */
  f(q);
  malloc_fn um = (malloc_fn)(void*)GetProcAddress(ucrt, "malloc");
  free_fn uf = (free_fn)(void*)GetProcAddress(ucrt, "_free_base");
  CHECK(um != NULL && uf != NULL);
  if (um != NULL && uf != NULL) {
    void* u = um(70);
    CHECK_MSG(ours(u), "GetProcAddress(ucrtbase, malloc) block %p", u);
    uf(u);
  }
  CHECK(GetProcAddress(crt, "strlen") == (FARPROC)raw_export(crt, "strlen"));   /* untouched */
  CHECK(GetProcAddress(crt, "no_such_function") == NULL);
  FreeLibrary(ucrt);
}

static long failures_since(long* before) {
  long now = test_failure_count(), d = now - *before;
  *before = now;
  return d;
}

int main(void) {
  char* p = (char*)malloc(16);
  if (p != NULL) p[0] = 0;
  const bool served = ours(p);
  free(p);
  if (!served) printf("malloc is not served by this allocator\n");
  CHECK(served);
  long before = test_failure_count();
  test_cross_modules();  printf("cross-module: %ld failures\n", failures_since(&before));
  test_foreign_blocks(); printf("foreign blocks: %ld failures\n", failures_since(&before));
  test_threads();        printf("threads: %ld failures\n", failures_since(&before));
  test_thread_pool();    printf("thread pool: %ld failures\n", failures_since(&before));
  test_late_dll();       printf("LoadLibrary'd DLL: %ld failures\n", failures_since(&before));
  test_ucrt_dll();       printf("ucrt DLL: %ld failures\n", failures_since(&before));
  test_getprocaddress(); printf("GetProcAddress: %ld failures\n", failures_since(&before));
#if !MI_TEST_NO_REDIRECT
  CHECK(mi_redirect_imports() > 0);
  CHECK(mi_redirect_entries() > 0);
#endif
  return test_summary("redirect-win", "modules, foreign blocks, threads, a late DLL, a ucrt DLL");
}
