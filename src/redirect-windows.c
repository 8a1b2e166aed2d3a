/* SPDX-License-Identifier: MIT */
/* Dynamic override on Windows: mimalloc-redirect.dll, the whole library plus this unit. When
   the DLL is loaded (linked by the program, or LoadLibrary early), every module of the process
   that imports the C runtime's allocation functions from msvcrt.dll, ucrtbase.dll or an
   api-ms-win-crt-* set gets its import address table (IAT) slots for them rewritten to the
   wrappers below; modules loaded later are patched when the loader reports them
   (LdrRegisterDllNotification). docs/platforms.md, "Redirecting DLL on Windows".

   Two layers. IAT patching: a PE module calls an imported function through its own IAT
   slot, so one store per slot changes the function for that module. Entry jumps (below): the
   first bytes of the runtimes' own allocation functions jump to the same wrappers, so the
   calls a runtime makes inside itself, and pointers read from its export table, reach us too.
   GetProcAddress of those names returns our wrappers (its own import slots are patched,
   mi_redir_getproc). What is not reached: modules that link a C runtime statically.

   Invariants:
   - a block is ours iff mi_is_in_heap_region; a block that is not (allocated by the C runtime
     before the patch) is always handed back to the runtime its slot came from: to its
     ORIGINAL function while that runtime's entries are intact, to its heap once they jump to
     us (mi_redir_fallback): nothing crashes, and only a foreign _aligned_ block of a patched
     runtime is left alone;
   - a slot is only ever written with a whole pointer (one aligned store): a thread calling
     through it concurrently sees the old function or the new one;
   - this module's own imports are never patched: its C runtime start-up allocates with the
     runtime's malloc and frees with the runtime's free;
   - nothing here calls malloc or printf: module lists and counters are static. */
#if !defined(_WIN32) || !defined(__GNUC__)
#error "redirect-windows.c is the redirecting DLL for mingw-w64 (gcc) on Windows"
#endif

#include <windows.h>
#include <psapi.h>
#include <errno.h>
#include <wchar.h>
#include "mimalloc.h"
#include "mimalloc-redirect.h"
#include "internal/crt-windows.h"

void _mi_verbose_message(const char* fmt, ...);   /* src/options.c */

/* ---- the C runtimes and the functions redirected ---- */
enum { MI_CRT_MSVCRT, MI_CRT_UCRT, MI_CRT_COUNT };
enum {
  MI_FN_MALLOC, MI_FN_CALLOC, MI_FN_REALLOC, MI_FN_FREE, MI_FN_MSIZE, MI_FN_EXPAND,
  MI_FN_RECALLOC, MI_FN_STRDUP, MI_FN_STRDUP2, MI_FN_WCSDUP, MI_FN_ALIGNED_MALLOC,
  MI_FN_ALIGNED_FREE, MI_FN_ALIGNED_REALLOC, MI_FN_ALIGNED_MSIZE, MI_FN_ALIGNED_OFFSET_MALLOC,
  MI_FN_ALIGNED_OFFSET_REALLOC, MI_FN_ALIGNED_RECALLOC, MI_FN_ALIGNED_OFFSET_RECALLOC,
  MI_FN_MBSDUP, MI_FN_DUPENV_S, MI_FN_WDUPENV_S,
  /* ucrtbase's _base forms (what its malloc & co. call): the same wrappers as their plain names */
  MI_FN_MALLOC_BASE, MI_FN_CALLOC_BASE, MI_FN_REALLOC_BASE, MI_FN_FREE_BASE, MI_FN_MSIZE_BASE,
  MI_FN_EXPAND_BASE, MI_FN_RECALLOC_BASE, MI_FN_COUNT
};
static const char* const mi_redir_names[] = {
  "malloc", "calloc", "realloc", "free", "_msize", "_expand",
  "_recalloc", "_strdup", "strdup", "_wcsdup", "_aligned_malloc",
  "_aligned_free", "_aligned_realloc", "_aligned_msize", "_aligned_offset_malloc",
  "_aligned_offset_realloc", "_aligned_recalloc", "_aligned_offset_recalloc",
  "_mbsdup", "_dupenv_s", "_wdupenv_s",
  "_malloc_base", "_calloc_base", "_realloc_base", "_free_base", "_msize_base",
  "_expand_base", "_recalloc_base"
};
static const char* const mi_redir_crt_dlls[MI_CRT_COUNT] = { "msvcrt.dll", "ucrtbase.dll" };

/* the runtime's own functions (GetProcAddress at attach; NULL: the runtime lacks it) */
static void* mi_redir_orig[MI_CRT_COUNT][MI_FN_COUNT];

typedef void   (*mi_free_fn)(void*);
typedef void*  (*mi_realloc_fn)(void*, size_t);
typedef size_t (*mi_msize_fn)(void*);
typedef void*  (*mi_recalloc_fn)(void*, size_t, size_t);
typedef void*  (*mi_aligned_realloc_fn)(void*, size_t, size_t);
typedef size_t (*mi_aligned_msize_fn)(void*, size_t, size_t);
typedef void*  (*mi_aligned_offset_realloc_fn)(void*, size_t, size_t, size_t);
typedef void*  (*mi_aligned_recalloc_fn)(void*, size_t, size_t, size_t);
typedef void*  (*mi_aligned_offset_recalloc_fn)(void*, size_t, size_t, size_t, size_t);
static void* mi_redir_fallback(int crt, int fn);   /* below: what a foreign block is given to */
#define MI_ORIG(crt, fn, type)  ((type)mi_redir_fallback(crt, fn))

/* ---- wrappers that never see a foreign block: the same for every runtime ---- */
static void* mi_redir_malloc(size_t size)                 { return mi_malloc(size); }
static void* mi_redir_calloc(size_t count, size_t size)   { return mi_calloc(count, size); }
static char* mi_redir_strdup(const char* s)               { return mi_strdup(s); }
static wchar_t* mi_redir_wcsdup(const wchar_t* s)         { return mi_wcsdup(s); }
static void* mi_redir_aligned_malloc(size_t size, size_t alignment) { return mi_crt_aligned_malloc(size, alignment); }
static void* mi_redir_aligned_offset_malloc(size_t size, size_t alignment, size_t offset) {
  return mi_crt_aligned_offset_malloc(size, alignment, offset);
}
static unsigned char* mi_redir_mbsdup(const unsigned char* s) { return mi_mbsdup(s); }
static int mi_redir_dupenv_s(char** buf, size_t* size, const char* name) { return mi_dupenv_s(buf, size, name); }
static int mi_redir_wdupenv_s(wchar_t** buf, size_t* size, const wchar_t* name) { return mi_wdupenv_s(buf, size, name); }

/* ---- wrappers that may see a foreign block: one set per runtime (the block goes back to
   the runtime whose slot the caller used). A function the runtime lacks has no slot to
   patch, but a foreign block reaching it through a sibling (free of a block of _expand's
   runtime) finds NULL: then EINVAL, or a leak for free. CRT semantics as in
   override-windows.c: realloc(p, 0) frees and returns NULL; _msize(NULL) is EINVAL. ---- */
/* A foreign block: to the runtime's function for `fn` (mi_redir_fallback); without one, EINVAL
   and `fail`. */
#define MI_REDIR_FOREIGN(crt, fn, type, fail, ...) \
  do { \
    type f_ = MI_ORIG(crt, fn, type); \
    if (f_ != NULL) return f_(__VA_ARGS__); \
    errno = EINVAL; return fail; \
  } while (0)

#define MI_REDIR_CRT_WRAPPERS(crt) \
  static void mi_redir_free_##crt(void* p) { \
    if (p == NULL) return; \
    if (mi_is_in_heap_region(p)) { mi_free(p); return; } \
    mi_free_fn f = MI_ORIG(crt, MI_FN_FREE, mi_free_fn); if (f != NULL) f(p); \
  } \
  static void* mi_redir_realloc_##crt(void* p, size_t newsize) { \
    if (p != NULL && !mi_is_in_heap_region(p)) MI_REDIR_FOREIGN(crt, MI_FN_REALLOC, mi_realloc_fn, NULL, p, newsize); \
    return mi_crt_realloc(p, newsize); \
  } \
  static size_t mi_redir_msize_##crt(void* p) { \
    if (p == NULL) { errno = EINVAL; return (size_t)-1; } \
    if (mi_is_in_heap_region(p)) return mi_usable_size(p); \
    MI_REDIR_FOREIGN(crt, MI_FN_MSIZE, mi_msize_fn, (size_t)-1, p); \
  } \
  static void* mi_redir_expand_##crt(void* p, size_t newsize) { \
    if (p == NULL) { errno = EINVAL; return NULL; } \
    if (mi_is_in_heap_region(p)) return mi__expand(p, newsize); \
    MI_REDIR_FOREIGN(crt, MI_FN_EXPAND, mi_realloc_fn, NULL, p, newsize); \
  } \
  static void* mi_redir_recalloc_##crt(void* p, size_t count, size_t size) { \
    if (p != NULL && !mi_is_in_heap_region(p)) MI_REDIR_FOREIGN(crt, MI_FN_RECALLOC, mi_recalloc_fn, NULL, p, count, size); \
    return mi_recalloc(p, count, size); \
  } \
  static void mi_redir_aligned_free_##crt(void* p) { \
    if (p == NULL) return; \
    if (mi_is_in_heap_region(p)) { mi_free(p); return; } \
    mi_free_fn f = MI_ORIG(crt, MI_FN_ALIGNED_FREE, mi_free_fn); if (f != NULL) f(p); \
  } \
  static void* mi_redir_aligned_realloc_##crt(void* p, size_t size, size_t alignment) { \
    if (p != NULL && !mi_is_in_heap_region(p)) MI_REDIR_FOREIGN(crt, MI_FN_ALIGNED_REALLOC, mi_aligned_realloc_fn, NULL, p, size, alignment); \
    if (!mi_crt_alignment_ok(alignment)) return NULL; \
    if (p != NULL && size == 0) { mi_free(p); return NULL; } \
    return mi_realloc_aligned(p, size, alignment); \
  } \
  static size_t mi_redir_aligned_msize_##crt(void* p, size_t alignment, size_t offset) { \
    if (p == NULL) { errno = EINVAL; return (size_t)-1; } \
    if (mi_is_in_heap_region(p)) return mi_usable_size(p); \
    MI_REDIR_FOREIGN(crt, MI_FN_ALIGNED_MSIZE, mi_aligned_msize_fn, (size_t)-1, p, alignment, offset); \
  } \
  static void* mi_redir_aligned_offset_realloc_##crt(void* p, size_t size, size_t alignment, size_t offset) { \
    if (p != NULL && !mi_is_in_heap_region(p)) MI_REDIR_FOREIGN(crt, MI_FN_ALIGNED_OFFSET_REALLOC, mi_aligned_offset_realloc_fn, NULL, p, size, alignment, offset); \
    if (!mi_crt_alignment_ok(alignment)) return NULL; \
    if (p != NULL && size == 0) { mi_free(p); return NULL; } \
    return mi_realloc_aligned_at(p, size, alignment, offset); \
  } \
  static void* mi_redir_aligned_recalloc_##crt(void* p, size_t count, size_t size, size_t alignment) { \
    if (p != NULL && !mi_is_in_heap_region(p)) MI_REDIR_FOREIGN(crt, MI_FN_ALIGNED_RECALLOC, mi_aligned_recalloc_fn, NULL, p, count, size, alignment); \
    if (!mi_crt_alignment_ok(alignment)) return NULL; \
    return mi_aligned_recalloc(p, count, size, alignment); \
  } \
  static void* mi_redir_aligned_offset_recalloc_##crt(void* p, size_t count, size_t size, size_t alignment, size_t offset) { \
    if (p != NULL && !mi_is_in_heap_region(p)) MI_REDIR_FOREIGN(crt, MI_FN_ALIGNED_OFFSET_RECALLOC, mi_aligned_offset_recalloc_fn, NULL, p, count, size, alignment, offset); \
    if (!mi_crt_alignment_ok(alignment)) return NULL; \
    return mi_aligned_offset_recalloc(p, count, size, alignment, offset); \
  }

MI_REDIR_CRT_WRAPPERS(0)   /* MI_CRT_MSVCRT */
MI_REDIR_CRT_WRAPPERS(1)   /* MI_CRT_UCRT */

#define MI_REDIR_TABLE(crt) { \
  (void*)&mi_redir_malloc, (void*)&mi_redir_calloc, (void*)&mi_redir_realloc_##crt, \
  (void*)&mi_redir_free_##crt, (void*)&mi_redir_msize_##crt, (void*)&mi_redir_expand_##crt, \
  (void*)&mi_redir_recalloc_##crt, (void*)&mi_redir_strdup, (void*)&mi_redir_strdup, \
  (void*)&mi_redir_wcsdup, (void*)&mi_redir_aligned_malloc, (void*)&mi_redir_aligned_free_##crt, \
  (void*)&mi_redir_aligned_realloc_##crt, (void*)&mi_redir_aligned_msize_##crt, \
  (void*)&mi_redir_aligned_offset_malloc, (void*)&mi_redir_aligned_offset_realloc_##crt, \
  (void*)&mi_redir_aligned_recalloc_##crt, (void*)&mi_redir_aligned_offset_recalloc_##crt, \
  (void*)&mi_redir_mbsdup, (void*)&mi_redir_dupenv_s, (void*)&mi_redir_wdupenv_s, \
  (void*)&mi_redir_malloc, (void*)&mi_redir_calloc, (void*)&mi_redir_realloc_##crt, \
  (void*)&mi_redir_free_##crt, (void*)&mi_redir_msize_##crt, (void*)&mi_redir_expand_##crt, \
  (void*)&mi_redir_recalloc_##crt }
static void* const mi_redir_ours_table[MI_CRT_COUNT][MI_FN_COUNT] = { MI_REDIR_TABLE(0), MI_REDIR_TABLE(1) };
_Static_assert(sizeof(mi_redir_names) / sizeof(mi_redir_names[0]) == MI_FN_COUNT, "a name for every function");
_Static_assert(sizeof((void*[])MI_REDIR_TABLE(0)) / sizeof(void*) == MI_FN_COUNT, "a wrapper for every function");

/* ---- names (ASCII, case-insensitive for DLL names as the loader compares them) ---- */
static char mi_redir_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }
static int mi_redir_prefix_ieq(const char* s, const char* prefix, int whole) {
  for (; *prefix != 0; s++, prefix++) {
    if (mi_redir_lower(*s) != *prefix) return 0;
  }
  return !whole || *s == 0;
}
static int mi_redir_crt_of(const char* dll) {
  if (mi_redir_prefix_ieq(dll, "msvcrt.dll", 1)) return MI_CRT_MSVCRT;
  if (mi_redir_prefix_ieq(dll, "ucrtbase.dll", 1)) return MI_CRT_UCRT;
  if (mi_redir_prefix_ieq(dll, "api-ms-win-crt-", 0)) return MI_CRT_UCRT;   /* forwarders to ucrtbase */
  return -1;
}
static int mi_redir_fn_of(const char* name) {
  for (int i = 0; i < MI_FN_COUNT; i++) {
    const char* a = name; const char* b = mi_redir_names[i];
    while (*a != 0 && *a == *b) { a++; b++; }
    if (*a == *b) return i;
  }
  return -1;
}

/* ---- the runtimes' own code: entry jumps. IAT slots reach the calls other modules make; a
   runtime's calls to its own malloc (strdup, _getcwd, fopen's buffers, its start-up) and
   function pointers read from its export table do not. So the entries of its allocation
   functions are patched too: a 5-byte `jmp rel32` to a stub within 2 GiB (an absolute `jmp
   [rip]` to our wrapper), the technique Microsoft Detours describes. A runtime is patched
   whole or not at all (a runtime whose free is ours but whose _aligned_malloc is not would
   hand us an interior pointer):
   - each entry's 5 bytes must lie inside one aligned 8-byte word, written with one atomic
     store (a thread entering the function sees the old or the new word);
   - the original code is not kept (its first bytes are gone): a foreign block (allocated by
     the runtime before the patch) goes to the runtime's heap instead, which is where its
     malloc put it (_get_heap_handle: msvcrt's heap; ucrt's is the process heap); a foreign
     _aligned_ block is left alone (never freed, _aligned_msize EINVAL): its layout is the
     runtime's own;
   - the switch to the heap-based fallback comes before the first entry is written, so a
     foreign block never reaches a patched entry from our own fallback (no loop);
   - a runtime loaded later is patched when the loader reports it (before its DllMain, so its
     own start-up allocates from us), forgotten when it unloads, undone on FreeLibrary of us. */
enum { MI_ENTRY_STUB = 16 };
static int            mi_redir_entry_on[MI_CRT_COUNT];    /* the runtime's entries jump to us */
static HMODULE        mi_redir_entry_module[MI_CRT_COUNT];
static unsigned char* mi_redir_entry_at[MI_CRT_COUNT][MI_FN_COUNT];
static unsigned long long mi_redir_entry_saved[MI_CRT_COUNT][MI_FN_COUNT];   /* the word replaced */
static unsigned char* mi_redir_stubs[MI_CRT_COUNT];      /* MI_FN_COUNT stubs, near the module */
static HANDLE         mi_redir_heap[MI_CRT_COUNT];       /* the runtime's heap (lazily) */
static size_t         mi_redir_entry_count[MI_CRT_COUNT];
static size_t         mi_redir_entries;   /* runtime entries now jumping to us (all runtimes) */
static intptr_t     (*mi_redir_get_heap[MI_CRT_COUNT])(void);

/* A module's export by name, from its export table (no loader call: this runs inside the
   loader's notification too); NULL for a forwarder or a missing name. */
static const IMAGE_EXPORT_DIRECTORY* mi_redir_exports(HMODULE module, const IMAGE_DATA_DIRECTORY** dirp) {
  unsigned char* base = (unsigned char*)module;
  if (base == NULL || ((const IMAGE_DOS_HEADER*)base)->e_magic != IMAGE_DOS_SIGNATURE) return NULL;
  const IMAGE_NT_HEADERS* nt = (const IMAGE_NT_HEADERS*)(base + ((const IMAGE_DOS_HEADER*)base)->e_lfanew);
  const IMAGE_DATA_DIRECTORY* dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_EXPORT];
  if (nt->Signature != IMAGE_NT_SIGNATURE || dir->VirtualAddress == 0 || dir->Size == 0) return NULL;
  *dirp = dir;
  return (const IMAGE_EXPORT_DIRECTORY*)(base + dir->VirtualAddress);
}

static void* mi_redir_export(HMODULE module, const char* name) {
  unsigned char* base = (unsigned char*)module;
  const IMAGE_DATA_DIRECTORY* dir = NULL;
  const IMAGE_EXPORT_DIRECTORY* ex = mi_redir_exports(module, &dir);
  if (ex == NULL) return NULL;
  const DWORD* names = (const DWORD*)(base + ex->AddressOfNames);
  const WORD* ordinals = (const WORD*)(base + ex->AddressOfNameOrdinals);
  const DWORD* functions = (const DWORD*)(base + ex->AddressOfFunctions);
  for (DWORD i = 0; i < ex->NumberOfNames; i++) {
    const char* a = (const char*)(base + names[i]); const char* b = name;
    while (*a != 0 && *a == *b) { a++; b++; }
    if (*a != *b) continue;
    const DWORD rva = functions[ordinals[i]];
    if (rva >= dir->VirtualAddress && rva < dir->VirtualAddress + dir->Size) return NULL;
    return base + rva;
  }
  return NULL;
}

/* msvcrt.dll or ucrtbase.dll, by the name in its export directory (no loader call). */
static int mi_redir_crt_of_export_name(HMODULE module) {
  const IMAGE_DATA_DIRECTORY* dir = NULL;
  const IMAGE_EXPORT_DIRECTORY* ex = mi_redir_exports(module, &dir);
  if (ex == NULL) return -1;
  const char* name = (const char*)((unsigned char*)module + ex->Name);
  for (int crt = 0; crt < MI_CRT_COUNT; crt++) {
    if (mi_redir_prefix_ieq(name, mi_redir_crt_dlls[crt], 1)) return crt;
  }
  return -1;
}

static HANDLE mi_redir_heap_of(int crt) {
  HANDLE h = __atomic_load_n(&mi_redir_heap[crt], __ATOMIC_ACQUIRE);
  if (h == NULL && mi_redir_get_heap[crt] != NULL) {   /* (its DllMain made it: a foreign block exists) */
    h = (HANDLE)mi_redir_get_heap[crt]();
    __atomic_store_n(&mi_redir_heap[crt], h, __ATOMIC_RELEASE);
  }
  return h;
}

/* the heap-based forms of the functions that may see a foreign block, per runtime */
#define MI_REDIR_HEAP_WRAPPERS(crt) \
  static void mi_redir_hfree_##crt(void* p) { \
    HANDLE h = mi_redir_heap_of(crt); if (h != NULL) (void)HeapFree(h, 0, p); \
  } \
  static void* mi_redir_hrealloc_##crt(void* p, size_t n) { \
    HANDLE h = mi_redir_heap_of(crt); \
    if (h == NULL) { errno = EINVAL; return NULL; } \
    if (n == 0) { (void)HeapFree(h, 0, p); return NULL; } \
    void* q = HeapReAlloc(h, 0, p, n); if (q == NULL) errno = ENOMEM; \
    return q; \
  } \
  static size_t mi_redir_hmsize_##crt(void* p) { \
    HANDLE h = mi_redir_heap_of(crt); \
    const SIZE_T n = (h == NULL ? (SIZE_T)-1 : HeapSize(h, 0, p)); \
    if (n == (SIZE_T)-1) errno = EINVAL; \
    return n; \
  } \
  static void* mi_redir_hexpand_##crt(void* p, size_t n) { \
    HANDLE h = mi_redir_heap_of(crt); \
    void* q = (h == NULL ? NULL : HeapReAlloc(h, HEAP_REALLOC_IN_PLACE_ONLY, p, n == 0 ? 1 : n)); \
    if (q == NULL) errno = ENOMEM; \
    return q; \
  } \
  static void* mi_redir_hrecalloc_##crt(void* p, size_t count, size_t size) { \
    HANDLE h = mi_redir_heap_of(crt); \
    if (h == NULL) { errno = EINVAL; return NULL; } \
    if (size != 0 && count > (size_t)-1 / size) { errno = ENOMEM; return NULL; } \
    if (count * size == 0) { (void)HeapFree(h, 0, p); return NULL; } \
    void* q = HeapReAlloc(h, HEAP_ZERO_MEMORY, p, count * size); if (q == NULL) errno = ENOMEM; \
    return q; \
  }
MI_REDIR_HEAP_WRAPPERS(0)
MI_REDIR_HEAP_WRAPPERS(1)

/* a foreign _aligned_ block: left alone (its header is the runtime's) */
static void   mi_redir_afree(void* p)                                   { (void)p; }
static size_t mi_redir_amsize(void* p, size_t a, size_t o)            { (void)p; (void)a; (void)o; errno = EINVAL; return (size_t)-1; }
static void*  mi_redir_arealloc(void* p, size_t n, size_t a)           { (void)p; (void)n; (void)a; errno = EINVAL; return NULL; }
static void*  mi_redir_aorealloc(void* p, size_t n, size_t a, size_t o) { (void)p; (void)n; (void)a; (void)o; errno = EINVAL; return NULL; }
static void*  mi_redir_arecalloc(void* p, size_t c, size_t n, size_t a) { (void)p; (void)c; (void)n; (void)a; errno = EINVAL; return NULL; }
static void*  mi_redir_aorecalloc(void* p, size_t c, size_t n, size_t a, size_t o) { (void)p; (void)c; (void)n; (void)a; (void)o; errno = EINVAL; return NULL; }

static void* mi_redir_heap_form(int crt, int fn) {
  switch (fn) {
    case MI_FN_FREE: case MI_FN_FREE_BASE:         return crt == 0 ? (void*)&mi_redir_hfree_0 : (void*)&mi_redir_hfree_1;
    case MI_FN_REALLOC: case MI_FN_REALLOC_BASE:   return crt == 0 ? (void*)&mi_redir_hrealloc_0 : (void*)&mi_redir_hrealloc_1;
    case MI_FN_MSIZE: case MI_FN_MSIZE_BASE:       return crt == 0 ? (void*)&mi_redir_hmsize_0 : (void*)&mi_redir_hmsize_1;
    case MI_FN_EXPAND: case MI_FN_EXPAND_BASE:     return crt == 0 ? (void*)&mi_redir_hexpand_0 : (void*)&mi_redir_hexpand_1;
    case MI_FN_RECALLOC: case MI_FN_RECALLOC_BASE: return crt == 0 ? (void*)&mi_redir_hrecalloc_0 : (void*)&mi_redir_hrecalloc_1;
    case MI_FN_ALIGNED_FREE:             return (void*)&mi_redir_afree;
    case MI_FN_ALIGNED_MSIZE:            return (void*)&mi_redir_amsize;
    case MI_FN_ALIGNED_REALLOC:          return (void*)&mi_redir_arealloc;
    case MI_FN_ALIGNED_OFFSET_REALLOC:   return (void*)&mi_redir_aorealloc;
    case MI_FN_ALIGNED_RECALLOC:         return (void*)&mi_redir_arecalloc;
    case MI_FN_ALIGNED_OFFSET_RECALLOC:  return (void*)&mi_redir_aorecalloc;
    default:                             return NULL;   /* (never sees a foreign block) */
  }
}

static void* mi_redir_fallback(int crt, int fn) {
  if (__atomic_load_n(&mi_redir_entry_on[crt], __ATOMIC_ACQUIRE)) return mi_redir_heap_form(crt, fn);
  return __atomic_load_n(&mi_redir_orig[crt][fn], __ATOMIC_ACQUIRE);
}

/* the entries patched: the allocation functions proper (strdup & co. call them inside) */
static int mi_redir_entry_fn(int fn) {
  return fn != MI_FN_STRDUP && fn != MI_FN_STRDUP2 && fn != MI_FN_WCSDUP && fn != MI_FN_MBSDUP &&
         fn != MI_FN_DUPENV_S && fn != MI_FN_WDUPENV_S;
}

/* A free 4 KiB within 2 GiB of `anchor` (64 KiB steps, below first). */
static unsigned char* mi_redir_stub_page(const void* anchor) {
  const uintptr_t base = (uintptr_t)anchor & ~(uintptr_t)0xFFFF;
  for (uintptr_t d = 0x10000; d < 0x70000000; d += 0x10000) {
    for (int up = 0; up < 2; up++) {
      if (!up && d > base) continue;
      void* p = VirtualAlloc((void*)(up ? base + d : base - d), 4096, MEM_RESERVE | MEM_COMMIT, PAGE_EXECUTE_READWRITE);
      if (p != NULL) return (unsigned char*)p;
    }
  }
  return NULL;
}

/* One aligned 8-byte store at the entry's word: the jump, or (undo) the saved word. */
static void mi_redir_entry_write(int crt, int fn, int undo) {
  unsigned char* const entry = mi_redir_entry_at[crt][fn];
  unsigned long long* const word = (unsigned long long*)((uintptr_t)entry & ~(uintptr_t)7);
  unsigned long long v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  if (!undo) {
    mi_redir_entry_saved[crt][fn] = v;
    const unsigned char* stub = mi_redir_stubs[crt] + fn * MI_ENTRY_STUB;
    const int32_t rel = (int32_t)((intptr_t)stub - (intptr_t)(entry + 5));
    const unsigned shift = (unsigned)((uintptr_t)entry & 7) * 8;
    unsigned long long jmp = 0xE9ULL | ((unsigned long long)(uint32_t)rel << 8);   /* 5 bytes */
    v = (v & ~(0xFFFFFFFFFFULL << shift)) | (jmp << shift);
  }
  else {
    v = mi_redir_entry_saved[crt][fn];
  }
  DWORD old;
  if (!VirtualProtect(word, 8, PAGE_EXECUTE_READWRITE, &old)) return;
  __atomic_store_n(word, v, __ATOMIC_SEQ_CST);
  DWORD ignored;
  (void)VirtualProtect(word, 8, old, &ignored);
  (void)FlushInstructionCache(GetCurrentProcess(), word, 8);
}

/* Patch the entries of runtime `crt` (module `rt`), all or none. Returns the number patched. */
static size_t mi_redir_entries_patch(int crt, HMODULE rt) {
  if (mi_redir_entry_on[crt] || rt == NULL) return 0;
  unsigned char* entries[MI_FN_COUNT];
  size_t count = 0;
  for (int fn = 0; fn < MI_FN_COUNT; fn++) {
    entries[fn] = (mi_redir_entry_fn(fn) ? (unsigned char*)mi_redir_export(rt, mi_redir_names[fn]) : NULL);
    if (entries[fn] == NULL) continue;
    if (((uintptr_t)entries[fn] & 7) > 3) return 0;   /* the jump would straddle two words */
    count++;
  }
  mi_redir_get_heap[crt] = (intptr_t (*)(void))mi_redir_export(rt, "_get_heap_handle");
  if (entries[MI_FN_MALLOC] == NULL || entries[MI_FN_FREE] == NULL || mi_redir_get_heap[crt] == NULL) return 0;
  if (mi_redir_stubs[crt] == NULL) mi_redir_stubs[crt] = mi_redir_stub_page(rt);
  unsigned char* const stubs = mi_redir_stubs[crt];
  if (stubs == NULL) return 0;
  for (int fn = 0; fn < MI_FN_COUNT; fn++) {
    if (entries[fn] == NULL) continue;
    const intptr_t dist = (intptr_t)stubs - (intptr_t)entries[fn];
    if (dist > 0x7FFF0000LL || dist < -0x7FFF0000LL) return 0;
  }
  DWORD old;
  if (!VirtualProtect(stubs, 4096, PAGE_READWRITE, &old)) return 0;
  for (int fn = 0; fn < MI_FN_COUNT; fn++) {   /* jmp [rip+0]; .quad wrapper */
    unsigned char* st = stubs + fn * MI_ENTRY_STUB;
    const unsigned long long target = (unsigned long long)(uintptr_t)mi_redir_ours_table[crt][fn];
    st[0] = 0xFF; st[1] = 0x25; st[2] = st[3] = st[4] = st[5] = 0;
    for (int i = 0; i < 8; i++) st[6 + i] = (unsigned char)(target >> (8 * i));
  }
  (void)VirtualProtect(stubs, 4096, PAGE_EXECUTE_READ, &old);
  (void)FlushInstructionCache(GetCurrentProcess(), stubs, 4096);
  for (int fn = 0; fn < MI_FN_COUNT; fn++) {
    mi_redir_entry_at[crt][fn] = entries[fn];
    if (entries[fn] != NULL && __atomic_load_n(&mi_redir_orig[crt][fn], __ATOMIC_ACQUIRE) == NULL) {
      __atomic_store_n(&mi_redir_orig[crt][fn], (void*)entries[fn], __ATOMIC_RELEASE);   /* (GetProcAddress matches it) */
    }
  }
  mi_redir_entry_module[crt] = rt;
  mi_redir_entry_count[crt] = count;
  __atomic_store_n(&mi_redir_heap[crt], NULL, __ATOMIC_RELEASE);
  __atomic_store_n(&mi_redir_entry_on[crt], 1, __ATOMIC_SEQ_CST);   /* the fallback first (no loop) */
  for (int fn = 0; fn < MI_FN_COUNT; fn++) {
    if (entries[fn] != NULL) mi_redir_entry_write(crt, fn, 0);
  }
  return count;
}

/* Undo (FreeLibrary of us), or forget (the runtime was unloaded: its code is gone). */
static void mi_redir_entries_undo(int crt, int unloaded) {
  if (!mi_redir_entry_on[crt]) return;
  for (int fn = 0; fn < MI_FN_COUNT && !unloaded; fn++) {
    if (mi_redir_entry_at[crt][fn] != NULL) mi_redir_entry_write(crt, fn, 1);
  }
  for (int fn = 0; fn < MI_FN_COUNT; fn++) {
    mi_redir_entry_at[crt][fn] = NULL;
    if (unloaded) __atomic_store_n(&mi_redir_orig[crt][fn], NULL, __ATOMIC_RELEASE);
  }
  mi_redir_entry_module[crt] = NULL;
  __atomic_fetch_sub(&mi_redir_entries, mi_redir_entry_count[crt], __ATOMIC_RELAXED);
  mi_redir_entry_count[crt] = 0;
  __atomic_store_n(&mi_redir_entry_on[crt], 0, __ATOMIC_SEQ_CST);
}

/* ---- GetProcAddress: a lookup of a redirected name in a C runtime returns our wrapper, so a
   function pointer taken at run time (ctypes-style bindings, lazy loaders) frees our blocks
   too. Installed like the allocation functions, in the import slots of GetProcAddress from
   kernel32.dll, kernelbase.dll and the api-ms-win-core-libraryloader sets. ---- */
typedef FARPROC (WINAPI *mi_getproc_fn)(HMODULE, LPCSTR);
static mi_getproc_fn mi_redir_getproc_orig;   /* kernel32's (set at attach, before any patch) */

static FARPROC WINAPI mi_redir_getproc(HMODULE module, LPCSTR name) {
  const FARPROC f = mi_redir_getproc_orig(module, name);
  if (f == NULL || ((uintptr_t)name >> 16) == 0) return f;   /* not found, or by ordinal */
  const int fn = mi_redir_fn_of(name);
  if (fn < 0) return f;
  for (int crt = 0; crt < MI_CRT_COUNT; crt++) {   /* (an api-ms-win-crt set forwards to ucrtbase) */
    if (mi_redir_orig[crt][fn] == (void*)f) return (FARPROC)mi_redir_ours_table[crt][fn];
  }
  const int crt = mi_redir_crt_of_export_name(module);  /* a runtime no import has shown us yet */
  if (crt < 0) return f;
  void* expected = NULL;
  (void)__atomic_compare_exchange_n(&mi_redir_orig[crt][fn], &expected, (void*)f, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return (mi_redir_orig[crt][fn] == (void*)f ? (FARPROC)mi_redir_ours_table[crt][fn] : f);
}

static int mi_redir_is_loader_dll(const char* dll) {
  return mi_redir_prefix_ieq(dll, "kernel32.dll", 1) || mi_redir_prefix_ieq(dll, "kernelbase.dll", 1) ||
         mi_redir_prefix_ieq(dll, "api-ms-win-core-libraryloader-", 0);
}

/* ---- patching one module's import table ---- */
static HMODULE        mi_redir_self;
static size_t         mi_redir_slots;       /* slots now pointing to us */
static size_t         mi_redir_modules;   /* modules with at least one such slot */

static void mi_redir_write(void** slot, void* value) {
  DWORD old;
  if (!VirtualProtect(slot, sizeof(void*), PAGE_READWRITE, &old)) return;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  DWORD ignored;
  (void)VirtualProtect(slot, sizeof(void*), old, &ignored);
}

/* undo = 0: point this module's allocation slots to us; undo = 1: back to the runtime.
   Returns the number of slots changed. Skips this DLL and the runtimes themselves. */
static size_t mi_redir_patch_module(HMODULE module, int undo) {
  if (module == NULL || module == mi_redir_self) return 0;
  unsigned char* base = (unsigned char*)module;
  const IMAGE_DOS_HEADER* dos = (const IMAGE_DOS_HEADER*)base;
  if (dos->e_magic != IMAGE_DOS_SIGNATURE) return 0;
  const IMAGE_NT_HEADERS* nt = (const IMAGE_NT_HEADERS*)(base + dos->e_lfanew);
  if (nt->Signature != IMAGE_NT_SIGNATURE || nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR_MAGIC) return 0;
  const IMAGE_DATA_DIRECTORY* dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_IMPORT];
  if (dir->VirtualAddress == 0 || dir->Size == 0) return 0;
  size_t changed = 0;
  for (const IMAGE_IMPORT_DESCRIPTOR* d = (const IMAGE_IMPORT_DESCRIPTOR*)(base + dir->VirtualAddress); d->Name != 0; d++) {
    const char* const dll = (const char*)(base + d->Name);
    const int crt = mi_redir_crt_of(dll);
    const int loader = (crt < 0 && mi_redir_getproc_orig != NULL && mi_redir_is_loader_dll(dll));
    /* names come from the lookup table (OriginalFirstThunk): the IAT holds addresses by now */
    if ((crt < 0 && !loader) || d->OriginalFirstThunk == 0 || d->FirstThunk == 0) continue;
    const IMAGE_THUNK_DATA* names = (const IMAGE_THUNK_DATA*)(base + d->OriginalFirstThunk);
    IMAGE_THUNK_DATA* slots = (IMAGE_THUNK_DATA*)(base + d->FirstThunk);
    for (; names->u1.AddressOfData != 0; names++, slots++) {
      if (IMAGE_SNAP_BY_ORDINAL(names->u1.Ordinal)) continue;
      const IMAGE_IMPORT_BY_NAME* ibn = (const IMAGE_IMPORT_BY_NAME*)(base + names->u1.AddressOfData);
      if (loader) {   /* GetProcAddress (not counted: not an allocation import) */
        if (mi_redir_prefix_ieq((const char*)ibn->Name, "getprocaddress", 1)) {
          void** slot = (void**)&slots->u1.Function;
          void* const cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
          if (!undo && cur != (void*)&mi_redir_getproc) mi_redir_write(slot, (void*)&mi_redir_getproc);
          else if (undo && cur == (void*)&mi_redir_getproc) mi_redir_write(slot, (void*)mi_redir_getproc_orig);
        }
        continue;
      }
      const int fn = mi_redir_fn_of((const char*)ibn->Name);
      if (fn < 0) continue;
      void** slot = (void**)&slots->u1.Function;
      void* const ours = mi_redir_ours_table[crt][fn];
      void* const cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      if (!undo && cur != ours) {
        /* the runtime's function as this module sees it, if GetProcAddress found none */
        if (mi_redir_orig[crt][fn] == NULL) mi_redir_orig[crt][fn] = cur;
        mi_redir_write(slot, ours);
        changed++;
      }
      else if (undo && cur == ours && mi_redir_orig[crt][fn] != NULL) {
        mi_redir_write(slot, mi_redir_orig[crt][fn]);
        changed++;
      }
    }
  }
  return changed;
}

static void mi_redir_count(size_t changed, int undo) {
  if (changed == 0) return;
  if (!undo) { __atomic_fetch_add(&mi_redir_slots, changed, __ATOMIC_RELAXED); __atomic_fetch_add(&mi_redir_modules, 1, __ATOMIC_RELAXED); }
}

/* Every module loaded now. The list is a static array (no malloc); EnumProcessModules takes
   the loader lock, which DllMain already holds (it is recursive for this thread). */
static HMODULE mi_redir_list[1024];
static void mi_redir_patch_all(int undo) {
  DWORD needed = 0;
  if (!EnumProcessModules(GetCurrentProcess(), mi_redir_list, sizeof(mi_redir_list), &needed)) return;
  size_t n = needed / sizeof(HMODULE);
  if (n > sizeof(mi_redir_list) / sizeof(HMODULE)) n = sizeof(mi_redir_list) / sizeof(HMODULE);
  for (size_t i = 0; i < n; i++) {
    mi_redir_count(mi_redir_patch_module(mi_redir_list[i], undo), undo);
  }
}

/* ---- modules loaded later: the loader's DLL notification (ntdll, Vista and later; Wine has
   it). It runs with the loader lock held, after the new module's imports are bound and
   before its DllMain, so its start-up allocations are ours already. ---- */
typedef struct mi_ldr_notification_s {   /* LDR_DLL_NOTIFICATION_DATA (loaded and unloaded alike) */
  ULONG flags;
  const void* full_name;   /* UNICODE_STRING* */
  const void* base_name;
  void* dll_base;
  ULONG size_of_image;
} mi_ldr_notification_t;
typedef VOID (CALLBACK *mi_ldr_callback_t)(ULONG reason, const mi_ldr_notification_t* data, PVOID context);
typedef LONG (NTAPI *mi_ldr_register_t)(ULONG flags, mi_ldr_callback_t callback, PVOID context, PVOID* cookie);
typedef LONG (NTAPI *mi_ldr_unregister_t)(PVOID cookie);
#define MI_LDR_REASON_LOADED   1
#define MI_LDR_REASON_UNLOADED 2

static void* mi_redir_cookie;
static VOID CALLBACK mi_redir_on_load(ULONG reason, const mi_ldr_notification_t* data, PVOID context) {
  (void)context;
  if (data == NULL) return;
  HMODULE const module = (HMODULE)data->dll_base;
  if (reason == MI_LDR_REASON_UNLOADED) {   /* a runtime's code is gone with it */
    for (int crt = 0; crt < MI_CRT_COUNT; crt++) {
      if (mi_redir_entry_on[crt] && mi_redir_entry_module[crt] == module) mi_redir_entries_undo(crt, 1);
    }
    return;
  }
  if (reason != MI_LDR_REASON_LOADED) return;
  const int crt = mi_redir_crt_of_export_name(module);
  if (crt >= 0) __atomic_fetch_add(&mi_redir_entries, mi_redir_entries_patch(crt, module), __ATOMIC_RELAXED);
  mi_redir_count(mi_redir_patch_module(module, 0), 0);
}

static void mi_redir_attach(HMODULE self) {
  mi_redir_self = self;
  HMODULE k32 = GetModuleHandleA("kernel32.dll");
  mi_redir_getproc_orig = (k32 == NULL ? NULL : (mi_getproc_fn)(void*)GetProcAddress(k32, "GetProcAddress"));
  for (int crt = 0; crt < MI_CRT_COUNT; crt++) {
    HMODULE rt = GetModuleHandleA(mi_redir_crt_dlls[crt]);   /* not loaded: nobody imports it */
    if (rt == NULL) continue;
    for (int fn = 0; fn < MI_FN_COUNT; fn++) {
      mi_redir_orig[crt][fn] = (void*)GetProcAddress(rt, mi_redir_names[fn]);
    }
  }
  mi_redir_patch_all(0);
  for (int crt = 0; crt < MI_CRT_COUNT; crt++) {   /* after the slots: their fallback switches */
    __atomic_fetch_add(&mi_redir_entries, mi_redir_entries_patch(crt, GetModuleHandleA(mi_redir_crt_dlls[crt])), __ATOMIC_RELAXED);
  }
  HMODULE ntdll = GetModuleHandleA("ntdll.dll");
  mi_ldr_register_t reg = (ntdll == NULL ? NULL : (mi_ldr_register_t)(void*)GetProcAddress(ntdll, "LdrRegisterDllNotification"));
  const int notified = (reg != NULL && reg(0, &mi_redir_on_load, NULL, &mi_redir_cookie) == 0);
  _mi_verbose_message("redirect: %zu allocation imports in %zu modules go to this allocator, and %zu C runtime entries%s\n",
                      __atomic_load_n(&mi_redir_slots, __ATOMIC_RELAXED), __atomic_load_n(&mi_redir_modules, __ATOMIC_RELAXED),
                      __atomic_load_n(&mi_redir_entries, __ATOMIC_RELAXED),
                      notified ? "; later modules as they load" : "; modules loaded later are NOT redirected");
}

/* FreeLibrary (reserved == NULL): give the slots back to the runtime, as nothing of this DLL
   may be called once it is unmapped. (The library pins its module when a thread first
   allocates, src/prim/windows.c, so this is rare.) Process exit (reserved != NULL): keep
   everything: modules detached after us and their exit code still free our blocks, which
   the runtime's free must never see. */
static void mi_redir_detach(void* reserved) {
  if (reserved != NULL) return;
  HMODULE ntdll = GetModuleHandleA("ntdll.dll");
  mi_ldr_unregister_t unreg = (ntdll == NULL ? NULL : (mi_ldr_unregister_t)(void*)GetProcAddress(ntdll, "LdrUnregisterDllNotification"));
  if (unreg != NULL && mi_redir_cookie != NULL) { (void)unreg(mi_redir_cookie); mi_redir_cookie = NULL; }
  for (int crt = 0; crt < MI_CRT_COUNT; crt++) mi_redir_entries_undo(crt, 0);   /* before the slots */
  mi_redir_patch_all(1);
  __atomic_store_n(&mi_redir_slots, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&mi_redir_modules, 0, __ATOMIC_RELAXED);
}

size_t mi_redirect_imports(void) { return __atomic_load_n(&mi_redir_slots, __ATOMIC_RELAXED); }
size_t mi_redirect_entries(void) { return __atomic_load_n(&mi_redir_entries, __ATOMIC_RELAXED); }

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved) {
  if (reason == DLL_PROCESS_ATTACH) mi_redir_attach((HMODULE)instance);
  else if (reason == DLL_PROCESS_DETACH) mi_redir_detach(reserved);
  return TRUE;
}
